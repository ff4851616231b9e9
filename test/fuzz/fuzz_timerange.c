/*
 * fuzz_timerange.c - libFuzzer harness for lib/base/timerange.
 *
 * Input: one mode byte, eight bytes of clock, then range, from and to
 * separated by NUL bytes (fields past the end are NULL).  Checks the
 * contract: a valid non-empty bounded range or a one-line UTF-8 error
 * naming the field, cut cleanly by any errlen; format and describe agree
 * with their returned lengths and formatted times parse back exactly.
 * Invariant breaks abort().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/timerange.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIELD_MAX 512
/* 2026-11-21T10:30:15.250Z: relative ranges around a realistic now */
#define BASE_NOW INT64_C(1795257015250)
/* 10000-01-01T00:00:00Z: past it, formatted times do not parse back */
#define YEAR_10000_MS INT64_C(253402300800000)

static bool
valid_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		size_t len;
		unsigned char lo = 0x80, hi = 0xbf;

		if (*u < 0x80) {
			u++;
			continue;
		}
		if (*u >= 0xc2 && *u <= 0xdf)
			len = 2;
		else if (*u >= 0xe0 && *u <= 0xef)
			len = 3;
		else if (*u >= 0xf0 && *u <= 0xf4)
			len = 4;
		else
			return false;
		if (*u == 0xe0)
			lo = 0xa0;
		else if (*u == 0xed)
			hi = 0x9f;
		else if (*u == 0xf0)
			lo = 0x90;
		else if (*u == 0xf4)
			hi = 0x8f;
		if (u[1] < lo || u[1] > hi)
			return false;
		for (size_t i = 2; i < len; i++)
			if (u[i] < 0x80 || u[i] > 0xbf)
				return false;
		u += len;
	}
	return true;
}

static void
check_format(int64_t ms)
{
	char buf[TIMERANGE_FORMAT_MAX], small[8], next[TIMERANGE_FORMAT_MAX];
	size_t n = timerange_format(ms, buf, sizeof(buf));
	struct timerange r;

	if (n != strlen(buf) || n >= sizeof(buf))
		abort();
	if (timerange_format(ms, small, sizeof(small)) != n ||
	    strncmp(small, buf, sizeof(small) - 1) != 0 ||
	    timerange_format(ms, NULL, 0) != n)
		abort();
	if (ms >= 0 && ms < YEAR_10000_MS - 1) {
		timerange_format(ms + 1, next, sizeof(next));
		if (timerange_parse(NULL, buf, next, 0, &r, NULL, 0) !=
			    STATUS_OK ||
		    r.from_ms != ms || r.to_ms != ms + 1)
			abort();
	}
}

static void
check_describe(const struct timerange *r, int64_t now, size_t cut)
{
	char buf[TIMERANGE_DESCRIBE_MAX], small[TIMERANGE_DESCRIBE_MAX];
	size_t n = timerange_describe(r, now, buf, sizeof(buf));

	if (n != strlen(buf) || n >= sizeof(buf))
		abort();
	/* the "last" form exactly for trailing whole-second ranges */
	if ((strncmp(buf, "last ", 5) == 0) !=
	    (r->to_ms == now && r->from_ms < r->to_ms &&
	     ((uint64_t)r->to_ms - (uint64_t)r->from_ms) % 1000 == 0))
		abort();
	cut %= sizeof(small);
	if (timerange_describe(r, now, small, cut) != n)
		abort();
	if (cut > 0 && strncmp(small, buf, cut - 1) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char fields[3][FIELD_MAX + 1];
	const char *arg[3] = {NULL, NULL, NULL};
	char err[512], err2[512], cut_err[512];
	struct timerange r, r2;
	uint8_t mode;
	uint64_t raw = 0;
	int64_t now;
	size_t cut, pos, k;
	int rc;

	if (size < 9)
		return 0;
	mode = data[0];
	for (int i = 0; i < 8; i++)
		raw = raw << 8 | data[1 + i];
	/* mostly a realistic clock; sometimes any int64 at all */
	if (mode & 0x80)
		now = (int64_t)raw;
	else
		now = BASE_NOW + (int64_t)(int32_t)raw * 1000 +
		      (int64_t)(raw >> 32) % 1000;
	cut = (size_t)(raw % sizeof(cut_err));
	for (pos = 9, k = 0; pos <= size && k < 3; k++) {
		size_t end = pos, n;

		while (end < size && data[end] != '\0')
			end++;
		n = end - pos < FIELD_MAX ? end - pos : FIELD_MAX;
		memcpy(fields[k], data + pos, n);
		fields[k][n] = '\0';
		/* mode bits 0..2 drop a field even when present */
		if (!(mode & (1u << k)))
			arg[k] = fields[k];
		pos = end + 1;
	}

	rc = timerange_parse(arg[0], arg[1], arg[2], now, &r, err, sizeof(err));
	if (rc == STATUS_OK) {
		if (err[0] != '\0' || r.from_ms >= r.to_ms ||
		    (uint64_t)r.to_ms - (uint64_t)r.from_ms >
			    (uint64_t)TIMERANGE_MAX_MS)
			abort();
		check_format(r.from_ms);
		check_format(r.to_ms);
		check_describe(&r, now, cut);
	} else {
		size_t n = strlen(err);

		if (rc != STATUS_INVALID || r.from_ms != 0 || r.to_ms != 0)
			abort();
		if (n == 0 || n >= sizeof(err) - 1 || strchr(err, '\n') ||
		    !valid_utf8(err))
			abort();
		if (strncmp(err, "time_range ", 11) != 0 &&
		    strncmp(err, "from ", 5) != 0 &&
		    strncmp(err, "to ", 3) != 0)
			abort();
		/* any errlen: a NUL-terminated, valid UTF-8 prefix */
		memset(cut_err, 'x', sizeof(cut_err));
		if (timerange_parse(arg[0], arg[1], arg[2], now, &r2, cut_err,
				    cut) != rc)
			abort();
		if (cut > 0 &&
		    (strlen(cut_err) >= cut ||
		     strncmp(cut_err, err, strlen(cut_err)) != 0 ||
		     strlen(cut_err) + 3 < (n < cut - 1 ? n : cut - 1) ||
		     !valid_utf8(cut_err)))
			abort();
	}
	/* deterministic */
	if (timerange_parse(arg[0], arg[1], arg[2], now, &r2, err2,
			    sizeof(err2)) != rc ||
	    r2.from_ms != r.from_ms || r2.to_ms != r.to_ms ||
	    strcmp(err, err2) != 0)
		abort();
	/* compare_to, from each field: a shift back of at most
	 * TIMERANGE_MAX_MS, same length, or a compare_to error */
	for (k = 0; rc == STATUS_OK && k < 3; k++) {
		struct timerange b;

		if (timerange_baseline(&r, arg[k], &b, err2, sizeof(err2)) ==
		    STATUS_OK) {
			if (err2[0] != '\0' ||
			    b.to_ms - b.from_ms != r.to_ms - r.from_ms ||
			    b.from_ms >= r.from_ms ||
			    r.from_ms - b.from_ms > TIMERANGE_MAX_MS)
				abort();
		} else if (b.from_ms != 0 || b.to_ms != 0 ||
			   strncmp(err2, "compare_to \"", 12) != 0 ||
			   !valid_utf8(err2)) {
			abort();
		}
	}
	check_format(now);
	check_format((int64_t)raw);
	check_describe(&(struct timerange){(int64_t)raw, now}, now, cut);
	return 0;
}

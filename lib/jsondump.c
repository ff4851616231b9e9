/*
 * jsondump.c - compact JSON text from jansson values, byte for byte what
 * jansson 2.14's json_dumps writes (see jsondump.h for the contract).
 *
 * One recursive pass appending to one growable buffer.  The rules copied
 * from jansson's dump.c, strconv.c and utf.c: integers as "%lld"
 * (JSON_INTEGER_FORMAT); reals as "%.17g" with the locale's decimal point
 * turned into '.', ".0" appended when there is neither '.' nor 'e', and
 * the exponent's '+' and leading zeros dropped; strings with \" \\ \b \f
 * \n \r \t, other control characters as \u00XX (upper-case hex), every
 * other byte as is, and bad UTF-8 failing the whole dump; object members
 * in iteration (insertion) order.
 */
#include "jsondump.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "utf8.h"

/* The output's bound: none but memory, as json_dumps (the values are the
 * gateway's own answers, bounded where they are built). */
#define OUT_MAX (SIZE_MAX / 2)

enum dump_result {
	DUMP_OK = 0,
	DUMP_FAIL = -1,	    /* what json_dumps answers NULL to, or ENOMEM */
	DUMP_TOO_DEEP = -2, /* past JSONDUMP_MAX_DEPTH: json_dumps decides */
};

/*
 * The output and the containers being dumped (the current one and its
 * ancestors): a container met again while it is on this stack contains
 * itself, which json_dumps refuses (its loop check).
 *
 * put() writes into out's spare room directly and calls buf_append only
 * to grow, so out.data is NUL-terminated only when jsondump() ends.
 */
struct dump {
	struct buf out;
	unsigned depth;
	const json_t *parents[JSONDUMP_MAX_DEPTH];
};

/* What a byte needs in a string: 0 nothing, 1 an escape, 2 a UTF-8 check
 * (a multi-byte sequence starts, or the byte is not UTF-8). */
/* clang-format off */
static const unsigned char byte_class[256] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};
/* clang-format on */

static inline bool
put(struct dump *d, const void *p, size_t n)
{
	if (n < d->out.cap - d->out.len) {
		memcpy(d->out.data + d->out.len, p, n);
		d->out.len += n;
		return true;
	}
	return buf_append(&d->out, p, n) == STATUS_OK;
}

static inline bool
put_char(struct dump *d, char c)
{
	return put(d, &c, 1);
}

/* The escape of c, a byte of class 1, into esc; returns its length. */
static size_t
escape(unsigned char c, char esc[6])
{
	static const char hex[] = "0123456789ABCDEF";

	esc[0] = '\\';
	switch (c) {
	case '"': esc[1] = '"'; return 2;
	case '\\': esc[1] = '\\'; return 2;
	case '\b': esc[1] = 'b'; return 2;
	case '\f': esc[1] = 'f'; return 2;
	case '\n': esc[1] = 'n'; return 2;
	case '\r': esc[1] = 'r'; return 2;
	case '\t': esc[1] = 't'; return 2;
	}
	esc[1] = 'u';
	esc[2] = '0';
	esc[3] = '0';
	esc[4] = hex[c >> 4];
	esc[5] = hex[c & 0xf];
	return 6;
}

/*
 * The string str (n bytes) quoted and escaped.  Bad UTF-8 fails it; but an
 * object key with bad UTF-8 does not fail json_dumps, which ignores that
 * result and goes on after what it had written (the opening quote and
 * everything up to the last escape), so with key set that is what is
 * left in the buffer and the key counts as written.
 */
static enum dump_result
dump_string(struct dump *d, const char *str, size_t n, bool key)
{
	const unsigned char *s = (const unsigned char *)str, *e = s + n;
	const unsigned char *run = s;
	size_t written, len;
	char esc[6];

	if (!put_char(d, '"'))
		return DUMP_FAIL;
	written = d->out.len;
	for (;;) {
		while (s < e && byte_class[*s] == 0)
			s++;
		if (s == e)
			break;
		if (byte_class[*s] == 2) {
			len = utf8_len(s, (size_t)(e - s));
			if (len == 0) {
				if (!key)
					return DUMP_FAIL;
				d->out.len = written;
				return DUMP_OK;
			}
			s += len;
			continue;
		}
		len = escape(*s, esc);
		if (!put(d, run, (size_t)(s - run)) || !put(d, esc, len))
			return DUMP_FAIL;
		written = d->out.len;
		run = ++s;
	}
	if (!put(d, run, (size_t)(s - run)) || !put_char(d, '"'))
		return DUMP_FAIL;
	return DUMP_OK;
}

/* Writes the decimal digits of u ending just before end; returns the
 * first.  end must have 20 bytes before it. */
static char *
put_digits(char *end, unsigned long long u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	return end;
}

/* As snprintf("%" JSON_INTEGER_FORMAT). */
static bool
dump_integer(struct dump *d, json_int_t v)
{
	char tmp[24], *end = tmp + sizeof(tmp), *p;
	unsigned long long u =
		v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	p = put_digits(end, u);
	if (v < 0)
		*--p = '-';
	return put(d, p, (size_t)(end - p));
}

/*
 * As jansson 2.14's jsonp_dtostr(precision 0 = 17) without dtoa: "%.17g",
 * the locale's decimal point (jansson assumes one byte) made '.', ".0"
 * when there is neither '.' nor 'e', then no '+' and no leading zeros in
 * the exponent.
 *
 * An integral value below 1e17 has at most 17 digits, so "%.17g" prints
 * it exactly, without exponent or point: those take a shortcut.
 */
static bool
dump_real(struct dump *d, double v)
{
	char buf[100], *p, *start, *end;
	int ret;
	size_t len;

	if (v > -1e17 && v < 1e17 && v == (double)(long long)v) {
		char tmp[28], *te = tmp + sizeof(tmp) - 2;
		long long i = (long long)v;

		p = put_digits(te, i < 0 ? 0ULL - (unsigned long long)i
					 : (unsigned long long)i);
		if (signbit(v))
			*--p = '-';
		te[0] = '.';
		te[1] = '0';
		return put(d, p, (size_t)(te + 2 - p));
	}

	ret = snprintf(buf, sizeof(buf), "%.17g", v);
	if (ret < 0 || (size_t)ret >= sizeof(buf))
		return false;
	len = (size_t)ret;
	/* from_locale(): the locale's decimal point is the one byte that is
	 * not a digit, sign or 'e' (a json_real is never inf or nan). */
	for (p = buf; *p != '\0'; p++) {
		if ((*p < '0' || *p > '9') && *p != '-' && *p != '+' &&
		    *p != 'e') {
			*p = '.';
			break;
		}
	}
	if (strchr(buf, '.') == NULL && strchr(buf, 'e') == NULL) {
		if (len + 3 >= sizeof(buf))
			return false;
		buf[len++] = '.';
		buf[len++] = '0';
		buf[len] = '\0';
	}
	start = strchr(buf, 'e');
	if (start != NULL) {
		start++;
		end = start + 1;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, len - (size_t)(end - buf));
			len -= (size_t)(end - start);
		}
	}
	return put(d, buf, len);
}

static enum dump_result dump_value(struct dump *d, const json_t *v);

/* Enters container v: fails when it is its own ancestor. */
static enum dump_result
push(struct dump *d, const json_t *v)
{
	for (unsigned i = 0; i < d->depth; i++)
		if (d->parents[i] == v)
			return DUMP_FAIL;
	if (d->depth == JSONDUMP_MAX_DEPTH)
		return DUMP_TOO_DEEP;
	d->parents[d->depth++] = v;
	return DUMP_OK;
}

static enum dump_result
dump_array(struct dump *d, const json_t *v)
{
	size_t n = json_array_size(v);
	enum dump_result r = push(d, v);

	if (r != DUMP_OK)
		return r;
	if (!put_char(d, '['))
		return DUMP_FAIL;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && !put_char(d, ','))
			return DUMP_FAIL;
		r = dump_value(d, json_array_get(v, i));
		if (r != DUMP_OK)
			return r;
	}
	d->depth--;
	return put_char(d, ']') ? DUMP_OK : DUMP_FAIL;
}

static enum dump_result
dump_object(struct dump *d, const json_t *v)
{
	void *iter = json_object_iter((json_t *)v);
	enum dump_result r = push(d, v);

	if (r != DUMP_OK)
		return r;
	if (!put_char(d, '{'))
		return DUMP_FAIL;
	for (bool first = true; iter != NULL; first = false) {
		if (!first && !put_char(d, ','))
			return DUMP_FAIL;
		r = dump_string(d, json_object_iter_key(iter),
				json_object_iter_key_len(iter), true);
		if (r != DUMP_OK)
			return r;
		if (!put_char(d, ':'))
			return DUMP_FAIL;
		r = dump_value(d, json_object_iter_value(iter));
		if (r != DUMP_OK)
			return r;
		iter = json_object_iter_next((json_t *)v, iter);
	}
	d->depth--;
	return put_char(d, '}') ? DUMP_OK : DUMP_FAIL;
}

static enum dump_result
dump_value(struct dump *d, const json_t *v)
{
	if (v == NULL)
		return DUMP_FAIL;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return dump_object(d, v);
	case JSON_ARRAY: return dump_array(d, v);
	case JSON_STRING:
		return dump_string(d, json_string_value(v),
				   json_string_length(v), false);
	case JSON_INTEGER:
		return dump_integer(d, json_integer_value(v)) ? DUMP_OK
							      : DUMP_FAIL;
	case JSON_REAL:
		return dump_real(d, json_real_value(v)) ? DUMP_OK : DUMP_FAIL;
	case JSON_TRUE: return put(d, "true", 4) ? DUMP_OK : DUMP_FAIL;
	case JSON_FALSE: return put(d, "false", 5) ? DUMP_OK : DUMP_FAIL;
	case JSON_NULL: return put(d, "null", 4) ? DUMP_OK : DUMP_FAIL;
	}
	return DUMP_FAIL;
}

char *
jsondump(const json_t *v, size_t flags)
{
	struct dump d;
	enum dump_result r;

	if ((flags & ~(size_t)JSON_ENCODE_ANY) != JSON_COMPACT)
		return json_dumps(v, flags);
	if (!(flags & JSON_ENCODE_ANY) && !json_is_array(v) &&
	    !json_is_object(v))
		return NULL;
	buf_init(&d.out, OUT_MAX);
	d.depth = 0;
	r = dump_value(&d, v);
	if (r == DUMP_OK && buf_append(&d.out, "", 0) != STATUS_OK)
		r = DUMP_FAIL;
	if (r != DUMP_OK) {
		buf_free(&d.out);
		return r == DUMP_TOO_DEEP ? json_dumps(v, flags) : NULL;
	}
	return buf_steal(&d.out, NULL);
}

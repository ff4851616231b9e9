/*
 * log.c - JSON-lines logger: level filter, escaping, one write per line.
 *
 * A line is built in stack buffers (message text, then head + escaped
 * message + fields) and handed to the stream in one fwrite under its lock.
 */
#include "base/log.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/utf8.h"

static _Atomic int log_level = LOG_LEVEL_INFO;
static _Atomic(FILE *) log_out; /* NULL = stderr, which is not a constant */

/* 1e15 ms (31,000 years) keeps the microseconds inside a long long. */
#define LOG_DURATION_MAX 1e15

/*
 * Room for the fields and the closing "}\n": four string fields of at most
 * LOG_FIELD_MAX escaped bytes plus "...", key and quotes, then duration and
 * status.  Whatever the fields leave is the message's budget.
 */
#define LOG_TAIL_MAX (4 * (LOG_FIELD_MAX + 32) + 96)

/* An append-only byte buffer that refuses to grow past cap. */
struct line {
	char *p;
	size_t len;
	size_t cap;
};

static bool
line_put(struct line *l, const char *s, size_t n)
{
	if (n > l->cap - l->len)
		return false;
	memcpy(l->p + l->len, s, n);
	l->len += n;
	return true;
}

static bool
line_puts(struct line *l, const char *s)
{
	return line_put(l, s, strlen(s));
}

/*
 * Appends s[0..n) JSON-escaped, never letting l->len pass limit and never
 * splitting an escape or a UTF-8 sequence.  False when it ran out of room.
 */
static bool
escape_put(struct line *l, size_t limit, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		char esc[8];
		const char *out = esc;
		size_t outlen, adv = 1;
		unsigned char c = u[i];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			outlen = 2;
		} else if (c == '\n') {
			out = "\\n";
			outlen = 2;
		} else if (c == '\r') {
			out = "\\r";
			outlen = 2;
		} else if (c == '\t') {
			out = "\\t";
			outlen = 2;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			outlen = 6;
		} else if (c < 0x80) {
			out = s + i;
			outlen = 1;
		} else if ((adv = utf8_len(u + i, n - i)) > 0) {
			out = s + i;
			outlen = adv;
		} else {
			/* One replacement per bad byte keeps the scan simple. */
			out = "\\ufffd";
			outlen = 6;
			adv = 1;
		}
		if (l->len > limit || outlen > limit - l->len)
			return false;
		memcpy(l->p + l->len, out, outlen);
		l->len += outlen;
		i += adv;
	}
	return true;
}

/* ,"key":"escaped value" with the value cut at LOG_FIELD_MAX bytes. */
static void
field_str(struct line *l, const char *key, const char *val)
{
	if (val == NULL)
		return;
	line_puts(l, ",\"");
	line_puts(l, key);
	line_puts(l, "\":\"");
	if (!escape_put(l, l->len + LOG_FIELD_MAX, val, strlen(val)))
		line_puts(l, "...");
	line_puts(l, "\"");
}

static void
format_ts(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char date[32];

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 ||
	    gmtime_r(&ts.tv_sec, &tm) == NULL ||
	    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, len, "%s.%03uZ", date,
		 (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

void
log_set_level(enum log_level level)
{
	int v = (int)level;

	if (v < LOG_LEVEL_DEBUG)
		v = LOG_LEVEL_DEBUG;
	if (v > LOG_LEVEL_ERROR)
		v = LOG_LEVEL_ERROR;
	atomic_store_explicit(&log_level, v, memory_order_relaxed);
}

enum log_level
log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level,
						    memory_order_relaxed);
}

bool
log_enabled(enum log_level level)
{
	return (int)level >=
	       atomic_load_explicit(&log_level, memory_order_relaxed);
}

void
log_set_output(FILE *f)
{
	atomic_store_explicit(&log_out, f, memory_order_release);
}

void
log_msg(enum log_level level, const struct log_fields *fields, const char *fmt,
	...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fields, fmt, ap);
	va_end(ap);
}

void
log_vmsg(enum log_level level, const struct log_fields *fields, const char *fmt,
	 va_list ap)
{
	/*
	 * The raw message needs no more than LOG_LINE_MAX bytes: every byte
	 * escapes to at least one, and the message's budget in the line is
	 * smaller, so text cut off here would be cut off anyway.
	 */
	char msg[LOG_LINE_MAX];
	char buf[LOG_LINE_MAX];
	char tailbuf[LOG_TAIL_MAX];
	char ts[64];
	struct line line = {buf, 0, sizeof(buf)};
	struct line tail = {tailbuf, 0, sizeof(tailbuf)};
	size_t msglen = 0;
	int saved_errno = errno;
	FILE *out;
	int n;

	if (!log_enabled(level))
		return;
	if (level > LOG_LEVEL_ERROR)
		level = LOG_LEVEL_ERROR;

	if (fmt != NULL) {
		n = vsnprintf(msg, sizeof(msg), fmt, ap);
		if (n > 0)
			msglen = (size_t)n < sizeof(msg) ? (size_t)n
							 : sizeof(msg) - 1;
	}

	if (fields != NULL) {
		char num[64];

		field_str(&tail, "request_id", fields->request_id);
		field_str(&tail, "session", fields->session);
		field_str(&tail, "method", fields->method);
		field_str(&tail, "tool", fields->tool);
		if (fields->duration_ms >= 0 && isfinite(fields->duration_ms)) {
			/* Not %f: it would follow the locale's decimal point. */
			double d = fields->duration_ms < LOG_DURATION_MAX
					   ? fields->duration_ms
					   : LOG_DURATION_MAX;
			long long us = (long long)(d * 1000.0 + 0.5);

			snprintf(num, sizeof(num),
				 ",\"duration_ms\":%lld.%03lld", us / 1000,
				 us % 1000);
			line_puts(&tail, num);
		}
		if (fields->status != 0) {
			snprintf(num, sizeof(num), ",\"status\":%d",
				 fields->status);
			line_puts(&tail, num);
		}
	}
	line_puts(&tail, "}\n");

	format_ts(ts, sizeof(ts));
	line_puts(&line, "{\"ts\":\"");
	line_puts(&line, ts);
	line_puts(&line, "\",\"level\":\"");
	line_puts(&line, log_level_name(level));
	line_puts(&line, "\",\"msg\":\"");
	if (!escape_put(&line, line.cap - tail.len - sizeof("...\""), msg,
			msglen))
		line_puts(&line, "...");
	line_puts(&line, "\"");
	line_put(&line, tail.p, tail.len);

	out = atomic_load_explicit(&log_out, memory_order_acquire);
	if (out == NULL)
		out = stderr;
	flockfile(out);
	fwrite(line.p, 1, line.len, out);
	fflush(out);
	funlockfile(out);
	errno = saved_errno;
}

int
log_level_parse(const char *name)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{"debug", LOG_LEVEL_DEBUG}, {"info", LOG_LEVEL_INFO},
		{"warn", LOG_LEVEL_WARN},   {"warning", LOG_LEVEL_WARN},
		{"error", LOG_LEVEL_ERROR},
	};

	if (name == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(name, names[i].name) == 0)
			return (int)names[i].level;
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_DEBUG: return "debug";
	case LOG_LEVEL_INFO: return "info";
	case LOG_LEVEL_WARN: return "warn";
	case LOG_LEVEL_ERROR: return "error";
	}
	return "unknown";
}

/*
 * jsondump.c - compact JSON text from jansson values, byte for byte what
 * jansson 2.14's json_dumps writes but for reals (see jsondump.h for the
 * contract), and the writer that appends single values to a buffer.
 *
 * One recursive pass appending to one growable buffer.  The rules copied
 * from jansson's dump.c, strconv.c and utf.c: integers as "%lld"
 * (JSON_INTEGER_FORMAT); reals (dump_real) the shortest that reads back,
 * with the locale's decimal point turned into '.', ".0" appended when
 * there is neither '.' nor 'e', and the exponent's '+' and leading zeros
 * dropped; strings with \" \\ \b \f
 * \n \r \t, other control characters as \u00XX (upper-case hex), every
 * other byte as is, and bad UTF-8 failing the whole dump; object members
 * in iteration (insertion) order.
 */
#include "json/jsondump.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"

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
put(struct buf *out, const void *p, size_t n)
{
	if (n < out->cap - out->len && n <= out->max - out->len) {
		memcpy(out->data + out->len, p, n);
		out->len += n;
		return true;
	}
	return buf_append(out, p, n) == STATUS_OK;
}

static inline bool
put_char(struct buf *out, char c)
{
	return put(out, &c, 1);
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

/* True when none of the 8 bytes at s needs anything: no byte of 0x80 or
 * more (UTF-8 to check), below 0x20, '"' or '\\' (escapes).  The usual
 * bit tricks, exact for "any byte": byte < n for n <= 0x80 is
 * (x - n * ones) & ~x & highs, a zero byte the same with n = 1. */
static inline bool
plain8(const unsigned char *s)
{
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t highs = 0x8080808080808080ULL;
	uint64_t v, q, b;

	memcpy(&v, s, sizeof(v));
	q = v ^ (ones * '"');
	b = v ^ (ones * '\\');
	return ((v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) |
		 ((b - ones) & ~b)) &
		highs) == 0;
}

/*
 * The string str (n bytes) quoted and escaped.  Bad UTF-8 fails it; but an
 * object key with bad UTF-8 does not fail json_dumps, which ignores that
 * result and goes on after what it had written (the opening quote and
 * everything up to the last escape), so with key set that is what is
 * left in the buffer and the key counts as written.
 */
static enum dump_result
dump_string(struct buf *out, const char *str, size_t n, bool key)
{
	const unsigned char *s = (const unsigned char *)str, *e = s + n;
	const unsigned char *run = s;
	size_t len;
	char esc[6];

	if (!put_char(out, '"'))
		return DUMP_FAIL;
	for (;;) {
		while (e - s >= 8 && plain8(s))
			s += 8;
		while (s < e && byte_class[*s] == 0)
			s++;
		if (s == e)
			break;
		if (byte_class[*s] == 2) {
			len = utf8_len(s, (size_t)(e - s));
			if (len == 0) /* out holds what was written */
				return key ? DUMP_OK : DUMP_FAIL;
			s += len;
			continue;
		}
		len = escape(*s, esc);
		if (!put(out, run, (size_t)(s - run)) || !put(out, esc, len))
			return DUMP_FAIL;
		run = ++s;
	}
	if (!put(out, run, (size_t)(s - run)) || !put_char(out, '"'))
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
dump_integer(struct buf *out, json_int_t v)
{
	char tmp[24], *end = tmp + sizeof(tmp), *p;
	unsigned long long u =
		v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	p = put_digits(end, u);
	if (v < 0)
		*--p = '-';
	return put(out, p, (size_t)(end - p));
}

/*
 * v = n / 10^6 for an integer n, as the division rounds it, with
 * 1e-4 <= |v| < 1e9 (not integral; the caller took those): n's digits
 * with the point six from the right and the trailing zeros dropped, into
 * p (32 bytes); returns the length, 0 when v is not such a value.  The
 * durations of spans (nanoseconds / 1e6 as milliseconds) are.  With
 * |n| < 10^15 that decimal has at most 15 significant digits, so it is
 * the one "%.15g" writes and the shortest that reads back as v.
 */
static size_t
micro_fixed(double v, char *p)
{
	double x = v * 1e6;
	long long n;
	unsigned long long u;
	char tmp[24], *end = tmp + sizeof(tmp), *d;
	size_t len = 0, ndig, frac;

	if (!(fabs(v) >= 1e-4 && fabs(v) < 1e9))
		return 0;
	n = llround(x);
	if ((double)n / 1e6 != v)
		return 0;
	u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
	d = put_digits(end, u);
	ndig = (size_t)(end - d);
	if (n < 0)
		p[len++] = '-';
	if (ndig <= 6) {
		p[len++] = '0';
		p[len++] = '.';
		for (size_t i = ndig; i < 6; i++)
			p[len++] = '0';
		frac = ndig;
	} else {
		memcpy(p + len, d, ndig - 6);
		len += ndig - 6;
		p[len++] = '.';
		frac = 6;
	}
	memcpy(p + len, end - frac, frac);
	len += frac;
	while (p[len - 1] == '0')
		len--;
	return len;
}

/*
 * Reals as the shortest decimal that reads back as the same double, as
 * JavaScript and Python print them: "45.497626", where jansson's
 * json_dumps ("%.17g") writes "45.497625999999997".  The same value for
 * any JSON reader, in fewer and truthful digits.
 *
 * An integral value below 1e17 is written as its digits and ".0" (17
 * digits at most: exact, and a real still).  Span durations take
 * micro_fixed.  Any other value: "%.15g", "%.16g" or "%.17g", the first
 * that strtod reads back as v, with jansson's touches: the locale's
 * decimal point made '.', ".0" when there is neither '.' nor 'e', no '+'
 * and no leading zeros in the exponent.
 */
static bool
dump_real(struct buf *out, double v)
{
	char buf[100], *p, *start, *end;
	int ret = 0;
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
		return put(out, p, (size_t)(te + 2 - p));
	}
	if ((len = micro_fixed(v, buf)) > 0)
		return put(out, buf, len);

	for (int prec = 15; prec <= 17; prec++) {
		ret = snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (ret < 0 || (size_t)ret >= sizeof(buf))
			return false;
		if (prec == 17 || strtod(buf, NULL) == v)
			break;
	}
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
	return put(out, buf, len);
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
	if (!put_char(&d->out, '['))
		return DUMP_FAIL;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && !put_char(&d->out, ','))
			return DUMP_FAIL;
		r = dump_value(d, json_array_get(v, i));
		if (r != DUMP_OK)
			return r;
	}
	d->depth--;
	return put_char(&d->out, ']') ? DUMP_OK : DUMP_FAIL;
}

static enum dump_result
dump_object(struct dump *d, const json_t *v)
{
	void *iter = json_object_iter((json_t *)v);
	enum dump_result r = push(d, v);

	if (r != DUMP_OK)
		return r;
	if (!put_char(&d->out, '{'))
		return DUMP_FAIL;
	for (bool first = true; iter != NULL; first = false) {
		if (!first && !put_char(&d->out, ','))
			return DUMP_FAIL;
		r = dump_string(&d->out, json_object_iter_key(iter),
				json_object_iter_key_len(iter), true);
		if (r != DUMP_OK)
			return r;
		if (!put_char(&d->out, ':'))
			return DUMP_FAIL;
		r = dump_value(d, json_object_iter_value(iter));
		if (r != DUMP_OK)
			return r;
		iter = json_object_iter_next((json_t *)v, iter);
	}
	d->depth--;
	return put_char(&d->out, '}') ? DUMP_OK : DUMP_FAIL;
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
		return dump_string(&d->out, json_string_value(v),
				   json_string_length(v), false);
	case JSON_INTEGER:
		return dump_integer(&d->out, json_integer_value(v)) ? DUMP_OK
								    : DUMP_FAIL;
	case JSON_REAL:
		return dump_real(&d->out, json_real_value(v)) ? DUMP_OK
							      : DUMP_FAIL;
	case JSON_TRUE: return put(&d->out, "true", 4) ? DUMP_OK : DUMP_FAIL;
	case JSON_FALSE: return put(&d->out, "false", 5) ? DUMP_OK : DUMP_FAIL;
	case JSON_NULL: return put(&d->out, "null", 4) ? DUMP_OK : DUMP_FAIL;
	}
	return DUMP_FAIL;
}

char *
jsondump(const json_t *v, size_t flags)
{
	struct dump d;
	enum dump_result r;
	char *text = NULL;

	if ((flags & ~(size_t)JSON_ENCODE_ANY) != JSON_COMPACT)
		return json_dumps(v, flags);
	if (!(flags & JSON_ENCODE_ANY) && !json_is_array(v) &&
	    !json_is_object(v))
		return NULL;
	buf_init(&d.out, OUT_MAX);
	d.depth = 0;
	r = dump_value(&d, v);
	if (r == DUMP_OK) {
		buf_append(&d.out, "", 0); /* the NUL put() leaves out */
		if (buf_finish(&d.out, &text, NULL) != STATUS_OK)
			r = DUMP_FAIL;
	}
	buf_free(&d.out);
	if (r == DUMP_TOO_DEEP)
		return json_dumps(v, flags);
	return text;
}

/* ---- the writer --------------------------------------------------------- */

/* Whether s (n bytes) is UTF-8 throughout. */
static bool
utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0, len; i < n; i += len) {
		len = s[i] < 0x80 ? 1 : utf8_len(s + i, n - i);
		if (len == 0)
			return false;
	}
	return true;
}

/* put() leaves room for it but no NUL: the writer keeps buf's promise.
 * A failure takes back what was written and stays in b, as an append's
 * does (buf.h). */
static int
written(struct buf *b, size_t len, bool ok, int failure)
{
	if (!ok) {
		buf_rollback(b, len);
		buf_set_error(b, failure);
		return failure;
	}
	b->data[b->len] = '\0';
	return STATUS_OK;
}

int
jsondump_string(struct buf *b, const char *s, size_t n)
{
	size_t len = b->len;
	int rc = buf_error(b);

	/* checked first: put() writes into b's room without asking buf */
	if (rc != STATUS_OK)
		return rc;
	if (s == NULL)
		return written(b, len, false, STATUS_INVALID);
	if (dump_string(b, s, n, false) == DUMP_OK)
		return written(b, len, true, STATUS_OK);
	return written(b, len, false,
		       utf8_valid((const unsigned char *)s, n)
			       ? STATUS_NOMEM
			       : STATUS_INVALID);
}

int
jsondump_integer(struct buf *b, json_int_t v)
{
	size_t len = b->len;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	return written(b, len, dump_integer(b, v), STATUS_NOMEM);
}

int
jsondump_real(struct buf *b, double v)
{
	size_t len = b->len;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	if (!isfinite(v))
		return written(b, len, false, STATUS_INVALID);
	return written(b, len, dump_real(b, v), STATUS_NOMEM);
}

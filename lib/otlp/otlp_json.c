/*
 * otlp_json.c - OTLP/JSON straight into the protobuf-c message tree that
 * otlp_rows.c reads, driven by the generated descriptors so JSON and
 * protobuf can never disagree on a field.  The mapping is proto3's JSON
 * mapping with the OTLP deviations (OTLP spec, "JSON Protobuf Encoding"):
 * trace and span ids are hex, enums are integers, 64-bit integers are
 * decimal strings or numbers, unknown keys are ignored.  Keys are
 * lowerCamelCase; the proto names (snake_case) are accepted too, as every
 * proto3 JSON parser does.
 *
 * A purpose-built parser rather than a JSON library: it builds no document
 * (a DOM costs ~100 bytes per value and parses at a fraction of the speed),
 * so memory is the tree itself, charged to the decode's arena budget.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "otlp/otlp_internal.h"

/* JSON arrays and objects nest at most this deep, known keys or not: an
 * OTLP AnyValue level takes three ({"arrayValue":{"values":[...]}}). */
#define JSON_MAX_NESTING (4 * OTLP_MAX_DEPTH)

/* One step of the path to a value, for error messages. */
struct jpath {
	const struct jpath *up;
	const char *key; /* NULL for an array index */
	size_t keylen;
	size_t index;
};

/*
 * Array elements are gathered on one stack shared by all nesting levels
 * (an inner array pops its elements before the outer one goes on), then
 * copied to the arena at their exact count.
 */
struct jstack {
	uint8_t *data;
	size_t len, cap, max;
};

struct jp {
	const char *start, *p, *end;
	int nesting;
	struct otlp_arena *a;
	struct jstack st;
	struct otlp_nuls *nuls;
	char *err;
	size_t errlen;
};

/* ---- errors ------------------------------------------------------------- */

static int
syntax(struct jp *j, const char *at, const char *what)
{
	int line = 1;
	const char *bol = j->start;

	for (const char *q = j->start; q < at; q++)
		if (*q == '\n') {
			line++;
			bol = q + 1;
		}
	otlp_set_err(j->err, j->errlen,
		     "invalid JSON at line %d, column %zu: %s", line,
		     (size_t)(at - bol) + 1, what);
	return STATUS_INVALID;
}

static void
path_format(const struct jpath *p, char *out, size_t outlen)
{
	const struct jpath *steps[JSON_MAX_NESTING + 8];
	size_t n = 0, used = 0;

	for (; p && n < sizeof(steps) / sizeof(steps[0]); p = p->up)
		steps[n++] = p;
	out[0] = '\0';
	while (n > 0 && used + 1 < outlen) {
		const struct jpath *s = steps[--n];
		int w;

		if (s->key)
			w = snprintf(out + used, outlen - used, "%s%.*s",
				     used ? "." : "",
				     (int)(s->keylen > 64 ? 64 : s->keylen),
				     s->key);
		else
			w = snprintf(out + used, outlen - used, "[%zu]",
				     s->index);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (out[0] == '\0')
		snprintf(out, outlen, "(top level)");
}

/* The path of p for a message: a deep one keeps its end, the part that
 * says where (at most 120 bytes). */
static void
path_shown(const struct jpath *p, char *out, size_t outlen)
{
	char path[2048];
	size_t n;

	path_format(p, path, sizeof(path));
	n = strlen(path);
	if (n > 120)
		snprintf(out, outlen, "...%s", path + n - 117);
	else
		snprintf(out, outlen, "%s", path);
}

static int jfail(struct jp *j, const struct jpath *p, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

static int
jfail(struct jp *j, const struct jpath *p, const char *fmt, ...)
{
	char path[128], what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	path_shown(p, path, sizeof(path));
	otlp_set_err(j->err, j->errlen, "%s: %s", path, what);
	return STATUS_INVALID;
}

static int
jnomem(struct jp *j)
{
	int rc = otlp_arena_failure(j->a);

	if (rc == STATUS_LIMIT)
		otlp_set_err(j->err, j->errlen,
			     "decoded request needs more than %zu bytes: send "
			     "smaller batches",
			     j->st.max);
	else
		otlp_set_err(j->err, j->errlen,
			     "out of memory decoding the request");
	return rc;
}

/* ---- tokens ------------------------------------------------------------- */

static int
peek(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' ||
				 *j->p == '\r' || *j->p == '\t'))
		j->p++;
	return j->p < j->end ? (unsigned char)*j->p : -1;
}

static int
expect(struct jp *j, char c)
{
	char what[32];

	if (peek(j) == c) {
		j->p++;
		return STATUS_OK;
	}
	if (j->p >= j->end)
		return syntax(j, j->p, "unexpected end of input");
	snprintf(what, sizeof(what), "expected '%c'", c);
	return syntax(j, j->p, what);
}

/*
 * At '"': checks the string (escapes, no raw control characters) and moves
 * past it.  raw and n give the text between the quotes, esc whether it holds
 * escapes.  Bytes are not checked as UTF-8 here: otlp_rows.c makes every
 * string valid, as it must for protobuf.
 */
static int
str_scan(struct jp *j, const char **raw, size_t *n, bool *esc)
{
	const char *q = j->p + 1;

	*esc = false;
	for (;;) {
		unsigned char c;

		if (q >= j->end)
			return syntax(j, j->p, "unterminated string");
		c = (unsigned char)*q;
		if (c == '"')
			break;
		if (c < 0x20)
			return syntax(j, q, "control character in a string");
		if (c != '\\') {
			q++;
			continue;
		}
		*esc = true;
		if (q + 1 >= j->end)
			return syntax(j, j->p, "unterminated string");
		if (q[1] == 'u') {
			if (j->end - q < 6 || hex_digit(q[2]) < 0 ||
			    hex_digit(q[3]) < 0 || hex_digit(q[4]) < 0 ||
			    hex_digit(q[5]) < 0)
				return syntax(j, q, "bad \\u escape");
			q += 6;
		} else if (strchr("\"\\/bfnrt", q[1]) && q[1] != '\0') {
			q += 2;
		} else {
			return syntax(j, q, "bad escape");
		}
	}
	*raw = j->p + 1;
	*n = (size_t)(q - *raw);
	j->p = q + 1;
	return STATUS_OK;
}

static unsigned
hex4(const char *s)
{
	return (unsigned)(hex_digit(s[0]) << 12 | hex_digit(s[1]) << 8 |
			  hex_digit(s[2]) << 4 | hex_digit(s[3]));
}

static size_t
put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Unescapes a checked string (n raw bytes) into o, which has room for n
 * bytes: no escape grows.  A lone surrogate becomes U+FFFD, and so does
 * \u0000 (counted in *nuls when nuls is not NULL).  Returns the length; o
 * is not NUL-terminated and holds no NUL.
 */
static size_t
unescape(const char *s, size_t n, char *o, size_t *nuls)
{
	size_t i = 0, w = 0;

	while (i < n) {
		unsigned cp;

		if (s[i] != '\\') {
			o[w++] = s[i++];
			continue;
		}
		switch (s[i + 1]) {
		case 'b': o[w++] = '\b'; break;
		case 'f': o[w++] = '\f'; break;
		case 'n': o[w++] = '\n'; break;
		case 'r': o[w++] = '\r'; break;
		case 't': o[w++] = '\t'; break;
		case 'u':
			cp = hex4(s + i + 2);
			i += 6;
			if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= n &&
			    s[i] == '\\' && s[i + 1] == 'u') {
				unsigned lo = hex4(s + i + 2);

				if (lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					     (lo - 0xdc00);
					i += 6;
				}
			}
			if (cp == 0 && nuls != NULL)
				(*nuls)++;
			if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
				cp = 0xfffd;
			w += put_utf8(o + w, cp);
			continue;
		default: o[w++] = s[i + 1]; /* " \ / */
		}
		i += 2;
	}
	return w;
}

static int
num_scan(struct jp *j, const char **s, size_t *n, bool *is_int)
{
	const char *q = j->p, *e = j->end;

	*is_int = true;
	if (q < e && *q == '-')
		q++;
	if (q >= e || *q < '0' || *q > '9')
		return syntax(j, j->p, "invalid number");
	if (*q == '0')
		q++;
	else
		while (q < e && *q >= '0' && *q <= '9')
			q++;
	if (q < e && *q == '.') {
		q++;
		if (q >= e || *q < '0' || *q > '9')
			return syntax(j, j->p, "invalid number");
		while (q < e && *q >= '0' && *q <= '9')
			q++;
		*is_int = false;
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		if (q >= e || *q < '0' || *q > '9')
			return syntax(j, j->p, "invalid number");
		while (q < e && *q >= '0' && *q <= '9')
			q++;
		*is_int = false;
	}
	*s = j->p;
	*n = (size_t)(q - j->p);
	j->p = q;
	return STATUS_OK;
}

static int
literal(struct jp *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return syntax(j, j->p, "invalid literal");
	j->p += n;
	return STATUS_OK;
}

/* Skips any value (an unknown key's), nesting bounded. */
static int
skip_value(struct jp *j)
{
	const char *raw;
	size_t n;
	bool flag;
	int c = peek(j), rc;

	switch (c) {
	case '"': return str_scan(j, &raw, &n, &flag);
	case 't': return literal(j, "true");
	case 'f': return literal(j, "false");
	case 'n': return literal(j, "null");
	case '{':
	case '[':
		if (++j->nesting > JSON_MAX_NESTING)
			return syntax(j, j->p, "nested too deep");
		j->p++;
		if (peek(j) == (c == '{' ? '}' : ']')) {
			j->p++;
			j->nesting--;
			return STATUS_OK;
		}
		for (;;) {
			if (c == '{') {
				if (peek(j) != '"')
					return syntax(j, j->p,
						      "expected a string key");
				if ((rc = str_scan(j, &raw, &n, &flag)) ||
				    (rc = expect(j, ':')))
					return rc;
			}
			if ((rc = skip_value(j)))
				return rc;
			if (peek(j) == ',') {
				j->p++;
				continue;
			}
			if ((rc = expect(j, c == '{' ? '}' : ']')))
				return rc;
			j->nesting--;
			return STATUS_OK;
		}
	case -1: return syntax(j, j->p, "unexpected end of input");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return num_scan(j, &raw, &n, &flag);
		return syntax(j, j->p, "unexpected character");
	}
}

/* ---- scalars ------------------------------------------------------------ */

/*
 * The text of a number or of a string holding one, NUL-terminated in buf
 * (bufsize bytes).  false when the value is neither, or too long to be a
 * number; j->p moves past the value only on success.
 */
static bool
num_text(struct jp *j, char *buf, size_t bufsize, bool *quoted, bool *is_int)
{
	const char *s;
	size_t n;
	bool esc;
	int c = peek(j);
	const char *save = j->p;

	*quoted = c == '"';
	if (c == '"') {
		if (str_scan(j, &s, &n, &esc) != STATUS_OK || n >= bufsize) {
			j->p = save;
			return false;
		}
		n = esc ? unescape(s, n, buf, NULL) : (memcpy(buf, s, n), n);
		buf[n] = '\0';
		*is_int = strcspn(buf, ".eE") == n;
		return true;
	}
	if (c != '-' && (c < '0' || c > '9'))
		return false;
	if (num_scan(j, &s, &n, is_int) != STATUS_OK || n >= bufsize) {
		j->p = save;
		return false;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

/* A 64-bit integer: a JSON number (integral) or a decimal string.
 * unsig: >= 0 up to UINT64_MAX. */
static bool
parse_int64(struct jp *j, bool unsig, int64_t *sv, uint64_t *uv)
{
	char buf[400], *end;
	bool quoted, is_int;
	const char *save = j->p;

	if (!num_text(j, buf, sizeof(buf), &quoted, &is_int))
		return false;
	errno = 0;
	if (is_int && buf[0] != '\0' &&
	    (buf[0] == '-' ? buf[1] >= '0' && buf[1] <= '9'
			   : buf[0] >= '0' && buf[0] <= '9')) {
		if (unsig) {
			unsigned long long x;

			if (buf[0] == '-')
				goto bad;
			x = strtoull(buf, &end, 10);
			if (errno || *end)
				goto bad;
			*uv = x;
			*sv = (int64_t)x;
		} else {
			long long x = strtoll(buf, &end, 10);

			if (errno || *end)
				goto bad;
			*sv = x;
			*uv = (uint64_t)x;
		}
		return true;
	}
	if (!quoted) { /* 1.7e18: a number that is an integer */
		double d = strtod(buf, &end);

		if (*end || d != floor(d))
			goto bad;
		if (unsig) {
			if (!(d >= 0 && d < 18446744073709551616.0))
				goto bad;
			*uv = (uint64_t)d;
			*sv = (int64_t)*uv;
		} else {
			if (!(d >= -9223372036854775808.0 &&
			      d < 9223372036854775808.0))
				goto bad;
			*sv = (int64_t)d;
			*uv = (uint64_t)*sv;
		}
		return true;
	}
bad:
	j->p = save;
	return false;
}

static bool
parse_double(struct jp *j, double *d)
{
	char buf[400], *end;
	bool quoted, is_int;
	const char *save = j->p;

	if (!num_text(j, buf, sizeof(buf), &quoted, &is_int))
		return false;
	if (quoted && strcmp(buf, "NaN") == 0) {
		*d = NAN;
		return true;
	}
	if (quoted && strcmp(buf, "Infinity") == 0) {
		*d = INFINITY;
		return true;
	}
	if (quoted && strcmp(buf, "-Infinity") == 0) {
		*d = -INFINITY;
		return true;
	}
	if (quoted && !(buf[0] == '-' || buf[0] == '.' ||
			(buf[0] >= '0' && buf[0] <= '9')))
		goto bad;
	errno = 0;
	*d = strtod(buf, &end);
	if (*end || end == buf || (errno == ERANGE && isinf(*d)))
		goto bad;
	return true;
bad:
	j->p = save;
	return false;
}

static int
b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Base64 (standard or URL-safe alphabet, padding optional) into out (at
 * least 3 * (n / 4 + 1) bytes).  false when not base64. */
static bool
b64_decode(const char *s, size_t n, uint8_t *out, size_t *outlen)
{
	uint32_t acc = 0;
	size_t bits = 0, o = 0, i;

	while (n > 0 && s[n - 1] == '=')
		n--;
	for (i = 0; i < n; i++) {
		int v = b64val(s[i]);

		if (v < 0)
			return false;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits >= 6) /* a lone trailing character */
		return false;
	*outlen = o;
	return true;
}

static bool
is_id_field(const ProtobufCFieldDescriptor *f)
{
	return strcmp(f->name, "trace_id") == 0 ||
	       strcmp(f->name, "span_id") == 0 ||
	       strcmp(f->name, "parent_span_id") == 0;
}

/*
 * A trace or span id: hex (OTLP/JSON), or, for exporters that use the
 * plain proto3 mapping, base64 of 8 or 16 bytes.  Anything else becomes a
 * one-byte id, which otlp_rows.c rejects with the span alone.
 */
static void
json_id(const char *s, size_t n, uint8_t *d, ProtobufCBinaryData *out)
{
	size_t i, len;

	out->data = d;
	if (n % 2 == 0) {
		for (i = 0; i < n; i += 2) {
			int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);

			if (hi < 0 || lo < 0)
				break;
			d[i / 2] = (uint8_t)(hi << 4 | lo);
		}
		if (i == n) {
			out->len = n / 2;
			return;
		}
	}
	if (n <= 24 && b64_decode(s, n, d, &len) && (len == 8 || len == 16)) {
		out->len = len;
		return;
	}
	d[0] = 0;
	out->len = 1;
}

/* ---- messages ----------------------------------------------------------- */

static int json_message(struct jp *j, const ProtobufCMessageDescriptor *d,
			ProtobufCMessage *m, const struct jpath *p, int depth);

static size_t
type_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM: return sizeof(int32_t);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32: return sizeof(uint32_t);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64: return sizeof(int64_t);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: return sizeof(uint64_t);
	case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
	case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
	}
	return 0;
}

/* A string value unescaped into the arena, NUL-terminated; *nuls counts
 * the \u0000 it held (now U+FFFD). */
static int
arena_string(struct jp *j, const struct jpath *p, const char *what, char **out,
	     size_t *outlen, size_t *nuls)
{
	const char *raw;
	size_t n;
	bool esc;
	int rc;

	*nuls = 0;
	if (peek(j) != '"')
		return jfail(j, p, "%s", what);
	if ((rc = str_scan(j, &raw, &n, &esc)))
		return rc;
	*out = otlp_arena_alloc(j->a, n + 1);
	if (*out == NULL)
		return jnomem(j);
	n = esc ? unescape(raw, n, *out, nuls) : (memcpy(*out, raw, n), n);
	(*out)[n] = '\0';
	*outlen = n;
	return STATUS_OK;
}

/* One value of field f into dst (an element of the field's type). */
static int
json_value(struct jp *j, const ProtobufCFieldDescriptor *f, void *dst,
	   const struct jpath *p, int depth)
{
	int64_t s;
	uint64_t u;
	double d;
	int c, rc;

	if (peek(j) == -1)
		return syntax(j, j->p, "unexpected end of input");
	switch (f->type) {
	case PROTOBUF_C_TYPE_ENUM: {
		const char *raw;
		size_t n;
		bool is_int;

		c = peek(j);
		if (c != '-' && (c < '0' || c > '9'))
			return jfail(j, p,
				     "expected an integer (OTLP/JSON encodes "
				     "enums as integers)");
		if ((rc = num_scan(j, &raw, &n, &is_int)))
			return rc;
		j->p = raw; /* parse the same token as an integer */
		if (!is_int || !parse_int64(j, false, &s, &u) ||
		    s < INT32_MIN || s > INT32_MAX)
			return jfail(j, p,
				     "expected an integer (OTLP/JSON encodes "
				     "enums as integers)");
		*(int32_t *)dst = (int32_t)s;
		return STATUS_OK;
	}
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (!parse_int64(j, false, &s, &u) || s < INT32_MIN ||
		    s > INT32_MAX)
			return jfail(j, p, "expected a 32-bit integer");
		*(int32_t *)dst = (int32_t)s;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (!parse_int64(j, true, &s, &u) || u > UINT32_MAX)
			return jfail(j, p,
				     "expected an unsigned 32-bit integer");
		*(uint32_t *)dst = (uint32_t)u;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (!parse_int64(j, false, &s, &u))
			return jfail(j, p,
				     "expected a 64-bit integer (a number or "
				     "a decimal string)");
		*(int64_t *)dst = s;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (!parse_int64(j, true, &s, &u))
			return jfail(j, p,
				     "expected an unsigned 64-bit integer (a "
				     "number or a decimal string)");
		*(uint64_t *)dst = u;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_FLOAT:
		if (!parse_double(j, &d))
			return jfail(j, p, "expected a number");
		*(float *)dst = (float)d;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_DOUBLE:
		if (!parse_double(j, &d))
			return jfail(j, p,
				     "expected a number (or \"NaN\", "
				     "\"Infinity\", \"-Infinity\")");
		*(double *)dst = d;
		return STATUS_OK;
	case PROTOBUF_C_TYPE_BOOL:
		c = peek(j);
		if (c == 't' && literal(j, "true") == STATUS_OK)
			*(protobuf_c_boolean *)dst = 1;
		else if (c == 'f' && literal(j, "false") == STATUS_OK)
			*(protobuf_c_boolean *)dst = 0;
		else
			return jfail(j, p, "expected true or false");
		return STATUS_OK;
	case PROTOBUF_C_TYPE_STRING: {
		size_t n, nuls;

		rc = arena_string(j, p, "expected a string", (char **)dst, &n,
				  &nuls);
		if (rc == STATUS_OK && nuls > 0 && j->nuls->values++ == 0)
			path_shown(p, j->nuls->first, sizeof(j->nuls->first));
		return rc;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = dst;
		char *t;
		size_t n, nuls;
		uint8_t *o;

		/* a NUL in hex or base64 text is a bad digit */
		rc = arena_string(j, p,
				  is_id_field(f) ? "expected a hex string"
						 : "expected a base64 string",
				  &t, &n, &nuls);
		if (rc)
			return rc;
		/* decoded in place: both are shorter than their text */
		o = (uint8_t *)t;
		if (is_id_field(f)) {
			uint8_t tmp[32];

			if (n > 64) {
				b->data = o;
				b->len = 1; /* rejected with its span */
				return STATUS_OK;
			}
			json_id(t, n, tmp, b);
			memcpy(o, tmp, b->len);
			b->data = o;
			return STATUS_OK;
		}
		if (!b64_decode(t, n, o, &b->len))
			return jfail(j, p, "expected a base64 string");
		b->data = o;
		return STATUS_OK;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *sd = f->descriptor;
		ProtobufCMessage *m;

		if (peek(j) != '{')
			return jfail(j, p, "expected an object");
		if (depth + 1 > OTLP_MAX_DEPTH)
			return jfail(j, p,
				     "values nested deeper than %d levels",
				     OTLP_MAX_DEPTH);
		m = otlp_arena_alloc(j->a, sd->sizeof_message);
		if (m == NULL)
			return jnomem(j);
		protobuf_c_message_init(sd, m);
		*(ProtobufCMessage **)dst = m;
		return json_message(j, sd, m, p, depth + 1);
	}
	}
	return jfail(j, p, "unsupported field type");
}

static int
stack_push(struct jp *j, const void *elem, size_t sz)
{
	if (j->st.len + sz > j->st.cap) {
		size_t cap = j->st.cap ? j->st.cap * 2 : 4096;
		uint8_t *nd;

		if (j->st.len + sz > j->st.max) {
			otlp_set_err(j->err, j->errlen,
				     "decoded request needs more than %zu "
				     "bytes: send smaller batches",
				     j->st.max);
			return STATUS_LIMIT;
		}
		if (cap > j->st.max)
			cap = j->st.max;
		nd = realloc(j->st.data, cap);
		if (nd == NULL)
			return jnomem(j);
		j->st.data = nd;
		j->st.cap = cap;
	}
	memcpy(j->st.data + j->st.len, elem, sz);
	j->st.len += sz;
	return STATUS_OK;
}

static int
json_repeated(struct jp *j, const ProtobufCFieldDescriptor *f,
	      ProtobufCMessage *m, const struct jpath *p, int depth)
{
	uint8_t *base = (uint8_t *)m, *arr;
	size_t sz = type_size(f->type), mark = j->st.len, n = 0;
	uint8_t elem[32];
	int rc;

	if (peek(j) != '[')
		return peek(j) == -1
			       ? syntax(j, j->p, "unexpected end of input")
			       : jfail(j, p, "expected an array");
	if (++j->nesting > JSON_MAX_NESTING)
		return syntax(j, j->p, "nested too deep");
	j->p++;
	if (peek(j) != ']') {
		for (;;) {
			struct jpath ip = {.up = p, .index = n};

			if ((rc = json_value(j, f, elem, &ip, depth)) ||
			    (rc = stack_push(j, elem, sz)))
				return rc;
			n++;
			if (peek(j) == ',') {
				j->p++;
				continue;
			}
			break;
		}
	}
	if ((rc = expect(j, ']')))
		return rc;
	j->nesting--;
	arr = otlp_arena_alloc(j->a, n * sz);
	if (arr == NULL)
		return jnomem(j);
	if (n > 0)
		memcpy(arr, j->st.data + mark, n * sz);
	j->st.len = mark;
	*(size_t *)(base + f->quantifier_offset) = n;
	*(void **)(base + f->offset) = arr;
	return STATUS_OK;
}

static int
json_field(struct jp *j, const ProtobufCFieldDescriptor *f, ProtobufCMessage *m,
	   const struct jpath *p, int depth)
{
	uint8_t *base = (uint8_t *)m;
	int rc;

	if (peek(j) == 'n') /* proto3 JSON: null is the default value */
		return literal(j, "null");
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return json_repeated(j, f, m, p, depth);
	rc = json_value(j, f, base + f->offset, p, depth);
	if (rc != STATUS_OK)
		return rc;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(base + f->quantifier_offset) = f->id;
	else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
		*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
	return STATUS_OK;
}

/* lowerCamelCase (or already snake_case) to the proto name; false when it
 * cannot be a field. */
static bool
snake_name(const char *key, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = key[i];

		if (o + 2 >= outlen || ch == '\0')
			return false;
		if (ch >= 'A' && ch <= 'Z') {
			out[o++] = '_';
			ch = (char)(ch - 'A' + 'a');
		}
		out[o++] = ch;
	}
	out[o] = '\0';
	return true;
}

static int
json_message(struct jp *j, const ProtobufCMessageDescriptor *d,
	     ProtobufCMessage *m, const struct jpath *p, int depth)
{
	int rc;

	if ((rc = expect(j, '{')))
		return rc;
	if (++j->nesting > JSON_MAX_NESTING)
		return syntax(j, j->p, "nested too deep");
	if (peek(j) == '}') {
		j->p++;
		j->nesting--;
		return STATUS_OK;
	}
	for (;;) {
		const ProtobufCFieldDescriptor *f = NULL;
		const char *raw;
		char key[64], name[64];
		size_t n;
		bool esc;

		if (peek(j) != '"')
			return syntax(j, j->p, "expected a string key");
		if ((rc = str_scan(j, &raw, &n, &esc)) || (rc = expect(j, ':')))
			return rc;
		if (n < sizeof(key)) {
			size_t kn = esc ? unescape(raw, n, key, NULL)
					: (memcpy(key, raw, n), n);

			if (snake_name(key, kn, name, sizeof(name)))
				f = protobuf_c_message_descriptor_get_field_by_name(
					d, name);
		}
		if (f == NULL) {
			/* OTLP/JSON: unknown keys are ignored */
			if ((rc = skip_value(j)))
				return rc;
		} else {
			struct jpath kp = {.up = p, .key = raw, .keylen = n};

			if ((rc = json_field(j, f, m, &kp, depth)))
				return rc;
		}
		if (peek(j) == ',') {
			j->p++;
			continue;
		}
		if ((rc = expect(j, '}')))
			return rc;
		j->nesting--;
		return STATUS_OK;
	}
}

int
otlp_json_decode(const ProtobufCMessageDescriptor *desc, const char *text,
		 size_t len, const struct otlp_limits *lim,
		 struct otlp_arena *a, ProtobufCMessage **msg,
		 struct otlp_nuls *nuls, char *err, size_t errlen)
{
	struct jp j = {.start = text,
		       .p = text,
		       .end = text + len,
		       .a = a,
		       .st = {.max = lim->max_memory},
		       .nuls = nuls,
		       .err = err,
		       .errlen = errlen};
	ProtobufCMessage *m;
	char what[96];
	int rc;

	*msg = NULL;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		j.p += 3; /* a UTF-8 byte order mark */
	if (peek(&j) != '{') {
		snprintf(what, sizeof(what),
			 "expected a JSON object (%s) at the top level",
			 desc->short_name);
		return syntax(&j, j.p, what);
	}
	m = otlp_arena_alloc(a, desc->sizeof_message);
	if (m == NULL) {
		rc = jnomem(&j);
		goto out;
	}
	protobuf_c_message_init(desc, m);
	rc = json_message(&j, desc, m, NULL, 1);
	if (rc == STATUS_OK && peek(&j) != -1)
		rc = syntax(&j, j.p,
			    "unexpected text after the top-level "
			    "object");
	if (rc == STATUS_OK)
		*msg = m;
out:
	free(j.st.data);
	return rc;
}

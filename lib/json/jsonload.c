/*
 * jsonload.c - a fast path for parsing JSON into jansson values, with
 * json_loadb behind it for everything the fast path is not sure of (see
 * jsonload.h for the contract).
 *
 * One recursive-descent pass over the buffer.  Strings without escapes are
 * copied straight from the input (UTF-8 checked as they are scanned);
 * strings with escapes are decoded into a buffer first.  Every failure,
 * out of memory included, is "give up": the caller falls back to
 * json_loadb, so nothing here needs an error message.
 */
#include "json/jsonload.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/utf8.h"

/* Strings with escapes decode into a stack buffer of this size, or into
 * malloc'd memory when longer (decoding never lengthens a string). */
#define DECODE_STACK 256

/*
 * The _meta cache.  A 2026-07-28 client sends the same params._meta
 * (protocol version, client capabilities and info) on every request, so
 * the last META_SLOTS distinct ones (picked by a hash of their bytes) are
 * kept with their parsed values, and a request whose _meta has the same
 * bytes gets a new reference to that value instead of a parse (which
 * costs more than the rest of a small request's JSON).  A value enters
 * the cache only from a successful fast parse of exactly those bytes, so
 * a hit is what parsing them gives.  Bounded: META_MAX bytes per entry
 * (a larger _meta is parsed every time), META_SLOTS entries.  One mutex;
 * it is held for a compare of at most META_MAX bytes.
 */
#define META_SLOTS 16
#define META_MAX   4096

struct meta_slot {
	unsigned char *raw; /* NULL: empty */
	size_t len;
	json_t *v; /* read-only, shared by every result that got it */
};

static struct {
	pthread_mutex_t mu;
	struct meta_slot slot[META_SLOTS];
} meta_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct fast {
	const unsigned char *p;
	const unsigned char *end;
	unsigned depth;
};

static json_t *fast_value(struct fast *f);

static inline void
skip_ws(struct fast *f)
{
	while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' ||
				 *f->p == '\r' || *f->p == '\t'))
		f->p++;
}

/* The code unit of \uXXXX at s (the backslash), or -1. */
static long
hex4(const unsigned char *s, const unsigned char *end)
{
	long v = 0;

	if (end - s < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t
put_utf8(unsigned char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Decodes the escaped string body [s, e) (checked by scan_string: every
 * backslash starts a complete escape) into o, which has room for e - s
 * bytes.  Returns the decoded length, or -1 for what jansson refuses or
 * the fast path leaves to it: \u0000 (a NUL; JSON_ALLOW_NUL is not
 * passed) and surrogates that do not form a pair.
 */
static long
decode_escapes(const unsigned char *s, const unsigned char *e, unsigned char *o)
{
	unsigned char *start = o;

	while (s < e) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		switch (s[1]) {
		case '"':
		case '\\':
		case '/': *o++ = s[1]; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long cp = hex4(s, e), lo;

			if (cp <= 0 || (cp >= 0xdc00 && cp <= 0xdfff))
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				lo = hex4(s + 6, e);
				if (lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
				s += 6;
			}
			o += put_utf8(o, (unsigned long)cp);
			s += 6;
			continue;
		}
		default: return -1;
		}
		s += 2;
	}
	return o - start;
}

/*
 * Scans the string whose opening quote f->p is on and leaves f->p past
 * its closing quote.  [*s, *e) is its raw body; *escaped says whether it
 * holds escapes.  false for a control character, bad UTF-8, an unknown or
 * cut escape, or no closing quote.
 */
static bool
scan_string(struct fast *f, const unsigned char **s, const unsigned char **e,
	    bool *escaped)
{
	const unsigned char *q = f->p + 1;

	*escaped = false;
	*s = q;
	for (;;) {
		if (q >= f->end)
			return false;
		if (*q == '"')
			break;
		if (*q == '\\') {
			*escaped = true;
			if (f->end - q < 2)
				return false;
			if (q[1] == 'u') {
				if (hex4(q, f->end) < 0)
					return false;
				q += 6;
			} else {
				q += 2;
			}
		} else if (*q < 0x20) {
			return false;
		} else if (*q < 0x80) {
			q++;
		} else {
			size_t len = utf8_len(q, (size_t)(f->end - q));

			if (len == 0)
				return false;
			q += len;
		}
	}
	*e = q;
	f->p = q + 1;
	return true;
}

/*
 * The string at f->p, decoded: *text and *len, in the input when there are
 * no escapes, else in stack (DECODE_STACK bytes) or in *heap (caller
 * frees).  false to give up.
 */
static bool
read_string(struct fast *f, unsigned char *stack, unsigned char **heap,
	    const char **text, size_t *len)
{
	const unsigned char *s, *e;
	unsigned char *o;
	bool escaped;
	long n;

	*heap = NULL;
	if (!scan_string(f, &s, &e, &escaped))
		return false;
	if (!escaped) {
		*text = (const char *)s;
		*len = (size_t)(e - s);
		return true;
	}
	o = stack;
	if (e - s > DECODE_STACK &&
	    (o = *heap = malloc((size_t)(e - s))) == NULL)
		return false;
	n = decode_escapes(s, e, o);
	if (n < 0)
		return false;
	*text = (const char *)o;
	*len = (size_t)n;
	return true;
}

static json_t *
fast_string(struct fast *f)
{
	unsigned char stack[DECODE_STACK], *heap;
	const char *text;
	size_t len;
	json_t *v = NULL;

	if (read_string(f, stack, &heap, &text, &len))
		v = json_stringn_nocheck(text, len);
	free(heap);
	return v;
}

/*
 * -?(0|[1-9][0-9]*) of at most 18 digits, which always fits a json_int_t.
 * Fractions, exponents (jansson makes them reals) and longer integers
 * (which may overflow: jansson's error) are left to jansson.
 */
static json_t *
fast_number(struct fast *f)
{
	const unsigned char *q = f->p, *digits;
	bool neg = false;
	json_int_t v = 0;

	if (*q == '-') {
		neg = true;
		q++;
	}
	digits = q;
	while (q < f->end && *q >= '0' && *q <= '9')
		q++;
	if (q == digits || q - digits > 18 ||
	    (*digits == '0' && q - digits > 1))
		return NULL;
	if (q < f->end && (*q == '.' || *q == 'e' || *q == 'E'))
		return NULL;
	for (f->p = digits; f->p < q; f->p++)
		v = v * 10 + (*f->p - '0');
	return json_integer(neg ? -v : v);
}

static json_t *
fast_literal(struct fast *f, const char *word, size_t len, json_t *v)
{
	if ((size_t)(f->end - f->p) < len || memcmp(f->p, word, len) != 0)
		return NULL;
	f->p += len;
	return v;
}

/*
 * Past the object or array at p: the byte after its closing bracket, or
 * NULL when it does not close before end.  Brackets inside strings are
 * skipped; nothing else is checked (only bytes that once parsed are
 * trusted: see the _meta cache).
 */
static const unsigned char *
skip_container(const unsigned char *p, const unsigned char *end)
{
	size_t depth = 0;

	while (p < end) {
		switch (*p++) {
		case '{':
		case '[': depth++; break;
		case '}':
		case ']':
			if (--depth == 0)
				return p;
			break;
		case '"':
			while (p < end && *p != '"')
				p += *p == '\\' && end - p > 1 ? 2 : 1;
			if (p == end)
				return NULL;
			p++;
			break;
		default: break;
		}
	}
	return NULL;
}

/* FNV-1a over the length and the last 64 bytes, where clients differ
 * (clientInfo comes last in the SDKs' _meta). */
static size_t
meta_slot_of(const unsigned char *raw, size_t len)
{
	const unsigned char *p = raw + (len > 64 ? len - 64 : 0);
	uint32_t h = 2166136261u ^ (uint32_t)len;

	for (; p < raw + len; p++)
		h = (h ^ *p) * 16777619u;
	return h % META_SLOTS;
}

/* The _meta object at f->p: from the cache, or parsed and cached. */
static json_t *
fast_meta(struct fast *f)
{
	const unsigned char *start = f->p;
	const unsigned char *end = skip_container(start, f->end);
	struct meta_slot *slot, old;
	unsigned char *raw;
	size_t len;
	json_t *v;

	if (end == NULL || (len = (size_t)(end - start)) > META_MAX)
		return fast_value(f);
	slot = &meta_cache.slot[meta_slot_of(start, len)];
	pthread_mutex_lock(&meta_cache.mu);
	if (slot->len == len && slot->raw != NULL &&
	    memcmp(slot->raw, start, len) == 0) {
		v = json_incref(slot->v);
		pthread_mutex_unlock(&meta_cache.mu);
		f->p = end;
		return v;
	}
	pthread_mutex_unlock(&meta_cache.mu);
	if ((v = fast_value(f)) == NULL || f->p != end ||
	    (raw = malloc(len)) == NULL)
		return v;
	memcpy(raw, start, len);
	pthread_mutex_lock(&meta_cache.mu);
	old = *slot;
	slot->raw = raw;
	slot->len = len;
	slot->v = json_incref(v);
	pthread_mutex_unlock(&meta_cache.mu);
	free(old.raw);
	json_decref(old.v);
	return v;
}

/* After a member of an array or object: 1 past a ',' (another member
 * follows), 0 past the closing bracket, -1 for anything else. */
static int
next_member(struct fast *f, unsigned char close)
{
	skip_ws(f);
	if (f->p >= f->end)
		return -1;
	if (*f->p == close) {
		f->p++;
		return 0;
	}
	if (*f->p != ',')
		return -1;
	f->p++;
	skip_ws(f);
	return 1;
}

static json_t *
fast_array(struct fast *f)
{
	json_t *a = json_array(), *v;
	int more = -1;

	if (a == NULL)
		return NULL;
	f->p++;
	skip_ws(f);
	if (f->p < f->end && *f->p == ']') {
		f->p++;
		return a;
	}
	for (;;) {
		if ((v = fast_value(f)) == NULL ||
		    json_array_append_new(a, v) != 0)
			goto fail;
		if ((more = next_member(f, ']')) <= 0)
			break;
	}
	if (more == 0)
		return a;
fail:
	json_decref(a);
	return NULL;
}

static json_t *
fast_object(struct fast *f)
{
	unsigned char stack[DECODE_STACK], *heap = NULL;
	json_t *o = json_object(), *v;
	const char *key;
	size_t len, size;
	int more = -1;

	if (o == NULL)
		return NULL;
	f->p++;
	skip_ws(f);
	if (f->p < f->end && *f->p == '}') {
		f->p++;
		return o;
	}
	for (;;) {
		if (f->p >= f->end || *f->p != '"' ||
		    !read_string(f, stack, &heap, &key, &len) ||
		    memchr(key, '\0', len) != NULL)
			goto fail;
		skip_ws(f);
		if (f->p >= f->end || *f->p != ':')
			goto fail;
		f->p++;
		skip_ws(f);
		/* The key may sit in stack: values decode into their own.
		 * Depth 2 is a message's params (or result). */
		if (f->depth == 2 && len == 5 && memcmp(key, "_meta", 5) == 0 &&
		    f->p < f->end && *f->p == '{')
			v = fast_meta(f);
		else
			v = fast_value(f);
		if (v == NULL)
			goto fail;
		/* A duplicate replaces the value and leaves the size:
		 * JSON_REJECT_DUPLICATES makes that jansson's error. */
		size = json_object_size(o);
		if (json_object_setn_new_nocheck(o, key, len, v) != 0 ||
		    json_object_size(o) != size + 1)
			goto fail;
		free(heap);
		heap = NULL;
		if ((more = next_member(f, '}')) <= 0)
			break;
	}
	if (more == 0)
		return o;
fail:
	free(heap);
	json_decref(o);
	return NULL;
}

static json_t *
fast_value(struct fast *f)
{
	json_t *v;

	if (f->p >= f->end)
		return NULL;
	switch (*f->p) {
	case '{':
	case '[':
		if (f->depth >= JSONLOAD_FAST_DEPTH)
			return NULL;
		f->depth++;
		v = *f->p == '{' ? fast_object(f) : fast_array(f);
		f->depth--;
		return v;
	case '"': return fast_string(f);
	case 't': return fast_literal(f, "true", 4, json_true());
	case 'f': return fast_literal(f, "false", 5, json_false());
	case 'n': return fast_literal(f, "null", 4, json_null());
	default:
		if (*f->p == '-' || (*f->p >= '0' && *f->p <= '9'))
			return fast_number(f);
		return NULL;
	}
}

json_t *
jsonload_fast(const char *s, size_t n)
{
	struct fast f = {(const unsigned char *)s, (const unsigned char *)s + n,
			 0};
	json_t *v;

	skip_ws(&f);
	if ((v = fast_value(&f)) == NULL)
		return NULL;
	skip_ws(&f);
	if (f.p != f.end) {
		json_decref(v);
		return NULL;
	}
	return v;
}

json_t *
jsonload(const char *s, size_t n, json_error_t *err)
{
	json_t *v = jsonload_fast(s, n);

	if (v != NULL)
		return v;
	return json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, err);
}

/*
 * jsonschema.c - compiles a JSON Schema (2020-12 subset, draft-07 accepted)
 * into a tree of C nodes, then validates jansson values against it and
 * fills in defaults.  The tree is immutable after compile, hence shareable.
 */
#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema.h"

/* Subschemas per schema: tool schemas have tens; this stops a hostile or
 * broken file from costing unbounded memory. */
#define MAX_NODES 10000
/* Longest chain of $ref/allOf/anyOf/oneOf/not at one instance location. */
#define MAX_CHAIN 128
/* Validator recursion (chains x instance depth) and total work: keep a
 * worker's stack and CPU bounded on anyOf/oneOf blow-ups. */
#define MAX_CALLS 1024
#define MAX_STEPS 2000000UL
/* Pattern source length, translated length, and regcomp expansion cost
 * (glibc copies the tree for each counted repetition). */
#define PATTERN_MAX  4096
#define RX_OUT_MAX   65536
#define RX_COST_MAX  100000ULL
#define RECEIVED_MAX 60

enum {
	T_NULL = 1,
	T_BOOL = 2,
	T_OBJ = 4,
	T_ARR = 8,
	T_NUM = 16,
	T_INT = 32,
	T_STR = 64,
};
static const char *const type_names[] = {"null",   "boolean", "object", "array",
					 "number", "integer", "string"};
static const char *const type_nouns[] = {"null",     "a boolean", "an object",
					 "an array", "a number",  "an integer",
					 "a string"};

enum {
	HAS_MIN = 1 << 0,
	HAS_MAX = 1 << 1,
	HAS_XMIN = 1 << 2,
	HAS_XMAX = 1 << 3,
	HAS_MULT = 1 << 4,
	HAS_MINLEN = 1 << 5,
	HAS_MAXLEN = 1 << 6,
	HAS_MINITEMS = 1 << 7,
	HAS_MAXITEMS = 1 << 8,
	HAS_UNIQUE = 1 << 9,
	HAS_ADDL_FALSE = 1 << 10,
	NEVER = 1 << 11, /* the schema "false" */
};
#define NUM_FLAGS (HAS_MIN | HAS_MAX | HAS_XMIN | HAS_XMAX | HAS_MULT)

enum {
	FMT_NONE,
	FMT_DATE_TIME,
	FMT_DATE
};

struct num {
	bool is_int;
	json_int_t i;
	double d;
};

struct prop {
	char *name;
	struct node *schema;
};

struct node_list {
	struct node **v;
	size_t n;
};

struct node {
	const json_t *src; /* compile time only: locates $ref targets */
	struct node *next; /* every node, for free and loop checks */
	unsigned flags;
	unsigned types; /* 0: any */
	int format;
	int mark; /* loop check colour */
	json_t *konst, *enm, *dflt;
	struct num min, max, xmin, xmax, mult;
	size_t minlen, maxlen, minitems, maxitems;
	regex_t *re;
	char *pattern;
	struct node *items, *addl, *not_, *ref;
	struct prop *props;
	size_t nprops;
	json_t *propset; /* names of props, for additionalProperties */
	char **required;
	size_t nrequired;
	struct node_list all_of, any_of, one_of;
	char *ref_str, *ref_at; /* the $ref and where it is, for messages */
};

struct jsonschema {
	struct node *root;
	struct node *all;
	size_t nnodes;
};

/* ---- bounded string building ------------------------------------------- */

struct sb {
	char *p;
	size_t cap, len;
	bool trunc;
};

static void
sb_init(struct sb *b, char *p, size_t cap)
{
	b->p = p;
	b->cap = cap;
	b->len = 0;
	b->trunc = false;
	p[0] = '\0';
}

static void
sb_add(struct sb *b, const char *s, size_t n)
{
	size_t room = b->cap - 1 - b->len;

	if (n > room) {
		n = room;
		b->trunc = true;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_str(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

PRINTF_LIKE(2, 3)
static void
sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		b->trunc = true;
		n = (int)(b->cap - 1 - b->len);
	}
	b->len += (size_t)n;
}

/* Cuts to at most max bytes on a UTF-8 boundary, ending in "..." when
 * anything was lost. */
static void
sb_finish_max(struct sb *b, size_t max)
{
	if (max > b->cap - 1)
		max = b->cap - 1;
	if (b->len > max)
		b->trunc = true;
	if (!b->trunc)
		return;
	if (b->len > max - 3)
		b->len = max - 3;
	while (b->len > 0 && ((unsigned char)b->p[b->len] & 0xC0) == 0x80)
		b->len--;
	memcpy(b->p + b->len, "...", 4);
	b->len += 3;
}

static void
sb_finish(struct sb *b)
{
	sb_finish_max(b, b->cap - 1);
}

static int
dump_cb(const char *buf, size_t size, void *data)
{
	struct sb *b = data;

	sb_add(b, buf, size);
	return b->trunc ? -1 : 0; /* stop walking a huge value early */
}

/* Appends v as compact JSON, at most max bytes ("..." when cut). */
static void
sb_json(struct sb *b, const json_t *v, size_t max)
{
	char tmp[RECEIVED_MAX * 2 + 8];
	struct sb t;

	if (max > sizeof(tmp) - 1)
		max = sizeof(tmp) - 1;
	sb_init(&t, tmp, max + 2);
	(void)json_dump_callback(v, dump_cb, &t,
				 JSON_ENCODE_ANY | JSON_COMPACT |
					 JSON_REAL_PRECISION(15));
	sb_finish_max(&t, max);
	sb_add(b, t.p, t.len);
}

static void
sb_quoted(struct sb *b, const char *s)
{
	json_t *k = json_string(s);

	if (k != NULL)
		sb_json(b, k, RECEIVED_MAX);
	else
		sb_str(b, s);
	json_decref(k);
}

static void
sb_num(struct sb *b, const struct num *n)
{
	if (n->is_int)
		sb_printf(b, "%" JSON_INTEGER_FORMAT, n->i);
	else
		sb_printf(b, "%.15g", n->d);
}

static void
sb_types(struct sb *b, unsigned types)
{
	unsigned left = types;

	if ((types & T_NUM) && (types & T_INT))
		left &= ~(unsigned)T_INT;
	for (int i = 0; i < 7; i++) {
		if (!(left & (1u << i)))
			continue;
		left &= ~(1u << i);
		if (b->len > 0 && left == 0)
			sb_str(b, " or ");
		else if (b->len > 0)
			sb_str(b, ", ");
		sb_str(b, type_nouns[i]);
	}
}

/* ---- JSON helpers ------------------------------------------------------ */

static bool
is_integral(const json_t *v)
{
	double d;

	if (json_is_integer(v))
		return true;
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	return isfinite(d) && d == floor(d);
}

/* Equality where numbers compare by value (1 == 1.0), as enum and const
 * require.  Bounded by the shallower of the two values. */
static bool
same_value(const json_t *a, const json_t *b)
{
	size_t i;
	const char *k;
	json_t *v;

	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b),
			      json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (i = 0; i < json_array_size(a); i++)
			if (!same_value(json_array_get(a, i),
					json_array_get(b, i)))
				return false;
		return true;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v)
		{
			const json_t *w = json_object_get(b, k);

			if (w == NULL || !same_value(v, w))
				return false;
		}
		return true;
	default: return true;
	}
}

static int
num_cmp(const json_t *v, const struct num *n)
{
	double d;

	if (json_is_integer(v) && n->is_int) {
		json_int_t i = json_integer_value(v);

		return i < n->i ? -1 : i > n->i;
	}
	d = json_number_value(v);
	return d < n->d ? -1 : d > n->d;
}

static bool
num_multiple(const json_t *v, const struct num *m)
{
	double q;

	if (json_is_integer(v) && m->is_int)
		return json_integer_value(v) % m->i == 0;
	q = json_number_value(v) / m->d;
	if (!isfinite(q))
		return false;
	return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

static size_t
utf8_len(const char *s, size_t n)
{
	size_t cps = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			cps++;
	return cps;
}

/* ---- RFC 3339 (section 5.6) dates -------------------------------------- */

static bool
digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static bool
full_date(const char *s)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	int y, m, d, max;

	if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &m) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || m < 1 || m > 12 || d < 1)
		return false;
	max = mdays[m - 1];
	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		max = 29;
	return d <= max;
}

static bool
date_time(const char *s, size_t len)
{
	int h, mi, se;
	size_t i = 19;

	if (len < 20 || !full_date(s) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) ||
	    s[16] != ':' || !digits(s + 17, 2, &se) || h > 23 || mi > 59 ||
	    se > 60)
		return false;
	if (s[i] == '.') {
		size_t start = ++i;

		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == start)
			return false;
	}
	if (i == len - 1)
		return s[i] == 'Z' || s[i] == 'z';
	return i + 6 == len && (s[i] == '+' || s[i] == '-') &&
	       digits(s + i + 1, 2, &h) && s[i + 3] == ':' &&
	       digits(s + i + 4, 2, &mi) && h <= 23 && mi <= 59;
}

/* ---- ECMA-262 pattern to POSIX ERE ------------------------------------- */

struct rx {
	const char *s;
	size_t len, i;
	char *out;
	size_t olen, ocap;
	char *why;
	size_t whylen;
	/* expansion cost per open group: total and last atom */
	unsigned long long sum[JSONSCHEMA_MAX_DEPTH + 1];
	unsigned long long last[JSONSCHEMA_MAX_DEPTH + 1];
	int top;
};

PRINTF_LIKE(3, 4)
static int
rx_fail(struct rx *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, r->whylen, fmt, ap);
	va_end(ap);
	return rc;
}

static int
rx_put(struct rx *r, const char *s, size_t n)
{
	if (r->olen + n + 1 > r->ocap) {
		size_t cap = r->ocap ? r->ocap * 2 : 256;
		char *p;

		while (cap < r->olen + n + 1)
			cap *= 2;
		if (cap > RX_OUT_MAX)
			return rx_fail(r, STATUS_LIMIT, "pattern is too long");
		p = realloc(r->out, cap);
		if (p == NULL)
			return STATUS_NOMEM;
		r->out = p;
		r->ocap = cap;
	}
	memcpy(r->out + r->olen, s, n);
	r->olen += n;
	r->out[r->olen] = '\0';
	return STATUS_OK;
}

static int
rx_atom(struct rx *r, unsigned long long size)
{
	r->sum[r->top] += size;
	r->last[r->top] = size;
	if (r->sum[r->top] > RX_COST_MAX)
		return rx_fail(r, STATUS_LIMIT,
			       "pattern is too complex (nested counted "
			       "repetitions)");
	return STATUS_OK;
}

static int
rx_hex(struct rx *r, size_t n, unsigned *cp)
{
	unsigned v = 0;

	for (size_t k = 0; k < n; k++) {
		char c = r->i + k < r->len ? r->s[r->i + k] : '\0';

		if (!isxdigit((unsigned char)c))
			return rx_fail(r, STATUS_INVALID,
				       "bad hexadecimal escape");
		v = v * 16 + (unsigned)(isdigit((unsigned char)c)
						? c - '0'
						: (tolower((unsigned char)c) -
						   'a' + 10));
	}
	r->i += n;
	*cp = v;
	return STATUS_OK;
}

/*
 * Reads one escape after '\' (r->i points past it) that stands for a
 * single character: *cp.  Class escapes (\d ...) return *cls instead.
 */
static int
rx_escape(struct rx *r, unsigned *cp, char *cls)
{
	char e = r->s[r->i++];

	*cls = '\0';
	switch (e) {
	case 'd':
	case 'D':
	case 'w':
	case 'W':
	case 's':
	case 'S': *cls = e; return STATUS_OK;
	case 'n': *cp = '\n'; return STATUS_OK;
	case 't': *cp = '\t'; return STATUS_OK;
	case 'r': *cp = '\r'; return STATUS_OK;
	case 'f': *cp = '\f'; return STATUS_OK;
	case 'v': *cp = '\v'; return STATUS_OK;
	case 'x': return rx_hex(r, 2, cp);
	case 'u':
		if (rx_hex(r, 4, cp) != STATUS_OK)
			return STATUS_INVALID;
		if (*cp >= 0xD800 && *cp <= 0xDFFF)
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "surrogate escapes are not supported");
		return STATUS_OK;
	case 'k':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "backreferences are not supported");
	case 'p':
	case 'P':
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "Unicode property escapes (\\p{...}) are not "
			       "supported");
	default:
		if (e != '\0' && (unsigned char)e < 0x80 &&
		    ispunct((unsigned char)e)) {
			*cp = (unsigned char)e;
			return STATUS_OK;
		}
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "the escape \\%c is not supported", e);
	}
}

static void
set_add(unsigned char *set, unsigned lo, unsigned hi)
{
	for (unsigned c = lo; c <= hi && c < 128; c++)
		set[c / 8] |= (unsigned char)(1u << (c % 8));
}

static bool
set_has(const unsigned char *set, unsigned c)
{
	return set[c / 8] & (1u << (c % 8));
}

static void
set_class(unsigned char *set, char cls)
{
	switch (tolower((unsigned char)cls)) {
	case 'd': set_add(set, '0', '9'); break;
	case 'w':
		set_add(set, '0', '9');
		set_add(set, 'A', 'Z');
		set_add(set, 'a', 'z');
		set_add(set, '_', '_');
		break;
	default: set_add(set, '\t', '\r'); set_add(set, ' ', ' ');
	}
}

/* Emits an ASCII set as a POSIX bracket expression: ']' first, '[' and
 * '^' late, '-' last, so none of them is read as syntax. */
static int
rx_emit_set(struct rx *r, const unsigned char *set, bool neg)
{
	char buf[400];
	size_t n = 0;
	bool any = false;

	buf[n++] = '[';
	if (neg)
		buf[n++] = '^';
	if (set_has(set, ']'))
		buf[n++] = ']';
	for (unsigned c = 1; c < 128; c++) {
		unsigned hi = c;

		if (!set_has(set, c) || strchr("[]^-", (int)c))
			continue;
		while (hi + 1 < 128 && set_has(set, hi + 1) &&
		       !strchr("[]^-", (int)(hi + 1)))
			hi++;
		buf[n++] = (char)c;
		if (hi >= c + 2)
			buf[n++] = '-';
		if (hi > c)
			buf[n++] = (char)hi;
		c = hi;
	}
	if (set_has(set, '['))
		buf[n++] = '[';
	any = n > (neg ? 2u : 1u);
	if (set_has(set, '^')) {
		if (!any && !neg) /* "[^]" would be a negation */
			return set_has(set, '-') ? rx_put(r, "[-^]", 4)
						 : rx_put(r, "\\^", 2);
		buf[n++] = '^';
	}
	if (set_has(set, '-'))
		buf[n++] = '-';
	if (n == (neg ? 2u : 1u))
		return neg ? rx_put(r, ".", 1)
			   : rx_fail(r, STATUS_UNSUPPORTED,
				     "an empty character class is not "
				     "supported");
	buf[n++] = ']';
	return rx_put(r, buf, n);
}

/* One class member: a character (*cp) or a class escape (*cls). */
static int
rx_class_atom(struct rx *r, unsigned *cp, char *cls)
{
	unsigned char c = (unsigned char)r->s[r->i];
	int rc;

	*cls = '\0';
	if (c >= 0x80)
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "non-ASCII characters inside [...] are not "
			       "supported");
	r->i++;
	if (c != '\\') {
		*cp = c;
		return STATUS_OK;
	}
	if (r->i >= r->len)
		return rx_fail(r, STATUS_INVALID, "unterminated [...]");
	if (r->s[r->i] == 'b') {
		r->i++;
		*cp = '\b';
		return STATUS_OK;
	}
	rc = rx_escape(r, cp, cls);
	if (rc == STATUS_OK && *cls == '\0' && *cp >= 0x80)
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "non-ASCII characters inside [...] are not "
			       "supported");
	if (rc == STATUS_OK && *cls != '\0' && isupper((unsigned char)*cls))
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "\\%c inside [...] is not supported", *cls);
	return rc;
}

static int
rx_class(struct rx *r)
{
	unsigned char set[16] = {0};
	bool neg = false;
	unsigned lo, hi;
	char cls;
	int rc;

	if (r->i < r->len && r->s[r->i] == '^') {
		neg = true;
		r->i++;
	}
	for (;;) {
		if (r->i >= r->len)
			return rx_fail(r, STATUS_INVALID, "unterminated [...]");
		if (r->s[r->i] == ']') {
			r->i++;
			break;
		}
		if ((rc = rx_class_atom(r, &lo, &cls)) != STATUS_OK)
			return rc;
		if (cls != '\0') {
			set_class(set, cls);
			continue;
		}
		if (r->i + 1 < r->len && r->s[r->i] == '-' &&
		    r->s[r->i + 1] != ']') {
			r->i++;
			if ((rc = rx_class_atom(r, &hi, &cls)) != STATUS_OK)
				return rc;
			if (cls != '\0' || hi < lo)
				return rx_fail(r, STATUS_INVALID,
					       "bad range inside [...]");
			set_add(set, lo, hi);
		} else {
			set_add(set, lo, lo);
		}
	}
	set[0] &= (unsigned char)~1u; /* NUL cannot be written in a regex */
	return rx_emit_set(r, set, neg);
}

/* Emits code point cp as a literal; multi-byte ones as a group so a
 * following quantifier applies to the whole character. */
static int
rx_literal(struct rx *r, unsigned cp)
{
	char b[8];
	size_t n = 0;

	if (cp == 0)
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "NUL in a pattern is not supported");
	if (cp < 0x80) {
		if (strchr(".[]()*+?{}|^$\\", (int)cp))
			b[n++] = '\\';
		b[n++] = (char)cp;
		return rx_put(r, b, n);
	}
	b[n++] = '(';
	if (cp < 0x800) {
		b[n++] = (char)(0xC0 | cp >> 6);
	} else {
		if (cp < 0x10000) {
			b[n++] = (char)(0xE0 | cp >> 12);
		} else {
			b[n++] = (char)(0xF0 | cp >> 18);
			b[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
		}
		b[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
	}
	b[n++] = (char)(0x80 | (cp & 0x3F));
	b[n++] = ')';
	return rx_put(r, b, n);
}

/* {n}, {n,}, {n,m}: returns true and the bound that drives the cost. */
static bool
rx_braces(struct rx *r, unsigned long *lo, unsigned long *hi, bool *open,
	  size_t *end)
{
	const char *s = r->s + r->i + 1, *lim = r->s + r->len;
	const char *p = s;
	char *e;

	if (p >= lim || !isdigit((unsigned char)*p))
		return false;
	*lo = strtoul(p, &e, 10);
	p = e;
	*open = false;
	*hi = *lo;
	if (p < lim && *p == ',') {
		p++;
		if (p < lim && isdigit((unsigned char)*p)) {
			*hi = strtoul(p, &e, 10);
			p = e;
		} else {
			*open = true;
		}
	}
	if (p >= lim || *p != '}')
		return false;
	*end = (size_t)(p + 1 - r->s);
	return true;
}

static int
rx_quant(struct rx *r, unsigned long long factor)
{
	unsigned long long last = r->last[r->top];

	if (factor > RX_COST_MAX || last * factor > RX_COST_MAX)
		return rx_fail(r, STATUS_LIMIT,
			       "pattern is too complex (counted repetition "
			       "too large)");
	r->sum[r->top] += last * (factor ? factor - 1 : 0);
	r->last[r->top] = last * factor;
	if (r->i < r->len && r->s[r->i] == '?')
		r->i++; /* lazy: same verdict when only matching */
	return r->sum[r->top] > RX_COST_MAX ? rx_atom(r, 0) : STATUS_OK;
}

static int
rx_group_open(struct rx *r)
{
	const char *s = r->s + r->i;
	size_t left = r->len - r->i;

	if (left >= 1 && s[0] == '?') {
		if (left >= 2 && s[1] == ':')
			r->i += 2;
		else if (left >= 2 && (s[1] == '=' || s[1] == '!'))
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "lookahead (?= (?! is not supported");
		else if (left >= 3 && s[1] == '<' &&
			 (s[2] == '=' || s[2] == '!'))
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "lookbehind (?<= (?<! is not supported");
		else if (left >= 2 && s[1] == '<' && memchr(s, '>', left))
			r->i += (size_t)((const char *)memchr(s, '>', left) -
					 s) +
				1;
		else
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "this (?...) group is not supported");
	}
	if (r->top >= JSONSCHEMA_MAX_DEPTH)
		return rx_fail(r, STATUS_LIMIT, "too many nested groups");
	r->top++;
	r->sum[r->top] = 0;
	r->last[r->top] = 0;
	return rx_put(r, "(", 1);
}

static int
rx_translate(struct rx *r)
{
	static const char *const cls_re[] = {"d[0-9]",	      "D[^0-9]",
					     "w[0-9A-Z_a-z]", "W[^0-9A-Z_a-z]",
					     "s[\t-\r ]",     "S[^\t-\r ]"};
	unsigned long lo, hi;
	unsigned cp;
	size_t end;
	bool open;
	char cls;
	int rc = STATUS_OK;

	while (rc == STATUS_OK && r->i < r->len) {
		unsigned char c = (unsigned char)r->s[r->i++];

		switch (c) {
		case '\\':
			if (r->i >= r->len)
				return rx_fail(r, STATUS_INVALID,
					       "pattern ends in a backslash");
			if (r->s[r->i] == 'b' || r->s[r->i] == 'B') {
				rc = rx_put(r, r->s + r->i - 1, 2);
				r->i++;
				break;
			}
			if ((rc = rx_escape(r, &cp, &cls)) != STATUS_OK)
				break;
			if (cls != '\0') {
				for (size_t k = 0; k < 6; k++)
					if (cls_re[k][0] == cls)
						rc = rx_put(r, cls_re[k] + 1,
							    strlen(cls_re[k]) -
								    1);
			} else {
				rc = rx_literal(r, cp);
			}
			if (rc == STATUS_OK)
				rc = rx_atom(r, 1);
			break;
		case '[':
			if ((rc = rx_class(r)) == STATUS_OK)
				rc = rx_atom(r, 1);
			break;
		case '(': rc = rx_group_open(r); break;
		case ')':
			if (r->top == 0)
				return rx_fail(r, STATUS_INVALID,
					       "unbalanced parenthesis");
			r->top--;
			if ((rc = rx_put(r, ")", 1)) == STATUS_OK)
				rc = rx_atom(r, r->sum[r->top + 1] + 1);
			break;
		case '*':
		case '+':
		case '?':
			if ((rc = rx_put(r, (const char *)&c, 1)) == STATUS_OK)
				rc = rx_quant(r, c == '+' ? 2 : 1);
			break;
		case '{':
			if (!rx_braces(r, &lo, &hi, &open, &end)) {
				if ((rc = rx_put(r, "\\{", 2)) == STATUS_OK)
					rc = rx_atom(r, 1);
				break;
			}
			if (hi < lo || lo > 1000 || hi > 1000)
				return rx_fail(r, STATUS_LIMIT,
					       "repetition counts above 1000 "
					       "are not supported");
			rc = rx_put(r, r->s + r->i - 1, end - r->i + 1);
			r->i = end;
			if (rc == STATUS_OK)
				rc = rx_quant(r, open ? lo + 1 : hi);
			break;
		case '}':
		case ']':
			if ((rc = rx_literal(r, c)) == STATUS_OK)
				rc = rx_atom(r, 1);
			break;
		case '^':
		case '$':
		case '|': rc = rx_put(r, (const char *)&c, 1); break;
		default:
			if (c < 0x80) {
				rc = c == '.' ? rx_put(r, ".", 1)
					      : rx_literal(r, c);
			} else {
				size_t n = 1;

				while (r->i < r->len &&
				       ((unsigned char)r->s[r->i] & 0xC0) ==
					       0x80) {
					r->i++;
					n++;
				}
				if ((rc = rx_put(r, "(", 1)) == STATUS_OK &&
				    (rc = rx_put(r, r->s + r->i - n, n)) ==
					    STATUS_OK)
					rc = rx_put(r, ")", 1);
			}
			if (rc == STATUS_OK)
				rc = rx_atom(r, 1);
		}
	}
	if (rc == STATUS_OK && r->top != 0)
		return rx_fail(r, STATUS_INVALID, "unbalanced parenthesis");
	return rc;
}

/* ---- compile ----------------------------------------------------------- */

struct cctx {
	struct jsonschema *s;
	const json_t *root;
	char *err;
	size_t errlen;
	char ptr[512]; /* JSON pointer of the schema being compiled */
	size_t plen;
	bool draft7;
	int depth;
};

PRINTF_LIKE(3, 4)
static int
cfail(struct cctx *c, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->err == NULL || c->errlen == 0)
		return rc;
	n = snprintf(c->err, c->errlen, "%s: ", c->ptr);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The offending JSON value for compile messages. */
static const char *
shown(const json_t *v, char *buf, size_t len)
{
	struct sb b;

	sb_init(&b, buf, len);
	sb_json(&b, v, len - 1);
	return buf;
}

#define SHOW(v) shown((v), (char[RECEIVED_MAX + 8]){0}, RECEIVED_MAX + 8)

/* Appends "/key" (RFC 6901 escaped) to the pointer; returns the old
 * length for ptr_pop. */
static size_t
ptr_push(struct cctx *c, const char *key)
{
	size_t old = c->plen;
	struct sb b = {c->ptr, sizeof(c->ptr), c->plen, false};

	sb_str(&b, "/");
	for (; *key && !b.trunc; key++) {
		if (*key == '~' || *key == '/')
			sb_str(&b, *key == '~' ? "~0" : "~1");
		else
			sb_add(&b, key, 1);
	}
	c->plen = b.len;
	return old;
}

static void
ptr_pop(struct cctx *c, size_t old)
{
	c->plen = old;
	c->ptr[old] = '\0';
}

static int compile_node(struct cctx *c, const json_t *j, struct node **out);

static int
compile_sub(struct cctx *c, const json_t *j, const char *k1, const char *k2,
	    struct node **out)
{
	size_t old = ptr_push(c, k1);
	int rc;

	if (k2 != NULL)
		ptr_push(c, k2);
	rc = compile_node(c, j, out);
	if (rc == STATUS_OK)
		ptr_pop(c, old);
	return rc;
}

static int
get_count(struct cctx *c, const json_t *j, const char *k, size_t *out,
	  unsigned *flags, unsigned flag)
{
	const json_t *v = json_object_get(j, k);

	if (v == NULL)
		return STATUS_OK;
	if (!is_integral(v) || json_number_value(v) < 0)
		return cfail(c, STATUS_INVALID,
			     "\"%s\" must be a non-negative integer, got %s", k,
			     SHOW(v));
	*out = json_number_value(v) > (double)SIZE_MAX / 2
		       ? SIZE_MAX / 2
		       : (size_t)json_number_value(v);
	*flags |= flag;
	return STATUS_OK;
}

static int
get_num(struct cctx *c, const json_t *j, const char *k, struct num *out,
	unsigned *flags, unsigned flag)
{
	const json_t *v = json_object_get(j, k);

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_number(v))
		return cfail(c, STATUS_INVALID,
			     "\"%s\" must be a number, got %s", k, SHOW(v));
	out->is_int = json_is_integer(v);
	out->i = out->is_int ? json_integer_value(v) : 0;
	out->d = json_number_value(v);
	*flags |= flag;
	return STATUS_OK;
}

static int
compile_list(struct cctx *c, const json_t *j, const char *k,
	     struct node_list *l)
{
	const json_t *v = json_object_get(j, k);
	char idx[24];
	int rc;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return cfail(c, STATUS_INVALID,
			     "\"%s\" must be a non-empty array of schemas, got "
			     "%s",
			     k, SHOW(v));
	l->v = calloc(json_array_size(v), sizeof(*l->v));
	if (l->v == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < json_array_size(v); i++) {
		snprintf(idx, sizeof(idx), "%zu", i);
		rc = compile_sub(c, json_array_get(v, i), k, idx, &l->v[i]);
		if (rc != STATUS_OK)
			return rc;
		l->n++;
	}
	return STATUS_OK;
}

static int
compile_types(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v = json_object_get(j, "type"), *t;
	size_t i, k;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_string(v) && !(json_is_array(v) && json_array_size(v) > 0))
		goto bad;
	for (i = 0; i < (json_is_array(v) ? json_array_size(v) : 1); i++) {
		t = json_is_array(v) ? json_array_get(v, i) : v;
		for (k = 0; k < 7 && json_is_string(t); k++)
			if (strcmp(json_string_value(t), type_names[k]) == 0)
				break;
		if (k == 7 || !json_is_string(t))
			goto bad;
		n->types |= 1u << k;
	}
	return STATUS_OK;
bad:
	return cfail(c, STATUS_INVALID,
		     "\"type\" must be one of \"null\", \"boolean\", "
		     "\"object\", \"array\", \"number\", \"integer\", "
		     "\"string\" or an array of them, got %s",
		     SHOW(v));
}

static int
compile_pattern(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v = json_object_get(j, "pattern");
	struct rx *r = NULL;
	char why[160] = "";
	int rc;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_string(v))
		return cfail(c, STATUS_INVALID,
			     "\"pattern\" must be a string, got %s", SHOW(v));
	if (json_string_length(v) > PATTERN_MAX)
		return cfail(c, STATUS_LIMIT,
			     "\"pattern\" is longer than %d bytes",
			     PATTERN_MAX);
	n->pattern = strdup(json_string_value(v));
	r = calloc(1, sizeof(*r));
	n->re = calloc(1, sizeof(*n->re));
	if (n->pattern == NULL || r == NULL || n->re == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	r->s = json_string_value(v);
	r->len = json_string_length(v);
	r->why = why;
	r->whylen = sizeof(why);
	rc = rx_translate(r);
	if (rc == STATUS_OK && r->out == NULL)
		rc = rx_put(r, "", 0);
	if (rc == STATUS_OK) {
		int e = regcomp(n->re, r->out, REG_EXTENDED | REG_NOSUB);

		if (e != 0) {
			regerror(e, n->re, why, sizeof(why));
			free(n->re); /* nothing to regfree after failure */
			n->re = NULL;
			rc = e == REG_ESPACE ? STATUS_NOMEM : STATUS_INVALID;
		}
	} else {
		free(n->re);
		n->re = NULL;
	}
	if (rc != STATUS_OK && rc != STATUS_NOMEM)
		rc = cfail(c, rc, "\"pattern\" %s: %s", SHOW(v), why);
out:
	if (r != NULL)
		free(r->out);
	free(r);
	return rc;
}

static int
compile_props(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v = json_object_get(j, "properties"), *sub;
	const char *k;
	int rc;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_object(v))
		return cfail(c, STATUS_INVALID,
			     "\"properties\" must be an object, got %s",
			     SHOW(v));
	n->props = calloc(json_object_size(v) + 1, sizeof(*n->props));
	n->propset = json_object();
	if (n->props == NULL || n->propset == NULL)
		return STATUS_NOMEM;
	json_object_foreach((json_t *)v, k, sub)
	{
		struct prop *p = &n->props[n->nprops];

		p->name = strdup(k);
		if (p->name == NULL ||
		    json_object_set_new(n->propset, k, json_null()) != 0)
			return STATUS_NOMEM;
		n->nprops++;
		rc = compile_sub(c, sub, "properties", k, &p->schema);
		if (rc != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

static int
compile_required(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v = json_object_get(j, "required");
	size_t i;

	if (v == NULL)
		return STATUS_OK;
	for (i = 0; json_is_array(v) && i < json_array_size(v); i++)
		if (!json_is_string(json_array_get(v, i)))
			break;
	if (!json_is_array(v) || i < json_array_size(v))
		return cfail(c, STATUS_INVALID,
			     "\"required\" must be an array of strings, got %s",
			     SHOW(v));
	n->required = calloc(i + 1, sizeof(*n->required));
	if (n->required == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < json_array_size(v); i++) {
		n->required[i] =
			strdup(json_string_value(json_array_get(v, i)));
		if (n->required[i] == NULL)
			return STATUS_NOMEM;
		n->nrequired++;
	}
	return STATUS_OK;
}

static int
compile_defs(struct cctx *c, const json_t *j, const char *k)
{
	const json_t *v = json_object_get(j, k), *sub;
	const char *name;
	struct node *unused;
	int rc;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_object(v))
		return cfail(c, STATUS_INVALID,
			     "\"%s\" must be an object, got %s", k, SHOW(v));
	json_object_foreach((json_t *)v, name, sub)
	{
		if ((rc = compile_sub(c, sub, k, name, &unused)) != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

static int
compile_schema_uri(struct cctx *c, const json_t *v)
{
	static const char *const ok[] = {
		"https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft-07/schema"};
	size_t len;

	if (v == NULL)
		return STATUS_OK;
	if (!json_is_string(v))
		return cfail(c, STATUS_INVALID,
			     "\"$schema\" must be a string, got %s", SHOW(v));
	len = json_string_length(v);
	if (len > 0 && json_string_value(v)[len - 1] == '#')
		len--;
	for (size_t i = 0; i < 4; i++)
		if (strlen(ok[i]) == len &&
		    memcmp(ok[i], json_string_value(v), len) == 0) {
			if (c->depth == 1)
				c->draft7 = i >= 2;
			return STATUS_OK;
		}
	return cfail(c, STATUS_UNSUPPORTED,
		     "\"$schema\" %s is not supported: use "
		     "\"https://json-schema.org/draft/2020-12/schema\" or "
		     "\"http://json-schema.org/draft-07/schema#\"",
		     SHOW(v));
}

/* Keywords with validation meaning that this subset does not implement:
 * refused, since ignoring them would accept what the author meant to
 * reject. */
static const char *const unsupported_kw[] = {"prefixItems",
					     "contains",
					     "minContains",
					     "maxContains",
					     "additionalItems",
					     "unevaluatedItems",
					     "unevaluatedProperties",
					     "patternProperties",
					     "propertyNames",
					     "minProperties",
					     "maxProperties",
					     "dependentRequired",
					     "dependentSchemas",
					     "dependencies",
					     "if",
					     "then",
					     "else",
					     "$dynamicRef",
					     "$recursiveRef",
					     "$dynamicAnchor",
					     "$recursiveAnchor"};

static int
compile_keywords(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v;
	const char *k;
	int rc;

	json_object_foreach((json_t *)j, k, v)
	{
		for (size_t i = 0;
		     i < sizeof(unsupported_kw) / sizeof(unsupported_kw[0]);
		     i++)
			if (strcmp(k, unsupported_kw[i]) == 0)
				return cfail(c, STATUS_UNSUPPORTED,
					     "keyword \"%s\" is not supported "
					     "by this server",
					     k);
	}
	if ((rc = compile_types(c, j, n)) != STATUS_OK)
		return rc;
	if ((v = json_object_get(j, "enum")) != NULL) {
		if (!json_is_array(v))
			return cfail(c, STATUS_INVALID,
				     "\"enum\" must be an array, got %s",
				     SHOW(v));
		if ((n->enm = json_deep_copy(v)) == NULL)
			return STATUS_NOMEM;
	}
	if ((v = json_object_get(j, "const")) != NULL &&
	    (n->konst = json_deep_copy(v)) == NULL)
		return STATUS_NOMEM;
	if ((v = json_object_get(j, "default")) != NULL &&
	    (n->dflt = json_deep_copy(v)) == NULL)
		return STATUS_NOMEM;
	if ((rc = get_num(c, j, "minimum", &n->min, &n->flags, HAS_MIN)) ||
	    (rc = get_num(c, j, "maximum", &n->max, &n->flags, HAS_MAX)) ||
	    (rc = get_num(c, j, "exclusiveMinimum", &n->xmin, &n->flags,
			  HAS_XMIN)) ||
	    (rc = get_num(c, j, "exclusiveMaximum", &n->xmax, &n->flags,
			  HAS_XMAX)) ||
	    (rc = get_num(c, j, "multipleOf", &n->mult, &n->flags, HAS_MULT)) ||
	    (rc = get_count(c, j, "minLength", &n->minlen, &n->flags,
			    HAS_MINLEN)) ||
	    (rc = get_count(c, j, "maxLength", &n->maxlen, &n->flags,
			    HAS_MAXLEN)) ||
	    (rc = get_count(c, j, "minItems", &n->minitems, &n->flags,
			    HAS_MINITEMS)) ||
	    (rc = get_count(c, j, "maxItems", &n->maxitems, &n->flags,
			    HAS_MAXITEMS)))
		return rc;
	if ((n->flags & HAS_MULT) && n->mult.d <= 0)
		return cfail(c, STATUS_INVALID,
			     "\"multipleOf\" must be greater than 0");
	if ((v = json_object_get(j, "uniqueItems")) != NULL) {
		if (!json_is_boolean(v))
			return cfail(
				c, STATUS_INVALID,
				"\"uniqueItems\" must be a boolean, got %s",
				SHOW(v));
		if (json_is_true(v))
			n->flags |= HAS_UNIQUE;
	}
	if ((v = json_object_get(j, "format")) != NULL) {
		if (!json_is_string(v))
			return cfail(c, STATUS_INVALID,
				     "\"format\" must be a string, got %s",
				     SHOW(v));
		if (strcmp(json_string_value(v), "date-time") == 0)
			n->format = FMT_DATE_TIME;
		else if (strcmp(json_string_value(v), "date") == 0)
			n->format = FMT_DATE;
	}
	if ((rc = compile_pattern(c, j, n)) != STATUS_OK)
		return rc;
	if ((v = json_object_get(j, "items")) != NULL) {
		if (json_is_array(v))
			return cfail(c,
				     c->draft7 ? STATUS_UNSUPPORTED
					       : STATUS_INVALID,
				     "\"items\" as an array (tuples) is not "
				     "supported: use a single schema");
		if ((rc = compile_sub(c, v, "items", NULL, &n->items)))
			return rc;
	}
	if ((rc = compile_props(c, j, n)) != STATUS_OK ||
	    (rc = compile_required(c, j, n)) != STATUS_OK)
		return rc;
	if ((v = json_object_get(j, "additionalProperties")) != NULL) {
		if (json_is_false(v))
			n->flags |= HAS_ADDL_FALSE;
		else if ((rc = compile_sub(c, v, "additionalProperties", NULL,
					   &n->addl)))
			return rc;
	}
	if ((rc = compile_list(c, j, "allOf", &n->all_of)) ||
	    (rc = compile_list(c, j, "anyOf", &n->any_of)) ||
	    (rc = compile_list(c, j, "oneOf", &n->one_of)))
		return rc;
	if ((v = json_object_get(j, "not")) != NULL &&
	    (rc = compile_sub(c, v, "not", NULL, &n->not_)))
		return rc;
	return STATUS_OK;
}

static int
compile_node(struct cctx *c, const json_t *j, struct node **out)
{
	struct node *n;
	const json_t *ref;
	int rc;

	*out = NULL;
	if (c->depth >= JSONSCHEMA_MAX_DEPTH)
		return cfail(c, STATUS_LIMIT,
			     "schema nests deeper than %d levels",
			     JSONSCHEMA_MAX_DEPTH);
	if (c->s->nnodes >= MAX_NODES)
		return cfail(c, STATUS_LIMIT,
			     "schema has more than %d subschemas", MAX_NODES);
	if ((n = calloc(1, sizeof(*n))) == NULL)
		return STATUS_NOMEM;
	n->src = j;
	n->next = c->s->all;
	c->s->all = n;
	c->s->nnodes++;
	*out = n;
	if (json_is_boolean(j)) {
		if (json_is_false(j))
			n->flags |= NEVER;
		return STATUS_OK;
	}
	if (!json_is_object(j))
		return cfail(c, STATUS_INVALID,
			     "a schema must be an object or a boolean, got %s",
			     SHOW(j));
	c->depth++;
	if ((rc = compile_schema_uri(c, json_object_get(j, "$schema"))) ||
	    (rc = compile_defs(c, j, "$defs")) ||
	    (rc = compile_defs(c, j, "definitions")))
		goto out;
	if ((ref = json_object_get(j, "$ref")) != NULL) {
		if (!json_is_string(ref)) {
			rc = cfail(c, STATUS_INVALID,
				   "\"$ref\" must be a string, got %s",
				   SHOW(ref));
			goto out;
		}
		if (json_string_value(ref)[0] != '#' ||
		    (json_string_value(ref)[1] != '\0' &&
		     json_string_value(ref)[1] != '/')) {
			rc = cfail(c, STATUS_UNSUPPORTED,
				   "\"$ref\" %s is not supported: only local "
				   "references (\"#\", \"#/$defs/name\") are",
				   SHOW(ref));
			goto out;
		}
		n->ref_str = strdup(json_string_value(ref));
		n->ref_at = strdup(c->ptr);
		if (n->ref_str == NULL || n->ref_at == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		if (c->draft7) /* draft-07 section 8.3: siblings ignored */
			goto out;
	}
	rc = compile_keywords(c, j, n);
out:
	c->depth--;
	return rc;
}

static int
cmp_src(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)(*(struct node *const *)a)->src;
	uintptr_t y = (uintptr_t)(*(struct node *const *)b)->src;

	return x < y ? -1 : x > y;
}

/* RFC 6901 pointer in a URI fragment (RFC 3986 percent-encoding). */
static const json_t *
ptr_resolve(const json_t *root, const char *ref, char *tok, size_t toklen)
{
	const json_t *v = root;
	const char *p = ref + 1;

	while (*p == '/' && v != NULL) {
		size_t n = 0;
		char *end;

		for (p++; *p && *p != '/'; p++) {
			char ch = *p;

			if (ch == '~' && (p[1] == '0' || p[1] == '1'))
				ch = *++p == '0' ? '~' : '/';
			else if (ch == '%' && isxdigit((unsigned char)p[1]) &&
				 isxdigit((unsigned char)p[2])) {
				char hex[3] = {p[1], p[2], '\0'};

				ch = (char)strtol(hex, NULL, 16);
				p += 2;
			}
			if (n + 1 >= toklen)
				return NULL;
			tok[n++] = ch;
		}
		tok[n] = '\0';
		if (json_is_object(v)) {
			v = json_object_get(v, tok);
		} else if (json_is_array(v) && n > 0 &&
			   isdigit((unsigned char)tok[0])) {
			unsigned long i = strtoul(tok, &end, 10);

			v = *end == '\0' ? json_array_get(v, i) : NULL;
		} else {
			v = NULL;
		}
	}
	return *p == '\0' ? v : NULL;
}

static int
resolve_refs(struct cctx *c)
{
	struct node **idx, *n, key, *kp = &key, **hit;
	char *tok = NULL;
	size_t i = 0;
	int rc = STATUS_OK;

	idx = calloc(c->s->nnodes, sizeof(*idx));
	tok = malloc(PATTERN_MAX);
	if (idx == NULL || tok == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (n = c->s->all; n != NULL; n = n->next)
		idx[i++] = n;
	qsort(idx, i, sizeof(*idx), cmp_src);
	for (n = c->s->all; n != NULL && rc == STATUS_OK; n = n->next) {
		if (n->ref_str == NULL)
			continue;
		key.src = ptr_resolve(c->root, n->ref_str, tok, PATTERN_MAX);
		hit = key.src == NULL
			      ? NULL
			      : bsearch(&kp, idx, i, sizeof(*idx), cmp_src);
		if (hit != NULL) {
			n->ref = *hit;
			continue;
		}
		snprintf(c->ptr, sizeof(c->ptr), "%s", n->ref_at);
		rc = cfail(c, STATUS_INVALID,
			   "\"$ref\" \"%s\" does not point to a schema in "
			   "this document",
			   n->ref_str);
	}
out:
	free(idx);
	free(tok);
	return rc;
}

/* Depth-first search over the edges that stay at one instance location;
 * a cycle there would recurse forever at validation. */
static int
check_loops(struct cctx *c, struct node *n, const struct node *last_ref,
	    int depth)
{
	const struct node_list *lists[] = {&n->all_of, &n->any_of, &n->one_of};
	int rc = STATUS_OK;

	if (n->mark == 2)
		return STATUS_OK;
	if (n->mark == 1 || depth > MAX_CHAIN) {
		snprintf(c->ptr, sizeof(c->ptr), "%s",
			 last_ref ? last_ref->ref_at : "#");
		if (n->mark == 1)
			return cfail(c, STATUS_INVALID,
				     "\"$ref\" \"%s\" loops back without "
				     "descending into a property or item",
				     last_ref ? last_ref->ref_str : "#");
		return cfail(c, STATUS_LIMIT,
			     "more than %d nested $ref/allOf/anyOf/oneOf/not "
			     "at one place",
			     MAX_CHAIN);
	}
	n->mark = 1;
	if (n->ref != NULL)
		rc = check_loops(c, n->ref, n, depth + 1);
	if (rc == STATUS_OK && n->not_ != NULL)
		rc = check_loops(c, n->not_, last_ref, depth + 1);
	for (size_t l = 0; l < 3 && rc == STATUS_OK; l++)
		for (size_t i = 0; i < lists[l]->n && rc == STATUS_OK; i++)
			rc = check_loops(c, lists[l]->v[i], last_ref,
					 depth + 1);
	n->mark = 2;
	return rc;
}

int
jsonschema_compile(const json_t *schema, struct jsonschema **out, char *err,
		   size_t errlen)
{
	struct cctx c = {.root = schema, .err = err, .errlen = errlen};
	int rc;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	c.ptr[0] = '#';
	c.plen = 1;
	if ((c.s = calloc(1, sizeof(*c.s))) == NULL)
		return STATUS_NOMEM;
	if (json_is_object(schema))
		rc = compile_schema_uri(&c, json_object_get(schema, "$schema"));
	else
		rc = STATUS_OK;
	c.depth = 0;
	if (rc == STATUS_OK)
		rc = compile_node(&c, schema, &c.s->root);
	if (rc == STATUS_OK)
		rc = resolve_refs(&c);
	for (struct node *n = c.s->all; n != NULL && rc == STATUS_OK;
	     n = n->next)
		rc = check_loops(&c, n, NULL, 0);
	if (rc == STATUS_NOMEM && err != NULL && errlen > 0)
		snprintf(err, errlen, "out of memory compiling the schema");
	if (rc != STATUS_OK) {
		jsonschema_free(c.s);
		return rc;
	}
	*out = c.s;
	return STATUS_OK;
}

void
jsonschema_free(struct jsonschema *s)
{
	struct node *n, *next;

	if (s == NULL)
		return;
	for (n = s->all; n != NULL; n = next) {
		next = n->next;
		json_decref(n->konst);
		json_decref(n->enm);
		json_decref(n->dflt);
		json_decref(n->propset);
		if (n->re != NULL)
			regfree(n->re);
		free(n->re);
		free(n->pattern);
		for (size_t i = 0; i < n->nprops; i++)
			free(n->props[i].name);
		free(n->props);
		for (size_t i = 0; i < n->nrequired; i++)
			free(n->required[i]);
		free(n->required);
		free(n->all_of.v);
		free(n->any_of.v);
		free(n->one_of.v);
		free(n->ref_str);
		free(n->ref_at);
		free(n);
	}
	free(s);
}

/* ---- validate ---------------------------------------------------------- */

struct seg {
	const char *key; /* NULL: array index */
	size_t idx;
};

struct vctx {
	struct jsonschema_error *out; /* NULL: verdict only */
	bool quiet;		      /* inside anyOf/oneOf/not */
	struct seg segs[JSONSCHEMA_MAX_DEPTH + 2];
	int nseg;
	int calls;
	unsigned long steps;
};

static bool
plain_key(const char *k)
{
	if (!isalpha((unsigned char)*k) && *k != '_' && *k != '$')
		return false;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && !strchr("_$-", *k))
			return false;
	return true;
}

static void
path_build(const struct vctx *c, struct sb *b)
{
	for (int i = 0; i < c->nseg; i++) {
		const struct seg *s = &c->segs[i];

		if (s->key == NULL) {
			sb_printf(b, "[%zu]", s->idx);
		} else if (plain_key(s->key)) {
			if (i > 0)
				sb_str(b, ".");
			sb_str(b, s->key);
		} else {
			sb_str(b, "[");
			sb_quoted(b, s->key);
			sb_str(b, "]");
		}
	}
	sb_finish(b);
}

/* Starts a report: NULL when no message is wanted.  Sets path and
 * returns the expected buffer for the caller to write into. */
static struct jsonschema_error *
err_begin(struct vctx *c, struct sb *exp)
{
	struct sb p;

	if (c->out == NULL || c->quiet)
		return NULL;
	sb_init(&p, c->out->path, sizeof(c->out->path));
	path_build(c, &p);
	sb_init(exp, c->out->expected, sizeof(c->out->expected));
	c->out->received[0] = '\0';
	return c->out;
}

static void
err_end(struct jsonschema_error *e, struct sb *exp, const json_t *got)
{
	struct sb r, m;

	sb_finish(exp);
	sb_init(&r, e->received, sizeof(e->received));
	if (got != NULL)
		sb_json(&r, got, RECEIVED_MAX);
	sb_init(&m, e->msg, sizeof(e->msg));
	if (e->path[0] != '\0')
		sb_printf(&m, "%s: ", e->path);
	sb_printf(&m, "expected %s, got %s", e->expected, e->received);
	sb_finish(&m);
}

PRINTF_LIKE(3, 4)
static int
fail(struct vctx *c, const json_t *got, const char *fmt, ...)
{
	struct jsonschema_error *e;
	struct sb x;
	va_list ap;
	int n;

	if ((e = err_begin(c, &x)) == NULL)
		return STATUS_INVALID;
	va_start(ap, fmt);
	n = vsnprintf(x.p, x.cap, fmt, ap);
	va_end(ap);
	x.len = n < 0 ? 0 : (size_t)n < x.cap ? (size_t)n : x.cap - 1;
	x.trunc = n >= 0 && (size_t)n >= x.cap;
	err_end(e, &x, got);
	return STATUS_INVALID;
}

static int
fail_limit(struct vctx *c, const char *what)
{
	if (c->out != NULL) {
		memset(c->out, 0, sizeof(*c->out));
		snprintf(c->out->msg, sizeof(c->out->msg), "%s", what);
		snprintf(c->out->expected, sizeof(c->out->expected), "%s",
			 what);
	}
	return STATUS_LIMIT;
}

static int validate(struct vctx *c, const struct node *n, const json_t *v);

static int
push(struct vctx *c, const char *key, size_t idx)
{
	if (c->nseg >= JSONSCHEMA_MAX_DEPTH)
		return fail_limit(c, "the value nests deeper than 64 levels");
	c->segs[c->nseg].key = key;
	c->segs[c->nseg].idx = idx;
	c->nseg++;
	return STATUS_OK;
}

static int
validate_child(struct vctx *c, const struct node *n, const json_t *v,
	       const char *key, size_t idx)
{
	int rc = push(c, key, idx);

	if (rc != STATUS_OK)
		return rc;
	rc = validate(c, n, v);
	c->nseg--;
	return rc;
}

static int
check_number(struct vctx *c, const struct node *n, const json_t *v)
{
	struct jsonschema_error *e;
	struct sb x;
	bool ok;

	ok = (!(n->flags & HAS_MIN) || num_cmp(v, &n->min) >= 0) &&
	     (!(n->flags & HAS_MAX) || num_cmp(v, &n->max) <= 0) &&
	     (!(n->flags & HAS_XMIN) || num_cmp(v, &n->xmin) > 0) &&
	     (!(n->flags & HAS_XMAX) || num_cmp(v, &n->xmax) < 0) &&
	     (!(n->flags & HAS_MULT) || num_multiple(v, &n->mult));
	if (ok)
		return STATUS_OK;
	if ((e = err_begin(c, &x)) == NULL)
		return STATUS_INVALID;
	sb_str(&x, (n->types & (T_INT | T_NUM)) == T_INT ? "an integer"
							 : "a number");
	const char *sep = " ";
	static const struct {
		unsigned flag;
		const char *op;
		size_t off;
	} b[] = {
		{HAS_MIN, ">= ", offsetof(struct node, min)},
		{HAS_XMIN, "> ", offsetof(struct node, xmin)},
		{HAS_MAX, "<= ", offsetof(struct node, max)},
		{HAS_XMAX, "< ", offsetof(struct node, xmax)},
		{HAS_MULT, "that is a multiple of ",
		 offsetof(struct node, mult)},
	};
	for (size_t i = 0; i < 5; i++) {
		if (!(n->flags & b[i].flag))
			continue;
		sb_printf(&x, "%s%s", sep, b[i].op);
		sb_num(&x, (const struct num *)((const char *)n + b[i].off));
		sep = " and ";
	}
	err_end(e, &x, v);
	return STATUS_INVALID;
}

static int
check_string(struct vctx *c, const struct node *n, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v), cps;
	regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)len};

	if (n->flags & (HAS_MINLEN | HAS_MAXLEN)) {
		cps = utf8_len(s, len);
		if ((n->flags & HAS_MINLEN) && (n->flags & HAS_MAXLEN) &&
		    (cps < n->minlen || cps > n->maxlen))
			return fail(c, v, "a string of %zu to %zu characters",
				    n->minlen, n->maxlen);
		if ((n->flags & HAS_MINLEN) && cps < n->minlen)
			return fail(c, v, "a string of at least %zu characters",
				    n->minlen);
		if ((n->flags & HAS_MAXLEN) && cps > n->maxlen)
			return fail(c, v, "a string of at most %zu characters",
				    n->maxlen);
	}
	if (n->re != NULL && regexec(n->re, s, 1, &m, REG_STARTEND) != 0) {
		struct jsonschema_error *e;
		struct sb x;
		json_t *p;

		if ((e = err_begin(c, &x)) == NULL)
			return STATUS_INVALID;
		sb_str(&x, "a string matching the pattern ");
		if ((p = json_string(n->pattern)) != NULL)
			sb_json(&x, p, 120);
		json_decref(p);
		err_end(e, &x, v);
		return STATUS_INVALID;
	}
	if (n->format == FMT_DATE_TIME && !date_time(s, len))
		return fail(c, v,
			    "an RFC 3339 date-time such as "
			    "\"2024-05-01T13:45:00Z\"");
	if (n->format == FMT_DATE && (len != 10 || !full_date(s)))
		return fail(c, v, "an RFC 3339 date such as \"2024-05-01\"");
	return STATUS_OK;
}

static int
check_array(struct vctx *c, const struct node *n, const json_t *v)
{
	size_t len = json_array_size(v);
	int rc;

	if (((n->flags & HAS_MINITEMS) && len < n->minitems) ||
	    ((n->flags & HAS_MAXITEMS) && len > n->maxitems)) {
		if ((n->flags & HAS_MINITEMS) && (n->flags & HAS_MAXITEMS))
			return fail(c, v, "an array of %zu to %zu items",
				    n->minitems, n->maxitems);
		if (n->flags & HAS_MINITEMS)
			return fail(c, v, "an array of at least %zu item%s",
				    n->minitems, n->minitems == 1 ? "" : "s");
		return fail(c, v, "an array of at most %zu item%s", n->maxitems,
			    n->maxitems == 1 ? "" : "s");
	}
	if (n->flags & HAS_UNIQUE) {
		for (size_t i = 1; i < len; i++) {
			c->steps += i;
			if (c->steps > MAX_STEPS)
				return fail_limit(c, "the value is too large "
						     "to validate");
			for (size_t k = 0; k < i; k++)
				if (same_value(json_array_get(v, k),
					       json_array_get(v, i)))
					return fail(c, v,
						    "an array of unique items "
						    "([%zu] and [%zu] are "
						    "equal)",
						    k, i);
		}
	}
	for (size_t i = 0; n->items != NULL && i < len; i++)
		if ((rc = validate_child(c, n->items, json_array_get(v, i),
					 NULL, i)) != STATUS_OK)
			return rc;
	return STATUS_OK;
}

static unsigned
edit_distance(const char *a, const char *b)
{
	unsigned row[33];
	size_t la = strlen(a), lb = strlen(b);

	if (la > 32 || lb > 32)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0], up;

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* Reports a property that is missing (got NULL) or not allowed; path
 * names the property, msg is phrased from the object's side. */
static int
fail_prop(struct vctx *c, const struct node *n, const char *key,
	  const json_t *got)
{
	struct jsonschema_error *e = c->out;
	struct sb p, m, x, r;
	const char *best = NULL;
	unsigned bestd = 3, d;

	if (e == NULL || c->quiet)
		return STATUS_INVALID;
	sb_init(&m, e->msg, sizeof(e->msg));
	path_build(c, &m);
	if (m.len > 0)
		sb_str(&m, ": ");
	c->segs[c->nseg].key = key; /* segs has room past MAX_DEPTH */
	c->nseg++;
	sb_init(&p, e->path, sizeof(e->path));
	path_build(c, &p);
	c->nseg--;
	sb_init(&x, e->expected, sizeof(e->expected));
	sb_init(&r, e->received, sizeof(e->received));
	sb_str(&m, got == NULL ? "missing required property "
			       : "unexpected property ");
	sb_quoted(&m, key);
	if (got == NULL) {
		sb_str(&x, "property ");
		sb_quoted(&x, key);
		goto out;
	}
	sb_json(&r, got, RECEIVED_MAX);
	for (size_t i = 0; i < n->nprops; i++) {
		d = edit_distance(key, n->props[i].name);
		if (d < bestd) {
			bestd = d;
			best = n->props[i].name;
		}
	}
	if (best != NULL) {
		sb_str(&m, ": did you mean ");
		sb_quoted(&m, best);
		sb_str(&m, "?");
		sb_str(&x, "no property ");
		sb_quoted(&x, key);
		sb_str(&x, " (did you mean ");
		sb_quoted(&x, best);
		sb_str(&x, "?)");
		goto out;
	}
	if (n->nprops == 0) {
		sb_str(&m, " (this object takes no properties)");
		sb_str(&x, "no properties");
		goto out;
	}
	sb_str(&m, " (allowed: ");
	sb_str(&x, "only the properties ");
	for (size_t i = 0; i < n->nprops; i++) {
		sb_printf(&m, "%s%s", i ? ", " : "", n->props[i].name);
		sb_printf(&x, "%s%s", i ? ", " : "", n->props[i].name);
	}
	sb_str(&m, ")");
out:
	sb_finish(&x);
	sb_finish(&r);
	sb_finish(&m);
	return STATUS_INVALID;
}

static int
check_object(struct vctx *c, const struct node *n, const json_t *v)
{
	const char *k;
	json_t *sub;
	int rc;

	for (size_t i = 0; i < n->nrequired; i++)
		if (json_object_get(v, n->required[i]) == NULL)
			return fail_prop(c, n, n->required[i], NULL);
	for (size_t i = 0; i < n->nprops; i++) {
		sub = json_object_get(v, n->props[i].name);
		if (sub != NULL &&
		    (rc = validate_child(c, n->props[i].schema, sub,
					 n->props[i].name, 0)) != STATUS_OK)
			return rc;
	}
	if (!(n->flags & HAS_ADDL_FALSE) && n->addl == NULL)
		return STATUS_OK;
	json_object_foreach((json_t *)v, k, sub)
	{
		if (n->propset != NULL && json_object_get(n->propset, k))
			continue;
		if (n->flags & HAS_ADDL_FALSE)
			return fail_prop(c, n, k, sub);
		if ((rc = validate_child(c, n->addl, sub, k, 0)) != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

/* Short words for one alternative of anyOf/oneOf in a message. */
static void
describe(struct sb *b, const struct node *n)
{
	if (n->ref != NULL && n->types == 0 && n->konst == NULL)
		n = n->ref;
	if (n->konst != NULL)
		sb_json(b, n->konst, 40);
	else if (n->types != 0)
		sb_types(b, n->types);
	else if (n->enm != NULL)
		sb_str(b, "one of an enum");
	else
		sb_str(b, "a value matching its schema");
}

static int
fail_alternatives(struct vctx *c, const struct node_list *l, const json_t *v,
		  const char *how)
{
	struct jsonschema_error *e;
	struct sb x, one;
	char tmp[128];

	if ((e = err_begin(c, &x)) == NULL)
		return STATUS_INVALID;
	sb_str(&x, how);
	for (size_t i = 0; i < l->n; i++) {
		sb_init(&one, tmp, sizeof(tmp));
		describe(&one, l->v[i]);
		sb_finish(&one);
		sb_printf(&x, "%s(%zu) %s", i ? ", " : "", i + 1, tmp);
	}
	err_end(e, &x, v);
	return STATUS_INVALID;
}

/* Runs n on v for a verdict only; STATUS_LIMIT and NOMEM pass through. */
static int
try_node(struct vctx *c, const struct node *n, const json_t *v)
{
	bool quiet = c->quiet;
	int rc;

	c->quiet = true;
	rc = validate(c, n, v);
	c->quiet = quiet;
	return rc;
}

static int
check_applicators(struct vctx *c, const struct node *n, const json_t *v)
{
	size_t i, matched = 0, first = 0;
	int rc;

	if (n->ref != NULL && (rc = validate(c, n->ref, v)) != STATUS_OK)
		return rc;
	for (i = 0; i < n->all_of.n; i++)
		if ((rc = validate(c, n->all_of.v[i], v)) != STATUS_OK)
			return rc;
	if (n->any_of.n > 0) {
		for (i = 0; i < n->any_of.n; i++) {
			rc = try_node(c, n->any_of.v[i], v);
			if (rc != STATUS_INVALID)
				break;
		}
		if (rc != STATUS_OK && rc != STATUS_INVALID)
			return rc;
		if (i == n->any_of.n)
			return fail_alternatives(c, &n->any_of, v,
						 "any of (anyOf): ");
	}
	for (i = 0; i < n->one_of.n; i++) {
		rc = try_node(c, n->one_of.v[i], v);
		if (rc != STATUS_OK && rc != STATUS_INVALID)
			return rc;
		if (rc == STATUS_OK && matched++ == 0)
			first = i;
		if (matched > 1)
			return fail(c, v,
				    "exactly one of the oneOf alternatives, "
				    "but it matches both %zu and %zu",
				    first + 1, i + 1);
	}
	if (n->one_of.n > 0 && matched == 0)
		return fail_alternatives(c, &n->one_of, v,
					 "exactly one of (oneOf): ");
	if (n->not_ != NULL) {
		rc = try_node(c, n->not_, v);
		if (rc == STATUS_OK)
			return fail(c, v,
				    "a value that does not match the "
				    "\"not\" schema");
		if (rc != STATUS_INVALID)
			return rc;
	}
	return STATUS_OK;
}

static unsigned
type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return T_OBJ;
	case JSON_ARRAY: return T_ARR;
	case JSON_STRING: return T_STR;
	case JSON_INTEGER: return T_INT | T_NUM;
	case JSON_REAL: return is_integral(v) ? T_INT | T_NUM : T_NUM;
	case JSON_TRUE:
	case JSON_FALSE: return T_BOOL;
	default: return T_NULL;
	}
}

static int
validate(struct vctx *c, const struct node *n, const json_t *v)
{
	struct jsonschema_error *e;
	struct sb x;
	unsigned t = type_of(v);
	size_t i;
	int rc;

	if (++c->steps > MAX_STEPS || c->calls >= MAX_CALLS)
		return fail_limit(c, "the schema is too complex to check this "
				     "value");
	if (n->flags & NEVER)
		return fail(c, v, "no value here (the schema is false)");
	if (n->types != 0 && !(n->types & t)) {
		if ((e = err_begin(c, &x)) == NULL)
			return STATUS_INVALID;
		sb_types(&x, n->types);
		err_end(e, &x, v);
		return STATUS_INVALID;
	}
	if (n->konst != NULL && !same_value(n->konst, v)) {
		if ((e = err_begin(c, &x)) == NULL)
			return STATUS_INVALID;
		sb_json(&x, n->konst, 120);
		err_end(e, &x, v);
		return STATUS_INVALID;
	}
	if (n->enm != NULL) {
		for (i = 0; i < json_array_size(n->enm); i++)
			if (same_value(json_array_get(n->enm, i), v))
				break;
		if (i == json_array_size(n->enm)) {
			if ((e = err_begin(c, &x)) == NULL)
				return STATUS_INVALID;
			sb_str(&x, "one of ");
			for (i = 0; i < json_array_size(n->enm); i++) {
				if (i > 0)
					sb_str(&x, ", ");
				sb_json(&x, json_array_get(n->enm, i), 40);
			}
			err_end(e, &x, v);
			return STATUS_INVALID;
		}
	}
	c->calls++;
	if ((t & T_NUM) && (n->flags & NUM_FLAGS))
		rc = check_number(c, n, v);
	else if (t == T_STR)
		rc = check_string(c, n, v);
	else if (t == T_ARR)
		rc = check_array(c, n, v);
	else if (t == T_OBJ)
		rc = check_object(c, n, v);
	else
		rc = STATUS_OK;
	if (rc == STATUS_OK)
		rc = check_applicators(c, n, v);
	c->calls--;
	return rc;
}

int
jsonschema_validate(const struct jsonschema *s, const json_t *instance,
		    struct jsonschema_error *verr)
{
	struct vctx c = {.out = verr};

	if (verr != NULL)
		memset(verr, 0, sizeof(*verr));
	if (instance == NULL)
		return fail(&c, NULL, "a value");
	return validate(&c, s->root, instance);
}

/* ---- defaults ---------------------------------------------------------- */

static int
apply(struct vctx *c, const struct node *n, json_t *v, int depth)
{
	const char *k;
	json_t *sub;
	int rc = STATUS_OK;

	if (++c->steps > MAX_STEPS || c->calls >= MAX_CALLS ||
	    depth > JSONSCHEMA_MAX_DEPTH)
		return STATUS_LIMIT;
	c->calls++;
	for (size_t i = 0; json_is_object(v) && i < n->nprops; i++) {
		const struct node *p = n->props[i].schema;

		sub = json_object_get(v, n->props[i].name);
		if (sub != NULL)
			rc = apply(c, p, sub, depth + 1);
		else if (p->dflt != NULL &&
			 json_object_set_new(v, n->props[i].name,
					     json_deep_copy(p->dflt)) != 0)
			rc = STATUS_NOMEM;
		if (rc != STATUS_OK)
			goto out;
	}
	if (json_is_object(v) && n->addl != NULL) {
		json_object_foreach(v, k, sub)
		{
			if (n->propset != NULL &&
			    json_object_get(n->propset, k) != NULL)
				continue;
			if ((rc = apply(c, n->addl, sub, depth + 1)))
				goto out;
		}
	}
	for (size_t i = 0;
	     json_is_array(v) && n->items != NULL && i < json_array_size(v);
	     i++)
		if ((rc = apply(c, n->items, json_array_get(v, i),
				depth + 1)) != STATUS_OK)
			goto out;
	if (n->ref != NULL && (rc = apply(c, n->ref, v, depth)) != STATUS_OK)
		goto out;
	for (size_t i = 0; i < n->all_of.n && rc == STATUS_OK; i++)
		rc = apply(c, n->all_of.v[i], v, depth);
out:
	c->calls--;
	return rc;
}

int
jsonschema_apply_defaults(const struct jsonschema *s, json_t *instance)
{
	struct vctx c = {0};

	if (s == NULL || instance == NULL)
		return STATUS_OK;
	return apply(&c, s->root, instance, 0);
}

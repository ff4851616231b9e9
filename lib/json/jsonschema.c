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

#include "json/jsonschema.h"

/* Subschemas per schema: tool schemas have tens; this bounds the memory a
 * broken file can cost. */
#define MAX_NODES 10000
/* Longest chain of $ref/allOf/anyOf/oneOf/not at one instance location. */
#define MAX_CHAIN 128
/* Validator recursion and total work: anyOf/oneOf over recursive $refs
 * can be exponential; this keeps a worker's stack and CPU bounded. */
#define MAX_CALLS 1024
#define MAX_STEPS 2000000UL
/* Pattern length, and the regcomp expansion cost (glibc copies the tree
 * once per counted repetition, so a{100}{100} costs 10000). */
#define PATTERN_MAX 4096
#define RX_COST_MAX 100000ULL
#define SHOW_MAX    60 /* JSON values quoted in messages */

/* Instance types, in message order. */
#define T_NULL 1u
#define T_BOOL 2u
#define T_OBJ  4u
#define T_ARR  8u
#define T_NUM  16u
#define T_INT  32u
#define T_STR  64u
static const char *const type_names[] = {"null",   "boolean", "object", "array",
					 "number", "integer", "string"};
static const char *const type_nouns[] = {"null",     "a boolean", "an object",
					 "an array", "a number",  "an integer",
					 "a string"};

/* Numeric bounds and counts, indexed by position in these tables. */
static const char *const num_kw[] = {"minimum", "exclusiveMinimum", "maximum",
				     "exclusiveMaximum", "multipleOf"};
static const char *const num_op[] = {">= ", "> ", "<= ", "< ",
				     "a multiple of "};
static const char *const cnt_kw[] = {"minLength", "maxLength", "minItems",
				     "maxItems"};
enum {
	N_MIN,
	N_XMIN,
	N_MAX,
	N_XMAX,
	N_MULT,
	N_COUNT
};
enum {
	C_MINLEN,
	C_MAXLEN,
	C_MINITEMS,
	C_MAXITEMS,
	C_COUNT
};

/* Keywords with validation meaning that this subset does not implement:
 * refused, since ignoring them would accept what the author rejects. */
static const char unsupported_kw[] =
	" prefixItems contains minContains maxContains additionalItems"
	" unevaluatedItems unevaluatedProperties patternProperties"
	" propertyNames minProperties maxProperties dependentRequired"
	" dependentSchemas dependencies $dynamicRef"
	" $recursiveRef $dynamicAnchor $recursiveAnchor ";

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

struct list {
	struct node **v;
	size_t n;
};

struct node {
	const json_t *src; /* compile time only: locates $ref targets */
	struct node *next; /* all nodes, for free and the loop check */
	int mark;	   /* loop check colour */
	bool never;	   /* the schema false */
	bool unique;
	bool addl_false;
	unsigned types; /* T_* mask; 0: any */
	unsigned nums;	/* bit i: num[i] present */
	unsigned cnts;	/* bit i: cnt[i] present */
	struct num num[N_COUNT];
	size_t cnt[C_COUNT];
	int format;
	json_t *konst, *enm, *dflt;
	regex_t *re;
	char *pattern;
	struct node *items, *addl, *not_, *ref;
	struct node *if_, *then_, *else_; /* then/else apply only with if */
	char **prop_names;
	struct node **props;
	size_t nprops;
	json_t *propset; /* prop_names as an object, for lookups */
	char **required;
	size_t nrequired;
	struct list all_of, any_of, one_of;
	char *ref_str, *ref_at; /* the $ref and where it is, for messages */
};

struct jsonschema {
	struct node *root;
	struct node *all;
	size_t nnodes;
};

/* ---- bounded strings for messages -------------------------------------- */

struct sb {
	char *p;
	size_t cap, len;
	bool trunc;
};

static void
sb_init(struct sb *b, char *p, size_t cap)
{
	*b = (struct sb){p, cap, 0, false};
	p[0] = '\0';
}

static void
sb_add(struct sb *b, const char *s, size_t n)
{
	if (n > b->cap - 1 - b->len) {
		n = b->cap - 1 - b->len;
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
	if (n >= 0 && (size_t)n >= b->cap - b->len)
		b->trunc = true;
	if (n >= 0)
		b->len += (size_t)n < b->cap - b->len ? (size_t)n
						      : b->cap - 1 - b->len;
}

/* Cuts to at most max bytes (max >= 3) on a UTF-8 boundary, ending in
 * "..." when anything was lost. */
static void
sb_finish(struct sb *b, size_t max)
{
	if (max > b->cap - 1)
		max = b->cap - 1;
	if (!b->trunc && b->len <= max)
		return;
	if (b->len > max - 3)
		b->len = max - 3;
	while (b->len > 0 && ((unsigned char)b->p[b->len] & 0xC0) == 0x80)
		b->len--;
	memcpy(b->p + b->len, "...", 4);
	b->len += 3;
	b->trunc = false;
}

static int
dump_cb(const char *buf, size_t size, void *data)
{
	sb_add(data, buf, size);
	return ((struct sb *)data)->trunc ? -1 : 0; /* stop early */
}

/* Appends v as compact JSON, at most max (<= SHOW_MAX) bytes. */
static void
sb_json(struct sb *b, const json_t *v, size_t max)
{
	char tmp[SHOW_MAX + 2];
	struct sb t;

	sb_init(&t, tmp, max + 2);
	(void)json_dump_callback(v, dump_cb, &t,
				 JSON_ENCODE_ANY | JSON_COMPACT |
					 JSON_REAL_PRECISION(15));
	sb_finish(&t, max);
	sb_add(b, t.p, t.len);
}

static void
sb_quoted(struct sb *b, const char *s)
{
	json_t *k = json_string(s);

	if (k != NULL)
		sb_json(b, k, SHOW_MAX);
	json_decref(k);
}

static void
sb_types(struct sb *b, unsigned types)
{
	size_t start = b->len;

	if (types & T_NUM)
		types &= ~T_INT;
	for (unsigned i = 0; i < 7; i++) {
		if (!(types & (1u << i)))
			continue;
		types &= ~(1u << i);
		if (b->len > start)
			sb_str(b, types ? ", " : " or ");
		sb_str(b, type_nouns[i]);
	}
}

/* ---- values ------------------------------------------------------------ */

static bool
is_integral(const json_t *v)
{
	double d = json_number_value(v);

	return json_is_integer(v) ||
	       (json_is_real(v) && isfinite(d) && d == floor(d));
}

static unsigned
type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return T_OBJ;
	case JSON_ARRAY: return T_ARR;
	case JSON_STRING: return T_STR;
	case JSON_INTEGER:
	case JSON_REAL: return is_integral(v) ? T_INT | T_NUM : T_NUM;
	case JSON_TRUE:
	case JSON_FALSE: return T_BOOL;
	default: return T_NULL;
	}
}

/* Equality where numbers compare by value (1 == 1.0), as enum and const
 * require.  Recursion is bounded by the schema's value. */
static bool
same_value(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;

	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_string(a))
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b),
			      json_string_length(a)) == 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same_value(json_array_get(a, i),
					json_array_get(b, i)))
				return false;
	}
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v)
		{
			const json_t *w = json_object_get(b, k);

			if (w == NULL || !same_value(v, w))
				return false;
		}
	}
	return true;
}

static bool
num_ok(const json_t *v, int which, const struct num *n)
{
	double d = json_number_value(v), q;
	int cmp;

	if (which == N_MULT) {
		if (json_is_integer(v) && n->is_int)
			return json_integer_value(v) % n->i == 0;
		q = d / n->d;
		return isfinite(q) &&
		       fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
	}
	if (json_is_integer(v) && n->is_int)
		cmp = (json_integer_value(v) > n->i) -
		      (json_integer_value(v) < n->i);
	else
		cmp = (d > n->d) - (d < n->d);
	return which == N_MIN	 ? cmp >= 0
	       : which == N_XMIN ? cmp > 0
	       : which == N_MAX	 ? cmp <= 0
				 : cmp < 0;
}

/* ---- RFC 3339 section 5.6 ---------------------------------------------- */

static bool
digits(const char *s, int n, int *out)
{
	*out = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*out = *out * 10 + (s[i] - '0');
	}
	return true;
}

static bool
full_date(const char *s)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	int y, m, d;

	if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &m) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || m < 1 || m > 12 || d < 1)
		return false;
	return d <= mdays[m - 1] || (m == 2 && d == 29 && y % 4 == 0 &&
				     (y % 100 != 0 || y % 400 == 0));
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
		while (++i < len && isdigit((unsigned char)s[i]))
			;
		if (i == 20)
			return false;
	}
	if (i + 1 == len)
		return s[i] == 'Z' || s[i] == 'z';
	return i + 6 == len && (s[i] == '+' || s[i] == '-') &&
	       digits(s + i + 1, 2, &h) && s[i + 3] == ':' &&
	       digits(s + i + 4, 2, &mi) && h <= 23 && mi <= 59;
}

/* ---- ECMA-262 pattern to POSIX ERE ------------------------------------- */

struct rx {
	const char *s, *end; /* cursor in the ECMA source */
	char *out;
	size_t olen, ocap;
	const char *why;
	/* expansion cost per open group: running total and last atom */
	unsigned long long sum[JSONSCHEMA_MAX_DEPTH + 1];
	unsigned long long last[JSONSCHEMA_MAX_DEPTH + 1];
	int top;
};

static int
rx_fail(struct rx *r, int rc, const char *why)
{
	r->why = why;
	return rc;
}

static int
rx_put(struct rx *r, const char *s, size_t n)
{
	if (r->olen + n >= r->ocap) /* sized at 16 x the source: never */
		return rx_fail(r, STATUS_LIMIT, "pattern is too long");
	memcpy(r->out + r->olen, s, n);
	r->olen += n;
	r->out[r->olen] = '\0';
	return STATUS_OK;
}

static int
rx_atom(struct rx *r, int rc, unsigned long long size)
{
	if (rc != STATUS_OK)
		return rc;
	r->sum[r->top] += size;
	r->last[r->top] = size;
	return r->sum[r->top] > RX_COST_MAX
		       ? rx_fail(r, STATUS_LIMIT,
				 "pattern is too complex (nested counted "
				 "repetitions)")
		       : STATUS_OK;
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

/* ECMA \d \w \s as ASCII sets (\s also has Unicode spaces: not here). */
static void
set_class(unsigned char *set, char cls)
{
	if (cls == 'd' || cls == 'w')
		set_add(set, '0', '9');
	if (cls == 'w') {
		set_add(set, 'A', 'Z');
		set_add(set, 'a', 'z');
		set_add(set, '_', '_');
	}
	if (cls == 's') {
		set_add(set, '\t', '\r');
		set_add(set, ' ', ' ');
	}
}

/*
 * Reads one character or escape at r->s, outside or inside [...].
 * Returns a byte in *cp, or a class letter (d w s, upper case negated)
 * in *cls.  Refuses what POSIX cannot express.
 */
static int
rx_char(struct rx *r, bool in_class, unsigned *cp, char *cls)
{
	unsigned char e;

	*cls = '\0';
	if (*r->s != '\\') {
		*cp = (unsigned char)*r->s++;
		if (in_class && *cp >= 0x80)
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "non-ASCII characters inside [...] are "
				       "not supported");
		return STATUS_OK;
	}
	if (++r->s >= r->end)
		return rx_fail(r, STATUS_INVALID,
			       "pattern ends in a backslash");
	e = (unsigned char)*r->s++;
	if (strchr("dDwWsS", e) && e != '\0') {
		*cls = (char)e;
		return in_class && isupper(e)
			       ? rx_fail(r, STATUS_UNSUPPORTED,
					 "\\D, \\W and \\S inside [...] are "
					 "not supported")
			       : STATUS_OK;
	}
	if ((e >= '1' && e <= '9') || e == 'k')
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "backreferences are not supported");
	if (e == 'p' || e == 'P')
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "Unicode property escapes (\\p{...}) are not "
			       "supported");
	*cp = e == 'n'	 ? '\n'
	      : e == 't' ? '\t'
	      : e == 'r' ? '\r'
	      : e == 'f' ? '\f'
	      : e == 'v' ? '\v'
			 : e;
	if (in_class && e == 'b')
		*cp = '\b';
	if (*cp == e && !(e < 0x80 && ispunct(e)))
		return rx_fail(r, STATUS_UNSUPPORTED,
			       "this escape is not supported: use \\d \\w \\s "
			       "\\D \\W \\S or escape punctuation only");
	return STATUS_OK;
}

/* A [...] class as an ASCII set, emitted as a POSIX bracket expression
 * with ']' first, '[' and '^' late and '-' last, so none reads as syntax;
 * '\' is literal in POSIX brackets. */
static int
rx_class(struct rx *r)
{
	unsigned char set[16] = {0};
	char buf[300], cls;
	size_t n = 0;
	unsigned lo, hi;
	bool neg = r->s < r->end && *r->s == '^';
	int rc;

	r->s += neg;
	while (r->s < r->end && *r->s != ']') {
		if ((rc = rx_char(r, true, &lo, &cls)) != STATUS_OK)
			return rc;
		if (cls != '\0') {
			set_class(set, cls);
			continue;
		}
		hi = lo;
		if (r->s + 1 < r->end && *r->s == '-' && r->s[1] != ']') {
			r->s++;
			if ((rc = rx_char(r, true, &hi, &cls)) != STATUS_OK)
				return rc;
			if (cls != '\0' || hi < lo)
				return rx_fail(r, STATUS_INVALID,
					       "bad range inside [...]");
		}
		set_add(set, lo, hi);
	}
	if (r->s++ >= r->end)
		return rx_fail(r, STATUS_INVALID, "unterminated [...]");
	buf[n++] = '[';
	if (neg)
		buf[n++] = '^';
	if (set_has(set, ']'))
		buf[n++] = ']';
	for (unsigned c = 1; c < 128; c++) { /* NUL: never in a C regex */
		if (!set_has(set, c) || strchr("[]^-", (int)c))
			continue;
		for (hi = c; hi + 1 < 128 && set_has(set, hi + 1) &&
			     !strchr("[]^-", (int)(hi + 1));
		     hi++)
			;
		buf[n++] = (char)c;
		if (hi > c + 1)
			buf[n++] = '-';
		if (hi > c)
			buf[n++] = (char)hi;
		c = hi;
	}
	if (set_has(set, '['))
		buf[n++] = '[';
	if (set_has(set, '^') && n == 1) /* "[^" would negate */
		return set_has(set, '-') ? rx_put(r, "[-^]", 4)
					 : rx_put(r, "\\^", 2);
	if (set_has(set, '^'))
		buf[n++] = '^';
	if (set_has(set, '-'))
		buf[n++] = '-';
	if (n == 1u + neg)
		return neg ? rx_put(r, "(.|\n)", 5)
			   : rx_fail(r, STATUS_UNSUPPORTED,
				     "an empty [] is not supported");
	buf[n++] = ']';
	return rx_put(r, buf, n);
}

/* After an atom: *, +, ?, {n}, {n,}, {n,m}, each maybe lazy ("?"), which
 * gives the same verdict when only matching. */
static int
rx_quantifier(struct rx *r)
{
	unsigned long lo = 1, hi = 1;
	unsigned long long last = r->last[r->top];
	const char *q = r->s;
	char *e;
	int rc;

	if (*q == '*' || *q == '+' || *q == '?') {
		hi = *q == '+' ? 2 : 1; /* glibc: a+ is aa* */
		q++;
	} else if (*q == '{' && q + 1 < r->end &&
		   isdigit((unsigned char)q[1])) {
		lo = hi = strtoul(q + 1, &e, 10);
		if (e < r->end && *e == ',') {
			hi = e + 1 < r->end && isdigit((unsigned char)e[1])
				     ? strtoul(e + 1, &e, 10)
				     : (e++, lo + 1);
		}
		if (e >= r->end || *e != '}')
			return STATUS_OK; /* ECMA: a literal "{" */
		if (lo > 1000 || hi > 1000 || hi < lo)
			return rx_fail(r, STATUS_LIMIT,
				       "repetition counts must be in order "
				       "and at most 1000");
		q = e + 1;
	} else {
		return STATUS_OK;
	}
	if ((rc = rx_put(r, r->s, (size_t)(q - r->s))) != STATUS_OK)
		return rc;
	r->s = q + (q < r->end && *q == '?');
	hi = hi ? hi : 1;
	r->sum[r->top] += last * (hi - 1); /* < 2^40: no overflow */
	r->last[r->top] = last * hi;
	return r->sum[r->top] > RX_COST_MAX ? rx_atom(r, STATUS_OK, 0)
					    : STATUS_OK;
}

static int
rx_group(struct rx *r)
{
	const char *s = r->s, *gt;
	size_t left = (size_t)(r->end - s);

	if (left >= 2 && s[0] == '?') {
		gt = memchr(s, '>', left);
		if (s[1] == ':')
			r->s += 2;
		else if (s[1] == '=' || s[1] == '!')
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "lookahead (?= (?! is not supported");
		else if (left >= 3 && s[1] == '<' &&
			 (s[2] == '=' || s[2] == '!'))
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "lookbehind (?<= (?<! is not supported");
		else if (s[1] == '<' && gt != NULL)
			r->s = gt + 1; /* named group */
		else
			return rx_fail(r, STATUS_UNSUPPORTED,
				       "this (?...) group is not supported");
	}
	if (r->top >= JSONSCHEMA_MAX_DEPTH)
		return rx_fail(r, STATUS_LIMIT, "too many nested groups");
	r->top++;
	r->sum[r->top] = r->last[r->top] = 0;
	return rx_put(r, "(", 1);
}

static int
rx_translate(struct rx *r)
{
	static const char *const cls_re[] = {"d[0-9]",	      "D[^0-9]",
					     "w[0-9A-Z_a-z]", "W[^0-9A-Z_a-z]",
					     "s[\t-\r ]",     "S[^\t-\r ]"};
	unsigned cp;
	char cls, lit[3] = "\\";
	int rc = STATUS_OK;

	while (rc == STATUS_OK && r->s < r->end) {
		const char *at = r->s;
		bool atom = !strchr("(^$|", *at);

		switch (*r->s) {
		case '[':
			r->s++;
			rc = rx_atom(r, rx_class(r), 1);
			break;
		case '(':
			r->s++;
			rc = rx_group(r);
			break;
		case ')':
			r->s++;
			if (r->top == 0)
				return rx_fail(r, STATUS_INVALID,
					       "unbalanced parenthesis");
			r->top--;
			rc = rx_atom(r, rx_put(r, ")", 1),
				     r->sum[r->top + 1] + 1);
			break;
		case '^':
		case '$':
		case '|':
		case '.':
			rc = rx_put(r, r->s++, 1);
			if (*at == '.')
				rc = rx_atom(r, rc, 1);
			break;
		case '\\':
			if (r->s + 1 < r->end &&
			    (r->s[1] == 'b' || r->s[1] == 'B')) {
				rc = rx_put(r, r->s, 2); /* GNU: word edge */
				r->s += 2;
				atom = false;
				break;
			}
			/* fallthrough */
		default:
			if ((unsigned char)*r->s >= 0x80) { /* whole char */
				while (++r->s < r->end &&
				       ((unsigned char)*r->s & 0xC0) == 0x80)
					;
				if ((rc = rx_put(r, "(", 1)) == STATUS_OK &&
				    (rc = rx_put(r, at, (size_t)(r->s - at))) ==
					    STATUS_OK)
					rc = rx_put(r, ")", 1);
				rc = rx_atom(r, rc, 1);
				break;
			}
			if (strchr("*+?", *r->s)) /* ECMA: a syntax error */
				return rx_fail(r, STATUS_INVALID,
					       "a quantifier (*, +, ?) with "
					       "nothing to repeat");
			if ((rc = rx_char(r, false, &cp, &cls)) != STATUS_OK)
				return rc;
			for (size_t k = 0; cls != '\0' && k < 6; k++)
				if (cls_re[k][0] == cls)
					rc = rx_put(r, cls_re[k] + 1,
						    strlen(cls_re[k] + 1));
			if (cls == '\0' && cp == '\0')
				return rx_fail(r, STATUS_UNSUPPORTED,
					       "NUL in a pattern is not "
					       "supported");
			lit[1] = (char)cp;
			if (cls == '\0')
				rc = strchr(".[]()*+?{}|^$\\", (int)cp)
					     ? rx_put(r, lit, 2)
					     : rx_put(r, lit + 1, 1);
			rc = rx_atom(r, rc, 1);
		}
		if (rc == STATUS_OK && atom && r->s < r->end)
			rc = rx_quantifier(r);
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
	/* $anchor name -> index in anchored (2020-12 only) */
	json_t *anchors;
	struct node **anchored;
	size_t nanchored, capanchored;
};

PRINTF_LIKE(3, 4)
static int
cfail(struct cctx *c, int rc, const char *fmt, ...)
{
	size_t plen = strlen(c->ptr);
	va_list ap;
	int n;

	if (c->err == NULL || c->errlen == 0)
		return rc;
	if (plen > 100) /* keep both ends of a long pointer */
		n = snprintf(c->err, c->errlen, "%.30s...%s: ", c->ptr,
			     c->ptr + plen - 60);
	else
		n = snprintf(c->err, c->errlen, "%s: ", c->ptr);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The offending JSON value, for compile messages. */
#define SHOW(v) show((v), (char[SHOW_MAX + 2]){0})

static const char *
show(const json_t *v, char *buf)
{
	struct sb b;

	sb_init(&b, buf, SHOW_MAX + 2);
	sb_json(&b, v, SHOW_MAX);
	return buf;
}

/* Keyword k of j, NULL when absent; fails unless its JSON type is in
 * mask (bits 1 << json_type). */
#define M(t)  (1u << (t))
#define M_NUM (M(JSON_INTEGER) | M(JSON_REAL))
static int
kw(struct cctx *c, const json_t *j, const char *k, unsigned mask,
   const char *what, const json_t **v)
{
	*v = json_object_get(j, k);
	if (*v == NULL || (M(json_typeof(*v)) & mask))
		return STATUS_OK;
	return cfail(c, STATUS_INVALID, "\"%s\" must be %s, got %s", k, what,
		     SHOW(*v));
}

static int compile_node(struct cctx *c, const json_t *j, struct node **out);

/* Compiles j found at <pointer>/k1[/k2], with RFC 6901 escapes. */
static int
compile_at(struct cctx *c, const json_t *j, const char *k1, const char *k2,
	   struct node **out)
{
	size_t old = c->plen;
	struct sb b = {c->ptr, sizeof(c->ptr), c->plen, false};
	int rc;

	for (const char *k = k1; k != NULL; k = k == k1 ? k2 : NULL) {
		sb_add(&b, "/", 1);
		for (const char *p = k; *p; p++) {
			if (*p == '~' || *p == '/')
				sb_str(&b, *p == '~' ? "~0" : "~1");
			else
				sb_add(&b, p, 1);
		}
	}
	c->plen = b.len;
	rc = compile_node(c, j, out);
	if (rc == STATUS_OK) {
		c->plen = old;
		c->ptr[old] = '\0';
	}
	return rc;
}

static int
compile_list(struct cctx *c, const json_t *j, const char *k, struct list *l)
{
	const json_t *v = json_object_get(j, k);
	char idx[24];
	int rc;

	if (v == NULL)
		return STATUS_OK;
	if (json_array_size(v) == 0)
		return cfail(c, STATUS_INVALID,
			     "\"%s\" must be a non-empty array of schemas, got "
			     "%s",
			     k, SHOW(v));
	if ((l->v = calloc(json_array_size(v), sizeof(*l->v))) == NULL)
		return STATUS_NOMEM;
	for (; l->n < json_array_size(v); l->n++) {
		snprintf(idx, sizeof(idx), "%zu", l->n);
		rc = compile_at(c, json_array_get(v, l->n), k, idx,
				&l->v[l->n]);
		if (rc != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

static int
compile_types(struct cctx *c, const json_t *v, struct node *n)
{
	size_t i, k, len = json_is_array(v) ? json_array_size(v) : 1;

	for (i = 0; i < len && (json_is_string(v) || len > 0); i++) {
		const json_t *t = json_is_array(v) ? json_array_get(v, i) : v;

		for (k = 0; k < 7 && json_is_string(t); k++)
			if (strcmp(json_string_value(t), type_names[k]) == 0)
				break;
		if (k >= 7 || !json_is_string(t))
			break;
		n->types |= 1u << k;
	}
	if (n->types != 0 && i == len)
		return STATUS_OK;
	return cfail(c, STATUS_INVALID,
		     "\"type\" must be one of \"null\", \"boolean\", "
		     "\"object\", \"array\", \"number\", \"integer\", "
		     "\"string\" or an array of them, got %s",
		     SHOW(v));
}

static int
compile_pattern(struct cctx *c, const json_t *v, struct node *n)
{
	struct rx *r = calloc(1, sizeof(*r));
	char why[128];
	int rc, e;

	n->pattern = strdup(json_string_value(v));
	n->re = calloc(1, sizeof(*n->re));
	if (r == NULL || n->pattern == NULL || n->re == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	r->s = json_string_value(v);
	r->end = r->s + json_string_length(v);
	r->ocap = 16 * json_string_length(v) + 16;
	if (json_string_length(v) > PATTERN_MAX)
		rc = rx_fail(r, STATUS_LIMIT, "pattern is too long");
	else if ((r->out = calloc(1, r->ocap)) == NULL)
		rc = STATUS_NOMEM;
	else
		rc = rx_translate(r);
	if (rc == STATUS_OK &&
	    (e = regcomp(n->re, r->out, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(e, n->re, why, sizeof(why));
		r->why = why;
		rc = e == REG_ESPACE ? STATUS_NOMEM : STATUS_INVALID;
	}
	if (rc != STATUS_OK) {
		free(n->re); /* regcomp frees its own on failure */
		n->re = NULL;
	}
	if (rc != STATUS_OK && rc != STATUS_NOMEM)
		rc = cfail(c, rc, "\"pattern\" %s: %s", SHOW(v), r->why);
out:
	if (r != NULL)
		free(r->out);
	free(r);
	return rc;
}

static int
compile_props(struct cctx *c, const json_t *v, struct node *n)
{
	const char *k;
	json_t *sub;
	int rc;

	n->prop_names = calloc(json_object_size(v) + 1, sizeof(char *));
	n->props = calloc(json_object_size(v) + 1, sizeof(*n->props));
	if ((n->propset = json_object()) == NULL || n->props == NULL ||
	    n->prop_names == NULL)
		return STATUS_NOMEM;
	json_object_foreach((json_t *)v, k, sub)
	{
		if ((n->prop_names[n->nprops] = strdup(k)) == NULL ||
		    json_object_set_new(n->propset, k, json_null()) != 0)
			return STATUS_NOMEM;
		rc = compile_at(c, sub, "properties", k,
				&n->props[n->nprops++]);
		if (rc != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

static int
compile_required(struct cctx *c, const json_t *v, struct node *n)
{
	if ((n->required = calloc(json_array_size(v) + 1, sizeof(char *))) ==
	    NULL)
		return STATUS_NOMEM;
	for (; n->nrequired < json_array_size(v); n->nrequired++) {
		const json_t *s = json_array_get(v, n->nrequired);

		if (!json_is_string(s))
			return cfail(c, STATUS_INVALID,
				     "\"required\" must be an array of "
				     "strings, got %s",
				     SHOW(v));
		if ((n->required[n->nrequired] =
			     strdup(json_string_value(s))) == NULL)
			return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* A plain-name fragment (2020-12 Core section 8.2.2): the same syntax
 * as an XML NCName restricted to ASCII, so "#name" never reads as a
 * JSON pointer. */
static bool
anchor_name(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
	      *s == '_'))
		return false;
	for (s++; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		      *s == '_'))
			return false;
	return true;
}

static int
compile_dialect(struct cctx *c, const json_t *j)
{
	static const char *const ok[] = {
		"https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft-07/schema"};
	const json_t *v;
	size_t len;
	int rc;

	if ((rc = kw(c, j, "$schema", M(JSON_STRING), "a string", &v)) ||
	    v == NULL)
		return rc;
	len = json_string_length(v);
	len -= len > 0 && json_string_value(v)[len - 1] == '#';
	for (size_t i = 0; i < 4; i++)
		if (strlen(ok[i]) == len &&
		    memcmp(ok[i], json_string_value(v), len) == 0) {
			if (c->depth == 0)
				c->draft7 = i >= 2;
			return STATUS_OK;
		}
	return cfail(c, STATUS_UNSUPPORTED,
		     "\"$schema\" %s is not supported: use "
		     "\"https://json-schema.org/draft/2020-12/schema\" or "
		     "\"http://json-schema.org/draft-07/schema#\"",
		     SHOW(v));
}

/* Records n under its $anchor, which "#name" references resolve to;
 * a name may appear once per document (Core section 8.2.2). */
static int
compile_anchor(struct cctx *c, const json_t *j, struct node *n)
{
	const json_t *v;
	const char *name;
	int rc;

	if ((rc = kw(c, j, "$anchor", M(JSON_STRING), "a string", &v)) ||
	    v == NULL)
		return rc;
	name = json_string_value(v);
	if (!anchor_name(name))
		return cfail(c, STATUS_INVALID,
			     "\"$anchor\" must be a name of letters, digits, "
			     "\"-\", \".\" and \"_\" that starts with a "
			     "letter or \"_\", got %s",
			     SHOW(v));
	if (c->anchors == NULL && (c->anchors = json_object()) == NULL)
		return STATUS_NOMEM;
	if (json_object_get(c->anchors, name) != NULL)
		return cfail(c, STATUS_INVALID,
			     "\"$anchor\" %s is defined twice in this "
			     "document",
			     SHOW(v));
	if (c->nanchored == c->capanchored) {
		size_t cap = c->capanchored ? 2 * c->capanchored : 8;
		struct node **p =
			realloc(c->anchored, cap * sizeof(*c->anchored));

		if (p == NULL)
			return STATUS_NOMEM;
		c->anchored = p;
		c->capanchored = cap;
	}
	if (json_object_set_new(c->anchors, name,
				json_integer((json_int_t)c->nanchored)) != 0)
		return STATUS_NOMEM;
	c->anchored[c->nanchored++] = n;
	return STATUS_OK;
}

/* defs_only: a draft-07 $ref, whose siblings are ignored (section 8.3)
 * except the definitions it may point into. */
static int
compile_keywords(struct cctx *c, const json_t *j, struct node *n,
		 bool defs_only)
{
	const json_t *v;
	json_t *d_v;
	const char *k;
	struct node *sub;
	int rc;

	json_object_foreach((json_t *)j, k, v)
	{
		const char *hit = unsupported_kw;

		while (*k && !strchr(k, ' ') &&
		       (hit = strstr(hit + 1, k)) != NULL)
			if (hit[-1] == ' ' && hit[strlen(k)] == ' ')
				return cfail(c, STATUS_UNSUPPORTED,
					     "keyword \"%s\" is not supported "
					     "by this server",
					     k);
	}
	if (!c->draft7 && (rc = compile_anchor(c, j, n)))
		return rc;
	for (int d = 0; d < 2; d++) {
		const char *defs = d ? "definitions" : "$defs";

		if ((rc = kw(c, j, defs, M(JSON_OBJECT), "an object", &v)))
			return rc;
		json_object_foreach((json_t *)v, k, d_v)
		{
			if ((rc = compile_at(c, d_v, defs, k, &sub)) !=
			    STATUS_OK)
				return rc;
		}
	}
	if (defs_only)
		return STATUS_OK;
	if ((v = json_object_get(j, "type")) != NULL &&
	    (rc = compile_types(c, v, n)) != STATUS_OK)
		return rc;
	if ((rc = kw(c, j, "enum", M(JSON_ARRAY), "an array", &v)))
		return rc;
	if ((v && !(n->enm = json_deep_copy(v))) ||
	    ((v = json_object_get(j, "const")) &&
	     !(n->konst = json_deep_copy(v))) ||
	    ((v = json_object_get(j, "default")) &&
	     !(n->dflt = json_deep_copy(v))))
		return STATUS_NOMEM;
	for (int i = 0; i < N_COUNT; i++) {
		if ((rc = kw(c, j, num_kw[i], M_NUM, "a number", &v)))
			return rc;
		if (v == NULL)
			continue;
		n->num[i] =
			(struct num){json_is_integer(v), json_integer_value(v),
				     json_number_value(v)};
		n->nums |= 1u << i;
	}
	if ((n->nums & (1u << N_MULT)) && n->num[N_MULT].d <= 0)
		return cfail(c, STATUS_INVALID,
			     "\"multipleOf\" must be greater than 0");
	for (int i = 0; i < C_COUNT; i++) {
		if ((v = json_object_get(j, cnt_kw[i])) == NULL)
			continue;
		if (!is_integral(v) || json_number_value(v) < 0)
			return cfail(c, STATUS_INVALID,
				     "\"%s\" must be a non-negative integer, "
				     "got %s",
				     cnt_kw[i], SHOW(v));
		n->cnt[i] = json_number_value(v) >= 1e15
				    ? (size_t)1e15
				    : (size_t)json_number_value(v);
		n->cnts |= 1u << i;
	}
	if ((rc = kw(c, j, "uniqueItems", M(JSON_TRUE) | M(JSON_FALSE),
		     "a boolean", &v)))
		return rc;
	n->unique = json_is_true(v);
	if ((rc = kw(c, j, "format", M(JSON_STRING), "a string", &v)))
		return rc;
	if (v != NULL)
		n->format = !strcmp(json_string_value(v), "date-time")
				    ? FMT_DATE_TIME
			    : !strcmp(json_string_value(v), "date") ? FMT_DATE
								    : FMT_NONE;
	if ((rc = kw(c, j, "pattern", M(JSON_STRING), "a string", &v)) ||
	    (v != NULL && (rc = compile_pattern(c, v, n))))
		return rc;
	if ((rc = kw(c, j, "items", ~M(JSON_ARRAY),
		     "a schema (arrays of schemas are not supported)", &v)) ||
	    (v != NULL && (rc = compile_at(c, v, "items", NULL, &n->items))))
		return rc;
	if ((rc = kw(c, j, "properties", M(JSON_OBJECT), "an object", &v)) ||
	    (v != NULL && (rc = compile_props(c, v, n))))
		return rc;
	if ((rc = kw(c, j, "required", M(JSON_ARRAY), "an array of strings",
		     &v)) ||
	    (v != NULL && (rc = compile_required(c, v, n))))
		return rc;
	if ((v = json_object_get(j, "additionalProperties")) != NULL) {
		n->addl_false = json_is_false(v);
		if (!n->addl_false &&
		    (rc = compile_at(c, v, "additionalProperties", NULL,
				     &n->addl)))
			return rc;
	}
	if ((rc = compile_list(c, j, "allOf", &n->all_of)) ||
	    (rc = compile_list(c, j, "anyOf", &n->any_of)) ||
	    (rc = compile_list(c, j, "oneOf", &n->one_of)))
		return rc;
	if ((v = json_object_get(j, "not")) != NULL &&
	    (rc = compile_at(c, v, "not", NULL, &n->not_)))
		return rc;
	/* then and else without if have no effect (Core 10.2.2), but a
	 * broken one is still the author's mistake: compiled either way */
	if ((v = json_object_get(j, "if")) != NULL &&
	    (rc = compile_at(c, v, "if", NULL, &n->if_)))
		return rc;
	if ((v = json_object_get(j, "then")) != NULL &&
	    (rc = compile_at(c, v, "then", NULL, &n->then_)))
		return rc;
	if ((v = json_object_get(j, "else")) != NULL)
		return compile_at(c, v, "else", NULL, &n->else_);
	return STATUS_OK;
}

static int
compile_node(struct cctx *c, const json_t *j, struct node **out)
{
	struct node *n;
	const json_t *ref;
	const char *rs;
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
	c->s->all = *out = n;
	c->s->nnodes++;
	n->never = json_is_false(j);
	if (json_is_boolean(j))
		return STATUS_OK;
	if (!json_is_object(j))
		return cfail(c, STATUS_INVALID,
			     "a schema must be an object or a boolean, got %s",
			     SHOW(j));
	if ((rc = compile_dialect(c, j)) ||
	    (rc = kw(c, j, "$ref", M(JSON_STRING), "a string", &ref)))
		return rc;
	c->depth++;
	if (ref != NULL) {
		rs = json_string_value(ref);
		if (rs[0] != '#' || (rs[1] != '\0' && rs[1] != '/' &&
				     (c->draft7 || !anchor_name(rs + 1)))) {
			rc = cfail(c, STATUS_UNSUPPORTED,
				   "\"$ref\" %s is not supported: only local "
				   "references (\"#\", \"#/$defs/name\", and "
				   "\"#anchor\" for a 2020-12 $anchor) are",
				   SHOW(ref));
			goto out;
		}
		if ((n->ref_str = strdup(rs)) == NULL ||
		    (n->ref_at = strdup(c->ptr)) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
	}
	rc = compile_keywords(c, j, n, ref != NULL && c->draft7);
out:
	c->depth--;
	return rc;
}

static int
cmp_src(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)(*(struct node *const *)a)->src;
	uintptr_t y = (uintptr_t)(*(struct node *const *)b)->src;

	return (x > y) - (x < y);
}

/* An RFC 6901 pointer in a URI fragment (RFC 3986 percent-encoding);
 * tok has room for the whole reference. */
static const json_t *
ptr_resolve(const json_t *v, const char *p, char *tok)
{
	char *end;

	for (p++; *p == '/' && v != NULL;) {
		size_t n = 0;

		for (p++; *p && *p != '/'; p++) {
			char hex[3] = {p[0] ? p[1] : 0, p[1] ? p[2] : 0, 0};

			if (*p == '~' && (p[1] == '0' || p[1] == '1'))
				tok[n++] = *++p == '0' ? '~' : '/';
			else if (*p == '%' && isxdigit((unsigned char)hex[0]) &&
				 isxdigit((unsigned char)hex[1]))
				tok[n++] = (char)strtol(hex, NULL, 16), p += 2;
			else
				tok[n++] = *p;
		}
		tok[n] = '\0';
		if (json_is_object(v))
			v = json_object_get(v, tok);
		else if (json_is_array(v) && isdigit((unsigned char)tok[0]))
			v = json_array_get(v, strtoul(tok, &end, 10));
		else
			v = NULL;
	}
	return *p == '\0' ? v : NULL;
}

static int
resolve_refs(struct cctx *c)
{
	struct node **idx = calloc(c->s->nnodes, sizeof(*idx));
	struct node *n, key, *kp = &key, **hit;
	char *tok = NULL;
	size_t i = 0;
	int rc = STATUS_NOMEM;

	if (idx == NULL)
		goto out;
	for (n = c->s->all; n != NULL; n = n->next)
		idx[i++] = n;
	qsort(idx, i, sizeof(*idx), cmp_src);
	for (n = c->s->all; n != NULL; n = n->next) {
		if (n->ref_str == NULL)
			continue;
		if (n->ref_str[1] != '\0' && n->ref_str[1] != '/') {
			const json_t *a =
				json_object_get(c->anchors, n->ref_str + 1);

			hit = a != NULL ? &c->anchored[json_integer_value(a)]
					: NULL;
		} else {
			free(tok);
			if ((tok = malloc(strlen(n->ref_str) + 1)) == NULL)
				goto out;
			key.src = ptr_resolve(c->root, n->ref_str, tok);
			hit = key.src ? bsearch(&kp, idx, i, sizeof(*idx),
						cmp_src)
				      : NULL;
		}
		if (hit == NULL) {
			snprintf(c->ptr, sizeof(c->ptr), "%s", n->ref_at);
			rc = cfail(c, STATUS_INVALID,
				   "\"$ref\" \"%s\" does not point to a schema "
				   "in this document",
				   n->ref_str);
			goto out;
		}
		n->ref = *hit;
	}
	rc = STATUS_OK;
out:
	free(idx);
	free(tok);
	return rc;
}

/* Depth-first search over the edges that stay at one instance location;
 * a cycle there would recurse forever at validation.  last_ref: the
 * latest $ref on the path, which is inside any cycle found. */
static int
check_loops(struct cctx *c, struct node *n, const struct node *last_ref,
	    int depth)
{
	const struct list *lists[] = {&n->all_of, &n->any_of, &n->one_of};
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
			     "more than %d nested $ref/allOf/anyOf/oneOf/not/"
			     "if/then/else at one place",
			     MAX_CHAIN);
	}
	n->mark = 1;
	if (n->ref != NULL)
		rc = check_loops(c, n->ref, n, depth + 1);
	if (rc == STATUS_OK && n->not_ != NULL)
		rc = check_loops(c, n->not_, last_ref, depth + 1);
	if (rc == STATUS_OK && n->if_ != NULL)
		rc = check_loops(c, n->if_, last_ref, depth + 1);
	if (rc == STATUS_OK && n->then_ != NULL)
		rc = check_loops(c, n->then_, last_ref, depth + 1);
	if (rc == STATUS_OK && n->else_ != NULL)
		rc = check_loops(c, n->else_, last_ref, depth + 1);
	for (size_t l = 0; l < 3; l++)
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
	rc = compile_node(&c, schema, &c.s->root);
	if (rc == STATUS_OK)
		rc = resolve_refs(&c);
	for (struct node *n = c.s->all; n != NULL && rc == STATUS_OK;
	     n = n->next)
		rc = check_loops(&c, n, NULL, 0);
	json_decref(c.anchors);
	free(c.anchored);
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

	for (n = s ? s->all : NULL; n != NULL; n = next) {
		next = n->next;
		json_decref(n->konst);
		json_decref(n->enm);
		json_decref(n->dflt);
		json_decref(n->propset);
		if (n->re != NULL)
			regfree(n->re);
		free(n->re);
		free(n->pattern);
		for (size_t i = 0; n->prop_names && n->prop_names[i]; i++)
			free(n->prop_names[i]);
		free(n->prop_names);
		free(n->props);
		for (size_t i = 0; n->required && n->required[i]; i++)
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
	int nseg, calls;
	unsigned long steps;
};

static void
path_build(const struct vctx *c, struct sb *b)
{
	for (int i = 0; i < c->nseg; i++) {
		const char *k = c->segs[i].key;
		bool plain = k && (isalpha((unsigned char)*k) || *k == '_');

		for (const char *p = k; plain && *p; p++)
			plain = isalnum((unsigned char)*p) || strchr("_-", *p);
		if (k == NULL) {
			sb_printf(b, "[%zu]", c->segs[i].idx);
		} else if (plain) {
			sb_str(b, i > 0 ? "." : "");
			sb_str(b, k);
		} else {
			sb_str(b, "[");
			sb_quoted(b, k);
			sb_str(b, "]");
		}
	}
	sb_finish(b, b->cap - 1);
}

/* Starts a report: NULL when no message is wanted.  Fills path and
 * points exp at the expected field for the caller to write. */
static struct jsonschema_error *
err_begin(struct vctx *c, struct sb *exp)
{
	struct sb p;

	if (c->out == NULL || c->quiet)
		return NULL;
	sb_init(&p, c->out->path, sizeof(c->out->path));
	path_build(c, &p);
	sb_init(exp, c->out->expected, sizeof(c->out->expected));
	return c->out;
}

static int
err_end(struct jsonschema_error *e, struct sb *exp, const json_t *got)
{
	struct sb r, m;

	sb_finish(exp, exp->cap - 1);
	sb_init(&r, e->received, sizeof(e->received));
	if (got != NULL)
		sb_json(&r, got, SHOW_MAX);
	sb_init(&m, e->msg, sizeof(e->msg));
	if (e->path[0] != '\0')
		sb_printf(&m, "%s: ", e->path);
	sb_printf(&m, "expected %s, got %s", e->expected, e->received);
	sb_finish(&m, m.cap - 1);
	return STATUS_INVALID;
}

PRINTF_LIKE(3, 4)
static int
fail(struct vctx *c, const json_t *got, const char *fmt, ...)
{
	struct jsonschema_error *e = err_begin(c, &(struct sb){0});
	struct sb x;
	va_list ap;
	int n;

	if (e == NULL)
		return STATUS_INVALID;
	va_start(ap, fmt);
	n = vsnprintf(e->expected, sizeof(e->expected), fmt, ap);
	va_end(ap);
	x = (struct sb){e->expected, sizeof(e->expected), strlen(e->expected),
			n >= (int)sizeof(e->expected)};
	return err_end(e, &x, got);
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
validate_at(struct vctx *c, const struct node *n, const json_t *v,
	    const char *key, size_t idx)
{
	int rc;

	if (c->nseg >= JSONSCHEMA_MAX_DEPTH)
		return fail_limit(c, "the value nests deeper than 64 levels");
	c->segs[c->nseg++] = (struct seg){key, idx};
	rc = validate(c, n, v);
	c->nseg--;
	return rc;
}

static int
check_number(struct vctx *c, const struct node *n, const json_t *v)
{
	struct jsonschema_error *e;
	const char *sep = " ";
	struct sb x;
	int i;

	for (i = 0; i < N_COUNT; i++)
		if ((n->nums & (1u << i)) && !num_ok(v, i, &n->num[i]))
			break;
	if (i == N_COUNT || (e = err_begin(c, &x)) == NULL)
		return i == N_COUNT ? STATUS_OK : STATUS_INVALID;
	sb_str(&x, (n->types & (T_INT | T_NUM)) == T_INT ? "an integer"
							 : "a number");
	for (i = 0; i < N_COUNT; i++) {
		if (!(n->nums & (1u << i)))
			continue;
		sb_printf(&x, "%s%s",
			  i == N_MULT && sep[1] == '\0' ? " that is " : sep,
			  num_op[i]);
		if (n->num[i].is_int)
			sb_printf(&x, "%" JSON_INTEGER_FORMAT, n->num[i].i);
		else
			sb_printf(&x, "%.15g", n->num[i].d);
		sep = " and ";
	}
	return err_end(e, &x, v);
}

/* "a string of ..." / "an array of ..." with min/max counts lo, hi. */
static int
fail_count(struct vctx *c, const json_t *v, const char *what, const char *unit,
	   const struct node *n, int lo, int hi)
{
	bool has_lo = n->cnts & (1u << lo), has_hi = n->cnts & (1u << hi);
	size_t a = n->cnt[lo], b = n->cnt[hi];

	if (has_lo && has_hi)
		return fail(c, v, "%s of %zu to %zu %ss", what, a, b, unit);
	return fail(c, v, "%s of at %s %zu %s%s", what,
		    has_lo ? "least" : "most", has_lo ? a : b, unit,
		    (has_lo ? a : b) == 1 ? "" : "s");
}

static int
check_string(struct vctx *c, const struct node *n, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v), cps = 0;
	regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)len};
	struct jsonschema_error *e;
	struct sb x;

	for (size_t i = 0; n->cnts && i < len; i++)
		cps += ((unsigned char)s[i] & 0xC0) != 0x80;
	if (((n->cnts & (1u << C_MINLEN)) && cps < n->cnt[C_MINLEN]) ||
	    ((n->cnts & (1u << C_MAXLEN)) && cps > n->cnt[C_MAXLEN]))
		return fail_count(c, v, "a string", "character", n, C_MINLEN,
				  C_MAXLEN);
	if (n->re != NULL && regexec(n->re, s, 1, &m, REG_STARTEND) != 0) {
		if ((e = err_begin(c, &x)) == NULL)
			return STATUS_INVALID;
		sb_str(&x, "a string matching the pattern ");
		sb_quoted(&x, n->pattern);
		return err_end(e, &x, v);
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

	if (((n->cnts & (1u << C_MINITEMS)) && len < n->cnt[C_MINITEMS]) ||
	    ((n->cnts & (1u << C_MAXITEMS)) && len > n->cnt[C_MAXITEMS]))
		return fail_count(c, v, "an array", "item", n, C_MINITEMS,
				  C_MAXITEMS);
	for (size_t i = 1; n->unique && i < len; i++) {
		if ((c->steps += i) > MAX_STEPS)
			return fail_limit(c, "the array is too long to check "
					     "uniqueItems");
		for (size_t k = 0; k < i; k++)
			if (same_value(json_array_get(v, k),
				       json_array_get(v, i)))
				return fail(c, v,
					    "an array of unique items ([%zu] "
					    "and [%zu] are equal)",
					    k, i);
	}
	for (size_t i = 0; n->items != NULL && i < len; i++)
		if ((rc = validate_at(c, n->items, json_array_get(v, i), NULL,
				      i)) != STATUS_OK)
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
			best = up + 1 < best ? up + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* A property missing (got NULL) or not allowed: path names it, msg is
 * phrased from the object's side. */
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
	sb_str(&m, m.len > 0 ? ": " : "");
	c->segs[c->nseg++] = (struct seg){key, 0}; /* room: MAX_DEPTH + 2 */
	sb_init(&p, e->path, sizeof(e->path));
	path_build(c, &p);
	c->nseg--;
	sb_init(&x, e->expected, sizeof(e->expected));
	sb_init(&r, e->received, sizeof(e->received));
	sb_str(&m, got ? "unexpected property " : "missing required property ");
	sb_quoted(&m, key);
	sb_str(&x, got ? "no property " : "property ");
	sb_quoted(&x, key);
	for (size_t i = 0; got != NULL && i < n->nprops; i++)
		if ((d = edit_distance(key, n->prop_names[i])) < bestd) {
			bestd = d;
			best = n->prop_names[i];
		}
	if (got != NULL)
		sb_json(&r, got, SHOW_MAX);
	if (best != NULL) {
		sb_str(&m, ": did you mean ");
		sb_quoted(&m, best);
		sb_str(&m, "?");
	} else if (got != NULL) {
		sb_str(&m, n->nprops ? " (allowed: "
				     : " (this object takes no properties)");
		sb_str(&x, n->nprops ? " (allowed: " : "");
		for (size_t i = 0; i < n->nprops; i++) {
			sb_printf(&m, "%s%s", i ? ", " : "", n->prop_names[i]);
			sb_printf(&x, "%s%s", i ? ", " : "", n->prop_names[i]);
		}
		sb_str(&m, n->nprops ? ")" : "");
		sb_str(&x, n->nprops ? ")" : "");
	}
	sb_finish(&x, x.cap - 1);
	sb_finish(&m, m.cap - 1);
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
	for (size_t i = 0; i < n->nprops; i++)
		if ((sub = json_object_get(v, n->prop_names[i])) != NULL &&
		    (rc = validate_at(c, n->props[i], sub, n->prop_names[i],
				      0)) != STATUS_OK)
			return rc;
	if (!n->addl_false && n->addl == NULL)
		return STATUS_OK;
	json_object_foreach((json_t *)v, k, sub)
	{
		if (n->propset && json_object_get(n->propset, k))
			continue;
		if (n->addl_false)
			return fail_prop(c, n, k, sub);
		if ((rc = validate_at(c, n->addl, sub, k, 0)) != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}

/* An alternative that only requires properties, as anyOf/oneOf use to
 * say "one of these fields": 'an object with properties "a", "b"'. */
static void
sb_required(struct sb *b, const struct node *a)
{
	sb_str(b, a->nrequired > 1 ? "an object with properties "
				   : "an object with property ");
	for (size_t i = 0; i < a->nrequired; i++) {
		sb_str(b, i > 0 ? ", " : "");
		sb_quoted(b, a->required[i]);
	}
}

/* "expected any of (anyOf): (1) a string, (2) null, got 3" */
static int
fail_alternatives(struct vctx *c, const struct list *l, const json_t *v,
		  const char *how)
{
	struct jsonschema_error *e;
	struct sb x;

	if ((e = err_begin(c, &x)) == NULL)
		return STATUS_INVALID;
	sb_str(&x, how);
	for (size_t i = 0; i < l->n; i++) {
		const struct node *a = l->v[i];

		if (a->ref != NULL && a->types == 0 && a->konst == NULL)
			a = a->ref;
		sb_printf(&x, "%s(%zu) ", i ? ", " : "", i + 1);
		if (a->konst != NULL)
			sb_json(&x, a->konst, 40);
		else if (a->types != 0)
			sb_types(&x, a->types);
		else if (a->nrequired > 0)
			sb_required(&x, a);
		else
			sb_str(&x, "a value matching its schema");
	}
	return err_end(e, &x, v);
}

/* n on v for a verdict only; STATUS_LIMIT passes through. */
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

/* if/then/else (Core section 10.2.2): "if" only chooses, quietly; the
 * branch it chooses reports as usual, with a note on why it applies. */
static int
check_conditional(struct vctx *c, const struct node *n, const json_t *v)
{
	const struct node *branch;
	struct sb m;
	int rc = try_node(c, n->if_, v);

	if (rc != STATUS_OK && rc != STATUS_INVALID)
		return rc;
	branch = rc == STATUS_OK ? n->then_ : n->else_;
	if (branch == NULL)
		return STATUS_OK;
	rc = validate(c, branch, v);
	if (rc == STATUS_INVALID && c->out != NULL && !c->quiet) {
		m = (struct sb){c->out->msg, sizeof(c->out->msg),
				strlen(c->out->msg), false};
		sb_str(&m, branch == n->then_
				   ? " (by \"then\", as the value matches "
				     "\"if\")"
				   : " (by \"else\", as the value does not "
				     "match \"if\")");
		sb_finish(&m, m.cap - 1);
	}
	return rc;
}

static int
check_applicators(struct vctx *c, const struct node *n, const json_t *v)
{
	size_t i, matched = 0, first = 0;
	int rc = STATUS_OK;

	if (n->ref != NULL && (rc = validate(c, n->ref, v)) != STATUS_OK)
		return rc;
	for (i = 0; i < n->all_of.n; i++)
		if ((rc = validate(c, n->all_of.v[i], v)) != STATUS_OK)
			return rc;
	for (i = 0; i < n->any_of.n; i++)
		if ((rc = try_node(c, n->any_of.v[i], v)) != STATUS_INVALID)
			break;
	if (rc != STATUS_OK && rc != STATUS_INVALID)
		return rc;
	if (n->any_of.n > 0 && i == n->any_of.n)
		return fail_alternatives(c, &n->any_of, v, "any of (anyOf): ");
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
	if (n->not_ != NULL && (rc = try_node(c, n->not_, v)) == STATUS_OK)
		return fail(c, v,
			    "a value that does not match the \"not\" schema");
	if (rc != STATUS_OK && rc != STATUS_INVALID)
		return rc;
	return n->if_ != NULL ? check_conditional(c, n, v) : STATUS_OK;
}

static int
validate(struct vctx *c, const struct node *n, const json_t *v)
{
	struct jsonschema_error *e;
	struct sb x;
	unsigned t = type_of(v);
	size_t i, ne = json_array_size(n->enm);
	int rc;

	if (++c->steps > MAX_STEPS || c->calls >= MAX_CALLS)
		return fail_limit(c, "the schema is too complex to check this "
				     "value");
	if (n->never)
		return fail(c, v, "no value here (the schema is false)");
	if (n->types != 0 && !(n->types & t)) {
		if ((e = err_begin(c, &x)) != NULL)
			sb_types(&x, n->types);
		return e ? err_end(e, &x, v) : STATUS_INVALID;
	}
	if (n->konst != NULL && !same_value(n->konst, v)) {
		if ((e = err_begin(c, &x)) != NULL)
			sb_json(&x, n->konst, SHOW_MAX);
		return e ? err_end(e, &x, v) : STATUS_INVALID;
	}
	for (i = 0; i < ne && !same_value(json_array_get(n->enm, i), v); i++)
		;
	if (n->enm != NULL && i == ne) {
		if ((e = err_begin(c, &x)) != NULL)
			sb_str(&x, "one of ");
		for (i = 0; e != NULL && i < ne; i++) {
			sb_str(&x, i > 0 ? ", " : "");
			sb_json(&x, json_array_get(n->enm, i), 40);
		}
		return e ? err_end(e, &x, v) : STATUS_INVALID;
	}
	c->calls++;
	if (t & T_NUM)
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
	for (size_t i = 0; json_is_object(v) && i < n->nprops && !rc; i++) {
		const struct node *p = n->props[i];

		if ((sub = json_object_get(v, n->prop_names[i])) != NULL)
			rc = apply(c, p, sub, depth + 1);
		else if (p->dflt != NULL &&
			 json_object_set_new(v, n->prop_names[i],
					     json_deep_copy(p->dflt)) != 0)
			rc = STATUS_NOMEM;
	}
	if (json_is_object(v) && n->addl != NULL) {
		json_object_foreach(v, k, sub)
		{
			if ((!n->propset || !json_object_get(n->propset, k)) &&
			    !rc)
				rc = apply(c, n->addl, sub, depth + 1);
		}
	}
	for (size_t i = 0; json_is_array(v) && n->items != NULL && !rc &&
			   i < json_array_size(v);
	     i++)
		rc = apply(c, n->items, json_array_get(v, i), depth + 1);
	if (n->ref != NULL && !rc)
		rc = apply(c, n->ref, v, depth);
	for (size_t i = 0; i < n->all_of.n && !rc; i++)
		rc = apply(c, n->all_of.v[i], v, depth);
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

/*
 * toml.c - strict TOML 1.0 parser: one pass over the bytes into a tree.
 *
 * Recursive descent with line/column tracking.  The table rules of TOML 1.0
 * section "Table" (no redefinition, dotted keys and headers not mixed on
 * one table, inline tables and static arrays closed) are enforced through
 * flags on each table.  Dates and times are rejected on purpose.
 */
#include "conf/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"

/* Table flags: how a table came to exist decides what may extend it. */
enum {
	F_EXPLICIT = 1 << 0, /* defined by a [header] */
	F_DOTTED = 1 << 1,   /* created by a dotted key (a.b = 1) */
	F_INLINE = 1 << 2,   /* inline table: closed once written */
	F_AOT = 1 << 3,	     /* array made by [[header]] sections */
};

/* Tables up to this size are searched linearly; larger ones get a hash
 * index so a document of many keys stays linear to parse. */
#define TABLE_INDEX_MIN 16

/* Longest number token accepted: 64-bit values need far fewer digits; the
 * rest is room for underscores and long float fractions. */
#define NUMBER_MAX 128

struct entry {
	char *key;
	struct toml_value *val;
	int line, col;
};

struct toml_value {
	enum toml_type type;
	unsigned flags;
	int depth;
	int line, col;
	union {
		struct {
			struct entry *e;
			size_t n, cap;
			size_t *idx; /* slot -> entry index + 1, 0 = empty */
			size_t idx_cap;
		} t;
		struct {
			struct toml_value **v;
			size_t n, cap;
		} a;
		struct {
			char *s;
			size_t len;
		} s;
		int64_t i;
		double f;
		bool b;
	} u;
};

struct sbuf {
	char *d;
	size_t n, cap;
};

/* One part of a dotted key, with where it was written. */
struct keypart {
	char *s;
	int line, col;
};

struct key {
	struct keypart part[TOML_MAX_DEPTH];
	int n;
};

struct parser {
	const unsigned char *s;
	size_t len, pos;
	int line, col;
	struct toml_error *err;
	bool failed;
	struct toml_value *root;
	struct toml_value *cur; /* table that key/value lines go into */
	char cur_path[256];	/* its dotted name, for messages */
};

PRINTF_LIKE(5, 6)
static int
fail(struct parser *p, int line, int col, int status, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return status;
	p->failed = true;
	if (p->err) {
		p->err->line = line;
		p->err->column = col;
		va_start(ap, fmt);
		vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
		va_end(ap);
	}
	return status;
}

static int
fail_nomem(struct parser *p)
{
	return fail(p, p->line, p->col, STATUS_NOMEM, "out of memory");
}

static int
peek_at(const struct parser *p, size_t off)
{
	if (p->pos + off >= p->len)
		return -1;
	return p->s[p->pos + off];
}

static int
peek(const struct parser *p)
{
	return peek_at(p, 0);
}

static void
adv(struct parser *p)
{
	unsigned char c;

	if (p->pos >= p->len)
		return;
	c = p->s[p->pos++];
	if (c == '\n') {
		p->line++;
		p->col = 1;
	} else if ((c & 0xC0) != 0x80) {
		p->col++;
	}
}

static bool
is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Control characters TOML forbids in comments and strings (tab is fine). */
static bool
is_forbidden_ctrl(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7F;
}

/* Decodes the (already validated) UTF-8 sequence at s. */
static unsigned long
decode_utf8(const unsigned char *s, size_t avail)
{
	unsigned long cp = s[0];
	size_t n = 0, i;

	if (cp >= 0xF0)
		n = 3, cp &= 0x07;
	else if (cp >= 0xE0)
		n = 2, cp &= 0x0F;
	else if (cp >= 0xC0)
		n = 1, cp &= 0x1F;
	for (i = 1; i <= n && i < avail; i++)
		cp = (cp << 6) | (s[i] & 0x3F);
	return cp;
}

/* A short, safe description of the character at the cursor. */
static const char *
describe(const struct parser *p, char *buf, size_t len)
{
	int c = peek(p);

	if (c < 0)
		return "end of input";
	if (c == '\n')
		return "a newline";
	if (c == '\r')
		return "a carriage return";
	if (c > 0x20 && c < 0x7F)
		snprintf(buf, len, "'%c'", c);
	else if (c == ' ')
		snprintf(buf, len, "a space");
	else
		snprintf(buf, len, "U+%04lX",
			 decode_utf8(p->s + p->pos, p->len - p->pos));
	return buf;
}

/* ---- UTF-8 validation (whole document, before parsing) ----------------- */

static int
validate_utf8(struct parser *p)
{
	const unsigned char *s = p->s;
	size_t i = p->pos, n = p->len;
	int line = 1, col = 1;

	while (i < n) {
		unsigned char c = s[i];
		size_t need;
		unsigned long cp, min;

		if (c < 0x80) {
			i++;
			if (c == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			need = 1, cp = c & 0x1F, min = 0x80;
		else if (c >= 0xE0 && c <= 0xEF)
			need = 2, cp = c & 0x0F, min = 0x800;
		else if (c >= 0xF0 && c <= 0xF4)
			need = 3, cp = c & 0x07, min = 0x10000;
		else
			goto bad;
		if (n - i <= need)
			goto bad;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			goto bad;
		i += need + 1;
		col++;
	}
	return STATUS_OK;
bad:
	return fail(p, line, col, STATUS_INVALID,
		    "invalid UTF-8 byte 0x%02X: the document must be UTF-8",
		    s[i]);
}

/* ---- values ------------------------------------------------------------ */

static struct toml_value *
value_new(enum toml_type type, int depth, int line, int col)
{
	struct toml_value *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->type = type;
	v->depth = depth;
	v->line = line;
	v->col = col;
	return v;
}

void
toml_free(struct toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case TOML_TABLE:
		for (i = 0; i < v->u.t.n; i++) {
			free(v->u.t.e[i].key);
			toml_free(v->u.t.e[i].val);
		}
		free(v->u.t.e);
		free(v->u.t.idx);
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->u.a.n; i++)
			toml_free(v->u.a.v[i]);
		free(v->u.a.v);
		break;
	case TOML_STRING: free(v->u.s.s); break;
	default: break;
	}
	free(v);
}

static uint64_t
hash_key(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int
index_rebuild(struct toml_value *t, size_t cap)
{
	size_t *idx = calloc(cap, sizeof(*idx));
	size_t i;

	if (!idx)
		return STATUS_NOMEM;
	for (i = 0; i < t->u.t.n; i++) {
		size_t slot = hash_key(t->u.t.e[i].key) & (cap - 1);

		while (idx[slot])
			slot = (slot + 1) & (cap - 1);
		idx[slot] = i + 1;
	}
	free(t->u.t.idx);
	t->u.t.idx = idx;
	t->u.t.idx_cap = cap;
	return STATUS_OK;
}

static struct toml_value *
table_find(const struct toml_value *t, const char *key)
{
	size_t i;

	if (t->u.t.idx) {
		size_t mask = t->u.t.idx_cap - 1;
		size_t slot = hash_key(key) & mask;

		while (t->u.t.idx[slot]) {
			const struct entry *e = &t->u.t.e[t->u.t.idx[slot] - 1];

			if (strcmp(e->key, key) == 0)
				return e->val;
			slot = (slot + 1) & mask;
		}
		return NULL;
	}
	for (i = 0; i < t->u.t.n; i++)
		if (strcmp(t->u.t.e[i].key, key) == 0)
			return t->u.t.e[i].val;
	return NULL;
}

/* Appends key -> val.  Takes ownership of val, copies key.  The caller has
 * checked the key is not there yet. */
static int
table_add(struct toml_value *t, const char *key, struct toml_value *val,
	  int line, int col)
{
	char *k = NULL;

	if (t->u.t.n == t->u.t.cap) {
		size_t cap = t->u.t.cap ? t->u.t.cap * 2 : 4;
		struct entry *e = realloc(t->u.t.e, cap * sizeof(*e));

		if (!e)
			goto nomem;
		t->u.t.e = e;
		t->u.t.cap = cap;
	}
	k = strdup(key);
	if (!k)
		goto nomem;
	t->u.t.e[t->u.t.n++] = (struct entry){k, val, line, col};
	if (t->u.t.n >= TABLE_INDEX_MIN && t->u.t.n * 2 > t->u.t.idx_cap) {
		size_t cap = 32;

		while (cap < t->u.t.n * 4)
			cap *= 2;
		/* The entry is in; on failure the tree stays consistent
		 * but the caller gives up on the whole parse. */
		if (index_rebuild(t, cap) != STATUS_OK)
			return STATUS_NOMEM;
	} else if (t->u.t.idx) {
		size_t mask = t->u.t.idx_cap - 1;
		size_t slot = hash_key(k) & mask;

		while (t->u.t.idx[slot])
			slot = (slot + 1) & mask;
		t->u.t.idx[slot] = t->u.t.n;
	}
	return STATUS_OK;
nomem:
	toml_free(val);
	return STATUS_NOMEM;
}

static int
array_add(struct toml_value *a, struct toml_value *v)
{
	if (a->u.a.n == a->u.a.cap) {
		size_t cap = a->u.a.cap ? a->u.a.cap * 2 : 4;
		struct toml_value **nv = realloc(a->u.a.v, cap * sizeof(*nv));

		if (!nv) {
			toml_free(v);
			return STATUS_NOMEM;
		}
		a->u.a.v = nv;
		a->u.a.cap = cap;
	}
	a->u.a.v[a->u.a.n++] = v;
	return STATUS_OK;
}

static int
sbuf_add(struct sbuf *b, const void *data, size_t n)
{
	if (b->cap - b->n <= n) {
		size_t cap = b->cap ? b->cap : 32;
		char *d;

		while (cap - b->n <= n)
			cap *= 2;
		d = realloc(b->d, cap);
		if (!d)
			return STATUS_NOMEM;
		b->d = d;
		b->cap = cap;
	}
	memcpy(b->d + b->n, data, n);
	b->n += n;
	b->d[b->n] = '\0';
	return STATUS_OK;
}

static int
sbuf_addc(struct sbuf *b, char c)
{
	return sbuf_add(b, &c, 1);
}

/* ---- whitespace, comments, newlines ------------------------------------ */

static void
skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		adv(p);
}

static int
skip_comment(struct parser *p)
{
	int c;

	adv(p); /* '#' */
	while ((c = peek(p)) >= 0 && c != '\n') {
		if (c == '\r' && peek_at(p, 1) == '\n')
			break;
		if (is_forbidden_ctrl(c))
			return fail(p, p->line, p->col, STATUS_INVALID,
				    "control character U+%04X is not allowed "
				    "in a comment",
				    c);
		adv(p);
	}
	return STATUS_OK;
}

/* Consumes one newline (LF or CRLF) if the cursor is on one. */
static int
eat_newline(struct parser *p, bool *ate)
{
	*ate = false;
	if (peek(p) == '\n') {
		adv(p);
		*ate = true;
	} else if (peek(p) == '\r') {
		if (peek_at(p, 1) != '\n')
			return fail(p, p->line, p->col, STATUS_INVALID,
				    "carriage return without a newline: use "
				    "LF or CRLF line endings");
		adv(p);
		adv(p);
		*ate = true;
	}
	return STATUS_OK;
}

/* Whitespace, comments and newlines, as allowed between array items. */
static int
skip_ws_nl(struct parser *p)
{
	int rc;
	bool ate;

	for (;;) {
		skip_ws(p);
		if (peek(p) == '#') {
			rc = skip_comment(p);
			if (rc)
				return rc;
		}
		rc = eat_newline(p, &ate);
		if (rc || !ate)
			return rc;
	}
}

/* ---- strings ----------------------------------------------------------- */

static int
put_utf8(struct sbuf *b, unsigned long cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return sbuf_add(b, u, n);
}

/* Cursor on the backslash of an escape in a basic string. */
static int
parse_escape(struct parser *p, struct sbuf *b, bool multiline)
{
	int line = p->line, col = p->col, c, ndig, i, rc;
	unsigned long cp = 0;
	char tmp[48], name[32];

	adv(p);
	c = peek(p);
	switch (c) {
	case 'b': adv(p); return sbuf_addc(b, '\b');
	case 't': adv(p); return sbuf_addc(b, '\t');
	case 'n': adv(p); return sbuf_addc(b, '\n');
	case 'f': adv(p); return sbuf_addc(b, '\f');
	case 'r': adv(p); return sbuf_addc(b, '\r');
	case '"': adv(p); return sbuf_addc(b, '"');
	case '\\': adv(p); return sbuf_addc(b, '\\');
	case 'u': ndig = 4; break;
	case 'U': ndig = 8; break;
	default:
		if (multiline &&
		    (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
			bool ate;

			/* Line-ending backslash: trims the newline and all
			 * whitespace up to the next visible character. */
			skip_ws(p);
			rc = eat_newline(p, &ate);
			if (rc)
				return rc;
			if (!ate)
				return fail(p, line, col, STATUS_INVALID,
					    "a line-ending backslash must be "
					    "followed only by whitespace up to "
					    "the end of the line");
			for (;;) {
				skip_ws(p);
				rc = eat_newline(p, &ate);
				if (rc || !ate)
					return rc;
			}
		}
		if (c > 0x20 && c < 0x7F)
			snprintf(tmp, sizeof(tmp), "\\%c", c);
		else
			snprintf(tmp, sizeof(tmp), "before %s",
				 describe(p, name, sizeof(name)));
		return fail(p, line, col, STATUS_INVALID,
			    "invalid escape sequence %s: use \\b \\t \\n "
			    "\\f \\r \\\" \\\\ \\uXXXX or \\UXXXXXXXX",
			    tmp);
	}
	adv(p);
	for (i = 0; i < ndig; i++) {
		int h = hex_digit(peek(p));

		if (h < 0)
			return fail(p, line, col, STATUS_INVALID,
				    "invalid escape: \\%c needs exactly %d hex "
				    "digits",
				    ndig == 4 ? 'u' : 'U', ndig);
		cp = (cp << 4) | (unsigned long)h;
		adv(p);
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return fail(p, line, col, STATUS_INVALID,
			    "invalid escape: U+%04lX is not a unicode scalar "
			    "value",
			    cp);
	return put_utf8(b, cp);
}

/*
 * Cursor on the opening quote of any of the four string forms.  Fills b
 * (NUL-terminated).  allow_multi is false for keys.
 */
static int
parse_string(struct parser *p, struct sbuf *b, bool allow_multi)
{
	int line = p->line, col = p->col, q = peek(p), c, rc;
	bool basic = q == '"', multi = false;
	char tmp[32];

	if (peek_at(p, 1) == q && peek_at(p, 2) == q) {
		if (!allow_multi)
			return fail(p, line, col, STATUS_INVALID,
				    "a multi-line string cannot be a key");
		multi = true;
		adv(p);
		adv(p);
		adv(p);
		/* A newline right after the opening delimiter is trimmed. */
		if (peek(p) == '\n') {
			adv(p);
		} else if (peek(p) == '\r' && peek_at(p, 1) == '\n') {
			adv(p);
			adv(p);
		}
	} else {
		adv(p);
	}
	rc = sbuf_add(b, "", 0);
	if (rc)
		return fail_nomem(p);
	for (;;) {
		c = peek(p);
		if (c < 0)
			return fail(p, line, col, STATUS_INVALID,
				    "unterminated string: missing closing %s",
				    multi ? (basic ? "\"\"\"" : "'''")
					  : (basic ? "\"" : "'"));
		if (c == q) {
			int n = 0;

			if (!multi) {
				adv(p);
				return STATUS_OK;
			}
			while (peek_at(p, (size_t)n) == q)
				n++;
			if (n >= 3) {
				/* Up to two quotes may sit against the
				 * closing delimiter (TOML 1.0, "String"). */
				if (n > 5)
					return fail(
						p, p->line, p->col + 5,
						STATUS_INVALID,
						"too many quotes at the end "
						"of a multi-line string");
				for (int i = 0; i < n; i++)
					adv(p);
				if (sbuf_add(b, basic ? "\"\"" : "''",
					     (size_t)(n - 3)))
					return fail_nomem(p);
				return STATUS_OK;
			}
			for (int i = 0; i < n; i++)
				adv(p);
			if (sbuf_add(b, basic ? "\"\"" : "''", (size_t)n))
				return fail_nomem(p);
			continue;
		}
		if (c == '\\' && basic) {
			rc = parse_escape(p, b, multi);
			if (rc)
				return rc == STATUS_NOMEM ? fail_nomem(p) : rc;
			continue;
		}
		if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n')) {
			bool ate;

			if (!multi)
				return fail(p, p->line, p->col, STATUS_INVALID,
					    "newline in a single-line string: "
					    "close the string or use %s",
					    basic ? "\"\"\"" : "'''");
			rc = eat_newline(p, &ate);
			if (rc)
				return rc;
			if (sbuf_addc(b, '\n'))
				return fail_nomem(p);
			continue;
		}
		if (is_forbidden_ctrl(c))
			return fail(p, p->line, p->col, STATUS_INVALID,
				    "control character %s must be escaped in a "
				    "string",
				    describe(p, tmp, sizeof(tmp)));
		if (sbuf_addc(b, (char)c))
			return fail_nomem(p);
		adv(p);
	}
}

/* ---- keys -------------------------------------------------------------- */

static void
key_clear(struct key *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->part[i].s);
	k->n = 0;
}

static int
parse_key(struct parser *p, struct key *k)
{
	char tmp[32];
	int rc;

	k->n = 0;
	for (;;) {
		struct sbuf b = {0};
		int line, col, c;

		skip_ws(p);
		line = p->line;
		col = p->col;
		c = peek(p);
		if (k->n == TOML_MAX_DEPTH)
			return fail(p, line, col, STATUS_INVALID,
				    "key has more than %d parts: nesting too "
				    "deep",
				    TOML_MAX_DEPTH);
		if (c == '"' || c == '\'') {
			rc = parse_string(p, &b, false);
			if (rc) {
				free(b.d);
				return rc;
			}
			if (strlen(b.d) != b.n) {
				free(b.d);
				return fail(p, line, col, STATUS_INVALID,
					    "keys must not contain U+0000");
			}
		} else if (is_bare(c)) {
			while (is_bare(peek(p))) {
				if (sbuf_addc(&b, (char)peek(p))) {
					free(b.d);
					return fail_nomem(p);
				}
				adv(p);
			}
		} else {
			return fail(p, line, col, STATUS_INVALID,
				    "expected a key, found %s",
				    describe(p, tmp, sizeof(tmp)));
		}
		k->part[k->n++] = (struct keypart){b.d, line, col};
		skip_ws(p);
		if (peek(p) != '.')
			return STATUS_OK;
		adv(p);
	}
}

/* Appends a key part to a dotted name for messages, quoting odd keys. */
static void
path_add(char *buf, size_t len, const char *part)
{
	size_t n = strlen(buf);
	bool bare = *part != '\0';

	for (const char *s = part; *s; s++)
		if (!is_bare((unsigned char)*s))
			bare = false;
	if (n + 1 >= len)
		return;
	snprintf(buf + n, len - n, bare ? "%s%s" : "%s\"%s\"", n ? "." : "",
		 part);
}

static void
key_path(const struct key *k, int upto, const char *prefix, char *buf,
	 size_t len)
{
	snprintf(buf, len, "%s", prefix ? prefix : "");
	for (int i = 0; i < upto; i++)
		path_add(buf, len, k->part[i].s);
}

/* ---- numbers and other bare values ------------------------------------- */

/* Checks digits-with-underscores: each '_' between two digits of base. */
static bool
digits_ok(const char *s, size_t n, int base)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '_') {
			if (i == 0 || i + 1 == n || s[i + 1] == '_')
				return false;
			continue;
		}
		if (hex_digit((unsigned char)s[i]) < 0 ||
		    hex_digit((unsigned char)s[i]) >= base)
			return false;
	}
	return true;
}

static int
parse_integer(struct parser *p, const char *tok, size_t n, int line, int col,
	      int64_t *out)
{
	const char *s = tok;
	bool neg = false, sign = false;
	int base = 10;
	uint64_t acc = 0, limit;

	if (*s == '+' || *s == '-') {
		neg = *s == '-';
		sign = true;
		s++;
		n--;
	}
	if (n >= 2 && s[0] == '0' &&
	    (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
		base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
		if (sign)
			return fail(p, line, col, STATUS_INVALID,
				    "invalid integer \"%s\": hex, octal and "
				    "binary integers cannot have a sign",
				    tok);
		s += 2;
		n -= 2;
	} else if (n > 1 && s[0] == '0') {
		return fail(p, line, col, STATUS_INVALID,
			    "invalid integer \"%s\": leading zeros are not "
			    "allowed",
			    tok);
	}
	if (!digits_ok(s, n, base))
		return fail(p, line, col, STATUS_INVALID,
			    "invalid integer \"%s\": expected %s digits, with "
			    "'_' only between digits",
			    tok,
			    base == 16	? "hex"
			    : base == 8 ? "octal"
			    : base == 2 ? "binary"
					: "decimal");
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t d;

		if (s[i] == '_')
			continue;
		d = (uint64_t)hex_digit((unsigned char)s[i]);
		if (acc > (limit - d) / (uint64_t)base)
			return fail(p, line, col, STATUS_INVALID,
				    "integer \"%s\" is out of range: integers "
				    "are 64-bit signed",
				    tok);
		acc = acc * (uint64_t)base + d;
	}
	if (neg)
		*out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN
						      : -(int64_t)acc;
	else
		*out = (int64_t)acc;
	return STATUS_OK;
}

/* Float grammar of TOML 1.0: dec-int [frac] [exp], at least one of them. */
static int
parse_float(struct parser *p, const char *tok, size_t n, int line, int col,
	    double *out)
{
	char clean[NUMBER_MAX + 1], *end;
	const char *s = tok, *e = tok + n, *q;
	size_t k = 0;
	double v;

	if (*s == '+' || *s == '-')
		clean[k++] = *s++;
	if (strcmp(s, "inf") == 0 || strcmp(s, "nan") == 0) {
		v = s[0] == 'i' ? INFINITY : NAN;
		*out = tok[0] == '-' ? -v : v;
		return STATUS_OK;
	}
	/* integer part: "0" or no leading zero */
	for (q = s; q < e && (is_digit(*q) || *q == '_'); q++)
		;
	if (!digits_ok(s, (size_t)(q - s), 10))
		goto bad;
	if (q - s > 1 && s[0] == '0')
		return fail(p, line, col, STATUS_INVALID,
			    "invalid float \"%s\": leading zeros are not "
			    "allowed",
			    tok);
	if (q < e && *q == '.') {
		const char *f = ++q;

		for (; q < e && (is_digit(*q) || *q == '_'); q++)
			;
		if (!digits_ok(f, (size_t)(q - f), 10))
			goto bad;
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		const char *x;

		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		for (x = q; q < e && (is_digit(*q) || *q == '_'); q++)
			;
		if (!digits_ok(x, (size_t)(q - x), 10))
			goto bad;
	}
	if (q != e)
		goto bad;
	for (; s < e; s++)
		if (*s != '_')
			clean[k++] = *s;
	clean[k] = '\0';
	errno = 0;
	v = strtod(clean, &end);
	if (end != clean + k)
		goto bad;
	if (errno == ERANGE && isinf(v))
		return fail(p, line, col, STATUS_INVALID,
			    "float \"%s\" is out of range", tok);
	*out = v;
	return STATUS_OK;
bad:
	return fail(p, line, col, STATUS_INVALID,
		    "invalid float \"%s\": expected digits with an optional "
		    "fraction (.5) and exponent (e10), '_' only between digits",
		    tok);
}

/* true/false, integers, floats, inf/nan: one token of bare characters. */
static int
parse_bare_value(struct parser *p, int depth, struct toml_value **out)
{
	int line = p->line, col = p->col, rc;
	char tok[NUMBER_MAX + 1];
	const char *s;
	size_t n = 0, start = p->pos;
	struct toml_value *v = NULL;
	bool is_word;

	/* 1979-05-27 or 07:32:00: TOML dates/times, deliberately unsupported */
	if ((is_digit(peek(p)) && is_digit(peek_at(p, 1)) &&
	     ((is_digit(peek_at(p, 2)) && is_digit(peek_at(p, 3)) &&
	       peek_at(p, 4) == '-') ||
	      peek_at(p, 2) == ':')))
		return fail(p, line, col, STATUS_INVALID,
			    "dates and times are not supported: write the "
			    "value as a string");
	while (is_bare(peek(p)) || peek(p) == '.' || peek(p) == '+') {
		if (n < NUMBER_MAX)
			tok[n++] = (char)peek(p);
		adv(p);
	}
	tok[n] = '\0';
	if (n == 0) {
		char tmp[32];

		return fail(p, line, col, STATUS_INVALID,
			    "expected a value, found %s",
			    describe(p, tmp, sizeof(tmp)));
	}
	s = tok + (tok[0] == '+' || tok[0] == '-');
	is_word = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z');
	if (is_word && strcmp(s, "inf") != 0 && strcmp(s, "nan") != 0 &&
	    ((strcmp(tok, "true") != 0 && strcmp(tok, "false") != 0) ||
	     p->pos - start > n))
		return fail(p, line, col, STATUS_INVALID,
			    "expected a value, found \"%.32s\": strings must "
			    "be quoted",
			    tok);
	if (p->pos - start > n)
		return fail(p, line, col, STATUS_INVALID,
			    "number \"%.32s...\" is longer than %d characters",
			    tok, NUMBER_MAX);
	if (strcmp(tok, "true") == 0 || strcmp(tok, "false") == 0) {
		v = value_new(TOML_BOOL, depth, line, col);
		if (!v)
			return fail_nomem(p);
		v->u.b = tok[0] == 't';
		*out = v;
		return STATUS_OK;
	}
	if (strcmp(s, "inf") == 0 || strcmp(s, "nan") == 0 ||
	    (!(s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) &&
	     strpbrk(s, ".eE"))) {
		v = value_new(TOML_FLOAT, depth, line, col);
		if (!v)
			return fail_nomem(p);
		rc = parse_float(p, tok, n, line, col, &v->u.f);
	} else {
		v = value_new(TOML_INT, depth, line, col);
		if (!v)
			return fail_nomem(p);
		rc = parse_integer(p, tok, n, line, col, &v->u.i);
	}
	if (rc) {
		toml_free(v);
		return rc;
	}
	*out = v;
	return STATUS_OK;
}

/* ---- arrays, inline tables, values ------------------------------------- */

static int parse_value(struct parser *p, int depth, struct toml_value **out);
static int parse_keyval(struct parser *p, struct toml_value *tab,
			const char *tab_path);

static int
check_depth(struct parser *p, int depth, int line, int col)
{
	if (depth > TOML_MAX_DEPTH)
		return fail(p, line, col, STATUS_INVALID,
			    "nesting deeper than %d levels", TOML_MAX_DEPTH);
	return STATUS_OK;
}

static int
parse_array(struct parser *p, int depth, struct toml_value **out)
{
	int line = p->line, col = p->col, rc;
	struct toml_value *a = NULL, *item = NULL;
	char tmp[32];

	rc = check_depth(p, depth, line, col);
	if (rc)
		return rc;
	a = value_new(TOML_ARRAY, depth, line, col);
	if (!a)
		return fail_nomem(p);
	adv(p);
	for (;;) {
		rc = skip_ws_nl(p);
		if (rc)
			goto out;
		if (peek(p) == ']')
			break;
		if (peek(p) < 0) {
			rc = fail(p, p->line, p->col, STATUS_INVALID,
				  "unclosed array: expected ']' for the '[' "
				  "at line %d, column %d",
				  line, col);
			goto out;
		}
		rc = parse_value(p, depth + 1, &item);
		if (rc)
			goto out;
		rc = array_add(a, item);
		item = NULL;
		if (rc) {
			rc = fail_nomem(p);
			goto out;
		}
		rc = skip_ws_nl(p);
		if (rc)
			goto out;
		if (peek(p) == ',') {
			adv(p);
			continue;
		}
		if (peek(p) == ']')
			break;
		if (peek(p) < 0)
			rc = fail(p, p->line, p->col, STATUS_INVALID,
				  "unclosed array: expected ']' for the '[' "
				  "at line %d, column %d",
				  line, col);
		else
			rc = fail(p, p->line, p->col, STATUS_INVALID,
				  "expected ',' or ']' in array, found %s",
				  describe(p, tmp, sizeof(tmp)));
		goto out;
	}
	adv(p);
	*out = a;
	a = NULL;
out:
	toml_free(a);
	return rc;
}

static int
parse_inline_table(struct parser *p, int depth, struct toml_value **out)
{
	int line = p->line, col = p->col, rc;
	struct toml_value *t = NULL;
	char tmp[32];

	rc = check_depth(p, depth, line, col);
	if (rc)
		return rc;
	t = value_new(TOML_TABLE, depth, line, col);
	if (!t)
		return fail_nomem(p);
	t->flags = F_INLINE;
	adv(p);
	skip_ws(p);
	if (peek(p) == '}')
		goto done;
	for (;;) {
		rc = parse_keyval(p, t, "");
		if (rc)
			goto out;
		skip_ws(p);
		if (peek(p) == '}')
			break;
		if (peek(p) == ',') {
			adv(p);
			skip_ws(p);
			if (peek(p) == '}') {
				rc = fail(p, p->line, p->col, STATUS_INVALID,
					  "trailing comma in an inline table");
				goto out;
			}
			continue;
		}
		if (peek(p) == '\n' || peek(p) == '\r' || peek(p) < 0)
			rc = fail(
				p, p->line, p->col, STATUS_INVALID,
				"unclosed inline table: expected '}' on the "
				"same line (inline tables cannot span lines)");
		else
			rc = fail(p, p->line, p->col, STATUS_INVALID,
				  "expected ',' or '}' in inline table, found "
				  "%s",
				  describe(p, tmp, sizeof(tmp)));
		goto out;
	}
done:
	adv(p);
	*out = t;
	t = NULL;
	rc = STATUS_OK;
out:
	toml_free(t);
	return rc;
}

static int
parse_value(struct parser *p, int depth, struct toml_value **out)
{
	int line = p->line, col = p->col, c = peek(p), rc;
	struct toml_value *v;
	struct sbuf b = {0};
	char tmp[32];

	*out = NULL;
	if (c == '"' || c == '\'') {
		rc = parse_string(p, &b, true);
		if (rc) {
			free(b.d);
			return rc;
		}
		v = value_new(TOML_STRING, depth, line, col);
		if (!v) {
			free(b.d);
			return fail_nomem(p);
		}
		v->u.s.s = b.d;
		v->u.s.len = b.n;
		*out = v;
		return STATUS_OK;
	}
	if (c == '[')
		return parse_array(p, depth, out);
	if (c == '{')
		return parse_inline_table(p, depth, out);
	if (is_bare(c) || c == '+' || c == '.')
		return parse_bare_value(p, depth, out);
	return fail(p, line, col, STATUS_INVALID, "expected a value, found %s",
		    describe(p, tmp, sizeof(tmp)));
}

/* ---- key/value lines and table headers --------------------------------- */

/* "an integer", "a table": what a value is, for messages. */
static const char *
a_type(const struct toml_value *v)
{
	switch (v->type) {
	case TOML_TABLE:
		return v->flags & F_INLINE ? "an inline table" : "a table";
	case TOML_ARRAY:
		return v->flags & F_AOT ? "an array of tables" : "an array";
	case TOML_STRING: return "a string";
	case TOML_INT: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	}
	return "a value";
}

/*
 * Walks the dotted key k (all but its last part) from tab, creating tables
 * for missing parts.  Dotted keys may only descend into tables that dotted
 * keys created (TOML 1.0: a [table] or inline table is not extended that
 * way).  *dst is the table that receives the last part.
 */
static int
walk_dotted(struct parser *p, struct toml_value *tab, const char *tab_path,
	    const struct key *k, struct toml_value **dst)
{
	char path[256];

	for (int i = 0; i < k->n - 1; i++) {
		const struct keypart *kp = &k->part[i];
		struct toml_value *next = table_find(tab, kp->s);

		if (!next) {
			int rc = check_depth(p, tab->depth + 1, kp->line,
					     kp->col);

			if (rc)
				return rc;
			next = value_new(TOML_TABLE, tab->depth + 1, kp->line,
					 kp->col);
			if (!next)
				return fail_nomem(p);
			next->flags = F_DOTTED;
			if (table_add(tab, kp->s, next, kp->line, kp->col))
				return fail_nomem(p);
		} else if (next->type != TOML_TABLE) {
			key_path(k, i + 1, tab_path, path, sizeof(path));
			return fail(p, kp->line, kp->col, STATUS_INVALID,
				    "key %s is already %s, not a table", path,
				    a_type(next));
		} else if (!(next->flags & F_DOTTED) ||
			   (next->flags & F_INLINE)) {
			key_path(k, i + 1, tab_path, path, sizeof(path));
			return fail(p, kp->line, kp->col, STATUS_INVALID,
				    "cannot add keys to table %s with dotted "
				    "keys: it is defined %s",
				    path,
				    next->flags & F_INLINE
					    ? "inline"
					    : "by a [table] header");
		}
		tab = next;
	}
	*dst = tab;
	return STATUS_OK;
}

/* key = value, into tab (the current section or an inline table). */
static int
parse_keyval(struct parser *p, struct toml_value *tab, const char *tab_path)
{
	struct key k;
	struct toml_value *dst = NULL, *val = NULL;
	const struct keypart *last;
	char path[256], tmp[32];
	int rc;

	rc = parse_key(p, &k);
	if (rc)
		goto out;
	skip_ws(p);
	if (peek(p) != '=') {
		rc = fail(p, p->line, p->col, STATUS_INVALID,
			  "expected '=' after key, found %s",
			  describe(p, tmp, sizeof(tmp)));
		goto out;
	}
	adv(p);
	skip_ws(p);
	rc = walk_dotted(p, tab, tab_path, &k, &dst);
	if (rc)
		goto out;
	last = &k.part[k.n - 1];
	if (table_find(dst, last->s)) {
		key_path(&k, k.n, tab_path, path, sizeof(path));
		rc = fail(p, last->line, last->col, STATUS_INVALID,
			  "duplicate key %s", path);
		goto out;
	}
	rc = parse_value(p, dst->depth + 1, &val);
	if (rc)
		goto out;
	if (table_add(dst, last->s, val, last->line, last->col)) {
		rc = fail_nomem(p);
		goto out;
	}
out:
	key_clear(&k);
	return rc;
}

/* [a.b.c] or [[a.b.c]]: cursor on the first '['. */
static int
parse_header(struct parser *p)
{
	int line = p->line, col = p->col, rc;
	bool aot = peek_at(p, 1) == '[';
	struct toml_value *tab = p->root, *next;
	struct key k;
	const struct keypart *last;
	char path[256], part[256], tmp[32];

	k.n = 0;
	adv(p);
	if (aot)
		adv(p);
	rc = parse_key(p, &k);
	if (rc)
		goto out;
	skip_ws(p);
	if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
		rc = fail(p, p->line, p->col, STATUS_INVALID,
			  "expected '%s' to close the table header, found %s",
			  aot ? "]]" : "]", describe(p, tmp, sizeof(tmp)));
		goto out;
	}
	adv(p);
	if (aot)
		adv(p);
	key_path(&k, k.n, NULL, path, sizeof(path));
	/* Walk to the parent.  Headers may pass through any table but an
	 * inline one; an array of tables means its last element. */
	for (int i = 0; i < k.n - 1; i++) {
		const struct keypart *kp = &k.part[i];

		next = table_find(tab, kp->s);
		if (!next) {
			rc = check_depth(p, tab->depth + 1, kp->line, kp->col);
			if (rc)
				goto out;
			next = value_new(TOML_TABLE, tab->depth + 1, kp->line,
					 kp->col);
			if (!next ||
			    table_add(tab, kp->s, next, kp->line, kp->col)) {
				rc = fail_nomem(p);
				goto out;
			}
		} else if (next->type == TOML_ARRAY && (next->flags & F_AOT)) {
			next = next->u.a.v[next->u.a.n - 1];
		} else if (next->type != TOML_TABLE ||
			   (next->flags & F_INLINE)) {
			key_path(&k, i + 1, NULL, part, sizeof(part));
			rc = fail(p, kp->line, kp->col, STATUS_INVALID,
				  "cannot define [%s]: %s is %s", path, part,
				  next->type == TOML_TABLE ? "an inline table"
				  : next->type == TOML_ARRAY
					  ? "an array, not an array of tables"
					  : "not a table");
			goto out;
		}
		tab = next;
	}
	last = &k.part[k.n - 1];
	next = table_find(tab, last->s);
	rc = check_depth(p, tab->depth + 1, last->line, last->col);
	if (rc)
		goto out;
	if (aot) {
		struct toml_value *arr = next, *elem;

		if (!arr) {
			arr = value_new(TOML_ARRAY, tab->depth + 1, last->line,
					last->col);
			if (!arr || table_add(tab, last->s, arr, last->line,
					      last->col)) {
				rc = fail_nomem(p);
				goto out;
			}
			arr->flags = F_AOT;
		} else if (arr->type != TOML_ARRAY || !(arr->flags & F_AOT)) {
			rc = fail(p, last->line, last->col, STATUS_INVALID,
				  "cannot define [[%s]]: %s is already %s",
				  path, path,
				  arr->type == TOML_ARRAY ? "a static array"
							  : a_type(arr));
			goto out;
		}
		/* elements sit one level below the array */
		rc = check_depth(p, arr->depth + 1, last->line, last->col);
		if (rc)
			goto out;
		elem = value_new(TOML_TABLE, arr->depth + 1, last->line,
				 last->col);
		if (!elem || array_add(arr, elem)) {
			rc = fail_nomem(p);
			goto out;
		}
		elem->flags = F_EXPLICIT;
		p->cur = elem;
	} else if (!next) {
		next = value_new(TOML_TABLE, tab->depth + 1, last->line,
				 last->col);
		if (!next ||
		    table_add(tab, last->s, next, last->line, last->col)) {
			rc = fail_nomem(p);
			goto out;
		}
		next->flags = F_EXPLICIT;
		p->cur = next;
	} else if (next->type != TOML_TABLE) {
		rc = fail(p, line, col, STATUS_INVALID,
			  "cannot define table [%s]: %s is already %s", path,
			  path, a_type(next));
		goto out;
	} else if (next->flags & (F_EXPLICIT | F_DOTTED | F_INLINE)) {
		rc = fail(p, line, col, STATUS_INVALID,
			  "table [%s] is defined twice%s", path,
			  next->flags & F_EXPLICIT
				  ? ""
				  : " (it was already defined with dotted keys "
				    "or inline)");
		goto out;
	} else {
		next->flags |= F_EXPLICIT;
		next->line = last->line;
		next->col = last->col;
		p->cur = next;
	}
	snprintf(p->cur_path, sizeof(p->cur_path), "%s", path);
out:
	key_clear(&k);
	return rc;
}

static int
parse_document(struct parser *p)
{
	char tmp[32];
	int rc;
	bool ate;

	for (;;) {
		int c;

		skip_ws(p);
		c = peek(p);
		if (c < 0)
			return STATUS_OK;
		if (c == '[')
			rc = parse_header(p);
		else if (c != '#' && c != '\n' && c != '\r')
			rc = parse_keyval(p, p->cur, p->cur_path);
		else
			rc = STATUS_OK;
		if (rc)
			return rc;
		skip_ws(p);
		if (peek(p) == '#') {
			rc = skip_comment(p);
			if (rc)
				return rc;
		}
		if (peek(p) < 0)
			return STATUS_OK;
		rc = eat_newline(p, &ate);
		if (rc)
			return rc;
		if (!ate)
			return fail(p, p->line, p->col, STATUS_INVALID,
				    "expected a newline or a comment after %s, "
				    "found %s",
				    c == '[' ? "the table header" : "the value",
				    describe(p, tmp, sizeof(tmp)));
	}
}

int
toml_parse(const char *text, size_t len, size_t max_len,
	   struct toml_value **out, struct toml_error *err)
{
	struct parser p = {0};
	int rc;

	*out = NULL;
	p.s = (const unsigned char *)text;
	p.len = len;
	p.line = 1;
	p.col = 1;
	p.err = err;
	if (err)
		memset(err, 0, sizeof(*err));
	if (len > max_len)
		return fail(
			&p, 1, 1, STATUS_LIMIT,
			"document is %zu bytes, over the limit of %zu bytes",
			len, max_len);
	if (!text && len)
		return fail(&p, 1, 1, STATUS_INVALID, "no text to parse");
	/* A UTF-8 byte order mark is tolerated and skipped. */
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		p.pos = 3;
	rc = validate_utf8(&p);
	if (rc)
		return rc;
	p.root = value_new(TOML_TABLE, 0, 1, 1);
	if (!p.root)
		return fail_nomem(&p);
	p.root->flags = F_EXPLICIT;
	p.cur = p.root;
	rc = parse_document(&p);
	if (rc) {
		toml_free(p.root);
		return rc;
	}
	*out = p.root;
	return STATUS_OK;
}

/* ---- accessors --------------------------------------------------------- */

enum toml_type
toml_type(const struct toml_value *v)
{
	return v->type;
}

const char *
toml_type_name(enum toml_type type)
{
	switch (type) {
	case TOML_TABLE: return "table";
	case TOML_ARRAY: return "array";
	case TOML_STRING: return "string";
	case TOML_INT: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	}
	return "value";
}

int
toml_line(const struct toml_value *v)
{
	return v ? v->line : 0;
}

int
toml_column(const struct toml_value *v)
{
	return v ? v->col : 0;
}

const struct toml_value *
toml_table_get(const struct toml_value *t, const char *key)
{
	if (!t || t->type != TOML_TABLE || !key)
		return NULL;
	return table_find(t, key);
}

size_t
toml_table_count(const struct toml_value *t)
{
	return t && t->type == TOML_TABLE ? t->u.t.n : 0;
}

const char *
toml_table_key_at(const struct toml_value *t, size_t i)
{
	return i < toml_table_count(t) ? t->u.t.e[i].key : NULL;
}

const struct toml_value *
toml_table_value_at(const struct toml_value *t, size_t i)
{
	return i < toml_table_count(t) ? t->u.t.e[i].val : NULL;
}

void
toml_table_key_pos(const struct toml_value *t, size_t i, int *line, int *column)
{
	bool ok = i < toml_table_count(t);

	if (line)
		*line = ok ? t->u.t.e[i].line : 0;
	if (column)
		*column = ok ? t->u.t.e[i].col : 0;
}

size_t
toml_array_count(const struct toml_value *a)
{
	return a && a->type == TOML_ARRAY ? a->u.a.n : 0;
}

const struct toml_value *
toml_array_at(const struct toml_value *a, size_t i)
{
	return i < toml_array_count(a) ? a->u.a.v[i] : NULL;
}

bool
toml_array_is_tables(const struct toml_value *a)
{
	return a && a->type == TOML_ARRAY && (a->flags & F_AOT);
}

const char *
toml_string(const struct toml_value *v)
{
	return v && v->type == TOML_STRING ? v->u.s.s : NULL;
}

size_t
toml_string_len(const struct toml_value *v)
{
	return v && v->type == TOML_STRING ? v->u.s.len : 0;
}

int64_t
toml_int(const struct toml_value *v)
{
	return v && v->type == TOML_INT ? v->u.i : 0;
}

double
toml_float(const struct toml_value *v)
{
	return v && v->type == TOML_FLOAT ? v->u.f : 0.0;
}

bool
toml_bool(const struct toml_value *v)
{
	return v && v->type == TOML_BOOL ? v->u.b : false;
}

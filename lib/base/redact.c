/*
 * redact.c - key patterns as normalised substrings, value patterns as
 * compiled POSIX regexes; text is scanned once per regex and the matched
 * byte ranges are merged and replaced in one pass.
 */
#include "base/redact.h"

#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * E-mail addresses are what the regex
 *   [A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}
 * matches: a local part, '@', a domain with a dot and a top-level domain
 * of two letters or more (RFC 5322 allows more, but this is what shows up
 * in logs and prompts, and it leaves "a@b" in code alone).  They are found
 * by hand around each '@' rather than by regexec: glibc's regexec takes
 * quadratic time on a long run of local-part characters without an '@'
 * (5 s for 64 KiB of "aaa..."), and any span can carry such a value.
 */
static bool
is_local(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '%' ||
	       c == '+' || c == '-';
}

static bool
is_domain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static bool
is_letter(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

struct redact {
	char **keys; /* normalised: lower case, '-' as '_' */
	size_t nkeys;
	regex_t *res; /* value patterns */
	size_t nres;
	bool emails;
};

/* A matched byte range [so, eo). */
struct span {
	size_t so, eo;
};

static char
norm(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (char)(c - 'A' + 'a');
	return c == '-' ? '_' : c;
}

static bool
is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* How much of a pattern an error message shows: 100 bytes, cut at a UTF-8
 * character boundary. */
static int
shown_len(const char *s)
{
	size_t n = strlen(s);

	if (n <= 100)
		return (int)n;
	n = 100;
	while (n > 0 && is_cont((unsigned char)s[n]))
		n--;
	return (int)n;
}

static void
set_err(char *err, size_t errlen, const char *list, size_t i, const char *s,
	const char *why)
{
	if (errlen == 0)
		return;
	if (s != NULL)
		snprintf(err, errlen, "%s item %zu: %s \"%.*s%s\"", list, i + 1,
			 why, shown_len(s), s, strlen(s) > 100 ? "..." : "");
	else
		snprintf(err, errlen, "%s item %zu: %s", list, i + 1, why);
}

/*
 * A key pattern ending in "token" that matched only as the start of a
 * key's last word "tokens" (gen_ai.usage.input_tokens,
 * gen_ai.request.max_tokens): a count of tokens, not a secret.  p is the
 * pattern of length n, rest what follows the match in the key.
 */
static bool
token_count(const char *p, size_t n, const char *rest)
{
	return n >= 5 && memcmp(p + n - 5, "token", 5) == 0 &&
	       (rest[0] == 's' || rest[0] == 'S') && rest[1] == '\0';
}

void
redact_free(struct redact *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	free(r->keys);
	for (size_t i = 0; i < r->nres; i++)
		regfree(&r->res[i]);
	free(r->res);
	free(r);
}

/* Compiles re into r->res[r->nres]; on failure writes the reason. */
static int
compile(struct redact *r, const char *re, size_t item, char *err, size_t errlen)
{
	char why[256];
	int rc = regcomp(&r->res[r->nres], re, REG_EXTENDED | REG_ICASE);

	if (rc == REG_ESPACE)
		return STATUS_NOMEM;
	if (rc != 0) {
		regerror(rc, &r->res[r->nres], why, sizeof(why));
		if (why[0] >= 'A' && why[0] <= 'Z')
			why[0] = (char)(why[0] - 'A' + 'a');
		if (errlen > 0)
			snprintf(err, errlen,
				 "values item %zu: invalid regular expression "
				 "\"%.*s%s\": %s",
				 item + 1, shown_len(re), re,
				 strlen(re) > 100 ? "..." : "", why);
		/* regcomp frees what it made when it fails */
		return STATUS_INVALID;
	}
	r->nres++;
	return STATUS_OK;
}

int
redact_new(const char *const *keys, size_t nkeys, const char *const *values,
	   size_t nvalues, bool emails, struct redact **out, char *err,
	   size_t errlen)
{
	struct redact *r = NULL;
	int rc = STATUS_OK;

	*out = NULL;
	if (errlen > 0)
		err[0] = '\0';
	if (nkeys > REDACT_MAX_PATTERNS || nvalues > REDACT_MAX_PATTERNS) {
		if (errlen > 0)
			snprintf(err, errlen,
				 "%s: more than %d patterns; merge them",
				 nkeys > REDACT_MAX_PATTERNS ? "keys"
							     : "values",
				 REDACT_MAX_PATTERNS);
		return STATUS_LIMIT;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return STATUS_NOMEM;
	r->keys = calloc(nkeys + 1, sizeof(*r->keys));
	r->res = calloc(nvalues + 1, sizeof(*r->res));
	if (r->keys == NULL || r->res == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < nkeys; i++) {
		size_t len = keys[i] != NULL ? strlen(keys[i]) : 0;

		if (len == 0 || len > REDACT_MAX_PATTERN_LEN) {
			set_err(err, errlen, "keys", i,
				len == 0 ? NULL : keys[i],
				len == 0 ? "is empty: it would hide every "
					   "attribute; remove it"
					 : "is too long (at most 1024 bytes):");
			rc = STATUS_INVALID;
			goto out;
		}
		r->keys[i] = malloc(len + 1);
		if (r->keys[i] == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		r->nkeys++;
		for (size_t j = 0; j <= len; j++)
			r->keys[i][j] = norm(keys[i][j]);
	}
	for (size_t i = 0; i < nvalues; i++) {
		size_t len = values[i] != NULL ? strlen(values[i]) : 0;

		if (len == 0 || len > REDACT_MAX_PATTERN_LEN) {
			set_err(err, errlen, "values", i,
				len == 0 ? NULL : values[i],
				len == 0 ? "is empty: give a regular "
					   "expression or remove it"
					 : "is too long (at most 1024 bytes):");
			rc = STATUS_INVALID;
			goto out;
		}
		if ((rc = compile(r, values[i], i, err, errlen)) != STATUS_OK)
			goto out;
	}
	r->emails = emails;
	*out = r;
	r = NULL;
out:
	if (rc == STATUS_NOMEM && errlen > 0)
		snprintf(err, errlen, "out of memory");
	redact_free(r);
	return rc;
}

bool
redact_key(const struct redact *r, const char *key)
{
	if (r == NULL || key == NULL)
		return false;
	for (size_t k = 0; k < r->nkeys; k++) {
		const char *p = r->keys[k];

		for (const char *s = key; *s != '\0'; s++) {
			size_t j = 0;

			while (p[j] != '\0' && norm(s[j]) == p[j])
				j++;
			if (p[j] == '\0' && !token_count(p, j, s + j))
				return true;
			/* s[j] was NUL (norm keeps it) while p went on: no
			 * later start can fit either */
			if (s[j] == '\0')
				break;
		}
	}
	return false;
}

static int
by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->so < y->so ? -1 : x->so > y->so;
}

/* Matched ranges of one value, growing. */
struct spans {
	struct span *v;
	size_t n, cap;
};

/* Adds [so, eo) widened to whole UTF-8 characters of s[0..scan). */
static int
add_span(struct spans *m, const char *s, size_t scan, size_t so, size_t eo)
{
	struct span *grown;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 8;

		grown = realloc(m->v, cap * sizeof(*m->v));
		if (grown == NULL)
			return STATUS_NOMEM;
		m->v = grown;
		m->cap = cap;
	}
	while (so > 0 && is_cont((unsigned char)s[so]))
		so--;
	while (eo < scan && is_cont((unsigned char)s[eo]))
		eo++;
	m->v[m->n++] = (struct span){so, eo};
	return STATUS_OK;
}

/* Every e-mail address around an '@' of s[0..scan): linear, since a local
 * part stops at the previous '@' and a domain at the next one. */
static int
find_emails(struct spans *m, const char *s, size_t scan)
{
	const unsigned char *u = (const unsigned char *)s;
	const unsigned char *at = memchr(u, '@', scan);

	for (; at != NULL;
	     at = memchr(at + 1, '@', scan - (size_t)(at + 1 - u))) {
		size_t i = (size_t)(at - u), lo = i, hi = i + 1, end = 0;

		while (lo > 0 && is_local(u[lo - 1]))
			lo--;
		if (lo == i)
			continue;
		while (hi < scan && is_domain(u[hi]))
			hi++;
		/* the longest domain: the last dot (not first after '@')
		 * followed by two letters or more */
		for (size_t j = i + 2; j < hi; j++) {
			size_t k = j + 1;

			if (u[j] != '.')
				continue;
			while (k < hi && is_letter(u[k]))
				k++;
			if (k - (j + 1) >= 2)
				end = k;
			j = k - 1;
		}
		if (end > 0 && add_span(m, s, scan, lo, end) != STATUS_OK)
			return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* Every non-empty match of re in s[0..scan), leftmost-longest, each search
 * starting where the last match ended. */
static int
find_matches(struct spans *m, const regex_t *re, const char *s, size_t scan)
{
	size_t pos = 0;

	while (pos < scan) {
		/* REG_STARTEND: search s[rm_so..rm_eo), which may hold NULs
		 * and need not end the string; the text before rm_so still
		 * counts for '^', and offsets are from s */
		regmatch_t pm = {.rm_so = (regoff_t)pos,
				 .rm_eo = (regoff_t)scan};

		if (regexec(re, s, 1, &pm, REG_STARTEND) != 0)
			break;
		if (pm.rm_eo <= pm.rm_so) {
			/* an empty match hides nothing; step on */
			pos = (size_t)pm.rm_so + 1;
			continue;
		}
		if (add_span(m, s, scan, (size_t)pm.rm_so, (size_t)pm.rm_eo) !=
		    STATUS_OK)
			return STATUS_NOMEM;
		pos = m->v[m->n - 1].eo;
	}
	return STATUS_OK;
}

/*
 * Scans s[0..len) and returns the redacted copy in *out (NUL-terminated,
 * length *outlen), or *out = NULL when nothing changes.  STATUS_NOMEM.
 */
static int
redact_bytes(const struct redact *r, const char *s, size_t len, char **out,
	     size_t *outlen)
{
	struct spans m = {NULL, 0, 0};
	size_t scan = len, used = 0, w = 0;
	char *d = NULL;
	int rc = STATUS_OK;

	*out = NULL;
	*outlen = 0;
	if (r == NULL || s == NULL || (r->nres == 0 && !r->emails))
		return STATUS_OK;
	if (scan > REDACT_MAX_SCAN) {
		scan = REDACT_MAX_SCAN;
		while (scan > 0 && is_cont((unsigned char)s[scan]))
			scan--;
	}
	for (size_t i = 0; rc == STATUS_OK && i < r->nres; i++)
		rc = find_matches(&m, &r->res[i], s, scan);
	if (rc == STATUS_OK && r->emails)
		rc = find_emails(&m, s, scan);
	if (rc != STATUS_OK || (m.n == 0 && scan == len))
		goto out;
	if (m.n > 1)
		qsort(m.v, m.n, sizeof(*m.v), by_start);
	/* merge overlapping and touching ranges */
	for (size_t i = 0; i < m.n; i++) {
		if (w > 0 && m.v[i].so <= m.v[w - 1].eo) {
			if (m.v[i].eo > m.v[w - 1].eo)
				m.v[w - 1].eo = m.v[i].eo;
		} else {
			m.v[w++] = m.v[i];
		}
	}
	m.n = w;
	/* at most every byte kept, plus one mark per range and the tail */
	d = malloc(scan + (m.n + 1) * (sizeof(REDACT_MARK) - 1) + 1);
	if (d == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0, at = 0; i <= m.n; i++) {
		size_t upto = i < m.n ? m.v[i].so : scan;

		memcpy(d + used, s + at, upto - at);
		used += upto - at;
		if (i < m.n) {
			memcpy(d + used, REDACT_MARK, sizeof(REDACT_MARK) - 1);
			used += sizeof(REDACT_MARK) - 1;
			at = m.v[i].eo;
		}
	}
	if (scan < len && !(m.n > 0 && m.v[m.n - 1].eo == scan)) {
		memcpy(d + used, REDACT_MARK, sizeof(REDACT_MARK) - 1);
		used += sizeof(REDACT_MARK) - 1;
	}
	d[used] = '\0';
	*out = d;
	*outlen = used;
	d = NULL;
out:
	free(m.v);
	free(d);
	return rc;
}

char *
redact_text(const struct redact *r, const char *s)
{
	char *out = NULL;
	size_t len;

	if (r == NULL || s == NULL)
		return NULL;
	/* out of memory: fail closed if a small copy still fits */
	if (redact_bytes(r, s, strlen(s), &out, &len) != STATUS_OK)
		return strdup(REDACT_MARK);
	return out;
}

static int
redact_string(const struct redact *r, json_t *v)
{
	char *out = NULL;
	size_t len;
	int rc = redact_bytes(r, json_string_value(v), json_string_length(v),
			      &out, &len);

	if (rc == STATUS_OK && out != NULL &&
	    json_string_setn_nocheck(v, out, len) != 0)
		rc = STATUS_NOMEM;
	free(out);
	return rc;
}

int
redact_json(const struct redact *r, json_t *v)
{
	json_t **stack = NULL, **grown, *item;
	size_t n = 0, cap = 0;
	int rc = STATUS_OK;

	if (r == NULL || v == NULL)
		return STATUS_OK;
	if (json_is_string(v))
		return redact_string(r, v);
	if (!json_is_object(v) && !json_is_array(v))
		return STATUS_OK;
	/* containers still to visit (borrowed: the tree holds them) */
	cap = 16;
	stack = malloc(cap * sizeof(*stack));
	if (stack == NULL)
		return STATUS_NOMEM;
	stack[n++] = v;
	while (n > 0) {
		json_t *c = stack[--n];
		void *it = json_is_object(c) ? json_object_iter(c) : NULL;
		size_t i = 0;

		for (;;) {
			if (json_is_object(c)) {
				if (it == NULL)
					break;
				item = json_object_iter_value(it);
				if (redact_key(r, json_object_iter_key(it))) {
					if (json_object_iter_set_new(
						    c, it,
						    json_string(REDACT_MARK)) !=
					    0) {
						rc = STATUS_NOMEM;
						goto out;
					}
					it = json_object_iter_next(c, it);
					continue;
				}
				it = json_object_iter_next(c, it);
			} else {
				if (i >= json_array_size(c))
					break;
				item = json_array_get(c, i++);
			}
			if (json_is_string(item)) {
				if ((rc = redact_string(r, item)) != STATUS_OK)
					goto out;
			} else if (json_is_object(item) ||
				   json_is_array(item)) {
				if (n == cap) {
					if (cap >
					    SIZE_MAX / 2 / sizeof(*stack)) {
						rc = STATUS_NOMEM;
						goto out;
					}
					cap *= 2;
					grown = realloc(stack,
							cap * sizeof(*stack));
					if (grown == NULL) {
						rc = STATUS_NOMEM;
						goto out;
					}
					stack = grown;
				}
				stack[n++] = item;
			}
		}
	}
out:
	free(stack);
	return rc;
}

const char *
redact_keep(struct redact_kept *k, const struct redact *r, const char *s)
{
	char *x;

	if (s == NULL || (x = redact_text(r, s)) == NULL)
		return s;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		char **v = realloc(k->v, cap * sizeof(*v));

		if (v == NULL) {
			free(x);
			return "[REDACTED]";
		}
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = x;
	return x;
}

void
redact_kept_free(struct redact_kept *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
	k->v = NULL;
	k->n = k->cap = 0;
}

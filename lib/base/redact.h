/*
 * redact.h - hides secrets in what the tools show from spans: values under
 * attribute keys that look sensitive, and matches of configured patterns
 * (and e-mail addresses) inside string values, become "[REDACTED]".
 *
 * What a key match is: a pattern matches a key when it occurs anywhere in
 * it, ignoring ASCII case and treating '-' and '_' alike, so "api_key"
 * hides "X-Api-Key", "API_KEY" and "openai.api_key", and "token" hides
 * "access_token".  Substrings on purpose: hiding too much beats leaking.
 * One exception: a pattern ending in "token" that matches only as the
 * start of the key's last word "tokens" (gen_ai.usage.input_tokens,
 * gen_ai.request.max_tokens) names a count of tokens, which is shown.
 * The price of the exception: a plural such as "access_tokens" is shown
 * too.
 *
 * Value patterns are POSIX extended regular expressions, matched without
 * regard to case (REG_EXTENDED | REG_ICASE) on the bytes of a value; a
 * match is widened to whole UTF-8 characters so the result stays valid
 * UTF-8.  Overlapping or touching matches become one "[REDACTED]".
 * E-mail addresses are what
 *   [A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}
 * matches, found in linear time without regexec.  A configured regex costs
 * what glibc's regexec costs: up to quadratic in the value's length when
 * a long run of text starts a match that then fails (an unanchored
 * "[a-z]+@x" on 64 KiB of letters takes seconds), so prefer patterns that
 * begin with literal text ("sk-[A-Za-z0-9]{20,}").
 *
 * Bounded work: only the first REDACT_MAX_SCAN bytes of a value are
 * searched; a longer value is cut there and its unscanned rest is
 * replaced by one "[REDACTED]" (so a secret past the limit never shows).
 *
 * A struct redact is immutable after redact_new and may be used from any
 * number of threads at once (regexec is thread-safe).
 */
#ifndef SEXTANT_REDACT_H
#define SEXTANT_REDACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* What replaces a hidden value or match. */
#define REDACT_MARK "[REDACTED]"
/* Bytes of one value searched for value patterns: tool answers are a few
 * tens of KiB, and regexec's time grows with the input. */
#define REDACT_MAX_SCAN (64 * 1024)
/* Patterns of each kind, and the length of one: a configuration, not data;
 * every value is matched against every pattern. */
#define REDACT_MAX_PATTERNS    256
#define REDACT_MAX_PATTERN_LEN 1024

struct redact;

/*
 * keys: case-insensitive substrings of attribute keys whose values are
 * hidden (see above); values: POSIX extended regexes (case-insensitive)
 * whose matches inside string values are hidden; emails: also hide e-mail
 * addresses in values.  Both lists are copied (NULL with a count of 0 is
 * fine).  STATUS_INVALID for an empty key or value pattern, one longer
 * than REDACT_MAX_PATTERN_LEN, or a regex that does not compile;
 * STATUS_LIMIT for more than REDACT_MAX_PATTERNS of a kind; err (if
 * errlen > 0) then names the list and 1-based item and says why, e.g.
 * "values item 2 \"(a\": invalid regular expression: unmatched ( or \\(".
 * STATUS_NOMEM.  *out is NULL on failure; free with redact_free.
 */
int redact_new(const char *const *keys, size_t nkeys, const char *const *values,
	       size_t nvalues, bool emails, struct redact **out, char *err,
	       size_t errlen) WUR;

/* Accepts NULL. */
void redact_free(struct redact *r);

/* True when key matches one of the key patterns.  NULL r or key: false. */
bool redact_key(const struct redact *r, const char *key);

/*
 * A copy of s with every match of the value patterns replaced by
 * "[REDACTED]" (and cut past REDACT_MAX_SCAN as said above); caller frees
 * with free().  NULL when nothing changed (no match and not too long, no
 * value patterns at all, NULL r or s), so the fast path allocates nothing.
 * Out of memory it fails closed: a copy of "[REDACTED]" in place of the
 * whole value, or NULL only if even that cannot be allocated (redact_json
 * reports ENOMEM instead).
 */
char *redact_text(const struct redact *r, const char *s);

/*
 * In place, iteratively (any depth, no recursion): object members whose
 * key matches get the string "[REDACTED]" whatever their value (objects,
 * arrays and numbers too); every other string anywhere in v, including v
 * itself and strings holding NUL bytes, gets redact_text.  Strings are
 * changed in place, so a string shared with another tree changes there
 * too.  NULL r or v: nothing to do.  STATUS_NOMEM (v is then partly
 * redacted: do not show it).
 */
int redact_json(const struct redact *r, json_t *v) WUR;

/*
 * For answers built from borrowed strings (rows of a PGresult): the
 * redacted copies made for one answer, freed together.  redact_keep
 * returns s itself when nothing matched, else a copy owned by k (the
 * string "[REDACTED]" when memory runs out: never the original).  Start
 * from {0}; redact_kept_free accepts an empty one.  Not thread-safe.
 */
struct redact_kept {
	char **v;
	size_t n, cap;
};
const char *redact_keep(struct redact_kept *k, const struct redact *r,
			const char *s);
void redact_kept_free(struct redact_kept *k);

#endif

/*
 * test_redact.c - unit tests for lib/base/redact: every default key pattern and
 * what a key match is, value regexes and e-mail addresses inside text,
 * UTF-8 safety, the scan limit, JSON trees of any depth, construction
 * errors, and a NULL redactor.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/redact.h"
#include "conf/config.h"

/* The defaults of [redact] keys (lib/conf/config.c). */
static const char *const default_keys[] = {
	"authorization", "password", "passwd", "secret",
	"token",	 "api_key",  "cookie", "set-cookie",
};
#define NDEFAULT (sizeof(default_keys) / sizeof(default_keys[0]))

static struct redact *
make(const char *const *values, size_t nvalues, bool emails)
{
	struct redact *r = NULL;
	char err[256];

	if (redact_new(default_keys, NDEFAULT, values, nvalues, emails, &r, err,
		       sizeof(err)) != STATUS_OK)
		fail_msg("redact_new: %s", err);
	assert_string_equal(err, "");
	return r;
}

/* ---- keys --------------------------------------------------------------- */

static const struct {
	const char *key;
	bool hidden;
} key_cases[] = {
	/* each default, as is */
	{"authorization", true},
	{"password", true},
	{"passwd", true},
	{"secret", true},
	{"token", true},
	{"api_key", true},
	{"cookie", true},
	{"set-cookie", true},
	/* case does not matter */
	{"Authorization", true},
	{"PASSWORD", true},
	{"Set-Cookie", true},
	/* anywhere in the key */
	{"http.request.header.authorization", true},
	{"db.user.password", true},
	{"client_secret", true},
	{"access_token", true},
	{"openai.api_key", true},
	{"http.response.header.set-cookie", true},
	/* '-' and '_' alike, either side */
	{"X-Api-Key", true},
	{"X-Api_Key", true},
	{"API_KEY", true},
	{"api-key", true},
	{"set_cookie", true},
	/* counts of tokens are no secret (a last word "tokens") */
	{"gen_ai.usage.input_tokens", false},
	{"gen_ai.request.max_tokens", false},
	{"llm.usage.total_tokens", false},
	/* "token" inside a word, or a later word: still a secret */
	{"tokens_list", true},
	{"auth_token_s", true},
	/* not a match: other separators, pieces, unrelated keys */
	{"apikey", false},
	{"api.key", false},
	{"pass", false},
	{"tok", false},
	{"secre", false},
	{"http.method", false},
	{"service.name", false},
	{"", false},
};

static void
test_keys(void **state)
{
	struct redact *r = make(NULL, 0, true);

	(void)state;
	for (size_t i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++)
		if (redact_key(r, key_cases[i].key) != key_cases[i].hidden)
			fail_msg("key \"%s\": expected %s", key_cases[i].key,
				 key_cases[i].hidden ? "hidden" : "shown");
	assert_false(redact_key(r, NULL));
	redact_free(r);
}

/* A pattern written with '-' or upper case matches the same keys. */
static void
test_key_pattern_normalised(void **state)
{
	const char *const keys[] = {"X-Secret-Header"};
	struct redact *r = NULL;
	char err[128];

	(void)state;
	assert_int_equal(
		redact_new(keys, 1, NULL, 0, false, &r, err, sizeof(err)),
		STATUS_OK);
	assert_true(redact_key(r, "x_secret_header"));
	assert_true(redact_key(r, "http.X-SECRET-HEADER"));
	assert_false(redact_key(r, "x-secret"));
	/* keys only: text is never touched */
	assert_null(redact_text(r, "bob@example.com"));
	redact_free(r);
}

/* ---- text --------------------------------------------------------------- */

static const char *const value_patterns[] = {
	"sk-[a-z0-9]{8,}",
	"[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{4}",
	"^internal",
	"caf.",
	"q*",
};

static const struct {
	const char *in;
	const char *want; /* NULL: unchanged (redact_text returns NULL) */
} text_cases[] = {
	{"nothing to hide here", NULL},
	{"", NULL},
	/* e-mail addresses */
	{"mail bob@example.com now", "mail [REDACTED] now"},
	{"Bob.Smith+tag@Mail.Example.ORG", "[REDACTED]"},
	{"<a_b%c-d@sub-1.example.co.uk>", "<[REDACTED]>"},
	{"two: a@x.io, b@y.io", "two: [REDACTED], [REDACTED]"},
	{"not an address: a@b, @example.com, a@example.c", NULL},
	{"user@host.c0m", NULL},
	{"user@host.com1", "[REDACTED]1"},
	{"x@..com", "[REDACTED]"},
	/* the longest domain, and addresses sharing characters */
	{"to a@b.example.org.", "to [REDACTED]."},
	{"a@b.co@c.org", "[REDACTED]"},
	{"a@b.co.x@c.org z", "[REDACTED] z"},
	/* configured regexes, case-insensitively */
	{"key sk-abcdef123456 end", "key [REDACTED] end"},
	{"key SK-ABCDEF123456 end", "key [REDACTED] end"},
	{"sk-short", NULL},
	{"card 4111-1111-1111-1111.", "card [REDACTED]."},
	/* anchors keep their meaning after the first match */
	{"internal internal", "[REDACTED] internal"},
	{"not internal", NULL},
	/* matches are widened to whole UTF-8 characters */
	{"caf\xc3\xa9 au lait", "[REDACTED] au lait"},
	{"un caf\xe2\x82\xac", "un [REDACTED]"},
	/* empty matches hide nothing; non-empty ones do */
	{"aqqb", "a[REDACTED]b"},
	/* overlapping and touching matches become one mark */
	{"sk-12345678@example.com", "[REDACTED]"},
	{"qqsk-abcdefghij", "[REDACTED]"},
};

static void
test_text(void **state)
{
	struct redact *r =
		make(value_patterns,
		     sizeof(value_patterns) / sizeof(value_patterns[0]), true);

	(void)state;
	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]);
	     i++) {
		char *got = redact_text(r, text_cases[i].in);

		if (text_cases[i].want == NULL && got != NULL)
			fail_msg("\"%s\": expected no change, got \"%s\"",
				 text_cases[i].in, got);
		if (text_cases[i].want != NULL &&
		    (got == NULL || strcmp(got, text_cases[i].want) != 0))
			fail_msg("\"%s\": expected \"%s\", got \"%s\"",
				 text_cases[i].in, text_cases[i].want,
				 got ? got : "(unchanged)");
		free(got);
	}
	assert_null(redact_text(r, NULL));
	redact_free(r);
}

/* emails = false leaves addresses alone; no value pattern at all leaves
 * every text alone, however long. */
static void
test_emails_off(void **state)
{
	const char *const v[] = {"hunter2"};
	struct redact *r = NULL;
	char err[128], *got, *big;

	(void)state;
	assert_int_equal(redact_new(NULL, 0, v, 1, false, &r, err, sizeof(err)),
			 STATUS_OK);
	assert_null(redact_text(r, "bob@example.com"));
	got = redact_text(r, "pw HUNTER2 for bob@example.com");
	assert_non_null(got);
	assert_string_equal(got, "pw [REDACTED] for bob@example.com");
	free(got);
	redact_free(r);

	assert_int_equal(
		redact_new(NULL, 0, NULL, 0, false, &r, err, sizeof(err)),
		STATUS_OK);
	big = malloc(REDACT_MAX_SCAN * 2 + 1);
	assert_non_null(big);
	memset(big, 'a', REDACT_MAX_SCAN * 2);
	big[REDACT_MAX_SCAN * 2] = '\0';
	assert_null(redact_text(r, big));
	assert_false(redact_key(r, "password"));
	free(big);
	redact_free(r);
}

/* Past REDACT_MAX_SCAN the value is cut and its rest hidden, even when the
 * scanned part matched nothing; the cut never splits a character. */
static void
test_scan_limit(void **state)
{
	struct redact *r = make(NULL, 0, true);
	size_t n = REDACT_MAX_SCAN + 1000;
	char *s = malloc(n + 1), *got;
	json_t *j;

	(void)state;
	assert_non_null(s);
	memset(s, 'a', n);
	memcpy(s + n - 15, "bob@example.com", 15);
	s[n] = '\0';
	got = redact_text(r, s);
	assert_non_null(got);
	assert_int_equal(strlen(got), REDACT_MAX_SCAN + strlen(REDACT_MARK));
	assert_null(strchr(got, '@'));
	assert_string_equal(got + REDACT_MAX_SCAN, REDACT_MARK);
	free(got);

	/* exactly at the limit: scanned whole, nothing to hide */
	s[REDACT_MAX_SCAN] = '\0';
	assert_null(redact_text(r, s));

	/* a match ending at the cut and the hidden rest make one mark */
	memcpy(s + REDACT_MAX_SCAN - 16, " bob@example.com", 16);
	s[REDACT_MAX_SCAN] = 'z';
	got = redact_text(r, s);
	assert_non_null(got);
	assert_int_equal(strlen(got), REDACT_MAX_SCAN - 15 + 10);
	free(got);

	/* three-byte characters: 65536 is not a boundary, 65535 is */
	for (size_t i = 0; i + 3 <= n; i += 3)
		memcpy(s + i, "\xe2\x82\xac", 3);
	s[n - n % 3] = '\0';
	got = redact_text(r, s);
	assert_non_null(got);
	assert_int_equal(strlen(got), REDACT_MAX_SCAN - 1 + 10);
	j = json_string(got); /* NULL if the cut broke UTF-8 */
	assert_non_null(j);
	json_decref(j);
	free(got);
	free(s);
	redact_free(r);
}

/* E-mail search is linear: long runs of address characters, with and
 * without '@', take milliseconds, not the seconds regexec would. */
static void
test_linear(void **state)
{
	struct redact *r = make(NULL, 0, true);
	char *s = malloc(REDACT_MAX_SCAN + 1), *got;
	clock_t t0 = clock();

	(void)state;
	assert_non_null(s);
	for (int pass = 0; pass < 3; pass++) {
		memset(s, 'a', REDACT_MAX_SCAN);
		s[REDACT_MAX_SCAN] = '\0';
		if (pass == 1)
			s[REDACT_MAX_SCAN / 2] = '@';
		for (size_t i = 0; pass == 2 && i < REDACT_MAX_SCAN; i += 7)
			s[i] = i % 2 ? '@' : '.';
		got = redact_text(r, s);
		if (pass == 0)
			assert_null(got);
		free(got);
	}
	assert_true(clock() - t0 < CLOCKS_PER_SEC);
	free(s);
	redact_free(r);
}

/* ---- JSON --------------------------------------------------------------- */

static void
assert_json(json_t *got, const char *want_text)
{
	json_t *want = json_loads(want_text, JSON_DECODE_ANY, NULL);
	char *a, *b;

	assert_non_null(want);
	if (!json_equal(got, want)) {
		a = json_dumps(got, JSON_SORT_KEYS);
		b = json_dumps(want, JSON_SORT_KEYS);
		fail_msg("got %s\nwant %s", a, b);
	}
	json_decref(want);
}

static const struct {
	const char *in, *want;
} json_cases[] = {
	{"{\"http.method\": \"GET\", \"Authorization\": \"Bearer abc\"}",
	 "{\"http.method\": \"GET\", \"Authorization\": \"[REDACTED]\"}"},
	/* nested objects, arrays, arrays of arrays */
	{"{\"nested\": {\"deep\": {\"user.password\": \"x\", "
	 "\"note\": \"mail bob@example.com\"}}, "
	 "\"list\": [\"a@b.io\", {\"X-Api-Key\": \"k\"}, [[\"c@d.io\"]], 5, "
	 "null, true, 1.5]}",
	 "{\"nested\": {\"deep\": {\"user.password\": \"[REDACTED]\", "
	 "\"note\": \"mail [REDACTED]\"}}, "
	 "\"list\": [\"[REDACTED]\", {\"X-Api-Key\": \"[REDACTED]\"}, "
	 "[[\"[REDACTED]\"]], 5, null, true, 1.5]}"},
	/* any value under a matching key, not only strings */
	{"{\"pin_password\": 1234, \"token\": 1.5, \"cookie\": null, "
	 "\"secret\": true, \"passwd\": {\"a\": 1}, \"api_key\": [1, 2], "
	 "\"set-cookie\": \"\"}",
	 "{\"pin_password\": \"[REDACTED]\", \"token\": \"[REDACTED]\", "
	 "\"cookie\": \"[REDACTED]\", \"secret\": \"[REDACTED]\", "
	 "\"passwd\": \"[REDACTED]\", \"api_key\": \"[REDACTED]\", "
	 "\"set-cookie\": \"[REDACTED]\"}"},
	/* keys are only keys: a string value equal to a pattern stays */
	{"[\"password\", \"token\", {\"name\": \"authorization\"}]",
	 "[\"password\", \"token\", {\"name\": \"authorization\"}]"},
	{"{}", "{}"},
	{"[]", "[]"},
	{"42", "42"},
};

static void
test_json(void **state)
{
	struct redact *r = make(NULL, 0, true);

	(void)state;
	for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]);
	     i++) {
		json_t *v = json_loads(json_cases[i].in, JSON_DECODE_ANY, NULL);

		assert_non_null(v);
		assert_int_equal(redact_json(r, v), STATUS_OK);
		assert_json(v, json_cases[i].want);
		json_decref(v);
	}
	redact_free(r);
}

/* A string at the root, and strings holding NUL bytes (scanned whole). */
static void
test_json_strings(void **state)
{
	struct redact *r = make(NULL, 0, true);
	json_t *s = json_string("to bob@example.com");
	json_t *z = json_stringn("a\0bob@example.com", 17);

	(void)state;
	assert_int_equal(redact_json(r, s), STATUS_OK);
	assert_string_equal(json_string_value(s), "to [REDACTED]");
	assert_int_equal(redact_json(r, z), STATUS_OK);
	assert_int_equal(json_string_length(z), 12);
	assert_memory_equal(json_string_value(z), "a\0[REDACTED]", 12);
	json_decref(s);
	json_decref(z);
	redact_free(r);
}

/* Far deeper than any recursion would survive under ASan. */
static void
test_json_deep(void **state)
{
	enum {
		DEPTH = 200000
	};
	struct redact *r = make(NULL, 0, true);
	json_t **level = calloc(DEPTH, sizeof(*level)), *inner;

	(void)state;
	assert_non_null(level);
	for (size_t i = 0; i < DEPTH; i++) {
		level[i] = i % 2 ? json_array() : json_object();
		assert_non_null(level[i]);
		if (i > 0) {
			if (json_is_array(level[i - 1]))
				assert_int_equal(
					json_array_append_new(level[i - 1],
							      level[i]),
					0);
			else
				assert_int_equal(
					json_object_set_new(level[i - 1], "k",
							    level[i]),
					0);
		}
	}
	/* DEPTH is even: the innermost is an array */
	assert_int_equal(json_array_append_new(level[DEPTH - 1],
					       json_string("x@example.com")),
			 0);
	assert_int_equal(json_object_set_new(level[DEPTH / 2], "token",
					     json_string("t")),
			 0);
	assert_int_equal(redact_json(r, level[0]), STATUS_OK);
	inner = json_array_get(level[DEPTH - 1], 0);
	assert_string_equal(json_string_value(inner), "[REDACTED]");
	assert_string_equal(
		json_string_value(json_object_get(level[DEPTH / 2], "token")),
		"[REDACTED]");
	/* jansson frees recursively: take the tree apart from the inside */
	for (size_t i = DEPTH; i-- > 0;) {
		if (json_is_array(level[i]))
			json_array_clear(level[i]);
		else
			json_object_clear(level[i]);
	}
	json_decref(level[0]);
	free(level);
	redact_free(r);
}

/* ---- construction and NULL ---------------------------------------------- */

static void
test_new_errors(void **state)
{
	static const char *const empty[] = {""};
	static const char *const bad[] = {"ok", "(a"};
	static const char *const bad2[] = {"a{2,1}"};
	static const char *const many[REDACT_MAX_PATTERNS + 1] = {"a"};
	static const struct {
		const char *const *keys;
		size_t nkeys;
		const char *const *values;
		size_t nvalues;
		int rc;
		const char *msg; /* prefix of err */
	} cases[] = {
		{empty, 1, NULL, 0, STATUS_INVALID, "keys item 1: is empty"},
		{NULL, 0, empty, 1, STATUS_INVALID, "values item 1: is empty"},
		{NULL, 0, bad, 2, STATUS_INVALID,
		 "values item 2: invalid regular expression \"(a\": "},
		{NULL, 0, bad2, 1, STATUS_INVALID,
		 "values item 1: invalid regular expression \"a{2,1}\": "},
		{many, REDACT_MAX_PATTERNS + 1, NULL, 0, STATUS_LIMIT,
		 "keys: more than 256 patterns"},
		{NULL, 0, many, REDACT_MAX_PATTERNS + 1, STATUS_LIMIT,
		 "values: more than 256 patterns"},
	};
	char err[256], longpat[REDACT_MAX_PATTERN_LEN + 2];
	const char *const lp[] = {longpat};
	struct redact *r = (struct redact *)&r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = (struct redact *)&r;
		assert_int_equal(redact_new(cases[i].keys, cases[i].nkeys,
					    cases[i].values, cases[i].nvalues,
					    true, &r, err, sizeof(err)),
				 cases[i].rc);
		assert_null(r);
		if (strncmp(err, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("case %zu: got \"%s\"", i, err);
		/* no errlen: still fails cleanly */
		assert_int_equal(redact_new(cases[i].keys, cases[i].nkeys,
					    cases[i].values, cases[i].nvalues,
					    true, &r, NULL, 0),
				 cases[i].rc);
	}
	memset(longpat, 'a', sizeof(longpat) - 1);
	longpat[sizeof(longpat) - 1] = '\0';
	assert_int_equal(redact_new(lp, 1, NULL, 0, true, &r, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "keys item 1: is too long"));
	assert_int_equal(redact_new(NULL, 0, lp, 1, true, &r, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "values item 1: is too long"));
	assert_true(strlen(err) < 200); /* the pattern is shown cut */
}

/* [redact] in lib/conf/config: the defaults are the documented list, and a bad
 * pattern fails at load with the key, the item and the regex error. */
static void
test_config(void **state)
{
	static const struct {
		const char *doc, *want; /* want: NULL = loads */
	} cases[] = {
		{"[redact]\nvalues = [\"sk-[a-z]+\", \"(a\"]\n",
		 "t.toml:2:24: redact.values: item 2: invalid regular "
		 "expression \"(a\": unmatched ( or \\("},
		{"[redact]\nvalues = [\"\"]\n",
		 "t.toml:2:11: redact.values: item 1: is empty: give a regular "
		 "expression or remove it"},
		{"[redact]\nkeys = [\"x-secret\", \"\"]\n",
		 "t.toml:2:21: redact.keys: item 2: is empty: it would hide "
		 "every attribute; remove it"},
		{"[redact]\nkeys = [\"x-secret\"]\nvalues = [\"a{2,}\"]\n"
		 "emails = false\n",
		 NULL},
	};
	char *env[] = {NULL};
	struct config *c = NULL;
	struct config_error err;
	char msg[1024];

	(void)state;
	assert_int_equal(config_defaults(&c), STATUS_OK);
	assert_int_equal(c->redact.keys.n, NDEFAULT);
	for (size_t i = 0; i < NDEFAULT; i++)
		assert_string_equal(c->redact.keys.v[i], default_keys[i]);
	assert_int_equal(c->redact.values.n, 0);
	assert_true(c->redact.emails);
	config_free(c);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = config_load_text(cases[i].doc, strlen(cases[i].doc),
					  "t.toml", env, &c, &err);

		config_error_format(&err, msg, sizeof(msg));
		if (cases[i].want == NULL) {
			if (rc != STATUS_OK)
				fail_msg("case %zu: %s", i, msg);
			assert_int_equal(c->redact.keys.n, 1);
			assert_string_equal(c->redact.values.v[0], "a{2,}");
			assert_false(c->redact.emails);
			config_free(c);
			continue;
		}
		assert_int_equal(rc, STATUS_INVALID);
		assert_null(c);
		if (strcmp(msg, cases[i].want) != 0)
			fail_msg("case %zu: got \"%s\"", i, msg);
	}
}

static void
test_null(void **state)
{
	json_t *v = json_pack("{s:s, s:s}", "password", "p", "m",
			      "bob@example.com");

	(void)state;
	assert_false(redact_key(NULL, "password"));
	assert_null(redact_text(NULL, "bob@example.com"));
	assert_int_equal(redact_json(NULL, v), STATUS_OK);
	assert_string_equal(json_string_value(json_object_get(v, "password")),
			    "p");
	assert_int_equal(redact_json(NULL, NULL), STATUS_OK);
	redact_free(NULL);
	json_decref(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_key_pattern_normalised),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_emails_off),
		cmocka_unit_test(test_scan_limit),
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_strings),
		cmocka_unit_test(test_json_deep),
		cmocka_unit_test(test_new_errors),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

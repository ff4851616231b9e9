/*
 * test_seal.c - unit tests for lib/base/seal (sealed request state: round
 * trip, scope binding, every kind of tampering, expiry, another key, a
 * fresh nonce per token) and lib/base/base64 (base64url round trips, one
 * spelling per value, refusals).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/seal.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NOW	     INT64_C(1795000000000)

static void
test_base64url(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"", ""},
		{"f", "Zg"},
		{"fo", "Zm8"},
		{"foo", "Zm9v"},
		{"foob", "Zm9vYg"},
		{"fooba", "Zm9vYmE"},
		{"foobar", "Zm9vYmFy"},
		{"\xfb\xff", "-_8"},
	};
	static const char *const bad[] = {
		"Z",	 /* a lone character is no byte */
		"Zh",	 /* low bits set: "Zg" is the spelling of "f" */
		"Zm9=",	 /* padding */
		"Zm+v",	 /* base64, not base64url */
		"Zm 9v", /* space */
	};
	unsigned char buf[64];
	char enc[64];
	size_t n;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t len = strlen(cases[i].in);

		assert_true(base64url_encode((const unsigned char *)cases[i].in,
					     len, enc, sizeof(enc)));
		assert_string_equal(enc, cases[i].out);
		assert_true(base64url_decode(enc, buf, sizeof(buf), &n));
		assert_int_equal(n, len);
		assert_memory_equal(buf, cases[i].in, len);
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		if (base64url_decode(bad[i], buf, sizeof(buf), &n))
			fail_msg("accepted \"%s\"", bad[i]);
	/* bounds: out too small either way */
	assert_false(base64url_encode((const unsigned char *)"foo", 3, enc, 4));
	assert_false(base64url_decode("Zm9vYmFy", buf, 5, &n));
}

static void
test_round_trip(void **state)
{
	struct seal *s = NULL;
	json_t *st = json_pack("{s:s, s:i, s:[i,i]}", "name", "Alice", "round",
			       2, "list", 1, 2);
	json_t *got = NULL;
	char *t1 = NULL, *t2 = NULL;

	(void)state;
	assert_int_equal(seal_new(NULL, &s), STATUS_OK);
	assert_int_equal(seal_pack(s, "tools/call x", st, NOW + 1000, &t1),
			 STATUS_OK);
	assert_int_equal(seal_open(s, "tools/call x", t1, NOW, &got),
			 STATUS_OK);
	assert_true(json_equal(got, st));
	json_decref(got);
	/* a fresh nonce: the same state never gives the same token */
	assert_int_equal(seal_pack(s, "tools/call x", st, NOW + 1000, &t2),
			 STATUS_OK);
	assert_string_not_equal(t1, t2);
	/* scalars seal too */
	free(t2);
	assert_int_equal(seal_pack(s, "p", json_null(), NOW + 1, &t2),
			 STATUS_OK);
	assert_int_equal(seal_open(s, "p", t2, NOW, &got), STATUS_OK);
	assert_true(json_is_null(got));
	json_decref(got);
	free(t1);
	free(t2);
	json_decref(st);
	seal_free(s);
	seal_free(NULL);
}

static void
test_refused(void **state)
{
	unsigned char k1[SEAL_KEY_BYTES] = {1}, k2[SEAL_KEY_BYTES] = {2};
	struct seal *s = NULL, *other = NULL;
	json_t *st = json_pack("{s:s}", "step", "confirm"), *got = NULL;
	char *tok = NULL, *bad;
	size_t len, dot;

	(void)state;
	assert_int_equal(seal_new(k1, &s), STATUS_OK);
	assert_int_equal(seal_new(k2, &other), STATUS_OK);
	assert_int_equal(seal_pack(s, "tools/call a", st, NOW + 1000, &tok),
			 STATUS_OK);
	len = strlen(tok);
	dot = (size_t)(strchr(tok, '.') - tok);
	/* another scope, another key, expired */
	assert_int_equal(seal_open(s, "tools/call b", tok, NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(other, "tools/call a", tok, NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(s, "tools/call a", tok, NOW + 1001, &got),
			 STATUS_TIMEOUT);
	assert_null(got);
	/* every single character changed, in payload and mac */
	bad = strdup(tok);
	assert_non_null(bad);
	for (size_t i = 0; i < len; i++) {
		if (i == dot)
			continue;
		memcpy(bad, tok, len + 1);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		if (seal_open(s, "tools/call a", bad, NOW, &got) == STATUS_OK)
			fail_msg("changed at %zu and still accepted", i);
	}
	/* appended, cut, garbage */
	snprintf(bad, len + 1, "%s", tok);
	bad[len - 1] = '\0';
	assert_int_equal(seal_open(s, "tools/call a", bad, NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(s, "tools/call a", "", NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(s, "tools/call a", "abc.def", NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(s, "tools/call a", NULL, NOW, &got),
			 STATUS_INVALID);
	assert_int_equal(seal_open(s, "tools/call a", "-TAMPERED", NOW, &got),
			 STATUS_INVALID);
	free(bad);
	/* the suite's tampering: a suffix */
	bad = malloc(len + 10);
	assert_non_null(bad);
	snprintf(bad, len + 10, "%s-TAMPERED", tok);
	assert_int_equal(seal_open(s, "tools/call a", bad, NOW, &got),
			 STATUS_INVALID);
	free(bad);
	free(tok);
	json_decref(st);
	seal_free(s);
	seal_free(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64url),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

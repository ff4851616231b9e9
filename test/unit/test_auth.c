/*
 * test_auth.c - unit tests for lib/base/auth: SHA-256 key hashes against known
 * vectors, key-set parsing and checking, Bearer parsing, random hex ids.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/auth.h"

#define HASH_EMPTY                                                             \
	"sha256:"                                                              \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HASH_ABC                                                               \
	"sha256:"                                                              \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define HASH_KEY1                                                              \
	"sha256:"                                                              \
	"a6c1eaef9d5f23f4e13d9b574cbbe07ae877227d92be87d077005dc6776bcdcc"
#define HASH_KEY2_UPPER                                                        \
	"sha256:"                                                              \
	"94D34471AAB4552C315D1B13F9259AF333B99494C47C15999230F576B8478ABA"

static void
test_hash_vectors(void **state)
{
	static const struct {
		const char *key;
		size_t len;
		const char *want;
	} cases[] = {
		{"", 0, HASH_EMPTY},
		{NULL, 0, HASH_EMPTY},
		{"abc", 3, HASH_ABC},
		{"abcdef", 3, HASH_ABC}, /* only keylen bytes count */
		{"a\0b", 3,
		 "sha256:59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5c"
		 "e98920a7138"},
		{"secret-key-1", 12, HASH_KEY1},
	};
	char out[AUTH_HASH_LEN + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(out, 'x', sizeof(out));
		assert_int_equal(auth_hash_key(cases[i].key, cases[i].len, out),
				 STATUS_OK);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(strlen(out), AUTH_HASH_LEN);
	}
	assert_int_equal(auth_hash_key(NULL, 1, out), STATUS_INVALID);
	assert_string_equal(out, "");
}

static void
test_keys_good(void **state)
{
	char *hashes[] = {HASH_KEY1, HASH_KEY2_UPPER, HASH_ABC};
	struct auth_keys *k = NULL;
	char err[256] = "stale";

	(void)state;
	assert_int_equal(auth_keys_new(hashes, 3, &k, err, sizeof(err)),
			 STATUS_OK);
	assert_non_null(k);
	assert_string_equal(err, "");
	assert_int_equal(auth_keys_count(k), 3);
	auth_keys_free(k);

	/* n == 0: a valid set that accepts nothing */
	assert_int_equal(auth_keys_new(NULL, 0, &k, err, sizeof(err)),
			 STATUS_OK);
	assert_non_null(k);
	assert_int_equal(auth_keys_count(k), 0);
	assert_false(auth_keys_check(k, "", 0));
	assert_false(auth_keys_check(k, "abc", 3));
	auth_keys_free(k);

	/* err may be omitted */
	assert_int_equal(auth_keys_new(hashes, 1, &k, NULL, 0), STATUS_OK);
	auth_keys_free(k);
	auth_keys_free(NULL);
	assert_int_equal(auth_keys_count(NULL), 0);
}

/* Entries with scopes: "sha256:<hex>" then blanks and scopes; none named
 * means every scope.  find gives the entry, id a stable short name. */
static void
test_keys_scopes(void **state)
{
	char *hashes[] = {HASH_KEY1,
			  HASH_ABC " sextant:read\t  sextant:ingest ",
			  HASH_KEY2_UPPER "   "};
	char *bad[] = {HASH_ABC "x sextant:read"};
	struct auth_keys *k = NULL;
	char id[AUTH_KEY_ID_LEN + 1], err[256];

	(void)state;
	assert_int_equal(auth_keys_new(hashes, 3, &k, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(auth_keys_find(k, "abc", 3), 1);
	assert_int_equal(auth_keys_find(k, "abd", 3), -1);
	assert_true(auth_keys_check(k, "abc", 3));
	assert_null(auth_keys_scopes(k, 0));
	assert_string_equal(auth_keys_scopes(k, 1),
			    "sextant:read sextant:ingest");
	assert_null(auth_keys_scopes(k, 2)); /* blanks only: none */
	assert_null(auth_keys_scopes(k, 3));
	auth_keys_id(k, 1, id);
	assert_string_equal(id, "key:ba7816bf8f01cfea");
	auth_keys_id(k, 0, id);
	assert_string_equal(id, "key:a6c1eaef9d5f23f4");
	auth_keys_free(k);
	assert_int_equal(auth_keys_new(bad, 1, &k, err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(k);
	assert_non_null(strstr(err, "has 65 characters"));
}

static void
test_keys_malformed(void **state)
{
	static const struct {
		const char *bad;
		const char *want; /* substring of the message */
	} cases[] = {
		{NULL, "is missing"},
		{"", "does not start with \"sha256:\""},
		{"secret-key-1", "does not start with \"sha256:\""},
		{"SHA256:a6c1eaef9d5f23f4e13d9b574cbbe07ae877227d92be87d077005d"
		 "c6776bcdcc",
		 "does not start with \"sha256:\""},
		{"sha256:", "has 0 characters after \"sha256:\""},
		{"sha256:abcd", "has 4 characters after \"sha256:\""},
		{HASH_KEY1 "0", "has 65 characters after \"sha256:\""},
		{"sha256:g6c1eaef9d5f23f4e13d9b574cbbe07ae877227d92be87d077005d"
		 "c6776bcdcc",
		 "non-hex character at position 1 after"},
		{"sha256:a6c1eaef9d5f23f4e13d9b574cbbe07ae877227d92be87d077005d"
		 "c6776bcdc ",
		 "has 63 characters after"}, /* a blank ends the hash */
	};
	struct auth_keys *k;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *hashes[] = {HASH_KEY1, HASH_ABC, (char *)cases[i].bad};

		k = (struct auth_keys *)&err; /* must be reset to NULL */
		err[0] = '\0';
		assert_int_equal(auth_keys_new(hashes, 3, &k, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(k);
		/* names the entry, says what is expected */
		if (strstr(err, "key hash 3 of 3 ") == NULL ||
		    strstr(err, cases[i].want) == NULL ||
		    strstr(err, "expected \"sha256:\" followed by 64 hex "
				"digits") == NULL)
			fail_msg("case %zu: message \"%s\"", i, err);
		/* never echoes the entry: it may be a pasted plaintext key */
		if (cases[i].bad != NULL && strlen(cases[i].bad) > 8 &&
		    strstr(err, cases[i].bad) != NULL)
			fail_msg("case %zu: message echoes the entry", i);
	}

	/* the first bad entry is the one named */
	{
		char *hashes[] = {HASH_KEY1, "nope", "also bad"};

		assert_int_equal(auth_keys_new(hashes, 3, &k, err, sizeof(err)),
				 STATUS_INVALID);
		assert_non_null(strstr(err, "key hash 2 of 3 "));
	}
	/* a tiny err buffer truncates, never overflows */
	{
		char *hashes[] = {"nope"};
		char small[8];

		assert_int_equal(
			auth_keys_new(hashes, 1, &k, small, sizeof(small)),
			STATUS_INVALID);
		assert_int_equal(strlen(small), sizeof(small) - 1);
	}
	{
		char *hashes[] = {HASH_KEY1};

		assert_int_equal(auth_keys_new(hashes, AUTH_MAX_KEYS + 1, &k,
					       err, sizeof(err)),
				 STATUS_LIMIT);
		assert_null(k);
		assert_int_equal(auth_keys_new(NULL, 2, &k, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(k);
	}
}

static void
test_keys_check(void **state)
{
	char *hashes[] = {HASH_KEY1, HASH_KEY2_UPPER};
	static const struct {
		const char *token;
		size_t len;
		bool want;
	} cases[] = {
		{"secret-key-1", 12, true},
		{"secret-key-2", 12, true},  /* stored in upper-case hex */
		{"secret-key-1x", 12, true}, /* only len bytes are the token */
		{"secret-key-1x", 13, false},
		{"secret-key-", 11, false},
		{"secret-key-3", 12, false},
		{"SECRET-KEY-1", 12, false},
		{"", 0, false},
		{NULL, 0, false},
		{"abc", 3, false},
	};
	struct auth_keys *k = NULL;
	size_t i;

	(void)state;
	assert_int_equal(auth_keys_new(hashes, 2, &k, NULL, 0), STATUS_OK);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (auth_keys_check(k, cases[i].token, cases[i].len) !=
		    cases[i].want)
			fail_msg("case %zu (%s): expected %s", i,
				 cases[i].token ? cases[i].token : "NULL",
				 cases[i].want ? "accept" : "reject");
	assert_false(auth_keys_check(NULL, "secret-key-1", 12));
	auth_keys_free(k);

	/* a set holding the hash of "" still rejects an empty token */
	{
		char *empty[] = {HASH_EMPTY};

		assert_int_equal(auth_keys_new(empty, 1, &k, NULL, 0),
				 STATUS_OK);
		assert_false(auth_keys_check(k, "", 0));
		auth_keys_free(k);
	}
}

static void
test_parse_bearer(void **state)
{
	static const struct {
		const char *header;
		const char *token; /* NULL = STATUS_INVALID */
	} cases[] = {
		{"Bearer abc123", "abc123"},
		{"bearer abc123", "abc123"},
		{"BEARER abc123", "abc123"},
		{"bEaReR abc123", "abc123"},
		{"Bearer    abc123", "abc123"},
		{"  Bearer abc123  ", "abc123"},
		{"Bearer abc123\t", "abc123"},
		{"Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g=="},
		{"Bearer x", "x"},
		{"Bearer", NULL},
		{"Bearer ", NULL},
		{"Bearer    ", NULL},
		{"Bearerabc123", NULL},
		{"Bearer\tabc123", NULL},
		{"Bearer abc 123", NULL},
		{"Bearer abc\x01", NULL},
		{"Bearer abc\xc3\xa9", NULL},
		{"Basic dXNlcjpwYXNz", NULL},
		{"Token abc123", NULL},
		{"Bear abc123", NULL},
		{"Bearer: abc123", NULL},
		{"", NULL},
		{"abc123", NULL},
		{NULL, NULL},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *tok = "stale";
		size_t len = 99;
		int rc = auth_parse_bearer(cases[i].header, &tok, &len);

		if (cases[i].token == NULL) {
			if (rc != STATUS_INVALID || tok != NULL || len != 0)
				fail_msg("case %zu \"%s\": accepted", i,
					 cases[i].header ? cases[i].header
							 : "NULL");
			continue;
		}
		if (rc != STATUS_OK)
			fail_msg("case %zu \"%s\": rejected", i,
				 cases[i].header);
		assert_int_equal(len, strlen(cases[i].token));
		assert_memory_equal(tok, cases[i].token, len);
		/* points into the header, no copy */
		assert_true(tok > cases[i].header &&
			    tok < cases[i].header + strlen(cases[i].header));
	}
}

static bool
all_lower_hex(const char *s)
{
	for (; *s != '\0'; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static void
test_random_hex(void **state)
{
	char a[65], b[65], big[2 * AUTH_MAX_RANDOM_BYTES + 1];
	char seen[64][33];
	int counts[16] = {0};
	size_t i, j;

	(void)state;
	assert_int_equal(auth_random_hex(a, sizeof(a), 32), STATUS_OK);
	assert_int_equal(auth_random_hex(b, sizeof(b), 32), STATUS_OK);
	assert_int_equal(strlen(a), 64);
	assert_true(all_lower_hex(a));
	assert_string_not_equal(a, b);

	for (i = 0; i < 64; i++) {
		assert_int_equal(auth_random_hex(seen[i], sizeof(seen[i]), 16),
				 STATUS_OK);
		assert_int_equal(strlen(seen[i]), 32);
		assert_true(all_lower_hex(seen[i]));
		for (j = 0; j < i; j++)
			assert_string_not_equal(seen[i], seen[j]);
	}

	/* more than one internal chunk; every digit shows up */
	assert_int_equal(
		auth_random_hex(big, sizeof(big), AUTH_MAX_RANDOM_BYTES),
		STATUS_OK);
	assert_int_equal(strlen(big), 2 * AUTH_MAX_RANDOM_BYTES);
	assert_true(all_lower_hex(big));
	for (i = 0; big[i] != '\0'; i++)
		counts[big[i] <= '9' ? big[i] - '0' : big[i] - 'a' + 10]++;
	for (i = 0; i < 16; i++)
		assert_true(counts[i] > 0);

	assert_int_equal(auth_random_hex(a, 1, 0), STATUS_OK);
	assert_string_equal(a, "");
	/* out too small for 2 * nbytes + 1 */
	memset(a, 'x', sizeof(a));
	assert_int_equal(auth_random_hex(a, 64, 32), STATUS_INVALID);
	assert_string_equal(a, "");
	assert_int_equal(auth_random_hex(a, 0, 0), STATUS_INVALID);
	assert_int_equal(
		auth_random_hex(big, sizeof(big), AUTH_MAX_RANDOM_BYTES + 1),
		STATUS_INVALID);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_vectors),
		cmocka_unit_test(test_keys_good),
		cmocka_unit_test(test_keys_malformed),
		cmocka_unit_test(test_keys_check),
		cmocka_unit_test(test_keys_scopes),
		cmocka_unit_test(test_parse_bearer),
		cmocka_unit_test(test_random_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

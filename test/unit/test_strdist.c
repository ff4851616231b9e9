/*
 * test_strdist.c - unit tests for lib/base/strdist: known distances, the
 * case fold, the cap, the length limit, and random strings against the
 * full dynamic-programming table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/strdist.h"

static size_t
d(const char *a, const char *b, bool fold, size_t cap)
{
	return strdist(a, strlen(a), b, strlen(b), fold, cap);
}

static void
test_known(void **state)
{
	(void)state;
	assert_int_equal(d("", "", false, SIZE_MAX), 0);
	assert_int_equal(d("abc", "", false, SIZE_MAX), 3);
	assert_int_equal(d("", "abc", false, SIZE_MAX), 3);
	assert_int_equal(d("kitten", "sitting", false, SIZE_MAX), 3);
	assert_int_equal(d("flaw", "lawn", false, SIZE_MAX), 2);
	assert_int_equal(d("server.listen", "server.lisen", false, SIZE_MAX),
			 1);
	assert_int_equal(d("Checkout", "checkout", false, SIZE_MAX), 1);
	assert_int_equal(d("Checkout", "checkout", true, SIZE_MAX), 0);
	assert_int_equal(d("HTTP_requests", "http_request", true, SIZE_MAX), 1);
}

static void
test_cap(void **state)
{
	(void)state;
	/* never more than cap, exact below it */
	assert_int_equal(d("kitten", "sitting", false, 3), 3);
	assert_int_equal(d("kitten", "sitting", false, 4), 3);
	assert_int_equal(d("kitten", "sitting", false, 2), 2);
	assert_int_equal(d("aaaaaaaaaa", "bbbbbbbbbb", false, 1), 1);
	assert_int_equal(d("abc", "abc", false, 0), 0);
}

static void
test_limit(void **state)
{
	char a[STRDIST_MAX_LEN + 2];

	(void)state;
	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	assert_int_equal(strdist(a, STRDIST_MAX_LEN, a, STRDIST_MAX_LEN, false,
				 SIZE_MAX),
			 0);
	assert_int_equal(
		strdist(a, STRDIST_MAX_LEN + 1, "x", 1, false, SIZE_MAX),
		SIZE_MAX);
	assert_int_equal(
		strdist("x", 1, a, STRDIST_MAX_LEN + 1, false, SIZE_MAX),
		SIZE_MAX);
}

/* The whole table, the textbook way. */
static size_t
reference(const char *a, size_t la, const char *b, size_t lb, bool fold)
{
	static size_t t[40][40];

	for (size_t i = 0; i <= la; i++)
		t[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		t[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			char x = a[i - 1], y = b[j - 1];
			size_t sub, best;

			if (fold) {
				x = (char)(x >= 'A' && x <= 'Z' ? x + 32 : x);
				y = (char)(y >= 'A' && y <= 'Z' ? y + 32 : y);
			}
			sub = t[i - 1][j - 1] + (x != y);
			best = t[i - 1][j] + 1 < t[i][j - 1] + 1
				       ? t[i - 1][j] + 1
				       : t[i][j - 1] + 1;
			t[i][j] = sub < best ? sub : best;
		}
	return t[la][lb];
}

static void
test_random_against_table(void **state)
{
	static const char alphabet[] = "abAB_.";
	uint64_t x = 88172645463325252ull;
	char a[40], b[40];

	(void)state;
	for (int n = 0; n < 20000; n++) {
		size_t la, lb, want, cap;
		bool fold;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		la = x % 12, lb = (x >> 8) % 12, fold = (x >> 16) & 1;
		cap = (x >> 20) % 16;
		for (size_t i = 0; i < la; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			a[i] = alphabet[x % (sizeof(alphabet) - 1)];
		}
		for (size_t i = 0; i < lb; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = alphabet[x % (sizeof(alphabet) - 1)];
		}
		want = reference(a, la, b, lb, fold);
		assert_int_equal(strdist(a, la, b, lb, fold, SIZE_MAX), want);
		assert_int_equal(strdist(a, la, b, lb, fold, cap),
				 want < cap ? want : cap);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_random_against_table),
	};

	return cmocka_run_group_tests_name("strdist", tests, NULL, NULL);
}

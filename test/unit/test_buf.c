/*
 * test_buf.c - unit tests for lib/base/buf: appends up to and past the hard
 * maximum (STATUS_LIMIT leaves the buffer as it was), printf, steal, reset
 * and NUL termination.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* The buffer holds exactly len bytes equal to s, NUL-terminated. */
static void
assert_buf(const struct buf *b, const char *s)
{
	size_t n = strlen(s);

	assert_int_equal(b->len, n);
	assert_non_null(b->data);
	assert_memory_equal(b->data, s, n);
	assert_int_equal(b->data[n], '\0');
	assert_true(b->cap > b->len);
	assert_true(b->len <= b->max);
}

static void
test_init_allocates_nothing(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 10);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 10);
	buf_free(&b);
	assert_null(b.data);
}

/* One row: a sequence of appends against a max, and what must result. */
struct append_case {
	const char *name;
	size_t max;
	const char *parts[4]; /* NULL-terminated */
	int rc[4];	      /* status of each append */
	const char *want;     /* content after all appends */
};

static const struct append_case append_cases[] = {
	{"fits", 10, {"abc", "def", NULL}, {STATUS_OK, STATUS_OK}, "abcdef"},
	{"exactly max",
	 6,
	 {"abc", "def", NULL},
	 {STATUS_OK, STATUS_OK},
	 "abcdef"},
	{"one past max is refused whole",
	 6,
	 {"abc", "defg", "d", NULL},
	 {STATUS_OK, STATUS_LIMIT, STATUS_OK},
	 "abcd"},
	{"first append past max", 3, {"abcd", NULL}, {STATUS_LIMIT}, ""},
	{"empty append at max",
	 3,
	 {"abc", "", "x", NULL},
	 {STATUS_OK, STATUS_OK, STATUS_LIMIT},
	 "abc"},
	{"max zero takes only empty",
	 0,
	 {"", "a", NULL},
	 {STATUS_OK, STATUS_LIMIT},
	 ""},
};

static void
test_append_table(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(append_cases) / sizeof(append_cases[0]); i++) {
		const struct append_case *c = &append_cases[i];
		struct buf b;

		buf_init(&b, c->max);
		for (j = 0; c->parts[j] != NULL; j++) {
			size_t before = b.len;
			int rc = buf_append(&b, c->parts[j],
					    strlen(c->parts[j]));

			if (rc != c->rc[j])
				fail_msg("%s: append %zu: rc %d, want %d",
					 c->name, j, rc, c->rc[j]);
			if (rc != STATUS_OK)
				assert_int_equal(b.len, before);
		}
		if (c->want[0] != '\0' || b.data != NULL)
			assert_buf(&b, c->want);
		else
			assert_int_equal(b.len, 0);
		buf_free(&b);
	}
}

/* A refused append must not touch the bytes already there. */
static void
test_limit_leaves_content(void **state)
{
	struct buf b;
	char big[64];

	(void)state;
	memset(big, 'x', sizeof(big));
	buf_init(&b, 20);
	assert_int_equal(buf_puts(&b, "hello"), STATUS_OK);
	assert_int_equal(buf_append(&b, big, sizeof(big)), STATUS_LIMIT);
	assert_buf(&b, "hello");
	assert_int_equal(buf_printf(&b, "%064d", 1), STATUS_LIMIT);
	assert_buf(&b, "hello");
	assert_int_equal(buf_puts(&b, "0123456789abcdef"), STATUS_LIMIT);
	assert_buf(&b, "hello");
	/* An append whose size would overflow len + n is refused too. */
	assert_int_equal(buf_append(&b, big, SIZE_MAX), STATUS_LIMIT);
	assert_buf(&b, "hello");
	assert_int_equal(buf_puts(&b, "0123456789abcde"), STATUS_OK);
	assert_buf(&b, "hello0123456789abcde");
	buf_free(&b);
}

static void
test_printf(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 32);
	assert_int_equal(buf_printf(&b, "%s-%d", "ab", 42), STATUS_OK);
	assert_buf(&b, "ab-42");
	assert_int_equal(buf_printf(&b, "%c%c", 'x', 'y'), STATUS_OK);
	assert_buf(&b, "ab-42xy");
	/* Exactly up to max: 7 + 25 = 32. */
	assert_int_equal(buf_printf(&b, "%025d", 7), STATUS_OK);
	assert_int_equal(b.len, 32);
	assert_int_equal(b.data[32], '\0');
	assert_int_equal(buf_printf(&b, "%s", "z"), STATUS_LIMIT);
	assert_int_equal(b.len, 32);
	assert_int_equal(buf_printf(&b, "%s", ""), STATUS_OK);
	assert_int_equal(b.len, 32);
	buf_free(&b);
}

/* Growth across many reallocations keeps every byte. */
static void
test_growth(void **state)
{
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b, 100000);
	for (i = 0; i < 10000; i++)
		assert_int_equal(buf_printf(&b, "%zu,", i % 10), STATUS_OK);
	assert_int_equal(b.len, 20000);
	for (i = 0; i < 10000; i++) {
		assert_int_equal(b.data[2 * i], (char)('0' + i % 10));
		assert_int_equal(b.data[2 * i + 1], ',');
	}
	assert_int_equal(b.data[b.len], '\0');
	buf_free(&b);
}

/* Binary data with NUL bytes is carried as is; len counts them. */
static void
test_binary(void **state)
{
	static const char bin[] = {'a', '\0', 'b', '\0'};
	struct buf b;

	(void)state;
	buf_init(&b, 16);
	assert_int_equal(buf_append(&b, bin, sizeof(bin)), STATUS_OK);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, bin, 4);
	assert_int_equal(b.data[4], '\0');
	buf_free(&b);
}

static void
test_reset(void **state)
{
	struct buf b;
	char *mem;
	size_t cap;

	(void)state;
	buf_init(&b, 16);
	buf_reset(&b); /* nothing allocated yet: must not crash */
	assert_null(b.data);
	assert_int_equal(buf_puts(&b, "0123456789"), STATUS_OK);
	mem = b.data;
	cap = b.cap;
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_ptr_equal(b.data, mem); /* memory kept */
	assert_int_equal(b.cap, cap);
	assert_string_equal(b.data, "");
	/* After a reset the full max is available again. */
	assert_int_equal(buf_puts(&b, "0123456789abcdef"), STATUS_OK);
	assert_buf(&b, "0123456789abcdef");
	buf_free(&b);
}

static void
test_steal(void **state)
{
	struct buf b;
	size_t len = 99;
	char *s;

	(void)state;
	buf_init(&b, 16);
	assert_int_equal(buf_puts(&b, "abc"), STATUS_OK);
	s = buf_steal(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "abc");
	assert_int_equal(len, 3);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 16);
	free(s);

	/* Reusable after steal, with the same max. */
	assert_int_equal(buf_puts(&b, "0123456789abcdef"), STATUS_OK);
	assert_int_equal(buf_puts(&b, "x"), STATUS_LIMIT);
	s = buf_steal(&b, NULL);
	assert_string_equal(s, "0123456789abcdef");
	free(s);

	/* Nothing appended: an allocated empty string. */
	len = 99;
	s = buf_steal(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	buf_free(&b);
}

static void
test_free_twice(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_puts(&b, "ab"), STATUS_OK);
	buf_free(&b);
	buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_allocates_nothing),
		cmocka_unit_test(test_append_table),
		cmocka_unit_test(test_limit_leaves_content),
		cmocka_unit_test(test_printf),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_steal),
		cmocka_unit_test(test_free_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

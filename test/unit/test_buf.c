/*
 * test_buf.c - unit tests for lib/base/buf: appends up to and past the hard
 * maximum (STATUS_LIMIT leaves the bytes as they were), the sticky error
 * (the first failure is kept, later appends do nothing, reset, rollback,
 * steal, finish and free clear it), printf, steal, reset and NUL
 * termination.
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
	{"one past max is refused whole, and sticks",
	 6,
	 {"abc", "defg", "d", NULL},
	 {STATUS_OK, STATUS_LIMIT, STATUS_LIMIT},
	 "abc"},
	{"first append past max", 3, {"abcd", NULL}, {STATUS_LIMIT}, ""},
	{"empty append at max",
	 3,
	 {"abc", "", "x", NULL},
	 {STATUS_OK, STATUS_OK, STATUS_LIMIT},
	 "abc"},
	{"empty append after a failure fails too",
	 3,
	 {"abc", "x", "", NULL},
	 {STATUS_OK, STATUS_LIMIT, STATUS_LIMIT},
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
			assert_int_equal(buf_error(&b), rc);
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
	buf_rollback(&b, b.len); /* each refusal below on its own */
	assert_int_equal(buf_printf(&b, "%064d", 1), STATUS_LIMIT);
	assert_buf(&b, "hello");
	buf_rollback(&b, b.len);
	assert_int_equal(buf_puts(&b, "0123456789abcdef"), STATUS_LIMIT);
	assert_buf(&b, "hello");
	buf_rollback(&b, b.len);
	/* An append whose size would overflow len + n is refused too. */
	assert_int_equal(buf_append(&b, big, SIZE_MAX), STATUS_LIMIT);
	assert_buf(&b, "hello");
	buf_rollback(&b, b.len);
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
	assert_int_equal(buf_printf(&b, "%s", ""), STATUS_OK);
	assert_int_equal(b.len, 32);
	assert_int_equal(buf_printf(&b, "%s", "z"), STATUS_LIMIT);
	assert_int_equal(b.len, 32);
	assert_int_equal(b.data[32], '\0');
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
	s = buf_steal(&b, NULL);
	assert_string_equal(s, "0123456789abcdef");
	free(s);

	/* Never the bytes of a failed buffer: NULL, and b left as it is. */
	assert_int_equal(buf_puts(&b, "0123456789abcdefg"), STATUS_LIMIT);
	len = 99;
	assert_null(buf_steal(&b, &len));
	assert_int_equal(len, 99);
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	buf_reset(&b);

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

/* ---- the sticky error --------------------------------------------------- */

/*
 * The NOMEM cases ask realloc for more than any machine has; under ASan
 * that must give NULL, as libc does, rather than end the test.
 */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

/* An append that fails for want of memory: max is far above the ask. */
#define HUGE (SIZE_MAX / 4)

/* The first failure is kept: later appends of every kind, even ones that
 * would fit, do nothing and answer it. */
static void
test_sticky_limit(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_int_equal(buf_puts(&b, "abc"), STATUS_OK);
	assert_int_equal(buf_puts(&b, "defghi"), STATUS_LIMIT);
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	assert_int_equal(buf_append(&b, "d", 1), STATUS_LIMIT);
	assert_int_equal(buf_puts(&b, "d"), STATUS_LIMIT);
	assert_int_equal(buf_printf(&b, "%d", 4), STATUS_LIMIT);
	assert_int_equal(buf_append(&b, "", 0), STATUS_LIMIT);
	assert_buf(&b, "abc");
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	buf_free(&b);
}

/* Out of memory sticks the same way, and whichever failure came first is
 * the one kept. */
static void
test_sticky_first_kept(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, SIZE_MAX / 2);
	assert_int_equal(buf_puts(&b, "abc"), STATUS_OK);
	assert_int_equal(buf_append(&b, "x", HUGE), STATUS_NOMEM);
	assert_buf(&b, "abc");
	assert_int_equal(buf_puts(&b, "d"), STATUS_NOMEM);
	assert_int_equal(buf_append(&b, "x", SIZE_MAX), STATUS_NOMEM);
	assert_int_equal(buf_error(&b), STATUS_NOMEM);
	assert_buf(&b, "abc");
	buf_free(&b);

	buf_init(&b, 4);
	assert_int_equal(buf_puts(&b, "abcde"), STATUS_LIMIT);
	b.max = SIZE_MAX / 2; /* the next ask would be out of memory */
	assert_int_equal(buf_append(&b, "x", HUGE), STATUS_LIMIT);
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	assert_null(b.data);
	buf_free(&b);
}

/* buf_set_error: a writer's own failure, kept like an append's. */
static void
test_set_error(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_puts(&b, "ab"), STATUS_OK);
	buf_set_error(&b, STATUS_OK); /* not a failure */
	assert_int_equal(buf_error(&b), STATUS_OK);
	buf_set_error(&b, STATUS_INVALID);
	assert_int_equal(buf_error(&b), STATUS_INVALID);
	assert_int_equal(buf_puts(&b, "c"), STATUS_INVALID);
	buf_set_error(&b, STATUS_NOMEM); /* the first stays */
	assert_int_equal(buf_error(&b), STATUS_INVALID);
	assert_buf(&b, "ab");
	buf_free(&b);
}

/* Whatever ends the buffer's use forgets the error: reset, free, and a
 * rollback, which also drops the bytes past its mark. */
static void
test_sticky_cleared(void **state)
{
	struct buf b;
	size_t mark;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_puts(&b, "abc"), STATUS_OK);
	assert_int_equal(buf_puts(&b, "defghi"), STATUS_LIMIT);
	buf_reset(&b);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_int_equal(buf_puts(&b, "01234567"), STATUS_OK);
	assert_buf(&b, "01234567");
	assert_int_equal(buf_puts(&b, "8"), STATUS_LIMIT);
	buf_free(&b);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_int_equal(buf_puts(&b, "again"), STATUS_OK); /* max kept */
	assert_buf(&b, "again");

	/* rollback: a piece that does not fit is given up whole */
	buf_reset(&b);
	assert_int_equal(buf_puts(&b, "ab"), STATUS_OK);
	mark = b.len;
	assert_int_equal(buf_puts(&b, "cd"), STATUS_OK);
	assert_int_equal(buf_puts(&b, "efghi"), STATUS_LIMIT);
	buf_rollback(&b, mark);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_buf(&b, "ab");
	assert_int_equal(buf_puts(&b, "(more)"), STATUS_OK);
	assert_buf(&b, "ab(more)");
	/* with nothing failed it only cuts */
	buf_rollback(&b, 1);
	assert_buf(&b, "a");
	/* at the length a failed append left, every byte stays: only that
	 * append is given up */
	assert_int_equal(buf_puts(&b, "bcdefghi"), STATUS_LIMIT);
	buf_rollback(&b, b.len);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_buf(&b, "a");
	assert_int_equal(buf_puts(&b, "bc"), STATUS_OK);
	assert_buf(&b, "abc");
	buf_free(&b);
}

/* finish: the check and the hand-over in one call; the buffer is left
 * empty and without error whichever way it goes. */
static void
test_finish(void **state)
{
	struct buf b;
	char *out = (char *)"not NULL";
	size_t n = 0;

	(void)state;
	buf_init(&b, 4);
	assert_int_equal(buf_puts(&b, "abcde"), STATUS_LIMIT);
	assert_int_equal(buf_finish(&b, &out, &n), STATUS_LIMIT);
	assert_null(out);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_int_equal(b.max, 4);

	assert_int_equal(buf_puts(&b, "abcd"), STATUS_OK);
	assert_int_equal(buf_finish(&b, &out, &n), STATUS_OK);
	assert_string_equal(out, "abcd");
	assert_int_equal(n, 4);
	assert_null(b.data);
	free(out);
	/* nothing appended: an allocated "" */
	assert_int_equal(buf_finish(&b, &out, NULL), STATUS_OK);
	assert_string_equal(out, "");
	free(out);

	buf_init(&b, SIZE_MAX / 2);
	assert_int_equal(buf_append(&b, "x", HUGE), STATUS_NOMEM);
	assert_int_equal(buf_finish(&b, &out, &n), STATUS_NOMEM);
	assert_null(out);
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
		cmocka_unit_test(test_sticky_limit),
		cmocka_unit_test(test_sticky_first_kept),
		cmocka_unit_test(test_set_error),
		cmocka_unit_test(test_sticky_cleared),
		cmocka_unit_test(test_finish),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_sse.c - unit tests for lib/base/sse: the event encoder (ids, retry,
 * empty and multi-line data, carriage returns, comments) and the replay
 * log (consecutive numbering, eviction by count and by bytes, partial
 * reads across event boundaries, gaps after eviction, drained).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sse.h"

/* ---- encoder ---------------------------------------------------------- */

struct enc_case {
	const char *name;
	const char *id; /* NULL: none */
	int retry;	/* < 0: none */
	const char *data;
	size_t len; /* (size_t)-1: strlen(data) */
	const char *want;
	size_t wlen; /* 0: strlen(want) */
};

#define LEN_AUTO ((size_t)-1)

static const struct enc_case enc_cases[] = {
	{"data only", NULL, -1, "{\"a\":1}", LEN_AUTO, "data: {\"a\":1}\n\n"},
	{"id and data", "s1-3", -1, "x", LEN_AUTO, "id: s1-3\ndata: x\n\n"},
	{"priming event", "abc-0", 1000, "", 0,
	 "id: abc-0\nretry: 1000\ndata: \n\n"},
	{"retry zero is sent", NULL, 0, "x", LEN_AUTO, "retry: 0\ndata: x\n\n"},
	{"empty data alone", NULL, -1, "", 0, "data: \n\n"},
	{"two lines", NULL, -1, "a\nb", LEN_AUTO, "data: a\ndata: b\n\n"},
	{"trailing newline gives an empty last line", NULL, -1, "a\n", LEN_AUTO,
	 "data: a\ndata: \n\n"},
	{"only a newline", NULL, -1, "\n", LEN_AUTO, "data: \ndata: \n\n"},
	{"CRLF: CR dropped", NULL, -1, "a\r\nb\r\n", LEN_AUTO,
	 "data: a\ndata: b\ndata: \n\n"},
	{"lone CR dropped", "i", -1, "a\rb\rc", LEN_AUTO,
	 "id: i\ndata: abc\n\n"},
	{"only CRs", NULL, -1, "\r\r", LEN_AUTO, "data: \n\n"},
	{"len shorter than the string", NULL, -1, "abc\ndef", 5,
	 "data: abc\ndata: d\n\n"},
	{"embedded NUL kept", NULL, -1, "a\0b", 3, "data: a\0b\n\n", 11},
};

static void
test_encode_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(enc_cases) / sizeof(enc_cases[0]); i++) {
		const struct enc_case *c = &enc_cases[i];
		size_t len = c->len == LEN_AUTO ? strlen(c->data) : c->len;
		size_t wlen = c->wlen != 0 ? c->wlen : strlen(c->want);
		struct buf b;

		buf_init(&b, 1024);
		assert_int_equal(sse_encode(&b, c->id, c->retry, c->data, len),
				 STATUS_OK);
		if (b.len != wlen || memcmp(b.data, c->want, wlen) != 0)
			fail_msg("%s: got \"%.*s\"", c->name, (int)b.len,
				 b.data);
		assert_int_equal(b.data[b.len], '\0');
		buf_free(&b);
	}
}

/* Events append to what the buffer already holds. */
static void
test_encode_appends(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 1024);
	assert_int_equal(buf_puts(&b, "prefix;"), STATUS_OK);
	assert_int_equal(sse_encode(&b, "1", -1, "a", 1), STATUS_OK);
	assert_int_equal(sse_encode(&b, "2", -1, "b", 1), STATUS_OK);
	assert_string_equal(b.data, "prefix;id: 1\ndata: a\n\nid: 2\ndata: "
				    "b\n\n");
	buf_free(&b);
}

/* An event that does not fit leaves the buffer as it was, at every cut,
 * and without error. */
static void
test_encode_limit_rolls_back(void **state)
{
	const char *want = "id: 7\nretry: 5\ndata: a\ndata: b\n\n";
	size_t full = strlen(want), max;

	(void)state;
	for (max = 3; max <= full + 3; max++) {
		struct buf b;
		int rc;

		buf_init(&b, max);
		assert_int_equal(buf_puts(&b, "xyz"), STATUS_OK);
		rc = sse_encode(&b, "7", 5, "a\nb", 3);
		if (max >= full + 3) {
			assert_int_equal(rc, STATUS_OK);
		} else {
			assert_int_equal(rc, STATUS_LIMIT);
			assert_int_equal(b.len, 3);
			assert_string_equal(b.data, "xyz");
			assert_int_equal(buf_error(&b), STATUS_OK);
		}
		buf_free(&b);
	}
}

static void
test_encode_comment(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 64);
	assert_int_equal(sse_encode_comment(&b, "keepalive"), STATUS_OK);
	assert_string_equal(b.data, ": keepalive\n\n");
	assert_int_equal(sse_encode_comment(&b, ""), STATUS_OK);
	assert_string_equal(b.data, ": keepalive\n\n: \n\n");
	buf_free(&b);
}

/* ---- log -------------------------------------------------------------- */

static struct sse_log *
new_log(size_t events, size_t bytes)
{
	struct sse_log *log = NULL;

	assert_int_equal(sse_log_new(events, bytes, &log), STATUS_OK);
	assert_non_null(log);
	return log;
}

static void
append(struct sse_log *log, uint64_t seq, const char *ev)
{
	assert_int_equal(sse_log_append(log, seq, ev, strlen(ev)), STATUS_OK);
}

static void
assert_range(const struct sse_log *log, uint64_t first, uint64_t last)
{
	uint64_t f = 0, l = 0;

	assert_true(sse_log_range(log, &f, &l));
	assert_int_equal(f, first);
	assert_int_equal(l, last);
	assert_int_equal(sse_log_count(log), last - first + 1);
}

/* Reads everything from cur with dst chunks of size step into out. */
static size_t
read_all(const struct sse_log *log, struct sse_cursor *cur, size_t step,
	 char *out, size_t outlen, bool *any_gap)
{
	size_t total = 0, n;
	char chunk[64];
	bool gap;

	assert_true(step <= sizeof(chunk));
	*any_gap = false;
	do {
		n = sse_log_read(log, cur, chunk, step, &gap);
		assert_true(n <= step);
		*any_gap |= gap;
		assert_true(total + n < outlen);
		memcpy(out + total, chunk, n);
		total += n;
	} while (n > 0);
	out[total] = '\0';
	return total;
}

static void
test_log_new_rejects_zero(void **state)
{
	struct sse_log *log = (struct sse_log *)1;

	(void)state;
	assert_int_equal(sse_log_new(0, 10, &log), STATUS_INVALID);
	assert_null(log);
	log = (struct sse_log *)1;
	assert_int_equal(sse_log_new(10, 0, &log), STATUS_INVALID);
	assert_null(log);
	sse_log_free(NULL);
}

static void
test_log_empty(void **state)
{
	struct sse_log *log = new_log(4, 100);
	struct sse_cursor cur = {0, 0};
	uint64_t f = 7, l = 7;
	char dst[8];
	bool gap = true;

	(void)state;
	assert_int_equal(sse_log_count(log), 0);
	assert_false(sse_log_range(log, &f, &l));
	assert_int_equal(sse_log_read(log, &cur, dst, sizeof(dst), &gap), 0);
	assert_false(gap);
	assert_true(sse_log_drained(log, &cur));
	sse_log_free(log);
}

static void
test_log_append_sequence(void **state)
{
	struct sse_log *log = new_log(8, 1000);

	(void)state;
	/* The first number is free: streams may start anywhere. */
	append(log, 5, "e5");
	assert_range(log, 5, 5);
	append(log, 6, "e6");
	assert_range(log, 5, 6);
	/* Repeats, gaps and going back are refused and change nothing. */
	assert_int_equal(sse_log_append(log, 6, "x", 1), STATUS_INVALID);
	assert_int_equal(sse_log_append(log, 8, "x", 1), STATUS_INVALID);
	assert_int_equal(sse_log_append(log, 4, "x", 1), STATUS_INVALID);
	assert_int_equal(sse_log_append(log, 0, "x", 1), STATUS_INVALID);
	assert_range(log, 5, 6);
	append(log, 7, "e7");
	assert_range(log, 5, 7);
	/* An empty event is stored too. */
	assert_int_equal(sse_log_append(log, 8, "", 0), STATUS_OK);
	assert_range(log, 5, 8);
	sse_log_free(log);
}

static void
test_log_evict_by_count(void **state)
{
	struct sse_log *log = new_log(3, 1 << 20);
	struct sse_cursor cur = {0, 0};
	char out[256];
	bool gap;
	uint64_t i;

	(void)state;
	for (i = 0; i < 10; i++) {
		char ev[16];

		snprintf(ev, sizeof(ev), "[%llu]", (unsigned long long)i);
		append(log, i, ev);
		assert_true(sse_log_count(log) <= 3);
	}
	assert_range(log, 7, 9);
	/* The wrapped ring still reads oldest first. */
	read_all(log, &cur, 64, out, sizeof(out), &gap);
	assert_true(gap); /* cursor 0 was evicted */
	assert_string_equal(out, "[7][8][9]");
	assert_int_equal(cur.seq, 10);
	assert_int_equal(cur.off, 0);
	/* After eviction the next number must still follow the newest. */
	assert_int_equal(sse_log_append(log, 7, "x", 1), STATUS_INVALID);
	append(log, 10, "[10]");
	assert_range(log, 8, 10);
	sse_log_free(log);
}

static void
test_log_evict_by_bytes(void **state)
{
	/* 10 bytes: "aaaa"(4) + "bbbb"(4) fit, "cccc" pushes "aaaa" out. */
	struct sse_log *log = new_log(100, 10);
	struct sse_cursor cur = {0, 0};
	char out[256];
	bool gap;

	(void)state;
	append(log, 0, "aaaa");
	append(log, 1, "bbbb");
	assert_range(log, 0, 1);
	append(log, 2, "cc");
	assert_range(log, 0, 2); /* exactly 10 bytes: all kept */
	append(log, 3, "d");
	assert_range(log, 1, 3); /* 11 > 10: oldest goes */
	/* An event larger than the whole bound is still kept, alone. */
	append(log, 4, "0123456789ABCDEF");
	assert_range(log, 4, 4);
	read_all(log, &cur, 64, out, sizeof(out), &gap);
	assert_true(gap);
	assert_string_equal(out, "0123456789ABCDEF");
	/* And the next small one evicts it. */
	append(log, 5, "e");
	assert_range(log, 5, 5);
	sse_log_free(log);
}

/* Reads with every chunk size from 1 up give the same bytes, resume at
 * the right offset inside events, and never report a gap. */
static void
test_log_partial_reads(void **state)
{
	static const char *const evs[] = {"id: s-0\ndata: \n\n",
					  "id: s-1\ndata: {\"x\":1}\n\n", "",
					  "id: s-3\ndata: z\n\n"};
	struct sse_log *log = new_log(16, 4096);
	char want[256], out[256];
	size_t step, i, wlen = 0;
	bool gap;

	(void)state;
	for (i = 0; i < 4; i++) {
		append(log, 100 + i, evs[i]);
		memcpy(want + wlen, evs[i], strlen(evs[i]));
		wlen += strlen(evs[i]);
	}
	want[wlen] = '\0';
	for (step = 1; step <= 40; step++) {
		struct sse_cursor cur = {100, 0};
		size_t n = read_all(log, &cur, step, out, sizeof(out), &gap);

		assert_false(gap);
		assert_int_equal(n, strlen(want));
		assert_string_equal(out, want);
		assert_int_equal(cur.seq, 104);
		assert_int_equal(cur.off, 0);
		assert_true(sse_log_drained(log, &cur));
	}
	sse_log_free(log);
}

/* A cursor in the middle of an event continues there; new events are
 * picked up by the same cursor. */
static void
test_log_resume_mid_event(void **state)
{
	struct sse_log *log = new_log(16, 4096);
	struct sse_cursor cur = {0, 0};
	char dst[16];
	bool gap;
	size_t n;

	(void)state;
	append(log, 0, "abcdef");
	n = sse_log_read(log, &cur, dst, 4, &gap);
	assert_int_equal(n, 4);
	assert_memory_equal(dst, "abcd", 4);
	assert_int_equal(cur.seq, 0);
	assert_int_equal(cur.off, 4);
	assert_false(sse_log_drained(log, &cur));
	append(log, 1, "XY");
	n = sse_log_read(log, &cur, dst, sizeof(dst), &gap);
	assert_int_equal(n, 4);
	assert_memory_equal(dst, "efXY", 4);
	assert_int_equal(cur.seq, 2);
	assert_true(sse_log_drained(log, &cur));
	assert_int_equal(sse_log_read(log, &cur, dst, sizeof(dst), &gap), 0);
	assert_false(gap);
	append(log, 2, "Z");
	assert_false(sse_log_drained(log, &cur));
	assert_int_equal(sse_log_read(log, &cur, dst, sizeof(dst), &gap), 1);
	assert_int_equal(dst[0], 'Z');
	/* max 0 copies nothing and moves nothing. */
	cur.seq = 0;
	cur.off = 0;
	assert_int_equal(sse_log_read(log, &cur, dst, 0, &gap), 0);
	assert_int_equal(cur.seq, 0);
	sse_log_free(log);
}

/* A reader half-way through an event that is then evicted restarts at the
 * oldest kept event from its start, and is told about the gap. */
static void
test_log_gap_mid_event(void **state)
{
	struct sse_log *log = new_log(2, 4096);
	struct sse_cursor cur = {0, 0};
	char out[64];
	bool gap;
	size_t n;

	(void)state;
	append(log, 0, "AAAA");
	append(log, 1, "BBBB");
	n = sse_log_read(log, &cur, out, 2, &gap);
	assert_int_equal(n, 2);
	assert_false(gap);
	append(log, 2, "CCCC"); /* evicts 0 */
	append(log, 3, "DDDD"); /* evicts 1 */
	n = sse_log_read(log, &cur, out, sizeof(out), &gap);
	assert_true(gap);
	assert_int_equal(n, 8);
	assert_memory_equal(out, "CCCCDDDD", 8);
	assert_int_equal(cur.seq, 4);
	/* Caught up: no gap reported any more. */
	assert_int_equal(sse_log_read(log, &cur, out, sizeof(out), &gap), 0);
	assert_false(gap);
	sse_log_free(log);
}

/* A cursor beyond the newest event reads nothing and counts as drained. */
static void
test_log_drained(void **state)
{
	struct sse_log *log = new_log(4, 4096);
	struct sse_cursor cur = {0, 0};
	char out[8];
	bool gap;

	(void)state;
	append(log, 0, "a");
	assert_false(sse_log_drained(log, &cur));
	cur.seq = 1;
	assert_true(sse_log_drained(log, &cur));
	cur.seq = 50;
	assert_true(sse_log_drained(log, &cur));
	assert_int_equal(sse_log_read(log, &cur, out, sizeof(out), &gap), 0);
	assert_false(gap);
	assert_int_equal(cur.seq, 50);
	sse_log_free(log);
}

/* A limit holds back events at and past it, mid-stream too; raising it
 * lets the same cursor go on. */
static void
test_log_read_upto(void **state)
{
	static const struct {
		uint64_t limit;
		const char *want;
	} cases[] = {
		{0, ""}, {5, ""}, {6, "f"}, {7, "fg"}, {8, "fgh"}, {99, "fgh"},
	};
	struct sse_log *log = new_log(4, 4096);
	struct sse_cursor cur;
	char out[16];
	size_t i, n;
	bool gap;

	(void)state;
	append(log, 5, "f");
	append(log, 6, "g");
	append(log, 7, "h");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cur = (struct sse_cursor){5, 0};
		n = sse_log_read_upto(log, &cur, cases[i].limit, out,
				      sizeof(out), &gap);
		out[n] = '\0';
		assert_string_equal(out, cases[i].want);
		assert_false(gap);
	}
	cur = (struct sse_cursor){5, 0};
	assert_int_equal(sse_log_read_upto(log, &cur, 6, out, 1, &gap), 1);
	assert_int_equal(sse_log_read_upto(log, &cur, 6, out, 8, &gap), 0);
	assert_int_equal(cur.seq, 6);
	assert_int_equal(sse_log_read_upto(log, &cur, 8, out, 8, &gap), 2);
	assert_memory_equal(out, "gh", 2);
	/* a cursor before the oldest kept event still reports the gap */
	cur = (struct sse_cursor){1, 0};
	assert_int_equal(sse_log_read_upto(log, &cur, 6, out, 8, &gap), 1);
	assert_true(gap);
	sse_log_free(log);
}

/* sse_log_get finds kept events only. */
static void
test_log_get(void **state)
{
	struct sse_log *log = new_log(2, 4096);
	const char *ev;
	size_t len;

	(void)state;
	assert_int_equal(sse_log_get(log, 0, &ev, &len), STATUS_NOTFOUND);
	assert_null(ev);
	append(log, 3, "abc");
	append(log, 4, "de");
	assert_int_equal(sse_log_get(log, 3, &ev, &len), STATUS_OK);
	assert_int_equal(len, 3);
	assert_memory_equal(ev, "abc", 3);
	append(log, 5, "x"); /* evicts 3 */
	assert_int_equal(sse_log_get(log, 3, &ev, &len), STATUS_NOTFOUND);
	assert_int_equal(sse_log_get(log, 6, &ev, &len), STATUS_NOTFOUND);
	assert_int_equal(sse_log_get(log, 5, &ev, &len), STATUS_OK);
	assert_memory_equal(ev, "x", 1);
	sse_log_free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_table),
		cmocka_unit_test(test_encode_appends),
		cmocka_unit_test(test_encode_limit_rolls_back),
		cmocka_unit_test(test_encode_comment),
		cmocka_unit_test(test_log_new_rejects_zero),
		cmocka_unit_test(test_log_empty),
		cmocka_unit_test(test_log_append_sequence),
		cmocka_unit_test(test_log_evict_by_count),
		cmocka_unit_test(test_log_evict_by_bytes),
		cmocka_unit_test(test_log_partial_reads),
		cmocka_unit_test(test_log_resume_mid_event),
		cmocka_unit_test(test_log_gap_mid_event),
		cmocka_unit_test(test_log_drained),
		cmocka_unit_test(test_log_read_upto),
		cmocka_unit_test(test_log_get),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_recentids.c - unit tests for lib/telemetry/recentids against a
 * migrated throwaway PostgreSQL: trace ids of both sources and session
 * ids, each once, the one with the latest span first, within the range
 * only, cut at max; 1,500 traces give the 1,000 newest; bad arguments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "pg/pg.h"
#include "storetest.h"
#include "telemetry/recentids.h"

#define MIN_MS	(60LL * 1000)
#define HOUR_MS (60 * MIN_MS)

static struct storetest store;
static int64_t now_ms;

/* trace ids: 31 zeros and a letter; the bulk ones "b" and 31 hex digits */
#define TID(ch) "0000000000000000000000000000000" ch

static struct pg_conn *
conn(void)
{
	return storetest_conn(&store);
}

static void
exec(struct pg_conn *c, const char *sql)
{
	storetest_exec(c, sql, now_ms);
}

/* One span: trace id (hex), source, minutes before now, session or
 * NULL.  $1 is now. */
#define SPAN(tid, src, min, sess)                                              \
	"(decode('" tid                                                        \
	"', 'hex'), decode(substr(md5(random()::text), 1, 16), 'hex'), '" src  \
	"', $1::timestamptz - interval '" min " minutes', " sess               \
	", 'x', 'svc', 1000)"
#define COLS                                                                   \
	"INSERT INTO spans (trace_id, span_id, source, start_time, "           \
	"session_id, name, service_name, duration_ns) VALUES "

static int
group_setup(void **state)
{
	struct pg_conn *c = storetest_setup(&store, state, &now_ms);

	if (c == NULL)
		return -1;
	/* a: three spans, the latest 1 minute ago; b (eBPF) 5 minutes ago;
	 * c 30 minutes ago; d 30 hours ago (out of a 24 h range).  Sessions:
	 * s1 2 and 40 minutes ago, s2 20 minutes ago, s3 30 hours ago. */
	exec(c, COLS SPAN(TID("a"), "otlp", "10", "NULL"));
	exec(c, COLS SPAN(TID("a"), "otlp", "9", "'s1'"));
	exec(c, COLS SPAN(TID("a"), "otlp", "1", "NULL"));
	exec(c, COLS SPAN(TID("b"), "ebpf", "5", "'s1'"));
	exec(c, COLS SPAN(TID("c"), "otlp", "30", "'s2'"));
	exec(c, COLS SPAN(TID("c"), "otlp", "40", "'s1'"));
	exec(c, COLS SPAN(TID("d"), "otlp", "1800", "'s3'"));
	exec(c, COLS SPAN(TID("e"), "otlp", "2", "'s1'"));
	/* 1,500 traces of one span each, 2 h ago and older, a second apart */
	exec(c,
	     "INSERT INTO spans (trace_id, span_id, source, start_time, "
	     "name, service_name, duration_ns) "
	     "SELECT decode('b' || lpad(to_hex(i), 31, '0'), 'hex'), "
	     "decode(substr(md5(i::text), 1, 16), 'hex'), 'otlp', "
	     "$1::timestamptz - interval '2 hours' - i * interval '1 second', "
	     "'x', 'bulk', 1000 FROM generate_series(0, 1499) i");
	pg_release(c);
	return 0;
}

/* The ids of kind over [from, to) at most max, joined by spaces. */
static void
ids(enum recentids_kind kind, int64_t from, int64_t to, size_t max, char *out,
    size_t cap)
{
	struct pg_conn *c = conn();
	struct recentids *r = NULL;
	struct pg_error err;
	size_t len = 0;

	if (recentids_get(c, kind, from, to, max, &r, &err) != STATUS_OK)
		fail_msg("recentids_get: %s (%s)", err.client, err.detail);
	pg_release(c);
	out[0] = '\0';
	for (size_t i = 0; i < r->n && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%s",
					i > 0 ? " " : "", r->ids[i]);
	recentids_free(r);
}

static void
test_traces(void **state)
{
	char got[1024];

	(void)state;
	/* the last hour: a (1 min), e (2), b (5, eBPF), c (30) */
	ids(RECENTIDS_TRACES, now_ms - HOUR_MS, now_ms, 10, got, sizeof(got));
	assert_string_equal(got,
			    TID("a") " " TID("e") " " TID("b") " " TID("c"));
	ids(RECENTIDS_TRACES, now_ms - HOUR_MS, now_ms, 2, got, sizeof(got));
	assert_string_equal(got, TID("a") " " TID("e"));
	/* up to 3 minutes ago: a's earlier spans count, at 9 minutes */
	ids(RECENTIDS_TRACES, now_ms - HOUR_MS, now_ms - 3 * MIN_MS, 10, got,
	    sizeof(got));
	assert_string_equal(got, TID("b") " " TID("a") " " TID("c"));
}

static void
test_sessions(void **state)
{
	char got[256];

	(void)state;
	ids(RECENTIDS_SESSIONS, now_ms - 24 * HOUR_MS, now_ms, 10, got,
	    sizeof(got));
	assert_string_equal(got, "s1 s2");
	ids(RECENTIDS_SESSIONS, now_ms - 24 * HOUR_MS, now_ms, 1, got,
	    sizeof(got));
	assert_string_equal(got, "s1");
	ids(RECENTIDS_SESSIONS, now_ms - 48 * HOUR_MS, now_ms - 3 * MIN_MS, 10,
	    got, sizeof(got));
	assert_string_equal(got, "s1 s2 s3");
}

/* 1,500 traces: the 1,000 newest, newest first, each once. */
static void
test_bound(void **state)
{
	struct pg_conn *c = conn();
	struct recentids *r = NULL;
	struct pg_error err;
	char want[40];

	(void)state;
	assert_int_equal(recentids_get(c, RECENTIDS_TRACES,
				       now_ms - 3 * HOUR_MS,
				       now_ms - 2 * HOUR_MS + 1, RECENTIDS_MAX,
				       &r, &err),
			 STATUS_OK);
	assert_int_equal(r->n, RECENTIDS_MAX);
	for (size_t i = 0; i < r->n; i++) {
		snprintf(want, sizeof(want), "b%031zx", i);
		assert_string_equal(r->ids[i], want);
	}
	recentids_free(r);
	pg_release(c);
}

static void
test_bad_args(void **state)
{
	struct pg_conn *c = conn();
	struct recentids *r = (void *)1;
	struct pg_error err;

	(void)state;
	assert_int_equal(recentids_get(c, RECENTIDS_TRACES, now_ms, now_ms, 10,
				       &r, &err),
			 STATUS_INVALID);
	assert_null(r);
	assert_int_equal(
		recentids_get(c, RECENTIDS_SESSIONS, 0, now_ms, 0, &r, &err),
		STATUS_INVALID);
	assert_int_equal(recentids_get(c, RECENTIDS_SESSIONS, 0, now_ms,
				       RECENTIDS_MAX + 1, &r, &err),
			 STATUS_INVALID);
	assert_string_equal(err.client,
			    "a non-empty time range and 1..1000 ids are "
			    "required");
	recentids_free(NULL);
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traces),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, group_setup, storetest_teardown);
}

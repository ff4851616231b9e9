/*
 * test_store.c - lib/otlp/store: the COPY text encoding, and writing decoded
 * OTLP batches into a migrated throwaway PostgreSQL (dedupe, nanoseconds,
 * all-or-nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"

static struct pgtest_cluster cluster;
static struct pg_pool *pool;

static const struct {
	const char *in; /* NULL: SQL NULL */
	const char *out;
} text_cases[] = {
	{"plain", "plain"},
	{NULL, "\\N"},
	{"", ""},
	{"tab\there", "tab\\there"},
	{"new\nline\r", "new\\nline\\r"},
	{"back\\slash", "back\\\\slash"},
	{"\\N", "\\\\N"}, /* the text "\N" is data, not NULL */
	{"{\"k\": \"v\"}", "{\"k\": \"v\"}"},
};

static void
test_copy_text(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		struct buf b;

		buf_init(&b, 1024);
		assert_int_equal(store_copy_text(&b, text_cases[i].in),
				 STATUS_OK);
		assert_string_equal(b.data, text_cases[i].out);
		buf_free(&b);
	}
}

static void
test_copy_bytea_and_time(void **state)
{
	static const uint8_t id[4] = {0x00, 0x7f, 0xab, 0xff};
	struct buf b;

	(void)state;
	buf_init(&b, 1024);
	assert_int_equal(store_copy_bytea(&b, id, sizeof(id)), STATUS_OK);
	assert_string_equal(b.data, "\\\\x007fabff");
	buf_reset(&b);
	/* 2026-11-22 20:01:02.123456789 UTC (date -u -d @1795377662) */
	assert_int_equal(store_copy_time(&b, 1795377662123456789ull),
			 STATUS_OK);
	assert_string_equal(b.data, "2026-11-22 20:01:02.123456+00");
	buf_free(&b);
}

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 2, .statement_timeout_ms = 10000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	char err[512];
	PGconn *conn;
	int applied;

	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	if (pgtest_start(&cluster) != 0)
		return -1;
	conn = PQconnectdb(cluster.conninfo);
	if (PQstatus(conn) != CONNECTION_OK ||
	    migrate_apply(conn, &opts, &applied, err, sizeof(err)) !=
		    STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(conn));
		PQfinish(conn);
		return -1;
	}
	PQfinish(conn);
	pc.conninfo = cluster.conninfo;
	if (pg_pool_new(&pc, &pool, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(pool, 10000, &perr) != STATUS_OK)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_pool_free(pool);
	pgtest_destroy(&cluster);
	return 0;
}

static struct otlp_span
span_at(uint8_t n, uint64_t start)
{
	struct otlp_span s = {0};

	memset(s.trace_id, 0xa0, sizeof(s.trace_id));
	memset(s.span_id, n, sizeof(s.span_id));
	s.service_name = "payments";
	s.name = "GET /pay\twith\\odd\nchars";
	s.kind = 2;
	s.start_unix_nano = start;
	s.end_unix_nano = start + 23000123;
	s.source = OTLP_SOURCE_OTLP;
	s.http_method = "GET";
	s.http_route = "/pay";
	s.http_status = 503;
	s.grpc_status = -1;
	s.input_tokens = -1;
	s.output_tokens = 42;
	s.attributes_json = "{\"http.route\":\"/pay\"}";
	return s;
}

static char *
query1(struct pg_conn *c, const char *sql)
{
	PGresult *res = NULL;
	struct pg_error perr;
	char *v;

	assert_int_equal(pg_query(c, sql, 0, NULL, &res, &perr), STATUS_OK);
	assert_int_equal(PQntuples(res), 1);
	v = strdup(PQgetisnull(res, 0, 0) ? "NULL" : PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

static void
test_write_spans(void **state)
{
	/* a time inside today's partition: now */
	uint64_t now = (uint64_t)time(NULL) * 1000000000ull + 123456789ull;
	struct otlp_span spans[3] = {span_at(1, now), span_at(2, now + 1000),
				     span_at(1, now)};
	struct otlp_batch b = {.spans = spans, .n_spans = 3};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	int64_t inserted = -1;
	char *v, want[64];

	(void)state;
	spans[1].has_parent = true;
	memset(spans[1].parent_span_id, 1, 8);
	spans[2].source = OTLP_SOURCE_EBPF; /* same ids, other source */
	assert_int_equal(pg_acquire(pool, NULL, 5000, &c, &perr), STATUS_OK);
	assert_int_equal(store_write_spans(c, &b, &inserted, &perr), STATUS_OK);
	assert_int_equal(inserted, 3);
	/* the same batch again: nothing new */
	assert_int_equal(store_write_spans(c, &b, &inserted, &perr), STATUS_OK);
	assert_int_equal(inserted, 0);
	v = query1(c, "SELECT count(*) FROM spans");
	assert_string_equal(v, "3");
	free(v);
	/* nanoseconds survive */
	v = query1(c, "SELECT sextant_unix_nano(start_time, start_nanos)::text "
		      "FROM spans WHERE source = 'otlp' AND parent_span_id "
		      "IS NULL");
	snprintf(want, sizeof(want), "%llu", (unsigned long long)now);
	assert_string_equal(v, want);
	free(v);
	v = query1(c,
		   "SELECT name || '|' || duration_ns || '|' || "
		   "http_status_code || '|' || coalesce("
		   "gen_ai_input_tokens::text, 'NULL') || '|' || "
		   "gen_ai_output_tokens || '|' || (attributes->>'http.route') "
		   "FROM spans WHERE source = 'ebpf'");
	assert_string_equal(v, "GET /pay\twith\\odd\nchars|23000123|503|NULL|"
			       "42|/pay");
	free(v);
	v = query1(c, "SELECT encode(parent_span_id, 'hex') FROM spans WHERE "
		      "parent_span_id IS NOT NULL");
	assert_string_equal(v, "0101010101010101");
	free(v);
	pg_release(c);
}

static void
test_write_is_all_or_nothing(void **state)
{
	uint64_t now = (uint64_t)time(NULL) * 1000000000ull;
	struct otlp_span spans[2] = {span_at(7, now), span_at(8, now)};
	struct otlp_batch b = {.spans = spans, .n_spans = 2};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	int64_t inserted = -1;
	char *v;

	(void)state;
	spans[1].attributes_json = "{not json"; /* the store refuses it */
	assert_int_equal(pg_acquire(pool, NULL, 5000, &c, &perr), STATUS_OK);
	assert_int_not_equal(store_write_spans(c, &b, &inserted, &perr),
			     STATUS_OK);
	assert_int_equal(inserted, 0);
	assert_string_equal(perr.sqlstate, "22P02");
	assert_null(strstr(perr.client, "INSERT"));
	v = query1(c, "SELECT count(*) FROM spans WHERE span_id = "
		      "'\\x0707070707070707'");
	assert_string_equal(v, "0");
	free(v);
	pg_release(c);
}

static void
test_write_points(void **state)
{
	static const double bounds[] = {0.1, 0.5};
	static const uint64_t counts[] = {3, 2, 1};
	uint64_t now = (uint64_t)time(NULL) * 1000000000ull;
	struct otlp_point p[2] = {
		{.type = OTLP_POINT_SUM,
		 .name = "requests",
		 .time_unix_nano = now,
		 .start_unix_nano = now - 1000000000ull,
		 .is_int = true,
		 .int_value = 41,
		 .temporality = OTLP_TEMPORALITY_CUMULATIVE,
		 .monotonic = true,
		 .service_name = "payments"},
		{.type = OTLP_POINT_HISTOGRAM,
		 .name = "latency",
		 .time_unix_nano = now,
		 .count = 6,
		 .has_sum = true,
		 .sum = 1.5,
		 .temporality = OTLP_TEMPORALITY_DELTA,
		 .n_bounds = 2,
		 .bounds = bounds,
		 .n_bucket_counts = 3,
		 .bucket_counts = counts,
		 .service_name = "payments"},
	};
	struct otlp_batch b = {.points = p, .n_points = 2};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	int64_t inserted = -1;
	char *v;

	(void)state;
	assert_int_equal(pg_acquire(pool, NULL, 5000, &c, &perr), STATUS_OK);
	assert_int_equal(store_write_points(c, &b, &inserted, &perr),
			 STATUS_OK);
	assert_int_equal(inserted, 2);
	v = query1(c, "SELECT value || '|' || is_monotonic || '|' || "
		      "temporality FROM metric_points WHERE name = 'requests'");
	assert_string_equal(v, "41|true|2");
	free(v);
	v = query1(c, "SELECT count || '|' || sum || '|' || bounds::text || "
		      "'|' || bucket_counts::text FROM metric_points WHERE "
		      "name = 'latency'");
	assert_string_equal(v, "6|1.5|{0.1,0.5}|{3,2,1}");
	free(v);
	pg_release(c);
}

/*
 * The dirty marks go in sorted by period, minutes and hours alike: two
 * writers whose batches share minutes then take their index entries in
 * the same order, and neither waits for the other while holding one the
 * other needs (in hash order, demo-data's two writers deadlocked).  A
 * trigger logs each mark's insertion, for a batch over 3 hours of minutes
 * in shuffled order.
 */
static void
test_marks_in_order(void **state)
{
	enum {
		N = 150
	};
	uint64_t now = (uint64_t)time(NULL) * 1000000000ull;
	struct otlp_span spans[N];
	struct otlp_batch b = {.spans = spans, .n_spans = N};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	int64_t inserted = -1;
	uint64_t seed = 12345;
	char *v;

	(void)state;
	for (int i = 0; i < N; i++) {
		/* minute i of the last 150, a span id of its own */
		spans[i] = span_at((uint8_t)(i + 16),
				   now - (uint64_t)(i + 1) * 60000000000ull);
		spans[i].span_id[0] = (uint8_t)(i >> 8);
	}
	for (int i = N - 1; i > 0; i--) {
		struct otlp_span t;
		int j;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		j = (int)((seed >> 33) % (uint64_t)(i + 1));
		t = spans[i];
		spans[i] = spans[j];
		spans[j] = t;
	}
	assert_int_equal(pg_acquire(pool, NULL, 5000, &c, &perr), STATUS_OK);
	assert_int_equal(
		pg_exec_script(
			c,
			"TRUNCATE span_rollup_dirty, span_rollup_minute_dirty; "
			"CREATE TABLE mark_log (n serial, tab text, p "
			"timestamptz); "
			"CREATE FUNCTION mark_logged() RETURNS trigger "
			"LANGUAGE "
			"plpgsql AS $$ BEGIN INSERT INTO mark_log (tab, p) "
			"VALUES (TG_TABLE_NAME, NEW.period); RETURN NEW; END "
			"$$; "
			"CREATE TRIGGER ml BEFORE INSERT ON span_rollup_dirty "
			"FOR EACH ROW EXECUTE FUNCTION mark_logged(); "
			"CREATE TRIGGER ml BEFORE INSERT ON "
			"span_rollup_minute_dirty FOR EACH ROW EXECUTE "
			"FUNCTION mark_logged()",
			&perr),
		STATUS_OK);
	assert_int_equal(store_write_spans(c, &b, &inserted, &perr), STATUS_OK);
	assert_int_equal(inserted, N);
	/* every mark logged once, and none after a later period of its
	 * table */
	v = query1(c, "SELECT count(*) FILTER (WHERE tab = "
		      "'span_rollup_minute_dirty') || '|' || count(*) "
		      "FILTER (WHERE tab = 'span_rollup_dirty') || '|' || "
		      "count(*) FILTER (WHERE p < prev) FROM (SELECT tab, p, "
		      "lag(p) OVER (PARTITION BY tab ORDER BY n) AS prev "
		      "FROM mark_log) l");
	if (strcmp(v, "150|3|0") != 0 && strcmp(v, "150|4|0") != 0)
		fail_msg("minute marks | hour marks | out of order: %s", v);
	free(v);
	assert_int_equal(pg_exec_script(c,
					"DROP TABLE mark_log; DROP FUNCTION "
					"mark_logged() CASCADE",
					&perr),
			 STATUS_OK);
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_copy_text),
		cmocka_unit_test(test_copy_bytea_and_time),
	};
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_write_spans),
		cmocka_unit_test(test_write_is_all_or_nothing),
		cmocka_unit_test(test_write_points),
		cmocka_unit_test(test_marks_in_order),
	};
	int failed =
		cmocka_run_group_tests_name("store encoding", pure, NULL, NULL);

	failed += cmocka_run_group_tests_name("store writes", db, group_setup,
					      group_teardown);
	return failed;
}

/*
 * test_timeline.c - lib/telemetry/timeline: the step argument (pure):
 * accepted forms, the whole-minute rule, the bound on points and the
 * messages that say what to use; and on a migrated throwaway PostgreSQL
 * the statement's paths against each other: a service's timeline in
 * 5-minute steps from span_rollup_5m equals the same timeline through the
 * minute rows and through the raw spans, also with a dirty minute inside a
 * 5-minute period, and a filtered timeline does not read span_rollup_5m.
 * The statement is also driven end to end by
 * test/integration/query.test.mjs (query_metrics step).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "storetest.h"
#include "telemetry/pointquery.h"
#include "telemetry/rollup.h"
#include "telemetry/timeline.h"

#define MIN_MS	60000LL
#define HOUR_MS (60 * MIN_MS)
#define DAY_MS	(24 * HOUR_MS)
/* 2025-11-21T10:00:00Z */
#define T0 1763719200000LL

static const struct {
	int64_t from_ms, to_ms;
	const char *step;
	int64_t want;	   /* 0: refused */
	const char *error; /* part of the message when refused */
} cases[] = {
	{T0, T0 + HOUR_MS, "1m", 60, NULL},
	{T0, T0 + DAY_MS, "5m", 300, NULL},
	{T0, T0 + DAY_MS, "1h", 3600, NULL},
	{T0, T0 + 7 * DAY_MS, "1d", 86400, NULL},
	{T0, T0 + HOUR_MS, "120s", 120, NULL},
	{T0, T0 + HOUR_MS, "90m", 5400, NULL},
	/* 360 points exactly, and one more (an unaligned start) */
	{T0, T0 + 360 * MIN_MS, "1m", 60, NULL},
	{T0 + 1, T0 + 360 * MIN_MS + 1, "1m", 0,
	 "step \"1m\" gives 361 points per series over this time range, more "
	 "than 360: "
	 "use a step of at least \"2m\" or a shorter time_range"},
	{T0, T0 + DAY_MS, "1m", 0, "use a step of at least \"5m\""},
	{T0, T0 + HOUR_MS, "30s", 0,
	 "step \"30s\" is not a whole number of minutes: use \"1m\" or more"},
	{T0, T0 + HOUR_MS, "5x", 0,
	 "step \"5x\" is not understood: use whole minutes, hours or days, "
	 "like \"1m\", \"5m\", \"1h\", \"1d\""},
	{T0, T0 + HOUR_MS, "0m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "-5m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "5 m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "5mm", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "", 0, "step \"\" is not understood"},
	{T0, T0 + HOUR_MS, NULL, 0, "is not understood"},
	{T0, T0 + HOUR_MS, "99999999999999999999m", 0, "is not understood"},
};

static void
test_step(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256];
		int64_t s = -1;
		int rc = timeline_step(cases[i].from_ms, cases[i].to_ms,
				       cases[i].step, &s, err, sizeof(err));

		if (cases[i].want > 0) {
			if (rc != STATUS_OK)
				fail_msg("case %zu: %s", i, err);
			assert_int_equal(s, cases[i].want);
			assert_string_equal(err, "");
			assert_true(pointquery_step_count(cases[i].from_ms,
							  cases[i].to_ms, s) <=
				    TIMELINE_MAX_STEPS);
			continue;
		}
		assert_int_equal(rc, STATUS_INVALID);
		assert_int_equal(s, 0);
		if (strstr(err, cases[i].error) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
				 cases[i].error);
	}
}

/* ---- the statement's paths, on a store ----------------------------------- */

static struct storetest store;

/* xorshift64*: the same numbers on every run. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void
exec_sql(struct pg_conn *c, const char *sql)
{
	struct pg_error err;

	if (pg_query(c, sql, 0, NULL, NULL, &err) != STATUS_OK)
		fail_msg("%s: %s", sql, err.detail);
}

static const char *const routes[] = {"/a", "/b", "/c/{id}"};
static const int http_codes[] = {200, 200, 200, 201, 404, 429, 500, 503};
static const int grpc_codes[] = {0, 0, 0, 5, 13, 16};

/* One call of service "tl" (OTLP), id id, starting at at_ns: HTTP on
 * three routes, gRPC or SQL, statuses of every outcome, durations
 * log-uniform from 1 us to 10 s. */
static void
fill_call(struct otlp_span *x, uint32_t id, uint64_t at_ns, uint64_t *seed)
{
	uint64_t d = (uint64_t)(1000.0 * pow(1e7, (double)(rnd(seed) % 10000) /
							  10000.0));

	x->trace_id[0] = 0x71;
	memcpy(x->trace_id + 4, &id, sizeof(id));
	memcpy(x->span_id, &id, sizeof(id));
	x->service_name = "tl";
	x->source = OTLP_SOURCE_OTLP;
	x->name = "op";
	x->start_unix_nano = at_ns;
	x->end_unix_nano = at_ns + d;
	x->status_code = rnd(seed) % 10 == 0 ? 2 : 0;
	x->http_status = x->grpc_status = -1;
	x->input_tokens = x->output_tokens = -1;
	switch (rnd(seed) % 3) {
	case 0:
		x->kind = 2;
		x->http_method = rnd(seed) % 2 ? "GET" : "POST";
		x->http_route = routes[rnd(seed) % 3];
		x->http_status = http_codes[rnd(seed) % 8];
		break;
	case 1:
		x->kind = 2;
		x->rpc_system = "grpc";
		x->rpc_service = "t.S";
		x->rpc_method = "M";
		x->grpc_status = grpc_codes[rnd(seed) % 6];
		break;
	default:
		x->kind = 3;
		x->db_system = "postgresql";
		x->db_operation = "SELECT";
		x->db_table = "t";
		break;
	}
}

/* Spans per batch written by write_calls. */
#define BATCH 1000

/*
 * n calls (fill_call) at random times in [start_ms, start_ms + width_ms),
 * through lib/otlp/store (which marks their minutes dirty).
 */
static void
write_calls(struct pg_conn *c, int64_t start_ms, int64_t width_ms, size_t n,
	    uint64_t *seed)
{
	static struct otlp_span s[BATCH];
	static uint32_t next_id;

	for (size_t done = 0; done < n;) {
		struct otlp_batch b = {.spans = s,
				       .n_spans = n - done < BATCH ? n - done
								   : BATCH};
		struct pg_error err;
		int64_t inserted = 0;

		memset(s, 0, sizeof(s));
		for (size_t i = 0; i < b.n_spans; i++)
			fill_call(&s[i], ++next_id,
				  (uint64_t)start_ms * 1000000ull +
					  rnd(seed) % ((uint64_t)width_ms *
						       1000000ull),
				  seed);
		if (store_write_spans(c, &b, &inserted, &err) != STATUS_OK)
			fail_msg("store_write_spans: %s", err.detail);
		assert_int_equal(inserted, (int64_t)b.n_spans);
		done += b.n_spans;
	}
}

/* Every settled dirty minute and hour rolled up (marks taken whatever
 * their age). */
static void
refresh_all(struct pg_conn *c)
{
	struct pg_error err;
	int done = 0, pending = -1;

	if (rollup_refresh_fenced(c, &done, &pending, &err) != STATUS_OK)
		fail_msg("rollup_refresh_fenced: %s", err.detail);
	assert_true(done > 0);
}

static struct timeline *
timeline_of(struct pg_conn *c, const struct spanquery_filter *f, int64_t step_s,
	    int64_t now_ms)
{
	struct timeline *t = NULL;
	struct pg_error err;

	if (timeline_send(c, "otlp", f, step_s, now_ms, &err) != STATUS_OK ||
	    timeline_recv(c, f, step_s, &t, &err) != STATUS_OK)
		fail_msg("timeline: %s (%s)", err.client, err.detail);
	return t;
}

/* The calls of a timeline per protocol (0 without a series). */
static uint64_t
calls_of(const struct timeline *t, int protocol)
{
	uint64_t n = 0;

	for (size_t k = 0; t->p[protocol] != NULL && k < t->n; k++)
		n += t->p[protocol][k].requests;
	return n;
}

/* Two timelines of the same range and step: the same steps, series and
 * points, P95 to the bit (the same histograms). */
static void
assert_same(const struct timeline *a, const struct timeline *b,
	    const char *what)
{
	assert_int_equal(a->first_ms, b->first_ms);
	assert_int_equal(a->n, b->n);
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		if ((a->p[p] == NULL) != (b->p[p] == NULL))
			fail_msg("%s: protocol %d series in one only", what, p);
		for (size_t k = 0; a->p[p] != NULL && k < a->n; k++) {
			const struct timeline_point *x = &a->p[p][k],
						    *y = &b->p[p][k];

			if (x->requests != y->requests ||
			    x->errors != y->errors ||
			    x->client_errors != y->client_errors ||
			    x->p95_ms != y->p95_ms)
				fail_msg("%s: protocol %d step %zu: %llu %llu "
					 "%llu %.9f vs %llu %llu %llu %.9f",
					 what, p, k,
					 (unsigned long long)x->requests,
					 (unsigned long long)x->errors,
					 (unsigned long long)x->client_errors,
					 x->p95_ms,
					 (unsigned long long)y->requests,
					 (unsigned long long)y->errors,
					 (unsigned long long)y->client_errors,
					 y->p95_ms);
		}
	}
}

/*
 * The 5m path, the minute path and raw spans agree: f through the 5m path
 * (as of now_ms), f with an HTTP status range that keeps every call
 * (0..999: not the service alone, so the minute rows), and f as of its
 * own start (nothing settled: every span raw, bucketed alike).
 */
static void
assert_paths_agree(struct pg_conn *c, const struct spanquery_filter *f,
		   int64_t now_ms, const char *what)
{
	struct spanquery_filter wide = *f;
	struct timeline *five, *minutes, *raw;

	wide.http_status_min = 0;
	wide.http_status_max = 999;
	five = timeline_of(c, f, 300, now_ms);
	minutes = timeline_of(c, &wide, 300, now_ms);
	raw = timeline_of(c, f, 300, f->from_ms);
	assert_same(five, minutes, what);
	assert_same(five, raw, what);
	timeline_free(five);
	timeline_free(minutes);
	timeline_free(raw);
}

/* The requests of the HTTP step holding at_ms (0 without a series). */
static uint64_t
http_at(struct pg_conn *c, const struct spanquery_filter *f, int64_t step_s,
	int64_t now_ms, int64_t at_ms)
{
	struct timeline *t = timeline_of(c, f, step_s, now_ms);
	uint64_t n = 0;

	if (t->p[SPANQUERY_HTTP] != NULL)
		n = t->p[SPANQUERY_HTTP][(at_ms - t->first_ms) / 1000 / step_s]
			    .requests;
	timeline_free(t);
	return n;
}

/*
 * Three hours of calls, rolled up, read over an unaligned range in 5m
 * steps three ways (5m rows, minute rows, raw spans) to the same answer;
 * a made-up span_rollup_5m row shows in the service's 5m steps only (not
 * in 1m steps, nor with a route filter, nor in a period with a dirty
 * minute); late spans in a rolled-up minute leave the three ways equal.
 */
static void
test_five_minute_path(void **state)
{
	struct pg_conn *c = storetest_conn(&store);
	int64_t now_ms, h4, mid;
	uint64_t seed = 0x7153;
	struct spanquery_filter f = {.service = "tl", .grpc_status = -1};
	struct spanquery_filter route = f, sql_only = f;
	char sql[256];
	struct timeline *t;

	(void)state;
	now_ms = storetest_now_ms();
	h4 = now_ms / HOUR_MS * HOUR_MS - 4 * HOUR_MS;
	write_calls(c, h4, 3 * HOUR_MS, 6000, &seed);
	refresh_all(c);

	/* unaligned: raw head and tail, minute rows at both ends */
	f.from_ms = h4 + 3 * MIN_MS + 17000;
	f.to_ms = h4 + 3 * HOUR_MS - 13 * MIN_MS - 5000;
	assert_paths_agree(c, &f, now_ms, "service");
	t = timeline_of(c, &f, 300, now_ms);
	assert_true(calls_of(t, SPANQUERY_HTTP) > 1500);
	assert_true(calls_of(t, SPANQUERY_GRPC) > 1500);
	assert_true(calls_of(t, SPANQUERY_SQL) > 1500);
	timeline_free(t);
	sql_only.protocols = 1u << SPANQUERY_SQL;
	sql_only.from_ms = f.from_ms;
	sql_only.to_ms = f.to_ms;
	assert_paths_agree(c, &sql_only, now_ms, "sql only");

	/* the 5m rows serve the service's 5m steps, and only those: 1,000
	 * made-up calls (in the top bucket) added to one show there only */
	mid = h4 + HOUR_MS + 30 * MIN_MS;
	route.from_ms = f.from_ms;
	route.to_ms = f.to_ms;
	route.http_route = "/a";
	snprintf(sql, sizeof(sql),
		 "UPDATE span_rollup_5m SET requests = requests + 1000, "
		 "buckets = (buckets::int[] || 4400)::text, counts = "
		 "(counts::bigint[] || 1000::bigint)::text "
		 "WHERE period = to_timestamp(%lld) AND service_name = 'tl' "
		 "AND protocol = 'http' AND outcome = 0",
		 (long long)(mid / 1000));
	{
		uint64_t five = http_at(c, &f, 300, now_ms, mid),
			 one = http_at(c, &f, 60, now_ms, mid),
			 routed = http_at(c, &route, 300, now_ms, mid);

		exec_sql(c, sql);
		assert_int_equal(http_at(c, &f, 300, now_ms, mid), five + 1000);
		assert_int_equal(http_at(c, &f, 60, now_ms, mid), one);
		assert_int_equal(http_at(c, &route, 300, now_ms, mid), routed);
	}
	/* late spans in that period's third minute: the period is read
	 * from its minutes and the raw minute, not the 5m row with the
	 * made-up calls (which the paths would not agree on) */
	write_calls(c, mid + 2 * MIN_MS, MIN_MS, 30, &seed);
	assert_paths_agree(c, &f, now_ms, "a dirty minute");
	assert_paths_agree(c, &sql_only, now_ms, "sql only, a dirty minute");
	/* rolled up again: the period merged anew from its minutes (the
	 * made-up row gone), read from its 5m rows, still the same */
	refresh_all(c);
	assert_paths_agree(c, &f, now_ms, "after the late minute's refresh");
	pg_release(c);
}

static int
db_setup(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	return storetest_start(&store, 1);
}

static int
db_teardown(void **state)
{
	(void)state;
	storetest_stop(&store);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step),
	};
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_five_minute_path),
	};
	int failed = cmocka_run_group_tests_name("timeline", tests, NULL, NULL);

	return failed + cmocka_run_group_tests_name("timeline_db", db, db_setup,
						    db_teardown);
}

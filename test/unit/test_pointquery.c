/*
 * test_pointquery.c - lib/telemetry/pointquery: steps and histogram quantiles (pure),
 * then metric aggregation (gauges, counters with resets, delta sums with a
 * duplicated point, histogram percentiles) and OTLP span search against a
 * migrated throwaway PostgreSQL, checked against hand-computed values and
 * SQL run independently here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"
#include "telemetry/pointquery.h"
#include "telemetry/spansearch.h"

#define MIN_MS 60000LL

/* ---- pure -------------------------------------------------------------- */

static const struct {
	int64_t from_ms, to_ms;
	const char *step;
	int64_t want;	   /* 0: an error */
	const char *error; /* substring of the error */
} step_cases[] = {
	/* an hour aligned on 30 s: exactly 120 steps of 30 s */
	{0, 3600000, NULL, 30, NULL},
	/* not aligned: 30 s would make 121 steps */
	{1000, 3601000, NULL, 60, NULL},
	{0, 24 * 3600000LL, NULL, 900, NULL},
	{0, 7 * 24 * 3600000LL, NULL, 7200, NULL},
	{0, 600000, NULL, 10, NULL},
	{0, 3600000, "1m", 60, NULL},
	{0, 3600000, "10s", 10, NULL},
	{0, 3600000, "2h", 7200, NULL},
	{0, 3600000, "1d", 86400, NULL},
	{0, 3600000, "5s", 0, "below the minimum of 10s"},
	{0, 3600000, "1x", 0, "is not understood"},
	{0, 3600000, "m", 0, "is not understood"},
	{0, 3600000, "-1m", 0, "is not understood"},
	{0, 3600000, "1m ", 0, "is not understood"},
	{0, 3600000, "99999999999999999999s", 0, "is not understood"},
	/* 8640 steps: the hint is the smallest nice step under 1000 */
	{0, 24 * 3600000LL, "10s", 0, "at least \"2m\""},
	{1000, 1000, NULL, 0, "empty"},
};

static void
test_step(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(step_cases) / sizeof(step_cases[0]);
	     i++) {
		char err[256];
		int64_t s = -1;
		int rc = pointquery_step(
			step_cases[i].from_ms, step_cases[i].to_ms,
			step_cases[i].step, &s, err, sizeof(err));

		if (step_cases[i].want > 0) {
			if (rc != STATUS_OK)
				fail_msg("case %zu: %s", i, err);
			assert_int_equal(s, step_cases[i].want);
			assert_true(pointquery_step_count(step_cases[i].from_ms,
							  step_cases[i].to_ms,
							  s) <=
				    (step_cases[i].step == NULL
					     ? POINTQUERY_DEFAULT_STEPS
					     : POINTQUERY_MAX_STEPS));
		} else {
			assert_int_equal(rc, STATUS_INVALID);
			assert_int_equal(s, 0);
			if (strstr(err, step_cases[i].error) == NULL)
				fail_msg("case %zu: \"%s\" lacks \"%s\"", i,
					 err, step_cases[i].error);
		}
	}
	/* aligned steps: [59 s, 61 s) touches two minutes */
	assert_int_equal(pointquery_step_count(59000, 61000, 60), 2);
	assert_int_equal(pointquery_step_count(60000, 120000, 60), 1);
}

static void
test_agg_names(void **state)
{
	(void)state;
	for (int a = POINTQUERY_AGG_AUTO; a <= POINTQUERY_AGG_P99; a++)
		assert_int_equal(pointquery_agg_parse(pointquery_agg_name(a)),
				 a);
	assert_int_equal(pointquery_agg_parse("median"), -1);
	assert_int_equal(pointquery_agg_parse(NULL), -1);
	assert_null(pointquery_agg_name((enum pointquery_agg)99));
}

static const double b3[] = {0.1, 0.5, 1.0};
static const double c_a[] = {10, 10, 0, 0};
static const double c_b[] = {10, 0, 5, 5};
static const double b2[] = {0.2, 0.6};
static const double c_c[] = {0, 4, 0};
static const double c_neg[] = {-5, 10, 0, 0};
static const double c_zero[] = {0, 0, 0, 0};
static const double bad_bounds[] = {0.5, 0.1, 1.0};
static const double c_one[] = {8};

static const struct {
	const char *what;
	struct pointquery_hist h[2];
	size_t n;
	double q, want; /* NaN: no value */
} quantile_cases[] = {
	/* rank 10 of 20 ends the first bucket (0, 0.1] */
	{"p50 at a bucket edge", {{b3, 3, c_a, NAN, NAN}}, 1, 0.5, 0.1},
	/* rank 19: 9 of the 10 in (0.1, 0.5] */
	{"p95 inside a bucket", {{b3, 3, c_a, NAN, NAN}}, 1, 0.95, 0.46},
	{"p25 in the first bucket", {{b3, 3, c_a, NAN, NAN}}, 1, 0.25, 0.05},
	/* the first bucket starts at min when known */
	{"first bucket from min", {{b3, 3, c_a, 0.06, NAN}}, 1, 0.25, 0.08},
	/* rank 19 in (1, +inf): no max, so the last finite bound */
	{"open last bucket", {{b3, 3, c_b, NAN, NAN}}, 1, 0.95, 1.0},
	/* with max 2: 4 of the 5 in (1, 2] */
	{"last bucket to max", {{b3, 3, c_b, NAN, 2.0}}, 1, 0.95, 1.8},
	{"p99 to max", {{b3, 3, c_b, NAN, 2.0}}, 1, 0.99, 1.96},
	/* interpolation gives 0.46, above the max seen */
	{"clamped to max", {{b3, 3, c_a, NAN, 0.3}}, 1, 0.95, 0.3},
	/* two histograms with the same bounds are their sum: [20,10,5,5],
	 * rank 38 of 40: 3 of 5 in (1, 2] */
	{"merged, same bounds",
	 {{b3, 3, c_a, NAN, NAN}, {b3, 3, c_b, NAN, 2.0}},
	 2,
	 0.95,
	 1.6},
	/* different bounds: c_a spreads 10 over (0, 0.1] and 10 over
	 * (0.1, 0.5]; c_c 4 over (0.2, 0.6].  F(0.5) = 20 + 3 = 23 of 24;
	 * rank 12 (p50): F(0.1) = 10, F(0.2) = 12.5 -> 0.1 + 0.1 * 2/2.5 */
	{"merged, other bounds",
	 {{b3, 3, c_a, NAN, NAN}, {b2, 2, c_c, NAN, NAN}},
	 2,
	 0.5,
	 0.18},
	/* rank 22.8: F(0.5) = 23 > 22.8 > F(0.2) = 12.5; between 0.2 and
	 * 0.5 F grows by 25 + 10 per unit: 0.2 + 10.3 / 35 */
	{"merged, other bounds, p95",
	 {{b3, 3, c_a, NAN, NAN}, {b2, 2, c_c, NAN, NAN}},
	 2,
	 0.95,
	 0.2 + 10.3 / 35},
	{"negative counts are 0", {{b3, 3, c_neg, NAN, NAN}}, 1, 0.5, 0.3},
	{"no observations", {{b3, 3, c_zero, NAN, NAN}}, 1, 0.5, NAN},
	{"unsorted bounds ignored",
	 {{bad_bounds, 3, c_a, NAN, NAN}},
	 1,
	 0.5,
	 NAN},
	{"no bounds, min and max", {{NULL, 0, c_one, 2, 4}}, 1, 0.5, 3},
	{"no bounds, no max", {{NULL, 0, c_one, 2, NAN}}, 1, 0.5, NAN},
	{"q out of range", {{b3, 3, c_a, NAN, NAN}}, 1, 1.0, NAN},
	{"nothing", {{0}}, 0, 0.5, NAN},
};

static void
test_quantile(void **state)
{
	(void)state;
	for (size_t i = 0;
	     i < sizeof(quantile_cases) / sizeof(quantile_cases[0]); i++) {
		double v = 0;

		assert_int_equal(pointquery_quantile(quantile_cases[i].h,
						     quantile_cases[i].n,
						     quantile_cases[i].q, &v),
				 STATUS_OK);
		if (isnan(quantile_cases[i].want)) {
			if (!isnan(v))
				fail_msg("%s: got %g, want no value",
					 quantile_cases[i].what, v);
		} else if (!(fabs(v - quantile_cases[i].want) < 1e-9)) {
			fail_msg("%s: got %.12g, want %.12g",
				 quantile_cases[i].what, v,
				 quantile_cases[i].want);
		}
	}
}

static void
test_series_stats(void **state)
{
	int64_t t[] = {0, 60000, 120000, 180000};
	double v[] = {3, -1.5, 10, 2};
	struct pointquery_series s = {.n = 4, .t_ms = t, .v = v};
	struct pointquery_stats st;

	(void)state;
	pointquery_series_stats(&s, &st);
	assert_true(st.min == -1.5 && st.max == 10 && st.mean == 3.375 &&
		    st.last == 2);
	s.n = 1;
	pointquery_series_stats(&s, &st);
	assert_true(st.min == 3 && st.max == 3 && st.mean == 3 && st.last == 3);
	s.n = 0;
	pointquery_series_stats(&s, &st);
	assert_true(isnan(st.min) && isnan(st.max) && isnan(st.mean) &&
		    isnan(st.last));
}

/* ---- against PostgreSQL ------------------------------------------------ */

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static struct pg_conn *conn;
/* start of the previous hour: inside yesterday's or today's partition */
static int64_t base_ms;

static uint64_t
ns_at(int64_t offset_s)
{
	return (uint64_t)(base_ms + offset_s * 1000) * 1000000ull;
}

static void
write_points(struct otlp_point *p, size_t n)
{
	struct otlp_batch b = {.points = p, .n_points = n};
	struct pg_error perr;
	int64_t inserted = -1;

	if (store_write_points(conn, &b, &inserted, &perr) != STATUS_OK)
		fail_msg("store: %s", perr.detail);
	assert_int_equal(inserted, (int64_t)n);
}

static struct otlp_point
gauge(const char *host, int64_t at_s, double v)
{
	static char attrs[4][64];
	static int k;
	struct otlp_point p = {.type = OTLP_POINT_GAUGE,
			       .name = "cpu.usage",
			       .unit = "1",
			       .service_name = "api",
			       .time_unix_nano = ns_at(at_s),
			       .value = v};

	k = (k + 1) % 4;
	snprintf(attrs[k], sizeof(attrs[k]), "{\"host\":\"%s\"}", host);
	p.attributes_json = attrs[k];
	p.resource_json = "{\"service.name\":\"api\",\"zone\":\"eu\"}";
	return p;
}

static struct otlp_point
counter(const char *route, int64_t start_s, int64_t at_s, double v,
	enum otlp_temporality t)
{
	struct otlp_point p = {.type = OTLP_POINT_SUM,
			       .name = "http.requests",
			       .unit = "{request}",
			       .service_name = "api",
			       .start_unix_nano = ns_at(start_s),
			       .time_unix_nano = ns_at(at_s),
			       .value = v,
			       .temporality = t,
			       .monotonic = true};

	p.attributes_json = strcmp(route, "/pay") == 0
				    ? "{\"route\":\"/pay\"}"
				    : "{\"route\":\"/home\"}";
	return p;
}

static struct otlp_point
hist(int64_t at_s, const uint64_t *counts, uint64_t count, double sum,
     double max)
{
	static const double bounds[] = {0.1, 0.5, 1.0};
	struct otlp_point p = {.type = OTLP_POINT_HISTOGRAM,
			       .name = "http.duration",
			       .unit = "s",
			       .service_name = "api",
			       .start_unix_nano = ns_at(-600),
			       .time_unix_nano = ns_at(at_s),
			       .count = count,
			       .has_sum = true,
			       .sum = sum,
			       .temporality = OTLP_TEMPORALITY_CUMULATIVE,
			       .n_bounds = 3,
			       .bounds = bounds,
			       .n_bucket_counts = 4,
			       .bucket_counts = counts};

	if (!isnan(max)) {
		p.has_max = true;
		p.max = max;
	}
	return p;
}

static void
seed_points(void)
{
	static const uint64_t h0[] = {0, 0, 0, 0}, h1[] = {10, 0, 0, 0},
			      h2[] = {10, 10, 0, 0}, h3[] = {20, 10, 5, 5};
	struct otlp_point p[64];
	size_t n = 0;

	for (int i = 0; i < 18; i++) {
		p[n++] = gauge("a", i * 10, i);
		p[n++] = gauge("b", i * 10, 100 + 2 * i);
	}
	write_points(p, n);
	n = 0;
	/* cumulative, reset at 90 s (new start 80 s) */
	p[n++] = counter("/pay", -600, -30, 1000, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", -600, 0, 1030, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", -600, 30, 1090, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", -600, 60, 1150, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", 80, 90, 10, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", 80, 120, 70, OTLP_TEMPORALITY_CUMULATIVE);
	p[n++] = counter("/pay", 80, 150, 130, OTLP_TEMPORALITY_CUMULATIVE);
	/* delta, the point at 70 s stored twice (a retried export) */
	p[n++] = counter("/home", 0, 10, 5, OTLP_TEMPORALITY_DELTA);
	p[n++] = counter("/home", 60, 70, 7, OTLP_TEMPORALITY_DELTA);
	p[n++] = counter("/home", 60, 70, 7, OTLP_TEMPORALITY_DELTA);
	p[n++] = counter("/home", 120, 130, 9, OTLP_TEMPORALITY_DELTA);
	write_points(p, n);
	n = 0;
	p[n++] = hist(-30, h0, 0, 0, NAN);
	p[n++] = hist(0, h1, 10, 0.5, NAN);
	p[n++] = hist(30, h2, 20, 3.5, NAN);
	p[n++] = hist(60, h3, 40, 13.5, 2.0);
	p[n++] = hist(90, h3, 40, 13.5, 2.0);
	write_points(p, n);
}

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 2, .statement_timeout_ms = 10000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	char err[512];
	PGconn *pq;
	int applied;

	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	base_ms = ((int64_t)time(NULL) / 3600 - 1) * 3600 * 1000;
	if (pgtest_start(&cluster) != 0)
		return -1;
	pq = PQconnectdb(cluster.conninfo);
	if (PQstatus(pq) != CONNECTION_OK ||
	    migrate_apply(pq, &opts, &applied, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(pq));
		PQfinish(pq);
		return -1;
	}
	PQfinish(pq);
	pc.conninfo = cluster.conninfo;
	if (pg_pool_new(&pc, &pool, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(pool, 10000, &perr) != STATUS_OK ||
	    pg_acquire(pool, NULL, 5000, &conn, &perr) != STATUS_OK)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_release(conn);
	pg_pool_free(pool);
	pgtest_destroy(&cluster);
	return 0;
}

/* Runs a metrics query over [base + from_s, base + to_s). */
static struct pointquery_metric *
run(const char *name, enum pointquery_agg agg, int64_t from_s, int64_t to_s,
    int64_t step_s, const char *attrs, const char *const *group_by, size_t ng,
    int want_rc, char *msg, size_t msglen)
{
	struct pointquery_metric_req r = {.name = name,
					  .service = "api",
					  .attributes_json = attrs,
					  .agg = agg,
					  .from_ms = base_ms + from_s * 1000,
					  .to_ms = base_ms + to_s * 1000,
					  .step_s = step_s,
					  .group_by = group_by,
					  .n_group_by = ng};
	struct pointquery_metric *m = (void *)1;
	struct pg_error perr;
	int rc = pointquery_metrics(conn, &r, &m, &perr);

	if (rc != want_rc)
		fail_msg("%s/%s: rc %d (%s; %s)", name,
			 pointquery_agg_name(agg), rc, perr.client,
			 perr.detail);
	if (rc != STATUS_OK) {
		assert_null(m);
		if (msg != NULL)
			snprintf(msg, msglen, "%s", perr.client);
		return NULL;
	}
	return m;
}

/* Checks one series: labels ("" for none) and values per step from the
 * minute at base (NAN: no point in that step). */
static void
check_series(const struct pointquery_metric *m, size_t i, const char *label,
	     const double *want, size_t nwant)
{
	const struct pointquery_series *s;
	size_t k = 0;

	assert_true(i < m->n_series);
	s = &m->series[i];
	if (label != NULL)
		assert_string_equal(s->labels[0], label);
	for (size_t step = 0; step < nwant; step++) {
		if (isnan(want[step]))
			continue;
		if (k >= s->n)
			fail_msg("series %zu: no point for step %zu", i, step);
		assert_int_equal(s->t_ms[k], base_ms + (int64_t)step * MIN_MS);
		if (!(fabs(s->v[k] - want[step]) < 1e-9))
			fail_msg("series %zu step %zu: got %.12g, want %.12g",
				 i, step, s->v[k], want[step]);
		k++;
	}
	assert_int_equal(s->n, k);
}

static void
test_gauge(void **state)
{
	static const char *const host[] = {"host"};
	static const struct {
		enum pointquery_agg agg;
		bool grouped;
		double want[2][3];
	} cases[] = {
		{POINTQUERY_AGG_AVG, true, {{2.5, 8.5, 14.5}, {105, 117, 129}}},
		{POINTQUERY_AGG_AUTO,
		 true,
		 {{2.5, 8.5, 14.5}, {105, 117, 129}}},
		{POINTQUERY_AGG_LAST, true, {{5, 11, 17}, {110, 122, 134}}},
		{POINTQUERY_AGG_MIN, true, {{0, 6, 12}, {100, 112, 124}}},
		{POINTQUERY_AGG_AVG, false, {{53.75, 62.75, 71.75}}},
		/* 0+..+5 = 15 and 600 + 30 = 630; then +36 / +72 per step */
		{POINTQUERY_AGG_SUM, false, {{645, 753, 861}}},
		{POINTQUERY_AGG_MAX, false, {{110, 122, 134}}},
		{POINTQUERY_AGG_COUNT, false, {{12, 12, 12}}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pointquery_metric *m =
			run("cpu.usage", cases[i].agg, 0, 180, 60, NULL,
			    cases[i].grouped ? host : NULL,
			    cases[i].grouped ? 1 : 0, STATUS_OK, NULL, 0);

		assert_string_equal(m->kind, "gauge");
		assert_string_equal(m->unit, "1");
		assert_int_equal(m->agg, cases[i].agg == POINTQUERY_AGG_AUTO
						 ? POINTQUERY_AGG_AVG
						 : cases[i].agg);
		assert_int_equal(m->n_series, cases[i].grouped ? 2 : 1);
		assert_false(m->truncated);
		check_series(m, 0, cases[i].grouped ? "a" : NULL,
			     cases[i].want[0], 3);
		if (cases[i].grouped)
			check_series(m, 1, "b", cases[i].want[1], 3);
		pointquery_metric_free(m);
	}
}

/* The same averages from SQL written independently of the library. */
static void
test_gauge_matches_sql(void **state)
{
	static const char *const keys[] = {"host", "zone"};
	struct pointquery_metric *m =
		run("cpu.usage", POINTQUERY_AGG_AVG, 0, 180, 30, NULL, keys, 2,
		    STATUS_OK, NULL, 0);
	char from[24], to[24];
	const char *v[2] = {from, to};
	PGresult *res = NULL;
	struct pg_error perr;
	size_t row = 0;

	(void)state;
	snprintf(from, sizeof(from), "%lld", (long long)base_ms);
	snprintf(to, sizeof(to), "%lld", (long long)base_ms + 180000);
	assert_int_equal(
		pg_query(conn,
			 "SELECT attributes->>'host', "
			 "resource_attributes->>'zone', "
			 "(floor(extract(epoch FROM time) / 30) * 30000)::"
			 "bigint, avg(value) FROM metric_points WHERE name = "
			 "'cpu.usage' AND time >= to_timestamp($1::bigint / "
			 "1000.0) AND time < to_timestamp($2::bigint / 1000.0) "
			 "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
			 2, v, &res, &perr),
		STATUS_OK);
	assert_int_equal(m->n_series, 2);
	assert_int_equal(PQntuples(res), 12);
	for (size_t i = 0; i < m->n_series; i++) {
		const struct pointquery_series *s = &m->series[i];

		assert_string_equal(s->labels[1], "eu"); /* a resource key */
		for (size_t k = 0; k < s->n; k++, row++) {
			assert_string_equal(s->labels[0],
					    PQgetvalue(res, (int)row, 0));
			assert_int_equal(s->t_ms[k],
					 strtoll(PQgetvalue(res, (int)row, 2),
						 NULL, 10));
			assert_true(fabs(s->v[k] -
					 strtod(PQgetvalue(res, (int)row, 3),
						NULL)) < 1e-9);
		}
	}
	assert_int_equal(row, 12);
	PQclear(res);
	pointquery_metric_free(m);
}

static void
test_attribute_filter(void **state)
{
	static const double want_b[] = {105, 117, 129};
	struct pointquery_metric *m =
		run("cpu.usage", POINTQUERY_AGG_AVG, 0, 180, 60,
		    "{\"host\":\"b\"}", NULL, 0, STATUS_OK, NULL, 0);

	(void)state;
	assert_int_equal(m->n_series, 1);
	check_series(m, 0, NULL, want_b, 3);
	pointquery_metric_free(m);
	/* nothing matches: a result with no series, not an error */
	m = run("cpu.usage", POINTQUERY_AGG_AVG, 0, 180, 60,
		"{\"host\":\"zzz\"}", NULL, 0, STATUS_OK, NULL, 0);
	assert_int_equal(m->n_series, 0);
	assert_null(m->series);
	assert_int_equal(m->latest_ms, base_ms + 170000);
	pointquery_metric_free(m);
	/* a range with no points */
	m = run("cpu.usage", POINTQUERY_AGG_AVG, 600, 900, 60, NULL, NULL, 0,
		STATUS_OK, NULL, 0);
	assert_int_equal(m->n_series, 0);
	pointquery_metric_free(m);
}

static void
test_counter(void **state)
{
	static const char *const route[] = {"route"};
	/* /home (delta, the duplicate counted once): 5, 7, 9; /pay
	 * (cumulative): 30 + 60, 60 + 10 (the reset), 60 + 60 */
	static const double home[] = {5, 7, 9}, pay[] = {90, 70, 120};
	static const double rate_pay[] = {1.5, 70.0 / 60, 2.0};
	static const double sum_all[] = {95, 77, 129};
	struct pointquery_metric *m;

	(void)state;
	m = run("http.requests", POINTQUERY_AGG_SUM, 0, 180, 60, NULL, route, 1,
		STATUS_OK, NULL, 0);
	assert_string_equal(m->kind, "sum");
	assert_true(m->monotonic);
	assert_int_equal(m->n_series, 2);
	check_series(m, 0, "/home", home, 3);
	check_series(m, 1, "/pay", pay, 3);
	pointquery_metric_free(m);

	/* AUTO on a monotonic sum is rate */
	m = run("http.requests", POINTQUERY_AGG_AUTO, 0, 180, 60,
		"{\"route\":\"/pay\"}", NULL, 0, STATUS_OK, NULL, 0);
	assert_int_equal(m->agg, POINTQUERY_AGG_RATE);
	check_series(m, 0, NULL, rate_pay, 3);
	pointquery_metric_free(m);

	m = run("http.requests", POINTQUERY_AGG_SUM, 0, 180, 60, NULL, NULL, 0,
		STATUS_OK, NULL, 0);
	check_series(m, 0, NULL, sum_all, 3);
	pointquery_metric_free(m);

	/* from 30 s: the point at 0 s is the baseline (look-back), and the
	 * first step covers 30 s only: 60 / 30 */
	m = run("http.requests", POINTQUERY_AGG_RATE, 30, 180, 60,
		"{\"route\":\"/pay\"}", NULL, 0, STATUS_OK, NULL, 0);
	{
		static const double want[] = {2.0, 70.0 / 60, 2.0};

		check_series(m, 0, NULL, want, 3);
	}
	pointquery_metric_free(m);

	/* last over the raw values */
	m = run("http.requests", POINTQUERY_AGG_LAST, 0, 180, 60,
		"{\"route\":\"/pay\"}", NULL, 0, STATUS_OK, NULL, 0);
	{
		static const double want[] = {1090, 10, 130};

		check_series(m, 0, NULL, want, 3);
	}
	pointquery_metric_free(m);
}

static void
test_histogram(void **state)
{
	static const struct {
		enum pointquery_agg agg;
		double want[3];
	} cases[] = {
		/* step 0: increases [10,0,0,0] + [0,10,0,0]; step 1:
		 * [10,0,5,5] (max 2) and nothing */
		{POINTQUERY_AGG_P50, {0.1, 0.1, NAN}},
		{POINTQUERY_AGG_AUTO, {0.46, 1.8, NAN}},
		{POINTQUERY_AGG_P99, {0.1 + 0.4 * 9.8 / 10, 1.96, NAN}},
		{POINTQUERY_AGG_COUNT, {20, 20, NAN}},
		{POINTQUERY_AGG_SUM, {3.5, 10, NAN}},
		{POINTQUERY_AGG_AVG, {0.175, 0.5, NAN}},
		{POINTQUERY_AGG_RATE, {20.0 / 60, 20.0 / 60, NAN}},
		{POINTQUERY_AGG_MAX, {NAN, 2.0, NAN}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pointquery_metric *m =
			run("http.duration", cases[i].agg, 0, 180, 60, NULL,
			    NULL, 0, STATUS_OK, NULL, 0);

		assert_string_equal(m->kind, "histogram");
		assert_string_equal(m->unit, "s");
		assert_int_equal(m->temporality, 2);
		assert_int_equal(m->n_series, 1);
		check_series(m, 0, NULL, cases[i].want, 3);
		pointquery_metric_free(m);
	}
}

static void
test_not_applicable(void **state)
{
	static const struct {
		const char *name;
		enum pointquery_agg agg;
		const char *msg;
	} cases[] = {
		{"cpu.usage", POINTQUERY_AGG_P95, "a gauge: use avg"},
		{"cpu.usage", POINTQUERY_AGG_RATE, "a gauge"},
		{"http.requests", POINTQUERY_AGG_P50, "needs a histogram"},
		{"http.duration", POINTQUERY_AGG_LAST, "a histogram: use p50"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char msg[256];

		run(cases[i].name, cases[i].agg, 0, 180, 60, NULL, NULL, 0,
		    STATUS_UNSUPPORTED, msg, sizeof(msg));
		if (strstr(msg, cases[i].msg) == NULL ||
		    strstr(msg, "aggregation") == NULL)
			fail_msg("\"%s\" lacks \"%s\"", msg, cases[i].msg);
	}
}

static void
test_unknown_and_names(void **state)
{
	struct pointquery_names *nm = NULL;
	struct pg_error perr;
	char msg[256];

	(void)state;
	run("http.request", POINTQUERY_AGG_AVG, 0, 180, 60, NULL, NULL, 0,
	    STATUS_NOTFOUND, msg, sizeof(msg));
	assert_non_null(strstr(msg, "http.request"));
	assert_int_equal(pointquery_metric_names(conn, "api", &nm, &perr),
			 STATUS_OK);
	assert_int_equal(nm->n, 4);
	assert_string_equal(nm->names[0], "cpu.usage");
	assert_string_equal(nm->names[1], "http.duration");
	assert_string_equal(nm->names[2], "http.requests");
	assert_string_equal(nm->names[3], "many");
	pointquery_names_free(nm);
	assert_int_equal(pointquery_metric_names(conn, "nobody", &nm, &perr),
			 STATUS_OK);
	assert_int_equal(nm->n, 0);
	pointquery_names_free(nm);
	assert_int_equal(pointquery_metric_services(conn, &nm, &perr),
			 STATUS_OK);
	assert_int_equal(nm->n, 1);
	assert_string_equal(nm->names[0], "api");
	pointquery_names_free(nm);
}

static struct pointquery_list *
list(const char *service, const char *match, int64_t from_s, int64_t to_s,
     size_t limit)
{
	struct pointquery_list_req r = {.service = service,
					.match = match,
					.from_ms = base_ms + from_s * 1000,
					.to_ms = base_ms + to_s * 1000,
					.limit = limit};
	struct pointquery_list *l = NULL;
	struct pg_error perr;

	if (pointquery_list(conn, &r, &l, &perr) != STATUS_OK)
		fail_msg("list: %s", perr.detail);
	return l;
}

static void
check_listed(const struct pointquery_list *l, size_t i, const char *name,
	     const char *kind, const char *unit, int64_t last_s, int64_t series)
{
	const struct pointquery_listed *m;

	assert_true(i < l->n);
	m = &l->metrics[i];
	assert_string_equal(m->name, name);
	assert_string_equal(m->kind, kind);
	assert_string_equal(m->unit, unit);
	assert_int_equal(m->last_ms, base_ms + last_s * 1000);
	assert_int_equal(m->series, series);
}

/* after test_series_bound ("many" has 101 series at 5 s) and
 * test_unknown_and_names (which counts the services) */
static void
test_list(void **state)
{
	struct otlp_point w[2] = {
		{.type = OTLP_POINT_GAUGE,
		 .name = "window.probe",
		 .service_name = "batch",
		 .time_unix_nano = ns_at(-4000),
		 .value = 1,
		 .attributes_json = "{\"host\":\"x\"}"},
		{.type = OTLP_POINT_GAUGE,
		 .name = "window.probe",
		 .service_name = "batch",
		 .time_unix_nano = ns_at(0),
		 .value = 2,
		 .attributes_json = "{\"host\":\"y\"}"},
	};
	struct pointquery_list_req bad = {.from_ms = 0, .to_ms = 1000};
	struct pointquery_list *l;
	struct pg_error perr;

	(void)state;
	l = list(NULL, NULL, 0, 180, 100);
	assert_int_equal(l->n, 4);
	assert_int_equal(l->total, 4);
	check_listed(l, 0, "cpu.usage", "gauge", "1", 170, 2);
	check_listed(l, 1, "http.duration", "histogram", "s", 90, 1);
	check_listed(l, 2, "http.requests", "sum", "{request}", 150, 2);
	check_listed(l, 3, "many", "gauge", "", 5, POINTQUERY_MAX_SERIES + 1);
	pointquery_list_free(l);
	/* the newest point in the range, not the newest of all */
	l = list(NULL, "HTTP.", 0, 100, 1);
	assert_int_equal(l->n, 1);
	assert_int_equal(l->total, 2);
	check_listed(l, 0, "http.duration", "histogram", "s", 90, 1);
	pointquery_list_free(l);
	l = list("nobody", NULL, 0, 180, 10);
	assert_int_equal(l->n + l->total, 0);
	pointquery_list_free(l);
	/* series are those of the newest hour: host x is older */
	write_points(w, 2);
	l = list("batch", NULL, -5000, 180, 10);
	assert_int_equal(l->total, 1);
	check_listed(l, 0, "window.probe", "gauge", "", 0, 1);
	pointquery_list_free(l);
	l = list("batch", NULL, -5000, -3000, 10);
	check_listed(l, 0, "window.probe", "gauge", "", -4000, 1);
	pointquery_list_free(l);
	bad.limit = POINTQUERY_LIST_MAX + 1;
	l = (void *)1;
	assert_int_equal(pointquery_list(conn, &bad, &l, &perr),
			 STATUS_INVALID);
	assert_null(l);
	assert_non_null(strstr(perr.client, "limit"));
}

static void
test_series_bound(void **state)
{
	static const char *const keys[] = {"i"};
	struct otlp_point p[POINTQUERY_MAX_SERIES + 1];
	char attrs[POINTQUERY_MAX_SERIES + 1][24];
	struct pointquery_metric *m;

	(void)state;
	for (int i = 0; i <= POINTQUERY_MAX_SERIES; i++) {
		snprintf(attrs[i], sizeof(attrs[i]), "{\"i\":\"%03d\"}", i);
		p[i] = (struct otlp_point){.type = OTLP_POINT_GAUGE,
					   .name = "many",
					   .service_name = "api",
					   .time_unix_nano = ns_at(5),
					   .value = i,
					   .attributes_json = attrs[i]};
	}
	write_points(p, POINTQUERY_MAX_SERIES + 1);
	m = run("many", POINTQUERY_AGG_AVG, 0, 60, 60, NULL, keys, 1, STATUS_OK,
		NULL, 0);
	assert_int_equal(m->n_series, POINTQUERY_MAX_SERIES);
	assert_true(m->truncated);
	assert_string_equal(m->series[99].labels[0], "099");
	assert_true(m->series[99].v[0] == 99);
	pointquery_metric_free(m);
	m = run("many", POINTQUERY_AGG_COUNT, 0, 60, 60, NULL, NULL, 0,
		STATUS_OK, NULL, 0);
	assert_false(m->truncated);
	assert_true(m->series[0].v[0] == POINTQUERY_MAX_SERIES + 1);
	pointquery_metric_free(m);
}

static void
test_bad_requests(void **state)
{
	static const char *const empty[] = {""};
	char msg[256];

	(void)state;
	run("cpu.usage", POINTQUERY_AGG_AVG, 0, 180, 5, NULL, NULL, 0,
	    STATUS_INVALID, msg, sizeof(msg));
	assert_non_null(strstr(msg, "step"));
	run("cpu.usage", POINTQUERY_AGG_AVG, 180, 0, 60, NULL, NULL, 0,
	    STATUS_INVALID, msg, sizeof(msg));
	assert_non_null(strstr(msg, "time_range"));
	run("cpu.usage", POINTQUERY_AGG_AVG, 0, 180, 60, NULL, empty, 1,
	    STATUS_INVALID, msg, sizeof(msg));
	assert_non_null(strstr(msg, "group_by[0]"));
	run("", POINTQUERY_AGG_AVG, 0, 180, 60, NULL, NULL, 0, STATUS_INVALID,
	    msg, sizeof(msg));
	assert_non_null(strstr(msg, "name"));
}

/* ---- spans ------------------------------------------------------------- */

static struct otlp_span
span(uint8_t trace, uint8_t id, const char *service, const char *name,
     int64_t at_s, uint64_t dur_ms, int status)
{
	struct otlp_span s = {0};

	memset(s.trace_id, trace, sizeof(s.trace_id));
	memset(s.span_id, id, sizeof(s.span_id));
	s.service_name = service;
	s.name = name;
	s.kind = 2;
	s.start_unix_nano = ns_at(at_s);
	s.end_unix_nano = s.start_unix_nano + dur_ms * 1000000ull;
	s.status_code = status;
	s.source = OTLP_SOURCE_OTLP;
	s.http_status = -1;
	s.grpc_status = -1;
	s.input_tokens = -1;
	s.output_tokens = -1;
	return s;
}

static void
seed_spans(void)
{
	struct otlp_span s[5];
	struct otlp_batch b = {.spans = s, .n_spans = 5};
	struct pg_error perr;
	int64_t inserted;

	s[0] = span(0x11, 1, "checkout", "POST /api/checkout", 10, 120, 2);
	s[0].attributes_json = "{\"tenant\":\"x\",\"http.route\":"
			       "\"/api/checkout\"}";
	s[0].session_id = "sess-1";
	s[1] = span(0x11, 2, "checkout", "SELECT orders", 11, 5, 1);
	s[1].kind = 3;
	s[1].has_parent = true;
	memset(s[1].parent_span_id, 1, 8);
	s[1].attributes_json = "{\"db.system\":\"postgresql\"}";
	s[2] = span(0x22, 3, "checkout", "GET /api/cart", 20, 30, 0);
	s[2].attributes_json = "{\"tenant\":\"y\"}";
	s[3] = span(0x33, 4, "billing", "charge", 30, 300, 0);
	/* the same request seen by eBPF: never listed */
	s[4] = span(0x11, 9, "checkout", "POST /api/checkout", 10, 121, 0);
	s[4].source = OTLP_SOURCE_EBPF;
	if (store_write_spans(conn, &b, &inserted, &perr) != STATUS_OK)
		fail_msg("store: %s", perr.detail);
}

static void
test_spans(void **state)
{
	static const char t1[] = "11111111111111111111111111111111";
	static const struct {
		const char *what;
		struct spansearch_req r;
		const char *want; /* span ids' first byte, in order */
		bool truncated;
	} cases[] = {
		{"by service, recent first",
		 {.service = "checkout",
		  .status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "32 1",
		 false},
		{"name, any case",
		 {.name = "CHECKout",
		  .status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "1",
		 false},
		{"trace id, no time range",
		 {.trace_id = t1,
		  .status = -1,
		  .min_duration_ns = -1,
		  .limit = 50},
		 "21",
		 false},
		{"min duration",
		 {.status = -1,
		  .min_duration_ns = 50000000,
		  .has_range = true,
		  .limit = 50},
		 "41",
		 false},
		{"slowest first",
		 {.status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50,
		  .slowest = true},
		 "4132",
		 false},
		{"status error",
		 {.status = 2,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "1",
		 false},
		{"status ok",
		 {.status = 1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "2",
		 false},
		{"attributes",
		 {.attributes_json = "{\"tenant\":\"x\"}",
		  .status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "1",
		 false},
		{"session",
		 {.session_id = "sess-1",
		  .status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 50},
		 "1",
		 false},
		{"limit",
		 {.status = -1,
		  .min_duration_ns = -1,
		  .has_range = true,
		  .limit = 2},
		 "43",
		 true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct spansearch_req r = cases[i].r;
		struct spansearch_result *s = NULL;
		struct pg_error perr;
		char got[16] = "";
		const char *want = cases[i].want;
		size_t k = 0;

		r.from_ms = base_ms;
		r.to_ms = base_ms + 60000;
		if (spansearch_run(conn, &r, &s, &perr) != STATUS_OK)
			fail_msg("%s: %s (%s)", cases[i].what, perr.client,
				 perr.detail);
		for (size_t j = 0; j < s->n && k + 1 < sizeof(got); j++)
			got[k++] = s->spans[j].span_id[1];
		got[k] = '\0';
		/* the want strings may hold a space for readability */
		{
			char w[16];
			size_t n = 0;

			for (; *want != '\0'; want++)
				if (*want != ' ')
					w[n++] = *want;
			w[n] = '\0';
			if (strcmp(got, w) != 0)
				fail_msg("%s: got %s, want %s", cases[i].what,
					 got, w);
		}
		assert_int_equal(s->truncated, cases[i].truncated);
		spansearch_free(s);
	}
}

static void
test_span_fields(void **state)
{
	struct spansearch_req r = {.name = "select",
				   .status = -1,
				   .min_duration_ns = -1,
				   .limit = 10};
	struct spansearch_result *s = NULL;
	struct pg_error perr;
	const struct spansearch_span *sp;

	(void)state;
	assert_int_equal(spansearch_run(conn, &r, &s, &perr), STATUS_OK);
	assert_int_equal(s->n, 1);
	sp = &s->spans[0];
	assert_string_equal(sp->trace_id, "11111111111111111111111111111111");
	assert_string_equal(sp->span_id, "0202020202020202");
	assert_string_equal(sp->parent_span_id, "0101010101010101");
	assert_string_equal(sp->service, "checkout");
	assert_string_equal(sp->name, "SELECT orders");
	assert_string_equal(otlp_kind_name(sp->kind), "client");
	assert_int_equal(sp->start_us, (base_ms + 11000) * 1000);
	assert_int_equal(sp->duration_ns, 5000000);
	assert_int_equal(sp->status, 1);
	assert_non_null(strstr(sp->attributes_json, "\"db.system\""));
	assert_false(sp->attrs_cut);
	spansearch_free(s);

	r.name = NULL;
	r.trace_id = "1111";
	s = (void *)1;
	assert_int_equal(spansearch_run(conn, &r, &s, &perr), STATUS_INVALID);
	assert_null(s);
	assert_non_null(strstr(perr.client, "trace_id"));
	r.trace_id = NULL;
	r.limit = 0;
	assert_int_equal(spansearch_run(conn, &r, &s, &perr), STATUS_INVALID);
	assert_non_null(strstr(perr.client, "limit"));
}

static int
db_setup(void **state)
{
	(void)state;
	seed_points();
	seed_spans();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_agg_names),
		cmocka_unit_test(test_quantile),
		cmocka_unit_test(test_series_stats),
	};
	const struct CMUnitTest db[] = {
		cmocka_unit_test_setup(test_gauge, db_setup),
		cmocka_unit_test(test_gauge_matches_sql),
		cmocka_unit_test(test_attribute_filter),
		cmocka_unit_test(test_counter),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_not_applicable),
		cmocka_unit_test(test_series_bound),
		cmocka_unit_test(test_unknown_and_names),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_span_fields),
	};
	int failed = cmocka_run_group_tests_name("pointquery pure", pure, NULL,
						 NULL);

	failed += cmocka_run_group_tests_name("pointquery store", db,
					      group_setup, group_teardown);
	return failed;
}

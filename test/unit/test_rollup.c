/*
 * test_rollup.c - lib/telemetry/rollup and migrations/0005 and 0008: the bucket math
 * (and its agreement with sextant_duration_bucket()), percentiles from
 * histograms against exact percentile_cont, the text form of rollup rows,
 * the split of a query range into hours, minutes and raw spans, and on a
 * throwaway PostgreSQL the span_calls view, dirty marking by lib/otlp/store,
 * hourly and minute refreshes compared with aggregates computed here and
 * with each other, late spans, the 5-minute rows (0015) against the merge
 * of their minute rows and the raw spans, and pruning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/locks.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"
#include "telemetry/rollup.h"
#include "telemetry/spanquery.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static struct pgtest_cluster cluster;
static struct pg_pool *pool;

/* ---- helpers ------------------------------------------------------------ */

/* xorshift64*: the same numbers on every run. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static double
rnd01(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

/* Durations as spans have them: log-uniform from 1 ns to 10 s, with some
 * zeros and some repeated values. */
static int64_t
rnd_duration(uint64_t *s)
{
	double u = rnd01(s);

	if (u < 0.03)
		return 0;
	if (u < 0.06)
		return 1000000; /* exactly 1 ms, many times */
	return (int64_t)exp(rnd01(s) * log(1e10));
}

/* A number PostgreSQL printed. */
static long long
num(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (end == s || *end != '\0')
		fail_msg("\"%s\" is not a number", s);
	return v;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* percentile_cont over sorted v[0..n-1], as PostgreSQL computes it. */
static double
exact_percentile(const int64_t *v, size_t n, double q)
{
	double pos = q * (double)(n - 1), frac;
	size_t lo = (size_t)floor(pos);

	frac = pos - (double)lo;
	if (frac <= 0 || lo + 1 >= n)
		return (double)v[lo];
	return (double)v[lo] + frac * ((double)v[lo + 1] - (double)v[lo]);
}

static void
assert_within_alpha(double got, double want)
{
	/* exactly alpha at a bucket's edges: allow for rounding */
	double tol = ROLLUP_ALPHA * fabs(want) * (1 + 1e-9) + 1e-9;

	if (fabs(got - want) > tol)
		fail_msg("%.6f is not within %g of %.6f (off by %.3g%%)", got,
			 ROLLUP_ALPHA, want, 100 * fabs(got - want) / want);
}

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error perr;

	assert_int_equal(pg_acquire(pool, NULL, 5000, &c, &perr), STATUS_OK);
	return c;
}

static void
exec_sql(struct pg_conn *c, const char *sql)
{
	struct pg_error perr;

	if (pg_query(c, sql, 0, NULL, NULL, &perr) != STATUS_OK)
		fail_msg("%s: %s", sql, perr.detail);
}

static long long
sql_ll(struct pg_conn *c, const char *sql)
{
	PGresult *res = NULL;
	struct pg_error perr;
	long long v;

	if (pg_query(c, sql, 0, NULL, &res, &perr) != STATUS_OK)
		fail_msg("%s: %s", sql, perr.detail);
	assert_int_equal(PQntuples(res), 1);
	v = num(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

static void
refresh(struct pg_conn *c, int max, int want_done, int want_pending)
{
	struct pg_error perr;
	int done = -1, pending = -1;

	if (rollup_refresh(c, max, &done, &pending, &perr) != STATUS_OK)
		fail_msg("rollup_refresh: %s (%s)", perr.client, perr.detail);
	assert_int_equal(done, want_done);
	assert_int_equal(pending, want_pending);
}

/* The dirty rows (hours and minutes) of now were written more than 60 s
 * ago. */
static void
age_dirty(struct pg_conn *c)
{
	exec_sql(c, "UPDATE span_rollup_dirty SET slot = slot - 7");
	exec_sql(c, "UPDATE span_rollup_minute_dirty SET slot = slot - 7");
}

static void
clear_store(struct pg_conn *c)
{
	exec_sql(c, "TRUNCATE spans, span_rollup, span_rollup_dirty, "
		    "span_rollup_minute, span_rollup_minute_dirty, "
		    "span_rollup_5m");
}

/* Start of the UTC hour `hours` hours before the current one, in s. */
static int64_t
hour_ago(int hours)
{
	return (int64_t)time(NULL) / 3600 * 3600 - (int64_t)hours * 3600;
}

/* ---- range split -------------------------------------------------------- */

static void
test_minute_floor(void **state)
{
	static const struct {
		int64_t ms, minute, hour;
	} cases[] = {
		{0, 0, 0},
		{59999, 0, 0},
		{60000, 60000, 0},
		{3599999, 3540000, 0},
		{3600000, 3600000, 3600000},
		{1763805723456, 1763805720000, 1763805600000},
		{-1, -60000, -3600000},
		{-60000, -60000, -3600000},
		{-60001, -120000, -3600000},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(rollup_minute_floor(cases[i].ms),
				 cases[i].minute);
		assert_int_equal(rollup_period_floor(cases[i].ms),
				 cases[i].hour);
	}
}

#define S_MS 1000LL
#define M_MS (60 * S_MS)
#define H_MS (60 * M_MS)

/*
 * rollup_split_range: which whole settled minutes and hours a range holds.
 * B is an hour boundary; "none" is false with every field = from.
 */
static void
test_split_range(void **state)
{
	const int64_t B = 1763805600000; /* 2025-11-22 10:00:00 UTC */
	const int64_t now_live = B + 30 * M_MS + 15500;
	const struct {
		const char *what;
		int64_t from, to, now;
		bool ok;
		int64_t mfrom, mto, hfrom, hto;
	} cases[] = {
		{"inside one minute", B + 10 * S_MS, B + 50 * S_MS, B + H_MS,
		 false, 0, 0, 0, 0},
		{"one whole minute", B, B + M_MS, B + H_MS, true, B, B + M_MS,
		 B + M_MS, B + M_MS},
		{"a minute, 1 ms short of whole", B, B + M_MS - 1, B + H_MS,
		 false, 0, 0, 0, 0},
		{"a minute not settled", B, B + M_MS, B + 3 * M_MS - 1, false,
		 0, 0, 0, 0},
		{"a minute just settled", B, B + M_MS, B + 3 * M_MS, true, B,
		 B + M_MS, B + M_MS, B + M_MS},
		{"crossing an hour boundary, no whole hour",
		 B + 30 * M_MS + 30 * S_MS, B + H_MS + 10 * M_MS + 15 * S_MS,
		 B + 24 * H_MS, true, B + 31 * M_MS, B + H_MS + 10 * M_MS,
		 B + H_MS + 10 * M_MS, B + H_MS + 10 * M_MS},
		{"a whole hour with edges", B - 10 * M_MS + 5 * S_MS,
		 B + H_MS + 20 * M_MS, B + 24 * H_MS, true, B - 9 * M_MS,
		 B + H_MS + 20 * M_MS, B, B + H_MS},
		{"aligned hours", B, B + 2 * H_MS, B + 3 * H_MS, true, B,
		 B + 2 * H_MS, B, B + 2 * H_MS},
		{"last hour ending now", now_live - H_MS, now_live, now_live,
		 true, B - 29 * M_MS, B + 28 * M_MS, B + 28 * M_MS,
		 B + 28 * M_MS},
		{"last 24 hours ending now", now_live - 24 * H_MS, now_live,
		 now_live, true, B - 23 * H_MS - 29 * M_MS, B + 28 * M_MS,
		 B - 23 * H_MS, B},
		{"an hour 1 ms before it settles", B, B + H_MS,
		 B + H_MS + 2 * M_MS - 1, true, B, B + 59 * M_MS, B + 59 * M_MS,
		 B + 59 * M_MS},
		{"an hour as it settles", B, B + H_MS, B + H_MS + 2 * M_MS,
		 true, B, B + H_MS, B, B + H_MS},
		{"in the future", now_live + H_MS, now_live + 2 * H_MS,
		 now_live, false, 0, 0, 0, 0},
		{"last 2 minutes", now_live - 2 * M_MS, now_live, now_live,
		 false, 0, 0, 0, 0},
		{"empty", B, B, B + H_MS, false, 0, 0, 0, 0},
		{"reversed", B + M_MS, B, B + H_MS, false, 0, 0, 0, 0},
		{"around the epoch", -90 * S_MS, 90 * S_MS, B, true, -M_MS,
		 M_MS, M_MS, M_MS},
		{"beyond any clock", INT64_MIN, INT64_MAX, B, false, 0, 0, 0,
		 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rollup_split sp;
		bool ok = rollup_split_range(cases[i].from, cases[i].to,
					     cases[i].now, &sp);

		if (ok != cases[i].ok)
			fail_msg("%s: %d, want %d", cases[i].what, ok,
				 cases[i].ok);
		if (!ok) {
			assert_int_equal(sp.minute_from, cases[i].from);
			assert_int_equal(sp.minute_to, cases[i].from);
			assert_int_equal(sp.hour_from, cases[i].from);
			assert_int_equal(sp.hour_to, cases[i].from);
			continue;
		}
		if (sp.minute_from != cases[i].mfrom ||
		    sp.minute_to != cases[i].mto ||
		    sp.hour_from != cases[i].hfrom ||
		    sp.hour_to != cases[i].hto)
			fail_msg("%s: minutes [%lld, %lld) hours [%lld, %lld), "
				 "want [%lld, %lld) [%lld, %lld) (offsets "
				 "from B in s)",
				 cases[i].what,
				 (long long)(sp.minute_from - B) / 1000,
				 (long long)(sp.minute_to - B) / 1000,
				 (long long)(sp.hour_from - B) / 1000,
				 (long long)(sp.hour_to - B) / 1000,
				 (long long)(cases[i].mfrom - B) / 1000,
				 (long long)(cases[i].mto - B) / 1000,
				 (long long)(cases[i].hfrom - B) / 1000,
				 (long long)(cases[i].hto - B) / 1000);
	}
}

/* Clocks at the ends of int64 (fuzz_rollup found now = INT64_MIN):
 * refused before any arithmetic, which UBSan would abort on. */
static void
test_split_extreme_clocks(void **state)
{
	const int64_t B = 1763805600000;
	struct rollup_split sp;

	(void)state;
	assert_false(rollup_split_range(B, B + H_MS, INT64_MIN, &sp));
	assert_false(rollup_split_range(B, B + H_MS, INT64_MAX, &sp));
	assert_false(rollup_split_range(INT64_MIN, B, B, &sp));
	assert_false(rollup_split_range(B, INT64_MAX, B + H_MS, &sp));
}

/* Random ranges: the parts are ordered, whole, settled and inside. */
static void
test_split_random(void **state)
{
	const int64_t B = 1763805600000;
	uint64_t seed = 99;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		int64_t from =
			B + (int64_t)(rnd(&seed) % (48 * H_MS)) - 24 * H_MS;
		int64_t to =
			from + (int64_t)(rnd(&seed) % (30 * H_MS)) - H_MS / 4;
		int64_t now = B + (int64_t)(rnd(&seed) % (4 * H_MS));
		struct rollup_split sp;
		bool ok = rollup_split_range(from, to, now, &sp);

		if (!ok) {
			/* no whole settled minute inside */
			int64_t m = rollup_minute_floor(from + M_MS - 1);

			assert_true(from >= to || m + M_MS > to ||
				    m + M_MS + 2 * M_MS > now);
			continue;
		}
		assert_true(from <= sp.minute_from);
		assert_true(sp.minute_from < sp.minute_to);
		assert_true(sp.minute_to <= to);
		assert_true(sp.minute_to + 2 * M_MS <= now);
		assert_int_equal(sp.minute_from % M_MS, 0);
		assert_int_equal(sp.minute_to % M_MS, 0);
		assert_true(sp.minute_from - from < M_MS);
		assert_true(sp.minute_from <= sp.hour_from);
		assert_true(sp.hour_from <= sp.hour_to);
		assert_true(sp.hour_to <= sp.minute_to);
		if (sp.hour_from == sp.hour_to) {
			assert_int_equal(sp.hour_to, sp.minute_to);
		} else {
			assert_int_equal(sp.hour_from % H_MS, 0);
			assert_int_equal(sp.hour_to % H_MS, 0);
			assert_true(sp.hour_from - from < H_MS);
			assert_true(sp.hour_to + 2 * M_MS <= now);
			/* no further whole settled hour at either end */
			assert_true(sp.hour_to + H_MS > to ||
				    sp.hour_to + H_MS + 2 * M_MS > now);
		}
		/* no further whole settled minute at the end */
		assert_true(sp.minute_to + M_MS > to ||
			    sp.minute_to + M_MS + 2 * M_MS > now);
	}
}

/* ---- bucket math -------------------------------------------------------- */

static void
test_bucket_math(void **state)
{
	static const struct {
		int64_t d;
		int bucket;
	} cases[] = {
		{INT64_MIN, 0},
		{-5, 0},
		{0, 0},
		{1, 1},
		{2, 70},	    /* ln 2 / ln gamma = 69.3 */
		{1000, 691},	    /* 1 us */
		{1000000000, 2073}, /* 1 s */
		{INT64_MAX, 4367},  /* the largest there is */
	};
	int prev = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (rollup_bucket(cases[i].d) != cases[i].bucket)
			fail_msg("bucket of %lld: want %d, got %d",
				 (long long)cases[i].d, cases[i].bucket,
				 rollup_bucket(cases[i].d));
	}
	assert_true(rollup_bucket(INT64_MAX) <= ROLLUP_BUCKET_MAX);
	assert_true(rollup_bucket_value(0) == 0);
	assert_true(rollup_bucket_value(-3) == 0);
	/* every duration is within alpha of its bucket's value, and the
	 * buckets never go down as durations grow */
	for (double x = 1; x < 9.2e18; x *= 1.0007) {
		int64_t d = (int64_t)x;
		int b = rollup_bucket(d);

		assert_true(b >= prev);
		prev = b;
		assert_within_alpha(rollup_bucket_value(b), (double)d);
	}
	/* the edges: the integer at or below gamma^i is in bucket i or
	 * lower, the next one above it (where they are far enough apart for
	 * double precision to tell) */
	for (int i = 1; i <= 2800; i++) {
		double edge = pow((1 + ROLLUP_ALPHA) / (1 - ROLLUP_ALPHA), i);
		int64_t below = (int64_t)floor(edge);

		if (edge > 1e12 || (edge - (double)below) / edge < 1e-9 ||
		    ((double)below + 1 - edge) / edge < 1e-9)
			continue;
		assert_true(rollup_bucket(below) <= i);
		assert_true(rollup_bucket(below + 1) > i);
	}
}

/* ---- histograms --------------------------------------------------------- */

static void
test_hist_add(void **state)
{
	struct rollup_hist *h = rollup_hist_new();

	(void)state;
	assert_non_null(h);
	assert_int_equal(rollup_hist_count(h), 0);
	assert_true(rollup_hist_quantile(h, 0.5) == 0);
	assert_int_equal(rollup_hist_add(h, -1, 1), STATUS_INVALID);
	assert_int_equal(rollup_hist_add(h, ROLLUP_BUCKET_MAX + 1, 1),
			 STATUS_INVALID);
	assert_int_equal(rollup_hist_add(h, 5, -1), STATUS_INVALID);
	assert_int_equal(rollup_hist_add(NULL, 5, 1), STATUS_INVALID);
	assert_int_equal(rollup_hist_count(h), 0);
	/* growth in both directions, to both ends */
	assert_int_equal(rollup_hist_add(h, 2000, 3), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, 2500, 1), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, 10, 1), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, ROLLUP_BUCKET_MAX, 2), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, 0, 1), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, 2000, 0), STATUS_OK);
	assert_int_equal(rollup_hist_count(h), 8);
	/* sorted: 0, v10, v2000 x3, v2500, vMAX x2 */
	assert_true(rollup_hist_quantile(h, 0) == 0);
	assert_true(rollup_hist_quantile(h, -1) == 0);
	assert_true(rollup_hist_quantile(h, NAN) == 0);
	assert_true(rollup_hist_quantile(h, 1) ==
		    rollup_bucket_value(ROLLUP_BUCKET_MAX));
	assert_true(rollup_hist_quantile(h, 7) ==
		    rollup_bucket_value(ROLLUP_BUCKET_MAX));
	assert_true(rollup_hist_quantile(h, 3.0 / 7) ==
		    rollup_bucket_value(2000));
	/* position 1.5 of 0..7: halfway between v10 and v2000 */
	assert_true(fabs(rollup_hist_quantile(h, 1.5 / 7) -
			 (rollup_bucket_value(10) + rollup_bucket_value(2000)) /
				 2) < 1e-6 * rollup_bucket_value(2000));
	/* the total never overflows */
	assert_int_equal(rollup_hist_add(h, 1, INT64_MAX), STATUS_LIMIT);
	assert_int_equal(rollup_hist_count(h), 8);
	rollup_hist_free(h);
	rollup_hist_free(NULL);

	h = rollup_hist_new();
	assert_int_equal(rollup_hist_add(h, 7, INT64_MAX), STATUS_OK);
	assert_int_equal(rollup_hist_add(h, 7, 1), STATUS_LIMIT);
	assert_true(rollup_hist_quantile(h, 0.5) == rollup_bucket_value(7));
	rollup_hist_free(h);
}

/* Percentiles from a histogram stay within alpha of percentile_cont over
 * the raw durations, for any size and any q. */
static void
test_quantile_random(void **state)
{
	static const size_t sizes[] = {1, 2, 3, 10, 101, 1000, 50000};
	static const double qs[] = {0,	  0.01, 0.1,   0.25, 0.5,
				    0.75, 0.9,	0.95,  0.99, 0.999,
				    1,	  0.33, 0.666, 0.123};
	uint64_t seed = 0x5eed5eed12345ull;

	(void)state;
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (int round = 0; round < 5; round++) {
			size_t n = sizes[si];
			int64_t *v = malloc(n * sizeof(*v));
			struct rollup_hist *h = rollup_hist_new();

			assert_non_null(v);
			assert_non_null(h);
			for (size_t i = 0; i < n; i++) {
				/* one round of a narrow range: many values
				 * in few buckets */
				v[i] = round == 4
					       ? 5000000 +
							 (int64_t)(rnd(&seed) %
								   100000)
					       : rnd_duration(&seed);
				assert_int_equal(
					rollup_hist_add(h, rollup_bucket(v[i]),
							1),
					STATUS_OK);
			}
			qsort(v, n, sizeof(*v), cmp_i64);
			assert_int_equal(rollup_hist_count(h), (int64_t)n);
			for (size_t qi = 0; qi < sizeof(qs) / sizeof(qs[0]);
			     qi++)
				assert_within_alpha(
					rollup_hist_quantile(h, qs[qi]),
					exact_percentile(v, n, qs[qi]));
			rollup_hist_free(h);
			free(v);
		}
	}
}

static void
test_hist_text(void **state)
{
	static const struct {
		const char *buckets, *counts;
		int rc;
		int64_t added;
	} cases[] = {
		{"{1,5,9}", "{3,1,2}", STATUS_OK, 6},
		{"{}", "{}", STATUS_OK, 0},
		{"{4400}", "{9223372036854775000}", STATUS_OK,
		 9223372036854775000},
		{"7", "4", STATUS_OK, 4}, /* a GROUP BY row */
		{"{0,0}", "{1,0}", STATUS_OK, 1},
		/* malformed */
		{"", "", STATUS_INVALID, 0},
		{"{", "{", STATUS_INVALID, 0},
		{"{1,2", "{1,2}", STATUS_INVALID, 0},
		{"1,2}", "{1,2}", STATUS_INVALID, 0},
		{"{1,,2}", "{1,1,2}", STATUS_INVALID, 0},
		{"{1,2,}", "{1,2,3}", STATUS_INVALID, 0},
		{"{,1}", "{1}", STATUS_INVALID, 0},
		{"{a}", "{1}", STATUS_INVALID, 0},
		{"{1 ,2}", "{1,2}", STATUS_INVALID, 0},
		{" {1}", "{1}", STATUS_INVALID, 0},
		{"{{1}}", "{{1}}", STATUS_INVALID, 0},
		{"{NULL}", "{1}", STATUS_INVALID, 0},
		{"{1}", "{NULL}", STATUS_INVALID, 0},
		{"{1}x", "{1}", STATUS_INVALID, 0},
		{"{}x", "{}", STATUS_INVALID, 0},
		{"{1}", "{+1}", STATUS_INVALID, 0},
		{"[0:1]={1,2}", "{1,2}", STATUS_INVALID, 0},
		{"{1.5}", "{1}", STATUS_INVALID, 0},
		/* out of range */
		{"{-1}", "{1}", STATUS_INVALID, 0},
		{"{4401}", "{1}", STATUS_INVALID, 0},
		{"{1}", "{-1}", STATUS_INVALID, 0},
		{"{1}", "{9223372036854775808}", STATUS_INVALID, 0},
		{"{99999999999999999999}", "{1}", STATUS_INVALID, 0},
		/* lengths differ */
		{"{1,2}", "{1}", STATUS_INVALID, 0},
		{"{1}", "{1,2}", STATUS_INVALID, 0},
		{"{}", "{1}", STATUS_INVALID, 0},
		{"5", "{1,2}", STATUS_INVALID, 0},
		/* the total would overflow */
		{"{1,2}", "{9223372036854775807,1}", STATUS_LIMIT, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rollup_hist *h = rollup_hist_new();
		double before;
		int rc;

		assert_non_null(h);
		/* something already there, which a failure must not touch */
		assert_int_equal(rollup_hist_add(h, 3000, 2), STATUS_OK);
		before = rollup_hist_quantile(h, 0.5);
		rc = rollup_hist_add_text(h, cases[i].buckets, cases[i].counts);
		if (rc != cases[i].rc)
			fail_msg("case %zu (\"%s\", \"%s\"): want %s, got %s",
				 i, cases[i].buckets, cases[i].counts,
				 status_str(cases[i].rc), status_str(rc));
		assert_int_equal(rollup_hist_count(h), 2 + cases[i].added);
		if (rc != STATUS_OK)
			assert_true(rollup_hist_quantile(h, 0.5) == before);
		rollup_hist_free(h);
	}
	assert_int_equal(rollup_hist_add_text(NULL, "{1}", "{1}"),
			 STATUS_INVALID);

	/* the sum of rows equals the sum of the same counts added one by
	 * one, in any order */
	{
		struct rollup_hist *a = rollup_hist_new(),
				   *b = rollup_hist_new();

		assert_int_equal(
			rollup_hist_add_text(a, "{1,5,9,4000}", "{3,1,2,7}"),
			STATUS_OK);
		assert_int_equal(rollup_hist_add_text(a, "{0,5}", "{4,10}"),
				 STATUS_OK);
		assert_int_equal(rollup_hist_add(b, 4000, 7), STATUS_OK);
		assert_int_equal(rollup_hist_add(b, 5, 11), STATUS_OK);
		assert_int_equal(rollup_hist_add(b, 9, 2), STATUS_OK);
		assert_int_equal(rollup_hist_add(b, 0, 4), STATUS_OK);
		assert_int_equal(rollup_hist_add(b, 1, 3), STATUS_OK);
		assert_int_equal(rollup_hist_count(a), 27);
		assert_int_equal(rollup_hist_count(b), 27);
		for (double q = 0; q <= 1; q += 0.01)
			assert_true(rollup_hist_quantile(a, q) ==
				    rollup_hist_quantile(b, q));
		rollup_hist_free(a);
		rollup_hist_free(b);
	}
}

/* ---- the database ------------------------------------------------------- */

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 3, .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	char err[512];
	PGconn *c;
	int applied;

	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	if (pgtest_start(&cluster) != 0)
		return -1;
	c = PQconnectdb(cluster.conninfo);
	if (PQstatus(c) != CONNECTION_OK ||
	    migrate_apply(c, &opts, &applied, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	PQfinish(c);
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

/* C and SQL put every duration in the same bucket. */
static void
test_sql_bucket_agrees(void **state)
{
	enum {
		N = 12000
	};
	struct pg_conn *c = conn();
	int64_t *v = malloc(N * sizeof(*v));
	char *text = malloc((size_t)N * 24 + 8);
	const char *params[1] = {text};
	uint64_t seed = 42;
	size_t n = 0, len = 0;
	PGresult *res = NULL;
	struct pg_error perr;

	(void)state;
	assert_non_null(v);
	assert_non_null(text);
	/* around every bucket edge, then random durations */
	for (int i = 1; i <= 4366 && n + 3 <= N; i += 2) {
		int64_t e = (int64_t)floor(
			pow((1 + ROLLUP_ALPHA) / (1 - ROLLUP_ALPHA), i));

		if (e <= 0 || e > INT64_MAX / 2)
			continue;
		v[n++] = e - 1;
		v[n++] = e;
		v[n++] = e + 1;
	}
	v[n++] = 0;
	v[n++] = INT64_MAX;
	while (n < N)
		v[n++] = rnd_duration(&seed);
	len += (size_t)snprintf(text, 8, "{");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, 24, "%s%lld", i ? "," : "",
					(long long)v[i]);
	snprintf(text + len, 8, "}");
	if (pg_query(c,
		     "SELECT sextant_duration_bucket(d) FROM "
		     "unnest($1::bigint[]) WITH ORDINALITY AS t(d, i) "
		     "ORDER BY i",
		     1, params, &res, &perr) != STATUS_OK)
		fail_msg("%s", perr.detail);
	assert_int_equal(PQntuples(res), (int)n);
	for (size_t i = 0; i < n; i++) {
		long sql = strtol(PQgetvalue(res, (int)i, 0), NULL, 10);

		if (sql != rollup_bucket(v[i]))
			fail_msg("duration %lld: SQL bucket %ld, C bucket %d",
				 (long long)v[i], sql, rollup_bucket(v[i]));
	}
	PQclear(res);
	free(text);
	free(v);
	pg_release(c);
}

/*
 * Span shapes and what span_calls must make of them (protocol NULL: not a
 * call).  Written out by hand, independent of the view's SQL.
 */
struct shape {
	const char *service;
	enum otlp_source source;
	int kind, status_code;
	const char *http_method, *http_route, *url_path;
	int http_status;
	const char *rpc_system, *rpc_service, *rpc_method;
	int grpc_status;
	const char *db_system, *db_operation, *db_table;
	/* expected */
	const char *protocol, *k1, *k2;
	int status;
	bool is_error;
	bool is_client_error; /* since 0013: 4xx, non-error gRPC codes */
};

#define SRV  2
#define CLI  3
#define OTLP OTLP_SOURCE_OTLP
#define EBPF OTLP_SOURCE_EBPF
/* One shape a line: service, source, kind, span status; HTTP method,
 * route, url path, status; RPC system, service, method, gRPC status; DB
 * system, operation, table; then the expected protocol, k1, k2, status,
 * is_error.  A table, so laid out by hand. */
/* clang-format off */
static const struct shape shapes[] = {
	{"pay", OTLP, SRV, 0, "get", "/pay", NULL, 200, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/pay", "GET", 200, false},
	{"pay", OTLP, SRV, 2, "POST", "/pay", NULL, 503, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/pay", "POST", 503, true},
	{"pay", EBPF, SRV, 0, "GET", NULL, "/raw/7", -1, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/raw/7", "GET", 0, false},
	{"pay", EBPF, SRV, 0, "GET", NULL, NULL, 500, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "", "GET", 500, true},
	{"pay", OTLP, SRV, 0, "GET", "/pay", NULL, 499, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/pay", "GET", 499, false, true},
	/* OpenTelemetry's rule (0013): a server's 404 is a client error, a
	 * 200 with span status ERROR an error, UNAUTHENTICATED a client
	 * error, INTERNAL an error */
	{"pay", OTLP, SRV, 0, "GET", "/pay", NULL, 404, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/pay", "GET", 404, false, true},
	{"pay", OTLP, SRV, 2, "GET", "/ok", NULL, 200, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/ok", "GET", 200, true},
	{"auth", OTLP, SRV, 0, NULL, NULL, NULL, -1, "grpc", "a.Auth", "Login",
	 16, NULL, NULL, NULL, "grpc", "a.Auth/Login", "", 16, false, true},
	{"auth", EBPF, SRV, 0, NULL, NULL, NULL, -1, "grpc", "a.Auth", "Login",
	 13, NULL, NULL, NULL, "grpc", "a.Auth/Login", "", 13, true},
	/* gRPC with an HTTP method too: gRPC only */
	{"pay", OTLP, SRV, 0, "POST", "/x", NULL, 200, "grpc", "pkg.Pay",
	 "Charge", 0, NULL, NULL, NULL, "grpc", "pkg.Pay/Charge", "", 0, false},
	{"pay", OTLP, SRV, 0, NULL, NULL, NULL, -1, "grpc", NULL, "Charge", 14,
	 NULL, NULL, NULL, "grpc", "Charge", "", 14, true},
	{"pay", EBPF, SRV, 0, NULL, NULL, NULL, -1, "grpc", "pkg.Pay", NULL, -1,
	 NULL, NULL, NULL, "grpc", "pkg.Pay/", "", -1, false},
	{"pay", OTLP, CLI, 2, NULL, NULL, NULL, -1, NULL, NULL, NULL, -1,
	 "postgresql", "select", "orders", "sql", "SELECT", "orders", 2, true},
	{"pay", EBPF, CLI, 1, NULL, NULL, NULL, -1, NULL, NULL, NULL, -1,
	 "postgresql", NULL, NULL, "sql", "", "", 1, false},
	{"cart", OTLP, SRV, 0, "GET", "/cart", NULL, 200, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, "http", "/cart", "GET", 200, false},
	/* not calls: internal, an HTTP client, a non-gRPC RPC server, a gRPC
	 * client, a server span with a db.system */
	{"pay", OTLP, 1, 0, "GET", "/int", NULL, 200, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, NULL, NULL, NULL, 0, false},
	{"pay", OTLP, CLI, 0, "GET", "/out", NULL, 200, NULL, NULL, NULL, -1,
	 NULL, NULL, NULL, NULL, NULL, NULL, 0, false},
	{"pay", OTLP, SRV, 0, NULL, NULL, NULL, -1, "thrift", "S", "m", -1,
	 NULL, NULL, NULL, NULL, NULL, NULL, 0, false},
	{"pay", OTLP, CLI, 0, NULL, NULL, NULL, -1, "grpc", "S", "m", 0,
	 NULL, NULL, NULL, NULL, NULL, NULL, 0, false},
	{"pay", OTLP, SRV, 0, NULL, NULL, NULL, -1, NULL, NULL, NULL, -1,
	 "mysql", "SELECT", "t", NULL, NULL, NULL, 0, false},
};
/* clang-format on */
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* Shapes that are calls (span_calls.protocol not NULL). */
static int
call_shapes(void)
{
	int n = 0;

	for (size_t i = 0; i < N_SHAPES; i++)
		n += shapes[i].protocol != NULL;
	return n;
}

/* The spans written so far, per shape, for the expected aggregates. */
struct written {
	int64_t *dur[N_SHAPES];
	size_t n[N_SHAPES];
	uint32_t next_id;
};

static void
written_free(struct written *w)
{
	for (size_t i = 0; i < N_SHAPES; i++)
		free(w->dur[i]);
	memset(w, 0, sizeof(*w));
}

/*
 * Writes per_shape spans of each shape (only shape `only` when >= 0) at
 * random times inside [start, start + width_s) through lib/otlp/store, and
 * records their durations in w.  Shape i has trace ids starting with byte
 * i, so the view can be checked per shape.
 */
static void
write_spans_in(struct pg_conn *c, struct written *w, int64_t start,
	       int64_t width_s, size_t per_shape, int only, uint64_t *seed)
{
	size_t total = per_shape * (only >= 0 ? 1 : N_SHAPES), k = 0;
	struct otlp_span *s = calloc(total, sizeof(*s));
	struct otlp_batch b = {.spans = s, .n_spans = total};
	struct pg_error perr;
	int64_t inserted = 0;

	assert_non_null(s);
	for (size_t i = 0; i < N_SHAPES; i++) {
		const struct shape *sh = &shapes[i];

		if (only >= 0 && (size_t)only != i)
			continue;
		w->dur[i] = realloc(w->dur[i],
				    (w->n[i] + per_shape) * sizeof(int64_t));
		assert_non_null(w->dur[i]);
		for (size_t j = 0; j < per_shape; j++, k++) {
			struct otlp_span *x = &s[k];
			int64_t d = rnd_duration(seed);
			uint64_t at =
				(uint64_t)start * 1000000000ull +
				rnd(seed) %
					((uint64_t)width_s * 1000000000ull - 1);
			uint32_t id = ++w->next_id;

			x->trace_id[0] = (uint8_t)i;
			memcpy(x->trace_id + 4, &id, sizeof(id));
			memcpy(x->span_id, &id, sizeof(id));
			x->service_name = sh->service;
			x->source = sh->source;
			x->name = "op";
			x->kind = sh->kind;
			x->status_code = sh->status_code;
			x->start_unix_nano = at;
			x->end_unix_nano = at + (uint64_t)d;
			x->http_method = sh->http_method;
			x->http_route = sh->http_route;
			x->url_path = sh->url_path;
			x->http_status = sh->http_status;
			x->rpc_system = sh->rpc_system;
			x->rpc_service = sh->rpc_service;
			x->rpc_method = sh->rpc_method;
			x->grpc_status = sh->grpc_status;
			x->db_system = sh->db_system;
			x->db_operation = sh->db_operation;
			x->db_table = sh->db_table;
			x->input_tokens = -1;
			x->output_tokens = -1;
			w->dur[i][w->n[i]++] = d;
		}
	}
	if (store_write_spans(c, &b, &inserted, &perr) != STATUS_OK)
		fail_msg("store_write_spans: %s", perr.detail);
	assert_int_equal(inserted, (int64_t)total);
	free(s);
}

/* write_spans_in over the hour starting at period. */
static void
write_spans(struct pg_conn *c, struct written *w, int64_t period,
	    size_t per_shape, int only, uint64_t *seed)
{
	write_spans_in(c, w, period, 3600, per_shape, only, seed);
}

/* One expected span_rollup row: the shapes with the same key summed. */
struct want_row {
	const struct shape *key;
	int64_t counts[ROLLUP_BUCKET_MAX + 1];
	int64_t requests;
	bool seen;
};

static bool
same_key(const struct shape *a, const struct shape *b)
{
	return strcmp(a->service, b->service) == 0 && a->source == b->source &&
	       strcmp(a->protocol, b->protocol) == 0 &&
	       strcmp(a->k1, b->k1) == 0 && strcmp(a->k2, b->k2) == 0 &&
	       a->status == b->status;
}

/* "{1,5}" and "{3,2}" of a row's non-zero buckets. */
static void
row_text(const struct want_row *r, char *buckets, char *counts, size_t size)
{
	size_t lb = 0, lc = 0;

	lb += (size_t)snprintf(buckets, size, "{");
	lc += (size_t)snprintf(counts, size, "{");
	for (int b = 0; b <= ROLLUP_BUCKET_MAX; b++) {
		if (r->counts[b] == 0)
			continue;
		lb += (size_t)snprintf(buckets + lb, size - lb, "%s%d",
				       lb > 1 ? "," : "", b);
		lc += (size_t)snprintf(counts + lc, size - lc, "%s%lld",
				       lc > 1 ? "," : "",
				       (long long)r->counts[b]);
	}
	assert_true(lb + 2 < size && lc + 2 < size);
	snprintf(buckets + lb, size - lb, "}");
	snprintf(counts + lc, size - lc, "}");
}

/*
 * span_rollup for period holds exactly one row per call key of w, with the
 * count per bucket computed here from the durations written; percentiles
 * read from each row are within alpha of the exact ones.
 */
static void
check_rollup(struct pg_conn *c, const struct written *w, int64_t period)
{
	struct want_row *want = calloc(N_SHAPES, sizeof(*want));
	int64_t *all[N_SHAPES] = {0};
	size_t n_all[N_SHAPES] = {0}, n_want = 0;
	char p[32], *bt = malloc(65536), *ct = malloc(65536);
	const char *params[] = {p};
	PGresult *res = NULL;
	struct pg_error perr;

	assert_non_null(want);
	assert_non_null(bt);
	assert_non_null(ct);
	for (size_t i = 0; i < N_SHAPES; i++) {
		size_t r = 0;

		if (shapes[i].protocol == NULL || w->n[i] == 0)
			continue;
		while (r < n_want && !same_key(want[r].key, &shapes[i]))
			r++;
		if (r == n_want)
			want[n_want++].key = &shapes[i];
		for (size_t j = 0; j < w->n[i]; j++)
			want[r].counts[rollup_bucket(w->dur[i][j])]++;
		want[r].requests += (int64_t)w->n[i];
		all[r] =
			realloc(all[r], (n_all[r] + w->n[i]) * sizeof(int64_t));
		assert_non_null(all[r]);
		memcpy(all[r] + n_all[r], w->dur[i], w->n[i] * sizeof(int64_t));
		n_all[r] += w->n[i];
	}
	snprintf(p, sizeof(p), "%lld", (long long)period);
	if (pg_query(c,
		     "SELECT service_name, source, protocol, k1, k2, status, "
		     "requests, buckets::text, counts::text FROM span_rollup "
		     "WHERE period = to_timestamp($1::bigint)",
		     1, params, &res, &perr) != STATUS_OK)
		fail_msg("%s", perr.detail);
	assert_int_equal(PQntuples(res), (int)n_want);
	for (int row = 0; row < PQntuples(res); row++) {
		struct shape got = {
			.service = PQgetvalue(res, row, 0),
			.source = strcmp(PQgetvalue(res, row, 1), "ebpf") == 0
					  ? OTLP_SOURCE_EBPF
					  : OTLP_SOURCE_OTLP,
			.protocol = PQgetvalue(res, row, 2),
			.k1 = PQgetvalue(res, row, 3),
			.k2 = PQgetvalue(res, row, 4),
			.status = (int)num(PQgetvalue(res, row, 5)),
		};
		struct rollup_hist *h = rollup_hist_new();
		size_t r = 0;

		while (r < n_want && !same_key(want[r].key, &got))
			r++;
		if (r == n_want)
			fail_msg("unexpected rollup row %s %s %s \"%s\" \"%s\" "
				 "%d",
				 got.service, PQgetvalue(res, row, 1),
				 got.protocol, got.k1, got.k2, got.status);
		assert_false(want[r].seen);
		want[r].seen = true;
		assert_int_equal(num(PQgetvalue(res, row, 6)),
				 want[r].requests);
		row_text(&want[r], bt, ct, 65536);
		assert_string_equal(PQgetvalue(res, row, 7), bt);
		assert_string_equal(PQgetvalue(res, row, 8), ct);
		/* and what queries do with it */
		assert_int_equal(rollup_hist_add_text(h,
						      PQgetvalue(res, row, 7),
						      PQgetvalue(res, row, 8)),
				 STATUS_OK);
		assert_int_equal(rollup_hist_count(h), want[r].requests);
		qsort(all[r], n_all[r], sizeof(int64_t), cmp_i64);
		for (double q = 0; q <= 1.0001; q += 0.05)
			assert_within_alpha(
				rollup_hist_quantile(h, q),
				exact_percentile(all[r], n_all[r], q));
		rollup_hist_free(h);
	}
	PQclear(res);
	for (size_t r = 0; r < N_SHAPES; r++)
		free(all[r]);
	free(want);
	free(bt);
	free(ct);
}

/* span_calls classifies every shape as written out in shapes[]. */
static void
test_view(void **state)
{
	struct pg_conn *c = conn();
	struct written w = {0};
	uint64_t seed = 7;
	PGresult *res = NULL;
	struct pg_error perr;

	(void)state;
	clear_store(c);
	write_spans(c, &w, hour_ago(3), 3, -1, &seed);
	if (pg_query(c,
		     "SELECT DISTINCT get_byte(trace_id, 0), protocol, k1, k2, "
		     "status, is_error, is_client_error FROM span_calls "
		     "ORDER BY 1",
		     0, NULL, &res, &perr) != STATUS_OK)
		fail_msg("%s", perr.detail);
	/* one distinct row per shape: nothing depends on the duration */
	assert_int_equal(PQntuples(res), (int)N_SHAPES);
	for (int i = 0; i < (int)N_SHAPES; i++) {
		const struct shape *sh = &shapes[i];

		assert_int_equal(num(PQgetvalue(res, i, 0)), i);
		if (sh->protocol == NULL) {
			for (int col = 1; col <= 4; col++)
				assert_true(PQgetisnull(res, i, col));
			/* not calls: judged as spans (none of them failed) */
			assert_string_equal(PQgetvalue(res, i, 5), "f");
			assert_string_equal(PQgetvalue(res, i, 6), "f");
			continue;
		}
		assert_string_equal(PQgetvalue(res, i, 1), sh->protocol);
		assert_string_equal(PQgetvalue(res, i, 2), sh->k1);
		assert_string_equal(PQgetvalue(res, i, 3), sh->k2);
		assert_int_equal(num(PQgetvalue(res, i, 4)), sh->status);
		assert_string_equal(PQgetvalue(res, i, 5),
				    sh->is_error ? "t" : "f");
		assert_string_equal(PQgetvalue(res, i, 6),
				    sh->is_client_error ? "t" : "f");
	}
	PQclear(res);
	written_free(&w);
	pg_release(c);
}

/*
 * A refresh computes exactly the aggregate built here; late spans make
 * the period dirty again, a young mark holds the refresh back, and the
 * next refresh after it settles includes them.
 */
static void
test_refresh_and_late_spans(void **state)
{
	struct pg_conn *c = conn();
	struct written w = {0};
	int64_t p = hour_ago(3);
	uint64_t seed = 11;
	struct rollup_hist *h = rollup_hist_new();
	PGresult *res = NULL;
	struct pg_error perr;
	char sql[256];

	(void)state;
	clear_store(c);
	write_spans(c, &w, p, 150, -1, &seed);
	/* spans only mark their own hour, once per slot */
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty"),
			 1);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_dirty WHERE period = "
		 "to_timestamp(%lld)",
		 (long long)p);
	assert_int_equal(sql_ll(c, sql), 1);
	/* just written: the hour and its minutes (two units) wait until the
	 * marks are 60 s old */
	refresh(c, 0, 0, 2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 0);
	age_dirty(c);
	refresh(c, 0, 2, 0);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty"),
			 0);
	check_rollup(c, &w, p);
	/* rollup rows judged by sextant_call_outcome count the errors and
	 * client errors the raw spans have, per service */
	assert_int_equal(
		sql_ll(c,
		       "SELECT count(*) FROM (SELECT service_name, "
		       "sextant_call_outcome(protocol, status, span_error) "
		       "AS o, sum(requests) AS n FROM span_rollup GROUP BY 1, "
		       "2) r FULL JOIN (SELECT service_name, outcome AS o, "
		       "count(*) AS n FROM span_calls WHERE protocol IS NOT "
		       "NULL GROUP BY 1, 2) s USING (service_name, o) WHERE "
		       "r.n IS DISTINCT FROM s.n"),
		0);
	assert_int_equal(sql_ll(c, "SELECT count(DISTINCT (service_name, "
				   "outcome)) FROM span_calls WHERE protocol "
				   "IS NOT NULL"),
			 6); /* pay: ok, errors, client errors; auth: errors,
			      * client errors; cart: ok */
	/* the rows summed give what percentile_cont gives on the raw spans */
	if (pg_query(c,
		     "SELECT buckets::text, counts::text FROM span_rollup "
		     "WHERE service_name = 'pay' AND protocol = 'http'",
		     0, NULL, &res, &perr) != STATUS_OK)
		fail_msg("%s", perr.detail);
	for (int i = 0; i < PQntuples(res); i++)
		assert_int_equal(rollup_hist_add_text(h, PQgetvalue(res, i, 0),
						      PQgetvalue(res, i, 1)),
				 STATUS_OK);
	PQclear(res);
	for (double q = 0; q <= 1.0001; q += 0.1) {
		double want;

		snprintf(sql, sizeof(sql),
			 "SELECT percentile_cont(%.2f) WITHIN GROUP (ORDER BY "
			 "duration_ns) FROM span_calls WHERE service_name = "
			 "'pay' AND protocol = 'http'",
			 q > 1 ? 1 : q);
		if (pg_query(c, sql, 0, NULL, &res, &perr) != STATUS_OK)
			fail_msg("%s", perr.detail);
		want = strtod(PQgetvalue(res, 0, 0), NULL);
		PQclear(res);
		assert_within_alpha(rollup_hist_quantile(h, q > 1 ? 1 : q),
				    want);
	}
	assert_int_equal(rollup_hist_count(h),
			 sql_ll(c, "SELECT count(*) FROM span_calls WHERE "
				   "service_name = 'pay' AND protocol = "
				   "'http'"));
	rollup_hist_free(h);

	/* late spans for the rolled-up period: dirty again */
	write_spans(c, &w, p, 40, 0, &seed);
	write_spans(c, &w, p, 5, 8, &seed);
	assert_int_equal(sql_ll(c, "SELECT count(DISTINCT period) FROM "
				   "span_rollup_dirty"),
			 1);
	refresh(c, 0, 0, 2); /* young: not yet, the old rows stay */
	assert_int_equal(sql_ll(c, "SELECT sum(requests) FROM span_rollup"),
			 150 * call_shapes());
	/* a settled mark beside a young one: still held back, both kept */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO span_rollup_dirty VALUES (to_timestamp(%lld), 5)",
		 (long long)p);
	exec_sql(c, sql);
	refresh(c, 0, 0, 2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty "
				   "WHERE slot = 5"),
			 1);
	age_dirty(c);
	refresh(c, 0, 2, 0);
	assert_int_equal(sql_ll(c, "SELECT sum(requests) FROM span_rollup"),
			 150 * call_shapes() + 45);
	check_rollup(c, &w, p);
	/* a refresh with nothing to do */
	refresh(c, 0, 0, 0);
	check_rollup(c, &w, p);
	written_free(&w);
	pg_release(c);
}

/*
 * span_rollup_minute of the hour starting at p equals an aggregate of
 * span_calls per minute written here, and the minutes of each key summed
 * equal its span_rollup row when the hour has one.
 */
static void
check_minutes(struct pg_conn *c, int64_t p, bool with_hour)
{
	char sql[4096];
	static const char per_minute[] =
		"SELECT date_trunc('minute', start_time, 'UTC') AS period, "
		"service_name, source, protocol, k1, k2, status, b, count(*) "
		"AS n FROM span_calls, sextant_duration_bucket(duration_ns) b "
		"WHERE protocol IS NOT NULL AND start_time >= "
		"to_timestamp(%lld) AND start_time < to_timestamp(%lld) + "
		"interval '1 hour' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8";
	static const char from_rows[] =
		"SELECT period, service_name, source, protocol, k1, k2, "
		"status, u.b, u.n FROM %s, unnest(buckets, counts) u(b, n) "
		"WHERE %s >= to_timestamp(%lld) AND %s < to_timestamp(%lld) + "
		"interval '1 hour'";
	char want[512], got[512], hour[512];

	snprintf(want, sizeof(want), per_minute, (long long)p, (long long)p);
	snprintf(got, sizeof(got), from_rows, "span_rollup_minute", "period",
		 (long long)p, "period", (long long)p);
	/* the same bucket counts both ways, and requests = sum(counts) */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL "
		 "(%s EXCEPT ALL %s)) x",
		 want, got, got, want);
	assert_int_equal(sql_ll(c, sql), 0);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_minute WHERE requests <> "
		 "(SELECT sum(x) FROM unnest(counts) x) AND period >= "
		 "to_timestamp(%lld)",
		 (long long)p);
	assert_int_equal(sql_ll(c, sql), 0);
	if (!with_hour)
		return;
	snprintf(hour, sizeof(hour), from_rows, "span_rollup", "period",
		 (long long)p, "period", (long long)p);
	snprintf(sql, sizeof(sql),
		 "WITH m AS (SELECT to_timestamp(%lld) AS period, "
		 "service_name, source, protocol, k1, k2, status, b, "
		 "sum(n)::bigint AS n FROM (%s) g GROUP BY 2, 3, 4, 5, 6, 7, "
		 "8), h AS (%s) SELECT count(*) FROM ((SELECT * FROM m EXCEPT "
		 "ALL SELECT * FROM h) UNION ALL (SELECT * FROM h EXCEPT ALL "
		 "SELECT * FROM m)) x",
		 (long long)p, got, hour);
	assert_int_equal(sql_ll(c, sql), 0);
}

/*
 * span_rollup_5m equals the merge of span_rollup_minute per 5 minutes,
 * service, source, protocol and outcome (bucket by bucket, both ways),
 * each row's buckets ascending and distinct with requests = sum(counts);
 * and every 5 minutes with no dirty minute equals the raw calls of
 * span_calls in it.  Returns the number of 5-minute rows.
 */
/* span_rollup_5m with its histogram text read back as arrays, and f
 * the name of a row */
#define FIVE_ARRAYS                                                            \
	"(SELECT period, service_name, source, protocol, outcome, requests, "  \
	"buckets::int[] AS buckets, counts::bigint[] AS counts FROM "          \
	"span_rollup_5m) f"

static long long
check_five(struct pg_conn *c)
{
	static const char *const sql[] = {
		/* the minute rows merged, against the 5-minute rows */
		"WITH m AS (SELECT to_timestamp(floor(extract(epoch FROM "
		"period) / 300) * 300) AS period, service_name, source, "
		"protocol, sextant_call_outcome(protocol, status, span_error) "
		"AS outcome, u.b, sum(u.n)::bigint AS n FROM "
		"span_rollup_minute, "
		"unnest(buckets, counts) u(b, n) GROUP BY 1, 2, 3, 4, 5, 6), "
		"f AS (SELECT period, service_name, source, protocol, outcome, "
		"u.b, u.n FROM " FIVE_ARRAYS ", unnest(buckets, counts) u(b, "
		"n)) "
		"SELECT count(*) FROM ((SELECT * FROM m EXCEPT ALL SELECT * "
		"FROM "
		"f) UNION ALL (SELECT * FROM f EXCEPT ALL SELECT * FROM m)) x",
		/* the form of each row */
		"SELECT count(*) FROM " FIVE_ARRAYS
		" WHERE requests <> (SELECT "
		"sum(x) FROM unnest(counts) x) OR buckets <> ARRAY(SELECT "
		"DISTINCT x FROM unnest(buckets) x ORDER BY x) OR "
		"cardinality(buckets) <> cardinality(counts) OR "
		"extract(epoch FROM period)::bigint % 300 <> 0",
		/* the text as PostgreSQL prints the arrays (what the gateway
		 * parses) */
		"SELECT count(*) FROM span_rollup_5m WHERE buckets <> "
		"buckets::int[]::text OR counts <> counts::bigint[]::text",
		/* the clean 5 minutes against the raw calls */
		"WITH clean AS (SELECT DISTINCT period FROM " FIVE_ARRAYS " "
		"WHERE NOT EXISTS (SELECT 1 FROM span_rollup_minute_dirty d "
		"WHERE d.period >= f.period AND d.period < f.period + interval "
		"'5 minutes')), r AS (SELECT to_timestamp(floor(extract(epoch "
		"FROM start_time) / 300) * 300) AS period, service_name, "
		"source, protocol, outcome::smallint, "
		"sextant_duration_bucket(duration_ns) AS b, count(*) AS n FROM "
		"span_calls WHERE protocol IS NOT NULL GROUP BY 1, 2, 3, 4, 5, "
		"6), rc AS (SELECT r.* FROM r JOIN clean USING (period)), "
		"f AS (SELECT period, service_name, source, protocol, outcome, "
		"u.b, u.n FROM " FIVE_ARRAYS " JOIN clean USING (period), "
		"unnest(buckets, counts) u(b, n)) "
		"SELECT count(*) FROM ((SELECT * FROM rc EXCEPT ALL SELECT * "
		"FROM "
		"f) UNION ALL (SELECT * FROM f EXCEPT ALL SELECT * FROM rc)) x",
	};

	for (size_t i = 0; i < ARRAY_LEN(sql); i++)
		if (sql_ll(c, sql[i]) != 0)
			fail_msg("span_rollup_5m check %zu: %lld rows differ",
				 i, sql_ll(c, sql[i]));
	return sql_ll(c, "SELECT count(*) FROM span_rollup_5m");
}

/*
 * Minute refresh: every minute of spans marked once per slot, computed
 * exactly once its marks are old, agreeing with the hour; a late span in a
 * rolled-up minute marks that minute alone, and the next refresh redoes
 * that minute alone.
 */
static void
test_minute_refresh(void **state)
{
	struct pg_conn *c = conn();
	struct written w = {0};
	int64_t p = hour_ago(2), late = p + 17 * 60;
	uint64_t seed = 21;
	char sql[512];
	long long minutes, rows_before, late_before;

	(void)state;
	clear_store(c);
	write_spans(c, &w, p, 80, -1, &seed);
	minutes = sql_ll(c, "SELECT count(DISTINCT date_trunc('minute', "
			    "start_time, 'UTC')) FROM spans");
	assert_true(minutes > 50);
	/* one mark per minute of the batch, all of one slot */
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty"),
		minutes);
	assert_int_equal(sql_ll(c, "SELECT count(DISTINCT slot) FROM "
				   "span_rollup_minute_dirty"),
			 1);
	refresh(c, 0, 0, 2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_minute"),
			 0);
	age_dirty(c);
	refresh(c, 0, 2, 0);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty"), 0);
	check_minutes(c, p, true);
	assert_true(check_five(c) >= 12); /* every 5 minutes of the hour */
	rows_before = sql_ll(c, "SELECT count(*) FROM span_rollup_minute");

	/* late spans in minute 17 of the rolled-up hour: that minute alone
	 * is marked (and the hour) */
	snprintf(sql, sizeof(sql),
		 "SELECT coalesce(sum(requests), 0) FROM span_rollup_minute "
		 "WHERE period = to_timestamp(%lld)",
		 (long long)late);
	late_before = sql_ll(c, sql);
	write_spans_in(c, &w, late, 60, 3, -1, &seed);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty"), 1);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_minute_dirty WHERE period "
		 "= to_timestamp(%lld)",
		 (long long)late);
	assert_int_equal(sql_ll(c, sql), 1);
	refresh(c, 0, 0, 2); /* young: the old rows stay meanwhile */
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_minute"),
			 rows_before);
	(void)check_five(c);
	/* the other minutes' rows are not rewritten: note them */
	exec_sql(c, "CREATE TEMP TABLE before_late AS SELECT ctid AS t, "
		    "period FROM span_rollup_minute");
	age_dirty(c);
	refresh(c, 0, 2, 0);
	check_minutes(c, p, true);
	(void)check_five(c);
	snprintf(sql, sizeof(sql),
		 "SELECT sum(requests) FROM span_rollup_minute WHERE period = "
		 "to_timestamp(%lld)",
		 (long long)late);
	assert_int_equal(sql_ll(c, sql), late_before + 3 * call_shapes());
	/* the other minutes' rows were left as they were, the late
	 * minute's rewritten */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_minute m JOIN before_late b "
		 "ON m.ctid = b.t AND m.period = b.period WHERE m.period <> "
		 "to_timestamp(%lld)",
		 (long long)late);
	minutes = sql_ll(c, sql);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_minute WHERE period <> "
		 "to_timestamp(%lld)",
		 (long long)late);
	assert_int_equal(minutes, sql_ll(c, sql));
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM span_rollup_minute m JOIN before_late b "
		 "ON m.ctid = b.t WHERE m.period = to_timestamp(%lld)",
		 (long long)late);
	assert_int_equal(sql_ll(c, sql), 0);
	exec_sql(c, "DROP TABLE before_late");
	written_free(&w);
	pg_release(c);
}

/*
 * The minutes' own settle rule: a minute M is refreshed once M + 60 s +
 * ROLLUP_SETTLE_S has passed and its marks are 60 s old; one that is not
 * yet settled waits (and is not pending), and a young mark holds back its
 * minute only, not the others of the hour.
 */
static void
test_minute_settle_rule(void **state)
{
	struct pg_conn *c = conn();

	(void)state;
	clear_store(c);
	/* minutes that need not start on the minute: one ended 30 s past
	 * the settling time, one 30 s before it */
	exec_sql(c,
		 "INSERT INTO span_rollup_minute_dirty VALUES "
		 "(date_trunc('second', now()) - interval '210 seconds', 0), "
		 "(date_trunc('second', now()) - interval '150 seconds', 0)");
	/* and in an old hour, one minute with an old mark and one with a
	 * young mark beside an old one */
	exec_sql(c,
		 "INSERT INTO span_rollup_minute_dirty VALUES "
		 "(date_trunc('hour', now(), 'UTC') - interval '5 hours', 0), "
		 "(date_trunc('hour', now(), 'UTC') - interval '5 hours' + "
		 "interval '1 minute', 0), "
		 "(date_trunc('hour', now(), 'UTC') - interval '5 hours' + "
		 "interval '1 minute', floor(extract(epoch FROM now()) / "
		 "10)::bigint)");
	/* the old hour (its first minute) and the settled recent minute */
	refresh(c, 0, 2, 1);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty WHERE "
			  "period = date_trunc('second', now()) - interval "
			  "'150 seconds'"),
		1);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty WHERE "
			  "period = date_trunc('second', now()) - interval "
			  "'210 seconds'"),
		0);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty WHERE "
			  "period = date_trunc('hour', now(), 'UTC') - "
			  "interval '5 hours'"),
		0);
	/* both marks of the held-back minute stay */
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty WHERE "
			  "period = date_trunc('hour', now(), 'UTC') - "
			  "interval '5 hours' + interval '1 minute'"),
		2);
	pg_release(c);
}

/* Only settled periods: the current hour and one that ended less than
 * ROLLUP_SETTLE_S ago wait; metric points mark nothing. */
static void
test_settle_rule(void **state)
{
	static const double bounds[] = {1};
	static const uint64_t counts[] = {1, 0};
	struct pg_conn *c = conn();
	struct written w = {0};
	uint64_t seed = 3;
	struct otlp_point pt = {.type = OTLP_POINT_HISTOGRAM,
				.name = "latency",
				.time_unix_nano =
					(uint64_t)time(NULL) * 1000000000ull,
				.count = 1,
				.temporality = OTLP_TEMPORALITY_DELTA,
				.n_bounds = 1,
				.bounds = bounds,
				.n_bucket_counts = 2,
				.bucket_counts = counts,
				.service_name = "pay"};
	struct otlp_batch b = {.points = &pt, .n_points = 1};
	struct pg_error perr;
	int64_t inserted = 0;

	(void)state;
	clear_store(c);
	assert_int_equal(store_write_points(c, &b, &inserted, &perr),
			 STATUS_OK);
	assert_int_equal(inserted, 1);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty"),
			 0);
	write_spans(c, &w, hour_ago(0), 4, -1, &seed);
	/* the hourly rule alone here (test_minute_settle_rule has the
	 * minutes' own) */
	exec_sql(c, "TRUNCATE span_rollup_minute_dirty");
	/* periods that need not start on the hour: one ended 30 s past the
	 * settling time, one 30 s before it */
	exec_sql(c, "INSERT INTO span_rollup_dirty VALUES "
		    "(date_trunc('second', now()) - interval '1 hour' - "
		    "interval '150 seconds', 0), "
		    "(date_trunc('second', now()) - interval '1 hour' - "
		    "interval '90 seconds', 0)");
	age_dirty(c);
	refresh(c, 0, 1, 0);
	assert_int_equal(sql_ll(c, "SELECT count(DISTINCT period) FROM "
				   "span_rollup_dirty"),
			 2);
	assert_int_equal(sql_ll(c,
				"SELECT count(*) FROM span_rollup_dirty WHERE "
				"period = date_trunc('hour', now(), 'UTC')"),
			 1);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup WHERE period = "
			  "date_trunc('hour', now(), 'UTC')"),
		0);
	written_free(&w);
	pg_release(c);
}

/* At most max_units per call, oldest first, minute units before hours. */
static void
test_max_periods(void **state)
{
	struct pg_conn *c = conn();
	struct written w[3];
	uint64_t seed = 5;
	char sql[256];

	(void)state;
	memset(w, 0, sizeof(w));
	clear_store(c);
	for (int i = 0; i < 3; i++)
		write_spans(c, &w[i], hour_ago(5 - i), 2, -1, &seed);
	age_dirty(c);
	/* the minutes of the two oldest hours */
	refresh(c, 2, 2, 4);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM span_rollup_minute WHERE "
			 "date_trunc('hour', period, 'UTC') = "
			 "to_timestamp(%lld)",
			 (long long)hour_ago(5 - i));
		assert_int_equal(sql_ll(c, sql) == 0 ? 0 : 1, i < 2);
	}
	/* the minutes of the third, then the two oldest hours */
	refresh(c, 3, 3, 1);
	for (int i = 0; i < 3; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM span_rollup WHERE period = "
			 "to_timestamp(%lld)",
			 (long long)hour_ago(5 - i));
		assert_int_equal(sql_ll(c, sql) == 0 ? 0 : 1, i < 2);
	}
	refresh(c, 1, 1, 0);
	for (int i = 0; i < 3; i++) {
		check_rollup(c, &w[i], hour_ago(5 - i));
		written_free(&w[i]);
	}
	pg_release(c);
}

static void
test_prune_and_arguments(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error perr;
	int done = 5, pending = 5;

	(void)state;
	clear_store(c);
	exec_sql(c, "INSERT INTO span_rollup SELECT "
		    "date_trunc('hour', now(), 'UTC') - d * interval '1 day', "
		    "'pay', 'otlp', 'http', '/', 'GET', 200, 1, '{5}', '{1}' "
		    "FROM unnest(ARRAY[1, 6, 8, 30]) d");
	exec_sql(c,
		 "INSERT INTO span_rollup_dirty SELECT "
		 "date_trunc('hour', now(), 'UTC') - d * interval '1 day', 0 "
		 "FROM unnest(ARRAY[2, 9]) d");
	assert_int_equal(rollup_prune(c, 7, &perr), STATUS_OK);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup WHERE period > "
			  "now() - interval '7 days'"),
		2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty"),
			 1);
	/* the hour that straddles the cutoff stays until wholly past */
	exec_sql(c, "TRUNCATE span_rollup");
	exec_sql(c, "INSERT INTO span_rollup VALUES (now() - interval "
		    "'7 days' - interval '30 minutes', 'pay', 'otlp', 'http', "
		    "'/', 'GET', 200, 1, '{5}', '{1}')");
	assert_int_equal(rollup_prune(c, 7, &perr), STATUS_OK);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 1);
	assert_int_equal(rollup_prune(c, 6, &perr), STATUS_OK);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 0);

	/* minute rows and marks go with the same cutoff: a minute that
	 * ended before it goes, one that straddles it stays */
	exec_sql(c,
		 "INSERT INTO span_rollup_minute SELECT "
		 "date_trunc('minute', now(), 'UTC') - d * interval '1 day', "
		 "'pay', 'otlp', 'http', '/', 'GET', 200, 1, '{5}', '{1}' "
		 "FROM unnest(ARRAY[1, 6, 8, 30]) d");
	exec_sql(c, "INSERT INTO span_rollup_minute VALUES (now() - interval "
		    "'7 days' - interval '30 seconds', 'pay', 'otlp', 'http', "
		    "'/', 'GET', 200, 1, '{5}', '{1}'), (now() - interval "
		    "'7 days' - interval '90 seconds', 'pay', 'otlp', 'http', "
		    "'/', 'GET', 200, 1, '{5}', '{1}')");
	exec_sql(c,
		 "INSERT INTO span_rollup_minute_dirty SELECT "
		 "date_trunc('minute', now(), 'UTC') - d * interval '1 day', "
		 "0 FROM unnest(ARRAY[2, 9]) d");
	assert_int_equal(rollup_prune(c, 7, &perr), STATUS_OK);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_minute "
				   "WHERE period > now() - interval '7 days'"),
			 2);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_minute"),
			 3);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty"), 1);

	/* 5-minute rows the same way: a day old stays, 5 minutes that
	 * straddle the cutoff stay, 5 minutes wholly past it go (requests:
	 * each row's age in s) */
	exec_sql(c, "INSERT INTO span_rollup_5m SELECT now() - d * interval "
		    "'1 second', 'pay', 'otlp', 'http', 0, d, '{5}', "
		    "'{' || d || '}' FROM unnest(ARRAY[86400, 604800 + 240, "
		    "604800 + 360]) d");
	assert_int_equal(rollup_prune(c, 7, &perr), STATUS_OK);
	assert_int_equal(sql_ll(c, "SELECT sum(requests) FROM span_rollup_5m"),
			 86400 + 604800 + 240);

	assert_int_equal(rollup_prune(c, 0, &perr), STATUS_INVALID);
	assert_non_null(strstr(perr.detail, "retention_days"));
	assert_int_equal(rollup_prune(c, 3651, &perr), STATUS_INVALID);
	assert_int_equal(rollup_prune(NULL, 7, &perr), STATUS_INVALID);
	assert_int_equal(rollup_refresh(c, -1, &done, &pending, &perr),
			 STATUS_INVALID);
	assert_int_equal(done, 0);
	assert_int_equal(pending, 0);
	assert_int_equal(rollup_refresh(NULL, 0, &done, NULL, &perr),
			 STATUS_INVALID);
	assert_int_equal(rollup_refresh(c, 0, NULL, NULL, &perr),
			 STATUS_INVALID);
	/* the connection is still usable */
	assert_int_equal(sql_ll(c, "SELECT 1"), 1);
	pg_release(c);
}

/* Two dirty aged hours of spans written on a, and b holding the refresh
 * lock in an open transaction (another refresher at work). */
static void
locked_by_other(struct pg_conn *a, struct pg_conn *b, struct written *w,
		uint64_t seed)
{
	clear_store(a);
	write_spans(a, w, hour_ago(4), 2, -1, &seed);
	age_dirty(a);
	exec_sql(b, "BEGIN");
	exec_sql(b, "SELECT pg_advisory_xact_lock(" LOCK_ROLLUP_REFRESH ")");
}

/* Another refresher (a second gateway) holds the lock: this one stops. */
static void
test_one_refresher(void **state)
{
	struct pg_conn *a = conn(), *b = conn();
	struct written w = {0};

	(void)state;
	locked_by_other(a, b, &w, 9);
	refresh(a, 0, 0, 2);
	exec_sql(b, "COMMIT");
	refresh(a, 0, 2, 0);
	check_rollup(a, &w, hour_ago(4));
	written_free(&w);
	pg_release(b);
	pg_release(a);
}

struct unlocker {
	struct pg_conn *c;
	int after_ms;
};

/* Ends u->c's transaction (and so its lock) after u->after_ms. */
static void *
unlock_later(void *arg)
{
	struct unlocker *u = arg;
	struct timespec ts = {u->after_ms / 1000,
			      (long)(u->after_ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
	exec_sql(u->c, "COMMIT");
	return NULL;
}

/*
 * rollup_refresh_wait (`sextant maintain`) waits for another refresher's
 * lock instead of ending with nothing done: under a short statement
 * timeout it fails naming the timeout; given time, it refreshes every
 * unit once the lock is let go.
 */
static void
test_refresh_waits(void **state)
{
	struct pg_conn *a = conn(), *b = conn();
	struct written w = {0};
	struct unlocker u = {b, 300};
	struct pg_error perr;
	pthread_t t;
	int done = -1, pending = -1;

	(void)state;
	locked_by_other(a, b, &w, 10);
	assert_int_equal(pg_set_timeout(a, 200, &perr), STATUS_OK);
	assert_int_not_equal(rollup_refresh_wait(a, &done, &pending, &perr),
			     STATUS_OK);
	assert_non_null(strstr(perr.detail, "statement timeout"));
	assert_int_equal(done, 0);
	assert_int_equal(sql_ll(a, "SELECT count(*) FROM span_rollup"), 0);
	assert_int_equal(pg_set_timeout(a, 30000, &perr), STATUS_OK);
	assert_int_equal(pthread_create(&t, NULL, unlock_later, &u), 0);
	if (rollup_refresh_wait(a, &done, &pending, &perr) != STATUS_OK)
		fail_msg("rollup_refresh_wait: %s", perr.detail);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(done, 2);
	assert_int_equal(pending, 0);
	check_rollup(a, &w, hour_ago(4));
	written_free(&w);
	pg_release(b);
	pg_release(a);
}

/* rollup_refresh_fenced: *done, *pending. */
static void
refresh_fenced(struct pg_conn *c, int want_done, int want_pending)
{
	struct pg_error perr;
	int done = -1, pending = -1;

	if (rollup_refresh_fenced(c, &done, &pending, &perr) != STATUS_OK)
		fail_msg("rollup_refresh_fenced: %s (%s)", perr.client,
			 perr.detail);
	assert_int_equal(done, want_done);
	assert_int_equal(pending, want_pending);
}

/*
 * A fenced refresh takes marks just written (the janitor's would wait 60
 * s), but not while another transaction is in progress (it might be a
 * writer that found one of them), and never an unsettled minute.
 */
static void
test_fenced_refresh(void **state)
{
	struct pg_conn *a = conn(), *b = conn();
	struct written w = {0}, now_w = {0};
	uint64_t seed = 11;

	(void)state;
	clear_store(a);
	write_spans(a, &w, hour_ago(4), 3, -1, &seed);
	/* and a span now: its minute and hour have not settled */
	write_spans_in(a, &now_w, time(NULL) - 1, 1, 1, 0, &seed);
	/* the marks are young: by age, nothing yet */
	refresh(a, 0, 0, 2);
	/* another transaction holds an id: every unit is left as it was */
	exec_sql(b, "BEGIN");
	exec_sql(b, "SELECT pg_current_xact_id()");
	refresh_fenced(a, 0, 2);
	assert_int_equal(sql_ll(a, "SELECT count(*) FROM span_rollup"), 0);
	assert_int_equal(sql_ll(a, "SELECT count(*) FROM span_rollup_minute"),
			 0);
	exec_sql(b, "COMMIT");
	/* the hour, and the minutes of that hour */
	refresh_fenced(a, 2, 0);
	check_rollup(a, &w, hour_ago(4));
	assert_int_equal(sql_ll(a, "SELECT sum(requests) FROM "
				   "span_rollup_minute"),
			 sql_ll(a, "SELECT sum(requests) FROM span_rollup"));
	/* the span of now keeps its marks */
	assert_int_equal(sql_ll(a, "SELECT count(*) FROM span_rollup_dirty"),
			 1);
	assert_true(sql_ll(a, "SELECT count(*) FROM "
			      "span_rollup_minute_dirty") >= 1);
	written_free(&w);
	written_free(&now_w);
	pg_release(b);
	pg_release(a);
}

/*
 * rollup_analyze takes a partition that changed by more than
 * ROLLUP_ANALYZE_MIN_ROWS and a tenth of its size, and nothing once it is
 * analyzed.
 */
static void
test_analyze_changed(void **state)
{
	struct pg_conn *c = conn();
	struct written w = {0};
	struct pg_error perr;
	uint64_t seed = 13;
	int n = -1;
	size_t per_shape = ROLLUP_ANALYZE_MIN_ROWS / N_SHAPES + 1;
	char part[64];

	(void)state;
	clear_store(c);
	write_spans(c, &w, hour_ago(26), per_shape, -1, &seed);
	/* this backend's counts reach pg_stat_user_tables when it is next
	 * idle, not a second later */
	exec_sql(c, "SELECT pg_stat_force_next_flush()");
	assert_int_equal(rollup_analyze(c, &n, &perr), STATUS_OK);
	assert_true(n >= 1);
	{
		time_t t = (time_t)hour_ago(26);
		struct tm tm;
		char q[256];

		gmtime_r(&t, &tm);
		snprintf(part, sizeof(part), "spans_p%04d%02d%02d",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
		snprintf(q, sizeof(q),
			 "SELECT count(*) FROM pg_stat_user_tables WHERE "
			 "relname = '%s' AND last_analyze IS NOT NULL",
			 part);
		assert_int_equal(sql_ll(c, q), 1);
	}
	exec_sql(c, "SELECT pg_stat_force_next_flush()");
	assert_int_equal(rollup_analyze(c, &n, &perr), STATUS_OK);
	assert_int_equal(n, 0);
	assert_int_equal(rollup_analyze(NULL, &n, &perr), STATUS_INVALID);
	written_free(&w);
	pg_release(c);
}

/*
 * A store that had spans before 0005: applying it marks every hour with
 * spans dirty (long settled), and the first refresh computes them.
 */
static void
test_migration_marks_existing(void **state)
{
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	char info[320], err[512], sql[512];
	PGconn *admin = PQconnectdb(cluster.conninfo), *m;
	struct pg_pool_config pc = {.size = 1, .statement_timeout_ms = 30000};
	struct pg_pool *mp = NULL;
	struct pg_conn *c = NULL;
	struct pg_error perr;
	PGresult *res;
	int applied = 0;

	(void)state;
	res = PQexec(admin, "CREATE DATABASE rollup_migration");
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	PQfinish(admin);
	snprintf(info, sizeof(info),
		 "host=127.0.0.1 port=%d dbname=rollup_migration "
		 "user=postgres sslmode=disable",
		 cluster.port);
	m = PQconnectdb(info);
	assert_int_equal(PQstatus(m), CONNECTION_OK);
	assert_int_equal(migrate_apply(m, &opts, &applied, err, sizeof(err)),
			 STATUS_OK);
	/* back to the store as 0004 left it (and 0012: 0013 builds on
	 * 0005 and 0008, so it is applied again after them) */
	res = PQexec(m, "DROP VIEW span_calls; "
			"DROP TABLE span_rollup, span_rollup_dirty, "
			"span_rollup_minute, span_rollup_minute_dirty; "
			"DROP FUNCTION sextant_duration_bucket(bigint); "
			"DROP FUNCTION sextant_call_outcome(text, integer, "
			"boolean); "
			"DELETE FROM schema_migrations WHERE version IN (5, 8, "
			"13)");
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	/* spans in three past hours (one in the DEFAULT partition, two
	 * days back) and in the current one */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO spans (start_time, duration_ns, kind, trace_id, "
		 "span_id, source, name, service_name, http_method, "
		 "http_route, http_status_code) "
		 "SELECT to_timestamp(h) + i * interval '1 second', 1000 * i, "
		 "2, decode(md5(h || '/' || i), 'hex'), "
		 "substr(decode(md5(i || '/' || h), 'hex'), 1, 8), 'ebpf', "
		 "'GET /', 'pay', 'GET', '/', 200 "
		 "FROM unnest(ARRAY[%lld, %lld, %lld, %lld]) h, "
		 "generate_series(1, 10) i",
		 (long long)hour_ago(48), (long long)hour_ago(3),
		 (long long)hour_ago(2), (long long)hour_ago(0));
	res = PQexec(m, sql);
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	assert_int_equal(migrate_apply(m, &opts, &applied, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(applied, 3);
	res = PQexec(m, "SELECT count(*), count(DISTINCT period), max(slot) "
			"FROM span_rollup_dirty");
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	assert_string_equal(PQgetvalue(res, 0, 0), "4");
	assert_string_equal(PQgetvalue(res, 0, 1), "4");
	assert_string_equal(PQgetvalue(res, 0, 2), "0");
	PQclear(res);
	/* 0008: the minute of each hour's ten spans */
	res = PQexec(m, "SELECT count(*), count(DISTINCT period), max(slot) "
			"FROM span_rollup_minute_dirty");
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	assert_string_equal(PQgetvalue(res, 0, 0), "4");
	assert_string_equal(PQgetvalue(res, 0, 1), "4");
	assert_string_equal(PQgetvalue(res, 0, 2), "0");
	PQclear(res);
	PQfinish(m);

	pc.conninfo = info;
	assert_int_equal(pg_pool_new(&pc, &mp, &perr), STATUS_OK);
	assert_int_equal(pg_pool_wait_ready(mp, 10000, &perr), STATUS_OK);
	assert_int_equal(pg_acquire(mp, NULL, 5000, &c, &perr), STATUS_OK);
	/* no write since: the three settled hours at once, the current one
	 * stays dirty; the minutes of the three, and the current hour's first
	 * minute once it has settled (3 minutes into the hour) */
	{
		long long cur = sql_ll(
			c, "SELECT count(*) FROM span_rollup_minute_dirty "
			   "WHERE period >= date_trunc('hour', now(), 'UTC') "
			   "AND period < now() - interval '180 seconds'");

		refresh(c, 0, 6 + (int)cur, 0);
		assert_int_equal(
			sql_ll(c, "SELECT count(*) FROM span_rollup_minute"),
			3 + cur);
		assert_int_equal(sql_ll(c, "SELECT sum(requests) FROM "
					   "span_rollup_minute"),
				 30 + 10 * cur);
	}
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup"), 3);
	assert_int_equal(sql_ll(c, "SELECT sum(requests) FROM span_rollup"),
			 30);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_dirty"),
			 1);
	pg_release(c);
	pg_pool_free(mp);
}

/* ---- 5-minute rollups: a property over random writes and refreshes ---- */

/*
 * Rounds of random batches (random shapes, counts and minutes over two past
 * hours, some rounds in a few minutes only, as late spans), each followed at
 * random by a refresh with its marks aged (all units, or a few) or not
 * aged (young: held back): after every refresh span_rollup_5m is the merge
 * of its minute rows, and every 5 minutes without a dirty minute equals its
 * raw calls (check_five).  Then 0015 applied again to the same store fills
 * the table with the same rows the refreshes left.
 */
static void
test_five_property(void **state)
{
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_conn *c = conn();
	struct written w = {0};
	uint64_t seed = 0x5eed0015;
	int64_t p = hour_ago(3);
	long long rows = 0;
	char err[512];
	PGconn *m;
	int applied = 0;

	(void)state;
	print_message("5-minute property: seed %#llx\n",
		      (unsigned long long)seed);
	clear_store(c);
	for (int round = 0; round < 12; round++) {
		uint64_t how = rnd(&seed) % 4;
		int64_t at = p + (int64_t)(rnd(&seed) % 110) * 60;
		int64_t width = rnd(&seed) % 2 ? 7200 : 60 + rnd(&seed) % 600;
		struct pg_error perr;
		int done = 0, pending = 0;

		if (width == 7200)
			at = p;
		write_spans_in(c, &w, at, width, 1 + rnd(&seed) % 6,
			       rnd(&seed) % 3 ? -1
					      : (int)(rnd(&seed) % N_SHAPES),
			       &seed);
		if (how == 0)
			continue; /* another batch before any refresh */
		if (how != 1)
			age_dirty(c);
		if (rollup_refresh(c, how == 2 ? 1 + (int)(rnd(&seed) % 2) : 0,
				   &done, &pending, &perr) != STATUS_OK)
			fail_msg("rollup_refresh: %s", perr.detail);
		rows = check_five(c);
	}
	age_dirty(c);
	{
		struct pg_error perr;
		int done = 0, pending = -1;

		if (rollup_refresh(c, 0, &done, &pending, &perr) != STATUS_OK)
			fail_msg("rollup_refresh: %s", perr.detail);
		assert_int_equal(pending, 0);
	}
	rows = check_five(c);
	assert_true(rows > 24 * 3); /* 24 periods, each of several groups */
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM span_rollup_minute_dirty"), 0);

	/* 0015 again: the same rows from the minute rows as they are */
	exec_sql(c, "CREATE TEMP TABLE five_before AS SELECT * FROM "
		    "span_rollup_5m");
	exec_sql(c, "DROP TABLE span_rollup_5m");
	exec_sql(c, "DELETE FROM schema_migrations WHERE version = 15");
	m = PQconnectdb(cluster.conninfo);
	assert_int_equal(PQstatus(m), CONNECTION_OK);
	if (migrate_apply(m, &opts, &applied, err, sizeof(err)) != STATUS_OK)
		fail_msg("migrate: %s", err);
	PQfinish(m);
	assert_int_equal(applied, 1);
	assert_int_equal(sql_ll(c, "SELECT count(*) FROM span_rollup_5m"),
			 rows);
	assert_int_equal(
		sql_ll(c, "SELECT count(*) FROM ((SELECT * FROM five_before "
			  "EXCEPT ALL SELECT * FROM span_rollup_5m) UNION ALL "
			  "(SELECT * FROM span_rollup_5m EXCEPT ALL SELECT * "
			  "FROM five_before)) x"),
		0);
	exec_sql(c, "DROP TABLE five_before");
	written_free(&w);
	pg_release(c);
}

/* ---- outcomes: a property over random spans ----------------------------- */

/*
 * The OpenTelemetry rule for a failed span, written out again in C, as
 * the oracle sextant_span_outcome (0012) and sextant_call_outcome (0013)
 * are checked against: 0 ok, 1 error, 2 client error.
 */
static int
oracle_outcome(int kind, int status_code, int http, int grpc)
{
	static const int server_errors[] = {2, 4, 12, 13, 14, 15};

	if (status_code == 2)
		return 1;
	if (grpc > 0) {
		if (kind != 2)
			return 1;
		for (size_t i = 0; i < ARRAY_LEN(server_errors); i++)
			if (grpc == server_errors[i])
				return 1;
		return 2;
	}
	if (grpc == 0)
		return 0;
	if (http >= 500)
		return 1;
	if (http >= 400)
		return kind == 2 ? 2 : 1;
	return 0;
}

/*
 * 3,000 spans of random kinds, protocols, statuses and codes in one past
 * hour, rolled up: per (service, protocol, outcome) the rollup rows judged
 * by sextant_call_outcome, the raw calls of span_calls and the C oracle
 * agree, and every span's outcome (calls or not) is the oracle's.
 */
static void
test_outcome_property(void **state)
{
	static const char *const services[] = {"p-a", "p-b", "p-c"};
	static const int https[] = {-1,	 200, 201, 302, 400, 401,
				    404, 429, 499, 500, 502, 503};
	const size_t n = 3000;
	struct pg_conn *c = conn();
	uint64_t seed = 0x5eed0018;
	int64_t p = hour_ago(5);
	struct otlp_span *s = calloc(n, sizeof(*s));
	/* [service][protocol][outcome] by the oracle; protocol 3: no call */
	int64_t want[3][4][3] = {{{0}}};
	struct otlp_batch b = {.spans = s, .n_spans = n};
	struct pg_error perr;
	int64_t inserted = 0;
	PGresult *res = NULL;

	(void)state;
	print_message("outcome property: seed %#llx\n",
		      (unsigned long long)seed);
	assert_non_null(s);
	clear_store(c);
	for (size_t i = 0; i < n; i++) {
		struct otlp_span *x = &s[i];
		uint32_t id = (uint32_t)i + 1;
		int svc = (int)(rnd(&seed) % 3), shape = (int)(rnd(&seed) % 6);
		int proto = 3;

		x->trace_id[0] = 0x77;
		memcpy(x->trace_id + 4, &id, sizeof(id));
		memcpy(x->span_id, &id, sizeof(id));
		x->service_name = services[svc];
		x->source =
			rnd(&seed) % 2 ? OTLP_SOURCE_OTLP : OTLP_SOURCE_EBPF;
		x->name = "op";
		x->status_code =
			(int)(rnd(&seed) % 8 == 0 ? 2 : rnd(&seed) % 2);
		x->start_unix_nano = (uint64_t)p * 1000000000ull +
				     rnd(&seed) % 3599000000000ull;
		x->end_unix_nano = x->start_unix_nano + 1000000;
		x->http_status = x->grpc_status = -1;
		x->input_tokens = x->output_tokens = -1;
		switch (shape) {
		case 0: /* HTTP server */
		case 1: /* HTTP client */
			x->kind = shape == 0 ? 2 : 3;
			x->http_method = "GET";
			x->http_route = "/r";
			x->http_status = https[rnd(&seed) % ARRAY_LEN(https)];
			proto = shape == 0 ? SPANQUERY_HTTP : 3;
			break;
		case 2: /* gRPC server */
		case 3: /* gRPC client */
			x->kind = shape == 2 ? 2 : 3;
			x->rpc_system = "grpc";
			x->rpc_service = "p.S";
			x->rpc_method = "M";
			x->grpc_status = (int)(rnd(&seed) % 18) - 1;
			proto = shape == 2 ? SPANQUERY_GRPC : 3;
			break;
		case 4: /* database client */
			x->kind = 3;
			x->db_system = "postgresql";
			x->db_operation = "SELECT";
			proto = SPANQUERY_SQL;
			break;
		default: /* internal */ x->kind = 1; break;
		}
		want[svc][proto]
		    [oracle_outcome(x->kind, x->status_code, x->http_status,
				    x->grpc_status)]++;
	}
	if (store_write_spans(c, &b, &inserted, &perr) != STATUS_OK)
		fail_msg("store_write_spans: %s", perr.detail);
	assert_int_equal(inserted, (int64_t)n);
	free(s);
	age_dirty(c);
	refresh(c, 0, 2, 0);
	for (int part = 0; part < 2; part++) {
		if (pg_query(
			    c,
			    part == 0
				    ? "SELECT service_name, protocol, "
				      "sextant_call_outcome(protocol, status, "
				      "span_error), sum(requests) FROM "
				      "span_rollup GROUP BY 1, 2, 3"
				    : "SELECT service_name, coalesce(protocol, "
				      "'none'), outcome, count(*) FROM "
				      "span_calls GROUP BY 1, 2, 3",
			    0, NULL, &res, &perr) != STATUS_OK)
			fail_msg("%s", perr.detail);
		int64_t got[3][4][3] = {{{0}}};

		for (int i = 0; i < PQntuples(res); i++) {
			int svc = PQgetvalue(res, i, 0)[2] - 'a';
			int proto =
				spanquery_protocol_parse(PQgetvalue(res, i, 1));

			got[svc][proto < 0 ? 3 : proto]
			   [num(PQgetvalue(res, i, 2))] +=
				num(PQgetvalue(res, i, 3));
		}
		PQclear(res);
		for (int v = 0; v < 3; v++)
			for (int q = 0; q < (part == 0 ? 3 : 4); q++)
				for (int o = 0; o < 3; o++)
					if (got[v][q][o] != want[v][q][o])
						fail_msg(
							"%s: %s protocol %d "
							"outcome %d: %lld, "
							"oracle %lld",
							part == 0 ? "rollup"
								  : "raw",
							services[v], q, o,
							(long long)got[v][q][o],
							(long long)
								want[v][q][o]);
	}
	/* every outcome occurs: the property is not vacuous */
	for (int o = 0; o < 3; o++)
		assert_true(want[0][SPANQUERY_HTTP][o] > 0 &&
			    want[0][SPANQUERY_GRPC][o] > 0);
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_bucket_math),
		cmocka_unit_test(test_hist_add),
		cmocka_unit_test(test_quantile_random),
		cmocka_unit_test(test_hist_text),
		cmocka_unit_test(test_minute_floor),
		cmocka_unit_test(test_split_range),
		cmocka_unit_test(test_split_extreme_clocks),
		cmocka_unit_test(test_split_random),
	};
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_sql_bucket_agrees),
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_refresh_and_late_spans),
		cmocka_unit_test(test_settle_rule),
		cmocka_unit_test(test_minute_refresh),
		cmocka_unit_test(test_minute_settle_rule),
		cmocka_unit_test(test_five_property),
		cmocka_unit_test(test_max_periods),
		cmocka_unit_test(test_prune_and_arguments),
		cmocka_unit_test(test_one_refresher),
		cmocka_unit_test(test_refresh_waits),
		cmocka_unit_test(test_fenced_refresh),
		cmocka_unit_test(test_analyze_changed),
		cmocka_unit_test(test_migration_marks_existing),
		cmocka_unit_test(test_outcome_property),
	};
	int failed = cmocka_run_group_tests_name("rollup", pure, NULL, NULL);

	failed += cmocka_run_group_tests_name("rollup_db", db, group_setup,
					      group_teardown);
	return failed;
}

/*
 * test_promql.c - unit tests for lib/prom/promql: name grammar, string escaping
 * (every metacharacter, control bytes, UTF-8, invalid UTF-8), the query
 * shapes (plain, rate, aggregation, histogram quantile), every refusal with
 * the argument it names, durations, points, default steps and rate windows,
 * and histogram_quantile over classic buckets (Prometheus's bucketQuantile).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "prom/promql.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SEC	     INT64_C(1000)
#define MIN	     (60 * SEC)
#define HOUR	     (60 * MIN)
#define DAY	     (24 * HOUR)

static void
test_names(void **state)
{
	static const struct {
		const char *s;
		bool metric, label;
	} cases[] = {
		{"up", true, true},
		{"http_requests_total", true, true},
		{"job:rate5m", true, false}, /* recording rules use ':' */
		{"_x", true, true},
		{"__name__", true, false}, /* reserved label */
		{"a1", true, true},
		{"1a", false, false},
		{"", false, false},
		{"a-b", false, false},
		{"a b", false, false},
		{"up{job=\"x\"}", false, false},
		{"up)", false, false},
		{"a.b", false, false},
		{"m\xc3\xa9tric", false, false},
		{"x\n", false, false},
	};
	char longname[PROMQL_MAX_NAME + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		if (promql_metric_name_ok(cases[i].s) != cases[i].metric)
			fail_msg("metric \"%s\": want %d", cases[i].s,
				 cases[i].metric);
		if (promql_label_name_ok(cases[i].s) != cases[i].label)
			fail_msg("label \"%s\": want %d", cases[i].s,
				 cases[i].label);
	}
	memset(longname, 'a', sizeof(longname));
	longname[PROMQL_MAX_NAME] = '\0';
	assert_true(promql_metric_name_ok(longname));
	longname[PROMQL_MAX_NAME] = 'a';
	longname[PROMQL_MAX_NAME + 1] = '\0';
	assert_false(promql_metric_name_ok(longname));
	assert_false(promql_metric_name_ok(NULL));
}

static void
test_quote(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"", "\"\""},
		{"plain", "\"plain\""},
		{"a\"b", "\"a\\\"b\""},
		{"back\\slash", "\"back\\\\slash\""},
		{"\\\"", "\"\\\\\\\"\""}, /* an escaped quote stays escaped */
		{"nl\nret\rtab\t", "\"nl\\nret\\rtab\\t\""},
		{"\x01\x1f\x7f", "\"\\x01\\x1f\\x7f\""},
		{"}{,=~!", "\"}{,=~!\""}, /* inside quotes they are text */
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		 "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
		{"'single'", "\"'single'\""},
		{"`tick`", "\"`tick`\""},
	};
	static const char *const bad[] = {
		"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "ok\x80",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct buf b;

		buf_init(&b, 1024);
		assert_int_equal(promql_quote(&b, cases[i].in), STATUS_OK);
		if (strcmp(b.data, cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, b.data,
				 cases[i].want);
		buf_free(&b);
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		struct buf b;

		buf_init(&b, 1024);
		assert_int_equal(buf_puts(&b, "x="), STATUS_OK);
		assert_int_equal(promql_quote(&b, bad[i]), STATUS_INVALID);
		/* nothing half-written */
		assert_string_equal(b.data, "x=");
		buf_free(&b);
	}
	{
		struct buf b;

		buf_init(&b, 6);
		assert_int_equal(promql_quote(&b, "toolong"), STATUS_LIMIT);
		assert_int_equal(b.len, 0);
		/* nothing left pending: the caller has the status */
		assert_int_equal(buf_error(&b), STATUS_OK);
		assert_int_equal(promql_quote(&b, "ok"), STATUS_OK);
		assert_string_equal(b.data, "\"ok\"");
		/* an error already pending is returned and kept */
		assert_int_equal(buf_puts(&b, "more"), STATUS_LIMIT);
		assert_int_equal(promql_quote(&b, "\xff"), STATUS_LIMIT);
		assert_int_equal(buf_error(&b), STATUS_LIMIT);
		buf_free(&b);
	}
}

static void
test_agg(void **state)
{
	enum promql_agg a;

	(void)state;
	assert_int_equal(promql_agg_parse("avg", &a), STATUS_OK);
	assert_int_equal(a, PROMQL_AGG_AVG);
	assert_int_equal(promql_agg_parse("sum", &a), STATUS_OK);
	assert_int_equal(a, PROMQL_AGG_SUM);
	assert_int_equal(promql_agg_parse("max", &a), STATUS_OK);
	assert_int_equal(promql_agg_parse("min", &a), STATUS_OK);
	assert_string_equal(promql_agg_name(a), "min");
	assert_int_equal(promql_agg_parse("AVG", &a), STATUS_INVALID);
	assert_int_equal(a, PROMQL_AGG_NONE);
	assert_int_equal(promql_agg_parse("median", &a), STATUS_INVALID);
	assert_int_equal(promql_agg_parse(NULL, &a), STATUS_INVALID);
	assert_string_equal(promql_agg_name(PROMQL_AGG_NONE), "");
}

static const struct promql_filter two[] = {{"job", "api"},
					   {"instance", "a:9100"}};
static const struct promql_filter evil[] = {
	{"path", "/x\"} or vector(1) or up{a=\""},
};

static const struct {
	struct promql_spec spec;
	const char *want;
} build_cases[] = {
	{{.metric = "up"}, "up"},
	{{.metric = "up", .filters = two, .nfilters = 2},
	 "up{instance=\"a:9100\",job=\"api\"}"},
	{{.metric = "http_requests_total", .rate = true, .window_ms = MIN},
	 "rate(http_requests_total[1m])"},
	{{.metric = "http_requests_total",
	  .rate = true,
	  .window_ms = 75 * SEC,
	  .agg = PROMQL_AGG_SUM,
	  .filters = two,
	  .nfilters = 1},
	 "sum(rate(http_requests_total{job=\"api\"}[1m15s]))"},
	{{.metric = "node_load1", .agg = PROMQL_AGG_MAX}, "max(node_load1)"},
	{{.metric = "lat_seconds", .quantile = 0.95, .window_ms = 5 * MIN},
	 "histogram_quantile(0.95, sum by (le) "
	 "(rate(lat_seconds_bucket[5m])))"},
	{{.metric = "lat_seconds_bucket",
	  .quantile = 0.5,
	  .window_ms = MIN,
	  .filters = two,
	  .nfilters = 1},
	 "histogram_quantile(0.5, sum by (le) "
	 "(rate(lat_seconds_bucket{job=\"api\"}[1m])))"},
	{{.metric = "lat_seconds",
	  .quantile = 0.99,
	  .rate = true,
	  .window_ms = MIN},
	 "histogram_quantile(0.99, sum by (le) "
	 "(rate(lat_seconds_bucket[1m])))"},
	/* a value with PromQL in it stays one string */
	{{.metric = "reqs", .filters = evil, .nfilters = 1},
	 "reqs{path=\"/x\\\"} or vector(1) or up{a=\\\"\"}"},
};

static void
test_build(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(build_cases); i++) {
		struct buf b;
		char err[256];

		buf_init(&b, 4096);
		if (promql_build(&build_cases[i].spec, &b, err, sizeof(err)) !=
		    STATUS_OK)
			fail_msg("case %zu: %s", i, err);
		if (strcmp(b.data, build_cases[i].want) != 0)
			fail_msg("case %zu: got %s\nwant %s", i, b.data,
				 build_cases[i].want);
		assert_string_equal(err, "");
		buf_free(&b);
	}
}

static const struct promql_filter dup[] = {{"job", "a"}, {"job", "b"}};
static const struct promql_filter badlabel[] = {{"a-b", "x"}};
static const struct promql_filter reserved[] = {{"__name__", "x"}};
static const struct promql_filter badutf8[] = {{"job", "\xff"}};
static struct promql_filter many[PROMQL_MAX_FILTERS + 1];
static char longvalue[PROMQL_MAX_VALUE + 2];
static struct promql_filter toolong[] = {{"job", longvalue}};

static void
test_build_refused(void **state)
{
	const struct {
		struct promql_spec spec;
		const char *needle; /* the message names what is wrong */
	} cases[] = {
		{{.metric = "up{x=\"1\"}"}, "metric_name \"up{x=\\\"1\\\"}\""},
		{{.metric = "1up"}, "not a valid Prometheus metric name"},
		{{.metric = ""}, "metric_name \"\""},
		{{.metric = NULL}, "metric_name"},
		{{.metric = "up", .filters = dup, .nfilters = 2},
		 "label \"job\" twice"},
		{{.metric = "up", .filters = badlabel, .nfilters = 1},
		 "\"a-b\" is not a valid label name"},
		{{.metric = "up", .filters = reserved, .nfilters = 1},
		 "\"__name__\" is not a valid label name"},
		{{.metric = "up", .filters = badutf8, .nfilters = 1},
		 "not valid UTF-8"},
		{{.metric = "up", .filters = many, .nfilters = ARRAY_LEN(many)},
		 "at most 10"},
		{{.metric = "up", .filters = toolong, .nfilters = 1},
		 "longer than 256 bytes"},
		{{.metric = "x", .quantile = 1.5, .window_ms = MIN},
		 "percentile must be between 0 and 1"},
		{{.metric = "x",
		  .quantile = 0.5,
		  .agg = PROMQL_AGG_AVG,
		  .window_ms = MIN},
		 "aggregation \"avg\" cannot be combined with percentile"},
		{{.metric = "x", .rate = true, .window_ms = 10}, "at least 1s"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(many); i++) {
		static char names[ARRAY_LEN(many)][8];

		snprintf(names[i], sizeof(names[i]), "l%zu", i);
		many[i] = (struct promql_filter){names[i], "v"};
	}
	memset(longvalue, 'v', PROMQL_MAX_VALUE + 1);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct buf b;
		char err[512];

		buf_init(&b, 4096);
		assert_int_equal(buf_puts(&b, "keep"), STATUS_OK);
		if (promql_build(&cases[i].spec, &b, err, sizeof(err)) !=
		    STATUS_INVALID)
			fail_msg("case %zu accepted: %s", i, b.data);
		if (strstr(err, cases[i].needle) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
				 cases[i].needle);
		assert_string_equal(b.data, "keep");
		buf_free(&b);
	}
}

static void
test_build_limit(void **state)
{
	struct promql_spec s = {.metric = "a_rather_long_metric_name"};
	struct buf b;
	char err[64];

	(void)state;
	buf_init(&b, 10);
	assert_int_equal(promql_build(&s, &b, err, sizeof(err)), STATUS_LIMIT);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_error(&b), STATUS_OK);
	buf_free(&b);
}

static void
test_histogram_base(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(
		promql_histogram_base("lat_seconds_bucket", buf, sizeof(buf)),
		"lat_seconds");
	assert_string_equal(
		promql_histogram_base("lat_seconds", buf, sizeof(buf)),
		"lat_seconds");
	assert_string_equal(promql_histogram_base("_bucket", buf, sizeof(buf)),
			    "_bucket");
}

static void
test_durations(void **state)
{
	static const struct {
		const char *s;
		int64_t ms; /* -1: refused */
	} cases[] = {
		{"15s", 15 * SEC},
		{"1m", MIN},
		{"1m30s", 90 * SEC},
		{"500ms", 500},
		{"1h", HOUR},
		{"2d", 2 * DAY},
		{"1w", 7 * DAY},
		{"1y", 365 * DAY},
		{"15", 15 * SEC},
		{"1h0m", HOUR},
		{"", -1},
		{"0s", -1},
		{"0", -1},
		{"-1s", -1},
		{"1.5m", -1},
		{"1x", -1},
		{"m", -1},
		{"1m30", -1},
		{" 1m", -1},
		{"2y", -1}, /* over 400 days */
		{"99999999999999999999s", -1},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		int64_t ms = 1;
		int rc = promql_duration_parse(cases[i].s, &ms);

		if (cases[i].ms < 0) {
			if (rc != STATUS_INVALID || ms != 0)
				fail_msg("\"%s\" accepted as %lld", cases[i].s,
					 (long long)ms);
		} else if (rc != STATUS_OK || ms != cases[i].ms) {
			fail_msg("\"%s\": got %lld, want %lld", cases[i].s,
				 (long long)ms, (long long)cases[i].ms);
		}
	}
	assert_int_equal(promql_duration_parse(NULL, &(int64_t){0}),
			 STATUS_INVALID);
}

static void
test_format(void **state)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{0, "0s"},	     {-5, "0s"},
		{250, "250ms"},	     {SEC, "1s"},
		{75 * SEC, "1m15s"}, {HOUR + 30 * MIN, "1h30m"},
		{DAY + 1, "1d1ms"},  {6 * HOUR, "6h"},
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n =
			promql_duration_format(cases[i].ms, buf, sizeof(buf));

		assert_string_equal(buf, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
	/* like snprintf: cut, NUL-terminated, full length returned */
	assert_int_equal(promql_duration_format(HOUR + 30 * MIN, buf, 3), 5);
	assert_string_equal(buf, "1h");
}

static void
test_steps(void **state)
{
	static const struct {
		int64_t range, want;
	} steps[] = {
		{0, SEC},
		{5 * MIN, SEC},
		{HOUR, 10 * SEC},
		{6 * HOUR, MIN},
		{24 * HOUR, 5 * MIN},
		{7 * DAY, 30 * MIN},
		{30 * DAY, 2 * HOUR},
		{90 * DAY, 6 * HOUR},
		{400 * DAY, DAY},
		{10000 * DAY, 7 * DAY},
	};

	(void)state;
	assert_int_equal(promql_points(0, SEC), 1);
	assert_int_equal(promql_points(HOUR, 10 * SEC), 361);
	assert_int_equal(promql_points(10000 * SEC, SEC), 10001);
	assert_int_equal(promql_points(9999 * SEC, SEC), 10000);
	assert_int_equal(promql_points(HOUR, 0), 0);
	assert_int_equal(promql_points(-1, SEC), 0);
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		int64_t s = promql_default_step_ms(steps[i].range);

		if (s != steps[i].want)
			fail_msg("range %lld: step %lld, want %lld",
				 (long long)steps[i].range, (long long)s,
				 (long long)steps[i].want);
		if (steps[i].range <= 90 * DAY)
			assert_true(promql_points(steps[i].range, s) <=
				    PROMQL_TARGET_POINTS);
	}
	assert_int_equal(promql_rate_window_ms(SEC), MIN);
	assert_int_equal(promql_rate_window_ms(45 * SEC), MIN);
	assert_int_equal(promql_rate_window_ms(5 * MIN), 5 * MIN + 15 * SEC);
}

/* ---- histogram_quantile ------------------------------------------------- */

#define INF INFINITY

/* The histogram most cases use: 100 observations. */
#define HIST_A                                                                 \
	{{0.05, 20}, {0.1, 50}, {0.25, 80}, {0.5, 95}, {1, 99}, {INF, 100}}, 6

static const struct {
	double q;
	struct promql_bucket b[8];
	size_t n;
	double want; /* NaN: NaN wanted */
} quantile_cases[] = {
	/* rank 50 reaches 0.1:50; bucket (0.05, 0.1] holds 50-20 = 30:
	 * 0.05 + 0.05 * (50-20)/30 = 0.1 */
	{0.5, HIST_A, 0.1},
	/* rank 10 in the first bucket, from 0: 0.05 * 10/20 */
	{0.1, HIST_A, 0.025},
	/* rank 20 = the first bucket's count: its bound */
	{0.2, HIST_A, 0.05},
	/* rank 25: 0.05 + 0.05 * (25-20)/30 */
	{0.25, HIST_A, 0.05 + 0.05 * 5 / 30},
	/* rank 75 in (0.1, 0.25] (50..80): 0.1 + 0.15 * 25/30 = 0.225 */
	{0.75, HIST_A, 0.225},
	/* rank 90 in (0.25, 0.5] (80..95): 0.25 + 0.25 * 10/15 */
	{0.9, HIST_A, 0.25 + 0.25 * 10 / 15},
	/* rank 95 = 0.5's count: 0.5 */
	{0.95, HIST_A, 0.5},
	/* rank 99 = 1's count: 1 */
	{0.99, HIST_A, 1},
	/* rank 99.5 and 100 are past every finite bucket: +Inf holds
	 * them, the second-highest bound (1) is returned */
	{0.995, HIST_A, 1},
	{1, HIST_A, 1},
	/* rank 0 in the first bucket: 0 + 0.05 * 0/20 */
	{0, HIST_A, 0},
	/* the same buckets in another order: sorted first */
	{0.5,
	 {{1, 99}, {INF, 100}, {0.1, 50}, {0.5, 95}, {0.05, 20}, {0.25, 80}},
	 6,
	 0.1},
	{0.9,
	 {{INF, 100}, {0.5, 95}, {0.25, 80}, {0.1, 50}, {1, 99}, {0.05, 20}},
	 6,
	 0.25 + 0.25 * 10 / 15},
	/* two series per bound (coalesced): 0.1:30, 1:80, +Inf:100.
	 * q 0.5: rank 50 in (0.1, 1] (30..80): 0.1 + 0.9 * 20/50 = 0.46 */
	{0.5,
	 {{0.1, 10}, {1, 30}, {INF, 40}, {0.1, 20}, {1, 50}, {INF, 60}},
	 6,
	 0.46},
	/* q 0.2: rank 20 in the first bucket: 0.1 * 20/30 */
	{0.2,
	 {{0.1, 10}, {1, 30}, {INF, 40}, {0.1, 20}, {1, 50}, {INF, 60}},
	 6,
	 0.1 * 20 / 30},
	/* a bucket below its predecessor is raised to it: 0.1:10, 0.2:10,
	 * 0.4:20, +Inf:20.  q 0.75: rank 15 in (0.2, 0.4] (10..20):
	 * 0.2 + 0.2 * 5/10 = 0.3 (0.2 + 0.2 * 7/12 without the fix) */
	{0.75, {{0.1, 10}, {0.2, 8}, {0.4, 20}, {INF, 20}}, 4, 0.3},
	/* q 0.5: rank 10 = 0.1's count: 0.1 */
	{0.5, {{0.1, 10}, {0.2, 8}, {0.4, 20}, {INF, 20}}, 4, 0.1},
	/* +Inf below the last finite bucket: raised to 10, the total.
	 * q 0.75: rank 7.5 in (0.1, 1] (5..10): 0.1 + 0.9 * 2.5/5 = 0.55
	 * (0.28 with a total of 8) */
	{0.75, {{0.1, 5}, {1, 10}, {INF, 8}}, 3, 0.55},
	/* rank in +Inf: the second-highest bound.  1:5 2:8 +Inf:10,
	 * q 0.9: rank 9 > 8 */
	{0.9, {{1, 5}, {2, 8}, {INF, 10}}, 3, 2},
	/* q 0.8: rank 8 = 2's count: 1 + 1 * 3/3 */
	{0.8, {{1, 5}, {2, 8}, {INF, 10}}, 3, 2},
	/* only +Inf has observations: every rank is in it */
	{0.5, {{0.5, 0}, {INF, 7}}, 2, 0.5},
	/* the first bound is 0: no interpolation below it.  0:4 1:8
	 * +Inf:10, q 0.3: rank 3 in the first bucket: 0 */
	{0.3, {{0, 4}, {1, 8}, {INF, 10}}, 3, 0},
	/* q 0.5: rank 5 in (0, 1] (4..8): 0 + 1 * 1/4 */
	{0.5, {{0, 4}, {1, 8}, {INF, 10}}, 3, 0.25},
	/* negative bounds: -1:2 0:4 1:8 +Inf:10.  q 0.1: rank 1 in the
	 * first bucket: its bound, -1 */
	{0.1, {{-1, 2}, {0, 4}, {1, 8}, {INF, 10}}, 4, -1},
	/* q 0.3: rank 3 in (-1, 0] (2..4): -1 + 1 * 1/2 */
	{0.3, {{-1, 2}, {0, 4}, {1, 8}, {INF, 10}}, 4, -0.5},
	/* q 0.6: rank 6 in (0, 1] (4..8): 0 + 1 * 2/4 */
	{0.6, {{-1, 2}, {0, 4}, {1, 8}, {INF, 10}}, 4, 0.5},
	/* the documented divergence: rank 0 in a first bucket holding no
	 * observation (count width 0) gives the bucket's start, 0, where
	 * Prometheus computes 0 + 1 * 0/0 = NaN */
	{0, {{1, 0}, {2, 5}, {INF, 10}}, 3, 0},
	/* ... but a first bound <= 0 is returned as is, as Prometheus */
	{0, {{0, 0}, {1, 4}, {INF, 4}}, 3, 0},
	/* no +Inf bucket */
	{0.5, {{0.1, 5}, {1, 10}}, 2, NAN},
	/* fewer than two buckets, also after coalescing */
	{0.5, {{INF, 10}}, 1, NAN},
	{0.5, {{INF, 5}, {INF, 5}}, 2, NAN},
	/* no observation */
	{0.5, {{0.1, 0}, {INF, 0}}, 2, NAN},
	/* q outside [0, 1] or NaN (Prometheus: -Inf / +Inf / NaN; this
	 * function documents NaN for all three) */
	{-0.1, HIST_A, NAN},
	{1.1, HIST_A, NAN},
	{NAN, HIST_A, NAN},
	/* (NaN even where the rank would not matter: a first bound <= 0) */
	{NAN, {{0, 4}, {1, 8}, {INF, 10}}, 3, NAN},
	/* a NaN bound */
	{0.5, {{NAN, 3}, {0.1, 5}, {INF, 10}}, 3, NAN},
	{0.5, {{0.1, 5}, {INF, 10}, {NAN, 10}}, 3, NAN},
	/* (NaN even where the rank is found below the NaN bound) */
	{0.25, {{0.1, 5}, {NAN, 7}, {1, 10}, {INF, 10}}, 4, NAN},
};

static bool
close_to(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	return fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
}

static void
test_histogram_quantile(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(quantile_cases); i++) {
		struct promql_bucket b[8];
		double got;

		memcpy(b, quantile_cases[i].b, sizeof(b));
		got = promql_histogram_quantile(quantile_cases[i].q, b,
						quantile_cases[i].n);
		if (!close_to(got, quantile_cases[i].want))
			fail_msg("case %zu (q %g): got %.17g, want %.17g", i,
				 quantile_cases[i].q, got,
				 quantile_cases[i].want);
	}
	assert_true(isnan(promql_histogram_quantile(0.5, NULL, 0)));
}

static void
test_histogram_quantile_in_place(void **state)
{
	struct promql_bucket b[] = {{INF, 100}, {0.5, 95},  {0.05, 20},
				    {1, 99},	{0.25, 80}, {0.1, 50}};
	static const double les[] = {0.05, 0.1, 0.25, 0.5, 1, INF};
	double prev = 0;

	(void)state;
	assert_true(close_to(promql_histogram_quantile(0.75, b, ARRAY_LEN(b)),
			     0.225));
	/* sorted in place, counts kept (no duplicates, already monotonic) */
	for (size_t i = 0; i < ARRAY_LEN(b); i++)
		assert_true(b[i].le == les[i]);
	assert_true(b[0].count == 20 && b[5].count == 100);
	/* every q of [0, 1] lands within [0, the highest finite bound],
	 * never decreasing as q grows */
	for (int k = 0; k <= 100; k++) {
		double v =
			promql_histogram_quantile(k / 100.0, b, ARRAY_LEN(b));

		if (!(v >= prev && v <= 1))
			fail_msg("q %d%%: %g after %g", k, v, prev);
		prev = v;
	}
	assert_true(prev == 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_agg),
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_build_refused),
		cmocka_unit_test(test_build_limit),
		cmocka_unit_test(test_histogram_base),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_histogram_quantile),
		cmocka_unit_test(test_histogram_quantile_in_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

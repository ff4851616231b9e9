/*
 * test_expo.c - unit tests for lib/base/expo: exact text exposition output,
 * name validation, the cardinality cap and lock-free concurrent updates.
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

#include <cmocka.h>

#include "base/expo.h"

static struct expo *
new_registry(void)
{
	struct expo *m = NULL;

	assert_int_equal(expo_new(&m), STATUS_OK);
	assert_non_null(m);
	return m;
}

/* Renders m and compares with want exactly. */
static void
assert_render(struct expo *m, const char *want)
{
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(expo_render(m, &out, &len), STATUS_OK);
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_int_equal(len, strlen(want));
	free(out);
}

static void
test_empty_registry(void **state)
{
	struct expo *m = new_registry();

	(void)state;
	assert_render(m, "");
	expo_free(m);
	expo_free(NULL);
}

static void
test_counter_with_labels(void **state)
{
	struct expo *m = new_registry();
	struct expo_family *f;
	struct expo_series *call, *init, *again;
	const char *v1[] = {"tools/call", "200"};
	const char *v2[] = {"initialize", "200"};
	const char *v1_copy[] = {"tools/call", "200"};
	int i;

	(void)state;
	f = expo_family(m, EXPO_COUNTER, "sextant_requests_total",
			"Requests handled.", "method,code", NULL, 0);
	assert_non_null(f);
	call = expo_series(f, v1);
	init = expo_series(f, v2);
	assert_non_null(call);
	assert_non_null(init);
	assert_ptr_not_equal(call, init);
	again = expo_series(f, v1_copy);
	assert_ptr_equal(again, call);
	for (i = 0; i < 3; i++)
		expo_inc(call);
	expo_add(init, 2.5);
	/* counters ignore decreases, sets and non-finite adds */
	expo_add(init, -1);
	expo_add(init, NAN);
	expo_add(init, INFINITY);
	expo_set(init, 100);
	expo_observe(init, 1);
	expo_dec(init);
	assert_true(expo_value(call) == 3.0);
	assert_true(expo_value(init) == 2.5);
	assert_render(m, "# HELP sextant_requests_total Requests handled.\n"
			 "# TYPE sextant_requests_total counter\n"
			 "sextant_requests_total{method=\"tools/call\","
			 "code=\"200\"} 3\n"
			 "sextant_requests_total{method=\"initialize\","
			 "code=\"200\"} 2.5\n");
	expo_free(m);
}

static void
test_gauge(void **state)
{
	struct expo *m = new_registry();
	struct expo_family *f, *idle;
	struct expo_series *g;

	(void)state;
	f = expo_family(m, EXPO_GAUGE, "sextant_sessions", "Open sessions.",
			NULL, NULL, 0);
	idle = expo_family(m, EXPO_GAUGE, "sextant_idle", "", "", NULL, 0);
	assert_non_null(f);
	assert_non_null(idle);
	g = expo_series(f, NULL);
	assert_non_null(g);
	assert_ptr_equal(expo_series(f, NULL), g);
	expo_set(g, 5);
	expo_inc(g);
	expo_dec(g);
	expo_dec(g);
	expo_add(g, -0.5);
	expo_observe(g, 100); /* not a histogram: ignored */
	assert_true(expo_value(g) == 3.5);
	/* a label-less family renders 0 before any update; no HELP if empty */
	assert_render(m, "# HELP sextant_sessions Open sessions.\n"
			 "# TYPE sextant_sessions gauge\n"
			 "sextant_sessions 3.5\n"
			 "# TYPE sextant_idle gauge\n"
			 "sextant_idle 0\n");
	expo_set(g, -1e-7);
	expo_set(expo_series(idle, NULL), 0.1);
	assert_render(m, "# HELP sextant_sessions Open sessions.\n"
			 "# TYPE sextant_sessions gauge\n"
			 "sextant_sessions -1e-07\n"
			 "# TYPE sextant_idle gauge\n"
			 "sextant_idle 0.1\n");
	expo_set(g, NAN);
	expo_set(expo_series(idle, NULL), -INFINITY);
	assert_render(m, "# HELP sextant_sessions Open sessions.\n"
			 "# TYPE sextant_sessions gauge\n"
			 "sextant_sessions NaN\n"
			 "# TYPE sextant_idle gauge\n"
			 "sextant_idle -Inf\n");
	expo_free(m);
}

static void
test_histogram(void **state)
{
	static const double bounds[] = {0.125, 0.5, 1};
	struct expo *m = new_registry();
	struct expo_family *f;
	struct expo_series *h;
	const char *v[] = {"query_traces"};

	(void)state;
	f = expo_family(m, EXPO_HISTOGRAM, "sextant_tool_seconds",
			"Tool call latency.", "tool", bounds, 3);
	assert_non_null(f);
	h = expo_series(f, v);
	assert_non_null(h);
	/* 0.125 lands in le="0.125": bounds are inclusive */
	expo_observe(h, 0.0625);
	expo_observe(h, 0.125);
	expo_observe(h, 0.25);
	expo_observe(h, 2);
	expo_observe(h, NAN); /* ignored */
	expo_inc(h);	      /* not a counter: ignored */
	expo_set(h, 7);	      /* ignored */
	assert_render(m,
		      "# HELP sextant_tool_seconds Tool call latency.\n"
		      "# TYPE sextant_tool_seconds histogram\n"
		      "sextant_tool_seconds_bucket{tool=\"query_traces\","
		      "le=\"0.125\"} 2\n"
		      "sextant_tool_seconds_bucket{tool=\"query_traces\","
		      "le=\"0.5\"} 3\n"
		      "sextant_tool_seconds_bucket{tool=\"query_traces\","
		      "le=\"1\"} 3\n"
		      "sextant_tool_seconds_bucket{tool=\"query_traces\","
		      "le=\"+Inf\"} 4\n"
		      "sextant_tool_seconds_sum{tool=\"query_traces\"} 2.4375\n"
		      "sextant_tool_seconds_count{tool=\"query_traces\"} 4\n");
	expo_free(m);
}

static void
test_histogram_default_buckets(void **state)
{
	static const double with_inf[] = {1, 2, INFINITY};
	struct expo *m = new_registry();
	struct expo_family *f, *g;

	(void)state;
	f = expo_family(m, EXPO_HISTOGRAM, "lat", NULL, NULL, NULL, 0);
	assert_non_null(f);
	expo_observe(expo_series(f, NULL), 0.00390625);
	expo_observe(expo_series(f, NULL), 30);
	/* an explicit trailing +Inf is the implicit one, not a second */
	g = expo_family(m, EXPO_HISTOGRAM, "two", NULL, NULL, with_inf, 3);
	assert_non_null(g);
	assert_render(m, "# TYPE lat histogram\n"
			 "lat_bucket{le=\"0.0005\"} 0\n"
			 "lat_bucket{le=\"0.001\"} 0\n"
			 "lat_bucket{le=\"0.0025\"} 0\n"
			 "lat_bucket{le=\"0.005\"} 1\n"
			 "lat_bucket{le=\"0.01\"} 1\n"
			 "lat_bucket{le=\"0.025\"} 1\n"
			 "lat_bucket{le=\"0.05\"} 1\n"
			 "lat_bucket{le=\"0.1\"} 1\n"
			 "lat_bucket{le=\"0.25\"} 1\n"
			 "lat_bucket{le=\"0.5\"} 1\n"
			 "lat_bucket{le=\"1\"} 1\n"
			 "lat_bucket{le=\"2.5\"} 1\n"
			 "lat_bucket{le=\"5\"} 1\n"
			 "lat_bucket{le=\"10\"} 1\n"
			 "lat_bucket{le=\"+Inf\"} 2\n"
			 "lat_sum 30.00390625\n"
			 "lat_count 2\n"
			 "# TYPE two histogram\n"
			 "two_bucket{le=\"1\"} 0\n"
			 "two_bucket{le=\"2\"} 0\n"
			 "two_bucket{le=\"+Inf\"} 0\n"
			 "two_sum 0\n"
			 "two_count 0\n");
	expo_free(m);
}

static void
test_escaping(void **state)
{
	struct expo *m = new_registry();
	struct expo_family *f;
	const char *v[] = {"a\\b\"c\nd", ""};

	(void)state;
	f = expo_family(m, EXPO_COUNTER, "esc_total",
			"line one\nback\\slash \"quoted\"", "x, y", NULL, 0);
	assert_non_null(f);
	expo_inc(expo_series(f, v));
	/* HELP escapes \ and newline only; label values also " */
	assert_render(m, "# HELP esc_total line one\\nback\\\\slash "
			 "\"quoted\"\n"
			 "# TYPE esc_total counter\n"
			 "esc_total{x=\"a\\\\b\\\"c\\nd\",y=\"\"} 1\n");
	expo_free(m);
}

static double
read_double(void *arg)
{
	return *(double *)arg;
}

static void
test_gauge_fn(void **state)
{
	struct expo *m = new_registry();
	double depth = 7;

	(void)state;
	assert_int_equal(expo_gauge_fn(m, "sextant_queue_depth",
				       "Jobs waiting.", read_double, &depth),
			 STATUS_OK);
	assert_render(m, "# HELP sextant_queue_depth Jobs waiting.\n"
			 "# TYPE sextant_queue_depth gauge\n"
			 "sextant_queue_depth 7\n");
	depth = 12.25; /* read at render time, not at registration */
	assert_render(m, "# HELP sextant_queue_depth Jobs waiting.\n"
			 "# TYPE sextant_queue_depth gauge\n"
			 "sextant_queue_depth 12.25\n");

	assert_int_equal(expo_gauge_fn(m, "sextant_queue_depth", "",
				       read_double, &depth),
			 STATUS_EXISTS);
	assert_int_equal(expo_gauge_fn(m, "bad-name", "", read_double, &depth),
			 STATUS_INVALID);
	assert_int_equal(expo_gauge_fn(m, "no_fn", "", NULL, &depth),
			 STATUS_INVALID);
	/* the name is taken for ordinary families too, and vice versa */
	assert_null(expo_family(m, EXPO_GAUGE, "sextant_queue_depth", "", NULL,
				NULL, 0));
	assert_non_null(
		expo_family(m, EXPO_COUNTER, "c_total", "", NULL, NULL, 0));
	assert_int_equal(expo_gauge_fn(m, "c_total", "", read_double, &depth),
			 STATUS_EXISTS);
	expo_free(m);
}

/* A counter kept elsewhere renders as a counter, read at render time. */
static void
test_counter_fn(void **state)
{
	struct expo *m = new_registry();
	double total = 3;

	(void)state;
	assert_int_equal(expo_counter_fn(m, "sextant_waits_total",
					 "Waits that ran out.", read_double,
					 &total),
			 STATUS_OK);
	total = 5;
	assert_render(m, "# HELP sextant_waits_total Waits that ran out.\n"
			 "# TYPE sextant_waits_total counter\n"
			 "sextant_waits_total 5\n");
	assert_int_equal(expo_counter_fn(m, "sextant_waits_total", "",
					 read_double, &total),
			 STATUS_EXISTS);
	assert_int_equal(expo_gauge_fn(m, "sextant_waits_total", "",
				       read_double, &total),
			 STATUS_EXISTS);
	assert_int_equal(expo_counter_fn(m, "no_fn", "", NULL, &total),
			 STATUS_INVALID);
	expo_free(m);
}

struct bad_family {
	enum expo_type type;
	const char *name;
	const char *labels;
	const double *buckets;
	size_t nbuckets;
};

static const double desc_buckets[] = {1, 0.5};
static const double equal_buckets[] = {1, 1};
static const double nan_buckets[] = {0.1, NAN};
static const double neg_inf_buckets[] = {-INFINITY, 1};
static const double ok_buckets[] = {0.1, 1};

static void
test_invalid_rejected(void **state)
{
	static const struct bad_family bad[] = {
		{EXPO_COUNTER, NULL, NULL, NULL, 0},
		{EXPO_COUNTER, "", NULL, NULL, 0},
		{EXPO_COUNTER, "1abc", NULL, NULL, 0},
		{EXPO_COUNTER, "a-b", NULL, NULL, 0},
		{EXPO_COUNTER, "a b", NULL, NULL, 0},
		{EXPO_COUNTER, "caf\xc3\xa9", NULL, NULL, 0},
		{EXPO_COUNTER, "ok", "1a", NULL, 0},
		{EXPO_COUNTER, "ok", "a:b", NULL, 0},
		{EXPO_COUNTER, "ok", "__reserved", NULL, 0},
		{EXPO_COUNTER, "ok", "a,a", NULL, 0},
		{EXPO_COUNTER, "ok", "a,", NULL, 0},
		{EXPO_COUNTER, "ok", ",a", NULL, 0},
		{EXPO_COUNTER, "ok", "a,,b", NULL, 0},
		{EXPO_COUNTER, "ok", " ", NULL, 0},
		{EXPO_COUNTER, "ok", "a-b", NULL, 0},
		{EXPO_COUNTER, "ok", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", NULL,
		 0},
		{EXPO_HISTOGRAM, "ok", "le", NULL, 0},
		{EXPO_HISTOGRAM, "ok", "tool,le", NULL, 0},
		{EXPO_HISTOGRAM, "ok", NULL, desc_buckets, 2},
		{EXPO_HISTOGRAM, "ok", NULL, equal_buckets, 2},
		{EXPO_HISTOGRAM, "ok", NULL, nan_buckets, 2},
		{EXPO_HISTOGRAM, "ok", NULL, neg_inf_buckets, 2},
		{EXPO_HISTOGRAM, "ok", NULL, ok_buckets, 0},
		{EXPO_COUNTER, "ok", NULL, ok_buckets, 2},
		{EXPO_GAUGE, "ok", NULL, NULL, 3},
		{(enum expo_type)42, "ok", NULL, NULL, 0},
	};
	char longname[EXPO_MAX_NAME_LEN + 2];
	struct expo *m = new_registry();
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct expo_family *f = expo_family(
			m, bad[i].type, bad[i].name, "h", bad[i].labels,
			bad[i].buckets, bad[i].nbuckets);
		if (f != NULL)
			fail_msg("entry %zu (%s, labels %s) was accepted", i,
				 bad[i].name ? bad[i].name : "NULL",
				 bad[i].labels ? bad[i].labels : "NULL");
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_null(expo_family(m, EXPO_GAUGE, longname, "", NULL, NULL, 0));
	assert_null(expo_family(NULL, EXPO_GAUGE, "ok", "", NULL, NULL, 0));
	/* nothing half-registered */
	assert_render(m, "");

	/* the valid edges of the same rules */
	assert_non_null(
		expo_family(m, EXPO_COUNTER, "a:b_total", "", NULL, NULL, 0));
	assert_non_null(expo_family(m, EXPO_COUNTER, "_x9", "",
				    " method , code ", NULL, 0));
	assert_non_null(
		expo_family(m, EXPO_COUNTER, "le_ok", "", "le", NULL, 0));
	assert_non_null(expo_family(m, EXPO_HISTOGRAM, "neg", "", NULL,
				    neg_inf_buckets + 1, 1));
	longname[EXPO_MAX_NAME_LEN] = '\0';
	assert_non_null(
		expo_family(m, EXPO_GAUGE, longname, "", NULL, NULL, 0));
	expo_free(m);
}

static void
test_reregistration(void **state)
{
	struct expo *m = new_registry();
	struct expo_family *f, *h;

	(void)state;
	f = expo_family(m, EXPO_COUNTER, "calls_total", "Calls.", "method",
			NULL, 0);
	assert_non_null(f);
	/* same definition: the same family (lazy registration) */
	assert_ptr_equal(expo_family(m, EXPO_COUNTER, "calls_total",
				     "other help", "method", NULL, 0),
			 f);
	assert_null(expo_family(m, EXPO_GAUGE, "calls_total", "Calls.",
				"method", NULL, 0));
	assert_null(expo_family(m, EXPO_COUNTER, "calls_total", "Calls.",
				"tool", NULL, 0));
	assert_null(expo_family(m, EXPO_COUNTER, "calls_total", "Calls.", NULL,
				NULL, 0));

	h = expo_family(m, EXPO_HISTOGRAM, "h", "", NULL, ok_buckets, 2);
	assert_non_null(h);
	assert_ptr_equal(
		expo_family(m, EXPO_HISTOGRAM, "h", "", NULL, ok_buckets, 2),
		h);
	assert_null(expo_family(m, EXPO_HISTOGRAM, "h", "", NULL, NULL, 0));
	expo_free(m);
}

static void
test_child_inputs(void **state)
{
	char big[EXPO_MAX_VALUE_LEN + 2];
	struct expo *m = new_registry();
	struct expo_family *f;
	const char *null_value[] = {"x", NULL};
	const char *too_long[] = {"x", big};
	const char *ok[] = {"x", "y"};

	(void)state;
	f = expo_family(m, EXPO_COUNTER, "in_total", "", "a,b", NULL, 0);
	assert_non_null(f);
	assert_null(expo_series(NULL, ok));
	assert_null(expo_series(f, NULL));
	assert_null(expo_series(f, null_value));
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_null(expo_series(f, too_long));
	big[EXPO_MAX_VALUE_LEN] = '\0';
	assert_non_null(expo_series(f, too_long));
	/* ("ab","") and ("a","b") are different children */
	{
		const char *v1[] = {"ab", ""};
		const char *v2[] = {"a", "b"};

		assert_ptr_not_equal(expo_series(f, v1), expo_series(f, v2));
	}

	/* updates through a NULL child are no-ops, not crashes */
	expo_inc(NULL);
	expo_dec(NULL);
	expo_add(NULL, 1);
	expo_set(NULL, 1);
	expo_observe(NULL, 1);
	assert_true(expo_value(NULL) == 0);
	expo_free(m);
}

static void
test_cardinality_cap(void **state)
{
	struct expo *m = new_registry();
	struct expo_family *f;
	struct expo_series *first = NULL, *c;
	char buf[32];
	const char *v[] = {buf};
	char *out = NULL;
	size_t len = 0, lines = 0, i;

	(void)state;
	f = expo_family(m, EXPO_COUNTER, "card_total", "", "id", NULL, 0);
	assert_non_null(f);
	for (i = 0; i < EXPO_MAX_CHILDREN; i++) {
		snprintf(buf, sizeof(buf), "v%zu", i);
		c = expo_series(f, v);
		if (c == NULL)
			fail_msg("child %zu refused below the cap", i);
		if (i == 0)
			first = c;
		expo_inc(c);
	}
	snprintf(buf, sizeof(buf), "one-too-many");
	assert_null(expo_series(f, v));
	/* existing children are still found at the cap */
	snprintf(buf, sizeof(buf), "v0");
	assert_ptr_equal(expo_series(f, v), first);

	assert_int_equal(expo_render(m, &out, &len), STATUS_OK);
	for (i = 0; i < len; i++)
		lines += out[i] == '\n';
	assert_int_equal(lines, EXPO_MAX_CHILDREN + 1); /* + TYPE line */
	assert_non_null(strstr(out, "card_total{id=\"v0\"} 1\n"));
	assert_non_null(strstr(out, "card_total{id=\"v9999\"} 1\n"));
	assert_null(strstr(out, "one-too-many"));
	/* creation order */
	assert_true(strstr(out, "\"v9\"") < strstr(out, "\"v10\""));
	free(out);
	expo_free(m);
}

#define NTHREADS 4
#define NITERS	 100000

struct worker {
	pthread_t tid;
	struct expo_family *counter, *gauge, *hist;
	struct expo_series *resolved;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	const char *v[] = {"shared"};
	struct expo_series *c, *g, *h;
	int i;

	/* all threads race to create the same child */
	c = expo_series(w->counter, v);
	g = expo_series(w->gauge, NULL);
	h = expo_series(w->hist, v);
	w->resolved = c;
	for (i = 0; i < NITERS; i++) {
		expo_inc(c);
		expo_add(g, 1);
		expo_observe(h, (i % 2) ? 0.002 : 3);
	}
	return NULL;
}

static void
test_concurrent_updates(void **state)
{
	struct expo *m = new_registry();
	struct worker w[NTHREADS];
	struct expo_family *counter, *gauge, *hist;
	const char *v[] = {"shared"};
	char *out = NULL;
	size_t len = 0;
	int i;

	(void)state;
	counter = expo_family(m, EXPO_COUNTER, "conc_total", "", "k", NULL, 0);
	gauge = expo_family(m, EXPO_GAUGE, "conc_gauge", "", NULL, NULL, 0);
	hist = expo_family(m, EXPO_HISTOGRAM, "conc_seconds", "", "k", NULL, 0);
	assert_non_null(counter);
	assert_non_null(gauge);
	assert_non_null(hist);
	for (i = 0; i < NTHREADS; i++) {
		w[i].counter = counter;
		w[i].gauge = gauge;
		w[i].hist = hist;
		w[i].resolved = NULL;
		assert_int_equal(
			pthread_create(&w[i].tid, NULL, worker_run, &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(w[i].tid, NULL), 0);

	for (i = 0; i < NTHREADS; i++)
		assert_ptr_equal(w[i].resolved, expo_series(counter, v));
	assert_true(expo_value(expo_series(counter, v)) ==
		    (double)NTHREADS * NITERS);
	assert_true(expo_value(expo_series(gauge, NULL)) ==
		    (double)NTHREADS * NITERS);
	assert_int_equal(expo_render(m, &out, &len), STATUS_OK);
	assert_non_null(strstr(out, "conc_total{k=\"shared\"} 400000\n"));
	assert_non_null(strstr(out, "conc_gauge 400000\n"));
	assert_non_null(strstr(
		out,
		"conc_seconds_bucket{k=\"shared\",le=\"0.0025\"} 200000\n"));
	assert_non_null(strstr(
		out, "conc_seconds_bucket{k=\"shared\",le=\"2.5\"} 200000\n"));
	assert_non_null(strstr(
		out, "conc_seconds_bucket{k=\"shared\",le=\"+Inf\"} 400000\n"));
	assert_non_null(
		strstr(out, "conc_seconds_count{k=\"shared\"} 400000\n"));
	/* one child each: the creation race produced no duplicates */
	assert_null(strstr(strstr(out, "conc_total{") + 1, "conc_total{"));
	free(out);
	expo_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_registry),
		cmocka_unit_test(test_counter_with_labels),
		cmocka_unit_test(test_gauge),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_histogram_default_buckets),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_gauge_fn),
		cmocka_unit_test(test_counter_fn),
		cmocka_unit_test(test_invalid_rejected),
		cmocka_unit_test(test_reregistration),
		cmocka_unit_test(test_child_inputs),
		cmocka_unit_test(test_cardinality_cap),
		cmocka_unit_test(test_concurrent_updates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

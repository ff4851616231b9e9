/*
 * test_promcalls.c - unit tests for lib/telemetry/promcalls: the PromQL of each
 * protocol (status filters, quoting, refusals) and the rows made from
 * hand-built answers (keys spelled as the spans spell them, requests,
 * percentiles, errors, key filters, drops, truncation, order).
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
#include "prom/grafana.h"
#include "telemetry/promcalls.h"
#include "telemetry/spanquery.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SEC	     INT64_C(1000)
#define MIN	     (60 * SEC)
#define HOUR	     (60 * MIN)
#define MAX_LABELS   6

#define HTTP_M "http_server_request_duration_seconds"
#define GRPC_M "rpc_server_duration_seconds"
#define SQL_M  "db_client_operation_duration_seconds"

static const struct promcalls_spec spec = {
	.service_label = "service_name",
	.service_value = "checkout",
	.metric = {[SPANQUERY_HTTP] = HTTP_M,
		   [SPANQUERY_GRPC] = GRPC_M,
		   [SPANQUERY_SQL] = SQL_M},
};

/* ---- promcalls_build ---------------------------------------------------- */

static const struct {
	int p;
	int status_min, status_max, grpc_status;
	int64_t range_ms;
	const char *buckets, *errors;
} build_cases[] = {
	{SPANQUERY_HTTP, 0, 0, -1, HOUR,
	 "sum by (le, http_route, http_request_method) (increase(" HTTP_M
	 "_bucket{service_name=\"checkout\"}[1h]))",
	 "sum by (http_route, http_request_method) (increase(" HTTP_M
	 "_count{service_name=\"checkout\","
	 "http_response_status_code=~\"5..\"}[1h]))"},
	/* 5xx: both queries count only those calls */
	{SPANQUERY_HTTP, 500, 599, -1, 15 * MIN,
	 "sum by (le, http_route, http_request_method) (increase(" HTTP_M
	 "_bucket{service_name=\"checkout\","
	 "http_response_status_code=~\"5..\"}[15m]))",
	 "sum by (http_route, http_request_method) (increase(" HTTP_M
	 "_count{service_name=\"checkout\","
	 "http_response_status_code=~\"5..\","
	 "http_response_status_code=~\"5..\"}[15m]))"},
	/* 2xx; the gRPC status means nothing to HTTP */
	{SPANQUERY_HTTP, 200, 299, 2, 90 * SEC,
	 "sum by (le, http_route, http_request_method) (increase(" HTTP_M
	 "_bucket{service_name=\"checkout\","
	 "http_response_status_code=~\"2..\"}[1m30s]))",
	 "sum by (http_route, http_request_method) (increase(" HTTP_M
	 "_count{service_name=\"checkout\","
	 "http_response_status_code=~\"2..\","
	 "http_response_status_code=~\"5..\"}[1m30s]))"},
	{SPANQUERY_HTTP, 100, 199, -1, SEC,
	 "sum by (le, http_route, http_request_method) (increase(" HTTP_M
	 "_bucket{service_name=\"checkout\","
	 "http_response_status_code=~\"1..\"}[1s]))",
	 "sum by (http_route, http_request_method) (increase(" HTTP_M
	 "_count{service_name=\"checkout\","
	 "http_response_status_code=~\"1..\","
	 "http_response_status_code=~\"5..\"}[1s]))"},
	{SPANQUERY_GRPC, 0, 0, -1, 5 * MIN,
	 "sum by (le, rpc_service, rpc_method) (increase(" GRPC_M
	 "_bucket{service_name=\"checkout\"}[5m]))",
	 "sum by (rpc_service, rpc_method) (increase(" GRPC_M
	 "_count{service_name=\"checkout\","
	 "rpc_grpc_status_code!~\"0|\"}[5m]))"},
	/* status 2; the HTTP class means nothing to gRPC */
	{SPANQUERY_GRPC, 500, 599, 2, 5 * MIN,
	 "sum by (le, rpc_service, rpc_method) (increase(" GRPC_M
	 "_bucket{service_name=\"checkout\","
	 "rpc_grpc_status_code=\"2\"}[5m]))",
	 "sum by (rpc_service, rpc_method) (increase(" GRPC_M
	 "_count{service_name=\"checkout\",rpc_grpc_status_code=\"2\","
	 "rpc_grpc_status_code!~\"0|\"}[5m]))"},
	{SPANQUERY_GRPC, 0, 0, 0, 1500,
	 "sum by (le, rpc_service, rpc_method) (increase(" GRPC_M
	 "_bucket{service_name=\"checkout\","
	 "rpc_grpc_status_code=\"0\"}[1s500ms]))",
	 "sum by (rpc_service, rpc_method) (increase(" GRPC_M
	 "_count{service_name=\"checkout\",rpc_grpc_status_code=\"0\","
	 "rpc_grpc_status_code!~\"0|\"}[1s500ms]))"},
	/* both names of each key part are kept in the sum */
	{SPANQUERY_SQL, 0, 0, -1, 24 * HOUR,
	 "sum by (le, db_operation_name, db_operation, db_collection_name, "
	 "db_sql_table) (increase(" SQL_M
	 "_bucket{service_name=\"checkout\"}[1d]))",
	 "sum by (db_operation_name, db_operation, db_collection_name, "
	 "db_sql_table) (increase(" SQL_M
	 "_count{service_name=\"checkout\",error_type!=\"\"}[1d]))"},
	/* SQL has no status label: the status filters change nothing */
	{SPANQUERY_SQL, 500, 599, 2, 24 * HOUR,
	 "sum by (le, db_operation_name, db_operation, db_collection_name, "
	 "db_sql_table) (increase(" SQL_M
	 "_bucket{service_name=\"checkout\"}[1d]))",
	 "sum by (db_operation_name, db_operation, db_collection_name, "
	 "db_sql_table) (increase(" SQL_M
	 "_count{service_name=\"checkout\",error_type!=\"\"}[1d]))"},
};

static struct spanquery_filter
any_filter(void)
{
	return (struct spanquery_filter){.service = "checkout",
					 .grpc_status = -1};
}

static void
test_build(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(build_cases); i++) {
		struct spanquery_filter f = any_filter();
		struct buf qb, qe;
		char err[256] = "";

		f.http_status_min = build_cases[i].status_min;
		f.http_status_max = build_cases[i].status_max;
		f.grpc_status = build_cases[i].grpc_status;
		buf_init(&qb, 4096);
		buf_init(&qe, 4096);
		if (promcalls_build(&spec, build_cases[i].p, &f,
				    build_cases[i].range_ms, &qb, &qe, err,
				    sizeof(err)) != STATUS_OK)
			fail_msg("case %zu: %s", i, err);
		if (strcmp(qb.data, build_cases[i].buckets) != 0)
			fail_msg("case %zu buckets:\n got %s\nwant %s", i,
				 qb.data, build_cases[i].buckets);
		if (strcmp(qe.data, build_cases[i].errors) != 0)
			fail_msg("case %zu errors:\n got %s\nwant %s", i,
				 qe.data, build_cases[i].errors);
		buf_free(&qb);
		buf_free(&qe);
	}
}

static void
test_build_quoting(void **state)
{
	static const struct {
		const char *label, *value, *quoted;
	} cases[] = {
		/* quotes and backslashes escaped: one string in PromQL */
		{"job", "we\"ird\\svc", "\"we\\\"ird\\\\svc\""},
		{"service_name", "a\"} or vector(1) or up{x=\"",
		 "\"a\\\"} or vector(1) or up{x=\\\"\""},
		{"service_name", "line\nbreak", "\"line\\nbreak\""},
		{"service_name", "", "\"\""},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct promcalls_spec s = spec;
		struct spanquery_filter f = any_filter();
		struct buf qb, qe;
		char err[256] = "", wb[512], we[512];

		s.service_label = cases[i].label;
		s.service_value = cases[i].value;
		snprintf(wb, sizeof(wb),
			 "sum by (le, http_route, http_request_method) "
			 "(increase(" HTTP_M "_bucket{%s=%s}[1m]))",
			 cases[i].label, cases[i].quoted);
		snprintf(we, sizeof(we),
			 "sum by (http_route, http_request_method) "
			 "(increase(" HTTP_M "_count{%s=%s,"
			 "http_response_status_code=~\"5..\"}[1m]))",
			 cases[i].label, cases[i].quoted);
		buf_init(&qb, 4096);
		buf_init(&qe, 4096);
		if (promcalls_build(&s, SPANQUERY_HTTP, &f, MIN, &qb, &qe, err,
				    sizeof(err)) != STATUS_OK)
			fail_msg("case %zu: %s", i, err);
		if (strcmp(qb.data, wb) != 0)
			fail_msg("case %zu:\n got %s\nwant %s", i, qb.data, wb);
		if (strcmp(qe.data, we) != 0)
			fail_msg("case %zu:\n got %s\nwant %s", i, qe.data, we);
		buf_free(&qb);
		buf_free(&qe);
	}
}

#define BAD_SPEC  "check service_label"
#define BAD_CLASS "only whole status classes (2xx, 5xx)"

static void
test_build_refused(void **state)
{
	static const struct {
		int p;
		const char *metric, *label, *value;
		int status_min, status_max;
		int64_t range_ms;
		const char *needle;
	} cases[] = {
		{SPANQUERY_HTTP, "http.server.duration", "service_name", "x", 0,
		 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, "1http", "service_name", "x", 0, 0, MIN,
		 BAD_SPEC},
		{SPANQUERY_HTTP, "m{a=\"b\"}", "service_name", "x", 0, 0, MIN,
		 BAD_SPEC},
		{SPANQUERY_SQL, "", "service_name", "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_GRPC, NULL, "service_name", "x", 0, 0, MIN,
		 BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "service-name", "x", 0, 0, MIN,
		 BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "__name__", "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "", "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, NULL, "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "job", NULL, 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 0, 0, 999, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 0, 0, 0, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 0, 0, -MIN, BAD_SPEC},
		{-1, HTTP_M, "job", "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_PROTOCOLS, HTTP_M, "job", "x", 0, 0, MIN, BAD_SPEC},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 500, 550, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 450, 549, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 500, 500, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 404, 404, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 0, 599, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 500, 0, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 400, 599, MIN, BAD_CLASS},
		{SPANQUERY_HTTP, HTTP_M, "job", "x", 1000, 1099, MIN,
		 BAD_CLASS},
		/* Prometheus refuses label values that are not UTF-8 */
		{SPANQUERY_HTTP, HTTP_M, "job", "caf\xe9", 0, 0, MIN,
		 "not UTF-8"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct promcalls_spec s = spec;
		struct spanquery_filter f = any_filter();
		struct buf qb, qe;
		char err[256] = "";
		int rc;

		if (cases[i].p >= 0 && cases[i].p < SPANQUERY_PROTOCOLS)
			s.metric[cases[i].p] = cases[i].metric;
		s.service_label = cases[i].label;
		s.service_value = cases[i].value;
		f.http_status_min = cases[i].status_min;
		f.http_status_max = cases[i].status_max;
		buf_init(&qb, 4096);
		buf_init(&qe, 4096);
		rc = promcalls_build(&s, cases[i].p, &f, cases[i].range_ms, &qb,
				     &qe, err, sizeof(err));
		if (rc != STATUS_INVALID)
			fail_msg("case %zu: rc %d, buckets %s", i, rc,
				 qb.data ? qb.data : "(none)");
		if (strstr(err, cases[i].needle) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
				 cases[i].needle);
		buf_free(&qb);
		buf_free(&qe);
	}
}

static void
test_build_limit(void **state)
{
	struct spanquery_filter f = any_filter();
	struct buf qb, qe;
	char err[256];

	(void)state;
	buf_init(&qb, 40);
	buf_init(&qe, 4096);
	assert_int_equal(promcalls_build(&spec, SPANQUERY_SQL, &f, MIN, &qb,
					 &qe, err, sizeof(err)),
			 STATUS_LIMIT);
	buf_free(&qb);
	buf_free(&qe);
}

/* ---- answers built by hand ---------------------------------------------- */

static int
cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct grafana_label *)a)->name,
		      ((const struct grafana_label *)b)->name);
}

/*
 * Appends a series to m: labels l (name, value pairs, NULL-terminated)
 * plus le when not NULL, sorted by name as lib/prom/grafana gives them, and
 * npts points (the last counts for promcalls).
 */
static void
add_series(struct grafana_matrix *m, const char *const *l, const char *le,
	   const double *pts, size_t npts)
{
	struct grafana_series *grown, *s;
	size_t n = 0;

	grown = realloc(m->series, (m->nseries + 1) * sizeof(*grown));
	assert_non_null(grown);
	m->series = grown;
	s = &m->series[m->nseries++];
	memset(s, 0, sizeof(*s));
	s->labels = calloc(MAX_LABELS + 1, sizeof(*s->labels));
	s->points = calloc(npts, sizeof(*s->points));
	assert_non_null(s->labels);
	assert_non_null(s->points);
	for (; l[2 * n] != NULL; n++) {
		assert_true(n < MAX_LABELS);
		s->labels[n].name = strdup(l[2 * n]);
		s->labels[n].value = strdup(l[2 * n + 1]);
	}
	if (le != NULL) {
		s->labels[n].name = strdup("le");
		s->labels[n++].value = strdup(le);
	}
	s->nlabels = n;
	for (size_t i = 0; i < n; i++) {
		assert_non_null(s->labels[i].name);
		assert_non_null(s->labels[i].value);
	}
	qsort(s->labels, n, sizeof(*s->labels), cmp_label);
	for (size_t i = 0; i < npts; i++) {
		s->points[i].t_ms = 1700000000000 + (int64_t)i * 60000;
		s->points[i].v = pts[i];
	}
	s->npoints = npts;
	m->npoints += npts;
}

static struct grafana_matrix *
matrix_new(void)
{
	struct grafana_matrix *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	return m;
}

/* Bucket shapes.  Percentiles (ms) by hand, as in test_promql.c:
 *   A: 0.05:20 0.1:50 0.25:80 0.5:95 1:99 +Inf:100
 *      p50 rank 50 = 0.1:50 -> 0.1; p95 rank 95 = 0.5:95 -> 0.5;
 *      p99 rank 99 = 1:99 -> 1: 100 / 500 / 1000 ms
 *   B: 0.1:5 1:10 +Inf:10
 *      p50 rank 5 = 0.1:5 -> 0.1; p95 rank 9.5: 0.1 + 0.9 * 4.5/5 =
 *      0.91; p99 rank 9.9: 0.1 + 0.9 * 4.9/5 = 0.982: 100 / 910 / 982 ms
 * Counts are multiplied by the key's scale: percentiles stay, requests
 * are 100 or 10 times it. */
enum shape {
	SHAPE_A,
	SHAPE_B,
	SHAPE_INF,
	SHAPE_JUNK,
	SHAPE_NAN_INF
};

static const struct {
	const char *le[9]; /* NULL within n: a series without le */
	double count[9];
	size_t n;
} shapes[] = {
	[SHAPE_A] = {{"0.05", "0.1", "0.25", "0.5", "1", "+Inf"},
		     {20, 50, 80, 95, 99, 100},
		     6},
	[SHAPE_B] = {{"0.1", "1", "+Inf"}, {5, 10, 10}, 3},
	/* calls without a finite bucket: nothing of their latency */
	[SHAPE_INF] = {{"+Inf"}, {7}, 1},
	/* A with series that are no bucket: le not a number, NaN, absent;
	 * each would move every percentile if it counted */
	[SHAPE_JUNK] = {{"0.05", "0.1", "0.25", "0.5", "1", "+Inf", "bogus",
			 "NaN", NULL},
			{20, 50, 80, 95, 99, 100, 1000, 1000, 1000},
			9},
	/* A whose +Inf value is NaN: no request known */
	[SHAPE_NAN_INF] = {{"0.05", "0.1", "0.25", "0.5", "1", "+Inf"},
			   {20, 50, 80, 95, 99, NAN},
			   6},
};

struct key {
	const char *l[2 * MAX_LABELS + 1];
	enum shape shape;
	double scale;
};

struct ser {
	const char *l[2 * MAX_LABELS + 1];
	double v;
};

/* keys end at l[0] == NULL */
static struct grafana_matrix *
bucket_matrix(const struct key *k)
{
	struct grafana_matrix *m = matrix_new();

	for (; k->l[0] != NULL; k++)
		for (size_t i = 0; i < shapes[k->shape].n; i++) {
			double v = shapes[k->shape].count[i] * k->scale;

			add_series(m, k->l, shapes[k->shape].le[i], &v, 1);
		}
	return m;
}

static struct grafana_matrix *
error_matrix(const struct ser *s)
{
	struct grafana_matrix *m = matrix_new();

	for (; s != NULL && s->l[0] != NULL; s++)
		add_series(m, s->l, NULL, &s->v, 1);
	return m;
}

struct want {
	const char *k1, *k2;
	double requests, errors, p50, p95, p99;
};

static bool
close_to(double got, double want)
{
	return fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
}

static void
check_row(const char *name, size_t i, const struct promcalls_row *r, int p,
	  const struct want *w)
{
	if (r->protocol != p || strcmp(r->k1, w->k1) != 0 ||
	    strcmp(r->k2, w->k2) != 0)
		fail_msg("%s row %zu: got %d \"%s\" \"%s\", want %d \"%s\" "
			 "\"%s\"",
			 name, i, r->protocol, r->k1, r->k2, p, w->k1, w->k2);
	if (!close_to(r->requests, w->requests) ||
	    !close_to(r->errors, w->errors) || !close_to(r->p50_ms, w->p50) ||
	    !close_to(r->p95_ms, w->p95) || !close_to(r->p99_ms, w->p99))
		fail_msg("%s row %zu (%s %s): got req %.17g err %.17g "
			 "p50/95/99 %.17g %.17g %.17g, want %g %g %g %g %g",
			 name, i, w->k1, w->k2, r->requests, r->errors,
			 r->p50_ms, r->p95_ms, r->p99_ms, w->requests,
			 w->errors, w->p50, w->p95, w->p99);
}

/* ---- promcalls_add ------------------------------------------------------ */

#define ROW_A(k1, k2, req, err)                                                \
	{                                                                      \
		k1, k2, req, err, 100, 500, 1000                               \
	}
#define ROW_B(k1, k2, req, err)                                                \
	{                                                                      \
		k1, k2, req, err, 100, 910, 982                                \
	}

static const struct key http_keys[] = {
	/* the method upper-cased as in the spans */
	{{"http_request_method", "get", "http_route", "/api/orders"},
	 SHAPE_A,
	 1},
	{{"http_request_method", "POST", "http_route", "/api/pay"}, SHAPE_B, 3},
	/* no route: k1 "" */
	{{"http_request_method", "GET"}, SHAPE_B, 1},
	{{NULL}},
};
static const struct ser http_errors[] = {
	{{"http_request_method", "GET", "http_route", "/api/orders"}, 7},
	/* more errors than requests (extrapolation): capped */
	{{"http_request_method", "post", "http_route", "/api/pay"}, 50},
	/* a key without a row: nothing */
	{{"http_request_method", "GET", "http_route", "/unknown"}, 5},
	/* not a number: nothing */
	{{"http_request_method", "GET"}, NAN},
	{{NULL}},
};

static const struct key grpc_keys[] = {
	/* the semantic conventions: rpc_service beside the bare method */
	{{"rpc_method", "Charge", "rpc_service", "pay.Payments"}, SHAPE_A, 1},
	/* Beyla: the full method in rpc_method, leading '/' dropped */
	{{"rpc_method", "/pay.Payments/Refund"}, SHAPE_B, 2},
	{{NULL}},
};
static const struct ser grpc_errors[] = {
	{{"rpc_method", "Charge", "rpc_service", "pay.Payments"}, 3},
	{{"rpc_method", "/pay.Payments/Refund"}, 1},
	{{"rpc_method", "pay.Payments/Refund"}, 1},
	{{NULL}},
};

static const struct key sql_keys[] = {
	{{"db_collection_name", "orders", "db_operation_name", "select"},
	 SHAPE_A,
	 1},
	/* the older names, when the newer are absent; the table keeps its
	 * case */
	{{"db_operation", "insert", "db_sql_table", "Payments"}, SHAPE_B, 4},
	/* newer name for one part, older for the other */
	{{"db_operation_name", "update", "db_sql_table", "users"}, SHAPE_B, 1},
	{{NULL}},
};
static const struct ser sql_errors[] = {
	{{"db_collection_name", "orders", "db_operation_name", "SELECT"}, 2},
	{{"db_operation", "INSERT", "db_sql_table", "Payments"}, 1},
	{{"db_collection_name", "users", "db_operation_name", "update"}, 3},
	{{NULL}},
};

static const struct key drop_keys[] = {
	/* 0.4 requests: dropped, not unbucketed */
	{{"http_request_method", "GET", "http_route", "/tiny"}, SHAPE_A, 0.004},
	/* 0.5 requests: kept */
	{{"http_request_method", "GET", "http_route", "/half"}, SHAPE_A, 0.005},
	{{"http_request_method", "GET", "http_route", "/inf-only"},
	 SHAPE_INF,
	 1},
	{{"http_request_method", "GET", "http_route", "/junk"}, SHAPE_JUNK, 1},
	{{"http_request_method", "GET", "http_route", "/nan-inf"},
	 SHAPE_NAN_INF,
	 1},
	{{NULL}},
};
static const struct ser drop_errors[] = {
	{{"http_request_method", "GET", "http_route", "/inf-only"}, 3},
	{{"http_request_method", "GET", "http_route", "/tiny"}, 1},
	{{"http_request_method", "GET", "http_route", "/junk"}, 4},
	{{NULL}},
};

struct add_case {
	const char *name;
	int p;
	const struct key *keys;
	const struct ser *errors; /* NULL: no errors answer */
	struct spanquery_filter f;
	struct want rows[4];
	size_t nrows, unbucketed;
};

static const struct add_case add_cases[] = {
	{"http",
	 SPANQUERY_HTTP,
	 http_keys,
	 http_errors,
	 {0},
	 {ROW_A("/api/orders", "GET", 100, 7),
	  ROW_B("/api/pay", "POST", 30, 30), ROW_B("", "GET", 10, 0)},
	 3,
	 0},
	{"http no errors answer",
	 SPANQUERY_HTTP,
	 http_keys,
	 NULL,
	 {0},
	 {ROW_A("/api/orders", "GET", 100, 0), ROW_B("/api/pay", "POST", 30, 0),
	  ROW_B("", "GET", 10, 0)},
	 3,
	 0},
	{"http route",
	 SPANQUERY_HTTP,
	 http_keys,
	 http_errors,
	 {.http_route = "/api/pay"},
	 {ROW_B("/api/pay", "POST", 30, 30)},
	 1,
	 0},
	{"http route exact",
	 SPANQUERY_HTTP,
	 http_keys,
	 http_errors,
	 {.http_route = "/API/PAY"},
	 {{0}},
	 0,
	 0},
	{"http method any case",
	 SPANQUERY_HTTP,
	 http_keys,
	 http_errors,
	 {.http_method = "Get"},
	 {ROW_A("/api/orders", "GET", 100, 7), ROW_B("", "GET", 10, 0)},
	 2,
	 0},
	{"http route and method",
	 SPANQUERY_HTTP,
	 http_keys,
	 http_errors,
	 {.http_route = "/api/pay", .http_method = "get"},
	 {{0}},
	 0,
	 0},
	{"grpc",
	 SPANQUERY_GRPC,
	 grpc_keys,
	 grpc_errors,
	 {0},
	 {ROW_A("pay.Payments/Charge", "", 100, 3),
	  ROW_B("pay.Payments/Refund", "", 20, 2)},
	 2,
	 0},
	{"grpc method with /",
	 SPANQUERY_GRPC,
	 grpc_keys,
	 grpc_errors,
	 {.grpc_method = "/pay.Payments/Charge"},
	 {ROW_A("pay.Payments/Charge", "", 100, 3)},
	 1,
	 0},
	{"grpc method without /",
	 SPANQUERY_GRPC,
	 grpc_keys,
	 grpc_errors,
	 {.grpc_method = "pay.Payments/Refund"},
	 {ROW_B("pay.Payments/Refund", "", 20, 2)},
	 1,
	 0},
	{"grpc method exact",
	 SPANQUERY_GRPC,
	 grpc_keys,
	 grpc_errors,
	 {.grpc_method = "pay.payments/charge"},
	 {{0}},
	 0,
	 0},
	{"grpc bare method",
	 SPANQUERY_GRPC,
	 grpc_keys,
	 grpc_errors,
	 {.grpc_method = "Charge"},
	 {{0}},
	 0,
	 0},
	{"sql",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {0},
	 {ROW_A("SELECT", "orders", 100, 2), ROW_B("INSERT", "Payments", 40, 1),
	  ROW_B("UPDATE", "users", 10, 3)},
	 3,
	 0},
	{"sql operation any case",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.sql_operation = "select"},
	 {ROW_A("SELECT", "orders", 100, 2)},
	 1,
	 0},
	{"sql table",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.table_name = "Payments"},
	 {ROW_B("INSERT", "Payments", 40, 1)},
	 1,
	 0},
	{"sql table exact",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.table_name = "payments"},
	 {{0}},
	 0,
	 0},
	{"sql operation and table",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.sql_operation = "Insert", .table_name = "Payments"},
	 {ROW_B("INSERT", "Payments", 40, 1)},
	 1,
	 0},
	{"sql operation and other table",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.sql_operation = "insert", .table_name = "orders"},
	 {{0}},
	 0,
	 0},
	/* the HTTP filters mean nothing to SQL rows */
	{"sql ignores http filters",
	 SPANQUERY_SQL,
	 sql_keys,
	 sql_errors,
	 {.http_route = "/x", .http_method = "GET", .grpc_method = "a/b"},
	 {ROW_A("SELECT", "orders", 100, 2), ROW_B("INSERT", "Payments", 40, 1),
	  ROW_B("UPDATE", "users", 10, 3)},
	 3,
	 0},
	{"drops",
	 SPANQUERY_HTTP,
	 drop_keys,
	 drop_errors,
	 {0},
	 {ROW_A("/junk", "GET", 100, 4), ROW_A("/half", "GET", 0.5, 0)},
	 2,
	 1},
};

static void
run_add_case(const struct add_case *c)
{
	struct grafana_matrix *mb = bucket_matrix(c->keys);
	struct grafana_matrix *me =
		c->errors != NULL ? error_matrix(c->errors) : NULL;
	struct promcalls_result *res = promcalls_result_new();

	assert_non_null(res);
	if (promcalls_add(res, c->p, mb, me, &c->f) != STATUS_OK)
		fail_msg("%s: not added", c->name);
	if (res->n != c->nrows)
		fail_msg("%s: %zu rows, want %zu", c->name, res->n, c->nrows);
	for (size_t i = 0; i < c->nrows; i++)
		check_row(c->name, i, &res->rows[i], c->p, &c->rows[i]);
	if (res->unbucketed != c->unbucketed)
		fail_msg("%s: unbucketed %zu, want %zu", c->name,
			 res->unbucketed, c->unbucketed);
	assert_false(res->truncated);
	assert_int_equal(res->missing, 0);
	promcalls_free(res);
	grafana_matrix_free(mb);
	grafana_matrix_free(me);
}

static void
test_add(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(add_cases); i++)
		run_add_case(&add_cases[i]);
}

/*
 * Two series spelled differently that the spans spell the same (method
 * case, the SQL label names of two convention versions) are one key: their
 * buckets add up (B twice: 0.1:10 1:20 +Inf:20, the same percentiles as
 * B), and so do their errors.
 */
static const struct key merged_http_keys[] = {
	{{"http_request_method", "get", "http_route", "/a"}, SHAPE_B, 1},
	{{"http_request_method", "GET", "http_route", "/a"}, SHAPE_B, 1},
	{{NULL}},
};
static const struct ser merged_http_errors[] = {
	{{"http_request_method", "get", "http_route", "/a"}, 3},
	{{"http_request_method", "GET", "http_route", "/a"}, 4},
	{{NULL}},
};
static const struct key merged_sql_keys[] = {
	{{"db_operation", "SELECT", "db_sql_table", "orders"}, SHAPE_B, 1},
	{{"db_collection_name", "orders", "db_operation_name", "select"},
	 SHAPE_B,
	 1},
	{{NULL}},
};
static const struct ser merged_sql_errors[] = {
	{{"db_operation", "SELECT", "db_sql_table", "orders"}, 15},
	{{"db_collection_name", "orders", "db_operation_name", "select"}, 10},
	{{NULL}},
};

static const struct add_case merged_cases[] = {
	{"merged http",
	 SPANQUERY_HTTP,
	 merged_http_keys,
	 merged_http_errors,
	 {0},
	 {ROW_B("/a", "GET", 20, 7)},
	 1,
	 0},
	/* errors 15 + 10 capped at the 20 requests */
	{"merged sql",
	 SPANQUERY_SQL,
	 merged_sql_keys,
	 merged_sql_errors,
	 {0},
	 {ROW_B("SELECT", "orders", 20, 20)},
	 1,
	 0},
};

static void
test_add_merged_keys(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(merged_cases); i++)
		run_add_case(&merged_cases[i]);
}

/* The last finite point of a series is its value. */
static void
test_add_last_point(void **state)
{
	static const char *const l[] = {"http_request_method", "GET",
					"http_route", "/p", NULL};
	struct grafana_matrix *mb = matrix_new(), *me = matrix_new();
	struct promcalls_result *res = promcalls_result_new();
	struct spanquery_filter f = any_filter();
	static const struct want w = ROW_A("/p", "GET", 100, 6);
	double err_pts[] = {50, 6, NAN};

	(void)state;
	assert_non_null(res);
	for (size_t i = 0; i < shapes[SHAPE_A].n; i++) {
		/* 999 first (the answer would be 25 ms for p50 if it
		 * counted), NaN last */
		double pts[] = {999, shapes[SHAPE_A].count[i], NAN};

		add_series(mb, l, shapes[SHAPE_A].le[i], pts, 3);
	}
	add_series(me, l, NULL, err_pts, 3);
	assert_int_equal(promcalls_add(res, SPANQUERY_HTTP, mb, me, &f),
			 STATUS_OK);
	assert_int_equal(res->n, 1);
	check_row("last point", 0, &res->rows[0], SPANQUERY_HTTP, &w);
	promcalls_free(res);
	grafana_matrix_free(mb);
	grafana_matrix_free(me);
}

static void
test_add_empty(void **state)
{
	struct promcalls_result *res = promcalls_result_new();
	struct grafana_matrix *mb = matrix_new(),
			      *me = error_matrix(http_errors);
	struct spanquery_filter f = any_filter();

	(void)state;
	assert_non_null(res);
	assert_int_equal(promcalls_add(res, SPANQUERY_HTTP, NULL, me, &f),
			 STATUS_OK);
	assert_int_equal(promcalls_add(res, SPANQUERY_HTTP, mb, me, &f),
			 STATUS_OK);
	assert_int_equal(promcalls_add(res, SPANQUERY_GRPC, mb, NULL, &f),
			 STATUS_OK);
	assert_int_equal(res->n, 0);
	assert_null(res->rows);
	assert_false(res->truncated);
	assert_int_equal(res->unbucketed, 0);
	promcalls_free(res);
	promcalls_free(NULL);
	grafana_matrix_free(mb);
	grafana_matrix_free(me);
}

/*
 * Rows of several calls: by protocol whatever the order of the calls,
 * then requests descending, then key; the errors of a call only reach
 * that call's rows.
 */
static void
test_add_order(void **state)
{
	static const struct key http[] = {
		{{"http_request_method", "GET", "http_route", "/b"},
		 SHAPE_A,
		 1},
		{{"http_request_method", "POST", "http_route", "/a"},
		 SHAPE_A,
		 1},
		{{"http_request_method", "GET", "http_route", "/a"},
		 SHAPE_A,
		 1},
		{{"http_request_method", "GET", "http_route", "/big"},
		 SHAPE_B,
		 50},
		/* an HTTP key spelled like the gRPC one below */
		{{"http_route", "pay.Payments/Charge"}, SHAPE_B, 1},
		{{NULL}},
	};
	static const struct key grpc[] = {
		{{"rpc_method", "Charge", "rpc_service", "pay.Payments"},
		 SHAPE_B,
		 1},
		{{"rpc_method", "/x.Y/Z"}, SHAPE_A, 1},
		{{NULL}},
	};
	static const struct ser grpc_err[] = {
		{{"rpc_method", "Charge", "rpc_service", "pay.Payments"}, 3},
		{{NULL}},
	};
	static const struct key sql[] = {
		{{"db_operation_name", "select", "db_collection_name", "t"},
		 SHAPE_A,
		 9},
		{{NULL}},
	};
	static const struct {
		int p;
		struct want w;
	} want[] = {
		{SPANQUERY_HTTP, ROW_B("/big", "GET", 500, 0)},
		{SPANQUERY_HTTP, ROW_A("/a", "GET", 100, 0)},
		{SPANQUERY_HTTP, ROW_A("/a", "POST", 100, 0)},
		{SPANQUERY_HTTP, ROW_A("/b", "GET", 100, 0)},
		{SPANQUERY_HTTP, ROW_B("pay.Payments/Charge", "", 10, 0)},
		{SPANQUERY_GRPC, ROW_A("x.Y/Z", "", 100, 0)},
		{SPANQUERY_GRPC, ROW_B("pay.Payments/Charge", "", 10, 3)},
		{SPANQUERY_SQL, ROW_A("SELECT", "t", 900, 0)},
	};
	struct grafana_matrix *m[3] = {bucket_matrix(http), bucket_matrix(grpc),
				       bucket_matrix(sql)};
	struct grafana_matrix *ge = error_matrix(grpc_err);
	struct promcalls_result *res = promcalls_result_new();
	struct spanquery_filter f = any_filter();

	(void)state;
	assert_non_null(res);
	assert_int_equal(promcalls_add(res, SPANQUERY_SQL, m[2], NULL, &f),
			 STATUS_OK);
	assert_int_equal(promcalls_add(res, SPANQUERY_HTTP, m[0], NULL, &f),
			 STATUS_OK);
	assert_int_equal(promcalls_add(res, SPANQUERY_GRPC, m[1], ge, &f),
			 STATUS_OK);
	assert_int_equal(res->n, ARRAY_LEN(want));
	for (size_t i = 0; i < ARRAY_LEN(want); i++)
		check_row("order", i, &res->rows[i], want[i].p, &want[i].w);
	promcalls_free(res);
	for (size_t i = 0; i < 3; i++)
		grafana_matrix_free(m[i]);
	grafana_matrix_free(ge);
}

/*
 * PROMCALLS_MAX_KEYS keys of one protocol are kept; one more (the
 * smallest and last) is cut and flagged; one too small to count is not a
 * cut.  The bound is per protocol.
 */
static struct grafana_matrix *
many_keys(size_t n, double last)
{
	struct grafana_matrix *m = matrix_new();

	for (size_t i = 0; i < n; i++) {
		char route[32];
		const char *l[] = {"http_request_method", "GET", "http_route",
				   route, NULL};
		double v = i + 1 < n ? 2 : last;

		snprintf(route, sizeof(route), "/r%04zu", i);
		add_series(m, l, "0.1", &v, 1);
		add_series(m, l, "+Inf", &v, 1);
	}
	return m;
}

static void
test_add_truncated(void **state)
{
	static const struct {
		size_t n;
		double last; /* requests of the last key */
		bool truncated;
	} cases[] = {
		{PROMCALLS_MAX_KEYS + 1, 1, true},
		{PROMCALLS_MAX_KEYS + 1, 0.4, false},
		{PROMCALLS_MAX_KEYS, 1, false},
	};
	static const struct key sql[] = {
		{{"db_operation_name", "select", "db_collection_name", "t"},
		 SHAPE_A,
		 1},
		{{NULL}},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct grafana_matrix *mb =
			many_keys(cases[i].n, cases[i].last);
		struct grafana_matrix *ms = bucket_matrix(sql);
		struct promcalls_result *res = promcalls_result_new();
		struct spanquery_filter f = any_filter();
		char last[32];

		assert_non_null(res);
		snprintf(last, sizeof(last), "/r%04zu", cases[i].n - 1);
		assert_int_equal(
			promcalls_add(res, SPANQUERY_HTTP, mb, NULL, &f),
			STATUS_OK);
		if (res->truncated != cases[i].truncated)
			fail_msg("case %zu: truncated %d", i, res->truncated);
		assert_int_equal(res->n, PROMCALLS_MAX_KEYS);
		for (size_t r = 0; r < res->n; r++) {
			const struct promcalls_row *row = &res->rows[r];
			/* all but the last key have 2 requests */
			double req = cases[i].n == PROMCALLS_MAX_KEYS &&
						     r + 1 == res->n
					     ? cases[i].last
					     : 2;

			/* every call within 0.1 s: 0.1 * q, in ms */
			if (!close_to(row->requests, req) ||
			    !close_to(row->p50_ms, 50) ||
			    !close_to(row->p95_ms, 95) ||
			    !close_to(row->p99_ms, 99))
				fail_msg("case %zu row %zu (%s): req %g p50 %g "
					 "p95 %g p99 %g",
					 i, r, row->k1, row->requests,
					 row->p50_ms, row->p95_ms, row->p99_ms);
			if (cases[i].n > PROMCALLS_MAX_KEYS &&
			    strcmp(row->k1, last) == 0)
				fail_msg("case %zu: %s kept", i, last);
		}
		/* another protocol has its own bound */
		assert_int_equal(
			promcalls_add(res, SPANQUERY_SQL, ms, NULL, &f),
			STATUS_OK);
		assert_int_equal(res->n, PROMCALLS_MAX_KEYS + 1);
		assert_int_equal(res->rows[res->n - 1].protocol, SPANQUERY_SQL);
		promcalls_free(res);
		grafana_matrix_free(mb);
		grafana_matrix_free(ms);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_build_quoting),
		cmocka_unit_test(test_build_refused),
		cmocka_unit_test(test_build_limit),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_add_merged_keys),
		cmocka_unit_test(test_add_last_point),
		cmocka_unit_test(test_add_empty),
		cmocka_unit_test(test_add_order),
		cmocka_unit_test(test_add_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

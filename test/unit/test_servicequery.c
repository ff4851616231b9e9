/*
 * test_servicequery.c - unit tests for lib/telemetry/servicequery against a migrated
 * throwaway PostgreSQL holding spans written with lib/otlp/store: sources, last
 * seen, requests, errors and p95 of every service compared with this
 * test's own SQL over the raw span columns, on the rollup path (hour and
 * minute rows, raw partial minutes at the ends, a dirty hour read from its
 * minutes) and the exact path; the
 * namespace rule and filter; services with no requests; the order; bad
 * and empty ranges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"
#include "telemetry/rollup.h"
#include "telemetry/servicequery.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN_MS	     (60LL * 1000)
#define HOUR_MS	     (3600LL * 1000)

#define OT OTLP_SOURCE_OTLP
#define EB OTLP_SOURCE_EBPF

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static int64_t base_ms; /* wall clock when the data was written */
static int64_t hour_ms; /* base_ms floored to the hour */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* count spans of one kind, step_ms apart from a start. */
struct batch {
	const char *service;
	const char *ns, *k8s_ns; /* service.namespace, k8s.namespace.name */
	int source;
	int kind;
	const char *http_method;
	int http_status; /* 0: absent */
	const char *rpc_system;
	int grpc_status; /* -1: absent */
	const char *db_system;
	int count;
	int64_t start_ms; /* from hour_ms (H) */
	int64_t step_ms;
};

#define H (0)
/* The data, relative to H = this hour: settled hours H-5..H-3 (rolled
 * up), a head at H-20h+40m for the range starting at H-20h+30m, a tail
 * 20 minutes ago, and "gamma" 30 hours ago only. */
static const struct batch batches[] = {
	/* alpha (shop): HTTP and gRPC requests from both sources, with
	 * errors; SQL client calls and internal spans are not requests */
	{"alpha", "shop", "k-shop", OT, 2, "GET", 200, NULL, -1, NULL, 60,
	 H - 5 * HOUR_MS + 5 * MIN_MS, 40000},
	{"alpha", "shop", "k-shop", OT, 2, "POST", 503, NULL, -1, NULL, 7,
	 H - 5 * HOUR_MS + 50 * MIN_MS, 20000},
	{"alpha", "shop", "k-shop", OT, 2, "GET", 404, NULL, -1, NULL, 5,
	 H - 4 * HOUR_MS + 5 * MIN_MS, 30000},
	{"alpha", "shop", "k-shop", OT, 2, NULL, 0, "grpc", 0, NULL, 20,
	 H - 4 * HOUR_MS + 10 * MIN_MS, 60000},
	{"alpha", "shop", "k-shop", OT, 2, NULL, 0, "grpc", 14, NULL, 4,
	 H - 4 * HOUR_MS + 40 * MIN_MS, 60000},
	{"alpha", "shop", "k-shop", OT, 2, NULL, 0, "grpc", -1, NULL, 3,
	 H - 4 * HOUR_MS + 50 * MIN_MS, 60000},
	/* in a clean rolled-up hour: the rollup's status -1 is no error */
	{"alpha", "shop", "k-shop", OT, 2, NULL, 0, "grpc", -1, NULL, 2,
	 H - 5 * HOUR_MS + 56 * MIN_MS, 60000},
	{"alpha", "shop", "k-shop", EB, 2, "GET", 200, NULL, -1, NULL, 30,
	 H - 3 * HOUR_MS + 5 * MIN_MS, 50000},
	{"alpha", "shop", "k-shop", EB, 2, "GET", 500, NULL, -1, NULL, 3,
	 H - 3 * HOUR_MS + 45 * MIN_MS, 50000},
	{"alpha", "shop", "k-shop", OT, 3, NULL, 0, NULL, -1, "postgresql", 10,
	 H - 5 * HOUR_MS + 20 * MIN_MS, 30000},
	{"alpha", "shop", "k-shop", OT, 1, "GET", 500, NULL, -1, NULL, 5,
	 H - 4 * HOUR_MS + 20 * MIN_MS, 30000},
	/* head of the 20-hour range */
	{"alpha", "shop", "k-shop", OT, 2, "GET", 200, NULL, -1, NULL, 8,
	 H - 20 * HOUR_MS + 40 * MIN_MS, 30000},
	/* beta: namespace from k8s only; client and internal spans only */
	{"beta", NULL, "kns", OT, 3, "GET", 200, NULL, -1, NULL, 6,
	 H - 4 * HOUR_MS + 30 * MIN_MS, 10000},
	{"beta", NULL, "kns", OT, 1, NULL, 0, NULL, -1, NULL, 4,
	 H - 3 * HOUR_MS + 30 * MIN_MS, 10000},
	/* delta: OTLP with a namespace, a newer eBPF span without one */
	{"delta", "pay", NULL, OT, 2, NULL, 0, "grpc", 0, NULL, 12,
	 H - 5 * HOUR_MS + 30 * MIN_MS, 10000},
	{"delta", NULL, NULL, EB, 2, NULL, 0, "grpc", 2, NULL, 2,
	 H - 3 * HOUR_MS + 30 * MIN_MS, 10000},
	/* gamma: eBPF, 30 hours ago */
	{"gamma", "edge", NULL, EB, 2, "GET", 200, NULL, -1, NULL, 9,
	 H - 30 * HOUR_MS + 10 * MIN_MS, 10000},
};

/* The tail: added 20 minutes before now, after the rollup refresh. */
static const struct batch tail_batches[] = {
	{"alpha", "shop", "k-shop", OT, 2, "GET", 502, NULL, -1, NULL, 4, 0,
	 5000},
	{"alpha", "shop", "k-shop", OT, 2, "GET", 200, NULL, -1, NULL, 11, 0,
	 5000},
	{"beta", NULL, "kns", OT, 1, NULL, 0, NULL, -1, NULL, 2, 0, 5000},
};

/* Late spans for H-4, which is rolled up: they make it dirty again. */
static const struct batch late_batch = {
	"alpha", "shop", "k-shop", OT,	 2, "GET",
	500,	 NULL,	 -1,	   NULL, 6, H - 4 * HOUR_MS + 15 * MIN_MS,
	7000};

static const struct {
	const char *service, *ns;
} namespaces[] = {
	{"alpha", "shop"},
	{"beta", "kns"},
	{"delta", "pay"},
	{"gamma", "edge"},
};

static uint32_t next_id = 1;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double
uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	assert_int_equal(pg_acquire(pool, NULL, 10000, &c, &err), STATUS_OK);
	return c;
}

/* Writes b's spans starting at from_ms (absolute). */
static void
write_batch(struct pg_conn *c, const struct batch *t, int64_t from_ms)
{
	struct otlp_span *v = calloc((size_t)t->count, sizeof(*v));
	struct otlp_batch b = {.spans = v, .n_spans = (size_t)t->count};
	struct pg_error err;
	int64_t inserted = -1;

	assert_non_null(v);
	for (int i = 0; i < t->count; i++) {
		struct otlp_span *s = &v[i];
		uint32_t id = next_id++;
		/* 1 ms to 3 s, log-uniform */
		uint64_t d = (uint64_t)exp(log(1e6) + log(3000.0) * uniform());

		s->trace_id[0] = 0x5e;
		s->trace_id[12] = (uint8_t)(id >> 24);
		s->trace_id[13] = (uint8_t)(id >> 16);
		s->trace_id[14] = (uint8_t)(id >> 8);
		s->trace_id[15] = (uint8_t)id;
		memcpy(s->span_id + 4, s->trace_id + 12, 4);
		s->name = "op";
		s->service_name = t->service;
		s->service_namespace = t->ns;
		s->k8s_namespace = t->k8s_ns;
		s->source = (enum otlp_source)t->source;
		s->kind = t->kind;
		s->start_unix_nano =
			(uint64_t)(from_ms + i * t->step_ms) * 1000000u +
			(uint64_t)(id % 997) * 1009u + 77u;
		s->end_unix_nano = s->start_unix_nano + d;
		s->http_method = t->http_method;
		s->http_status = t->http_status > 0 ? t->http_status : -1;
		s->rpc_system = t->rpc_system;
		s->grpc_status = t->rpc_system != NULL ? t->grpc_status : -1;
		s->db_system = t->db_system;
		s->input_tokens = -1;
		s->output_tokens = -1;
	}
	if (store_write_spans(c, &b, &inserted, &err) != STATUS_OK)
		fail_msg("store: %s (%s)", err.client, err.detail);
	assert_int_equal(inserted, t->count);
	free(v);
}

static PGresult *
sql(struct pg_conn *c, const char *text, int n, const char *const *v)
{
	PGresult *res = NULL;
	struct pg_error err;

	if (pg_query(c, text, n, v, &res, &err) != STATUS_OK)
		fail_msg("sql: %s (%s)\n%s", err.client, err.detail, text);
	return res;
}

static void
ts_text(int64_t ms, char *buf, size_t cap)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d.%03d+00",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 2, .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	struct pg_conn *c;
	char err[512];
	PGconn *pq;
	PGresult *res;
	int applied, done = -1, pending = -1;

	(void)state;
	log_set_level(LOG_LEVEL_WARN);
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
	    pg_pool_wait_ready(pool, 10000, &perr) != STATUS_OK)
		return -1;

	base_ms = wall_ms();
	hour_ms = base_ms - base_ms % HOUR_MS;
	c = conn();
	for (size_t i = 0; i < ARRAY_LEN(batches); i++)
		write_batch(c, &batches[i], hour_ms + batches[i].start_ms);
	/* "ghost": rolled up, then deleted from spans */
	write_batch(c,
		    &(struct batch){"ghost", "shop", NULL, OT, 2, "GET", 200,
				    NULL, -1, NULL, 5,
				    H - 5 * HOUR_MS + 2 * MIN_MS, 1000},
		    hour_ms - 5 * HOUR_MS + 2 * MIN_MS);
	/* every mark older than 60 s, so that refresh takes them */
	PQclear(sql(c,
		    "WITH d AS (DELETE FROM span_rollup_dirty "
		    "RETURNING period) INSERT INTO span_rollup_dirty "
		    "(period, slot) SELECT DISTINCT period, 0 FROM d",
		    0, NULL));
	PQclear(sql(c,
		    "WITH d AS (DELETE FROM span_rollup_minute_dirty "
		    "RETURNING period) INSERT INTO span_rollup_minute_dirty "
		    "(period, slot) SELECT DISTINCT period, 0 FROM d",
		    0, NULL));
	if (rollup_refresh(c, 0, &done, &pending, &perr) != STATUS_OK ||
	    done < 3) {
		fprintf(stderr, "rollup_refresh: %s %s (done %d)\n",
			perr.client, perr.detail, done);
		pg_release(c);
		return -1;
	}
	PQclear(sql(c, "DELETE FROM spans WHERE service_name = 'ghost'", 0,
		    NULL));
	res = sql(c,
		  "SELECT count(*) FROM span_rollup "
		  "WHERE service_name = 'ghost'",
		  0, NULL);
	if (strcmp(PQgetvalue(res, 0, 0), "0") == 0) {
		fprintf(stderr, "ghost was not rolled up\n");
		PQclear(res);
		pg_release(c);
		return -1;
	}
	PQclear(res);
	/* after the refresh: a late span in H-4 (dirty again), the tail */
	write_batch(c, &late_batch, hour_ms + late_batch.start_ms);
	for (size_t i = 0; i < ARRAY_LEN(tail_batches); i++)
		write_batch(c, &tail_batches[i], base_ms - 20 * MIN_MS);
	pg_release(c);
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

/* ---- comparing with SQL ------------------------------------------------- */

/* Per service over the raw span columns (not the span_calls view): a
 * request is an HTTP or gRPC SERVER span, an error an HTTP one with status
 * >= 500 or a gRPC one with a status code other than 0; requests, errors
 * and p95 are those of the source with the most requests (eBPF on a tie),
 * sources and last seen over every span. */
#define REQ "kind = 2 AND (rpc_system = 'grpc' OR http_method IS NOT NULL)"
static const char want_sql[] =
	"WITH s AS (SELECT * FROM spans WHERE start_time >= $1::timestamptz "
	"AND start_time < $2::timestamptz), "
	"a AS (SELECT service_name, string_agg(DISTINCT source, ',' ORDER BY "
	"source) AS src, "
	"(extract(epoch FROM max(start_time)) * 1000000)::bigint AS last "
	"FROM s GROUP BY 1), "
	"q AS (SELECT DISTINCT ON (service_name) * FROM (SELECT service_name, "
	"source, count(*) FILTER (WHERE " REQ ") AS req, "
	"count(*) FILTER (WHERE kind = 2 AND ((rpc_system = 'grpc' "
	"AND coalesce(rpc_grpc_status_code, 0) <> 0) OR (rpc_system IS "
	"DISTINCT FROM 'grpc' AND http_method IS NOT NULL "
	"AND http_status_code >= 500))) AS err, "
	"coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) "
	"FILTER (WHERE " REQ "), 0) AS p95 FROM s GROUP BY 1, 2) x "
	"ORDER BY service_name, req DESC, source) "
	"SELECT a.service_name, a.src, a.last, coalesce(q.req, 0), "
	"coalesce(q.err, 0), coalesce(q.p95, 0) FROM a "
	"LEFT JOIN q USING (service_name) ORDER BY 1";

static const char *
ns_of(const char *service)
{
	for (size_t i = 0; i < ARRAY_LEN(namespaces); i++)
		if (strcmp(namespaces[i].service, service) == 0)
			return namespaces[i].ns;
	return NULL;
}

/* Runs servicequery_list and checks every row against the SQL; returns
 * the services listed, in order, joined by ','. */
static void
check(int64_t from_ms, int64_t to_ms, const char *ns, bool want_rollup,
      const char *want_order)
{
	struct servicequery_filter f = {from_ms, to_ms, ns};
	struct servicequery_result *r = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;
	char from[48], to[48], order[256] = "";
	const char *v[2] = {from, to};
	PGresult *res;
	size_t matched = 0;

	if (servicequery_list(c, &f, wall_ms(), &r, &err) != STATUS_OK)
		fail_msg("servicequery_list: %s (%s)", err.client, err.detail);
	assert_int_equal(r->rollup, want_rollup);
	assert_false(r->truncated);
	ts_text(from_ms, from, sizeof(from));
	ts_text(to_ms, to, sizeof(to));
	res = sql(c, want_sql, 2, v);
	for (int i = 0; i < PQntuples(res); i++) {
		const char *name = PQgetvalue(res, i, 0);
		const char *src = PQgetvalue(res, i, 1);
		const struct servicequery_service *s = NULL;
		unsigned sources = 0;
		double p95 = strtod(PQgetvalue(res, i, 5), NULL) / 1e6;

		if (ns != NULL && strcmp(ns_of(name), ns) != 0)
			continue;
		for (size_t k = 0; k < r->n; k++)
			if (strcmp(r->services[k].service, name) == 0)
				s = &r->services[k];
		if (s == NULL)
			fail_msg("%s is not listed", name);
		matched++;
		sources |= strstr(src, "ebpf") ? SERVICEQUERY_EBPF : 0;
		sources |= strstr(src, "otlp") ? SERVICEQUERY_OTLP : 0;
		assert_int_equal(s->sources, sources);
		assert_non_null(s->ns);
		assert_string_equal(s->ns, ns_of(name));
		assert_int_equal(s->last_seen_us,
				 strtoll(PQgetvalue(res, i, 2), NULL, 10));
		assert_int_equal(s->requests,
				 strtoull(PQgetvalue(res, i, 3), NULL, 10));
		assert_int_equal(s->errors,
				 strtoull(PQgetvalue(res, i, 4), NULL, 10));
		/* rollups: within 0.5%; exact: to float noise */
		if (fabs(s->p95_ms - p95) > p95 * (want_rollup ? 0.005 : 1e-9))
			fail_msg("%s: p95 %.6f ms, SQL %.6f ms", name,
				 s->p95_ms, p95);
	}
	PQclear(res);
	assert_int_equal(r->n, matched);
	for (size_t k = 0; k < r->n; k++) {
		const struct servicequery_service *s = &r->services[k];

		if (k > 0)
			assert_true(
				r->services[k - 1].requests > s->requests ||
				(r->services[k - 1].requests == s->requests &&
				 strcmp(r->services[k - 1].service,
					s->service) < 0));
		snprintf(order + strlen(order), sizeof(order) - strlen(order),
			 "%s%s", k > 0 ? "," : "", s->service);
	}
	assert_string_equal(order, want_order);
	servicequery_free(r);
	pg_release(c);
}

/* ---- tests -------------------------------------------------------------- */

/* 20 hours: rollup rows for H-5..H-3 (H-4 dirty again: read raw), the
 * head, the tail; ghost (rolled up, no spans) is not listed; beta has no
 * requests; gamma is older. */
static void
test_rollup_path(void **state)
{
	(void)state;
	check(hour_ms - 20 * HOUR_MS + 30 * MIN_MS, base_ms, NULL, true,
	      "alpha,delta,beta");
}

/* The dirty hour is really read raw: the late spans count. */
static void
test_dirty_hour_counts(void **state)
{
	struct servicequery_filter f = {hour_ms - 6 * HOUR_MS,
					hour_ms - 2 * HOUR_MS, "shop"};
	struct servicequery_result *r = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	assert_int_equal(servicequery_list(c, &f, wall_ms(), &r, &err),
			 STATUS_OK);
	assert_true(r->rollup);
	assert_int_equal(r->n, 1);
	/* 140 request rows over both sources (60 + 7 + 2 + 5 + 20 + 4 + 3 +
	 * 30 + 3 + the 6 late ones), 20 of them errors (7 + 4 (gRPC 14) + 3
	 * + 6 late); a service's requests are its busiest source's: 107
	 * and 17 of them (check() below compares with want_sql) */
	assert_int_equal(r->services[0].requests, 107);
	assert_int_equal(r->services[0].errors, 17);
	servicequery_free(r);
	pg_release(c);
	check(hour_ms - 6 * HOUR_MS, hour_ms - 2 * HOUR_MS, NULL, true,
	      "alpha,delta,beta");
}

/* A request count of alpha's OTLP calls over [from, to), from the list. */
static uint64_t
alpha_requests(int64_t from_ms, int64_t to_ms)
{
	struct servicequery_filter f = {from_ms, to_ms, "shop"};
	struct servicequery_result *r = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;
	uint64_t n;

	assert_int_equal(servicequery_list(c, &f, wall_ms(), &r, &err),
			 STATUS_OK);
	assert_true(r->rollup);
	assert_int_equal(r->n, 1);
	assert_string_equal(r->services[0].service, "alpha");
	n = r->services[0].requests;
	servicequery_free(r);
	pg_release(c);
	return n;
}

/*
 * Partial hours at the ends come from minute rows (and raw partial
 * minutes), as do the minutes of the dirty hour H-4; a clean hour's minute
 * rows are not read.  Shown with a row of 1000 made-up requests put in
 * span_rollup_minute and taken out again.
 */
static void
test_minute_rows(void **state)
{
	int64_t from = hour_ms - 5 * HOUR_MS + 30 * MIN_MS + 15000,
		to = hour_ms - 2 * HOUR_MS + 10 * MIN_MS + 30000;
	char at[48];
	const char *v[1] = {at};
	uint64_t before;
	struct pg_conn *c;
	static const char fake[] =
		"INSERT INTO span_rollup_minute VALUES ($1::timestamptz, "
		"'alpha', 'otlp', 'http', '/made-up', 'GET', 200, 1000, '{5}', "
		"'{1000}')";
	static const struct {
		const char *what;
		int64_t minute; /* from hour_ms */
		uint64_t added;
	} cases[] = {
		{"the head's minutes", -5 * HOUR_MS + 40 * MIN_MS, 1000},
		{"the dirty hour's minutes", -4 * HOUR_MS + 40 * MIN_MS, 1000},
		{"a clean hour's minutes", -3 * HOUR_MS + 40 * MIN_MS, 0},
		{"the tail's minutes", -2 * HOUR_MS + 5 * MIN_MS, 1000},
		{"the raw partial minute at the head",
		 -5 * HOUR_MS + 30 * MIN_MS, 0},
	};

	(void)state;
	check(from, to, NULL, true, "alpha,delta,beta");
	before = alpha_requests(from, to);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint64_t got;

		ts_text(hour_ms + cases[i].minute, at, sizeof(at));
		c = conn();
		PQclear(sql(c, fake, 1, v));
		pg_release(c);
		got = alpha_requests(from, to);
		c = conn();
		PQclear(sql(c,
			    "DELETE FROM span_rollup_minute WHERE k1 = "
			    "'/made-up'",
			    0, NULL));
		pg_release(c);
		if (got != before + cases[i].added)
			fail_msg("%s: %llu requests, want %llu", cases[i].what,
				 (unsigned long long)got,
				 (unsigned long long)(before + cases[i].added));
	}
}

/* Less than a whole settled hour: exact. */
static void
test_exact_path(void **state)
{
	(void)state;
	check(base_ms - 40 * MIN_MS, base_ms + 1000, NULL, false, "alpha,beta");
	check(hour_ms - 5 * HOUR_MS + 10 * MIN_MS,
	      hour_ms - 5 * HOUR_MS + 55 * MIN_MS, NULL, false, "alpha,delta");
}

/* Two days: gamma too; eBPF only. */
static void
test_wide_range(void **state)
{
	(void)state;
	check(base_ms - 48 * HOUR_MS, base_ms, NULL, true,
	      "alpha,delta,gamma,beta");
}

static void
test_namespace_filter(void **state)
{
	struct servicequery_filter f = {base_ms - 48 * HOUR_MS, base_ms,
					"nope"};
	struct servicequery_result *r = NULL;
	struct pg_conn *c;
	struct pg_error err;

	(void)state;
	check(base_ms - 48 * HOUR_MS, base_ms, "shop", true, "alpha");
	check(base_ms - 48 * HOUR_MS, base_ms, "kns", true, "beta");
	/* delta's newest span (eBPF) has no namespace: the OTLP one's */
	check(base_ms - 48 * HOUR_MS, base_ms, "pay", true, "delta");
	c = conn();
	assert_int_equal(servicequery_list(c, &f, wall_ms(), &r, &err),
			 STATUS_OK);
	assert_int_equal(r->n, 0);
	servicequery_free(r);
	pg_release(c);
}

static void
test_empty_and_bad_ranges(void **state)
{
	struct servicequery_filter empty = {base_ms - 100 * 24 * HOUR_MS,
					    base_ms - 99 * 24 * HOUR_MS, NULL};
	struct servicequery_filter bad = {base_ms, base_ms, NULL};
	struct servicequery_result *r = (struct servicequery_result *)&r;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	assert_int_equal(servicequery_list(c, &empty, wall_ms(), &r, &err),
			 STATUS_OK);
	assert_int_equal(r->n, 0);
	servicequery_free(r);
	r = (struct servicequery_result *)&r;
	assert_int_equal(servicequery_list(c, &bad, wall_ms(), &r, &err),
			 STATUS_INVALID);
	assert_null(r);
	assert_string_equal(err.sqlstate, "");
	assert_non_null(strstr(err.client, "empty"));
	servicequery_free(NULL);
	pg_release(c);
}

/*
 * Dirty minutes are read raw one run of consecutive minutes at a time:
 * hour H-60h, rolled up, then late spans in minutes 2 and 3 (one run) and
 * 7 (another); the clean minutes around them come from their minute rows.
 * A run that ended a minute early would lose late spans, one that went a
 * minute too far would count minute 4 twice; check() compares with SQL.
 */
static void
test_dirty_runs(void **state)
{
	const int64_t h = hour_ms - 60 * HOUR_MS;
	char at[48];
	const char *v[1] = {at};
	struct pg_conn *c = conn();
	int done = -1;
	struct pg_error err;

	(void)state;
	ts_text(h, at, sizeof(at));
	write_batch(c,
		    &(struct batch){"alpha", "shop", "k-shop", OT, 2, "GET",
				    200, NULL, -1, NULL, 40, 0, 15000},
		    h);
	PQclear(sql(
		c,
		"WITH d AS (DELETE FROM span_rollup_dirty WHERE period = "
		"$1::timestamptz RETURNING period) INSERT INTO "
		"span_rollup_dirty (period, slot) SELECT DISTINCT period, 0 "
		"FROM d",
		1, v));
	PQclear(sql(c,
		    "WITH d AS (DELETE FROM span_rollup_minute_dirty WHERE "
		    "period >= $1::timestamptz AND period < $1::timestamptz + "
		    "interval '1 hour' RETURNING period) INSERT INTO "
		    "span_rollup_minute_dirty (period, slot) SELECT DISTINCT "
		    "period, 0 FROM d",
		    1, v));
	assert_int_equal(rollup_refresh(c, 0, &done, NULL, &err), STATUS_OK);
	assert_true(done >= 2);
	write_batch(c,
		    &(struct batch){"alpha", "shop", "k-shop", OT, 2, "GET",
				    500, NULL, -1, NULL, 4, 0, 30000},
		    h + 2 * MIN_MS);
	write_batch(c,
		    &(struct batch){"alpha", "shop", "k-shop", OT, 2, "GET",
				    500, NULL, -1, NULL, 2, 0, 30000},
		    h + 7 * MIN_MS);
	pg_release(c);
	check(h - HOUR_MS, h + 2 * HOUR_MS, NULL, true, "alpha");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rollup_path),
		cmocka_unit_test(test_dirty_hour_counts),
		cmocka_unit_test(test_minute_rows),
		cmocka_unit_test(test_exact_path),
		cmocka_unit_test(test_wide_range),
		cmocka_unit_test(test_namespace_filter),
		cmocka_unit_test(test_empty_and_bad_ranges),
		/* last: it refreshes the rollups again */
		cmocka_unit_test(test_dirty_runs),
	};

	return cmocka_run_group_tests_name("servicequery", tests, group_setup,
					   group_teardown);
}

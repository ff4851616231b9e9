/*
 * test_resourcequery.c - unit tests for lib/telemetry/resourcequery in a
 * migrated throwaway PostgreSQL holding spans written with lib/otlp/store
 * (the receiver's write path): services and workloads (a deployment, a
 * statefulset from the resource attributes, a bare host, a service with
 * none), their versions, pods, hosts and sources, requests in counted once
 * per span id, all compared with this test's own SQL over the spans; the
 * detail's edges (those of meshquery's graph), routes, last error; the
 * namespace filter; an unknown name and a bad range; and the rollup path
 * (resource_rollup_minute, refreshed by lib/telemetry/rollup) equal to
 * the raw spans over a range with edges mid-minute and a dirty minute.
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
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/pg.h"
#include "storetest.h"
#include "telemetry/meshquery.h"
#include "telemetry/resourcequery.h"
#include "telemetry/rollup.h"

#define MIN_MS (60LL * 1000)

static struct storetest store;
static int64_t now_ms;

/* A resource as its spans carry it. */
struct res {
	const char *service, *ns, *version, *deployment, *pod, *host;
	const char *resource_json; /* k8s.statefulset.name, for one */
};

static const struct res WEB = {"web",	"shop",	  "v1", "web-deploy",
			       "web-1", "node-a", NULL};
static const struct res API1 = {"api",	 "shop",   "v2", "api-deploy",
				"api-1", "node-b", NULL};
static const struct res API2 = {"api",	 "shop",   "v3", "api-deploy",
				"api-2", "node-c", NULL};
static const struct res STORE = {"store",
				 "data",
				 "v1",
				 NULL,
				 "store-0",
				 "node-a",
				 "{\"service.name\": \"store\", "
				 "\"k8s.statefulset.name\": \"store-sts\"}"};
static const struct res BATCH = {"batch", NULL, NULL, NULL, NULL, "vm-7", NULL};

static uint32_t next_id = 1;

/* One span: trace t, span s, parent p (0: none), seconds ago, kind,
 * HTTP status (0: none), source; db: a database client call. */
static void
put(struct pg_conn *c, const struct res *r, int t, int s, int p, int ago,
    int kind, int http, enum otlp_source src, const char *db,
    const char *message)
{
	struct otlp_span v = {0};
	struct otlp_batch b = {.spans = &v, .n_spans = 1};
	struct pg_error err;
	int64_t inserted = -1;
	uint64_t start = (uint64_t)(now_ms - ago * 1000LL) * 1000000u;

	v.trace_id[0] = 0x7e;
	v.trace_id[15] = (uint8_t)t;
	v.span_id[0] = (uint8_t)t;
	v.span_id[7] = (uint8_t)s;
	v.has_parent = p != 0;
	if (p != 0) {
		v.parent_span_id[0] = (uint8_t)t;
		v.parent_span_id[7] = (uint8_t)p;
	}
	v.service_name = r->service;
	v.service_namespace = r->ns;
	v.service_version = r->version;
	v.k8s_deployment = r->deployment;
	v.k8s_pod = r->pod;
	v.host_name = r->host;
	v.resource_json = r->resource_json;
	v.name = db != NULL ? "SELECT" : "GET /orders";
	v.kind = kind;
	v.start_unix_nano = start;
	v.end_unix_nano = start + (uint64_t)(5 + next_id++ % 40) * 1000000u;
	v.source = src;
	v.status_message = message;
	v.status_code = message != NULL ? 2 : 0;
	v.http_method = http > 0 ? "GET" : NULL;
	v.http_route = http > 0 ? "/orders" : NULL;
	v.http_status = http > 0 ? http : -1;
	v.grpc_status = -1;
	v.db_system = db;
	v.db_operation = db != NULL ? "SELECT" : NULL;
	v.input_tokens = -1;
	v.output_tokens = -1;
	if (store_write_spans(c, &b, &inserted, &err) != STATUS_OK)
		fail_msg("store: %s (%s)", err.client, err.detail);
	assert_int_equal(inserted, 1);
}

#define OT OTLP_SOURCE_OTLP
#define EB OTLP_SOURCE_EBPF

static int
group_setup(void **state)
{
	struct pg_conn *c = storetest_setup(&store, state, &now_ms);

	if (c == NULL)
		return -1;
	/* web calls api 4 times: api-1 answers 503 once (seen by eBPF too:
	 * one request), api-2 answers 200 three times, 404 once more */
	for (int t = 1; t <= 5; t++) {
		const struct res *api = t <= 2 ? &API1 : &API2;
		int code = t == 1 ? 503 : t == 5 ? 404 : 200;

		put(c, &WEB, t, 1, 0, 60 * t, 3, code, OT, NULL, NULL);
		put(c, api, t, 2, 1, 60 * t, 2, code, OT, NULL, NULL);
		if (t == 1)
			put(c, api, t, 2, 1, 60 * t, 2, code, EB, NULL, NULL);
		/* api queries store (a service of its own, a statefulset) */
		put(c, api, t, 3, 2, 60 * t, 3, 0, OT, "postgresql", NULL);
		put(c, &STORE, t, 4, 3, 60 * t, 2, 0, OT, NULL,
		    t == 2 ? "deadlock detected" : NULL);
	}
	/* api calls a database nobody instrumented (a leaf) */
	put(c, &API1, 6, 1, 2, 30, 3, 0, OT, "redis", NULL);
	/* batch: internal spans on a bare host, eBPF only */
	put(c, &BATCH, 7, 1, 0, 90, 1, 0, EB, NULL, NULL);
	/* an hour ago: outside the range */
	put(c, &WEB, 8, 1, 0, 3600, 3, 200, OT, NULL, NULL);
	put(c, &API1, 8, 2, 1, 3600, 2, 500, OT, NULL, NULL);
	pg_release(c);
	return 0;
}

static struct resourcequery_filter
filter(enum resourcequery_type type, const char *name)
{
	return (struct resourcequery_filter){.from_ms = now_ms - 10 * MIN_MS,
					     .to_ms = now_ms + 1000,
					     .now_ms = now_ms + 1000,
					     .type = type,
					     .name = name};
}

static struct resourcequery_list *
list(const struct resourcequery_filter *f)
{
	struct pg_conn *c = storetest_conn(&store);
	struct resourcequery_list *l = NULL;
	struct pg_error err;

	if (resourcequery_list(c, f, &l, &err) != STATUS_OK)
		fail_msg("resourcequery_list: %s (%s)", err.client, err.detail);
	pg_release(c);
	return l;
}

static const struct resourcequery_item *
item(const struct resourcequery_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->items[i].name, name) == 0)
			return &l->items[i];
	return NULL;
}

/* names as "a,b" */
static const char *
joined(const struct resourcequery_names *n, char *out, size_t cap)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n->n && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%s",
					i ? "," : "", n->v[i]);
	return out;
}

/* One text value of SQL over the spans of the last 10 minutes (the
 * statement's $1 is the range's start). */
static char *
sql1(const char *text)
{
	struct pg_conn *c = storetest_conn(&store);
	char from[PG_TS_TEXT_MAX];
	const char *v[1] = {from};
	PGresult *res = NULL;
	struct pg_error err;
	char *out;

	pg_ts_text(now_ms - 10 * MIN_MS, from, sizeof(from));
	if (pg_query(c, text, 1, v, &res, &err) != STATUS_OK)
		fail_msg("sql: %s (%s)\n%s", err.client, err.detail, text);
	out = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	pg_release(c);
	return out;
}

/* The SQL's answer for each service: versions, workloads, pods, hosts,
 * and requests in (SERVER spans once per span id), errors, client
 * errors. */
#define SERVICE_SQL(svc)                                                       \
	"SELECT concat_ws('|', (SELECT coalesce(string_agg(DISTINCT "          \
	"service_version, ','), '') FROM spans WHERE service_name = '" svc     \
	"' AND start_time >= "                                                 \
	"$1::timestamptz), (SELECT coalesce(string_agg(DISTINCT "              \
	"coalesce(k8s_deployment_name, resource_attributes ->> "               \
	"'k8s.statefulset.name', host_name), ','), '') FROM spans WHERE "      \
	"service_name = '" svc "' AND start_time >= $1::timestamptz), "        \
	"(SELECT coalesce(string_agg(DISTINCT k8s_pod_name, ','), '') FROM "   \
	"spans WHERE "                                                         \
	"service_name = '" svc "' AND start_time >= $1::timestamptz), "        \
	"(SELECT coalesce(string_agg(DISTINCT host_name, ','), '') FROM "      \
	"spans WHERE "                                                         \
	"service_name = '" svc "' AND start_time >= $1::timestamptz), "        \
	"(SELECT count(DISTINCT span_id) || ',' || count(DISTINCT span_id) "   \
	"FILTER (WHERE sextant_span_outcome(kind, status_code, "               \
	"http_status_code, rpc_grpc_status_code) = 1) || ',' || "              \
	"count(DISTINCT span_id) FILTER (WHERE sextant_span_outcome(kind, "    \
	"status_code, http_status_code, rpc_grpc_status_code) = 2) FROM "      \
	"spans WHERE service_name = '" svc "' AND kind = 2 AND start_time >= " \
	"$1::timestamptz))"

static void
check_service(const struct resourcequery_list *l, const char *svc,
	      const char *sql)
{
	const struct resourcequery_item *it = item(l, svc);
	char *want = sql1(sql), got[512], v[128], w[128], p[128], h[128];

	assert_non_null(it);
	snprintf(got, sizeof(got), "%s|%s|%s|%s|%llu,%llu,%llu",
		 joined(&it->seen[RESOURCEQUERY_VERSIONS], v, sizeof(v)),
		 joined(&it->seen[RESOURCEQUERY_WORKLOADS], w, sizeof(w)),
		 joined(&it->seen[RESOURCEQUERY_PODS], p, sizeof(p)),
		 joined(&it->seen[RESOURCEQUERY_HOSTS], h, sizeof(h)),
		 (unsigned long long)it->in_requests,
		 (unsigned long long)it->in_errors,
		 (unsigned long long)it->in_client_errors);
	assert_string_equal(got, want);
	free(want);
}

static void
test_services(void **state)
{
	struct resourcequery_filter f = filter(RESOURCEQUERY_SERVICE, NULL);
	struct resourcequery_list *l = list(&f);
	const struct resourcequery_item *it;

	(void)state;
	assert_int_equal(l->n, 4); /* api, batch, store, web */
	assert_string_equal(l->items[0].name, "api");
	assert_string_equal(l->items[3].name, "web");
	check_service(l, "api", SERVICE_SQL("api"));
	check_service(l, "web", SERVICE_SQL("web"));
	check_service(l, "store", SERVICE_SQL("store"));
	check_service(l, "batch", SERVICE_SQL("batch"));
	/* api: 5 requests (the one eBPF saw too counts once), 1 error, 1
	 * client error; out: 5 calls to store, 1 to redis */
	it = item(l, "api");
	assert_string_equal(it->ns, "shop");
	assert_int_equal(it->in_requests, 5);
	assert_int_equal(it->in_errors, 1);
	assert_int_equal(it->in_client_errors, 1);
	assert_int_equal(it->sources, RESOURCEQUERY_EBPF | RESOURCEQUERY_OTLP);
	assert_int_equal(it->out_requests, 6);
	assert_int_equal(it->seen[RESOURCEQUERY_VERSIONS].total, 2);
	/* 1 error in 5: UNHEALTHY at Kiali's 10% */
	assert_int_equal(resourcequery_health(&health_defaults, it),
			 HEALTH_UNHEALTHY);
	/* web: no requests in, its 5 calls out (1 error, 1 client error) */
	it = item(l, "web");
	assert_int_equal(it->in_requests, 0);
	assert_int_equal(it->out_requests, 5);
	assert_int_equal(it->out_errors, 1);
	assert_int_equal(resourcequery_health(&health_defaults, it),
			 HEALTH_UNHEALTHY);
	/* batch: no calls at all; eBPF only; no namespace */
	it = item(l, "batch");
	assert_int_equal(resourcequery_health(&health_defaults, it), HEALTH_NA);
	assert_int_equal(it->sources, RESOURCEQUERY_EBPF);
	assert_string_equal(it->ns, "");
	resourcequery_list_free(l);
}

static void
test_workloads(void **state)
{
	struct resourcequery_filter f = filter(RESOURCEQUERY_WORKLOAD, NULL);
	struct resourcequery_list *l = list(&f);
	char *want =
		sql1("SELECT string_agg(w, ',' ORDER BY w COLLATE \"C\") FROM "
		     "(SELECT DISTINCT coalesce(k8s_deployment_name, "
		     "resource_attributes ->> 'k8s.statefulset.name', "
		     "host_name) AS w "
		     "FROM spans WHERE start_time >= $1::timestamptz) x");
	char got[256] = "", names[128];
	const struct resourcequery_item *it;

	(void)state;
	for (size_t i = 0; i < l->n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			 i ? "," : "", l->items[i].name);
	assert_string_equal(got, want);
	assert_string_equal(got, "api-deploy,store-sts,vm-7,web-deploy");
	free(want);
	it = item(l, "api-deploy");
	assert_string_equal(
		joined(&it->seen[RESOURCEQUERY_PODS], names, sizeof(names)),
		"api-1,api-2");
	assert_string_equal(
		joined(&it->seen[RESOURCEQUERY_SERVICES], names, sizeof(names)),
		"api");
	assert_int_equal(it->in_requests, 5);
	it = item(l, "store-sts");
	assert_string_equal(
		joined(&it->seen[RESOURCEQUERY_PODS], names, sizeof(names)),
		"store-0");
	assert_string_equal(it->ns, "data");
	/* the graph's workload nodes gave the calls out */
	assert_int_equal(item(l, "web-deploy")->out_requests, 5);
	resourcequery_list_free(l);
}

static void
test_namespaces(void **state)
{
	struct resourcequery_filter f = filter(RESOURCEQUERY_SERVICE, NULL);
	struct resourcequery_list *l;

	(void)state;
	f.ns = (const char *const[]){"data"};
	f.nns = 1;
	l = list(&f);
	assert_int_equal(l->n, 1);
	assert_string_equal(l->items[0].name, "store");
	resourcequery_list_free(l);
}

static struct resourcequery_detail *
detail(const struct resourcequery_filter *f, int want)
{
	struct pg_conn *c = storetest_conn(&store);
	struct resourcequery_detail *d = (void *)1;
	struct pg_error err;
	int rc = resourcequery_detail(c, f, &d, &err);

	if (rc != want)
		fail_msg("resourcequery_detail: %d %s (%s)", rc, err.client,
			 err.detail);
	pg_release(c);
	return d;
}

static void
test_detail(void **state)
{
	struct resourcequery_filter f = filter(RESOURCEQUERY_SERVICE, "api");
	struct resourcequery_detail *d = detail(&f, STATUS_OK);
	const struct meshquery_result *g = d->list->graph;
	const struct meshquery_edge *e;
	char *want;

	(void)state;
	assert_string_equal(d->item->name, "api");
	/* in: web -> api, 5 calls (1 error, 1 client error) */
	assert_int_equal(d->n_in, 1);
	e = &g->edges[d->in[0]];
	assert_string_equal(g->nodes[e->src].name, "web");
	assert_int_equal(e->requests, 5);
	assert_int_equal(e->errors, 1);
	assert_int_equal(meshquery_edge_health(NULL, e), HEALTH_UNHEALTHY);
	/* out: store (5) first, then the redis leaf (1) */
	assert_int_equal(d->n_out, 2);
	assert_string_equal(g->nodes[g->edges[d->out[0]].dst].name, "store");
	assert_int_equal(g->edges[d->out[0]].requests, 5);
	assert_true(g->nodes[g->edges[d->out[1]].dst].leaf);
	assert_string_equal(g->nodes[g->edges[d->out[1]].dst].name, "redis");
	/* routes: GET /orders (5, from OTLP which saw the most) and the
	 * SELECTs (6) */
	assert_int_equal(d->n_routes, 2);
	assert_string_equal(d->routes[0].row->k1, "SELECT");
	assert_int_equal(d->routes[0].row->requests, 6);
	assert_string_equal(d->routes[1].row->k1, "/orders");
	assert_int_equal(d->routes[1].row->requests, 5);
	assert_int_equal(d->routes[1].row->errors, 1);
	/* the last error: the 503, its trace as SQL finds it */
	want = sql1("SELECT encode(trace_id, 'hex') FROM spans WHERE "
		    "service_name = 'api' AND http_status_code >= 500 AND "
		    "start_time >= $1::timestamptz LIMIT 1");
	assert_true(d->last_error.found);
	assert_string_equal(d->last_error.trace_id, want);
	assert_int_equal(d->last_error.http_status, 503);
	free(want);
	resourcequery_detail_free(d);

	/* store: the status message of its failed span */
	f.name = "store";
	d = detail(&f, STATUS_OK);
	assert_true(d->last_error.found);
	assert_string_equal(d->last_error.message, "deadlock detected");
	assert_int_equal(d->n_in, 1);
	resourcequery_detail_free(d);

	/* a workload: api-deploy's routes are api's */
	f.type = RESOURCEQUERY_WORKLOAD;
	f.name = "api-deploy";
	d = detail(&f, STATUS_OK);
	assert_int_equal(d->item->seen[RESOURCEQUERY_PODS].n, 2);
	assert_int_equal(d->n_routes, 2);
	assert_string_equal(d->routes[0].service, "api");
	assert_int_equal(d->n_in, 1);
	assert_string_equal(
		d->list->graph->nodes[d->list->graph->edges[d->in[0]].src].name,
		"web-deploy");
	resourcequery_detail_free(d);
}

static void
test_not_found(void **state)
{
	struct resourcequery_filter f = filter(RESOURCEQUERY_SERVICE, "nope");

	(void)state;
	assert_null(detail(&f, STATUS_NOTFOUND));
	/* api exists, not in namespace data */
	f.name = "api";
	f.ns = (const char *const[]){"data"};
	f.nns = 1;
	assert_null(detail(&f, STATUS_NOTFOUND));
	f.nns = 0;
	f.to_ms = f.from_ms;
	assert_null(detail(&f, STATUS_INVALID));
}

static void
exec1(struct pg_conn *c, const char *sql)
{
	storetest_exec(c, sql, -1);
}

static void
assert_same_names(const struct resourcequery_names *a,
		  const struct resourcequery_names *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->total, b->total);
	for (size_t i = 0; i < a->n; i++)
		assert_string_equal(a->v[i], b->v[i]);
}

/* Every number of every item of a and b equal; how many items. */
static size_t
assert_same_list(const struct resourcequery_list *a,
		 const struct resourcequery_list *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct resourcequery_item *x = &a->items[i],
						*y = &b->items[i];

		assert_string_equal(x->name, y->name);
		assert_string_equal(x->ns, y->ns);
		assert_int_equal(x->sources, y->sources);
		assert_int_equal(x->last_seen_us, y->last_seen_us);
		assert_int_equal(x->has_error, y->has_error);
		assert_int_equal(x->last_error_us, y->last_error_us);
		assert_int_equal(x->in_requests, y->in_requests);
		assert_int_equal(x->in_errors, y->in_errors);
		assert_int_equal(x->in_client_errors, y->in_client_errors);
		assert_int_equal(x->out_requests, y->out_requests);
		for (int k = 0; k < RESOURCEQUERY_SEEN; k++)
			assert_same_names(&x->seen[k], &y->seen[k]);
	}
	return a->n;
}

/* A resource's in_requests in l (0 when absent). */
static uint64_t
in_of(const struct resourcequery_list *l, const char *name)
{
	const struct resourcequery_item *it = item(l, name);

	return it != NULL ? it->in_requests : 0;
}

/*
 * Spans 2 to 3 h ago, rolled up: the list of a range starting and ending
 * mid-minute (and mid-hour) is the same from the rollup as from the raw
 * spans (now_ms = from: nothing settled), for services and workloads,
 * with a minute written again after the refresh (dirty: read raw).
 */
static void
test_rollup_equals_raw(void **state)
{
	static const struct res *const rs[] = {&WEB, &API1, &API2, &STORE,
					       &BATCH};
	static const int codes[] = {200, 503, 404, 200, 0};
	struct resourcequery_filter f = filter(RESOURCEQUERY_SERVICE, NULL), fr;
	struct resourcequery_list *raw, *rolled;
	struct pg_conn *c = storetest_conn(&store);
	struct pg_error err;
	int done = 0, pending = 0;

	(void)state;
	for (int i = 0; i < 40; i++) {
		const struct res *r = rs[i % 5];
		int ago = 12010 - i * 127, t = 40 + i;
		int kind = i % 7 == 6 ? 5 : i % 5 == 4 ? 1 : 2;

		put(c, r, t, 1, 0, ago, kind, codes[i % 5],
		    i % 4 == 0 ? EB : OT, NULL, i % 9 == 2 ? "boom" : NULL);
		/* both sources saw some: counted once, the OTLP copy's */
		if (i % 3 == 0)
			put(c, r, t, 1, 0, ago, kind, codes[i % 5],
			    i % 4 == 0 ? OT : EB, NULL, NULL);
		/* a client call out of it */
		put(c, r, t, 2, 1, ago - 1, 3, 200, OT, NULL, NULL);
	}
	if (rollup_refresh_fenced(c, &done, &pending, &err) != STATUS_OK)
		fail_msg("rollup_refresh_fenced: %s (%s)", err.client,
			 err.detail);
	assert_true(done > 0);
	/* written after the refresh beside api's span of i = 21: its minute is
	 * dirty, read raw (not from its stale row as well) */
	put(c, &API2, 90, 1, 0, 9343, 2, 503, OT, NULL, "late");
	f.from_ms = now_ms - 12000 * 1000LL + 30500;
	f.to_ms = now_ms - 7205 * 1000LL - 250;
	f.now_ms = now_ms;
	for (int type = 0; type < 2; type++) {
		f.type = (enum resourcequery_type)type;
		fr = f;
		fr.now_ms = f.from_ms;
		raw = list(&fr);
		rolled = list(&f);
		/* web, api, store, batch; their workloads */
		assert_int_equal(assert_same_list(raw, rolled), 4);
		resourcequery_list_free(rolled);
		/* the rollup rows are what the rolled list read: a changed
		 * row changes it (and only it) */
		exec1(c,
		      "UPDATE resource_rollup_minute SET requests = "
		      "requests + 100 WHERE service_name = 'web' AND "
		      "source = 'otlp' AND period = (SELECT max(period) FROM "
		      "resource_rollup_minute WHERE service_name = 'web' "
		      "AND period < now() - interval '2 hours 10 minutes')");
		rolled = list(&f);
		assert_int_equal(
			in_of(rolled, type == 0 ? "web" : "web-deploy"),
			in_of(raw, type == 0 ? "web" : "web-deploy") + 100);
		exec1(c, "UPDATE resource_rollup_minute SET requests = "
			 "requests - 100 WHERE requests >= 100");
		resourcequery_list_free(raw);
		resourcequery_list_free(rolled);
	}
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_workloads),
		cmocka_unit_test(test_namespaces),
		cmocka_unit_test(test_detail),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_rollup_equals_raw),
	};

	return cmocka_run_group_tests_name("resourcequery", db, group_setup,
					   storetest_teardown);
}

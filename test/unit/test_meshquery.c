/*
 * test_meshquery.c - unit tests for lib/telemetry/meshquery: Kiali's mesh
 * health summary on crafted graphs (node health at the tolerance
 * boundaries, availability, namespace and overall status, topUnhealthy
 * ordered and cut at 10), and the graph of a known topology in a migrated
 * throwaway PostgreSQL (sync, async and leaf edges, a span both sources
 * saw counted once, a call crossing namespaces, graph types, the
 * namespace filter).
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
#include <time.h>

#include "base/log.h"
#include "pg/pg.h"
#include "storetest.h"
#include "telemetry/meshquery.h"
#include "telemetry/rollup.h"

#define MIN_MS (60LL * 1000)

static struct storetest store;
static int64_t now_ms;

/* ---- the summary, without a store ---------------------------------------- */

/* A node with calls in: requests, errors, client errors. */
#define NODE(nm, space, req, e, ce)                                            \
	{                                                                      \
		.name = nm, .ns = space, .in_requests = req, .in_errors = e,   \
		.in_client_errors = ce                                         \
	}

static void
test_node_health(void **state)
{
	static const struct {
		uint64_t req, e, ce, oe;
		enum health_status want;
	} cases[] = {
		/* errors: none healthy, any degraded, 10% unhealthy */
		{1000, 0, 0, 0, HEALTH_HEALTHY},
		{1000, 1, 0, 0, HEALTH_DEGRADED},
		{1000, 99, 0, 0, HEALTH_DEGRADED},
		{1000, 100, 0, 0, HEALTH_UNHEALTHY},
		/* client errors: 10% degraded, 20% unhealthy */
		{1000, 0, 99, 0, HEALTH_HEALTHY},
		{1000, 0, 100, 0, HEALTH_DEGRADED},
		{1000, 0, 199, 0, HEALTH_DEGRADED},
		{1000, 0, 200, 0, HEALTH_UNHEALTHY},
		/* outbound failures count too (the worse of in and out) */
		{1000, 0, 0, 100, HEALTH_UNHEALTHY},
		{0, 0, 0, 0, HEALTH_NA},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct meshquery_node n =
			NODE("a", NULL, cases[i].req, cases[i].e, cases[i].ce);

		if (cases[i].oe > 0) {
			n.out_requests = n.in_requests;
			n.out_errors = cases[i].oe;
			n.in_requests = n.in_errors = 0;
		}
		assert_int_equal(meshquery_node_health(NULL, &n),
				 cases[i].want);
	}
}

static void
test_summary(void **state)
{
	/* shop: 2 healthy, 1 degraded, 1 unhealthy (30% failed); pay: 1
	 * unhealthy (12%) of 1; a leaf, which is no entity */
	struct meshquery_node nodes[] = {
		NODE("a", "shop", 100, 0, 0), NODE("b", "shop", 100, 0, 0),
		NODE("c", "shop", 100, 1, 0), NODE("d", "shop", 100, 30, 0),
		NODE("e", "pay", 100, 12, 0), NODE("db", NULL, 100, 100, 0),
	};
	struct meshquery_result r = {.nodes = nodes, .n_nodes = 6};
	struct meshquery_summary s;

	(void)state;
	nodes[5].leaf = true;
	assert_int_equal(meshquery_summarize(&r, NULL, &s), STATUS_OK);
	assert_int_equal(s.counts.total, 5);
	assert_int_equal(s.counts.healthy, 2);
	assert_int_equal(s.counts.degraded, 1);
	assert_int_equal(s.counts.unhealthy, 2);
	/* 2 of 5 unhealthy is not more than half (5 / 2 = 2) */
	assert_string_equal(s.overall, "DEGRADED");
	assert_true(fabs(s.availability - (2 + 0.5) / 5 * 100) < 1e-9);
	assert_int_equal(s.n_ns, 2);
	assert_string_equal(s.ns[0].ns, "pay");
	assert_string_equal(s.ns[0].status, "UNHEALTHY"); /* 1 > 1 / 2 */
	assert_true(fabs(s.ns[0].availability) < 1e-9);
	assert_string_equal(s.ns[1].ns, "shop");
	/* shop: 1 of 4 unhealthy, error rate 0.31 > 0.05 */
	assert_true(fabs(s.ns[1].error_rate - 0.31) < 1e-9);
	assert_string_equal(s.ns[1].status, "UNHEALTHY");
	assert_true(fabs(s.ns[1].availability - 2.5 / 4 * 100) < 1e-9);
	assert_true(fabs(s.total_error_rate - 0.43) < 1e-9);
	assert_int_equal(s.n_top, 2);
	assert_int_equal(s.top[0], 3); /* d, 30% */
	assert_int_equal(s.top[1], 4); /* e, 12% */
	meshquery_summary_free(&s);

	/* a namespace with a degraded entity and a rate under 0.05 */
	nodes[3].in_errors = 2;
	nodes[4].in_errors = 0;
	assert_int_equal(meshquery_summarize(&r, NULL, &s), STATUS_OK);
	assert_string_equal(s.ns[1].status, "DEGRADED");
	assert_string_equal(s.ns[0].status, "HEALTHY");
	assert_string_equal(s.overall, "DEGRADED");
	assert_int_equal(s.n_top, 0);
	meshquery_summary_free(&s);
}

static void
test_top_cut(void **state)
{
	struct meshquery_node nodes[14];
	struct meshquery_result r = {.nodes = nodes, .n_nodes = 14};
	struct meshquery_summary s;
	char names[14][16];

	(void)state;
	/* 13 unhealthy with 20% + i errors, one healthy */
	for (int i = 0; i < 14; i++) {
		snprintf(names[i], sizeof(names[i]), "n%d", i);
		nodes[i] = (struct meshquery_node)NODE(names[i], "x", 100,
						       i < 13 ? 20 + i : 0, 0);
	}
	assert_int_equal(meshquery_summarize(&r, NULL, &s), STATUS_OK);
	assert_int_equal(s.counts.unhealthy, 13);
	assert_string_equal(s.overall, "UNHEALTHY"); /* 13 > 14 / 2 */
	assert_int_equal(s.n_top, MESHQUERY_TOP_UNHEALTHY);
	for (size_t i = 0; i < s.n_top; i++)
		assert_int_equal(s.top[i], 12 - i);
	meshquery_summary_free(&s);

	r.n_nodes = 0;
	assert_int_equal(meshquery_summarize(&r, NULL, &s), STATUS_OK);
	assert_string_equal(s.overall, "UNKNOWN");
	assert_true(fabs(s.availability - 100) < 1e-9);
	meshquery_summary_free(&s);
}

static void
test_graph_type(void **state)
{
	(void)state;
	assert_int_equal(meshquery_graph_type_parse("workload"),
			 MESHQUERY_WORKLOAD);
	assert_int_equal(meshquery_graph_type_parse("versionedApp"),
			 MESHQUERY_VERSIONED_APP);
	assert_int_equal(meshquery_graph_type_parse("Workload"), -1);
	assert_int_equal(meshquery_graph_type_parse(NULL), -1);
	assert_string_equal(meshquery_graph_type_name(MESHQUERY_APP), "app");
}

/* ---- the graph, from a store --------------------------------------------- */

static void
exec(struct pg_conn *c, const char *sql)
{
	storetest_exec(c, sql, now_ms);
}

/*
 * One span: trace (one hex digit, repeated), span and parent (one hex
 * digit each, repeated; parent '' for none), source, seconds before now,
 * kind, service, namespace, version, duration ms, HTTP status, attributes
 * (JSON text).  $1 is now.
 */
#define SPAN(t, s, p, src, ago, kind, svc, ns, ver, ms, code, attrs)           \
	"INSERT INTO spans (trace_id, span_id, parent_span_id, source, "       \
	"start_time, kind, service_name, service_namespace, service_version, " \
	"duration_ns, http_method, http_status_code, db_system, name, "        \
	"attributes, resource_attributes) VALUES (decode(repeat('" t           \
	"', 32), 'hex'), decode(repeat('" s "', 16), 'hex'), "                 \
	"CASE WHEN '" p "' <> '' THEN decode(repeat('" p                       \
	"', 16), 'hex') END, "                                                 \
	"'" src "', $1::timestamptz - interval '" ago " seconds', " kind       \
	", '" svc "', " ns ", " ver ", " ms " * 1000000, "                     \
	"CASE WHEN " code " > 0 THEN 'GET' END, NULLIF(" code ", 0), "         \
	"('" attrs "'::jsonb) ->> 'db.system', 'x', '" attrs "', '{}')"

static int
group_setup(void **state)
{
	struct pg_conn *c = storetest_setup(&store, state, &now_ms);

	if (c == NULL)
		return -1;
	/* trace 1: web (shop, v1) calls api (shop, v2): client span 1,
	 * server span 2 (503, 40 ms), seen by both sources; api queries
	 * postgres (leaf, 5 ms) */
	exec(c, SPAN("1", "1", "", "otlp", "60", "3", "web", "'shop'", "'v1'",
		     "50", "503", "{}"));
	exec(c, SPAN("1", "2", "1", "otlp", "60", "2", "api", "'shop'", "'v2'",
		     "40", "503", "{}"));
	exec(c, SPAN("1", "2", "1", "ebpf", "60", "2", "api", "'shop'", "'v2'",
		     "41", "503", "{}"));
	exec(c, SPAN("1", "3", "2", "otlp", "60", "3", "api", "'shop'", "'v2'",
		     "5", "0",
		     "{\"db.system\": \"postgresql\", \"db.name\": "
		     "\"orders\"}"));
	/* trace 2: web calls api again (200, 20 ms); api calls pay in
	 * another namespace (404 answered: a client error) */
	exec(c, SPAN("2", "1", "", "otlp", "120", "3", "web", "'shop'", "'v1'",
		     "30", "200", "{}"));
	exec(c, SPAN("2", "2", "1", "otlp", "120", "2", "api", "'shop'", "'v2'",
		     "20", "200", "{}"));
	exec(c, SPAN("2", "4", "2", "otlp", "120", "3", "api", "'shop'", "'v2'",
		     "9", "404", "{}"));
	exec(c, SPAN("2", "5", "4", "otlp", "120", "2", "pay", "'money'",
		     "'v1'", "8", "404", "{}"));
	/* trace 3: api produces to a queue, mail consumes (async); api's
	 * client call to an external API nobody instrumented */
	exec(c, SPAN("3", "6", "", "otlp", "180", "4", "api", "'shop'", "'v2'",
		     "1", "0", "{}"));
	exec(c, SPAN("3", "7", "6", "otlp", "170", "5", "mail", "'shop'",
		     "'v1'", "7", "0", "{}"));
	exec(c, SPAN("3", "8", "", "otlp", "180", "3", "api", "'shop'", "'v2'",
		     "70", "200", "{\"server.address\": \"api.stripe.com\"}"));
	/* trace 5: api calls ledger (money) by its Kubernetes DNS name and
	 * fails (503) with no server span answering; trace 6: api's GenAI
	 * call, with no http.* attributes */
	exec(c,
	     SPAN("5", "1", "", "otlp", "60", "3", "api", "'shop'", "'v2'", "3",
		  "503",
		  "{\"server.address\": \"ledger.money.svc.cluster.local\"}"));
	exec(c, "INSERT INTO spans (trace_id, span_id, source, start_time, "
		"kind, service_name, service_namespace, service_version, "
		"duration_ns, gen_ai_provider, gen_ai_operation, name, "
		"attributes) VALUES (decode(repeat('6', 32), 'hex'), "
		"decode(repeat('1', 16), 'hex'), 'otlp', $1::timestamptz - "
		"interval '60 seconds', 3, 'api', 'shop', 'v2', 900000000, "
		"'openai', 'chat', 'chat gpt-4o', "
		"'{\"server.address\": \"api.openai.com\"}')");
	/* trace 4: an hour ago, outside a 10-minute range */
	exec(c, SPAN("4", "1", "", "otlp", "3600", "3", "web", "'shop'", "'v1'",
		     "30", "200", "{}"));
	exec(c, SPAN("4", "2", "1", "otlp", "3600", "2", "api", "'shop'",
		     "'v2'", "20", "200", "{}"));
	/* the marks the store's writer leaves (long settled) */
	exec(c, "INSERT INTO span_rollup_dirty SELECT DISTINCT "
		"date_trunc('hour', start_time, 'UTC'), 0 FROM spans "
		"WHERE $1::timestamptz IS NOT NULL");
	exec(c, "INSERT INTO span_rollup_minute_dirty SELECT DISTINCT "
		"date_trunc('minute', start_time, 'UTC'), 0 FROM spans "
		"WHERE $1::timestamptz IS NOT NULL");
	pg_release(c);
	return 0;
}

static struct meshquery_result *
graph_in(int64_t from, int64_t to, enum meshquery_graph_type type,
	 const char *const *ns, size_t nns)
{
	struct meshquery_filter f = {.from_ms = from,
				     .now_ms = now_ms,
				     .to_ms = to,
				     .type = type,
				     .ns = ns,
				     .nns = nns};
	struct pg_conn *c = storetest_conn(&store);
	struct meshquery_result *r = NULL;
	struct pg_error err;

	if (meshquery_graph(c, &f, &r, &err) != STATUS_OK)
		fail_msg("meshquery_graph: %s (%s)", err.client, err.detail);
	pg_release(c);
	return r;
}

/* The last 10 minutes. */
static struct meshquery_result *
graph(enum meshquery_graph_type type, const char *const *ns, size_t nns)
{
	return graph_in(now_ms - 10 * MIN_MS, now_ms + 1000, type, ns, nns);
}

/* The edge src -> dst ("name" or "name (version)"), or NULL. */
static const struct meshquery_edge *
edge(const struct meshquery_result *r, const char *src, const char *dst)
{
	char s[64], d[64];

	for (size_t i = 0; i < r->n_edges; i++) {
		const struct meshquery_node *a = &r->nodes[r->edges[i].src],
					    *b = &r->nodes[r->edges[i].dst];

		snprintf(s, sizeof(s), a->version ? "%s (%s)" : "%s", a->name,
			 a->version);
		snprintf(d, sizeof(d), b->version ? "%s (%s)" : "%s", b->name,
			 b->version);
		if (strcmp(s, src) == 0 && strcmp(d, dst) == 0)
			return &r->edges[i];
	}
	return NULL;
}

static void
test_graph(void **state)
{
	struct meshquery_result *r = graph(MESHQUERY_SERVICE, NULL, 0);
	const struct meshquery_edge *e;

	(void)state;
	assert_int_equal(r->n_edges, 7);
	/* web -> api: 2 calls (the 503 once, though both sources saw it) */
	e = edge(r, "web", "api");
	assert_non_null(e);
	assert_string_equal(e->protocol, "http");
	assert_false(e->async);
	assert_int_equal(e->requests, 2);
	assert_int_equal(e->errors, 1);
	assert_int_equal(e->client_errors, 0);
	/* P50 of 20 and 40 ms is 30, P95 39: within the buckets' 0.5% */
	assert_true(fabs(e->p50_ms - 30) < 30 * 0.005);
	assert_true(fabs(e->p95_ms - 39) < 39 * 0.005);
	assert_int_equal(meshquery_edge_health(NULL, e), HEALTH_UNHEALTHY);
	assert_ptr_equal(e, &r->edges[0]); /* the busiest first */
	/* api -> pay, across namespaces: the server's 404, a client error */
	e = edge(r, "api", "pay");
	assert_non_null(e);
	assert_int_equal(e->requests, 1);
	assert_int_equal(e->client_errors, 1);
	assert_int_equal(e->errors, 0);
	assert_string_equal(r->nodes[e->dst].ns, "money");
	/* async: api -> mail */
	e = edge(r, "api", "mail");
	assert_non_null(e);
	assert_true(e->async);
	assert_string_equal(e->protocol, "messaging");
	assert_true(fabs(e->p95_ms - 7) < 7 * 0.005);
	/* leaves: the database and the external API */
	e = edge(r, "api", "postgresql orders");
	assert_non_null(e);
	assert_true(r->nodes[e->dst].leaf);
	assert_null(r->nodes[e->dst].ns);
	assert_string_equal(e->protocol, "sql");
	e = edge(r, "api", "api.stripe.com");
	assert_non_null(e);
	assert_true(r->nodes[e->dst].leaf);
	/* a Kubernetes DNS name names its service: no leaf of the name */
	e = edge(r, "api", "ledger");
	assert_non_null(e);
	assert_false(r->nodes[e->dst].leaf);
	assert_string_equal(r->nodes[e->dst].ns, "money");
	assert_int_equal(e->requests, 1);
	assert_int_equal(e->errors, 1);
	assert_string_equal(e->protocol, "http");
	assert_null(edge(r, "api", "ledger.money.svc.cluster.local"));
	/* a GenAI call is HTTP, though its span says nothing of HTTP */
	e = edge(r, "api", "api.openai.com");
	assert_non_null(e);
	assert_true(r->nodes[e->dst].leaf);
	assert_string_equal(e->protocol, "http");
	/* api: in 2 (1 error), out 6 (1 client error) */
	for (size_t i = 0; i < r->n_nodes; i++)
		if (strcmp(r->nodes[i].name, "api") == 0) {
			assert_int_equal(r->nodes[i].in_requests, 2);
			assert_int_equal(r->nodes[i].in_errors, 1);
			assert_int_equal(r->nodes[i].out_requests, 6);
			assert_int_equal(r->nodes[i].out_client_errors, 1);
		}
	meshquery_free(r);

	/* versionedApp: the versions name the nodes */
	r = graph(MESHQUERY_VERSIONED_APP, NULL, 0);
	assert_non_null(edge(r, "web (v1)", "api (v2)"));
	assert_non_null(edge(r, "api (v2)", "pay (v1)"));
	meshquery_free(r);

	/* the namespace filter: edges with an end in money */
	r = graph(MESHQUERY_APP, (const char *const[]){"money"}, 1);
	assert_int_equal(r->n_edges, 2);
	assert_non_null(edge(r, "api", "pay"));
	assert_non_null(edge(r, "api", "ledger"));
	meshquery_free(r);
}

/* The same graph from raw spans and, once refreshed, from the hour and
 * minute rollups alone (the spans deleted): the topology again three
 * hours back, read over [now - 5 h, now - 2 h) (whole hours, and minutes
 * at its ends). */
static void
test_rollup(void **state)
{
	struct meshquery_result *raw, *rolled;
	struct pg_conn *c = storetest_conn(&store);
	struct pg_error err;
	int done = 0, pending = 0;

	(void)state;
	exec(c, "INSERT INTO spans SELECT start_time - interval '3 hours', "
		"duration_ns, start_nanos, kind, status_code, "
		"set_byte(trace_id, 0, 255), span_id, parent_span_id, source, "
		"name, status_message, trace_state, service_name, "
		"service_namespace, service_version, k8s_namespace_name, "
		"k8s_deployment_name, k8s_pod_name, host_name, scope_name, "
		"scope_version, http_method, http_route, url_path, "
		"http_status_code, rpc_system, rpc_service, rpc_method, "
		"rpc_grpc_status_code, db_system, db_operation, db_table, "
		"session_id, gen_ai_provider, gen_ai_operation, "
		"gen_ai_request_model, gen_ai_response_model, "
		"gen_ai_input_tokens, gen_ai_output_tokens, attributes, "
		"resource_attributes, events, links FROM spans "
		"WHERE start_time > $1::timestamptz - interval '10 minutes'");
	exec(c, "INSERT INTO span_rollup_dirty SELECT DISTINCT "
		"date_trunc('hour', start_time, 'UTC'), 0 FROM spans "
		"WHERE $1::timestamptz IS NOT NULL ON CONFLICT DO NOTHING");
	exec(c, "INSERT INTO span_rollup_minute_dirty SELECT DISTINCT "
		"date_trunc('minute', start_time, 'UTC'), 0 FROM spans "
		"WHERE $1::timestamptz IS NOT NULL ON CONFLICT DO NOTHING");
	raw = graph_in(now_ms - 300 * MIN_MS, now_ms - 120 * MIN_MS,
		       MESHQUERY_VERSIONED_APP, NULL, 0);
	assert_int_equal(raw->n_edges, 7);
	if (rollup_refresh_fenced(c, &done, &pending, &err) != STATUS_OK)
		fail_msg("rollup_refresh_fenced: %s (%s)", err.client,
			 err.detail);
	assert_true(done > 0);
	/* the rollups alone answer: the spans go, unmarked */
	exec(c, "DELETE FROM spans WHERE start_time < $1::timestamptz - "
		"interval '2 hours'");
	pg_release(c);
	rolled = graph_in(now_ms - 300 * MIN_MS, now_ms - 120 * MIN_MS,
			  MESHQUERY_VERSIONED_APP, NULL, 0);
	assert_true(rolled->rollup);
	assert_int_equal(rolled->n_edges, raw->n_edges);
	for (size_t i = 0; i < raw->n_edges; i++) {
		const struct meshquery_edge *a = &raw->edges[i],
					    *b = &rolled->edges[i];

		assert_string_equal(raw->nodes[a->src].name,
				    rolled->nodes[b->src].name);
		assert_string_equal(raw->nodes[a->dst].name,
				    rolled->nodes[b->dst].name);
		assert_int_equal(raw->nodes[a->dst].leaf,
				 rolled->nodes[b->dst].leaf);
		assert_string_equal(a->protocol, b->protocol);
		assert_int_equal(a->requests, b->requests);
		assert_int_equal(a->errors, b->errors);
		assert_int_equal(a->client_errors, b->client_errors);
		assert_true(a->p95_ms == b->p95_ms);
		assert_true(a->p50_ms == b->p50_ms);
	}
	meshquery_free(raw);
	meshquery_free(rolled);
}

static void
test_bad_range(void **state)
{
	struct meshquery_filter f = {.from_ms = now_ms, .to_ms = now_ms};
	struct pg_conn *c = storetest_conn(&store);
	struct meshquery_result *r = (void *)1;
	struct pg_error err;

	(void)state;
	assert_int_equal(meshquery_graph(c, &f, &r, &err), STATUS_INVALID);
	assert_null(r);
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_node_health),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_top_cut),
		cmocka_unit_test(test_graph_type),
	};
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_graph),
		cmocka_unit_test(test_rollup),
		cmocka_unit_test(test_bad_range),
	};
	int failed = cmocka_run_group_tests_name("meshquery", pure, NULL, NULL);

	return failed + cmocka_run_group_tests_name("meshquery_store", db,
						    group_setup,
						    storetest_teardown);
}

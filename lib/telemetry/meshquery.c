/*
 * meshquery.c - the service graph and its health summary (see
 * meshquery.h): one statement pairs each span with its parent and
 * aggregates per edge, outcome and duration bucket; the rows are summed
 * here into edges and nodes.  SQL text is static, values are bound.
 */
#include "telemetry/meshquery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/timerange.h"
#include "telemetry/rollup.h"

#define STR(x)	STR_(x)
#define STR_(x) #x

/*
 * $1 from, $2 to, $3 the graph type's name.  s: the spans that can end a
 * call, once per (trace id, span id): the OTLP copy of a span both
 * sources saw (it carries the SDK's attributes), so that such a call
 * counts once.  A node's name and version follow the graph type; a
 * node without a namespace has ''.  e: the calls measured by a span
 * starting in [$1, $2): a SERVER (CONSUMER) span whose parent is a
 * CLIENT (PRODUCER) span of another service, and a CLIENT (PRODUCER)
 * span with no SERVER or CONSUMER child (a leaf: its target named from
 * its attributes, "unknown" when they name none).  Rows per edge,
 * outcome and duration bucket, ordered by edge.
 */
#define NODE_NAME                                                              \
	"CASE WHEN $3::text = 'workload' THEN coalesce(nullif("                \
	"k8s_deployment_name, ''), nullif(resource_attributes ->> "            \
	"'k8s.statefulset.name', ''), nullif(host_name, ''), service_name) "   \
	"ELSE service_name END"
#define NODE_VERSION                                                           \
	"CASE WHEN $3::text = 'versionedApp' THEN coalesce(service_version, "  \
	"'') ELSE '' END"
#define PEER                                                                   \
	"coalesce(nullif(attributes ->> 'peer.service', ''), "                 \
	"nullif(attributes ->> 'server.address', ''), db_system || coalesce("  \
	"' ' || nullif(coalesce(attributes ->> 'db.namespace', attributes "    \
	"->> "                                                                 \
	"'db.name'), ''), ''), nullif(attributes ->> 'messaging.system', '') " \
	"|| coalesce(' ' || nullif(attributes ->> "                            \
	"'messaging.destination.name', ''), ''), 'unknown')"
static const char graph_sql[] =
	"WITH s AS MATERIALIZED (SELECT DISTINCT ON (trace_id, span_id) "
	"trace_id, span_id, parent_span_id, kind, start_time, duration_ns, "
	"service_name, " NODE_NAME " AS node, " NODE_VERSION " AS ver, "
	"coalesce(nullif(service_namespace, ''), nullif(k8s_namespace_name, "
	"''), '') AS ns, "
	"CASE WHEN rpc_system = 'grpc' THEN 'grpc' WHEN http_method IS NOT "
	"NULL THEN 'http' WHEN db_system IS NOT NULL THEN 'sql' WHEN kind IN "
	"(4, 5) THEN 'messaging' ELSE 'tcp' END AS proto, "
	"sextant_span_outcome(kind, status_code, http_status_code, "
	"rpc_grpc_status_code) AS outcome, "
	"CASE WHEN kind IN (3, 4) THEN " PEER " END AS peer "
	"FROM spans WHERE source IN ('ebpf', 'otlp') AND kind IN (2, 3, 4, 5) "
	"AND start_time >= $1::timestamptz - interval '" STR(
		MESHQUERY_SLACK_S) " seconds' "
				   "AND start_time < $2::timestamptz + "
				   "interval '" STR(
					   MESHQUERY_SLACK_S) " seconds' "
							      "ORDER BY "
							      "trace_id, "
							      "span_id, "
							      "source DESC), "
							      "e AS (SELECT "
							      "p.node AS sn, "
							      "p.ns AS sns, "
							      "p.ver AS sv, "
							      "c.node AS dn, "
							      "c.ns AS dns, "
							      "c.ver AS dv, "
							      "false AS leaf, "
							      "c.kind = 5 AS "
							      "async, "
							      "c.proto, "
							      "c.outcome, "
							      "c.duration_ns "
							      "FROM s c JOIN s "
							      "p ON p.trace_id "
							      "= "
							      "c.trace_id AND "
							      "p.span_id = "
							      "c.parent_span_"
							      "id "
							      "WHERE "
							      "c.start_time >= "
							      "$1::timestamptz "
							      "AND "
							      "c.start_time < "
							      "$2::timestamptz "
							      "AND ((c.kind = "
							      "2 AND p.kind = "
							      "3) OR (c.kind = "
							      "5 AND "
							      "p.kind = 4)) "
							      "AND "
							      "p.service_name "
							      "<> "
							      "c.service_name "
							      "UNION ALL "
							      "SELECT p.node, "
							      "p.ns, p.ver, "
							      "p.peer, '', '', "
							      "true, "
							      "p.kind = 4, "
							      "p.proto, "
							      "p.outcome, "
							      "p.duration_ns "
							      "FROM s p "
							      "WHERE p.kind IN "
							      "(3, 4) AND "
							      "p.start_time >= "
							      "$1::timestamptz "
							      "AND "
							      "p.start_time < "
							      "$2::timestamptz "
							      "AND NOT EXISTS "
							      "(SELECT 1 FROM "
							      "s c "
							      "WHERE "
							      "c.trace_id = "
							      "p.trace_id AND "
							      "c.parent_span_"
							      "id = p.span_id "
							      "AND "
							      "c.kind IN (2, "
							      "5))) "
							      "SELECT sn, sns, "
							      "sv, dn, dns, "
							      "dv, leaf, "
							      "async, proto, "
							      "outcome, "
							      "sextant_"
							      "duration_bucket("
							      "duration_ns), "
							      "count(*) FROM e "
							      "GROUP BY 1, 2, "
							      "3, 4, 5, 6, 7, "
							      "8, 9, 10, 11 "
							      "ORDER BY 1, 2, "
							      "3, 4, 5, 6, 7, "
							      "8, 9";

/* Columns of graph_sql's rows. */
enum {
	C_SN,
	C_SNS,
	C_SV,
	C_DN,
	C_DNS,
	C_DV,
	C_LEAF,
	C_ASYNC,
	C_PROTO,
	C_OUTCOME,
	C_BUCKET,
	C_COUNT,
	C_EDGE_KEY = C_OUTCOME
};

static const char *const type_names[] = {
	[MESHQUERY_VERSIONED_APP] = "versionedApp",
	[MESHQUERY_APP] = "app",
	[MESHQUERY_SERVICE] = "service",
	[MESHQUERY_WORKLOAD] = "workload",
};

int
meshquery_graph_type_parse(const char *s)
{
	for (size_t i = 0;
	     s != NULL && i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(s, type_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
meshquery_graph_type_name(enum meshquery_graph_type t)
{
	return (size_t)t < sizeof(type_names) / sizeof(type_names[0])
		       ? type_names[t]
		       : "service";
}

struct priv {
	PGresult *res; /* the strings of the result */
	size_t cap_nodes, cap_edges;
};

static const char *
opt(PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);

	return *v != '\0' ? v : NULL;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The node (name, ns, version, leaf), added when new; SIZE_MAX on ENOMEM. */
static size_t
node_of(struct meshquery_result *r, const char *name, const char *ns,
	const char *version, bool leaf)
{
	struct priv *p = r->priv_;
	struct meshquery_node *n;

	for (size_t i = 0; i < r->n_nodes; i++) {
		n = &r->nodes[i];
		if (n->leaf == leaf && strcmp(n->name, name) == 0 &&
		    same_str(n->ns, ns) && same_str(n->version, version))
			return i;
	}
	if (r->n_nodes == p->cap_nodes) {
		size_t cap = p->cap_nodes ? 2 * p->cap_nodes : 32;
		struct meshquery_node *v =
			realloc(r->nodes, cap * sizeof(*r->nodes));

		if (v == NULL)
			return SIZE_MAX;
		r->nodes = v;
		p->cap_nodes = cap;
	}
	n = &r->nodes[r->n_nodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->ns = ns;
	n->version = version;
	n->leaf = leaf;
	return r->n_nodes++;
}

static bool
ns_wanted(const struct meshquery_filter *f, const char *ns)
{
	if (f->nns == 0)
		return true;
	for (size_t i = 0; ns != NULL && i < f->nns; i++)
		if (strcmp(f->ns[i], ns) == 0)
			return true;
	return false;
}

/* Whether rows a and b are of one edge (their first C_EDGE_KEY columns). */
static bool
same_edge(PGresult *res, int a, int b)
{
	for (int col = 0; col < C_EDGE_KEY; col++)
		if (strcmp(PQgetvalue(res, a, col), PQgetvalue(res, b, col)) !=
		    0)
			return false;
	return true;
}

/* One edge from rows [from, to) of res, when an end is in a wanted
 * namespace. */
static int
add_edge(struct meshquery_result *r, const struct meshquery_filter *f,
	 PGresult *res, int from, int to, struct pg_error *err)
{
	struct priv *p = r->priv_;
	struct rollup_hist *h = NULL;
	struct meshquery_edge *e;
	bool leaf = strcmp(PQgetvalue(res, from, C_LEAF), "t") == 0;
	const char *sns = opt(res, from, C_SNS), *dns = opt(res, from, C_DNS);
	size_t src, dst;
	int rc = STATUS_OK;

	if (!ns_wanted(f, sns) && !ns_wanted(f, dns))
		return STATUS_OK;
	if (r->n_edges == MESHQUERY_MAX_EDGES) {
		r->truncated = true;
		return STATUS_OK;
	}
	if (r->n_edges == p->cap_edges) {
		size_t cap = p->cap_edges ? 2 * p->cap_edges : 64;
		struct meshquery_edge *v =
			realloc(r->edges, cap * sizeof(*r->edges));

		if (v == NULL)
			return STATUS_NOMEM;
		r->edges = v;
		p->cap_edges = cap;
	}
	src = node_of(r, PQgetvalue(res, from, C_SN), sns, opt(res, from, C_SV),
		      false);
	dst = src == SIZE_MAX ? SIZE_MAX
			      : node_of(r, PQgetvalue(res, from, C_DN), dns,
					opt(res, from, C_DV), leaf);
	if (dst == SIZE_MAX || (h = rollup_hist_new()) == NULL)
		return STATUS_NOMEM;
	e = &r->edges[r->n_edges];
	memset(e, 0, sizeof(*e));
	e->src = src;
	e->dst = dst;
	e->protocol = PQgetvalue(res, from, C_PROTO);
	e->async = strcmp(PQgetvalue(res, from, C_ASYNC), "t") == 0;
	for (int i = from; i < to; i++) {
		int64_t n = 0, outcome = 0;

		if (pg_text_i64(PQgetvalue(res, i, C_COUNT), &n) != STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, C_OUTCOME), &outcome) !=
			    STATUS_OK ||
		    n < 0 ||
		    rollup_hist_add_text(h, PQgetvalue(res, i, C_BUCKET),
					 PQgetvalue(res, i, C_COUNT)) !=
			    STATUS_OK) {
			rc = pg_bad_row(err, "edge row");
			goto out;
		}
		e->requests += (uint64_t)n;
		if (outcome == 1)
			e->errors += (uint64_t)n;
		else if (outcome == 2)
			e->client_errors += (uint64_t)n;
	}
	e->p50_ms = rollup_hist_quantile(h, 0.5) / 1e6;
	e->p95_ms = rollup_hist_quantile(h, 0.95) / 1e6;
	r->nodes[src].out_requests += e->requests;
	r->nodes[src].out_errors += e->errors;
	r->nodes[src].out_client_errors += e->client_errors;
	r->nodes[dst].in_requests += e->requests;
	r->nodes[dst].in_errors += e->errors;
	r->nodes[dst].in_client_errors += e->client_errors;
	r->n_edges++;
out:
	rollup_hist_free(h);
	return rc;
}

static int
by_requests(const void *a, const void *b)
{
	const struct meshquery_edge *x = a, *y = b;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

int
meshquery_graph(struct pg_conn *c, const struct meshquery_filter *f,
		struct meshquery_result **out, struct pg_error *err)
{
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX];
	const char *v[3];
	struct meshquery_result *r = NULL;
	struct priv *priv = NULL;
	PGresult *res = NULL;
	struct pg_error ignored;
	bool in_tx = false;
	int rc, rows;

	*out = NULL;
	if (f->from_ms >= f->to_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "the time range is empty: from must be "
				    "before to");
	timerange_format(f->from_ms, from, sizeof(from));
	timerange_format(f->to_ms, to, sizeof(to));
	v[0] = from;
	v[1] = to;
	v[2] = meshquery_graph_type_name(f->type);
	/* jit off (SET LOCAL): the self-join's estimate is large, and LLVM
	 * would compile for longer than the statement runs.  Read-only: it
	 * ends in a rollback. */
	if ((rc = pg_begin(c, err)) != STATUS_OK)
		return rc;
	in_tx = true;
	if ((rc = pg_query(c, "SELECT set_config('jit', 'off', true)", 0, NULL,
			   NULL, err)) != STATUS_OK ||
	    (rc = pg_query(c, graph_sql, 3, v, &res, err)) != STATUS_OK)
		goto fail;
	r = calloc(1, sizeof(*r));
	priv = calloc(1, sizeof(*priv));
	if (r == NULL || priv == NULL) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	priv->res = res;
	res = NULL;
	r->priv_ = priv;
	priv = NULL;
	res = ((struct priv *)r->priv_)->res;
	rows = PQntuples(res);
	for (int i = 0, j; i < rows; i = j) {
		for (j = i + 1; j < rows && same_edge(res, i, j); j++)
			;
		if ((rc = add_edge(r, f, res, i, j, err)) != STATUS_OK)
			goto fail_owned;
	}
	res = NULL;
	if (r->n_edges > 1)
		qsort(r->edges, r->n_edges, sizeof(*r->edges), by_requests);
	in_tx = false;
	if ((rc = pg_rollback(c, err)) != STATUS_OK)
		goto fail;
	*out = r;
	return STATUS_OK;
fail_owned:
	res = NULL; /* owned by r */
fail:
	if (in_tx)
		(void)!pg_rollback(c, &ignored);
	PQclear(res);
	free(priv);
	meshquery_free(r);
	return rc == STATUS_NOMEM ? pg_error_set(err, rc, "out of memory") : rc;
}

void
meshquery_free(struct meshquery_result *r)
{
	struct priv *priv;

	if (r == NULL)
		return;
	priv = r->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(r->nodes);
	free(r->edges);
	free(r);
}

/* ---- health ------------------------------------------------------------- */

enum health_status
meshquery_edge_health(const struct health_tolerances *t,
		      const struct meshquery_edge *e)
{
	return health_judge(t, e->requests, e->errors, e->client_errors);
}

enum health_status
meshquery_node_health(const struct health_tolerances *t,
		      const struct meshquery_node *n)
{
	return health_worse(health_judge(t, n->in_requests, n->in_errors,
					 n->in_client_errors),
			    health_judge(t, n->out_requests, n->out_errors,
					 n->out_client_errors));
}

double
meshquery_node_error_rate(const struct meshquery_node *n)
{
	uint64_t all = n->in_requests + n->out_requests;
	uint64_t failed = n->in_errors + n->in_client_errors + n->out_errors +
			  n->out_client_errors;

	return all == 0 ? 0 : (double)failed / (double)all;
}

static void
count(struct meshquery_counts *c, enum health_status h)
{
	c->total++;
	if (h == HEALTH_HEALTHY)
		c->healthy++;
	else if (h == HEALTH_DEGRADED)
		c->degraded++;
	else if (h == HEALTH_UNHEALTHY)
		c->unhealthy++;
}

static double
availability(const struct meshquery_counts *c)
{
	if (c->total == 0)
		return 100.0;
	return ((double)c->healthy + (double)c->degraded * 0.5) /
	       (double)c->total * 100.0;
}

/* Kiali's computeNamespaceStatus. */
static const char *
ns_status(const struct meshquery_ns_summary *s)
{
	if (s->counts.total == 0)
		return "UNKNOWN";
	if (s->counts.unhealthy == 0 && s->error_rate < 0.01)
		return "HEALTHY";
	if (s->counts.unhealthy > s->counts.total / 2 || s->error_rate > 0.05)
		return "UNHEALTHY";
	return "DEGRADED";
}

/* Kiali's computeOverallStatus. */
static const char *
overall_status(const struct meshquery_counts *c)
{
	if (c->total == 0)
		return "UNKNOWN";
	if (c->unhealthy > 0)
		return c->unhealthy > c->total / 2 ? "UNHEALTHY" : "DEGRADED";
	return c->degraded > 0 ? "DEGRADED" : "HEALTHY";
}

static int
by_ns(const void *a, const void *b)
{
	return strcmp(((const struct meshquery_ns_summary *)a)->ns,
		      ((const struct meshquery_ns_summary *)b)->ns);
}

int
meshquery_summarize(const struct meshquery_result *r,
		    const struct health_tolerances *t,
		    struct meshquery_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->ns = calloc(r->n_nodes + 1, sizeof(*s->ns));
	if (s->ns == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < r->n_nodes; i++) {
		const struct meshquery_node *n = &r->nodes[i];
		const char *ns = n->ns != NULL ? n->ns : "";
		enum health_status h = meshquery_node_health(t, n);
		double rate = meshquery_node_error_rate(n);
		struct meshquery_ns_summary *ns_s = NULL;
		size_t k;

		if (n->leaf)
			continue;
		for (k = 0; k < s->n_ns && ns_s == NULL; k++)
			if (strcmp(s->ns[k].ns, ns) == 0)
				ns_s = &s->ns[k];
		if (ns_s == NULL) {
			ns_s = &s->ns[s->n_ns++];
			ns_s->ns = ns;
		}
		count(&s->counts, h);
		count(&ns_s->counts, h);
		ns_s->error_rate += rate;
		if (h != HEALTH_UNHEALTHY)
			continue;
		/* insertion into the top list, highest rate first, ties in
		 * node order (Kiali sorts by rate alone) */
		for (k = s->n_top; k > 0; k--) {
			if (meshquery_node_error_rate(
				    &r->nodes[s->top[k - 1]]) >= rate)
				break;
			if (k < MESHQUERY_TOP_UNHEALTHY)
				s->top[k] = s->top[k - 1];
		}
		if (k < MESHQUERY_TOP_UNHEALTHY) {
			s->top[k] = i;
			if (s->n_top < MESHQUERY_TOP_UNHEALTHY)
				s->n_top++;
		}
	}
	qsort(s->ns, s->n_ns, sizeof(*s->ns), by_ns);
	for (size_t k = 0; k < s->n_ns; k++) {
		s->ns[k].status = ns_status(&s->ns[k]);
		s->ns[k].availability = availability(&s->ns[k].counts);
		s->total_error_rate += s->ns[k].error_rate;
	}
	s->overall = overall_status(&s->counts);
	s->availability = availability(&s->counts);
	return STATUS_OK;
}

void
meshquery_summary_free(struct meshquery_summary *s)
{
	if (s == NULL)
		return;
	free(s->ns);
	s->ns = NULL;
	s->n_ns = 0;
}

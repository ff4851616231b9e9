/*
 * tool_mesh_graph.c - get_mesh_graph, of the "mesh" set: the service graph
 * of a time range (lib/telemetry/meshquery) as a compact adjacency list,
 * unhealthy edges first, and as Kiali's CompactGraphResponse (graphType,
 * namespaces, nodes, traffic, health: the MeshHealthSummary), fitted to
 * the answer budget with "N more".
 */
#include "tools/tool_mesh_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "pg/pg.h"
#include "telemetry/health.h"
#include "telemetry/meshquery.h"
#include "telemetry/render.h"
#include "tools/tool.h"
#include "tools/tool_common.h"

/* Namespaces a call may name (Kiali takes a comma-separated list). */
#define MAX_NAMESPACES 32
/* Bytes of the namespace arguments kept (each at most 255). */
#define NS_TEXT_MAX (MAX_NAMESPACES * 256)
/* Text kept back from the budget for the lines after the list. */
#define TAIL_ROOM 1200

struct graph_call {
	struct call *call;
	struct health_tolerances tol;
	struct timerange tr;
	int64_t now;
	enum meshquery_graph_type type;
	const char *interval; /* rateInterval as given, or the default */
	char ns_text[NS_TEXT_MAX];
	const char *ns[MAX_NAMESPACES];
	size_t nns;
	struct meshquery_result *r;
	struct meshquery_summary s;
	char **label;	 /* per node: its name as shown (redacted, versioned) */
	char **ns_shown; /* per node: its namespace redacted, or NULL */
	size_t *order;	 /* edges as listed: unhealthy first */
	size_t shown;
	struct buf b;
};

/* Adds the comma-separated names of s to x->ns; false when too many or
 * too long. */
static bool
add_namespaces(struct graph_call *x, const char *s, size_t *used)
{
	size_t len = strlen(s);
	char *p, *end;

	if (*used + len + 1 > sizeof(x->ns_text))
		return false;
	p = memcpy(x->ns_text + *used, s, len + 1);
	*used += len + 1;
	for (end = p + len; p < end;) {
		char *comma = strchr(p, ','), *q;

		if (comma == NULL)
			comma = end;
		*comma = '\0';
		while (*p == ' ')
			p++;
		for (q = comma; q > p && q[-1] == ' ';)
			*--q = '\0';
		if (*p != '\0') {
			if (x->nns == MAX_NAMESPACES)
				return false;
			x->ns[x->nns++] = p;
		}
		p = comma + 1;
	}
	return true;
}

static int
graph_args(struct graph_call *x, const json_t *args, json_t **result)
{
	const char *gt = tool_arg_str(args, "graphType");
	const char *one = tool_arg_str(args, "namespace");
	const char *many = tool_arg_str(args, "namespaces");
	json_t *ri = json_object_get(args, "rateInterval");
	char err[256];
	size_t used = 0;
	int t;

	if (gt != NULL && (t = meshquery_graph_type_parse(gt)) < 0) {
		*result = tool_result_error(
			"graphType \"%.40s\" is not known: give versionedApp, "
			"app, service or workload",
			gt);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->type = gt != NULL ? (enum meshquery_graph_type)t
			     : MESHQUERY_VERSIONED_APP;
	if ((one != NULL && !add_namespaces(x, one, &used)) ||
	    (many != NULL && !add_namespaces(x, many, &used))) {
		*result = tool_result_error(
			"namespaces: at most %d names, each under 256 "
			"characters, comma-separated; name fewer",
			MAX_NAMESPACES);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->interval = json_is_string(ri) && json_string_length(ri) > 0
			      ? json_string_value(ri)
			      : "10m";
	/* from / to (Sextant's, beside Kiali's arguments) win over it */
	if (timerange_parse(x->interval, tool_arg_str(args, "from"),
			    tool_arg_str(args, "to"), x->now, &x->tr, err,
			    sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("rateInterval: %s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	return STATUS_OK;
}

static int
graph_fetch(struct graph_call *x, json_t **result)
{
	struct meshquery_filter f = {.from_ms = x->tr.from_ms,
				     .to_ms = x->tr.to_ms,
				     .now_ms = x->now,
				     .type = x->type,
				     .ns = x->ns,
				     .nns = x->nns};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	char why[320];
	int rc;

	rc = tool_conn_get(x->call, &c, why, sizeof(why), &perr);
	if (rc == STATUS_UNSUPPORTED) {
		*result = tool_result_error("telemetry store unavailable: %s",
					    why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	if (rc == STATUS_OK) {
		rc = meshquery_graph(c, &f, &x->r, &perr);
		pg_release(c);
	}
	if (rc != STATUS_OK)
		return tool_store_failed(x->call, "get_mesh_graph", rc, &perr,
					 "narrow rateInterval or name "
					 "namespaces",
					 result);
	return meshquery_summarize(x->r, &x->tol, &x->s);
}

/* Each node's name as shown: a leaf's redacted (it comes from span
 * attributes), the version after it ("reviews (v2)"), the namespace
 * before it when the graph has more than one ("shop/checkout"). */
static int
graph_labels(struct graph_call *x)
{
	const struct redact *red = call_redact(x->call);

	x->label = calloc(x->r->n_nodes + 1, sizeof(*x->label));
	x->ns_shown = calloc(x->r->n_nodes + 1, sizeof(*x->ns_shown));
	if (x->label == NULL || x->ns_shown == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < x->r->n_nodes; i++) {
		const struct meshquery_node *n = &x->r->nodes[i];
		char *name = n->leaf ? redact_text(red, n->name) : NULL;
		char *ns = n->ns != NULL ? redact_text(red, n->ns) : NULL;
		struct buf b;

		buf_init(&b, 4096);
		if (n->ns != NULL && x->s.n_ns > 1)
			buf_printf(&b, "%s/", ns != NULL ? ns : n->ns);
		buf_puts(&b, name != NULL ? name : n->name);
		if (n->version != NULL)
			buf_printf(&b, " (%s)", n->version);
		free(name);
		x->ns_shown[i] = ns;
		if (buf_error(&b) != STATUS_OK ||
		    (x->label[i] = buf_steal(&b, NULL)) == NULL) {
			buf_free(&b);
			return STATUS_NOMEM;
		}
	}
	return STATUS_OK;
}

/* Text from spans, redacted, into a JSON object's key (set_new steals
 * v) or as a string (key NULL); 0, or -1 on ENOMEM. */
static int
put_redacted(const struct graph_call *x, json_t *o, const char *text, json_t *v)
{
	char *owned = redact_text(call_redact(x->call), text);
	const char *t = owned != NULL ? owned : text;
	int rc = v != NULL ? json_object_set_new(o, t, v)
			   : json_array_append_new(o, json_string(t));

	free(owned);
	return rc;
}

/* Node i's namespace as shown ("" for none). */
static const char *
ns_of(const struct graph_call *x, size_t i)
{
	const char *ns = x->r->nodes[i].ns;

	return x->ns_shown[i] != NULL ? x->ns_shown[i] : ns != NULL ? ns : "";
}

static int
worst_first(const void *a, const void *b, void *arg)
{
	const struct graph_call *x = arg;
	const struct meshquery_edge *e = &x->r->edges[*(const size_t *)a],
				    *f = &x->r->edges[*(const size_t *)b];
	enum health_status he = meshquery_edge_health(&x->tol, e),
			   hf = meshquery_edge_health(&x->tol, f);

	if (he != hf)
		return he > hf ? -1 : 1;
	/* then the order of the result: most requests first */
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static const char *
protocol_label(const char *p)
{
	return strcmp(p, "grpc") == 0	? "gRPC"
	       : strcmp(p, "http") == 0 ? "HTTP"
	       : strcmp(p, "sql") == 0	? "SQL"
					: p;
}

/* "checkout -> payments  gRPC  120 req/min  2.1% errors  P95 45ms
 * DEGRADED" */
static void
edge_line(struct graph_call *x, const struct meshquery_edge *e)
{
	double minutes = (double)(x->tr.to_ms - x->tr.from_ms) / 60000.0;
	char pct[RENDER_PCT_MAX], cpct[RENDER_PCT_MAX], p95[32], rate[32];
	enum health_status h = meshquery_edge_health(&x->tol, e);

	render_pct(e->errors, e->requests, pct, sizeof(pct));
	render_ms(e->p95_ms, p95, sizeof(p95));
	render_throughput((double)e->requests / minutes, rate, sizeof(rate));
	buf_printf(&x->b, "%s -> %s  %s%s  %s req/min  %s errors",
		   x->label[e->src], x->label[e->dst],
		   protocol_label(e->protocol), e->async ? " async" : "", rate,
		   pct);
	if (e->client_errors > 0) {
		render_pct(e->client_errors, e->requests, cpct, sizeof(cpct));
		buf_printf(&x->b, "  %s client errors", cpct);
	}
	buf_printf(&x->b, "  P95 %s  %s\n", p95, health_name(h));
}

static void
graph_text(struct graph_call *x)
{
	char rdesc[TIMERANGE_DESCRIBE_MAX];
	size_t budget = call_text_budget(x->call);
	struct buf *b = &x->b;

	timerange_describe(&x->tr, x->now, rdesc, sizeof(rdesc));
	if (x->r->n_edges == 0) {
		buf_printf(b,
			   "No calls between services in %s%s: no CLIENT or "
			   "PRODUCER span with a callee or a named peer. "
			   "Widen rateInterval%s.\n",
			   rdesc, x->nns > 0 ? " in the namespaces named" : "",
			   x->nns > 0 ? " or name other namespaces" : "");
		return;
	}
	buf_printf(b,
		   "## Mesh graph (%s, %s): %zu nodes, %zu edges; %s, "
		   "availability %.1f%%\n\n",
		   meshquery_graph_type_name(x->type), rdesc, x->r->n_nodes,
		   x->r->n_edges, x->s.overall, x->s.availability);
	tool_fit(b);
	for (; x->shown < x->r->n_edges; x->shown++) {
		size_t mark = b->len;

		edge_line(x, &x->r->edges[x->order[x->shown]]);
		if (tool_fit(b) != STATUS_OK || b->len + TAIL_ROOM > budget) {
			buf_rollback(b, mark);
			break;
		}
	}
	if (x->shown < x->r->n_edges)
		buf_printf(b,
			   "\n%zu more edges not shown (the quietest healthy "
			   "ones): name namespaces.\n",
			   x->r->n_edges - x->shown);
	if (x->s.n_top > 0) {
		buf_puts(b, "\nUnhealthy:");
		for (size_t i = 0; i < x->s.n_top; i++) {
			const struct meshquery_node *n =
				&x->r->nodes[x->s.top[i]];

			buf_printf(b, "%s %s (%.1f%% of calls failed)",
				   i ? "," : "", x->label[x->s.top[i]],
				   100.0 * meshquery_node_error_rate(n));
		}
		buf_puts(b, ".\n");
		tool_fit(b);
	}
	buf_printf(b,
		   "\nEdges: a CLIENT span and the SERVER span it parents in "
		   "another service, a PRODUCER and its CONSUMER (async), or "
		   "a call with no instrumented callee (its peer, or the "
		   "service a Kubernetes DNS name names); a span "
		   "seen by eBPF and OTLP counts once. Errors and client "
		   "errors by OpenTelemetry's rule, on the callee's span; "
		   "health by Kiali's rule: ");
	tool_health_rule(b, &x->tol);
	buf_printf(b, "%s.\n",
		   x->r->rollup ? "; P50 and P95 from the minute and hourly "
				  "rollups (within 0.5%)"
				: "");
	if (x->r->truncated)
		buf_printf(b,
			   "More than %d edges: the rest were not read; name "
			   "namespaces.\n",
			   MESHQUERY_MAX_EDGES);
	tool_fit(b);
}

static json_t *
counts_json(const struct meshquery_counts *c)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "total",
			 (json_int_t)c->total, "healthy",
			 (json_int_t)c->healthy, "degraded",
			 (json_int_t)c->degraded, "unhealthy",
			 (json_int_t)c->unhealthy, "notReady", (json_int_t)0);
}

/*
 * Kiali's EntityHealthCounts, with only the graph's own kind: its nodes
 * are of that type, and zeros for the other two would say that there are
 * none of them.
 */
static json_t *
entity_counts_json(const struct graph_call *x, const struct meshquery_counts *c)
{
	const char *kind = x->type == MESHQUERY_WORKLOAD  ? "workloads"
			   : x->type == MESHQUERY_SERVICE ? "services"
							  : "apps";

	return json_pack("{s:o}", kind, counts_json(c));
}

static const char *
entity_type(const struct graph_call *x)
{
	return x->type == MESHQUERY_WORKLOAD  ? "workload"
	       : x->type == MESHQUERY_SERVICE ? "service"
					      : "app";
}

static json_t *
summary_json(const struct graph_call *x)
{
	char ts[TIMERANGE_FORMAT_MAX];
	json_t *nss = json_object(), *top = json_array(), *o;

	timerange_format(x->now / 1000 * 1000, ts, sizeof(ts));
	for (size_t i = 0; nss != NULL && i < x->s.n_ns; i++) {
		const struct meshquery_ns_summary *n = &x->s.ns[i];
		json_t *e = json_pack("{s:s, s:f, s:f}", "status", n->status,
				      "availability", n->availability,
				      "errorRate", n->error_rate);

		if (e == NULL ||
		    json_object_update_new(
			    e, entity_counts_json(x, &n->counts)) != 0 ||
		    put_redacted(x, nss, n->ns[0] ? n->ns : "(none)", e) != 0) {
			json_decref(nss);
			nss = NULL;
		}
	}
	for (size_t i = 0; top != NULL && i < x->s.n_top; i++) {
		const struct meshquery_node *n = &x->r->nodes[x->s.top[i]];
		double rate = meshquery_node_error_rate(n);
		char issue[64];

		snprintf(issue, sizeof(issue), "error rate: %.2f%%",
			 rate * 100);
		if (json_array_append_new(
			    top,
			    json_pack("{s:s, s:s, s:s, s:s, s:s, s:f}", "type",
				      entity_type(x), "namespace",
				      ns_of(x, x->s.top[i]), "name", n->name,
				      "status", "UNHEALTHY", "issue", issue,
				      "errorRate", rate)) != 0) {
			json_decref(top);
			top = NULL;
		}
	}
	if (nss == NULL || top == NULL) {
		json_decref(nss);
		json_decref(top);
		return NULL;
	}
	o = json_pack("{s:s, s:f, s:f, s:I, s:o, s:o, s:o, s:s, s:s}",
		      "overallStatus", x->s.overall, "availability",
		      x->s.availability, "totalErrorRate",
		      x->s.total_error_rate, "namespaceCount",
		      (json_int_t)x->s.n_ns, "entityCounts",
		      entity_counts_json(x, &x->s.counts), "namespaceSummary",
		      nss, "topUnhealthy", top, "timestamp", ts, "rateInterval",
		      x->interval);
	return o;
}

static json_t *
node_json(const struct graph_call *x, size_t i)
{
	const struct meshquery_node *n = &x->r->nodes[i];
	enum health_status h = meshquery_node_health(&x->tol, n);
	json_t *o = json_pack("{s:s, s:s}", "name", x->label[i], "type",
			      n->leaf ? "service" : entity_type(x));

	if (o == NULL)
		return NULL;
	if ((n->version != NULL &&
	     json_object_set_new(o, "version", json_string(n->version))) ||
	    (n->ns != NULL &&
	     json_object_set_new(o, "namespace", json_string(ns_of(x, i)))) ||
	    (n->leaf && json_object_set_new(o, "leaf", json_true())) ||
	    json_object_set_new(o, "health", json_string(health_name(h)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
edge_json(const struct graph_call *x, const struct meshquery_edge *e)
{
	double range_s = (double)(x->tr.to_ms - x->tr.from_ms) / 1000.0;
	char tput[48];

	snprintf(tput, sizeof(tput), "%.2f rps", (double)e->requests / range_s);
	return json_pack(
		"{s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:s, "
		"s:b}",
		"source", x->label[e->src], "target", x->label[e->dst],
		"protocol", e->protocol, "async", e->async, "throughput", tput,
		"responseTimeMs", (json_int_t)(e->p95_ms + 0.5), "requests",
		(json_int_t)e->requests, "errors", (json_int_t)e->errors,
		"client_errors", (json_int_t)e->client_errors, "p50_ms",
		e->p50_ms, "p95_ms", e->p95_ms, "health",
		health_name(meshquery_edge_health(&x->tol, e)), "mTLS", 0);
}

/* Structured content: Kiali's CompactGraphResponse, and the range. */
static int
graph_result(struct graph_call *x, json_t **result)
{
	json_t *sc, *nodes = json_array(), *traffic = json_array(),
		    *nss = json_array(), *health = summary_json(x);

	if (nodes == NULL || traffic == NULL || nss == NULL || health == NULL)
		goto nomem;
	for (size_t i = 0; i < x->r->n_nodes; i++)
		if (json_array_append_new(nodes, node_json(x, i)) != 0)
			goto nomem;
	for (size_t i = 0; i < x->shown; i++)
		if (json_array_append_new(
			    traffic, edge_json(x, &x->r->edges[x->order[i]])) !=
		    0)
			goto nomem;
	for (size_t i = 0; i < x->nns; i++)
		if (put_redacted(x, nss, x->ns[i], NULL) != 0)
			goto nomem;
	for (size_t i = 0; x->nns == 0 && i < x->s.n_ns; i++)
		if (put_redacted(x, nss, x->s.ns[i].ns, NULL) != 0)
			goto nomem;
	sc = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:I}", "graphType",
		       meshquery_graph_type_name(x->type), "namespaces", nss,
		       "nodes", nodes, "traffic", traffic, "health", health,
		       "time_range", tool_range_json(&x->tr), "total_edges",
		       (json_int_t)x->r->n_edges, "not_shown",
		       (json_int_t)(x->r->n_edges - x->shown));
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_fit(
		x->call, &x->b, sc,
		(struct tool_rows[]){
			{"traffic", "not_shown", "edges", x->r->n_edges, 0, 0}},
		1, "name namespaces", result);
nomem:
	json_decref(nodes);
	json_decref(traffic);
	json_decref(nss);
	json_decref(health);
	return STATUS_NOMEM;
}

static int
get_mesh_graph(struct call *call, const json_t *args, json_t **result)
{
	struct graph_call x = {.call = call, .now = clock_wall_ms()};
	int rc;

	*result = NULL;
	buf_init(&x.b, call_text_budget(call) + 4096);
	x.tol = tool_health_tolerances(call);
	if ((rc = graph_args(&x, args, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = graph_fetch(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = graph_labels(&x)) != STATUS_OK)
		goto out;
	if ((x.order = calloc(x.r->n_edges + 1, sizeof(*x.order))) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < x.r->n_edges; i++)
		x.order[i] = i;
	qsort_r(x.order, x.r->n_edges, sizeof(*x.order), worst_first, &x);
	graph_text(&x);
	rc = graph_result(&x, result);
out:
	for (size_t i = 0; x.label != NULL && i < x.r->n_nodes; i++)
		free(x.label[i]);
	for (size_t i = 0; x.ns_shown != NULL && i < x.r->n_nodes; i++)
		free(x.ns_shown[i]);
	free(x.label);
	free(x.ns_shown);
	free(x.order);
	meshquery_summary_free(&x.s);
	meshquery_free(x.r);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler mesh_graph_tool_handlers[] = {
	{"get_mesh_graph", get_mesh_graph},
	{NULL, NULL},
};

/*
 * tool_mesh_resource.c - get_resource_detail, of the "mesh" set (Kiali's
 * tool of that name, over spans): without a name the services or
 * workloads of a range (lib/telemetry/resourcequery), worst health first,
 * one short line each; with one, its versions, workloads, pods and hosts,
 * edges in and out with their health, top routes and last error.  The
 * structured content is built first and redacted once; the text is
 * written from it, so the two say the same.
 */
#include "tools/tool_mesh_resource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/health.h"
#include "telemetry/meshquery.h"
#include "telemetry/render.h"
#include "telemetry/resourcequery.h"
#include "telemetry/spanquery.h"
#include "tools/tool.h"
#include "tools/tool_common.h"

/* Namespaces a call may name, and the bytes of their text. */
#define MAX_NS	    32
#define NS_TEXT_MAX (MAX_NS * 256)
/* Text kept back from the budget for the closing note. */
#define TAIL_ROOM 600
/* Edges shown each way in a detail (the busiest). */
#define MAX_EDGES 10

struct res_call {
	struct call *call;
	struct health_tolerances tol;
	struct timerange tr;
	int64_t now;
	enum resourcequery_type type;
	const char *interval;
	char rdesc[TIMERANGE_DESCRIBE_MAX];
	char ns_text[NS_TEXT_MAX];
	const char *ns[MAX_NS];
	size_t nns;
	const char *name; /* resource_name as resolved, or NULL */
	char svc[256], note[512];
	struct buf b;
};

static const char *
type_word(const struct res_call *x)
{
	return x->type == RESOURCEQUERY_WORKLOAD ? "workload" : "service";
}

static json_t *
error_result(json_t **result, json_t *r)
{
	*result = r;
	return r;
}

/* namespaces: comma-separated, blanks around names dropped; false when
 * more than MAX_NS or longer than the buffer. */
static bool
parse_namespaces(struct res_call *x, const char *s)
{
	size_t len = strlen(s);
	char *p = x->ns_text;

	if (len >= sizeof(x->ns_text))
		return false;
	memcpy(p, s, len + 1);
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		char *end = p + n, *next = *end != '\0' ? end + 1 : end;

		*end = '\0';
		p += strspn(p, " ");
		while (end > p && end[-1] == ' ')
			*--end = '\0';
		if (*p != '\0' && x->nns == MAX_NS)
			return false;
		if (*p != '\0')
			x->ns[x->nns++] = p;
		p = next;
	}
	return true;
}

static int
res_args(struct res_call *x, const json_t *args, json_t **result)
{
	const char *rt = tool_arg_str(args, "resource_type");
	const char *ns = tool_arg_str(args, "namespaces");
	const char *ri = tool_arg_str(args, "rateInterval");
	char err[256];
	int t = rt != NULL ? resourcequery_type_parse(rt) : -1;

	if (t < 0)
		return error_result(result,
				    tool_result_error(
					    "resource_type \"%.40s\" is not "
					    "known: give service or workload",
					    rt != NULL ? rt : ""))
			       ? STATUS_OK
			       : STATUS_NOMEM;
	x->type = (enum resourcequery_type)t;
	if (ns != NULL && !parse_namespaces(x, ns))
		return error_result(result,
				    tool_result_error(
					    "namespaces: at most %d names, "
					    "comma-separated, under %d "
					    "characters in all; name fewer",
					    MAX_NS, NS_TEXT_MAX))
			       ? STATUS_OK
			       : STATUS_NOMEM;
	x->interval = ri != NULL ? ri : "10m";
	if (timerange_parse(x->interval, NULL, NULL, x->now, &x->tr, err,
			    sizeof(err)) != STATUS_OK)
		return error_result(result,
				    tool_result_error("rateInterval: %s", err))
			       ? STATUS_OK
			       : STATUS_NOMEM;
	timerange_describe(&x->tr, x->now, x->rdesc, sizeof(x->rdesc));
	x->name = tool_arg_str(args, "resource_name");
	if (x->name != NULL && x->type == RESOURCEQUERY_SERVICE)
		x->name = tool_service_name(x->call, x->name, x->svc,
					    sizeof(x->svc), x->note,
					    sizeof(x->note));
	return STATUS_OK;
}

static struct resourcequery_filter
res_filter(const struct res_call *x, const char *name)
{
	return (struct resourcequery_filter){.from_ms = x->tr.from_ms,
					     .to_ms = x->tr.to_ms,
					     .now_ms = x->now,
					     .type = x->type,
					     .ns = x->ns,
					     .nns = x->nns,
					     .name = name};
}

/* ---- structured content ------------------------------------------------ */

/* ms to 0.01 ms: the digits past it are the histogram's noise. */
static json_t *
ms_json(double ms)
{
	return json_real((double)(int64_t)(ms * 100 + 0.5) / 100);
}

static json_t *
names_json(const struct resourcequery_names *n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n->n; i++)
		if (json_array_append_new(a, json_string(n->v[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
sources_json(unsigned sources)
{
	json_t *a = json_array();

	if (a != NULL && (sources & RESOURCEQUERY_EBPF))
		json_array_append_new(a, json_string("ebpf"));
	if (a != NULL && (sources & RESOURCEQUERY_OTLP))
		json_array_append_new(a, json_string("otlp"));
	return a;
}

/* Sets key to n's names, and key_total when some were not kept. */
static int
set_names(json_t *o, const char *key, const struct resourcequery_names *n)
{
	char total[64];

	if (n->total > n->n) {
		snprintf(total, sizeof(total), "%s_total", key);
		if (json_object_set_new(o, total,
					json_integer((json_int_t)n->total)))
			return -1;
	}
	return json_object_set_new(o, key, names_json(n));
}

/* Sets key to v when v > 0 (counts a reader can take as 0 when absent). */
static int
set_count(json_t *o, const char *key, uint64_t v)
{
	return v > 0 ? json_object_set_new(o, key, json_integer((json_int_t)v))
		     : 0;
}

/* A resource: its list row, or the head of its detail. */
static json_t *
item_json(const struct res_call *x, const struct resourcequery_item *it,
	  bool detail)
{
	char seen[TIMERANGE_FORMAT_MAX];
	enum health_status h = resourcequery_health(&x->tol, it);
	json_t *o;

	timerange_format(it->last_seen_us / 1000000 * 1000, seen, sizeof(seen));
	o = json_pack("{s:s, s:s, s:o, s:I, s:I}", "name", it->name, "health",
		      health_name(h), "sources", sources_json(it->sources),
		      "requests", (json_int_t)it->in_requests, "calls_out",
		      (json_int_t)it->out_requests);
	if (o == NULL ||
	    (it->ns[0] != '\0' &&
	     json_object_set_new(o, "namespace", json_string(it->ns))) ||
	    set_count(o, "errors", it->in_errors) ||
	    set_count(o, "client_errors", it->in_client_errors) ||
	    set_count(o, "errors_out", it->out_errors) ||
	    set_count(o, "client_errors_out", it->out_client_errors) ||
	    set_names(o, "versions", &it->seen[RESOURCEQUERY_VERSIONS]) ||
	    (x->type == RESOURCEQUERY_SERVICE || detail
		     ? set_names(o, "workloads",
				 &it->seen[RESOURCEQUERY_WORKLOADS])
		     : 0) ||
	    (x->type == RESOURCEQUERY_WORKLOAD || detail
		     ? set_names(o, "pods", &it->seen[RESOURCEQUERY_PODS])
		     : 0) ||
	    (detail &&
	     (set_names(o, "services", &it->seen[RESOURCEQUERY_SERVICES]) ||
	      set_names(o, "hosts", &it->seen[RESOURCEQUERY_HOSTS]))) ||
	    json_object_set_new(o, "last_seen", json_string(seen))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int
worst_first(const void *a, const void *b, void *arg)
{
	const struct res_call *x = arg;
	const struct resourcequery_item *p = *(const void *const *)a,
					*q = *(const void *const *)b;
	enum health_status hp = resourcequery_health(&x->tol, p),
			   hq = resourcequery_health(&x->tol, q);

	if (hp != hq)
		return hp > hq ? -1 : 1;
	return p < q ? -1 : p > q; /* then by name, as listed */
}

static json_t *
edge_json(const struct meshquery_result *g, const struct meshquery_edge *e,
	  size_t peer, const struct health_tolerances *t)
{
	const struct meshquery_node *n = &g->nodes[peer];
	json_t *o = json_pack(
		"{s:s, s:s, s:I, s:f, s:s}", "peer", n->name, "protocol",
		e->protocol, "requests", (json_int_t)e->requests, "p95_ms",
		e->p95_ms, "health", health_name(meshquery_edge_health(t, e)));

	if (o == NULL ||
	    (n->ns != NULL &&
	     json_object_set_new(o, "namespace", json_string(n->ns))) ||
	    (n->leaf && json_object_set_new(o, "leaf", json_true())) ||
	    (e->async && json_object_set_new(o, "async", json_true())) ||
	    set_count(o, "errors", e->errors) ||
	    set_count(o, "client_errors", e->client_errors)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
edges_json(const struct res_call *x, const struct resourcequery_detail *d,
	   const size_t *v, size_t n, bool in)
{
	const struct meshquery_result *g = d->list->graph;
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n && i < MAX_EDGES; i++) {
		const struct meshquery_edge *e = &g->edges[v[i]];

		if (json_array_append_new(a,
					  edge_json(g, e, in ? e->src : e->dst,
						    &x->tol)) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* "GET /orders", "pkg.Svc/Method", "SELECT orders" */
static void
route_label(const struct spanquery_row *r, char *out, size_t cap)
{
	if (r->protocol == SPANQUERY_HTTP)
		snprintf(out, cap, "%s %s", r->k2, r->k1);
	else if (r->protocol == SPANQUERY_SQL && r->k2[0] != '\0')
		snprintf(out, cap, "%s %s", r->k1, r->k2);
	else
		snprintf(out, cap, "%s", r->k1);
}

static json_t *
routes_json(const struct resourcequery_detail *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < d->n_routes; i++) {
		const struct spanquery_row *r = d->routes[i].row;
		char label[512];
		json_t *o;

		route_label(r, label, sizeof(label));
		o = json_pack("{s:s, s:s, s:s, s:I, s:o}", "service",
			      d->routes[i].service, "protocol",
			      spanquery_protocol_name(r->protocol), "route",
			      label, "requests", (json_int_t)r->requests,
			      "p95_ms", ms_json(r->p95_ms));
		if (o == NULL || set_count(o, "errors", r->errors) ||
		    set_count(o, "client_errors", r->client_errors) ||
		    json_array_append_new(a, o) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *
last_error_json(const struct resourcequery_error *e)
{
	char at[TIMERANGE_FORMAT_MAX];
	json_t *o;

	if (!e->found)
		return json_null();
	timerange_format(e->at_us / 1000, at, sizeof(at));
	o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "time", at, "trace_id",
		      e->trace_id, "service", e->service, "span", e->span,
		      "source", e->source);
	if (o == NULL ||
	    (e->http_status > 0 &&
	     json_object_set_new(o, "http_status",
				 json_integer(e->http_status))) ||
	    (e->grpc_code > 0 &&
	     json_object_set_new(
		     o, "grpc_status",
		     json_string(otlp_grpc_code_name(e->grpc_code)))) ||
	    (e->message != NULL &&
	     json_object_set_new(o, "message", json_string(e->message)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- text, from the structured content ---------------------------------- */

static const char *
str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static uint64_t
num(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

/* "  pods a,b (+3)": the names of list key, unless it names only the
 * resource itself. */
static void
text_names(struct buf *b, const json_t *o, const char *key)
{
	const json_t *a = json_object_get(o, key), *v;
	char total[64];
	size_t i;

	snprintf(total, sizeof(total), "%s_total", key);
	if (json_array_size(a) == 0 ||
	    (json_array_size(a) == 1 && num(o, total) <= 1 &&
	     strcmp(json_string_value(json_array_get(a, 0)), str(o, "name")) ==
		     0))
		return; /* nothing the name does not say */
	buf_printf(b, "  %s ", key);
	json_array_foreach(a, i, v)
		buf_printf(b, "%s%s", i ? "," : "", json_string_value(v));
	if (num(o, total) > json_array_size(a))
		buf_printf(b, " (+%zu)",
			   (size_t)num(o, total) - json_array_size(a));
}

/* "  in 5 (20.0% err, 20.0% client err)" */
static void
text_calls(struct buf *b, const char *label, uint64_t n, uint64_t e,
	   uint64_t ce)
{
	char pct[RENDER_PCT_MAX], cpct[RENDER_PCT_MAX], count[32];

	render_count(n, count, sizeof(count));
	buf_printf(b, "  %s%s%s", label, *label ? " " : "", count);
	if (n == 0 || (e == 0 && ce == 0))
		return;
	render_pct(e, n, pct, sizeof(pct));
	render_pct(ce, n, cpct, sizeof(cpct));
	buf_printf(b, " (%s err", pct);
	if (ce > 0)
		buf_printf(b, ", %s client err", cpct);
	buf_puts(b, ")");
}

/* "api (shop)  HEALTHY  in 5 (20.0% err)  out 6  v2,v3  workloads
 * api-deploy  ebpf+otlp  seen 2026-...Z" */
static void
text_item(struct buf *b, const json_t *o)
{
	const json_t *src = json_object_get(o, "sources"), *v;
	const char *ns = str(o, "namespace");
	size_t i;

	buf_printf(b, "%s%s%s%s  %s", str(o, "name"), *ns ? " (" : "", ns,
		   *ns ? ")" : "", str(o, "health"));
	text_calls(b, "in", num(o, "requests"), num(o, "errors"),
		   num(o, "client_errors"));
	text_calls(b, "out", num(o, "calls_out"), num(o, "errors_out"),
		   num(o, "client_errors_out"));
	text_names(b, o, "versions");
	text_names(b, o, "workloads");
	text_names(b, o, "pods");
	text_names(b, o, "services");
	text_names(b, o, "hosts");
	buf_puts(b, "  ");
	json_array_foreach(src, i, v)
		buf_printf(b, "%s%s", i ? "+" : "", json_string_value(v));
	buf_printf(b, "  seen %s\n", str(o, "last_seen"));
}

static void
text_edge(struct buf *b, const json_t *e, bool in)
{
	char p95[32];

	render_ms(json_real_value(json_object_get(e, "p95_ms")), p95,
		  sizeof(p95));
	buf_printf(b, "  %s %s%s  %s%s", in ? "<-" : "->", str(e, "peer"),
		   json_is_true(json_object_get(e, "leaf")) ? " (leaf)" : "",
		   str(e, "protocol"),
		   json_is_true(json_object_get(e, "async")) ? " async" : "");
	text_calls(b, "", num(e, "requests"), num(e, "errors"),
		   num(e, "client_errors"));
	buf_printf(b, "  P95 %s  %s\n", p95, str(e, "health"));
}

static void
text_edges(struct buf *b, const json_t *sc, const char *key, size_t total)
{
	const json_t *a = json_object_get(sc, key), *e;
	size_t i;

	buf_printf(b, "%s (%zu):%s\n", key, total, total ? "" : " none");
	json_array_foreach(a, i, e)
	{
		text_edge(b, e, strcmp(key, "inbound") == 0);
		tool_fit(b);
	}
	if (total > json_array_size(a))
		buf_printf(b, "  %zu more (the quietest)\n",
			   total - json_array_size(a));
}

static void
text_detail(struct res_call *x, const json_t *sc)
{
	struct buf *b = &x->b;
	const json_t *routes = json_object_get(sc, "routes"), *r,
		     *le = json_object_get(sc, "last_error");
	const json_t *others = json_object_get(sc, "other_namespaces");
	size_t i;
	char p95[32];

	if (x->note[0] != '\0')
		buf_printf(b, "(%s)\n", x->note);
	buf_printf(b, "## %s %s, %s\n", type_word(x), str(sc, "name"),
		   x->rdesc);
	text_item(b, sc);
	if (json_array_size(others) > 0)
		buf_printf(b,
			   "Also in %zu other namespace(s): name namespaces to "
			   "choose.\n",
			   json_array_size(others));
	text_edges(b, sc, "inbound", num(sc, "inbound_total"));
	text_edges(b, sc, "outbound", num(sc, "outbound_total"));
	buf_printf(b, "routes:%s\n", json_array_size(routes) ? "" : " none");
	json_array_foreach(routes, i, r)
	{
		render_ms(json_real_value(json_object_get(r, "p95_ms")), p95,
			  sizeof(p95));
		buf_printf(b, "  %s %s", str(r, "protocol"), str(r, "route"));
		text_calls(b, "", num(r, "requests"), num(r, "errors"),
			   num(r, "client_errors"));
		buf_printf(b, "  P95 %s\n", p95);
		tool_fit(b);
	}
	if (json_is_object(le)) {
		buf_printf(b, "last error: %s trace %s %s \"%s\"",
			   str(le, "time"), str(le, "trace_id"),
			   str(le, "service"), str(le, "span"));
		if (num(le, "http_status") > 0)
			buf_printf(b, " HTTP %u",
				   (unsigned)num(le, "http_status"));
		if (*str(le, "grpc_status"))
			buf_printf(b, " %s", str(le, "grpc_status"));
		if (*str(le, "message"))
			buf_printf(b, ": %s", str(le, "message"));
		buf_puts(b, "\n");
	} else {
		buf_puts(b, "last error: none in the range\n");
	}
	tool_fit(b);
}

/* ---- the two answers ---------------------------------------------------- */

static int
res_list(struct res_call *x, struct resourcequery_list *l, json_t **result)
{
	const struct resourcequery_item **order =
		calloc(l->n + 1, sizeof(*order));
	json_t *rows = json_array(), *sc = NULL, *v;
	size_t budget = call_text_budget(x->call), shown = 0, i;
	size_t nh[HEALTH_UNHEALTHY + 1] = {0};
	int rc = STATUS_NOMEM;

	if (order == NULL || rows == NULL)
		goto out;
	for (i = 0; i < l->n; i++) {
		order[i] = &l->items[i];
		nh[resourcequery_health(&x->tol, order[i])]++;
	}
	qsort_r(order, l->n, sizeof(*order), worst_first, x);
	for (i = 0; i < l->n; i++)
		if (json_array_append_new(rows, item_json(x, order[i], false)))
			goto out;
	if (redact_json(call_redact(x->call), rows) != STATUS_OK)
		goto out;
	buf_printf(&x->b,
		   "## %ss, %s: %zu (%zu unhealthy, %zu degraded, %zu "
		   "healthy, %zu without calls)\n",
		   type_word(x), x->rdesc, l->n, nh[HEALTH_UNHEALTHY],
		   nh[HEALTH_DEGRADED], nh[HEALTH_HEALTHY], nh[HEALTH_NA]);
	json_array_foreach(rows, i, v)
	{
		size_t mark = x->b.len;

		text_item(&x->b, v);
		if (tool_fit(&x->b) != STATUS_OK ||
		    x->b.len + TAIL_ROOM > budget) {
			buf_rollback(&x->b, mark);
			break;
		}
		shown++;
	}
	if (shown < l->n)
		buf_printf(&x->b, "%zu more not shown: name namespaces.\n",
			   l->n - shown);
	if (l->n == 0)
		buf_printf(&x->b,
			   "No %s has spans in %s%s: widen rateInterval.\n",
			   type_word(x), x->rdesc,
			   x->nns > 0 ? " in the namespaces named" : "");
	buf_puts(&x->b, "Health by Kiali's rule on calls in and out: ");
	tool_health_rule(&x->b, &x->tol);
	buf_puts(&x->b, ". Name one (resource_name) for its edges, routes and "
			"last error.\n");
	if (l->truncated)
		buf_printf(&x->b, "More than %d: the rest were not read.\n",
			   RESOURCEQUERY_MAX_ITEMS);
	tool_fit(&x->b);
	while (json_array_size(rows) > shown)
		json_array_remove(rows, json_array_size(rows) - 1);
	sc = json_pack("{s:s, s:o, s:o, s:I, s:I}", "resource_type",
		       type_word(x), "resources", rows, "time_range",
		       tool_range_json(&x->tr), "total", (json_int_t)l->n,
		       "not_shown", (json_int_t)(l->n - shown));
	rows = NULL;
	if (sc == NULL)
		goto out;
	rc = tool_result_fit(x->call, &x->b, sc,
			     (struct tool_rows[]){{"resources", "not_shown",
						   "resources", l->n, 0, 0}},
			     1, "name namespaces", result);
out:
	json_decref(rows);
	free(order);
	return rc;
}

static int
res_detail(struct res_call *x, struct resourcequery_detail *d, json_t **result)
{
	json_t *sc = item_json(x, d->item, true), *others = json_array();
	int rc = STATUS_NOMEM;

	for (size_t i = 0; others != NULL && i < d->list->n; i++)
		if (&d->list->items[i] != d->item &&
		    json_array_append_new(
			    others, json_string(d->list->items[i].ns)) != 0)
			goto out;
	if (sc == NULL || others == NULL ||
	    json_object_set_new(sc, "resource_type",
				json_string(type_word(x))) ||
	    json_object_set_new(sc, "inbound",
				edges_json(x, d, d->in, d->n_in, true)) ||
	    json_object_set_new(sc, "inbound_total",
				json_integer((json_int_t)d->n_in)) ||
	    json_object_set_new(sc, "outbound",
				edges_json(x, d, d->out, d->n_out, false)) ||
	    json_object_set_new(sc, "outbound_total",
				json_integer((json_int_t)d->n_out)) ||
	    json_object_set_new(sc, "routes", routes_json(d)) ||
	    json_object_set_new(sc, "last_error",
				last_error_json(&d->last_error)) ||
	    (json_array_size(others) > 0 &&
	     json_object_set(sc, "other_namespaces", others)) ||
	    json_object_set_new(sc, "time_range", tool_range_json(&x->tr)) ||
	    redact_json(call_redact(x->call), sc) != STATUS_OK)
		goto out;
	text_detail(x, sc);
	buf_puts(&x->b, "Health by Kiali's rule: ");
	tool_health_rule(&x->b, &x->tol);
	buf_printf(&x->b, "; routes from the source that saw the most%s.\n",
		   d->routes_rollup ? ", P95 from the rollups (within 0.5%)"
				    : "");
	tool_fit(&x->b);
	rc = tool_result_fit(x->call, &x->b, sc, NULL, 0, NULL, result);
	sc = NULL;
out:
	json_decref(sc);
	json_decref(others);
	return rc;
}

/* The error for a name with no spans: close names from the store (a
 * service) or from names[0..n) (the range's workloads). */
static int
res_unknown(struct res_call *x, struct pg_conn *c, const char *const *names,
	    size_t n_names, json_t **result)
{
	const char *best[4];
	char why[512];
	size_t n = 0;
	int len;

	if (x->type == RESOURCEQUERY_SERVICE &&
	    tool_unknown_service(c, x->name, NULL, why, sizeof(why)))
		return error_result(result, tool_result_error("%s", why))
			       ? STATUS_OK
			       : STATUS_NOMEM;
	if (names != NULL)
		n = spanquery_suggest(x->name, names, n_names, best, 4);
	len = snprintf(why, sizeof(why), "%s \"%s\" has no spans in %s%s",
		       type_word(x), x->name, x->rdesc,
		       x->nns > 0 ? " in the namespaces named" : "");
	for (size_t i = 0; i < n && (size_t)len < sizeof(why); i++)
		len += snprintf(why + len, sizeof(why) - (size_t)len, "%s%s",
				i ? " or " : "; did you mean ", best[i]);
	if ((size_t)len < sizeof(why))
		snprintf(why + len, sizeof(why) - (size_t)len,
			 "%s: widen rateInterval, or list the %ss without "
			 "resource_name",
			 n > 0 ? "?" : "", type_word(x));
	return error_result(result, tool_result_error("%s", why))
		       ? STATUS_OK
		       : STATUS_NOMEM;
}

/*
 * A workload name not found: the names of the range's workloads into
 * *names (in *l), and the one the name means as people write it
 * (spanquery_resolve) into x->svc, with x->note; *found says whether one
 * did.
 */
static int
res_workload_names(struct res_call *x, struct pg_conn *c,
		   struct resourcequery_list **l, const char ***names,
		   bool *found, struct pg_error *perr)
{
	struct resourcequery_filter f = res_filter(x, NULL);
	size_t k;
	int rc;

	*found = false;
	if ((rc = resourcequery_list(c, &f, l, perr)) != STATUS_OK)
		return rc;
	if ((*names = calloc((*l)->n + 1, sizeof(**names))) == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < (*l)->n; i++)
		(*names)[i] = (*l)->items[i].name;
	k = spanquery_resolve(x->name, *names, (*l)->n);
	if (k != SPANQUERY_NO_NAME) {
		snprintf(x->svc, sizeof(x->svc), "%s", (*names)[k]);
		snprintf(x->note, sizeof(x->note),
			 "workload: %s (from \"%.200s\")", x->svc, x->name);
		*found = true;
	}
	return STATUS_OK;
}

static int
get_resource_detail(struct call *call, const json_t *args, json_t **result)
{
	struct res_call x = {.call = call, .now = clock_wall_ms()};
	struct resourcequery_list *l = NULL;
	struct resourcequery_detail *d = NULL;
	struct resourcequery_filter f;
	struct pg_conn *c = NULL;
	struct pg_error perr;
	const char **names = NULL;
	bool found;
	char why[320];
	int rc;

	*result = NULL;
	buf_init(&x.b, call_text_budget(call) + 4096);
	x.tol = tool_health_tolerances(call);
	if ((rc = res_args(&x, args, result)) != STATUS_OK || *result != NULL)
		goto out;
	rc = tool_conn_get(call, &c, why, sizeof(why), &perr);
	if (rc == STATUS_UNSUPPORTED) {
		*result = tool_result_error("telemetry store unavailable: %s",
					    why);
		rc = STATUS_OK;
		goto out;
	}
	if (rc != STATUS_OK)
		goto failed;
	f = res_filter(&x, x.name);
	if (x.name == NULL) {
		if ((rc = resourcequery_list(c, &f, &l, &perr)) != STATUS_OK)
			goto failed;
		rc = res_list(&x, l, result);
		goto out;
	}
	rc = resourcequery_detail(c, &f, &d, &perr);
	if (rc == STATUS_NOTFOUND && x.type == RESOURCEQUERY_WORKLOAD) {
		if ((rc = res_workload_names(&x, c, &l, &names, &found,
					     &perr)) != STATUS_OK)
			goto failed;
		f.name = x.name = found ? x.svc : x.name;
		rc = found ? resourcequery_detail(c, &f, &d, &perr)
			   : STATUS_NOTFOUND;
	}
	if (rc == STATUS_NOTFOUND) {
		rc = res_unknown(&x, c, names, l != NULL ? l->n : 0, result);
		goto out;
	}
	if (rc != STATUS_OK)
		goto failed;
	rc = res_detail(&x, d, result);
	goto out;
failed:
	rc = tool_store_failed(call, "get_resource_detail", rc, &perr,
			       "narrow rateInterval or name namespaces",
			       result);
out:
	if (c != NULL)
		pg_release(c);
	free(names);
	resourcequery_list_free(l);
	resourcequery_detail_free(d);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler mesh_resource_tool_handlers[] = {
	{"get_resource_detail", get_resource_detail},
	{NULL, NULL},
};

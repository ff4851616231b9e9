/*
 * tool_mesh_traces.c - get_traces, of the "mesh" set: one trace (by id or
 * its first digits), or the recent traces of a service (failed ones only
 * on request), each merged from both span sources (lib/telemetry/merge)
 * and summarised as Kiali's get_traces summarises one
 * (lib/telemetry/tracesummary): bottlenecks on the critical path, error
 * spans, the error chain.  Text: a line per trace an on-call engineer
 * reads at once, then the lists of the one trace (or the worst).
 * Structured content: Kiali's GetTracesResponse (found, query, trace_id,
 * summary) with Sextant's marks (source, self time, async), and for a
 * service every trace's summary.
 */
#include "tools/tool_mesh_traces.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/spanquery.h"
#include "telemetry/tracesummary.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_detail.h"

/* Kiali's defaults (mcputil.DefaultLookbackSeconds, DefaultTracesLimit,
 * DefaultMaxSpans); the schema holds the bounds. */
#define DEFAULT_LOOKBACK_S 600
#define DEFAULT_LIMIT	   10
#define DEFAULT_MAX_SPANS  7
/* Spans per list in each trace of a service's answer (max_spans, if
 * fewer): ten traces of 7 + 7 spans and a chain would not fit
 * tools.max_answer_bytes (a span is about 300 bytes); Kiali's pick, the
 * top-level summary, has max_spans. */
#define ITEM_SPANS 3
/* Text kept for the worst trace's lists below a service's lines: 7
 * bottlenecks, 7 error spans and a chain of a few hops, about 200 bytes
 * each; the lines past it are in structured content only. */
#define LISTS_ROOM 4000
/* names and messages in a line are cut to this many bytes */
#define NAME_MAX 120

struct traces_call {
	struct call *call;
	int64_t now;
	/* arguments */
	const char *tid_arg;
	const char *prefix; /* the id's first digits only, when given so */
	uint8_t id[16];
	char tid[33];
	const char *ns;
	const char *service; /* as the store names it, or NULL */
	char svc[256], svc_note[320];
	bool error_only;
	int64_t lookback_s;
	size_t limit, max_spans;
	/* the spans read */
	struct tool_conns k;
	char status[TOOL_SPAN_SRCS][TOOL_STATUS_MAX];
	struct spanquery_spans *sp[TOOL_SPAN_SRCS]; /* one trace: per source */
	struct spanquery_spans *all;		    /* a service's: together */
	uint8_t ids[SPANQUERY_MAX_TRACES][16];
	int64_t keys[SPANQUERY_MAX_TRACES];
	size_t nids;
	bool more;
	size_t n_src[TOOL_SPAN_SRCS];
	struct redact_kept kept;
	struct merge_span *spans;
	struct merge_result *res;
	size_t *order; /* of res->traces, newest first */
	size_t best;   /* Kiali's pick: the longest failed, else longest */
	struct tool_details det;
	size_t budget; /* of the text, bytes */
	struct buf b;
};

/* ---- arguments ---------------------------------------------------------- */

static int64_t
int_of(const json_t *args, const char *name, int64_t dflt)
{
	const json_t *v = json_object_get(args, name);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* *result is the answer when the arguments are bad. */
static int
traces_args(struct traces_call *x, const json_t *args, json_t **result)
{
	const char *given = tool_arg_str(args, "service_name");

	x->tid_arg = tool_arg_str(args, "trace_id");
	x->ns = tool_arg_str(args, "namespace");
	x->error_only = json_is_true(json_object_get(args, "error_only"));
	x->lookback_s = int_of(args, "lookback_seconds", DEFAULT_LOOKBACK_S);
	x->limit = (size_t)int_of(args, "limit", DEFAULT_LIMIT);
	x->max_spans = (size_t)int_of(args, "max_spans", DEFAULT_MAX_SPANS);
	if (x->tid_arg != NULL) {
		if (spanquery_is_trace_prefix(x->tid_arg)) {
			x->prefix = x->tid_arg;
			return STATUS_OK;
		}
		if (tool_parse_trace_id(x->tid_arg, x->id) == STATUS_OK) {
			hex_encode(x->id, 16, x->tid);
			return STATUS_OK;
		}
		*result = tool_result_error(
			"trace_id must be 32 hex digits (or the first 8 or "
			"more), not all zero (e.g. "
			"\"4bf92f3577b34da6a3ce929d0e0e4736\"), got \"%.40s\"",
			x->tid_arg);
	} else if (given == NULL) {
		*result = tool_result_error(
			"give trace_id for one trace, or service_name (with "
			"its namespace) for the service's recent traces");
	} else {
		x->service = tool_service_name(x->call, given, x->svc,
					       sizeof(x->svc), x->svc_note,
					       sizeof(x->svc_note));
		return STATUS_OK;
	}
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

/* ---- reading the spans -------------------------------------------------- */

/* A service's most recent traces (failed ones only on request) and every
 * span of them, from every source in one statement. */
static int
fetch_service(struct traces_call *x, json_t **result)
{
	struct spanquery_trace_filter f = {
		.service = x->service,
		.from_ms = x->now - x->lookback_s * 1000,
		.to_ms = x->now + 1,
		.min_duration_ns = -1,
		.max_traces = x->limit,
		.failed_only = x->error_only,
	};
	struct pg_error pe;
	int rc = spanquery_recent_send(x->k.c[0], NULL, &f, &pe);

	if (rc == STATUS_OK)
		rc = spanquery_recent_recv(x->k.c[0], x->limit, x->ids, x->keys,
					   &x->nids, &x->more, &x->all, &pe);
	if (rc != STATUS_OK)
		return tool_store_failed(x->call, "get_traces", rc, &pe, NULL,
					 result);
	return STATUS_OK;
}

/* What the answer shows of a span goes out redacted. */
static void
redact_spans(struct traces_call *x, struct spanquery_spans *sp)
{
	const struct redact *r = call_redact(x->call);

	for (size_t j = 0; sp != NULL && j < sp->n; j++) {
		struct spanquery_span *s = &sp->spans[j];

		s->service = redact_keep(&x->kept, r, s->service);
		s->name = redact_keep(&x->kept, r, s->name);
		s->status_message = redact_keep(&x->kept, r, s->status_message);
	}
}

static void
add_spans(struct traces_call *x, const struct spanquery_spans *sp, int src,
	  size_t *n)
{
	for (size_t j = 0; sp != NULL && j < sp->n; j++) {
		int i = src >= 0 ? src : tool_span_source(sp->spans[j].source);

		if (i < 0)
			continue; /* the table holds the span sources only */
		tool_merge_span(&x->spans[(*n)++], &sp->spans[j],
				tool_sources[i].merge);
		x->n_src[i]++;
	}
}

static int
by_start_desc(const void *a, const void *b, void *arg)
{
	const struct merge_result *r = arg;
	const struct merge_trace *x = &r->traces[*(const size_t *)a];
	const struct merge_trace *y = &r->traces[*(const size_t *)b];

	if (x->start_ns != y->start_ns)
		return x->start_ns > y->start_ns ? -1 : 1;
	return memcmp(x->trace_id, y->trace_id, 16);
}

/* One tree per trace, newest first; every span read is a node (the
 * summary's lists keep the answer short). */
static int
merge_all(struct traces_call *x)
{
	struct merge_opts opts = {.max_spans = 2 * SPANQUERY_MAX_SPANS,
				  .max_traces = SPANQUERY_MAX_TRACES};
	size_t n = x->all != NULL ? x->all->n : 0;
	int rc;

	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		n += x->sp[i] != NULL ? x->sp[i]->n : 0;
	if ((x->spans = calloc(n + 1, sizeof(*x->spans))) == NULL)
		return STATUS_NOMEM;
	n = 0;
	redact_spans(x, x->all);
	add_spans(x, x->all, -1, &n);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		redact_spans(x, x->sp[i]);
		add_spans(x, x->sp[i], i, &n);
	}
	if ((rc = merge_traces(x->spans, n, &opts, &x->res)) != STATUS_OK)
		return rc;
	if ((x->order = calloc(x->res->n_traces + 1, sizeof(*x->order))) ==
	    NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < x->res->n_traces; i++)
		x->order[i] = i;
	qsort_r(x->order, x->res->n_traces, sizeof(*x->order), by_start_desc,
		x->res);
	return STATUS_OK;
}

/* ---- one trace's summary ------------------------------------------------ */

static bool
node_failed(const struct merge_node *node, void *arg)
{
	(void)arg;
	return tool_span_row(node)->status == 2;
}

static uint64_t
trace_ns(const struct merge_trace *t)
{
	return t->end_ns - t->start_ns;
}

static size_t
errors_of(const struct merge_trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_nodes; i++)
		n += node_failed(&t->nodes[i], NULL);
	return n;
}

/* Kiali's pick for a service (pickBestTrace): the longest of the failed
 * traces, else of them all; the first (newest) on a tie. */
static size_t
pick_best(const struct traces_call *x)
{
	size_t best = 0;
	bool best_failed = false;

	for (size_t k = 0; k < x->res->n_traces; k++) {
		const struct merge_trace *t = &x->res->traces[x->order[k]];
		bool failed = errors_of(t) > 0;

		if (k == 0 || (failed && !best_failed) ||
		    (failed == best_failed &&
		     trace_ns(t) > trace_ns(&x->res->traces[x->order[best]]))) {
			best = k;
			best_failed = failed;
		}
	}
	return best;
}

/* The details the answer shows (codes, peer, exception), redacted, for
 * the spans s lists. */
static int
want_details(struct traces_call *x, const struct merge_trace *t,
	     const struct tracesummary *s)
{
	const size_t *lists[] = {s->chain, s->bottlenecks, s->errors, s->roots};
	const size_t counts[] = {s->n_chain, s->n_bottlenecks,
				 s->n_errors_listed, s->n_roots};

	tool_details_free(&x->det);
	for (size_t l = 0; l < 4; l++)
		for (size_t i = 0; i < counts[l]; i++)
			(void)tool_details_want(&x->det, &t->nodes[lists[l][i]],
						false);
	return tool_details_fetch(x->call, tool_conns_for(&x->k, 0), &x->det);
}

/* "gRPC", "HTTP", "postgresql": what the span spoke, NULL when unknown */
static const char *
protocol_of(const struct spanquery_detail *x)
{
	if (x == NULL)
		return NULL;
	if (x->grpc_code >= 0)
		return "gRPC";
	if (x->http_status >= 0)
		return "HTTP";
	return x->db_system;
}

/* "payments Charge" */
static void
put_call(struct buf *b, const struct merge_node *node)
{
	tool_put_line(b, tool_span_row(node)->service, NAME_MAX);
	buf_puts(b, " ");
	tool_put_line(b, tool_span_row(node)->name, NAME_MAX);
}

/* "UNAVAILABLE (connection refused)": what failed node says of itself */
static void
put_failure(struct buf *b, const struct merge_node *node,
	    const struct spanquery_detail *x)
{
	const char *msg = tool_span_row(node)->status_message;
	char code[48];

	tool_detail_code(x, code, sizeof(code));
	buf_puts(b, code[0] != '\0' ? code + 1 : "ERROR");
	if (msg != NULL && msg[0] != '\0') {
		buf_puts(b, " (");
		tool_put_line(b, msg, NAME_MAX);
		buf_puts(b, ")");
	}
}

/*
 * The line an on-call engineer reads: "checkout 1,240ms: 71% in payments
 * Charge (gRPC, 880ms); error chain: frontend -> checkout -> payments:
 * UNAVAILABLE (connect refused)", or "; no errors".
 */
static void
headline(struct traces_call *x, const struct merge_trace *t)
{
	struct tracesummary whole;
	const struct tracesummary *s = &whole;
	struct buf *b = &x->b;
	const struct merge_node *req = &t->nodes[t->request];
	char dur[24], pct[RENDER_PCT_MAX];
	const char *last = NULL;

	/* the whole chain (its top and origin are in every list's
	 * summary: their details were read) */
	tracesummary_build(t, TRACESUMMARY_MAX, node_failed, NULL, &whole);
	render_ms((double)t->request_ns / 1e6, dur, sizeof(dur));
	tool_put_line(b, tool_span_row(req)->service, NAME_MAX);
	buf_printf(b, " %s", dur);
	if (s->n_bottlenecks > 0) {
		const struct merge_node *top = &t->nodes[s->bottlenecks[0]];
		const char *proto = protocol_of(tool_details_of(&x->det, top));

		render_pct(top->self_ns, t->request_ns, pct, sizeof(pct));
		render_ms((double)top->self_ns / 1e6, dur, sizeof(dur));
		buf_printf(b, ": %s in ", pct);
		put_call(b, top);
		buf_printf(b, " (%s%s%s)", proto != NULL ? proto : "",
			   proto != NULL ? ", " : "", dur);
	}
	if (s->origin == MERGE_NONE) {
		buf_puts(b, "; no errors\n");
		return;
	}
	buf_puts(b, "; error chain: ");
	for (size_t h = 0; h < s->n_chain; h++) {
		const char *svc =
			tool_span_row(&t->nodes[s->chain[h]])->service;

		if (last != NULL && strcmp(last, svc) == 0 &&
		    !(h == 1 && s->chain_cut > 0))
			continue;
		if (last != NULL)
			buf_puts(b, h == 1 && s->chain_cut > 0 ? " -> … -> "
							       : " -> ");
		tool_put_line(b, svc, NAME_MAX);
		last = svc;
	}
	buf_puts(b, ": ");
	put_failure(b, &t->nodes[s->origin],
		    tool_details_of(&x->det, &t->nodes[s->origin]));
	buf_puts(b, "\n");
}

/* "[OTLP] payments: Charge (900ms)" */
static void
span_ref(struct buf *b, const struct merge_node *node)
{
	tool_span_ref(b, node);
	if (node->also_seen_by != 0)
		buf_puts(b, " (also seen by eBPF)");
}

/* The lists of one trace, in text. */
static void
lists_text(struct traces_call *x, const struct merge_trace *t,
	   const struct tracesummary *s)
{
	struct buf *b = &x->b;
	char self[24], pct[RENDER_PCT_MAX];

	buf_puts(b, "Bottlenecks (self time on the critical path):\n");
	if (s->n_bottlenecks == 0)
		buf_puts(b, "none: no span on it has time of its own\n");
	for (size_t i = 0; i < s->n_bottlenecks; i++) {
		const struct merge_node *node = &t->nodes[s->bottlenecks[i]];

		render_ms((double)node->self_ns / 1e6, self, sizeof(self));
		render_pct(node->self_ns, t->request_ns, pct, sizeof(pct));
		buf_printf(b, "%zu. ", i + 1);
		span_ref(b, node);
		buf_printf(b, ": self %s, %s of the request\n", self, pct);
		tool_fit(b);
	}
	if (s->n_errors == 0)
		return;
	buf_printf(b, "Error spans (%zu, longest first):\n", s->n_errors);
	for (size_t i = 0; i < s->n_errors_listed; i++) {
		const struct merge_node *node = &t->nodes[s->errors[i]];

		buf_printf(b, "%zu. ", i + 1);
		span_ref(b, node);
		buf_puts(b, " ERROR ");
		put_failure(b, node, tool_details_of(&x->det, node));
		buf_puts(b, "\n");
		tool_fit(b);
	}
	buf_puts(b, "Error chain (root to where it began):\n");
	for (size_t h = 0; h < s->n_chain; h++) {
		const struct merge_node *node = &t->nodes[s->chain[h]];

		if (h == 1 && s->chain_cut > 0)
			buf_printf(b, "   … %zu level%s between …\n",
				   s->chain_cut, s->chain_cut == 1 ? "" : "s");
		buf_printf(b, "%zu. ", h + 1);
		span_ref(b, node);
		if (node_failed(node, NULL)) {
			buf_puts(b, " ERROR ");
			put_failure(b, node, tool_details_of(&x->det, node));
		} else {
			buf_puts(b, " not failed");
		}
		tool_detail_text(b, node, tool_details_of(&x->det, node));
		buf_puts(b, "\n");
		tool_fit(b);
	}
}

/* Kiali's span tags from what the row says (string values, as Jaeger's). */
static int
tags_json(json_t *o, const struct merge_node *node,
	  const struct spanquery_detail *x)
{
	char v[24];
	json_t *tags = json_object();
	int bad = tags == NULL;

	if (!bad && node_failed(node, NULL))
		bad |= json_object_set_new(tags, "error", json_string("true"));
	if (!bad && x != NULL && x->http_status >= 0) {
		snprintf(v, sizeof(v), "%d", x->http_status);
		bad |= json_object_set_new(tags, "http.status_code",
					   json_string(v));
	}
	if (!bad && x != NULL && x->grpc_code >= 0) {
		snprintf(v, sizeof(v), "%d", x->grpc_code);
		bad |= json_object_set_new(tags, "grpc.status_code",
					   json_string(v));
	}
	if (!bad && x != NULL && x->peer != NULL)
		bad |= json_object_set_new(tags, "peer.service",
					   json_string(x->peer));
	if (!bad && x != NULL && x->db_system != NULL)
		bad |= json_object_set_new(tags, "db.system",
					   json_string(x->db_system));
	if (!bad && x != NULL && x->exception_type != NULL)
		bad |= json_object_set_new(tags, "exception.type",
					   json_string(x->exception_type));
	if (bad) {
		json_decref(tags);
		return -1;
	}
	if (json_object_size(tags) == 0) {
		json_decref(tags);
		return 0;
	}
	return json_object_set_new(o, "tags", tags);
}

/* a share in percent to 0.01: what the text shows, in a few bytes */
static double
round_pct(double pct)
{
	return round(pct * 100) / 100;
}

/*
 * Kiali's SpanBrief (duration_ms, operation, parent_span_id, service,
 * span_id, start_offset_ms, tags: "error" on a failed span) and Sextant's
 * marks: source, the other source that saw it, async, the failure's
 * message, and with share (a bottleneck) self time and its share of the
 * request.  New reference; NULL on ENOMEM.
 */
static json_t *
brief_json(struct traces_call *x, const struct merge_trace *t, size_t i,
	   bool share)
{
	const struct merge_node *node = &t->nodes[i];
	const struct spanquery_span *s = tool_span_row(node);
	char sid[17], pid[17];
	json_t *o;
	int bad;

	hex_encode(s->span_id, 8, sid);
	hex_encode(s->parent_span_id, 8, pid);
	o = json_pack(
		"{s:f, s:s, s:s*, s:s, s:s, s:f, s:s}", "duration_ms",
		(double)s->duration_ns / 1e6, "operation", s->name,
		"parent_span_id", s->has_parent ? pid : NULL, "service",
		s->service, "span_id", sid, "start_offset_ms",
		(double)(node->span->start_ns - t->start_ns) / 1e6, "source",
		tool_sources[tool_source_of_merge(node->span->source)].name);
	if (o == NULL)
		return NULL;
	bad = tags_json(o, node, tool_details_of(&x->det, node));
	if (!bad && node->also_seen_by != 0)
		bad = json_object_set_new(
			o, "also_seen_by",
			json_string(tool_sources[TOOL_SRC_EBPF].name));
	if (!bad && node->async)
		bad = json_object_set_new(o, "async", json_true());
	if (!bad && node_failed(node, NULL) && s->status_message != NULL)
		bad = json_object_set_new(o, "status_message",
					  json_string(s->status_message));
	/* self time and share where they matter: the bottlenecks */
	if (!bad && share)
		bad = json_object_set_new(
			      o, "self_ms",
			      json_real((double)node->self_ns / 1e6)) ||
		      json_object_set_new(o, "share_pct",
					  json_real(round_pct(merge_pct(
						  (double)node->self_ns,
						  (double)t->request_ns))));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
briefs_json(struct traces_call *x, const struct merge_trace *t,
	    const size_t *list, size_t n, bool share)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a,
					  brief_json(x, t, list[i], share))) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

/* Kiali's TraceSummary of t, root_spans only with roots (new reference;
 * NULL on ENOMEM). */
static json_t *
summary_json(struct traces_call *x, const struct merge_trace *t,
	     const struct tracesummary *s, bool roots)
{
	json_t *o = json_pack(
		"{s:f, s:I, s:f, s:I, s:I, s:o, s:o, s:o, s:o*}",
		"total_duration_ms", (double)trace_ns(t) / 1e6, "total_spans",
		(json_int_t)t->span_count, "request_ms",
		(double)t->request_ns / 1e6, "error_count",
		(json_int_t)s->n_errors, "duplicates",
		(json_int_t)t->duplicates, "bottlenecks",
		briefs_json(x, t, s->bottlenecks, s->n_bottlenecks, true),
		"error_chain", briefs_json(x, t, s->chain, s->n_chain, false),
		"error_spans",
		briefs_json(x, t, s->errors, s->n_errors_listed, false),
		"root_spans",
		roots ? briefs_json(x, t, s->roots, s->n_roots, false) : NULL);

	if (o != NULL && s->chain_cut > 0 &&
	    json_object_set_new(o, "error_chain_cut",
				json_integer((json_int_t)s->chain_cut))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* ---- the answer --------------------------------------------------------- */

static json_t *
query_json(const struct traces_call *x)
{
	return json_pack(
		"{s:s*, s:s*, s:s*, s:b, s:I, s:I, s:I}", "trace_id",
		x->tid_arg != NULL ? x->tid : NULL, "namespace", x->ns,
		"service_name", x->service, "error_only", x->error_only,
		"lookback_seconds", (json_int_t)x->lookback_s, "limit",
		(json_int_t)x->limit, "max_spans", (json_int_t)x->max_spans);
}

static json_t *
sources_json(const struct traces_call *x)
{
	json_t *o = json_object();

	for (int i = 0; o != NULL && i < TOOL_SPAN_SRCS; i++) {
		const char *st = x->status[i][0] != '\0' ? x->status[i]
				 : x->n_src[i] > 0	 ? "ok"
							 : "no_data";

		if (json_object_set_new(o, tool_sources[i].name,
					json_string(st))) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* "Sources: OTLP 30 spans; eBPF 8 spans (3 seen by both, shown once as
 * OTLP)" */
static void
sources_line(struct traces_call *x, size_t duplicates)
{
	buf_puts(&x->b, "Sources:");
	for (int i = TOOL_SPAN_SRCS; i-- > 0;) {
		char n[32];

		buf_puts(&x->b, i == TOOL_SPAN_SRCS - 1 ? " " : "; ");
		if (x->status[i][0] != '\0') {
			buf_printf(&x->b, "%s %s", tool_sources[i].label,
				   x->status[i]);
			continue;
		}
		render_count(x->n_src[i], n, sizeof(n));
		buf_printf(&x->b, "%s %s span%s", tool_sources[i].label, n,
			   x->n_src[i] == 1 ? "" : "s");
	}
	if (duplicates > 0)
		buf_printf(&x->b, " (%zu seen by both, shown once as OTLP)",
			   duplicates);
	buf_puts(&x->b, "\n");
	if (x->all != NULL && x->all->truncated)
		buf_printf(&x->b, "(only the first %d spans were read)\n",
			   SPANQUERY_MAX_SPANS);
}

/* The answer for one trace. */
static int
answer_one(struct traces_call *x, json_t **result)
{
	const struct merge_trace *t;
	struct tracesummary s;
	char dur[24];
	json_t *sc;
	int rc;

	if (x->res->n_traces == 0) {
		*result = tool_result_error(
			"no trace %s in the store: give an id from "
			"get_traces(service_name) or query_traces",
			x->tid);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	t = &x->res->traces[0];
	tracesummary_build(t, x->max_spans, node_failed, NULL, &s);
	if ((rc = want_details(x, t, &s)) != STATUS_OK)
		return rc;
	render_ms((double)trace_ns(t) / 1e6, dur, sizeof(dur));
	buf_printf(&x->b, "## Trace %s: %s, %zu span%s, %zu error span%s\n",
		   x->tid, dur, t->span_count, t->span_count == 1 ? "" : "s",
		   s.n_errors, s.n_errors == 1 ? "" : "s");
	headline(x, t);
	sources_line(x, t->duplicates);
	lists_text(x, t, &s);
	sc = json_pack("{s:b, s:o, s:s, s:o, s:o}", "found", true, "query",
		       query_json(x), "trace_id", x->tid, "summary",
		       summary_json(x, t, &s, true), "sources",
		       sources_json(x));
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_fit(x->call, &x->b, sc, NULL, 0,
			       "ask for fewer spans per list (max_spans)",
			       result);
}

/* A service's traces: a line each, the worst one's lists, every one's
 * summary in structured content. */
static int
answer_service(struct traces_call *x, json_t **result)
{
	const struct merge_trace *best;
	struct tracesummary s;
	char desc[TIMERANGE_DESCRIBE_MAX], why[512], avg[24];
	struct timerange tr = {x->now - x->lookback_s * 1000, x->now};
	uint64_t sum = 0;
	size_t failed = 0, dups = 0, unlisted = 0;
	json_t *list = NULL, *best_summary = NULL, *sc;
	int rc = STATUS_NOMEM;

	if (x->res->n_traces == 0 &&
	    tool_unknown_service(x->k.c[0], x->service, "list_services", why,
				 sizeof(why))) {
		*result = tool_result_error("no traces: %s", why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	timerange_describe(&tr, x->now, desc, sizeof(desc));
	for (size_t k = 0; k < x->res->n_traces; k++) {
		const struct merge_trace *t = &x->res->traces[k];

		sum += trace_ns(t);
		failed += errors_of(t) > 0;
		dups += t->duplicates;
	}
	if (x->svc_note[0] != '\0')
		buf_printf(&x->b, "(%s)\n", x->svc_note);
	buf_puts(&x->b, "## ");
	tool_put_line(&x->b, x->service, NAME_MAX);
	buf_printf(&x->b, ": %zu%s trace%s (%s)", x->res->n_traces,
		   x->error_only ? " failed" : "",
		   x->res->n_traces == 1 ? "" : "s", desc);
	if (x->res->n_traces == 0) {
		buf_puts(&x->b, "\n");
	} else {
		render_ms((double)sum / (double)x->res->n_traces / 1e6, avg,
			  sizeof(avg));
		if (!x->error_only)
			buf_printf(&x->b, ", %zu with errors", failed);
		buf_printf(&x->b, ", avg %s%s\n", avg,
			   x->more ? "; more match (raise limit)" : "");
	}
	if ((list = json_array()) == NULL)
		goto out;
	x->best = pick_best(x);
	for (size_t k = 0; k < x->res->n_traces; k++) {
		const struct merge_trace *t = &x->res->traces[x->order[k]];
		char tid[33], start[TIMERANGE_FORMAT_MAX];
		json_t *item;

		tracesummary_build(t,
				   x->max_spans < ITEM_SPANS ? x->max_spans
							     : ITEM_SPANS,
				   node_failed, NULL, &s);
		if ((rc = want_details(x, t, &s)) != STATUS_OK)
			goto out;
		rc = STATUS_NOMEM;
		hex_encode(t->trace_id, 16, tid);
		timerange_format((int64_t)(t->start_ns / 1000000), start,
				 sizeof(start));
		if (x->b.len + LISTS_ROOM < x->budget) {
			buf_printf(&x->b, "%zu. %s ", k + 1, tid);
			headline(x, t);
			tool_fit(&x->b);
		} else {
			unlisted++;
		}
		item = json_pack("{s:s, s:s, s:b, s:o}", "trace_id", tid,
				 "start", start, "has_errors", s.n_errors > 0,
				 "summary", summary_json(x, t, &s, false));
		if (json_array_append_new(list, item) != 0)
			goto out;
	}
	if (unlisted > 0)
		buf_printf(&x->b, "(%zu more in structured content)\n",
			   unlisted);
	if (x->res->n_traces > 0) {
		best = &x->res->traces[x->order[x->best]];
		tracesummary_build(best, x->max_spans, node_failed, NULL, &s);
		if ((rc = want_details(x, best, &s)) != STATUS_OK)
			goto out;
		rc = STATUS_NOMEM;
		if ((best_summary = summary_json(x, best, &s, true)) == NULL)
			goto out;
		buf_printf(&x->b, "\n### Trace %zu, the %s:\n", x->best + 1,
			   errors_of(best) > 0 ? "longest failed" : "longest");
		lists_text(x, best, &s);
		sources_line(x, dups);
		buf_puts(&x->b, "get_trace(trace_id) draws a trace's whole "
				"tree.\n");
		tool_fit(&x->b);
	}
	if (x->res->n_traces > 0)
		hex_encode(x->res->traces[x->order[x->best]].trace_id, 16,
			   x->tid);
	sc = json_pack("{s:b, s:o, s:s*, s:o*, s:o, s:I, s:f, s:b, s:o}",
		       "found", x->res->n_traces > 0, "query", query_json(x),
		       "trace_id", x->res->n_traces > 0 ? x->tid : NULL,
		       "summary", best_summary, "traces", list, "total_found",
		       (json_int_t)x->res->n_traces, "avg_duration_ms",
		       x->res->n_traces > 0
			       ? (double)sum / (double)x->res->n_traces / 1e6
			       : 0.0,
		       "more_traces", x->more, "sources", sources_json(x));
	best_summary = NULL;
	list = NULL;
	if (sc == NULL)
		goto out;
	rc = tool_result_fit(
		x->call, &x->b, sc,
		(struct tool_rows[]){{"traces", "more_traces", "traces",
				      x->res->n_traces, 0, 0}},
		1, "ask for fewer traces (limit) or fewer spans (max_spans)",
		result);
out:
	json_decref(list);
	json_decref(best_summary);
	return rc;
}

static int
get_traces(struct call *call, const json_t *args, json_t **result)
{
	struct traces_call x = {.call = call, .now = clock_wall_ms()};
	int rc;

	x.budget = call_text_budget(call);
	buf_init(&x.b, x.budget);
	*result = NULL;
	if ((rc = traces_args(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	if (tool_conns_get(call, &x.k) != STATUS_OK) {
		*result = tool_result_error("%s", x.k.why);
		rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
		goto out;
	}
	(void)call_progress(call, 1, 3, "fetching spans");
	rc = x.service != NULL
		     ? fetch_service(&x, result)
		     : tool_trace_spans(call, "get_traces", &x.k, x.prefix,
					x.id, x.sp, x.status, result);
	if (rc != STATUS_OK || *result != NULL)
		goto out;
	if (x.service == NULL)
		hex_encode(x.id, 16, x.tid); /* when its first digits came */
	(void)call_progress(call, 2, 3, "summarising");
	if ((rc = merge_all(&x)) != STATUS_OK)
		goto out;
	rc = x.service != NULL ? answer_service(&x, result)
			       : answer_one(&x, result);
out:
	tool_conns_put(&x.k);
	tool_details_free(&x.det);
	merge_result_free(x.res);
	free(x.order);
	free(x.spans);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		spanquery_spans_free(x.sp[i]);
	spanquery_spans_free(x.all);
	redact_kept_free(&x.kept);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler mesh_traces_tool_handlers[] = {
	{"get_traces", get_traces},
	{NULL, NULL},
};

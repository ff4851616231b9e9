/*
 * tool_spans_span.c - one span whole, for get_trace with a span_id: its fields,
 * every attribute, its resource, events and links, as a span's side panel
 * shows them (lib/telemetry/spanread reads them, bounded).  Every string
 * and value passes the configured redaction, as in every span answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/spanquery.h"
#include "telemetry/spanread.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_detail.h"
#include "tools/tool_spans_span.h"

/* a value in a text line; the structured content has it whole (as read) */
#define TEXT_VALUE_MAX 300
#define TEXT_KEY_MAX   120

/* pairs ([[key, value], ...]) as an object in their order, redacted as
 * every attribute is; NULL on ENOMEM. */
static json_t *
pairs_object(const json_t *pairs, const struct redact *r)
{
	json_t *o = json_object(), *p;
	size_t i;

	if (o == NULL)
		return NULL;
	json_array_foreach(pairs, i, p)
	{
		const char *k = json_string_value(json_array_get(p, 0));
		json_t *v = json_array_get(p, 1);

		if (k != NULL && v != NULL && json_object_set(o, k, v) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	if (redact_json(r, o) != STATUS_OK) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* o's members as rows [{"key", "value"}, ...] (new reference). */
static json_t *
object_rows(const json_t *o)
{
	json_t *rows = json_array(), *v;
	const char *k;

	json_object_foreach((json_t *)o, k, v)
	{
		if (rows == NULL ||
		    json_array_append_new(rows, json_pack("{s:s, s:O}", "key",
							  k, "value", v)) !=
			    0) {
			json_decref(rows);
			return NULL;
		}
	}
	return rows;
}

/* "k<between>v", each on the line and cut. */
static void
put_pair(struct buf *b, const char *k, const char *between, const json_t *v)
{
	(void)tool_put_line(b, k, TEXT_KEY_MAX);
	buf_puts(b, between);
	tool_detail_value(b, v, TEXT_VALUE_MAX);
}

/* ", k=v" for each member of o after the first ", " sep. */
static void
inline_pairs(struct buf *b, const json_t *o, const char *sep)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
	{
		buf_puts(b, sep);
		put_pair(b, k, "=", v);
		sep = ", ";
	}
}

struct span_answer {
	struct call *call;
	const struct redact *r;
	char tid[33], sid[17];
	json_t *row[2];
	size_t n;
	struct redact_kept kept;
	struct buf b; /* the text, NOTE_ROOM short of the budget */
	size_t start; /* where the line being written began */
	size_t cut;   /* lines left out, from the first that did not fit */
	json_t *attrs, *res, *events, *links; /* redacted, as objects/rows */
};

/* Room kept back for the closing note on lines left out. */
#define NOTE_ROOM 160

/* A line begins: false (and counted) once one did not fit, so that the
 * text is a whole beginning and a count of what follows. */
static bool
line_begin(struct span_answer *x)
{
	if (x->cut > 0) {
		x->cut++;
		return false;
	}
	x->start = x->b.len;
	return true;
}

/* A line ends: left out whole when it did not fit. */
static void
line_end(struct span_answer *x)
{
	buf_puts(&x->b, "\n");
	if (tool_fit(&x->b) == STATUS_LIMIT) {
		buf_rollback(&x->b, x->start);
		x->cut++;
	}
}

/* "### Attributes (201, the first 128 by name)" */
static void
section_head(struct span_answer *x, const char *title, size_t shown,
	     int64_t total, const char *order)
{
	if (!line_begin(x))
		return;
	buf_printf(&x->b, "\n### %s (%" PRId64, title, total);
	if ((int64_t)shown < total)
		buf_printf(&x->b, ", the first %zu %s", shown, order);
	buf_puts(&x->b, ")");
	line_end(x);
}

/* The "- key: value" lines of o. */
static void
member_lines(struct span_answer *x, const json_t *o)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
	{
		if (!line_begin(x))
			continue;
		buf_puts(&x->b, "- ");
		put_pair(&x->b, k, ": ", v);
		line_end(x);
	}
}

/* The head: what the span is, when, how long, how it ended. */
static void
span_head(struct span_answer *x, json_t *span)
{
	const json_t *o = x->row[0];
	struct buf *b = &x->b;
	int kind = (int)json_integer_value(json_object_get(o, "kind"));
	int status = (int)json_integer_value(json_object_get(o, "status"));
	const char *msg = redact_keep(
		&x->kept, x->r,
		json_string_value(json_object_get(o, "status_message")));
	const char *svc =
		redact_keep(&x->kept, x->r,
			    json_string_value(json_object_get(o, "service")));
	const char *name = redact_keep(
		&x->kept, x->r, json_string_value(json_object_get(o, "name")));
	const char *parent =
		json_string_value(json_object_get(o, "parent_span_id"));
	const char *scope = json_string_value(json_object_get(o, "scope"));
	const char *scope_v =
		json_string_value(json_object_get(o, "scope_version"));
	int64_t start_ns = json_integer_value(json_object_get(o, "start_ns"));
	double dur_ms =
		(double)json_integer_value(json_object_get(o, "duration_ns")) /
		1e6;
	const char *src = json_string_value(json_object_get(o, "source"));
	char start[TIMERANGE_FORMAT_MAX], dur[24];

	timerange_format(start_ns / 1000000, start, sizeof(start));
	render_ms(dur_ms, dur, sizeof(dur));
	buf_printf(b, "## Span %s of trace %s\n", x->sid, x->tid);
	(void)tool_put_line(b, svc != NULL ? svc : "?", 200);
	buf_puts(b, ": ");
	(void)tool_put_line(b, name != NULL ? name : "?", 200);
	buf_printf(b, " · %s · %s", otlp_kind_name(kind),
		   render_source_label(src != NULL && strcmp(src, "ebpf") == 0
					       ? MERGE_SOURCE_EBPF
					       : MERGE_SOURCE_OTLP));
	if (x->n > 1)
		buf_puts(b, " (also seen by eBPF)");
	buf_printf(b, " · started %s · %s", start, dur);
	if (status == 2) {
		buf_puts(b, " · ERROR");
		if (msg != NULL && msg[0] != '\0') {
			buf_puts(b, ": ");
			(void)tool_put_line(b, msg, 300);
		}
	} else {
		buf_printf(b, " · status %s", otlp_status_name(status));
	}
	buf_puts(b, "\n");
	buf_printf(b, "Parent: %s", parent != NULL ? parent : "none (a root)");
	if (scope != NULL) {
		buf_puts(b, "; scope ");
		(void)tool_put_line(b, scope, 200);
		if (scope_v != NULL) {
			buf_puts(b, " ");
			(void)tool_put_line(b, scope_v, 60);
		}
	}
	buf_puts(b, "\n");
	json_object_set_new(span, "span_id", json_string(x->sid));
	json_object_set_new(span, "parent_span_id",
			    parent != NULL ? json_string(parent) : json_null());
	json_object_set_new(span, "service", json_string(svc ? svc : ""));
	json_object_set_new(span, "name", json_string(name ? name : ""));
	json_object_set_new(span, "kind", json_string(otlp_kind_name(kind)));
	json_object_set_new(span, "start", json_string(start));
	json_object_set_new(span, "duration_ms", json_real(dur_ms));
	json_object_set_new(span, "status",
			    json_string(otlp_status_name(status)));
	json_object_set_new(span, "status_message",
			    msg != NULL ? json_string(msg) : json_null());
	json_object_set_new(span, "scope",
			    scope != NULL ? json_string(scope) : json_null());
}

/* The events: "- +1.5ms retry: attempt=2" in text, rows in structure. */
static int
span_events(struct span_answer *x, const json_t *list)
{
	struct buf *b = &x->b;
	json_t *e;
	size_t i;

	if ((x->events = json_array()) == NULL)
		return STATUS_NOMEM;
	json_array_foreach(list, i, e)
	{
		const json_t *off = json_object_get(e, "offset_ns");
		const char *name = redact_keep(
			&x->kept, x->r,
			json_string_value(json_object_get(e, "name")));
		json_t *attrs =
			pairs_object(json_object_get(e, "attributes"), x->r);
		char at[24] = "";

		if (attrs == NULL)
			return STATUS_NOMEM;
		if (line_begin(x)) {
			buf_puts(b, "- ");
			if (json_is_integer(off)) {
				render_ms((double)json_integer_value(off) / 1e6,
					  at, sizeof(at));
				buf_printf(b, "+%s ", at);
			}
			(void)tool_put_line(
				b, name != NULL ? name : "(unnamed)", 200);
			inline_pairs(b, attrs, ": ");
			line_end(x);
		}
		if (json_array_append_new(
			    x->events,
			    json_pack(
				    "{s:o, s:s?, s:o, s:O}", "offset_ms",
				    json_is_integer(off)
					    ? json_real(
						      (double)json_integer_value(
							      off) /
						      1e6)
					    : json_null(),
				    "name", name, "attributes", attrs,
				    "attributes_total",
				    json_object_get(e, "attributes_total"))) !=
		    0)
			return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* The links: "- trace <id> span <id>: k=v". */
static int
span_links(struct span_answer *x, const json_t *list)
{
	struct buf *b = &x->b;
	json_t *l;
	size_t i;

	if ((x->links = json_array()) == NULL)
		return STATUS_NOMEM;
	json_array_foreach(list, i, l)
	{
		const char *t =
			json_string_value(json_object_get(l, "trace_id"));
		const char *s =
			json_string_value(json_object_get(l, "span_id"));
		json_t *attrs =
			pairs_object(json_object_get(l, "attributes"), x->r);

		if (attrs == NULL)
			return STATUS_NOMEM;
		if (line_begin(x)) {
			buf_puts(b, "- trace ");
			(void)tool_put_line(b, t != NULL ? t : "?", 32);
			if (t != NULL && strcmp(t, x->tid) == 0)
				buf_puts(b, " (this one)");
			buf_puts(b, " span ");
			(void)tool_put_line(b, s != NULL ? s : "?", 16);
			inline_pairs(b, attrs, ": ");
			line_end(x);
		}
		if (json_array_append_new(x->links,
					  json_pack("{s:s?, s:s?, s:o}",
						    "trace_id", t, "span_id", s,
						    "attributes", attrs)) != 0)
			return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* The answer from the rows read (x->n > 0). */
static int
span_result(struct span_answer *x, json_t **result)
{
	const json_t *o = x->row[0];
	json_t *span = json_object(), *srcs = json_array(), *sc;
	json_t *rows[2] = {NULL, NULL};
	const json_t *ev = json_object_get(o, "events");
	const json_t *ln = json_object_get(o, "links");
	int64_t at = json_integer_value(json_object_get(o, "attributes_total"));
	int64_t rt = json_integer_value(json_object_get(o, "resource_total"));
	int64_t et = json_integer_value(json_object_get(o, "events_total"));
	int64_t lt = json_integer_value(json_object_get(o, "links_total"));
	int rc;

	if (span == NULL || srcs == NULL) {
		json_decref(span);
		json_decref(srcs);
		return STATUS_NOMEM;
	}
	for (size_t i = 0; i < x->n; i++)
		json_array_append_new(
			srcs, json_string(json_string_value(
				      json_object_get(x->row[i], "source"))));
	json_object_set_new(span, "sources", srcs);
	span_head(x, span);
	x->attrs = pairs_object(json_object_get(o, "attributes"), x->r);
	x->res = pairs_object(json_object_get(o, "resource"), x->r);
	if (x->attrs == NULL || x->res == NULL) {
		json_decref(span);
		return STATUS_NOMEM;
	}
	section_head(x, "Attributes", json_object_size(x->attrs), at,
		     "by name");
	member_lines(x, x->attrs);
	section_head(x, "Resource", json_object_size(x->res), rt, "by name");
	member_lines(x, x->res);
	section_head(x, "Events", json_array_size(ev), et, "in order");
	if ((rc = span_events(x, ev)) == STATUS_OK && lt > 0)
		section_head(x, "Links", json_array_size(ln), lt, "in order");
	if (rc == STATUS_OK)
		rc = span_links(x, ln);
	if (rc == STATUS_OK && x->cut > 0) {
		x->b.max += NOTE_ROOM;
		buf_printf(&x->b,
			   "(%zu more lines not shown: the answer is full)\n",
			   x->cut);
	}
	if (rc == STATUS_OK && buf_error(&x->b) == STATUS_NOMEM)
		rc = STATUS_NOMEM;
	json_object_set_new(span, "attributes_total", json_integer(at));
	json_object_set_new(span, "resource_total", json_integer(rt));
	json_object_set_new(span, "events_total", json_integer(et));
	json_object_set_new(span, "links_total", json_integer(lt));
	if (rc != STATUS_OK || (rows[0] = object_rows(x->attrs)) == NULL ||
	    (rows[1] = object_rows(x->res)) == NULL) {
		json_decref(rows[0]);
		json_decref(span);
		return rc != STATUS_OK ? rc : STATUS_NOMEM;
	}
	sc = json_pack("{s:s, s:b, s:o, s:o, s:o, s:O, s:O}", "trace_id",
		       x->tid, "found", true, "span", span, "attributes",
		       rows[0], "resource", rows[1], "events", x->events,
		       "links", x->links);
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_fit(
		x->call, &x->b, sc,
		(struct tool_rows[]){
			{"attributes", NULL, "attributes", 0, 0, 0},
			{"events", NULL, "events", 0, 0, 0},
			{"resource", NULL, "resource attributes", 0, 0, 0},
			{"links", NULL, "links", 0, 0, 0}},
		4, "the span is larger than one answer holds", result);
}

int
tool_get_span(struct call *call, const char *trace_id, const char *span_id,
	      json_t **result)
{
	struct span_answer x = {.call = call, .r = call_redact(call)};
	const char *prefix = NULL;
	struct pg_conn *c = NULL;
	struct spanread *sr = NULL;
	struct pg_error pe;
	uint8_t tid[16], sid[8];
	char why[256];
	int rc = STATUS_OK;

	*result = NULL;
	buf_init(&x.b, call_text_budget(call) > NOTE_ROOM
			       ? call_text_budget(call) - NOTE_ROOM
			       : 1);
	if (spanquery_is_trace_prefix(trace_id)) {
		prefix = trace_id;
	} else if (trace_id == NULL ||
		   tool_parse_trace_id(trace_id, tid) != STATUS_OK) {
		*result = tool_result_error(
			"trace_id must be 32 hex digits (or the first 8 or "
			"more), not all zero, got \"%.40s\"",
			trace_id != NULL ? trace_id : "");
		goto out;
	}
	if (hex_decode(span_id, sid, 8) != STATUS_OK) {
		*result = tool_result_error(
			"span_id must be 16 hex digits, as get_trace's lines "
			"show (e.g. \"00f067aa0ba902b7\"), got \"%.40s\"",
			span_id);
		goto out;
	}
	if (tool_conn_get(call, &c, why, sizeof(why), NULL) != STATUS_OK) {
		*result = tool_result_error("%s", why);
		goto out;
	}
	if (prefix != NULL &&
	    ((rc = tool_trace_prefix(call, "get_trace", c, prefix, tid,
				     result)) != STATUS_OK ||
	     *result != NULL))
		goto out;
	hex_encode(tid, 16, x.tid);
	hex_encode(sid, 8, x.sid);
	(void)call_progress(call, 1, 2, "reading the span");
	if ((rc = spanread_send(c, tid, sid, &pe)) != STATUS_OK ||
	    (rc = spanread_recv(c, &sr, &pe)) != STATUS_OK) {
		rc = tool_store_failed(call, "get_trace", rc, &pe, NULL,
				       result);
		goto out;
	}
	for (size_t i = 0; i < sr->n; i++) {
		json_error_t je;

		if ((x.row[x.n] = json_loads(sr->json[i], 0, &je)) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		x.n++;
	}
	if (x.n == 0) {
		json_t *sc = json_pack("{s:s, s:b, s:s}", "trace_id", x.tid,
				       "found", false, "span_id", x.sid);

		buf_printf(&x.b,
			   "no span %s in trace %s: get_trace without "
			   "span_id lists the trace's spans\n",
			   x.sid, x.tid);
		rc = sc != NULL ? tool_result_buf(&x.b, sc, result)
				: STATUS_NOMEM;
		goto out;
	}
	rc = span_result(&x, result);
out:
	if (c != NULL)
		pg_release(c);
	spanread_free(sr);
	for (size_t i = 0; i < x.n; i++)
		json_decref(x.row[i]);
	json_decref(x.attrs);
	json_decref(x.res);
	json_decref(x.events);
	json_decref(x.links);
	redact_kept_free(&x.kept);
	buf_free(&x.b);
	return tool_done(rc, result);
}

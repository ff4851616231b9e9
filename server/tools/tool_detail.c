/*
 * tool_detail.c - the details of the failed and slow spans a trace answer
 * explains (see tool_detail.h): which spans, one statement for them all
 * (spanquery_details), redaction, and how text and structure show them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "telemetry/render.h"
#include "tools/tool_common.h"
#include "tools/tool_detail.h"

/* By span: a node of a cut copy of the trace (merge_focus) is the same
 * span as the node picked. */
static size_t
index_of(const struct tool_details *d, const struct merge_node *node)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->node[i]->span == node->span)
			return i;
	return MERGE_NONE;
}

bool
tool_details_want(struct tool_details *d, const struct merge_node *node,
		  bool attrs)
{
	const struct spanquery_span *s = tool_span_row(node);
	size_t i = index_of(d, node);

	if (i == MERGE_NONE) {
		if (d->n == SPANQUERY_MAX_DETAILS)
			return false;
		i = d->n++;
		d->node[i] = node;
		memcpy(d->key[i].trace_id, s->trace_id, 16);
		memcpy(d->key[i].span_id, s->span_id, 8);
		d->key[i].source =
			tool_sources[tool_source_of_merge(node->span->source)]
				.name;
	}
	d->key[i].with_attributes |= attrs;
	return true;
}

size_t
tool_details_pick(struct tool_details *d, const struct merge_trace *t,
		  bool attrs_error, bool others)
{
	size_t deepest = MERGE_NONE;

	for (size_t i = 0; others && i < t->n_nodes; i++)
		if (tool_span_row(&t->nodes[i])->status == 2 &&
		    (deepest == MERGE_NONE ||
		     t->nodes[i].depth > t->nodes[deepest].depth))
			deepest = i;
	if (deepest != MERGE_NONE)
		(void)tool_details_want(d, &t->nodes[deepest], attrs_error);
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].slow)
			(void)tool_details_want(d, &t->nodes[i], false);
	for (size_t i = 0; others && i < t->n_nodes; i++)
		if (tool_span_row(&t->nodes[i])->status == 2 &&
		    !tool_details_want(d, &t->nodes[i], false))
			break;
	return deepest;
}

/* v as shown under key: hidden when the key is sensitive, else with the
 * value patterns applied (a copy kept in d). */
static const char *
shown(struct tool_details *d, const struct redact *r, const char *key,
      const char *v)
{
	if (v == NULL)
		return NULL;
	if (redact_key(r, key))
		return REDACT_MARK;
	return redact_keep(&d->kept, r, v);
}

/* Redacts what was read, as every string of a span answer is. */
static int
details_redact(struct tool_details *d, const struct redact *r)
{
	for (size_t i = 0; i < d->n; i++) {
		struct spanquery_detail *x = &d->v[i];

		x->peer =
			shown(d, r,
			      redact_key(r, "peer.service") ? "peer.service"
							    : "server.address",
			      x->peer);
		x->db_system = shown(d, r, "db.system", x->db_system);
		x->db_table = shown(d, r, "db.collection.name", x->db_table);
		x->exception_type =
			shown(d, r, "exception.type", x->exception_type);
		x->exception_message =
			shown(d, r, "exception.message", x->exception_message);
		if (x->attributes != NULL) {
			json_t *a = json_loads(x->attributes, 0, NULL);

			if (!json_is_object(a)) {
				json_decref(a);
				continue;
			}
			if (redact_json(r, a) != STATUS_OK) {
				json_decref(a);
				return STATUS_NOMEM;
			}
			d->attrs[i] = a;
		}
	}
	return STATUS_OK;
}

/* The attributes of the spans picked with them (one statement), into
 * d->v; a failed statement is logged and leaves them out. */
static int
attrs_fetch(struct call *call, struct pg_conn *c, struct tool_details *d)
{
	struct spanquery_detail_key key[SPANQUERY_MAX_DETAILS];
	size_t at[SPANQUERY_MAX_DETAILS], m = 0;
	struct pg_error pe;
	int rc;

	for (size_t i = 0; i < d->n; i++)
		if (d->key[i].with_attributes) {
			at[m] = i;
			key[m++] = d->key[i];
		}
	if (m == 0)
		return STATUS_OK;
	rc = spanquery_details_send(c, key, m, &pe);
	if (rc == STATUS_OK)
		rc = spanquery_details_recv(c, m, &d->got, &pe);
	if (rc == STATUS_CANCELLED || call_cancelled(call))
		return STATUS_CANCELLED;
	if (rc == STATUS_NOMEM)
		return rc;
	if (rc != STATUS_OK) {
		log_warn(&(struct log_fields){.request_id =
						      call_request_id(call),
					      .duration_ms = -1},
			 "span attributes not read, the answer goes without "
			 "them: %s",
			 pe.detail[0] != '\0' ? pe.detail : pe.client);
		return STATUS_OK;
	}
	for (size_t j = 0; j < m; j++)
		if (d->got->v[j].found)
			d->v[at[j]] = d->got->v[j];
	return STATUS_OK;
}

int
tool_details_fetch(struct call *call, struct pg_conn *c, struct tool_details *d)
{
	int rc;

	for (size_t i = 0; i < d->n; i++)
		d->v[i] = tool_span_row(d->node[i])->detail;
	d->fetched = true;
	if ((rc = attrs_fetch(call, c, d)) != STATUS_OK)
		return rc;
	return details_redact(d, call_redact(call));
}

const struct spanquery_detail *
tool_details_of(const struct tool_details *d, const struct merge_node *node)
{
	size_t i;

	if (d == NULL || !d->fetched || (i = index_of(d, node)) == MERGE_NONE ||
	    !d->v[i].found)
		return NULL;
	return &d->v[i];
}

const json_t *
tool_details_attrs(const struct tool_details *d, const struct merge_node *node)
{
	size_t i;

	if (d == NULL || !d->fetched || (i = index_of(d, node)) == MERGE_NONE)
		return NULL;
	return d->attrs[i];
}

void
tool_detail_code(const struct spanquery_detail *x, char *out, size_t cap)
{
	if (x != NULL && x->grpc_code > 0)
		snprintf(out, cap, " %s", otlp_grpc_code_name(x->grpc_code));
	else if (x != NULL && x->http_status >= 400)
		snprintf(out, cap, " %d", x->http_status);
	else if (cap > 0)
		out[0] = '\0';
}

/* A span that calls out (client, producer, internal, unknown) has a
 * remote peer; on a server or consumer span server.address is its own. */
static bool
calls_out(int kind)
{
	return kind != 2 && kind != 5;
}

int
tool_detail_text(struct buf *b, const struct merge_node *node,
		 const struct spanquery_detail *x)
{
	const struct spanquery_span *s = tool_span_row(node);
	const char *msg;

	if (x == NULL)
		return STATUS_OK;
	buf_printf(b, " [%s", otlp_kind_name(s->kind));
	if (calls_out(s->kind) && (x->db_system != NULL || x->peer != NULL)) {
		buf_puts(b, " → ");
		if (x->db_system != NULL) {
			(void)tool_put_line(b, x->db_system, 40);
			if (x->db_table != NULL) {
				buf_puts(b, " ");
				(void)tool_put_line(b, x->db_table, 60);
			}
			if (x->peer != NULL)
				buf_puts(b, " at ");
		}
		if (x->peer != NULL)
			(void)tool_put_line(b, x->peer, 80);
	}
	if (x->grpc_code >= 0)
		buf_printf(b, ", gRPC %s", otlp_grpc_code_name(x->grpc_code));
	else if (x->http_status >= 0)
		buf_printf(b, ", HTTP %d", x->http_status);
	/* the message once: the line shows the status message already */
	msg = x->exception_message;
	if (msg != NULL && s->status == 2 && s->status_message != NULL &&
	    strcmp(msg, s->status_message) == 0)
		msg = NULL;
	if (x->exception_type != NULL || msg != NULL) {
		buf_puts(b, ", exception ");
		if (x->exception_type != NULL)
			(void)tool_put_line(b, x->exception_type, 80);
		if (x->exception_type != NULL && msg != NULL)
			buf_puts(b, ": ");
		if (msg != NULL)
			(void)tool_put_line(b, msg, 120);
	}
	return buf_puts(b, "]");
}

/* Sets key to s when s is not NULL; false on ENOMEM. */
static bool
set_opt(json_t *o, const char *key, const char *s)
{
	return s == NULL || json_object_set_new(o, key, json_string(s)) == 0;
}

json_t *
tool_detail_json(const struct merge_node *node,
		 const struct spanquery_detail *x)
{
	json_t *o = json_pack("{s:s}", "kind",
			      otlp_kind_name(tool_span_row(node)->kind));
	bool ok = o != NULL;

	if (ok && x->http_status >= 0)
		ok = json_object_set_new(o, "http_status_code",
					 json_integer(x->http_status)) == 0;
	if (ok && x->grpc_code >= 0)
		ok = json_object_set_new(o, "grpc_status_code",
					 json_integer(x->grpc_code)) == 0 &&
		     set_opt(o, "grpc_status",
			     otlp_grpc_code_name(x->grpc_code));
	if (ok && calls_out(tool_span_row(node)->kind))
		ok = set_opt(o, "peer", x->peer) &&
		     set_opt(o, "db_system", x->db_system) &&
		     set_opt(o, "db_table", x->db_table);
	if (ok && (x->exception_type != NULL || x->exception_message != NULL))
		ok = json_object_set_new(o, "exception",
					 json_pack("{s:s?, s:s?}", "type",
						   x->exception_type, "message",
						   x->exception_message)) == 0;
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* an attribute's value in a line (tool_detail_value) */
#define ATTR_VALUE_MAX 100

void
tool_detail_value(struct buf *b, const json_t *v, size_t max)
{
	const char *text = json_string_value(v);
	char *dump = NULL;

	if (text == NULL)
		text = dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
						    JSON_REAL_PRECISION(15));
	(void)tool_put_line(b, text != NULL ? text : "?", max);
	free(dump);
}

int
tool_detail_attrs_text(struct buf *b, const json_t *attrs, size_t max)
{
	const char *key;
	json_t *v;
	size_t start = b->len, n = 0;

	json_object_foreach((json_t *)attrs, key, v)
	{
		if (b->len - start >= max) {
			buf_printf(b, ", … (%zu more)",
				   json_object_size(attrs) - n);
			break;
		}
		if (n++ > 0)
			buf_puts(b, ", ");
		(void)tool_put_line(b, key, 80);
		buf_puts(b, "=");
		tool_detail_value(b, v, ATTR_VALUE_MAX);
	}
	if (n == 0)
		buf_puts(b, "(none)");
	return buf_error(b);
}

void
tool_details_free(struct tool_details *d)
{
	for (size_t i = 0; i < d->n; i++)
		json_decref(d->attrs[i]);
	spanquery_details_free(d->got);
	redact_kept_free(&d->kept);
	d->got = NULL;
	d->fetched = false;
	d->n = 0;
}

int
tool_span_name(struct buf *b, const struct merge_node *node)
{
	const struct spanquery_span *s = tool_span_row(node);
	int rc = buf_printf(b, "%s ", render_source_label(node->span->source));

	if (rc == STATUS_OK)
		rc = tool_put_line(b, s->service, 200);
	if (rc == STATUS_OK)
		rc = buf_puts(b, ": ");
	if (rc == STATUS_OK)
		rc = tool_put_line(b, s->name, 200);
	return rc;
}

int
tool_span_ref(struct buf *b, const struct merge_node *node)
{
	char dur[24];
	int rc = tool_span_name(b, node);

	render_ms((double)tool_span_row(node)->duration_ns / 1e6, dur,
		  sizeof(dur));
	return rc == STATUS_OK ? buf_printf(b, " (%s)", dur) : rc;
}

int
tool_span_marks(struct buf *b, const struct merge_node *node,
		const struct spanquery_detail *x)
{
	int rc = STATUS_OK;

	if (node->orphan)
		rc = buf_puts(b, " (parent not found)");
	if (rc == STATUS_OK && node->async_start)
		rc = buf_puts(b, " (async)");
	if (rc == STATUS_OK && node->slow)
		rc = buf_puts(b, " ← SLOW");
	if (rc == STATUS_OK)
		rc = tool_detail_text(b, node, x);
	return rc;
}

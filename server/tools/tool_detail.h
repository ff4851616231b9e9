/*
 * tool_detail.h - the details that explain a failed or slow span, for the
 * trace answers (get_trace, query_traces): its kind, HTTP status or gRPC
 * code, remote peer and exception, and for a chosen few its attributes.
 * Read with the spans (attributes only for the spans an answer picks:
 * lib/telemetry/spanquery's details), and redacted before they are shown.
 */
#ifndef SEXTANT_TOOL_DETAIL_H
#define SEXTANT_TOOL_DETAIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/redact.h"
#include "telemetry/merge.h"
#include "telemetry/spanquery.h"
#include "tools/tool.h"

/* The spans row behind a node of a merged trace (its user data). */
static inline const struct spanquery_span *
tool_span_row(const struct merge_node *node)
{
	return node->span->user;
}

/* "[OTLP] checkout: GET /a": a span as the trace answers name it,
 * service and name each kept to one line of at most 200 bytes; with
 * tool_span_ref its duration follows: "[OTLP] checkout: GET /a (1.2s)". */
int tool_span_name(struct buf *b, const struct merge_node *node);
int tool_span_ref(struct buf *b, const struct merge_node *node);

/* " (parent not found)", " (async)", " ← SLOW", then tool_detail_text:
 * what a trace line says of node after its name and error. */
int tool_span_marks(struct buf *b, const struct merge_node *node,
		    const struct spanquery_detail *x);

/* The spans picked (at most SPANQUERY_MAX_DETAILS) and, once fetched,
 * their details.  Start from {0}; free with tool_details_free. */
struct tool_details {
	const struct merge_node *node[SPANQUERY_MAX_DETAILS];
	struct spanquery_detail_key key[SPANQUERY_MAX_DETAILS];
	json_t *attrs[SPANQUERY_MAX_DETAILS]; /* redacted; NULL: none */
	size_t n;
	/* once fetched: v[i] for node[i] (found false: none), redacted */
	struct spanquery_detail v[SPANQUERY_MAX_DETAILS];
	bool fetched;
	struct spanquery_details *got; /* the attribute reads, or NULL */
	struct redact_kept kept;
};

/*
 * Picks node (a shown node of a merged trace whose user is a struct
 * spanquery_span) for details, with its attributes when attrs; once only
 * (asking again may add attrs).  False when the set is full.
 */
bool tool_details_want(struct tool_details *d, const struct merge_node *node,
		       bool attrs);

/*
 * Picks the spans of t that the answer explains: the deepest error span
 * (with attrs_error, its attributes), the slow ones, then with others the
 * other error spans, while there is room.  Returns the deepest error
 * span's index, MERGE_NONE when there is none.
 */
size_t tool_details_pick(struct tool_details *d, const struct merge_trace *t,
			 bool attrs_error, bool others);

/*
 * The details of the spans picked, redacted: those the span rows carry
 * (spanquery_span.detail), and for the spans picked with attributes one
 * statement on c (spanquery_details; none when no span wants them).
 * Details are a help, not the answer: a failed statement leaves those
 * spans with their rows' details and no attributes (and is logged);
 * STATUS_CANCELLED and STATUS_NOMEM are returned.
 */
int tool_details_fetch(struct call *call, struct pg_conn *c,
		       struct tool_details *d) WUR;

/* The details of node, NULL when it was not picked or not found. */
const struct spanquery_detail *tool_details_of(const struct tool_details *d,
					       const struct merge_node *node);

/* node's attributes (redacted, borrowed from d), NULL when not read. */
const json_t *tool_details_attrs(const struct tool_details *d,
				 const struct merge_node *node);

/* " 402", " UNAVAILABLE": the code that failed the span ("" when none),
 * for "ERROR 402". */
void tool_detail_code(const struct spanquery_detail *x, char *out, size_t cap);

/*
 * " [client → api.sendgrid.com, HTTP 503, exception SendError: upstream
 * down]": node's kind, the remote peer (only on spans that call out),
 * code and exception; nothing when x is NULL.
 */
int tool_detail_text(struct buf *b, const struct merge_node *node,
		     const struct spanquery_detail *x);

/* The same as an object (new reference; NULL on ENOMEM). */
json_t *tool_detail_json(const struct merge_node *node,
			 const struct spanquery_detail *x);

/* An attribute's value in a line: a string as it is, anything else as
 * compact JSON (reals to 15 significant digits: 0.2, not
 * 0.20000000000000001), cut to max bytes (tool_put_line). */
void tool_detail_value(struct buf *b, const json_t *v, size_t max);

/* "k=v, k=v, …": attrs on one line of at most max bytes. */
int tool_detail_attrs_text(struct buf *b, const json_t *attrs, size_t max);

void tool_details_free(struct tool_details *d);

#endif

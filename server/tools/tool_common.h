/*
 * tool_common.h - helpers shared by the tool families that read the
 * telemetry store (tool_query, tool_spans, tool_genai, tool_query_otlp,
 * tool_spans_services): the table of sources, arguments (ids, time ranges),
 * leasing store connections and asking the span sources side by side
 * (tool_round), text fitted to the answer's budget (tool_fit), and what a
 * handler ends with.
 */
#ifndef SEXTANT_TOOL_COMMON_H
#define SEXTANT_TOOL_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "telemetry/health.h"

struct buf;
struct call;
struct merge_span;
struct pg_conn;
struct pg_error;
struct spanquery_span;
struct timerange;

/*
 * The sources, in the order answers show them: the span sources of the
 * store first (each asked on a connection of its own, tool_round_*), then
 * Prometheus (query_metrics only, when config maps the service to its
 * series).
 */
enum {
	TOOL_SRC_EBPF,
	TOOL_SRC_OTLP,
	TOOL_SPAN_SRCS, /* how many span sources */
	TOOL_SRC_PROM = TOOL_SPAN_SRCS,
	TOOL_SRCS
};

struct tool_source {
	const char *name;  /* column value and structured name */
	const char *label; /* in text */
	const char *what;  /* "<label> <what> unavailable: ..." */
	int merge;	   /* enum merge_source */
};

/* Indexed by TOOL_SRC_*; immutable. */
extern const struct tool_source tool_sources[TOOL_SRCS];

/* The source (TOOL_SRC_*) of merge source merge (enum merge_source). */
int tool_source_of_merge(int merge);

/* The span source (TOOL_SRC_*) whose name is name; -1 when none is. */
int tool_span_source(const char *name);

/*
 * The one check of an answer's text, and the result made of it: STATUS_OK
 * with *result a new CallToolResult whose one content block is the text in
 * b ("" when b holds none) and whose structuredContent is sc; else the
 * error pending in b (its text is not whole and is not sent) or
 * STATUS_NOMEM, with *result NULL.  sc is stolen either way (may be NULL).
 */
int tool_result_buf(const struct buf *b, json_t *sc, json_t **result);

/*
 * The answer's byte budget ([tools] max_answer_bytes): the whole result
 * as JSON, its text and its structuredContent together, as the client
 * reads it (the default without a configuration).
 */
size_t tool_answer_budget(struct call *call);

/*
 * An array of an answer's structuredContent that tool_bound may shorten
 * (rows are kept whole, the last ones dropped), and what says so: the
 * tool's own field more, a boolean (more_traces, truncated) set true or a
 * count (not_shown) the dropped rows are added to, or where the tool has
 * none (more NULL), "truncated": {"<key>": rows dropped} ("truncated_rows"
 * when the tool has a "truncated" of its own that is no object).  total:
 * the rows that match in all when the tool knows it (the text then says
 * "30 spans shown, 1,204 more"), else 0: the array's own rows.
 */
struct tool_rows {
	const char *key;  /* the array in structuredContent */
	const char *more; /* its "more" boolean, or NULL */
	const char *what; /* the rows in words: "spans" */
	size_t total;
	size_t shown; /* out: rows kept */
	size_t cut;   /* out: rows dropped */
};

/*
 * Fits result (a CallToolResult) to budget bytes of compact JSON: when
 * over, drops the last rows of the arrays rows[0..n) names, from the
 * largest array (in bytes) first, until text, structured content and the
 * note fit; sets the arrays' more fields and appends to the text the exact
 * counts ("(structured content: 30 spans shown, 12 more: <hint>; ...)").
 * A result within budget, an error result and one without
 * structuredContent are left as they are.  rows[i].shown and .cut say what
 * was done.  STATUS_OK, or STATUS_NOMEM (result then as it was, or with
 * rows dropped and the note missing).
 */
int tool_bound(json_t *result, size_t budget, struct tool_rows *rows, size_t n,
	       const char *hint) WUR;

/* The length of v as compact JSON, as it goes out; 0 when out of
 * memory. */
size_t tool_json_len(const json_t *v);

/* The bytes of s[0..n) inside a JSON string: '"', '\\' and control
 * characters escaped (\n, or \u00XX at most), the rest as it is. */
size_t tool_json_text_len(const char *s, size_t n);

/*
 * The rows to keep of n lists of rows of the given sizes (bytes each,
 * sizes[i][0..count[i])) so that need bytes go: the last row of the
 * largest list (by bytes still kept) goes first, then again, until need
 * bytes went or nothing is left.  keep[i] (in: count[i]) is the rows of
 * list i kept.  Returns the bytes that went (>= need unless everything
 * went).  tool_bound's choice, for answers written as text
 * (query_traces).
 */
size_t tool_rows_cut(size_t need, const size_t *const *sizes,
		     const size_t *count, size_t *keep, size_t n);

/*
 * tool_result_buf, with the result then fitted to the call's answer
 * budget by tool_bound.
 */
int tool_result_fit(struct call *call, const struct buf *b, json_t *sc,
		    struct tool_rows *rows, size_t n, const char *hint,
		    json_t **result);

/*
 * Text fitted to a hard maximum (the answer's text budget, an error
 * message's room): a piece that does not fit is left out and the text goes
 * on, so that a short closing note still follows a long line that did not
 * fit.  Called after each piece that may not fit (one append, or appends
 * that stop at their first failure and keep what came before it), it
 * forgets STATUS_LIMIT and b takes appends again; any other error stays in
 * b for the one check.  Returns the error b had: STATUS_LIMIT when the
 * piece (or its end) was left out, STATUS_OK when it fit.
 */
int tool_fit(struct buf *b);

/* Appends s with control bytes as spaces, cut to at most max bytes (at a
 * UTF-8 character boundary) with "…": a value shown in a line stays on it.
 * Past b's maximum it stops at a character boundary.  Returns b's status
 * (buf errors are kept for the one check). */
int tool_put_line(struct buf *b, const char *s, size_t max);

/*
 * render_md_row and render_md_rule (lib/telemetry/render) under tool_fit's
 * rule: a row that does not fit is left out, b as it was (STATUS_LIMIT),
 * and any other failure is kept in b (buf_set_error) for the one check.
 * Returns render_md_*'s status, for a caller that ends its table there.
 */
int tool_md_row(struct buf *b, const char *const *cells, size_t n);
int tool_md_rule(struct buf *b, size_t n);

/*
 * What a handler returns once it has cleaned up after rc: STATUS_NOMEM
 * for STATUS_OK without a result, and on any failure *result dropped
 * (set to NULL), as tool_fn requires.
 */
int tool_done(int rc, json_t **result);

/* The string argument key of args, borrowed from args; NULL when absent,
 * not a string, or empty. */
const char *tool_arg_str(const json_t *args, const char *key);

/* A W3C trace id: exactly 32 hex digits, not all zero, into out.
 * STATUS_INVALID otherwise (out then undefined). */
int tool_parse_trace_id(const char *s, uint8_t out[16]) WUR;

/* How tool_time_range reads a call's arguments. */
enum {
	/* from / to as well as time_range (they win over it) */
	TOOL_RANGE_FROM_TO = 1u << 0,
	/* an empty time_range is refused, not taken for the default: what
	 * query_metrics and query_traces have always answered */
	TOOL_RANGE_EMPTY_REFUSED = 1u << 1,
};

/*
 * The call's time range against now_ms (which the caller keeps to
 * describe it: "last 1h" needs the same now): time_range, dflt when it is
 * absent (or empty), and with TOOL_RANGE_FROM_TO the from / to arguments,
 * as timerange_parse resolves them.  STATUS_INVALID with a message for
 * the model in err (errlen bytes) when they do not parse; tr is then
 * {0, 0}.
 */
int tool_time_range(const json_t *args, const char *dflt, unsigned flags,
		    int64_t now_ms, struct timerange *tr, char *err,
		    size_t errlen) WUR;

/* Whether args name a range at all (time_range, from or to, non-empty):
 * tools that need none for one trace or session ask for it then only. */
bool tool_time_range_given(const json_t *args);

/* {"from": ISO 8601, "to": ISO 8601} for tr (new reference); NULL on
 * ENOMEM. */
json_t *tool_range_json(const struct timerange *tr);

/*
 * Leases one store connection under the call's cancel token.  When all
 * are leased it waits its turn in the pool's queue (first come first
 * served) until the call's own deadline (workers.call_timeout_s), at most
 * a minute; a cancellation ends the wait at once.  STATUS_OK with *c
 * (release with pg_release).  Otherwise *c is NULL and why (len bytes,
 * NUL-terminated) says what to tell the client: STATUS_UNSUPPORTED when no
 * store is configured ("no telemetry store is configured: ..."),
 * pg_acquire's status when none could be had ("telemetry store
 * unavailable: ..."), but STATUS_FULL for a wait that ran out as for a
 * full queue (the message says how long it waited, how many are in use
 * and wait, and to retry or raise database.pool_size), with pg_acquire's
 * error in *err when err is not NULL (for a handler that answers with
 * tool_store_failed).
 */
int tool_conn_get(struct call *call, struct pg_conn **c, char *why, size_t len,
		  struct pg_error *err) WUR;

/*
 * A failed lease or statement (err from lib/pg): the status for the
 * handler to return, with *result an isError answer when one is due.
 * Cancellation and out-of-memory end the call (STATUS_CANCELLED,
 * STATUS_NOMEM); anything else is logged with its detail for tool, and
 * answered "telemetry store unavailable: <err->client>", or, for a
 * statement timeout when timeout_hint is not NULL, "telemetry query
 * failed: <err->client>; <timeout_hint>".
 */
int tool_store_failed(struct call *call, const char *tool, int rc,
		      const struct pg_error *err, const char *timeout_hint,
		      json_t **result) WUR;

/* Connections for statements that may run side by side (one per span
 * source). */
#define TOOL_CONNS 2
_Static_assert(TOOL_SPAN_SRCS <= TOOL_CONNS, "one store connection per source");

struct tool_conns {
	struct pg_conn *c[TOOL_CONNS];
	char why[320]; /* when none could be had */
};

/*
 * Leases up to TOOL_CONNS connections as tool_conn_get does.  Only c[0]
 * is waited for; the others are taken when free at once (never ahead of a
 * call waiting in the queue, and never waited for while c[0] is held,
 * which could deadlock), so under load the statements run one after the
 * other on c[0].  STATUS_OK with at
 * least c[0]; otherwise every c[i] is NULL and k->why says what (an
 * isError result is due).  Release with tool_conns_put.
 */
int tool_conns_get(struct call *call, struct tool_conns *k) WUR;

/* Releases every connection k holds; k may then be got again. */
void tool_conns_put(struct tool_conns *k);

/* The connection for statement i (0..TOOL_CONNS): its own, or c[0]. */
struct pg_conn *tool_conns_for(const struct tool_conns *k, int i);

/* "unavailable: <why>" into status (cap bytes, cut when longer) for a
 * failed statement: err's client message, or what rc means. */
void tool_unavailable(char *status, size_t cap, int rc,
		      const struct pg_error *err);

/* A source's status in an answer: "ok", "no_data", "not asked" or
 * "unavailable: <why>" (the why cut to fit). */
#define TOOL_STATUS_MAX 300

/*
 * One side of a source's statement in a round: sends it on c, or reads
 * its answer.  src: TOOL_SRC_*; arg: the round's.  STATUS_OK, or a
 * failure with *pe filled.
 */
typedef int (*tool_round_fn)(struct pg_conn *c, int src, void *arg,
			     struct pg_error *pe);

/*
 * A round: one statement per span source in mask, side by side on the
 * sources' own connections (tool_conns), every one sent before any is
 * read so that the store works on them at once.  A source that shares
 * the first connection (none was free for it) is sent and read in the
 * reading pass, once the first connection is free again.
 *
 * status (TOOL_SPAN_SRCS of them, borrowed): "" for a source still
 * answering; a source with any other status is skipped, and one whose
 * statement fails gets "unavailable: <why>" (tool_unavailable) and so
 * drops out of later rounds, while the others still answer.
 */
struct tool_round {
	struct call *call;
	const struct tool_conns *k;
	unsigned mask; /* bits 1 << TOOL_SRC_*: the sources asked */
	char (*status)[TOOL_STATUS_MAX];
	tool_round_fn send, recv;
	void *arg; /* for send and recv */
};

/*
 * The sending pass of r, then the reading pass: between the two the
 * caller may do other work while the store computes (query_metrics asks
 * Prometheus).  Each returns STATUS_CANCELLED when the call was
 * cancelled, STATUS_NOMEM, else STATUS_OK (sources that failed are in
 * r->status).  tool_round_run is both.
 */
int tool_round_send(const struct tool_round *r) WUR;
int tool_round_recv(const struct tool_round *r) WUR;
int tool_round_run(const struct tool_round *r) WUR;

/*
 * "Errors: 1.2% (503 ×14, 500 ×2); client errors: 6.7% (UNAUTHENTICATED
 * ×103)": a row's or a service's errors and client errors
 * (sextant_span_outcome) out of requests, each with its top codes
 * (spanquery_row.codes[0] and [1]; NULL: none known, as for Prometheus
 * rows);
 * the client-error part only when there are some.  err_pct < 0: the rate
 * from the counts; else that rate (Prometheus' extrapolated one).
 */
struct spanquery_code;
int tool_errors_text(struct buf *b, uint64_t requests, uint64_t errors,
		     uint64_t client_errors, double err_pct,
		     const struct spanquery_code *err_codes,
		     const struct spanquery_code *client_codes) WUR;
/* "1.2% (503 ×14, 500 ×2)": part of whole (or pct when >= 0) and the top
 * codes (NULL: none). */
int tool_rate_codes(struct buf *b, uint64_t part, uint64_t whole, double pct,
		    const struct spanquery_code *codes) WUR;
/*
 * "requests +12%, errors +0.50 pp, P95 +240%" (cap bytes into out): figures
 * against the same figures over a baseline of the same length (compare_to);
 * "new" when the baseline had no requests.  The changes also into o (may
 * be NULL): requests_change_pct, error_rate_change_pp, p95_change_pct.
 */
struct tool_figures {
	uint64_t requests, errors;
	double p95_ms;
};
void tool_change_text(const struct tool_figures *now,
		      const struct tool_figures *base, char *out, size_t cap,
		      json_t *o);

/*
 * The service a tool argument names, as the store names it: given itself
 * when some span carries it, else the one service name given means as
 * people write it (spanquery_resolve: "API Gateway", "the gateway
 * service" for api-gateway), with note set to "service: api-gateway (from
 * \"the gateway service\")" for the answer; else given, note "" (the tool
 * then says "did you mean").  The names come from a list of the gateway's
 * own, read again from the store only for a name it does not hold (at most
 * every 2 s), so an exact name costs no query.  The result is given, or
 * out (cap bytes).
 */
const char *tool_service_name(struct call *call, const char *given, char *out,
			      size_t cap, char *note, size_t note_cap);

/* The [health] tolerances of the gateway's configuration (Kiali's
 * defaults without one). */
struct health_tolerances tool_health_tolerances(struct call *call);
/* The rule in words for an answer's closing note: "errors > 0%
 * DEGRADED, >= 10% UNHEALTHY; client errors >= 10% DEGRADED, >= 20%
 * UNHEALTHY" with t's values. */
int tool_health_rule(struct buf *b, const struct health_tolerances *t);
/* The top codes as JSON: [{"code": "503", "count": 14}, ...]. */
json_t *tool_codes_json(const struct spanquery_code *codes);

/*
 * Whether service has no spans at all in the store (c may be NULL: then
 * false).  When it has none, out (cap bytes, cut when longer) says so with
 * "did you mean a or b?" for the closest names (case-insensitive; of the
 * name's words when the whole name is close to none); when list_tool is
 * not NULL (the tool that lists services), it says how many services have
 * spans and to call list_tool.  False also when the names cannot be read:
 * the caller then answers as if the service were known.
 */
bool tool_unknown_service(struct pg_conn *c, const char *service,
			  const char *list_tool, char *out, size_t cap);

/*
 * The trace whose id begins with the hex digits prefix, into id, read on
 * c: STATUS_OK with *result NULL when exactly one does; else *result says
 * none or which ones (an error answer), or the store failed
 * (tool_store_failed for tool).
 */
int tool_trace_prefix(struct call *call, const char *tool, struct pg_conn *c,
		      const char *prefix, uint8_t id[16], json_t **result) WUR;

/*
 * One trace's spans from each span source at once (a tool_round on k):
 * its id, or when prefix is not NULL the one trace whose id begins with
 * those hex digits (spanquery_is_trace_prefix), into id; then sp[i] the
 * spans of source i (caller frees with spanquery_spans_free), NULL where
 * status[i] says it failed.  STATUS_OK with *result NULL, or with
 * *result an isError answer: no trace or two begin with prefix (saying
 * what to give), its lookup failed (as tool_store_failed answers for
 * tool), or every source failed.  Else tool_round_run's failure.
 */
struct spanquery_spans;
int tool_trace_spans(struct call *call, const char *tool,
		     const struct tool_conns *k, const char *prefix,
		     uint8_t id[16], struct spanquery_spans *sp[TOOL_SPAN_SRCS],
		     char (*status)[TOOL_STATUS_MAX], json_t **result) WUR;

/* m: the span x as lib/telemetry/merge takes it, from source (enum merge_source);
 * m->user points at x (borrowed). */
void tool_merge_span(struct merge_span *m, const struct spanquery_span *x,
		     int source);

#endif

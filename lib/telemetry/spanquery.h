/*
 * spanquery.h - the span queries behind the unified tools: per-call metrics
 * (requests, percentiles, error rate) over the span_calls view, exact or
 * served by the hourly and minute rollups, trace selection and trace spans, and the
 * service names with "did you mean" suggestions.  Definitions of a call,
 * its key and an error live in the view (migrations/0005_span_rollup.sql).
 *
 * Each query has a _send half and a _recv half (lib/pg pg_send/pg_result)
 * so a caller runs one source per connection at once from one thread.
 * Strings in results point into the result and live as long as it does.
 */
#ifndef SEXTANT_SPANQUERY_H
#define SEXTANT_SPANQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

enum spanquery_protocol {
	SPANQUERY_HTTP = 0,
	SPANQUERY_GRPC = 1,
	SPANQUERY_SQL = 2,
	SPANQUERY_PROTOCOLS = 3,
};

/* "http", "grpc", "sql"; NULL out of range.  And back: -1 when unknown. */
const char *spanquery_protocol_name(int protocol);
int spanquery_protocol_parse(const char *name);

/* keys (route+method, method, operation+table) returned per source at most;
 * a service with more is cut (spanquery_metrics.truncated) */
#define SPANQUERY_MAX_KEYS 2000

struct spanquery_filter {
	const char *service; /* required */
	int64_t from_ms;     /* [from_ms, to_ms), Unix ms */
	int64_t to_ms;
	unsigned protocols;	 /* bits 1 << protocol; 0 = every protocol */
	const char *http_route;	 /* NULL: any (exact match otherwise) */
	const char *http_method; /* case-insensitive */
	int http_status_min;	 /* both 0: any; else inclusive range */
	int http_status_max;
	const char *grpc_method;   /* "pkg.Service/Method", leading '/' ok */
	int grpc_status;	   /* -1: any */
	const char *sql_operation; /* case-insensitive */
	const char *table_name;
};

/*
 * The bound values of a filter, shared by the statements over span_calls
 * and the rollups (here and lib/telemetry/timeline): $1 service, $2
 * source, $3 from, $4 to, $5 protocols (text[]), $6 http route, $7 http
 * method, $8 / $9 http status range, $10 grpc method, $11 grpc status,
 * $12 sql operation, $13 table.  A statement adds its own from v[13] on.
 * v points into p: valid while p is.
 */
#define SPANQUERY_PARAMS     13
#define SPANQUERY_PARAMS_MAX 20
struct spanquery_params {
	const char *v[SPANQUERY_PARAMS_MAX];
	char from[48], to[48], smin[16], smax[16], gstat[16], protos[32];
};
/* STATUS_INVALID (err filled) without a service or with from >= to. */
int spanquery_params(struct spanquery_params *p, const char *source,
		     const struct spanquery_filter *f,
		     struct pg_error *err) WUR;

/*
 * SQL: the rows (of span_calls, span_rollup or span_rollup_minute) of
 * service $1 and source $2 that pass the filters $5..$13.  A filter of one
 * protocol leaves the rows of the others alone.
 */
#define SPANQUERY_WHERE                                                        \
	" service_name = $1 AND source = $2"                                   \
	" AND protocol = ANY ($5::text[])"                                     \
	" AND (protocol <> 'http' OR (($6::text IS NULL OR k1 = $6)"           \
	" AND ($7::text IS NULL OR k2 = upper($7))"                            \
	" AND ($8::int IS NULL OR status BETWEEN $8 AND $9)))"                 \
	" AND (protocol <> 'grpc' OR (($10::text IS NULL OR k1 = ltrim($10, "  \
	"'/')) AND ($11::int IS NULL OR status = $11)))"                       \
	" AND (protocol <> 'sql' OR (($12::text IS NULL OR k1 = upper($12))"   \
	" AND ($13::text IS NULL OR k2 = $13)))"

/* The outcome of a call (sextant_call_outcome, migrations 0012-0013). */
enum spanquery_outcome {
	SPANQUERY_OK = 0,
	SPANQUERY_ERROR = 1,	    /* the server or the call failed */
	SPANQUERY_CLIENT_ERROR = 2, /* a request the client got wrong */
};

/* A status code and how many of a row's errors (or client errors) had it;
 * span_error: the span status was ERROR (what failed an HTTP 200 or a
 * gRPC OK). */
#define SPANQUERY_TOP_CODES 3
struct spanquery_code {
	int protocol; /* enum spanquery_protocol: what status means */
	int status;   /* HTTP status, gRPC code (-1: none), SQL span status */
	bool span_error;
	uint64_t n; /* 0: no more codes */
};

/* One key of one source. */
struct spanquery_row {
	int protocol;	/* enum spanquery_protocol */
	const char *k1; /* route / method / operation ("" when absent) */
	const char *k2; /* HTTP method / "" / table */
	uint64_t requests;
	uint64_t errors;	/* outcome SPANQUERY_ERROR */
	uint64_t client_errors; /* outcome SPANQUERY_CLIENT_ERROR */
	double p50_ms, p95_ms, p99_ms;
	/* the most frequent codes of the errors ([0]) and client errors
	 * ([1]), most first (then by status) */
	struct spanquery_code codes[2][SPANQUERY_TOP_CODES];
};

/*
 * Status counts of one key, to pick its top codes: add every (status,
 * span_error, outcome, n), then spanquery_tally_top fills r->codes.  Keeps
 * SPANQUERY_TALLY_MAX distinct codes; later ones are left out of the top
 * lists (the error counts stay exact).
 */
#define SPANQUERY_TALLY_MAX 64
struct spanquery_tally {
	struct {
		int protocol, status, outcome;
		bool span_error;
		uint64_t n;
	} v[SPANQUERY_TALLY_MAX];
	size_t n;
};
void spanquery_tally_add(struct spanquery_tally *t, int protocol, int status,
			 bool span_error, int outcome, uint64_t n);
/*
 * The (status, span_error, outcome) columns of a rollup or bucketed row as
 * text (integer, "t"/"f", integer): false when one is not that.
 */
bool spanquery_outcome_cols(const char *status, const char *span_error,
			    const char *outcome, int *st, bool *se, int *oc);

/* Adds "status:span_error:outcome:n,..." (SQL string_agg) of protocol to t:
 * STATUS_INVALID on anything else ("" adds nothing). */
int spanquery_tally_parse(struct spanquery_tally *t, int protocol,
			  const char *s);
void spanquery_tally_top(const struct spanquery_tally *t,
			 struct spanquery_code codes[2][SPANQUERY_TOP_CODES]);

struct spanquery_metrics {
	struct spanquery_row *rows; /* by protocol, k1, k2 */
	size_t n;
	bool rollup;	/* histogram path (rollup rows and bucketed raw
			 * spans): percentiles within 0.5% */
	bool truncated; /* more than SPANQUERY_MAX_KEYS keys */
	/* the whole service per protocol: every key's calls together, with
	 * percentiles over all their durations (k1, k2 ""; requests 0 when
	 * the protocol has none) */
	struct spanquery_row total[SPANQUERY_PROTOCOLS];
	void *priv_;
};

/*
 * Sends the metrics statement of one source ("ebpf" | "otlp") for f, as of
 * now_ms.  A range holding a whole settled minute takes the rollup path
 * (rollup_split_range): whole settled hours with no pending change come
 * from the hourly rollups, other whole settled minutes with no pending
 * change from the minute rollups, the rest (partial and unsettled minutes,
 * minutes with late spans) from raw spans bucketed alike; percentiles
 * within ROLLUP_ALPHA, counts exact.  A shorter range is computed exactly
 * (percentile_cont).  *rollup says which; pass it to _recv.
 * STATUS_INVALID for a bad filter (no service, from >= to); else lib/pg
 * errors.
 */
int spanquery_metrics_send(struct pg_conn *c, const char *source,
			   const struct spanquery_filter *f, int64_t now_ms,
			   bool *rollup, struct pg_error *err) WUR;
int spanquery_metrics_recv(struct pg_conn *c, bool rollup,
			   struct spanquery_metrics **out,
			   struct pg_error *err) WUR;
void spanquery_metrics_free(struct spanquery_metrics *m);

/* ---- traces ------------------------------------------------------------ */

/* spans fetched per source and call at most; more sets truncated */
#define SPANQUERY_MAX_SPANS  50000
#define SPANQUERY_MAX_TRACES 100

struct spanquery_trace_filter {
	const char *service; /* NULL: any */
	int64_t from_ms, to_ms;
	int64_t min_duration_ns; /* < 0: any */
	size_t max_traces;	 /* 1..SPANQUERY_MAX_TRACES */
	bool slowest;		 /* else most recent first */
	/* only traces in which a span of service failed (the status the
	 * trees show): spanquery_recent_send of every source only, which
	 * the other statements refuse (STATUS_INVALID) */
	bool failed_only;
	/* spanquery_recent_send: > 0, the statement's own statement timeout
	 * (pg_send_prepared_within); else the connection's */
	int timeout_ms;
};

/*
 * The ids of the best max_traces traces with a span of this source in the
 * range (of service, at least min_duration long), most recent or slowest
 * first: _send, then _recv into ids / keys (room for cap; at most
 * max_traces come), so that the caller can pick the best max_traces over
 * the sources.  keys[i] orders them across sources: the trace's latest
 * matching span start (Unix us) or its longest matching span (ns); ties go
 * to the lower id.  *n gets how many.
 *
 * *more is set when this source has matching traces beyond those returned
 * (or beyond cap).  The most recent traces with no min_duration are found
 * by a walk that stops at the (max_traces + 1)th trace, so *more is exact
 * and the cost does not grow with the range.  With min_duration or
 * slowest, the newest (longest) 20,000 matching spans are grouped by trace:
 * *more is exact below that and set whenever it is reached (there may be
 * other traces beyond them).
 */
int spanquery_trace_ids_send(struct pg_conn *c, const char *source,
			     const struct spanquery_trace_filter *f,
			     struct pg_error *err) WUR;
int spanquery_trace_ids_recv(struct pg_conn *c, size_t cap, uint8_t (*ids)[16],
			     int64_t *keys, size_t *n, bool *more,
			     struct pg_error *err) WUR;

/*
 * SQL of a jsonb value as stored unless its text is longer than max
 * characters (a literal): then that text cut, with "…", as a string.
 * And the source of an object's first max members by name, as rows
 * (key, value).  Shared by the span reads that bound attributes.
 */
#define SPANQUERY_CUT_JSON_SQL(value, max)                                     \
	"CASE WHEN length(" value "::text) <= " max " THEN " value             \
	" ELSE to_jsonb(left(CASE jsonb_typeof(" value ") WHEN 'string' "      \
	"THEN " value " #>> '{}' ELSE " value "::text END, " max               \
	") || '…') END"
#define SPANQUERY_FIRST_MEMBERS_SQL(obj, max)                                  \
	"(SELECT key, value FROM jsonb_each(" obj ") ORDER BY key LIMIT " max  \
	")"

/*
 * A span's status as the trees show it (SQL over a spans row): ERROR (2)
 * also for a span that failed by sextant_span_outcome without that
 * status, so that every answer follows the one rule.
 */
#define SPANQUERY_STATUS_SQL                                                   \
	"CASE WHEN sextant_span_outcome(kind, status_code, http_status_code, " \
	"rpc_grpc_status_code) = 1 THEN 2::smallint ELSE status_code END"

/*
 * What explains a failed or slow span: its codes, the remote peer (on a
 * span that calls out), the first "exception" event, and on request its
 * attributes.  The trace statements read it with every span (attributes
 * excepted); spanquery_details reads it for a few spans with their
 * attributes (jsonb of any size).  Every string is bounded in SQL: peer
 * and exception type SPANQUERY_DETAIL_TEXT characters, the message twice
 * that, attributes SPANQUERY_DETAIL_ATTRS keys (by name) with values
 * longer than SPANQUERY_DETAIL_VALUE characters cut and ending in "…".
 */
#define SPANQUERY_MAX_DETAILS  64
#define SPANQUERY_DETAIL_TEXT  160
#define SPANQUERY_DETAIL_ATTRS 40
#define SPANQUERY_DETAIL_VALUE 160

struct spanquery_detail {
	bool found;
	int http_status; /* -1 when none */
	int grpc_code;	 /* -1 when none */
	/* peer.service, else server.address[:server.port]; NULL when none */
	const char *peer;
	const char *db_system, *db_table; /* NULL when none */
	const char *exception_type, *exception_message;
	/* a JSON object (text), NULL unless asked for */
	const char *attributes;
};

struct spanquery_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_span_id[8];
	bool has_parent;
	uint64_t start_ns;
	uint64_t duration_ns;
	int kind;   /* OTLP SpanKind */
	int status; /* OTLP StatusCode: 0 unset, 1 ok, 2 error; 2 also when the
		     * span failed by sextant_span_outcome (an HTTP 5xx) */
	const char *service;
	const char *name;
	const char *status_message; /* NULL when none */
	/* the span's first link into its own trace (links column) */
	uint8_t link_span_id[8];
	bool has_link;
	/* the row's source when spanquery_recent_send was asked for every
	 * source at once; NULL from the per-source statements */
	const char *source;
	struct spanquery_detail detail; /* attributes NULL */
};

struct spanquery_spans {
	struct spanquery_span *spans;
	size_t n;
	bool truncated; /* SPANQUERY_MAX_SPANS reached */
	void *priv_;
};

/* Sends the fetch of every span of the n traces from one source. */
int spanquery_spans_send(struct pg_conn *c, const char *source,
			 const uint8_t (*ids)[16], size_t n,
			 struct pg_error *err) WUR;
int spanquery_spans_recv(struct pg_conn *c, struct spanquery_spans **out,
			 struct pg_error *err) WUR;
void spanquery_spans_free(struct spanquery_spans *s);

/*
 * True when f asks for the most recent traces with no min_duration: the
 * case that the walk serves (spanquery_trace_ids_send), and that
 * spanquery_recent_send serves in one round trip.
 */
bool spanquery_trace_walks(const struct spanquery_trace_filter *f);

/*
 * spanquery_trace_ids_send and spanquery_spans_send of the ids it finds, in
 * one statement, for a filter that walks (else STATUS_INVALID): _recv
 * gives the ids, keys and *more exactly as spanquery_trace_ids_recv does,
 * and in *out this source's spans of those traces (all of the best
 * max_traces, even past cap) as spanquery_spans_recv does, but for one
 * thing: when there are more than SPANQUERY_MAX_SPANS (truncated set),
 * which of them were kept is unspecified (fetch them again with
 * spanquery_spans_send for the first ones).  The caller still fetches this
 * source's spans of the traces that another source picked.  *out: caller
 * frees with spanquery_spans_free; NULL on failure.
 *
 * source NULL: every source at once, for f->service (else
 * STATUS_INVALID).  The ids and keys are those of the union of each
 * source's, as the caller would fold them (a trace's key its best
 * source's); *out holds every span of those traces, each with its source,
 * and no spans are left to fetch unless it is truncated.
 */
int spanquery_recent_send(struct pg_conn *c, const char *source,
			  const struct spanquery_trace_filter *f,
			  struct pg_error *err) WUR;
int spanquery_recent_recv(struct pg_conn *c, size_t cap, uint8_t (*ids)[16],
			  int64_t *keys, size_t *n, bool *more,
			  struct spanquery_spans **out,
			  struct pg_error *err) WUR;

/* ---- the details of a few spans ---------------------------------------- */

struct spanquery_detail_key {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	const char *source;   /* "ebpf" | "otlp" */
	bool with_attributes; /* also read its attributes */
};

struct spanquery_details {
	struct spanquery_detail *v; /* v[i] for keys[i] */
	size_t n;
	void *priv_;
};

/* Sends the read of keys[0..n) (n at most SPANQUERY_MAX_DETAILS, else
 * STATUS_INVALID); _recv gives their details in the same order, not found
 * where the store has no such span.  *out: caller frees with
 * spanquery_details_free; NULL on failure. */
int spanquery_details_send(struct pg_conn *c,
			   const struct spanquery_detail_key *keys, size_t n,
			   struct pg_error *err) WUR;
int spanquery_details_recv(struct pg_conn *c, size_t n,
			   struct spanquery_details **out,
			   struct pg_error *err) WUR;
void spanquery_details_free(struct spanquery_details *d);

/* ---- a trace id from its first digits ---------------------------------- */

/* The fewest hex digits of a trace id spanquery_trace_prefix takes. */
#define SPANQUERY_PREFIX_MIN 8

/*
 * The trace ids in the store that begin with the hex digits hex (from
 * SPANQUERY_PREFIX_MIN to 31 of them), at most 2 (two mean the prefix is
 * ambiguous) into ids, their number in *n: one probe of the primary key's
 * range per partition.  STATUS_INVALID when hex is not such a prefix.
 */
/* Whether s is such a prefix: SPANQUERY_PREFIX_MIN to 31 hex digits. */
bool spanquery_is_trace_prefix(const char *s);
int spanquery_trace_prefix(struct pg_conn *c, const char *hex,
			   uint8_t (*ids)[16], size_t *n,
			   struct pg_error *err) WUR;

/* ---- services ---------------------------------------------------------- */

#define SPANQUERY_MAX_SERVICES 10000

/*
 * Every service name with spans in the store (a loose index scan: fast on
 * any table size), sorted.  *out: caller frees with spanquery_names_free.
 */
struct spanquery_names {
	const char **names;
	size_t n;
	void *priv_;
};
int spanquery_services(struct pg_conn *c, struct spanquery_names **out,
		       struct pg_error *err) WUR;
void spanquery_names_free(struct spanquery_names *n);

/*
 * Up to max (at most 8) names of names[0..n) closest to name (edit
 * distance, case-insensitive, with prefix and containment counted as
 * close), best first; only reasonable matches.  Returns how many were written to out.  Pure.
 */
size_t spanquery_suggest(const char *name, const char *const *names, size_t n,
			 const char **out, size_t max);

/*
 * The one name of names[0..n) that given means as people write it, or
 * SPANQUERY_NO_NAME (none, or more than one): the same words however
 * written ("API Gateway", "api_gateway", "apigateway" for api-gateway;
 * case, spaces, dashes and underscores ignored, a leading "the" and a
 * trailing "service", "svc" or "api" dropped), else every word given (of
 * three letters or more) a word of one name only ("the gateway service").
 * Callers try the exact name first.
 */
#define SPANQUERY_NO_NAME ((size_t)-1)
size_t spanquery_resolve(const char *given, const char *const *names, size_t n);

#endif

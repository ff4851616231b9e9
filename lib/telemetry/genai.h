/*
 * genai.h - GenAI usage over the span store: one session's traces, spans,
 * LLM calls and cost (get_session, compare_sessions), and calls, tokens,
 * cost, errors and latency by model, service and session over a time range
 * against the previous period of the same length (analyze_genai).
 *
 * What counts (one definition for every query here):
 * - A GenAI call is a span whose gen_ai.operation.name is an LLM operation
 *   (chat, text_completion, generate_content, embeddings), or a span of
 *   another operation (invoke_agent, execute_tool, ...) carrying token
 *   counts that no span below it in the same trace also carries: an agent
 *   span wrapping chat spans is not a call, and its tokens (a sum of its
 *   chats') are not counted again.  Spans below are looked for from one
 *   hour before the span's start to one day after it.
 * - A span seen by both eBPF and OTLP counts once (the OTLP copy).
 * - Model: gen_ai.response.model, else gen_ai.request.model (an empty
 *   string counts as absent): a failed call that names only the model it
 *   asked for belongs to that model.  Rows by model are by family
 *   (sextant_genai_family, migrations/0014_genai_models.sql: the model
 *   without its date suffix, gpt-4o-2024-08-06 under gpt-4o,
 *   claude-3-5-sonnet-20241022 and -latest under claude-3-5-sonnet; a
 *   numbered version of the model asked for under it, gemini-2.0-flash-001
 *   under gemini-2.0-flash), with the exact names seen as its snapshots.
 * - Failed: sextant_span_outcome(...) = 1 (migrations/0012), the one rule
 *   of a failed span; a GenAI call is a CLIENT span, so HTTP 4xx counts.
 * - Cost: input and output tokens times the model_pricing row in effect at
 *   the span's start (sextant_model_price: the longest model-name match,
 *   same provider first, latest effective_from), i.e. what
 *   sextant_genai_cost_usd gives per span (computed in float8: equal to
 *   a few parts in 10^15).  A call of a model without a
 *   price has no cost (never 0): sums then cover the priced calls only
 *   and say how many were left out and of which models.
 * - A session is every trace with a span whose session.id (or
 *   gen_ai.conversation.id) is the session id, started in the range.
 *
 * Queries are static SQL with bound parameters and bounded results (see
 * the limits below).  Strings in results point into the results and live
 * as long as the struct that holds them.  Not thread-safe on one
 * connection (lib/pg rules); the structs are plain data once returned.
 */
#ifndef SEXTANT_GENAI_H
#define SEXTANT_GENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/* slowest and most expensive calls of a session, top sessions by cost */
#define GENAI_TOP 5
/* traces of one session read at most (the earliest) */
#define GENAI_MAX_TRACES 1000
/* spans of one session read at most (the earliest): merge works on them */
#define GENAI_MAX_SPANS 50000
/* rows by model and by service at most; the rest are counted */
#define GENAI_MAX_GROUPS 200
/* error spans of a session kept for the answer (the earliest) */
#define GENAI_MAX_ERRORS 3
/* recent sessions listed when a session is not found */
#define GENAI_MAX_RECENT 5

/* Counts of a set of calls. */
struct genai_stats {
	uint64_t calls;
	uint64_t errors; /* failed (sextant_span_outcome 1) */
	uint64_t input_tokens, output_tokens;
	double cost_usd;   /* over the priced calls */
	uint64_t priced;   /* calls with a price (cost_usd covers these) */
	uint64_t unpriced; /* calls with tokens of models without a price */
	/* models of the unpriced calls, '\n'-separated ("" for a call
	 * without a model); NULL when there are none */
	const char *unpriced_models;
	double p50_ms, p95_ms; /* of the calls' durations; NAN when unknown */
};

/* One row by model, by service or by session (the other keys NULL). */
struct genai_group {
	const char *provider; /* by model; NULL when the spans had none */
	const char
		*model; /* by model: the family; NULL when the spans had none */
	/* by model: the family's exact models other than its name (dated
	 * snapshots, "-latest"), '\n'-separated, sorted; NULL when none */
	const char *snapshots;
	const char *service;	/* by service; by session: its first service */
	const char *session_id; /* by session */
	struct genai_stats s;
};

/* One call of a session. */
struct genai_call {
	const char *trace_id, *span_id; /* hex */
	const char *service, *name;
	const char *provider, *model; /* NULL when absent */
	uint64_t start_ns;	      /* Unix */
	uint64_t duration_ns;
	int64_t input_tokens, output_tokens; /* -1 when absent */
	bool priced;
	double cost_usd; /* when priced, of the exact model */
	int status;	 /* OTLP StatusCode */
	bool failed;	 /* sextant_span_outcome 1 */
};

struct genai_span_ref {
	const char *trace_id, *span_id; /* hex */
	const char *service, *name;
	const char *message; /* error spans: the status message, or NULL */
	uint64_t start_ns, duration_ns;
	uint64_t self_ns;	    /* duration not covered by any child */
	uint64_t trace_duration_ns; /* of the span's trace */
};

struct genai_service {
	const char *name;
	size_t spans, errors;
};

struct genai_session {
	size_t traces;	      /* in the session (all, not only those read) */
	size_t traces_read;   /* <= GENAI_MAX_TRACES */
	size_t spans, errors; /* distinct spans read, of which failed */
	bool truncated;	      /* traces or spans beyond the limits */
	uint64_t start_ns, end_ns;	/* first start, last end */
	double avg_trace_ms;		/* mean trace duration (first start to
				      last end of each trace) */
	struct genai_service *services; /* most spans first */
	size_t n_services;
	struct genai_span_ref bottleneck; /* largest self time */
	bool has_bottleneck;
	struct genai_span_ref error_spans[GENAI_MAX_ERRORS]; /* earliest */
	size_t n_error_spans;
	struct genai_stats total;   /* every call of the session */
	struct genai_group *models; /* by family, most expensive first */
	size_t n_models;
	struct genai_call slowest[GENAI_TOP];
	size_t n_slowest;
	struct genai_call costliest[GENAI_TOP]; /* priced calls only */
	size_t n_costliest;
	void *priv_;
};

/*
 * Reads session session_id, whose spans carrying the id started in
 * [from_ms, to_ms) (Unix ms); the traces' other spans are read from one
 * day before to one day after.  STATUS_NOTFOUND when no span carries the
 * id in the range (*out NULL, err untouched).  STATUS_INVALID for an empty
 * id or range; lib/pg errors.  Caller frees *out with genai_session_free.
 */
int genai_session_get(struct pg_conn *c, const char *session_id,
		      int64_t from_ms, int64_t to_ms,
		      struct genai_session **out, struct pg_error *err) WUR;
void genai_session_free(struct genai_session *s);

struct genai_recent {
	const char *session_id;
	const char *service; /* of its first span in the range */
	uint64_t start_ns;   /* its first span in the range */
	bool similar;	     /* the id looked for is a prefix of this one,
				or equal but for case */
};

struct genai_recent_list {
	struct genai_recent items[GENAI_MAX_RECENT];
	size_t n;
	void *priv_;
};

/*
 * The sessions with spans in [from_ms, to_ms), most recently active first,
 * those whose id starts with like (case-insensitive; may be NULL) before
 * the others; at most GENAI_MAX_RECENT.  For "no session X; recent
 * sessions: ...".  Free with genai_recent_free.
 */
int genai_recent_sessions(struct pg_conn *c, const char *like, int64_t from_ms,
			  int64_t to_ms, struct genai_recent_list **out,
			  struct pg_error *err) WUR;
void genai_recent_free(struct genai_recent_list *l);

struct genai_filter {
	int64_t from_ms, to_ms; /* [from, to), Unix ms */
	const char *service;	/* NULL: any */
	/* NULL: any; the request or response model, or their family */
	const char *model;
};

struct genai_usage {
	struct genai_stats total;    /* the range */
	struct genai_stats previous; /* [from - (to - from), from); no
					percentiles (NAN) */
	struct genai_group *models;  /* by family, most expensive first, then
					most calls */
	size_t n_models, models_total;
	struct genai_group *services;
	size_t n_services, services_total;
	struct genai_group *sessions; /* top GENAI_TOP by cost */
	size_t n_sessions, sessions_total;
	/* the GENAI_TOP least expensive, cheapest first (sessions whose
	 * calls have no price last, as in sessions) */
	struct genai_group *cheapest;
	size_t n_cheapest;
	void *priv_;
};

/*
 * Usage by model, service and session over f's range, and the totals of
 * the previous period of the same length.  Served by the partial index
 * spans_genai_idx (migrations/0006_genai_index.sql).  STATUS_INVALID for
 * an empty range or one beyond the TIMERANGE_MAX_MS bounds; lib/pg errors.
 * Free with genai_usage_free.
 */
int genai_usage_get(struct pg_conn *c, const struct genai_filter *f,
		    struct genai_usage **out, struct pg_error *err) WUR;
void genai_usage_free(struct genai_usage *u);

enum genai_key {
	GENAI_KEY_MODEL,
	GENAI_KEY_SERVICE,
};

#define GENAI_MAX_NAMES 50

struct genai_names {
	const char *names[GENAI_MAX_NAMES];
	size_t n;
	void *priv_;
};

/*
 * The distinct models or services of the GenAI calls in [from_ms, to_ms),
 * most calls first, at most max (1..GENAI_MAX_NAMES).  For "no calls of
 * model X; models seen: ...".  Free with genai_names_free.
 */
int genai_names_get(struct pg_conn *c, enum genai_key key, int64_t from_ms,
		    int64_t to_ms, size_t max, struct genai_names **out,
		    struct pg_error *err) WUR;
void genai_names_free(struct genai_names *nm);

#endif

/*
 * spanlist.h - the span listing behind query_spans: filtered spans of both
 * sources in a stable order, keyset-paginated with an opaque cursor, their
 * exact count, and the GenAI columns with each call's cost.  A span that
 * eBPF and OTLP both saw (same trace id and span id) is listed once, as its
 * OTLP row, the way lib/telemetry/merge shows it in trees.
 *
 * Each query has a _send and a _recv half (lib/pg pg_send/pg_result) so a
 * caller runs the page and the count on two connections at once.  Strings
 * in results point into the result and live as long as it does.
 */
#ifndef SEXTANT_SPANLIST_H
#define SEXTANT_SPANLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/* rows per page: a page is read into memory whole and shown in one answer */
#define SPANLIST_MAX_LIMIT 200

enum spanlist_status {
	SPANLIST_STATUS_ANY = 0,
	/* sextant_span_outcome (migration 0012): span status ERROR, HTTP 5xx,
	 * a 4xx or a gRPC code on a client span, a server-side gRPC code */
	SPANLIST_STATUS_OK = 1,
	SPANLIST_STATUS_ERROR = 2,
	SPANLIST_STATUS_CLIENT_ERROR =
		3, /* 4xx, UNAUTHENTICATED... on servers */
};

/* Both orders are newest first among equals, then by (trace id, span id,
 * source) descending, so that every row has one place. */
enum spanlist_order {
	SPANLIST_ORDER_START = 0,    /* start time, newest first */
	SPANLIST_ORDER_DURATION = 1, /* duration, longest first */
};

/* The values of lib/telemetry/merge's and lib/otlp's source enums. */
enum spanlist_source {
	SPANLIST_SOURCE_OTLP = 0,
	SPANLIST_SOURCE_EBPF = 1,
};

struct spanlist_filter {
	const char *service; /* NULL: any */
	bool has_trace_id;
	uint8_t trace_id[16];
	const char *session_id;	 /* NULL: any */
	bool has_range;		 /* false: any time */
	int64_t from_ms, to_ms;	 /* [from_ms, to_ms), Unix ms */
	int status;		 /* enum spanlist_status */
	int64_t min_duration_ns; /* < 0: any */
	int order;		 /* enum spanlist_order */
};

/* A row's place in the order; a page "after" it starts past it. */
struct spanlist_key {
	int64_t duration_ns; /* only compared in SPANLIST_ORDER_DURATION */
	int64_t start_us;    /* start_time, Unix microseconds */
	int start_nanos;     /* 0..999, the nanoseconds past start_us */
	uint8_t trace_id[16];
	uint8_t span_id[8];
	int source; /* enum spanlist_source */
};

struct spanlist_span {
	struct spanlist_key key;
	uint64_t start_ns; /* Unix ns */
	uint8_t parent_span_id[8];
	bool has_parent;
	int kind;    /* OTLP SpanKind */
	int status;  /* OTLP StatusCode: 0 unset, 1 ok, 2 error */
	int outcome; /* sextant_span_outcome: 0 ok, 1 error, 2 client error */
	int http_status; /* -1: none */
	int grpc_code;	 /* -1: none */
	bool also_ebpf;	 /* an OTLP row that eBPF saw too */
	const char *service;
	const char *name;
	const char *status_message; /* NULL when none */
	const char *session_id;	    /* NULL when none */
	/* GenAI: genai is true when any gen_ai.* column is set */
	bool genai;
	const char *provider;  /* NULL when absent */
	const char *operation; /* NULL when absent */
	/* the response model, else the request model (empty counts as
	 * absent); NULL when neither */
	const char *model;
	int64_t input_tokens, output_tokens; /* -1 when absent */
	/* cost at the price in effect at the span's start
	 * (sextant_genai_cost_usd); priced is false for an unknown model or
	 * none, and for a span that is not genai */
	bool priced;
	double cost_usd;
};

struct spanlist_page {
	struct spanlist_span *spans; /* in the filter's order */
	size_t n;
	bool more; /* a row past the page exists */
	void *priv_;
};

/*
 * Sends the statement for the first limit (1..SPANLIST_MAX_LIMIT) rows
 * matching f, after the row at *after (NULL: from the first).
 * STATUS_INVALID (err->client says why) for a limit out of range, an
 * empty range, a status or order out of range; else lib/pg errors.
 */
int spanlist_page_send(struct pg_conn *c, const struct spanlist_filter *f,
		       const struct spanlist_key *after, size_t limit,
		       struct pg_error *err) WUR;
/* *out: caller frees with spanlist_page_free (NULL on failure).  limit:
 * as sent. */
int spanlist_page_recv(struct pg_conn *c, size_t limit,
		       struct spanlist_page **out, struct pg_error *err) WUR;
void spanlist_page_free(struct spanlist_page *p); /* accepts NULL */

/* The exact number of rows matching f (every page together). */
int spanlist_count_send(struct pg_conn *c, const struct spanlist_filter *f,
			struct pg_error *err) WUR;
int spanlist_count_recv(struct pg_conn *c, int64_t *total,
			struct pg_error *err) WUR;

/* ---- the cursor -------------------------------------------------------- */

/*
 * What the next page needs: the position after the last row shown, the
 * time range resolved for the first page (so "last 1h" does not slide
 * between pages), how many rows came before, and a hash of the other
 * filters and the order, so that a cursor is not used with another query.
 */
struct spanlist_cursor {
	uint64_t filter_hash; /* spanlist_filter_hash */
	int order;	      /* enum spanlist_order */
	bool has_range;
	int64_t from_ms, to_ms;
	uint64_t seen; /* rows on the pages before the next */
	struct spanlist_key after;
};

/* FNV-1a over every field of f but the range; pure. */
uint64_t spanlist_filter_hash(const struct spanlist_filter *f);

/* base64url (no padding) of a JSON object {"v":1,...}: at most this long */
#define SPANLIST_CURSOR_MAX 512

/*
 * Writes the cursor into out (cap bytes, NUL-terminated).  STATUS_LIMIT
 * when cap is too small (SPANLIST_CURSOR_MAX always suffices),
 * STATUS_INVALID for fields out of range, STATUS_NOMEM.
 */
int spanlist_cursor_encode(const struct spanlist_cursor *cur, char *out,
			   size_t cap) WUR;

/*
 * Parses a cursor written by spanlist_cursor_encode.  STATUS_INVALID for
 * anything else: not base64url, not the JSON object, another version, a
 * missing, unknown or out-of-range field, longer than SPANLIST_CURSOR_MAX.
 * *out is zeroed on failure.
 */
int spanlist_cursor_decode(const char *s, struct spanlist_cursor *out) WUR;

#endif

/*
 * spansearch.h - the OTLP span search behind query_telemetry_spans: spans
 * of source 'otlp' by service, name substring, trace, session, attributes
 * (jsonb containment), duration, status and time, newest or slowest
 * first.  (query_spans' keyset-paged listing is lib/telemetry/spanlist.)
 */
#ifndef SEXTANT_SPANSEARCH_H
#define SEXTANT_SPANSEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

#define SPANSEARCH_MAX_SPANS 500
/* A span's attributes longer than this (as JSON) are replaced by {} and
 * flagged: 500 spans of large attributes would make a huge answer. */
#define SPANSEARCH_MAX_ATTR_JSON 4096

struct spansearch_req {
	const char *service;	     /* NULL: any; exact */
	const char *name;	     /* NULL: any; case-insensitive substring */
	const char *trace_id;	     /* NULL or 32 hex digits */
	const char *session_id;	     /* NULL: any; exact */
	const char *attributes_json; /* NULL or a JSON object: attributes @> */
	int64_t min_duration_ns;     /* < 0: any */
	int status;		     /* -1 any, 0 unset, 1 ok, 2 error */
	bool has_range;		     /* false: no time condition */
	int64_t from_ms, to_ms;	     /* [from_ms, to_ms) on the start */
	size_t limit;		     /* 1..SPANSEARCH_MAX_SPANS */
	bool slowest;		     /* longest first, else newest first */
};

struct spansearch_span {
	char trace_id[33];
	char span_id[17];
	char parent_span_id[17]; /* "" for a root */
	const char *service;
	const char *name;
	int kind;	  /* OTLP SpanKind 0..5 */
	int64_t start_us; /* Unix microseconds */
	int64_t duration_ns;
	int status;		     /* 0 unset, 1 ok, 2 error */
	const char *status_message;  /* NULL when none */
	const char *attributes_json; /* "{}" when too long (attrs_cut) */
	bool attrs_cut;
};

struct spansearch_result {
	struct spansearch_span *spans; /* in the requested order */
	size_t n;
	bool truncated; /* more than limit matched */
	void *priv_;
};

/*
 * The OTLP spans (source 'otlp') matching r, at most r->limit.
 * STATUS_INVALID with err->client for a bad request (limit, trace id,
 * range); else lib/pg errors.  *out: caller frees with
 * spansearch_free; strings live as long as it.
 */
int spansearch_run(struct pg_conn *c, const struct spansearch_req *r,
		   struct spansearch_result **out, struct pg_error *err) WUR;
void spansearch_free(struct spansearch_result *s);

#endif

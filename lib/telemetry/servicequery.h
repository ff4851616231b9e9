/*
 * servicequery.h - the service inventory behind list_services: every
 * service with spans in a time range, its namespace, the span sources that
 * saw it, its request count, errors and p95 latency, and when it was last
 * seen.  What a request and an error are comes from the span_calls view
 * (migrations/0005_span_rollup.sql, 0013_call_outcome.sql); ranges with a whole settled hour
 * read the hourly and minute rollups, as in lib/telemetry/spanquery.
 */
#ifndef SEXTANT_SERVICEQUERY_H
#define SEXTANT_SERVICEQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"
#include "telemetry/spanquery.h"

/* Services returned at most (sorted by name before the cut); more sets
 * truncated.  A store holds tens or hundreds. */
#define SERVICEQUERY_MAX_SERVICES 10000

/* Bits of servicequery_service.sources. */
enum {
	SERVICEQUERY_EBPF = 1 << 0,
	SERVICEQUERY_OTLP = 1 << 1,
};

struct servicequery_filter {
	int64_t from_ms; /* [from_ms, to_ms), Unix ms; from < to */
	int64_t to_ms;
	const char *ns; /* NULL: any namespace; else exactly this one */
};

/*
 * One service with at least one span (of any kind) in the range.
 *   ns: service.namespace, else k8s.namespace.name, of its newest span
 *       of each source, the newest that has one; NULL when none has.
 *   requests: its HTTP and gRPC SERVER spans (span_calls rows with
 *       protocol http or grpc; SQL client calls and every other span are
 *       not requests, so a service with only those has 0) as seen by the
 *       source that saw the most of them (a request both sources saw is
 *       one request, not two); errors and client_errors: those with
 *       span_calls.outcome 1 and 2 (sextant_call_outcome), codes their
 *       most frequent status codes; p95_ms: percentile_cont(0.95) of their durations; all three from
 *       that one source (within 0.5% when served from rollups), 0
 *       without requests.
 *   last_seen_us: start (Unix us) of its newest span in the range.
 */
struct servicequery_service {
	const char *service;
	const char *ns;
	unsigned sources; /* SERVICEQUERY_EBPF | SERVICEQUERY_OTLP */
	uint64_t requests;
	uint64_t errors, client_errors;
	double p95_ms;
	int64_t last_seen_us;
	struct spanquery_code codes[2][SPANQUERY_TOP_CODES]; /* as a row's */
};

struct servicequery_result {
	struct servicequery_service *services; /* most requests first, then
						* by name (strcmp) */
	size_t n;
	bool rollup;	/* requests partly from rollups (p95 within 0.5%) */
	bool truncated; /* more than SERVICEQUERY_MAX_SERVICES */
	void *priv_;
};

/*
 * Lists the services of f as of now_ms, on c (borrowed, idle, and left
 * idle: two statements in a read-only transaction of their own, rolled
 * back, with jit off).  A range with a whole settled hour reads the
 * rollups like spanquery_metrics_send (hour rows for the clean hours,
 * minute rows for the other clean settled minutes, raw spans for the
 * rest); a shorter one is exact, whatever minute rows it holds.  Strings point into the
 * result and live until servicequery_free.  STATUS_INVALID for from >= to
 * (err->client says so, no sqlstate); else lib/pg errors.  *out is NULL
 * on failure.
 *
 * Cost: a loose index scan over service names and, per service and
 * source, the newest span in the range: one index probe each with an
 * index on spans (service_name, source, start_time); with only
 * (service_name, start_time) a service lacking a source has all its spans
 * in the range read to find that out.  Plus the raw spans of the range's
 * partial and unsettled minutes at its ends (about three minutes) and of
 * its dirty minutes.
 */
int servicequery_list(struct pg_conn *c, const struct servicequery_filter *f,
		      int64_t now_ms, struct servicequery_result **out,
		      struct pg_error *err) WUR;

/* Accepts NULL. */
void servicequery_free(struct servicequery_result *r);

#endif

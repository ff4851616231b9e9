/*
 * timeline.h - a service's calls per time step (query_metrics' step):
 * requests, errors, client errors and P95 per step and protocol, over
 * every key that passes the filter, from the hour, 5-minute and minute
 * rollups and the raw spans of the unsettled edges (rollup_split_range),
 * as spanquery_metrics reads a whole range.
 */
#ifndef SEXTANT_TIMELINE_H
#define SEXTANT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"
#include "telemetry/spanquery.h"

/*
 * Steps per series at most: 24 h in 5 m steps (288) and a week in 30 m
 * steps (336) fit; each step is one text line, so more would not be read.
 */
#define TIMELINE_MAX_STEPS 360
/* A step is whole minutes, the finest rollup. */
#define TIMELINE_MIN_STEP_S 60

/*
 * The step for [from_ms, to_ms): "<n>m", "<n>h" or "<n>d" (n a positive
 * integer; "<n>s" for a whole number of minutes), giving at most
 * TIMELINE_MAX_STEPS steps.  Steps are aligned to multiples of the step
 * since the Unix epoch, so the first and last may be partial.
 * (pointquery_step_count counts them.)
 * STATUS_INVALID with a one-line message in err naming "step" and what to
 * use; *step_s is 0 then.  Pure.
 */
int timeline_step(int64_t from_ms, int64_t to_ms, const char *step,
		  int64_t *step_s, char *err, size_t errlen) WUR;

/* The calls of one step. */
struct timeline_point {
	uint64_t requests;
	uint64_t errors;	/* outcome SPANQUERY_ERROR */
	uint64_t client_errors; /* outcome SPANQUERY_CLIENT_ERROR */
	double p95_ms;		/* within ROLLUP_ALPHA; 0 without requests */
};

struct timeline {
	int64_t first_ms; /* start of the first step (<= the range's from) */
	int64_t step_s;
	size_t n; /* steps */
	/* per protocol: n points, or NULL when it had no call in the range */
	struct timeline_point *p[SPANQUERY_PROTOCOLS];
};

/*
 * Sends the timeline statement of one source ("ebpf" | "otlp") for f and
 * step_s (from timeline_step), as of now_ms.  A step of whole hours reads
 * the clean settled hours from span_rollup; a step of whole 5 minutes
 * over a range without such hours, with a filter of the service alone
 * (protocols aside), reads the whole 5 minutes with no dirty minute from
 * span_rollup_5m; every step reads the other clean settled minutes from
 * span_rollup_minute, and the rest (partial, unsettled and dirty minutes)
 * from raw spans bucketed the same way (docs/schema.md).  Each path sums
 * the same histograms: the answer does not depend on which is taken.
 * Errors as spanquery_metrics_send, and STATUS_INVALID for a step that
 * timeline_step would refuse.
 */
int timeline_send(struct pg_conn *c, const char *source,
		  const struct spanquery_filter *f, int64_t step_s,
		  int64_t now_ms, struct pg_error *err) WUR;
/* Reads its answer for the same f and step_s into *out (caller frees with
 * timeline_free; NULL on failure).  STATUS_IO for a row that does not
 * parse; else lib/pg errors, STATUS_NOMEM. */
int timeline_recv(struct pg_conn *c, const struct spanquery_filter *f,
		  int64_t step_s, struct timeline **out,
		  struct pg_error *err) WUR;
void timeline_free(struct timeline *t); /* accepts NULL */

#endif

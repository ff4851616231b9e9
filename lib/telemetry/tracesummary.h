/*
 * tracesummary.h - a merged trace (lib/telemetry/merge) in a few short
 * lists, as Kiali's get_traces summarises one: its bottlenecks (the spans
 * with the most self time on the request's critical path, as merge marks
 * it), its error spans (longest first), its error chain (root to where
 * the failure began) and its roots.  Pure: node indexes into the trace,
 * no allocation, no I/O; thread-safe.
 */
#ifndef SEXTANT_TRACESUMMARY_H
#define SEXTANT_TRACESUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "telemetry/merge.h"

/* Entries per list at most: max_spans is clamped to it (Kiali shows 7 by
 * default; a list longer than this is no longer a summary). */
#define TRACESUMMARY_MAX 50

/* Whether node failed: the caller's rule (its span rows' status). */
typedef bool (*tracesummary_error_fn)(const struct merge_node *node, void *arg);

struct tracesummary {
	/*
	 * Critical spans with self time, most self time first (then in
	 * tree order): what the request waited on, never asynchronous work.
	 */
	size_t bottlenecks[TRACESUMMARY_MAX];
	size_t n_bottlenecks;
	/* error spans, longest first (then in tree order); n_errors counts
	 * every shown one, listed or not */
	size_t errors[TRACESUMMARY_MAX];
	size_t n_errors_listed;
	size_t n_errors;
	/*
	 * The origin: among the error spans with no failed span below them
	 * (where a failure began, not where it was passed on, even through
	 * a span that did not fail, as a server answering 4xx), the longest
	 * (then the first in tree order); MERGE_NONE without errors.  chain
	 * runs from the origin's root down to it; a chain longer than
	 * max_spans keeps its root and its last max_spans - 1 hops (the
	 * origin alone for max_spans 1), chain_cut the hops left out after
	 * chain[0].
	 */
	size_t origin;
	size_t chain[TRACESUMMARY_MAX];
	size_t n_chain;
	size_t chain_cut;
	/* the roots (spans with no parent in the trace), by start */
	size_t roots[TRACESUMMARY_MAX];
	size_t n_roots;
};

/*
 * Summarises t's shown nodes into *out with at most max_spans (1 ..
 * TRACESUMMARY_MAX, clamped) entries per list.  is_error decides which
 * spans failed (NULL: none did).
 */
void tracesummary_build(const struct merge_trace *t, size_t max_spans,
			tracesummary_error_fn is_error, void *arg,
			struct tracesummary *out);

#endif

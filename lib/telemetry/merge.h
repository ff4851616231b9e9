/*
 * merge.h - the shared result-merge library: unions metric rows from several
 * sources by key, merges span sets into trace trees (dedup, orphans, cycles),
 * marks the spans that dominate latency, and fits output to a budget.
 * Pure computation: no I/O, no allocation visible to the caller but the one
 * merge_result, borrowed strings throughout.  Thread-safe (no global state).
 */
#ifndef SEXTANT_MERGE_H
#define SEXTANT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/*
 * Where a row or span came from.  The span sources match enum otlp_source;
 * when two sources report the same span the lower value wins: OTLP carries
 * the richer attributes.  Prometheus gives metric rows only (query_metrics'
 * histograms), never spans.
 */
enum merge_source {
	MERGE_SOURCE_OTLP = 0,
	MERGE_SOURCE_EBPF = 1,
	MERGE_SOURCE_PROMETHEUS = 2,
	MERGE_SOURCE_COUNT = 3,
};
/* spans come from the first two only */
#define MERGE_SPAN_SOURCES  2
#define MERGE_SOURCE_BIT(s) (1u << (unsigned)(s))

/* "no such index" in parent / child / sibling links and group rows */
#define MERGE_NONE ((size_t)-1)

/* ---- metric rows ------------------------------------------------------- */

/* key parts: route+method (HTTP), method (gRPC), operation+table (SQL) */
#define MERGE_KEY_PARTS 3

struct merge_metric_row {
	const char *key[MERGE_KEY_PARTS]; /* borrowed; NULL = part absent */
	int source;			  /* enum merge_source */
	uint64_t requests;
	double p50_ms, p95_ms, p99_ms, error_rate_pct;
	const void *user; /* the caller's, untouched */
};

/* One key with each source's row (NULL when that source had none). */
struct merge_metric_group {
	const struct merge_metric_row *row[MERGE_SOURCE_COUNT]; /* borrowed */
};

enum merge_sort {
	MERGE_SORT_KEY = 0,	 /* key parts ascending (NULL before "") */
	MERGE_SORT_REQUESTS = 1, /* total requests descending, then key */
	MERGE_SORT_P95 = 2,	 /* worst p95 of the sources descending */
	MERGE_SORT_ERRORS = 3,	 /* worst error rate descending */
};

/*
 * Groups rows[0..n) by key.  out must have room for n groups; *n_out gets
 * how many were filled, in the order asked for (ties always broken by key,
 * so the order is deterministic).  A second row for a key and source already
 * seen is a caller bug: the one with more requests is kept (first on a tie)
 * and *duplicates (may be NULL) counts the others.  Pointers in out borrow
 * from rows.  STATUS_INVALID (out untouched, *n_out 0) when a source is out
 * of range or sort is unknown.
 */
int merge_metrics(const struct merge_metric_row *rows, size_t n,
		  enum merge_sort sort, struct merge_metric_group *out,
		  size_t *n_out, size_t *duplicates) WUR;

/*
 * 100 * part / whole, 0 when whole is not above 0: a share in percent, the
 * error rate of every tool, that stays in [0, 100] (100 from part >=
 * whole on).  Written 100 * part / whole alone it need not: for part ==
 * whole it is 100.00000000000001 for one double in fifteen (a rate from
 * Prometheus with every request an error).  For counts (integers below
 * 2^46) it is exactly 100.0 * part / whole.
 */
double merge_pct(double part, double whole);

/*
 * Whether two sources' rows of one key saw the same calls, so that one row
 * can stand for both: requests within MERGE_AGREE_CALLS or
 * MERGE_AGREE_SHARE of the larger count, errors within the same, P50 and
 * P95 within MERGE_AGREE_MS or MERGE_AGREE_LATENCY of the larger.  eBPF
 * times a call at the socket and an SDK inside the process, so their
 * durations differ by the time in between (microseconds to a millisecond or
 * so); a sampling SDK or a probe that misses calls shows as counts apart,
 * and those rows are kept apart.
 */
#define MERGE_AGREE_CALLS   1.0	 /* calls */
#define MERGE_AGREE_SHARE   0.01 /* of the larger count */
#define MERGE_AGREE_MS	    1.0	 /* ms */
#define MERGE_AGREE_LATENCY 0.10 /* of the larger percentile */
bool merge_rows_agree(const struct merge_metric_row *a,
		      const struct merge_metric_row *b);

/* A group's total requests over its sources, and its key part (or NULL). */
uint64_t merge_group_requests(const struct merge_metric_group *g);
const char *merge_group_key(const struct merge_metric_group *g, int part);

/* ---- spans and traces -------------------------------------------------- */

struct merge_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_span_id[8]; /* ignored unless has_parent */
	bool has_parent;
	uint64_t start_ns, end_ns; /* end before start counts as end == start */
	int source;		   /* enum merge_source */
	int kind;		   /* OTLP SpanKind: MERGE_KIND_*, 0 unknown */
	/*
	 * Joined by a link rather than a parent: when has_parent is false
	 * and the linked span is in the trace, the span is drawn under it,
	 * as asynchronous work it caused (a batch consumer, a follow-up).
	 */
	uint8_t link_span_id[8];
	bool has_link;
	const void *user; /* the caller's row (names, attributes) */
};

/* the OTLP SpanKind values the critical path looks at */
#define MERGE_KIND_SERVER   2
#define MERGE_KIND_PRODUCER 4
#define MERGE_KIND_CONSUMER 5

struct merge_node {
	const struct merge_span *span; /* borrowed from the input array */
	unsigned also_seen_by; /* MERGE_SOURCE_BIT of each other source */
	size_t parent;	       /* index in the trace's nodes or MERGE_NONE */
	size_t first_child;    /* MERGE_NONE when none is shown */
	size_t next_sibling;   /* next root for roots; MERGE_NONE at the end */
	size_t depth;	       /* 0 for roots */
	uint64_t self_ns;      /* duration not covered by any child */
	bool orphan;	       /* parent id given but not in the set */
	bool cycle_cut;	       /* parent link dropped: it looped (or self) */
	bool linked;	       /* placed under its link's span, no parent */
	/*
	 * Work the request did not wait for: a CONSUMER span, a child of a
	 * PRODUCER, a child that starts once its parent has ended, a span
	 * placed by a link, and everything below one of those.  Drawn in the
	 * tree, never on the critical path nor slow.
	 */
	bool async;
	bool async_start; /* async, its parent not (or a root): marked */
	/* computed over all spans, shown or not */
	bool critical; /* on the request's critical path */
	bool slow;     /* dominates the request's latency */
};

struct merge_trace {
	uint8_t trace_id[16];
	/*
	 * Depth-first preorder: roots by start time, each followed by its
	 * subtree, siblings by start time (then span id).  A node's parent
	 * always comes before it, so any prefix is a valid tree.
	 */
	const struct merge_node *nodes;
	size_t n_nodes;	   /* shown: min(span_count, max_spans) */
	size_t span_count; /* distinct spans in the trace */
	size_t not_shown;  /* span_count - n_nodes */
	size_t duplicates; /* input spans folded into another source's */
	uint64_t start_ns; /* over all spans, shown or not */
	uint64_t end_ns;
	/*
	 * The request: the earliest-starting root SERVER span, else the
	 * latest-ending synchronous root.  The critical path runs down from
	 * it through synchronous children only; request_ns is its duration,
	 * the whole that slow shares and bottlenecks are measured against.
	 * May be at or beyond n_nodes when the shown prefix stops before it.
	 */
	size_t request;
	uint64_t request_ns;
};

/*
 * Bounds and knobs; zero fields take the defaults below.  max_spans bounds
 * the nodes shown per trace (a tool answer beyond that is unreadable; the
 * rest is counted in not_shown).  A span on the critical path is slow when
 * its self time is the largest there, or at least slow_share of the
 * request's duration, at most max_slow of them and never with zero self
 * time.  Self time counts only synchronous children as covering a span:
 * the parent did not wait for asynchronous ones.
 */
#define MERGE_DEFAULT_MAX_SPANS	 1000
#define MERGE_DEFAULT_MAX_TRACES 100
#define MERGE_DEFAULT_SLOW_SHARE 0.25
#define MERGE_DEFAULT_MAX_SLOW	 3
/* max_slow is clamped to this: more marks are no longer a highlight, and
 * it bounds the marking pass to MERGE_MAX_SLOW scans of a trace */
#define MERGE_MAX_SLOW 32
/* input spans beyond this give STATUS_LIMIT: about 140 bytes of working
 * memory per span, so 4M spans stay near 600 MB at worst; tool queries
 * fetch far fewer (max_traces x max_spans) */
#define MERGE_MAX_INPUT (4u * 1024 * 1024)

struct merge_opts {
	size_t max_spans;  /* per trace */
	size_t max_traces; /* the earliest-starting are kept */
	double slow_share;
	size_t max_slow;
};

struct merge_result {
	const struct merge_trace *traces; /* by start time, then trace id */
	size_t n_traces;
	size_t traces_not_shown; /* beyond max_traces */
	void *arena_;		 /* private */
};

/*
 * Merges spans[0..n) into trees, one per trace id.  Spans with equal
 * (trace id, span id) are one span: the lowest source wins, the others are
 * recorded in also_seen_by.  Orphans become roots of their fragment; a
 * parent chain that loops is cut at its earliest-starting span, which
 * becomes a root.  All walks are iterative: any depth is safe.  opts may be
 * NULL.  The spans array must outlive the result (nodes point into it).
 * Errors: STATUS_INVALID (source out of range), STATUS_LIMIT (n above
 * MERGE_MAX_INPUT), STATUS_NOMEM; *out is NULL on failure.  Caller frees
 * *out with merge_result_free.
 */
int merge_traces(const struct merge_span *spans, size_t n,
		 const struct merge_opts *opts, struct merge_result **out) WUR;

void merge_result_free(struct merge_result *r);

/*
 * t cut to at most max_nodes of its shown nodes (at least 1), chosen for
 * what explains the trace rather than as a prefix: the request and its
 * critical path, the slow spans, the spans pin says (e.g. errors; pin may
 * be NULL), each with its ancestors, then the others in depth-first
 * order while there is room.  *out is a trace like t (same preorder,
 * links renumbered among the kept nodes, request renumbered or n_nodes
 * when not kept, not_shown = span_count - n_nodes) whose nodes are a new
 * array: free it with merge_focus_free.  The nodes' spans are t's.
 * STATUS_NOMEM leaves *out empty.
 */
typedef bool (*merge_pin_fn)(const struct merge_node *node, void *arg);
int merge_focus(const struct merge_trace *t, size_t max_nodes, merge_pin_fn pin,
		void *arg, struct merge_trace *out) WUR;
void merge_focus_free(struct merge_trace *t);

/*
 * Where the asynchronous work of t's shown node i began: its highest
 * async ancestor (i itself when its parent waited for it).  MERGE_NONE
 * when i is not async or not shown.
 */
size_t merge_async_start(const struct merge_trace *t, size_t i);

/*
 * Background work slower than the request: the async shown node with the
 * most self time, when that self time is above the request's duration;
 * MERGE_NONE when there is none.
 */
size_t merge_background(const struct merge_trace *t);

/* ---- budgets ----------------------------------------------------------- */

/* room a caller should keep for the "N more not shown" line */
#define MERGE_NOTICE_MAX 40

/*
 * How many of n rows, of row_chars[i] characters each (NULL: rows only),
 * fit in max_rows rows and max_chars characters (0: unlimited).  When not
 * all fit, MERGE_NOTICE_MAX characters are kept back for the notice.
 * *hidden (may be NULL) gets n minus the result.
 */
size_t merge_fit(const size_t *row_chars, size_t n, size_t max_rows,
		 size_t max_chars, size_t *hidden);

/*
 * Writes "N more not shown" into buf (cap bytes, always NUL-terminated when
 * cap > 0); returns the length it needed, like snprintf.
 */
size_t merge_notice(char *buf, size_t cap, size_t hidden);

#endif

/*
 * tracesummary.c - a merged trace's bottlenecks, error spans, error chain
 * and roots (see tracesummary.h).  The critical path and self times are
 * merge's (merge_traces marks them); this only picks and orders.
 */
#include "telemetry/tracesummary.h"

#include <stdint.h>

static uint64_t
duration(const struct merge_node *n)
{
	const struct merge_span *s = n->span;

	return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

/*
 * Adds node i to list[0..*n), kept sorted by key descending then index,
 * at most max entries: a running top-k (max is small).
 */
static void
top_add(size_t *list, uint64_t *keys, size_t *n, size_t max, size_t i,
	uint64_t key)
{
	size_t k;

	/* i grows with each call: on an equal key the earlier one stays
	 * ahead, so only a larger key moves up */
	if (*n == max && key <= keys[max - 1])
		return;
	k = *n < max ? (*n)++ : max - 1;
	for (; k > 0 && keys[k - 1] < key; k--) {
		list[k] = list[k - 1];
		keys[k] = keys[k - 1];
	}
	list[k] = i;
	keys[k] = key;
}

/* out->chain: from the origin's root down to the origin, cut as
 * tracesummary.h says. */
static void
build_chain(const struct merge_trace *t, size_t max, struct tracesummary *out)
{
	size_t hops = 0, keep, i;

	for (i = out->origin; i != MERGE_NONE; i = t->nodes[i].parent)
		hops++;
	keep = hops <= max ? hops : max;
	out->n_chain = keep;
	out->chain_cut = hops - keep;
	/* fill from the end: the origin last */
	i = out->origin;
	for (size_t h = keep; h-- > 0;) {
		if (h == 0 && keep >= 2)
			while (t->nodes[i].parent != MERGE_NONE)
				i = t->nodes[i].parent;
		out->chain[h] = i;
		i = t->nodes[i].parent;
	}
}

/*
 * Whether failed node p has no failed descendant.  In preorder a
 * subtree is the run of nodes after its root that are deeper than it, so
 * the next failed node j is p's descendant exactly when no node in
 * (p, j] is as shallow as p; no later failed node can be one when j is
 * not.  min_depth: the least depth in (p, j]; the end of the trace
 * counts as shallower than any node.
 */
static bool
is_origin(const struct merge_trace *t, size_t p, size_t min_depth)
{
	return min_depth <= t->nodes[p].depth;
}

void
tracesummary_build(const struct merge_trace *t, size_t max_spans,
		   tracesummary_error_fn is_error, void *arg,
		   struct tracesummary *out)
{
	uint64_t bkeys[TRACESUMMARY_MAX], ekeys[TRACESUMMARY_MAX];
	uint64_t origin_ns = 0;
	size_t max = max_spans < 1		    ? 1
		     : max_spans > TRACESUMMARY_MAX ? TRACESUMMARY_MAX
						    : max_spans;
	size_t prev = MERGE_NONE, min_depth = 0;

	*out = (struct tracesummary){.origin = MERGE_NONE};
	/* one pass; i == n_nodes closes the last failed node's subtree */
	for (size_t i = 0; i <= t->n_nodes; i++) {
		const struct merge_node *node = t->nodes + i;
		bool failed;

		if (i == t->n_nodes) {
			failed = true;
			min_depth = 0;
		} else {
			if (node->depth < min_depth)
				min_depth = node->depth;
			if (node->critical && node->self_ns > 0)
				top_add(out->bottlenecks, bkeys,
					&out->n_bottlenecks, max, i,
					node->self_ns);
			if (node->parent == MERGE_NONE && out->n_roots < max)
				out->roots[out->n_roots++] = i;
			failed = is_error != NULL && is_error(node, arg);
		}
		if (!failed)
			continue;
		if (prev != MERGE_NONE && is_origin(t, prev, min_depth) &&
		    (out->origin == MERGE_NONE ||
		     duration(&t->nodes[prev]) > origin_ns)) {
			out->origin = prev;
			origin_ns = duration(&t->nodes[prev]);
		}
		if (i == t->n_nodes)
			break;
		out->n_errors++;
		top_add(out->errors, ekeys, &out->n_errors_listed, max, i,
			duration(node));
		prev = i;
		min_depth = SIZE_MAX;
	}
	if (out->origin != MERGE_NONE)
		build_chain(t, max, out);
}

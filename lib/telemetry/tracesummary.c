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

/* Whether one of node i's shown children failed. */
static bool
child_failed(const struct merge_trace *t, size_t i,
	     tracesummary_error_fn is_error, void *arg)
{
	for (size_t c = t->nodes[i].first_child; c != MERGE_NONE;
	     c = t->nodes[c].next_sibling)
		if (is_error(&t->nodes[c], arg))
			return true;
	return false;
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

	*out = (struct tracesummary){.origin = MERGE_NONE};
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct merge_node *node = &t->nodes[i];

		if (node->critical && node->self_ns > 0)
			top_add(out->bottlenecks, bkeys, &out->n_bottlenecks,
				max, i, node->self_ns);
		if (node->parent == MERGE_NONE && out->n_roots < max)
			out->roots[out->n_roots++] = i;
		if (is_error == NULL || !is_error(node, arg))
			continue;
		out->n_errors++;
		top_add(out->errors, ekeys, &out->n_errors_listed, max, i,
			duration(node));
		if (!child_failed(t, i, is_error, arg) &&
		    (out->origin == MERGE_NONE || duration(node) > origin_ns)) {
			out->origin = i;
			origin_ns = duration(node);
		}
	}
	if (out->origin != MERGE_NONE)
		build_chain(t, max, out);
}

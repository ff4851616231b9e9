/*
 * fuzz_merge.c - libFuzzer harness for lib/telemetry/merge.
 *
 * Turns the input into a span set with ids from a tiny alphabet (so
 * duplicates, cycles, self-parents and orphans are common), merges it,
 * checks the tree invariants, fits it to a budget; then merges metric rows
 * built from the same bytes.  Invariant breaks abort().
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REC 6 /* bytes per span */

static void
check_trace(const struct merge_trace *t)
{
	size_t chars[64], n = t->n_nodes < 64 ? t->n_nodes : 64, hidden;

	if (t->n_nodes + t->not_shown != t->span_count || t->span_count == 0)
		abort();
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct merge_node *d = &t->nodes[i];

		if (d->parent == MERGE_NONE
			    ? d->depth != 0
			    : d->parent >= i ||
				      d->depth != t->nodes[d->parent].depth + 1)
			abort();
		if (d->first_child != MERGE_NONE &&
		    (d->first_child != i + 1 || t->nodes[i + 1].parent != i))
			abort();
		if (d->next_sibling != MERGE_NONE &&
		    (d->next_sibling <= i || d->next_sibling >= t->n_nodes ||
		     t->nodes[d->next_sibling].parent != d->parent))
			abort();
		if (d->slow && !d->critical)
			abort();
		if (d->also_seen_by & MERGE_SOURCE_BIT(d->span->source))
			abort();
		if (d->span->start_ns < t->start_ns)
			abort();
		if (i < 64)
			chars[i] = d->depth + 1;
	}
	if (merge_fit(chars, n, n / 2, 50, &hidden) + hidden != n)
		abort();
}

static void
fuzz_spans(const uint8_t *data, size_t size)
{
	size_t n = size / REC, total = 0;
	struct merge_span *spans = calloc(n ? n : 1, sizeof(*spans));
	struct merge_opts o = {0};
	struct merge_result *r = NULL;

	if (spans == NULL)
		return;
	if (size > 0) {
		o.max_spans = data[0] % 8;
		o.max_traces = data[0] / 32;
		o.max_slow = data[size - 1] % 4;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = data + i * REC;
		struct merge_span *s = &spans[i];

		s->trace_id[15] = b[0] & 3;
		s->span_id[7] = b[1] & 15;
		s->has_parent = (b[2] & 16) == 0;
		s->parent_span_id[7] = b[2] & 15;
		s->start_ns = b[3];
		/* end before start stays possible: it must count as zero */
		s->end_ns = (uint64_t)b[3] + b[4] - 16;
		s->source = b[5] & 1;
	}
	if (merge_traces(spans, n, &o, &r) != STATUS_OK)
		goto out;
	for (size_t t = 0; t < r->n_traces; t++) {
		check_trace(&r->traces[t]);
		total += r->traces[t].span_count + r->traces[t].duplicates;
	}
	if (r->traces_not_shown == 0 && total != n)
		abort();
out:
	merge_result_free(r);
	free(spans);
}

static void
fuzz_metrics(const uint8_t *data, size_t size)
{
	static const char *const words[] = {"a", "b", "", NULL};
	size_t n = size / 3, m = 0, dup = 0, rows_seen = 0;
	struct merge_metric_row *rows = calloc(n ? n : 1, sizeof(*rows));
	struct merge_metric_group *g = calloc(n ? n : 1, sizeof(*g));

	if (rows == NULL || g == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = data + i * 3;

		rows[i].key[0] = words[b[0] & 3];
		rows[i].key[1] = words[(b[0] >> 2) & 3];
		rows[i].source = (b[0] >> 4) & 1;
		rows[i].requests = b[1];
		rows[i].p95_ms = b[2];
		rows[i].error_rate_pct = b[2] & 0x40 ? NAN : b[1] / 2.0;
	}
	if (merge_metrics(rows, n, (enum merge_sort)(size % 5), g, &m, &dup) !=
	    STATUS_OK)
		goto out;
	for (size_t i = 0; i < m; i++)
		for (int s = 0; s < MERGE_SOURCE_COUNT; s++)
			rows_seen += g[i].row[s] != NULL;
	if (rows_seen + dup != n)
		abort();
out:
	free(rows);
	free(g);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_spans(data, size);
	fuzz_metrics(data, size);
	return 0;
}

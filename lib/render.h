/*
 * render.h - text rendering of tool answers for people and models: numbers
 * with thousands separators, durations, per-source metric sections and
 * trace trees (├─ └─ │) drawn from lib/merge results.  Pure: writes into a
 * bounded struct buf, no I/O.
 */
#ifndef SEXTANT_RENDER_H
#define SEXTANT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "merge.h"
#include "status.h"

/* "1,234,567" */
size_t render_count(uint64_t v, char *buf, size_t cap);

/* A duration in ms, short: "0.42ms", "4.2ms", "23ms", "1,234ms", "12.3s". */
size_t render_ms(double ms, char *buf, size_t cap);

/* "[eBPF]", "[OTLP]" for enum merge_source; "[?]" otherwise. */
const char *render_source_label(int source);

/*
 * Markdown tables: render_md_row appends "| a | b | c |\n" with each cell
 * escaped (| as \|, newlines and tabs as spaces, other control bytes
 * dropped) and cut to RENDER_MD_CELL_MAX bytes with "…" (never inside a
 * UTF-8 sequence); render_md_rule appends "|---|---|...|\n" for n columns.
 * STATUS_LIMIT / STATUS_NOMEM from the buffer (the row is then not added).
 */
#define RENDER_MD_CELL_MAX 120
int render_md_row(struct buf *b, const char *const *cells, size_t n) WUR;
int render_md_rule(struct buf *b, size_t n) WUR;

/* Deeper trees are drawn flat past this depth, each line saying its depth:
 * a 1,000-level trace stays readable and its lines short. */
#define RENDER_MAX_INDENT 24

/*
 * Draws the shown nodes of t, one line per span:
 *   <prefix>├─ <label(node)>
 * where label writes the span's own text (after the tree prefix) into b.
 * Adds at most max_chars bytes to b (0: no limit): the whole tree when it
 * fits, else the lines that fit with the "N more not shown" line, which is
 * also written when merge left spans out.  The notice is always written
 * when spans are hidden, even past a budget smaller than itself.  A full
 * buffer ends the drawing the same way (STATUS_LIMIT if even the notice
 * does not fit).  *shown (may be NULL) gets the lines drawn.  Errors: the
 * label's, STATUS_NOMEM, STATUS_LIMIT.
 */
typedef int (*render_label_fn)(struct buf *b, const struct merge_node *node,
			       void *arg);
int render_trace_tree(struct buf *b, const struct merge_trace *t,
		      render_label_fn label, void *arg, size_t max_chars,
		      size_t *shown) WUR;

#endif

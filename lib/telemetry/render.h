/*
 * render.h - text rendering of tool answers for people and models: numbers
 * with thousands separators, durations, percentages, per-source metric sections and
 * trace trees (├─ └─ │) drawn from lib/telemetry/merge results.  Pure: writes into a
 * bounded struct buf, no I/O.
 */
#ifndef SEXTANT_RENDER_H
#define SEXTANT_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "telemetry/merge.h"

/* "1,234,567" */
size_t render_count(uint64_t v, char *buf, size_t cap);

/* A duration in ms, short: "0.42ms", "4.2ms", "23ms", "1,234ms", "12.3s". */
size_t render_ms(double ms, char *buf, size_t cap);

/*
 * Dollars, one rule for every answer: "$1,234.56" from $1 up (cents);
 * under $1 up to six decimals without trailing zeros, at least two
 * ("$0.50", "$0.0075", "$0.000123"); "<$0.000001" for what rounds to
 * zero at six places; "$0.00" for zero (and for what is not a positive
 * finite number).  Returns the length, as snprintf.
 */
#define RENDER_USD_MAX 32
size_t render_usd(double usd, char *buf, size_t cap);

/*
 * Percentages, one rule for every answer: a rate that is not zero never
 * reads as zero, one that is not all never reads as all.  "0%" for zero
 * exactly (and for what is not a positive finite number), "100%" for all;
 * under 1% two significant digits ("0.025%", "0.10%", "0.0000012%");
 * from 1% one decimal ("1.3%", "12.5%"); just under 100% as many decimals
 * as the rest needs for two significant digits ("99.975%").  Above 100%
 * (a change, not a rate) one decimal.  Returns the length, as snprintf;
 * RENDER_PCT_MAX bytes hold any.
 */
#define RENDER_PCT_MAX 40
size_t render_rate(double pct, char *buf, size_t cap);

/*
 * A throughput (calls per minute or second) for a line: "0" only when v
 * is 0, whole numbers from 100, at most two decimals from 0.01 ("10",
 * "1.5", "1.12"), below that two significant digits ("0.0049",
 * "0.0000017"), below 0.000001 "<0.000001": a rare call never reads as
 * none, and no number in exponent notation.
 */
size_t render_throughput(double v, char *buf, size_t cap);

/* part of whole as render_rate, exact at the ends: "0%" only when part
 * is 0 (or whole is), "100%" only when part == whole. */
size_t render_pct(uint64_t part, uint64_t whole, char *buf, size_t cap);

/* A signed change, render_rate's digits with a sign and unit ("%" or
 * " pp"): "+0.025%", "-12.5%", "+250.0%"; "0" and the unit when none. */
size_t render_change(double pct, const char *unit, char *buf, size_t cap);

/* "[eBPF]", "[OTLP]" for enum merge_source; "[?]" otherwise. */
const char *render_source_label(int source);

/*
 * Markdown tables: render_md_row appends "| a | b | c |\n" with each cell
 * escaped (| as \|, newlines and tabs as spaces, other control bytes
 * dropped) and cut to RENDER_MD_CELL_MAX bytes with "…" (never inside a
 * UTF-8 sequence); render_md_rule appends "|---|---|...|\n" for n columns.
 * STATUS_LIMIT / STATUS_NOMEM from the buffer: the row is then not added
 * and no error is left in b (buf_rollback), so a caller may end the table
 * there and go on; an error already pending in b is returned untouched.
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
 * label's, STATUS_NOMEM, STATUS_LIMIT; a line that fails is taken back
 * whole and no error is left in b, while an error already pending in b is
 * returned at once, untouched.  label appends to b and returns its status
 * (buf_error(b) for one that only appends).
 */
typedef int (*render_label_fn)(struct buf *b, const struct merge_node *node,
			       void *arg);
int render_trace_tree(struct buf *b, const struct merge_trace *t,
		      render_label_fn label, void *arg, size_t max_chars,
		      size_t *shown) WUR;

/* ---- folding repeated siblings ------------------------------------------ */

/*
 * A 10,000-span trace is mostly loops: the same call under one parent
 * hundreds of times.  render_fold turns the tree into lines where a run of
 * at least min_repeat consecutive siblings (in the tree's sibling order,
 * by start time) that the caller's same() calls alike is one line standing
 * for the run and everything under it; render_trace_tree_folded draws
 * those lines.
 */
#define RENDER_FOLD_MIN_REPEAT 3

/* One drawn line: a span, or a folded run of siblings. */
struct render_fold_line {
	size_t node;  /* index in t->nodes: the span, or the run's first */
	size_t last;  /* the run's last sibling (== node for a span) */
	size_t end;   /* the line stands for nodes [node, end): a span's
		       * line is only itself (end == node + 1), a run's
		       * covers its members and all their descendants */
	size_t count; /* 1, or the siblings in the run */
	/* over the run's members (end - start of each span) */
	uint64_t min_ns, max_ns, sum_ns;
};

/* true when a and b (siblings) are "the same call", e.g. same service and
 * name */
typedef bool (*render_same_fn)(const struct merge_node *a,
			       const struct merge_node *b, void *arg);

struct render_fold {
	struct render_fold_line *lines; /* preorder, like t->nodes */
	size_t n;
	size_t runs;   /* lines with count > 1 */
	size_t folded; /* spans the runs stand for (members + descendants) */
};

/*
 * Folds the shown nodes of t (t->n_nodes).  min_repeat 0 takes
 * RENDER_FOLD_MIN_REPEAT; 1 is taken as 2 (a run of one is a span).  Pure
 * and iterative: O(n_nodes x min_repeat).  STATUS_NOMEM; *out is NULL on
 * failure, else freed with render_fold_free.
 */
int render_fold(const struct merge_trace *t, render_same_fn same, void *arg,
		size_t min_repeat, struct render_fold **out) WUR;
void render_fold_free(struct render_fold *f); /* accepts NULL */

/* Writes a run's text (after the tree prefix), e.g.
 * "× 120 stock: SELECT stock (avg 2.1ms, max 9.8ms)". */
typedef int (*render_run_fn)(struct buf *b, const struct merge_trace *t,
			     const struct render_fold_line *line, void *arg);

/*
 * Draws f's lines like render_trace_tree draws nodes: the same prefixes
 * (a run's line takes the place of its first member, └─ when nothing
 * follows its last), label for a span's line, run for a run's line, the
 * same budget rules, and "N more not shown" where N counts the spans
 * (not lines) left out, merge's not_shown included.  *shown (may be NULL)
 * gets the lines drawn: f->lines[0..*shown).  Errors: the callbacks',
 * STATUS_NOMEM, STATUS_LIMIT.
 */
int render_trace_tree_folded(struct buf *b, const struct merge_trace *t,
			     const struct render_fold *f, render_label_fn label,
			     render_run_fn run, void *arg, size_t max_chars,
			     size_t *shown) WUR;

#endif

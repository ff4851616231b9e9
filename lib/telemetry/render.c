/*
 * render.c - number, duration and trace-tree text for tool answers (see
 * render.h).
 */
#include "telemetry/render.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t
render_count(uint64_t v, char *buf, size_t cap)
{
	char digits[24], out[32];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
	return (size_t)snprintf(buf, cap, "%s", out);
}

/*
 * snprintf(buf, cap, "%.<d>f%s", x, unit) for d 0..2 and 0 <= x with
 * x * 10^d < 2^40, without printf (once per span of a trace, printf was
 * a tenth of a query_traces call).  printf rounds the exact binary value
 * of x to d decimals, an exact tie to even; so does this, from the exact
 * product x * 10^d = y + err (y the double product, err its rounding
 * error, which fma gives exactly).  Returns (size_t)-1 outside that range.
 */
static size_t
fixed(double x, int d, const char *unit, char *buf, size_t cap)
{
	static const double scale[] = {1, 10, 100};
	char tmp[48], *end = tmp + 24, *p = end;
	double y = x * scale[d], err, f, a, t;
	uint64_t n;
	size_t len;

	if (!(x >= 0) || !(y < 1099511627776.0)) /* 2^40 */
		return (size_t)-1;
	err = fma(x, scale[d], -y);
	/* y is the double nearest y + err, so no integer lies between them
	 * but y itself: the rounding is floor(y), or one more when the
	 * fraction (y - f) + err is above one half.  y - f is exact, so is
	 * a - 0.5 for a >= 0.25, and |err| <= 2^-13 here. */
	f = floor(y);
	a = y - f;
	n = (uint64_t)f;
	if (a >= 0.25) {
		t = a - 0.5;
		if (t > -err || (t == -err && (n & 1) != 0))
			n++;
	}
	for (int i = 0; i < d; i++) {
		*--p = (char)('0' + n % 10);
		n /= 10;
	}
	if (d > 0)
		*--p = '.';
	do {
		*--p = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	len = strlen(unit);
	memcpy(end, unit, len);
	len += (size_t)(end - p);
	if (cap > 0) {
		size_t k = len < cap ? len : cap - 1;

		memcpy(buf, p, k);
		buf[k] = '\0';
	}
	return len;
}

size_t
render_ms(double ms, char *buf, size_t cap)
{
	char n[32];
	size_t len;

	/* branches on the value as printed: 9.96 is "10ms", not "10.0ms" */
	if (!(ms > 0)) /* NaN and -0 too */
		ms = 0;
	if (ms >= 9999.5) {
		len = fixed(ms / 1000, 1, "s", buf, cap);
		return len != (size_t)-1
			       ? len
			       : (size_t)snprintf(buf, cap, "%.1fs", ms / 1000);
	}
	if (ms >= 999.5) {
		render_count((uint64_t)(ms + 0.5), n, sizeof(n));
		return (size_t)snprintf(buf, cap, "%sms", n);
	}
	return fixed(ms, ms >= 9.95 ? 0 : ms >= 0.995 ? 1 : 2, "ms", buf, cap);
}

/* The most decimals shown: two significant digits of 1 in 2^64. */
#define PCT_MAX_DECIMALS 21

/*
 * v (0 < v < 1) with two significant digits, into t (RENDER_PCT_MAX
 * bytes): the decimals are those of v rounded to two digits ("%.1e"), so
 * 0.0996 is "0.10" and 0.0994 "0.099".  Returns the decimals used, 0 when
 * v rounds to 1 or more at two decimals, -1 when v is too small for
 * PCT_MAX_DECIMALS.
 */
static int
two_digits(double v, char *t)
{
	char e[16], *x = NULL;
	long d;

	snprintf(e, sizeof(e), "%.1e", v);
	x = strchr(e, 'e');
	d = x != NULL ? 1 - strtol(x + 1, NULL, 10) : -1;
	if (d > PCT_MAX_DECIMALS || d < 0)
		return -1;
	if (d < 2)
		return 0;
	snprintf(t, RENDER_PCT_MAX, "%.*f", (int)d, v);
	return (int)d;
}

/* pct in (0, 100) with rest == 100 - pct, computed by the caller as
 * exactly as it can: near 100 the rest decides the decimals. */
static size_t
rate_text(double pct, double rest, const char *sign, const char *unit,
	  char *buf, size_t cap)
{
	char t[RENDER_PCT_MAX];
	int d;

	if (pct < 1 && (d = two_digits(pct, t)) != 0)
		return d < 0 ? (size_t)snprintf(buf, cap, "%s%.1e%s", sign, pct,
						unit)
			     : (size_t)snprintf(buf, cap, "%s%s%s", sign, t,
						unit);
	snprintf(t, sizeof(t), "%.1f", pct);
	if (pct > 100 || strcmp(t, "100.0") != 0)
		return (size_t)snprintf(buf, cap, "%s%s%s", sign, t, unit);
	/* under 100 by less than 0.05: 100 minus rest with two significant
	 * digits, digit by digit (pct itself may be 100 as a double, for
	 * 2^64 - 2 of 2^64 - 1) */
	if ((d = two_digits(rest, t)) <= 0)
		return (size_t)snprintf(buf, cap, "%s%.1f%s", sign, pct, unit);
	{
		char *r = t + 2; /* the d decimals of rest, "0.0025" */
		int k = d - 1;

		while (k > 0 && r[k] == '0')
			k--;
		for (int i = 0; i < d; i++)
			r[i] = (char)(i < k    ? '9' - (r[i] - '0')
				      : i == k ? '0' + 10 - (r[i] - '0')
					       : '0');
		return (size_t)snprintf(buf, cap, "%s99.%s%s", sign, r, unit);
	}
}

size_t
render_throughput(double v, char *buf, size_t cap)
{
	int n;

	if (!(v > 0) || !isfinite(v))
		n = snprintf(buf, cap, "0");
	else if (v >= 100)
		n = snprintf(buf, cap, "%.0f", v);
	else if (v < 1e-6)
		n = snprintf(buf, cap, "<0.000001");
	else {
		/* two decimals, or below 0.01 two significant digits, in fixed
		 * notation (a table of rates reads no "1.7e-06") */
		n = snprintf(buf, cap, "%.*f",
			     v >= 0.01 ? 2 : 1 - (int)floor(log10(v)), v);
		/* "10", "1.5": no trailing zeros */
		while (n > 0 && (size_t)n < cap && buf[n - 1] == '0')
			buf[--n] = '\0';
		if (n > 0 && (size_t)n < cap && buf[n - 1] == '.')
			buf[--n] = '\0';
	}
	return n < 0 ? 0 : (size_t)n;
}

size_t
render_rate(double pct, char *buf, size_t cap)
{
	if (!(pct > 0) || !isfinite(pct))
		return (size_t)snprintf(buf, cap, "0%%");
	if (pct == 100)
		return (size_t)snprintf(buf, cap, "100%%");
	return rate_text(pct, 100 - pct, "", "%", buf, cap);
}

size_t
render_pct(uint64_t part, uint64_t whole, char *buf, size_t cap)
{
	if (part == 0 || whole == 0)
		return (size_t)snprintf(buf, cap, "0%%");
	if (part == whole)
		return (size_t)snprintf(buf, cap, "100%%");
	if (part > whole)
		return render_rate(100.0 * (double)part / (double)whole, buf,
				   cap);
	return rate_text(100.0 * (double)part / (double)whole,
			 100.0 * (double)(whole - part) / (double)whole, "",
			 "%", buf, cap);
}

size_t
render_change(double pct, const char *unit, char *buf, size_t cap)
{
	double a = fabs(pct);

	if (!(a > 0) || !isfinite(a))
		return (size_t)snprintf(buf, cap, "0%s", unit);
	if (a == 100)
		return (size_t)snprintf(buf, cap, "%s100%s",
					pct < 0 ? "-" : "+", unit);
	return rate_text(a, 100 - a, pct < 0 ? "-" : "+", unit, buf, cap);
}

size_t
render_usd(double usd, char *buf, size_t cap)
{
	char n[32], tmp[RENDER_USD_MAX];
	size_t len;

	if (!(usd > 0) || !isfinite(usd))
		return (size_t)snprintf(buf, cap, "$0.00");
	if (usd < 1) {
		len = (size_t)snprintf(tmp, sizeof(tmp), "$%.6f", usd);
		if (strcmp(tmp, "$0.000000") == 0)
			return (size_t)snprintf(buf, cap, "<$0.000001");
		/* "$0.xx" is 5 bytes: keep two decimals */
		while (len > 5 && tmp[len - 1] == '0')
			tmp[--len] = '\0';
		if (strcmp(tmp, "$1.00") != 0) /* 0.9999995 and up: below */
			return (size_t)snprintf(buf, cap, "%s", tmp);
	}
	if (usd >= 1e15) /* no one's bill: past exact cents in a double */
		return (size_t)snprintf(buf, cap, "$%.0f", usd);
	{
		long long cents = llround(usd * 100);

		render_count((uint64_t)(cents / 100), n, sizeof(n));
		return (size_t)snprintf(buf, cap, "$%s.%02lld", n, cents % 100);
	}
}

const char *
render_source_label(int source)
{
	switch (source) {
	case MERGE_SOURCE_OTLP: return "[OTLP]";
	case MERGE_SOURCE_EBPF: return "[eBPF]";
	case MERGE_SOURCE_PROMETHEUS: return "[Prometheus]";
	default: return "[?]";
	}
}

static void
md_cell(struct buf *b, const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (n >= RENDER_MD_CELL_MAX && (c & 0xc0) != 0x80) {
			buf_puts(b, "…");
			return;
		}
		if (c == '|')
			buf_puts(b, "\\|");
		else if (c == '\n' || c == '\r' || c == '\t')
			buf_puts(b, " ");
		else if (c >= 0x20 && c != 0x7f)
			buf_append(b, s, 1);
		n++;
	}
}

/* Ends a table line begun at mark: the whole line, or none of it and no
 * error left in b (render.h). */
static int
md_line_end(struct buf *b, size_t mark)
{
	int rc = buf_puts(b, "\n");

	if (rc != STATUS_OK)
		buf_rollback(b, mark);
	return rc;
}

int
render_md_row(struct buf *b, const char *const *cells, size_t n)
{
	size_t mark = b->len;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	buf_puts(b, "|");
	for (size_t i = 0; i < n; i++) {
		buf_puts(b, " ");
		md_cell(b, cells[i] != NULL ? cells[i] : "");
		buf_puts(b, " |");
	}
	return md_line_end(b, mark);
}

int
render_md_rule(struct buf *b, size_t n)
{
	size_t mark = b->len;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	buf_puts(b, "|");
	for (size_t i = 0; i < n; i++)
		buf_puts(b, "---|");
	return md_line_end(b, mark);
}

/* "│  " / "   " per ancestor level, then "├─ " / "└─ ". */
static void
tree_prefix(struct buf *b, const bool *more, const struct merge_node *node)
{
	size_t d = node->depth, levels = d;

	if (d == 0)
		return;
	if (levels > RENDER_MAX_INDENT)
		levels = RENDER_MAX_INDENT;
	for (size_t l = 1; l < levels; l++)
		buf_puts(b, more[l] ? "│  " : "   ");
	if (d > levels)
		buf_printf(b, "(depth %zu) ", d);
	buf_puts(b, node->next_sibling != MERGE_NONE ? "├─ " : "└─ ");
}

/*
 * The "N more not shown" line.  Like the lines, it is given up whole when
 * it does not fit: the status says so and b takes more (render.h).
 */
static int
notice_line(struct buf *b, size_t hidden)
{
	char notice[MERGE_NOTICE_MAX + 8];
	size_t mark = b->len;
	int rc;

	merge_notice(notice, sizeof(notice), hidden);
	rc = buf_printf(b, "%s\n", notice);
	if (rc != STATUS_OK)
		buf_rollback(b, mark);
	return rc;
}

/* the "N more not shown" line with its newline, and a little slack */
#define NOTICE_ROOM (MERGE_NOTICE_MAX + 4)

int
render_trace_tree(struct buf *b, const struct merge_trace *t,
		  render_label_fn label, void *arg, size_t max_chars,
		  size_t *shown)
{
	bool more[RENDER_MAX_INDENT + 1] = {false};
	size_t i, hidden, start = b->len, *ends;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	/* draw every line, remembering where each ends; then keep what
	 * fits: the whole tree if it does, else a prefix and the notice */
	ends = malloc((t->n_nodes + 1) * sizeof(*ends));
	if (ends == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < t->n_nodes; i++) {
		const struct merge_node *node = &t->nodes[i];
		size_t mark = b->len;

		if (node->depth <= RENDER_MAX_INDENT)
			more[node->depth] = node->next_sibling != MERGE_NONE;
		tree_prefix(b, more, node);
		rc = buf_error(b);
		if (rc == STATUS_OK)
			rc = label(b, node, arg);
		if (rc == STATUS_OK)
			rc = buf_puts(b, "\n");
		if (rc != STATUS_OK) {
			buf_rollback(b,
				     mark); /* the line whole or not at all */
			if (rc != STATUS_LIMIT)
				goto out;
			rc = STATUS_OK;
			break; /* the buffer is full: keep what is drawn */
		}
		ends[i] = b->len;
		if (max_chars > 0 && b->len - start > max_chars)
			break; /* past the budget whatever happens */
	}
	if (max_chars > 0 &&
	    (i < t->span_count || b->len - start > max_chars)) {
		while (i > 0 && ends[i - 1] - start + NOTICE_ROOM > max_chars)
			i--;
		buf_rollback(b, i > 0 ? ends[i - 1] : start);
	}
	if (shown != NULL)
		*shown = i;
	hidden = t->span_count - i;
	if (hidden > 0)
		rc = notice_line(b, hidden);
out:
	free(ends);
	return rc;
}

/* ---- folding repeated siblings ------------------------------------------ */

static uint64_t
span_ns(const struct merge_node *n)
{
	const struct merge_span *s = n->span;

	return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

int
render_fold(const struct merge_trace *t, render_same_fn same, void *arg,
	    size_t min_repeat, struct render_fold **out)
{
	const struct merge_node *nodes = t->nodes;
	size_t n = t->n_nodes, *sub_end = NULL;
	struct render_fold *f = NULL;
	int rc = STATUS_NOMEM;

	*out = NULL;
	if (min_repeat == 0)
		min_repeat = RENDER_FOLD_MIN_REPEAT;
	if (min_repeat < 2)
		min_repeat = 2;
	f = calloc(1, sizeof(*f));
	sub_end = malloc((n + 1) * sizeof(*sub_end));
	if (f == NULL || sub_end == NULL ||
	    (f->lines = calloc(n + 1, sizeof(*f->lines))) == NULL)
		goto out;
	/* where each subtree ends in preorder: children come after their
	 * parent, so one backward pass carries the ends up */
	for (size_t i = 0; i < n; i++)
		sub_end[i] = i + 1;
	for (size_t i = n; i-- > 0;) {
		size_t p = nodes[i].parent;

		if (p != MERGE_NONE && p < i && sub_end[i] > sub_end[p])
			sub_end[p] = sub_end[i];
	}
	for (size_t i = 0; i < n;) {
		struct render_fold_line *l = &f->lines[f->n++];
		size_t last = i, count = 1;

		for (size_t s = nodes[i].next_sibling;
		     s != MERGE_NONE && s < n &&
		     same(&nodes[i], &nodes[s], arg);
		     s = nodes[s].next_sibling) {
			last = s;
			count++;
		}
		l->node = i;
		if (count < min_repeat) {
			l->last = i;
			l->end = i + 1;
			l->count = 1;
			l->min_ns = l->max_ns = l->sum_ns = span_ns(&nodes[i]);
			i++;
			continue;
		}
		l->last = last;
		l->end = sub_end[last];
		l->count = count;
		l->min_ns = UINT64_MAX;
		for (size_t s = i;; s = nodes[s].next_sibling) {
			uint64_t d = span_ns(&nodes[s]);

			l->min_ns = d < l->min_ns ? d : l->min_ns;
			l->max_ns = d > l->max_ns ? d : l->max_ns;
			l->sum_ns += d;
			if (s == last)
				break;
		}
		f->runs++;
		f->folded += l->end - l->node;
		i = l->end;
	}
	*out = f;
	f = NULL;
	rc = STATUS_OK;
out:
	render_fold_free(f);
	free(sub_end);
	return rc;
}

void
render_fold_free(struct render_fold *f)
{
	if (f == NULL)
		return;
	free(f->lines);
	free(f);
}

int
render_trace_tree_folded(struct buf *b, const struct merge_trace *t,
			 const struct render_fold *f, render_label_fn label,
			 render_run_fn run, void *arg, size_t max_chars,
			 size_t *shown)
{
	bool more[RENDER_MAX_INDENT + 1] = {false};
	size_t i, hidden, covered = 0, start = b->len, *ends;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	ends = malloc((f->n + 1) * sizeof(*ends));
	if (ends == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < f->n; i++) {
		const struct render_fold_line *l = &f->lines[i];
		const struct merge_node *node = &t->nodes[l->node];
		const struct merge_node *last = &t->nodes[l->last];
		size_t mark = b->len;

		if (node->depth <= RENDER_MAX_INDENT)
			more[node->depth] = last->next_sibling != MERGE_NONE;
		/* the last member has the run's depth and its successor */
		tree_prefix(b, more, last);
		rc = buf_error(b);
		if (rc == STATUS_OK)
			rc = l->count > 1 ? run(b, t, l, arg)
					  : label(b, node, arg);
		if (rc == STATUS_OK)
			rc = buf_puts(b, "\n");
		if (rc != STATUS_OK) {
			buf_rollback(b, mark);
			if (rc != STATUS_LIMIT)
				goto out;
			rc = STATUS_OK;
			break;
		}
		ends[i] = b->len;
		if (max_chars > 0 && b->len - start > max_chars)
			break;
	}
	for (size_t k = 0; k < i; k++)
		covered += f->lines[k].end - f->lines[k].node;
	if (max_chars > 0 &&
	    (covered < t->span_count || b->len - start > max_chars)) {
		while (i > 0 && ends[i - 1] - start + NOTICE_ROOM > max_chars) {
			i--;
			covered -= f->lines[i].end - f->lines[i].node;
		}
		buf_rollback(b, i > 0 ? ends[i - 1] : start);
	}
	if (shown != NULL)
		*shown = i;
	hidden = t->span_count - covered;
	if (hidden > 0)
		rc = notice_line(b, hidden);
out:
	free(ends);
	return rc;
}

/*
 * merge.c - result merging for the unified query tools: metric unions by
 * key, span dedup and tree building, asynchronous work told from the
 * request's, critical-path slow marking, budgets.
 * Every walk over parent links is iterative, so no input depth can exhaust
 * the stack, and cycles are cut before any walk relies on a forest.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/merge.h"

/* ---- metric rows ------------------------------------------------------- */

static int
cmp_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int
cmp_key(const struct merge_metric_row *a, const struct merge_metric_row *b)
{
	for (int i = 0; i < MERGE_KEY_PARTS; i++) {
		int c = cmp_str(a->key[i], b->key[i]);

		if (c != 0)
			return c;
	}
	return 0;
}

static const struct merge_metric_row *
group_first(const struct merge_metric_group *g)
{
	for (int s = 0; s < MERGE_SOURCE_COUNT; s++)
		if (g->row[s] != NULL)
			return g->row[s];
	return NULL;
}

/* Stage one: single-row groups ordered by key, source, requests desc. */
static int
cmp_row_group(const void *pa, const void *pb)
{
	const struct merge_metric_row *a = group_first(pa);
	const struct merge_metric_row *b = group_first(pb);
	int c = cmp_key(a, b);

	if (c != 0)
		return c;
	if (a->source != b->source)
		return a->source < b->source ? -1 : 1;
	if (a->requests != b->requests)
		return a->requests > b->requests ? -1 : 1;
	return a < b ? -1 : a > b; /* input order: the first wins a tie */
}

double
merge_pct(double part, double whole)
{
	if (!(whole > 0))
		return 0;
	/* 100 * part / whole, rounded once (so integer counts under 2^46
	 * give the correctly rounded share), held at 100 */
	return part >= whole ? 100 : fmin(100.0 * part / whole, 100);
}

uint64_t
merge_group_requests(const struct merge_metric_group *g)
{
	uint64_t n = 0;

	for (int s = 0; s < MERGE_SOURCE_COUNT; s++)
		if (g->row[s] != NULL)
			n += g->row[s]->requests;
	return n;
}

const char *
merge_group_key(const struct merge_metric_group *g, int part)
{
	const struct merge_metric_row *r = group_first(g);

	if (r == NULL || part < 0 || part >= MERGE_KEY_PARTS)
		return NULL;
	return r->key[part];
}

/* |x - y| <= tol */
static bool
near(double x, double y, double tol)
{
	return fabs(x - y) <= tol;
}

bool
merge_rows_agree(const struct merge_metric_row *a,
		 const struct merge_metric_row *b)
{
	double ra = (double)a->requests, rb = (double)b->requests;
	double most = fmax(ra, rb);
	double ea = a->error_rate_pct * ra / 100,
	       eb = b->error_rate_pct * rb / 100;

	return near(ra, rb,
		    fmax(MERGE_AGREE_CALLS, MERGE_AGREE_SHARE * most)) &&
	       near(ea, eb,
		    fmax(MERGE_AGREE_CALLS, MERGE_AGREE_SHARE * most)) &&
	       near(a->p50_ms, b->p50_ms,
		    fmax(MERGE_AGREE_MS,
			 MERGE_AGREE_LATENCY * fmax(a->p50_ms, b->p50_ms))) &&
	       near(a->p95_ms, b->p95_ms,
		    fmax(MERGE_AGREE_MS,
			 MERGE_AGREE_LATENCY * fmax(a->p95_ms, b->p95_ms)));
}

static double
group_worst(const struct merge_metric_group *g, bool errors)
{
	double w = 0;

	for (int s = 0; s < MERGE_SOURCE_COUNT; s++) {
		const struct merge_metric_row *r = g->row[s];
		double v;

		if (r == NULL)
			continue;
		v = errors ? r->error_rate_pct : r->p95_ms;
		if (v > w) /* NaN never wins */
			w = v;
	}
	return w;
}

/* qsort_r (glibc): the order travels as context, no shared state */
static int
cmp_group(const void *pa, const void *pb, void *ctx)
{
	const struct merge_metric_group *a = pa, *b = pb;
	enum merge_sort sort_order = *(const enum merge_sort *)ctx;

	switch (sort_order) {
	case MERGE_SORT_REQUESTS: {
		uint64_t x = merge_group_requests(a),
			 y = merge_group_requests(b);

		if (x != y)
			return x > y ? -1 : 1;
		break;
	}
	case MERGE_SORT_P95:
	case MERGE_SORT_ERRORS: {
		bool e = sort_order == MERGE_SORT_ERRORS;
		double x = group_worst(a, e), y = group_worst(b, e);

		if (x != y)
			return x > y ? -1 : 1;
		break;
	}
	case MERGE_SORT_KEY: break;
	}
	return cmp_key(group_first(a), group_first(b));
}

int
merge_metrics(const struct merge_metric_row *rows, size_t n,
	      enum merge_sort sort, struct merge_metric_group *out,
	      size_t *n_out, size_t *duplicates)
{
	size_t m = 0, dup = 0;

	*n_out = 0;
	if (duplicates != NULL)
		*duplicates = 0;
	if ((unsigned)sort > MERGE_SORT_ERRORS)
		return STATUS_INVALID;
	for (size_t i = 0; i < n; i++)
		if (rows[i].source < 0 || rows[i].source >= MERGE_SOURCE_COUNT)
			return STATUS_INVALID;
	if (n == 0)
		return STATUS_OK;
	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].row[rows[i].source] = &rows[i];
	}
	qsort(out, n, sizeof(*out), cmp_row_group);
	for (size_t i = 0; i < n; i++) {
		const struct merge_metric_row *r = group_first(&out[i]);

		if (m > 0 && cmp_key(group_first(&out[m - 1]), r) == 0) {
			if (out[m - 1].row[r->source] != NULL)
				dup++; /* the first, most requests, is kept */
			else
				out[m - 1].row[r->source] = r;
			continue;
		}
		out[m++] = out[i];
	}
	if (sort != MERGE_SORT_KEY)
		qsort_r(out, m, sizeof(*out), cmp_group, &sort);
	*n_out = m;
	if (duplicates != NULL)
		*duplicates = dup;
	return STATUS_OK;
}

/* ---- spans and traces -------------------------------------------------- */

#define FL_ORPHAN 1u
#define FL_CUT	  2u
#define FL_LINK	  4u

static uint64_t
span_end(const struct merge_span *s)
{
	return s->end_ns > s->start_ns ? s->end_ns : s->start_ns;
}

/* trace id, span id, source (the preferred first), input order */
static int
cmp_span_ptr(const void *pa, const void *pb)
{
	const struct merge_span *a = *(const struct merge_span *const *)pa;
	const struct merge_span *b = *(const struct merge_span *const *)pb;
	int c = memcmp(a->trace_id, b->trace_id, sizeof(a->trace_id));

	if (c == 0)
		c = memcmp(a->span_id, b->span_id, sizeof(a->span_id));
	if (c == 0 && a->source != b->source)
		c = a->source < b->source ? -1 : 1;
	if (c == 0)
		c = (a > b) - (a < b);
	return c;
}

struct order {
	uint64_t start;
	size_t i; /* index in the trace's span-id order: the tie-break */
};

static int
cmp_order(const void *pa, const void *pb)
{
	const struct order *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

static int
cmp_trace(const void *pa, const void *pb)
{
	const struct merge_trace *a = pa, *b = pb;

	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	return memcmp(a->trace_id, b->trace_id, sizeof(a->trace_id));
}

static size_t
find_span(const struct merge_span *const *ts, size_t m, const uint8_t *id)
{
	size_t lo = 0, hi = m;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(ts[mid]->span_id, id, sizeof(ts[mid]->span_id));

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return MERGE_NONE;
}

/* Scratch arrays, each indexed by a span's position in the deduped list. */
struct work {
	const struct merge_span **u; /* deduped, by trace id then span id */
	unsigned *seen;		     /* other sources' bits */
	size_t *par, *fc, *nx, *map; /* trace-local indices */
	unsigned char *state, *fl;
	struct order *ord;
};

/*
 * Gives every span at most one parent and no loops.  Each node is walked
 * once: state 1 marks the current upward walk, so meeting a 1 again means
 * a cycle, cut at its earliest-starting member (then lowest span id) so
 * the choice does not depend on where the walk began.
 */
static void
cut_cycles(const struct merge_span *const *ts, size_t m, size_t *par,
	   unsigned char *state, unsigned char *fl)
{
	memset(state, 0, m);
	for (size_t i = 0; i < m; i++) {
		size_t j = i, best = MERGE_NONE;

		while (j != MERGE_NONE && state[j] == 0) {
			state[j] = 1;
			j = par[j];
		}
		if (j != MERGE_NONE && state[j] == 1) {
			size_t k = par[j];

			best = j;
			while (k != j) {
				if (ts[k]->start_ns < ts[best]->start_ns ||
				    (ts[k]->start_ns == ts[best]->start_ns &&
				     k < best))
					best = k;
				k = par[k];
			}
		}
		/* before the cut, so the walk still reaches the whole loop */
		for (j = i; j != MERGE_NONE && state[j] == 1; j = par[j])
			state[j] = 2;
		if (best != MERGE_NONE) {
			par[best] = MERGE_NONE;
			fl[best] |= FL_CUT;
		}
	}
}

/*
 * Asynchronous: the rules of merge.h's "async", decided in preorder so a
 * parent is settled before its children.  A child that starts once its
 * parent has ended was not waited for; a parent with no duration says
 * nothing about that.
 */
static void
mark_async(struct merge_node *nodes, size_t m)
{
	for (size_t i = 0; i < m; i++) {
		const struct merge_span *s = nodes[i].span;
		size_t p = nodes[i].parent;
		bool a = s->kind == MERGE_KIND_CONSUMER || nodes[i].linked;

		if (p != MERGE_NONE) {
			const struct merge_span *ps = nodes[p].span;

			a = a || nodes[p].async ||
			    ps->kind == MERGE_KIND_PRODUCER ||
			    (span_end(ps) > ps->start_ns &&
			     s->start_ns >= span_end(ps));
		}
		nodes[i].async = a;
		nodes[i].async_start =
			a && (p == MERGE_NONE || !nodes[p].async);
	}
}

/* True when c is work its parent i did not wait for. */
static bool
async_child(const struct merge_node *nodes, size_t i, size_t c)
{
	return nodes[c].async && !nodes[i].async;
}

/* Self time: the span's duration minus the union of the children it
 * waited for (all of them below an asynchronous span). */
static uint64_t
self_time(const struct merge_node *nodes, size_t i)
{
	const struct merge_span *s = nodes[i].span;
	uint64_t end = span_end(s), pos = s->start_ns, covered = 0;

	for (size_t c = nodes[i].first_child; c != MERGE_NONE;
	     c = nodes[c].next_sibling) {
		const struct merge_span *k = nodes[c].span;
		uint64_t cs = k->start_ns > pos ? k->start_ns : pos;
		uint64_t ce = span_end(k) < end ? span_end(k) : end;

		if (async_child(nodes, i, c))
			continue;
		if (ce > cs) {
			covered += ce - cs;
			pos = ce;
		}
	}
	return span_end(s) - s->start_ns - covered;
}

/*
 * The request: the first root (roots come by start time) that is a
 * SERVER span; without one (kinds unknown, fragments), the latest-ending
 * synchronous root, the one the trace's end waited on; else node 0.
 */
static size_t
find_request(const struct merge_node *nodes, size_t m)
{
	size_t last = MERGE_NONE;

	for (size_t i = m > 0 ? 0 : MERGE_NONE; i != MERGE_NONE;
	     i = nodes[i].next_sibling) {
		if (nodes[i].async)
			continue;
		if (nodes[i].span->kind == MERGE_KIND_SERVER)
			return i;
		if (last == MERGE_NONE ||
		    span_end(nodes[i].span) > span_end(nodes[last].span))
			last = i;
	}
	return last != MERGE_NONE ? last : 0;
}

/*
 * The critical path runs from the request down through its synchronous
 * children, walked back from each critical span's end: the child that
 * ends last, then the one ending last by the time that one started, and so on
 * (a parent that calls fraud and then publishes waited on both).  Parents
 * come before children in preorder, so one forward pass settles every
 * level; ord (room for m) sorts each span's children by end.  Its spans
 * with the most self time are slow.
 */
static void
mark_slow(struct merge_node *nodes, size_t request, size_t m, uint64_t duration,
	  struct order *ord, const struct merge_opts *o)
{
	nodes[request].critical = true;
	for (size_t i = request; i < m; i++) {
		uint64_t cursor = span_end(nodes[i].span);
		size_t k = 0;

		if (!nodes[i].critical)
			continue;
		for (size_t c = nodes[i].first_child; c != MERGE_NONE;
		     c = nodes[c].next_sibling)
			if (!async_child(nodes, i, c)) {
				ord[k].start = span_end(nodes[c].span);
				ord[k++].i = c;
			}
		qsort(ord, k, sizeof(*ord), cmp_order);
		/* the latest-ending child always; then each that ended by
		 * the cursor (one running beside the critical child was
		 * not waited for): the latest end is the longest wait */
		for (size_t j = k; j-- > 0;) {
			const struct merge_span *c = nodes[ord[j].i].span;

			if (j + 1 < k && span_end(c) > cursor)
				continue;
			nodes[ord[j].i].critical = true;
			cursor = c->start_ns;
		}
	}
	for (size_t k = 0; k < o->max_slow; k++) {
		size_t pick = MERGE_NONE;

		for (size_t i = 0; i < m; i++)
			if (nodes[i].critical && !nodes[i].slow &&
			    (pick == MERGE_NONE ||
			     nodes[i].self_ns > nodes[pick].self_ns))
				pick = i;
		if (pick == MERGE_NONE || nodes[pick].self_ns == 0)
			break;
		if (k > 0 && (double)nodes[pick].self_ns <
				     o->slow_share * (double)duration)
			break;
		nodes[pick].slow = true;
	}
}

/* Builds the tree of the trace whose deduped spans are w->u[a..a+m). */
static void
build_trace(struct work *w, size_t a, size_t m, struct merge_trace *t,
	    struct merge_node *nodes, const struct merge_opts *o)
{
	const struct merge_span *const *ts = w->u + a;
	size_t *par = w->par + a, *fc = w->fc + a, *nx = w->nx + a;
	size_t *map = w->map + a, roots = MERGE_NONE, pos = 0, depth = 0;
	unsigned char *fl = w->fl + a;
	size_t keep = m < o->max_spans ? m : o->max_spans;

	t->start_ns = UINT64_MAX;
	for (size_t j = 0; j < m; j++) {
		par[j] = MERGE_NONE;
		fc[j] = MERGE_NONE;
		fl[j] = 0;
		if (ts[j]->has_parent) {
			par[j] = find_span(ts, m, ts[j]->parent_span_id);
			if (par[j] == MERGE_NONE)
				fl[j] |= FL_ORPHAN;
		} else if (ts[j]->has_link) {
			par[j] = find_span(ts, m, ts[j]->link_span_id);
			if (par[j] != MERGE_NONE)
				fl[j] |= FL_LINK;
		}
		if (ts[j]->start_ns < t->start_ns)
			t->start_ns = ts[j]->start_ns;
		if (span_end(ts[j]) > t->end_ns)
			t->end_ns = span_end(ts[j]);
		w->ord[j].start = ts[j]->start_ns;
		w->ord[j].i = j;
	}
	cut_cycles(ts, m, par, w->state, fl);
	/* prepending in reverse start order leaves each list in start order */
	qsort(w->ord, m, sizeof(*w->ord), cmp_order);
	for (size_t k = m; k-- > 0;) {
		size_t j = w->ord[k].i,
		       *head = par[j] == MERGE_NONE ? &roots : &fc[par[j]];

		nx[j] = *head;
		*head = j;
	}
	/* preorder without a stack: down to the first child, else to the
	 * next sibling of the nearest ancestor that has one */
	for (size_t j = roots; j != MERGE_NONE;) {
		map[j] = pos;
		nodes[pos].span = ts[j];
		nodes[pos].also_seen_by = w->seen[a + j];
		nodes[pos].depth = depth;
		nodes[pos].orphan = (fl[j] & FL_ORPHAN) != 0;
		nodes[pos].cycle_cut = (fl[j] & FL_CUT) != 0;
		/* a link that looped was cut: the span is a root again */
		nodes[pos].linked = (fl[j] & (FL_LINK | FL_CUT)) == FL_LINK;
		pos++;
		if (fc[j] != MERGE_NONE) {
			j = fc[j];
			depth++;
			continue;
		}
		while (j != MERGE_NONE && nx[j] == MERGE_NONE) {
			j = par[j];
			depth--;
		}
		if (j != MERGE_NONE)
			j = nx[j];
	}
	for (size_t j = 0; j < m; j++) {
		struct merge_node *d = &nodes[map[j]];

		d->parent = par[j] == MERGE_NONE ? MERGE_NONE : map[par[j]];
		d->first_child = fc[j] == MERGE_NONE ? MERGE_NONE : map[fc[j]];
		d->next_sibling = nx[j] == MERGE_NONE ? MERGE_NONE : map[nx[j]];
	}
	mark_async(nodes, m);
	for (size_t i = 0; i < m; i++)
		nodes[i].self_ns = self_time(nodes, i);
	t->request = find_request(nodes, m);
	t->request_ns = span_end(nodes[t->request].span) -
			nodes[t->request].span->start_ns;
	mark_slow(nodes, t->request, m, t->request_ns, w->ord, o);
	/* a preorder prefix keeps every shown node's parent */
	for (size_t i = 0; i < keep; i++) {
		if (nodes[i].first_child >= keep)
			nodes[i].first_child = MERGE_NONE;
		if (nodes[i].next_sibling >= keep)
			nodes[i].next_sibling = MERGE_NONE;
	}
	memcpy(t->trace_id, ts[0]->trace_id, sizeof(t->trace_id));
	t->nodes = nodes;
	t->n_nodes = keep;
	t->span_count = m;
	t->not_shown = m - keep;
}

int
merge_traces(const struct merge_span *spans, size_t n,
	     const struct merge_opts *opts, struct merge_result **out)
{
	struct merge_opts o = {0};
	struct work w = {0};
	size_t *idx = NULL;
	struct merge_result *r = NULL;
	struct merge_trace *traces = NULL;
	struct merge_node *nodes = NULL;
	size_t m = 0, nt = 0;
	int rc = STATUS_NOMEM;

	*out = NULL;
	if (n > MERGE_MAX_INPUT)
		return STATUS_LIMIT;
	for (size_t i = 0; i < n; i++)
		if (spans[i].source < 0 ||
		    spans[i].source >= MERGE_SPAN_SOURCES)
			return STATUS_INVALID;
	if (opts != NULL)
		o = *opts;
	if (o.max_spans == 0)
		o.max_spans = MERGE_DEFAULT_MAX_SPANS;
	if (o.max_traces == 0)
		o.max_traces = MERGE_DEFAULT_MAX_TRACES;
	if (!(o.slow_share > 0)) /* NaN too */
		o.slow_share = MERGE_DEFAULT_SLOW_SHARE;
	if (o.max_slow == 0)
		o.max_slow = MERGE_DEFAULT_MAX_SLOW;
	if (o.max_slow > MERGE_MAX_SLOW)
		o.max_slow = MERGE_MAX_SLOW;
	r = calloc(1, sizeof(*r));
	if (r == NULL || n == 0)
		goto done;
	w.u = malloc(n * sizeof(*w.u));
	w.seen = calloc(n, sizeof(*w.seen));
	idx = malloc(4 * n * sizeof(*idx));
	w.state = malloc(2 * n);
	w.ord = malloc(n * sizeof(*w.ord));
	nodes = calloc(n, sizeof(*nodes));
	if (!w.u || !w.seen || !idx || !w.state || !w.ord || !nodes)
		goto out;
	w.par = idx;
	w.fc = idx + n;
	w.nx = idx + 2 * n;
	w.map = idx + 3 * n;
	w.fl = w.state + n;
	for (size_t i = 0; i < n; i++)
		w.u[i] = &spans[i];
	qsort(w.u, n, sizeof(*w.u), cmp_span_ptr);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || memcmp(w.u[i]->trace_id, w.u[i - 1]->trace_id,
				     sizeof(w.u[i]->trace_id)) != 0)
			nt++;
	traces = calloc(nt, sizeof(*traces));
	if (traces == NULL)
		goto out;
	nt = 0;
	for (size_t i = 0; i < n; i++) {
		const struct merge_span *s = w.u[i],
					*prev = m ? w.u[m - 1] : NULL;

		if (prev == NULL || memcmp(s->trace_id, prev->trace_id,
					   sizeof(s->trace_id)) != 0) {
			traces[nt++].span_count = m; /* start, for now */
		} else if (memcmp(s->span_id, prev->span_id,
				  sizeof(s->span_id)) == 0) {
			if (s->source != prev->source)
				w.seen[m - 1] |= MERGE_SOURCE_BIT(s->source);
			traces[nt - 1].duplicates++;
			continue;
		}
		w.u[m++] = s;
	}
	for (size_t t = 0; t < nt; t++) {
		size_t a = traces[t].span_count;
		size_t b = t + 1 < nt ? traces[t + 1].span_count : m;

		build_trace(&w, a, b - a, &traces[t], nodes + a, &o);
	}
	qsort(traces, nt, sizeof(*traces), cmp_trace);
	r->traces = traces;
	r->n_traces = nt < o.max_traces ? nt : o.max_traces;
	r->traces_not_shown = nt - r->n_traces;
	r->arena_ = nodes;
	traces = NULL;
	nodes = NULL;
done:
	if (r != NULL) {
		*out = r;
		r = NULL;
		rc = STATUS_OK;
	}
out:
	free(w.u);
	free(w.seen);
	free(idx);
	free(w.state);
	free(w.ord);
	free(nodes);
	free(traces);
	free(r);
	return rc;
}

void
merge_result_free(struct merge_result *r)
{
	if (r == NULL)
		return;
	free((void *)r->traces);
	free(r->arena_);
	free(r);
}

size_t
merge_async_start(const struct merge_trace *t, size_t i)
{
	if (i >= t->n_nodes || !t->nodes[i].async)
		return MERGE_NONE;
	while (t->nodes[i].parent != MERGE_NONE &&
	       t->nodes[t->nodes[i].parent].async)
		i = t->nodes[i].parent;
	return i;
}

size_t
merge_background(const struct merge_trace *t)
{
	size_t best = MERGE_NONE;

	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].async && t->nodes[i].self_ns > t->request_ns &&
		    (best == MERGE_NONE ||
		     t->nodes[i].self_ns > t->nodes[best].self_ns))
			best = i;
	return best;
}

/* ---- a trace cut to what explains it ------------------------------------ */

/* Keeps node i and its ancestors not kept yet if they fit in max. */
static void
focus_keep(const struct merge_trace *t, size_t i, bool *keep, size_t *kept,
	   size_t max)
{
	size_t need = 0;

	for (size_t a = i; a != MERGE_NONE && !keep[a]; a = t->nodes[a].parent)
		need++;
	if (need == 0 || *kept + need > max)
		return;
	for (size_t a = i; a != MERGE_NONE && !keep[a];
	     a = t->nodes[a].parent) {
		keep[a] = true;
		(*kept)++;
	}
}

/* qsort_r's order of node indexes by self time, most first, then index */
static int
by_self_desc(const void *a, const void *b, void *arg)
{
	const struct merge_node *nodes = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	uint64_t x = nodes[i].self_ns, y = nodes[j].self_ns;

	if (x != y)
		return x > y ? -1 : 1;
	return (i > j) - (i < j);
}

int
merge_focus(const struct merge_trace *t, size_t max_nodes, merge_pin_fn pin,
	    void *arg, struct merge_trace *out)
{
	size_t n = t->n_nodes, kept = 0, k = 0;
	bool *keep = calloc(n + 1, sizeof(*keep));
	size_t *to = calloc(n + 1, sizeof(*to));
	size_t *last_child = calloc(n + 1, sizeof(*last_child));
	struct merge_node *nodes = calloc(n + 1, sizeof(*nodes));
	size_t last_root = MERGE_NONE;

	*out = *t;
	out->nodes = NULL;
	out->n_nodes = 0;
	if (keep == NULL || to == NULL || last_child == NULL || nodes == NULL) {
		free(keep);
		free(to);
		free(last_child);
		free(nodes);
		return STATUS_NOMEM;
	}
	if (max_nodes == 0)
		max_nodes = 1;
	if (n > 0)
		focus_keep(t, t->request < n ? t->request : 0, keep, &kept,
			   max_nodes);
	for (size_t i = 0; i < n; i++)
		if (t->nodes[i].slow)
			focus_keep(t, i, keep, &kept, max_nodes);
	for (size_t i = 0; pin != NULL && i < n; i++)
		if (pin(&t->nodes[i], arg))
			focus_keep(t, i, keep, &kept, max_nodes);
	/* the rest of the critical path, most self time first (in a
	 * sequential request most synchronous spans are on it) */
	for (size_t i = 0; i < n; i++)
		if (t->nodes[i].critical)
			to[k++] = i;
	qsort_r(to, k, sizeof(*to), by_self_desc, (void *)t->nodes);
	for (size_t j = 0; j < k; j++)
		focus_keep(t, to[j], keep, &kept, max_nodes);
	k = 0;
	for (size_t i = 0; i < n && kept < max_nodes; i++)
		focus_keep(t, i, keep, &kept, max_nodes);
	/* the kept nodes in the same preorder (a parent before its
	 * children), linked among themselves */
	for (size_t i = 0; i < n; i++) {
		struct merge_node *m;

		if (!keep[i])
			continue;
		to[i] = k;
		m = &nodes[k];
		*m = t->nodes[i];
		m->first_child = m->next_sibling = MERGE_NONE;
		last_child[k] = MERGE_NONE;
		if (m->parent != MERGE_NONE) {
			size_t p = to[m->parent];

			m->parent = p;
			if (last_child[p] == MERGE_NONE)
				nodes[p].first_child = k;
			else
				nodes[last_child[p]].next_sibling = k;
			last_child[p] = k;
		} else {
			if (last_root != MERGE_NONE)
				nodes[last_root].next_sibling = k;
			last_root = k;
		}
		k++;
	}
	out->nodes = nodes;
	out->n_nodes = k;
	out->not_shown = t->span_count - k;
	out->request = t->request < n && keep[t->request] ? to[t->request] : k;
	free(keep);
	free(to);
	free(last_child);
	return STATUS_OK;
}

void
merge_focus_free(struct merge_trace *t)
{
	free((void *)t->nodes);
	t->nodes = NULL;
	t->n_nodes = 0;
}

/* ---- budgets ----------------------------------------------------------- */

size_t
merge_fit(const size_t *row_chars, size_t n, size_t max_rows, size_t max_chars,
	  size_t *hidden)
{
	size_t shown = n, used = 0;

	if (max_rows != 0 && shown > max_rows)
		shown = max_rows;
	if (max_chars != 0 && row_chars != NULL) {
		size_t room = max_chars, i;

		for (i = 0; i < shown && row_chars[i] <= room - used; i++)
			used += row_chars[i];
		if (i < n) {
			/* something is hidden: make room for the notice */
			room = max_chars > MERGE_NOTICE_MAX
				       ? max_chars - MERGE_NOTICE_MAX
				       : 0;
			used = 0;
			for (i = 0; i < shown && row_chars[i] <= room - used;
			     i++)
				used += row_chars[i];
		}
		shown = i;
	}
	if (hidden != NULL)
		*hidden = n - shown;
	return shown;
}

size_t
merge_notice(char *buf, size_t cap, size_t hidden)
{
	int len = snprintf(buf, cap, "%zu more not shown", hidden);

	return len < 0 ? 0 : (size_t)len;
}

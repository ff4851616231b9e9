/*
 * test_merge.c - unit tests for lib/telemetry/merge: span dedup, orphans, cycles,
 * sibling order, slow marking on hand-computed traces, very deep and very
 * wide traces, metric unions by key, and output budgets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/merge.h"

/* ---- helpers ----------------------------------------------------------- */

/* A span in shorthand: ids are small numbers, parent 0 means none, link
 * 0 means no link; kind is OTLP's SpanKind (0: unknown). */
struct sp {
	unsigned id, parent;
	uint64_t start, end;
	int source;
	int kind;
	unsigned link;
};

#define O MERGE_SOURCE_OTLP
#define E MERGE_SOURCE_EBPF
/* SpanKind: internal, server, client, producer, consumer */
#define KI 1
#define KS MERGE_KIND_SERVER
#define KC 3
#define KP MERGE_KIND_PRODUCER
#define KK MERGE_KIND_CONSUMER

static void
set_id(uint8_t *id, size_t len, unsigned v)
{
	memset(id, 0, len);
	id[len - 1] = (uint8_t)v;
	id[len - 2] = (uint8_t)(v >> 8);
	id[len - 3] = (uint8_t)(v >> 16);
}

static void
make_span(struct merge_span *s, unsigned trace, const struct sp *p)
{
	memset(s, 0, sizeof(*s));
	set_id(s->trace_id, sizeof(s->trace_id), trace);
	set_id(s->span_id, sizeof(s->span_id), p->id);
	if (p->parent != 0) {
		s->has_parent = true;
		set_id(s->parent_span_id, sizeof(s->parent_span_id), p->parent);
	}
	if (p->link != 0) {
		s->has_link = true;
		set_id(s->link_span_id, sizeof(s->link_span_id), p->link);
	}
	s->start_ns = p->start;
	s->end_ns = p->end;
	s->source = p->source;
	s->kind = p->kind;
}

static unsigned
span_num(const struct merge_span *s)
{
	return (unsigned)s->span_id[7] | (unsigned)s->span_id[6] << 8 |
	       (unsigned)s->span_id[5] << 16;
}

/*
 * A trace as "id/depth[flags]" per node in order; flags: E kept span is
 * eBPF's, e eBPF saw it too, o orphan, c cycle cut, * critical, s slow,
 * a async, l placed by its link.
 */
static void
render(const struct merge_trace *t, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < t->n_nodes && len < cap; i++) {
		const struct merge_node *n = &t->nodes[i];

		len += (size_t)snprintf(
			buf + len, cap - len, "%s%u/%zu%s%s%s%s%s%s%s%s",
			i ? " " : "", span_num(n->span), n->depth,
			n->span->source == E ? "E" : "",
			n->also_seen_by & MERGE_SOURCE_BIT(E) ? "e" : "",
			n->orphan ? "o" : "", n->cycle_cut ? "c" : "",
			n->critical ? "*" : "", n->slow ? "s" : "",
			n->async ? "a" : "", n->linked ? "l" : "");
	}
}

/* Links agree with the preorder: parents first, shown indices only. */
static void
check_links(const struct merge_trace *t)
{
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct merge_node *n = &t->nodes[i];

		if (n->parent == MERGE_NONE)
			assert_int_equal(n->depth, 0);
		else {
			assert_true(n->parent < i);
			assert_int_equal(n->depth,
					 t->nodes[n->parent].depth + 1);
		}
		if (n->first_child != MERGE_NONE) {
			assert_int_equal(n->first_child, i + 1);
			assert_int_equal(t->nodes[i + 1].parent, i);
		}
		if (n->next_sibling != MERGE_NONE) {
			assert_true(n->next_sibling > i);
			assert_true(n->next_sibling < t->n_nodes);
			assert_int_equal(t->nodes[n->next_sibling].parent,
					 n->parent);
		}
	}
}

/* ---- one-trace cases --------------------------------------------------- */

struct tree_case {
	const char *name;
	struct sp spans[8];
	size_t n;
	const char *want;
	size_t duplicates;
};

static const struct tree_case tree_cases[] = {
	{"dedupe keeps otlp, records ebpf",
	 {{1, 0, 0, 10, E}, {1, 0, 0, 10, O}, {2, 1, 2, 4, E}},
	 3,
	 "1/0e*s 2/1E*",
	 1},
	{"dedupe with otlp listed first",
	 {{1, 0, 0, 10, O}, {1, 0, 0, 10, E}},
	 2,
	 "1/0e*s",
	 1},
	{"same span twice from one source", /* not "seen by" another */
	 {{1, 0, 0, 10, E}, {1, 0, 0, 10, E}},
	 2,
	 "1/0E*s",
	 1},
	{"orphan becomes a root",
	 {{1, 0, 0, 10, O}, {2, 9, 5, 20, O}, {3, 2, 6, 7, O}},
	 3,
	 "1/0 2/0o*s 3/1*",
	 0},
	{"self parent", {{1, 1, 0, 10, O}}, 1, "1/0c*s", 0},
	{"cycle cut at earliest start",
	 {{1, 2, 10, 50, O}, {2, 3, 20, 40, O}, {3, 1, 30, 35, O}},
	 3,
	 "1/0c*s 3/1* 2/2*s",
	 0},
	{"cycle hanging off a tree",
	 {{1, 0, 0, 100, O}, {2, 3, 10, 20, O}, {3, 2, 5, 30, O}},
	 3,
	 "1/0*s 3/0c 2/1",
	 0},
	{"siblings by start then span id",
	 {{1, 0, 0, 100, O},
	  {4, 1, 30, 40, O},
	  {2, 1, 10, 20, O},
	  {5, 1, 20, 25, O},
	  {3, 1, 20, 30, O}},
	 5,
	 "1/0*s 2/1* 3/1* 5/1 4/1*",
	 0},
	/*
	 * 1 [0,100] has children 2 [10,30] and 3 [30,95]; 3 has 4 [40,50].
	 * Critical path 1-3-4, and 2 that ran before 3.  Self: 1 = 100-20-65 = 15, 3 = 65-10 = 55,
	 * 4 = 10; only 3 dominates (15 < 25% of 100).
	 */
	{"slow: one dominant span",
	 {{1, 0, 0, 100, O},
	  {2, 1, 10, 30, O},
	  {3, 1, 30, 95, O},
	  {4, 3, 40, 50, O}},
	 4,
	 "1/0* 2/1* 3/1*s 4/2*",
	 0},
	/* 1 [0,100] self 60, 2 [5,45] self 40: both over 25 */
	{"slow: two spans",
	 {{1, 0, 0, 100, O}, {2, 1, 5, 45, O}},
	 2,
	 "1/0*s 2/1*s",
	 0},
	/* overlapping children count once: 1 self = 100 - 60 */
	{"slow: overlapping children",
	 {{1, 0, 0, 100, O}, {2, 1, 10, 50, O}, {3, 1, 20, 70, O}},
	 3,
	 "1/0*s 2/1 3/1*s",
	 0},
	{"zero durations mark nothing",
	 {{1, 0, 5, 5, O}, {2, 1, 5, 5, O}},
	 2,
	 "1/0* 2/1*",
	 0},
	/*
	 * The four asynchronous cases.  A child that starts after its
	 * parent ended: 3 [120,300] under 1 [0,100]; 1 self 70, 2 self 30
	 * (over 25% of the request's 100); 3's 180 is not slow.
	 */
	{"async: child starts after its parent ended",
	 {{1, 0, 0, 100, O, KS}, {2, 1, 10, 40, O, KC}, {3, 1, 120, 300, O}},
	 3,
	 "1/0*s 2/1*s 3/1a",
	 0},
	/* a CONSUMER child running beside its parent covers none of it:
	 * 1 self 100 - 80 = 20, below 25 */
	{"async: consumer span",
	 {{1, 0, 0, 100, O, KS}, {2, 1, 10, 90, O, KC}, {3, 1, 50, 400, O, KK}},
	 3,
	 "1/0* 2/1*s 3/1a",
	 0},
	/* below a PRODUCER every span is async, however deep */
	{"async: reached through a producer",
	 {{1, 0, 0, 100, O, KS},
	  {2, 1, 10, 12, O, KP},
	  {3, 2, 11, 500, O, KI},
	  {4, 3, 20, 30, O, KC}},
	 4,
	 "1/0*s 2/1* 3/2a 4/3a",
	 0},
	/* 3 has no parent and a link to 2: drawn under 2, async */
	{"async: joined by a link",
	 {{1, 0, 0, 100, O, KS},
	  {2, 1, 10, 90, O, KC},
	  {3, 0, 50, 600, O, KI, 2}},
	 3,
	 "1/0* 2/1*s 3/2al",
	 0},
	/* a link to a span not in the trace leaves a root, not async */
	{"link outside the trace",
	 {{1, 0, 0, 100, O, KS}, {3, 0, 50, 600, O, KI, 9}},
	 2,
	 "1/0*s 3/0",
	 0},
	/* a parent wins over a link */
	{"parent and link",
	 {{1, 0, 0, 100, O, KS},
	  {2, 1, 10, 90, O, KC},
	  {3, 1, 20, 30, O, KI, 2}},
	 3,
	 "1/0* 2/1*s 3/1",
	 0},
	/* the request is the first root SERVER span, not the longest root */
	{"request: the earliest root server span",
	 {{1, 0, 0, 1000, O, KI},
	  {2, 0, 10, 110, O, KS},
	  {3, 0, 20, 120, O, KS}},
	 3,
	 "1/0 2/0*s 3/0",
	 0},
	/* a CONSUMER root is never the request */
	{"request: not a consumer root",
	 {{1, 0, 0, 1000, O, KK}, {2, 0, 10, 110, O}},
	 2,
	 "1/0a 2/0*s",
	 0},
};

static void
test_tree_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(tree_cases) / sizeof(tree_cases[0]);
	     c++) {
		const struct tree_case *tc = &tree_cases[c];
		struct merge_span spans[8];
		struct merge_result *r = NULL;
		char got[256];

		for (size_t i = 0; i < tc->n; i++)
			make_span(&spans[i], 7, &tc->spans[i]);
		assert_int_equal(merge_traces(spans, tc->n, NULL, &r),
				 STATUS_OK);
		assert_int_equal(r->n_traces, 1);
		render(&r->traces[0], got, sizeof(got));
		if (strcmp(got, tc->want) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", tc->name, got,
				 tc->want);
		assert_int_equal(r->traces[0].duplicates, tc->duplicates);
		check_links(&r->traces[0]);
		merge_result_free(r);
	}
}

static void
test_self_times(void **state)
{
	static const struct sp s[] = {{1, 0, 0, 100, O},
				      {2, 1, 10, 30, O},
				      {3, 1, 30, 95, O},
				      {4, 3, 40, 50, O},
				      {5, 4, 45, 200, O}}; /* ends past 4 */
	static const uint64_t want[] = {15, 20, 55, 5, 155};
	struct merge_span spans[5];
	struct merge_result *r = NULL;

	(void)state;
	for (size_t i = 0; i < 5; i++)
		make_span(&spans[i], 1, &s[i]);
	assert_int_equal(merge_traces(spans, 5, NULL, &r), STATUS_OK);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(r->traces[0].nodes[i].self_ns, want[i]);
	assert_int_equal(r->traces[0].start_ns, 0);
	assert_int_equal(r->traces[0].end_ns, 200);
	merge_result_free(r);
}

/*
 * A demo checkout: gateway 1 [0,101] calls checkout 2 [1,100], which asks
 * fraud 3 [20,88] and publishes 4 [95,96]; notifications consumes it, 5
 * [130,140], and posts 6 [140,363] long after the request ended.  The
 * request is 1 (101 long, not the trace's 363); fraud's 68 leads, then
 * checkout's 99 - 68 - 1 = 30 (over 25% of 101); 6's 223 is not slow.
 */
static void
test_demo_checkout(void **state)
{
	static const struct sp s[] = {
		{1, 0, 0, 101, O, KS},	 {2, 1, 1, 100, O, KS},
		{3, 2, 20, 88, O, KC},	 {4, 2, 95, 96, O, KP},
		{5, 4, 130, 140, O, KK}, {6, 5, 140, 363, O, KC}};
	static const uint64_t self[] = {2, 30, 68, 1, 10, 223};
	struct merge_span spans[6];
	struct merge_result *r = NULL;
	const struct merge_trace *t;
	char got[128];

	(void)state;
	for (size_t i = 0; i < 6; i++)
		make_span(&spans[i], 5, &s[i]);
	assert_int_equal(merge_traces(spans, 6, NULL, &r), STATUS_OK);
	t = &r->traces[0];
	render(t, got, sizeof(got));
	assert_string_equal(got, "1/0* 2/1*s 3/2*s 4/2* 5/3a 6/4a");
	assert_int_equal(t->request, 0);
	assert_int_equal(t->request_ns, 101);
	assert_int_equal(t->end_ns - t->start_ns, 363);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(t->nodes[i].self_ns, self[i]);
	/* 6's async work began at the consumer 5; 223 is above 101 */
	assert_int_equal(merge_async_start(t, 5), 4);
	assert_int_equal(merge_async_start(t, 4), 4);
	assert_int_equal(merge_async_start(t, 3), MERGE_NONE);
	assert_int_equal(merge_background(t), 5);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(t->nodes[i].async_start, i == 4);
	merge_result_free(r);
}

/* ---- a trace cut to what explains it ------------------------------------ */

static bool
pin_span(const struct merge_node *node, void *arg)
{
	return node->span == arg;
}

static void
test_focus(void **state)
{
	/* a request (1) calling 2 (-> 3), then 4 (-> 5, the slow one), then
	 * 6 (pinned: an error, say) */
	static const struct sp s[] = {
		{1, 0, 0, 100, O, KS}, {2, 1, 1, 10, O, KC},
		{3, 2, 2, 9, O, KS},   {4, 1, 11, 90, O, KC},
		{5, 4, 12, 89, O, KS}, {6, 1, 91, 99, O, KC}};
	struct merge_span spans[6];
	struct merge_result *r = NULL;
	struct merge_trace f;
	const struct merge_trace *t;
	char got[128], all[128];

	(void)state;
	for (size_t i = 0; i < 6; i++)
		make_span(&spans[i], 9, &s[i]);
	assert_int_equal(merge_traces(spans, 6, NULL, &r), STATUS_OK);
	t = &r->traces[0];
	render(t, all, sizeof(all));
	assert_string_equal(all, "1/0* 2/1* 3/2* 4/1* 5/2*s 6/1*");

	/* three: the request, then the slow span with its ancestor, not
	 * the first three in order */
	assert_int_equal(merge_focus(t, 3, pin_span, &spans[5], &f), STATUS_OK);
	render(&f, got, sizeof(got));
	assert_string_equal(got, "1/0* 4/1* 5/2*s");
	assert_int_equal(f.n_nodes, 3);
	assert_int_equal(f.span_count, 6);
	assert_int_equal(f.not_shown, 3);
	assert_int_equal(f.request, 0);
	assert_int_equal(f.nodes[0].first_child, 1);
	assert_int_equal(f.nodes[1].parent, 0);
	assert_int_equal(f.nodes[1].next_sibling, MERGE_NONE);
	assert_int_equal(f.nodes[1].first_child, 2);
	assert_int_equal(f.nodes[2].parent, 1);
	assert_ptr_equal(f.nodes[2].span, t->nodes[4].span);
	merge_focus_free(&f);

	/* four: the pinned span next, a sibling linked after 4 */
	assert_int_equal(merge_focus(t, 4, pin_span, &spans[5], &f), STATUS_OK);
	render(&f, got, sizeof(got));
	assert_string_equal(got, "1/0* 4/1* 5/2*s 6/1*");
	assert_int_equal(f.nodes[1].next_sibling, 3);
	assert_int_equal(f.nodes[3].parent, 0);
	merge_focus_free(&f);

	/* five, no pin: the rest of the critical path by self time (2's 2
	 * over 6's 8: 6 first) */
	assert_int_equal(merge_focus(t, 5, NULL, NULL, &f), STATUS_OK);
	render(&f, got, sizeof(got));
	assert_string_equal(got, "1/0* 2/1* 4/1* 5/2*s 6/1*");
	merge_focus_free(&f);

	/* at least one; room for all: the same tree */
	assert_int_equal(merge_focus(t, 0, NULL, NULL, &f), STATUS_OK);
	render(&f, got, sizeof(got));
	assert_string_equal(got, "1/0*");
	merge_focus_free(&f);
	assert_int_equal(merge_focus(t, 100, NULL, NULL, &f), STATUS_OK);
	render(&f, got, sizeof(got));
	assert_string_equal(got, all);
	assert_int_equal(f.not_shown, 0);
	merge_focus_free(&f);
	merge_focus_free(&f); /* twice is harmless */
	merge_result_free(r);
}

/* ---- size and shape ---------------------------------------------------- */

static void
test_deep_chain(void **state)
{
	static const size_t depths[] = {1000, 200000};

	(void)state;
	for (size_t d = 0; d < 2; d++) {
		size_t n = depths[d];
		struct merge_span *spans = calloc(n, sizeof(*spans));
		struct merge_opts o = {.max_spans = n};
		struct merge_result *r = NULL;

		assert_non_null(spans);
		/* listed deepest first so nothing depends on input order */
		for (size_t i = 0; i < n; i++) {
			struct sp p = {(unsigned)(i + 1), (unsigned)i, i,
				       2 * n - i, O};

			make_span(&spans[n - 1 - i], 3, &p);
		}
		assert_int_equal(merge_traces(spans, n, &o, &r), STATUS_OK);
		assert_int_equal(r->traces[0].n_nodes, n);
		assert_int_equal(r->traces[0].not_shown, 0);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(r->traces[0].nodes[i].depth, i);
			assert_true(r->traces[0].nodes[i].critical);
		}
		check_links(&r->traces[0]);
		merge_result_free(r);
		free(spans);
	}
}

static void
test_ring(void **state)
{
	enum {
		N = 1000
	};
	struct merge_span spans[N];
	struct merge_result *r = NULL;
	size_t cut = 0;

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		struct sp p = {i + 1, (i + 1) % N + 1, 500 + (i + 500) % N,
			       5000, O};

		make_span(&spans[i], 1, &p);
	}
	assert_int_equal(merge_traces(spans, N, NULL, &r), STATUS_OK);
	for (size_t i = 0; i < N; i++)
		cut += r->traces[0].nodes[i].cycle_cut;
	assert_int_equal(cut, 1);
	/* the cut falls at the earliest start: span 501 (start 500) */
	assert_int_equal(span_num(r->traces[0].nodes[0].span), 501);
	assert_int_equal(r->traces[0].nodes[N - 1].depth, N - 1);
	check_links(&r->traces[0]);
	merge_result_free(r);
}

static void
test_wide_truncated(void **state)
{
	enum {
		N = 10000
	};
	struct merge_span *spans = calloc(N, sizeof(*spans));
	struct merge_result *r = NULL;
	const struct merge_trace *t;
	char notice[MERGE_NOTICE_MAX];

	(void)state;
	assert_non_null(spans);
	for (unsigned i = 0; i < N; i++) {
		struct sp p = {i + 1, i ? 1 : 0, i, 2 * N, i % 2 ? E : O};

		make_span(&spans[i], 9, &p);
	}
	assert_int_equal(merge_traces(spans, N, NULL, &r), STATUS_OK);
	t = &r->traces[0];
	assert_int_equal(t->span_count, N);
	assert_int_equal(t->n_nodes, MERGE_DEFAULT_MAX_SPANS);
	assert_int_equal(t->not_shown, N - MERGE_DEFAULT_MAX_SPANS);
	/* the earliest children are the ones shown */
	assert_int_equal(span_num(t->nodes[999].span), 1000);
	assert_int_equal(t->nodes[999].next_sibling, MERGE_NONE);
	check_links(t);
	merge_notice(notice, sizeof(notice), t->not_shown);
	assert_string_equal(notice, "9000 more not shown");
	merge_result_free(r);
	free(spans);
}

static void
test_traces_order_and_limit(void **state)
{
	static const struct sp s[] = {
		{1, 0, 30, 40, O}, {1, 0, 10, 20, O}, {1, 0, 20, 30, E}};
	struct merge_span spans[3];
	struct merge_opts o = {.max_traces = 2};
	struct merge_result *r = NULL;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		make_span(&spans[i], 100 + i, &s[i]);
	assert_int_equal(merge_traces(spans, 3, &o, &r), STATUS_OK);
	assert_int_equal(r->n_traces, 2);
	assert_int_equal(r->traces_not_shown, 1);
	assert_int_equal(r->traces[0].trace_id[15], 101);
	assert_int_equal(r->traces[1].trace_id[15], 102);
	merge_result_free(r);
}

static void
test_traces_bad_input(void **state)
{
	struct sp p = {1, 0, 0, 1, 2};
	struct merge_span s;
	struct merge_result *r = (struct merge_result *)&s;

	(void)state;
	make_span(&s, 1, &p);
	assert_int_equal(merge_traces(&s, 1, NULL, &r), STATUS_INVALID);
	assert_null(r);
	s.source = -1;
	assert_int_equal(merge_traces(&s, 1, NULL, &r), STATUS_INVALID);
	assert_int_equal(merge_traces(&s, MERGE_MAX_INPUT + 1, NULL, &r),
			 STATUS_LIMIT);
	assert_null(r);
	assert_int_equal(merge_traces(NULL, 0, NULL, &r), STATUS_OK);
	assert_int_equal(r->n_traces, 0);
	merge_result_free(r);
	merge_result_free(NULL);
}

/* ---- metrics ----------------------------------------------------------- */

struct mrow {
	const char *k0, *k1;
	int source;
	uint64_t requests;
	double p95, errors;
};

struct metric_case {
	const char *name;
	struct mrow rows[6];
	size_t n;
	enum merge_sort sort;
	const char *want; /* "key|key:otlp/ebpf requests" per group */
	size_t duplicates;
};

static const struct metric_case metric_cases[] = {
	{"both sources, same keys",
	 {{"/a", "GET", E, 5, 1, 0},
	  {"/a", "GET", O, 7, 1, 0},
	  {"/b", "GET", O, 1, 1, 0},
	  {"/a", "POST", E, 2, 1, 0}},
	 4,
	 MERGE_SORT_KEY,
	 "/a|GET:7/5 /a|POST:-/2 /b|GET:1/-",
	 0},
	{"one source only",
	 {{"/z", "GET", E, 5, 1, 0}, {"/y", "GET", E, 6, 1, 0}},
	 2,
	 MERGE_SORT_KEY,
	 "/y|GET:-/6 /z|GET:-/5",
	 0},
	{"absent part sorts first",
	 {{"select", "t", O, 1, 1, 0}, {"select", NULL, O, 2, 1, 0}},
	 2,
	 MERGE_SORT_KEY,
	 "select|-:2/- select|t:1/-",
	 0},
	{"by total requests",
	 {{"/a", "GET", E, 5, 1, 0},
	  {"/a", "GET", O, 7, 1, 0},
	  {"/b", "GET", O, 20, 1, 0},
	  {"/c", "GET", O, 12, 1, 0}},
	 4,
	 MERGE_SORT_REQUESTS,
	 "/b|GET:20/- /a|GET:7/5 /c|GET:12/-",
	 0},
	{"by worst p95, ties by key",
	 {{"/a", "GET", E, 5, 90, 0},
	  {"/a", "GET", O, 7, 10, 0},
	  {"/c", "GET", O, 1, 90, 0},
	  {"/b", "GET", O, 12, 50, 0}},
	 4,
	 MERGE_SORT_P95,
	 "/a|GET:7/5 /c|GET:1/- /b|GET:12/-",
	 0},
	{"by worst error rate",
	 {{"/a", "GET", O, 5, 1, 1.5}, {"/b", "GET", E, 7, 1, 9}},
	 2,
	 MERGE_SORT_ERRORS,
	 "/b|GET:-/7 /a|GET:5/-",
	 0},
	{"duplicate key and source keeps the larger",
	 {{"/a", "GET", O, 3, 1, 0},
	  {"/a", "GET", O, 9, 1, 0},
	  {"/a", "GET", O, 9, 1, 0}},
	 3,
	 MERGE_SORT_KEY,
	 "/a|GET:9/-",
	 2},
	{"empty", {{0}}, 0, MERGE_SORT_KEY, "", 0},
};

static void
render_groups(const struct merge_metric_group *g, size_t n, char *buf,
	      size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < cap; i++) {
		char o[24] = "-", e[24] = "-";

		if (g[i].row[O] != NULL)
			snprintf(o, sizeof(o), "%llu",
				 (unsigned long long)g[i].row[O]->requests);
		if (g[i].row[E] != NULL)
			snprintf(e, sizeof(e), "%llu",
				 (unsigned long long)g[i].row[E]->requests);
		len += (size_t)snprintf(buf + len, cap - len, "%s%s|%s:%s/%s",
					i ? " " : "", merge_group_key(&g[i], 0),
					merge_group_key(&g[i], 1)
						? merge_group_key(&g[i], 1)
						: "-",
					o, e);
	}
}

static void
test_metric_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(metric_cases) / sizeof(metric_cases[0]);
	     c++) {
		const struct metric_case *mc = &metric_cases[c];
		struct merge_metric_row rows[6];
		struct merge_metric_group groups[6];
		size_t n = 99, dup = 99;
		char got[256];

		memset(rows, 0, sizeof(rows));
		for (size_t i = 0; i < mc->n; i++) {
			rows[i].key[0] = mc->rows[i].k0;
			rows[i].key[1] = mc->rows[i].k1;
			rows[i].source = mc->rows[i].source;
			rows[i].requests = mc->rows[i].requests;
			rows[i].p95_ms = mc->rows[i].p95;
			rows[i].error_rate_pct = mc->rows[i].errors;
		}
		assert_int_equal(
			merge_metrics(rows, mc->n, mc->sort, groups, &n, &dup),
			STATUS_OK);
		render_groups(groups, n, got, sizeof(got));
		if (strcmp(got, mc->want) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", mc->name, got,
				 mc->want);
		assert_int_equal(dup, mc->duplicates);
	}
}

static void
test_metric_kept_row_and_errors(void **state)
{
	struct merge_metric_row rows[2] = {
		{{"/a", "GET", NULL}, O, 3, 1, 2, 3, 4, NULL},
		{{"/a", "GET", NULL}, O, 9, 5, 6, 7, 8, NULL},
	};
	struct merge_metric_group g[2];
	size_t n = 9;

	(void)state;
	assert_int_equal(merge_metrics(rows, 2, MERGE_SORT_KEY, g, &n, NULL),
			 STATUS_OK);
	assert_int_equal(n, 1);
	assert_ptr_equal(g[0].row[O], &rows[1]);
	assert_null(g[0].row[E]);
	assert_int_equal(merge_group_requests(&g[0]), 9);
	assert_null(merge_group_key(&g[0], 2));
	assert_null(merge_group_key(&g[0], MERGE_KEY_PARTS));
	rows[1].source = MERGE_SOURCE_COUNT;
	assert_int_equal(merge_metrics(rows, 2, MERGE_SORT_KEY, g, &n, NULL),
			 STATUS_INVALID);
	assert_int_equal(n, 0);
	rows[1].source = O;
	assert_int_equal(
		merge_metrics(rows, 2, (enum merge_sort)7, g, &n, NULL),
		STATUS_INVALID);
}

/* ---- budgets ----------------------------------------------------------- */

struct fit_case {
	const char *name;
	size_t chars[5];
	size_t n, max_rows, max_chars, want;
};

static const struct fit_case fit_cases[] = {
	{"unlimited", {10, 10, 10}, 3, 0, 0, 3},
	{"rows only", {10, 10, 10}, 3, 2, 0, 2},
	{"all fit exactly", {10, 10, 10}, 3, 0, 30, 3},
	{"chars keep room for the notice", {10, 10, 10}, 3, 0, 29, 0},
	{"chars with notice room", {20, 20, 20, 20}, 4, 0, 70, 1},
	{"rows cut, notice room taken", {10, 10, 10}, 3, 2, 50, 1},
	{"empty", {0}, 0, 3, 3, 0},
};

static void
test_fit_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(fit_cases) / sizeof(fit_cases[0]); c++) {
		const struct fit_case *fc = &fit_cases[c];
		size_t hidden = 99;
		size_t got = merge_fit(fc->chars, fc->n, fc->max_rows,
				       fc->max_chars, &hidden);

		if (got != fc->want)
			fail_msg("%s: got %zu, want %zu", fc->name, got,
				 fc->want);
		assert_int_equal(hidden, fc->n - fc->want);
	}
	assert_int_equal(merge_fit(NULL, 5, 0, 10, NULL), 5);
}

static void
test_notice(void **state)
{
	char small[4];

	(void)state;
	assert_int_equal(merge_notice(small, sizeof(small), 12), 17);
	assert_string_equal(small, "12 ");
}

/*
 * An error rate stays within [0, 100]: every request an error is exactly
 * 100 (the outputSchema's maximum), where 100 * e / e gives
 * 100.00000000000001 for e = 774.3511636364256, as for one random rate in
 * fifteen; part <= whole is never above 100; no requests is 0; and for
 * counts it is the share query_metrics, list_services and the genai tools
 * gave before it served them all.
 */
static void
test_pct(void **state)
{
	unsigned short seed[3] = {7, 8, 9};

	(void)state;
	assert_true(100.0 * 774.3511636364256 / 774.3511636364256 > 100);
	assert_true(merge_pct(774.3511636364256, 774.3511636364256) == 100);
	for (int i = 0; i < 1000000; i++) {
		double whole = erand48(seed) * 1e6,
		       part = whole * erand48(seed);
		double p = merge_pct(part, whole);

		if (merge_pct(whole, whole) != 100 || !(p >= 0 && p <= 100))
			fail_msg("merge_pct(%.17g, %.17g) = %.17g, (%.17g, "
				 "same) "
				 "= %.17g",
				 part, whole, p, whole,
				 merge_pct(whole, whole));
	}
	/* counts: exactly the one rounding of 100 * part / whole */
	for (uint64_t whole = 1; whole < 3000; whole++)
		for (uint64_t part = 0; part <= whole; part++)
			if (merge_pct((double)part, (double)whole) !=
			    100.0 * (double)part / (double)whole)
				fail_msg("merge_pct(%" PRIu64 ", %" PRIu64 ")",
					 part, whole);
	/* more errors than requests (inconsistent data) is still 100 */
	assert_true(merge_pct(5, 4) == 100);
	assert_true(merge_pct(0, 0) == 0);
	assert_true(merge_pct(3, 0) == 0);
	assert_true(merge_pct(1, 4) == 25);
}

/* eBPF and OTLP rows of one key: one row when they agree, at and around
 * each tolerance of merge_rows_agree */
static void
test_rows_agree(void **state)
{
	const struct merge_metric_row base = {.requests = 1000,
					      .p50_ms = 20,
					      .p95_ms = 80,
					      .error_rate_pct = 2};
	const struct {
		const char *what;
		uint64_t requests;
		double p50, p95, err_pct;
		bool agree;
	} cases[] = {
		{"identical", 1000, 20, 80, 2, true},
		{"10 calls fewer: 1%", 990, 20, 80, 2, true},
		{"11 calls fewer", 989, 20, 80, 2, false},
		{"10 errors more: 1% of the calls", 1000, 20, 80, 3, true},
		{"11 errors more", 1000, 20, 80, 3.1, false},
		{"P95 10% lower", 1000, 20, 72, 2, true},
		{"P95 11% lower", 1000, 20, 71.1, 2, false},
		{"P50 1 ms apart (over 10% of 5 ms)", 1000, 21, 80, 2, true},
		{"P50 2 ms apart", 1000, 22.3, 80, 2, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct merge_metric_row b = base;

		b.requests = cases[i].requests;
		b.p50_ms = cases[i].p50;
		b.p95_ms = cases[i].p95;
		b.error_rate_pct = cases[i].err_pct;
		if (merge_rows_agree(&base, &b) != cases[i].agree ||
		    merge_rows_agree(&b, &base) != cases[i].agree)
			fail_msg("%s: agree should be %d", cases[i].what,
				 cases[i].agree);
	}
	/* small counts: one call apart still agrees, two do not */
	{
		struct merge_metric_row x = {.requests = 3,
					     .p50_ms = 1,
					     .p95_ms = 2},
					y = x;

		y.requests = 4;
		assert_true(merge_rows_agree(&x, &y));
		y.requests = 5;
		assert_false(merge_rows_agree(&x, &y));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pct),
		cmocka_unit_test(test_rows_agree),
		cmocka_unit_test(test_tree_cases),
		cmocka_unit_test(test_self_times),
		cmocka_unit_test(test_demo_checkout),
		cmocka_unit_test(test_focus),
		cmocka_unit_test(test_deep_chain),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_wide_truncated),
		cmocka_unit_test(test_traces_order_and_limit),
		cmocka_unit_test(test_traces_bad_input),
		cmocka_unit_test(test_metric_cases),
		cmocka_unit_test(test_metric_kept_row_and_errors),
		cmocka_unit_test(test_fit_cases),
		cmocka_unit_test(test_notice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

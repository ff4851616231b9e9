/*
 * test_tracesummary.c - unit tests for lib/telemetry/tracesummary on
 * crafted trees merged by lib/telemetry/merge: bottlenecks by self time on
 * the critical path (asynchronous work never one), clock skew between
 * services, error spans and the error chain (to the failure's origin, an
 * error under a parent that is fine, none at all), spans both sources
 * saw, and the lists' caps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "telemetry/merge.h"
#include "telemetry/tracesummary.h"

/* One span: small ids (parent 0: none), times in ms, failed or not. */
struct row {
	unsigned id, parent;
	double start_ms, end_ms;
	int kind; /* OTLP SpanKind */
	bool failed;
	int source; /* enum merge_source */
};

#define KS   MERGE_KIND_SERVER
#define KC   3
#define KP   MERGE_KIND_PRODUCER
#define KK   MERGE_KIND_CONSUMER
#define EBPF MERGE_SOURCE_EBPF

#define MAX_ROWS 64

struct tree {
	struct merge_span spans[MAX_ROWS];
	struct merge_result *r;
	const struct merge_trace *t;
	struct tracesummary s;
};

static void
put_id(uint8_t *id, unsigned v)
{
	memset(id, 0, 8);
	id[7] = (uint8_t)v;
	id[6] = (uint8_t)(v >> 8);
}

static bool
row_failed(const struct merge_node *node, void *arg)
{
	(void)arg;
	return ((const struct row *)node->span->user)->failed;
}

/* Merges rows[0..n) (one trace) and summarises it with max_spans. */
static void
build(struct tree *x, const struct row *rows, size_t n, size_t max_spans)
{
	assert_true(n <= MAX_ROWS);
	for (size_t i = 0; i < n; i++) {
		struct merge_span *s = &x->spans[i];

		memset(s, 0, sizeof(*s));
		s->trace_id[15] = 1;
		put_id(s->span_id, rows[i].id);
		if (rows[i].parent != 0) {
			s->has_parent = true;
			put_id(s->parent_span_id, rows[i].parent);
		}
		s->start_ns = (uint64_t)(rows[i].start_ms * 1e6);
		s->end_ns = (uint64_t)(rows[i].end_ms * 1e6);
		s->kind = rows[i].kind;
		s->source = rows[i].source;
		s->user = &rows[i];
	}
	assert_int_equal(merge_traces(x->spans, n, NULL, &x->r), STATUS_OK);
	assert_int_equal(x->r->n_traces, 1);
	x->t = &x->r->traces[0];
	tracesummary_build(x->t, max_spans, row_failed, NULL, &x->s);
}

/* The span id (its small number) of shown node i. */
static unsigned
id_of(const struct tree *x, size_t i)
{
	assert_true(i < x->t->n_nodes);
	return x->t->nodes[i].span->span_id[7] |
	       (unsigned)x->t->nodes[i].span->span_id[6] << 8;
}

static void
assert_ids(const struct tree *x, const size_t *list, size_t n,
	   const unsigned *want, size_t n_want)
{
	assert_int_equal(n, n_want);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(id_of(x, list[i]), want[i]);
}

static uint64_t
self_ms(const struct tree *x, size_t i)
{
	return x->t->nodes[i].self_ns / 1000000;
}

/*
 * frontend GET /checkout (0-1240) > checkout POST (10-1230, server) >
 * payments Charge client (100-990) > payments Charge server (110-980)
 * UNAVAILABLE, which the client and both servers above pass on; checkout
 * also reads stock (1000-1200).  By hand: self times frontend 20,
 * checkout 90 + 10 + 30 = 130 (before, between, after its two calls),
 * client 20, Charge server 870, stock 200.
 */
static const struct row checkout[] = {
	{1, 0, 0, 1240, KS, true, 0},	  {2, 1, 10, 1230, KS, true, 0},
	{3, 2, 100, 990, KC, true, 0},	  {4, 3, 110, 980, KS, true, 0},
	{5, 2, 1000, 1200, KC, false, 0},
};

static void
test_bottlenecks_and_chain(void **state)
{
	struct tree x;

	(void)state;
	build(&x, checkout, 5, 7);
	assert_ids(&x, x.s.bottlenecks, x.s.n_bottlenecks,
		   (unsigned[]){4, 5, 2, 1, 3}, 5);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[0]), 870);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[1]), 200);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[2]), 130);
	/* errors longest first; the origin is the one whose children did
	 * not fail: the Charge server, not the root */
	assert_ids(&x, x.s.errors, x.s.n_errors_listed,
		   (unsigned[]){1, 2, 3, 4}, 4);
	assert_int_equal(x.s.n_errors, 4);
	assert_int_equal(id_of(&x, x.s.origin), 4);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 2, 3, 4}, 4);
	assert_int_equal(x.s.chain_cut, 0);
	assert_ids(&x, x.s.roots, x.s.n_roots, (unsigned[]){1}, 1);
	merge_result_free(x.r);
}

/* max_spans caps each list; a long chain keeps its root and its end. */
static void
test_caps(void **state)
{
	struct tree x;

	(void)state;
	build(&x, checkout, 5, 2);
	assert_ids(&x, x.s.bottlenecks, x.s.n_bottlenecks, (unsigned[]){4, 5},
		   2);
	assert_ids(&x, x.s.errors, x.s.n_errors_listed, (unsigned[]){1, 2}, 2);
	assert_int_equal(x.s.n_errors, 4);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 4}, 2);
	assert_int_equal(x.s.chain_cut, 2);
	merge_result_free(x.r);

	build(&x, checkout, 5, 1);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){4}, 1);
	assert_int_equal(x.s.chain_cut, 3);
	merge_result_free(x.r);

	/* 0 is taken for 1, more than TRACESUMMARY_MAX for it */
	build(&x, checkout, 5, 0);
	assert_int_equal(x.s.n_bottlenecks, 1);
	merge_result_free(x.r);
	build(&x, checkout, 5, 1000);
	assert_int_equal(x.s.n_bottlenecks, 5);
	merge_result_free(x.r);
}

/*
 * Asynchronous work is never a bottleneck, however long: the request
 * (0-100) publishes (90-91); the consumer (130-430) and what it calls
 * run after the request ended.  The consumer's failure still makes the
 * chain, through the producer.
 */
static void
test_async(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 100, KS, false, 0},  {2, 1, 5, 65, KC, false, 0},
		{3, 1, 90, 91, KP, false, 0},  {4, 3, 130, 430, KK, false, 0},
		{5, 4, 140, 420, KC, true, 0},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 5, 7);
	assert_ids(&x, x.s.bottlenecks, x.s.n_bottlenecks,
		   (unsigned[]){2, 1, 3}, 3);
	for (size_t i = 0; i < x.s.n_bottlenecks; i++)
		assert_false(x.t->nodes[x.s.bottlenecks[i]].async);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[1]), 39);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 3, 4, 5}, 4);
	merge_result_free(x.r);
}

/*
 * Clock skew between services: payments' clock runs 5 ms behind
 * checkout's, so its server span (95-975 as recorded) starts before the
 * client span that called it (100-990).  Only the part inside the client
 * covers it: the client's own time is 15 ms (975-990), not negative, and
 * the server is still the bottleneck with all its 880 ms.
 */
static void
test_clock_skew(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 1000, KS, false, 0},
		{2, 1, 100, 990, KC, false, 0},
		{3, 2, 95, 975, KS, false, 0},
	};
	struct tree x;
	uint64_t sum = 0;

	(void)state;
	build(&x, rows, 3, 7);
	assert_ids(&x, x.s.bottlenecks, x.s.n_bottlenecks,
		   (unsigned[]){3, 1, 2}, 3);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[0]), 880);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[1]), 110);
	assert_int_equal(self_ms(&x, x.s.bottlenecks[2]), 15);
	for (size_t i = 0; i < x.s.n_bottlenecks; i++)
		sum += x.t->nodes[x.s.bottlenecks[i]].self_ns;
	/* skew makes the shares add up to more than the request (1005 of
	 * 1000 ms): each is the span's own, none is made up */
	assert_int_equal(sum / 1000000, 1005);
	assert_int_equal(x.s.n_errors, 0);
	merge_result_free(x.r);
}

/* A trace with no error: no error spans, no chain. */
static void
test_no_error(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 50, KS, false, 0},
		{2, 1, 10, 40, KC, false, 0},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 2, 7);
	assert_int_equal(x.s.n_errors, 0);
	assert_int_equal(x.s.n_errors_listed, 0);
	assert_int_equal(x.s.origin, MERGE_NONE);
	assert_int_equal(x.s.n_chain, 0);
	assert_int_equal(x.s.n_bottlenecks, 2);
	merge_result_free(x.r);

	/* no rule at all: nothing failed */
	build(&x, checkout, 5, 7);
	tracesummary_build(x.t, 7, NULL, NULL, &x.s);
	assert_int_equal(x.s.n_errors, 0);
	assert_int_equal(x.s.origin, MERGE_NONE);
	merge_result_free(x.r);
}

/*
 * An error whose parent is fine: the handler retried a failed call
 * (20-60) and the second try (70-90) worked; the request succeeded.  The
 * chain still runs root > handler > the failed try, with two spans that
 * did not fail, and of two origins the longer one wins (30-35 is shorter).
 */
static void
test_error_under_fine_parent(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 100, KS, false, 0}, {2, 1, 10, 95, 1, false, 0},
		{3, 2, 20, 60, KC, true, 0},  {4, 2, 70, 90, KC, false, 0},
		{5, 1, 96, 99, KC, true, 0},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 5, 7);
	assert_int_equal(x.s.n_errors, 2);
	assert_ids(&x, x.s.errors, x.s.n_errors_listed, (unsigned[]){3, 5}, 2);
	assert_int_equal(id_of(&x, x.s.origin), 3);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 2, 3}, 3);
	assert_false(row_failed(&x.t->nodes[x.s.chain[0]], NULL));
	assert_false(row_failed(&x.t->nodes[x.s.chain[1]], NULL));
	merge_result_free(x.r);
}

/*
 * A failure passed on through a span that did not fail: the gateway's
 * call (10-390) failed because checkout answered 402, a client error on
 * its server span (20-380), because checkout's own call to payments
 * (30-80) failed.  The origin is that call, deeper and shorter than the
 * gateway's; a failure under its own failed child is never one.
 */
static void
test_passed_through(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 400, KS, false, 0},  {2, 1, 10, 390, KC, true, 0},
		{3, 2, 20, 380, KS, false, 0}, {4, 3, 30, 80, KC, true, 0},
		{5, 4, 35, 75, KS, false, 0},  {6, 3, 90, 95, KC, true, 0},
		{7, 6, 91, 94, KS, true, 0},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 7, 7);
	assert_int_equal(x.s.n_errors, 4);
	assert_int_equal(id_of(&x, x.s.origin), 4);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 2, 3, 4}, 4);
	merge_result_free(x.r);
}

/*
 * Spans eBPF and OTLP both saw (the same ids) are one node each, kept as
 * OTLP's with eBPF in also_seen_by: the lists name each once, and a span
 * eBPF alone saw (the database call) is listed as eBPF's.
 */
static void
test_both_sources(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 300, KS, false, 0},
		{1, 0, 0, 301, KS, false, EBPF},
		{2, 1, 10, 250, KC, true, 0},
		{2, 1, 10, 251, KC, true, EBPF},
		{3, 2, 20, 240, KC, true, EBPF},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 5, 7);
	assert_int_equal(x.t->span_count, 3);
	assert_int_equal(x.t->duplicates, 2);
	assert_ids(&x, x.s.bottlenecks, x.s.n_bottlenecks,
		   (unsigned[]){3, 1, 2}, 3);
	assert_int_equal(x.t->nodes[x.s.bottlenecks[0]].span->source, EBPF);
	assert_int_equal(x.t->nodes[x.s.bottlenecks[1]].span->source, 0);
	assert_true(x.t->nodes[x.s.bottlenecks[1]].also_seen_by &
		    MERGE_SOURCE_BIT(EBPF));
	assert_int_equal(x.s.n_errors, 2);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){1, 2, 3}, 3);
	merge_result_free(x.r);
}

/* Orphans are roots of their own; the roots come by start. */
static void
test_roots(void **state)
{
	static const struct row rows[] = {
		{1, 0, 0, 100, KS, false, 0},
		{2, 9, 50, 80, KS, true, 0},
		{3, 1, 5, 20, KC, false, 0},
	};
	struct tree x;

	(void)state;
	build(&x, rows, 3, 7);
	assert_ids(&x, x.s.roots, x.s.n_roots, (unsigned[]){1, 2}, 2);
	assert_ids(&x, x.s.chain, x.s.n_chain, (unsigned[]){2}, 1);
	merge_result_free(x.r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bottlenecks_and_chain),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_clock_skew),
		cmocka_unit_test(test_no_error),
		cmocka_unit_test(test_error_under_fine_parent),
		cmocka_unit_test(test_passed_through),
		cmocka_unit_test(test_both_sources),
		cmocka_unit_test(test_roots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

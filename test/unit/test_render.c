/*
 * test_render.c - unit tests for lib/telemetry/render: thousands separators, the
 * short duration format on every branch and boundary, percentages, source labels, and
 * trace trees drawn from lib/telemetry/merge results (prefixes, deep chains, budgets,
 * failing labels).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- numbers ----------------------------------------------------------- */

static const struct {
	uint64_t v;
	const char *want;
} count_cases[] = {
	{0, "0"},
	{7, "7"},
	{999, "999"},
	{1000, "1,000"},
	{1234, "1,234"},
	{99999, "99,999"},
	{100000, "100,000"},
	{999999, "999,999"},
	{1000000, "1,000,000"},
	{1234567, "1,234,567"},
	{UINT64_MAX, "18,446,744,073,709,551,615"},
};

static void
test_count(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(count_cases); i++) {
		char buf[64];
		size_t n = render_count(count_cases[i].v, buf, sizeof(buf));

		if (strcmp(buf, count_cases[i].want) != 0)
			fail_msg("%llu: got \"%s\", want \"%s\"",
				 (unsigned long long)count_cases[i].v, buf,
				 count_cases[i].want);
		assert_int_equal(n, strlen(count_cases[i].want));
	}
}

/* Like snprintf: the length needed, the text cut and NUL-terminated. */
static void
test_count_small_buffer(void **state)
{
	char buf[4] = "xxx";

	(void)state;
	assert_int_equal(render_count(1234567, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "1,2");
	assert_int_equal(render_count(1234567, NULL, 0), 9);
	buf[0] = 'x';
	assert_int_equal(render_count(5, buf, 1), 1);
	assert_string_equal(buf, "");
}

/* ---- durations --------------------------------------------------------- */

static const struct {
	double ms;
	const char *want;
} ms_cases[] = {
	/* below 1 ms: two decimals; negative and NaN read as 0 */
	{0, "0.00ms"},
	{-5, "0.00ms"},
	{-INFINITY, "0.00ms"},
	{0.004, "0.00ms"},
	{0.006, "0.01ms"},
	{0.42, "0.42ms"},
	{0.994, "0.99ms"},
	/* 1 to 10 ms: one decimal */
	{1, "1.0ms"},
	{4.2, "4.2ms"},
	{9.94, "9.9ms"},
	/* 10 to 1000 ms: whole ms */
	{10, "10ms"},
	{23.4, "23ms"},
	{23.6, "24ms"},
	{999.4, "999ms"},
	/* 1 to 10 s: whole ms with separators, rounded half up */
	{1000, "1,000ms"},
	{1234.4, "1,234ms"},
	{1234.5, "1,235ms"},
	{9999.4, "9,999ms"},
	/* 10 s and more: seconds with one decimal */
	{10000, "10.0s"},
	{12345, "12.3s"},
	{3600000, "3600.0s"},
};

static void
test_ms(void **state)
{
	char buf[64];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(ms_cases); i++) {
		size_t n = render_ms(ms_cases[i].ms, buf, sizeof(buf));

		if (strcmp(buf, ms_cases[i].want) != 0)
			fail_msg("%g: got \"%s\", want \"%s\"", ms_cases[i].ms,
				 buf, ms_cases[i].want);
		assert_int_equal(n, strlen(ms_cases[i].want));
	}
	assert_int_equal(render_ms(NAN, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "0.00ms");
	/* a small buffer: cut, and the length it needed */
	assert_int_equal(render_ms(1234, buf, 4), 7);
	assert_string_equal(buf, "1,2");
	assert_int_equal(render_ms(12345, buf, 3), 5);
	assert_string_equal(buf, "12");
}

/*
 * A value just below a branch boundary that rounds up to it should read
 * like the boundary itself: "1000ms" lacks the separator every other
 * value of that size has, "10,000ms" is what the seconds branch starts
 * at.  And -0 is 0, like every other negative.  All mismatches are listed
 * before the test fails.
 */
static void
test_ms_rounding_boundaries(void **state)
{
	static const struct {
		double ms;
		const char *want;
	} cases[] = {
		{-0.0, "0.00ms"},   {0.996, "1.0ms"},  {9.96, "10ms"},
		{999.6, "1,000ms"}, {9999.6, "10.0s"},
	};
	size_t bad = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char buf[64];

		render_ms(cases[i].ms, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want) != 0) {
			print_error("render_ms(%g): got \"%s\", want \"%s\"\n",
				    cases[i].ms, buf, cases[i].want);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* render_ms as it was written with printf: the reference for the
 * printf-free formatting. */
static size_t
ms_printf(double ms, char *buf, size_t cap)
{
	char n[32];

	if (!(ms > 0))
		ms = 0;
	if (ms >= 9999.5)
		return (size_t)snprintf(buf, cap, "%.1fs", ms / 1000);
	if (ms >= 999.5) {
		render_count((uint64_t)(ms + 0.5), n, sizeof(n));
		return (size_t)snprintf(buf, cap, "%sms", n);
	}
	if (ms >= 9.95)
		return (size_t)snprintf(buf, cap, "%.0fms", ms);
	if (ms >= 0.995)
		return (size_t)snprintf(buf, cap, "%.1fms", ms);
	return (size_t)snprintf(buf, cap, "%.2fms", ms);
}

static size_t ms_mismatches;

static void
ms_like_printf(double ms)
{
	char got[64], want[64];
	size_t n = render_ms(ms, got, sizeof(got));
	size_t m = ms_printf(ms, want, sizeof(want));

	if ((n != m || strcmp(got, want) != 0) && ms_mismatches++ < 10)
		print_error("render_ms(%.17g): got \"%s\", printf \"%s\"\n", ms,
			    got, want);
}

/*
 * render_ms rounds as printf's "%.Nf" does, without printf: the exact
 * binary value, an exact tie to even (0.125 is "0.12", 0.375 "0.38").
 * Compared with printf on the ties and their neighbours at every
 * precision, on span durations (nanoseconds / 1e6) and on random values
 * of every size, in every branch; and cut like snprintf in a small buffer.
 */
static void
test_ms_like_printf(void **state)
{
	unsigned short seed[3] = {1, 2, 3};
	char buf[8];

	(void)state;
	ms_mismatches = 0;
	/* exact ties at 2, 1 and 0 decimals (k/8, k/2, k/20 are binary
	 * fractions or close to them), and the doubles on either side */
	for (int k = 0; k < 200000; k++) {
		double v[] = {k / 8.0, k / 2.0, k / 20.0, k / 200.0,
			      k / 1000.0};

		for (size_t i = 0; i < ARRAY_LEN(v); i++) {
			ms_like_printf(v[i]);
			ms_like_printf(nextafter(v[i], 0));
			ms_like_printf(nextafter(v[i], INFINITY));
		}
	}
	/* durations as query_traces has them */
	for (int64_t ns = 0; ns < 3000000; ns += 7)
		ms_like_printf((double)ns / 1e6);
	for (int64_t ns = 9940000; ns < 10060000; ns++)
		ms_like_printf((double)ns / 1e6);
	/* random values from 1e-9 to 1e13 (seconds up to 1e10) */
	for (int i = 0; i < 2000000; i++)
		ms_like_printf(pow(10, erand48(seed) * 22 - 9));
	ms_like_printf(1e300);
	ms_like_printf(INFINITY);
	ms_like_printf(DBL_MAX);
	ms_like_printf(DBL_MIN);
	assert_int_equal(ms_mismatches, 0);
	assert_int_equal(render_ms(0.375, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "0.38ms");
	assert_int_equal(render_ms(0.125, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "0.12ms");
	assert_int_equal(render_ms(123.4, buf, 3), 5);
	assert_string_equal(buf, "12");
	assert_int_equal(render_ms(0.5, buf, 0), 6);
	assert_int_equal(render_ms(12345678, buf, 5), 8);
	assert_string_equal(buf, "1234");
}

static void
test_source_label(void **state)
{
	(void)state;
	assert_string_equal(render_source_label(MERGE_SOURCE_OTLP), "[OTLP]");
	assert_string_equal(render_source_label(MERGE_SOURCE_EBPF), "[eBPF]");
	assert_string_equal(render_source_label(MERGE_SOURCE_COUNT), "[?]");
	assert_string_equal(render_source_label(-1), "[?]");
	assert_string_equal(render_source_label(1000), "[?]");
}

/* ---- trace trees ------------------------------------------------------- */

/* A span in shorthand: ids are small numbers, parent 0 means none. */
struct sp {
	unsigned id, parent;
	uint64_t start, end;
	int source;
	const char *name;
};

#define O MERGE_SOURCE_OTLP
#define E MERGE_SOURCE_EBPF

static void
set_id(uint8_t *id, size_t len, unsigned v)
{
	memset(id, 0, len);
	id[len - 1] = (uint8_t)v;
	id[len - 2] = (uint8_t)(v >> 8);
}

static void
make_span(struct merge_span *s, const struct sp *p)
{
	memset(s, 0, sizeof(*s));
	set_id(s->trace_id, sizeof(s->trace_id), 1);
	set_id(s->span_id, sizeof(s->span_id), p->id);
	if (p->parent != 0) {
		s->has_parent = true;
		set_id(s->parent_span_id, sizeof(s->parent_span_id), p->parent);
	}
	s->start_ns = p->start;
	s->end_ns = p->end;
	s->source = p->source;
	s->user = p->name;
}

/* "[OTLP] name" */
static int
label_name(struct buf *b, const struct merge_node *node, void *arg)
{
	(void)arg;
	return buf_printf(b, "%s %s", render_source_label(node->span->source),
			  (const char *)node->span->user);
}

/* Merges sp[0..n) (one trace); *spans is the caller's to free. */
static struct merge_result *
merge_sp(const struct sp *sp, size_t n, const struct merge_opts *opts,
	 struct merge_span **spans)
{
	struct merge_result *r = NULL;

	*spans = calloc(n, sizeof(**spans));
	assert_non_null(*spans);
	for (size_t i = 0; i < n; i++)
		make_span(&(*spans)[i], &sp[i]);
	assert_int_equal(merge_traces(*spans, n, opts, &r), STATUS_OK);
	assert_int_equal(r->n_traces, 1);
	return r;
}

/* Two roots (the second an orphan), siblings, and a column that ends. */
static const struct sp simple_tree[] = {
	{1, 0, 0, 100, O, "checkout: POST /api/checkout"},
	{2, 1, 10, 40, E, "payments: POST /pay"},
	{4, 2, 15, 20, O, "db: SELECT"},
	{6, 2, 21, 30, O, "db: INSERT"},
	{3, 1, 50, 90, O, "stock: GET /reserve"},
	{7, 3, 55, 60, E, "db: UPDATE"},
	{5, 99, 200, 210, O, "orphan: late"}, /* parent not in set */
};

static void
test_tree_simple(void **state)
{
	static const char want[] = "[OTLP] checkout: POST /api/checkout\n"
				   "├─ [eBPF] payments: POST /pay\n"
				   "│  ├─ [OTLP] db: SELECT\n"
				   "│  └─ [OTLP] db: INSERT\n"
				   "└─ [OTLP] stock: GET /reserve\n"
				   "   └─ [eBPF] db: UPDATE\n"
				   "[OTLP] orphan: late\n";
	struct merge_span *spans;
	struct merge_result *r =
		merge_sp(simple_tree, ARRAY_LEN(simple_tree), NULL, &spans);
	struct buf b;
	size_t shown = 0;

	(void)state;
	buf_init(&b, 1 << 16);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   0, &shown),
			 STATUS_OK);
	assert_string_equal(b.data, want);
	assert_int_equal(shown, 7);
	/* a budget far above it changes nothing */
	buf_reset(&b);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   strlen(want) + MERGE_NOTICE_MAX + 4,
					   &shown),
			 STATUS_OK);
	assert_string_equal(b.data, want);
	assert_int_equal(shown, 7);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* The tree goes after what b already holds; the budget counts only what
 * the tree adds. */
static void
test_tree_appends(void **state)
{
	static const struct sp sp[] = {
		{1, 0, 0, 100, O, "a"},
		{2, 1, 10, 40, O, "b"},
	};
	struct merge_span *spans;
	struct merge_result *r = merge_sp(sp, ARRAY_LEN(sp), NULL, &spans);
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 16);
	assert_int_equal(buf_puts(&b, "Trace x\n"), STATUS_OK);
	assert_int_equal(
		render_trace_tree(&b, &r->traces[0], label_name, NULL, 0, NULL),
		STATUS_OK);
	assert_string_equal(b.data, "Trace x\n[OTLP] a\n└─ [OTLP] b\n");
	/* the tree's 25 bytes fit a budget of 25 after the 8 there */
	buf_reset(&b);
	assert_int_equal(buf_puts(&b, "Trace x\n"), STATUS_OK);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   25, NULL),
			 STATUS_OK);
	assert_string_equal(b.data, "Trace x\n[OTLP] a\n└─ [OTLP] b\n");
	/* one byte less: the notice alone */
	buf_reset(&b);
	assert_int_equal(buf_puts(&b, "Trace x\n"), STATUS_OK);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   24, NULL),
			 STATUS_OK);
	assert_string_equal(b.data, "Trace x\n2 more not shown\n");
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* Line i of s (0-based) into out, without its newline; false past the end. */
static bool
nth_line(const char *s, size_t i, char *out, size_t cap)
{
	const char *end;

	for (; i > 0; i--) {
		s = strchr(s, '\n');
		if (s == NULL)
			return false;
		s++;
	}
	if (*s == '\0')
		return false;
	end = strchr(s, '\n');
	assert_non_null(end);
	assert_true((size_t)(end - s) < cap);
	memcpy(out, s, (size_t)(end - s));
	out[end - s] = '\0';
	return true;
}

static void
test_tree_deep_chain(void **state)
{
	enum {
		N = 100
	};
	static char names[N][8];
	struct sp sp[N];
	struct merge_span *spans;
	struct merge_result *r;
	struct buf b;
	char line[512], want[512];
	size_t shown = 0, i;

	(void)state;
	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "s%zu", i);
		sp[i] = (struct sp){(unsigned)(i + 1), (unsigned)i, i,
				    1000 - i,	       O,	    names[i]};
	}
	r = merge_sp(sp, N, NULL, &spans);
	buf_init(&b, 1 << 20);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   0, &shown),
			 STATUS_OK);
	assert_int_equal(shown, N);
	for (i = 0; i < N; i++) {
		size_t len = 0,
		       indent = i < RENDER_MAX_INDENT ? i : RENDER_MAX_INDENT;

		assert_true(nth_line(b.data, i, line, sizeof(line)));
		/* ancestors' columns: one per level above, capped */
		for (size_t l = 1; l < indent; l++)
			len += (size_t)snprintf(want + len, sizeof(want) - len,
						"   ");
		if (i > RENDER_MAX_INDENT)
			len += (size_t)snprintf(want + len, sizeof(want) - len,
						"(depth %zu) ", i);
		if (i > 0)
			len += (size_t)snprintf(want + len, sizeof(want) - len,
						"└─ ");
		snprintf(want + len, sizeof(want) - len, "[OTLP] s%zu", i);
		if (strcmp(line, want) != 0)
			fail_msg("depth %zu: got \"%s\", want \"%s\"", i, line,
				 want);
	}
	assert_false(nth_line(b.data, N, line, sizeof(line)));
	/* the last line is depth 99, as flat as depth 25 */
	assert_non_null(strstr(b.data, "(depth 99) └─ [OTLP] s99\n"));
	assert_null(strstr(b.data, "(depth 24)"));
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* A root with n children "child-NN" (labels of equal length). */
static struct merge_result *
wide_tree(size_t n, const struct merge_opts *opts, struct merge_span **spans)
{
	static char names[64][16];
	struct sp sp[64];

	assert_true(n + 1 <= ARRAY_LEN(sp));
	sp[0] = (struct sp){1, 0, 0, 1000, O, "root"};
	for (size_t i = 1; i <= n; i++) {
		snprintf(names[i], sizeof(names[i]), "child-%02zu", i);
		sp[i] = (struct sp){(unsigned)(i + 1), 1, i, i + 1, O,
				    names[i]};
	}
	return merge_sp(sp, n + 1, opts, spans);
}

static void
test_tree_budget(void **state)
{
	/* "[OTLP] root\n" is 12 bytes, "├─ [OTLP] child-NN\n" 23 (the
	 * box-drawing characters are 3 bytes each) */
	static const struct {
		size_t max_chars, shown;
	} cases[] = {
		{0, 51},  /* no limit */
		{56, 1},  /* 12 + 44 */
		{55, 0},  /* not even the root: only the notice */
		{200, 7}, /* 12 + 6 * 23 + 44 = 194 */
		{216, 7}, /* one byte short of the 8th line */
		{217, 8},
	};
	struct merge_span *spans;
	struct merge_result *r = wide_tree(50, NULL, &spans);

	(void)state;
	for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
		struct buf b;
		size_t shown = 999;
		char want[64], line[128];

		buf_init(&b, 1 << 16);
		assert_int_equal(render_trace_tree(&b, &r->traces[0],
						   label_name, NULL,
						   cases[c].max_chars, &shown),
				 STATUS_OK);
		if (shown != cases[c].shown)
			fail_msg("max_chars %zu: shown %zu, want %zu",
				 cases[c].max_chars, shown, cases[c].shown);
		if (cases[c].max_chars > 0)
			assert_true(b.len <= cases[c].max_chars);
		if (shown == 51) {
			assert_null(strstr(b.data, "not shown"));
			assert_true(nth_line(b.data, 50, line, sizeof(line)));
			assert_string_equal(line, "└─ [OTLP] child-50");
		} else {
			/* whole lines, then the notice */
			snprintf(want, sizeof(want), "%zu more not shown",
				 51 - shown);
			assert_true(
				nth_line(b.data, shown, line, sizeof(line)));
			assert_string_equal(line, want);
			assert_false(nth_line(b.data, shown + 1, line,
					      sizeof(line)));
			assert_int_equal(b.data[b.len - 1], '\n');
			if (shown > 1) {
				assert_true(nth_line(b.data, shown - 1, line,
						     sizeof(line)));
				snprintf(want, sizeof(want),
					 "├─ [OTLP] child-%02zu", shown - 1);
				assert_string_equal(line, want);
			}
		}
		buf_free(&b);
	}
	merge_result_free(r);
	free(spans);
}

/* Spans merge already left out are counted in the notice too. */
static void
test_tree_merge_not_shown(void **state)
{
	struct merge_opts opts = {.max_spans = 4};
	struct merge_span *spans;
	struct merge_result *r = wide_tree(20, &opts, &spans);
	struct buf b;
	size_t shown = 0;

	(void)state;
	assert_int_equal(r->traces[0].n_nodes, 4);
	assert_int_equal(r->traces[0].span_count, 21);
	buf_init(&b, 1 << 16);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_name, NULL,
					   0, &shown),
			 STATUS_OK);
	assert_int_equal(shown, 4);
	/* child-03 is the last shown child: the notice follows it */
	assert_string_equal(b.data, "[OTLP] root\n"
				    "├─ [OTLP] child-01\n"
				    "├─ [OTLP] child-02\n"
				    "└─ [OTLP] child-03\n"
				    "17 more not shown\n");
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

static const char long_name[] =
	"a-very-long-span-name-that-takes-up-most-of-the-budget-"
	"on-its-own-and-then-some-more";

static const struct sp edge_one[] = {{1, 0, 0, 10, O, long_name}};

static const struct sp edge_four[] = {
	{1, 0, 0, 100, O, "r"},
	{2, 1, 10, 20, O, "a"},
	{3, 1, 30, 40, O, long_name},
	{4, 1, 50, 60, O, "b"},
};

struct edge_case {
	const char *name;
	const struct sp *sp;
	size_t n, merge_max_spans, max_chars;
	const char *want;
};

/* Renders each case; lists every mismatch, then fails if there was one. */
static void
run_edge_cases(const struct edge_case *cases, size_t n_cases)
{
	size_t bad = 0;

	for (size_t c = 0; c < n_cases; c++) {
		struct merge_opts opts = {.max_spans =
						  cases[c].merge_max_spans};
		struct merge_span *spans;
		struct merge_result *r =
			merge_sp(cases[c].sp, cases[c].n, &opts, &spans);
		struct buf b;

		buf_init(&b, 1 << 16);
		assert_int_equal(render_trace_tree(&b, &r->traces[0],
						   label_name, NULL,
						   cases[c].max_chars, NULL),
				 STATUS_OK);
		if (strcmp(b.data, cases[c].want) != 0) {
			print_error("%s (max_chars %zu): got %zu bytes:\n%s"
				    "want:\n%s",
				    cases[c].name, cases[c].max_chars, b.len,
				    b.data, cases[c].want);
			bad++;
		}
		buf_free(&b);
		merge_result_free(r);
		free(spans);
	}
	assert_int_equal(bad, 0);
}

/*
 * "Stops before b would pass max_chars" holds for the last shown line
 * too, whether or not a notice follows it.
 */
static void
test_tree_budget_last_line(void **state)
{
	static const struct edge_case cases[] = {
		{"one line longer than the budget", edge_one,
		 ARRAY_LEN(edge_one), 0, 60, "1 more not shown\n"},
		{"last line merge kept, then the notice", edge_four,
		 ARRAY_LEN(edge_four), 3, 100,
		 "[OTLP] r\n├─ [OTLP] a\n2 more not shown\n"},
	};

	(void)state;
	run_edge_cases(cases, ARRAY_LEN(cases));
}

/*
 * A tree that fits whole in max_chars needs no notice, so none of it is
 * cut to make room for one (merge_fit keeps that room back only "when
 * not all fit").
 */
static void
test_tree_budget_fits_exactly(void **state)
{
	static const struct edge_case cases[] = {
		{"whole tree fits exactly", simple_tree, ARRAY_LEN(simple_tree),
		 0, 212,
		 "[OTLP] checkout: POST /api/checkout\n"
		 "├─ [eBPF] payments: POST /pay\n"
		 "│  ├─ [OTLP] db: SELECT\n"
		 "│  └─ [OTLP] db: INSERT\n"
		 "└─ [OTLP] stock: GET /reserve\n"
		 "   └─ [eBPF] db: UPDATE\n"
		 "[OTLP] orphan: late\n"},
	};

	(void)state;
	run_edge_cases(cases, ARRAY_LEN(cases));
}

/*
 * A budget below the notice itself: no span line fits, and the notice is
 * written anyway (render.h: saying that spans are hidden wins over the
 * budget), so the answer is exactly the notice.
 */
static void
test_tree_budget_below_notice(void **state)
{
	static const size_t budgets[] = {1, 10, 16};
	struct merge_span *spans;
	struct merge_result *r = wide_tree(2, NULL, &spans);

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(budgets); i++) {
		struct buf b;
		size_t shown = 99;

		buf_init(&b, 1 << 16);
		assert_int_equal(render_trace_tree(&b, &r->traces[0],
						   label_name, NULL, budgets[i],
						   &shown),
				 STATUS_OK);
		assert_int_equal(shown, 0);
		assert_string_equal(b.data, "3 more not shown\n");
		buf_free(&b);
	}
	merge_result_free(r);
	free(spans);
}

/* A label that fails on its nth call (arg: the counter). */
struct fail_arg {
	size_t calls, fail_at;
	int rc;
};

static int
label_failing(struct buf *b, const struct merge_node *node, void *arg)
{
	struct fail_arg *f = arg;

	if (++f->calls == f->fail_at) {
		/* half-written text must not stay behind */
		if (buf_puts(b, "partial") != STATUS_OK)
			return STATUS_NOMEM;
		return f->rc;
	}
	return label_name(b, node, NULL);
}

static void
test_tree_label_fails(void **state)
{
	struct merge_span *spans;
	struct merge_result *r = wide_tree(5, NULL, &spans);
	struct fail_arg f = {0, 3, STATUS_IO};
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 16);
	assert_int_equal(buf_puts(&b, "head\n"), STATUS_OK);
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_failing, &f,
					   0, NULL),
			 STATUS_IO);
	assert_int_equal(f.calls, 3);
	/* the lines before stay, the failed one is cut, no notice */
	assert_string_equal(b.data, "head\n"
				    "[OTLP] root\n"
				    "├─ [OTLP] child-01\n");
	assert_int_equal(b.len, strlen(b.data));
	/* failing on the first line leaves b as it was */
	buf_reset(&b);
	f = (struct fail_arg){0, 1, STATUS_NOMEM};
	assert_int_equal(render_trace_tree(&b, &r->traces[0], label_failing, &f,
					   0, NULL),
			 STATUS_NOMEM);
	assert_int_equal(b.len, 0);
	assert_true(b.data == NULL || b.data[0] == '\0');
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* Markdown rows: escaped cells; a row that does not fit is not added and
 * leaves no error, so the table can end there and a note follow. */
static void
test_md_table(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 40);
	assert_int_equal(
		render_md_row(&b, (const char *const[]){"a|b", NULL}, 2),
		STATUS_OK);
	assert_int_equal(render_md_rule(&b, 2), STATUS_OK);
	assert_string_equal(b.data, "| a\\|b |  |\n|---|---|\n");
	assert_int_equal(render_md_row(&b,
				       (const char *const[]){"a long cell that "
							     "does not fit"},
				       1),
			 STATUS_LIMIT);
	assert_string_equal(b.data, "| a\\|b |  |\n|---|---|\n");
	assert_int_equal(buf_error(&b), STATUS_OK);
	assert_int_equal(buf_puts(&b, "(1 more)"), STATUS_OK);
	/* an error already pending is returned, b untouched */
	assert_int_equal(buf_puts(&b, "past the maximum"), STATUS_LIMIT);
	assert_int_equal(render_md_rule(&b, 1), STATUS_LIMIT);
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	assert_string_equal(b.data, "| a\\|b |  |\n|---|---|\n(1 more)");
	buf_free(&b);
}

/* A buffer whose hard maximum is reached ends the tree like a budget,
 * as long as the notice still fits; never past max. */
static void
test_tree_buffer_max(void **state)
{
	struct merge_span *spans;
	struct merge_result *r = wide_tree(10, NULL, &spans);
	struct buf b;
	size_t shown = 0;
	int rc;

	(void)state;
	/* root 12 + 2 lines of 23 = 58; the third would reach 81 */
	buf_init(&b, 80);
	rc = render_trace_tree(&b, &r->traces[0], label_name, NULL, 0, &shown);
	assert_int_equal(rc, STATUS_OK);
	assert_int_equal(shown, 3);
	assert_true(b.len <= 80);
	assert_string_equal(b.data, "[OTLP] root\n"
				    "├─ [OTLP] child-01\n"
				    "├─ [OTLP] child-02\n"
				    "8 more not shown\n");
	/* the line that did not fit left no error behind */
	assert_int_equal(buf_error(&b), STATUS_OK);
	/* an error already pending is returned, b untouched */
	assert_int_equal(buf_puts(&b, "0123456789abcdef0123456789"),
			 STATUS_LIMIT);
	rc = render_trace_tree(&b, &r->traces[0], label_name, NULL, 0, &shown);
	assert_int_equal(rc, STATUS_LIMIT);
	assert_int_equal(buf_error(&b), STATUS_LIMIT);
	assert_int_equal(b.len, strlen("[OTLP] root\n"
				       "├─ [OTLP] child-01\n"
				       "├─ [OTLP] child-02\n"
				       "8 more not shown\n"));
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* ---- folding repeated siblings ----------------------------------------- */

static bool
same_name(const struct merge_node *a, const struct merge_node *b, void *arg)
{
	(void)arg;
	return strcmp(a->span->user, b->span->user) == 0;
}

/* "× 4 x (min 10, avg 12, max 15, 8 spans)" */
static int
run_label(struct buf *b, const struct merge_trace *t,
	  const struct render_fold_line *l, void *arg)
{
	(void)arg;
	return buf_printf(b,
			  "× %zu %s (min %llu, avg %llu, max %llu, %zu spans)",
			  l->count, (const char *)t->nodes[l->node].span->user,
			  (unsigned long long)l->min_ns,
			  (unsigned long long)(l->sum_ns / l->count),
			  (unsigned long long)l->max_ns, l->end - l->node);
}

/* Folds r's one trace and draws it into b. */
static struct render_fold *
fold_draw(struct merge_result *r, size_t min_repeat, size_t max_chars,
	  struct buf *b, size_t *shown)
{
	struct render_fold *f = NULL;

	assert_int_equal(
		render_fold(&r->traces[0], same_name, NULL, min_repeat, &f),
		STATUS_OK);
	assert_non_null(f);
	assert_int_equal(render_trace_tree_folded(b, &r->traces[0], f,
						  label_name, run_label, NULL,
						  max_chars, shown),
			 STATUS_OK);
	return f;
}

/* Runs of 3 or more fold with their subtrees; a pair does not; the last
 * run of a parent takes └─; durations over the members only. */
static const struct sp fold_tree[] = {
	{1, 0, 0, 1000, O, "root"}, {2, 1, 10, 20, O, "a"},
	{3, 1, 30, 40, O, "x"},	    {4, 3, 31, 32, O, "y"},
	{5, 1, 50, 62, O, "x"},	    {6, 5, 51, 52, O, "y"},
	{7, 1, 70, 85, O, "x"},	    {8, 7, 71, 72, O, "y"},
	{9, 1, 90, 101, O, "x"},    {10, 9, 91, 92, O, "y"},
	{11, 1, 200, 210, O, "b"},  {12, 11, 201, 202, O, "b-child"},
	{13, 1, 300, 310, O, "b"},  {14, 1, 400, 401, O, "c"},
	{15, 1, 500, 502, O, "c"},  {16, 1, 600, 603, O, "c"},
};

static void
test_fold_runs(void **state)
{
	static const char want[] =
		"[OTLP] root\n"
		"├─ [OTLP] a\n"
		"├─ × 4 x (min 10, avg 12, max 15, 8 spans)\n"
		"├─ [OTLP] b\n"
		"│  └─ [OTLP] b-child\n"
		"├─ [OTLP] b\n"
		"└─ × 3 c (min 1, avg 2, max 3, 3 spans)\n";
	struct merge_span *spans;
	struct merge_result *r =
		merge_sp(fold_tree, ARRAY_LEN(fold_tree), NULL, &spans);
	struct render_fold *f;
	struct buf b;
	size_t shown = 0;

	(void)state;
	buf_init(&b, 1 << 16);
	f = fold_draw(r, 0, 0, &b, &shown);
	assert_string_equal(b.data, want);
	assert_int_equal(f->n, 7);
	assert_int_equal(shown, 7);
	assert_int_equal(f->runs, 2);
	assert_int_equal(f->folded, 11);
	/* the x run: nodes 2..9 (4 members and their children) */
	assert_int_equal(f->lines[2].node, 2);
	assert_int_equal(f->lines[2].last, 8);
	assert_int_equal(f->lines[2].end, 10);
	assert_int_equal(f->lines[2].count, 4);
	assert_int_equal(f->lines[2].min_ns, 10);
	assert_int_equal(f->lines[2].max_ns, 15);
	assert_int_equal(f->lines[2].sum_ns, 10 + 12 + 15 + 11);
	/* a span's line stands for itself only */
	assert_int_equal(f->lines[3].node, 10);
	assert_int_equal(f->lines[3].end, 11);
	assert_int_equal(f->lines[3].count, 1);
	render_fold_free(f);

	/* min_repeat 2: the b pair folds too (with b-child) */
	buf_reset(&b);
	f = fold_draw(r, 2, 0, &b, NULL);
	assert_string_equal(b.data,
			    "[OTLP] root\n"
			    "├─ [OTLP] a\n"
			    "├─ × 4 x (min 10, avg 12, max 15, 8 spans)\n"
			    "├─ × 2 b (min 10, avg 10, max 10, 3 spans)\n"
			    "└─ × 3 c (min 1, avg 2, max 3, 3 spans)\n");
	assert_int_equal(f->runs, 3);
	assert_int_equal(f->folded, 14);
	render_fold_free(f);
	/* 1 is taken as 2 */
	buf_reset(&b);
	f = fold_draw(r, 1, 0, &b, NULL);
	assert_int_equal(f->runs, 3);
	render_fold_free(f);
	/* 5: nothing folds, the tree is render_trace_tree's */
	buf_reset(&b);
	f = fold_draw(r, 5, 0, &b, NULL);
	assert_int_equal(f->runs, 0);
	assert_int_equal(f->folded, 0);
	assert_int_equal(f->n, ARRAY_LEN(fold_tree));
	{
		struct buf plain;

		buf_init(&plain, 1 << 16);
		assert_int_equal(render_trace_tree(&plain, &r->traces[0],
						   label_name, NULL, 0, NULL),
				 STATUS_OK);
		assert_string_equal(b.data, plain.data);
		buf_free(&plain);
	}
	render_fold_free(f);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* Only consecutive siblings fold: alternating calls stay apart, and the
 * same name under another parent is another run. */
static void
test_fold_consecutive_only(void **state)
{
	static const struct sp sp[] = {
		{1, 0, 0, 1000, O, "root"}, {2, 1, 10, 11, O, "x"},
		{3, 1, 20, 21, O, "y"},	    {4, 1, 30, 31, O, "x"},
		{5, 1, 40, 41, O, "y"},	    {6, 1, 50, 51, O, "x"},
		{7, 1, 60, 61, O, "y"},	    {8, 7, 61, 62, O, "x"},
		{9, 7, 62, 63, O, "x"},
	};
	struct merge_span *spans;
	struct merge_result *r = merge_sp(sp, ARRAY_LEN(sp), NULL, &spans);
	struct render_fold *f;
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 16);
	f = fold_draw(r, 3, 0, &b, NULL);
	assert_int_equal(f->runs, 0);
	assert_int_equal(f->n, ARRAY_LEN(sp));
	render_fold_free(f);
	buf_reset(&b);
	f = fold_draw(r, 2, 0, &b, NULL);
	assert_string_equal(b.data,
			    "[OTLP] root\n"
			    "├─ [OTLP] x\n"
			    "├─ [OTLP] y\n"
			    "├─ [OTLP] x\n"
			    "├─ [OTLP] y\n"
			    "├─ [OTLP] x\n"
			    "└─ [OTLP] y\n"
			    "   └─ × 2 x (min 1, avg 1, max 1, 2 spans)\n");
	render_fold_free(f);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* Roots are siblings too: three orphans of one name fold. */
static void
test_fold_roots(void **state)
{
	static const struct sp sp[] = {
		{1, 0, 0, 100, O, "main"},     {2, 90, 200, 210, E, "late"},
		{3, 91, 300, 320, E, "late"},  {4, 92, 400, 430, E, "late"},
		{5, 4, 401, 402, O, "inside"},
	};
	struct merge_span *spans;
	struct merge_result *r = merge_sp(sp, ARRAY_LEN(sp), NULL, &spans);
	struct render_fold *f;
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 16);
	f = fold_draw(r, 0, 0, &b, NULL);
	assert_string_equal(b.data,
			    "[OTLP] main\n"
			    "× 3 late (min 10, avg 20, max 30, 4 spans)\n");
	assert_int_equal(f->folded, 4);
	render_fold_free(f);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/*
 * 10,001 spans: a root, 10 services, each calling SELECT 999 times.  The
 * answer is 21 lines.
 */
static void
test_fold_ten_thousand(void **state)
{
	enum {
		N = 10001
	};
	static char names[10][16];
	struct merge_opts opts = {.max_spans = N};
	struct sp *sp = calloc(N, sizeof(*sp));
	struct merge_span *spans;
	struct merge_result *r;
	struct render_fold *f;
	struct buf b;
	size_t k = 0, shown = 0;
	char line[256];

	(void)state;
	assert_non_null(sp);
	sp[k++] = (struct sp){1, 0, 0, 10000000, O, "root"};
	for (unsigned s = 0; s < 10; s++) {
		unsigned id = (unsigned)k + 1;
		uint64_t at = 1000 + (uint64_t)s * 100000;

		snprintf(names[s], sizeof(names[s]), "svc-%u", s);
		sp[k++] = (struct sp){id, 1, at, at + 99000, O, names[s]};
		for (unsigned c = 0; c < 999; c++, k++)
			sp[k] = (struct sp){
				(unsigned)k + 1,	 id, at + c * 10 + 1,
				at + c * 10 + 3 + c % 5, O,  "SELECT"};
	}
	assert_int_equal(k, N);
	r = merge_sp(sp, N, &opts, &spans);
	assert_int_equal(r->traces[0].span_count, N);
	buf_init(&b, 1 << 20);
	f = fold_draw(r, 0, 4000, &b, &shown);
	assert_int_equal(f->n, 21);
	assert_int_equal(shown, 21);
	assert_int_equal(f->runs, 10);
	assert_int_equal(f->folded, 9990);
	assert_null(strstr(b.data, "not shown"));
	assert_true(nth_line(b.data, 2, line, sizeof(line)));
	assert_string_equal(
		line, "│  └─ × 999 SELECT (min 2, avg 3, max 6, 999 spans)");
	assert_true(nth_line(b.data, 20, line, sizeof(line)));
	assert_string_equal(
		line, "   └─ × 999 SELECT (min 2, avg 3, max 6, 999 spans)");
	assert_false(nth_line(b.data, 21, line, sizeof(line)));
	render_fold_free(f);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
	free(sp);
}

/* The notice counts spans, not lines: a run left out hides all it
 * stands for, and spans merge already left out count too. */
static void
test_fold_budget(void **state)
{
	struct merge_span *spans;
	struct merge_result *r =
		merge_sp(fold_tree, ARRAY_LEN(fold_tree), NULL, &spans);
	struct merge_opts opts = {.max_spans = 12};
	struct render_fold *f;
	struct buf b;
	size_t shown = 99;

	(void)state;
	buf_init(&b, 1 << 16);
	/* root 12 + a 16 bytes; the run's 48-byte line does not fit with
	 * the notice's room (44) in 100 */
	f = fold_draw(r, 0, 100, &b, &shown);
	assert_int_equal(shown, 2);
	assert_string_equal(b.data, "[OTLP] root\n"
				    "├─ [OTLP] a\n"
				    "14 more not shown\n");
	render_fold_free(f);
	buf_reset(&b);
	/* 12 + 16 + 48 + 44 = 120: three lines; a fourth needs 136 */
	f = fold_draw(r, 0, 125, &b, &shown);
	assert_int_equal(shown, 3);
	assert_string_equal(b.data,
			    "[OTLP] root\n"
			    "├─ [OTLP] a\n"
			    "├─ × 4 x (min 10, avg 12, max 15, 8 spans)\n"
			    "6 more not shown\n");
	assert_true(b.len <= 125);
	render_fold_free(f);
	merge_result_free(r);
	free(spans);

	/* merge kept the first 12 of 16 in preorder: the first b, with
	 * its child, is the last sibling shown */
	r = merge_sp(fold_tree, ARRAY_LEN(fold_tree), &opts, &spans);
	buf_reset(&b);
	f = fold_draw(r, 0, 0, &b, &shown);
	assert_int_equal(shown, 5);
	assert_string_equal(b.data,
			    "[OTLP] root\n"
			    "├─ [OTLP] a\n"
			    "├─ × 4 x (min 10, avg 12, max 15, 8 spans)\n"
			    "└─ [OTLP] b\n"
			    "   └─ [OTLP] b-child\n"
			    "4 more not shown\n");
	render_fold_free(f);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* A run label that fails ends the drawing with its error, the partial
 * line cut. */
static int
run_failing(struct buf *b, const struct merge_trace *t,
	    const struct render_fold_line *l, void *arg)
{
	(void)t;
	(void)l;
	(void)arg;
	if (buf_puts(b, "partial") != STATUS_OK)
		return STATUS_NOMEM;
	return STATUS_IO;
}

static void
test_fold_run_fails(void **state)
{
	struct merge_span *spans;
	struct merge_result *r =
		merge_sp(fold_tree, ARRAY_LEN(fold_tree), NULL, &spans);
	struct render_fold *f = NULL;
	struct buf b;

	(void)state;
	assert_int_equal(render_fold(&r->traces[0], same_name, NULL, 0, &f),
			 STATUS_OK);
	buf_init(&b, 1 << 16);
	assert_int_equal(render_trace_tree_folded(&b, &r->traces[0], f,
						  label_name, run_failing, NULL,
						  0, NULL),
			 STATUS_IO);
	assert_string_equal(b.data, "[OTLP] root\n├─ [OTLP] a\n");
	render_fold_free(f);
	render_fold_free(NULL);
	buf_free(&b);
	merge_result_free(r);
	free(spans);
}

/* One dollar format for every tool (query_spans, get_session,
 * analyze_genai, compare_sessions used to disagree: $0.5 / $0.5000). */
static void
test_usd(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0, "$0.00"},
		{-1, "$0.00"},
		{NAN, "$0.00"},
		{0.0000001, "<$0.000001"},
		{0.00000049, "<$0.000001"},
		{0.0000005, "<$0.000001"}, /* 4.99999...e-7 in binary */
		{0.00000051, "$0.000001"},
		{0.000001, "$0.000001"},
		{0.000123, "$0.000123"},
		{0.0075, "$0.0075"},
		{0.01, "$0.01"},
		{0.1, "$0.10"},
		{0.5, "$0.50"},
		{0.1234567, "$0.123457"},
		{0.99, "$0.99"},
		{0.999999, "$0.999999"},
		{0.9999996, "$1.00"},
		{1, "$1.00"},
		{1.005, "$1.00"}, /* 1.00499999... in binary */
		{12.345678, "$12.35"},
		{1234.5, "$1,234.50"},
		{1234567.891, "$1,234,567.89"},
	};
	char buf[RENDER_USD_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = render_usd(cases[i].v, buf, sizeof(buf));

		if (strcmp(buf, cases[i].want) != 0 || n != strlen(buf))
			fail_msg(
				"render_usd(%.17g) = \"%s\" (%zu), want \"%s\"",
				cases[i].v, buf, n, cases[i].want);
	}
	/* a short buffer: cut like snprintf, the full length returned */
	assert_int_equal(render_usd(1234.5, buf, 4), strlen("$1,234.50"));
	assert_string_equal(buf, "$1,");
}

/* ---- percentages ------------------------------------------------------- */

static void
test_pct(void **state)
{
	static const struct {
		uint64_t part, whole;
		const char *want;
	} cases[] = {
		{0, 4061, "0%"},
		{0, 0, "0%"},
		{5, 0, "0%"},
		{1, 4061, "0.025%"}, /* 0.02462...: never 0.0% */
		{1, 5000, "0.020%"}, /* two digits, trailing zero kept */
		{1, 3, "33.3%"},
		{2, 3, "66.7%"},
		{1, 1, "100%"},
		{4061, 4061, "100%"},
		{4060, 4061, "99.975%"}, /* one short of all: never 100% */
		{1, 100, "1.0%"},
		{13, 1000, "1.3%"},
		{1, 8, "12.5%"},
		{1, 2, "50.0%"},
		{996, 1000000, "0.10%"}, /* 0.0996: rounds up a digit */
		{994, 1000000, "0.099%"},
		{9995, 1000000,
		 "1.0%"}, /* 0.9995 rounds to 1.00: one decimal */
		{999, 1000, "99.9%"},
		{9995, 10000, "99.950%"},
		{999999, 1000000, "99.99990%"},
		{1, 1000000000, "0.00000010%"},
		{1, UINT64_MAX, "0.0000000000000000054%"},
		{UINT64_MAX - 1, UINT64_MAX, "99.9999999999999999946%"},
		{3, 2, "150.0%"},
	};
	char buf[RENDER_PCT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n = render_pct(cases[i].part, cases[i].whole, buf,
				      sizeof(buf));

		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("render_pct(%llu, %llu) = \"%s\", want \"%s\"",
				 (unsigned long long)cases[i].part,
				 (unsigned long long)cases[i].whole, buf,
				 cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
	/* like snprintf: the length needed, the text cut */
	assert_int_equal(render_pct(1, 4061, buf, 4), strlen("0.025%"));
	assert_string_equal(buf, "0.0");
}

static void
test_rate(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0, "0%"},
		{-0.0, "0%"},
		{-3, "0%"},
		{NAN, "0%"},
		{INFINITY, "0%"},
		{100, "100%"},
		{0.0246, "0.025%"},
		{0.0996, "0.10%"},
		{0.0995, "0.10%"}, /* binary 0.099500...05: rounds up */
		{0.0994, "0.099%"},
		{0.25, "0.25%"},
		{0.05, "0.050%"},
		{0.999, "1.0%"},
		{1.25, "1.2%"}, /* exact tie: to even, as printf */
		{1.3, "1.3%"},
		{12.5, "12.5%"},
		{99.94, "99.9%"},
		{99.96, "99.960%"},
		{99.999, "99.9990%"},
		{1e-12, "0.0000000000010%"},
		{DBL_MIN, "2.2e-308%"},
		{250, "250.0%"},
	};
	char buf[RENDER_PCT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n = render_rate(cases[i].v, buf, sizeof(buf));

		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("render_rate(%.17g) = \"%s\", want \"%s\"",
				 cases[i].v, buf, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
	/* a nonzero rate is never printed as zero, nor one short of all as
	 * all, on a sweep of magnitudes */
	for (double v = 1e-15; v < 100; v *= 1.37) {
		render_rate(v, buf, sizeof(buf));
		assert_true(strspn(buf, "0.%") != strlen(buf));
		if (100 - v == 100) /* below one ulp of 100 */
			continue;
		render_rate(100 - v, buf, sizeof(buf));
		if (strncmp(buf, "100", 3) == 0 ||
		    (v < 0.05 && strncmp(buf, "99.", 3) != 0))
			fail_msg("render_rate(100 - %g) = \"%s\"", v, buf);
	}
}

static void
test_throughput(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0, "0"},
		{-1, "0"},
		{NAN, "0"},
		{0.004861, "0.0049"},
		{0.0099, "0.0099"},
		{0.01, "0.01"},
		{1.122, "1.12"},
		{6.058, "6.06"},
		{10, "10"},
		{1.5, "1.5"},
		{0.5, "0.5"},
		{20.004, "20"},
		{99.994, "99.99"},
		{100, "100"},
		{120.5, "120"},
		{4152.4, "4152"},
		{1e-9, "<0.000001"},
		{1.7e-6, "0.0000017"},
		{1e-6, "0.000001"},
		{0.00999, "0.01"},
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n = render_throughput(cases[i].v, buf, sizeof(buf));

		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("render_throughput(%g) = \"%s\", want \"%s\"",
				 cases[i].v, buf, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
}

static void
test_change(void **state)
{
	char buf[RENDER_PCT_MAX];

	(void)state;
	render_change(0, "%", buf, sizeof(buf));
	assert_string_equal(buf, "0%");
	render_change(0, " pp", buf, sizeof(buf));
	assert_string_equal(buf, "0 pp");
	render_change(0.0246, "%", buf, sizeof(buf));
	assert_string_equal(buf, "+0.025%");
	render_change(-0.0246, " pp", buf, sizeof(buf));
	assert_string_equal(buf, "-0.025 pp");
	render_change(-12.5, "%", buf, sizeof(buf));
	assert_string_equal(buf, "-12.5%");
	render_change(-100, "%", buf, sizeof(buf));
	assert_string_equal(buf, "-100%");
	render_change(250, "%", buf, sizeof(buf));
	assert_string_equal(buf, "+250.0%");
	render_change(NAN, "%", buf, sizeof(buf));
	assert_string_equal(buf, "0%");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_count_small_buffer),
		cmocka_unit_test(test_ms),
		cmocka_unit_test(test_ms_rounding_boundaries),
		cmocka_unit_test(test_ms_like_printf),
		cmocka_unit_test(test_usd),
		cmocka_unit_test(test_pct),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_throughput),
		cmocka_unit_test(test_change),
		cmocka_unit_test(test_source_label),
		cmocka_unit_test(test_tree_simple),
		cmocka_unit_test(test_tree_appends),
		cmocka_unit_test(test_tree_deep_chain),
		cmocka_unit_test(test_tree_budget),
		cmocka_unit_test(test_tree_merge_not_shown),
		cmocka_unit_test(test_tree_budget_last_line),
		cmocka_unit_test(test_tree_budget_fits_exactly),
		cmocka_unit_test(test_tree_budget_below_notice),
		cmocka_unit_test(test_tree_label_fails),
		cmocka_unit_test(test_tree_buffer_max),
		cmocka_unit_test(test_md_table),
		cmocka_unit_test(test_fold_runs),
		cmocka_unit_test(test_fold_consecutive_only),
		cmocka_unit_test(test_fold_roots),
		cmocka_unit_test(test_fold_ten_thousand),
		cmocka_unit_test(test_fold_budget),
		cmocka_unit_test(test_fold_run_fails),
	};

	return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}

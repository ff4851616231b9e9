/*
 * test_spanlist.c - unit tests for lib/telemetry/spanlist: the cursor (round trip,
 * every kind of bad cursor, the filter hash), argument checks, then the
 * span listing against a migrated throwaway PostgreSQL holding spans
 * written with lib/otlp/store: every page of every filter and order walked with
 * cursors and compared with this test's own SQL (no row lost or repeated,
 * ties in start time and duration included), the exact count, eBPF/OTLP
 * deduplication, and GenAI costs (price changes, unknown models) computed
 * here from the prices.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"
#include "telemetry/spanlist.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SEC_MS	     ((int64_t)1000)
#define MIN_MS	     ((int64_t)60 * 1000)
#define HOUR_MS	     ((int64_t)3600 * 1000)

/* ---- the cursor (pure) ------------------------------------------------- */

static struct spanlist_cursor
sample_cursor(void)
{
	struct spanlist_cursor c = {
		.filter_hash = 0x0123456789abcdefull,
		.order = SPANLIST_ORDER_DURATION,
		.has_range = true,
		.from_ms = 1763719200000,
		.to_ms = 1763722800000,
		.seen = 40,
		.after = {.duration_ns = 1234567,
			  .start_us = 1763719300123456,
			  .start_nanos = 789,
			  .source = SPANLIST_SOURCE_EBPF},
	};

	for (int i = 0; i < 16; i++)
		c.after.trace_id[i] = (uint8_t)(0xf0 + i);
	for (int i = 0; i < 8; i++)
		c.after.span_id[i] = (uint8_t)(0x10 * i + 1);
	return c;
}

static void
test_cursor_round_trip(void **state)
{
	struct spanlist_cursor c = sample_cursor(), back;
	char text[SPANLIST_CURSOR_MAX + 1];

	(void)state;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_OK);
	/* base64url: no padding, no '+' or '/' */
	assert_true(strlen(text) > 20);
	assert_int_equal(strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
				      "nopqrstuvwxyz0123456789-_"),
			 strlen(text));
	assert_int_equal(spanlist_cursor_decode(text, &back), STATUS_OK);
	assert_memory_equal(&c, &back, sizeof(c));
	/* without a range, start order, an OTLP row */
	c.has_range = false;
	c.from_ms = c.to_ms = 0;
	c.order = SPANLIST_ORDER_START;
	c.after.source = SPANLIST_SOURCE_OTLP;
	c.after.duration_ns = 0;
	c.seen = 0;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_OK);
	assert_int_equal(spanlist_cursor_decode(text, &back), STATUS_OK);
	assert_memory_equal(&c, &back, sizeof(c));
	/* too small a buffer */
	assert_int_equal(spanlist_cursor_encode(&c, text, 20), STATUS_LIMIT);
	assert_string_equal(text, "");
}

static void
test_cursor_encode_invalid(void **state)
{
	char text[SPANLIST_CURSOR_MAX];
	struct spanlist_cursor c;

	(void)state;
	c = sample_cursor();
	c.order = 2;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_INVALID);
	c = sample_cursor();
	c.after.start_nanos = 1000;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_INVALID);
	c = sample_cursor();
	c.after.source = 2;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_INVALID);
	c = sample_cursor();
	c.to_ms = c.from_ms;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_INVALID);
	c = sample_cursor();
	c.after.start_us = -1;
	assert_int_equal(spanlist_cursor_encode(&c, text, sizeof(text)),
			 STATUS_INVALID);
}

/* base64url of s, for hand-made cursors. */
static void
b64(const char *s, char *out, size_t cap)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
				"tuvwxyz0123456789-_";
	size_t n = strlen(s), o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		assert_true(o + 5 < cap);
		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = a[v >> 6 & 63];
		if (i + 2 < n)
			out[o++] = a[v & 63];
	}
	out[o] = '\0';
}

#define GOOD_TAIL                                                              \
	"\"tr\":\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\",\"sp\":"                  \
	"\"0111213141516171\""

/* JSON that must not decode (each is base64url-encoded first). */
static const char *const bad_json[] = {
	"",
	"[]",
	"1",
	"{}",
	"not json",
	/* each field missing in turn */
	"{\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,\"u\":1,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,\"u\":1,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"k\":0,\"d\":0,\"u\":1,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"d\":0,\"u\":1,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"u\":1,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"sp\":\"0111213141516171\"}",
	/* wrong values */
	"{\"v\":2,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"newest\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789ABCDEF\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcde\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":-1,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":-5,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":-1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":253402300800000000,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":1000,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"jaeger\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1.5,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":\"0\","
	"\"d\":0,\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"tr\":\"f0f1\","
	"\"sp\":\"0111213141516171\"}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"tr\":"
	"\"g0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\",\"sp\":\"0111213141516171\"}",
	/* a range with one end, an empty one, a negative one */
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"f\":5," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"f\":5,\"t\":5," GOOD_TAIL "}",
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"f\":-5,\"t\":5," GOOD_TAIL "}",
	/* an unknown field, a duplicate one */
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\",\"x\":1," GOOD_TAIL "}",
	"{\"v\":1,\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,"
	"\"d\":0,\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}",
};

/* the same fields, all good: decodes */
static const char good_json[] =
	"{\"v\":1,\"o\":\"start\",\"h\":\"0123456789abcdef\",\"k\":0,\"d\":0,"
	"\"u\":1,\"n\":0,\"s\":\"otlp\"," GOOD_TAIL "}";

static void
test_cursor_decode_invalid(void **state)
{
	/* not base64url at all, or not a whole number of bytes */
	static const char *const bad_text[] = {
		"",	"a",	 "abc=",   "ab+c", "ab/c", "a b c d",
		"!!!!", "ey J9", "eyJ9\n", "e",	   "eyK", /* bits left over in the last character */
	};
	struct spanlist_cursor c;
	char text[2048], big[SPANLIST_CURSOR_MAX + 8];

	(void)state;
	b64(good_json, text, sizeof(text));
	assert_int_equal(spanlist_cursor_decode(text, &c), STATUS_OK);
	assert_int_equal(c.after.start_us, 1);
	assert_int_equal(c.filter_hash, 0x0123456789abcdefull);
	assert_false(c.has_range);
	for (size_t i = 0; i < ARRAY_LEN(bad_text); i++) {
		memset(&c, 0x55, sizeof(c));
		if (spanlist_cursor_decode(bad_text[i], &c) != STATUS_INVALID)
			fail_msg("decoded \"%s\"", bad_text[i]);
		assert_int_equal(c.seen, 0); /* zeroed on failure */
	}
	for (size_t i = 0; i < ARRAY_LEN(bad_json); i++) {
		b64(bad_json[i], text, sizeof(text));
		if (spanlist_cursor_decode(text, &c) != STATUS_INVALID)
			fail_msg("decoded %s", bad_json[i]);
	}
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(spanlist_cursor_decode(big, &c), STATUS_INVALID);
	assert_int_equal(spanlist_cursor_decode(NULL, &c), STATUS_INVALID);
}

static void
test_filter_hash(void **state)
{
	struct spanlist_filter base = {.service = "shop",
				       .session_id = NULL,
				       .status = SPANLIST_STATUS_ANY,
				       .min_duration_ns = -1,
				       .order = SPANLIST_ORDER_START};
	struct spanlist_filter f;
	uint64_t h = spanlist_filter_hash(&base);

	(void)state;
	/* the range is not part of it (the cursor carries its own) */
	f = base;
	f.has_range = true;
	f.from_ms = 5;
	f.to_ms = 10;
	assert_true(spanlist_filter_hash(&f) == h);
	/* any min_duration below 0 is "any" */
	f = base;
	f.min_duration_ns = -7;
	assert_true(spanlist_filter_hash(&f) == h);
	/* everything else changes it */
	f = base;
	f.service = "shop2";
	assert_true(spanlist_filter_hash(&f) != h);
	f.service = NULL;
	assert_true(spanlist_filter_hash(&f) != h);
	f.service = "";
	assert_true(spanlist_filter_hash(&f) !=
		    spanlist_filter_hash(
			    &(struct spanlist_filter){.min_duration_ns = -1}));
	f = base;
	f.has_trace_id = true;
	assert_true(spanlist_filter_hash(&f) != h);
	f.trace_id[3] = 1;
	assert_true(spanlist_filter_hash(&f) != h);
	f = base;
	f.session_id = "s";
	assert_true(spanlist_filter_hash(&f) != h);
	f = base;
	f.status = SPANLIST_STATUS_ERROR;
	assert_true(spanlist_filter_hash(&f) != h);
	f = base;
	f.min_duration_ns = 0;
	assert_true(spanlist_filter_hash(&f) != h);
	f = base;
	f.order = SPANLIST_ORDER_DURATION;
	assert_true(spanlist_filter_hash(&f) != h);
}

/* ---- the store --------------------------------------------------------- */

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static int64_t base_ms; /* wall clock when the data was written */
static int64_t w_ms;	/* W: 30 minutes before, where the data starts */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct otlp_span spans_buf[256];
static size_t spans_n;

static struct otlp_span *
new_span(unsigned trace, unsigned span, int source, const char *service,
	 int64_t start_ms, uint64_t dur_ns)
{
	struct otlp_span *s;

	assert_true(spans_n < ARRAY_LEN(spans_buf));
	s = &spans_buf[spans_n++];
	memset(s, 0, sizeof(*s));
	s->trace_id[0] = 0xab;
	s->trace_id[15] = (uint8_t)trace;
	s->span_id[6] = (uint8_t)(span >> 8);
	s->span_id[7] = (uint8_t)span;
	s->source = (enum otlp_source)source;
	s->service_name = service;
	s->name = "op";
	s->start_unix_nano = (uint64_t)start_ms * 1000000u;
	s->end_unix_nano = s->start_unix_nano + dur_ns;
	s->http_status = -1;
	s->grpc_status = -1;
	s->input_tokens = -1;
	s->output_tokens = -1;
	return s;
}

static void
trace_id_of(unsigned trace, uint8_t out[16])
{
	memset(out, 0, 16);
	out[0] = 0xab;
	out[15] = (uint8_t)trace;
}

#define OT OTLP_SOURCE_OTLP
#define EB OTLP_SOURCE_EBPF

static const char *const span_names[8] = {"GET /a",   "SELECT a", "GET /b",
					  "SELECT b", "POST /c",  "UPDATE c",
					  "GET /d",   "DELETE d"};
static char messages[8][16];

/*
 * Traces 1..6: 8 OTLP spans each, "shop" and "cart" alternating, one
 * span with status error and one ok per trace, one failed by its gRPC code
 * and one by its HTTP status (an error, or a client error), durations 1..4 ms (many equal); trace
 * 3's spans all start at the same nanosecond.  Sessions: 1 and 2 in
 * "sess-1", 4 in "sess-2".  Trace 2's first 4 spans were seen by eBPF
 * too (as "shop-ebpf", 1 ms longer).  Trace 7: 5 eBPF-only spans.  Trace
 * 8: 4 spans 3 hours ago.  Trace 9: GenAI calls of "agent".
 */
static void
add_data(void)
{
	for (unsigned t = 1; t <= 6; t++) {
		snprintf(messages[t], sizeof(messages[t]), "boom %u", t);
		for (unsigned j = 0; j < 8; j++) {
			int64_t start = t == 3 ? w_ms + 180 * SEC_MS
					       : w_ms + t * MIN_MS + j * SEC_MS;
			struct otlp_span *s = new_span(
				t, j + 1, OT, j % 2 == 0 ? "shop" : "cart",
				start, (uint64_t)((t + j) % 4 + 1) * 1000000u);

			s->name = span_names[j];
			s->status_code = j == 7 ? 2 : j == 6 ? 1 : 0;
			/* failed by their codes (sextant_span_outcome): a
			 * server's 503 (odd traces) is an error, its 404 (even)
			 * a client error; a client's UNAUTHENTICATED an error */
			if (j == 5) {
				s->kind = 2; /* SERVER */
				s->http_status = t % 2 ? 503 : 404;
			} else if (j == 4) {
				s->kind = 3; /* CLIENT */
				s->grpc_status = 16;
			}
			s->status_message = j == 7 ? messages[t] : NULL;
			s->session_id = t <= 2	 ? "sess-1"
					: t == 4 ? "sess-2"
						 : NULL;
			if (t == 3)
				s->start_unix_nano += 456,
					s->end_unix_nano += 456;
			if (j > 0) {
				s->has_parent = true;
				s->parent_span_id[7] = 1;
			}
		}
	}
	for (unsigned j = 0; j < 4; j++) {
		struct otlp_span *s =
			new_span(2, j + 1, EB, "shop-ebpf",
				 w_ms + 2 * MIN_MS + j * SEC_MS,
				 (uint64_t)((2 + j) % 4 + 2) * 1000000u);

		s->start_unix_nano += 500000;
		s->end_unix_nano += 500000;
	}
	for (unsigned j = 0; j < 5; j++) {
		struct otlp_span *s = new_span(7, j + 1, EB, "shop",
					       w_ms + 7 * MIN_MS + j * 10,
					       (uint64_t)(j + 1) * 700000u);

		s->status_code = j == 4 ? 2 : 0;
	}
	for (unsigned j = 0; j < 4; j++)
		new_span(8, j + 1, OT, "shop", base_ms - 3 * HOUR_MS + j * 10,
			 5000000);
}

/* The GenAI calls of trace 9, with their expected cost (< 0: unknown). */
struct genai_call {
	unsigned span;
	int64_t at_min; /* from W */
	const char *operation, *request_model, *response_model;
	int64_t in, out;
	double want_usd;
	const char *want_model;
};

/* gpt-test costs 1 / 2 $ per million tokens until W + 10 min, then
 * 10 / 20 (inserted by this test); gpt-4o is seeded at 2.50 / 10.00. */
static const struct genai_call genai_calls[] = {
	{1, 20, "invoke_agent", "gpt-4o", NULL, -1, -1, 0, "gpt-4o"},
	{2, 20, "chat", "gpt-4o", "gpt-4o-2024-08-06", 1000, 500,
	 (1000 * 2.5 + 500 * 10.0) / 1e6, "gpt-4o-2024-08-06"},
	{3, 21, "chat", "my-local-llm", NULL, 200, 100, -1, "my-local-llm"},
	{4, 1, "chat", "gpt-test", NULL, 1000000, 1000000, 3.0, "gpt-test"},
	{5, 25, "chat", "gpt-test", NULL, 1000000, 1000000, 30.0, "gpt-test"},
	{6, 22, "chat", NULL, NULL, 10, 10, -1, NULL},
};

static void
add_genai(void)
{
	for (size_t i = 0; i < ARRAY_LEN(genai_calls); i++) {
		const struct genai_call *g = &genai_calls[i];
		struct otlp_span *s =
			new_span(9, g->span, OT, "agent",
				 w_ms + g->at_min * MIN_MS, 3000000);

		s->gen_ai_system = "openai";
		s->gen_ai_operation = g->operation;
		s->gen_ai_request_model = g->request_model;
		s->gen_ai_response_model = g->response_model;
		s->input_tokens = g->in;
		s->output_tokens = g->out;
		s->session_id = "sess-g";
	}
}

static void
flush_spans(struct pg_conn *c)
{
	struct otlp_batch b = {.spans = spans_buf, .n_spans = spans_n};
	struct pg_error err;
	int64_t inserted = -1;

	if (store_write_spans(c, &b, &inserted, &err) != STATUS_OK)
		fail_msg("store: %s (%s)", err.client, err.detail);
	assert_int_equal(inserted, (int64_t)spans_n);
	spans_n = 0;
}

/* One statement of this test's own; the result is the caller's. */
static PGresult *
sql(struct pg_conn *c, const char *text, int n, const char *const *v)
{
	PGresult *res = NULL;
	struct pg_error err;

	if (pg_query(c, text, n, v, &res, &err) != STATUS_OK)
		fail_msg("sql: %s (%s)\n%s", err.client, err.detail, text);
	return res;
}

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	assert_int_equal(pg_acquire(pool, NULL, 10000, &c, &err), STATUS_OK);
	return c;
}

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 3, .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	struct pg_conn *c;
	char err[512], change[32];
	const char *v[1];
	PGconn *pq;
	int applied;

	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	if (pgtest_start(&cluster) != 0)
		return -1;
	pq = PQconnectdb(cluster.conninfo);
	if (PQstatus(pq) != CONNECTION_OK ||
	    migrate_apply(pq, &opts, &applied, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(pq));
		PQfinish(pq);
		return -1;
	}
	PQfinish(pq);
	pc.conninfo = cluster.conninfo;
	if (pg_pool_new(&pc, &pool, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(pool, 10000, &perr) != STATUS_OK)
		return -1;
	base_ms = wall_ms();
	w_ms = base_ms - 30 * MIN_MS;
	c = conn();
	add_data();
	add_genai();
	flush_spans(c);
	snprintf(change, sizeof(change), "%" PRId64,
		 (w_ms + 10 * MIN_MS) / 1000);
	v[0] = change;
	PQclear(sql(c,
		    "INSERT INTO model_pricing (provider, model, "
		    "input_usd_per_million, output_usd_per_million, "
		    "effective_from) VALUES "
		    "('openai', 'gpt-test', 1, 2, '-infinity'), "
		    "('openai', 'gpt-test', 10, 20, to_timestamp($1::bigint))",
		    1, v));
	pg_release(c);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_pool_free(pool);
	pgtest_destroy(&cluster);
	return 0;
}

/* ---- argument checks --------------------------------------------------- */

static void
test_bad_arguments(void **state)
{
	struct spanlist_filter f = {.min_duration_ns = -1};
	struct spanlist_key k = {0};
	struct pg_conn *c = conn();
	struct pg_error err;
	struct spanlist_page *p = NULL;

	(void)state;
	assert_int_equal(spanlist_page_send(c, &f, NULL, 0, &err),
			 STATUS_INVALID);
	assert_non_null(strstr(err.client, "limit"));
	assert_int_equal(spanlist_page_send(c, &f, NULL, 201, &err),
			 STATUS_INVALID);
	f.has_range = true;
	f.from_ms = f.to_ms = 1000;
	assert_int_equal(spanlist_page_send(c, &f, NULL, 10, &err),
			 STATUS_INVALID);
	assert_int_equal(spanlist_count_send(c, &f, &err), STATUS_INVALID);
	f.has_range = false;
	f.status = SPANLIST_STATUS_CLIENT_ERROR + 1;
	assert_int_equal(spanlist_page_send(c, &f, NULL, 10, &err),
			 STATUS_INVALID);
	f.status = 0;
	f.order = 2;
	assert_int_equal(spanlist_count_send(c, &f, &err), STATUS_INVALID);
	f.order = 0;
	k.start_nanos = 1000;
	assert_int_equal(spanlist_page_send(c, &f, &k, 10, &err),
			 STATUS_INVALID);
	k.start_nanos = 0;
	k.source = 5;
	assert_int_equal(spanlist_page_send(c, &f, &k, 10, &err),
			 STATUS_INVALID);
	/* nothing was sent: the connection still works */
	assert_int_equal(spanlist_page_send(c, &f, NULL, 1, &err), STATUS_OK);
	assert_int_equal(spanlist_page_recv(c, 1, &p, &err), STATUS_OK);
	assert_int_equal(p->n, 1);
	assert_true(p->more);
	spanlist_page_free(p);
	spanlist_page_free(NULL);
	pg_release(c);
}

/* ---- pages against this test's SQL ------------------------------------- */

struct page_case {
	const char *name;
	struct spanlist_filter f; /* range: in_range true takes the data's */
	bool in_range;
	const char *where; /* this test's terms; "true" for none */
	size_t limits[3];  /* 0 ends */
	size_t want_total; /* the count by hand, as a check on the SQL */
};

#define ANY_DUR .min_duration_ns = -1
#define OUTCOME                                                                \
	"sextant_span_outcome(kind, status_code, http_status_code, "           \
	"rpc_grpc_status_code)"
#define BY_DUR .order = SPANLIST_ORDER_DURATION

static const struct page_case page_cases[] = {
	/* 48 + 5 eBPF-only + 6 GenAI; the 4 eBPF twins and 4 old left out */
	{"everything in range", {ANY_DUR}, true, "true", {1, 7, 200}, 59},
	{"everything in range by duration",
	 {ANY_DUR, BY_DUR},
	 true,
	 "true",
	 {1, 5, 200},
	 59},
	{"every time, shop",
	 {.service = "shop", ANY_DUR},
	 false,
	 "service_name = 'shop'",
	 {2, 200},
	 33},
	{"errors",
	 {.status = SPANLIST_STATUS_ERROR, ANY_DUR},
	 true,
	 OUTCOME " = 1",
	 {1, 4, 0},
	 16},
	{"client errors",
	 {.status = SPANLIST_STATUS_CLIENT_ERROR, ANY_DUR},
	 true,
	 OUTCOME " = 2",
	 {2, 0},
	 3},
	{"not errors by duration",
	 {.status = SPANLIST_STATUS_OK, ANY_DUR, BY_DUR},
	 true,
	 OUTCOME " = 0",
	 {9, 200},
	 40},
	{"at least 3 ms",
	 {.min_duration_ns = 3000000},
	 true,
	 "duration_ns >= 3000000",
	 {4, 200},
	 0},
	{"session sess-1, any time",
	 {.session_id = "sess-1", ANY_DUR},
	 false,
	 "session_id = 'sess-1'",
	 {3, 200},
	 16},
	{"the eBPF service of the twins",
	 {.service = "shop-ebpf", ANY_DUR},
	 true,
	 "service_name = 'shop-ebpf'",
	 {5, 0},
	 0},
	{"nothing",
	 {.service = "nobody", ANY_DUR},
	 true,
	 "service_name = 'nobody'",
	 {5, 0},
	 0},
};

/* row identity as text: trace hex, span hex, source */
static void
key_text(const struct spanlist_key *k, char *out, size_t cap)
{
	size_t o = 0;

	for (int i = 0; i < 16; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", k->trace_id[i]);
	for (int i = 0; i < 8; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", k->span_id[i]);
	snprintf(out + o, cap - o, "%s",
		 k->source == SPANLIST_SOURCE_OTLP ? "otlp" : "ebpf");
}

/* a before b in the order (strictly) */
static bool
precedes(int order, const struct spanlist_key *a, const struct spanlist_key *b)
{
	int c;

	if (order == SPANLIST_ORDER_DURATION &&
	    a->duration_ns != b->duration_ns)
		return a->duration_ns > b->duration_ns;
	if (a->start_us != b->start_us)
		return a->start_us > b->start_us;
	if (a->start_nanos != b->start_nanos)
		return a->start_nanos > b->start_nanos;
	if ((c = memcmp(a->trace_id, b->trace_id, 16)) != 0)
		return c > 0;
	if ((c = memcmp(a->span_id, b->span_id, 8)) != 0)
		return c > 0;
	return a->source < b->source; /* "otlp" > "ebpf" */
}

/* Every page of one case at one limit, through encoded cursors. */
static void
walk(const struct page_case *pc, size_t limit, char (*got)[64], size_t cap,
     size_t *n_got, int64_t *total)
{
	struct spanlist_filter f = pc->f;
	struct spanlist_cursor cur = {0};
	struct spanlist_key prev;
	bool have_cursor = false;
	struct pg_conn *c = conn(), *c2 = conn();
	struct pg_error err;
	size_t pages = 0;

	*n_got = 0;
	if (pc->in_range) {
		f.has_range = true;
		f.from_ms = w_ms - MIN_MS;
		f.to_ms = base_ms + MIN_MS;
	}
	for (;;) {
		struct spanlist_page *p = NULL;
		char text[SPANLIST_CURSOR_MAX];
		int64_t t = -1;

		/* page and count at once, on two connections */
		assert_int_equal(spanlist_page_send(
					 c, &f, have_cursor ? &cur.after : NULL,
					 limit, &err),
				 STATUS_OK);
		assert_int_equal(spanlist_count_send(c2, &f, &err), STATUS_OK);
		assert_int_equal(spanlist_count_recv(c2, &t, &err), STATUS_OK);
		if (spanlist_page_recv(c, limit, &p, &err) != STATUS_OK)
			fail_msg("%s: %s (%s)", pc->name, err.client,
				 err.detail);
		if (pages == 0)
			*total = t;
		assert_int_equal(t, *total);
		assert_true(p->n <= limit);
		for (size_t i = 0; i < p->n; i++) {
			const struct spanlist_key *k = &p->spans[i].key;

			if (*n_got > 0 && !precedes(f.order, &prev, k))
				fail_msg("%s: row %zu out of order", pc->name,
					 *n_got);
			prev = *k;
			assert_true(*n_got < cap);
			key_text(k, got[(*n_got)++], 64);
		}
		pages++;
		if (!p->more) {
			spanlist_page_free(p);
			break;
		}
		assert_int_equal(p->n, limit);
		/* the next page starts after the last row, as a tool would
		 * hand it over: encoded and decoded */
		cur.filter_hash = spanlist_filter_hash(&f);
		cur.order = f.order;
		cur.has_range = f.has_range;
		cur.from_ms = f.from_ms;
		cur.to_ms = f.to_ms;
		cur.seen += p->n;
		cur.after = p->spans[p->n - 1].key;
		assert_int_equal(
			spanlist_cursor_encode(&cur, text, sizeof(text)),
			STATUS_OK);
		memset(&cur, 0, sizeof(cur));
		assert_int_equal(spanlist_cursor_decode(text, &cur), STATUS_OK);
		assert_true(cur.filter_hash == spanlist_filter_hash(&f));
		have_cursor = true;
		spanlist_page_free(p);
		assert_true(pages < 1000);
	}
	pg_release(c);
	pg_release(c2);
}

/* This test's listing: distinct spans by id, the OTLP row preferred,
 * ordered by the exact start in ns. */
static char (*expected(const struct page_case *pc, size_t *n))[64]
{
	char text[2048], from[32], to[32];
	const char *v[2];
	struct pg_conn *c = conn();
	char(*rows)[64];
	PGresult *res;

	snprintf(from, sizeof(from), "%" PRId64, w_ms - MIN_MS);
	snprintf(to, sizeof(to), "%" PRId64, base_ms + MIN_MS);
	v[0] = from;
	v[1] = to;
	snprintf(text, sizeof(text),
		 "SELECT encode(trace_id, 'hex') || encode(span_id, 'hex') || "
		 "source FROM spans WHERE (%s) AND (NOT $1::bigint <> 0 OR "
		 "(start_time >= to_timestamp($1::bigint / 1000.0) AND "
		 "start_time < to_timestamp($2::bigint / 1000.0))) AND "
		 "(trace_id, span_id, source) IN (SELECT DISTINCT ON "
		 "(trace_id, span_id) trace_id, span_id, source FROM spans "
		 "ORDER BY trace_id, span_id, source DESC) ORDER BY %s "
		 "sextant_unix_nano(start_time, start_nanos) DESC, "
		 "trace_id DESC, span_id DESC, source DESC",
		 pc->where,
		 pc->f.order == SPANLIST_ORDER_DURATION ? "duration_ns DESC,"
							: "");
	if (!pc->in_range)
		v[0] = "0";
	res = sql(c, text, 2, v);
	*n = (size_t)PQntuples(res);
	rows = calloc(*n + 1, sizeof(*rows));
	assert_non_null(rows);
	for (size_t i = 0; i < *n; i++)
		snprintf(rows[i], sizeof(rows[i]), "%s",
			 PQgetvalue(res, (int)i, 0));
	PQclear(res);
	pg_release(c);
	return rows;
}

static void
test_pages(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(page_cases); i++) {
		const struct page_case *pc = &page_cases[i];
		size_t n_want;
		char(*want)[64] = expected(pc, &n_want);

		if (pc->want_total > 0 && n_want != pc->want_total)
			fail_msg("%s: this test's SQL has %zu rows, want %zu",
				 pc->name, n_want, pc->want_total);
		for (size_t l = 0; l < 3 && pc->limits[l] > 0; l++) {
			char(*got)[64] = calloc(n_want + 8, sizeof(*got));
			size_t n_got = 0;
			int64_t total = -1;

			assert_non_null(got);
			walk(pc, pc->limits[l], got, n_want + 8, &n_got,
			     &total);
			if (total != (int64_t)n_want || n_got != n_want)
				fail_msg("%s, limit %zu: %zu rows, total "
					 "%" PRId64 ", want %zu",
					 pc->name, pc->limits[l], n_got, total,
					 n_want);
			for (size_t r = 0; r < n_got; r++)
				if (strcmp(got[r], want[r]) != 0)
					fail_msg(
						"%s, limit %zu: row %zu is %s, "
						"want %s",
						pc->name, pc->limits[l], r,
						got[r], want[r]);
			free(got);
		}
		free(want);
	}
}

/* ---- single queries ---------------------------------------------------- */

/* The one page of f (at most 200 rows). */
static struct spanlist_page *
one_page(const struct spanlist_filter *f)
{
	struct spanlist_page *p = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	assert_int_equal(spanlist_page_send(c, f, NULL, 200, &err), STATUS_OK);
	if (spanlist_page_recv(c, 200, &p, &err) != STATUS_OK)
		fail_msg("%s (%s)", err.client, err.detail);
	pg_release(c);
	assert_false(p->more);
	return p;
}

static void
test_trace_and_dedup(void **state)
{
	struct spanlist_filter f = {.has_trace_id = true, ANY_DUR};
	struct spanlist_page *p;
	size_t twins = 0;

	(void)state;
	/* trace 2: 8 spans, the 4 eBPF saw too marked, OTLP rows */
	trace_id_of(2, f.trace_id);
	p = one_page(&f);
	assert_int_equal(p->n, 8);
	for (size_t i = 0; i < p->n; i++) {
		const struct spanlist_span *s = &p->spans[i];

		assert_int_equal(s->key.source, SPANLIST_SOURCE_OTLP);
		assert_memory_equal(s->key.trace_id, f.trace_id, 16);
		twins += s->also_ebpf;
		/* span ids 1..4 are the twins */
		assert_int_equal(s->also_ebpf, s->key.span_id[7] <= 4);
		assert_string_not_equal(s->service, "shop-ebpf");
		assert_false(s->genai);
		assert_false(s->priced);
	}
	assert_int_equal(twins, 4);
	spanlist_page_free(p);

	/* trace 3: all at one start, in span id order (descending) */
	trace_id_of(3, f.trace_id);
	p = one_page(&f);
	assert_int_equal(p->n, 8);
	for (size_t i = 0; i < p->n; i++) {
		const struct spanlist_span *s = &p->spans[i];

		assert_int_equal(s->key.span_id[7], 8 - i);
		assert_int_equal(s->key.start_nanos, 456);
		assert_int_equal(s->start_ns,
				 (uint64_t)(w_ms + 180 * SEC_MS) * 1000000u +
					 456);
		assert_int_equal(s->key.start_us * 1000 + s->key.start_nanos,
				 (int64_t)s->start_ns);
		assert_string_equal(s->name, span_names[7 - i]);
		assert_string_equal(s->service, i % 2 == 0 ? "cart" : "shop");
		if (i == 0) {
			assert_int_equal(s->status, 2);
			assert_string_equal(s->status_message, "boom 3");
		} else {
			assert_null(s->status_message);
			assert_int_equal(s->status, i == 1 ? 1 : 0);
		}
		assert_int_equal(s->has_parent, i < 7);
		assert_string_equal(s->session_id ? s->session_id : "-", "-");
	}
	spanlist_page_free(p);

	/* trace 7: eBPF only, listed as eBPF */
	trace_id_of(7, f.trace_id);
	p = one_page(&f);
	assert_int_equal(p->n, 5);
	for (size_t i = 0; i < p->n; i++) {
		assert_int_equal(p->spans[i].key.source, SPANLIST_SOURCE_EBPF);
		assert_false(p->spans[i].also_ebpf);
	}
	spanlist_page_free(p);
}

static void
test_genai_costs(void **state)
{
	struct spanlist_filter f = {.session_id = "sess-g", ANY_DUR};
	struct spanlist_page *p;

	(void)state;
	p = one_page(&f);
	assert_int_equal(p->n, ARRAY_LEN(genai_calls));
	for (size_t i = 0; i < p->n; i++) {
		const struct spanlist_span *s = &p->spans[i];
		const struct genai_call *g = NULL;

		for (size_t k = 0; k < ARRAY_LEN(genai_calls); k++)
			if (genai_calls[k].span == s->key.span_id[7])
				g = &genai_calls[k];
		assert_non_null(g);
		assert_true(s->genai);
		assert_string_equal(s->provider, "openai");
		assert_string_equal(s->operation, g->operation);
		if (g->want_model != NULL)
			assert_string_equal(s->model, g->want_model);
		else
			assert_null(s->model);
		assert_int_equal(s->input_tokens, g->in);
		assert_int_equal(s->output_tokens, g->out);
		if (g->want_usd < 0) {
			if (s->priced)
				fail_msg("span %u: priced at %g, want unknown",
					 g->span, s->cost_usd);
		} else {
			if (!s->priced ||
			    fabs(s->cost_usd - g->want_usd) > 1e-9)
				fail_msg("span %u: cost %g (priced %d), want "
					 "%g",
					 g->span, s->cost_usd, s->priced,
					 g->want_usd);
		}
	}
	spanlist_page_free(p);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_cursor_round_trip),
		cmocka_unit_test(test_cursor_encode_invalid),
		cmocka_unit_test(test_cursor_decode_invalid),
		cmocka_unit_test(test_filter_hash),
	};
	const struct CMUnitTest store[] = {
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_trace_and_dedup),
		cmocka_unit_test(test_genai_costs),
	};
	int failed = cmocka_run_group_tests_name("spanlist", pure, NULL, NULL);

	failed += cmocka_run_group_tests_name("spanlist_pg", store, group_setup,
					      group_teardown);
	return failed;
}

/*
 * test_spanquery.c - unit tests for lib/telemetry/spanquery: protocol names and
 * "did you mean" suggestions (pure), then every query against a migrated
 * throwaway PostgreSQL holding spans written with lib/otlp/store: per-call
 * metrics on the exact path and on the rollup path (hour and minute rows,
 * raw partial minutes at the ends, dirty hours read from their minutes and
 * dirty minutes raw) compared with percentile_cont computed
 * by this test's own SQL, each filter, sources, trace ids, trace spans and
 * service names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hex.h"
#include "base/log.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"
#include "telemetry/rollup.h"
#include "telemetry/spanquery.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN_MS	     (60LL * 1000)
#define HOUR_MS	     (3600LL * 1000)

/* ---- protocol names ---------------------------------------------------- */

static void
test_protocol_names(void **state)
{
	static const struct {
		int protocol;
		const char *name;
	} names[] = {
		{SPANQUERY_HTTP, "http"},
		{SPANQUERY_GRPC, "grpc"},
		{SPANQUERY_SQL, "sql"},
	};
	static const char *const unknown[] = {"",   "HTTP", "Grpc", "https",
					      "sq", "sql ", "auto"};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		assert_string_equal(spanquery_protocol_name(names[i].protocol),
				    names[i].name);
		assert_int_equal(spanquery_protocol_parse(names[i].name),
				 names[i].protocol);
	}
	assert_null(spanquery_protocol_name(-1));
	assert_null(spanquery_protocol_name(SPANQUERY_PROTOCOLS));
	assert_null(spanquery_protocol_name(1000));
	for (size_t i = 0; i < ARRAY_LEN(unknown); i++)
		assert_int_equal(spanquery_protocol_parse(unknown[i]), -1);
	assert_int_equal(spanquery_protocol_parse(NULL), -1);
}

/* ---- suggestions ------------------------------------------------------- */

#define SUGGEST_MAX_NAMES 12

static const struct {
	const char *what;
	const char *name;
	const char *names[SUGGEST_MAX_NAMES];
	size_t max;
	/* NULL-terminated; in this order unless any_order */
	const char *want[SUGGEST_MAX_NAMES];
	bool any_order;
} suggest_cases[] = {
	{"exact but for case comes first",
	 "Payments",
	 {"checkout", "payment-service", "payments"},
	 5,
	 {"payments", "payment-service"}},
	{"the name itself is not suggested",
	 "payments",
	 {"payments", "payment-service", "checkout"},
	 5,
	 {"payment-service"}},
	/* edit distance 3 (payments) against 4 (payment-service): which
	 * one a person meant is a matter of taste, both must come */
	{"abbreviation",
	 "payment-svc",
	 {"checkout", "payment-service", "payments"},
	 5,
	 {"payments", "payment-service"},
	 true},
	{"prefix of two names",
	 "payment",
	 {"checkout", "payment-service", "payments"},
	 5,
	 {"payments", "payment-service"}},
	{"contains a name",
	 "payments-service",
	 {"payments", "checkout", "payment-service"},
	 5,
	 {"payment-service", "payments"}},
	{"contained in a longer name",
	 "inventory",
	 {"checkout", "inventory-api", "cart"},
	 5,
	 {"inventory-api"}},
	{"one typo",
	 "chekout",
	 {"payments", "checkout", "cart"},
	 5,
	 {"checkout"}},
	{"transposed letters",
	 "chekcout",
	 {"payments", "checkout", "cart"},
	 5,
	 {"checkout"}},
	{"typo in upper case",
	 "CHECKOTU",
	 {"payments", "checkout", "cart"},
	 5,
	 {"checkout"}},
	{"nothing close",
	 "inventory",
	 {"payments", "checkout", "cart"},
	 5,
	 {NULL}},
	{"nothing close, short",
	 "zq",
	 {"payments", "checkout", "cart"},
	 5,
	 {NULL}},
	{"no names", "checkout", {NULL}, 5, {NULL}},
	{"max 0", "chekout", {"checkout"}, 0, {NULL}},
	{"max 1 keeps the best",
	 "payment",
	 {"payment-service", "payments", "checkout"},
	 1,
	 {"payments"}},
};

static size_t
count_names(const char *const *names, size_t cap)
{
	size_t n = 0;

	while (n < cap && names[n] != NULL)
		n++;
	return n;
}

/* A service as people name it: resolved only when one name fits. */
static void
test_resolve(void **state)
{
	static const char *const names[] = {
		"api-gateway",		"checkout", "payments", "payments-api",
		"notification_service", "auth",	    "fraud",	"cart-svc"};
	static const struct {
		const char *given;
		const char *want; /* NULL: none */
	} cases[] = {
		{"api gateway", "api-gateway"},
		{"API-Gateway", "api-gateway"},
		{"apigateway", "api-gateway"},
		{"api_gateway", "api-gateway"},
		{"the gateway service", "api-gateway"},
		{"gateway", "api-gateway"},
		{"the checkout service", "checkout"},
		{"Checkout", "checkout"},
		{"notifications", NULL}, /* not a word of any name */
		{"notification", "notification_service"},
		{"the cart", "cart-svc"},
		{"cart service", "cart-svc"},
		/* payments and payments-api both read "payments" */
		{"payments", NULL},
		{"the payments api", NULL},
		{"pay", NULL}, /* a prefix is no word */
		{"the", NULL},
		{"", NULL},
		{"---", NULL},
		{"fraud detection", NULL}, /* a word of no name */
		{"au", NULL},		   /* words under three letters */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t k = spanquery_resolve(cases[i].given, names,
					     sizeof(names) / sizeof(names[0]));
		const char *got = k == SPANQUERY_NO_NAME ? NULL : names[k];

		if ((got == NULL) != (cases[i].want == NULL) ||
		    (got != NULL && strcmp(got, cases[i].want) != 0))
			fail_msg("\"%s\": got %s, want %s", cases[i].given,
				 got ? got : "none",
				 cases[i].want ? cases[i].want : "none");
	}
}

static void
test_suggest_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < ARRAY_LEN(suggest_cases); c++) {
		const char *out[SUGGEST_MAX_NAMES + 1];
		size_t n_names =
			count_names(suggest_cases[c].names, SUGGEST_MAX_NAMES);
		size_t n_want =
			count_names(suggest_cases[c].want, SUGGEST_MAX_NAMES);
		size_t got;

		out[suggest_cases[c].max] = "sentinel";
		got = spanquery_suggest(suggest_cases[c].name,
					suggest_cases[c].names, n_names, out,
					suggest_cases[c].max);
		if (got != n_want)
			fail_msg("%s: %zu suggestions, want %zu (first: %s)",
				 suggest_cases[c].what, got, n_want,
				 got > 0 ? out[0] : "-");
		for (size_t i = 0; i < got; i++) {
			size_t k = i;

			if (suggest_cases[c].any_order)
				for (k = 0; k < n_want; k++)
					if (strcmp(out[i],
						   suggest_cases[c].want[k]) ==
					    0)
						break;
			if (k == n_want ||
			    strcmp(out[i], suggest_cases[c].want[k]) != 0)
				fail_msg("%s: #%zu is %s, want %s",
					 suggest_cases[c].what, i, out[i],
					 suggest_cases[c].want[i]);
			for (size_t j = 0; j < i; j++)
				assert_ptr_not_equal(out[i], out[j]);
		}
		/* nothing written past max */
		assert_string_equal(out[suggest_cases[c].max], "sentinel");
	}
}

/* Many equally close names: at most max, each once, each a real name. */
static void
test_suggest_max_and_duplicates(void **state)
{
	static const char *const names[] = {"svc-a", "svc-b", "svc-c", "svc-d",
					    "svc-e", "svc-f", "svc-g", "svc-h",
					    "svc-i", "svc-j", "other"};
	const char *out[16];

	(void)state;
	for (size_t max = 1; max <= 6; max++) {
		size_t got = spanquery_suggest("svc-x", names, ARRAY_LEN(names),
					       out, max);

		assert_int_equal(got, max);
		for (size_t i = 0; i < got; i++) {
			assert_int_equal(strncmp(out[i], "svc-", 4), 0);
			for (size_t j = 0; j < i; j++)
				assert_ptr_not_equal(out[i], out[j]);
		}
	}
	/* more room than matches: every match once, never more than max */
	{
		size_t got = spanquery_suggest("svc-x", names, ARRAY_LEN(names),
					       out, 16);

		assert_true(got >= 1 && got <= 10);
		for (size_t i = 0; i < got; i++) {
			assert_string_not_equal(out[i], "other");
			for (size_t j = 0; j < i; j++)
				assert_ptr_not_equal(out[i], out[j]);
		}
	}
}

/* Names past the compared length: no overflow, still sensible. */
static void
test_suggest_long_names(void **state)
{
	static char a[301], b[301], c[301], query[301];
	const char *names[4], *out[4];
	size_t got;

	(void)state;
	memset(a, 'x', 300);
	memset(b, 'x', 300);
	memset(c, 'y', 300);
	memset(query, 'x', 300);
	a[299] = 'a'; /* differs from the query at its very end */
	b[150] = 'b';
	names[0] = a;
	names[1] = "checkout";
	names[2] = c;
	names[3] = b;
	got = spanquery_suggest(query, names, 4, out, 4);
	assert_int_equal(got, 2);
	for (size_t i = 0; i < got; i++)
		assert_true(out[i] == a || out[i] == b);
	/* a long query with a short close name, and the other way round */
	got = spanquery_suggest(a, (const char *const[]){"xxxx", "zzz"}, 2, out,
				4);
	assert_int_equal(got, 1);
	assert_string_equal(out[0], "xxxx");
	got = spanquery_suggest("xxxx", (const char *const[]){a, c}, 2, out, 4);
	assert_int_equal(got, 1);
	assert_ptr_equal(out[0], a);
}

/*
 * "Only reasonable matches": a name that shares no character with the
 * query is not close, however short both are.  Lists every mismatch.
 */
static void
test_suggest_short_names(void **state)
{
	static const struct {
		const char *name;
		const char *names[3];
	} cases[] = {
		{"q", {"ab", "xy", "db"}},
		{"", {"ab", "xy", "db"}},
		{"zz", {"ab", "xy", "db"}},
	};
	size_t bad = 0;

	(void)state;
	for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
		const char *out[3];
		size_t got = spanquery_suggest(cases[c].name, cases[c].names, 3,
					       out, 3);

		if (got != 0) {
			print_error("suggest(\"%s\", {ab, xy, db}): got %zu "
				    "(first \"%s\"), want 0\n",
				    cases[c].name, got, out[0]);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* ---- the store --------------------------------------------------------- */

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static int64_t base_ms; /* wall clock when the data was written */
static int64_t hour_ms; /* base_ms floored to the hour */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A call template: count spans of one kind, one after the other. */
struct call {
	const char *service;
	int source; /* enum otlp_source */
	int kind;
	const char *http_method, *http_route, *url_path;
	int http_status; /* 0: absent */
	const char *rpc_system, *rpc_service, *rpc_method;
	int grpc_status; /* used when rpc_system is set */
	bool no_grpc_status;
	const char *db_system, *db_operation, *db_table;
	int status_code;
	int count;
	uint64_t min_ns, max_ns; /* durations, log-uniform; 0: 1 to 400 ms */
};

static struct otlp_span *spans_buf;
static size_t spans_n, spans_cap;
static uint32_t next_id = 1;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double
uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static struct otlp_span *
new_span(void)
{
	struct otlp_span *s;
	uint32_t id = next_id++;

	if (spans_n == spans_cap) {
		spans_cap = spans_cap ? spans_cap * 2 : 256;
		spans_buf = realloc(spans_buf, spans_cap * sizeof(*spans_buf));
		assert_non_null(spans_buf);
	}
	s = &spans_buf[spans_n++];
	memset(s, 0, sizeof(*s));
	s->trace_id[0] = 0xc0;
	s->trace_id[12] = (uint8_t)(id >> 24);
	s->trace_id[13] = (uint8_t)(id >> 16);
	s->trace_id[14] = (uint8_t)(id >> 8);
	s->trace_id[15] = (uint8_t)id;
	memcpy(s->span_id + 4, s->trace_id + 12, 4);
	s->name = "call";
	s->http_status = -1;
	s->grpc_status = -1;
	s->input_tokens = -1;
	s->output_tokens = -1;
	return s;
}

/* Appends t's spans from *cursor_ms on, step_ms apart (sub-ms parts
 * varied so that no two start together). */
static void
add_calls(const struct call *t, int64_t *cursor_ms, int64_t step_ms)
{
	double lo = log(t->min_ns ? (double)t->min_ns : 1e6);
	double hi = log(t->max_ns ? (double)t->max_ns : 4e8);

	for (int i = 0; i < t->count; i++) {
		struct otlp_span *s = new_span();
		uint64_t d = (uint64_t)exp(lo + (hi - lo) * uniform());

		s->service_name = t->service;
		s->source = (enum otlp_source)t->source;
		s->kind = t->kind;
		s->start_unix_nano = (uint64_t)*cursor_ms * 1000000u +
				     (uint64_t)(spans_n % 997) * 1009u + 123u;
		s->end_unix_nano = s->start_unix_nano + d;
		s->http_method = t->http_method;
		s->http_route = t->http_route;
		s->url_path = t->url_path;
		s->http_status = t->http_status > 0 ? t->http_status : -1;
		s->rpc_system = t->rpc_system;
		s->rpc_service = t->rpc_service;
		s->rpc_method = t->rpc_method;
		if (t->rpc_system != NULL && !t->no_grpc_status)
			s->grpc_status = t->grpc_status;
		s->db_system = t->db_system;
		s->db_operation = t->db_operation;
		s->db_table = t->db_table;
		s->status_code = t->status_code;
		*cursor_ms += step_ms;
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

static void
ts_text(int64_t ms, char *buf, size_t cap)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d.%03d+00",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	assert_int_equal(pg_acquire(pool, NULL, 10000, &c, &err), STATUS_OK);
	return c;
}

/* ---- the data ---------------------------------------------------------- */

#define OT OTLP_SOURCE_OTLP
#define EB OTLP_SOURCE_EBPF

/*
 * "checkout": every kind of call and non-call, in the hour Q (6 h ago),
 * for the filters on every path.  Counts here are the literals of the
 * filter cases below.
 */
static const struct call checkout_calls[] = {
	{"checkout", OT, 2, "GET", "/api/pay", NULL, 200, .count = 20},
	{"checkout", OT, 2, "get", "/api/pay", NULL, 503, .count = 3},
	{"checkout", OT, 2, "POST", "/api/pay", NULL, 201, .count = 6},
	{"checkout", OT, 2, "GET", "/api/refund", NULL, 404, .count = 4},
	{"checkout", OT, 2, "GET", NULL, "/health", 200, .count = 3},
	{"checkout", OT, 2, "GET", .count = 2}, /* no route, no status */
	/* gRPC server spans that also carry an HTTP method: gRPC only */
	{"checkout", OT, 2, "POST", .rpc_system = "grpc",
	 .rpc_service = "pay.Payments", .rpc_method = "Charge",
	 .grpc_status = 0, .count = 10},
	{"checkout", OT, 2, .rpc_system = "grpc", .rpc_service = "pay.Payments",
	 .rpc_method = "Charge", .grpc_status = 14, .count = 3},
	{"checkout", OT, 2, .rpc_system = "grpc", .rpc_service = "pay.Payments",
	 .rpc_method = "Refund", .no_grpc_status = true, .count = 2},
	{"checkout", OT, 3, .db_system = "postgresql", .db_operation = "select",
	 .db_table = "orders", .count = 8},
	{"checkout", OT, 3, .db_system = "postgresql", .db_operation = "INSERT",
	 .db_table = "orders", .status_code = 2, .count = 2},
	{"checkout", OT, 3, .db_system = "postgresql", .db_operation = "SELECT",
	 .status_code = 1, .count = 3},
	/* not calls: internal, HTTP client, bare server, gRPC client */
	{"checkout", OT, 1, "GET", "/api/pay", NULL, 200, .count = 2},
	{"checkout", OT, 3, "GET", "/api/pay", NULL, 500, .count = 2},
	{"checkout", OT, 2, .count = 2},
	{"checkout", OT, 3, .rpc_system = "grpc", .rpc_service = "pay.Payments",
	 .rpc_method = "Charge", .grpc_status = 2, .count = 1},
	/* the same route seen by eBPF, and another service */
	{"checkout", EB, 2, "GET", "/api/pay", NULL, 200, .count = 4},
	{"checkout", EB, 2, "GET", "/api/pay", NULL, 500, .count = 1},
	{"checkout-v2", OT, 2, "GET", "/api/pay", NULL, 200, .count = 3},
};

/* "ledger": 3 whole hours, 5 to 3 h ago, for the rollup path. */
static const struct call ledger_http = {
	"ledger", OT,  2,	   "GET",	    "/ledger",
	NULL,	  200, .count = 1, .min_ns = 50000, .max_ns = 3000000000ull};
static const struct call ledger_http_err = {
	"ledger", OT,  2,	   "GET",	    "/ledger",
	NULL,	  503, .count = 1, .min_ns = 50000, .max_ns = 3000000000ull};
static const struct call ledger_sql = {"ledger",
				       OT,
				       3,
				       .db_system = "postgresql",
				       .db_operation = "UPDATE",
				       .db_table = "accounts",
				       .count = 1,
				       .min_ns = 100000,
				       .max_ns = 20000000};
static const struct call ledger_sql_err = {"ledger",
					   OT,
					   3,
					   .db_system = "postgresql",
					   .db_operation = "UPDATE",
					   .db_table = "accounts",
					   .status_code = 2,
					   .count = 1,
					   .min_ns = 100000,
					   .max_ns = 20000000};

/* "ghost": rolled up, then deleted from spans (the rollup keeps them). */
static const struct call ghost_calls[] = {
	{"ghost", OT, 2, "GET", "/boo", NULL, 200, .count = 5},
};

/* "cart": both sources, 40 minutes ago (minute rows). */
static const struct call cart_calls[] = {
	{"cart", OT, 2, "GET", "/cart", NULL, 200, .count = 9},
	{"cart", OT, 2, "GET", "/cart", NULL, 502, .count = 1},
	{"cart", EB, 2, "GET", "/cart", NULL, 200, .count = 5,
	 .min_ns = 2000000, .max_ns = 900000000},
	{"cart", EB, 2, "GET", "/cart", NULL, 500, .count = 2},
	{"Zeta-svc", OT, 1, .count = 1},
};

/* Trace ids: T1..T4, starting 20 minutes ago (W). */
static uint8_t trace_id_of[5][16];

struct trace_span {
	int trace;	     /* 1..4 */
	unsigned id, parent; /* span ids; parent 0: none */
	int source;
	const char *service, *name;
	int64_t start_us; /* from W */
	uint64_t dur_ns;
	int kind, status;
	const char *status_message;
};

static const struct trace_span trace_spans[] = {
	{1, 0x11, 0, OT, "tr-front", "GET /a", 0, 50000000, 2, 0, NULL},
	{1, 0x12, 0x11, OT, "tr-back", "SELECT", 5000, 20000000, 3, 2, "boom"},
	{1, 0x11, 0, EB, "tr-front", "GET /a (ebpf)", 0, 49000000, 2, 0, NULL},
	{2, 0x21, 0, OT, "tr-front", "GET /b", 60000000, 500000000, 2, 1, NULL},
	{2, 0x22, 0x21, OT, "tr-back", "GET /c", 60100000, 10000000, 3, 0,
	 NULL},
	{3, 0x31, 0, OT, "tr-front", "GET /d", 120000000, 5000000, 2, 0, NULL},
	{4, 0x41, 0, OT, "tr-back", "cron", 30000000, 1000000000, 1, 0, NULL},
};

static int64_t trace_w_ms; /* W */

static uint64_t
trace_start_ns(const struct trace_span *t)
{
	return (uint64_t)trace_w_ms * 1000000u + (uint64_t)t->start_us * 1000u +
	       789u;
}

static void
add_traces(void)
{
	for (int t = 1; t <= 4; t++) {
		memset(trace_id_of[t], 0, 16);
		memset(trace_id_of[t], 0x10 * t + t, 4);
		trace_id_of[t][15] = (uint8_t)t;
	}
	for (size_t i = 0; i < ARRAY_LEN(trace_spans); i++) {
		const struct trace_span *t = &trace_spans[i];
		struct otlp_span *s = new_span();

		memcpy(s->trace_id, trace_id_of[t->trace], 16);
		memset(s->span_id, 0, 8);
		s->span_id[7] = (uint8_t)t->id;
		if (t->parent != 0) {
			s->has_parent = true;
			s->parent_span_id[7] = (uint8_t)t->parent;
		}
		s->source = (enum otlp_source)t->source;
		s->service_name = t->service;
		s->name = t->name;
		s->start_unix_nano = trace_start_ns(t);
		s->end_unix_nano = s->start_unix_nano + t->dur_ns;
		s->kind = t->kind;
		s->status_code = t->status;
		s->status_message = t->status_message;
	}
}

/* Moves the minute marks out of the way of refresh (older than 60 s). */
static void
age_minute_marks(struct pg_conn *c)
{
	PQclear(sql(c,
		    "WITH d AS (DELETE FROM span_rollup_minute_dirty RETURNING "
		    "period) INSERT INTO span_rollup_minute_dirty (period, "
		    "slot) SELECT DISTINCT period, 0 FROM d",
		    0, NULL));
}

/* Moves every dirty mark out of the way of refresh (older than 60 s). */
static void
age_dirty_marks(struct pg_conn *c)
{
	PQclear(sql(
		c,
		"WITH d AS (DELETE FROM span_rollup_dirty RETURNING period) "
		"INSERT INTO span_rollup_dirty (period, slot) "
		"SELECT DISTINCT period, 0 FROM d",
		0, NULL));
	age_minute_marks(c);
}

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 3, .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	struct pg_conn *c;
	char err[512];
	PGconn *pq;
	int applied, done = -1, pending = -1;
	int64_t cur;

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
	hour_ms = base_ms - base_ms % HOUR_MS;
	c = conn();
	cur = hour_ms - 6 * HOUR_MS + 10 * MIN_MS;
	for (size_t i = 0; i < ARRAY_LEN(checkout_calls); i++)
		add_calls(&checkout_calls[i], &cur, 2000);
	flush_spans(c);
	for (int h = 5; h >= 3; h--) {
		cur = hour_ms - h * HOUR_MS + 5000;
		for (int i = 0; i < 100; i++)
			add_calls(i % 10 == 9 ? &ledger_http_err : &ledger_http,
				  &cur, 35000);
		cur = hour_ms - h * HOUR_MS + 7000;
		for (int i = 0; i < 30; i++)
			add_calls(i % 7 == 6 ? &ledger_sql_err : &ledger_sql,
				  &cur, 110000);
	}
	flush_spans(c);
	cur = hour_ms - 5 * HOUR_MS + 20 * MIN_MS;
	add_calls(&ghost_calls[0], &cur, 1000);
	flush_spans(c);
	cur = base_ms - 40 * MIN_MS;
	for (size_t i = 0; i < ARRAY_LEN(cart_calls); i++)
		add_calls(&cart_calls[i], &cur, 3000);
	flush_spans(c);
	trace_w_ms = base_ms - 20 * MIN_MS;
	add_traces();
	flush_spans(c);

	age_dirty_marks(c);
	if (rollup_refresh(c, 0, &done, &pending, &perr) != STATUS_OK) {
		fprintf(stderr, "rollup_refresh: %s %s\n", perr.client,
			perr.detail);
		pg_release(c);
		return -1;
	}
	/* Q, the three ledger hours (ghost shares the first) at least; a
	 * recent hour may settle meanwhile, so pending is not checked */
	if (done < 4) {
		fprintf(stderr, "rollup_refresh: done %d pending %d\n", done,
			pending);
		pg_release(c);
		return -1;
	}
	PQclear(sql(c, "DELETE FROM spans WHERE service_name = 'ghost'", 0,
		    NULL));
	pg_release(c);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_pool_free(pool);
	free(spans_buf);
	pgtest_destroy(&cluster);
	return 0;
}

/* ---- metrics: helpers -------------------------------------------------- */

/* One expected row; where selects its spans in this test's own terms
 * (raw span columns, not the span_calls view). */
struct want_row {
	int protocol;
	const char *k1, *k2;
	uint64_t requests, errors; /* requests 0: take SQL's counts only */
	const char *where;
};

/* Errors per protocol, as the issue defines them. */
static const char *const error_sql[SPANQUERY_PROTOCOLS] = {
	"http_status_code >= 500",
	"coalesce(rpc_grpc_status_code, 0) <> 0",
	"status_code = 2",
};

struct expect {
	uint64_t requests, errors;
	double p_ms[3];
};

static void
parse_pct(const char *s, double out[3])
{
	char *end;

	assert_int_equal(*s++, '{');
	for (int i = 0; i < 3; i++) {
		out[i] = strtod(s, &end);
		assert_true(end != s);
		assert_int_equal(*end, i < 2 ? ',' : '}');
		s = end + 1;
	}
}

static void
sql_expect(struct pg_conn *c, const char *service, const char *source,
	   int64_t from_ms, int64_t to_ms, const struct want_row *w,
	   struct expect *e)
{
	char text[2048], from[48], to[48];
	const char *v[4] = {service, source, from, to};
	PGresult *res;

	ts_text(from_ms, from, sizeof(from));
	ts_text(to_ms, to, sizeof(to));
	snprintf(text, sizeof(text),
		 "SELECT count(*), count(*) FILTER (WHERE %s), "
		 "coalesce(percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN "
		 "GROUP (ORDER BY duration_ns), '{0,0,0}')::text "
		 "FROM spans WHERE service_name = $1 AND source = $2 "
		 "AND start_time >= $3::timestamptz "
		 "AND start_time < $4::timestamptz AND (%s)",
		 error_sql[w->protocol], w->where);
	res = sql(c, text, 4, v);
	e->requests = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
	e->errors = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
	parse_pct(PQgetvalue(res, 0, 2), e->p_ms);
	for (int i = 0; i < 3; i++)
		e->p_ms[i] /= 1e6;
	PQclear(res);
}

/*
 * The metrics of f on the rollup path (as of now) or on the exact one: as
 * of f->from_ms, when no minute of the range has settled, which is the
 * path of every range without a whole settled minute.
 */
static struct spanquery_metrics *
metrics(struct pg_conn *c, const char *source, const struct spanquery_filter *f,
	bool want_rollup)
{
	struct spanquery_metrics *m = NULL;
	struct pg_error err;
	bool rollup = !want_rollup;
	int64_t now = want_rollup ? wall_ms() : f->from_ms;

	if (spanquery_metrics_send(c, source, f, now, &rollup, &err) !=
	    STATUS_OK)
		fail_msg("metrics_send: %s (%s)", err.client, err.detail);
	assert_int_equal(rollup, want_rollup);
	if (spanquery_metrics_recv(c, rollup, &m, &err) != STATUS_OK)
		fail_msg("metrics_recv: %s (%s)", err.client, err.detail);
	assert_non_null(m);
	assert_int_equal(m->rollup, want_rollup);
	assert_false(m->truncated);
	return m;
}

static void
print_rows(const struct spanquery_metrics *m)
{
	for (size_t i = 0; i < m->n; i++)
		print_error("  %s \"%s\" \"%s\" %llu/%llu\n",
			    spanquery_protocol_name(m->rows[i].protocol),
			    m->rows[i].k1, m->rows[i].k2,
			    (unsigned long long)m->rows[i].requests,
			    (unsigned long long)m->rows[i].errors);
}

static bool
close_to(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want) + 1e-9;
}

/*
 * m holds exactly the rows w[0..n): counts equal to SQL's (and to the
 * literals), percentiles equal to percentile_cont (within ROLLUP_ALPHA on
 * the rollup path).
 */
static void
check_rows(struct pg_conn *c, const char *what,
	   const struct spanquery_metrics *m, const char *service,
	   const char *source, int64_t from_ms, int64_t to_ms,
	   const struct want_row *w, size_t n)
{
	double rel = m->rollup ? ROLLUP_ALPHA * (1 + 1e-9) : 1e-12;

	if (m->n != n) {
		print_rows(m);
		fail_msg("%s: %zu rows, want %zu", what, m->n, n);
	}
	for (size_t i = 0; i < n; i++) {
		const struct spanquery_row *r = NULL;
		struct expect e;

		for (size_t j = 0; j < m->n && r == NULL; j++)
			if (m->rows[j].protocol == w[i].protocol &&
			    strcmp(m->rows[j].k1, w[i].k1) == 0 &&
			    strcmp(m->rows[j].k2, w[i].k2) == 0)
				r = &m->rows[j];
		if (r == NULL) {
			print_rows(m);
			fail_msg("%s: no row %s \"%s\" \"%s\"", what,
				 spanquery_protocol_name(w[i].protocol),
				 w[i].k1, w[i].k2);
		}
		sql_expect(c, service, source, from_ms, to_ms, &w[i], &e);
		if (w[i].requests != 0 &&
		    (e.requests != w[i].requests || e.errors != w[i].errors))
			fail_msg("%s: the test's SQL for \"%s\" counts "
				 "%llu/%llu,"
				 " the data %llu/%llu",
				 what, w[i].k1, (unsigned long long)e.requests,
				 (unsigned long long)e.errors,
				 (unsigned long long)w[i].requests,
				 (unsigned long long)w[i].errors);
		if (r->requests != e.requests || r->errors != e.errors)
			fail_msg(
				"%s: \"%s\" \"%s\": %llu requests %llu errors, "
				"want %llu %llu",
				what, w[i].k1, w[i].k2,
				(unsigned long long)r->requests,
				(unsigned long long)r->errors,
				(unsigned long long)e.requests,
				(unsigned long long)e.errors);
		if (!close_to(r->p50_ms, e.p_ms[0], rel) ||
		    !close_to(r->p95_ms, e.p_ms[1], rel) ||
		    !close_to(r->p99_ms, e.p_ms[2], rel))
			fail_msg("%s: \"%s\" \"%s\": p50/p95/p99 %.9g %.9g "
				 "%.9g ms, percentile_cont %.9g %.9g %.9g",
				 what, w[i].k1, w[i].k2, r->p50_ms, r->p95_ms,
				 r->p99_ms, e.p_ms[0], e.p_ms[1], e.p_ms[2]);
	}
}

/* ---- metrics: filters on every path ------------------------------------ */

#define HTTP_CALL "kind = 2 AND rpc_system IS NULL AND http_method IS NOT NULL"
#define W_PAY_GET                                                              \
	HTTP_CALL " AND http_route = '/api/pay' AND upper(http_method) = "     \
		  "'GET'"
#define W_PAY_POST                                                             \
	HTTP_CALL " AND http_route = '/api/pay' AND http_method = 'POST'"
#define W_REFUND  HTTP_CALL " AND http_route = '/api/refund'"
#define W_HEALTH  HTTP_CALL " AND http_route IS NULL AND url_path = '/health'"
#define W_NOROUTE HTTP_CALL " AND http_route IS NULL AND url_path IS NULL"
#define GRPC_CALL "kind = 2 AND rpc_system = 'grpc'"
#define W_CHARGE  GRPC_CALL " AND rpc_method = 'Charge'"
#define W_GREFUND GRPC_CALL " AND rpc_method = 'Refund'"
#define SQL_CALL  "kind = 3 AND db_system IS NOT NULL"
#define W_SEL_ORDERS                                                           \
	SQL_CALL " AND upper(db_operation) = 'SELECT' AND db_table = 'orders'"
#define W_SEL_NOTABLE                                                          \
	SQL_CALL " AND upper(db_operation) = 'SELECT' AND db_table IS NULL"
#define W_INS_ORDERS SQL_CALL " AND db_operation = 'INSERT'"

#define R_CHARGE                                                               \
	{                                                                      \
		SPANQUERY_GRPC, "pay.Payments/Charge", "", 13, 3, W_CHARGE     \
	}
#define R_GREFUND                                                              \
	{                                                                      \
		SPANQUERY_GRPC, "pay.Payments/Refund", "", 2, 0, W_GREFUND     \
	}
#define R_NOROUTE                                                              \
	{                                                                      \
		SPANQUERY_HTTP, "", "GET", 2, 0, W_NOROUTE                     \
	}
#define R_PAY_GET                                                              \
	{                                                                      \
		SPANQUERY_HTTP, "/api/pay", "GET", 23, 3, W_PAY_GET            \
	}
#define R_PAY_POST                                                             \
	{                                                                      \
		SPANQUERY_HTTP, "/api/pay", "POST", 6, 0, W_PAY_POST           \
	}
#define R_REFUND                                                               \
	{                                                                      \
		SPANQUERY_HTTP, "/api/refund", "GET", 4, 0, W_REFUND           \
	}
#define R_HEALTH                                                               \
	{                                                                      \
		SPANQUERY_HTTP, "/health", "GET", 3, 0, W_HEALTH               \
	}
#define R_INS                                                                  \
	{                                                                      \
		SPANQUERY_SQL, "INSERT", "orders", 2, 2, W_INS_ORDERS          \
	}
#define R_SEL                                                                  \
	{                                                                      \
		SPANQUERY_SQL, "SELECT", "orders", 8, 0, W_SEL_ORDERS          \
	}
#define R_SEL_NT                                                               \
	{                                                                      \
		SPANQUERY_SQL, "SELECT", "", 3, 0, W_SEL_NOTABLE               \
	}

#define BIT(p) (1u << (p))

struct filter_case {
	const char *name;
	const char *service, *source;
	struct spanquery_filter f; /* service and range set by the runner */
	struct want_row rows[10];
	size_t n;
};

static const struct filter_case filter_cases[] = {
	{"no filter",
	 "checkout",
	 "otlp",
	 {.grpc_status = -1},
	 {R_CHARGE, R_GREFUND, R_NOROUTE, R_PAY_GET, R_PAY_POST, R_REFUND,
	  R_HEALTH, R_INS, R_SEL, R_SEL_NT},
	 10},
	{"all three protocol bits",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP) | BIT(SPANQUERY_GRPC) |
		       BIT(SPANQUERY_SQL),
	  .grpc_status = -1},
	 {R_CHARGE, R_GREFUND, R_NOROUTE, R_PAY_GET, R_PAY_POST, R_REFUND,
	  R_HEALTH, R_INS, R_SEL, R_SEL_NT},
	 10},
	{"http only",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP), .grpc_status = -1},
	 {R_NOROUTE, R_PAY_GET, R_PAY_POST, R_REFUND, R_HEALTH},
	 5},
	{"grpc and sql",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC) | BIT(SPANQUERY_SQL),
	  .grpc_status = -1},
	 {R_CHARGE, R_GREFUND, R_INS, R_SEL, R_SEL_NT},
	 5},
	{"route leaves the other protocols alone",
	 "checkout",
	 "otlp",
	 {.http_route = "/api/pay", .grpc_status = -1},
	 {R_PAY_GET, R_PAY_POST, R_CHARGE, R_GREFUND, R_INS, R_SEL, R_SEL_NT},
	 7},
	{"route, http only",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_route = "/api/pay",
	  .grpc_status = -1},
	 {R_PAY_GET, R_PAY_POST},
	 2},
	{"route is exact",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_route = "/api/PAY",
	  .grpc_status = -1},
	 {{0}},
	 0},
	{"url path stands in for the route",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_route = "/health",
	  .grpc_status = -1},
	 {R_HEALTH},
	 1},
	{"method, lower case",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_method = "get",
	  .grpc_status = -1},
	 {R_NOROUTE, R_PAY_GET, R_REFUND, R_HEALTH},
	 4},
	{"method, mixed case",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_method = "PoSt",
	  .grpc_status = -1},
	 {R_PAY_POST},
	 1},
	{"5xx",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_status_min = 500,
	  .http_status_max = 599,
	  .grpc_status = -1},
	 {{SPANQUERY_HTTP, "/api/pay", "GET", 3, 3,
	   W_PAY_GET " AND http_status_code BETWEEN 500 AND 599"}},
	 1},
	{"2xx",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_status_min = 200,
	  .http_status_max = 299,
	  .grpc_status = -1},
	 {{SPANQUERY_HTTP, "/api/pay", "GET", 20, 0,
	   W_PAY_GET " AND http_status_code BETWEEN 200 AND 299"},
	  R_PAY_POST,
	  R_HEALTH},
	 3},
	{"4xx",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_status_min = 400,
	  .http_status_max = 499,
	  .grpc_status = -1},
	 {R_REFUND},
	 1},
	{"grpc method",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC),
	  .grpc_method = "pay.Payments/Charge",
	  .grpc_status = -1},
	 {R_CHARGE},
	 1},
	{"grpc method with a leading slash",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC),
	  .grpc_method = "/pay.Payments/Charge",
	  .grpc_status = -1},
	 {R_CHARGE},
	 1},
	{"grpc method, other protocols alone",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC) | BIT(SPANQUERY_SQL),
	  .grpc_method = "/pay.Payments/Refund",
	  .grpc_status = -1},
	 {R_GREFUND, R_INS, R_SEL, R_SEL_NT},
	 4},
	{"grpc status 14",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC), .grpc_status = 14},
	 {{SPANQUERY_GRPC, "pay.Payments/Charge", "", 3, 3,
	   W_CHARGE " AND rpc_grpc_status_code = 14"}},
	 1},
	{"grpc status 0",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_GRPC), .grpc_status = 0},
	 {{SPANQUERY_GRPC, "pay.Payments/Charge", "", 10, 0,
	   W_CHARGE " AND rpc_grpc_status_code = 0"}},
	 1},
	{"sql operation, lower case",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_SQL),
	  .sql_operation = "select",
	  .grpc_status = -1},
	 {R_SEL, R_SEL_NT},
	 2},
	{"table",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_SQL),
	  .table_name = "orders",
	  .grpc_status = -1},
	 {R_INS, R_SEL},
	 2},
	{"operation and table",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_SQL),
	  .sql_operation = "Insert",
	  .table_name = "orders",
	  .grpc_status = -1},
	 {R_INS},
	 1},
	{"every filter at once",
	 "checkout",
	 "otlp",
	 {.http_route = "/api/pay",
	  .http_method = "get",
	  .http_status_min = 500,
	  .http_status_max = 599,
	  .grpc_method = "pay.Payments/Charge",
	  .grpc_status = 14,
	  .sql_operation = "SELECT",
	  .table_name = "orders"},
	 {{SPANQUERY_HTTP, "/api/pay", "GET", 3, 3,
	   W_PAY_GET " AND http_status_code >= 500"},
	  {SPANQUERY_GRPC, "pay.Payments/Charge", "", 3, 3,
	   W_CHARGE " AND rpc_grpc_status_code = 14"},
	  R_SEL},
	 3},
	{"no match",
	 "checkout",
	 "otlp",
	 {.protocols = BIT(SPANQUERY_HTTP),
	  .http_route = "/nope",
	  .grpc_status = -1},
	 {{0}},
	 0},
	{"ebpf rows only",
	 "checkout",
	 "ebpf",
	 {.grpc_status = -1},
	 {{SPANQUERY_HTTP, "/api/pay", "GET", 5, 1, W_PAY_GET}},
	 1},
	{"another service",
	 "checkout-v2",
	 "otlp",
	 {.grpc_status = -1},
	 {{SPANQUERY_HTTP, "/api/pay", "GET", 3, 0, W_PAY_GET}},
	 1},
	{"unknown service",
	 "checkout-v3",
	 "otlp",
	 {.grpc_status = -1},
	 {{0}},
	 0},
};

/*
 * The checkout data lies in [Q + 10 min, Q + 13 min) with Q = 6 h ago.
 * Each range reaches it through one path: exact (no settled minute yet),
 * minute rows (no whole hour), the hour rows (Q is whole, settled and
 * clean), minute rows and a raw partial minute at the head before the
 * first whole hour, and minute rows after the last.
 */
static void
test_metrics_filters(void **state)
{
	int64_t q = hour_ms - 6 * HOUR_MS;
	const struct {
		const char *path;
		int64_t from, to;
		bool rollup;
	} paths[] = {
		{"exact", q + 5 * MIN_MS, q + 55 * MIN_MS, false},
		{"minute rows", q + 5 * MIN_MS, q + 55 * MIN_MS, true},
		{"hour rows", q, q + HOUR_MS, true},
		{"rollup, raw head", q + 5 * MIN_MS + 500, hour_ms, true},
		{"rollup, raw tail", q - 3 * HOUR_MS, q + 55 * MIN_MS, true},
	};
	struct pg_conn *c = conn();

	(void)state;
	for (size_t p = 0; p < ARRAY_LEN(paths); p++) {
		for (size_t i = 0; i < ARRAY_LEN(filter_cases); i++) {
			const struct filter_case *fc = &filter_cases[i];
			struct spanquery_filter f = fc->f;
			struct spanquery_metrics *m;
			char what[160];

			snprintf(what, sizeof(what), "%s, %s", paths[p].path,
				 fc->name);
			f.service = fc->service;
			f.from_ms = paths[p].from;
			f.to_ms = paths[p].to;
			m = metrics(c, fc->source, &f, paths[p].rollup);
			check_rows(c, what, m, fc->service, fc->source,
				   paths[p].from, paths[p].to, fc->rows, fc->n);
			spanquery_metrics_free(m);
		}
	}
	pg_release(c);
}

/* ---- metrics: the rollup ------------------------------------------------ */

static const struct want_row ledger_rows[] = {
	{SPANQUERY_HTTP, "/ledger", "GET", 0, 0, HTTP_CALL},
	{SPANQUERY_SQL, "UPDATE", "accounts", 0, 0, SQL_CALL},
};

static void
check_ledger(struct pg_conn *c, const char *what, int64_t from, int64_t to,
	     uint64_t http_requests, uint64_t http_errors)
{
	struct spanquery_filter f = {.service = "ledger",
				     .from_ms = from,
				     .to_ms = to,
				     .grpc_status = -1};
	struct spanquery_metrics *m = metrics(c, "otlp", &f, true);

	check_rows(c, what, m, "ledger", "otlp", from, to, ledger_rows,
		   ARRAY_LEN(ledger_rows));
	for (size_t i = 0; i < m->n && http_requests != 0; i++)
		if (m->rows[i].protocol == SPANQUERY_HTTP) {
			assert_int_equal(m->rows[i].requests, http_requests);
			assert_int_equal(m->rows[i].errors, http_errors);
		}
	spanquery_metrics_free(m);
}

static void
test_metrics_rollup(void **state)
{
	struct pg_conn *c = conn();
	PGresult *res;

	(void)state;
	/* the ledger hours are rolled up and clean: 2 statuses x 2 keys */
	res = sql(c,
		  "SELECT count(*) FROM span_rollup WHERE service_name = "
		  "'ledger'",
		  0, NULL);
	assert_string_equal(PQgetvalue(res, 0, 0), "12");
	PQclear(res);
	/* whole hours only */
	check_ledger(c, "three whole hours", hour_ms - 5 * HOUR_MS,
		     hour_ms - 2 * HOUR_MS, 300, 30);
	/* a raw head, rollup hours, a raw tail up to now */
	check_ledger(c, "head, hours and tail",
		     hour_ms - 5 * HOUR_MS + 17 * MIN_MS, wall_ms(), 0, 0);
	pg_release(c);
}

/* Ranges with partial minutes at their ends, across hour boundaries,
 * with and without a whole hour: minute rows, raw edges, hour rows. */
static void
test_metrics_minute_edges(void **state)
{
	int64_t p5 = hour_ms - 5 * HOUR_MS, p4 = p5 + HOUR_MS;
	const struct {
		const char *what;
		int64_t from, to;
	} ranges[] = {
		{"inside one hour", p5 + 10 * MIN_MS + 20000,
		 p5 + 40 * MIN_MS + 50000},
		{"across an hour boundary", p5 + 30 * MIN_MS + 10000,
		 p4 + 30 * MIN_MS + 10000},
		{"a whole hour and partial minutes", p5 + 10 * MIN_MS + 20000,
		 p4 + HOUR_MS + 10 * MIN_MS + 20000},
		{"two whole minutes", p5 + 17 * MIN_MS, p5 + 19 * MIN_MS},
	};
	struct pg_conn *c = conn();

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(ranges); i++)
		check_ledger(c, ranges[i].what, ranges[i].from, ranges[i].to, 0,
			     0);
	pg_release(c);
}

/* Spans added to a rolled-up hour make it and their minute dirty: that
 * minute is read raw until the next refresh, never counted twice. */
static void
test_metrics_dirty_hour(void **state)
{
	static const struct call late = {"ledger",
					 OT,
					 2,
					 "GET",
					 "/ledger",
					 NULL,
					 200,
					 .count = 36,
					 .min_ns = 5000000000ull,
					 .max_ns = 8000000000ull};
	static const struct call late_err = {"ledger",	OT,   2,   "GET",
					     "/ledger", NULL, 500, .count = 4};
	int64_t p4 = hour_ms - 4 * HOUR_MS, cur = p4 + 30 * MIN_MS;
	char period[48];
	const char *v[1] = {period};
	struct pg_conn *c = conn();
	struct pg_error err;
	PGresult *res;
	int done = -1;

	(void)state;
	add_calls(&late, &cur, 1000);
	add_calls(&late_err, &cur, 1000);
	flush_spans(c);
	ts_text(p4, period, sizeof(period));
	/* store marked the hour; a refresh now leaves it (the mark is young;
	 * a recent hour that just settled may be refreshed meanwhile) */
	assert_int_equal(rollup_refresh(c, 0, &done, NULL, &err), STATUS_OK);
	res = sql(c,
		  "SELECT count(*) FROM span_rollup_dirty WHERE period = "
		  "$1::timestamptz",
		  1, v);
	assert_string_not_equal(PQgetvalue(res, 0, 0), "0");
	PQclear(res);
	/* the stale rollup rows of that hour are still there */
	res = sql(c,
		  "SELECT sum(requests) FROM span_rollup WHERE service_name = "
		  "'ledger' AND period = $1::timestamptz AND protocol = 'http'",
		  1, v);
	assert_string_equal(PQgetvalue(res, 0, 0), "100");
	PQclear(res);
	/* the dirty hour is read from its minute rows, but for minute 30,
	 * dirty too, read raw */
	check_ledger(c, "dirty middle hour", hour_ms - 5 * HOUR_MS,
		     hour_ms - 2 * HOUR_MS, 340, 34);
	check_ledger(c, "dirty hour alone", p4, p4 + HOUR_MS, 140, 14);
	check_ledger(c, "dirty, head and tail",
		     hour_ms - 5 * HOUR_MS + 17 * MIN_MS, wall_ms(), 0, 0);
	check_ledger(c, "dirty minute, partial minutes at both ends",
		     p4 + 10 * MIN_MS + 20000, p4 + 50 * MIN_MS + 40000, 0, 0);
	/* the minute refreshed, the hour not yet (its mark is young): the
	 * hour's minutes all come from minute rows, the late ones included */
	age_minute_marks(c);
	assert_int_equal(rollup_refresh(c, 0, &done, NULL, &err), STATUS_OK);
	assert_true(done >= 1);
	res = sql(c,
		  "SELECT count(*) FROM span_rollup_minute_dirty WHERE period "
		  ">= $1::timestamptz AND period < $1::timestamptz + interval "
		  "'1 hour'",
		  1, v);
	assert_string_equal(PQgetvalue(res, 0, 0), "0");
	PQclear(res);
	res = sql(c,
		  "SELECT sum(requests) FROM span_rollup_minute WHERE "
		  "service_name = 'ledger' AND protocol = 'http' AND period >= "
		  "$1::timestamptz AND period < $1::timestamptz + interval "
		  "'1 hour'",
		  1, v);
	assert_string_equal(PQgetvalue(res, 0, 0), "140");
	PQclear(res);
	res = sql(c,
		  "SELECT count(*) FROM span_rollup_dirty WHERE period = "
		  "$1::timestamptz",
		  1, v);
	assert_string_not_equal(PQgetvalue(res, 0, 0), "0");
	PQclear(res);
	check_ledger(c, "dirty hour, clean minutes", p4, p4 + HOUR_MS, 140, 14);
	check_ledger(c, "dirty middle hour, clean minutes",
		     hour_ms - 5 * HOUR_MS, hour_ms - 2 * HOUR_MS, 340, 34);
	pg_release(c);
}

/* Rollup rows are read as they are: the ghost spans were deleted from the
 * table after their hour was rolled up, without marking it dirty. */
static void
test_metrics_reads_rollup_rows(void **state)
{
	int64_t p5 = hour_ms - 5 * HOUR_MS;
	struct spanquery_filter f = {.service = "ghost", .grpc_status = -1};
	struct spanquery_metrics *m;
	struct pg_conn *c = conn();

	(void)state;
	f.from_ms = p5;
	f.to_ms = p5 + HOUR_MS;
	m = metrics(c, "otlp", &f, true);
	assert_int_equal(m->n, 1);
	assert_int_equal(m->rows[0].protocol, SPANQUERY_HTTP);
	assert_string_equal(m->rows[0].k1, "/boo");
	assert_string_equal(m->rows[0].k2, "GET");
	assert_int_equal(m->rows[0].requests, 5);
	assert_true(m->rows[0].p50_ms > 0);
	spanquery_metrics_free(m);
	/* the minute rows too (ghost's calls are at p5 + 20 min) */
	f.from_ms = p5 + MIN_MS;
	f.to_ms = p5 + 59 * MIN_MS;
	m = metrics(c, "otlp", &f, true);
	assert_int_equal(m->n, 1);
	assert_int_equal(m->rows[0].requests, 5);
	spanquery_metrics_free(m);
	/* the raw spans are gone */
	m = metrics(c, "otlp", &f, false);
	assert_int_equal(m->n, 0);
	spanquery_metrics_free(m);
	pg_release(c);
}

/* ---- metrics: sources, bounds, bad filters ------------------------------ */

/* ebpf and otlp rows of one service stay apart; the two run at once on
 * two connections from one thread. */
static void
test_metrics_sources(void **state)
{
	static const struct want_row cart[] = {
		{SPANQUERY_HTTP, "/cart", "GET", 0, 0, HTTP_CALL},
	};
	struct spanquery_filter f = {.service = "cart",
				     .from_ms = base_ms - 45 * MIN_MS,
				     .to_ms = base_ms + MIN_MS,
				     .grpc_status = -1};
	struct spanquery_metrics *me = NULL, *mo = NULL;
	struct pg_conn *ce = conn(), *co = conn();
	struct pg_error err;
	bool re = true, ro = true;

	(void)state;
	assert_int_equal(
		spanquery_metrics_send(ce, "ebpf", &f, wall_ms(), &re, &err),
		STATUS_OK);
	assert_int_equal(
		spanquery_metrics_send(co, "otlp", &f, wall_ms(), &ro, &err),
		STATUS_OK);
	/* 40 minutes ago: settled minutes, rolled up in the setup */
	assert_true(re);
	assert_true(ro);
	assert_int_equal(spanquery_metrics_recv(co, ro, &mo, &err), STATUS_OK);
	assert_int_equal(spanquery_metrics_recv(ce, re, &me, &err), STATUS_OK);
	check_rows(ce, "cart ebpf", me, "cart", "ebpf", f.from_ms, f.to_ms,
		   cart, 1);
	check_rows(co, "cart otlp", mo, "cart", "otlp", f.from_ms, f.to_ms,
		   cart, 1);
	assert_int_equal(me->rows[0].requests, 7);
	assert_int_equal(me->rows[0].errors, 2);
	assert_int_equal(mo->rows[0].requests, 10);
	assert_int_equal(mo->rows[0].errors, 1);
	assert_true(me->rows[0].p50_ms != mo->rows[0].p50_ms);
	spanquery_metrics_free(me);
	spanquery_metrics_free(mo);
	pg_release(ce);
	pg_release(co);
}

/* More keys than SPANQUERY_MAX_KEYS: cut, and said so. */
static void
test_metrics_truncated(void **state)
{
	static char routes[SPANQUERY_MAX_KEYS + 1][16];
	int64_t cur = base_ms - 30 * MIN_MS;
	struct spanquery_filter f = {.service = "many",
				     .from_ms = base_ms - 31 * MIN_MS,
				     .to_ms = base_ms + MIN_MS,
				     .grpc_status = -1};
	struct spanquery_metrics *m = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;
	bool rollup = true;

	(void)state;
	for (int i = 0; i <= SPANQUERY_MAX_KEYS; i++) {
		struct call t = {"many",    OT,	  2,   "GET",
				 routes[i], NULL, 200, .count = 1};

		snprintf(routes[i], sizeof(routes[i]), "/r/%04d", i);
		add_calls(&t, &cur, 1);
	}
	flush_spans(c);
	assert_int_equal(
		spanquery_metrics_send(c, "otlp", &f, wall_ms(), &rollup, &err),
		STATUS_OK);
	assert_int_equal(spanquery_metrics_recv(c, rollup, &m, &err),
			 STATUS_OK);
	assert_true(m->truncated);
	assert_int_equal(m->n, SPANQUERY_MAX_KEYS);
	for (size_t i = 0; i < m->n; i++)
		assert_int_equal(m->rows[i].requests, 1);
	spanquery_metrics_free(m);
	pg_release(c);
}

static void
test_metrics_bad_filter(void **state)
{
	struct spanquery_filter f = {.service = NULL,
				     .from_ms = base_ms - HOUR_MS,
				     .to_ms = base_ms,
				     .grpc_status = -1};
	struct pg_conn *c = conn();
	struct pg_error err;
	bool rollup = true;

	(void)state;
	assert_int_equal(
		spanquery_metrics_send(c, "otlp", &f, wall_ms(), &rollup, &err),
		STATUS_INVALID);
	assert_false(rollup);
	assert_true(err.client[0] != '\0');
	f.service = "checkout";
	f.to_ms = f.from_ms;
	assert_int_equal(
		spanquery_metrics_send(c, "otlp", &f, wall_ms(), &rollup, &err),
		STATUS_INVALID);
	f.to_ms = f.from_ms - 1;
	assert_int_equal(
		spanquery_metrics_send(c, "otlp", &f, wall_ms(), &rollup, &err),
		STATUS_INVALID);
	/* nothing was sent: the connection is free for the next statement */
	f.to_ms = base_ms;
	{
		struct spanquery_metrics *m = metrics(c, "otlp", &f, false);

		spanquery_metrics_free(m);
	}
	pg_release(c);
}

/* ---- traces ------------------------------------------------------------ */

struct ids_case {
	const char *name;
	const char *source, *service;
	int64_t from_s, to_s; /* from W */
	int64_t min_duration_ns;
	size_t max_traces, cap;
	bool slowest;
	int want[6]; /* trace numbers, 0-terminated */
	int64_t keys[6];
	bool more; /* matching traces beyond those returned */
};

/* keys: latest span start in us from W (recent), longest span in ns */
static const struct ids_case ids_cases[] = {
	{"recent of a service",
	 "otlp",
	 "tr-front",
	 -60,
	 300,
	 -1,
	 10,
	 11,
	 false,
	 {3, 2, 1},
	 {120000000, 60000000, 0}},
	{"recent, any service",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 10,
	 11,
	 false,
	 {3, 2, 4, 1},
	 {120000000, 60100000, 30000000, 5000}},
	{"slowest of a service",
	 "otlp",
	 "tr-front",
	 -60,
	 300,
	 -1,
	 10,
	 11,
	 true,
	 {2, 1, 3},
	 {500000000, 50000000, 5000000}},
	{"slowest, any service",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 10,
	 11,
	 true,
	 {4, 2, 1, 3},
	 {1000000000, 500000000, 50000000, 5000000}},
	{"min duration",
	 "otlp",
	 "tr-front",
	 -60,
	 300,
	 40000000,
	 10,
	 11,
	 false,
	 {2, 1},
	 {60000000, 0}},
	{"min duration, exactly a span's",
	 "otlp",
	 "tr-back",
	 -60,
	 300,
	 20000000,
	 10,
	 11,
	 true,
	 {4, 1},
	 {1000000000, 20000000}},
	{"one more than max_traces",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 2,
	 3,
	 false,
	 {3, 2},
	 {120000000, 60100000},
	 true},
	{"a smaller cap wins",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 2,
	 1,
	 false,
	 {3},
	 {120000000},
	 true},
	{"exactly max_traces",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 4,
	 11,
	 false,
	 {3, 2, 4, 1},
	 {120000000, 60100000, 30000000, 5000}},
	{"a duration filter, one more than max_traces",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 10000000,
	 2,
	 11,
	 false,
	 {2, 4},
	 {60100000, 30000000},
	 true},
	{"slowest, one more than max_traces",
	 "otlp",
	 NULL,
	 -60,
	 300,
	 -1,
	 3,
	 11,
	 true,
	 {4, 2, 1},
	 {1000000000, 500000000, 50000000},
	 true},
	{"time range",
	 "otlp",
	 "tr-front",
	 50,
	 300,
	 -1,
	 10,
	 11,
	 false,
	 {3, 2},
	 {120000000, 60000000}},
	{"range end is exclusive",
	 "otlp",
	 "tr-front",
	 -60,
	 60,
	 -1,
	 10,
	 11,
	 false,
	 {1},
	 {0}},
	{"ebpf", "ebpf", NULL, -60, 300, -1, 10, 11, false, {1}, {0}},
	{"nothing", "otlp", "tr-none", -60, 300, -1, 10, 11, false, {0}, {0}},
};

/* trace id, start, span id: a total order of one source's spans */
static int
span_order(const void *pa, const void *pb)
{
	const struct spanquery_span *a = pa, *b = pb;
	int c = memcmp(a->trace_id, b->trace_id, 16);

	if (c == 0 && a->start_ns != b->start_ns)
		c = a->start_ns < b->start_ns ? -1 : 1;
	if (c == 0)
		c = memcmp(a->span_id, b->span_id, 8);
	return c;
}

/*
 * a and b hold the same spans, each ordered by trace id and start (as
 * ORDER BY trace_id, start_time: spans of one microsecond in any order).
 */
static void
same_spans(const char *what, const struct spanquery_spans *a,
	   const struct spanquery_spans *b)
{
	struct spanquery_span *x = NULL, *y = NULL;

	if (a->n != b->n || a->truncated != b->truncated)
		fail_msg("%s: %zu spans (truncated %d) vs %zu (%d)", what, a->n,
			 a->truncated, b->n, b->truncated);
	for (size_t i = 1; i < a->n; i++) {
		const struct spanquery_span *p = &a->spans[i - 1],
					    *q = &a->spans[i];
		int c = memcmp(p->trace_id, q->trace_id, 16);

		if (c > 0 ||
		    (c == 0 && p->start_ns / 1000 > q->start_ns / 1000))
			fail_msg("%s: span #%zu out of order", what, i);
	}
	x = calloc(a->n + 1, sizeof(*x));
	y = calloc(b->n + 1, sizeof(*y));
	assert_non_null(x);
	assert_non_null(y);
	memcpy(x, a->spans, a->n * sizeof(*x));
	memcpy(y, b->spans, b->n * sizeof(*y));
	qsort(x, a->n, sizeof(*x), span_order);
	qsort(y, b->n, sizeof(*y), span_order);
	for (size_t i = 0; i < a->n; i++) {
		const struct spanquery_span *u = &x[i], *v = &y[i];

		if (memcmp(u->trace_id, v->trace_id, 16) != 0 ||
		    memcmp(u->span_id, v->span_id, 8) != 0 ||
		    u->has_parent != v->has_parent ||
		    (u->has_parent &&
		     memcmp(u->parent_span_id, v->parent_span_id, 8) != 0) ||
		    u->start_ns != v->start_ns ||
		    u->duration_ns != v->duration_ns || u->kind != v->kind ||
		    u->status != v->status ||
		    strcmp(u->service, v->service) != 0 ||
		    strcmp(u->name, v->name) != 0 ||
		    (u->status_message == NULL) !=
			    (v->status_message == NULL) ||
		    (u->status_message != NULL &&
		     strcmp(u->status_message, v->status_message) != 0))
			fail_msg("%s: span #%zu differs", what, i);
	}
	free(x);
	free(y);
}

/*
 * spanquery_recent_* against the two statements it stands for: the same
 * ids, keys and more as spanquery_trace_ids_* with the same cap, and the
 * spans spanquery_spans_* gives for the best max_traces of them.
 */
static void
check_recent(struct pg_conn *c, const char *what, const char *source,
	     const struct spanquery_trace_filter *f, size_t cap)
{
	uint8_t ids[SPANQUERY_MAX_TRACES][16], rids[SPANQUERY_MAX_TRACES][16];
	int64_t keys[SPANQUERY_MAX_TRACES], rkeys[SPANQUERY_MAX_TRACES];
	struct spanquery_spans *want = NULL, *got = NULL;
	struct pg_error err;
	size_t n = 0, rn = 99;
	bool more = false, rmore = true;

	assert_true(spanquery_trace_walks(f));
	assert_int_equal(spanquery_trace_ids_send(c, source, f, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_trace_ids_recv(c, SPANQUERY_MAX_TRACES, ids,
						  keys, &n, &more, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_send(
				 c, source, (const uint8_t(*)[16])ids, n, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &want, &err), STATUS_OK);
	assert_int_equal(spanquery_recent_send(c, source, f, &err), STATUS_OK);
	assert_int_equal(spanquery_recent_recv(c, cap, rids, rkeys, &rn, &rmore,
					       &got, &err),
			 STATUS_OK);
	if (rn != (n < cap ? n : cap) || rmore != (more || n > cap) ||
	    memcmp(rids, ids, rn * 16) != 0 ||
	    memcmp(rkeys, keys, rn * sizeof(*keys)) != 0)
		fail_msg("%s: recent gave %zu ids (more %d), the walk %zu "
			 "(more %d), cap %zu",
			 what, rn, rmore, n, more, cap);
	same_spans(what, got, want);
	spanquery_spans_free(want);
	spanquery_spans_free(got);
}

static void
test_trace_ids(void **state)
{
	struct pg_conn *c = conn();

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(ids_cases); i++) {
		const struct ids_case *ic = &ids_cases[i];
		struct spanquery_trace_filter f = {
			.service = ic->service,
			.from_ms = trace_w_ms + ic->from_s * 1000,
			.to_ms = trace_w_ms + ic->to_s * 1000,
			.min_duration_ns = ic->min_duration_ns,
			.max_traces = ic->max_traces,
			.slowest = ic->slowest,
		};
		uint8_t ids[16][16];
		int64_t keys[16];
		size_t n = 99, want_n = 0;
		bool more = !ic->more;
		struct pg_error err;

		while (want_n < 6 && ic->want[want_n] != 0)
			want_n++;
		assert_int_equal(
			spanquery_trace_ids_send(c, ic->source, &f, &err),
			STATUS_OK);
		assert_int_equal(spanquery_trace_ids_recv(c, ic->cap, ids, keys,
							  &n, &more, &err),
				 STATUS_OK);
		if (n != want_n)
			fail_msg("%s: %zu traces, want %zu", ic->name, n,
				 want_n);
		if (more != ic->more)
			fail_msg("%s: more %d, want %d", ic->name, more,
				 ic->more);
		for (size_t k = 0; k < n; k++) {
			int64_t want_key =
				ic->slowest ? ic->keys[k]
					    : (trace_w_ms * 1000 + ic->keys[k]);

			if (memcmp(ids[k], trace_id_of[ic->want[k]], 16) != 0)
				fail_msg("%s: #%zu is not T%d", ic->name, k,
					 ic->want[k]);
			if (keys[k] != want_key)
				fail_msg("%s: #%zu key %lld, want %lld",
					 ic->name, k, (long long)keys[k],
					 (long long)want_key);
		}
		if (spanquery_trace_walks(&f))
			check_recent(c, ic->name, ic->source, &f, ic->cap);
	}
	pg_release(c);
}

static void
test_trace_ids_bad_filter(void **state)
{
	static const struct {
		size_t max_traces;
		int64_t from_s, to_s;
	} bad[] = {
		{0, 0, 10},
		{SPANQUERY_MAX_TRACES + 1, 0, 10},
		{10, 10, 10},
		{10, 10, 0},
	};
	struct pg_conn *c = conn();

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		struct spanquery_trace_filter f = {
			.from_ms = trace_w_ms + bad[i].from_s * 1000,
			.to_ms = trace_w_ms + bad[i].to_s * 1000,
			.min_duration_ns = -1,
			.max_traces = bad[i].max_traces,
		};
		struct pg_error err;

		err.client[0] = '\0';
		assert_int_equal(spanquery_trace_ids_send(c, "otlp", &f, &err),
				 STATUS_INVALID);
		assert_true(err.client[0] != '\0');
		err.client[0] = '\0';
		assert_int_equal(spanquery_recent_send(c, "otlp", &f, &err),
				 STATUS_INVALID);
		assert_true(err.client[0] != '\0');
	}
	/* the combined statement is for the walk only */
	for (int k = 0; k < 2; k++) {
		struct spanquery_trace_filter f = {
			.from_ms = trace_w_ms - 60000,
			.to_ms = trace_w_ms + 300000,
			.min_duration_ns = k == 0 ? 1000 : -1,
			.max_traces = 10,
			.slowest = k == 1,
		};
		struct pg_error err;

		assert_false(spanquery_trace_walks(&f));
		err.client[0] = '\0';
		assert_int_equal(spanquery_recent_send(c, "otlp", &f, &err),
				 STATUS_INVALID);
		assert_true(err.client[0] != '\0');
	}
	/* the bounds themselves are fine */
	{
		struct spanquery_trace_filter f = {
			.from_ms = trace_w_ms - 60000,
			.to_ms = trace_w_ms + 300000,
			.min_duration_ns = -1,
			.max_traces = SPANQUERY_MAX_TRACES,
		};
		uint8_t ids[SPANQUERY_MAX_TRACES][16];
		int64_t keys[SPANQUERY_MAX_TRACES];
		struct pg_error err;
		size_t n = 0;
		bool more = true;

		assert_int_equal(spanquery_trace_ids_send(c, "otlp", &f, &err),
				 STATUS_OK);
		assert_int_equal(
			spanquery_trace_ids_recv(c, SPANQUERY_MAX_TRACES, ids,
						 keys, &n, &more, &err),
			STATUS_OK);
		assert_int_equal(n, 4);
		assert_false(more);
	}
	pg_release(c);
}

/* The stored spans of trace_spans[] with this source and trace, in start
 * order, must be s[0..n). */
static void
check_spans(const struct spanquery_spans *s, const char *source,
	    const int *traces, size_t n_traces)
{
	size_t k = 0;
	int src = strcmp(source, "ebpf") == 0 ? EB : OT;

	for (size_t t = 0; t < n_traces; t++) {
		for (size_t i = 0; i < ARRAY_LEN(trace_spans); i++) {
			const struct trace_span *w = &trace_spans[i];
			const struct spanquery_span *g;

			if (w->trace != traces[t] || w->source != src)
				continue;
			assert_true(k < s->n);
			g = &s->spans[k++];
			assert_memory_equal(g->trace_id, trace_id_of[w->trace],
					    16);
			assert_int_equal(g->span_id[7], w->id);
			assert_int_equal(g->has_parent, w->parent != 0);
			if (w->parent != 0)
				assert_int_equal(g->parent_span_id[7],
						 w->parent);
			assert_int_equal(g->start_ns, trace_start_ns(w));
			assert_int_equal(g->duration_ns, w->dur_ns);
			assert_int_equal(g->kind, w->kind);
			assert_int_equal(g->status, w->status);
			assert_string_equal(g->service, w->service);
			assert_string_equal(g->name, w->name);
			if (w->status_message == NULL)
				assert_null(g->status_message);
			else
				assert_string_equal(g->status_message,
						    w->status_message);
		}
	}
	assert_int_equal(s->n, k);
	assert_false(s->truncated);
}

static void
test_spans(void **state)
{
	static const uint8_t unknown[16] = {0xee, 0xee};
	uint8_t ids[3][16];
	struct spanquery_spans *s = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	/* listed out of order, with one unknown id: by trace id, then start */
	memcpy(ids[0], trace_id_of[2], 16);
	memcpy(ids[1], unknown, 16);
	memcpy(ids[2], trace_id_of[1], 16);
	assert_int_equal(spanquery_spans_send(
				 c, "otlp", (const uint8_t(*)[16])ids, 3, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &s, &err), STATUS_OK);
	check_spans(s, "otlp", (const int[]){1, 2}, 2);
	spanquery_spans_free(s);
	s = NULL;

	assert_int_equal(spanquery_spans_send(
				 c, "ebpf", (const uint8_t(*)[16])ids, 3, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &s, &err), STATUS_OK);
	check_spans(s, "ebpf", (const int[]){1}, 1);
	spanquery_spans_free(s);
	s = NULL;

	/* no ids: no spans */
	assert_int_equal(spanquery_spans_send(
				 c, "otlp", (const uint8_t(*)[16])ids, 0, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &s, &err), STATUS_OK);
	assert_int_equal(s->n, 0);
	spanquery_spans_free(s);
	spanquery_spans_free(NULL);
	pg_release(c);
}

static void
test_spans_bounds(void **state)
{
	static uint8_t ids[SPANQUERY_MAX_TRACES + 2][16];
	struct spanquery_spans *s = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	/* SPANQUERY_MAX_TRACES ids (max_traces at most) are accepted */
	for (size_t i = 0; i < ARRAY_LEN(ids); i++) {
		memset(ids[i], 0xff, 16);
		ids[i][0] = (uint8_t)i;
	}
	memcpy(ids[SPANQUERY_MAX_TRACES - 1], trace_id_of[3], 16);
	assert_int_equal(spanquery_spans_send(c, "otlp",
					      (const uint8_t(*)[16])ids,
					      SPANQUERY_MAX_TRACES, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &s, &err), STATUS_OK);
	check_spans(s, "otlp", (const int[]){3}, 1);
	spanquery_spans_free(s);
	err.client[0] = '\0';
	assert_int_equal(spanquery_spans_send(c, "otlp",
					      (const uint8_t(*)[16])ids,
					      SPANQUERY_MAX_TRACES + 1, &err),
			 STATUS_INVALID);
	assert_true(err.client[0] != '\0');
	pg_release(c);
}

/* ---- links and details --------------------------------------------------- */

/*
 * A trace of its own: a request (…01), a span with no parent linked to it
 * (…02, its first link into another trace), one linked only elsewhere
 * (…03), and a failed client call with an exception event and 50
 * attributes, one of them long (…04).
 */
static void
add_detail_trace(struct pg_conn *c)
{
	PQclear(sql(
		c,
		"INSERT INTO spans (start_time, duration_ns, trace_id, "
		"span_id, "
		"parent_span_id, kind, status_code, source, name, "
		"service_name, "
		"http_status_code, rpc_grpc_status_code, db_system, db_table, "
		"attributes, events, links) VALUES "
		"(now(), 1000, '\\xd0d0000000000000000000000000dd01', "
		"'\\x00000000000000d1', NULL, 2, 0, 'otlp', 'POST /a', 'det', "
		"200, NULL, NULL, NULL, '{\"server.address\": \"self\"}', "
		"NULL, "
		"NULL), "
		"(now(), 1000, '\\xd0d0000000000000000000000000dd01', "
		"'\\x00000000000000d2', NULL, 1, 0, 'otlp', 'job', 'det', "
		"NULL, "
		"NULL, NULL, NULL, '{}', NULL, '[{\"trace_id\": "
		"\"aa000000000000000000000000000001\", \"span_id\": "
		"\"00000000000000aa\", \"attributes\": {}}, {\"trace_id\": "
		"\"d0d0000000000000000000000000dd01\", \"span_id\": "
		"\"00000000000000d1\", \"attributes\": {}}]'), "
		"(now(), 1000, '\\xd0d0000000000000000000000000dd01', "
		"'\\x00000000000000d3', NULL, 1, 0, 'otlp', 'other', 'det', "
		"NULL, "
		"NULL, NULL, NULL, '{}', NULL, '[{\"trace_id\": "
		"\"aa000000000000000000000000000001\", \"span_id\": "
		"\"00000000000000aa\", \"attributes\": {}}]'), "
		"(now(), 1000, '\\xd0d0000000000000000000000000dd01', "
		"'\\x00000000000000d4', '\\x00000000000000d1', 3, 2, 'otlp', "
		"'SELECT', 'det', NULL, 14, 'postgresql', 'orders', "
		"(SELECT jsonb_object_agg('k' || lpad(i::text, 2, '0'), i) "
		"FROM "
		"generate_series(1, 49) i) || "
		"jsonb_build_object('peer.service', "
		"'orders-db', 'server.address', 'db1', 'long', repeat('x', "
		"500)), "
		"'[{\"name\": \"retry\", \"attributes\": {}}, {\"name\": "
		"\"exception\", \"attributes\": {\"exception.type\": "
		"\"IOError\", "
		"\"exception.message\": \"reset by peer\"}}]', NULL) "
		"ON CONFLICT DO NOTHING",
		0, NULL));
}

static void
test_links(void **state)
{
	static const uint8_t id[1][16] = {{0xd0, 0xd0, [14] = 0xdd, [15] = 1}};
	struct spanquery_spans *s = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	add_detail_trace(c);
	assert_int_equal(spanquery_spans_send(c, "otlp", id, 1, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &s, &err), STATUS_OK);
	assert_int_equal(s->n, 4);
	for (size_t i = 0; i < s->n; i++) {
		const struct spanquery_span *x = &s->spans[i];

		/* the link into its own trace, not the first one */
		assert_int_equal(x->has_link, x->span_id[7] == 0xd2);
		if (x->has_link) {
			assert_int_equal(x->link_span_id[7], 0xd1);
			assert_int_equal(x->link_span_id[0], 0);
		}
		/* the details come with the row, attributes never */
		assert_true(x->detail.found);
		assert_null(x->detail.attributes);
		if (x->span_id[7] == 0xd4) {
			assert_int_equal(x->detail.http_status, -1);
			assert_int_equal(x->detail.grpc_code, 14);
			assert_string_equal(x->detail.peer, "orders-db");
			assert_string_equal(x->detail.db_system, "postgresql");
			assert_string_equal(x->detail.db_table, "orders");
			assert_string_equal(x->detail.exception_type,
					    "IOError");
			assert_string_equal(x->detail.exception_message,
					    "reset by peer");
		} else if (x->span_id[7] == 0xd1) {
			/* a server's server.address is its own: no peer */
			assert_int_equal(x->detail.http_status, 200);
			assert_int_equal(x->detail.grpc_code, -1);
			assert_null(x->detail.peer);
			assert_null(x->detail.exception_type);
		} else {
			assert_int_equal(x->detail.http_status, -1);
			assert_null(x->detail.db_system);
			assert_null(x->detail.exception_message);
		}
	}
	spanquery_spans_free(s);
	PQclear(sql(c, "DELETE FROM spans WHERE service_name = 'det'", 0,
		    NULL)); /* test_services lists every service */
	pg_release(c);
}

/* A trace id from its first digits: one, two (ambiguous), none, bad. */
static void
test_trace_prefix(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	uint8_t ids[2][16];
	size_t n = 9;

	(void)state;
	PQclear(sql(c,
		    "INSERT INTO spans (start_time, duration_ns, trace_id, "
		    "span_id, kind, status_code, source, name, service_name) "
		    "SELECT now(), 1000, decode(t, 'hex'), "
		    "'\\x00000000000000e1', 2, 0, 'otlp', 'x', 'pfx' FROM "
		    "unnest(ARRAY['abcdef01000000000000000000000001', "
		    "'abcdef01000000000000000000000002', "
		    "'abcdef02000000000000000000000003']) t "
		    "ON CONFLICT DO NOTHING",
		    0, NULL));
	assert_int_equal(spanquery_trace_prefix(c, "ABCDEF02", ids, &n, &err),
			 STATUS_OK);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0][0], 0xab);
	assert_int_equal(ids[0][15], 3);
	assert_int_equal(spanquery_trace_prefix(c, "abcdef01", ids, &n, &err),
			 STATUS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0][15], 1);
	assert_int_equal(ids[1][15], 2);
	assert_int_equal(
		spanquery_trace_prefix(c, "abcdef010000000000000000000000", ids,
				       &n, &err),
		STATUS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(
		spanquery_trace_prefix(c, "abcdef0100000000000000000000000",
				       ids, &n, &err),
		STATUS_OK); /* 31 digits: ...01 and ...02 */
	assert_int_equal(n, 2);
	assert_int_equal(spanquery_trace_prefix(c, "abcdef03", ids, &n, &err),
			 STATUS_OK);
	assert_int_equal(n, 0);
	/* too short, 32 digits (a whole id), not hex */
	assert_int_equal(spanquery_trace_prefix(c, "abcdef0", ids, &n, &err),
			 STATUS_INVALID);
	assert_int_equal(
		spanquery_trace_prefix(c, "abcdef01000000000000000000000001",
				       ids, &n, &err),
		STATUS_INVALID);
	assert_int_equal(spanquery_trace_prefix(c, "abcdefgh", ids, &n, &err),
			 STATUS_INVALID);
	PQclear(sql(c, "DELETE FROM spans WHERE service_name = 'pfx'", 0,
		    NULL));
	pg_release(c);
}

static void
test_details(void **state)
{
	struct spanquery_detail_key keys[3] = {
		{.trace_id = {0xd0, 0xd0, [14] = 0xdd, [15] = 1},
		 .span_id = {[7] = 0xd4},
		 .source = "otlp",
		 .with_attributes = true},
		{.trace_id = {0xd0, 0xd0, [14] = 0xdd, [15] = 1},
		 .span_id = {[7] = 0xd1},
		 .source = "otlp"},
		/* the same span from the other source: not in the store */
		{.trace_id = {0xd0, 0xd0, [14] = 0xdd, [15] = 1},
		 .span_id = {[7] = 0xd1},
		 .source = "ebpf"},
	};
	static struct spanquery_detail_key many[SPANQUERY_MAX_DETAILS + 1];
	struct spanquery_details *d = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;
	const struct spanquery_detail *x;
	json_t *attrs;

	(void)state;
	add_detail_trace(c);
	assert_int_equal(spanquery_details_send(c, keys, 3, &err), STATUS_OK);
	assert_int_equal(spanquery_details_recv(c, 3, &d, &err), STATUS_OK);
	assert_int_equal(d->n, 3);
	x = &d->v[0];
	assert_true(x->found);
	assert_int_equal(x->http_status, -1);
	assert_int_equal(x->grpc_code, 14);
	assert_string_equal(x->peer, "orders-db");
	assert_string_equal(x->db_system, "postgresql");
	assert_string_equal(x->db_table, "orders");
	assert_string_equal(x->exception_type, "IOError");
	assert_string_equal(x->exception_message, "reset by peer");
	/* 40 keys by name, a long value cut at 160 characters and "…" */
	attrs = json_loads(x->attributes, 0, NULL);
	assert_non_null(attrs);
	assert_int_equal(json_object_size(attrs), SPANQUERY_DETAIL_ATTRS);
	assert_int_equal(json_integer_value(json_object_get(attrs, "k01")), 1);
	assert_non_null(json_object_get(attrs, "k40"));
	assert_null(json_object_get(attrs, "k41"));
	json_decref(attrs);
	x = &d->v[1];
	assert_true(x->found);
	assert_int_equal(x->http_status, 200);
	assert_int_equal(x->grpc_code, -1);
	assert_null(x->peer);
	assert_null(x->exception_type);
	assert_null(x->attributes); /* not asked */
	assert_false(d->v[2].found);
	assert_int_equal(d->v[2].http_status, -1);
	spanquery_details_free(d);
	spanquery_details_free(NULL);

	/* long values: with "long" among the first 40 keys */
	keys[0].with_attributes = true;
	PQclear(sql(c,
		    "UPDATE spans SET attributes = jsonb_build_object('long', "
		    "repeat('é', 500), 'n', 7) WHERE span_id = "
		    "'\\x00000000000000d4'",
		    0, NULL));
	assert_int_equal(spanquery_details_send(c, keys, 1, &err), STATUS_OK);
	assert_int_equal(spanquery_details_recv(c, 1, &d, &err), STATUS_OK);
	attrs = json_loads(d->v[0].attributes, 0, NULL);
	assert_non_null(attrs);
	{
		const char *v =
			json_string_value(json_object_get(attrs, "long"));

		assert_non_null(v);
		/* 160 two-byte characters and "…" (3 bytes) */
		assert_int_equal(strlen(v), 2 * SPANQUERY_DETAIL_VALUE + 3);
		assert_string_equal(v + 2 * SPANQUERY_DETAIL_VALUE, "…");
	}
	assert_int_equal(json_integer_value(json_object_get(attrs, "n")), 7);
	json_decref(attrs);
	spanquery_details_free(d);

	for (size_t i = 0; i < ARRAY_LEN(many); i++)
		many[i] = keys[1];
	err.client[0] = '\0';
	assert_int_equal(spanquery_details_send(
				 c, many, SPANQUERY_MAX_DETAILS + 1, &err),
			 STATUS_INVALID);
	assert_true(err.client[0] != '\0');
	assert_int_equal(
		spanquery_details_send(c, many, SPANQUERY_MAX_DETAILS, &err),
		STATUS_OK);
	assert_int_equal(
		spanquery_details_recv(c, SPANQUERY_MAX_DETAILS, &d, &err),
		STATUS_OK);
	assert_true(d->v[SPANQUERY_MAX_DETAILS - 1].found);
	spanquery_details_free(d);
	PQclear(sql(c, "DELETE FROM spans WHERE service_name = 'det'", 0,
		    NULL));
	pg_release(c);
}

/* ---- services ---------------------------------------------------------- */

static void
test_services(void **state)
{
	/* byte order (the test cluster's collation is C); ghost's spans
	 * were deleted, its rollup rows do not count */
	static const char *const want[] = {"Zeta-svc",	  "cart",    "checkout",
					   "checkout-v2", "ledger",  "many",
					   "tr-back",	  "tr-front"};
	struct spanquery_names *nm = NULL;
	struct pg_conn *c = conn();
	struct pg_error err;

	(void)state;
	assert_int_equal(spanquery_services(c, &nm, &err), STATUS_OK);
	if (nm->n != ARRAY_LEN(want)) {
		for (size_t i = 0; i < nm->n; i++)
			print_error("  %s\n", nm->names[i]);
		fail_msg("%zu names, want %zu", nm->n, ARRAY_LEN(want));
	}
	for (size_t i = 0; i < nm->n; i++)
		assert_string_equal(nm->names[i], want[i]);
	spanquery_names_free(nm);
	spanquery_names_free(NULL);
	pg_release(c);
}

/* ---- trace ids against a brute force ----------------------------------- */

/*
 * "tr-walk": WALK_TRACES traces of 1-8 spans over both sources and 5
 * minutes, each trace's spans a few seconds apart, one trace of 400 spans
 * over the whole 5 minutes; start times on 150 instants 2 s apart (many
 * ties, the spans told apart by their nanoseconds only) and trace ids in no
 * relation to time.  "tr-huge": one trace of HUGE_SPANS spans.  Written by
 * the last test: test_services lists every service.
 */
#define WALK_TRACES 80
#define WALK_BIG    17
#define HUGE_SPANS  20001

static void
add_walk_spans(int64_t w_ms)
{
	for (uint32_t t = 0; t < WALK_TRACES; t++) {
		uint32_t h = t * 2654435761u;
		int n = t == WALK_BIG ? 400 : 1 + (int)(uniform() * 8);
		int at = (int)(uniform() * 150);

		for (int i = 0; i < n; i++) {
			struct otlp_span *s = new_span();
			int point = t == WALK_BIG ? (int)(uniform() * 150)
						  : at + (int)(uniform() * 4);

			if (point > 149)
				point = 149;
			memset(s->trace_id, 0, 16);
			s->trace_id[0] = 0xd0;
			s->trace_id[1] = (uint8_t)(h >> 24);
			s->trace_id[2] = (uint8_t)(h >> 16);
			s->trace_id[3] = (uint8_t)(h >> 8);
			s->trace_id[15] = (uint8_t)t;
			s->source = uniform() < 0.5 ? EB : OT;
			s->service_name = "tr-walk";
			s->kind = 2;
			s->start_unix_nano = (uint64_t)w_ms * 1000000u +
					     (uint64_t)point * 2000000000u +
					     (uint64_t)(uniform() * 1000);
			s->end_unix_nano = s->start_unix_nano + 1000000u +
					   (uint64_t)(uniform() * 99e6);
		}
	}
	for (uint32_t i = 0; i < HUGE_SPANS; i++) {
		struct otlp_span *s = new_span();

		memset(s->trace_id, 0, 16);
		s->trace_id[0] = 0xe0;
		s->source = OT;
		s->service_name = "tr-huge";
		s->kind = 1;
		s->start_unix_nano =
			(uint64_t)w_ms * 1000000u + 400000000000u + i * 1000u;
		s->end_unix_nano = s->start_unix_nano + 5000000u;
	}
}

/* Every matching trace, best first, computed over all its spans. */
static const char walk_ref_sql[] =
	"SELECT encode(trace_id, 'hex'), CASE WHEN $6::bool "
	"THEN max(duration_ns) ELSE (extract(epoch FROM max(start_time)) "
	"* 1000000)::bigint END FROM spans "
	"WHERE start_time >= $1::timestamptz AND start_time < $2::timestamptz "
	"AND ($3::text IS NULL OR service_name = $3) "
	"AND ($4::bigint IS NULL OR duration_ns >= $4) "
	"AND ($5::text IS NULL OR source = $5) "
	"GROUP BY trace_id ORDER BY 2 DESC, 1";

/* n ids with their keys, and more, are the best max of the brute force
 * ref (walk_ref_sql's rows, cleared here) and whether it has more. */
static void
check_ref(const char *what, PGresult *ref, size_t max, const uint8_t (*ids)[16],
	  const int64_t *keys, size_t n, bool more)
{
	size_t total = (size_t)PQntuples(ref), want = total < max ? total : max;

	if (n != want || more != (total > max))
		fail_msg("%s: %zu traces, more %d; want %zu of %zu", what, n,
			 more, want, total);
	for (size_t k = 0; k < n; k++) {
		char hex[33];
		int64_t key = 0;

		hex_encode(ids[k], 16, hex);
		assert_int_equal(pg_text_i64(PQgetvalue(ref, (int)k, 1), &key),
				 STATUS_OK);
		if (strcmp(hex, PQgetvalue(ref, (int)k, 0)) != 0 ||
		    keys[k] != key)
			fail_msg("%s: #%zu is %s (%" PRId64 "), want %s (%s)",
				 what, k, hex, keys[k],
				 PQgetvalue(ref, (int)k, 0),
				 PQgetvalue(ref, (int)k, 1));
	}
	PQclear(ref);
}

static void
check_walk(struct pg_conn *c, const char *source,
	   const struct spanquery_trace_filter *f)
{
	char from[PG_TS_TEXT_MAX], to[PG_TS_TEXT_MAX], mind[24], what[160];
	const char *v[6] = {from, to,	  f->service,
			    NULL, source, f->slowest ? "t" : "f"};
	uint8_t ids[SPANQUERY_MAX_TRACES][16];
	int64_t keys[SPANQUERY_MAX_TRACES];
	struct pg_error err;
	PGresult *ref;
	size_t n = 0;
	bool more = false;

	pg_ts_text(f->from_ms, from, sizeof(from));
	pg_ts_text(f->to_ms, to, sizeof(to));
	snprintf(mind, sizeof(mind), "%" PRId64, f->min_duration_ns);
	if (f->min_duration_ns >= 0)
		v[3] = mind;
	snprintf(what, sizeof(what), "%s %s %s..%s min %s %s max %zu", source,
		 f->service != NULL ? f->service : "(any)", from, to,
		 v[3] != NULL ? mind : "-", f->slowest ? "slowest" : "recent",
		 f->max_traces);
	ref = sql(c, walk_ref_sql, 6, v);
	assert_int_equal(spanquery_trace_ids_send(c, source, f, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_trace_ids_recv(c, SPANQUERY_MAX_TRACES, ids,
						  keys, &n, &more, &err),
			 STATUS_OK);
	check_ref(what, ref, f->max_traces, ids, keys, n, more);
}

/*
 * spanquery_recent_send with every source at once (source NULL): the best
 * max_traces of the brute force over all sources, more exactly when more
 * match, and every span of those traces, each with its source: the spans
 * each source's spanquery_spans_* gives for them, together.
 */
static void
check_recent_all(struct pg_conn *c, const struct spanquery_trace_filter *f)
{
	static const char *const sources[] = {"ebpf", "otlp"};
	char from[PG_TS_TEXT_MAX], to[PG_TS_TEXT_MAX], what[160];
	const char *v[6] = {from, to, f->service, NULL, NULL, "f"};
	uint8_t ids[SPANQUERY_MAX_TRACES][16];
	int64_t keys[SPANQUERY_MAX_TRACES];
	struct spanquery_spans *got = NULL, *part[2] = {NULL, NULL};
	struct spanquery_spans want = {0};
	struct pg_error err;
	PGresult *ref;
	size_t n = 99;
	bool more = true;

	pg_ts_text(f->from_ms, from, sizeof(from));
	pg_ts_text(f->to_ms, to, sizeof(to));
	snprintf(what, sizeof(what), "every source %s %s..%s max %zu",
		 f->service, from, to, f->max_traces);
	ref = sql(c, walk_ref_sql, 6, v);
	assert_int_equal(spanquery_recent_send(c, NULL, f, &err), STATUS_OK);
	assert_int_equal(spanquery_recent_recv(c, f->max_traces, ids, keys, &n,
					       &more, &got, &err),
			 STATUS_OK);
	check_ref(what, ref, f->max_traces, ids, keys, n, more);
	/* the spans: each source's fetch of those ids, together */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(spanquery_spans_send(c, sources[i],
						      (const uint8_t(*)[16])ids,
						      n, &err),
				 STATUS_OK);
		assert_int_equal(spanquery_spans_recv(c, &part[i], &err),
				 STATUS_OK);
		assert_null(part[i]->spans[0].source);
	}
	want.n = part[0]->n + part[1]->n;
	want.spans = calloc(want.n + 1, sizeof(*want.spans));
	assert_non_null(want.spans);
	memcpy(want.spans, part[0]->spans, part[0]->n * sizeof(*want.spans));
	memcpy(want.spans + part[0]->n, part[1]->spans,
	       part[1]->n * sizeof(*want.spans));
	same_spans(what, got, &want);
	/* and each with its own source: span ids are unique here */
	for (size_t j = 0; j < got->n; j++) {
		const struct spanquery_span *x = &got->spans[j];
		int from_part = -1;

		for (int i = 0; i < 2; i++)
			for (size_t m = 0; m < part[i]->n; m++)
				if (memcmp(part[i]->spans[m].span_id,
					   x->span_id, 8) == 0)
					from_part = i;
		assert_non_null(x->source);
		if (from_part < 0 || strcmp(x->source, sources[from_part]) != 0)
			fail_msg("%s: span #%zu has source %s", what, j,
				 x->source);
	}
	free(want.spans);
	spanquery_spans_free(part[0]);
	spanquery_spans_free(part[1]);
	spanquery_spans_free(got);
}

/*
 * Every path (the walk; min_duration and slowest grouped) returns the best
 * max_traces of the brute force, ties to the lower id, and more exactly
 * when more traces match; the grouped paths say more once they read their
 * 20,000 spans, the walk does not need to.
 */
static void
test_trace_ids_walk(void **state)
{
	static const size_t maxes[] = {1, 2, 7, 40, SPANQUERY_MAX_TRACES};
	static const char *const sources[] = {"ebpf", "otlp"};
	static const char *const services[] = {"tr-walk", NULL};
	static const int64_t mins[] = {-1, 50000000};
	struct pg_conn *c = conn();
	int64_t w = base_ms - 100 * MIN_MS;
	const int64_t windows[][2] = {
		{w - MIN_MS, w + 310 * 1000}, /* not tr-huge */
		{w + 60 * 1000,
		 w + 200 * 1000}, /* on instants, end exclusive */
	};

	(void)state;
	add_walk_spans(w);
	flush_spans(c);
	/* every combination: source, service, window, min, sort, max */
	for (size_t i = 0; i < 2 * 2 * 2 * 2 * 2 * ARRAY_LEN(maxes); i++) {
		const int64_t *win = windows[i / 2 % 2];
		struct spanquery_trace_filter f = {
			.service = services[i / 4 % 2],
			.from_ms = win[0],
			.to_ms = win[1],
			.min_duration_ns = mins[i / 8 % 2],
			.slowest = i / 16 % 2 == 1,
			.max_traces = maxes[i / 32],
		};

		check_walk(c, sources[i % 2], &f);
		if (spanquery_trace_walks(&f))
			check_recent(c, "brute force", sources[i % 2], &f,
				     f.max_traces);
		if (spanquery_trace_walks(&f) && f.service != NULL &&
		    i % 2 == 0)
			check_recent_all(c, &f);
	}
	/* every source at once is for one service */
	{
		struct spanquery_trace_filter f = {
			.from_ms = w,
			.to_ms = w + 310 * 1000,
			.min_duration_ns = -1,
			.max_traces = 10,
		};
		struct pg_error err;

		assert_int_equal(spanquery_recent_send(c, NULL, &f, &err),
				 STATUS_INVALID);
		assert_true(err.client[0] != '\0');
	}
	/* one trace of 20,001 spans: the walk knows it is alone, the
	 * grouped paths stop reading at 20,000 spans and say more may
	 * match */
	for (int k = 0; k < 3; k++) {
		struct spanquery_trace_filter f = {
			.service = "tr-huge",
			.from_ms = w,
			.to_ms = w + 500 * 1000,
			.min_duration_ns = k == 1 ? 1000000 : -1,
			.max_traces = 10,
			.slowest = k == 2,
		};
		uint8_t ids[10][16];
		int64_t keys[10];
		struct pg_error err;
		size_t n = 0;
		bool more = k == 0;

		assert_int_equal(spanquery_trace_ids_send(c, "otlp", &f, &err),
				 STATUS_OK);
		assert_int_equal(spanquery_trace_ids_recv(c, 10, ids, keys, &n,
							  &more, &err),
				 STATUS_OK);
		assert_int_equal(n, 1);
		assert_int_equal(ids[0][0], 0xe0);
		assert_int_equal(more, k != 0);
	}
	pg_release(c);
}

/*
 * More spans than SPANQUERY_MAX_SPANS for the traces found: the combined
 * statement says so (the tool then fetches them again in order), and
 * spans_stmt keeps the first ones by trace id and start.  "tr-many": two
 * traces of SPANQUERY_MAX_SPANS / 2 + 1 spans.
 */
static void
test_recent_truncated(void **state)
{
	int64_t w = base_ms - 200 * MIN_MS;
	struct spanquery_trace_filter f = {
		.service = "tr-many",
		.from_ms = w,
		.to_ms = w + 10 * MIN_MS,
		.min_duration_ns = -1,
		.max_traces = 10,
	};
	struct spanquery_spans *got = NULL, *want = NULL;
	struct pg_conn *c = conn();
	uint8_t ids[10][16];
	int64_t keys[10];
	struct pg_error err;
	size_t n = 0;
	bool more = true;

	(void)state;
	for (int t = 0; t < 2; t++)
		for (uint32_t i = 0; i < SPANQUERY_MAX_SPANS / 2 + 1; i++) {
			struct otlp_span *s = new_span();

			memset(s->trace_id, 0, 16);
			s->trace_id[0] = 0xf0;
			s->trace_id[15] = (uint8_t)t;
			s->source = OT;
			s->service_name = "tr-many";
			s->kind = 1;
			s->start_unix_nano = (uint64_t)w * 1000000u +
					     (uint64_t)t * 60000000000u +
					     i * 1000u;
			s->end_unix_nano = s->start_unix_nano + 1000u;
		}
	flush_spans(c);
	assert_int_equal(spanquery_recent_send(c, "otlp", &f, &err), STATUS_OK);
	assert_int_equal(
		spanquery_recent_recv(c, 10, ids, keys, &n, &more, &got, &err),
		STATUS_OK);
	assert_int_equal(n, 2);
	assert_false(more);
	assert_true(got->truncated);
	assert_int_equal(got->n, SPANQUERY_MAX_SPANS);
	assert_int_equal(spanquery_spans_send(
				 c, "otlp", (const uint8_t(*)[16])ids, n, &err),
			 STATUS_OK);
	assert_int_equal(spanquery_spans_recv(c, &want, &err), STATUS_OK);
	assert_true(want->truncated);
	assert_int_equal(want->n, SPANQUERY_MAX_SPANS);
	/* every source at once: truncated as well (the tool then asks each
	 * source) */
	spanquery_spans_free(got);
	got = NULL;
	assert_int_equal(spanquery_recent_send(c, NULL, &f, &err), STATUS_OK);
	assert_int_equal(
		spanquery_recent_recv(c, 10, ids, keys, &n, &more, &got, &err),
		STATUS_OK);
	assert_int_equal(n, 2);
	assert_true(got->truncated);
	assert_int_equal(got->n, SPANQUERY_MAX_SPANS);
	assert_string_equal(got->spans[0].source, "otlp");
	/* the first by trace id and start: all of trace 0, then trace 1's
	 * earliest */
	assert_int_equal(want->spans[0].trace_id[15], 0);
	assert_int_equal(want->spans[want->n - 1].trace_id[15], 1);
	assert_int_equal(want->spans[want->n - 1].start_ns,
			 (uint64_t)w * 1000000u + 60000000000u +
				 (SPANQUERY_MAX_SPANS / 2 - 2) * 1000u);
	spanquery_spans_free(got);
	spanquery_spans_free(want);
	pg_release(c);
}

/*
 * The walk's statements run on generic plans (planned once per session),
 * and those read the (service_name, source, start_time) index, or the
 * (source, start_time) one for any service, as the custom plans did.
 *
 * A generic plan is chosen from the partition's statistics, not from the
 * window, so the partitions the window falls in are first given what a
 * day of a real store holds: many services, each a small share of its
 * rows ("tr-noise-*", 20000 OTLP spans over the window, analysed).
 * Without them, which index the planner takes for the test's few hundred
 * spans depended on how many of the other tests' spans shared the day,
 * that is on the hour the test ran.
 */
static void
add_noise(struct pg_conn *c)
{
	char from[PG_TS_TEXT_MAX];
	const char *v[1] = {from};

	pg_ts_text(trace_w_ms - 60000, from, sizeof(from));
	PQclear(sql(c,
		    "INSERT INTO spans (start_time, duration_ns, trace_id, "
		    "span_id, source, name, service_name) "
		    "SELECT $1::timestamptz + (i % 360) * interval '1 second', "
		    "1000, decode(md5('noise-t' || i), 'hex'), "
		    "substring(decode(md5('noise-s' || i), 'hex') FOR 8), "
		    "'otlp', 'GET /noise', 'tr-noise-' || (i % 200) "
		    "FROM generate_series(1, 20000) AS i",
		    1, v));
	PQclear(sql(c, "ANALYZE spans", 0, NULL));
}

static void
test_walk_generic_plans(void **state)
{
	static const struct {
		const char *stmt, *service, *index, *source;
	} cases[] = {
		{"spanquery_recent_svc", "tr-front",
		 "service_name_source_start_time_idx", "otlp"},
		{"spanquery_recent_any", NULL, "source_start_time_idx", "otlp"},
		{"spanquery_walk_svc", "tr-front",
		 "service_name_source_start_time_idx", "otlp"},
		{"spanquery_walk_any", NULL, "source_start_time_idx", "otlp"},
		/* every source at once: (service_name, start_time) */
		{"spanquery_recent_all", "tr-front",
		 "service_name_start_time_idx", NULL},
	};
	struct pg_conn *c = conn();

	(void)state;
	add_noise(c);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct spanquery_trace_filter f = {
			.service = cases[i].service,
			.from_ms = trace_w_ms - 60000,
			.to_ms = trace_w_ms + 300000,
			.min_duration_ns = -1,
			.max_traces = 10,
		};
		const char *name[1] = {cases[i].stmt};
		char from[PG_TS_TEXT_MAX], to[PG_TS_TEXT_MAX], explain[400];
		struct spanquery_spans *sp = NULL;
		uint8_t ids[10][16];
		int64_t keys[10];
		struct pg_error err;
		PGresult *res;
		size_t n = 0;
		bool more = false, seen = false;
		long plans[2][2] = {{0, 0}, {0, 0}}; /* before / after */

		for (int k = 0; k < 3; k++) {
			if (k > 0) {
				res = sql(c,
					  "SELECT generic_plans, custom_plans "
					  "FROM pg_prepared_statements WHERE "
					  "name = $1",
					  1, name);
				assert_int_equal(PQntuples(res), 1);
				plans[k - 1][0] =
					strtol(PQgetvalue(res, 0, 0), NULL, 10);
				plans[k - 1][1] =
					strtol(PQgetvalue(res, 0, 1), NULL, 10);
				PQclear(res);
			}
			if (k == 2)
				break;
			if (strncmp(cases[i].stmt, "spanquery_recent", 16) ==
			    0) {
				assert_int_equal(
					spanquery_recent_send(
						c, cases[i].source, &f, &err),
					STATUS_OK);
				assert_int_equal(spanquery_recent_recv(
							 c, 10, ids, keys, &n,
							 &more, &sp, &err),
						 STATUS_OK);
				spanquery_spans_free(sp);
				sp = NULL;
			} else {
				assert_int_equal(spanquery_trace_ids_send(
							 c, "otlp", &f, &err),
						 STATUS_OK);
				assert_int_equal(spanquery_trace_ids_recv(
							 c, 10, ids, keys, &n,
							 &more, &err),
						 STATUS_OK);
			}
			assert_true(n > 0);
		}
		/* the second execution: a generic plan, no custom one */
		assert_int_equal(plans[1][0], plans[0][0] + 1);
		assert_int_equal(plans[1][1], plans[0][1]);
		assert_int_equal(plans[1][1], 0);
		/* the plan it runs, as EXPLAIN shows it in the same mode */
		pg_ts_text(f.from_ms, from, sizeof(from));
		pg_ts_text(f.to_ms, to, sizeof(to));
		if (cases[i].source == NULL)
			snprintf(explain, sizeof(explain),
				 "EXPLAIN EXECUTE %s('%s', '%s', 10, '%s')",
				 cases[i].stmt, from, to, cases[i].service);
		else
			snprintf(explain, sizeof(explain),
				 "EXPLAIN EXECUTE %s('%s', '%s', 10, 'otlp'%s)",
				 cases[i].stmt, from, to,
				 cases[i].service != NULL ? ", 'tr-front'"
							  : "");
		assert_int_equal(pg_begin(c, &err), STATUS_OK);
		PQclear(sql(c, "SET LOCAL plan_cache_mode = force_generic_plan",
			    0, NULL));
		res = sql(c, explain, 0, NULL);
		/* the walk's scans are all of the index (the combined
		 * statement's span fetch reads the primary key, or what the
		 * planner likes for an empty partition) */
		for (int r = 0; r < PQntuples(res); r++) {
			const char *line = PQgetvalue(res, r, 0);
			bool right = strstr(line, cases[i].index) != NULL &&
				     (cases[i].service != NULL ||
				      strstr(line, "service_name") == NULL);

			seen |= right;
			if (strstr(line, "Scan") != NULL &&
			    strstr(line, " on spans") != NULL && !right &&
			    strncmp(cases[i].stmt, "spanquery_walk", 14) == 0)
				fail_msg("%s: %s", cases[i].stmt, line);
		}
		if (!seen)
			fail_msg("%s: no scan of %s", cases[i].stmt,
				 cases[i].index);
		PQclear(res);
		assert_int_equal(pg_rollback(c, &err), STATUS_OK);
	}
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_protocol_names),
		cmocka_unit_test(test_suggest_cases),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_suggest_max_and_duplicates),
		cmocka_unit_test(test_suggest_long_names),
		cmocka_unit_test(test_suggest_short_names),
	};
	/* in this order: the truncation test adds "many", the dirty-hour
	 * test adds late ledger spans, the walk test "tr-walk" and
	 * "tr-huge", the generic-plan test "tr-noise-*" */
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_metrics_filters),
		cmocka_unit_test(test_metrics_rollup),
		cmocka_unit_test(test_metrics_minute_edges),
		cmocka_unit_test(test_metrics_reads_rollup_rows),
		cmocka_unit_test(test_metrics_sources),
		cmocka_unit_test(test_metrics_bad_filter),
		cmocka_unit_test(test_trace_ids),
		cmocka_unit_test(test_trace_ids_bad_filter),
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_spans_bounds),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_details),
		cmocka_unit_test(test_trace_prefix),
		cmocka_unit_test(test_metrics_truncated),
		cmocka_unit_test(test_metrics_dirty_hour),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_trace_ids_walk),
		cmocka_unit_test(test_walk_generic_plans),
		cmocka_unit_test(test_recent_truncated),
	};
	int failed = cmocka_run_group_tests_name("spanquery, pure", pure, NULL,
						 NULL);

	failed += cmocka_run_group_tests_name("spanquery, store", db,
					      group_setup, group_teardown);
	return failed;
}

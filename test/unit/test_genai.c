/*
 * test_genai.c - unit tests for lib/telemetry/genai against a migrated throwaway
 * PostgreSQL holding spans written with lib/otlp/store: sessions (spans,
 * traces, errors, services, bottleneck, calls by model, slowest and most
 * expensive calls), recent sessions, and usage by model, service and
 * session against the previous period, each number compared with this
 * test's own SQL (a full walk of the traces, DISTINCT ON for the source
 * copies, sextant_genai_cost_usd per span) and the key ones with literals
 * worked out by hand.  The data has nested agent spans (invoke_agent >
 * chat, invoke_agent > execute_tool > invoke_agent > HTTP > chat), an
 * agent reporting tokens with no chat below, unknown models, a gpt-4o
 * price change, eBPF copies of OTLP spans and a parent cycle.  Rows by
 * model are by family (sextant_genai_family, checked on a table of names)
 * and a failed call is sextant_span_outcome's; sessions are ranked by
 * cost both ways.
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
#include "telemetry/genai.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN_MS	     (60LL * 1000)
#define HOUR_MS	     (60 * MIN_MS)
#define DAY_MS	     (24 * HOUR_MS)

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static int64_t now_ms; /* wall clock when the data was written */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the data ---------------------------------------------------------- */

#define OT OTLP_SOURCE_OTLP
#define EB OTLP_SOURCE_EBPF

/* Minutes before now at which each trace starts (index: trace number). */
static const int trace_min[] = {0, 40, 35, 30, 20, 80, 10, 15, 25};

struct tspan {
	int trace;
	unsigned id, parent; /* low bytes of the span ids; parent 0: root */
	int source;
	const char *service, *name;
	int64_t start_ms, end_ms; /* from the trace's start */
	int status;
	const char *message;
	const char *session;
	const char *op, *provider, *req_model, *resp_model;
	int64_t in, out; /* -1: absent */
};

#define NOTOK -1, -1

static const struct tspan tspans[] = {
	/* session alpha, trace 1: invoke_agent > chat, tool, chat */
	{1, 0x101, 0, OT, "gateway", "POST /chat", 0, 9000, 0, NULL, NULL, NULL,
	 NULL, NULL, NULL, NOTOK},
	{1, 0x102, 0x101, OT, "assistant", "POST /v1/messages", 100, 8900, 0,
	 NULL, "sess-alpha", NULL, NULL, NULL, NULL, NOTOK},
	{1, 0x102, 0x101, EB, "assistant", "POST /v1/messages", 100, 8900, 0,
	 NULL, NULL, NULL, NULL, NULL, NULL, NOTOK},
	{1, 0x103, 0x102, OT, "assistant", "invoke_agent shopper", 200, 8800, 0,
	 NULL, "sess-alpha", "invoke_agent", NULL, NULL, NULL, NOTOK},
	{1, 0x104, 0x103, OT, "assistant", "chat gpt-4o", 300, 2300, 0, NULL,
	 "sess-alpha", "chat", "openai", "gpt-4o", "gpt-4o-2024-08-06", 1000,
	 200},
	/* an eBPF copy with the GenAI attributes too: counted once */
	{1, 0x104, 0x103, EB, "assistant", "chat gpt-4o", 300, 2300, 0, NULL,
	 "sess-alpha", "chat", "openai", "gpt-4o", "gpt-4o-2024-08-06", 1000,
	 200},
	{1, 0x105, 0x103, OT, "assistant", "execute_tool search", 2400, 3400, 0,
	 NULL, "sess-alpha", "execute_tool", NULL, NULL, NULL, NOTOK},
	{1, 0x106, 0x105, OT, "search", "GET /search", 2450, 3350, 2,
	 "upstream timeout for bob@example.com", NULL, NULL, NULL, NULL, NULL,
	 NOTOK},
	{1, 0x107, 0x103, OT, "assistant", "chat gpt-4o", 3500, 8500, 0, NULL,
	 "sess-alpha", "chat", "openai", "gpt-4o", "gpt-4o-2024-08-06", 3000,
	 800},
	/* trace 2: agents reporting the sums of what runs below them */
	{2, 0x201, 0, OT, "assistant", "POST /v1/messages", 0, 6000, 0, NULL,
	 "sess-alpha", NULL, NULL, NULL, NULL, NOTOK},
	{2, 0x202, 0x201, OT, "assistant", "invoke_agent planner", 100, 5900, 0,
	 NULL, "sess-alpha", "invoke_agent", "anthropic", "claude-sonnet-4",
	 NULL, 3000, 600},
	{2, 0x203, 0x202, OT, "assistant", "chat claude", 200, 2200, 0, NULL,
	 "sess-alpha", "chat", "anthropic", "claude-sonnet-4",
	 "claude-sonnet-4-20250514", 2000, 400},
	{2, 0x204, 0x202, OT, "assistant", "execute_tool delegate", 2300, 5800,
	 0, NULL, "sess-alpha", "execute_tool", NULL, NULL, NULL, NOTOK},
	{2, 0x205, 0x204, OT, "assistant", "invoke_agent helper", 2400, 5700, 0,
	 NULL, "sess-alpha", "invoke_agent", "openai", "gpt-4o-mini", NULL,
	 1000, 200},
	{2, 0x206, 0x205, OT, "assistant", "POST api.openai.com", 2500, 5600, 0,
	 NULL, NULL, NULL, NULL, NULL, NULL, NOTOK},
	{2, 0x207, 0x206, OT, "assistant", "chat gpt-4o-mini", 2600, 5500, 0,
	 NULL, "sess-alpha", "chat", "openai", "gpt-4o-mini", NULL, 1000, 200},
	/* trace 3: an agent with tokens and no chat below (a call), an
	 * unknown model, a failed call without tokens, and gpt-4o after its
	 * price change (32 minutes ago) */
	{3, 0x301, 0, OT, "assistant", "POST /v1/messages", 0, 4000, 0, NULL,
	 "sess-alpha", NULL, NULL, NULL, NULL, NOTOK},
	{3, 0x302, 0x301, OT, "assistant", "invoke_agent summarizer", 100, 1500,
	 0, NULL, "sess-alpha", "invoke_agent", "openai", "gpt-4.1", NULL, 700,
	 70},
	{3, 0x303, 0x301, OT, "assistant", "chat llama", 1600, 2600, 0, NULL,
	 "sess-alpha", "chat", "meta", "llama-3-70b", NULL, 100, 10},
	{3, 0x304, 0x301, OT, "assistant", "chat gpt-4o", 2700, 2900, 2,
	 "rate limited", "sess-alpha", "chat", "openai", "gpt-4o", NULL, NOTOK},
	{3, 0x305, 0x301, OT, "assistant", "chat gpt-4o", 3000, 3900, 0, NULL,
	 "sess-alpha", "chat", "openai", "gpt-4o", "gpt-4o-2024-08-06", 400,
	 100},
	/* session beta */
	{4, 0x401, 0, OT, "assistant", "POST /v1/messages", 0, 3000, 2,
	 "internal error", "sess-beta", NULL, NULL, NULL, NULL, NOTOK},
	{4, 0x402, 0x401, OT, "assistant", "chat gpt-4o-mini", 100, 1100, 0,
	 NULL, "sess-beta", "chat", "openai", "gpt-4o-mini", NULL, 500, 50},
	{4, 0x403, 0x401, OT, "assistant", "chat gpt-4o-mini", 1200, 2900, 2,
	 "token=abc123 expired", "sess-beta", "chat", "openai", "gpt-4o-mini",
	 NULL, 800, 90},
	/* the previous hour: session old */
	{5, 0x501, 0, OT, "assistant", "POST /v1/messages", 0, 5000, 0, NULL,
	 "sess-old", NULL, NULL, NULL, NULL, NOTOK},
	{5, 0x502, 0x501, OT, "assistant", "chat gpt-4o", 100, 3100, 0, NULL,
	 "sess-old", "chat", "openai", "gpt-4o", NULL, 2000, 300},
	{5, 0x503, 0x501, OT, "assistant", "chat haiku", 3200, 3400, 2, NULL,
	 "sess-old", "chat", "anthropic", "claude-3-5-haiku", NULL, 100, 20},
	/* no session: a batch job, embeddings of an unpriced model */
	{6, 0x601, 0, OT, "batch", "summarize", 0, 7000, 0, NULL, NULL, NULL,
	 NULL, NULL, NULL, NOTOK},
	{6, 0x602, 0x601, OT, "batch", "chat gemini", 100, 6100, 0, NULL, NULL,
	 "chat", "gcp.gemini", "gemini-2.5-flash", NULL, 5000, 1000},
	{6, 0x603, 0x601, OT, "batch", "embeddings", 6200, 6300, 0, NULL, NULL,
	 "embeddings", "openai", "text-embedding-3-small", NULL, 300, -1},
	/* a parent cycle: the agent's tokens count, the walk ends */
	{7, 0x701, 0x702, OT, "loop", "invoke_agent looping", 0, 1000, 0, NULL,
	 NULL, "invoke_agent", "openai", "gpt-4o-mini", NULL, 50, 5},
	{7, 0x702, 0x701, OT, "loop", "execute_tool again", 100, 900, 0, NULL,
	 NULL, "execute_tool", NULL, NULL, NULL, NOTOK},
	/* session gamma: a session id with an e-mail in it */
	{8, 0x801, 0, OT, "assistant", "chat gpt-4o-mini", 0, 500, 0, NULL,
	 "carol@example.com-1", "chat", "openai", "gpt-4o-mini", NULL, 10, 1},
};

static uint8_t trace_ids[ARRAY_LEN(trace_min)][16];

static uint64_t
trace_start_ns(int trace)
{
	return (uint64_t)(now_ms - trace_min[trace] * MIN_MS) * 1000000u + 123u;
}

static void
write_spans(struct pg_conn *c)
{
	struct otlp_span *s = calloc(ARRAY_LEN(tspans), sizeof(*s));
	struct otlp_batch b = {.spans = s, .n_spans = ARRAY_LEN(tspans)};
	struct pg_error err;
	int64_t inserted = -1;

	assert_non_null(s);
	for (size_t t = 1; t < ARRAY_LEN(trace_min); t++) {
		memset(trace_ids[t], 0, 16);
		trace_ids[t][0] = 0x9a;
		trace_ids[t][15] = (uint8_t)t;
	}
	for (size_t i = 0; i < ARRAY_LEN(tspans); i++) {
		const struct tspan *t = &tspans[i];

		memcpy(s[i].trace_id, trace_ids[t->trace], 16);
		s[i].span_id[6] = (uint8_t)(t->id >> 8);
		s[i].span_id[7] = (uint8_t)t->id;
		if (t->parent != 0) {
			s[i].has_parent = true;
			s[i].parent_span_id[6] = (uint8_t)(t->parent >> 8);
			s[i].parent_span_id[7] = (uint8_t)t->parent;
		}
		s[i].source = (enum otlp_source)t->source;
		s[i].service_name = t->service;
		s[i].name = t->name;
		s[i].kind = t->parent == 0 ? 2 : 1;
		s[i].start_unix_nano = trace_start_ns(t->trace) +
				       (uint64_t)t->start_ms * 1000000u;
		s[i].end_unix_nano = trace_start_ns(t->trace) +
				     (uint64_t)t->end_ms * 1000000u;
		s[i].status_code = t->status;
		s[i].status_message = t->message;
		s[i].session_id = t->session;
		s[i].gen_ai_operation = t->op;
		s[i].gen_ai_system = t->provider;
		s[i].gen_ai_request_model = t->req_model;
		s[i].gen_ai_response_model = t->resp_model;
		s[i].input_tokens = t->in;
		s[i].output_tokens = t->out;
		s[i].http_status = -1;
		s[i].grpc_status = -1;
	}
	if (store_write_spans(c, &b, &inserted, &err) != STATUS_OK)
		fail_msg("store: %s (%s)", err.client, err.detail);
	assert_int_equal(inserted, (int64_t)ARRAY_LEN(tspans));
	free(s);
}

/* ---- helpers ----------------------------------------------------------- */

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	assert_int_equal(pg_acquire(pool, NULL, 10000, &c, &err), STATUS_OK);
	return c;
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

static double
num(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col)
		       ? NAN
		       : strtod(PQgetvalue(res, row, col), NULL);
}

static uint64_t
unum(const PGresult *res, int row, int col)
{
	return strtoull(PQgetvalue(res, row, col), NULL, 10);
}

static void
assert_close(double got, double want, const char *what)
{
	if (isnan(want) && isnan(got))
		return;
	if (!(fabs(got - want) <= 1e-9 * fmax(1, fabs(want))))
		fail_msg("%s: got %.12g, want %.12g", what, got, want);
}

/*
 * The calls, in this test's own terms: one row per span id (the OTLP copy
 * first), the LLM operations, and the other spans with tokens unless a
 * span anywhere below them in the trace (a full walk, no time bounds) has
 * tokens too; cost by sextant_genai_cost_usd per span.
 */
#define WANT_CALLS                                                             \
	"WITH RECURSIVE sp AS (SELECT DISTINCT ON (trace_id, span_id) * "      \
	"FROM spans ORDER BY trace_id, span_id, (source = 'otlp') DESC), "     \
	"walk (rt, rs, t, s) AS (SELECT trace_id, span_id, trace_id, span_id " \
	"FROM sp WHERE (gen_ai_input_tokens IS NOT NULL OR "                   \
	"gen_ai_output_tokens IS NOT NULL) AND coalesce(gen_ai_operation NOT " \
	"IN ('chat', 'text_completion', 'generate_content', 'embeddings'), "   \
	"true) "                                                               \
	"UNION SELECT w.rt, w.rs, c.trace_id, c.span_id FROM walk w JOIN sp "  \
	"c ON c.trace_id = w.t AND c.parent_span_id = w.s), "                  \
	"covered AS (SELECT DISTINCT w.rt, w.rs FROM walk w JOIN sp c ON "     \
	"c.trace_id = w.t AND c.span_id = w.s WHERE w.s <> w.rs AND "          \
	"(c.gen_ai_input_tokens IS NOT NULL OR c.gen_ai_output_tokens IS NOT " \
	"NULL)), "                                                             \
	"calls AS (SELECT sp.*, sextant_genai_family(gen_ai_request_model, "   \
	"gen_ai_response_model) AS m, "                                        \
	"coalesce(gen_ai_response_model, gen_ai_request_model) AS exact, "     \
	"sextant_genai_cost_usd(gen_ai_provider, "                             \
	"coalesce(gen_ai_response_model, gen_ai_request_model), "              \
	"gen_ai_input_tokens, gen_ai_output_tokens, start_time) AS cost "      \
	"FROM sp WHERE gen_ai_operation IN ('chat', 'text_completion', "       \
	"'generate_content', 'embeddings') OR ((gen_ai_input_tokens IS NOT "   \
	"NULL OR gen_ai_output_tokens IS NOT NULL) AND (trace_id, span_id) "   \
	"NOT IN (SELECT rt, rs FROM covered))) "
#define FAILED_SQL                                                             \
	"sextant_span_outcome(kind, status_code, http_status_code, "           \
	"rpc_grpc_status_code) = 1"
#define WANT_STATS                                                             \
	"SELECT count(*), count(*) FILTER (WHERE " FAILED_SQL "), "            \
	"coalesce(sum(gen_ai_input_tokens), 0), "                              \
	"coalesce(sum(gen_ai_output_tokens), 0), coalesce(sum(cost), 0), "     \
	"count(cost), count(*) FILTER (WHERE cost IS NULL AND "                \
	"(gen_ai_input_tokens IS NOT NULL OR gen_ai_output_tokens IS NOT "     \
	"NULL)), percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ns), "   \
	"percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns), "          \
	"string_agg(DISTINCT coalesce(exact, ''), E'\\n') FILTER (WHERE cost " \
	"IS "                                                                  \
	"NULL AND (gen_ai_input_tokens IS NOT NULL OR gen_ai_output_tokens "   \
	"IS NOT NULL)) FROM calls WHERE "

/* The calls of the traces of session $1 (any time). */
#define IN_SESSION                                                             \
	"trace_id IN (SELECT trace_id FROM spans WHERE session_id = $1)"

/* pct: compare the percentiles; list: the unpriced models (else NULL). */
static void
check_stats(const struct genai_stats *got, PGresult *want, bool pct, bool list,
	    const char *what)
{
	char w[160];

	snprintf(w, sizeof(w), "%s: calls", what);
	assert_int_equal(PQntuples(want), 1);
	if (got->calls != unum(want, 0, 0))
		fail_msg("%s: got %" PRIu64 ", want %s", w, got->calls,
			 PQgetvalue(want, 0, 0));
	assert_int_equal(got->errors, unum(want, 0, 1));
	assert_int_equal(got->input_tokens, unum(want, 0, 2));
	assert_int_equal(got->output_tokens, unum(want, 0, 3));
	snprintf(w, sizeof(w), "%s: cost", what);
	assert_close(got->cost_usd, num(want, 0, 4), w);
	assert_int_equal(got->priced, unum(want, 0, 5));
	assert_int_equal(got->unpriced, unum(want, 0, 6));
	if (pct) {
		snprintf(w, sizeof(w), "%s: p50", what);
		assert_close(got->p50_ms, num(want, 0, 7) / 1e6, w);
		snprintf(w, sizeof(w), "%s: p95", what);
		assert_close(got->p95_ms, num(want, 0, 8) / 1e6, w);
	}
	if (!list || PQgetisnull(want, 0, 9))
		assert_null(got->unpriced_models);
	else
		assert_string_equal(got->unpriced_models,
				    PQgetvalue(want, 0, 9));
}

/* WANT_STATS over calls matching cond, with up to 4 parameters. */
static PGresult *
want_stats(struct pg_conn *c, const char *cond, int n, const char *const *v)
{
	char text[8192];

	snprintf(text, sizeof(text), "%s%s%s", WANT_CALLS, WANT_STATS, cond);
	return sql(c, text, n, v);
}

/* ---- setup ------------------------------------------------------------- */

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 3, .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	struct pg_conn *c;
	char err[512], at[48];
	const char *v[1] = {at};
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
	now_ms = wall_ms();
	c = conn();
	write_spans(c);
	/* gpt-4o doubles its price 32 minutes ago: traces 1 and 5 pay the
	 * seeded price, trace 3 the new one */
	ts_text(now_ms - 32 * MIN_MS, at, sizeof(at));
	PQclear(sql(c,
		    "INSERT INTO model_pricing (provider, model, "
		    "input_usd_per_million, output_usd_per_million, "
		    "effective_from) VALUES ('openai', 'gpt-4o', 5, 20, $1)",
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

/* ---- sessions ---------------------------------------------------------- */

static struct genai_session *
get_session(struct pg_conn *c, const char *id)
{
	struct genai_session *s = NULL;
	struct pg_error err;
	int rc = genai_session_get(c, id, now_ms - 7 * DAY_MS, now_ms + 1000,
				   &s, &err);

	if (rc != STATUS_OK)
		fail_msg("genai_session_get %s: %s (%s)", id, err.client,
			 err.detail);
	return s;
}

/* Literals worked out by hand from the table above. */
static void
test_session_alpha_literals(void **state)
{
	struct pg_conn *c = conn();
	struct genai_session *s = get_session(c, "sess-alpha");

	(void)state;
	/* 3 traces; 19 distinct spans (the two eBPF copies fold) */
	assert_int_equal(s->traces, 3);
	assert_int_equal(s->traces_read, 3);
	assert_int_equal(s->spans, 19);
	assert_int_equal(s->errors, 2); /* GET /search, the rate limit */
	assert_false(s->truncated);
	assert_int_equal(s->start_ns, trace_start_ns(1));
	assert_int_equal(s->end_ns, trace_start_ns(3) + 4000 * 1000000ull);
	assert_close(s->avg_trace_ms, (9000.0 + 6000 + 4000) / 3, "avg");
	assert_int_equal(s->n_services, 3);
	assert_string_equal(s->services[0].name, "assistant");
	assert_int_equal(s->services[0].spans, 17);
	assert_int_equal(s->services[0].errors, 1);
	assert_string_equal(s->services[1].name, "gateway");
	assert_string_equal(s->services[2].name, "search");
	assert_int_equal(s->services[2].errors, 1);
	/* the 5 s chat has no child: the largest self time */
	assert_true(s->has_bottleneck);
	assert_string_equal(s->bottleneck.name, "chat gpt-4o");
	assert_string_equal(s->bottleneck.span_id, "0000000000000107");
	assert_int_equal(s->bottleneck.self_ns, 5000 * 1000000ull);
	assert_int_equal(s->bottleneck.trace_duration_ns, 9000 * 1000000ull);
	assert_int_equal(s->n_error_spans, 2);
	assert_string_equal(s->error_spans[0].name, "GET /search");
	assert_string_equal(s->error_spans[0].message,
			    "upstream timeout for bob@example.com");
	assert_string_equal(s->error_spans[1].message, "rate limited");

	/* 8 calls: 2 chats (trace 1), 2 chats under agents that report
	 * their sums (trace 2), the summarizer agent, llama, the failed
	 * gpt-4o and the repriced gpt-4o (trace 3) */
	assert_int_equal(s->total.calls, 8);
	assert_int_equal(s->total.errors, 1);
	assert_int_equal(s->total.input_tokens,
			 1000 + 3000 + 2000 + 1000 + 700 + 100 + 400);
	assert_int_equal(s->total.output_tokens,
			 200 + 800 + 400 + 200 + 70 + 10 + 100);
	assert_int_equal(s->total.unpriced, 1);
	assert_int_equal(s->total.priced, 7);
	assert_string_equal(s->total.unpriced_models, "llama-3-70b");
	/* gpt-4o at 2.5/10 before the change, 5/20 after */
	assert_close(s->total.cost_usd,
		     (1000 * 2.5 + 200 * 10 + 3000 * 2.5 + 800 * 10 + 2000 * 3 +
		      400 * 15 + 1000 * 0.15 + 200 * 0.6 + 700 * 2 + 70 * 8 +
		      400 * 5 + 100 * 20) /
			     1e6,
		     "total cost");
	/* the most expensive call first: the 3,000-token gpt-4o */
	/* gpt-4o: the dated calls and the failed one that named only the
	 * request model; claude-sonnet-4 likewise with its snapshot */
	assert_int_equal(s->n_models, 5);
	assert_string_equal(s->models[0].model, "gpt-4o");
	assert_string_equal(s->models[0].snapshots, "gpt-4o-2024-08-06");
	assert_string_equal(s->models[0].provider, "openai");
	assert_int_equal(s->models[0].s.calls, 4);
	assert_int_equal(s->models[0].s.errors, 1);
	assert_close(s->models[0].s.cost_usd,
		     (1000 * 2.5 + 200 * 10 + 3000 * 2.5 + 800 * 10 + 400 * 5 +
		      100 * 20) /
			     1e6,
		     "gpt-4o cost");
	assert_int_equal(s->n_slowest, 5);
	assert_string_equal(s->slowest[0].span_id, "0000000000000107");
	assert_int_equal(s->slowest[0].duration_ns, 5000 * 1000000ull);
	assert_int_equal(s->slowest[0].input_tokens, 3000);
	assert_string_equal(s->slowest[1].name, "chat gpt-4o-mini");
	assert_int_equal(s->n_costliest, 5);
	assert_string_equal(s->costliest[0].span_id, "0000000000000107");
	assert_close(s->costliest[0].cost_usd, (3000 * 2.5 + 800 * 10) / 1e6,
		     "top cost");
	for (size_t i = 0; i < s->n_costliest; i++) {
		assert_true(s->costliest[i].priced);
		assert_string_not_equal(s->costliest[i].model, "llama-3-70b");
	}
	genai_session_free(s);
	pg_release(c);
}

static void
check_session(struct pg_conn *c, const char *id)
{
	const char *v[1] = {id};
	struct genai_session *s = get_session(c, id);
	PGresult *r;

	/* spans, errors, traces, extent: distinct span ids, OTLP first */
	r = sql(c,
		"WITH d AS (SELECT DISTINCT ON (trace_id, span_id) * FROM "
		"spans WHERE " IN_SESSION " ORDER BY trace_id, span_id, "
		"(source = 'otlp') DESC) SELECT count(*), count(*) FILTER "
		"(WHERE " FAILED_SQL "), count(DISTINCT trace_id), "
		"min(sextant_unix_nano(start_time, start_nanos)), "
		"max(sextant_unix_nano(start_time, start_nanos) + duration_ns) "
		"FROM d",
		1, v);
	assert_int_equal(s->spans, unum(r, 0, 0));
	assert_int_equal(s->errors, unum(r, 0, 1));
	assert_int_equal(s->traces, unum(r, 0, 2));
	assert_int_equal(s->start_ns, unum(r, 0, 3));
	assert_int_equal(s->end_ns, unum(r, 0, 4));
	PQclear(r);
	r = sql(c,
		"SELECT avg(e - b) / 1e6 FROM (SELECT trace_id, "
		"min(sextant_unix_nano(start_time, start_nanos)) b, "
		"max(sextant_unix_nano(start_time, start_nanos) + duration_ns) "
		"e FROM spans WHERE " IN_SESSION " GROUP BY trace_id) t",
		1, v);
	assert_close(s->avg_trace_ms, num(r, 0, 0), "avg trace");
	PQclear(r);
	r = sql(c,
		"WITH d AS (SELECT DISTINCT ON (trace_id, span_id) * FROM "
		"spans WHERE " IN_SESSION " ORDER BY trace_id, span_id, "
		"(source = 'otlp') DESC) SELECT service_name, count(*), "
		"count(*) FILTER (WHERE " FAILED_SQL ") FROM d GROUP BY 1 "
		"ORDER BY 2 DESC, 1",
		1, v);
	assert_int_equal(s->n_services, PQntuples(r));
	for (size_t i = 0; i < s->n_services; i++) {
		assert_string_equal(s->services[i].name,
				    PQgetvalue(r, (int)i, 0));
		assert_int_equal(s->services[i].spans, unum(r, (int)i, 1));
		assert_int_equal(s->services[i].errors, unum(r, (int)i, 2));
	}
	PQclear(r);

	/* calls: the total and each model */
	r = want_stats(c, IN_SESSION, 1, v);
	check_stats(&s->total, r, true, true, "session total");
	PQclear(r);
	r = sql(c,
		WANT_CALLS
		"SELECT count(DISTINCT (coalesce(gen_ai_provider, "
		"''), coalesce(m, ''))) FROM calls WHERE " IN_SESSION,
		1, v);
	assert_int_equal(s->n_models, unum(r, 0, 0));
	PQclear(r);
	for (size_t i = 0; i < s->n_models; i++) {
		const struct genai_group *g = &s->models[i];
		const char *mv[3] = {id, g->provider, g->model};

		r = want_stats(c,
			       IN_SESSION " AND gen_ai_provider IS NOT "
					  "DISTINCT FROM $2 AND m IS NOT "
					  "DISTINCT FROM $3",
			       3, mv);
		check_stats(&g->s, r, true, true,
			    g->model ? g->model : "(none)");
		PQclear(r);
		/* most expensive first, unpriced last */
		if (i > 0 && g->s.priced > 0)
			assert_true(g->s.cost_usd <=
				    s->models[i - 1].s.cost_usd);
	}

	/* the slowest and the most expensive calls */
	r = sql(c,
		WANT_CALLS "SELECT encode(span_id, 'hex'), duration_ns FROM "
			   "calls WHERE " IN_SESSION
			   " ORDER BY duration_ns DESC, start_time LIMIT 5",
		1, v);
	assert_int_equal(s->n_slowest, PQntuples(r));
	for (size_t i = 0; i < s->n_slowest; i++) {
		assert_string_equal(s->slowest[i].span_id,
				    PQgetvalue(r, (int)i, 0));
		assert_int_equal(s->slowest[i].duration_ns, unum(r, (int)i, 1));
	}
	PQclear(r);
	r = sql(c,
		WANT_CALLS
		"SELECT encode(span_id, 'hex'), cost FROM calls "
		"WHERE " IN_SESSION
		" AND cost > 0 ORDER BY cost DESC, start_time LIMIT 5",
		1, v);
	assert_int_equal(s->n_costliest, PQntuples(r));
	for (size_t i = 0; i < s->n_costliest; i++) {
		assert_string_equal(s->costliest[i].span_id,
				    PQgetvalue(r, (int)i, 0));
		assert_close(s->costliest[i].cost_usd, num(r, (int)i, 1),
			     "call cost");
	}
	PQclear(r);
	genai_session_free(s);
}

static void
test_sessions_against_sql(void **state)
{
	static const char *const ids[] = {"sess-alpha", "sess-beta", "sess-old",
					  "carol@example.com-1"};
	struct pg_conn *c = conn();

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(ids); i++)
		check_session(c, ids[i]);
	pg_release(c);
}

static void
test_session_beta(void **state)
{
	struct pg_conn *c = conn();
	struct genai_session *s = get_session(c, "sess-beta");

	(void)state;
	assert_int_equal(s->traces, 1);
	assert_int_equal(s->spans, 3);
	assert_int_equal(s->errors, 2);
	assert_int_equal(s->total.calls, 2);
	assert_int_equal(s->total.errors, 1);
	assert_int_equal(s->total.unpriced, 0);
	assert_null(s->total.unpriced_models);
	assert_close(s->total.cost_usd, (1300 * 0.15 + 140 * 0.6) / 1e6,
		     "beta cost");
	/* percentile_cont over 1,000 and 1,700 ms */
	assert_close(s->total.p50_ms, 1350, "p50");
	assert_close(s->total.p95_ms, 1000 + 0.95 * 700, "p95");
	assert_int_equal(s->n_models, 1);
	assert_string_equal(s->models[0].model, "gpt-4o-mini");
	/* the failed chat: 1,700 ms against the root's 300 of its own */
	assert_string_equal(s->bottleneck.name, "chat gpt-4o-mini");
	assert_int_equal(s->bottleneck.self_ns, 1700 * 1000000ull);
	genai_session_free(s);
	pg_release(c);
}

static void
test_session_range(void **state)
{
	struct pg_conn *c = conn();
	struct genai_session *s = NULL;
	struct pg_error err;

	(void)state;
	/* sess-old started 80 minutes ago: not in the last hour */
	assert_int_equal(genai_session_get(c, "sess-old", now_ms - HOUR_MS,
					   now_ms, &s, &err),
			 STATUS_NOTFOUND);
	assert_null(s);
	assert_int_equal(genai_session_get(c, "sess-old", now_ms - 2 * HOUR_MS,
					   now_ms, &s, &err),
			 STATUS_OK);
	assert_int_equal(s->total.calls, 2);
	genai_session_free(s);
	s = NULL;
	/* exact ids only: no prefix, no case folding */
	assert_int_equal(genai_session_get(c, "sess-alph", now_ms - DAY_MS,
					   now_ms, &s, &err),
			 STATUS_NOTFOUND);
	assert_int_equal(genai_session_get(c, "SESS-ALPHA", now_ms - DAY_MS,
					   now_ms, &s, &err),
			 STATUS_NOTFOUND);
	/* bad arguments */
	assert_int_equal(
		genai_session_get(c, "", now_ms - DAY_MS, now_ms, &s, &err),
		STATUS_INVALID);
	assert_int_equal(
		genai_session_get(c, NULL, now_ms - DAY_MS, now_ms, &s, &err),
		STATUS_INVALID);
	assert_int_equal(
		genai_session_get(c, "sess-beta", now_ms, now_ms, &s, &err),
		STATUS_INVALID);
	assert_null(s);
	genai_session_free(NULL);
	pg_release(c);
}

static struct genai_recent_list *
recent(struct pg_conn *c, const char *like, int64_t from, int64_t to)
{
	struct genai_recent_list *l = NULL;
	struct pg_error err;

	if (genai_recent_sessions(c, like, from, to, &l, &err) != STATUS_OK)
		fail_msg("genai_recent_sessions: %s (%s)", err.client,
			 err.detail);
	return l;
}

static void
test_recent_sessions(void **state)
{
	struct pg_conn *c = conn();
	struct genai_recent_list *l = NULL;
	struct pg_error err;

	(void)state;
	l = recent(c, NULL, now_ms - DAY_MS, now_ms + 1000);
	/* most recently active first: beta (20 min ago), gamma (25),
	 * alpha (its last span 30 min ago), old (80) */
	assert_int_equal(l->n, 4);
	assert_string_equal(l->items[0].session_id, "sess-beta");
	assert_string_equal(l->items[1].session_id, "carol@example.com-1");
	assert_string_equal(l->items[2].session_id, "sess-alpha");
	assert_string_equal(l->items[3].session_id, "sess-old");
	assert_string_equal(l->items[2].service, "assistant");
	assert_int_equal(l->items[2].start_ns,
			 trace_start_ns(1) + 100 * 1000000ull);
	for (size_t i = 0; i < l->n; i++)
		assert_false(l->items[i].similar);
	genai_recent_free(l);

	/* an id some session starts with comes first, whatever the case */
	l = recent(c, "SESS-AL", now_ms - DAY_MS, now_ms + 1000);
	assert_string_equal(l->items[0].session_id, "sess-alpha");
	assert_true(l->items[0].similar);
	assert_false(l->items[1].similar);
	genai_recent_free(l);

	/* the range bounds them */
	l = recent(c, NULL, now_ms - 70 * MIN_MS, now_ms - 25 * MIN_MS);
	assert_int_equal(l->n, 1);
	assert_string_equal(l->items[0].session_id, "sess-alpha");
	genai_recent_free(l);
	assert_int_equal(
		genai_recent_sessions(c, NULL, now_ms, now_ms, &l, &err),
		STATUS_INVALID);
	assert_null(l);
	genai_recent_free(NULL);
	pg_release(c);
}

/* ---- usage ------------------------------------------------------------- */

static struct genai_usage *
usage(struct pg_conn *c, int64_t from, int64_t to, const char *service,
      const char *model)
{
	struct genai_filter f = {from, to, service, model};
	struct genai_usage *u = NULL;
	struct pg_error err;

	if (genai_usage_get(c, &f, &u, &err) != STATUS_OK)
		fail_msg("genai_usage_get: %s (%s)", err.client, err.detail);
	return u;
}

/* Every number of u against WANT_CALLS over [from, to) and the previous
 * period, with the filters (NULL: none). */
static void
check_usage(struct pg_conn *c, int64_t from, int64_t to, const char *service,
	    const char *model)
{
	struct genai_usage *u = usage(c, from, to, service, model);
	char a[48], b[48], p[48];
	const char *v[4] = {a, b, service, model};
	const char *pv[4] = {p, a, service, model};
	PGresult *r;

#define RANGE                                                                  \
	"start_time >= $1::timestamptz AND start_time < $2::timestamptz "      \
	"AND ($3::text IS NULL OR service_name = $3) AND ($4::text IS NULL "   \
	"OR gen_ai_response_model = $4 OR gen_ai_request_model = $4 OR "       \
	"sextant_genai_family(gen_ai_request_model, gen_ai_response_model) "   \
	"= $4)"
	ts_text(from, a, sizeof(a));
	ts_text(to, b, sizeof(b));
	ts_text(from - (to - from), p, sizeof(p));
	r = want_stats(c, RANGE, 4, v);
	check_stats(&u->total, r, true, true, "usage total");
	PQclear(r);
	r = want_stats(c, RANGE, 4, pv);
	check_stats(&u->previous, r, false, true, "previous period");
	assert_true(isnan(u->previous.p50_ms));
	PQclear(r);

	/* by model */
	r = sql(c,
		WANT_CALLS "SELECT count(DISTINCT (coalesce(gen_ai_provider, "
			   "''), coalesce(m, ''))), count(DISTINCT "
			   "service_name), count(DISTINCT session_id) FROM "
			   "calls WHERE " RANGE,
		4, v);
	assert_int_equal(u->models_total, unum(r, 0, 0));
	assert_int_equal(u->n_models, unum(r, 0, 0));
	assert_int_equal(u->services_total, unum(r, 0, 1));
	assert_int_equal(u->n_services, unum(r, 0, 1));
	assert_int_equal(u->sessions_total, unum(r, 0, 2));
	assert_int_equal(u->n_sessions,
			 unum(r, 0, 2) < GENAI_TOP ? unum(r, 0, 2) : GENAI_TOP);
	PQclear(r);
	for (size_t i = 0; i < u->n_models; i++) {
		const struct genai_group *g = &u->models[i];
		const char *mv[6] = {a,	    b,		 service,
				     model, g->provider, g->model};

		assert_null(g->service);
		r = want_stats(c,
			       RANGE " AND gen_ai_provider IS NOT DISTINCT "
				     "FROM $5 AND m IS NOT DISTINCT FROM $6",
			       6, mv);
		check_stats(&g->s, r, true, true,
			    g->model ? g->model : "(none)");
		PQclear(r);
	}
	for (size_t i = 0; i < u->n_services; i++) {
		const struct genai_group *g = &u->services[i];
		const char *sv[5] = {a, b, service, model, g->service};

		r = want_stats(c, RANGE " AND service_name = $5", 5, sv);
		check_stats(&g->s, r, true, true, g->service);
		PQclear(r);
	}
	/* the most and the least expensive sessions, in order */
	for (int k = 0; k < 2; k++) {
		const struct genai_group *list =
			k == 0 ? u->sessions : u->cheapest;
		size_t n = k == 0 ? u->n_sessions : u->n_cheapest;

		r = sql(c,
			k == 0 ? WANT_CALLS
				"SELECT session_id FROM calls WHERE " RANGE
				" AND session_id IS NOT NULL GROUP BY 1 ORDER "
				"BY "
				"sum(cost) DESC NULLS LAST, count(*) DESC, 1 "
				"LIMIT 5"
			       : WANT_CALLS
				"SELECT session_id FROM calls WHERE " RANGE
				" AND session_id IS NOT NULL GROUP BY 1 ORDER "
				"BY "
				"sum(cost) NULLS LAST, count(*), 1 LIMIT 5",
			4, v);
		assert_int_equal(n, PQntuples(r));
		for (size_t i = 0; i < n; i++) {
			const struct genai_group *g = &list[i];
			const char *sv[5] = {a, b, service, model,
					     g->session_id};
			PGresult *w;

			assert_string_equal(g->session_id,
					    PQgetvalue(r, (int)i, 0));
			w = want_stats(c, RANGE " AND session_id = $5", 5, sv);
			check_stats(&g->s, w, false, true, g->session_id);
			PQclear(w);
		}
		PQclear(r);
	}
	genai_usage_free(u);
#undef RANGE
}

static void
test_usage_against_sql(void **state)
{
	struct pg_conn *c = conn();
	int64_t to = now_ms + 1000;

	(void)state;
	check_usage(c, to - HOUR_MS, to, NULL, NULL);
	check_usage(c, to - 2 * HOUR_MS, to, NULL, NULL);
	check_usage(c, to - 50 * MIN_MS, to - 10 * MIN_MS, NULL, NULL);
	check_usage(c, to - HOUR_MS, to, "assistant", NULL);
	check_usage(c, to - HOUR_MS, to, "batch", NULL);
	/* the request model or the response model */
	check_usage(c, to - HOUR_MS, to, NULL, "gpt-4o");
	check_usage(c, to - HOUR_MS, to, NULL, "gpt-4o-2024-08-06");
	check_usage(c, to - 2 * HOUR_MS, to, "assistant", "claude-3-5-haiku");
	check_usage(c, to - HOUR_MS, to, NULL, "no-such-model");
	check_usage(c, to - 7 * DAY_MS, to - 3 * DAY_MS, NULL, NULL);
	pg_release(c);
}

static const struct genai_group *
find_model(const struct genai_usage *u, const char *model)
{
	for (size_t i = 0; i < u->n_models; i++)
		if (u->models[i].model != NULL &&
		    strcmp(u->models[i].model, model) == 0)
			return &u->models[i];
	return NULL;
}

static void
test_usage_literals(void **state)
{
	struct pg_conn *c = conn();
	int64_t to = now_ms + 1000;
	struct genai_usage *u = usage(c, to - HOUR_MS, to, NULL, NULL);
	const struct genai_group *g;

	(void)state;
	/* the last hour: alpha 8, beta 2, batch 2, the loop agent 1,
	 * gamma 1; the previous hour: sess-old's 2 */
	assert_int_equal(u->total.calls, 14);
	assert_int_equal(u->previous.calls, 2);
	assert_int_equal(u->previous.errors, 1);
	assert_int_equal(u->previous.input_tokens, 2100);
	assert_close(u->previous.cost_usd,
		     (2000 * 2.5 + 300 * 10 + 100 * 0.8 + 20 * 4) / 1e6,
		     "previous cost");
	/* unpriced: llama and the embeddings model */
	assert_int_equal(u->total.unpriced, 2);
	assert_string_equal(u->total.unpriced_models,
			    "llama-3-70b\ntext-embedding-3-small");
	/* most expensive first */
	assert_int_equal(u->n_services, 3);
	assert_string_equal(u->services[0].service, "assistant");
	assert_string_equal(u->services[1].service, "batch");
	assert_string_equal(u->services[2].service, "loop");
	assert_string_equal(u->models[0].model, "gpt-4o");
	assert_string_equal(u->models[0].snapshots, "gpt-4o-2024-08-06");
	assert_int_equal(u->models[0].s.errors, 1);
	assert_close(u->models[0].s.cost_usd,
		     (1000 * 2.5 + 200 * 10 + 3000 * 2.5 + 800 * 10 + 400 * 5 +
		      100 * 20) /
			     1e6,
		     "gpt-4o cost");
	/* gemini: 5,000 x 0.30 + 1,000 x 2.50 per million */
	g = find_model(u, "gemini-2.5-flash");
	assert_non_null(g);
	assert_string_equal(g->provider, "gcp.gemini");
	assert_close(g->s.cost_usd, 0.004, "gemini cost");
	/* the unpriced ones come last, with no cost */
	g = &u->models[u->n_models - 1];
	assert_int_equal(g->s.priced, 0);
	assert_close(g->s.cost_usd, 0, "unpriced cost");
	assert_int_equal(u->n_sessions, 3);
	assert_string_equal(u->sessions[0].session_id, "sess-alpha");
	assert_string_equal(u->sessions[0].service, "assistant");
	assert_string_equal(u->sessions[1].session_id, "sess-beta");
	assert_int_equal(u->sessions_total, 3);
	/* the same sessions least expensive first */
	assert_int_equal(u->n_cheapest, 3);
	assert_string_equal(u->cheapest[1].session_id, "sess-beta");
	assert_string_equal(u->cheapest[2].session_id, "sess-alpha");
	for (size_t i = 1; i < u->n_cheapest; i++)
		assert_true(u->cheapest[i].s.cost_usd >=
			    u->cheapest[i - 1].s.cost_usd);
	genai_usage_free(u);

	/* the model filter takes the request model and the family too */
	u = usage(c, to - HOUR_MS, to, NULL, "gpt-4o");
	assert_int_equal(u->total.calls, 4);
	assert_int_equal(u->n_models, 1);
	genai_usage_free(u);
	u = usage(c, to - HOUR_MS, to, "nobody", NULL);
	assert_int_equal(u->total.calls, 0);
	assert_true(isnan(u->total.p50_ms));
	assert_int_equal(u->n_models, 0);
	assert_int_equal(u->n_services, 0);
	assert_int_equal(u->n_sessions, 0);
	genai_usage_free(u);
	genai_usage_free(NULL);
	pg_release(c);
}

/* sextant_model_family (migrations/0014): date suffixes go, nothing else;
 * sextant_genai_family: a call's family from its request and response
 * models. */
static void
test_model_family(void **state)
{
	static const struct {
		const char *model, *family;
	} cases[] = {
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o", "gpt-4o"},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"gpt-4o-mini", "gpt-4o-mini"},
		{"chatgpt-4o-latest", "chatgpt-4o"},
		{"o1-2024-12-17", "o1"},
		{"claude-3-5-sonnet-20241022", "claude-3-5-sonnet"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet"},
		{"claude-3-5-sonnet@20241022", "claude-3-5-sonnet"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-3-opus-20240229", "claude-3-opus"},
		{"mistral-large-latest", "mistral-large"},
		{"gemini-2.0-flash-001", "gemini-2.0-flash-001"},
		{"gemini-1.5-pro-002", "gemini-1.5-pro-002"},
		{"gpt-4-0613", "gpt-4-0613"},
		{"gpt-3.5-turbo", "gpt-3.5-turbo"},
		{"llama-3-70b", "llama-3-70b"},
		/* not a date: month 13, day 32, year 3024, 7 or 9 digits */
		{"model-20241322", "model-20241322"},
		{"model-2024-01-32", "model-2024-01-32"},
		{"model-30240101", "model-30240101"},
		{"build-2024010", "build-2024010"},
		{"build-202401011", "build-202401011"},
		/* one suffix only; never an empty name */
		{"x-2024-08-06-latest", "x-2024-08-06"},
		{"-latest", "-latest"},
		{"20241022", "20241022"},
		{"", ""},
	};
	static const struct {
		const char *request, *response, *family;
	} calls[] = {
		/* failed: only the request model */
		{"gpt-4o", NULL, "gpt-4o"},
		{"gpt-4o", "", "gpt-4o"},
		{"gpt-4o", "gpt-4o-2024-08-06", "gpt-4o"},
		{NULL, "gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-2024-08-06", "gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		/* a fallback to another model is that model */
		{"gpt-4o", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"gpt-4o", "claude-3-5-sonnet-20241022", "claude-3-5-sonnet"},
		/* a numbered version of the model asked for */
		{"gemini-2.0-flash", "gemini-2.0-flash-001",
		 "gemini-2.0-flash"},
		{NULL, "gemini-2.0-flash-001", "gemini-2.0-flash-001"},
		{"gemini-2.0-flash", "gemini-2.0-flash-lite-001",
		 "gemini-2.0-flash-lite-001"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022",
		 "claude-3-5-sonnet"},
		{NULL, NULL, "(null)"},
		{"", "", "(null)"},
	};
	struct pg_conn *c = conn();

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const char *v[1] = {cases[i].model};
		PGresult *r = sql(c, "SELECT sextant_model_family($1)", 1, v);

		if (strcmp(PQgetvalue(r, 0, 0), cases[i].family) != 0)
			fail_msg("%s: got %s, want %s", cases[i].model,
				 PQgetvalue(r, 0, 0), cases[i].family);
		PQclear(r);
	}
	for (size_t i = 0; i < ARRAY_LEN(calls); i++) {
		const char *v[2] = {calls[i].request, calls[i].response};
		PGresult *r =
			sql(c, "SELECT sextant_genai_family($1, $2)", 2, v);
		const char *got =
			PQgetisnull(r, 0, 0) ? "(null)" : PQgetvalue(r, 0, 0);

		if (strcmp(got, calls[i].family) != 0)
			fail_msg("%s -> %s: got %s, want %s",
				 calls[i].request ? calls[i].request : "-",
				 calls[i].response ? calls[i].response : "-",
				 got, calls[i].family);
		PQclear(r);
	}
	pg_release(c);
}

static void
test_usage_bad_range(void **state)
{
	struct pg_conn *c = conn();
	struct genai_filter f = {now_ms, now_ms, NULL, NULL};
	struct genai_usage *u = NULL;
	struct pg_error err;

	(void)state;
	assert_int_equal(genai_usage_get(c, &f, &u, &err), STATUS_INVALID);
	assert_null(u);
	assert_non_null(strstr(err.client, "time range"));
	f.from_ms = now_ms;
	f.to_ms = now_ms - 1;
	assert_int_equal(genai_usage_get(c, &f, &u, &err), STATUS_INVALID);
	pg_release(c);
}

static void
test_names(void **state)
{
	struct pg_conn *c = conn();
	struct genai_names *nm = NULL;
	struct pg_error err;

	(void)state;
	assert_int_equal(genai_names_get(c, GENAI_KEY_SERVICE, now_ms - HOUR_MS,
					 now_ms + 1000, 10, &nm, &err),
			 STATUS_OK);
	assert_int_equal(nm->n, 3);
	assert_string_equal(nm->names[0], "assistant");
	genai_names_free(nm);
	assert_int_equal(genai_names_get(c, GENAI_KEY_MODEL, now_ms - HOUR_MS,
					 now_ms + 1000, 2, &nm, &err),
			 STATUS_OK);
	assert_int_equal(nm->n, 2);
	/* gpt-4o-mini: 6 GenAI spans with it as their model */
	assert_string_equal(nm->names[0], "gpt-4o-mini");
	genai_names_free(nm);
	assert_int_equal(genai_names_get(c, GENAI_KEY_MODEL, now_ms - HOUR_MS,
					 now_ms, 0, &nm, &err),
			 STATUS_INVALID);
	assert_int_equal(genai_names_get(c, GENAI_KEY_MODEL, now_ms - HOUR_MS,
					 now_ms, GENAI_MAX_NAMES + 1, &nm,
					 &err),
			 STATUS_INVALID);
	assert_null(nm);
	genai_names_free(NULL);
	pg_release(c);
}

/* A session bigger than the span limit says so and keeps the earliest. */
static void
test_session_truncated(void **state)
{
	struct pg_conn *c = conn();
	struct genai_session *s = NULL;
	struct pg_error err;
	char at[48];
	const char *v[2] = {at, NULL};
	char n[16];

	(void)state;
	ts_text(now_ms - 5 * MIN_MS, at, sizeof(at));
	snprintf(n, sizeof(n), "%d", GENAI_MAX_SPANS + 10);
	v[1] = n;
	PQclear(sql(c,
		    "INSERT INTO spans (start_time, duration_ns, trace_id, "
		    "span_id, source, name, service_name, session_id) "
		    "SELECT $1::timestamptz + i * interval '1 us', 1000, "
		    "'\\x77000000000000000000000000000001'::bytea, "
		    "int8send(i), 'otlp', 'step', 'worker', 'sess-big' "
		    "FROM generate_series(1, $2::int) i",
		    2, v));
	assert_int_equal(genai_session_get(c, "sess-big", now_ms - HOUR_MS,
					   now_ms, &s, &err),
			 STATUS_OK);
	assert_true(s->truncated);
	assert_int_equal(s->spans, GENAI_MAX_SPANS);
	assert_int_equal(s->traces, 1);
	assert_int_equal(s->total.calls, 0);
	assert_true(isnan(s->total.p50_ms));
	genai_session_free(s);
	PQclear(sql(c, "DELETE FROM spans WHERE session_id = 'sess-big'", 0,
		    NULL));
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest db[] = {
		cmocka_unit_test(test_session_alpha_literals),
		cmocka_unit_test(test_sessions_against_sql),
		cmocka_unit_test(test_session_beta),
		cmocka_unit_test(test_session_range),
		cmocka_unit_test(test_recent_sessions),
		cmocka_unit_test(test_usage_against_sql),
		cmocka_unit_test(test_usage_literals),
		cmocka_unit_test(test_model_family),
		cmocka_unit_test(test_usage_bad_range),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_session_truncated),
	};

	return cmocka_run_group_tests_name("genai, store", db, group_setup,
					   group_teardown);
}

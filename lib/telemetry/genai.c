/*
 * genai.c - GenAI session and usage queries (see genai.h for what counts).
 * The SQL is static with bound parameters; every statement over calls
 * shares one chain of CTEs (g, down, models, bps, prices, calls) so that
 * a call, its tokens and its cost mean the same thing in every tool.
 */
#include "telemetry/genai.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "base/hex.h"
#include "telemetry/merge.h"

/* ---- the shared SQL ----------------------------------------------------- */

#define LLM_OPS "('chat', 'text_completion', 'generate_content', 'embeddings')"

/*
 * g: the GenAI spans of a statement's scope (alias s), one per span id.
 * G_PRED is spelled as the predicate of spans_genai_idx
 * (migrations/0006_genai_index.sql, 0014) so that the planner can use it,
 * and G_COLS reads only columns that index holds.  family: the call's
 * model family (sextant_genai_family, 0014); failed: the one rule of a
 * failed span (sextant_span_outcome, 0012).
 */
#define FAILED                                                                 \
	"sextant_span_outcome(s.kind, s.status_code, s.http_status_code, "     \
	"s.rpc_grpc_status_code) = 1 AS failed"
#define G_PRED                                                                 \
	"(s.gen_ai_operation IN " LLM_OPS " OR s.gen_ai_input_tokens IS NOT "  \
	"NULL OR s.gen_ai_output_tokens IS NOT NULL)"
#define G_COLS                                                                 \
	"s.trace_id, s.span_id, s.start_time, s.duration_ns, s.status_code, "  \
	"s.service_name, s.session_id, "                                       \
	"nullif(s.gen_ai_provider, '') AS provider, "                          \
	"coalesce(nullif(s.gen_ai_response_model, ''), "                       \
	"nullif(s.gen_ai_request_model, '')) AS model, "                       \
	"sextant_genai_family(s.gen_ai_request_model, "                        \
	"s.gen_ai_response_model) AS family, "                                 \
	"coalesce(s.gen_ai_operation IN " LLM_OPS ", false) AS llm, "          \
	"s.gen_ai_input_tokens AS tin, s.gen_ai_output_tokens AS "             \
	"tout, " FAILED

/* an eBPF copy counts only when there is no OTLP copy of the span */
#define G_DEDUP                                                                \
	" AND (s.source = 'otlp' OR NOT EXISTS (SELECT 1 FROM spans o "        \
	"WHERE o.trace_id = s.trace_id AND o.span_id = s.span_id "             \
	"AND o.source = 'otlp'))"

/*
 * After g:
 * - down: from each non-LLM span of g (rt, rs), its descendants, stopping
 *   below a span with tokens; one parameterised probe per step (OFFSET 0
 *   keeps the lookup a nested loop over the primary key), within one hour
 *   before and one day after the span's start so that partitions prune.
 *   UNION (not ALL) ends cycles.
 * - prices: per (provider, model) of g, the price row in effect from each
 *   effective_from of the rows that can match the model (the price only
 *   changes there) to the next; sextant_model_price picks the row, the
 *   function sextant_genai_cost_usd uses, once per period rather than
 *   once per span.  Costs are float8: a sum is off by a few parts in
 *   10^15 at worst, and numeric arithmetic was a third of the time of a
 *   day's usage.
 * - covered: the spans of g with a descendant carrying tokens (a span
 *   reached again through a parent cycle is not its own descendant).
 * - calls: the LLM spans, and the other spans of g not covered, with
 *   their cost (NULL: no price).
 */
#define CALLS_CTES                                                             \
	", down (rt, rs, t0, sid, tok) AS ("                                   \
	"SELECT trace_id, span_id, start_time, span_id, false FROM g "         \
	"WHERE NOT llm "                                                       \
	"UNION SELECT d.rt, d.rs, d.t0, c.span_id, c.tok FROM down d "         \
	"CROSS JOIN LATERAL (SELECT c.span_id, "                               \
	"(c.gen_ai_input_tokens IS NOT NULL OR "                               \
	"c.gen_ai_output_tokens IS NOT NULL) AS tok FROM spans c "             \
	"WHERE c.trace_id = d.rt AND c.parent_span_id = d.sid "                \
	"AND c.start_time >= d.t0 - interval '1 hour' "                        \
	"AND c.start_time < d.t0 + interval '1 day' OFFSET 0) c "              \
	"WHERE NOT d.tok), "                                                   \
	"models AS (SELECT DISTINCT provider, model FROM g), "                 \
	"bps AS (SELECT provider, model, '-infinity'::timestamptz AS at "      \
	"FROM models UNION SELECT m.provider, m.model, p.effective_from "      \
	"FROM models m JOIN model_pricing p ON p.model = m.model "             \
	"OR starts_with(m.model, p.model || '-')), "                           \
	"prices AS MATERIALIZED (SELECT b.provider, b.model, b.at AS p_from, " \
	"lead(b.at) OVER (PARTITION BY b.provider, b.model ORDER BY b.at) "    \
	"AS p_to, pr.input_usd_per_million::float8 AS pin, "                   \
	"pr.output_usd_per_million::float8 AS pout FROM bps b, "               \
	"LATERAL sextant_model_price(b.provider, b.model, b.at) pr), "         \
	"covered AS MATERIALIZED (SELECT DISTINCT rt, rs FROM down "           \
	"WHERE tok AND sid <> rs), "                                           \
	"calls AS MATERIALIZED (SELECT g.*, (coalesce(g.tin, 0) * pr.pin + "   \
	"coalesce(g.tout, 0) * pr.pout) / 1e6 AS cost FROM g "                 \
	"LEFT JOIN prices pr ON coalesce(pr.provider, '') = "                  \
	"coalesce(g.provider, '') AND coalesce(pr.model, '') = "               \
	"coalesce(g.model, '') AND g.start_time >= pr.p_from "                 \
	"AND (pr.p_to IS NULL OR g.start_time < pr.p_to) "                     \
	"WHERE g.llm OR (g.trace_id, g.span_id) NOT IN "                       \
	"(SELECT rt, rs FROM covered))"

/*
 * snap: per (provider, family), the exact models of its calls other than
 * the family name, '\n'-separated (DISTINCT first: a hash, not a sort of
 * every call).  where: more conditions on calls.
 */
#define SNAP_CTE(where)                                                        \
	"snap AS (SELECT provider, family, string_agg(model, E'\\n' "          \
	"ORDER BY model) AS snapshots FROM (SELECT DISTINCT provider, "        \
	"family, model FROM calls WHERE model <> family" where ") x "          \
	"GROUP BY provider, family)"
#define SNAP_JOIN(m)                                                           \
	" LEFT JOIN snap ON " m ".provider IS NOT DISTINCT FROM "              \
	"snap.provider AND " m ".family IS NOT DISTINCT FROM snap.family"

/* The statistics of a group of calls: STATS_NCOLS columns, then the two
 * percentiles (PCT_COLS). */
#define UNPRICED "cost IS NULL AND (tin IS NOT NULL OR tout IS NOT NULL)"
#define STATS_COLS                                                             \
	"count(*) AS calls, count(*) FILTER (WHERE failed) AS errors, "        \
	"coalesce(sum(tin), 0) AS tin, coalesce(sum(tout), 0) AS tout, "       \
	"coalesce(sum(cost), 0) AS cost, count(cost) AS priced, "              \
	"count(*) FILTER (WHERE " UNPRICED ") AS unpriced, "                   \
	"string_agg(DISTINCT coalesce(model, ''), E'\\n' ORDER BY "            \
	"coalesce(model, '')) FILTER (WHERE " UNPRICED ") AS unpriced_models"
/* The same without the list of unpriced models (a sort per group). */
#define STATS_COLS_SHORT                                                       \
	"count(*) AS calls, count(*) FILTER (WHERE failed) AS errors, "        \
	"coalesce(sum(tin), 0) AS tin, coalesce(sum(tout), 0) AS tout, "       \
	"coalesce(sum(cost), 0) AS cost, count(cost) AS priced, "              \
	"count(*) FILTER (WHERE " UNPRICED ") AS unpriced, "                   \
	"NULL::text AS unpriced_models"
#define STATS_NAMES                                                            \
	"calls, errors, tin, tout, cost, priced, unpriced, unpriced_models"
#define STATS_NCOLS 8
#define PCT_COLS                                                               \
	"percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ns) AS p50, "    \
	"percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) AS p95"

/* ---- helpers ------------------------------------------------------------ */

static void
set_err(struct pg_error *err, const char *client, const char *detail)
{
	snprintf(err->client, sizeof(err->client), "%s", client);
	snprintf(err->detail, sizeof(err->detail), "%s", detail);
	err->sqlstate[0] = '\0';
}

static int
nomem(struct pg_error *err)
{
	set_err(err, "out of memory", "out of memory");
	return STATUS_NOMEM;
}

static int
parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(*out))
		return STATUS_INVALID;
	return STATUS_OK;
}

/* A text column, NULL for SQL NULL (borrowed from res). */
static const char *
col(const PGresult *res, int row, int c)
{
	return PQgetisnull(res, row, c) ? NULL : PQgetvalue(res, row, c);
}

/* An integer column; -1 for SQL NULL. */
static int
col_i64(const PGresult *res, int row, int c, int64_t *out)
{
	if (PQgetisnull(res, row, c)) {
		*out = -1;
		return STATUS_OK;
	}
	return pg_text_i64(PQgetvalue(res, row, c), out);
}

/* STATS_COLS at column c, then the percentiles when pct (ns -> ms). */
static int
parse_stats(const PGresult *res, int row, int c, bool pct,
	    struct genai_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->p50_ms = s->p95_ms = NAN;
	if (pg_text_u64(PQgetvalue(res, row, c), &s->calls) ||
	    pg_text_u64(PQgetvalue(res, row, c + 1), &s->errors) ||
	    pg_text_u64(PQgetvalue(res, row, c + 2), &s->input_tokens) ||
	    pg_text_u64(PQgetvalue(res, row, c + 3), &s->output_tokens) ||
	    parse_double(PQgetvalue(res, row, c + 4), &s->cost_usd) ||
	    pg_text_u64(PQgetvalue(res, row, c + 5), &s->priced) ||
	    pg_text_u64(PQgetvalue(res, row, c + 6), &s->unpriced))
		return STATUS_INVALID;
	s->unpriced_models = col(res, row, c + 7);
	if (!pct)
		return STATUS_OK;
	for (int i = 0; i < 2; i++) {
		double *p = i == 0 ? &s->p50_ms : &s->p95_ms;

		if (PQgetisnull(res, row, c + 8 + i))
			continue;
		if (parse_double(PQgetvalue(res, row, c + 8 + i), p))
			return STATUS_INVALID;
		*p /= 1e6;
	}
	return STATUS_OK;
}

/*
 * One statement in a transaction of its own, with planner settings that
 * end with it (set_config(..., true) is SET LOCAL, so the pooled
 * connection's session is left as it was):
 * - jit off: the row estimates of the recursive CTEs (and so the costs)
 *   are far above what the statements read, which would have PostgreSQL
 *   spend seconds compiling them with LLVM to save milliseconds;
 * - no merge joins: with those estimates the planner sorts a day of calls
 *   to merge them with a dozen price rows, where hashing them is several
 *   times faster.
 * The statements only read, so the transaction is rolled back.
 */
static int
query(struct pg_conn *c, const char *sql, int n, const char *const *v,
      PGresult **res, struct pg_error *err)
{
	struct pg_error ignored;
	int rc;

	*res = NULL;
	if ((rc = pg_begin_local(c,
				 (const char *const[]){"jit", "off",
						       "enable_mergejoin",
						       "off", NULL},
				 err)) != STATUS_OK)
		return rc;
	if ((rc = pg_query(c, sql, n, v, res, err)) == STATUS_OK &&
	    (rc = pg_rollback(c, err)) == STATUS_OK)
		return STATUS_OK;
	PQclear(*res);
	*res = NULL;
	(void)!pg_rollback(c, &ignored);
	return rc;
}

/* ---- sessions ----------------------------------------------------------- */

/*
 * $1 session id, $2 / $3 the range, $4 GENAI_MAX_TRACES.  The traces are
 * the earliest; their spans are read one day either side of the range.
 */
#define SESSION_TRACES                                                         \
	"tr AS MATERIALIZED (SELECT trace_id FROM spans WHERE session_id = "   \
	"$1 "                                                                  \
	"AND start_time >= $2::timestamptz AND start_time < $3::timestamptz "  \
	"GROUP BY trace_id ORDER BY min(start_time), trace_id LIMIT $4)"
#define SESSION_SCOPE                                                          \
	"s.trace_id IN (SELECT trace_id FROM tr) "                             \
	"AND s.start_time >= $2::timestamptz - interval '1 day' "              \
	"AND s.start_time < $3::timestamptz + interval '1 day'"
#define SESSION_CALLS                                                          \
	"WITH RECURSIVE " SESSION_TRACES ", g AS MATERIALIZED (SELECT " G_COLS \
	", s.name, s.start_nanos FROM spans s WHERE " SESSION_SCOPE            \
	" AND " G_PRED G_DEDUP ")" CALLS_CTES

/* Every span of the session's traces ($5: GENAI_MAX_SPANS + 1), and the
 * number of traces in all. */
static const char session_spans_sql[] =
	"WITH " SESSION_TRACES " SELECT encode(s.trace_id, 'hex'), "
	"encode(s.span_id, 'hex'), encode(s.parent_span_id, 'hex'), "
	"sextant_unix_nano(s.start_time, s.start_nanos), s.duration_ns, "
	"s.status_code, s.source, s.service_name, s.name, s.status_message, "
	"(SELECT count(DISTINCT trace_id) FROM spans WHERE session_id = $1 "
	"AND start_time >= $2::timestamptz AND start_time < "
	"$3::timestamptz), " FAILED " "
	"FROM spans s WHERE " SESSION_SCOPE
	" ORDER BY s.start_time, s.trace_id, s.span_id LIMIT $5";

/* The session's calls: the total (kind 1) then by model family, most
 * expensive first ($5: GENAI_MAX_GROUPS + 1 rows), with its snapshots. */
static const char session_models_sql[] = SESSION_CALLS ", " SNAP_CTE(
	"") ", m AS (SELECT GROUPING(provider, family) AS gs, "
	    "provider, family, sum(cost) AS rank_cost, " STATS_COLS
	    ", " PCT_COLS
	    " FROM calls GROUP BY GROUPING SETS ((), (provider, family))) "
	    "SELECT gs, m.provider, m.family, " STATS_NAMES ", p50, p95, "
	    "snapshots FROM m" SNAP_JOIN(
		    "m") " ORDER BY gs DESC, rank_cost DESC "
			 "NULLS LAST, calls DESC, m.provider, m.family LIMIT "
			 "$5";

/* The slowest calls (kind 0) and the most expensive priced ones (1),
 * $5 (GENAI_TOP) of each. */
#define CALL_COLS                                                              \
	"encode(trace_id, 'hex'), encode(span_id, 'hex'), "                    \
	"sextant_unix_nano(start_time, start_nanos), duration_ns, "            \
	"status_code, service_name, name, provider, model, tin, tout, cost, "  \
	"failed"
static const char session_top_sql[] = SESSION_CALLS
	" (SELECT 0, " CALL_COLS " FROM calls ORDER BY "
	"duration_ns DESC, start_time, span_id LIMIT $5) UNION ALL "
	"(SELECT 1, " CALL_COLS " FROM calls WHERE cost > 0 ORDER BY "
	"cost DESC, start_time, span_id LIMIT $5)";

/* One row of session_spans_sql. */
struct srow {
	const char *trace_id, *span_id;
	const char *service, *name, *message;
	uint64_t start_ns, duration_ns;
	int status;
	bool failed; /* sextant_span_outcome 1 */
};

struct session_priv {
	PGresult *res[3];
	struct srow *rows;
};

static int
by_service_name(const void *a, const void *b)
{
	return strcmp(((const struct genai_service *)a)->name,
		      ((const struct genai_service *)b)->name);
}

static int
by_spans_desc(const void *a, const void *b)
{
	const struct genai_service *x = a, *y = b;

	if (x->spans != y->spans)
		return x->spans > y->spans ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void
span_ref(struct genai_span_ref *r, const struct merge_node *node,
	 const struct merge_trace *t)
{
	const struct srow *s = node->span->user;

	r->trace_id = s->trace_id;
	r->span_id = s->span_id;
	r->service = s->service;
	r->name = s->name;
	r->message = s->message;
	r->start_ns = s->start_ns;
	r->duration_ns = s->duration_ns;
	r->self_ns = node->self_ns;
	r->trace_duration_ns = t->end_ns - t->start_ns;
}

/* Spans, traces, errors, services, bottleneck from the rows read. */
static int
session_spans(PGresult *res, struct genai_session *g, struct session_priv *p,
	      struct pg_error *err)
{
	int n = PQntuples(res), rc = STATUS_OK;
	struct merge_span *ms = NULL;
	struct merge_result *mr = NULL;
	struct genai_service *sv = NULL;
	double sum_ms = 0;
	size_t nsv = 0;
	int64_t traces;

	if (n > GENAI_MAX_SPANS) {
		g->truncated = true;
		n = GENAI_MAX_SPANS;
	}
	p->rows = calloc((size_t)n + 1, sizeof(*p->rows));
	ms = calloc((size_t)n + 1, sizeof(*ms));
	if (p->rows == NULL || ms == NULL) {
		rc = nomem(err);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct srow *s = &p->rows[i];
		struct merge_span *m = &ms[i];
		const char *source = PQgetvalue(res, i, 6);
		int64_t start, dur, status;

		s->trace_id = PQgetvalue(res, i, 0);
		s->span_id = PQgetvalue(res, i, 1);
		s->service = PQgetvalue(res, i, 7);
		s->name = PQgetvalue(res, i, 8);
		s->message = col(res, i, 9);
		if (pg_text_i64(PQgetvalue(res, i, 3), &start) ||
		    pg_text_i64(PQgetvalue(res, i, 4), &dur) ||
		    pg_text_i64(PQgetvalue(res, i, 5), &status) ||
		    pg_text_i64(PQgetvalue(res, i, 10), &traces) || start < 0 ||
		    dur < 0 || hex_decode(s->trace_id, m->trace_id, 16) ||
		    hex_decode(s->span_id, m->span_id, 8) ||
		    (!PQgetisnull(res, i, 2) &&
		     hex_decode(PQgetvalue(res, i, 2), m->parent_span_id, 8))) {
			rc = pg_bad_row(err, "session span");
			goto out;
		}
		s->start_ns = (uint64_t)start;
		s->duration_ns = (uint64_t)dur;
		s->status = (int)status;
		s->failed = strcmp(PQgetvalue(res, i, 11), "t") == 0;
		m->has_parent = !PQgetisnull(res, i, 2);
		m->start_ns = s->start_ns;
		m->end_ns = s->start_ns + s->duration_ns;
		m->source = strcmp(source, "otlp") == 0 ? MERGE_SOURCE_OTLP
							: MERGE_SOURCE_EBPF;
		m->user = s;
		g->traces = (size_t)traces;
	}
	{
		struct merge_opts o = {.max_spans = GENAI_MAX_SPANS + 1,
				       .max_traces = GENAI_MAX_TRACES + 1};

		rc = merge_traces(ms, (size_t)n, &o, &mr);
		if (rc == STATUS_NOMEM) {
			rc = nomem(err);
			goto out;
		}
		if (rc != STATUS_OK) {
			rc = pg_bad_row(err, "session span set");
			goto out;
		}
	}
	sv = calloc((size_t)n + 1, sizeof(*sv));
	if (sv == NULL) {
		rc = nomem(err);
		goto out;
	}
	g->traces_read = mr->n_traces;
	if (g->traces < g->traces_read)
		g->traces = g->traces_read;
	g->truncated |= g->traces > g->traces_read;
	for (size_t t = 0; t < mr->n_traces; t++) {
		const struct merge_trace *tr = &mr->traces[t];

		if (t == 0 || tr->start_ns < g->start_ns)
			g->start_ns = tr->start_ns;
		if (tr->end_ns > g->end_ns)
			g->end_ns = tr->end_ns;
		sum_ms += (double)(tr->end_ns - tr->start_ns) / 1e6;
		for (size_t i = 0; i < tr->n_nodes; i++) {
			const struct merge_node *node = &tr->nodes[i];
			const struct srow *s = node->span->user;
			bool bad = s->failed;

			g->spans++;
			sv[nsv].name = s->service;
			sv[nsv].spans = 1;
			sv[nsv++].errors = bad;
			if (!g->has_bottleneck ||
			    node->self_ns > g->bottleneck.self_ns ||
			    (node->self_ns == g->bottleneck.self_ns &&
			     s->start_ns < g->bottleneck.start_ns)) {
				span_ref(&g->bottleneck, node, tr);
				g->has_bottleneck = true;
			}
			if (!bad)
				continue;
			g->errors++;
			/* keep the earliest GENAI_MAX_ERRORS, in order */
			size_t k = g->n_error_spans;

			while (k > 0 &&
			       g->error_spans[k - 1].start_ns > s->start_ns)
				k--;
			if (k >= GENAI_MAX_ERRORS)
				continue;
			if (g->n_error_spans < GENAI_MAX_ERRORS)
				g->n_error_spans++;
			memmove(&g->error_spans[k + 1], &g->error_spans[k],
				(g->n_error_spans - 1 - k) *
					sizeof(g->error_spans[0]));
			span_ref(&g->error_spans[k], node, tr);
		}
	}
	g->avg_trace_ms = mr->n_traces > 0 ? sum_ms / (double)mr->n_traces : 0;
	/* one entry per service, most spans first */
	qsort(sv, nsv, sizeof(*sv), by_service_name);
	for (size_t i = 0; i < nsv; i++) {
		if (g->n_services > 0 &&
		    strcmp(sv[g->n_services - 1].name, sv[i].name) == 0) {
			sv[g->n_services - 1].spans += sv[i].spans;
			sv[g->n_services - 1].errors += sv[i].errors;
			continue;
		}
		sv[g->n_services++] = sv[i];
	}
	qsort(sv, g->n_services, sizeof(*sv), by_spans_desc);
	g->services = sv;
	sv = NULL;
out:
	merge_result_free(mr);
	free(ms);
	free(sv);
	return rc;
}

static int
session_models(PGresult *res, struct genai_session *g, struct pg_error *err)
{
	int n = PQntuples(res);

	g->models = calloc((size_t)n + 1, sizeof(*g->models));
	if (g->models == NULL)
		return nomem(err);
	g->total.p50_ms = g->total.p95_ms = NAN;
	for (int i = 0; i < n; i++) {
		int64_t kind;
		struct genai_stats st;

		if (pg_text_i64(PQgetvalue(res, i, 0), &kind) ||
		    parse_stats(res, i, 3, true, &st))
			return pg_bad_row(err, "session model row");
		if (kind != 0) {
			g->total = st;
			continue;
		}
		if (g->n_models == GENAI_MAX_GROUPS)
			break;
		g->models[g->n_models].provider = col(res, i, 1);
		g->models[g->n_models].model = col(res, i, 2);
		g->models[g->n_models].snapshots = col(res, i, 13);
		g->models[g->n_models++].s = st;
	}
	return STATUS_OK;
}

static int
session_top(PGresult *res, struct genai_session *g, struct pg_error *err)
{
	for (int i = 0; i < PQntuples(res); i++) {
		struct genai_call c = {0};
		int64_t kind, start, dur, status;
		const char *cost = col(res, i, 12);

		c.trace_id = PQgetvalue(res, i, 1);
		c.span_id = PQgetvalue(res, i, 2);
		c.service = PQgetvalue(res, i, 6);
		c.name = PQgetvalue(res, i, 7);
		c.provider = col(res, i, 8);
		c.model = col(res, i, 9);
		if (pg_text_i64(PQgetvalue(res, i, 0), &kind) ||
		    pg_text_i64(PQgetvalue(res, i, 3), &start) ||
		    pg_text_i64(PQgetvalue(res, i, 4), &dur) ||
		    pg_text_i64(PQgetvalue(res, i, 5), &status) ||
		    col_i64(res, i, 10, &c.input_tokens) ||
		    col_i64(res, i, 11, &c.output_tokens) || start < 0 ||
		    dur < 0 ||
		    (cost != NULL && parse_double(cost, &c.cost_usd)))
			return pg_bad_row(err, "session call row");
		c.start_ns = (uint64_t)start;
		c.duration_ns = (uint64_t)dur;
		c.status = (int)status;
		c.priced = cost != NULL;
		c.failed = strcmp(PQgetvalue(res, i, 13), "t") == 0;
		if (kind == 0 && g->n_slowest < GENAI_TOP)
			g->slowest[g->n_slowest++] = c;
		else if (kind == 1 && g->n_costliest < GENAI_TOP)
			g->costliest[g->n_costliest++] = c;
	}
	return STATUS_OK;
}

int
genai_session_get(struct pg_conn *c, const char *session_id, int64_t from_ms,
		  int64_t to_ms, struct genai_session **out,
		  struct pg_error *err)
{
	static const char *const sqls[3] = {
		session_spans_sql, session_models_sql, session_top_sql};
	char from[48], to[48], ntr[16], lim[3][16];
	struct genai_session *g = NULL;
	struct session_priv *p = NULL;
	int rc = STATUS_OK;

	*out = NULL;
	if (session_id == NULL || session_id[0] == '\0' || from_ms >= to_ms) {
		set_err(err,
			"a session id and a non-empty time range are "
			"required",
			"bad session query");
		return STATUS_INVALID;
	}
	g = calloc(1, sizeof(*g));
	p = calloc(1, sizeof(*p));
	if (g == NULL || p == NULL) {
		free(g);
		free(p);
		return nomem(err);
	}
	g->priv_ = p;
	pg_ts_text(from_ms, from, sizeof(from));
	pg_ts_text(to_ms, to, sizeof(to));
	snprintf(ntr, sizeof(ntr), "%d", GENAI_MAX_TRACES);
	snprintf(lim[0], sizeof(lim[0]), "%d", GENAI_MAX_SPANS + 1);
	snprintf(lim[1], sizeof(lim[1]), "%d", GENAI_MAX_GROUPS + 1);
	snprintf(lim[2], sizeof(lim[2]), "%d", GENAI_TOP);
	for (int q = 0; q < 3; q++) {
		const char *v[5] = {session_id, from, to, ntr, lim[q]};

		if ((rc = query(c, sqls[q], 5, v, &p->res[q], err)) !=
		    STATUS_OK)
			goto fail;
		if (q == 0 && PQntuples(p->res[0]) == 0) {
			rc = STATUS_NOTFOUND;
			goto fail;
		}
		switch (q) {
		case 0: rc = session_spans(p->res[0], g, p, err); break;
		case 1: rc = session_models(p->res[1], g, err); break;
		default: rc = session_top(p->res[2], g, err); break;
		}
		if (rc != STATUS_OK)
			goto fail;
	}
	*out = g;
	return STATUS_OK;
fail:
	genai_session_free(g);
	return rc;
}

void
genai_session_free(struct genai_session *g)
{
	struct session_priv *p;

	if (g == NULL)
		return;
	p = g->priv_;
	if (p != NULL) {
		for (int i = 0; i < 3; i++)
			PQclear(p->res[i]);
		free(p->rows);
		free(p);
	}
	free(g->services);
	free(g->models);
	free(g);
}

/* ---- recent sessions ---------------------------------------------------- */

/* $1 / $2 the range, $3 the id looked for (or NULL), $4 how many.  Reads
 * spans_session_idx: proportional to the spans that carry a session. */
static const char recent_sql[] =
	"SELECT r.session_id, f.service_name, "
	"sextant_unix_nano(f.start_time, f.start_nanos), r.alike FROM "
	"(SELECT session_id, max(start_time) AS last, "
	"coalesce(starts_with(lower(session_id), lower($3::text)), false) "
	"AS alike FROM spans WHERE session_id IS NOT NULL "
	"AND start_time >= $1::timestamptz AND start_time < $2::timestamptz "
	"GROUP BY session_id ORDER BY alike DESC, last DESC, session_id "
	"LIMIT $4) r CROSS JOIN LATERAL (SELECT service_name, start_time, "
	"start_nanos FROM spans s WHERE s.session_id = r.session_id "
	"AND s.start_time >= $1::timestamptz AND s.start_time < "
	"$2::timestamptz ORDER BY s.start_time LIMIT 1) f "
	"ORDER BY r.alike DESC, r.last DESC, r.session_id";

int
genai_recent_sessions(struct pg_conn *c, const char *like, int64_t from_ms,
		      int64_t to_ms, struct genai_recent_list **out,
		      struct pg_error *err)
{
	char from[48], to[48], lim[16];
	const char *v[4] = {from, to, like, lim};
	struct genai_recent_list *l = NULL;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if (from_ms >= to_ms) {
		set_err(err, "a non-empty time range is required",
			"bad recent sessions query");
		return STATUS_INVALID;
	}
	pg_ts_text(from_ms, from, sizeof(from));
	pg_ts_text(to_ms, to, sizeof(to));
	snprintf(lim, sizeof(lim), "%d", GENAI_MAX_RECENT);
	if ((rc = query(c, recent_sql, 4, v, &res, err)) != STATUS_OK)
		return rc;
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		PQclear(res);
		return nomem(err);
	}
	for (int i = 0; i < PQntuples(res) && l->n < GENAI_MAX_RECENT; i++) {
		struct genai_recent *r = &l->items[l->n];
		int64_t start;

		if (pg_text_i64(PQgetvalue(res, i, 2), &start) || start < 0) {
			PQclear(res);
			free(l);
			return pg_bad_row(err, "session row");
		}
		r->session_id = PQgetvalue(res, i, 0);
		r->service = PQgetvalue(res, i, 1);
		r->start_ns = (uint64_t)start;
		r->similar = strcmp(PQgetvalue(res, i, 3), "t") == 0;
		l->n++;
	}
	l->priv_ = res;
	*out = l;
	return STATUS_OK;
}

void
genai_recent_free(struct genai_recent_list *l)
{
	if (l == NULL)
		return;
	PQclear(l->priv_);
	free(l);
}

/* ---- usage over a range ------------------------------------------------- */

/*
 * $1 the previous period's start, $2 the range's start, $3 its end,
 * $4 service, $5 model (exact, or a family), $6 GENAI_MAX_GROUPS,
 * $7 GENAI_TOP.  Rows: kind (0 total, 1 by model family, 2 by service,
 * 3 the previous period's total, 4 the most expensive sessions, 5 the
 * least expensive), provider, family, service, session, STATS_COLS, p50,
 * p95, rows of that kind in all, rank, the family's snapshots.
 */
static const char usage_sql[] =
	"WITH RECURSIVE g AS MATERIALIZED (SELECT " G_COLS
	", s.start_time >= $2::timestamptz AS cur FROM spans s "
	"WHERE s.start_time >= $1::timestamptz "
	"AND s.start_time < $3::timestamptz AND " G_PRED
	" AND ($4::text IS NULL OR s.service_name = $4) "
	"AND ($5::text IS NULL OR s.gen_ai_response_model = $5 "
	"OR s.gen_ai_request_model = $5 OR sextant_genai_family("
	"s.gen_ai_request_model, s.gen_ai_response_model) = $5)" G_DEDUP
	")" CALLS_CTES
	", agg AS (SELECT GROUPING(provider, family, service_name) AS gs, "
	"provider, family, service_name, sum(cost) AS rank_cost, " STATS_COLS
	", " PCT_COLS " FROM calls WHERE cur GROUP BY GROUPING SETS ((), "
	"(provider, family), (service_name))), " SNAP_CTE(
		" AND cur") ", "
			    /* sessions ranked by cost both ways, then the unpriced models of
	 * those kept: one sort per group for the list is too dear over
	 * thousands of sessions */
			    "ranked AS (SELECT session_id, min(service_name) "
			    "AS "
			    "service, " STATS_COLS_SHORT
			    ", count(*) OVER () AS n, row_number() OVER (ORDER "
			    "BY sum(cost) DESC NULLS LAST, count(*) DESC, "
			    "session_id) AS rd, "
			    "row_number() OVER (ORDER BY sum(cost) NULLS LAST, "
			    "count(*), "
			    "session_id) AS ra FROM calls WHERE cur AND "
			    "session_id IS NOT NULL "
			    "GROUP BY session_id), "
			    "top AS MATERIALIZED (SELECT * FROM ranked WHERE "
			    "rd <= $7 OR "
			    "ra <= $7), "
			    "um AS (SELECT session_id, string_agg(DISTINCT "
			    "coalesce(model, ''), "
			    "E'\\n' ORDER BY coalesce(model, '')) AS models "
			    "FROM calls WHERE cur "
			    "AND session_id IN (SELECT session_id FROM top) "
			    "AND " UNPRICED " GROUP BY session_id) "
			    "SELECT * FROM (SELECT CASE gs WHEN 7 THEN 0 WHEN "
			    "1 THEN 1 ELSE 2 END "
			    "AS kind, a.provider, a.family, service_name, "
			    "NULL::text AS "
			    "session_id, " STATS_NAMES
			    ", p50, p95, count(*) OVER (PARTITION BY gs) AS n, "
			    "row_number() OVER (PARTITION BY gs ORDER BY "
			    "rank_cost DESC NULLS "
			    "LAST, calls DESC, a.provider, a.family, "
			    "service_name) AS rn, "
			    "CASE gs WHEN 1 THEN snap.snapshots END AS "
			    "snapshots "
			    "FROM agg a" SNAP_JOIN(
				    "a") ") a WHERE rn <= $6 "
					 "UNION ALL SELECT 3, NULL, NULL, "
					 "NULL, NULL, " STATS_COLS
					 ", NULL::float8, NULL::float8, 1, 1, "
					 "NULL FROM calls WHERE NOT cur "
					 "UNION ALL SELECT k.kind, NULL, NULL, "
					 "t.service, t.session_id, "
					 "t.calls, t.errors, t.tin, t.tout, "
					 "t.cost, t.priced, t.unpriced, "
					 "um.models, NULL::float8, "
					 "NULL::float8, t.n, CASE k.kind WHEN "
					 "4 THEN "
					 "t.rd ELSE t.ra END, NULL FROM top t "
					 "CROSS JOIN (VALUES (4), (5)) "
					 "k(kind) LEFT JOIN um USING "
					 "(session_id) WHERE CASE k.kind WHEN "
					 "4 "
					 "THEN t.rd ELSE t.ra END <= $7 ORDER "
					 "BY 1, 17";

int
genai_usage_get(struct pg_conn *c, const struct genai_filter *f,
		struct genai_usage **out, struct pg_error *err)
{
	char prev[48], from[48], to[48], groups[16], top[16];
	const char *v[7] = {prev, from, to, f->service, f->model, groups, top};
	struct genai_usage *u = NULL;
	PGresult *res = NULL;
	int rc, n;

	*out = NULL;
	if (f->from_ms >= f->to_ms ||
	    f->from_ms - (f->to_ms - f->from_ms) < 0) {
		set_err(err, "the time range must be non-empty and after 1970",
			"bad usage range");
		return STATUS_INVALID;
	}
	pg_ts_text(f->from_ms - (f->to_ms - f->from_ms), prev, sizeof(prev));
	pg_ts_text(f->from_ms, from, sizeof(from));
	pg_ts_text(f->to_ms, to, sizeof(to));
	snprintf(groups, sizeof(groups), "%d", GENAI_MAX_GROUPS);
	snprintf(top, sizeof(top), "%d", GENAI_TOP);
	if ((rc = query(c, usage_sql, 7, v, &res, err)) != STATUS_OK)
		return rc;
	n = PQntuples(res);
	if ((u = calloc(1, sizeof(*u))) == NULL) {
		PQclear(res);
		return nomem(err);
	}
	u->priv_ = res;
	if ((u->models = calloc((size_t)n + 1, sizeof(*u->models))) == NULL ||
	    (u->services = calloc((size_t)n + 1, sizeof(*u->services))) ==
		    NULL ||
	    (u->sessions = calloc((size_t)n + 1, sizeof(*u->sessions))) ==
		    NULL ||
	    (u->cheapest = calloc((size_t)n + 1, sizeof(*u->cheapest))) ==
		    NULL) {
		rc = nomem(err);
		goto fail;
	}
	u->total.p50_ms = u->total.p95_ms = NAN;
	u->previous.p50_ms = u->previous.p95_ms = NAN;
	for (int i = 0; i < n; i++) {
		struct genai_group gr = {0};
		int64_t kind, total;

		gr.provider = col(res, i, 1);
		gr.model = col(res, i, 2);
		gr.service = col(res, i, 3);
		gr.session_id = col(res, i, 4);
		gr.snapshots = col(res, i, 17);
		if (pg_text_i64(PQgetvalue(res, i, 0), &kind) ||
		    parse_stats(res, i, 5, true, &gr.s) ||
		    pg_text_i64(PQgetvalue(res, i, 15), &total) || total < 0) {
			rc = pg_bad_row(err, "usage row");
			goto fail;
		}
		switch (kind) {
		case 0: u->total = gr.s; break;
		case 1:
			u->models[u->n_models++] = gr;
			u->models_total = (size_t)total;
			break;
		case 2:
			u->services[u->n_services++] = gr;
			u->services_total = (size_t)total;
			break;
		case 3: u->previous = gr.s; break;
		case 4:
			u->sessions[u->n_sessions++] = gr;
			u->sessions_total = (size_t)total;
			break;
		default:
			u->cheapest[u->n_cheapest++] = gr;
			u->sessions_total = (size_t)total;
			break;
		}
	}
	*out = u;
	return STATUS_OK;
fail:
	genai_usage_free(u);
	return rc;
}

void
genai_usage_free(struct genai_usage *u)
{
	if (u == NULL)
		return;
	PQclear(u->priv_);
	free(u->models);
	free(u->services);
	free(u->sessions);
	free(u->cheapest);
	free(u);
}

/* ---- names -------------------------------------------------------------- */

static const char models_sql[] =
	"SELECT coalesce(nullif(s.gen_ai_response_model, ''), "
	"nullif(s.gen_ai_request_model, '')) AS m FROM spans s "
	"WHERE s.start_time >= $1::timestamptz AND s.start_time < "
	"$2::timestamptz AND " G_PRED
	" GROUP BY 1 HAVING coalesce(nullif(s.gen_ai_response_model, ''), "
	"nullif(s.gen_ai_request_model, '')) IS NOT NULL "
	"ORDER BY count(*) DESC, 1 LIMIT $3";
static const char services_sql[] =
	"SELECT s.service_name FROM spans s WHERE s.start_time >= "
	"$1::timestamptz AND s.start_time < $2::timestamptz AND " G_PRED
	" GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT $3";

int
genai_names_get(struct pg_conn *c, enum genai_key key, int64_t from_ms,
		int64_t to_ms, size_t max, struct genai_names **out,
		struct pg_error *err)
{
	char from[48], to[48], lim[16];
	const char *v[3] = {from, to, lim};
	struct genai_names *nm = NULL;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if (from_ms >= to_ms || max == 0 || max > GENAI_MAX_NAMES) {
		set_err(err,
			"a non-empty time range and 1..50 names are "
			"required",
			"bad names query");
		return STATUS_INVALID;
	}
	pg_ts_text(from_ms, from, sizeof(from));
	pg_ts_text(to_ms, to, sizeof(to));
	snprintf(lim, sizeof(lim), "%zu", max);
	if ((rc = query(c, key == GENAI_KEY_MODEL ? models_sql : services_sql,
			3, v, &res, err)) != STATUS_OK)
		return rc;
	if ((nm = calloc(1, sizeof(*nm))) == NULL) {
		PQclear(res);
		return nomem(err);
	}
	for (int i = 0; i < PQntuples(res) && nm->n < GENAI_MAX_NAMES; i++)
		nm->names[nm->n++] = PQgetvalue(res, i, 0);
	nm->priv_ = res;
	*out = nm;
	return STATUS_OK;
}

void
genai_names_free(struct genai_names *nm)
{
	if (nm == NULL)
		return;
	PQclear(nm->priv_);
	free(nm);
}

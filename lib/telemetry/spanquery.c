/*
 * spanquery.c - span metrics, trace and service queries for the unified
 * tools (see spanquery.h).  Every value is a bound parameter; the SQL text
 * is static, and PostgreSQL plans each statement with the values known, so
 * "$n IS NULL OR ..." filters cost nothing when unused.
 */
#include "telemetry/spanquery.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "base/hex.h"
#include "base/strdist.h"
#include "telemetry/rollup.h"

static const char *const protocol_names[SPANQUERY_PROTOCOLS] = {"http", "grpc",
								"sql"};

const char *
spanquery_protocol_name(int protocol)
{
	if (protocol < 0 || protocol >= SPANQUERY_PROTOCOLS)
		return NULL;
	return protocol_names[protocol];
}

int
spanquery_protocol_parse(const char *name)
{
	for (int i = 0; name != NULL && i < SPANQUERY_PROTOCOLS; i++)
		if (strcmp(name, protocol_names[i]) == 0)
			return i;
	return -1;
}

/* ---- metrics ------------------------------------------------------------ */

/*
 * Both metrics statements bind spanquery_params' $1..$13 (SPANQUERY_WHERE);
 * the rollup statement adds $14 / $15, the whole settled hours, and
 * $16 / $17, the whole settled minutes (struct rollup_split).
 */
#define RAW_WHERE SPANQUERY_WHERE

/*
 * Per key, and per protocol (k1 and k2 NULL, after the keys): requests,
 * errors, client errors, the counts of the status codes that were not ok
 * ("status:span_error:outcome:n,..."), and percentiles.
 */
static const char metrics_exact_sql[] =
	"WITH s AS (SELECT protocol, k1, k2, status, span_error, outcome, "
	"duration_ns FROM span_calls WHERE" RAW_WHERE
	" AND start_time >= $3::timestamptz AND start_time < $4::timestamptz) "
	"SELECT p.protocol, p.k1, p.k2, p.n, p.e, p.ce, c.codes, p.pct FROM "
	"(SELECT protocol, k1, k2, count(*) AS n, count(*) FILTER (WHERE "
	"outcome = 1) AS e, count(*) FILTER (WHERE outcome = 2) AS ce, "
	"percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP "
	"(ORDER BY duration_ns) AS pct FROM s GROUP BY GROUPING SETS ((1, 2, "
	"3), (1))) p LEFT JOIN (SELECT protocol, k1, k2, string_agg(status || "
	"':' || span_error::int || ':' || outcome || ':' || n, ',') AS codes "
	"FROM (SELECT protocol, k1, k2, status, span_error, outcome, count(*) "
	"AS n FROM s WHERE outcome <> 0 GROUP BY 1, 2, 3, 4, 5, 6) x "
	"GROUP BY GROUPING SETS ((1, 2, 3), (1))) c ON c.protocol = p.protocol "
	"AND c.k1 IS NOT DISTINCT FROM p.k1 AND c.k2 IS NOT DISTINCT FROM p.k2 "
	"ORDER BY p.k1 IS NOT NULL, 1, 2, 3 LIMIT 2004";

/*
 * Each part of the range from the finest source that is up to date
 * (docs/schema.md): hour rows for the clean hours in [$14, $15); minute
 * rows for the clean minutes in [$16, $17) outside those (beside the hours,
 * or inside a dirty hour); raw spans, bucketed the same way, for the head
 * [$3, $16), the tail [$17, $4) and the dirty minutes outside clean hours.
 * Each raw part is its own range scan so that the (service_name, source,
 * start_time) index serves it: the dirty minutes one index scan each
 * (LATERAL, kept apart by OFFSET 0), as a join the planner would read every
 * span of the service and source and match them to the minutes.
 */
#define RAW_HIST                                                               \
	"SELECT protocol, k1, k2, status, span_error, outcome, "               \
	"sextant_duration_bucket(duration_ns) "                                \
	"AS b, count(*) AS n FROM span_calls "

/* dh: dirty hours of [$14, $15); dm: dirty minutes of [$16, $17) that no
 * clean hour covers. */
#define DIRTY_CTES                                                             \
	"WITH dh AS (SELECT DISTINCT period FROM span_rollup_dirty "           \
	"WHERE period >= $14::timestamptz AND period < $15::timestamptz), "    \
	"dm AS (SELECT DISTINCT period FROM span_rollup_minute_dirty "         \
	"WHERE period >= $16::timestamptz AND period < $17::timestamptz "      \
	"AND (period < $14::timestamptz OR period >= $15::timestamptz "        \
	"OR date_trunc('hour', period, 'UTC') IN (SELECT period FROM dh))) "

/*
 * Minute rows of [$16, $17) that no clean hour covers, each part an index
 * range: beside the hours ([$16, $14) and [$15, $17)), and inside each
 * dirty hour (LATERAL, as the dirty minutes below); not the dirty minutes.
 */
#define ROLLUP_COLS                                                            \
	"protocol, k1, k2, status, span_error, "                               \
	"sextant_call_outcome(protocol, "                                      \
	"status, span_error), buckets::text, counts::text"
#define MINUTE_COLS ROLLUP_COLS
#define MINUTE_ROWS                                                            \
	"SELECT " MINUTE_COLS " FROM span_rollup_minute WHERE" RAW_WHERE       \
	" AND period >= $16::timestamptz AND period < $14::timestamptz"        \
	" AND period NOT IN (SELECT period FROM dm) UNION ALL "                \
	"SELECT " MINUTE_COLS " FROM span_rollup_minute WHERE" RAW_WHERE       \
	" AND period >= $15::timestamptz AND period < $17::timestamptz"        \
	" AND period NOT IN (SELECT period FROM dm) UNION ALL "                \
	"SELECT " MINUTE_COLS                                                  \
	" FROM dh h CROSS JOIN LATERAL (SELECT r.* FROM "                      \
	"span_rollup_minute r WHERE" RAW_WHERE " AND r.period >= h.period "    \
	"AND r.period < h.period + interval '1 hour' OFFSET 0) m "             \
	"WHERE m.period NOT IN (SELECT period FROM dm)"

static const char metrics_rollup_sql[] = DIRTY_CTES
	", raw AS (" RAW_HIST "WHERE" RAW_WHERE
	" AND start_time >= $3::timestamptz AND start_time < $16::timestamptz"
	" GROUP BY 1, 2, 3, 4, 5, 6, 7 UNION ALL " RAW_HIST "WHERE" RAW_WHERE
	" AND start_time >= $17::timestamptz AND start_time < $4::timestamptz"
	" GROUP BY 1, 2, 3, 4, 5, 6, 7 UNION ALL "
	"SELECT protocol, k1, k2, status, span_error, outcome, b, count(*) AS "
	"n "
	"FROM dm d CROSS JOIN LATERAL (SELECT protocol, k1, k2, status, "
	"span_error, outcome, sextant_duration_bucket(duration_ns) AS b "
	"FROM span_calls WHERE" RAW_WHERE
	" AND start_time >= d.period AND start_time < d.period + "
	"interval '1 minute' OFFSET 0) s GROUP BY 1, 2, 3, 4, 5, 6, 7) "
	"SELECT " ROLLUP_COLS " FROM span_rollup WHERE" RAW_WHERE
	" AND period >= $14::timestamptz AND period < $15::timestamptz"
	" AND period NOT IN (SELECT period FROM dh) "
	"UNION ALL " MINUTE_ROWS " UNION ALL SELECT protocol, k1, k2, status, "
	"span_error, outcome, array_agg(b ORDER BY b)::text, "
	"array_agg(n ORDER BY b)::text FROM (SELECT protocol, k1, k2, status, "
	"span_error, outcome, b, sum(n) AS n FROM raw "
	"GROUP BY 1, 2, 3, 4, 5, 6, 7) r GROUP BY 1, 2, 3, 4, 5, 6 "
	"ORDER BY 1, 2, 3";

void
spanquery_tally_add(struct spanquery_tally *t, int protocol, int status,
		    bool span_error, int outcome, uint64_t n)
{
	size_t i;

	if (outcome != SPANQUERY_ERROR && outcome != SPANQUERY_CLIENT_ERROR)
		return;
	for (i = 0; i < t->n; i++)
		if (t->v[i].protocol == protocol && t->v[i].status == status &&
		    t->v[i].span_error == span_error &&
		    t->v[i].outcome == outcome) {
			t->v[i].n += n;
			return;
		}
	if (t->n == SPANQUERY_TALLY_MAX)
		return;
	t->v[t->n].protocol = protocol;
	t->v[t->n].status = status;
	t->v[t->n].span_error = span_error;
	t->v[t->n].outcome = outcome;
	t->v[t->n].n = n;
	t->n++;
}

/* a before b in a top list: more first, then the lower status */
static bool
code_before(uint64_t na, int sa, uint64_t nb, int sb)
{
	return na != nb ? na > nb : sa < sb;
}

void
spanquery_tally_top(const struct spanquery_tally *t,
		    struct spanquery_code codes[2][SPANQUERY_TOP_CODES])
{
	memset(codes, 0, 2 * sizeof(codes[0]));
	for (size_t i = 0; i < t->n; i++) {
		struct spanquery_code *top =
			codes[t->v[i].outcome == SPANQUERY_CLIENT_ERROR];
		struct spanquery_code c = {t->v[i].protocol, t->v[i].status,
					   t->v[i].span_error, t->v[i].n};
		int k = SPANQUERY_TOP_CODES;

		/* insertion into the short sorted list */
		while (k > 0 && (top[k - 1].n == 0 ||
				 code_before(c.n, c.status, top[k - 1].n,
					     top[k - 1].status)))
			k--;
		if (k == SPANQUERY_TOP_CODES)
			continue;
		memmove(&top[k + 1], &top[k],
			(SPANQUERY_TOP_CODES - 1 - (size_t)k) * sizeof(*top));
		top[k] = c;
	}
}

bool
spanquery_outcome_cols(const char *status, const char *span_error,
		       const char *outcome, int *st, bool *se, int *oc)
{
	char *end, *end2;
	long v, o;

	errno = 0;
	v = strtol(status, &end, 10);
	o = strtol(outcome, &end2, 10);
	if (errno != 0 || end == status || *end != '\0' || end2 == outcome ||
	    *end2 != '\0' || v < INT_MIN || v > INT_MAX || o < 0 || o > 2 ||
	    (strcmp(span_error, "t") != 0 && strcmp(span_error, "f") != 0))
		return false;
	*st = (int)v;
	*se = span_error[0] == 't';
	*oc = (int)o;
	return true;
}

int
spanquery_tally_parse(struct spanquery_tally *t, int protocol, const char *s)
{
	while (*s != '\0') {
		long v[4];
		char *end;

		for (int i = 0; i < 4; i++) {
			errno = 0;
			v[i] = strtol(s, &end, 10);
			if (errno != 0 || end == s ||
			    *end != (i < 3	   ? ':'
				     : *end == ',' ? ','
						   : '\0'))
				return STATUS_INVALID;
			s = *end != '\0' ? end + 1 : end;
		}
		if (v[3] < 0 || v[1] < 0 || v[1] > 1)
			return STATUS_INVALID;
		spanquery_tally_add(t, protocol, (int)v[0], v[1] != 0,
				    (int)v[2], (uint64_t)v[3]);
	}
	return STATUS_OK;
}

int
spanquery_params(struct spanquery_params *p, const char *source,
		 const struct spanquery_filter *f, struct pg_error *err)
{
	size_t len = 0;

	if (f->service == NULL || f->from_ms >= f->to_ms) {
		snprintf(err->client, sizeof(err->client),
			 "a service and a non-empty time range are required");
		err->detail[0] = err->sqlstate[0] = '\0';
		return STATUS_INVALID;
	}
	p->protos[len++] = '{';
	for (int i = 0; i < SPANQUERY_PROTOCOLS; i++) {
		if (f->protocols != 0 && !(f->protocols & (1u << i)))
			continue;
		len += (size_t)snprintf(p->protos + len,
					sizeof(p->protos) - len, "%s%s",
					len > 1 ? "," : "", protocol_names[i]);
	}
	snprintf(p->protos + len, sizeof(p->protos) - len, "}");
	pg_ts_text(f->from_ms, p->from, sizeof(p->from));
	pg_ts_text(f->to_ms, p->to, sizeof(p->to));
	snprintf(p->smin, sizeof(p->smin), "%d", f->http_status_min);
	snprintf(p->smax, sizeof(p->smax), "%d", f->http_status_max);
	snprintf(p->gstat, sizeof(p->gstat), "%d", f->grpc_status);
	p->v[0] = f->service;
	p->v[1] = source;
	p->v[2] = p->from;
	p->v[3] = p->to;
	p->v[4] = p->protos;
	p->v[5] = f->http_route;
	p->v[6] = f->http_method;
	p->v[7] = f->http_status_min || f->http_status_max ? p->smin : NULL;
	p->v[8] = f->http_status_min || f->http_status_max ? p->smax : NULL;
	p->v[9] = f->grpc_method;
	p->v[10] = f->grpc_status >= 0 ? p->gstat : NULL;
	p->v[11] = f->sql_operation;
	p->v[12] = f->table_name;
	return STATUS_OK;
}

int
spanquery_metrics_send(struct pg_conn *c, const char *source,
		       const struct spanquery_filter *f, int64_t now_ms,
		       bool *rollup, struct pg_error *err)
{
	char hfrom[48], hto[48], mfrom[48], mto[48];
	struct spanquery_params p;
	const char **v = p.v;
	struct rollup_split sp;
	int rc;

	*rollup = false;
	if ((rc = spanquery_params(&p, source, f, err)) != STATUS_OK)
		return rc;
	/* whole settled minutes and hours inside the range (rollup.h) */
	if (!rollup_split_range(f->from_ms, f->to_ms, now_ms, &sp))
		return pg_send(c, metrics_exact_sql, 13, v, err);
	pg_ts_text(sp.hour_from, hfrom, sizeof(hfrom));
	pg_ts_text(sp.hour_to, hto, sizeof(hto));
	pg_ts_text(sp.minute_from, mfrom, sizeof(mfrom));
	pg_ts_text(sp.minute_to, mto, sizeof(mto));
	v[13] = hfrom;
	v[14] = hto;
	v[15] = mfrom;
	v[16] = mto;
	*rollup = true;
	return pg_send(c, metrics_rollup_sql, 17, v, err);
}

struct metrics_priv {
	PGresult *res;
};

/* "{1.5,20,33.25}" -> three doubles (ns) */
static int
parse_percentiles(const char *s, double out[3])
{
	if (*s++ != '{')
		return STATUS_INVALID;
	for (int i = 0; i < 3; i++) {
		char *end;

		errno = 0;
		out[i] = strtod(s, &end);
		if (errno != 0 || end == s || *end != (i < 2 ? ',' : '}'))
			return STATUS_INVALID;
		s = end + 1;
	}
	return *s == '\0' ? STATUS_OK : STATUS_INVALID;
}

static int
exact_rows(PGresult *res, struct spanquery_metrics *m, struct pg_error *err)
{
	int n = PQntuples(res);

	for (int i = 0; i < n; i++) {
		struct spanquery_tally t = {.n = 0};
		bool total = PQgetisnull(res, i, 1);
		struct spanquery_row *r, tr;
		double pct[3];

		if (!total && m->n == SPANQUERY_MAX_KEYS) {
			m->truncated = true;
			continue;
		}
		r = total ? &tr : &m->rows[m->n];
		memset(r, 0, sizeof(*r));
		r->protocol = spanquery_protocol_parse(PQgetvalue(res, i, 0));
		r->k1 = PQgetvalue(res, i, 1);
		r->k2 = PQgetvalue(res, i, 2);
		if (r->protocol < 0 ||
		    pg_text_u64(PQgetvalue(res, i, 3), &r->requests) ||
		    pg_text_u64(PQgetvalue(res, i, 4), &r->errors) ||
		    pg_text_u64(PQgetvalue(res, i, 5), &r->client_errors) ||
		    spanquery_tally_parse(&t, r->protocol,
					  PQgetvalue(res, i, 6)) ||
		    parse_percentiles(PQgetvalue(res, i, 7), pct)) {
			pg_bad_row(err, "metrics row");
			return STATUS_IO;
		}
		spanquery_tally_top(&t, r->codes);
		r->p50_ms = pct[0] / 1e6;
		r->p95_ms = pct[1] / 1e6;
		r->p99_ms = pct[2] / 1e6;
		if (!total) {
			m->n++;
			continue;
		}
		r->k1 = r->k2 = "";
		m->total[r->protocol] = *r;
	}
	return STATUS_OK;
}

static bool
same_key(PGresult *res, int a, int b)
{
	for (int col = 0; col < 3; col++)
		if (strcmp(PQgetvalue(res, a, col), PQgetvalue(res, b, col)) !=
		    0)
			return false;
	return true;
}

/* A row's requests and percentiles from its histogram. */
static void
hist_row(const struct rollup_hist *h, struct spanquery_row *r)
{
	r->requests = (uint64_t)rollup_hist_count(h);
	if (r->requests == 0)
		return;
	r->p50_ms = rollup_hist_quantile(h, 0.50) / 1e6;
	r->p95_ms = rollup_hist_quantile(h, 0.95) / 1e6;
	r->p99_ms = rollup_hist_quantile(h, 0.99) / 1e6;
}

/* Rows of one key are adjacent (ORDER BY 1, 2, 3): sum their histograms;
 * the totals per protocol sum them all. */
static int
rollup_rows(PGresult *res, struct spanquery_metrics *m, struct pg_error *err)
{
	int n = PQntuples(res), rc = STATUS_OK;
	struct rollup_hist *h = NULL, *ph[SPANQUERY_PROTOCOLS] = {NULL};
	/* per key, then per protocol ([1 + p]) */
	struct spanquery_tally *t = calloc(1 + SPANQUERY_PROTOCOLS, sizeof(*t));
	struct spanquery_row scratch;

	if (t == NULL)
		return STATUS_NOMEM;
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++)
		if ((ph[p] = rollup_hist_new()) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
	for (int i = 0, j; i < n; i = j) {
		struct spanquery_row *r;

		/* past the keys kept, rows still count in the totals */
		if (m->n == SPANQUERY_MAX_KEYS)
			m->truncated = true;
		r = m->n < SPANQUERY_MAX_KEYS ? &m->rows[m->n] : &scratch;
		memset(r, 0, sizeof(*r));
		r->protocol = spanquery_protocol_parse(PQgetvalue(res, i, 0));
		r->k1 = PQgetvalue(res, i, 1);
		r->k2 = PQgetvalue(res, i, 2);
		if (r->protocol < 0)
			goto bad;
		rollup_hist_free(h);
		if ((h = rollup_hist_new()) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		t->n = 0;
		for (j = i; j < n && same_key(res, i, j); j++) {
			int64_t before = rollup_hist_count(h);
			int status, outcome;
			bool se;
			uint64_t got;

			if (!spanquery_outcome_cols(PQgetvalue(res, j, 3),
						    PQgetvalue(res, j, 4),
						    PQgetvalue(res, j, 5),
						    &status, &se, &outcome) ||
			    rollup_hist_add_text(h, PQgetvalue(res, j, 6),
						 PQgetvalue(res, j, 7)) !=
				    STATUS_OK ||
			    rollup_hist_add_text(
				    ph[r->protocol], PQgetvalue(res, j, 6),
				    PQgetvalue(res, j, 7)) != STATUS_OK)
				goto bad;
			got = (uint64_t)(rollup_hist_count(h) - before);
			if (outcome == SPANQUERY_ERROR)
				r->errors += got;
			else if (outcome == SPANQUERY_CLIENT_ERROR)
				r->client_errors += got;
			spanquery_tally_add(&t[0], r->protocol, status, se,
					    outcome, got);
			spanquery_tally_add(&t[1 + r->protocol], r->protocol,
					    status, se, outcome, got);
		}
		spanquery_tally_top(&t[0], r->codes);
		hist_row(h, r);
		m->total[r->protocol].errors += r->errors;
		m->total[r->protocol].client_errors += r->client_errors;
		if (r != &scratch)
			m->n++;
	}
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		struct spanquery_row *tr = &m->total[p];

		tr->protocol = p;
		tr->k1 = tr->k2 = "";
		spanquery_tally_top(&t[1 + p], tr->codes);
		hist_row(ph[p], tr);
	}
	goto out;
bad:
	pg_bad_row(err, "rollup row");
	rc = STATUS_IO;
out:
	rollup_hist_free(h);
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++)
		rollup_hist_free(ph[p]);
	free(t);
	return rc;
}

int
spanquery_metrics_recv(struct pg_conn *c, bool rollup,
		       struct spanquery_metrics **out, struct pg_error *err)
{
	struct spanquery_metrics *m = NULL;
	struct metrics_priv *priv = NULL;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	m = calloc(1, sizeof(*m));
	priv = calloc(1, sizeof(*priv));
	if (m == NULL || priv == NULL ||
	    (m->rows = calloc((size_t)PQntuples(res) + 1, sizeof(*m->rows))) ==
		    NULL) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	m->rollup = rollup;
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		m->total[p].protocol = p;
		m->total[p].k1 = m->total[p].k2 = "";
	}
	priv->res = res;
	m->priv_ = priv;
	priv = NULL;
	res = NULL;
	rc = rollup ? rollup_rows(((struct metrics_priv *)m->priv_)->res, m,
				  err)
		    : exact_rows(((struct metrics_priv *)m->priv_)->res, m,
				 err);
	if (rc != STATUS_OK)
		goto fail;
	*out = m;
	return STATUS_OK;
fail:
	if (rc == STATUS_NOMEM) {
		snprintf(err->client, sizeof(err->client), "out of memory");
		err->detail[0] = err->sqlstate[0] = '\0';
	}
	spanquery_metrics_free(m);
	free(priv);
	PQclear(res);
	return rc;
}

void
spanquery_metrics_free(struct spanquery_metrics *m)
{
	struct metrics_priv *priv;

	if (m == NULL)
		return;
	priv = m->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(m->rows);
	free(m);
}

/* ---- traces ------------------------------------------------------------- */

/*
 * Two statements pick a source's traces.  The common case, the most recent
 * traces with no duration filter, walks the (service_name, source,
 * start_time) index (for any service (source, start_time)) newest first
 * and stops at the (max_traces + 1)th distinct trace: one index probe per
 * trace, each resuming at the span the last one found (a recursive CTE
 * carrying the ids seen).  Every span newer than that trace's belongs to
 * the traces already found, so it reads theirs and no others, whatever the
 * range holds (under a millisecond for a busy hour of 10 million spans,
 * against 30-50 ms to group every trace of the hour; bench/RESULTS.md).
 * The walk is ordered by (start_time DESC, trace_id), so the first span met
 * of each trace is its latest and ties go to the lower id, as ORDER BY
 * 2 DESC, 1 in the other two.
 *
 * With min_duration or sort = slowest a walk would read spans in an order
 * the filter does not follow (a selective duration makes it read the whole
 * range at random, and the planner may turn each probe into a scan of the
 * range), so those group the newest (or longest) SCAN_SPANS matching spans
 * by trace instead, bounded as before: the traces found there are the best
 * ones, but when SCAN_SPANS spans were read other traces may lie beyond
 * them, so "more" is set then.
 */
#define SCAN_SPANS "20000"

/*
 * The walk, as named statements with generic plans (pg_stmt.generic): no
 * planning per call (0.4 ms of each walk's 0.7 ms in a warm session on
 * the benchmark's 10 million spans; bench/RESULTS.md).  A generic plan
 * cannot use "$n IS NULL OR service_name = $n" as an index condition, so
 * "any service" is a statement of its own; each one's generic plan reads
 * the same index as the custom plans did, pruning partitions at run time
 * (checked with EXPLAIN ANALYZE EXECUTE under force_generic_plan).
 *
 * $1 from, $2 to, $3 max_traces, $4 source, $5 service (WALK_SVC only).
 * WALK_IDS(where) is the CTE "w" of up to $3 + 1 traces, each with its
 * latest matching span; WALK_TOP "t" keeps the best $3 and says whether
 * there were more.
 */
#define WALK_ANY                                                               \
	"WHERE start_time >= $1::timestamptz AND start_time < "                \
	"$2::timestamptz AND source = $4::text "
#define WALK_SVC WALK_ANY "AND service_name = $5::text "
#define WALK_IDS(where)                                                        \
	"WITH RECURSIVE w (trace_id, start_time, seen) AS ("                   \
	"(SELECT trace_id, start_time, ARRAY[trace_id] FROM spans " where      \
	"ORDER BY start_time DESC, trace_id LIMIT 1) "                         \
	"UNION ALL "                                                           \
	"(SELECT n.trace_id, n.start_time, w.seen || n.trace_id FROM w "       \
	"CROSS JOIN LATERAL (SELECT trace_id, start_time FROM spans " where    \
	"AND start_time <= w.start_time AND trace_id <> ALL (w.seen) "         \
	"ORDER BY start_time DESC, trace_id LIMIT 1) n "                       \
	"WHERE cardinality(w.seen) <= $3::int)), "                             \
	"t AS (SELECT trace_id, start_time, count(*) OVER () > $3::int "       \
	"AS more FROM w ORDER BY start_time DESC, trace_id LIMIT $3::int) "
#define WALK_KEY "(extract(epoch FROM start_time) * 1000000)::bigint"

#define WALK_SQL(where)                                                        \
	WALK_IDS(where)                                                        \
	"SELECT encode(trace_id, 'hex'), " WALK_KEY ", more "                  \
	"FROM t ORDER BY start_time DESC, trace_id"

static const struct pg_stmt walk_any = {"spanquery_walk_any",
					WALK_SQL(WALK_ANY), 4, true};
static const struct pg_stmt walk_svc = {"spanquery_walk_svc",
					WALK_SQL(WALK_SVC), 5, true};

/*
 * The walk and this source's spans of the traces it found, in one
 * statement: one round trip instead of two.  The id rows come first, with
 * no span id: trace id, the latest matching span start (the key), more (1
 * or 0, in the start_nanos column); then the span rows as spans_stmt gives
 * them, at most SPANQUERY_MAX_SPANS + 1.  The ids reach the span fetch as
 * one array (an InitPlan), so each partition is one scan of its primary
 * key, as with spans_stmt's parameter.  Unlike spans_stmt it leaves the
 * order to the client (spans_of sorts them, as ORDER BY would: the sort
 * took 0.14 of 0.73 ms for 210 spans); when it is cut at the limit, which
 * spans it kept is unspecified (the caller fetches them again in order).
 *
 * Results come in binary (span_row): ids as their 16 and 8 bytes, times
 * as microseconds.  In text, hex-encoding the ids and turning the start
 * into Unix nanoseconds (numeric arithmetic) took 0.3 of 0.9 ms for 342
 * spans (EXPLAIN ANALYZE, bench/RESULTS.md), and parsing them back was a
 * third of the gateway's own time reading the rows.
 */
/* SPAN_COLS' columns; the every-source statement adds the source */
#define SPAN_NCOLS 19
#define SPAN_COLS                                                              \
	"trace_id, span_id, parent_span_id, start_time, start_nanos, "         \
	"duration_ns, kind, " SPAN_STATUS ", service_name, name, "             \
	"status_message, " SPAN_LINK ", " SPAN_DETAIL
/* The id rows of the recent_* statements: NULL for every column from the
 * span id on but the key (start_time) and more (start_nanos). */
#define ID_ROW                                                                 \
	"trace_id, NULL, NULL, start_time, more::int::smallint, NULL, NULL, "  \
	"NULL, NULL, NULL, NULL, NULL::bytea, NULL::int, NULL::int, "          \
	"NULL::text, NULL::text, NULL::text, NULL::text, NULL::text"
/*
 * The status the trees show: ERROR (2) also for a span that failed by
 * sextant_span_outcome without that status (an HTTP 5xx, a client's 4xx,
 * a failed gRPC call), so that error chains and counts follow the one
 * rule; a server's client error (a 404 it answered) is not a failure.
 */
#define SPAN_STATUS SPANQUERY_STATUS_SQL
/*
 * The span id of the span's first link into its own trace (the one merge
 * can place it under), NULL when it has none: links is NULL for most
 * spans, and the CASE keeps the path query off them.  The receiver writes
 * ids as lower-case hex (lib/otlp links_json), as encode gives them.
 */
#define SPAN_LINK                                                              \
	"CASE WHEN links IS NOT NULL THEN decode(jsonb_path_query_first("      \
	"links, '$[*] ? (@.trace_id == $t).span_id', jsonb_build_object('t', " \
	"encode(trace_id, 'hex'))) #>> '{}', 'hex') END"
/*
 * What explains a failed or slow span (spanquery_detail), read with the
 * span: an answer shows it for the spans it picks after merging, and a
 * second statement for them cost a round trip and a probe per span, more
 * than these columns (bench/RESULTS.md).  The peer only on spans that
 * call out (on a server span server.address is its own), the exception
 * only where there are events; each value cut as spanquery_details cuts
 * it.
 */
#define DETAIL_PEER                                                            \
	"left(coalesce(attributes->>'peer.service', "                          \
	"attributes->>'server.address' || coalesce(':' || "                    \
	"(attributes->>'server.port'), '')), 160)"
#define DETAIL_EXCEPTION(key)                                                  \
	"jsonb_path_query_first(events, '$[*] ? (@.name == \"exception\")"     \
	".attributes.\"exception." key "\"') #>> '{}'"
#define SPAN_DETAIL                                                            \
	"http_status_code, rpc_grpc_status_code, left(db_system, 160), "       \
	"left(db_table, 160), CASE WHEN kind NOT IN (2, 5) THEN " DETAIL_PEER  \
	" END, CASE WHEN events IS NOT NULL THEN left(" DETAIL_EXCEPTION(      \
		"type") ", 160) END, CASE WHEN events IS NOT NULL THEN "       \
			"left(" DETAIL_EXCEPTION("message") ", 320) END"
#define SPAN_ORDER " ORDER BY trace_id, start_time LIMIT 50001"
#define RECENT_SQL(where)                                                      \
	WALK_IDS(where)                                                        \
	"SELECT " ID_ROW " FROM t UNION ALL (SELECT " SPAN_COLS                \
	" FROM spans WHERE trace_id = ANY (ARRAY(SELECT "                      \
	"trace_id FROM t)) AND source = $4::text LIMIT 50001)"

static const struct pg_stmt recent_any = {"spanquery_recent_any",
					  RECENT_SQL(WALK_ANY), 4, true, true};
static const struct pg_stmt recent_svc = {"spanquery_recent_svc",
					  RECENT_SQL(WALK_SVC), 5, true, true};

/*
 * Every source at once, for one service: the walk over (service_name,
 * start_time), and every span of the traces it found with its source as a
 * thirteenth column: the work of the per-source statements done once, in one
 * round trip (bench/RESULTS.md).  No source filter: the table holds the
 * span sources only (CHECK), and "source = ANY" could lead the planner to
 * the (service_name, source, start_time) index, out of start order.  Any
 * service keeps to the per-source statements, whose walks have
 * (source, start_time) to follow; nothing orders all sources by time.
 * $1 from, $2 to, $3 max_traces, $4 service.
 */
#define WALK_ALL_SVC                                                           \
	"WHERE start_time >= $1::timestamptz AND start_time < "                \
	"$2::timestamptz AND service_name = $4::text "
#define RECENT_ALL_SQL(where)                                                  \
	WALK_IDS(where)                                                        \
	"SELECT " ID_ROW ", NULL FROM t UNION ALL "                            \
	"(SELECT " SPAN_COLS ", source FROM spans WHERE trace_id = ANY "       \
	"(ARRAY(SELECT trace_id FROM t)) LIMIT 50001)"
static const struct pg_stmt recent_all = {
	"spanquery_recent_all", RECENT_ALL_SQL(WALK_ALL_SVC), 4, true, true};
/* failed_only: the walk meets the service's failed spans only */
static const struct pg_stmt recent_all_failed = {
	"spanquery_recent_all_failed",
	RECENT_ALL_SQL(WALK_ALL_SVC "AND " SPAN_STATUS " = 2 "), 4, true, true};

#define TRACE_WHERE                                                            \
	"WHERE start_time >= $1::timestamptz AND start_time < "                \
	"$2::timestamptz "                                                     \
	"AND ($3::text IS NULL OR service_name = $3) "                         \
	"AND ($4::bigint IS NULL OR duration_ns >= $4) AND source = $6 "

/* $1 from, $2 to, $3 service, $4 min duration (ns), $5 max_traces,
 * $6 source; the third column: more traces than $5, or maybe */
#define GROUP_MORE                                                             \
	"count(*) OVER () > $5::int OR sum(count(*)) OVER () >= " SCAN_SPANS

static const char trace_ids_recent_sql[] =
	"SELECT encode(trace_id, 'hex'), "
	"(extract(epoch FROM max(start_time)) * 1000000)::bigint, " GROUP_MORE
	" FROM (SELECT trace_id, start_time FROM spans " TRACE_WHERE
	"ORDER BY start_time DESC LIMIT " SCAN_SPANS ") s "
	"GROUP BY trace_id ORDER BY 2 DESC, 1 LIMIT $5::int";

static const char trace_ids_slowest_sql[] =
	"SELECT encode(trace_id, 'hex'), max(duration_ns), " GROUP_MORE
	" FROM (SELECT trace_id, duration_ns FROM spans " TRACE_WHERE
	"ORDER BY duration_ns DESC LIMIT " SCAN_SPANS ") s "
	"GROUP BY trace_id ORDER BY 2 DESC, 1 LIMIT $5::int";

bool
spanquery_trace_walks(const struct spanquery_trace_filter *f)
{
	return !f->slowest && f->min_duration_ns < 0;
}

static int
trace_filter_error(struct pg_error *err, const char *msg)
{
	snprintf(err->client, sizeof(err->client), "%s", msg);
	err->detail[0] = err->sqlstate[0] = '\0';
	return STATUS_INVALID;
}

static int
check_trace_filter(const struct spanquery_trace_filter *f, struct pg_error *err)
{
	char msg[64];

	if (f->max_traces >= 1 && f->max_traces <= SPANQUERY_MAX_TRACES &&
	    f->from_ms < f->to_ms)
		return STATUS_OK;
	snprintf(msg, sizeof(msg),
		 "max_traces must be 1..%d and the range non-empty",
		 SPANQUERY_MAX_TRACES);
	return trace_filter_error(err, msg);
}

int
spanquery_trace_ids_send(struct pg_conn *c, const char *source,
			 const struct spanquery_trace_filter *f,
			 struct pg_error *err)
{
	char from[48], to[48], mind[24], lim[16];
	const char *v[6];

	if (check_trace_filter(f, err) != STATUS_OK)
		return STATUS_INVALID;
	if (f->failed_only)
		return trace_filter_error(err, "failed traces only are read "
					       "from every source at once");
	pg_ts_text(f->from_ms, from, sizeof(from));
	pg_ts_text(f->to_ms, to, sizeof(to));
	snprintf(mind, sizeof(mind), "%" PRId64, f->min_duration_ns);
	snprintf(lim, sizeof(lim), "%zu", f->max_traces);
	v[0] = from;
	v[1] = to;
	if (spanquery_trace_walks(f)) {
		v[2] = lim;
		v[3] = source;
		v[4] = f->service;
		return pg_send_prepared(c, f->service ? &walk_svc : &walk_any,
					v, err);
	}
	v[2] = f->service;
	v[3] = mind;
	v[4] = lim;
	v[5] = source;
	return pg_send(
		c, f->slowest ? trace_ids_slowest_sql : trace_ids_recent_sql, 6,
		v, err);
}

int
spanquery_trace_ids_recv(struct pg_conn *c, size_t cap, uint8_t (*ids)[16],
			 int64_t *keys, size_t *n, bool *more,
			 struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	*n = 0;
	*more = false;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	for (int i = 0; i < PQntuples(res); i++) {
		const char *m = PQgetvalue(res, i, 2);

		if (strcmp(m, "t") != 0 && strcmp(m, "f") != 0) {
			rc = pg_bad_row(err, "trace id");
			break;
		}
		if (m[0] == 't' || *n == cap)
			*more = true;
		if (*n == cap)
			continue;
		if (hex_decode(PQgetvalue(res, i, 0), ids[*n], 16) !=
			    STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 1), &keys[*n]) !=
			    STATUS_OK) {
			rc = pg_bad_row(err, "trace id");
			break;
		}
		(*n)++;
	}
	PQclear(res);
	if (rc != STATUS_OK) {
		*n = 0;
		*more = false;
	}
	return rc;
}

static const struct pg_stmt spans_stmt = {
	"spanquery_spans",
	"SELECT " SPAN_COLS " FROM spans WHERE trace_id = ANY ($1::bytea[]) "
	"AND source = $2::text" SPAN_ORDER,
	2, true, true};

int
spanquery_spans_send(struct pg_conn *c, const char *source,
		     const uint8_t (*ids)[16], size_t n, struct pg_error *err)
{
	/* {"\\x<32 hex>",...}: 39 bytes per id */
	char arr[2 + SPANQUERY_MAX_TRACES * 40 + 1];
	const char *v[2];
	size_t len = 0;

	if (n > SPANQUERY_MAX_TRACES) {
		snprintf(err->client, sizeof(err->client),
			 "too many traces asked at once");
		err->detail[0] = err->sqlstate[0] = '\0';
		return STATUS_INVALID;
	}
	arr[len++] = '{';
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			arr[len++] = ',';
		memcpy(arr + len, "\"\\\\x", 4);
		hex_encode(ids[i], 16, arr + len + 4);
		len += 4 + 32;
		arr[len++] = '"';
	}
	arr[len++] = '}';
	arr[len] = '\0';
	v[0] = arr;
	v[1] = source;
	return pg_send_prepared(c, &spans_stmt, v, err);
}

struct spans_priv {
	PGresult *res;
};

/* PostgreSQL's epoch (2000-01-01) in Unix microseconds */
#define PG_EPOCH_US 946684800000000LL

/* Binary result values: column col of row i, exactly len bytes (a
 * fixed-size type, or a trace / span id), in *out; false when NULL or of
 * another length. */
static bool
bin_value(const PGresult *res, int i, int col, int len, const char **out)
{
	if (PQgetisnull(res, i, col) || PQgetlength(res, i, col) != len)
		return false;
	*out = PQgetvalue(res, i, col);
	return true;
}

static int64_t
bin_i64(const char *p)
{
	uint64_t v = 0;

	for (int k = 0; k < 8; k++)
		v = v << 8 | (uint8_t)p[k];
	return (int64_t)v;
}

static int
bin_i16(const char *p)
{
	return (int16_t)(uint16_t)((uint8_t)p[0] << 8 | (uint8_t)p[1]);
}

/* Unix microseconds of a binary timestamptz; false out of range. */
static bool
bin_unix_us(const PGresult *res, int i, int col, int64_t *us)
{
	const char *p;
	int64_t v;

	if (!bin_value(res, i, col, 8, &p))
		return false;
	v = bin_i64(p);
	if (v < -PG_EPOCH_US || v > INT64_MAX / 1000 - PG_EPOCH_US - 1000)
		return false; /* before 1970, or -infinity / infinity */
	*us = v + PG_EPOCH_US;
	return true;
}

/* A binary int4 that may be NULL (-1 then); false when of another size. */
static bool
bin_opt_i32(const PGresult *res, int i, int col, int *out)
{
	const char *p;

	*out = -1;
	if (PQgetisnull(res, i, col))
		return true;
	if (!bin_value(res, i, col, 4, &p))
		return false;
	*out = (int32_t)((uint32_t)(uint8_t)p[0] << 24 |
			 (uint32_t)(uint8_t)p[1] << 16 |
			 (uint32_t)(uint8_t)p[2] << 8 | (uint8_t)p[3]);
	return true;
}

/* A value that may be NULL. */
static const char *
opt_value(const PGresult *res, int i, int col)
{
	return PQgetisnull(res, i, col) ? NULL : PQgetvalue(res, i, col);
}

/* One span row (SPAN_COLS, binary) of res; STATUS_IO (err filled) when a
 * value is not what the columns hold. */
static int
span_row(const PGresult *res, int i, struct spanquery_span *sp,
	 struct pg_error *err)
{
	const char *tid, *sid, *pid, *nanos, *dur, *kind, *status;
	int64_t us, d;
	int ns;

	if (!bin_value(res, i, 0, 16, &tid) || !bin_value(res, i, 1, 8, &sid) ||
	    !bin_unix_us(res, i, 3, &us) || !bin_value(res, i, 4, 2, &nanos) ||
	    !bin_value(res, i, 5, 8, &dur) || !bin_value(res, i, 6, 2, &kind) ||
	    !bin_value(res, i, 7, 2, &status) || PQgetisnull(res, i, 8) ||
	    PQgetisnull(res, i, 9))
		return pg_bad_row(err, "span row");
	d = bin_i64(dur);
	ns = bin_i16(nanos);
	/* as sextant_unix_nano computes it; never before 1970 */
	if (d < 0 || (int64_t)us * 1000 + ns < 0)
		return pg_bad_row(err, "span row");
	if (!PQgetisnull(res, i, 2)) {
		if (!bin_value(res, i, 2, 8, &pid))
			return pg_bad_row(err, "span row");
		memcpy(sp->parent_span_id, pid, 8);
		sp->has_parent = true;
	}
	memcpy(sp->trace_id, tid, 16);
	memcpy(sp->span_id, sid, 8);
	sp->start_ns = (uint64_t)(us * 1000 + ns);
	sp->duration_ns = (uint64_t)d;
	sp->kind = bin_i16(kind);
	sp->status = bin_i16(status);
	sp->service = PQgetvalue(res, i, 8);
	sp->name = PQgetvalue(res, i, 9);
	sp->status_message =
		PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10);
	/* a link id of another length (an empty one) places nothing */
	sp->has_link = bin_value(res, i, 11, 8, &pid);
	if (sp->has_link)
		memcpy(sp->link_span_id, pid, 8);
	if (!bin_opt_i32(res, i, 12, &sp->detail.http_status) ||
	    !bin_opt_i32(res, i, 13, &sp->detail.grpc_code))
		return pg_bad_row(err, "span row");
	sp->detail.found = true;
	sp->detail.db_system = opt_value(res, i, 14);
	sp->detail.db_table = opt_value(res, i, 15);
	sp->detail.peer = opt_value(res, i, 16);
	sp->detail.exception_type = opt_value(res, i, 17);
	sp->detail.exception_message = opt_value(res, i, 18);
	sp->detail.attributes = NULL;
	sp->source = NULL;
	if (PQnfields(res) > SPAN_NCOLS) {
		if (PQgetisnull(res, i, SPAN_NCOLS))
			return pg_bad_row(err, "span row");
		sp->source = PQgetvalue(res, i, SPAN_NCOLS);
	}
	return STATUS_OK;
}

/* spans_stmt's order: trace id, then start */
static int
by_trace_start(const void *a, const void *b)
{
	const struct spanquery_span *x = a, *y = b;
	int c = memcmp(x->trace_id, y->trace_id, 16);

	if (c != 0)
		return c;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/*
 * The span rows of res (those with a span id: a recent_* result also
 * holds id rows), at most SPANQUERY_MAX_SPANS, in result order or, with
 * sort, by trace id and start.  Takes ownership of res (freed on
 * failure).
 */
static int
spans_of(PGresult *res, bool sort, struct spanquery_spans **out,
	 struct pg_error *err)
{
	struct spanquery_spans *s = NULL;
	struct spans_priv *priv = NULL;
	int rc = STATUS_OK, rows = PQntuples(res);
	size_t n = 0;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	priv = calloc(1, sizeof(*priv));
	if (s == NULL || priv == NULL ||
	    (s->spans = calloc((size_t)rows + 1, sizeof(*s->spans))) == NULL) {
		snprintf(err->client, sizeof(err->client), "out of memory");
		err->detail[0] = err->sqlstate[0] = '\0';
		rc = STATUS_NOMEM;
		goto fail;
	}
	for (int i = 0; i < rows; i++) {
		if (PQgetisnull(res, i, 1))
			continue;
		if (n == SPANQUERY_MAX_SPANS) {
			s->truncated = true;
			break;
		}
		if ((rc = span_row(res, i, &s->spans[n], err)) != STATUS_OK)
			goto fail;
		n++;
	}
	s->n = n;
	if (sort)
		qsort(s->spans, n, sizeof(*s->spans), by_trace_start);
	priv->res = res;
	s->priv_ = priv;
	*out = s;
	return STATUS_OK;
fail:
	if (s != NULL)
		free(s->spans);
	free(s);
	free(priv);
	PQclear(res);
	return rc;
}

int
spanquery_spans_recv(struct pg_conn *c, struct spanquery_spans **out,
		     struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	return spans_of(res, false, out, err);
}

void
spanquery_spans_free(struct spanquery_spans *s)
{
	struct spans_priv *priv;

	if (s == NULL)
		return;
	priv = s->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(s->spans);
	free(s);
}

int
spanquery_recent_send(struct pg_conn *c, const char *source,
		      const struct spanquery_trace_filter *f,
		      struct pg_error *err)
{
	char from[48], to[48], lim[16];
	const char *v[5];

	if (!spanquery_trace_walks(f))
		return trace_filter_error(err, "the combined statement is for "
					       "the most recent traces, with "
					       "no min_duration");
	if (check_trace_filter(f, err) != STATUS_OK)
		return STATUS_INVALID;
	pg_ts_text(f->from_ms, from, sizeof(from));
	pg_ts_text(f->to_ms, to, sizeof(to));
	snprintf(lim, sizeof(lim), "%zu", f->max_traces);
	v[0] = from;
	v[1] = to;
	v[2] = lim;
	if (source == NULL) {
		if (f->service == NULL)
			return trace_filter_error(err, "every source at once "
						       "is for one service");
		v[3] = f->service;
		return pg_send_prepared_within(
			c, f->failed_only ? &recent_all_failed : &recent_all, v,
			f->timeout_ms, err);
	}
	if (f->failed_only)
		return trace_filter_error(err, "failed traces only are read "
					       "from every source at once");
	v[3] = source;
	v[4] = f->service;
	return pg_send_prepared_within(c,
				       f->service ? &recent_svc : &recent_any,
				       v, f->timeout_ms, err);
}

int
spanquery_recent_recv(struct pg_conn *c, size_t cap, uint8_t (*ids)[16],
		      int64_t *keys, size_t *n, bool *more,
		      struct spanquery_spans **out, struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	*n = 0;
	*more = false;
	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	for (int i = 0; i < PQntuples(res); i++) {
		const char *tid, *m;
		int64_t us;

		if (!PQgetisnull(res, i, 1))
			continue;
		if (!bin_value(res, i, 0, 16, &tid) ||
		    !bin_unix_us(res, i, 3, &us) ||
		    !bin_value(res, i, 4, 2, &m) || bin_i16(m) < 0 ||
		    bin_i16(m) > 1) {
			rc = pg_bad_row(err, "trace id");
			break;
		}
		if (bin_i16(m) == 1 || *n == cap)
			*more = true;
		if (*n == cap)
			continue;
		memcpy(ids[*n], tid, 16);
		keys[*n] = us;
		(*n)++;
	}
	if (rc == STATUS_OK)
		rc = spans_of(res, true, out, err);
	else
		PQclear(res);
	if (rc != STATUS_OK) {
		*n = 0;
		*more = false;
	}
	return rc;
}

/* ---- the details of a few spans ---------------------------------------- */

/*
 * $1 trace ids, $2 span ids (hex), $3 sources, $4 whether to read the
 * attributes: one probe of the primary key per span (LATERAL), so the
 * cost is that of the few spans asked, whatever the traces hold.
 */
/* clang-format off */
static const struct pg_stmt details_stmt = {
	"spanquery_details",
	"SELECT k.i, p.h, p.g, p.ds, p.dt, p.peer, p.et, p.em, CASE WHEN k.a "
	"THEN (SELECT coalesce(jsonb_object_agg(key, "
	SPANQUERY_CUT_JSON_SQL("value", "160") "), '{}') FROM "
	SPANQUERY_FIRST_MEMBERS_SQL("p.attributes", "40") " a)::text END "
	"FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) WITH "
	"ORDINALITY AS k(t, s, src, a, i) CROSS JOIN LATERAL "
	"(SELECT " SPAN_DETAIL
	", attributes FROM spans WHERE trace_id = decode(k.t, 'hex') AND "
	"span_id = decode(k.s, 'hex') AND source = k.src LIMIT 1) "
	"p(h, g, ds, dt, peer, et, em, attributes)",
	4, false, false};
/* clang-format on */

/* A text[] (or bool[]) literal of n items, each at most 32 characters
 * that need no quoting; b is big enough for SPANQUERY_MAX_DETAILS. */
static void
text_array(char *b, size_t cap, size_t n,
	   const char *(*item)(size_t, void *, char *), void *arg)
{
	size_t len = 0;
	char one[40];

	b[len++] = '{';
	for (size_t i = 0; i < n && len + 40 < cap; i++) {
		const char *v = item(i, arg, one);
		size_t l = strlen(v);

		if (i > 0)
			b[len++] = ',';
		memcpy(b + len, v, l);
		len += l;
	}
	b[len++] = '}';
	b[len] = '\0';
}

static const char *
key_trace(size_t i, void *arg, char *one)
{
	hex_encode(((const struct spanquery_detail_key *)arg)[i].trace_id, 16,
		   one);
	return one;
}

static const char *
key_span(size_t i, void *arg, char *one)
{
	hex_encode(((const struct spanquery_detail_key *)arg)[i].span_id, 8,
		   one);
	return one;
}

static const char *
key_source(size_t i, void *arg, char *one)
{
	const char *s = ((const struct spanquery_detail_key *)arg)[i].source;

	(void)one;
	return strcmp(s, "ebpf") == 0 ? "ebpf" : "otlp";
}

static const char *
key_attrs(size_t i, void *arg, char *one)
{
	(void)one;
	return ((const struct spanquery_detail_key *)arg)[i].with_attributes
		       ? "t"
		       : "f";
}

int
spanquery_details_send(struct pg_conn *c,
		       const struct spanquery_detail_key *keys, size_t n,
		       struct pg_error *err)
{
	/* 33 bytes per trace id, the longest item */
	static const size_t cap = SPANQUERY_MAX_DETAILS * 34 + 3;
	char t[SPANQUERY_MAX_DETAILS * 34 + 3],
		s[SPANQUERY_MAX_DETAILS * 34 + 3],
		src[SPANQUERY_MAX_DETAILS * 34 + 3],
		a[SPANQUERY_MAX_DETAILS * 34 + 3];
	const char *v[4] = {t, s, src, a};
	void *arg = (void *)keys;

	if (n > SPANQUERY_MAX_DETAILS)
		return trace_filter_error(err, "too many spans asked at once");
	text_array(t, cap, n, key_trace, arg);
	text_array(s, cap, n, key_span, arg);
	text_array(src, cap, n, key_source, arg);
	text_array(a, cap, n, key_attrs, arg);
	return pg_send_prepared(c, &details_stmt, v, err);
}

struct details_priv {
	PGresult *res;
};

/* An int column, -1 when NULL; false when it is not an int. */
static bool
opt_int(const PGresult *res, int i, int col, int *out)
{
	int64_t v;

	*out = -1;
	if (PQgetisnull(res, i, col))
		return true;
	if (pg_text_i64(PQgetvalue(res, i, col), &v) != STATUS_OK ||
	    v < INT_MIN || v > INT_MAX)
		return false;
	*out = (int)v;
	return true;
}

int
spanquery_details_recv(struct pg_conn *c, size_t n,
		       struct spanquery_details **out, struct pg_error *err)
{
	struct spanquery_details *d = NULL;
	struct details_priv *priv = NULL;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	d = calloc(1, sizeof(*d));
	priv = calloc(1, sizeof(*priv));
	if (d == NULL || priv == NULL ||
	    (d->v = calloc(n + 1, sizeof(*d->v))) == NULL) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		struct spanquery_detail *x;
		int64_t k;

		if (pg_text_i64(PQgetvalue(res, i, 0), &k) != STATUS_OK ||
		    k < 1 || (uint64_t)k > n) {
			rc = pg_bad_row(err, "span details");
			goto fail;
		}
		x = &d->v[k - 1];
		if (!opt_int(res, i, 1, &x->http_status) ||
		    !opt_int(res, i, 2, &x->grpc_code)) {
			rc = pg_bad_row(err, "span details");
			goto fail;
		}
		x->found = true;
		x->db_system = opt_value(res, i, 3);
		x->db_table = opt_value(res, i, 4);
		x->peer = opt_value(res, i, 5);
		x->exception_type = opt_value(res, i, 6);
		x->exception_message = opt_value(res, i, 7);
		x->attributes = opt_value(res, i, 8);
	}
	for (size_t i = 0; i < n; i++)
		if (!d->v[i].found)
			d->v[i].http_status = d->v[i].grpc_code = -1;
	d->n = n;
	priv->res = res;
	d->priv_ = priv;
	*out = d;
	return STATUS_OK;
fail:
	if (rc == STATUS_NOMEM) {
		snprintf(err->client, sizeof(err->client), "out of memory");
		err->detail[0] = err->sqlstate[0] = '\0';
	}
	if (d != NULL)
		free(d->v);
	free(d);
	free(priv);
	PQclear(res);
	return rc;
}

void
spanquery_details_free(struct spanquery_details *d)
{
	struct details_priv *priv;

	if (d == NULL)
		return;
	priv = d->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(d->v);
	free(d);
}

/* ---- services ----------------------------------------------------------- */

/* A loose index scan over (service_name, start_time): one index probe
 * per distinct name instead of reading every span. */
static const char services_sql[] =
	"WITH RECURSIVE s(n) AS (SELECT min(service_name) FROM spans "
	"UNION ALL SELECT (SELECT min(service_name) FROM spans "
	"WHERE service_name > s.n) FROM s WHERE s.n IS NOT NULL) "
	"SELECT n FROM s WHERE n IS NOT NULL LIMIT 10000";

struct names_priv {
	PGresult *res;
};

/* $1 / $2 the lowest and highest id with the prefix (hex): the first id
 * in that range and the next, each one probe of the primary key per
 * partition (a merge of their first rows) */
#define PREFIX_LO "trace_id >= decode($1::text, 'hex')"
#define PREFIX_HI "trace_id <= decode($2::text, 'hex')"
static const char trace_prefix_sql[] =
	"SELECT encode(a, 'hex'), encode((SELECT trace_id FROM spans WHERE "
	"trace_id > a AND " PREFIX_HI " ORDER BY trace_id LIMIT 1), 'hex') "
	"FROM (SELECT (SELECT trace_id FROM spans WHERE " PREFIX_LO
	" AND " PREFIX_HI " ORDER BY trace_id LIMIT 1) AS a) x";

bool
spanquery_is_trace_prefix(const char *s)
{
	size_t len = s != NULL ? strlen(s) : 0;

	return len >= SPANQUERY_PREFIX_MIN && len < 32 &&
	       strspn(s, "0123456789abcdefABCDEF") == len;
}

int
spanquery_trace_prefix(struct pg_conn *c, const char *hex, uint8_t (*ids)[16],
		       size_t *n, struct pg_error *err)
{
	char lo[33], hi[33];
	const char *v[2] = {lo, hi};
	size_t len = hex != NULL ? strlen(hex) : 0;
	PGresult *res = NULL;
	int rc;

	*n = 0;
	if (!spanquery_is_trace_prefix(hex))
		return trace_filter_error(
			err, "a trace id prefix is 8 to 31 hex digits");
	for (size_t i = 0; i < 32; i++) {
		lo[i] = i < len ? (char)tolower((unsigned char)hex[i]) : '0';
		hi[i] = i < len ? lo[i] : 'f';
	}
	lo[32] = hi[32] = '\0';
	if ((rc = pg_query(c, trace_prefix_sql, 2, v, &res, err)) != STATUS_OK)
		return rc;
	for (int col = 0; PQntuples(res) == 1 && col < 2; col++) {
		if (PQgetisnull(res, 0, col))
			break;
		if (hex_decode(PQgetvalue(res, 0, col), ids[*n], 16) !=
		    STATUS_OK) {
			rc = pg_bad_row(err, "trace id");
			break;
		}
		(*n)++;
	}
	PQclear(res);
	return rc;
}

int
spanquery_services(struct pg_conn *c, struct spanquery_names **out,
		   struct pg_error *err)
{
	struct spanquery_names *nm = NULL;
	struct names_priv *priv = NULL;
	PGresult *res = NULL;
	int rc, n;

	*out = NULL;
	if ((rc = pg_query(c, services_sql, 0, NULL, &res, err)) != STATUS_OK)
		return rc;
	n = PQntuples(res);
	nm = calloc(1, sizeof(*nm));
	priv = calloc(1, sizeof(*priv));
	if (nm == NULL || priv == NULL ||
	    (nm->names = calloc((size_t)n + 1, sizeof(*nm->names))) == NULL) {
		if (nm != NULL)
			free(nm->names);
		free(nm);
		free(priv);
		PQclear(res);
		snprintf(err->client, sizeof(err->client), "out of memory");
		err->detail[0] = err->sqlstate[0] = '\0';
		return STATUS_NOMEM;
	}
	for (int i = 0; i < n; i++)
		nm->names[i] = PQgetvalue(res, i, 0);
	nm->n = (size_t)n;
	priv->res = res;
	nm->priv_ = priv;
	*out = nm;
	return STATUS_OK;
}

void
spanquery_names_free(struct spanquery_names *nm)
{
	struct names_priv *priv;

	if (nm == NULL)
		return;
	priv = nm->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(nm->names);
	free(nm);
}

/* names longer than this are compared on their first SUGGEST_LEN bytes */
#define SUGGEST_LEN 128

/* Case-insensitive Levenshtein distance over at most SUGGEST_LEN bytes. */
static size_t
distance(const char *a, const char *b)
{
	return strdist(a, strnlen(a, SUGGEST_LEN), b, strnlen(b, SUGGEST_LEN),
		       true, SIZE_MAX);
}

static bool
contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	/* "a" is in most names: containment counts from 3 bytes on */
	if (n < 3)
		return false;
	for (; *hay != '\0'; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

static size_t
common_prefix_ci(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] != '\0' &&
	       tolower((unsigned char)a[i]) == tolower((unsigned char)b[i]))
		i++;
	return i;
}

size_t
spanquery_suggest(const char *name, const char *const *names, size_t n,
		  const char **out, size_t max)
{
	/* score: lower is closer; a candidate is kept when its distance is
	 * at most a third of the longer name (at least 1), or one name
	 * contains the other, or they share a 4-byte prefix */
	double scores[8];
	size_t got = 0, len = strnlen(name, SUGGEST_LEN);
	char expanded[SUGGEST_LEN + 8] = "";

	if (max > 8)
		max = 8;
	if (len >= 3 && len + 4 < SUGGEST_LEN &&
	    (strcasecmp(name + len - 3, "svc") == 0 ||
	     strcasecmp(name + len - 3, "srv") == 0))
		snprintf(expanded, sizeof(expanded), "%.*sservice",
			 (int)(len - 3), name);
	for (size_t i = 0; i < n && max > 0; i++) {
		size_t ln = strnlen(names[i], SUGGEST_LEN);
		size_t d = distance(name, names[i]);

		/* "svc" / "srv" are how people abbreviate "service" */
		if (expanded[0] != '\0') {
			size_t e = distance(expanded, names[i]);

			if (e < d)
				d = e;
		}
		size_t longer = len > ln ? len : ln;
		size_t prefix = common_prefix_ci(name, names[i]);
		bool contains = contains_ci(names[i], name) ||
				contains_ci(name, names[i]);
		size_t limit = longer / 3 > 1 ? longer / 3 : 1;
		double score;
		size_t k;

		if (d == 0 && strcmp(name, names[i]) == 0)
			continue;
		if (d > limit && !contains && prefix < 4)
			continue;
		score = (double)d - (contains ? 1.5 : 0) -
			(prefix >= 4 ? 0.5 + (double)prefix / 100 : 0);
		for (k = got; k > 0 && scores[k - 1] > score; k--)
			;
		if (k >= max)
			continue;
		if (got < max)
			got++;
		memmove(&scores[k + 1], &scores[k],
			(got - 1 - k) * sizeof(scores[0]));
		memmove(&out[k + 1], &out[k], (got - 1 - k) * sizeof(out[0]));
		scores[k] = score;
		out[k] = names[i];
	}
	return got;
}

/* ---- a service as people name it ---------------------------------------- */

#define RESOLVE_WORDS 8
#define RESOLVE_WORD  48

/* Whether a word ends before s, in camel case: "recommendationService",
 * "APIGateway" (an upper-case run ends before its last letter). */
static bool
camel_break(const char *s)
{
	unsigned char a = (unsigned char)s[-1], b = (unsigned char)s[0];

	if (!isupper(b))
		return false;
	return islower(a) || isdigit(a) ||
	       (isupper(a) && islower((unsigned char)s[1]));
}

/*
 * The lowercase alphanumeric words of s, split also at camel case
 * ("RecommendationService" -> recommendation, service), without a leading
 * "the" and, with drop, the trailing "service", "svc" or "api" (when a
 * word remains): "The API Gateway service" -> api, gateway.  The number
 * of words (at most RESOLVE_WORDS; longer words are cut).
 */
static size_t
name_words(const char *s, char w[RESOLVE_WORDS][RESOLVE_WORD], bool drop)
{
	size_t n = 0;

	while (*s != '\0' && n < RESOLVE_WORDS) {
		size_t len = 0;

		while (*s != '\0' && !isalnum((unsigned char)*s))
			s++;
		while (isalnum((unsigned char)*s)) {
			if (len + 1 < RESOLVE_WORD)
				w[n][len++] = (char)tolower((unsigned char)*s);
			s++;
			if (camel_break(s))
				break;
		}
		if (len == 0)
			break;
		w[n][len] = '\0';
		n++;
	}
	if (n > 1 && strcmp(w[0], "the") == 0) {
		memmove(w[0], w[1], (n - 1) * sizeof(w[0]));
		n--;
	}
	if (drop && n > 1 &&
	    (strcmp(w[n - 1], "service") == 0 || strcmp(w[n - 1], "svc") == 0 ||
	     strcmp(w[n - 1], "api") == 0))
		n--;
	return n;
}

static void
words_joined(char w[RESOLVE_WORDS][RESOLVE_WORD], size_t n, char *out,
	     size_t cap)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s", w[i]);
}

size_t
spanquery_resolve(const char *given, const char *const *names, size_t n)
{
	char gw[RESOLVE_WORDS][RESOLVE_WORD], nw[RESOLVE_WORDS][RESOLVE_WORD];
	char gj[RESOLVE_WORDS * RESOLVE_WORD], nj[RESOLVE_WORDS * RESOLVE_WORD];
	char gf[RESOLVE_WORDS * RESOLVE_WORD], nf[RESOLVE_WORDS * RESOLVE_WORD];
	size_t gn, hit = SPANQUERY_NO_NAME;

	words_joined(gw, name_words(given, gw, false), gf, sizeof(gf));
	gn = name_words(given, gw, true);
	if (gn == 0)
		return SPANQUERY_NO_NAME;
	words_joined(gw, gn, gj, sizeof(gj));
	/* the same words, however written: "API Gateway", "apigateway";
	 * with or without the trailing "service" on both sides
	 * ("recommendation service", "recommendationservice") */
	for (size_t i = 0; i < n; i++) {
		words_joined(nw, name_words(names[i], nw, false), nf,
			     sizeof(nf));
		words_joined(nw, name_words(names[i], nw, true), nj,
			     sizeof(nj));
		if (strcmp(gj, nj) != 0 && strcmp(gf, nf) != 0)
			continue;
		if (hit != SPANQUERY_NO_NAME)
			return SPANQUERY_NO_NAME; /* two: ambiguous */
		hit = i;
	}
	if (hit != SPANQUERY_NO_NAME)
		return hit;
	/* every word given is a word of one name only: "the gateway
	 * service" -> api-gateway; words of three letters or more */
	for (size_t i = 0; i < n; i++) {
		size_t nn = name_words(names[i], nw, true), k;

		for (k = 0; k < gn; k++) {
			size_t j = 0;

			if (strlen(gw[k]) < 3)
				break;
			while (j < nn && strcmp(gw[k], nw[j]) != 0)
				j++;
			if (j == nn)
				break;
		}
		if (k < gn)
			continue;
		if (hit != SPANQUERY_NO_NAME)
			return SPANQUERY_NO_NAME;
		hit = i;
	}
	return hit;
}

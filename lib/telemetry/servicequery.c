/*
 * servicequery.c - the service inventory (see servicequery.h): one
 * statement for who is there (names, sources, namespace, last seen) by
 * index probes, one for the requests (hourly and minute rollups plus raw
 * spans, or exact),
 * joined here by service name.  SQL text is static, values are bound.
 */
#include "telemetry/servicequery.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/timerange.h"
#include "telemetry/rollup.h"

#define HOUR_MS (3600LL * 1000)

/*
 * $1 from, $2 to, $3 namespace (NULL: any).  A loose index scan walks the
 * service names (all stored, in any range: one probe per name); for each
 * name and source the newest span in the range says whether the source
 * saw it, when, and its namespace.  Names in strcmp order (COLLATE "C"),
 * which the join with the requests relies on.
 */
static const char services_sql[] =
	"WITH RECURSIVE s(n) AS (SELECT min(service_name) FROM spans "
	"UNION ALL SELECT (SELECT min(service_name) FROM spans "
	"WHERE service_name > s.n) FROM s WHERE s.n IS NOT NULL), "
	"latest AS (SELECT s.n AS service, v.source, l.start_time, l.ns "
	"FROM s CROSS JOIN (VALUES ('ebpf'), ('otlp')) v(source) "
	"CROSS JOIN LATERAL (SELECT start_time, "
	"coalesce(nullif(service_namespace, ''), "
	"nullif(k8s_namespace_name, '')) AS ns FROM spans "
	"WHERE service_name = s.n AND source = v.source "
	"AND start_time >= $1::timestamptz AND start_time < $2::timestamptz "
	"ORDER BY start_time DESC LIMIT 1) l WHERE s.n IS NOT NULL), "
	"agg AS (SELECT service, "
	"array_to_string(array_agg(source ORDER BY source), ',') AS sources, "
	"(extract(epoch FROM max(start_time)) * 1000000)::bigint AS last_us, "
	"(array_agg(ns ORDER BY ns IS NULL, start_time DESC))[1] AS ns "
	"FROM latest GROUP BY service) "
	"SELECT service, sources, last_us, ns FROM agg "
	"WHERE $3::text IS NULL OR ns = $3::text "
	"ORDER BY service COLLATE \"C\" LIMIT 10001";

/*
 * Every raw scan over all services goes through the (source, start_time)
 * btree (rollup.h, ROLLUP_ALL_SOURCES): with the BRIN index unsummarized
 * after `sextant demo-data`, scanning its 1165 dirty minutes one by one
 * took list_services over 24 h past 30 s (bench/RESULTS.md, "First
 * minute after make run").
 */
#define ALL_SOURCES ROLLUP_ALL_SOURCES

/*
 * Requests of every service and source in [$1, $2), exactly.  A request
 * both sources saw is two rows, so a service's requests are those of the
 * source that saw the most (eBPF sees every call its probe covers, an SDK
 * may sample): adding the sources up would count requests twice.  On a
 * tie eBPF's rows are kept (they come first).
 */
#define CODE_TEXT                                                              \
	"status || ':' || span_error::int || ':' || outcome || ':' || n"
static const char requests_exact_sql[] =
	"WITH s AS (SELECT service_name, source, protocol, status, span_error, "
	"outcome, duration_ns FROM span_calls WHERE protocol IN ('http', "
	"'grpc') AND " ALL_SOURCES
	"AND start_time >= $1::timestamptz AND start_time < $2::timestamptz) "
	"SELECT p.service_name, p.n, p.e, p.ce, c.hc, c.gc, p.p95 FROM "
	"(SELECT service_name, source, count(*) AS n, count(*) FILTER (WHERE "
	"outcome = 1) AS e, count(*) FILTER (WHERE outcome = 2) AS ce, "
	"percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) AS p95 "
	"FROM s GROUP BY 1, 2) p LEFT JOIN (SELECT service_name, source, "
	"string_agg(" CODE_TEXT
	", ',') FILTER (WHERE protocol = 'http') AS hc, "
	"string_agg(" CODE_TEXT ", ',') FILTER (WHERE protocol = 'grpc') AS gc "
	"FROM (SELECT service_name, source, protocol, status, span_error, "
	"outcome, count(*) AS n FROM s WHERE outcome <> 0 GROUP BY 1, 2, 3, 4, "
	"5, 6) x GROUP BY 1, 2) c USING (service_name, source) "
	"ORDER BY 1, p.source";

/*
 * Each part of the range from the finest source that is up to date, as
 * in lib/telemetry/spanquery (docs/schema.md): hour rows for the clean hours in
 * [$3, $4); minute rows for the clean minutes in [$5, $6) outside those;
 * raw spans bucketed the same way for the head [$1, $5), the tail [$6, $2)
 * and the dirty minutes outside clean hours (one range scan per run of
 * them, dr below); as (service, source, protocol, status, span_error,
 * outcome, buckets, counts).  The rollups keep the status and span_error,
 * and sextant_call_outcome gives their outcome as the view does; the raw
 * parts drop the status of calls that went well (0), which nothing shows.
 */
#define RAW_STATUS "CASE WHEN outcome = 0 THEN 0 ELSE status END"
#define RAW_HIST                                                               \
	"SELECT service_name, source, protocol, " RAW_STATUS " AS status, "    \
	"span_error, outcome, sextant_duration_bucket(duration_ns) AS b, "     \
	"count(*) AS n FROM span_calls WHERE protocol IN ('http', 'grpc') "    \
	"AND " ALL_SOURCES

#define ROLLUP_OUTCOME "sextant_call_outcome(protocol, status, span_error)"

/*
 * Minute rows of [$5, $6) that no clean hour covers, each part an index
 * range (as in lib/telemetry/spanquery): beside the hours ([$5, $3) and [$4, $6)),
 * inside each dirty hour (LATERAL); not the dirty minutes.
 */
#define ROLLUP_COLS                                                            \
	"service_name, source, protocol, status, span_error, " ROLLUP_OUTCOME  \
	", buckets::text, counts::text"
#define MINUTE_COLS ROLLUP_COLS
#define MINUTE_ROWS                                                            \
	"SELECT " MINUTE_COLS " FROM span_rollup_minute WHERE protocol IN "    \
	"('http', 'grpc') AND period >= $5::timestamptz AND period < "         \
	"$3::timestamptz AND period NOT IN (SELECT period FROM dm) "           \
	"UNION ALL SELECT " MINUTE_COLS " FROM span_rollup_minute WHERE "      \
	"protocol IN ('http', 'grpc') AND period >= $4::timestamptz AND "      \
	"period < $6::timestamptz AND period NOT IN (SELECT period FROM dm) "  \
	"UNION ALL SELECT " MINUTE_COLS " FROM dh h CROSS JOIN LATERAL "       \
	"(SELECT r.* FROM span_rollup_minute r WHERE protocol IN ('http', "    \
	"'grpc') AND r.period >= h.period AND r.period < h.period + "          \
	"interval '1 hour' OFFSET 0) m WHERE m.period NOT IN (SELECT period "  \
	"FROM dm)"

/*
 * dr: the dirty minutes as runs of consecutive minutes [lo, hi), one range
 * scan each: a bulk load leaves every minute of the day dirty, and its
 * 1,400 minutes are then one run, read once, instead of 1,400 scans.
 */
static const char requests_rollup_sql[] =
	"WITH dh AS (SELECT DISTINCT period FROM span_rollup_dirty "
	"WHERE period >= $3::timestamptz AND period < $4::timestamptz), "
	"dm AS (SELECT DISTINCT period FROM span_rollup_minute_dirty "
	"WHERE period >= $5::timestamptz AND period < $6::timestamptz "
	"AND (period < $3::timestamptz OR period >= $4::timestamptz "
	"OR date_trunc('hour', period, 'UTC') IN (SELECT period FROM dh))), "
	"dr AS (SELECT min(period) AS lo, max(period) + interval '1 minute' "
	"AS hi FROM (SELECT period, period - make_interval(mins => "
	"(row_number() OVER (ORDER BY period))::integer) AS run FROM dm) x "
	"GROUP BY run), "
	"raw AS (" RAW_HIST
	"AND start_time >= $1::timestamptz AND start_time < $5::timestamptz "
	"GROUP BY 1, 2, 3, 4, 5, 6, 7 UNION ALL " RAW_HIST
	"AND start_time >= $6::timestamptz AND start_time < $2::timestamptz "
	"GROUP BY 1, 2, 3, 4, 5, 6, 7 UNION ALL "
	"SELECT service_name, source, protocol, status, span_error, outcome, "
	"b, count(*) AS n FROM dr d CROSS JOIN LATERAL (SELECT service_name, "
	"source, protocol, " RAW_STATUS " AS status, span_error, outcome, "
	"sextant_duration_bucket(duration_ns) AS b FROM span_calls "
	"WHERE protocol IN ('http', 'grpc') AND " ALL_SOURCES
	"AND start_time >= d.lo AND start_time < d.hi OFFSET 0) s "
	"GROUP BY 1, 2, 3, 4, 5, 6, 7) "
	"SELECT " ROLLUP_COLS " FROM span_rollup WHERE protocol IN ('http', "
	"'grpc') AND period >= $3::timestamptz AND period < $4::timestamptz "
	"AND period NOT IN (SELECT period FROM dh) "
	"UNION ALL " MINUTE_ROWS " "
	"UNION ALL SELECT service_name, source, protocol, status, span_error, "
	"outcome, array_agg(b ORDER BY b)::text, array_agg(n ORDER BY b)::text "
	"FROM (SELECT service_name, source, protocol, status, span_error, "
	"outcome, b, sum(n) AS n FROM raw GROUP BY 1, 2, 3, 4, 5, 6, 7) r "
	"GROUP BY 1, 2, 3, 4, 5, 6";

struct priv {
	PGresult *res; /* services_sql: the strings of the result */
};

static int
parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno != 0 || end == s || *end != '\0' ? STATUS_INVALID
						      : STATUS_OK;
}

static int
by_name(const void *key, const void *elem)
{
	return strcmp(key,
		      ((const struct servicequery_service *)elem)->service);
}

/* The service named name, or NULL (a name with requests but no spans in
 * the range of the first statement: rolled up, then dropped). */
static struct servicequery_service *
find(struct servicequery_result *r, const char *name)
{
	return bsearch(name, r->services, r->n, sizeof(*r->services), by_name);
}

static int
services_rows(PGresult *res, struct servicequery_result *r,
	      struct pg_error *err)
{
	int n = PQntuples(res);

	for (int i = 0; i < n; i++) {
		struct servicequery_service *s;
		const char *src = PQgetvalue(res, i, 1);

		if (r->n == SERVICEQUERY_MAX_SERVICES) {
			r->truncated = true;
			break;
		}
		s = &r->services[r->n];
		s->service = PQgetvalue(res, i, 0);
		s->ns = PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3);
		if (strstr(src, "ebpf") != NULL)
			s->sources |= SERVICEQUERY_EBPF;
		if (strstr(src, "otlp") != NULL)
			s->sources |= SERVICEQUERY_OTLP;
		if (s->sources == 0 ||
		    pg_text_i64(PQgetvalue(res, i, 2), &s->last_seen_us) !=
			    STATUS_OK) {
			pg_bad_row(err, "service row");
			return STATUS_IO;
		}
		r->n++;
	}
	return STATUS_OK;
}

static int
exact_rows(PGresult *res, struct servicequery_result *r, struct pg_error *err)
{
	for (int i = 0; i < PQntuples(res); i++) {
		struct servicequery_service *s = find(r, PQgetvalue(res, i, 0));
		struct spanquery_tally t = {.n = 0};
		int64_t req, errs, cerrs;
		double p95;

		if (pg_text_i64(PQgetvalue(res, i, 1), &req) != STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 2), &errs) != STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 3), &cerrs) != STATUS_OK ||
		    spanquery_tally_parse(&t, SPANQUERY_HTTP,
					  PQgetvalue(res, i, 4)) != STATUS_OK ||
		    spanquery_tally_parse(&t, SPANQUERY_GRPC,
					  PQgetvalue(res, i, 5)) != STATUS_OK ||
		    parse_double(PQgetvalue(res, i, 6), &p95) != STATUS_OK ||
		    req < 0 || errs < 0 || cerrs < 0 || errs + cerrs > req) {
			pg_bad_row(err, "requests row");
			return STATUS_IO;
		}
		/* the source that saw the most (see requests_exact_sql) */
		if (s == NULL || (uint64_t)req <= s->requests)
			continue;
		s->requests = (uint64_t)req;
		s->errors = (uint64_t)errs;
		s->client_errors = (uint64_t)cerrs;
		s->p95_ms = p95 / 1e6;
		spanquery_tally_top(&t, s->codes);
	}
	return STATUS_OK;
}

/* Sums each service's histogram rows per source (any order), then keeps
 * the source that saw the most requests (see requests_exact_sql). */
static int
rollup_rows(PGresult *res, struct servicequery_result *r, struct pg_error *err)
{
	struct rollup_hist **h = calloc(2 * r->n + 1, sizeof(*h));
	uint64_t(*errs)[2] = calloc(2 * r->n + 1, sizeof(*errs));
	/* status counts, for the services and sources that have errors */
	struct spanquery_tally **t = calloc(2 * r->n + 1, sizeof(*t));
	int rc = STATUS_OK;

	if (h == NULL || errs == NULL || t == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		struct servicequery_service *s = find(r, PQgetvalue(res, i, 0));
		int proto = spanquery_protocol_parse(PQgetvalue(res, i, 2));
		size_t k;
		int64_t before, got;
		int status, outcome;
		bool se;

		if (s == NULL)
			continue;
		/* eBPF first: it wins a tie, as in requests_exact_sql */
		k = 2 * (size_t)(s - r->services) +
		    (strcmp(PQgetvalue(res, i, 1), "ebpf") != 0);
		if (h[k] == NULL && (h[k] = rollup_hist_new()) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		before = rollup_hist_count(h[k]);
		if (proto < 0 ||
		    !spanquery_outcome_cols(
			    PQgetvalue(res, i, 3), PQgetvalue(res, i, 4),
			    PQgetvalue(res, i, 5), &status, &se, &outcome) ||
		    rollup_hist_add_text(h[k], PQgetvalue(res, i, 6),
					 PQgetvalue(res, i, 7)) != STATUS_OK) {
			pg_bad_row(err, "rollup row");
			rc = STATUS_IO;
			goto out;
		}
		got = rollup_hist_count(h[k]) - before;
		if (outcome != SPANQUERY_ERROR &&
		    outcome != SPANQUERY_CLIENT_ERROR)
			continue;
		errs[k][outcome == SPANQUERY_CLIENT_ERROR] += (uint64_t)got;
		if (t[k] == NULL && (t[k] = calloc(1, sizeof(**t))) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		spanquery_tally_add(t[k], proto, status, se, outcome,
				    (uint64_t)got);
	}
	for (size_t k = 0; k < 2 * r->n; k++) {
		struct servicequery_service *s = &r->services[k / 2];

		if (h[k] == NULL ||
		    (uint64_t)rollup_hist_count(h[k]) <= s->requests)
			continue;
		s->requests = (uint64_t)rollup_hist_count(h[k]);
		s->errors = errs[k][0];
		s->client_errors = errs[k][1];
		s->p95_ms = rollup_hist_quantile(h[k], 0.95) / 1e6;
		memset(s->codes, 0, sizeof(s->codes));
		if (t[k] != NULL)
			spanquery_tally_top(t[k], s->codes);
	}
out:
	for (size_t k = 0; h != NULL && k < 2 * r->n; k++)
		rollup_hist_free(h[k]);
	for (size_t k = 0; t != NULL && k < 2 * r->n; k++)
		free(t[k]);
	free(h);
	free(errs);
	free(t);
	return rc;
}

static int
by_requests(const void *a, const void *b)
{
	const struct servicequery_service *x = a, *y = b;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	return strcmp(x->service, y->service);
}

int
servicequery_list(struct pg_conn *c, const struct servicequery_filter *f,
		  int64_t now_ms, struct servicequery_result **out,
		  struct pg_error *err)
{
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX],
		hfrom[TIMERANGE_FORMAT_MAX], hto[TIMERANGE_FORMAT_MAX],
		mfrom[TIMERANGE_FORMAT_MAX], mto[TIMERANGE_FORMAT_MAX];
	const char *v[6];
	struct rollup_split sp;
	struct servicequery_result *r = NULL;
	struct priv *priv = NULL;
	PGresult *res = NULL, *req = NULL;
	struct pg_error ignored;
	bool in_tx = false;
	int rc;

	*out = NULL;
	if (f->from_ms >= f->to_ms) {
		snprintf(err->client, sizeof(err->client),
			 "the time range is empty: from must be before to");
		err->detail[0] = err->sqlstate[0] = '\0';
		return STATUS_INVALID;
	}
	timerange_format(f->from_ms, from, sizeof(from));
	timerange_format(f->to_ms, to, sizeof(to));
	v[0] = from;
	v[1] = to;
	v[2] = f->ns;
	/*
	 * Both statements in one transaction with jit off (SET LOCAL: the
	 * pooled connection's session is left as it was).  The requests
	 * statement's estimate counts the dirty-hour branch as a scan of
	 * the whole partition; that would have PostgreSQL spend ~300 ms
	 * compiling it with LLVM for a statement that runs in tens of ms.
	 * Read-only, so it ends in a rollback.
	 */
	if ((rc = pg_begin_local(c, (const char *const[]){"jit", "off", NULL},
				 err)) != STATUS_OK)
		return rc;
	in_tx = true;
	if ((rc = pg_query(c, services_sql, 3, v, &res, err)) != STATUS_OK)
		goto fail;
	r = calloc(1, sizeof(*r));
	priv = calloc(1, sizeof(*priv));
	if (r == NULL || priv == NULL ||
	    (r->services = calloc((size_t)PQntuples(res) + 1,
				  sizeof(*r->services))) == NULL) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	priv->res = res;
	r->priv_ = priv;
	priv = NULL;
	res = NULL;
	if ((rc = services_rows(((struct priv *)r->priv_)->res, r, err)) !=
	    STATUS_OK)
		goto fail;
	if (r->n == 0)
		goto done;

	/*
	 * A range with a whole settled hour reads the rollups (hours, and
	 * minutes at its edges and in dirty hours: rollup_split_range); a
	 * shorter one stays exact, so a live "last hour" is percentile_cont
	 * over raw spans (list_services says which in its text only).
	 */
	if (!rollup_split_range(f->from_ms, f->to_ms, now_ms, &sp) ||
	    sp.hour_to - sp.hour_from < HOUR_MS) {
		rc = pg_query(c, requests_exact_sql, 2, v, &req, err);
	} else {
		timerange_format(sp.hour_from, hfrom, sizeof(hfrom));
		timerange_format(sp.hour_to, hto, sizeof(hto));
		timerange_format(sp.minute_from, mfrom, sizeof(mfrom));
		timerange_format(sp.minute_to, mto, sizeof(mto));
		v[2] = hfrom;
		v[3] = hto;
		v[4] = mfrom;
		v[5] = mto;
		r->rollup = true;
		rc = pg_query(c, requests_rollup_sql, 6, v, &req, err);
	}
	if (rc != STATUS_OK)
		goto fail;
	rc = r->rollup ? rollup_rows(req, r, err) : exact_rows(req, r, err);
	if (rc != STATUS_OK)
		goto fail;
	qsort(r->services, r->n, sizeof(*r->services), by_requests);
done:
	in_tx = false;
	if ((rc = pg_rollback(c, err)) != STATUS_OK)
		goto fail;
	PQclear(req);
	*out = r;
	return STATUS_OK;
fail:
	if (in_tx)
		(void)!pg_rollback(c, &ignored);
	if (rc == STATUS_NOMEM) {
		snprintf(err->client, sizeof(err->client), "out of memory");
		err->detail[0] = err->sqlstate[0] = '\0';
	}
	PQclear(req);
	PQclear(res);
	free(priv);
	servicequery_free(r);
	return rc;
}

void
servicequery_free(struct servicequery_result *r)
{
	struct priv *priv;

	if (r == NULL)
		return;
	priv = r->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(r->services);
	free(r);
}

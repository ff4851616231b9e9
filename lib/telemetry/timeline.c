/*
 * timeline.c - a service's calls per time step from the rollups and the
 * raw edges (see timeline.h): one statement per source, whose rows (a
 * step, a protocol, an outcome and a duration histogram) are summed here
 * per step and protocol, as spanquery sums a key's rows.
 */
#include "telemetry/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "telemetry/pointquery.h"
#include "telemetry/rollup.h"

/*
 * $1..$13 the filter (spanquery_params), $14 / $15 the clean settled
 * hours read from span_rollup (empty for a step of less than whole hours),
 * $16 / $17 the settled minutes (struct rollup_split), $18 the step in
 * seconds, $19 / $20 the whole 5-minute periods inside [$16, $14) read
 * from span_rollup_5m (empty unless the step is whole 5 minutes, no
 * hours are read, and the filter is the service alone; 5 minutes is
 * ROLLUP_5M_S, written out below).  Each row: protocol, step number
 * (epoch / step), outcome, buckets, counts.  Every part is a range of the (service_name, source,
 * period | start_time) keys, as in spanquery's rollup statement: the dirty
 * minutes one index scan each, the minutes of a dirty hour or 5 minutes
 * one range each (LATERAL, kept apart by OFFSET 0).
 */
#define STEP_OF(col) "floor(extract(epoch FROM " col ") / $18::int)::bigint"
#define ROLLUP_OUT                                                             \
	"protocol, " STEP_OF("period") ", sextant_call_outcome(protocol, "     \
				       "status, span_error), buckets::text, "  \
				       "counts::text"
#define RAW_OUT                                                                \
	"SELECT protocol, " STEP_OF(                                           \
		"start_time") " AS t, outcome, "                               \
			      "sextant_duration_bucket("                       \
			      "duration_ns) AS b, "                            \
			      "count(*) AS n FROM "                            \
			      "span_calls WHERE" SPANQUERY_WHERE
/* the minute rows of the filter in [lo, hi) with no dirty mark */
#define MINUTES(lo, hi)                                                        \
	"SELECT " ROLLUP_OUT " FROM span_rollup_minute WHERE" SPANQUERY_WHERE  \
	" AND period >= " lo " AND period < " hi                               \
	" AND period NOT IN (SELECT period FROM dm)"
/* the clean minute rows of the periods of a CTE (dirty hours or 5 minutes) */
#define MINUTES_OF(cte, len)                                                   \
	"SELECT m.protocol, " STEP_OF(                                         \
		"m.period") ", sextant_call_outcome(m.protocol, m.status, "    \
			    "m.span_error), m.buckets::text, m.counts::text "  \
			    "FROM " cte " h CROSS JOIN LATERAL (SELECT r.* "   \
			    "FROM span_rollup_minute r WHERE" SPANQUERY_WHERE  \
			    " AND r.period >= h.period AND r.period < "        \
			    "h.period + " len " OFFSET 0) m WHERE m.period "   \
			    "NOT IN (SELECT period FROM dm)"

/* the clean 5-minute periods in [$19, $20); the minute rows before,
 * after and between them and the hours; those of the dirty hours and
 * 5 minutes */
#define FIVE_ROWS                                                              \
	"SELECT protocol, " STEP_OF("period") ", outcome, buckets, counts "    \
					      "FROM span_rollup_5m WHERE "     \
					      "service_name = $1 AND source "  \
					      "= $2 AND protocol = ANY "       \
					      "($5::text[]) AND period >= "    \
					      "$19::timestamptz AND period < " \
					      "$20::timestamptz AND period "   \
					      "NOT IN (SELECT period FROM d5)"
#define MINUTES_HEAD MINUTES("$16::timestamptz", "$19::timestamptz")
#define MINUTES_MID  MINUTES("$20::timestamptz", "$14::timestamptz")
#define MINUTES_TAIL MINUTES("$15::timestamptz", "$17::timestamptz")
#define MINUTES_DH   MINUTES_OF("dh", "interval '1 hour'")
#define MINUTES_D5   MINUTES_OF("d5", "interval '5 minutes'")

static const char timeline_sql[] =
	"WITH dh AS (SELECT DISTINCT period FROM span_rollup_dirty "
	"WHERE period >= $14::timestamptz AND period < $15::timestamptz), "
	"dm AS (SELECT DISTINCT period FROM span_rollup_minute_dirty "
	"WHERE period >= $16::timestamptz AND period < $17::timestamptz "
	"AND (period < $14::timestamptz OR period >= $15::timestamptz "
	"OR date_trunc('hour', period, 'UTC') IN (SELECT period FROM dh))), "
	"d5 AS (SELECT DISTINCT to_timestamp(floor(extract(epoch FROM period) "
	"/ 300) * 300) AS period FROM dm WHERE period >= "
	"$19::timestamptz AND period < $20::timestamptz), "
	"raw AS (" RAW_OUT " AND start_time >= $3::timestamptz "
	"AND start_time < $16::timestamptz GROUP BY 1, 2, 3, 4 UNION "
	"ALL " RAW_OUT
	" AND start_time >= $17::timestamptz AND start_time < $4::timestamptz "
	"GROUP BY 1, 2, 3, 4 UNION ALL SELECT s.* FROM dm d CROSS JOIN "
	"LATERAL (" RAW_OUT " AND start_time >= d.period AND start_time < "
	"d.period + interval '1 minute' GROUP BY 1, 2, 3, 4 OFFSET 0) s) "
	"SELECT " ROLLUP_OUT " FROM span_rollup WHERE" SPANQUERY_WHERE
	" AND period >= $14::timestamptz AND period < $15::timestamptz "
	"AND period NOT IN (SELECT period FROM dh) "
	"UNION ALL " FIVE_ROWS " UNION ALL " MINUTES_HEAD
	" UNION ALL " MINUTES_MID " UNION ALL " MINUTES_TAIL
	" UNION ALL " MINUTES_DH " UNION ALL " MINUTES_D5
	" UNION ALL SELECT protocol, t, outcome, array_agg(b ORDER BY b)::"
	"text, array_agg(n ORDER BY b)::text FROM (SELECT protocol, t, "
	"outcome, b, sum(n) AS n FROM raw GROUP BY 1, 2, 3, 4) r "
	"GROUP BY 1, 2, 3";
_Static_assert(ROLLUP_5M_S == 300, "timeline_sql writes 5 minutes out");

int
timeline_step(int64_t from_ms, int64_t to_ms, const char *step, int64_t *step_s,
	      char *err, size_t errlen)
{
	int64_t n, mult = 0, s;
	char *end;

	*step_s = 0;
	if (errlen > 0)
		err[0] = '\0';
	errno = 0;
	n = step != NULL && step[0] >= '0' && step[0] <= '9'
		    ? strtoll(step, &end, 10)
		    : 0;
	if (n > 0 && errno == 0 && n <= 1000000000LL && end[0] != '\0' &&
	    end[1] == '\0')
		switch (end[0]) {
		case 's': mult = 1; break;
		case 'm': mult = 60; break;
		case 'h': mult = 3600; break;
		case 'd': mult = 86400; break;
		default: break;
		}
	if (mult == 0) {
		snprintf(err, errlen,
			 "step \"%.40s\" is not understood: use whole minutes, "
			 "hours or days, like \"1m\", \"5m\", \"1h\", \"1d\"",
			 step != NULL ? step : "");
		return STATUS_INVALID;
	}
	s = n * mult;
	if (s % TIMELINE_MIN_STEP_S != 0) {
		snprintf(err, errlen,
			 "step \"%.40s\" is not a whole number of minutes: use "
			 "\"1m\" or more, in whole minutes",
			 step);
		return STATUS_INVALID;
	}
	/* past 360 minutes the hint is 1m and up */
	if (pointquery_step_bound(from_ms, to_ms, step, s, TIMELINE_MAX_STEPS,
				  err, errlen) != STATUS_OK)
		return STATUS_INVALID;
	*step_s = s;
	return STATUS_OK;
}

/* Whether f picks the whole service (protocols aside): what the
 * span_rollup_5m rows, which have no call key, can answer. */
static bool
service_only(const struct spanquery_filter *f)
{
	return f->http_route == NULL && f->http_method == NULL &&
	       f->http_status_min == 0 && f->http_status_max == 0 &&
	       f->grpc_method == NULL && f->grpc_status < 0 &&
	       f->sql_operation == NULL && f->table_name == NULL;
}

/*
 * The whole 5-minute periods [*from, *to) of the minute part [lo, hi) of
 * a range (lo, hi whole minutes): empty (both hi) when it holds none.
 */
static void
five_range(int64_t lo, int64_t hi, int64_t *from, int64_t *to)
{
	const int64_t len = ROLLUP_5M_S * 1000LL;

	/* times from 1970 on (timerange): / rounds down */
	*from = (lo + len - 1) / len * len;
	*to = hi / len * len;
	if (*from >= *to)
		*from = *to = hi;
}

int
timeline_send(struct pg_conn *c, const char *source,
	      const struct spanquery_filter *f, int64_t step_s, int64_t now_ms,
	      struct pg_error *err)
{
	char hfrom[48], hto[48], mfrom[48], mto[48], ffrom[48], fto[48];
	char step[24];
	struct spanquery_params p;
	struct rollup_split sp;
	int64_t f5from, f5to;
	int rc;

	if (step_s < TIMELINE_MIN_STEP_S || step_s % TIMELINE_MIN_STEP_S != 0 ||
	    pointquery_step_count(f->from_ms, f->to_ms, step_s) >
		    TIMELINE_MAX_STEPS) {
		snprintf(err->client, sizeof(err->client),
			 "step must be whole minutes and give at most %d "
			 "points",
			 TIMELINE_MAX_STEPS);
		err->detail[0] = err->sqlstate[0] = '\0';
		return STATUS_INVALID;
	}
	if ((rc = spanquery_params(&p, source, f, err)) != STATUS_OK)
		return rc;
	/* without a settled minute every field is from_ms: all raw */
	(void)rollup_split_range(f->from_ms, f->to_ms, now_ms, &sp);
	/* hours only when each lies in one step; else their minutes */
	if (step_s % ROLLUP_PERIOD_S != 0)
		sp.hour_from = sp.hour_to = sp.minute_to;
	/* 5-minute rows only when each lies in one step, there are no
	 * hours (whose steps need few minute rows), and no call key is
	 * asked for; else none, at the end of the minutes before the hours */
	f5from = f5to = sp.hour_from;
	if (step_s % ROLLUP_5M_S == 0 && sp.hour_from == sp.minute_to &&
	    service_only(f))
		five_range(sp.minute_from, sp.minute_to, &f5from, &f5to);
	pg_ts_text(sp.hour_from, hfrom, sizeof(hfrom));
	pg_ts_text(sp.hour_to, hto, sizeof(hto));
	pg_ts_text(sp.minute_from, mfrom, sizeof(mfrom));
	pg_ts_text(sp.minute_to, mto, sizeof(mto));
	pg_ts_text(f5from, ffrom, sizeof(ffrom));
	pg_ts_text(f5to, fto, sizeof(fto));
	snprintf(step, sizeof(step), "%" PRId64, step_s);
	p.v[SPANQUERY_PARAMS] = hfrom;
	p.v[SPANQUERY_PARAMS + 1] = hto;
	p.v[SPANQUERY_PARAMS + 2] = mfrom;
	p.v[SPANQUERY_PARAMS + 3] = mto;
	p.v[SPANQUERY_PARAMS + 4] = step;
	p.v[SPANQUERY_PARAMS + 5] = ffrom;
	p.v[SPANQUERY_PARAMS + 6] = fto;
	return pg_send(c, timeline_sql, SPANQUERY_PARAMS + 7, p.v, err);
}

void
timeline_free(struct timeline *t)
{
	if (t == NULL)
		return;
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++)
		free(t->p[p]);
	free(t);
}

/* Adds row i of res to t and to its histogram in h (SPANQUERY_PROTOCOLS
 * x t->n, each made when first used). */
static int
add_row(PGresult *res, int i, struct timeline *t, int64_t first,
	struct rollup_hist **h)
{
	int64_t step, before, got;
	int protocol;
	uint64_t outcome;
	size_t k;
	struct timeline_point *pt;

	protocol = spanquery_protocol_parse(PQgetvalue(res, i, 0));
	if (protocol < 0 || pg_text_i64(PQgetvalue(res, i, 1), &step) ||
	    pg_text_u64(PQgetvalue(res, i, 2), &outcome) || step < first ||
	    (uint64_t)(step - first) >= t->n)
		return STATUS_IO;
	k = (size_t)(step - first);
	if (t->p[protocol] == NULL &&
	    (t->p[protocol] = calloc(t->n, sizeof(*t->p[protocol]))) == NULL)
		return STATUS_NOMEM;
	h += (size_t)protocol * t->n + k;
	if (*h == NULL && (*h = rollup_hist_new()) == NULL)
		return STATUS_NOMEM;
	before = rollup_hist_count(*h);
	if (rollup_hist_add_text(*h, PQgetvalue(res, i, 3),
				 PQgetvalue(res, i, 4)) != STATUS_OK)
		return STATUS_IO;
	got = rollup_hist_count(*h) - before;
	pt = &t->p[protocol][k];
	pt->requests += (uint64_t)got;
	if (outcome == SPANQUERY_ERROR)
		pt->errors += (uint64_t)got;
	else if (outcome == SPANQUERY_CLIENT_ERROR)
		pt->client_errors += (uint64_t)got;
	return STATUS_OK;
}

int
timeline_recv(struct pg_conn *c, const struct spanquery_filter *f,
	      int64_t step_s, struct timeline **out, struct pg_error *err)
{
	struct timeline *t = NULL;
	struct rollup_hist **h = NULL;
	PGresult *res = NULL;
	size_t nh = 0;
	int64_t first;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	/* from_ms >= 0: timerange takes years from 1970 */
	first = f->from_ms / (step_s * 1000);
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	t->step_s = step_s;
	t->first_ms = first * step_s * 1000;
	t->n = (size_t)pointquery_step_count(f->from_ms, f->to_ms, step_s);
	nh = (size_t)SPANQUERY_PROTOCOLS * t->n;
	if ((h = calloc(nh + 1, sizeof(*h))) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (int i = 0; i < PQntuples(res); i++)
		if ((rc = add_row(res, i, t, first, h)) != STATUS_OK) {
			if (rc == STATUS_IO)
				pg_bad_row(err, "timeline row");
			goto out;
		}
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++)
		for (size_t k = 0; t->p[p] != NULL && k < t->n; k++)
			t->p[p][k].p95_ms =
				rollup_hist_quantile(h[(size_t)p * t->n + k],
						     0.95) /
				1e6;
	*out = t;
	t = NULL;
out:
	for (size_t k = 0; h != NULL && k < nh; k++)
		rollup_hist_free(h[k]);
	free(h);
	timeline_free(t);
	PQclear(res);
	return rc;
}

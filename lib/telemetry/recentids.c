/*
 * recentids.c - the most recent trace and session ids of a range, for
 * completions.  Two static statements with bound values; the rows stay in
 * their PGresult and the ids point into it.
 */
#include "telemetry/recentids.h"

#include <stdio.h>
#include <stdlib.h>

/* Spans walked per source for each trace id asked: traces of up to 20
 * spans each still give max ids, and a walk never reads past 20,000. */
#define SPANS_PER_TRACE 20

/* $1 from, $2 to, $3 max, $4 spans per source at most.  One walk per
 * source keeps to (source, start_time) in time order; a walk over both
 * at once has no index to follow. */
#define TRACE_WALK(src)                                                        \
	"(SELECT trace_id, start_time FROM spans WHERE source = '" src         \
	"' AND start_time >= $1::timestamptz AND start_time < "                \
	"$2::timestamptz ORDER BY start_time DESC LIMIT $4)"
static const char traces_sql[] =
	"SELECT encode(trace_id, 'hex') FROM (" TRACE_WALK(
		"otlp") " UNION ALL " TRACE_WALK("ebpf") ") s "
							 "GROUP BY trace_id "
							 "ORDER BY "
							 "max(start_time) "
							 "DESC, trace_id "
							 "LIMIT $3";
/* $1 from, $2 to, $3 max. */
static const char sessions_sql[] =
	"SELECT session_id FROM spans WHERE session_id IS NOT NULL "
	"AND start_time >= $1::timestamptz AND start_time < $2::timestamptz "
	"GROUP BY session_id ORDER BY max(start_time) DESC, session_id "
	"LIMIT $3";

int
recentids_get(struct pg_conn *c, enum recentids_kind kind, int64_t from_ms,
	      int64_t to_ms, size_t max, struct recentids **out,
	      struct pg_error *err)
{
	char from[PG_TS_TEXT_MAX], to[PG_TS_TEXT_MAX], lim[24], walk[24];
	const char *v[4] = {from, to, lim, walk};
	struct recentids *r = NULL;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if (from_ms >= to_ms || max == 0 || max > RECENTIDS_MAX)
		return pg_error_set(err, STATUS_INVALID,
				    "a non-empty time range and 1..%d ids "
				    "are required",
				    RECENTIDS_MAX);
	pg_ts_text(from_ms, from, sizeof(from));
	pg_ts_text(to_ms, to, sizeof(to));
	snprintf(lim, sizeof(lim), "%zu", max);
	snprintf(walk, sizeof(walk), "%zu", max * SPANS_PER_TRACE);
	if (kind == RECENTIDS_TRACES)
		rc = pg_query(c, traces_sql, 4, v, &res, err);
	else
		rc = pg_query(c, sessions_sql, 3, v, &res, err);
	if (rc != STATUS_OK)
		return rc;
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->ids = calloc((size_t)PQntuples(res) + 1, sizeof(*r->ids))) ==
		    NULL) {
		free(r);
		PQclear(res);
		return pg_error_set(err, STATUS_NOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(res) && r->n < max; i++)
		r->ids[r->n++] = PQgetvalue(res, i, 0);
	r->priv_ = res;
	*out = r;
	return STATUS_OK;
}

void
recentids_free(struct recentids *r)
{
	if (r == NULL)
		return;
	PQclear(r->priv_);
	free(r->ids);
	free(r);
}

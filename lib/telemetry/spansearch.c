/*
 * spansearch.c - the OTLP span search of query_telemetry_spans (see
 * spansearch.h): one static statement per order, every value bound, so
 * that PostgreSQL plans each with the values known and unused
 * "$n IS NULL OR ..." filters cost nothing.
 */
#include "telemetry/spansearch.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#define SPANS_SQL(order)                                                       \
	"SELECT encode(trace_id, 'hex'), encode(span_id, 'hex'), "             \
	"encode(parent_span_id, 'hex'), service_name, name, kind, "            \
	"floor(extract(epoch FROM start_time) * 1000000)::bigint, "            \
	"duration_ns, status_code, status_message, attributes::text "          \
	"FROM spans WHERE source = 'otlp' "                                    \
	"AND ($1::text IS NULL OR service_name = $1) "                         \
	"AND ($2::text IS NULL OR strpos(lower(name), lower($2)) > 0) "        \
	"AND ($3::text IS NULL OR trace_id = decode($3, 'hex')) "              \
	"AND ($4::text IS NULL OR session_id = $4) "                           \
	"AND ($5::jsonb IS NULL OR attributes @> $5::jsonb) "                  \
	"AND ($6::bigint IS NULL OR duration_ns >= $6) "                       \
	"AND ($7::smallint IS NULL OR status_code = $7) "                      \
	"AND ($8::float8 IS NULL OR start_time >= "                            \
	"to_timestamp($8::float8 / 1000)) "                                    \
	"AND ($9::float8 IS NULL OR start_time < "                             \
	"to_timestamp($9::float8 / 1000)) "                                    \
	"ORDER BY " order " LIMIT $10"

static const char spans_recent_sql[] =
	SPANS_SQL("start_time DESC, trace_id, span_id");
static const char spans_slowest_sql[] =
	SPANS_SQL("duration_ns DESC, start_time DESC, trace_id, span_id");

static bool
is_hex32(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return i == 32;
}

int
spansearch_run(struct pg_conn *c, const struct spansearch_req *r,
	       struct spansearch_result **out, struct pg_error *err)
{
	struct spansearch_result *s = NULL;
	PGresult *res = NULL;
	char mind[24], status[8], from[24], to[24], lim[24];
	const char *v[10];
	int rc, n;

	*out = NULL;
	if (r->limit < 1 || r->limit > SPANSEARCH_MAX_SPANS)
		return pg_error_set(err, STATUS_INVALID,
				    "limit must be 1..%d: ask for fewer spans",
				    SPANSEARCH_MAX_SPANS);
	if (r->trace_id != NULL && !is_hex32(r->trace_id))
		return pg_error_set(
			err, STATUS_INVALID,
			"trace_id must be 32 hexadecimal digits: copy it "
			"from a span or trace answer");
	if (r->has_range && r->from_ms >= r->to_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "time_range is empty: give a range");
	if (r->status < -1 || r->status > 2)
		return pg_error_set(err, STATUS_INVALID,
				    "status must be ok, error or unset");
	snprintf(mind, sizeof(mind), "%" PRId64, r->min_duration_ns);
	snprintf(status, sizeof(status), "%d", r->status);
	snprintf(from, sizeof(from), "%" PRId64, r->from_ms);
	snprintf(to, sizeof(to), "%" PRId64, r->to_ms);
	snprintf(lim, sizeof(lim), "%zu", r->limit + 1);
	v[0] = r->service;
	v[1] = r->name;
	v[2] = r->trace_id;
	v[3] = r->session_id;
	v[4] = r->attributes_json;
	v[5] = r->min_duration_ns >= 0 ? mind : NULL;
	v[6] = r->status >= 0 ? status : NULL;
	v[7] = r->has_range ? from : NULL;
	v[8] = r->has_range ? to : NULL;
	v[9] = lim;
	rc = pg_query(c, r->slowest ? spans_slowest_sql : spans_recent_sql, 10,
		      v, &res, err);
	if (rc != STATUS_OK)
		return rc;
	n = PQntuples(res);
	s = calloc(1, sizeof(*s));
	if (s == NULL ||
	    (s->spans = calloc((size_t)n + 1, sizeof(*s->spans))) == NULL) {
		rc = pg_error_set(err, STATUS_NOMEM, "out of memory");
		goto fail;
	}
	if ((size_t)n > r->limit) {
		s->truncated = true;
		n = (int)r->limit;
	}
	for (int i = 0; i < n; i++) {
		struct spansearch_span *sp = &s->spans[i];
		int64_t kind, st;
		const char *attrs = PQgetvalue(res, i, 10);

		if (pg_text_i64(PQgetvalue(res, i, 5), &kind) != STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 6), &sp->start_us) !=
			    STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 7), &sp->duration_ns) !=
			    STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 8), &st) != STATUS_OK) {
			rc = pg_bad_row(err, "span row");
			goto fail;
		}
		snprintf(sp->trace_id, sizeof(sp->trace_id), "%s",
			 PQgetvalue(res, i, 0));
		snprintf(sp->span_id, sizeof(sp->span_id), "%s",
			 PQgetvalue(res, i, 1));
		snprintf(sp->parent_span_id, sizeof(sp->parent_span_id), "%s",
			 PQgetvalue(res, i, 2));
		sp->service = PQgetvalue(res, i, 3);
		sp->name = PQgetvalue(res, i, 4);
		sp->kind = (int)kind;
		sp->status = (int)st;
		sp->status_message =
			PQgetisnull(res, i, 9) ? NULL : PQgetvalue(res, i, 9);
		sp->attrs_cut = strlen(attrs) > SPANSEARCH_MAX_ATTR_JSON;
		sp->attributes_json = sp->attrs_cut ? "{}" : attrs;
	}
	s->n = (size_t)n;
	s->priv_ = res;
	*out = s;
	return STATUS_OK;
fail:
	if (s != NULL)
		free(s->spans);
	free(s);
	PQclear(res);
	return rc;
}

void
spansearch_free(struct spansearch_result *s)
{
	if (s == NULL)
		return;
	PQclear(s->priv_);
	free(s->spans);
	free(s);
}

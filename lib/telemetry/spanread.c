/*
 * spanread.c - one span whole (see spanread.h): one statement, one probe
 * of the primary key per source.
 */
#include "telemetry/spanread.h"

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/hex.h"
#include "telemetry/spanquery.h"

#define STR_(x) #x
#define STR(x)	STR_(x)
#define VALUE	STR(SPANREAD_VALUE)

/* clang-format off */
/* A text cut to SPANREAD_VALUE characters, "…" when it was longer. */
#define CUT(t)                                                                 \
	"CASE WHEN length(" t ") <= " VALUE " THEN " t " ELSE left(" t         \
	", " VALUE ") || '…' END"

/*
 * An object's first max members by name as [[key, value], ...] (jsonb
 * keeps an object's keys by length, then bytes: pairs keep them by name),
 * each value as stored unless its text is longer than SPANREAD_VALUE
 * characters: then that text cut, as a string.  Not an object: [].
 */
#define PAIRS(obj, max)                                                         \
	"(SELECT coalesce(jsonb_agg(jsonb_build_array(key, "                    \
	SPANQUERY_CUT_JSON_SQL("value", VALUE) ") ORDER BY key), '[]') FROM "   \
	SPANQUERY_FIRST_MEMBERS_SQL("CASE WHEN jsonb_typeof(" obj               \
		") = 'object' THEN " obj " ELSE '{}' END", max) " a)"
#define COUNT(obj)                                                             \
	"CASE WHEN jsonb_typeof(" obj ") = 'object' THEN (SELECT count(*) "    \
	"FROM jsonb_object_keys(" obj ")) ELSE 0 END"
#define LIST(col)                                                              \
	"CASE WHEN jsonb_typeof(" col ") = 'array' THEN " col " ELSE '[]' END"
#define START "sextant_unix_nano(start_time, start_nanos)"

/* The first SPANREAD_EVENTS events in their order, their times made
 * offsets from the span's start. */
#define EVENTS                                                                 \
	"(SELECT coalesce(jsonb_agg(jsonb_build_object('offset_ns', CASE "     \
	"WHEN e->>'time_unix_nano' ~ '^[0-9]{1,19}$' THEN "                    \
	"(e->>'time_unix_nano')::numeric - " START " END, 'name', "            \
	CUT("(e->>'name')") ", 'attributes', "                                 \
	PAIRS("e->'attributes'", STR(SPANREAD_EVENT_ATTRS))                    \
	", 'attributes_total', " COUNT("e->'attributes'")                      \
	") ORDER BY o), '[]') FROM jsonb_array_elements(" LIST("events")       \
	") WITH ORDINALITY x(e, o) WHERE o <= " STR(SPANREAD_EVENTS) ")"
#define LINKS                                                                  \
	"(SELECT coalesce(jsonb_agg(jsonb_build_object('trace_id', "           \
	"l->>'trace_id', 'span_id', l->>'span_id', 'attributes', "             \
	PAIRS("l->'attributes'", STR(SPANREAD_EVENT_ATTRS))                    \
	") ORDER BY o), '[]') FROM jsonb_array_elements(" LIST("links")        \
	") WITH ORDINALITY x(l, o) WHERE o <= " STR(SPANREAD_LINKS) ")"

/* $1 trace id, $2 span id (bytea): the span's rows, OTLP first. */
static const struct pg_stmt read_stmt = {
	"spanread",
	"SELECT source, jsonb_build_object('source', source, 'start_ns', "
	START ", 'duration_ns', duration_ns, 'kind', kind, 'status', "
	SPANQUERY_STATUS_SQL ", 'status_message', " CUT("status_message")
	", 'parent_span_id', encode(parent_span_id, 'hex'), 'service', "
	"service_name, 'name', " CUT("name") ", 'scope', scope_name, "
	"'scope_version', scope_version, 'attributes', "
	PAIRS("attributes", STR(SPANREAD_ATTRS))
	", 'attributes_total', " COUNT("attributes") ", 'resource', "
	PAIRS("resource_attributes", STR(SPANREAD_ATTRS))
	", 'resource_total', " COUNT("resource_attributes")
	", 'events', " EVENTS ", 'events_total', jsonb_array_length("
	LIST("events") "), 'links', " LINKS ", 'links_total', "
	"jsonb_array_length(" LIST("links") "))::text FROM spans WHERE "
	"trace_id = $1::bytea AND span_id = $2::bytea ORDER BY source = "
	"'otlp' DESC LIMIT 2",
	2, false, false};

/* clang-format on */

int
spanread_send(struct pg_conn *c, const uint8_t trace_id[16],
	      const uint8_t span_id[8], struct pg_error *err)
{
	/* bytea in text form: \x and the hex digits */
	char t[3 + 32], s[3 + 16];
	const char *v[2] = {t, s};

	memcpy(t, "\\x", 2);
	hex_encode(trace_id, 16, t + 2);
	memcpy(s, "\\x", 2);
	hex_encode(span_id, 8, s + 2);
	return pg_send_prepared(c, &read_stmt, v, err);
}

int
spanread_recv(struct pg_conn *c, struct spanread **out, struct pg_error *err)
{
	struct spanread *r;
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	if (PQnfields(res) != 2 || PQntuples(res) > 2) {
		PQclear(res);
		return pg_bad_row(err, "span");
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		PQclear(res);
		return STATUS_NOMEM;
	}
	r->priv_ = res;
	for (int i = 0; i < PQntuples(res); i++) {
		if (PQgetisnull(res, i, 0) || PQgetisnull(res, i, 1)) {
			spanread_free(r);
			return pg_bad_row(err, "span");
		}
		r->source[r->n] = PQgetvalue(res, i, 0);
		r->json[r->n++] = PQgetvalue(res, i, 1);
	}
	*out = r;
	return STATUS_OK;
}

void
spanread_free(struct spanread *r)
{
	if (r == NULL)
		return;
	PQclear(r->priv_);
	free(r);
}

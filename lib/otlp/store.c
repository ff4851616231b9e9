/*
 * store.c - COPY of decoded OTLP batches into spans and metric_points
 * (see store.h).  The staging tables are temporary, per connection, and
 * emptied at every commit.
 */
#include "otlp/store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"

/* A COPY buffer is flushed to the server past this size, so one batch
 * never holds more than this much text in memory at once. */
#define STORE_COPY_CHUNK (1u << 20)

static const char spans_staging[] =
	"CREATE TEMP TABLE IF NOT EXISTS sextant_spans_in "
	"(LIKE spans INCLUDING DEFAULTS) ON COMMIT DELETE ROWS";

static const char spans_copy[] =
	"COPY sextant_spans_in (start_time, start_nanos, duration_ns, kind, "
	"status_code, trace_id, span_id, parent_span_id, source, name, "
	"status_message, service_name, service_namespace, service_version, "
	"k8s_namespace_name, k8s_deployment_name, k8s_pod_name, host_name, "
	"scope_name, scope_version, http_method, http_route, "
	"http_status_code, rpc_system, rpc_service, rpc_method, "
	"rpc_grpc_status_code, db_system, db_operation, db_table, session_id, "
	"gen_ai_provider, gen_ai_operation, gen_ai_request_model, "
	"gen_ai_response_model, gen_ai_input_tokens, gen_ai_output_tokens, "
	"attributes, resource_attributes, events, links, trace_state, "
	"url_path) FROM STDIN";

static const char spans_insert[] =
	"INSERT INTO spans SELECT * FROM sextant_spans_in "
	"ON CONFLICT DO NOTHING";

/*
 * The hours and the minutes these spans fall in now need their rollups
 * recomputed (lib/telemetry/rollup, docs/schema.md): marked in the same
 * transaction, so a refresh either sees the spans or the mark survives
 * it, and in one statement, so both marks get the same slot.  The slot
 * comes from this statement's start, not the transaction's: a refresh
 * deletes a mark only 60 s past its slot, and COMMIT follows this
 * statement at once however long the COPY before it took.  Each table's
 * marks go in sorted by period: concurrent writers whose batches share
 * minutes then wait for each other in one order, never in a cycle (in a
 * HashAggregate's order two of them deadlocked).
 */
static const char spans_mark_dirty[] =
	"WITH h AS (INSERT INTO span_rollup_dirty (period, slot) "
	"SELECT DISTINCT date_trunc('hour', start_time, 'UTC'), "
	"floor(extract(epoch FROM statement_timestamp()) / 10)::bigint "
	"FROM sextant_spans_in ORDER BY 1 ON CONFLICT DO NOTHING) "
	"INSERT INTO span_rollup_minute_dirty (period, slot) "
	"SELECT DISTINCT date_trunc('minute', start_time, 'UTC'), "
	"floor(extract(epoch FROM statement_timestamp()) / 10)::bigint "
	"FROM sextant_spans_in ORDER BY 1 ON CONFLICT DO NOTHING";

static const char points_staging[] =
	"CREATE TEMP TABLE IF NOT EXISTS sextant_points_in "
	"(LIKE metric_points INCLUDING DEFAULTS) ON COMMIT DELETE ROWS";

static const char points_copy[] =
	"COPY sextant_points_in (time, start_time, name, kind, unit, "
	"description, temporality, is_monotonic, value, count, sum, min, max, "
	"bounds, bucket_counts, service_name, service_namespace, scope_name, "
	"attributes, resource_attributes) FROM STDIN";

static const char points_insert[] =
	"INSERT INTO metric_points SELECT * FROM sextant_points_in";

int
store_copy_text(struct buf *b, const char *v)
{
	const char *p, *run;

	if (v == NULL)
		return buf_puts(b, "\\N");
	for (p = run = v; *p != '\0'; p++) {
		const char *esc = NULL;

		switch (*p) {
		case '\\': esc = "\\\\"; break;
		case '\t': esc = "\\t"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		default: continue;
		}
		buf_append(b, run, (size_t)(p - run));
		buf_puts(b, esc);
		run = p + 1;
	}
	return buf_append(b, run, (size_t)(p - run));
}

int
store_copy_bytea(struct buf *b, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	/* bytea hex input is \x...; COPY text needs the backslash doubled */
	buf_puts(b, "\\\\x");
	for (i = 0; i < n; i++) {
		char two[2] = {hex[p[i] >> 4], hex[p[i] & 15]};

		buf_append(b, two, 2);
	}
	return buf_error(b);
}

int
store_copy_time(struct buf *b, uint64_t unix_nano)
{
	time_t secs = (time_t)(unix_nano / 1000000000u);
	unsigned long usec = (unsigned long)(unix_nano % 1000000000u / 1000u);
	struct tm tm;

	if (gmtime_r(&secs, &tm) == NULL) {
		buf_set_error(b, STATUS_INVALID);
		return buf_error(b);
	}
	return buf_printf(b, "%04d-%02d-%02d %02d:%02d:%02d.%06lu+00",
			  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			  tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
}

static void
copy_int(struct buf *b, int64_t v, bool present)
{
	if (present)
		buf_printf(b, "%" PRId64, v);
	else
		buf_puts(b, "\\N");
}

static void
copy_double(struct buf *b, double v, bool present)
{
	if (present)
		buf_printf(b, "%.17g", v);
	else
		buf_puts(b, "\\N");
}

/* A field and its tab (the row's last field, its newline).  Appends only:
 * a failure stays in b for write_rows to see once the row is written. */
#define FIELD(expr) ((void)(expr), buf_puts(b, "\t"))
#define LAST(expr)  ((void)(expr), buf_puts(b, "\n"))

static void
span_row(struct buf *b, const struct otlp_span *s)
{
	FIELD(store_copy_time(b, s->start_unix_nano));
	FIELD(copy_int(b, (int64_t)(s->start_unix_nano % 1000u), true));
	FIELD(copy_int(b, (int64_t)(s->end_unix_nano - s->start_unix_nano),
		       true));
	FIELD(copy_int(b, s->kind, true));
	FIELD(copy_int(b, s->status_code, true));
	FIELD(store_copy_bytea(b, s->trace_id, sizeof(s->trace_id)));
	FIELD(store_copy_bytea(b, s->span_id, sizeof(s->span_id)));
	FIELD(s->has_parent ? store_copy_bytea(b, s->parent_span_id,
					       sizeof(s->parent_span_id))
			    : buf_puts(b, "\\N"));
	FIELD(buf_puts(b, otlp_source_name(s->source)));
	FIELD(store_copy_text(b, s->name));
	FIELD(store_copy_text(b, s->status_message));
	FIELD(store_copy_text(b, s->service_name != NULL ? s->service_name
							 : "unknown_service"));
	FIELD(store_copy_text(b, s->service_namespace));
	FIELD(store_copy_text(b, s->service_version));
	FIELD(store_copy_text(b, s->k8s_namespace));
	FIELD(store_copy_text(b, s->k8s_deployment));
	FIELD(store_copy_text(b, s->k8s_pod));
	FIELD(store_copy_text(b, s->host_name));
	FIELD(store_copy_text(b, s->scope_name));
	FIELD(store_copy_text(b, s->scope_version));
	FIELD(store_copy_text(b, s->http_method));
	FIELD(store_copy_text(b, s->http_route));
	FIELD(copy_int(b, s->http_status, s->http_status >= 0));
	FIELD(store_copy_text(b, s->rpc_system));
	FIELD(store_copy_text(b, s->rpc_service));
	FIELD(store_copy_text(b, s->rpc_method));
	FIELD(copy_int(b, s->grpc_status, s->grpc_status >= 0));
	FIELD(store_copy_text(b, s->db_system));
	FIELD(store_copy_text(b, s->db_operation));
	FIELD(store_copy_text(b, s->db_table));
	FIELD(store_copy_text(b, s->session_id));
	FIELD(store_copy_text(b, s->gen_ai_system));
	FIELD(store_copy_text(b, s->gen_ai_operation));
	FIELD(store_copy_text(b, s->gen_ai_request_model));
	FIELD(store_copy_text(b, s->gen_ai_response_model));
	FIELD(copy_int(b, s->input_tokens, s->input_tokens >= 0));
	FIELD(copy_int(b, s->output_tokens, s->output_tokens >= 0));
	FIELD(store_copy_text(b, s->attributes_json != NULL ? s->attributes_json
							    : "{}"));
	FIELD(store_copy_text(b, s->resource_json != NULL ? s->resource_json
							  : "{}"));
	/* no events is NULL, not [] (docs/schema.md) */
	FIELD(store_copy_text(
		b, s->events_json != NULL && strcmp(s->events_json, "[]") != 0
			   ? s->events_json
			   : NULL));
	FIELD(store_copy_text(b, s->links_json));
	FIELD(store_copy_text(b, s->trace_state));
	LAST(store_copy_text(b, s->url_path));
}

static void
copy_array_double(struct buf *b, const double *v, size_t n)
{
	buf_puts(b, "{");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%.17g", i ? "," : "", v[i]);
	buf_puts(b, "}");
}

static void
copy_array_u64(struct buf *b, const uint64_t *v, size_t n)
{
	buf_puts(b, "{");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%" PRIu64, i ? "," : "", v[i]);
	buf_puts(b, "}");
}

static void
point_row(struct buf *b, const struct otlp_point *p)
{
	bool hist = p->type == OTLP_POINT_HISTOGRAM;

	FIELD(store_copy_time(b, p->time_unix_nano));
	/* gauges have no start (OTLP: start_time_unix_nano is for sums and
	 * histograms), whatever an SDK sends */
	FIELD(p->start_unix_nano != 0 && p->type != OTLP_POINT_GAUGE
		      ? store_copy_time(b, p->start_unix_nano)
		      : buf_puts(b, "\\N"));
	FIELD(store_copy_text(b, p->name));
	FIELD(buf_puts(b, otlp_point_type_name(p->type)));
	FIELD(store_copy_text(b, p->unit));
	FIELD(store_copy_text(b, p->description));
	FIELD(copy_int(b, p->temporality, p->type != OTLP_POINT_GAUGE));
	FIELD(p->type == OTLP_POINT_SUM ? buf_puts(b, p->monotonic ? "t" : "f")
					: buf_puts(b, "\\N"));
	FIELD(copy_double(b, p->is_int ? (double)p->int_value : p->value,
			  !hist));
	FIELD(copy_int(b, (int64_t)p->count, hist));
	FIELD(copy_double(b, p->sum, hist && p->has_sum));
	FIELD(copy_double(b, p->min, hist && p->has_min));
	FIELD(copy_double(b, p->max, hist && p->has_max));
	FIELD(hist ? copy_array_double(b, p->bounds, p->n_bounds)
		   : (void)buf_puts(b, "\\N"));
	FIELD(hist ? copy_array_u64(b, p->bucket_counts, p->n_bucket_counts)
		   : (void)buf_puts(b, "\\N"));
	FIELD(store_copy_text(b, p->service_name != NULL ? p->service_name
							 : "unknown_service"));
	FIELD(store_copy_text(b, p->service_namespace));
	FIELD(store_copy_text(b, p->scope_name));
	FIELD(store_copy_text(b, p->attributes_json != NULL ? p->attributes_json
							    : "{}"));
	LAST(store_copy_text(b, p->resource_json != NULL ? p->resource_json
							 : "{}"));
}

#undef FIELD
#undef LAST

/* A row writer for one batch item: appends, checked by the caller. */
typedef void (*row_fn)(struct buf *b, const void *item);

static void
span_row_fn(struct buf *b, const void *item)
{
	span_row(b, item);
}

static void
point_row_fn(struct buf *b, const void *item)
{
	point_row(b, item);
}

static int
fail(struct pg_error *err, int rc, const char *client, const char *detail)
{
	snprintf(err->client, sizeof(err->client), "%s", client);
	snprintf(err->detail, sizeof(err->detail), "%s", detail);
	err->sqlstate[0] = '\0';
	return rc;
}

/* Staging table, COPY, insert, then after_sql (when not NULL), commit: all
 * or nothing. */
static int
write_rows(struct pg_conn *c, const char *staging, const char *copy_sql,
	   const char *insert_sql, const char *after_sql, const void *items,
	   size_t size, size_t n, row_fn row, int64_t *inserted,
	   struct pg_error *err)
{
	PGresult *res = NULL;
	struct buf b;
	size_t i;
	int64_t copied = 0;
	int rc;
	bool in_copy = false;

	*inserted = 0;
	buf_init(&b, 4 * STORE_COPY_CHUNK);
	if ((rc = pg_begin(c, err)) != STATUS_OK)
		return rc;
	if ((rc = pg_query(c, staging, 0, NULL, &res, err)) != STATUS_OK)
		goto out;
	PQclear(res);
	res = NULL;
	if ((rc = pg_copy_begin(c, copy_sql, err)) != STATUS_OK)
		goto out;
	in_copy = true;
	for (i = 0; i < n; i++) {
		const void *item = (const char *)items + i * size;
		size_t mark = b.len;

		row(&b, item);
		rc = buf_error(&b);
		if (rc == STATUS_LIMIT && mark > 0) {
			/* flush and retry the row in an empty buffer */
			buf_rollback(&b, mark);
			if ((rc = pg_copy_put(c, b.data, b.len, err)) !=
			    STATUS_OK)
				goto out;
			buf_reset(&b);
			row(&b, item);
			rc = buf_error(&b);
		}
		if (rc != STATUS_OK) {
			rc = fail(err, rc, "a row could not be encoded",
				  "store: COPY row encoding failed (too large "
				  "or out of memory)");
			goto out;
		}
		if (b.len >= STORE_COPY_CHUNK) {
			if ((rc = pg_copy_put(c, b.data, b.len, err)) !=
			    STATUS_OK)
				goto out;
			buf_reset(&b);
		}
	}
	if (b.len > 0 && (rc = pg_copy_put(c, b.data, b.len, err)) != STATUS_OK)
		goto out;
	in_copy = false;
	if ((rc = pg_copy_end(c, &copied, err)) != STATUS_OK)
		goto out;
	if ((rc = pg_query(c, insert_sql, 0, NULL, &res, err)) != STATUS_OK)
		goto out;
	*inserted = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	res = NULL;
	if (after_sql != NULL &&
	    (rc = pg_query(c, after_sql, 0, NULL, NULL, err)) != STATUS_OK)
		goto out;
	rc = pg_commit(c, err);
out:
	if (rc != STATUS_OK) {
		struct pg_error ignored;

		if (in_copy)
			(void)!pg_copy_abort(c, &ignored);
		(void)!pg_rollback(c, &ignored);
		*inserted = 0;
	}
	PQclear(res);
	buf_free(&b);
	return rc;
}

int
store_write_spans(struct pg_conn *c, const struct otlp_batch *b,
		  int64_t *inserted, struct pg_error *err)
{
	return write_rows(c, spans_staging, spans_copy, spans_insert,
			  spans_mark_dirty, b->spans, sizeof(*b->spans),
			  b->n_spans, span_row_fn, inserted, err);
}

int
store_write_points(struct pg_conn *c, const struct otlp_batch *b,
		   int64_t *inserted, struct pg_error *err)
{
	return write_rows(c, points_staging, points_copy, points_insert, NULL,
			  b->points, sizeof(*b->points), b->n_points,
			  point_row_fn, inserted, err);
}

/*
 * store.h - writes decoded OTLP batches into the telemetry tables.
 *
 * Rows go in with COPY (never row-by-row INSERT) into a per-connection
 * staging table, then into spans / metric_points in the same transaction;
 * spans are deduplicated on (trace id, span id, source) by the primary key
 * (ON CONFLICT DO NOTHING), so a retried batch is stored once.  Nothing is
 * acknowledged before COMMIT returns.  Uses one pool connection; not
 * thread-safe on that connection (lib/pg rules).
 */
#ifndef SEXTANT_STORE_H
#define SEXTANT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "otlp/otlp.h"
#include "pg/pg.h"

/*
 * Writes the spans of b and commits.  In the same transaction the hours
 * the spans fall in are marked dirty for the rollups (span_rollup_dirty,
 * see rollup.h), so a rollup never hides a late span.  *inserted: rows new to the table
 * (duplicates of stored spans are not counted).  On failure nothing is
 * written (rolled back) and err says why (err->client is safe to send).
 */
int store_write_spans(struct pg_conn *c, const struct otlp_batch *b,
		      int64_t *inserted, struct pg_error *err) WUR;

/* The same for the metric points of b (points are not deduplicated). */
int store_write_points(struct pg_conn *c, const struct otlp_batch *b,
		       int64_t *inserted, struct pg_error *err) WUR;

/*
 * COPY text encoding helpers, exposed for tests: appends v escaped for
 * COPY's text format (NULL -> \N), a bytea as \\x<hex>, and a Unix-nano
 * time as "YYYY-MM-DD HH:MM:SS.uuuuuu+00".  Appends like buf's (buf.h):
 * a failure stays in b (STATUS_INVALID for a time gmtime cannot take),
 * and each returns buf_error(b) after the call.
 */
struct buf;
int store_copy_text(struct buf *b, const char *v);
int store_copy_bytea(struct buf *b, const uint8_t *p, size_t n);
int store_copy_time(struct buf *b, uint64_t unix_nano);

#endif

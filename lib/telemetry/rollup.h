/*
 * rollup.h - span duration histograms and the hourly and one-minute
 * rollups of calls (span_rollup, migrations/0005_span_rollup.sql;
 * span_rollup_minute, migrations/0008_span_rollup_minute.sql; and the
 * five-minute merge of the minute rows per service, span_rollup_5m,
 * migrations/0015_span_rollup_5m.sql): the bucket
 * math shared with the SQL function sextant_duration_bucket(), a histogram
 * to sum rollup rows into and read percentiles from, how a query range is
 * split between hours, minutes and raw spans, and the refresh and pruning
 * of the rollup tables.  Schema and rules: docs/schema.md.
 */
#ifndef SEXTANT_ROLLUP_H
#define SEXTANT_ROLLUP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/* Relative accuracy of a bucket's value (DDSketch alpha). */
#define ROLLUP_ALPHA 0.005
/* A rollup period: one hour, starting on the hour (UTC). */
#define ROLLUP_PERIOD_S 3600
/* A minute rollup period: one minute, starting on the minute (UTC). */
#define ROLLUP_MINUTE_S 60
/* A span_rollup_5m period: five minutes, starting on a multiple of five
 * minutes since the epoch (UTC); an hour holds a whole number of them. */
#define ROLLUP_5M_S 300
/* A period is refreshed only once it ended this long ago (late spans). */
#define ROLLUP_SETTLE_S 120
/* Highest bucket index: the bucket of INT64_MAX ns is 4367, so every
 * duration fits. */
#define ROLLUP_BUCKET_MAX 4400

/*
 * SQL: a condition that every span meets, naming both sources (the only
 * two the table admits, spans_source_check), so that a time range over
 * all services can be served by the (source, start_time) btree.  Without
 * it, the one index on start_time alone is BRIN, whose block ranges stay
 * unsummarized after a bulk load until the next VACUUM: a bitmap scan
 * over it then reads the whole partition, once for every range scanned.
 * Used by the refresh and by the queries that read every service's raw
 * spans (lib/telemetry/servicequery).
 */
#define ROLLUP_ALL_SOURCES "source IN ('ebpf', 'otlp') "

/* The start (Unix ms) of the rollup period, the UTC hour, holding ms. */
int64_t rollup_period_floor(int64_t ms);

/* The start (Unix ms) of the UTC minute holding ms. */
int64_t rollup_minute_floor(int64_t ms);

/*
 * How a query range [from, to) is read as of now (Unix ms):
 *   raw spans      [from, minute_from)
 *   minute rows    [minute_from, hour_from)
 *   hour rows      [hour_from, hour_to)
 *   minute rows    [hour_to, minute_to)
 *   raw spans      [minute_to, to)
 * minute_from..minute_to are the whole minutes inside the range that have
 * settled (ended ROLLUP_SETTLE_S before now), hour_from..hour_to the whole
 * settled hours inside those; an empty part has from == to (no hours:
 * hour_from == hour_to == minute_to).  The queries read a period from its
 * rollup rows only when it is also clean (no row in its dirty table), and
 * fall back to the minutes of a dirty hour and the raw spans of a dirty
 * minute (docs/schema.md).
 */
struct rollup_split {
	int64_t minute_from, minute_to;
	int64_t hour_from, hour_to;
};

/*
 * Fills *out for [from_ms, to_ms) as of now_ms.  Returns true when the
 * range holds at least one whole settled minute (the rollup path applies);
 * false otherwise, also for from_ms >= to_ms, with every field of *out
 * set to from_ms.  Pure; out must not be NULL.
 */
bool rollup_split_range(int64_t from_ms, int64_t to_ms, int64_t now_ms,
			struct rollup_split *out);

/*
 * Bucket index of a duration in ns: 0 for <= 0, else
 * max(1, ceil(ln(d) / ln(gamma))) with gamma = (1 + ALPHA) / (1 - ALPHA),
 * computed in double precision exactly as sextant_duration_bucket() does.
 * Always 0..ROLLUP_BUCKET_MAX.
 */
int rollup_bucket(int64_t duration_ns);

/* A bucket's value in ns: 0 for bucket 0 (and below), else
 * 2 gamma^i / (gamma + 1), within ALPHA (relative) of every duration in
 * the bucket. */
double rollup_bucket_value(int bucket);

/*
 * A histogram being summed: bucket -> count.  Memory covers the range of
 * buckets used so far (at most ROLLUP_BUCKET_MAX + 1 counts), so a sum of
 * thousands of rollup rows costs a few array additions per bucket.  Not
 * thread-safe: one thread at a time per histogram.
 */
struct rollup_hist;

/* An empty histogram; NULL on ENOMEM.  Free with rollup_hist_free. */
struct rollup_hist *rollup_hist_new(void);
void rollup_hist_free(struct rollup_hist *h); /* accepts NULL */

/*
 * Adds count calls to bucket.  STATUS_INVALID for a NULL h, bucket < 0 or
 * > ROLLUP_BUCKET_MAX, count < 0; STATUS_LIMIT when the total would pass
 * INT64_MAX; STATUS_NOMEM.  On error h is unchanged.
 */
int rollup_hist_add(struct rollup_hist *h, int bucket, int64_t count) WUR;

/*
 * Adds a rollup row's arrays in PostgreSQL's text form: buckets "{1,5,9}"
 * and counts "{3,1,2}" (PostgreSQL's output for integer[] and bigint[]:
 * no spaces, no NULL elements; "{}" is empty).  A bare integer ("5") is
 * taken as a one-element array, so the rows of a GROUP BY on
 * sextant_duration_bucket() can be added as they come.  STATUS_INVALID on
 * NULL or malformed text, unequal lengths, or an element out of range (as
 * rollup_hist_add); STATUS_LIMIT, STATUS_NOMEM as rollup_hist_add.  All or
 * nothing: on error h is unchanged.
 */
int rollup_hist_add_text(struct rollup_hist *h, const char *buckets,
			 const char *counts) WUR;

/* Calls in the histogram (0 for NULL). */
int64_t rollup_hist_count(const struct rollup_hist *h);

/*
 * Continuous percentile in ns, like PostgreSQL's percentile_cont (linear
 * interpolation between the closest ranks), over the bucket values; q is
 * clamped to [0, 1] (NaN counts as 0).  0 when empty.  Within ROLLUP_ALPHA
 * (relative) of percentile_cont over the raw durations: the k-th smallest
 * bucket value is within ALPHA of the k-th smallest duration, and the
 * interpolation keeps that bound.
 */
double rollup_hist_quantile(const struct rollup_hist *h, double q);

/*
 * Recomputes what is dirty and settled, oldest first, in units of work,
 * at most max_units per call (0 = no limit), each unit in its own
 * transaction:
 *   - the minutes of one hour H: the rows of span_rollup_minute_dirty in
 *     H whose minute M has settled (M + 60 s + ROLLUP_SETTLE_S < now())
 *     and are all older than 60 s (a mark written later holds that minute
 *     back for a later call): their marks and span_rollup_minute rows are
 *     deleted and the aggregate of span_calls over those minutes inserted;
 *     then the span_rollup_5m rows of the 5-minute periods holding them
 *     are deleted and computed again from span_rollup_minute (histograms
 *     merged per service, source, protocol and outcome), in the same
 *     transaction, so a 5-minute row always equals the merge of its
 *     minute rows;
 *   - one hour P of span_rollup_dirty, settled (P + 1 h + ROLLUP_SETTLE_S
 *     < now()) with every mark older than 60 s: its marks and span_rollup
 *     rows are deleted and the aggregate of span_calls over [P, P + 1 h)
 *     inserted.
 * Minute units go first: they serve live ranges and the minutes of dirty
 * hours.  Each unit reads at most one hour of spans.  A transaction
 * advisory lock (key "SEXTANT" 0x03, 6000299197437203459) keeps two
 * refreshers (two gateways) from working at once: the one that finds it
 * taken stops, with STATUS_OK.
 *
 * *done: units refreshed by this call, also on failure.  *pending (may be
 * NULL): units left afterwards (settled dirty hours, and hours with a
 * settled dirty minute), those held back by a young mark included; 0 on
 * failure.  c (borrowed) must be idle (not in a transaction) and is left
 * idle.  Statements run under c's statement timeout: a unit's aggregate
 * scans up to an hour of spans, so callers refreshing a large store raise
 * it with pg_set_timeout.
 * Errors: STATUS_INVALID (bad arguments), those of pg_query (err says why;
 * a store not migrated to 0008 fails with STATUS_IO).
 */
int rollup_refresh(struct pg_conn *c, int max_units, int *done, int *pending,
		   struct pg_error *err) WUR;

/*
 * rollup_refresh with no limit, for `sextant maintain`, whose operator
 * expects the rollups current when it returns: a unit that another
 * refresher (a gateway's janitor) holds the lock for is waited for, under
 * c's statement timeout, instead of ending the call with the units after
 * it left as they were.
 * *done, *pending, c and errors as rollup_refresh.
 */
int rollup_refresh_wait(struct pg_conn *c, int *done, int *pending,
			struct pg_error *err) WUR;

/*
 * rollup_refresh without waiting for the marks to age, for a writer that
 * has just committed a bulk load and wants the rollups current before
 * anything reads them (`sextant demo-data`): every settled dirty unit, no
 * limit, each in its own transaction; a unit's marks are taken whatever
 * their slot, and it is recomputed only if no other transaction was in
 * progress once they were deleted (a writer that found one of them may
 * not have committed yet; one that comes later waits for the delete and
 * marks again).  Otherwise, or when another refresher holds the lock,
 * the unit is left as it was, for a later call or the janitor.  Needs c
 * in READ COMMITTED, the default: the aggregate must see what committed
 * after the check.
 * *done, *pending, c and errors as rollup_refresh.
 */
int rollup_refresh_fenced(struct pg_conn *c, int *done, int *pending,
			  struct pg_error *err) WUR;

/* Rows a partition must have changed by before rollup_analyze takes it
 * (besides a tenth of its size, autovacuum's own rule). */
#define ROLLUP_ANALYZE_MIN_ROWS 1000

/*
 * Statistics after bulk writes, so that the planner is not left blind
 * until autovacuum comes by (it may be off, or a minute away): ANALYZE of
 * each partition (or TimescaleDB chunk) of spans and metric_points whose
 * rows changed by ROLLUP_ANALYZE_MIN_ROWS and a tenth of its size since
 * its last ANALYZE, and the summary of the new block ranges of its BRIN
 * indexes (brin_summarize_new_values: otherwise left to VACUUM).  Run by
 * the rollup janitor after it recomputed hours, and by `sextant
 * demo-data`.  *analyzed: partitions taken, also on failure.  c
 * (borrowed) idle, left idle; each ANALYZE is its own transaction and
 * waits for a VACUUM or ANALYZE of the same partition.
 * Errors: STATUS_INVALID (bad arguments), those of pg_query.
 */
int rollup_analyze(struct pg_conn *c, int *analyzed, struct pg_error *err) WUR;

/*
 * Deletes the rows of span_rollup, span_rollup_minute, span_rollup_5m,
 * edge_rollup, edge_rollup_minute, resource_rollup_minute and the dirty
 * tables whose period ended before now() - retention_days (1..3650), the
 * cutoff of sextant_drop_expired().  Called by partition upkeep.  c (borrowed) idle.
 * Errors: STATUS_INVALID (bad arguments), those of pg_query.
 */
int rollup_prune(struct pg_conn *c, int retention_days,
		 struct pg_error *err) WUR;

#endif

/*
 * migrate.h - applies Sextant's schema (migrations/NNNN_name.sql, embedded
 * in the binary) to a PostgreSQL database, and keeps the day partitions of
 * the time tables (spans, metric_points) current.  Schema: docs/schema.md.
 *
 * Works on a libpq connection the caller owns and does not share while a
 * call runs (one thread per PGconn).  Both calls need the connection idle
 * (not inside a transaction) and leave it idle.  Messages in err are for
 * the operator (a CLI or the start-up log): they may quote PostgreSQL's
 * message, never SQL text or connection details.
 */
#ifndef SEXTANT_MIGRATE_H
#define SEXTANT_MIGRATE_H

#include <stddef.h>

#include <libpq-fe.h>

#include "base/status.h"

/* [database] timescaledb. */
enum migrate_timescaledb {
	MIGRATE_TIMESCALEDB_AUTO = 0, /* use it when CREATE EXTENSION works */
	MIGRATE_TIMESCALEDB_ON,	      /* require it; fail without it */
	MIGRATE_TIMESCALEDB_OFF,      /* native partitioning regardless */
};

/* Bounds of retention_days and days_ahead (the config keys share them). */
#define MIGRATE_RETENTION_DAYS_MIN 1
#define MIGRATE_RETENTION_DAYS_MAX 3650
#define MIGRATE_DAYS_AHEAD_MAX	   366

struct migrate_opts {
	enum migrate_timescaledb timescaledb;
	/* 1..3650: the TimescaleDB retention policy (set or updated here);
	 * on plain PostgreSQL only migrate_maintain() drops data */
	int retention_days;
	/* 0..366: day partitions created beyond today (plain PostgreSQL) */
	int days_ahead;
};

/* "auto" | "on" | "off" to the enum; -1 for NULL or anything else. */
int migrate_timescaledb_parse(const char *s);

/* Number of migrations embedded in this binary. */
size_t migrate_count(void);

/*
 * Brings the database to this binary's schema:
 *   1. takes a session advisory lock (key "SEXTANT" 0x01, 6000299197437203457)
 *      so that gateways migrating at once run one after the other; waits
 *      for it as long as the connection's statement_timeout allows;
 *   2. creates schema_migrations (version, name, applied_at, checksum) if
 *      it is missing;
 *   3. checks every recorded migration: one this binary does not embed, or
 *      whose SHA-256 differs from the embedded file, is an error
 *      (STATUS_INVALID) and nothing is applied;
 *   4. for a new store, chooses TimescaleDB or native partitioning from
 *      opts->timescaledb (AUTO: TimescaleDB when CREATE EXTENSION
 *      timescaledb succeeds); an existing store keeps its choice, and an
 *      explicit ON / OFF that contradicts it is STATUS_INVALID;
 *   5. applies each migration not yet recorded, in version order, each in
 *      its own transaction together with its schema_migrations row
 *      (statement_timeout off inside it: DDL on a large table may be slow);
 *   6. creates the day partitions for yesterday .. today + days_ahead and sets
 *      the TimescaleDB retention policy to retention_days (no-ops where
 *      they do not apply).  It never drops data itself.
 * *applied: migrations applied by this call, also on failure (those stay
 * applied; the failing one is rolled back).  0 when already current.
 * Errors: STATUS_INVALID (bad arguments, connection inside a transaction,
 * checksum or version mismatch, contradicting timescaledb setting),
 * STATUS_UNSUPPORTED (timescaledb ON but unavailable), STATUS_IO (the
 * connection failed or PostgreSQL refused a statement).  err (may be NULL)
 * says which migration and why.  The lock is released before returning.
 */
int migrate_apply(PGconn *conn, const struct migrate_opts *opts, int *applied,
		  char *err, size_t errlen) WUR;

/*
 * Partition upkeep, run periodically (`sextant maintain`, a task in
 * `serve`).  Plain PostgreSQL: creates the day partitions for yesterday ..
 * today + days_ahead (0..366) and drops those wholly older than
 * now - retention_days (1..3650), deleting rows that old from the DEFAULT
 * partitions; each step in its own transaction with a lock_timeout
 * (MIGRATE_LOCK_TIMEOUT_MS), so a long query on a time table delays
 * maintenance instead of stalling inserts behind it.  TimescaleDB: only
 * keeps the retention policy equal to retention_days; its jobs do the rest.
 * Errors: STATUS_INVALID (bad arguments, schema not migrated yet),
 * STATUS_TIMEOUT (a lock was not granted in time; try again later),
 * STATUS_IO (connection or statement failure).
 */
int migrate_maintain(PGconn *conn, int retention_days, int days_ahead,
		     char *err, size_t errlen) WUR;

/* How long maintenance waits for a time table's lock: DDL on a partition
 * queues behind running queries, and every new query queues behind it. */
#define MIGRATE_LOCK_TIMEOUT_MS 5000

#endif

/*
 * storetest.h - a migrated telemetry store for unit tests of lib/ store
 * queries: a pgtest cluster, every migration applied, and a pool on it.
 * Header-only, like pgtest.h (each unit test is linked from one .c file).
 */
#ifndef SEXTANT_STORETEST_H
#define SEXTANT_STORETEST_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/log.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pgtest.h"

struct storetest {
	struct pgtest_cluster cluster;
	struct pg_pool *pool;
};

/* Starts the cluster, migrates it (7 days kept, 1 day ahead) and opens a
 * pool of size connections with a 30 s statement timeout.  0, or -1 with
 * the reason on stderr (for a cmocka group setup). */
static int
storetest_start(struct storetest *st, int size)
{
	struct pg_pool_config pc = {.size = size,
				    .statement_timeout_ms = 30000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	char err[512];
	PGconn *pq;
	int applied;

	if (pgtest_start(&st->cluster) != 0)
		return -1;
	pq = PQconnectdb(st->cluster.conninfo);
	if (PQstatus(pq) != CONNECTION_OK ||
	    migrate_apply(pq, &opts, &applied, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(pq));
		PQfinish(pq);
		return -1;
	}
	PQfinish(pq);
	pc.conninfo = st->cluster.conninfo;
	if (pg_pool_new(&pc, &st->pool, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(st->pool, 10000, &perr) != STATUS_OK) {
		fprintf(stderr, "pool: %s %s\n", perr.client, perr.detail);
		return -1;
	}
	return 0;
}

static void
storetest_stop(struct storetest *st)
{
	pg_pool_free(st->pool);
	st->pool = NULL;
	pgtest_destroy(&st->cluster);
}

/* A leased connection (the test fails when there is none in 10 s). */
static struct pg_conn *
storetest_conn(struct storetest *st)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	if (pg_acquire(st->pool, NULL, 10000, &c, &err) != STATUS_OK)
		fail_msg("pg_acquire: %s (%s)", err.client, err.detail);
	return c;
}

/* The wall clock, ms since the epoch: a store test's "now". */
static inline int64_t
storetest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A cmocka group setup's opening: warnings only in the log, the store
 * started with 2 connections, *now_ms the wall clock then (unless NULL),
 * and *state st (for storetest_teardown, which runs even when the start
 * failed).  A leased connection to fill the store, or NULL when it did not
 * start (the setup returns -1). */
static inline struct pg_conn *
storetest_setup(struct storetest *st, void **state, int64_t *now_ms)
{
	log_set_level(LOG_LEVEL_WARN);
	*state = st;
	if (storetest_start(st, 2) != 0)
		return NULL;
	if (now_ms != NULL)
		*now_ms = storetest_now_ms();
	return storetest_conn(st);
}

/* The group teardown of a group set up with storetest_setup. */
static inline int
storetest_teardown(void **state)
{
	storetest_stop(*state);
	return 0;
}

/* Runs sql on c, the test failing (with the statement) when it fails;
 * with at >= 0, $1 is at as a timestamptz (the test's "now"). */
static inline void
storetest_exec(struct pg_conn *c, const char *sql, int64_t at)
{
	char now[PG_TS_TEXT_MAX];
	const char *v[1] = {now};
	struct pg_error err;

	if (at >= 0)
		pg_ts_text(at, now, sizeof(now));
	if (pg_query(c, sql, at >= 0 ? 1 : 0, at >= 0 ? v : NULL, NULL, &err) !=
	    STATUS_OK)
		fail_msg("sql: %s (%s)\n%s", err.client, err.detail, sql);
}

#endif

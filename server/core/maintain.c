/*
 * maintain.c - the store's upkeep: migrations (`sextant migrate`, and at
 * start-up with database.auto_migrate), day partitions and rollups
 * (`sextant maintain`, and the janitor's share of the tick while serving).
 */
#include "core/maintain.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "core/server.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "telemetry/rollup.h"

/*
 * The longest a migration or the upkeep waits for a lock: a table a client
 * keeps locked (a long ALTER, a LOCK TABLE, a stuck transaction) holds up
 * neither the start nor the janitor; the step fails with the lock's name
 * and is tried again at the next tick or interval.
 */
#define MAINTAIN_LOCK_TIMEOUT "5s"

static PGconn *
db_connect(const struct config *cfg, char *err, size_t errlen)
{
	const char *keys[] = {"dbname", "connect_timeout", "application_name",
			      NULL};
	const char *vals[] = {cfg->database.url, "5", "sextant-migrate", NULL};
	PGconn *conn = PQconnectdbParams(keys, vals, 1);
	PGresult *res;

	if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
		snprintf(err, errlen, "cannot connect to the database: %s",
			 conn != NULL ? PQerrorMessage(conn) : "out of memory");
		err[strcspn(err, "\n")] = '\0';
		PQfinish(conn);
		return NULL;
	}
	res = PQexec(conn, "SET lock_timeout = '" MAINTAIN_LOCK_TIMEOUT "'");
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		snprintf(err, errlen, "cannot set lock_timeout: %s",
			 PQerrorMessage(conn));
		err[strcspn(err, "\n")] = '\0';
		PQclear(res);
		PQfinish(conn);
		return NULL;
	}
	PQclear(res);
	return conn;
}

int
maintain_migrate(const struct config *cfg, int *applied, char *err,
		 size_t errlen)
{
	struct migrate_opts opts = {
		.timescaledb =
			migrate_timescaledb_parse(cfg->database.timescaledb),
		.retention_days = cfg->database.retention_days,
		.days_ahead = cfg->database.partition_days_ahead,
	};
	PGconn *conn = db_connect(cfg, err, errlen);
	int rc;

	*applied = 0;
	if (conn == NULL)
		return STATUS_IO;
	rc = migrate_apply(conn, &opts, applied, err, errlen);
	PQfinish(conn);
	return rc;
}

/* The day partitions: create upcoming ones, drop expired ones. */
static int
partition_upkeep(const struct config *cfg, char *err, size_t errlen)
{
	PGconn *conn = db_connect(cfg, err, errlen);
	int rc;

	if (conn == NULL)
		return STATUS_IO;
	rc = migrate_maintain(conn, cfg->database.retention_days,
			      cfg->database.partition_days_ahead, err, errlen);
	PQfinish(conn);
	return rc;
}

/*
 * The rollup janitor (lib/telemetry/rollup): recomputes the settled dirty periods of
 * span_rollup on a worker of srv->pool, never on the tick thread, and
 * never two runs at once (busy).  It looks for work every ROLLUP_CHECK_MS;
 * while a backlog remains (a day of spans after demo-data, a store just
 * migrated to 0005) it runs again at the next tick.  A run refreshes at
 * most ROLLUP_RUN_PERIODS periods, one transaction each (about a second
 * for an hour of a large store), and stops between two when the server
 * drains, so it never holds a shutdown for long.  The state is static:
 * a process serves with one server at a time (server_free waits for the
 * worker pool, so a run never outlives its server).
 */
#define ROLLUP_RUN_PERIODS 4
#define ROLLUP_CHECK_MS	   5000
#define ROLLUP_RETRY_MS	   60000  /* after a failed run */
#define ROLLUP_TIMEOUT_MS  600000 /* statement timeout of a refresh */
#define ROLLUP_ACQUIRE_MS  1000	  /* the pool is busy: try next time */

static struct {
	struct pool_job job;
	struct server *srv;
	atomic_bool busy; /* a run is queued or running */
	/* Owned by the run while busy, by the tick thread otherwise (the
	 * run writes them before it clears busy). */
	int64_t next_ms;
	bool backlog;	  /* periods were left after a run */
	int backlog_done; /* periods refreshed since then */
	bool failing;	  /* the last run failed (logged once) */
} rollup_janitor;

/* rollup_analyze on c; a failure is logged, the run goes on. */
static void
analyze(struct pg_conn *c)
{
	struct log_fields f = {.duration_ms = -1};
	struct pg_error err = {0};
	int n = 0;

	if (rollup_analyze(c, &n, &err) != STATUS_OK)
		log_warn(&f, "analyzing changed partitions failed: %s (%s)",
			 err.client, err.detail);
	else if (n > 0)
		log_info(&f, "analyzed %d partition(s) after bulk writes", n);
}

static void
rollup_run(struct pool_job *job)
{
	struct server *srv = rollup_janitor.srv;
	struct log_fields f = {.duration_ms = -1};
	struct pg_conn *c = NULL;
	struct pg_error err = {0};
	int64_t wait_ms = ROLLUP_CHECK_MS;
	int rc, done = 0, pending = 0;
	bool acquired;

	(void)job;
	rc = pg_acquire(srv->pg, NULL, ROLLUP_ACQUIRE_MS, &c, &err);
	acquired = rc == STATUS_OK;
	if (rc == STATUS_OK)
		rc = pg_set_timeout(c, ROLLUP_TIMEOUT_MS, &err);
	/* one period per call, so that a drain stops the run between two */
	while (rc == STATUS_OK && done < ROLLUP_RUN_PERIODS &&
	       !atomic_load(&srv->draining)) {
		int n = 0;

		rc = rollup_refresh(c, 1, &n, &pending, &err);
		done += n;
		if (n == 0)
			break;
	}
	/* hours recomputed mean spans were written: a bulk load (an OTLP
	 * backfill) must not leave the planner blind until autovacuum */
	if (rc == STATUS_OK && done > 0)
		analyze(c);
	pg_release(c);
	if (rc == STATUS_TIMEOUT && !acquired) {
		log_debug(&f, "rollup refresh: no free connection, later");
	} else if (rc != STATUS_OK) {
		if (!rollup_janitor.failing)
			log_warn(&f,
				 "rollup refresh failed, retrying every %d s: "
				 "%s (%s)",
				 ROLLUP_RETRY_MS / 1000, err.client,
				 err.detail);
		rollup_janitor.failing = true;
		wait_ms = ROLLUP_RETRY_MS;
	} else {
		if (rollup_janitor.failing)
			log_info(&f, "rollup refresh works again");
		rollup_janitor.failing = false;
		if (pending > 0 && done > 0 && !rollup_janitor.backlog) {
			rollup_janitor.backlog = true;
			rollup_janitor.backlog_done = 0;
			log_info(&f,
				 "rollup: %d hour(s) of spans to recompute, "
				 "working through them in the background",
				 done + pending);
		}
		if (rollup_janitor.backlog) {
			rollup_janitor.backlog_done += done;
			if (pending == 0) {
				log_info(&f,
					 "rollup backlog finished: %d hour(s) "
					 "recomputed",
					 rollup_janitor.backlog_done);
				rollup_janitor.backlog = false;
			}
		} else if (done > 0) {
			log_debug(&f, "rollup: %d hour(s) recomputed", done);
		}
		if (pending > 0 && done > 0)
			wait_ms = 0; /* more to do: the next tick */
	}
	rollup_janitor.next_ms = clock_mono_ms() + wait_ms;
	atomic_store(&rollup_janitor.busy, false);
}

/* From the tick: queues a run when one is due and none is under way. */
static void
rollup_tick(struct server *srv)
{
	if (atomic_load(&rollup_janitor.busy) ||
	    clock_mono_ms() < rollup_janitor.next_ms ||
	    atomic_load(&srv->draining))
		return;
	rollup_janitor.srv = srv;
	rollup_janitor.job.run = rollup_run;
	atomic_store(&rollup_janitor.busy, true);
	if (pool_submit(srv->pool, &rollup_janitor.job) != STATUS_OK) {
		/* queue full of tool calls, or closing: they go first */
		rollup_janitor.next_ms = clock_mono_ms() + ROLLUP_CHECK_MS;
		atomic_store(&rollup_janitor.busy, false);
	}
}

/* `sextant maintain`: expired rollup rows go, and every settled dirty
 * period is recomputed, on a connection of its own. */
static int
rollup_maintain_all(const struct config *cfg, char *err, size_t errlen)
{
	struct pg_pool_config pc = {
		.conninfo = cfg->database.url,
		.size = 1,
		.statement_timeout_ms = ROLLUP_TIMEOUT_MS,
	};
	struct pg_pool *pool = NULL;
	struct pg_conn *c = NULL;
	struct pg_error perr = {0};
	int rc, done = 0, pending = 0;

	rc = pg_pool_new(&pc, &pool, &perr);
	if (rc == STATUS_OK)
		rc = pg_pool_wait_ready(pool, 10000, &perr);
	if (rc == STATUS_OK)
		rc = pg_acquire(pool, NULL, -1, &c, &perr);
	if (rc == STATUS_OK)
		rc = rollup_prune(c, cfg->database.retention_days, &perr);
	if (rc == STATUS_OK)
		rc = rollup_refresh_wait(c, &done, &pending, &perr);
	if (rc != STATUS_OK)
		snprintf(err, errlen,
			 "rollup maintenance failed after %d hour(s): %s (%s)",
			 done, perr.client, perr.detail);
	else
		log_info(&(struct log_fields){.duration_ms = -1},
			 "rollup: %d hour(s) recomputed%s", done,
			 pending > 0 ? "; some hours had writes in the last "
				       "minute and wait for the next run"
				     : "");
	pg_release(c);
	pg_pool_free(pool);
	return rc;
}

int
maintain_all(const struct config *cfg, char *err, size_t errlen)
{
	int rc = partition_upkeep(cfg, err, errlen);

	if (rc == STATUS_OK)
		rc = rollup_maintain_all(cfg, err, errlen);
	return rc;
}

/*
 * The upkeep janitor: the migrations a database that was down at start-up
 * still needs, then every database.maintain_interval_s the day partitions
 * (plain PostgreSQL) and the pruning of the rollup with the same
 * retention.  Like the rollup janitor it runs on a worker of srv->pool,
 * never on the tick thread, which must stay free to end overdue calls and
 * send keep-alives while a statement waits (a migration or a partition
 * behind a table lock: MAINTAIN_LOCK_TIMEOUT bounds that wait, so a drain
 * is never held for long either).  srv->migrated is written by the run
 * and read by the tick.
 */
static struct {
	struct pool_job job;
	struct server *srv;
	atomic_bool busy; /* a run is queued or running */
	int64_t next_ms;  /* the next upkeep; owned like rollup_janitor's */
} upkeep_janitor;

static void
upkeep(struct server *srv)
{
	struct log_fields f = {.duration_ms = -1};
	struct pg_conn *c = NULL;
	struct pg_error perr = {0};
	char err[512];

	if (partition_upkeep(srv->cfg, err, sizeof(err)) != STATUS_OK)
		log_warn(&f, "partition upkeep failed: %s", err);
	if (pg_acquire(srv->pg, NULL, -1, &c, &perr) != STATUS_OK ||
	    rollup_prune(c, srv->cfg->database.retention_days, &perr) !=
		    STATUS_OK)
		log_warn(&f, "rollup pruning failed: %s (%s)", perr.client,
			 perr.detail);
	pg_release(c);
}

static void
upkeep_run(struct pool_job *job)
{
	struct server *srv = upkeep_janitor.srv;

	(void)job;
	/* A database that was down at start-up gets its migrations when it
	 * comes back, without a restart. */
	if (!atomic_load(&srv->migrated) && srv->cfg->database.auto_migrate) {
		char err[512];
		int applied = 0;

		if (maintain_migrate(srv->cfg, &applied, err, sizeof(err)) ==
		    STATUS_OK) {
			atomic_store(&srv->migrated, true);
			log_info(&(struct log_fields){.duration_ms = -1},
				 "migrations applied on retry: %d", applied);
		}
	}
	if (atomic_load(&srv->migrated) &&
	    clock_mono_ms() >= upkeep_janitor.next_ms) {
		upkeep(srv);
		upkeep_janitor.next_ms =
			clock_mono_ms() +
			(int64_t)srv->cfg->database.maintain_interval_s * 1000;
	}
	atomic_store(&upkeep_janitor.busy, false);
}

/* From the tick: queues an upkeep run when one is due and none is under
 * way (a full queue: the next tick tries again). */
static void
upkeep_tick(struct server *srv)
{
	if (atomic_load(&upkeep_janitor.busy) || atomic_load(&srv->draining))
		return;
	if (atomic_load(&srv->migrated)
		    ? clock_mono_ms() < upkeep_janitor.next_ms
		    : !srv->cfg->database.auto_migrate)
		return;
	upkeep_janitor.srv = srv;
	upkeep_janitor.job.run = upkeep_run;
	atomic_store(&upkeep_janitor.busy, true);
	if (pool_submit(srv->pool, &upkeep_janitor.job) != STATUS_OK)
		atomic_store(&upkeep_janitor.busy, false);
}

void
maintain_tick(struct server *srv)
{
	if (srv->pg == NULL || !pg_pool_ready(srv->pg))
		return;
	upkeep_tick(srv);
	if (atomic_load(&srv->migrated))
		rollup_tick(srv);
}

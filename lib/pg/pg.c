/*
 * pg.c - the libpq connection pool: slots, leases, a maintainer thread that
 * connects, health-checks and reconnects, and statements run in libpq's
 * nonblocking mode so that every wait on the network has a deadline.
 *
 * Locking rules
 * -------------
 * - pool->mu guards the slot states (struct pg_conn.state), in_use,
 *   ready, attempted, stopping, the backoff fields and last_error.  It is
 *   never held across network I/O or a libpq call that may block.
 * - A slot's libpq objects (conn, cancel) and its lease fields belong to
 *   whoever moved the slot out of SLOT_IDLE / SLOT_DOWN: the lessee
 *   (SLOT_BUSY) or the maintainer (SLOT_CONNECTING, SLOT_CHECKING).  The
 *   state change under pool->mu is what hands them over, so one thread at
 *   a time ever touches a PGconn.
 * - Acquirers that find no idle slot wait in pool->queue, first come first
 *   served: a slot that becomes idle while the queue is not empty is not
 *   made idle but handed to the waiter at its head (slot_idle: state
 *   SLOT_BUSY, waiter->granted), whose own condition variable is
 *   signalled.  So no later acquirer can take it first, and a waiter is
 *   woken only for its own slot.  pool->mu guards the queue and every
 *   waiter's fields.  A waiter is woken too when its token is cancelled,
 *   when the pool stops, and when it stops being ready.
 * - pool->slot_cv is broadcast when ready, attempted or stopping change
 *   (pg_pool_wait_ready waits on it) and when the last waiter leaves a
 *   stopping pool (pool_destroy waits for that); pool->maint_cv is
 *   signalled when a slot goes down or on stop.  All use CLOCK_MONOTONIC.
 * - A cancel token's mutex guards its list of leased connections and the
 *   pool its acquirers wait in.  A connection is linked from pg_acquire to
 *   pg_release; pg_cancel calls PQcancel on each linked connection under
 *   the token mutex, so the PGcancel it uses cannot be freed meanwhile
 *   (pg_release unlinks under the same mutex before freeing anything).
 *   pg_cancel wakes the token's waiters by taking pool->mu while it holds
 *   the token mutex: that is the one order both are held in, never
 *   pool->mu first.
 * - The stop pipe becomes readable once, at pg_pool_free, to break the
 *   maintainer out of a connection attempt.
 * - Counters are relaxed atomics, bumped by whichever thread sees the
 *   event.
 */
#include "pg/pg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"

/* Idle connections are checked this often: a database that went away is
 * noticed (and /readyz turns false) within about this long. */
#define PG_CHECK_INTERVAL_MS 500
/* The client gives the server as long again as the statement timeout,
 * within these bounds, before it declares the connection dead: the server
 * enforces the timeout itself, so only a hung server or network gets
 * there. */
#define PG_GRACE_MIN_MS 1000
#define PG_GRACE_MAX_MS 5000
/* Bound on the rollback and reset done by pg_release. */
#define PG_RESET_TIMEOUT_MS 5000
/* COPY data is handed to libpq and flushed in pieces of at most this
 * size, which bounds what libpq buffers for a large load. */
#define PG_COPY_CHUNK (256 * 1024)
/* Backoff doublings before the cap applies regardless (2^20 x 100 ms). */
#define PG_BACKOFF_SHIFT_MAX 20

static const char MSG_UNAVAILABLE[] =
	"the telemetry database is unavailable; try again later";
static const char MSG_CANCELLED[] = "the query was cancelled";
static const char MSG_REJECTED[] =
	"the telemetry database rejected a value in the request";
static const char MSG_FAILED[] =
	"the telemetry database could not run the query";
static const char MSG_CLOSED[] = "the telemetry database pool is shut down";
static const char MSG_ROLLED_BACK[] =
	"the transaction was rolled back; try again";

static const char SET_TIMEOUT_SQL[] =
	"SELECT pg_catalog.set_config('statement_timeout', $1, false)";
/* pg_stmt.generic: for the rest of the transaction, which the statement's
 * Sync ends unless the caller opened one */
static const char GENERIC_PLAN_SQL[] = "SELECT pg_catalog.set_config("
				       "'plan_cache_mode', "
				       "'force_generic_plan', true)";
/* pg_send_prepared_within: the same, with a statement timeout too.  The
 * server stops the statement timer when an Execute completes and starts it
 * afresh at the next message: the statement after it runs under this. */
static const char GENERIC_WITHIN_SQL[] =
	"SELECT pg_catalog.set_config('plan_cache_mode', "
	"'force_generic_plan', true), "
	"pg_catalog.set_config('statement_timeout', $1, true)";
static const char WITHIN_SQL[] =
	"SELECT pg_catalog.set_config('statement_timeout', $1, true)";

enum slot_state {
	SLOT_DOWN,	 /* no connection; the maintainer will open one */
	SLOT_CONNECTING, /* the maintainer is opening one */
	SLOT_IDLE,	 /* connected, free */
	SLOT_CHECKING,	 /* connected, the maintainer is checking it */
	SLOT_BUSY,	 /* leased */
};

struct pg_conn {
	struct pg_pool *pool;
	enum slot_state state; /* pool->mu */
	bool ever_connected;   /* pool->mu */
	bool claimed;	       /* maintainer only: part of a check round */
	/* The owner's (see the locking rules). */
	PGconn *conn;
	PGcancel *cancel;
	bool broken;	/* lost or in an unknown protocol state */
	bool fatal;	/* the server sent a FATAL notice: it is closing */
	bool in_copy;	/* between pg_copy_begin and its end */
	int timeout_ms; /* statement timeout in force on the server */
	/* Names of the statements prepared in this session (pg_stmt.name,
	 * static strings); emptied when the session is replaced. */
	const char *prepared[PG_PREPARED_MAX];
	int n_prepared;
	bool running_prepared; /* the statement in flight is a named one */
	/* A named statement sent in pipeline mode (pg_send_prepared): the
	 * results of pipe_before steps (its Parse, the plan mode) come
	 * before its own, then the Sync; preparing is the name its Parse
	 * makes, NULL when it was known. */
	bool in_pipeline;
	int pipe_before;
	const char *preparing;
	int64_t deadline_ms; /* client deadline of the statement running */
	struct pg_cancel_token *token;
	/* The token's mutex. */
	struct pg_conn *token_next;
	atomic_bool cancel_sent; /* a cancel request went to this backend */
};

/* One pg_acquire waiting for a slot, on its stack, in pool->queue while
 * it waits (all fields pool->mu). */
struct pg_waiter {
	pthread_cond_t cv;	 /* on pool->mu */
	struct pg_conn *granted; /* the slot handed over, SLOT_BUSY */
	struct pg_cancel_token *token;
	struct pg_waiter *next;
};

struct pg_pool {
	/* Set by pg_pool_new, read-only afterwards. */
	int size;
	int statement_timeout_ms;
	int connect_timeout_s;
	int acquire_timeout_ms;
	int queue_max;
	int reconnect_max_ms;
	char *conninfo;
	char timeout_value[16]; /* statement_timeout_ms as text, for SET */
	const char *keywords[8];
	const char *values[8];
	int stop_rd, stop_wr;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t mu;
	pthread_cond_t slot_cv;
	pthread_cond_t maint_cv;
	bool stopping;
	bool ready;
	bool attempted; /* a connection attempt has finished */
	int in_use;
	struct pg_waiter *queue; /* FIFO: the head is served first */
	struct pg_waiter **queue_tail;
	int waiting;		 /* in queue */
	int failures;		 /* consecutive failed attempts */
	int64_t next_attempt_ms; /* no attempt before this */
	char last_error[sizeof(((struct pg_error *)0)->detail)];

	atomic_uint_fast64_t queries, errors, timeouts, cancels, connects,
		reconnects, connect_failures, acquire_timeouts, acquire_full;

	struct pg_conn slots[];
};

struct pg_cancel_token {
	pthread_mutex_t mu;
	atomic_bool cancelled;
	struct pg_conn *conns; /* mu: leased under this token */
	/* mu: the pool where acquirers under this token may wait (one tool
	 * call leases from one pool), and how many are in pg_acquire */
	struct pg_pool *pool;
	int acquiring;
};

static bool conn_alive(struct pg_conn *c);

/* ---- time, errors ------------------------------------------------------ */

static void
cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ms / 1000),
		.tv_nsec = (long)(deadline_ms % 1000) * 1000000L,
	};

	pthread_cond_timedwait(cv, mu, &ts);
}

static void
count(atomic_uint_fast64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static void
err_clear(struct pg_error *err)
{
	if (err != NULL) {
		err->client[0] = '\0';
		err->detail[0] = '\0';
		err->sqlstate[0] = '\0';
	}
}

void
pg_one_line(char *s)
{
	size_t n;

	for (char *q = s; *q != '\0'; q++)
		if (*q == '\n' || *q == '\r' || *q == '\t')
			*q = ' ';
	n = strlen(s);
	while (n > 0 && s[n - 1] == ' ')
		s[--n] = '\0';
}

static void err_set(struct pg_error *err, const char *sqlstate,
		    const char *client, const char *fmt, ...) PRINTF_LIKE(4, 5);

static void
err_set(struct pg_error *err, const char *sqlstate, const char *client,
	const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	snprintf(err->client, sizeof(err->client), "%s", client);
	snprintf(err->sqlstate, sizeof(err->sqlstate), "%s",
		 sqlstate != NULL ? sqlstate : "");
	va_start(ap, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
	va_end(ap);
	pg_one_line(err->detail);
}

static void
fmt_duration(char *buf, size_t n, int ms)
{
	if (ms % 1000 == 0)
		snprintf(buf, n, "%d s", ms / 1000);
	else
		snprintf(buf, n, "%d ms", ms);
}

static int
misuse(struct pg_error *err, const char *what)
{
	err_set(err, NULL, MSG_FAILED, "database layer misuse: %s", what);
	return STATUS_INVALID;
}

/* ---- waiting on a connection's socket ---------------------------------- */

int
pg_sock_wait(PGconn *conn, short events, int64_t deadline_ms, int stop_fd,
	     short *got)
{
	struct pollfd fds[2];
	nfds_t n = 1;
	int fd = PQsocket(conn);

	if (fd < 0)
		return STATUS_IO;
	fds[0] = (struct pollfd){.fd = fd, .events = events};
	if (stop_fd >= 0) {
		fds[1] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
		n = 2;
	}
	for (;;) {
		int64_t left = deadline_ms - clock_mono_ms();
		int r;

		if (left <= 0)
			return STATUS_TIMEOUT;
		r = poll(fds, n, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno != EINTR)
			return STATUS_IO;
		if (r <= 0)
			continue;
		if (n == 2 && fds[1].revents != 0)
			return STATUS_CLOSED;
		if (fds[0].revents != 0) {
			if (got != NULL)
				*got = fds[0].revents;
			return STATUS_OK;
		}
	}
}

/*
 * Sends what libpq has queued (nonblocking mode), reading meanwhile so
 * that a server blocked on writing to us cannot stall us (libpq docs,
 * PQflush).  STATUS_OK, STATUS_TIMEOUT, STATUS_CLOSED or STATUS_IO.
 */
static int
raw_flush(PGconn *conn, int64_t deadline_ms, int stop_fd)
{
	for (;;) {
		short got = 0;
		int r = PQflush(conn);
		int rc;

		if (r == 0)
			return STATUS_OK;
		if (r < 0)
			return STATUS_IO;
		rc = pg_sock_wait(conn, POLLIN | POLLOUT, deadline_ms, stop_fd,
				  &got);
		if (rc != STATUS_OK)
			return rc;
		if ((got & POLLIN) != 0 && !PQconsumeInput(conn))
			return STATUS_IO;
	}
}

/* Reads until PQgetResult would not block.  Same statuses as raw_flush. */
static int
raw_await(PGconn *conn, int64_t deadline_ms, int stop_fd)
{
	while (PQisBusy(conn)) {
		int rc = pg_sock_wait(conn, POLLIN, deadline_ms, stop_fd, NULL);

		if (rc != STATUS_OK)
			return rc;
		if (!PQconsumeInput(conn))
			return STATUS_IO;
	}
	return STATUS_OK;
}

/* ---- classifying failures ---------------------------------------------- */

static bool
token_cancelled(const struct pg_cancel_token *t)
{
	return t != NULL && atomic_load(&t->cancelled);
}

static int
grace_ms(int timeout_ms)
{
	if (timeout_ms < PG_GRACE_MIN_MS)
		return PG_GRACE_MIN_MS;
	return timeout_ms > PG_GRACE_MAX_MS ? PG_GRACE_MAX_MS : timeout_ms;
}

/* The server enforces statement timeouts; this is the client's own
 * deadline passing, so the connection is in an unknown state. */
static int
conn_timeout(struct pg_conn *c, struct pg_error *err)
{
	char dur[32];
	char client[64];

	c->broken = true;
	count(&c->pool->errors);
	count(&c->pool->timeouts);
	fmt_duration(dur, sizeof(dur), c->timeout_ms);
	snprintf(client, sizeof(client), "query timed out after %s", dur);
	err_set(err, NULL, client,
		"no answer from the database %d ms past the statement "
		"timeout; closing the connection",
		grace_ms(c->timeout_ms));
	return STATUS_TIMEOUT;
}

/*
 * Maps a failed statement to a status and the two messages.  res is the
 * error result (borrowed), or NULL when libpq itself failed (connection
 * lost, out of memory): the connection is then unusable.
 */
static int
conn_error(struct pg_conn *c, const PGresult *res, struct pg_error *err)
{
	const char *state = NULL, *primary = NULL, *more = NULL;
	const char *client = MSG_FAILED;
	char client_buf[64];
	char dur[32];
	int rc = STATUS_IO;

	count(&c->pool->errors);
	if (res != NULL) {
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		more = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		if (primary == NULL)
			primary = PQresultErrorMessage(res);
	}
	if (primary == NULL || primary[0] == '\0')
		primary = PQerrorMessage(c->conn);
	if (state == NULL)
		state = "";

	/* A named statement gone (26000) or whose cached plan no longer fits
	 * the tables (0A000, "cached plan must not change result type"): the
	 * session is not reused, so the next one prepares afresh. */
	if (c->running_prepared &&
	    (strcmp(state, "26000") == 0 || strcmp(state, "0A000") == 0))
		c->broken = true;
	if (res == NULL || PQstatus(c->conn) != CONNECTION_OK ||
	    strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
	    strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0) {
		/* Class 08: connection exception; 57P0x: the server is
		 * shutting down, crashed or starting. */
		c->broken = true;
		client = MSG_UNAVAILABLE;
	} else if (strcmp(state, "57014") == 0) {
		/* query_canceled: ours, or the statement timeout. */
		if (atomic_load(&c->cancel_sent) || token_cancelled(c->token)) {
			count(&c->pool->cancels);
			rc = STATUS_CANCELLED;
			client = MSG_CANCELLED;
		} else {
			count(&c->pool->timeouts);
			rc = STATUS_TIMEOUT;
			fmt_duration(dur, sizeof(dur), c->timeout_ms);
			snprintf(client_buf, sizeof(client_buf),
				 "query timed out after %s", dur);
			client = client_buf;
		}
	} else if (strncmp(state, "22", 2) == 0 ||
		   strncmp(state, "23", 2) == 0) {
		/* Data exception, integrity constraint violation. */
		rc = STATUS_INVALID;
		client = MSG_REJECTED;
	} else if (strncmp(state, "53", 2) == 0) {
		/* Insufficient resources (too many connections, disk full). */
		client = MSG_UNAVAILABLE;
	}
	err_set(err, state, client, "%s%s%s%s%s",
		state[0] != '\0' ? "sqlstate " : "", state,
		state[0] != '\0' ? ": " : "", primary,
		more != NULL ? "; " : "");
	if (err != NULL && more != NULL) {
		size_t n = strlen(err->detail);

		snprintf(err->detail + n, sizeof(err->detail) - n, "%s", more);
		pg_one_line(err->detail);
	}
	return rc;
}

/* A failure of raw_flush / raw_await on a leased connection. */
static int
conn_wait_failed(struct pg_conn *c, int rc, struct pg_error *err)
{
	if (rc == STATUS_TIMEOUT)
		return conn_timeout(c, err);
	return conn_error(c, NULL, err);
}

/* ---- statements on a leased connection --------------------------------- */

/* Checks that a statement may start and sets its deadline. */
static int
conn_start(struct pg_conn *c, struct pg_error *err)
{
	err_clear(err);
	if (c->fatal)
		c->broken = true;
	if (c->broken) {
		count(&c->pool->errors);
		err_set(err, NULL, MSG_UNAVAILABLE,
			"the connection was lost earlier in this lease");
		return STATUS_IO;
	}
	if (c->in_copy)
		return misuse(err, "a COPY is in progress on this connection");
	if (PQtransactionStatus(c->conn) == PQTRANS_ACTIVE)
		return misuse(err, "a statement is already running on this "
				   "connection");
	if (token_cancelled(c->token)) {
		count(&c->pool->errors);
		count(&c->pool->cancels);
		err_set(err, NULL, MSG_CANCELLED,
			"the tool call was cancelled before the statement");
		return STATUS_CANCELLED;
	}
	c->deadline_ms =
		clock_mono_ms() + c->timeout_ms + grace_ms(c->timeout_ms);
	c->running_prepared = false;
	count(&c->pool->queries);
	return STATUS_OK;
}

/*
 * How collecting a statement's results ends: the first error (fail), else
 * its last result (*keep) moves to *out (or stays for the caller to clear
 * when out is NULL).
 */
static int
collect_end(struct pg_conn *c, PGresult **keep, const PGresult *fail,
	    PGresult **out, struct pg_error *err)
{
	if (fail != NULL)
		return conn_error(c, fail, err);
	if (*keep == NULL) {
		count(&c->pool->errors);
		return misuse(err, "the statement returned no result");
	}
	if (out != NULL) {
		*out = *keep;
		*keep = NULL;
	}
	return STATUS_OK;
}

/* The next result of what was sent (NULL: none left), waited for within
 * the lease's deadline. */
static int
await_result(struct pg_conn *c, PGresult **r, struct pg_error *err)
{
	int rc = raw_await(c->conn, c->deadline_ms, -1);

	*r = NULL;
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	*r = PQgetResult(c->conn);
	return STATUS_OK;
}

/*
 * The results of one query of what was sent, until libpq's NULL after
 * them: the first failure of the call goes to *fail, and with keep the
 * last success to *keep (none after a failure); any other result is
 * cleared.  *ok: the query succeeded.  A COPY result drops the connection
 * (libpq would return it forever); copy_msg says why.
 */
static int
collect_query(struct pg_conn *c, PGresult **keep, PGresult **fail, bool keep_it,
	      bool *ok, const char *copy_msg, struct pg_error *err)
{
	PGresult *r;
	int rc;

	*ok = false;
	for (;;) {
		if ((rc = await_result(c, &r, err)) != STATUS_OK)
			return rc;
		if (r == NULL)
			return STATUS_OK;
		switch (PQresultStatus(r)) {
		case PGRES_TUPLES_OK:
		case PGRES_COMMAND_OK:
			*ok = true;
			if (keep_it && *fail == NULL) {
				PQclear(*keep);
				*keep = r;
				r = NULL;
			}
			break;
		case PGRES_PIPELINE_ABORTED: /* skipped after a failure */
			break;
		case PGRES_COPY_IN:
		case PGRES_COPY_OUT:
		case PGRES_COPY_BOTH:
			PQclear(r);
			c->broken = true;
			count(&c->pool->errors);
			return misuse(err, copy_msg);
		default:
			if (*fail == NULL) {
				*fail = r;
				r = NULL;
			}
			break;
		}
		PQclear(r);
	}
}

/*
 * Collects the results of the statement sent, until libpq has none left,
 * so that the connection is ready for the next.  The first error wins;
 * otherwise the last result goes to *out (or is cleared when out is
 * NULL).
 */
static int
conn_collect(struct pg_conn *c, PGresult **out, struct pg_error *err)
{
	PGresult *keep = NULL, *fail = NULL;
	bool ok;
	int rc;

	rc = collect_query(c, &keep, &fail, true, &ok,
			   "a COPY statement was sent as a query; "
			   "COPY FROM STDIN has its own calls",
			   err);
	if (rc == STATUS_OK)
		rc = collect_end(c, &keep, fail, out, err);
	PQclear(keep);
	PQclear(fail);
	return rc;
}

/*
 * conn_collect for a pipeline of send_pipeline: the results of the steps
 * before the statement are dropped (the first error wins, as ever; a step
 * after an error comes back as PGRES_PIPELINE_ABORTED), the statement's
 * last result goes to *out, then the Sync ends the pipeline.  A Parse that
 * succeeded is remembered even when a later step failed: the session has
 * the statement (a prepared statement outlives a rollback).
 */
static int
collect_pipeline(struct pg_conn *c, PGresult **out, struct pg_error *err)
{
	PGresult *keep = NULL, *fail = NULL, *r = NULL;
	bool ok;
	int rc = STATUS_OK;

	for (int step = 0; step <= c->pipe_before; step++) {
		rc = collect_query(c, &keep, &fail, step == c->pipe_before, &ok,
				   "a COPY statement was prepared; COPY FROM "
				   "STDIN has its own calls",
				   err);
		if (rc != STATUS_OK)
			goto out;
		if (step == 0 && ok && c->preparing != NULL &&
		    c->n_prepared < PG_PREPARED_MAX)
			c->prepared[c->n_prepared++] = c->preparing;
	}
	if ((rc = await_result(c, &r, err)) != STATUS_OK)
		goto out;
	if (PQresultStatus(r) != PGRES_PIPELINE_SYNC ||
	    !PQexitPipelineMode(c->conn)) {
		/* not what send_pipeline sent: the state is unknown */
		c->broken = true;
		count(&c->pool->errors);
		rc = misuse(err, "unexpected results in a pipeline");
		goto out;
	}
	c->in_pipeline = false;
	rc = collect_end(c, &keep, fail, out, err);
out:
	PQclear(r);
	PQclear(keep);
	PQclear(fail);
	return rc;
}

int
pg_send(struct pg_conn *c, const char *sql, int nparams,
	const char *const *values, struct pg_error *err)
{
	int rc;

	err_clear(err);
	if (c == NULL || sql == NULL || nparams < 0 ||
	    nparams > PG_PARAMS_MAX || (nparams > 0 && values == NULL))
		return misuse(err, "bad arguments to a query");
	rc = conn_start(c, err);
	if (rc != STATUS_OK)
		return rc;
	if (!PQsendQueryParams(c->conn, sql, nparams, NULL, values, NULL, NULL,
			       0))
		return conn_error(c, NULL, err);
	rc = raw_flush(c->conn, c->deadline_ms, -1);
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	return STATUS_OK;
}

int
pg_result(struct pg_conn *c, PGresult **out, struct pg_error *err)
{
	if (out != NULL)
		*out = NULL;
	err_clear(err);
	if (c == NULL)
		return misuse(err, "no connection");
	if (c->broken) {
		err_set(err, NULL, MSG_UNAVAILABLE,
			"the connection was lost earlier in this lease");
		return STATUS_IO;
	}
	if (c->in_pipeline)
		return collect_pipeline(c, out, err);
	if (c->in_copy || PQtransactionStatus(c->conn) != PQTRANS_ACTIVE)
		return misuse(err, "no statement is waiting for its result");
	return conn_collect(c, out, err);
}

int
pg_query(struct pg_conn *c, const char *sql, int nparams,
	 const char *const *values, PGresult **out, struct pg_error *err)
{
	int rc;

	if (out != NULL)
		*out = NULL;
	rc = pg_send(c, sql, nparams, values, err);
	if (rc != STATUS_OK)
		return rc;
	return pg_result(c, out, err);
}

static bool
conn_has_prepared(const struct pg_conn *c, const char *name)
{
	for (int i = 0; i < c->n_prepared; i++)
		if (strcmp(c->prepared[i], name) == 0)
			return true;
	return false;
}

/*
 * The named statement, preceded in one pipeline (one round trip) by its
 * Parse when this session has not prepared it yet and by the plan mode
 * when st->generic and the statement timeout when timeout_ms > 0, and
 * followed by a Sync: the server runs them as one implicit transaction, so
 * what is set for it lasts until the Sync and an error skips what follows
 * it.  pg_result reads it (collect_pipeline).
 */
static int
send_pipeline(struct pg_conn *c, const struct pg_stmt *st,
	      const char *const *values, bool known, int timeout_ms)
{
	char ms[16];
	const char *v[1] = {ms};

	if (!PQenterPipelineMode(c->conn))
		return STATUS_IO;
	c->in_pipeline = true;
	c->pipe_before = 0;
	c->preparing = NULL;
	if (!known) {
		if (!PQsendPrepare(c->conn, st->name, st->sql, st->nparams,
				   NULL))
			return STATUS_IO;
		c->preparing = st->name;
		c->pipe_before++;
	}
	snprintf(ms, sizeof(ms), "%d", timeout_ms);
	if (st->generic || timeout_ms > 0) {
		const char *set = timeout_ms <= 0 ? GENERIC_PLAN_SQL
				  : st->generic	  ? GENERIC_WITHIN_SQL
						  : WITHIN_SQL;

		if (!PQsendQueryParams(c->conn, set, timeout_ms > 0, NULL,
				       timeout_ms > 0 ? v : NULL, NULL, NULL,
				       0))
			return STATUS_IO;
		c->pipe_before++;
	}
	if (!PQsendQueryPrepared(c->conn, st->name, st->nparams, values, NULL,
				 NULL, st->binary) ||
	    !PQpipelineSync(c->conn))
		return STATUS_IO;
	return STATUS_OK;
}

int
pg_send_prepared(struct pg_conn *c, const struct pg_stmt *st,
		 const char *const *values, struct pg_error *err)
{
	return pg_send_prepared_within(c, st, values, 0, err);
}

int
pg_send_prepared_within(struct pg_conn *c, const struct pg_stmt *st,
			const char *const *values, int timeout_ms,
			struct pg_error *err)
{
	size_t len;
	bool known;
	int rc;

	err_clear(err);
	if (c == NULL || st == NULL || st->name == NULL || st->sql == NULL ||
	    (len = strlen(st->name)) == 0 || len > PG_STMT_NAME_MAX ||
	    st->nparams < 0 || st->nparams > PG_PARAMS_MAX ||
	    (st->nparams > 0 && values == NULL))
		return misuse(err, "bad arguments to a prepared statement");
	known = conn_has_prepared(c, st->name);
	rc = conn_start(c, err);
	if (rc != STATUS_OK)
		return rc;
	if (!known && c->n_prepared == PG_PREPARED_MAX) {
		/* no room left: unnamed, as pg_send */
		if (!PQsendQueryParams(c->conn, st->sql, st->nparams, NULL,
				       values, NULL, NULL, st->binary))
			return conn_error(c, NULL, err);
	} else if (known && !st->generic && timeout_ms <= 0) {
		if (!PQsendQueryPrepared(c->conn, st->name, st->nparams, values,
					 NULL, NULL, st->binary))
			return conn_error(c, NULL, err);
	} else if (send_pipeline(c, st, values, known, timeout_ms) !=
		   STATUS_OK) {
		/* libpq refused (out of memory, connection lost) part way
		 * into the pipeline: the session cannot be trusted */
		return conn_error(c, NULL, err);
	}
	c->running_prepared = known || c->n_prepared < PG_PREPARED_MAX;
	rc = raw_flush(c->conn, c->deadline_ms, -1);
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	return STATUS_OK;
}

int
pg_query_prepared(struct pg_conn *c, const struct pg_stmt *st,
		  const char *const *values, PGresult **out,
		  struct pg_error *err)
{
	int rc;

	if (out != NULL)
		*out = NULL;
	rc = pg_send_prepared(c, st, values, err);
	if (rc != STATUS_OK)
		return rc;
	return pg_result(c, out, err);
}

int
pg_prepared_count(const struct pg_conn *c)
{
	return c != NULL ? c->n_prepared : 0;
}

int
pg_begin(struct pg_conn *c, struct pg_error *err)
{
	return pg_query(c, "BEGIN", 0, NULL, NULL, err);
}

int
pg_rollback(struct pg_conn *c, struct pg_error *err)
{
	return pg_query(c, "ROLLBACK", 0, NULL, NULL, err);
}

int
pg_begin_local(struct pg_conn *c, const char *const *settings,
	       struct pg_error *err)
{
	static const char *const sql[PG_LOCAL_MAX + 1] = {
		NULL, "SELECT set_config($1, $2, true)",
		"SELECT set_config($1, $2, true), set_config($3, $4, true)",
		"SELECT set_config($1, $2, true), set_config($3, $4, true), "
		"set_config($5, $6, true)",
		"SELECT set_config($1, $2, true), set_config($3, $4, true), "
		"set_config($5, $6, true), set_config($7, $8, true)"};
	struct pg_error ignored;
	size_t n = 0;
	int rc;

	while (settings[n] != NULL)
		n++;
	if (n % 2 != 0 || n / 2 > PG_LOCAL_MAX) {
		err_set(err, NULL, MSG_FAILED,
			"database layer misuse: pg_begin_local settings: "
			"expected name and value pairs ending in NULL, at most "
			"%d pairs; got %zu strings",
			PG_LOCAL_MAX, n);
		return STATUS_INVALID;
	}
	if ((rc = pg_query(c, "BEGIN READ ONLY", 0, NULL, NULL, err)) !=
	    STATUS_OK)
		return rc;
	if (n == 0 || (rc = pg_query(c, sql[n / 2], (int)n, settings, NULL,
				     err)) == STATUS_OK)
		return STATUS_OK;
	(void)!pg_rollback(c, &ignored);
	return rc;
}

int
pg_commit(struct pg_conn *c, struct pg_error *err)
{
	PGresult *res = NULL;
	int rc = pg_query(c, "COMMIT", 0, NULL, &res, err);

	/* COMMIT of an aborted transaction succeeds with the tag ROLLBACK. */
	if (rc == STATUS_OK && strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
		count(&c->pool->errors);
		err_set(err, NULL, MSG_ROLLED_BACK,
			"COMMIT of a failed transaction rolled it back");
		rc = STATUS_IO;
	}
	PQclear(res);
	return rc;
}

int
pg_exec_script(struct pg_conn *c, const char *sql, struct pg_error *err)
{
	int rc;

	err_clear(err);
	if (c == NULL || sql == NULL)
		return misuse(err, "bad arguments to a script");
	rc = conn_start(c, err);
	if (rc != STATUS_OK)
		return rc;
	if (!PQsendQuery(c->conn, sql))
		return conn_error(c, NULL, err);
	rc = raw_flush(c->conn, c->deadline_ms, -1);
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	return conn_collect(c, NULL, err);
}

int
pg_set_timeout(struct pg_conn *c, int timeout_ms, struct pg_error *err)
{
	char value[16];
	const char *values[1] = {value};
	int rc;

	err_clear(err);
	if (c == NULL || timeout_ms < 1 ||
	    timeout_ms > PG_STATEMENT_TIMEOUT_MAX_MS)
		return misuse(err, "statement timeout out of range");
	snprintf(value, sizeof(value), "%d", timeout_ms);
	rc = pg_query(c, SET_TIMEOUT_SQL, 1, values, NULL, err);
	if (rc == STATUS_OK)
		c->timeout_ms = timeout_ms;
	return rc;
}

/* ---- COPY FROM STDIN --------------------------------------------------- */

int
pg_copy_begin(struct pg_conn *c, const char *copy_sql, struct pg_error *err)
{
	PGresult *r = NULL;
	int rc;

	err_clear(err);
	if (c == NULL || copy_sql == NULL)
		return misuse(err, "bad arguments to COPY");
	rc = conn_start(c, err);
	if (rc != STATUS_OK)
		return rc;
	if (!PQsendQueryParams(c->conn, copy_sql, 0, NULL, NULL, NULL, NULL, 0))
		return conn_error(c, NULL, err);
	rc = raw_flush(c->conn, c->deadline_ms, -1);
	if (rc == STATUS_OK)
		rc = raw_await(c->conn, c->deadline_ms, -1);
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	r = PQgetResult(c->conn);
	if (r == NULL)
		return conn_error(c, NULL, err);
	switch (PQresultStatus(r)) {
	case PGRES_COPY_IN:
		c->in_copy = true;
		rc = STATUS_OK;
		break;
	case PGRES_TUPLES_OK:
	case PGRES_COMMAND_OK:
	case PGRES_COPY_OUT:
	case PGRES_COPY_BOTH:
		c->broken = true;
		count(&c->pool->errors);
		rc = misuse(err, "the statement is not COPY FROM STDIN");
		break;
	default: {
		/* Take the error, then let the rest of the results come. */
		PGresult *more;

		rc = conn_error(c, r, err);
		while (!c->broken &&
		       raw_await(c->conn, c->deadline_ms, -1) == STATUS_OK &&
		       (more = PQgetResult(c->conn)) != NULL)
			PQclear(more);
		if (PQtransactionStatus(c->conn) == PQTRANS_ACTIVE)
			c->broken = true;
		break;
	}
	}
	PQclear(r);
	return rc;
}

/* Ends the COPY stream (abort_reason NULL: normally) and collects the
 * statement's results. */
static int
copy_finish(struct pg_conn *c, const char *abort_reason, PGresult **out,
	    struct pg_error *err)
{
	int r, rc;

	c->in_copy = false;
	while ((r = PQputCopyEnd(c->conn, abort_reason)) == 0) {
		rc = pg_sock_wait(c->conn, POLLOUT, c->deadline_ms, -1, NULL);
		if (rc != STATUS_OK)
			return conn_wait_failed(c, rc, err);
	}
	if (r < 0)
		return conn_error(c, NULL, err);
	rc = raw_flush(c->conn, c->deadline_ms, -1);
	if (rc != STATUS_OK)
		return conn_wait_failed(c, rc, err);
	return conn_collect(c, out, err);
}

int
pg_copy_put(struct pg_conn *c, const void *data, size_t len,
	    struct pg_error *err)
{
	const char *p = data;
	int rc;

	err_clear(err);
	if (c == NULL || (data == NULL && len > 0))
		return misuse(err, "bad arguments to COPY data");
	if (!c->in_copy)
		return misuse(err, "no COPY is in progress on this connection");
	if (token_cancelled(c->token)) {
		rc = copy_finish(c, "cancelled by the client", NULL, err);
		if (rc == STATUS_OK || rc == STATUS_CANCELLED ||
		    rc == STATUS_TIMEOUT) {
			if (rc == STATUS_OK) {
				count(&c->pool->errors);
				count(&c->pool->cancels);
			}
			err_set(err, NULL, MSG_CANCELLED,
				"the tool call was cancelled during COPY");
			rc = STATUS_CANCELLED;
		}
		return rc;
	}
	while (len > 0) {
		size_t n = len < PG_COPY_CHUNK ? len : PG_COPY_CHUNK;

		/* 0 means libpq could not grow its buffer (nonblocking). */
		if (PQputCopyData(c->conn, p, (int)n) != 1) {
			c->in_copy = false;
			if (PQstatus(c->conn) == CONNECTION_OK &&
			    PQtransactionStatus(c->conn) == PQTRANS_ACTIVE)
				/* The server ended the COPY: fetch why. */
				return conn_collect(c, NULL, err);
			return conn_error(c, NULL, err);
		}
		rc = raw_flush(c->conn, c->deadline_ms, -1);
		if (rc != STATUS_OK) {
			c->in_copy = false;
			return conn_wait_failed(c, rc, err);
		}
		p += n;
		len -= n;
	}
	return STATUS_OK;
}

int
pg_copy_end(struct pg_conn *c, int64_t *rows, struct pg_error *err)
{
	PGresult *res = NULL;
	const char *tuples;
	char *end = NULL;
	long long n;
	int rc;

	if (rows != NULL)
		*rows = 0;
	err_clear(err);
	if (c == NULL)
		return misuse(err, "no connection");
	if (!c->in_copy)
		return misuse(err, "no COPY is in progress on this connection");
	if (token_cancelled(c->token))
		return pg_copy_put(c, NULL, 0, err);
	rc = copy_finish(c, NULL, &res, err);
	if (rc != STATUS_OK)
		return rc;
	tuples = PQcmdTuples(res);
	errno = 0;
	n = strtoll(tuples, &end, 10);
	if (rows != NULL && end != tuples && *end == '\0' && errno == 0 &&
	    n >= 0)
		*rows = n;
	PQclear(res);
	return STATUS_OK;
}

int
pg_copy_abort(struct pg_conn *c, struct pg_error *err)
{
	PGresult *r;
	int rc;

	err_clear(err);
	if (c == NULL)
		return misuse(err, "no connection");
	if (!c->in_copy)
		return misuse(err, "no COPY is in progress on this connection");
	c->in_copy = false;
	/* The server answers a CopyFail with an error: expected, not
	 * counted, collected only to leave the connection clean. */
	while ((rc = PQputCopyEnd(c->conn, "abandoned by the client")) == 0)
		if (pg_sock_wait(c->conn, POLLOUT, c->deadline_ms, -1, NULL) !=
		    STATUS_OK)
			break;
	if (rc != 1 || raw_flush(c->conn, c->deadline_ms, -1) != STATUS_OK)
		goto broken;
	for (;;) {
		if (raw_await(c->conn, c->deadline_ms, -1) != STATUS_OK)
			goto broken;
		r = PQgetResult(c->conn);
		if (r == NULL)
			break;
		PQclear(r);
	}
	if (PQstatus(c->conn) != CONNECTION_OK)
		goto broken;
	return STATUS_OK;
broken:
	c->broken = true;
	err_set(err, NULL, MSG_UNAVAILABLE,
		"the connection failed while abandoning a COPY: %s",
		PQerrorMessage(c->conn));
	return STATUS_IO;
}

int
pg_copy_in(struct pg_conn *c, const char *copy_sql, const void *data,
	   size_t len, int64_t *rows, struct pg_error *err)
{
	int rc;

	if (rows != NULL)
		*rows = 0;
	rc = pg_copy_begin(c, copy_sql, err);
	if (rc != STATUS_OK)
		return rc;
	rc = pg_copy_put(c, data, len, err);
	if (rc != STATUS_OK)
		return rc;
	return pg_copy_end(c, rows, err);
}

/* ---- the wait queue ---------------------------------------------------- */

/* Takes w out of the queue (pool->mu held); it may be anywhere in it. */
static void
queue_remove(struct pg_pool *p, struct pg_waiter *w)
{
	for (struct pg_waiter **pp = &p->queue; *pp != NULL;
	     pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			if (p->queue_tail == &w->next)
				p->queue_tail = pp;
			w->next = NULL;
			p->waiting--;
			return;
		}
	}
}

/* Queues w at the tail, or at the head when it is owed the next slot (its
 * own went bad when it was handed over).  pool->mu held. */
static void
queue_add(struct pg_pool *p, struct pg_waiter *w, bool head)
{
	w->next = NULL;
	if (head && p->queue != NULL) {
		w->next = p->queue;
		p->queue = w;
	} else {
		*p->queue_tail = w;
		p->queue_tail = &w->next;
	}
	p->waiting++;
}

/* Wakes every waiter, to see that the pool stops or is not ready. */
static void
queue_wake_all(struct pg_pool *p)
{
	for (struct pg_waiter *w = p->queue; w != NULL; w = w->next)
		pthread_cond_signal(&w->cv);
}

/* Wakes the waiters under token t (called with t->mu held). */
static void
queue_wake_token(struct pg_pool *p, struct pg_cancel_token *t)
{
	pthread_mutex_lock(&p->mu);
	for (struct pg_waiter *w = p->queue; w != NULL; w = w->next)
		if (w->token == t)
			pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&p->mu);
}

/* c is free (pool->mu held): to the first waiter, else idle. */
static void
slot_idle(struct pg_pool *p, struct pg_conn *c)
{
	struct pg_waiter *w = p->queue;

	if (w == NULL) {
		c->state = SLOT_IDLE;
		return;
	}
	queue_remove(p, w);
	c->state = SLOT_BUSY;
	p->in_use++;
	w->granted = c;
	pthread_cond_signal(&w->cv);
}

/* ---- cancel tokens ----------------------------------------------------- */

int
pg_cancel_token_new(struct pg_cancel_token **out)
{
	struct pg_cancel_token *t;

	if (out == NULL)
		return STATUS_INVALID;
	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return STATUS_NOMEM;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t);
		return STATUS_NOMEM;
	}
	atomic_init(&t->cancelled, false);
	*out = t;
	return STATUS_OK;
}

void
pg_cancel_token_free(struct pg_cancel_token *t)
{
	if (t == NULL)
		return;
	if (t->conns != NULL)
		log_error(NULL, "database cancel token freed while a "
				"connection acquired with it is still leased");
	pthread_mutex_destroy(&t->mu);
	free(t);
}

bool
pg_cancel_requested(struct pg_cancel_token *t)
{
	return token_cancelled(t);
}

void
pg_cancel(struct pg_cancel_token *t)
{
	char errbuf[256];

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	atomic_store(&t->cancelled, true);
	/* an acquirer that checked the flag under pool->mu is waiting by
	 * the time this takes pool->mu: the signal cannot be lost */
	if (t->acquiring > 0)
		queue_wake_token(t->pool, t);
	for (struct pg_conn *c = t->conns; c != NULL; c = c->token_next) {
		atomic_store(&c->cancel_sent, true);
		if (c->cancel != NULL &&
		    !PQcancel(c->cancel, errbuf, sizeof(errbuf))) {
			pg_one_line(errbuf);
			log_warn(NULL,
				 "could not send a cancel request to the "
				 "database: %s",
				 errbuf);
		}
	}
	pthread_mutex_unlock(&t->mu);
}

/* pg_acquire under t starts (on p) and ends: while it runs, pg_cancel
 * wakes it in p's queue. */
static void
token_acquire_begin(struct pg_cancel_token *t, struct pg_pool *p)
{
	pthread_mutex_lock(&t->mu);
	t->pool = p;
	t->acquiring++;
	pthread_mutex_unlock(&t->mu);
}

static void
token_acquire_end(struct pg_cancel_token *t)
{
	pthread_mutex_lock(&t->mu);
	if (--t->acquiring == 0)
		t->pool = NULL;
	pthread_mutex_unlock(&t->mu);
}

static bool
token_link(struct pg_cancel_token *t, struct pg_conn *c)
{
	bool ok;

	pthread_mutex_lock(&t->mu);
	ok = !atomic_load(&t->cancelled);
	if (ok) {
		c->token = t;
		c->token_next = t->conns;
		t->conns = c;
	}
	pthread_mutex_unlock(&t->mu);
	return ok;
}

static void
token_unlink(struct pg_conn *c)
{
	struct pg_cancel_token *t = c->token;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	for (struct pg_conn **pp = &t->conns; *pp != NULL;
	     pp = &(*pp)->token_next) {
		if (*pp == c) {
			*pp = c->token_next;
			break;
		}
	}
	c->token_next = NULL;
	pthread_mutex_unlock(&t->mu);
	c->token = NULL;
}

/* ---- leases ------------------------------------------------------------ */

static void
slot_close(struct pg_conn *c)
{
	c->n_prepared = 0;
	c->in_pipeline = false;
	PQfreeCancel(c->cancel);
	c->cancel = NULL;
	PQfinish(c->conn);
	c->conn = NULL;
}

/* Hands a slot back under pool->mu. */
static void
slot_put_back(struct pg_pool *p, struct pg_conn *c)
{
	pthread_mutex_lock(&p->mu);
	p->in_use--;
	if (c->conn != NULL) {
		slot_idle(p, c);
	} else {
		c->state = SLOT_DOWN;
		pthread_cond_signal(&p->maint_cv);
	}
	pthread_mutex_unlock(&p->mu);
}

/* The lease's fields reset for its new holder, and its token linked. */
static int
lease_start(struct pg_pool *p, struct pg_conn *c,
	    struct pg_cancel_token *cancel, struct pg_error *err)
{
	c->broken = false;
	c->in_copy = false;
	c->timeout_ms = p->statement_timeout_ms;
	c->token = NULL;
	atomic_store(&c->cancel_sent, false);
	if (cancel != NULL && !token_link(cancel, c)) {
		slot_put_back(p, c);
		err_set(err, NULL, MSG_CANCELLED,
			"the tool call was cancelled before it got a "
			"connection");
		return STATUS_CANCELLED;
	}
	return STATUS_OK;
}

/* Why no connection could be had, after waiting waited_ms (pool->mu
 * held); returns rc. */
static int
acquire_failed(struct pg_pool *p, int rc, int waited_ms, struct pg_error *err)
{
	char took[32];

	if (waited_ms < 1000)
		snprintf(took, sizeof(took), "%d ms", waited_ms);
	else
		snprintf(took, sizeof(took), "%.1f s",
			 (double)waited_ms / 1000);
	if (rc == STATUS_FULL) {
		count(&p->acquire_full);
		err_set(err, NULL, "",
			"%d acquirers wait already (%d in use of %d)",
			p->waiting, p->in_use, p->size);
		if (err != NULL)
			snprintf(err->client, sizeof(err->client),
				 "too many calls wait for a telemetry database "
				 "connection: %d of %d in use, %d waiting; try "
				 "again later",
				 p->in_use, p->size, p->waiting);
		return rc;
	}
	count(&p->acquire_timeouts);
	err_set(err, NULL, "",
		"no database connection became free within %s (%d in use of "
		"%d, %d waiting)",
		took, p->in_use, p->size, p->waiting);
	if (err != NULL)
		snprintf(err->client, sizeof(err->client),
			 "no telemetry database connection became free in %s: "
			 "%d of %d in use, %d more waiting; try again later",
			 took, p->in_use, p->size, p->waiting);
	return rc;
}

/* Why an acquirer may neither take a slot nor wait (pool->mu held):
 * STATUS_OK, or the status with err filled. */
static int
acquire_refused(struct pg_pool *p, struct pg_cancel_token *cancel,
		struct pg_error *err)
{
	if (p->stopping) {
		err_set(err, NULL, MSG_CLOSED, "the pool is stopping");
		return STATUS_CLOSED;
	}
	if (token_cancelled(cancel)) {
		err_set(err, NULL, MSG_CANCELLED,
			"the tool call was cancelled before it got a "
			"connection");
		return STATUS_CANCELLED;
	}
	/* the last attempt to connect failed, so the idle connections are
	 * likely dead too */
	if (!p->ready && p->attempted) {
		err_set(err, NULL, MSG_UNAVAILABLE,
			"no connection to the database: %s", p->last_error);
		return STATUS_IO;
	}
	return STATUS_OK;
}

/* An idle slot leased, or NULL (pool->mu held). */
static struct pg_conn *
slot_take_idle(struct pg_pool *p)
{
	for (int i = 0; i < p->size; i++) {
		struct pg_conn *c = &p->slots[i];

		if (c->state == SLOT_IDLE) {
			c->state = SLOT_BUSY;
			p->in_use++;
			return c;
		}
	}
	return NULL;
}

/* Initialises a waiter's condition variable on CLOCK_MONOTONIC. */
static int
waiter_init(struct pg_waiter *w, struct pg_cancel_token *cancel)
{
	pthread_condattr_t attr;
	int rc;

	*w = (struct pg_waiter){.token = cancel};
	if (pthread_condattr_init(&attr) != 0)
		return STATUS_NOMEM;
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
			     pthread_cond_init(&w->cv, &attr) == 0
		     ? STATUS_OK
		     : STATUS_NOMEM;
	pthread_condattr_destroy(&attr);
	return rc;
}

int
pg_acquire(struct pg_pool *p, struct pg_cancel_token *cancel, int timeout_ms,
	   struct pg_conn **out, struct pg_error *err)
{
	struct pg_conn *c = NULL;
	struct pg_waiter w;
	bool queued = false, have_cv = false, owed = false;
	int64_t deadline;
	int rc = STATUS_OK;

	err_clear(err);
	if (out == NULL)
		return misuse(err, "no place for the connection");
	*out = NULL;
	if (p == NULL)
		return misuse(err, "no pool");
	if (timeout_ms < 0)
		timeout_ms = p->acquire_timeout_ms;
	if (timeout_ms > PG_ACQUIRE_TIMEOUT_MAX_MS)
		timeout_ms = PG_ACQUIRE_TIMEOUT_MAX_MS;
	deadline = clock_mono_ms() + timeout_ms;
	if (cancel != NULL)
		token_acquire_begin(cancel, p);

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (queued && w.granted != NULL) {
			/* slot_idle took it out of the queue */
			queued = false;
			c = w.granted;
			w.granted = NULL;
			if (p->stopping) { /* everyone leaves: no next waiter */
				c->state = SLOT_IDLE;
				p->in_use--;
				c = NULL;
			}
		}
		if (c == NULL &&
		    (rc = acquire_refused(p, cancel, err)) != STATUS_OK)
			break;
		/* an idle slot exists only while nobody waits */
		if (c == NULL && !queued && p->queue == NULL)
			c = slot_take_idle(p);
		if (c != NULL) {
			pthread_mutex_unlock(&p->mu);
			/* The maintainer checks idle connections only every
			 * PG_CHECK_INTERVAL_MS: one the server closed since
			 * is caught here, not by the caller's statement. */
			if (conn_alive(c))
				break;
			log_debug(NULL, "idle database connection lost: %s",
				  PQerrorMessage(c->conn));
			slot_close(c);
			pthread_mutex_lock(&p->mu);
			p->in_use--;
			c->state = SLOT_DOWN;
			c = NULL;
			pthread_cond_signal(&p->maint_cv);
			/* a waiter keeps its turn: the next slot is its */
			owed = have_cv;
			continue;
		}
		if (!queued) {
			if (timeout_ms == 0 || clock_mono_ms() >= deadline) {
				rc = acquire_failed(p, STATUS_TIMEOUT,
						    timeout_ms, err);
				break;
			}
			if (!owed && p->waiting >= p->queue_max) {
				rc = acquire_failed(p, STATUS_FULL, 0, err);
				break;
			}
			if (!have_cv) {
				if (waiter_init(&w, cancel) != STATUS_OK) {
					err_set(err, NULL, MSG_FAILED,
						"cannot wait for a connection: "
						"out of memory");
					rc = STATUS_NOMEM;
					break;
				}
				have_cv = true;
			}
			queue_add(p, &w, owed);
			queued = true;
		} else if (clock_mono_ms() >= deadline) {
			queue_remove(p, &w);
			queued = false;
			rc = acquire_failed(p, STATUS_TIMEOUT, timeout_ms, err);
			break;
		}
		cond_wait_until(&w.cv, &p->mu, deadline);
	}
	if (c == NULL) { /* a failure: p->mu is held */
		if (queued)
			queue_remove(p, &w);
		if (p->stopping && p->waiting == 0)
			pthread_cond_broadcast(&p->slot_cv);
		pthread_mutex_unlock(&p->mu);
	}
	if (have_cv)
		pthread_cond_destroy(&w.cv);
	if (cancel != NULL)
		token_acquire_end(cancel);
	if (c == NULL)
		return rc;
	if ((rc = lease_start(p, c, cancel, err)) != STATUS_OK)
		return rc;
	*out = c;
	return STATUS_OK;
}

/* Sends one parameterless statement and drops its results (release). */
static bool
conn_run_quiet(struct pg_conn *c, const char *sql, int nparams,
	       const char *const *values)
{
	PGresult *r;
	bool ok = true;

	if (!PQsendQueryParams(c->conn, sql, nparams, NULL, values, NULL, NULL,
			       0) ||
	    raw_flush(c->conn, c->deadline_ms, -1) != STATUS_OK)
		return false;
	for (;;) {
		if (raw_await(c->conn, c->deadline_ms, -1) != STATUS_OK)
			return false;
		r = PQgetResult(c->conn);
		if (r == NULL)
			break;
		if (PQresultStatus(r) != PGRES_COMMAND_OK &&
		    PQresultStatus(r) != PGRES_TUPLES_OK)
			ok = false;
		PQclear(r);
	}
	return ok;
}

/* Brings a lease's connection back to a clean idle session, or says it
 * cannot (then it is closed). */
static bool
conn_reset(struct pg_conn *c)
{
	struct pg_pool *p = c->pool;
	const char *values[1] = {p->timeout_value};

	if (c->broken || c->fatal || c->in_copy ||
	    PQstatus(c->conn) != CONNECTION_OK)
		return false;
	c->deadline_ms = clock_mono_ms() + PG_RESET_TIMEOUT_MS;
	switch (PQtransactionStatus(c->conn)) {
	case PQTRANS_IDLE: break;
	case PQTRANS_INTRANS:
	case PQTRANS_INERROR:
		if (!conn_run_quiet(c, "ROLLBACK", 0, NULL))
			return false;
		break;
	default: /* a statement still running, or unknown */ return false;
	}
	if (c->timeout_ms != p->statement_timeout_ms) {
		if (!conn_run_quiet(c, SET_TIMEOUT_SQL, 1, values))
			return false;
		c->timeout_ms = p->statement_timeout_ms;
	}
	return PQtransactionStatus(c->conn) == PQTRANS_IDLE;
}

void
pg_release(struct pg_conn *c)
{
	if (c == NULL)
		return;
	token_unlink(c);
	/* A cancel request may still be on its way to this backend and hit
	 * the next lessee's statement: such a connection is not reused. */
	if (atomic_load(&c->cancel_sent) || !conn_reset(c))
		slot_close(c);
	slot_put_back(c->pool, c);
}

/* ---- the maintainer: connecting, checking, backoff --------------------- */

/* Runs on the thread reading the connection, which owns the slot.  An
 * idle session learns of a server shutdown (57P01) as a FATAL notice. */
static void
pg_notice(void *arg, const PGresult *res)
{
	struct pg_conn *c = arg;
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *sev =
		PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	if (sev != NULL &&
	    (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0))
		c->fatal = true;
	log_debug(NULL, "database notice: %s", msg != NULL ? msg : "");
}

int
pg_connect_poll(PGconn *conn, int64_t deadline_ms, int stop_fd, int timeout_s,
		char *detail, size_t n)
{
	/* libpq: before the first PQconnectPoll, act as if it had said
	 * PGRES_POLLING_WRITING. */
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	int rc;

	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED)
			return STATUS_IO;
		rc = pg_sock_wait(
			conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
			deadline_ms, stop_fd, NULL);
		if (rc == STATUS_TIMEOUT)
			snprintf(detail, n, "connection timed out after %d s",
				 timeout_s);
		if (rc != STATUS_OK)
			return rc;
		st = PQconnectPoll(conn);
	}
	return STATUS_OK;
}

/*
 * Opens one connection, sets its statement timeout and makes its cancel
 * handle.  Returns STATUS_CLOSED when pg_pool_free interrupts it; on any
 * failure detail says why (libpq's message).
 */
static int
slot_connect(struct pg_pool *p, struct pg_conn *c, char *detail, size_t n)
{
	int64_t deadline =
		clock_mono_ms() + (int64_t)p->connect_timeout_s * 1000;
	const char *values[1] = {p->timeout_value};
	PGconn *conn = NULL;
	PGresult *r = NULL;
	PGcancel *cancel = NULL;
	int rc = STATUS_IO;

	detail[0] = '\0';
	conn = PQconnectStartParams(p->keywords, p->values, 1);
	if (conn == NULL) {
		rc = STATUS_NOMEM;
		snprintf(detail, n, "out of memory");
		goto out;
	}
	c->fatal = false;
	PQsetNoticeReceiver(conn, pg_notice, c);
	if (PQstatus(conn) == CONNECTION_BAD)
		goto out;
	rc = pg_connect_poll(conn, deadline, p->stop_rd, p->connect_timeout_s,
			     detail, n);
	if (rc != STATUS_OK)
		goto out;
	rc = STATUS_IO;
	if (PQsetnonblocking(conn, 1) != 0 ||
	    !PQsendQueryParams(conn, SET_TIMEOUT_SQL, 1, NULL, values, NULL,
			       NULL, 0))
		goto out;
	rc = raw_flush(conn, deadline, p->stop_rd);
	while (rc == STATUS_OK) {
		rc = raw_await(conn, deadline, p->stop_rd);
		if (rc != STATUS_OK)
			break;
		r = PQgetResult(conn);
		if (r == NULL)
			break;
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			snprintf(detail, n,
				 "setting the statement timeout "
				 "failed: %s",
				 PQresultErrorMessage(r));
			rc = STATUS_IO;
		}
		PQclear(r);
		r = NULL;
	}
	if (rc == STATUS_TIMEOUT && detail[0] == '\0')
		snprintf(detail, n, "connection set-up timed out after %d s",
			 p->connect_timeout_s);
	if (rc != STATUS_OK)
		goto out;
	cancel = PQgetCancel(conn);
	if (cancel == NULL) {
		rc = STATUS_NOMEM;
		snprintf(detail, n, "out of memory");
		goto out;
	}
	c->conn = conn;
	c->cancel = cancel;
	c->n_prepared = 0; /* a new session has prepared nothing */
	c->in_pipeline = false;
	conn = NULL;
	cancel = NULL;
	rc = STATUS_OK;
out:
	if (rc != STATUS_OK && detail[0] == '\0' && conn != NULL)
		snprintf(detail, n, "%s", PQerrorMessage(conn));
	if (rc != STATUS_OK && detail[0] == '\0')
		snprintf(detail, n, "connection failed (%s)", status_str(rc));
	pg_one_line(detail);
	PQclear(r);
	PQfreeCancel(cancel);
	PQfinish(conn);
	return rc;
}

/*
 * True when an idle connection still looks alive.  An idle session
 * receives nothing but notices and notifications; a server that shut down
 * sends a FATAL notice and closes, which shows as readable input and then
 * end of file.  Never waits.
 */
static bool
conn_alive(struct pg_conn *c)
{
	PGconn *conn = c->conn;

	for (int i = 0; i < 4 && !c->fatal; i++) {
		struct pollfd fd = {.fd = PQsocket(conn), .events = POLLIN};
		PGnotify *note;

		if (fd.fd < 0 || PQstatus(conn) != CONNECTION_OK)
			return false;
		if (poll(&fd, 1, 0) <= 0)
			return true;
		if (!PQconsumeInput(conn))
			return false;
		while ((note = PQnotifies(conn)) != NULL)
			PQfreemem(note);
	}
	return !c->fatal && PQstatus(conn) == CONNECTION_OK;
}

/* Called with p->mu held; drops it while checking. */
static void
check_idle(struct pg_pool *p)
{
	int claimed = 0;

	for (int i = 0; i < p->size; i++) {
		struct pg_conn *c = &p->slots[i];

		c->claimed = c->state == SLOT_IDLE;
		if (c->claimed) {
			c->state = SLOT_CHECKING;
			claimed++;
		}
	}
	if (claimed == 0)
		return;
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->size; i++) {
		struct pg_conn *c = &p->slots[i];

		if (c->claimed && !conn_alive(c)) {
			log_debug(NULL, "idle database connection lost: %s",
				  PQerrorMessage(c->conn));
			slot_close(c);
		}
	}
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->size; i++) {
		struct pg_conn *c = &p->slots[i];

		if (c->claimed && c->conn != NULL)
			slot_idle(p, c);
		else if (c->claimed)
			c->state = SLOT_DOWN;
		c->claimed = false;
	}
}

/* Records an attempt's outcome.  Called with p->mu held; logs after
 * dropping it. */
static void
attempt_done(struct pg_pool *p, struct pg_conn *c, int rc, const char *detail)
{
	bool came_back = false, went_away = false;
	int delay = 0;

	if (rc == STATUS_OK) {
		count(&p->connects);
		if (c->ever_connected)
			count(&p->reconnects);
		c->ever_connected = true;
		slot_idle(p, c);
		came_back = !p->ready;
		p->ready = true;
		p->failures = 0;
		p->next_attempt_ms = 0;
		p->last_error[0] = '\0';
	} else {
		count(&p->connect_failures);
		c->state = SLOT_DOWN;
		went_away = p->ready || !p->attempted;
		p->ready = false;
		p->failures++;
		delay = PG_RECONNECT_MIN_MS
			<< (p->failures - 1 < PG_BACKOFF_SHIFT_MAX
				    ? p->failures - 1
				    : PG_BACKOFF_SHIFT_MAX);
		if (delay > p->reconnect_max_ms || delay <= 0)
			delay = p->reconnect_max_ms;
		p->next_attempt_ms = clock_mono_ms() + delay;
		snprintf(p->last_error, sizeof(p->last_error), "%s", detail);
	}
	p->attempted = true;
	pthread_cond_broadcast(&p->slot_cv);
	if (!p->ready)
		queue_wake_all(p);

	pthread_mutex_unlock(&p->mu);
	if (came_back)
		log_info(NULL, "database connection established");
	else if (went_away)
		log_warn(NULL,
			 "database unreachable, retrying with backoff up to "
			 "%d ms: %s",
			 p->reconnect_max_ms, detail);
	else if (rc != STATUS_OK)
		log_debug(NULL,
			  "database still unreachable, next try in %d "
			  "ms: %s",
			  delay, detail);
	pthread_mutex_lock(&p->mu);
}

static void *
pg_maintainer(void *arg)
{
	struct pg_pool *p = arg;
	int64_t next_check = clock_mono_ms() + PG_CHECK_INTERVAL_MS;
	char detail[sizeof(p->last_error)];

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		int64_t now = clock_mono_ms(), wake = next_check;
		struct pg_conn *down = NULL;
		int rc;

		for (int i = 0; i < p->size && down == NULL; i++)
			if (p->slots[i].state == SLOT_DOWN)
				down = &p->slots[i];
		if (down != NULL && now >= p->next_attempt_ms) {
			down->state = SLOT_CONNECTING;
			pthread_mutex_unlock(&p->mu);
			rc = slot_connect(p, down, detail, sizeof(detail));
			pthread_mutex_lock(&p->mu);
			if (rc == STATUS_CLOSED)
				down->state = SLOT_DOWN;
			else
				attempt_done(p, down, rc, detail);
			continue;
		}
		if (now >= next_check) {
			check_idle(p);
			next_check = clock_mono_ms() + PG_CHECK_INTERVAL_MS;
			continue;
		}
		if (down != NULL && p->next_attempt_ms < wake)
			wake = p->next_attempt_ms;
		cond_wait_until(&p->maint_cv, &p->mu, wake);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the pool ---------------------------------------------------------- */

int
pg_error_set(struct pg_error *err, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		va_start(ap, fmt);
		vsnprintf(err->client, sizeof(err->client), fmt, ap);
		va_end(ap);
		snprintf(err->detail, sizeof(err->detail), "%s", err->client);
		err->sqlstate[0] = '\0';
	}
	return rc;
}

int
pg_check_range(struct pg_error *err, const char *what, int v, int lo, int hi)
{
	if (v >= lo && v <= hi)
		return STATUS_OK;
	return pg_error_set(err, STATUS_INVALID,
			    "%s %d is out of range: expected %d to %d", what, v,
			    lo, hi);
}

/*
 * libpq's parse errors quote the part it could not parse, and some quote
 * the whole URI: with a password in it.  Quoted text is replaced by "...",
 * except the option name of an unknown option, which is what the operator
 * needs to see and is never a secret.
 */
static void
redact_quotes(char *s, size_t size)
{
	static const char *const keep[] = {"invalid connection option \"",
					   "invalid URI query parameter: \""};
	char out[sizeof(((struct pg_error *)0)->detail)];
	size_t n = 0;
	bool in = false;

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (strstr(s, keep[i]) != NULL)
			return;
	for (const char *r = s; *r != '\0' && n + 5 < sizeof(out); r++) {
		if (*r == '"') {
			in = !in;
			out[n++] = '"';
			if (in) {
				memcpy(out + n, "...", 3);
				n += 3;
			}
		} else if (!in) {
			out[n++] = *r;
		}
	}
	out[n] = '\0';
	snprintf(s, size, "%s", out);
}

static int
check_config(const struct pg_pool_config *cfg, struct pg_error *err)
{
	char *msg = NULL;
	PQconninfoOption *opts;

	if (cfg->conninfo == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "the database connection string is "
				    "missing");
	if (pg_check_range(err, "database pool size", cfg->size, 1,
			   PG_POOL_SIZE_MAX) ||
	    pg_check_range(err, "database statement timeout (ms)",
			   cfg->statement_timeout_ms, 1,
			   PG_STATEMENT_TIMEOUT_MAX_MS) ||
	    pg_check_range(err, "database connect timeout (s)",
			   cfg->connect_timeout_s, 0,
			   PG_CONNECT_TIMEOUT_MAX_S) ||
	    pg_check_range(err, "database acquire timeout (ms)",
			   cfg->acquire_timeout_ms, 0,
			   PG_ACQUIRE_TIMEOUT_MAX_MS) ||
	    pg_check_range(err, "database acquire queue", cfg->queue_max, 0,
			   PG_QUEUE_MAX))
		return STATUS_INVALID;
	if (cfg->reconnect_max_ms != 0 &&
	    pg_check_range(err, "database reconnect backoff cap (ms)",
			   cfg->reconnect_max_ms, PG_RECONNECT_MIN_MS,
			   PG_RECONNECT_MAX_MS))
		return STATUS_INVALID;
	opts = PQconninfoParse(cfg->conninfo, &msg);
	if (opts == NULL) {
		pg_error_set(err, STATUS_INVALID,
			     "the database connection string is invalid: "
			     "expected key=value pairs or a "
			     "postgresql:// URI");
		if (err != NULL) {
			snprintf(err->detail, sizeof(err->detail),
				 "invalid database connection string: %s",
				 msg != NULL ? msg : "out of memory");
			redact_quotes(err->detail, sizeof(err->detail));
			pg_one_line(err->detail);
		}
		PQfreemem(msg);
		return STATUS_INVALID;
	}
	PQconninfoFree(opts);
	return STATUS_OK;
}

static void
pool_destroy(struct pg_pool *p, bool sync_ok)
{
	if (p->thread_started) {
		pthread_mutex_lock(&p->mu);
		p->stopping = true;
		pthread_cond_broadcast(&p->maint_cv);
		pthread_cond_broadcast(&p->slot_cv);
		/* acquirers still waiting leave with STATUS_CLOSED before
		 * the pool goes */
		queue_wake_all(p);
		while (p->waiting > 0)
			pthread_cond_wait(&p->slot_cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		while (write(p->stop_wr, "x", 1) < 0 && errno == EINTR)
			;
		pthread_join(p->thread, NULL);
	}
	if (p->in_use > 0)
		log_error(NULL,
			  "database pool freed with %d connections "
			  "still leased",
			  p->in_use);
	for (int i = 0; i < p->size; i++)
		slot_close(&p->slots[i]);
	if (sync_ok) {
		pthread_cond_destroy(&p->maint_cv);
		pthread_cond_destroy(&p->slot_cv);
		pthread_mutex_destroy(&p->mu);
	}
	if (p->stop_rd >= 0)
		close(p->stop_rd);
	if (p->stop_wr >= 0)
		close(p->stop_wr);
	free(p->conninfo);
	free(p);
}

int
pg_pool_new(const struct pg_pool_config *cfg, struct pg_pool **out,
	    struct pg_error *err)
{
	struct pg_pool *p = NULL;
	pthread_condattr_t attr;
	bool attr_ok = false, sync_ok = false;
	int fds[2];
	int rc = STATUS_NOMEM, k = 0;

	err_clear(err);
	if (out != NULL)
		*out = NULL;
	if (out == NULL || cfg == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "no database pool configuration");
	rc = check_config(cfg, err);
	if (rc != STATUS_OK)
		return rc;
	rc = STATUS_NOMEM;

	p = calloc(1, sizeof(*p) + (size_t)cfg->size * sizeof(p->slots[0]));
	if (p == NULL)
		goto out;
	p->stop_rd = p->stop_wr = -1;
	p->size = cfg->size;
	p->statement_timeout_ms = cfg->statement_timeout_ms;
	p->connect_timeout_s = cfg->connect_timeout_s != 0
				       ? cfg->connect_timeout_s
				       : PG_DEFAULT_CONNECT_TIMEOUT_S;
	p->acquire_timeout_ms = cfg->acquire_timeout_ms != 0
					? cfg->acquire_timeout_ms
					: PG_DEFAULT_ACQUIRE_TIMEOUT_MS;
	p->queue_max = cfg->queue_max != 0
			       ? cfg->queue_max
			       : PG_DEFAULT_QUEUE_PER_CONN * cfg->size;
	p->queue_tail = &p->queue;
	p->reconnect_max_ms = cfg->reconnect_max_ms != 0
				      ? cfg->reconnect_max_ms
				      : PG_DEFAULT_RECONNECT_MAX_MS;
	snprintf(p->timeout_value, sizeof(p->timeout_value), "%d",
		 p->statement_timeout_ms);
	p->conninfo = strdup(cfg->conninfo);
	if (p->conninfo == NULL)
		goto out;
	/* Defaults first: the expanded conninfo (dbname) overrides them. */
	p->keywords[k] = "application_name";
	p->values[k++] = "sextant";
	/* Notice a peer that vanished without closing (no FIN): about 60 s. */
	p->keywords[k] = "keepalives_idle";
	p->values[k++] = "30";
	p->keywords[k] = "keepalives_interval";
	p->values[k++] = "10";
	p->keywords[k] = "keepalives_count";
	p->values[k++] = "3";
	/* No JIT: Sextant's statements are index range scans feeding small
	 * aggregates, and JIT compilation (started by the planner's row
	 * estimates on a large spans table) was measured at 0.3 to 8 s,
	 * many times the query.  A conninfo "options" overrides this. */
	p->keywords[k] = "options";
	p->values[k++] = "-c jit=off";
	p->keywords[k] = "dbname";
	p->values[k++] = p->conninfo;
	p->keywords[k] = NULL;
	p->values[k] = NULL;
	atomic_init(&p->queries, 0);
	atomic_init(&p->errors, 0);
	atomic_init(&p->timeouts, 0);
	atomic_init(&p->cancels, 0);
	atomic_init(&p->connects, 0);
	atomic_init(&p->reconnects, 0);
	atomic_init(&p->connect_failures, 0);
	atomic_init(&p->acquire_timeouts, 0);
	atomic_init(&p->acquire_full, 0);
	for (int i = 0; i < p->size; i++) {
		p->slots[i].pool = p;
		p->slots[i].state = SLOT_DOWN;
		atomic_init(&p->slots[i].cancel_sent, false);
	}

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = STATUS_IO;
		err_set(err, NULL, "cannot start the database pool", "pipe: %s",
			strerror(errno));
		goto out;
	}
	p->stop_rd = fds[0];
	p->stop_wr = fds[1];
	if (pthread_condattr_init(&attr) != 0)
		goto out;
	attr_ok = true;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0)
		goto out;
	if (pthread_mutex_init(&p->mu, NULL) != 0)
		goto out;
	if (pthread_cond_init(&p->slot_cv, &attr) != 0) {
		pthread_mutex_destroy(&p->mu);
		goto out;
	}
	if (pthread_cond_init(&p->maint_cv, &attr) != 0) {
		pthread_cond_destroy(&p->slot_cv);
		pthread_mutex_destroy(&p->mu);
		goto out;
	}
	sync_ok = true;

	p->thread_started =
		pool_thread_create(&p->thread, pg_maintainer, p) == 0;
	if (!p->thread_started)
		goto out;

	*out = p;
	p = NULL;
	rc = STATUS_OK;
out:
	if (rc == STATUS_NOMEM)
		err_set(err, NULL, "cannot start the database pool",
			"out of memory or threads");
	if (p != NULL)
		pool_destroy(p, sync_ok);
	if (attr_ok)
		pthread_condattr_destroy(&attr);
	return rc;
}

void
pg_pool_free(struct pg_pool *p)
{
	if (p != NULL)
		pool_destroy(p, true);
}

bool
pg_pool_ready(struct pg_pool *p)
{
	bool ready;

	if (p == NULL)
		return false;
	pthread_mutex_lock(&p->mu);
	ready = p->ready;
	pthread_mutex_unlock(&p->mu);
	return ready;
}

int
pg_pool_wait_ready(struct pg_pool *p, int timeout_ms, struct pg_error *err)
{
	int64_t deadline;
	bool ready;

	err_clear(err);
	if (p == NULL)
		return misuse(err, "no pool");
	deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&p->mu);
	while (!p->ready && !p->stopping && clock_mono_ms() < deadline)
		cond_wait_until(&p->slot_cv, &p->mu, deadline);
	ready = p->ready;
	if (!ready)
		err_set(err, NULL, MSG_UNAVAILABLE,
			"the database is not reachable: %s",
			p->last_error[0] != '\0' ? p->last_error
						 : "no connection yet");
	pthread_mutex_unlock(&p->mu);
	return ready ? STATUS_OK : STATUS_TIMEOUT;
}

void
pg_pool_last_error(struct pg_pool *p, struct pg_error *err)
{
	err_clear(err);
	if (p == NULL || err == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->last_error[0] != '\0')
		err_set(err, NULL, MSG_UNAVAILABLE, "%s", p->last_error);
	pthread_mutex_unlock(&p->mu);
}

void
pg_pool_stats(struct pg_pool *p, struct pg_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof(*out));
	if (p == NULL)
		return;
	out->queries = atomic_load(&p->queries);
	out->errors = atomic_load(&p->errors);
	out->timeouts = atomic_load(&p->timeouts);
	out->cancels = atomic_load(&p->cancels);
	out->connects = atomic_load(&p->connects);
	out->reconnects = atomic_load(&p->reconnects);
	out->connect_failures = atomic_load(&p->connect_failures);
	out->acquire_timeouts = atomic_load(&p->acquire_timeouts);
	out->acquire_full = atomic_load(&p->acquire_full);
	out->size = p->size;
	pthread_mutex_lock(&p->mu);
	out->in_use = p->in_use;
	out->waiting = p->waiting;
	for (int i = 0; i < p->size; i++)
		if (p->slots[i].state == SLOT_IDLE)
			out->idle++;
	out->ready = p->ready;
	pthread_mutex_unlock(&p->mu);
}

/* ---- text values ---------------------------------------------------------- */

int
pg_text_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return STATUS_INVALID;
	*out = v;
	return STATUS_OK;
}

int
pg_text_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-')
		return STATUS_INVALID;
	*out = v;
	return STATUS_OK;
}

/* v in units of 1/per_s seconds, with digits fraction digits. */
static void
ts_text(int64_t v, int64_t per_s, int digits, char *buf, size_t cap)
{
	int64_t s = v >= 0 ? v / per_s : (v - per_s + 1) / per_s;
	time_t t = (time_t)s;
	struct tm tm;

	gmtime_r(&t, &tm);
	/* the year fits 5 digits (timerange bounds it), all else 2 or 3 */
	snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d.%0*" PRId64 "+00",
		 (tm.tm_year + 1900) % 100000, (tm.tm_mon + 1) % 100,
		 tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
		 tm.tm_sec % 100, digits, v - s * per_s);
}

void
pg_ts_text(int64_t ms, char *buf, size_t cap)
{
	ts_text(ms, 1000, 3, buf, cap);
}

void
pg_ts_text_us(int64_t us, char *buf, size_t cap)
{
	ts_text(us, 1000000, 6, buf, cap);
}

int
pg_bad_row(struct pg_error *err, const char *what)
{
	snprintf(err->client, sizeof(err->client),
		 "the telemetry store returned an unexpected %s", what);
	snprintf(err->detail, sizeof(err->detail), "unparsable %s", what);
	err->sqlstate[0] = '\0';
	return STATUS_IO;
}

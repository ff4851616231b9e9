/*
 * pg.h - the libpq connection pool: a fixed number of connections to the
 * telemetry database, bound parameters only, a statement timeout on every
 * query, cancellation, COPY FROM STDIN, and reconnection in the background.
 *
 * Ownership: a pool owns its connections.  pg_acquire lends one (struct
 * pg_conn) to the caller until pg_release; the caller then owns it alone.
 * Every PGresult handed out belongs to the caller, who frees it with
 * PQclear().
 *
 * Thread-safety: every pg_pool_* function, pg_acquire, pg_release and the
 * pg_cancel_* functions may be called from any thread.  A struct pg_conn
 * is used by one thread at a time (the one holding the lease; it may hand
 * it to another thread, never share it): libpq forbids two threads on one
 * PGconn.  pg_cancel is the one call that reaches a leased connection from
 * another thread, and it only sends a cancel request.
 *
 * Acquire rule (two queries of one tool call): a caller that already holds
 * a connection may acquire a second one, and so on; every acquire waits at
 * most its timeout and then fails with STATUS_TIMEOUT, never forever, so
 * callers holding connections while waiting for more cannot deadlock.  Such
 * a caller must give up (release what it holds) on STATUS_TIMEOUT rather
 * than retry in a loop, or ask for the extra one with timeout 0.  A pool of
 * size 1 serves one connection per call.
 *
 * Waiting is fair: acquirers that find every connection leased queue, and
 * each connection released goes to the one that has waited longest (no
 * later acquirer takes it first).  The queue is bounded (queue_max); past
 * it an acquire fails at once.
 *
 * Errors: every failing call fills a struct pg_error (when one is given)
 * with a message safe for a client (never SQL, never libpq's text) and the
 * detail for the log (libpq's message, SQLSTATE).  Neither contains a
 * password: libpq's connection errors name host, port, user and database
 * at most, and the quoted parts of a connection-string parse error are
 * replaced by "..." (libpq may quote the whole URI there).
 */
#ifndef SEXTANT_PG_H
#define SEXTANT_PG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "base/status.h"

/* Bounds checked by pg_pool_new.  PostgreSQL's max_connections defaults to
 * 100; 256 connections from one gateway is already far past useful. */
#define PG_POOL_SIZE_MAX	    256
#define PG_STATEMENT_TIMEOUT_MAX_MS (24 * 3600 * 1000)
#define PG_CONNECT_TIMEOUT_MAX_S    300
#define PG_ACQUIRE_TIMEOUT_MAX_MS   (10 * 60 * 1000)
/* Acquirers waiting at once: each is a thread, and a gateway runs at most
 * 1024 workers besides its own few. */
#define PG_QUEUE_MAX	    4096
#define PG_RECONNECT_MIN_MS 100 /* first retry after a failed connect */
#define PG_RECONNECT_MAX_MS (10 * 60 * 1000) /* bound of the cap */
/* Defaults for the config fields left 0. */
#define PG_DEFAULT_CONNECT_TIMEOUT_S  5
#define PG_DEFAULT_ACQUIRE_TIMEOUT_MS 5000
#define PG_DEFAULT_RECONNECT_MAX_MS   5000
/* queue_max 0: this many waiters per connection.  A waiter that far back
 * waits for eight statements per connection ahead of it: a burst that size
 * is served within a few statement times, one longer is better told to
 * come back than kept. */
#define PG_DEFAULT_QUEUE_PER_CONN 8
/* Parameters per statement (the protocol's own limit is 65535). */
#define PG_PARAMS_MAX 65535

struct pg_pool_config {
	/* libpq key=value string or postgresql:// URI; copied.  Its
	 * connect_timeout is ignored (connect_timeout_s applies). */
	const char *conninfo;
	int size;		  /* connections, 1..PG_POOL_SIZE_MAX */
	int statement_timeout_ms; /* every statement, 1..MAX (required) */
	int connect_timeout_s;	  /* per attempt; 0: default */
	int acquire_timeout_ms;	  /* pg_acquire with timeout < 0; 0: default */
	/* acquirers that may wait at once, 0..PG_QUEUE_MAX; 0: default
	 * (PG_DEFAULT_QUEUE_PER_CONN per connection) */
	int queue_max;
	int reconnect_max_ms; /* backoff cap, PG_RECONNECT_MIN_MS..MAX; 0: default */
};

/* Always NUL-terminated; cut when longer.  sqlstate is "" when the error
 * did not come from the server. */
struct pg_error {
	char client[256]; /* safe to show a client */
	char detail[512]; /* for the log only */
	char sqlstate[6];
};

/* Fills err (when not NULL) with a message of our own, the same text as
 * client and detail, no sqlstate; returns rc.  For the store's callers
 * that refuse a request before it reaches the server. */
int pg_error_set(struct pg_error *err, int rc, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

/* STATUS_OK when lo <= v <= hi; else STATUS_INVALID with err saying
 * "<what> <v> is out of range: expected <lo> to <hi>".  For the
 * settings the pool and the listener check before they connect. */
int pg_check_range(struct pg_error *err, const char *what, int v, int lo,
		   int hi);

/* Counters for /metrics: totals since pg_pool_new, and gauges. */
struct pg_stats {
	uint64_t queries;    /* statements sent (queries, scripts, COPY) */
	uint64_t errors;     /* statements that failed, for any reason */
	uint64_t timeouts;   /* ... of which timed out */
	uint64_t cancels;    /* ... of which were cancelled */
	uint64_t connects;   /* connections established */
	uint64_t reconnects; /* ... of which replaced a lost one */
	uint64_t connect_failures; /* failed connection attempts */
	uint64_t acquire_timeouts; /* pg_acquire calls that timed out */
	uint64_t acquire_full;	   /* ... refused: the wait queue was full */
	int size;
	int in_use;  /* leased now */
	int waiting; /* acquirers queued now */
	int idle;    /* connected and free now */
	bool ready;
};

struct pg_pool;
struct pg_conn;
struct pg_cancel_token;

/*
 * Checks cfg and starts the pool: a background thread opens the
 * connections, checks idle ones every half second, and replaces lost ones
 * with exponential backoff (PG_RECONNECT_MIN_MS doubling up to
 * reconnect_max_ms).  Does not wait for the database and does not fail
 * when it is down: the pool is not ready until a connection succeeds (see
 * pg_pool_wait_ready).  STATUS_INVALID for a bad config (a field out of
 * range, a conninfo libpq cannot parse; err says which), STATUS_NOMEM.
 * *out is NULL on failure.  Free with pg_pool_free.
 */
int pg_pool_new(const struct pg_pool_config *cfg, struct pg_pool **out,
		struct pg_error *err) WUR;

/*
 * Stops the background thread (interrupting a connection attempt) and
 * closes every connection.  Acquirers waiting in the queue leave with
 * STATUS_CLOSED first.  Every leased connection must have been released
 * first.  Accepts NULL.
 */
void pg_pool_free(struct pg_pool *p);

/*
 * True while the database is reachable: the last connection attempt
 * succeeded (or none was needed since).  False from pg_pool_new until the
 * first connection, and from the first failed attempt until one succeeds
 * again.  Idle connections are checked every half second, so a database
 * that went away turns this false within about that.  For /readyz.
 */
bool pg_pool_ready(struct pg_pool *p);

/* Waits up to timeout_ms for the pool to be ready: STATUS_OK, or
 * STATUS_TIMEOUT (err says why: the last connection error). */
int pg_pool_wait_ready(struct pg_pool *p, int timeout_ms,
		       struct pg_error *err) WUR;

/* The last connection error (client message, detail); all empty when the
 * last attempt succeeded. */
void pg_pool_last_error(struct pg_pool *p, struct pg_error *err);

/* A snapshot of the counters; out is filled entirely. */
void pg_pool_stats(struct pg_pool *p, struct pg_stats *out);

/*
 * Leases a free connection.  Waits up to timeout_ms (negative: the pool's
 * acquire_timeout_ms; 0: no wait; at most PG_ACQUIRE_TIMEOUT_MAX_MS) for
 * one to be free, in the pool's queue, served first come first served.
 * An idle connection the server closed since its last check is replaced,
 * not handed out.  Errors:
 * - STATUS_TIMEOUT: none became free in time (the client message says
 *   how long it waited, how many are in use and wait, and to try again);
 * - STATUS_FULL: queue_max acquirers wait already; at once, without
 *   waiting (the same kind of message);
 * - STATUS_IO: the database is unreachable (pool not ready), at once or
 *   as soon as that is known while waiting;
 * - STATUS_CANCELLED: cancel is cancelled, before or while waiting
 *   (pg_cancel wakes the waiter at once);
 * - STATUS_CLOSED: the pool is being freed (pg_pool_free wakes waiters);
 * - STATUS_INVALID for NULL p or out, STATUS_NOMEM.
 *
 * cancel (borrowed, may be NULL) ties the lease to a tool call: pg_cancel
 * on it cancels whatever runs on this connection, now or later in the
 * lease.  It must stay alive until pg_release.  One token acquires from
 * one pool at a time.
 */
int pg_acquire(struct pg_pool *p, struct pg_cancel_token *cancel,
	       int timeout_ms, struct pg_conn **out, struct pg_error *err) WUR;

/*
 * Ends the lease.  An open or failed transaction is rolled back and a
 * statement timeout changed with pg_set_timeout is reset.  A connection
 * that is broken, still in a COPY or a statement, or that received a
 * cancel request (which could still land on a later statement) is closed
 * instead, and replaced in the background.  Accepts NULL.  Callers must
 * not change other session state (SET without LOCAL, temporary tables):
 * the next lease would see it.
 */
void pg_release(struct pg_conn *c);

/*
 * Runs one statement (no ';'-separated lists) with text parameters bound
 * out of band: values[i] is $<i+1>, NULL for SQL NULL, never spliced into
 * sql.  nparams 0..PG_PARAMS_MAX.  On success (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK) *out, when out is not NULL, receives the result: the
 * caller PQclear()s it.  Results are held in memory whole: bound the rows
 * in the SQL (LIMIT).  Errors:
 * - STATUS_TIMEOUT: the statement timeout (the connection stays usable),
 *   or no answer at all for as long again past it, 1 to 5 s (the
 *   connection is then treated as lost);
 * - STATUS_CANCELLED: pg_cancel; when it came before the call, nothing
 *   is sent;
 * - STATUS_IO: the connection is lost (release it: the pool replaces it),
 *   or any other server error;
 * - STATUS_INVALID: a data or constraint error (SQLSTATE class 22/23), or
 *   misuse (a statement already running, a COPY sent as a query).
 */
int pg_query(struct pg_conn *c, const char *sql, int nparams,
	     const char *const *values, PGresult **out,
	     struct pg_error *err) WUR;

/*
 * pg_query in two halves, to run statements on two connections at once
 * from one thread: pg_send returns once the statement is sent; pg_result
 * waits for its result (same errors and ownership as pg_query).  One
 * statement at a time per connection: every pg_send is followed by
 * pg_result before the next.
 */
int pg_send(struct pg_conn *c, const char *sql, int nparams,
	    const char *const *values, struct pg_error *err) WUR;
int pg_result(struct pg_conn *c, PGresult **out, struct pg_error *err) WUR;

/*
 * Named prepared statements, for the statements a tool call runs every
 * time: parsed and analysed once per connection, and with generic set
 * planned once too.  Declare each as a static const struct pg_stmt; the
 * pool tells statements apart by name, so a name is one SQL text for the
 * whole program (prefixed with the module that owns it, e.g.
 * "spanquery_walk").
 *
 * pg_send_prepared is pg_send for such a statement (collect with
 * pg_result; same errors and ownership).  The first time on a connection
 * the statement's Parse goes ahead of it in the same round trip (libpq's
 * pipeline mode); later calls send only Bind and Execute.  A connection
 * knows up to PG_PREPARED_MAX statements; past that, statements run
 * unnamed as pg_send would.  What a connection prepared is forgotten when
 * it is replaced (reconnection): the new session prepares again.  An
 * execution that finds its statement gone or its cached plan unusable
 * (SQLSTATE 26000, 0A000: a migration changed a table under it) fails as
 * any statement would and the connection is closed at release, so that
 * the next session starts clean.
 *
 * Plans: PostgreSQL plans a prepared statement for its values (a custom
 * plan, as pg_send gets) for five executions, then keeps one generic plan
 * only when it is estimated no dearer, which over partitioned tables it
 * rarely is.  generic = true asks for the generic plan from the first
 * execution on (plan_cache_mode = force_generic_plan, set for the
 * statement's own transaction in the same round trip; in a transaction the
 * caller opened it lasts until that ends): no planning per call.  Only for
 * statements whose generic plan was checked (EXPLAIN ANALYZE EXECUTE under
 * force_generic_plan) to be as good for every value: no "$n IS NULL OR"
 * filters, which a generic plan cannot turn into index conditions.  A
 * generic plan over a partitioned table prunes partitions as it starts
 * ("Subplans Removed").
 */
#define PG_PREPARED_MAX	 32
#define PG_STMT_NAME_MAX 63 /* NAMEDATALEN - 1 */
struct pg_stmt {
	const char *name; /* 1..PG_STMT_NAME_MAX bytes, unique per SQL */
	const char *sql;
	int nparams;  /* 0..PG_PARAMS_MAX; values[i] is $<i+1> */
	bool generic; /* force the generic plan (see above) */
	bool binary;  /* results in binary format (PQfformat 1): each
		       * type's send format, e.g. int8 as 8 bytes in network
		       * order, timestamptz as int8 microseconds since
		       * 2000-01-01 UTC, bytea and text as their bytes */
};

int pg_send_prepared(struct pg_conn *c, const struct pg_stmt *st,
		     const char *const *values, struct pg_error *err) WUR;
/*
 * pg_send_prepared with a statement timeout of timeout_ms for this
 * statement alone (set for its own transaction in the same round trip; in
 * a transaction the caller opened it lasts until that ends), e.g. a
 * shorter bound for a statement that has a fallback.  timeout_ms <= 0: the
 * connection's.  Not with a statement past PG_PREPARED_MAX (run unnamed:
 * the connection's timeout applies).
 */
int pg_send_prepared_within(struct pg_conn *c, const struct pg_stmt *st,
			    const char *const *values, int timeout_ms,
			    struct pg_error *err) WUR;
int pg_query_prepared(struct pg_conn *c, const struct pg_stmt *st,
		      const char *const *values, PGresult **out,
		      struct pg_error *err) WUR;
/* How many statements this connection has prepared (for tests). */
int pg_prepared_count(const struct pg_conn *c);

/*
 * Values of text-format results and parameters, shared by the store
 * queries.  pg_text_i64 / pg_text_u64: the whole string is one decimal
 * integer in range (no sign for u64), else STATUS_INVALID.  pg_ts_text:
 * Unix ms as a timestamptz literal PostgreSQL reads the same in any
 * TimeZone ("2026-11-21 10:00:00.123+00"), into PG_TS_TEXT_MAX bytes;
 * pg_ts_text_us the same from Unix microseconds (".123456").
 * pg_bad_row: fills err for a result value that does not parse ("the
 * telemetry store returned an unexpected <what>") and returns STATUS_IO.
 */
#define PG_TS_TEXT_MAX 48
int pg_text_i64(const char *s, int64_t *out) WUR;
int pg_text_u64(const char *s, uint64_t *out) WUR;
void pg_ts_text(int64_t ms, char *buf, size_t cap);
void pg_ts_text_us(int64_t us, char *buf, size_t cap);
int pg_bad_row(struct pg_error *err, const char *what);

/* BEGIN, COMMIT, ROLLBACK.  A COMMIT of a failed transaction rolls it back
 * and fails with STATUS_IO. */
int pg_begin(struct pg_conn *c, struct pg_error *err) WUR;
int pg_commit(struct pg_conn *c, struct pg_error *err) WUR;
int pg_rollback(struct pg_conn *c, struct pg_error *err) WUR;

/*
 * A read-only transaction (BEGIN READ ONLY: a write in it is refused,
 * SQLSTATE 25006), then settings for it alone: set_config(name, value,
 * true), SET LOCAL, so that the pooled connection's session is left as it
 * was.  Two round trips, as BEGIN and a SELECT of set_config by hand.
 * settings: names and values in pairs, NULL-ended, at most PG_LOCAL_MAX
 * pairs ({"jit", "off", NULL}).  For a read that plans better with them
 * (end it with pg_rollback).  On failure the transaction is rolled back;
 * STATUS_INVALID for an odd count or too many pairs.
 */
#define PG_LOCAL_MAX 4
int pg_begin_local(struct pg_conn *c, const char *const *settings,
		   struct pg_error *err) WUR;

/*
 * Runs a parameterless SQL script that may hold several ';'-separated
 * statements (simple query protocol; implicitly one transaction unless it
 * contains its own BEGIN/COMMIT).  ONLY for SQL shipped with the program
 * (migrations), never for text that came from a client.
 */
int pg_exec_script(struct pg_conn *c, const char *sql,
		   struct pg_error *err) WUR;

/*
 * Sets the statement timeout for the rest of this lease (1..MAX ms); the
 * pool's value is restored on release.  Call outside a transaction.
 */
int pg_set_timeout(struct pg_conn *c, int timeout_ms, struct pg_error *err) WUR;

/*
 * COPY ... FROM STDIN.  copy_sql is a constant of the program (COPY has no
 * parameters: never build it from client input).  Data is passed through
 * as is, text, CSV or binary, whatever copy_sql says.
 *
 * pg_copy_begin starts the COPY; pg_copy_put sends any number of bytes
 * (rows may span calls); pg_copy_end finishes it and reports the rows
 * copied (rows may be NULL).  pg_copy_abort abandons it: nothing is
 * written.  After an error from pg_copy_put the COPY is over (do not call
 * pg_copy_end).  The statement timeout covers the whole COPY, from
 * pg_copy_begin: raise it with pg_set_timeout for large loads.
 * pg_copy_in does all of it with one buffer.
 */
int pg_copy_begin(struct pg_conn *c, const char *copy_sql,
		  struct pg_error *err) WUR;
int pg_copy_put(struct pg_conn *c, const void *data, size_t len,
		struct pg_error *err) WUR;
int pg_copy_end(struct pg_conn *c, int64_t *rows, struct pg_error *err) WUR;
int pg_copy_abort(struct pg_conn *c, struct pg_error *err) WUR;
int pg_copy_in(struct pg_conn *c, const char *copy_sql, const void *data,
	       size_t len, int64_t *rows, struct pg_error *err) WUR;

/*
 * A cancel token for one tool call.  Pass it to pg_acquire for each of the
 * call's connections; pg_cancel then cancels the statements running on
 * them and makes every later statement (and pg_acquire) under the token
 * fail at once with STATUS_CANCELLED.  pg_cancel is thread-safe and may
 * block for the few milliseconds a cancel request takes to send.  Free
 * the token only after every connection acquired with it is released.
 */
int pg_cancel_token_new(struct pg_cancel_token **out) WUR;
void pg_cancel_token_free(struct pg_cancel_token *t); /* accepts NULL */
void pg_cancel(struct pg_cancel_token *t);
bool pg_cancel_requested(struct pg_cancel_token *t);

/* ---- helpers shared with lib/pg/pglisten ---------------------------------- */

/* libpq messages end in newlines and may span lines: s made one line for
 * logs (newlines and tabs to spaces, trailing spaces dropped). */
void pg_one_line(char *s);

/*
 * Waits until conn's socket shows one of events (returned in *got when
 * got is not NULL).  STATUS_TIMEOUT at deadline_ms (clock_mono_ms),
 * STATUS_CLOSED when stop_fd (>= 0) becomes readable, STATUS_IO without
 * a socket.
 */
int pg_sock_wait(PGconn *conn, short events, int64_t deadline_ms, int stop_fd,
		 short *got) WUR;

/*
 * Drives a connection started with PQconnectStart* to the end: STATUS_OK
 * once it is made, STATUS_IO when libpq failed (its message is in conn),
 * STATUS_TIMEOUT at deadline_ms (detail says after timeout_s seconds),
 * STATUS_CLOSED when stop_fd (>= 0) becomes readable.
 */
int pg_connect_poll(PGconn *conn, int64_t deadline_ms, int stop_fd,
		    int timeout_s, char *detail, size_t n) WUR;

#endif

/*
 * test_pg.c - unit tests for lib/pg against a real throwaway PostgreSQL
 * (test/unit/pgtest.h): bound parameters, timeouts, cancellation, two
 * connections at once, acquire limits, COPY, transactions, and the pool
 * riding out a database restart.  The cluster is removed by the group
 * teardown whatever happens.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "pg/pg.h"
#include "pgtest.h"

static struct pgtest_cluster cluster;

static const char UNAVAILABLE[] =
	"the telemetry database is unavailable; try again later";

static int
group_setup(void **state)
{
	(void)state;
	return pgtest_start(&cluster);
}

static int
group_teardown(void **state)
{
	(void)state;
	pgtest_destroy(&cluster);
	return 0;
}

static struct pg_pool *
new_pool_with(const char *conninfo, int size, int timeout_ms)
{
	struct pg_pool_config cfg = {
		.conninfo = conninfo,
		.size = size,
		.statement_timeout_ms = timeout_ms,
		.connect_timeout_s = 5,
		.acquire_timeout_ms = 2000,
		.reconnect_max_ms = 400,
	};
	struct pg_pool *p = NULL;
	struct pg_error err;

	assert_int_equal(pg_pool_new(&cfg, &p, &err), STATUS_OK);
	assert_non_null(p);
	if (pg_pool_wait_ready(p, 10000, &err) != STATUS_OK) {
		fprintf(stderr, "pool not ready: %s\n", err.detail);
		fail();
	}
	/* All connections open, so that tests start from a known state. */
	for (long deadline = pgtest_now_ms() + 10000;;) {
		struct pg_stats st;

		pg_pool_stats(p, &st);
		if (st.idle == size)
			break;
		assert_true(pgtest_now_ms() < deadline);
		pgtest_sleep_ms(10);
	}
	return p;
}

static struct pg_pool *
new_pool(int size, int timeout_ms)
{
	return new_pool_with(cluster.conninfo, size, timeout_ms);
}

static struct pg_conn *
acquire(struct pg_pool *p)
{
	struct pg_conn *c = NULL;
	struct pg_error err;
	int rc = pg_acquire(p, NULL, 2000, &c, &err);

	if (rc != STATUS_OK)
		fprintf(stderr, "acquire: %s / %s\n", err.client, err.detail);
	assert_int_equal(rc, STATUS_OK);
	assert_non_null(c);
	return c;
}

/* Runs sql with params and returns the text of row 0, column 0 (caller
 * frees), asserting success. */
static char *
query_value(struct pg_conn *c, const char *sql, int n,
	    const char *const *values)
{
	PGresult *res = NULL;
	struct pg_error err;
	char *v;
	int rc = pg_query(c, sql, n, values, &res, &err);

	if (rc != STATUS_OK)
		fprintf(stderr, "query %s: %s / %s\n", sql, err.client,
			err.detail);
	assert_int_equal(rc, STATUS_OK);
	assert_non_null(res);
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	assert_true(PQntuples(res) >= 1);
	v = strdup(PQgetvalue(res, 0, 0));
	assert_non_null(v);
	PQclear(res);
	return v;
}

static void
exec_ok(struct pg_conn *c, const char *sql)
{
	struct pg_error err;
	int rc = pg_query(c, sql, 0, NULL, NULL, &err);

	if (rc != STATUS_OK)
		fprintf(stderr, "exec %s: %s / %s\n", sql, err.client,
			err.detail);
	assert_int_equal(rc, STATUS_OK);
}

static long
backend_pid(struct pg_conn *c)
{
	char *v = query_value(c, "SELECT pg_backend_pid()", 0, NULL);
	long pid = strtol(v, NULL, 10);

	free(v);
	return pid;
}

/* ---- configuration ----------------------------------------------------- */

static void
test_config_invalid(void **state)
{
	static const struct {
		const char *conninfo;
		int size, timeout, connect, acquire, reconnect;
		const char *client; /* substring of the client message */
		const char *detail; /* substring of the detail */
	} cases[] = {
		{NULL, 2, 1000, 0, 0, 0, "connection string is missing", ""},
		{"host=x", 0, 1000, 0, 0, 0, "pool size 0", "expected 1"},
		{"host=x", PG_POOL_SIZE_MAX + 1, 1000, 0, 0, 0, "pool size",
		 "to 256"},
		{"host=x", 2, 0, 0, 0, 0, "statement timeout (ms) 0", ""},
		{"host=x", 2, -5, 0, 0, 0, "statement timeout", ""},
		{"host=x", 2, 1000, -1, 0, 0, "connect timeout", ""},
		{"host=x", 2, 1000, 0, -1, 0, "acquire timeout", ""},
		{"host=x", 2, 1000, 0, 0, 5, "reconnect backoff cap", ""},
		{"host=127.0.0.1 bogus_option=1", 2, 1000, 0, 0, 0,
		 "connection string is invalid", "bogus_option"},
		{"postgresql://u@h/db?nosuchparam=1", 2, 1000, 0, 0, 0,
		 "connection string is invalid", "nosuchparam"},
		{"host=a port", 2, 1000, 0, 0, 0,
		 "connection string is invalid",
		 "missing \"...\" after \"...\""},
		/* libpq quotes the whole URI here; the password stays out. */
		{"postgresql://u:hunter2@[::1/db", 2, 1000, 0, 0, 0,
		 "connection string is invalid", "IPv6"},
		{"host=a password hunter2", 2, 1000, 0, 0, 0,
		 "connection string is invalid", "missing"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pg_pool_config cfg = {
			.conninfo = cases[i].conninfo,
			.size = cases[i].size,
			.statement_timeout_ms = cases[i].timeout,
			.connect_timeout_s = cases[i].connect,
			.acquire_timeout_ms = cases[i].acquire,
			.reconnect_max_ms = cases[i].reconnect,
		};
		struct pg_pool *p = (struct pg_pool *)&cfg; /* not NULL */
		struct pg_error err;
		int rc = pg_pool_new(&cfg, &p, &err);

		if (rc != STATUS_INVALID || p != NULL ||
		    strstr(err.client, cases[i].client) == NULL ||
		    strstr(err.detail, cases[i].detail) == NULL)
			fprintf(stderr,
				"case %zu: rc %d client '%s' detail '%s'\n", i,
				rc, err.client, err.detail);
		assert_int_equal(rc, STATUS_INVALID);
		assert_null(p);
		assert_non_null(strstr(err.client, cases[i].client));
		assert_non_null(strstr(err.detail, cases[i].detail));
		assert_null(strstr(err.detail, "hunter2"));
		assert_null(strstr(err.client, "hunter2"));
	}
	assert_int_equal(pg_pool_new(NULL, NULL, NULL), STATUS_INVALID);
}

static void
test_null_arguments(void **state)
{
	struct pg_conn *c = (struct pg_conn *)&c;
	struct pg_error err;
	PGresult *res = (PGresult *)&res;

	(void)state;
	pg_pool_free(NULL);
	pg_release(NULL);
	pg_cancel(NULL);
	pg_cancel_token_free(NULL);
	assert_false(pg_pool_ready(NULL));
	assert_false(pg_cancel_requested(NULL));
	assert_int_equal(pg_acquire(NULL, NULL, 0, &c, &err), STATUS_INVALID);
	assert_null(c);
	assert_int_equal(pg_query(NULL, "SELECT 1", 0, NULL, &res, &err),
			 STATUS_INVALID);
	assert_null(res);
	assert_int_equal(pg_copy_end(NULL, NULL, &err), STATUS_INVALID);
	assert_int_equal(pg_cancel_token_new(NULL), STATUS_INVALID);
}

/* A valid conninfo where nothing listens: the pool starts, is not ready,
 * and acquire fails at once with the client message. */
static void
test_unreachable(void **state)
{
	char conninfo[200];
	struct pg_pool_config cfg = {.size = 2,
				     .statement_timeout_ms = 1000,
				     .reconnect_max_ms = 200};
	struct pg_pool *p = NULL;
	struct pg_conn *c = NULL;
	struct pg_error err;
	struct pg_stats st;
	long t0;
	int port = pgtest_free_port();

	(void)state;
	snprintf(conninfo, sizeof(conninfo),
		 "host=127.0.0.1 port=%d dbname=x user=y password=hunter2 "
		 "sslmode=disable",
		 port);
	cfg.conninfo = conninfo;
	assert_int_equal(pg_pool_new(&cfg, &p, &err), STATUS_OK);
	assert_int_equal(pg_pool_wait_ready(p, 1000, &err), STATUS_TIMEOUT);
	assert_false(pg_pool_ready(p));
	assert_string_equal(err.client, UNAVAILABLE);
	assert_non_null(strstr(err.detail, "refused"));

	t0 = pgtest_now_ms();
	assert_int_equal(pg_acquire(p, NULL, 5000, &c, &err), STATUS_IO);
	/* Fast: not the 5 s acquire timeout (wide margin: a loaded CI). */
	assert_true(pgtest_now_ms() - t0 < 3000);
	assert_null(c);
	assert_string_equal(err.client, UNAVAILABLE);
	assert_non_null(strstr(err.detail, "refused"));
	assert_null(strstr(err.detail, "hunter2"));

	pg_pool_last_error(p, &err);
	assert_non_null(strstr(err.detail, "refused"));
	/* The backoff keeps retrying meanwhile. */
	pgtest_sleep_ms(700);
	pg_pool_stats(p, &st);
	assert_true(st.connect_failures >= 3);
	assert_int_equal(st.connects, 0);
	assert_false(st.ready);
	pg_pool_free(p);
}

/* A loopback server that accepts TCP but never answers: its listening
 * socket (close it after the pool is freed), conninfo for it in out. */
static int
silent_server(char *out, size_t n)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(out, n,
		 "host=127.0.0.1 port=%d dbname=x user=y sslmode=disable",
		 ntohs(sa.sin_port));
	return fd;
}

/* A server that accepts TCP but never answers: the attempt ends at
 * connect_timeout_s, and pg_pool_free does not wait for an attempt in
 * progress. */
static void
test_connect_timeout_and_free(void **state)
{
	char conninfo[200];
	struct pg_pool_config cfg = {.conninfo = conninfo,
				     .size = 1,
				     .statement_timeout_ms = 1000,
				     .connect_timeout_s = 2};
	struct pg_pool *p = NULL;
	struct pg_error err;
	long t0;
	int fd = silent_server(conninfo, sizeof(conninfo));

	(void)state;
	assert_int_equal(pg_pool_new(&cfg, &p, &err), STATUS_OK);
	assert_int_equal(pg_pool_wait_ready(p, 2600, &err), STATUS_TIMEOUT);
	assert_string_equal(err.client, UNAVAILABLE);
	assert_non_null(strstr(err.detail, "timed out after 2 s"));
	/* The second attempt is under way now (backoff 100 ms). */
	pgtest_sleep_ms(100);
	t0 = pgtest_now_ms();
	pg_pool_free(p);
	/* Well under the attempt's 2 s (margin for a loaded machine). */
	assert_true(pgtest_now_ms() - t0 < 1200);
	close(fd);
}

/* ---- statements -------------------------------------------------------- */

static void
test_bound_parameters(void **state)
{
	static const char *const tricky[] = {
		"O'Reilly said \"hi\"",
		"x'); DROP TABLE pg_t_inj; --",
		"'; SELECT pg_sleep(10); --",
		"back\\slash $1 $$ dollar",
		"", /* empty string is not NULL */
	};
	struct pg_pool *p = new_pool(2, 5000);
	struct pg_conn *c = acquire(p);
	PGresult *res = NULL;
	struct pg_error err;
	char *v;

	(void)state;
	exec_ok(c, "DROP TABLE IF EXISTS pg_t_inj");
	exec_ok(c, "CREATE TABLE pg_t_inj (x text)");
	for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		const char *vals[1] = {tricky[i]};

		assert_int_equal(pg_query(c, "INSERT INTO pg_t_inj VALUES ($1)",
					  1, vals, NULL, &err),
				 STATUS_OK);
		v = query_value(c, "SELECT $1::text", 1, vals);
		assert_string_equal(v, tricky[i]);
		free(v);
		v = query_value(c, "SELECT count(*) FROM pg_t_inj WHERE x = $1",
				1, vals);
		assert_string_equal(v, "1");
		free(v);
	}
	/* The table survived and holds the data as data. */
	v = query_value(c, "SELECT count(*) FROM pg_t_inj", 0, NULL);
	assert_string_equal(v, "5");
	free(v);

	{
		const char *vals[2] = {"40", "2"};

		v = query_value(c, "SELECT $1::int + $2::int", 2, vals);
		assert_string_equal(v, "42");
		free(v);
	}
	{
		const char *vals[1] = {NULL};

		assert_int_equal(pg_query(c,
					  "SELECT $1::text IS NULL, $1::text",
					  1, vals, &res, &err),
				 STATUS_OK);
		assert_string_equal(PQgetvalue(res, 0, 0), "t");
		assert_true(PQgetisnull(res, 0, 1));
		PQclear(res);
	}
	/* Two statements in one string are refused by the protocol. */
	{
		const char *vals[1] = {"1"};

		res = (PGresult *)&res;
		assert_int_equal(pg_query(c,
					  "SELECT $1::int; DROP TABLE pg_t_inj",
					  1, vals, &res, &err),
				 STATUS_IO);
		assert_null(res);
		assert_string_equal(err.sqlstate, "42601");
	}
	exec_ok(c, "DROP TABLE pg_t_inj");
	pg_release(c);
	pg_pool_free(p);
}

/* The client message never carries SQL or the server's text. */
static void
test_error_messages(void **state)
{
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	const char *bad[1] = {"abc"};
	char *v;

	(void)state;
	assert_int_equal(
		pg_query(c, "SELEC secret_column FROM t", 0, NULL, NULL, &err),
		STATUS_IO);
	assert_string_equal(err.sqlstate, "42601");
	assert_string_equal(err.client,
			    "the telemetry database could not run the query");
	assert_null(strstr(err.client, "SELEC"));
	assert_non_null(strstr(err.detail, "sqlstate 42601"));
	assert_non_null(strstr(err.detail, "syntax error"));
	assert_null(strchr(err.detail, '\n'));

	assert_int_equal(pg_query(c, "SELECT $1::int", 1, bad, NULL, &err),
			 STATUS_INVALID);
	assert_string_equal(err.sqlstate, "22P02");
	assert_string_equal(
		err.client,
		"the telemetry database rejected a value in the request");
	assert_null(strstr(err.client, "abc"));

	assert_int_equal(pg_query(c, "SELECT * FROM no_such_table_xyz", 0, NULL,
				  NULL, &err),
			 STATUS_IO);
	assert_string_equal(err.sqlstate, "42P01");
	assert_null(strstr(err.client, "no_such_table"));

	/* Errors leave the connection usable. */
	v = query_value(c, "SELECT 7", 0, NULL);
	assert_string_equal(v, "7");
	free(v);
	pg_release(c);
	pg_pool_free(p);
}

static void
test_statement_timeout(void **state)
{
	struct pg_pool *p = new_pool(1, 200);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	struct pg_stats st;
	long t0, took, pid;
	char *v;

	(void)state;
	v = query_value(c, "SHOW statement_timeout", 0, NULL);
	assert_string_equal(v, "200ms");
	free(v);
	pid = backend_pid(c);

	t0 = pgtest_now_ms();
	assert_int_equal(pg_query(c, "SELECT pg_sleep(5)", 0, NULL, NULL, &err),
			 STATUS_TIMEOUT);
	took = pgtest_now_ms() - t0;
	assert_true(took >= 150 && took < 2000);
	assert_string_equal(err.client, "query timed out after 200 ms");
	assert_string_equal(err.sqlstate, "57014");
	pg_pool_stats(p, &st);
	assert_int_equal(st.timeouts, 1);

	/* The same session goes on. */
	assert_int_equal(backend_pid(c), pid);

	/* A longer timeout for one lease, restored on release. */
	assert_int_equal(pg_set_timeout(c, 3000, &err), STATUS_OK);
	exec_ok(c, "SELECT pg_sleep(0.4)");
	pg_release(c);
	c = acquire(p);
	assert_int_equal(backend_pid(c), pid);
	v = query_value(c, "SHOW statement_timeout", 0, NULL);
	assert_string_equal(v, "200ms");
	free(v);
	assert_int_equal(pg_set_timeout(c, 0, &err), STATUS_INVALID);
	pg_release(c);
	pg_pool_free(p);
}

/* A server that stops answering (here: its backend stopped with SIGSTOP,
 * so it cannot enforce the timeout) is given up on by the client's own
 * deadline, and the connection is replaced. */
static void
test_client_deadline(void **state)
{
	struct pg_pool *p = new_pool(1, 200);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	long pid = backend_pid(c), t0, took;

	(void)state;
	assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
	t0 = pgtest_now_ms();
	assert_int_equal(pg_query(c, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_TIMEOUT);
	took = pgtest_now_ms() - t0;
	kill((pid_t)pid, SIGCONT);
	/* 200 ms of statement timeout + the minimum grace of 1 s. */
	assert_true(took >= 1150 && took < 3000);
	assert_string_equal(err.client, "query timed out after 200 ms");
	assert_non_null(strstr(err.detail, "closing the connection"));
	/* The lease is over for this connection. */
	assert_int_equal(pg_query(c, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_IO);
	pg_release(c);
	c = acquire(p);
	assert_int_not_equal(backend_pid(c), pid);
	pg_release(c);
	pg_pool_free(p);
}

struct canceller {
	struct pg_cancel_token *token;
	long delay_ms;
};

static void *
cancel_later(void *arg)
{
	struct canceller *k = arg;

	pgtest_sleep_ms(k->delay_ms);
	pg_cancel(k->token);
	return NULL;
}

static void
test_cancel_from_thread(void **state)
{
	struct pg_pool *p = new_pool(1, 30000);
	struct pg_cancel_token *token = NULL;
	struct pg_conn *c = NULL, *c2 = NULL;
	struct canceller k;
	struct pg_error err;
	struct pg_stats st0, st;
	pthread_t th;
	long t0, took, pid;

	(void)state;
	assert_int_equal(pg_cancel_token_new(&token), STATUS_OK);
	assert_int_equal(pg_acquire(p, token, 1000, &c, &err), STATUS_OK);
	pid = backend_pid(c);
	k = (struct canceller){.token = token, .delay_ms = 300};
	assert_int_equal(pthread_create(&th, NULL, cancel_later, &k), 0);
	t0 = pgtest_now_ms();
	assert_int_equal(
		pg_query(c, "SELECT pg_sleep(20)", 0, NULL, NULL, &err),
		STATUS_CANCELLED);
	took = pgtest_now_ms() - t0;
	pthread_join(th, NULL);
	assert_true(took >= 250 && took < 5000);
	assert_string_equal(err.client, "the query was cancelled");
	assert_string_equal(err.sqlstate, "57014");
	assert_true(pg_cancel_requested(token));

	/* Later statements of the cancelled call are not even sent. */
	pg_pool_stats(p, &st0);
	assert_int_equal(pg_query(c, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_CANCELLED);
	pg_pool_stats(p, &st);
	assert_int_equal(st.queries, st0.queries);
	assert_true(st.cancels >= 2);
	pg_release(c);

	/* No new connection for a cancelled call. */
	assert_int_equal(pg_acquire(p, token, 1000, &c2, &err),
			 STATUS_CANCELLED);
	assert_null(c2);
	pg_cancel_token_free(token);

	/* A cancel during COPY ends it; nothing is written. */
	assert_int_equal(pg_cancel_token_new(&token), STATUS_OK);
	assert_int_equal(pg_acquire(p, token, 1000, &c, &err), STATUS_OK);
	exec_ok(c, "CREATE TEMP TABLE pg_t_cc (a int)");
	assert_int_equal(pg_copy_begin(c, "COPY pg_t_cc FROM STDIN", &err),
			 STATUS_OK);
	assert_int_equal(pg_copy_put(c, "1\n2\n", 4, &err), STATUS_OK);
	pg_cancel(token);
	assert_int_equal(pg_copy_put(c, "3\n", 2, &err), STATUS_CANCELLED);
	assert_string_equal(err.client, "the query was cancelled");
	assert_int_equal(pg_copy_end(c, NULL, &err), STATUS_INVALID);
	pg_release(c);
	pg_cancel_token_free(token);

	/* The cancelled backend is not reused: a late cancel request could
	 * hit the next caller's statement. */
	c = acquire(p);
	assert_int_not_equal(backend_pid(c), pid);
	exec_ok(c, "SELECT pg_sleep(0.3)");
	pg_release(c);
	pg_pool_free(p);
}

/* A cancel of a call that holds two connections reaches both. */
static void
test_cancel_two_connections(void **state)
{
	struct pg_pool *p = new_pool(2, 30000);
	struct pg_cancel_token *token = NULL;
	struct pg_conn *a = NULL, *b = NULL;
	struct canceller k;
	struct pg_error err;
	pthread_t th;
	long t0;

	(void)state;
	assert_int_equal(pg_cancel_token_new(&token), STATUS_OK);
	assert_int_equal(pg_acquire(p, token, 1000, &a, &err), STATUS_OK);
	assert_int_equal(pg_acquire(p, token, 1000, &b, &err), STATUS_OK);
	assert_int_equal(pg_send(a, "SELECT pg_sleep(20)", 0, NULL, &err),
			 STATUS_OK);
	assert_int_equal(pg_send(b, "SELECT pg_sleep(20)", 0, NULL, &err),
			 STATUS_OK);
	k = (struct canceller){.token = token, .delay_ms = 200};
	t0 = pgtest_now_ms();
	assert_int_equal(pthread_create(&th, NULL, cancel_later, &k), 0);
	assert_int_equal(pg_result(a, NULL, &err), STATUS_CANCELLED);
	assert_int_equal(pg_result(b, NULL, &err), STATUS_CANCELLED);
	assert_true(pgtest_now_ms() - t0 < 5000);
	pthread_join(th, NULL);
	pg_release(a);
	pg_release(b);
	pg_cancel_token_free(token);
	pg_pool_free(p);
}

static void
test_two_connections_one_thread(void **state)
{
	struct pg_pool *p = new_pool(2, 5000);
	struct pg_conn *a = acquire(p), *b = acquire(p);
	PGresult *ra = NULL, *rb = NULL;
	struct pg_error err;
	long t0, took;

	(void)state;
	assert_ptr_not_equal(a, b);
	assert_int_not_equal(backend_pid(a), backend_pid(b));
	t0 = pgtest_now_ms();
	assert_int_equal(pg_send(a, "SELECT 1 FROM pg_sleep(1)", 0, NULL, &err),
			 STATUS_OK);
	assert_int_equal(pg_send(b, "SELECT 2 FROM pg_sleep(1)", 0, NULL, &err),
			 STATUS_OK);
	/* One statement per connection at a time. */
	assert_int_equal(pg_send(a, "SELECT 3", 0, NULL, &err), STATUS_INVALID);
	assert_int_equal(pg_result(a, &ra, &err), STATUS_OK);
	assert_int_equal(pg_result(b, &rb, &err), STATUS_OK);
	took = pgtest_now_ms() - t0;
	/* In parallel: one sleep's time, not two (2 s). */
	assert_true(took >= 950 && took < 1900);
	assert_string_equal(PQgetvalue(ra, 0, 0), "1");
	assert_string_equal(PQgetvalue(rb, 0, 0), "2");
	PQclear(ra);
	PQclear(rb);
	/* No statement pending: nothing to wait for. */
	assert_int_equal(pg_result(a, &ra, &err), STATUS_INVALID);
	assert_null(ra);
	pg_release(a);
	pg_release(b);
	pg_pool_free(p);
}

struct releaser {
	struct pg_conn *c;
	long delay_ms;
};

static void *
release_later(void *arg)
{
	struct releaser *r = arg;

	pgtest_sleep_ms(r->delay_ms);
	pg_release(r->c);
	return NULL;
}

static void
test_acquire_timeout(void **state)
{
	struct pg_pool *p = new_pool(2, 5000);
	struct pg_conn *a = acquire(p), *b = acquire(p), *c = NULL;
	struct pg_error err;
	struct pg_stats st;
	struct releaser r;
	pthread_t th;
	long t0, took;

	(void)state;
	pg_pool_stats(p, &st);
	assert_int_equal(st.in_use, 2);
	assert_int_equal(st.idle, 0);

	/* The caller holds both and asks for a third: a timeout, not a
	 * deadlock. */
	t0 = pgtest_now_ms();
	assert_int_equal(pg_acquire(p, NULL, 200, &c, &err), STATUS_TIMEOUT);
	took = pgtest_now_ms() - t0;
	assert_true(took >= 190 && took < 1500);
	assert_null(c);
	assert_string_equal(err.client,
			    "no telemetry database connection became free in "
			    "200 ms: 2 of 2 in use, 0 more waiting; try again "
			    "later");
	t0 = pgtest_now_ms();
	assert_int_equal(pg_acquire(p, NULL, 0, &c, &err), STATUS_TIMEOUT);
	assert_true(pgtest_now_ms() - t0 < 1000);
	pg_pool_stats(p, &st);
	assert_int_equal(st.acquire_timeouts, 2);

	/* A waiter gets the connection another thread releases. */
	r = (struct releaser){.c = b, .delay_ms = 200};
	assert_int_equal(pthread_create(&th, NULL, release_later, &r), 0);
	t0 = pgtest_now_ms();
	assert_int_equal(pg_acquire(p, NULL, 3000, &c, &err), STATUS_OK);
	took = pgtest_now_ms() - t0;
	pthread_join(th, NULL);
	assert_ptr_equal(c, b);
	assert_true(took >= 150 && took < 2000);
	exec_ok(c, "SELECT 1");
	pg_release(c);
	pg_release(a);
	pg_pool_stats(p, &st);
	assert_int_equal(st.in_use, 0);
	assert_int_equal(st.idle, 2);
	pg_pool_free(p);
}

/* ---- the wait queue ---------------------------------------------------- */

/* One pg_acquire on a thread of its own.  Once it has a connection it
 * writes its id to the shared order (under mu) and, when release is set,
 * gives the connection back at once. */
struct acquirer {
	struct pg_pool *p;
	struct pg_cancel_token *token;
	int timeout_ms;
	int id;
	bool release;
	pthread_mutex_t *mu;
	int *order, *n_order;
	pthread_t th;
	int rc;
	struct pg_error err;
	struct pg_conn *c;
};

static void *
acquirer_run(void *arg)
{
	struct acquirer *a = arg;

	a->rc = pg_acquire(a->p, a->token, a->timeout_ms, &a->c, &a->err);
	if (a->rc == STATUS_OK && a->order != NULL) {
		pthread_mutex_lock(a->mu);
		a->order[(*a->n_order)++] = a->id;
		pthread_mutex_unlock(a->mu);
	}
	if (a->rc == STATUS_OK && a->release) {
		pg_release(a->c);
		a->c = NULL;
	}
	return NULL;
}

static void
acquirer_start(struct acquirer *a)
{
	assert_int_equal(pthread_create(&a->th, NULL, acquirer_run, a), 0);
}

/* Waits (10 s at most) until n acquirers are queued in p. */
static void
wait_queued(struct pg_pool *p, int n)
{
	struct pg_stats st;

	for (long deadline = pgtest_now_ms() + 10000;;) {
		pg_pool_stats(p, &st);
		if (st.waiting == n)
			return;
		if (pgtest_now_ms() > deadline) {
			fprintf(stderr, "%d queued, expected %d\n", st.waiting,
				n);
			fail();
		}
		pgtest_sleep_ms(5);
	}
}

/* Acquirers that find every connection leased are served in the order
 * they came, each connection released going to the one that waited
 * longest: not to a later acquirer, even one that asks at that very
 * moment. */
static void
test_queue_fifo(void **state)
{
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *held = acquire(p), *c = NULL;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct acquirer w[4];
	struct pg_error err;
	struct pg_stats st;
	int order[4], n = 0;

	(void)state;
	for (int i = 0; i < 4; i++) {
		w[i] = (struct acquirer){.p = p,
					 .timeout_ms = 60000,
					 .id = i,
					 .release = i > 0,
					 .mu = &mu,
					 .order = order,
					 .n_order = &n};
		acquirer_start(&w[i]);
		wait_queued(p, i + 1);
	}
	/* The release hands the connection to w[0] before w[0] even runs:
	 * an acquire in between finds none free. */
	pg_release(held);
	assert_int_equal(pg_acquire(p, NULL, 0, &c, &err), STATUS_TIMEOUT);
	assert_null(c);
	pthread_join(w[0].th, NULL);
	assert_int_equal(w[0].rc, STATUS_OK);
	assert_int_equal(n, 1);
	wait_queued(p, 3);
	pg_release(w[0].c);
	for (int i = 1; i < 4; i++) {
		pthread_join(w[i].th, NULL);
		assert_int_equal(w[i].rc, STATUS_OK);
	}
	assert_int_equal(n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(order[i], i);
	pg_pool_stats(p, &st);
	assert_int_equal(st.waiting, 0);
	assert_int_equal(st.in_use, 0);
	assert_int_equal(st.idle, 1);
	pg_pool_free(p);
}

/* A waiter leaves at its deadline with a message that says how long it
 * waited, for how many connections, and what to do; the queue forgets
 * it. */
static void
test_queue_deadline(void **state)
{
	struct pg_pool *p = new_pool(2, 5000);
	struct pg_conn *a = acquire(p), *b = acquire(p);
	struct acquirer w = {.p = p, .timeout_ms = 60000};
	struct pg_conn *c = NULL;
	struct pg_error err;
	struct pg_stats st;

	(void)state;
	acquirer_start(&w);
	wait_queued(p, 1);
	assert_int_equal(pg_acquire(p, NULL, 300, &c, &err), STATUS_TIMEOUT);
	assert_null(c);
	assert_string_equal(err.client,
			    "no telemetry database connection became free in "
			    "300 ms: 2 of 2 in use, 1 more waiting; try again "
			    "later");
	assert_non_null(strstr(err.detail, "(2 in use of 2, 1 waiting)"));
	pg_pool_stats(p, &st);
	assert_int_equal(st.waiting, 1);
	assert_int_equal(st.acquire_timeouts, 1);
	/* the waiter that stays gets the next connection */
	pg_release(a);
	pthread_join(w.th, NULL);
	assert_int_equal(w.rc, STATUS_OK);
	pg_release(w.c);
	pg_release(b);
	pg_pool_stats(p, &st);
	assert_int_equal(st.waiting, 0);
	assert_int_equal(st.in_use, 0);
	pg_pool_free(p);
}

/* pg_cancel takes a waiting acquirer out of the queue at once, with
 * STATUS_CANCELLED, while the connection it waits for is still leased;
 * the waiters behind it keep their order. */
static void
test_queue_cancel(void **state)
{
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *held = acquire(p);
	struct pg_cancel_token *token = NULL;
	struct acquirer w[3];
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int order[3], n = 0;

	(void)state;
	assert_int_equal(pg_cancel_token_new(&token), STATUS_OK);
	for (int i = 0; i < 3; i++) {
		/* the wait is the longest the pool allows: only the cancel
		 * can end it while held is out */
		w[i] = (struct acquirer){.p = p,
					 .token = i == 1 ? token : NULL,
					 .timeout_ms =
						 PG_ACQUIRE_TIMEOUT_MAX_MS,
					 .id = i,
					 .release = true,
					 .mu = &mu,
					 .order = order,
					 .n_order = &n};
		acquirer_start(&w[i]);
		wait_queued(p, i + 1);
	}
	pg_cancel(token);
	pthread_join(w[1].th, NULL);
	assert_int_equal(w[1].rc, STATUS_CANCELLED);
	assert_string_equal(w[1].err.client, "the query was cancelled");
	assert_null(w[1].c);
	wait_queued(p, 2);
	pg_release(held);
	pthread_join(w[0].th, NULL);
	pthread_join(w[2].th, NULL);
	assert_int_equal(w[0].rc, STATUS_OK);
	assert_int_equal(w[2].rc, STATUS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 2);
	pg_cancel_token_free(token);
	pg_pool_free(p);
}

/* Past queue_max waiters an acquire fails at once with STATUS_FULL. */
static void
test_queue_full(void **state)
{
	struct pg_pool_config cfg = {
		.conninfo = cluster.conninfo,
		.size = 1,
		.statement_timeout_ms = 5000,
		.queue_max = 2,
	};
	struct pg_pool *p = NULL;
	struct pg_conn *held, *c = NULL;
	struct acquirer w[2];
	struct pg_error err;
	struct pg_stats st;

	(void)state;
	assert_int_equal(pg_pool_new(&cfg, &p, &err), STATUS_OK);
	assert_int_equal(pg_pool_wait_ready(p, 10000, &err), STATUS_OK);
	held = acquire(p);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct acquirer){
			.p = p, .timeout_ms = 60000, .release = true};
		acquirer_start(&w[i]);
		wait_queued(p, i + 1);
	}
	/* no wait at all: a timeout would come only after 60 s */
	assert_int_equal(pg_acquire(p, NULL, 60000, &c, &err), STATUS_FULL);
	assert_null(c);
	assert_string_equal(err.client,
			    "too many calls wait for a telemetry database "
			    "connection: 1 of 1 in use, 2 waiting; try again "
			    "later");
	pg_pool_stats(p, &st);
	assert_int_equal(st.acquire_full, 1);
	assert_int_equal(st.acquire_timeouts, 0);
	assert_int_equal(st.waiting, 2);
	pg_release(held);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].th, NULL);
		assert_int_equal(w[i].rc, STATUS_OK);
	}
	pg_pool_free(p);
}

/* pg_pool_free wakes an acquirer waiting for the first connection (the
 * server accepts TCP and never answers) and returns once it has left,
 * with STATUS_CLOSED. */
static void
test_queue_stop(void **state)
{
	char conninfo[200];
	struct pg_pool_config cfg = {.conninfo = conninfo,
				     .size = 1,
				     .statement_timeout_ms = 1000,
				     .connect_timeout_s = 60};
	struct pg_pool *p = NULL;
	struct acquirer w;
	struct pg_error err;
	int fd = silent_server(conninfo, sizeof(conninfo));

	(void)state;
	assert_int_equal(pg_pool_new(&cfg, &p, &err), STATUS_OK);
	w = (struct acquirer){.p = p, .timeout_ms = PG_ACQUIRE_TIMEOUT_MAX_MS};
	acquirer_start(&w);
	wait_queued(p, 1);
	pg_pool_free(p);
	pthread_join(w.th, NULL);
	assert_int_equal(w.rc, STATUS_CLOSED);
	assert_string_equal(w.err.client,
			    "the telemetry database pool is shut down");
	close(fd);
}

/* ---- COPY -------------------------------------------------------------- */

#define COPY_ROWS 20000

static char *
copy_rows(size_t *len)
{
	size_t cap = (size_t)COPY_ROWS * 48, n = 0;
	char *buf = malloc(cap);

	assert_non_null(buf);
	for (int i = 1; i <= COPY_ROWS; i++) {
		int w = snprintf(buf + n, cap - n, "%d\tname\\t%d\\\\x\t%d.5\n",
				 i, i, i);

		assert_true(w > 0 && (size_t)w < cap - n);
		n += (size_t)w;
	}
	*len = n;
	return buf;
}

static void
test_copy(void **state)
{
	struct pg_pool *p = new_pool(1, 10000);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	size_t len;
	char *data = copy_rows(&len);
	const char *id[1] = {"777"};
	int64_t rows = -1;
	char *v;

	(void)state;
	exec_ok(c, "DROP TABLE IF EXISTS pg_t_copy");
	exec_ok(c, "CREATE TABLE pg_t_copy (id int, name text, v float8)");

	/* One buffer. */
	assert_int_equal(pg_copy_in(c, "COPY pg_t_copy FROM STDIN", data, len,
				    &rows, &err),
			 STATUS_OK);
	assert_int_equal(rows, COPY_ROWS);
	v = query_value(c, "SELECT count(*) || ' ' || sum(id) FROM pg_t_copy",
			0, NULL);
	assert_string_equal(v, "20000 200010000");
	free(v);
	v = query_value(c, "SELECT name FROM pg_t_copy WHERE id = $1", 1, id);
	assert_string_equal(v, "name\t777\\x");
	free(v);

	/* Streamed in pieces that split rows. */
	assert_int_equal(pg_copy_begin(c, "COPY pg_t_copy FROM STDIN", &err),
			 STATUS_OK);
	for (size_t off = 0; off < len; off += 4093) {
		size_t n = len - off < 4093 ? len - off : 4093;

		assert_int_equal(pg_copy_put(c, data + off, n, &err),
				 STATUS_OK);
	}
	/* Nothing else runs on the connection meanwhile. */
	assert_int_equal(pg_query(c, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_INVALID);
	assert_int_equal(pg_copy_end(c, &rows, &err), STATUS_OK);
	assert_int_equal(rows, COPY_ROWS);
	v = query_value(c, "SELECT count(*) FROM pg_t_copy", 0, NULL);
	assert_string_equal(v, "40000");
	free(v);

	/* A bad row fails the whole COPY and the connection goes on. */
	{
		static const char bad[] = "1\ta\t1\nnot_a_number\tb\t2\n";

		assert_int_equal(pg_copy_in(c, "COPY pg_t_copy FROM STDIN", bad,
					    sizeof(bad) - 1, &rows, &err),
				 STATUS_INVALID);
		assert_string_equal(err.sqlstate, "22P02");
		assert_string_equal(err.client, "the telemetry database "
						"rejected a value in the "
						"request");
	}
	/* Abandoned: nothing written. */
	assert_int_equal(pg_copy_begin(c, "COPY pg_t_copy FROM STDIN", &err),
			 STATUS_OK);
	assert_int_equal(pg_copy_put(c, data, len, &err), STATUS_OK);
	assert_int_equal(pg_copy_abort(c, &err), STATUS_OK);
	v = query_value(c, "SELECT count(*) FROM pg_t_copy", 0, NULL);
	assert_string_equal(v, "40000");
	free(v);

	/* Not a COPY FROM STDIN, and a COPY through pg_query. */
	assert_int_equal(pg_copy_begin(c, "COPY nope FROM STDIN", &err),
			 STATUS_IO);
	assert_string_equal(err.sqlstate, "42P01");
	assert_int_equal(pg_copy_put(c, "x", 1, &err), STATUS_INVALID);
	exec_ok(c, "DROP TABLE pg_t_copy");
	free(data);
	pg_release(c);

	c = acquire(p);
	assert_int_equal(
		pg_query(c, "COPY (SELECT 1) TO STDOUT", 0, NULL, NULL, &err),
		STATUS_INVALID);
	pg_release(c); /* dropped and replaced */
	c = acquire(p);
	exec_ok(c, "SELECT 1");
	pg_release(c);
	pg_pool_free(p);
}

/* ---- transactions and scripts ------------------------------------------ */

static void
test_transactions(void **state)
{
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	char *v;

	(void)state;
	exec_ok(c, "DROP TABLE IF EXISTS pg_t_tx");
	exec_ok(c, "CREATE TABLE pg_t_tx (a int)");

	assert_int_equal(pg_begin(c, &err), STATUS_OK);
	exec_ok(c, "INSERT INTO pg_t_tx VALUES (1)");
	assert_int_equal(pg_rollback(c, &err), STATUS_OK);
	assert_int_equal(pg_begin(c, &err), STATUS_OK);
	exec_ok(c, "INSERT INTO pg_t_tx VALUES (2)");
	assert_int_equal(pg_commit(c, &err), STATUS_OK);
	v = query_value(c, "SELECT string_agg(a::text, ',') FROM pg_t_tx", 0,
			NULL);
	assert_string_equal(v, "2");
	free(v);

	/* COMMIT of a failed transaction is an error, not a success. */
	assert_int_equal(pg_begin(c, &err), STATUS_OK);
	exec_ok(c, "INSERT INTO pg_t_tx VALUES (3)");
	assert_int_equal(pg_query(c, "SELECT 1/0", 0, NULL, NULL, &err),
			 STATUS_INVALID);
	assert_string_equal(err.sqlstate, "22012");
	assert_int_equal(pg_commit(c, &err), STATUS_IO);
	assert_string_equal(err.client,
			    "the transaction was rolled back; try again");

	/* pg_begin_local: the settings hold in the transaction alone */
	assert_int_equal(pg_begin_local(c,
					(const char *const[]){"jit", "off",
							      "enable_nestloop",
							      "off", NULL},
					&err),
			 STATUS_OK);
	v = query_value(c,
			"SELECT current_setting('jit') || ' ' || "
			"current_setting('enable_nestloop')",
			0, NULL);
	assert_string_equal(v, "off off");
	free(v);
	/* read-only: a write is refused, and the rollback still ends it */
	assert_int_not_equal(pg_query(c, "INSERT INTO pg_t_tx VALUES (5)", 0,
				      NULL, NULL, &err),
			     STATUS_OK);
	assert_string_equal(err.sqlstate, "25006");
	assert_int_equal(pg_rollback(c, &err), STATUS_OK);
	v = query_value(c, "SELECT current_setting('enable_nestloop')", 0,
			NULL);
	assert_string_equal(v, "on");
	free(v);
	/* a bad setting: refused, and no transaction is left open */
	assert_int_not_equal(
		pg_begin_local(
			c, (const char *const[]){"no_such_thing", "1", NULL},
			&err),
		STATUS_OK);
	assert_string_equal(err.sqlstate, "42704");
	/* (an aborted transaction left open would refuse this) */
	v = query_value(c, "SELECT 1", 0, NULL);
	assert_string_equal(v, "1");
	free(v);
	assert_int_equal(
		pg_begin_local(c, (const char *const[]){"jit", NULL}, &err),
		STATUS_INVALID);
	assert_non_null(strstr(err.detail, "pg_begin_local settings: expected "
					   "name and value pairs"));
	assert_non_null(strstr(err.detail, "got 1 strings"));

	/* A lease ended inside a transaction is rolled back. */
	assert_int_equal(pg_begin(c, &err), STATUS_OK);
	exec_ok(c, "INSERT INTO pg_t_tx VALUES (4)");
	pg_release(c);
	c = acquire(p);
	v = query_value(c, "SELECT count(*) FROM pg_t_tx", 0, NULL);
	assert_string_equal(v, "1");
	free(v);
	exec_ok(c, "DROP TABLE pg_t_tx");
	pg_release(c);
	pg_pool_free(p);
}

static void
test_script(void **state)
{
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	char *v;

	(void)state;
	assert_int_equal(pg_exec_script(c,
					"CREATE TABLE pg_t_s1 (a int);\n"
					"INSERT INTO pg_t_s1 VALUES (1), (2);\n"
					"CREATE INDEX ON pg_t_s1 (a);\n",
					&err),
			 STATUS_OK);
	v = query_value(c, "SELECT sum(a) FROM pg_t_s1", 0, NULL);
	assert_string_equal(v, "3");
	free(v);
	/* One implicit transaction: a failure undoes the whole script. */
	assert_int_equal(pg_exec_script(c,
					"CREATE TABLE pg_t_s2 (a int);"
					"SELECT 1/0;",
					&err),
			 STATUS_INVALID);
	assert_string_equal(err.sqlstate, "22012");
	v = query_value(c, "SELECT to_regclass('pg_t_s2') IS NULL", 0, NULL);
	assert_string_equal(v, "t");
	free(v);
	exec_ok(c, "DROP TABLE pg_t_s1");
	pg_release(c);
	pg_pool_free(p);
}

/* The same database over the Unix socket and as a URI. */
static void
test_conninfo_forms(void **state)
{
	char conninfo[300];
	struct pg_pool *p;
	struct pg_conn *c;
	char *v;

	(void)state;
	snprintf(conninfo, sizeof(conninfo),
		 "host=%s port=%d dbname=postgres user=postgres", cluster.dir,
		 cluster.port);
	p = new_pool_with(conninfo, 1, 5000);
	c = acquire(p);
	v = query_value(c, "SELECT inet_server_addr() IS NULL", 0, NULL);
	assert_string_equal(v, "t"); /* a Unix socket has no address */
	free(v);
	v = query_value(c, "SELECT current_setting('application_name')", 0,
			NULL);
	assert_string_equal(v, "sextant");
	free(v);
	pg_release(c);
	pg_pool_free(p);

	snprintf(conninfo, sizeof(conninfo),
		 "postgresql://postgres@127.0.0.1:%d/postgres?sslmode=disable&"
		 "application_name=mine",
		 cluster.port);
	p = new_pool_with(conninfo, 1, 5000);
	c = acquire(p);
	v = query_value(c, "SELECT current_setting('application_name')", 0,
			NULL);
	assert_string_equal(v, "mine"); /* the conninfo wins over defaults */
	free(v);
	pg_release(c);
	pg_pool_free(p);
}

/* ---- restart: last, it stops and starts the cluster -------------------- */

static bool
wait_ready_is(struct pg_pool *p, bool want, long within_ms)
{
	long deadline = pgtest_now_ms() + within_ms;

	while (pgtest_now_ms() < deadline) {
		if (pg_pool_ready(p) == want)
			return true;
		pgtest_sleep_ms(20);
	}
	return pg_pool_ready(p) == want;
}

static void
test_restart(void **state)
{
	struct pg_pool *p = new_pool(3, 5000);
	struct pg_conn *held = acquire(p), *c = NULL;
	struct pg_error err;
	struct pg_stats st;
	long t0, took;
	char *v;

	(void)state;
	assert_true(pg_pool_ready(p));
	t0 = pgtest_now_ms();
	pgtest_stop_server(&cluster);
	fprintf(stderr, "pg_ctl stop -m fast took %ld ms\n",
		pgtest_now_ms() - t0);
	assert_true(wait_ready_is(p, false, 5000));
	took = pgtest_now_ms() - t0;
	fprintf(stderr, "ready went false %ld ms after the stop began\n", took);

	/* Calls fail fast with the client message while it is down. */
	t0 = pgtest_now_ms();
	assert_int_equal(pg_acquire(p, NULL, 3000, &c, &err), STATUS_IO);
	/* Not the 3 s acquire timeout (margin for a loaded machine). */
	assert_true(pgtest_now_ms() - t0 < 2000);
	assert_string_equal(err.client, UNAVAILABLE);
	assert_int_equal(pg_query(held, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_IO);
	assert_string_equal(err.client, UNAVAILABLE);
	assert_int_equal(pg_query(held, "SELECT 1", 0, NULL, NULL, &err),
			 STATUS_IO);
	pg_release(held); /* broken: closed, to be replaced */

	assert_int_equal(pgtest_start_server(&cluster), 0);
	t0 = pgtest_now_ms();
	assert_true(wait_ready_is(p, true, 5000));
	took = pgtest_now_ms() - t0;
	fprintf(stderr, "ready went true %ld ms after the start\n", took);

	/* Every connection is replaced: all three work at once. */
	{
		struct pg_conn *cs[3];

		for (int i = 0; i < 3; i++) {
			cs[i] = NULL;
			assert_int_equal(
				pg_acquire(p, NULL, 5000, &cs[i], &err),
				STATUS_OK);
			v = query_value(cs[i], "SELECT 'back'", 0, NULL);
			assert_string_equal(v, "back");
			free(v);
		}
		for (int i = 0; i < 3; i++)
			pg_release(cs[i]);
	}
	pg_pool_stats(p, &st);
	assert_true(st.ready);
	assert_true(st.reconnects >= 3);
	assert_true(st.connect_failures >= 1);
	assert_true(st.errors >= 2);
	assert_int_equal(st.in_use, 0);
	pg_pool_free(p);
}

/* ---- prepared statements ---------------------------------------------- */

/* The value of one column of pg_prepared_statements for name, as text
 * ("" when the session has no such statement). */
static char *
prepared_field(struct pg_conn *c, const char *field, const char *name)
{
	char sql[160];
	const char *vals[1] = {name};

	snprintf(sql, sizeof(sql),
		 "SELECT coalesce((SELECT %s::text FROM pg_prepared_statements "
		 "WHERE name = $1), '')",
		 field);
	return query_value(c, sql, 1, vals);
}

static void
assert_field(struct pg_conn *c, const char *field, const char *name,
	     const char *want)
{
	char *v = prepared_field(c, field, name);

	if (strcmp(v, want) != 0)
		fail_msg("%s of %s: %s, want %s", field, name, v, want);
	free(v);
}

/* Runs st with values and returns row 0, column 0 (caller frees). */
static char *
prepared_value(struct pg_conn *c, const struct pg_stmt *st,
	       const char *const *values)
{
	PGresult *res = NULL;
	struct pg_error err;
	char *v;
	int rc = pg_query_prepared(c, st, values, &res, &err);

	if (rc != STATUS_OK)
		fprintf(stderr, "prepared %s: %s / %s\n", st->name, err.client,
			err.detail);
	assert_int_equal(rc, STATUS_OK);
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	v = strdup(PQgetvalue(res, 0, 0));
	assert_non_null(v);
	PQclear(res);
	return v;
}

/* st with values gives want in row 0, column 0. */
static void
prepared_is(struct pg_conn *c, const struct pg_stmt *st,
	    const char *const *values, const char *want)
{
	char *v = prepared_value(c, st, values);

	assert_string_equal(v, want);
	free(v);
}

/* st with values fails with rc and sqlstate. */
static void
prepared_fails(struct pg_conn *c, const struct pg_stmt *st,
	       const char *const *values, int rc, const char *sqlstate)
{
	struct pg_error err;

	assert_int_equal(pg_query_prepared(c, st, values, NULL, &err), rc);
	assert_string_equal(err.sqlstate, sqlstate);
}

/* A binary result of SELECT $1::int8, $1::text, NULL::bytea: 8 bytes in
 * network order, the text's bytes, a NULL. */
static void
check_binary(struct pg_conn *c, const struct pg_stmt *st)
{
	PGresult *res = NULL;
	struct pg_error err;
	const unsigned char *p;

	assert_int_equal(pg_query_prepared(c, st, (const char *const[]){"258"},
					   &res, &err),
			 STATUS_OK);
	for (int col = 0; col < 3; col++)
		assert_int_equal(PQfformat(res, col), 1);
	assert_int_equal(PQgetlength(res, 0, 0), 8);
	p = (const unsigned char *)PQgetvalue(res, 0, 0);
	assert_memory_equal(p, "\0\0\0\0\0\0\1\2", 8);
	assert_int_equal(PQgetlength(res, 0, 1), 3);
	assert_string_equal(PQgetvalue(res, 0, 1), "258");
	assert_true(PQgetisnull(res, 0, 2));
	PQclear(res);
}

/*
 * A statement is prepared once per session, under its name, and runs with
 * bound values; custom plans by default, the generic plan from the first
 * execution with generic set, and the plan mode does not outlive the
 * statement's own transaction.
 */
static void
test_prepared(void **state)
{
	static const struct pg_stmt add = {
		"pgtest_add", "SELECT $1::int + $2::int", 2, false};
	static const struct pg_stmt echo = {
		"pgtest_echo", "SELECT $1::text, $1::text IS NULL", 1, true};
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	const char *v2[2] = {"40", "2"};
	PGresult *res = NULL;
	struct pg_error err;
	long pid = backend_pid(c);
	char *v;

	(void)state;
	assert_int_equal(pg_prepared_count(c), 0);
	assert_field(c, "statement", "pgtest_add", "");
	for (int i = 0; i < 7; i++) {
		char a[16];
		const char *vals[2] = {a, "2"};

		snprintf(a, sizeof(a), "%d", 40 + i);
		v = prepared_value(c, &add, vals);
		assert_int_equal(strtol(v, NULL, 10), 42 + i);
		free(v);
		assert_int_equal(pg_prepared_count(c), 1);
	}
	assert_field(c, "statement", "pgtest_add", "SELECT $1::int + $2::int");
	/* not generic: custom plans for five executions at least (then
	 * PostgreSQL may keep the generic one, as cheap here) */
	v = prepared_field(c, "custom_plans", "pgtest_add");
	assert_true(strtol(v, NULL, 10) >= 5);
	free(v);

	/* generic: never a custom plan; tricky values stay values */
	{
		static const char *const tricky[] = {
			"O'Reilly', $2; DROP TABLE x; --",
			"",
			NULL,
		};

		for (size_t i = 0; i < 3; i++) {
			const char *vals[1] = {tricky[i]};

			assert_int_equal(
				pg_query_prepared(c, &echo, vals, &res, &err),
				STATUS_OK);
			if (tricky[i] == NULL) {
				assert_true(PQgetisnull(res, 0, 0));
				assert_string_equal(PQgetvalue(res, 0, 1), "t");
			} else {
				assert_string_equal(PQgetvalue(res, 0, 0),
						    tricky[i]);
				assert_string_equal(PQgetvalue(res, 0, 1), "f");
			}
			PQclear(res);
			res = NULL;
		}
	}
	assert_int_equal(pg_prepared_count(c), 2);
	assert_field(c, "generic_plans", "pgtest_echo", "3");
	assert_field(c, "custom_plans", "pgtest_echo", "0");
	v = query_value(c, "SHOW plan_cache_mode", 0, NULL);
	assert_string_equal(v, "auto");
	free(v);
	/* in a transaction of the caller's, the mode lasts until its end */
	assert_int_equal(pg_begin(c, &err), STATUS_OK);
	prepared_is(c, &echo, (const char *const[]){"in"}, "in");
	v = query_value(c, "SHOW plan_cache_mode", 0, NULL);
	assert_string_equal(v, "force_generic_plan");
	free(v);
	assert_int_equal(pg_commit(c, &err), STATUS_OK);
	v = query_value(c, "SHOW plan_cache_mode", 0, NULL);
	assert_string_equal(v, "auto");
	free(v);

	/* binary results, prepared and then known; generic or not */
	{
		static const struct pg_stmt bins[] = {
			{"pgtest_bin", "SELECT $1::int8, $1::text, NULL::bytea",
			 1, false, true},
			{"pgtest_bin_generic",
			 "SELECT $1::int8, $1::text, NULL::bytea", 1, true,
			 true},
		};

		for (int k = 0; k < 4; k++)
			check_binary(c, &bins[k % 2]);
		assert_int_equal(pg_prepared_count(c), 4);
		pg_release(c);
		c = acquire(p);
	}

	/* the next lease of the same session knows both */
	pg_release(c);
	c = acquire(p);
	assert_int_equal(backend_pid(c), pid);
	assert_int_equal(pg_prepared_count(c), 4);
	prepared_is(c, &add, v2, "42");
	assert_field(c, "statement", "pgtest_add", "SELECT $1::int + $2::int");
	pg_release(c);
	pg_pool_free(p);
}

/*
 * Failures: a statement that does not parse is not recorded and leaves the
 * session usable; an execution error (a data error, a timeout, a cancel)
 * keeps the statement prepared and the session; a statement dropped
 * behind the pool's back fails once, and its session is replaced; a new
 * session prepares again.
 */
static void
test_prepared_errors(void **state)
{
	static const struct pg_stmt bad = {"pgtest_bad", "SELEC $1::int", 1,
					   true};
	static const struct pg_stmt div = {"pgtest_div", "SELECT 10 / $1::int",
					   1, true};
	static const struct pg_stmt nap = {
		"pgtest_nap", "SELECT pg_sleep($1::float8)", 1, false};
	struct pg_pool *p = new_pool(1, 300);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	struct pg_stats st;
	long pid = backend_pid(c);
	char *v;

	(void)state;
	prepared_fails(c, &bad, (const char *const[]){"1"}, STATUS_IO, "42601");
	assert_null(strstr(err.client, "SELEC"));
	assert_int_equal(pg_prepared_count(c), 0);
	assert_field(c, "statement", "pgtest_bad", "");

	prepared_is(c, &div, (const char *const[]){"5"}, "2");
	prepared_fails(c, &div, (const char *const[]){"0"}, STATUS_INVALID,
		       "22012");
	prepared_is(c, &div, (const char *const[]){"2"}, "5");

	/* the first execution of nap times out: prepared all the same */
	prepared_fails(c, &nap, (const char *const[]){"3"}, STATUS_TIMEOUT,
		       "57014");
	assert_int_equal(pg_prepared_count(c), 2);
	assert_field(c, "statement", "pgtest_nap",
		     "SELECT pg_sleep($1::float8)");
	prepared_is(c, &nap, (const char *const[]){"0"}, "");
	assert_int_equal(backend_pid(c), pid);

	/* dropped behind the pool's back: fails, the session is replaced */
	exec_ok(c, "DEALLOCATE pgtest_div");
	prepared_fails(c, &div, (const char *const[]){"5"}, STATUS_IO, "26000");
	pg_release(c);
	pg_pool_stats(p, &st);
	assert_int_equal(st.reconnects, 0);
	c = acquire(p); /* waits for the replacement */
	assert_true(backend_pid(c) != pid);
	assert_int_equal(pg_prepared_count(c), 0);
	prepared_is(c, &div, (const char *const[]){"5"}, "2");
	assert_int_equal(pg_prepared_count(c), 1);
	pg_pool_stats(p, &st);
	assert_int_equal(st.reconnects, 1);

	/* a session lost some other way is forgotten with what it knew */
	pid = backend_pid(c);
	{
		struct pg_pool *q = new_pool(1, 5000);
		struct pg_conn *k = acquire(q);
		char pids[24];

		snprintf(pids, sizeof(pids), "%ld", pid);
		v = query_value(k, "SELECT pg_terminate_backend($1::int)", 1,
				(const char *const[]){pids});
		assert_string_equal(v, "t");
		free(v);
		pg_release(k);
		pg_pool_free(q);
	}
	assert_int_equal(pg_query_prepared(c, &div, (const char *const[]){"5"},
					   NULL, &err),
			 STATUS_IO);
	pg_release(c);
	c = acquire(p);
	assert_int_equal(pg_prepared_count(c), 0);
	prepared_is(c, &div, (const char *const[]){"1"}, "10");
	pg_release(c);
	pg_pool_free(p);
}

/* pg_send_prepared_within with timeout_ms: st's result, or rc and
 * sqlstate. */
static void
within_is(struct pg_conn *c, const struct pg_stmt *st, const char *arg,
	  int timeout_ms, int rc, const char *sqlstate)
{
	PGresult *res = NULL;
	struct pg_error err;

	assert_int_equal(pg_send_prepared_within(c, st,
						 (const char *const[]){arg},
						 timeout_ms, &err),
			 STATUS_OK);
	assert_int_equal(pg_result(c, &res, &err), rc);
	if (rc != STATUS_OK)
		assert_string_equal(err.sqlstate, sqlstate);
	PQclear(res);
}

/*
 * A statement timeout for one statement: a sleep the connection's 5 s
 * would let finish times out at 300 ms, on the statement's first run (its
 * Parse in the same round trip) and on later ones, generic plan or not;
 * the next statement has the connection's timeout again.
 */
static void
test_prepared_within(void **state)
{
	static const struct pg_stmt naps[] = {
		{"pgtest_within_g", "SELECT pg_sleep($1::float8)", 1, true},
		{"pgtest_within_c", "SELECT pg_sleep($1::float8)", 1, false},
	};
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	long pid = backend_pid(c);
	char *v;

	(void)state;
	for (size_t i = 0; i < sizeof(naps) / sizeof(naps[0]); i++) {
		for (int run = 0; run < 2; run++)
			within_is(c, &naps[i], "1.5", 300, STATUS_TIMEOUT,
				  "57014");
		within_is(c, &naps[i], "0", 300, STATUS_OK, NULL);
		/* the connection's timeout: 1 s of sleep is fine */
		within_is(c, &naps[i], "1", 0, STATUS_OK, NULL);
		v = query_value(c, "SHOW statement_timeout", 0, NULL);
		assert_string_equal(v, "5s");
		free(v);
		v = query_value(c, "SHOW plan_cache_mode", 0, NULL);
		assert_string_equal(v, "auto");
		free(v);
	}
	assert_int_equal(pg_prepared_count(c), 2);
	assert_int_equal(backend_pid(c), pid);
	pg_release(c);
	pg_pool_free(p);
}

/* Bad arguments; more statements than a session keeps run unnamed. */
static void
test_prepared_bounds(void **state)
{
	static char names[PG_PREPARED_MAX + 2][24];
	static char sqls[PG_PREPARED_MAX + 2][40];
	struct pg_pool *p = new_pool(1, 5000);
	struct pg_conn *c = acquire(p);
	struct pg_error err;
	char longname[PG_STMT_NAME_MAX + 2];
	char *v;

	(void)state;
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	{
		const struct pg_stmt bad[] = {
			{NULL, "SELECT 1", 0, false},
			{"", "SELECT 1", 0, false},
			{longname, "SELECT 1", 0, false},
			{"pgtest_nosql", NULL, 0, false},
			{"pgtest_neg", "SELECT 1", -1, false},
			{"pgtest_novals", "SELECT $1::int", 1, false},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			err.client[0] = '\0';
			assert_int_equal(
				pg_send_prepared(c, &bad[i], NULL, &err),
				STATUS_INVALID);
			assert_true(err.client[0] != '\0');
		}
		assert_int_equal(pg_send_prepared(NULL, &bad[0], NULL, &err),
				 STATUS_INVALID);
		assert_int_equal(pg_send_prepared(c, NULL, NULL, &err),
				 STATUS_INVALID);
	}
	longname[PG_STMT_NAME_MAX] = '\0'; /* the longest name is fine */
	{
		const struct pg_stmt longest = {longname, "SELECT 'long'", 0,
						true};

		prepared_is(c, &longest, NULL, "long");
		assert_field(c, "statement", longname, "SELECT 'long'");
	}
	for (int i = 1; i < PG_PREPARED_MAX + 2; i++) {
		struct pg_stmt st = {names[i], sqls[i], 1, i % 2 == 0};
		char want[24];

		snprintf(names[i], sizeof(names[i]), "pgtest_many_%d", i);
		snprintf(sqls[i], sizeof(sqls[i]), "SELECT %d + $1::int", i);
		snprintf(want, sizeof(want), "%d", i + 1);
		v = prepared_value(c, &st, (const char *const[]){"1"});
		assert_string_equal(v, want);
		free(v);
		assert_int_equal(pg_prepared_count(c),
				 i < PG_PREPARED_MAX ? i + 1 : PG_PREPARED_MAX);
	}
	assert_field(c, "statement", "pgtest_many_31", "SELECT 31 + $1::int");
	assert_field(c, "statement", "pgtest_many_32", "");
	assert_field(c, "statement", "pgtest_many_33", "");
	/* binary results on the unnamed path too */
	{
		static const struct pg_stmt bin = {
			"pgtest_bin_unnamed",
			"SELECT $1::int8, $1::text, NULL::bytea", 1, true,
			true};

		check_binary(c, &bin);
		assert_field(c, "statement", "pgtest_bin_unnamed", "");
	}
	pg_release(c);
	pg_pool_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_invalid),
		cmocka_unit_test(test_null_arguments),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_connect_timeout_and_free),
		cmocka_unit_test(test_bound_parameters),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test(test_statement_timeout),
		cmocka_unit_test(test_client_deadline),
		cmocka_unit_test(test_cancel_from_thread),
		cmocka_unit_test(test_cancel_two_connections),
		cmocka_unit_test(test_two_connections_one_thread),
		cmocka_unit_test(test_acquire_timeout),
		cmocka_unit_test(test_queue_fifo),
		cmocka_unit_test(test_queue_deadline),
		cmocka_unit_test(test_queue_cancel),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_queue_stop),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_transactions),
		cmocka_unit_test(test_script),
		cmocka_unit_test(test_conninfo_forms),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_prepared),
		cmocka_unit_test(test_prepared_errors),
		cmocka_unit_test(test_prepared_within),
		cmocka_unit_test(test_prepared_bounds),
	};

	/* PGTEST_DEBUG=1 shows the pool's own log lines. */
	log_set_level(getenv("PGTEST_DEBUG") != NULL ? LOG_LEVEL_DEBUG
						     : LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

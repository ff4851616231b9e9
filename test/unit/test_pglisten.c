/*
 * test_pglisten.c - unit tests for lib/pg/pglisten against a real throwaway
 * PostgreSQL (test/unit/pgtest.h) and small fake servers: delivery on one
 * and several channels, a terminated backend, backoff and its cap, stop
 * while connecting or backing off, a database restart, bad configs.
 * Every wait is a condition variable or poll with a deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "pg/pglisten.h"
#include "pgtest.h"

#define NOTES_MAX  32
#define EVENTS_MAX 32
#define WAIT_MS	   10000 /* generous bound for anything that must happen */
#define STOP_MS	   500	 /* "promptly": a stop must return within this */

static struct pgtest_cluster cluster;

/* ---- what the callbacks saw -------------------------------------------- */

struct note {
	char channel[PGLISTEN_CHANNEL_MAX + 1];
	char *payload;
};

struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct note notes[NOTES_MAX];
	size_t nnotes;
	uint64_t epochs[EVENTS_MAX];
	size_t nconnects;
	char lost[EVENTS_MAX][512];
	size_t nlost;
	char order[EVENTS_MAX + 1]; /* 'c' per on_connect, 'l' per on_lost */
	size_t norder;
};

static void
cv_init(pthread_cond_t *cv)
{
	pthread_condattr_t attr;

	assert_int_equal(pthread_condattr_init(&attr), 0);
	assert_int_equal(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_cond_init(cv, &attr), 0);
	pthread_condattr_destroy(&attr);
}

static void
cv_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long deadline_ms)
{
	struct timespec ts = {.tv_sec = deadline_ms / 1000,
			      .tv_nsec = (deadline_ms % 1000) * 1000000L};

	pthread_cond_timedwait(cv, mu, &ts);
}

static struct rec *
rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_int_equal(pthread_mutex_init(&r->mu, NULL), 0);
	cv_init(&r->cv);
	return r;
}

static void
rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i].payload);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static void
on_notify(void *arg, const char *channel, const char *payload)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->mu);
	if (r->nnotes < NOTES_MAX) {
		struct note *n = &r->notes[r->nnotes++];

		snprintf(n->channel, sizeof(n->channel), "%s", channel);
		n->payload = strdup(payload);
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void
on_connect(void *arg, uint64_t epoch)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->mu);
	if (r->nconnects < EVENTS_MAX)
		r->epochs[r->nconnects++] = epoch;
	if (r->norder < EVENTS_MAX)
		r->order[r->norder++] = 'c';
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void
on_lost(void *arg, const char *detail)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->mu);
	if (r->nlost < EVENTS_MAX)
		snprintf(r->lost[r->nlost++], sizeof(r->lost[0]), "%s", detail);
	if (r->norder < EVENTS_MAX)
		r->order[r->norder++] = 'l';
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Waits until *counter (guarded by r->mu) reaches want: true, or false
 * at the deadline. */
static bool
rec_wait(struct rec *r, const size_t *counter, size_t want, long within_ms)
{
	long deadline = pgtest_now_ms() + within_ms;
	bool ok;

	pthread_mutex_lock(&r->mu);
	while (*counter < want && pgtest_now_ms() < deadline)
		cv_wait_until(&r->cv, &r->mu, deadline);
	ok = *counter >= want;
	pthread_mutex_unlock(&r->mu);
	return ok;
}

static void
wait_notes(struct rec *r, size_t n)
{
	if (!rec_wait(r, &r->nnotes, n, WAIT_MS)) {
		fprintf(stderr, "expected %zu notifications, got %zu\n", n,
			r->nnotes);
		fail();
	}
}

static void
wait_connects(struct rec *r, size_t n)
{
	if (!rec_wait(r, &r->nconnects, n, WAIT_MS)) {
		fprintf(stderr, "expected %zu connections, got %zu\n", n,
			r->nconnects);
		fail();
	}
}

static void
wait_lost(struct rec *r, size_t n)
{
	if (!rec_wait(r, &r->nlost, n, WAIT_MS)) {
		fprintf(stderr, "expected %zu losses, got %zu\n", n, r->nlost);
		fail();
	}
}

/* ---- what the listener logged (its backoff) ----------------------------- */

/*
 * The logger writes to a cookie stream whose write function parses the
 * listener's lines: "cannot connect, retrying ..." (first failure) and
 * "... next try in N ms" (later ones).  PGTEST_DEBUG=1 echoes every line.
 */
struct logcap {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char line[LOG_LINE_MAX];
	size_t len;
	size_t first_failures;
	int next_try[64];
	size_t ntries;
	bool echo;
};

static struct logcap logcap;

static void
logcap_line(struct logcap *c, const char *line)
{
	const char *p = strstr(line, "next try in ");

	if (c->echo)
		fprintf(stderr, "%s\n", line);
	if (strstr(line, "database listener cannot connect, retrying") != NULL)
		c->first_failures++;
	if (p != NULL && c->ntries < sizeof(c->next_try) / sizeof(int)) {
		char *end = NULL;
		long v = strtol(p + strlen("next try in "), &end, 10);

		if (end != NULL && strncmp(end, " ms", 3) == 0 && v > 0 &&
		    v < 1000000)
			c->next_try[c->ntries++] = (int)v;
	}
}

static ssize_t
logcap_write(void *cookie, const char *buf, size_t size)
{
	struct logcap *c = cookie;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			c->line[c->len] = '\0';
			logcap_line(c, c->line);
			c->len = 0;
		} else if (c->len + 1 < sizeof(c->line)) {
			c->line[c->len++] = buf[i];
		}
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return (ssize_t)size;
}

static void
logcap_reset(void)
{
	pthread_mutex_lock(&logcap.mu);
	logcap.first_failures = 0;
	logcap.ntries = 0;
	pthread_mutex_unlock(&logcap.mu);
}

/* Waits until *counter (guarded by logcap.mu) reaches n. */
static void
logcap_wait(const size_t *counter, size_t n, const char *what)
{
	long deadline = pgtest_now_ms() + WAIT_MS;
	bool ok;

	pthread_mutex_lock(&logcap.mu);
	while (*counter < n && pgtest_now_ms() < deadline)
		cv_wait_until(&logcap.cv, &logcap.mu, deadline);
	ok = *counter >= n;
	pthread_mutex_unlock(&logcap.mu);
	if (!ok) {
		fprintf(stderr, "expected %zu %s logged, got %zu\n", n, what,
			*counter);
		fail();
	}
}

/* A copy of the "next try" delays logged so far; their number. */
static size_t
logcap_tries(int *out, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&logcap.mu);
	n = logcap.ntries < cap ? logcap.ntries : cap;
	memcpy(out, logcap.next_try, n * sizeof(int));
	pthread_mutex_unlock(&logcap.mu);
	return n;
}

/* ---- helpers ------------------------------------------------------------ */

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

static struct pglisten *
start_listener(const char *conninfo, const char *const *channels, size_t n,
	       int reconnect_max_ms, struct rec *r)
{
	struct pglisten_config cfg = {
		.conninfo = conninfo,
		.channels = channels,
		.nchannels = n,
		.connect_timeout_s = 5,
		.reconnect_max_ms = reconnect_max_ms,
		.on_notify = on_notify,
		.on_connect = on_connect,
		.on_lost = on_lost,
		.arg = r,
	};
	struct pglisten *l = NULL;
	struct pg_error err;
	int rc = pglisten_start(&cfg, &l, &err);

	if (rc != STATUS_OK)
		fprintf(stderr, "pglisten_start: %s / %s\n", err.client,
			err.detail);
	assert_int_equal(rc, STATUS_OK);
	assert_non_null(l);
	return l;
}

static PGconn *
db_open(void)
{
	PGconn *db = PQconnectdb(cluster.conninfo);

	if (PQstatus(db) != CONNECTION_OK)
		fprintf(stderr, "connect: %s\n", PQerrorMessage(db));
	assert_int_equal(PQstatus(db), CONNECTION_OK);
	return db;
}

/* SELECT pg_notify(channel, payload): the server's status of it. */
static ExecStatusType
notify(PGconn *db, const char *channel, const char *payload)
{
	const char *values[2] = {channel, payload};
	PGresult *res = PQexecParams(db, "SELECT pg_notify($1, $2)", 2, NULL,
				     values, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	PQclear(res);
	return st;
}

static void
notify_ok(PGconn *db, const char *channel, const char *payload)
{
	if (notify(db, channel, payload) != PGRES_TUPLES_OK) {
		fprintf(stderr, "notify: %s\n", PQerrorMessage(db));
		fail();
	}
}

/* The first row's first column of sql with one parameter, or "" when no
 * row (caller frees). */
static char *
db_value(PGconn *db, const char *sql, const char *param)
{
	const char *values[1] = {param};
	PGresult *res = PQexecParams(db, sql, param != NULL ? 1 : 0, NULL,
				     values, NULL, NULL, 0);
	char *v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(db));
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	v = strdup(PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
	assert_non_null(v);
	PQclear(res);
	return v;
}

/* A loopback listening socket (fake server); its port in *port. */
static int
fake_server(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Accepts the next connection within WAIT_MS: its fd, asserted. */
static int
fake_accept(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	long deadline = pgtest_now_ms() + WAIT_MS;
	int fd;

	for (;;) {
		long left = deadline - pgtest_now_ms();
		int r;

		assert_true(left > 0);
		r = poll(&p, 1, (int)left);
		if (r > 0)
			break;
		assert_true(r == 0 || errno == EINTR);
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void
fake_conninfo(char *buf, size_t n, int port)
{
	snprintf(buf, n,
		 "host=127.0.0.1 port=%d dbname=x user=y password=hunter2 "
		 "sslmode=disable gssencmode=disable",
		 port);
}

static const char *const SESSIONS[] = {"sextant_sessions"};

/* ---- configuration ------------------------------------------------------ */

static void
noop_notify(void *arg, const char *channel, const char *payload)
{
	(void)arg;
	(void)channel;
	(void)payload;
}

static void
test_config_invalid(void **state)
{
	static const char LONG64[] = "a123456789b123456789c123456789d123456789"
				     "e123456789f123456789g123";
	static const char *const upper[] = {"ok", "Sessions"};
	static const char *const empty[] = {""};
	static const char *const dash[] = {"a-b"};
	static const char *const space[] = {"sextant sessions"};
	static const char *const quote[] = {"x\"; DROP TABLE t; --"};
	static const char *const ctrl[] = {"bad\nname"};
	static const char *const toolong[] = {LONG64};
	static const char *const nullname[] = {"ok", NULL};
	static const char *const dup[] = {"a", "b", "a"};
	static const char *const nine[] = {"c1", "c2", "c3", "c4", "c5",
					   "c6", "c7", "c8", "c9"};
	static const struct {
		const char *conninfo;
		const char *const *channels;
		size_t n;
		int connect_timeout_s, reconnect_max_ms;
		bool no_notify;
		const char *want; /* in err.client */
	} cases[] = {
		{"dbname=x", upper, 2, 0, 0, false,
		 "listen channel \"Sessions\" (channels[1]) is invalid: "
		 "expected 1 to 63 characters of a-z, 0-9 and _"},
		{"dbname=x", empty, 1, 0, 0, false,
		 "listen channel \"\" (channels[0]) is invalid"},
		{"dbname=x", dash, 1, 0, 0, false, "\"a-b\" (channels[0])"},
		{"dbname=x", space, 1, 0, 0, false,
		 "\"sextant sessions\" (channels[0])"},
		{"dbname=x", quote, 1, 0, 0, false,
		 "\"x?; DROP TABLE t; --\" (channels[0]) is invalid"},
		{"dbname=x", ctrl, 1, 0, 0, false,
		 "\"bad?name\" (channels[0]) is invalid"},
		{"dbname=x", toolong, 1, 0, 0, false,
		 "(channels[0]) is invalid"},
		{"dbname=x", nullname, 2, 0, 0, false,
		 "listen channel channels[1] is missing"},
		{"dbname=x", dup, 3, 0, 0, false,
		 "listen channel \"a\" (channels[2]) is listed twice"},
		{"dbname=x", nine, 9, 0, 0, false,
		 "channel count 9 is out of range: expected 1 to 8"},
		{"dbname=x", SESSIONS, 0, 0, 0, false,
		 "channel count 0 is out of range"},
		{"dbname=x", NULL, 1, 0, 0, false, "channel count 0"},
		{NULL, SESSIONS, 1, 0, 0, false,
		 "connection string for the listener is missing"},
		{"host='unterminated password=hunter2", SESSIONS, 1, 0, 0,
		 false, "connection string for the listener is invalid"},
		{"postgresql://u:hunter2@[::1", SESSIONS, 1, 0, 0, false,
		 "connection string for the listener is invalid"},
		{"dbname=x", SESSIONS, 1, 0, 0, true,
		 "no notification callback"},
		{"dbname=x", SESSIONS, 1, -1, 0, false,
		 "connect timeout (s) -1 is out of range: expected 0 to 300"},
		{"dbname=x", SESSIONS, 1, 301, 0, false,
		 "connect timeout (s) 301"},
		{"dbname=x", SESSIONS, 1, 0, 99, false,
		 "reconnect backoff cap (ms) 99 is out of range: expected 100 "
		 "to 600000"},
		{"dbname=x", SESSIONS, 1, 0, 600001, false,
		 "reconnect backoff cap (ms) 600001"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pglisten_config cfg = {
			.conninfo = cases[i].conninfo,
			.channels = cases[i].channels,
			.nchannels = cases[i].n,
			.connect_timeout_s = cases[i].connect_timeout_s,
			.reconnect_max_ms = cases[i].reconnect_max_ms,
			.on_notify = cases[i].no_notify ? NULL : noop_notify,
		};
		struct pglisten *l = (struct pglisten *)&l;
		struct pg_error err;
		int rc = pglisten_start(&cfg, &l, &err);

		if (rc != STATUS_INVALID ||
		    strstr(err.client, cases[i].want) == NULL)
			fprintf(stderr, "case %zu: rc %d, client \"%s\"\n", i,
				rc, err.client);
		assert_int_equal(rc, STATUS_INVALID);
		assert_null(l);
		assert_non_null(strstr(err.client, cases[i].want));
		assert_null(strstr(err.client, "hunter2"));
		assert_null(strstr(err.detail, "hunter2"));
		assert_true(err.detail[0] != '\0');
	}
	/* A 64-byte name is shown cut, not whole. */
	{
		const char *const one[] = {LONG64};
		struct pglisten_config cfg = {.conninfo = "dbname=x",
					      .channels = one,
					      .nchannels = 1,
					      .on_notify = noop_notify};
		struct pglisten *l = NULL;
		struct pg_error err;

		assert_int_equal(pglisten_start(&cfg, &l, &err),
				 STATUS_INVALID);
		assert_null(strstr(err.client, LONG64));
	}
	assert_int_equal(pglisten_start(NULL, NULL, NULL), STATUS_INVALID);
}

static void
test_null_arguments(void **state)
{
	struct pglisten_config cfg = {.conninfo = "dbname=x",
				      .channels = SESSIONS,
				      .nchannels = 1,
				      .on_notify = noop_notify};
	struct pg_error err;

	(void)state;
	pglisten_stop(NULL);
	assert_false(pglisten_connected(NULL));
	assert_int_equal(pglisten_epoch(NULL), 0);
	assert_int_equal(pglisten_start(&cfg, NULL, &err), STATUS_INVALID);
	assert_non_null(strstr(err.client, "no database listener"));
}

/* ---- delivery ----------------------------------------------------------- */

static void
test_notify_delivered(void **state)
{
	struct rec *r = rec_new();
	struct pglisten *l =
		start_listener(cluster.conninfo, SESSIONS, 1, 1000, r);
	PGconn *db = db_open();
	char *big = malloc(PGLISTEN_PAYLOAD_MAX + 2);
	char *v;

	(void)state;
	assert_non_null(big);
	wait_connects(r, 1);
	assert_int_equal(r->epochs[0], 1);
	assert_true(pglisten_connected(l));
	assert_int_equal(pglisten_epoch(l), 1);
	/* The default application_name names the connection. */
	v = db_value(db,
		     "SELECT count(*) FROM pg_stat_activity "
		     "WHERE application_name = $1",
		     PGLISTEN_APPLICATION_NAME);
	assert_string_equal(v, "1");
	free(v);

	notify_ok(db, "sextant_sessions", "d 0123456789abcdef");
	notify_ok(db, "sextant_sessions", "");
	/* The longest payload the server accepts arrives whole; one byte
	 * more is refused by the server itself. */
	memset(big, 'p', PGLISTEN_PAYLOAD_MAX + 1);
	big[PGLISTEN_PAYLOAD_MAX] = '\0';
	notify_ok(db, "sextant_sessions", big);
	big[PGLISTEN_PAYLOAD_MAX] = 'p';
	big[PGLISTEN_PAYLOAD_MAX + 1] = '\0';
	assert_int_equal(notify(db, "sextant_sessions", big),
			 PGRES_FATAL_ERROR);
	/* Unquoted NOTIFY folds to the same lowercase name. */
	{
		PGresult *res = PQexec(db, "NOTIFY SEXTANT_SESSIONS, 'plain'");

		assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
		PQclear(res);
	}
	wait_notes(r, 4);

	pglisten_stop(l);
	assert_int_equal(r->nnotes, 4);
	assert_string_equal(r->notes[0].channel, "sextant_sessions");
	assert_string_equal(r->notes[0].payload, "d 0123456789abcdef");
	assert_string_equal(r->notes[1].payload, "");
	big[PGLISTEN_PAYLOAD_MAX] = '\0';
	assert_string_equal(r->notes[2].payload, big);
	assert_string_equal(r->notes[3].channel, "sextant_sessions");
	assert_string_equal(r->notes[3].payload, "plain");
	/* A stop is not a loss. */
	assert_int_equal(r->nlost, 0);
	assert_int_equal(r->nconnects, 1);
	free(big);
	PQfinish(db);
	rec_free(r);
}

static void
test_several_channels(void **state)
{
	static const char LONG63[] = "a123456789b123456789c123456789d123456789"
				     "e123456789f123456789g12";
	const char *const channels[] = {"sextant_sessions",
					"sextant_r_0123456789abcdef",
					"9_starts_with_a_digit", LONG63};
	struct rec *r = rec_new();
	struct pglisten *l =
		start_listener(cluster.conninfo, channels, 4, 1000, r);
	PGconn *db = db_open();
	PGresult *res;

	(void)state;
	assert_int_equal(strlen(LONG63), 63);
	wait_connects(r, 1);
	/* Sent first: delivery is in commit order, so by the time the
	 * others arrived this one would have too. */
	notify_ok(db, "not_listened", "x");
	notify_ok(db, "sextant_r_0123456789abcdef", "e k1 s1 7");
	notify_ok(db, "9_starts_with_a_digit", "two");
	notify_ok(db, LONG63, "three");
	/* Two in one transaction arrive together, at commit. */
	res = PQexec(db, "BEGIN");
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	notify_ok(db, "sextant_sessions", "u k1 2");
	notify_ok(db, "sextant_r_0123456789abcdef", "a k1 r1");
	res = PQexec(db, "COMMIT");
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	wait_notes(r, 5);

	pglisten_stop(l);
	assert_int_equal(r->nnotes, 5);
	assert_string_equal(r->notes[0].channel, "sextant_r_0123456789abcdef");
	assert_string_equal(r->notes[0].payload, "e k1 s1 7");
	assert_string_equal(r->notes[1].channel, "9_starts_with_a_digit");
	assert_string_equal(r->notes[1].payload, "two");
	assert_string_equal(r->notes[2].channel, LONG63);
	assert_string_equal(r->notes[2].payload, "three");
	assert_string_equal(r->notes[3].channel, "sextant_sessions");
	assert_string_equal(r->notes[3].payload, "u k1 2");
	assert_string_equal(r->notes[4].channel, "sextant_r_0123456789abcdef");
	assert_string_equal(r->notes[4].payload, "a k1 r1");
	PQfinish(db);
	rec_free(r);
}

/* ---- losing the connection ---------------------------------------------- */

static void
test_terminate_backend(void **state)
{
	char conninfo[320];
	struct rec *r = rec_new();
	struct pglisten *l;
	PGconn *db = db_open();
	char *pid, *v;

	(void)state;
	snprintf(conninfo, sizeof(conninfo), "%s application_name=lt_term",
		 cluster.conninfo);
	l = start_listener(conninfo, SESSIONS, 1, 2000, r);
	wait_connects(r, 1);
	notify_ok(db, "sextant_sessions", "before");
	wait_notes(r, 1);

	pid = db_value(db,
		       "SELECT pid FROM pg_stat_activity "
		       "WHERE application_name = $1",
		       "lt_term");
	assert_true(pid[0] != '\0');
	v = db_value(db, "SELECT pg_terminate_backend($1::int)", pid);
	assert_string_equal(v, "t");
	free(v);

	wait_lost(r, 1);
	wait_connects(r, 2);
	assert_string_equal(r->order, "clc");
	assert_int_equal(r->epochs[1], 2);
	assert_int_equal(pglisten_epoch(l), 2);
	assert_true(pglisten_connected(l));
	/* The server's own words (57P01, "terminating connection due to
	 * administrator command") or libpq's end of file. */
	fprintf(stderr, "on_lost: %s\n", r->lost[0]);
	assert_true(r->lost[0][0] != '\0');
	assert_null(strchr(r->lost[0], '\n'));
	/* A new backend, and delivery works again. */
	v = db_value(db,
		     "SELECT pid FROM pg_stat_activity "
		     "WHERE application_name = $1 "
		     "ORDER BY backend_start DESC LIMIT 1",
		     "lt_term");
	assert_string_not_equal(v, pid);
	free(v);
	notify_ok(db, "sextant_sessions", "after");
	wait_notes(r, 2);

	pglisten_stop(l);
	assert_string_equal(r->notes[0].payload, "before");
	assert_string_equal(r->notes[1].payload, "after");
	assert_int_equal(r->nlost, 1);
	free(pid);
	PQfinish(db);
	rec_free(r);
}

/* ---- backoff and stopping ----------------------------------------------- */

/* A server that accepts and hangs up at once: every attempt fails, and
 * the attempts come 100, 200, then 300 ms (the cap) apart. */
static void
test_backoff_capped(void **state)
{
	static const int want[] = {100, 200, 300, 300, 300};
	char conninfo[200];
	struct rec *r = rec_new();
	struct pglisten *l;
	long at[6];
	int tries[8];
	size_t n;
	int port, lfd = fake_server(&port);

	(void)state;
	fake_conninfo(conninfo, sizeof(conninfo), port);
	logcap_reset();
	l = start_listener(conninfo, SESSIONS, 1, 300, r);
	for (int i = 0; i < 6; i++) {
		int fd = fake_accept(lfd);

		at[i] = pgtest_now_ms();
		close(fd);
	}
	pglisten_stop(l);
	close(lfd);
	for (int i = 0; i < 5; i++) {
		long gap = at[i + 1] - at[i];

		fprintf(stderr, "attempt %d to %d: %ld ms (backoff %d ms)\n",
			i + 1, i + 2, gap, want[i]);
		/* The next attempt waits for the failure, which waits for
		 * our hang-up: the gap is at least the backoff (1 ms for
		 * the clocks' rounding). */
		assert_true(gap >= want[i] - 1);
	}
	/* Uncapped, these would be 800 and 1600 ms. */
	assert_true(at[4] - at[3] < 750);
	assert_true(at[5] - at[4] < 750);
	/* The delays it chose, as logged: the first failure says the cap,
	 * the later ones the next delay. */
	assert_int_equal(logcap.first_failures, 1);
	n = logcap_tries(tries, 8);
	assert_true(n >= 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(tries[i], want[i + 1]);
	assert_int_equal(r->nconnects, 0);
	assert_int_equal(r->nlost, 0);
	rec_free(r);
}

/* A server that accepts TCP and never answers: the attempt would last
 * connect_timeout_s (5 s), and a stop does not wait for it. */
static void
test_stop_while_connecting(void **state)
{
	char conninfo[200];
	struct rec *r = rec_new();
	struct pglisten *l;
	long t0, took;
	int port, lfd = fake_server(&port), fd;

	(void)state;
	fake_conninfo(conninfo, sizeof(conninfo), port);
	l = start_listener(conninfo, SESSIONS, 1, 0, r);
	fd = fake_accept(lfd);
	assert_false(pglisten_connected(l));
	t0 = pgtest_now_ms();
	pglisten_stop(l);
	took = pgtest_now_ms() - t0;
	fprintf(stderr, "stop while connecting took %ld ms\n", took);
	assert_true(took < STOP_MS);
	assert_int_equal(r->nconnects, 0);
	assert_int_equal(r->nlost, 0);
	close(fd);
	close(lfd);
	rec_free(r);
}

/* Four failed attempts with a cap of a minute: the listener waits 800 ms
 * before the fifth, and a stop does not wait for that. */
static void
test_stop_while_backing_off(void **state)
{
	char conninfo[200];
	struct rec *r = rec_new();
	struct pglisten *l;
	long t0, took;
	int tries[8];
	int port, lfd = fake_server(&port);

	(void)state;
	fake_conninfo(conninfo, sizeof(conninfo), port);
	logcap_reset();
	l = start_listener(conninfo, SESSIONS, 1, 60000, r);
	for (int i = 0; i < 4; i++)
		close(fake_accept(lfd));
	logcap_wait(&logcap.ntries, 3, "retries");
	assert_int_equal(logcap_tries(tries, 8), 3);
	assert_int_equal(tries[2], 800);
	t0 = pgtest_now_ms();
	pglisten_stop(l);
	took = pgtest_now_ms() - t0;
	fprintf(stderr, "stop while backing off took %ld ms\n", took);
	assert_true(took < STOP_MS);
	assert_int_equal(r->nconnects, 0);
	close(lfd);
	rec_free(r);
}

/* Nothing listens on the port (a database that is down): attempts are
 * refused and retried, and a stop returns at once. */
static void
test_stop_while_server_down(void **state)
{
	char conninfo[200];
	struct rec *r = rec_new();
	struct pglisten *l;
	long t0, took;

	(void)state;
	fake_conninfo(conninfo, sizeof(conninfo), pgtest_free_port());
	logcap_reset();
	l = start_listener(conninfo, SESSIONS, 1, 60000, r);
	logcap_wait(&logcap.ntries, 2, "retries");
	assert_int_equal(logcap.first_failures, 1);
	assert_false(pglisten_connected(l));
	assert_int_equal(pglisten_epoch(l), 0);
	t0 = pgtest_now_ms();
	pglisten_stop(l);
	took = pgtest_now_ms() - t0;
	fprintf(stderr, "stop while the server is down took %ld ms\n", took);
	assert_true(took < STOP_MS);
	assert_int_equal(r->nconnects, 0);
	assert_int_equal(r->nlost, 0);
	rec_free(r);
}

/* ---- restart: last, it stops and starts the cluster --------------------- */

static void
test_server_restart(void **state)
{
	struct rec *r = rec_new();
	struct pglisten *l =
		start_listener(cluster.conninfo, SESSIONS, 1, 400, r);
	PGconn *db = db_open();
	int tries[64];
	size_t n;

	(void)state;
	wait_connects(r, 1);
	notify_ok(db, "sextant_sessions", "before");
	wait_notes(r, 1);
	PQfinish(db);

	logcap_reset();
	pgtest_stop_server(&cluster);
	wait_lost(r, 1);
	fprintf(stderr, "on_lost: %s\n", r->lost[0]);
	assert_true(r->lost[0][0] != '\0');
	assert_false(pglisten_connected(l));
	assert_int_equal(pglisten_epoch(l), 1);
	/* It keeps trying while the server is down, with backoff. */
	logcap_wait(&logcap.ntries, 3, "retries");
	assert_int_equal(pgtest_start_server(&cluster), 0);
	wait_connects(r, 2);
	assert_string_equal(r->order, "clc");
	assert_int_equal(r->epochs[1], 2);
	assert_true(pglisten_connected(l));

	db = db_open();
	notify_ok(db, "sextant_sessions", "after");
	wait_notes(r, 2);
	pglisten_stop(l);
	assert_string_equal(r->notes[1].payload, "after");
	assert_int_equal(r->nlost, 1);

	/* 100 ms doubling, capped at 400: after the first failed attempt
	 * (immediate, or 100 ms after a loss that came too soon) the waits
	 * were 200, then 400 ms every time. */
	n = logcap_tries(tries, 64);
	assert_true(n >= 3);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tries[i], i == 0 ? 200 : 400);
	PQfinish(db);
	rec_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_invalid),
		cmocka_unit_test(test_null_arguments),
		cmocka_unit_test(test_notify_delivered),
		cmocka_unit_test(test_several_channels),
		cmocka_unit_test(test_terminate_backend),
		cmocka_unit_test(test_backoff_capped),
		cmocka_unit_test(test_stop_while_connecting),
		cmocka_unit_test(test_stop_while_backing_off),
		cmocka_unit_test(test_stop_while_server_down),
		cmocka_unit_test(test_server_restart),
	};
	cookie_io_functions_t io = {.write = logcap_write};
	pthread_condattr_t attr;
	FILE *f;
	int rc;

	pthread_mutex_init(&logcap.mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&logcap.cv, &attr);
	pthread_condattr_destroy(&attr);
	/* PGTEST_DEBUG=1 shows the listener's own log lines. */
	logcap.echo = getenv("PGTEST_DEBUG") != NULL;
	f = fopencookie(&logcap, "w", io);
	if (f == NULL) {
		perror("fopencookie");
		return 1;
	}
	setvbuf(f, NULL, _IONBF, 0);
	log_set_output(f);
	log_set_level(LOG_LEVEL_DEBUG);
	rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	log_set_output(NULL);
	fclose(f);
	pthread_cond_destroy(&logcap.cv);
	pthread_mutex_destroy(&logcap.mu);
	return rc;
}

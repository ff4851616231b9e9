/*
 * pglisten.c - one thread, one libpq connection in nonblocking mode,
 * LISTEN on a few channels, notifications handed to a callback, reconnection
 * with capped exponential backoff.
 *
 * The thread's life is a loop of three states: connecting (PQconnectPoll,
 * then the LISTENs), serving (poll on the socket; PQconsumeInput before
 * every PQnotifies, as libpq's "Asynchronous Notification" section asks,
 * since PQnotifies only returns what was already read) and backing off.
 * Each wait polls the stop pipe too, so pglisten_stop interrupts any of
 * them.  Only the listener thread touches the PGconn; the other threads see
 * two atomics (connected, epoch) and the stop pipe.
 */
#include "pg/pglisten.h"

#include <errno.h>
#include <fcntl.h>
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

/* Backoff doublings before the cap applies regardless (2^20 x 100 ms). */
#define BACKOFF_SHIFT_MAX 20
/* poll takes an int of milliseconds: longer waits go in slices. */
#define POLL_SLICE_MS 60000
/* "LISTEN \"<63 bytes>\";" per channel. */
#define LISTEN_SQL_MAX (PGLISTEN_CHANNELS_MAX * (PGLISTEN_CHANNEL_MAX + 12) + 1)
#define DETAIL_MAX     sizeof(((struct pg_error *)0)->detail)

static const char MSG_START[] = "cannot start the database listener";

struct pglisten {
	/* Set by pglisten_start, read-only afterwards. */
	char *conninfo;
	char channels[PGLISTEN_CHANNELS_MAX][PGLISTEN_CHANNEL_MAX + 1];
	size_t nchannels;
	char listen_sql[LISTEN_SQL_MAX];
	int connect_timeout_s;
	int reconnect_max_ms;
	void (*on_notify)(void *arg, const char *channel, const char *payload);
	void (*on_connect)(void *arg, uint64_t epoch);
	void (*on_lost)(void *arg, const char *detail);
	void *arg;
	const char *keywords[6];
	const char *values[6];
	int stop_rd, stop_wr;
	pthread_t thread;
	bool thread_started;

	atomic_bool stopping;
	atomic_bool connected;
	atomic_uint_fast64_t epoch;

	/* The listener thread's (written by the notice receiver, which libpq
	 * calls on the thread reading the connection). */
	bool fatal;
	char fatal_msg[DETAIL_MAX];
};

/* ---- small helpers ----------------------------------------------------- */

static void
start_error(struct pg_error *err, const char *what)
{
	if (err != NULL) {
		snprintf(err->client, sizeof(err->client), "%s", MSG_START);
		snprintf(err->detail, sizeof(err->detail), "%s", what);
		err->sqlstate[0] = '\0';
	}
}

/* ---- waiting ----------------------------------------------------------- */

/* Waits ms unless stopped first: true when stopped. */
static bool
stop_wait(struct pglisten *l, int ms)
{
	struct pollfd fd = {.fd = l->stop_rd, .events = POLLIN};
	int64_t deadline = clock_mono_ms() + ms;

	for (;;) {
		int64_t left = deadline - clock_mono_ms();
		int r;

		if (atomic_load(&l->stopping))
			return true;
		if (left <= 0)
			return false;
		r = poll(&fd, 1,
			 left > POLL_SLICE_MS ? POLL_SLICE_MS : (int)left);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR) {
			/* Cannot happen with a valid pipe; do not spin. */
			return atomic_load(&l->stopping);
		}
	}
}

/* ---- one connection ---------------------------------------------------- */

/* An idle session learns of its end (pg_terminate_backend, a shutdown) as
 * a FATAL error outside any query, which libpq passes here as a notice. */
static void
listen_notice(void *arg, const PGresult *res)
{
	struct pglisten *l = arg;
	const char *sev =
		PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (msg == NULL)
		msg = "";
	if (sev != NULL &&
	    (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		l->fatal = true;
		snprintf(l->fatal_msg, sizeof(l->fatal_msg), "%s%s%s%s",
			 state != NULL ? "sqlstate " : "",
			 state != NULL ? state : "", state != NULL ? ": " : "",
			 msg);
		pg_one_line(l->fatal_msg);
	}
	log_debug(NULL, "database listener notice: %s", msg);
}

/* Sends what libpq has queued, reading meanwhile (libpq docs, PQflush). */
static int
send_all(struct pglisten *l, PGconn *conn, int64_t deadline_ms)
{
	for (;;) {
		int r = PQflush(conn);
		int rc;

		if (r == 0)
			return STATUS_OK;
		if (r < 0)
			return STATUS_IO;
		rc = pg_sock_wait(conn, POLLIN | POLLOUT, deadline_ms,
				  l->stop_rd, NULL);
		if (rc != STATUS_OK)
			return rc;
		if (!PQconsumeInput(conn))
			return STATUS_IO;
	}
}

/*
 * Runs the LISTENs (one simple-protocol query, so one round trip) and
 * collects every result.  detail says why on failure.
 */
static int
run_listen(struct pglisten *l, PGconn *conn, int64_t deadline_ms, char *detail,
	   size_t n)
{
	bool failed = false;
	int rc;

	if (PQsetnonblocking(conn, 1) != 0 || !PQsendQuery(conn, l->listen_sql))
		return STATUS_IO;
	rc = send_all(l, conn, deadline_ms);
	while (rc == STATUS_OK) {
		PGresult *r;

		while (rc == STATUS_OK && PQisBusy(conn)) {
			rc = pg_sock_wait(conn, POLLIN, deadline_ms, l->stop_rd,
					  NULL);
			if (rc == STATUS_OK && !PQconsumeInput(conn))
				rc = STATUS_IO;
		}
		if (rc != STATUS_OK)
			break;
		r = PQgetResult(conn);
		if (r == NULL)
			break;
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !failed) {
			const char *state =
				PQresultErrorField(r, PG_DIAG_SQLSTATE);

			failed = true;
			snprintf(detail, n, "LISTEN failed: %s%s%s",
				 state != NULL ? "sqlstate " : "",
				 state != NULL ? state : "",
				 state != NULL ? ": " : "");
			snprintf(detail + strlen(detail), n - strlen(detail),
				 "%s", PQresultErrorMessage(r));
		}
		PQclear(r);
	}
	if (rc == STATUS_TIMEOUT && detail[0] == '\0')
		snprintf(detail, n, "LISTEN timed out after %d s",
			 l->connect_timeout_s);
	if (rc == STATUS_OK && failed)
		rc = STATUS_IO;
	return rc;
}

/*
 * Opens the connection and LISTENs on every channel, within
 * connect_timeout_s.  STATUS_OK with *out set, STATUS_CLOSED when stopped,
 * else a failure with detail saying why (libpq's message).
 */
static int
conn_open(struct pglisten *l, PGconn **out, char *detail, size_t n)
{
	int64_t deadline =
		clock_mono_ms() + (int64_t)l->connect_timeout_s * 1000;
	PGconn *conn = NULL;
	int rc = STATUS_IO;

	*out = NULL;
	detail[0] = '\0';
	l->fatal = false;
	l->fatal_msg[0] = '\0';
	conn = PQconnectStartParams(l->keywords, l->values, 1);
	if (conn == NULL) {
		rc = STATUS_NOMEM;
		snprintf(detail, n, "out of memory");
		goto out;
	}
	PQsetNoticeReceiver(conn, listen_notice, l);
	if (PQstatus(conn) == CONNECTION_BAD)
		goto out;
	rc = pg_connect_poll(conn, deadline, l->stop_rd, l->connect_timeout_s,
			     detail, n);
	if (rc != STATUS_OK)
		goto out;
	rc = run_listen(l, conn, deadline, detail, n);
	if (rc != STATUS_OK)
		goto out;
	*out = conn;
	conn = NULL;
out:
	if (rc != STATUS_OK && detail[0] == '\0' && conn != NULL)
		snprintf(detail, n, "%s", PQerrorMessage(conn));
	if (rc != STATUS_OK && detail[0] == '\0')
		snprintf(detail, n, "connection failed (%s)", status_str(rc));
	pg_one_line(detail);
	PQfinish(conn);
	return rc;
}

/* Hands every notification libpq holds to on_notify. */
static void
deliver(struct pglisten *l, PGconn *conn)
{
	PGnotify *note;

	while (!atomic_load(&l->stopping) &&
	       (note = PQnotifies(conn)) != NULL) {
		size_t len = strlen(note->extra);

		if (len > PGLISTEN_PAYLOAD_MAX)
			log_warn(NULL,
				 "database notification on channel %s dropped: "
				 "its payload of %zu bytes is over the limit "
				 "of %d",
				 note->relname, len, PGLISTEN_PAYLOAD_MAX);
		else
			l->on_notify(l->arg, note->relname, note->extra);
		PQfreemem(note);
		/* A failure shows in PQstatus, checked by the caller. */
		(void)PQconsumeInput(conn);
	}
}

/*
 * Serves a connected conn until it is lost (STATUS_IO, detail says why)
 * or the listener is stopped (STATUS_CLOSED).
 */
static int
conn_serve(struct pglisten *l, PGconn *conn, char *detail, size_t n)
{
	int rc = STATUS_OK;

	for (;;) {
		deliver(l, conn);
		if (atomic_load(&l->stopping)) {
			rc = STATUS_CLOSED;
			break;
		}
		if (rc != STATUS_OK || l->fatal ||
		    PQstatus(conn) != CONNECTION_OK) {
			rc = STATUS_IO;
			break;
		}
		rc = pg_sock_wait(conn, POLLIN, INT64_MAX, l->stop_rd, NULL);
		if (rc == STATUS_CLOSED)
			break;
		/* After a failed read the loop still delivers what arrived
		 * before the end, then stops. */
		if (rc == STATUS_OK && !PQconsumeInput(conn))
			rc = STATUS_IO;
	}
	if (rc == STATUS_IO) {
		if (l->fatal_msg[0] != '\0')
			snprintf(detail, n, "%s", l->fatal_msg);
		else if (PQerrorMessage(conn)[0] != '\0')
			snprintf(detail, n, "%s", PQerrorMessage(conn));
		else
			snprintf(detail, n, "the server closed the connection");
		pg_one_line(detail);
	}
	return rc;
}

/* ---- the thread -------------------------------------------------------- */

/* The wait before the next attempt after streak consecutive failures. */
static int
backoff_ms(const struct pglisten *l, int streak)
{
	int shift =
		streak - 1 < BACKOFF_SHIFT_MAX ? streak - 1 : BACKOFF_SHIFT_MAX;
	int delay = PG_RECONNECT_MIN_MS << (shift > 0 ? shift : 0);

	return delay > l->reconnect_max_ms ? l->reconnect_max_ms : delay;
}

static void *
listener_main(void *arg)
{
	struct pglisten *l = arg;
	char detail[DETAIL_MAX];
	/* Failed attempts, and connections lost too soon, in a row. */
	int streak = 0;

	while (!atomic_load(&l->stopping)) {
		PGconn *conn = NULL;
		uint64_t epoch;
		int64_t up_since;
		int rc = conn_open(l, &conn, detail, sizeof(detail));
		int delay;

		if (rc == STATUS_CLOSED)
			break;
		if (rc != STATUS_OK) {
			delay = backoff_ms(l, ++streak);
			if (streak == 1)
				log_warn(NULL,
					 "database listener cannot connect, "
					 "retrying with backoff up to %d ms: "
					 "%s",
					 l->reconnect_max_ms, detail);
			else
				log_debug(NULL,
					  "database listener still cannot "
					  "connect, next try in %d ms: %s",
					  delay, detail);
			if (stop_wait(l, delay))
				break;
			continue;
		}
		up_since = clock_mono_ms();
		epoch = atomic_fetch_add(&l->epoch, 1) + 1;
		atomic_store(&l->connected, true);
		log_debug(NULL, "database listener connected (epoch %llu)",
			  (unsigned long long)epoch);
		if (l->on_connect != NULL)
			l->on_connect(l->arg, epoch);
		rc = conn_serve(l, conn, detail, sizeof(detail));
		atomic_store(&l->connected, false);
		PQfinish(conn);
		if (rc == STATUS_CLOSED)
			break;
		if (l->on_lost != NULL)
			l->on_lost(l->arg, detail);
		if (clock_mono_ms() - up_since >= l->reconnect_max_ms) {
			streak = 0;
			continue;
		}
		if (stop_wait(l, backoff_ms(l, ++streak)))
			break;
	}
	return NULL;
}

/* ---- configuration ----------------------------------------------------- */

static bool
channel_ok(const char *name)
{
	size_t len = strnlen(name, PGLISTEN_CHANNEL_MAX + 1);

	if (len < 1 || len > PGLISTEN_CHANNEL_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      ch == '_'))
			return false;
	}
	return true;
}

/* A bad name as it can be shown: bounded, unprintable bytes as '?'. */
static void
shown_name(const char *name, char *buf, size_t cap)
{
	size_t n = 0;

	for (const char *p = name; *p != '\0' && n + 4 < cap; p++) {
		if (n >= PGLISTEN_CHANNEL_MAX) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		buf[n++] = (*p >= 0x20 && *p < 0x7f && *p != '"') ? *p : '?';
	}
	buf[n] = '\0';
}

static int
check_config(const struct pglisten_config *cfg, struct pg_error *err)
{
	char shown[PGLISTEN_CHANNEL_MAX + 8];
	PQconninfoOption *opts;
	char *msg = NULL;

	if (cfg->conninfo == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "the database connection string for "
				    "the listener is missing");
	if (cfg->on_notify == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "the database listener has no "
				    "notification callback (on_notify)");
	if (cfg->channels == NULL || cfg->nchannels < 1 ||
	    cfg->nchannels > PGLISTEN_CHANNELS_MAX)
		return pg_error_set(err, STATUS_INVALID,
				    "database listener channel count %zu is "
				    "out of range: expected 1 to %d",
				    cfg->channels == NULL ? (size_t)0
							  : cfg->nchannels,
				    PGLISTEN_CHANNELS_MAX);
	for (size_t i = 0; i < cfg->nchannels; i++) {
		const char *name = cfg->channels[i];

		if (name == NULL)
			return pg_error_set(err, STATUS_INVALID,
					    "listen channel channels[%zu] is "
					    "missing",
					    i);
		shown_name(name, shown, sizeof(shown));
		if (!channel_ok(name))
			return pg_error_set(err, STATUS_INVALID,
					    "listen channel \"%s\" "
					    "(channels[%zu]) is invalid: "
					    "expected 1 to %d characters of "
					    "a-z, 0-9 and _",
					    shown, i, PGLISTEN_CHANNEL_MAX);
		for (size_t j = 0; j < i; j++)
			if (strcmp(cfg->channels[j], name) == 0)
				return pg_error_set(err, STATUS_INVALID,
						    "listen channel \"%s\" "
						    "(channels[%zu]) is listed "
						    "twice",
						    shown, i);
	}
	if (pg_check_range(err, "database listener connect timeout (s)",
			   cfg->connect_timeout_s, 0, PG_CONNECT_TIMEOUT_MAX_S))
		return STATUS_INVALID;
	if (cfg->reconnect_max_ms != 0 &&
	    pg_check_range(err, "database listener reconnect backoff cap (ms)",
			   cfg->reconnect_max_ms, PG_RECONNECT_MIN_MS,
			   PG_RECONNECT_MAX_MS))
		return STATUS_INVALID;
	/* libpq's parse message may quote the whole URI, password included:
	 * it stays out of the error (pg_pool_new, given the same string,
	 * reports it redacted). */
	opts = PQconninfoParse(cfg->conninfo, &msg);
	PQfreemem(msg);
	if (opts == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "the database connection string for "
				    "the listener is invalid: expected "
				    "key=value pairs or a postgresql:// "
				    "URI");
	PQconninfoFree(opts);
	return STATUS_OK;
}

/* ---- the listener ------------------------------------------------------ */

static void
listener_free(struct pglisten *l)
{
	if (l->thread_started) {
		atomic_store(&l->stopping, true);
		while (write(l->stop_wr, "x", 1) < 0 && errno == EINTR)
			;
		pthread_join(l->thread, NULL);
	}
	if (l->stop_rd >= 0)
		close(l->stop_rd);
	if (l->stop_wr >= 0)
		close(l->stop_wr);
	free(l->conninfo);
	free(l);
}

int
pglisten_start(const struct pglisten_config *cfg, struct pglisten **out,
	       struct pg_error *err)
{
	struct pglisten *l = NULL;
	size_t used = 0;
	int fds[2];
	int rc, k = 0;

	if (err != NULL) {
		err->client[0] = '\0';
		err->detail[0] = '\0';
		err->sqlstate[0] = '\0';
	}
	if (out != NULL)
		*out = NULL;
	if (out == NULL || cfg == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "no database listener configuration");
	rc = check_config(cfg, err);
	if (rc != STATUS_OK)
		return rc;

	rc = STATUS_NOMEM;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		goto out;
	l->stop_rd = l->stop_wr = -1;
	l->conninfo = strdup(cfg->conninfo);
	if (l->conninfo == NULL)
		goto out;
	l->nchannels = cfg->nchannels;
	for (size_t i = 0; i < cfg->nchannels; i++) {
		/* Validated: [a-z0-9_] only, so quoting cannot be escaped;
		 * quoted because a name may start with a digit. */
		snprintf(l->channels[i], sizeof(l->channels[i]), "%s",
			 cfg->channels[i]);
		used += (size_t)snprintf(
			l->listen_sql + used, sizeof(l->listen_sql) - used,
			"%sLISTEN \"%s\"", i > 0 ? ";" : "", l->channels[i]);
	}
	l->connect_timeout_s = cfg->connect_timeout_s != 0
				       ? cfg->connect_timeout_s
				       : PG_DEFAULT_CONNECT_TIMEOUT_S;
	l->reconnect_max_ms = cfg->reconnect_max_ms != 0
				      ? cfg->reconnect_max_ms
				      : PG_DEFAULT_RECONNECT_MAX_MS;
	l->on_notify = cfg->on_notify;
	l->on_connect = cfg->on_connect;
	l->on_lost = cfg->on_lost;
	l->arg = cfg->arg;
	/* Defaults first: the expanded conninfo (dbname) overrides them. */
	l->keywords[k] = "application_name";
	l->values[k++] = PGLISTEN_APPLICATION_NAME;
	/* Notice a peer that vanished without closing (no FIN): about 60 s.
	 * The connection is idle by design, so nothing else would. */
	l->keywords[k] = "keepalives_idle";
	l->values[k++] = "30";
	l->keywords[k] = "keepalives_interval";
	l->values[k++] = "10";
	l->keywords[k] = "keepalives_count";
	l->values[k++] = "3";
	l->keywords[k] = "dbname";
	l->values[k++] = l->conninfo;
	l->keywords[k] = NULL;
	l->values[k] = NULL;
	atomic_init(&l->stopping, false);
	atomic_init(&l->connected, false);
	atomic_init(&l->epoch, 0);

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = STATUS_IO;
		start_error(err, "cannot create the stop pipe");
		goto out;
	}
	l->stop_rd = fds[0];
	l->stop_wr = fds[1];

	l->thread_started =
		pool_thread_create(&l->thread, listener_main, l) == 0;
	if (!l->thread_started) {
		rc = STATUS_IO;
		start_error(err, "cannot create the listener thread");
		goto out;
	}
	*out = l;
	l = NULL;
	rc = STATUS_OK;
out:
	if (rc == STATUS_NOMEM)
		start_error(err, "out of memory");
	if (l != NULL)
		listener_free(l);
	return rc;
}

void
pglisten_stop(struct pglisten *l)
{
	if (l != NULL)
		listener_free(l);
}

bool
pglisten_connected(struct pglisten *l)
{
	return l != NULL && atomic_load(&l->connected);
}

uint64_t
pglisten_epoch(struct pglisten *l)
{
	return l != NULL ? (uint64_t)atomic_load(&l->epoch) : 0;
}

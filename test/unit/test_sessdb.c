/*
 * test_sessdb.c - unit tests for lib/pg/sessdb (the shared sessions' statements)
 * against a throwaway PostgreSQL (test/unit/pgtest.h) migrated with
 * lib/pg/migrate: every function of sessdb.h, the NOTIFY payloads seen by a
 * plain libpq LISTEN connection, concurrent writers and readers on several
 * pool connections, the sweep's lock, takeover of a dead replica's stream,
 * and a stopped server.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "pg/migrate.h"
#include "pg/pg.h"
#include "pg/sessdb.h"
#include "pgtest.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define WAIT_MS	     10000 /* bound for anything that must happen */
#define SENTINEL     "t_sentinel"

/* Replica ids: 16 hex, one set per test so that tests do not meet. */
#define R_OWN	"aaaaaaaaaaaa0001"
#define R_OTHER "aaaaaaaaaaaa0002"
/* a notify key for the statements that sign */
static const uint8_t NKEY[SESSDB_NOTIFY_KEY_BYTES] =
	"0123456789abcdef0123456789abcde";

static struct pgtest_cluster cluster;
static struct pg_pool *pool;
static PGconn *db; /* plain connection: inspection and the sentinel */

/* rc must be want; err (a struct pg_error in scope) explains a miss. */
#define CHECK(expr, want)                                                      \
	do {                                                                   \
		int rc_ = (expr), want_ = (want);                              \
		if (rc_ != want_)                                              \
			fail_msg("%s: %s, want %s (%s / %s)", #expr,           \
				 status_str(rc_), status_str(want_),           \
				 err.client, err.detail);                      \
	} while (0)
#define OK(expr) CHECK(expr, STATUS_OK)

/* ---- plain SQL for setting up and inspecting ---------------------------- */

static PGresult *
sql(const char *text, int n, const char *const *v)
{
	PGresult *res = PQexecParams(db, text, n, NULL, v, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		fail_msg("%s: %s", text, PQerrorMessage(db));
	return res;
}

static void
exec1(const char *text, const char *p1)
{
	PQclear(sql(text, p1 != NULL ? 1 : 0, (const char *[]){p1}));
}

/* First value of the first row ("" when no row), in one of a few rotating
 * buffers: valid for the next 7 calls. */
static const char *
val(const char *text, int n, const char *const *v)
{
	static char bufs[8][4096];
	static int next;
	char *b = bufs[next++ % 8];
	PGresult *res = sql(text, n, v);

	snprintf(b, sizeof(bufs[0]), "%s",
		 PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
	return b;
}

static const char *
val1(const char *text, const char *p1)
{
	return val(text, 1, (const char *[]){p1});
}

static const char *
val2(const char *text, const char *p1, const char *p2)
{
	return val(text, 2, (const char *[]){p1, p2});
}

/* ---- notifications: a LISTEN connection and a sentinel ------------------ */

/* Listens on the channels (NULL-terminated) and on the sentinel. */
static PGconn *
lis_open(const char *ch, ...)
{
	PGconn *l = PQconnectdb(cluster.conninfo);
	va_list ap;
	char cmd[128];

	if (PQstatus(l) != CONNECTION_OK)
		fail_msg("listener: %s", PQerrorMessage(l));
	va_start(ap, ch);
	for (const char *c = ch; c != NULL; c = va_arg(ap, const char *)) {
		snprintf(cmd, sizeof(cmd), "LISTEN %s", c);
		PQclear(PQexec(l, cmd));
	}
	va_end(ap);
	PQclear(PQexec(l, "LISTEN " SENTINEL));
	return l;
}

/*
 * Everything l received before a sentinel sent now, as "channel payload"
 * lines.  NOTIFYs are delivered in commit order, so the sentinel comes
 * after everything committed before this call: nothing missing, nothing
 * late.
 */
static void
lis_collect(PGconn *l, char *out, size_t cap)
{
	long deadline = pgtest_now_ms() + WAIT_MS;
	size_t len = 0;

	out[0] = '\0';
	exec1("SELECT pg_notify('" SENTINEL "', 'end')", NULL);
	for (;;) {
		struct pollfd p = {.fd = PQsocket(l), .events = POLLIN};
		PGnotify *nt;

		assert_int_equal(PQconsumeInput(l), 1);
		while ((nt = PQnotifies(l)) != NULL) {
			bool end = strcmp(nt->relname, SENTINEL) == 0;

			if (!end)
				len += (size_t)snprintf(
					out + len, len < cap ? cap - len : 0,
					"%s %s\n", nt->relname, nt->extra);
			PQfreemem(nt);
			if (end) {
				assert_true(len < cap);
				return;
			}
		}
		if (pgtest_now_ms() > deadline)
			fail_msg("no sentinel notification within %d ms",
				 WAIT_MS);
		poll(&p, 1, 100);
	}
}

/* What l received is exactly want ("" for nothing). */
static void
lis_expect(PGconn *l, const char *want)
{
	char got[8192];

	lis_collect(l, got, sizeof(got));
	assert_string_equal(got, want);
}

/* ---- sessdb helpers ------------------------------------------------------ */

static struct pg_conn *
conn(void)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	OK(pg_acquire(pool, NULL, WAIT_MS, &c, &err));
	return c;
}

/* A session for id, key in key. */
static void
mksess(struct pg_conn *c, const char *id, char key[SESSDB_KEY_LEN + 1])
{
	struct sessdb_session s = {.caps = "{}",
				   .info = "{\"name\":\"t\"}",
				   .version = "2025-11-25",
				   .log_level = 6};
	struct pg_error err;

	sessdb_key(id, key);
	snprintf(s.key, sizeof(s.key), "%s", key);
	OK(sessdb_insert(c, &s, 1000000, &err));
}

static void
reg(struct pg_conn *c, const char *replica)
{
	struct pg_error err;

	OK(sessdb_register(c, replica, "testhost", 4242, &err));
}

/* The event text of seq on stream (as the server would encode it). */
static void
ev_text(char *buf, size_t cap, const char *stream, uint64_t seq)
{
	snprintf(buf, cap, "id: %s-%" PRIu64 "\ndata: {\"n\":%" PRIu64 "}\n\n",
		 stream, seq, seq);
}

/* sessdb_append of events seq .. seq+n-1 (ev_text). */
static int
app(struct pg_conn *c, const char *replica, const char *key, const char *stream,
    uint64_t seq, size_t n, uint64_t first, bool done,
    char reader[SESSDB_REPLICA_LEN + 1], struct pg_error *err)
{
	char bufs[16][96];
	const char *data[16];
	struct sessdb_append a = {.replica = replica,
				  .key = key,
				  .stream = stream,
				  .requests = "[1,\"two\"]",
				  .n = n,
				  .seq = seq,
				  .data = data,
				  .first = first,
				  .done = done};

	assert_true(n <= 16);
	for (size_t i = 0; i < n; i++) {
		ev_text(bufs[i], sizeof(bufs[i]), stream, seq + i);
		data[i] = bufs[i];
	}
	return sessdb_append(c, &a, reader, err);
}

/* Column col of row i: a seq. */
static uint64_t
seq_in(const PGresult *rows, int i, int col)
{
	uint64_t v = 0;

	assert_int_equal(pg_text_u64(PQgetvalue(rows, i, col), &v), STATUS_OK);
	return v;
}

/* sessdb_read's rows are (done, next_seq, seq, data), takeover's events
 * (seq, data). */
#define READ_SEQ  2
#define READ_DATA 3

/* sessdb_read's rows that hold an event (not the NULL row of "none"). */
static int
read_events(const PGresult *rows)
{
	int n = PQntuples(rows);

	/* done, next_seq, seq, data, reader ("" for none, never NULL) */
	assert_int_equal(PQnfields(rows), 5);
	assert_false(PQgetisnull(rows, 0, 4));
	if (n == 1 && PQgetisnull(rows, 0, READ_SEQ)) {
		assert_true(PQgetisnull(rows, 0, READ_DATA));
		return 0;
	}
	for (int i = 0; i < n; i++)
		assert_false(PQgetisnull(rows, i, READ_SEQ));
	return n;
}

/* The stored seqs of a stream, "0,1,2" ("" for none). */
static const char *
seqs(const char *key, const char *stream)
{
	return val2("SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), "
		    "'') FROM mcp_events WHERE session_key = $1 AND "
		    "stream_id = $2",
		    key, stream);
}

/* ---- setup ---------------------------------------------------------------- */

static int
group_setup(void **state)
{
	struct pg_pool_config pc = {.size = 6, .statement_timeout_ms = 20000};
	struct migrate_opts opts = {.retention_days = 7, .days_ahead = 1};
	struct pg_error perr;
	char err[512] = "";
	int applied;

	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	if (pgtest_start(&cluster) != 0)
		return -1;
	db = PQconnectdb(cluster.conninfo);
	if (PQstatus(db) != CONNECTION_OK ||
	    migrate_apply(db, &opts, &applied, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "migrate: %s %s\n", err, PQerrorMessage(db));
		return -1;
	}
	pc.conninfo = cluster.conninfo;
	if (pg_pool_new(&pc, &pool, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(pool, WAIT_MS, &perr) != STATUS_OK) {
		fprintf(stderr, "pool: %s\n", perr.detail);
		return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_pool_free(pool);
	PQfinish(db);
	pgtest_destroy(&cluster);
	return 0;
}

/* ---- keys ---------------------------------------------------------------- */

static void
test_key(void **state)
{
	/* printf %s ID | sha256sum, first 32 hex */
	static const struct {
		const char *id, *key;
	} cases[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb924"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223"},
		{"3f1c9a7e-0000-4b2b-9d1e-7c1f2a9b8e55",
		 "9ff12d669ad77cce51e7db77a7f80f4d"},
		{"sess id with spaces and \xc3\xbc"
		 "n\xc3\xaf"
		 "code",
		 "a7806342b4099488ce19b9d35cc2cbc1"},
	};
	char key[SESSDB_KEY_LEN + 1];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		memset(key, 'x', sizeof(key));
		sessdb_key(cases[i].id, key);
		assert_string_equal(key, cases[i].key);
	}
}

/* ---- replicas ------------------------------------------------------------ */

static void
test_replicas(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	const char *r = "bbbbbbbbbbbb0001";

	(void)state;
	CHECK(sessdb_heartbeat(c, r, &err), STATUS_NOTFOUND);
	OK(sessdb_register(c, r, "host-a", 1234, &err));
	assert_string_equal(val1("SELECT host || ' ' || pid FROM mcp_replicas "
				 "WHERE id = $1",
				 r),
			    "host-a 1234");
	/* registering again refreshes, it does not fail */
	exec1("UPDATE mcp_replicas SET seen_at = now() - interval '1 hour' "
	      "WHERE id = $1",
	      r);
	OK(sessdb_register(c, r, "host-a", 1234, &err));
	assert_string_equal(val1("SELECT seen_at > now() - interval '1 minute' "
				 "FROM mcp_replicas WHERE id = $1",
				 r),
			    "t");
	exec1("UPDATE mcp_replicas SET seen_at = now() - interval '1 hour' "
	      "WHERE id = $1",
	      r);
	OK(sessdb_heartbeat(c, r, &err));
	assert_string_equal(val1("SELECT seen_at > now() - interval '1 minute' "
				 "FROM mcp_replicas WHERE id = $1",
				 r),
			    "t");
	/* retired: dead at once, and its heartbeat does not revive it */
	OK(sessdb_retire(c, r, &err));
	assert_string_equal(
		val1("SELECT seen_at = '-infinity' FROM mcp_replicas WHERE id "
		     "= $1",
		     r),
		"t");
	CHECK(sessdb_heartbeat(c, r, &err), STATUS_NOTFOUND);
	assert_string_equal(
		val1("SELECT seen_at = '-infinity' FROM mcp_replicas WHERE id "
		     "= $1",
		     r),
		"t");
	OK(sessdb_register(c, r, "host-a", 1234, &err));
	OK(sessdb_heartbeat(c, r, &err));
	exec1("DELETE FROM mcp_replicas WHERE id = $1", r);
	CHECK(sessdb_heartbeat(c, r, &err), STATUS_NOTFOUND);
	pg_release(c);
}

/* ---- sessions ------------------------------------------------------------ */

static void
test_insert_get(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	struct sessdb_session in = {
		.version = "2025-06-18",
		.caps = "{\"sampling\":{},\"roots\":{\"listChanged\":true}}",
		.info = "{\"name\":\"client\",\"version\":\"1.2\"}",
		.subscriptions = NULL,
		.log_level = 3,
	};
	struct sessdb_session *out = (struct sessdb_session *)&out;
	json_t *a, *b;

	(void)state;
	sessdb_key("insert-get", in.key);
	CHECK(sessdb_get(c, in.key, &out, &err), STATUS_NOTFOUND);
	assert_null(out);
	OK(sessdb_insert(c, &in, 1000000, &err));
	/* a key clash: nothing overwritten */
	in.log_level = 7;
	CHECK(sessdb_insert(c, &in, 1000000, &err), STATUS_EXISTS);
	OK(sessdb_get(c, in.key, &out, &err));
	assert_non_null(out);
	assert_string_equal(out->key, in.key);
	assert_string_equal(out->version, "2025-06-18");
	assert_int_equal(out->log_level, 3);
	assert_int_equal(out->rev, 1);
	/* jsonb's text: the same objects, not necessarily the same bytes */
	a = json_loads(out->caps, 0, NULL);
	b = json_loads(in.caps, 0, NULL);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	a = json_loads(out->info, 0, NULL);
	b = json_loads(in.info, 0, NULL);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	assert_string_equal(out->subscriptions, "{}");
	sessdb_session_free(out);
	sessdb_session_free(NULL);

	/* subscriptions given at insert are kept */
	sessdb_key("insert-get-2", in.key);
	in.subscriptions = "{\"file:///a\":true}";
	OK(sessdb_insert(c, &in, 1000000, &err));
	OK(sessdb_get(c, in.key, &out, &err));
	assert_string_equal(out->subscriptions, "{\"file:///a\": true}");
	assert_int_equal(out->log_level, 7);
	sessdb_session_free(out);
	pg_release(c);
}

/* ---- the session limit (migration 0011) ---------------------------------- */

/* The stored count, and the rows it counts: they must agree. */
static long
stored_count(void)
{
	long n = strtol(val("SELECT n FROM mcp_session_count", 0, NULL), NULL,
			10);

	assert_int_equal(
		n, strtol(val("SELECT count(*) FROM mcp_sessions", 0, NULL),
			  NULL, 10));
	return n;
}

/* sessdb_insert of the session for id with limit max. */
static int
insert_max(struct pg_conn *c, const char *id, int max, struct pg_error *err)
{
	struct sessdb_session s = {.caps = "{}",
				   .info = "{}",
				   .version = "2025-11-25",
				   .log_level = 6};

	sessdb_key(id, s.key);
	return sessdb_insert(c, &s, max, err);
}

/* Up to max stored sessions, whoever inserts and deletes them; the count
 * follows deletes of one, sweeps of many and TRUNCATE. */
static void
test_limit(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1];
	long base;
	int max, expired = 0;

	(void)state;
	base = stored_count();
	max = (int)base + 2;
	OK(insert_max(c, "limit-1", max, &err));
	OK(insert_max(c, "limit-2", max, &err));
	CHECK(insert_max(c, "limit-3", max, &err), STATUS_FULL);
	sessdb_key("limit-3", key);
	assert_string_equal(
		val1("SELECT count(*) FROM mcp_sessions WHERE key = $1", key),
		"0");
	assert_int_equal(stored_count(), base + 2);
	/* a key clash under the limit is not "full" */
	CHECK(insert_max(c, "limit-1", max + 1, &err), STATUS_EXISTS);
	assert_int_equal(stored_count(), base + 2);

	/* a delete makes room */
	sessdb_key("limit-1", key);
	OK(sessdb_delete(c, key, NULL, &err));
	assert_int_equal(stored_count(), base + 1);
	OK(insert_max(c, "limit-3", max, &err));
	CHECK(insert_max(c, "limit-4", max, &err), STATUS_FULL);

	/* so does the sweep, whatever the number it deletes */
	{
		char k2[SESSDB_KEY_LEN + 1], k3[SESSDB_KEY_LEN + 1],
			arr[2 * SESSDB_KEY_LEN + 8];

		sessdb_key("limit-2", k2);
		sessdb_key("limit-3", k3);
		snprintf(arr, sizeof(arr), "{%s,%s}", k2, k3);
		exec1("UPDATE mcp_sessions SET last_active = now() - interval "
		      "'2 hours' WHERE key = ANY($1::text[])",
		      arr);
	}
	OK(sessdb_sweep(c, 3600, 600, 600, &expired, &err));
	assert_true(expired >= 2);
	base = stored_count();
	max = (int)base + 1;
	OK(insert_max(c, "limit-5", max, &err));
	CHECK(insert_max(c, "limit-6", max, &err), STATUS_FULL);

	/* TRUNCATE (an operator's) leaves a count of 0, not a stale one */
	exec1("BEGIN", NULL);
	exec1("SET LOCAL client_min_messages = warning", NULL);
	exec1("TRUNCATE mcp_sessions CASCADE", NULL);
	assert_string_equal(val("SELECT n FROM mcp_session_count", 0, NULL),
			    "0");
	exec1("ROLLBACK", NULL);
	assert_int_equal(stored_count(), base + 1);
	sessdb_key("limit-5", key);
	OK(sessdb_delete(c, key, NULL, &err));
	pg_release(c);
}

#define LIMIT_THREADS 4
#define LIMIT_TRIES   10
#define LIMIT_ROOM    7

struct limit_job {
	int who, max, stored, full, rc;
	char detail[512];
};

static void *
limit_thread(void *arg)
{
	struct limit_job *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	for (int i = 0; j->rc == STATUS_OK && i < LIMIT_TRIES; i++) {
		char id[64];
		int rc;

		snprintf(id, sizeof(id), "limit-race-%d-%d", j->who, i);
		rc = insert_max(c, id, j->max, &err);
		if (rc == STATUS_OK)
			j->stored++;
		else if (rc == STATUS_FULL)
			j->full++;
		else
			j->rc = rc;
	}
	if (j->rc != STATUS_OK)
		snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

/* Gateways racing for the last places: exactly the room is taken. */
static void
test_limit_concurrent(void **state)
{
	static struct limit_job jobs[LIMIT_THREADS];
	pthread_t t[LIMIT_THREADS];
	long base = stored_count();
	int stored = 0, full = 0;

	(void)state;
	for (int i = 0; i < LIMIT_THREADS; i++) {
		jobs[i] = (struct limit_job){.who = i,
					     .max = (int)base + LIMIT_ROOM};
		assert_int_equal(
			pthread_create(&t[i], NULL, limit_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < LIMIT_THREADS; i++) {
		pthread_join(t[i], NULL);
		if (jobs[i].rc != STATUS_OK)
			fail_msg("thread %d: %s %s", i, status_str(jobs[i].rc),
				 jobs[i].detail);
		stored += jobs[i].stored;
		full += jobs[i].full;
	}
	assert_int_equal(stored, LIMIT_ROOM);
	assert_int_equal(full, LIMIT_THREADS * LIMIT_TRIES - LIMIT_ROOM);
	assert_int_equal(stored_count(), base + LIMIT_ROOM);
	for (int i = 0; i < LIMIT_THREADS; i++)
		for (int k = 0; k < LIMIT_TRIES; k++) {
			char id[64], key[SESSDB_KEY_LEN + 1];

			snprintf(id, sizeof(id), "limit-race-%d-%d", i, k);
			sessdb_key(id, key);
			exec1("DELETE FROM mcp_sessions WHERE key = $1", key);
		}
	assert_int_equal(stored_count(), base);
}

/* When the least recently active session expires, unless used. */
static void
test_next_expiry(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1];
	int secs = -1;

	(void)state;
	mksess(c, "next-expiry", key);
	exec1("UPDATE mcp_sessions SET last_active = now()", NULL);
	exec1("UPDATE mcp_sessions SET last_active = now() - interval '50 s' "
	      "WHERE key = $1",
	      key);
	OK(sessdb_next_expiry(c, 60, &secs, &err));
	assert_true(secs >= 9 && secs <= 11);
	/* past its time (not swept yet): room at the next sweep */
	OK(sessdb_next_expiry(c, 10, &secs, &err));
	assert_int_equal(secs, 0);
	OK(sessdb_delete(c, key, NULL, &err));
	pg_release(c);
}

static void
test_set_level(void **state)
{
	static const int levels[] = {0, 7, 3, 3};
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], want[512], gone[SESSDB_KEY_LEN + 1];
	PGconn *l = lis_open(SESSDB_CHANNEL, NULL);
	int64_t rev = -1;

	(void)state;
	mksess(c, "set-level", key);
	for (size_t i = 0; i < ARRAY_LEN(levels); i++) {
		struct sessdb_session *s;

		OK(sessdb_set_level(c, key, levels[i], &rev, &err));
		assert_int_equal(rev, (int64_t)i + 2);
		snprintf(want, sizeof(want), SESSDB_CHANNEL " u %s %d\n", key,
			 (int)i + 2);
		lis_expect(l, want);
		OK(sessdb_get(c, key, &s, &err));
		assert_int_equal(s->log_level, levels[i]);
		assert_int_equal(s->rev, rev);
		sessdb_session_free(s);
	}
	sessdb_key("set-level-none", gone);
	CHECK(sessdb_set_level(c, gone, 1, &rev, &err), STATUS_NOTFOUND);
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

static void
test_subscribe(void **state)
{
	/* each step bumps rev; want: the object after it */
	static const struct {
		const char *uri;
		bool on;
		const char *want;
	} steps[] = {
		{"file:///a", true, "{\"file:///a\": true}"},
		{"file:///b", true,
		 "{\"file:///a\": true, \"file:///b\": true}"},
		{"file:///a", true,
		 "{\"file:///a\": true, \"file:///b\": true}"},
		{"file:///a", false, "{\"file:///b\": true}"},
		{"file:///zz", false, "{\"file:///b\": true}"},
		{"it's \"quoted\"", true,
		 "{\"file:///b\": true, \"it's \\\"quoted\\\"\": true}"},
		{"it's \"quoted\"", false, "{\"file:///b\": true}"},
	};
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], want[512], *subs;
	PGconn *l = lis_open(SESSDB_CHANNEL, NULL);
	int64_t rev;

	(void)state;
	mksess(c, "subscribe", key);
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		struct sessdb_session *s;

		subs = NULL;
		OK(sessdb_subscribe(c, key, steps[i].uri, steps[i].on, &rev,
				    &subs, &err));
		assert_int_equal(rev, (int64_t)i + 2);
		assert_string_equal(subs, steps[i].want);
		free(subs);
		snprintf(want, sizeof(want), SESSDB_CHANNEL " u %s %d\n", key,
			 (int)i + 2);
		lis_expect(l, want);
		OK(sessdb_get(c, key, &s, &err));
		assert_string_equal(s->subscriptions, steps[i].want);
		assert_int_equal(s->rev, rev);
		sessdb_session_free(s);
	}
	PQfinish(l);
	pg_release(c);
}

/* Two connections subscribing and unsubscribing at once lose nothing. */
struct sub_job {
	const char *key;
	int who; /* 0 or 1: its uris */
	int rc;
	char detail[512];
};

#define SUB_N 60

static void *
sub_thread(void *arg)
{
	struct sub_job *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char uri[64], *subs;
	int64_t rev;

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	/* add SUB_N, then remove the even ones */
	for (int i = 0; j->rc == STATUS_OK && i < 2 * SUB_N; i++) {
		int n = i < SUB_N ? i : 2 * (i - SUB_N);

		if (n >= SUB_N)
			continue;
		snprintf(uri, sizeof(uri), "mem://%d/%d", j->who, n);
		j->rc = sessdb_subscribe(c, j->key, uri, i < SUB_N, &rev, &subs,
					 &err);
		if (j->rc == STATUS_OK)
			free(subs);
	}
	if (j->rc != STATUS_OK)
		snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

static void
test_subscribe_concurrent(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1];
	static struct sub_job jobs[2];
	pthread_t t[2];
	json_t *subs;
	struct sessdb_session *s;
	int calls = SUB_N + SUB_N / 2;

	(void)state;
	mksess(c, "subscribe-concurrent", key);
	for (int i = 0; i < 2; i++) {
		jobs[i] = (struct sub_job){.key = key, .who = i};
		assert_int_equal(
			pthread_create(&t[i], NULL, sub_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (jobs[i].rc != STATUS_OK)
			fail_msg("thread %d: %s %s", i, status_str(jobs[i].rc),
				 jobs[i].detail);
	}
	OK(sessdb_get(c, key, &s, &err));
	assert_int_equal(s->rev, 1 + 2 * calls);
	subs = json_loads(s->subscriptions, 0, NULL);
	assert_non_null(subs);
	assert_int_equal(json_object_size(subs), SUB_N);
	for (int who = 0; who < 2; who++)
		for (int n = 0; n < SUB_N; n++) {
			char uri[64];

			snprintf(uri, sizeof(uri), "mem://%d/%d", who, n);
			assert_int_equal(json_object_get(subs, uri) != NULL,
					 n % 2 == 1);
		}
	json_decref(subs);
	sessdb_session_free(s);
	pg_release(c);
}

static void
test_subscribe_bound(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], gone[SESSDB_KEY_LEN + 1], max[16];
	char *subs = NULL;
	int64_t rev = 0;
	PGconn *l = lis_open(SESSDB_CHANNEL, NULL);

	(void)state;
	mksess(c, "subscribe-bound", key);
	snprintf(max, sizeof(max), "%d", SESSDB_MAX_SUBSCRIPTIONS - 1);
	PQclear(sql("UPDATE mcp_sessions SET subscriptions = (SELECT "
		    "jsonb_object_agg('u' || g, true) FROM generate_series(1, "
		    "$2::integer) g) WHERE key = $1",
		    2, (const char *[]){key, max}));
	/* the 1000th fits, the 1001st does not (and changes nothing) */
	OK(sessdb_subscribe(c, key, "last", true, &rev, &subs, &err));
	assert_int_equal(rev, 2);
	free(subs);
	subs = (char *)"x";
	CHECK(sessdb_subscribe(c, key, "one-too-many", true, &rev, &subs, &err),
	      STATUS_FULL);
	assert_null(subs);
	assert_string_equal(
		val1("SELECT rev || ' ' || (SELECT count(*) FROM "
		     "jsonb_object_keys(subscriptions)) FROM mcp_sessions "
		     "WHERE key = $1",
		     key),
		"2 1000");
	/* one already held is not a new one */
	OK(sessdb_subscribe(c, key, "u7", true, &rev, &subs, &err));
	assert_int_equal(rev, 3);
	free(subs);
	OK(sessdb_subscribe(c, key, "u7", false, &rev, &subs, &err));
	free(subs);
	OK(sessdb_subscribe(c, key, "one-too-many", true, &rev, &subs, &err));
	assert_int_equal(rev, 5);
	free(subs);
	{
		char want[512];

		snprintf(want, sizeof(want),
			 SESSDB_CHANNEL " u %s 2\n" SESSDB_CHANNEL
					" u %s 3\n" SESSDB_CHANNEL
					" u %s 4\n" SESSDB_CHANNEL " u %s 5\n",
			 key, key, key, key);
		lis_expect(l, want);
	}
	/* a session that is gone is not full */
	sessdb_key("subscribe-bound-none", gone);
	subs = (char *)"x";
	CHECK(sessdb_subscribe(c, gone, "a", true, &rev, &subs, &err),
	      STATUS_NOTFOUND);
	assert_null(subs);
	CHECK(sessdb_subscribe(c, gone, "a", false, &rev, &subs, &err),
	      STATUS_NOTFOUND);
	assert_null(subs);
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

static void
test_delete(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], other[SESSDB_KEY_LEN + 1], want[256];
	char reader[SESSDB_REPLICA_LEN + 1], stream[32];
	uint64_t seq;
	PGconn *l = lis_open(SESSDB_CHANNEL, NULL);
	const char *count =
		"SELECT (SELECT count(*) FROM mcp_sessions WHERE key = $1) || "
		"' ' || (SELECT count(*) FROM mcp_streams WHERE session_key = "
		"$1) || ' ' || (SELECT count(*) FROM mcp_events WHERE "
		"session_key = $1) || ' ' || (SELECT count(*) FROM mcp_pending "
		"WHERE session_key = $1)";

	(void)state;
	mksess(c, "delete", key);
	mksess(c, "delete-other", other);
	for (int i = 0; i < 2; i++) {
		const char *k = i == 0 ? key : other;

		OK(app(c, R_OWN, k, "p1", 0, 3, 0, false, reader, &err));
		OK(sessdb_notify(c, R_OWN, k, "g1", NULL, "{}", 10, stream,
				 &seq, reader, &err));
		OK(sessdb_pending_add(c, k, "sx-1", R_OWN, &err));
	}
	assert_string_equal(val1(count, key), "1 2 4 1");
	lis_expect(l, "");
	OK(sessdb_delete(c, key, NULL, &err));
	snprintf(want, sizeof(want), SESSDB_CHANNEL " d %s\n", key);
	lis_expect(l, want);
	assert_string_equal(val1(count, key), "0 0 0 0");
	assert_string_equal(val1(count, other), "1 2 4 1");
	CHECK(sessdb_delete(c, key, NULL, &err), STATUS_NOTFOUND);
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/* A DELETE by a replica names it, so that the others can confirm ("x",
 * to that replica only); the peers are the other live replicas. */
static void
test_delete_acks(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], want[256], plain[128], sig[192];
	PGconn *l = lis_open(SESSDB_CHANNEL, SESSDB_REPLICA_PREFIX R_OWN,
			     SESSDB_REPLICA_PREFIX R_OTHER, NULL);
	PGresult *rows = NULL;

	(void)state;
	reg(c, R_OWN);
	reg(c, R_OTHER);
	OK(sessdb_peers(c, R_OWN, 5, &rows, &err));
	assert_int_equal(PQntuples(rows), 1);
	assert_string_equal(PQgetvalue(rows, 0, 0), R_OTHER);
	PQclear(rows);
	/* a retired replica is no peer */
	OK(sessdb_retire(c, R_OTHER, &err));
	OK(sessdb_peers(c, R_OWN, 5, &rows, &err));
	assert_int_equal(PQntuples(rows), 0);
	PQclear(rows);
	reg(c, R_OTHER);

	mksess(c, "delete-acks", key);
	lis_expect(l, "");
	OK(sessdb_delete(c, key, R_OWN, &err));
	snprintf(want, sizeof(want), SESSDB_CHANNEL " d %s " R_OWN "\n", key);
	lis_expect(l, want);
	OK(sessdb_ack(c, NKEY, R_OWN, key, R_OTHER, &err));
	snprintf(plain, sizeof(plain), "x %s " R_OTHER, key);
	assert_int_equal(sessdb_sign(NKEY, plain, sig, sizeof(sig)), STATUS_OK);
	snprintf(want, sizeof(want), SESSDB_REPLICA_PREFIX R_OWN " %s\n", sig);
	lis_expect(l, want);
	PQfinish(l);
	pg_release(c);
}

static void
test_touch(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char k[3][SESSDB_KEY_LEN + 1], none[SESSDB_KEY_LEN + 1];
	const char *recent = "SELECT last_active > now() - interval '1 minute' "
			     "FROM mcp_sessions WHERE key = $1";

	(void)state;
	mksess(c, "touch-0", k[0]);
	mksess(c, "touch-1", k[1]);
	mksess(c, "touch-2", k[2]);
	sessdb_key("touch-none", none);
	for (int i = 0; i < 3; i++)
		exec1("UPDATE mcp_sessions SET last_active = now() - interval "
		      "'1 hour' WHERE key = $1",
		      k[i]);
	OK(sessdb_touch(c, NULL, 0, &err));
	OK(sessdb_touch(c, (const char *const[]){k[0], none, k[2]}, 3, &err));
	assert_string_equal(val1(recent, k[0]), "t");
	assert_string_equal(val1(recent, k[1]), "f");
	assert_string_equal(val1(recent, k[2]), "t");
	assert_string_equal(val1("SELECT count(*) FROM mcp_sessions WHERE key "
				 "= $1",
				 none),
			    "0");
	for (int i = 0; i < 3; i++)
		OK(sessdb_delete(c, k[i], NULL, &err));
	pg_release(c);
}

static void
test_cancel(void **state)
{
	static const char *const ids[] = {"42", "\"abc\"", "\"x y\"", "-1.5"};
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], want[512], big[202], plain[300], sig[400];
	PGconn *l = lis_open(SESSDB_CHANNEL, NULL);

	(void)state;
	sessdb_key("cancel", key);
	for (size_t i = 0; i < ARRAY_LEN(ids); i++) {
		OK(sessdb_cancel(c, NKEY, key, ids[i], &err));
		snprintf(plain, sizeof(plain), "c %s %s", key, ids[i]);
		assert_int_equal(sessdb_sign(NKEY, plain, sig, sizeof(sig)),
				 STATUS_OK);
		snprintf(want, sizeof(want), SESSDB_CHANNEL " %s\n", sig);
		lis_expect(l, want);
	}
	/* 200 bytes fit, 201 do not */
	memset(big, '7', sizeof(big));
	big[200] = '\0';
	OK(sessdb_cancel(c, NKEY, key, big, &err));
	snprintf(plain, sizeof(plain), "c %s %s", key, big);
	assert_int_equal(sessdb_sign(NKEY, plain, sig, sizeof(sig)), STATUS_OK);
	snprintf(want, sizeof(want), SESSDB_CHANNEL " %s\n", sig);
	lis_expect(l, want);
	big[200] = '7';
	big[201] = '\0';
	memset(&err, 0, sizeof(err));
	CHECK(sessdb_cancel(c, NKEY, key, big, &err), STATUS_LIMIT);
	assert_true(err.client[0] != '\0');
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/* ---- POST streams ---------------------------------------------------------- */

static void
test_append(void **state)
{
	/* each flush, in order, on stream "p1" of one session */
	static const struct {
		const char *replica;
		uint64_t seq;
		size_t n;
		uint64_t first;
		bool done;
		const char *attach; /* attach this reader first */
		int rc;
		const char *reader; /* as returned */
		const char *stored; /* seqs after */
		int next_seq, done_after;
		bool woken; /* "e" on sextant_r_<reader> */
	} steps[] = {
		/* the first flush creates the stream; no reader yet */
		{R_OWN, 0, 2, 0, false, NULL, STATUS_OK, "", "0,1", 2, 0,
		 false},
		/* a gap, a repeat, a step back: nothing stored */
		{R_OWN, 3, 1, 0, false, NULL, STATUS_CLOSED, "", "0,1", 2, 0,
		 false},
		{R_OWN, 1, 2, 0, false, NULL, STATUS_CLOSED, "", "0,1", 2, 0,
		 false},
		{R_OWN, 0, 1, 0, false, NULL, STATUS_CLOSED, "", "0,1", 2, 0,
		 false},
		/* another replica cannot write it */
		{R_OTHER, 2, 1, 0, false, NULL, STATUS_CLOSED, "", "0,1", 2, 0,
		 false},
		{R_OWN, 2, 3, 0, false, NULL, STATUS_OK, "", "0,1,2,3,4", 5, 0,
		 false},
		/* pruning below first */
		{R_OWN, 5, 1, 3, false, NULL, STATUS_OK, "", "3,4,5", 6, 0,
		 false},
		/* a reader on another replica is woken, one here is not */
		{R_OWN, 6, 2, 0, false, R_OTHER, STATUS_OK, R_OTHER,
		 "3,4,5,6,7", 8, 0, true},
		{R_OWN, 8, 1, 0, false, R_OWN, STATUS_OK, R_OWN, "3,4,5,6,7,8",
		 9, 0, false},
		{R_OWN, 9, 1, 0, false, R_OTHER, STATUS_OK, R_OTHER,
		 "3,4,5,6,7,8,9", 10, 0, true},
		/* a flush with nothing but first */
		{R_OWN, 10, 0, 8, false, NULL, STATUS_OK, R_OTHER, "8,9", 10, 0,
		 true},
		/* done: the last flush, with events */
		{R_OWN, 10, 2, 0, true, NULL, STATUS_OK, R_OTHER, "8,9,10,11",
		 12, 1, true},
		/* nothing after done */
		{R_OWN, 12, 1, 0, false, NULL, STATUS_CLOSED, "", "8,9,10,11",
		 12, 1, false},
		{R_OWN, 12, 0, 0, true, NULL, STATUS_CLOSED, "", "8,9,10,11",
		 12, 1, false},
	};
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	char want[256];
	PGconn *l = lis_open(SESSDB_REPLICA_PREFIX R_OWN,
			     SESSDB_REPLICA_PREFIX R_OTHER, NULL);

	(void)state;
	reg(c, R_OWN);
	reg(c, R_OTHER);
	mksess(c, "append", key);
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		char next[24];

		if (steps[i].attach != NULL) {
			struct sessdb_stream st;

			OK(sessdb_attach(c, key, "p1", NULL, NULL,
					 steps[i].attach, 5, &st, &err));
		}
		memset(reader, 'x', sizeof(reader));
		CHECK(app(c, steps[i].replica, key, "p1", steps[i].seq,
			  steps[i].n, steps[i].first, steps[i].done, reader,
			  &err),
		      steps[i].rc);
		if (strcmp(reader, steps[i].reader) != 0)
			fail_msg("step %zu: reader \"%s\"", i, reader);
		if (strcmp(seqs(key, "p1"), steps[i].stored) != 0)
			fail_msg("step %zu: stored %s", i, seqs(key, "p1"));
		snprintf(next, sizeof(next), "%d %s", steps[i].next_seq,
			 steps[i].done_after ? "true true" : "false true");
		assert_string_equal(
			val1("SELECT next_seq || ' ' || done || ' ' || "
			     "((done_at IS NOT NULL) = done) FROM mcp_streams "
			     "WHERE session_key = $1 AND id = 'p1'",
			     key),
			next);
		if (steps[i].woken)
			snprintf(want, sizeof(want),
				 SESSDB_REPLICA_PREFIX "%s e %s p1\n",
				 steps[i].reader, key);
		else
			want[0] = '\0';
		lis_expect(l, want);
	}
	/* the first flush stored owner and requests */
	assert_string_equal(
		val1("SELECT owner || ' ' || requests::text || ' ' || "
		     "standalone FROM mcp_streams WHERE session_key = $1 AND "
		     "id = 'p1'",
		     key),
		R_OWN " [1, \"two\"] false");
	/* the events are stored as given */
	{
		char text[96];

		ev_text(text, sizeof(text), "p1", 9);
		assert_string_equal(
			val1("SELECT data FROM mcp_events WHERE session_key = "
			     "$1 AND stream_id = 'p1' AND seq = 9",
			     key),
			text);
	}
	/* a first flush may start past 0 (a stream whose first events were
	 * evicted before any flush) */
	OK(app(c, R_OWN, key, "p2", 4, 1, 0, false, reader, &err));
	assert_string_equal(seqs(key, "p2"), "4");

	/* a deleted session: whether the stream was stored or not */
	OK(sessdb_delete(c, key, NULL, &err));
	CHECK(app(c, R_OWN, key, "p2", 5, 1, 0, false, reader, &err),
	      STATUS_NOTFOUND);
	CHECK(app(c, R_OWN, key, "p3", 0, 1, 0, false, reader, &err),
	      STATUS_NOTFOUND);
	CHECK(app(c, R_OWN, key, "p2", 5, 0, 0, true, reader, &err),
	      STATUS_NOTFOUND);
	assert_string_equal(val1("SELECT count(*) FROM mcp_streams WHERE "
				 "session_key = $1",
				 key),
			    "0");
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/* ---- the standalone stream ------------------------------------------------- */

static void
test_notify(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], k2[SESSDB_KEY_LEN + 1];
	char stream[32], reader[SESSDB_REPLICA_LEN + 1], want[256];
	uint64_t seq;
	struct sessdb_stream st;
	PGconn *l = lis_open(SESSDB_REPLICA_PREFIX R_OWN,
			     SESSDB_REPLICA_PREFIX R_OTHER, NULL);

	(void)state;
	reg(c, R_OWN);
	reg(c, R_OTHER);
	mksess(c, "notify", key);
	/* created with prime as event 0 */
	OK(sessdb_notify(c, R_OWN, key, "g1", "id: g1-0\ndata: \n\n",
			 "{\"a\":1}", 3, stream, &seq, reader, &err));
	assert_string_equal(stream, "g1");
	assert_int_equal(seq, 1);
	assert_string_equal(reader, "");
	assert_string_equal(seqs(key, "g1"), "0,1");
	assert_string_equal(val1("SELECT data FROM mcp_events WHERE "
				 "session_key = $1 AND seq = 0",
				 key),
			    "id: g1-0\ndata: \n\n");
	assert_string_equal(val1("SELECT data FROM mcp_events WHERE "
				 "session_key = $1 AND seq = 1",
				 key),
			    "id: g1-1\ndata: {\"a\":1}\n\n");
	assert_string_equal(val1("SELECT standalone || ' ' || next_seq || ' ' "
				 "|| (owner IS NULL) FROM mcp_streams WHERE "
				 "session_key = $1",
				 key),
			    "true 2 true");
	/* later calls use the stream there is, whatever new_id says; the
	 * newest keep (3) events stay */
	for (uint64_t i = 2; i <= 5; i++) {
		OK(sessdb_notify(c, R_OWN, key, "g2", "prime", "{}", 3, stream,
				 &seq, reader, &err));
		assert_string_equal(stream, "g1");
		assert_int_equal(seq, i);
	}
	assert_string_equal(seqs(key, "g1"), "3,4,5");
	lis_expect(l, "");

	/* its reader is woken when it is on another replica */
	OK(sessdb_attach(c, key, NULL, "g3", NULL, R_OTHER, 5, &st, &err));
	assert_string_equal(st.id, "g1");
	OK(sessdb_notify(c, R_OWN, key, "g2", NULL, "{}", 3, stream, &seq,
			 reader, &err));
	assert_string_equal(reader, R_OTHER);
	assert_int_equal(seq, 6);
	snprintf(want, sizeof(want), SESSDB_REPLICA_PREFIX R_OTHER " e %s g1\n",
		 key);
	lis_expect(l, want);
	OK(sessdb_notify(c, R_OTHER, key, "g2", NULL, "{}", 3, stream, &seq,
			 reader, &err));
	assert_string_equal(reader, R_OTHER);
	lis_expect(l, "");

	/* without prime, the first event is 0 */
	mksess(c, "notify-2", k2);
	OK(sessdb_notify(c, R_OWN, k2, "h1", NULL, "[1,2]", 3, stream, &seq,
			 reader, &err));
	assert_string_equal(stream, "h1");
	assert_int_equal(seq, 0);
	assert_string_equal(seqs(k2, "h1"), "0");

	/* a session that is gone */
	OK(sessdb_delete(c, k2, NULL, &err));
	CHECK(sessdb_notify(c, R_OWN, k2, "h1", NULL, "{}", 3, stream, &seq,
			    reader, &err),
	      STATUS_NOTFOUND);
	sessdb_key("notify-none", k2);
	CHECK(sessdb_notify(c, R_OWN, k2, "h1", "p", "{}", 3, stream, &seq,
			    reader, &err),
	      STATUS_NOTFOUND);
	assert_string_equal(stream, "");
	assert_string_equal(val1("SELECT count(*) FROM mcp_streams WHERE "
				 "session_key = $1",
				 k2),
			    "0");
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/* Two connections appending to a standalone stream that neither created:
 * dense numbers, each in its own order. */
#define NOTIFY_N 150

struct notify_job {
	const char *key, *new_id;
	uint64_t seqs[NOTIFY_N];
	char streams[NOTIFY_N][32];
	int rc;
	char detail[512];
	pthread_barrier_t *go;
};

static void *
notify_thread(void *arg)
{
	struct notify_job *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char reader[SESSDB_REPLICA_LEN + 1], msg[64];

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	pthread_barrier_wait(j->go);
	for (int i = 0; j->rc == STATUS_OK && i < NOTIFY_N; i++) {
		snprintf(msg, sizeof(msg), "{\"from\":\"%s\",\"i\":%d}",
			 j->new_id, i);
		j->rc = sessdb_notify(c, R_OWN, j->key, j->new_id,
				      "id: prime\n\n", msg, 1000, j->streams[i],
				      &j->seqs[i], reader, &err);
	}
	if (j->rc != STATUS_OK)
		snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

static void
test_notify_concurrent(void **state)
{
	static struct notify_job jobs[2];
	struct pg_conn *c = conn();
	char key[SESSDB_KEY_LEN + 1], n[16];
	bool seen[2 * NOTIFY_N + 1] = {false};
	pthread_barrier_t go;
	pthread_t t[2];

	(void)state;
	mksess(c, "notify-concurrent", key);
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < 2; i++) {
		jobs[i] = (struct notify_job){
			.key = key, .new_id = i == 0 ? "ga" : "gb", .go = &go};
		assert_int_equal(
			pthread_create(&t[i], NULL, notify_thread, &jobs[i]),
			0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (jobs[i].rc != STATUS_OK)
			fail_msg("thread %d: %s %s", i, status_str(jobs[i].rc),
				 jobs[i].detail);
	}
	pthread_barrier_destroy(&go);
	/* one stream, whoever created it; event 0 is its prime */
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < NOTIFY_N; k++) {
			uint64_t s = jobs[i].seqs[k];

			assert_string_equal(jobs[i].streams[k],
					    jobs[0].streams[0]);
			assert_true(s >= 1 && s <= 2 * NOTIFY_N);
			assert_false(seen[s]);
			seen[s] = true;
			if (k > 0)
				assert_true(s > jobs[i].seqs[k - 1]);
		}
	snprintf(n, sizeof(n), "%d", 2 * NOTIFY_N + 1);
	assert_string_equal(val1("SELECT count(*) FROM mcp_events WHERE "
				 "session_key = $1",
				 key),
			    n);
	assert_string_equal(val1("SELECT count(*) || ' ' || min(next_seq) FROM "
				 "mcp_streams WHERE session_key = $1",
				 key),
			    "1 301");
	assert_string_equal(val1("SELECT data FROM mcp_events WHERE "
				 "session_key = $1 AND seq = 0",
				 key),
			    "id: prime\n\n");
	pg_release(c);
}

/*
 * A flush or a GET-stream message for a session whose DELETE is under way
 * (not committed yet) waits for it and then finds the session gone.
 */
struct late_call {
	const char *key;
	bool notify; /* sessdb_notify, else sessdb_append */
	int rc;
	char detail[512];
};

static void *
late_call_thread(void *arg)
{
	struct late_call *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char reader[SESSDB_REPLICA_LEN + 1], stream[32];
	uint64_t seq;

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	if (j->rc == STATUS_OK && j->notify)
		j->rc = sessdb_notify(c, R_OWN, j->key, "g1", NULL, "{}", 10,
				      stream, &seq, reader, &err);
	else if (j->rc == STATUS_OK)
		j->rc = app(c, R_OWN, j->key, "p1", 2, 1, 0, false, reader,
			    &err);
	snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

static void
test_write_while_deleted(void **state)
{
	static struct late_call jobs[2];
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	char stream[32];
	uint64_t seq;
	PGconn *h = PQconnectdb(cluster.conninfo);
	PGresult *res;
	pthread_t t[2];
	long deadline = pgtest_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(PQstatus(h), CONNECTION_OK);
	mksess(c, "write-while-deleted", key);
	OK(app(c, R_OWN, key, "p1", 0, 2, 0, false, reader, &err));
	OK(sessdb_notify(c, R_OWN, key, "g1", NULL, "{}", 10, stream, &seq,
			 reader, &err));
	PQclear(PQexec(h, "BEGIN"));
	res = PQexecParams(h, "DELETE FROM mcp_sessions WHERE key = $1", 1,
			   NULL, (const char *[]){key}, NULL, NULL, 0);
	assert_string_equal(PQcmdTuples(res), "1");
	PQclear(res);
	for (int i = 0; i < 2; i++) {
		jobs[i] = (struct late_call){.key = key, .notify = i == 1};
		assert_int_equal(
			pthread_create(&t[i], NULL, late_call_thread, &jobs[i]),
			0);
	}
	while (strcmp(val("SELECT count(*) FROM pg_stat_activity WHERE "
			  "wait_event_type = 'Lock' AND query LIKE "
			  "'SELECT %mcp_%'",
			  0, NULL),
		      "2") != 0) {
		assert_true(pgtest_now_ms() < deadline);
		pgtest_sleep_ms(10);
	}
	PQclear(PQexec(h, "COMMIT"));
	PQfinish(h);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (jobs[i].rc != STATUS_NOTFOUND)
			fail_msg("%s: %s (%s)",
				 jobs[i].notify ? "notify" : "append",
				 status_str(jobs[i].rc), jobs[i].detail);
	}
	assert_string_equal(val1("SELECT count(*) FROM mcp_events WHERE "
				 "session_key = $1",
				 key),
			    "0");
	pg_release(c);
}

/* ---- attach and read ------------------------------------------------------- */

static void
test_attach(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], none[SESSDB_KEY_LEN + 1];
	char reader[SESSDB_REPLICA_LEN + 1];
	struct sessdb_stream st;
	const char *dead = "cccccccccccc0009";

	(void)state;
	reg(c, R_OWN);
	reg(c, R_OTHER);
	mksess(c, "attach", key);
	sessdb_key("attach-none", none);
	CHECK(sessdb_attach(c, key, "nope", NULL, NULL, R_OTHER, 5, &st, &err),
	      STATUS_NOTFOUND);
	CHECK(sessdb_attach(c, none, "p1", NULL, NULL, R_OTHER, 5, &st, &err),
	      STATUS_NOTFOUND);
	CHECK(sessdb_attach(c, none, NULL, "g1", "prime", R_OTHER, 5, &st,
			    &err),
	      STATUS_NOTFOUND);
	assert_string_equal(val1("SELECT count(*) FROM mcp_streams WHERE "
				 "session_key = $1",
				 none),
			    "0");

	OK(app(c, R_OWN, key, "p1", 0, 5, 2, false, reader, &err));
	OK(sessdb_attach(c, key, "p1", "ignored", "ignored", R_OTHER, 5, &st,
			 &err));
	assert_string_equal(st.id, "p1");
	assert_false(st.standalone);
	assert_false(st.done);
	assert_int_equal(st.next_seq, 5);
	assert_int_equal(st.first, 2);
	assert_string_equal(st.owner, R_OWN);
	assert_false(st.owner_dead);
	assert_true(st.fresh);
	assert_string_equal(val1("SELECT reader FROM mcp_streams WHERE "
				 "session_key = $1 AND id = 'p1'",
				 key),
			    R_OTHER);
	/* read before: not fresh; the reader moves */
	OK(sessdb_attach(c, key, "p1", NULL, NULL, R_OWN, 5, &st, &err));
	assert_false(st.fresh);
	assert_string_equal(val1("SELECT reader FROM mcp_streams WHERE "
				 "session_key = $1 AND id = 'p1'",
				 key),
			    R_OWN);
	/* a stale heartbeat, or no replica row: the owner is dead */
	exec1("UPDATE mcp_replicas SET seen_at = now() - interval '10 s' "
	      "WHERE id = $1",
	      R_OWN);
	OK(sessdb_attach(c, key, "p1", NULL, NULL, R_OTHER, 5, &st, &err));
	assert_true(st.owner_dead);
	OK(sessdb_attach(c, key, "p1", NULL, NULL, R_OTHER, 30, &st, &err));
	assert_false(st.owner_dead);
	reg(c, R_OWN);
	OK(app(c, dead, key, "p2", 0, 1, 0, false, reader, &err));
	OK(sessdb_attach(c, key, "p2", NULL, NULL, R_OTHER, 5, &st, &err));
	assert_true(st.owner_dead);
	assert_string_equal(st.owner, dead);
	/* all events pruned: first is next_seq; done is reported */
	OK(app(c, R_OWN, key, "p1", 5, 0, 5, true, reader, &err));
	OK(sessdb_attach(c, key, "p1", NULL, NULL, R_OTHER, 5, &st, &err));
	assert_true(st.done);
	assert_int_equal(st.next_seq, 5);
	assert_int_equal(st.first, 5);

	/* the standalone stream, created by the first attach */
	OK(sessdb_attach(c, key, NULL, "g1", "id: g1-0\n\n", R_OTHER, 5, &st,
			 &err));
	assert_string_equal(st.id, "g1");
	assert_true(st.standalone);
	assert_false(st.done);
	assert_int_equal(st.next_seq, 1);
	assert_int_equal(st.first, 0);
	assert_string_equal(st.owner, "");
	assert_false(st.owner_dead);
	assert_true(st.fresh);
	assert_string_equal(seqs(key, "g1"), "0");
	OK(sessdb_attach(c, key, NULL, "g2", "other", R_OWN, 5, &st, &err));
	assert_string_equal(st.id, "g1");
	assert_false(st.fresh);
	assert_string_equal(seqs(key, "g1"), "0");
	assert_string_equal(val1("SELECT count(*) FROM mcp_streams WHERE "
				 "session_key = $1 AND standalone",
				 key),
			    "1");
	/* and without prime */
	{
		char k2[SESSDB_KEY_LEN + 1];

		mksess(c, "attach-2", k2);
		OK(sessdb_attach(c, k2, NULL, "h1", NULL, R_OTHER, 5, &st,
				 &err));
		assert_string_equal(st.id, "h1");
		assert_int_equal(st.next_seq, 0);
		assert_int_equal(st.first, 0);
		assert_string_equal(seqs(k2, "h1"), "");
	}
	pg_release(c);
}

/* rows' seqs as "3,4,5". */
static void
row_seqs(PGresult *rows, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < read_events(rows); i++)
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0,
					"%s%s", i > 0 ? "," : "",
					PQgetvalue(rows, i, READ_SEQ));
}

static void
test_read(void **state)
{
	static const struct {
		uint64_t after;
		int limit;
		const char *want;
	} cases[] = {
		{UINT64_MAX, 100, "2,3,4,5,6,7,8,9"},
		{UINT64_MAX, 3, "2,3,4"},
		{0, 100, "2,3,4,5,6,7,8,9"}, /* pruned below the cursor */
		{3, 4, "4,5,6,7"},
		{8, 100, "9"},
		{9, 100, ""},
		{50, 100, ""},
	};
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	char got[256], text[96];
	PGresult *rows;
	bool done;
	uint64_t next;

	(void)state;
	mksess(c, "read", key);
	OK(app(c, R_OWN, key, "p1", 0, 10, 2, false, reader, &err));
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		rows = NULL;
		done = true;
		OK(sessdb_read(c, key, "p1", cases[i].after, cases[i].limit,
			       &rows, &done, &next, &err));
		assert_non_null(rows);
		row_seqs(rows, got, sizeof(got));
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got \"%s\"", i, got);
		assert_false(done);
		assert_int_equal(next, 10);
		for (int r = 0; r < read_events(rows); r++) {
			ev_text(text, sizeof(text), "p1",
				seq_in(rows, r, READ_SEQ));
			assert_string_equal(PQgetvalue(rows, r, READ_DATA),
					    text);
		}
		/* every row carries the stream's state */
		for (int r = 0; r < PQntuples(rows); r++) {
			assert_string_equal(PQgetvalue(rows, r, 0), "f");
			assert_string_equal(PQgetvalue(rows, r, 1), "10");
		}
		PQclear(rows);
	}
	OK(app(c, R_OWN, key, "p1", 10, 1, 0, true, reader, &err));
	OK(sessdb_read(c, key, "p1", 9, 100, &rows, &done, &next, &err));
	row_seqs(rows, got, sizeof(got));
	assert_string_equal(got, "10");
	assert_true(done);
	assert_int_equal(next, 11);
	PQclear(rows);
	OK(sessdb_read(c, key, "p1", 10, 100, &rows, &done, &next, &err));
	assert_int_equal(PQntuples(rows), 1);
	assert_int_equal(read_events(rows), 0);
	assert_true(done);
	assert_int_equal(next, 11);
	assert_string_equal(PQgetvalue(rows, 0, 4), ""); /* no reader yet */
	PQclear(rows);
	/* the reader comes with the rows: a replica whose connection was
	 * replaced learns it there */
	{
		struct sessdb_stream st;

		OK(sessdb_attach(c, key, "p1", NULL, NULL, R_OTHER, 5, &st,
				 &err));
	}
	OK(sessdb_read(c, key, "p1", 0, 100, &rows, &done, &next, &err));
	assert_string_equal(PQgetvalue(rows, 0, 4), R_OTHER);
	PQclear(rows);
	rows = (PGresult *)&rows;
	CHECK(sessdb_read(c, key, "p9", 0, 100, &rows, &done, &next, &err),
	      STATUS_NOTFOUND);
	assert_null(rows);
	pg_release(c);
}

/* A writer flushing small batches while a reader attaches and reads: the
 * reader sees every seq once, in order. */
#define RACE_N 500

struct race_job {
	const char *key;
	int rc;
	char detail[512];
};

static void *
race_writer(void *arg)
{
	struct race_job *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char reader[SESSDB_REPLICA_LEN + 1];
	uint64_t seq = 1;

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	while (j->rc == STATUS_OK && seq < RACE_N) {
		size_t n = 1 + seq % 4;

		if (seq + n > RACE_N)
			n = RACE_N - seq;
		j->rc = app(c, R_OWN, j->key, "race", seq, n, 0, false, reader,
			    &err);
		seq += n;
	}
	if (j->rc == STATUS_OK)
		j->rc = app(c, R_OWN, j->key, "race", seq, 0, 0, true, reader,
			    &err);
	if (j->rc != STATUS_OK)
		snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

static void
test_race(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	static struct race_job job;
	struct sessdb_stream st;
	pthread_t t;
	uint64_t cursor = UINT64_MAX, next = 0, reads = 0;
	long deadline = pgtest_now_ms() + 15000;
	bool done = false;

	(void)state;
	mksess(c, "race", key);
	OK(app(c, R_OWN, key, "race", 0, 1, 0, false, reader, &err));
	job = (struct race_job){.key = key};
	assert_int_equal(pthread_create(&t, NULL, race_writer, &job), 0);
	OK(sessdb_attach(c, key, "race", NULL, NULL, R_OTHER, 5, &st, &err));
	assert_int_equal(st.first, 0);
	while (!(done && cursor + 1 == next)) {
		PGresult *rows;

		OK(sessdb_read(c, key, "race", cursor, 7, &rows, &done, &next,
			       &err));
		reads++;
		for (int i = 0; i < read_events(rows); i++) {
			uint64_t s = seq_in(rows, i, READ_SEQ);
			uint64_t want = cursor == UINT64_MAX ? 0 : cursor + 1;

			if (s != want)
				fail_msg("read seq %" PRIu64 ", want %" PRIu64,
					 s, want);
			cursor = s;
		}
		PQclear(rows);
		assert_true(next <= RACE_N);
		assert_true(pgtest_now_ms() < deadline);
	}
	pthread_join(t, NULL);
	if (job.rc != STATUS_OK)
		fail_msg("writer: %s %s", status_str(job.rc), job.detail);
	assert_int_equal(cursor, RACE_N - 1);
	assert_int_equal(next, RACE_N);
	fprintf(stderr, "race: %" PRIu64 " reads for %d events\n", reads,
		RACE_N);
	pg_release(c);
}

/* ---- server-to-client requests --------------------------------------------- */

static void
test_pending(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], k2[SESSDB_KEY_LEN + 1], want[512];
	char none[SESSDB_KEY_LEN + 1];
	const char *ans = "{\"jsonrpc\":\"2.0\",\"id\":\"sx-1\",\"result\":{}}";
	PGresult *rows = NULL;
	PGconn *l = lis_open(SESSDB_REPLICA_PREFIX R_OWN,
			     SESSDB_REPLICA_PREFIX R_OTHER, NULL);
	json_t *a, *b;

	(void)state;
	mksess(c, "pending", key);
	mksess(c, "pending-2", k2);
	sessdb_key("pending-none", none);
	OK(sessdb_pending_add(c, key, "sx-1", R_OWN, &err));
	OK(sessdb_pending_add(c, key, "sx-1", R_OWN, &err)); /* again: ok */
	OK(sessdb_pending_add(c, key, "sx-2", R_OWN, &err));
	OK(sessdb_pending_add(c, k2, "sx-1", R_OTHER, &err));
	CHECK(sessdb_pending_add(c, none, "sx-1", R_OWN, &err),
	      STATUS_NOTFOUND);
	lis_expect(l, "");

	/* nothing answered yet */
	OK(sessdb_pending_take(c, R_OWN, &rows, &err));
	assert_int_equal(PQntuples(rows), 0);
	PQclear(rows);

	OK(sessdb_pending_answer(c, key, "sx-1", ans, &err));
	snprintf(want, sizeof(want), SESSDB_REPLICA_PREFIX R_OWN " a %s sx-1\n",
		 key);
	lis_expect(l, want);
	/* one answer per request; unknown ids and sessions */
	CHECK(sessdb_pending_answer(c, key, "sx-1", ans, &err),
	      STATUS_NOTFOUND);
	CHECK(sessdb_pending_answer(c, key, "sx-9", ans, &err),
	      STATUS_NOTFOUND);
	CHECK(sessdb_pending_answer(c, none, "sx-1", ans, &err),
	      STATUS_NOTFOUND);
	lis_expect(l, "");
	OK(sessdb_pending_answer(c, k2, "sx-1", "{\"id\":1}", &err));
	snprintf(want, sizeof(want),
		 SESSDB_REPLICA_PREFIX R_OTHER " a %s sx-1\n", k2);
	lis_expect(l, want);

	/* take: the owner's answered ones, once */
	OK(sessdb_pending_take(c, R_OWN, &rows, &err));
	assert_int_equal(PQntuples(rows), 1);
	assert_string_equal(PQgetvalue(rows, 0, 0), key);
	assert_string_equal(PQgetvalue(rows, 0, 1), "sx-1");
	a = json_loads(PQgetvalue(rows, 0, 2), 0, NULL);
	b = json_loads(ans, 0, NULL);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	PQclear(rows);
	OK(sessdb_pending_take(c, R_OWN, &rows, &err));
	assert_int_equal(PQntuples(rows), 0);
	PQclear(rows);
	/* sx-2 still waits */
	assert_string_equal(val1("SELECT string_agg(id, ',') FROM mcp_pending "
				 "WHERE session_key = $1",
				 key),
			    "sx-2");
	OK(sessdb_pending_drop(c, key, "sx-2", &err));
	OK(sessdb_pending_drop(c, key, "sx-404", &err));
	assert_string_equal(val1("SELECT count(*) FROM mcp_pending WHERE "
				 "session_key = $1",
				 key),
			    "0");
	CHECK(sessdb_pending_answer(c, key, "sx-2", ans, &err),
	      STATUS_NOTFOUND);
	OK(sessdb_pending_take(c, R_OTHER, &rows, &err));
	assert_int_equal(PQntuples(rows), 1);
	assert_string_equal(PQgetvalue(rows, 0, 0), k2);
	PQclear(rows);
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/* ---- sweep ------------------------------------------------------------------ */

struct sweep_job {
	int rc, expired;
	char detail[512];
};

static void *
sweep_thread(void *arg)
{
	struct sweep_job *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	if (j->rc == STATUS_OK)
		j->rc = sessdb_sweep(c, 600, 600, 600, &j->expired, &err);
	if (j->rc != STATUS_OK)
		snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

static void
test_sweep(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char old[3][SESSDB_KEY_LEN + 1], live[SESSDB_KEY_LEN + 1];
	char reader[SESSDB_REPLICA_LEN + 1], got[8192];
	const char *gone = "dddddddddddd0001", *open = "dddddddddddd0002",
		   *recent = "dddddddddddd0003";
	int expired = -1;
	PGconn *l;

	(void)state;
	/* leftovers of other tests first */
	OK(sessdb_sweep(c, 600, 600, 600, &expired, &err));
	l = lis_open(SESSDB_CHANNEL, NULL);
	for (int i = 0; i < 3; i++) {
		char id[32];

		snprintf(id, sizeof(id), "sweep-old-%d", i);
		mksess(c, id, old[i]);
		exec1("UPDATE mcp_sessions SET last_active = now() - interval "
		      "'1 hour' WHERE key = $1",
		      old[i]);
	}
	mksess(c, "sweep-live", live);
	/* streams: finished long ago, finished just now, open */
	OK(app(c, R_OWN, live, "done-old", 0, 2, 0, true, reader, &err));
	OK(app(c, R_OWN, live, "done-new", 0, 2, 0, true, reader, &err));
	OK(app(c, open, live, "open", 0, 2, 0, false, reader, &err));
	exec1("UPDATE mcp_streams SET done_at = now() - interval '1 hour' "
	      "WHERE session_key = $1 AND id = 'done-old'",
	      live);
	/* pending: one old, one new */
	OK(sessdb_pending_add(c, live, "sx-old", R_OWN, &err));
	OK(sessdb_pending_add(c, live, "sx-new", R_OWN, &err));
	exec1("UPDATE mcp_pending SET created_at = now() - interval '1 hour' "
	      "WHERE session_key = $1 AND id = 'sx-old'",
	      live);
	/* replicas: dead with nothing open, dead with an open stream,
	 * dead only for seconds */
	reg(c, gone);
	reg(c, open);
	reg(c, recent);
	PQclear(sql("UPDATE mcp_replicas SET seen_at = now() - interval '2 "
		    "minutes' WHERE id IN ($1, $2)",
		    2, (const char *[]){gone, open}));
	exec1("UPDATE mcp_replicas SET seen_at = now() - interval '30 s' "
	      "WHERE id = $1",
	      recent);
	OK(sessdb_sweep(c, 600, 600, 600, &expired, &err));
	assert_int_equal(expired, 3);
	lis_collect(l, got, sizeof(got));
	for (int i = 0; i < 3; i++) {
		char line[128];

		snprintf(line, sizeof(line), SESSDB_CHANNEL " d %s\n", old[i]);
		assert_non_null(strstr(got, line));
	}
	{
		int lines = 0;

		for (const char *p = got; *p != '\0'; p++)
			lines += *p == '\n';
		assert_int_equal(lines, 3);
	}
	for (int i = 0; i < 3; i++)
		assert_string_equal(val1("SELECT count(*) FROM mcp_sessions "
					 "WHERE key = $1",
					 old[i]),
				    "0");
	assert_string_equal(val1("SELECT string_agg(id, ',' ORDER BY id) FROM "
				 "mcp_streams WHERE session_key = $1",
				 live),
			    "done-new,open");
	assert_string_equal(seqs(live, "done-old"), "");
	assert_string_equal(val1("SELECT string_agg(id, ',') FROM mcp_pending "
				 "WHERE session_key = $1",
				 live),
			    "sx-new");
	assert_string_equal(val("SELECT string_agg(id, ',' ORDER BY id) FROM "
				"mcp_replicas WHERE id LIKE 'dddd%'",
				0, NULL),
			    "dddddddddddd0002,dddddddddddd0003");
	/* nothing left to do */
	OK(sessdb_sweep(c, 600, 600, 600, &expired, &err));
	assert_int_equal(expired, 0);
	lis_expect(l, "");

	/* one sweeper at a time: one blocked inside its transaction (on a
	 * finished stream this test holds locked) keeps the lock */
	exec1("UPDATE mcp_streams SET done_at = now() - interval '1 hour' "
	      "WHERE session_key = $1 AND id = 'done-new'",
	      live);
	{
		static struct sweep_job job;
		pthread_t t;
		long deadline = pgtest_now_ms() + WAIT_MS;

		/* a connection of its own: pg_stat_activity, polled on db,
		 * is a snapshot per transaction */
		PGconn *h = PQconnectdb(cluster.conninfo);
		PGresult *res;

		assert_int_equal(PQstatus(h), CONNECTION_OK);
		PQclear(PQexec(h, "BEGIN"));
		res = PQexecParams(h,
				   "SELECT 1 FROM mcp_streams WHERE "
				   "session_key = $1 AND id = 'done-new' FOR "
				   "UPDATE",
				   1, NULL, (const char *[]){live}, NULL, NULL,
				   0);
		assert_int_equal(PQntuples(res), 1);
		PQclear(res);
		assert_int_equal(pthread_create(&t, NULL, sweep_thread, &job),
				 0);
		while (strcmp(val("SELECT count(*) FROM pg_stat_activity "
				  "WHERE wait_event_type = 'Lock' AND query "
				  "LIKE 'DELETE FROM mcp_streams%'",
				  0, NULL),
			      "1") != 0) {
			assert_true(pgtest_now_ms() < deadline);
			pgtest_sleep_ms(10);
		}
		expired = -1;
		CHECK(sessdb_sweep(c, 600, 600, 600, &expired, &err),
		      STATUS_AGAIN);
		assert_int_equal(expired, 0);
		PQclear(PQexec(h, "COMMIT"));
		PQfinish(h);
		pthread_join(t, NULL);
		if (job.rc != STATUS_OK)
			fail_msg("sweep: %s %s", status_str(job.rc),
				 job.detail);
		assert_int_equal(job.expired, 0);
		assert_string_equal(val1("SELECT string_agg(id, ',') FROM "
					 "mcp_streams WHERE session_key = $1",
					 live),
				    "open");
		/* the lock went with the transaction */
		OK(sessdb_sweep(c, 600, 600, 600, &expired, &err));
	}
	PQfinish(l);
	pg_release(c);
}

/* ---- a dead replica's streams ---------------------------------------------- */

struct finish_arg {
	const char *stream; /* its events are ev_text's ("p1" when NULL) */
	int calls;
	uint64_t next_seq;
	char seen[256];
	int rc;	    /* returned */
	size_t add; /* events to add */
};

static int
finish(void *arg, PGresult *events, uint64_t next_seq, char ***ev, size_t *n)
{
	struct finish_arg *f = arg;
	size_t len = 0;

	f->calls++;
	f->next_seq = next_seq;
	f->seen[0] = '\0';
	for (int i = 0; i < PQntuples(events); i++) {
		char text[96];

		ev_text(text, sizeof(text),
			f->stream != NULL ? f->stream : "p1",
			seq_in(events, i, 0));
		/* each row is (seq, data) */
		if (strcmp(PQgetvalue(events, i, 1), text) != 0)
			return STATUS_INVALID;
		len += (size_t)snprintf(f->seen + len, sizeof(f->seen) - len,
					"%s%s", i > 0 ? "," : "",
					PQgetvalue(events, i, 0));
	}
	*ev = NULL;
	*n = 0;
	if (f->rc != STATUS_OK)
		return f->rc;
	*ev = calloc(f->add + 1, sizeof(char *));
	if (*ev == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < f->add; i++) {
		char text[96];

		snprintf(text, sizeof(text),
			 "id: p1-%" PRIu64 "\ndata: {\"error\":%zu}\n\n",
			 next_seq + i, i);
		(*ev)[i] = strdup(text);
		if ((*ev)[i] == NULL)
			return STATUS_NOMEM;
		(*n)++;
	}
	return STATUS_OK;
}

/* The orphans of session key, "stream owner requests" lines sorted. */
static void
orphans_of(struct pg_conn *c, int dead_s, const char *key, char *out,
	   size_t cap)
{
	struct pg_error err;
	PGresult *rows = NULL;
	char lines[16][128];
	size_t n = 0, len = 0;

	OK(sessdb_orphans(c, dead_s, &rows, &err));
	assert_int_equal(PQnfields(rows), 4);
	for (int i = 0; i < PQntuples(rows); i++) {
		if (strcmp(PQgetvalue(rows, i, 0), key) != 0)
			continue;
		assert_true(n < 16);
		snprintf(lines[n++], sizeof(lines[0]), "%s %s %s\n",
			 PQgetvalue(rows, i, 1), PQgetvalue(rows, i, 2),
			 PQgetvalue(rows, i, 3));
	}
	PQclear(rows);
	qsort(lines, n, sizeof(lines[0]),
	      (int (*)(const void *, const void *))strcmp);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, len < cap ? cap - len : 0,
					"%s", lines[i]);
	assert_true(len < cap);
}

static void
test_takeover(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], k2[SESSDB_KEY_LEN + 1], want[256];
	char reader[SESSDB_REPLICA_LEN + 1], got[512];
	const char *dead = "eeeeeeeeeeee0001", *alive = "eeeeeeeeeeee0002",
		   *third = "eeeeeeeeeeee0003", *norow = "eeeeeeeeeeee0004";
	struct finish_arg f = {0};
	struct sessdb_stream st;
	PGresult *rows = NULL;
	PGconn *l = lis_open("sextant_r_eeeeeeeeeeee0001",
			     "sextant_r_eeeeeeeeeeee0002", NULL);

	(void)state;
	reg(c, dead);
	reg(c, alive);
	mksess(c, "takeover", key);
	mksess(c, "takeover-2", k2);
	/* dead's open streams: p1 (read on alive), p2 (no reader) and
	 * done; alive's open stream: q1 */
	OK(app(c, dead, key, "p1", 0, 3, 0, false, reader, &err));
	OK(app(c, dead, key, "p2", 0, 1, 0, false, reader, &err));
	OK(app(c, dead, key, "pd", 0, 1, 0, true, reader, &err));
	OK(app(c, alive, key, "q1", 0, 1, 0, false, reader, &err));
	OK(sessdb_attach(c, key, "p1", NULL, NULL, alive, 5, &st, &err));
	OK(sessdb_pending_add(c, key, "sx-d1", dead, &err));
	OK(sessdb_pending_add(c, k2, "sx-d2", dead, &err));
	OK(sessdb_pending_add(c, key, "sx-t1", third, &err));
	lis_expect(l, "");

	/* nothing is orphaned while dead beats, but a stream whose owner
	 * has no row at all is */
	OK(app(c, norow, key, "p3", 0, 1, 0, false, reader, &err));
	orphans_of(c, 5, key, got, sizeof(got));
	assert_string_equal(got, "p3 eeeeeeeeeeee0004 [1, \"two\"]\n");
	exec1("UPDATE mcp_replicas SET seen_at = now() - interval '10 s' "
	      "WHERE id = $1",
	      dead);
	orphans_of(c, 30, key, got, sizeof(got));
	assert_string_equal(got, "p3 eeeeeeeeeeee0004 [1, \"two\"]\n");
	orphans_of(c, 5, key, got, sizeof(got));
	assert_string_equal(got, "p1 eeeeeeeeeeee0001 [1, \"two\"]\n"
				 "p2 eeeeeeeeeeee0001 [1, \"two\"]\n"
				 "p3 eeeeeeeeeeee0004 [1, \"two\"]\n");
	/* requests NULL reads as [] (a first flush without them) */
	exec1("UPDATE mcp_streams SET requests = NULL WHERE session_key = $1 "
	      "AND id = 'p3'",
	      key);
	orphans_of(c, 5, key, got, sizeof(got));
	assert_non_null(strstr(got, "p3 eeeeeeeeeeee0004 []\n"));

	/* a failing finish changes nothing */
	f.rc = STATUS_INVALID;
	CHECK(sessdb_takeover(c, key, "p1", dead, finish, &f, &err),
	      STATUS_INVALID);
	assert_int_equal(f.calls, 1);
	assert_string_equal(f.seen, "0,1,2");
	assert_int_equal(f.next_seq, 3);
	assert_string_equal(val1("SELECT owner || ' ' || done || ' ' || "
				 "next_seq FROM mcp_streams WHERE session_key "
				 "= $1 AND id = 'p1'",
				 key),
			    "eeeeeeeeeeee0001 false 3");

	/* a hung dead replica flushed once more meanwhile */
	OK(app(c, dead, key, "p1", 3, 1, 0, false, reader, &err));
	snprintf(want, sizeof(want), "sextant_r_%s e %s p1\n", alive, key);
	lis_expect(l, want);

	f = (struct finish_arg){.add = 2};
	OK(sessdb_takeover(c, key, "p1", dead, finish, &f, &err));
	assert_int_equal(f.calls, 1);
	assert_string_equal(f.seen, "0,1,2,3");
	assert_int_equal(f.next_seq, 4);
	/* the reader is told, nobody else */
	lis_expect(l, want);
	assert_string_equal(seqs(key, "p1"), "0,1,2,3,4,5");
	assert_string_equal(val1("SELECT data FROM mcp_events WHERE "
				 "session_key = $1 AND stream_id = 'p1' AND "
				 "seq = 5",
				 key),
			    "id: p1-5\ndata: {\"error\":1}\n\n");
	assert_string_equal(val1("SELECT (owner IS NULL) || ' ' || done || ' ' "
				 "|| next_seq || ' ' || (done_at IS NOT NULL) "
				 "|| ' ' || reader FROM mcp_streams WHERE "
				 "session_key = $1 AND id = 'p1'",
				 key),
			    "true true 6 true eeeeeeeeeeee0002");
	/* dead's pending requests of that session are gone, others stay */
	assert_string_equal(val2("SELECT string_agg(id, ',' ORDER BY id) FROM "
				 "mcp_pending WHERE session_key IN ($1, $2)",
				 key, k2),
			    "sx-d2,sx-t1");
	/* the dead replica's next flush is refused; a second takeover finds
	 * nothing */
	CHECK(app(c, dead, key, "p1", 4, 1, 0, false, reader, &err),
	      STATUS_CLOSED);
	CHECK(app(c, dead, key, "p1", 6, 1, 0, false, reader, &err),
	      STATUS_CLOSED);
	assert_string_equal(seqs(key, "p1"), "0,1,2,3,4,5");
	f = (struct finish_arg){.add = 1};
	CHECK(sessdb_takeover(c, key, "p1", dead, finish, &f, &err),
	      STATUS_NOTFOUND);
	assert_int_equal(f.calls, 0);
	/* a reader reads to the end */
	{
		bool done;
		uint64_t next;

		OK(sessdb_read(c, key, "p1", 3, 100, &rows, &done, &next,
			       &err));
		assert_int_equal(read_events(rows), 2);
		assert_true(done);
		assert_int_equal(next, 6);
		PQclear(rows);
	}
	/* p2, no reader, nothing to add: done, nobody woken */
	f = (struct finish_arg){.stream = "p2"};
	OK(sessdb_takeover(c, key, "p2", dead, finish, &f, &err));
	assert_int_equal(f.calls, 1);
	assert_string_equal(val1("SELECT (owner IS NULL) || ' ' || done || ' ' "
				 "|| next_seq FROM mcp_streams WHERE "
				 "session_key = $1 AND id = 'p2'",
				 key),
			    "true true 1");
	/* not dead's stream, or not open */
	CHECK(sessdb_takeover(c, key, "q1", dead, finish, &f, &err),
	      STATUS_NOTFOUND);
	CHECK(sessdb_takeover(c, key, "pd", dead, finish, &f, &err),
	      STATUS_NOTFOUND);
	assert_int_equal(f.calls, 1);
	orphans_of(c, 5, key, got, sizeof(got));
	assert_string_equal(got, "p3 eeeeeeeeeeee0004 []\n");
	f = (struct finish_arg){.stream = "p3"};
	OK(sessdb_takeover(c, key, "p3", norow, finish, &f, &err));
	assert_int_equal(f.calls, 1);
	orphans_of(c, 5, key, got, sizeof(got));
	assert_string_equal(got, "");
	lis_expect(l, "");
	PQfinish(l);
	pg_release(c);
}

/*
 * A replica that was only hung flushes while another takes its stream
 * over: its flush waits for the takeover's lock and is then refused, and
 * the takeover's events are the stream's last.
 */
struct late_flush {
	const char *replica, *key;
	int rc;
	char detail[512];
};

static void *
late_flush_thread(void *arg)
{
	struct late_flush *j = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char reader[SESSDB_REPLICA_LEN + 1];

	j->rc = pg_acquire(pool, NULL, WAIT_MS, &c, &err);
	if (j->rc == STATUS_OK)
		j->rc = app(c, j->replica, j->key, "p1", 2, 2, 0, false, reader,
			    &err);
	snprintf(j->detail, sizeof(j->detail), "%s", err.detail);
	pg_release(c);
	return NULL;
}

struct race_finish {
	struct late_flush flush;
	pthread_t t;
	bool started;
};

static int
finish_racing(void *arg, PGresult *events, uint64_t next_seq, char ***ev,
	      size_t *n)
{
	struct race_finish *r = arg;
	long deadline = pgtest_now_ms() + WAIT_MS;

	(void)events;
	*ev = NULL;
	*n = 0;
	if (pthread_create(&r->t, NULL, late_flush_thread, &r->flush) != 0)
		return STATUS_NOMEM;
	r->started = true;
	/* until the flush waits for the stream's row, locked by us */
	while (strcmp(val("SELECT count(*) FROM pg_stat_activity WHERE "
			  "wait_event_type = 'Lock' AND query LIKE "
			  "'SELECT mcp_append%'",
			  0, NULL),
		      "1") != 0) {
		if (pgtest_now_ms() > deadline)
			return STATUS_TIMEOUT;
		pgtest_sleep_ms(10);
	}
	*ev = calloc(1, sizeof(char *));
	if (*ev == NULL)
		return STATUS_NOMEM;
	(*ev)[0] = malloc(64);
	if ((*ev)[0] == NULL)
		return STATUS_NOMEM;
	snprintf((*ev)[0], 64, "id: p1-%" PRIu64 "\ndata: {\"taken\":1}\n\n",
		 next_seq);
	*n = 1;
	return STATUS_OK;
}

static void
test_takeover_race(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	const char *hung = "ffffffffffff0001";
	static struct race_finish r;
	int rc;

	(void)state;
	reg(c, hung);
	mksess(c, "takeover-race", key);
	OK(app(c, hung, key, "p1", 0, 2, 0, false, reader, &err));
	/* retired: dead at once, whatever dead_s */
	OK(sessdb_retire(c, hung, &err));
	r = (struct race_finish){.flush = {.replica = hung, .key = key}};
	rc = sessdb_takeover(c, key, "p1", hung, finish_racing, &r, &err);
	if (r.started)
		pthread_join(r.t, NULL);
	if (rc != STATUS_OK)
		fail_msg("takeover: %s %s", status_str(rc), err.detail);
	CHECK(r.flush.rc, STATUS_CLOSED);
	assert_string_equal(seqs(key, "p1"), "0,1,2");
	assert_string_equal(val1("SELECT data FROM mcp_events WHERE "
				 "session_key = $1 AND seq = 2",
				 key),
			    "id: p1-2\ndata: {\"taken\":1}\n\n");
	assert_string_equal(val1("SELECT next_seq || ' ' || done FROM "
				 "mcp_streams WHERE session_key = $1",
				 key),
			    "3 true");
	pg_release(c);
}

/* Events that are not UTF-8 are refused, from a flush or a takeover. */
static int
finish_bad(void *arg, PGresult *events, uint64_t next_seq, char ***ev,
	   size_t *n)
{
	(void)arg;
	(void)events;
	(void)next_seq;
	*n = 0;
	*ev = calloc(2, sizeof(char *));
	if (*ev == NULL)
		return STATUS_NOMEM;
	(*ev)[0] = strdup("id: p1-1\ndata: ok\n\n");
	(*ev)[1] = strdup("id: p1-2\ndata: \xc3(\n\n");
	if ((*ev)[0] == NULL || (*ev)[1] == NULL)
		return STATUS_NOMEM;
	*n = 2;
	return STATUS_OK;
}

static void
test_not_utf8(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	const char *data[] = {"id: p1-1\ndata: {}\n\n",
			      "id: p1-2\ndata: \xed\xa0\x80\n\n"};
	struct sessdb_append a = {.replica = R_OWN,
				  .key = key,
				  .stream = "p1",
				  .n = 2,
				  .seq = 1,
				  .data = data};
	const char *dead = "ffffffffffff0002";

	(void)state;
	mksess(c, "not-utf8", key);
	OK(app(c, dead, key, "p1", 0, 1, 0, false, reader, &err));
	a.replica = dead;
	memset(&err, 0, sizeof(err));
	CHECK(sessdb_append(c, &a, reader, &err), STATUS_INVALID);
	assert_true(err.client[0] != '\0');
	assert_string_equal(seqs(key, "p1"), "0");
	memset(&err, 0, sizeof(err));
	CHECK(sessdb_takeover(c, key, "p1", dead, finish_bad, NULL, &err),
	      STATUS_INVALID);
	assert_true(err.client[0] != '\0');
	assert_string_equal(seqs(key, "p1"), "0");
	assert_string_equal(val1("SELECT owner || ' ' || done FROM "
				 "mcp_streams WHERE session_key = $1",
				 key),
			    "ffffffffffff0002 false");
	pg_release(c);
}

/* ---- a stopped server (last: the cluster stays down) ----------------------- */

static int
finish_never(void *arg, PGresult *events, uint64_t next_seq, char ***ev,
	     size_t *n)
{
	(void)events;
	(void)next_seq;
	(void)ev;
	(void)n;
	(*(int *)arg)++;
	return STATUS_INVALID;
}

static void
test_server_stopped(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	char key[SESSDB_KEY_LEN + 1], reader[SESSDB_REPLICA_LEN + 1];
	char stream[32], *subs = NULL;
	struct sessdb_session *s = NULL;
	struct sessdb_stream st;
	PGresult *rows = NULL;
	uint64_t seq, next;
	int64_t rev;
	int expired, calls = 0;
	bool done;
	const char *const keys[] = {key};

	(void)state;
	mksess(c, "stopped", key);
	assert_int_equal(pgtest_stop_server(&cluster), 0);
	CHECK(sessdb_get(c, key, &s, &err), STATUS_IO);
	assert_null(s);
	CHECK(sessdb_register(c, R_OWN, "h", 1, &err), STATUS_IO);
	CHECK(sessdb_heartbeat(c, R_OWN, &err), STATUS_IO);
	CHECK(sessdb_set_level(c, key, 1, &rev, &err), STATUS_IO);
	CHECK(sessdb_subscribe(c, key, "u", true, &rev, &subs, &err),
	      STATUS_IO);
	assert_null(subs);
	CHECK(sessdb_touch(c, keys, 1, &err), STATUS_IO);
	CHECK(app(c, R_OWN, key, "p1", 0, 1, 0, false, reader, &err),
	      STATUS_IO);
	CHECK(sessdb_notify(c, R_OWN, key, "g1", NULL, "{}", 3, stream, &seq,
			    reader, &err),
	      STATUS_IO);
	CHECK(sessdb_attach(c, key, NULL, "g1", NULL, R_OWN, 5, &st, &err),
	      STATUS_IO);
	CHECK(sessdb_read(c, key, "g1", 0, 10, &rows, &done, &next, &err),
	      STATUS_IO);
	assert_null(rows);
	CHECK(sessdb_pending_answer(c, key, "sx-1", "{}", &err), STATUS_IO);
	CHECK(sessdb_sweep(c, 1, 1, 1, &expired, &err), STATUS_IO);
	CHECK(sessdb_takeover(c, key, "p1", R_OWN, finish_never, &calls, &err),
	      STATUS_IO);
	assert_int_equal(calls, 0);
	CHECK(sessdb_delete(c, key, NULL, &err), STATUS_IO);
	pg_release(c);
}

/* Signatures: what sessdb_sign writes verifies with that key only, and
 * any change to the payload or the signature fails. */
static void
test_sign_verify(void **state)
{
	static const uint8_t other[SESSDB_NOTIFY_KEY_BYTES] =
		"another key, 32 bytes long....";
	char sig[128], bad[sizeof(sig) + 2];
	size_t len = 99;

	(void)state;
	assert_int_equal(sessdb_sign(NKEY, "x 0123 aaaa", sig, sizeof(sig)),
			 STATUS_OK);
	assert_int_equal(strlen(sig), 11 + 1 + SESSDB_SIG_LEN);
	assert_int_equal(sessdb_verify(NKEY, sig, &len), STATUS_OK);
	assert_int_equal(len, 11);
	assert_int_equal(sessdb_verify(other, sig, &len), STATUS_INVALID);
	assert_int_equal(len, 0);
	for (size_t i = 0; i < strlen(sig); i++) {
		snprintf(bad, sizeof(bad), "%s", sig);
		bad[i] = bad[i] == 'a' ? 'b' : 'a';
		assert_int_equal(sessdb_verify(NKEY, bad, &len),
				 STATUS_INVALID);
	}
	/* unsigned, cut, or with more after the signature */
	assert_int_equal(sessdb_verify(NKEY, "x 0123 aaaa", &len),
			 STATUS_INVALID);
	snprintf(bad, sizeof(bad), "%.*s", (int)strlen(sig) - 1, sig);
	assert_int_equal(sessdb_verify(NKEY, bad, &len), STATUS_INVALID);
	snprintf(bad, sizeof(bad), "%s ", sig);
	assert_int_equal(sessdb_verify(NKEY, bad, &len), STATUS_INVALID);
	assert_int_equal(sessdb_verify(NKEY, "", &len), STATUS_INVALID);
	/* no room */
	assert_int_equal(
		sessdb_sign(NKEY, "x 0123 aaaa", sig, 11 + 1 + SESSDB_SIG_LEN),
		STATUS_LIMIT);
}

/* The first gateway's fresh key is stored; everyone gets that one. */
static void
test_notify_key(void **state)
{
	struct pg_conn *c = conn();
	struct pg_error err;
	uint8_t a[SESSDB_NOTIFY_KEY_BYTES], b[SESSDB_NOTIFY_KEY_BYTES];
	uint8_t fa[SESSDB_NOTIFY_KEY_BYTES], fb[SESSDB_NOTIFY_KEY_BYTES];

	(void)state;
	memset(fa, 0x11, sizeof(fa));
	memset(fb, 0x22, sizeof(fb));
	exec1("DELETE FROM mcp_notify_key", NULL);
	OK(sessdb_notify_key(c, fa, a, &err));
	assert_memory_equal(a, fa, sizeof(a));
	OK(sessdb_notify_key(c, fb, b, &err));
	assert_memory_equal(b, fa, sizeof(b));
	assert_string_equal(val("SELECT count(*) FROM mcp_notify_key", 0, NULL),
			    "1");
	pg_release(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_replicas),
		cmocka_unit_test(test_insert_get),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_limit_concurrent),
		cmocka_unit_test(test_next_expiry),
		cmocka_unit_test(test_set_level),
		cmocka_unit_test(test_subscribe),
		cmocka_unit_test(test_subscribe_concurrent),
		cmocka_unit_test(test_subscribe_bound),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_delete_acks),
		cmocka_unit_test(test_touch),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_sign_verify),
		cmocka_unit_test(test_notify_key),
		cmocka_unit_test(test_append),
		cmocka_unit_test(test_notify),
		cmocka_unit_test(test_notify_concurrent),
		cmocka_unit_test(test_write_while_deleted),
		cmocka_unit_test(test_attach),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_takeover),
		cmocka_unit_test(test_takeover_race),
		cmocka_unit_test(test_not_utf8),
		cmocka_unit_test(test_server_stopped),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

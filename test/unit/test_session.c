/*
 * test_session.c - unit tests for server/mcp/session: the session table
 * (create, acquire, release, delete, full table, idle expiry through the
 * sweep with a fake clock) and SSE streams (priming, send, readers with a
 * fake wake callback, finish, dropped and replaced connections,
 * Last-Event-ID resumption, the kept-stream bound, keep-alives and the
 * live-stream limit).  Single-threaded: the session mutex is taken only
 * because the stream API requires it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "mcp/session.h"

#define IDLE_S	    10
#define KEEPALIVE_S 15
#define RETRY_MS    1500

static const struct session_limits limits = {
	.max_sessions = 4,
	.idle_timeout_s = IDLE_S,
	.max_streams = 2,
	.replay_events = 8,
	.replay_bytes = 1 << 16,
	.retry_ms = RETRY_MS,
	.keepalive_s = KEEPALIVE_S,
};

static struct session_table *
new_table(const struct session_limits *lim)
{
	struct session_table *t = NULL;

	assert_int_equal(session_table_new(lim, &t), STATUS_OK);
	assert_non_null(t);
	return t;
}

/* A released session (not busy): the caller holds no reference. */
static struct session *
new_session(struct session_table *t, char *id)
{
	struct session *s = NULL;

	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_OK);
	assert_non_null(s);
	memcpy(id, s->id, SESSION_ID_LEN + 1);
	session_release(s);
	return s;
}

/* ---- the fake connection ---------------------------------------------- */

struct reader {
	int wakes;
	unsigned gen;
	struct sse_cursor cur;
};

static void
count_wake(void *arg)
{
	((struct reader *)arg)->wakes++;
}

static void
attach(struct stream *st, struct reader *rd, uint64_t after)
{
	assert_int_equal(
		stream_attach(st, count_wake, rd, after, &rd->gen, &rd->cur),
		STATUS_OK);
}

/*
 * Reads until the stream says WAIT or END, with dst chunks of step bytes;
 * the bytes go to out (NUL-terminated).  Returns the last state.
 */
static enum stream_state
drain(struct stream *st, struct reader *rd, size_t step, char *out,
      size_t outlen)
{
	enum stream_state state;
	size_t total = 0, n;
	char chunk[256];

	assert_true(step <= sizeof(chunk));
	for (;;) {
		state = stream_read(st, rd->gen, &rd->cur, chunk, step, &n);
		if (state != STREAM_DATA) {
			assert_int_equal(n, 0);
			break;
		}
		assert_true(n > 0 && n <= step);
		assert_true(total + n < outlen);
		memcpy(out + total, chunk, n);
		total += n;
	}
	out[total] = '\0';
	return state;
}

/* The event the stream encodes for seq with compact JSON data. */
static void
event_text(char *out, size_t len, const struct stream *st, unsigned seq,
	   const char *data)
{
	snprintf(out, len, "id: %s-%u\ndata: %s\n\n", st->id, seq, data);
}

static void
send_n(struct stream *st, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		json_t *msg = json_pack("{s:s,s:I}", "jsonrpc", "2.0", "n",
					(json_int_t)st->next_seq);

		assert_int_equal(stream_send(st, msg), STATUS_OK);
		json_decref(msg);
	}
}

/* ---- the table -------------------------------------------------------- */

static void
test_level_parse(void **state)
{
	static const struct {
		const char *name;
		int want;
	} cases[] = {
		{"debug", MCP_LEVEL_DEBUG},
		{"info", MCP_LEVEL_INFO},
		{"notice", MCP_LEVEL_NOTICE},
		{"warning", MCP_LEVEL_WARNING},
		{"error", MCP_LEVEL_ERROR},
		{"critical", MCP_LEVEL_CRITICAL},
		{"alert", MCP_LEVEL_ALERT},
		{"emergency", MCP_LEVEL_EMERGENCY},
		{"warn", -1},
		{"INFO", -1},
		{"", -1},
		{"info ", -1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (mcp_level_parse(cases[i].name) != cases[i].want)
			fail_msg("%s: got %d", cases[i].name,
				 mcp_level_parse(cases[i].name));
}

static void
test_create_acquire_delete(void **state)
{
	struct session_table *t = new_table(&limits);
	json_t *caps = json_pack("{s:{}}", "sampling");
	json_t *info = json_pack("{s:s}", "name", "c");
	struct session *s = NULL, *s2 = NULL, *got = NULL;
	char id[SESSION_ID_LEN + 1];
	size_t i;

	(void)state;
	assert_int_equal(session_create(t, "2025-06-18", caps, info, &s),
			 STATUS_OK);
	/* 128 random bits as hex: visible ASCII only (transports A3.12). */
	assert_int_equal(strlen(s->id), SESSION_ID_LEN);
	for (i = 0; i < SESSION_ID_LEN; i++)
		assert_non_null(strchr("0123456789abcdef", s->id[i]));
	assert_string_equal(s->version, "2025-06-18");
	/* caps and info: the session holds a reference (they never change),
	 * so they outlive the caller's */
	assert_ptr_equal(s->client_caps, caps);
	json_decref(caps);
	caps = NULL;
	assert_non_null(json_object_get(s->client_caps, "sampling"));
	assert_string_equal(
		json_string_value(json_object_get(s->client_info, "name")),
		"c");
	assert_int_equal(s->log_level, MCP_LEVEL_INFO);
	assert_false(s->closed);
	assert_int_equal(s->busy, 1); /* create hands back a busy session */
	memcpy(id, s->id, sizeof(id));
	session_release(s);
	assert_int_equal(session_table_count(t), 1);

	assert_int_equal(session_acquire(t, id, &got), STATUS_OK);
	assert_ptr_equal(got, s);
	assert_int_equal(got->busy, 1);
	/* A second acquire of the same session nests. */
	assert_int_equal(session_acquire(t, id, &s2), STATUS_OK);
	assert_int_equal(got->busy, 2);
	session_release(s2);
	session_release(got);

	/* Unknown ids, and ids differing in one character, are 404. */
	got = (struct session *)1;
	assert_int_equal(session_acquire(t, "nope", &got), STATUS_NOTFOUND);
	assert_null(got);
	id[0] = id[0] == 'a' ? 'b' : 'a';
	assert_int_equal(session_acquire(t, id, &got), STATUS_NOTFOUND);
	id[0] = s->id[0];

	assert_int_equal(session_delete(t, id), STATUS_OK);
	assert_int_equal(session_table_count(t), 0);
	assert_int_equal(session_acquire(t, id, &got), STATUS_NOTFOUND);
	assert_null(got);
	assert_int_equal(session_delete(t, id), STATUS_NOTFOUND);
	json_decref(caps);
	json_decref(info);
	session_table_free(t);
	session_table_free(NULL);
}

static void
test_distinct_ids(void **state)
{
	struct session_table *t = new_table(&limits);
	char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1];

	(void)state;
	new_session(t, a);
	new_session(t, b);
	assert_string_not_equal(a, b);
	assert_int_equal(session_table_count(t), 2);
	session_table_free(t); /* frees live sessions: LSan checks */
}

static void
test_table_full(void **state)
{
	struct session_table *t = new_table(&limits);
	char ids[4][SESSION_ID_LEN + 1];
	struct session *s = (struct session *)1;
	int i;

	(void)state;
	for (i = 0; i < limits.max_sessions; i++)
		new_session(t, ids[i]);
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_FULL);
	assert_null(s);
	assert_int_equal(session_table_count(t), limits.max_sessions);
	assert_int_equal(session_delete(t, ids[1]), STATUS_OK);
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_OK);
	session_release(s);
	assert_int_equal(session_table_count(t), limits.max_sessions);
	session_table_free(t);
}

#define CACHE_IDLE_S 5

/* A released shared session (key from n) with one stream of two events,
 * stored and finished: nothing of it is missing from the store. */
static struct session *
shared_session(struct session_table *t, int n, char *id)
{
	struct session *s = NULL;
	struct stream *st = NULL;
	char key[33];

	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_OK);
	snprintf(key, sizeof(key), "%032x", n);
	session_share(t, s, key, NULL);
	memcpy(id, s->id, SESSION_ID_LEN + 1);
	pthread_mutex_lock(&s->mu);
	assert_int_equal(stream_open(s, false, false, &st), STATUS_OK);
	send_n(st, 2);
	stream_finish(st);
	st->flushed = st->next_seq;
	st->done_stored = true;
	stream_set_durable(st, st->next_seq);
	pthread_mutex_unlock(&s->mu);
	session_release(s);
	return s;
}

/*
 * An idle copy of a shared session sheds its streams after cache_idle_s
 * and stays (it answers through an outage of the store) until the idle
 * timeout; never while anything but the table holds it, nor while a
 * stream holds what the store lacks.  Local sessions keep theirs.
 */
static void
test_shared_copy_sheds_streams(void **state)
{
	struct session_limits lim = limits;
	struct session_table *t;
	struct session *s, *local, *got = NULL;
	char id[SESSION_ID_LEN + 1], lid[SESSION_ID_LEN + 1];
	int64_t last, shed_at;

	(void)state;
	lim.cache_idle_s = CACHE_IDLE_S;
	t = new_table(&lim);
	s = shared_session(t, 1, id);
	local = new_session(t, lid);
	pthread_mutex_lock(&local->mu);
	assert_int_equal(
		stream_open(local, false, false, &(struct stream *){0}),
		STATUS_OK);
	pthread_mutex_unlock(&local->mu);
	last = s->last_active_ms > local->last_active_ms
		       ? s->last_active_ms
		       : local->last_active_ms;
	shed_at = last + CACHE_IDLE_S * 1000 + 1;

	session_table_sweep(t, last + CACHE_IDLE_S * 1000 - 1000);
	assert_non_null(s->streams);
	/* something holds it (an exchange, a store job): kept */
	session_ref(s);
	session_table_sweep(t, shed_at);
	assert_non_null(s->streams);
	session_unref(s);
	/* an event the store lacks: kept */
	pthread_mutex_lock(&s->mu);
	s->streams->durable--;
	pthread_mutex_unlock(&s->mu);
	session_table_sweep(t, shed_at);
	assert_non_null(s->streams);
	pthread_mutex_lock(&s->mu);
	s->streams->durable++;
	pthread_mutex_unlock(&s->mu);

	session_table_sweep(t, shed_at);
	assert_null(s->streams);
	assert_null(s->standalone);
	assert_non_null(local->streams);
	assert_int_equal(session_table_count(t), 2);
	got = session_find_key(t, "00000000000000000000000000000001");
	assert_ptr_equal(got, s);
	session_unref(got);
	assert_int_equal(session_acquire(t, id, &got), STATUS_OK);
	assert_false(got->closed);
	session_release(got);

	/* used just now: the idle timeout counts from here */
	last = s->last_active_ms;
	session_table_sweep(t, last + IDLE_S * 1000);
	assert_int_equal(session_acquire(t, id, &got), STATUS_OK);
	session_release(got);
	last = s->last_active_ms;
	session_table_sweep(t, last + IDLE_S * 1000 + 1);
	assert_int_equal(session_acquire(t, id, &got), STATUS_NOTFOUND);
	assert_null(session_find_key(t, "00000000000000000000000000000001"));
	session_table_free(t);
}

/*
 * A full table forgets its least recently used idle copy of a shared
 * session rather than refuse (the store keeps the session); copies in use
 * and local sessions are never forgotten.
 */
static void
test_full_table_forgets_idle_copy(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *v[4], *s = NULL, *got = NULL;
	char ids[4][SESSION_ID_LEN + 1], lid[SESSION_ID_LEN + 1];
	int i;

	(void)state;
	new_session(t, lid);
	for (i = 0; i < 3; i++) {
		v[i] = shared_session(t, i + 1, ids[i]);
		v[i]->last_active_ms -= 1000 * (10 - i); /* 0 is the oldest */
	}
	/* the oldest is in use: the next one goes */
	assert_int_equal(session_acquire(t, ids[0], &got), STATUS_OK);
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_OK);
	session_release(s);
	assert_int_equal(session_table_count(t), limits.max_sessions);
	assert_int_equal(session_acquire(t, ids[1], &s), STATUS_NOTFOUND);
	assert_int_equal(session_acquire(t, ids[2], &s), STATUS_OK);
	session_release(s);
	assert_int_equal(session_acquire(t, lid, &s), STATUS_OK);
	session_release(s);
	/* every copy left in use: full */
	assert_int_equal(session_acquire(t, ids[2], &v[3]), STATUS_OK);
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_FULL);
	assert_null(s);
	session_release(v[3]);
	session_release(got);
	session_table_free(t);
}

/* Retry-After of a full table: when the first idle session expires. */
static void
test_retry_after(void **state)
{
	struct session_limits lim = limits;
	struct session_table *t = new_table(&limits);
	struct session *s, *busy = NULL;
	char id[SESSION_ID_LEN + 1], bid[SESSION_ID_LEN + 1];
	int64_t last;

	(void)state;
	/* none idle: the idle timeout from now at the earliest, plus the
	 * sweep's second */
	assert_int_equal(session_table_retry_s(t, 0), IDLE_S + 1);
	s = new_session(t, id);
	new_session(t, bid);
	assert_int_equal(session_acquire(t, bid, &busy), STATUS_OK);
	busy->last_active_ms -= 5000; /* older, but in use */
	last = s->last_active_ms;
	session_table_sweep(t, last + 3000);
	assert_int_equal(session_table_retry_s(t, last + 3000), IDLE_S - 3 + 1);
	assert_int_equal(session_table_retry_s(t, last + 3500), IDLE_S - 3 + 1);
	/* past it (swept at the next second): at least 1 */
	assert_int_equal(session_table_retry_s(t, last + 60000), 1);
	session_release(busy);
	session_table_free(t);

	/* bounded: a client asks again after SESSION_FULL_RETRY_MAX_S */
	lim.idle_timeout_s = 86400;
	t = new_table(&lim);
	assert_int_equal(session_table_retry_s(t, 0), SESSION_FULL_RETRY_MAX_S);
	session_table_free(t);
}

/* A reference held across a delete keeps the memory, marked closed. */
static void
test_delete_with_reference(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *s = NULL, *got = NULL;
	char id[SESSION_ID_LEN + 1];

	(void)state;
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &s),
			 STATUS_OK);
	memcpy(id, s->id, sizeof(id));
	assert_int_equal(session_delete(t, id), STATUS_OK);
	assert_true(s->closed);
	assert_string_equal(s->id, id);
	assert_int_equal(session_acquire(t, id, &got), STATUS_NOTFOUND);
	session_release(s); /* the last reference: freed here (LSan) */
	session_table_free(t);
}

static void
test_idle_expiry(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *s, *got = NULL;
	char id[SESSION_ID_LEN + 1];
	int64_t last;

	(void)state;
	s = new_session(t, id);
	session_ref(s); /* to look at it after expiry */
	last = s->last_active_ms;
	/* Idle for exactly the timeout: not yet. */
	session_table_sweep(t, last + IDLE_S * 1000);
	assert_int_equal(session_table_count(t), 1);
	assert_false(s->closed);
	session_table_sweep(t, last + IDLE_S * 1000 + 1);
	assert_int_equal(session_table_count(t), 0);
	assert_true(s->closed);
	assert_int_equal(session_acquire(t, id, &got), STATUS_NOTFOUND);
	session_unref(s);
	session_table_free(t);
}

static void
test_busy_session_does_not_expire(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *got = NULL;
	char id[SESSION_ID_LEN + 1];
	int64_t far;

	(void)state;
	new_session(t, id);
	assert_int_equal(session_acquire(t, id, &got), STATUS_OK);
	far = got->last_active_ms + 1000 * 1000;
	session_table_sweep(t, far);
	assert_int_equal(session_table_count(t), 1);
	assert_false(got->closed);
	session_release(got);
	/* Released: idle from now on, so the far sweep expires it. */
	session_table_sweep(t, far);
	assert_int_equal(session_table_count(t), 0);
	session_table_free(t);
}

static void
test_attached_stream_keeps_session(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *s;
	struct stream *st = NULL;
	struct reader rd = {0};
	char id[SESSION_ID_LEN + 1];
	int64_t far;

	(void)state;
	s = new_session(t, id);
	session_ref(s);
	pthread_mutex_lock(&s->mu);
	assert_int_equal(stream_open(s, true, false, &st), STATUS_OK);
	attach(st, &rd, UINT64_MAX);
	assert_int_equal(s->live_streams, 1);
	pthread_mutex_unlock(&s->mu);
	far = s->last_active_ms + 1000 * 1000;
	session_table_sweep(t, far);
	assert_int_equal(session_table_count(t), 1);
	assert_false(s->closed);
	pthread_mutex_lock(&s->mu);
	stream_detach(st, rd.gen);
	assert_int_equal(s->live_streams, 0);
	pthread_mutex_unlock(&s->mu);
	/* Detaching counts as activity: idle from the detach on. */
	session_table_sweep(t, s->last_active_ms + IDLE_S * 1000);
	assert_int_equal(session_table_count(t), 1);
	session_table_sweep(t, s->last_active_ms + IDLE_S * 1000 + 1);
	assert_int_equal(session_table_count(t), 0);
	session_unref(s);
	session_table_free(t);
}

static void
count_session(struct session *s, void *arg)
{
	assert_false(s->closed);
	(*(int *)arg)++;
}

static void
test_foreach_and_close_all(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *s;
	struct stream *st = NULL;
	struct reader rd = {0};
	char id[SESSION_ID_LEN + 1];
	int n = 0;

	(void)state;
	new_session(t, id);
	new_session(t, id);
	s = new_session(t, id);
	session_table_foreach(t, count_session, &n);
	assert_int_equal(n, 3);
	session_ref(s);
	pthread_mutex_lock(&s->mu);
	assert_int_equal(stream_open(s, false, false, &st), STATUS_OK);
	attach(st, &rd, UINT64_MAX);
	pthread_mutex_unlock(&s->mu);
	session_table_close_all(t);
	assert_int_equal(session_table_count(t), 0);
	assert_true(s->closed);
	assert_true(rd.wakes >= 1); /* the reader was told */
	pthread_mutex_lock(&s->mu);
	{
		char out[64];

		assert_int_equal(drain(st, &rd, 64, out, sizeof(out)),
				 STREAM_END);
	}
	stream_detach(st, rd.gen);
	pthread_mutex_unlock(&s->mu);
	session_unref(s);
	session_table_free(t);
}

/* ---- streams ---------------------------------------------------------- */

struct fixture {
	struct session_table *t;
	struct session *s; /* a reference */
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char id[SESSION_ID_LEN + 1];

	if (f == NULL || session_table_new(&limits, &f->t) != STATUS_OK)
		return -1;
	f->s = new_session(f->t, id);
	session_ref(f->s);
	pthread_mutex_lock(&f->s->mu);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	pthread_mutex_unlock(&f->s->mu);
	session_unref(f->s);
	session_table_free(f->t);
	free(f);
	return 0;
}

static void
test_priming_event(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[128], out[512];

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	assert_int_equal(strlen(st->id), STREAM_ID_LEN);
	assert_ptr_equal(st->sess, f->s);
	assert_false(st->standalone);
	assert_int_equal(st->next_seq, 1);
	attach(st, &rd, UINT64_MAX);
	snprintf(want, sizeof(want), "id: %s-0\nretry: %d\ndata: \n\n", st->id,
		 RETRY_MS);
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	stream_detach(st, rd.gen);
}

static void
test_no_priming(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[128], out[512];

	assert_int_equal(stream_open(f->s, true, false, &st), STATUS_OK);
	assert_true(st->standalone);
	assert_int_equal(st->next_seq, 0);
	attach(st, &rd, UINT64_MAX);
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, "");
	send_n(st, 1);
	event_text(want, sizeof(want), st, 0, "{\"jsonrpc\":\"2.0\",\"n\":0}");
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	stream_detach(st, rd.gen);
}

static void
test_send_wake_read_finish(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[256], out[1024];
	const char *text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	/* Sending before anyone reads wakes nobody. */
	send_n(st, 1);
	assert_int_equal(rd.wakes, 0);
	attach(st, &rd, 0); /* after the priming event */
	assert_int_equal(rd.wakes, 0);
	event_text(want, sizeof(want), st, 1, "{\"jsonrpc\":\"2.0\",\"n\":1}");
	/* Small reads across the event boundary. */
	assert_int_equal(drain(st, &rd, 7, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	assert_int_equal(stream_send_text(st, text, strlen(text)), STATUS_OK);
	assert_int_equal(rd.wakes, 1);
	event_text(want, sizeof(want), st, 2, text);
	assert_int_equal(drain(st, &rd, 3, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	/* finish wakes the reader, which ends once drained. */
	send_n(st, 1);
	assert_int_equal(rd.wakes, 2);
	stream_finish(st);
	assert_int_equal(rd.wakes, 3);
	event_text(want, sizeof(want), st, 3, "{\"jsonrpc\":\"2.0\",\"n\":3}");
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_END);
	assert_string_equal(out, want);
	/* END is sticky for this reader. */
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_END);
	stream_detach(st, rd.gen);
	assert_int_equal(f->s->live_streams, 0);
}

/* An event split by a partial read resumes at the right byte. */
static void
test_partial_read_offsets(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[512], out[1024], ev[256];
	size_t wlen = 0, step;

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	send_n(st, 3);
	stream_finish(st);
	snprintf(want, sizeof(want), "id: %s-0\nretry: %d\ndata: \n\n", st->id,
		 RETRY_MS);
	wlen = strlen(want);
	for (unsigned i = 1; i <= 3; i++) {
		char data[64];

		snprintf(data, sizeof(data), "{\"jsonrpc\":\"2.0\",\"n\":%u}",
			 i);
		event_text(ev, sizeof(ev), st, i, data);
		memcpy(want + wlen, ev, strlen(ev) + 1);
		wlen += strlen(ev);
	}
	for (step = 1; step < 64; step += 5) {
		/* A fresh reader each time, rewound to the first event (its
		 * cursor is the reader's own state). */
		attach(st, &rd, UINT64_MAX);
		rd.cur.seq = 0;
		rd.cur.off = 0;
		assert_int_equal(drain(st, &rd, step, out, sizeof(out)),
				 STREAM_END);
		assert_string_equal(out, want);
	}
	stream_detach(st, rd.gen);
}

static void
test_drop_connection(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader a = {0}, b = {0};
	char want[256], out[1024];

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	/* Without a reader, a drop is a no-op (nothing to end). */
	stream_drop_connection(st);
	assert_false(st->drop);
	attach(st, &a, UINT64_MAX);
	assert_int_equal(drain(st, &a, 256, out, sizeof(out)), STREAM_WAIT);
	stream_drop_connection(st);
	assert_int_equal(a.wakes, 1);
	/* Data already queued goes out before the end. */
	send_n(st, 1);
	event_text(want, sizeof(want), st, 1, "{\"jsonrpc\":\"2.0\",\"n\":1}");
	assert_int_equal(drain(st, &a, 256, out, sizeof(out)), STREAM_END);
	assert_string_equal(out, want);
	stream_detach(st, a.gen);
	/* The stream lives on: the next event is stored for resumption, and
	 * a new reader (Last-Event-ID <id>-1) gets it and is not ended. */
	send_n(st, 1);
	attach(st, &b, 1);
	event_text(want, sizeof(want), st, 2, "{\"jsonrpc\":\"2.0\",\"n\":2}");
	assert_int_equal(drain(st, &b, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	assert_int_equal(b.wakes, 0);
	stream_detach(st, b.gen);
}

static void
test_replace_reader(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader a = {0}, b = {0};
	char want[256], out[1024];

	assert_int_equal(stream_open(f->s, true, false, &st), STATUS_OK);
	attach(st, &a, UINT64_MAX);
	assert_int_equal(f->s->live_streams, 1);
	attach(st, &b, UINT64_MAX);
	assert_int_equal(a.wakes, 1); /* the old reader is told to go */
	assert_int_equal(f->s->live_streams, 1);
	assert_int_not_equal(a.gen, b.gen);
	send_n(st, 1);
	assert_int_equal(a.wakes, 1); /* new events wake only the new one */
	assert_int_equal(b.wakes, 1);
	assert_int_equal(drain(st, &a, 256, out, sizeof(out)), STREAM_END);
	assert_string_equal(out, "");
	event_text(want, sizeof(want), st, 0, "{\"jsonrpc\":\"2.0\",\"n\":0}");
	assert_int_equal(drain(st, &b, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	/* The old reader's detach does not detach the new one. */
	stream_detach(st, a.gen);
	assert_true(st->attached);
	assert_int_equal(f->s->live_streams, 1);
	stream_detach(st, b.gen);
	assert_false(st->attached);
	assert_int_equal(f->s->live_streams, 0);
	/* A second detach is harmless. */
	stream_detach(st, b.gen);
	assert_int_equal(f->s->live_streams, 0);
}

/* Last-Event-ID <stream>-k: only events after k, on that stream. */
static void
test_resume_after_seq(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[1024], out[2048], ev[256];
	size_t wlen = 0;
	uint64_t k;

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	send_n(st, 5); /* seqs 1..5 after the priming event 0 */
	for (k = 0; k <= 5; k++) {
		unsigned i;

		wlen = 0;
		want[0] = '\0';
		for (i = (unsigned)k + 1; i <= 5; i++) {
			char data[64];

			snprintf(data, sizeof(data),
				 "{\"jsonrpc\":\"2.0\",\"n\":%u}", i);
			event_text(ev, sizeof(ev), st, i, data);
			memcpy(want + wlen, ev, strlen(ev) + 1);
			wlen += strlen(ev);
		}
		attach(st, &rd, k);
		assert_int_equal(drain(st, &rd, 50, out, sizeof(out)),
				 STREAM_WAIT);
		if (strcmp(out, want) != 0)
			fail_msg("after %llu: got \"%s\"",
				 (unsigned long long)k, out);
	}
	stream_detach(st, rd.gen);
}

/* Without Last-Event-ID: the first reader gets everything kept, a later
 * reader only what no reader has been sent yet. */
static void
test_attach_without_last_event_id(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader a = {0}, b = {0};
	char want[256], out[1024];

	assert_int_equal(stream_open(f->s, true, false, &st), STATUS_OK);
	send_n(st, 2);
	attach(st, &a, UINT64_MAX);
	assert_int_equal(drain(st, &a, 256, out, sizeof(out)), STREAM_WAIT);
	assert_non_null(strstr(out, "-0\n"));
	assert_non_null(strstr(out, "-1\n"));
	stream_detach(st, a.gen);
	send_n(st, 1);
	attach(st, &b, UINT64_MAX);
	event_text(want, sizeof(want), st, 2, "{\"jsonrpc\":\"2.0\",\"n\":2}");
	assert_int_equal(drain(st, &b, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	stream_detach(st, b.gen);
}

/* Resuming from an event the replay log no longer holds starts at the
 * oldest kept one (the reader lost events; a warning is logged). */
static void
test_resume_after_eviction(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[256], out[4096];

	assert_int_equal(stream_open(f->s, false, true, &st), STATUS_OK);
	send_n(st, 20); /* 0..20; the log keeps 8: 13..20 */
	attach(st, &rd, 2);
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	event_text(want, sizeof(want), st, 13,
		   "{\"jsonrpc\":\"2.0\",\"n\":13}");
	assert_memory_equal(out, want, strlen(want));
	event_text(want, sizeof(want), st, 12,
		   "{\"jsonrpc\":\"2.0\",\"n\":12}");
	assert_null(strstr(out, want));
	event_text(want, sizeof(want), st, 20,
		   "{\"jsonrpc\":\"2.0\",\"n\":20}");
	assert_non_null(strstr(out, want));
	stream_detach(st, rd.gen);
}

static void
test_stream_find(void **state)
{
	struct fixture *f = *state;
	struct stream *a = NULL, *b = NULL, *other = NULL;
	struct session *s2;
	char id[SESSION_ID_LEN + 1], lei[64];

	assert_int_equal(stream_open(f->s, false, true, &a), STATUS_OK);
	assert_int_equal(stream_open(f->s, true, false, &b), STATUS_OK);
	assert_string_not_equal(a->id, b->id);
	assert_ptr_equal(stream_find(f->s, a->id, strlen(a->id)), a);
	assert_ptr_equal(stream_find(f->s, b->id, strlen(b->id)), b);
	/* A Last-Event-ID is "<stream>-<seq>": the prefix finds it. */
	snprintf(lei, sizeof(lei), "%s-17", a->id);
	assert_ptr_equal(stream_find(f->s, lei, strlen(a->id)), a);
	/* A shorter or longer prefix finds nothing. */
	assert_null(stream_find(f->s, a->id, strlen(a->id) - 1));
	assert_null(stream_find(f->s, lei, strlen(a->id) + 1));
	assert_null(stream_find(f->s, "", 0));
	assert_null(stream_find(f->s, "zzzzzzzzzzzz", STREAM_ID_LEN));
	/* Scoped by session: another session's stream is not found. */
	s2 = new_session(f->t, id);
	pthread_mutex_lock(&s2->mu);
	assert_int_equal(stream_open(s2, false, false, &other), STATUS_OK);
	pthread_mutex_unlock(&s2->mu);
	assert_null(stream_find(f->s, other->id, strlen(other->id)));
	assert_ptr_equal(stream_find(s2, other->id, strlen(other->id)), other);
}

static int
stream_count(struct session *s)
{
	struct stream *st;
	int n = 0;

	for (st = s->streams; st != NULL; st = st->next)
		n++;
	return n;
}

/* SESSION_MAX_KEPT_STREAMS bounds the streams kept: finished ones go
 * first, then the oldest without a reader. */
static void
test_kept_stream_bound(void **state)
{
	struct fixture *f = *state;
	struct stream *v[SESSION_MAX_KEPT_STREAMS], *st = NULL;
	char ids[SESSION_MAX_KEPT_STREAMS][STREAM_ID_LEN + 1];
	int i;

	for (i = 0; i < SESSION_MAX_KEPT_STREAMS; i++) {
		assert_int_equal(stream_open(f->s, false, false, &v[i]),
				 STATUS_OK);
		memcpy(ids[i], v[i]->id, sizeof(ids[i]));
	}
	assert_int_equal(stream_count(f->s), SESSION_MAX_KEPT_STREAMS);
	/* Finish #10 and #20: the oldest finished (#10) goes first. */
	stream_finish(v[20]);
	stream_finish(v[10]);
	assert_int_equal(stream_open(f->s, false, false, &st), STATUS_OK);
	assert_int_equal(stream_count(f->s), SESSION_MAX_KEPT_STREAMS);
	assert_null(stream_find(f->s, ids[10], STREAM_ID_LEN));
	assert_ptr_equal(stream_find(f->s, ids[0], STREAM_ID_LEN), v[0]);
	assert_ptr_equal(stream_find(f->s, ids[20], STREAM_ID_LEN), v[20]);
	assert_int_equal(stream_open(f->s, false, false, &st), STATUS_OK);
	assert_null(stream_find(f->s, ids[20], STREAM_ID_LEN));
	assert_ptr_equal(stream_find(f->s, ids[0], STREAM_ID_LEN), v[0]);
	/* No finished stream left: a POST stream still answering is never
	 * dropped (its exchange points to it), so the table is full. */
	st = (struct stream *)1;
	assert_int_equal(stream_open(f->s, false, false, &st), STATUS_FULL);
	assert_null(st);
	assert_ptr_equal(stream_find(f->s, ids[0], STREAM_ID_LEN), v[0]);
	assert_ptr_equal(stream_find(f->s, ids[1], STREAM_ID_LEN), v[1]);
	assert_int_equal(stream_count(f->s), SESSION_MAX_KEPT_STREAMS);
}

/* Evicting the standalone stream clears s->standalone. */
static void
test_evicted_standalone_is_forgotten(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	int i;

	assert_int_equal(stream_open(f->s, true, false, &f->s->standalone),
			 STATUS_OK);
	stream_finish(f->s->standalone);
	for (i = 1; i < SESSION_MAX_KEPT_STREAMS; i++)
		assert_int_equal(stream_open(f->s, false, false, &st),
				 STATUS_OK);
	assert_non_null(f->s->standalone);
	assert_int_equal(stream_open(f->s, false, false, &st), STATUS_OK);
	assert_null(f->s->standalone);
}

/* When every kept stream has a reader, no stream is dropped: FULL. */
static void
test_kept_streams_all_attached(void **state)
{
	struct session_limits lim = limits;
	struct session_table *t;
	struct session *s;
	struct stream *v[SESSION_MAX_KEPT_STREAMS], *st = (struct stream *)1;
	struct reader rd[SESSION_MAX_KEPT_STREAMS];
	char id[SESSION_ID_LEN + 1], id5[STREAM_ID_LEN + 1];
	int i;

	(void)state;
	lim.max_streams = SESSION_MAX_KEPT_STREAMS + 1;
	t = new_table(&lim);
	s = new_session(t, id);
	session_ref(s);
	memset(rd, 0, sizeof(rd));
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < SESSION_MAX_KEPT_STREAMS; i++) {
		assert_int_equal(stream_open(s, false, false, &v[i]),
				 STATUS_OK);
		attach(v[i], &rd[i], UINT64_MAX);
	}
	assert_int_equal(stream_open(s, false, false, &st), STATUS_FULL);
	assert_null(st);
	assert_int_equal(stream_count(s), SESSION_MAX_KEPT_STREAMS);
	memcpy(id5, v[5]->id, sizeof(id5));
	stream_detach(v[5], rd[5].gen);
	/* Detached but unfinished: still not evictable. */
	assert_int_equal(stream_open(s, false, false, &st), STATUS_FULL);
	stream_finish(v[5]);
	/* Now the one finished stream without a reader is the one that
	 * goes. */
	assert_int_equal(stream_open(s, false, false, &st), STATUS_OK);
	assert_null(stream_find(s, id5, STREAM_ID_LEN));
	assert_ptr_equal(stream_find(s, v[0]->id, STREAM_ID_LEN), v[0]);
	assert_int_equal(stream_count(s), SESSION_MAX_KEPT_STREAMS);
	for (i = 0; i < SESSION_MAX_KEPT_STREAMS; i++)
		if (i != 5)
			stream_detach(v[i], rd[i].gen);
	pthread_mutex_unlock(&s->mu);
	session_unref(s);
	session_table_free(t);
}

static void
test_live_stream_limit(void **state)
{
	struct fixture *f = *state;
	struct stream *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	struct reader ra = {0}, rb = {0}, rc = {0}, rb2 = {0}, rd = {0};

	/* GET resumptions (after_seq given) count against the cap */
	assert_int_equal(stream_open(f->s, false, false, &a), STATUS_OK);
	assert_int_equal(stream_open(f->s, false, false, &b), STATUS_OK);
	assert_int_equal(stream_open(f->s, false, false, &c), STATUS_OK);
	assert_int_equal(stream_open(f->s, false, false, &d), STATUS_OK);
	attach(a, &ra, 0);
	attach(b, &rb, 0);
	assert_int_equal(f->s->live_streams, limits.max_streams);
	assert_int_equal(stream_attach(c, count_wake, &rc, 0, &rc.gen, &rc.cur),
			 STATUS_FULL);
	assert_false(c->attached);
	/* Replacing the reader of an attached stream is no new stream. */
	attach(b, &rb2, 0);
	assert_int_equal(f->s->live_streams, limits.max_streams);
	stream_detach(a, ra.gen);
	attach(c, &rc, 0);
	assert_int_equal(f->s->live_streams, limits.max_streams);
	/* a POST's own response (a new stream read from its start) is
	 * bounded by the connections, not by the cap */
	attach(d, &rd, UINT64_MAX);
	assert_int_equal(f->s->live_streams, limits.max_streams + 1);
	stream_detach(d, rd.gen);
	stream_detach(b, rb2.gen);
	stream_detach(c, rc.gen);
	assert_int_equal(f->s->live_streams, 0);
}

static void
test_keepalive(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL, *idle = NULL;
	struct reader rd = {0};
	char out[256], small[8];
	size_t n;
	int64_t due;

	assert_int_equal(stream_open(f->s, true, false, &st), STATUS_OK);
	assert_int_equal(stream_open(f->s, false, false, &idle), STATUS_OK);
	attach(st, &rd, UINT64_MAX);
	due = st->last_write_ms + KEEPALIVE_S * 1000;
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, due - 1);
	pthread_mutex_lock(&f->s->mu);
	assert_false(st->keepalive);
	assert_int_equal(rd.wakes, 0);
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, due);
	pthread_mutex_lock(&f->s->mu);
	assert_true(st->keepalive);
	assert_false(idle->keepalive); /* no reader: nothing to keep alive */
	assert_int_equal(rd.wakes, 1);
	/* Already due: later ticks do not wake the reader again. */
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, due + 5000);
	pthread_mutex_lock(&f->s->mu);
	assert_int_equal(rd.wakes, 1);
	/* Too small a buffer for the comment: nothing, still due. */
	assert_int_equal(
		stream_read(st, rd.gen, &rd.cur, small, sizeof(small), &n),
		STREAM_WAIT);
	assert_int_equal(n, 0);
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, ": keepalive\n\n");
	assert_false(st->keepalive);
	/* The period restarts at the write. */
	due = st->last_write_ms + KEEPALIVE_S * 1000;
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, due - 1);
	pthread_mutex_lock(&f->s->mu);
	assert_false(st->keepalive);
	assert_int_equal(rd.wakes, 1);
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, due);
	pthread_mutex_lock(&f->s->mu);
	assert_true(st->keepalive);
	assert_int_equal(rd.wakes, 2);
	/* The session itself has a reader, so it did not expire. */
	assert_false(f->s->closed);
	stream_detach(st, rd.gen);
}

/* Events sent while a keep-alive is due go out instead of the comment. */
static void
test_keepalive_yields_to_data(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char want[256], out[256];

	assert_int_equal(stream_open(f->s, true, false, &st), STATUS_OK);
	attach(st, &rd, UINT64_MAX);
	pthread_mutex_unlock(&f->s->mu);
	session_table_sweep(f->t, st->last_write_ms + KEEPALIVE_S * 1000);
	pthread_mutex_lock(&f->s->mu);
	assert_true(st->keepalive);
	send_n(st, 1);
	event_text(want, sizeof(want), st, 0, "{\"jsonrpc\":\"2.0\",\"n\":0}");
	assert_int_equal(drain(st, &rd, 256, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, want);
	assert_false(st->keepalive);
	stream_detach(st, rd.gen);
}

/*
 * A shared session's stream shows only what is stored (durable): nothing
 * before, what is stored once it is, and when another replica took the
 * stream over (lost) the reader ends at the last stored event instead of
 * showing what never was stored.
 */
static void
test_gated_stream(void **state)
{
	struct fixture *f = *state;
	struct stream *st = NULL;
	struct reader rd = {0};
	char out[256];

	session_share(f->t, f->s, "0123456789abcdef0123456789abcdef", NULL);
	assert_int_equal(stream_open(f->s, false, false, &st), STATUS_OK);
	assert_true(st->gated);
	assert_int_equal(stream_send_text(st, "{\"a\":1}", 7), STATUS_OK);
	assert_int_equal(stream_send_text(st, "{\"b\":2}", 7), STATUS_OK);
	attach(st, &rd, UINT64_MAX);
	assert_int_equal(drain(st, &rd, 64, out, sizeof(out)), STREAM_WAIT);
	assert_string_equal(out, "");
	stream_set_durable(st, 1);
	assert_int_equal(rd.wakes, 1);
	assert_int_equal(drain(st, &rd, 64, out, sizeof(out)), STREAM_WAIT);
	assert_non_null(strstr(out, "{\"a\":1}"));
	assert_null(strstr(out, "{\"b\":2}"));
	/* a drop waits until what was sent before it is stored */
	stream_drop_connection(st);
	assert_int_equal(drain(st, &rd, 64, out, sizeof(out)), STREAM_WAIT);
	st->drop = false;
	st->lost = true;
	assert_int_equal(drain(st, &rd, 64, out, sizeof(out)), STREAM_END);
	assert_string_equal(out, "");
	stream_detach(st, rd.gen);
}

struct adopter {
	struct session_table *t;
	struct session *got;
	int rc;
};

static void *
adopt_thread(void *arg)
{
	struct adopter *a = arg;

	a->rc = session_adopt(a->t, "aaaabbbbccccddddeeeeffff00001111",
			      "0123456789abcdef0123456789abcdef", NULL,
			      "2025-11-25", NULL, NULL, MCP_LEVEL_INFO, NULL, 1,
			      NULL, &a->got);
	return NULL;
}

/* Two loads of one shared session at once leave one copy. */
static void
test_adopt_race(void **state)
{
	(void)state;
	for (int round = 0; round < 200; round++) {
		struct session_table *t = new_table(&limits);
		struct adopter a[2] = {{.t = t}, {.t = t}};
		pthread_t th[2];

		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&th[i], NULL,
							adopt_thread, &a[i]),
					 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(a[0].rc, STATUS_OK);
		assert_int_equal(a[1].rc, STATUS_OK);
		assert_ptr_equal(a[0].got, a[1].got);
		assert_true(a[0].got->shared);
		assert_int_equal(session_table_count(t), 1);
		session_release(a[0].got);
		session_release(a[1].got);
		session_table_free(t);
	}
}

/*
 * Shared sessions are found by store key: shared at creation or adopted,
 * gone once forgotten, deleted or expired; unshared ones never.
 */
static void
test_find_key(void **state)
{
	struct session_table *t = new_table(&limits);
	struct session *a = NULL, *b = NULL, *c = NULL, *got;
	const char *ka = "0123456789abcdef0123456789abcdef";
	const char *kb = "fedcba9876543210fedcba9876543210";
	char id[SESSION_ID_LEN + 1];

	(void)state;
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &a),
			 STATUS_OK);
	assert_null(session_find_key(t, ka));
	session_share(t, a, ka, NULL);
	got = session_find_key(t, ka);
	assert_ptr_equal(got, a);
	session_unref(got);
	assert_int_equal(session_adopt(t, "aaaabbbbccccddddeeeeffff00001111",
				       kb, NULL, "2025-11-25", NULL, NULL,
				       MCP_LEVEL_INFO, NULL, 1, NULL, &b),
			 STATUS_OK);
	got = session_find_key(t, kb);
	assert_ptr_equal(got, b);
	session_unref(got);
	/* an unshared session is not in the key index */
	assert_int_equal(session_create(t, "2025-11-25", NULL, NULL, &c),
			 STATUS_OK);
	assert_null(session_find_key(t, "00000000000000000000000000000000"));
	memcpy(id, a->id, sizeof(id));
	session_release(a);
	assert_int_equal(session_delete(t, id), STATUS_OK);
	assert_null(session_find_key(t, ka));
	got = session_find_key(t, kb);
	assert_ptr_equal(got, b);
	session_unref(got);
	session_forget(t, b);
	assert_null(session_find_key(t, kb));
	session_release(b);
	session_release(c);
	assert_int_equal(session_table_count(t), 1);
	session_table_free(t);
}

/* Many shared sessions: each is found by its key, and only by it. */
static void
test_find_key_many(void **state)
{
	struct session_limits lim = limits;
	struct session_table *t;
	struct session *s[64];
	char key[64][33];

	(void)state;
	lim.max_sessions = 64;
	t = new_table(&lim);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(
			session_create(t, "2025-11-25", NULL, NULL, &s[i]),
			STATUS_OK);
		snprintf(key[i], sizeof(key[i]), "%032x", i * 7919);
		session_share(t, s[i], key[i], NULL);
	}
	for (int i = 0; i < 64; i++) {
		struct session *got = session_find_key(t, key[i]);

		assert_ptr_equal(got, s[i]);
		session_unref(got);
	}
	for (int i = 0; i < 64; i += 2)
		session_forget(t, s[i]);
	for (int i = 0; i < 64; i++) {
		struct session *got = session_find_key(t, key[i]);

		if (i % 2 == 0) {
			assert_null(got);
		} else {
			assert_ptr_equal(got, s[i]);
			session_unref(got);
		}
		session_release(s[i]);
	}
	session_table_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_create_acquire_delete),
		cmocka_unit_test(test_adopt_race),
		cmocka_unit_test(test_find_key),
		cmocka_unit_test(test_find_key_many),
		cmocka_unit_test(test_distinct_ids),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_shared_copy_sheds_streams),
		cmocka_unit_test(test_full_table_forgets_idle_copy),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_delete_with_reference),
		cmocka_unit_test(test_idle_expiry),
		cmocka_unit_test(test_busy_session_does_not_expire),
		cmocka_unit_test(test_attached_stream_keeps_session),
		cmocka_unit_test(test_foreach_and_close_all),
		cmocka_unit_test(test_kept_streams_all_attached),
		cmocka_unit_test_setup_teardown(test_priming_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_priming, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_wake_read_finish,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_read_offsets,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replace_reader, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_resume_after_seq, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_attach_without_last_event_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_after_eviction,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_find, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kept_stream_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_evicted_standalone_is_forgotten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gated_stream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_live_stream_limit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_keepalive, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_keepalive_yields_to_data,
						setup, teardown),
	};

	log_set_level(
		LOG_LEVEL_ERROR); /* the gap test logs a warning on purpose */
	return cmocka_run_group_tests(tests, NULL, NULL);
}

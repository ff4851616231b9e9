/*
 * session.c - the session table, sessions and their SSE streams.
 *
 * Locking is described in session.h: the table mutex guards the hash
 * chains and the count; each session's mutex guards the rest of it.  The
 * table lock is never taken while a session lock is held.
 */
#include "mcp/session.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "json/jsondump.h"
#include "mcp/call.h"

struct session_table {
	struct session_limits lim;
	pthread_mutex_t mu;
	struct session **buckets;  /* by id (hnext) */
	struct session **kbuckets; /* shared sessions by store key (knext) */
	size_t nbuckets;	   /* of each; a power of two */
	int count;
	int nshared; /* of count: copies of shared sessions */
	/* when the first idle session expires, unless used (as of the last
	 * sweep; 0: none idle) */
	int64_t next_expiry_ms;
};

static size_t
hash_id(const char *id)
{
	size_t h = 14695981039346656037u;

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211u;
	return h;
}

int
session_table_new(const struct session_limits *lim, struct session_table **out)
{
	struct session_table *t;
	size_t n = 64;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return STATUS_NOMEM;
	t->lim = *lim;
	while (n < (size_t)lim->max_sessions / 2 && n < 65536)
		n *= 2;
	t->buckets = calloc(n, sizeof(*t->buckets));
	t->kbuckets = calloc(n, sizeof(*t->kbuckets));
	if (t->buckets == NULL || t->kbuckets == NULL) {
		free(t->buckets);
		free(t->kbuckets);
		free(t);
		return STATUS_NOMEM;
	}
	t->nbuckets = n;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return STATUS_OK;
}

static void
stream_free(struct stream *st)
{
	sse_log_free(st->log);
	json_decref(st->requests);
	free(st);
}

static void
session_free(struct session *s)
{
	struct stream *st, *next;
	struct pending *p, *pnext;

	for (st = s->streams; st != NULL; st = next) {
		next = st->next;
		stream_free(st);
	}
	for (p = s->pending; p != NULL; p = pnext) {
		pnext = p->next;
		json_decref(p->result);
		json_decref(p->error);
		free(p);
	}
	json_decref(s->client_caps);
	json_decref(s->client_info);
	json_decref(s->subscriptions);
	json_decref(s->listen);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void
session_ref(struct session *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void
session_unref(struct session *s)
{
	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1)
		session_free(s);
}

/* Closes s (s->mu held): no new work, readers end, calls are cancelled. */
static void
session_close_locked(struct session *s)
{
	struct stream *st;
	struct call *c;

	if (s->closed)
		return;
	s->closed = true;
	for (st = s->streams; st != NULL; st = st->next)
		if (st->attached && st->wake != NULL)
			st->wake(st->wake_arg);
	for (c = s->calls; c != NULL; c = call_next_locked(c))
		call_cancel_locked(c);
}

void
session_table_free(struct session_table *t)
{
	if (t == NULL)
		return;
	session_table_close_all(t);
	pthread_mutex_destroy(&t->mu);
	free(t->buckets);
	free(t->kbuckets);
	free(t);
}

int
session_table_count(struct session_table *t)
{
	int n;

	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Puts shared s into the key index (table lock held, s in the table). */
static void
table_index_key(struct session_table *t, struct session *s)
{
	size_t b = hash_id(s->key) & (t->nbuckets - 1);

	s->knext = t->kbuckets[b];
	t->kbuckets[b] = s;
	t->nshared++;
}

/* The session with this id, or NULL (table lock held). */
static struct session *
table_find(struct session_table *t, const char *id)
{
	struct session *s;

	for (s = t->buckets[hash_id(id) & (t->nbuckets - 1)]; s != NULL;
	     s = s->hnext)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static bool session_idle_locked(const struct session *s);
static bool table_unlink(struct session_table *t, struct session *s);

/*
 * A full table holding copies of shared sessions makes room by forgetting
 * the least recently used idle one (the store keeps the session): copies
 * never refuse a session.  Table lock held.  Returns the copy, unlinked and
 * closed, whose table reference the caller drops once the lock is
 * released; NULL when there is none to forget.  A scan, but only of a full
 * table.
 */
static struct session *
table_make_room(struct session_table *t)
{
	struct session *s, *victim = NULL;
	int64_t oldest = INT64_MAX;
	size_t b;

	if (t->nshared == 0)
		return NULL;
	for (b = 0; b < t->nbuckets; b++)
		for (s = t->kbuckets[b]; s != NULL; s = s->knext) {
			/* the table's reference alone: nobody is using it,
			 * and nobody can start to while we hold the table */
			if (atomic_load(&s->refs) != 1)
				continue;
			pthread_mutex_lock(&s->mu);
			if (session_idle_locked(s) &&
			    s->last_active_ms < oldest) {
				oldest = s->last_active_ms;
				victim = s;
			}
			pthread_mutex_unlock(&s->mu);
		}
	if (victim == NULL)
		return NULL;
	table_unlink(t, victim);
	pthread_mutex_lock(&victim->mu);
	session_close_locked(victim);
	pthread_mutex_unlock(&victim->mu);
	return victim;
}

/* src cut to fit size (> 0) bytes with its NUL: snprintf("%s") without
 * the format parsing, which shows on the per-request path. */
static void
copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* A session with id (NULL: a random one) added to t; see session_create. */
static int
create(struct session_table *t, const char *id, const char *version,
       const json_t *caps, const json_t *info,
       void (*init)(struct session *s, void *arg), void *arg,
       struct session **out)
{
	struct session *s, *room = NULL;
	size_t b;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return STATUS_NOMEM;
	if (id != NULL) {
		copy_cut(s->id, sizeof(s->id), id);
	} else if (auth_random_hex(s->id, sizeof(s->id), SESSION_ID_LEN / 2) !=
		   STATUS_OK) {
		free(s);
		return STATUS_IO;
	}
	copy_cut(s->version, sizeof(s->version), version);
	/* shared, not copied: nobody changes them (jansson's reference
	 * counts are atomic), and a copy per 2026-07-28 request costs */
	s->client_caps =
		caps != NULL ? json_incref((json_t *)caps) : json_object();
	s->client_info =
		info != NULL ? json_incref((json_t *)info) : json_object();
	s->subscriptions = json_object();
	pthread_mutex_init(&s->mu, NULL);
	s->lim = t->lim;
	s->log_level = MCP_LEVEL_INFO;
	s->created_ms = s->last_active_ms = clock_mono_ms();
	atomic_init(&s->refs, 2); /* the table's and the caller's */
	s->busy = 1;
	if (s->client_caps == NULL || s->client_info == NULL ||
	    s->subscriptions == NULL) {
		session_free(s);
		return STATUS_NOMEM;
	}
	if (init != NULL) /* before anyone can find it */
		init(s, arg);
	pthread_mutex_lock(&t->mu);
	/* an id given twice at once (two loads of one shared session): one
	 * copy only, or answers and cancels could reach the other */
	if (id != NULL && table_find(t, id) != NULL) {
		pthread_mutex_unlock(&t->mu);
		session_free(s);
		return STATUS_EXISTS;
	}
	if (t->count >= t->lim.max_sessions &&
	    (room = table_make_room(t)) == NULL) {
		pthread_mutex_unlock(&t->mu);
		session_free(s);
		return STATUS_FULL;
	}
	b = hash_id(s->id) & (t->nbuckets - 1);
	s->hnext = t->buckets[b];
	t->buckets[b] = s;
	if (s->shared) /* adopted: init shared it */
		table_index_key(t, s);
	t->count++;
	pthread_mutex_unlock(&t->mu);
	session_unref(room); /* the table's reference */
	*out = s;
	return STATUS_OK;
}

int
session_create(struct session_table *t, const char *version, const json_t *caps,
	       const json_t *info, struct session **out)
{
	return create(t, NULL, version, caps, info, NULL, NULL, out);
}

int
session_create_request(struct session_table *t, const char *version,
		       const json_t *caps, const json_t *info, int log_level,
		       struct session **out)
{
	static atomic_ullong next;
	char digits[24], id[SESSION_ID_LEN + 1];
	unsigned long long n = atomic_fetch_add(&next, 1) + 1;
	size_t d = sizeof(digits);
	int rc;

	/* never on the wire, never looked up by a client: a counter will
	 * do, and spares the CSPRNG on the hot path ("r<n>", written by
	 * hand for the same reason as copy_cut) */
	do {
		digits[--d] = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	id[0] = 'r';
	memcpy(id + 1, digits + d, sizeof(digits) - d);
	id[1 + sizeof(digits) - d] = '\0';
	rc = create(t, id, version, caps, info, NULL, NULL, out);
	if (rc == STATUS_OK) {
		(*out)->stateless = true;
		(*out)->initialized = true;
		(*out)->log_level = log_level;
	}
	return rc;
}

static void
share(struct session *s, const char *key, struct sessstore *store)
{
	s->shared = true;
	copy_cut(s->key, sizeof(s->key), key);
	s->store = store;
	s->rev = 1;
}

void
session_share(struct session_table *t, struct session *s, const char *key,
	      struct sessstore *store)
{
	pthread_mutex_lock(&t->mu);
	share(s, key, store);
	if (table_find(t, s->id) == s)
		table_index_key(t, s);
	pthread_mutex_unlock(&t->mu);
}

struct session *
session_find_key(struct session_table *t, const char *key)
{
	struct session *s;

	pthread_mutex_lock(&t->mu);
	for (s = t->kbuckets[hash_id(key) & (t->nbuckets - 1)]; s != NULL;
	     s = s->knext)
		if (strcmp(s->key, key) == 0) {
			session_ref(s);
			break;
		}
	pthread_mutex_unlock(&t->mu);
	return s;
}

struct adopt {
	const char *key;
	const char *owner;
	struct sessstore *store;
	int log_level;
	json_t *subs; /* taken */
	int64_t rev;
};

static void
adopt_init(struct session *s, void *arg)
{
	struct adopt *a = arg;

	share(s, a->key, a->store);
	snprintf(s->owner, sizeof(s->owner), "%s", a->owner);
	s->log_level = a->log_level;
	s->rev = a->rev;
	json_decref(s->subscriptions);
	s->subscriptions = a->subs;
	a->subs = NULL;
	s->initialized = true;
}

int
session_adopt(struct session_table *t, const char *id, const char *key,
	      struct sessstore *store, const char *version, const json_t *caps,
	      const json_t *info, int log_level, const json_t *subscriptions,
	      int64_t rev, const char *owner, struct session **out)
{
	struct adopt a = {
		key, owner != NULL ? owner : "", store, log_level, NULL, rev};
	int rc;

	/* two requests may load one session at once: the first copy wins */
	if (session_acquire(t, id, out) == STATUS_OK)
		return STATUS_OK;
	a.subs = json_is_object(subscriptions) ? json_deep_copy(subscriptions)
					       : json_object();
	if (a.subs == NULL)
		return STATUS_NOMEM;
	rc = create(t, id, version, caps, info, adopt_init, &a, out);
	json_decref(a.subs);	 /* NULL once taken */
	if (rc == STATUS_EXISTS) /* another load won meanwhile */
		return session_acquire(t, id, out);
	return rc;
}

int
session_acquire(struct session_table *t, const char *id, struct session **out)
{
	struct session *s;

	*out = NULL;
	pthread_mutex_lock(&t->mu);
	s = table_find(t, id);
	if (s != NULL)
		session_ref(s);
	pthread_mutex_unlock(&t->mu);
	if (s == NULL)
		return STATUS_NOTFOUND;
	pthread_mutex_lock(&s->mu);
	if (s->closed) {
		pthread_mutex_unlock(&s->mu);
		session_unref(s);
		return STATUS_NOTFOUND;
	}
	s->busy++;
	s->last_active_ms = clock_mono_ms();
	pthread_mutex_unlock(&s->mu);
	*out = s;
	return STATUS_OK;
}

void
session_release(struct session *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->busy--;
	s->last_active_ms = clock_mono_ms();
	pthread_mutex_unlock(&s->mu);
	session_unref(s);
}

/* Unlinks s from its chains (table lock held).  True if it was there. */
static bool
table_unlink(struct session_table *t, struct session *s)
{
	struct session **pp = &t->buckets[hash_id(s->id) & (t->nbuckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == s)
			break;
	if (*pp == NULL)
		return false;
	*pp = s->hnext;
	t->count--;
	if (!s->shared)
		return true;
	t->nshared--;
	for (pp = &t->kbuckets[hash_id(s->key) & (t->nbuckets - 1)];
	     *pp != NULL; pp = &(*pp)->knext)
		if (*pp == s) {
			*pp = s->knext;
			break;
		}
	return true;
}

int
session_delete(struct session_table *t, const char *id)
{
	struct session *s;

	pthread_mutex_lock(&t->mu);
	s = table_find(t, id);
	if (s != NULL)
		table_unlink(t, s);
	pthread_mutex_unlock(&t->mu);
	if (s == NULL)
		return STATUS_NOTFOUND;
	pthread_mutex_lock(&s->mu);
	session_close_locked(s);
	pthread_mutex_unlock(&s->mu);
	session_unref(s); /* the table's reference */
	return STATUS_OK;
}

void
session_forget(struct session_table *t, struct session *s)
{
	bool gone;

	pthread_mutex_lock(&t->mu);
	gone = table_unlink(t, s);
	pthread_mutex_unlock(&t->mu);
	if (!gone)
		return;
	pthread_mutex_lock(&s->mu);
	session_close_locked(s);
	pthread_mutex_unlock(&s->mu);
	session_unref(s); /* the table's reference */
}

/* Collects up to max sessions with a reference each (table lock held). */
static size_t
table_snapshot(struct session_table *t, struct session **v, size_t max,
	       size_t *bucket)
{
	size_t n = 0;

	for (; *bucket < t->nbuckets && n < max; (*bucket)++) {
		struct session *s;
		size_t k = 0;

		for (s = t->buckets[*bucket]; s != NULL; s = s->hnext)
			k++;
		if (n + k > max && n > 0)
			break;
		for (s = t->buckets[*bucket]; s != NULL && n < max;
		     s = s->hnext) {
			session_ref(s);
			v[n++] = s;
		}
	}
	return n;
}

void
session_table_foreach(struct session_table *t,
		      void (*fn)(struct session *s, void *arg), void *arg)
{
	struct session *v[256];
	size_t bucket = 0, n, i;

	do {
		pthread_mutex_lock(&t->mu);
		n = table_snapshot(t, v, 256, &bucket);
		pthread_mutex_unlock(&t->mu);
		for (i = 0; i < n; i++) {
			fn(v[i], arg);
			session_unref(v[i]);
		}
	} while (n > 0);
}

struct sweep_ctx {
	struct session_table *t;
	int64_t now;
	int64_t next_expiry_ms; /* the first idle session's, 0: none yet */
};

/* A gated stream whose events or end the store does not have yet, or
 * that a store job holds: it must stay (s->mu held). */
static bool
stream_unstored(const struct stream *st)
{
	return st->flushing ||
	       (st->gated && !st->lost &&
		(st->durable < st->next_seq || (st->done && !st->done_stored)));
}

static bool
streams_unstored(const struct session *s)
{
	const struct stream *st;

	for (st = s->streams; st != NULL; st = st->next)
		if (stream_unstored(st))
			return true;
	return false;
}

/* Nothing uses s, and everything it holds that must outlive it is stored:
 * it may expire, or shed its streams (s->mu held). */
static bool
session_idle_locked(const struct session *s)
{
	return !s->closed && s->busy == 0 && s->live_streams == 0 &&
	       s->calls == NULL && !streams_unstored(s);
}

/*
 * Removes s if it is still idle, deciding under both locks so that a
 * request acquiring it meanwhile keeps it alive.  True if removed.
 *
 * A shared session's copy unused for cache_idle_s sheds its streams
 * instead: every event of them is in the store, which any replica reads
 * on a GET or a Last-Event-ID, and they are nearly all of its memory.
 * The compact rest stays, so that the session answers here through an
 * outage of the store like a recently used one (sessstore.c "Resident
 * copies"); it goes at idle_timeout_s, or when the store says the session
 * is gone.  Only once nothing but the table and this sweep hold s: no
 * exchange or store job may keep a pointer to a stream.  The streams are
 * freed after the locks are released.
 */
static bool
expire_if_idle(struct sweep_ctx *ctx, struct session *s)
{
	struct session_table *t = ctx->t;
	struct stream *shed = NULL, *next;
	int64_t quiet, expiry;
	bool idle, expire;

	pthread_mutex_lock(&t->mu);
	pthread_mutex_lock(&s->mu);
	idle = session_idle_locked(s);
	quiet = ctx->now - s->last_active_ms;
	expire = idle && quiet > (int64_t)t->lim.idle_timeout_s * 1000;
	if (expire && table_unlink(t, s)) {
		session_close_locked(s);
	} else {
		expire = false;
		if (idle && s->shared && s->streams != NULL &&
		    quiet > (int64_t)t->lim.cache_idle_s * 1000 &&
		    atomic_load(&s->refs) == 2) {
			shed = s->streams;
			s->streams = NULL;
			s->standalone = NULL;
		}
		expiry = s->last_active_ms +
			 (int64_t)t->lim.idle_timeout_s * 1000;
		if (idle &&
		    (ctx->next_expiry_ms == 0 || expiry < ctx->next_expiry_ms))
			ctx->next_expiry_ms = expiry;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&t->mu);
	for (; shed != NULL; shed = next) {
		next = shed->next;
		stream_free(shed);
	}
	if (expire)
		session_unref(s); /* the table's reference */
	return expire;
}

static void
sweep_one(struct session *s, void *arg)
{
	struct sweep_ctx *ctx = arg;
	const struct session_limits *lim = &ctx->t->lim;
	struct stream *st;

	pthread_mutex_lock(&s->mu);
	for (st = s->streams; st != NULL; st = st->next) {
		if (st->attached && !st->keepalive &&
		    ctx->now - st->last_write_ms >=
			    (int64_t)lim->keepalive_s * 1000) {
			st->keepalive = true;
			if (st->wake != NULL)
				st->wake(st->wake_arg);
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (expire_if_idle(ctx, s) && !s->shared)
		log_debug(&(struct log_fields){.session = s->id,
					       .duration_ms = -1},
			  "session expired after %d s idle",
			  lim->idle_timeout_s);
}

void
session_table_sweep(struct session_table *t, int64_t now_ms)
{
	struct sweep_ctx ctx = {t, now_ms, 0};

	session_table_foreach(t, sweep_one, &ctx);
	pthread_mutex_lock(&t->mu);
	t->next_expiry_ms = ctx.next_expiry_ms;
	pthread_mutex_unlock(&t->mu);
}

int
session_table_retry_s(struct session_table *t, int64_t now_ms)
{
	int64_t at, ms;

	pthread_mutex_lock(&t->mu);
	at = t->next_expiry_ms;
	pthread_mutex_unlock(&t->mu);
	/* none idle: the first to become so, now, at the earliest */
	ms = at != 0 ? at - now_ms : (int64_t)t->lim.idle_timeout_s * 1000;
	/* and the sweep after it, once a second */
	ms = (ms > 0 ? ms : 0) + 1999;
	return ms / 1000 < SESSION_FULL_RETRY_MAX_S ? (int)(ms / 1000)
						    : SESSION_FULL_RETRY_MAX_S;
}

static void
close_one(struct session *s, void *arg)
{
	session_delete(arg, s->id);
}

void
session_table_close_all(struct session_table *t)
{
	session_table_foreach(t, close_one, t);
}

/* --- streams ---------------------------------------------------------- */

static int
stream_count(struct session *s)
{
	struct stream *st;
	int n = 0;

	for (st = s->streams; st != NULL; st = st->next)
		n++;
	return n;
}

/*
 * Drops the oldest stream without a reader that nothing will write to any
 * more: finished ones first, then a detached standalone stream (only
 * s->standalone points to it).  A POST stream still answering requests
 * is never dropped: its exchange holds a pointer to it.
 */
static bool
stream_evict_one(struct session *s)
{
	struct stream **pp, **victim = NULL;
	int pass;

	/* The list runs oldest first: take the first match. */
	for (pass = 0; pass < 2 && victim == NULL; pass++)
		for (pp = &s->streams; *pp != NULL && victim == NULL;
		     pp = &(*pp)->next)
			if (!(*pp)->attached && !stream_unstored(*pp) &&
			    (pass == 0 ? (*pp)->done : (*pp)->standalone))
				victim = pp;
	if (victim == NULL)
		return false;
	{
		struct stream *st = *victim;

		*victim = st->next;
		if (s->standalone == st)
			s->standalone = NULL;
		stream_free(st);
	}
	return true;
}

static int
stream_append_encoded(struct stream *st, const char *data, size_t len,
		      int retry_ms)
{
	char id[STREAM_ID_LEN + 24];
	struct buf b;
	int rc;

	snprintf(id, sizeof(id), "%s-%llu", st->id,
		 (unsigned long long)st->next_seq);
	buf_init(&b, (size_t)1 << 30);
	/* 2026-07-28 streams cannot be resumed (SH): no ids to offer */
	rc = sse_encode(&b, st->sess->stateless ? NULL : id, retry_ms, data,
			len);
	if (rc == STATUS_OK)
		rc = sse_log_append(st->log, st->next_seq, b.data, b.len);
	buf_free(&b);
	if (rc != STATUS_OK)
		return rc;
	st->next_seq++;
	if (st->gated && !st->lost) {
		if (st->sess->lim.dirty != NULL)
			st->sess->lim.dirty(st);
		return STATUS_OK; /* the reader is woken once stored */
	}
	if (st->attached && st->wake != NULL)
		st->wake(st->wake_arg);
	return STATUS_OK;
}

/* A new stream of s, not linked yet (s->mu held). */
static int
stream_new(struct session *s, bool standalone, struct stream **out)
{
	struct stream *st;
	int rc;

	*out = NULL;
	while (stream_count(s) >= SESSION_MAX_KEPT_STREAMS)
		if (!stream_evict_one(s))
			return STATUS_FULL;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return STATUS_NOMEM;
	rc = sse_log_new(s->lim.replay_events, s->lim.replay_bytes, &st->log);
	if (rc != STATUS_OK) {
		stream_free(st);
		return rc;
	}
	st->standalone = standalone;
	st->sess = s;
	st->last_write_ms = clock_mono_ms();
	*out = st;
	return STATUS_OK;
}

/* Appends st at the tail: eviction scans for the oldest. */
static void
stream_link(struct session *s, struct stream *st)
{
	struct stream **tail;

	for (tail = &s->streams; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = st;
}

int
stream_open(struct session *s, bool standalone, bool prime, struct stream **out)
{
	struct stream *st;
	int rc;

	*out = NULL;
	rc = stream_new(s, standalone, &st);
	if (rc != STATUS_OK)
		return rc;
	rc = auth_random_hex(st->id, sizeof(st->id), STREAM_ID_LEN / 2);
	if (rc != STATUS_OK)
		goto fail;
	st->gated = s->shared;
	if (prime) {
		rc = stream_append_encoded(st, "", 0, s->lim.retry_ms);
		if (rc != STATUS_OK)
			goto fail;
	}
	stream_link(s, st);
	*out = st;
	return STATUS_OK;
fail:
	stream_free(st);
	return rc;
}

int
stream_send(struct stream *st, const json_t *msg)
{
	char *text;
	int rc;

	text = jsondump(msg, JSON_COMPACT);
	if (text == NULL)
		return STATUS_NOMEM;
	rc = stream_append_encoded(st, text, strlen(text), -1);
	free(text);
	return rc;
}

int
stream_send_text(struct stream *st, const char *text, size_t len)
{
	return stream_append_encoded(st, text, len, -1);
}

void
stream_finish(struct stream *st)
{
	st->done = true;
	if (st->gated && !st->lost && st->sess->lim.dirty != NULL)
		st->sess->lim.dirty(st);
	if (st->attached && st->wake != NULL)
		st->wake(st->wake_arg);
}

int
stream_open_mirror(struct session *s, const char *id, bool standalone,
		   uint64_t first, struct stream **out)
{
	struct stream *st;
	int rc;

	*out = NULL;
	rc = stream_new(s, standalone, &st);
	if (rc != STATUS_OK)
		return rc;
	snprintf(st->id, sizeof(st->id), "%s", id);
	st->mirror = true;
	st->next_seq = first;
	st->sent_upto = first;
	stream_link(s, st);
	*out = st;
	return STATUS_OK;
}

int
stream_mirror_reset(struct stream *st, uint64_t first)
{
	struct sse_log *log;
	int rc;

	rc = sse_log_new(st->sess->lim.replay_events,
			 st->sess->lim.replay_bytes, &log);
	if (rc != STATUS_OK)
		return rc;
	sse_log_free(st->log);
	st->log = log;
	st->next_seq = first;
	st->sent_upto = first;
	return STATUS_OK;
}

int
stream_mirror_append(struct stream *st, uint64_t seq, const char *ev,
		     size_t len)
{
	int rc;

	if (seq < st->next_seq)
		return STATUS_OK; /* had it */
	if (seq > st->next_seq &&
	    (rc = stream_mirror_reset(st, seq)) != STATUS_OK)
		return rc;
	rc = sse_log_append(st->log, seq, ev, len);
	if (rc != STATUS_OK)
		return rc;
	st->next_seq = seq + 1;
	if (st->attached && st->wake != NULL)
		st->wake(st->wake_arg);
	return STATUS_OK;
}

void
stream_set_durable(struct stream *st, uint64_t n)
{
	if (n <= st->durable)
		return;
	st->durable = n;
	if (st->attached && st->wake != NULL)
		st->wake(st->wake_arg);
}

void
stream_drop_connection(struct stream *st)
{
	if (!st->attached)
		return;
	st->drop = true;
	if (st->wake != NULL)
		st->wake(st->wake_arg);
}

struct stream *
stream_find(struct session *s, const char *id, size_t len)
{
	struct stream *st;

	for (st = s->streams; st != NULL; st = st->next)
		if (strlen(st->id) == len && memcmp(st->id, id, len) == 0)
			return st;
	return NULL;
}

int
stream_attach(struct stream *st, void (*wake)(void *), void *arg,
	      uint64_t after_seq, unsigned *gen, struct sse_cursor *cur)
{
	struct session *s = st->sess;
	uint64_t first, last;

	if (!st->attached) {
		/* the cap is for streams a client opens with GET; a POST's
		 * own response stream is bounded by the connections */
		bool response = after_seq == UINT64_MAX && !st->standalone &&
				!st->ever_attached;

		if (!response && s->live_streams >= s->lim.max_streams)
			return STATUS_FULL;
		s->live_streams++;
	} else if (st->wake != NULL) {
		st->gen++; /* the old reader sees a new gen and ends */
		st->wake(st->wake_arg);
	}
	st->gen++;
	st->attached = true;
	st->drop = false;
	st->wake = wake;
	st->wake_arg = arg;
	st->last_write_ms = clock_mono_ms();
	*gen = st->gen;
	cur->off = 0;
	if (after_seq != UINT64_MAX)
		cur->seq = after_seq + 1;
	else if (st->ever_attached)
		cur->seq = st->sent_upto; /* a new GET: what is new */
	else if (sse_log_range(st->log, &first, &last))
		cur->seq = first;
	else
		cur->seq = st->next_seq;
	st->ever_attached = true;
	return STATUS_OK;
}

void
stream_detach(struct stream *st, unsigned gen)
{
	if (!st->attached || st->gen != gen)
		return;
	st->attached = false;
	st->wake = NULL;
	st->wake_arg = NULL;
	st->drop = false;
	st->sess->live_streams--;
	st->sess->last_active_ms = clock_mono_ms();
}

enum stream_state
stream_read(struct stream *st, unsigned gen, struct sse_cursor *cur, char *dst,
	    size_t max, size_t *n)
{
	static const char keepalive[] = ": keepalive\n\n";
	bool gap;

	*n = 0;
	if (!st->attached || st->gen != gen)
		return STREAM_END;
	/* A closed session still flushes what its streams hold (a drain
	 * must not drop final responses), then ends them. */
	*n = sse_log_read_upto(st->log, cur,
			       st->gated ? st->durable : UINT64_MAX, dst, max,
			       &gap);
	if (gap)
		log_warn(&(struct log_fields){.session = st->sess->id,
					      .duration_ms = -1},
			 "stream %s: replay buffer overrun, events lost "
			 "(raise server.sse_replay_events)",
			 st->id);
	if (*n == 0 && st->keepalive && !st->sess->closed &&
	    max >= sizeof(keepalive) - 1) {
		memcpy(dst, keepalive, sizeof(keepalive) - 1);
		*n = sizeof(keepalive) - 1;
	}
	if (cur->seq > st->sent_upto)
		st->sent_upto = cur->seq;
	if (*n > 0) {
		st->keepalive = false;
		st->last_write_ms = clock_mono_ms();
		return STREAM_DATA;
	}
	/* a drop (SEP-1699) waits until what was sent before it is stored:
	 * the client must have an event id to resume from */
	if (st->drop && st->gated && !st->lost && st->durable < st->next_seq)
		return STREAM_WAIT;
	if (st->drop || st->sess->closed) {
		st->drop = false;
		return STREAM_END;
	}
	/* a stream another replica took over (or whose session is gone):
	 * what was not stored is never shown; the client resumes and gets
	 * the stored events and the answers written for it */
	if (st->gated && st->lost && cur->seq >= st->durable)
		return STREAM_END;
	if (st->done && sse_log_drained(st->log, cur))
		return STREAM_END;
	return STREAM_WAIT;
}

/*
 * sessstore.c - the session store: 2025 sessions in PostgreSQL, served
 * by any replica (contracts in sessstore.h, statements in lib/pg/sessdb).
 *
 * DESIGN
 *
 * Threads.  A pool of store threads (sessions.store_threads) runs every
 * job; each job leases a connection from the store's own pg pool, so tool
 * queries and session work never starve each other.  One listener thread
 * (lib/pg/pglisten) turns NOTIFYs into jobs.  The main thread's tick only
 * queues the janitor job (heartbeat, sweep, takeover, touches, retries,
 * catch-up reads), one at a time.
 *
 * Locking.  Session table -> s->mu -> the pool's queue; no SQL is ever run
 * with s->mu held: jobs copy what they need under it, drop it for the
 * statement, and take it again to apply the result.
 *
 * Invariants (docs/architecture.md "Sessions across replicas"):
 *  I1 durable before visible: a gated stream's reader sees events below
 *     st->durable only, set once sessdb_append committed them; so any
 *     replica can replay what a client saw, and nothing it did not see is
 *     lost when this replica dies (the takeover numbers its answers
 *     after everything stored).
 *  I2 one writer per sequence: a POST stream is flushed by one job at a
 *     time (st->flushing), in order; mcp_append refuses a gap.  The
 *     standalone stream's numbers are taken under its row's lock.
 *  I3 the tables are the truth, NOTIFY a hint: every NOTIFY-driven action
 *     is redone by the janitor's catch-up (mirrors with a reader, answers
 *     for our pending requests) every few seconds.
 *  I4 no bearer secret leaves the process: rows and payloads carry
 *     sessdb_key(id).
 *
 * Resident copies through an outage.  A copy unused for
 * sessions.cache_idle_s sheds its streams, which the store holds and which
 * are nearly all of its memory, and keeps the compact rest (revision,
 * capabilities, level, subscriptions: a few hundred bytes to a few KB)
 * until server.session_idle_timeout_s, or until the store says the session
 * is gone (NOTIFY d, the revalidation after a listener gap).  It stays in
 * the key index, so every NOTIFY keeps it as current as a busy copy; and
 * a full session table forgets its least recently used idle copy rather
 * than refuse, so a replica holds at most server.max_sessions copies, the
 * bound of a gateway without a store.  Why not drop the copy and answer
 * 503 with Retry-After while the store is down: with several replicas
 * behind a balancer, each replica sees a session only every few of its
 * requests, so most copies of a session in use are past cache_idle_s at
 * any time; an outage would refuse most requests of live sessions for its
 * whole length, and no wait the gateway could name would be right.
 * A compact copy serves everything a recent one does: JSON answers, tool
 * calls (SSE events wait to be stored and flow when the store is back,
 * I1), the touch of last_active when it is back; only what must be
 * stored first (initialize, a session never seen here, DELETE, GET, a
 * level or subscription change) waits for the store, with 503 and
 * Retry-After or a JSON-RPC error saying to retry.
 *
 * The session limit.  server.max_sessions counts the sessions stored by
 * every replica (migration 0011: a counter row kept by triggers, checked
 * under its row lock by the insert: exact, one row update per initialize,
 * no count(*)).  A refused initialize is told when the least recently
 * active session expires, unless used (Retry-After), and that a DELETE of
 * an unused session makes room at once.
 */
#include "mcp/sessstore.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "base/sse.h"
#include "core/server.h"
#include "mcp/call.h"
#include "mcp/exchange.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "pg/pg.h"
#include "pg/pglisten.h"
#include "pg/sessdb.h"

#define STORE_QUEUE	 4096
#define SWEEP_EVERY_MS	 5000
#define CATCHUP_EVERY_MS 2000
#define MAX_TOUCH_KEYS	 1000
#define TOMBS		 64    /* deleted keys remembered ... */
#define TOMB_MS		 30000 /* ... this long */
#define TAKEOVER_MESSAGE                                                       \
	"the gateway replica running this request stopped before answering; "  \
	"the session is intact: send the request again"

struct sessstore {
	struct server *srv;
	const struct config *cfg;
	struct pool *pool;  /* store jobs */
	struct pool *jpool; /* the janitor alone: heartbeats never queue
			       behind store work */
	struct pg_pool *pg;
	struct pglisten *listen;
	char replica[SESSDB_REPLICA_LEN + 1];
	char tag[9];
	char host[64];
	char channel[sizeof(SESSDB_REPLICA_PREFIX) + SESSDB_REPLICA_LEN];
	atomic_bool up;
	atomic_bool registered;
	atomic_bool janitor_busy;
	atomic_bool catchup;	/* the listener reconnected: catch up now */
	atomic_bool revalidate; /* ... and check the resident copies */
	atomic_bool draining;
	/* server.max_sessions reached: the last refusal's Retry-After, and
	 * whether that was logged (cleared by the next session stored) */
	atomic_int full_retry_s;
	atomic_bool full;
	/* the key that signs "c" and "x" notifications (sessdb_sign):
	 * read from the database once, by whichever job needs it first;
	 * set under ack_mu, then nkey_ok */
	uint8_t nkey[SESSDB_NOTIFY_KEY_BYTES];
	atomic_bool nkey_ok;
	/* since when this replica's heartbeats succeed without a gap (0:
	 * failing): it takes over nobody before the others, back from the
	 * same outage, had replica_timeout_s to beat again */
	_Atomic int64_t healthy_since_ms;
	/* janitor state: its job only */
	int64_t next_sweep_ms, next_touch_ms, next_catchup_ms, last_touch_ms;
	/* DELETEs waiting for the other replicas to drop their copies, and
	 * the keys deleted lately (a load racing the delete must not bring
	 * its copy back): both under ack_mu */
	pthread_mutex_t ack_mu;
	struct {
		char key[SESSDB_KEY_LEN + 1];
		int64_t ms;
	} tombs[TOMBS];
	unsigned ntomb;
	struct ack_wait *acks;
	/* loads of sessions not resident here, each with the requests
	 * waiting for it (load_mu) */
	pthread_mutex_t load_mu;
	struct load *loads;
	struct expo_family *ops; /* op, outcome */
	struct expo_series *takeovers;
	struct expo_series *hits,
		*misses; /* requests finding the session here */
};

/*
 * One load of a session from the store and the requests waiting for it:
 * concurrent first requests for a session this replica does not hold
 * (round-robin sends a client's burst everywhere at once) share one read
 * instead of each reading the row and racing to adopt it.
 */
struct load {
	struct load *next;
	struct sessstore *st;
	char key[SESSDB_KEY_LEN + 1];
	int n, cap;
	struct load_waiter {
		sessstore_done_fn *done;
		void *arg;
	} * w;
};

/*
 * A DELETE waiting for an "x" from each live replica (ack_mu).  No thread
 * waits: the delete job hands its completion (done, arg) over and
 * returns; the last "x" (listener thread), the deadline (sessstore_tick)
 * or shutdown (sessstore_drain) completes it, whichever unlinks it first.
 */
struct ack_wait {
	char key[SESSDB_KEY_LEN + 1];
	char (*peers)[SESSDB_REPLICA_LEN + 1];
	bool *acked;
	int n, left;
	int64_t until_ms;	 /* when the rest are taken as gone */
	sessstore_done_fn *done; /* NULL while the delete job owns it */
	void *arg;
	struct ack_wait *next;
};

struct job;
typedef void job_fn(struct job *j, struct pg_conn *c, int rc,
		    struct pg_error *err);

struct job {
	struct pool_job pj; /* first */
	struct sessstore *st;
	job_fn *fn;
	const char *op; /* for the metric */
	sessstore_done_fn *done;
	void *arg;
	struct session *s; /* a reference, or NULL */
	struct stream *stm;
	struct exchange *ex; /* a reference, or NULL */
	json_t *id, *msg;
	char *text;
	char key[SESSDB_KEY_LEN + 1];
	char sid[SESSION_ID_LEN + 1];
	char stream_id[32];
	char req_id[256]; /* a request id, or a cancel's id as JSON */
	uint64_t after;
	int level;
	bool on;
	char note; /* notified_fn: the NOTIFY's kind */
	int64_t now_ms;
};

static bool may_take_over(struct sessstore *st, int64_t now_ms);
static bool tombstoned(struct sessstore *st, const char *key);

/* --- jobs ------------------------------------------------------------- */

static const char *
outcome(int rc)
{
	switch (rc) {
	case STATUS_OK: return "ok";
	case STATUS_NOTFOUND: return "notfound";
	case STATUS_TIMEOUT: return "timeout";
	default: return "error";
	}
}

/* Tracks whether the database answers, logging each transition once. */
static void
note(struct sessstore *st, int rc, const struct pg_error *err)
{
	bool down = rc == STATUS_IO || rc == STATUS_TIMEOUT;

	if (down && atomic_exchange(&st->up, false))
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "session store unavailable: %s (%s); shared sessions "
			 "wait for it (503 with Retry-After)",
			 err->client, err->detail);
	else if (rc == STATUS_OK && !atomic_exchange(&st->up, true))
		log_info(&(struct log_fields){.duration_ms = -1},
			 "session store available");
}

static void
job_free(struct job *j)
{
	if (j->s != NULL)
		session_unref(j->s);
	exchange_unref(j->ex);
	json_decref(j->id);
	json_decref(j->msg);
	free(j->text);
	free(j);
}

static void
job_run(struct pool_job *pj)
{
	struct job *j = (struct job *)pj;
	struct pg_conn *c = NULL;
	struct pg_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = pg_acquire(j->st->pg, NULL, -1, &c, &err);
	if (rc != STATUS_OK)
		note(j->st, rc, &err);
	j->fn(j, rc == STATUS_OK ? c : NULL, rc, &err);
	pg_release(c);
	job_free(j);
}

static struct job *
job_new(struct sessstore *st, job_fn *fn, const char *op)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->pj.run = job_run;
	j->st = st;
	j->fn = fn;
	j->op = op;
	return j;
}

/* Queues j; on failure frees it and returns the error (done not run). */
static int
job_submit(struct job *j)
{
	int rc = pool_submit(j->st->pool, &j->pj);

	if (rc != STATUS_OK) {
		j->done = NULL;
		job_free(j);
	}
	return rc;
}

static void
finish(struct job *j, int rc, const struct pg_error *err)
{
	note(j->st, rc, err);
	expo_inc(expo_series(j->st->ops, (const char *[]){j->op, outcome(rc)}));
	if (j->done != NULL)
		j->done(j->arg, rc);
}

/* The notify key (loaded or created now if need be): STATUS_OK when
 * st->nkey holds it. */
static int
notify_key(struct sessstore *st, struct pg_conn *c, struct pg_error *err)
{
	uint8_t fresh[SESSDB_NOTIFY_KEY_BYTES], key[SESSDB_NOTIFY_KEY_BYTES];
	int rc;

	if (atomic_load(&st->nkey_ok))
		return STATUS_OK;
	if (RAND_bytes(fresh, sizeof(fresh)) != 1) {
		snprintf(err->client, sizeof(err->client),
			 "no random bytes for the notification key");
		snprintf(err->detail, sizeof(err->detail), "%s", err->client);
		return STATUS_IO;
	}
	rc = sessdb_notify_key(c, fresh, key, err);
	OPENSSL_cleanse(fresh, sizeof(fresh));
	if (rc != STATUS_OK)
		return rc;
	pthread_mutex_lock(&st->ack_mu);
	if (!atomic_load(&st->nkey_ok)) {
		memcpy(st->nkey, key, sizeof(key));
		atomic_store(&st->nkey_ok, true);
	}
	pthread_mutex_unlock(&st->ack_mu);
	OPENSSL_cleanse(key, sizeof(key));
	return STATUS_OK;
}

/* --- finding resident sessions by key -------------------------------- */

/* The resident session with this key (a reference), or NULL. */
static struct session *
find_key(struct sessstore *st, const char *key)
{
	return session_find_key(st->srv->sessions, key);
}

/* --- create, lookup, delete ------------------------------------------ */

/*
 * The store holds server.max_sessions sessions: when the next one
 * expires (unless it is used meanwhile) and the sweep after it, for the
 * Retry-After of the refusal.  Logged once per time the store fills.
 */
static void
full_retry(struct sessstore *st, struct pg_conn *c)
{
	struct pg_error err;
	int secs = 0;

	memset(&err, 0, sizeof(err));
	if (sessdb_next_expiry(c, st->cfg->server.session_idle_timeout_s, &secs,
			       &err) != STATUS_OK)
		secs = SESSSTORE_FULL_RETRY_MAX_S;
	secs += SWEEP_EVERY_MS / 1000;
	atomic_store(&st->full_retry_s, secs < SESSSTORE_FULL_RETRY_MAX_S
						? secs
						: SESSSTORE_FULL_RETRY_MAX_S);
	if (!atomic_exchange(&st->full, true))
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "new sessions refused: server.max_sessions (%d) "
			 "sessions are stored by the gateways sharing the "
			 "database",
			 st->cfg->server.max_sessions);
}

int
sessstore_full_retry_s(struct sessstore *st)
{
	int secs = atomic_load(&st->full_retry_s);

	return secs > 0 ? secs : SESSSTORE_FULL_RETRY_MAX_S;
}

static void
create_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct session *s = j->s;
	struct sessdb_session row;

	memset(&row, 0, sizeof(row));
	if (c != NULL) {
		snprintf(row.key, sizeof(row.key), "%s", s->key);
		snprintf(row.version, sizeof(row.version), "%s", s->version);
		snprintf(row.owner, sizeof(row.owner), "%s", s->owner);
		row.caps = json_dumps(s->client_caps, JSON_COMPACT);
		row.info = json_dumps(s->client_info, JSON_COMPACT);
		pthread_mutex_lock(&s->mu);
		row.log_level = s->log_level;
		row.subscriptions = json_dumps(s->subscriptions, JSON_COMPACT);
		pthread_mutex_unlock(&s->mu);
		if (row.caps == NULL || row.info == NULL ||
		    row.subscriptions == NULL)
			rc = STATUS_NOMEM;
		else
			rc = sessdb_insert(
				c, &row, j->st->cfg->server.max_sessions, err);
		free(row.caps);
		free(row.info);
		free(row.subscriptions);
	}
	pthread_mutex_lock(&s->mu);
	s->storing = false;
	pthread_mutex_unlock(&s->mu);
	if (rc == STATUS_FULL)
		full_retry(j->st, c);
	else if (rc == STATUS_OK && atomic_exchange(&j->st->full, false))
		log_info(&(struct log_fields){.duration_ms = -1},
			 "new sessions accepted again (below "
			 "server.max_sessions)");
	else if (rc != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "session not stored: %s (%s)", status_str(rc),
			 err->detail);
	finish(j, rc, err);
}

int
sessstore_create(struct sessstore *st, struct session *s,
		 sessstore_done_fn *done, void *arg)
{
	struct job *j = job_new(st, create_fn, "create");
	int rc;

	if (j == NULL)
		return STATUS_NOMEM;
	session_ref(s);
	j->s = s;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&s->mu);
	s->storing = true;
	pthread_mutex_unlock(&s->mu);
	rc = job_submit(j);
	if (rc != STATUS_OK) {
		pthread_mutex_lock(&s->mu);
		s->storing = false;
		pthread_mutex_unlock(&s->mu);
	}
	return rc;
}

static void
lookup_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessdb_session *row = NULL;
	struct session *s = NULL;
	json_t *caps = NULL, *info = NULL, *subs = NULL;

	if (c != NULL)
		rc = sessdb_get(c, j->key, &row, err);
	if (rc == STATUS_OK) {
		caps = json_loads(row->caps, 0, NULL);
		info = json_loads(row->info, 0, NULL);
		subs = json_loads(row->subscriptions, 0, NULL);
		rc = session_adopt(j->st->srv->sessions, j->sid, j->key, j->st,
				   row->version, caps, info, row->log_level,
				   subs, row->rev, row->owner, &s);
		if (rc == STATUS_OK) {
			/* deleted while we read it: the 'd' job ran before
			 * the copy existed (it records the key first) */
			if (tombstoned(j->st, j->key)) {
				session_forget(j->st->srv->sessions, s);
				rc = STATUS_NOTFOUND;
			}
			session_release(s); /* the table keeps it */
		}
	}
	json_decref(caps);
	json_decref(info);
	json_decref(subs);
	sessdb_session_free(row);
	finish(j, rc, err);
}

/* Queues a job about session id (lookup, delete). */
static int
submit_for_id(struct sessstore *st, job_fn *fn, const char *op, const char *id,
	      sessstore_done_fn *done, void *arg)
{
	struct job *j = job_new(st, fn, op);

	if (j == NULL)
		return STATUS_NOMEM;
	snprintf(j->sid, sizeof(j->sid), "%s", id);
	sessdb_key(id, j->key);
	j->done = done;
	j->arg = arg;
	return job_submit(j);
}

/* Adds a waiter to l (load_mu held). */
static int
load_join(struct load *l, sessstore_done_fn *done, void *arg)
{
	if (l->n == l->cap) {
		int cap = l->cap != 0 ? 2 * l->cap : 4;
		struct load_waiter *w = realloc(l->w, (size_t)cap * sizeof(*w));

		if (w == NULL)
			return STATUS_NOMEM;
		l->w = w;
		l->cap = cap;
	}
	l->w[l->n].done = done;
	l->w[l->n].arg = arg;
	l->n++;
	return STATUS_OK;
}

/* The lookup job's done: every waiter learns the outcome. */
static void
loaded(void *arg, int rc)
{
	struct load *l = arg, **pp;

	pthread_mutex_lock(&l->st->load_mu);
	for (pp = &l->st->loads; *pp != l; pp = &(*pp)->next)
		;
	*pp = l->next;
	pthread_mutex_unlock(&l->st->load_mu);
	for (int i = 0; i < l->n; i++)
		l->w[i].done(l->w[i].arg, rc);
	free(l->w);
	free(l);
}

int
sessstore_lookup(struct sessstore *st, const char *id, sessstore_done_fn *done,
		 void *arg)
{
	char key[SESSDB_KEY_LEN + 1];
	struct load *l;
	struct job *j = NULL;
	int rc;

	expo_inc(st->misses);
	sessdb_key(id, key);
	pthread_mutex_lock(&st->load_mu);
	for (l = st->loads; l != NULL; l = l->next)
		if (strcmp(l->key, key) == 0)
			break;
	if (l != NULL) {
		rc = load_join(l, done, arg);
		goto out;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL || (j = job_new(st, lookup_fn, "lookup")) == NULL ||
	    load_join(l, done, arg) != STATUS_OK) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	l->st = st;
	memcpy(l->key, key, sizeof(key));
	snprintf(j->sid, sizeof(j->sid), "%s", id);
	memcpy(j->key, key, sizeof(key));
	j->done = loaded;
	j->arg = l;
	/* published only once queued, still under load_mu, which the job
	 * takes before it can finish */
	rc = job_submit(j);
	j = NULL;
	if (rc != STATUS_OK)
		goto fail;
	l->next = st->loads;
	st->loads = l;
	goto out;
fail:
	free(j);
	if (l != NULL)
		free(l->w);
	free(l);
out:
	pthread_mutex_unlock(&st->load_mu);
	return rc;
}

static void
ack_wait_free(struct ack_wait *w)
{
	if (w == NULL)
		return;
	free(w->peers);
	free(w->acked);
	free(w);
}

/* Answers the DELETEs of done (unlinked, handed over), freeing them. */
static void
acks_complete(struct ack_wait *done)
{
	while (done != NULL) {
		struct ack_wait *w = done;

		done = w->next;
		if (w->left > 0)
			log_warn(&(struct log_fields){.duration_ms = -1},
				 "session %.8s deleted: %d of %d other "
				 "gateway(s) did not confirm dropping it",
				 w->key, w->left, w->n);
		w->done(w->arg, STATUS_OK);
		ack_wait_free(w);
	}
}

/* Unlinks the handed-over waits that are confirmed, past until_ms, or
 * all of them (all: shutdown), and answers them. */
static void
acks_settle(struct sessstore *st, int64_t now_ms, bool all)
{
	struct ack_wait **pp, *w, *done = NULL;

	pthread_mutex_lock(&st->ack_mu);
	for (pp = &st->acks; (w = *pp) != NULL;) {
		if (w->done != NULL &&
		    (all || w->left == 0 || now_ms >= w->until_ms)) {
			*pp = w->next;
			w->next = done;
			done = w;
		} else {
			pp = &w->next;
		}
	}
	pthread_mutex_unlock(&st->ack_mu);
	acks_complete(done);
}

/* Listener thread: replica dropped its copy of key. */
static void
acked(struct sessstore *st, const char *key, const char *replica)
{
	struct ack_wait *w;
	bool settled = false;
	int i;

	pthread_mutex_lock(&st->ack_mu);
	for (w = st->acks; w != NULL; w = w->next)
		if (strcmp(w->key, key) == 0) {
			for (i = 0; i < w->n; i++)
				if (!w->acked[i] &&
				    strcmp(w->peers[i], replica) == 0) {
					w->acked[i] = true;
					w->left--;
				}
			settled |= w->left == 0 && w->done != NULL;
		}
	pthread_mutex_unlock(&st->ack_mu);
	if (settled)
		acks_settle(st, clock_mono_ms(), false);
}

static void
tomb_add(struct sessstore *st, const char *key)
{
	pthread_mutex_lock(&st->ack_mu);
	snprintf(st->tombs[st->ntomb % TOMBS].key, SESSDB_KEY_LEN + 1, "%s",
		 key);
	st->tombs[st->ntomb % TOMBS].ms = clock_mono_ms();
	st->ntomb++;
	pthread_mutex_unlock(&st->ack_mu);
}

static bool
tombstoned(struct sessstore *st, const char *key)
{
	int64_t now = clock_mono_ms();
	bool hit = false;
	unsigned i;

	pthread_mutex_lock(&st->ack_mu);
	for (i = 0; i < TOMBS && !hit; i++)
		hit = now - st->tombs[i].ms < TOMB_MS &&
		      strcmp(st->tombs[i].key, key) == 0;
	pthread_mutex_unlock(&st->ack_mu);
	return hit;
}

/*
 * DELETE: once it answers, no replica may serve the session any more (a
 * client's next request may reach any of them).  The live replicas are
 * asked to drop their copies ("d <key> <us>") and each says when it has
 * ("x"); one that does not within the bound is taken as gone (its copy
 * goes at its next NOTIFY or lookup, or with it).
 */
static void
delete_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct ack_wait *w = NULL, **pp;
	PGresult *peers = NULL;
	bool here, deleted, handed = false;
	int i, n;

	if (c == NULL)
		goto out;
	if (sessdb_peers(c, st->replica, st->cfg->sessions.replica_timeout_s,
			 &peers, err) == STATUS_OK &&
	    (n = PQntuples(peers)) > 0 && (w = calloc(1, sizeof(*w))) != NULL) {
		w->peers = calloc((size_t)n, sizeof(*w->peers));
		w->acked = calloc((size_t)n, sizeof(*w->acked));
		if (w->peers == NULL || w->acked == NULL) {
			ack_wait_free(w);
			w = NULL;
		} else {
			w->n = w->left = n;
			for (i = 0; i < n; i++)
				snprintf(w->peers[i], sizeof(w->peers[i]), "%s",
					 PQgetvalue(peers, i, 0));
			snprintf(w->key, sizeof(w->key), "%s", j->key);
			/* listed before the delete: no "x" goes uncounted */
			pthread_mutex_lock(&st->ack_mu);
			w->next = st->acks;
			st->acks = w;
			pthread_mutex_unlock(&st->ack_mu);
		}
	}
	rc = sessdb_delete(c, j->key, w != NULL ? st->replica : NULL, err);
	deleted = rc == STATUS_OK; /* by us: the others answer us */
	if (rc == STATUS_OK || rc == STATUS_NOTFOUND) {
		tomb_add(st, j->key);
		/* our copy goes too, at once */
		here = session_delete(st->srv->sessions, j->sid) == STATUS_OK;
		if (here)
			rc = STATUS_OK;
	}
	if (w == NULL)
		goto out;
	pthread_mutex_lock(&st->ack_mu);
	if (deleted && w->left > 0 && !atomic_load(&st->draining)) {
		/* the answer waits for the confirmations, this thread
		 * does not */
		w->until_ms = clock_mono_ms() +
			      (st->cfg->sessions.store_timeout_ms < 2000
				       ? st->cfg->sessions.store_timeout_ms
				       : 2000);
		w->done = j->done;
		w->arg = j->arg;
		j->done = NULL;
		handed = true;
	} else {
		for (pp = &st->acks; *pp != NULL; pp = &(*pp)->next)
			if (*pp == w) {
				*pp = w->next;
				break;
			}
	}
	pthread_mutex_unlock(&st->ack_mu);
	if (!handed)
		ack_wait_free(w);
out:
	PQclear(peers);
	finish(j, rc, err);
}

int
sessstore_delete(struct sessstore *st, const char *id, sessstore_done_fn *done,
		 void *arg)
{
	return submit_for_id(st, delete_fn, "delete", id, done, arg);
}

/* --- mirrors: streams written elsewhere ------------------------------- */

/*
 * Reads the events of stream_id after `after` into its mirror in s,
 * creating or restarting the mirror at `start` when `reset`.  The mirror
 * ends once the stored stream is done and every event is in.
 */
static int
fill_mirror(struct sessstore *st, struct pg_conn *c, struct session *s,
	    const char *stream_id, bool standalone, uint64_t after, bool reset,
	    uint64_t start, struct pg_error *err)
{
	PGresult *rows = NULL;
	struct stream *m;
	uint64_t next = 0;
	bool done = false;
	int rc, i;

	rc = sessdb_read(c, s->key, stream_id, after,
			 st->cfg->server.sse_replay_events, &rows, &done, &next,
			 err);
	if (rc != STATUS_OK)
		return rc;
	pthread_mutex_lock(&s->mu);
	m = stream_find(s, stream_id, strlen(stream_id));
	if (!reset && m != NULL && m->mirror &&
	    strcmp(PQgetvalue(rows, 0, 4), st->replica) != 0) {
		/* the client reads this stream on another replica now: one
		 * connection per stream, so ours ends */
		stream_drop_connection(m);
		pthread_mutex_unlock(&s->mu);
		PQclear(rows);
		return STATUS_OK;
	}
	if (m == NULL && !s->closed)
		rc = stream_open_mirror(s, stream_id, standalone, start, &m);
	else if (m != NULL && !m->mirror)
		m = NULL; /* written here after all: nothing to mirror */
	else if (m != NULL && reset)
		rc = stream_mirror_reset(m, start);
	if (m != NULL && rc == STATUS_OK) {
		if (standalone)
			s->standalone = m;
		for (i = 0; i < PQntuples(rows) && rc == STATUS_OK; i++) {
			uint64_t seq;
			const char *data = PQgetvalue(rows, i, 3);

			if (PQgetisnull(rows, i, 2) ||
			    pg_text_u64(PQgetvalue(rows, i, 2), &seq) !=
				    STATUS_OK)
				continue;
			rc = stream_mirror_append(m, seq, data, strlen(data));
		}
		if (done && m->next_seq >= next && !m->done)
			stream_finish(m);
	}
	pthread_mutex_unlock(&s->mu);
	PQclear(rows);
	return rc;
}

/* The events a dead replica's stream still owes: one error answer per
 * request it never answered. */
struct owed {
	const char *stream_id;
	json_t *requests; /* array of ids */
	int retry_ms;
};

static bool
answered_in(PGresult *events, const json_t *id)
{
	int i;

	for (i = 0; i < PQntuples(events); i++) {
		const char *ev = PQgetvalue(events, i, 1), *d, *end;
		json_t *msg;
		bool hit;

		d = strstr(ev, "data: ");
		if (d == NULL)
			continue;
		d += 6;
		end = strchr(d, '\n');
		msg = json_loadb(d, end != NULL ? (size_t)(end - d) : strlen(d),
				 0, NULL);
		hit = msg != NULL && json_object_get(msg, "method") == NULL &&
		      json_equal(json_object_get(msg, "id"), (json_t *)id);
		json_decref(msg);
		if (hit)
			return true;
	}
	return false;
}

static int
owed_events(void *arg, PGresult *events, uint64_t next_seq, char ***ev,
	    size_t *n)
{
	struct owed *o = arg;
	size_t i, k = 0, max = json_array_size(o->requests);
	char **v;

	*ev = NULL;
	*n = 0;
	v = calloc(max > 0 ? max : 1, sizeof(*v));
	if (v == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < max; i++) {
		const json_t *id = json_array_get(o->requests, i);
		json_t *msg;
		char *text, eid[64];
		struct buf b;
		int rc;

		if (answered_in(events, id))
			continue;
		msg = json_pack("{s:s, s:O, s:{s:i, s:s, s:{s:b}}}", "jsonrpc",
				"2.0", "id", id, "error", "code",
				RPC_INTERNAL_ERROR, "message", TAKEOVER_MESSAGE,
				"data", "retryable", 1);
		text = msg != NULL ? json_dumps(msg, JSON_COMPACT) : NULL;
		json_decref(msg);
		snprintf(eid, sizeof(eid), "%s-%llu", o->stream_id,
			 (unsigned long long)(next_seq + k));
		buf_init(&b, (size_t)1 << 20);
		rc = text != NULL ? sse_encode(&b, eid, -1, text, strlen(text))
				  : STATUS_NOMEM;
		free(text);
		if (rc == STATUS_OK)
			rc = buf_finish(&b, &v[k], NULL);
		if (rc != STATUS_OK) {
			buf_free(&b);
			while (k > 0)
				free(v[--k]);
			free(v);
			return rc;
		}
		k++;
	}
	*ev = v;
	*n = k;
	return STATUS_OK;
}

/* Ends a dead replica's stream: its unanswered requests get an error.
 * requests: the stream's request ids (JSON), NULL to read them. */
static int
take_over(struct sessstore *st, struct pg_conn *c, const char *key,
	  const char *stream_id, const char *dead, const char *requests,
	  struct pg_error *err)
{
	struct owed o = {stream_id, NULL, st->cfg->server.sse_retry_ms};
	PGresult *res = NULL;
	int rc;

	if (requests == NULL) {
		rc = pg_query(c,
			      "SELECT coalesce(requests, '[]')::text FROM "
			      "mcp_streams WHERE session_key = $1 AND id = $2",
			      2, (const char *[]){key, stream_id}, &res, err);
		if (rc != STATUS_OK)
			return rc;
		if (PQntuples(res) != 1) {
			PQclear(res);
			return STATUS_NOTFOUND;
		}
		o.requests = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
		PQclear(res);
	} else {
		o.requests = json_loads(requests, 0, NULL);
	}

	if (!json_is_array(o.requests)) {
		json_decref(o.requests);
		o.requests = json_array();
	}
	rc = sessdb_takeover(c, key, stream_id, dead, owed_events, &o, err);
	if (rc == STATUS_OK) {
		expo_inc(st->takeovers);
		log_info(&(struct log_fields){.duration_ms = -1},
			 "replica %s stopped: stream %s of session %.8s ended "
			 "with an error for each of its %zu open request(s)",
			 dead, stream_id, key, json_array_size(o.requests));
	}
	json_decref(o.requests);
	return rc;
}

/*
 * A new standalone stream's id, and its priming event (event 0: the
 * retry delay, no data) for the revisions that expect one (*prime NULL
 * for the others; owned).  In case two replicas create it at once, the
 * store keeps one and the other's id and event are dropped.
 */
static int
new_standalone(struct sessstore *st, const struct session *s,
	       char id[STREAM_ID_LEN + 1], char **prime)
{
	struct buf b;
	char eid[STREAM_ID_LEN + 8];
	int rc;

	*prime = NULL;
	rc = auth_random_hex(id, STREAM_ID_LEN + 1, STREAM_ID_LEN / 2);
	if (rc != STATUS_OK || strcmp(s->version, "2025-11-25") < 0)
		return rc;
	snprintf(eid, sizeof(eid), "%s-0", id);
	buf_init(&b, 4096);
	rc = sse_encode(&b, eid, st->cfg->server.sse_retry_ms, "", 0);
	if (rc == STATUS_OK)
		rc = buf_finish(&b, prime, NULL);
	buf_free(&b);
	return rc;
}

static void
attach_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct session *s = j->s;
	struct sessdb_stream info;
	char new_id[STREAM_ID_LEN + 1], *prime = NULL;
	uint64_t after, start;
	int tries;

	if (c == NULL)
		goto out;
	/* only used when the session has no standalone stream yet */
	if (j->stream_id[0] == '\0' &&
	    (rc = new_standalone(st, s, new_id, &prime)) != STATUS_OK)
		goto out;
	if (j->stream_id[0] != '\0')
		new_id[0] = '\0';
	for (tries = 0; tries < 2; tries++) {
		rc = sessdb_attach(
			c, s->key,
			j->stream_id[0] != '\0' ? j->stream_id : NULL, new_id,
			prime, st->replica, st->cfg->sessions.replica_timeout_s,
			&info, err);
		if (rc != STATUS_OK || info.done || !info.owner_dead ||
		    !may_take_over(st, clock_mono_ms()) ||
		    strcmp(info.owner, st->replica) == 0)
			break;
		/* its writer is gone: end it here rather than wait */
		rc = take_over(st, c, s->key, info.id, info.owner, NULL, err);
		if (rc == STATUS_NOTFOUND)
			rc = STATUS_OK; /* someone else did */
		if (rc != STATUS_OK)
			break;
	}
	if (rc != STATUS_OK)
		goto out;
	snprintf(j->stream_id, sizeof(j->stream_id), "%s", info.id);
	if (j->after != UINT64_MAX) {
		after = j->after; /* Last-Event-ID */
	} else if (info.fresh) {
		after = UINT64_MAX; /* never read: what it holds */
	} else {
		after = info.next_seq > 0 ? info.next_seq - 1 : UINT64_MAX;
	}
	start = after == UINT64_MAX ? info.first : after + 1;
	rc = fill_mirror(st, c, s, info.id, info.standalone, after, true, start,
			 err);
out:
	free(prime);
	finish(j, rc, err);
}

int
sessstore_attach(struct sessstore *st, struct session *s, const char *stream_id,
		 uint64_t after, sessstore_done_fn *done, void *arg)
{
	struct job *j = job_new(st, attach_fn, "attach");

	if (j == NULL)
		return STATUS_NOMEM;
	session_ref(s);
	j->s = s;
	snprintf(j->stream_id, sizeof(j->stream_id), "%s",
		 stream_id != NULL ? stream_id : "");
	j->after = after;
	j->done = done;
	j->arg = arg;
	return job_submit(j);
}

/* Reads what follows a mirror here of stream_id (if there is one still
 * open) from the store.  STATUS_NOTFOUND when the stream is gone. */
static int
refill_mirror(struct sessstore *st, struct pg_conn *c, struct session *s,
	      const char *stream_id, struct pg_error *err)
{
	struct stream *m;
	uint64_t after = UINT64_MAX;
	bool standalone = false, want = false;

	pthread_mutex_lock(&s->mu);
	m = stream_find(s, stream_id, strlen(stream_id));
	if (m != NULL && m->mirror && !m->done) {
		want = true;
		standalone = m->standalone;
		after = m->next_seq > 0 ? m->next_seq - 1 : UINT64_MAX;
	}
	pthread_mutex_unlock(&s->mu);
	return want ? fill_mirror(st, c, s, stream_id, standalone, after, false,
				  0, err)
		    : STATUS_OK;
}

/* New events on a mirror here (NOTIFY "e", catch-up). */
static void
fetch_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	if (j->s == NULL)
		j->s = find_key(j->st, j->key);
	if (c != NULL && j->s != NULL)
		rc = refill_mirror(j->st, c, j->s, j->stream_id, err);
	if (rc == STATUS_NOTFOUND)
		rc = STATUS_OK;
	finish(j, rc, err);
}

static void
queue_fetch(struct sessstore *st, struct session *s, const char *key,
	    const char *stream_id)
{
	struct job *j = job_new(st, fetch_fn, "fetch");

	if (j == NULL)
		return;
	if (s != NULL)
		session_ref(s);
	j->s = s;
	snprintf(j->key, sizeof(j->key), "%s", key);
	snprintf(j->stream_id, sizeof(j->stream_id), "%s", stream_id);
	(void)job_submit(j); /* the catch-up reads it later otherwise */
}

/* --- the writer: gated streams to the store -------------------------- */

static void queue_flush(struct sessstore *st, struct session *s,
			struct stream *stm);

/* s->mu held: nothing more of stm is stored or shown (the reader ends at
 * what was stored; the client resumes and gets what the store has). */
static void
lose(struct stream *stm, const char *why)
{
	stm->lost = true;
	if (stm->attached && stm->wake != NULL)
		stm->wake(stm->wake_arg);
	log_warn(&(struct log_fields){.session = stm->sess->id,
				      .duration_ms = -1},
		 "stream %s: %s; its reader ends at the last stored event",
		 stm->id, why);
}

static void
flush_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct session *s = j->s;
	struct stream *stm = j->stm;
	struct sessdb_append a;
	char reader[SESSDB_REPLICA_LEN + 1], *requests = NULL;
	char **data = NULL;
	size_t ndata = 0;
	uint64_t from, to, first = 0, last = 0, i;
	bool done;

	memset(&a, 0, sizeof(a));
	/* a stream's owner must have a replica row first: a stream of an
	 * unknown replica counts as a dead one's */
	if (c != NULL && !atomic_load(&st->registered)) {
		rc = sessdb_register(c, st->replica, st->host, (int)getpid(),
				     err);
		if (rc == STATUS_OK)
			atomic_store(&st->registered, true);
		else
			c = NULL;
	}
	pthread_mutex_lock(&s->mu);
	if (c == NULL || stm->lost) {
		stm->flushing = false;
		pthread_mutex_unlock(&s->mu);
		goto out;
	}
	from = stm->flushed;
	to = stm->next_seq;
	done = stm->done;
	if (sse_log_range(stm->log, &first, &last) && from < first) {
		lose(stm, "events were dropped before they could be stored "
			  "(raise server.sse_replay_events)");
		stm->flushing = false;
		pthread_mutex_unlock(&s->mu);
		goto out;
	}
	ndata = (size_t)(to - from);
	data = calloc(ndata + 1, sizeof(*data));
	for (i = from; data != NULL && i < to; i++) {
		const char *ev;
		size_t len;

		if (sse_log_get(stm->log, i, &ev, &len) != STATUS_OK ||
		    (data[i - from] = strndup(ev, len)) == NULL)
			break;
	}
	if (data == NULL || i < to) {
		rc = STATUS_NOMEM;
		stm->flushing = false;
		pthread_mutex_unlock(&s->mu);
		goto out;
	}
	/* the request ids are stored with the stream's row, which the first
	 * flush (from event 0) creates */
	requests = from == 0 && stm->requests != NULL
			   ? json_dumps(stm->requests, JSON_COMPACT)
			   : NULL;
	pthread_mutex_unlock(&s->mu);

	a.replica = st->replica;
	a.key = s->key;
	a.stream = stm->id; /* [const] */
	a.requests = requests;
	a.n = (size_t)(to - from);
	a.seq = from;
	a.data = (const char *const *)data;
	a.first = first;
	a.done = done;
	rc = sessdb_append(c, &a, reader, err);

	pthread_mutex_lock(&s->mu);
	stm->flushing = false;
	if (rc == STATUS_OK) {
		stm->flushed = to;
		stm->done_stored = done;
		stream_set_durable(stm, to);
		if (done && stm->attached && stm->wake != NULL)
			stm->wake(stm->wake_arg);
		if (to < stm->next_seq || (stm->done && !stm->done_stored))
			queue_flush(st, s, stm);
	} else if (rc == STATUS_CLOSED) {
		/* taken over: its requests got their answers elsewhere */
		lose(stm, "another gateway took it over");
	} else if (rc == STATUS_NOTFOUND) {
		lose(stm, "its session is gone");
	}
	/* any other error: the events wait, and the janitor flushes again */
	pthread_mutex_unlock(&s->mu);
out:
	for (i = 0; data != NULL && i < ndata; i++)
		free(data[i]);
	free(data);
	free(requests);
	finish(j, rc == STATUS_NOTFOUND || rc == STATUS_CLOSED ? STATUS_OK : rc,
	       err);
}

/* s->mu held. */
static void
queue_flush(struct sessstore *st, struct session *s, struct stream *stm)
{
	struct job *j;

	if (stm->flushing || stm->lost)
		return;
	j = job_new(st, flush_fn, "flush");
	if (j == NULL)
		return; /* the janitor retries */
	session_ref(s);
	j->s = s;
	j->stm = stm;
	stm->flushing = true;
	if (pool_submit(st->pool, &j->pj) != STATUS_OK) {
		stm->flushing = false;
		/* job_free would take s->mu through nothing, but unref may
		 * free s: it cannot, the caller holds a reference */
		session_unref(s);
		free(j);
	}
}

void
sessstore_stream_dirty(struct stream *stm)
{
	struct session *s = stm->sess;

	if (s->store != NULL)
		queue_flush(s->store, s, stm);
}

/* --- session changes --------------------------------------------------- */

static void
change_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct session *s = j->s;
	char *subs_text = NULL;
	json_t *subs = NULL, *answer;
	int64_t rev = 0;

	if (c != NULL) {
		if (j->text == NULL)
			rc = sessdb_set_level(c, s->key, j->level, &rev, err);
		else
			rc = sessdb_subscribe(c, s->key, j->text, j->on, &rev,
					      &subs_text, err);
	}
	if (rc == STATUS_OK && subs_text != NULL &&
	    (subs = json_loads(subs_text, 0, NULL)) == NULL)
		rc = STATUS_NOMEM;
	if (rc == STATUS_OK) {
		pthread_mutex_lock(&s->mu);
		if (rev > s->rev) {
			s->rev = rev;
			if (subs != NULL) {
				json_decref(s->subscriptions);
				s->subscriptions = subs;
				subs = NULL;
			} else {
				s->log_level = j->level;
			}
		}
		pthread_mutex_unlock(&s->mu);
		answer = rpc_result(j->id, json_object());
	} else if (rc == STATUS_FULL) {
		answer = rpc_error(j->id, RPC_INVALID_PARAMS,
				   "too many subscriptions on this session (at "
				   "most 1000): unsubscribe first",
				   NULL);
	} else if (rc == STATUS_NOTFOUND) {
		answer = rpc_error(j->id, RPC_INVALID_REQUEST,
				   "session not found (expired or deleted): "
				   "initialize a new session",
				   NULL);
	} else {
		answer = rpc_error(j->id, RPC_INTERNAL_ERROR,
				   "could not save the session change: the "
				   "session store is unavailable, retry",
				   NULL);
	}
	exchange_send(j->ex, answer, true);
	json_decref(subs);
	free(subs_text);
	finish(j, rc, err);
}

int
sessstore_change(struct sessstore *st, struct session *s, struct exchange *ex,
		 const json_t *id, const char *uri, bool on, int level)
{
	struct job *j =
		job_new(st, change_fn, uri != NULL ? "subscribe" : "set_level");

	if (j == NULL)
		return STATUS_NOMEM;
	if (uri != NULL && (j->text = strdup(uri)) == NULL) {
		free(j);
		return STATUS_NOMEM;
	}
	session_ref(s);
	j->s = s;
	exchange_ref(ex);
	j->ex = ex;
	j->id = json_incref((json_t *)id);
	j->on = on;
	j->level = level;
	return job_submit(j);
}

/* --- answers, cancels, notifications --------------------------------- */

static void
answer_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	if (c != NULL)
		rc = sessdb_pending_answer(c, j->key, j->req_id, j->text, err);
	if (rc == STATUS_NOTFOUND)
		log_debug(&(struct log_fields){.duration_ms = -1},
			  "response to unknown request %s ignored", j->req_id);
	else if (rc != STATUS_OK)
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "a client's answer to request %s was lost: %s",
			 j->req_id, status_str(rc));
	finish(j, rc, err);
}

void
sessstore_answer(struct sessstore *st, struct session *s, const char *req_id,
		 const json_t *msg)
{
	struct job *j = job_new(st, answer_fn, "answer");

	if (j == NULL)
		return;
	snprintf(j->key, sizeof(j->key), "%s", s->key);
	snprintf(j->req_id, sizeof(j->req_id), "%s", req_id);
	j->text = json_dumps(msg, JSON_COMPACT);
	if (j->text == NULL) {
		job_free(j);
		j = NULL;
	}
	if (j == NULL || job_submit(j) != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "a client's answer to request %s was lost: the "
			 "session store is busy",
			 req_id);
}

static void
cancel_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	if (c != NULL && (rc = notify_key(j->st, c, err)) == STATUS_OK)
		rc = sessdb_cancel(c, j->st->nkey, j->key, j->text, err);
	finish(j, rc, err);
}

void
sessstore_cancel(struct sessstore *st, struct session *s, const json_t *req_id)
{
	struct job *j = job_new(st, cancel_fn, "cancel");

	if (j == NULL)
		return;
	snprintf(j->key, sizeof(j->key), "%s", s->key);
	j->text = json_dumps(req_id, JSON_COMPACT | JSON_ENCODE_ANY);
	if (j->text == NULL || strlen(j->text) > 200) {
		job_free(j);
		return;
	}
	(void)job_submit(j);
}

static void
notify_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct session *s = j->s;
	char stream[32], reader[SESSDB_REPLICA_LEN + 1],
		new_id[STREAM_ID_LEN + 1];
	char *prime = NULL;
	uint64_t seq = 0;

	if (c == NULL)
		goto out;
	if ((rc = new_standalone(st, s, new_id, &prime)) != STATUS_OK)
		goto out;
	rc = sessdb_notify(c, st->replica, s->key, new_id, prime, j->text,
			   st->cfg->server.sse_replay_events, stream, &seq,
			   reader, err);
	/* the reader is here: its mirror reads the event at once */
	if (rc == STATUS_OK && strcmp(reader, st->replica) == 0)
		rc = refill_mirror(st, c, s, stream, err);
	if (rc == STATUS_NOTFOUND)
		rc = STATUS_OK;
out:
	if (rc != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "notification dropped: %s", status_str(rc));
	free(prime);
	finish(j, rc, err);
}

void
sessstore_notify(struct sessstore *st, struct session *s, json_t *msg)
{
	struct job *j = job_new(st, notify_fn, "notify");

	if (j == NULL) {
		json_decref(msg);
		return;
	}
	session_ref(s);
	j->s = s;
	j->text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (j->text == NULL) {
		job_free(j);
		return;
	}
	if (job_submit(j) != STATUS_OK)
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "notification dropped: the session store is busy");
}

/* --- pending server-to-client requests -------------------------------- */

/* The row of a waiting server-to-client request, added or dropped on
 * the calling (worker) thread. */
static int
pending_row(struct sessstore *st, struct session *s, const char *req_id,
	    bool add)
{
	struct pg_conn *c = NULL;
	struct pg_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = pg_acquire(st->pg, NULL, -1, &c, &err);
	if (rc == STATUS_OK)
		rc = add ? sessdb_pending_add(c, s->key, req_id, st->replica,
					      &err)
			 : sessdb_pending_drop(c, s->key, req_id, &err);
	pg_release(c);
	note(st, rc, &err);
	return rc;
}

int
sessstore_pending_add(struct sessstore *st, struct session *s,
		      const char *req_id)
{
	return pending_row(st, s, req_id, true);
}

void
sessstore_pending_drop(struct sessstore *st, struct session *s,
		       const char *req_id)
{
	/* a failure leaves the row to the sweep */
	(void)pending_row(st, s, req_id, false);
}

/* Answers stored for our requests: hand each to its waiting call. */
static int
take_answers(struct sessstore *st, struct pg_conn *c, struct pg_error *err)
{
	PGresult *rows = NULL;
	int rc, i;

	rc = sessdb_pending_take(c, st->replica, &rows, err);
	for (i = 0; rc == STATUS_OK && i < PQntuples(rows); i++) {
		struct session *s = find_key(st, PQgetvalue(rows, i, 0));
		const char *id = PQgetvalue(rows, i, 1);
		json_t *msg = json_loads(PQgetvalue(rows, i, 2), 0, NULL);
		struct pending *p;

		if (s != NULL && msg != NULL) {
			pthread_mutex_lock(&s->mu);
			for (p = s->pending; p != NULL; p = p->next)
				if (!p->answered && strcmp(p->id, id) == 0)
					break;
			if (p != NULL) {
				p->result = json_incref(
					json_object_get(msg, "result"));
				p->error = json_incref(
					json_object_get(msg, "error"));
				p->answered = true;
				call_wake_locked(p->call);
			}
			pthread_mutex_unlock(&s->mu);
		}
		json_decref(msg);
		session_unref(s);
	}
	PQclear(rows);
	return rc;
}

/* --- NOTIFYs ------------------------------------------------------------ */

/* Re-reads a resident copy's level and subscriptions (a change made on
 * another replica); forgets it when the session is gone. */
static int
refresh_copy(struct sessstore *st, struct pg_conn *c, struct session *s,
	     struct pg_error *err)
{
	struct sessdb_session *row = NULL;
	json_t *subs;
	int rc;

	rc = sessdb_get(c, s->key, &row, err);
	if (rc == STATUS_OK &&
	    (subs = json_loads(row->subscriptions, 0, NULL)) != NULL) {
		pthread_mutex_lock(&s->mu);
		if (row->rev > s->rev) {
			s->rev = row->rev;
			s->log_level = row->log_level;
			json_decref(s->subscriptions);
			s->subscriptions = subs;
			subs = NULL;
		}
		pthread_mutex_unlock(&s->mu);
		json_decref(subs);
	}
	if (rc == STATUS_NOTFOUND) {
		tomb_add(st, s->key);
		session_forget(st->srv->sessions, s);
		rc = STATUS_OK;
	}
	sessdb_session_free(row);
	return rc;
}

/* Every resident shared copy, with a reference each. */
struct resident {
	struct session **v;
	size_t n, cap;
	bool nomem;
};

static void
collect_shared(struct session *s, void *arg)
{
	struct resident *r = arg;

	if (!s->shared || r->nomem)
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap != 0 ? 2 * r->cap : 256;
		struct session **v = realloc(r->v, cap * sizeof(*v));

		if (v == NULL) {
			r->nomem = true;
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	session_ref(s);
	r->v[r->n++] = s;
}

/* Checks the copies v[0..n) (n <= MAX_TOUCH_KEYS) against their rows. */
static int
revalidate_some(struct sessstore *st, struct pg_conn *c, struct session **v,
		size_t n, struct pg_error *err)
{
	const char *keys[MAX_TOUCH_KEYS];
	PGresult *rows = NULL;
	bool storing;
	size_t i;
	int rc, k;

	for (i = 0; i < n; i++)
		keys[i] = v[i]->key;
	rc = sessdb_revs(c, keys, n, &rows, err);
	for (k = 0; rc == STATUS_OK && k < PQntuples(rows); k++) {
		const char *key = PQgetvalue(rows, k, 0);
		int64_t rev = 0;

		for (i = 0; i < n && strcmp(v[i]->key, key) != 0; i++)
			;
		if (i == n)
			continue;
		pthread_mutex_lock(&v[i]->mu);
		storing = v[i]->storing;
		pthread_mutex_unlock(&v[i]->mu);
		if (PQgetisnull(rows, k, 1)) {
			/* a session being created here is not there yet: its
			 * insert answers for it */
			if (!storing) {
				tomb_add(st, key);
				session_forget(st->srv->sessions, v[i]);
			}
		} else if (pg_text_i64(PQgetvalue(rows, k, 1), &rev) ==
			   STATUS_OK) {
			bool changed;

			pthread_mutex_lock(&v[i]->mu);
			changed = rev != v[i]->rev;
			pthread_mutex_unlock(&v[i]->mu);
			if (changed)
				rc = refresh_copy(st, c, v[i], err);
		}
	}
	PQclear(rows);
	return rc;
}

/*
 * After the listener reconnected, the NOTIFYs sent meanwhile are lost:
 * every resident copy (compact ones too: they may serve the next outage)
 * is checked against its row (gone: forgotten; changed: re-read), a
 * thousand per statement.
 */
static int
revalidate(struct sessstore *st, struct pg_conn *c, struct pg_error *err)
{
	struct resident r = {0};
	size_t i, n;
	int rc = STATUS_OK;

	session_table_foreach(st->srv->sessions, collect_shared, &r);
	if (r.nomem)
		rc = STATUS_NOMEM;
	for (i = 0; rc == STATUS_OK && i < r.n; i += n) {
		n = r.n - i < MAX_TOUCH_KEYS ? r.n - i : MAX_TOUCH_KEYS;
		rc = revalidate_some(st, c, r.v + i, n, err);
	}
	for (i = 0; i < r.n; i++)
		session_unref(r.v[i]);
	free(r.v);
	return rc;
}

static void
notified_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct session *s;

	if (c == NULL)
		goto out;
	switch (j->note) {
	case 'a': rc = take_answers(st, c, err); break;
	case 'd': {
		struct sessdb_session *row = NULL;

		/* any database user can NOTIFY: believe the table */
		rc = sessdb_get(c, j->key, &row, err);
		sessdb_session_free(row);
		if (rc != STATUS_NOTFOUND)
			break;
		rc = STATUS_OK;
		tomb_add(st, j->key); /* before looking: see lookup_fn */
		s = find_key(st, j->key);
		if (s != NULL) {
			session_forget(st->srv->sessions, s);
			session_unref(s);
		}
		/* deleted by a replica waiting for us to drop our copy */
		if (j->req_id[0] != '\0' &&
		    strcmp(j->req_id, st->replica) != 0 &&
		    (rc = notify_key(st, c, err)) == STATUS_OK)
			rc = sessdb_ack(c, st->nkey, j->req_id, j->key,
					st->replica, err);
		break;
	}
	case 'u':
		s = find_key(st, j->key);
		if (s != NULL)
			rc = refresh_copy(st, c, s, err);
		session_unref(s);
		break;
	case 'c': {
		json_t *id = json_loads(j->req_id, JSON_DECODE_ANY, NULL);

		s = find_key(st, j->key);
		if (s != NULL && id != NULL)
			(void)call_cancel_request(s, id);
		json_decref(id);
		session_unref(s);
		break;
	}
	default: break;
	}
out:
	finish(j, rc, err);
}

int
sessstore_parse_note(const char *payload, struct sessstore_note *out)
{
	const char *p = payload, *rest;
	size_t i, len;

	memset(out, 0, sizeof(*out));
	if (strchr("acdeux", p[0]) == NULL || p[0] == '\0' || p[1] != ' ')
		return STATUS_INVALID;
	out->kind = p[0];
	p += 2;
	for (i = 0; i < SESSDB_KEY_LEN; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		      (p[i] >= 'a' && p[i] <= 'f')))
			return STATUS_INVALID;
	memcpy(out->key, p, SESSDB_KEY_LEN);
	p += SESSDB_KEY_LEN;
	if (*p == '\0') /* "d <key>" and "u <key>" may stop here */
		return strchr("du", out->kind) != NULL ? STATUS_OK
						       : STATUS_INVALID;
	if (*p != ' ')
		return STATUS_INVALID;
	rest = p + 1;
	len = strlen(rest);
	if (len == 0 || len >= sizeof(out->rest))
		return STATUS_INVALID;
	for (i = 0; i < len; i++)
		if ((unsigned char)rest[i] < 0x20 || rest[i] == 0x7f)
			return STATUS_INVALID;
	memcpy(out->rest, rest, len + 1);
	return STATUS_OK;
}

/* Listener thread: queue and return.  Any database user can NOTIFY any
 * channel: a payload that is not ours is dropped. */
static void
on_notify(void *arg, const char *channel, const char *payload)
{
	struct sessstore *st = arg;
	struct sessstore_note n;
	struct job *j;
	char body[sizeof(n.rest) + SESSDB_KEY_LEN + 8];
	size_t len;

	(void)channel;
	/* cancels and acks act on what they say: only signed ones */
	if (payload[0] == 'c' || payload[0] == 'x') {
		if (!atomic_load(&st->nkey_ok) ||
		    sessdb_verify(st->nkey, payload, &len) != STATUS_OK ||
		    len >= sizeof(body)) {
			log_debug(&(struct log_fields){.duration_ms = -1},
				  "notification ignored: not signed with the "
				  "session store's key");
			return;
		}
		memcpy(body, payload, len);
		body[len] = '\0';
		payload = body;
	}
	if (sessstore_parse_note(payload, &n) != STATUS_OK) {
		log_debug(&(struct log_fields){.duration_ms = -1},
			  "notification ignored: not a session store one");
		return;
	}
	if (n.kind == 'x') {
		acked(st, n.key, n.rest);
		return;
	}
	if (n.kind == 'e') {
		queue_fetch(st, NULL, n.key, n.rest);
		return;
	}
	j = job_new(st, notified_fn, "notified");
	if (j == NULL)
		return;
	j->note = n.kind;
	memcpy(j->key, n.key, sizeof(j->key));
	memcpy(j->req_id, n.rest, sizeof(j->req_id));
	(void)job_submit(j);
}

static void
on_connect(void *arg, uint64_t epoch)
{
	struct sessstore *st = arg;

	/* NOTIFYs sent while we were away are lost: read the tables */
	if (epoch > 1) {
		atomic_store(&st->revalidate, true);
		atomic_store(&st->catchup, true);
	}
}

static void
on_lost(void *arg, const char *detail)
{
	(void)arg;
	log_warn(&(struct log_fields){.duration_ms = -1},
		 "session store: notification connection lost (%s); "
		 "reconnecting",
		 detail);
}

/* --- the janitor ------------------------------------------------------- */

struct scan {
	struct sessstore *st;
	int64_t now, since;
	const char **keys;
	size_t nkeys;
	bool catchup;
	struct session **mirrored; /* sessions with a mirror being read */
	size_t nmirrored;
};

static void
scan_one(struct session *s, void *arg)
{
	struct scan *sc = arg;
	struct stream *stm;
	bool mirrored = false;

	if (!s->shared)
		return;
	pthread_mutex_lock(&s->mu);
	if (sc->keys != NULL && sc->nkeys < MAX_TOUCH_KEYS &&
	    (s->busy > 0 || s->live_streams > 0 ||
	     s->last_active_ms >= sc->since))
		if ((sc->keys[sc->nkeys] = strdup(s->key)) != NULL)
			sc->nkeys++;
	for (stm = s->streams; stm != NULL; stm = stm->next) {
		if (stm->mirror && stm->attached && !stm->done)
			mirrored = true;
		if (!stm->gated || stm->flushing || stm->lost ||
		    (stm->flushed >= stm->next_seq &&
		     !(stm->done && !stm->done_stored)))
			continue;
		queue_flush(sc->st, s, stm); /* a flush that failed */
	}
	pthread_mutex_unlock(&s->mu);
	if (mirrored && sc->catchup && sc->nmirrored < MAX_TOUCH_KEYS) {
		session_ref(s);
		sc->mirrored[sc->nmirrored++] = s;
	}
}

static void
catch_up_mirrors(struct sessstore *st, struct session *s)
{
	struct stream *stm;
	char ids[SESSION_MAX_KEPT_STREAMS][STREAM_ID_LEN + 1];
	int n = 0, i;

	pthread_mutex_lock(&s->mu);
	for (stm = s->streams; stm != NULL && n < SESSION_MAX_KEPT_STREAMS;
	     stm = stm->next)
		if (stm->mirror && stm->attached && !stm->done)
			snprintf(ids[n++], sizeof(ids[0]), "%s", stm->id);
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < n; i++)
		queue_fetch(st, s, s->key, ids[i]);
}

/* Sessions used here get last_active = now() this often: a tenth of the
 * idle timeout, 1 to 30 s. */
static int64_t
touch_every_ms(const struct sessstore *st)
{
	int every = st->cfg->server.session_idle_timeout_s / 10;

	return (int64_t)(every < 1 ? 1 : every > 30 ? 30 : every) * 1000;
}

/*
 * Whether this replica may end other replicas' streams: only after its
 * own heartbeats have succeeded for longer than the timeout.  After an
 * outage every heartbeat is old; the first replica back must not take the
 * others' work before they had the time to beat again.
 */
static bool
may_take_over(struct sessstore *st, int64_t now_ms)
{
	int64_t since = atomic_load(&st->healthy_since_ms);

	return since != 0 &&
	       now_ms - since >
		       (int64_t)st->cfg->sessions.replica_timeout_s * 1000 +
			       1000;
}

static void
janitor_fn(struct job *j, struct pg_conn *c, int rc, struct pg_error *err)
{
	struct sessstore *st = j->st;
	struct scan sc = {.st = st, .now = j->now_ms};
	PGresult *rows = NULL;
	size_t i;
	int k;

	/* flush retries need no database here: always */
	if (c != NULL && j->now_ms >= st->next_touch_ms) {
		sc.keys = calloc(MAX_TOUCH_KEYS, sizeof(*sc.keys));
		sc.since = st->last_touch_ms - 1000;
	}
	sc.catchup = c != NULL && (atomic_exchange(&st->catchup, false) ||
				   j->now_ms >= st->next_catchup_ms);
	if (sc.catchup) {
		st->next_catchup_ms = j->now_ms + CATCHUP_EVERY_MS;
		sc.mirrored = calloc(MAX_TOUCH_KEYS, sizeof(*sc.mirrored));
	}
	session_table_foreach(st->srv->sessions, scan_one, &sc);
	for (i = 0; i < sc.nmirrored; i++) {
		catch_up_mirrors(st, sc.mirrored[i]);
		session_unref(sc.mirrored[i]);
	}
	if (c == NULL) {
		atomic_store(&st->healthy_since_ms, 0);
		goto out;
	}
	if (!atomic_load(&st->registered) ||
	    (rc = sessdb_heartbeat(c, st->replica, err)) == STATUS_NOTFOUND) {
		if (atomic_load(&st->draining))
			goto out;
		rc = sessdb_register(c, st->replica, st->host, (int)getpid(),
				     err);
		if (rc == STATUS_OK)
			atomic_store(&st->registered, true);
	}
	if (rc != STATUS_OK) {
		atomic_store(&st->healthy_since_ms, 0);
		goto out;
	}
	if (atomic_load(&st->healthy_since_ms) == 0)
		atomic_store(&st->healthy_since_ms, j->now_ms);
	if (!atomic_load(&st->nkey_ok)) {
		/* early, so that signed notifications are believed from the
		 * start; a failure here only delays that */
		struct pg_error kerr;

		memset(&kerr, 0, sizeof(kerr));
		if (notify_key(st, c, &kerr) != STATUS_OK)
			log_debug(&(struct log_fields){.duration_ms = -1},
				  "notification key not loaded yet: %s",
				  kerr.detail);
	}
	if (sc.keys != NULL &&
	    (sc.nkeys == 0 ||
	     (rc = sessdb_touch(c, sc.keys, sc.nkeys, err)) == STATUS_OK)) {
		/* only now: a failed round is touched again next time */
		st->last_touch_ms = j->now_ms;
		st->next_touch_ms = j->now_ms + touch_every_ms(st);
	}
	if (sc.catchup)
		(void)take_answers(st, c, err);
	if (atomic_exchange(&st->revalidate, false) &&
	    revalidate(st, c, err) != STATUS_OK)
		atomic_store(&st->revalidate, true); /* next round */
	/* one replica a round expires sessions and ends dead replicas'
	 * streams */
	if (j->now_ms >= st->next_sweep_ms) {
		int expired = 0;

		st->next_sweep_ms = j->now_ms + SWEEP_EVERY_MS;
		rc = sessdb_sweep(c, st->cfg->server.session_idle_timeout_s,
				  st->cfg->sessions.stream_keep_s,
				  st->cfg->workers.client_request_timeout_s +
					  60,
				  &expired, err);
		if (rc == STATUS_AGAIN)
			rc = STATUS_OK;
		if (expired > 0)
			log_info(&(struct log_fields){.duration_ms = -1},
				 "%d shared session(s) expired after %d s idle",
				 expired,
				 st->cfg->server.session_idle_timeout_s);
	}
	if (rc == STATUS_OK && may_take_over(st, j->now_ms))
		rc = sessdb_orphans(c, st->cfg->sessions.replica_timeout_s,
				    &rows, err);
	for (k = 0; rc == STATUS_OK && k < PQntuples(rows); k++) {
		int trc = take_over(
			st, c, PQgetvalue(rows, k, 0), PQgetvalue(rows, k, 1),
			PQgetvalue(rows, k, 2), PQgetvalue(rows, k, 3), err);

		if (trc != STATUS_OK && trc != STATUS_NOTFOUND)
			rc = trc;
	}
out:
	PQclear(rows);
	for (i = 0; i < sc.nkeys; i++)
		free((char *)sc.keys[i]);
	free(sc.keys);
	free(sc.mirrored);
	atomic_store(&st->janitor_busy, false);
	finish(j, rc, err);
}

void
sessstore_tick(struct sessstore *st, int64_t now_ms)
{
	struct job *j;

	if (st == NULL)
		return;
	acks_settle(st, now_ms, false);
	if (atomic_load(&st->draining) ||
	    atomic_exchange(&st->janitor_busy, true))
		return;
	j = job_new(st, janitor_fn, "janitor");
	if (j == NULL) {
		atomic_store(&st->janitor_busy, false);
		return;
	}
	j->now_ms = now_ms;
	if (pool_submit(st->jpool, &j->pj) != STATUS_OK) {
		job_free(j);
		atomic_store(&st->janitor_busy, false);
	}
}

/* --- life cycle ---------------------------------------------------------- */

bool
sessstore_wanted(const struct server *srv)
{
	const struct config *cfg = srv->cfg;

	return cfg->database.url[0] != '\0' &&
	       strcmp(cfg->sessions.store, "memory") != 0;
}

static bool
sessstore_up(struct sessstore *st)
{
	return st != NULL && atomic_load(&st->up);
}

const char *
sessstore_tag(const struct sessstore *st)
{
	return st->tag;
}

void
sessstore_hit(struct sessstore *st)
{
	expo_inc(st->hits);
}

static double
gauge_up(void *arg)
{
	return sessstore_up(arg) ? 1 : 0;
}

/*
 * Whether this database role can keep sessions: STATUS_OK, STATUS_IO when
 * the database cannot be asked now (then it will be used when it is
 * back), STATUS_UNSUPPORTED with why (tables missing, no privilege).
 */
static int
probe(const struct config *cfg, char *why, size_t len)
{
	static const char sql[] =
		/* one privilege per call: with a list it is "any of" */
		"SELECT (SELECT bool_and(has_table_privilege(t, p)) FROM "
		"unnest(ARRAY["
		"'mcp_replicas', 'mcp_sessions', 'mcp_streams', 'mcp_events', "
		"'mcp_pending', 'mcp_notify_key']) AS t, unnest(ARRAY["
		"'SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS p) AND "
		/* its triggers update the session count as the role that
		 * inserts or deletes (0011) */
		"has_table_privilege('mcp_session_count', 'SELECT') AND "
		"has_table_privilege('mcp_session_count', 'UPDATE')";
	const char *keys[] = {"dbname", "connect_timeout", "application_name",
			      NULL};
	const char *vals[] = {cfg->database.url, "5", "sextant-sessions", NULL};
	PGconn *conn = PQconnectdbParams(keys, vals, 1);
	PGresult *res = NULL;
	int rc = STATUS_IO;

	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		goto out;
	res = PQexec(conn, sql);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		rc = PQgetvalue(res, 0, 0)[0] == 't' ? STATUS_OK
						     : STATUS_UNSUPPORTED;
		if (rc != STATUS_OK)
			snprintf(why, len,
				 "the database role lacks INSERT, UPDATE or "
				 "DELETE on the mcp_* tables: grant them, or "
				 "set sessions.store = \"memory\"");
	} else if (PQresultStatus(res) == PGRES_FATAL_ERROR &&
		   strcmp(PQresultErrorField(res, PG_DIAG_SQLSTATE) != NULL
				  ? PQresultErrorField(res, PG_DIAG_SQLSTATE)
				  : "",
			  "42P01") == 0) {
		rc = STATUS_UNSUPPORTED;
		snprintf(why, len,
			 "the session tables are missing: run `sextant "
			 "migrate`");
	}
out:
	PQclear(res);
	PQfinish(conn);
	return rc;
}

int
sessstore_new(struct server *srv, struct sessstore **out, char *err,
	      size_t errlen)
{
	const struct config *cfg = srv->cfg;
	struct sessstore *st;
	struct pg_error perr;
	const char *channels[2];
	char why[256];
	int rc;

	*out = NULL;
	rc = probe(cfg, why, sizeof(why));
	if (rc == STATUS_UNSUPPORTED &&
	    strcmp(cfg->sessions.store, "auto") == 0) {
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "sessions stay in this process (a client must come "
			 "back to this gateway): %s",
			 why);
		return STATUS_OK;
	}
	if (rc == STATUS_UNSUPPORTED) {
		snprintf(err, errlen, "sessions.store = \"database\": %s", why);
		return STATUS_INVALID;
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return STATUS_NOMEM;
	st->srv = srv;
	st->cfg = cfg;
	atomic_init(&st->up, true);
	pthread_mutex_init(&st->ack_mu, NULL);
	pthread_mutex_init(&st->load_mu, NULL);
	if ((rc = auth_random_hex(st->replica, sizeof(st->replica),
				  SESSDB_REPLICA_LEN / 2)) != STATUS_OK) {
		snprintf(err, errlen, "session store: no randomness");
		goto fail;
	}
	memcpy(st->tag, st->replica, 8);
	if (gethostname(st->host, sizeof(st->host)) != 0)
		snprintf(st->host, sizeof(st->host), "unknown");
	st->host[sizeof(st->host) - 1] = '\0';
	snprintf(st->channel, sizeof(st->channel), "%s%s",
		 SESSDB_REPLICA_PREFIX, st->replica);
	st->ops = expo_family(srv->expo, EXPO_COUNTER,
			      "sextant_session_store_ops_total",
			      "Shared-session store operations by kind and "
			      "outcome",
			      "op,outcome", NULL, 0);
	st->takeovers = expo_series(
		expo_family(srv->expo, EXPO_COUNTER,
			    "sextant_session_takeovers_total",
			    "Streams of stopped replicas ended here", NULL,
			    NULL, 0),
		NULL);
	{
		struct expo_family *f = expo_family(
			srv->expo, EXPO_COUNTER, "sextant_session_cache_total",
			"Requests of shared sessions by whether the session "
			"was in this gateway's memory (hit) or loaded from the "
			"store (miss)",
			"result", NULL, 0);

		st->hits = expo_series(f, (const char *[]){"hit"});
		st->misses = expo_series(f, (const char *[]){"miss"});
	}
	if (st->ops == NULL || st->takeovers == NULL || st->hits == NULL ||
	    st->misses == NULL ||
	    expo_gauge_fn(srv->expo, "sextant_session_store_up",
			  "1 while the shared-session store answers", gauge_up,
			  st) != STATUS_OK) {
		rc = STATUS_NOMEM;
		snprintf(err, errlen, "session store: out of memory");
		goto fail;
	}
	{
		struct pg_pool_config pc = {
			.conninfo = cfg->database.url,
			/* the store threads, plus tool workers adding and
			 * dropping pending requests */
			.size = cfg->sessions.store_threads + 2,
			.statement_timeout_ms = cfg->sessions.store_timeout_ms,
			.acquire_timeout_ms = cfg->sessions.store_timeout_ms,
		};

		if ((rc = pg_pool_new(&pc, &st->pg, &perr)) != STATUS_OK) {
			snprintf(err, errlen, "session store: %s", perr.client);
			goto fail;
		}
	}
	if ((rc = pool_new(cfg->sessions.store_threads, STORE_QUEUE,
			   &st->pool)) != STATUS_OK ||
	    (rc = pool_new(1, 4, &st->jpool)) != STATUS_OK) {
		snprintf(err, errlen, "session store: cannot start threads");
		goto fail;
	}
	channels[0] = SESSDB_CHANNEL;
	channels[1] = st->channel;
	{
		struct pglisten_config lc = {
			.conninfo = cfg->database.url,
			.channels = channels,
			.nchannels = 2,
			.on_notify = on_notify,
			.on_connect = on_connect,
			.on_lost = on_lost,
			.arg = st,
		};

		if ((rc = pglisten_start(&lc, &st->listen, &perr)) !=
		    STATUS_OK) {
			snprintf(err, errlen, "session store: %s", perr.client);
			goto fail;
		}
	}
	log_info(&(struct log_fields){.duration_ms = -1},
		 "sessions are shared through the database (replica %s)",
		 st->replica);
	*out = st;
	sessstore_tick(st, clock_mono_ms()); /* register now */
	return STATUS_OK;
fail:
	sessstore_free(st);
	return rc;
}

void
sessstore_drain(struct sessstore *st)
{
	struct pg_conn *c = NULL;
	struct pg_error err;

	if (st == NULL)
		return;
	atomic_store(&st->draining, true);
	/* a last flush of what is queued, then we are dead to the others:
	 * they end what we leave open */
	/* every job is bounded (statement and acquire timeouts): waiting
	 * for all means no request stays parked when HTTP stops */
	(void)!pool_drain(st->jpool, -1);
	(void)!pool_drain(st->pool, -1);
	acks_settle(st, 0, true); /* DELETEs waiting for confirmations */
	if (pg_acquire(st->pg, NULL, -1, &c, &err) == STATUS_OK)
		(void)!sessdb_retire(c, st->replica, &err);
	pg_release(c);
}

void
sessstore_free(struct sessstore *st)
{
	if (st == NULL)
		return;
	pglisten_stop(st->listen);
	pool_free(st->jpool);
	pool_free(st->pool);
	pg_pool_free(st->pg);
	/* sessstore_drain answered every handed-over DELETE and let no new
	 * one wait; what is left belongs to nobody (a failed start) */
	while (st->acks != NULL) {
		struct ack_wait *w = st->acks;

		st->acks = w->next;
		ack_wait_free(w);
	}
	pthread_mutex_destroy(&st->ack_mu);
	pthread_mutex_destroy(&st->load_mu);
	free(st);
}

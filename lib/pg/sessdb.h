/*
 * sessdb.h - the statements of shared MCP sessions (migrations 0009-0011): the
 * session rows, their streams' events, server-to-client requests waiting
 * for an answer, the replicas' heartbeats, expiry and takeover.
 *
 * Knows nothing of MCP: sessions carry opaque JSON text and events are
 * stored exactly as encoded by the caller.  Every function runs on a
 * leased connection (lib/pg), outside any transaction unless it says so,
 * and returns lib/pg's statuses (STATUS_IO, STATUS_TIMEOUT, ...) with err
 * (required: never NULL) filled on failure.  Keys are sessdb_key of the
 * session id: the id is a bearer secret and never reaches the database or
 * a NOTIFY payload.
 *
 * The number of sessions stored is kept by triggers (migration 0011):
 * sessdb_insert checks the caller's limit against it.
 *
 * Notifications (payloads are ASCII tokens, at most ~80 bytes):
 *   sextant_sessions       "d <key>"            session deleted or expired
 *                          "d <key> <replica>"  deleted by that replica: ack
 *                          "u <key> <rev>"      level or subscriptions changed
 *                          "c <key> <id json>"  cancel a request of the session
 *   sextant_r_<replica>    "e <key> <stream>"   new events for a reader there
 *                          "a <key> <id>"       an answer for a call there
 *                          "x <key> <replica>"  that replica dropped the session
 */
#ifndef SEXTANT_SESSDB_H
#define SEXTANT_SESSDB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

#define SESSDB_KEY_LEN	   32 /* hex of 16 bytes of SHA-256 */
#define SESSDB_REPLICA_LEN 16 /* hex */
#define SESSDB_CHANNEL	   "sextant_sessions"
/* Channel of one replica: SESSDB_REPLICA_PREFIX + its id. */
#define SESSDB_REPLICA_PREFIX "sextant_r_"
/* Subscriptions a session may hold (as in memory). */
#define SESSDB_MAX_SUBSCRIPTIONS 1000

/* key = hex(SHA-256(id))[0:32]. */
void sessdb_key(const char *session_id, char key[SESSDB_KEY_LEN + 1]);

/* --- signed notifications (migration 0010) ------------------------------
 * "c" and "x" notifications act on their payload alone, and any role
 * that can connect may NOTIFY: they carry " " + SESSDB_SIG_LEN hex of
 * HMAC-SHA256(notify key, payload), and a gateway drops them unsigned or
 * signed otherwise.  The key is a row only the gateways' role can read. */
#define SESSDB_NOTIFY_KEY_BYTES 32
#define SESSDB_SIG_LEN		32 /* hex of the first 16 bytes of the MAC */

/* The stored notify key into key; when there is none, stores fresh (the
 * caller's random bytes) first, so every replica ends up with one key. */
int sessdb_notify_key(struct pg_conn *c,
		      const uint8_t fresh[SESSDB_NOTIFY_KEY_BYTES],
		      uint8_t key[SESSDB_NOTIFY_KEY_BYTES],
		      struct pg_error *err) WUR;
/* payload, " " and its signature into out (cap bytes with the NUL):
 * STATUS_LIMIT when it does not fit. */
int sessdb_sign(const uint8_t key[SESSDB_NOTIFY_KEY_BYTES], const char *payload,
		char *out, size_t cap) WUR;
/* STATUS_OK when signed ends in " " + the signature of what precedes it
 * (its length into *len), else STATUS_INVALID.  Constant-time compare. */
int sessdb_verify(const uint8_t key[SESSDB_NOTIFY_KEY_BYTES],
		  const char *signed_payload, size_t *len) WUR;

/* --- replicas --------------------------------------------------------- */

/* Inserts or refreshes this replica's row. */
int sessdb_register(struct pg_conn *c, const char *replica, const char *host,
		    int pid, struct pg_error *err) WUR;
/* seen_at = now().  STATUS_NOTFOUND when the row is gone (register
 * again) or retired (sessdb_retire: registering would revive it). */
int sessdb_heartbeat(struct pg_conn *c, const char *replica,
		     struct pg_error *err) WUR;
/* Marks this replica dead at once (clean shutdown): others take over its
 * open streams on their next round. */
int sessdb_retire(struct pg_conn *c, const char *replica,
		  struct pg_error *err) WUR;

/* --- sessions --------------------------------------------------------- */

struct sessdb_session {
	char key[SESSDB_KEY_LEN + 1];
	char version[16];
	char owner[40];	     /* who opened it (migration 0017); "" none */
	char *caps, *info;   /* compact JSON objects; owned */
	char *subscriptions; /* JSON object uri -> true; owned */
	int log_level;
	int64_t rev;
};
void sessdb_session_free(struct sessdb_session *s); /* accepts NULL */

/*
 * Stores a new session unless max sessions are stored already, by any
 * gateway (the count of migration 0011, exact: two inserts racing for the
 * last place cannot both pass).  STATUS_FULL at the limit, STATUS_EXISTS
 * when the key is taken (a 128-bit id clash: retry).
 */
int sessdb_insert(struct pg_conn *c, const struct sessdb_session *s, int max,
		  struct pg_error *err) WUR;
/* Seconds until the least recently active session expires, unless it is
 * used meanwhile (its last_active + idle_s; 0 when past or none): when a
 * full store has room again at the latest. */
int sessdb_next_expiry(struct pg_conn *c, int idle_s, int *secs,
		       struct pg_error *err) WUR;
/* *out: a new struct (sessdb_session_free), or STATUS_NOTFOUND. */
int sessdb_get(struct pg_conn *c, const char *key, struct sessdb_session **out,
	       struct pg_error *err) WUR;
/* Sets the level, bumps rev, NOTIFYs "u"; *rev gets the new one.
 * STATUS_NOTFOUND when the session is gone. */
int sessdb_set_level(struct pg_conn *c, const char *key, int level,
		     int64_t *rev, struct pg_error *err) WUR;
/*
 * Adds (on) or removes uri in the subscriptions in one statement (two
 * replicas changing them at once lose nothing), bumps rev, NOTIFYs "u".
 * *subs gets the new object as JSON text (owned).  STATUS_FULL past
 * SESSDB_MAX_SUBSCRIPTIONS, STATUS_NOTFOUND when the session is gone.
 */
int sessdb_subscribe(struct pg_conn *c, const char *key, const char *uri,
		     bool on, int64_t *rev, char **subs,
		     struct pg_error *err) WUR;
/* Deletes the session (streams, events, pending with it) and NOTIFYs
 * "d <key>", or "d <key> <by>" when by (the deleting replica, which wants
 * an "x" from each replica once it has dropped its copy) is not NULL.
 * STATUS_NOTFOUND when there was none. */
int sessdb_delete(struct pg_conn *c, const char *key, const char *by,
		  struct pg_error *err) WUR;
/* NOTIFYs "x <key> <replica>", signed with nkey, to replica `to`: the
 * session is gone here. */
int sessdb_ack(struct pg_conn *c, const uint8_t nkey[SESSDB_NOTIFY_KEY_BYTES],
	       const char *to, const char *key, const char *replica,
	       struct pg_error *err) WUR;
/* The other replicas alive (heartbeat within dead_s): rows (id), at most
 * 256, PQclear'd by the caller. */
int sessdb_peers(struct pg_conn *c, const char *replica, int dead_s,
		 PGresult **rows, struct pg_error *err) WUR;
/* last_active = now() for the keys that still exist. */
int sessdb_touch(struct pg_conn *c, const char *const *keys, size_t n,
		 struct pg_error *err) WUR;
/* The current rev of each key (rows (key, rev), rev NULL for a session
 * that is gone), PQclear'd by the caller: a replica whose notifications
 * were lost checks its copies with it.  n >= 1. */
int sessdb_revs(struct pg_conn *c, const char *const *keys, size_t n,
		PGresult **rows, struct pg_error *err) WUR;
/* NOTIFYs "c <key> <idjson>", signed with nkey (idjson: compact JSON, at
 * most 200 bytes). */
int sessdb_cancel(struct pg_conn *c,
		  const uint8_t nkey[SESSDB_NOTIFY_KEY_BYTES], const char *key,
		  const char *idjson, struct pg_error *err) WUR;

/* --- streams ---------------------------------------------------------- */

/* One flush of a POST stream by its owner: n events numbered from seq
 * (following what is stored) with their encoded text. */
struct sessdb_append {
	const char *replica, *key, *stream;
	const char *requests; /* JSON array of the request ids it answers */
	size_t n;
	uint64_t seq;
	const char *const *data;
	uint64_t first; /* events below it are dropped (0: keep) */
	bool done;
};
/*
 * Stores the flush; reader gets the stream's reader replica ("" for
 * none).  STATUS_CLOSED when the stream is no longer this replica's
 * (taken over) or the numbers do not follow on; STATUS_NOTFOUND when the
 * session is gone; STATUS_INVALID when an event is not UTF-8.  Nothing is
 * stored on an error.
 */
int sessdb_append(struct pg_conn *c, const struct sessdb_append *a,
		  char reader[SESSDB_REPLICA_LEN + 1],
		  struct pg_error *err) WUR;
/*
 * Appends one message (compact JSON, no line break) to the session's
 * standalone stream, creating it as new_id with prime (an encoded event
 * 0, or NULL) if it has none; keeps the newest keep events.  Out: the
 * stream id, the event's number, its reader ("" for none); the reader is
 * NOTIFYed when it is not replica.  STATUS_NOTFOUND when the session is
 * gone.
 */
int sessdb_notify(struct pg_conn *c, const char *replica, const char *key,
		  const char *new_id, const char *prime, const char *json,
		  int keep, char stream[32], uint64_t *seq,
		  char reader[SESSDB_REPLICA_LEN + 1],
		  struct pg_error *err) WUR;

struct sessdb_stream {
	char id[32];
	bool standalone, done;
	uint64_t next_seq;
	uint64_t first; /* oldest stored event (next_seq when none) */
	char owner[SESSDB_REPLICA_LEN + 1]; /* "" for none */
	bool owner_dead; /* heartbeat older than the timeout, or no row */
	bool fresh;	 /* no replica had read it before */
};
/*
 * Makes replica the reader of a stream: stream_id, or the session's
 * standalone stream when NULL (created as new_id with prime when it has
 * none).  dead_s: the heartbeat age after which the owner is reported
 * dead.  STATUS_NOTFOUND when there is no such stream (or session).
 */
int sessdb_attach(struct pg_conn *c, const char *key, const char *stream_id,
		  const char *new_id, const char *prime, const char *replica,
		  int dead_s, struct sessdb_stream *out,
		  struct pg_error *err) WUR;
/*
 * Events after seq `after` (UINT64_MAX: from the oldest kept), at most
 * limit, in order: rows (done, next_seq, seq, data, reader: the
 * replica reading the stream, "" for none), PQclear'd by the caller; when no event follows `after` there is one row, with seq and
 * data NULL (skip rows whose seq is NULL).  *done and *next_seq describe
 * the stream as of the same snapshot.
 * STATUS_NOTFOUND when the stream is gone.
 */
int sessdb_read(struct pg_conn *c, const char *key, const char *stream_id,
		uint64_t after, int limit, PGresult **rows, bool *done,
		uint64_t *next_seq, struct pg_error *err) WUR;

/* --- server-to-client requests --------------------------------------- */

int sessdb_pending_add(struct pg_conn *c, const char *key, const char *id,
		       const char *owner, struct pg_error *err) WUR;
int sessdb_pending_drop(struct pg_conn *c, const char *key, const char *id,
			struct pg_error *err) WUR;
/* Stores the client's answer (whole response, JSON text) and NOTIFYs
 * the owner.  STATUS_NOTFOUND when no such request waits. */
int sessdb_pending_answer(struct pg_conn *c, const char *key, const char *id,
			  const char *answer, struct pg_error *err) WUR;
/* Answers stored for owner's requests, taken (deleted): rows (key, id,
 * answer), at most 100, PQclear'd by the caller. */
int sessdb_pending_take(struct pg_conn *c, const char *owner, PGresult **rows,
			struct pg_error *err) WUR;

/* --- upkeep ----------------------------------------------------------- */

/*
 * One replica at a time (a transaction-scoped advisory lock): deletes
 * sessions idle for idle_s (NOTIFY "d" each, at most 500 a round),
 * finished streams older than keep_s, pending requests older than
 * pending_s, and replicas dead for a minute with nothing left open.
 * *expired: sessions deleted.  STATUS_AGAIN when another replica holds
 * the lock.
 */
int sessdb_sweep(struct pg_conn *c, int idle_s, int keep_s, int pending_s,
		 int *expired, struct pg_error *err) WUR;

/*
 * Open POST streams of replicas whose heartbeat is older than dead_s:
 * rows (key, stream, owner, requests), at most 100.
 */
int sessdb_orphans(struct pg_conn *c, int dead_s, PGresult **rows,
		   struct pg_error *err) WUR;
/*
 * Ends a dead replica's stream in one transaction: under the stream's
 * lock (still open, still dead's), finish() gets its stored events (rows
 * (seq, data)) and next_seq and returns the events to add (*ev, *n:
 * owned, freed here; numbered from next_seq on); they are stored, the
 * stream is marked done and ownerless, the dead replica's pending
 * requests of the session are dropped and the reader is NOTIFYed.
 * STATUS_NOTFOUND when the stream was finished or taken meanwhile; when
 * finish fails, its status, and nothing changes.
 */
int sessdb_takeover(struct pg_conn *c, const char *key, const char *stream_id,
		    const char *dead,
		    int (*finish)(void *arg, PGresult *events,
				  uint64_t next_seq, char ***ev, size_t *n),
		    void *arg, struct pg_error *err) WUR;

#endif

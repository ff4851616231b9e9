/*
 * sessstore.h - 2025 MCP sessions shared by every gateway on one
 * database: the session store (docs/architecture.md "Sessions across
 * replicas").
 *
 * A session lives in PostgreSQL (lib/pg/sessdb); each replica keeps a
 * resident copy of the sessions it serves, so requests after the first
 * one on a replica never wait for the database.  Events that a client may
 * resume with Last-Event-ID are stored before a reader sees them, so that
 * any replica can replay them exactly once; replicas wake each other with
 * LISTEN/NOTIFY (lib/pg/pglisten); a replica that stops its heartbeat has its
 * unanswered requests answered with an error by another.
 *
 * Threads: the asynchronous calls queue a job on the store's own threads
 * (each with its own database connection) and return at once; their
 * completion runs there.  The MHD threads therefore never wait for
 * PostgreSQL.  sessstore_pending_add/_drop block: tool workers only.
 */
#ifndef SEXTANT_SESSSTORE_H
#define SEXTANT_SESSSTORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

struct server;
struct session;
struct stream;
struct exchange;
struct sessstore;

/* Whether srv's config asks for shared sessions (a database and
 * sessions.store not "memory"). */
bool sessstore_wanted(const struct server *srv);

/* Starts the store (threads, connections, listener, replica row in the
 * background: a database that is down is not an error).  With
 * sessions.store = "auto" and a role that cannot write the session tables
 * (or tables missing), *out stays NULL (sessions in memory, logged);
 * "database" makes that an error.  err: why not. */
int sessstore_new(struct server *srv, struct sessstore **out, char *err,
		  size_t errlen) WUR;
/* After the worker pool has stopped.  Accepts NULL. */
void sessstore_free(struct sessstore *st);
/* SIGTERM: this replica counts as dead at once, so another ends the
 * requests it could not answer. */
void sessstore_drain(struct sessstore *st);
/* Main thread, about once a second: schedules heartbeats, touches,
 * sweeps, takeovers, retries and catch-up reads (never runs SQL). */
void sessstore_tick(struct sessstore *st, int64_t now_ms);
/* 8 hex characters naming this replica in request ids. */
const char *sessstore_tag(const struct sessstore *st);
/* A request found its shared session resident here (a metric). */
void sessstore_hit(struct sessstore *st);

/* Completion of an asynchronous call, on a store thread: STATUS_OK,
 * STATUS_NOTFOUND (no such session or stream), STATUS_FULL (create: the
 * store holds server.max_sessions sessions; lookup: this replica's session
 * table), or the store's STATUS_IO / STATUS_TIMEOUT. */
typedef void sessstore_done_fn(void *arg, int status);

/*
 * The asynchronous calls: STATUS_OK when queued (done will run exactly
 * once), else an error at once (STATUS_FULL: the job queue) and done
 * never runs.
 *
 * create: stores the new session s (marked shared by the caller) unless
 *   the store holds server.max_sessions, counted over every replica.
 * lookup: loads session id and makes it resident in srv->sessions;
 *   lookups of one session while one is under way wait for it (one read,
 *   every done runs with its outcome).
 * delete: deletes it everywhere (this replica's copy closes too).
 * attach: makes this replica the reader of a stream of s (stream_id;
 *   NULL: its standalone stream) and fills a mirror of it with the
 *   events after `after` (UINT64_MAX: from what a new GET gets).
 * change: logging/setLevel (uri NULL, level) or resources/(un)subscribe
 *   (uri, on): stored, applied to s, then answered on ex with id.
 */
int sessstore_create(struct sessstore *st, struct session *s,
		     sessstore_done_fn *done, void *arg) WUR;
/* After a create refused with STATUS_FULL: seconds until a place is likely
 * free (the least recently active session expires, unless used, and is
 * swept), 1 to SESSSTORE_FULL_RETRY_MAX_S: a client's Retry-After.  A
 * DELETE may free one sooner; past the bound, the client asks again. */
#define SESSSTORE_FULL_RETRY_MAX_S 300
int sessstore_full_retry_s(struct sessstore *st);
int sessstore_lookup(struct sessstore *st, const char *id,
		     sessstore_done_fn *done, void *arg) WUR;
int sessstore_delete(struct sessstore *st, const char *id,
		     sessstore_done_fn *done, void *arg) WUR;
int sessstore_attach(struct sessstore *st, struct session *s,
		     const char *stream_id, uint64_t after,
		     sessstore_done_fn *done, void *arg) WUR;
int sessstore_change(struct sessstore *st, struct session *s,
		     struct exchange *ex, const json_t *id, const char *uri,
		     bool on, int level) WUR;

/* Fire and forget (logged when they fail): a client's answer to a
 * server-to-client request that another replica made; a cancel that
 * names no call here; a notification for the standalone stream (msg
 * stolen). */
void sessstore_answer(struct sessstore *st, struct session *s,
		      const char *req_id, const json_t *msg);
void sessstore_cancel(struct sessstore *st, struct session *s,
		      const json_t *req_id);
void sessstore_notify(struct sessstore *st, struct session *s, json_t *msg);

/* Tool workers: a server-to-client request of s waits under req_id (so
 * that its answer may reach any replica) / no longer waits. */
int sessstore_pending_add(struct sessstore *st, struct session *s,
			  const char *req_id) WUR;
void sessstore_pending_drop(struct sessstore *st, struct session *s,
			    const char *req_id);

/* A NOTIFY payload of the store ("<kind> <key>[ <rest>]", lib/pg/sessdb.h):
 * kind one of a c d e u x, key 32 lowercase hex, rest printable ASCII
 * below 256 bytes (required but for d and u).  STATUS_INVALID for
 * anything else: any database user can NOTIFY any channel. */
struct sessstore_note {
	char kind;
	char key[33];
	char rest[256];
};
int sessstore_parse_note(const char *payload, struct sessstore_note *out) WUR;

/* session_limits.dirty: a gated stream has events or an end to store. */
void sessstore_stream_dirty(struct stream *stm);

#endif

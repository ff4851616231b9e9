/*
 * session.h - MCP sessions and their SSE streams.
 *
 * A session is what one initialize creates: the negotiated revision, the
 * client's capabilities, its log level and subscriptions, the tool calls
 * in flight, the server-to-client requests awaiting an answer, and the SSE
 * streams with their replay logs.  The struct is visible to server/
 * modules because dispatch, call and transport all work on it; its
 * locking rule is simple:
 *
 *   - fields marked [const] are set at creation and never change;
 *   - everything else is guarded by s->mu, one mutex per session, which
 *     also guards the session's streams, calls and pending requests;
 *   - the table lock is taken only to find, add or remove a session, never
 *     while s->mu is held (the order is table -> session).
 *
 * Sessions are reference counted: the table holds one reference, and so
 * does every request, job and open stream that uses the session.  Nothing
 * here knows HTTP: a stream reaches its live connection through a wake
 * callback that the transport installs.
 */
#ifndef SEXTANT_SESSION_H
#define SEXTANT_SESSION_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/sse.h"
#include "base/status.h"
#include "mcp/rpc.h"

#define SESSION_ID_LEN 32 /* 128 random bits as hex: visible ASCII */
#define STREAM_ID_LEN  12 /* 48 random bits as hex, unique per session */
/* Streams a session keeps for replay (open or finished); the oldest
 * finished ones are dropped first.  Bounds memory per session. */
#define SESSION_MAX_KEPT_STREAMS 64

struct stream;

struct session_limits {
	int max_sessions;
	int idle_timeout_s;
	/* shared sessions: how long an unused resident copy keeps its
	 * streams (the store has them); the compact rest stays until
	 * idle_timeout_s, to answer through an outage of the store */
	int cache_idle_s;
	int max_streams; /* streams with a live connection at once */
	size_t replay_events;
	size_t replay_bytes;
	int retry_ms;
	int keepalive_s;
	/* Shared sessions: called (s->mu held, must not block) when a
	 * stream written here got events or finished, so that the store
	 * flushes it; NULL without a store. */
	void (*dirty)(struct stream *st);
};

/* What a reader should do after stream_read. */
enum stream_state {
	STREAM_DATA, /* bytes were copied */
	STREAM_WAIT, /* nothing yet: park the connection until woken */
	STREAM_END,  /* end this connection (done, dropped, or replaced) */
};

struct session;

struct stream {
	char id[STREAM_ID_LEN + 1]; /* [const] */
	bool standalone;	    /* [const] the GET stream */
	struct session *sess;	    /* [const] borrowed: streams die with it */
	struct sse_log *log;
	uint64_t next_seq;
	bool done;	/* no event will follow: end once drained */
	bool drop;	/* end the current connection (SEP-1699 polling) */
	bool keepalive; /* a keep-alive comment is due */
	/* The live connection: at most one; a new one replaces it. */
	bool attached;
	unsigned gen;
	void (*wake)(void *arg);
	void *wake_arg;
	int64_t last_write_ms;
	uint64_t sent_upto; /* events before this went out to some reader */
	bool ever_attached;
	/*
	 * Shared sessions (docs/architecture.md "Sessions across replicas").
	 * gated [const]: written here and stored; readers see events below
	 * durable only, i.e. once stored, so that any replica can replay
	 * what a client saw.  mirror [const]: written by another replica (or
	 * the standalone stream of a shared session): events come from the
	 * store.  The rest is the store's bookkeeping.
	 */
	bool gated, mirror;
	uint64_t durable; /* gated: events below are stored */
	uint64_t flushed; /* gated: events below were handed to the store */
	bool done_stored; /* gated: the store knows it is done */
	bool flushing;	  /* a store job holds this stream */
	bool lost; /* taken over, session gone, or events dropped before they
		      were stored: nothing more is stored or shown */
	bool fetch_again; /* mirror: new events came during a fetch */
	json_t *requests; /* gated: the request ids it answers (array) */
	struct stream *next;
};

struct call; /* server/mcp/call.c */

/* A server-to-client request waiting for the client's answer. */
struct pending {
	char id[32];
	struct call *call; /* the waiter (its cond waits on s->mu) */
	json_t *result;	   /* set when answered: exactly one of these */
	json_t *error;
	bool answered;
	struct pending *next;
};

struct session {
	char id[SESSION_ID_LEN + 1]; /* [const] */
	char version[16];	     /* [const] negotiated revision */
	/* [const] who opened it (struct req's owner; "" without
	 * credentials): set before its id goes out; a request of another
	 * owner finds no such session (MCP authorization: sessions bound to
	 * the principal) */
	char owner[40];
	json_t *client_caps;	   /* [const] */
	json_t *client_info;	   /* [const] */
	int64_t created_ms;	   /* [const] */
	struct session_limits lim; /* [const] a copy: outlives the table */
	atomic_int refs;
	pthread_mutex_t mu;
	/* [const] a 2026-07-28 request's scope (session_create_request):
	 * no id on the wire, no priming or resumption, no server requests */
	bool stateless;
	/* [const] stored in PostgreSQL and served by any replica; key is
	 * its store key (a hash of id), store the store (server/mcp/sessstore) */
	bool shared;
	char key[33];
	struct sessstore *store;
	int64_t rev;  /* shared: revision of log_level and subscriptions */
	bool storing; /* shared: its row is being inserted (not there yet) */
	bool closed;  /* deleted or expired: no new work */
	bool initialized;
	int log_level; /* enum mcp_level; MCP_LEVEL_INFO until setLevel */
	json_t *subscriptions; /* object: uri -> true */
	/* 2026-07-28 subscriptions/listen on this request: {"filter": the
	 * honored notifications, "id": the request id}, or NULL */
	json_t *listen;
	struct stream *streams;
	struct stream *standalone;
	int live_streams;
	struct call *calls; /* tool calls in flight */
	struct pending *pending;
	uint64_t next_request_id;
	int64_t last_active_ms;
	int busy;	       /* requests and jobs using it now: not idle */
	struct session *hnext; /* table chain by id */
	struct session *knext; /* table chain by key (shared ones) */
};

struct session_table;

int session_table_new(const struct session_limits *lim,
		      struct session_table **out) WUR;
/* Closes every session (waking their streams) and frees the table.
 * Sessions still referenced stay valid until their last unref.  Accepts
 * NULL. */
void session_table_free(struct session_table *t);
int session_table_count(struct session_table *t);

/*
 * Creates a session and adds it to the table.  caps and info: the
 * session takes a reference (they must not change afterwards).  *out gets a reference, marked busy like session_acquire's:
 * give it back with session_release.  STATUS_FULL when the
 * table holds max_sessions and no idle copy of a shared session to forget
 * in its place, STATUS_IO when the CSPRNG fails.
 */
int session_create(struct session_table *t, const char *version,
		   const json_t *caps, const json_t *info,
		   struct session **out) WUR;
/*
 * A 2026-07-28 request's own session (stateless): the revision, the
 * client's capabilities and info and log level (enum mcp_level, or
 * MCP_LEVEL_OFF) from its _meta.  Same contract as session_create; its id
 * is a process-unique counter, not a secret.  Put it in a table of its
 * own with an idle timeout of 0: it lives as long as the request, its
 * call and its streams hold it.
 */
int session_create_request(struct session_table *t, const char *version,
			   const json_t *caps, const json_t *info,
			   int log_level, struct session **out) WUR;
/*
 * A resident copy of a shared session loaded from the store: same
 * contract as session_create, with the id given.  An id already resident
 * gives that session (acquired).  subscriptions: borrowed (copied);
 * owner: as stored (NULL: "").
 */
int session_adopt(struct session_table *t, const char *id, const char *key,
		  struct sessstore *store, const char *version,
		  const json_t *caps, const json_t *info, int log_level,
		  const json_t *subscriptions, int64_t rev, const char *owner,
		  struct session **out) WUR;
/* Marks s shared (before anyone else sees it: right after
 * session_create) and indexes it by key. */
void session_share(struct session_table *t, struct session *s, const char *key,
		   struct sessstore *store);
/* The resident shared session with this store key, with a reference
 * (session_unref), or NULL.  A hash lookup: the store calls it for every
 * notification from the other replicas. */
struct session *session_find_key(struct session_table *t, const char *key);
/* Removes s from the table and closes it if it is still there: this
 * process forgets it (the store keeps shared sessions). */
void session_forget(struct session_table *t, struct session *s);
/* A reference to a live session, marked busy (session_release undoes
 * both).  STATUS_NOTFOUND for unknown, expired or deleted ids. */
int session_acquire(struct session_table *t, const char *id,
		    struct session **out) WUR;
void session_release(struct session *s);
void session_ref(struct session *s);
void session_unref(struct session *s);
/* Removes and closes a session (DELETE).  STATUS_NOTFOUND if unknown. */
int session_delete(struct session_table *t, const char *id);
/* Expires sessions idle for longer than idle_timeout_s, sheds the streams
 * of shared ones idle for longer than cache_idle_s and marks streams due
 * for a keep-alive.  Called about once a second by the janitor. */
void session_table_sweep(struct session_table *t, int64_t now_ms);
/* A full table (STATUS_FULL): seconds until the first idle session
 * expires, unless used (as of the last sweep), 1 to
 * SESSION_FULL_RETRY_MAX_S: a client's Retry-After.  A DELETE may free a
 * place sooner; past the bound, the client asks again. */
#define SESSION_FULL_RETRY_MAX_S 300
int session_table_retry_s(struct session_table *t, int64_t now_ms);
/* Calls fn on every live session (with a reference held, s->mu not). */
void session_table_foreach(struct session_table *t,
			   void (*fn)(struct session *s, void *arg), void *arg);
/* Closes every session: no new work, streams end, calls see cancelled. */
void session_table_close_all(struct session_table *t);

/* --- streams: all of these require s->mu held ----------------------- */

/* New stream, with a priming event (id <stream>-0, retry, empty data)
 * when prime is true.  STATUS_FULL past the kept-stream bound. */
int stream_open(struct session *s, bool standalone, bool prime,
		struct stream **out) WUR;
/* Appends msg (borrowed) as the next event and wakes the reader. */
int stream_send(struct stream *st, const json_t *msg) WUR;
/* The same for a message already serialized as compact JSON. */
int stream_send_text(struct stream *st, const char *text, size_t len) WUR;
/* No more events: the reader ends the connection once drained. */
void stream_finish(struct stream *st);
/* Ends the current connection but keeps the stream for resumption. */
void stream_drop_connection(struct stream *st);
/*
 * A mirror of a stream written elsewhere (another replica, or the store
 * for a shared session's standalone stream), empty, its next event
 * numbered first.  STATUS_FULL past the kept-stream bound.
 */
int stream_open_mirror(struct session *s, const char *id, bool standalone,
		       uint64_t first, struct stream **out) WUR;
/* Empties a mirror so that its next event is numbered first. */
int stream_mirror_reset(struct stream *st, uint64_t first) WUR;
/* Appends event seq (encoded, from the store) to a mirror: events it
 * has are skipped, a gap empties it first; wakes the reader. */
int stream_mirror_append(struct stream *st, uint64_t seq, const char *ev,
			 size_t len) WUR;
/* Gated streams: events below n are stored; wakes the reader. */
void stream_set_durable(struct stream *st, uint64_t n);
/* Finds a stream of this session by id ("<stream>-<seq>" prefix). */
struct stream *stream_find(struct session *s, const char *id, size_t len);
/*
 * Attaches a reader; any previous reader ends at its next read.  *gen
 * identifies this reader; cur is set to start after after_seq (or at the
 * start when after_seq is UINT64_MAX).  STATUS_FULL past max_streams
 * (GET streams: a POST stream's first reader, its response, is not
 * counted against it).
 */
int stream_attach(struct stream *st, void (*wake)(void *), void *arg,
		  uint64_t after_seq, unsigned *gen,
		  struct sse_cursor *cur) WUR;
/* Detaches reader gen (no-op if it was replaced already). */
void stream_detach(struct stream *st, unsigned gen);
/* Copies pending bytes for reader gen; see enum stream_state. */
enum stream_state stream_read(struct stream *st, unsigned gen,
			      struct sse_cursor *cur, char *dst, size_t max,
			      size_t *n);

#endif

/*
 * pglisten.h - a LISTEN connection for PostgreSQL notifications: one
 * thread holding one dedicated libpq connection that LISTENs on a few
 * channels, hands each NOTIFY to a callback and reconnects with backoff.
 *
 * The connection never runs a statement after its LISTENs, so it is always
 * idle and a notification reaches the callback as soon as it arrives.
 * Notifications sent while it is disconnected are lost: on_connect tells
 * the caller when to catch up from the tables (the tables hold the truth,
 * NOTIFY only wakes the reader up).
 *
 * Thread-safety: pglisten_connected and pglisten_epoch may be called from
 * any thread.  pglisten_stop is called once, from any thread except the
 * listener's own (never from a callback: it joins that thread).  The
 * callbacks run on the listener thread, one at a time.
 */
#ifndef SEXTANT_PGLISTEN_H
#define SEXTANT_PGLISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/* Channels per listener: the design needs two (broadcast, targeted). */
#define PGLISTEN_CHANNELS_MAX 8
/* PostgreSQL identifiers are at most NAMEDATALEN - 1 = 63 bytes; longer
 * names are truncated by the server, so LISTEN and NOTIFY could disagree. */
#define PGLISTEN_CHANNEL_MAX 63
/* NOTIFY refuses a payload of 8000 bytes or more in a default build
 * (BLCKSZ 8192); a longer one can only come from a differently built
 * server and is dropped (logged), never handed on. */
#define PGLISTEN_PAYLOAD_MAX 7999
/* The application_name the connection uses unless conninfo sets one. */
#define PGLISTEN_APPLICATION_NAME "sextant-listen"

struct pglisten_config {
	/* libpq key=value string or postgresql:// URI; copied.  Its
	 * connect_timeout is ignored (connect_timeout_s applies). */
	const char *conninfo;
	/* Copied; each 1..PGLISTEN_CHANNEL_MAX bytes of [a-z0-9_], no
	 * repeats.  LISTEN quotes them, so NOTIFY must use the same
	 * lowercase spelling (unquoted, it folds to lowercase anyway). */
	const char *const *channels;
	size_t nchannels;      /* 1..PGLISTEN_CHANNELS_MAX */
	int connect_timeout_s; /* per attempt, LISTENs included; 0: default
				  PG_DEFAULT_CONNECT_TIMEOUT_S */
	/* Backoff cap, PG_RECONNECT_MIN_MS..PG_RECONNECT_MAX_MS; 0: default
	 * PG_DEFAULT_RECONNECT_MAX_MS. */
	int reconnect_max_ms;
	/* Required.  Called on the listener thread; must not block (queue
	 * and return).  channel and payload are borrowed for the call;
	 * payload is "" when the NOTIFY had none. */
	void (*on_notify)(void *arg, const char *channel, const char *payload);
	/* Optional.  After each (re)connection once LISTEN is in force,
	 * before any notification of that connection is delivered:
	 * notifications sent while disconnected are lost; epoch counts
	 * connections from 1. */
	void (*on_connect)(void *arg, uint64_t epoch);
	/* Optional.  When the connection in force is lost (once per
	 * connection, not for failed attempts to reconnect): detail says why,
	 * for the log (libpq's or the server's message, no password). */
	void (*on_lost)(void *arg, const char *detail);
	void *arg; /* passed to the callbacks; borrowed */
};

struct pglisten;

/*
 * Checks cfg and starts the listener thread, which connects, LISTENs on
 * every channel and delivers notifications until pglisten_stop.  Does not
 * wait for the database and does not fail when it is down: attempts are
 * retried after PG_RECONNECT_MIN_MS, doubling up to reconnect_max_ms (a
 * connection lost after less than reconnect_max_ms counts as a failed
 * attempt, so a server that drops every connection is not hammered).  The
 * thread blocks every signal except the fault signals.
 *
 * Errors: STATUS_INVALID for a bad config (err names the field, and the
 * channel and its position for a bad channel name), STATUS_NOMEM,
 * STATUS_IO (no pipe or thread).  *out is NULL on failure.  Stop and free
 * with pglisten_stop.
 */
int pglisten_start(const struct pglisten_config *cfg, struct pglisten **out,
		   struct pg_error *err) WUR;

/*
 * Stops the thread (interrupting a connection attempt or a backoff wait;
 * host names are resolved inside libpq, which a stop cannot interrupt),
 * joins it, closes the connection and frees l.  No callback runs after it
 * returns.  Accepts NULL.
 */
void pglisten_stop(struct pglisten *l);

/* True while a connection with LISTEN in force is up (from just before
 * on_connect until just before on_lost).  Any thread; false for NULL. */
bool pglisten_connected(struct pglisten *l);

/* The number of connections made so far (the last on_connect's epoch):
 * 0 before the first.  Any thread; 0 for NULL. */
uint64_t pglisten_epoch(struct pglisten *l);

#endif

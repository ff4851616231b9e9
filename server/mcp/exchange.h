/*
 * exchange.h - where the answers to one client transmission go.
 *
 * A client transmission (one HTTP POST, a stdio line, a legacy-SSE
 * message) carries one request or a batch.  The dispatcher answers each
 * request through the exchange, at once or later from a worker; requests
 * in flight may also send notifications and server-to-client requests
 * before their response.  Each transport implements the ops: Streamable
 * HTTP answers JSON when nothing precedes the responses and upgrades to an
 * SSE stream otherwise.  Thread-safe: send may be called from any thread.
 */
#ifndef SEXTANT_EXCHANGE_H
#define SEXTANT_EXCHANGE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"

struct exchange;

struct exchange_ops {
	/*
	 * msg: stolen.  final: msg is the response that completes one
	 * request of the exchange; msg may then be NULL for a request that
	 * ends without a response (cancelled).  Not final: a notification or
	 * a server-to-client request tied to a request still in flight.
	 */
	void (*send)(struct exchange *ex, json_t *msg, bool final);
	/* The same for a response already serialized (text: stolen). */
	void (*send_text)(struct exchange *ex, char *text, size_t len);
	/* Ends the connection of the exchange's stream but keeps the stream
	 * for resumption (SEP-1699).  STATUS_UNSUPPORTED if not resumable. */
	int (*drop)(struct exchange *ex);
	void (*free)(struct exchange *ex);
};

struct exchange {
	const struct exchange_ops *ops;
	atomic_int refs;
	/* The caller's credential as the HTTP gate found it (zero: full
	 * access, no label), set by the transport before the first dispatch
	 * and constant after.  read_only: lacks scope_write, so the write
	 * tools are neither listed nor callable; client: the tool-call
	 * metric label (a bounded set of client ids, "apikey", or ""). */
	bool read_only;
	char client[64];
};

static inline void
exchange_send(struct exchange *ex, json_t *msg, bool final)
{
	ex->ops->send(ex, msg, final);
}

static inline void
exchange_send_text(struct exchange *ex, char *text, size_t len)
{
	ex->ops->send_text(ex, text, len);
}

/* Sets the caller's credential (client: NULL or a label, copied). */
static inline void
exchange_grant(struct exchange *ex, bool read_only, const char *client)
{
	ex->read_only = read_only;
	snprintf(ex->client, sizeof(ex->client), "%s",
		 client != NULL ? client : "");
}

static inline void
exchange_ref(struct exchange *ex)
{
	atomic_fetch_add(&ex->refs, 1);
}

static inline void
exchange_unref(struct exchange *ex)
{
	if (ex != NULL && atomic_fetch_sub(&ex->refs, 1) == 1)
		ex->ops->free(ex);
}

#endif

/*
 * legacy_sse.h - the HTTP+SSE transport of revision 2024-11-05
 * (S:2024-11-05/basic/transports#http-with-sse), kept for clients that
 * still speak it: GET /sse opens an event stream whose first event names
 * the URI to POST to (/messages?session_id=<id>); every answer,
 * notification and server-to-client request goes out on that stream as an
 * `event: message`.  The session lives as long as the stream.
 */
#ifndef SEXTANT_LEGACY_SSE_H
#define SEXTANT_LEGACY_SSE_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

struct req;
struct server;

/*
 * GET /sse and POST /messages, once the gate (Host, Origin, API key,
 * Content-Type, body limit) has passed and the body is complete.
 */
enum MHD_Result legacy_sse_open(struct req *r);
enum MHD_Result legacy_sse_post(struct req *r);

/*
 * The janitor (main thread, about once a second): keep-alives for streams
 * still waiting for initialize, and the end of those that waited longer
 * than server.session_idle_timeout_s.  Streams with a session get their
 * keep-alives and call deadlines from the session sweep.
 */
void legacy_sse_tick(struct server *srv, int64_t now_ms);

/* Drain: ends the streams still waiting for initialize (those with a
 * session end when session_table_close_all closes it). */
void legacy_sse_close_all(void);

/*
 * Rewrites the events of a session stream for this transport: each "id:"
 * line becomes "event: message" (the stream's ids mean nothing here: the
 * transport has no resumption) and "retry:" lines are dropped; data lines,
 * comments and blank lines pass.  The bytes may be cut anywhere: the state
 * carries over between calls.  Appends to out, as buf does: nothing while
 * an error is pending in out, and STATUS_LIMIT or STATUS_NOMEM, kept in
 * out, when it cannot take the bytes (out is then partly written).
 */
struct legacy_sse_reframe {
	int state;
	char head[8]; /* the start of a line, until it is told apart */
	size_t nhead;
};

void legacy_sse_reframe_init(struct legacy_sse_reframe *rf);
int legacy_sse_reframe(struct legacy_sse_reframe *rf, const char *in, size_t n,
		       struct buf *out) WUR;

#endif

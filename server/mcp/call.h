/*
 * call.h - tool calls as worker-pool jobs (the engine side of tool.h).
 *
 * The dispatcher creates a call for each tools/call, submits it to the
 * pool, and the call sends its progress, logs, server-to-client requests
 * and final response through the exchange that carried the request.
 * A call's state is guarded by its session's mutex; its condition variable
 * waits on that mutex (sleeps, client answers, cancellation).
 */
#ifndef SEXTANT_CALL_H
#define SEXTANT_CALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "tools/tool.h"

struct server;
struct session;
struct exchange;
struct tool_def;

/*
 * Starts a tools/call: takes references on s and ex, copies id, steals
 * args.  A 2026-07-28 retry also brings the client's inputResponses
 * (borrowed, copied; NULL: none) and the verified state of the previous
 * round (stolen; NULL: none).  Submits to the pool.  STATUS_FULL when the
 * queue is full (the caller answers 503), STATUS_CLOSED when shutting
 * down.
 */
int call_start(struct server *srv, struct session *s, struct exchange *ex,
	       const json_t *id, const json_t *progress_token,
	       const struct tool_def *tool, json_t *args,
	       const json_t *input_responses, json_t *state) WUR;

/*
 * Starts a resources/read served by a tool (sextant://traces/{id} by
 * get_trace...): as call_start, but the answer is {contents: [{uri,
 * mimeType "text/markdown", text}]} with the tool's text, and an error
 * result is a "resource not found" error carrying that text.  uri is
 * copied.
 */
int call_start_read(struct server *srv, struct session *s, struct exchange *ex,
		    const json_t *id, const struct tool_def *tool, json_t *args,
		    const char *uri) WUR;

/* The scope a tools/call's request state is sealed for (lib/base/seal): the
 * method and the tool, so that state cannot move to another tool. */
void call_state_scope(const char *tool, char *buf, size_t cap);

/* How long a sealed request state stays valid. */
#define CALL_STATE_TTL_MS (10 * 60 * 1000)

/* notifications/cancelled for request id on session s (s->mu not held).
 * Unknown or finished ids are ignored, as the spec allows.  True when a
 * call of s here had that id. */
bool call_cancel_request(struct session *s, const json_t *id);

/* The server a call runs in, for handlers of server/ tool families. */
struct server *call_server(struct call *c);

/*
 * Cancels every call of s (s->mu not held), the session staying open so
 * that their answers still reach the client: at shutdown (srv->draining)
 * a call cancelled other than by the client's notifications/cancelled is
 * answered with a JSON-RPC error carrying its id.  Fits
 * session_table_foreach (arg unused).
 */
void call_cancel_session(struct session *s, void *arg);

/* Cancels the calls of s running for longer than timeout_s (janitor). */
void call_expire_session(struct session *s, int timeout_s, int64_t now_ms);

/* Cancels c (s->mu held): set the flag, wake its waits. */
void call_cancel_locked(struct call *c);
/* The next call of the session's in-flight list (s->mu held). */
struct call *call_next_locked(const struct call *c);
/* Wakes a call waiting for a client answer (s->mu held). */
void call_wake_locked(struct call *c);

#endif

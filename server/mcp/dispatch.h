/*
 * dispatch.h - the MCP method dispatcher, transport-neutral.
 *
 * Transports hand it parsed JSON-RPC messages with the session they belong
 * to and the exchange that will carry the answers; it negotiates
 * revisions, checks parameters, answers quick methods inline and turns
 * tools/call into a job on the worker pool.
 */
#ifndef SEXTANT_DISPATCH_H
#define SEXTANT_DISPATCH_H

#include <jansson.h>
#include <stdbool.h>

#include "base/status.h"

struct server;
struct session;
struct exchange;

/* Revisions spoken on sessions, newest first, NULL-terminated. */
extern const char *const dispatch_versions[];
bool dispatch_version_supported(const char *version);

/*
 * Handles initialize (msg is a request whose method is "initialize"):
 * negotiates the revision and creates the session.  On success *response
 * is the InitializeResult response and *out the new session (a reference,
 * marked busy: session_release).  When initialize cannot be accepted,
 * *response is a JSON-RPC error and *out NULL; STATUS_FULL means the
 * session table is full (answer 503).
 */
int dispatch_initialize(struct server *srv, const json_t *msg,
			json_t **response, struct session **out) WUR;

/*
 * Handles one message of session s.  A request is answered through ex,
 * now or later.  Returns STATUS_FULL when a tools/call could not be queued
 * (nothing was sent: the transport answers 503 or, in a batch, a busy
 * error); STATUS_OK otherwise.  msg: borrowed.
 */
int dispatch_message(struct server *srv, struct session *s, struct exchange *ex,
		     const json_t *msg) WUR;

/* Methods of the stateless 2026-07-28 revision; and methods that exist
 * only on the sessions of the 2025 revisions (initialize, ping, ...). */
bool dispatch_stateless_method(const char *method);
bool dispatch_session_method(const char *method);

/* A bounded label for metrics and logs: the method if this server knows
 * it, "other" otherwise (clients choose method names). */
const char *dispatch_method_label(const char *method);

/* Sends msg (stolen) on s's standalone stream, buffering it for the next
 * GET when no stream is open.  s->mu not held. */
void dispatch_notify_session(struct session *s, json_t *msg);

/* Pushes notifications/tools/list_changed to every session and listen
 * stream (after a reload changed the tool set, or a fixture did). */
void dispatch_notify_tools_changed(struct server *srv);

/* notifications/resources/updated to every session subscribed to uri. */
void dispatch_resource_updated(struct server *srv, const char *uri);

/* method ("notifications/tools/list_changed", or
 * "notifications/resources/updated" with its uri) to every 2026-07-28
 * subscriptions/listen stream whose filter asked for it, tagged with its
 * subscription id. */
void dispatch_listen_notify(struct server *srv, const char *method,
			    const char *uri);

#endif

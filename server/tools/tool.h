/*
 * tool.h - what a tool handler sees: the call context and the result helpers.
 *
 * Tools are data: each tool's name, description, schemas and annotations
 * live in a JSON definition (server/tools/<set>/<name>.json), loaded and
 * validated at start-up (tools.c) and bound by name to a handler declared
 * in a tool family's table (tool_<family>.c).  Handlers run on a worker
 * thread, never on an MHD thread; they talk back to the client only
 * through the call_* functions below, which are thread-safe.
 */
#ifndef SEXTANT_TOOL_H
#define SEXTANT_TOOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* One tools/call in progress.  Borrowed by the handler for its duration. */
struct call;

/*
 * A handler.  args: the validated arguments (defaults applied), borrowed.
 * On success it sets *result to a CallToolResult object ({content,
 * structuredContent?, isError?}) that the caller takes ownership of, and
 * returns STATUS_OK.  A failure the model should see (bad input it can fix,
 * a source that is down) is a result with isError true, not a status.
 * Return a negative status only for internal failures (-32603) or
 * STATUS_CANCELLED when call_cancelled() became true (no response is sent).
 */
typedef int (*tool_fn)(struct call *call, const json_t *args, json_t **result);

/* A tool family's table entry: definition name -> handler. */
struct tool_handler {
	const char *name;
	tool_fn fn;
};

/*
 * True once the client cancelled the call, it ran past
 * workers.call_timeout_s, its session ended, or a shutdown's grace period
 * ran out (calls in flight are otherwise let finish).
 */
bool call_cancelled(struct call *call);
/* The same for callbacks that take a void * (lib/prom/grafana's
 * grafana_opts.cancelled, a task's input wait): call is the struct call. */
bool call_cancelled_arg(void *call);

/*
 * Sleeps up to ms milliseconds; returns early (STATUS_CANCELLED) when the
 * call is cancelled, else STATUS_OK.
 */
int call_sleep_ms(struct call *call, int ms) WUR;

/*
 * Sends notifications/progress if the request carried a progressToken (else
 * does nothing and returns STATUS_OK).  progress must increase from call to
 * call; total <= 0 means unknown; message may be NULL.
 */
int call_progress(struct call *call, double progress, double total,
		  const char *message);

/*
 * Sends notifications/message at an MCP level ("debug", "info", "notice",
 * "warning", "error", "critical", "alert", "emergency") if the session's
 * logging/setLevel allows it.  logger may be NULL.  data: stolen reference.
 */
int call_log(struct call *call, const char *level, const char *logger,
	     json_t *data);

/*
 * True when the client declared the capability at initialize.  path is a
 * dotted path into its capabilities object: "sampling", "elicitation",
 * "elicitation.url", "roots", "sampling.tools".  For 2025-11-25
 * "elicitation.form" is also true when elicitation is {} (form only).
 */
bool call_client_has(struct call *call, const char *path);

/*
 * Input from the client: requests is {key: {"method": m, "params": p}}
 * (stolen), m one of elicitation/create, sampling/createMessage,
 * roots/list.  On STATUS_OK *responses is a new object {key: result} with
 * every key.  How the answers come depends on the request:
 *  - 2026-07-28 (input_required results, SEP-2322): from this request's
 *    inputResponses; when a key is missing, it is recorded and
 *    STATUS_AGAIN returned: the handler returns STATUS_AGAIN and the
 *    client gets {"resultType":"input_required","inputRequests":{...},
 *    "requestState":...} with the state of call_state_set, then retries;
 *  - 2025 sessions: one server-to-client request per key, in key order
 *    (call_request); a client error answer fails with STATUS_INVALID.
 * STATUS_UNSUPPORTED when the client did not declare the capability one
 * of the methods needs (nothing is recorded or sent).
 */
int call_input(struct call *call, json_t *requests, json_t **responses) WUR;

/*
 * Turns this tools/call into a task (2026-07-28 tasks extension): the
 * client gets a CreateTaskResult now and polls tasks/get; the handler runs
 * on and its result (or error, or cancellation) goes to the task.  From
 * then on call_input waits for tasks/update, and progress and log
 * messages are dropped.  STATUS_UNSUPPORTED when the request did not
 * declare the extension (or is not a 2026-07-28 one): go on synchronously
 * or, when the tool cannot, call_reject with -32021; STATUS_FULL when the
 * task table is full.  Handler thread only; before any progress.
 */
int call_become_task(struct call *call) WUR;
/* True when call_become_task can succeed: a 2026-07-28 request that
 * declared the tasks extension. */
bool call_task_supported(struct call *call);

/* The state this call's previous round stored with call_state_set,
 * verified (2026-07-28 requestState); NULL on a first round.  Borrowed. */
const json_t *call_state(struct call *call);

/* State (stolen) to send sealed with the input_required result: what the
 * next round needs that its inputResponses will not carry. */
void call_state_set(struct call *call, json_t *state);

/*
 * Makes the call's answer a JSON-RPC error instead of a result: for
 * protocol errors the handler finds, such as -32021 (the request needs a
 * capability the client did not declare: data {"requiredCapabilities":
 * {...}}).  data: stolen, may be NULL.  Returns STATUS_INVALID, which the
 * handler returns.
 */
int call_reject(struct call *call, int code, json_t *data, const char *message);

/*
 * Sends a server-to-client request (sampling/createMessage,
 * elicitation/create, roots/list) on the call's stream and waits for the
 * client's answer, at most timeout_ms (<= 0: the configured default).
 * params: stolen.  On STATUS_OK exactly one of *result / *error is set
 * (caller owns it: json_decref).  STATUS_UNSUPPORTED when the client lacks
 * the capability or the request is a 2026-07-28 one (no server requests on
 * its stream; nothing is sent), STATUS_TIMEOUT (a notifications/cancelled is sent to the
 * client), STATUS_CANCELLED, STATUS_CLOSED when the session is gone.
 */
int call_request(struct call *call, const char *method, json_t *params,
		 int timeout_ms, json_t **result, json_t **error) WUR;

/*
 * Ends the current HTTP connection of the call's SSE stream without ending
 * the stream (SEP-1699 polling): the client reconnects with Last-Event-ID
 * and gets the rest.  Used by the conformance fixture test_reconnection.
 * STATUS_UNSUPPORTED when the session's revision has no resumable streams.
 */
int call_drop_connection(struct call *call);

/*
 * The call's database cancel token: pass it to pg_acquire for every
 * connection the handler leases, and a cancellation (client, timeout,
 * session end, shutdown) cancels the statements running on them.
 * Borrowed; release the connections before returning.
 */
struct pg_cancel_token;
struct pg_cancel_token *call_pg_cancel(struct call *call);

/* When the call is cancelled for running past workers.call_timeout_s, on
 * clock_mono_ms's clock; INT64_MAX once it is a task (whose bound is its
 * time to live).  For waits that should end, with their own message,
 * before the call does. */
int64_t call_deadline_ms(struct call *call);

/*
 * What a handler reads of the gateway, all borrowed, immutable and valid
 * for the call: the configuration read at start-up (its reloadable parts,
 * tools and keys, are not for handlers); the telemetry store's pool (NULL
 * without [database] url); the metrics instances (server/core/instances.h,
 * NULL when none is configured).
 */
struct config;
struct pg_pool;
struct instances;
const struct config *call_config(struct call *call);
struct pg_pool *call_pg(struct call *call);
const struct instances *call_instances(struct call *call);

/*
 * The gateway's own state (get_server_status): structured content (new
 * reference; NULL when out of memory) and its text in text[len].
 */
json_t *call_gateway_status(struct call *call, char *text, size_t len);

/*
 * The most characters of text the answer may carry ([tools]
 * max_answer_chars).  Handlers fit their text to it ("N more", cursors);
 * text past it is cut by the caller with a note, as a safety net.
 */
size_t call_text_budget(struct call *call);

/*
 * The [redact] rules, built at start-up: apply them (redact_json,
 * redact_text, redact_key from lib/base/redact.h) to every attribute, message
 * or other free text from spans that an answer shows, in its text and in
 * structuredContent.  Borrowed, immutable, thread-safe; valid for the
 * call.  NULL (nothing hidden) only in tests that build no server.
 */
struct redact;
const struct redact *call_redact(struct call *call);

/* The request id as text, for logs.  Borrowed. */
const char *call_request_id(struct call *call);

/*
 * Who is calling, for the log line of a change a tool makes: the session
 * id and the client's name and version as it gave them at initialize (or
 * in a 2026-07-28 request's _meta), e.g. "session 3f2a... client
 * claude-code 1.2.0", into out[len] (cut to fit).  No secret: the API key
 * is never named.
 */
void call_identity(struct call *call, char *out, size_t len);

/*
 * The structuredContent of the result the handler returns, serialized
 * already (text: taken, len its length; NULL drops one set before): for
 * answers too large to build as jansson values first (query_traces: some
 * thousands), written with lib/json/jsondump's writer.  The result then
 * carries none of its own.  It goes out spliced into the response as is:
 * unlike a jansson one it is not checked against the tool's outputSchema
 * at run time (the tests check it, as the MCP SDK client does); it is
 * parsed only where a value is needed (a task's stored result, an error
 * result).
 */
void call_structured_text(struct call *call, char *text, size_t len);

/* Result helpers: each returns a new CallToolResult (NULL on ENOMEM). */
json_t *tool_result_text(const char *text);
json_t *tool_result_error(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* content: stolen array of content blocks; structured: stolen or NULL. */
json_t *tool_result_new(json_t *content, json_t *structured, bool is_error);

#endif

/*
 * tool_conformance.c - handlers of the conformance fixture tools defined in
 * server/conformance/<name>.json, behaving as the official MCP
 * conformance suite 0.1.16 expects (MCP-DIGEST.md B2), plus
 * test_cancellation for Sextant's own SDK-client test.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/status.h"
#include "conformance/conformance.h"
#include "tools/tool.h"

/* The logger name on the fixture's notifications/message. */
#define LOGGER "sextant-conformance"

/* The reference server waits about 50 ms between notifications. */
#define NOTIFY_GAP_MS 50

/* test_reconnection: time between dropping the connection and the result. */
#define RECONNECT_DELAY_MS 100

/*
 * test_cancellation works in steps of this size; the schema bounds
 * duration_ms to [1, 600000] (ten minutes, well past any test's patience).
 */
#define CANCEL_STEP_MS	  100
#define CANCEL_DEFAULT_MS 10000
#define CANCEL_MAX_MS	  600000

/*
 * A client's error message is echoed to the model; longer ones are cut
 * (at a character boundary) so a misbehaving client cannot bloat results.
 */
#define CLIENT_MESSAGE_MAX 512

/* Base64 of a minimal WAV file, as in the reference everything-server. */
static const char WAV_MIN[] =
	"UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

static const char RECONNECT_TEXT[] =
	"Reconnection test completed successfully. If you received this, the "
	"client properly reconnected after stream closure.";

/* Hands res to the caller: STATUS_OK, or STATUS_NOMEM when res is NULL. */
static int
finish(json_t *res, json_t **result)
{
	*result = res;
	return res ? STATUS_OK : STATUS_NOMEM;
}

/* A new CallToolResult with one text block built from fmt; NULL on ENOMEM. */
static json_t *text_resultf(const char *fmt, ...) PRINTF_LIKE(1, 2);

static json_t *
text_resultf(const char *fmt, ...)
{
	va_list ap;
	json_t *text;
	json_t *res;

	va_start(ap, fmt);
	text = json_vsprintf(fmt, ap);
	va_end(ap);
	if (!text)
		return NULL;
	res = tool_result_text(json_string_value(text));
	json_decref(text);
	return res;
}

/* A result whose content is the stolen array content (NULL: ENOMEM). */
static json_t *
content_result(json_t *content)
{
	return content ? tool_result_new(content, NULL, false) : NULL;
}

static json_t *
text_block(const char *text)
{
	return json_pack("{s:s,s:s}", "type", "text", "text", text);
}

static json_t *
image_block(void)
{
	return json_pack("{s:s,s:s,s:s}", "type", "image", "data",
			 conformance_png_1x1, "mimeType", "image/png");
}

static json_t *
resource_block(const char *uri, const char *mime_type, const char *text)
{
	return json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "resource",
			 "resource", "uri", uri, "mimeType", mime_type, "text",
			 text);
}

/*
 * Length of the longest prefix of s of at most max bytes that ends on a
 * UTF-8 character boundary, for "%.*s".
 */
static int
utf8_prefix_len(const char *s, size_t max)
{
	size_t len = strlen(s);

	if (len <= max)
		return (int)len;
	len = max;
	while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
		len--;
	return (int)len;
}

/*
 * What a failed call_request becomes: cancellation and ENOMEM stay
 * statuses, the rest are results the model can read.
 */
static int
request_failed(const char *method, int st, json_t **result)
{
	switch (st) {
	case STATUS_CANCELLED:
	case STATUS_NOMEM: return st;
	case STATUS_UNSUPPORTED:
		return finish(
			tool_result_error("the client does not support %s: "
					  "it did not declare the "
					  "capability at initialize",
					  method),
			result);
	case STATUS_TIMEOUT:
		return finish(tool_result_error("the client did not answer %s "
						"in time; answer the request "
						"sooner or raise the server's "
						"request timeout",
						method),
			      result);
	case STATUS_CLOSED:
		return finish(tool_result_error("the session closed before "
						"the client answered %s",
						method),
			      result);
	default:
		return finish(tool_result_error("could not send %s to the "
						"client (%s); try again",
						method, status_str(st)),
			      result);
	}
}

/* The client answered with a JSON-RPC error object. */
static json_t *
client_error_result(const char *method, const json_t *error)
{
	const char *msg = json_string_value(json_object_get(error, "message"));
	json_int_t code = json_integer_value(json_object_get(error, "code"));

	if (!msg)
		msg = "no message";
	return tool_result_error(
		"the client refused %s: %.*s (code %" JSON_INTEGER_FORMAT ")",
		method, utf8_prefix_len(msg, CLIENT_MESSAGE_MAX), msg, code);
}

static int
conf_simple_text(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	return finish(
		tool_result_text("This is a simple text response for testing."),
		result);
}

static int
conf_image_content(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	return finish(content_result(json_pack("[o]", image_block())), result);
}

static int
conf_audio_content(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	return finish(content_result(json_pack("[{s:s,s:s,s:s}]", "type",
					       "audio", "data", WAV_MIN,
					       "mimeType", "audio/wav")),
		      result);
}

static int
conf_embedded_resource(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	return finish(
		content_result(json_pack(
			"[o]",
			resource_block("test://embedded-resource", "text/plain",
				       "This is an embedded resource "
				       "content."))),
		result);
}

static int
conf_multiple_content_types(struct call *call, const json_t *args,
			    json_t **result)
{
	(void)call;
	(void)args;
	return finish(
		content_result(json_pack(
			"[o,o,o]", text_block("Multiple content types test:"),
			image_block(),
			resource_block("test://mixed-content-resource",
				       "application/json",
				       "{\"test\":\"data\",\"value\":123}"))),
		result);
}

static int
conf_tool_with_logging(struct call *call, const json_t *args, json_t **result)
{
	static const char *const messages[] = {
		"Tool execution started",
		"Tool processing data",
		"Tool execution completed",
	};
	size_t i;
	json_t *data;
	int st;

	(void)args;
	*result = NULL;
	for (i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
		if (i > 0) {
			st = call_sleep_ms(call, NOTIFY_GAP_MS);
			if (st != STATUS_OK)
				return st;
		}
		data = json_string(messages[i]);
		if (!data)
			return STATUS_NOMEM;
		/* A lost log line must not fail the call. */
		(void)call_log(call, "info", LOGGER, data);
	}
	return finish(
		tool_result_text("Tool with logging executed successfully"),
		result);
}

/* 2026-07-28: protocol errors come as JSON-RPC errors (-32021). */
static int
conf_missing_capability(struct call *call, const json_t *args, json_t **result)
{
	(void)args;
	*result = NULL;
	if (!call_client_has(call, "sampling"))
		return call_reject(
			call, -32021,
			json_pack("{s:{s:{}}}", "requiredCapabilities",
				  "sampling"),
			"this tool needs the client's sampling capability: "
			"declare it in the request's clientCapabilities");
	return finish(tool_result_text("the client can sample"), result);
}

static int
conf_streaming_elicitation(struct call *call, const json_t *args,
			   json_t **result)
{
	int st;

	(void)args;
	*result = NULL;
	for (int i = 0; i < 3; i++) {
		(void)call_progress(call, i, 3, "working");
		st = call_sleep_ms(call, NOTIFY_GAP_MS);
		if (st != STATUS_OK)
			return st;
	}
	return finish(tool_result_text("done, without asking the client"),
		      result);
}

static int
conf_tool_with_progress(struct call *call, const json_t *args, json_t **result)
{
	static const double steps[] = {0, 50, 100};
	size_t i;
	int st;

	(void)args;
	*result = NULL;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (i > 0) {
			st = call_sleep_ms(call, NOTIFY_GAP_MS);
			if (st != STATUS_OK)
				return st;
		}
		/* Progress is advisory: a lost notification is no failure. */
		(void)call_progress(call, steps[i], 100, NULL);
	}
	/*
	 * The reference echoes the progress token here; tool.h gives
	 * handlers no access to it, and no scenario checks this text.
	 */
	return finish(tool_result_text("Tool with progress executed "
				       "successfully: progress 0, 50 and 100 "
				       "of 100"),
		      result);
}

static int
conf_error_handling(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	return finish(tool_result_error("This tool intentionally returns an "
					"error for testing"),
		      result);
}

static int
conf_reconnection(struct call *call, const json_t *args, json_t **result)
{
	int st;

	(void)args;
	*result = NULL;
	/*
	 * SEP-1699: the client resumes with Last-Event-ID and receives the
	 * result stored on the stream.  On revisions without resumable
	 * streams (STATUS_UNSUPPORTED) the result simply goes out on the
	 * connection that is still open.
	 */
	(void)call_drop_connection(call);
	st = call_sleep_ms(call, RECONNECT_DELAY_MS);
	if (st != STATUS_OK)
		return st;
	return finish(tool_result_text(RECONNECT_TEXT), result);
}

/* The text of a content block, if it is a text block.  Borrowed. */
static const char *
block_text(const json_t *block)
{
	const char *type = json_string_value(json_object_get(block, "type"));

	if (!type || strcmp(type, "text") != 0)
		return NULL;
	return json_string_value(json_object_get(block, "text"));
}

/*
 * The text of a CreateMessageResult: content is one block, or (2025-11-25
 * with sampling.tools) an array of blocks.  Borrowed; NULL if none.
 */
static const char *
sampled_text(const json_t *res)
{
	const json_t *content = json_object_get(res, "content");
	const char *text;
	size_t i;

	if (!json_is_array(content))
		return block_text(content);
	for (i = 0; i < json_array_size(content); i++) {
		text = block_text(json_array_get(content, i));
		if (text)
			return text;
	}
	return NULL;
}

/* ---- input_required results (2026-07-28, SEP-2322) ------------------------ */

static json_t *
ask_name(void)
{
	return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}",
			 "method", "elicitation/create", "params", "message",
			 "What is your name?", "requestedSchema", "type",
			 "object", "properties", "name", "type", "string",
			 "required", "name");
}

static json_t *
ask_field(const char *message, const char *field, const char *type)
{
	return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}}}}", "method",
			 "elicitation/create", "params", "message", message,
			 "requestedSchema", "type", "object", "properties",
			 field, "type", type);
}

static json_t *
ask_sample(const char *question)
{
	return json_pack("{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "method",
			 "sampling/createMessage", "params", "messages", "role",
			 "user", "content", "type", "text", "text", question,
			 "maxTokens", 100);
}

static json_t *
ask_roots(void)
{
	return json_pack("{s:s, s:{}}", "method", "roots/list", "params");
}

/* What call_input's failure means for the call: another round (AGAIN),
 * the -32021 error naming capability, or an error result. */
static int
input_failed(struct call *call, int st, const char *capability, json_t **result)
{
	if (st == STATUS_AGAIN || st == STATUS_CANCELLED)
		return st;
	if (st == STATUS_UNSUPPORTED)
		return call_reject(call, -32021,
				   json_pack("{s:{s:{}}}",
					     "requiredCapabilities",
					     capability),
				   "this tool needs input the client did not "
				   "declare it can give: add the capability "
				   "to clientCapabilities");
	return finish(tool_result_error("the client's input could not be "
					"used: %s",
					status_str(st)),
		      result);
}

static bool
string_is(const json_t *v, const char *want)
{
	return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

/* The string field of an accepted elicitation answer, else NULL. */
static const char *
accepted(const json_t *responses, const char *key, const char *field)
{
	const json_t *a = json_object_get(responses, key);

	if (!string_is(json_object_get(a, "action"), "accept"))
		return NULL;
	return json_string_value(
		json_object_get(json_object_get(a, "content"), field));
}

static int
conf_ir_elicitation(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const char *name;
	int st;

	(void)args;
	*result = NULL;
	st = call_input(call, json_pack("{s:o}", "user_name", ask_name()),
			&resp);
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	name = accepted(resp, "user_name", "name");
	st = finish(name != NULL ? text_resultf("Hello, %s!", name)
				 : tool_result_text("No name was given."),
		    result);
	json_decref(resp);
	return st;
}

static int
conf_ir_sampling(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const char *text;
	int st;

	(void)args;
	*result = NULL;
	st = call_input(call,
			json_pack("{s:o}", "sample_request",
				  ask_sample("What is the capital of France?")),
			&resp);
	if (st != STATUS_OK)
		return input_failed(call, st, "sampling", result);
	text = sampled_text(json_object_get(resp, "sample_request"));
	st = finish(text_resultf("LLM response: %s", text ? text : "(none)"),
		    result);
	json_decref(resp);
	return st;
}

static int
conf_ir_list_roots(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const json_t *roots;
	const char *first;
	int st;

	(void)args;
	*result = NULL;
	st = call_input(call, json_pack("{s:o}", "roots_request", ask_roots()),
			&resp);
	if (st != STATUS_OK)
		return input_failed(call, st, "roots", result);
	roots = json_object_get(json_object_get(resp, "roots_request"),
				"roots");
	first = json_string_value(
		json_object_get(json_array_get(roots, 0), "uri"));
	st = finish(text_resultf("%zu roots, the first %s",
				 json_array_size(roots),
				 first != NULL ? first : "none"),
		    result);
	json_decref(resp);
	return st;
}

/* request_state and tampered_state: completes only with its state back. */
static int
conf_ir_request_state(struct call *call, const json_t *args, json_t **result)
{
	const json_t *state = call_state(call);
	json_t *resp = NULL;
	int st;

	(void)args;
	*result = NULL;
	st = call_input(call,
			json_pack("{s:o}", "confirm",
				  ask_field("Proceed?", "ok", "boolean")),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:s}", "step", "confirm"));
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	json_decref(resp);
	if (!string_is(json_object_get(state, "step"), "confirm"))
		return finish(
			tool_result_error("requestState missing: send the "
					  "requestState of the input_required "
					  "result with the answer"),
			result);
	return finish(tool_result_text("state-ok: confirmed"), result);
}

static int
conf_ir_multiple_inputs(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const char *name, *hello;
	int st;

	(void)args;
	*result = NULL;
	st = call_input(call,
			json_pack("{s:o, s:o, s:o}", "user_name", ask_name(),
				  "greeting", ask_sample("Say hello."),
				  "client_roots", ask_roots()),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:s}", "step", "all"));
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	name = accepted(resp, "user_name", "name");
	hello = sampled_text(json_object_get(resp, "greeting"));
	st = finish(text_resultf("name %s, greeting %s, %zu roots",
				 name ? name : "(none)",
				 hello ? hello : "(none)",
				 json_array_size(json_object_get(
					 json_object_get(resp, "client_roots"),
					 "roots"))),
		    result);
	json_decref(resp);
	return st;
}

/* Two rounds: the name of the first travels in the state of the second. */
static int
conf_ir_multi_round(struct call *call, const json_t *args, json_t **result)
{
	const char *name =
		json_string_value(json_object_get(call_state(call), "name"));
	json_t *resp = NULL, *kept = NULL;
	const char *color;
	int st;

	(void)args;
	*result = NULL;
	if (name == NULL) {
		st = call_input(call, json_pack("{s:o}", "step1", ask_name()),
				&resp);
		if (st == STATUS_AGAIN)
			call_state_set(call, json_pack("{s:i}", "round", 1));
		if (st != STATUS_OK)
			return input_failed(call, st, "elicitation", result);
		name = accepted(resp, "step1", "name");
		kept = json_string(name != NULL ? name : "(none)");
		json_decref(resp);
		resp = NULL;
		name = json_string_value(kept);
	}
	st = call_input(call,
			json_pack("{s:o}", "step2",
				  ask_field("Your favourite colour?", "color",
					    "string")),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:i, s:s}", "round", 2, "name",
					       name));
	if (st != STATUS_OK) {
		json_decref(kept);
		return input_failed(call, st, "elicitation", result);
	}
	color = accepted(resp, "step2", "color");
	st = finish(
		text_resultf("%s likes %s", name, color ? color : "no colour"),
		result);
	json_decref(resp);
	json_decref(kept);
	return st;
}

/* Asks only for what the client declared it can give. */
static int
conf_ir_capabilities(struct call *call, const json_t *args, json_t **result)
{
	json_t *reqs = json_object(), *resp = NULL;
	int st;

	(void)args;
	*result = NULL;
	if (reqs == NULL)
		return STATUS_NOMEM;
	if (call_client_has(call, "elicitation"))
		json_object_set_new(reqs, "user_name", ask_name());
	if (call_client_has(call, "sampling"))
		json_object_set_new(reqs, "sample_request",
				    ask_sample("Pick a number."));
	if (json_object_size(reqs) == 0) {
		json_decref(reqs);
		return input_failed(call, STATUS_UNSUPPORTED, "elicitation",
				    result);
	}
	st = call_input(call, reqs, &resp);
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	st = finish(text_resultf("%zu inputs received", json_object_size(resp)),
		    result);
	json_decref(resp);
	return st;
}

/* ---- the tasks extension (2026-07-28) -------------------------------------- */

static int
needs_tasks(struct call *call)
{
	return call_reject(call, -32021,
			   json_pack("{s:{s:{s:{}}}}", "requiredCapabilities",
				     "extensions",
				     "io.modelcontextprotocol/tasks"),
			   "this tool runs only as a task: declare the "
			   "io.modelcontextprotocol/tasks extension in "
			   "clientCapabilities");
}

static int
conf_greet(struct call *call, const json_t *args, json_t **result)
{
	const char *name = json_string_value(json_object_get(args, "name"));

	(void)call;
	*result = NULL;
	return finish(text_resultf("Hello, %s!", name ? name : "world"),
		      result);
}

static int
conf_slow_compute(struct call *call, const json_t *args, json_t **result)
{
	json_int_t secs = json_integer_value(json_object_get(args, "seconds"));
	const char *label = json_string_value(json_object_get(args, "label"));
	int st;

	*result = NULL;
	/* a task when it can be one; synchronous otherwise */
	if (secs > 0 && call_become_task(call) == STATUS_NOMEM)
		return STATUS_NOMEM;
	for (json_int_t ms = 0; ms < secs * 1000; ms += 100)
		if ((st = call_sleep_ms(call, 100)) != STATUS_OK)
			return st;
	return finish(text_resultf("%s: done after %lld s",
				   label ? label : "slow_compute",
				   (long long)secs),
		      result);
}

static int
conf_confirm_delete(struct call *call, const json_t *args, json_t **result)
{
	const char *file = json_string_value(json_object_get(args, "filename"));
	json_t *resp = NULL;
	const json_t *yes;
	char q[300];
	int st;

	*result = NULL;
	if (!file)
		file = "(unnamed)";
	if (call_become_task(call) == STATUS_NOMEM)
		return STATUS_NOMEM;
	snprintf(q, sizeof(q), "Delete %s?", file);
	st = call_input(call,
			json_pack("{s:o}", "confirm",
				  ask_field(q, "confirm", "boolean")),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:s}", "step", "confirm"));
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	yes = json_object_get(
		json_object_get(json_object_get(resp, "confirm"), "content"),
		"confirm");
	st = finish(text_resultf("%s %s",
				 json_is_true(yes) ? "deleted" : "kept", file),
		    result);
	json_decref(resp);
	return st;
}

static int
conf_multi_input(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const char *name;
	int st;

	(void)args;
	*result = NULL;
	if (call_become_task(call) == STATUS_NOMEM)
		return STATUS_NOMEM;
	st = call_input(call,
			json_pack("{s:o, s:o}", "first",
				  ask_field("Your name?", "name", "string"),
				  "second",
				  ask_field("Continue?", "confirm", "boolean")),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:s}", "step", "both"));
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	name = accepted(resp, "first", "name");
	st = finish(
		text_resultf("both answered: %s", name ? name : "(no name)"),
		result);
	json_decref(resp);
	return st;
}

static int
conf_failing_job(struct call *call, const json_t *args, json_t **result)
{
	int st;

	(void)args;
	*result = NULL;
	st = call_become_task(call);
	if (st == STATUS_UNSUPPORTED)
		return needs_tasks(call);
	if (st != STATUS_OK)
		return st;
	return finish(tool_result_error("the job failed, as it always does "
					"(a tool error: the task completes "
					"with isError)"),
		      result);
}

static int
conf_protocol_error_job(struct call *call, const json_t *args, json_t **result)
{
	(void)args;
	*result = NULL;
	if (call_become_task(call) == STATUS_NOMEM)
		return STATUS_NOMEM;
	return call_reject(call, -32603, NULL,
			   "the job hit a protocol error, as it always does "
			   "(the task fails)");
}

/* Input first, synchronously (input_required), then a task. */
static int
conf_tool_with_task(struct call *call, const json_t *args, json_t **result)
{
	json_t *resp = NULL;
	const char *name;
	int st;

	(void)args;
	*result = NULL;
	if (!call_task_supported(call))
		return needs_tasks(call);
	st = call_input(call, json_pack("{s:o}", "user_name", ask_name()),
			&resp);
	if (st == STATUS_AGAIN)
		call_state_set(call, json_pack("{s:s}", "step", "name"));
	if (st != STATUS_OK)
		return input_failed(call, st, "elicitation", result);
	st = call_become_task(call);
	if (st != STATUS_OK) {
		json_decref(resp);
		return st;
	}
	name = accepted(resp, "user_name", "name");
	st = finish(text_resultf("Hello, %s!", name ? name : "(no name)"),
		    result);
	json_decref(resp);
	return st;
}

static int
conf_sampling(struct call *call, const json_t *args, json_t **result)
{
	const char *prompt = json_string_value(json_object_get(args, "prompt"));
	json_t *params = NULL;
	json_t *res = NULL;
	json_t *err = NULL;
	const char *text;
	int st;

	*result = NULL;
	if (!prompt)
		return finish(tool_result_error("argument prompt must be a "
						"string: pass the text for the "
						"client's LLM"),
			      result);
	if (!call_client_has(call, "sampling"))
		return finish(
			tool_result_error("sampling is not available: the "
					  "client did not declare the "
					  "sampling capability at "
					  "initialize"),
			result);
	params = json_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role",
			   "user", "content", "type", "text", "text", prompt,
			   "maxTokens", 100);
	if (!params)
		return STATUS_NOMEM;
	st = call_request(call, "sampling/createMessage", params, 0, &res,
			  &err);
	params = NULL; /* stolen */
	if (st != STATUS_OK)
		return request_failed("sampling/createMessage", st, result);
	if (err) {
		st = finish(client_error_result("sampling/createMessage", err),
			    result);
		goto out;
	}
	text = sampled_text(res);
	if (text)
		st = finish(text_resultf("LLM response: %s", text), result);
	else
		st = finish(
			tool_result_error("the client's sampling result has "
					  "no text content: expected "
					  "content {type: \"text\", text}"),
			result);
out:
	json_decref(res);
	json_decref(err);
	return st;
}

/*
 * Form-mode elicitation: "elicitation": {} means form only, {"form": {}}
 * says so explicitly, {"url": {}} alone means url only (2025-11-25).
 */
static bool
client_has_form_elicitation(struct call *call)
{
	if (!call_client_has(call, "elicitation"))
		return false;
	return call_client_has(call, "elicitation.form") ||
	       !call_client_has(call, "elicitation.url");
}

/*
 * Sends elicitation/create with params (stolen; NULL means ENOMEM) and
 * turns the answer into "<label>: action=<action>, content=<json>".
 */
static int
elicit(struct call *call, json_t *params, const char *label, json_t **result)
{
	json_t *res = NULL;
	json_t *err = NULL;
	char *content = NULL;
	const json_t *content_json;
	const char *action;
	int st;

	*result = NULL;
	if (!params)
		return STATUS_NOMEM;
	if (!client_has_form_elicitation(call)) {
		json_decref(params);
		return finish(tool_result_error("elicitation is not available: "
						"the client did not declare "
						"the elicitation capability "
						"(form mode) at initialize"),
			      result);
	}
	st = call_request(call, "elicitation/create", params, 0, &res, &err);
	params = NULL; /* stolen */
	if (st != STATUS_OK)
		return request_failed("elicitation/create", st, result);
	if (err) {
		st = finish(client_error_result("elicitation/create", err),
			    result);
		goto out;
	}
	action = json_string_value(json_object_get(res, "action"));
	if (!action ||
	    (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0 &&
	     strcmp(action, "cancel") != 0)) {
		st = finish(tool_result_error("the client's elicitation result "
					      "has no valid action: expected "
					      "accept, decline or cancel"),
			    result);
		goto out;
	}
	content_json = json_object_get(res, "content");
	if (content_json) {
		content = json_dumps(content_json,
				     JSON_COMPACT | JSON_ENCODE_ANY);
		if (!content) {
			st = STATUS_NOMEM;
			goto out;
		}
	}
	st = finish(text_resultf("%s: action=%s, content=%s", label, action,
				 content ? content : "{}"),
		    result);
out:
	free(content);
	json_decref(res);
	json_decref(err);
	return st;
}

/*
 * elicitation/create params for a form: properties and required are
 * stolen (NULL means ENOMEM).  Mode is left out: form is the default, and
 * 2025-06-18 clients do not know the field.
 */
static json_t *
form_params(const char *message, json_t *properties, json_t *required)
{
	return json_pack("{s:s,s:{s:s,s:o,s:o}}", "message", message,
			 "requestedSchema", "type", "object", "properties",
			 properties, "required", required);
}

static int
conf_elicitation(struct call *call, const json_t *args, json_t **result)
{
	const char *message =
		json_string_value(json_object_get(args, "message"));

	*result = NULL;
	if (!message)
		return finish(tool_result_error("argument message must be a "
						"string: pass the text to show "
						"the user"),
			      result);
	return elicit(
		call,
		form_params(message,
			    json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "username",
				      "type", "string", "description",
				      "User's response", "email", "type",
				      "string", "description",
				      "User's email address"),
			    json_pack("[s,s]", "username", "email")),
		"User response", result);
}

/* SEP-1034: every primitive type carries a default. */
static int
conf_elicitation_sep1034_defaults(struct call *call, const json_t *args,
				  json_t **result)
{
	json_t *properties = json_pack(
		"{s:{s:s,s:s,s:s}, s:{s:s,s:s,s:i}, s:{s:s,s:s,s:f},"
		" s:{s:s,s:s,s:[s,s,s],s:s}, s:{s:s,s:s,s:b}}",
		"name", "type", "string", "description", "User name", "default",
		"John Doe", "age", "type", "integer", "description", "User age",
		"default", 30, "score", "type", "number", "description",
		"User score", "default", 95.5, "status", "type", "string",
		"description", "User status", "enum", "active", "inactive",
		"pending", "default", "active", "verified", "type", "boolean",
		"description", "Verification status", "default", 1);

	(void)args;
	return elicit(call,
		      form_params("Please review and update the form fields "
				  "with defaults",
				  properties, json_array()),
		      "Elicitation completed", result);
}

/*
 * SEP-1330: untitledSingle has neither oneOf nor enumNames, titledSingle
 * no enum, untitledMulti no items.anyOf, titledMulti no items.enum, so
 * each variant matches exactly one schema of the client's union.
 */
static int
conf_elicitation_sep1330_enums(struct call *call, const json_t *args,
			       json_t **result)
{
	json_t *properties = json_pack(
		"{s:{s:s,s:s,s:[s,s,s]},"
		" s:{s:s,s:s,s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]},"
		" s:{s:s,s:s,s:[s,s,s],s:[s,s,s]},"
		" s:{s:s,s:s,s:i,s:i,s:{s:s,s:[s,s,s]}},"
		" s:{s:s,s:s,s:i,s:i,s:{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}}}",
		"untitledSingle", "type", "string", "description",
		"Select one option", "enum", "option1", "option2", "option3",
		"titledSingle", "type", "string", "description",
		"Select one option with titles", "oneOf", "const", "value1",
		"title", "First Option", "const", "value2", "title",
		"Second Option", "const", "value3", "title", "Third Option",
		"legacyEnum", "type", "string", "description",
		"Select one option (legacy)", "enum", "opt1", "opt2", "opt3",
		"enumNames", "Option One", "Option Two", "Option Three",
		"untitledMulti", "type", "array", "description",
		"Select multiple options", "minItems", 1, "maxItems", 3,
		"items", "type", "string", "enum", "option1", "option2",
		"option3", "titledMulti", "type", "array", "description",
		"Select multiple options with titles", "minItems", 1,
		"maxItems", 3, "items", "anyOf", "const", "value1", "title",
		"First Choice", "const", "value2", "title", "Second Choice",
		"const", "value3", "title", "Third Choice");

	(void)args;
	return elicit(call,
		      form_params("Please select options from the enum fields",
				  properties, json_array()),
		      "Elicitation completed", result);
}

static int
conf_json_schema_2020_12(struct call *call, const json_t *args, json_t **result)
{
	char *echo = NULL;
	int st;

	(void)call;
	*result = NULL;
	if (args) {
		echo = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!echo)
			return STATUS_NOMEM;
	}
	st = finish(text_resultf("JSON Schema 2020-12 tool called with: %s",
				 echo ? echo : "{}"),
		    result);
	free(echo);
	return st;
}

static int
conf_cancellation(struct call *call, const json_t *args, json_t **result)
{
	const json_t *v = json_object_get(args, "duration_ms");
	json_int_t duration = CANCEL_DEFAULT_MS;
	json_int_t done = 0;
	json_int_t steps;
	json_int_t step;
	int st;

	*result = NULL;
	if (v)
		duration = json_is_integer(v) ? json_integer_value(v) : -1;
	if (duration < 1 || duration > CANCEL_MAX_MS)
		return finish(tool_result_error("argument duration_ms must be "
						"an integer from 1 to %d",
						CANCEL_MAX_MS),
			      result);
	steps = (duration + CANCEL_STEP_MS - 1) / CANCEL_STEP_MS;
	for (step = 1; step <= steps; step++) {
		int slice = duration - done < CANCEL_STEP_MS
				    ? (int)(duration - done)
				    : CANCEL_STEP_MS;

		if (call_cancelled(call))
			return STATUS_CANCELLED;
		st = call_sleep_ms(call, slice);
		if (st != STATUS_OK)
			return st;
		done += slice;
		(void)call_progress(call, (double)step, (double)steps, NULL);
	}
	return finish(text_resultf("completed after %" JSON_INTEGER_FORMAT
				   " ms",
				   duration),
		      result);
}

const struct tool_handler conformance_tool_handlers[] = {
	{"test_simple_text", conf_simple_text},
	{"test_image_content", conf_image_content},
	{"test_audio_content", conf_audio_content},
	{"test_embedded_resource", conf_embedded_resource},
	{"test_multiple_content_types", conf_multiple_content_types},
	{"test_tool_with_logging", conf_tool_with_logging},
	{"test_tool_with_progress", conf_tool_with_progress},
	{"test_error_handling", conf_error_handling},
	{"test_reconnection", conf_reconnection},
	{"test_sampling", conf_sampling},
	{"test_elicitation", conf_elicitation},
	{"test_elicitation_sep1034_defaults",
	 conf_elicitation_sep1034_defaults},
	{"test_elicitation_sep1330_enums", conf_elicitation_sep1330_enums},
	{"json_schema_2020_12_tool", conf_json_schema_2020_12},
	{"test_cancellation", conf_cancellation},
	{"test_missing_capability", conf_missing_capability},
	{"test_streaming_elicitation", conf_streaming_elicitation},
	{"test_logging_tool", conf_tool_with_logging},
	{"test_input_required_result_elicitation", conf_ir_elicitation},
	{"test_input_required_result_sampling", conf_ir_sampling},
	{"test_input_required_result_list_roots", conf_ir_list_roots},
	{"test_input_required_result_request_state", conf_ir_request_state},
	{"test_input_required_result_multiple_inputs", conf_ir_multiple_inputs},
	{"test_input_required_result_multi_round", conf_ir_multi_round},
	{"test_input_required_result_tampered_state", conf_ir_request_state},
	{"test_input_required_result_capabilities", conf_ir_capabilities},
	{"greet", conf_greet},
	{"slow_compute", conf_slow_compute},
	{"confirm_delete", conf_confirm_delete},
	{"multi_input", conf_multi_input},
	{"failing_job", conf_failing_job},
	{"protocol_error_job", conf_protocol_error_job},
	{"test_tool_with_task", conf_tool_with_task},
	{NULL, NULL},
};

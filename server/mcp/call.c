/*
 * call.c - a tools/call as a worker-pool job, and the call_* API that tool
 * handlers use to talk back to the client (tool.h).
 *
 * A call lives from call_start to the end of its job.  Its mutable state
 * (cancelled, timed out, its list link, its pending client requests) is
 * guarded by its session's mutex and its condition variable waits on that
 * mutex, so a client's answer, a cancellation or a session close wakes it
 * without a second lock.  Nothing is sent while s->mu is held: exchanges
 * take it themselves.
 */
#include "mcp/call.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "base/seal.h"
#include "core/server.h"
#include "json/jsonschema.h"
#include "mcp/exchange.h"
#include "mcp/reqmeta.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "mcp/sessstore.h"
#include "mcp/tasks.h"
#include "mcp/tools.h"
#include "pg/pg.h"

struct call {
	struct pool_job job; /* first: the pool hands it back */
	struct server *srv;
	struct session *s;   /* reference */
	struct exchange *ex; /* reference */
	struct tools *tools; /* reference: keeps tool alive across reloads */
	const struct tool_def *tool;
	json_t *id;
	json_t *progress_token; /* NULL when the client asked for none */
	json_t *args;
	char idtext[48];
	pthread_cond_t cond; /* waits on s->mu */
	bool cancelled;
	bool timed_out;
	bool client_cancelled; /* notifications/cancelled: no response */
	/* fired with the cancellation: stops the call's database queries */
	struct pg_cancel_token *pg_cancel;
	double last_progress;
	int64_t start_ms;
	int64_t start_us; /* for the duration logged and observed */
	json_t *reject;	  /* call_reject's error object, or NULL */
	/* 2026-07-28 input_required rounds (call_input) */
	json_t *input_responses; /* the client's answers, or NULL */
	json_t *state_in;	 /* verified state of the last round */
	json_t *state_out;	 /* state for the next round */
	json_t *input_wanted;	 /* {key: request} not answered yet */
	struct task *task;	 /* call_become_task's, or NULL */
	char *sc_text;		 /* call_structured_text's, or NULL */
	size_t sc_len;
	char *read_uri;	   /* call_start_read's: answer as resources/read */
	struct call *next; /* s->calls */
};

/* How a call ended, for metrics and logs. */
static const char *const outcomes[] = {"ok",	  "error",  "cancelled",
				       "timeout", "failed", "input_required",
				       "shutdown"};
enum outcome {
	OUT_OK,
	OUT_ERROR,
	OUT_CANCELLED,
	OUT_TIMEOUT,
	OUT_FAILED,
	OUT_INPUT,
	OUT_SHUTDOWN, /* cancelled by the drain: answered, with its id */
};

static void
deadline_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void
call_free(struct call *c)
{
	pthread_cond_destroy(&c->cond);
	pg_cancel_token_free(c->pg_cancel);
	json_decref(c->id);
	json_decref(c->progress_token);
	json_decref(c->args);
	json_decref(c->reject);
	free(c->sc_text);
	free(c->read_uri);
	json_decref(c->input_responses);
	json_decref(c->state_in);
	json_decref(c->state_out);
	json_decref(c->input_wanted);
	tools_unref(c->tools);
	exchange_unref(c->ex);
	session_release(c->s);
	free(c);
}

/* Keeps structuredContent only where the revision has it (>= 06-18). */
static void
shape_result(struct call *c, json_t *result)
{
	const struct session *s = c->s;

	if (strcmp(s->version, "2025-06-18") < 0) {
		json_object_del(result, "structuredContent");
		call_structured_text(c, NULL, 0);
	}
	if (s->stateless && json_object_get(result, "resultType") == NULL)
		json_object_set_new(result, "resultType",
				    json_string("complete"));
}

/* result (dropped) got wrong by the handler, which is our bug: logged
 * with detail, answered to the model as an internal error. */
static json_t *
result_bug(struct call *c, json_t *result, const char *what, const char *detail)
{
	log_error(&(struct log_fields){.request_id = c->idtext,
				       .session = c->s->id,
				       .tool = c->tool->name,
				       .duration_ms = -1},
		  "tool %s produced %s: %s", c->tool->name, what, detail);
	json_decref(result);
	return tool_result_error("internal error: tool %s produced %s",
				 c->tool->name, what);
}

/* Checks a successful result against the tool's outputSchema; a
 * mismatch is our bug, reported to the model as an error result. */
static json_t *
check_output(struct call *c, json_t *result)
{
	const json_t *sc;
	struct jsonschema_error verr;

	if (c->tool->output == NULL || c->sc_text != NULL ||
	    json_is_true(json_object_get(result, "isError")))
		return result;
	sc = json_object_get(result, "structuredContent");
	if (sc != NULL &&
	    jsonschema_validate(c->tool->output, sc, &verr) == STATUS_OK)
		return result;
	return result_bug(c, result,
			  "a result that does not match its outputSchema",
			  sc == NULL ? "no structuredContent" : verr.msg);
}

/* Whether the call's serialized structuredContent can go out as text,
 * spliced into the response; else it becomes a value (structured_value). */
static bool
structured_as_text(const struct call *c, const json_t *result)
{
	return c->task == NULL &&
	       !json_is_true(json_object_get(result, "isError")) &&
	       json_object_get(result, "structuredContent") == NULL;
}

/* result with the call's serialized structuredContent made a value: a
 * task stores its result as one, and an error result is rare. */
static json_t *
structured_value(struct call *c, json_t *result)
{
	json_error_t err;
	json_t *sc = json_loadb(c->sc_text, c->sc_len, 0, &err);

	call_structured_text(c, NULL, 0);
	if (sc != NULL &&
	    json_object_set_new(result, "structuredContent", sc) == 0)
		return result;
	return result_bug(c, result, "structuredContent that is not JSON",
			  sc == NULL ? err.text : "out of memory");
}

void
call_structured_text(struct call *c, char *text, size_t len)
{
	free(c->sc_text);
	c->sc_text = text;
	c->sc_len = text != NULL ? len : 0;
}

/* Cuts text content past the budget at a UTF-8 boundary, with a note: a
 * handler that overran it must not flood the model's context. */
static void
fit_text(struct call *c, json_t *result)
{
	size_t budget = call_text_budget(c), i;
	json_t *item;

	json_array_foreach(json_object_get(result, "content"), i, item)
	{
		const char *text =
			json_string_value(json_object_get(item, "text"));
		size_t len = json_string_length(json_object_get(item, "text"));
		char *cut;
		size_t keep = budget > 200 ? budget - 200 : budget / 2;

		if (text == NULL || len <= budget)
			continue;
		while (keep > 0 && ((unsigned char)text[keep] & 0xc0) == 0x80)
			keep--;
		if (asprintf(&cut,
			     "%.*s\n\n[answer cut at %zu of %zu characters "
			     "(tools.max_answer_chars): ask for less, e.g. a "
			     "smaller limit or time range]",
			     (int)keep, text, keep, len) < 0)
			continue;
		json_object_set_new(item, "text", json_string(cut));
		free(cut);
		log_warn(&(struct log_fields){.request_id = c->idtext,
					      .tool = c->tool->name,
					      .duration_ms = -1},
			 "tool answer of %zu characters cut to the budget",
			 len);
	}
}

void
call_state_scope(const char *tool, char *buf, size_t cap)
{
	snprintf(buf, cap, "tools/call %s", tool);
}

/* {"resultType":"input_required","inputRequests":...,"requestState":...}
 * as this call's response (SEP-2322); an internal error if the state
 * cannot be sealed. */
static json_t *
input_required(struct call *c)
{
	json_t *res = json_pack("{s:s}", "resultType", "input_required");
	char scope[200], *tok = NULL;

	if (res == NULL)
		return NULL;
	if (c->input_wanted != NULL)
		json_object_set(res, "inputRequests", c->input_wanted);
	if (c->state_out != NULL) {
		call_state_scope(c->tool->name, scope, sizeof(scope));
		if (seal_pack(c->srv->seal, scope, c->state_out,
			      clock_wall_ms() + CALL_STATE_TTL_MS,
			      &tok) != STATUS_OK) {
			json_decref(res);
			return rpc_error(c->id, RPC_INTERNAL_ERROR,
					 "could not seal the request state",
					 NULL);
		}
		json_object_set_new(res, "requestState", json_string(tok));
		free(tok);
	}
	return rpc_result(c->id, res);
}

/* An answer the client gave for a request of method: it has the shape
 * of that method's result, else the input counts as missing (asked
 * again: SEP-2322 "SHOULD validate"). */
static bool
answer_ok(const char *method, const json_t *a)
{
	if (!json_is_object(a))
		return false;
	if (strcmp(method, "elicitation/create") == 0)
		return json_is_string(json_object_get(a, "action"));
	if (strcmp(method, "sampling/createMessage") == 0)
		return json_is_object(json_object_get(a, "content")) ||
		       json_is_array(json_object_get(a, "content"));
	if (strcmp(method, "roots/list") == 0)
		return json_is_array(json_object_get(a, "roots"));
	return false;
}

static const char *capability_for(const char *method);

bool
call_cancelled_arg(void *call)
{
	return call_cancelled(call);
}

/* 2025 sessions: one server-to-client request per key. */
static int
input_by_requests(struct call *c, json_t *requests, json_t *out)
{
	const char *key;
	json_t *req;

	json_object_foreach(requests, key, req)
	{
		const char *m =
			json_string_value(json_object_get(req, "method"));
		json_t *params = json_incref(json_object_get(req, "params"));
		json_t *result = NULL, *error = NULL;
		int rc = call_request(c, m,
				      params != NULL ? params : json_object(),
				      0, &result, &error);

		if (rc == STATUS_OK && error != NULL)
			rc = STATUS_INVALID;
		json_decref(error);
		if (rc != STATUS_OK) {
			json_decref(result);
			return rc;
		}
		json_object_set_new(out, key, result);
	}
	return STATUS_OK;
}

int
call_input(struct call *c, json_t *requests, json_t **responses)
{
	json_t *out = json_object(), *req;
	const char *key;
	int rc = STATUS_OK;

	*responses = NULL;
	if (out == NULL || !json_is_object(requests)) {
		rc = out == NULL ? STATUS_NOMEM : STATUS_INVALID;
		goto out;
	}
	json_object_foreach(requests, key, req)
	{
		const char *m =
			json_string_value(json_object_get(req, "method"));
		const char *cap = m != NULL ? capability_for(m) : NULL;

		if (cap == NULL) {
			rc = STATUS_INVALID;
			goto out;
		}
		if (!call_client_has(c, cap)) {
			rc = STATUS_UNSUPPORTED;
			goto out;
		}
	}
	if (!c->s->stateless) {
		rc = input_by_requests(c, requests, out);
		goto out;
	}
	if (c->task != NULL) {
		json_decref(out);
		rc = tasks_wait_input(c->srv->tasks, c->task, requests, &out,
				      call_cancelled_arg, c);
		goto out;
	}
	json_object_foreach(requests, key, req)
	{
		const char *m =
			json_string_value(json_object_get(req, "method"));
		const json_t *a = json_object_get(c->input_responses, key);

		if (answer_ok(m, a)) {
			json_object_set_new(out, key, json_deep_copy(a));
			continue;
		}
		if (c->input_wanted == NULL &&
		    (c->input_wanted = json_object()) == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		json_object_set(c->input_wanted, key, req);
		rc = STATUS_AGAIN;
	}
out:
	json_decref(requests);
	if (rc == STATUS_OK)
		*responses = out;
	else
		json_decref(out);
	return rc;
}

int
call_become_task(struct call *c)
{
	struct task *k = NULL;
	json_t *created;
	int rc;

	if (c->task != NULL)
		return STATUS_OK;
	if (!call_task_supported(c))
		return STATUS_UNSUPPORTED;
	rc = tasks_create(c->srv->tasks, c->s, c->id, &k);
	if (rc != STATUS_OK)
		return rc;
	created = tasks_created_json(c->srv->tasks, k);
	if (created == NULL) {
		tasks_finish(c->srv->tasks, k, NULL);
		return STATUS_NOMEM;
	}
	/* the task exists before the client hears of it (TK: "durably") */
	c->task = k;
	exchange_send(c->ex, rpc_result(c->id, created), true);
	return STATUS_OK;
}

bool
call_task_supported(struct call *c)
{
	return c->s->stateless &&
	       reqmeta_has_capability(c->s->client_caps,
				      "extensions/" TASKS_EXTENSION);
}

const json_t *
call_state(struct call *c)
{
	return c->state_in;
}

void
call_state_set(struct call *c, json_t *state)
{
	json_decref(c->state_out);
	c->state_out = state;
}

/* A resources/read answered by a tool: its text as the resource's
 * contents, its error result as "resource not found" with the text (the
 * model learns what exists), like the dispatcher's own reads. */
static json_t *
read_response(struct call *c, json_t *result)
{
	const char *text = json_string_value(json_object_get(
		json_array_get(json_object_get(result, "content"), 0), "text"));
	json_t *res;

	if (text == NULL)
		text = "";
	if (json_is_true(json_object_get(result, "isError"))) {
		res = rpc_error(c->id,
				c->s->stateless ? RPC_INVALID_PARAMS
						: RPC_RESOURCE_NOT_FOUND,
				text, json_pack("{s:s}", "uri", c->read_uri));
		json_decref(result);
		return res;
	}
	res = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", c->read_uri,
			"mimeType", "text/markdown", "text", text);
	json_decref(result);
	if (res != NULL && c->s->stateless) {
		/* telemetry changes: read again every time */
		json_object_set_new(res, "resultType", json_string("complete"));
		json_object_set_new(res, "ttlMs", json_integer(0));
		json_object_set_new(res, "cacheScope", json_string("private"));
	}
	return rpc_result(c->id, res);
}

static void
call_run(struct pool_job *job)
{
	struct call *c = (struct call *)job;
	struct session *s = c->s;
	struct call **pp;
	json_t *result = NULL, *response = NULL;
	char *text = NULL;
	size_t text_len = 0;
	enum outcome outcome;
	double ms;
	int rc = STATUS_CANCELLED;

	if (!call_cancelled(c))
		rc = c->tool->fn(c, c->args, &result);
	pthread_mutex_lock(&s->mu);
	for (pp = &s->calls; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->timed_out)
		outcome = OUT_TIMEOUT;
	else if ((c->cancelled || rc == STATUS_CANCELLED) &&
		 !c->client_cancelled && atomic_load(&c->srv->draining))
		outcome = OUT_SHUTDOWN;
	else if (c->cancelled || rc == STATUS_CANCELLED)
		outcome = OUT_CANCELLED;
	else if (c->reject != NULL)
		outcome = OUT_ERROR;
	else if (rc == STATUS_AGAIN && c->s->stateless &&
		 (c->input_wanted != NULL || c->state_out != NULL))
		outcome = OUT_INPUT;
	else if (rc != STATUS_OK || result == NULL)
		outcome = OUT_FAILED;
	else
		outcome = OUT_OK;
	pthread_mutex_unlock(&s->mu);

	switch (outcome) {
	case OUT_OK:
		if (c->read_uri != NULL) {
			response = read_response(c, result);
			result = NULL;
			break;
		}
		if (c->sc_text != NULL && !structured_as_text(c, result))
			result = structured_value(c, result);
		result = check_output(c, result);
		fit_text(c, result);
		if (json_is_true(json_object_get(result, "isError")))
			outcome = OUT_ERROR;
		shape_result(c, result);
		if (c->sc_text != NULL) {
			text = rpc_result_text_with(
				c->id, result, "structuredContent", c->sc_text,
				c->sc_len, &text_len);
			/* a text that is not UTF-8 (or no memory): an
			 * answer all the same */
			if (text == NULL)
				response = rpc_result(
					c->id,
					result_bug(c, NULL,
						   "an answer that could not "
						   "be written",
						   "not UTF-8, or out of "
						   "memory"));
		} else
			response = rpc_result(c->id, result);
		result = NULL;
		break;
	case OUT_TIMEOUT:
		response = rpc_result(
			c->id, tool_result_error(
				       "tool %s did not finish within %d s "
				       "(workers.call_timeout_s): narrow the "
				       "query and try again",
				       c->tool->name,
				       c->srv->cfg->workers.call_timeout_s));
		break;
	case OUT_FAILED:
		log_error(&(struct log_fields){.request_id = c->idtext,
					       .session = s->id,
					       .tool = c->tool->name,
					       .duration_ms = -1},
			  "tool handler failed: %s", status_str(rc));
		response = rpc_error(c->id, RPC_INTERNAL_ERROR,
				     "internal error while running the tool; "
				     "the server log has the detail",
				     NULL);
		break;
	case OUT_ERROR: /* only call_reject's; a result's comes above */
		response = rpc_error(
			c->id,
			(int)json_integer_value(
				json_object_get(c->reject, "code")),
			json_string_value(
				json_object_get(c->reject, "message")),
			json_incref(json_object_get(c->reject, "data")));
		break;
	case OUT_INPUT: response = input_required(c); break;
	case OUT_CANCELLED: break; /* no response (cancellation spec) */
	case OUT_SHUTDOWN:
		/* the client asked for nothing to stop: it is owed an answer
		 * it can retry on, never an empty reply */
		response = rpc_error(c->id, RPC_INTERNAL_ERROR,
				     "cancelled by shutdown: the server is "
				     "stopping; retry on another instance",
				     json_pack("{s:b}", "retryable", 1));
		break;
	}
	json_decref(result);
	ms = (double)(clock_mono_us() - c->start_us) / 1000.0;
	expo_inc(expo_series(c->srv->m.tool_calls,
			     (const char *[]){c->tool->name, outcomes[outcome],
					      c->ex->client}));
	expo_observe(expo_series(c->srv->m.tool_duration,
				 (const char *[]){c->tool->name}),
		     ms / 1000.0);
	log_info(&(struct log_fields){.request_id = c->idtext,
				      .session = s->id,
				      .method = "tools/call",
				      .tool = c->tool->name,
				      .duration_ms = ms},
		 "tool call %s", outcomes[outcome]);
	if (c->task != NULL) /* the caller got its CreateTaskResult */
		tasks_finish(c->srv->tasks, c->task,
			     outcome == OUT_CANCELLED ? NULL : response);
	else if (text != NULL)
		exchange_send_text(c->ex, text, text_len);
	else
		exchange_send(c->ex, response, true);
	call_free(c);
}

int
call_reject(struct call *c, int code, json_t *data, const char *message)
{
	json_decref(c->reject);
	c->reject = json_pack("{s:i, s:s, s:o*}", "code", code, "message",
			      message, "data", data);
	return STATUS_INVALID;
}

static int call_begin(struct call *c, struct server *srv, struct session *s,
		      struct exchange *ex, const json_t *id,
		      const json_t *progress_token, const struct tool_def *tool,
		      json_t *args);

int
call_start(struct server *srv, struct session *s, struct exchange *ex,
	   const json_t *id, const json_t *progress_token,
	   const struct tool_def *tool, json_t *args,
	   const json_t *input_responses, json_t *state)
{
	struct call *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		json_decref(args);
		json_decref(state);
		return STATUS_NOMEM;
	}
	c->state_in = state;
	if (json_is_object(input_responses))
		c->input_responses = json_deep_copy(input_responses);
	return call_begin(c, srv, s, ex, id, progress_token, tool, args);
}

int
call_start_read(struct server *srv, struct session *s, struct exchange *ex,
		const json_t *id, const struct tool_def *tool, json_t *args,
		const char *uri)
{
	struct call *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->read_uri = strdup(uri)) == NULL) {
		free(c);
		json_decref(args);
		return STATUS_NOMEM;
	}
	return call_begin(c, srv, s, ex, id, NULL, tool, args);
}

/* The rest of a start: c (taken, freed on failure) and args (stolen). */
static int
call_begin(struct call *c, struct server *srv, struct session *s,
	   struct exchange *ex, const json_t *id, const json_t *progress_token,
	   const struct tool_def *tool, json_t *args)
{
	pthread_condattr_t attr;
	int rc;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &attr);
	pthread_condattr_destroy(&attr);
	c->job.run = call_run;
	c->srv = srv;
	c->s = s;
	c->ex = ex;
	c->tool = tool;
	c->id = json_incref((json_t *)id);
	if (json_is_string(progress_token) || json_is_integer(progress_token))
		c->progress_token = json_incref((json_t *)progress_token);
	c->args = args;
	c->last_progress = -1e300;
	c->start_ms = clock_mono_ms();
	c->start_us = clock_mono_us();
	rpc_id_text(id, c->idtext, sizeof(c->idtext));
	server_live_rdlock(srv);
	c->tools = srv->tools;
	tools_ref(c->tools);
	server_live_unlock(srv);
	if ((rc = pg_cancel_token_new(&c->pg_cancel)) != STATUS_OK)
		goto fail;

	pthread_mutex_lock(&s->mu);
	if (s->closed) {
		pthread_mutex_unlock(&s->mu);
		rc = STATUS_CLOSED;
		goto fail;
	}
	s->busy++;
	session_ref(s);
	exchange_ref(ex);
	c->next = s->calls;
	s->calls = c;
	rc = pool_submit(srv->pool, &c->job);
	if (rc != STATUS_OK) {
		s->calls = c->next;
		pthread_mutex_unlock(&s->mu);
		goto fail_refs;
	}
	pthread_mutex_unlock(&s->mu);
	return STATUS_OK;
fail_refs:
	call_free(c);
	return rc;
fail:
	c->s = NULL;
	c->ex = NULL;
	call_free(c);
	return rc;
}

void
call_cancel_locked(struct call *c)
{
	c->cancelled = true;
	/* a few ms for the cancel request; the database is reachable or the
	 * query would not be running */
	pg_cancel(c->pg_cancel);
	pthread_cond_broadcast(&c->cond);
}

void
call_wake_locked(struct call *c)
{
	pthread_cond_broadcast(&c->cond);
}

struct call *
call_next_locked(const struct call *c)
{
	return c->next;
}

bool
call_cancel_request(struct session *s, const json_t *id)
{
	struct call *c;

	pthread_mutex_lock(&s->mu);
	for (c = s->calls; c != NULL; c = c->next)
		if (json_equal(c->id, (json_t *)id))
			break;
	if (c != NULL) {
		c->client_cancelled = true;
		call_cancel_locked(c);
	}
	pthread_mutex_unlock(&s->mu);
	return c != NULL;
}

void
call_cancel_session(struct session *s, void *arg)
{
	struct call *c;

	(void)arg;
	pthread_mutex_lock(&s->mu);
	for (c = s->calls; c != NULL; c = c->next)
		call_cancel_locked(c);
	pthread_mutex_unlock(&s->mu);
}

void
call_expire_session(struct session *s, int timeout_s, int64_t now_ms)
{
	struct call *c;

	pthread_mutex_lock(&s->mu);
	for (c = s->calls; c != NULL; c = c->next) {
		/* a task's bound is its TTL, not the call timeout */
		if (!c->cancelled && c->task == NULL &&
		    now_ms - c->start_ms > (int64_t)timeout_s * 1000) {
			c->timed_out = true;
			call_cancel_locked(c);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/* --- the handler API (tool.h) ---------------------------------------- */

size_t
call_text_budget(struct call *c)
{
	/* not reloadable: the config read at start-up holds */
	return (size_t)c->srv->cfg->tools.max_answer_chars;
}

struct pg_cancel_token *
call_pg_cancel(struct call *c)
{
	return c->pg_cancel;
}

int64_t
call_deadline_ms(struct call *c)
{
	/* task is set by the handler's own thread (call_become_task) */
	if (c->task != NULL)
		return INT64_MAX;
	return c->start_ms +
	       (int64_t)c->srv->cfg->workers.call_timeout_s * 1000;
}

const struct config *
call_config(struct call *c)
{
	return c->srv->cfg;
}

struct pg_pool *
call_pg(struct call *c)
{
	return c->srv->pg;
}

const struct instances *
call_instances(struct call *c)
{
	return c->srv->instances;
}

const struct redact *
call_redact(struct call *c)
{
	return c->srv->redact;
}

bool
call_cancelled(struct call *c)
{
	bool v;

	pthread_mutex_lock(&c->s->mu);
	v = c->cancelled || c->s->closed;
	pthread_mutex_unlock(&c->s->mu);
	return v;
}

int
call_sleep_ms(struct call *c, int ms)
{
	struct timespec deadline;
	int rc = STATUS_OK;

	deadline_after(&deadline, ms > 0 ? ms : 0);
	pthread_mutex_lock(&c->s->mu);
	while (!c->cancelled && !c->s->closed) {
		if (pthread_cond_timedwait(&c->cond, &c->s->mu, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	if (c->cancelled || c->s->closed)
		rc = STATUS_CANCELLED;
	pthread_mutex_unlock(&c->s->mu);
	return rc;
}

int
call_progress(struct call *c, double progress, double total,
	      const char *message)
{
	json_t *params;

	if (c->progress_token == NULL || c->task != NULL)
		return STATUS_OK; /* tasks carry no progress (TK) */
	if (progress <= c->last_progress)
		return STATUS_INVALID; /* progress must increase (spec) */
	c->last_progress = progress;
	params = json_pack("{s:O, s:f}", "progressToken", c->progress_token,
			   "progress", progress);
	if (params == NULL)
		return STATUS_NOMEM;
	if (total > 0)
		json_object_set_new(params, "total", json_real(total));
	if (message != NULL && strcmp(c->s->version, "2025-03-26") >= 0)
		json_object_set_new(params, "message", json_string(message));
	exchange_send(c->ex, rpc_notification("notifications/progress", params),
		      false);
	return STATUS_OK;
}

int
call_log(struct call *c, const char *level, const char *logger, json_t *data)
{
	int lv = mcp_level_parse(level), min;
	json_t *params;

	if (lv < 0) {
		json_decref(data);
		return STATUS_INVALID;
	}
	pthread_mutex_lock(&c->s->mu);
	min = c->s->log_level;
	pthread_mutex_unlock(&c->s->mu);
	if (lv < min || c->task != NULL) { /* nor log messages */
		json_decref(data);
		return STATUS_OK;
	}
	params = json_pack("{s:s, s:o}", "level", level, "data",
			   data != NULL ? data : json_null());
	if (params == NULL)
		return STATUS_NOMEM;
	if (logger != NULL)
		json_object_set_new(params, "logger", json_string(logger));
	exchange_send(c->ex, rpc_notification("notifications/message", params),
		      false);
	return STATUS_OK;
}

bool
call_client_has(struct call *c, const char *path)
{
	const json_t *v = c->s->client_caps; /* [const]: no lock */
	char part[64];
	const char *p = path;

	if (strcmp(path, "elicitation.form") == 0) {
		const json_t *e = json_object_get(v, "elicitation");

		/* {} means form only (2025-11-25 elicitation#capabilities) */
		return json_is_object(e) &&
		       (json_object_get(e, "form") != NULL ||
			json_object_get(e, "url") == NULL);
	}
	while (*p != '\0') {
		size_t n = strcspn(p, ".");

		if (n >= sizeof(part))
			return false;
		memcpy(part, p, n);
		part[n] = '\0';
		v = json_object_get(v, part);
		if (v == NULL || json_is_false(v) || json_is_null(v))
			return false;
		p += n;
		if (*p == '.')
			p++;
	}
	return true;
}

static const char *
capability_for(const char *method)
{
	if (strcmp(method, "sampling/createMessage") == 0)
		return "sampling";
	if (strcmp(method, "elicitation/create") == 0)
		return "elicitation";
	if (strcmp(method, "roots/list") == 0)
		return "roots";
	return NULL;
}

int
call_request(struct call *c, const char *method, json_t *params, int timeout_ms,
	     json_t **result, json_t **error)
{
	struct session *s = c->s;
	const char *cap = capability_for(method);
	struct pending *p, **pp;
	struct timespec deadline;
	json_t *msg;
	int rc = STATUS_OK;

	*result = NULL;
	*error = NULL;
	/* 2026-07-28: no requests on a response stream (SH); input comes
	 * through input_required results instead */
	if (s->stateless) {
		json_decref(params);
		return STATUS_UNSUPPORTED;
	}
	if (cap != NULL && !call_client_has(c, cap)) {
		json_decref(params);
		return STATUS_UNSUPPORTED;
	}
	if (timeout_ms <= 0)
		timeout_ms =
			c->srv->cfg->workers.client_request_timeout_s * 1000;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		json_decref(params);
		return STATUS_NOMEM;
	}
	p->call = c;
	pthread_mutex_lock(&s->mu);
	if (s->closed || c->cancelled) {
		pthread_mutex_unlock(&s->mu);
		json_decref(params);
		free(p);
		return s->closed ? STATUS_CLOSED : STATUS_CANCELLED;
	}
	/* Ids we send are unique per session (JSON-RPC: never reused); a
	 * shared session's across replicas too. */
	if (s->shared)
		snprintf(p->id, sizeof(p->id), "sx-%s-%llu",
			 sessstore_tag(s->store),
			 (unsigned long long)++s->next_request_id);
	else
		snprintf(p->id, sizeof(p->id), "sx-%llu",
			 (unsigned long long)++s->next_request_id);
	p->next = s->pending;
	s->pending = p;
	pthread_mutex_unlock(&s->mu);
	/* the answer may reach another replica: it must find the request
	 * before the client can see it */
	if (s->shared &&
	    sessstore_pending_add(s->store, s, p->id) != STATUS_OK) {
		rc = STATUS_IO; /* the store is unavailable: nothing was sent */
		json_decref(params);
		pthread_mutex_lock(&s->mu);
		goto unlink;
	}

	msg = json_pack("{s:s, s:s, s:s, s:o}", "jsonrpc", "2.0", "id", p->id,
			"method", method, "params",
			params != NULL ? params : json_object());
	if (msg == NULL) {
		rc = STATUS_NOMEM;
		pthread_mutex_lock(&s->mu);
		goto unlink;
	}
	exchange_send(c->ex, msg, false);

	deadline_after(&deadline, timeout_ms);
	pthread_mutex_lock(&s->mu);
	while (!p->answered && !c->cancelled && !s->closed) {
		if (pthread_cond_timedwait(&c->cond, &s->mu, &deadline) ==
		    ETIMEDOUT) {
			rc = STATUS_TIMEOUT;
			break;
		}
	}
	if (p->answered) {
		rc = STATUS_OK;
		*result = p->result;
		*error = p->error;
		p->result = p->error = NULL;
	} else if (rc != STATUS_TIMEOUT) {
		rc = s->closed ? STATUS_CLOSED : STATUS_CANCELLED;
	}
unlink:
	for (pp = &s->pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (s->shared)
		sessstore_pending_drop(s->store, s, p->id);
	if (rc == STATUS_TIMEOUT || rc == STATUS_CANCELLED) {
		/* We abandon our own request: say so (cancellation spec). */
		exchange_send(
			c->ex,
			rpc_notification(
				"notifications/cancelled",
				json_pack("{s:s, s:s}", "requestId", p->id,
					  "reason",
					  rc == STATUS_TIMEOUT
						  ? "timed out"
						  : "tool call cancelled")),
			false);
	}
	json_decref(p->result);
	json_decref(p->error);
	free(p);
	return rc;
}

int
call_drop_connection(struct call *c)
{
	if (c->s->stateless || strcmp(c->s->version, "2025-11-25") < 0)
		return STATUS_UNSUPPORTED;
	return c->ex->ops->drop(c->ex);
}

struct server *
call_server(struct call *c)
{
	return c->srv;
}

const char *
call_request_id(struct call *c)
{
	return c->idtext;
}

void
call_identity(struct call *c, char *out, size_t len)
{
	const json_t *info = c->s->client_info;
	const char *name = json_string_value(json_object_get(info, "name"));
	const char *version =
		json_string_value(json_object_get(info, "version"));

	snprintf(out, len, "session %s client %.128s %.64s", c->s->id,
		 name != NULL ? name : "(unnamed)",
		 version != NULL ? version : "");
}

/* --- result helpers -------------------------------------------------- */

json_t *
tool_result_new(json_t *content, json_t *structured, bool is_error)
{
	json_t *r = json_object();

	if (r == NULL || content == NULL ||
	    json_object_set_new(r, "content", content)) {
		json_decref(r);
		json_decref(structured);
		return NULL;
	}
	if (structured != NULL &&
	    json_object_set_new(r, "structuredContent", structured)) {
		json_decref(r);
		return NULL;
	}
	if (is_error && json_object_set_new(r, "isError", json_true())) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *
tool_result_text(const char *text)
{
	return tool_result_new(
		json_pack("[{s:s, s:s}]", "type", "text", "text", text), NULL,
		false);
}

json_t *
tool_result_error(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tool_result_new(
		json_pack("[{s:s, s:s}]", "type", "text", "text", msg), NULL,
		true);
}

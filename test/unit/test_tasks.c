/*
 * test_tasks.c - unit tests for server/mcp/tasks (the 2026-07-28 tasks
 * extension's table): the CreateTaskResult and tasks/get shapes, the
 * input_required hand-over between a waiting call (a thread here) and
 * tasks/update (partial answers, unknown keys ignored), the three ends
 * (completed with isError, failed, cancelled), cancel on terminal tasks,
 * unknown ids, the sweep and the table bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/session.h"
#include "mcp/tasks.h"

static const struct session_limits limits = {
	.max_sessions = 4,
	.idle_timeout_s = 60,
	.max_streams = 2,
	.replay_events = 8,
	.replay_bytes = 1 << 16,
	.retry_ms = 1000,
	.keepalive_s = 15,
};

struct fx {
	struct session_table *st;
	struct session *s;
	struct task_table *t;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(session_table_new(&limits, &f->st), STATUS_OK);
	assert_int_equal(session_create(f->st, "2026-07-28", NULL, NULL, &f->s),
			 STATUS_OK);
	assert_int_equal(tasks_new(&f->t), STATUS_OK);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	tasks_free(f->t);
	session_release(f->s);
	session_table_free(f->st);
	free(f);
	return 0;
}

static bool
matches(const char *re, const char *s)
{
	regex_t r;
	bool ok;

	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	ok = s != NULL && regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

static struct task *
new_task(struct fx *f, char *id)
{
	json_t *rid = json_integer(7), *c;
	struct task *k = NULL;

	assert_int_equal(tasks_create(f->t, f->s, rid, &k), STATUS_OK);
	c = tasks_created_json(f->t, k);
	snprintf(id, 40, "%s", json_string_value(json_object_get(c, "taskId")));
	json_decref(c);
	json_decref(rid);
	return k;
}

static const char *
status_of(struct fx *f, const char *id, json_t **out)
{
	assert_int_equal(tasks_get(f->t, id, "", out), STATUS_OK);
	return json_string_value(json_object_get(*out, "status"));
}

static void
test_shapes(void **state)
{
	struct fx *f = *state;
	json_t *rid = json_string("req-1"), *c, *g = NULL;
	struct task *k = NULL;
	const char *iso =
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
		"\\.[0-9]{3}Z$";
	char id[40];

	assert_int_equal(tasks_create(f->t, f->s, rid, &k), STATUS_OK);
	c = tasks_created_json(f->t, k);
	assert_string_equal(json_string_value(json_object_get(c, "resultType")),
			    "task");
	assert_true(matches("^[0-9a-f]{32}$",
			    json_string_value(json_object_get(c, "taskId"))));
	assert_string_equal(json_string_value(json_object_get(c, "status")),
			    "working");
	assert_true(matches(
		iso, json_string_value(json_object_get(c, "createdAt"))));
	assert_true(matches(
		iso, json_string_value(json_object_get(c, "lastUpdatedAt"))));
	assert_int_equal(json_integer_value(json_object_get(c, "ttlMs")),
			 TASK_TTL_MS);
	assert_int_equal(
		json_integer_value(json_object_get(c, "pollIntervalMs")),
		TASK_POLL_MS);
	/* no envelope fields of other results */
	assert_null(json_object_get(c, "result"));
	assert_null(json_object_get(c, "requestState"));
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_object_get(c, "taskId")));
	assert_string_equal(status_of(f, id, &g), "working");
	assert_string_equal(json_string_value(json_object_get(g, "resultType")),
			    "complete");
	json_decref(g);
	assert_int_equal(tasks_get(f->t, "0123", "", &g), STATUS_NOTFOUND);
	assert_null(g);
	assert_int_equal(tasks_update(f->t, "nope", "", NULL), STATUS_NOTFOUND);
	assert_int_equal(tasks_cancel(f->t, "nope", ""), STATUS_NOTFOUND);
	tasks_finish(f->t, k, NULL);
	json_decref(c);
	json_decref(rid);
}

static void
test_ends(void **state)
{
	struct fx *f = *state;
	char a[40], b[40], c[40];
	struct task *ka = new_task(f, a), *kb = new_task(f, b),
		    *kc = new_task(f, c);
	json_t *g = NULL;

	tasks_finish(f->t, ka,
		     json_pack("{s:s, s:i, s:{s:[{s:s, s:s}], s:b, s:s}}",
			       "jsonrpc", "2.0", "id", 7, "result", "content",
			       "type", "text", "text", "boom", "isError", 1,
			       "resultType", "complete"));
	tasks_finish(f->t, kb,
		     json_pack("{s:s, s:i, s:{s:i, s:s}}", "jsonrpc", "2.0",
			       "id", 7, "error", "code", -32603, "message",
			       "bad"));
	tasks_finish(f->t, kc, NULL);
	/* a tool error completes the task; its result keeps isError */
	assert_string_equal(status_of(f, a, &g), "completed");
	assert_true(json_is_true(
		json_object_get(json_object_get(g, "result"), "isError")));
	assert_null(
		json_object_get(json_object_get(g, "result"), "resultType"));
	assert_null(json_object_get(g, "error"));
	json_decref(g);
	assert_string_equal(status_of(f, b, &g), "failed");
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(g, "error"), "code")),
			 -32603);
	assert_null(json_object_get(g, "result"));
	json_decref(g);
	assert_string_equal(status_of(f, c, &g), "cancelled");
	json_decref(g);
	/* cancel of a terminal task: acknowledged, nothing changes */
	assert_int_equal(tasks_cancel(f->t, a, ""), STATUS_OK);
	assert_string_equal(status_of(f, a, &g), "completed");
	json_decref(g);
	/* the sweep keeps them for their TTL, then drops them */
	tasks_sweep(f->t, 0);
	assert_int_equal(tasks_get(f->t, a, "", &g), STATUS_OK);
	json_decref(g);
	tasks_sweep(f->t, INT64_MAX / 2);
	assert_int_equal(tasks_get(f->t, a, "", &g), STATUS_NOTFOUND);
	assert_int_equal(tasks_get(f->t, b, "", &g), STATUS_NOTFOUND);
}

struct waiter {
	struct task_table *t;
	struct task *k;
	json_t *requests, *responses;
	int rc;
	bool cancel;
};

static bool
waiter_cancelled(void *arg)
{
	return ((struct waiter *)arg)->cancel;
}

static void *
wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = tasks_wait_input(w->t, w->k, w->requests, &w->responses,
				 waiter_cancelled, w);
	return NULL;
}

/* Polls tasks/get until the task's inputRequests has n keys. */
static json_t *
wait_wanted(struct fx *f, const char *id, size_t n)
{
	for (int i = 0; i < 200; i++) {
		json_t *g = NULL;

		assert_int_equal(tasks_get(f->t, id, "", &g), STATUS_OK);
		if (json_object_size(json_object_get(g, "inputRequests")) == n)
			return g;
		json_decref(g);
		usleep(10000);
	}
	fail_msg("the task never asked for %zu inputs", n);
	return NULL;
}

static void
test_input(void **state)
{
	struct fx *f = *state;
	char id[40];
	struct waiter w = {.t = f->t};
	pthread_t th;
	json_t *g;

	w.k = new_task(f, id);
	w.requests = json_pack("{s:{s:s}, s:{s:s}}", "first", "method",
			       "elicitation/create", "second", "method",
			       "elicitation/create");
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	g = wait_wanted(f, id, 2);
	assert_string_equal(json_string_value(json_object_get(g, "status")),
			    "input_required");
	json_decref(g);
	/* one answer, plus a key nobody asked for: still waiting for one */
	{
		json_t *ans = json_pack("{s:{s:s}, s:{s:b}}", "first", "action",
					"accept", "unknown-key", "ignored", 1);

		assert_int_equal(tasks_update(f->t, id, "", ans), STATUS_OK);
		json_decref(ans);
	}
	/* at once: the answered key is gone from inputRequests as soon as
	 * tasks/update returns, whenever the call wakes (the suite's
	 * tasks-mrtr-partial-fulfillment) */
	assert_int_equal(tasks_get(f->t, id, "", &g), STATUS_OK);
	assert_int_equal(json_object_size(json_object_get(g, "inputRequests")),
			 1);
	assert_non_null(
		json_object_get(json_object_get(g, "inputRequests"), "second"));
	assert_string_equal(json_string_value(json_object_get(g, "status")),
			    "input_required");
	json_decref(g);
	{
		json_t *ans =
			json_pack("{s:{s:s}}", "second", "action", "decline");

		assert_int_equal(tasks_update(f->t, id, "", ans), STATUS_OK);
		json_decref(ans);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, STATUS_OK);
	assert_int_equal(json_object_size(w.responses), 2);
	assert_null(json_object_get(w.responses, "unknown-key"));
	assert_string_equal(status_of(f, id, &g), "working");
	json_decref(g);
	json_decref(w.responses);
	/* a cancelled wait ends */
	w.responses = NULL;
	w.cancel = true;
	json_decref(w.requests);
	w.requests =
		json_pack("{s:{s:s}}", "third", "method", "elicitation/create");
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, STATUS_CANCELLED);
	assert_null(w.responses);
	json_decref(w.responses);
	json_decref(w.requests);
	tasks_finish(f->t, w.k, NULL);
}

static void
test_bound(void **state)
{
	struct fx *f = *state;
	struct task **all = calloc(TASKS_MAX, sizeof(*all));
	json_t *rid = json_integer(1);
	struct task *extra = NULL;

	assert_non_null(all);
	for (size_t i = 0; i < TASKS_MAX; i++)
		assert_int_equal(tasks_create(f->t, f->s, rid, &all[i]),
				 STATUS_OK);
	assert_int_equal(tasks_create(f->t, f->s, rid, &extra), STATUS_FULL);
	assert_null(extra);
	for (size_t i = 0; i < TASKS_MAX; i++)
		tasks_finish(f->t, all[i], NULL);
	tasks_sweep(f->t, INT64_MAX / 2);
	assert_int_equal(tasks_create(f->t, f->s, rid, &extra), STATUS_OK);
	tasks_finish(f->t, extra, NULL);
	json_decref(rid);
	free(all);
}

/* A task is its creator's: another principal (or none) finds no such
 * task, as for an id never issued; the creator still does. */
static void
test_owner(void **state)
{
	struct fx *f = *state;
	char id[40];
	struct task *k;
	json_t *g = NULL, *ans = json_pack("{s:s}", "k", "v");

	snprintf(f->s->owner, sizeof(f->s->owner), "tok:%032d", 1);
	k = new_task(f, id);
	for (const char *const *o =
		     (const char *const[]){"tok:other", "", "key:0123", NULL};
	     *o != NULL; o++) {
		assert_int_equal(tasks_get(f->t, id, *o, &g), STATUS_NOTFOUND);
		assert_null(g);
		assert_int_equal(tasks_update(f->t, id, *o, ans),
				 STATUS_NOTFOUND);
		assert_int_equal(tasks_cancel(f->t, id, *o), STATUS_NOTFOUND);
	}
	/* the refused cancel changed nothing */
	assert_int_equal(tasks_get(f->t, id, f->s->owner, &g), STATUS_OK);
	assert_string_equal(json_string_value(json_object_get(g, "status")),
			    "working");
	json_decref(g);
	tasks_finish(f->t, k,
		     json_pack("{s:s, s:i, s:{s:[]}}", "jsonrpc", "2.0", "id",
			       7, "result", "content"));
	assert_int_equal(tasks_get(f->t, id, "tok:other", &g), STATUS_NOTFOUND);
	assert_int_equal(tasks_get(f->t, id, f->s->owner, &g), STATUS_OK);
	assert_string_equal(json_string_value(json_object_get(g, "status")),
			    "completed");
	json_decref(g);
	assert_int_equal(tasks_cancel(f->t, id, f->s->owner), STATUS_OK);
	json_decref(ans);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tasks.c - the tasks extension of MCP 2026-07-28: the task table, the
 * task's wire shapes, and the hand-over between a running call and the
 * tasks/get, update and cancel.  See tasks.h.
 */
#include "mcp/tasks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/auth.h"
#include "base/clock.h"
#include "mcp/call.h"
#include "mcp/session.h"

#define TASK_ID_LEN 32

enum task_status {
	TASK_WORKING,
	TASK_INPUT_REQUIRED,
	TASK_COMPLETED,
	TASK_CANCELLED,
	TASK_FAILED,
};

static const char *const status_names[] = {
	[TASK_WORKING] = "working",
	[TASK_INPUT_REQUIRED] = "input_required",
	[TASK_COMPLETED] = "completed",
	[TASK_CANCELLED] = "cancelled",
	[TASK_FAILED] = "failed",
};

struct task {
	char id[TASK_ID_LEN + 1];
	char owner[sizeof(((struct session *)0)->owner)]; /* its creator */
	enum task_status status;
	int64_t created_ms, updated_ms; /* wall clock */
	json_t *result;			/* completed: the CallToolResult */
	json_t *error;			/* failed: {code, message} */
	json_t *wanted;	 /* input_required: {key: request} outstanding */
	json_t *answers; /* {key: answer} delivered by tasks/update */
	/* while the call runs: its session (reference) and request id */
	struct session *s;
	json_t *call_id;
	bool cancel_requested;
	struct task *next;
};

struct task_table {
	pthread_mutex_t mu;
	pthread_cond_t changed; /* answers arrived (tasks/update) */
	struct task *head;
	size_t count;
};

/* "2026-11-22T02:30:00.123Z" */
static void
iso_ms(int64_t ms, char *buf, size_t cap)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&secs, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%03dZ", base, (int)(ms % 1000));
}

static bool
terminal(const struct task *k)
{
	return k->status == TASK_COMPLETED || k->status == TASK_CANCELLED ||
	       k->status == TASK_FAILED;
}

int
tasks_new(struct task_table **out)
{
	struct task_table *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (t == NULL)
		return STATUS_NOMEM;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->changed, NULL);
	*out = t;
	return STATUS_OK;
}

static void
task_free(struct task *k)
{
	json_decref(k->result);
	json_decref(k->error);
	json_decref(k->wanted);
	json_decref(k->answers);
	json_decref(k->call_id);
	if (k->s != NULL)
		session_unref(k->s);
	free(k);
}

void
tasks_free(struct task_table *t)
{
	struct task *k, *next;

	if (t == NULL)
		return;
	for (k = t->head; k != NULL; k = next) {
		next = k->next;
		task_free(k);
	}
	pthread_cond_destroy(&t->changed);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* The task called id that owner created (t->mu held), or NULL: another
 * principal's task is as unknown as an id never issued. */
static struct task *
find(struct task_table *t, const char *id, const char *owner)
{
	for (struct task *k = t->head; id != NULL && k != NULL; k = k->next)
		if (strcmp(k->id, id) == 0)
			return strcmp(k->owner, owner != NULL ? owner : "") == 0
				       ? k
				       : NULL;
	return NULL;
}

int
tasks_create(struct task_table *t, struct session *s, const json_t *id,
	     struct task **out)
{
	struct task *k = calloc(1, sizeof(*k));

	*out = NULL;
	if (k == NULL)
		return STATUS_NOMEM;
	if (auth_random_hex(k->id, sizeof(k->id), TASK_ID_LEN / 2) !=
	    STATUS_OK) {
		free(k);
		return STATUS_IO;
	}
	memcpy(k->owner, s->owner, sizeof(k->owner));
	k->status = TASK_WORKING;
	k->created_ms = k->updated_ms = clock_wall_ms();
	k->answers = json_object();
	k->call_id = json_deep_copy(id);
	if (k->answers == NULL || k->call_id == NULL) {
		task_free(k);
		return STATUS_NOMEM;
	}
	pthread_mutex_lock(&t->mu);
	if (t->count >= TASKS_MAX) {
		pthread_mutex_unlock(&t->mu);
		task_free(k);
		return STATUS_FULL;
	}
	session_ref(s);
	k->s = s;
	k->next = t->head;
	t->head = k;
	t->count++;
	pthread_mutex_unlock(&t->mu);
	*out = k;
	return STATUS_OK;
}

/* The Task fields every shape has (t->mu held). */
static json_t *
task_fields(const struct task *k, const char *result_type)
{
	char created[40], updated[40];

	iso_ms(k->created_ms, created, sizeof(created));
	iso_ms(k->updated_ms, updated, sizeof(updated));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i}", "resultType",
			 result_type, "taskId", k->id, "status",
			 status_names[k->status], "createdAt", created,
			 "lastUpdatedAt", updated, "ttlMs", TASK_TTL_MS,
			 "pollIntervalMs", TASK_POLL_MS);
}

json_t *
tasks_created_json(struct task_table *t, struct task *k)
{
	json_t *j;

	pthread_mutex_lock(&t->mu);
	j = task_fields(k, "task");
	pthread_mutex_unlock(&t->mu);
	return j;
}

void
tasks_finish(struct task_table *t, struct task *k, json_t *response)
{
	const json_t *err = json_object_get(response, "error");
	struct session *s;

	pthread_mutex_lock(&t->mu);
	if (response == NULL) {
		k->status = TASK_CANCELLED;
	} else if (err != NULL) {
		k->status = TASK_FAILED;
		k->error = json_pack("{s:O, s:O}", "code",
				     json_object_get(err, "code"), "message",
				     json_object_get(err, "message"));
	} else {
		k->status = TASK_COMPLETED;
		k->result = json_incref(json_object_get(response, "result"));
		/* the task's result is the tool's; the envelope is tasks/get's */
		json_object_del(k->result, "resultType");
	}
	json_decref(k->wanted);
	k->wanted = NULL;
	k->updated_ms = clock_wall_ms();
	s = k->s;
	k->s = NULL;
	pthread_cond_broadcast(&t->changed);
	pthread_mutex_unlock(&t->mu);
	json_decref(response);
	if (s != NULL)
		session_unref(s);
}

int
tasks_wait_input(struct task_table *t, struct task *k, const json_t *requests,
		 json_t **responses, bool (*cancelled)(void *arg), void *arg)
{
	json_t *out = json_object(), *req;
	const char *key;
	int rc = STATUS_OK;

	*responses = NULL;
	if (out == NULL)
		return STATUS_NOMEM;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		json_t *wanted = json_object();

		if (wanted == NULL) {
			rc = STATUS_NOMEM;
			break;
		}
		json_object_foreach((json_t *)requests, key, req)
		{
			const json_t *a = json_object_get(k->answers, key);

			if (a != NULL)
				json_object_set(out, key, (json_t *)a);
			else
				json_object_set(wanted, key, req);
		}
		json_decref(k->wanted);
		k->wanted = NULL;
		if (json_object_size(wanted) == 0) {
			json_decref(wanted);
			if (k->status == TASK_INPUT_REQUIRED) {
				k->status = TASK_WORKING;
				k->updated_ms = clock_wall_ms();
			}
			break;
		}
		k->wanted = wanted;
		if (k->status != TASK_INPUT_REQUIRED) {
			k->status = TASK_INPUT_REQUIRED;
			k->updated_ms = clock_wall_ms();
		}
		if (cancelled(arg) || k->cancel_requested) {
			rc = STATUS_CANCELLED;
			break;
		}
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&t->changed, &t->mu, &ts);
		}
	}
	pthread_mutex_unlock(&t->mu);
	if (rc == STATUS_OK)
		*responses = out;
	else
		json_decref(out);
	return rc;
}

int
tasks_get(struct task_table *t, const char *id, const char *owner,
	  json_t **result)
{
	struct task *k;
	json_t *j = NULL;

	*result = NULL;
	pthread_mutex_lock(&t->mu);
	k = find(t, id, owner);
	if (k != NULL) {
		j = task_fields(k, "complete");
		if (j != NULL && k->status == TASK_COMPLETED)
			json_object_set(j, "result", k->result);
		if (j != NULL && k->status == TASK_FAILED)
			json_object_set(j, "error", k->error);
		if (j != NULL && k->status == TASK_INPUT_REQUIRED &&
		    k->wanted != NULL)
			json_object_set(j, "inputRequests", k->wanted);
	}
	pthread_mutex_unlock(&t->mu);
	if (k == NULL)
		return STATUS_NOTFOUND;
	if (j == NULL)
		return STATUS_NOMEM;
	*result = j;
	return STATUS_OK;
}

int
tasks_update(struct task_table *t, const char *id, const char *owner,
	     const json_t *answers)
{
	struct task *k;
	const char *key;
	json_t *a;

	pthread_mutex_lock(&t->mu);
	k = find(t, id, owner);
	if (k != NULL && k->wanted != NULL && json_is_object(answers)) {
		void *tmp;

		json_object_foreach_safe((json_t *)answers, tmp, key, a)
		{
			/* keys not outstanding are ignored (TK); answered ones
			 * leave inputRequests at once, not when the call wakes:
			 * a tasks/get right after must not show them */
			if (json_object_get(k->wanted, key) != NULL) {
				json_object_set(k->answers, key, a);
				json_object_del(k->wanted, key);
			}
		}
		if (json_object_size(k->wanted) == 0) {
			json_decref(k->wanted);
			k->wanted = NULL;
			if (k->status == TASK_INPUT_REQUIRED) {
				k->status = TASK_WORKING;
				k->updated_ms = clock_wall_ms();
			}
		}
		pthread_cond_broadcast(&t->changed);
	}
	pthread_mutex_unlock(&t->mu);
	return k != NULL ? STATUS_OK : STATUS_NOTFOUND;
}

int
tasks_cancel(struct task_table *t, const char *id, const char *owner)
{
	struct task *k;
	struct session *s = NULL;
	json_t *cid = NULL;

	pthread_mutex_lock(&t->mu);
	k = find(t, id, owner);
	if (k != NULL && !terminal(k) && k->s != NULL) {
		k->cancel_requested = true;
		s = k->s;
		session_ref(s);
		cid = json_incref(k->call_id);
		pthread_cond_broadcast(&t->changed);
	}
	pthread_mutex_unlock(&t->mu);
	if (s != NULL) {
		/* the call ends cancelled; tasks_finish marks the task */
		call_cancel_request(s, cid);
		session_unref(s);
	}
	json_decref(cid);
	return k != NULL ? STATUS_OK : STATUS_NOTFOUND;
}

void
tasks_sweep(struct task_table *t, int64_t now_ms)
{
	struct task **pp, *k, *dead = NULL;

	pthread_mutex_lock(&t->mu);
	for (pp = &t->head; (k = *pp) != NULL;) {
		if (terminal(k) && now_ms - k->created_ms > TASK_TTL_MS) {
			*pp = k->next;
			k->next = dead;
			dead = k;
			t->count--;
		} else {
			pp = &k->next;
		}
	}
	pthread_mutex_unlock(&t->mu);
	while (dead != NULL) {
		k = dead->next;
		task_free(dead);
		dead = k;
	}
}

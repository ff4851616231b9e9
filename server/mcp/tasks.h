/*
 * tasks.h - the tasks extension of MCP 2026-07-28
 * (io.modelcontextprotocol/tasks): a tools/call that turns into a task
 * answers at once with a CreateTaskResult, runs on, and is polled with
 * tasks/get, fed input with tasks/update and stopped with tasks/cancel.
 * The table owns the tasks; each keeps its outcome for TASK_TTL_MS after
 * creation.  A task id is 128 random bits, and a task belongs to the
 * principal that created it (its session's owner, the key the sessions are
 * bound to; "" without credentials): tasks/get, update and cancel from
 * another principal find no such task, as for an unknown id (MCP
 * authorization: bind to the principal, not to a guessable id alone).
 * Tasks live in this process only: a replica answers for the tasks it
 * runs.  Thread-safe: one mutex guards the table.
 */
#ifndef SEXTANT_TASKS_H
#define SEXTANT_TASKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

#define TASKS_EXTENSION "io.modelcontextprotocol/tasks"
/* Tasks kept at once; a full table runs new calls synchronously. */
#define TASKS_MAX    1024
#define TASK_TTL_MS  (60 * 60 * 1000)
#define TASK_POLL_MS 500

struct session;
struct task;
struct task_table;

int tasks_new(struct task_table **out) WUR;
/* Frees every task.  No call may be running (after the worker pool). */
void tasks_free(struct task_table *t);

/*
 * A new working task for the call of request id on session s (both
 * referenced by the task while it runs), owned by s->owner.  *out is the
 * table's: valid until tasks_finish.  STATUS_FULL past TASKS_MAX,
 * STATUS_IO (CSPRNG), STATUS_NOMEM.
 */
int tasks_create(struct task_table *t, struct session *s, const json_t *id,
		 struct task **out) WUR;

/* The CreateTaskResult of k (new reference; NULL: out of memory). */
json_t *tasks_created_json(struct task_table *t, struct task *k);

/*
 * k's call ended: response is its JSON-RPC response (stolen; a result
 * makes the task completed, isError included; an error failed), or NULL
 * when it was cancelled.  k must not be used afterwards.
 */
void tasks_finish(struct task_table *t, struct task *k, json_t *response);

/*
 * Input for k's call: the task is input_required with the requests not
 * answered yet (requests: {key: {method, params}}, borrowed) until
 * tasks/update has answered every key; then *responses is a new object
 * {key: answer}.  Polls cancelled(arg) every 100 ms: STATUS_CANCELLED.
 */
int tasks_wait_input(struct task_table *t, struct task *k,
		     const json_t *requests, json_t **responses,
		     bool (*cancelled)(void *arg), void *arg) WUR;

/* tasks/get for the principal owner (a session's owner): *result the
 * DetailedTask (new reference).  STATUS_NOTFOUND for an unknown or expired
 * id, or one another principal created. */
int tasks_get(struct task_table *t, const char *id, const char *owner,
	      json_t **result) WUR;

/* tasks/update: answers (borrowed) for the keys still outstanding are
 * kept, others ignored.  STATUS_NOTFOUND as tasks_get. */
int tasks_update(struct task_table *t, const char *id, const char *owner,
		 const json_t *answers) WUR;

/* tasks/cancel: asks the running call to stop (a terminal task stays as
 * it is).  STATUS_NOTFOUND as tasks_get. */
int tasks_cancel(struct task_table *t, const char *id, const char *owner) WUR;

/* Drops tasks past their TTL that are terminal (janitor, once a second). */
void tasks_sweep(struct task_table *t, int64_t now_ms);

#endif

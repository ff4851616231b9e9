/*
 * pool.h - fixed set of worker threads fed from one bounded FIFO queue.
 *
 * Tool calls run here so that the HTTP threads never block on a backend.
 * The queue is bounded: a full queue is reported at once (the caller
 * answers 503), never waited on.  Workers run with signals blocked, so the
 * main thread alone receives them.
 */
#ifndef SEXTANT_POOL_H
#define SEXTANT_POOL_H

#include <pthread.h>

#include "base/status.h"

/*
 * pthread_create(thread, NULL, fn, arg) with every signal blocked in the
 * new thread but the synchronous fault signals, so that signals stay with
 * the main thread (the workers here, and any other long-lived thread of
 * the process: the pg maintainer, the LISTEN connection).  The caller's
 * own mask is unchanged.  Returns pthread_create's result.
 */
int pool_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);

/* Bounds checked by pool_new. */
#define POOL_THREADS_MAX    1024
#define POOL_QUEUE_SIZE_MAX 1000000

/*
 * Embed in your own struct; the pool never allocates per job.  The caller
 * owns the job until pool_submit returns STATUS_OK; from then on the pool
 * holds it until it calls run, and run owns it (it may free it).  The pool
 * never touches a job after calling run.  A job may be queued only once at
 * a time.
 */
struct pool_job {
	void (*run)(
		struct pool_job *
			job); /* called on a worker thread; the job belongs to run from then on */
	struct pool_job *next; /* pool-private */
};

struct pool;

/*
 * Starts threads workers (1..POOL_THREADS_MAX) with room for queue_size
 * waiting jobs (1..POOL_QUEUE_SIZE_MAX).  STATUS_INVALID for sizes out of
 * range or out == NULL, STATUS_NOMEM when memory or a thread cannot be
 * had.  *out is NULL on failure.  Free with pool_free().
 */
int pool_new(int threads, int queue_size, struct pool **out) WUR;

/*
 * Queues job (run must be set) for the next free worker, in FIFO order.
 * STATUS_FULL when queue_size jobs are already waiting (caller answers
 * 503), STATUS_CLOSED after pool_drain or pool_free has begun,
 * STATUS_INVALID for NULL arguments.  Never blocks.  Thread-safe; may be
 * called from inside a job.  On any error the caller still owns job.
 */
int pool_submit(struct pool *pool, struct pool_job *job) WUR;

/* Jobs waiting for a worker / jobs running now.  Thread-safe; a snapshot. */
int pool_queue_depth(struct pool *pool);
int pool_busy(struct pool *pool);

/*
 * Stops accepting jobs, then waits up to timeout_ms (negative: no limit)
 * for the queued and running jobs to finish; the workers keep running the
 * queue meanwhile.  STATUS_OK when none is left, STATUS_TIMEOUT if some
 * are still queued or running (they go on; pool_free will wait for them),
 * STATUS_INVALID for a NULL pool.  Never call from inside a job.
 */
int pool_drain(struct pool *pool, int timeout_ms) WUR;

/*
 * Stops accepting, runs (does not drop) what is queued, joins the threads
 * and frees the pool.  Waits for running jobs without limit: use
 * pool_drain first when a deadline matters.  Accepts NULL.  Never call
 * from inside a job.
 */
void pool_free(struct pool *pool);

#endif

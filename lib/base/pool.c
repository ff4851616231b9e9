/*
 * pool.c - worker threads, one bounded FIFO queue, drain and shutdown.
 *
 * Locking rules
 * -------------
 * - One mutex (pool->mu) guards every field below it in struct pool: the
 *   queue (head, tail, depth), busy, closed and stopping.  Nothing else is
 *   shared; threads[] is written only by pool_new and read by pool_free.
 * - pool->work is signalled (one waiter) when a job is queued and
 *   broadcast when stopping is set; workers wait on it while the queue is
 *   empty.
 * - pool->idle is broadcast when the pool becomes idle (queue empty and
 *   busy == 0); pool_drain waits on it.  It uses CLOCK_MONOTONIC so that
 *   a wall-clock step cannot shorten or stretch a drain.
 * - The mutex is never held while a job runs, so a job may submit jobs,
 *   and a job that blocks holds up only its own worker.
 * - Jobs leave the queue in the order they entered it (FIFO).  A job is
 *   never touched after its run is called: run owns it from then on.
 * - closed (no more submits) is set by pool_drain and pool_free; stopping
 *   (workers leave once the queue is empty) only by pool_free.
 */
#include "base/pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct pool {
	int nthreads; /* threads started, all joined by pool_free */
	int queue_size;
	pthread_mutex_t mu;
	pthread_cond_t work;
	pthread_cond_t idle;
	struct pool_job *head, *tail;
	int depth;
	int busy;
	bool closed;
	bool stopping;
	pthread_t threads[];
};

static void *
pool_worker(void *arg)
{
	struct pool *pool = arg;
	struct pool_job *job;

	pthread_mutex_lock(&pool->mu);
	for (;;) {
		while (pool->head == NULL && !pool->stopping)
			pthread_cond_wait(&pool->work, &pool->mu);
		job = pool->head;
		if (job == NULL)
			break;
		pool->head = job->next;
		if (pool->head == NULL)
			pool->tail = NULL;
		job->next = NULL;
		pool->depth--;
		pool->busy++;
		pthread_mutex_unlock(&pool->mu);

		job->run(job);

		pthread_mutex_lock(&pool->mu);
		pool->busy--;
		if (pool->busy == 0 && pool->head == NULL)
			pthread_cond_broadcast(&pool->idle);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

/*
 * A new thread inherits the creating thread's signal mask, so it is set
 * around pthread_create: a signal can never land on the thread, not even
 * in the instant before it could block it itself.  Synchronous fault
 * signals stay unblocked: raised while blocked they kill the process
 * without running a handler (POSIX leaves it undefined), which would hide
 * the crash report of a sanitizer or a crash handler.
 */
int
pool_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	static const int faults[] = {SIGSEGV, SIGBUS,  SIGFPE,
				     SIGILL,  SIGTRAP, SIGSYS};
	sigset_t block, old;
	int rc;

	sigfillset(&block);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&block, faults[i]);
	pthread_sigmask(SIG_SETMASK, &block, &old);
	rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Stops the workers, joins them and frees the pool. */
static void
pool_destroy(struct pool *pool)
{
	pthread_mutex_lock(&pool->mu);
	pool->closed = true;
	pool->stopping = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->mu);
	for (int i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->idle);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->mu);
	free(pool);
}

int
pool_new(int threads, int queue_size, struct pool **out)
{
	struct pool *pool = NULL;
	pthread_condattr_t attr;
	bool attr_ok = false, mu_ok = false, work_ok = false, idle_ok = false;
	int rc = STATUS_NOMEM;

	if (out == NULL)
		return STATUS_INVALID;
	*out = NULL;
	if (threads < 1 || threads > POOL_THREADS_MAX || queue_size < 1 ||
	    queue_size > POOL_QUEUE_SIZE_MAX)
		return STATUS_INVALID;

	pool = calloc(1, sizeof(*pool) + (size_t)threads * sizeof(pthread_t));
	if (pool == NULL)
		goto out;
	pool->queue_size = queue_size;
	if (pthread_condattr_init(&attr) != 0)
		goto out;
	attr_ok = true;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0)
		goto out;
	mu_ok = pthread_mutex_init(&pool->mu, NULL) == 0;
	work_ok = mu_ok && pthread_cond_init(&pool->work, NULL) == 0;
	idle_ok = work_ok && pthread_cond_init(&pool->idle, &attr) == 0;
	if (!idle_ok)
		goto out;

	for (; pool->nthreads < threads; pool->nthreads++)
		if (pool_thread_create(&pool->threads[pool->nthreads],
				       pool_worker, pool) != 0)
			break;
	if (pool->nthreads < threads)
		goto out;

	*out = pool;
	pool = NULL;
	rc = STATUS_OK;
out:
	if (pool != NULL) {
		if (idle_ok) {
			pool_destroy(pool);
		} else {
			if (work_ok)
				pthread_cond_destroy(&pool->work);
			if (mu_ok)
				pthread_mutex_destroy(&pool->mu);
			free(pool);
		}
	}
	if (attr_ok)
		pthread_condattr_destroy(&attr);
	return rc;
}

int
pool_submit(struct pool *pool, struct pool_job *job)
{
	int rc = STATUS_OK;

	if (pool == NULL || job == NULL || job->run == NULL)
		return STATUS_INVALID;
	pthread_mutex_lock(&pool->mu);
	if (pool->closed) {
		rc = STATUS_CLOSED;
		goto out;
	}
	if (pool->depth >= pool->queue_size) {
		rc = STATUS_FULL;
		goto out;
	}
	job->next = NULL;
	if (pool->tail != NULL)
		pool->tail->next = job;
	else
		pool->head = job;
	pool->tail = job;
	pool->depth++;
	pthread_cond_signal(&pool->work);
out:
	pthread_mutex_unlock(&pool->mu);
	return rc;
}

int
pool_queue_depth(struct pool *pool)
{
	int n;

	if (pool == NULL)
		return 0;
	pthread_mutex_lock(&pool->mu);
	n = pool->depth;
	pthread_mutex_unlock(&pool->mu);
	return n;
}

int
pool_busy(struct pool *pool)
{
	int n;

	if (pool == NULL)
		return 0;
	pthread_mutex_lock(&pool->mu);
	n = pool->busy;
	pthread_mutex_unlock(&pool->mu);
	return n;
}

int
pool_drain(struct pool *pool, int timeout_ms)
{
	struct timespec deadline;
	int rc = STATUS_OK;

	if (pool == NULL)
		return STATUS_INVALID;
	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}

	pthread_mutex_lock(&pool->mu);
	pool->closed = true;
	while (pool->depth > 0 || pool->busy > 0) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&pool->idle, &pool->mu);
		} else if (pthread_cond_timedwait(&pool->idle, &pool->mu,
						  &deadline) == ETIMEDOUT) {
			if (pool->depth > 0 || pool->busy > 0)
				rc = STATUS_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&pool->mu);
	return rc;
}

void
pool_free(struct pool *pool)
{
	if (pool == NULL)
		return;
	pool_destroy(pool);
}

/*
 * test_pool.c - unit tests for lib/base/pool: exactly-once under concurrent
 * submitters, FIFO, bounded queue, drain and shutdown, signal masks.
 * Worker-side code only records; every assertion runs on the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/pool.h"

#define JOB_OF(ptr, type) ((type *)((char *)(ptr)-offsetof(type, job)))

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- a job that blocks until the test opens it ------------------------ */

struct gate {
	struct pool_job job;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered;
	bool open;
};

static void
gate_run(struct pool_job *job)
{
	struct gate *g = JOB_OF(job, struct gate);

	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_init(struct gate *g)
{
	memset(g, 0, sizeof(*g));
	g->job.run = gate_run;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
}

static void
gate_wait_entered(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->entered)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

/* ---- a job that counts its runs --------------------------------------- */

struct count_job {
	struct pool_job job;
	atomic_int runs;
	long sleep_ms;
};

static void
count_run(struct pool_job *job)
{
	struct count_job *c = JOB_OF(job, struct count_job);

	if (c->sleep_ms > 0)
		sleep_ms(c->sleep_ms);
	atomic_fetch_add(&c->runs, 1);
}

static void
count_init(struct count_job *c, long sleep)
{
	memset(c, 0, sizeof(*c));
	c->job.run = count_run;
	atomic_init(&c->runs, 0);
	c->sleep_ms = sleep;
}

/* ---- sizes ------------------------------------------------------------- */

static void
test_sizes(void **state)
{
	static const struct {
		int threads, queue_size, want;
	} cases[] = {
		{0, 1, STATUS_INVALID},
		{-1, 1, STATUS_INVALID},
		{INT_MIN, 1, STATUS_INVALID},
		{POOL_THREADS_MAX + 1, 1, STATUS_INVALID},
		{INT_MAX, 1, STATUS_INVALID},
		{1, 0, STATUS_INVALID},
		{1, -5, STATUS_INVALID},
		{1, POOL_QUEUE_SIZE_MAX + 1, STATUS_INVALID},
		{1, INT_MAX, STATUS_INVALID},
		{1, 1, STATUS_OK},
		{1, POOL_QUEUE_SIZE_MAX, STATUS_OK},
		{POOL_THREADS_MAX, 1, STATUS_OK},
	};
	struct pool *pool;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pool = (struct pool *)&pool; /* must be reset to NULL */
		int rc = pool_new(cases[i].threads, cases[i].queue_size, &pool);
		assert_int_equal(rc, cases[i].want);
		if (rc != STATUS_OK)
			assert_null(pool);
		else
			assert_non_null(pool);
		pool_free(pool);
	}
	assert_int_equal(pool_new(1, 1, NULL), STATUS_INVALID);
	pool_free(NULL);
}

static void
test_submit_invalid(void **state)
{
	struct pool *pool;
	struct pool_job job = {NULL, NULL};

	(void)state;
	assert_int_equal(pool_new(1, 4, &pool), STATUS_OK);
	assert_int_equal(pool_submit(pool, NULL), STATUS_INVALID);
	assert_int_equal(pool_submit(pool, &job), STATUS_INVALID);
	job.run = count_run;
	assert_int_equal(pool_submit(NULL, &job), STATUS_INVALID);
	assert_int_equal(pool_drain(NULL, 0), STATUS_INVALID);
	assert_int_equal(pool_queue_depth(NULL), 0);
	assert_int_equal(pool_busy(NULL), 0);
	pool_free(pool);
}

/* ---- exactly once under concurrent submitters ------------------------- */

#define SUBMITTERS	   4
#define JOBS_PER_SUBMITTER 2500
#define TOTAL_JOBS	   (SUBMITTERS * JOBS_PER_SUBMITTER)

static atomic_int runs_by_id[TOTAL_JOBS];
static atomic_int full_seen;

/* Heap-allocated and freed by run: the pool must not touch it after. */
struct owned_job {
	struct pool_job job;
	int id;
};

static void
owned_run(struct pool_job *job)
{
	struct owned_job *o = JOB_OF(job, struct owned_job);

	atomic_fetch_add(&runs_by_id[o->id], 1);
	free(o);
}

struct submitter {
	struct pool *pool;
	int first;
	int failures; /* submits that failed other than with STATUS_FULL */
};

static void *
submitter_main(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < JOBS_PER_SUBMITTER; i++) {
		struct owned_job *o = malloc(sizeof(*o));
		int rc;

		if (o == NULL) {
			s->failures++;
			continue;
		}
		o->job.run = owned_run;
		o->id = s->first + i;
		while ((rc = pool_submit(s->pool, &o->job)) == STATUS_FULL) {
			atomic_fetch_add(&full_seen, 1);
			sched_yield();
		}
		if (rc != STATUS_OK) {
			s->failures++;
			free(o);
		}
	}
	return NULL;
}

static void
test_concurrent_exactly_once(void **state)
{
	struct pool *pool;
	pthread_t tids[SUBMITTERS];
	struct submitter subs[SUBMITTERS];

	(void)state;
	for (int i = 0; i < TOTAL_JOBS; i++)
		atomic_init(&runs_by_id[i], 0);
	/* A small queue so submitters also meet STATUS_FULL and retry. */
	assert_int_equal(pool_new(3, 16, &pool), STATUS_OK);
	for (int i = 0; i < SUBMITTERS; i++) {
		subs[i] = (struct submitter){pool, i * JOBS_PER_SUBMITTER, 0};
		assert_int_equal(pthread_create(&tids[i], NULL, submitter_main,
						&subs[i]),
				 0);
	}
	for (int i = 0; i < SUBMITTERS; i++) {
		pthread_join(tids[i], NULL);
		assert_int_equal(subs[i].failures, 0);
	}
	assert_int_equal(pool_drain(pool, 30000), STATUS_OK);
	assert_int_equal(pool_queue_depth(pool), 0);
	assert_int_equal(pool_busy(pool), 0);
	for (int i = 0; i < TOTAL_JOBS; i++)
		if (atomic_load(&runs_by_id[i]) != 1)
			fail_msg("job %d ran %d times", i,
				 atomic_load(&runs_by_id[i]));
	pool_free(pool);
}

/* ---- FIFO with one worker --------------------------------------------- */

#define FIFO_JOBS 100

struct order_job {
	struct pool_job job;
	int id;
};

static int order_seen[FIFO_JOBS];
static int order_n; /* written by the single worker only */

static void
order_run(struct pool_job *job)
{
	struct order_job *o = JOB_OF(job, struct order_job);

	if (order_n < FIFO_JOBS)
		order_seen[order_n] = o->id;
	order_n++;
}

static void
test_fifo_one_worker(void **state)
{
	struct pool *pool;
	struct gate gate;
	struct order_job jobs[FIFO_JOBS];

	(void)state;
	gate_init(&gate);
	order_n = 0;
	assert_int_equal(pool_new(1, FIFO_JOBS, &pool), STATUS_OK);
	/* Hold the worker so that every job is queued before any runs. */
	assert_int_equal(pool_submit(pool, &gate.job), STATUS_OK);
	gate_wait_entered(&gate);
	for (int i = 0; i < FIFO_JOBS; i++) {
		jobs[i].job.run = order_run;
		jobs[i].id = i;
		assert_int_equal(pool_submit(pool, &jobs[i].job), STATUS_OK);
	}
	assert_int_equal(pool_queue_depth(pool), FIFO_JOBS);
	gate_open(&gate);
	assert_int_equal(pool_drain(pool, 10000), STATUS_OK);
	assert_int_equal(order_n, FIFO_JOBS);
	for (int i = 0; i < FIFO_JOBS; i++)
		assert_int_equal(order_seen[i], i);
	pool_free(pool);
	gate_destroy(&gate);
}

/* ---- bounded queue ---------------------------------------------------- */

static void
test_full(void **state)
{
	struct pool *pool;
	struct gate gate;
	struct count_job a, b, c;

	(void)state;
	gate_init(&gate);
	count_init(&a, 0);
	count_init(&b, 0);
	count_init(&c, 0);
	assert_int_equal(pool_new(1, 2, &pool), STATUS_OK);
	assert_int_equal(pool_submit(pool, &gate.job), STATUS_OK);
	gate_wait_entered(&gate);
	assert_int_equal(pool_busy(pool), 1);
	assert_int_equal(pool_queue_depth(pool), 0);
	assert_int_equal(pool_submit(pool, &a.job), STATUS_OK);
	assert_int_equal(pool_submit(pool, &b.job), STATUS_OK);
	assert_int_equal(pool_queue_depth(pool), 2);
	assert_int_equal(pool_submit(pool, &c.job), STATUS_FULL);
	assert_int_equal(pool_queue_depth(pool), 2);
	gate_open(&gate);
	assert_int_equal(pool_drain(pool, 10000), STATUS_OK);
	assert_int_equal(atomic_load(&a.runs), 1);
	assert_int_equal(atomic_load(&b.runs), 1);
	assert_int_equal(atomic_load(&c.runs), 0); /* refused, never run */
	pool_free(pool);
	gate_destroy(&gate);
}

/* ---- drain ------------------------------------------------------------ */

static void
test_drain_waits(void **state)
{
	static const int timeouts[] = {10000, -1};

	(void)state;
	for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]); t++) {
		struct pool *pool;
		struct count_job slow, queued[3];

		count_init(&slow, 100);
		assert_int_equal(pool_new(2, 8, &pool), STATUS_OK);
		assert_int_equal(pool_submit(pool, &slow.job), STATUS_OK);
		for (int i = 0; i < 3; i++) {
			count_init(&queued[i], 10);
			assert_int_equal(pool_submit(pool, &queued[i].job),
					 STATUS_OK);
		}
		assert_int_equal(pool_drain(pool, timeouts[t]), STATUS_OK);
		assert_int_equal(atomic_load(&slow.runs), 1);
		for (int i = 0; i < 3; i++)
			assert_int_equal(atomic_load(&queued[i].runs), 1);
		assert_int_equal(pool_busy(pool), 0);
		assert_int_equal(pool_queue_depth(pool), 0);
		pool_free(pool);
	}
}

static void
test_drain_timeout(void **state)
{
	struct pool *pool;
	struct gate gate;
	struct count_job queued, late;
	long t0, elapsed;

	(void)state;
	gate_init(&gate);
	count_init(&queued, 0);
	count_init(&late, 0);
	assert_int_equal(pool_new(1, 4, &pool), STATUS_OK);
	assert_int_equal(pool_submit(pool, &gate.job), STATUS_OK);
	gate_wait_entered(&gate);
	assert_int_equal(pool_submit(pool, &queued.job), STATUS_OK);

	t0 = now_ms();
	assert_int_equal(pool_drain(pool, 100), STATUS_TIMEOUT);
	elapsed = now_ms() - t0;
	assert_true(elapsed >= 99);
	assert_true(elapsed < 5000);
	assert_int_equal(pool_busy(pool), 1);
	assert_int_equal(pool_queue_depth(pool), 1);
	assert_int_equal(pool_submit(pool, &late.job), STATUS_CLOSED);

	/* A zero timeout only checks. */
	t0 = now_ms();
	assert_int_equal(pool_drain(pool, 0), STATUS_TIMEOUT);
	assert_true(now_ms() - t0 < 1000);

	gate_open(&gate);
	assert_int_equal(pool_drain(pool, 10000), STATUS_OK);
	assert_int_equal(atomic_load(&queued.runs), 1);
	assert_int_equal(atomic_load(&late.runs), 0);
	pool_free(pool);
	gate_destroy(&gate);
}

static void
test_submit_after_drain(void **state)
{
	struct pool *pool;
	struct count_job before, after;

	(void)state;
	count_init(&before, 0);
	count_init(&after, 0);
	assert_int_equal(pool_new(2, 4, &pool), STATUS_OK);
	assert_int_equal(pool_submit(pool, &before.job), STATUS_OK);
	assert_int_equal(pool_drain(pool, 10000), STATUS_OK);
	assert_int_equal(pool_submit(pool, &after.job), STATUS_CLOSED);
	assert_int_equal(pool_drain(pool, 0), STATUS_OK);
	pool_free(pool);
	assert_int_equal(atomic_load(&before.runs), 1);
	assert_int_equal(atomic_load(&after.runs), 0);
}

/* ---- pool_free runs what is queued ------------------------------------ */

static void *
open_later(void *arg)
{
	sleep_ms(50);
	gate_open(arg);
	return NULL;
}

static void
test_free_runs_queued(void **state)
{
	struct pool *pool;
	struct gate gate;
	struct count_job jobs[10];
	pthread_t opener;

	(void)state;
	gate_init(&gate);
	assert_int_equal(pool_new(1, 10, &pool), STATUS_OK);
	assert_int_equal(pool_submit(pool, &gate.job), STATUS_OK);
	gate_wait_entered(&gate);
	for (int i = 0; i < 10; i++) {
		count_init(&jobs[i], 0);
		assert_int_equal(pool_submit(pool, &jobs[i].job), STATUS_OK);
	}
	assert_int_equal(pool_queue_depth(pool), 10);
	/* The gate opens while pool_free is already waiting. */
	assert_int_equal(pthread_create(&opener, NULL, open_later, &gate), 0);
	pool_free(pool);
	pthread_join(opener, NULL);
	for (int i = 0; i < 10; i++)
		assert_int_equal(atomic_load(&jobs[i].runs), 1);
	gate_destroy(&gate);
}

/* ---- a job may submit another ----------------------------------------- */

struct chain_job {
	struct pool_job job;
	struct pool *pool;
	struct count_job *next;
	int submit_rc;
};

static void
chain_run(struct pool_job *job)
{
	struct chain_job *c = JOB_OF(job, struct chain_job);

	c->submit_rc = pool_submit(c->pool, &c->next->job);
}

static void
test_submit_from_job(void **state)
{
	struct pool *pool;
	struct count_job next;
	struct chain_job chain;

	(void)state;
	count_init(&next, 0);
	assert_int_equal(pool_new(1, 4, &pool), STATUS_OK);
	chain = (struct chain_job){{chain_run, NULL}, pool, &next, -1};
	assert_int_equal(pool_submit(pool, &chain.job), STATUS_OK);
	/* Not drained: a drained pool refuses submits, from jobs too. */
	for (int i = 0; i < 10000 && atomic_load(&next.runs) == 0; i++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&next.runs), 1);
	pool_free(pool);
	assert_int_equal(chain.submit_rc, STATUS_OK);
}

/* ---- signals ---------------------------------------------------------- */

static const int async_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
				    SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD,
				    SIGALRM, SIGWINCH};

struct mask_job {
	struct pool_job job;
	sigset_t mask;
	int mask_rc;
	int kill_rc;
};

static void
mask_run(struct pool_job *job)
{
	struct mask_job *m = JOB_OF(job, struct mask_job);

	m->mask_rc = pthread_sigmask(SIG_BLOCK, NULL, &m->mask);
	/* Process-directed: must land on the main thread, not here. */
	m->kill_rc = kill(getpid(), SIGUSR1);
}

static volatile sig_atomic_t usr1_seen;
static volatile sig_atomic_t usr1_on_main;
static pthread_t main_thread;

static void
on_usr1(int sig)
{
	(void)sig;
	usr1_on_main = pthread_equal(pthread_self(), main_thread) ? 1 : 0;
	usr1_seen = 1;
}

static void
test_workers_block_signals(void **state)
{
	struct pool *pool;
	struct mask_job jobs[2];
	struct sigaction sa, old_sa;
	sigset_t unblock, main_mask;

	(void)state;
	main_thread = pthread_self();
	usr1_seen = 0;
	usr1_on_main = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old_sa), 0);
	sigemptyset(&unblock);
	sigaddset(&unblock, SIGUSR1);
	sigaddset(&unblock, SIGTERM);
	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &unblock, NULL), 0);

	memset(jobs, 0, sizeof(jobs));
	assert_int_equal(pool_new(2, 4, &pool), STATUS_OK);
	/* pool_new restores the caller's mask. */
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &main_mask), 0);
	assert_false(sigismember(&main_mask, SIGUSR1));
	assert_false(sigismember(&main_mask, SIGTERM));

	for (int i = 0; i < 2; i++) {
		jobs[i].job.run = mask_run;
		jobs[i].mask_rc = jobs[i].kill_rc = -1;
		assert_int_equal(pool_submit(pool, &jobs[i].job), STATUS_OK);
	}
	assert_int_equal(pool_drain(pool, 10000), STATUS_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(jobs[i].mask_rc, 0);
		assert_int_equal(jobs[i].kill_rc, 0);
		for (size_t s = 0;
		     s < sizeof(async_signals) / sizeof(async_signals[0]); s++)
			if (sigismember(&jobs[i].mask, async_signals[s]) != 1)
				fail_msg("signal %d not blocked in a worker",
					 async_signals[s]);
		assert_true(sigismember(&jobs[i].mask, SIGRTMIN));
		/* Faults stay deliverable so crash handlers still run. */
		assert_false(sigismember(&jobs[i].mask, SIGSEGV));
	}
	for (int i = 0; i < 1000 && !usr1_seen; i++)
		sleep_ms(1);
	assert_true(usr1_seen);
	assert_true(usr1_on_main);
	pool_free(pool);
	assert_int_equal(sigaction(SIGUSR1, &old_sa, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_submit_invalid),
		cmocka_unit_test(test_concurrent_exactly_once),
		cmocka_unit_test(test_fifo_one_worker),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_drain_waits),
		cmocka_unit_test(test_drain_timeout),
		cmocka_unit_test(test_submit_after_drain),
		cmocka_unit_test(test_free_runs_queued),
		cmocka_unit_test(test_submit_from_job),
		cmocka_unit_test(test_workers_block_signals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

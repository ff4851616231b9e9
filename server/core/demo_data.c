/*
 * demo.c - `sextant demo-data`: loads the demo dataset of lib/demo into the
 * store.  The main thread generates batches; DEMO_WRITERS threads, each on
 * a connection of its own, COPY them in (lib/otlp/store, one transaction per
 * batch) while the next ones are generated.
 *
 * Locking: one mutex guards the queue of filled buffers, the free list and
 * the counters; the generator (struct demo) is touched by the main thread
 * only, a buffer by whoever took it from a list.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/config.h"
#include "core/demo_data.h" /* server/core/demo_data.h: this command */
#include "core/maintain.h"
#include "otlp/store.h"
#include "pg/pg.h"
#include "telemetry/rollup.h"

/* lib/demo/demo.h, the generator: "demo.h" alone finds this directory's */
#include "demo/demo.h"

enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,
	EXIT_USAGE = 2,
};

/* Two writers keep both a client core and the server busy on a small
 * machine; more only queue on the same disk and locks. */
#define DEMO_WRITERS 2
#define DEMO_BUFS    (DEMO_WRITERS + 2)
/* A batch is one COPY transaction: generous, a slow disk must not abort
 * a load that is merely slow. */
#define DEMO_STATEMENT_TIMEOUT_MS (10 * 60 * 1000)
#define DEMO_CONNECT_WAIT_MS	  10000

struct slot {
	struct demo_buf *buf;
	struct otlp_batch b;
	bool points;
};

struct loader {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* any change below */
	struct pg_pool *pg;
	struct slot slots[DEMO_BUFS];
	int queue[DEMO_BUFS]; /* filled slots, FIFO */
	int q_head, q_len;
	int free_list[DEMO_BUFS];
	int n_free;
	bool done;	/* nothing more will be queued */
	bool failed;	/* a writer failed: stop */
	char err[1024]; /* what stopped the load: room for a pg_error */
	uint64_t spans_total;
	uint64_t spans_written, points_written;
	int64_t spans_new, points_new;
	double spans_done_at; /* seconds since start when all spans were in */
	struct timespec t0;
};

static double
elapsed(const struct loader *l)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - l->t0.tv_sec) +
	       (double)(t.tv_nsec - l->t0.tv_nsec) / 1e9;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: sextant demo-data [--spans N] [--seed S] "
		   "[--config FILE]\n"
		   "\n"
		   "Loads a deterministic demo dataset covering the 24 hours "
		   "up to now into the\n"
		   "store (DATABASE_URL or [database] url), after applying "
		   "the migrations.\n"
		   "  --spans N      span rows to write (default 200000, at "
		   "most 1000000000)\n"
		   "  --seed S       seed of the generator (default 1); the "
		   "same seed, N and\n"
		   "                 minute give the same rows\n"
		   "  --config FILE  configuration file\n");
}

/* An unsigned decimal in [min, max]: no sign, no trailing text. */
static bool
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static void
set_failed(struct loader *l, const char *what, const struct pg_error *err)
{
	pthread_mutex_lock(&l->mu);
	if (!l->failed)
		snprintf(l->err, sizeof(l->err), "%s: %s (%s)", what,
			 err->client, err->detail);
	l->failed = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static void *
writer(void *arg)
{
	struct loader *l = arg;
	struct pg_conn *c = NULL;
	struct pg_error err;

	if (pg_acquire(l->pg, NULL, -1, &c, &err) != STATUS_OK) {
		set_failed(l, "cannot get a database connection", &err);
		return NULL;
	}
	if (pg_set_timeout(c, DEMO_STATEMENT_TIMEOUT_MS, &err) != STATUS_OK) {
		set_failed(l, "cannot set the statement timeout", &err);
		goto out;
	}
	for (;;) {
		struct slot *s;
		int i, rc;
		int64_t inserted = 0;

		pthread_mutex_lock(&l->mu);
		while (l->q_len == 0 && !l->done && !l->failed)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->q_len == 0 || l->failed) {
			pthread_mutex_unlock(&l->mu);
			break;
		}
		i = l->queue[l->q_head];
		l->q_head = (l->q_head + 1) % DEMO_BUFS;
		l->q_len--;
		pthread_mutex_unlock(&l->mu);

		s = &l->slots[i];
		rc = s->points ? store_write_points(c, &s->b, &inserted, &err)
			       : store_write_spans(c, &s->b, &inserted, &err);
		if (rc != STATUS_OK) {
			set_failed(l,
				   s->points ? "writing metric points failed"
					     : "writing spans failed",
				   &err);
			break;
		}
		pthread_mutex_lock(&l->mu);
		if (s->points) {
			l->points_written += s->b.n_points;
			l->points_new += inserted;
		} else {
			l->spans_written += s->b.n_spans;
			l->spans_new += inserted;
			if (l->spans_written == l->spans_total)
				l->spans_done_at = elapsed(l);
		}
		l->free_list[l->n_free++] = i;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
out:
	pg_release(c);
	return NULL;
}

/* Waits for a free slot; -1 when a writer failed. */
static int
take_free(struct loader *l, double *last_report)
{
	int i = -1;

	pthread_mutex_lock(&l->mu);
	while (l->n_free == 0 && !l->failed)
		pthread_cond_wait(&l->cv, &l->mu);
	if (!l->failed)
		i = l->free_list[--l->n_free];
	if (elapsed(l) - *last_report >= 1.0 && l->spans_written > 0 &&
	    l->spans_written < l->spans_total) {
		double t = elapsed(l);

		*last_report = t;
		fprintf(stderr,
			"sextant: demo-data: %" PRIu64 "/%" PRIu64
			" spans (%.0f%%), %.0f spans/s\n",
			l->spans_written, l->spans_total,
			100.0 * (double)l->spans_written /
				(double)l->spans_total,
			(double)l->spans_written / t);
	}
	pthread_mutex_unlock(&l->mu);
	return i;
}

static void
queue_slot(struct loader *l, int i)
{
	pthread_mutex_lock(&l->mu);
	l->queue[(l->q_head + l->q_len) % DEMO_BUFS] = i;
	l->q_len++;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static void
give_back(struct loader *l, int i)
{
	pthread_mutex_lock(&l->mu);
	l->free_list[l->n_free++] = i;
	pthread_mutex_unlock(&l->mu);
}

/* Generates everything and queues it for the writers: STATUS_OK, or the
 * status that stopped it (a writer's failure is in l->err). */
static int
generate(struct loader *l, struct demo *d)
{
	double last_report = 0;
	int pass, rc;

	for (pass = 0; pass < 2; pass++) {
		for (;;) {
			int i = take_free(l, &last_report);
			struct slot *s;

			if (i < 0)
				return STATUS_IO;
			s = &l->slots[i];
			s->points = pass == 1;
			rc = s->points ? demo_next_points(d, s->buf, &s->b)
				       : demo_next_spans(d, s->buf, &s->b);
			if (rc != STATUS_OK) {
				give_back(l, i);
				snprintf(l->err, sizeof(l->err),
					 "generating the dataset failed: %s",
					 status_str(rc));
				return rc;
			}
			if (s->b.n_spans == 0 && s->b.n_points == 0) {
				give_back(l, i);
				break;
			}
			queue_slot(l, i);
		}
	}
	return STATUS_OK;
}

/* Fenced refreshes tried before the rest is left to the janitor: one
 * fails only while another transaction holds an id (autovacuum's ANALYZE
 * commits in a moment; a gateway ingesting may not). */
#define DEMO_REFRESH_TRIES   5
#define DEMO_REFRESH_WAIT_MS 200

/*
 * The rollups and the planner's statistics brought up to date before
 * anything reads the data, so that `make run` serves its first call from
 * current rollups: every settled hour and minute recomputed at once
 * (rollup_refresh_fenced: the writers have committed), then ANALYZE (a
 * bulk load leaves none until autovacuum comes by) and the BRIN summaries
 * (rollup_analyze).  STATUS_OK when all of that is done; otherwise err
 * says why and what is left.
 */
static int
catch_up(struct pg_pool *pg, char *err, size_t errlen)
{
	static const char *const sql[] = {"ANALYZE spans",
					  "ANALYZE metric_points",
					  "ANALYZE span_rollup",
					  "ANALYZE span_rollup_minute",
					  "ANALYZE span_rollup_dirty",
					  "ANALYZE span_rollup_minute_dirty"};
	struct pg_conn *c = NULL;
	struct pg_error perr = {0};
	int rc, done = 0, pending = 0, total = 0, analyzed = 0;

	rc = pg_acquire(pg, NULL, -1, &c, &perr);
	if (rc == STATUS_OK)
		rc = pg_set_timeout(c, DEMO_STATEMENT_TIMEOUT_MS, &perr);
	for (int i = 0; rc == STATUS_OK && i < DEMO_REFRESH_TRIES; i++) {
		struct timespec wait = {0, DEMO_REFRESH_WAIT_MS * 1000000L};

		rc = rollup_refresh_fenced(c, &done, &pending, &perr);
		total += done;
		if (rc != STATUS_OK || pending == 0)
			break;
		nanosleep(&wait, NULL);
	}
	if (rc == STATUS_OK)
		rc = rollup_analyze(c, &analyzed, &perr);
	for (size_t i = 0; rc == STATUS_OK && i < sizeof(sql) / sizeof(sql[0]);
	     i++)
		rc = pg_query(c, sql[i], 0, NULL, NULL, &perr);
	pg_release(c);
	if (rc != STATUS_OK) {
		snprintf(err, errlen,
			 "bringing the rollups and statistics up to date "
			 "failed after %d rollup unit(s): %s (%s)",
			 total, perr.client, perr.detail);
		return rc;
	}
	if (pending > 0) {
		snprintf(
			err, errlen,
			"%d rollup unit(s) were left to the gateway's janitor: "
			"another transaction was writing",
			pending);
		return STATUS_LIMIT;
	}
	fprintf(stderr,
		"sextant: demo-data: rollups current (%d unit(s) recomputed), "
		"statistics up to date\n",
		total);
	return STATUS_OK;
}

static int
load(const struct config *cfg, const struct demo_options *opt)
{
	struct loader l;
	struct demo *d = NULL;
	struct pg_error perr;
	struct pg_pool_config pc = {
		.conninfo = cfg->database.url,
		.size = DEMO_WRITERS,
		.statement_timeout_ms = cfg->database.statement_timeout_ms,
	};
	pthread_t threads[DEMO_WRITERS];
	int n_threads = 0, i, rc, exit_code = EXIT_RUNTIME;
	char err[512];
	char why[2048]; /* catch_up: a pg_error's two messages and more */
	double total;

	memset(&l, 0, sizeof(l));
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.cv, NULL);
	l.spans_total = opt->spans;
	clock_gettime(CLOCK_MONOTONIC, &l.t0);
	if (demo_new(opt, &d, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "sextant: demo-data: %s\n", err);
		exit_code = EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < DEMO_BUFS; i++) {
		if (demo_buf_new(d, &l.slots[i].buf) != STATUS_OK) {
			fprintf(stderr, "sextant: demo-data: out of memory\n");
			goto out;
		}
		l.free_list[l.n_free++] = i;
	}
	if (pg_pool_new(&pc, &l.pg, &perr) != STATUS_OK ||
	    pg_pool_wait_ready(l.pg, DEMO_CONNECT_WAIT_MS, &perr) !=
		    STATUS_OK) {
		fprintf(stderr,
			"sextant: demo-data: cannot connect to the "
			"database: %s (%s)\n",
			perr.client, perr.detail);
		goto out;
	}
	for (i = 0; i < DEMO_WRITERS; i++) {
		if (pthread_create(&threads[i], NULL, writer, &l) != 0) {
			struct pg_error e = {.client = "cannot start a writer "
						       "thread"};

			set_failed(&l, "start-up", &e);
			break;
		}
		n_threads++;
	}
	rc = n_threads == DEMO_WRITERS ? generate(&l, d) : STATUS_IO;
	pthread_mutex_lock(&l.mu);
	l.done = true;
	pthread_cond_broadcast(&l.cv);
	pthread_mutex_unlock(&l.mu);
	for (i = 0; i < n_threads; i++)
		pthread_join(threads[i], NULL);
	if (rc != STATUS_OK || l.failed) {
		fprintf(stderr, "sextant: demo-data: %s\n",
			l.err[0] ? l.err : "stopped");
		goto out;
	}
	total = elapsed(&l);
	fprintf(stderr,
		"sextant: demo-data: %" PRIu64 " spans (%" PRId64
		" new) in %.1f s: %.0f spans/s; %" PRIu64
		" metric points (%" PRId64 " new); %.1f s in all\n",
		l.spans_written, l.spans_new, l.spans_done_at,
		l.spans_done_at > 0 ? (double)l.spans_written / l.spans_done_at
				    : 0.0,
		l.points_written, l.points_new, total);
	if (l.spans_new < (int64_t)l.spans_written)
		fprintf(stderr,
			"sextant: demo-data: %" PRId64
			" spans were already stored (same seed and minute)\n",
			(int64_t)l.spans_written - l.spans_new);
	/* left undone, the data is still all there: the gateway's janitor
	 * finishes the rollups, autovacuum the statistics */
	if (catch_up(l.pg, why, sizeof(why)) != STATUS_OK)
		fprintf(stderr, "sextant: demo-data: %s\n", why);
	exit_code = EXIT_OK;
out:
	pg_pool_free(l.pg);
	for (i = 0; i < DEMO_BUFS; i++)
		demo_buf_free(l.slots[i].buf);
	demo_free(d);
	pthread_cond_destroy(&l.cv);
	pthread_mutex_destroy(&l.mu);
	return exit_code;
}

int
demo_data_main(int argc, char **argv)
{
	struct demo_options opt = {
		.spans = DEMO_DEFAULT_SPANS,
		.seed = DEMO_DEFAULT_SEED,
	};
	struct config *cfg = NULL;
	struct config_error cerr;
	struct timespec now;
	const char *path = NULL;
	char msg[1024];
	int i, applied = 0, rc;

	/* every option but --help takes a value: two words a step */
	for (i = 2; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (strcmp(a, "--spans") == 0) {
			if (!parse_u64(v, 1, DEMO_SPANS_MAX, &opt.spans)) {
				fprintf(stderr,
					"sextant: demo-data: --spans: expected "
					"a number of spans from 1 to "
					"1000000000, got \"%s\"\n",
					v ? v : "");
				return EXIT_USAGE;
			}
		} else if (strcmp(a, "--seed") == 0) {
			if (!parse_u64(v, 0, UINT64_MAX, &opt.seed)) {
				fprintf(stderr,
					"sextant: demo-data: --seed: expected "
					"an unsigned 64-bit integer, got "
					"\"%s\"\n",
					v ? v : "");
				return EXIT_USAGE;
			}
		} else if (strcmp(a, "--config") == 0 && v != NULL) {
			path = v;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (config_load(path, NULL, &cfg, &cerr) != STATUS_OK) {
		config_error_format(&cerr, msg, sizeof(msg));
		fprintf(stderr, "sextant: invalid configuration: %s\n", msg);
		return EXIT_USAGE;
	}
	if (cfg->database.url[0] == '\0') {
		fprintf(stderr, "sextant: demo-data: no database: set "
				"DATABASE_URL or [database] url\n");
		config_free(cfg);
		return EXIT_USAGE;
	}
	if (maintain_migrate(cfg, &applied, msg, sizeof(msg)) != STATUS_OK) {
		fprintf(stderr, "sextant: demo-data: migrate: %s\n", msg);
		config_free(cfg);
		return EXIT_RUNTIME;
	}
	if (applied > 0)
		fprintf(stderr, "sextant: demo-data: %d migration(s) applied\n",
			applied);
	clock_gettime(CLOCK_REALTIME, &now);
	opt.now_unix_nano =
		(uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	fprintf(stderr,
		"sextant: demo-data: generating %" PRIu64
		" spans (seed %" PRIu64 ")\n",
		opt.spans, opt.seed);
	rc = load(cfg, &opt);
	config_free(cfg);
	return rc;
}

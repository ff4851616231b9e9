/*
 * demo.h - the demo dataset: a deterministic, realistic day of telemetry
 * (spans and metric points) generated from a seed, as otlp_batch rows ready
 * for lib/otlp/store.  Pure: no I/O, no database, no clock (the caller says what
 * "now" is), so the same options always give the same rows.
 *
 * The day: twelve services in three namespaces (shop: api-gateway, cart,
 * checkout, inventory, search; payments: payments, fraud, ledger; platform:
 * postgres, notifications, assistant, auth), seen by eBPF (Beyla), by an
 * OpenTelemetry SDK, or both (the same span twice, same trace and span ids,
 * the eBPF copy with fewer attributes).  HTTP, gRPC, SQL and Kafka spans,
 * LLM agent sessions (invoke_agent around chat and execute_tool spans), a
 * daily traffic curve, an error burst (payments answers 503 for 25 minutes
 * while ledger is unavailable, about 7 h before now), a slow dependency
 * (inventory's stock query, under GET /api/products/{id}), and per-minute
 * metric points summarising the spans (CPU and memory gauges per pod,
 * cumulative request counters and latency histograms per service).
 */
#ifndef SEXTANT_LIB_DEMO_H
#define SEXTANT_LIB_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "otlp/otlp.h"

#define DEMO_DEFAULT_SPANS 200000
#define DEMO_DEFAULT_SEED  1
/* Bounds of demo_options.spans: tens of millions for benchmarks; 10^10
 * would take days to load and fill a disk first. */
#define DEMO_SPANS_MAX 1000000000ull
/* Bounds of the batch sizes.  The largest group generated at once (an
 * assistant session, a few hundred spans) must fit in one batch. */
#define DEMO_BATCH_MIN	   1000
#define DEMO_BATCH_MAX	   1000000
#define DEMO_BATCH_DEFAULT 10000
/* The window: the 24 hours before now, now floored to the minute. */
#define DEMO_WINDOW_NS	 (24ull * 3600 * 1000000000)
#define DEMO_WINDOW_MINS (24 * 60)

struct demo_options {
	uint64_t spans; /* rows in total, 1..DEMO_SPANS_MAX (exactly) */
	uint64_t seed;	/* any value */
	/* End of the window, Unix nanoseconds; floored to the minute, so two
	 * runs in the same minute give the same rows.  Must be past
	 * DEMO_WINDOW_NS. */
	uint64_t now_unix_nano;
	size_t batch_spans;  /* spans per demo_next_spans; 0: default */
	size_t batch_points; /* points per demo_next_points; 0: default */
};

struct demo;
struct demo_buf;

/*
 * Checks opt and prepares a generator (a few MiB: the per-minute summaries
 * the metric points are made from).  STATUS_INVALID for an option out of
 * range (err says which), STATUS_NOMEM.  *out is NULL on failure; free
 * with demo_free.  A generator is used by one thread at a time; two
 * generators share nothing.
 */
int demo_new(const struct demo_options *opt, struct demo **out, char *err,
	     size_t errlen) WUR;

/* Frees the generator.  Accepts NULL.  Buffers are freed on their own. */
void demo_free(struct demo *d);

/*
 * The storage of one batch: its rows and their text (about 15 MiB of
 * address space with the default batch sizes, touched as it fills).
 * Several buffers let batches be written while the next is generated.
 * STATUS_NOMEM; *out is NULL on failure.  demo_buf_free accepts NULL.
 */
int demo_buf_new(const struct demo *d, struct demo_buf **out) WUR;
void demo_buf_free(struct demo_buf *buf);

/*
 * Fills *b with the next spans, stored in buf: at most batch_spans, whole
 * traces (only the very last trace of the dataset may be cut, keeping
 * parents before their children).  b's rows and strings belong to buf,
 * valid until buf is filled again or freed; b->arena is NULL, no points.
 * n_spans is 0 once all options.spans rows were handed out.  The rows do
 * not depend on the batch sizes.  STATUS_OK, or STATUS_INVALID when an
 * internal bound was hit (a bug).
 */
int demo_next_spans(struct demo *d, struct demo_buf *buf,
		    struct otlp_batch *b) WUR;

/*
 * Fills *b with the next metric points (at most batch_points, whole
 * minutes, in time order), same ownership as demo_next_spans; n_points 0
 * when done.  The counters and histograms count the server spans that
 * were generated, so call it once demo_next_spans has returned 0 spans:
 * STATUS_INVALID before that.  STATUS_NOMEM (the first call allocates the
 * point storage of buf).
 */
int demo_next_points(struct demo *d, struct demo_buf *buf,
		     struct otlp_batch *b) WUR;

/* The window the rows lie in: [start, end], Unix nanoseconds. */
uint64_t demo_window_start(const struct demo *d);
uint64_t demo_window_end(const struct demo *d);

/* Points generated in all (known from the options alone). */
uint64_t demo_total_points(const struct demo *d);

#endif

/*
 * expo.h - the exposition of the gateway's own metrics (GET /metrics): a
 * small Prometheus registry of counters, gauges and histograms with fixed
 * label names, updated lock-free on the hot path and rendered in
 * the text exposition format 0.0.4 for GET /metrics.
 *
 * Usage: register a family once (expo_family), resolve each labeled child
 * once (expo_series; keep the pointer), then update it from any thread.
 *
 * Thread-safety: everything except expo_new/expo_free may be called
 * from any thread at any time.  Registration and child creation take a mutex;
 * child lookup, updates and rendering take none (families and children are
 * append-only lists published with release stores).  expo_free must run
 * after every other thread has stopped using the registry.
 */
#ifndef SEXTANT_EXPO_H
#define SEXTANT_EXPO_H

#include <stddef.h>

#include "base/status.h"

/* Children per family: label values may come from clients (method names,
 * tool names), so cardinality is capped; past it expo_series returns NULL
 * and updates to that NULL child are no-ops. */
#define EXPO_MAX_CHILDREN 10000
/* Label names per family. */
#define EXPO_MAX_LABELS 16
/* Bytes per label value (excluding the NUL); longer values get no child. */
#define EXPO_MAX_VALUE_LEN 1024
/* Bytes in a metric or label name. */
#define EXPO_MAX_NAME_LEN 200
/* Histogram upper bounds (excluding the implicit +Inf). */
#define EXPO_MAX_BUCKETS 64
/* Rendered output: 10000 children x 64 buckets fits; beyond it the render
 * fails with STATUS_LIMIT rather than growing without bound. */
#define EXPO_MAX_RENDER_BYTES (64u * 1024 * 1024)

struct expo;	    /* registry */
struct expo_family; /* one metric name, owned by the registry */
struct expo_series; /* one labeled child: stable pointer until expo_free */

enum expo_type {
	EXPO_COUNTER,
	EXPO_GAUGE,
	EXPO_HISTOGRAM
};

/* Creates an empty registry.  *out is NULL on failure (STATUS_NOMEM,
 * STATUS_IO if the mutex cannot be created).  Free with expo_free. */
int expo_new(struct expo **out) WUR;

/* Frees the registry, its families and children; every family and child
 * pointer becomes invalid.  Accepts NULL.  No other thread may be using it. */
void expo_free(struct expo *m);

/*
 * Registers (or finds) a family.  name: [a-zA-Z_:][a-zA-Z0-9_:]*.  help: one
 * line of text, may be NULL or "" (no # HELP line then).  label_names:
 * comma-separated ("method,code"; blanks around names ignored) or NULL/"" for
 * none; each [a-zA-Z_][a-zA-Z0-9_]*, not starting "__", no duplicates, and
 * not "le" on a histogram.  buckets: histogram upper bounds, finite and
 * strictly ascending (a trailing +Inf is dropped; +Inf is always added);
 * NULL = default latency buckets in seconds (.0005 .. 10).  Counters and
 * gauges take NULL, 0.
 *
 * Registering a name again with the same type, labels and buckets returns the
 * existing family (so callers may register lazily); with a different
 * definition, or a name taken by expo_gauge_fn, it returns NULL.  Also
 * NULL on invalid input or out of memory.  Thread-safe.  Label-less families
 * have their one child created here, so they render 0 before the first
 * update.  The family belongs to the registry.
 */
struct expo_family *expo_family(struct expo *m, enum expo_type type,
				const char *name, const char *help,
				const char *label_names, const double *buckets,
				size_t nbuckets);

/*
 * Returns the child for these label values (one per label name, in order;
 * NULL when the family has no labels), creating it on first use.  Lookup is
 * lock-free; creation takes the family's mutex.  The values are copied.
 * Returns NULL if f is NULL, a value is NULL or longer than
 * EXPO_MAX_VALUE_LEN, the family already has EXPO_MAX_CHILDREN
 * children, or on out of memory.  Callers should resolve children once and
 * keep the pointer rather than look them up per update.
 */
struct expo_series *expo_series(struct expo_family *f,
				const char *const *values);

/*
 * Updates.  All are lock-free, thread-safe, and no-ops when c is NULL or the
 * operation does not fit the type (set on a counter, observe on a gauge,
 * negative or NaN add on a counter), so a failed expo_series never breaks
 * the caller.
 */
void expo_inc(struct expo_series *c);		/* counter/gauge += 1 */
void expo_dec(struct expo_series *c);		/* gauge -= 1 */
void expo_add(struct expo_series *c, double v); /* counter (v >= 0) / gauge */
void expo_set(struct expo_series *c, double v); /* gauge */
void expo_observe(struct expo_series *c, double v); /* histogram */

/* Current value of a counter or gauge child (0 for NULL or a histogram);
 * for tests and internal checks. */
double expo_value(const struct expo_series *c);

/*
 * Registers a label-less gauge whose value is fn(arg), called during each
 * expo_render (queue depth, open sessions).  fn runs on the rendering
 * thread with no metrics lock held, so it may take its own locks; it must
 * stay callable until expo_free.  arg is borrowed.  Returns STATUS_INVALID
 * for a bad name or NULL fn, STATUS_EXISTS if the name is taken,
 * STATUS_NOMEM.
 */
int expo_gauge_fn(struct expo *m, const char *name, const char *help,
		  double (*fn)(void *arg), void *arg) WUR;

/* The same for a counter kept elsewhere (a total since start that only
 * grows: the database pool's acquire timeouts). */
int expo_counter_fn(struct expo *m, const char *name, const char *help,
		    double (*fn)(void *arg), void *arg) WUR;

/*
 * Renders every family in Prometheus text format 0.0.4 (# HELP, # TYPE,
 * samples; histograms as cumulative _bucket{le=".."} including +Inf, _sum,
 * _count; label values escaped \\ \" \n, help escaped \\ \n).  Families in
 * registration order, children in creation order.  Values are read one by
 * one while other threads update them: each is a real value, but a scrape is
 * not a snapshot across samples (a histogram's _count equals its +Inf
 * bucket; its _sum may lag or lead by in-flight observations).
 *
 * On success *out is a NUL-terminated malloc'd string the caller frees and
 * *len its length without the NUL.  On failure *out is NULL and *len 0:
 * STATUS_NOMEM, STATUS_LIMIT past EXPO_MAX_RENDER_BYTES.
 */
int expo_render(struct expo *m, char **out, size_t *len) WUR;

#endif

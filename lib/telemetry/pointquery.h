/*
 * pointquery.h - the plumbing queries over raw OTLP data: metric points
 * (table metric_points) aggregated per time step and attribute group, with
 * counter increases, resets and histogram percentiles, and the search of
 * OTLP spans by service, name, trace, session, duration, status and
 * attributes.  No MCP and no HTTP: server/tools/tool_query_otlp.c renders results.
 *
 * Every function takes a leased lib/pg connection and runs its statements
 * with bound parameters only; results are bounded (LIMIT) by the constants
 * below.  Errors are lib/pg's (err->client is safe for a client) plus the
 * ones documented per function, whose err->client names the field, what is
 * expected and what to do.  Not thread-safe on one connection (lib/pg).
 */
#ifndef SEXTANT_POINTQUERY_H
#define SEXTANT_POINTQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/* ---- metric points ---------------------------------------------------- */

/*
 * Points of one series: 120 keeps a text table readable and a chart
 * smooth.  A caller's step may ask for more, up to POINTQUERY_MAX_STEPS.
 * Steps are aligned to multiples of the step since the Unix epoch (so "1m"
 * steps start on whole minutes); the first and last may be partial.
 */
#define POINTQUERY_DEFAULT_STEPS 120
#define POINTQUERY_MAX_STEPS	 1000
#define POINTQUERY_MIN_STEP_S	 10
/* group_by keys; more make unreadable labels and huge GROUP BYs */
#define POINTQUERY_MAX_GROUP_BY 8
/* series and (series x step) cells per answer: about 1 MB of JSON at most;
 * past that the answer is cut (truncated) at a whole series */
#define POINTQUERY_MAX_SERIES 100
#define POINTQUERY_MAX_CELLS  20000
/* A cumulative point's increase needs the point before it: points are
 * read from max(step, this) before the range to find it. */
#define POINTQUERY_LOOKBACK_S 300

enum pointquery_agg {
	POINTQUERY_AGG_AUTO = 0, /* by kind: see pointquery_metrics */
	POINTQUERY_AGG_AVG,
	POINTQUERY_AGG_SUM,
	POINTQUERY_AGG_MIN,
	POINTQUERY_AGG_MAX,
	POINTQUERY_AGG_COUNT,
	POINTQUERY_AGG_LAST,
	POINTQUERY_AGG_RATE,
	POINTQUERY_AGG_P50,
	POINTQUERY_AGG_P95,
	POINTQUERY_AGG_P99,
};

/* "avg", "sum", ... "p99" ("auto" for AUTO); and back: -1 when unknown. */
const char *pointquery_agg_name(enum pointquery_agg a);
int pointquery_agg_parse(const char *name);

/*
 * The step for [from_ms, to_ms): step (may be NULL or "") is "<n>s",
 * "<n>m", "<n>h" or "<n>d" (n a positive integer), at least
 * POINTQUERY_MIN_STEP_S and giving at most POINTQUERY_MAX_STEPS steps;
 * without it, the smallest of 10s, 15s, 30s, 1m, 2m, 5m, 10m, 15m, 30m,
 * 1h, 2h, 3h, 6h, 12h, 1d, 2d, 7d giving at most POINTQUERY_DEFAULT_STEPS
 * steps.  STATUS_INVALID with a message in err ("step ...: use ...");
 * *step_s is 0 then.  Pure.
 */
int pointquery_step(int64_t from_ms, int64_t to_ms, const char *step,
		    int64_t *step_s, char *err, size_t errlen) WUR;

/* Number of (epoch-aligned) steps covering [from_ms, to_ms). */
int64_t pointquery_step_count(int64_t from_ms, int64_t to_ms, int64_t step_s);
/* The smallest of the steps listed above (10s .. 7d) giving at most max
 * steps; 0 when none does. */
int64_t pointquery_nice_step(int64_t from_ms, int64_t to_ms, int64_t max);
/* "90s", "5m", "2h", "1d": the largest unit that divides s. */
void pointquery_step_format(int64_t s, char *buf, size_t cap);
/* STATUS_OK when step_s (given as step) makes at most max steps of
 * [from_ms, to_ms); else STATUS_INVALID and err says so and which step to
 * use at least. */
int pointquery_step_bound(int64_t from_ms, int64_t to_ms, const char *step,
			  int64_t step_s, int64_t max, char *err,
			  size_t errlen) WUR;

struct pointquery_metric_req {
	const char *name;	     /* required: the metric name, exact */
	const char *service;	     /* NULL: every service */
	const char *attributes_json; /* NULL or a JSON object: attributes @> */
	enum pointquery_agg agg;
	int64_t from_ms, to_ms; /* [from_ms, to_ms), Unix ms */
	int64_t step_s;		/* from pointquery_step */
	/* attribute keys (point attributes, else resource attributes) whose
	 * values label the series; borrowed; 0..POINTQUERY_MAX_GROUP_BY */
	const char *const *group_by;
	size_t n_group_by;
};

/* One series: the points of one group, ascending in time. */
struct pointquery_series {
	/* n_group_by values, NULL where the points lack the attribute */
	const char **labels;
	size_t n;
	int64_t *t_ms; /* start of the step */
	double *v;     /* finite; steps without a value are left out */
};

struct pointquery_metric {
	const char *kind;	 /* "gauge", "sum", "histogram" */
	const char *unit;	 /* "" when none */
	bool monotonic;		 /* sums */
	int temporality;	 /* 1 delta, 2 cumulative, 0 (gauges) */
	int64_t latest_ms;	 /* time of the newest point (any time) */
	enum pointquery_agg agg; /* AUTO resolved */
	struct pointquery_series *series; /* by labels; NULL when none */
	size_t n_series;
	bool truncated; /* series left out (POINTQUERY_MAX_SERIES/CELLS) */
	void *priv_;
};

/*
 * The metric's points in [from, to), per group and step, aggregated.  The
 * kind, unit and temporality are those of the newest point of that name
 * (and service); only points of that kind count.  Per kind:
 *
 *   gauge: avg, sum, min, max, count (points), last (newest point's
 *     value in the step); AUTO = avg.
 *   sum: avg, min, max, count, last over the point values; sum = the
 *     increase in the step; rate = that increase per second of the step
 *     (the part of it inside the range); AUTO = rate when monotonic, else
 *     last.
 *   histogram: count, sum = observations and their total in the step,
 *     avg = sum / count, rate = observations per second, min, max = of
 *     the points' min / max fields, p50, p95, p99 from the bucket counts
 *     observed in the step (pointquery_quantile); AUTO = p95.
 *
 * Increases: a delta point is its own increase; a cumulative point's is
 * the difference to the previous point of its series (same service,
 * attributes, resource and scope), or its whole value after a reset (a
 * new start time, a monotonic value or a histogram count that went down,
 * changed bucket bounds).  A series' first point with no predecessor in
 * the look-back counts whole only when it started inside the look-back.
 * Increases of all series of a group add up.  Identical points (same
 * series and time, e.g. a retried export) count once in increases.
 *
 * Returns STATUS_OK with *out (caller frees with pointquery_metric_free;
 * no series when no point matched); STATUS_NOTFOUND when there is no point
 * of that name (for that service) at all; STATUS_UNSUPPORTED when agg does
 * not apply to the kind; STATUS_INVALID for a bad request; err->client
 * says which and what to use.  Else lib/pg errors.
 */
int pointquery_metrics(struct pg_conn *c, const struct pointquery_metric_req *r,
		       struct pointquery_metric **out,
		       struct pg_error *err) WUR;
void pointquery_metric_free(struct pointquery_metric *m);

/* One histogram's counts: n_bounds + 1 buckets, (-inf, b0], (b0, b1], ...
 * (b_last, +inf); min and max are NaN when unknown. */
struct pointquery_hist {
	const double *bounds;
	size_t n_bounds;
	const double *counts; /* n_bounds + 1 */
	double min, max;
};

/*
 * The q-quantile (0 < q < 1) of the observations of n histograms taken
 * together (bounds may differ), assuming observations spread evenly
 * within each bucket (linear interpolation; for one histogram the same as
 * Prometheus' histogram_quantile).  The open first bucket starts at min
 * when known, else at 0 when b0 > 0, else at b0; the open last bucket
 * ends at max when known, else at b_last.  The result is clamped to
 * [min, max] where known.  Histograms whose bounds are not finite and
 * strictly increasing are left out, negative counts count as 0.  *out is
 * NaN when there are no observations.  STATUS_NOMEM (then *out is NaN).
 * Pure and thread-safe.
 */
int pointquery_quantile(const struct pointquery_hist *h, size_t n, double q,
			double *out) WUR;

/* Statistics of a series' values (the steps shown): min, max, mean of
 * the n values and the last one; all NaN when n is 0.  Pure. */
struct pointquery_stats {
	double min, max, mean, last;
};
void pointquery_series_stats(const struct pointquery_series *s,
			     struct pointquery_stats *out);

/* ---- names ----------------------------------------------------------- */

/* distinct names read for suggestions at most (a loose index scan) */
#define POINTQUERY_MAX_NAMES 10000

struct pointquery_names {
	const char **names; /* sorted */
	size_t n;
	void *priv_;
};

/*
 * Every metric name with points (of service, when not NULL), or with
 * service_names, every service name with metric points.  *out: caller
 * frees with pointquery_names_free.
 */
int pointquery_metric_names(struct pg_conn *c, const char *service,
			    struct pointquery_names **out,
			    struct pg_error *err) WUR;
int pointquery_metric_services(struct pg_conn *c, struct pointquery_names **out,
			       struct pg_error *err) WUR;
void pointquery_names_free(struct pointquery_names *n);

/* ---- listing --------------------------------------------------------- */

/* names listed per answer at most: a page of a catalogue stays readable */
#define POINTQUERY_LIST_MAX 500
/* Series are counted over the newest hour of a metric's points in the
 * range: an hour holds every series a live exporter reports, and the
 * count reads that hour's points only (about 50 ms for 40 names of 8
 * series each a minute), not a day's. */
#define POINTQUERY_SERIES_WINDOW_S 3600

struct pointquery_list_req {
	const char *service;	/* NULL: every service */
	const char *match;	/* NULL: every name; else names containing it,
				ignoring case */
	int64_t from_ms, to_ms; /* [from_ms, to_ms), Unix ms */
	size_t limit;		/* 1..POINTQUERY_LIST_MAX */
};

struct pointquery_listed {
	const char *name;
	const char *kind; /* of the newest point in the range */
	const char *unit; /* "" when none */
	int64_t last_ms;  /* time of the newest point in the range */
	/* distinct series (service, resource, scope, attributes) in
	 * [max(from, last - POINTQUERY_SERIES_WINDOW_S), last] */
	int64_t series;
};

struct pointquery_list {
	struct pointquery_listed *metrics; /* by name; n of total */
	size_t n;
	size_t total; /* names with points in the range that match */
	void *priv_;
};

/*
 * The metric names with points in [from, to) (of service, containing
 * match), sorted by name, the first limit of them with kind, unit, newest
 * point and series count.  Names are found by a loose index scan (one
 * probe per distinct name, at most POINTQUERY_MAX_NAMES).  *out: caller
 * frees with pointquery_list_free.  STATUS_INVALID for a bad request, else
 * lib/pg errors.
 */
int pointquery_list(struct pg_conn *c, const struct pointquery_list_req *r,
		    struct pointquery_list **out, struct pg_error *err) WUR;
void pointquery_list_free(struct pointquery_list *l);

#endif

/*
 * promql.h - the PromQL that query_grafana_metrics sends, built from checked
 * parts: metric and label names are held to Prometheus's name grammar and
 * label values are quoted with every metacharacter escaped, so no caller's
 * string reaches PromQL unescaped.  Also the step and window arithmetic of a
 * range query.  Pure: no I/O, no global state; every function is
 * thread-safe.
 */
#ifndef SEXTANT_PROMQL_H
#define SEXTANT_PROMQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

/* Longest metric or label name accepted: real ones stay under 100 bytes. */
#define PROMQL_MAX_NAME 200
/* Longest label value accepted in a filter: the query goes into a URL or a
 * form body that proxies (nginx, Grafana) cap at a few KiB. */
#define PROMQL_MAX_VALUE 256
/* Filters per query, for the same reason. */
#define PROMQL_MAX_FILTERS 10
/* Points a range query may return, over all its series. */
#define PROMQL_MAX_POINTS 10000
/* Longest range a query may cover. */
#define PROMQL_MAX_RANGE_MS (90LL * 24 * 3600 * 1000)
/* Points per series the default step aims at: enough for a chart, few
 * enough that several series stay under PROMQL_MAX_POINTS. */
#define PROMQL_TARGET_POINTS 500

/*
 * [a-zA-Z_:][a-zA-Z0-9_:]*, 1..PROMQL_MAX_NAME bytes (the classic metric
 * name grammar every Prometheus version accepts unquoted).
 */
bool promql_metric_name_ok(const char *s);

/* [a-zA-Z_][a-zA-Z0-9_]*, 1..PROMQL_MAX_NAME bytes, not starting "__"
 * (reserved for Prometheus's own labels such as __name__). */
bool promql_label_name_ok(const char *s);

/*
 * Appends s to out as a double-quoted PromQL string literal: \ " as \\ \",
 * \n \r \t as themselves, other control bytes and DEL as \xHH; everything
 * else (UTF-8 included) verbatim.  STATUS_INVALID when s is not valid
 * UTF-8 (Prometheus refuses such label values), STATUS_LIMIT /
 * STATUS_NOMEM from the buffer; out is unchanged on failure, with no
 * error left in it (buf_rollback), so the status must be checked.  An
 * error already pending in out is returned untouched.
 */
int promql_quote(struct buf *out, const char *s) WUR;

enum promql_agg {
	PROMQL_AGG_NONE,
	PROMQL_AGG_AVG,
	PROMQL_AGG_MAX,
	PROMQL_AGG_MIN,
	PROMQL_AGG_SUM,
};

/* "avg", "max", "min", "sum" -> the enum; STATUS_INVALID otherwise. */
int promql_agg_parse(const char *s, enum promql_agg *out) WUR;
const char *promql_agg_name(enum promql_agg agg); /* "" for NONE */

/* label = value, exact match.  Borrowed strings. */
struct promql_filter {
	const char *name;
	const char *value;
};

struct promql_spec {
	const char *metric; /* checked by promql_build */
	const struct promql_filter *filters;
	size_t nfilters;
	enum promql_agg agg;
	double quantile;   /* 0 = none; else in (0, 1): histogram_quantile */
	bool rate;	   /* per-second rate of a counter */
	int64_t window_ms; /* range of rate() (rate or quantile), >= 1 s */
};

/*
 * Appends the query of s to out:
 *   plain     m{l1="v1",l2="v2"}
 *   rate      rate(m{...}[w])
 *   quantile  histogram_quantile(q, sum by (le) (rate(m_bucket{...}[w])))
 *             (m is used as given when it already ends in "_bucket")
 *   agg       avg(...) / max / min / sum around the plain or rate form:
 *             one series over everything the filters select
 * Filters are sorted by label name so that the same arguments give the
 * same text.  STATUS_INVALID with err naming the argument (metric_name,
 * filters, percentile, aggregation) and saying what is accepted: a bad
 * metric or label name, a duplicate label, a value that is too long or not
 * UTF-8, too many filters, a quantile outside (0, 1), an aggregation with a
 * quantile (the quantile already sums the buckets of every series), a
 * window under a second.  STATUS_LIMIT / STATUS_NOMEM from out.  On
 * failure out is unchanged, as for promql_quote.
 */
int promql_build(const struct promql_spec *s, struct buf *out, char *err,
		 size_t errlen) WUR;

/*
 * The metric whose metadata describes s->metric for a quantile: the name
 * without "_bucket" ("http_seconds_bucket" -> "http_seconds"), written to
 * buf (cap bytes).  Returns buf.
 */
const char *promql_histogram_base(const char *metric, char *buf, size_t cap);

/* One bucket of a classic histogram: observations <= le (cumulative). */
struct promql_bucket {
	double le; /* upper bound; +Inf for the last */
	double count;
};

/*
 * The q-quantile (0 <= q <= 1) of a classic histogram, as PromQL's
 * histogram_quantile computes it: buckets sorted by bound (b is sorted in
 * place), equal bounds added up, counts made monotonic, then linear
 * interpolation inside the bucket holding rank q * total (from 0 for the
 * first bucket when its bound is positive); the upper bound of the
 * second-highest bucket when the rank falls in +Inf.  NaN without a +Inf
 * bucket, with fewer than two buckets, with no observation, or for a q
 * outside [0, 1] or NaN.  n <= 0 gives NaN.
 */
double promql_histogram_quantile(double q, struct promql_bucket *b, size_t n);

/*
 * A Prometheus duration: one or more <integer><unit> groups, units ms s m
 * h d w y ("30s", "1m30s", "500ms"), or a bare integer of seconds ("15").
 * Sets *ms; STATUS_INVALID for anything else, 0, or over 400 days.
 */
int promql_duration_parse(const char *s, int64_t *ms) WUR;

/* ms as a Prometheus duration: "1h30m", "15s", "250ms"; "0s" for 0.
 * Returns the length like snprintf. */
size_t promql_duration_format(int64_t ms, char *buf, size_t cap);

/* Points of a range query from start to end (inclusive) every step:
 * floor(range / step) + 1.  range_ms >= 0, step_ms > 0. */
int64_t promql_points(int64_t range_ms, int64_t step_ms);

/*
 * The default step of a range: the smallest of 1s 5s 10s 15s 30s 1m 2m 5m
 * 10m 15m 30m 1h 2h 3h 6h 12h 1d 2d 7d giving at most
 * PROMQL_TARGET_POINTS points (1h -> 10s, 24h -> 5m, 90d -> 6h).
 */
int64_t promql_default_step_ms(int64_t range_ms);

/*
 * The window of rate() at a step: max(step + 15 s, 60 s), Grafana's
 * $__rate_interval with its default 15 s scrape interval, so each window
 * holds at least four samples and consecutive windows overlap.
 */
int64_t promql_rate_window_ms(int64_t step_ms);

#endif

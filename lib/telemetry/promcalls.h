/*
 * promcalls.h - the call metrics of one service (requests, P50/P95/P99,
 * error rate per HTTP route and method, gRPC method, SQL operation and
 * table) from the duration histograms Prometheus keeps, in the shape of
 * lib/telemetry/spanquery's rows: query_metrics' [Prometheus] source.  Builds the
 * PromQL (every value quoted by lib/prom/promql), asks through lib/prom/grafana, and
 * turns the answers into rows.  Knows nothing of MCP.
 *
 * Per protocol two instant queries at the end of the range:
 *   sum by (le, <key labels>) (increase(<metric>_bucket{<sel>}[<range>]))
 *   sum by (<key labels>) (increase(<metric>_count{<sel>,<error>}[<range>]))
 * Requests are the +Inf bucket, percentiles histogram_quantile's over the
 * buckets (promql_histogram_quantile), the error rate errors / requests.
 * Prometheus extrapolates increase() to the range's edges, so requests are
 * estimates; ratios (error rate, percentiles) are not affected by that.
 */
#ifndef SEXTANT_PROMCALLS_H
#define SEXTANT_PROMCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "prom/grafana.h"
#include "telemetry/spanquery.h"

/* Keys of one protocol kept; more are cut and flagged (truncated). */
#define PROMCALLS_MAX_KEYS 2000

/* Where a service's series are and how they are named.  Borrowed. */
struct promcalls_spec {
	const char *service_label; /* "service_name", "job" */
	const char *service_value; /* the label's value for the service */
	/* histogram base names by enum spanquery_protocol */
	const char *metric[SPANQUERY_PROTOCOLS];
};

struct promcalls_row {
	int protocol;	 /* enum spanquery_protocol */
	const char *k1;	 /* route / "pkg.Svc/Method" / OPERATION ("" absent) */
	const char *k2;	 /* METHOD / "" / table */
	double requests; /* increase over the range, extrapolated */
	double errors;
	double p50_ms, p95_ms, p99_ms; /* finite: keys without are left out */
};

struct promcalls_result {
	struct promcalls_row *rows; /* by protocol, then requests desc */
	size_t n;
	bool truncated;	  /* a protocol had more than PROMCALLS_MAX_KEYS keys */
	unsigned missing; /* bits 1 << protocol: histogram not in Prometheus */
	size_t unbucketed; /* keys left out: no finite bucket, no latency */
	void *priv_;
};

/*
 * The two queries of protocol p for f (its status filters become label
 * matchers; its key filters are applied to the rows) over range_ms,
 * appended to buckets and errors.  STATUS_INVALID with err when a name in
 * spec is not a Prometheus name or a value cannot be quoted; STATUS_LIMIT /
 * STATUS_NOMEM from the buffers.
 */
int promcalls_build(const struct promcalls_spec *spec, int p,
		    const struct spanquery_filter *f, int64_t range_ms,
		    struct buf *buckets, struct buf *errors, char *err,
		    size_t errlen) WUR;

/*
 * Adds the rows of protocol p from the answers of its two queries (each a
 * matrix of instant values: the last point of each series counts) to *res,
 * keeping those that pass f's key filters and had at least one request.
 * STATUS_NOMEM.
 */
int promcalls_add(struct promcalls_result *res, int p,
		  const struct grafana_matrix *buckets,
		  const struct grafana_matrix *errors,
		  const struct spanquery_filter *f) WUR;

/*
 * Every protocol f asks for (f->protocols, 0 = all), over [f->from_ms,
 * f->to_ms]: the metric names first (cached by lib/prom/grafana) so that a
 * histogram Prometheus does not have costs no query, then the two queries
 * of each protocol that has it.  *out: caller frees with promcalls_free.
 * Errors as grafana_query_range (err filled); STATUS_INVALID with
 * err->client also for a bad spec.
 */
int promcalls_query(struct grafana *g, const struct grafana_opts *o,
		    const struct promcalls_spec *spec,
		    const struct spanquery_filter *f,
		    struct promcalls_result **out,
		    struct grafana_error *err) WUR;

/* An empty result for promcalls_add; NULL when out of memory. */
struct promcalls_result *promcalls_result_new(void);
void promcalls_free(struct promcalls_result *r); /* NULL ok */

#endif

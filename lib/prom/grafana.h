/*
 * grafana.h - the client of one metrics instance: a Prometheus server
 * reached directly, or Grafana's data source proxy in front of one
 * (/api/datasources/proxy/uid/<uid>/api/v1/...).  It asks for metric names,
 * metadata and range queries, and owns everything that keeps those calls
 * safe: connection reuse, TLS verification, timeouts, a response size cap,
 * retries with backoff, a circuit breaker, a concurrency limit and caches.
 * It knows nothing of MCP; server/tools/tool_grafana.c turns its answers into
 * tool results.
 *
 * Thread-safety: every function taking a struct grafana may be called from
 * any thread at once, except grafana_new / grafana_free.  One mutex per
 * instance guards its state; it is never held during network I/O.
 */
#ifndef SEXTANT_GRAFANA_H
#define SEXTANT_GRAFANA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/expo.h"
#include "base/status.h"

/* Metric names kept from one answer: a large Prometheus has some 100,000. */
#define GRAFANA_MAX_NAMES 500000
/* Metadata entries cached per instance (one per metric asked about); the
 * oldest entry makes room past this. */
#define GRAFANA_METADATA_CACHE 1024
/* Series of one range answer; more are refused (narrow with filters). */
#define GRAFANA_MAX_SERIES 10000
/* Labels of one series, bytes of a label name or value kept. */
#define GRAFANA_MAX_LABELS 64
/* A bearer token file larger than this is refused (a token is < 1 KiB). */
#define GRAFANA_MAX_TOKEN_BYTES 8192
/* URLs in messages are cut to this (a base URL plus an API path). */
#define GRAFANA_URL_MAX 512

enum grafana_kind {
	GRAFANA_KIND_GRAFANA,	 /* Grafana's API, queries via the proxy */
	GRAFANA_KIND_PROMETHEUS, /* a Prometheus HTTP API base URL */
};

/*
 * One instance's settings ([grafana.<name>] / [prometheus.<name>]).
 * Strings are copied by grafana_new; NULL and "" mean unset.
 */
struct grafana_config {
	const char *name; /* instance name, in messages and logs */
	enum grafana_kind kind;
	const char *url;	     /* base URL, http:// or https:// */
	const char *datasource_uid;  /* GRAFANA: the data source by uid, */
	const char *datasource_name; /* or by name (exactly one of them) */
	const char *token;	     /* bearer token (secret), or */
	const char *token_file; /* a file holding it, re-read when it changes */
	const char *ca_file;	/* PEM CA bundle; unset = system store */
	int connect_timeout_ms;
	int timeout_ms;		   /* one attempt, connect included */
	size_t max_response_bytes; /* after decompression */
	int max_concurrent;	   /* upstream requests at once */
	int queue_timeout_ms;	   /* wait for a free slot at most this */
	int retries;		   /* extra attempts (conn errors, 5xx) */
	int retry_base_ms;	   /* first backoff; doubles, with jitter */
	int breaker_failures;	   /* consecutive failures that open it */
	int breaker_cooldown_ms;   /* open this long, then half-open */
	int names_ttl_ms;	   /* metric name list cache */
	int metadata_ttl_ms;	   /* per-metric metadata cache */
};

/*
 * Metric children the instance updates (each may be NULL: metric_* ignore
 * NULL).  Borrowed: they must outlive the instance.
 */
struct grafana_metrics {
	struct expo_series
		*circuit_state; /* gauge: 0 closed, 1 half-open, 2 open */
	struct expo_series
		*circuit_opens;	      /* counter: closed/half-open -> open */
	struct expo_series *inflight; /* gauge: upstream requests running */
	struct expo_series *waiting;  /* gauge: requests waiting for a slot */
	struct expo_series *requests_ok; /* counter: upstream answers < 500 */
	struct expo_series
		*requests_failed;    /* counter: conn errors, 5xx, timeouts */
	struct expo_series *retries; /* counter: attempts after the first */
	struct expo_series *names_hits, *names_misses; /* name list cache */
	struct expo_series *meta_hits, *meta_misses;   /* metadata cache */
};

enum grafana_breaker {
	GRAFANA_BREAKER_CLOSED = 0,
	GRAFANA_BREAKER_HALF_OPEN = 1,
	GRAFANA_BREAKER_OPEN = 2,
};

/* "closed", "half-open", "open". */
const char *grafana_breaker_name(enum grafana_breaker b);

/* What went wrong, by what the caller should tell the user. */
enum grafana_fail {
	GRAFANA_FAIL_NONE,
	GRAFANA_FAIL_UNAVAILABLE,  /* no answer: connection, timeout, 5xx,
				    * circuit open, every slot busy */
	GRAFANA_FAIL_QUERY,	   /* 400 / 422: the query was refused */
	GRAFANA_FAIL_REFUSED,	   /* another 4xx: token, data source, path */
	GRAFANA_FAIL_BAD_RESPONSE, /* not the API's JSON, or over the cap */
	GRAFANA_FAIL_CANCELLED,	   /* opts->cancelled became true */
};

/*
 * Two messages per error: client is safe to show (what failed and what to
 * do; never the token), detail is for the log (curl's error text, the
 * upstream's body excerpt).  url is the URL tried, without query string.
 */
struct grafana_error {
	enum grafana_fail kind;
	int http_status;	      /* 0 when no HTTP answer came */
	enum grafana_breaker breaker; /* the breaker's state afterwards */
	char url[GRAFANA_URL_MAX];
	char client[512];
	char detail[512];
};

/* Per-request options.  The struct and arg are borrowed for the call. */
struct grafana_opts {
	/* polled while waiting and transferring (NULL = never) */
	bool (*cancelled)(void *arg);
	void *arg;
	int64_t deadline_ms;	/* CLOCK_MONOTONIC ms; 0 = none */
	const char *request_id; /* for log lines; may be NULL */
};

struct grafana;

/*
 * Checks cfg (url scheme, one data source for GRAFANA, none for
 * PROMETHEUS, token xor token_file, positive limits) and creates the
 * instance; nothing is sent yet.  m: may be NULL.  STATUS_INVALID with err
 * naming the key; STATUS_NOMEM.  Caller frees with grafana_free.
 */
int grafana_new(const struct grafana_config *cfg,
		const struct grafana_metrics *m, struct grafana **out,
		char *err, size_t errlen) WUR;

/* Frees g, its connections and caches.  No call may be running.  NULL ok. */
void grafana_free(struct grafana *g);

const char *grafana_name(const struct grafana *g); /* borrowed */
const char *grafana_url(const struct grafana *g);  /* base URL, borrowed */
enum grafana_kind grafana_kind(const struct grafana *g);
enum grafana_breaker grafana_breaker_state(struct grafana *g);

/*
 * The metric names the instance knows (GET .../api/v1/label/__name__/
 * values), sorted, from the cache when it is at most min(names_ttl_ms,
 * max_age_ms) old (max_age_ms < 0: the TTL).  *out is shared and
 * read-only: release it with grafana_names_release.  Errors as
 * grafana_query_range.
 */
struct grafana_names {
	const char *const *v;
	size_t n;
	int64_t fetched_ms; /* CLOCK_MONOTONIC */
	atomic_int refs_;   /* private */
};
int grafana_metric_names(struct grafana *g, const struct grafana_opts *o,
			 int64_t max_age_ms, struct grafana_names **out,
			 struct grafana_error *err) WUR;
void grafana_names_release(struct grafana_names *n);
bool grafana_names_has(const struct grafana_names *n, const char *name);

/* Metadata of one metric (GET .../api/v1/metadata?metric=<name>): the
 * first entry Prometheus gives; found is false when it has none. */
struct grafana_metadata {
	bool found;
	char type[32]; /* "counter", "gauge", "histogram", ... */
	char unit[64]; /* often "" */
	char help[256];
};
/* From the cache when at most metadata_ttl_ms old; errors as
 * grafana_query_range. */
int grafana_metric_metadata(struct grafana *g, const struct grafana_opts *o,
			    const char *metric, struct grafana_metadata *out,
			    struct grafana_error *err) WUR;

/* A range query's answer. */
struct grafana_counts {
	size_t series, points;
};
struct grafana_label {
	char *name, *value;
};
struct grafana_point {
	int64_t t_ms;
	double v; /* NaN and +-Inf as Prometheus sends them */
};
struct grafana_series {
	struct grafana_label *labels; /* sorted by name */
	size_t nlabels;
	struct grafana_point *points; /* by time */
	size_t npoints;
};
struct grafana_matrix {
	struct grafana_series *series;
	size_t nseries;
	size_t npoints; /* over all series */
	char *warning;	/* the first of Prometheus's warnings, or NULL */
};
void grafana_matrix_free(struct grafana_matrix *m); /* NULL ok */

/*
 * Runs promql over [start_ms, end_ms] every step_ms (POST .../api/v1/
 * query_range).  At most max_points points over all series are accepted:
 * past that STATUS_LIMIT, *out NULL and *total set to what the answer held
 * (total may be NULL; it is set on success too).  Errors: STATUS_IO (UNAVAILABLE), STATUS_INVALID
 * (QUERY, REFUSED, BAD_RESPONSE), STATUS_CANCELLED, STATUS_NOMEM; err is
 * filled whenever the result is not STATUS_OK.  *out: caller frees with
 * grafana_matrix_free.
 */
int grafana_query_range(struct grafana *g, const struct grafana_opts *o,
			const char *promql, int64_t start_ms, int64_t end_ms,
			int64_t step_ms, size_t max_points,
			struct grafana_matrix **out,
			struct grafana_counts *total,
			struct grafana_error *err) WUR;

/*
 * The parsers behind the calls above, public for the unit tests and the
 * fuzzer.  body: len bytes, need not be NUL-terminated.  msg gets a
 * lowercase reason on failure.  Errors: STATUS_INVALID (not the expected
 * JSON; for an error envelope, msg is Prometheus's "errorType: error"),
 * STATUS_LIMIT (more than max_points points, GRAFANA_MAX_SERIES series or
 * GRAFANA_MAX_NAMES names), STATUS_NOMEM.
 */
int grafana_parse_matrix(const char *body, size_t len, size_t max_points,
			 struct grafana_matrix **out,
			 struct grafana_counts *total, char *msg,
			 size_t msglen) WUR;
int grafana_parse_names(const char *body, size_t len,
			struct grafana_names **out, char *msg,
			size_t msglen) WUR;
int grafana_parse_metadata(const char *body, size_t len, const char *metric,
			   struct grafana_metadata *out, char *msg,
			   size_t msglen) WUR;
/* A Grafana data source ({"uid":..,"type":..}): its uid into uid (cap
 * bytes).  STATUS_UNSUPPORTED when its type is not Prometheus's (msg names
 * the type). */
int grafana_parse_datasource(const char *body, size_t len, char *uid,
			     size_t cap, char *msg, size_t msglen) WUR;

#endif

/*
 * meshquery.h - the service graph behind get_mesh_graph: edges from spans
 * (a CLIENT span and the SERVER span it parents in another service; a
 * PRODUCER and its CONSUMER, async; a CLIENT or PRODUCER span with no
 * instrumented callee, whose target is a leaf named from peer.service,
 * server.address, db.system and the database name, or the messaging
 * system and destination), with per-edge requests, errors and client
 * errors by sextant_span_outcome (migration 0012) and P50/P95 from the
 * duration histograms; nodes by graph type; and Kiali's MeshHealthSummary
 * over them (overall status, availability, namespace summaries, top
 * unhealthy).  Schema and rules: docs/schema.md ("Service graph").
 */
#ifndef SEXTANT_MESHQUERY_H
#define SEXTANT_MESHQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"
#include "telemetry/health.h"

/* How far before the range a parent (caller) span is looked for, and how
 * far after it a callee: a call's two ends start within this of each
 * other (a queue's consumer may start minutes after its producer). */
#define MESHQUERY_SLACK_S 300
/* Edges returned at most (the busiest kept); more sets truncated.  A
 * mesh of hundreds of services has a few thousand. */
#define MESHQUERY_MAX_EDGES 10000
/* Entities named in a summary's topUnhealthy at most (Kiali's cap). */
#define MESHQUERY_TOP_UNHEALTHY 10

/* Kiali's graphType: what a node is. */
enum meshquery_graph_type {
	MESHQUERY_VERSIONED_APP, /* service.name and service.version */
	MESHQUERY_APP,		 /* service.name */
	MESHQUERY_SERVICE,	 /* service.name */
	MESHQUERY_WORKLOAD,	 /* k8s deployment or statefulset, else host */
};

/* A span's workload as SQL over a spans row: k8s.deployment.name, else
 * k8s.statefulset.name, else host.name, else ''.  graphType workload's
 * nodes, and lib/telemetry/resourcequery's workloads. */
#define MESHQUERY_WORKLOAD_SQL                                                 \
	"coalesce(nullif(k8s_deployment_name, ''), "                           \
	"nullif(resource_attributes ->> 'k8s.statefulset.name', ''), "         \
	"nullif(host_name, ''), '')"

/* The type named s ("versionedApp", "app", "service", "workload"), or
 * -1. */
int meshquery_graph_type_parse(const char *s);
const char *meshquery_graph_type_name(enum meshquery_graph_type t);

struct meshquery_filter {
	int64_t from_ms; /* [from_ms, to_ms), Unix ms; from < to */
	int64_t to_ms;
	int64_t now_ms; /* which periods have settled (rollup_split_range) */
	enum meshquery_graph_type type;
	/* edges with an end in one of these namespaces; nns 0: every edge
	 * (borrowed for the call) */
	const char *const *ns;
	size_t nns;
};

/*
 * A node: an instrumented service (app, workload) or a leaf.  Requests in
 * and out are those of its edges in the result (every edge of the range
 * for nns 0).
 */
struct meshquery_node {
	const char *name;    /* service, app or workload; a leaf's peer */
	const char *ns;	     /* namespace, NULL for none (and for leaves) */
	const char *version; /* service.version for versionedApp, else NULL */
	bool leaf;	     /* a database, queue or API seen only as a call */
	uint64_t in_requests, in_errors, in_client_errors;
	uint64_t out_requests, out_errors, out_client_errors;
};

/*
 * An edge: calls from node src to node dst over one protocol ("http",
 * "grpc", "sql", "messaging", "tcp"), counted once per span id whichever
 * sources saw it.  Outcome and duration are the callee's span's (the
 * SERVER or CONSUMER span); a leaf edge's are its caller's CLIENT or
 * PRODUCER span (a 404 is then an error: the call failed).
 */
struct meshquery_edge {
	size_t src, dst; /* indexes into the result's nodes */
	const char *protocol;
	bool async; /* PRODUCER -> CONSUMER */
	uint64_t requests, errors, client_errors;
	double p50_ms, p95_ms; /* within 0.5% (histogram buckets) */
};

struct meshquery_result {
	struct meshquery_node *nodes; /* in order of first appearance */
	size_t n_nodes;
	struct meshquery_edge *edges; /* most requests first */
	size_t n_edges;
	bool truncated; /* more than MESHQUERY_MAX_EDGES edges */
	bool rollup;	/* partly from the edge rollups (P50/P95 within
			 * 0.5% either way) */
	void *priv_;
};

/*
 * The graph of f, on c (borrowed, idle, left idle: two statements in a
 * read-only transaction of their own, rolled back, jit off).  An edge
 * counts in the range when its measured span starts in it.  As
 * servicequery reads the call rollups: the clean settled hours from
 * edge_rollup, the other clean settled minutes from edge_rollup_minute,
 * and the raw spans of the rest (the range's ends, its dirty minutes),
 * paired with those up to MESHQUERY_SLACK_S around them.
 * Strings point into the result and live until meshquery_free.
 * STATUS_INVALID for from >= to (err->client says so); else lib/pg
 * errors.  *out is NULL on failure.
 */
int meshquery_graph(struct pg_conn *c, const struct meshquery_filter *f,
		    struct meshquery_result **out, struct pg_error *err) WUR;

void meshquery_free(struct meshquery_result *r); /* accepts NULL */

/*
 * The edge rollups' refresh, run by lib/telemetry/rollup in the
 * transaction that refreshes the same periods of span_rollup (an hour,
 * period as its text) or span_rollup_minute (minutes, "{...}" of Unix s):
 * their rows deleted and computed again from the spans, with the calls'
 * other ends up to MESHQUERY_SLACK_S around them.  Turns nested loops
 * off for the rest of the caller's transaction (SET LOCAL): the caller
 * runs them last in it.  A call whose other
 * end is stored later, after its period was refreshed, counts as it was
 * then (a leaf, or not at all) until that period is dirty again.
 * Errors: those of pg_query.
 */
int meshquery_rollup_hour(struct pg_conn *c, const char *period,
			  struct pg_error *err) WUR;
int meshquery_rollup_minutes(struct pg_conn *c, const char *minutes,
			     struct pg_error *err) WUR;

/* An edge's verdict by health_judge on its own calls. */
enum health_status meshquery_edge_health(const struct health_tolerances *t,
					 const struct meshquery_edge *e);

/* A node's: the worse of its inbound and outbound calls' verdicts (as
 * Kiali's request health reads both); HEALTH_NA without calls. */
enum health_status meshquery_node_health(const struct health_tolerances *t,
					 const struct meshquery_node *n);

/*
 * A node's error rate as Kiali's calculateErrorRate: failed calls in and
 * out (errors and client errors: Kiali counts 4xx and every gRPC code
 * but OK) over all its calls, 0 to 1; 0 without calls.
 */
double meshquery_node_error_rate(const struct meshquery_node *n);

/* Kiali's HealthCounts. */
struct meshquery_counts {
	size_t total, healthy, degraded, unhealthy;
};

/* Kiali's NamespaceSummary for one namespace ("" for nodes without). */
struct meshquery_ns_summary {
	const char *ns; /* borrowed from the result */
	struct meshquery_counts counts;
	double error_rate;  /* the sum of its entities' rates, as Kiali's */
	const char *status; /* HEALTHY, DEGRADED, UNHEALTHY, UNKNOWN */
	double availability;
};

/*
 * Kiali's MeshHealthSummary over the instrumented nodes of a result (the
 * entities; leaves are not).  overall: UNKNOWN without entities, else
 * UNHEALTHY when more than half (integer division, as Kiali's) are,
 * DEGRADED when any is unhealthy or degraded, else HEALTHY.
 * availability: (healthy + 0.5 degraded) / total x 100 (100 without
 * entities).  A namespace is HEALTHY with no unhealthy entity and an
 * error rate under 0.01, UNHEALTHY with more than half unhealthy or a
 * rate over 0.05, else DEGRADED.  total_error_rate: the sum of the
 * namespaces' rates.  top: the UNHEALTHY entities by error rate, highest
 * first (ties in node order), at most MESHQUERY_TOP_UNHEALTHY.
 */
struct meshquery_summary {
	const char *overall;
	double availability;
	double total_error_rate;
	struct meshquery_counts counts;
	struct meshquery_ns_summary *ns; /* by name (strcmp) */
	size_t n_ns;
	size_t top[MESHQUERY_TOP_UNHEALTHY]; /* node indexes */
	size_t n_top;
};

/* Fills *s for r under t (NULL: Kiali's defaults).  STATUS_NOMEM (s then
 * empty).  Free with meshquery_summary_free. */
int meshquery_summarize(const struct meshquery_result *r,
			const struct health_tolerances *t,
			struct meshquery_summary *s) WUR;
void meshquery_summary_free(struct meshquery_summary *s);

#endif

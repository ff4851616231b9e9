/*
 * resourcequery.h - the resources behind get_resource_detail: the services
 * or workloads with spans in a time range (a workload as get_mesh_graph's
 * graphType workload names it: k8s deployment, statefulset, else host),
 * each with its namespace, the versions, workloads, services, pods and
 * hosts its spans' resource attributes name, its sources, calls in and out
 * for Kiali's request health, and when it was last seen; and one
 * resource's detail: its inbound and outbound edges (lib/telemetry/
 * meshquery, the edge rollups of migration 0016), its top routes
 * (lib/telemetry/spanquery's per-call metrics) and its most recent error.
 */
#ifndef SEXTANT_RESOURCEQUERY_H
#define SEXTANT_RESOURCEQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"
#include "telemetry/health.h"
#include "telemetry/meshquery.h"
#include "telemetry/spanquery.h"

/* Resources returned at most (by name before the cut); more sets
 * truncated.  A store holds tens or hundreds. */
#define RESOURCEQUERY_MAX_ITEMS 10000
/* Names kept of each list of a resource (versions, pods, ...): the first
 * by name; the count says how many there were. */
#define RESOURCEQUERY_NAMES 10
/* Routes kept in a detail (the busiest). */
#define RESOURCEQUERY_TOP_ROUTES 5
/* A workload's services whose routes are read, at most. */
#define RESOURCEQUERY_ROUTE_SERVICES 3

enum resourcequery_type {
	RESOURCEQUERY_SERVICE,	/* service.name */
	RESOURCEQUERY_WORKLOAD, /* MESHQUERY_WORKLOAD_SQL, else service.name */
};

/* "service" or "workload" as the type, or -1. */
int resourcequery_type_parse(const char *s);

/* What a resource's spans name, by resource attribute. */
enum {
	RESOURCEQUERY_VERSIONS,	 /* service.version */
	RESOURCEQUERY_WORKLOADS, /* MESHQUERY_WORKLOAD_SQL */
	RESOURCEQUERY_SERVICES,	 /* service.name */
	RESOURCEQUERY_PODS,	 /* k8s.pod.name */
	RESOURCEQUERY_HOSTS,	 /* host.name */
	RESOURCEQUERY_SEEN
};

struct resourcequery_names {
	const char *v[RESOURCEQUERY_NAMES]; /* sorted (strcmp) */
	size_t n;			    /* of v */
	size_t total;			    /* distinct names in all */
};

/* Bits of resourcequery_item.sources. */
enum {
	RESOURCEQUERY_EBPF = 1 << 0,
	RESOURCEQUERY_OTLP = 1 << 1,
};

/*
 * One resource: a name in a namespace ("" none; the namespace is
 * service.namespace, else k8s.namespace.name, as get_mesh_graph's).
 *   in_*: its SERVER and CONSUMER spans, once per span id whichever
 *       sources saw it (the OTLP copy, when one starts within
 *       MESHQUERY_SLACK_S of the eBPF copy; its outcome), errors and client
 *       errors by sextant_span_outcome (migration 0012): every request it
 *       served, from instrumented callers or not.
 *   out_*: the calls of its outbound edges in get_mesh_graph's graph of
 *       the range (to services and leaves alike).
 */
struct resourcequery_item {
	const char *name;
	const char *ns;
	struct resourcequery_names seen[RESOURCEQUERY_SEEN];
	unsigned sources; /* RESOURCEQUERY_EBPF | RESOURCEQUERY_OTLP */
	uint64_t in_requests, in_errors, in_client_errors;
	uint64_t out_requests, out_errors, out_client_errors;
	int64_t last_seen_us;  /* start of its newest span (Unix us) */
	bool has_error;	       /* a span with outcome 1 (an error) */
	int64_t last_error_us; /* start of the newest (Unix us) */
};

struct resourcequery_filter {
	int64_t from_ms; /* [from_ms, to_ms), Unix ms; from < to */
	int64_t to_ms;
	int64_t now_ms; /* which periods have settled (the edge rollups) */
	enum resourcequery_type type;
	/* resources in one of these namespaces; nns 0: any (borrowed) */
	const char *const *ns;
	size_t nns;
	const char *name; /* NULL: every resource; else this one's */
};

struct resourcequery_list {
	struct resourcequery_item *items; /* by name, then namespace */
	size_t n;
	bool truncated; /* more than RESOURCEQUERY_MAX_ITEMS */
	/* the graph of the range by the type's nodes (service or workload),
	 * whose edges gave out_*; owned by the list */
	struct meshquery_result *graph;
	void *priv_;
};

/*
 * The resources of f on c (borrowed, idle, left idle): one statement over
 * resource_rollup_minute (migrations/0018) for the clean settled minutes
 * of the range and over the spans of the rest (its ends, its dirty
 * minutes; all of it when no minute has settled), the same numbers
 * either way; and the graph of the range (meshquery_graph, its own
 * read-only transaction).  Strings live until resourcequery_list_free.
 * STATUS_INVALID for from >= to (err->client says so); else lib/pg
 * errors.  *out NULL on failure.
 */
int resourcequery_list(struct pg_conn *c, const struct resourcequery_filter *f,
		       struct resourcequery_list **out,
		       struct pg_error *err) WUR;
void resourcequery_list_free(struct resourcequery_list *l); /* NULL ok */

/* Kiali's request health of a resource: the worse of its inbound and
 * outbound calls' verdicts (health_judge); HEALTH_NA without calls. */
enum health_status resourcequery_health(const struct health_tolerances *t,
					const struct resourcequery_item *it);

/* A route of the resource (a spanquery_row of one of its services, from
 * the source that saw the most of that service's calls). */
struct resourcequery_route {
	const char *service;
	const struct spanquery_row *row; /* protocol, k1, k2, counts, P95 */
};

/* The resource's newest span with outcome 1 (an error) in the range. */
struct resourcequery_error {
	bool found;
	int64_t at_us;
	const char *trace_id; /* 32 hex digits */
	const char *service, *span, *source;
	int http_status, grpc_code; /* -1 when none */
	/* the status message, else the first exception's message (cut at
	 * 320 characters); NULL when neither */
	const char *message;
};

struct resourcequery_detail {
	struct resourcequery_list *list;       /* the name in each namespace */
	const struct resourcequery_item *item; /* the busiest of them */
	size_t node;	    /* item's node in list->graph, SIZE_MAX when none */
	size_t *in, n_in;   /* list->graph edges into it, busiest first */
	size_t *out, n_out; /* and out of it */
	struct resourcequery_route routes[RESOURCEQUERY_TOP_ROUTES];
	size_t n_routes;
	bool routes_rollup; /* percentiles from the rollups (within 0.5%) */
	struct resourcequery_error last_error;
	void *priv_;
};

/*
 * The detail of the resource f->name (required, else STATUS_INVALID) on
 * c (borrowed, idle, left idle).  STATUS_NOTFOUND when it has no spans
 * in the range (and namespaces): the caller says so.  Free with
 * resourcequery_detail_free; *out NULL on failure.
 */
int resourcequery_detail(struct pg_conn *c,
			 const struct resourcequery_filter *f,
			 struct resourcequery_detail **out,
			 struct pg_error *err) WUR;
void resourcequery_detail_free(struct resourcequery_detail *d); /* NULL ok */

/*
 * The refresh of resource_rollup_minute, run by lib/telemetry/rollup in
 * the transaction that refreshes the same minutes of span_rollup_minute
 * ("{...}" of Unix s), before meshquery_rollup_minutes (which turns nested
 * loops off: the OTLP copy of each SERVER span is found by index probes).
 * Their rows deleted and computed again from the spans.  An OTLP copy
 * stored after the eBPF copy's minute was refreshed counts twice until
 * that minute is dirty again.  Errors: those of pg_query.
 */
int resourcequery_rollup_minutes(struct pg_conn *c, const char *minutes,
				 struct pg_error *err) WUR;

#endif

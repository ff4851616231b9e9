/*
 * meshquery.c - the service graph and its health summary (see
 * meshquery.h): one statement pairs each span with its parent and
 * aggregates per edge, outcome and duration bucket; the rows are summed
 * here into edges and nodes.  SQL text is static, values are bound.
 */
#include "telemetry/meshquery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/buf.h"
#include "base/timerange.h"
#include "telemetry/rollup.h"

/*
 * The calls measured by spans starting in the windows w (lo, hi), as
 * rows e: the measured span's start t, the caller's service, namespace,
 * version and workload, the callee's (a leaf: its peer, the rest ''),
 * leaf, async, protocol, outcome and duration.  s: the spans that can
 * end a call, from MESHQUERY_SLACK_S before each window to as long
 * after it, once per (trace id, span id): the OTLP copy of a span both
 * sources saw (it carries the SDK's attributes), so that such a call
 * counts once.  A call is a SERVER (CONSUMER) span whose parent is a
 * CLIENT (PRODUCER) span of another service, or a CLIENT (PRODUCER) span
 * with no SERVER or CONSUMER child: a leaf, named from its attributes,
 * "unknown" when they name none, but the service itself when they name
 * a Kubernetes service's DNS name (K8S_PEER).  A GenAI call (gen_ai.*
 * attributes, over a provider's HTTP API) is "http" though its SDK's
 * span carries no http.* attributes.  Every edge query and the refresh
 * of edge_rollup and edge_rollup_minute (migrations/0016, 0019) read
 * these.
 */
#define PEER                                                                   \
	"coalesce(nullif(attributes ->> 'peer.service', ''), "                 \
	"nullif(attributes ->> 'server.address', ''), db_system || coalesce("  \
	"' ' || nullif(coalesce(attributes ->> 'db.namespace', attributes "    \
	"->> "                                                                 \
	"'db.name'), ''), ''), nullif(attributes ->> 'messaging.system', '') " \
	"|| coalesce(' ' || nullif(attributes ->> "                            \
	"'messaging.destination.name', ''), ''), 'unknown')"
/* Whether span x starts in a window of w. */
#define MEASURED_C                                                             \
	"EXISTS (SELECT 1 FROM w WHERE c.start_time >= w.lo AND c.start_time " \
	"< w.hi)"
#define MEASURED_P                                                             \
	"EXISTS (SELECT 1 FROM w WHERE p.start_time >= w.lo AND p.start_time " \
	"< w.hi)"
/* MESHQUERY_SLACK_S as SQL */
#define SLACK "interval '300 s'"
_Static_assert(MESHQUERY_SLACK_S == 300, "SLACK says MESHQUERY_SLACK_S");
#define SPANS_CTE                                                              \
	"s AS MATERIALIZED (SELECT DISTINCT ON (trace_id, span_id) x.* FROM "  \
	"w CROSS JOIN LATERAL (SELECT trace_id, span_id, source, "             \
	"parent_span_id, kind, start_time, duration_ns, service_name, "        \
	"coalesce(nullif(service_namespace, ''), nullif(k8s_namespace_name, "  \
	"''), '') AS ns, coalesce(service_version, '') AS "                    \
	"ver, " MESHQUERY_WORKLOAD_SQL                                         \
	" AS wl, CASE WHEN rpc_system = 'grpc' "                               \
	"THEN 'grpc' WHEN http_method IS NOT NULL THEN 'http' WHEN db_system " \
	"IS NOT NULL THEN 'sql' WHEN kind IN (4, 5) THEN 'messaging' WHEN "    \
	"gen_ai_provider IS NOT NULL OR gen_ai_operation IS NOT NULL THEN "    \
	"'http' ELSE 'tcp' END AS proto, sextant_span_outcome(kind, "          \
	"status_code, "                                                        \
	"http_status_code, rpc_grpc_status_code) AS outcome, CASE WHEN kind "  \
	"IN (3, 4) THEN " PEER                                                 \
	" END AS peer FROM spans WHERE source IN ('ebpf', 'otlp') AND kind "   \
	"IN (2, 3, 4, 5) AND start_time >= w.lo - " SLACK                      \
	" AND start_time < w.hi + " SLACK                                      \
	" OFFSET 0) x ORDER BY trace_id, span_id, source DESC)"
/*
 * A peer that is a Kubernetes service's DNS name,
 * <service>.<namespace>.svc[.<cluster domain>][:port], names that service
 * (and its namespace): a call to it that no server span answered (it
 * failed to connect, or the service is not instrumented) joins the edge
 * to the service rather than making a leaf of its DNS name.
 */
#define K8S_PEER                                                               \
	"p.peer ~ '^[a-z0-9]([-a-z0-9]*[a-z0-9])?\\.[a-z0-9]([-a-z0-9]*"       \
	"[a-z0-9])?\\.svc(\\.[a-z0-9.-]*)?(:[0-9]+)?$'"
#define CALLS_CTE                                                              \
	"e AS (SELECT c.start_time AS t, p.service_name AS ss, p.ns AS sns, "  \
	"p.ver AS sv, p.wl AS sw, c.service_name AS ds, c.ns AS dns, c.ver "   \
	"AS dv, c.wl AS dw, false AS leaf, c.kind = 5 AS async, c.proto, "     \
	"c.outcome, c.duration_ns FROM s c JOIN s p ON p.trace_id = "          \
	"c.trace_id AND p.span_id = c.parent_span_id WHERE ((c.kind = 2 AND "  \
	"p.kind = 3) OR (c.kind = 5 AND p.kind = 4)) AND p.service_name <> "   \
	"c.service_name AND " MEASURED_C                                       \
	" UNION ALL SELECT p.start_time, p.service_name, p.ns, p.ver, p.wl, "  \
	"CASE WHEN " K8S_PEER " THEN split_part(p.peer, '.', 1) ELSE p.peer "  \
	"END, CASE WHEN " K8S_PEER " THEN split_part(p.peer, '.', 2) ELSE '' " \
	"END, '', '', NOT " K8S_PEER ", p.kind = 4, p.proto, p.outcome, "      \
	"p.duration_ns FROM s p WHERE p.kind IN (3, 4) AND " MEASURED_P        \
	" AND NOT EXISTS (SELECT 1 FROM s c WHERE c.trace_id = p.trace_id "    \
	"AND c.parent_span_id = p.span_id AND c.kind IN (2, 5)))"
#define EDGES_CTE SPANS_CTE ", " CALLS_CTE

/*
 * The pairing joins s with itself, and PostgreSQL estimates a CTE's
 * filtered rows at one or two: it then pairs by nested loop, every
 * SERVER span against every CLIENT span (an hour of 400,000 spans would
 * never end).  Hash joins are the right plan at any size, so the
 * statements that pair run with nested loops off, for their transaction
 * only (SET LOCAL); the loops over windows (LATERAL) stay, having no
 * other plan.
 */
#define LOCAL_PLAN "SELECT set_config('enable_nestloop', 'off', true)"

/* e's key columns, and e grouped per key (and period p) and bucket. */
#define EDGE_KEY "ss, sns, sv, sw, ds, dns, dv, dw, leaf, async, proto, outcome"
#define EDGE_BUCKETS(period)                                                   \
	"SELECT " period " AS p, " EDGE_KEY ", sextant_duration_bucket("       \
	"duration_ns) AS b, count(*) AS n FROM e GROUP BY p, " EDGE_KEY ", b"

/*
 * The graph: $1 the graph type's name; rollup rows of the hours $2 and
 * the minutes $3 (Unix s, bigint[]); raw spans measured in the windows
 * ($4[i], $5[i]) (Unix ms).  Rows per edge (nodes named as the graph
 * type says) and outcome, with the histogram as array text, ordered by
 * edge.
 */
#define ROLLUP_COLS                                                            \
	"src_service, src_namespace, src_version, src_workload, dst_service, " \
	"dst_namespace, dst_version, dst_workload, leaf, async, protocol, "    \
	"outcome, buckets::text, counts::text"
#define PERIODS(n) "ARRAY(SELECT to_timestamp(unnest(" n "::bigint[])))"
#define NODE(svc, wl)                                                          \
	"CASE WHEN $1::text = 'workload' AND " wl " <> '' THEN " wl            \
	" ELSE " svc " END"
#define VERSION(v) "CASE WHEN $1::text = 'versionedApp' THEN " v " ELSE '' END"
static const char graph_sql[] =
	"WITH w AS (SELECT to_timestamp(lo / 1000.0) AS lo, "
	"to_timestamp(hi "
	"/ 1000.0) AS hi FROM unnest($4::bigint[], $5::bigint[]) u(lo, "
	"hi)), " EDGES_CTE ", "
	"parts (ss, sns, sv, sw, ds, dns, dv, dw, leaf, async, proto, "
	"outcome, b, n) AS (SELECT " ROLLUP_COLS " FROM edge_rollup WHERE "
	"period = ANY (" PERIODS(
		"$2") ") UNION ALL SELECT " ROLLUP_COLS
		      " FROM edge_rollup_minute WHERE period = ANY "
		      "(" PERIODS("$3") ") "
					"UNION ALL SELECT " EDGE_KEY
					", array_agg(b ORDER BY b)::text, "
					"array_agg(n ORDER BY b)::text FROM "
					"(" EDGE_BUCKETS(
						"0") ") g GROUP BY " EDGE_KEY
						     ") "
						     "SELECT " NODE("ss", "sw") ", sns, " VERSION(
							     "sv") ", " NODE("d"
									     "s",
									     "d"
									     "w") ", "
										  "dns,"
										  " " VERSION(
											  "dv") ", leaf, async, proto, outcome, b, n FROM "
												"parts ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9";

/* The refresh of one period of edge_rollup ($1, an hour) or of the
 * minutes $1 (Unix s, bigint[]) of edge_rollup_minute. */
#define ROLLUP_INSERT(table)                                                   \
	"INSERT INTO " table " (period, " ROLLUP_COLS_PLAIN                    \
	", requests, buckets, counts) SELECT p, " EDGE_KEY                     \
	", sum(n)::bigint, array_agg(b ORDER BY b), array_agg(n ORDER BY b) "  \
	"FROM g GROUP BY p, " EDGE_KEY
#define ROLLUP_COLS_PLAIN                                                      \
	"src_service, src_namespace, src_version, src_workload, dst_service, " \
	"dst_namespace, dst_version, dst_workload, leaf, async, protocol, "    \
	"outcome"
static const char hour_clear_sql[] =
	"DELETE FROM edge_rollup WHERE period = $1::timestamptz";
static const char hour_sql[] =
	"WITH w AS (SELECT $1::timestamptz AS lo, $1::timestamptz + "
	"interval '1 hour' AS hi), " EDGES_CTE ", "
	"g AS (" EDGE_BUCKETS("$1::timestamptz") ") " ROLLUP_INSERT(
		"edge_rollup");
static const char minutes_clear_sql[] =
	"DELETE FROM edge_rollup_minute WHERE period = ANY (" PERIODS("$1") ")";
/* w: the minutes as runs of consecutive minutes, one window each */
static const char minutes_sql[] =
	"WITH w AS (SELECT to_timestamp(min(m)) AS lo, to_timestamp(max(m) + "
	"60) AS hi FROM (SELECT m, m - 60 * row_number() OVER (ORDER BY m) AS "
	"run FROM unnest($1::bigint[]) m) x GROUP BY run), " EDGES_CTE ", "
	"g AS (" EDGE_BUCKETS(
		"date_trunc('minute', t, 'UTC')") ") " ROLLUP_INSERT("edge_"
								     "rollup_"
								     "minute");

/* Columns of graph_sql's rows. */
enum {
	C_SN,
	C_SNS,
	C_SV,
	C_DN,
	C_DNS,
	C_DV,
	C_LEAF,
	C_ASYNC,
	C_PROTO,
	C_OUTCOME,
	C_BUCKET,
	C_COUNT,
	C_EDGE_KEY = C_OUTCOME
};

static const char *const type_names[] = {
	[MESHQUERY_VERSIONED_APP] = "versionedApp",
	[MESHQUERY_APP] = "app",
	[MESHQUERY_SERVICE] = "service",
	[MESHQUERY_WORKLOAD] = "workload",
};

int
meshquery_graph_type_parse(const char *s)
{
	for (size_t i = 0;
	     s != NULL && i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(s, type_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
meshquery_graph_type_name(enum meshquery_graph_type t)
{
	return (size_t)t < sizeof(type_names) / sizeof(type_names[0])
		       ? type_names[t]
		       : "service";
}

struct priv {
	PGresult *res; /* the strings of the result */
	size_t cap_nodes, cap_edges;
};

static const char *
opt(PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);

	return *v != '\0' ? v : NULL;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The node (name, ns, version, leaf), added when new; SIZE_MAX on ENOMEM. */
static size_t
node_of(struct meshquery_result *r, const char *name, const char *ns,
	const char *version, bool leaf)
{
	struct priv *p = r->priv_;
	struct meshquery_node *n;

	for (size_t i = 0; i < r->n_nodes; i++) {
		n = &r->nodes[i];
		if (n->leaf == leaf && strcmp(n->name, name) == 0 &&
		    same_str(n->ns, ns) && same_str(n->version, version))
			return i;
	}
	if (r->n_nodes == p->cap_nodes) {
		size_t cap = p->cap_nodes ? 2 * p->cap_nodes : 32;
		struct meshquery_node *v =
			realloc(r->nodes, cap * sizeof(*r->nodes));

		if (v == NULL)
			return SIZE_MAX;
		r->nodes = v;
		p->cap_nodes = cap;
	}
	n = &r->nodes[r->n_nodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->ns = ns;
	n->version = version;
	n->leaf = leaf;
	return r->n_nodes++;
}

static bool
ns_wanted(const struct meshquery_filter *f, const char *ns)
{
	if (f->nns == 0)
		return true;
	for (size_t i = 0; ns != NULL && i < f->nns; i++)
		if (strcmp(f->ns[i], ns) == 0)
			return true;
	return false;
}

/* Whether rows a and b are of one edge (their first C_EDGE_KEY columns). */
static bool
same_edge(PGresult *res, int a, int b)
{
	for (int col = 0; col < C_EDGE_KEY; col++)
		if (strcmp(PQgetvalue(res, a, col), PQgetvalue(res, b, col)) !=
		    0)
			return false;
	return true;
}

/* One edge from rows [from, to) of res, when an end is in a wanted
 * namespace. */
static int
add_edge(struct meshquery_result *r, const struct meshquery_filter *f,
	 PGresult *res, int from, int to, struct pg_error *err)
{
	struct priv *p = r->priv_;
	struct rollup_hist *h = NULL;
	struct meshquery_edge *e;
	bool leaf = strcmp(PQgetvalue(res, from, C_LEAF), "t") == 0;
	const char *sns = opt(res, from, C_SNS), *dns = opt(res, from, C_DNS);
	size_t src, dst;
	int rc = STATUS_OK;

	if (!ns_wanted(f, sns) && !ns_wanted(f, dns))
		return STATUS_OK;
	if (r->n_edges == MESHQUERY_MAX_EDGES) {
		r->truncated = true;
		return STATUS_OK;
	}
	if (r->n_edges == p->cap_edges) {
		size_t cap = p->cap_edges ? 2 * p->cap_edges : 64;
		struct meshquery_edge *v =
			realloc(r->edges, cap * sizeof(*r->edges));

		if (v == NULL)
			return STATUS_NOMEM;
		r->edges = v;
		p->cap_edges = cap;
	}
	src = node_of(r, PQgetvalue(res, from, C_SN), sns, opt(res, from, C_SV),
		      false);
	dst = src == SIZE_MAX ? SIZE_MAX
			      : node_of(r, PQgetvalue(res, from, C_DN), dns,
					opt(res, from, C_DV), leaf);
	if (dst == SIZE_MAX || (h = rollup_hist_new()) == NULL)
		return STATUS_NOMEM;
	e = &r->edges[r->n_edges];
	memset(e, 0, sizeof(*e));
	e->src = src;
	e->dst = dst;
	e->protocol = PQgetvalue(res, from, C_PROTO);
	e->async = strcmp(PQgetvalue(res, from, C_ASYNC), "t") == 0;
	for (int i = from; i < to; i++) {
		int64_t n = rollup_hist_count(h), outcome = 0;

		if (pg_text_i64(PQgetvalue(res, i, C_OUTCOME), &outcome) !=
			    STATUS_OK ||
		    rollup_hist_add_text(h, PQgetvalue(res, i, C_BUCKET),
					 PQgetvalue(res, i, C_COUNT)) !=
			    STATUS_OK) {
			rc = pg_bad_row(err, "edge row");
			goto out;
		}
		n = rollup_hist_count(h) - n;
		e->requests += (uint64_t)n;
		if (outcome == 1)
			e->errors += (uint64_t)n;
		else if (outcome == 2)
			e->client_errors += (uint64_t)n;
	}
	e->p50_ms = rollup_hist_quantile(h, 0.5) / 1e6;
	e->p95_ms = rollup_hist_quantile(h, 0.95) / 1e6;
	r->nodes[src].out_requests += e->requests;
	r->nodes[src].out_errors += e->errors;
	r->nodes[src].out_client_errors += e->client_errors;
	r->nodes[dst].in_requests += e->requests;
	r->nodes[dst].in_errors += e->errors;
	r->nodes[dst].in_client_errors += e->client_errors;
	r->n_edges++;
out:
	rollup_hist_free(h);
	return rc;
}

/*
 * Where each part of the range is read from, as graph_sql's arrays (text,
 * "{...}"): hours and minutes of clean rollup rows (Unix s), and raw
 * windows lo[i]..hi[i] (Unix ms), adjacent windows merged.
 */
/* Bytes of each of a plan's arrays: 12 a minute, so 8 MiB holds the
 * minutes of a range of 480 days (retention is at most 3650, but a
 * range reads hours where it can); a longer list fails with
 * STATUS_NOMEM rather than grow without end. */
#define PLAN_TEXT_MAX (8u << 20)

struct plan {
	struct buf hours, minutes, lo, hi;
	int64_t last_hi; /* end of the last raw window, or INT64_MIN */
};

static void
plan_add(struct buf *b, int64_t v)
{
	buf_printf(b, "%s%lld", b->len > 1 ? "," : "", (long long)v);
}

static void
plan_raw(struct plan *p, int64_t lo, int64_t hi)
{
	if (lo >= hi)
		return;
	if (p->last_hi == lo) { /* extend the last window */
		size_t at = p->hi.len;

		while (at > 1 && p->hi.data[at - 1] != ',' &&
		       p->hi.data[at - 1] != '{')
			at--;
		buf_rollback(&p->hi, at);
		buf_printf(&p->hi, "%lld", (long long)hi);
	} else {
		plan_add(&p->lo, lo);
		plan_add(&p->hi, hi);
	}
	p->last_hi = hi;
}

/* The next element of the sorted list "{1,2,3}" at *at (Unix s) as ms, or
 * INT64_MAX past its end. */
static int64_t
next_mark(const char **at)
{
	char *end;
	long long v;

	while (**at == '{' || **at == ',')
		(*at)++;
	if (**at < '0' || **at > '9')
		return INT64_MAX;
	v = strtoll(*at, &end, 10);
	*at = end;
	return (int64_t)v * 1000;
}

/*
 * The plan for f: as rollup_split_range splits it, hours from edge_rollup
 * where clean, minutes from edge_rollup_minute where clean and no clean
 * hour covers them, raw spans for the rest (the dirty minutes, the ends).
 * dirty_hours, dirty_minutes: the marks' periods in the split's hours and
 * minutes (Unix s, ascending).
 */
static int
plan_make(struct plan *p, const struct meshquery_filter *f,
	  const struct rollup_split *sp, const char *dirty_hours,
	  const char *dirty_minutes)
{
	const int64_t minute = 60000, hour = 3600000;
	const char *dh = dirty_hours, *dm = dirty_minutes;
	int64_t next_h = next_mark(&dh), next_m = next_mark(&dm);

	plan_raw(p, f->from_ms, sp->minute_from);
	for (int64_t m = sp->minute_from; m < sp->minute_to;) {
		while (next_h < m - m % hour)
			next_h = next_mark(&dh);
		if (m >= sp->hour_from && m < sp->hour_to && m % hour == 0 &&
		    next_h != m) {
			plan_add(&p->hours, m / 1000);
			m += hour;
			continue;
		}
		while (next_m < m)
			next_m = next_mark(&dm);
		if (next_m == m)
			plan_raw(p, m, m + minute);
		else
			plan_add(&p->minutes, m / 1000);
		m += minute;
	}
	plan_raw(p, sp->minute_to, f->to_ms);
	buf_puts(&p->hours, "}");
	buf_puts(&p->minutes, "}");
	buf_puts(&p->lo, "}");
	buf_puts(&p->hi, "}");
	return buf_error(&p->hours) | buf_error(&p->minutes) |
			       buf_error(&p->lo) | buf_error(&p->hi)
		       ? STATUS_NOMEM
		       : STATUS_OK;
}

/* The dirty hours in [$1, $2) and minutes in [$3, $4), as Unix s. */
static const char dirty_sql[] =
	"SELECT coalesce((SELECT array_agg(DISTINCT extract(epoch FROM "
	"period)::bigint ORDER BY extract(epoch FROM period)::bigint) FROM "
	"span_rollup_dirty WHERE period >= $1::timestamptz AND period < "
	"$2::timestamptz), '{}')::text, coalesce((SELECT array_agg(DISTINCT "
	"extract(epoch FROM period)::bigint ORDER BY extract(epoch FROM "
	"period)::bigint) FROM span_rollup_minute_dirty WHERE period >= "
	"$3::timestamptz AND period < $4::timestamptz), '{}')::text";

/* The plan of f as of now: the marks read on c (in the caller's
 * transaction). */
static int
plan_read(struct pg_conn *c, const struct meshquery_filter *f, struct plan *p,
	  bool *rollup, struct pg_error *err)
{
	char t[4][TIMERANGE_FORMAT_MAX];
	const char *v[4] = {t[0], t[1], t[2], t[3]};
	struct rollup_split sp;
	PGresult *res = NULL;
	int rc;

	*rollup = rollup_split_range(f->from_ms, f->to_ms, f->now_ms, &sp);
	if (!*rollup) {
		sp.minute_from = sp.minute_to = f->to_ms;
		return plan_make(p, f, &sp, "{}", "{}");
	}
	timerange_format(sp.hour_from, t[0], sizeof(t[0]));
	timerange_format(sp.hour_to, t[1], sizeof(t[1]));
	timerange_format(sp.minute_from, t[2], sizeof(t[2]));
	timerange_format(sp.minute_to, t[3], sizeof(t[3]));
	if ((rc = pg_query(c, dirty_sql, 4, v, &res, err)) != STATUS_OK)
		return rc;
	if (PQntuples(res) != 1)
		rc = pg_bad_row(err, "dirty periods");
	else
		rc = plan_make(p, f, &sp, PQgetvalue(res, 0, 0),
			       PQgetvalue(res, 0, 1));
	PQclear(res);
	return rc;
}

static void
plan_free(struct plan *p)
{
	buf_free(&p->hours);
	buf_free(&p->minutes);
	buf_free(&p->lo);
	buf_free(&p->hi);
}

static int
by_requests(const void *a, const void *b)
{
	const struct meshquery_edge *x = a, *y = b;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

int
meshquery_graph(struct pg_conn *c, const struct meshquery_filter *f,
		struct meshquery_result **out, struct pg_error *err)
{
	const char *v[5];
	struct plan plan = {.last_hi = INT64_MIN};
	struct meshquery_result *r = NULL;
	struct priv *priv = NULL;
	PGresult *res = NULL;
	struct pg_error ignored;
	bool in_tx = false;
	bool rollup = false;
	int rc, rows;

	*out = NULL;
	if (f->from_ms >= f->to_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "the time range is empty: from must be "
				    "before to");
	buf_init(&plan.hours, PLAN_TEXT_MAX);
	buf_init(&plan.minutes, PLAN_TEXT_MAX);
	buf_init(&plan.lo, PLAN_TEXT_MAX);
	buf_init(&plan.hi, PLAN_TEXT_MAX);
	buf_puts(&plan.hours, "{");
	buf_puts(&plan.minutes, "{");
	buf_puts(&plan.lo, "{");
	buf_puts(&plan.hi, "{");
	/* nested loops off (LOCAL_PLAN's reason), and jit off: the
	 * self-join's estimate is large, and LLVM would compile for longer
	 * than the statement runs.  Read-only: it ends in a rollback. */
	if ((rc = pg_begin_local(c,
				 (const char *const[]){"enable_nestloop", "off",
						       "jit", "off", NULL},
				 err)) != STATUS_OK)
		return rc;
	in_tx = true;
	if ((rc = plan_read(c, f, &plan, &rollup, err)) != STATUS_OK)
		goto fail;
	v[0] = meshquery_graph_type_name(f->type);
	v[1] = plan.hours.data;
	v[2] = plan.minutes.data;
	v[3] = plan.lo.data;
	v[4] = plan.hi.data;
	if ((rc = pg_query(c, graph_sql, 5, v, &res, err)) != STATUS_OK)
		goto fail;
	r = calloc(1, sizeof(*r));
	priv = calloc(1, sizeof(*priv));
	if (r == NULL || priv == NULL) {
		rc = STATUS_NOMEM;
		goto fail;
	}
	priv->res = res;
	res = NULL;
	r->priv_ = priv;
	r->rollup = rollup && (plan.hours.len > 2 || plan.minutes.len > 2);
	priv = NULL;
	res = ((struct priv *)r->priv_)->res;
	rows = PQntuples(res);
	for (int i = 0, j; i < rows; i = j) {
		for (j = i + 1; j < rows && same_edge(res, i, j); j++)
			;
		if ((rc = add_edge(r, f, res, i, j, err)) != STATUS_OK)
			goto fail_owned;
	}
	res = NULL;
	if (r->n_edges > 1)
		qsort(r->edges, r->n_edges, sizeof(*r->edges), by_requests);
	in_tx = false;
	if ((rc = pg_rollback(c, err)) != STATUS_OK)
		goto fail;
	plan_free(&plan);
	*out = r;
	return STATUS_OK;
fail_owned:
	res = NULL; /* owned by r */
fail:
	if (in_tx)
		(void)!pg_rollback(c, &ignored);
	PQclear(res);
	free(priv);
	meshquery_free(r);
	plan_free(&plan);
	return rc == STATUS_NOMEM ? pg_error_set(err, rc, "out of memory") : rc;
}

void
meshquery_free(struct meshquery_result *r)
{
	struct priv *priv;

	if (r == NULL)
		return;
	priv = r->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(r->nodes);
	free(r->edges);
	free(r);
}

/* ---- health ------------------------------------------------------------- */

enum health_status
meshquery_edge_health(const struct health_tolerances *t,
		      const struct meshquery_edge *e)
{
	return health_judge(t, e->requests, e->errors, e->client_errors);
}

enum health_status
meshquery_node_health(const struct health_tolerances *t,
		      const struct meshquery_node *n)
{
	return health_worse(health_judge(t, n->in_requests, n->in_errors,
					 n->in_client_errors),
			    health_judge(t, n->out_requests, n->out_errors,
					 n->out_client_errors));
}

double
meshquery_node_error_rate(const struct meshquery_node *n)
{
	uint64_t all = n->in_requests + n->out_requests;
	uint64_t failed = n->in_errors + n->in_client_errors + n->out_errors +
			  n->out_client_errors;

	return all == 0 ? 0 : (double)failed / (double)all;
}

static void
count(struct meshquery_counts *c, enum health_status h)
{
	c->total++;
	if (h == HEALTH_HEALTHY)
		c->healthy++;
	else if (h == HEALTH_DEGRADED)
		c->degraded++;
	else if (h == HEALTH_UNHEALTHY)
		c->unhealthy++;
}

static double
availability(const struct meshquery_counts *c)
{
	if (c->total == 0)
		return 100.0;
	return ((double)c->healthy + (double)c->degraded * 0.5) /
	       (double)c->total * 100.0;
}

/* Kiali's computeNamespaceStatus. */
static const char *
ns_status(const struct meshquery_ns_summary *s)
{
	if (s->counts.total == 0)
		return "UNKNOWN";
	if (s->counts.unhealthy == 0 && s->error_rate < 0.01)
		return "HEALTHY";
	if (s->counts.unhealthy > s->counts.total / 2 || s->error_rate > 0.05)
		return "UNHEALTHY";
	return "DEGRADED";
}

/* Kiali's computeOverallStatus. */
static const char *
overall_status(const struct meshquery_counts *c)
{
	if (c->total == 0)
		return "UNKNOWN";
	if (c->unhealthy > 0)
		return c->unhealthy > c->total / 2 ? "UNHEALTHY" : "DEGRADED";
	return c->degraded > 0 ? "DEGRADED" : "HEALTHY";
}

static int
by_ns(const void *a, const void *b)
{
	return strcmp(((const struct meshquery_ns_summary *)a)->ns,
		      ((const struct meshquery_ns_summary *)b)->ns);
}

int
meshquery_summarize(const struct meshquery_result *r,
		    const struct health_tolerances *t,
		    struct meshquery_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->ns = calloc(r->n_nodes + 1, sizeof(*s->ns));
	if (s->ns == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < r->n_nodes; i++) {
		const struct meshquery_node *n = &r->nodes[i];
		const char *ns = n->ns != NULL ? n->ns : "";
		enum health_status h = meshquery_node_health(t, n);
		double rate = meshquery_node_error_rate(n);
		struct meshquery_ns_summary *ns_s = NULL;
		size_t k;

		if (n->leaf)
			continue;
		for (k = 0; k < s->n_ns && ns_s == NULL; k++)
			if (strcmp(s->ns[k].ns, ns) == 0)
				ns_s = &s->ns[k];
		if (ns_s == NULL) {
			ns_s = &s->ns[s->n_ns++];
			ns_s->ns = ns;
		}
		count(&s->counts, h);
		count(&ns_s->counts, h);
		ns_s->error_rate += rate;
		if (h != HEALTH_UNHEALTHY)
			continue;
		/* insertion into the top list, highest rate first, ties in
		 * node order (Kiali sorts by rate alone) */
		for (k = s->n_top; k > 0; k--) {
			if (meshquery_node_error_rate(
				    &r->nodes[s->top[k - 1]]) >= rate)
				break;
			if (k < MESHQUERY_TOP_UNHEALTHY)
				s->top[k] = s->top[k - 1];
		}
		if (k < MESHQUERY_TOP_UNHEALTHY) {
			s->top[k] = i;
			if (s->n_top < MESHQUERY_TOP_UNHEALTHY)
				s->n_top++;
		}
	}
	qsort(s->ns, s->n_ns, sizeof(*s->ns), by_ns);
	for (size_t k = 0; k < s->n_ns; k++) {
		s->ns[k].status = ns_status(&s->ns[k]);
		s->ns[k].availability = availability(&s->ns[k].counts);
		s->total_error_rate += s->ns[k].error_rate;
	}
	s->overall = overall_status(&s->counts);
	s->availability = availability(&s->counts);
	return STATUS_OK;
}

void
meshquery_summary_free(struct meshquery_summary *s)
{
	if (s == NULL)
		return;
	free(s->ns);
	s->ns = NULL;
	s->n_ns = 0;
}

/* ---- the edge rollups -------------------------------------------------- */

int
meshquery_rollup_hour(struct pg_conn *c, const char *period,
		      struct pg_error *err)
{
	const char *one[] = {period};
	int rc;

	if ((rc = pg_query(c, LOCAL_PLAN, 0, NULL, NULL, err)) != STATUS_OK ||
	    (rc = pg_query(c, hour_clear_sql, 1, one, NULL, err)) != STATUS_OK)
		return rc;
	return pg_query(c, hour_sql, 1, one, NULL, err);
}

int
meshquery_rollup_minutes(struct pg_conn *c, const char *minutes,
			 struct pg_error *err)
{
	const char *one[] = {minutes};
	int rc;

	if ((rc = pg_query(c, LOCAL_PLAN, 0, NULL, NULL, err)) != STATUS_OK ||
	    (rc = pg_query(c, minutes_clear_sql, 1, one, NULL, err)) !=
		    STATUS_OK)
		return rc;
	return pg_query(c, minutes_sql, 1, one, NULL, err);
}

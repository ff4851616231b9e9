/*
 * resourcequery.c - services and workloads from spans (see
 * resourcequery.h): one statement aggregates the spans of the range per
 * resource, the graph of lib/telemetry/meshquery gives the calls out and
 * the edges, spanquery the routes.  SQL text is static, values are bound.
 */
#include "telemetry/resourcequery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/buf.h"
#include "telemetry/rollup.h"

/* MESHQUERY_SLACK_S as SQL: how far apart the two copies of a span (eBPF
 * and OTLP) may start and still count once */
#define SLACK "interval '300 s'"
_Static_assert(MESHQUERY_SLACK_S == 300, "SLACK says MESHQUERY_SLACK_S");
#define NS_SQL                                                                 \
	"coalesce(nullif(service_namespace, ''), nullif(k8s_namespace_name, "  \
	"''), '')"
#define OUTCOME_SQL                                                            \
	"sextant_span_outcome(kind, status_code, http_status_code, "           \
	"rpc_grpc_status_code)"

/*
 * The spans starting in the windows w (lo, hi) that meet cond, as rows of
 * resource_rollup_minute (migrations/0018, whose backfill states the same
 * rule): per period (the expression period), service, namespace, version,
 * workload, pod, host and source, the spans, the newest start and error,
 * and the SERVER and CONSUMER spans counted once per span id (an eBPF copy
 * only when no OTLP copy starts within SLACK of it) by outcome.  The
 * refresh and the raw parts of a query read spans through this alone.
 */
#define RES_ROWS(period, cond)                                                 \
	"SELECT " period " AS p, service_name, ns, ver, wl, pod, host, "       \
	"source, count(*) AS spans, max(start_time) AS last, max(start_time) " \
	"FILTER (WHERE o = 1) AS last_error, count(*) FILTER (WHERE req) AS "  \
	"n, count(*) FILTER (WHERE req AND o = 1) AS e, count(*) FILTER "      \
	"(WHERE req AND o = 2) AS ce FROM (SELECT s.start_time, "              \
	"s.service_name, s.ns, s.ver, s.wl, s.pod, s.host, s.source, s.o, "    \
	"s.kind IN (2, 5) AND (s.source = 'otlp' OR NOT EXISTS (SELECT 1 "     \
	"FROM spans d WHERE d.trace_id = s.trace_id AND d.span_id = "          \
	"s.span_id AND d.source = 'otlp' AND d.start_time >= s.start_time - "  \
	"" SLACK " AND d.start_time <= s.start_time + " SLACK ")) AS req "     \
	"FROM w CROSS JOIN LATERAL (SELECT trace_id, span_id, kind, "          \
	"start_time, service_name, " NS_SQL " AS ns, coalesce("                \
	"service_version, '') AS ver, " MESHQUERY_WORKLOAD_SQL " AS wl, "      \
	"coalesce(k8s_pod_name, '') AS pod, coalesce(host_name, '') AS host, " \
	"source, " OUTCOME_SQL " AS o FROM spans WHERE " ROLLUP_ALL_SOURCES    \
	"AND start_time >= w.lo AND start_time < w.hi AND " cond               \
	" OFFSET 0) s) x GROUP BY 1, 2, 3, 4, 5, 6, 7, 8"

/* A rollup row's resource as the type $5 names it (get_mesh_graph's
 * nodes). */
#define NAME_SQL                                                               \
	"CASE WHEN $5::text = 'workload' AND workload <> '' THEN workload "    \
	"ELSE service_name END"
/* The first RESOURCEQUERY_NAMES names of column v, joined by chr(31), and
 * how many there are. */
#define NAMES(v)                                                               \
	"array_to_string((array_agg(DISTINCT " v ") FILTER (WHERE " v          \
	" <> ''))[1:10], chr(31)), count(DISTINCT " v ") FILTER (WHERE " v     \
	" <> '')"
_Static_assert(RESOURCEQUERY_NAMES == 10, "NAMES says RESOURCEQUERY_NAMES");
#define US(t) "(extract(epoch FROM " t ") * 1000000)::bigint"

/*
 * The resources of type $5 (named $6; NULL: all) in the namespaces $3
 * (none: any) over [$1, $2): the rows of resource_rollup_minute for the
 * clean minutes of [$4, $7) (dm: the dirty ones), and RES_ROWS over the
 * spans of the rest: [$1, $4), each dirty minute, [$7, $2).  A
 * resource's columns: name, namespace, sources, last seen (Unix us), the names it was seen with
 * (enum RESOURCEQUERY_VERSIONS ...), requests, errors, client errors, its
 * newest error (Unix us, NULL without).
 */
#define SERVICE_NAMED                                                          \
	"($6::text IS NULL OR $5::text <> 'service' OR service_name = "        \
	"$6::text)"
#define RES_COLS                                                               \
	"service_name, namespace, version, workload, pod, host, source, "      \
	"spans, last_start, last_error, requests, errors, client_errors"
static const char items_sql[] =
	"WITH dm AS (SELECT DISTINCT period FROM span_rollup_minute_dirty "
	"WHERE period >= $4::timestamptz AND period < $7::timestamptz), "
	"w AS (SELECT $1::timestamptz AS lo, $4::timestamptz AS hi UNION "
	"ALL "
	"SELECT $7::timestamptz, $2::timestamptz UNION ALL SELECT period, "
	"period + interval '1 minute' FROM dm), "
	"parts (" RES_COLS ") AS (SELECT " RES_COLS " FROM "
	"resource_rollup_minute WHERE period >= $4::timestamptz AND "
	"period < "
	"$7::timestamptz AND period NOT IN (SELECT period FROM dm) AND "
	"" SERVICE_NAMED " UNION ALL SELECT service_name, ns, ver, wl, pod, "
	"host, source, spans, last, last_error, n, e, ce FROM (" RES_ROWS(
		"NULL::timestamptz",
		SERVICE_NAMED) ") r), "
			       "k AS (SELECT " NAME_SQL
			       " AS name, * FROM parts WHERE "
			       "(cardinality($3::text[]) = 0 OR namespace "
			       "= ANY ($3::text[])) AND "
			       "($6::text IS NULL OR " NAME_SQL " = $6::text)) "
			       "SELECT name, namespace, "
			       "string_agg(DISTINCT source, ','), " US(
				       "ma"
				       "x("
				       "la"
				       "st"
				       "_s"
				       "ta"
				       "rt"
				       ")") ", " NAMES("version") ", " NAMES("w"
									     "o"
									     "r"
									     "k"
									     "l"
									     "o"
									     "a"
									     "d") ", " NAMES("service_name") ", " NAMES("pod") ", " NAMES("host") ", "
																		  "sum("
																		  "requests"
																		  "), "
																		  "sum("
																		  "errors),"
																		  " sum("
																		  "client_"
																		  "errors),"
																		  " " US("m"
																			 "a"
																			 "x"
																			 "("
																			 "l"
																			 "a"
																			 "s"
																			 "t"
																			 "_"
																			 "e"
																			 "r"
																			 "r"
																			 "o"
																			 "r"
																			 ")") " FROM k GROUP BY name, namespace ORDER BY "
																			      "name COLLATE \"C\", namespace COLLATE "
																			      "\"C\" LIMIT 10001";
_Static_assert(RESOURCEQUERY_MAX_ITEMS == 10000, "LIMIT says MAX_ITEMS + 1");

/* Columns of items_sql. */
enum {
	C_NAME,
	C_NS,
	C_SOURCES,
	C_LAST,
	C_SEEN, /* RESOURCEQUERY_SEEN pairs: names, count */
	C_IN = C_SEEN + 2 * RESOURCEQUERY_SEEN,
	C_IN_E,
	C_IN_CE,
	C_LAST_ERROR,
	C_COLS
};

/* The refresh of the minutes $1 (Unix s, bigint[]): one window each. */
static const char minutes_clear_sql[] =
	"DELETE FROM resource_rollup_minute WHERE period = ANY (ARRAY(SELECT "
	"to_timestamp(unnest($1::bigint[]))))";
static const char minutes_sql[] =
	"WITH w AS (SELECT to_timestamp(m) AS lo, to_timestamp(m + 60) AS hi "
	"FROM unnest($1::bigint[]) m) INSERT INTO resource_rollup_minute "
	"(period, " RES_COLS ") " RES_ROWS("date_trunc('minute', start_time, "
					   "'UTC')",
					   "true");

/* The newest error of the resource $6 of type $5 in namespace $4 ('' none),
 * at $1 (Unix us: resourcequery_item.last_error_us); $2, $3 unused. */
static const char error_sql[] = "SELECT " US(
	"start_time") ", encode(trace_id, 'hex'), service_name, "
		      "left(name, 160), source, coalesce(http_status_code, "
		      "-1), "
		      "coalesce(rpc_grpc_status_code, -1), "
		      "left(coalesce(nullif("
		      "status_message, ''), CASE WHEN events IS NOT NULL THEN "
		      "jsonb_path_query_first(events, '$[*] ? (@.name == "
		      "\"exception\").attributes.\"exception.message\"') #>> "
		      "'{}' END), "
		      "320) FROM spans WHERE " ROLLUP_ALL_SOURCES
		      "AND start_time = "
		      "'epoch'::timestamptz + $1::bigint * interval '1 "
		      "microsecond' AND "
		      "$2::text IS NULL AND $3::text IS NULL AND " SERVICE_NAMED
		      " AND "
		      "" NS_SQL
		      " = $4::text AND (CASE WHEN $5::text = 'workload' AND "
		      "" MESHQUERY_WORKLOAD_SQL
		      " <> '' THEN " MESHQUERY_WORKLOAD_SQL
		      " ELSE service_name END) = $6::text AND " OUTCOME_SQL
		      " = 1 LIMIT 1";

static const char *const type_names[] = {
	[RESOURCEQUERY_SERVICE] = "service",
	[RESOURCEQUERY_WORKLOAD] = "workload",
};

int
resourcequery_type_parse(const char *s)
{
	for (size_t i = 0;
	     s != NULL && i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(s, type_names[i]) == 0)
			return (int)i;
	return -1;
}

struct list_priv {
	PGresult *res;
	char **owned; /* per item and list: the split copy of its names */
	size_t n_owned;
};

struct detail_priv {
	PGresult *error;
	struct spanquery_metrics *m[RESOURCEQUERY_ROUTE_SERVICES];
};

/* The namespaces of f as a text[] literal ("{}" for none) into b. */
static int
ns_array(const struct resourcequery_filter *f, struct buf *b)
{
	buf_puts(b, "{");
	for (size_t i = 0; i < f->nns; i++) {
		buf_puts(b, i > 0 ? ",\"" : "\"");
		for (const char *p = f->ns[i]; *p != '\0'; p++) {
			if (*p == '"' || *p == '\\')
				buf_puts(b, "\\");
			buf_printf(b, "%c", *p);
		}
		buf_puts(b, "\"");
	}
	buf_puts(b, "}");
	return buf_error(b);
}

/* The values items_sql binds: $1 from, $2 to, $3 namespaces, $4 and $7
 * the settled minutes (rollup_split_range; both $2 when none), $5 type,
 * $6 name. */
struct params {
	char from[PG_TS_TEXT_MAX], to[PG_TS_TEXT_MAX];
	char mfrom[PG_TS_TEXT_MAX], mto[PG_TS_TEXT_MAX];
	struct buf ns;
	const char *v[7];
};

static int
params_make(struct params *p, const struct resourcequery_filter *f,
	    struct pg_error *err)
{
	struct rollup_split sp;

	if (f->from_ms >= f->to_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "the time range is empty: from must be "
				    "before to");
	if (!rollup_split_range(f->from_ms, f->to_ms, f->now_ms, &sp))
		sp.minute_from = sp.minute_to = f->to_ms;
	pg_ts_text(f->from_ms, p->from, sizeof(p->from));
	pg_ts_text(f->to_ms, p->to, sizeof(p->to));
	pg_ts_text(sp.minute_from, p->mfrom, sizeof(p->mfrom));
	pg_ts_text(sp.minute_to, p->mto, sizeof(p->mto));
	buf_init(&p->ns, 1u << 20);
	if (ns_array(f, &p->ns) != STATUS_OK)
		return pg_error_set(err, STATUS_INVALID,
				    "namespaces: too many or too long");
	p->v[0] = p->from;
	p->v[1] = p->to;
	p->v[2] = p->ns.data;
	p->v[3] = p->mfrom;
	p->v[4] = (size_t)f->type < 2 ? type_names[f->type] : "service";
	p->v[5] = f->name;
	p->v[6] = p->mto;
	return STATUS_OK;
}

/* Splits the chr(31)-joined names of text into n (a copy, kept in
 * *owned). */
static int
names_split(const char *text, const char *count, struct resourcequery_names *n,
	    char **owned)
{
	int64_t total = 0;
	char *p;

	if (pg_text_i64(count, &total) != STATUS_OK || total < 0)
		return STATUS_INVALID;
	n->total = (size_t)total;
	if (*text == '\0')
		return STATUS_OK;
	if ((*owned = strdup(text)) == NULL)
		return STATUS_NOMEM;
	for (p = *owned; p != NULL && n->n < RESOURCEQUERY_NAMES;) {
		char *sep = strchr(p, '\x1f');

		if (sep != NULL)
			*sep++ = '\0';
		n->v[n->n++] = p;
		p = sep;
	}
	return STATUS_OK;
}

static int
u64_col(PGresult *res, int row, int col, uint64_t *out)
{
	int64_t v;

	if (pg_text_i64(PQgetvalue(res, row, col), &v) != STATUS_OK || v < 0)
		return STATUS_INVALID;
	*out = (uint64_t)v;
	return STATUS_OK;
}

static int
item_row(struct resourcequery_list *l, int row, struct pg_error *err)
{
	struct list_priv *p = l->priv_;
	PGresult *res = p->res;
	struct resourcequery_item *it = &l->items[row];
	const char *src = PQgetvalue(res, row, C_SOURCES);
	int rc;

	it->name = PQgetvalue(res, row, C_NAME);
	it->ns = PQgetvalue(res, row, C_NS);
	it->sources = (strstr(src, "ebpf") ? RESOURCEQUERY_EBPF : 0) |
		      (strstr(src, "otlp") ? RESOURCEQUERY_OTLP : 0);
	for (int k = 0; k < RESOURCEQUERY_SEEN; k++) {
		rc = names_split(PQgetvalue(res, row, C_SEEN + 2 * k),
				 PQgetvalue(res, row, C_SEEN + 2 * k + 1),
				 &it->seen[k],
				 &p->owned[(size_t)row * RESOURCEQUERY_SEEN +
					   (size_t)k]);
		if (rc == STATUS_NOMEM)
			return rc;
		if (rc != STATUS_OK)
			return pg_bad_row(err, "resource names");
	}
	if (pg_text_i64(PQgetvalue(res, row, C_LAST), &it->last_seen_us) !=
		    STATUS_OK ||
	    u64_col(res, row, C_IN, &it->in_requests) != STATUS_OK ||
	    u64_col(res, row, C_IN_E, &it->in_errors) != STATUS_OK ||
	    u64_col(res, row, C_IN_CE, &it->in_client_errors) != STATUS_OK ||
	    (!PQgetisnull(res, row, C_LAST_ERROR) &&
	     pg_text_i64(PQgetvalue(res, row, C_LAST_ERROR),
			 &it->last_error_us) != STATUS_OK))
		return pg_bad_row(err, "resource row");
	it->has_error = !PQgetisnull(res, row, C_LAST_ERROR);
	return STATUS_OK;
}

/* The graph's node of it (not a leaf), or SIZE_MAX. */
static size_t
node_index(const struct meshquery_result *g,
	   const struct resourcequery_item *it)
{
	for (size_t i = 0; g != NULL && i < g->n_nodes; i++) {
		const struct meshquery_node *n = &g->nodes[i];

		if (!n->leaf && strcmp(n->name, it->name) == 0 &&
		    strcmp(n->ns != NULL ? n->ns : "", it->ns) == 0)
			return i;
	}
	return SIZE_MAX;
}

int
resourcequery_list(struct pg_conn *c, const struct resourcequery_filter *f,
		   struct resourcequery_list **out, struct pg_error *err)
{
	struct meshquery_filter mf = {.from_ms = f->from_ms,
				      .to_ms = f->to_ms,
				      .now_ms = f->now_ms,
				      .type = f->type == RESOURCEQUERY_WORKLOAD
						      ? MESHQUERY_WORKLOAD
						      : MESHQUERY_SERVICE,
				      .ns = f->ns,
				      .nns = f->nns};
	struct params pm = {0};
	struct resourcequery_list *l = NULL;
	struct list_priv *p = NULL;
	int rc, rows;

	*out = NULL;
	if ((rc = params_make(&pm, f, err)) != STATUS_OK)
		goto out;
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (p = calloc(1, sizeof(*p))) == NULL) {
		free(l);
		l = NULL;
		rc = STATUS_NOMEM;
		goto out;
	}
	l->priv_ = p;
	if ((rc = pg_query(c, items_sql, 7, pm.v, &p->res, err)) != STATUS_OK)
		goto out;
	if (PQnfields(p->res) != C_COLS) {
		rc = pg_bad_row(err, "resource columns");
		goto out;
	}
	rows = PQntuples(p->res);
	if (rows > RESOURCEQUERY_MAX_ITEMS) {
		rows = RESOURCEQUERY_MAX_ITEMS;
		l->truncated = true;
	}
	l->items = calloc((size_t)rows + 1, sizeof(*l->items));
	p->n_owned = (size_t)rows * RESOURCEQUERY_SEEN;
	p->owned = calloc(p->n_owned + 1, sizeof(*p->owned));
	if (l->items == NULL || p->owned == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (l->n = 0; l->n < (size_t)rows; l->n++)
		if ((rc = item_row(l, (int)l->n, err)) != STATUS_OK)
			goto out;
	if ((rc = meshquery_graph(c, &mf, &l->graph, err)) != STATUS_OK)
		goto out;
	for (size_t i = 0; i < l->n; i++) {
		size_t k = node_index(l->graph, &l->items[i]);

		if (k == SIZE_MAX)
			continue;
		l->items[i].out_requests = l->graph->nodes[k].out_requests;
		l->items[i].out_errors = l->graph->nodes[k].out_errors;
		l->items[i].out_client_errors =
			l->graph->nodes[k].out_client_errors;
	}
	*out = l;
	l = NULL;
out:
	buf_free(&pm.ns);
	resourcequery_list_free(l);
	return rc == STATUS_NOMEM ? pg_error_set(err, rc, "out of memory") : rc;
}

void
resourcequery_list_free(struct resourcequery_list *l)
{
	struct list_priv *p;

	if (l == NULL)
		return;
	p = l->priv_;
	if (p != NULL) {
		for (size_t i = 0; p->owned != NULL && i < p->n_owned; i++)
			free(p->owned[i]);
		free(p->owned);
		PQclear(p->res);
		free(p);
	}
	meshquery_free(l->graph);
	free(l->items);
	free(l);
}

enum health_status
resourcequery_health(const struct health_tolerances *t,
		     const struct resourcequery_item *it)
{
	return health_worse(health_judge(t, it->in_requests, it->in_errors,
					 it->in_client_errors),
			    health_judge(t, it->out_requests, it->out_errors,
					 it->out_client_errors));
}

/* ---- one resource -------------------------------------------------------- */

/* The edges of the item's node, in and out; edges come busiest first
 * from meshquery, and keep that order. */
static int
detail_edges(struct resourcequery_detail *d)
{
	const struct meshquery_result *g = d->list->graph;

	d->node = node_index(g, d->item);
	d->in = calloc(g->n_edges + 1, sizeof(*d->in));
	d->out = calloc(g->n_edges + 1, sizeof(*d->out));
	if (d->in == NULL || d->out == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; d->node != SIZE_MAX && i < g->n_edges; i++) {
		if (g->edges[i].dst == d->node)
			d->in[d->n_in++] = i;
		if (g->edges[i].src == d->node)
			d->out[d->n_out++] = i;
	}
	return STATUS_OK;
}

static uint64_t
total_requests(const struct spanquery_metrics *m)
{
	uint64_t n = 0;

	for (int k = 0; k < SPANQUERY_PROTOCOLS; k++)
		n += m->total[k].requests;
	return n;
}

/* The metrics of service from the source that saw the most of its calls
 * (eBPF on a tie), into *out. */
static int
service_metrics(struct pg_conn *c, const struct resourcequery_filter *f,
		const char *service, struct spanquery_metrics **out,
		struct pg_error *err)
{
	static const char *const sources[] = {"ebpf", "otlp"};
	struct spanquery_filter sf = {.service = service,
				      .from_ms = f->from_ms,
				      .to_ms = f->to_ms,
				      .grpc_status = -1};
	struct spanquery_metrics *m = NULL;
	bool rollup;
	int rc;

	*out = NULL;
	for (size_t i = 0; i < 2; i++) {
		if ((rc = spanquery_metrics_send(c, sources[i], &sf, f->now_ms,
						 &rollup, err)) != STATUS_OK ||
		    (rc = spanquery_metrics_recv(c, rollup, &m, err)) !=
			    STATUS_OK) {
			spanquery_metrics_free(*out);
			*out = NULL;
			return rc;
		}
		if (*out == NULL || total_requests(m) > total_requests(*out)) {
			spanquery_metrics_free(*out);
			*out = m;
		} else {
			spanquery_metrics_free(m);
		}
		m = NULL;
	}
	return STATUS_OK;
}

/* The busiest routes of the item's services (itself, or a workload's
 * first RESOURCEQUERY_ROUTE_SERVICES). */
static int
detail_routes(struct pg_conn *c, const struct resourcequery_filter *f,
	      struct resourcequery_detail *d, struct pg_error *err)
{
	struct detail_priv *p = d->priv_;
	const struct resourcequery_names *svc =
		&d->item->seen[RESOURCEQUERY_SERVICES];
	int rc;

	for (size_t s = 0; s < svc->n && s < RESOURCEQUERY_ROUTE_SERVICES;
	     s++) {
		if ((rc = service_metrics(c, f, svc->v[s], &p->m[s], err)) !=
		    STATUS_OK)
			return rc;
		d->routes_rollup |= p->m[s]->rollup;
		for (size_t i = 0; i < p->m[s]->n; i++) {
			const struct spanquery_row *row = &p->m[s]->rows[i];
			size_t k = d->n_routes;

			/* insertion, busiest first, ties in order */
			while (k > 0 &&
			       d->routes[k - 1].row->requests < row->requests) {
				if (k < RESOURCEQUERY_TOP_ROUTES)
					d->routes[k] = d->routes[k - 1];
				k--;
			}
			if (k >= RESOURCEQUERY_TOP_ROUTES)
				continue;
			d->routes[k].service = svc->v[s];
			d->routes[k].row = row;
			if (d->n_routes < RESOURCEQUERY_TOP_ROUTES)
				d->n_routes++;
		}
	}
	return STATUS_OK;
}

/* The span at the item's newest error (the rollups say when). */
static int
detail_error(struct pg_conn *c, const struct resourcequery_filter *f,
	     struct resourcequery_detail *d, struct pg_error *err)
{
	struct detail_priv *p = d->priv_;
	struct resourcequery_error *e = &d->last_error;
	char at[24];
	const char *v[6];
	int64_t http, grpc;
	int rc;

	if (!d->item->has_error)
		return STATUS_OK;
	snprintf(at, sizeof(at), "%lld", (long long)d->item->last_error_us);
	v[0] = at;
	v[1] = v[2] = NULL;
	v[3] = d->item->ns;
	v[4] = (size_t)f->type < 2 ? type_names[f->type] : "service";
	v[5] = d->item->name;
	if ((rc = pg_query(c, error_sql, 6, v, &p->error, err)) != STATUS_OK ||
	    PQntuples(p->error) == 0)
		return rc;
	e->found = true;
	e->trace_id = PQgetvalue(p->error, 0, 1);
	e->service = PQgetvalue(p->error, 0, 2);
	e->span = PQgetvalue(p->error, 0, 3);
	e->source = PQgetvalue(p->error, 0, 4);
	e->message =
		PQgetisnull(p->error, 0, 7) ? NULL : PQgetvalue(p->error, 0, 7);
	if (pg_text_i64(PQgetvalue(p->error, 0, 0), &e->at_us) != STATUS_OK ||
	    pg_text_i64(PQgetvalue(p->error, 0, 5), &http) != STATUS_OK ||
	    pg_text_i64(PQgetvalue(p->error, 0, 6), &grpc) != STATUS_OK)
		return pg_bad_row(err, "error row");
	e->http_status = (int)http;
	e->grpc_code = (int)grpc;
	return STATUS_OK;
}

int
resourcequery_detail(struct pg_conn *c, const struct resourcequery_filter *f,
		     struct resourcequery_detail **out, struct pg_error *err)
{
	struct resourcequery_detail *d = NULL;
	int rc;

	*out = NULL;
	if (f->name == NULL)
		return pg_error_set(err, STATUS_INVALID,
				    "a resource name is required");
	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->priv_ = calloc(1, sizeof(struct detail_priv))) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if ((rc = resourcequery_list(c, f, &d->list, err)) != STATUS_OK)
		goto out;
	if (d->list->n == 0) {
		rc = pg_error_set(err, STATUS_NOTFOUND,
				  "no spans of that resource in the range");
		goto out;
	}
	d->item = &d->list->items[0];
	for (size_t i = 1; i < d->list->n; i++) {
		const struct resourcequery_item *x = &d->list->items[i];

		if (x->in_requests + x->out_requests >
		    d->item->in_requests + d->item->out_requests)
			d->item = x;
	}
	if ((rc = detail_edges(d)) != STATUS_OK ||
	    (rc = detail_routes(c, f, d, err)) != STATUS_OK ||
	    (rc = detail_error(c, f, d, err)) != STATUS_OK)
		goto out;
	*out = d;
	d = NULL;
out:
	resourcequery_detail_free(d);
	return rc == STATUS_NOMEM ? pg_error_set(err, rc, "out of memory") : rc;
}

void
resourcequery_detail_free(struct resourcequery_detail *d)
{
	struct detail_priv *p;

	if (d == NULL)
		return;
	p = d->priv_;
	if (p != NULL) {
		PQclear(p->error);
		for (size_t i = 0; i < RESOURCEQUERY_ROUTE_SERVICES; i++)
			spanquery_metrics_free(p->m[i]);
		free(p);
	}
	resourcequery_list_free(d->list);
	free(d->in);
	free(d->out);
	free(d);
}

/* ---- the rollup ---------------------------------------------------------- */

int
resourcequery_rollup_minutes(struct pg_conn *c, const char *minutes,
			     struct pg_error *err)
{
	const char *one[] = {minutes};
	int rc;

	if ((rc = pg_query(c, minutes_clear_sql, 1, one, NULL, err)) !=
	    STATUS_OK)
		return rc;
	return pg_query(c, minutes_sql, 1, one, NULL, err);
}

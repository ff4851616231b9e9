/*
 * promcalls.c - a service's call metrics from Prometheus histograms, as
 * query_metrics' [Prometheus] source: the PromQL, the asking, and the rows.
 * See promcalls.h.
 */
#include "telemetry/promcalls.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prom/promql.h"

/* The labels of each protocol's series (OpenTelemetry semantic
 * conventions as Beyla/OBI and the Collector export them).  Two names for
 * a key part: the newer first, the older when the newer is absent. */
static const struct {
	const char *k1[2], *k2[2]; /* NULL: none */
	const char *status;	   /* status label (NULL: none) */
	const char *error;	   /* matcher text of an error, appended */
} protos[SPANQUERY_PROTOCOLS] = {
	[SPANQUERY_HTTP] = {{"http_route", NULL},
			    {"http_request_method", NULL},
			    "http_response_status_code",
			    "http_response_status_code=~\"5..\""},
	/* rpc_method alone is "/pkg.Svc/Method" in Beyla, "Method" beside
	 * rpc_service in the semantic conventions: k1 joins them */
	[SPANQUERY_GRPC] = {{"rpc_service", NULL},
			    {"rpc_method", NULL},
			    "rpc_grpc_status_code",
			    "rpc_grpc_status_code!~\"0|\""},
	[SPANQUERY_SQL] = {{"db_operation_name", "db_operation"},
			   {"db_collection_name", "db_sql_table"},
			   NULL,
			   "error_type!=\"\""},
};

struct priv {
	char **strings; /* every k1 / k2 the rows point to */
	size_t nstrings, cap;
};

struct promcalls_result *
promcalls_result_new(void)
{
	struct promcalls_result *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->priv_ = calloc(1, sizeof(struct priv));
	if (r->priv_ == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

void
promcalls_free(struct promcalls_result *r)
{
	struct priv *pv;

	if (r == NULL)
		return;
	pv = r->priv_;
	for (size_t i = 0; pv != NULL && i < pv->nstrings; i++)
		free(pv->strings[i]);
	if (pv != NULL)
		free(pv->strings);
	free(pv);
	free(r->rows);
	free(r);
}

/* ---- the queries ------------------------------------------------------- */

static void
by_clause(struct buf *b, int p, bool le)
{
	bool first = true;

	buf_puts(b, "sum by (");
	if (le) {
		buf_puts(b, "le");
		first = false;
	}
	for (int part = 0; part < 2; part++)
		for (int i = 0; i < 2; i++) {
			const char *l =
				part == 0 ? protos[p].k1[i] : protos[p].k2[i];

			if (l == NULL)
				continue;
			buf_printf(b, "%s%s", first ? "" : ", ", l);
			first = false;
		}
	buf_puts(b, ") ");
}

/* STATUS_INVALID when the service's value cannot be quoted, else b's
 * status. */
static int
selector(struct buf *b, const struct promcalls_spec *spec, int p,
	 const struct spanquery_filter *f, const char *suffix, bool errors)
{
	int rc;

	buf_printf(b, "%s%s{%s=", spec->metric[p], suffix, spec->service_label);
	rc = promql_quote(b, spec->service_value);
	if (rc != STATUS_OK)
		return rc;
	/* status filters as matchers: the row's numbers then count only
	 * those calls (the key filters drop whole rows, afterwards) */
	if (p == SPANQUERY_HTTP &&
	    (f->http_status_min != 0 || f->http_status_max != 0))
		buf_printf(b, ",%s=~\"%d..\"", protos[p].status,
			   f->http_status_min / 100);
	if (p == SPANQUERY_GRPC && f->grpc_status >= 0)
		buf_printf(b, ",%s=\"%d\"", protos[p].status, f->grpc_status);
	if (errors)
		buf_printf(b, ",%s", protos[p].error);
	return buf_puts(b, "}");
}

/* sum by (keys[, le]) (increase(<metric>_bucket{...}[window])), or with
 * errors the failed calls' _count. */
static int
increase_query(struct buf *b, const struct promcalls_spec *spec, int p,
	       const struct spanquery_filter *f, const char *window,
	       bool errors)
{
	int rc;

	by_clause(b, p, !errors);
	buf_puts(b, "(increase(");
	rc = selector(b, spec, p, f, errors ? "_count" : "_bucket", errors);
	if (rc != STATUS_OK)
		return rc;
	return buf_printf(b, "[%s]))", window);
}

int
promcalls_build(const struct promcalls_spec *spec, int p,
		const struct spanquery_filter *f, int64_t range_ms,
		struct buf *buckets, struct buf *errors, char *err,
		size_t errlen)
{
	char window[48];
	int rc;

	if (p < 0 || p >= SPANQUERY_PROTOCOLS || spec->metric[p] == NULL ||
	    !promql_metric_name_ok(spec->metric[p]) ||
	    !promql_label_name_ok(spec->service_label) ||
	    spec->service_value == NULL || range_ms < 1000) {
		snprintf(err, errlen,
			 "the Prometheus series of this service are not "
			 "configured right: check service_label and the "
			 "*_metric keys of its instance, and that the range "
			 "is at least a second");
		return STATUS_INVALID;
	}
	if (p == SPANQUERY_HTTP &&
	    (f->http_status_min != 0 || f->http_status_max != 0) &&
	    (f->http_status_min % 100 != 0 || f->http_status_min < 100 ||
	     f->http_status_min > 900 ||
	     f->http_status_max != f->http_status_min + 99)) {
		snprintf(err, errlen,
			 "only whole status classes (2xx, 5xx) can be asked "
			 "of Prometheus");
		return STATUS_INVALID;
	}
	promql_duration_format(range_ms, window, sizeof(window));
	rc = increase_query(buckets, spec, p, f, window, false);
	if (rc == STATUS_OK)
		rc = increase_query(errors, spec, p, f, window, true);
	if (rc == STATUS_INVALID)
		snprintf(err, errlen,
			 "the service's label value cannot be put in PromQL "
			 "(not UTF-8)");
	return rc;
}

/* ---- the rows ---------------------------------------------------------- */

static const char *
label(const struct grafana_series *s, const char *name)
{
	for (size_t i = 0; name != NULL && i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return "";
}

static const char *
label_either(const struct grafana_series *s, const char *const names[2])
{
	const char *v = label(s, names[0]);

	return v[0] != '\0' || names[1] == NULL ? v : label(s, names[1]);
}

/* The key of a series as the spans spell it, into k1 / k2 (cap bytes). */
static void
series_key(const struct grafana_series *s, int p, char *k1, char *k2,
	   size_t cap)
{
	const char *a = label_either(s, protos[p].k1);
	const char *b = label_either(s, protos[p].k2);

	switch (p) {
	case SPANQUERY_HTTP:
		snprintf(k1, cap, "%s", a);
		snprintf(k2, cap, "%s", b);
		for (char *c = k2; *c; c++)
			*c = (char)toupper((unsigned char)*c);
		break;
	case SPANQUERY_GRPC:
		while (*b == '/')
			b++;
		if (a[0] != '\0')
			snprintf(k1, cap, "%s/%s", a, b);
		else
			snprintf(k1, cap, "%s", b);
		k2[0] = '\0';
		break;
	default:
		snprintf(k1, cap, "%s", a);
		for (char *c = k1; *c; c++)
			*c = (char)toupper((unsigned char)*c);
		snprintf(k2, cap, "%s", b);
		break;
	}
}

static bool
key_wanted(int p, const char *k1, const char *k2,
	   const struct spanquery_filter *f)
{
	switch (p) {
	case SPANQUERY_HTTP:
		return (f->http_route == NULL ||
			strcmp(k1, f->http_route) == 0) &&
		       (f->http_method == NULL ||
			strcasecmp(k2, f->http_method) == 0);
	case SPANQUERY_GRPC: {
		const char *m = f->grpc_method;

		while (m != NULL && *m == '/')
			m++;
		return m == NULL || strcmp(k1, m) == 0;
	}
	default:
		return (f->sql_operation == NULL ||
			strcasecmp(k1, f->sql_operation) == 0) &&
		       (f->table_name == NULL ||
			strcmp(k2, f->table_name) == 0);
	}
}

/* The instant value of a series: its last finite point, or NaN. */
static double
value_of(const struct grafana_series *s)
{
	for (size_t i = s->npoints; i > 0; i--)
		if (isfinite(s->points[i - 1].v))
			return s->points[i - 1].v;
	return NAN;
}

/* One (key, bucket) of the bucket answer. */
struct entry {
	char *k1, *k2;
	double le, count;
};

static int
cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->k1, y->k1);

	if (c == 0)
		c = strcmp(x->k2, y->k2);
	if (c == 0)
		c = (x->le > y->le) - (x->le < y->le);
	return c;
}

static int
keep_string(struct priv *pv, char *s)
{
	if (pv->nstrings == pv->cap) {
		size_t cap = pv->cap ? 2 * pv->cap : 64;
		char **grown = realloc(pv->strings, cap * sizeof(*grown));

		if (grown == NULL)
			return STATUS_NOMEM;
		pv->strings = grown;
		pv->cap = cap;
	}
	pv->strings[pv->nstrings++] = s;
	return STATUS_OK;
}

static int
cmp_row(const void *a, const void *b)
{
	const struct promcalls_row *x = a, *y = b;

	if (x->protocol != y->protocol)
		return x->protocol < y->protocol ? -1 : 1;
	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	return strcmp(x->k1, y->k1) != 0 ? strcmp(x->k1, y->k1)
					 : strcmp(x->k2, y->k2);
}

int
promcalls_add(struct promcalls_result *res, int p,
	      const struct grafana_matrix *buckets,
	      const struct grafana_matrix *errors,
	      const struct spanquery_filter *f)
{
	struct priv *pv = res->priv_;
	struct entry *e = NULL;
	static const double quantiles[3] = {0.5, 0.95, 0.99};
	struct promql_bucket *hb = NULL, *tmp = NULL;
	size_t ne = 0, nkeys = 0, first = res->n;
	char k1[1024], k2[1024];
	int rc = STATUS_NOMEM;

	if (buckets == NULL || buckets->nseries == 0)
		return STATUS_OK;
	e = calloc(buckets->nseries, sizeof(*e));
	hb = calloc(buckets->nseries, sizeof(*hb));
	tmp = calloc(buckets->nseries, sizeof(*tmp));
	if (e == NULL || hb == NULL || tmp == NULL)
		goto out;
	for (size_t i = 0; i < buckets->nseries; i++) {
		const struct grafana_series *s = &buckets->series[i];
		char *end;
		double le = strtod(label(s, "le"), &end);

		if (*label(s, "le") == '\0' || *end != '\0' || isnan(le) ||
		    !isfinite(value_of(s)))
			continue;
		series_key(s, p, k1, k2, sizeof(k1));
		if (!key_wanted(p, k1, k2, f))
			continue;
		e[ne].k1 = strdup(k1);
		e[ne].k2 = strdup(k2);
		e[ne].le = le;
		e[ne].count = value_of(s);
		if (e[ne].k1 == NULL || e[ne].k2 == NULL) {
			free(e[ne].k1);
			free(e[ne].k2);
			goto out;
		}
		ne++;
	}
	if (ne > 1)
		qsort(e, ne, sizeof(*e), cmp_entry);
	for (size_t i = 0; i < ne;) {
		size_t j = i, nb = 0;
		struct promcalls_row *r, *grown;
		double total = 0, q[3];

		while (j < ne && strcmp(e[j].k1, e[i].k1) == 0 &&
		       strcmp(e[j].k2, e[i].k2) == 0) {
			hb[nb].le = e[j].le;
			hb[nb++].count = e[j].count;
			if (isinf(e[j].le) && e[j].le > 0)
				total += e[j].count;
			j++;
		}
		if (total < 0.5 || nkeys >= PROMCALLS_MAX_KEYS) {
			res->truncated |= total >= 0.5;
			i = j;
			continue;
		}
		/* each call sorts and coalesces its array: a fresh copy each */
		for (int x = 0; x < 3; x++) {
			memcpy(tmp, hb, nb * sizeof(*hb));
			q[x] = promql_histogram_quantile(quantiles[x], tmp, nb);
		}
		if (!isfinite(q[0]) || !isfinite(q[1]) || !isfinite(q[2])) {
			/* +Inf alone: calls, but nothing of their latency */
			res->unbucketed++;
			i = j;
			continue;
		}
		grown = realloc(res->rows, (res->n + 1) * sizeof(*grown));
		if (grown == NULL)
			goto out;
		res->rows = grown;
		r = &res->rows[res->n];
		memset(r, 0, sizeof(*r));
		r->protocol = p;
		r->requests = total;
		r->p50_ms = 1000 * q[0];
		r->p95_ms = 1000 * q[1];
		r->p99_ms = 1000 * q[2];
		/* the strings move to priv: e[] forgets them */
		if (keep_string(pv, e[i].k1) != STATUS_OK)
			goto out;
		r->k1 = e[i].k1;
		e[i].k1 = NULL;
		if (keep_string(pv, e[i].k2) != STATUS_OK)
			goto out;
		r->k2 = e[i].k2;
		e[i].k2 = NULL;
		res->n++;
		nkeys++;
		i = j;
	}
	for (size_t i = 0; errors != NULL && i < errors->nseries; i++) {
		const struct grafana_series *s = &errors->series[i];
		double v = value_of(s);

		if (!isfinite(v))
			continue;
		series_key(s, p, k1, k2, sizeof(k1));
		for (size_t r = first; r < res->n; r++)
			if (strcmp(res->rows[r].k1, k1) == 0 &&
			    strcmp(res->rows[r].k2, k2) == 0)
				res->rows[r].errors +=
					fmin(v, res->rows[r].requests);
	}
	for (size_t r = first; r < res->n; r++)
		if (res->rows[r].errors > res->rows[r].requests)
			res->rows[r].errors = res->rows[r].requests;
	if (res->n > 1)
		qsort(res->rows, res->n, sizeof(*res->rows), cmp_row);
	rc = STATUS_OK;
out:
	for (size_t i = 0; e != NULL && i < ne; i++) {
		free(e[i].k1);
		free(e[i].k2);
	}
	free(e);
	free(hb);
	free(tmp);
	return rc;
}

/* ---- asking ------------------------------------------------------------ */

int
promcalls_query(struct grafana *g, const struct grafana_opts *o,
		const struct promcalls_spec *spec,
		const struct spanquery_filter *f, struct promcalls_result **out,
		struct grafana_error *err)
{
	struct grafana_names *names = NULL;
	struct promcalls_result *res = NULL;
	struct buf qb, qe;
	int rc;

	*out = NULL;
	buf_init(&qb, 16384);
	buf_init(&qe, 16384);
	res = promcalls_result_new();
	if (res == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	rc = grafana_metric_names(g, o, -1, &names, err);
	if (rc != STATUS_OK)
		goto out;
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		struct grafana_matrix *mb = NULL, *me = NULL;
		char bucket[PROMQL_MAX_NAME + 16];

		if (f->protocols != 0 && !(f->protocols & (1u << p)))
			continue;
		snprintf(bucket, sizeof(bucket), "%s_bucket",
			 spec->metric[p] ? spec->metric[p] : "");
		if (!grafana_names_has(names, bucket)) {
			res->missing |= 1u << p;
			continue;
		}
		buf_reset(&qb);
		buf_reset(&qe);
		rc = promcalls_build(spec, p, f, f->to_ms - f->from_ms, &qb,
				     &qe, err->client, sizeof(err->client));
		if (rc != STATUS_OK) {
			err->kind = GRAFANA_FAIL_QUERY;
			goto out;
		}
		/* an instant value at the end: a range of one point */
		rc = grafana_query_range(g, o, qb.data, f->to_ms, f->to_ms,
					 60000, PROMQL_MAX_POINTS, &mb, NULL,
					 err);
		if (rc == STATUS_OK)
			rc = grafana_query_range(
				g, o, qe.data, f->to_ms, f->to_ms, 60000,
				PROMQL_MAX_POINTS, &me, NULL, err);
		if (rc == STATUS_OK)
			rc = promcalls_add(res, p, mb, me, f);
		grafana_matrix_free(mb);
		grafana_matrix_free(me);
		if (rc == STATUS_LIMIT)
			snprintf(err->client, sizeof(err->client),
				 "more than %d series in the %s histogram of "
				 "this service: narrow with filters",
				 PROMQL_MAX_POINTS, spanquery_protocol_name(p));
		if (rc != STATUS_OK)
			goto out;
	}
	*out = res;
	res = NULL;
out:
	grafana_names_release(names);
	promcalls_free(res);
	buf_free(&qb);
	buf_free(&qe);
	return rc;
}

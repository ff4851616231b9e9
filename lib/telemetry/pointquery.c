/*
 * pointquery.c - metric point aggregation and OTLP span search for the
 * plumbing tools (see pointquery.h).  SQL text holds placeholders only;
 * every value is a bound parameter, and PostgreSQL plans each statement
 * with the values known, so "$n IS NULL OR ..." filters cost nothing.
 */
#include "telemetry/pointquery.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/buf.h"

/* The longest statement built here is about 2 KB; this bounds a mistake. */
#define SQL_MAX (16 * 1024)
/* name, service, attributes, kind, lo, from, to, step, limit + group_by */
#define PARAMS_MAX (9 + POINTQUERY_MAX_GROUP_BY)
/* Histograms of one step and group with distinct bucket bounds that are
 * merged at most (more are left out of its percentiles). */
#define HISTS_MAX 64

/* Times are bound as Unix milliseconds and read with
 * to_timestamp($n::float8 / 1000): immutable, so the planner folds it and
 * prunes partitions (exact to the microsecond for any date we store). */

static const char *const agg_names[] = {
	"auto", "avg",	"sum", "min", "max", "count",
	"last", "rate", "p50", "p95", "p99",
};
#define NAGG (sizeof(agg_names) / sizeof(agg_names[0]))

static const int64_t nice_steps[] = {
	10,   15,   30,	   60,	  120,	 300,	600,	900,	1800,
	3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
};
#define NNICE (sizeof(nice_steps) / sizeof(nice_steps[0]))

static int
nomem(struct pg_error *err)
{
	return pg_error_set(err, STATUS_NOMEM, "out of memory");
}

const char *
pointquery_agg_name(enum pointquery_agg a)
{
	return (size_t)a < NAGG ? agg_names[a] : NULL;
}

int
pointquery_agg_parse(const char *name)
{
	for (size_t i = 0; name != NULL && i < NAGG; i++)
		if (strcmp(name, agg_names[i]) == 0)
			return (int)i;
	return -1;
}

/* Numbers PostgreSQL prints: integers, decimals, "NaN", "Infinity". */
static int
parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno == ERANGE && fabs(*out) > 1)
		return STATUS_INVALID;
	return end != s && *end == '\0' ? STATUS_OK : STATUS_INVALID;
}

/* ---- steps ------------------------------------------------------------- */

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t
pointquery_step_count(int64_t from_ms, int64_t to_ms, int64_t step_s)
{
	int64_t ms = step_s * 1000;

	if (step_s <= 0 || to_ms <= from_ms)
		return 0;
	return floor_div(to_ms - 1, ms) - floor_div(from_ms, ms) + 1;
}

void
pointquery_step_format(int64_t s, char *buf, size_t cap)
{
	if (s % 86400 == 0)
		snprintf(buf, cap, "%" PRId64 "d", s / 86400);
	else if (s % 3600 == 0)
		snprintf(buf, cap, "%" PRId64 "h", s / 3600);
	else if (s % 60 == 0)
		snprintf(buf, cap, "%" PRId64 "m", s / 60);
	else
		snprintf(buf, cap, "%" PRId64 "s", s);
}

int64_t
pointquery_nice_step(int64_t from_ms, int64_t to_ms, int64_t max)
{
	for (size_t i = 0; i < NNICE; i++)
		if (pointquery_step_count(from_ms, to_ms, nice_steps[i]) <= max)
			return nice_steps[i];
	return 0;
}

int
pointquery_step_bound(int64_t from_ms, int64_t to_ms, const char *step,
		      int64_t step_s, int64_t max, char *err, size_t errlen)
{
	int64_t count = pointquery_step_count(from_ms, to_ms, step_s);
	char hint[32];

	if (count <= max)
		return STATUS_OK;
	pointquery_step_format(pointquery_nice_step(from_ms, to_ms, max), hint,
			       sizeof(hint));
	snprintf(err, errlen,
		 "step \"%.40s\" gives %" PRId64 " points per series over "
		 "this time range, more than %" PRId64 ": use a step of at "
		 "least \"%s\" or a shorter time_range",
		 step, count, max, hint);
	return STATUS_INVALID;
}

int
pointquery_step(int64_t from_ms, int64_t to_ms, const char *step,
		int64_t *step_s, char *err, size_t errlen)
{
	int64_t n, mult, s;
	char *end;

	*step_s = 0;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (to_ms <= from_ms) {
		snprintf(err, errlen, "time_range is empty: give a range");
		return STATUS_INVALID;
	}
	if (step == NULL || step[0] == '\0') {
		s = pointquery_nice_step(from_ms, to_ms,
					 POINTQUERY_DEFAULT_STEPS);
		if (s == 0)
			s = pointquery_nice_step(from_ms, to_ms,
						 POINTQUERY_MAX_STEPS);
		if (s == 0) {
			snprintf(err, errlen,
				 "time_range is too long for any step: "
				 "use a shorter time_range");
			return STATUS_INVALID;
		}
		*step_s = s;
		return STATUS_OK;
	}
	errno = 0;
	n = strtoll(step, &end, 10);
	switch (*end) {
	case 's': mult = 1; break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	case 'd': mult = 86400; break;
	default: mult = 0; break;
	}
	if (errno != 0 || end == step || step[0] < '0' || step[0] > '9' ||
	    mult == 0 || end[1] != '\0' || n <= 0 || n > 1000000000LL) {
		snprintf(err, errlen,
			 "step \"%.40s\" is not understood: use a number and "
			 "a unit s, m, h or d, like \"30s\", \"1m\", \"5m\", "
			 "\"1h\"",
			 step);
		return STATUS_INVALID;
	}
	s = n * mult;
	if (s < POINTQUERY_MIN_STEP_S) {
		snprintf(err, errlen,
			 "step \"%.40s\" is below the minimum of %ds: use "
			 "\"%ds\" or more",
			 step, POINTQUERY_MIN_STEP_S, POINTQUERY_MIN_STEP_S);
		return STATUS_INVALID;
	}
	if (pointquery_step_bound(from_ms, to_ms, step, s, POINTQUERY_MAX_STEPS,
				  err, errlen) != STATUS_OK)
		return STATUS_INVALID;
	*step_s = s;
	return STATUS_OK;
}

/* ---- quantiles --------------------------------------------------------- */

/* One histogram's buckets as [edge[k], edge[k + 1]] with count[k]. */
struct hedges {
	const double *count;
	double *edge; /* nb + 1 */
	size_t nb;
};

/* Finite, strictly increasing bounds; a histogram without any needs
 * both min and max to say anything. */
static bool
bounds_ok(const struct pointquery_hist *h)
{
	if (h->n_bounds == 0 && !(isfinite(h->min) && isfinite(h->max)))
		return false;
	for (size_t k = 0; k < h->n_bounds; k++)
		if (!isfinite(h->bounds[k]) ||
		    (k > 0 && h->bounds[k] <= h->bounds[k - 1]))
			return false;
	return true;
}

static double
clamp_count(double c)
{
	return isfinite(c) && c > 0 ? c : 0;
}

/* Observations at or below x (left: strictly below x for the buckets of
 * zero width at x, whose mass is a jump of the distribution there). */
static double
cdf(const struct hedges *e, size_t n, double x, bool left)
{
	double f = 0;

	for (size_t j = 0; j < n; j++) {
		for (size_t k = 0; k < e[j].nb; k++) {
			double lo = e[j].edge[k], hi = e[j].edge[k + 1];
			double c = clamp_count(e[j].count[k]);

			if (hi <= lo) {
				if (left ? x > lo : x >= lo)
					f += c;
			} else if (x >= hi) {
				f += c;
			} else if (x > lo) {
				f += c * (x - lo) / (hi - lo);
			}
		}
	}
	return f;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
pointquery_quantile(const struct pointquery_hist *h, size_t n, double q,
		    double *out)
{
	struct hedges *e = NULL;
	double *knots = NULL, total = 0, gmin = NAN, gmax = NAN, r, v;
	size_t ne = 0, nk = 0, nknots = 0, lo, hi;
	int rc = STATUS_NOMEM;

	*out = NAN;
	if (n == 0 || !(q > 0 && q < 1))
		return STATUS_OK;
	e = calloc(n, sizeof(*e));
	if (e == NULL)
		goto out;
	for (size_t j = 0; j < n; j++) {
		size_t m = h[j].n_bounds;

		if (!bounds_ok(&h[j]))
			continue;
		if (isfinite(h[j].min) && !(h[j].min >= gmin))
			gmin = h[j].min;
		if (isfinite(h[j].max) && !(h[j].max <= gmax))
			gmax = h[j].max;
		nk += m + 2;
	}
	knots = malloc((nk > 0 ? nk : 1) * sizeof(*knots));
	if (knots == NULL)
		goto out;
	for (size_t j = 0; j < n; j++) {
		const struct pointquery_hist *hj = &h[j];
		size_t m = hj->n_bounds;
		struct hedges *ej = &e[ne];

		if (!bounds_ok(hj))
			continue;
		ej->edge = malloc((m + 2) * sizeof(double));
		if (ej->edge == NULL)
			goto out;
		ne++;
		ej->count = hj->counts;
		ej->nb = m + 1;
		if (m == 0) {
			ej->edge[0] = hj->min;
			ej->edge[1] = hj->max >= hj->min ? hj->max : hj->min;
		} else {
			double b0 = hj->bounds[0], bl = hj->bounds[m - 1];

			if (isfinite(hj->min) && hj->min <= b0)
				ej->edge[0] = hj->min;
			else
				ej->edge[0] = b0 > 0 ? 0 : b0;
			memcpy(&ej->edge[1], hj->bounds, m * sizeof(double));
			ej->edge[m + 1] = isfinite(hj->max) && hj->max >= bl
						  ? hj->max
						  : bl;
		}
		for (size_t k = 0; k <= m + 1; k++)
			knots[nknots++] = ej->edge[k];
		for (size_t k = 0; k <= m; k++)
			total += clamp_count(hj->counts[k]);
	}
	rc = STATUS_OK;
	if (total <= 0 || nknots == 0)
		goto out;
	qsort(knots, nknots, sizeof(*knots), cmp_double);
	r = q * total;
	/* the first knot where the distribution reaches r */
	lo = 0;
	hi = nknots - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cdf(e, ne, knots[mid], false) >= r)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == 0) {
		v = knots[0];
	} else {
		double a = knots[lo - 1], b = knots[lo];
		double fa = cdf(e, ne, a, false), fb = cdf(e, ne, b, true);

		/* between two knots every bucket is linear, so is the sum */
		if (r > fb || fb <= fa)
			v = b;
		else
			v = a + (b - a) * (r - fa) / (fb - fa);
	}
	if (isfinite(gmin) && v < gmin)
		v = gmin;
	if (isfinite(gmax) && v > gmax)
		v = gmax;
	*out = v;
out:
	for (size_t j = 0; e != NULL && j < ne; j++)
		free(e[j].edge);
	free(e);
	free(knots);
	return rc;
}

/* ---- metric points ----------------------------------------------------- */

enum plan {
	PLAN_SIMPLE,   /* GROUP BY over the points' own values */
	PLAN_INCREASE, /* increases between points of a series */
	PLAN_QUANTILE, /* bucket count increases, percentiles in C */
};

struct metric_priv {
	PGresult *meta;
	PGresult *rows;
	const char **labels; /* n_series * n_group_by */
	int64_t *t_ms;
	double *v;
};

struct params {
	const char *v[PARAMS_MAX];
	int n;
};

static int
param(struct params *p, const char *v)
{
	p->v[p->n] = v;
	return ++p->n;
}

/* The newest point of the name: kind, unit, temporality, monotonic, time. */
static const char meta_sql[] =
	"SELECT kind, coalesce(unit, ''), coalesce(temporality, 0), "
	"coalesce(is_monotonic, false), "
	"floor(extract(epoch FROM time) * 1000)::bigint "
	"FROM metric_points WHERE name = $1 "
	"AND ($2::text IS NULL OR service_name = $2) "
	"ORDER BY time DESC LIMIT 1";

static bool
is_quantile(enum pointquery_agg a)
{
	return a == POINTQUERY_AGG_P50 || a == POINTQUERY_AGG_P95 ||
	       a == POINTQUERY_AGG_P99;
}

/* Resolves AUTO and checks agg against the kind; the plan it needs. */
static int
choose_plan(const char *name, const char *kind, bool monotonic,
	    enum pointquery_agg *agg, enum plan *plan, struct pg_error *err)
{
	enum pointquery_agg a = *agg;

	if (strcmp(kind, "gauge") == 0) {
		if (a == POINTQUERY_AGG_AUTO)
			a = POINTQUERY_AGG_AVG;
		if (a == POINTQUERY_AGG_RATE || is_quantile(a))
			return pg_error_set(
				err, STATUS_UNSUPPORTED,
				"aggregation \"%s\" does not apply to "
				"\"%.100s\", a gauge: use avg, sum, min, "
				"max, count or last",
				agg_names[a], name);
		*plan = PLAN_SIMPLE;
	} else if (strcmp(kind, "sum") == 0) {
		if (a == POINTQUERY_AGG_AUTO)
			a = monotonic ? POINTQUERY_AGG_RATE
				      : POINTQUERY_AGG_LAST;
		if (is_quantile(a))
			return pg_error_set(
				err, STATUS_UNSUPPORTED,
				"aggregation \"%s\" needs a histogram; "
				"\"%.100s\" is a sum (counter): use rate, "
				"sum, avg, min, max, count or last",
				agg_names[a], name);
		*plan = a == POINTQUERY_AGG_SUM || a == POINTQUERY_AGG_RATE
				? PLAN_INCREASE
				: PLAN_SIMPLE;
	} else if (strcmp(kind, "histogram") == 0) {
		if (a == POINTQUERY_AGG_AUTO)
			a = POINTQUERY_AGG_P95;
		if (a == POINTQUERY_AGG_LAST)
			return pg_error_set(
				err, STATUS_UNSUPPORTED,
				"aggregation \"last\" does not apply to "
				"\"%.100s\", a histogram: use p50, p95, "
				"p99, avg, count, sum, rate, min or max",
				name);
		*plan = is_quantile(a) ? PLAN_QUANTILE
			: a == POINTQUERY_AGG_MIN || a == POINTQUERY_AGG_MAX
				? PLAN_SIMPLE
				: PLAN_INCREASE;
	} else {
		return pg_error_set(
			err, STATUS_IO,
			"the telemetry store returned an unknown metric "
			"kind");
	}
	*agg = a;
	return STATUS_OK;
}

/* ", l0, l1" style lists: the label columns (refs) or their definitions. */
static void
put_labels(struct buf *b, size_t n, int first_key, bool define)
{
	for (size_t i = 0; i < n; i++) {
		int k = first_key + (int)i;

		if (define)
			buf_printf(b,
				   "coalesce(attributes ->> $%d, "
				   "resource_attributes ->> $%d) AS l%zu, ",
				   k, k, i);
		else
			buf_printf(b, "l%zu, ", i);
	}
}

/* The points' filter: name, kind, [lo, to), service, attributes; then
 * the NaN of points flagged "no recorded value", or "". */
#define WHERE_FMT                                                              \
	" FROM metric_points WHERE name = $%d AND kind = $%d"                  \
	" AND time >= to_timestamp($%d::float8 / 1000)"                        \
	" AND time < to_timestamp($%d::float8 / 1000)"                         \
	" AND ($%d::text IS NULL OR service_name = $%d)"                       \
	" AND ($%d::jsonb IS NULL OR attributes @> $%d::jsonb)%s"

static void
put_where(struct buf *b, const int *pn, int lo, bool real_values)
{
	buf_printf(b, WHERE_FMT, pn[0], pn[3], lo, pn[6], pn[1], pn[1], pn[2],
		   pn[2], real_values ? " AND value <> 'NaN'::float8" : "");
}

#define INC_VALUE "CASE m WHEN 1 THEN value WHEN 2 THEN value - p_value END"
#define INC_COUNT "CASE m WHEN 1 THEN count WHEN 2 THEN count - p_count END"
#define INC_SUM	  "CASE m WHEN 1 THEN sum WHEN 2 THEN sum - p_sum END"

static const char *
simple_expr(enum pointquery_agg a, bool histogram)
{
	switch (a) {
	case POINTQUERY_AGG_AVG: return "avg(value)";
	case POINTQUERY_AGG_SUM: return "sum(value)";
	case POINTQUERY_AGG_MIN: return histogram ? "min(min)" : "min(value)";
	case POINTQUERY_AGG_MAX: return histogram ? "max(max)" : "max(value)";
	case POINTQUERY_AGG_COUNT: return "count(*)";
	case POINTQUERY_AGG_LAST:
		return "(array_agg(value ORDER BY time DESC))[1]";
	default: return NULL;
	}
}

static const char *
increase_expr(enum pointquery_agg a, bool histogram)
{
	if (!histogram)
		return "sum(" INC_VALUE ")";
	switch (a) {
	case POINTQUERY_AGG_SUM: return "sum(" INC_SUM ")";
	case POINTQUERY_AGG_AVG:
		return "sum(" INC_SUM ")::float8 / nullif(sum(" INC_COUNT
		       "), 0)::float8";
	default: return "sum(" INC_COUNT ")";
	}
}

/*
 * Builds the statement.  pn: parameter numbers of name, service,
 * attributes, kind, lo, from, to, step, limit, first group key.
 * Columns: l0..l(n-1), b (step index), then the value (simple, increase)
 * or bounds, counts, min, max (quantile).  Appends: the caller checks b.
 */
static void
build_sql(struct buf *b, enum plan plan, enum pointquery_agg agg,
	  bool histogram, size_t ng, const int *pn)
{
	bool real = !histogram;

	if (plan == PLAN_SIMPLE) {
		buf_puts(b, "SELECT ");
		put_labels(b, ng, 0, false);
		buf_printf(b,
			   "b, %s FROM (SELECT "
			   "floor(extract(epoch FROM time) / "
			   "$%d::int)::bigint AS b, ",
			   simple_expr(agg, histogram), pn[7]);
		put_labels(b, ng, pn[9], true);
		buf_puts(b, "time, value, min, max");
		put_where(b, pn, pn[5], real);
		buf_puts(b, ") p GROUP BY ");
		goto tail;
	}
	/* d: one point per series and time; p: with the previous point of
	 * its series; q: m = 1 when the point is its own increase (delta,
	 * a start, a reset), 2 when the increase is the difference to the
	 * previous point, NULL when unknown (no baseline) */
	buf_puts(b, "WITH d AS (SELECT DISTINCT ON (service_name, "
		    "attributes, resource_attributes, scope_name, time) "
		    "service_name, attributes, resource_attributes, "
		    "scope_name, time, start_time, temporality, "
		    "is_monotonic, value, count, sum, min, max, bounds, "
		    "bucket_counts");
	put_where(b, pn, pn[4], real);
	buf_puts(b, " ORDER BY service_name, attributes, "
		    "resource_attributes, scope_name, time), "
		    "p AS (SELECT d.*, lag(time) OVER w AS p_time, "
		    "lag(start_time) OVER w AS p_start, "
		    "lag(value) OVER w AS p_value, "
		    "lag(count) OVER w AS p_count, "
		    "lag(sum) OVER w AS p_sum, "
		    "lag(bounds) OVER w AS p_bounds, "
		    "lag(bucket_counts) OVER w AS p_counts FROM d "
		    "WINDOW w AS (PARTITION BY service_name, attributes, "
		    "resource_attributes, scope_name ORDER BY time)), "
		    "q AS (SELECT ");
	put_labels(b, ng, pn[9], true);
	buf_printf(b,
		   "floor(extract(epoch FROM time) / $%d::int)::bigint "
		   "AS b, p.*, CASE WHEN temporality = 1 THEN 1 "
		   "WHEN p_time IS NULL THEN CASE WHEN start_time >= "
		   "to_timestamp($%d::float8 / 1000) THEN 1 END "
		   "WHEN start_time <> p_start THEN 1 "
		   "WHEN %s THEN 1 ELSE 2 END AS m "
		   "FROM p WHERE time >= to_timestamp($%d::float8 / "
		   "1000)) ",
		   pn[7], pn[4],
		   histogram ? "count < p_count OR bounds IS DISTINCT "
			       "FROM p_bounds"
			     : "is_monotonic AND value < p_value",
		   pn[5]);
	if (plan == PLAN_INCREASE) {
		buf_puts(b, "SELECT ");
		put_labels(b, ng, 0, false);
		buf_printf(b, "b, %s FROM q GROUP BY ",
			   increase_expr(agg, histogram));
		goto tail;
	}
	buf_puts(b, ", e AS (SELECT ");
	put_labels(b, ng, 0, false);
	buf_puts(b, "b, q.bounds, u.i, sum(u.c) AS c, min(q.min) AS mn, "
		    "max(q.max) AS mx FROM q CROSS JOIN LATERAL "
		    "unnest(CASE q.m WHEN 1 THEN q.bucket_counts "
		    "WHEN 2 THEN ARRAY(SELECT x.a - x.z FROM "
		    "unnest(q.bucket_counts, q.p_counts) WITH ORDINALITY "
		    "AS x(a, z, k) ORDER BY x.k) END) WITH ORDINALITY "
		    "AS u(c, i) GROUP BY ");
	put_labels(b, ng, 0, false);
	buf_puts(b, "b, q.bounds, u.i) SELECT ");
	put_labels(b, ng, 0, false);
	buf_puts(b, "b, coalesce(bounds::text, '{}'), "
		    "array_agg(c ORDER BY i)::text, min(mn), "
		    "max(mx) FROM e GROUP BY ");
	put_labels(b, ng, 0, false);
	buf_puts(b, "b, bounds ORDER BY ");
	put_labels(b, ng, 0, false);
	buf_printf(b, "b LIMIT $%d", pn[8]);
	return;
tail:
	put_labels(b, ng, 0, false);
	buf_puts(b, "b ORDER BY ");
	put_labels(b, ng, 0, false);
	buf_printf(b, "b LIMIT $%d", pn[8]);
}

/* Whether row i has the same labels as row j (NULL equals NULL). */
static bool
same_labels(const PGresult *res, int i, int j, size_t ng)
{
	for (size_t k = 0; k < ng; k++) {
		bool ni = PQgetisnull(res, i, (int)k),
		     nj = PQgetisnull(res, j, (int)k);

		if (ni != nj ||
		    (!ni && strcmp(PQgetvalue(res, i, (int)k),
				   PQgetvalue(res, j, (int)k)) != 0))
			return false;
	}
	return true;
}

/* Parses "{1,2.5,NULL}" into a new array (NULL items become 0). */
static int
parse_array(const char *s, double **out, size_t *n)
{
	size_t cap = 1, k = 0;
	const char *p;
	double *v;

	*out = NULL;
	*n = 0;
	if (s[0] != '{')
		return STATUS_INVALID;
	for (p = s; *p != '\0'; p++)
		if (*p == ',')
			cap++;
	v = malloc(cap * sizeof(*v));
	if (v == NULL)
		return STATUS_NOMEM;
	p = s + 1;
	if (*p == '}' && p[1] == '\0') {
		*out = v;
		return STATUS_OK;
	}
	for (;;) {
		char *end;

		if (strncmp(p, "NULL", 4) == 0) {
			v[k] = 0;
			end = (char *)p + 4;
		} else {
			v[k] = strtod(p, &end);
			if (end == p) {
				free(v);
				return STATUS_INVALID;
			}
		}
		k++;
		if (*end == '}' && end[1] == '\0')
			break;
		if (*end != ',' || k == cap) {
			free(v);
			return STATUS_INVALID;
		}
		p = end + 1;
	}
	*out = v;
	*n = k;
	return STATUS_OK;
}

/* Seconds of step index b inside [from, to): a rate's denominator. */
static double
covered_s(int64_t b, int64_t step_s, int64_t from_ms, int64_t to_ms)
{
	int64_t lo = b * step_s * 1000, hi = lo + step_s * 1000;

	if (lo < from_ms)
		lo = from_ms;
	if (hi > to_ms)
		hi = to_ms;
	return hi > lo ? (double)(hi - lo) / 1000.0 : 0;
}

/* Percentile of the rows [i, j) of res, one step of one group. */
static int
cell_quantile(const PGresult *res, int i, int j, size_t ng, double q, double *v,
	      struct pg_error *err)
{
	struct pointquery_hist h[HISTS_MAX];
	double *bounds[HISTS_MAX] = {0}, *counts[HISTS_MAX] = {0};
	size_t nh = 0;
	int rc = STATUS_OK, c0 = (int)ng + 1;

	for (int r = i; r < j && nh < HISTS_MAX; r++) {
		size_t nb, nc;
		double mn = NAN, mx = NAN;

		rc = parse_array(PQgetvalue(res, r, c0), &bounds[nh], &nb);
		if (rc == STATUS_OK)
			rc = parse_array(PQgetvalue(res, r, c0 + 1),
					 &counts[nh], &nc);
		if (rc == STATUS_OK && !PQgetisnull(res, r, c0 + 2))
			rc = parse_double(PQgetvalue(res, r, c0 + 2), &mn);
		if (rc == STATUS_OK && !PQgetisnull(res, r, c0 + 3))
			rc = parse_double(PQgetvalue(res, r, c0 + 3), &mx);
		if (rc != STATUS_OK) {
			nh++;
			break;
		}
		h[nh].bounds = bounds[nh];
		h[nh].counts = counts[nh];
		h[nh].min = mn;
		h[nh].max = mx;
		/* counts without a bucket per bound: not usable */
		h[nh].n_bounds = nc == nb + 1 ? nb : 0;
		if (nc != nb + 1)
			h[nh].counts = NULL;
		nh++;
	}
	if (rc == STATUS_OK) {
		size_t k = 0;

		for (size_t m = 0; m < nh; m++)
			if (h[m].counts != NULL)
				h[k++] = h[m];
		rc = pointquery_quantile(h, k, q, v);
		if (rc != STATUS_OK)
			nomem(err);
	} else if (rc == STATUS_NOMEM) {
		nomem(err);
	} else {
		rc = pg_bad_row(err, "histogram row");
	}
	for (size_t m = 0; m < nh; m++) {
		free(bounds[m]);
		free(counts[m]);
	}
	return rc;
}

/* Turns the rows into series (see struct pointquery_metric). */
static int
collect(struct pointquery_metric *m, struct metric_priv *priv, enum plan plan,
	const struct pointquery_metric_req *r, struct pg_error *err)
{
	PGresult *res = priv->rows;
	int nrows = PQntuples(res), limit_rows = POINTQUERY_MAX_CELLS + 1;
	size_t ng = r->n_group_by, nseries = 0, npts = 0;
	double q = m->agg == POINTQUERY_AGG_P50	  ? 0.5
		   : m->agg == POINTQUERY_AGG_P95 ? 0.95
						  : 0.99;
	struct pointquery_series *s = NULL;
	int i, j;

	if (nrows >= limit_rows) {
		/* cut at a whole series: drop the last, maybe partial, one */
		int last = nrows - 1;

		while (last > 0 && same_labels(res, last - 1, nrows - 1, ng))
			last--;
		if (last > 0)
			nrows = last;
		m->truncated = true;
	}
	for (i = 0; i < nrows; i++)
		if (i == 0 || !same_labels(res, i - 1, i, ng))
			nseries++;
	if (nseries > POINTQUERY_MAX_SERIES) {
		nseries = POINTQUERY_MAX_SERIES;
		m->truncated = true;
	}
	if (nseries == 0)
		return STATUS_OK;
	m->series = calloc(nseries, sizeof(*m->series));
	priv->labels = calloc(nseries * (ng > 0 ? ng : 1), sizeof(char *));
	priv->t_ms = malloc((size_t)nrows * sizeof(int64_t));
	priv->v = malloc((size_t)nrows * sizeof(double));
	if (m->series == NULL || priv->labels == NULL || priv->t_ms == NULL ||
	    priv->v == NULL)
		return nomem(err);
	for (i = 0; i < nrows; i = j) {
		int64_t b;
		double v = NAN;
		int rc;

		/* a cell: one row, or for quantiles the rows of one step */
		j = i + 1;
		if (plan == PLAN_QUANTILE)
			while (j < nrows && same_labels(res, i, j, ng) &&
			       strcmp(PQgetvalue(res, i, (int)ng),
				      PQgetvalue(res, j, (int)ng)) == 0)
				j++;
		if (i == 0 || !same_labels(res, i - 1, i, ng)) {
			/* a group without any value is not shown */
			if (s != NULL && s->n == 0)
				m->n_series--;
			if (m->n_series == nseries)
				break;
			s = &m->series[m->n_series];
			s->labels = &priv->labels[m->n_series * ng];
			for (size_t k = 0; k < ng; k++)
				s->labels[k] =
					PQgetisnull(res, i, (int)k)
						? NULL
						: PQgetvalue(res, i, (int)k);
			s->t_ms = &priv->t_ms[npts];
			s->v = &priv->v[npts];
			m->n_series++;
		}
		if (pg_text_i64(PQgetvalue(res, i, (int)ng), &b) != STATUS_OK)
			return pg_bad_row(err, "metric row");
		if (plan == PLAN_QUANTILE) {
			rc = cell_quantile(res, i, j, ng, q, &v, err);
			if (rc != STATUS_OK)
				return rc;
		} else if (!PQgetisnull(res, i, (int)ng + 1)) {
			if (parse_double(PQgetvalue(res, i, (int)ng + 1), &v) !=
			    STATUS_OK)
				return pg_bad_row(err, "metric row");
			if (m->agg == POINTQUERY_AGG_RATE) {
				double secs = covered_s(b, r->step_s,
							r->from_ms, r->to_ms);

				v = secs > 0 ? v / secs : NAN;
			}
		}
		if (!isfinite(v))
			continue;
		s->t_ms[s->n] = b * r->step_s * 1000;
		s->v[s->n] = v;
		s->n++;
		npts++;
	}
	if (s != NULL && s->n == 0)
		m->n_series--;
	return STATUS_OK;
}

static int
check_req(const struct pointquery_metric_req *r, struct pg_error *err)
{
	int64_t steps;

	if (r->name == NULL || r->name[0] == '\0')
		return pg_error_set(err, STATUS_INVALID,
				    "name is required: give a metric name");
	if (r->to_ms <= r->from_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "time_range is empty: give a range");
	if (r->step_s < POINTQUERY_MIN_STEP_S)
		return pg_error_set(
			err, STATUS_INVALID,
			"step must be at least %ds: use \"%ds\" or more",
			POINTQUERY_MIN_STEP_S, POINTQUERY_MIN_STEP_S);
	steps = pointquery_step_count(r->from_ms, r->to_ms, r->step_s);
	if (steps > POINTQUERY_MAX_STEPS)
		return pg_error_set(err, STATUS_INVALID,
				    "step gives %" PRId64
				    " points per series, more "
				    "than %d: use a larger step",
				    steps, POINTQUERY_MAX_STEPS);
	if (r->n_group_by > POINTQUERY_MAX_GROUP_BY)
		return pg_error_set(
			err, STATUS_INVALID,
			"group_by has %zu keys, more than %d: group by "
			"fewer attributes",
			r->n_group_by, POINTQUERY_MAX_GROUP_BY);
	if ((int)r->agg < 0 || (size_t)r->agg >= NAGG)
		return pg_error_set(
			err, STATUS_INVALID,
			"aggregation is not one of avg, sum, min, max, "
			"count, last, rate, p50, p95, p99");
	for (size_t i = 0; i < r->n_group_by; i++)
		if (r->group_by[i] == NULL || r->group_by[i][0] == '\0')
			return pg_error_set(
				err, STATUS_INVALID,
				"group_by[%zu] is empty: give attribute "
				"keys such as \"http.route\"",
				i);
	return STATUS_OK;
}

int
pointquery_metrics(struct pg_conn *c, const struct pointquery_metric_req *r,
		   struct pointquery_metric **out, struct pg_error *err)
{
	struct pointquery_metric *m = NULL;
	struct metric_priv *priv = NULL;
	struct params p = {.n = 0};
	struct buf sql;
	char lo[24], from[24], to[24], step[24], lim[24];
	const char *meta_v[2] = {r->name, r->service};
	enum plan plan = PLAN_SIMPLE;
	int64_t lookback, b;
	int pn[10], rc;

	*out = NULL;
	buf_init(&sql, SQL_MAX);
	if ((rc = check_req(r, err)) != STATUS_OK)
		return rc;
	m = calloc(1, sizeof(*m));
	priv = calloc(1, sizeof(*priv));
	if (m == NULL || priv == NULL) {
		rc = nomem(err);
		goto fail;
	}
	m->priv_ = priv;
	rc = pg_query(c, meta_sql, 2, meta_v, &priv->meta, err);
	if (rc != STATUS_OK)
		goto fail;
	if (PQntuples(priv->meta) == 0) {
		rc = pg_error_set(err, STATUS_NOTFOUND,
				  "no metric named \"%.100s\"%s%.100s%s",
				  r->name,
				  r->service != NULL ? " for service \"" : "",
				  r->service != NULL ? r->service : "",
				  r->service != NULL ? "\"" : "");
		goto fail;
	}
	m->kind = PQgetvalue(priv->meta, 0, 0);
	m->unit = PQgetvalue(priv->meta, 0, 1);
	m->monotonic = strcmp(PQgetvalue(priv->meta, 0, 3), "t") == 0;
	if (pg_text_i64(PQgetvalue(priv->meta, 0, 2), &b) != STATUS_OK ||
	    pg_text_i64(PQgetvalue(priv->meta, 0, 4), &m->latest_ms) !=
		    STATUS_OK) {
		rc = pg_bad_row(err, "metric row");
		goto fail;
	}
	m->temporality = (int)b;
	m->agg = r->agg;
	rc = choose_plan(r->name, m->kind, m->monotonic, &m->agg, &plan, err);
	if (rc != STATUS_OK)
		goto fail;

	lookback = r->step_s > POINTQUERY_LOOKBACK_S ? r->step_s
						     : POINTQUERY_LOOKBACK_S;
	snprintf(lo, sizeof(lo), "%" PRId64,
		 plan == PLAN_SIMPLE ? r->from_ms
				     : r->from_ms - lookback * 1000);
	snprintf(from, sizeof(from), "%" PRId64, r->from_ms);
	snprintf(to, sizeof(to), "%" PRId64, r->to_ms);
	snprintf(step, sizeof(step), "%" PRId64, r->step_s);
	snprintf(lim, sizeof(lim), "%d", POINTQUERY_MAX_CELLS + 1);
	pn[0] = param(&p, r->name);
	pn[1] = param(&p, r->service);
	pn[2] = param(&p, r->attributes_json);
	pn[3] = param(&p, m->kind);
	pn[4] = plan == PLAN_SIMPLE ? 0 : param(&p, lo);
	pn[5] = param(&p, from);
	pn[6] = param(&p, to);
	pn[7] = param(&p, step);
	pn[8] = param(&p, lim);
	pn[9] = p.n + 1;
	for (size_t i = 0; i < r->n_group_by; i++)
		param(&p, r->group_by[i]);
	build_sql(&sql, plan, m->agg, strcmp(m->kind, "histogram") == 0,
		  r->n_group_by, pn);
	if ((rc = buf_error(&sql)) != STATUS_OK) {
		rc = pg_error_set(err, rc, "internal error building the query");
		goto fail;
	}
	rc = pg_query(c, sql.data, p.n, p.v, &priv->rows, err);
	if (rc != STATUS_OK)
		goto fail;
	rc = collect(m, priv, plan, r, err);
	if (rc != STATUS_OK)
		goto fail;
	buf_free(&sql);
	*out = m;
	return STATUS_OK;
fail:
	buf_free(&sql);
	pointquery_metric_free(m);
	if (m == NULL)
		free(priv);
	return rc;
}

void
pointquery_metric_free(struct pointquery_metric *m)
{
	struct metric_priv *priv;

	if (m == NULL)
		return;
	priv = m->priv_;
	if (priv != NULL) {
		PQclear(priv->meta);
		PQclear(priv->rows);
		free(priv->labels);
		free(priv->t_ms);
		free(priv->v);
		free(priv);
	}
	free(m->series);
	free(m);
}

void
pointquery_series_stats(const struct pointquery_series *s,
			struct pointquery_stats *out)
{
	double sum = 0;

	out->min = out->max = out->mean = out->last = NAN;
	if (s->n == 0)
		return;
	out->min = out->max = s->v[0];
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] < out->min)
			out->min = s->v[i];
		if (s->v[i] > out->max)
			out->max = s->v[i];
		sum += s->v[i];
	}
	out->mean = sum / (double)s->n;
	out->last = s->v[s->n - 1];
}

/* ---- names ------------------------------------------------------------- */

/* Loose index scans: one index probe per distinct value instead of a read
 * of every point. */
static const char names_sql[] =
	"WITH RECURSIVE s(n) AS (SELECT min(name) FROM metric_points "
	"WHERE ($1::text IS NULL OR service_name = $1) "
	"UNION ALL SELECT (SELECT min(name) FROM metric_points "
	"WHERE name > s.n AND ($1::text IS NULL OR service_name = $1)) "
	"FROM s WHERE s.n IS NOT NULL) "
	"SELECT n FROM s WHERE n IS NOT NULL LIMIT 10000";

static const char services_sql[] =
	"WITH RECURSIVE s(n) AS (SELECT min(service_name) FROM metric_points "
	"UNION ALL SELECT (SELECT min(service_name) FROM metric_points "
	"WHERE service_name > s.n) FROM s WHERE s.n IS NOT NULL) "
	"SELECT n FROM s WHERE n IS NOT NULL LIMIT 10000";

static int
names_query(struct pg_conn *c, const char *sql, int np, const char *const *v,
	    struct pointquery_names **out, struct pg_error *err)
{
	struct pointquery_names *nm = NULL;
	PGresult *res = NULL;
	int rc, n;

	*out = NULL;
	if ((rc = pg_query(c, sql, np, v, &res, err)) != STATUS_OK)
		return rc;
	n = PQntuples(res);
	nm = calloc(1, sizeof(*nm));
	if (nm == NULL ||
	    (nm->names = calloc((size_t)n + 1, sizeof(*nm->names))) == NULL) {
		free(nm);
		PQclear(res);
		return nomem(err);
	}
	for (int i = 0; i < n; i++)
		nm->names[i] = PQgetvalue(res, i, 0);
	nm->n = (size_t)n;
	nm->priv_ = res;
	*out = nm;
	return STATUS_OK;
}

int
pointquery_metric_names(struct pg_conn *c, const char *service,
			struct pointquery_names **out, struct pg_error *err)
{
	const char *v[1] = {service};

	return names_query(c, names_sql, 1, v, out, err);
}

int
pointquery_metric_services(struct pg_conn *c, struct pointquery_names **out,
			   struct pg_error *err)
{
	return names_query(c, services_sql, 0, NULL, out, err);
}

void
pointquery_names_free(struct pointquery_names *nm)
{
	if (nm == NULL)
		return;
	PQclear(nm->priv_);
	free(nm->names);
	free(nm);
}

/* ---- listing ----------------------------------------------------------- */

/*
 * n: every name (of $1) by a loose index scan; r: those with a point in
 * [$3, $4) containing $2, the newest such point found backwards on the
 * (name, time) index, counted before the limit $5; then the series of the
 * listed names, over the newest $6 seconds of their points in the range.
 */
static const char list_sql[] =
	"WITH RECURSIVE n(name) AS (SELECT min(name) FROM metric_points "
	"WHERE ($1::text IS NULL OR service_name = $1) "
	"UNION ALL SELECT (SELECT min(name) FROM metric_points "
	"WHERE name > n.name AND ($1::text IS NULL OR service_name = $1)) "
	"FROM n WHERE n.name IS NOT NULL), "
	"r AS (SELECT n.name, l.kind, l.unit, l.time, "
	"count(*) OVER () AS total FROM (SELECT name FROM n "
	"WHERE name IS NOT NULL LIMIT 10000) n CROSS JOIN LATERAL "
	"(SELECT kind, unit, time FROM metric_points WHERE name = n.name "
	"AND ($1::text IS NULL OR service_name = $1) "
	"AND time >= to_timestamp($3::float8 / 1000) "
	"AND time < to_timestamp($4::float8 / 1000) "
	"ORDER BY time DESC LIMIT 1) l "
	"WHERE $2::text IS NULL OR strpos(lower(n.name), lower($2)) > 0 "
	"ORDER BY n.name LIMIT $5::int) "
	"SELECT r.name, r.kind, coalesce(r.unit, ''), "
	"floor(extract(epoch FROM r.time) * 1000)::bigint, r.total, "
	"s.series FROM r CROSS JOIN LATERAL (SELECT count(*) AS series "
	"FROM (SELECT 1 FROM metric_points WHERE name = r.name "
	"AND ($1::text IS NULL OR service_name = $1) "
	"AND time >= greatest(to_timestamp($3::float8 / 1000), "
	"r.time - $6::int * interval '1 second') AND time <= r.time "
	"GROUP BY service_name, scope_name, attributes, "
	"resource_attributes) x) s ORDER BY r.name";

int
pointquery_list(struct pg_conn *c, const struct pointquery_list_req *r,
		struct pointquery_list **out, struct pg_error *err)
{
	struct pointquery_list *l = NULL;
	PGresult *res = NULL;
	char from[24], to[24], lim[24], win[24];
	const char *v[6] = {r->service, r->match, from, to, lim, win};
	int rc, n;

	*out = NULL;
	if (r->to_ms <= r->from_ms)
		return pg_error_set(err, STATUS_INVALID,
				    "time_range is empty: give a range");
	if (r->limit < 1 || r->limit > POINTQUERY_LIST_MAX)
		return pg_error_set(
			err, STATUS_INVALID,
			"limit must be 1 to %d: use a smaller limit",
			POINTQUERY_LIST_MAX);
	snprintf(from, sizeof(from), "%" PRId64, r->from_ms);
	snprintf(to, sizeof(to), "%" PRId64, r->to_ms);
	snprintf(lim, sizeof(lim), "%zu", r->limit);
	snprintf(win, sizeof(win), "%d", POINTQUERY_SERIES_WINDOW_S);
	if ((rc = pg_query(c, list_sql, 6, v, &res, err)) != STATUS_OK)
		return rc;
	n = PQntuples(res);
	l = calloc(1, sizeof(*l));
	if (l == NULL ||
	    (l->metrics = calloc((size_t)n + 1, sizeof(*l->metrics))) == NULL) {
		rc = nomem(err);
		goto fail;
	}
	l->priv_ = res;
	for (int i = 0; i < n; i++) {
		struct pointquery_listed *m = &l->metrics[i];
		int64_t total;

		m->name = PQgetvalue(res, i, 0);
		m->kind = PQgetvalue(res, i, 1);
		m->unit = PQgetvalue(res, i, 2);
		if (pg_text_i64(PQgetvalue(res, i, 3), &m->last_ms) !=
			    STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 4), &total) != STATUS_OK ||
		    pg_text_i64(PQgetvalue(res, i, 5), &m->series) !=
			    STATUS_OK ||
		    total < n) {
			rc = pg_bad_row(err, "metric listing row");
			goto fail;
		}
		l->total = (size_t)total;
	}
	l->n = (size_t)n;
	*out = l;
	return STATUS_OK;
fail:
	if (l == NULL || l->priv_ == NULL)
		PQclear(res);
	pointquery_list_free(l);
	return rc;
}

void
pointquery_list_free(struct pointquery_list *l)
{
	if (l == NULL)
		return;
	PQclear(l->priv_);
	free(l->metrics);
	free(l);
}

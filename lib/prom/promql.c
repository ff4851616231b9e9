/*
 * promql.c - PromQL built from checked names and escaped values, and the
 * step arithmetic of range queries (see promql.h).  The escaping follows
 * the PromQL lexer: double-quoted strings are Go string literals, so \\,
 * \", \n, \r, \t and \xHH are the escapes it reads back.
 */
#include "prom/promql.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define SEC_MS		INT64_C(1000)
#define MIN_MS		(60 * SEC_MS)
#define HOUR_MS		(60 * MIN_MS)
#define DAY_MS		(24 * HOUR_MS)
#define MAX_DURATION_MS (400 * DAY_MS)

PRINTF_LIKE(3, 4)
static int
fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return STATUS_INVALID;
}

/* At most 60 bytes of s for a message: control bytes as '?', cut at a
 * character boundary, "..." when cut. */
static const char *
shown(const char *s, char *buf, size_t cap)
{
	size_t i = 0, n = 0, max = 60;

	while (s[i] != '\0' && i < max && n + 8 < cap) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80 ? 1
				    : utf8_len((const unsigned char *)s + i,
					       strnlen(s + i, 4));

		if (l == 0 || c < 0x20 || c == 0x7f) {
			buf[n++] = '?';
			i++;
			continue;
		}
		if (c == '"' || c == '\\')
			buf[n++] = '\\';
		memcpy(buf + n, s + i, l);
		n += l;
		i += l;
	}
	if (s[i] != '\0' && n + 4 <= cap) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static bool
name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

static bool
name_ok(const char *s, bool colon)
{
	size_t n = s != NULL ? strnlen(s, PROMQL_MAX_NAME + 1) : 0;

	if (n == 0 || n > PROMQL_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i], i == 0, colon))
			return false;
	return true;
}

bool
promql_metric_name_ok(const char *s)
{
	return name_ok(s, true);
}

bool
promql_label_name_ok(const char *s)
{
	return name_ok(s, false) && strncmp(s, "__", 2) != 0;
}

int
promql_quote(struct buf *out, const char *s)
{
	size_t mark = out->len, i = 0, n = strlen(s);
	int rc = buf_error(out);

	if (rc != STATUS_OK)
		return rc;
	buf_puts(out, "\"");
	/* to the first failure: past a full buffer, s is not looked at */
	while (i < n && (rc = buf_error(out)) == STATUS_OK) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x80) {
			size_t l =
				utf8_len((const unsigned char *)s + i, n - i);

			if (l == 0) {
				rc = STATUS_INVALID;
				break;
			}
			buf_append(out, s + i, l);
			i += l;
			continue;
		}
		switch (c) {
		case '\\': buf_puts(out, "\\\\"); break;
		case '"': buf_puts(out, "\\\""); break;
		case '\n': buf_puts(out, "\\n"); break;
		case '\r': buf_puts(out, "\\r"); break;
		case '\t': buf_puts(out, "\\t"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				buf_printf(out, "\\x%02x", c);
			else
				buf_append(out, s + i, 1);
		}
		i++;
	}
	if (rc == STATUS_OK)
		rc = buf_puts(out, "\"");
	if (rc != STATUS_OK)
		buf_rollback(out, mark);
	return rc;
}

static const char *const agg_names[] = {
	[PROMQL_AGG_NONE] = "",	  [PROMQL_AGG_AVG] = "avg",
	[PROMQL_AGG_MAX] = "max", [PROMQL_AGG_MIN] = "min",
	[PROMQL_AGG_SUM] = "sum",
};

int
promql_agg_parse(const char *s, enum promql_agg *out)
{
	*out = PROMQL_AGG_NONE;
	for (int i = PROMQL_AGG_AVG; s != NULL && i <= PROMQL_AGG_SUM; i++)
		if (strcmp(s, agg_names[i]) == 0) {
			*out = (enum promql_agg)i;
			return STATUS_OK;
		}
	return STATUS_INVALID;
}

const char *
promql_agg_name(enum promql_agg agg)
{
	if ((int)agg < 0 || agg > PROMQL_AGG_SUM)
		return "";
	return agg_names[agg];
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

const char *
promql_histogram_base(const char *metric, char *buf, size_t cap)
{
	size_t n = strlen(metric);

	if (ends_with(metric, "_bucket") && n > 7)
		n -= 7;
	snprintf(buf, cap, "%.*s", (int)n, metric);
	return buf;
}

static int
cmp_filter(const void *a, const void *b)
{
	const struct promql_filter *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* Checks every part before anything is written. */
static int
check_spec(const struct promql_spec *s, const struct promql_filter **sorted,
	   char *err, size_t errlen)
{
	char a[256], b[256];

	if (!promql_metric_name_ok(s->metric))
		return fail(
			err, errlen,
			"metric_name \"%s\" is not a valid Prometheus "
			"metric name: use 1 to %d letters, digits, '_' "
			"or ':', not starting with a digit (e.g. "
			"\"http_requests_total\")",
			shown(s->metric != NULL ? s->metric : "", a, sizeof(a)),
			PROMQL_MAX_NAME);
	if (s->nfilters > PROMQL_MAX_FILTERS)
		return fail(err, errlen,
			    "filters has %zu labels: give at most %d",
			    s->nfilters, PROMQL_MAX_FILTERS);
	for (size_t i = 0; i < s->nfilters; i++) {
		const struct promql_filter *f = &s->filters[i];
		const char *v = f->value != NULL ? f->value : "";
		size_t vn = strnlen(v, PROMQL_MAX_VALUE + 1);

		if (f->name == NULL || !promql_label_name_ok(f->name))
			return fail(err, errlen,
				    "filters: \"%s\" is not a valid label "
				    "name: use 1 to %d letters, digits or "
				    "'_', not starting with a digit or \"__\" "
				    "(e.g. \"job\", \"instance\")",
				    shown(f->name != NULL ? f->name : "", a,
					  sizeof(a)),
				    PROMQL_MAX_NAME);
		if (vn > PROMQL_MAX_VALUE)
			return fail(err, errlen,
				    "filters: the value of \"%s\" is longer "
				    "than %d bytes: filter on a shorter label "
				    "value",
				    f->name, PROMQL_MAX_VALUE);
		for (size_t j = 0; j < vn;) {
			unsigned char c = (unsigned char)v[j];
			size_t l =
				c < 0x80
					? 1
					: utf8_len((const unsigned char *)v + j,
						   vn - j);

			if (l == 0)
				return fail(err, errlen,
					    "filters: the value of \"%s\" is "
					    "not valid UTF-8",
					    f->name);
			j += l;
		}
		sorted[i] = f;
	}
	qsort(sorted, s->nfilters, sizeof(*sorted), cmp_filter);
	for (size_t i = 1; i < s->nfilters; i++)
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
			return fail(err, errlen,
				    "filters names label \"%s\" twice: give "
				    "each label once",
				    shown(sorted[i]->name, b, sizeof(b)));
	if (s->quantile != 0 && !(s->quantile > 0 && s->quantile < 1))
		return fail(err, errlen,
			    "percentile must be between 0 and 1 exclusive, "
			    "got %g",
			    s->quantile);
	if (s->quantile != 0 && s->agg != PROMQL_AGG_NONE)
		return fail(err, errlen,
			    "aggregation \"%s\" cannot be combined with "
			    "percentile: the percentile is already computed "
			    "over the buckets of every matching series (sum "
			    "by (le)); drop aggregation, or narrow the series "
			    "with filters",
			    promql_agg_name(s->agg));
	if ((int)s->agg < 0 || s->agg > PROMQL_AGG_SUM)
		return fail(err, errlen,
			    "aggregation must be one of avg, max, min, sum");
	if ((s->rate || s->quantile != 0) && s->window_ms < SEC_MS)
		return fail(err, errlen,
			    "the rate window must be at least 1s, got %" PRId64
			    "ms",
			    s->window_ms);
	return STATUS_OK;
}

static int
selector(struct buf *out, const char *metric, const char *suffix,
	 const struct promql_filter *const *f, size_t n)
{
	int rc = STATUS_OK;

	buf_printf(out, "%s%s", metric, suffix);
	if (n > 0)
		buf_puts(out, "{");
	for (size_t i = 0; rc == STATUS_OK && i < n; i++) {
		buf_printf(out, "%s%s=", i > 0 ? "," : "", f[i]->name);
		rc = promql_quote(out, f[i]->value != NULL ? f[i]->value : "");
	}
	if (n > 0)
		buf_puts(out, "}");
	return rc != STATUS_OK ? rc : buf_error(out);
}

int
promql_build(const struct promql_spec *s, struct buf *out, char *err,
	     size_t errlen)
{
	const struct promql_filter *sorted[PROMQL_MAX_FILTERS];
	size_t mark = out->len;
	char win[32];
	bool bucket;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	rc = check_spec(s, sorted, err, errlen);
	if (rc == STATUS_OK)
		rc = buf_error(out); /* returned as it is, not rolled back */
	if (rc != STATUS_OK)
		return rc;
	promql_duration_format(s->window_ms, win, sizeof(win));
	if (s->quantile != 0) {
		bucket = ends_with(s->metric, "_bucket");
		buf_printf(out, "histogram_quantile(%g, sum by (le) (rate(",
			   s->quantile);
		rc = selector(out, s->metric, bucket ? "" : "_bucket", sorted,
			      s->nfilters);
		buf_printf(out, "[%s])))", win);
	} else {
		if (s->agg != PROMQL_AGG_NONE)
			buf_printf(out, "%s(", promql_agg_name(s->agg));
		if (s->rate)
			buf_puts(out, "rate(");
		rc = selector(out, s->metric, "", sorted, s->nfilters);
		if (s->rate)
			buf_printf(out, "[%s])", win);
		if (s->agg != PROMQL_AGG_NONE)
			buf_puts(out, ")");
	}
	if (rc == STATUS_OK)
		rc = buf_error(out);
	if (rc != STATUS_OK)
		buf_rollback(out, mark); /* out as it was */
	return rc;
}

/* ---- durations and steps ----------------------------------------------- */

static const struct {
	const char *unit;
	int64_t ms;
} units[] = {
	/* longest unit text first: "ms" before "m" */
	{"ms", 1},     {"s", SEC_MS},	  {"m", MIN_MS},       {"h", HOUR_MS},
	{"d", DAY_MS}, {"w", 7 * DAY_MS}, {"y", 365 * DAY_MS},
};

int
promql_duration_parse(const char *s, int64_t *ms)
{
	int64_t total = 0;
	const char *p = s;

	*ms = 0;
	if (s == NULL || *s == '\0' || strlen(s) > 64)
		return STATUS_INVALID;
	while (*p != '\0') {
		int64_t v = 0, unit_ms = -1;
		const char *digits = p;

		while (*p >= '0' && *p <= '9') {
			if (v > MAX_DURATION_MS)
				return STATUS_INVALID;
			v = v * 10 + (*p - '0');
			p++;
		}
		if (p == digits)
			return STATUS_INVALID;
		if (*p == '\0' && digits == s) {
			unit_ms = SEC_MS; /* a bare number of seconds */
		} else {
			for (size_t i = 0; i < sizeof(units) / sizeof(units[0]);
			     i++) {
				size_t l = strlen(units[i].unit);

				if (strncmp(p, units[i].unit, l) == 0) {
					unit_ms = units[i].ms;
					p += l;
					break;
				}
			}
		}
		if (unit_ms < 0 || v > MAX_DURATION_MS / unit_ms)
			return STATUS_INVALID;
		total += v * unit_ms;
		if (total > MAX_DURATION_MS)
			return STATUS_INVALID;
	}
	if (total <= 0)
		return STATUS_INVALID;
	*ms = total;
	return STATUS_OK;
}

size_t
promql_duration_format(int64_t ms, char *buf, size_t cap)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} parts[] = {{"d", DAY_MS},
		     {"h", HOUR_MS},
		     {"m", MIN_MS},
		     {"s", SEC_MS},
		     {"ms", 1}};
	size_t n = 0;

	if (cap > 0)
		buf[0] = '\0';
	if (ms <= 0)
		return (size_t)snprintf(buf, cap, "0s");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		int64_t q = ms / parts[i].ms;

		if (q == 0)
			continue;
		ms -= q * parts[i].ms;
		n += (size_t)snprintf(n < cap ? buf + n : NULL,
				      n < cap ? cap - n : 0, "%" PRId64 "%s", q,
				      parts[i].unit);
	}
	return n;
}

int64_t
promql_points(int64_t range_ms, int64_t step_ms)
{
	if (step_ms <= 0 || range_ms < 0)
		return 0;
	return range_ms / step_ms + 1;
}

int64_t
promql_default_step_ms(int64_t range_ms)
{
	static const int64_t steps[] = {
		SEC_MS,	      5 * SEC_MS, 10 * SEC_MS, 15 * SEC_MS, 30 * SEC_MS,
		MIN_MS,	      2 * MIN_MS, 5 * MIN_MS,  10 * MIN_MS, 15 * MIN_MS,
		30 * MIN_MS,  HOUR_MS,	  2 * HOUR_MS, 3 * HOUR_MS, 6 * HOUR_MS,
		12 * HOUR_MS, DAY_MS,	  2 * DAY_MS,  7 * DAY_MS,
	};
	size_t n = sizeof(steps) / sizeof(steps[0]);

	for (size_t i = 0; i < n; i++)
		if (promql_points(range_ms, steps[i]) <= PROMQL_TARGET_POINTS)
			return steps[i];
	return steps[n - 1];
}

int64_t
promql_rate_window_ms(int64_t step_ms)
{
	int64_t w = step_ms + 15 * SEC_MS;

	return w > MIN_MS ? w : MIN_MS;
}

/* ---- histogram_quantile ------------------------------------------------- */

static int
cmp_bucket(const void *a, const void *b)
{
	const struct promql_bucket *x = a, *y = b;

	return (x->le > y->le) - (x->le < y->le);
}

double
promql_histogram_quantile(double q, struct promql_bucket *b, size_t n)
{
	size_t m = 0, i;
	double rank, start, count;

	if (n == 0 || isnan(q) || q < 0 || q > 1)
		return NAN;
	for (i = 0; i < n; i++)
		if (isnan(b[i].le))
			return NAN;
	qsort(b, n, sizeof(*b), cmp_bucket);
	if (!isinf(b[n - 1].le) || b[n - 1].le < 0)
		return NAN;
	/* equal bounds (series that differ in an ignored label): one bucket */
	for (i = 0; i < n; i++) {
		if (m > 0 && b[m - 1].le == b[i].le)
			b[m - 1].count += b[i].count;
		else
			b[m++] = b[i];
	}
	/* scrapes at different moments can leave a bucket above the next */
	for (i = 1; i < m; i++)
		if (b[i].count < b[i - 1].count)
			b[i].count = b[i - 1].count;
	if (m < 2 || !(b[m - 1].count > 0))
		return NAN;
	rank = q * b[m - 1].count;
	for (i = 0; i < m - 1 && b[i].count < rank; i++)
		;
	if (i == m - 1)
		return b[m - 2].le;
	if (i == 0 && b[0].le <= 0)
		return b[0].le;
	start = 0;
	count = b[i].count;
	if (i > 0) {
		start = b[i - 1].le;
		count -= b[i - 1].count;
		rank -= b[i - 1].count;
	}
	if (!(count > 0))
		return start;
	return start + (b[i].le - start) * (rank / count);
}

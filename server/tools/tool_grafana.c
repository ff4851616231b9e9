/*
 * tool_grafana.c - the "grafana" tool family: query_grafana_metrics asks a
 * configured Prometheus (directly or through Grafana's data source proxy)
 * for one metric over a time range, through lib/prom/grafana, with the PromQL
 * built by lib/prom/promql.  Failures are results the model can act on:
 * "ERROR: <type>" / "Message: ..." / "Suggestion: ..." with the same
 * fields in structuredContent, types metric_not_found, invalid_time_range,
 * invalid_query and grafana_unavailable.
 */
#include "tools/tool_common.h"
#include "base/strdist.h"
#include "tools/tool_grafana.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/timerange.h"
#include "base/utf8.h"
#include "core/instances.h"
#include "prom/grafana.h"
#include "prom/promql.h"
#include "telemetry/promcalls.h"
#include "tools/tool.h"

/* Points shown per series in text; structuredContent has them all. */
#define SHOWN_POINTS 10
/* Closest names offered for an unknown metric. */
#define CLOSEST_NAMES 10
/* A metric missing from a name list older than this gets a fresh list
 * before it is called unknown: it may have appeared since. */
#define NAMES_RECHECK_MS 30000
/* Text kept back from the budget for the closing line. */
#define TAIL_ROOM 256
/* Range used when start_time is not given. */
#define DEFAULT_RANGE_MS (3600 * INT64_C(1000))

/* ---- failures ------------------------------------------------------------ */

/* A failure the model sees: type, message, suggestion, and extra fields
 * for structuredContent (owned). */
struct failure {
	const char *type;
	char message[1024];
	char suggestion[1024];
	json_t *extra;
};

PRINTF_LIKE(3, 4)
static int
failf(struct failure *f, const char *type, const char *fmt, ...)
{
	va_list ap;

	f->type = type;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return STATUS_INVALID;
}

PRINTF_LIKE(2, 3)
static void
suggest(struct failure *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->suggestion, sizeof(f->suggestion), fmt, ap);
	va_end(ap);
}

static void
extra_set(struct failure *f, const char *key, json_t *v)
{
	if (f->extra == NULL)
		f->extra = json_object();
	if (f->extra != NULL && v != NULL)
		json_object_set_new(f->extra, key, v);
	else
		json_decref(v);
}

static json_t *
failure_result(struct failure *f)
{
	json_t *sc = f->extra != NULL ? f->extra : json_object(), *content;
	char *text = NULL;

	f->extra = NULL;
	if (sc == NULL ||
	    asprintf(&text, "ERROR: %s\nMessage: %s\nSuggestion: %s\n", f->type,
		     f->message, f->suggestion) < 0) {
		json_decref(sc);
		return NULL;
	}
	json_object_set_new(sc, "error", json_string(f->type));
	json_object_set_new(sc, "message", json_string(f->message));
	json_object_set_new(sc, "suggestion", json_string(f->suggestion));
	content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
	free(text);
	return tool_result_new(content, sc, true);
}

/* A caller's string for a message: at most max bytes, cut at a character
 * boundary, control bytes and broken UTF-8 as '?', quotes and backslashes
 * escaped, "..." when cut.  JSON strings must stay valid UTF-8. */
static const char *
clip(const char *s, size_t max, char *buf, size_t cap)
{
	size_t i = 0, n = 0, len = strlen(s);

	while (i < len && i < max && n + 8 < cap) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80 ? 1
				    : utf8_len((const unsigned char *)s + i,
					       len - i);

		if (l == 0 || c < 0x20 || c == 0x7f || i + l > max) {
			buf[n++] = '?';
			i += l > 0 ? l : 1;
			continue;
		}
		if (c == '"' || c == '\\')
			buf[n++] = '\\';
		memcpy(buf + n, s + i, l);
		n += l;
		i += l;
	}
	if (i < len && n + 4 <= cap) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* ---- arguments ------------------------------------------------------------ */

struct req {
	const char *metric;
	const char *instance;
	struct promql_filter filters[PROMQL_MAX_FILTERS];
	size_t nfilters;
	enum promql_agg agg;
	int percentile; /* 50, 95, 99; 0 = none */
	bool rate;
	int64_t start_ms, end_ms, step_ms, window_ms;
};

/*
 * One ISO 8601 instant (lib/base/timerange's grammar, "now" too).  timerange
 * resolves a range, so the instant is the range's start when it lies in
 * the past, or the end of now..s when it lies ahead.
 */
static int
parse_instant(const char *field, const char *s, int64_t now, int64_t *out,
	      struct failure *f)
{
	struct timerange r;
	char msg[512], shown[256];
	const char *p = s;

	while (isspace((unsigned char)*p))
		p++;
	if (strncmp(p, "now", 3) == 0 && p[3 + strspn(p + 3, " \t")] == '\0') {
		*out = now;
		return STATUS_OK;
	}
	if (timerange_parse(NULL, s, NULL, now, &r, msg, sizeof(msg)) ==
	    STATUS_OK) {
		*out = r.from_ms;
		return STATUS_OK;
	}
	if (timerange_parse(NULL, "now", s, now, &r, NULL, 0) == STATUS_OK) {
		*out = r.to_ms;
		return STATUS_OK;
	}
	/* the instant is now itself, to the millisecond: both ranges above
	 * are empty */
	if (timerange_parse(NULL, s, NULL, now + 1, &r, NULL, 0) == STATUS_OK &&
	    r.from_ms == now) {
		*out = now;
		return STATUS_OK;
	}
	/* msg reads 'from "<s>" <what is wrong>: <hint>' */
	if (strncmp(msg, "from ", 5) == 0 &&
	    (strstr(msg, "not understood") != NULL ||
	     strstr(msg, "not a valid") != NULL ||
	     strstr(msg, "outside") != NULL))
		failf(f, "invalid_time_range", "%s %s", field, msg + 5);
	else
		failf(f, "invalid_time_range",
		      "%s \"%s\" is more than %lld days away from now", field,
		      clip(s, 60, shown, sizeof(shown)),
		      (long long)(TIMERANGE_MAX_MS / (86400 * 1000LL)));
	suggest(f, "Give start_time and end_time in ISO 8601 / RFC 3339, e.g. "
		   "\"2026-11-21T10:00:00Z\", or leave both out for the last "
		   "hour.");
	return STATUS_INVALID;
}

/* The smallest step of 1s, 2s, 5s, 10s, ... giving at most max points. */
static int64_t
step_for(int64_t range_ms, int64_t max)
{
	static const int64_t mult[] = {1, 2, 5};
	int64_t base = 1000;

	for (;;)
		for (size_t i = 0; i < 3; i++) {
			if (promql_points(range_ms, base * mult[i]) <= max)
				return base * mult[i];
			if (i == 2)
				base *= 10;
		}
}

static int
parse_step(const json_t *v, int64_t range_ms, struct req *q, struct failure *f)
{
	char shown[256], q40[200], s[40];
	int64_t min_step;

	if (v == NULL || json_is_null(v)) {
		q->step_ms = promql_default_step_ms(range_ms);
		return STATUS_OK;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 1 ||
		    json_integer_value(v) > 400 * 86400)
			goto bad;
		q->step_ms = (int64_t)json_integer_value(v) * 1000;
	} else if (!json_is_string(v) ||
		   promql_duration_parse(json_string_value(v), &q->step_ms) !=
			   STATUS_OK) {
		goto bad;
	}
	if (q->step_ms < 1000)
		goto bad;
	if (promql_points(range_ms, q->step_ms) > PROMQL_MAX_POINTS) {
		min_step = step_for(range_ms, PROMQL_MAX_POINTS);
		promql_duration_format(min_step, s, sizeof(s));
		failf(f, "invalid_query",
		      "The query would return %" PRId64
		      " points per series, over the limit of %d",
		      promql_points(range_ms, q->step_ms), PROMQL_MAX_POINTS);
		suggest(f,
			"Use a step of at least %s, or a shorter time range "
			"(start_time/end_time), or leave step out to get a "
			"step chosen for the range.",
			s);
		extra_set(f, "points",
			  json_integer(promql_points(range_ms, q->step_ms)));
		extra_set(f, "limit", json_integer(PROMQL_MAX_POINTS));
		return STATUS_INVALID;
	}
	return STATUS_OK;
bad:
	if (json_is_string(v))
		snprintf(shown, sizeof(shown), "\"%s\"",
			 clip(json_string_value(v), 40, q40, sizeof(q40)));
	else if (json_is_integer(v))
		snprintf(shown, sizeof(shown), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
	else
		snprintf(shown, sizeof(shown), "a value of another type");
	failf(f, "invalid_query", "step %s is not a duration of at least 1s",
	      shown);
	suggest(f, "Give step as a Prometheus duration such as \"15s\", "
		   "\"1m\", \"5m\", \"1h\" (or a number of seconds), or leave "
		   "it out.");
	return STATUS_INVALID;
}

static int
parse_args(const json_t *args, int64_t now, struct req *q, struct failure *f)
{
	const char *agg = tool_arg_str(args, "aggregation"),
		   *pct = tool_arg_str(args, "percentile"),
		   *start = tool_arg_str(args, "start_time"),
		   *end = tool_arg_str(args, "end_time");
	const json_t *filters = json_object_get(args, "filters"), *v;
	const json_t *rate = json_object_get(args, "rate");
	const char *key;
	char shown[256];
	int rc;

	memset(q, 0, sizeof(*q));
	q->metric = json_string_value(json_object_get(args, "metric_name"));
	q->instance = tool_arg_str(args, "instance");
	if (q->metric == NULL || !promql_metric_name_ok(q->metric)) {
		failf(f, "invalid_query",
		      "metric_name \"%s\" is not a valid Prometheus metric "
		      "name",
		      clip(q->metric != NULL ? q->metric : "", 80, shown,
			   sizeof(shown)));
		suggest(f, "Use the metric's name as Prometheus lists it: "
			   "letters, digits, '_' and ':', not starting with "
			   "a digit, e.g. \"http_requests_total\"; label "
			   "matchers go in filters, functions in rate, "
			   "aggregation and percentile.");
		return STATUS_INVALID;
	}
	if (agg != NULL && promql_agg_parse(agg, &q->agg) != STATUS_OK) {
		failf(f, "invalid_query", "aggregation \"%s\" is not supported",
		      clip(agg, 40, shown, sizeof(shown)));
		suggest(f, "Use one of avg, max, min, sum, or leave it out to "
			   "get every series.");
		return STATUS_INVALID;
	}
	if (pct != NULL) {
		if (strcmp(pct, "p50") == 0)
			q->percentile = 50;
		else if (strcmp(pct, "p95") == 0)
			q->percentile = 95;
		else if (strcmp(pct, "p99") == 0)
			q->percentile = 99;
		else {
			failf(f, "invalid_query",
			      "percentile \"%s\" is not supported",
			      clip(pct, 40, shown, sizeof(shown)));
			suggest(f, "Use p50, p95 or p99, on a histogram "
				   "metric (one with _bucket series).");
			return STATUS_INVALID;
		}
	}
	if (rate != NULL && !json_is_boolean(rate)) {
		failf(f, "invalid_query", "rate must be true or false");
		suggest(f, "Set rate to true for the per-second rate of a "
			   "counter.");
		return STATUS_INVALID;
	}
	q->rate = json_is_true(rate);
	if (filters != NULL && !json_is_null(filters) &&
	    !json_is_object(filters)) {
		failf(f, "invalid_query",
		      "filters must be an object of label names to values");
		suggest(f, "Give filters like {\"job\": \"api\", \"instance\": "
			   "\"10.0.0.1:9100\"} (exact matches).");
		return STATUS_INVALID;
	}
	if (json_object_size(filters) > PROMQL_MAX_FILTERS) {
		failf(f, "invalid_query",
		      "filters has %zu labels, more than %d",
		      json_object_size(filters), PROMQL_MAX_FILTERS);
		suggest(f, "Filter on at most %d labels.", PROMQL_MAX_FILTERS);
		return STATUS_INVALID;
	}
	json_object_foreach((json_t *)filters, key, v)
	{
		if (!json_is_string(v)) {
			failf(f, "invalid_query",
			      "filters: the value of \"%s\" is not a string",
			      clip(key, 60, shown, sizeof(shown)));
			suggest(f, "Give each filter as \"label\": \"value\" "
				   "(an exact match), e.g. {\"job\": "
				   "\"api\"}.");
			return STATUS_INVALID;
		}
		q->filters[q->nfilters].name = key;
		q->filters[q->nfilters].value = json_string_value(v);
		q->nfilters++;
	}
	/* times: end defaults to now, start to an hour before end */
	q->end_ms = now;
	if (end != NULL &&
	    parse_instant("end_time", end, now, &q->end_ms, f) != STATUS_OK)
		return STATUS_INVALID;
	q->start_ms = q->end_ms - DEFAULT_RANGE_MS;
	if (start != NULL && parse_instant("start_time", start, now,
					   &q->start_ms, f) != STATUS_OK)
		return STATUS_INVALID;
	if (q->end_ms <= q->start_ms) {
		char a[TIMERANGE_FORMAT_MAX], b[TIMERANGE_FORMAT_MAX];

		timerange_format(q->start_ms, a, sizeof(a));
		timerange_format(q->end_ms, b, sizeof(b));
		failf(f, "invalid_time_range",
		      "end_time (%s) is not after start_time (%s)", b, a);
		suggest(f, "Give a start_time earlier than end_time, e.g. "
			   "start_time \"2026-11-21T10:00:00Z\" and end_time "
			   "\"2026-11-21T11:00:00Z\"; leaving end_time out "
			   "means now.");
		return STATUS_INVALID;
	}
	if (q->end_ms - q->start_ms > PROMQL_MAX_RANGE_MS) {
		failf(f, "invalid_time_range",
		      "The time range spans %.1f days, more than the %lld "
		      "days allowed",
		      (double)(q->end_ms - q->start_ms) / 86400000.0,
		      PROMQL_MAX_RANGE_MS / 86400000LL);
		suggest(f,
			"Narrow start_time/end_time to at most %lld days, and "
			"query several ranges one after the other if you need "
			"more.",
			PROMQL_MAX_RANGE_MS / 86400000LL);
		return STATUS_INVALID;
	}
	rc = parse_step(json_object_get(args, "step"), q->end_ms - q->start_ms,
			q, f);
	if (rc != STATUS_OK)
		return rc;
	/* evaluation times on whole multiples of the step, as Grafana does:
	 * round timestamps, and the same range gives the same points */
	q->start_ms -= q->start_ms % q->step_ms;
	q->end_ms -= q->end_ms % q->step_ms;
	if (promql_points(q->end_ms - q->start_ms, q->step_ms) >
	    PROMQL_MAX_POINTS)
		q->start_ms += q->step_ms; /* rounding added one */
	q->window_ms = promql_rate_window_ms(q->step_ms);
	return STATUS_OK;
}

/* ---- closest names -------------------------------------------------------- */

/* Levenshtein distance, case-insensitive, giving up (returning cap) once
 * every path exceeds cap: most names are far, and lists are long. */
static size_t
distance(const char *a, const char *b, size_t cap)
{
	size_t lb = strnlen(b, 256);

	if (lb > PROMQL_MAX_NAME)
		return cap;
	return strdist(a, strnlen(a, PROMQL_MAX_NAME), b, lb, true, cap);
}

/* '_'-separated words of a (2 bytes or more) that are words of b too:
 * "cpu_usage" and "node_cpu_seconds_total" share "cpu". */
static size_t
shared_words(const char *a, const char *b)
{
	size_t n = 0;

	while (*a != '\0') {
		size_t len = strcspn(a, "_:");

		for (const char *p = b; len >= 2 && *p != '\0';) {
			size_t l2 = strcspn(p, "_:");

			if (l2 == len && strncasecmp(p, a, len) == 0) {
				n++;
				break;
			}
			p += l2;
			p += strspn(p, "_:");
		}
		a += len;
		a += strspn(a, "_:");
	}
	return n;
}

/* Up to max names of the list closest to name, best first, into out;
 * only histograms' _bucket series when buckets. */
static size_t
closest(const char *name, const struct grafana_names *names, bool buckets,
	const char **out, size_t max)
{
	double score[CLOSEST_NAMES];
	size_t got = 0;

	if (max > CLOSEST_NAMES)
		max = CLOSEST_NAMES;
	for (size_t i = 0; i < names->n && max > 0; i++) {
		const char *c = names->v[i];
		size_t cl = strlen(c), cap, k;
		double worst = got == max ? score[got - 1] : 1e9, bonus, s;

		if (buckets && (cl < 7 || strcmp(c + cl - 7, "_bucket") != 0))
			continue;
		/* shared words and containment weigh more than edits: what
		 * people leave out of a metric name is a prefix or suffix */
		bonus = 3.0 * (double)shared_words(name, c);
		if (strcasestr(c, name) != NULL || strcasestr(name, c) != NULL)
			bonus += 6.0;
		/* the distance that could still beat the worst kept */
		if (got < max)
			cap = SIZE_MAX / 2;
		else if (worst + bonus < 0)
			continue;
		else
			cap = (size_t)(worst + bonus) + 1;
		s = (double)distance(name, c, cap) - bonus;
		if (got == max && s >= worst)
			continue;
		for (k = got; k > 0 && score[k - 1] > s; k--)
			;
		if (got < max)
			got++;
		memmove(&score[k + 1], &score[k],
			(got - 1 - k) * sizeof(score[0]));
		memmove(&out[k + 1], &out[k], (got - 1 - k) * sizeof(out[0]));
		score[k] = s;
		out[k] = c;
	}
	return got;
}

/* ---- answers --------------------------------------------------------------- */

struct stats {
	size_t n; /* finite values */
	double min, max, mean, median, sum;
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Over the finite values of series [from, to). */
static int
stats_of(const struct grafana_matrix *m, size_t from, size_t to,
	 struct stats *st)
{
	size_t cap = 0, n = 0;
	double *v;

	memset(st, 0, sizeof(*st));
	for (size_t i = from; i < to; i++)
		cap += m->series[i].npoints;
	v = malloc((cap + 1) * sizeof(*v));
	if (v == NULL)
		return STATUS_NOMEM;
	for (size_t i = from; i < to; i++)
		for (size_t j = 0; j < m->series[i].npoints; j++)
			if (isfinite(m->series[i].points[j].v))
				v[n++] = m->series[i].points[j].v;
	st->n = n;
	if (n > 0) {
		qsort(v, n, sizeof(*v), cmp_double);
		st->min = v[0];
		st->max = v[n - 1];
		for (size_t i = 0; i < n; i++)
			st->sum += v[i];
		st->mean = st->sum / (double)n;
		st->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
	return STATUS_OK;
}

static const char *
num(double v, char *buf, size_t cap)
{
	if (isnan(v))
		snprintf(buf, cap, "NaN");
	else if (isinf(v))
		snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
	else
		snprintf(buf, cap, "%.10g", v == 0 ? 0.0 : v);
	return buf;
}

static json_t *
num_json(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *
stats_json(const struct stats *st)
{
	if (st->n == 0)
		return json_pack("{s:i, s:n, s:n, s:n, s:n, s:n}", "count", 0,
				 "min", "max", "mean", "median", "sum");
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "count",
			 (json_int_t)st->n, "min", num_json(st->min), "max",
			 num_json(st->max), "mean", num_json(st->mean),
			 "median", num_json(st->median), "sum",
			 num_json(st->sum));
}

/*
 * The text follows the Metrics Query Tool Contract, line for line, so that
 * agents built on it parse it: "<metric> (<unit>)", "Time: <start> to
 * <end>", "Data Points: <n>", "Statistics:" with the unit on each value,
 * "Data (first 10 points):" with "HH:MM:SS - value" lines (UTC), and "No
 * data available for this metric in the specified time range."; lines of
 * our own (instance, query, step, series) follow the contract's.
 */
#define NO_DATA "No data available for this metric in the specified time range."

/* " celsius", or "" for no unit: after a value. */
static const char *
unit_sep(const char *unit)
{
	return unit[0] != '\0' ? " " : "";
}

static int
stats_text(struct buf *b, const struct stats *st, const char *indent,
	   const char *unit)
{
	static const char *const names[] = {"Min", "Max", "Mean", "Median",
					    "Sum"};
	const double v[] = {st->min, st->max, st->mean, st->median, st->sum};
	int rc;

	if (st->n == 0)
		return buf_printf(b, "%sStatistics: no numeric values\n",
				  indent);
	rc = buf_printf(b, "%sStatistics:\n", indent);
	for (size_t i = 0; rc == STATUS_OK && i < 5; i++) {
		char x[40];

		rc = buf_printf(b, "%s  %s: %s%s%s\n", indent, names[i],
				num(v[i], x, sizeof(x)), unit_sep(unit), unit);
	}
	return rc;
}

static int
points_text(struct buf *b, const struct grafana_series *s, const char *indent,
	    const char *unit)
{
	char v[40];
	size_t n = s->npoints < SHOWN_POINTS ? s->npoints : SHOWN_POINTS;
	int rc = buf_printf(b, "%sData (first %zu point%s):\n", indent, n,
			    n == 1 ? "" : "s");

	for (size_t i = 0; rc == STATUS_OK && i < n; i++) {
		time_t sec = (time_t)(s->points[i].t_ms / 1000);
		struct tm tm;

		gmtime_r(&sec, &tm);
		rc = buf_printf(b, "%s  %02d:%02d:%02d - %s%s%s\n", indent,
				tm.tm_hour, tm.tm_min, tm.tm_sec,
				num(s->points[i].v, v, sizeof(v)),
				unit_sep(unit), unit);
	}
	return rc;
}

/* {job="api", instance="a:9100"} as in PromQL (values quoted). */
static int
labels_text(struct buf *b, const struct grafana_series *s)
{
	int rc = buf_puts(b, "{");
	bool first = true;

	for (size_t i = 0; rc == STATUS_OK && i < s->nlabels; i++) {
		if (strcmp(s->labels[i].name, "__name__") == 0)
			continue; /* the metric, named above */
		rc = buf_printf(b, "%s%s=", first ? "" : ", ",
				s->labels[i].name);
		first = false;
		if (rc == STATUS_OK)
			rc = promql_quote(b, s->labels[i].value);
	}
	return rc == STATUS_OK ? buf_puts(b, "}") : rc;
}

static json_t *
series_json(const struct grafana_matrix *m, size_t i)
{
	const struct grafana_series *s = &m->series[i];
	json_t *labels = json_object(), *values = json_array(), *o;
	struct stats st;

	if (labels == NULL || values == NULL ||
	    stats_of(m, i, i + 1, &st) != STATUS_OK) {
		json_decref(labels);
		json_decref(values);
		return NULL;
	}
	for (size_t j = 0; j < s->nlabels; j++)
		json_object_set_new(labels, s->labels[j].name,
				    json_string(s->labels[j].value));
	for (size_t j = 0; j < s->npoints; j++)
		json_array_append_new(
			values,
			json_pack("[f, o]", (double)s->points[j].t_ms / 1000.0,
				  num_json(s->points[j].v)));
	o = json_pack("{s:o, s:I, s:o, s:o}", "labels", labels, "points",
		      (json_int_t)s->npoints, "statistics", stats_json(&st),
		      "values", values);
	return o;
}

/* The unit: metadata's, or what the name's suffix says; "" if neither. */
static void
unit_of(const char *metric, const struct grafana_metadata *md, bool rate,
	char *out, size_t cap)
{
	static const struct {
		const char *suffix, *unit;
	} suffixes[] = {
		{"_seconds", "seconds"}, {"_milliseconds", "milliseconds"},
		{"_bytes", "bytes"},	 {"_ratio", "ratio"},
		{"_percent", "percent"}, {"_celsius", "celsius"},
		{"_meters", "meters"},	 {"_volts", "volts"},
		{"_amperes", "amperes"}, {"_joules", "joules"},
		{"_grams", "grams"},
	};
	char base[PROMQL_MAX_NAME + 1];
	size_t n;

	out[0] = '\0';
	snprintf(base, sizeof(base), "%s", metric);
	n = strlen(base);
	for (const char *cut = "_bucket\0_total\0_count\0_sum\0"; *cut;
	     cut += strlen(cut) + 1)
		if (n > strlen(cut) &&
		    strcmp(base + n - strlen(cut), cut) == 0) {
			base[n - strlen(cut)] = '\0';
			n = strlen(base);
		}
	if (md != NULL && md->found && md->unit[0] != '\0') {
		snprintf(out, cap, "%s", md->unit);
	} else {
		for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]);
		     i++) {
			size_t l = strlen(suffixes[i].suffix);

			if (n > l &&
			    strcmp(base + n - l, suffixes[i].suffix) == 0) {
				snprintf(out, cap, "%s", suffixes[i].unit);
				break;
			}
		}
	}
	if (rate) {
		size_t l = strlen(out);

		snprintf(out + l, cap - l, "%s", l > 0 ? "/s" : "per second");
	}
}

/* A grafana_error as the model's failure. */
static int
upstream_failure(struct grafana *g, const struct grafana_error *e,
		 struct failure *f)
{
	if (e->kind == GRAFANA_FAIL_CANCELLED)
		return STATUS_CANCELLED;
	if (e->kind == GRAFANA_FAIL_QUERY) {
		failf(f, "invalid_query", "%s", e->client);
		suggest(f, "Check metric_name, filters and the other "
			   "arguments; the message above is Prometheus's.");
	} else {
		failf(f, "grafana_unavailable", "%s", e->client);
		if (e->kind == GRAFANA_FAIL_REFUSED)
			suggest(f, "This needs an operator: the instance's "
				   "configuration (url, token, data source) "
				   "does not match the server.");
		else if (e->breaker == GRAFANA_BREAKER_OPEN)
			suggest(f, "The instance has been failing: wait for "
				   "the circuit breaker's cool-down and try "
				   "again; other tools (query_metrics, "
				   "query_traces) still answer.");
		else
			suggest(f, "Try again shortly, with a shorter range or "
				   "a larger step if the query is heavy; other "
				   "tools (query_metrics, query_traces) still "
				   "answer.");
		extra_set(f, "url",
			  json_string(e->url[0] != '\0' ? e->url
							: grafana_url(g)));
		extra_set(f, "circuit_breaker",
			  json_string(grafana_breaker_name(e->breaker)));
		if (e->http_status > 0)
			extra_set(f, "http_status",
				  json_integer(e->http_status));
	}
	extra_set(f, "instance", json_string(grafana_name(g)));
	return STATUS_INVALID;
}

/* ---- query_grafana_metrics ------------------------------------------------ */

/* Is the metric (or, for a percentile, its _bucket series) known?  A
 * failure is due when not; STATUS_OK when it is. */
static int
check_metric(struct grafana *g, const struct grafana_opts *o,
	     const struct req *q, struct failure *f)
{
	struct grafana_names *names = NULL;
	struct grafana_error e;
	char want[PROMQL_MAX_NAME + 16], base[PROMQL_MAX_NAME + 1];
	const char *best[CLOSEST_NAMES];
	json_t *list;
	size_t n;
	int rc;

	promql_histogram_base(q->metric, base, sizeof(base));
	snprintf(want, sizeof(want), "%s%s", q->percentile ? base : q->metric,
		 q->percentile ? "_bucket" : "");
	rc = grafana_metric_names(g, o, -1, &names, &e);
	if (rc == STATUS_OK && !grafana_names_has(names, want)) {
		/* maybe new since the list was cached */
		grafana_names_release(names);
		names = NULL;
		rc = grafana_metric_names(g, o, NAMES_RECHECK_MS, &names, &e);
	}
	if (rc != STATUS_OK)
		return upstream_failure(g, &e, f);
	if (grafana_names_has(names, want)) {
		grafana_names_release(names);
		return STATUS_OK;
	}
	/* a percentile needs a histogram: offer histograms */
	n = closest(q->percentile ? base : q->metric, names, q->percentile != 0,
		    best, CLOSEST_NAMES);
	if (q->percentile && grafana_names_has(names, q->metric))
		failf(f, "metric_not_found",
		      "Metric \"%s\" exists in instance \"%s\" but has no "
		      "histogram buckets (%s), which a percentile needs",
		      q->metric, grafana_name(g), want);
	else
		failf(f, "metric_not_found",
		      "Metric \"%s\" was not found in instance \"%s\" (%zu "
		      "metric names known)",
		      want, grafana_name(g), names->n);
	list = json_array();
	{
		char text[700] = "";
		size_t len = 0;

		for (size_t i = 0; i < n; i++) {
			size_t need = strlen(best[i]) + 2;

			json_array_append_new(list, json_string(best[i]));
			/* whole names only: a cut one could break UTF-8 */
			if (len + need < sizeof(text))
				len += (size_t)snprintf(
					text + len, sizeof(text) - len, "%s%s",
					i > 0 ? ", " : "", best[i]);
		}
		if (n > 0)
			suggest(f,
				"The closest existing %s are: %s. Call again "
				"with one of them.",
				q->percentile ? "histograms" : "metric names",
				text);
		else if (q->percentile)
			suggest(f, "The instance has no histogram metrics "
				   "(_bucket series): drop percentile.");
		else
			suggest(f, "The instance has no metrics yet: check "
				   "that Prometheus scrapes its targets.");
	}
	extra_set(f, "closest_metrics", list);
	extra_set(f, "instance", json_string(grafana_name(g)));
	grafana_names_release(names);
	return STATUS_INVALID;
}

static int
render(struct call *call, struct grafana *g, const struct req *q,
       const char *promql, const struct grafana_matrix *m,
       const struct grafana_metadata *md, json_t **result)
{
	struct buf b;
	struct stats all;
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX], step[32],
		unit[96];
	const char *label;
	json_t *sc = NULL, *series = NULL;
	size_t budget = call_text_budget(call), shown = 0;
	int rc;

	buf_init(&b, budget);
	timerange_format(q->start_ms, from, sizeof(from));
	timerange_format(q->end_ms, to, sizeof(to));
	promql_duration_format(q->step_ms, step, sizeof(step));
	unit_of(q->metric, md, q->rate && !q->percentile, unit, sizeof(unit));
	rc = stats_of(m, 0, m->nseries, &all);
	if (rc != STATUS_OK)
		goto out;
	label = q->percentile == 50   ? "p50"
		: q->percentile == 95 ? "p95"
		: q->percentile == 99 ? "p99"
		: q->rate	      ? "per-second rate"
				      : NULL;
	rc = buf_printf(&b, "%s (%s)\nTime: %s to %s\nData Points: %zu\n",
			q->metric, unit[0] ? unit : "unknown unit", from, to,
			m->npoints);
	if (rc == STATUS_OK && (label != NULL || q->agg))
		rc = buf_printf(&b, "Aggregation: %s%s%s\n", label ? label : "",
				label && q->agg ? ", " : "",
				promql_agg_name(q->agg));
	if (rc == STATUS_OK && md->found && md->type[0])
		rc = buf_printf(&b, "Type: %s\n", md->type);
	if (rc == STATUS_OK)
		rc = buf_printf(&b,
				"Series: %zu\nStep: %s\nInstance: %s (%s "
				"%s)\nQuery: %s\n",
				m->nseries, step, grafana_name(g),
				grafana_kind(g) == GRAFANA_KIND_GRAFANA
					? "Grafana"
					: "Prometheus",
				grafana_url(g), promql);
	if (rc == STATUS_OK && m->warning != NULL)
		rc = buf_printf(&b, "Warning from Prometheus: %s\n",
				m->warning);
	if (rc == STATUS_OK && m->nseries == 0)
		rc = buf_puts(&b, "\n" NO_DATA
				  "\nThe metric exists, but no samples match "
				  "the filters in this time range.\n");
	if (rc == STATUS_OK && m->nseries > 0)
		rc = buf_puts(&b, "\n");
	if (rc == STATUS_OK && m->nseries > 0)
		rc = stats_text(&b, &all, "", unit);
	if (rc == STATUS_OK && m->nseries == 1) {
		rc = buf_puts(&b, "\n");
		if (rc == STATUS_OK)
			rc = points_text(&b, &m->series[0], "", unit);
		shown = 1;
	}
	for (size_t i = 0; rc == STATUS_OK && m->nseries > 1 && i < m->nseries;
	     i++) {
		size_t mark = b.len;
		struct stats st;

		rc = stats_of(m, i, i + 1, &st);
		if (rc == STATUS_OK)
			rc = buf_printf(&b, "\nSeries %zu of %zu: ", i + 1,
					m->nseries);
		if (rc == STATUS_OK)
			rc = labels_text(&b, &m->series[i]);
		if (rc == STATUS_OK)
			rc = buf_printf(&b, "\n  Data Points: %zu\n",
					m->series[i].npoints);
		if (rc == STATUS_OK)
			rc = stats_text(&b, &st, "  ", unit);
		if (rc == STATUS_OK)
			rc = points_text(&b, &m->series[i], "  ", unit);
		if (rc == STATUS_OK && b.len + TAIL_ROOM > budget)
			rc = STATUS_LIMIT;
		if (rc == STATUS_LIMIT) {
			buf_rollback(&b, mark);
			rc = STATUS_OK;
			break;
		}
		shown = i + 1;
	}
	if (rc == STATUS_OK && shown < m->nseries)
		rc = buf_printf(&b,
				"\n%zu more series not shown here; "
				"structuredContent has every series, or narrow "
				"with filters or an aggregation.\n",
				m->nseries - shown);
	if (rc != STATUS_OK)
		goto out;
	series = json_array();
	if (series == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nseries; i++) {
		json_t *s = series_json(m, i);

		if (s == NULL || json_array_append_new(series, s) != 0) {
			rc = STATUS_NOMEM;
			goto out;
		}
	}
	sc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:I, s:I, "
		       "s:I, s:o, s:o}",
		       "instance", grafana_name(g), "metric", q->metric, "unit",
		       unit, "type", md->found ? md->type : "", "query", promql,
		       "time_range", "from", from, "to", to, "step_seconds",
		       (json_int_t)(q->step_ms / 1000), "points",
		       (json_int_t)m->npoints, "series_count",
		       (json_int_t)m->nseries, "statistics", stats_json(&all),
		       "series", series);
	series = NULL;
	if (sc == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (m->warning != NULL)
		json_object_set_new(sc, "warning", json_string(m->warning));
	rc = tool_result_buf(&b, sc, result);
	sc = NULL;
out:
	json_decref(series);
	json_decref(sc);
	buf_free(&b);
	return rc == STATUS_LIMIT ? STATUS_NOMEM : rc;
}

static int
query_grafana_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct instances *gi = call_instances(call);
	struct grafana_opts o = {.cancelled = call_cancelled_arg,
				 .arg = call,
				 .request_id = call_request_id(call)};
	struct failure f = {0};
	struct grafana_metadata md = {0};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	struct req q;
	struct buf promql;
	char base[PROMQL_MAX_NAME + 1], err[512];
	struct grafana_counts total = {0, 0};
	int rc;

	*result = NULL;
	buf_init(&promql, 16384);
	rc = parse_args(args, clock_wall_ms(), &q, &f);
	if (rc != STATUS_OK)
		goto fail;
	g = instances_get(gi, q.instance);
	if (g == NULL) {
		char names[512] = "";
		size_t len = 0;

		for (size_t i = 0;
		     i < instances_count(gi) && len < sizeof(names); i++)
			len += (size_t)snprintf(
				names + len, sizeof(names) - len, "%s\"%s\"",
				i > 0 ? ", " : "",
				grafana_name(instances_at(gi, i)));
		if (instances_count(gi) == 0) {
			failf(&f, "grafana_unavailable",
			      "No Grafana or Prometheus instance is configured "
			      "on this server");
			suggest(&f, "This needs an operator: add a "
				    "[prometheus.<name>] table with url, or a "
				    "[grafana.<name>] table with url, "
				    "datasource_uid and token_file, to the "
				    "config and restart.");
		} else {
			failf(&f, "invalid_query",
			      "instance \"%s\" is not configured",
			      clip(q.instance, 64, err, sizeof(err)));
			suggest(&f,
				"Use one of the configured instances: %s, or "
				"leave instance out for the default (%s).",
				names, grafana_name(instances_at(gi, 0)));
		}
		rc = STATUS_INVALID;
		goto fail;
	}
	{
		struct promql_spec spec = {
			.metric = q.metric,
			.filters = q.filters,
			.nfilters = q.nfilters,
			.agg = q.agg,
			.quantile = q.percentile / 100.0,
			.rate = q.rate,
			.window_ms = q.window_ms,
		};

		rc = promql_build(&spec, &promql, err, sizeof(err));
		if (rc == STATUS_INVALID) {
			failf(&f, "invalid_query", "%s", err);
			suggest(&f, "Fix the argument named above and call "
				    "again.");
			goto fail;
		}
		if (rc != STATUS_OK)
			goto out;
	}
	rc = check_metric(g, &o, &q, &f);
	if (rc != STATUS_OK)
		goto fail;
	/* the unit is a nicety: an answer without it still helps */
	if (grafana_metric_metadata(
		    g, &o,
		    q.percentile ? promql_histogram_base(q.metric, base,
							 sizeof(base))
				 : q.metric,
		    &md, &e) != STATUS_OK) {
		if (e.kind == GRAFANA_FAIL_CANCELLED) {
			rc = STATUS_CANCELLED;
			goto out;
		}
		memset(&md, 0, sizeof(md));
	}
	rc = grafana_query_range(g, &o, promql.data, q.start_ms, q.end_ms,
				 q.step_ms, PROMQL_MAX_POINTS, &m, &total, &e);
	if (rc == STATUS_LIMIT) {
		int64_t nser = total.series > 0 ? (int64_t)total.series : 1;
		char s[40] = "";

		/* a step that fits the series into the limit, if any does */
		if (PROMQL_MAX_POINTS / nser >= 2)
			promql_duration_format(
				step_for(q.end_ms - q.start_ms,
					 PROMQL_MAX_POINTS / nser),
				s, sizeof(s));
		failf(&f, "invalid_query",
		      "The result holds %zu points in %zu series, over the "
		      "limit of %d points",
		      total.points, total.series, PROMQL_MAX_POINTS);
		suggest(&f,
			"Narrow it: add filters or an aggregation (avg, max, "
			"min, sum) to get fewer series%s%s%s, or a shorter "
			"time range.",
			s[0] ? ", a larger step (at least " : "", s,
			s[0] ? ")" : "");
		extra_set(&f, "points", json_integer((json_int_t)total.points));
		extra_set(&f, "series_count",
			  json_integer((json_int_t)total.series));
		extra_set(&f, "limit", json_integer(PROMQL_MAX_POINTS));
		rc = STATUS_INVALID;
		goto fail;
	}
	if (rc != STATUS_OK) {
		if (rc == STATUS_NOMEM)
			goto out;
		rc = upstream_failure(g, &e, &f);
		if (rc == STATUS_CANCELLED)
			goto out;
		if (e.kind == GRAFANA_FAIL_QUERY)
			extra_set(&f, "query", json_string(promql.data));
		goto fail;
	}
	rc = render(call, g, &q, promql.data, m, &md, result);
	goto out;
fail:
	if (rc == STATUS_INVALID) {
		*result = failure_result(&f);
		rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
out:
	json_decref(f.extra);
	grafana_matrix_free(m);
	buf_free(&promql);
	return rc;
}

const struct tool_handler grafana_tool_handlers[] = {
	{"query_grafana_metrics", query_grafana_metrics},
	{NULL, NULL},
};

/*
 * tool_query_otlp.c - the "query" set's plumbing tools over raw OTLP data:
 * query_telemetry_metrics (metric points per step and attribute group, or
 * without a name the metric names of the range) and
 * query_telemetry_spans (a search of OTLP spans).  Arguments are checked
 * here, the queries live in lib/telemetry/pointquery and spansearch, the text and structured
 * answers are built here.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/pointquery.h"
#include "telemetry/spansearch.h"
#include "telemetry/spanquery.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_query_otlp.h"

/* {NULL, NULL}-terminated; bound in server.c's handler_tables. */

/* Text kept back from the budget ([tools] max_answer_chars) for the
 * closing lines; structured content carries every point. */
#define TAIL_ROOM 512
/* series drawn as tables in the text; the rest are only counted there */
#define TEXT_SERIES_MAX 20
/* names offered after "did you mean" */
#define SUGGEST_MAX 5

/* The attributes argument as compact JSON for jsonb @> (NULL when absent
 * or empty).  The schema allows string values only. */
static int
attrs_json(const json_t *args, char **out)
{
	const json_t *a = json_object_get(args, "attributes");

	*out = NULL;
	if (!json_is_object(a) || json_object_size(a) == 0)
		return STATUS_OK;
	*out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
	return *out != NULL ? STATUS_OK : STATUS_NOMEM;
}

/*
 * Leases a connection under the call's cancel token.  STATUS_OK with *c;
 * otherwise *result is set to an isError answer (or the status is
 * STATUS_CANCELLED / STATUS_NOMEM, to return as is).
 */
static int
lease(struct call *call, struct pg_conn **c, json_t **result)
{
	char why[320];
	int rc = tool_conn_get(call, c, why, sizeof(why), NULL);

	if (rc == STATUS_UNSUPPORTED) /* why lacks the prefix then */
		*result = tool_result_error("telemetry store unavailable: %s",
					    why);
	else if (rc == STATUS_CANCELLED || call_cancelled(call))
		return STATUS_CANCELLED; /* *c, if leased, is the caller's */
	else if (rc == STATUS_OK)
		return STATUS_OK;
	else
		*result = tool_result_error("%s", why);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

/* What to do about a statement timeout. */
#define FILTER_HINT "narrow time_range or add filters (service, attributes)"

/* The filters given, for headers and "nothing found" answers:
 * " (service=a, attributes={...})" or "".  A filter too long for the
 * budget is left out (tool_fit). */
static void
describe_filters(struct buf *b, const json_t *args, const char *const *keys,
		 size_t nkeys)
{
	bool any = false;

	for (size_t i = 0; i < nkeys; i++) {
		const json_t *v = json_object_get(args, keys[i]);
		char *j = NULL;

		if (v == NULL || json_is_null(v) ||
		    (json_is_object(v) && json_object_size(v) == 0) ||
		    (json_is_array(v) && json_array_size(v) == 0))
			continue;
		if (json_is_string(v)) {
			buf_printf(b, "%s%s=%s", any ? ", " : " (", keys[i],
				   json_string_value(v));
		} else {
			j = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS |
						  JSON_ENCODE_ANY);
			if (j != NULL)
				buf_printf(b, "%s%s=%s", any ? ", " : " (",
					   keys[i], j);
			else
				buf_set_error(b, STATUS_NOMEM);
			free(j);
		}
		any = tool_fit(b) == STATUS_OK || any;
	}
	if (any) {
		buf_puts(b, ")");
		tool_fit(b);
	}
}

/* ---- query_telemetry_metrics ------------------------------------------ */

static const char *const metric_filter_keys[] = {"service", "attributes",
						 "group_by"};

/* A value for text: integers whole, others with 6 significant digits. */
static void
format_value(double v, char *buf, size_t cap)
{
	if (fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, "%.6g", v);
}

/* A step's start for the text table: "HH:MM" (":SS" for steps under a
 * minute), with "MM-DD " when the range spans more than one UTC day. */
static void
format_time(int64_t ms, bool date, bool seconds, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	if (date)
		snprintf(buf, cap, "%02d-%02d %02d:%02d", tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min);
	else if (seconds)
		snprintf(buf, cap, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min,
			 tm.tm_sec);
	else
		snprintf(buf, cap, "%02d:%02d", tm.tm_hour, tm.tm_min);
}

/* "did you mean" for an unknown metric name (or a service without any
 * metric), as an isError result in *result. */
static int
unknown_metric(struct pg_conn *c, const char *name, const char *service,
	       json_t **result, struct pg_error *err)
{
	struct pointquery_names *nm = NULL;
	const char *best[SUGGEST_MAX];
	const char *what = name;
	struct buf b;
	size_t n;
	int rc;

	buf_init(&b, 4096);
	rc = pointquery_metric_names(c, service, &nm, err);
	if (rc != STATUS_OK)
		goto out;
	if (nm->n == 0 && service != NULL) {
		/* the service has no metrics at all: which services do? */
		pointquery_names_free(nm);
		nm = NULL;
		rc = pointquery_metric_services(c, &nm, err);
		if (rc != STATUS_OK)
			goto out;
		what = service;
		buf_printf(&b,
			   "service \"%s\" has no metric points in the "
			   "telemetry store",
			   service);
	} else if (service != NULL) {
		buf_printf(&b, "unknown metric \"%s\" for service \"%s\"", name,
			   service);
	} else {
		buf_printf(&b, "unknown metric \"%s\"", name);
	}
	/* the names come from the store: one too long for the message is
	 * left out (tool_fit), the arguments' are short */
	n = spanquery_suggest(what, nm->names, nm->n, best, SUGGEST_MAX);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, "%s\"%s\"",
			   i == 0	? ": did you mean "
			   : i + 1 == n ? " or "
					: ", ",
			   best[i]);
		tool_fit(&b);
	}
	if (n > 0) {
		buf_puts(&b, "?");
	} else if (nm->n > 0) {
		/* nothing close: show some that exist */
		if (what == service)
			buf_puts(&b, "; services with metric points: ");
		else if (service != NULL)
			buf_printf(&b,
				   "; metrics of service \"%s\": ", service);
		else
			buf_puts(&b, "; metrics stored: ");
		for (size_t i = 0; i < nm->n && i < SUGGEST_MAX; i++) {
			buf_printf(&b, "%s\"%s\"", i > 0 ? ", " : "",
				   nm->names[i]);
			tool_fit(&b);
		}
		if (nm->n > SUGGEST_MAX)
			buf_printf(&b, " and %zu more", nm->n - SUGGEST_MAX);
	} else {
		buf_puts(&b, "; no metric points are stored yet "
			     "(send them to /v1/metrics)");
	}
	/* a note above that did not fit left too little room for this
	 * longer one too: one tool_fit serves both */
	if (what == service)
		buf_puts(&b, " (or leave service out)");
	else
		buf_puts(&b, ". Call query_telemetry_metrics without a name "
			     "to list the metric names");
	tool_fit(&b);
	if ((rc = buf_error(&b)) != STATUS_OK)
		goto out;
	*result = tool_result_error("%s", b.data != NULL ? b.data : "");
	rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
out:
	pointquery_names_free(nm);
	buf_free(&b);
	return rc;
}

/*
 * The service a service argument names among those with metric points:
 * given itself when it has points (or the names cannot be read), else the
 * one name it means as people write it (spanquery_resolve), with note
 * "service: api-gateway (from \"api gateway\")" for the answer, as
 * tool_service_name does for span services.  The result is given or out.
 */
static const char *
metric_service(struct pg_conn *c, const char *given, char *out, size_t cap,
	       char *note, size_t note_cap)
{
	struct pointquery_names *nm = NULL;
	struct pg_error err;
	const char *res = given;
	size_t k;

	note[0] = '\0';
	if (given == NULL ||
	    pointquery_metric_services(c, &nm, &err) != STATUS_OK)
		return given;
	for (k = 0; k < nm->n && strcmp(nm->names[k], given) != 0; k++)
		;
	if (k == nm->n && (k = spanquery_resolve(given, nm->names, nm->n)) !=
				  SPANQUERY_NO_NAME) {
		snprintf(out, cap, "%s", nm->names[k]);
		snprintf(note, note_cap, "service: %s (from \"%s\")", out,
			 given);
		res = out;
	}
	pointquery_names_free(nm);
	return res;
}

/* labels: {key: value | null} of series s, [redact] applied. */
static json_t *
labels_json(const struct pointquery_series *s, const char *const *keys,
	    size_t nk, const struct redact *r)
{
	json_t *o = json_object();

	for (size_t i = 0; o != NULL && i < nk; i++)
		if (json_object_set_new(o, keys[i],
					s->labels[i] != NULL
						? json_string(s->labels[i])
						: json_null()) != 0) {
			json_decref(o);
			return NULL;
		}
	if (redact_json(r, o) != STATUS_OK) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A label value as the text shows it: hidden under a sensitive key, else
 * with [redact] value patterns applied.  Free *owned afterwards. */
static const char *
label_shown(const struct redact *r, const char *key, const char *v,
	    char **owned)
{
	*owned = NULL;
	if (v == NULL)
		return "(none)";
	if (redact_key(r, key))
		return REDACT_MARK;
	*owned = redact_text(r, v);
	return *owned != NULL ? *owned : v;
}

static json_t *
series_json(const struct pointquery_metric *m, const char *const *keys,
	    size_t nk, const struct redact *r)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr != NULL && i < m->n_series; i++) {
		const struct pointquery_series *s = &m->series[i];
		json_t *pts = json_array(), *one;
		struct pointquery_stats st;

		for (size_t k = 0; pts != NULL && k < s->n; k++) {
			char t[TIMERANGE_FORMAT_MAX];

			timerange_format(s->t_ms[k], t, sizeof(t));
			if (json_array_append_new(
				    pts, json_pack("[s, f]", t, s->v[k])) !=
			    0) {
				json_decref(pts);
				pts = NULL;
			}
		}
		pointquery_series_stats(s, &st);
		one = pts != NULL
			      ? json_pack("{s:o*, s:o, s:{s:f, s:f, s:f, s:f}}",
					  "labels", labels_json(s, keys, nk, r),
					  "points", pts, "stats", "min", st.min,
					  "max", st.max, "mean", st.mean,
					  "last", st.last)
			      : NULL;
		if (one == NULL || json_object_size(one) != 3 ||
		    json_array_append_new(arr, one) != 0) {
			json_decref(one);
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* Text kept free after each series or row for the closing lines. */
#define CLOSING_ROOM 256

/*
 * Whether the piece (a series, a row) written to b since mark leaves
 * CLOSING_ROOM; if not it is taken back.  Out of memory stays in b: the
 * call fails.
 */
static bool
piece_kept(struct buf *b, size_t mark)
{
	if (buf_error(b) == STATUS_NOMEM)
		return false;
	if (buf_error(b) == STATUS_OK && b->len + CLOSING_ROOM <= b->max)
		return true;
	buf_rollback(b, mark);
	return false;
}

/* The unit of the values shown: the metric's, per second for a rate,
 * none for counts and for "1"; UCUM annotations lose their braces
 * ("{order}/s" reads "order/s"). */
static void
value_unit(const struct pointquery_metric *m, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	if (m->agg == POINTQUERY_AGG_COUNT)
		return;
	if (strcmp(m->unit, "1") != 0)
		for (const char *p = m->unit; *p != '\0' && n + 1 < cap; p++)
			if (*p != '{' && *p != '}')
				buf[n++] = *p;
	buf[n] = '\0';
	if (m->agg == POINTQUERY_AGG_RATE)
		snprintf(buf + n, cap - n, "/s");
}

/* "  min 0.46 s, max 1.8 s, mean 1.13 s, last 1.8 s" for series s. */
static void
stats_text(struct buf *b, const struct pointquery_series *s, const char *unit)
{
	struct pointquery_stats st;
	const double *v[] = {&st.min, &st.max, &st.mean, &st.last};
	static const char *const what[] = {"min", "max", "mean", "last"};

	pointquery_series_stats(s, &st);
	if (s->n == 0)
		return;
	for (size_t i = 0; i < 4; i++) {
		char x[40];

		format_value(*v[i], x, sizeof(x));
		buf_printf(b, "%s%s %s%s%s", i == 0 ? "  " : ", ", what[i], x,
			   unit[0] != '\0' ? " " : "", unit);
	}
	buf_puts(b, "\n");
	tool_fit(b);
}

/*
 * The text answer: a header, then per series a label line and a table,
 * while the budget (b's maximum) lasts.  A piece that does not fit is left
 * out (tool_fit): a label too long, or the closing lines.
 */
static void
metric_text(struct buf *b, const json_t *args, const char *name,
	    const struct pointquery_metric *m, const char *const *keys,
	    size_t nk, int64_t from_ms, int64_t to_ms, int64_t step_s,
	    const char *rdesc, const struct redact *r)
{
	char step[32], latest[TIMERANGE_FORMAT_MAX], vunit[64];
	bool date = (from_ms / 86400000) != ((to_ms - 1) / 86400000);
	size_t shown = 0;

	value_unit(m, vunit, sizeof(vunit));

	if (step_s % 3600 == 0)
		snprintf(step, sizeof(step), "%" PRId64 "h", step_s / 3600);
	else if (step_s % 60 == 0)
		snprintf(step, sizeof(step), "%" PRId64 "m", step_s / 60);
	else
		snprintf(step, sizeof(step), "%" PRId64 "s", step_s);
	if (m->n_series == 0) {
		timerange_format(m->latest_ms, latest, sizeof(latest));
		buf_printf(b, "No metric points found for %s in %s", name,
			   rdesc);
		tool_fit(b);
		describe_filters(b, args, metric_filter_keys,
				 sizeof(metric_filter_keys) /
					 sizeof(metric_filter_keys[0]));
		buf_printf(b,
			   ". Its newest point is at %s: widen time_range or "
			   "change the filters.\n",
			   latest);
		tool_fit(b);
		return;
	}
	buf_printf(b, "%s (%s%s%s%s), %s per %s, %s", name, m->kind,
		   m->unit[0] != '\0' ? ", unit " : "", m->unit,
		   m->temporality == 1	 ? ", delta"
		   : m->temporality == 2 ? ", cumulative"
					 : "",
		   pointquery_agg_name(m->agg), step, rdesc);
	tool_fit(b);
	describe_filters(b, args, metric_filter_keys,
			 sizeof(metric_filter_keys) /
				 sizeof(metric_filter_keys[0]));
	buf_printf(b, ": %zu series\n", m->n_series);
	tool_fit(b);
	for (size_t i = 0; i < m->n_series && shown < TEXT_SERIES_MAX; i++) {
		const struct pointquery_series *s = &m->series[i];
		size_t mark = b->len;

		if (buf_error(b) != STATUS_OK)
			break; /* out of memory: the call fails */

		if (nk > 0) {
			buf_puts(b, "\n[");
			tool_fit(b);
			for (size_t k = 0; k < nk; k++) {
				char *owned;

				buf_printf(b, "%s%s=%s", k > 0 ? ", " : "",
					   keys[k],
					   label_shown(r, keys[k], s->labels[k],
						       &owned));
				free(owned);
				tool_fit(b);
			}
			buf_puts(b, "]\n");
		} else {
			buf_puts(b, "\n");
		}
		tool_fit(b);
		stats_text(b, s, vunit);
		for (size_t k = 0; k < s->n; k++) {
			char t[32], v[40];

			format_time(s->t_ms[k], date, step_s < 60, t,
				    sizeof(t));
			format_value(s->v[k], v, sizeof(v));
			if (buf_printf(b, "  %s  %s\n", t, v) != STATUS_OK)
				break;
		}
		/* a point that did not fit left less room */
		if (!piece_kept(b, mark))
			break;
		shown++;
	}
	if (shown < m->n_series) {
		buf_printf(b,
			   "\n%zu more series not shown here (they are in the "
			   "structured content)%s\n",
			   m->n_series - shown,
			   m->truncated ? "; more matched than returned" : "");
		tool_fit(b);
	}
	if (m->truncated) {
		buf_printf(b,
			   "\nTruncated: at most %d series or %d points are "
			   "returned; add filters or fewer group_by keys.\n",
			   POINTQUERY_MAX_SERIES, POINTQUERY_MAX_CELLS);
		tool_fit(b);
	}
}

/*
 * The answer to a query_telemetry_metrics store call that failed with rc:
 * a bad request's or an inapplicable aggregation's message (lib's
 * err->client names the field), else tool_store_failed's.
 */
static int
metrics_failed(struct call *call, int rc, struct pg_error *perr,
	       json_t **result)
{
	if (rc == STATUS_UNSUPPORTED || rc == STATUS_INVALID) {
		*result = tool_result_error("%s", perr->client);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	return tool_store_failed(call, "query_telemetry_metrics", rc, perr,
				 FILTER_HINT, result);
}

/* names listed when the call gives no limit */
#define LIST_DEFAULT 100

static const char *const list_filter_keys[] = {"service", "match"};

/* The listing's text: a header, a table of names, a note on the rest. */
static void
list_text(struct buf *b, const json_t *args, const struct pointquery_list *l,
	  int64_t from_ms, int64_t to_ms, const char *rdesc)
{
	size_t shown = 0;

	if (l->total == 0) {
		buf_printf(b, "No metric points found in %s", rdesc);
		tool_fit(b);
		describe_filters(b, args, list_filter_keys,
				 sizeof(list_filter_keys) /
					 sizeof(list_filter_keys[0]));
		buf_puts(b, ": widen time_range or change the filters.\n");
		tool_fit(b);
		return;
	}
	buf_printf(b, "Metrics with points in %s", rdesc);
	tool_fit(b);
	describe_filters(b, args, list_filter_keys,
			 sizeof(list_filter_keys) /
				 sizeof(list_filter_keys[0]));
	buf_printf(b, ": %zu\n", l->total);
	if (to_ms - from_ms > (int64_t)POINTQUERY_SERIES_WINDOW_S * 1000)
		buf_puts(b, "(series: those seen in each metric's newest hour "
			    "of points)\n");
	buf_puts(b, "\n| name | type | unit | series | last seen |\n"
		    "|---|---|---|---|---|\n");
	tool_fit(b);
	for (size_t i = 0; i < l->n; i++) {
		const struct pointquery_listed *m = &l->metrics[i];
		char last[TIMERANGE_FORMAT_MAX];
		size_t mark = b->len;

		timerange_format(m->last_ms, last, sizeof(last));
		buf_printf(b, "| %s | %s | %s | %" PRId64 " | %s |\n", m->name,
			   m->kind, m->unit, m->series, last);
		if (!piece_kept(b, mark))
			break;
		shown++;
	}
	if (shown < l->total) {
		buf_printf(b,
			   "\n%zu more not shown%s: narrow with match or "
			   "service, or raise limit (at most %d).\n",
			   l->total - shown,
			   shown < l->n ? " here (the listed ones are in the "
					  "structured content)"
					: "",
			   POINTQUERY_LIST_MAX);
		tool_fit(b);
	}
	buf_puts(b, "\nGive name for a metric's points over time.\n");
	tool_fit(b);
}

static json_t *
list_json(const struct pointquery_list *l)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr != NULL && i < l->n; i++) {
		const struct pointquery_listed *m = &l->metrics[i];
		char last[TIMERANGE_FORMAT_MAX];

		timerange_format(m->last_ms, last, sizeof(last));
		if (json_array_append_new(
			    arr,
			    json_pack("{s:s, s:s, s:s, s:I, s:s}", "name",
				      m->name, "kind", m->kind, "unit", m->unit,
				      "series", (json_int_t)m->series,
				      "last_seen", last)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* query_telemetry_metrics without a name: the metric names in the range. */
static int
list_metrics(struct call *call, const json_t *args, json_t **result)
{
	static const char *const point_args[] = {"aggregation", "step",
						 "group_by", "attributes"};
	const json_t *lim = json_object_get(args, "limit");
	struct pointquery_list_req r = {.limit = LIST_DEFAULT};
	struct pointquery_list *l = NULL;
	struct pg_conn *c = NULL;
	struct pg_error perr;
	struct timerange tr;
	char svc[256], svc_note[320]; /* the service as resolved */
	char err[512], rdesc[TIMERANGE_DESCRIBE_MAX];
	json_t *sc = NULL, *arr;
	struct buf b;
	int64_t now = clock_wall_ms();
	int rc;

	buf_init(&b, call_text_budget(call));
	for (size_t i = 0; i < sizeof(point_args) / sizeof(point_args[0]); i++)
		if (json_object_get(args, point_args[i]) != NULL) {
			*result = tool_result_error(
				"%s needs name: give a metric name, or "
				"leave %s out to list the metric names",
				point_args[i], point_args[i]);
			goto done;
		}
	if (lim != NULL) {
		json_int_t n = json_integer_value(lim);

		if (!json_is_integer(lim) || n < 1 || n > POINTQUERY_LIST_MAX) {
			*result = tool_result_error(
				"limit must be an integer from 1 to %d",
				POINTQUERY_LIST_MAX);
			goto done;
		}
		r.limit = (size_t)n;
	}
	if (tool_time_range(args, "1h", TOOL_RANGE_FROM_TO, now, &tr, err,
			    sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto done;
	}
	if ((rc = lease(call, &c, result)) != STATUS_OK || c == NULL)
		goto out;
	r.service = metric_service(c, tool_arg_str(args, "service"), svc,
				   sizeof(svc), svc_note, sizeof(svc_note));
	if (svc_note[0] != '\0')
		buf_printf(&b, "%s\n\n", svc_note);
	r.match = tool_arg_str(args, "match");
	r.from_ms = tr.from_ms;
	r.to_ms = tr.to_ms;
	rc = pointquery_list(c, &r, &l, &perr);
	if (rc != STATUS_OK) {
		rc = metrics_failed(call, rc, &perr, result);
		goto out;
	}
	pg_release(c);
	c = NULL;
	timerange_describe(&tr, now, rdesc, sizeof(rdesc));
	list_text(&b, args, l, tr.from_ms, tr.to_ms, rdesc);
	arr = list_json(l);
	sc = arr != NULL ? json_pack("{s:o, s:o, s:I, s:b}", "time_range",
				     tool_range_json(&tr), "metrics", arr,
				     "total", (json_int_t)l->total, "truncated",
				     l->n < l->total)
			 : NULL;
	rc = sc != NULL ? tool_result_buf(&b, sc, result) : STATUS_NOMEM;
	goto out;
done:
	rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
out:
	pg_release(c);
	pointquery_list_free(l);
	buf_free(&b);
	return rc;
}

static int
query_telemetry_metrics(struct call *call, const json_t *args, json_t **result)
{
	const char *name = tool_arg_str(args, "name"),
		   *service = tool_arg_str(args, "service"),
		   *agg_s = tool_arg_str(args, "aggregation");
	const json_t *gb = json_object_get(args, "group_by");
	const char *keys[POINTQUERY_MAX_GROUP_BY];
	struct pointquery_metric_req r = {0};
	struct pointquery_metric *m = NULL;
	struct pg_conn *c = NULL;
	struct pg_error perr;
	struct timerange tr;
	char err[512], rdesc[TIMERANGE_DESCRIBE_MAX], *attrs = NULL;
	char svc[256], svc_note[320]; /* the service as resolved */
	json_t *sc = NULL, *series = NULL;
	struct buf b;
	int64_t now = clock_wall_ms(), step_s;
	size_t nk = 0;
	int rc, agg = POINTQUERY_AGG_AUTO;

	*result = NULL;
	buf_init(&b, call_text_budget(call));
	if (name == NULL)
		return list_metrics(call, args, result);
	if (json_object_get(args, "match") != NULL) {
		*result = tool_result_error(
			"match lists names: leave it out when name is given");
		goto done;
	}
	if (agg_s != NULL && (agg = pointquery_agg_parse(agg_s)) <= 0) {
		*result = tool_result_error(
			"aggregation \"%.40s\" is not known: use avg, sum, "
			"min, max, count, last, rate, p50, p95 or p99",
			agg_s);
		goto done;
	}
	if (tool_time_range(args, "1h", TOOL_RANGE_FROM_TO, now, &tr, err,
			    sizeof(err)) != STATUS_OK ||
	    pointquery_step(tr.from_ms, tr.to_ms, tool_arg_str(args, "step"),
			    &step_s, err, sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto done;
	}
	if (json_is_array(gb)) {
		if (json_array_size(gb) > POINTQUERY_MAX_GROUP_BY) {
			*result = tool_result_error(
				"group_by has %zu keys: use at most %d",
				json_array_size(gb), POINTQUERY_MAX_GROUP_BY);
			goto done;
		}
		for (nk = 0; nk < json_array_size(gb); nk++) {
			keys[nk] = json_string_value(json_array_get(gb, nk));
			if (keys[nk] == NULL || keys[nk][0] == '\0') {
				*result = tool_result_error(
					"group_by[%zu] must be a non-empty "
					"attribute key, e.g. \"http.route\"",
					nk);
				goto done;
			}
		}
	}
	if (attrs_json(args, &attrs) != STATUS_OK) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if ((rc = lease(call, &c, result)) != STATUS_OK || c == NULL)
		goto out;
	service = metric_service(c, service, svc, sizeof(svc), svc_note,
				 sizeof(svc_note));
	if (svc_note[0] != '\0')
		buf_printf(&b, "%s\n\n", svc_note);
	r.name = name;
	r.service = service;
	r.attributes_json = attrs;
	r.agg = (enum pointquery_agg)agg;
	r.from_ms = tr.from_ms;
	r.to_ms = tr.to_ms;
	r.step_s = step_s;
	r.group_by = keys;
	r.n_group_by = nk;
	rc = pointquery_metrics(c, &r, &m, &perr);
	/* an unknown name: the answer suggests close ones */
	if (rc == STATUS_NOTFOUND &&
	    (rc = unknown_metric(c, name, service, result, &perr)) == STATUS_OK)
		goto out;
	if (rc != STATUS_OK) {
		rc = metrics_failed(call, rc, &perr, result);
		goto out;
	}
	pg_release(c);
	c = NULL;

	timerange_describe(&tr, now, rdesc, sizeof(rdesc));
	metric_text(&b, args, name, m, keys, nk, tr.from_ms, tr.to_ms, step_s,
		    rdesc, call_redact(call));
	series = series_json(m, keys, nk, call_redact(call));
	sc = series != NULL
		     ? json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:o, s:b}",
				 "name", name, "unit", m->unit, "kind", m->kind,
				 "aggregation", pointquery_agg_name(m->agg),
				 "time_range", tool_range_json(&tr), "step_s",
				 (json_int_t)step_s, "series", series,
				 "truncated", m->truncated)
		     : NULL;
	if (sc != NULL && m->n_series == 0) {
		char latest[TIMERANGE_FORMAT_MAX];

		timerange_format(m->latest_ms, latest, sizeof(latest));
		if (json_object_set_new(sc, "latest_point",
					json_string(latest)) != 0) {
			json_decref(sc);
			sc = NULL;
		}
	}
	rc = sc != NULL ? tool_result_buf(&b, sc, result) : STATUS_NOMEM;
	goto out;
done:
	rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
out:
	pg_release(c);
	pointquery_metric_free(m);
	free(attrs);
	buf_free(&b);
	return rc;
}

/* ---- query_telemetry_spans -------------------------------------------- */

static const char *const span_filter_keys[] = {
	"service", "name",	 "trace_id",	    "session_id",
	"status",  "attributes", "min_duration_ms",
};

/* One span, [redact] applied to its attributes and status message. */
static json_t *
span_json(const struct spansearch_span *sp, const struct redact *r)
{
	char start[TIMERANGE_FORMAT_MAX];
	json_t *attrs, *o, *msg;

	timerange_format(sp->start_us / 1000, start, sizeof(start));
	attrs = json_loads(sp->attributes_json, 0, NULL);
	if (!json_is_object(attrs)) {
		json_decref(attrs);
		attrs = json_object();
	}
	if (redact_json(r, attrs) != STATUS_OK) {
		json_decref(attrs);
		return NULL;
	}
	o = json_pack("{s:s, s:s, s:s?, s:s, s:s, s:s, s:s, s:f, s:s, s:o}",
		      "trace_id", sp->trace_id, "span_id", sp->span_id,
		      "parent_span_id",
		      sp->parent_span_id[0] != '\0' ? sp->parent_span_id : NULL,
		      "service", sp->service, "name", sp->name, "kind",
		      otlp_kind_name(sp->kind), "start", start, "duration_ms",
		      (double)sp->duration_ns / 1e6, "status",
		      otlp_status_name(sp->status), "attributes", attrs);
	if (o == NULL)
		return NULL;
	msg = sp->status_message != NULL && sp->status_message[0] != '\0'
		      ? json_string(sp->status_message)
		      : NULL;
	if (msg != NULL && redact_json(r, msg) != STATUS_OK) {
		json_decref(msg);
		json_decref(o);
		return NULL;
	}
	if ((msg != NULL &&
	     json_object_set_new(o, "status_message", msg) != 0) ||
	    (sp->attrs_cut && json_object_set_new(o, "attributes_truncated",
						  json_true()) != 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One query_telemetry_spans call across its phases; the handler frees
 * it. */
struct search_call {
	struct call *call;
	int64_t now;
	struct spansearch_req r;
	struct timerange tr; /* when r.has_range */
	char *attrs;	     /* r.attributes_json */
	struct spansearch_result *s;
	struct redact_kept kept;
	json_t *arr; /* every span, structured */
	struct buf b;
};

/* Arguments: sort, status, min_duration_ms and limit; *result is the
 * answer when one is bad. */
static int
search_filters(struct search_call *x, const json_t *args, json_t **result)
{
	const char *status = tool_arg_str(args, "status"),
		   *sort = tool_arg_str(args, "sort");
	const json_t *mind = json_object_get(args, "min_duration_ms"),
		     *limit = json_object_get(args, "limit");
	struct spansearch_req *r = &x->r;

	r->slowest = sort != NULL && strcmp(sort, "slowest") == 0;
	if (sort != NULL && !r->slowest && strcmp(sort, "recent") != 0) {
		*result = tool_result_error(
			"sort must be \"recent\" or \"slowest\"");
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	if (status != NULL) {
		for (r->status = 0; r->status < 3; r->status++)
			if (strcmp(status, otlp_status_name(r->status)) == 0)
				break;
		if (r->status == 3) {
			*result = tool_result_error(
				"status must be \"ok\", \"error\" or "
				"\"unset\"");
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
	}
	if (json_is_number(mind)) {
		double ms = json_number_value(mind);

		if (!(ms >= 0 && ms <= 86400000.0)) {
			*result = tool_result_error(
				"min_duration_ms must be a number of "
				"milliseconds from 0 to 86400000");
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		r->min_duration_ns = (int64_t)llround(ms * 1e6);
	}
	if (json_is_integer(limit)) {
		json_int_t l = json_integer_value(limit);

		if (l < 1 || l > SPANSEARCH_MAX_SPANS) {
			*result = tool_result_error(
				"limit must be 1..%d: ask for fewer spans and "
				"narrow the filters",
				SPANSEARCH_MAX_SPANS);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		r->limit = (size_t)l;
	}
	return STATUS_OK;
}

/* Arguments: the search (x->r) from args; *result is the answer when
 * they are bad. */
static int
search_args(struct search_call *x, const json_t *args, json_t **result)
{
	struct spansearch_req *r = &x->r;
	char err[512];
	int rc;

	r->service = tool_arg_str(args, "service");
	r->name = tool_arg_str(args, "name");
	r->trace_id = tool_arg_str(args, "trace_id");
	r->session_id = tool_arg_str(args, "session_id");
	r->min_duration_ns = -1;
	r->status = -1;
	r->limit = 50;
	if ((rc = search_filters(x, args, result)) != STATUS_OK ||
	    *result != NULL)
		return rc;
	/* a trace id alone searches everything stored: a trace is small and
	 * its start is often unknown to the caller */
	r->has_range = r->trace_id == NULL || tool_time_range_given(args);
	if (r->has_range) {
		if (tool_time_range(args, "1h", TOOL_RANGE_FROM_TO, x->now,
				    &x->tr, err, sizeof(err)) != STATUS_OK) {
			*result = tool_result_error("%s", err);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		r->from_ms = x->tr.from_ms;
		r->to_ms = x->tr.to_ms;
	}
	if (attrs_json(args, &x->attrs) != STATUS_OK)
		return STATUS_NOMEM;
	r->attributes_json = x->attrs;
	return STATUS_OK;
}

/* Fetch: the spans, on a connection held for the one statement; *result
 * is the answer when the store or the search fails. */
static int
search_fetch(struct search_call *x, json_t **result)
{
	struct pg_conn *c = NULL;
	struct pg_error perr;
	int rc;

	if ((rc = lease(x->call, &c, result)) != STATUS_OK || c == NULL)
		goto out;
	rc = spansearch_run(c, &x->r, &x->s, &perr);
	if (rc == STATUS_INVALID && perr.sqlstate[0] == '\0') {
		*result = tool_result_error("%s", perr.client);
		rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
	} else if (rc != STATUS_OK) {
		rc = tool_store_failed(x->call, "query_telemetry_spans", rc,
				       &perr, FILTER_HINT, result);
	}
out:
	pg_release(c);
	return rc;
}

/* Text: the line above the spans, or the one that says none matched. */
static void
search_head(struct search_call *x, const json_t *args)
{
	char rdesc[TIMERANGE_DESCRIBE_MAX];
	size_t n = x->s->n;

	if (x->r.has_range)
		timerange_describe(&x->tr, x->now, rdesc, sizeof(rdesc));
	else
		snprintf(rdesc, sizeof(rdesc), "all stored data");
	if (n == 0)
		buf_printf(&x->b, "No spans found in %s", rdesc);
	else
		buf_printf(&x->b, "%zu OTLP span%s, %s first, %s", n,
			   n == 1 ? "" : "s",
			   x->r.slowest ? "slowest" : "newest", rdesc);
	describe_filters(&x->b, args, span_filter_keys,
			 sizeof(span_filter_keys) /
				 sizeof(span_filter_keys[0]));
	if (n == 0)
		buf_puts(&x->b, ". Only spans sent over OTLP are searched; "
				"widen time_range, relax the filters, or use "
				"query_traces for eBPF spans.\n");
	else
		buf_puts(&x->b, ":\n");
	tool_fit(&x->b);
}

/*
 * Text and structured content: a line per span while the budget lasts,
 * every span in x->arr.  Service and name are redacted for the spans
 * with a line only; those past the budget go to x->arr as read (span_json
 * redacts attributes and status message): that is how it has always
 * answered, kept by a refactor that must not change answers.
 */
static int
search_rows(struct search_call *x)
{
	const struct redact *red = call_redact(x->call);
	struct buf *b = &x->b;

	for (size_t i = 0; i < x->s->n; i++) {
		struct spansearch_span *sp = &x->s->spans[i];
		char start[TIMERANGE_FORMAT_MAX];

		sp->service = redact_keep(&x->kept, red, sp->service);
		sp->name = redact_keep(&x->kept, red, sp->name);
		sp->status_message =
			redact_keep(&x->kept, red, sp->status_message);
		if (json_array_append_new(x->arr, span_json(sp, red)) != 0)
			return STATUS_NOMEM;
		timerange_format(sp->start_us / 1000, start, sizeof(start));
		if (b->len + TAIL_ROOM <= b->max) {
			buf_printf(b, "%s  %s  %s  %.1fms  %s  trace %s\n",
				   start, sp->service, sp->name,
				   (double)sp->duration_ns / 1e6,
				   otlp_status_name(sp->status), sp->trace_id);
			if (tool_fit(b) == STATUS_OK)
				continue;
		}
		/* the first line that does not fit ends the list; one is
		 * tried with TAIL_ROOM left, so a long one leaves room for
		 * the notes */
		buf_printf(b, "(%zu more spans in the structured content)\n",
			   x->s->n - i);
		for (i++; i < x->s->n; i++)
			if (json_array_append_new(
				    x->arr, span_json(&x->s->spans[i], red)) !=
			    0)
				return STATUS_NOMEM;
	}
	/* a "(N more spans ...)" note that did not fit left too little room
	 * for this longer one too: one tool_fit serves both */
	if (x->s->truncated)
		buf_printf(b,
			   "More spans match: raise limit (at most %d) or "
			   "narrow the filters.\n",
			   SPANSEARCH_MAX_SPANS);
	tool_fit(b);
	return STATUS_OK;
}

/* Structured content: the spans, their count, and the range. */
static int
search_result(struct search_call *x, json_t **result)
{
	json_t *sc =
		json_pack("{s:O, s:I, s:b}", "spans", x->arr, "count",
			  (json_int_t)x->s->n, "truncated", x->s->truncated);

	if (sc != NULL && x->r.has_range &&
	    json_object_set_new(sc, "time_range", tool_range_json(&x->tr)) !=
		    0) {
		json_decref(sc);
		sc = NULL;
	}
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_buf(&x->b, sc, result);
}

static int
query_telemetry_spans(struct call *call, const json_t *args, json_t **result)
{
	struct search_call x = {.call = call, .now = clock_wall_ms()};
	int rc;

	*result = NULL;
	buf_init(&x.b, call_text_budget(call));
	if ((rc = search_args(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	if ((rc = search_fetch(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((x.arr = json_array()) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	search_head(&x, args);
	if ((rc = search_rows(&x)) != STATUS_OK)
		goto out;
	rc = search_result(&x, result);
out:
	json_decref(x.arr);
	redact_kept_free(&x.kept);
	spansearch_free(x.s);
	free(x.attrs);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler query_otlp_tool_handlers[] = {
	{"query_telemetry_metrics", query_telemetry_metrics},
	{"query_telemetry_spans", query_telemetry_spans},
	{NULL, NULL},
};

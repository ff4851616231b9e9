/*
 * tool_services.c - list_services: the services of the telemetry store in
 * a time range as a Markdown table and structured rows, from
 * lib/telemetry/servicequery, cut to limit and to the answer budget with "N more".
 */
#include "tools/tool_services.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/servicequery.h"
#include "tools/tool.h"
#include "tools/tool_common.h"

/* Text kept back from the budget for the lines after the table. */
#define TAIL_ROOM     600
#define DEFAULT_LIMIT 50
#define MAX_LIMIT     1000
#define NCOLS	      7

/* The namespace as shown: [redact] applies (it is a resource attribute
 * value).  *owned: what to free. */
static const char *
shown_ns(const struct redact *r, const char *ns, char **owned)
{
	*owned = ns != NULL ? redact_text(r, ns) : NULL;
	return *owned != NULL ? *owned : ns;
}

/* One row: the Markdown line into b, the object into arr. */
static int
add_row(struct buf *b, json_t *arr, const struct servicequery_service *s,
	double range_s, const struct redact *r)
{
	char rate[32], errs[32], p95[32], seen[TIMERANGE_FORMAT_MAX],
		seen_ms[TIMERANGE_FORMAT_MAX], *owned = NULL;
	const char *ns = shown_ns(r, s->ns, &owned);
	const char *srcs = s->sources == (SERVICEQUERY_EBPF | SERVICEQUERY_OTLP)
				   ? "eBPF, OTLP"
			   : s->sources == SERVICEQUERY_EBPF ? "eBPF"
							     : "OTLP";
	double per_s = (double)s->requests / range_s;
	double pct = merge_pct(s->errors, s->requests);
	json_t *o, *sa = json_array();
	int rc;

	if (s->requests == 0)
		snprintf(rate, sizeof(rate), "0");
	else if (per_s < 0.01)
		snprintf(rate, sizeof(rate), "<0.01");
	else
		snprintf(rate, sizeof(rate), "%.2f", per_s);
	if (s->requests == 0)
		snprintf(errs, sizeof(errs), "–");
	else
		snprintf(errs, sizeof(errs), "%.2f%%", pct);
	if (s->requests == 0)
		snprintf(p95, sizeof(p95), "–");
	else
		render_ms(s->p95_ms, p95, sizeof(p95));
	/* whole seconds in text, milliseconds in the structured row */
	timerange_format(s->last_seen_us / 1000000 * 1000, seen, sizeof(seen));
	timerange_format(s->last_seen_us / 1000, seen_ms, sizeof(seen_ms));
	rc = render_md_row(
		b,
		(const char *const[NCOLS]){s->service, ns != NULL ? ns : "–",
					   srcs, rate, errs, p95, seen},
		NCOLS);
	if (rc != STATUS_OK)
		goto out;
	if (sa == NULL ||
	    ((s->sources & SERVICEQUERY_EBPF) &&
	     json_array_append_new(sa, json_string("ebpf")) != 0) ||
	    ((s->sources & SERVICEQUERY_OTLP) &&
	     json_array_append_new(sa, json_string("otlp")) != 0)) {
		rc = STATUS_NOMEM;
		goto out;
	}
	o = json_pack("{s:s, s:s?, s:O, s:I, s:f, s:o, s:o, s:s}", "service",
		      s->service, "namespace", ns, "sources", sa, "requests",
		      (json_int_t)s->requests, "request_rate_per_s", per_s,
		      "error_rate_pct",
		      s->requests > 0 ? json_real(pct) : json_null(), "p95_ms",
		      s->requests > 0 ? json_real(s->p95_ms) : json_null(),
		      "last_seen", seen_ms);
	rc = o != NULL && json_array_append_new(arr, o) == 0 ? STATUS_OK
							     : STATUS_NOMEM;
out:
	json_decref(sa);
	free(owned);
	return rc;
}

static int
list_services(struct call *call, const json_t *args, json_t **result)
{
	const char *ns = tool_arg_str(args, "namespace");
	const json_t *lim = json_object_get(args, "limit");
	const struct redact *red = call_redact(call);
	struct servicequery_result *r = NULL;
	struct servicequery_filter f = {0};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	struct timerange tr;
	char err[512], rdesc[TIMERANGE_DESCRIBE_MAX],
		from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX],
		*nsowned = NULL;
	size_t budget = call_text_budget(call), limit = DEFAULT_LIMIT,
	       shown = 0;
	json_t *arr = NULL, *sc;
	struct buf b, t; /* the answer, the table */
	int64_t now = clock_wall_ms();
	double range_s;
	int rc;

	*result = NULL;
	buf_init(&b, budget + 4096);
	buf_init(&t, budget + 4096);
	if (json_is_integer(lim)) {
		if (json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > MAX_LIMIT) {
			*result = tool_result_error("limit must be 1..%d",
						    MAX_LIMIT);
			goto done;
		}
		limit = (size_t)json_integer_value(lim);
	}
	if (tool_time_range(args, "24h", 0, now, &tr, err, sizeof(err)) !=
	    STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto done;
	}
	rc = tool_conn_get(call, &c, err, sizeof(err), &perr);
	if (rc == STATUS_UNSUPPORTED) { /* err lacks the prefix then */
		*result = tool_result_error("telemetry store unavailable: %s",
					    err);
		goto done;
	}
	if (rc != STATUS_OK) {
		rc = tool_store_failed(call, "list_services", rc, &perr,
				       "narrow time_range", result);
		goto out;
	}
	f.from_ms = tr.from_ms;
	f.to_ms = tr.to_ms;
	f.ns = ns;
	rc = servicequery_list(c, &f, now, &r, &perr);
	pg_release(c);
	c = NULL;
	if (rc != STATUS_OK) {
		rc = tool_store_failed(call, "list_services", rc, &perr,
				       "narrow time_range", result);
		goto out;
	}

	timerange_describe(&tr, now, rdesc, sizeof(rdesc));
	range_s = (double)(tr.to_ms - tr.from_ms) / 1000.0;
	arr = json_array();
	if (arr == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	/* the filter is the caller's own text, but it may be a secret
	 * pasted by mistake: shown redacted like the column */
	if (ns != NULL)
		ns = shown_ns(red, ns, &nsowned);
	if (r->n == 0) {
		(void)!buf_printf(&b,
				  "No services with spans in %s%s%s%s. "
				  "Widen time_range%s.\n",
				  rdesc, ns != NULL ? " in namespace \"" : "",
				  ns != NULL ? ns : "", ns != NULL ? "\"" : "",
				  ns != NULL ? " or drop namespace" : "");
	} else {
		size_t want = r->n < limit ? r->n : limit;

		if (render_md_row(&t,
				  (const char *const[NCOLS]){
					  "Service", "Namespace", "Sources",
					  "Req/s", "Errors", "P95",
					  "Last seen"},
				  NCOLS) != STATUS_OK ||
		    render_md_rule(&t, NCOLS) != STATUS_OK) {
			rc = STATUS_NOMEM;
			goto out;
		}
		for (; shown < want; shown++) {
			size_t mark = t.len;

			rc = add_row(&t, arr, &r->services[shown], range_s,
				     red);
			if (rc == STATUS_NOMEM)
				goto out;
			/* a row that does not fit the budget ends the table
			 * (the first one always stays) */
			if (rc != STATUS_OK ||
			    (shown > 0 && t.len + TAIL_ROOM > budget)) {
				if (rc == STATUS_OK &&
				    json_array_remove(
					    arr, json_array_size(arr) - 1) !=
					    0) {
					rc = STATUS_NOMEM;
					goto out;
				}
				t.len = mark;
				t.data[mark] = '\0';
				break;
			}
		}
		(void)!buf_puts(&b, "## Services (");
		if (shown < r->n)
			(void)!buf_printf(&b, "%zu of ", shown);
		(void)!buf_printf(&b, "%zu, %s%s%s%s)\n\n", r->n, rdesc,
				  ns != NULL ? ", namespace \"" : "",
				  ns != NULL ? ns : "", ns != NULL ? "\"" : "");
		if (t.data == NULL || buf_puts(&b, t.data) != STATUS_OK) {
			rc = STATUS_NOMEM;
			goto out;
		}
		if (shown < r->n)
			(void)!buf_printf(
				&b, "\n%zu more service%s not shown: %s.\n",
				r->n - shown, r->n - shown == 1 ? "" : "s",
				shown < want ? "the answer is full; filter by "
					       "namespace"
				: ns != NULL ? "raise limit"
					     : "raise limit or filter by "
					       "namespace");
		(void)!buf_printf(
			&b,
			"\nRequests are HTTP and gRPC server spans (0 for a "
			"service with only client, database or internal "
			"spans); Errors: HTTP status >= 500 or a gRPC status "
			"other than OK%s.\n",
			r->rollup ? "; P95 from hourly and minute rollups "
				    "(within 0.5%)"
				  : "");
		if (r->truncated)
			(void)!buf_printf(&b,
					  "More than %d services have spans: "
					  "only the first %d by name were "
					  "considered; filter by namespace.\n",
					  SERVICEQUERY_MAX_SERVICES,
					  SERVICEQUERY_MAX_SERVICES);
	}
	rc = STATUS_OK;
	if (b.data == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	timerange_format(tr.from_ms, from, sizeof(from));
	timerange_format(tr.to_ms, to, sizeof(to));
	sc = json_pack("{s:{s:s, s:s}, s:O, s:I, s:I}", "time_range", "from",
		       from, "to", to, "services", arr, "total",
		       (json_int_t)r->n, "not_shown",
		       (json_int_t)(r->n - shown));
	if (sc == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	*result = tool_result_new(
		json_pack("[{s:s, s:s}]", "type", "text", "text", b.data), sc,
		false);
done:
	rc = *result != NULL ? STATUS_OK : STATUS_NOMEM;
out:
	pg_release(c);
	json_decref(arr);
	servicequery_free(r);
	free(nsowned);
	buf_free(&t);
	buf_free(&b);
	return rc;
}

const struct tool_handler services_tool_handlers[] = {
	{"list_services", list_services},
	{NULL, NULL},
};

/*
 * tool_spans_services.c - list_services, of the "spans" set: the services
 * of the telemetry store in a time range as a Markdown table and structured
 * rows, from lib/telemetry/servicequery, cut to limit and to the answer
 * budget with "N more".
 */
#include "tools/tool_spans_services.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/servicequery.h"
#include "telemetry/spanquery.h"
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
	char rate[32], errs[RENDER_PCT_MAX], p95[32],
		seen[TIMERANGE_FORMAT_MAX], seen_ms[TIMERANGE_FORMAT_MAX],
		*owned = NULL;
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
		render_pct(s->errors, s->requests, errs, sizeof(errs));
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

/* One list_services call across its phases; the handler frees it. */
struct services_call {
	struct call *call;
	size_t limit, budget;
	int64_t now;
	struct timerange tr;
	const char *ns;	     /* the namespace filter, as given */
	const char *ns_case; /* the namespace matched ignoring case, or NULL */
	char ns_hint[320];   /* "did you mean ..." when none matched */
	char *nsowned;	     /* as shown, when redacted */
	struct servicequery_result *r;
	json_t *arr;	 /* the rows shown, structured */
	size_t shown;	 /* how many */
	struct buf b, t; /* the answer, the table */
};

/* Arguments: limit and time_range; *result is the answer when bad. */
static int
services_args(struct services_call *x, const json_t *args, json_t **result)
{
	const json_t *lim = json_object_get(args, "limit");
	char err[512];

	x->ns = tool_arg_str(args, "namespace");
	if (json_is_integer(lim)) {
		if (json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > MAX_LIMIT) {
			*result = tool_result_error("limit must be 1..%d",
						    MAX_LIMIT);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		x->limit = (size_t)json_integer_value(lim);
	}
	if (tool_time_range(args, "24h", 0, x->now, &x->tr, err, sizeof(err)) !=
	    STATUS_OK) {
		*result = tool_result_error("%s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* Namespaces offered after "did you mean" */
#define NS_SUGGEST_MAX 3

/*
 * No service in namespace x->ns: all services of the range (all, on c) in
 * x->r instead, kept when their namespace is x->ns but for case ("Shop":
 * shop), else none, with the close namespace names in x->ns_hint.
 */
static int
services_ns_fallback(struct services_call *x, struct pg_conn *c,
		     struct pg_error *perr)
{
	struct servicequery_filter f = {.from_ms = x->tr.from_ms,
					.to_ms = x->tr.to_ms};
	struct servicequery_result *all = NULL;
	const char **nss = NULL, *best[NS_SUGGEST_MAX];
	size_t kept = 0, nn = 0, k, len = 0;
	int rc;

	if ((rc = servicequery_list(c, &f, x->now, &all, perr)) != STATUS_OK)
		return rc;
	if ((nss = calloc(all->n + 1, sizeof(*nss))) == NULL) {
		servicequery_free(all);
		return STATUS_NOMEM;
	}
	for (size_t i = 0; i < all->n; i++) {
		const char *ns = all->services[i].ns;
		size_t j = 0;

		if (ns == NULL)
			continue;
		if (strcasecmp(ns, x->ns) == 0) {
			if (x->ns_case == NULL)
				x->ns_case = ns;
			all->services[kept++] = all->services[i];
		}
		while (j < nn && strcmp(nss[j], ns) != 0)
			j++;
		if (j == nn)
			nss[nn++] = ns;
	}
	if (kept == 0) {
		const struct redact *red = call_redact(x->call);

		k = spanquery_suggest(x->ns, nss, nn, best, NS_SUGGEST_MAX);
		for (size_t i = 0; i < k && len < sizeof(x->ns_hint); i++) {
			char *owned = NULL;
			const char *shown = shown_ns(red, best[i], &owned);

			len += (size_t)snprintf(
				x->ns_hint + len, sizeof(x->ns_hint) - len,
				"%s\"%s\"",
				i == 0 ? "did you mean namespace " : " or ",
				shown);
			free(owned);
		}
	}
	free(nss);
	all->n = kept;
	servicequery_free(x->r);
	x->r = all;
	return STATUS_OK;
}

/* Fetch: the services, on a connection held for the one statement;
 * *result is the answer when the store fails. */
static int
services_fetch(struct services_call *x, json_t **result)
{
	struct servicequery_filter f = {
		.from_ms = x->tr.from_ms, .to_ms = x->tr.to_ms, .ns = x->ns};
	struct pg_conn *c = NULL;
	struct pg_error perr;
	char why[320];
	int rc;

	rc = tool_conn_get(x->call, &c, why, sizeof(why), &perr);
	if (rc == STATUS_UNSUPPORTED) { /* why lacks the prefix then */
		*result = tool_result_error("telemetry store unavailable: %s",
					    why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	if (rc == STATUS_OK) {
		rc = servicequery_list(c, &f, x->now, &x->r, &perr);
		if (rc == STATUS_OK && x->r->n == 0 && x->ns != NULL)
			rc = services_ns_fallback(x, c, &perr);
		pg_release(c);
	}
	if (rc != STATUS_OK)
		rc = tool_store_failed(x->call, "list_services", rc, &perr,
				       "narrow time_range", result);
	return rc;
}

/* The table: limit rows at most, and those that fit the budget (the
 * first always stays), each also into x->arr (every row shown). */
static int
services_table(struct services_call *x)
{
	const struct redact *red = call_redact(x->call);
	size_t want = x->r->n < x->limit ? x->r->n : x->limit;
	double range_s = (double)(x->tr.to_ms - x->tr.from_ms) / 1000.0;
	int rc;

	if ((x->arr = json_array()) == NULL)
		return STATUS_NOMEM;
	if (x->r->n == 0)
		return STATUS_OK;
	if (render_md_row(&x->t,
			  (const char *const[NCOLS]){
				  "Service", "Namespace", "Sources", "Req/s",
				  "Errors", "P95", "Last seen"},
			  NCOLS) != STATUS_OK ||
	    render_md_rule(&x->t, NCOLS) != STATUS_OK)
		return STATUS_NOMEM;
	for (; x->shown < want; x->shown++) {
		size_t mark = x->t.len;

		rc = add_row(&x->t, x->arr, &x->r->services[x->shown], range_s,
			     red);
		if (rc == STATUS_NOMEM)
			return rc;
		if (rc == STATUS_OK &&
		    (x->shown == 0 || x->t.len + TAIL_ROOM <= x->budget))
			continue;
		/* the row does not fit: it ends the table */
		if (rc == STATUS_OK &&
		    json_array_remove(x->arr, json_array_size(x->arr) - 1) != 0)
			return STATUS_NOMEM;
		buf_rollback(&x->t, mark);
		break;
	}
	return STATUS_OK;
}

/* Text: the heading, the table, and what was left out and why.  The
 * table is fitted to the budget and the lines around it are short: b,
 * budget + 4096, holds them all, and the one check is services_result's. */
static void
services_text(struct services_call *x)
{
	const struct servicequery_result *r = x->r;
	size_t want = r->n < x->limit ? r->n : x->limit;
	struct buf *b = &x->b;
	char rdesc[TIMERANGE_DESCRIBE_MAX];
	const char *ns;

	timerange_describe(&x->tr, x->now, rdesc, sizeof(rdesc));
	/* the filter is the caller's own text, but it may be a secret
	 * pasted by mistake: shown redacted like the column */
	ns = x->ns_case != NULL ? x->ns_case : x->ns;
	ns = ns != NULL ? shown_ns(call_redact(x->call), ns, &x->nsowned)
			: NULL;
	if (r->n == 0 && x->ns_hint[0] != '\0') {
		buf_printf(b,
			   "No services with spans in %s in namespace \"%s\"; "
			   "%s? Or widen time_range or drop namespace.\n",
			   rdesc, ns, x->ns_hint);
		return;
	}
	if (r->n == 0) {
		buf_printf(b,
			   "No services with spans in %s%s%s%s. "
			   "Widen time_range%s.\n",
			   rdesc, ns != NULL ? " in namespace \"" : "",
			   ns != NULL ? ns : "", ns != NULL ? "\"" : "",
			   ns != NULL ? " or drop namespace" : "");
		return;
	}
	buf_puts(b, "## Services (");
	if (x->shown < r->n)
		buf_printf(b, "%zu of ", x->shown);
	buf_printf(b, "%zu, %s%s%s%s)\n\n", r->n, rdesc,
		   ns != NULL ? ", namespace \"" : "", ns != NULL ? ns : "",
		   ns != NULL ? "\"" : "");
	if (x->ns_case != NULL)
		buf_printf(b,
			   "No namespace is exactly as given: namespace "
			   "\"%s\" matched it ignoring case.\n\n",
			   ns);
	buf_append(b, x->t.data, x->t.len);
	if (x->shown < r->n)
		buf_printf(b, "\n%zu more service%s not shown: %s.\n",
			   r->n - x->shown, r->n - x->shown == 1 ? "" : "s",
			   x->shown < want ? "the answer is full; filter by "
					     "namespace"
			   : ns != NULL	   ? "raise limit"
					: "raise limit or filter by namespace");
	buf_printf(b,
		   "\nRequests are HTTP and gRPC server spans (0 for a service "
		   "with only client, database or internal spans); Errors: "
		   "HTTP status >= 500 or a gRPC status other than OK%s.\n",
		   r->rollup ? "; P95 from hourly and minute rollups (within "
			       "0.5%)"
			     : "");
	if (r->truncated)
		buf_printf(b,
			   "More than %d services have spans: only the first "
			   "%d by name were considered; filter by "
			   "namespace.\n",
			   SERVICEQUERY_MAX_SERVICES,
			   SERVICEQUERY_MAX_SERVICES);
}

/* Structured content: the range, the rows shown and how many were not. */
static int
services_result(struct services_call *x, json_t **result)
{
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX];
	json_t *sc;

	timerange_format(x->tr.from_ms, from, sizeof(from));
	timerange_format(x->tr.to_ms, to, sizeof(to));
	sc = json_pack("{s:{s:s, s:s}, s:O, s:I, s:I}", "time_range", "from",
		       from, "to", to, "services", x->arr, "total",
		       (json_int_t)x->r->n, "not_shown",
		       (json_int_t)(x->r->n - x->shown));
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_buf(&x->b, sc, result);
}

static int
list_services(struct call *call, const json_t *args, json_t **result)
{
	struct services_call x = {.call = call,
				  .limit = DEFAULT_LIMIT,
				  .budget = call_text_budget(call),
				  .now = clock_wall_ms()};
	int rc;

	*result = NULL;
	buf_init(&x.b, x.budget + 4096);
	buf_init(&x.t, x.budget + 4096);
	if ((rc = services_args(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	if ((rc = services_fetch(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = services_table(&x)) != STATUS_OK)
		goto out;
	services_text(&x);
	rc = services_result(&x, result);
out:
	json_decref(x.arr);
	servicequery_free(x.r);
	free(x.nsowned);
	buf_free(&x.t);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler spans_services_tool_handlers[] = {
	{"list_services", list_services},
	{NULL, NULL},
};

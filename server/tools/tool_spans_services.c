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
#include "telemetry/health.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/servicequery.h"
#include "telemetry/spanquery.h"
#include "tools/tool.h"
#include "tools/tool_common.h"

/* Bytes of the whole answer ([tools] max_answer_bytes) kept for what is
 * not a row of the table: the text around it (its health line names
 * services) escaped as JSON, the health counts, the range and the result
 * around them. */
#define SERVICES_CLOSE_ROOM 3072
/* Text kept back from the budget for the lines after the table. */
#define TAIL_ROOM     2000 /* the health summary above, the notes below */
#define DEFAULT_LIMIT 50
#define MAX_LIMIT     1000
#define NCOLS	      9
/* services named in the health summary at most */
#define HEALTH_NAMED 8

/* The namespace as shown: [redact] applies (it is a resource attribute
 * value).  *owned: what to free. */
static const char *
shown_ns(const struct redact *r, const char *ns, char **owned)
{
	*owned = ns != NULL ? redact_text(r, ns) : NULL;
	return *owned != NULL ? *owned : ns;
}

static enum health_status
service_health(const struct health_tolerances *t,
	       const struct servicequery_service *s)
{
	return health_judge(t, s->requests, s->errors, s->client_errors);
}

/* "errors 12% (503 ×120)" and/or "client errors 25% (404 ×9)": the rates
 * that made s DEGRADED or UNHEALTHY. */
static int
health_why(struct buf *b, const struct health_tolerances *t,
	   const struct servicequery_service *s)
{
	enum health_status v = service_health(t, s);
	int rc = STATUS_OK;
	bool both;

	both = health_judge(t, s->requests, s->errors, 0) == v &&
	       health_judge(t, s->requests, 0, s->client_errors) == v;
	if (health_judge(t, s->requests, s->errors, 0) == v) {
		rc = buf_puts(b, "errors ");
		if (rc == STATUS_OK)
			rc = tool_rate_codes(b, s->errors, s->requests, -1,
					     s->codes[0]);
	}
	if (rc == STATUS_OK &&
	    health_judge(t, s->requests, 0, s->client_errors) == v) {
		rc = buf_puts(b, both ? ", client errors " : "client errors ");
		if (rc == STATUS_OK)
			rc = tool_rate_codes(b, s->client_errors, s->requests,
					     -1, s->codes[1]);
	}
	return rc;
}

/* One row: the Markdown line into b, the object into arr. */
static int
add_row(struct buf *b, json_t *arr, const struct servicequery_service *s,
	double range_s, const struct redact *r,
	const struct health_tolerances *t, bool compare,
	const struct servicequery_service *base)
{
	char change[160];
	json_t *ch = compare ? json_object() : NULL;
	char rate[32], errs[160], cerrs[160], p95[32],
		seen[TIMERANGE_FORMAT_MAX], seen_ms[TIMERANGE_FORMAT_MAX],
		*owned = NULL;
	struct buf eb, cb;
	enum health_status h = service_health(t, s);
	const char *ns = shown_ns(r, s->ns, &owned);
	const char *srcs = s->sources == (SERVICEQUERY_EBPF | SERVICEQUERY_OTLP)
				   ? "eBPF, OTLP"
			   : s->sources == SERVICEQUERY_EBPF ? "eBPF"
							     : "OTLP";
	double per_s = (double)s->requests / range_s;
	double pct = merge_pct(s->errors, s->requests);
	json_t *o, *sa = json_array();
	int rc;

	render_throughput(per_s, rate, sizeof(rate));
	snprintf(errs, sizeof(errs), "–");
	snprintf(cerrs, sizeof(cerrs), "–");
	buf_init(&eb, sizeof(errs) - 1);
	buf_init(&cb, sizeof(cerrs) - 1);
	if (s->requests > 0 &&
	    tool_rate_codes(&eb, s->errors, s->requests, -1, s->codes[0]) ==
		    STATUS_OK &&
	    tool_rate_codes(&cb, s->client_errors, s->requests, -1,
			    s->codes[1]) == STATUS_OK) {
		snprintf(errs, sizeof(errs), "%.*s", (int)eb.len, eb.data);
		snprintf(cerrs, sizeof(cerrs), "%.*s", (int)cb.len, cb.data);
	}
	buf_free(&eb);
	buf_free(&cb);
	if (s->requests == 0)
		snprintf(p95, sizeof(p95), "–");
	else
		render_ms(s->p95_ms, p95, sizeof(p95));
	/* whole seconds in text, milliseconds in the structured row */
	timerange_format(s->last_seen_us / 1000000 * 1000, seen, sizeof(seen));
	timerange_format(s->last_seen_us / 1000, seen_ms, sizeof(seen_ms));
	if (compare)
		tool_change_text(
			&(struct tool_figures){s->requests, s->errors,
					       s->p95_ms},
			base != NULL ? &(struct tool_figures){base->requests,
							      base->errors,
							      base->p95_ms}
				     : NULL,
			change, sizeof(change), ch);
	rc = render_md_row(b,
			   (const char *const[NCOLS + 1]){
				   s->service, ns != NULL ? ns : "–", srcs,
				   rate, errs, cerrs, p95,
				   h == HEALTH_NA ? "–" : health_name(h), seen,
				   change},
			   NCOLS + compare);
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
	o = json_pack("{s:s, s:s?, s:O, s:I, s:f, s:o, s:o, s:s, s:I, s:I, "
		      "s:o, s:o, s:o, s:s}",
		      "service", s->service, "namespace", ns, "sources", sa,
		      "requests", (json_int_t)s->requests, "request_rate_per_s",
		      per_s, "error_rate_pct",
		      s->requests > 0 ? json_real(pct) : json_null(), "p95_ms",
		      s->requests > 0 ? json_real(s->p95_ms) : json_null(),
		      "last_seen", seen_ms, "errors", (json_int_t)s->errors,
		      "client_errors", (json_int_t)s->client_errors,
		      "client_error_rate_pct",
		      s->requests > 0
			      ? json_real(merge_pct((double)s->client_errors,
						    (double)s->requests))
			      : json_null(),
		      "error_codes", tool_codes_json(s->codes[0]),
		      "client_error_codes", tool_codes_json(s->codes[1]),
		      "health", health_name(h));
	if (o != NULL && compare &&
	    (json_object_set_new(
		     o, "baseline",
		     base != NULL && base->requests > 0
			     ? json_pack("{s:I, s:I, s:f, s:f}", "requests",
					 (json_int_t)base->requests, "errors",
					 (json_int_t)base->errors,
					 "error_rate_pct",
					 merge_pct((double)base->errors,
						   (double)base->requests),
					 "p95_ms", base->p95_ms)
			     : json_null()) ||
	     json_object_set(o, "change", ch))) {
		json_decref(o);
		o = NULL;
	}
	rc = o != NULL && json_array_append_new(arr, o) == 0 ? STATUS_OK
							     : STATUS_NOMEM;
out:
	json_decref(ch);
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
	bool compare;			  /* compare_to given */
	const char *compare_to;		  /* as given */
	struct timerange btr;		  /* the baseline range */
	struct servicequery_result *base; /* its services */
	const struct servicequery_service **base_by_name;
	char change_head[64]; /* "vs the range before" */
	json_t *arr;	      /* the rows shown, structured */
	struct health_tolerances tol;
	size_t nhealth[HEALTH_UNHEALTHY + 1]; /* services by verdict */
	size_t shown;			      /* how many */
	struct buf b, t;		      /* the answer, the table */
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
	if (tool_time_range(args, "24h", TOOL_RANGE_FROM_TO, x->now, &x->tr,
			    err, sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->compare_to = tool_arg_str(args, "compare_to");
	if (x->compare_to != NULL &&
	    timerange_baseline(&x->tr, x->compare_to, &x->btr, err,
			       sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->compare = x->compare_to != NULL;
	if (x->compare)
		snprintf(x->change_head, sizeof(x->change_head), "vs %s",
			 x->btr.to_ms == x->tr.from_ms
				 ? "the range before"
				 : "the same range shifted back");
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

static int
by_service_name(const void *a, const void *b)
{
	return strcmp(
		(*(const struct servicequery_service *const *)a)->service,
		(*(const struct servicequery_service *const *)b)->service);
}

/* r's services by name (*out, r->n of them; free it), for by_name. */
static int
name_index(const struct servicequery_result *r,
	   const struct servicequery_service ***out)
{
	const struct servicequery_service **v = calloc(r->n + 1, sizeof(*v));

	*out = v;
	if (v == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < r->n; i++)
		v[i] = &r->services[i];
	qsort(v, r->n, sizeof(*v), by_service_name);
	return STATUS_OK;
}

/* The service called name in the index ix of n services, or NULL. */
static const struct servicequery_service *
by_name(const struct servicequery_service *const *ix, size_t n,
	const char *name)
{
	struct servicequery_service key = {.service = name};
	const struct servicequery_service *kp = &key, *const * hit;

	if (ix == NULL)
		return NULL;
	hit = bsearch(&kp, ix, n, sizeof(*ix), by_service_name);
	return hit != NULL ? *hit : NULL;
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
		if (rc == STATUS_OK && x->compare) {
			struct servicequery_filter bf = {
				.from_ms = x->btr.from_ms,
				.to_ms = x->btr.to_ms,
				.ns = x->ns_case != NULL ? x->ns_case : x->ns};

			rc = servicequery_list(c, &bf, x->now, &x->base, &perr);
			if (rc == STATUS_OK)
				rc = name_index(x->base, &x->base_by_name);
		}
		pg_release(c);
	}
	if (rc != STATUS_OK)
		rc = tool_store_failed(x->call, "list_services", rc, &perr,
				       "narrow time_range", result);
	return rc;
}

/* The table: limit rows at most, and those that fit the text's budget
 * and the whole answer's (tool_answer_budget: the table, the rows' JSON
 * and SERVICES_CLOSE_ROOM), the first always stays, each also into
 * x->arr (every row shown): text and structured content show the same
 * rows. */
static int
services_table(struct services_call *x)
{
	const struct redact *red = call_redact(x->call);
	size_t want = x->r->n < x->limit ? x->r->n : x->limit;
	size_t answer = tool_answer_budget(x->call), whole;
	double range_s = (double)(x->tr.to_ms - x->tr.from_ms) / 1000.0;
	int rc;

	if ((x->arr = json_array()) == NULL)
		return STATUS_NOMEM;
	if (x->r->n == 0)
		return STATUS_OK;
	if (render_md_row(&x->t,
			  (const char *const[NCOLS + 1]){
				  "Service", "Namespace", "Sources", "Req/s",
				  "Errors", "Client errors", "P95", "Health",
				  "Last seen", x->change_head},
			  NCOLS + x->compare) != STATUS_OK ||
	    render_md_rule(&x->t, NCOLS + x->compare) != STATUS_OK)
		return STATUS_NOMEM;
	whole = SERVICES_CLOSE_ROOM + tool_json_text_len(x->t.data, x->t.len);
	for (; x->shown < want; x->shown++) {
		size_t mark = x->t.len;

		rc = add_row(&x->t, x->arr, &x->r->services[x->shown], range_s,
			     red, &x->tol, x->compare,
			     x->compare
				     ? by_name(x->base_by_name, x->base->n,
					       x->r->services[x->shown].service)
				     : NULL);
		if (rc == STATUS_NOMEM)
			return rc;
		if (rc == STATUS_OK)
			whole += tool_json_text_len(x->t.data + mark,
						    x->t.len - mark) +
				 tool_json_len(json_array_get(
					 x->arr, json_array_size(x->arr) - 1)) +
				 1;
		if (rc == STATUS_OK &&
		    (x->shown == 0 ||
		     (x->t.len + TAIL_ROOM <= x->budget && whole <= answer)))
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

/*
 * "Health: 1 unhealthy, 2 degraded, 11 healthy of 14 services (2 without
 * requests). UNHEALTHY: payments (errors 12% (503 ×120)). DEGRADED: ...":
 * the answer to "which services are unhealthy and why?", over every
 * service of the range (not only the rows shown), worst first.
 */
static int
by_error_rate(const void *a, const void *b)
{
	const struct servicequery_service *x =
		*(const struct servicequery_service *const *)a;
	const struct servicequery_service *y =
		*(const struct servicequery_service *const *)b;
	/* requests > 0 for every verdict but NA */
	double ex = (double)x->errors / (double)x->requests,
	       ey = (double)y->errors / (double)y->requests,
	       cx = (double)x->client_errors / (double)x->requests,
	       cy = (double)y->client_errors / (double)y->requests;

	if (ex != ey)
		return ex > ey ? -1 : 1;
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(x->service, y->service);
}

static void
health_summary(struct services_call *x)
{
	const struct servicequery_result *r = x->r;
	const struct servicequery_service **bad;
	struct buf *b = &x->b;
	size_t named = 0, nbad = 0;

	if ((bad = calloc(r->n + 1, sizeof(*bad))) == NULL)
		return;
	for (size_t i = 0; i < r->n; i++) {
		enum health_status v = service_health(&x->tol, &r->services[i]);

		x->nhealth[v]++;
		if (v >= HEALTH_DEGRADED)
			bad[nbad++] = &r->services[i];
	}
	qsort(bad, nbad, sizeof(*bad), by_error_rate);
	buf_printf(b,
		   "Health: %zu unhealthy, %zu degraded, %zu healthy of %zu "
		   "service%s",
		   x->nhealth[HEALTH_UNHEALTHY], x->nhealth[HEALTH_DEGRADED],
		   x->nhealth[HEALTH_HEALTHY], r->n, r->n == 1 ? "" : "s");
	if (x->nhealth[HEALTH_NA] > 0)
		buf_printf(b, " (%zu without requests)", x->nhealth[HEALTH_NA]);
	buf_puts(b, ".");
	for (int v = HEALTH_UNHEALTHY; v >= HEALTH_DEGRADED; v--) {
		size_t k = 0;

		for (size_t i = 0; i < nbad; i++) {
			const struct servicequery_service *s = bad[i];

			if (service_health(&x->tol, s) != (enum health_status)v)
				continue;
			if (named == HEALTH_NAMED) {
				buf_printf(b, " ... (%zu more)",
					   x->nhealth[v] - k);
				break;
			}
			if (k == 0)
				buf_printf(b, " %s: ", health_name(v));
			else
				buf_puts(b, "; ");
			buf_printf(b, "%s (", s->service);
			(void)health_why(b, &x->tol, s);
			buf_puts(b, ")");
			k++;
			named++;
		}
		if (k > 0)
			buf_puts(b, ".");
	}
	buf_puts(b, "\n\n");
	tool_fit(b);
	free(bad);
}

/* "Baseline: 2026-11-27T10:00:00Z .. 2026-11-27T11:00:00Z (compare_to
 * "1d"); gone since (requests then, none now): a, b." */
static void
baseline_notes(struct services_call *x)
{
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX];
	const struct servicequery_service **now_by_name;
	struct buf *b = &x->b;
	size_t gone = 0;

	timerange_format(x->btr.from_ms, from, sizeof(from));
	timerange_format(x->btr.to_ms, to, sizeof(to));
	buf_printf(b,
		   "\nBaseline: %s .. %s (compare_to \"%s\"): changes are "
		   "requests in %%, error rate in percentage points, P95 in "
		   "%%",
		   from, to, x->compare_to);
	(void)name_index(x->r, &now_by_name); /* NULL: none named gone */
	for (size_t i = 0; now_by_name != NULL && i < x->base->n; i++) {
		const struct servicequery_service *s = &x->base->services[i];
		const struct servicequery_service *now =
			by_name(now_by_name, x->r->n, s->service);

		if (s->requests == 0 || (now != NULL && now->requests > 0))
			continue;
		if (gone < 10)
			buf_printf(b, "%s%s",
				   gone == 0 ? "; requests then, none "
					       "now: "
					     : ", ",
				   s->service);
		gone++;
	}
	free(now_by_name);
	if (gone > 10)
		buf_printf(b, " and %zu more", gone - 10);
	buf_puts(b, ".\n");
	tool_fit(b);
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
	health_summary(x);
	buf_append(b, x->t.data, x->t.len);
	if (x->compare)
		baseline_notes(x);
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
		   "HTTP 5xx, server-side gRPC codes (UNKNOWN, "
		   "DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, "
		   "DATA_LOSS) or span status ERROR; Client errors: HTTP 4xx "
		   "and other gRPC codes (e.g. UNAUTHENTICATED); Health by "
		   "Kiali's rule: ");
	tool_health_rule(b, &x->tol);
	buf_printf(b, "%s.\n",
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
	sc = json_pack("{s:{s:s, s:s}, s:O, s:I, s:I, s:{s:I, s:I, s:I, s:I}}",
		       "time_range", "from", from, "to", to, "services", x->arr,
		       "total", (json_int_t)x->r->n, "not_shown",
		       (json_int_t)(x->r->n - x->shown), "health", "unhealthy",
		       (json_int_t)x->nhealth[HEALTH_UNHEALTHY], "degraded",
		       (json_int_t)x->nhealth[HEALTH_DEGRADED], "healthy",
		       (json_int_t)x->nhealth[HEALTH_HEALTHY], "no_requests",
		       (json_int_t)x->nhealth[HEALTH_NA]);
	if (sc == NULL)
		return STATUS_NOMEM;
	if (x->compare && json_object_set_new(sc, "baseline",
					      tool_range_json(&x->btr)) != 0) {
		json_decref(sc);
		return STATUS_NOMEM;
	}
	return tool_result_fit(
		x->call, &x->b, sc,
		(struct tool_rows[]){
			{"services", "not_shown", "services", x->r->n, 0, 0}},
		1, "lower limit or filter by namespace", result);
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
	x.tol = tool_health_tolerances(call);
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
	servicequery_free(x.base);
	free(x.base_by_name);
	free(x.nsowned);
	buf_free(&x.t);
	buf_free(&x.b);
	return tool_done(rc, result);
}

const struct tool_handler spans_services_tool_handlers[] = {
	{"list_services", list_services},
	{NULL, NULL},
};

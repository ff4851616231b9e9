/*
 * tool_query.c - the "query" tool family: the unified tools query_metrics
 * and query_traces, which ask every span source (eBPF, OTLP) at once on
 * two connections and merge the answers with lib/telemetry/merge, and their
 * source-specific plumbing (query_ebpf_*) and deprecated aliases
 * (query_beyla_*).
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "base/utf8.h"
#include "conf/config.h"
#include "core/instances.h"
#include "json/jsondump.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/pointquery.h"
#include "telemetry/promcalls.h"
#include "telemetry/render.h"
#include "telemetry/spanquery.h"
#include "telemetry/timeline.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_detail.h"
#include "tools/tool_query.h"

/* Text kept back from the budget ([tools] max_answer_chars) for the lines
 * that close an answer (notes, Analysis:); structured content carries
 * every row regardless. */
#define TAIL_ROOM 768
/* Bytes of the whole answer ([tools] max_answer_bytes) kept back for
 * what query_traces writes after its traces: the text's closing lines
 * (TAIL_ROOM, escaped as JSON), the sources with their statuses, the
 * range and the result around it all. */
#define TRACES_CLOSE_ROOM (2 * TAIL_ROOM + 2 * TOOL_STATUS_MAX + 384)
/* per trace, unless max_spans says otherwise */
#define DEFAULT_MAX_SPANS 200
/* query_traces' traces unless max_traces says otherwise (the schema's
 * default too), and the bytes of an answer of that many (traces_args) */
#define DEFAULT_MAX_TRACES   10
#define DEFAULT_TRACES_BYTES (22 * 1024)
/* time_range (default 1h) or from / to */
#define QUERY_RANGE (TOOL_RANGE_FROM_TO | TOOL_RANGE_EMPTY_REFUSED)

/* ---- query_metrics ------------------------------------------------------ */

struct metrics_req {
	unsigned sources;   /* bits 1 << TOOL_SRC_* */
	unsigned protocols; /* bits 1 << SPANQUERY_*; 0 = auto */
	const char *note;   /* a deprecation note, or NULL */
};

static const char *const proto_titles[SPANQUERY_PROTOCOLS] = {"HTTP", "gRPC",
							      "SQL"};

int
query_status_range(const char *range, int *min, int *max, char *err, size_t len)
{
	/* people's words for the classes, as normalised below */
	static const struct {
		const char *word;
		int cls;
	} words[] = {
		{"errors", 5},	     {"error", 5},	{"server errors", 5},
		{"server error", 5}, {"5xx errors", 5}, {"5xx error", 5},
		{"failures", 5},     {"failed", 5},	{"client errors", 4},
		{"client error", 4}, {"4xx errors", 4}, {"4xx error", 4},
		{"success", 2},	     {"successes", 2},	{"successful", 2},
		{"ok", 2},	     {"redirects", 3},	{"redirect", 3},
		{"redirections", 3},
	};
	char w[32];
	size_t n = 0;
	int cls = 0;

	/* lower case, one space for each run of spaces, dashes and
	 * underscores, none at either end */
	for (const char *p = range; *p != '\0' && n + 1 < sizeof(w); p++) {
		char c = (char)tolower((unsigned char)*p);

		if (c == ' ' || c == '-' || c == '_' || c == '\t') {
			if (n > 0 && w[n - 1] != ' ')
				w[n++] = ' ';
			continue;
		}
		w[n++] = c;
	}
	if (n > 0 && w[n - 1] == ' ')
		n--;
	w[n] = '\0';
	if (strlen(range) < sizeof(w) - 1) {
		for (size_t i = 0;
		     i < sizeof(words) / sizeof(words[0]) && cls == 0; i++)
			if (strcmp(w, words[i].word) == 0)
				cls = words[i].cls;
		if (cls == 0 && n == 3 && w[0] >= '1' && w[0] <= '5' &&
		    strcmp(w + 1, "xx") == 0)
			cls = w[0] - '0';
	}
	if (cls == 0) {
		snprintf(
			err, len,
			"status_code_range \"%.40s\" is not understood: use "
			"\"5xx\" (or \"errors\"), \"4xx\" (\"client errors\"), "
			"\"2xx\" (\"success\") or \"3xx\" (\"redirects\")",
			range);
		return STATUS_INVALID;
	}
	*min = cls * 100;
	*max = *min + 99;
	return STATUS_OK;
}

/* Fills f from args; an error message in err for the model when bad. */
static int
metrics_filter(const json_t *args, const struct metrics_req *req,
	       struct spanquery_filter *f, char *err, size_t len)
{
	const char *proto = tool_arg_str(args, "protocol");
	const char *range = tool_arg_str(args, "status_code_range");
	const json_t *gs = json_object_get(args, "grpc_status_code");
	unsigned implied = 0;

	memset(f, 0, sizeof(*f));
	f->service = tool_arg_str(args, "service");
	f->grpc_status = -1;
	f->http_route = tool_arg_str(args, "http_route");
	f->http_method = tool_arg_str(args, "http_method");
	f->grpc_method = tool_arg_str(args, "grpc_method");
	f->sql_operation = tool_arg_str(args, "sql_operation");
	f->table_name = tool_arg_str(args, "table_name");
	if (f->service == NULL) {
		snprintf(err, len,
			 "service is required: the service.name to report on "
			 "(e.g. \"checkout\")");
		return STATUS_INVALID;
	}
	if (range != NULL &&
	    query_status_range(range, &f->http_status_min, &f->http_status_max,
			       err, len) != STATUS_OK)
		return STATUS_INVALID;
	if (json_is_integer(gs))
		f->grpc_status = (int)json_integer_value(gs);
	if (f->http_route || f->http_method || range)
		implied |= 1u << SPANQUERY_HTTP;
	if (f->grpc_method || f->grpc_status >= 0)
		implied |= 1u << SPANQUERY_GRPC;
	if (f->sql_operation || f->table_name)
		implied |= 1u << SPANQUERY_SQL;
	if (req->protocols != 0) {
		f->protocols = req->protocols;
	} else if (proto != NULL && strcmp(proto, "auto") != 0) {
		int p = spanquery_protocol_parse(proto);

		if (p < 0) {
			snprintf(err, len,
				 "protocol must be \"auto\", \"http\", "
				 "\"grpc\" or \"sql\"");
			return STATUS_INVALID;
		}
		f->protocols = 1u << p;
	} else {
		/* auto: every protocol, unless the filters name some */
		f->protocols = implied;
	}
	if (implied != 0 && (f->protocols & implied) == 0) {
		snprintf(err, len,
			 "the filters given apply to another protocol than "
			 "\"%s\": drop them or change protocol",
			 proto != NULL ? proto : "the tool's");
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

/* " (protocol=http, http_route=/a)" for the filters given: one too long
 * for the budget is left out (tool_fit), and so is ")" when it was the
 * last. */
static void
describe_filters(struct buf *b, const json_t *args)
{
	static const char *const keys[] = {
		"protocol",	     "http_route",  "http_method",
		"status_code_range", "grpc_method", "grpc_status_code",
		"sql_operation",     "table_name",
	};
	bool any = false;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const json_t *v = json_object_get(args, keys[i]);

		if (json_is_string(v) && strcmp(keys[i], "protocol") == 0 &&
		    strcmp(json_string_value(v), "auto") == 0)
			continue;
		if (json_is_string(v))
			buf_printf(b, "%s%s=%s", any ? ", " : " (", keys[i],
				   json_string_value(v));
		else if (json_is_integer(v))
			buf_printf(b, "%s%s=%" JSON_INTEGER_FORMAT,
				   any ? ", " : " (", keys[i],
				   json_integer_value(v));
		else
			continue;
		any = tool_fit(b) == STATUS_OK;
	}
	if (any) {
		buf_puts(b, ")");
		tool_fit(b);
	}
}

static double
error_pct(const struct merge_metric_row *r)
{
	return r->error_rate_pct;
}

static uint64_t
errors_of(const struct merge_metric_row *r)
{
	return ((const struct spanquery_row *)r->user)->errors;
}

/* "Route: /a (GET)" / "Method: pkg.Svc/Call" / "Operation: SELECT, Table: t" */
static int
key_text(struct buf *b, const struct spanquery_row *q)
{
	switch (q->protocol) {
	case SPANQUERY_HTTP:
		return buf_printf(b, "Route: %s (%s)",
				  q->k1[0] ? q->k1 : "(no route)", q->k2);
	case SPANQUERY_GRPC:
		return buf_printf(b, "Method: %s",
				  q->k1[0] ? q->k1 : "(unknown)");
	default:
		return buf_printf(b, "Operation: %s, Table: %s",
				  q->k1[0] ? q->k1 : "(unknown)",
				  q->k2[0] ? q->k2 : "(none)");
	}
}

/* the key alone, for the analysis line */
static int
key_short(struct buf *b, const struct spanquery_row *q)
{
	switch (q->protocol) {
	case SPANQUERY_HTTP: return buf_printf(b, "%s %s", q->k2, q->k1);
	case SPANQUERY_GRPC: return buf_printf(b, "gRPC %s", q->k1);
	default: return buf_printf(b, "%s %s", q->k1, q->k2);
	}
}

/* The request health of a span source's row (Prometheus rows have no
 * client errors: not judged). */
static enum health_status
row_health(const struct health_tolerances *t, const struct merge_metric_row *r)
{
	const struct spanquery_row *q = r->user;

	if (r->source == MERGE_SOURCE_PROMETHEUS)
		return HEALTH_NA;
	return health_judge(t, q->requests, q->errors, q->client_errors);
}

/*
 * "Route: /pay (POST), Requests: 1,100, P50: ..., Errors: ...", and
 * ": DEGRADED" when the row is not healthy.  ebpf: the eBPF row of an
 * [eBPF+OTLP] row (r is its OTLP row): both counts are shown.
 */
static int
metric_line(struct buf *b, const struct merge_metric_row *r,
	    const struct merge_metric_row *ebpf,
	    const struct health_tolerances *t, bool compare,
	    const struct spanquery_row *base)
{
	const struct spanquery_row *q = r->user;
	bool prom = r->source == MERGE_SOURCE_PROMETHEUS;
	enum health_status h = row_health(t, r);
	char n[64], p50[24], p95[24], p99[24];
	int rc;

	render_count(q->requests, n, sizeof(n));
	if (ebpf != NULL && ebpf->requests != q->requests) {
		char e[32];

		render_count(ebpf->requests, e, sizeof(e));
		snprintf(n + strlen(n), sizeof(n) - strlen(n), " (eBPF %s)", e);
	}
	render_ms(q->p50_ms, p50, sizeof(p50));
	render_ms(q->p95_ms, p95, sizeof(p95));
	render_ms(q->p99_ms, p99, sizeof(p99));
	if ((rc = key_text(b, q)) != STATUS_OK ||
	    (rc = buf_printf(b, ", Requests: %s, P50: %s, P95: %s, P99: %s, ",
			     n, p50, p95, p99)) != STATUS_OK ||
	    (rc = tool_errors_text(b, q->requests, q->errors, q->client_errors,
				   prom ? error_pct(r) : -1,
				   prom ? NULL : q->codes[0],
				   prom ? NULL : q->codes[1])) != STATUS_OK)
		return rc;
	if (compare && !prom) {
		char change[160];

		tool_change_text(
			&(struct tool_figures){q->requests, q->errors,
					       q->p95_ms},
			base != NULL ? &(struct tool_figures){base->requests,
							      base->errors,
							      base->p95_ms}
				     : NULL,
			change, sizeof(change), NULL);
		if ((rc = buf_printf(b, "; vs baseline: %s", change)) !=
		    STATUS_OK)
			return rc;
	}
	if (h >= HEALTH_DEGRADED &&
	    (rc = buf_printf(b, ": %s", health_name(h))) != STATUS_OK)
		return rc;
	return buf_puts(b, "\n");
}

static json_t *
metric_json(const struct merge_metric_row *r)
{
	const struct spanquery_row *q = r->user;
	json_t *o;

	o = json_pack(
		"{s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:o, s:o}",
		"source", tool_sources[tool_source_of_merge(r->source)].name,
		"requests", (json_int_t)q->requests, "p50_ms", q->p50_ms,
		"p95_ms", q->p95_ms, "p99_ms", q->p99_ms, "error_rate_pct",
		error_pct(r), "errors", (json_int_t)q->errors, "client_errors",
		(json_int_t)q->client_errors, "client_error_rate_pct",
		merge_pct((double)q->client_errors, (double)q->requests),
		"error_codes", tool_codes_json(q->codes[0]),
		"client_error_codes", tool_codes_json(q->codes[1]));
	if (o == NULL)
		return NULL;
	switch (q->protocol) {
	case SPANQUERY_HTTP:
		json_object_set_new(o, "route", json_string(q->k1));
		json_object_set_new(o, "method", json_string(q->k2));
		break;
	case SPANQUERY_GRPC:
		json_object_set_new(o, "method", json_string(q->k1));
		break;
	default:
		json_object_set_new(o, "operation", json_string(q->k1));
		json_object_set_new(o, "table", json_string(q->k2));
		break;
	}
	return o;
}

/* " SELECT stock: 1 error in 4,061 calls (0.025%) [OTLP]": a rate
 * with the counts behind it (a Prometheus row's rounded). */
static int
errors_counted(struct buf *b, const struct merge_metric_row *r)
{
	const struct spanquery_row *q = r->user;
	char e[32], n[32], pct[RENDER_PCT_MAX];
	int rc;

	render_count(q->errors, e, sizeof(e));
	render_count(q->requests, n, sizeof(n));
	render_rate(error_pct(r), pct, sizeof(pct));
	if ((rc = key_short(b, q)) != STATUS_OK)
		return rc;
	return buf_printf(b, ": %s error%s in %s call%s (%s) [%s]", e,
			  q->errors == 1 ? "" : "s", n,
			  q->requests == 1 ? "" : "s", pct,
			  tool_sources[tool_source_of_merge(r->source)].label);
}

/* " POST /login: 272 client errors in 4,061 calls (6.7%, mostly 401)
 * [OTLP]" */
static int
client_errors_counted(struct buf *b, const struct merge_metric_row *r)
{
	const struct spanquery_row *q = r->user;
	char e[32], n[32], pct[RENDER_PCT_MAX];
	json_t *codes;
	const char *top;
	int rc;

	render_count(q->client_errors, e, sizeof(e));
	render_count(q->requests, n, sizeof(n));
	render_pct(q->client_errors, q->requests, pct, sizeof(pct));
	if ((rc = key_short(b, q)) != STATUS_OK)
		return rc;
	codes = tool_codes_json(q->codes[1]);
	top = json_string_value(
		json_object_get(json_array_get(codes, 0), "code"));
	rc = buf_printf(b, ": %s client error%s in %s call%s (%s%s%s) [%s]", e,
			q->client_errors == 1 ? "" : "s", n,
			q->requests == 1 ? "" : "s", pct,
			top != NULL ? ", mostly " : "", top != NULL ? top : "",
			tool_sources[tool_source_of_merge(r->source)].label);
	json_decref(codes);
	return rc;
}

/*
 * "Analysis:" names the worst error rate (and, when another key has more
 * errors, the most errors: a rare failure of a busy route outweighs one
 * failed call of a quiet one), the key with most client errors (the
 * callers' mistakes, apart), the slowest key (P95), and keys on which the
 * two sources disagree (merge_rows_agree: those keep a row per source):
 * usually one side is sampling, or instrumenting a different hop.
 */
static int
analysis(struct buf *b, const struct merge_metric_group *g, size_t ng)
{
	const struct merge_metric_row *worst = NULL, *most = NULL,
				      *slowest = NULL, *mostc = NULL;
	size_t disagree = 0;
	int rc;

	for (size_t i = 0; i < ng; i++)
		for (int s = 0; s < MERGE_SOURCE_COUNT; s++) {
			const struct merge_metric_row *r = g[i].row[s];

			if (r == NULL)
				continue;
			const struct spanquery_row *q = r->user;

			if (error_pct(r) > 0 &&
			    (worst == NULL || error_pct(r) > error_pct(worst) ||
			     (error_pct(r) == error_pct(worst) &&
			      q->errors > errors_of(worst))))
				worst = r;
			if (q->errors > 0 &&
			    (most == NULL || q->errors > errors_of(most)))
				most = r;
			if (q->client_errors > 0 &&
			    (mostc == NULL ||
			     q->client_errors >
				     ((const struct spanquery_row *)mostc->user)
					     ->client_errors))
				mostc = r;
			if (slowest == NULL || r->p95_ms > slowest->p95_ms)
				slowest = r;
		}
	if ((rc = buf_puts(b, "\nAnalysis: ")) != STATUS_OK)
		return rc;
	if (worst != NULL) {
		rc = buf_puts(b, "highest error rate ");
		if (rc == STATUS_OK)
			rc = errors_counted(b, worst);
		if (rc == STATUS_OK && most != NULL &&
		    errors_of(most) > errors_of(worst)) {
			rc = buf_puts(b, "; most errors ");
			if (rc == STATUS_OK)
				rc = errors_counted(b, most);
		}
	} else {
		rc = buf_puts(b, "no errors");
	}
	/* client errors are the callers' (4xx, UNAUTHENTICATED...): named
	 * apart, they do not make the service unhealthy */
	if (rc == STATUS_OK && mostc != NULL) {
		rc = buf_puts(b, "; most client errors ");
		if (rc == STATUS_OK)
			rc = client_errors_counted(b, mostc);
	}
	if (rc == STATUS_OK && slowest != NULL) {
		char p95[24];

		render_ms(slowest->p95_ms, p95, sizeof(p95));
		rc = buf_puts(b, "; slowest ");
		if (rc == STATUS_OK)
			rc = key_short(b, slowest->user);
		if (rc == STATUS_OK)
			rc = buf_printf(b, " (P95 %s) [%s]", p95,
					tool_sources[tool_source_of_merge(
							     slowest->source)]
						.label);
	}
	for (size_t i = 0; i < ng && rc == STATUS_OK; i++) {
		const struct merge_metric_row *e = g[i].row[MERGE_SOURCE_EBPF];
		const struct merge_metric_row *o = g[i].row[MERGE_SOURCE_OTLP];

		if (e == NULL || o == NULL || merge_rows_agree(e, o))
			continue;
		if (disagree++ >= 3)
			continue;
		rc = buf_puts(b,
			      disagree == 1 ? "; sources disagree on " : ", ");
		if (rc == STATUS_OK)
			rc = key_short(b, e->user);
		if (rc == STATUS_OK)
			rc = buf_printf(b,
					" (eBPF %" PRIu64 " req, P95 %.1fms vs "
					"OTLP %" PRIu64 " req, P95 %.1fms)",
					e->requests, e->p95_ms, o->requests,
					o->p95_ms);
	}
	if (rc == STATUS_OK && disagree > 3)
		rc = buf_printf(b, " and %zu more", disagree - 3);
	if (rc == STATUS_OK)
		rc = buf_puts(b, "\n");
	return rc;
}

/*
 * query_metrics' third source: the service's histograms in the Prometheus
 * its config maps it to, as rows beside the span sources' (prow: their
 * spanquery_row form, requests rounded; merge rows carry the exact error
 * rate).  Runs while the store computes the span sources' statements.
 */
static int
prom_rows(struct call *call, struct grafana *g,
	  const struct promcalls_spec *spec, const struct spanquery_filter *f,
	  struct promcalls_result **res, struct spanquery_row **prow,
	  char *status, size_t cap)
{
	struct grafana_opts o = {.cancelled = call_cancelled_arg,
				 .arg = call,
				 .request_id = call_request_id(call)};
	struct grafana_error ge = {0};
	int rc = promcalls_query(g, &o, spec, f, res, &ge);

	if (rc == STATUS_CANCELLED || rc == STATUS_NOMEM)
		return rc;
	if (rc != STATUS_OK) {
		snprintf(status, cap, "unavailable: %.200s (instance %.64s)",
			 ge.client, grafana_name(g));
		return STATUS_OK;
	}
	*prow = calloc((*res)->n + 1, sizeof(**prow));
	if (*prow == NULL)
		return STATUS_NOMEM;
	for (size_t j = 0; j < (*res)->n; j++) {
		const struct promcalls_row *p = &(*res)->rows[j];

		(*prow)[j] = (struct spanquery_row){
			.protocol = p->protocol,
			.k1 = p->k1,
			.k2 = p->k2,
			.requests = (uint64_t)llround(p->requests),
			.errors = (uint64_t)llround(p->errors),
			.p50_ms = p->p50_ms,
			.p95_ms = p->p95_ms,
			.p99_ms = p->p99_ms,
		};
	}
	snprintf(status, cap, "%s", (*res)->n > 0 ? "ok" : "no_data");
	return STATUS_OK;
}

/* One query_metrics call (or an alias's) across its phases, and the
 * argument of its tool_round callbacks; metrics_call frees it. */
struct metrics_state {
	struct call *call;
	const struct metrics_req *req;
	int64_t now;
	struct spanquery_filter f;
	struct timerange tr;
	/* sources: asked; shown: reported (a store that cannot be reached
	 * is reported for its span sources, and not asked) */
	unsigned sources, shown;
	int asked; /* span sources asked */
	struct tool_conns k;
	char status[TOOL_SRCS][TOOL_STATUS_MAX];
	bool rollup[TOOL_SPAN_SRCS];
	struct spanquery_metrics *m[TOOL_SPAN_SRCS];
	struct grafana *g; /* when config maps the service to its series */
	struct promcalls_spec spec;
	struct promcalls_result *pres;
	struct spanquery_row *prow; /* pres's rows as spanquery_rows */
	size_t nrows, ng;	    /* rows of every source, merged groups */
	bool any_rollup, truncated;
	struct merge_metric_row *rows;
	struct merge_metric_group *groups;
	struct redact_kept own;
	struct buf b;
	int total_src[SPANQUERY_PROTOCOLS]; /* the whole-service line's */
	bool has_total[SPANQUERY_PROTOCOLS];
	bool any_merged;	      /* an [eBPF+OTLP] section was written */
	char svc[256], svc_note[320]; /* the service as resolved */
	/* compare_to: the baseline range, its filter and rows */
	const char *compare_to;
	struct timerange btr;
	struct spanquery_filter bf;
	bool brollup[TOOL_SPAN_SRCS];
	struct spanquery_metrics *mb[TOOL_SPAN_SRCS];
	char bstatus[TOOL_SRCS][TOOL_STATUS_MAX];
	/* step: the timeline's, 0 without one; per span source */
	int64_t step_s;
	char tl_status[TOOL_SPAN_SRCS][TOOL_STATUS_MAX];
	struct timeline *tl[TOOL_SPAN_SRCS];
};

static int
metrics_send(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;

	return spanquery_metrics_send(c, tool_sources[i].name, &x->f, x->now,
				      &x->rollup[i], pe);
}

static int
metrics_recv(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;

	return spanquery_metrics_recv(c, x->rollup[i], &x->m[i], pe);
}

/* The same statements over the baseline range (compare_to). */
static int
baseline_send(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;

	return spanquery_metrics_send(c, tool_sources[i].name, &x->bf, x->now,
				      &x->brollup[i], pe);
}

/* The order of a row's key: protocol, then k1, then k2. */
static int
row_key_cmp(const void *a, const void *b)
{
	const struct spanquery_row *x = a, *y = b;
	int c;

	if (x->protocol != y->protocol)
		return x->protocol < y->protocol ? -1 : 1;
	if ((c = strcmp(x->k1, y->k1)) != 0)
		return c;
	return strcmp(x->k2, y->k2);
}

/* Sorted by key once read, for baseline_row's binary search (a key per
 * row of the answer: a scan each was quadratic in the keys). */
static int
baseline_recv(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;
	int rc = spanquery_metrics_recv(c, x->brollup[i], &x->mb[i], pe);

	if (rc == STATUS_OK && x->mb[i] != NULL && x->mb[i]->n > 1)
		qsort(x->mb[i]->rows, x->mb[i]->n, sizeof(x->mb[i]->rows[0]),
		      row_key_cmp);
	return rc;
}

/* Source i's baseline row of q's key (NULL: none, or no baseline). */
static const struct spanquery_row *
baseline_row(const struct metrics_state *x, int i,
	     const struct spanquery_row *q)
{
	const struct spanquery_metrics *m =
		i >= 0 && i < TOOL_SPAN_SRCS ? x->mb[i] : NULL;

	if (m == NULL || m->n == 0)
		return NULL;
	return bsearch(q, m->rows, m->n, sizeof(m->rows[0]), row_key_cmp);
}

/* Arguments: the filter, the range, and the sources to ask; *result is
 * the answer when they are bad. */
static int
metrics_args(struct metrics_state *x, const json_t *args, json_t **result)
{
	char err[512];

	if (metrics_filter(args, x->req, &x->f, err, sizeof(err)) !=
		    STATUS_OK ||
	    tool_time_range(args, "1h", QUERY_RANGE, x->now, &x->tr, err,
			    sizeof(err)) != STATUS_OK ||
	    (tool_arg_str(args, "step") != NULL &&
	     timeline_step(x->tr.from_ms, x->tr.to_ms,
			   tool_arg_str(args, "step"), &x->step_s, err,
			   sizeof(err)) != STATUS_OK)) {
		*result = tool_result_error("%s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->f.from_ms = x->tr.from_ms;
	x->f.to_ms = x->tr.to_ms;
	x->f.service =
		tool_service_name(x->call, x->f.service, x->svc, sizeof(x->svc),
				  x->svc_note, sizeof(x->svc_note));
	x->compare_to = tool_arg_str(args, "compare_to");
	if (x->compare_to != NULL) {
		if (timerange_baseline(&x->tr, x->compare_to, &x->btr, err,
				       sizeof(err)) != STATUS_OK) {
			*result = tool_result_error("%s", err);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		x->bf = x->f;
		x->bf.from_ms = x->btr.from_ms;
		x->bf.to_ms = x->btr.to_ms;
	}
	x->sources = x->req->sources & ~(1u << TOOL_SRC_PROM);
	if (x->req->sources & (1u << TOOL_SRC_PROM))
		x->g = instances_for_service(call_instances(x->call),
					     x->f.service, &x->spec);
	if (x->g != NULL)
		x->sources |= 1u << TOOL_SRC_PROM;
	x->shown = x->sources;
	return STATUS_OK;
}

static int
timeline_send_one(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;

	return timeline_send(c, tool_sources[i].name, &x->f, x->step_s, x->now,
			     pe);
}

static int
timeline_recv_one(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct metrics_state *x = arg;

	return timeline_recv(c, &x->f, x->step_s, &x->tl[i], pe);
}

/* The timelines of the span sources that had rows, once their rows are
 * read (the same connections, a second round). */
static int
timeline_fetch(struct metrics_state *x)
{
	struct tool_round round = {.call = x->call,
				   .k = &x->k,
				   .status = x->tl_status,
				   .send = timeline_send_one,
				   .recv = timeline_recv_one,
				   .arg = x};

	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if ((x->sources & (1u << i)) && strcmp(x->status[i], "ok") == 0)
			round.mask |= 1u << i;
	return round.mask != 0 ? tool_round_run(&round) : STATUS_OK;
}

/* Fetch: the span sources' statements out, Prometheus while the store
 * works, then the span sources' rows; *result is the answer when there
 * is no source to ask. */
static int
metrics_fetch(struct metrics_state *x, json_t **result)
{
	struct tool_round round = {.call = x->call,
				   .k = &x->k,
				   .status = x->status,
				   .send = metrics_send,
				   .recv = metrics_recv,
				   .arg = x};
	int rc;

	if (tool_conns_get(x->call, &x->k) != STATUS_OK) {
		if (x->g == NULL) {
			*result = tool_result_error("%s", x->k.why);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
		/* Prometheus still answers without the store */
		for (int i = 0; i < TOOL_SPAN_SRCS; i++)
			snprintf(x->status[i], sizeof(x->status[i]),
				 "unavailable: %.250s", x->k.why);
		x->sources &= 1u << TOOL_SRC_PROM;
	}
	(void)call_progress(x->call, 1, 3, "querying the sources");
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		x->asked += (x->sources & (1u << i)) != 0;
	round.mask = x->sources;
	if ((rc = tool_round_send(&round)) != STATUS_OK)
		return rc;
	if (x->g != NULL) {
		rc = prom_rows(x->call, x->g, &x->spec, &x->f, &x->pres,
			       &x->prow, x->status[TOOL_SRC_PROM],
			       sizeof(x->status[TOOL_SRC_PROM]));
		if (rc != STATUS_OK || call_cancelled(x->call))
			return rc == STATUS_NOMEM ? rc : STATUS_CANCELLED;
		if (x->pres != NULL) {
			x->nrows += x->pres->n;
			x->truncated |= x->pres->truncated;
		}
	}
	if ((rc = tool_round_recv(&round)) != STATUS_OK)
		return rc;
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		const struct spanquery_metrics *m = x->m[i];

		if (!(x->sources & (1u << i)) || x->status[i][0] != '\0')
			continue;
		snprintf(x->status[i], sizeof(x->status[i]), "%s",
			 m->n > 0 ? "ok" : "no_data");
		x->nrows += m->n;
		x->any_rollup |= m->rollup && m->n > 0;
		x->truncated |= m->truncated;
	}
	if (x->compare_to != NULL) {
		/* the baseline: the span sources that answered, again */
		round.send = baseline_send;
		round.recv = baseline_recv;
		round.status = x->bstatus;
		round.mask = x->sources & ((1u << TOOL_SPAN_SRCS) - 1);
		(void)call_progress(x->call, 2, 4, "querying the baseline");
		if ((rc = tool_round_run(&round)) != STATUS_OK)
			return rc;
	}
	return x->step_s > 0 ? timeline_fetch(x) : STATUS_OK;
}

/* Merge: every source's rows as merge rows, grouped by key (protocol
 * first) and sorted by traffic; then the keys redacted. */
static int
metrics_merge(struct metrics_state *x)
{
	const struct redact *red = call_redact(x->call);
	size_t nrows = 0;
	int rc;

	(void)call_progress(x->call, 2, 3, "merging");
	x->rows = calloc(x->nrows + 1, sizeof(*x->rows));
	x->groups = calloc(x->nrows + 1, sizeof(*x->groups));
	if (x->rows == NULL || x->groups == NULL)
		return STATUS_NOMEM;
	for (int i = 0; i < TOOL_SRCS; i++) {
		bool prom = i == TOOL_SRC_PROM;
		struct spanquery_row *src = prom	      ? x->prow
					    : x->m[i] != NULL ? x->m[i]->rows
							      : NULL;
		size_t n = prom ? (x->pres != NULL ? x->pres->n : 0)
			   : x->m[i] != NULL ? x->m[i]->n
					     : 0;

		for (size_t j = 0; src != NULL && j < n; j++) {
			const struct spanquery_row *q = &src[j];
			struct merge_metric_row *r = &x->rows[nrows++];

			/* the protocol is the first key part: one merge */
			r->key[0] = spanquery_protocol_name(q->protocol);
			r->key[1] = q->k1;
			r->key[2] = q->k2;
			r->source = tool_sources[i].merge;
			r->requests = q->requests;
			r->p50_ms = q->p50_ms;
			r->p95_ms = q->p95_ms;
			r->p99_ms = q->p99_ms;
			r->user = q;
			r->error_rate_pct =
				prom ? merge_pct(x->pres->rows[j].errors,
						 x->pres->rows[j].requests)
				     : merge_pct((double)q->errors,
						 (double)q->requests);
		}
	}
	x->nrows = nrows;
	if ((rc = merge_metrics(x->rows, nrows, MERGE_SORT_REQUESTS, x->groups,
				&x->ng, NULL)) != STATUS_OK)
		return rc;
	/* after merging: keys that differ only in a secret stay apart */
	for (size_t j = 0; j < nrows; j++) {
		struct spanquery_row *q =
			(struct spanquery_row *)x->rows[j].user;

		q->k1 = redact_keep(&x->own, red, q->k1);
		q->k2 = redact_keep(&x->own, red, q->k2);
	}
	return STATUS_OK;
}

/* Text: the note, the sources that failed, and the heading, or that
 * there is nothing; *result is the answer when the service has no spans
 * at all. */
static int
metrics_head(struct metrics_state *x, const json_t *args, json_t **result)
{
	struct buf *b = &x->b;
	char rdesc[128], why[512];
	int failed = 0;

	timerange_describe(&x->tr, x->now, rdesc, sizeof(rdesc));
	if (x->req->note != NULL)
		buf_printf(b, "%s\n\n", x->req->note);
	if (x->svc_note[0] != '\0')
		buf_printf(b, "%s\n\n", x->svc_note);
	for (int i = 0; i < TOOL_SRCS; i++)
		if ((x->shown & (1u << i)) &&
		    strncmp(x->status[i], "unavailable", 11) == 0) {
			buf_printf(b, "%s %s %s\n", tool_sources[i].label,
				   tool_sources[i].what, x->status[i]);
			tool_fit(b);
		}
	if (x->ng > 0) {
		buf_printf(b, "Metrics for %s, %s%s\n", x->f.service, rdesc,
			   x->any_rollup ? " (rollups: percentiles within "
					   "0.5%)"
					 : "");
		tool_fit(b);
		return STATUS_OK;
	}
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		failed += (x->sources & (1u << i)) &&
			  strncmp(x->status[i], "unavailable", 11) == 0;
	if (x->k.c[0] != NULL && failed < x->asked &&
	    tool_unknown_service(x->k.c[0], x->f.service, "list_services", why,
				 sizeof(why))) {
		*result = tool_result_error("No metrics found: %s", why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	buf_printf(b, "No metrics found for service \"%s\" in %s", x->f.service,
		   rdesc);
	tool_fit(b);
	describe_filters(b, args);
	buf_puts(b, "\n");
	tool_fit(b);
	return STATUS_OK;
}

/*
 * "HTTP, whole service [OTLP]: 2,526 requests (0.70/s), P50 2.9ms, P95
 * 65ms, P99 90ms, Errors: 0.28% (502 ×7); client errors: 2.5% (404 ×43):
 * DEGRADED": every row of protocol p together, from the span source that
 * saw the most of them (a call both saw is one call, not two).
 */
static int
whole_service_line(struct metrics_state *x, int p)
{
	const struct spanquery_row *tot = NULL;
	struct health_tolerances t = tool_health_tolerances(x->call);
	double secs = (double)(x->tr.to_ms - x->tr.from_ms) / 1000.0;
	char n[32], rate[32], p50[24], p95[24], p99[24];
	enum health_status h;
	int src = 0, rc;

	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (x->m[i] != NULL && x->m[i]->total[p].requests > 0 &&
		    (tot == NULL ||
		     x->m[i]->total[p].requests > tot->requests)) {
			tot = &x->m[i]->total[p];
			src = i;
		}
	if (tot == NULL)
		return STATUS_OK;
	x->total_src[p] = src;
	x->has_total[p] = true;
	render_count(tot->requests, n, sizeof(n));
	render_ms(tot->p50_ms, p50, sizeof(p50));
	render_ms(tot->p95_ms, p95, sizeof(p95));
	render_ms(tot->p99_ms, p99, sizeof(p99));
	if ((double)tot->requests / secs >= 1)
		snprintf(rate, sizeof(rate), "%.1f/s",
			 (double)tot->requests / secs);
	else
		snprintf(rate, sizeof(rate), "%.2f/min",
			 60.0 * (double)tot->requests / secs);
	h = health_judge(&t, tot->requests, tot->errors, tot->client_errors);
	rc = buf_printf(&x->b,
			"\n%s, whole service [%s]: %s requests (%s), "
			"P50 %s, P95 %s, P99 %s, ",
			proto_titles[p], tool_sources[src].label, n, rate, p50,
			p95, p99);
	if (rc == STATUS_OK)
		rc = tool_errors_text(&x->b, tot->requests, tot->errors,
				      tot->client_errors, -1, tot->codes[0],
				      tot->codes[1]);
	if (rc == STATUS_OK && x->compare_to != NULL) {
		const struct spanquery_row *bt =
			x->mb[src] != NULL ? &x->mb[src]->total[p] : NULL;
		char change[160];

		tool_change_text(
			&(struct tool_figures){tot->requests, tot->errors,
					       tot->p95_ms},
			bt != NULL
				? &(struct tool_figures){bt->requests,
							 bt->errors, bt->p95_ms}
				: NULL,
			change, sizeof(change), NULL);
		rc = buf_printf(&x->b, "; vs baseline: %s", change);
	}
	if (rc == STATUS_OK)
		rc = buf_printf(&x->b, ": %s\n", health_name(h));
	return rc;
}

/* A step's start as the timeline shows it: "2026-11-27" for steps of
 * days, "11-27 10:05" when the range spans days, else "10:05" (UTC). */
static void
step_time(int64_t ms, const struct metrics_state *x, bool days, char *out,
	  size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, cap,
		 x->step_s % 86400 == 0 ? "%Y-%m-%d"
		 : days			? "%m-%d %H:%M"
					: "%H:%M",
		 &tm);
}

/* One series as a table, a line per step (empty steps as 0 requests);
 * STATUS_LIMIT when the budget ended it. */
static int
timeline_table(struct buf *b, const struct metrics_state *x, int i, int p)
{
	const struct timeline *t = x->tl[i];
	const char *hdr[] = {"time", "requests", "errors", "client errors",
			     "P95"};
	char from[TIMERANGE_FORMAT_MAX], step[16], cell[5][32];
	const char *cells[5] = {cell[0], cell[1], cell[2], cell[3], cell[4]};
	bool first, last,
		days = (t->first_ms / 86400000) !=
		       (t->first_ms + ((int64_t)t->n - 1) * t->step_s * 1000) /
			       86400000;

	timerange_format(t->first_ms, from, sizeof(from));
	pointquery_step_format(t->step_s, step, sizeof(step));
	buf_printf(b, "\n%s timeline [%s], %s steps from %s, every key:\n",
		   proto_titles[p], tool_sources[i].label, step, from);
	if (tool_fit(b) != STATUS_OK || tool_md_row(b, hdr, 5) != STATUS_OK ||
	    tool_md_rule(b, 5) != STATUS_OK)
		return STATUS_LIMIT;
	for (size_t k = 0; k < t->n; k++) {
		const struct timeline_point *pt = &t->p[p][k];

		step_time(t->first_ms + (int64_t)k * t->step_s * 1000, x, days,
			  cell[0], sizeof(cell[0]));
		render_count(pt->requests, cell[1], sizeof(cell[1]));
		render_count(pt->errors, cell[2], sizeof(cell[2]));
		render_count(pt->client_errors, cell[3], sizeof(cell[3]));
		if (pt->requests > 0)
			render_ms(pt->p95_ms, cell[4], sizeof(cell[4]));
		else
			snprintf(cell[4], sizeof(cell[4]), "-");
		if (b->len + TAIL_ROOM > b->max ||
		    tool_md_row(b, cells, 5) != STATUS_OK)
			return STATUS_LIMIT;
	}
	/* a partial step has fewer requests: say so, lest it read as a drop */
	first = t->first_ms < x->f.from_ms;
	last = t->first_ms + (int64_t)t->n * t->step_s * 1000 > x->f.to_ms;
	if (!first && !last)
		return STATUS_OK;
	buf_printf(b, "(%s partial: the range %s inside %s)\n",
		   first && last ? "first and last steps"
		   : first	 ? "first step"
				 : "last step",
		   first && last ? "starts and ends"
		   : first	 ? "starts"
				 : "ends",
		   first && last ? "them" : "it");
	return tool_fit(b);
}

/* Text: the timelines (step), per protocol and source. */
static void
timeline_text(struct metrics_state *x)
{
	struct buf *b = &x->b;

	/* one table per protocol, from the source that saw the most calls
	 * (both are in the structured content): a call both saw is one */
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		int best = -1;
		uint64_t most = 0;

		for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
			uint64_t n = 0;

			if (x->tl[i] == NULL || x->tl[i]->p[p] == NULL)
				continue;
			for (size_t k = 0; k < x->tl[i]->n; k++)
				n += x->tl[i]->p[p][k].requests;
			if (best < 0 || n > most) {
				best = i;
				most = n;
			}
		}
		if (best >= 0 && timeline_table(b, x, best, p) != STATUS_OK) {
			tool_fit(b);
			x->truncated = true;
			return;
		}
	}
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (strncmp(x->tl_status[i], "unavailable", 11) == 0) {
			buf_printf(b, "%s timeline %s\n", tool_sources[i].label,
				   x->tl_status[i]);
			tool_fit(b);
		}
}

/* Structured content: the timelines as columns per source and protocol. */
static json_t *
timeline_json(const struct metrics_state *x)
{
	char step[16], ts[TIMERANGE_FORMAT_MAX];
	json_t *series = json_array();

	pointquery_step_format(x->step_s, step, sizeof(step));
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++)
		for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
			const struct timeline *t = x->tl[i];
			json_t *s, *col[5];

			if (t == NULL || t->p[p] == NULL)
				continue;
			s = json_pack(
				"{s:s, s:s, s:[], s:[], s:[], s:[], s:[]}",
				"source", tool_sources[i].name, "protocol",
				spanquery_protocol_name(p), "t", "requests",
				"errors", "client_errors", "p95_ms");
			if (s == NULL)
				continue;
			col[0] = json_object_get(s, "t");
			col[1] = json_object_get(s, "requests");
			col[2] = json_object_get(s, "errors");
			col[3] = json_object_get(s, "client_errors");
			col[4] = json_object_get(s, "p95_ms");
			for (size_t k = 0; k < t->n; k++) {
				const struct timeline_point *pt = &t->p[p][k];

				timerange_format(
					t->first_ms +
						(int64_t)k * t->step_s * 1000,
					ts, sizeof(ts));
				json_array_append_new(col[0], json_string(ts));
				json_array_append_new(
					col[1],
					json_integer((json_int_t)pt->requests));
				json_array_append_new(
					col[2],
					json_integer((json_int_t)pt->errors));
				json_array_append_new(
					col[3],
					json_integer(
						(json_int_t)pt->client_errors));
				json_array_append_new(
					col[4], pt->requests > 0
							? json_real(pt->p95_ms)
							: json_null());
			}
			json_array_append_new(series, s);
		}
	return json_pack("{s:s, s:o}", "step", step, "series", series);
}

/* Text: one section per protocol and source, keys by traffic, as many
 * lines as fit; then the analysis and the notes.  A line, the analysis or
 * a note that does not fit the budget is cut where it failed (tool_fit)
 * and the text goes on. */
/* Group j's eBPF and OTLP rows agree (merge_rows_agree): one
 * [eBPF+OTLP] row stands for both. */
static bool
group_merged(const struct merge_metric_group *g)
{
	const struct merge_metric_row *e = g->row[MERGE_SOURCE_EBPF],
				      *o = g->row[MERGE_SOURCE_OTLP];

	return e != NULL && o != NULL && merge_rows_agree(e, o);
}

/* The lines of protocol p: section "[eBPF+OTLP]" (merged: true) or one
 * source's (merged: false, source i) rows, keys by traffic. */
static void
metrics_section(struct metrics_state *x, int p, int i, bool merged,
		const struct health_tolerances *t)
{
	struct buf *b = &x->b;
	bool header = false;

	for (size_t j = 0; j < x->ng && !x->truncated; j++) {
		const struct merge_metric_group *g = &x->groups[j];
		const struct merge_metric_row *r =
			merged ? g->row[MERGE_SOURCE_OTLP]
			       : g->row[tool_sources[i].merge];

		if (r == NULL ||
		    ((const struct spanquery_row *)r->user)->protocol != p ||
		    (r->source != MERGE_SOURCE_PROMETHEUS &&
		     group_merged(g) != merged))
			continue;
		if (!header) {
			buf_printf(b, "\n%s Metrics [%s]:\n", proto_titles[p],
				   merged ? "eBPF+OTLP"
					  : tool_sources[i].label);
			tool_fit(b);
			header = true;
			x->any_merged |= merged;
		}
		if (b->len + TAIL_ROOM > b->max ||
		    metric_line(b, r, merged ? g->row[MERGE_SOURCE_EBPF] : NULL,
				t, x->compare_to != NULL,
				baseline_row(x, tool_source_of_merge(r->source),
					     r->user)) != STATUS_OK) {
			tool_fit(b);
			x->truncated = true;
		}
	}
}

/*
 * "Baseline (2026-11-27T10:00:00Z .. 11:00:00Z, compare_to \"1d\"): P95
 * of POST /checkout +240% (20ms, now 68ms); errors of GET /pay +2.0 pp":
 * the largest latency and error-rate rises over the span rows that had
 * calls in both ranges.
 */
static void
baseline_text(struct metrics_state *x)
{
	const struct merge_metric_row *slow = NULL, *bad = NULL;
	const struct spanquery_row *slow_b = NULL, *bad_b = NULL;
	double dslow = 0, dbad = 0;
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX];
	struct buf *b = &x->b;

	for (size_t j = 0; j < x->nrows; j++) {
		const struct merge_metric_row *r = &x->rows[j];
		const struct spanquery_row *q = r->user, *bq;
		double d;

		if (r->source == MERGE_SOURCE_PROMETHEUS ||
		    (bq = baseline_row(x, tool_source_of_merge(r->source),
				       q)) == NULL ||
		    bq->requests == 0 || q->requests == 0)
			continue;
		d = bq->p95_ms > 0 ? 100 * (q->p95_ms - bq->p95_ms) / bq->p95_ms
				   : 0;
		if (d > dslow) {
			dslow = d;
			slow = r;
			slow_b = bq;
		}
		d = merge_pct((double)q->errors, (double)q->requests) -
		    merge_pct((double)bq->errors, (double)bq->requests);
		if (d > dbad) {
			dbad = d;
			bad = r;
			bad_b = bq;
		}
	}
	timerange_format(x->btr.from_ms, from, sizeof(from));
	timerange_format(x->btr.to_ms, to, sizeof(to));
	buf_printf(b, "\nBaseline %s .. %s (compare_to \"%s\"): ", from, to,
		   x->compare_to);
	if (slow != NULL) {
		char ch[RENDER_PCT_MAX], was[24], now[24];

		render_change(dslow, "%", ch, sizeof(ch));
		render_ms(slow_b->p95_ms, was, sizeof(was));
		render_ms(slow->p95_ms, now, sizeof(now));
		buf_puts(b, "largest P95 rise ");
		(void)key_short(b, slow->user);
		buf_printf(
			b, " %s (%s, now %s) [%s]", ch, was, now,
			tool_sources[tool_source_of_merge(slow->source)].label);
	}
	if (bad != NULL) {
		char ch[RENDER_PCT_MAX], was[RENDER_PCT_MAX],
			now[RENDER_PCT_MAX];
		const struct spanquery_row *q = bad->user;

		render_change(dbad, " pp", ch, sizeof(ch));
		render_pct(bad_b->errors, bad_b->requests, was, sizeof(was));
		render_pct(q->errors, q->requests, now, sizeof(now));
		buf_puts(b, slow != NULL ? "; largest error-rate rise "
					 : "largest error-rate rise ");
		(void)key_short(b, q);
		buf_printf(
			b, " %s (%s, now %s) [%s]", ch, was, now,
			tool_sources[tool_source_of_merge(bad->source)].label);
	}
	if (slow == NULL && bad == NULL)
		buf_puts(b, "no key is slower or fails more than then");
	buf_puts(b, "\n");
	tool_fit(b);
}

static void
metrics_text(struct metrics_state *x)
{
	struct health_tolerances t = tool_health_tolerances(x->call);
	struct buf *b = &x->b;

	for (int p = 0; p < SPANQUERY_PROTOCOLS && !x->truncated; p++) {
		if (whole_service_line(x, p) != STATUS_OK) {
			tool_fit(b);
			x->truncated = true;
		}
		metrics_section(x, p, 0, true, &t);
		for (int i = 0; i < TOOL_SRCS; i++)
			metrics_section(x, p, i, false, &t);
	}
	if (x->any_merged) {
		buf_puts(b, "\n[eBPF+OTLP] rows: both sources saw the same "
			    "calls (counts and errors within 1%, P50 and P95 "
			    "within 10% or 1 ms): OTLP's numbers, eBPF's count "
			    "when it differs\n");
		tool_fit(b);
	}
	if (x->compare_to != NULL && x->ng > 0)
		baseline_text(x);
	if (x->ng > 0 && analysis(b, x->groups, x->ng) != STATUS_OK) {
		tool_fit(b);
		x->truncated = true;
	}
	if (x->step_s > 0)
		timeline_text(x);
	if (x->pres != NULL && x->pres->n > 0) {
		buf_puts(b, "[Prometheus] rows come from the service's "
			    "duration histograms: requests are increase() "
			    "over the range (extrapolated to its edges), "
			    "percentiles histogram_quantile over the buckets "
			    "(as fine as their bounds)\n");
		tool_fit(b);
	}
	if (x->truncated) {
		buf_puts(b, "(more rows than fit in this answer: they are all "
			    "in the structured content; narrow the filters to "
			    "read them here)\n");
		tool_fit(b);
	}
}

/* A row's "baseline" (its figures then, or null) and "change". */
static int
baseline_json(const struct metrics_state *x, const struct merge_metric_row *r,
	      json_t *o)
{
	const struct spanquery_row *q = r->user,
				   *bq = baseline_row(
					   x, tool_source_of_merge(r->source),
					   q);
	json_t *ch = json_object();
	char text[160];

	if (ch == NULL)
		return STATUS_NOMEM;
	tool_change_text(
		&(struct tool_figures){q->requests, q->errors, q->p95_ms},
		bq != NULL ? &(struct tool_figures){bq->requests, bq->errors,
						    bq->p95_ms}
			   : NULL,
		text, sizeof(text), ch);
	if (json_object_set_new(o, "change", ch) ||
	    json_object_set_new(
		    o, "baseline",
		    bq != NULL && bq->requests > 0
			    ? json_pack("{s:I, s:I, s:f, s:f}", "requests",
					(json_int_t)bq->requests, "errors",
					(json_int_t)bq->errors, "p50_ms",
					bq->p50_ms, "p95_ms", bq->p95_ms)
			    : json_null()))
		return STATUS_NOMEM;
	return STATUS_OK;
}

/* Structured content: every row, by protocol, in the text's order. */
static int
metrics_result(struct metrics_state *x, json_t **result)
{
	struct health_tolerances t = tool_health_tolerances(x->call);
	json_t *sc, *tot, *arr[SPANQUERY_PROTOCOLS] = {NULL};

	sc = json_pack("{s:s, s:o, s:{}, s:b}", "service", x->f.service,
		       "time_range", tool_range_json(&x->tr), "sources",
		       "rollup", x->any_rollup);
	if (sc == NULL)
		return STATUS_NOMEM;
	for (int i = 0; i < TOOL_SRCS; i++)
		if (x->shown & (1u << i))
			json_object_set_new(json_object_get(sc, "sources"),
					    tool_sources[i].name,
					    json_string(x->status[i]));
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		if ((arr[p] = json_array()) == NULL)
			goto nomem;
		json_object_set_new(sc, spanquery_protocol_name(p), arr[p]);
	}
	if (x->step_s > 0)
		json_object_set_new(sc, "timeline", timeline_json(x));
	for (size_t j = 0; j < x->ng; j++)
		for (int i = 0; i < TOOL_SRCS; i++) {
			const struct merge_metric_row *r =
				x->groups[j].row[tool_sources[i].merge];

			json_t *o;

			if (r == NULL)
				continue;
			o = metric_json(r);
			if (o != NULL && x->compare_to != NULL &&
			    r->source != MERGE_SOURCE_PROMETHEUS &&
			    baseline_json(x, r, o) != STATUS_OK) {
				json_decref(o);
				o = NULL;
			}
			if (o != NULL && r->source != MERGE_SOURCE_PROMETHEUS &&
			    (json_object_set_new(o, "merged",
						 json_boolean(group_merged(
							 &x->groups[j]))) ||
			     json_object_set_new(
				     o, "health",
				     json_string(health_name(
					     row_health(&t, r)))))) {
				json_decref(o);
				o = NULL;
			}
			json_array_append_new(
				arr[((const struct spanquery_row *)r->user)
					    ->protocol],
				o);
		}
	if ((tot = json_object()) == NULL ||
	    json_object_set_new(sc, "service_totals", tot) != 0)
		goto nomem;
	if (x->compare_to != NULL &&
	    json_object_set_new(sc, "baseline", tool_range_json(&x->btr)) != 0)
		goto nomem;
	for (int p = 0; p < SPANQUERY_PROTOCOLS; p++) {
		const struct spanquery_row *q;
		json_t *o;

		if (!x->has_total[p])
			continue;
		q = &x->m[x->total_src[p]]->total[p];
		o = json_pack(
			"{s:s, s:I, s:f, s:f, s:f, s:I, s:I, s:o, s:o, "
			"s:s}",
			"source", tool_sources[x->total_src[p]].name,
			"requests", (json_int_t)q->requests, "p50_ms",
			q->p50_ms, "p95_ms", q->p95_ms, "p99_ms", q->p99_ms,
			"errors", (json_int_t)q->errors, "client_errors",
			(json_int_t)q->client_errors, "error_codes",
			tool_codes_json(q->codes[0]), "client_error_codes",
			tool_codes_json(q->codes[1]), "health",
			health_name(health_judge(&t, q->requests, q->errors,
						 q->client_errors)));
		if (o == NULL ||
		    json_object_set_new(tot, spanquery_protocol_name(p), o))
			goto nomem;
	}
	return tool_result_buf(&x->b, sc, result);
nomem:
	json_decref(sc);
	return STATUS_NOMEM;
}

static int
metrics_call(struct call *call, const json_t *args, json_t **result,
	     const struct metrics_req *req)
{
	struct metrics_state x = {
		.call = call, .req = req, .now = clock_wall_ms()};
	int rc;

	buf_init(&x.b, call_text_budget(call));
	*result = NULL;
	if ((rc = metrics_args(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	if ((rc = metrics_fetch(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = metrics_merge(&x)) != STATUS_OK)
		goto out;
	if ((rc = metrics_head(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	metrics_text(&x);
	rc = metrics_result(&x, result);
out:
	tool_conns_put(&x.k);
	redact_kept_free(&x.own);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		spanquery_metrics_free(x.m[i]);
		spanquery_metrics_free(x.mb[i]);
		timeline_free(x.tl[i]);
	}
	promcalls_free(x.pres);
	free(x.prow);
	free(x.rows);
	free(x.groups);
	buf_free(&x.b);
	return tool_done(rc, result);
}

#define BOTH ((1u << TOOL_SRC_EBPF) | (1u << TOOL_SRC_OTLP))
#define ALL  (BOTH | (1u << TOOL_SRC_PROM))
#define EBPF (1u << TOOL_SRC_EBPF)

static int
query_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {ALL, 0, NULL};

	return metrics_call(call, args, result, &req);
}

static int
query_ebpf_http_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_HTTP, NULL};

	return metrics_call(call, args, result, &req);
}

static int
query_ebpf_grpc_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_GRPC, NULL};

	return metrics_call(call, args, result, &req);
}

static int
query_ebpf_sql_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_SQL, NULL};

	return metrics_call(call, args, result, &req);
}

#define DEPRECATED(old, new)                                                   \
	"Note: " old                                                           \
	" is deprecated and will be removed; call " new " (same arguments) "   \
							"or query_metrics / "  \
							"query_traces "        \
							"instead."

static int
query_beyla_http_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_HTTP,
					DEPRECATED("query_beyla_http_metrics",
						   "query_ebpf_http_metrics")};

	return metrics_call(call, args, result, &req);
}

static int
query_beyla_grpc_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_GRPC,
					DEPRECATED("query_beyla_grpc_metrics",
						   "query_ebpf_grpc_metrics")};

	return metrics_call(call, args, result, &req);
}

static int
query_beyla_sql_metrics(struct call *call, const json_t *args, json_t **result)
{
	const struct metrics_req req = {EBPF, 1u << SPANQUERY_SQL,
					DEPRECATED("query_beyla_sql_metrics",
						   "query_ebpf_sql_metrics")};

	return metrics_call(call, args, result, &req);
}

/* ---- query_traces ------------------------------------------------------- */

struct traces_req {
	unsigned sources;
	const char *note;
};

/* What span_label draws with: the call's redaction, for the status
 * message, and the details of the error and slow spans. */
struct label_ctx {
	const struct redact *r;
	const struct tool_details *det;
};

/* "[OTLP] payments: POST /charge (250ms) ERROR 402: declined ← SLOW
 * [server, HTTP 402, exception CardError: no funds]"; arg: a label_ctx.
 * query_traces' trees only: get_trace draws its own. */
static int
span_label(struct buf *b, const struct merge_node *node, void *arg)
{
	const struct label_ctx *lc = arg;
	const struct spanquery_span *s = node->span->user;
	const struct spanquery_detail *x = tool_details_of(lc->det, node);
	char dur[24], code[48], *msg = NULL;
	int rc;

	const char *parts[] = {render_source_label(node->span->source),
			       " ",
			       s->service,
			       ": ",
			       s->name,
			       " (",
			       dur,
			       ")"};

	render_ms((double)s->duration_ns / 1e6, dur, sizeof(dur));
	/* "%s %s: %s (%s)" without printf's cost, once per span; a line
	 * that does not fit is cut by the caller, whole */
	rc = STATUS_OK;
	for (size_t i = 0;
	     rc == STATUS_OK && i < sizeof(parts) / sizeof(*parts); i++)
		rc = buf_puts(b, parts[i]);
	/* a span both sources saw is not marked line by line: the analysis
	 * counts them ("N spans were seen by both eBPF and OTLP") and the
	 * structured content names them (also_seen_by): on the demo's
	 * traces the marks were 14% of the text's tokens */
	if (rc == STATUS_OK && s->status == 2) {
		const char *m;

		msg = redact_text(lc->r, s->status_message);
		m = msg ? msg : s->status_message ? s->status_message : "";
		tool_detail_code(x, code, sizeof(code));
		/* 120 bytes, never half a character: the text must stay
		 * UTF-8 for the answer to be written at all */
		rc = buf_printf(b, " ERROR%s%s%.*s", code,
				s->status_message ? ": " : "",
				(int)utf8_prefix(m, 120), m);
		free(msg);
	}
	if (rc == STATUS_OK)
		rc = tool_span_marks(b, node, x);
	return rc;
}

/*
 * structuredContent as JSON text, written as it goes (lib/json/jsondump's
 * writer, call_structured_text): a query_traces answer holds thousands of
 * values (10 traces: about 270 spans of 11 fields), which as jansson
 * values took more than half of the gateway's work on the call to build,
 * serialize and free (callgrind, bench/RESULTS.md).  The writes append
 * freely: the first failure stays in b (jsondump's writer keeps its own
 * there too), checked once by traces_result.
 */
struct jtext {
	struct buf b;
};

static void
jt_raw(struct jtext *w, const char *s, size_t n)
{
	buf_append(&w->b, s, n);
}

#define JT_LIT(w, lit) jt_raw((w), (lit), sizeof(lit) - 1)

static void
jt_str(struct jtext *w, const char *s)
{
	jsondump_string(&w->b, s, s != NULL ? strlen(s) : 0);
}

/* n bytes as a quoted lower-case hex string */
static void
jt_hex(struct jtext *w, const uint8_t *id, size_t n)
{
	char hex[2 * 16 + 3];

	hex[0] = '"';
	hex_encode(id, n, hex + 1);
	hex[2 * n + 1] = '"';
	jt_raw(w, hex, 2 * n + 2);
}

static void
jt_real(struct jtext *w, double v)
{
	jsondump_real(&w->b, v);
}

static void
jt_int(struct jtext *w, json_int_t v)
{
	jsondump_integer(&w->b, v);
}

/* v as compact JSON (takes the reference; NULL is ENOMEM): for the few
 * values built as jansson trees. */
static void
jt_json(struct jtext *w, json_t *v)
{
	char *text = v != NULL ? jsondump(v, JSON_COMPACT) : NULL;

	if (text != NULL)
		jt_raw(w, text, strlen(text));
	else
		buf_set_error(&w->b, STATUS_NOMEM);
	free(text);
	json_decref(v);
}

/* ns as milliseconds to the microsecond: what a span's times say to
 * a reader, in fewer digits (and tokens) than nanoseconds. */
static double
us_ms(uint64_t ns)
{
	return (double)((ns + 500) / 1000) / 1e3;
}

/*
 * The span as {"span_id", ...}, and with children (kids) as {"span_id",
 * ..., "children":[ with its children still to come; its start as
 * offset_ms, after the trace's start.  What the tree and the defaults
 * say is left out, for the answer's tokens: status when unset,
 * parent_span_id
 * when it is the span it hangs under (t: whose nodes it is), also_seen_by
 * when no other source saw it, slow, critical and async when false.
 */
static void
span_open(struct jtext *w, const struct merge_trace *t,
	  const struct merge_node *node, bool kids,
	  const struct tool_details *det)
{
	const struct spanquery_detail *x = tool_details_of(det, node);
	const struct spanquery_span *s = node->span->user;
	const struct spanquery_span *up =
		node->parent != MERGE_NONE ? t->nodes[node->parent].span->user
					   : NULL;
	bool first = true;

	JT_LIT(w, "{\"span_id\":");
	jt_hex(w, s->span_id, 8);
	if (s->has_parent &&
	    (up == NULL || memcmp(up->span_id, s->parent_span_id, 8) != 0)) {
		JT_LIT(w, ",\"parent_span_id\":");
		jt_hex(w, s->parent_span_id, 8);
	}
	JT_LIT(w, ",\"service\":");
	jt_str(w, s->service);
	JT_LIT(w, ",\"name\":");
	jt_str(w, s->name);
	JT_LIT(w, ",\"source\":");
	jt_str(w, tool_sources[tool_source_of_merge(node->span->source)].name);
	for (int m = 0; m < MERGE_SOURCE_COUNT; m++)
		if (node->also_seen_by & MERGE_SOURCE_BIT(m)) {
			if (first)
				JT_LIT(w, ",\"also_seen_by\":[");
			else
				JT_LIT(w, ",");
			jt_str(w, tool_sources[tool_source_of_merge(m)].name);
			first = false;
		}
	if (!first)
		JT_LIT(w, "]");
	JT_LIT(w, ",\"offset_ms\":");
	jt_real(w, us_ms(s->start_ns - t->start_ns));
	JT_LIT(w, ",\"duration_ms\":");
	jt_real(w, us_ms(s->duration_ns));
	if (s->status != 0) { /* not UNSET */
		JT_LIT(w, ",\"status\":");
		jt_str(w, otlp_status_name(s->status));
	}
	if (node->slow)
		JT_LIT(w, ",\"slow\":true");
	if (node->critical)
		JT_LIT(w, ",\"critical\":true");
	if (node->async)
		JT_LIT(w, ",\"async\":true");
	if (x != NULL) {
		JT_LIT(w, ",\"details\":");
		jt_json(w, tool_detail_json(node, x));
	}
	if (kids)
		JT_LIT(w, ",\"children\":[");
	else
		JT_LIT(w, "}");
}

/*
 * The trace as {"trace_id", ..., "spans": [roots with children]} with
 * the spans its text tree shows, nodes[0..shown) (render_trace_tree draws
 * a preorder prefix: every span's parent is among them), the others
 * counted in spans_not_shown as in the text's "N more not shown".  The
 * nodes come in depth-first preorder, each with its depth: a node one
 * level deeper than the one before is its first child; else the spans
 * open since its parent's level are closed first.  No recursion: a trace
 * may be thousands of levels deep.
 */
static void
trace_write(struct jtext *w, const struct merge_trace *t, size_t shown,
	    const struct tool_details *det)
{
	char start[TIMERANGE_FORMAT_MAX];
	size_t open = 0; /* spans whose children are being written */
	bool kids;

	JT_LIT(w, "{\"trace_id\":");
	jt_hex(w, t->trace_id, 16);
	timerange_format((int64_t)(t->start_ns / 1000000), start,
			 sizeof(start));
	JT_LIT(w, ",\"start\":");
	jt_str(w, start);
	JT_LIT(w, ",\"duration_ms\":");
	jt_real(w, (double)(t->end_ns - t->start_ns) / 1e6);
	JT_LIT(w, ",\"span_count\":");
	jt_int(w, (json_int_t)t->span_count);
	if (shown < t->span_count) { /* none: every span is there */
		JT_LIT(w, ",\"spans_not_shown\":");
		jt_int(w, (json_int_t)(t->span_count - shown));
	}
	JT_LIT(w, ",\"spans\":[");
	for (size_t i = 0; i < shown && buf_error(&w->b) == STATUS_OK; i++) {
		const struct merge_node *node = &t->nodes[i];

		if (i > 0 && node->depth == t->nodes[i - 1].depth + 1) {
			/* the first child of the one before, which left its
			 * children open */
		} else if (i > 0) {
			for (; open > node->depth; open--)
				JT_LIT(w, "]}");
			JT_LIT(w, ",");
		}
		if (node->depth > open) { /* not preorder: merge's bug */
			buf_set_error(&w->b, STATUS_INVALID);
			break;
		}
		kids = i + 1 < shown &&
		       t->nodes[i + 1].depth == node->depth + 1;
		span_open(w, t, node, kids, det);
		open += kids;
	}
	for (; open > 0; open--)
		JT_LIT(w, "]}");
	JT_LIT(w, "]}");
}

/* The slowest span of the trace's critical path (largest self time
 * among the slow: merge marks only critical spans slow). */
static const struct merge_node *
trace_culprit(const struct merge_trace *t)
{
	const struct merge_node *best = NULL;

	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].slow &&
		    (best == NULL || t->nodes[i].self_ns > best->self_ns))
			best = &t->nodes[i];
	return best;
}

/*
 * "the largest latency contributor on the critical path is fraud: Score
 * (self time 68ms, 69% of its request), downstream of payments"; "in
 * payments" when it is the service asked about.
 */
static int
culprit_text(struct buf *b, const struct merge_trace *t,
	     const struct merge_node *top, const char *service)
{
	const struct spanquery_span *s = top->span->user;
	uint64_t dur = t->request_ns;
	char self[24], share[24];
	int rc;

	render_ms((double)top->self_ns / 1e6, self, sizeof(self));
	render_pct(top->self_ns, dur, share, sizeof(share));
	rc = buf_printf(b,
			"the largest latency contributor on the critical "
			"path is %s: %s (self time %s, %s of its request)",
			s->service, s->name, self, share);
	if (rc == STATUS_OK && service != NULL)
		rc = buf_printf(b,
				strcmp(s->service, service) == 0
					? ", in %s itself"
					: ", downstream of %s",
				service);
	return rc;
}

/* "background: notifications: POST 223ms after the request ended
 * (async, via notifications: orders process)" */
static int
background_text(struct buf *b, const struct merge_trace *t, size_t bg)
{
	const struct merge_node *node = &t->nodes[bg];
	const struct spanquery_span *s = node->span->user;
	const struct merge_span *req = t->nodes[t->request].span;
	size_t from = merge_async_start(t, bg);
	char dur[24];
	int rc;

	render_ms((double)s->duration_ns / 1e6, dur, sizeof(dur));
	rc = buf_printf(b, "\nbackground: %s: %s %s %s (async", s->service,
			s->name, dur,
			node->span->start_ns >= req->start_ns + t->request_ns
				? "after the request ended"
				: "beside the request");
	if (rc == STATUS_OK && from != bg) {
		const struct spanquery_span *f = t->nodes[from].span->user;

		rc = buf_printf(b, ", via %s: %s", f->service, f->name);
	}
	if (rc == STATUS_OK)
		rc = buf_puts(b, ")");
	return rc;
}

static int
traces_analysis(struct buf *b, const struct merge_result *res,
		const size_t *order, size_t n, const char *service)
{
	const struct merge_node *top = NULL;
	const struct merge_trace *top_t = NULL, *bg_t = NULL;
	size_t errors = 0, orphans = 0, dups = 0, bg = MERGE_NONE;
	int rc;

	for (size_t i = 0; i < n; i++) {
		const struct merge_trace *t = &res->traces[order[i]];
		const struct merge_node *c = trace_culprit(t);
		size_t g = merge_background(t);
		bool err = false;

		for (size_t j = 0; j < t->n_nodes; j++) {
			const struct spanquery_span *s = t->nodes[j].span->user;

			err |= s->status == 2;
			orphans += t->nodes[j].orphan;
		}
		errors += err;
		dups += t->duplicates;
		if (c != NULL && (top == NULL || c->self_ns > top->self_ns)) {
			top = c;
			top_t = t;
		}
		if (g != MERGE_NONE &&
		    (bg == MERGE_NONE ||
		     t->nodes[g].self_ns > bg_t->nodes[bg].self_ns)) {
			bg = g;
			bg_t = t;
		}
	}
	rc = buf_puts(b, "\nAnalysis: ");
	if (rc == STATUS_OK && top != NULL)
		rc = culprit_text(b, top_t, top, service);
	else if (rc == STATUS_OK)
		rc = buf_puts(b, "no span dominates the latency");
	if (rc == STATUS_OK)
		rc = buf_printf(b, "; %zu of %zu traces have error spans",
				errors, n);
	if (rc == STATUS_OK && dups > 0)
		rc = buf_printf(b,
				"; %zu spans were seen by both eBPF and OTLP "
				"(OTLP shown)",
				dups);
	if (rc == STATUS_OK && orphans > 0)
		rc = buf_printf(b,
				"; %zu span%s a parent not in the store "
				"(shown as roots)",
				orphans, orphans == 1 ? " has" : "s have");
	if (rc == STATUS_OK && bg != MERGE_NONE)
		rc = background_text(b, bg_t, bg);
	if (rc == STATUS_OK)
		rc = buf_puts(b, "\n");
	return rc;
}

struct idkey {
	uint8_t id[16];
	int64_t key;
};

static int
by_id(const void *a, const void *b)
{
	return memcmp(((const struct idkey *)a)->id,
		      ((const struct idkey *)b)->id, 16);
}

static int
by_key_desc(const void *a, const void *b)
{
	const struct idkey *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return memcmp(x->id, y->id, 16);
}

/* Folds equal ids (keeping the larger key) and orders by key, best
 * first; returns how many remain.  On ENOMEM keeps the input as is. */
static size_t
union_ids(uint8_t (*ids)[16], int64_t *keys, size_t n)
{
	struct idkey *v = calloc(n + 1, sizeof(*v));
	size_t m = 0;

	if (v == NULL)
		return n;
	for (size_t i = 0; i < n; i++) {
		memcpy(v[i].id, ids[i], 16);
		v[i].key = keys[i];
	}
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && memcmp(v[m - 1].id, v[i].id, 16) == 0) {
			if (v[i].key > v[m - 1].key)
				v[m - 1].key = v[i].key;
			continue;
		}
		v[m++] = v[i];
	}
	qsort(v, m, sizeof(*v), by_key_desc);
	for (size_t i = 0; i < m; i++) {
		memcpy(ids[i], v[i].id, 16);
		keys[i] = v[i].key;
	}
	free(v);
	return m;
}

/* The statements of one query_traces call, per source (the argument of
 * its tool_round callbacks). */
struct trace_fetch {
	const struct spanquery_trace_filter *tf;
	bool walks; /* the walk and its spans in one statement */
	/* each source's candidates (step 1) */
	uint8_t ids[TOOL_SPAN_SRCS][SPANQUERY_MAX_TRACES][16];
	int64_t keys[TOOL_SPAN_SRCS][SPANQUERY_MAX_TRACES];
	size_t got[TOOL_SPAN_SRCS];
	bool more[TOOL_SPAN_SRCS];
	/* the traces shown, and the ids each source fetches this round */
	const uint8_t (*ids_final)[16];
	size_t nfinal;
	uint8_t want[TOOL_SPAN_SRCS][SPANQUERY_MAX_TRACES][16];
	size_t nwant[TOOL_SPAN_SRCS];
	/* spans: [0] from the walk's statement, [1] fetched after */
	struct spanquery_spans *sp[TOOL_SPAN_SRCS][2];
	/* or every source's, from one statement (all_at_once) */
	struct spanquery_spans *all;
};

static int
trace_ids_send(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct trace_fetch *t = arg;

	if (t->walks)
		return spanquery_recent_send(c, tool_sources[i].name, t->tf,
					     pe);
	return spanquery_trace_ids_send(c, tool_sources[i].name, t->tf, pe);
}

static int
trace_ids_recv(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct trace_fetch *t = arg;

	if (t->walks)
		return spanquery_recent_recv(c, t->tf->max_traces, t->ids[i],
					     t->keys[i], &t->got[i],
					     &t->more[i], &t->sp[i][0], pe);
	return spanquery_trace_ids_recv(c, t->tf->max_traces, t->ids[i],
					t->keys[i], &t->got[i], &t->more[i],
					pe);
}

static int
spans_send(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct trace_fetch *t = arg;

	return spanquery_spans_send(c, tool_sources[i].name,
				    (const uint8_t(*)[16])t->want[i],
				    t->nwant[i], pe);
}

static int
spans_recv(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	struct trace_fetch *t = arg;

	return spanquery_spans_recv(c, &t->sp[i][1], pe);
}

static bool
id_in(const uint8_t (*ids)[16], size_t n, const uint8_t *id)
{
	for (size_t j = 0; j < n; j++)
		if (memcmp(ids[j], id, 16) == 0)
			return true;
	return false;
}

/* Into t->want[i]: the traces shown that source i did not pick (so the
 * walk's statement did not fetch their spans); returns how many. */
static size_t
ids_missing(struct trace_fetch *t, int i)
{
	size_t n = 0;

	for (size_t j = 0; j < t->nfinal; j++)
		if (!id_in((const uint8_t(*)[16])t->ids[i], t->got[i],
			   t->ids_final[j]))
			memcpy(t->want[i][n++], t->ids_final[j], 16);
	return n;
}

/* A span of t->sp[i][part] that belongs to a trace shown: the walk's
 * statement also fetched those of the traces its source picked that did
 * not make it. */
static bool
span_wanted(const struct trace_fetch *t, int part,
	    const struct spanquery_span *x)
{
	return part == 1 || id_in(t->ids_final, t->nfinal, x->trace_id);
}

static size_t
kept_spans(const struct trace_fetch *t, int i, int part)
{
	size_t n = 0;

	for (size_t j = 0; t->sp[i][part] != NULL && j < t->sp[i][part]->n; j++)
		n += span_wanted(t, part, &t->sp[i][part]->spans[j]);
	return n;
}

struct span_it {
	int i, part;
	size_t j;
};

/* The next span of the traces shown ({0} starts), and in *src its source;
 * NULL after the last. */
static struct spanquery_span *
span_next(const struct trace_fetch *t, struct span_it *it, int *src)
{
	struct spanquery_span *x;

	if (t->all != NULL) {
		if (it->j == t->all->n)
			return NULL;
		x = &t->all->spans[it->j++];
		*src = tool_span_source(x->source); /* all_at_once checked it */
		return x;
	}
	for (; it->i < TOOL_SPAN_SRCS; it->i++, it->part = 0)
		for (; it->part < 2; it->part++, it->j = 0)
			while (t->sp[it->i][it->part] != NULL &&
			       it->j < t->sp[it->i][it->part]->n) {
				x = &t->sp[it->i][it->part]->spans[it->j++];
				if (span_wanted(t, it->part, x)) {
					*src = it->i;
					return x;
				}
			}
	return NULL;
}

/*
 * query_traces for one service from every source (the common case): the
 * walk and the spans in one statement on the first connection, which does
 * the per-source statements' work once, in one round trip.  On success
 * with every span there, t->all holds them and ids, keys, *n and *more
 * the traces, as the per-source round and union_ids would give them.
 * When the statement fails (or its spans were cut at the limit), t->all
 * stays NULL and the caller asks each source on its own, which tells
 * which source failed and keeps the other's answer.  So that a source
 * whose rows time out is not waited for twice, the statement has a
 * quarter of the statement timeout (ALL_AT_ONCE_SHARE): a few
 * milliseconds is what it takes.  STATUS_CANCELLED, STATUS_NOMEM, else
 * STATUS_OK.
 */
#define ALL_AT_ONCE_SHARE 4

static int
all_at_once(struct call *call, const struct tool_conns *k,
	    struct trace_fetch *t, uint8_t (*ids)[16], int64_t *keys, size_t *n,
	    bool *more)
{
	struct spanquery_trace_filter f = *t->tf;
	struct spanquery_spans *sp = NULL;
	struct pg_error pe;
	int rc, ms = call_config(call)->database.statement_timeout_ms;

	f.timeout_ms =
		ms > 0 ? (ms + ALL_AT_ONCE_SHARE - 1) / ALL_AT_ONCE_SHARE : 0;
	rc = spanquery_recent_send(k->c[0], NULL, &f, &pe);
	if (rc == STATUS_OK)
		rc = spanquery_recent_recv(k->c[0], t->tf->max_traces, ids,
					   keys, n, more, &sp, &pe);
	for (size_t j = 0; rc == STATUS_OK && j < sp->n; j++)
		if (tool_span_source(sp->spans[j].source) < 0) {
			snprintf(pe.detail, sizeof(pe.detail),
				 "a span of source \"%.40s\"",
				 sp->spans[j].source);
			rc = STATUS_INVALID;
		}
	if (rc == STATUS_CANCELLED || call_cancelled(call)) {
		spanquery_spans_free(sp);
		return STATUS_CANCELLED;
	}
	if (rc == STATUS_NOMEM)
		return rc;
	if (rc != STATUS_OK || sp->truncated) {
		if (rc != STATUS_OK)
			log_debug(
				&(struct log_fields){
					.request_id = call_request_id(call),
					.tool = "query_traces",
					.duration_ms = -1},
				"the statement over every source failed "
				"(%s): asking each source",
				pe.detail);
		spanquery_spans_free(sp);
		*n = 0;
		*more = false;
		return STATUS_OK;
	}
	t->all = sp;
	return STATUS_OK;
}

/* One query_traces call (or an alias's) across its phases; traces_call
 * frees it. */
struct traces_state {
	struct call *call;
	const struct traces_req *req;
	char svc[256], svc_note[320]; /* the service as resolved */
	int64_t now;
	const char *trace_id; /* the one trace asked for, or NULL */
	uint8_t one_id[16];
	struct timerange tr; /* without trace_id */
	struct spanquery_trace_filter tf;
	size_t max_spans; /* per trace */
	size_t budget;	  /* of the whole answer, bytes (traces_budget) */
	struct tool_conns k;
	char status[TOOL_SPAN_SRCS][TOOL_STATUS_MAX];
	struct trace_fetch *fx;
	/* the traces shown, best first (with room for every source's) */
	uint8_t (*ids)[16];
	int64_t *keys;
	size_t nids;
	bool more_traces; /* than those */
	size_t shown;	  /* of res->traces, in the answer */
	struct redact_kept own;
	struct merge_span *spans;
	size_t nspans;
	struct merge_result *res;
	size_t *order;		 /* of res->traces, as picked */
	struct tool_details det; /* of their error and slow spans */
	struct buf b;		 /* the text */
	struct jtext w;		 /* the structured content */
};

/* Arguments: the trace, or the filter and range; *result is the answer
 * when they are bad. */
static int
traces_args(struct traces_state *x, const json_t *args, json_t **result)
{
	const json_t *md = json_object_get(args, "min_duration_ms"),
		     *mt = json_object_get(args, "max_traces"),
		     *ms = json_object_get(args, "max_spans");
	const char *sort = tool_arg_str(args, "sort");
	char err[512];

	x->trace_id = tool_arg_str(args, "trace_id");
	x->tf.max_traces = json_is_integer(mt) ? (size_t)json_integer_value(mt)
					       : DEFAULT_MAX_TRACES;
	/* The default answer (10 traces; the schema's default fills
	 * max_traces in), the one an agent gets without asking for more,
	 * within DEFAULT_TRACES_BYTES: about 8,000 tokens (trace trees and
	 * their JSON read about 2.9 bytes a token), the slow and failed
	 * spans kept when trees are cut (merge_focus); more traces asked,
	 * the whole of tools.max_answer_bytes. */
	x->budget = tool_answer_budget(x->call);
	if (x->tf.max_traces <= DEFAULT_MAX_TRACES &&
	    x->budget > DEFAULT_TRACES_BYTES)
		x->budget = DEFAULT_TRACES_BYTES;
	x->max_spans = json_is_integer(ms) ? (size_t)json_integer_value(ms)
					   : DEFAULT_MAX_SPANS;
	if (x->trace_id != NULL) {
		if (tool_parse_trace_id(x->trace_id, x->one_id) != STATUS_OK) {
			*result = tool_result_error(
				"trace_id must be 32 hex digits, not all zero "
				"(e.g. \"4bf92f3577b34da6a3ce929d0e0e4736\"), "
				"got \"%.40s\"",
				x->trace_id);
			return *result != NULL ? STATUS_OK : STATUS_NOMEM;
		}
	} else if (tool_time_range(args, "1h", QUERY_RANGE, x->now, &x->tr, err,
				   sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	x->tf.service = tool_service_name(
		x->call, tool_arg_str(args, "service"), x->svc, sizeof(x->svc),
		x->svc_note, sizeof(x->svc_note));
	x->tf.from_ms = x->tr.from_ms;
	x->tf.to_ms = x->tr.to_ms;
	x->tf.min_duration_ns = json_is_number(md)
					? (int64_t)(json_number_value(md) * 1e6)
					: -1;
	x->tf.slowest = sort != NULL && strcmp(sort, "slowest") == 0;
	return STATUS_OK;
}

/*
 * Each source's candidates, then the best overall: the union by id (a
 * trace both sources saw counts once), the best key first.  Each source
 * gave its best max_traces, so the best max_traces overall are among
 * them (a trace's key is its best source's, where fewer than max_traces
 * traces beat it).  More traces match when a source has more than it
 * gave, or the union has.
 */
static int
traces_candidates(struct traces_state *x)
{
	struct trace_fetch *fx = x->fx;
	int rc;

	rc = tool_round_run(&(struct tool_round){.call = x->call,
						 .k = &x->k,
						 .mask = x->req->sources,
						 .status = x->status,
						 .send = trace_ids_send,
						 .recv = trace_ids_recv,
						 .arg = fx});
	if (rc != STATUS_OK)
		return rc;
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		if (x->status[i][0] != '\0')
			continue;
		memcpy(x->ids + x->nids, fx->ids[i],
		       fx->got[i] * sizeof(*x->ids));
		memcpy(x->keys + x->nids, fx->keys[i],
		       fx->got[i] * sizeof(*x->keys));
		x->nids += fx->got[i];
		x->more_traces = x->more_traces || fx->more[i];
	}
	x->nids = union_ids(x->ids, x->keys, x->nids);
	if (x->nids > x->tf.max_traces) {
		x->nids = x->tf.max_traces;
		x->more_traces = true;
	}
	return STATUS_OK;
}

/* Fetch, step 1: which traces (x->ids); *result is the answer when the
 * store cannot be reached. */
static int
traces_pick(struct traces_state *x, json_t **result)
{
	const struct traces_req *req = x->req;
	struct trace_fetch *fx;

	if (tool_conns_get(x->call, &x->k) != STATUS_OK) {
		*result = tool_result_error("%s", x->k.why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		snprintf(x->status[i], sizeof(x->status[i]), "%s",
			 req->sources & (1u << i) ? "" : "not asked");
	(void)call_progress(x->call, 1, 4, "finding traces");
	x->ids = calloc(TOOL_SPAN_SRCS * SPANQUERY_MAX_TRACES, sizeof(*x->ids));
	x->keys =
		calloc(TOOL_SPAN_SRCS * SPANQUERY_MAX_TRACES, sizeof(*x->keys));
	x->fx = fx = calloc(1, sizeof(*fx));
	if (x->ids == NULL || x->keys == NULL || fx == NULL)
		return STATUS_NOMEM;
	fx->tf = &x->tf;
	fx->walks = x->trace_id == NULL && spanquery_trace_walks(&x->tf);
	if (x->trace_id != NULL) {
		memcpy(x->ids[0], x->one_id, 16);
		x->nids = 1;
		return STATUS_OK;
	}
	if (fx->walks && x->tf.service != NULL && req->sources == BOTH) {
		int rc = all_at_once(x->call, &x->k, fx, x->ids, x->keys,
				     &x->nids, &x->more_traces);

		if (rc != STATUS_OK || fx->all != NULL)
			return rc;
	}
	return traces_candidates(x);
}

/* Which spans source i still needs this round (fx->want[i]); true when
 * it needs any. */
static bool
traces_wanted(struct traces_state *x, int i, int round)
{
	struct trace_fetch *fx = x->fx;

	if (round == 0 && fx->sp[i][0] != NULL && !fx->sp[i][0]->truncated) {
		fx->nwant[i] = ids_missing(fx, i);
	} else if (round == 0 || (fx->sp[i][0] != NULL &&
				  (fx->sp[i][1] != NULL &&
				   (fx->sp[i][1]->truncated ||
				    kept_spans(fx, i, 0) + fx->sp[i][1]->n >
					    SPANQUERY_MAX_SPANS)))) {
		/* all of them, in one statement */
		spanquery_spans_free(fx->sp[i][0]);
		spanquery_spans_free(fx->sp[i][1]);
		fx->sp[i][0] = fx->sp[i][1] = NULL;
		memcpy(fx->want[i], x->ids, x->nids * sizeof(*x->ids));
		fx->nwant[i] = x->nids;
	} else {
		fx->nwant[i] = 0;
	}
	return fx->nwant[i] > 0;
}

/* Fetch, step 2: the traces' spans, from each source.  With the walk,
 * each source has those of the traces it picked; it still needs those
 * of the traces only another source picked.  A source whose spans would
 * pass SPANQUERY_MAX_SPANS reads them again in one statement, so that
 * the first SPANQUERY_MAX_SPANS are the ones kept, as without the walk. */
static int
traces_fetch(struct traces_state *x)
{
	struct trace_fetch *fx = x->fx;
	int rc;

	(void)call_progress(x->call, 2, 4, "fetching spans");
	fx->ids_final = (const uint8_t(*)[16])x->ids;
	fx->nfinal = x->nids;
	for (int round = 0; round < 2 && x->nids > 0 && fx->all == NULL;
	     round++) {
		unsigned mask = 0;

		for (int i = 0; i < TOOL_SPAN_SRCS; i++)
			if ((x->req->sources & (1u << i)) &&
			    x->status[i][0] == '\0' &&
			    traces_wanted(x, i, round))
				mask |= 1u << i;
		if (mask == 0)
			break;
		rc = tool_round_run(&(struct tool_round){.call = x->call,
							 .k = &x->k,
							 .mask = mask,
							 .status = x->status,
							 .send = spans_send,
							 .recv = spans_recv,
							 .arg = fx});
		if (rc != STATUS_OK)
			return rc;
	}
	/* a source that failed on the way shows none of its spans, even
	 * those its walk's statement brought */
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (x->status[i][0] != '\0')
			for (int part = 0; part < 2; part++) {
				spanquery_spans_free(fx->sp[i][part]);
				fx->sp[i][part] = NULL;
			}
	return STATUS_OK;
}

/* The spans of the traces shown redacted (text and structure show the
 * same), and each source asked that answered "ok" or "no_data". */
static void
traces_redact(struct traces_state *x)
{
	const struct redact *r = call_redact(x->call);
	struct span_it it = {0};
	struct spanquery_span *s;
	size_t per_src[TOOL_SPAN_SRCS] = {0};
	int src;

	while ((s = span_next(x->fx, &it, &src)) != NULL) {
		s->service = redact_keep(&x->own, r, s->service);
		s->name = redact_keep(&x->own, r, s->name);
		s->status_message = redact_keep(&x->own, r, s->status_message);
		per_src[src]++;
		x->nspans++;
	}
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if ((x->req->sources & (1u << i)) && x->status[i][0] == '\0')
			snprintf(x->status[i], sizeof(x->status[i]), "%s",
				 per_src[i] > 0 ? "ok" : "no_data");
}

/* Merge: one tree per trace, in the order the traces were picked
 * (recent / slowest). */
static int
traces_merge(struct traces_state *x)
{
	struct merge_opts opts = {.max_spans = x->max_spans,
				  .max_traces = SPANQUERY_MAX_TRACES + 1};
	struct span_it it = {0};
	const struct spanquery_span *s;
	size_t n = 0, o = 0;
	int src, rc;

	(void)call_progress(x->call, 3, 4, "merging");
	if ((x->spans = calloc(x->nspans + 1, sizeof(*x->spans))) == NULL)
		return STATUS_NOMEM;
	while ((s = span_next(x->fx, &it, &src)) != NULL)
		tool_merge_span(&x->spans[n++], s, tool_sources[src].merge);
	if ((rc = merge_traces(x->spans, n, &opts, &x->res)) != STATUS_OK)
		return rc;
	x->order = calloc(x->res->n_traces + 1, sizeof(*x->order));
	if (x->order == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < x->nids; i++)
		for (size_t t = 0; t < x->res->n_traces; t++)
			if (memcmp(x->res->traces[t].trace_id, x->ids[i], 16) ==
			    0)
				x->order[o++] = t;
	return STATUS_OK;
}

/* Details: of each trace's deepest error span and slow spans, then of
 * their other error spans, best trace first, while there is room
 * (SPANQUERY_MAX_DETAILS). */
static int
traces_details(struct traces_state *x)
{
	for (int others = 0; others < 2; others++)
		for (size_t i = 0; i < x->res->n_traces; i++)
			(void)tool_details_pick(&x->det,
						&x->res->traces[x->order[i]],
						false, others == 1);
	return tool_details_fetch(x->call, tool_conns_for(&x->k, 0), &x->det);
}

/* Text: that no trace was found, and for what; *result is the answer
 * when the service has no spans at all. */
static int
traces_none(struct traces_state *x, json_t **result)
{
	const struct spanquery_trace_filter *tf = &x->tf;
	struct buf *b = &x->b;
	char why[512], rdesc[128];

	if (x->trace_id != NULL) {
		buf_printf(b, "No traces found with trace_id %s\n",
			   x->trace_id);
		tool_fit(b);
		return STATUS_OK;
	}
	if (tf->service != NULL &&
	    tool_unknown_service(x->k.c[0], tf->service, "list_services", why,
				 sizeof(why))) {
		*result = tool_result_error("No traces found: %s", why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	timerange_describe(&x->tr, x->now, rdesc, sizeof(rdesc));
	buf_printf(b, "No traces found in %s", rdesc);
	tool_fit(b);
	if (tf->service != NULL) {
		buf_printf(b, " for service \"%s\"", tf->service);
		tool_fit(b);
	}
	if (tf->min_duration_ns >= 0) {
		char least[24];

		render_ms((double)tf->min_duration_ns / 1e6, least,
			  sizeof(least));
		buf_printf(b, " with a span of at least %s", least);
		tool_fit(b);
	}
	buf_puts(b, "\n");
	tool_fit(b);
	return STATUS_OK;
}

/* Text: the note and the sources that failed, and when no trace was
 * found, that; *result is the answer when the service is not known.
 * Structured content: its opening. */
static int
traces_head(struct traces_state *x, json_t **result)
{
	if (x->req->note != NULL)
		buf_printf(&x->b, "%s\n\n", x->req->note);
	if (x->svc_note[0] != '\0')
		buf_printf(&x->b, "%s\n\n", x->svc_note);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (strncmp(x->status[i], "unavailable", 11) == 0) {
			buf_printf(&x->b, "%s spans %s\n",
				   tool_sources[i].label, x->status[i]);
			tool_fit(&x->b);
		}
	JT_LIT(&x->w, "{\"traces\":[");
	return x->res->n_traces == 0 ? traces_none(x, result) : STATUS_OK;
}

/*
 * The traces that fit the whole answer's budget (x->budget),
 * each whole in the text and the structured content: of the k written
 * (their ends in tend and wend), the last go (tool_rows_cut) until the
 * answer with its closing fits, and b and the writer are rolled back to
 * the last kept.  x->shown: the traces kept.
 */
static int
traces_fit(struct traces_state *x, size_t tstart, size_t wstart,
	   const size_t *tend, const size_t *wend, size_t k)
{
	size_t *sizes = k > 0 ? calloc(k, sizeof(*sizes)) : NULL;
	const size_t *list = sizes;
	size_t budget = x->budget, total, keep = k;

	if (k > 0 && sizes == NULL)
		return STATUS_NOMEM;
	total = tool_json_text_len(x->b.data != NULL ? x->b.data : "", tstart) +
		wstart + TRACES_CLOSE_ROOM;
	for (size_t i = 0; i < k; i++) {
		size_t t0 = i > 0 ? tend[i - 1] : tstart,
		       w0 = i > 0 ? wend[i - 1] : wstart;

		sizes[i] = tool_json_text_len(x->b.data + t0, tend[i] - t0) +
			   wend[i] - w0;
		total += sizes[i];
	}
	if (total > budget)
		(void)tool_rows_cut(total - budget, &list, &k, &keep, 1);
	buf_rollback(&x->b, keep > 0 ? tend[keep - 1] : tstart);
	buf_rollback(&x->w.b, keep > 0 ? wend[keep - 1] : wstart);
	x->shown = keep;
	free(sizes);
	return STATUS_OK;
}

/* The spans a cut tree keeps beside the critical path: the failed ones. */
static bool
pin_error(const struct merge_node *node, void *arg)
{
	const struct spanquery_span *s = node->span->user;

	(void)arg;
	return s != NULL && s->status == 2;
}

/*
 * Trace t in the text as a tree of at most max_chars bytes and in the
 * structured content with the same spans, within whole bytes of the
 * answer (JSON escapes counted) when it can: a trace past them is drawn
 * again with fewer spans, those that explain it, six times at most, down
 * to its header and "N more not shown".  k: the traces before it.
 */
static int
trace_both(struct traces_state *x, const struct merge_trace *t, size_t k,
	   size_t max_chars, size_t whole)
{
	struct buf *b = &x->b;
	struct merge_trace cut = {0};
	const struct merge_trace *f = t;
	char tid[33], start[40], dur[24];
	int rc = STATUS_OK;

	hex_encode(t->trace_id, 16, tid);
	timerange_format((int64_t)(t->start_ns / 1000000), start,
			 sizeof(start));
	render_ms((double)(t->end_ns - t->start_ns) / 1e6, dur, sizeof(dur));
	for (int tries = 0;; tries++) {
		size_t t0 = b->len, w0 = x->w.b.len, drawn = 0, cost, target;
		bool fits;

		buf_printf(b, "%sTrace %s (%s, %s, %zu span%s)\n",
			   k > 0 || b->len > 0 ? "\n" : "", tid, dur, start,
			   t->span_count, t->span_count == 1 ? "" : "s");
		rc = render_trace_tree(
			b, f, span_label,
			&(struct label_ctx){call_redact(x->call), &x->det},
			max_chars, &drawn);
		if (rc != STATUS_OK && rc != STATUS_LIMIT)
			break;
		rc = STATUS_OK;
		if (k > 0)
			JT_LIT(&x->w, ",");
		trace_write(&x->w, f, drawn, &x->det);
		if ((rc = buf_error(b)) != STATUS_OK ||
		    (rc = buf_error(&x->w.b)) != STATUS_OK)
			break;
		cost = tool_json_text_len(b->data + t0, b->len - t0) +
		       x->w.b.len - w0;
		fits = cost <= whole;
		if ((fits && drawn == f->n_nodes) || drawn == 0 || tries == 5)
			break;
		/*
		 * Cut: the text's room or the answer's share held fewer spans
		 * than the tree has.  Drawn again with that many (fewer in
		 * proportion to the share, and a tenth more) chosen for what
		 * explains the trace: the critical path, the slow and the
		 * failed spans with their ancestors (merge_focus), not the
		 * first ones in order, which may leave the slow part out.
		 */
		target = drawn;
		if (!fits)
			target = (size_t)((double)drawn * 0.9 * (double)whole /
					  (double)cost);
		if (target == 0)
			target = 1;
		if (!fits)
			max_chars = (size_t)((double)(b->len - t0) * 0.9 *
					     (double)whole / (double)cost);
		if (max_chars == 0)
			max_chars = 1;
		buf_rollback(b, t0);
		buf_rollback(&x->w.b, w0);
		merge_focus_free(&cut);
		if ((rc = merge_focus(t, target, pin_error, NULL, &cut)) !=
		    STATUS_OK)
			break;
		f = &cut;
	}
	merge_focus_free(&cut);
	return rc;
}

/* Text and structured content: each trace as a tree while the text's
 * budget lasts (each a share of what is left; a tree is begun with room
 * for its line past TAIL_ROOM) and as an object, each within its share
 * of the whole answer's budget (trace_both), then as many as fit that
 * budget (traces_fit). */
static int
traces_trees(struct traces_state *x)
{
	const struct merge_result *res = x->res;
	struct buf *b = &x->b;
	size_t budget = x->budget;
	size_t tstart = b->len, wstart = x->w.b.len, k = 0;
	size_t *tend = calloc(res->n_traces + 1, 2 * sizeof(*tend));
	size_t *wend = tend != NULL ? tend + res->n_traces + 1 : NULL;
	int rc = STATUS_OK;

	if (tend == NULL)
		return STATUS_NOMEM;
	for (; k < res->n_traces; k++) {
		size_t room = b->len + TAIL_ROOM < b->max
				      ? b->max - TAIL_ROOM - b->len
				      : 0;
		size_t left = res->n_traces - k;
		size_t used = tool_json_text_len(b->data != NULL ? b->data : "",
						 b->len) +
			      x->w.b.len + TRACES_CLOSE_ROOM;

		if (room < 200)
			break;
		rc = trace_both(x, &res->traces[x->order[k]], k, room / left,
				used < budget ? (budget - used) / left : 0);
		if (rc != STATUS_OK)
			goto out;
		tend[k] = b->len;
		wend[k] = x->w.b.len;
	}
	rc = traces_fit(x, tstart, wstart, tend, wend, k);
out:
	free(tend);
	return rc;
}

/* Text: what more there is (exactly: the traces shown and those read
 * but left out for the answer's budget), and the analysis of the traces
 * shown; a note that does not fit the budget is cut where it failed
 * (tool_fit) and the text goes on. */
static void
traces_tail(struct traces_state *x)
{
	const struct spanquery_trace_filter *tf = &x->tf;
	struct buf *b = &x->b;
	size_t left = x->res->n_traces - x->shown;
	const char *md = tf->min_duration_ns >= 0 ? "raise" : "add";

	if (left > 0) {
		buf_printf(b,
			   "\n%zu trace%s shown, %zu more%s (the answer is "
			   "full): narrow time_range, %s min_duration_ms or "
			   "lower max_traces.\n",
			   x->shown, x->shown == 1 ? "" : "s", left,
			   x->more_traces ? " read and more match" : "", md);
		tool_fit(b);
	} else if (x->more_traces) {
		bool raise = tf->max_traces < SPANQUERY_MAX_TRACES;

		buf_printf(b,
			   "\nMore traces match than the %zu shown: narrow "
			   "time_range%s %s min_duration_ms",
			   x->shown, raise ? "," : " or", md);
		tool_fit(b);
		if (raise) {
			buf_printf(b, ", or raise max_traces (up to %d)",
				   SPANQUERY_MAX_TRACES);
			tool_fit(b);
		}
		buf_puts(b, ".\n");
		tool_fit(b);
	}
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (x->fx->sp[i][1] != NULL && x->fx->sp[i][1]->truncated) {
			buf_printf(b,
				   "(%s: only the first %d spans were read)\n",
				   tool_sources[i].label, SPANQUERY_MAX_SPANS);
			tool_fit(b);
		}
	if (x->shown > 0) {
		(void)traces_analysis(b, x->res, x->order, x->shown,
				      tf->service);
		tool_fit(b);
	}
}

/* Structured content after the traces: the sources, whether more
 * traces match, and the range (as query_metrics has it). */
static void
traces_close(struct traces_state *x)
{
	struct jtext *w = &x->w;

	JT_LIT(w, "],\"sources\":{");
	for (int i = 0, n = 0; i < TOOL_SPAN_SRCS; i++)
		if (x->req->sources & (1u << i)) {
			if (n++ > 0)
				JT_LIT(w, ",");
			jt_str(w, tool_sources[i].name);
			JT_LIT(w, ":");
			jt_str(w, x->status[i]);
		}
	if (x->more_traces || x->shown < x->res->n_traces)
		JT_LIT(w, "},\"more_traces\":true");
	else
		JT_LIT(w, "},\"more_traces\":false");
	if (x->trace_id == NULL) {
		JT_LIT(w, ",\"time_range\":");
		jt_json(w, tool_range_json(&x->tr));
	}
	JT_LIT(w, "}");
}

/* The result: the text, and the structured content as written.  The
 * text is not checked for UTF-8 here (jansson's check took 7% of the
 * call's instructions): it is made of stored strings, valid since
 * ingestion, cut only between characters, and the answer's writer
 * (lib/json/jsondump) refuses anything else. */
static int
traces_result(struct traces_state *x, json_t **result)
{
	size_t len;
	char *text;
	int rc;

	if ((rc = buf_error(&x->b)) != STATUS_OK ||
	    (rc = buf_finish(&x->w.b, &text, &len)) != STATUS_OK)
		return rc;
	*result = tool_result_new(
		json_pack(
			"[{s:s, s:o}]", "type", "text", "text",
			json_stringn_nocheck(x->b.data != NULL ? x->b.data : "",
					     x->b.len)),
		NULL, false);
	if (*result == NULL) {
		free(text);
		return STATUS_NOMEM;
	}
	call_structured_text(x->call, text, len);
	return STATUS_OK;
}

static int
traces_call(struct call *call, const json_t *args, json_t **result,
	    const struct traces_req *req)
{
	struct traces_state x = {
		.call = call,
		.req = req,
		.now = clock_wall_ms(),
	};
	int rc;

	buf_init(&x.b, call_text_budget(call));
	buf_init(&x.w.b, SIZE_MAX / 2);
	*result = NULL;
	if ((rc = traces_args(&x, args, result)) != STATUS_OK ||
	    *result != NULL)
		goto out;
	if ((rc = traces_pick(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = traces_fetch(&x)) != STATUS_OK)
		goto out;
	traces_redact(&x);
	if ((rc = traces_merge(&x)) != STATUS_OK ||
	    (rc = traces_details(&x)) != STATUS_OK)
		goto out;
	if ((rc = traces_head(&x, result)) != STATUS_OK || *result != NULL)
		goto out;
	if ((rc = traces_trees(&x)) != STATUS_OK)
		goto out;
	traces_tail(&x);
	traces_close(&x);
	rc = traces_result(&x, result);
out:
	tool_conns_put(&x.k);
	redact_kept_free(&x.own);
	tool_details_free(&x.det);
	merge_result_free(x.res);
	for (int i = 0; x.fx != NULL && i < TOOL_SPAN_SRCS; i++) {
		spanquery_spans_free(x.fx->sp[i][0]);
		spanquery_spans_free(x.fx->sp[i][1]);
	}
	if (x.fx != NULL)
		spanquery_spans_free(x.fx->all);
	buf_free(&x.w.b);
	free(x.fx);
	free(x.spans);
	free(x.order);
	free(x.ids);
	free(x.keys);
	buf_free(&x.b);
	return tool_done(rc, result);
}

static int
query_traces(struct call *call, const json_t *args, json_t **result)
{
	const struct traces_req req = {BOTH, NULL};

	return traces_call(call, args, result, &req);
}

static int
query_ebpf_traces(struct call *call, const json_t *args, json_t **result)
{
	const struct traces_req req = {EBPF, NULL};

	return traces_call(call, args, result, &req);
}

static int
query_beyla_traces(struct call *call, const json_t *args, json_t **result)
{
	const struct traces_req req = {
		EBPF, DEPRECATED("query_beyla_traces", "query_ebpf_traces")};

	return traces_call(call, args, result, &req);
}

const struct tool_handler query_tool_handlers[] = {
	{"query_metrics", query_metrics},
	{"query_traces", query_traces},
	{"query_ebpf_http_metrics", query_ebpf_http_metrics},
	{"query_ebpf_grpc_metrics", query_ebpf_grpc_metrics},
	{"query_ebpf_sql_metrics", query_ebpf_sql_metrics},
	{"query_ebpf_traces", query_ebpf_traces},
	{"query_beyla_http_metrics", query_beyla_http_metrics},
	{"query_beyla_grpc_metrics", query_beyla_grpc_metrics},
	{"query_beyla_sql_metrics", query_beyla_sql_metrics},
	{"query_beyla_traces", query_beyla_traces},
	{NULL, NULL},
};

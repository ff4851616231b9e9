/*
 * tool_genai.c - the "genai" tool family: get_session, analyze_genai and
 * compare_sessions over lib/telemetry/genai (which defines a call, its tokens and
 * its cost).  Each answer is Markdown fitted to the call's text budget,
 * with the whole result in structuredContent; the free text of spans it
 * shows (status messages, session ids, model and provider names) goes
 * through the configured redaction in both.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/genai.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_genai.h"

/* Text kept back from the budget for the lines that close an answer
 * (notes, bottleneck, "N more"); structured content has every row. */
#define TAIL_ROOM 1200
/* unpriced model names listed in one note or cell */
#define MAX_LISTED 3

/* ---- an answer in the making -------------------------------------------- */

/*
 * The text is fitted to the call's budget, b's maximum: each piece of it
 * (out_printf, out_puts, a table row) is appended whole, or left out when
 * it does not fit (tool_fit), and the text goes on; TAIL_ROOM keeps room
 * for the closing lines.  Any other failure, of the text or of what goes
 * with it (a string that cannot be redacted, structured content out of
 * memory), is kept in b (buf_set_error) and fails the call in finish().
 */
struct out {
	struct call *call;
	const struct redact *r;
	json_t *keep; /* redacted strings the text borrows */
	struct buf b;
	char omitted[160]; /* sections left out for room, ", "-separated */
};

static void
out_init(struct out *o, struct call *call)
{
	o->call = call;
	o->r = call_redact(call);
	o->keep = json_array();
	o->omitted[0] = '\0';
	buf_init(&o->b, call_text_budget(call));
	if (o->keep == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
}

static void out_printf(struct out *o, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* A piece of the text, or nothing when it does not fit. */
static void
out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(&o->b, fmt, ap);
	va_end(ap);
	tool_fit(&o->b);
}

static void
out_puts(struct out *o, const char *s)
{
	buf_puts(&o->b, s);
	tool_fit(&o->b);
}

/* Room for a section: when there is none, its title is noted for the
 * closing line instead. */
static bool
section_room(struct out *o, const char *title)
{
	size_t len = strlen(o->omitted);

	if (o->b.len + TAIL_ROOM < o->b.max)
		return true;
	if (len < sizeof(o->omitted))
		snprintf(o->omitted + len, sizeof(o->omitted) - len, "%s%s",
			 len > 0 ? ", " : "", title);
	return false;
}

/* "(Not shown, to fit the answer: ... -- all in structuredContent.)" */
static void
omitted_note(struct out *o)
{
	if (o->omitted[0] != '\0')
		out_printf(o,
			   "(Not shown, to fit the answer: %s; "
			   "structuredContent has them.)\n",
			   o->omitted);
}

static void
out_free(struct out *o)
{
	json_decref(o->keep);
	buf_free(&o->b);
}

/* Room for one more table row before the tail. */
static bool
room(const struct out *o)
{
	return o->b.len + TAIL_ROOM < o->b.max;
}

/* s redacted, as a new JSON string (json null for NULL s). */
static json_t *
red_json(struct out *o, const char *s)
{
	json_t *v;

	if (s == NULL)
		return json_null();
	if ((v = json_string(s)) == NULL || redact_json(o->r, v) != STATUS_OK) {
		/* never show it unredacted: the call fails instead */
		json_decref(v);
		buf_set_error(&o->b, STATUS_NOMEM);
		return json_null();
	}
	return v;
}

/* s redacted for the text, borrowed from o ("" for NULL s). */
static const char *
red_text(struct out *o, const char *s)
{
	json_t *v = red_json(o, s);
	const char *t = json_string_value(v);

	if (t == NULL) {
		json_decref(v);
		return "";
	}
	if (json_array_append_new(o->keep, v) != 0) {
		buf_set_error(&o->b, STATUS_NOMEM);
		return "";
	}
	return t;
}

static json_t *
num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* 65 s -> "1m 5s"; under a minute as render_ms does. */
static void
fmt_elapsed(double ms, char *buf, size_t cap)
{
	uint64_t s = (uint64_t)(ms / 1000 + 0.5);

	if (ms < 60000)
		render_ms(ms, buf, cap);
	else if (s < 3600)
		snprintf(buf, cap, "%" PRIu64 "m %" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, cap, "%" PRIu64 "h %" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else
		snprintf(buf, cap, "%" PRIu64 "d %" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
}

/* "the last 7 days", "the last hour", or "between A and B". */
static void
describe_range(const struct timerange *tr, int64_t now, char *buf, size_t cap)
{
	static const struct {
		int64_t ms;
		const char *one, *many;
	} units[] = {
		{86400000, "day", "days"},
		{3600000, "hour", "hours"},
		{60000, "minute", "minutes"},
		{1000, "second", "seconds"},
	};
	int64_t len = tr->to_ms - tr->from_ms;
	char a[TIMERANGE_FORMAT_MAX], b[TIMERANGE_FORMAT_MAX];

	if (tr->to_ms == now)
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (len % units[i].ms != 0)
				continue;
			if (len == units[i].ms && i == 0)
				snprintf(buf, cap, "the last 24 hours");
			else if (len == units[i].ms)
				snprintf(buf, cap, "the last %s", units[i].one);
			else
				snprintf(buf, cap, "the last %" PRId64 " %s",
					 len / units[i].ms, units[i].many);
			return;
		}
	timerange_format(tr->from_ms, a, sizeof(a));
	timerange_format(tr->to_ms, b, sizeof(b));
	snprintf(buf, cap, "between %s and %s", a, b);
}

static void
fmt_ns_time(uint64_t ns, char *buf, size_t cap)
{
	timerange_format((int64_t)(ns / 1000000), buf, cap);
}

/* "a, b and 2 more" from a '\n'-separated list of model names, redacted
 * ("" is a call without a model). */
static void
model_list(struct out *o, const char *list, char *buf, size_t cap)
{
	size_t len = 0, n = 0, total = 0;

	buf[0] = '\0';
	for (const char *p = list; p != NULL && *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);
		char name[256];

		total++;
		if (n < MAX_LISTED && len < cap) {
			snprintf(name, sizeof(name), "%.*s", (int)l, p);
			len += (size_t)snprintf(
				buf + len, cap - len, "%s%s", n > 0 ? ", " : "",
				name[0] != '\0' ? red_text(o, name)
						: "(no model)");
			n++;
		}
		p = nl != NULL ? nl + 1 : p + l;
	}
	if (total > n && len < cap)
		snprintf(buf + len, cap - len, " and %zu more", total - n);
}

/*
 * The cost of a group: "$0.0123"; for a model's row (model_row) of a model
 * without a price "unknown (model X has no price)"; for other rows with
 * unpriced calls "at least $X (N calls of unpriced models: a, b)".
 */
static void
cost_text(struct out *o, const struct genai_stats *s, bool model_row,
	  const char *model, char *buf, size_t cap)
{
	char usd[32], names[320];
	const char *plural = s->unpriced == 1 ? "" : "s";

	render_usd(s->cost_usd, usd, sizeof(usd));
	if (model_row && s->priced == 0 && s->calls > 0) {
		snprintf(buf, cap, "unknown (model %s has no price)",
			 model != NULL ? red_text(o, model) : "(no model)");
	} else if (s->unpriced == 0) {
		snprintf(buf, cap, "%s", usd);
	} else if (model_row) {
		snprintf(buf, cap,
			 "at least %s (%" PRIu64 " call%s without a "
			 "price)",
			 usd, s->unpriced, plural);
	} else if (s->unpriced_models == NULL) {
		snprintf(buf, cap, "%s%s (%" PRIu64 " unpriced call%s)",
			 s->priced > 0 ? "at least " : "unknown",
			 s->priced > 0 ? usd : "", s->unpriced, plural);
	} else {
		model_list(o, s->unpriced_models, names, sizeof(names));
		snprintf(buf, cap,
			 "%s%s (%" PRIu64 " call%s of unpriced models: %s)",
			 s->priced > 0 ? "at least " : "unknown",
			 s->priced > 0 ? usd : "", s->unpriced, plural, names);
	}
}

/* A '\n'-separated list of model names (NULL: none) as a JSON array of
 * redacted strings. */
static json_t *
name_array(struct out *o, const char *list)
{
	json_t *a = json_array();

	for (const char *p = list; a != NULL && p != NULL && *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)l, p);
		if (json_array_append_new(a, red_json(o, name)) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
		p = nl != NULL ? nl + 1 : p + l;
	}
	if (a == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return a != NULL ? a : json_array();
}

/* Calls, tokens, cost (priced calls), error rate, percentiles. */
static json_t *
stats_json(struct out *o, const struct genai_stats *s)
{
	json_t *v;

	v = json_pack("{s:I, s:I, s:f, s:I, s:I, s:o, s:b, s:I, s:I, s:o, "
		      "s:o, s:o}",
		      "calls", (json_int_t)s->calls, "errors",
		      (json_int_t)s->errors, "error_rate_pct",
		      merge_pct(s->errors, s->calls), "input_tokens",
		      (json_int_t)s->input_tokens, "output_tokens",
		      (json_int_t)s->output_tokens, "cost_usd",
		      s->priced > 0 || s->calls == 0 ? json_real(s->cost_usd)
						     : json_null(),
		      "cost_complete", s->unpriced == 0, "priced_calls",
		      (json_int_t)s->priced, "unpriced_calls",
		      (json_int_t)s->unpriced, "unpriced_models",
		      name_array(o, s->unpriced_models), "p50_ms",
		      num_or_null(s->p50_ms), "p95_ms", num_or_null(s->p95_ms));
	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

/* The cells Calls | Input tokens | Output tokens | Cost | Error rate |
 * p50 | p95 of a group. */
struct cells {
	char calls[32], in[32], out[32], cost[480], err[48], p50[24], p95[24];
};

static void
stats_cells(struct out *o, const struct genai_stats *s, bool model_row,
	    const char *model, struct cells *c)
{
	render_count(s->calls, c->calls, sizeof(c->calls));
	render_count(s->input_tokens, c->in, sizeof(c->in));
	render_count(s->output_tokens, c->out, sizeof(c->out));
	cost_text(o, s, model_row, model, c->cost, sizeof(c->cost));
	render_pct(s->errors, s->calls, c->err, sizeof(c->err));
	if (isfinite(s->p50_ms))
		render_ms(s->p50_ms, c->p50, sizeof(c->p50));
	else
		snprintf(c->p50, sizeof(c->p50), "-");
	if (isfinite(s->p95_ms))
		render_ms(s->p95_ms, c->p95, sizeof(c->p95));
	else
		snprintf(c->p95, sizeof(c->p95), "-");
}

/* ---- calls -------------------------------------------------------------- */

static json_t *
call_json(struct out *o, const struct genai_call *c)
{
	char start[TIMERANGE_FORMAT_MAX];
	json_t *v;

	fmt_ns_time(c->start_ns, start, sizeof(start));
	v = json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:f, s:o, s:o, "
		"s:o, s:s}",
		"trace_id", c->trace_id, "span_id", c->span_id, "start", start,
		"service", red_json(o, c->service), "name",
		red_json(o, c->name), "provider", red_json(o, c->provider),
		"model", red_json(o, c->model), "duration_ms",
		(double)c->duration_ns / 1e6, "input_tokens",
		c->input_tokens >= 0 ? json_integer(c->input_tokens)
				     : json_null(),
		"output_tokens",
		c->output_tokens >= 0 ? json_integer(c->output_tokens)
				      : json_null(),
		"cost_usd", c->priced ? json_real(c->cost_usd) : json_null(),
		"status", otlp_status_name(c->status));
	if (v != NULL &&
	    json_object_set_new(v, "failed", json_boolean(c->failed)) != 0) {
		json_decref(v);
		v = NULL;
	}
	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

static const char *const call_cols[] = {
	"Start",    "Service",	       "Span", "Model",
	"Duration", "Tokens (in/out)", "Cost", "Status",
};
#define NCALL_COLS (sizeof(call_cols) / sizeof(call_cols[0]))

static int
call_row(struct out *o, const struct genai_call *c)
{
	char start[TIMERANGE_FORMAT_MAX], dur[24], tok[80], cost[320], in[32],
		out[32];
	const char *cells[NCALL_COLS];

	fmt_ns_time(c->start_ns, start, sizeof(start));
	render_ms((double)c->duration_ns / 1e6, dur, sizeof(dur));
	if (c->input_tokens >= 0)
		render_count((uint64_t)c->input_tokens, in, sizeof(in));
	else
		snprintf(in, sizeof(in), "-");
	if (c->output_tokens >= 0)
		render_count((uint64_t)c->output_tokens, out, sizeof(out));
	else
		snprintf(out, sizeof(out), "-");
	snprintf(tok, sizeof(tok), "%s / %s", in, out);
	if (c->priced)
		render_usd(c->cost_usd, cost, sizeof(cost));
	else if (c->input_tokens < 0 && c->output_tokens < 0)
		snprintf(cost, sizeof(cost), "-");
	else
		snprintf(cost, sizeof(cost), "unknown (model %s has no price)",
			 c->model != NULL ? red_text(o, c->model)
					  : "(no model)");
	cells[0] = start;
	cells[1] = red_text(o, c->service);
	cells[2] = red_text(o, c->name);
	cells[3] = c->model != NULL ? red_text(o, c->model) : "-";
	cells[4] = dur;
	cells[5] = tok;
	cells[6] = cost;
	/* failed by the one rule (an HTTP 429 with status unset too) */
	cells[7] = otlp_status_name(c->failed ? 2 : c->status);
	return tool_md_row(&o->b, cells, NCALL_COLS);
}

static void
call_table(struct out *o, const char *title, const struct genai_call *c,
	   size_t n)
{
	if (n == 0 || !section_room(o, title))
		return;
	out_printf(o, "\n### %s\n", title);
	if (tool_md_row(&o->b, call_cols, NCALL_COLS) != STATUS_OK ||
	    tool_md_rule(&o->b, NCALL_COLS) != STATUS_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!room(o) || call_row(o, &c[i]) != STATUS_OK) {
			out_printf(o, "(%zu more: see structuredContent)\n",
				   n - i);
			return;
		}
	}
}

/* ---- the store ------------------------------------------------------------ */

/* Ends a handler: the text and sc (stolen) as the result, unless
 * something failed on the way (kept in o->b). */
static int
finish(struct out *o, json_t *sc, json_t **result)
{
	/* every list a GenAI answer may hold; those it lacks are skipped */
	struct tool_rows rows[] = {
		{"top_sessions", NULL, "sessions", 0, 0, 0},
		{"least_expensive_sessions", NULL, "cheapest sessions", 0, 0,
		 0},
		{"recent_sessions", NULL, "recent sessions", 0, 0, 0},
		{"by_model", NULL, "models", 0, 0, 0},
		{"by_service", NULL, "services", 0, 0, 0},
		{"services", NULL, "services", 0, 0, 0},
		{"slowest_calls", NULL, "slowest calls", 0, 0, 0},
		{"most_expensive_calls", NULL, "most expensive calls", 0, 0, 0},
		{"error_spans", NULL, "error spans", 0, 0, 0},
	};

	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_fit(o->call, &o->b, sc, rows,
			       sizeof(rows) / sizeof(rows[0]),
			       "narrow time_range or filter by service or "
			       "model",
			       result);
}

/* ---- sessions by cost ---------------------------------------------------- */

/* Sessions listed by cost: most expensive first, least expensive first,
 * or both lists (the order argument). */
enum sess_order {
	SESS_DESC = 1,
	SESS_ASC = 2,
	SESS_BOTH = SESS_DESC | SESS_ASC,
};

/* order (default dflt) into *out; false with err set for another value. */
static bool
sess_order_arg(const json_t *args, enum sess_order dflt, enum sess_order *out,
	       char *err, size_t cap)
{
	const char *v = tool_arg_str(args, "order");

	*out = dflt;
	if (v == NULL)
		return true;
	if (strcmp(v, "cost_desc") == 0)
		*out = SESS_DESC;
	else if (strcmp(v, "cost_asc") == 0)
		*out = SESS_ASC;
	else if (strcmp(v, "both") == 0)
		*out = SESS_BOTH;
	else {
		snprintf(err, cap,
			 "order \"%.40s\" is not known: use cost_desc (most "
			 "expensive sessions first), cost_asc or both",
			 v);
		return false;
	}
	return true;
}

static void
sessions_table(struct out *o, const char *title, const struct genai_group *list,
	       size_t n, size_t total)
{
	static const char *const cols[] = {"Session", "Service", "Calls",
					   "Tokens (in/out)", "Cost"};
	struct cells c;

	if (n == 0 || !section_room(o, title))
		return;
	out_printf(o, "\n### %s (%zu of %zu)\n", title, n, total);
	if (tool_md_row(&o->b, cols, 5) != STATUS_OK ||
	    tool_md_rule(&o->b, 5) != STATUS_OK)
		return;
	for (size_t i = 0; i < n && room(o); i++) {
		const struct genai_group *g = &list[i];
		char tok[80];
		const char *cells[5];

		stats_cells(o, &g->s, false, NULL, &c);
		snprintf(tok, sizeof(tok), "%s / %s", c.in, c.out);
		cells[0] = red_text(o, g->session_id);
		cells[1] = red_text(o, g->service);
		cells[2] = c.calls;
		cells[3] = tok;
		cells[4] = c.cost;
		if (tool_md_row(&o->b, cells, 5) != STATUS_OK)
			return;
	}
}

static void
sessions_text(struct out *o, const struct genai_usage *u, enum sess_order order)
{
	if (order & SESS_DESC)
		sessions_table(o, "Top sessions by cost", u->sessions,
			       u->n_sessions, u->sessions_total);
	if (order & SESS_ASC)
		sessions_table(o, "Least expensive sessions", u->cheapest,
			       u->n_cheapest, u->sessions_total);
}

static json_t *
groups_json(struct out *o, const struct genai_group *g, size_t n,
	    const char *key)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++) {
		json_t *s = stats_json(o, &g[i].s);
		int bad = s == NULL;

		if (!bad && strcmp(key, "service") == 0)
			bad = json_object_set_new(s, "service",
						  red_json(o, g[i].service));
		else if (!bad)
			bad = json_object_set_new(
				      s, "session_id",
				      red_json(o, g[i].session_id)) ||
			      json_object_set_new(s, "service",
						  red_json(o, g[i].service));
		if (bad || json_array_append_new(a, s) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	}
	if (a == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return a;
}

/* ---- sessions ------------------------------------------------------------ */

/*
 * "no session X in the last 7 days; recent sessions: a (svc, started T),
 * ..." into o's text, and the list as JSON (*recent).
 */
static int
not_found(struct out *o, struct pg_conn *c, const char *id,
	  const struct timerange *tr, const char *desc, json_t **recent,
	  struct pg_error *err)
{
	struct genai_recent_list *l = NULL;
	int rc;

	*recent = json_array();
	if (*recent == NULL)
		return STATUS_NOMEM;
	rc = genai_recent_sessions(c, id, tr->from_ms, tr->to_ms, &l, err);
	if (rc != STATUS_OK)
		return rc;
	out_printf(o, "no session %s in %s", red_text(o, id), desc);
	for (size_t i = 0; i < l->n; i++) {
		const struct genai_recent *r = &l->items[i];
		char start[TIMERANGE_FORMAT_MAX];
		const char *lead;

		fmt_ns_time(r->start_ns, start, sizeof(start));
		if (r->similar)
			lead = i == 0 ? "; did you mean " : " or ";
		else if (i == 0)
			lead = "; recent sessions: ";
		else if (l->items[i - 1].similar)
			lead = "? Other recent sessions: ";
		else
			lead = ", ";
		out_printf(o, "%s%s (%s, started %s)", lead,
			   red_text(o, r->session_id), red_text(o, r->service),
			   start);
		if (json_array_append_new(
			    *recent,
			    json_pack("{s:o, s:o, s:s, s:b}", "session_id",
				      red_json(o, r->session_id), "service",
				      red_json(o, r->service), "start", start,
				      "similar", r->similar)) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	}
	if (l->n == 0)
		out_puts(o, "; no session has spans in that range");
	else if (l->items[l->n - 1].similar)
		out_puts(o, "?");
	out_puts(o, "\n");
	genai_recent_free(l);
	return STATUS_OK;
}

static json_t *
span_ref_json(struct out *o, const struct genai_span_ref *r, bool message)
{
	char start[TIMERANGE_FORMAT_MAX];
	json_t *v;

	fmt_ns_time(r->start_ns, start, sizeof(start));
	v = json_pack("{s:s, s:s, s:o, s:o, s:s, s:f, s:f, s:f}", "trace_id",
		      r->trace_id, "span_id", r->span_id, "service",
		      red_json(o, r->service), "name", red_json(o, r->name),
		      "start", start, "duration_ms",
		      (double)r->duration_ns / 1e6, "self_ms",
		      (double)r->self_ns / 1e6, "trace_duration_ms",
		      (double)r->trace_duration_ns / 1e6);
	if (v != NULL && message &&
	    json_object_set_new(v, "message", red_json(o, r->message)) != 0) {
		json_decref(v);
		v = NULL;
	}
	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

static json_t *
models_json(struct out *o, const struct genai_group *g, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++) {
		json_t *s = stats_json(o, &g[i].s);

		if (s == NULL ||
		    json_object_set_new(s, "provider",
					red_json(o, g[i].provider)) != 0 ||
		    json_object_set_new(s, "model", red_json(o, g[i].model)) !=
			    0 ||
		    json_object_set_new(s, "snapshots",
					name_array(o, g[i].snapshots)) != 0 ||
		    json_array_append_new(a, s) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	}
	if (a == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return a;
}

static json_t *
session_json(struct out *o, const struct genai_session *s, const char *id,
	     const struct timerange *tr)
{
	char start[TIMERANGE_FORMAT_MAX], end[TIMERANGE_FORMAT_MAX];
	json_t *v, *services = json_array(), *slow = json_array(),
		   *costly = json_array(), *errors = json_array();

	for (size_t i = 0; services != NULL && i < s->n_services; i++)
		if (json_array_append_new(
			    services,
			    json_pack("{s:o, s:I, s:I}", "name",
				      red_json(o, s->services[i].name), "spans",
				      (json_int_t)s->services[i].spans,
				      "errors",
				      (json_int_t)s->services[i].errors)) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	for (size_t i = 0; slow != NULL && i < s->n_slowest; i++)
		if (json_array_append_new(slow, call_json(o, &s->slowest[i])) !=
		    0)
			buf_set_error(&o->b, STATUS_NOMEM);
	for (size_t i = 0; costly != NULL && i < s->n_costliest; i++)
		if (json_array_append_new(costly,
					  call_json(o, &s->costliest[i])) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	for (size_t i = 0; errors != NULL && i < s->n_error_spans; i++)
		if (json_array_append_new(
			    errors,
			    span_ref_json(o, &s->error_spans[i], true)) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	fmt_ns_time(s->start_ns, start, sizeof(start));
	fmt_ns_time(s->end_ns, end, sizeof(end));
	v = json_pack(
		"{s:o, s:b, s:o, s:s, s:s, s:f, s:I, s:I, s:I, s:I, "
		"s:f, s:f, s:b, s:o, s:{s:o, s:o}, s:o, s:o, s:o, s:o}",
		"session_id", red_json(o, id), "found", 1, "time_range",
		tool_range_json(tr), "start", start, "end", end, "duration_ms",
		(double)(s->end_ns - s->start_ns) / 1e6, "traces",
		(json_int_t)s->traces, "traces_read",
		(json_int_t)s->traces_read, "spans", (json_int_t)s->spans,
		"errors", (json_int_t)s->errors, "error_rate_pct",
		merge_pct(s->errors, s->spans), "avg_trace_ms", s->avg_trace_ms,
		"truncated", s->truncated, "services",
		services != NULL ? services : json_array(), "genai", "total",
		stats_json(o, &s->total), "by_model",
		models_json(o, s->models, s->n_models), "slowest_calls",
		slow != NULL ? slow : json_array(), "most_expensive_calls",
		costly != NULL ? costly : json_array(), "error_spans",
		errors != NULL ? errors : json_array(), "bottleneck",
		s->has_bottleneck ? span_ref_json(o, &s->bottleneck, false)
				  : json_null());
	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

static const char *const model_cols[] = {
	"Model", "Provider",   "Calls", "Input tokens", "Output tokens",
	"Cost",	 "Error rate", "p50",	"p95",
};
#define NMODEL_COLS (sizeof(model_cols) / sizeof(model_cols[0]))

/* A row by model family, its snapshots named ("gpt-4o (snapshot
 * gpt-4o-2024-08-06)"), or the total row (g NULL). */
static int
model_row(struct out *o, const struct genai_group *g,
	  const struct genai_stats *s)
{
	const char *model = g != NULL ? g->model : NULL;
	const char *provider = g != NULL ? g->provider : NULL;
	char name[640], snaps[400];
	struct cells c;
	const char *cells[NMODEL_COLS];

	stats_cells(o, s, g != NULL, model, &c);
	snprintf(name, sizeof(name), "%s",
		 model != NULL ? red_text(o, model) : "(no model)");
	if (g != NULL && g->snapshots != NULL) {
		model_list(o, g->snapshots, snaps, sizeof(snaps));
		snprintf(name + strlen(name), sizeof(name) - strlen(name),
			 " (snapshot%s %s)",
			 strchr(g->snapshots, '\n') != NULL ? "s" : "", snaps);
	}
	cells[0] = g != NULL ? name : "**All**";
	cells[1] = provider != NULL ? red_text(o, provider) : "";
	cells[2] = c.calls;
	cells[3] = c.in;
	cells[4] = c.out;
	cells[5] = c.cost;
	cells[6] = c.err;
	cells[7] = c.p50;
	cells[8] = c.p95;
	return tool_md_row(&o->b, cells, NMODEL_COLS);
}

/* "svc: name (span s of trace t), self time 5,000ms of its 9,000ms trace
 * (56%)" into b (o->b or a line of its own): a piece, left out when it
 * does not fit b (tool_fit). */
static void
bottleneck_text(struct out *o, struct buf *b, const struct genai_span_ref *r)
{
	char self[24], trace[24], share[RENDER_PCT_MAX];

	render_ms((double)r->self_ns / 1e6, self, sizeof(self));
	render_ms((double)r->trace_duration_ns / 1e6, trace, sizeof(trace));
	render_pct(r->self_ns, r->trace_duration_ns, share, sizeof(share));
	buf_printf(b,
		   "%s: %s (span %s of trace %s), self time %s of its %s "
		   "trace (%s)",
		   red_text(o, r->service), red_text(o, r->name), r->span_id,
		   r->trace_id, self, trace, share);
	tool_fit(b);
}

static void
session_text(struct out *o, const struct genai_session *s, const char *id,
	     const char *desc)
{
	char start[TIMERANGE_FORMAT_MAX], end[TIMERANGE_FORMAT_MAX], dur[32],
		avg[24], n[32], err[RENDER_PCT_MAX];

	render_pct(s->errors, s->spans, err, sizeof(err));
	fmt_ns_time(s->start_ns, start, sizeof(start));
	fmt_ns_time(s->end_ns, end, sizeof(end));
	fmt_elapsed((double)(s->end_ns - s->start_ns) / 1e6, dur, sizeof(dur));
	render_ms(s->avg_trace_ms, avg, sizeof(avg));
	render_count(s->spans, n, sizeof(n));
	out_printf(o,
		   "## Session %s\n%s → %s (%s), %zu trace%s (average "
		   "%s), %s spans, %zu error%s (%s)\n",
		   red_text(o, id), start, end, dur, s->traces,
		   s->traces == 1 ? "" : "s", avg, n, s->errors,
		   s->errors == 1 ? "" : "s", err);
	if (s->truncated)
		out_printf(o,
			   "(large session: the figures cover its "
			   "first %zu traces and %d spans)\n",
			   s->traces_read, GENAI_MAX_SPANS);
	out_puts(o, "Services:");
	for (size_t i = 0; i < s->n_services; i++) {
		if (!room(o)) {
			out_printf(o, " and %zu more", s->n_services - i);
			break;
		}
		out_printf(o, "%s %s (%zu span%s", i > 0 ? "," : "",
			   red_text(o, s->services[i].name),
			   s->services[i].spans,
			   s->services[i].spans == 1 ? "" : "s");
		if (s->services[i].errors > 0)
			out_printf(o, ", %zu error%s", s->services[i].errors,
				   s->services[i].errors == 1 ? "" : "s");
		out_puts(o, ")");
	}
	out_printf(o, "\nLooked up in %s.\n", desc);

	if (s->total.calls == 0) {
		out_puts(o, "\nNo GenAI calls in this session.\n");
	} else if (section_room(o, "GenAI calls by model")) {
		out_puts(o, "\n### GenAI calls by model\n");
		if (tool_md_row(&o->b, model_cols, NMODEL_COLS) == STATUS_OK &&
		    tool_md_rule(&o->b, NMODEL_COLS) == STATUS_OK) {
			size_t i;

			for (i = 0; i < s->n_models && room(o); i++)
				if (model_row(o, &s->models[i],
					      &s->models[i].s) != STATUS_OK)
					break;
			if (s->n_models > 1 || i < s->n_models)
				model_row(o, NULL, &s->total);
			if (i < s->n_models)
				out_printf(o,
					   "(%zu more models: see "
					   "structuredContent)\n",
					   s->n_models - i);
		}
	}
	call_table(o, "Slowest calls", s->slowest, s->n_slowest);
	call_table(o, "Most expensive calls", s->costliest, s->n_costliest);

	if (s->n_error_spans > 0 && section_room(o, "errors")) {
		out_printf(o, "\n### Errors (%zu)\n", s->errors);
		for (size_t i = 0; i < s->n_error_spans; i++) {
			const struct genai_span_ref *r = &s->error_spans[i];

			out_printf(o, "- %s: %s", red_text(o, r->service),
				   red_text(o, r->name));
			if (r->message != NULL)
				out_printf(o, ": %.200s",
					   red_text(o, r->message));
			out_printf(o, " (trace %s)\n", r->trace_id);
		}
		if (s->errors > s->n_error_spans)
			out_printf(o, "- and %zu more\n",
				   s->errors - s->n_error_spans);
	}
	omitted_note(o);
	if (s->has_bottleneck) {
		out_puts(o, "\nBottleneck (largest self time): ");
		bottleneck_text(o, &o->b, &s->bottleneck);
		out_puts(o, "\n");
	}
	if (s->total.calls > 0)
		out_puts(o, "Tokens count once: agent spans around LLM "
			    "calls are not counted again.\n");
}

/*
 * What get_session and compare_sessions start with: the time range
 * (default the last 7 days) described into desc, and a store connection
 * in *c.  False with *result an isError answer saying why (NULL when out
 * of memory), *c NULL.
 */
static bool
session_open(struct call *call, const json_t *args, int64_t now,
	     struct timerange *tr, char *desc, size_t cap, struct pg_conn **c,
	     json_t **result)
{
	char err[512];

	*c = NULL;
	if (tool_time_range(args, "7d", 0, now, tr, err, sizeof(err)) !=
	    STATUS_OK) {
		*result = tool_result_error("%s", err);
		return false;
	}
	describe_range(tr, now, desc, cap);
	if (tool_conn_get(call, c, err, sizeof(err), NULL) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		return false;
	}
	return true;
}

/* get_session without a session id: the sessions of the range by cost,
 * both ways unless order says one. */
static int
list_sessions(struct call *call, const json_t *args, struct pg_conn *c,
	      struct out *o, const struct timerange *tr, const char *desc,
	      json_t **result)
{
	struct genai_filter f = {.from_ms = tr->from_ms, .to_ms = tr->to_ms};
	struct genai_usage *u = NULL;
	enum sess_order order;
	struct pg_error pe;
	char err[160];
	json_t *sc;
	int rc;

	if (!sess_order_arg(args, SESS_BOTH, &order, err, sizeof(err))) {
		*result = tool_result_error("%s", err);
		return STATUS_OK;
	}
	if ((rc = genai_usage_get(c, &f, &u, &pe)) != STATUS_OK)
		return tool_store_failed(call, "get_session", rc, &pe, NULL,
					 result);
	out_printf(o, "## GenAI sessions by cost, %s\n", desc);
	if (u->sessions_total == 0)
		out_puts(o, "No session has GenAI calls in that range "
			    "(a session is the session.id or "
			    "gen_ai.conversation.id of its spans).\n");
	sessions_text(o, u, order);
	omitted_note(o);
	if (u->sessions_total > 0)
		out_puts(o, "\nCall get_session with a session_id for one "
			    "session.\n");
	sc = json_pack("{s:n, s:b, s:o, s:o, s:o, s:I}", "session_id", "found",
		       0, "time_range", tool_range_json(tr), "top_sessions",
		       groups_json(o, u->sessions, u->n_sessions, "session"),
		       "least_expensive_sessions",
		       groups_json(o, u->cheapest, u->n_cheapest, "session"),
		       "sessions_total", (json_int_t)u->sessions_total);
	rc = finish(o, sc, result);
	genai_usage_free(u);
	return rc;
}

static int
get_session(struct call *call, const json_t *args, json_t **result)
{
	const char *id = tool_arg_str(args, "session_id");
	struct genai_session *s = NULL;
	struct pg_conn *c = NULL;
	struct pg_error pe;
	struct timerange tr;
	struct out o;
	json_t *sc = NULL, *recent = NULL;
	char desc[128];
	int64_t now = clock_wall_ms();
	int rc = STATUS_OK;

	*result = NULL;
	out_init(&o, call);
	if (!session_open(call, args, now, &tr, desc, sizeof(desc), &c, result))
		goto out;
	if (id == NULL) {
		rc = list_sessions(call, args, c, &o, &tr, desc, result);
		goto out;
	}
	rc = genai_session_get(c, id, tr.from_ms, tr.to_ms, &s, &pe);
	if (rc == STATUS_NOTFOUND) {
		if ((rc = not_found(&o, c, id, &tr, desc, &recent, &pe)) !=
		    STATUS_OK) {
			rc = tool_store_failed(call, "get_session", rc, &pe,
					       NULL, result);
			goto out;
		}
		sc = json_pack("{s:o, s:b, s:o, s:o}", "session_id",
			       red_json(&o, id), "found", 0, "time_range",
			       tool_range_json(&tr), "recent_sessions", recent);
		recent = NULL;
		rc = finish(&o, sc, result);
		goto out;
	}
	if (rc != STATUS_OK) {
		rc = tool_store_failed(call, "get_session", rc, &pe, NULL,
				       result);
		goto out;
	}
	session_text(&o, s, id, desc);
	rc = finish(&o, session_json(&o, s, id, &tr), result);
out:
	pg_release(c);
	genai_session_free(s);
	json_decref(recent);
	out_free(&o);
	return tool_done(rc, result);
}

/* ---- analyze_genai --------------------------------------------------------- */

/* "+12 (+8.5%)" parts: the change and its percentage ("new" from 0). */
static void
change_cells(double prev, double cur, bool usd, char *abs, size_t alen,
	     char *pct, size_t plen)
{
	double d = cur - prev;
	char v[32];

	if (usd) {
		render_usd(fabs(d), v, sizeof(v));
		snprintf(abs, alen, "%s%s", d < 0 ? "-" : "+", v);
	} else {
		render_count((uint64_t)fabs(d), v, sizeof(v));
		snprintf(abs, alen, "%s%s", d < 0 ? "-" : "+", v);
	}
	if (prev > 0)
		render_change(100 * d / prev, "%", pct, plen);
	else
		snprintf(pct, plen, "%s", cur > 0 ? "new" : "0%");
}

static json_t *
change_json(double prev, double cur)
{
	return json_pack("{s:f, s:o}", "absolute", cur - prev, "pct",
			 prev > 0 ? json_real(100 * (cur - prev) / prev)
				  : json_null());
}

static void
change_table(struct out *o, const struct genai_usage *u, const char *pdesc)
{
	static const char *const cols[] = {"Metric", "Previous", "Current",
					   "Change", "Change %"};
	const struct genai_stats *p = &u->previous, *c = &u->total;
	char pv[320], cv[320], abs[48], pct[RENDER_PCT_MAX];
	const char *cells[5];

	out_printf(o,
		   "\n### Change against the previous period "
		   "(%s)\n",
		   pdesc);
	if (tool_md_row(&o->b, cols, 5) != STATUS_OK ||
	    tool_md_rule(&o->b, 5) != STATUS_OK)
		return;
	cells[1] = pv;
	cells[2] = cv;
	cells[3] = abs;
	cells[4] = pct;
	for (int i = 0; i < 5; i++) {
		double a, b;

		switch (i) {
		case 0:
			cells[0] = "Calls";
			a = (double)p->calls;
			b = (double)c->calls;
			break;
		case 1:
			cells[0] = "Input tokens";
			a = (double)p->input_tokens;
			b = (double)c->input_tokens;
			break;
		case 2:
			cells[0] = "Output tokens";
			a = (double)p->output_tokens;
			b = (double)c->output_tokens;
			break;
		case 3:
			cells[0] = "Cost";
			a = p->cost_usd;
			b = c->cost_usd;
			break;
		default:
			cells[0] = "Error rate";
			a = merge_pct(p->errors, p->calls);
			b = merge_pct(c->errors, c->calls);
			break;
		}
		if (i == 3) {
			cost_text(o, p, false, NULL, pv, sizeof(pv));
			cost_text(o, c, false, NULL, cv, sizeof(cv));
			change_cells(a, b, true, abs, sizeof(abs), pct,
				     sizeof(pct));
		} else if (i == 4) {
			render_pct(p->errors, p->calls, pv, sizeof(pv));
			render_pct(c->errors, c->calls, cv, sizeof(cv));
			render_change(b - a, " pp", abs, sizeof(abs));
			if (a > 0)
				render_change(100 * (b - a) / a, "%", pct,
					      sizeof(pct));
			else
				snprintf(pct, sizeof(pct), "%s",
					 b > 0 ? "new" : "0%");
		} else {
			render_count((uint64_t)a, pv, sizeof(pv));
			render_count((uint64_t)b, cv, sizeof(cv));
			change_cells(a, b, false, abs, sizeof(abs), pct,
				     sizeof(pct));
		}
		if (tool_md_row(&o->b, cells, 5) != STATUS_OK)
			return;
	}
}

static const char *const group_cols[] = {
	"Service", "Calls",	 "Input tokens", "Output tokens",
	"Cost",	   "Error rate", "p50",		 "p95",
};
#define NGROUP_COLS (sizeof(group_cols) / sizeof(group_cols[0]))

static void
usage_text(struct out *o, const struct genai_usage *u, const json_t *args,
	   enum sess_order order, const char *desc, const char *pdesc)
{
	const struct genai_stats *t = &u->total;
	struct cells c;
	size_t i;

	stats_cells(o, t, false, NULL, &c);
	out_printf(o, "## GenAI usage, %s", desc);
	if (tool_arg_str(args, "service") != NULL)
		out_printf(o, ", service %s",
			   red_text(o, tool_arg_str(args, "service")));
	if (tool_arg_str(args, "model") != NULL)
		out_printf(o, ", model %s",
			   red_text(o, tool_arg_str(args, "model")));
	out_printf(o,
		   "\n%s calls, %s input and %s output tokens, cost "
		   "%s, errors %s, latency p50 %s, p95 %s\n",
		   c.calls, c.in, c.out, c.cost, c.err, c.p50, c.p95);
	change_table(o, u, pdesc);

	if (u->n_models > 0 && section_room(o, "by model")) {
		out_printf(o, "\n### By model (%zu)\n", u->models_total);
		if (tool_md_row(&o->b, model_cols, NMODEL_COLS) == STATUS_OK &&
		    tool_md_rule(&o->b, NMODEL_COLS) == STATUS_OK) {
			for (i = 0; i < u->n_models && room(o); i++)
				if (model_row(o, &u->models[i],
					      &u->models[i].s) != STATUS_OK)
					break;
			if (i < u->models_total)
				out_printf(
					o,
					"(%zu more models: %s; or ask for one "
					"model)\n",
					u->models_total - i,
					i < u->n_models
						? "see structuredContent"
						: "only the most expensive "
						  "are listed");
		}
	}
	if (u->n_services > 0 && section_room(o, "by service")) {
		out_printf(o, "\n### By service (%zu)\n", u->services_total);
		if (tool_md_row(&o->b, group_cols, NGROUP_COLS) == STATUS_OK &&
		    tool_md_rule(&o->b, NGROUP_COLS) == STATUS_OK) {
			for (i = 0; i < u->n_services && room(o); i++) {
				const char *cells[NGROUP_COLS];
				const struct genai_group *g = &u->services[i];

				stats_cells(o, &g->s, false, NULL, &c);
				cells[0] = red_text(o, g->service);
				cells[1] = c.calls;
				cells[2] = c.in;
				cells[3] = c.out;
				cells[4] = c.cost;
				cells[5] = c.err;
				cells[6] = c.p50;
				cells[7] = c.p95;
				if (tool_md_row(&o->b, cells, NGROUP_COLS) !=
				    STATUS_OK)
					break;
			}
			if (i < u->services_total)
				out_printf(o,
					   "(%zu more services: %s; or ask for "
					   "one service)\n",
					   u->services_total - i,
					   i < u->n_services
						   ? "see structuredContent"
						   : "only the most expensive "
						     "are listed");
		}
	}
	sessions_text(o, u, order);
	omitted_note(o);
	if (t->unpriced > 0) {
		char names[320];

		model_list(o, t->unpriced_models, names, sizeof(names));
		out_printf(o,
			   "\nCost is a lower bound: %" PRIu64
			   " call%s of models without a price (%s); "
			   "add their prices to model_pricing.\n",
			   t->unpriced, t->unpriced == 1 ? "" : "s", names);
	}
	if (t->calls > 0)
		out_puts(o, "Tokens count once: agent spans around LLM "
			    "calls are not counted again.\n");
}

static json_t *
usage_json(struct out *o, const struct genai_usage *u, const json_t *args,
	   const struct timerange *tr, const struct timerange *prev)
{
	const struct genai_stats *p = &u->previous, *c = &u->total;
	json_t *v = json_pack(
		"{s:o, s:o, s:{s:o, s:o}, s:o, s:o, s:{s:o, s:o, s:o, s:o, "
		"s:o}, s:o, s:I, s:o, s:I, s:o, s:I}",
		"time_range", tool_range_json(tr), "previous_range",
		tool_range_json(prev), "filters", "service",
		red_json(o, tool_arg_str(args, "service")), "model",
		red_json(o, tool_arg_str(args, "model")), "total",
		stats_json(o, c), "previous", stats_json(o, p), "change",
		"calls", change_json((double)p->calls, (double)c->calls),
		"input_tokens",
		change_json((double)p->input_tokens, (double)c->input_tokens),
		"output_tokens",
		change_json((double)p->output_tokens, (double)c->output_tokens),
		"cost_usd", change_json(p->cost_usd, c->cost_usd),
		"error_rate_pct",
		change_json(merge_pct(p->errors, p->calls),
			    merge_pct(c->errors, c->calls)),
		"by_model", models_json(o, u->models, u->n_models),
		"models_total", (json_int_t)u->models_total, "by_service",
		groups_json(o, u->services, u->n_services, "service"),
		"services_total", (json_int_t)u->services_total, "top_sessions",
		groups_json(o, u->sessions, u->n_sessions, "session"),
		"sessions_total", (json_int_t)u->sessions_total);

	if (v != NULL &&
	    json_object_set_new(v, "least_expensive_sessions",
				groups_json(o, u->cheapest, u->n_cheapest,
					    "session")) != 0) {
		json_decref(v);
		v = NULL;
	}

	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

/* "; models with calls in that range: a, b" for a filter that matched
 * nothing (best effort: nothing is said when the lookup fails). */
static void
suggest_names(struct out *o, struct pg_conn *c, enum genai_key key,
	      const struct timerange *tr)
{
	struct genai_names *nm = NULL;
	struct pg_error pe;

	if (genai_names_get(c, key, tr->from_ms, tr->to_ms, 10, &nm, &pe) !=
	    STATUS_OK)
		return;
	if (nm->n == 0)
		out_puts(o, "; no GenAI calls at all in that range");
	for (size_t i = 0; i < nm->n; i++)
		out_printf(
			o, "%s%s",
			i > 0 ? ", "
			      : (key == GENAI_KEY_MODEL
					 ? "; models with calls in that range: "
					 : "; services with calls in that "
					   "range: "),
			red_text(o, nm->names[i]));
	genai_names_free(nm);
}

static int
analyze_genai(struct call *call, const json_t *args, json_t **result)
{
	struct genai_filter f = {0};
	struct genai_usage *u = NULL;
	struct pg_conn *c = NULL;
	enum sess_order order;
	struct timerange tr, prev;
	struct pg_error pe;
	struct out o;
	char err[512], desc[128], pdesc[128];
	char svc[256], svc_note[320]; /* the service as resolved */
	int64_t now = clock_wall_ms();
	int rc = STATUS_OK;

	*result = NULL;
	out_init(&o, call);
	if (!sess_order_arg(args, SESS_DESC, &order, err, sizeof(err)) ||
	    tool_time_range(args, "1h", TOOL_RANGE_FROM_TO, now, &tr, err,
			    sizeof(err)) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto out;
	}
	prev.to_ms = tr.from_ms;
	prev.from_ms = tr.from_ms - (tr.to_ms - tr.from_ms);
	describe_range(&tr, now, desc, sizeof(desc));
	describe_range(&prev, now, pdesc, sizeof(pdesc));
	f.from_ms = tr.from_ms;
	f.to_ms = tr.to_ms;
	/* before the lease: it may read the names on a connection of its own */
	f.service = tool_service_name(call, tool_arg_str(args, "service"), svc,
				      sizeof(svc), svc_note, sizeof(svc_note));
	f.model = tool_arg_str(args, "model");
	if (svc_note[0] != '\0')
		out_printf(&o, "%s\n\n", svc_note);
	if (tool_conn_get(call, &c, err, sizeof(err), NULL) != STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto out;
	}
	(void)call_progress(call, 1, 2, "reading GenAI spans");
	if ((rc = genai_usage_get(c, &f, &u, &pe)) != STATUS_OK) {
		rc = tool_store_failed(call, "analyze_genai", rc, &pe, NULL,
				       result);
		goto out;
	}
	if (u->total.calls == 0 && u->previous.calls == 0) {
		out_puts(&o, "No GenAI calls");
		if (f.service != NULL)
			out_printf(&o, " of service %s",
				   red_text(&o, f.service));
		if (f.model != NULL)
			out_printf(&o, " of model %s", red_text(&o, f.model));
		out_printf(&o, " in %s, nor in the period before (%s)", desc,
			   pdesc);
		if (f.model != NULL)
			suggest_names(&o, c, GENAI_KEY_MODEL, &tr);
		else if (f.service != NULL)
			suggest_names(&o, c, GENAI_KEY_SERVICE, &tr);
		out_puts(&o, ".\nA GenAI call is a span with "
			     "gen_ai.operation.name chat, text_completion, "
			     "generate_content or embeddings, or with "
			     "gen_ai.usage token counts.\n");
	} else {
		usage_text(&o, u, args, order, desc, pdesc);
	}
	rc = finish(&o, usage_json(&o, u, args, &tr, &prev), result);
out:
	pg_release(c);
	genai_usage_free(u);
	out_free(&o);
	return tool_done(rc, result);
}

/* ---- compare_sessions ------------------------------------------------------ */

enum {
	M_SPANS,
	M_ERRORS,
	M_LATENCY,
	M_TOKENS,
	M_COST,
	NMETRICS
};

static const char *const metric_names[NMETRICS] = {
	"Total Spans",	"Error Rate",	  "Avg Latency",
	"Total Tokens", "Estimated Cost",
};

static double
metric(const struct genai_session *s, int m)
{
	switch (m) {
	case M_SPANS: return (double)s->spans;
	case M_ERRORS: return merge_pct(s->errors, s->spans);
	case M_LATENCY: return s->avg_trace_ms;
	case M_TOKENS:
		return (double)(s->total.input_tokens + s->total.output_tokens);
	default: return s->total.cost_usd;
	}
}

static void
metric_text(struct out *o, const struct genai_session *s, int m, char *buf,
	    size_t cap)
{
	switch (m) {
	case M_SPANS: render_count(s->spans, buf, cap); break;
	case M_ERRORS: render_pct(s->errors, s->spans, buf, cap); break;
	case M_LATENCY: render_ms(s->avg_trace_ms, buf, cap); break;
	case M_TOKENS: render_count((uint64_t)metric(s, m), buf, cap); break;
	default: cost_text(o, &s->total, false, NULL, buf, cap); break;
	}
}

/* (b - a) / a in percent; NAN when a is 0 (infinite when b is not). */
static double
diff_pct(double a, double b)
{
	if (a == 0)
		return b == 0 ? 0 : NAN;
	return 100 * (b - a) / a;
}

static void
diff_text(double a, double b, char *buf, size_t cap)
{
	double d = diff_pct(a, b);

	if (isnan(d))
		snprintf(buf, cap, "n/a (A is 0)");
	else
		render_change(d, "%", buf, cap);
}

/* "gpt-4o (3 calls), claude-sonnet-4 (1 call)": the session's models. */
static void
models_used(struct out *o, const struct genai_session *s, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	if (s->n_models == 0)
		snprintf(buf, cap, "no GenAI calls");
	for (size_t i = 0; i < s->n_models && i < MAX_LISTED && len < cap; i++)
		len += (size_t)snprintf(
			buf + len, cap - len, "%s%s (%" PRIu64 " call%s)",
			i > 0 ? ", " : "",
			s->models[i].model != NULL
				? red_text(o, s->models[i].model)
				: "(no model)",
			s->models[i].s.calls,
			s->models[i].s.calls == 1 ? "" : "s");
	if (s->n_models > MAX_LISTED && len < cap)
		snprintf(buf + len, cap - len, " and %zu more",
			 s->n_models - MAX_LISTED);
}

static bool
same_models(const struct genai_session *a, const struct genai_session *b)
{
	if (a->n_models != b->n_models)
		return false;
	for (size_t i = 0; i < a->n_models; i++) {
		bool found = false;

		for (size_t j = 0; j < b->n_models && !found; j++)
			found = a->models[i].model != NULL &&
				b->models[j].model != NULL &&
				strcmp(a->models[i].model,
				       b->models[j].model) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Writes the Key Differences bullets and returns them as JSON strings. */
static json_t *
key_differences(struct out *o, const struct genai_session *const s[2])
{
	json_t *list = json_array();
	char a[480], b[480], d[48], line[1400];
	int top = -1;
	double best = -1;

	out_puts(o, "\n### Key Differences\n");
	for (int m = 0; m < NMETRICS; m++) {
		double x = metric(s[0], m), y = metric(s[1], m);
		double w =
			isnan(diff_pct(x, y)) ? INFINITY : fabs(diff_pct(x, y));

		if (w > best && w > 0) {
			best = w;
			top = m;
		}
	}
	for (int k = 0; k < 5; k++) {
		line[0] = '\0';
		if (k == 0 && top < 0) {
			snprintf(line, sizeof(line),
				 "The sessions are alike on every metric.");
		} else if (k == 0) {
			metric_text(o, s[0], top, a, sizeof(a));
			metric_text(o, s[1], top, b, sizeof(b));
			diff_text(metric(s[0], top), metric(s[1], top), d,
				  sizeof(d));
			snprintf(line, sizeof(line),
				 "Largest difference: %s (A %s, B %s, %s).",
				 metric_names[top], a, b, d);
		} else if (k == 1 && !same_models(s[0], s[1])) {
			models_used(o, s[0], a, sizeof(a));
			models_used(o, s[1], b, sizeof(b));
			snprintf(line, sizeof(line),
				 "Models: A used %s; B used %s.", a, b);
		} else if (k == 2 && s[0]->traces != s[1]->traces) {
			snprintf(line, sizeof(line),
				 "Traces (requests): A %zu, B %zu.",
				 s[0]->traces, s[1]->traces);
		} else if (k >= 3 && s[k - 3]->has_bottleneck) {
			struct buf t;

			buf_init(&t, sizeof(line) - 1);
			buf_printf(&t, "Session %c's primary bottleneck: ",
				   k == 3 ? 'A' : 'B');
			bottleneck_text(o, &t, &s[k - 3]->bottleneck);
			buf_set_error(&o->b, buf_error(&t));
			snprintf(line, sizeof(line), "%s.",
				 t.data != NULL ? t.data : "");
			buf_free(&t);
		}
		if (line[0] == '\0')
			continue;
		out_printf(o, "- %s\n", line);
		if (json_array_append_new(list, json_string(line)) != 0)
			buf_set_error(&o->b, STATUS_NOMEM);
	}
	for (int i = 0; i < 2; i++)
		if (s[i]->total.unpriced > 0) {
			model_list(o, s[i]->total.unpriced_models, a,
				   sizeof(a));
			snprintf(line, sizeof(line),
				 "Session %c's cost is a lower bound: %" PRIu64
				 " call%s of models without a price (%s).",
				 i == 0 ? 'A' : 'B', s[i]->total.unpriced,
				 s[i]->total.unpriced == 1 ? "" : "s", a);
			out_printf(o, "- %s\n", line);
			if (json_array_append_new(list, json_string(line)) != 0)
				buf_set_error(&o->b, STATUS_NOMEM);
		}
	if (list == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return list;
}

static json_t *
summary_json(struct out *o, const struct genai_session *s, const char *id)
{
	json_t *v = json_pack(
		"{s:o, s:b, s:I, s:I, s:I, s:f, s:f, s:I, s:o, s:o}",
		"session_id", red_json(o, id), "found", 1, "traces",
		(json_int_t)s->traces, "spans", (json_int_t)s->spans, "errors",
		(json_int_t)s->errors, "error_rate_pct",
		merge_pct(s->errors, s->spans), "avg_latency_ms",
		s->avg_trace_ms, "total_tokens",
		(json_int_t)(s->total.input_tokens + s->total.output_tokens),
		"genai", stats_json(o, &s->total), "bottleneck",
		s->has_bottleneck ? span_ref_json(o, &s->bottleneck, false)
				  : json_null());

	if (v == NULL)
		buf_set_error(&o->b, STATUS_NOMEM);
	return v;
}

static int
compare_sessions(struct call *call, const json_t *args, json_t **result)
{
	const char *ids[2] = {tool_arg_str(args, "session_id_1"),
			      tool_arg_str(args, "session_id_2")};
	struct genai_session *s[2] = {NULL, NULL};
	struct pg_conn *c = NULL;
	struct timerange tr;
	struct pg_error pe;
	struct out o;
	json_t *sc = NULL, *missing = NULL;
	char desc[128];
	int64_t now = clock_wall_ms();
	int rc = STATUS_OK;

	*result = NULL;
	out_init(&o, call);
	if (ids[0] == NULL || ids[1] == NULL) {
		*result = tool_result_error(
			"session_id_1 and session_id_2 are required: the "
			"session.id values of the two sessions to compare");
		goto out;
	}
	if (!session_open(call, args, now, &tr, desc, sizeof(desc), &c, result))
		goto out;
	for (int i = 0; i < 2; i++) {
		rc = genai_session_get(c, ids[i], tr.from_ms, tr.to_ms, &s[i],
				       &pe);
		if (rc == STATUS_NOTFOUND)
			continue;
		if (rc != STATUS_OK) {
			rc = tool_store_failed(call, "compare_sessions", rc,
					       &pe, NULL, result);
			goto out;
		}
	}
	rc = STATUS_OK;
	if (s[0] == NULL || s[1] == NULL) {
		missing = json_array();
		for (int i = 0; i < 2 && missing != NULL; i++) {
			json_t *recent = NULL;

			if (s[i] != NULL)
				continue;
			if ((rc = not_found(&o, c, ids[i], &tr, desc, &recent,
					    &pe)) != STATUS_OK) {
				rc = tool_store_failed(call, "compare_sessions",
						       rc, &pe, NULL, result);
				goto out;
			}
			if (json_array_append_new(
				    missing,
				    json_pack("{s:o, s:b, s:o}", "session_id",
					      red_json(&o, ids[i]), "found", 0,
					      "recent_sessions", recent)) != 0)
				buf_set_error(&o.b, STATUS_NOMEM);
		}
		out_puts(&o, "Nothing to compare: call "
			     "compare_sessions again with sessions "
			     "that exist.\n");
		sc = json_pack("{s:o, s:o, s:[], s:[]}", "time_range",
			       tool_range_json(&tr), "missing",
			       missing != NULL ? missing : json_array(),
			       "metrics", "key_differences");
		missing = NULL;
		rc = finish(&o, sc, result);
		goto out;
	}
	{
		static const char *const cols[] = {"Metric", "Session A",
						   "Session B", "Diff"};
		const struct genai_session *const ss[2] = {s[0], s[1]};
		json_t *metrics = json_array(), *keys;
		char a[480], b[480], d[48];

		out_printf(&o, "## Session A (%s) vs Session B (%s)\n",
			   red_text(&o, ids[0]), red_text(&o, ids[1]));
		tool_md_row(&o.b, cols, 4);
		tool_md_rule(&o.b, 4);
		for (int m = 0; m < NMETRICS; m++) {
			const char *cells[4] = {metric_names[m], a, b, d};
			double x = metric(s[0], m), y = metric(s[1], m);

			metric_text(&o, s[0], m, a, sizeof(a));
			metric_text(&o, s[1], m, b, sizeof(b));
			diff_text(x, y, d, sizeof(d));
			tool_md_row(&o.b, cells, 4);
			if (metrics == NULL ||
			    json_array_append_new(
				    metrics,
				    json_pack("{s:s, s:f, s:f, s:o}", "metric",
					      metric_names[m], "a", x, "b", y,
					      "diff_pct",
					      num_or_null(diff_pct(x, y)))) !=
				    0)
				buf_set_error(&o.b, STATUS_NOMEM);
		}
		out_puts(&o, "(Avg Latency: mean trace duration; Diff: B "
			     "against A)\n");
		keys = key_differences(&o, ss);
		sc = json_pack("{s:o, s:[o, o], s:o, s:o}", "time_range",
			       tool_range_json(&tr), "sessions",
			       summary_json(&o, s[0], ids[0]),
			       summary_json(&o, s[1], ids[1]), "metrics",
			       metrics != NULL ? metrics : json_array(),
			       "key_differences",
			       keys != NULL ? keys : json_array());
		rc = finish(&o, sc, result);
	}
out:
	pg_release(c);
	genai_session_free(s[0]);
	genai_session_free(s[1]);
	json_decref(missing);
	out_free(&o);
	return tool_done(rc, result);
}

const struct tool_handler genai_tool_handlers[] = {
	{"get_session", get_session},
	{"analyze_genai", analyze_genai},
	{"compare_sessions", compare_sessions},
	{NULL, NULL},
};

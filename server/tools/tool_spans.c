/*
 * tool_spans.c - the "spans" tool family: query_spans, a filtered span
 * table over both sources with an exact total and cursor pages (queries in
 * lib/telemetry/spanlist), and get_trace, one trace merged from both sources
 * (lib/telemetry/merge) and drawn as a tree with repeated siblings folded
 * (lib/telemetry/render), then its bottlenecks and its error chain.  Service and
 * span names, status messages and attribute values pass through the
 * configured redaction as soon as they are read, so text and structured
 * content show the same redacted strings.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/redact.h"
#include "base/timerange.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/spanquery.h"
#include "telemetry/spanlist.h"
#include "tools/tool.h"
#include "tools/tool_common.h"
#include "tools/tool_detail.h"
#include "tools/tool_spans.h"
#include "tools/tool_spans_span.h"

/* Bytes of the whole answer ([tools] max_answer_bytes) query_spans keeps
 * for what is not a row: the text's closing lines escaped as JSON, the
 * total, the cursor, the range and the result around them. */
#define SPANS_CLOSE_ROOM 1024
/* Text kept back from the budget for what follows a table or tree: the
 * "N more: call again with cursor ..." line (a cursor is at most
 * SPANLIST_CURSOR_MAX) and notes. */
#define TAIL_ROOM (SPANLIST_CURSOR_MAX + 200)
/* a status message in a tree line: enough to say what failed */
#define MESSAGE_MAX 120
/* services named in get_trace's summary line; the rest are counted */
#define SERVICES_NAMED 8
#define BOTTLENECKS    5
/* an error chain longer than CHAIN_HEAD + CHAIN_TAIL hops shows both ends */
#define CHAIN_HEAD 3
#define CHAIN_TAIL 12

static const char bad_cursor[] =
	"cursor is invalid or expired: call again without cursor";

/* s as a JSON string (new reference), JSON null for NULL s; NULL on
 * ENOMEM. */
static json_t *
opt_string(const char *s)
{
	json_t *v;

	if (s == NULL)
		return json_null();
	v = json_string(s);
	if (v == NULL) /* not UTF-8: the store's encoding is not UTF8 */
		v = json_string("(not valid UTF-8)");
	return v;
}

/* ---- query_spans -------------------------------------------------------- */

struct spans_args {
	struct spanlist_filter f;
	struct spanlist_cursor cur;
	bool has_cursor;
	size_t limit;
};

/* The range of the spans, and the page: the cursor's, which holds the
 * range of the first page. */
static int
spans_args_window(const json_t *args, int64_t now, struct spans_args *a,
		  char *err, size_t len)
{
	const char *cursor = tool_arg_str(args, "cursor");
	struct timerange tr;

	/* one trace or session needs no range unless one is asked for */
	if (tool_time_range_given(args) ||
	    (!a->f.has_trace_id && a->f.session_id == NULL)) {
		if (tool_time_range(args, "1h", TOOL_RANGE_FROM_TO, now, &tr,
				    err, len) != STATUS_OK)
			return STATUS_INVALID;
		a->f.has_range = true;
		a->f.from_ms = tr.from_ms;
		a->f.to_ms = tr.to_ms;
	}
	if (cursor != NULL) {
		/* the first page's range holds for every page: "last 1h"
		 * must not slide between them */
		if (spanlist_cursor_decode(cursor, &a->cur) != STATUS_OK ||
		    a->cur.order != a->f.order ||
		    a->cur.filter_hash != spanlist_filter_hash(&a->f)) {
			snprintf(err, len, "%s", bad_cursor);
			return STATUS_INVALID;
		}
		a->has_cursor = true;
		a->f.has_range = a->cur.has_range;
		a->f.from_ms = a->cur.from_ms;
		a->f.to_ms = a->cur.to_ms;
	}
	return STATUS_OK;
}

/* Fills a from args (err gets a message for the model when bad). */
static int
spans_args_parse(const json_t *args, int64_t now, struct spans_args *a,
		 char *err, size_t len)
{
	const char *tid = tool_arg_str(args, "trace_id");
	const char *status = tool_arg_str(args, "status");
	const char *order = tool_arg_str(args, "order_by");
	const json_t *md = json_object_get(args, "min_duration_ms");
	const json_t *lim = json_object_get(args, "limit");

	memset(a, 0, sizeof(*a));
	a->f.service = tool_arg_str(args, "service_name");
	a->f.session_id = tool_arg_str(args, "session_id");
	a->f.min_duration_ns = -1;
	a->limit = 20;
	if (tid != NULL) {
		if (tool_parse_trace_id(tid, a->f.trace_id) != STATUS_OK) {
			snprintf(err, len,
				 "trace_id must be 32 hex digits, not all "
				 "zero (e.g. "
				 "\"4bf92f3577b34da6a3ce929d0e0e4736\"), got "
				 "\"%.40s\"",
				 tid);
			return STATUS_INVALID;
		}
		a->f.has_trace_id = true;
	}
	if (status != NULL) {
		if (strcmp(status, "ok") == 0) {
			a->f.status = SPANLIST_STATUS_OK;
		} else if (strcmp(status, "error") == 0) {
			a->f.status = SPANLIST_STATUS_ERROR;
		} else if (strcmp(status, "client_error") == 0) {
			a->f.status = SPANLIST_STATUS_CLIENT_ERROR;
		} else {
			snprintf(err, len,
				 "status must be \"ok\", \"error\" or "
				 "\"client_error\"");
			return STATUS_INVALID;
		}
	}
	if (order != NULL) {
		if (strcmp(order, "start") == 0) {
			a->f.order = SPANLIST_ORDER_START;
		} else if (strcmp(order, "duration") == 0) {
			a->f.order = SPANLIST_ORDER_DURATION;
		} else {
			snprintf(err, len,
				 "order_by must be \"start\" or \"duration\"");
			return STATUS_INVALID;
		}
	}
	if (md != NULL) {
		double v = json_number_value(md);

		/* a day in ms: no span worth listing is longer */
		if (!json_is_number(md) || !(v >= 0) || v > 86400000.0) {
			snprintf(err, len,
				 "min_duration_ms must be a number of "
				 "milliseconds from 0 to 86400000");
			return STATUS_INVALID;
		}
		a->f.min_duration_ns = (int64_t)(v * 1e6);
	}
	if (lim != NULL) {
		if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > SPANLIST_MAX_LIMIT) {
			snprintf(err, len,
				 "limit must be an integer from 1 to %d",
				 SPANLIST_MAX_LIMIT);
			return STATUS_INVALID;
		}
		a->limit = (size_t)json_integer_value(lim);
	}
	return spans_args_window(args, now, a, err, len);
}

/* "service "a", session "s", status error, at least 5ms; last 1h; newest
 * first": short (the strings are arguments of at most 255 characters), b
 * has room for it */
static void
describe(struct buf *b, const struct spans_args *a, int64_t now)
{
	const struct spanlist_filter *f = &a->f;
	const char *sep = "";

	buf_puts(b, "Filters: ");
	if (f->service != NULL) {
		buf_printf(b, "service \"%s\"", f->service);
		sep = ", ";
	}
	if (f->has_trace_id) {
		char tid[33];

		hex_encode(f->trace_id, 16, tid);
		buf_printf(b, "%strace %s", sep, tid);
		sep = ", ";
	}
	if (f->session_id != NULL) {
		buf_printf(b, "%ssession \"%s\"", sep, f->session_id);
		sep = ", ";
	}
	if (f->status != SPANLIST_STATUS_ANY) {
		buf_printf(b, "%sstatus %s", sep,
			   f->status == SPANLIST_STATUS_ERROR ? "error"
			   : f->status == SPANLIST_STATUS_CLIENT_ERROR
				   ? "client error"
				   : "ok (neither error nor client error)");
		sep = ", ";
	}
	if (f->min_duration_ns >= 0) {
		char least[24];

		render_ms((double)f->min_duration_ns / 1e6, least,
			  sizeof(least));
		buf_printf(b, "%sat least %s", sep, least);
		sep = ", ";
	}
	if (sep[0] == '\0')
		buf_puts(b, "none");
	if (f->has_range) {
		struct timerange tr = {f->from_ms, f->to_ms};
		char rdesc[TIMERANGE_DESCRIBE_MAX];

		timerange_describe(&tr, now, rdesc, sizeof(rdesc));
		buf_printf(b, "; time: %s", rdesc);
	} else {
		buf_puts(b, "; time: any");
	}
	buf_printf(b, "; order: %s\n",
		   f->order == SPANLIST_ORDER_DURATION ? "longest first"
						       : "newest first");
}

/* One span of the page as structured content. */
static const char *const outcome_names[] = {"ok", "error", "client_error"};

static json_t *
span_json(const struct spanlist_span *s)
{
	char tid[33], sid[17], pid[17], start[TIMERANGE_FORMAT_MAX];
	json_t *o, *g = NULL;

	hex_encode(s->key.trace_id, 16, tid);
	hex_encode(s->key.span_id, 8, sid);
	hex_encode(s->parent_span_id, 8, pid);
	timerange_format((int64_t)(s->start_ns / 1000000), start,
			 sizeof(start));
	if (s->genai) {
		g = json_pack(
			"{s:o, s:o, s:o, s:o, s:o, s:o}", "provider",
			opt_string(s->provider), "operation",
			opt_string(s->operation), "model", opt_string(s->model),
			"input_tokens",
			s->input_tokens >= 0 ? json_integer(s->input_tokens)
					     : json_null(),
			"output_tokens",
			s->output_tokens >= 0 ? json_integer(s->output_tokens)
					      : json_null(),
			"cost_usd",
			s->priced ? json_real(s->cost_usd) : json_null());
		if (g == NULL)
			return NULL;
	}
	o = json_pack("{s:s, s:s, s:s?, s:s, s:[], s:s, s:s, s:s, s:f, s:s, "
		      "s:o, s:o, s:o}",
		      "trace_id", tid, "span_id", sid, "parent_span_id",
		      s->has_parent ? pid : NULL, "source",
		      s->key.source == SPANLIST_SOURCE_EBPF ? "ebpf" : "otlp",
		      "also_seen_by", "service", s->service, "name", s->name,
		      "start", start, "duration_ms",
		      (double)s->key.duration_ns / 1e6, "status",
		      otlp_status_name(s->status), "status_message",
		      opt_string(s->status_message), "session_id",
		      opt_string(s->session_id), "gen_ai",
		      g != NULL ? g : json_null());
	if (o != NULL &&
	    (json_object_set_new(o, "outcome",
				 json_string(outcome_names[s->outcome])) ||
	     json_object_set_new(o, "http_status_code",
				 s->http_status >= 0
					 ? json_integer(s->http_status)
					 : json_null()) ||
	     json_object_set_new(o, "grpc_status_code",
				 s->grpc_code >= 0 ? json_integer(s->grpc_code)
						   : json_null()))) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL && s->also_ebpf &&
	    json_array_append_new(json_object_get(o, "also_seen_by"),
				  json_string("ebpf")) != 0) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

static void
format_tokens(int64_t v, char *out, size_t cap)
{
	if (v < 0)
		snprintf(out, cap, "–");
	else
		render_count((uint64_t)v, out, cap);
}

/* "error 503: card declined", "client error UNAUTHENTICATED", "ok": the
 * span's outcome (sextant_span_outcome) with its code and message. */
static void
span_outcome_text(const struct spanlist_span *s, const char *msg, char *out,
		  size_t cap)
{
	char code[48] = "";

	if (s->grpc_code > 0)
		snprintf(code, sizeof(code), " %s",
			 otlp_grpc_code_name(s->grpc_code));
	else if (s->http_status >= 400)
		snprintf(code, sizeof(code), " %d", s->http_status);
	snprintf(out, cap, "%s%s%s%s",
		 s->outcome == 1   ? "error"
		 : s->outcome == 2 ? "client error"
				   : "ok",
		 s->outcome != 0 ? code : "",
		 s->outcome != 0 && msg != NULL ? ": " : "",
		 s->outcome != 0 && msg != NULL ? msg : "");
}

/* The two table rows of span i: the span's, and its GenAI row (empty
 * when not a GenAI span). */
static int
span_rows(const struct spanlist_span *s, const json_t *o, struct buf *row,
	  struct buf *grow)
{
	char dur[24], cost[160], in[32], out[32], tokens[80], status[240],
		tid[9];
	const json_t *g = json_object_get(o, "gen_ai");
	const char *msg =
		json_string_value(json_object_get(o, "status_message"));
	const char *cells[6];
	int rc;

	render_ms((double)s->key.duration_ns / 1e6, dur, sizeof(dur));
	span_outcome_text(s, msg, status, sizeof(status));
	hex_encode(s->key.trace_id, 4, tid);
	cells[0] = json_string_value(json_object_get(o, "start"));
	cells[1] = tid;
	cells[2] = s->service;
	cells[3] = s->name;
	cells[4] = dur;
	cells[5] = status;
	if ((rc = render_md_row(row, cells, 6)) != STATUS_OK || !s->genai)
		return rc;
	{
		const char *model =
			json_string_value(json_object_get(g, "model"));

		if (s->priced)
			render_usd(s->cost_usd, cost, sizeof(cost));
		else if (model != NULL)
			snprintf(cost, sizeof(cost),
				 "unknown (model %s has no price)", model);
		else
			snprintf(cost, sizeof(cost),
				 "unknown (no model named)");
		format_tokens(s->input_tokens, in, sizeof(in));
		format_tokens(s->output_tokens, out, sizeof(out));
		snprintf(tokens, sizeof(tokens), "%s / %s", in, out);
		cells[0] = s->name;
		cells[1] = model != NULL ? model : "(none)";
		cells[2] = tokens;
		cells[3] = cost;
		return render_md_row(grow, cells, 4);
	}
}

/* One query_spans call across its phases; the handler frees it. */
struct list_call {
	struct call *call;
	int64_t now;
	size_t budget;
	struct spans_args a;
	char svc[256], svc_note[320]; /* service_name as resolved */
	struct tool_conns k;
	struct spanlist_page *page;
	int64_t total; /* spans that match, counted exactly */
	struct redact_kept own;
	/* per span of the page: its table row, its GenAI row, its object */
	struct buf *rows, *grows;
	json_t **made;
	size_t shown, ngenai; /* rows that fit, GenAI spans among them */
	uint64_t remaining;   /* spans after those shown */
	bool more;	      /* then next is the cursor for them */
	char next[SPANLIST_CURSOR_MAX];
	struct buf b, intro; /* the answer, the lines above its table */
};

/* Fetch: the page and the exact count at once, on two connections when
 * there are two; *result is the answer when the store fails. */
static int
list_fetch(struct list_call *x, json_t **result)
{
	const struct spans_args *a = &x->a;
	struct tool_conns *k = &x->k;
	struct pg_error pe;
	int rc;

	if (tool_conns_get(x->call, k) != STATUS_OK) {
		*result = tool_result_error("%s", k->why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	(void)call_progress(x->call, 1, 2, "querying spans");
	rc = spanlist_page_send(k->c[0], &a->f,
				a->has_cursor ? &a->cur.after : NULL, a->limit,
				&pe);
	if (rc == STATUS_OK && k->c[1] != NULL)
		rc = spanlist_count_send(k->c[1], &a->f, &pe);
	if (rc == STATUS_OK)
		rc = spanlist_page_recv(k->c[0], a->limit, &x->page, &pe);
	if (rc == STATUS_OK && k->c[1] == NULL)
		rc = spanlist_count_send(k->c[0], &a->f, &pe);
	if (rc == STATUS_OK)
		rc = spanlist_count_recv(tool_conns_for(k, 1), &x->total, &pe);
	if (rc == STATUS_CANCELLED || call_cancelled(x->call))
		return STATUS_CANCELLED;
	if (rc == STATUS_NOMEM)
		return rc;
	if (rc != STATUS_OK) {
		*result = tool_result_error(
			"telemetry store unavailable: %s",
			pe.client[0] != '\0' ? pe.client : "the query failed");
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* Rows: every span of the page redacted (what the spans say goes out so,
 * in text and structure), then drawn and made once. */
static int
list_rows(struct list_call *x)
{
	const struct redact *r = call_redact(x->call);
	struct spanlist_page *page = x->page;

	for (size_t i = 0; i < page->n; i++) {
		struct spanlist_span *s = &page->spans[i];

		s->service = redact_keep(&x->own, r, s->service);
		s->name = redact_keep(&x->own, r, s->name);
		s->status_message = redact_keep(&x->own, r, s->status_message);
		s->session_id = redact_keep(&x->own, r, s->session_id);
		s->provider = redact_keep(&x->own, r, s->provider);
		s->operation = redact_keep(&x->own, r, s->operation);
		s->model = redact_keep(&x->own, r, s->model);
	}
	x->rows = calloc(page->n + 1, sizeof(*x->rows));
	x->grows = calloc(page->n + 1, sizeof(*x->grows));
	x->made = calloc(page->n + 1, sizeof(*x->made));
	if (x->rows == NULL || x->grows == NULL || x->made == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < page->n; i++) {
		buf_init(&x->rows[i], 4096);
		buf_init(&x->grows[i], 4096);
		if ((x->made[i] = span_json(&page->spans[i])) == NULL ||
		    span_rows(&page->spans[i], x->made[i], &x->rows[i],
			      &x->grows[i]) != STATUS_OK)
			return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* Fit: as many rows as the text's budget and the whole answer's
 * (tool_answer_budget: the text, each row's JSON and SPANS_CLOSE_ROOM)
 * hold, one at least, and a cursor for the rest: text, structured
 * content and cursor agree on the rows shown. */
static int
list_fit(struct list_call *x)
{
	const struct spans_args *a = &x->a;
	const struct spanlist_page *page = x->page;
	size_t used, whole, answer = tool_answer_budget(x->call);
	int rc;

	if (x->svc_note[0] != '\0')
		buf_printf(&x->intro, "%s\n", x->svc_note);
	describe(&x->intro, a, x->now);
	if (a->cur.seen > 0)
		buf_printf(&x->intro, "Rows from #%" PRIu64 " on.\n",
			   a->cur.seen + 1);
	if ((rc = buf_error(&x->intro)) != STATUS_OK)
		return rc;
	/* header (~60), intro, two table heads with rules (~130), the tail */
	used = 64 + x->intro.len + 140 + TAIL_ROOM;
	whole = used + SPANS_CLOSE_ROOM;
	for (x->shown = 0; x->shown < page->n; x->shown++) {
		const struct buf *r = &x->rows[x->shown],
				 *g = &x->grows[x->shown];
		size_t add = r->len + g->len;
		size_t wadd = tool_json_text_len(r->data, r->len) +
			      tool_json_text_len(g->data, g->len) +
			      tool_json_len(x->made[x->shown]) + 1;

		if (x->shown > 0 &&
		    (used + add > x->budget || whole + wadd > answer))
			break;
		used += add;
		whole += wadd;
	}
	x->more = page->more || x->shown < page->n;
	for (size_t i = 0; i < x->shown; i++)
		x->ngenai += page->spans[i].genai;
	if ((uint64_t)x->total > a->cur.seen + x->shown)
		x->remaining = (uint64_t)x->total - a->cur.seen - x->shown;
	if (x->more) {
		struct spanlist_cursor cur = {
			.filter_hash = spanlist_filter_hash(&a->f),
			.order = a->f.order,
			.has_range = a->f.has_range,
			.from_ms = a->f.from_ms,
			.to_ms = a->f.to_ms,
			.seen = a->cur.seen + x->shown,
			.after = page->spans[x->shown - 1].key,
		};

		rc = spanlist_cursor_encode(&cur, x->next, sizeof(x->next));
		if (rc != STATUS_OK)
			return rc;
		if (x->remaining == 0) /* rows came in since the count */
			x->remaining = 1;
	}
	return STATUS_OK;
}

/* Text: the heading, the table (or why there is none), the GenAI table,
 * and the cursor.  The rows are fitted to the budget (list_fit) and b
 * holds twice as much: the one check is the result's. */
static void
list_text(struct list_call *x)
{
	static const char *const head[] = {"Time", "Trace",    "Service",
					   "Name", "Duration", "Status"};
	static const char *const ghead[] = {"Span", "Model", "Tokens (in/out)",
					    "Cost"};
	struct buf *b = &x->b;
	char count[32], total[32];

	render_count(x->shown, count, sizeof(count));
	render_count((uint64_t)x->total, total, sizeof(total));
	buf_printf(b, "## Spans (%s of %s total)\n", count, total);
	buf_append(b, x->intro.data, x->intro.len);
	if (x->shown == 0 && x->a.cur.seen > 0) {
		buf_printf(b,
			   "\nNo more spans: the %" PRIu64
			   " before were all.\n",
			   x->a.cur.seen);
	} else if (x->shown == 0) {
		char why[512];

		buf_puts(b, "\nNo spans match these filters");
		if (x->a.f.service != NULL &&
		    tool_unknown_service(x->k.c[0], x->a.f.service,
					 "list_services", why, sizeof(why)))
			buf_printf(b, ": %s", why);
		if (b->len > 0 && b->data[b->len - 1] != '?')
			buf_puts(b, ".");
		buf_puts(b, "\n");
	} else {
		buf_puts(b, "\n");
		tool_md_row(b, head, 6);
		tool_md_rule(b, 6);
		for (size_t i = 0; i < x->shown; i++)
			buf_append(b, x->rows[i].data, x->rows[i].len);
	}
	if (x->ngenai > 0) {
		buf_printf(b, "\n### GenAI Spans (%zu of %zu)\n\n", x->ngenai,
			   x->shown);
		tool_md_row(b, ghead, 4);
		tool_md_rule(b, 4);
		for (size_t i = 0; i < x->shown; i++)
			buf_append(b, x->grows[i].data, x->grows[i].len);
	}
	if (x->more) {
		char n[32];

		render_count(x->remaining, n, sizeof(n));
		buf_printf(b,
			   "\n%s more: call again with cursor \"%s\" (same "
			   "arguments).\n",
			   n, x->next);
	}
}

/* Structured content: the spans shown, the total, the cursor, and the
 * range when there is one. */
static int
list_result(struct list_call *x, json_t **result)
{
	json_t *list = json_array(), *sc;

	if (list == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < x->shown; i++)
		if (json_array_append(list, x->made[i]) != 0) {
			json_decref(list);
			return STATUS_NOMEM;
		}
	sc = json_pack("{s:o, s:I, s:s?}", "spans", list, "total",
		       (json_int_t)x->total, "next_cursor",
		       x->more ? x->next : NULL);
	if (sc == NULL)
		return STATUS_NOMEM;
	if (x->a.f.has_range) {
		struct timerange tr = {x->a.f.from_ms, x->a.f.to_ms};

		json_object_set_new(sc, "time_range", tool_range_json(&tr));
	}
	return tool_result_buf(&x->b, sc, result);
}

static int
query_spans(struct call *call, const json_t *args, json_t **result)
{
	struct list_call x = {.call = call,
			      .now = clock_wall_ms(),
			      .budget = call_text_budget(call)};
	char err[512];
	int rc = STATUS_OK;

	buf_init(&x.b, 2 * x.budget + 4096);
	buf_init(&x.intro, 4096);
	*result = NULL;
	if (spans_args_parse(args, x.now, &x.a, err, sizeof(err)) !=
	    STATUS_OK) {
		*result = tool_result_error("%s", err);
		goto out;
	}
	x.a.f.service =
		tool_service_name(call, x.a.f.service, x.svc, sizeof(x.svc),
				  x.svc_note, sizeof(x.svc_note));
	if ((rc = list_fetch(&x, result)) != STATUS_OK || *result != NULL ||
	    (rc = list_rows(&x)) != STATUS_OK ||
	    (rc = list_fit(&x)) != STATUS_OK)
		goto out;
	list_text(&x);
	rc = list_result(&x, result);
out:
	tool_conns_put(&x.k);
	for (size_t i = 0; x.page != NULL && i < x.page->n; i++) {
		if (x.rows != NULL)
			buf_free(&x.rows[i]);
		if (x.grows != NULL)
			buf_free(&x.grows[i]);
		if (x.made != NULL)
			json_decref(x.made[i]);
	}
	free(x.rows);
	free(x.grows);
	free(x.made);
	spanlist_page_free(x.page);
	redact_kept_free(&x.own);
	buf_free(&x.b);
	buf_free(&x.intro);
	return tool_done(rc, result);
}

/* ---- get_trace ---------------------------------------------------------- */

struct trace_ctx {
	const struct merge_trace *t;
	/* per node: never folded (see mark_kept) */
	bool *keep;
	/* the details of the error and slow spans (borrowed) */
	const struct tool_details *det;
};

/* " ERROR 402: card declined": the code when the details give one */
static int
error_text(struct buf *b, const struct spanquery_span *s,
	   const struct spanquery_detail *x)
{
	char code[48];
	int rc;

	tool_detail_code(x, code, sizeof(code));
	rc = buf_printf(b, " ERROR%s", code);
	if (rc == STATUS_OK && s->status_message != NULL) {
		rc = buf_puts(b, ": ");
		if (rc == STATUS_OK)
			rc = tool_put_line(b, s->status_message, MESSAGE_MAX);
	}
	return rc;
}

/* "[OTLP] payments: POST /charge (23ms) ERROR 402: declined ← SLOW
 * [server, HTTP 402, exception CardError: no funds]": the details last,
 * only on error and slow spans; " (async)" where work the request did not
 * wait for begins */
static int
trace_label(struct buf *b, const struct merge_node *node, void *arg)
{
	const struct spanquery_span *s = tool_span_row(node);
	const struct trace_ctx *ctx = arg;
	const struct spanquery_detail *x = tool_details_of(ctx->det, node);
	int rc = tool_span_ref(b, node);

	if (rc == STATUS_OK && node->also_seen_by != 0)
		rc = buf_puts(b, " (also seen by eBPF)");
	if (rc == STATUS_OK && s->status == 2)
		rc = error_text(b, s, x);
	if (rc == STATUS_OK)
		rc = tool_span_marks(b, node, x);
	return rc;
}

static size_t
errors_in(const struct merge_trace *t, size_t from, size_t to)
{
	size_t n = 0;

	for (size_t i = from; i < to; i++)
		n += tool_span_row(&t->nodes[i])->status == 2;
	return n;
}

/* "× 120 [OTLP] stock: SELECT stock (min 0.9ms, avg 2.1ms, max 9.8ms)" */
static int
trace_run_label(struct buf *b, const struct merge_trace *t,
		const struct render_fold_line *l, void *arg)
{
	const struct merge_node *node = &t->nodes[l->node];
	char lo[24], avg[24], hi[24];
	size_t errors = errors_in(t, l->node, l->end);
	size_t nested = l->end - l->node - l->count;
	int rc;

	(void)arg;
	render_ms((double)l->min_ns / 1e6, lo, sizeof(lo));
	render_ms((double)l->sum_ns / (double)l->count / 1e6, avg, sizeof(avg));
	render_ms((double)l->max_ns / 1e6, hi, sizeof(hi));
	rc = buf_printf(b, "× %zu ", l->count);
	if (rc == STATUS_OK)
		rc = tool_span_name(b, node);
	if (rc == STATUS_OK)
		rc = buf_printf(b, " (min %s, avg %s, max %s)", lo, avg, hi);
	if (rc == STATUS_OK && nested > 0) {
		char n[32];

		render_count(nested, n, sizeof(n));
		rc = buf_printf(b, " +%s nested span%s", n,
				nested == 1 ? "" : "s");
	}
	if (rc == STATUS_OK && errors > 0)
		rc = buf_printf(b, " ERROR in %zu span%s", errors,
				errors == 1 ? "" : "s");
	return rc;
}

/*
 * Siblings are the same call: same source, service and name.  A span
 * with an error at or below it, or marked slow, is no one's twin: runs
 * break around it and it keeps its own line (and its subtree its lines),
 * so folding never hides what the answer is about.
 */
static bool
same_call(const struct merge_node *a, const struct merge_node *b, void *arg)
{
	const struct trace_ctx *x = arg;
	const struct spanquery_span *p = tool_span_row(a),
				    *q = tool_span_row(b);

	return !x->keep[a - x->t->nodes] && !x->keep[b - x->t->nodes] &&
	       a->span->source == b->span->source &&
	       strcmp(p->service, q->service) == 0 &&
	       strcmp(p->name, q->name) == 0;
}

/* ctx->keep for t: errors carried up to every ancestor, slow spans,
 * and spans with a 1/KEEP_SHARE of the trace's time or more to
 * themselves (at most KEEP_SHARE of them): the outlier of a loop. */
#define KEEP_SHARE 10
static int
mark_kept(struct trace_ctx *ctx, const struct merge_trace *t)
{
	bool *err = calloc(t->n_nodes + 1, sizeof(*err));
	uint64_t dur = t->end_ns - t->start_ns;

	ctx->t = t;
	ctx->keep = calloc(t->n_nodes + 1, sizeof(*ctx->keep));
	if (err == NULL || ctx->keep == NULL) {
		free(err);
		return STATUS_NOMEM;
	}
	/* children come after their parent: one backward pass */
	for (size_t i = t->n_nodes; i-- > 0;) {
		size_t p = t->nodes[i].parent;

		err[i] |= tool_span_row(&t->nodes[i])->status == 2;
		if (err[i] && p != MERGE_NONE && p < i)
			err[p] = true;
		ctx->keep[i] = err[i] || t->nodes[i].slow ||
			       (t->nodes[i].self_ns > 0 &&
				t->nodes[i].self_ns >= dur / KEEP_SHARE);
	}
	free(err);
	return STATUS_OK;
}

/* Sets o's "details" to node's (nothing when it has none); false on
 * ENOMEM. */
static bool
set_details(json_t *o, const struct tool_details *det,
	    const struct merge_node *node)
{
	const struct spanquery_detail *x = tool_details_of(det, node);

	return x == NULL || json_object_set_new(o, "details",
						tool_detail_json(node, x)) == 0;
}

static json_t *
node_json(const struct merge_trace *t, size_t i, const struct tool_details *det)
{
	const struct merge_node *node = &t->nodes[i];
	const struct spanquery_span *s = tool_span_row(node);
	char sid[17], pid[17], start[TIMERANGE_FORMAT_MAX];
	json_t *o;

	hex_encode(s->span_id, 8, sid);
	hex_encode(s->parent_span_id, 8, pid);
	timerange_format((int64_t)(s->start_ns / 1000000), start,
			 sizeof(start));
	o = json_pack(
		"{s:s, s:s?, s:I, s:s, s:s, s:s, s:s, s:f, s:f, "
		"s:s, s:o, s:b, s:b, s:b}",
		"span_id", sid, "parent_span_id", s->has_parent ? pid : NULL,
		"depth", (json_int_t)node->depth, "service", s->service, "name",
		s->name, "source",
		tool_sources[tool_source_of_merge(node->span->source)].name,
		"start", start, "duration_ms", (double)s->duration_ns / 1e6,
		"self_ms", (double)node->self_ns / 1e6, "status",
		otlp_status_name(s->status), "status_message",
		opt_string(s->status == 2 ? s->status_message : NULL), "slow",
		node->slow, "critical", node->critical, "async", node->async);
	if (o != NULL && !set_details(o, det, node)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* A line of the drawn tree: the span, or the run it stands for. */
static json_t *
line_json(const struct merge_trace *t, const struct render_fold_line *l,
	  const struct tool_details *det)
{
	json_t *o = node_json(t, l->node, det);

	if (o == NULL)
		return NULL;
	if (json_object_set_new(o, "repeat",
				json_integer((json_int_t)l->count)))
		goto fail;
	if (l->count > 1 &&
	    (json_object_set_new(o, "min_ms",
				 json_real((double)l->min_ns / 1e6)) ||
	     json_object_set_new(
		     o, "avg_ms",
		     json_real((double)l->sum_ns / (double)l->count / 1e6)) ||
	     json_object_set_new(o, "max_ms",
				 json_real((double)l->max_ns / 1e6)) ||
	     json_object_set_new(
		     o, "spans",
		     json_integer((json_int_t)(l->end - l->node))) ||
	     json_object_set_new(
		     o, "error_spans",
		     json_integer((json_int_t)errors_in(t, l->node, l->end)))))
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

static int
by_self_desc(const void *a, const void *b)
{
	const struct merge_node *x = *(const struct merge_node *const *)a;
	const struct merge_node *y = *(const struct merge_node *const *)b;

	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * "Background: [OTLP] notifications: POST (223ms), after the request
 * ended (async, via [OTLP] notifications: orders process (230ms))".
 */
static int
background_line(struct buf *b, const struct merge_trace *t, size_t bg)
{
	const struct merge_node *node = &t->nodes[bg];
	const struct merge_span *req = t->nodes[t->request].span;
	size_t from = merge_async_start(t, bg);
	int rc = buf_puts(b, "Background: ");

	if (rc == STATUS_OK)
		rc = tool_span_ref(b, node);
	if (rc == STATUS_OK)
		rc = buf_puts(b, node->span->start_ns >=
						 req->start_ns + t->request_ns
					 ? ", after the request ended (async"
					 : ", beside the request (async");
	if (rc == STATUS_OK && from != bg) {
		rc = buf_puts(b, ", via ");
		if (rc == STATUS_OK)
			rc = tool_span_ref(b, &t->nodes[from]);
	}
	if (rc == STATUS_OK)
		rc = buf_puts(b, ")\n");
	return rc;
}

/*
 * "### Bottlenecks": the largest self times on the request's critical path
 * (top BOTTLENECKS), each a share of the request's duration; then the
 * background work slower than the request, which it did not wait for.
 */
static int
bottlenecks(struct buf *b, const struct merge_trace *t, json_t *out)
{
	const struct merge_node *top[BOTTLENECKS];
	uint64_t dur = t->request_ns;
	size_t n = 0, bg = merge_background(t);
	int rc;

	/* a running top-k: BOTTLENECKS is small */
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct merge_node *node = &t->nodes[i];
		size_t k;

		if (node->self_ns == 0 || !node->critical)
			continue;
		if (n == BOTTLENECKS &&
		    by_self_desc(&node, &top[BOTTLENECKS - 1]) > 0)
			continue;
		for (k = n < BOTTLENECKS ? n : BOTTLENECKS - 1;
		     k > 0 && by_self_desc(&node, &top[k - 1]) < 0; k--)
			top[k] = top[k - 1];
		top[k] = node;
		if (n < BOTTLENECKS)
			n++;
	}
	rc = buf_puts(b, "\n### Bottlenecks\n");
	if (rc == STATUS_OK && n == 0)
		rc = buf_puts(b, "No span on the critical path has time of its "
				 "own.\n");
	for (size_t i = 0; i < n && rc == STATUS_OK; i++) {
		const struct spanquery_span *s = tool_span_row(top[i]);
		double share =
			dur > 0 ? 100.0 * (double)top[i]->self_ns / (double)dur
				: 0;
		char self[24], sid[17], pct[24];

		render_ms((double)top[i]->self_ns / 1e6, self, sizeof(self));
		render_pct(top[i]->self_ns, dur, pct, sizeof(pct));
		hex_encode(s->span_id, 8, sid);
		rc = buf_printf(b, "%zu. ", i + 1);
		if (rc == STATUS_OK)
			rc = tool_span_ref(b, top[i]);
		if (rc == STATUS_OK)
			rc = buf_printf(b,
					": self time %s, %s of the "
					"request%s\n",
					self, pct,
					s->status == 2 ? ", ERROR" : "");
		if (rc == STATUS_OK &&
		    json_array_append_new(
			    out,
			    json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:b}",
				      "span_id", sid, "service", s->service,
				      "name", s->name, "self_ms",
				      (double)top[i]->self_ns / 1e6,
				      "duration_ms",
				      (double)s->duration_ns / 1e6, "share_pct",
				      share, "critical", top[i]->critical)) !=
			    0)
			rc = STATUS_NOMEM;
	}
	if (rc == STATUS_OK && bg != MERGE_NONE)
		rc = background_line(b, t, bg);
	return rc;
}

/* "### Error chain": root to the deepest error span (the first in tree
 * order among equally deep ones). */
static int
error_chain(struct buf *b, const struct merge_trace *t, size_t n_errors,
	    size_t deepest, const struct tool_details *det, json_t *out)
{
	size_t hops = 0, *path = NULL, i;
	int rc;

	rc = buf_puts(b, "\n### Error chain\n");
	if (rc != STATUS_OK)
		return rc;
	if (deepest == MERGE_NONE)
		return buf_puts(b, "No error spans.\n");
	for (i = deepest; i != MERGE_NONE; i = t->nodes[i].parent)
		hops++;
	path = malloc(hops * sizeof(*path));
	if (path == NULL)
		return STATUS_NOMEM;
	i = deepest;
	for (size_t h = hops; h-- > 0; i = t->nodes[i].parent)
		path[h] = i;
	rc = buf_printf(b,
			"%zu error span%s; the deepest, %zu level%s below "
			"its root:\n",
			n_errors, n_errors == 1 ? "" : "s", hops - 1,
			hops - 1 == 1 ? "" : "s");
	for (size_t h = 0; h < hops && rc == STATUS_OK; h++) {
		const struct merge_node *node = &t->nodes[path[h]];
		const struct spanquery_span *s = tool_span_row(node);
		const struct spanquery_detail *x = tool_details_of(det, node);
		char sid[17];
		json_t *msg, *hop;

		hex_encode(s->span_id, 8, sid);
		msg = opt_string(s->status == 2 ? s->status_message : NULL);
		hop = msg == NULL
			      ? NULL
			      : json_pack("{s:s, s:s, s:s, s:f, s:s, s:o}",
					  "span_id", sid, "service", s->service,
					  "name", s->name, "duration_ms",
					  (double)s->duration_ns / 1e6,
					  "status", otlp_status_name(s->status),
					  "status_message", msg);
		if (hop == NULL || !set_details(hop, det, node) ||
		    json_array_append_new(out, hop) != 0) {
			json_decref(hop);
			rc = STATUS_NOMEM;
			break;
		}
		if (hops > CHAIN_HEAD + CHAIN_TAIL && h >= CHAIN_HEAD &&
		    h < hops - CHAIN_TAIL) {
			if (h == CHAIN_HEAD)
				rc = buf_printf(b,
						"   … %zu levels between …\n",
						hops - CHAIN_HEAD - CHAIN_TAIL);
			continue;
		}
		rc = buf_printf(b, "%zu. ", h + 1);
		if (rc == STATUS_OK)
			rc = tool_span_ref(b, node);
		if (rc == STATUS_OK)
			rc = s->status == 2
				     ? error_text(b, s, x)
				     : buf_printf(b, " %s",
						  otlp_status_name(s->status));
		/* the cause: what the deepest error span says of itself */
		if (rc == STATUS_OK && h == hops - 1)
			rc = tool_detail_text(b, node, x);
		if (rc == STATUS_OK)
			rc = buf_puts(b, "\n");
	}
	free(path);
	return rc;
}

/* The first bottleneck: the most self time on the critical path (the
 * earliest on a tie, as bottlenecks orders them); MERGE_NONE when no
 * span there has time of its own. */
static size_t
bottleneck_top(const struct merge_trace *t)
{
	size_t top = MERGE_NONE;

	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].critical && t->nodes[i].self_ns > 0 &&
		    (top == MERGE_NONE ||
		     t->nodes[i].self_ns > t->nodes[top].self_ns))
			top = i;
	return top;
}

/* a span's line of "### Key attributes": its attributes take this much */
#define KEY_ATTRS_MAX 700

/*
 * "### Key attributes": the attributes of the first bottleneck and of the
 * deepest error span (one line when they are the same span), as read
 * and redacted by tool_details, each line bounded.
 */
static int
key_attributes(struct buf *b, const struct merge_trace *t, size_t top,
	       size_t deepest, const struct tool_details *det, json_t *out)
{
	const size_t who[2] = {top, deepest};
	static const char *const role[2] = {"bottleneck", "deepest error"};
	int rc = buf_puts(b, "\n### Key attributes\n");

	if (rc == STATUS_OK && top == MERGE_NONE && deepest == MERGE_NONE)
		rc = buf_puts(b, "No bottleneck and no error span.\n");
	for (int k = 0; k < 2 && rc == STATUS_OK; k++) {
		const struct merge_node *node;
		const json_t *attrs;
		char sid[17];

		if (who[k] == MERGE_NONE || (k == 1 && deepest == top))
			continue;
		node = &t->nodes[who[k]];
		attrs = tool_details_attrs(det, node);
		hex_encode(tool_span_row(node)->span_id, 8, sid);
		rc = buf_printf(b, "%s, ",
				k == 0 && deepest == top
					? "Bottleneck and deepest error"
				: k == 0 ? "Bottleneck"
					 : "Deepest error");
		if (rc == STATUS_OK)
			rc = tool_span_ref(b, node);
		if (rc == STATUS_OK)
			rc = buf_puts(b, ": ");
		if (rc == STATUS_OK)
			rc = attrs != NULL ? tool_detail_attrs_text(
						     b, attrs, KEY_ATTRS_MAX)
					   : buf_puts(b, "(not read)");
		if (rc == STATUS_OK)
			rc = buf_puts(b, "\n");
		if (rc == STATUS_OK &&
		    json_array_append_new(
			    out, json_pack("{s:s, s:s, s:O?}", "role",
					   k == 0 && deepest == top
						   ? "bottleneck, deepest error"
						   : role[k],
					   "span_id", sid, "attributes",
					   (json_t *)attrs)) != 0)
			rc = STATUS_NOMEM;
	}
	return rc;
}

static int
by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "services: a, b, c (+4 more)" */
static int
services_line(struct buf *b, const struct merge_trace *t)
{
	const char **names = malloc((t->n_nodes + 1) * sizeof(*names));
	size_t distinct = 0;
	int rc = STATUS_OK;

	if (names == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < t->n_nodes; i++)
		names[i] = tool_span_row(&t->nodes[i])->service;
	qsort(names, t->n_nodes, sizeof(*names), by_string);
	for (size_t i = 0; i < t->n_nodes && rc == STATUS_OK; i++) {
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		if (distinct < SERVICES_NAMED) {
			rc = buf_puts(b, distinct == 0 ? "services: " : ", ");
			if (rc == STATUS_OK)
				rc = tool_put_line(b, names[i], 100);
		}
		distinct++;
	}
	if (rc == STATUS_OK && distinct > SERVICES_NAMED)
		rc = buf_printf(b, " (+%zu more)", distinct - SERVICES_NAMED);
	free(names);
	return rc;
}

/*
 * Appends the whole lines of src that fit in max bytes to b, and then
 * "(N more lines cut: the answer is full)" when some did not (the note
 * counted in max; nothing at all when not even it fits).
 */
#define CUT_NOTE_MAX 48
static void
append_lines(struct buf *b, const struct buf *src, size_t max)
{
	size_t used = 0, cut = 0;
	const char *p = src->data, *end = p + src->len;

	if (src->len <= max) {
		buf_append(b, src->data, src->len);
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len =
			nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		if (cut == 0 && used + len + CUT_NOTE_MAX <= max) {
			buf_append(b, p, len);
			used += len;
		} else {
			cut++;
		}
		p += len;
	}
	if (cut > 0 && used + CUT_NOTE_MAX <= max)
		buf_printf(b, "(%zu more line%s cut: the answer is full)\n",
			   cut, cut == 1 ? "" : "s");
}

/* One get_trace call across its phases; the handler frees it. */
struct get_call {
	struct call *call;
	size_t budget;
	uint8_t id[16];
	char tid[33];	    /* id in hex */
	const char *prefix; /* the id's first digits only, when given so */
	struct tool_conns k;
	struct spanquery_spans *sp[TOOL_SPAN_SRCS];
	char status[TOOL_SPAN_SRCS][TOOL_STATUS_MAX];
	struct redact_kept kept;
	struct merge_span *spans;
	struct merge_result *res;
	const struct merge_trace *t; /* the trace, once merged */
	struct trace_ctx ctx;
	struct render_fold *fold;
	size_t n_errors, shown; /* error spans; tree lines drawn */
	size_t top, deepest;	/* first bottleneck, deepest error span */
	struct tool_details det;
	json_t *lines, *bn, *chain, *keys;
	struct buf b, sect[2]; /* the answer; bottlenecks, error chain */
};

/* Fetch: the trace's spans from each source at once (its id first, when
 * only its first digits were given); *result is the answer when neither
 * source could be read.  What the spans say goes out redacted, in text
 * and structure, so they are redacted here. */
static int
get_fetch(struct get_call *x, json_t **result)
{
	const struct redact *r = call_redact(x->call);
	int rc;

	if (tool_conns_get(x->call, &x->k) != STATUS_OK) {
		*result = tool_result_error("%s", x->k.why);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	(void)call_progress(x->call, 1, 3, "fetching spans");
	rc = tool_trace_spans(x->call, "get_trace", &x->k, x->prefix, x->id,
			      x->sp, x->status, result);
	if (rc != STATUS_OK || *result != NULL)
		return rc;
	hex_encode(x->id, 16, x->tid);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		if (x->status[i][0] != '\0')
			continue;
		snprintf(x->status[i], sizeof(x->status[i]), "%s",
			 x->sp[i]->n > 0 ? "ok" : "no_data");
		for (size_t j = 0; j < x->sp[i]->n; j++) {
			struct spanquery_span *s = &x->sp[i]->spans[j];

			s->service = redact_keep(&x->kept, r, s->service);
			s->name = redact_keep(&x->kept, r, s->name);
			s->status_message =
				redact_keep(&x->kept, r, s->status_message);
		}
	}
	return STATUS_OK;
}

/* Merge: one tree of both sources' spans (x->res: none when no source
 * has the trace). */
static int
get_merge(struct get_call *x)
{
	/* every span read is a node: folding, not merge, keeps the answer
	 * short */
	struct merge_opts opts = {.max_spans = 2 * SPANQUERY_MAX_SPANS,
				  .max_traces = 1};
	size_t n = 0;

	(void)call_progress(x->call, 2, 3, "merging");
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		n += x->sp[i] != NULL ? x->sp[i]->n : 0;
	if ((x->spans = calloc(n + 1, sizeof(*x->spans))) == NULL)
		return STATUS_NOMEM;
	n = 0;
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		for (size_t j = 0; x->sp[i] != NULL && j < x->sp[i]->n; j++)
			tool_merge_span(&x->spans[n++], &x->sp[i]->spans[j],
					tool_sources[i].merge);
	return merge_traces(x->spans, n, &opts, &x->res);
}

/* The sources' statuses, structured (new reference; NULL on ENOMEM). */
static json_t *
get_sources(const struct get_call *x)
{
	return json_pack("{s:s, s:s}", tool_sources[TOOL_SRC_EBPF].name,
			 x->status[TOOL_SRC_EBPF],
			 tool_sources[TOOL_SRC_OTLP].name,
			 x->status[TOOL_SRC_OTLP]);
}

/* The answer when no source has the trace. */
static int
get_not_found(struct get_call *x, json_t **result)
{
	json_t *sc;

	buf_printf(&x->b, "no trace %s in the store", x->tid);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (strncmp(x->status[i], "unavailable", 11) == 0)
			buf_printf(&x->b, " (%s spans %s)",
				   tool_sources[i].label, x->status[i]);
	buf_puts(&x->b, "\n");
	sc = json_pack("{s:s, s:b, s:i, s:o, s:[], s:[], s:[]}", "trace_id",
		       x->tid, "found", false, "span_count", 0, "sources",
		       get_sources(x), "lines", "bottlenecks", "error_chain");
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_buf(&x->b, sc, result);
}

/* Folding: which spans keep their own line, and the runs of repeated
 * sibling calls the others fold into. */
static int
get_fold(struct get_call *x)
{
	int rc;

	x->t = &x->res->traces[0];
	if ((rc = mark_kept(&x->ctx, x->t)) != STATUS_OK ||
	    (rc = render_fold(x->t, same_call, &x->ctx, 0, &x->fold)) !=
		    STATUS_OK)
		return rc;
	x->n_errors = errors_in(x->t, 0, x->t->n_nodes);
	return STATUS_OK;
}

/* Details: of the first bottleneck and the deepest error span with their
 * attributes, of the slow and the other error spans without. */
static int
get_details(struct get_call *x)
{
	x->top = bottleneck_top(x->t);
	if (x->top != MERGE_NONE)
		(void)tool_details_want(&x->det, &x->t->nodes[x->top], true);
	x->deepest = tool_details_pick(&x->det, x->t, true, true);
	x->ctx.det = &x->det;
	return tool_details_fetch(x->call, tool_conns_for(&x->k, 0), &x->det);
}

/* Text: the "Sources:" line, spans per source (or why none). */
static void
get_sources_line(struct get_call *x)
{
	struct buf *b = &x->b;

	buf_puts(b, "Sources:");
	for (int i = TOOL_SPAN_SRCS; i-- > 0;) {
		const char *sep = i == TOOL_SPAN_SRCS - 1 ? "" : ";";
		char n[32];

		if (strncmp(x->status[i], "unavailable", 11) == 0) {
			buf_printf(b, "%s %s %s", sep, tool_sources[i].label,
				   x->status[i]);
			continue;
		}
		render_count(x->sp[i]->n, n, sizeof(n));
		buf_printf(b, "%s %s %s span%s", sep, tool_sources[i].label, n,
			   x->sp[i]->n == 1 ? "" : "s");
	}
	if (x->t->duplicates > 0)
		buf_printf(b, " (%zu seen by both, shown once as OTLP)",
			   x->t->duplicates);
	buf_puts(b, "\n");
}

/* Text: the head, what the trace is and where its spans came from. */
static int
get_head(struct get_call *x)
{
	const struct merge_trace *t = x->t;
	struct buf *b = &x->b;
	char dur[24], start[TIMERANGE_FORMAT_MAX], n[32];
	int rc;

	render_ms((double)(t->end_ns - t->start_ns) / 1e6, dur, sizeof(dur));
	render_count(t->span_count, n, sizeof(n));
	timerange_format((int64_t)(t->start_ns / 1000000), start,
			 sizeof(start));
	buf_printf(b, "## Trace %s\n%s, %s span%s, started %s; ", x->tid, dur,
		   n, t->span_count == 1 ? "" : "s", start);
	if (t->request_ns < t->end_ns - t->start_ns) {
		/* async work outlived the request: say how long it took */
		render_ms((double)t->request_ns / 1e6, dur, sizeof(dur));
		buf_printf(b, "the request took %s; ", dur);
	}
	if ((rc = services_line(b, t)) != STATUS_OK)
		return rc;
	buf_printf(b, "; %zu error span%s\n", x->n_errors,
		   x->n_errors == 1 ? "" : "s");
	get_sources_line(x);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (x->sp[i] != NULL && x->sp[i]->truncated)
			buf_printf(b,
				   "(%s: only the first %d spans were read)\n",
				   tool_sources[i].label, SPANQUERY_MAX_SPANS);
	if (x->fold->runs > 0) {
		render_count(x->fold->folded, n, sizeof(n));
		buf_printf(b,
			   "Folded: %s spans in %zu run%s of repeated sibling "
			   "calls, each one line \"× count ... (min, avg, "
			   "max)\".\n",
			   n, x->fold->runs, x->fold->runs == 1 ? "" : "s");
	}
	return STATUS_OK;
}

/*
 * Text: the tree, then the bottlenecks and the error chain.  The sections
 * below the tree are drawn first: the tree gets what they leave, but at
 * least half of what the head leaves; then they share the rest, cut at
 * whole lines if need be.
 */
static int
get_body(struct get_call *x)
{
	struct buf *b = &x->b, *sect = x->sect;
	size_t budget = x->budget, avail, room;
	int rc;

	x->bn = json_array();
	x->chain = json_array();
	x->keys = json_array();
	if (x->bn == NULL || x->chain == NULL || x->keys == NULL)
		return STATUS_NOMEM;
	/* the key attributes close the second section: the answer ends
	 * with them */
	if ((rc = bottlenecks(&sect[0], x->t, x->bn)) != STATUS_OK ||
	    (rc = error_chain(&sect[1], x->t, x->n_errors, x->deepest, &x->det,
			      x->chain)) != STATUS_OK ||
	    (rc = key_attributes(&sect[1], x->t, x->top, x->deepest, &x->det,
				 x->keys)) != STATUS_OK)
		return rc;
	avail = budget > b->len + 64 ? budget - b->len - 64 : 0;
	room = avail > sect[0].len + sect[1].len
		       ? avail - sect[0].len - sect[1].len
		       : 0;
	if (room < avail / 2)
		room = avail / 2;
	buf_puts(b, "\n```text\n");
	rc = render_trace_tree_folded(b, x->t, x->fold, trace_label,
				      trace_run_label, &x->ctx,
				      room > 0 ? room : 1, &x->shown);
	if (rc != STATUS_OK && rc != STATUS_LIMIT)
		return rc;
	buf_puts(b, "```\n");
	avail = budget > b->len + 8 ? budget - b->len - 8 : 0;
	if (sect[0].len + sect[1].len <= avail) {
		append_lines(b, &sect[0], avail);
		append_lines(b, &sect[1], avail);
	} else {
		size_t half = avail / 2;
		size_t first = sect[1].len < half ? avail - sect[1].len : half;

		append_lines(b, &sect[0], first);
		append_lines(b, &sect[1],
			     budget > b->len + 8 ? budget - b->len - 8 : 0);
	}
	return STATUS_OK;
}

/* Structured content: the tree's lines drawn, and what the text says. */
static int
get_result(struct get_call *x, json_t **result)
{
	const struct merge_trace *t = x->t;
	char start[TIMERANGE_FORMAT_MAX];
	size_t covered = 0;
	json_t *sc;

	if ((x->lines = json_array()) == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < x->shown; i++) {
		if (json_array_append_new(
			    x->lines,
			    line_json(t, &x->fold->lines[i], &x->det)) != 0)
			return STATUS_NOMEM;
		covered += x->fold->lines[i].end - x->fold->lines[i].node;
	}
	timerange_format((int64_t)(t->start_ns / 1000000), start,
			 sizeof(start));
	sc = json_pack("{s:s, s:b, s:I, s:f, s:s, s:o, s:I, s:I, s:I, s:O, "
		       "s:I, s:O, s:O, s:O}",
		       "trace_id", x->tid, "found", true, "span_count",
		       (json_int_t)t->span_count, "duration_ms",
		       (double)(t->end_ns - t->start_ns) / 1e6, "start", start,
		       "sources", get_sources(x), "error_spans",
		       (json_int_t)x->n_errors, "duplicates",
		       (json_int_t)t->duplicates, "folded_spans",
		       (json_int_t)x->fold->folded, "lines", x->lines,
		       "spans_not_shown", (json_int_t)(t->span_count - covered),
		       "bottlenecks", x->bn, "error_chain", x->chain,
		       "key_attributes", x->keys);
	if (sc == NULL)
		return STATUS_NOMEM;
	return tool_result_fit(
		x->call, &x->b, sc,
		(struct tool_rows[]){
			{"lines", NULL, "lines", 0, 0, 0},
			{"bottlenecks", NULL, "bottlenecks", 0, 0, 0},
			{"error_chain", NULL, "error chain spans", 0, 0, 0}},
		3, "the trace is larger than one answer holds", result);
}

static int
get_trace(struct call *call, const json_t *args, json_t **result)
{
	const char *trace_id = tool_arg_str(args, "trace_id");
	const char *span_id = tool_arg_str(args, "span_id");
	struct get_call x = {.call = call, .budget = call_text_budget(call)};
	int rc = STATUS_OK;

	if (span_id != NULL)
		return tool_get_span(call, trace_id, span_id, result);
	buf_init(&x.b, 2 * x.budget + 4096);
	buf_init(&x.sect[0], 2 * x.budget + 4096);
	buf_init(&x.sect[1], 2 * x.budget + 4096);
	*result = NULL;
	if (spanquery_is_trace_prefix(trace_id)) {
		x.prefix = trace_id; /* resolved once a connection is held */
	} else if (trace_id == NULL ||
		   tool_parse_trace_id(trace_id, x.id) != STATUS_OK) {
		*result = tool_result_error(
			"trace_id must be 32 hex digits (or the first 8 or "
			"more), not all zero (e.g. "
			"\"4bf92f3577b34da6a3ce929d0e0e4736\"), got \"%.40s\"",
			trace_id != NULL ? trace_id : "");
		goto out;
	} else {
		hex_encode(x.id, 16, x.tid);
	}
	if ((rc = get_fetch(&x, result)) != STATUS_OK || *result != NULL ||
	    (rc = get_merge(&x)) != STATUS_OK)
		goto out;
	if (x.res->n_traces == 0) {
		rc = get_not_found(&x, result);
		goto out;
	}
	if ((rc = get_fold(&x)) != STATUS_OK ||
	    (rc = get_details(&x)) != STATUS_OK ||
	    (rc = get_head(&x)) != STATUS_OK ||
	    (rc = get_body(&x)) != STATUS_OK)
		goto out;
	rc = get_result(&x, result);
out:
	tool_conns_put(&x.k);
	render_fold_free(x.fold);
	free(x.ctx.keep);
	merge_result_free(x.res);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		spanquery_spans_free(x.sp[i]);
	redact_kept_free(&x.kept);
	free(x.spans);
	json_decref(x.lines);
	json_decref(x.bn);
	json_decref(x.chain);
	json_decref(x.keys);
	tool_details_free(&x.det);
	buf_free(&x.b);
	buf_free(&x.sect[0]);
	buf_free(&x.sect[1]);
	return tool_done(rc, result);
}

const struct tool_handler spans_tool_handlers[] = {
	{"query_spans", query_spans},
	{"get_trace", get_trace},
	{NULL, NULL},
};

/*
 * tool_common.c - helpers shared by the tool families that read the
 * telemetry store; the contracts are in tool_common.h.
 */
#include "tools/tool_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/timerange.h"
#include "conf/config.h"
#include "json/jsondump.h"
#include "otlp/otlp.h"
#include "pg/pg.h"
#include "telemetry/health.h"
#include "telemetry/merge.h"
#include "telemetry/render.h"
#include "telemetry/spanquery.h"
#include "tools/tool.h"

/* [tools] max_answer_bytes without a configuration (unit tests) */
#define TOOL_ANSWER_BYTES 32768
/* Bytes tool_bound keeps free for its note besides the hint and the
 * counts, and per array for the counts and the field saying so: the
 * note's JSON escapes included, with room to spare. */
#define BOUND_NOTE_ROOM 160
#define BOUND_ROWS_ROOM 96

/* names offered after "did you mean" */
#define SUGGEST_MAX 3
/* The longest a call waits for a store connection, short of its own
 * deadline: MCP clients give up on a request after about a minute (the
 * official SDKs' default request timeout is 60 s), so a longer wait would
 * only end in an answer nobody reads. */
#define TOOL_ACQUIRE_MAX_MS 60000
/* A wait ends this long before the call's deadline: the janitor cancels a
 * call once a second past it, and the pool's answer must come first. */
#define TOOL_ACQUIRE_MARGIN_MS 1000

const struct tool_source tool_sources[TOOL_SRCS] = {
	[TOOL_SRC_EBPF] = {"ebpf", "eBPF", "spans", MERGE_SOURCE_EBPF},
	[TOOL_SRC_OTLP] = {"otlp", "OTLP", "spans", MERGE_SOURCE_OTLP},
	[TOOL_SRC_PROM] = {"prometheus", "Prometheus", "metrics",
			   MERGE_SOURCE_PROMETHEUS},
};

int
tool_source_of_merge(int merge)
{
	switch (merge) {
	case MERGE_SOURCE_EBPF: return TOOL_SRC_EBPF;
	case MERGE_SOURCE_PROMETHEUS: return TOOL_SRC_PROM;
	default: return TOOL_SRC_OTLP;
	}
}

int
tool_span_source(const char *name)
{
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		if (strcmp(name, tool_sources[i].name) == 0)
			return i;
	return -1;
}

int
tool_result_buf(const struct buf *b, json_t *sc, json_t **result)
{
	int rc = buf_error(b);

	*result = NULL;
	if (rc != STATUS_OK) {
		json_decref(sc);
		return rc;
	}
	*result = tool_result_new(
		json_pack("[{s:s, s:s%}]", "type", "text", "text",
			  b->data != NULL ? b->data : "", b->len),
		sc, false);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

size_t
tool_answer_budget(struct call *call)
{
	const struct config *cfg = call_config(call);

	return cfg != NULL ? (size_t)cfg->tools.max_answer_bytes
			   : TOOL_ANSWER_BYTES;
}

size_t
tool_rows_cut(size_t need, const size_t *const *sizes, const size_t *count,
	      size_t *keep, size_t n)
{
	size_t went = 0;

	for (size_t i = 0; i < n; i++)
		keep[i] = count[i];
	while (went < need) {
		size_t best = n, best_bytes = 0;

		/* the largest list still holding rows, by the bytes it
		 * keeps: summed afresh, n is a handful of lists */
		for (size_t i = 0; i < n; i++) {
			size_t bytes = 0;

			for (size_t j = 0; j < keep[i]; j++)
				bytes += sizes[i][j];
			if (keep[i] > 0 && (best == n || bytes > best_bytes)) {
				best = i;
				best_bytes = bytes;
			}
		}
		if (best == n)
			break;
		went += sizes[best][--keep[best]];
	}
	return went;
}

size_t
tool_json_text_len(const char *s, size_t n)
{
	size_t len = n;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '"' || s[i] == '\\')
			len++;
		else if ((unsigned char)s[i] < 0x20)
			len += 5;
	return len;
}

size_t
tool_json_len(const json_t *v)
{
	char *text = jsondump(v, JSON_COMPACT);
	size_t len = text != NULL ? strlen(text) : 0;

	free(text);
	return len;
}

/* "(structured content: 30 spans shown, 12 more: <hint>; ...)" after
 * the text of result's first text block. */
static int
bound_note(json_t *result, const struct tool_rows *rows, size_t n,
	   size_t budget, const char *hint)
{
	json_t *block = json_array_get(json_object_get(result, "content"), 0);
	const char *text = json_string_value(json_object_get(block, "text"));
	struct buf b;
	int rc;

	if (text == NULL)
		return STATUS_OK;
	buf_init(&b, SIZE_MAX / 2);
	buf_puts(&b, text);
	buf_puts(&b, text[0] != '\0' ? "\n(structured content: "
				     : "(structured content: ");
	for (size_t i = 0, k = 0; i < n; i++) {
		const struct tool_rows *r = &rows[i];
		size_t more =
			r->total > r->shown ? r->total - r->shown : r->cut;

		if (r->cut == 0)
			continue;
		buf_printf(&b, "%s%zu %s shown, %zu more", k++ > 0 ? "; " : "",
			   r->shown, r->what, more);
	}
	buf_printf(&b,
		   ": %s; a whole answer is at most %zu bytes, "
		   "tools.max_answer_bytes)\n",
		   hint, budget);
	rc = buf_error(&b);
	if (rc == STATUS_OK &&
	    json_object_set_new(block, "text", json_stringn(b.data, b.len)) !=
		    0)
		rc = STATUS_NOMEM;
	buf_free(&b);
	return rc;
}

int
tool_bound(json_t *result, size_t budget, struct tool_rows *rows, size_t n,
	   const char *hint)
{
	json_t *sc = json_object_get(result, "structuredContent");
	size_t **sizes = NULL, *count = NULL, *keep = NULL;
	size_t len, need;
	int rc = STATUS_NOMEM;

	for (size_t i = 0; i < n; i++) {
		rows[i].shown =
			json_array_size(json_object_get(sc, rows[i].key));
		rows[i].cut = 0;
	}
	if (sc == NULL || json_is_true(json_object_get(result, "isError")))
		return STATUS_OK;
	if ((len = tool_json_len(result)) == 0)
		return STATUS_NOMEM;
	if (len <= budget)
		return STATUS_OK;
	need = len - budget + BOUND_NOTE_ROOM + strlen(hint);
	sizes = calloc(n, sizeof(*sizes));
	count = calloc(n, sizeof(*count));
	keep = calloc(n, sizeof(*keep));
	if (sizes == NULL || count == NULL || keep == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_object_get(sc, rows[i].key);

		need += BOUND_ROWS_ROOM + strlen(rows[i].key);
		count[i] = json_array_size(a);
		if (count[i] > 0 &&
		    (sizes[i] = calloc(count[i], sizeof(**sizes))) == NULL)
			goto out;
		/* each row with its comma */
		for (size_t j = 0; j < count[i]; j++)
			if ((sizes[i][j] =
				     tool_json_len(json_array_get(a, j))) == 0)
				goto out;
			else
				sizes[i][j]++;
	}
	(void)tool_rows_cut(need, (const size_t *const *)sizes, count, keep, n);
	rc = STATUS_OK;
	for (size_t i = 0; i < n && rc == STATUS_OK; i++) {
		json_t *a = json_object_get(sc, rows[i].key);

		rows[i].shown = keep[i];
		rows[i].cut = count[i] - keep[i];
		if (rows[i].cut == 0)
			continue;
		while (json_array_size(a) > keep[i])
			json_array_remove(a, json_array_size(a) - 1);
		if (rows[i].more != NULL &&
		    json_is_integer(json_object_get(sc, rows[i].more)))
			rc = json_object_set_new(
				sc, rows[i].more,
				json_integer(json_integer_value(json_object_get(
						     sc, rows[i].more)) +
					     (json_int_t)rows[i].cut));
		else if (rows[i].more != NULL)
			rc = json_object_set_new(sc, rows[i].more, json_true());
		else {
			/* beside a tool's own "truncated" (get_session's
			 * boolean says its traces were cut) under a name of
			 * its own */
			const char *key =
				json_object_get(sc, "truncated") != NULL &&
						!json_is_object(json_object_get(
							sc, "truncated"))
					? "truncated_rows"
					: "truncated";
			json_t *t = json_object_get(sc, key);

			if (t == NULL &&
			    json_object_set_new(sc, key, t = json_object()) !=
				    0)
				rc = -1;
			if (rc == 0 && json_is_object(t))
				rc = json_object_set_new(
					t, rows[i].key,
					json_integer((json_int_t)rows[i].cut));
		}
		if (rc != 0)
			rc = STATUS_NOMEM;
	}
	if (rc == STATUS_OK)
		rc = bound_note(result, rows, n, budget, hint);
out:
	for (size_t i = 0; sizes != NULL && i < n; i++)
		free(sizes[i]);
	free(sizes);
	free(count);
	free(keep);
	return rc;
}

int
tool_result_fit(struct call *call, const struct buf *b, json_t *sc,
		struct tool_rows *rows, size_t n, const char *hint,
		json_t **result)
{
	int rc = tool_result_buf(b, sc, result);

	if (rc == STATUS_OK &&
	    (rc = tool_bound(*result, tool_answer_budget(call), rows, n,
			     hint)) != STATUS_OK) {
		json_decref(*result);
		*result = NULL;
	}
	return rc;
}

int
tool_put_line(struct buf *b, const char *s, size_t max)
{
	size_t n = strlen(s), len = n, i = 0;
	int rc = STATUS_OK;

	if (n > max)
		for (len = max;
		     len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80;)
			len--;
	/* runs of plain bytes in one append each: one that does not fit is
	 * left out whole, never half a character (tool_fit keeps what came
	 * before it) */
	while (rc == STATUS_OK && i < len) {
		size_t j = i;

		while (j < len && (unsigned char)s[j] >= 0x20 &&
		       (unsigned char)s[j] != 0x7f)
			j++;
		if (j > i)
			rc = buf_append(b, s + i, j - i);
		if (rc == STATUS_OK && j < len)
			rc = buf_puts(b, " "), j++;
		i = j;
	}
	if (rc == STATUS_OK && len < n)
		rc = buf_puts(b, "…");
	return rc;
}

int
tool_fit(struct buf *b)
{
	int rc = buf_error(b);

	/* a failed append leaves b->len where the piece stopped: rolling
	 * back to it keeps what came before and forgets the failure */
	if (rc == STATUS_LIMIT)
		buf_rollback(b, b->len);
	return rc;
}

/* render_md_*'s failure, which it leaves out of b, back in b unless the
 * row did not fit. */
static int
md_kept(struct buf *b, int rc)
{
	if (rc != STATUS_LIMIT)
		buf_set_error(b, rc);
	return rc;
}

int
tool_md_row(struct buf *b, const char *const *cells, size_t n)
{
	return md_kept(b, render_md_row(b, cells, n));
}

int
tool_md_rule(struct buf *b, size_t n)
{
	return md_kept(b, render_md_rule(b, n));
}

int
tool_done(int rc, json_t **result)
{
	if (rc == STATUS_OK && *result == NULL)
		rc = STATUS_NOMEM;
	if (rc != STATUS_OK) {
		json_decref(*result);
		*result = NULL;
	}
	return rc;
}

const char *
tool_arg_str(const json_t *args, const char *key)
{
	const char *s = json_string_value(json_object_get(args, key));

	return s != NULL && s[0] != '\0' ? s : NULL;
}

int
tool_parse_trace_id(const char *s, uint8_t out[16])
{
	static const uint8_t zero[16];

	if (hex_decode(s, out, 16) != STATUS_OK)
		return STATUS_INVALID;
	/* all zero is an invalid trace id (W3C Trace Context, trace-id) */
	return memcmp(out, zero, 16) != 0 ? STATUS_OK : STATUS_INVALID;
}

int
tool_time_range(const json_t *args, const char *dflt, unsigned flags,
		int64_t now_ms, struct timerange *tr, char *err, size_t errlen)
{
	bool from_to = (flags & TOOL_RANGE_FROM_TO) != 0;
	const char *range =
		flags & TOOL_RANGE_EMPTY_REFUSED
			? json_string_value(json_object_get(args, "time_range"))
			: tool_arg_str(args, "time_range");

	return timerange_parse(range != NULL ? range : dflt,
			       from_to ? tool_arg_str(args, "from") : NULL,
			       from_to ? tool_arg_str(args, "to") : NULL,
			       now_ms, tr, err, errlen);
}

bool
tool_time_range_given(const json_t *args)
{
	return tool_arg_str(args, "time_range") != NULL ||
	       tool_arg_str(args, "from") != NULL ||
	       tool_arg_str(args, "to") != NULL;
}

json_t *
tool_range_json(const struct timerange *tr)
{
	char from[TIMERANGE_FORMAT_MAX], to[TIMERANGE_FORMAT_MAX];

	timerange_format(tr->from_ms, from, sizeof(from));
	timerange_format(tr->to_ms, to, sizeof(to));
	return json_pack("{s:s, s:s}", "from", from, "to", to);
}

/* How long a call may wait in the pool's queue: until just before its
 * own deadline (workers.call_timeout_s), so that it ends with the pool's
 * message rather than a bare timeout; at most TOOL_ACQUIRE_MAX_MS. */
static int
acquire_wait_ms(struct call *call)
{
	int64_t left = call_deadline_ms(call) - TOOL_ACQUIRE_MARGIN_MS -
		       clock_mono_ms();

	if (left <= 0)
		return 0;
	return left < TOOL_ACQUIRE_MAX_MS ? (int)left : TOOL_ACQUIRE_MAX_MS;
}

int
tool_conn_get(struct call *call, struct pg_conn **c, char *why, size_t len,
	      struct pg_error *err)
{
	struct pg_pool *pg = call_pg(call);
	struct pg_error own;
	int rc;

	if (err == NULL)
		err = &own;

	*c = NULL;
	if (pg == NULL) {
		snprintf(why, len,
			 "no telemetry store is configured: set [database] "
			 "url (or DATABASE_URL) and restart");
		return STATUS_UNSUPPORTED;
	}
	rc = pg_acquire(pg, call_pg_cancel(call), acquire_wait_ms(call), c,
			err);
	if (rc != STATUS_OK) {
		*c = NULL;
		/* the pool says how long it waited and for how many; the
		 * setting that helps is ours to name.  STATUS_FULL either
		 * way: a statement's timeout hint (narrow the query) does
		 * not apply to a lease that never came. */
		if (rc == STATUS_TIMEOUT || rc == STATUS_FULL) {
			snprintf(err->client + strlen(err->client),
				 sizeof(err->client) - strlen(err->client),
				 ", or raise database.pool_size");
			rc = STATUS_FULL;
		}
		snprintf(why, len, "telemetry store unavailable: %s",
			 err->client);
	}
	return rc;
}

int
tool_store_failed(struct call *call, const char *tool, int rc,
		  const struct pg_error *err, const char *timeout_hint,
		  json_t **result)
{
	const char *why =
		err->client[0] != '\0' ? err->client : "the query failed";

	if (rc == STATUS_CANCELLED || call_cancelled(call))
		return STATUS_CANCELLED;
	if (rc == STATUS_NOMEM)
		return STATUS_NOMEM;
	log_warn(&(struct log_fields){.request_id = call_request_id(call),
				      .tool = tool,
				      .duration_ms = -1},
		 "telemetry query failed: %s", err->detail);
	if (rc == STATUS_TIMEOUT && timeout_hint != NULL)
		*result = tool_result_error("telemetry query failed: %s; %s",
					    why, timeout_hint);
	else
		*result = tool_result_error("telemetry store unavailable: %s",
					    why);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

int
tool_conns_get(struct call *call, struct tool_conns *k)
{
	struct pg_pool *pg = call_pg(call);
	struct pg_error err;
	int rc;

	memset(k, 0, sizeof(*k));
	rc = tool_conn_get(call, &k->c[0], k->why, sizeof(k->why), NULL);
	if (rc != STATUS_OK)
		return rc;
	for (int i = 1; i < TOOL_CONNS; i++)
		if (pg_acquire(pg, call_pg_cancel(call), 0, &k->c[i], &err) !=
		    STATUS_OK)
			k->c[i] = NULL;
	return STATUS_OK;
}

void
tool_conns_put(struct tool_conns *k)
{
	for (int i = 0; i < TOOL_CONNS; i++)
		pg_release(k->c[i]);
	memset(k->c, 0, sizeof(k->c));
}

struct pg_conn *
tool_conns_for(const struct tool_conns *k, int i)
{
	return k->c[i] != NULL ? k->c[i] : k->c[0];
}

void
tool_unavailable(char *status, size_t cap, int rc, const struct pg_error *err)
{
	snprintf(status, cap, "unavailable: %s",
		 err->client[0] != '\0' ? err->client
		 : rc == STATUS_TIMEOUT ? "the query timed out"
					: "the query failed");
}

/* Pass 0 sends on the sources' own connections; pass 1 sends what shares
 * the first connection, and reads everything. */
static int
round_pass(const struct tool_round *r, int pass)
{
	for (int i = 0; i < TOOL_SPAN_SRCS; i++) {
		struct pg_conn *c = tool_conns_for(r->k, i);
		bool mine = r->k->c[i] != NULL || i == 0;
		struct pg_error pe;
		int rc = STATUS_OK;

		if (!(r->mask & (1u << i)) || r->status[i][0] != '\0' ||
		    (pass == 0 && !mine))
			continue;
		if (mine ? pass == 0 : pass == 1)
			rc = r->send(c, i, r->arg, &pe);
		if (rc == STATUS_OK && pass == 1)
			rc = r->recv(c, i, r->arg, &pe);
		if (rc == STATUS_CANCELLED || call_cancelled(r->call))
			return STATUS_CANCELLED;
		if (rc == STATUS_NOMEM)
			return rc;
		if (rc != STATUS_OK)
			tool_unavailable(r->status[i], TOOL_STATUS_MAX, rc,
					 &pe);
	}
	return STATUS_OK;
}

int
tool_round_send(const struct tool_round *r)
{
	return round_pass(r, 0);
}

int
tool_round_recv(const struct tool_round *r)
{
	return round_pass(r, 1);
}

int
tool_round_run(const struct tool_round *r)
{
	int rc = round_pass(r, 0);

	return rc == STATUS_OK ? round_pass(r, 1) : rc;
}

/* Words of a name too common to point at one service. */
static bool
common_word(const char *w, size_t n)
{
	static const char *const words[] = {"service", "services", "server",
					    "the",     "svc",	   "srv",
					    "app",     "api"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && strncasecmp(w, words[i], n) == 0)
			return true;
	return false;
}

/*
 * When the whole name is close to none ("the gateway service"), its
 * words of three bytes or more, common ones left out, each offer their
 * close names ("gateway": api-gateway), added to best[0..n) without
 * repeats, up to SUGGEST_MAX.  The new n.
 */
static size_t
suggest_by_word(const char *service, const struct spanquery_names *names,
		const char **best, size_t n)
{
	const char *p = service;

	while (*p != '\0' && n < SUGGEST_MAX) {
		size_t len = strcspn(p, " -_./:");
		const char *got[SUGGEST_MAX];
		char word[64];
		size_t k;

		if (len >= 3 && len < sizeof(word) && !common_word(p, len)) {
			memcpy(word, p, len);
			word[len] = '\0';
			k = spanquery_suggest(word, names->names, names->n, got,
					      SUGGEST_MAX);
			for (size_t i = 0; i < k && n < SUGGEST_MAX; i++) {
				size_t j = 0;

				while (j < n && best[j] != got[i])
					j++;
				if (j == n)
					best[n++] = got[i];
			}
		}
		p += len;
		if (*p != '\0')
			p++;
	}
	return n;
}

bool
tool_unknown_service(struct pg_conn *c, const char *service,
		     const char *list_tool, char *out, size_t cap)
{
	struct spanquery_names *names = NULL;
	struct pg_error err;
	const char *best[SUGGEST_MAX];
	size_t n, len;
	bool unknown = true;

	if (c == NULL || spanquery_services(c, &names, &err) != STATUS_OK)
		return false;
	for (size_t i = 0; i < names->n; i++)
		if (strcmp(names->names[i], service) == 0)
			unknown = false;
	if (unknown) {
		n = spanquery_suggest(service, names->names, names->n, best,
				      SUGGEST_MAX);
		if (n == 0)
			n = suggest_by_word(service, names, best, n);
		len = (size_t)snprintf(out, cap,
				       "service \"%s\" has no spans in the "
				       "telemetry store",
				       service);
		for (size_t i = 0; i < n && len < cap; i++)
			len += (size_t)snprintf(
				out + len, cap - len, "%s%s",
				i == 0 ? "; did you mean " : " or ", best[i]);
		if (n > 0 && len < cap)
			len += (size_t)snprintf(out + len, cap - len, "?");
		if (list_tool != NULL && len < cap)
			snprintf(out + len, cap - len,
				 "%s%zu services have spans: call %s to see "
				 "them",
				 n > 0 ? " " : "; ", names->n, list_tool);
	}
	spanquery_names_free(names);
	return unknown;
}

void
tool_merge_span(struct merge_span *m, const struct spanquery_span *x,
		int source)
{
	memcpy(m->trace_id, x->trace_id, 16);
	memcpy(m->span_id, x->span_id, 8);
	memcpy(m->parent_span_id, x->parent_span_id, 8);
	m->has_parent = x->has_parent;
	m->start_ns = x->start_ns;
	m->end_ns = x->start_ns + x->duration_ns;
	m->source = source;
	m->kind = x->kind;
	memcpy(m->link_span_id, x->link_span_id, 8);
	m->has_link = x->has_link;
	m->user = x;
}

/* "503", "UNAUTHENTICATED", "200 with status ERROR", "status ERROR" */
static void
code_name(const struct spanquery_code *c, char *out, size_t cap)
{
	if (c->protocol == SPANQUERY_GRPC && c->status > 0)
		snprintf(out, cap, "%s", otlp_grpc_code_name(c->status));
	else if (c->protocol == SPANQUERY_HTTP && c->status >= 400)
		snprintf(out, cap, "%d", c->status);
	else if (c->protocol == SPANQUERY_HTTP && c->status > 0)
		snprintf(out, cap, "%d with status ERROR", c->status);
	else
		snprintf(out, cap, "status ERROR");
}

static int
codes_text(struct buf *b, const struct spanquery_code *codes)
{
	int rc = STATUS_OK;

	for (int i = 0;
	     i < SPANQUERY_TOP_CODES && codes[i].n > 0 && rc == STATUS_OK;
	     i++) {
		char name[48], n[32];

		code_name(&codes[i], name, sizeof(name));
		render_count(codes[i].n, n, sizeof(n));
		rc = buf_printf(b, "%s%s ×%s", i == 0 ? " (" : ", ", name, n);
	}
	if (rc == STATUS_OK && codes[0].n > 0)
		rc = buf_puts(b, ")");
	return rc;
}

int
tool_rate_codes(struct buf *b, uint64_t part, uint64_t whole, double pct,
		const struct spanquery_code *codes)
{
	char text[RENDER_PCT_MAX];
	int rc;

	if (pct >= 0)
		render_rate(pct, text, sizeof(text));
	else
		render_pct(part, whole, text, sizeof(text));
	rc = buf_puts(b, text);
	if (rc == STATUS_OK && codes != NULL && part > 0)
		rc = codes_text(b, codes);
	return rc;
}

int
tool_errors_text(struct buf *b, uint64_t requests, uint64_t errors,
		 uint64_t client_errors, double err_pct,
		 const struct spanquery_code *err_codes,
		 const struct spanquery_code *client_codes)
{
	int rc = buf_puts(b, "Errors: ");

	if (rc == STATUS_OK)
		rc = tool_rate_codes(b, errors, requests, err_pct, err_codes);
	if (rc != STATUS_OK || client_errors == 0)
		return rc;
	rc = buf_puts(b, "; client errors: ");
	if (rc == STATUS_OK)
		rc = tool_rate_codes(b, client_errors, requests, -1,
				     client_codes);
	return rc;
}

json_t *
tool_codes_json(const struct spanquery_code *codes)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < SPANQUERY_TOP_CODES && codes[i].n > 0;
	     i++) {
		char name[48];

		code_name(&codes[i], name, sizeof(name));
		if (json_array_append_new(
			    a, json_pack("{s:s, s:I}", "code", name, "count",
					 (json_int_t)codes[i].n))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int
tool_health_rule(struct buf *b, const struct health_tolerances *t)
{
	return buf_printf(b,
			  "errors > %g%% DEGRADED, >= %g%% UNHEALTHY; client "
			  "errors >= %g%% DEGRADED, >= %g%% UNHEALTHY",
			  t->error_degraded, t->error_unhealthy,
			  t->client_error_degraded, t->client_error_unhealthy);
}

struct health_tolerances
tool_health_tolerances(struct call *call)
{
	const struct config *cfg = call_config(call);
	struct health_tolerances t = health_defaults;

	if (cfg != NULL) {
		t.error_degraded = cfg->health.error_degraded;
		t.error_unhealthy = cfg->health.error_unhealthy;
		t.client_error_degraded = cfg->health.client_error_degraded;
		t.client_error_unhealthy = cfg->health.client_error_unhealthy;
	}
	return t;
}

void
tool_change_text(const struct tool_figures *now,
		 const struct tool_figures *base, char *out, size_t cap,
		 json_t *o)
{
	char rq[RENDER_PCT_MAX], er[RENDER_PCT_MAX], p95[RENDER_PCT_MAX];
	double drq, der, dp95;

	if (now->requests == 0 && (base == NULL || base->requests == 0)) {
		snprintf(out, cap, "–"); /* no requests then or now */
		return;
	}
	if (base == NULL || base->requests == 0) {
		snprintf(out, cap, "new");
		if (o != NULL)
			json_object_set_new(o, "new", json_true());
		return;
	}
	drq = 100.0 * ((double)now->requests - (double)base->requests) /
	      (double)base->requests;
	der = (now->requests > 0
		       ? merge_pct((double)now->errors, (double)now->requests)
		       : 0) -
	      merge_pct((double)base->errors, (double)base->requests);
	dp95 = now->requests > 0 && base->p95_ms > 0
		       ? 100.0 * (now->p95_ms - base->p95_ms) / base->p95_ms
		       : 0;
	render_change(drq, "%", rq, sizeof(rq));
	render_change(der, " pp", er, sizeof(er));
	render_change(dp95, "%", p95, sizeof(p95));
	snprintf(out, cap, "requests %s, errors %s, P95 %s", rq, er, p95);
	if (o != NULL) {
		json_object_set_new(o, "requests_change_pct", json_real(drq));
		json_object_set_new(o, "error_rate_change_pp", json_real(der));
		json_object_set_new(o, "p95_change_pct", json_real(dp95));
	}
}

/* The service names the gateway holds for tool_service_name. */
static struct {
	pthread_mutex_t mu;
	char **v;
	size_t n;
	int64_t at_ms; /* when read; 0: never */
} svc_names = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define SVC_NAMES_MISS_MS 2000

static bool
svc_names_has(const char *name)
{
	for (size_t i = 0; i < svc_names.n; i++)
		if (strcmp(svc_names.v[i], name) == 0)
			return true;
	return false;
}

/* Reads the names again, without the lock (a query may wait for a
 * connection), and puts them in place under it; the old list stays when
 * the store cannot be asked. */
static void
svc_names_read(struct call *call)
{
	struct spanquery_names *names = NULL;
	struct pg_conn *c = NULL;
	struct pg_error err;
	char why[256], **v = NULL, **old = NULL;
	size_t k = 0, nold = 0;

	if (tool_conn_get(call, &c, why, sizeof(why), &err) != STATUS_OK)
		return;
	if (spanquery_services(c, &names, &err) == STATUS_OK &&
	    (v = calloc(names->n + 1, sizeof(*v))) != NULL)
		while (k < names->n && (v[k] = strdup(names->names[k])) != NULL)
			k++;
	pg_release(c);
	if (v != NULL && k == names->n) {
		pthread_mutex_lock(&svc_names.mu);
		old = svc_names.v;
		nold = svc_names.n;
		svc_names.v = v;
		svc_names.n = k;
		pthread_mutex_unlock(&svc_names.mu);
		v = old;
		k = nold;
	}
	while (v != NULL && k > 0)
		free(v[--k]);
	free(v);
	spanquery_names_free(names);
}

const char *
tool_service_name(struct call *call, const char *given, char *out, size_t cap,
		  char *note, size_t note_cap)
{
	const char *res = given;
	int64_t now = clock_mono_ms();
	bool read = false;
	size_t k;

	if (note_cap > 0)
		note[0] = '\0';
	if (given == NULL || call_pg(call) == NULL)
		return given;
	/* a name the list holds is taken as it is, however old the list
	 * (it may only lack newer names): no query on the common path; a
	 * miss reads the names again, one caller per SVC_NAMES_MISS_MS */
	pthread_mutex_lock(&svc_names.mu);
	if (!svc_names_has(given) &&
	    (svc_names.at_ms == 0 ||
	     now - svc_names.at_ms > SVC_NAMES_MISS_MS)) {
		svc_names.at_ms = now;
		read = true;
	}
	pthread_mutex_unlock(&svc_names.mu);
	if (read)
		svc_names_read(call);
	pthread_mutex_lock(&svc_names.mu);
	if (!svc_names_has(given) &&
	    (k = spanquery_resolve(given, (const char *const *)svc_names.v,
				   svc_names.n)) != SPANQUERY_NO_NAME) {
		snprintf(out, cap, "%s", svc_names.v[k]);
		snprintf(note, note_cap, "service: %s (from \"%s\")", out,
			 given);
		res = out;
	}
	pthread_mutex_unlock(&svc_names.mu);
	return res;
}

int
tool_trace_prefix(struct call *call, const char *tool, struct pg_conn *c,
		  const char *prefix, uint8_t id[16], json_t **result)
{
	uint8_t ids[2][16];
	char a[33], b[33];
	struct pg_error pe;
	size_t n = 0;
	int rc = spanquery_trace_prefix(c, prefix, ids, &n, &pe);

	*result = NULL;
	if (rc != STATUS_OK)
		return tool_store_failed(call, tool, rc, &pe, NULL, result);
	if (n == 1) {
		memcpy(id, ids[0], 16);
		return STATUS_OK;
	}
	if (n == 0) {
		*result = tool_result_error(
			"no trace id begins with \"%s\": give the 32 hex "
			"digits that query_traces and query_spans' "
			"structured content show",
			prefix);
	} else {
		hex_encode(ids[0], 16, a);
		hex_encode(ids[1], 16, b);
		*result = tool_result_error(
			"trace id \"%s\" is the beginning of more than one "
			"(%s, %s, ...): give more digits or all 32",
			prefix, a, b);
	}
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

struct trace_spans {
	const uint8_t *id;
	struct spanquery_spans **sp;
};

static int
trace_spans_send(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	const struct trace_spans *t = arg;

	return spanquery_spans_send(c, tool_sources[i].name,
				    (const uint8_t(*)[16])t->id, 1, pe);
}

static int
trace_spans_recv(struct pg_conn *c, int i, void *arg, struct pg_error *pe)
{
	const struct trace_spans *t = arg;

	return spanquery_spans_recv(c, &t->sp[i], pe);
}

int
tool_trace_spans(struct call *call, const char *tool,
		 const struct tool_conns *k, const char *prefix, uint8_t id[16],
		 struct spanquery_spans *sp[TOOL_SPAN_SRCS],
		 char (*status)[TOOL_STATUS_MAX], json_t **result)
{
	struct trace_spans t = {.id = id, .sp = sp};
	int rc, failed = 0;

	*result = NULL;
	if (prefix != NULL &&
	    ((rc = tool_trace_prefix(call, tool, k->c[0], prefix, id,
				     result)) != STATUS_OK ||
	     *result != NULL))
		return rc;
	rc = tool_round_run(
		&(struct tool_round){.call = call,
				     .k = k,
				     .mask = (1u << TOOL_SPAN_SRCS) - 1,
				     .status = status,
				     .send = trace_spans_send,
				     .recv = trace_spans_recv,
				     .arg = &t});
	if (rc != STATUS_OK)
		return rc;
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		failed += status[i][0] != '\0';
	if (failed == TOOL_SPAN_SRCS) {
		*result = tool_result_error("telemetry store %s",
					    status[TOOL_SRC_OTLP]);
		return *result != NULL ? STATUS_OK : STATUS_NOMEM;
	}
	return STATUS_OK;
}

/*
 * test_demo.c - unit tests for lib/demo, the demo dataset generator: option
 * checks, determinism (seed, minute, batch size), and one pass over a
 * 200000-span day that checks every row (ids, times, parents, services,
 * JSON) and what the dataset promises: both sources, HTTP/gRPC/SQL, GenAI
 * sessions, the error burst, the slow route, the daily curve, and metric
 * points that count the spans.  No database.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "demo/demo.h"

#define NS_PER_MIN (60ull * 1000000000ull)
/* 2026-01-01T00:00:00Z, and 13 s past it: the same minute */
#define T0	(1767225600ull * 1000000000ull)
#define NOW	(T0 + 13ull * 1000000000ull)
#define BIG_RUN 200000

static const char *const service_names[] = {
	"api-gateway", "cart",		"checkout",  "inventory",
	"search",      "payments",	"fraud",     "ledger",
	"postgres",    "notifications", "assistant", "auth"};
#define N_SERVICES (sizeof(service_names) / sizeof(service_names[0]))

/* The seeded rows of model_pricing (migrations/0004_model_pricing.sql). */
static const struct {
	const char *provider, *model;
} priced[] = {
	{"openai", "gpt-4o"},
	{"openai", "gpt-4o-mini"},
	{"openai", "gpt-4.1"},
	{"openai", "gpt-4.1-mini"},
	{"openai", "gpt-4.1-nano"},
	{"openai", "o3"},
	{"openai", "o3-mini"},
	{"openai", "o4-mini"},
	{"openai", "gpt-5"},
	{"openai", "gpt-5-mini"},
	{"openai", "gpt-5-nano"},
	{"anthropic", "claude-3-5-haiku"},
	{"anthropic", "claude-haiku-4-5"},
	{"anthropic", "claude-sonnet-4"},
	{"anthropic", "claude-opus-4"},
	{"anthropic", "claude-opus-4-5"},
	{"gcp.gemini", "gemini-2.0-flash"},
	{"gcp.gemini", "gemini-2.5-flash"},
	{"gcp.gemini", "gemini-2.5-flash-lite"},
	{"gcp.gemini", "gemini-2.5-pro"},
};

static struct demo *
make(uint64_t spans, uint64_t seed, uint64_t now, size_t batch)
{
	struct demo_options o = {.spans = spans,
				 .seed = seed,
				 .now_unix_nano = now,
				 .batch_spans = batch};
	struct demo *d = NULL;
	char err[256];

	assert_int_equal(demo_new(&o, &d, err, sizeof(err)), STATUS_OK);
	assert_non_null(d);
	return d;
}

/* ---- options ------------------------------------------------------------- */

static void
test_options_invalid(void **state)
{
	static const struct {
		struct demo_options o;
		const char *field;
	} cases[] = {
		{{.spans = 0, .now_unix_nano = NOW}, "spans"},
		{{.spans = DEMO_SPANS_MAX + 1, .now_unix_nano = NOW}, "spans"},
		{{.spans = 10, .now_unix_nano = 1000}, "now"},
		{{.spans = 10, .now_unix_nano = NOW, .batch_spans = 999},
		 "batch_spans"},
		{{.spans = 10,
		  .now_unix_nano = NOW,
		  .batch_spans = DEMO_BATCH_MAX + 1},
		 "batch_spans"},
		{{.spans = 10, .now_unix_nano = NOW, .batch_points = 1},
		 "batch_points"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int dummy;
		struct demo *d = (struct demo *)&dummy; /* must become NULL */
		char err[256];

		assert_int_equal(demo_new(&cases[i].o, &d, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(d);
		assert_non_null(strstr(err, cases[i].field));
	}
	demo_free(NULL);
	demo_buf_free(NULL);
}

static void
test_window_is_the_day_before_the_minute(void **state)
{
	struct demo *d = make(10, 1, NOW, 0);

	(void)state;
	assert_true(demo_window_end(d) == T0);
	assert_true(demo_window_start(d) == T0 - DEMO_WINDOW_NS);
	/* per minute: 2 gauges per pod (26 pods) + 3 series for each of
	 * the 13 (service, protocol) pairs that serve requests */
	assert_true(demo_total_points(d) == (uint64_t)DEMO_WINDOW_MINS * 91);
	demo_free(d);
}

static void
test_points_need_spans_first(void **state)
{
	struct demo *d = make(5000, 1, NOW, 0);
	struct demo_buf *buf = NULL;
	struct otlp_batch b;

	(void)state;
	assert_int_equal(demo_buf_new(d, &buf), STATUS_OK);
	assert_int_equal(demo_next_points(d, buf, &b), STATUS_INVALID);
	assert_int_equal(demo_next_spans(d, buf, &b), STATUS_OK);
	assert_true(b.n_spans == 5000);
	assert_null(b.arena);
	assert_null(b.points);
	assert_int_equal(demo_next_spans(d, buf, &b), STATUS_OK);
	assert_int_equal(b.n_spans, 0);
	assert_null(b.spans);
	assert_int_equal(demo_next_points(d, buf, &b), STATUS_OK);
	assert_true(b.n_points > 0);
	assert_null(b.spans);
	demo_buf_free(buf);
	demo_free(d);
}

/* ---- determinism ----------------------------------------------------------- */

static bool
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool
span_eq(const struct otlp_span *a, const struct otlp_span *b)
{
	return memcmp(a->trace_id, b->trace_id, 16) == 0 &&
	       memcmp(a->span_id, b->span_id, 8) == 0 &&
	       memcmp(a->parent_span_id, b->parent_span_id, 8) == 0 &&
	       a->has_parent == b->has_parent &&
	       str_eq(a->service_name, b->service_name) &&
	       str_eq(a->service_namespace, b->service_namespace) &&
	       str_eq(a->service_version, b->service_version) &&
	       str_eq(a->k8s_namespace, b->k8s_namespace) &&
	       str_eq(a->k8s_deployment, b->k8s_deployment) &&
	       str_eq(a->k8s_pod, b->k8s_pod) &&
	       str_eq(a->host_name, b->host_name) &&
	       str_eq(a->scope_name, b->scope_name) &&
	       str_eq(a->scope_version, b->scope_version) &&
	       str_eq(a->name, b->name) && a->kind == b->kind &&
	       a->start_unix_nano == b->start_unix_nano &&
	       a->end_unix_nano == b->end_unix_nano &&
	       a->status_code == b->status_code &&
	       str_eq(a->status_message, b->status_message) &&
	       a->source == b->source &&
	       str_eq(a->http_method, b->http_method) &&
	       str_eq(a->http_route, b->http_route) &&
	       a->http_status == b->http_status &&
	       str_eq(a->rpc_system, b->rpc_system) &&
	       str_eq(a->rpc_service, b->rpc_service) &&
	       str_eq(a->rpc_method, b->rpc_method) &&
	       a->grpc_status == b->grpc_status &&
	       str_eq(a->db_system, b->db_system) &&
	       str_eq(a->db_operation, b->db_operation) &&
	       str_eq(a->db_table, b->db_table) &&
	       str_eq(a->session_id, b->session_id) &&
	       str_eq(a->gen_ai_system, b->gen_ai_system) &&
	       str_eq(a->gen_ai_operation, b->gen_ai_operation) &&
	       str_eq(a->gen_ai_request_model, b->gen_ai_request_model) &&
	       str_eq(a->gen_ai_response_model, b->gen_ai_response_model) &&
	       a->input_tokens == b->input_tokens &&
	       a->output_tokens == b->output_tokens &&
	       str_eq(a->attributes_json, b->attributes_json) &&
	       str_eq(a->resource_json, b->resource_json) &&
	       str_eq(a->events_json, b->events_json);
}

/* Next span of a generator, refilling its buffer; NULL at the end. */
struct cursor {
	struct demo *d;
	struct demo_buf *buf;
	struct otlp_batch b;
	size_t i;
	size_t batches;
};

static void
cursor_open(struct cursor *c, struct demo *d)
{
	memset(c, 0, sizeof(*c));
	c->d = d;
	assert_int_equal(demo_buf_new(d, &c->buf), STATUS_OK);
}

static const struct otlp_span *
cursor_next(struct cursor *c)
{
	if (c->i == c->b.n_spans) {
		assert_int_equal(demo_next_spans(c->d, c->buf, &c->b),
				 STATUS_OK);
		c->i = 0;
		if (c->b.n_spans == 0)
			return NULL;
		c->batches++;
	}
	return &c->b.spans[c->i++];
}

static void
cursor_close(struct cursor *c)
{
	demo_buf_free(c->buf);
	demo_free(c->d);
}

/* Compares two whole runs span by span; returns how many spans matched
 * before the first difference (and whether both ended together). */
static size_t
compare_runs(struct demo *a, struct demo *b, bool *same)
{
	struct cursor ca, cb;
	const struct otlp_span *x, *y;
	size_t n = 0;

	cursor_open(&ca, a);
	cursor_open(&cb, b);
	*same = true;
	for (;;) {
		x = cursor_next(&ca);
		y = cursor_next(&cb);
		if (x == NULL || y == NULL) {
			*same = x == y;
			break;
		}
		if (!span_eq(x, y)) {
			*same = false;
			break;
		}
		n++;
	}
	cursor_close(&ca);
	cursor_close(&cb);
	return n;
}

static void
test_same_seed_same_rows(void **state)
{
	bool same;

	(void)state;
	/* same seed, same minute (13 s and 59 s past it), same batches */
	assert_int_equal(compare_runs(make(20000, 7, NOW, 0),
				      make(20000, 7, T0 + 59000000000ull, 0),
				      &same),
			 20000);
	assert_true(same);
	/* the batch size does not change the rows */
	assert_int_equal(compare_runs(make(20000, 7, NOW, 1000),
				      make(20000, 7, NOW, 7777), &same),
			 20000);
	assert_true(same);
}

static void
test_other_seed_or_minute_other_rows(void **state)
{
	bool same;

	(void)state;
	assert_int_equal(compare_runs(make(20000, 7, NOW, 0),
				      make(20000, 8, NOW, 0), &same),
			 0);
	assert_false(same);
	assert_int_equal(compare_runs(make(20000, 7, NOW, 0),
				      make(20000, 7, NOW + NS_PER_MIN, 0),
				      &same),
			 0);
	assert_false(same);
}

/* ---- one big day, checked as it is generated ---------------------------- */

struct series {
	char *key;
	double last;
};

struct summary {
	size_t spans, batches, max_batch;
	size_t bad;
	char first_bad[512];
	size_t by_service[N_SERVICES][2];
	uint64_t start_min, end_max;
	size_t per_hour[24];

	size_t pairs, ebpf_fewer, ebpf_more, pair_mismatch;
	size_t roots;

	size_t http_server, http_client, http_4xx, http_5xx;
	char *routes[64];
	size_t n_routes;
	size_t grpc, grpc_nonzero, sql, sql_ops, db_tables;
	char *tables[32];
	size_t n_tables;

	size_t chats, chat_ok, chat_bad, agents, chat_under_agent;
	size_t nested_agents, tools;
	char **sessions;
	size_t n_sessions, cap_sessions;

	size_t burst_5xx, outside_5xx, pay_server;
	uint64_t *slow, *fast;
	size_t n_slow, n_fast, cap_slow, cap_fast;
	size_t exceptions;
	size_t gw_server_otlp;

	size_t points, gauges_cpu, gauges_mem, sums, hists, point_bad;
	char first_point_bad[256];
	struct series series[1024];
	size_t n_series;
	double gw_requests_final;
};

static struct summary *sum_;

static void PRINTF_LIKE(2, 3) bad(struct summary *s, const char *fmt, ...)
{
	va_list ap;

	if (s->bad++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(s->first_bad, sizeof(s->first_bad), fmt, ap);
	va_end(ap);
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static int
service_index(const char *name)
{
	size_t i;

	for (i = 0; i < N_SERVICES; i++)
		if (name != NULL && strcmp(name, service_names[i]) == 0)
			return (int)i;
	return -1;
}

static void
add_unique(char **set, size_t *n, size_t cap, const char *v)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(set[i], v) == 0)
			return;
	if (*n < cap)
		set[(*n)++] = strdup(v);
}

static void
push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 1024;
		*a = realloc(*a, *cap * sizeof(**a));
		assert_non_null(*a);
	}
	(*a)[(*n)++] = v;
}

static void
count_session(struct summary *s, const char *id)
{
	size_t i;

	for (i = s->n_sessions; i-- > 0;)
		if (strcmp(s->sessions[i], id) == 0)
			return;
	if (s->n_sessions == s->cap_sessions) {
		s->cap_sessions = s->cap_sessions ? 2 * s->cap_sessions : 256;
		s->sessions = realloc(s->sessions,
				      s->cap_sessions * sizeof(*s->sessions));
		assert_non_null(s->sessions);
	}
	s->sessions[s->n_sessions++] = strdup(id);
}

/* Keys of a JSON object, or -1 when text is not one. */
static int
json_keys(const char *text, bool array)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	int n = -1;

	if (j != NULL && (array ? json_is_array(j) : json_is_object(j)))
		n = (int)(array ? json_array_size(j) : json_object_size(j));
	json_decref(j);
	return n;
}

static bool
model_priced(const char *provider, const char *model)
{
	size_t i;

	for (i = 0; i < sizeof(priced) / sizeof(priced[0]); i++)
		if (strcmp(priced[i].provider, provider) == 0 &&
		    strcmp(priced[i].model, model) == 0)
			return true;
	return false;
}

/* A sort index of a batch by (trace id, span id, source), for lookups. */
static const struct otlp_batch *sort_batch;

static int
cmp_idx(const void *a, const void *b)
{
	const struct otlp_span *x = &sort_batch->spans[*(const size_t *)a];
	const struct otlp_span *y = &sort_batch->spans[*(const size_t *)b];
	int c = memcmp(x->trace_id, y->trace_id, 16);

	if (c == 0)
		c = memcmp(x->span_id, y->span_id, 8);
	if (c == 0)
		c = (int)x->source - (int)y->source;
	return c;
}

struct key {
	const uint8_t *trace, *span;
	int source; /* -1: any */
};

static int
cmp_key(const void *k, const void *e)
{
	const struct key *key = k;
	const struct otlp_span *y = &sort_batch->spans[*(const size_t *)e];
	int c = memcmp(key->trace, y->trace_id, 16);

	if (c == 0)
		c = memcmp(key->span, y->span_id, 8);
	if (c == 0 && key->source >= 0)
		c = key->source - (int)y->source;
	return c;
}

static long
lookup(const struct otlp_batch *b, const size_t *idx, const uint8_t *trace,
       const uint8_t *span, int source)
{
	struct key k = {trace, span, source};
	const size_t *p;

	sort_batch = b;
	p = bsearch(&k, idx, b->n_spans, sizeof(*idx), cmp_key);
	if (p == NULL)
		return -1;
	if (source >= 0)
		return (long)*p;
	/* any source: the first of the run */
	while (p > idx && cmp_key(&k, p - 1) == 0)
		p--;
	return (long)*p;
}

static bool
is_agent(const struct otlp_span *s)
{
	return s->gen_ai_operation != NULL &&
	       strcmp(s->gen_ai_operation, "invoke_agent") == 0;
}

static void
check_batch(struct summary *s, const struct otlp_batch *b, uint64_t w0,
	    uint64_t w1, uint64_t burst0, uint64_t burst1)
{
	size_t *idx = malloc(b->n_spans * sizeof(*idx));
	size_t i;

	assert_non_null(idx);
	for (i = 0; i < b->n_spans; i++)
		idx[i] = i;
	sort_batch = b;
	qsort(idx, b->n_spans, sizeof(*idx), cmp_idx);
	for (i = 1; i < b->n_spans; i++) {
		sort_batch = b;
		if (cmp_idx(&idx[i - 1], &idx[i]) == 0)
			bad(s, "duplicate (trace, span, source) in a batch");
	}
	for (i = 0; i < b->n_spans; i++) {
		const struct otlp_span *x = &b->spans[i];
		int svc = service_index(x->service_name);
		uint64_t len = x->end_unix_nano - x->start_unix_nano;

		s->spans++;
		if (all_zero(x->trace_id, 16) || all_zero(x->span_id, 8))
			bad(s, "span %zu: zero id", s->spans);
		if (x->end_unix_nano < x->start_unix_nano)
			bad(s, "span %zu: ends before it starts", s->spans);
		if (x->start_unix_nano < w0 || x->end_unix_nano > w1)
			bad(s, "span %zu: outside the window", s->spans);
		if (svc < 0)
			bad(s, "span %zu: unknown service %s", s->spans,
			    x->service_name ? x->service_name : "(null)");
		else
			s->by_service[svc][x->source]++;
		if (x->name == NULL || x->name[0] == '\0' || x->kind < 0 ||
		    x->kind > 5 || x->status_code < 0 || x->status_code > 2)
			bad(s, "span %zu: bad name, kind or status", s->spans);
		if (x->service_namespace == NULL || x->k8s_pod == NULL ||
		    x->scope_name == NULL)
			bad(s, "span %zu: missing resource or scope", s->spans);
		if (json_keys(x->attributes_json, false) < 1 ||
		    json_keys(x->resource_json, false) < 5 ||
		    (x->events_json != NULL &&
		     json_keys(x->events_json, true) != 1))
			bad(s, "span %zu: bad JSON: %s", s->spans,
			    x->attributes_json);
		if (x->events_json != NULL)
			s->exceptions++;
		if (x->start_unix_nano < s->start_min)
			s->start_min = x->start_unix_nano;
		if (x->end_unix_nano > s->end_max)
			s->end_max = x->end_unix_nano;
		s->per_hour[(x->start_unix_nano - w0) / (60 * NS_PER_MIN)]++;

		/* parents: in this batch, same trace, written before */
		if (x->has_parent) {
			long p = lookup(b, idx, x->trace_id, x->parent_span_id,
					-1);

			if (p < 0 || (size_t)p >= i)
				bad(s,
				    "span %zu: parent not earlier in its "
				    "trace",
				    s->spans);
		} else {
			s->roots++;
			if (!all_zero(x->parent_span_id, 8))
				bad(s, "span %zu: root with a parent id",
				    s->spans);
		}

		/* the same span seen by both sources */
		if (x->source == OTLP_SOURCE_EBPF) {
			long o = lookup(b, idx, x->trace_id, x->span_id,
					OTLP_SOURCE_OTLP);

			if (o >= 0) {
				const struct otlp_span *y = &b->spans[o];
				int ke = json_keys(x->attributes_json, false);
				int ko = json_keys(y->attributes_json, false);

				s->pairs++;
				if (ke < ko)
					s->ebpf_fewer++;
				if (ke > ko)
					s->ebpf_more++;
				if (strcmp(x->name, y->name) != 0 ||
				    strcmp(x->service_name, y->service_name) ||
				    x->kind != y->kind)
					s->pair_mismatch++;
			}
		}

		/* protocols */
		if (x->http_method != NULL) {
			if (x->http_route == NULL || x->http_status < 100)
				bad(s, "span %zu: HTTP without route or status",
				    s->spans);
			else if (x->kind == 2) {
				s->http_server++;
				add_unique(s->routes, &s->n_routes, 64,
					   x->http_route);
			} else {
				s->http_client++;
			}
			if (x->http_status >= 400 && x->http_status < 500)
				s->http_4xx++;
			if (x->http_status >= 500)
				s->http_5xx++;
		}
		if (x->rpc_system != NULL) {
			s->grpc++;
			if (strcmp(x->rpc_system, "grpc") != 0 ||
			    x->rpc_service == NULL || x->rpc_method == NULL ||
			    x->grpc_status < 0 || x->grpc_status > 16)
				bad(s, "span %zu: bad gRPC columns", s->spans);
			else if (x->grpc_status != 0)
				s->grpc_nonzero++;
		}
		if (x->db_system != NULL) {
			s->sql++;
			if (strcmp(x->db_system, "postgresql") != 0 ||
			    x->db_table == NULL || x->db_operation == NULL)
				bad(s, "span %zu: bad DB columns", s->spans);
			else {
				if (strcmp(x->db_operation, "SELECT") == 0)
					s->sql_ops |= 1;
				if (strcmp(x->db_operation, "INSERT") == 0)
					s->sql_ops |= 2;
				if (strcmp(x->db_operation, "UPDATE") == 0)
					s->sql_ops |= 4;
				add_unique(s->tables, &s->n_tables, 32,
					   x->db_table);
			}
		}

		/* GenAI */
		if (x->gen_ai_operation != NULL &&
		    strcmp(x->gen_ai_operation, "chat") == 0) {
			const char *rq = x->gen_ai_request_model;
			const char *rs = x->gen_ai_response_model;
			long p = x->has_parent ? lookup(b, idx, x->trace_id,
							x->parent_span_id, -1)
					       : -1;

			s->chats++;
			if (x->session_id == NULL || x->gen_ai_system == NULL ||
			    rq == NULL || !model_priced(x->gen_ai_system, rq))
				s->chat_bad++;
			else if (x->status_code != 2) {
				size_t n = strlen(rq);

				if (rs == NULL ||
				    (strcmp(rs, rq) != 0 &&
				     (strncmp(rs, rq, n) != 0 ||
				      rs[n] != '-')) ||
				    x->input_tokens <= 0 ||
				    x->output_tokens <= 0)
					s->chat_bad++;
				else
					s->chat_ok++;
			}
			if (p >= 0 && is_agent(&b->spans[p]))
				s->chat_under_agent++;
			count_session(s, x->session_id ? x->session_id : "");
		}
		if (is_agent(x)) {
			long p = (long)i;

			s->agents++;
			/* an agent called from a tool of another agent */
			while (p >= 0 && b->spans[p].has_parent) {
				p = lookup(b, idx, b->spans[p].trace_id,
					   b->spans[p].parent_span_id, -1);
				if (p >= 0 && is_agent(&b->spans[p])) {
					s->nested_agents++;
					break;
				}
			}
		}
		if (x->gen_ai_operation != NULL &&
		    strcmp(x->gen_ai_operation, "execute_tool") == 0)
			s->tools++;

		/* the error burst and the slow route */
		if (svc == 5 && x->kind == 2 && x->source == OTLP_SOURCE_OTLP) {
			s->pay_server++;
			if (x->http_status >= 500) {
				if (x->start_unix_nano >= burst0 &&
				    x->start_unix_nano < burst1)
					s->burst_5xx++;
				else
					s->outside_5xx++;
			}
		}
		if (svc == 0 && x->kind == 2 && x->source == OTLP_SOURCE_OTLP) {
			s->gw_server_otlp++;
			if (strcmp(x->http_route, "/api/products/{id}") == 0)
				push_u64(&s->slow, &s->n_slow, &s->cap_slow,
					 len);
			if (strcmp(x->http_route, "/api/cart") == 0)
				push_u64(&s->fast, &s->n_fast, &s->cap_fast,
					 len);
		}
	}
	free(idx);
}

static void PRINTF_LIKE(2, 3) point_bad(struct summary *s, const char *fmt, ...)
{
	va_list ap;

	if (s->point_bad++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(s->first_point_bad, sizeof(s->first_point_bad), fmt, ap);
	va_end(ap);
}

/* Cumulative sums never go down: the last value of each series. */
static struct series *
series_of(struct summary *s, const struct otlp_point *p)
{
	char key[512];
	size_t i;

	snprintf(key, sizeof(key), "%s|%s|%s", p->service_name, p->name,
		 p->attributes_json);
	for (i = 0; i < s->n_series; i++)
		if (strcmp(s->series[i].key, key) == 0)
			return &s->series[i];
	assert_true(s->n_series < sizeof(s->series) / sizeof(s->series[0]));
	s->series[s->n_series].key = strdup(key);
	s->series[s->n_series].last = -1;
	return &s->series[s->n_series++];
}

static void
check_points(struct summary *s, const struct otlp_batch *b, uint64_t w0,
	     uint64_t w1)
{
	size_t i, k;

	for (i = 0; i < b->n_points; i++) {
		const struct otlp_point *p = &b->points[i];

		s->points++;
		if (p->name == NULL || p->name[0] == '\0' ||
		    service_index(p->service_name) < 0 ||
		    p->time_unix_nano <= w0 || p->time_unix_nano > w1 ||
		    json_keys(p->attributes_json, false) < 0 ||
		    json_keys(p->resource_json, false) < 3) {
			point_bad(s,
				  "point %zu: bad name, service, time or "
				  "JSON",
				  s->points);
			continue;
		}
		switch (p->type) {
		case OTLP_POINT_GAUGE:
			if (strcmp(p->name, "k8s.pod.cpu.usage") == 0)
				s->gauges_cpu++;
			if (strcmp(p->name, "k8s.pod.memory.working_set") == 0)
				s->gauges_mem++;
			if (!(p->value > 0) || p->start_unix_nano != 0)
				point_bad(s, "gauge %s: value %g", p->name,
					  p->value);
			break;
		case OTLP_POINT_SUM: {
			struct series *ser = series_of(s, p);

			s->sums++;
			if (!p->monotonic ||
			    p->temporality != OTLP_TEMPORALITY_CUMULATIVE ||
			    p->start_unix_nano != w0 || !p->is_int ||
			    p->value < ser->last)
				point_bad(s,
					  "sum %s: not a monotonic "
					  "cumulative counter",
					  p->name);
			ser->last = p->value;
			if (strcmp(p->service_name, "api-gateway") == 0 &&
			    p->time_unix_nano == w1)
				s->gw_requests_final += p->value;
			break;
		}
		case OTLP_POINT_HISTOGRAM: {
			uint64_t total = 0;

			s->hists++;
			if (p->n_bounds == 0 ||
			    p->n_bucket_counts != p->n_bounds + 1 ||
			    p->temporality != OTLP_TEMPORALITY_CUMULATIVE ||
			    !p->has_sum || !(p->sum >= 0)) {
				point_bad(s, "histogram %s: bad shape",
					  p->name);
				break;
			}
			for (k = 1; k < p->n_bounds; k++)
				if (!(p->bounds[k] > p->bounds[k - 1]))
					point_bad(s, "histogram %s: bounds",
						  p->name);
			for (k = 0; k < p->n_bucket_counts; k++)
				total += p->bucket_counts[k];
			if (total != p->count)
				point_bad(s,
					  "histogram %s: buckets sum to "
					  "%" PRIu64 ", count %" PRIu64,
					  p->name, total, p->count);
			break;
		}
		default: point_bad(s, "point type %d", (int)p->type); break;
		}
	}
}

static int
setup_big(void **state)
{
	struct summary *s = calloc(1, sizeof(*s));
	struct demo *d = NULL;
	struct demo_buf *buf = NULL;
	struct demo_options o = {
		.spans = BIG_RUN, .seed = 1, .now_unix_nano = NOW};
	struct otlp_batch b;
	char err[256];
	uint64_t w0, w1, burst0;

	if (s == NULL || demo_new(&o, &d, err, sizeof(err)) != STATUS_OK ||
	    demo_buf_new(d, &buf) != STATUS_OK)
		return -1;
	s->start_min = UINT64_MAX;
	w0 = demo_window_start(d);
	w1 = demo_window_end(d);
	/* demo.h: 25 minutes from 7 h 12 min before now */
	burst0 = w1 - (7 * 60 + 12) * NS_PER_MIN;
	for (;;) {
		if (demo_next_spans(d, buf, &b) != STATUS_OK)
			return -1;
		if (b.n_spans == 0)
			break;
		s->batches++;
		if (b.n_spans > s->max_batch)
			s->max_batch = b.n_spans;
		check_batch(s, &b, w0, w1, burst0, burst0 + 25 * NS_PER_MIN);
	}
	for (;;) {
		if (demo_next_points(d, buf, &b) != STATUS_OK)
			return -1;
		if (b.n_points == 0)
			break;
		check_points(s, &b, w0, w1);
	}
	demo_buf_free(buf);
	demo_free(d);
	sum_ = s;
	*state = s;
	return 0;
}

static int
teardown_big(void **state)
{
	struct summary *s = sum_;
	size_t i;

	(void)state;
	if (s == NULL)
		return 0;
	for (i = 0; i < s->n_routes; i++)
		free(s->routes[i]);
	for (i = 0; i < s->n_tables; i++)
		free(s->tables[i]);
	for (i = 0; i < s->n_sessions; i++)
		free(s->sessions[i]);
	for (i = 0; i < s->n_series; i++)
		free(s->series[i].key);
	free(s->sessions);
	free(s->slow);
	free(s->fast);
	free(s);
	sum_ = NULL;
	return 0;
}

static void
test_every_span_valid(void **state)
{
	struct summary *s = sum_;

	(void)state;
	if (s->bad > 0)
		print_error("%zu bad spans, first: %s\n", s->bad, s->first_bad);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->spans, BIG_RUN); /* exactly --spans rows */
	assert_true(s->max_batch <= DEMO_BATCH_DEFAULT);
	assert_true(s->batches >= BIG_RUN / DEMO_BATCH_DEFAULT);
	assert_true(s->roots > 1000);
	/* the whole day is used, up to the last minute */
	assert_true(s->start_min < T0 - DEMO_WINDOW_NS + 5 * NS_PER_MIN);
	assert_true(s->end_max > T0 - 10 * NS_PER_MIN);
}

static void
test_services_and_sources(void **state)
{
	struct summary *s = sum_;
	size_t i, only_otlp = 0, only_ebpf = 0, both = 0;

	(void)state;
	for (i = 0; i < N_SERVICES; i++) {
		size_t o = s->by_service[i][OTLP_SOURCE_OTLP];
		size_t e = s->by_service[i][OTLP_SOURCE_EBPF];

		assert_true(o + e > 0); /* every service has spans */
		if (o > 0 && e > 0)
			both++;
		else if (o > 0)
			only_otlp++;
		else
			only_ebpf++;
	}
	assert_true(both >= 3);
	assert_true(only_otlp >= 2);
	assert_true(only_ebpf >= 2);
	/* the same requests seen twice, same ids, the eBPF copy leaner */
	assert_true(s->pairs > s->spans / 5);
	assert_int_equal(s->pair_mismatch, 0);
	assert_int_equal(s->ebpf_more, 0);
	assert_true(s->ebpf_fewer > s->pairs / 2);
}

static void
test_protocols(void **state)
{
	struct summary *s = sum_;

	(void)state;
	assert_true(s->http_server > 10000 && s->http_client > 10000);
	assert_true(s->http_4xx > 100);
	assert_true(s->http_5xx > 10);
	assert_true(s->n_routes >= 12);
	assert_true(s->grpc > 5000);
	assert_true(s->grpc_nonzero > 10);
	assert_true(s->sql > 10000);
	assert_int_equal(s->sql_ops, 7); /* SELECT, INSERT, UPDATE */
	assert_true(s->n_tables >= 8);
	assert_true(s->exceptions > 10);
}

static void
test_genai_sessions(void **state)
{
	struct summary *s = sum_;

	(void)state;
	assert_int_equal(s->chat_bad, 0);
	assert_true(s->chats > 500);
	assert_true(s->chat_ok > s->chats * 9 / 10);
	/* several LLM calls per session, each inside an agent run */
	assert_true(s->n_sessions > 50);
	assert_true(s->chats >= 2 * s->n_sessions);
	assert_int_equal(s->chat_under_agent, s->chats);
	assert_true(s->agents >= s->n_sessions * 2);
	assert_true(s->nested_agents > 0);
	assert_true(s->tools > 0);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
quantile(uint64_t *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(size_t)(q * (double)(n - 1))];
}

static void
test_incidents(void **state)
{
	struct summary *s = sum_;
	uint64_t slow50, slow99, fast50, fast99;

	(void)state;
	/* payments answers 5xx only in its burst, and often then */
	assert_true(s->pay_server > 500);
	assert_true(s->burst_5xx >= 5);
	assert_int_equal(s->outside_5xx, 0);
	/* GET /api/products/{id} has a heavy tail, GET /api/cart none */
	assert_true(s->n_slow > 1000 && s->n_fast > 1000);
	slow50 = quantile(s->slow, s->n_slow, 0.5);
	slow99 = quantile(s->slow, s->n_slow, 0.99);
	fast50 = quantile(s->fast, s->n_fast, 0.5);
	fast99 = quantile(s->fast, s->n_fast, 0.99);
	assert_true(slow99 > 50 * slow50);
	assert_true(fast99 < 3 * fast50);
}

static void
test_daily_shape(void **state)
{
	struct summary *s = sum_;
	size_t i, lo = SIZE_MAX, hi = 0;

	(void)state;
	for (i = 0; i < 24; i++) {
		if (s->per_hour[i] < lo)
			lo = s->per_hour[i];
		if (s->per_hour[i] > hi)
			hi = s->per_hour[i];
	}
	assert_true(lo > 0);
	assert_true(hi > 4 * lo);
}

static void
test_metric_points(void **state)
{
	struct summary *s = sum_;

	(void)state;
	if (s->point_bad > 0)
		print_error("%zu bad points, first: %s\n", s->point_bad,
			    s->first_point_bad);
	assert_int_equal(s->point_bad, 0);
	assert_true(s->points == (uint64_t)DEMO_WINDOW_MINS * 91);
	assert_int_equal(s->gauges_cpu, (size_t)DEMO_WINDOW_MINS * 26);
	assert_int_equal(s->gauges_mem, (size_t)DEMO_WINDOW_MINS * 26);
	assert_int_equal(s->sums, (size_t)DEMO_WINDOW_MINS * 13 * 2);
	assert_int_equal(s->hists, (size_t)DEMO_WINDOW_MINS * 13);
	/* the gateway's counters count its server spans */
	assert_true(s->gw_requests_final == (double)s->gw_server_otlp);
}

static void
test_cut_at_exact_count(void **state)
{
	static const uint64_t counts[] = {1, 2, 37, 1001};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct cursor c;
		const struct otlp_span *x;
		uint64_t n = 0;

		cursor_open(&c, make(counts[i], 3, NOW, 0));
		while ((x = cursor_next(&c)) != NULL) {
			if (n == 0)
				assert_false(x->has_parent);
			n++;
		}
		assert_true(n == counts[i]);
		cursor_close(&c);
	}
}

int
main(void)
{
	const struct CMUnitTest small[] = {
		cmocka_unit_test(test_options_invalid),
		cmocka_unit_test(test_window_is_the_day_before_the_minute),
		cmocka_unit_test(test_points_need_spans_first),
		cmocka_unit_test(test_same_seed_same_rows),
		cmocka_unit_test(test_other_seed_or_minute_other_rows),
		cmocka_unit_test(test_cut_at_exact_count),
	};
	const struct CMUnitTest big[] = {
		cmocka_unit_test(test_every_span_valid),
		cmocka_unit_test(test_services_and_sources),
		cmocka_unit_test(test_protocols),
		cmocka_unit_test(test_genai_sessions),
		cmocka_unit_test(test_incidents),
		cmocka_unit_test(test_daily_shape),
		cmocka_unit_test(test_metric_points),
	};
	int failed = cmocka_run_group_tests_name("demo", small, NULL, NULL);

	return failed + cmocka_run_group_tests_name("demo_day", big, setup_big,
						    teardown_big);
}

/*
 * test_otlp.c - unit tests for lib/otlp.  Requests are described once as
 * tables and encoded both as OTLP/JSON text and as protobuf (built with the
 * generated protobuf-c code): both decode to identical rows.  Then the
 * semantic-convention aliases, source classification, metrics, gzip and a
 * gzip bomb, malformed bodies, partial rejection, limits and responses.
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
#include <sys/resource.h>

#include <zlib.h>

#include "base/buf.h"
#include "otlp/otlp.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#define JSON  "application/json"
#define PROTO "application/x-protobuf"

/* Generated type names, shortened for the tests. */
#define PB_ANY	      Opentelemetry__Proto__Common__V1__AnyValue
#define PB_KV	      Opentelemetry__Proto__Common__V1__KeyValue
#define PB_ARRAY      Opentelemetry__Proto__Common__V1__ArrayValue
#define PB_KVLIST     Opentelemetry__Proto__Common__V1__KeyValueList
#define PB_SCOPE      Opentelemetry__Proto__Common__V1__InstrumentationScope
#define PB_RESOURCE   Opentelemetry__Proto__Resource__V1__Resource
#define PB_SPAN	      Opentelemetry__Proto__Trace__V1__Span
#define PB_EVENT      Opentelemetry__Proto__Trace__V1__Span__Event
#define PB_STATUS     Opentelemetry__Proto__Trace__V1__Status
#define PB_SCOPESPANS Opentelemetry__Proto__Trace__V1__ScopeSpans
#define PB_RESSPANS   Opentelemetry__Proto__Trace__V1__ResourceSpans
#define PB_TREQ                                                                \
	Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest
#define PB_MREQ                                                                \
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest
#define PB_RESMETRICS	Opentelemetry__Proto__Metrics__V1__ResourceMetrics
#define PB_SCOPEMETRICS Opentelemetry__Proto__Metrics__V1__ScopeMetrics
#define PB_METRIC	Opentelemetry__Proto__Metrics__V1__Metric
#define PB_NUMPOINT	Opentelemetry__Proto__Metrics__V1__NumberDataPoint
#define PB_HISTPOINT	Opentelemetry__Proto__Metrics__V1__HistogramDataPoint

/* ---- allocation for built messages --------------------------------------- */

static void *allocs[100000];
static size_t n_allocs;

static void *
talloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	assert_non_null(p);
	assert_true(n_allocs < sizeof(allocs) / sizeof(allocs[0]));
	allocs[n_allocs++] = p;
	return p;
}

static void
tfree_all(void)
{
	while (n_allocs > 0)
		free(allocs[--n_allocs]);
}

/* ---- request model ------------------------------------------------------- */

enum vt {
	V_NONE,
	V_STR,
	V_INT,
	V_DBL,
	V_BOOL,
	V_BYTES, /* s holds the raw bytes (NUL-terminated in the table) */
	V_EMPTY,
};

struct tattr {
	const char *key;
	enum vt t;
	const char *s;
	int64_t i;
	double d;
};

#define S(k, v)                                                                \
	{                                                                      \
		k, V_STR, v, 0, 0                                              \
	}
#define I(k, v)                                                                \
	{                                                                      \
		k, V_INT, NULL, v, 0                                           \
	}
#define D(k, v)                                                                \
	{                                                                      \
		k, V_DBL, NULL, 0, v                                           \
	}
#define B(k, v)                                                                \
	{                                                                      \
		k, V_BOOL, NULL, v, 0                                          \
	}
#define MAXA 8

struct tevent {
	const char *name;
	uint64_t time;
	struct tattr attrs[MAXA];
};

struct tspan {
	const char *trace, *span, *parent; /* hex; NULL leaves the field out */
	const char *name;
	int kind;
	uint64_t start, end;
	int code;
	const char *msg;
	struct tattr attrs[MAXA];
	struct tevent events[2];
};

struct tscope {
	const char *name, *version;
	size_t n_spans;
	struct tspan spans[4];
};

struct tres {
	struct tattr attrs[MAXA];
	size_t n_scopes;
	struct tscope scopes[2];
};

struct treq {
	size_t n_res;
	struct tres res[2];
};

#define TRACE1 "0af7651916cd43dd8448eb211c80319c"
#define SPAN1  "b7ad6b7169203331"
#define SPAN2  "00f067aa0ba902b7"
#define T0     1700000000000000000ULL

/* A one-span request with the given span attributes. */
static struct treq
one_span(const struct tattr *attrs, size_t n)
{
	struct treq q = {.n_res = 1};
	struct tspan *s = &q.res[0].scopes[0].spans[0];

	q.res[0].n_scopes = 1;
	q.res[0].attrs[0] = (struct tattr)S("service.name", "checkout");
	q.res[0].scopes[0].name = "test";
	q.res[0].scopes[0].n_spans = 1;
	s->trace = TRACE1;
	s->span = SPAN1;
	s->name = "GET /cart";
	s->kind = 2;
	s->start = T0;
	s->end = T0 + 1000;
	for (size_t i = 0; i < n && i < MAXA; i++)
		s->attrs[i] = attrs[i];
	return q;
}

/* ---- JSON encoding of the model ------------------------------------------ */

static void jput(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void
jput(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	assert_int_equal(buf_vprintf(b, fmt, ap), STATUS_OK);
	va_end(ap);
}

static void
jstr(struct buf *b, const char *s)
{
	jput(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			jput(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			jput(b, "\\u%04x", (unsigned char)*s);
		else
			jput(b, "%c", *s);
	}
	jput(b, "\"");
}

static void
jbase64(struct buf *b, const uint8_t *p, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
				 "opqrstuvwxyz0123456789+/";

	jput(b, "\"");
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		jput(b, "%c%c%c%c", al[v >> 18 & 63], al[v >> 12 & 63],
		     i + 1 < n ? al[v >> 6 & 63] : '=',
		     i + 2 < n ? al[v & 63] : '=');
	}
	jput(b, "\"");
}

static void
jattrs(struct buf *b, const struct tattr *a)
{
	jput(b, "[");
	for (size_t i = 0; i < MAXA && a[i].key; i++) {
		jput(b, "%s{\"key\":", i ? "," : "");
		jstr(b, a[i].key);
		jput(b, ",\"value\":");
		switch (a[i].t) {
		case V_STR:
			jput(b, "{\"stringValue\":");
			jstr(b, a[i].s);
			jput(b, "}");
			break;
		case V_INT: /* as the JavaScript exporter does: a string */
			jput(b, "{\"intValue\":\"%" PRId64 "\"}", a[i].i);
			break;
		case V_DBL: jput(b, "{\"doubleValue\":%.17g}", a[i].d); break;
		case V_BOOL:
			jput(b, "{\"boolValue\":%s}",
			     a[i].i ? "true" : "false");
			break;
		case V_BYTES:
			jput(b, "{\"bytesValue\":");
			jbase64(b, (const uint8_t *)a[i].s, strlen(a[i].s));
			jput(b, "}");
			break;
		default: jput(b, "{}");
		}
		jput(b, "}");
	}
	jput(b, "]");
}

static char *
trace_json(const struct treq *q)
{
	struct buf b;

	buf_init(&b, 1 << 24);
	jput(&b, "{\"resourceSpans\":[");
	for (size_t r = 0; r < q->n_res; r++) {
		const struct tres *res = &q->res[r];

		jput(&b, "%s{\"resource\":{\"attributes\":", r ? "," : "");
		jattrs(&b, res->attrs);
		jput(&b, "},\"scopeSpans\":[");
		for (size_t c = 0; c < res->n_scopes; c++) {
			const struct tscope *sc = &res->scopes[c];

			jput(&b, "%s{", c ? "," : "");
			if (sc->name) {
				jput(&b, "\"scope\":{\"name\":");
				jstr(&b, sc->name);
				if (sc->version) {
					jput(&b, ",\"version\":");
					jstr(&b, sc->version);
				}
				jput(&b, "},");
			}
			jput(&b, "\"spans\":[");
			for (size_t k = 0; k < sc->n_spans; k++) {
				const struct tspan *s = &sc->spans[k];

				jput(&b, "%s{", k ? "," : "");
				if (s->trace)
					jput(&b, "\"traceId\":\"%s\",",
					     s->trace);
				if (s->span)
					jput(&b, "\"spanId\":\"%s\",", s->span);
				if (s->parent)
					jput(&b, "\"parentSpanId\":\"%s\",",
					     s->parent);
				if (s->name) {
					jput(&b, "\"name\":");
					jstr(&b, s->name);
					jput(&b, ",");
				}
				jput(&b,
				     "\"kind\":%d,\"startTimeUnixNano\":"
				     "\"%" PRIu64
				     "\",\"endTimeUnixNano\":\"%" PRIu64
				     "\",\"attributes\":",
				     s->kind, s->start, s->end);
				jattrs(&b, s->attrs);
				jput(&b, ",\"events\":[");
				for (size_t e = 0; e < 2 && s->events[e].name;
				     e++) {
					jput(&b,
					     "%s{\"timeUnixNano\":\"%" PRIu64
					     "\",\"name\":",
					     e ? "," : "", s->events[e].time);
					jstr(&b, s->events[e].name);
					jput(&b, ",\"attributes\":");
					jattrs(&b, s->events[e].attrs);
					jput(&b, "}");
				}
				jput(&b, "]");
				if (s->code || s->msg) {
					jput(&b, ",\"status\":{\"code\":%d",
					     s->code);
					if (s->msg) {
						jput(&b, ",\"message\":");
						jstr(&b, s->msg);
					}
					jput(&b, "}");
				}
				jput(&b, "}");
			}
			jput(&b, "]}");
		}
		jput(&b, "]}");
	}
	jput(&b, "]}");
	return buf_steal(&b, NULL);
}

/* ---- protobuf encoding of the model -------------------------------------- */

static ProtobufCBinaryData
hex_bytes(const char *hex)
{
	ProtobufCBinaryData d = {0, NULL};
	size_t n = strlen(hex);

	d.data = talloc(n / 2 + 1);
	for (size_t i = 0; i + 1 < n; i += 2) {
		unsigned v;

		assert_int_equal(sscanf(hex + i, "%2x", &v), 1);
		d.data[d.len++] = (uint8_t)v;
	}
	return d;
}

static PB_KV **
pb_attrs(const struct tattr *a, size_t *n)
{
	PB_KV **kv = talloc(MAXA * sizeof(*kv));

	for (*n = 0; *n < MAXA && a[*n].key; (*n)++) {
		PB_KV *k = talloc(sizeof(*k));
		PB_ANY *v = talloc(sizeof(*v));

		opentelemetry__proto__common__v1__key_value__init(k);
		opentelemetry__proto__common__v1__any_value__init(v);
		k->key = (char *)a[*n].key;
		k->value = v;
		switch (a[*n].t) {
		case V_STR:
			v->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			v->string_value = (char *)a[*n].s;
			break;
		case V_INT:
			v->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			v->int_value = a[*n].i;
			break;
		case V_DBL:
			v->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
			v->double_value = a[*n].d;
			break;
		case V_BOOL:
			v->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
			v->bool_value = a[*n].i != 0;
			break;
		case V_BYTES:
			v->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE;
			v->bytes_value.data = (uint8_t *)a[*n].s;
			v->bytes_value.len = strlen(a[*n].s);
			break;
		default: break;
		}
		kv[*n] = k;
	}
	return kv;
}

static uint8_t *
pack(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *out;

	*len = protobuf_c_message_get_packed_size(m);
	out = malloc(*len + 1);
	assert_non_null(out);
	assert_int_equal(protobuf_c_message_pack(m, out), *len);
	return out;
}

static PB_TREQ *
trace_pb_msg(const struct treq *q)
{
	PB_TREQ *req = talloc(sizeof(*req));

	opentelemetry__proto__collector__trace__v1__export_trace_service_request__init(
		req);
	req->n_resource_spans = q->n_res;
	req->resource_spans = talloc(q->n_res * sizeof(PB_RESSPANS *));
	for (size_t r = 0; r < q->n_res; r++) {
		const struct tres *res = &q->res[r];
		PB_RESSPANS *rs = talloc(sizeof(*rs));
		PB_RESOURCE *rr = talloc(sizeof(*rr));

		opentelemetry__proto__trace__v1__resource_spans__init(rs);
		opentelemetry__proto__resource__v1__resource__init(rr);
		rr->attributes = pb_attrs(res->attrs, &rr->n_attributes);
		rs->resource = rr;
		rs->n_scope_spans = res->n_scopes;
		rs->scope_spans =
			talloc(res->n_scopes * sizeof(PB_SCOPESPANS *));
		for (size_t c = 0; c < res->n_scopes; c++) {
			const struct tscope *sc = &res->scopes[c];
			PB_SCOPESPANS *ss = talloc(sizeof(*ss));

			opentelemetry__proto__trace__v1__scope_spans__init(ss);
			if (sc->name) {
				ss->scope = talloc(sizeof(PB_SCOPE));
				opentelemetry__proto__common__v1__instrumentation_scope__init(
					ss->scope);
				ss->scope->name = (char *)sc->name;
				if (sc->version)
					ss->scope->version =
						(char *)sc->version;
			}
			ss->n_spans = sc->n_spans;
			ss->spans = talloc(sc->n_spans * sizeof(PB_SPAN *));
			for (size_t k = 0; k < sc->n_spans; k++) {
				const struct tspan *s = &sc->spans[k];
				PB_SPAN *p = talloc(sizeof(*p));
				size_t ne = 0;

				opentelemetry__proto__trace__v1__span__init(p);
				if (s->trace)
					p->trace_id = hex_bytes(s->trace);
				if (s->span)
					p->span_id = hex_bytes(s->span);
				if (s->parent)
					p->parent_span_id =
						hex_bytes(s->parent);
				if (s->name)
					p->name = (char *)s->name;
				p->kind = s->kind;
				p->start_time_unix_nano = s->start;
				p->end_time_unix_nano = s->end;
				p->attributes =
					pb_attrs(s->attrs, &p->n_attributes);
				while (ne < 2 && s->events[ne].name)
					ne++;
				p->n_events = ne;
				p->events = talloc(2 * sizeof(PB_EVENT *));
				for (size_t e = 0; e < ne; e++) {
					PB_EVENT *ev = talloc(sizeof(*ev));

					opentelemetry__proto__trace__v1__span__event__init(
						ev);
					ev->name = (char *)s->events[e].name;
					ev->time_unix_nano = s->events[e].time;
					ev->attributes =
						pb_attrs(s->events[e].attrs,
							 &ev->n_attributes);
					p->events[e] = ev;
				}
				if (s->code || s->msg) {
					p->status = talloc(sizeof(PB_STATUS));
					opentelemetry__proto__trace__v1__status__init(
						p->status);
					p->status->code = s->code;
					if (s->msg)
						p->status->message =
							(char *)s->msg;
				}
				ss->spans[k] = p;
			}
			rs->scope_spans[c] = ss;
		}
		req->resource_spans[r] = rs;
	}
	return req;
}

static uint8_t *
trace_pb(const struct treq *q, size_t *len)
{
	uint8_t *out = pack(&trace_pb_msg(q)->base, len);

	tfree_all();
	return out;
}

/* ---- comparing rows ------------------------------------------------------ */

static void
assert_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void
assert_same_span(const struct otlp_span *a, const struct otlp_span *b)
{
	assert_memory_equal(a->trace_id, b->trace_id, 16);
	assert_memory_equal(a->span_id, b->span_id, 8);
	assert_memory_equal(a->parent_span_id, b->parent_span_id, 8);
	assert_int_equal(a->has_parent, b->has_parent);
	assert_str(a->service_name, b->service_name);
	assert_str(a->service_namespace, b->service_namespace);
	assert_str(a->service_version, b->service_version);
	assert_str(a->k8s_namespace, b->k8s_namespace);
	assert_str(a->k8s_deployment, b->k8s_deployment);
	assert_str(a->k8s_pod, b->k8s_pod);
	assert_str(a->host_name, b->host_name);
	assert_str(a->scope_name, b->scope_name);
	assert_str(a->scope_version, b->scope_version);
	assert_str(a->name, b->name);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->start_unix_nano, b->start_unix_nano);
	assert_int_equal(a->end_unix_nano, b->end_unix_nano);
	assert_int_equal(a->status_code, b->status_code);
	assert_str(a->status_message, b->status_message);
	assert_int_equal(a->source, b->source);
	assert_str(a->http_method, b->http_method);
	assert_str(a->http_route, b->http_route);
	assert_int_equal(a->http_status, b->http_status);
	assert_str(a->rpc_system, b->rpc_system);
	assert_str(a->rpc_service, b->rpc_service);
	assert_str(a->rpc_method, b->rpc_method);
	assert_int_equal(a->grpc_status, b->grpc_status);
	assert_str(a->db_system, b->db_system);
	assert_str(a->db_operation, b->db_operation);
	assert_str(a->db_table, b->db_table);
	assert_str(a->session_id, b->session_id);
	assert_str(a->gen_ai_system, b->gen_ai_system);
	assert_str(a->gen_ai_operation, b->gen_ai_operation);
	assert_str(a->gen_ai_request_model, b->gen_ai_request_model);
	assert_str(a->gen_ai_response_model, b->gen_ai_response_model);
	assert_int_equal(a->input_tokens, b->input_tokens);
	assert_int_equal(a->output_tokens, b->output_tokens);
	assert_str(a->attributes_json, b->attributes_json);
	assert_str(a->resource_json, b->resource_json);
	assert_str(a->events_json, b->events_json);
}

static void
assert_same_batch(const struct otlp_batch *a, const struct otlp_batch *b)
{
	assert_int_equal(a->n_spans, b->n_spans);
	assert_int_equal(a->n_points, b->n_points);
	assert_int_equal(a->rejected, b->rejected);
	assert_string_equal(a->reject_reason, b->reject_reason);
	for (size_t i = 0; i < a->n_spans; i++)
		assert_same_span(&a->spans[i], &b->spans[i]);
}

/*
 * Decodes q as JSON and as protobuf, asserts both give the same rows, and
 * returns the JSON one.
 */
static struct otlp_batch *
decode_both(const struct treq *q, const struct otlp_limits *lim,
	    const struct otlp_source_rules *rules)
{
	struct otlp_batch *bj = NULL, *bp = NULL;
	char err[256];
	char *json = trace_json(q);
	size_t plen;
	uint8_t *pb = trace_pb(q, &plen);

	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json), lim,
					    rules, &bj, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, lim, rules,
					    &bp, err, sizeof(err)),
			 STATUS_OK);
	assert_same_batch(bj, bp);
	otlp_batch_free(bp);
	free(json);
	free(pb);
	return bj;
}

/* ---- JSON and protobuf agree --------------------------------------------- */

static const struct treq
	full_request =
		{
			.n_res = 2,
			.res =
				{
					{
						.attrs =
							{S("service.name",
							   "checkout"),
							 S("service.namespace",
							   "shop"),
							 S("service.version",
							   "1.4.2"),
							 S("k8s.namespace.name",
							   "prod"),
							 S("k8s.deployment."
							   "name",
							   "checkout-web"),
							 S("k8s.pod.name",
							   "checkout-web-7f9c-"
							   "abcde"),
							 S("host.name",
							   "node-3"),
							 S("telemetry.sdk.name",
							   "opentelemetry")},
						.n_scopes = 2,
						.scopes =
							{
								{
									.name = "@opentelemetry/instrumentation-http",
									.version =
										"0.52.0",
									.n_spans =
										2,
									.spans =
										{
											{
												.trace =
													TRACE1,
												.span = SPAN1,
												.name = "GET /cart/:id",
												.kind = 2,
												.start =
													T0,
												.end = T0 +
												       2500000,
												.code = 2,
												.msg = "boom \"quoted\"",
												.attrs = {S("http.request.method",
													    "GET"),
													  S("http.route",
													    "/cart/:id"),
													  I("http.response.status_code",
													    500),
													  I("big",
													    9007199254740993LL),
													  D("ratio",
													    0.25),
													  B("cached", 0),
													  {"blob",
													   V_BYTES, "\x01\x02\xff", 0,
													   0},
													  {"nothing",
													   V_EMPTY, NULL,
													   0, 0}},
												.events =
													{
														{"exception",
														 T0 + 1000,
														 {S(
															  "exception.type", "TypeError"),
														  S("exception.message",
														    "x is\nnull")}}},
											},
											{
												.trace =
													"0AF7651916CD43DD8448EB211C80319C",
												.span = SPAN2,
												.parent =
													SPAN1,
												.name = "SELECT orders",
												.kind = 3,
												.start =
													T0 +
													100,
												.end = T0 +
												       900,
												.attrs =
													{S(
														 "db.system.name",
														 "postgresql"),
													 S("db.operation.name",
													   "SELECT"),
													 S("db.collection.name",
													   "orders")},
											},
										},
								},
								{
									.name = "github.com/grafana/beyla/traces",
									.n_spans =
										1,
									.spans =
										{
											{
												.trace =
													TRACE1,
												.span = "1111111111111111",
												.parent =
													"0000000000000000",
												.name = "GET",
												.kind = 2,
												.start =
													T0,
												.end = T0,
												.code = 1,
											}},
								},
							},
					},
					{
						.attrs =
							{S("service.name",
							   "llm-agent"),
							 S("telemetry.sdk.name",
							   "beyla")},
						.n_scopes = 1,
						.scopes =
							{
								{
									.name = NULL,
									.n_spans =
										1,
									.spans =
										{
											{
												.trace =
													"4bf92f3577b34da6a3ce929d0e0e4736",
												.span = "00f067aa0ba902b8",
												.name = "chat gpt-4o",
												.kind = 3,
												.start =
													T0 +
													5,
												.end = T0 +
												       50,
												.attrs = {S("gen_ai.system",
													    "openai"),
													  S("gen_ai.operation.name",
													    "chat"),
													  S("gen_ai.request.model",
													    "gpt-4o"),
													  S("gen_ai.response.model",
													    "gpt-4o-2024-08-06"),
													  I("gen_ai.usage.prompt_tokens",
													    1200),
													  I("gen_ai.usage.completion_tokens",
													    345),
													  S("session.id",
													    "sess-42")},
											}},
								}},
					},
				},
};

static void
test_json_and_protobuf_agree(void **state)
{
	struct otlp_batch *b;
	const struct otlp_span *s;
	static const uint8_t trace1[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd,
					   0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21,
					   0x1c, 0x80, 0x31, 0x9c};
	static const uint8_t span1[8] = {0xb7, 0xad, 0x6b, 0x71,
					 0x69, 0x20, 0x33, 0x31};

	(void)state;
	b = decode_both(&full_request, NULL, NULL);
	assert_int_equal(b->n_spans, 4);
	assert_int_equal(b->rejected, 0);
	assert_string_equal(b->reject_reason, "");

	s = &b->spans[0];
	assert_memory_equal(s->trace_id, trace1, 16);
	assert_memory_equal(s->span_id, span1, 8);
	assert_false(s->has_parent);
	assert_string_equal(s->service_name, "checkout");
	assert_string_equal(s->service_namespace, "shop");
	assert_string_equal(s->service_version, "1.4.2");
	assert_string_equal(s->k8s_namespace, "prod");
	assert_string_equal(s->k8s_deployment, "checkout-web");
	assert_string_equal(s->k8s_pod, "checkout-web-7f9c-abcde");
	assert_string_equal(s->host_name, "node-3");
	assert_string_equal(s->scope_name,
			    "@opentelemetry/instrumentation-http");
	assert_string_equal(s->scope_version, "0.52.0");
	assert_string_equal(s->name, "GET /cart/:id");
	assert_int_equal(s->kind, 2);
	assert_int_equal(s->start_unix_nano, T0);
	assert_int_equal(s->end_unix_nano, T0 + 2500000);
	assert_int_equal(s->status_code, 2);
	assert_string_equal(s->status_message, "boom \"quoted\"");
	assert_int_equal(s->source, OTLP_SOURCE_OTLP);
	assert_string_equal(s->http_method, "GET");
	assert_string_equal(s->http_route, "/cart/:id");
	assert_int_equal(s->http_status, 500);
	assert_int_equal(s->grpc_status, -1);
	assert_null(s->rpc_system);
	assert_null(s->db_system);
	assert_int_equal(s->input_tokens, -1);
	assert_string_equal(
		s->attributes_json,
		"{\"http.request.method\":\"GET\",\"http.route\":\"/cart/:id\","
		"\"http.response.status_code\":500,\"big\":"
		"\"9007199254740993\",\"ratio\":0.25,\"cached\":false,"
		"\"blob\":\"AQL/\",\"nothing\":null}");
	assert_string_equal(
		s->resource_json,
		"{\"service.name\":\"checkout\",\"service.namespace\":\"shop\","
		"\"service.version\":\"1.4.2\",\"k8s.namespace.name\":\"prod\","
		"\"k8s.deployment.name\":\"checkout-web\",\"k8s.pod.name\":"
		"\"checkout-web-7f9c-abcde\",\"host.name\":\"node-3\","
		"\"telemetry.sdk.name\":\"opentelemetry\"}");
	assert_string_equal(
		s->events_json,
		"[{\"time_unix_nano\":\"1700000000000001000\",\"name\":"
		"\"exception\",\"attributes\":{\"exception.type\":"
		"\"TypeError\",\"exception.message\":\"x is\\nnull\"}}]");

	s = &b->spans[1]; /* upper-case hex, a parent, db columns */
	assert_memory_equal(s->trace_id, trace1, 16);
	assert_true(s->has_parent);
	assert_memory_equal(s->parent_span_id, span1, 8);
	assert_string_equal(s->db_system, "postgresql");
	assert_string_equal(s->db_operation, "SELECT");
	assert_string_equal(s->db_table, "orders");
	assert_null(s->status_message);
	assert_int_equal(s->status_code, 0);
	assert_string_equal(s->events_json, "[]");

	s = &b->spans[2]; /* all-zero parent: a root; eBPF scope */
	assert_false(s->has_parent);
	assert_int_equal(s->source, OTLP_SOURCE_EBPF);
	assert_int_equal(s->status_code, 1);
	assert_string_equal(s->attributes_json, "{}");
	assert_ptr_equal(s->resource_json, b->spans[0].resource_json);

	s = &b->spans[3]; /* second resource: beyla SDK, no scope */
	assert_int_equal(s->source, OTLP_SOURCE_EBPF);
	assert_string_equal(s->service_name, "llm-agent");
	assert_null(s->scope_name);
	assert_string_equal(s->gen_ai_system, "openai");
	assert_string_equal(s->gen_ai_operation, "chat");
	assert_string_equal(s->gen_ai_request_model, "gpt-4o");
	assert_string_equal(s->gen_ai_response_model, "gpt-4o-2024-08-06");
	assert_int_equal(s->input_tokens, 1200);
	assert_int_equal(s->output_tokens, 345);
	assert_string_equal(s->session_id, "sess-42");
	otlp_batch_free(b);
}

/* ---- semantic conventions ------------------------------------------------ */

enum col {
	C_HTTP_METHOD,
	C_HTTP_ROUTE,
	C_HTTP_STATUS,
	C_RPC_SYSTEM,
	C_RPC_SERVICE,
	C_RPC_METHOD,
	C_GRPC_STATUS,
	C_DB_SYSTEM,
	C_DB_OPERATION,
	C_DB_TABLE,
	C_SESSION,
	C_GENAI_SYSTEM,
	C_GENAI_OPERATION,
	C_GENAI_REQ_MODEL,
	C_GENAI_RESP_MODEL,
	C_INPUT_TOKENS,
	C_OUTPUT_TOKENS,
};

struct alias_case {
	const char *name;
	struct tattr attrs[4];
	enum col col;
	const char *want_str; /* for string columns; NULL: absent */
	int64_t want_int;     /* for integer columns; -1: absent */
};

static const struct alias_case alias_cases[] = {
	{"http.request.method",
	 {S("http.request.method", "POST")},
	 C_HTTP_METHOD,
	 "POST",
	 0},
	{"http.method (old)",
	 {S("http.method", "PUT")},
	 C_HTTP_METHOD,
	 "PUT",
	 0},
	{"new method wins, listed second",
	 {S("http.method", "OLD"), S("http.request.method", "NEW")},
	 C_HTTP_METHOD,
	 "NEW",
	 0},
	{"new method wins, listed first",
	 {S("http.request.method", "NEW"), S("http.method", "OLD")},
	 C_HTTP_METHOD,
	 "NEW",
	 0},
	{"empty new name falls back",
	 {S("http.request.method", ""), S("http.method", "GET")},
	 C_HTTP_METHOD,
	 "GET",
	 0},
	{"http.route",
	 {S("http.route", "/users/{id}")},
	 C_HTTP_ROUTE,
	 "/users/{id}",
	 0},
	{"route beats url.path",
	 {S("url.path", "/users/7"), S("http.route", "/users/{id}")},
	 C_HTTP_ROUTE,
	 "/users/{id}",
	 0},
	{"url.path", {S("url.path", "/users/7")}, C_HTTP_ROUTE, "/users/7", 0},
	{"http.target without query",
	 {S("http.target", "/search?q=x#frag")},
	 C_HTTP_ROUTE,
	 "/search",
	 0},
	{"url.path beats http.target",
	 {S("http.target", "/a?x"), S("url.path", "/b")},
	 C_HTTP_ROUTE,
	 "/b",
	 0},
	{"url.full path",
	 {S("url.full", "https://api.example.com:8443/v1/pay?id=3")},
	 C_HTTP_ROUTE,
	 "/v1/pay",
	 0},
	{"http.url path",
	 {S("http.url", "http://h/x/y#z")},
	 C_HTTP_ROUTE,
	 "/x/y",
	 0},
	{"url without path",
	 {S("url.full", "http://h?q=1")},
	 C_HTTP_ROUTE,
	 "/",
	 0},
	{"http.response.status_code",
	 {I("http.response.status_code", 404)},
	 C_HTTP_STATUS,
	 NULL,
	 404},
	{"http.status_code (old)",
	 {I("http.status_code", 503)},
	 C_HTTP_STATUS,
	 NULL,
	 503},
	{"status as a string",
	 {S("http.response.status_code", "201")},
	 C_HTTP_STATUS,
	 NULL,
	 201},
	{"status as a double",
	 {D("http.status_code", 302.0)},
	 C_HTTP_STATUS,
	 NULL,
	 302},
	{"new status wins",
	 {I("http.status_code", 500), I("http.response.status_code", 200)},
	 C_HTTP_STATUS,
	 NULL,
	 200},
	{"no status", {S("other", "x")}, C_HTTP_STATUS, NULL, -1},
	{"status not a number",
	 {S("http.status_code", "OK")},
	 C_HTTP_STATUS,
	 NULL,
	 -1},
	{"rpc.system.name",
	 {S("rpc.system.name", "grpc")},
	 C_RPC_SYSTEM,
	 "grpc",
	 0},
	{"rpc.system (old)",
	 {S("rpc.system", "dubbo")},
	 C_RPC_SYSTEM,
	 "dubbo",
	 0},
	{"rpc.service",
	 {S("rpc.service", "shop.Cart")},
	 C_RPC_SERVICE,
	 "shop.Cart",
	 0},
	{"rpc.method plain",
	 {S("rpc.method", "AddItem")},
	 C_RPC_METHOD,
	 "AddItem",
	 0},
	{"qualified rpc.method: method",
	 {S("rpc.method", "shop.Cart/AddItem")},
	 C_RPC_METHOD,
	 "AddItem",
	 0},
	{"qualified rpc.method: service",
	 {S("rpc.method", "/shop.Cart/AddItem")},
	 C_RPC_SERVICE,
	 "shop.Cart",
	 0},
	{"rpc.service kept over qualified method",
	 {S("rpc.service", "svc"), S("rpc.method", "a.B/C")},
	 C_RPC_SERVICE,
	 "svc",
	 0},
	{"rpc.grpc.status_code",
	 {I("rpc.grpc.status_code", 14)},
	 C_GRPC_STATUS,
	 NULL,
	 14},
	{"rpc.grpc.status_code zero",
	 {I("rpc.grpc.status_code", 0)},
	 C_GRPC_STATUS,
	 NULL,
	 0},
	{"rpc.response.status_code name",
	 {S("rpc.response.status_code", "DEADLINE_EXCEEDED")},
	 C_GRPC_STATUS,
	 NULL,
	 4},
	{"rpc.response.status_code number for grpc",
	 {S("rpc.system.name", "grpc"), S("rpc.response.status_code", "5")},
	 C_GRPC_STATUS,
	 NULL,
	 5},
	{"rpc.response.status_code of json-rpc",
	 {S("rpc.system.name", "jsonrpc"),
	  S("rpc.response.status_code", "-32602")},
	 C_GRPC_STATUS,
	 NULL,
	 -1},
	{"grpc int beats response code",
	 {S("rpc.response.status_code", "OK"), I("rpc.grpc.status_code", 2)},
	 C_GRPC_STATUS,
	 NULL,
	 2},
	{"db.system.name",
	 {S("db.system.name", "postgresql")},
	 C_DB_SYSTEM,
	 "postgresql",
	 0},
	{"db.system (old)", {S("db.system", "mysql")}, C_DB_SYSTEM, "mysql", 0},
	{"db.operation.name",
	 {S("db.operation.name", "INSERT")},
	 C_DB_OPERATION,
	 "INSERT",
	 0},
	{"db.operation (old)",
	 {S("db.operation", "UPDATE")},
	 C_DB_OPERATION,
	 "UPDATE",
	 0},
	{"new operation wins",
	 {S("db.operation", "OLD"), S("db.operation.name", "NEW")},
	 C_DB_OPERATION,
	 "NEW",
	 0},
	{"db.collection.name",
	 {S("db.collection.name", "users")},
	 C_DB_TABLE,
	 "users",
	 0},
	{"db.sql.table (old)",
	 {S("db.sql.table", "orders")},
	 C_DB_TABLE,
	 "orders",
	 0},
	{"db.mongodb.collection (old)",
	 {S("db.mongodb.collection", "carts")},
	 C_DB_TABLE,
	 "carts",
	 0},
	{"db.cassandra.table (old)",
	 {S("db.cassandra.table", "events")},
	 C_DB_TABLE,
	 "events",
	 0},
	{"collection beats sql table",
	 {S("db.sql.table", "old"), S("db.collection.name", "new")},
	 C_DB_TABLE,
	 "new",
	 0},
	{"session.id", {S("session.id", "s-1")}, C_SESSION, "s-1", 0},
	{"gen_ai.conversation.id",
	 {S("gen_ai.conversation.id", "conv-9")},
	 C_SESSION,
	 "conv-9",
	 0},
	{"session.id beats conversation",
	 {S("gen_ai.conversation.id", "c"), S("session.id", "s")},
	 C_SESSION,
	 "s",
	 0},
	{"gen_ai.provider.name",
	 {S("gen_ai.provider.name", "anthropic")},
	 C_GENAI_SYSTEM,
	 "anthropic",
	 0},
	{"gen_ai.system (old)",
	 {S("gen_ai.system", "openai")},
	 C_GENAI_SYSTEM,
	 "openai",
	 0},
	{"provider beats system",
	 {S("gen_ai.system", "old"), S("gen_ai.provider.name", "new")},
	 C_GENAI_SYSTEM,
	 "new",
	 0},
	{"gen_ai.operation.name",
	 {S("gen_ai.operation.name", "embeddings")},
	 C_GENAI_OPERATION,
	 "embeddings",
	 0},
	{"gen_ai.request.model",
	 {S("gen_ai.request.model", "claude-sonnet-4")},
	 C_GENAI_REQ_MODEL,
	 "claude-sonnet-4",
	 0},
	{"gen_ai.response.model",
	 {S("gen_ai.response.model", "m-2025")},
	 C_GENAI_RESP_MODEL,
	 "m-2025",
	 0},
	{"gen_ai.usage.input_tokens",
	 {I("gen_ai.usage.input_tokens", 77)},
	 C_INPUT_TOKENS,
	 NULL,
	 77},
	{"gen_ai.usage.prompt_tokens (old)",
	 {I("gen_ai.usage.prompt_tokens", 78)},
	 C_INPUT_TOKENS,
	 NULL,
	 78},
	{"input beats prompt",
	 {I("gen_ai.usage.prompt_tokens", 1),
	  I("gen_ai.usage.input_tokens", 2)},
	 C_INPUT_TOKENS,
	 NULL,
	 2},
	{"gen_ai.usage.output_tokens",
	 {I("gen_ai.usage.output_tokens", 12)},
	 C_OUTPUT_TOKENS,
	 NULL,
	 12},
	{"gen_ai.usage.completion_tokens (old)",
	 {I("gen_ai.usage.completion_tokens", 13)},
	 C_OUTPUT_TOKENS,
	 NULL,
	 13},
	{"negative tokens are absent",
	 {I("gen_ai.usage.output_tokens", -5)},
	 C_OUTPUT_TOKENS,
	 NULL,
	 -1},
	{"int attribute as text",
	 {I("db.system.name", 7)},
	 C_DB_SYSTEM,
	 "7",
	 0},
	{"bool attribute as text", {B("session.id", 1)}, C_SESSION, "true", 0},
};

static const char *
col_str(const struct otlp_span *s, enum col c)
{
	switch (c) {
	case C_HTTP_METHOD: return s->http_method;
	case C_HTTP_ROUTE: return s->http_route;
	case C_RPC_SYSTEM: return s->rpc_system;
	case C_RPC_SERVICE: return s->rpc_service;
	case C_RPC_METHOD: return s->rpc_method;
	case C_DB_SYSTEM: return s->db_system;
	case C_DB_OPERATION: return s->db_operation;
	case C_DB_TABLE: return s->db_table;
	case C_SESSION: return s->session_id;
	case C_GENAI_SYSTEM: return s->gen_ai_system;
	case C_GENAI_OPERATION: return s->gen_ai_operation;
	case C_GENAI_REQ_MODEL: return s->gen_ai_request_model;
	case C_GENAI_RESP_MODEL: return s->gen_ai_response_model;
	default: fail_msg("not a string column");
	}
	return NULL;
}

static int64_t
col_int(const struct otlp_span *s, enum col c)
{
	switch (c) {
	case C_HTTP_STATUS: return s->http_status;
	case C_GRPC_STATUS: return s->grpc_status;
	case C_INPUT_TOKENS: return s->input_tokens;
	case C_OUTPUT_TOKENS: return s->output_tokens;
	default: return INT64_MIN;
	}
}

static void
test_semantic_convention_aliases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(alias_cases) / sizeof(alias_cases[0]);
	     i++) {
		const struct alias_case *c = &alias_cases[i];
		struct treq q = one_span(c->attrs, 4);
		struct otlp_batch *b;

		print_message("alias case: %s\n", c->name);
		b = decode_both(&q, NULL, NULL);
		assert_int_equal(b->n_spans, 1);
		if (col_int(&b->spans[0], c->col) != INT64_MIN)
			assert_int_equal(col_int(&b->spans[0], c->col),
					 c->want_int);
		else
			assert_str(col_str(&b->spans[0], c->col), c->want_str);
		otlp_batch_free(b);
	}
}

/* ---- source classification ----------------------------------------------- */

struct class_case {
	const char *name;
	const char *sdk;   /* telemetry.sdk.name, NULL for none */
	const char *scope; /* scope name, NULL for none */
	bool custom_rules;
	enum otlp_source want;
};

static const char *const custom_sdks[] = {"my-probe"};
static const char *const custom_scopes[] = {"ebpf/"};
static const struct otlp_source_rules custom_rules = {custom_sdks, 1,
						      custom_scopes, 1};

static const struct class_case class_cases[] = {
	{"beyla sdk", "beyla", "other", false, OTLP_SOURCE_EBPF},
	{"obi sdk", "opentelemetry-ebpf-instrumentation", NULL, false,
	 OTLP_SOURCE_EBPF},
	{"beyla scope", "opentelemetry", "github.com/grafana/beyla", false,
	 OTLP_SOURCE_EBPF},
	{"beyla scope prefix", NULL, "github.com/grafana/beyla/pkg/export",
	 false, OTLP_SOURCE_EBPF},
	{"obi scope prefix", NULL, "go.opentelemetry.io/obi/pkg/export/otel",
	 false, OTLP_SOURCE_EBPF},
	{"sdk", "opentelemetry", "@opentelemetry/instrumentation-http", false,
	 OTLP_SOURCE_OTLP},
	{"nothing", NULL, NULL, false, OTLP_SOURCE_OTLP},
	{"sdk name is exact", "beyla-fork", NULL, false, OTLP_SOURCE_OTLP},
	{"sdk name is case-sensitive", "Beyla", NULL, false, OTLP_SOURCE_OTLP},
	{"scope must start with the prefix", NULL, "x/github.com/grafana/beyla",
	 false, OTLP_SOURCE_OTLP},
	{"custom sdk", "my-probe", NULL, true, OTLP_SOURCE_EBPF},
	{"custom scope", NULL, "ebpf/http", true, OTLP_SOURCE_EBPF},
	{"defaults off with custom rules", "beyla", NULL, true,
	 OTLP_SOURCE_OTLP},
};

static void
test_source_classification(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(class_cases) / sizeof(class_cases[0]);
	     i++) {
		const struct class_case *c = &class_cases[i];
		struct treq q = one_span(NULL, 0);
		struct otlp_batch *b;

		print_message("classification case: %s\n", c->name);
		q.res[0].attrs[1] =
			c->sdk ? (struct tattr)S("telemetry.sdk.name", c->sdk)
			       : (struct tattr){0};
		q.res[0].scopes[0].name = c->scope;
		b = decode_both(&q, NULL,
				c->custom_rules ? &custom_rules : NULL);
		assert_int_equal(b->n_spans, 1);
		assert_int_equal(b->spans[0].source, c->want);
		assert_string_equal(otlp_source_name(b->spans[0].source),
				    c->want == OTLP_SOURCE_EBPF ? "ebpf"
								: "otlp");
		otlp_batch_free(b);
	}
}

/* ---- partial rejection --------------------------------------------------- */

struct reject_case {
	const char *name;
	const char *trace, *span, *parent, *span_name;
	uint64_t start, end;
	const char *reason; /* substring of the reason; NULL: accepted */
};

static const struct reject_case reject_cases[] = {
	{"valid", TRACE1, SPAN1, NULL, "ok", T0, T0 + 1, NULL},
	{"short trace id", "0af7651916cd43dd", SPAN1, NULL, "x", T0, T0,
	 "trace id must be 16 bytes"},
	{"long span id", TRACE1, "b7ad6b716920333100", NULL, "x", T0, T0,
	 "span id must be 8 bytes"},
	{"zero trace id", "00000000000000000000000000000000", SPAN1, NULL, "x",
	 T0, T0, "trace id"},
	{"zero span id", TRACE1, "0000000000000000", NULL, "x", T0, T0,
	 "span id"},
	{"missing trace id", NULL, SPAN1, NULL, "x", T0, T0, "trace id"},
	{"missing span id", TRACE1, NULL, NULL, "x", T0, T0, "span id"},
	{"short parent", TRACE1, SPAN1, "b7ad", "x", T0, T0, "parent span id"},
	{"missing name", TRACE1, SPAN1, NULL, NULL, T0, T0, "has no name"},
	{"empty name", TRACE1, SPAN1, NULL, "", T0, T0, "has no name"},
	{"no start", TRACE1, SPAN1, NULL, "x", 0, T0, "no start time"},
	{"end before start", TRACE1, SPAN1, NULL, "x", T0 + 5, T0 + 4,
	 "ends before it starts"},
};

static void
test_partial_rejection(void **state)
{
	struct treq q = {.n_res = 1};
	struct tscope *sc = &q.res[0].scopes[0];
	size_t n_cases = sizeof(reject_cases) / sizeof(reject_cases[0]);
	struct otlp_batch *b;

	(void)state;
	/* each case alone, then all of them in one request */
	for (size_t i = 0; i < n_cases; i++) {
		const struct reject_case *c = &reject_cases[i];
		struct treq one = one_span(NULL, 0);
		struct tspan *s = &one.res[0].scopes[0].spans[0];

		print_message("rejection case: %s\n", c->name);
		s->trace = c->trace;
		s->span = c->span;
		s->parent = c->parent;
		s->name = c->span_name;
		s->start = c->start;
		s->end = c->end;
		b = decode_both(&one, NULL, NULL);
		assert_int_equal(b->n_spans, c->reason ? 0 : 1);
		assert_int_equal(b->rejected, c->reason ? 1 : 0);
		if (c->reason)
			assert_non_null(strstr(b->reject_reason, c->reason));
		else
			assert_string_equal(b->reject_reason, "");
		otlp_batch_free(b);
	}

	q.res[0].n_scopes = 1;
	sc->n_spans = 4;
	for (size_t i = 0; i < 4; i++) {
		sc->spans[i] = one_span(NULL, 0).res[0].scopes[0].spans[0];
	}
	sc->spans[1].end = sc->spans[1].start - 1;
	sc->spans[3].trace = "abcd";
	b = decode_both(&q, NULL, NULL);
	assert_int_equal(b->n_spans, 2);
	assert_int_equal(b->rejected, 2);
	/* the first reason is kept, naming where the span was */
	assert_string_equal(b->reject_reason,
			    "resource 0, scope 0, span 1: span ends before it "
			    "starts");
	otlp_batch_free(b);
}

/* JSON-only id spellings: bad hex is rejected with the span, base64 (the
 * plain proto3 mapping some exporters use) is accepted. */
static void
test_json_ids(void **state)
{
	static const struct {
		const char *trace, *span, *parent;
		bool ok, has_parent;
	} cases[] = {
		{TRACE1, SPAN1, NULL, true, false},
		{"0AF7651916cd43DD8448eb211c80319c", "B7AD6B7169203331", NULL,
		 true, false},
		{"0af7651916cd43dd8448eb211c80319g", SPAN1, NULL, false, false},
		{TRACE1, "b7ad6b716920333z", NULL, false, false},
		{TRACE1, "b7ad6b716920333", NULL, false, false},
		{TRACE1, SPAN1, "not-hex!", false, false},
		{TRACE1, SPAN1, "", true, false},
		{"CvdlGRbNQ92ESOshHIAxnA==", "t61rcWkgMzE=", NULL, true, false},
		{"CvdlGRbNQ92ESOshHIAxnA", "t61rcWkgMzE", "t61rcWkgMzE=", true,
		 true},
		{"", SPAN1, NULL, false, false},
	};
	static const uint8_t trace1[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd,
					   0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21,
					   0x1c, 0x80, 0x31, 0x9c};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[512];
		struct otlp_batch *b = NULL;
		char err[256];

		snprintf(body, sizeof(body),
			 "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
			 "\"traceId\":\"%s\",\"spanId\":\"%s\",%s%s%s"
			 "\"name\":\"n\",\"startTimeUnixNano\":\"1\","
			 "\"endTimeUnixNano\":\"2\"}]}]}]}",
			 cases[i].trace, cases[i].span,
			 cases[i].parent ? "\"parentSpanId\":\"" : "",
			 cases[i].parent ? cases[i].parent : "",
			 cases[i].parent ? "\"," : "");
		print_message("id case %zu: %s\n", i, body);
		assert_int_equal(otlp_decode_traces(JSON, NULL, body,
						    strlen(body), NULL, NULL,
						    &b, err, sizeof(err)),
				 STATUS_OK);
		assert_int_equal(b->n_spans, cases[i].ok ? 1 : 0);
		assert_int_equal(b->rejected, cases[i].ok ? 0 : 1);
		if (cases[i].ok) {
			assert_memory_equal(b->spans[0].trace_id, trace1, 16);
			assert_int_equal(b->spans[0].has_parent,
					 cases[i].has_parent);
		}
		otlp_batch_free(b);
	}
}

/* ---- metrics ------------------------------------------------------------- */

enum mtype {
	M_GAUGE = 1,
	M_SUM,
	M_HIST,
	M_EXPHIST,
	M_SUMMARY,
};

struct tpoint {
	uint64_t start, time;
	bool is_int, no_value;
	int64_t iv;
	double dv;
	uint32_t flags;
	struct tattr attrs[MAXA];
	uint64_t count;
	bool has_sum, has_min, has_max;
	double sum, min, max;
	size_t nb, nc;
	double bounds[4];
	uint64_t counts[5];
};

struct tmetric {
	const char *name, *unit, *desc;
	enum mtype type;
	int temporality;
	bool monotonic;
	size_t n;
	struct tpoint points[3];
};

struct tmreq {
	struct tattr res[MAXA];
	const char *scope;
	size_t n;
	struct tmetric metrics[6];
};

static char *
metrics_json(const struct tmreq *q)
{
	static const char *const kinds[] = {
		"",	  "gauge", "sum", "histogram", "exponentialHistogram",
		"summary"};
	struct buf b;

	buf_init(&b, 1 << 24);
	jput(&b, "{\"resourceMetrics\":[{\"resource\":{\"attributes\":");
	jattrs(&b, q->res);
	jput(&b,
	     "},\"scopeMetrics\":[{\"scope\":{\"name\":\"%s\"},"
	     "\"metrics\":[",
	     q->scope);
	for (size_t m = 0; m < q->n; m++) {
		const struct tmetric *mt = &q->metrics[m];

		jput(&b, "%s{", m ? "," : "");
		if (mt->name)
			jput(&b, "\"name\":\"%s\",", mt->name);
		if (mt->unit)
			jput(&b, "\"unit\":\"%s\",", mt->unit);
		if (mt->desc)
			jput(&b, "\"description\":\"%s\",", mt->desc);
		jput(&b, "\"%s\":{", kinds[mt->type]);
		if (mt->type == M_SUM || mt->type == M_HIST ||
		    mt->type == M_EXPHIST)
			jput(&b, "\"aggregationTemporality\":%d,",
			     mt->temporality);
		if (mt->type == M_SUM)
			jput(&b, "\"isMonotonic\":%s,",
			     mt->monotonic ? "true" : "false");
		jput(&b, "\"dataPoints\":[");
		for (size_t k = 0; k < mt->n; k++) {
			const struct tpoint *p = &mt->points[k];

			jput(&b, "%s{", k ? "," : "");
			if (mt->type == M_EXPHIST || mt->type == M_SUMMARY) {
				jput(&b, "\"count\":\"3\",\"sum\":1.5}");
				continue;
			}
			jput(&b,
			     "\"startTimeUnixNano\":\"%" PRIu64
			     "\",\"timeUnixNano\":%" PRIu64 ",\"flags\":%u,"
			     "\"attributes\":",
			     p->start, p->time, p->flags);
			jattrs(&b, p->attrs);
			if (mt->type == M_HIST) {
				jput(&b, ",\"count\":\"%" PRIu64 "\"",
				     p->count);
				if (p->has_sum)
					jput(&b, ",\"sum\":%.17g", p->sum);
				if (p->has_min)
					jput(&b, ",\"min\":%.17g", p->min);
				if (p->has_max)
					jput(&b, ",\"max\":%.17g", p->max);
				jput(&b, ",\"explicitBounds\":[");
				for (size_t i = 0; i < p->nb; i++)
					jput(&b, "%s%.17g", i ? "," : "",
					     p->bounds[i]);
				jput(&b, "],\"bucketCounts\":[");
				for (size_t i = 0; i < p->nc; i++)
					jput(&b, "%s\"%" PRIu64 "\"",
					     i ? "," : "", p->counts[i]);
				jput(&b, "]");
			} else if (!p->no_value) {
				if (p->is_int)
					jput(&b, ",\"asInt\":\"%" PRId64 "\"",
					     p->iv);
				else if (isnan(p->dv))
					jput(&b, ",\"asDouble\":\"NaN\"");
				else
					jput(&b, ",\"asDouble\":%.17g", p->dv);
			}
			jput(&b, "}");
		}
		jput(&b, "]}}");
	}
	jput(&b, "]}]}]}");
	return buf_steal(&b, NULL);
}

static uint8_t *
metrics_pb(const struct tmreq *q, size_t *len)
{
	PB_MREQ *req = talloc(sizeof(*req));
	PB_RESMETRICS *rm = talloc(sizeof(*rm));
	PB_SCOPEMETRICS *sm = talloc(sizeof(*sm));
	uint8_t *out;

	opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__init(
		req);
	opentelemetry__proto__metrics__v1__resource_metrics__init(rm);
	opentelemetry__proto__metrics__v1__scope_metrics__init(sm);
	req->n_resource_metrics = 1;
	req->resource_metrics = talloc(sizeof(PB_RESMETRICS *));
	req->resource_metrics[0] = rm;
	rm->resource = talloc(sizeof(PB_RESOURCE));
	opentelemetry__proto__resource__v1__resource__init(rm->resource);
	rm->resource->attributes =
		pb_attrs(q->res, &rm->resource->n_attributes);
	rm->n_scope_metrics = 1;
	rm->scope_metrics = talloc(sizeof(PB_SCOPEMETRICS *));
	rm->scope_metrics[0] = sm;
	sm->scope = talloc(sizeof(PB_SCOPE));
	opentelemetry__proto__common__v1__instrumentation_scope__init(
		sm->scope);
	sm->scope->name = (char *)q->scope;
	sm->n_metrics = q->n;
	sm->metrics = talloc(q->n * sizeof(PB_METRIC *));
	for (size_t m = 0; m < q->n; m++) {
		const struct tmetric *mt = &q->metrics[m];
		PB_METRIC *pm = talloc(sizeof(*pm));
		PB_NUMPOINT **np = talloc(3 * sizeof(*np));
		PB_HISTPOINT **hp = talloc(3 * sizeof(*hp));

		opentelemetry__proto__metrics__v1__metric__init(pm);
		if (mt->name)
			pm->name = (char *)mt->name;
		if (mt->unit)
			pm->unit = (char *)mt->unit;
		if (mt->desc)
			pm->description = (char *)mt->desc;
		for (size_t k = 0; k < mt->n; k++) {
			const struct tpoint *p = &mt->points[k];

			np[k] = talloc(sizeof(PB_NUMPOINT));
			opentelemetry__proto__metrics__v1__number_data_point__init(
				np[k]);
			np[k]->start_time_unix_nano = p->start;
			np[k]->time_unix_nano = p->time;
			np[k]->flags = p->flags;
			np[k]->attributes =
				pb_attrs(p->attrs, &np[k]->n_attributes);
			if (p->no_value)
				;
			else if (p->is_int) {
				np[k]->value_case =
					OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
				np[k]->as_int = p->iv;
			} else {
				np[k]->value_case =
					OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
				np[k]->as_double = p->dv;
			}
			hp[k] = talloc(sizeof(PB_HISTPOINT));
			opentelemetry__proto__metrics__v1__histogram_data_point__init(
				hp[k]);
			hp[k]->start_time_unix_nano = p->start;
			hp[k]->time_unix_nano = p->time;
			hp[k]->flags = p->flags;
			hp[k]->attributes =
				pb_attrs(p->attrs, &hp[k]->n_attributes);
			hp[k]->count = p->count;
			if (p->has_sum) {
				hp[k]->sum_present_case =
					OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__SUM_PRESENT_SUM;
				hp[k]->sum = p->sum;
			}
			if (p->has_min) {
				hp[k]->min_present_case =
					OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__MIN_PRESENT_MIN;
				hp[k]->min = p->min;
			}
			if (p->has_max) {
				hp[k]->max_present_case =
					OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__MAX_PRESENT_MAX;
				hp[k]->max = p->max;
			}
			hp[k]->n_explicit_bounds = p->nb;
			hp[k]->explicit_bounds = (double *)p->bounds;
			hp[k]->n_bucket_counts = p->nc;
			hp[k]->bucket_counts = (uint64_t *)p->counts;
		}
		switch (mt->type) {
		case M_GAUGE:
			pm->data_case =
				OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
			pm->gauge = talloc(sizeof(
				Opentelemetry__Proto__Metrics__V1__Gauge));
			opentelemetry__proto__metrics__v1__gauge__init(
				pm->gauge);
			pm->gauge->n_data_points = mt->n;
			pm->gauge->data_points = np;
			break;
		case M_SUM:
			pm->data_case =
				OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
			pm->sum = talloc(
				sizeof(Opentelemetry__Proto__Metrics__V1__Sum));
			opentelemetry__proto__metrics__v1__sum__init(pm->sum);
			pm->sum->n_data_points = mt->n;
			pm->sum->data_points = np;
			pm->sum->aggregation_temporality = mt->temporality;
			pm->sum->is_monotonic = mt->monotonic;
			break;
		case M_HIST:
			pm->data_case =
				OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM;
			pm->histogram = talloc(sizeof(
				Opentelemetry__Proto__Metrics__V1__Histogram));
			opentelemetry__proto__metrics__v1__histogram__init(
				pm->histogram);
			pm->histogram->n_data_points = mt->n;
			pm->histogram->data_points = hp;
			pm->histogram->aggregation_temporality =
				mt->temporality;
			break;
		case M_EXPHIST: {
			Opentelemetry__Proto__Metrics__V1__ExponentialHistogramDataPoint
				**ep = talloc(3 * sizeof(*ep));

			for (size_t k = 0; k < mt->n; k++) {
				ep[k] = talloc(sizeof(**ep));
				opentelemetry__proto__metrics__v1__exponential_histogram_data_point__init(
					ep[k]);
			}
			pm->data_case =
				OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM;
			pm->exponential_histogram = talloc(sizeof(
				Opentelemetry__Proto__Metrics__V1__ExponentialHistogram));
			opentelemetry__proto__metrics__v1__exponential_histogram__init(
				pm->exponential_histogram);
			pm->exponential_histogram->n_data_points = mt->n;
			pm->exponential_histogram->data_points = ep;
			pm->exponential_histogram->aggregation_temporality =
				mt->temporality;
			break;
		}
		case M_SUMMARY: {
			Opentelemetry__Proto__Metrics__V1__SummaryDataPoint *
				*sp = talloc(3 * sizeof(*sp));

			for (size_t k = 0; k < mt->n; k++) {
				sp[k] = talloc(sizeof(**sp));
				opentelemetry__proto__metrics__v1__summary_data_point__init(
					sp[k]);
			}
			pm->data_case =
				OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY;
			pm->summary = talloc(sizeof(
				Opentelemetry__Proto__Metrics__V1__Summary));
			opentelemetry__proto__metrics__v1__summary__init(
				pm->summary);
			pm->summary->n_data_points = mt->n;
			pm->summary->data_points = sp;
			break;
		}
		}
		sm->metrics[m] = pm;
	}
	out = pack(&req->base, len);
	tfree_all();
	return out;
}

static void
assert_same_double(double a, double b)
{
	if (isnan(a) || isnan(b))
		assert_true(isnan(a) && isnan(b));
	else
		assert_true(a == b);
}

static void
assert_same_point(const struct otlp_point *a, const struct otlp_point *b)
{
	assert_int_equal(a->type, b->type);
	assert_str(a->name, b->name);
	assert_str(a->unit, b->unit);
	assert_str(a->description, b->description);
	assert_str(a->service_name, b->service_name);
	assert_str(a->service_namespace, b->service_namespace);
	assert_str(a->scope_name, b->scope_name);
	assert_int_equal(a->source, b->source);
	assert_int_equal(a->start_unix_nano, b->start_unix_nano);
	assert_int_equal(a->time_unix_nano, b->time_unix_nano);
	assert_int_equal(a->flags, b->flags);
	assert_same_double(a->value, b->value);
	assert_int_equal(a->is_int, b->is_int);
	assert_int_equal(a->int_value, b->int_value);
	assert_int_equal(a->temporality, b->temporality);
	assert_int_equal(a->monotonic, b->monotonic);
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->has_sum, b->has_sum);
	assert_int_equal(a->has_min, b->has_min);
	assert_int_equal(a->has_max, b->has_max);
	assert_same_double(a->sum, b->sum);
	assert_same_double(a->min, b->min);
	assert_same_double(a->max, b->max);
	assert_int_equal(a->n_bounds, b->n_bounds);
	assert_int_equal(a->n_bucket_counts, b->n_bucket_counts);
	if (a->n_bounds)
		assert_memory_equal(a->bounds, b->bounds,
				    a->n_bounds * sizeof(double));
	if (a->n_bucket_counts)
		assert_memory_equal(a->bucket_counts, b->bucket_counts,
				    a->n_bucket_counts * sizeof(uint64_t));
	assert_str(a->attributes_json, b->attributes_json);
	assert_str(a->resource_json, b->resource_json);
}

/* The same request as JSON text and protobuf bytes, each decoded. */
static void
decode_metrics_pair(const char *json, const uint8_t *pb, size_t plen,
		    struct otlp_batch **bj, struct otlp_batch **bp)
{
	char err[256];

	if (otlp_decode_metrics(JSON, NULL, json, strlen(json), NULL, NULL, bj,
				err, sizeof(err)) != STATUS_OK)
		fail_msg("json: %s\n%s", err, json);
	assert_int_equal(otlp_decode_metrics(PROTO, NULL, pb, plen, NULL, NULL,
					     bp, err, sizeof(err)),
			 STATUS_OK);
}

static struct otlp_batch *
decode_metrics_both(const struct tmreq *q)
{
	struct otlp_batch *bj = NULL, *bp = NULL;
	char *json = metrics_json(q);
	size_t plen;
	uint8_t *pb = metrics_pb(q, &plen);

	decode_metrics_pair(json, pb, plen, &bj, &bp);
	assert_int_equal(bj->n_points, bp->n_points);
	assert_int_equal(bj->n_spans, 0);
	assert_int_equal(bj->rejected, bp->rejected);
	assert_string_equal(bj->reject_reason, bp->reject_reason);
	for (size_t i = 0; i < bj->n_points; i++)
		assert_same_point(&bj->points[i], &bp->points[i]);
	otlp_batch_free(bp);
	free(json);
	free(pb);
	return bj;
}

static const struct tmreq metrics_request = {
	.res = {S("service.name", "payments"), S("service.namespace", "shop"),
		S("telemetry.sdk.name", "opentelemetry")},
	.scope = "payments-meter",
	.n = 6,
	.metrics =
		{
			{"process.cpu.utilization",
			 "1",
			 "CPU use",
			 M_GAUGE,
			 0,
			 false,
			 2,
			 {{.start = 0,
			   .time = T0,
			   .dv = 0.75,
			   .attrs = {S("cpu", "0")}},
			  {.start = 0, .time = T0 + 1, .dv = NAN}}},
			{"http.server.requests",
			 "{request}",
			 NULL,
			 M_SUM,
			 OTLP_TEMPORALITY_CUMULATIVE,
			 true,
			 2,
			 {{.start = T0 - 60,
			   .time = T0,
			   .is_int = true,
			   .iv = 1234,
			   .attrs = {S("http.route", "/pay"),
				     I("http.response.status_code", 200)}},
			  {.start = T0 - 60,
			   .time = T0,
			   .is_int = true,
			   .iv = -7,
			   .flags = 0}}},
			{"queue.delta",
			 NULL,
			 NULL,
			 M_SUM,
			 OTLP_TEMPORALITY_DELTA,
			 false,
			 1,
			 {{.start = T0 - 10, .time = T0, .dv = 2.5}}},
			{"http.server.duration",
			 "ms",
			 "latency",
			 M_HIST,
			 OTLP_TEMPORALITY_DELTA,
			 false,
			 2,
			 {{.start = T0 - 60,
			   .time = T0,
			   .count = 10,
			   .has_sum = true,
			   .sum = 123.5,
			   .has_min = true,
			   .min = 0.5,
			   .has_max = true,
			   .max = 80,
			   .nb = 3,
			   .bounds = {1, 10, 100},
			   .nc = 4,
			   .counts = {2, 3, 4, 1}},
			  {.start = T0 - 60,
			   .time = T0,
			   .count = 0,
			   .nb = 0,
			   .nc = 0}}},
			{"latency.exp",
			 "ms",
			 NULL,
			 M_EXPHIST,
			 1,
			 false,
			 2,
			 {{0}, {0}}},
			{"latency.summary",
			 "ms",
			 NULL,
			 M_SUMMARY,
			 0,
			 false,
			 1,
			 {{0}}},
		},
};

static void
test_metrics_json_and_protobuf_agree(void **state)
{
	struct otlp_batch *b;
	const struct otlp_point *p;

	(void)state;
	b = decode_metrics_both(&metrics_request);
	assert_int_equal(b->n_points, 7);
	assert_int_equal(b->rejected, 3); /* 2 exponential + 1 summary */
	assert_non_null(strstr(b->reject_reason, "exponential histograms"));

	p = &b->points[0];
	assert_int_equal(p->type, OTLP_POINT_GAUGE);
	assert_string_equal(otlp_point_type_name(p->type), "gauge");
	assert_string_equal(p->name, "process.cpu.utilization");
	assert_string_equal(p->unit, "1");
	assert_string_equal(p->description, "CPU use");
	assert_string_equal(p->service_name, "payments");
	assert_string_equal(p->service_namespace, "shop");
	assert_string_equal(p->scope_name, "payments-meter");
	assert_int_equal(p->source, OTLP_SOURCE_OTLP);
	assert_int_equal(p->time_unix_nano, T0);
	assert_int_equal(p->start_unix_nano, 0);
	assert_false(p->is_int);
	assert_true(p->value == 0.75);
	assert_string_equal(p->attributes_json, "{\"cpu\":\"0\"}");
	assert_true(isnan(b->points[1].value));

	p = &b->points[2];
	assert_int_equal(p->type, OTLP_POINT_SUM);
	assert_int_equal(p->temporality, OTLP_TEMPORALITY_CUMULATIVE);
	assert_true(p->monotonic);
	assert_true(p->is_int);
	assert_int_equal(p->int_value, 1234);
	assert_true(p->value == 1234.0);
	assert_null(p->description);
	assert_string_equal(p->attributes_json,
			    "{\"http.route\":\"/pay\","
			    "\"http.response.status_code\":200}");
	assert_int_equal(b->points[3].int_value, -7);

	p = &b->points[4];
	assert_int_equal(p->temporality, OTLP_TEMPORALITY_DELTA);
	assert_false(p->monotonic);
	assert_null(p->unit);
	assert_true(p->value == 2.5);

	p = &b->points[5];
	assert_int_equal(p->type, OTLP_POINT_HISTOGRAM);
	assert_int_equal(p->temporality, OTLP_TEMPORALITY_DELTA);
	assert_int_equal(p->count, 10);
	assert_true(p->has_sum && p->sum == 123.5);
	assert_true(p->has_min && p->min == 0.5);
	assert_true(p->has_max && p->max == 80);
	assert_int_equal(p->n_bounds, 3);
	assert_true(p->bounds[0] == 1 && p->bounds[1] == 10 &&
		    p->bounds[2] == 100);
	assert_int_equal(p->n_bucket_counts, 4);
	assert_int_equal(p->bucket_counts[0], 2);
	assert_int_equal(p->bucket_counts[3], 1);

	p = &b->points[6]; /* no sum/min/max: absent, not zero */
	assert_false(p->has_sum);
	assert_false(p->has_min);
	assert_false(p->has_max);
	assert_int_equal(p->n_bounds, 0);
	assert_null(p->bounds);
	otlp_batch_free(b);
}

struct point_reject_case {
	const char *name;
	struct tmetric metric;
	size_t kept;
	const char *reason;
};

static const struct point_reject_case point_reject_cases[] = {
	{"no time",
	 {"m",
	  NULL,
	  NULL,
	  M_GAUGE,
	  0,
	  false,
	  2,
	  {{.time = 0, .dv = 1}, {.time = T0, .dv = 1}}},
	 1,
	 "has no time"},
	{"no value",
	 {"m",
	  NULL,
	  NULL,
	  M_GAUGE,
	  0,
	  false,
	  1,
	  {{.time = T0, .no_value = true}}},
	 0,
	 "has no value"},
	{"no value but flagged",
	 {"m",
	  NULL,
	  NULL,
	  M_GAUGE,
	  0,
	  false,
	  1,
	  {{.time = T0, .no_value = true, .flags = 1}}},
	 1,
	 NULL},
	{"no name",
	 {NULL,
	  NULL,
	  NULL,
	  M_SUM,
	  2,
	  true,
	  2,
	  {{.time = T0, .dv = 1}, {.time = T0, .dv = 2}}},
	 0,
	 "metric has no name"},
	{"buckets without bounds",
	 {"h",
	  NULL,
	  NULL,
	  M_HIST,
	  1,
	  false,
	  1,
	  {{.time = T0, .count = 5, .nc = 1, .counts = {5}}}},
	 1,
	 NULL},
	{"bucket count mismatch",
	 {"h",
	  NULL,
	  NULL,
	  M_HIST,
	  1,
	  false,
	  1,
	  {{.time = T0, .nb = 2, .bounds = {1, 2}, .nc = 2, .counts = {1, 1}}}},
	 0,
	 "one more bucket count"},
	{"bounds not increasing",
	 {"h",
	  NULL,
	  NULL,
	  M_HIST,
	  1,
	  false,
	  1,
	  {{.time = T0,
	    .nb = 2,
	    .bounds = {2, 2},
	    .nc = 3,
	    .counts = {1, 1, 1}}}},
	 0,
	 "bounds must increase"},
	{"summary",
	 {"s", NULL, NULL, M_SUMMARY, 0, false, 3, {{0}, {0}, {0}}},
	 0,
	 "summaries are not stored"},
};

static void
test_metric_rejection(void **state)
{
	(void)state;
	for (size_t i = 0;
	     i < sizeof(point_reject_cases) / sizeof(point_reject_cases[0]);
	     i++) {
		const struct point_reject_case *c = &point_reject_cases[i];
		struct tmreq q = {.scope = "s", .n = 1};
		struct otlp_batch *b;

		print_message("point case: %s\n", c->name);
		q.metrics[0] = c->metric;
		b = decode_metrics_both(&q);
		assert_int_equal(b->n_points, c->kept);
		assert_int_equal(b->rejected, c->metric.n - c->kept);
		if (c->reason)
			assert_non_null(strstr(b->reject_reason, c->reason));
		otlp_batch_free(b);
	}
}

/* ---- gzip ---------------------------------------------------------------- */

static uint8_t *
gzip(const void *in, size_t n, size_t *outlen)
{
	z_stream zs;
	size_t cap = compressBound(n) + 64;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY),
			 Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*outlen = zs.total_out;
	deflateEnd(&zs);
	return out;
}

static void
test_gzip_bodies(void **state)
{
	char *json = trace_json(&full_request);
	size_t plen, gjlen, gplen;
	uint8_t *pb = trace_pb(&full_request, &plen);
	uint8_t *gj = gzip(json, strlen(json), &gjlen);
	uint8_t *gp = gzip(pb, plen, &gplen);
	struct otlp_batch *plain = NULL, *b = NULL;
	char err[256];
	uint8_t *two;

	(void)state;
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    NULL, NULL, &plain, err,
					    sizeof(err)),
			 STATUS_OK);
	assert_int_equal(otlp_decode_traces(JSON, "gzip", gj, gjlen, NULL, NULL,
					    &b, err, sizeof(err)),
			 STATUS_OK);
	assert_same_batch(plain, b);
	otlp_batch_free(b);
	assert_int_equal(otlp_decode_traces("Application/X-Protobuf", " GZIP ",
					    gp, gplen, NULL, NULL, &b, err,
					    sizeof(err)),
			 STATUS_OK);
	assert_same_batch(plain, b);
	otlp_batch_free(b);

	/* two gzip members of one protobuf body (RFC 1952 2.2) */
	{
		size_t h1, h2;
		uint8_t *g1 = gzip(pb, plen / 2, &h1);
		uint8_t *g2 = gzip(pb + plen / 2, plen - plen / 2, &h2);

		two = malloc(h1 + h2);
		assert_non_null(two);
		memcpy(two, g1, h1);
		memcpy(two + h1, g2, h2);
		assert_int_equal(otlp_decode_traces(PROTO, "gzip", two, h1 + h2,
						    NULL, NULL, &b, err,
						    sizeof(err)),
				 STATUS_OK);
		assert_same_batch(plain, b);
		otlp_batch_free(b);
		free(g1);
		free(g2);
		free(two);
	}

	/* truncated and corrupt streams */
	assert_int_equal(otlp_decode_traces(JSON, "gzip", gj, gjlen / 2, NULL,
					    NULL, &b, err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(b);
	assert_non_null(strstr(err, "truncated"));
	gj[gjlen / 2] ^= 0xff;
	gj[gjlen / 2 + 1] ^= 0xff;
	assert_int_equal(otlp_decode_traces(JSON, "gzip", gj, gjlen, NULL, NULL,
					    &b, err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(b);
	assert_int_equal(otlp_decode_traces(JSON, "gzip", json, strlen(json),
					    NULL, NULL, &b, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "gzip"));
	assert_int_equal(otlp_decode_traces(JSON, "gzip", "", 0, NULL, NULL, &b,
					    err, sizeof(err)),
			 STATUS_INVALID);
	otlp_batch_free(plain);
	free(json);
	free(pb);
	free(gj);
	free(gp);
}

static long
max_rss_kb(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* 100 MB of zeros compress to about 100 KB: refused at the limit, having
 * allocated no more than the limit (the peak RSS barely moves). */
static void
test_gzip_bomb(void **state)
{
	static uint8_t zeros[1 << 16];
	const size_t total = 100u * 1024 * 1024;
	size_t cap = 1 << 20, len;
	uint8_t *bomb = malloc(cap);
	struct otlp_limits lim;
	struct otlp_batch *b = NULL;
	char err[256];
	z_stream zs;
	long before;

	(void)state;
	assert_non_null(bomb);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9,
				      Z_DEFAULT_STRATEGY),
			 Z_OK);
	zs.next_out = bomb;
	zs.avail_out = (uInt)cap;
	for (size_t fed = 0; fed < total; fed += sizeof(zeros)) {
		zs.next_in = zeros;
		zs.avail_in = sizeof(zeros);
		assert_int_equal(deflate(&zs, Z_NO_FLUSH), Z_OK);
		assert_int_equal(zs.avail_in, 0);
	}
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	len = zs.total_out;
	deflateEnd(&zs);
	assert_true(len < 200 * 1024);

	before = max_rss_kb();
	otlp_limits_default(&lim); /* 20 MiB */
	assert_int_equal(otlp_decode_traces(PROTO, "gzip", bomb, len, &lim,
					    NULL, &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_null(b);
	assert_non_null(strstr(err, "decompressed"));
	lim.max_decompressed = 1 << 20;
	lim.decompressed_key = "ingest.max_decompressed_bytes";
	assert_int_equal(otlp_decode_traces(JSON, "gzip", bomb, len, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "once decompressed: send smaller batches "
				    "(ingest.max_decompressed_bytes)"));
	/* 100 MB would have shown; the 20 MiB limit may (ASan included) */
	assert_true(max_rss_kb() - before < 80 * 1024);
	free(bomb);
}

/* ---- malformed bodies ---------------------------------------------------- */

struct bad_json_case {
	const char *body;
	const char *where; /* substring of the error */
};

static const struct bad_json_case bad_json_cases[] = {
	{"{\"resourceSpans\":5}", "resourceSpans: expected an array"},
	{"{\"resourceSpans\":[7]}", "resourceSpans[0]: expected an object"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":42}]}]}]}",
	 "resourceSpans[0].scopeSpans[0].spans[0].name: expected a string"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"startTimeUnixNano\":true}]}]}]}",
	 "spans[0].startTimeUnixNano: expected an unsigned 64-bit integer"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"startTimeUnixNano\":\"-1\"}]}]}]}",
	 "startTimeUnixNano: expected an unsigned"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"startTimeUnixNano\":\"12x\"}]}]}]}",
	 "startTimeUnixNano"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"startTimeUnixNano\":\"99999999999999999999\"}]}]}]}",
	 "startTimeUnixNano"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"startTimeUnixNano\":1.5}]}]}]}",
	 "startTimeUnixNano"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"kind\":\"SPAN_"
	 "KIND_SERVER\"}]}]}]}",
	 "kind: expected an integer (OTLP/JSON encodes enums as integers)"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":7}]}]}]"
	 "}",
	 "traceId: expected a hex string"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"attributes\":{}}]"
	 "}]}]}",
	 "attributes: expected an array"},
	{"{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"k\","
	 "\"value\":{\"intValue\":\"1.5\"}}]}}]}",
	 "resourceSpans[0].resource.attributes[0].value.intValue"},
	{"{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"k\","
	 "\"value\":{\"boolValue\":\"true\"}}]}}]}",
	 "boolValue: expected true or false"},
	{"{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"k\","
	 "\"value\":{\"bytesValue\":\"!!\"}}]}}]}",
	 "bytesValue: expected a base64 string"},
	{"{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":1}]}}]}",
	 "attributes[0].key: expected a string"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"status\":{"
	 "\"code\":4294967296}}]}]}]}",
	 "status.code: expected an integer"},
	{"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{"
	 "\"droppedAttributesCount\":-1}]}]}]}",
	 "droppedAttributesCount: expected an unsigned 32-bit integer"},
	{"{\"resourceSpans\":[", "invalid JSON at line 1"},
	{"{\"resourceSpans\":[]} trailing", "invalid JSON"},
	{"[]", "expected a JSON object"},
	{"\xff", "invalid JSON"},
};

static void
test_malformed_json(void **state)
{
	(void)state;
	for (size_t i = 0;
	     i < sizeof(bad_json_cases) / sizeof(bad_json_cases[0]); i++) {
		struct otlp_batch *b = (struct otlp_batch *)&b;
		char err[256];

		print_message("bad json: %s\n", bad_json_cases[i].body);
		assert_int_equal(
			otlp_decode_traces(JSON, NULL, bad_json_cases[i].body,
					   strlen(bad_json_cases[i].body), NULL,
					   NULL, &b, err, sizeof(err)),
			STATUS_INVALID);
		assert_null(b);
		if (strstr(err, bad_json_cases[i].where) == NULL)
			fail_msg("error '%s' does not contain '%s'", err,
				 bad_json_cases[i].where);
	}
}

/* JSON numbers and strings for 64-bit fields, null for defaults, unknown
 * keys and snake_case names. */
static void
test_json_leniency(void **state)
{
	static const char body[] =
		"{\"resourceSpans\":[{\"unknownField\":{\"x\":[1,2]},"
		"\"resource\":null,\"scope_spans\":[{\"spans\":[{"
		"\"traceId\":\"" TRACE1 "\",\"span_id\":\"" SPAN1 "\","
		"\"name\":\"n\",\"kind\":1,\"startTimeUnixNano\":"
		"1700000000000000000,\"endTimeUnixNano\":1.7e18,"
		"\"links\":[{\"traceId\":\"zz\"}],\"status\":null,"
		"\"attributes\":[{\"key\":\"i\",\"value\":{\"intValue\":12}},"
		"{\"key\":\"d\",\"value\":{\"doubleValue\":\"Infinity\"}},"
		"{\"key\":\"d2\",\"value\":{\"doubleValue\":\"-1.5e3\"}},"
		"{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":["
		"{\"stringValue\":\"x\"},{\"intValue\":\"-3\"},{}]}}},"
		"{\"key\":\"kv\",\"value\":{\"kvlistValue\":{\"values\":["
		"{\"key\":\"in\",\"value\":{\"boolValue\":true}}]}}},"
		"{\"key\":\"nul\",\"value\":{\"stringValue\":\"a\\u0000b\"}},"
		"{\"key\":\"esc\",\"value\":{\"stringValue\":"
		"\"q\\\"\\\\\\t\\u0001\\u00e9\\u2028\"}}]}]}]}]}";
	struct otlp_batch *b = NULL;
	char err[256];

	(void)state;
	assert_int_equal(otlp_decode_traces("application/json; charset=utf-8",
					    "identity", body, strlen(body),
					    NULL, NULL, &b, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(b->n_spans, 1);
	assert_int_equal(b->spans[0].start_unix_nano, T0);
	assert_int_equal(b->spans[0].end_unix_nano, T0);
	assert_null(b->spans[0].service_name);
	assert_string_equal(b->spans[0].resource_json, "{}");
	assert_string_equal(
		b->spans[0].attributes_json,
		"{\"i\":12,\"d\":\"Infinity\",\"d2\":-1500,"
		"\"a\":[\"x\",-3,null],\"kv\":{\"in\":true},"
		"\"nul\":\"a\xef\xbf\xbd"
		"b\",\"esc\":\"q\\\"\\\\\\t\\u0001\xc3\xa9\xe2\x80\xa8\"}");
	otlp_batch_free(b);
}

/* Every prefix of a valid protobuf body decodes or fails cleanly. */
static void
test_truncated_protobuf(void **state)
{
	size_t plen, ok = 0, bad = 0;
	uint8_t *pb = trace_pb(&full_request, &plen);
	char err[256];

	(void)state;
	for (size_t n = 0; n < plen; n++) {
		struct otlp_batch *b = NULL;
		int rc = otlp_decode_traces(PROTO, NULL, pb, n, NULL, NULL, &b,
					    err, sizeof(err));

		if (rc == STATUS_OK) {
			ok++;
			otlp_batch_free(b);
		} else {
			assert_int_equal(rc, STATUS_INVALID);
			assert_null(b);
			assert_non_null(strstr(err, "malformed protobuf"));
			bad++;
		}
	}
	assert_true(bad > plen / 2);
	assert_true(ok >= 1); /* at least the empty prefix */
	free(pb);
}

struct bad_pb_case {
	const char *name;
	const char *bytes;
	size_t len;
	const char *where;
};

static const struct bad_pb_case bad_pb_cases[] = {
	{"length past the end", "\x0a\x05\x12\x01", 4, "length past the end"},
	{"varint for a message", "\x08\x01", 2,
	 "varint for a non-varint field, field 1 (resource_spans)"},
	{"fixed64 start time as varint",
	 "\x0a\x08\x12\x06\x12\x04\x38\x01\x00\x00", 10,
	 "field 7 (start_time_unix_nano) of Span"},
	{"truncated fixed32", "\x0a\x07\x12\x05\x12\x03\x2d\x00\x00", 9,
	 "truncated fixed32"},
	{"string as fixed32", "\x0a\x09\x12\x07\x12\x05\x2d\x00\x00\x00\x00",
	 11, "fixed32 for another type, field 5 (name) of Span"},
	{"group wire type", "\x0b", 1, "unsupported wire type"},
	{"field number zero", "\x00\x00", 2, "field number out of range"},
	{"unterminated varint", "\x0a\xff\xff", 3, "bad length"},
	{"eleven-byte varint",
	 "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12,
	 "truncated varint"},
};

static void
test_malformed_protobuf(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_pb_cases) / sizeof(bad_pb_cases[0]);
	     i++) {
		struct otlp_batch *b = NULL;
		char err[256];

		print_message("bad protobuf: %s\n", bad_pb_cases[i].name);
		assert_int_equal(otlp_decode_traces(PROTO, NULL,
						    bad_pb_cases[i].bytes,
						    bad_pb_cases[i].len, NULL,
						    NULL, &b, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(b);
		if (strstr(err, bad_pb_cases[i].where) == NULL)
			fail_msg("error '%s' does not contain '%s'", err,
				 bad_pb_cases[i].where);
	}
}

/* Unknown fields (links, future fields) are skipped in protobuf too. */
static void
test_protobuf_unknown_fields(void **state)
{
	size_t plen;
	uint8_t *pb = trace_pb(&full_request, &plen);
	/* field 99 varint, field 100 fixed64, field 101 bytes */
	static const uint8_t extra[] = {0x98, 0x06, 0x01, 0xa1, 0x06, 1,
					2,    3,    4,	  5,	6,    7,
					8,    0xaa, 0x06, 0x02, 0x00, 0x00};
	uint8_t *body = malloc(plen + sizeof(extra));
	struct otlp_batch *a = NULL, *b = NULL;
	char err[256];

	(void)state;
	assert_non_null(body);
	memcpy(body, extra, sizeof(extra));
	memcpy(body + sizeof(extra), pb, plen);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, NULL, NULL,
					    &a, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, body,
					    plen + sizeof(extra), NULL, NULL,
					    &b, err, sizeof(err)),
			 STATUS_OK);
	assert_same_batch(a, b);
	otlp_batch_free(a);
	otlp_batch_free(b);
	free(body);
	free(pb);
}

/* Nesting is bounded in both encodings: no stack exhaustion. */
static void
test_deep_nesting(void **state)
{
	const size_t depth = 100000;
	struct buf j;
	struct otlp_batch *b = NULL;
	char err[256];
	uint8_t *pb;
	size_t n = 0, cap = depth * 12 + 64;

	(void)state;
	buf_init(&j, 1 << 24);
	jput(&j, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{"
		 "\"key\":\"k\",\"value\":");
	for (size_t i = 0; i < 200; i++)
		jput(&j, "{\"arrayValue\":{\"values\":[");
	jput(&j, "{}");
	for (size_t i = 0; i < 200; i++)
		jput(&j, "]}}");
	jput(&j, "}]}}]}");
	assert_int_equal(otlp_decode_traces(JSON, NULL, j.data, j.len, NULL,
					    NULL, &b, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "nested deeper"));
	buf_free(&j);

	/* a request whose one resource attribute holds an array of an
	 * array of ... 100000 deep, built from the inside out */
	pb = malloc(cap);
	assert_non_null(pb);
	{
		static const uint8_t outer[] = {
			0x12, /* KeyValue.value */
			0x0a, /* Resource.attributes */
			0x0a, /* ResourceSpans.resource */
			0x0a, /* ExportTraceServiceRequest.resource_spans */
		};
		size_t pos = cap;

		for (size_t i = 0; i < 2 * depth + sizeof(outer); i++) {
			/* AnyValue inside ArrayValue.values (field 1), the
			 * ArrayValue inside AnyValue.array_value (field 5) */
			uint8_t tag = i >= 2 * depth ? outer[i - 2 * depth]
				      : i % 2 == 0   ? 0x0a
						     : 0x2a;
			uint8_t tmp[10];
			size_t k = 0, v = cap - pos;

			do {
				tmp[k] = (uint8_t)(v & 0x7f);
				v >>= 7;
				if (v)
					tmp[k] |= 0x80;
				k++;
			} while (v);
			pos -= k;
			memcpy(pb + pos, tmp, k);
			pb[--pos] = tag;
		}
		n = cap - pos;
		memmove(pb, pb + pos, n);
	}
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, n, NULL, NULL, &b,
					    err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(b);
	assert_non_null(strstr(err, "nested too deep"));
	free(pb);
}

/* ---- empty requests, content types, limits ------------------------------- */

static void
test_empty_requests(void **state)
{
	static const struct {
		const char *type;
		const char *body;
		size_t len;
	} cases[] = {
		{JSON, "{}", 0},
		{JSON, "", 0},
		{JSON, "{\"resourceSpans\":[]}", 0},
		{JSON, "{\"resourceSpans\":[{}]}", 0},
		{JSON,
		 "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[]}]}]}", 0},
		{PROTO, "", 0},
		{PROTO, "\x0a\x00", 2},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct otlp_batch *b = NULL;
		char err[256];
		size_t len =
			cases[i].len ? cases[i].len : strlen(cases[i].body);

		assert_int_equal(otlp_decode_traces(cases[i].type, NULL,
						    cases[i].body, len, NULL,
						    NULL, &b, err, sizeof(err)),
				 STATUS_OK);
		assert_int_equal(b->n_spans, 0);
		assert_null(b->spans);
		assert_int_equal(b->rejected, 0);
		otlp_batch_free(b);
		assert_int_equal(otlp_decode_metrics(
					 cases[i].type, NULL, cases[i].body,
					 len, NULL, NULL, &b, err, sizeof(err)),
				 STATUS_OK);
		assert_int_equal(b->n_points, 0);
		otlp_batch_free(b);
	}
}

static void
test_content_types(void **state)
{
	static const struct {
		const char *type, *encoding;
		int want;
	} cases[] = {
		{"application/json", NULL, STATUS_OK},
		{"APPLICATION/JSON;charset=UTF-8", "", STATUS_OK},
		{"application/x-protobuf", "identity", STATUS_OK},
		{"application/protobuf", NULL, STATUS_OK},
		{"text/plain", NULL, STATUS_UNSUPPORTED},
		{"application/jsonx", NULL, STATUS_UNSUPPORTED},
		{"application/grpc", NULL, STATUS_UNSUPPORTED},
		{NULL, NULL, STATUS_UNSUPPORTED},
		{"", NULL, STATUS_UNSUPPORTED},
		{"application/json", "br", STATUS_UNSUPPORTED},
		{"application/json", "deflate", STATUS_UNSUPPORTED},
	};
	enum otlp_encoding enc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct otlp_batch *b = NULL;
		char err[256];
		int rc =
			otlp_decode_traces(cases[i].type, cases[i].encoding, "",
					   0, NULL, NULL, &b, err, sizeof(err));

		assert_int_equal(rc, cases[i].want);
		if (rc == STATUS_UNSUPPORTED) {
			assert_null(b);
			assert_non_null(strstr(err, "unsupported content"));
		}
		otlp_batch_free(b);
	}
	assert_int_equal(otlp_content_type_encoding("application/json", &enc),
			 STATUS_OK);
	assert_int_equal(enc, OTLP_ENCODING_JSON);
	assert_string_equal(otlp_encoding_content_type(enc),
			    "application/json");
	assert_int_equal(
		otlp_content_type_encoding("application/x-protobuf", &enc),
		STATUS_OK);
	assert_int_equal(enc, OTLP_ENCODING_PROTOBUF);
	assert_string_equal(otlp_encoding_content_type(enc),
			    "application/x-protobuf");
	assert_int_equal(otlp_content_type_encoding("text/html", &enc),
			 STATUS_UNSUPPORTED);
}

static void
test_limits(void **state)
{
	struct treq q = {.n_res = 1};
	struct tscope *sc = &q.res[0].scopes[0];
	struct otlp_limits lim;
	struct otlp_batch *b = NULL;
	char err[256], *json;
	size_t plen;
	uint8_t *pb;

	(void)state;
	q.res[0].n_scopes = 1;
	sc->n_spans = 4;
	for (size_t i = 0; i < 4; i++)
		sc->spans[i] = one_span(NULL, 0).res[0].scopes[0].spans[0];
	json = trace_json(&q);
	pb = trace_pb(&q, &plen);

	otlp_limits_default(&lim);
	lim.max_spans = 3;
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    &lim, NULL, &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_null(b);
	assert_non_null(strstr(err, "more than 3 spans"));
	assert_null(strstr(err, "("));
	/* the caller's name for the limit ends the message */
	lim.items_key = "ingest.max_items";
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "more than 3 spans"));
	assert_non_null(strstr(err, "batches (ingest.max_items)"));
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    &lim, NULL, &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "batches (ingest.max_items)"));
	lim.max_spans = 4;
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_OK);
	otlp_batch_free(b);

	otlp_limits_default(&lim);
	lim.max_decompressed = plen - 1;
	lim.decompressed_key = "ingest.max_decompressed_bytes";
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "batches (ingest.max_decompressed_bytes)"));
	lim.max_decompressed = plen;
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_OK);
	otlp_batch_free(b);

	otlp_limits_default(&lim);
	lim.max_memory = 20000;
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, &lim, NULL,
					    &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_null(b);
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    &lim, NULL, &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_null(b);
	lim.max_memory = 1000;
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    &lim, NULL, &b, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "needs more than 1000 bytes"));
	free(json);
	free(pb);

	/* points */
	{
		struct tmreq m = {.scope = "s", .n = 1};
		char *mj;
		size_t mlen;
		uint8_t *mp;

		m.metrics[0] = (struct tmetric){
			"g",  NULL,
			NULL, M_GAUGE,
			0,    false,
			3,    {{.time = T0}, {.time = T0}, {.time = T0}}};
		mj = metrics_json(&m);
		mp = metrics_pb(&m, &mlen);
		otlp_limits_default(&lim);
		lim.max_points = 2;
		assert_int_equal(otlp_decode_metrics(JSON, NULL, mj, strlen(mj),
						     &lim, NULL, &b, err,
						     sizeof(err)),
				 STATUS_LIMIT);
		assert_non_null(strstr(err, "more than 2 data points"));
		assert_int_equal(otlp_decode_metrics(PROTO, NULL, mp, mlen,
						     &lim, NULL, &b, err,
						     sizeof(err)),
				 STATUS_LIMIT);
		free(mj);
		free(mp);
	}
}

/* Long strings are cut at a character boundary and marked, in columns
 * and in JSON alike. */
static void
test_strings_bounded(void **state)
{
	static const struct tattr attrs[] = {
		S("long", "abcdefghij"),
		S("utf8", "\xc3\xa9\xc3\xa9\xc3\xa9"),
		S("http.route", "/0123456789"),
		S("k123456789", "v"),
		{"bytes", V_BYTES, "0123456789", 0, 0},
		S("short", "abcde"),
	};
	struct treq q = one_span(attrs, 6);
	struct otlp_limits lim;
	struct otlp_batch *b;

	(void)state;
	otlp_limits_default(&lim);
	lim.max_attr_bytes = 5;
	q.res[0].scopes[0].spans[0].name = "span-name-long";
	b = decode_both(&q, &lim, NULL);
	assert_int_equal(b->n_spans, 1);
	assert_string_equal(b->spans[0].name, "span-" OTLP_TRUNCATED);
	assert_string_equal(b->spans[0].http_route, "/0123" OTLP_TRUNCATED);
	assert_string_equal(b->spans[0].attributes_json,
			    "{\"long\":\"abcde" OTLP_TRUNCATED "\","
			    "\"utf8\":\"\xc3\xa9\xc3\xa9" OTLP_TRUNCATED "\","
			    "\"http." OTLP_TRUNCATED "\":\"/0123" OTLP_TRUNCATED
			    "\","
			    "\"k1234" OTLP_TRUNCATED "\":\"v\","
			    "\"bytes\":\"MDEyMzQ=" OTLP_TRUNCATED "\","
			    "\"short\":\"abcde\"}");
	otlp_batch_free(b);
}

/* n bytes: tag, then 2-byte characters, so that an even cap falls inside
 * a character.  Caller frees. */
static char *
long_text(char tag, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	assert_true(n % 2 == 1);
	s[0] = tag;
	for (size_t i = 1; i < n; i += 2)
		memcpy(s + i, "\xc3\xa9", 2);
	s[n] = '\0';
	return s;
}

/* col is full cut at a character boundary within cap bytes, plus the
 * marker. */
static void
assert_cut(const char *col, const char *full, size_t cap)
{
	size_t mark = strlen(OTLP_TRUNCATED), keep;

	assert_non_null(col);
	assert_true(strlen(col) > mark);
	keep = strlen(col) - mark;
	assert_true(keep <= cap);
	assert_true(keep + 2 > cap); /* no shorter than it must be */
	assert_memory_equal(col, full, keep);
	assert_string_equal(col + keep, OTLP_TRUNCATED);
	assert_true(((unsigned char)full[keep] & 0xc0) != 0x80);
}

/* A capped column of a span of test_indexed_columns_bounded: the value
 * v[value] sent, cut to cap. */
struct cut_case {
	size_t span;
	size_t field; /* offsetof(struct otlp_span, ...) */
	size_t value;
	size_t cap;
};

#define CUT(i, f, val, c)                                                      \
	{                                                                      \
		i, offsetof(struct otlp_span, f), val, c                       \
	}
static const struct cut_case cut_cases[] = {
	CUT(0, service_name, 0, OTLP_MAX_SERVICE_NAME_BYTES),
	CUT(0, http_method, 1, OTLP_MAX_HTTP_METHOD_BYTES),
	CUT(0, http_route, 2, OTLP_MAX_HTTP_PATH_BYTES),
	CUT(0, url_path, 3, OTLP_MAX_HTTP_PATH_BYTES),
	CUT(0, session_id, 4, OTLP_MAX_SESSION_ID_BYTES),
	CUT(0, gen_ai_system, 5, OTLP_MAX_GENAI_NAME_BYTES),
	CUT(0, gen_ai_operation, 6, OTLP_MAX_GENAI_NAME_BYTES),
	CUT(0, gen_ai_request_model, 7, OTLP_MAX_GENAI_MODEL_BYTES),
	CUT(0, gen_ai_response_model, 8, OTLP_MAX_GENAI_MODEL_BYTES),
	/* rpc.method "/<v12>/<v13>" */
	CUT(1, rpc_service, 12, OTLP_MAX_RPC_NAME_BYTES),
	CUT(1, rpc_method, 13, OTLP_MAX_RPC_NAME_BYTES),
	CUT(1, db_operation, 9, OTLP_MAX_DB_OPERATION_BYTES),
	CUT(1, db_table, 10, OTLP_MAX_DB_TABLE_BYTES),
	CUT(2, rpc_service, 11, OTLP_MAX_RPC_NAME_BYTES),
	CUT(2, rpc_method, 12, OTLP_MAX_RPC_NAME_BYTES),
	/* http.target "/<v15>?q=1" */
	CUT(2, http_route, 15, OTLP_MAX_HTTP_PATH_BYTES),
	CUT(2, url_path, 15, OTLP_MAX_HTTP_PATH_BYTES),
};
#undef CUT

/* The columns that btree indexes hold are cut far below max_attr_bytes
 * (PostgreSQL refuses an index entry past 2704 bytes, and the batch with
 * it); the attributes JSON keeps the whole value. */
static void
test_indexed_columns_bounded(void **state)
{
	enum {
		LONG = 3001
	};
	char *v[16];
	struct treq q;
	struct tspan *sp;
	struct otlp_batch *b;

	(void)state;
	for (size_t i = 0; i < 16; i++)
		v[i] = long_text((char)('a' + i), LONG);
	/* rpc.method "/<service>/<method>": each part cut on its own */
	v[14] = realloc(v[14], 2 * LONG + 3);
	assert_non_null(v[14]);
	v[14][0] = '/';
	memcpy(v[14] + 1, v[12], LONG);
	v[14][LONG + 1] = '/';
	memcpy(v[14] + LONG + 2, v[13], LONG + 1);
	/* http.target: the path before the query is the route and url_path;
	 * compared from its '/' on */
	v[15] = realloc(v[15], LONG + 5);
	assert_non_null(v[15]);
	v[15][0] = '/';
	memcpy(v[15] + LONG, "?q=1", 5);

	{
		struct tattr http_genai[] = {
			S("http.request.method", v[1]),
			S("http.route", v[2]),
			S("url.path", v[3]),
			S("session.id", v[4]),
			S("gen_ai.provider.name", v[5]),
			S("gen_ai.operation.name", v[6]),
			S("gen_ai.request.model", v[7]),
			S("gen_ai.response.model", v[8]),
		};
		q = one_span(http_genai, 8);
	}
	q.res[0].attrs[0] = (struct tattr)S("service.name", v[0]);
	q.res[0].scopes[0].n_spans = 4;
	sp = q.res[0].scopes[0].spans;
	sp[1] = sp[0];
	sp[1].span = SPAN2;
	memset(sp[1].attrs, 0, sizeof(sp[1].attrs));
	sp[1].attrs[0] = (struct tattr)S("rpc.method", v[14]);
	sp[1].attrs[1] = (struct tattr)S("db.operation.name", v[9]);
	sp[1].attrs[2] = (struct tattr)S("db.collection.name", v[10]);
	sp[2] = sp[1];
	sp[2].span = "1111111111111111";
	memset(sp[2].attrs, 0, sizeof(sp[2].attrs));
	sp[2].attrs[0] = (struct tattr)S("rpc.service", v[11]);
	sp[2].attrs[1] = (struct tattr)S("rpc.method", v[12]);
	sp[2].attrs[2] = (struct tattr)S("http.target", v[15]);
	/* a span name is in no index: max_attr_bytes alone */
	sp[3] = sp[2];
	sp[3].span = "2222222222222222";
	memset(sp[3].attrs, 0, sizeof(sp[3].attrs));
	sp[3].name = v[13];

	b = decode_both(&q, NULL, NULL);
	assert_int_equal(b->n_spans, 4);
	assert_int_equal(b->rejected, 0);
	for (size_t i = 0; i < sizeof(cut_cases) / sizeof(cut_cases[0]); i++) {
		const struct cut_case *c = &cut_cases[i];
		const char *col = *(
			const char *const *)((const char *)&b->spans[c->span] +
					     c->field);

		assert_cut(col, v[c->value], c->cap);
	}
	/* the whole values stay in the JSON */
	for (size_t i = 1; i <= 8; i++)
		assert_non_null(strstr(b->spans[0].attributes_json, v[i]));
	assert_non_null(strstr(b->spans[0].resource_json, v[0]));
	assert_non_null(strstr(b->spans[1].attributes_json, v[14]));
	assert_non_null(strstr(b->spans[2].attributes_json, v[15]));
	assert_string_equal(b->spans[3].name, v[13]);
	otlp_batch_free(b);

	/* metric points: name and service_name */
	{
		struct tmreq m = {.scope = "s", .n = 1};

		m.res[0] = (struct tattr)S("service.name", v[0]);
		m.metrics[0] = (struct tmetric){
			v[1], NULL, NULL, M_GAUGE, 0, false, 1, {{.time = T0}}};
		b = decode_metrics_both(&m);
		assert_int_equal(b->n_points, 1);
		assert_cut(b->points[0].name, v[1], OTLP_MAX_METRIC_NAME_BYTES);
		assert_cut(b->points[0].service_name, v[0],
			   OTLP_MAX_SERVICE_NAME_BYTES);
		assert_non_null(strstr(b->points[0].resource_json, v[0]));
		otlp_batch_free(b);
	}
	for (size_t i = 0; i < 16; i++)
		free(v[i]);
}

/* Protobuf strings need not be UTF-8 on the wire (JSON text must be):
 * each invalid sequence becomes one U+FFFD, in columns and in JSON. */
static void
test_invalid_utf8(void **state)
{
	static const struct tattr attrs[] = {
		S("bad", "a\xff"
			 "b\xc3"),
		S("session.id", "s\xe2\x82!"),
		S("surrogate", "\xed\xa0\x80"),
		S("overlong", "\xc0\xaf"),
		S("ok", "\xf0\x9f\x98\x80"),
	};
	struct treq q = one_span(attrs, 5);
	struct otlp_batch *b = NULL;
	size_t plen;
	uint8_t *pb;
	char err[256];

	(void)state;
	q.res[0].scopes[0].spans[0].name = "n\x80";
	pb = trace_pb(&q, &plen);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, NULL, NULL,
					    &b, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(b->n_spans, 1);
	assert_string_equal(b->spans[0].name, "n\xef\xbf\xbd");
	assert_string_equal(b->spans[0].session_id, "s\xef\xbf\xbd!");
	assert_string_equal(
		b->spans[0].attributes_json,
		"{\"bad\":\"a\xef\xbf\xbd"
		"b\xef\xbf\xbd\","
		"\"session.id\":\"s\xef\xbf\xbd!\","
		"\"surrogate\":\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
		"\"overlong\":\"\xef\xbf\xbd\xef\xbf\xbd\","
		"\"ok\":\"\xf0\x9f\x98\x80\"}");
	otlp_batch_free(b);
	free(pb);
}

/*
 * The test's strings mark with \x01 where a NUL goes: a C string cannot
 * hold one.  In JSON text each \u0001, or \x01 written as is, becomes
 * \u0000 (json is freed, the new text returned); in protobuf bytes the
 * \x01 inside each of the marked strings becomes 0.
 */
static char *
json_nuls(char *json)
{
	struct buf b;

	buf_init(&b, 1 << 24);
	for (const char *q = json; *q != '\0'; q++) {
		if (strncmp(q, "\\u0001", 6) == 0)
			q += 5;
		else if (*q != '\x01') {
			jput(&b, "%c", *q);
			continue;
		}
		jput(&b, "\\u0000");
	}
	free(json);
	return buf_steal(&b, NULL);
}

static void
pb_nuls(uint8_t *pb, size_t len, const char *const *marked, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t m = strlen(marked[i]);
		bool found = false;

		for (size_t k = 0; k + m <= len; k++) {
			if (memcmp(pb + k, marked[i], m) != 0)
				continue;
			for (size_t c = 0; c < m; c++)
				if (pb[k + c] == 1)
					pb[k + c] = 0;
			found = true;
		}
		assert_true(found);
	}
}

#define FFFD "\xef\xbf\xbd"

/* NUL (U+0000) in string values, JSON's \u0000 or a protobuf string's
 * byte: the whole value is kept, with U+FFFD in each NUL's place, in
 * columns and in the jsonb text (which refuses \u0000), and the batch
 * counts the values and says where the first was. */
static void
test_nul_strings(void **state)
{
	static const char *const marked[] = {"nul\x01svc", "span\x01na\x01me",
					     "k\x01"
					     "ey",
					     "v\x01"
					     "al"};
	static const struct tattr attrs[] = {S("k\x01"
					       "ey",
					       "v\x01"
					       "al")};
	struct treq q = one_span(attrs, 1);
	struct otlp_batch *bj = NULL, *bp = NULL;
	char err[256], *json;
	size_t plen;
	uint8_t *pb;

	(void)state;
	q.res[0].attrs[0] = (struct tattr)S("service.name", "nul\x01svc");
	q.res[0].scopes[0].spans[0].name = "span\x01na\x01me";
	json = trace_json(&q);
	pb = trace_pb(&q, &plen);
	json = json_nuls(json);
	assert_non_null(strstr(json, "\"nul\\u0000svc\""));
	pb_nuls(pb, plen, marked, 4);
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    NULL, NULL, &bj, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, NULL, NULL,
					    &bp, err, sizeof(err)),
			 STATUS_OK);
	assert_same_batch(bj, bp);
	assert_int_equal(bj->n_spans, 1);
	assert_string_equal(bj->spans[0].service_name, "nul" FFFD "svc");
	assert_string_equal(bj->spans[0].name, "span" FFFD "na" FFFD "me");
	assert_string_equal(bj->spans[0].attributes_json,
			    "{\"k" FFFD "ey\":\"v" FFFD "al\"}");
	assert_non_null(
		strstr(bj->spans[0].resource_json, "\"nul" FFFD "svc\""));
	assert_null(strstr(bj->spans[0].resource_json, "\\u0000"));
	/* four values (two NULs in the name are one value), nothing
	 * rejected */
	assert_int_equal(bj->replaced, 4);
	assert_int_equal(bp->replaced, 4);
	assert_int_equal(bj->rejected, 0);
	assert_string_equal(
		bj->message,
		"4 string values held NUL (U+0000), which the store cannot "
		"keep: stored with U+FFFD in its place (the first: "
		"resourceSpans[0].resource.attributes[0].value.stringValue)");
	assert_non_null(strstr(bp->message,
			       "4 string values held NUL (U+0000), which the "
			       "store cannot keep: stored with U+FFFD in its "
			       "place (the first: AnyValue.string_value at "
			       "byte "));
	otlp_batch_free(bj);
	otlp_batch_free(bp);
	free(json);
	free(pb);

	/* with a rejection: its reason first, then the values */
	q = one_span(NULL, 0);
	q.res[0].attrs[0] = (struct tattr)S("service.name", "nul\x01svc");
	q.res[0].scopes[0].spans[0].end = T0 - 1;
	json = trace_json(&q);
	json = json_nuls(json);
	assert_int_equal(otlp_decode_traces(JSON, NULL, json, strlen(json),
					    NULL, NULL, &bj, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(bj->n_spans, 0);
	assert_int_equal(bj->rejected, 1);
	assert_string_equal(bj->message,
			    "resource 0, scope 0, span 0: span ends before it "
			    "starts; 1 string value held NUL (U+0000), which "
			    "the store cannot keep: stored with U+FFFD in its "
			    "place (the first: resourceSpans[0].resource."
			    "attributes[0].value.stringValue)");
	otlp_batch_free(bj);
	free(json);

	/* no NUL, nothing rejected: nothing to say */
	q = one_span(NULL, 0);
	pb = trace_pb(&q, &plen);
	assert_int_equal(otlp_decode_traces(PROTO, NULL, pb, plen, NULL, NULL,
					    &bp, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(bp->replaced, 0);
	assert_string_equal(bp->message, "");
	otlp_batch_free(bp);
	free(pb);
}

/* The same for metric points: name and service_name columns. */
static void
test_nul_metrics(void **state)
{
	static const char *const marked[] = {"a\x01"
					     "b",
					     "c\x01"
					     "d"};
	struct tmreq m = {.scope = "s", .n = 1};
	struct otlp_batch *bj = NULL, *bp = NULL;
	char *json;
	size_t plen;
	uint8_t *pb;

	(void)state;
	m.res[0] = (struct tattr)S("service.name", marked[0]);
	m.metrics[0] = (struct tmetric){marked[1], NULL,  NULL, M_GAUGE,
					0,	   false, 1,	{{.time = T0}}};
	json = metrics_json(&m);
	pb = metrics_pb(&m, &plen);
	json = json_nuls(json);
	pb_nuls(pb, plen, marked, 2);
	decode_metrics_pair(json, pb, plen, &bj, &bp);
	for (int i = 0; i < 2; i++) {
		struct otlp_batch *b = i == 0 ? bj : bp;

		assert_int_equal(b->n_points, 1);
		assert_string_equal(b->points[0].service_name, "a" FFFD "b");
		assert_string_equal(b->points[0].name, "c" FFFD "d");
		assert_int_equal(b->replaced, 2);
		assert_non_null(strstr(b->message, "2 string values held NUL"));
	}
	otlp_batch_free(bj);
	otlp_batch_free(bp);
	free(json);
	free(pb);
}

/* ---- responses ----------------------------------------------------------- */

/* The protobuf trace answer for rejected and msg, decoded with the
 * generated code: a partial_success that carries both. */
static void
assert_trace_partial(size_t rejected, const char *msg)
{
	Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse
		*r;
	char *body;
	size_t len;

	assert_int_equal(otlp_response_body(OTLP_ENCODING_PROTOBUF,
					    OTLP_SIGNAL_TRACES, rejected, msg,
					    &body, &len),
			 STATUS_OK);
	r = opentelemetry__proto__collector__trace__v1__export_trace_service_response__unpack(
		NULL, len, (uint8_t *)body);
	assert_non_null(r);
	assert_non_null(r->partial_success);
	assert_int_equal(r->partial_success->rejected_spans, rejected);
	assert_string_equal(r->partial_success->error_message, msg);
	opentelemetry__proto__collector__trace__v1__export_trace_service_response__free_unpacked(
		r, NULL);
	free(body);
}

static void
test_response_bodies(void **state)
{
	char *body;
	size_t len;

	(void)state;
	assert_int_equal(otlp_response_body(OTLP_ENCODING_JSON,
					    OTLP_SIGNAL_TRACES, 0, NULL, &body,
					    &len),
			 STATUS_OK);
	assert_string_equal(body, "{}");
	assert_int_equal(len, 2);
	free(body);
	assert_int_equal(otlp_response_body(OTLP_ENCODING_JSON,
					    OTLP_SIGNAL_TRACES, 3,
					    "span 1: \"bad\"", &body, &len),
			 STATUS_OK);
	assert_string_equal(body,
			    "{\"partialSuccess\":{\"rejectedSpans\":\"3\","
			    "\"errorMessage\":\"span 1: \\\"bad\\\"\"}}");
	free(body);
	assert_int_equal(otlp_response_body(OTLP_ENCODING_JSON,
					    OTLP_SIGNAL_METRICS, 2, NULL, &body,
					    &len),
			 STATUS_OK);
	assert_string_equal(
		body, "{\"partialSuccess\":{\"rejectedDataPoints\":\"2\"}}");
	free(body);
	/* a warning, nothing rejected: no count (proto3 JSON leaves out a
	 * zero), the message */
	assert_int_equal(otlp_response_body(OTLP_ENCODING_JSON,
					    OTLP_SIGNAL_TRACES, 0, "changed",
					    &body, &len),
			 STATUS_OK);
	assert_string_equal(body, "{\"partialSuccess\":{\"errorMessage\":"
				  "\"changed\"}}");
	free(body);
	assert_int_equal(otlp_response_body(OTLP_ENCODING_JSON,
					    OTLP_SIGNAL_TRACES, 0, "", &body,
					    &len),
			 STATUS_OK);
	assert_string_equal(body, "{}");
	free(body);

	/* protobuf: decode with the generated code */
	assert_int_equal(otlp_response_body(OTLP_ENCODING_PROTOBUF,
					    OTLP_SIGNAL_TRACES, 0, NULL, &body,
					    &len),
			 STATUS_OK);
	assert_int_equal(len, 0);
	free(body);
	assert_trace_partial(5, "why");
	assert_int_equal(otlp_response_body(OTLP_ENCODING_PROTOBUF,
					    OTLP_SIGNAL_METRICS, 7, "m", &body,
					    &len),
			 STATUS_OK);
	{
		Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceResponse
			*r = opentelemetry__proto__collector__metrics__v1__export_metrics_service_response__unpack(
				NULL, len, (uint8_t *)body);

		assert_non_null(r);
		assert_int_equal(r->partial_success->rejected_data_points, 7);
		assert_string_equal(r->partial_success->error_message, "m");
		opentelemetry__proto__collector__metrics__v1__export_metrics_service_response__free_unpacked(
			r, NULL);
	}
	free(body);
	/* a warning: the count 0, the message */
	assert_trace_partial(0, "changed");

	/* google.rpc.Status */
	assert_int_equal(otlp_status_body(OTLP_ENCODING_JSON, 3, "bad \"x\"",
					  &body, &len),
			 STATUS_OK);
	assert_string_equal(body, "{\"code\":3,\"message\":\"bad \\\"x\\\"\"}");
	free(body);
	assert_int_equal(
		otlp_status_body(OTLP_ENCODING_JSON, 0, "m", &body, &len),
		STATUS_OK);
	assert_string_equal(body, "{\"message\":\"m\"}");
	free(body);
	assert_int_equal(otlp_status_body(OTLP_ENCODING_PROTOBUF, 3, "oops",
					  &body, &len),
			 STATUS_OK);
	assert_int_equal(len, 8);
	assert_memory_equal(body, "\x08\x03\x12\x04oops", 8);
	free(body);
}

/* The words every answer uses for status codes and span kinds. */
static void
test_status_kind_names(void **state)
{
	(void)state;
	assert_string_equal(otlp_status_name(0), "unset");
	assert_string_equal(otlp_status_name(1), "ok");
	assert_string_equal(otlp_status_name(2), "error");
	assert_string_equal(otlp_status_name(3), "unset");
	assert_string_equal(otlp_status_name(-1), "unset");
	assert_string_equal(otlp_kind_name(0), "unspecified");
	assert_string_equal(otlp_kind_name(1), "internal");
	assert_string_equal(otlp_kind_name(2), "server");
	assert_string_equal(otlp_kind_name(3), "client");
	assert_string_equal(otlp_kind_name(4), "producer");
	assert_string_equal(otlp_kind_name(5), "consumer");
	assert_string_equal(otlp_kind_name(6), "unspecified");
	assert_string_equal(otlp_kind_name(-1), "unspecified");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_kind_names),
		cmocka_unit_test(test_gzip_bomb), /* first: peak RSS baseline */
		cmocka_unit_test(test_json_and_protobuf_agree),
		cmocka_unit_test(test_semantic_convention_aliases),
		cmocka_unit_test(test_source_classification),
		cmocka_unit_test(test_partial_rejection),
		cmocka_unit_test(test_json_ids),
		cmocka_unit_test(test_metrics_json_and_protobuf_agree),
		cmocka_unit_test(test_metric_rejection),
		cmocka_unit_test(test_gzip_bodies),
		cmocka_unit_test(test_malformed_json),
		cmocka_unit_test(test_json_leniency),
		cmocka_unit_test(test_truncated_protobuf),
		cmocka_unit_test(test_malformed_protobuf),
		cmocka_unit_test(test_protobuf_unknown_fields),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_empty_requests),
		cmocka_unit_test(test_content_types),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_strings_bounded),
		cmocka_unit_test(test_indexed_columns_bounded),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_nul_strings),
		cmocka_unit_test(test_nul_metrics),
		cmocka_unit_test(test_response_bodies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

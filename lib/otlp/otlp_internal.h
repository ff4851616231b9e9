/*
 * otlp_internal.h - shared by lib/otlp*.c only, never included elsewhere.
 * A decode runs in two halves over one message tree (the protobuf-c structs
 * generated from proto/): otlp.c unpacks protobuf into it and otlp_json.c
 * builds it from JSON; otlp_rows.c turns it into rows.  Every allocation of
 * a decode comes from arenas charged to one budget (max_memory).
 */
#ifndef SEXTANT_OTLP_INTERNAL_H
#define SEXTANT_OTLP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "otlp/otlp.h"

/*
 * Short names for the generated types, whose own names run to 80
 * characters: a typedef of a typedef, kept to this module.
 */
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Trace__V1__Span pb_span;
typedef Opentelemetry__Proto__Trace__V1__Span__Event pb_span_event;
typedef Opentelemetry__Proto__Trace__V1__Span__Link pb_span_link;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans pb_resource_spans;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans pb_scope_spans;
typedef Opentelemetry__Proto__Metrics__V1__ResourceMetrics pb_resource_metrics;
typedef Opentelemetry__Proto__Metrics__V1__ScopeMetrics pb_scope_metrics;
typedef Opentelemetry__Proto__Metrics__V1__Metric pb_metric;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint pb_number_point;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint
	pb_histogram_point;
typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest
	pb_trace_request;
typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest
	pb_metrics_request;

/* Bytes charged to all the arenas of one decode. */
struct otlp_budget {
	size_t used;
	size_t max;
	bool exceeded; /* an allocation was refused for the budget */
};

/* A chunked bump allocator (otlp.c makes and frees it per request):
 * nothing is freed until the request ends.
 *
 * n bytes aligned for any type, uninitialised; NULL past the budget
 * (budget->exceeded set) or on ENOMEM.  n may be 0. */
void *otlp_arena_alloc(struct otlp_arena *a, size_t n);

/* STATUS_LIMIT when the budget ran out, else STATUS_NOMEM: what a NULL
 * from otlp_arena_alloc meant. */
int otlp_arena_failure(const struct otlp_arena *a);

/*
 * String values that held NUL (U+0000): PostgreSQL text and jsonb cannot
 * hold it, and a C string would end there.  The decoders count them and
 * put U+FFFD in each NUL's place (JSON: as it unescapes \u0000; protobuf:
 * an 0xff byte, which otlp_rows.c replaces as it does any invalid UTF-8).
 */
struct otlp_nuls {
	size_t values;	 /* string values changed */
	char first[160]; /* where the first one was, "" when none */
};

/*
 * Builds the message tree of type desc from OTLP/JSON text (len bytes) in
 * arena a; the tree owns copies of every string.  NUL characters of string
 * values are counted in *nuls.  STATUS_INVALID (err says where),
 * STATUS_LIMIT (past max_memory), STATUS_NOMEM.
 */
int otlp_json_decode(const ProtobufCMessageDescriptor *desc, const char *text,
		     size_t len, const struct otlp_limits *lim,
		     struct otlp_arena *a, ProtobufCMessage **msg,
		     struct otlp_nuls *nuls, char *err, size_t errlen);

/*
 * Appends the rows of a decoded request to b (whose arena must be set);
 * items refused one by one are counted in b->rejected.  STATUS_LIMIT or
 * STATUS_NOMEM when memory runs out, with err set.
 */
int otlp_rows_traces(const pb_trace_request *req, const struct otlp_limits *lim,
		     const struct otlp_source_rules *rules,
		     struct otlp_batch *b, char *err, size_t errlen);
int otlp_rows_metrics(const pb_metrics_request *req,
		      const struct otlp_limits *lim,
		      const struct otlp_source_rules *rules,
		      struct otlp_batch *b, char *err, size_t errlen);

/* Sets err to the formatted message (lowercase, no trailing period). */
void otlp_set_err(char *err, size_t errlen, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

/* Appends " (key)" to err, the configuration key of the limit the message
 * names (struct otlp_limits); nothing when key is NULL. */
void otlp_limit_key(char *err, size_t errlen, const char *key);

#endif

/*
 * otlp.h - decoding of OTLP/HTTP export requests (traces and metrics, as
 * JSON or protobuf, optionally gzip-compressed) into flat rows ready for a
 * COPY into the store.  No HTTP and no database: server/ maps the statuses
 * to HTTP codes and hands the rows to the store.
 */
#ifndef SEXTANT_OTLP_H
#define SEXTANT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/*
 * Bounds on one request.  Everything an exporter sends is bounded before it
 * is allocated: gzip bombs stop at max_decompressed, huge batches are
 * refused whole (STATUS_LIMIT, HTTP 413) rather than half-stored.
 */
struct otlp_limits {
	/* Body bytes after gzip (or as sent when not compressed).  The OTLP
	 * spec recommends 20 MiB. */
	size_t max_decompressed;
	/* Spans per trace request, data points per metrics request, counted
	 * before any is converted (rejected items count too). */
	size_t max_spans;
	size_t max_points;
	/* Longest string kept, in bytes: attribute values and keys, names,
	 * status messages, extracted columns (indexed ones have lower
	 * bounds, OTLP_MAX_*_BYTES).  Longer strings are cut at a UTF-8
	 * character boundary and end with OTLP_TRUNCATED. */
	size_t max_attr_bytes;
	/* What one decode may allocate besides the decompressed body: the
	 * decoded message tree and the rows (about 3 to 5 times the body
	 * for typical spans). */
	size_t max_memory;
	/* What the caller's configuration calls max_decompressed and
	 * max_spans / max_points ("ingest.max_items"): a request past one
	 * is told the key, "... (ingest.max_items)".  NULL: not said. */
	const char *decompressed_key;
	const char *items_key;
};

/* Appended to a string cut at max_attr_bytes. */
#define OTLP_TRUNCATED "\xe2\x80\xa6[truncated]"

/*
 * Longest value, in bytes before OTLP_TRUNCATED, of the columns that the
 * store's btree indexes hold: PostgreSQL refuses an index entry past 2704
 * bytes ("index row size ... exceeds btree version 4 maximum"), and with
 * it the whole batch, and it does not shrink random text to fit.  The
 * lower of these and max_attr_bytes applies; the attribute keeps up to
 * max_attr_bytes in the attributes JSON.  otlp_rows.c checks at compile
 * time that no index of migrations/ can outgrow the limit with them.
 */
#define OTLP_MAX_SERVICE_NAME_BYTES 512 /* spans, metric_points */
#define OTLP_MAX_SESSION_ID_BYTES   512
#define OTLP_MAX_GENAI_NAME_BYTES   128 /* gen_ai_provider, _operation */
#define OTLP_MAX_GENAI_MODEL_BYTES  256 /* gen_ai_request/response_model */
#define OTLP_MAX_HTTP_METHOD_BYTES  64
#define OTLP_MAX_HTTP_PATH_BYTES    1024 /* http_route, url_path */
#define OTLP_MAX_RPC_NAME_BYTES	    512	 /* rpc_service, rpc_method */
#define OTLP_MAX_DB_OPERATION_BYTES 256
#define OTLP_MAX_DB_TABLE_BYTES	    512
#define OTLP_MAX_METRIC_NAME_BYTES  1024

/* Deepest nesting of messages (protobuf) or of JSON values accepted: real
 * requests stay far below; it bounds recursion on hostile input. */
#define OTLP_MAX_DEPTH 64

/* 20 MiB body, 100000 spans, 200000 points, 8 KiB strings, 256 MiB. */
void otlp_limits_default(struct otlp_limits *lim);

/*
 * Where a span (or point) was seen: by eBPF auto-instrumentation (Beyla,
 * OBI) or by an OpenTelemetry SDK.  The same request seen both ways carries
 * the same trace and span ids; the source keeps both rows apart.
 */
enum otlp_source {
	OTLP_SOURCE_OTLP = 0,
	OTLP_SOURCE_EBPF = 1,
};

/* "otlp" or "ebpf". */
const char *otlp_source_name(enum otlp_source s);

/* A span's status code as answers show it: "ok" (1), "error" (2),
 * "unset" (0 and anything else). */
const char *otlp_status_name(int code);

/* A span kind as answers show it: "internal", "server", "client",
 * "producer", "consumer" (1..5), "unspecified" (0 and anything else). */
const char *otlp_kind_name(int kind);

/*
 * Items come from eBPF when their resource's telemetry.sdk.name equals one
 * of sdk_names, or their instrumentation scope name starts with one of
 * scope_prefixes; otherwise from OTLP.  The strings are borrowed.
 */
struct otlp_source_rules {
	const char *const *sdk_names;
	size_t n_sdk_names;
	const char *const *scope_prefixes;
	size_t n_scope_prefixes;
};

/* sdk_names "beyla", "opentelemetry-ebpf-instrumentation"; scope_prefixes
 * "github.com/grafana/beyla", "go.opentelemetry.io/obi". */
extern const struct otlp_source_rules otlp_default_source_rules;

/*
 * One span.  Strings are NUL-terminated valid UTF-8 (invalid sequences
 * become U+FFFD, and so does a NUL character inside a value: PostgreSQL
 * text and jsonb cannot hold it) and belong to the batch.  NULL means absent, never "".  The *_json fields are compact JSON
 * for jsonb columns: attributes and resource_json are objects mapping key
 * to value ("{}" when empty), events_json an array of
 * {"time_unix_nano": "<decimal>", "name": ..., "attributes": {...}}.
 * AnyValue maps to JSON as: string, bool, int (a number when |v| <= 2^53,
 * else a decimal string), double (a number; NaN and infinities as the
 * strings "NaN", "Infinity", "-Infinity"), array, kvlist (an object),
 * bytes (base64), empty (null).
 */
struct otlp_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_span_id[8]; /* zero when !has_parent */
	bool has_parent;
	/* from the resource */
	const char *service_name;      /* service.name */
	const char *service_namespace; /* service.namespace */
	const char *service_version;   /* service.version */
	const char *k8s_namespace;     /* k8s.namespace.name */
	const char *k8s_deployment;    /* k8s.deployment.name */
	const char *k8s_pod;	       /* k8s.pod.name */
	const char *host_name;	       /* host.name */
	/* from the scope */
	const char *scope_name;
	const char *scope_version;
	/* the span */
	const char *name; /* never NULL or empty */
	int kind;	  /* 0..5 as OTLP SpanKind; other values become 0 */
	uint64_t start_unix_nano;
	uint64_t end_unix_nano; /* >= start_unix_nano */
	int status_code;	/* 0 unset, 1 ok, 2 error; others become 0 */
	const char *status_message;
	enum otlp_source source;
	/*
	 * Extracted from the span attributes, current semantic-convention
	 * name first, then the older ones (see otlp_rows.c for the table).
	 * Integers are -1 when absent.
	 */
	const char *http_method; /* http.request.method, http.method */
	/* http.route, else the path of url.path, http.target, url.full,
	 * http.url (query and fragment removed) */
	const char *http_route;
	int http_status; /* http.response.status_code, http.status_code */
	const char *rpc_system; /* rpc.system.name, rpc.system */
	/* rpc.service, else the part of a fully-qualified rpc.method
	 * ("pkg.Service/Method") before the last '/' */
	const char *rpc_service;
	const char *rpc_method; /* rpc.method, after the last '/' */
	/* rpc.grpc.status_code, else rpc.response.status_code as a gRPC code
	 * name ("UNAVAILABLE") or, when the RPC system is grpc, a number */
	int grpc_status;
	const char *db_system;	  /* db.system.name, db.system */
	const char *db_operation; /* db.operation.name, db.operation */
	/* db.collection.name, db.sql.table, db.mongodb.collection,
	 * db.cassandra.table */
	const char *db_table;
	const char *session_id;	      /* session.id, gen_ai.conversation.id */
	const char *gen_ai_system;    /* gen_ai.provider.name, gen_ai.system */
	const char *gen_ai_operation; /* gen_ai.operation.name */
	const char *gen_ai_request_model;  /* gen_ai.request.model */
	const char *gen_ai_response_model; /* gen_ai.response.model */
	/* gen_ai.usage.input_tokens, gen_ai.usage.prompt_tokens */
	int64_t input_tokens;
	/* gen_ai.usage.output_tokens, gen_ai.usage.completion_tokens */
	int64_t output_tokens;
	const char *attributes_json;
	const char *resource_json;
	const char *events_json;
	/* [{"trace_id","span_id","attributes"}], NULL when the span has no
	 * links */
	const char *links_json;
	const char *trace_state; /* W3C tracestate, NULL when empty */
	/* url.path, else the path of http.target (query removed) */
	const char *url_path;
};

enum otlp_point_type {
	OTLP_POINT_GAUGE = 1,
	OTLP_POINT_SUM = 2,
	OTLP_POINT_HISTOGRAM = 3,
};

/* "gauge", "sum" or "histogram". */
const char *otlp_point_type_name(enum otlp_point_type t);

/* "OK", "CANCELLED", ... "UNAUTHENTICATED" for a gRPC status code;
 * "UNKNOWN" outside 0..16. */
const char *otlp_grpc_code_name(int code);

/* OTLP AggregationTemporality. */
enum otlp_temporality {
	OTLP_TEMPORALITY_UNSPECIFIED = 0,
	OTLP_TEMPORALITY_DELTA = 1,
	OTLP_TEMPORALITY_CUMULATIVE = 2,
};

/* DataPointFlags: the point marks a gap, its value is meaningless. */
#define OTLP_FLAG_NO_RECORDED_VALUE 1u

/*
 * One metric data point: gauge, sum or histogram.  Strings and arrays
 * belong to the batch, same rules as otlp_span.  Exponential histograms and
 * summaries are not stored: their points are rejected (counted).
 */
struct otlp_point {
	enum otlp_point_type type;
	const char *name; /* never NULL or empty */
	const char *unit;
	const char *description;
	const char *service_name;
	const char *service_namespace;
	const char *scope_name;
	enum otlp_source source;
	uint64_t start_unix_nano; /* 0 when not set (gauges) */
	uint64_t time_unix_nano;  /* never 0 */
	uint32_t flags;		  /* OTLP_FLAG_NO_RECORDED_VALUE */
	/* gauge and sum: the value (NaN when the point is flagged
	 * OTLP_FLAG_NO_RECORDED_VALUE); is_int says it came as asInt, exact
	 * in int_value.  NaN for histograms. */
	double value;
	bool is_int;
	int64_t int_value;
	/* sum and histogram */
	enum otlp_temporality temporality;
	bool monotonic; /* sum only */
	/* histogram: n_bucket_counts == n_bounds + 1, or both 0; bounds
	 * strictly increasing */
	uint64_t count;
	bool has_sum, has_min, has_max;
	double sum, min, max;
	size_t n_bounds;
	const double *bounds;
	size_t n_bucket_counts;
	const uint64_t *bucket_counts;
	const char *attributes_json;
	const char *resource_json;
};

struct otlp_arena;

/*
 * The rows of one request.  spans/points are NULL when there are none.
 * rejected counts items refused one by one (bad ids, end before start, no
 * name, ...) while the rest was kept: the partial_success of the response.
 * replaced counts the string values (attribute keys and values, names,
 * ...) stored with U+FFFD where they held NUL (U+0000).  message is the
 * partial_success error_message for both, "" when there is nothing to say
 * (then the answer carries no partial_success).
 */
struct otlp_batch {
	struct otlp_span *spans;
	size_t n_spans;
	struct otlp_point *points;
	size_t n_points;
	size_t rejected;
	char reject_reason[256]; /* the first rejection, "" when none */
	size_t replaced;
	/* reject_reason, then how many values held NUL and the first one's
	 * place ("resourceSpans[0].resource.attributes[0].value.stringValue"
	 * in JSON, "AnyValue.string_value at byte 57" in protobuf) */
	char message[512];
	struct otlp_arena *arena; /* private: owns every string and array */
};

/*
 * Decode an OTLP/HTTP ExportTraceServiceRequest.
 *
 * content_type: "application/json" or "application/x-protobuf" (also
 * "application/protobuf"), parameters such as "; charset=utf-8" ignored,
 * case-insensitive.  content_encoding: NULL, "", "identity" or "gzip".
 * body/len: borrowed.  lim and rules may be NULL for the defaults.
 * A zero-length body is an empty request.
 *
 * Returns STATUS_OK with *out set (free with otlp_batch_free; it may hold
 * zero spans), or NULL *out and:
 *   STATUS_UNSUPPORTED another content type or encoding (HTTP 415)
 *   STATUS_INVALID     malformed body: err says what and where (400)
 *   STATUS_LIMIT       past a limit of lim (413)
 *   STATUS_NOMEM
 * err (errlen bytes, may be 0) gets a lowercase message safe to send back
 * to the exporter.  Thread-safe: no shared state.
 */
int otlp_decode_traces(const char *content_type, const char *content_encoding,
		       const void *body, size_t len,
		       const struct otlp_limits *lim,
		       const struct otlp_source_rules *rules,
		       struct otlp_batch **out, char *err, size_t errlen) WUR;

/* The same for an ExportMetricsServiceRequest: fills points. */
int otlp_decode_metrics(const char *content_type, const char *content_encoding,
			const void *body, size_t len,
			const struct otlp_limits *lim,
			const struct otlp_source_rules *rules,
			struct otlp_batch **out, char *err, size_t errlen) WUR;

/* Frees the batch and everything it points to.  Accepts NULL. */
void otlp_batch_free(struct otlp_batch *b);

/* ---- responses ------------------------------------------------------- */

enum otlp_encoding {
	OTLP_ENCODING_JSON = 1,
	OTLP_ENCODING_PROTOBUF = 2,
};

enum otlp_signal {
	OTLP_SIGNAL_TRACES = 1,
	OTLP_SIGNAL_METRICS = 2,
};

/*
 * The encoding a Content-Type names; STATUS_UNSUPPORTED for any other
 * type (and NULL).  The response uses the request's encoding.
 */
int otlp_content_type_encoding(const char *content_type,
			       enum otlp_encoding *enc) WUR;

/* "application/json" or "application/x-protobuf". */
const char *otlp_encoding_content_type(enum otlp_encoding enc);

/*
 * The body of a 200 answer: Export{Trace,Metrics}ServiceResponse, with
 * partial_success set when rejected > 0 or error_message is not empty
 * (rejected_spans or rejected_data_points, 0 for a warning about a request
 * accepted whole, and error_message), unset otherwise: pass the batch's
 * rejected and message.  *body is malloc'd (caller frees), *len its size;
 * STATUS_NOMEM.
 */
int otlp_response_body(enum otlp_encoding enc, enum otlp_signal sig,
		       size_t rejected, const char *error_message, char **body,
		       size_t *len) WUR;

/*
 * The body of a 4xx/5xx answer: a google.rpc.Status with code (a gRPC
 * code, 0 to leave it out) and message.  *body is malloc'd (caller frees).
 */
int otlp_status_body(enum otlp_encoding enc, int code, const char *message,
		     char **body, size_t *len) WUR;

#endif

/*
 * otlp_rows.c - the decoded OTLP message tree (from protobuf or JSON) to
 * rows: each span or data point is checked and kept or rejected alone
 * (partial success), attributes are read once for the semantic-convention
 * columns, the source is classified, and attributes are rendered as
 * compact JSON for jsonb.  Every string is made valid UTF-8 and bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "otlp/otlp_internal.h"

struct rows {
	const struct otlp_limits *lim;
	const struct otlp_source_rules *rules;
	struct otlp_batch *b;
	struct otlp_arena *a;
	struct buf js; /* scratch: JSON being rendered, slow-path text */
	char *err;
	size_t errlen;
};

/* ---- semantic conventions ------------------------------------------------ */

/*
 * Where each extracted column comes from.  A column may have several
 * attribute names: the current semantic-convention name ranks 0, older or
 * fallback names after it, and the lowest rank present wins whatever the
 * attribute order.  Resource columns and span columns share the table;
 * each is looked up in its own attribute list.
 */
enum slot {
	SL_SERVICE_NAME,
	SL_SERVICE_NAMESPACE,
	SL_SERVICE_VERSION,
	SL_K8S_NAMESPACE,
	SL_K8S_DEPLOYMENT,
	SL_K8S_POD,
	SL_HOST_NAME,
	SL_SDK_NAME,
	SL_HTTP_METHOD,
	SL_HTTP_ROUTE,
	SL_HTTP_STATUS,
	SL_RPC_SYSTEM,
	SL_RPC_SERVICE,
	SL_RPC_METHOD,
	SL_GRPC_STATUS,
	SL_DB_SYSTEM,
	SL_DB_OPERATION,
	SL_DB_TABLE,
	SL_SESSION_ID,
	SL_GENAI_SYSTEM,
	SL_GENAI_OPERATION,
	SL_GENAI_REQUEST_MODEL,
	SL_GENAI_RESPONSE_MODEL,
	SL_INPUT_TOKENS,
	SL_OUTPUT_TOKENS,
	SL_COUNT
};

/* Ranks of the SL_HTTP_ROUTE names: how the value becomes a route. */
enum {
	ROUTE_ROUTE = 0,  /* http.route: a template, as is */
	ROUTE_PATH = 1,	  /* url.path */
	ROUTE_TARGET = 2, /* http.target: path and query */
	ROUTE_URL = 3,	  /* url.full, http.url: a whole URL */
};

struct alias {
	const char *key;
	unsigned char slot;
	unsigned char rank;
};

/* Sorted by key (strcmp order) for bsearch. */
static const struct alias aliases[] = {
	{"db.cassandra.table", SL_DB_TABLE, 3},
	{"db.collection.name", SL_DB_TABLE, 0},
	{"db.mongodb.collection", SL_DB_TABLE, 2},
	{"db.operation", SL_DB_OPERATION, 1},
	{"db.operation.name", SL_DB_OPERATION, 0},
	{"db.sql.table", SL_DB_TABLE, 1},
	{"db.system", SL_DB_SYSTEM, 1},
	{"db.system.name", SL_DB_SYSTEM, 0},
	{"gen_ai.conversation.id", SL_SESSION_ID, 1},
	{"gen_ai.operation.name", SL_GENAI_OPERATION, 0},
	{"gen_ai.provider.name", SL_GENAI_SYSTEM, 0},
	{"gen_ai.request.model", SL_GENAI_REQUEST_MODEL, 0},
	{"gen_ai.response.model", SL_GENAI_RESPONSE_MODEL, 0},
	{"gen_ai.system", SL_GENAI_SYSTEM, 1},
	{"gen_ai.usage.completion_tokens", SL_OUTPUT_TOKENS, 1},
	{"gen_ai.usage.input_tokens", SL_INPUT_TOKENS, 0},
	{"gen_ai.usage.output_tokens", SL_OUTPUT_TOKENS, 0},
	{"gen_ai.usage.prompt_tokens", SL_INPUT_TOKENS, 1},
	{"host.name", SL_HOST_NAME, 0},
	{"http.method", SL_HTTP_METHOD, 1},
	{"http.request.method", SL_HTTP_METHOD, 0},
	{"http.response.status_code", SL_HTTP_STATUS, 0},
	{"http.route", SL_HTTP_ROUTE, ROUTE_ROUTE},
	{"http.status_code", SL_HTTP_STATUS, 1},
	{"http.target", SL_HTTP_ROUTE, ROUTE_TARGET},
	{"http.url", SL_HTTP_ROUTE, ROUTE_URL + 1},
	{"k8s.deployment.name", SL_K8S_DEPLOYMENT, 0},
	{"k8s.namespace.name", SL_K8S_NAMESPACE, 0},
	{"k8s.pod.name", SL_K8S_POD, 0},
	{"rpc.grpc.status_code", SL_GRPC_STATUS, 0},
	{"rpc.method", SL_RPC_METHOD, 0},
	{"rpc.response.status_code", SL_GRPC_STATUS, 1},
	{"rpc.service", SL_RPC_SERVICE, 0},
	{"rpc.system", SL_RPC_SYSTEM, 1},
	{"rpc.system.name", SL_RPC_SYSTEM, 0},
	{"service.name", SL_SERVICE_NAME, 0},
	{"service.namespace", SL_SERVICE_NAMESPACE, 0},
	{"service.version", SL_SERVICE_VERSION, 0},
	{"session.id", SL_SESSION_ID, 0},
	{"telemetry.sdk.name", SL_SDK_NAME, 0},
	{"url.full", SL_HTTP_ROUTE, ROUTE_URL},
	{"url.path", SL_HTTP_ROUTE, ROUTE_PATH},
};

/* gRPC status code names, by value (grpc/doc/statuscodes.md). */
static const char *const grpc_codes[] = {
	"OK",
	"CANCELLED",
	"UNKNOWN",
	"INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED",
	"NOT_FOUND",
	"ALREADY_EXISTS",
	"PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION",
	"ABORTED",
	"OUT_OF_RANGE",
	"UNIMPLEMENTED",
	"INTERNAL",
	"UNAVAILABLE",
	"DATA_LOSS",
	"UNAUTHENTICATED",
};

struct found {
	const pb_any_value *v[SL_COUNT];
	unsigned char rank[SL_COUNT];
};

static int
alias_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct alias *)elem)->key);
}

static bool
any_is_empty(const pb_any_value *v)
{
	return v == NULL ||
	       v->value_case ==
		       OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET ||
	       (v->value_case ==
			OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
		(v->string_value == NULL || v->string_value[0] == '\0'));
}

static void
find_attrs(pb_key_value *const *kv, size_t n, struct found *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		const struct alias *al;

		if (kv[i]->key == NULL || any_is_empty(kv[i]->value))
			continue;
		al = bsearch(kv[i]->key, aliases,
			     sizeof(aliases) / sizeof(aliases[0]),
			     sizeof(aliases[0]), alias_cmp);
		if (al == NULL)
			continue;
		if (f->v[al->slot] == NULL || al->rank < f->rank[al->slot]) {
			f->v[al->slot] = kv[i]->value;
			f->rank[al->slot] = al->rank;
		}
	}
}

/* ---- index bounds -------------------------------------------------------- */

/*
 * The widest btree index entry the OTLP_MAX_*_BYTES columns can make, for
 * every index of migrations/ that holds text from a request, against
 * PostgreSQL's limit (BTMaxItemSize of an 8 KiB page, 2704 bytes with the
 * tuple header).  Counted without compression, which random text defeats:
 *   a text cut at max: max + OTLP_TRUNCATED + 4-byte varlena header + 3
 *     bytes of alignment (IDX_TEXT);
 *   upper() of one (span_calls k1, k2): up to three times the bytes, as
 *     ICU's full case mapping turns U+0390 (2 bytes) into 3 characters of
 *     2 bytes (IDX_UPPER);
 *   any other column (timestamptz, bigint, smallint, integer, a 16- or
 *     8-byte bytea id, source, protocol, ''): 32 (IDX_FIXED);
 *   tuple header with null bitmap and the final alignment: 16 + 7.
 * TimescaleDB's compressed chunks index their segmentby columns
 * (service_name; service_name, name) with two timestamps: within the
 * metric_points entry below.
 */
#define IDX_LIMIT      2704
#define IDX_MARK       (sizeof(OTLP_TRUNCATED) - 1)
#define IDX_TEXT(max)  ((max) + IDX_MARK + 4 + 3)
#define IDX_UPPER(max) (3 * ((max) + IDX_MARK) + 4 + 3)
#define IDX_FIXED      32
#define IDX_HEAD       (16 + 7)

/* 0002 spans_service_time_idx (service_name, start_time) and 0007
 * spans_service_source_time_idx (service_name, source, start_time):
 * 533 + 64 + 23 = 620 */
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       2 * IDX_FIXED <=
		       IDX_LIMIT,
	       "spans service index entry too wide");
/* 0002 spans_session_idx (session_id, start_time): 533 + 32 + 23 = 588 */
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SESSION_ID_BYTES) + IDX_FIXED <=
		       IDX_LIMIT,
	       "spans session index entry too wide");
/* 0006 spans_genai_idx (start_time) INCLUDE (trace_id, span_id, source,
 * duration_ns, status_code, service_name, session_id, gen_ai_provider,
 * gen_ai_operation, gen_ai_request_model, gen_ai_response_model,
 * gen_ai_input_tokens, gen_ai_output_tokens): 8 fixed 256, service 533,
 * session 533, provider and operation 2 x 149, models 2 x 277, + 23
 * = 2197 */
_Static_assert(IDX_HEAD + 8 * IDX_FIXED +
			       IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       IDX_TEXT(OTLP_MAX_SESSION_ID_BYTES) +
			       2 * IDX_TEXT(OTLP_MAX_GENAI_NAME_BYTES) +
			       2 * IDX_TEXT(OTLP_MAX_GENAI_MODEL_BYTES) <=
		       IDX_LIMIT,
	       "spans GenAI index entry too wide");
/* 0003 metric_points_service_name_time_idx (service_name, name, time), and
 * (name, time) within it: 533 + 1045 + 32 + 23 = 1633 */
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       IDX_TEXT(OTLP_MAX_METRIC_NAME_BYTES) +
			       IDX_FIXED <=
		       IDX_LIMIT,
	       "metric_points index entry too wide");
/*
 * 0005 span_rollup_pkey (service_name, period, source, protocol, k1, k2,
 * status), k1 and k2 from span_calls: service 533 + 4 fixed 128 + 23 = 684
 * and
 *   http: k1 http_route or url_path 1045, k2 upper(http_method) 241: 1970
 *   grpc: k1 rpc_service || '/' || rpc_method 2 x 533, k2 '' 32: 1782
 *   sql: k1 upper(db_operation) 817, k2 db_table 533: 2034
 */
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       4 * IDX_FIXED +
			       IDX_TEXT(OTLP_MAX_HTTP_PATH_BYTES) +
			       IDX_UPPER(OTLP_MAX_HTTP_METHOD_BYTES) <=
		       IDX_LIMIT,
	       "span_rollup key of HTTP calls too wide");
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       4 * IDX_FIXED +
			       2 * IDX_TEXT(OTLP_MAX_RPC_NAME_BYTES) +
			       IDX_FIXED <=
		       IDX_LIMIT,
	       "span_rollup key of gRPC calls too wide");
_Static_assert(IDX_HEAD + IDX_TEXT(OTLP_MAX_SERVICE_NAME_BYTES) +
			       4 * IDX_FIXED +
			       IDX_UPPER(OTLP_MAX_DB_OPERATION_BYTES) +
			       IDX_TEXT(OTLP_MAX_DB_TABLE_BYTES) <=
		       IDX_LIMIT,
	       "span_rollup key of SQL calls too wide");

/* A column no index holds: only max_attr_bytes bounds it. */
#define NOT_INDEXED SIZE_MAX

/* ---- text ---------------------------------------------------------------- */

static int
fail_mem(struct rows *r, int rc)
{
	otlp_set_err(r->err, r->errlen,
		     rc == STATUS_LIMIT ? "decoded request needs more than %zu "
					  "bytes: send smaller batches"
					: "out of memory decoding the request",
		     r->lim->max_memory);
	return rc;
}

/* Length of the valid UTF-8 character at s (n > 0 bytes), 0 if invalid. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c < 0xe0)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c < 0xf0) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0; /* overlong, surrogate */
		return 3;
	}
	if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
	    (s[3] & 0xc0) != 0x80)
		return 0;
	if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0; /* overlong, past U+10FFFF */
	return 4;
}

/*
 * Length of the invalid sequence at s (n > 0 bytes): a lead byte and the
 * continuation bytes that could still have completed it, the "maximal
 * subpart" that Unicode (chapter 3, U+FFFD substitution) replaces with one
 * U+FFFD.
 */
static size_t
utf8_bad_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, k;

	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3;
	else
		return 1;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (k = 1; k <= need && k < n; k++) {
		if (s[k] < lo || s[k] > hi)
			break;
		lo = 0x80;
		hi = 0xbf;
	}
	return k;
}

/*
 * Appends s (n bytes) to o as valid UTF-8 (each invalid sequence becomes
 * U+FFFD) of at most max bytes before OTLP_TRUNCATED; JSON-escaped when
 * json (the quotes are the caller's).
 */
static void
put_text(struct buf *o, const char *s, size_t n, size_t max, bool json)
{
	static const char repl[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, used = 0, run = 0;

	while (i < n) {
		size_t k = utf8_len(p + i, n - i);
		size_t w = k ? k : 3;
		bool esc = json && k == 1 &&
			   (p[i] < 0x20 || p[i] == '"' || p[i] == '\\');

		if (used + w > max) {
			buf_append(o, s + i - run, run);
			buf_puts(o, OTLP_TRUNCATED);
			return;
		}
		used += w;
		if (k && !esc) {
			run += k; /* copied in runs, not byte by byte */
			i += k;
			continue;
		}
		buf_append(o, s + i - run, run);
		run = 0;
		if (!k) {
			buf_append(o, repl, 3);
		} else {
			switch (p[i]) {
			case '"': buf_puts(o, "\\\""); break;
			case '\\': buf_puts(o, "\\\\"); break;
			case '\n': buf_puts(o, "\\n"); break;
			case '\r': buf_puts(o, "\\r"); break;
			case '\t': buf_puts(o, "\\t"); break;
			default: buf_printf(o, "\\u%04x", p[i]);
			}
		}
		i += k ? k : utf8_bad_len(p + i, n - i);
	}
	buf_append(o, s + i - run, run);
}

static int
arena_copy(struct rows *r, const char *s, size_t n, const char **out)
{
	char *d = otlp_arena_alloc(r->a, n + 1);

	if (d == NULL)
		return fail_mem(r, otlp_arena_failure(r->a));
	memcpy(d, s, n);
	d[n] = '\0';
	*out = d;
	return STATUS_OK;
}

/* s (n bytes) as a column value: NULL when empty, else valid UTF-8 of at
 * most max bytes (and of max_attr_bytes) before OTLP_TRUNCATED, owned by
 * the batch. */
static int
text_max(struct rows *r, const char *s, size_t n, size_t max, const char **out)
{
	size_t i;
	int rc;

	*out = NULL;
	if (s == NULL || n == 0)
		return STATUS_OK;
	if (max > r->lim->max_attr_bytes)
		max = r->lim->max_attr_bytes;
	if (n <= max) {
		for (i = 0; i < n; i++)
			if ((unsigned char)s[i] >= 0x80)
				break;
		if (i == n)
			return arena_copy(r, s, n, out);
	}
	buf_reset(&r->js);
	put_text(&r->js, s, n, max, false);
	if ((rc = buf_error(&r->js)) != STATUS_OK)
		return fail_mem(r, rc);
	return arena_copy(r, r->js.data ? r->js.data : "", r->js.len, out);
}

/* A column no index holds. */
static int
text(struct rows *r, const char *s, const char **out)
{
	return text_max(r, s, s ? strlen(s) : 0, SIZE_MAX, out);
}

/* Shortest %g form that reads back as d. */
static void
fmt_double(double d, char *out, size_t n)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, n, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/* A scalar AnyValue as column text of at most max bytes (text_max); NULL
 * for arrays, kvlists, bytes. */
static int
any_text(struct rows *r, const pb_any_value *v, size_t max, const char **out)
{
	char tmp[40];
	const char *s;

	*out = NULL;
	if (v == NULL)
		return STATUS_OK;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		s = v->string_value;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(tmp, sizeof(tmp), "%" PRId64, v->int_value);
		s = tmp;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		fmt_double(v->double_value, tmp, sizeof(tmp));
		s = tmp;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		s = v->bool_value ? "true" : "false";
		break;
	default: return STATUS_OK;
	}
	return text_max(r, s, strlen(s), max, out);
}

/* An integer AnyValue: int, an integral double, or a decimal string. */
static bool
any_int(const pb_any_value *v, int64_t *out)
{
	if (v == NULL)
		return false;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		*out = v->int_value;
		return true;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		if (!(v->double_value >= -9007199254740992.0 &&
		      v->double_value <= 9007199254740992.0) ||
		    v->double_value != floor(v->double_value))
			return false;
		*out = (int64_t)v->double_value;
		return true;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE: {
		const char *s = v->string_value;
		char *end;
		long long x;

		if (!((s[0] >= '0' && s[0] <= '9') ||
		      (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
			return false;
		errno = 0;
		x = strtoll(s, &end, 10);
		if (errno || *end)
			return false;
		*out = x;
		return true;
	}
	default: return false;
	}
}

/* ---- JSON rendering ------------------------------------------------------ */

/*
 * The JSON writers append freely to r->js (buf.h) and their callers check
 * buf_error once; the walks over lists stop early once an append failed.
 */
static void put_any(struct rows *r, const pb_any_value *v, int depth);

static void
put_str(struct rows *r, const char *s, size_t n)
{
	buf_append(&r->js, "\"", 1);
	put_text(&r->js, s, n, r->lim->max_attr_bytes, true);
	buf_append(&r->js, "\"", 1);
}

static void
put_int(struct rows *r, int64_t v)
{
	/* jsonb keeps any number, but JavaScript readers lose precision
	 * past 2^53: those go as strings, as proto3 JSON does */
	if (v >= -9007199254740992LL && v <= 9007199254740992LL)
		buf_printf(&r->js, "%" PRId64, v);
	else
		buf_printf(&r->js, "\"%" PRId64 "\"", v);
}

static void
put_double(struct rows *r, double d)
{
	char tmp[40];

	if (isnan(d)) {
		buf_puts(&r->js, "\"NaN\"");
	} else if (isinf(d)) {
		buf_puts(&r->js, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	} else {
		fmt_double(d, tmp, sizeof(tmp));
		buf_puts(&r->js, tmp);
	}
}

static void
put_base64(struct rows *r, const uint8_t *p, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
				 "tuvwxyz0123456789+/";
	bool cut = n > r->lim->max_attr_bytes;
	char q[4];
	size_t i;

	if (cut)
		n = r->lim->max_attr_bytes;
	buf_append(&r->js, "\"", 1);
	for (i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		q[0] = al[v >> 18 & 63];
		q[1] = al[v >> 12 & 63];
		q[2] = i + 1 < n ? al[v >> 6 & 63] : '=';
		q[3] = i + 2 < n ? al[v & 63] : '=';
		buf_append(&r->js, q, 4);
	}
	if (cut)
		buf_puts(&r->js, OTLP_TRUNCATED);
	buf_append(&r->js, "\"", 1);
}

/* {"key": value, ...} */
static void
put_kvs(struct rows *r, pb_key_value *const *kv, size_t n, int depth)
{
	buf_append(&r->js, "{", 1);
	for (size_t i = 0; i < n && buf_error(&r->js) == STATUS_OK; i++) {
		const char *k = kv[i]->key ? kv[i]->key : "";

		if (i > 0)
			buf_append(&r->js, ",", 1);
		put_str(r, k, strlen(k));
		buf_append(&r->js, ":", 1);
		put_any(r, kv[i]->value, depth + 1);
	}
	buf_append(&r->js, "}", 1);
}

static void
put_any(struct rows *r, const pb_any_value *v, int depth)
{
	/* the decoders bound nesting already; this keeps the recursion
	 * bounded on its own */
	if (v == NULL || depth > OTLP_MAX_DEPTH) {
		buf_puts(&r->js, "null");
		return;
	}
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		put_str(r, v->string_value, strlen(v->string_value));
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		buf_puts(&r->js, v->bool_value ? "true" : "false");
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		put_int(r, v->int_value);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		put_double(r, v->double_value);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
		put_base64(r, v->bytes_value.data, v->bytes_value.len);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE:
		buf_append(&r->js, "[", 1);
		for (size_t i = 0;
		     v->array_value != NULL && i < v->array_value->n_values &&
		     buf_error(&r->js) == STATUS_OK;
		     i++) {
			if (i > 0)
				buf_append(&r->js, ",", 1);
			put_any(r, v->array_value->values[i], depth + 1);
		}
		buf_append(&r->js, "]", 1);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE:
		if (v->kvlist_value == NULL)
			buf_puts(&r->js, "{}");
		else
			put_kvs(r, v->kvlist_value->values,
				v->kvlist_value->n_values, depth);
		break;
	default: buf_puts(&r->js, "null");
	}
}

/* The attributes as a JSON object owned by the batch. */
static int
attrs_json(struct rows *r, pb_key_value *const *kv, size_t n, const char **out)
{
	int rc;

	if (n == 0) {
		*out = "{}";
		return STATUS_OK;
	}
	buf_reset(&r->js);
	put_kvs(r, kv, n, 0);
	if ((rc = buf_error(&r->js)) != STATUS_OK)
		return fail_mem(r, rc);
	return arena_copy(r, r->js.data, r->js.len, out);
}

static int
events_json(struct rows *r, const pb_span *s, const char **out)
{
	int rc;

	if (s->n_events == 0) {
		*out = "[]";
		return STATUS_OK;
	}
	buf_reset(&r->js);
	buf_append(&r->js, "[", 1);
	for (size_t i = 0; i < s->n_events && buf_error(&r->js) == STATUS_OK;
	     i++) {
		const pb_span_event *e = s->events[i];
		const char *name = e->name ? e->name : "";

		buf_printf(&r->js,
			   "%s{\"time_unix_nano\":\"%" PRIu64 "\",\"name\":",
			   i > 0 ? "," : "", e->time_unix_nano);
		put_str(r, name, strlen(name));
		buf_puts(&r->js, ",\"attributes\":");
		put_kvs(r, e->attributes, e->n_attributes, 0);
		buf_append(&r->js, "}", 1);
	}
	buf_append(&r->js, "]", 1);
	if ((rc = buf_error(&r->js)) != STATUS_OK)
		return fail_mem(r, rc);
	return arena_copy(r, r->js.data, r->js.len, out);
}

static void
put_hex(struct rows *r, const ProtobufCBinaryData *id)
{
	static const char hex[] = "0123456789abcdef";

	buf_append(&r->js, "\"", 1);
	for (size_t i = 0; i < id->len; i++) {
		char two[2] = {hex[id->data[i] >> 4], hex[id->data[i] & 15]};

		buf_append(&r->js, two, 2);
	}
	buf_append(&r->js, "\"", 1);
}

/* The span's links as JSON; NULL when there are none. */
static int
links_json(struct rows *r, const pb_span *s, const char **out)
{
	int rc;

	*out = NULL;
	if (s->n_links == 0)
		return STATUS_OK;
	buf_reset(&r->js);
	buf_append(&r->js, "[", 1);
	for (size_t i = 0; i < s->n_links && buf_error(&r->js) == STATUS_OK;
	     i++) {
		const pb_span_link *l = s->links[i];

		buf_puts(&r->js, i > 0 ? ",{\"trace_id\":" : "{\"trace_id\":");
		put_hex(r, &l->trace_id);
		buf_puts(&r->js, ",\"span_id\":");
		put_hex(r, &l->span_id);
		buf_puts(&r->js, ",\"attributes\":");
		put_kvs(r, l->attributes, l->n_attributes, 0);
		buf_append(&r->js, "}", 1);
	}
	buf_append(&r->js, "]", 1);
	if ((rc = buf_error(&r->js)) != STATUS_OK)
		return fail_mem(r, rc);
	return arena_copy(r, r->js.data, r->js.len, out);
}

/* url.path, else the path of http.target: the request's own path, where
 * http_route may hold a template. */
static int
url_path(struct rows *r, const pb_span *s, const char **out)
{
	const pb_any_value *target = NULL;

	*out = NULL;
	for (size_t i = 0; i < s->n_attributes; i++) {
		const pb_any_value *v = s->attributes[i]->value;

		if (v == NULL ||
		    v->value_case !=
			    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
			continue;
		if (strcmp(s->attributes[i]->key, "url.path") == 0)
			return text_max(r, v->string_value,
					strlen(v->string_value),
					OTLP_MAX_HTTP_PATH_BYTES, out);
		if (strcmp(s->attributes[i]->key, "http.target") == 0)
			target = v;
	}
	if (target == NULL)
		return STATUS_OK;
	return text_max(r, target->string_value,
			strcspn(target->string_value, "?#"),
			OTLP_MAX_HTTP_PATH_BYTES, out);
}

/* ---- resource and scope -------------------------------------------------- */

struct res_ctx {
	const char *service_name, *service_namespace, *service_version;
	const char *k8s_namespace, *k8s_deployment, *k8s_pod, *host_name;
	const char *resource_json;
	bool ebpf;
};

struct scope_ctx {
	const char *name, *version;
	bool ebpf;
};

static int
resource_ctx(struct rows *r, const pb_resource *res, struct res_ctx *rc)
{
	static pb_key_value *const none[1];
	pb_key_value *const *kv = res ? res->attributes : none;
	size_t n = res ? res->n_attributes : 0;
	const char *sdk = NULL;
	struct found f;
	int st;

	memset(rc, 0, sizeof(*rc));
	find_attrs(kv, n, &f);
	if ((st = any_text(r, f.v[SL_SERVICE_NAME], OTLP_MAX_SERVICE_NAME_BYTES,
			   &rc->service_name)) ||
	    (st = any_text(r, f.v[SL_SERVICE_NAMESPACE], NOT_INDEXED,
			   &rc->service_namespace)) ||
	    (st = any_text(r, f.v[SL_SERVICE_VERSION], NOT_INDEXED,
			   &rc->service_version)) ||
	    (st = any_text(r, f.v[SL_K8S_NAMESPACE], NOT_INDEXED,
			   &rc->k8s_namespace)) ||
	    (st = any_text(r, f.v[SL_K8S_DEPLOYMENT], NOT_INDEXED,
			   &rc->k8s_deployment)) ||
	    (st = any_text(r, f.v[SL_K8S_POD], NOT_INDEXED, &rc->k8s_pod)) ||
	    (st = any_text(r, f.v[SL_HOST_NAME], NOT_INDEXED,
			   &rc->host_name)) ||
	    (st = any_text(r, f.v[SL_SDK_NAME], NOT_INDEXED, &sdk)) ||
	    (st = attrs_json(r, kv, n, &rc->resource_json)))
		return st;
	for (size_t i = 0; sdk && i < r->rules->n_sdk_names; i++)
		if (strcmp(sdk, r->rules->sdk_names[i]) == 0)
			rc->ebpf = true;
	return STATUS_OK;
}

static int
scope_ctx(struct rows *r, const pb_scope *s, struct scope_ctx *sc)
{
	int st;

	memset(sc, 0, sizeof(*sc));
	if (s == NULL)
		return STATUS_OK;
	if ((st = text(r, s->name, &sc->name)) ||
	    (st = text(r, s->version, &sc->version)))
		return st;
	for (size_t i = 0; s->name && i < r->rules->n_scope_prefixes; i++) {
		const char *pre = r->rules->scope_prefixes[i];

		if (strncmp(s->name, pre, strlen(pre)) == 0)
			sc->ebpf = true;
	}
	return STATUS_OK;
}

static void reject(struct rows *r, size_t n, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

/* Counts n items as rejected; the first reason is kept for the answer. */
static void
reject(struct rows *r, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (n == 0)
		return;
	if (r->b->rejected == 0) {
		va_start(ap, fmt);
		vsnprintf(r->b->reject_reason, sizeof(r->b->reject_reason), fmt,
			  ap);
		va_end(ap);
	}
	r->b->rejected += n;
}

/* ---- spans --------------------------------------------------------------- */

static bool
id_ok(const ProtobufCBinaryData *id, size_t len)
{
	if (id->len != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (id->data[i])
			return true;
	return false;
}

/* The path of a URL or request target, without query and fragment. */
static int
route_text(struct rows *r, const pb_any_value *v, int rank, const char **out)
{
	const char *s, *end;

	if (rank == ROUTE_ROUTE ||
	    v->value_case !=
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		return any_text(r, v, OTLP_MAX_HTTP_PATH_BYTES, out);
	s = v->string_value;
	if (rank >= ROUTE_URL) {
		const char *scheme = strstr(s, "://");

		if (scheme) {
			s = scheme + 3;
			s += strcspn(s, "/?#");
			if (*s != '/')
				s = "/";
		}
	}
	end = s + strcspn(s, "?#");
	return text_max(r, s, (size_t)(end - s), OTLP_MAX_HTTP_PATH_BYTES, out);
}

const char *
otlp_grpc_code_name(int code)
{
	if (code < 0 ||
	    (size_t)code >= sizeof(grpc_codes) / sizeof(grpc_codes[0]))
		return "UNKNOWN";
	return grpc_codes[code];
}

static int
grpc_code(const pb_any_value *v, int rank, const char *rpc_system)
{
	int64_t x;

	if (rank == 0) /* rpc.grpc.status_code: an int */
		return any_int(v, &x) && x >= 0 && x <= INT32_MAX ? (int)x : -1;
	/* rpc.response.status_code: the code's name for gRPC */
	if (v->value_case ==
	    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		for (size_t i = 0;
		     i < sizeof(grpc_codes) / sizeof(grpc_codes[0]); i++)
			if (strcmp(v->string_value, grpc_codes[i]) == 0)
				return (int)i;
	if (rpc_system && strcmp(rpc_system, "grpc") == 0 && any_int(v, &x) &&
	    x >= 0 && x <= INT32_MAX)
		return (int)x;
	return -1;
}

static int
span_columns(struct rows *r, const pb_span *s, struct otlp_span *o)
{
	const char *method = NULL;
	struct found f;
	int64_t x;
	int st;

	find_attrs(s->attributes, s->n_attributes, &f);
	o->http_status = any_int(f.v[SL_HTTP_STATUS], &x) && x > 0 && x < 1000
				 ? (int)x
				 : -1;
	o->input_tokens = any_int(f.v[SL_INPUT_TOKENS], &x) && x >= 0 ? x : -1;
	o->output_tokens =
		any_int(f.v[SL_OUTPUT_TOKENS], &x) && x >= 0 ? x : -1;
	if ((st = any_text(r, f.v[SL_HTTP_METHOD], OTLP_MAX_HTTP_METHOD_BYTES,
			   &o->http_method)) ||
	    (st = any_text(r, f.v[SL_RPC_SYSTEM], NOT_INDEXED,
			   &o->rpc_system)) ||
	    (st = any_text(r, f.v[SL_RPC_SERVICE], OTLP_MAX_RPC_NAME_BYTES,
			   &o->rpc_service)) ||
	    (st = any_text(r, f.v[SL_DB_SYSTEM], NOT_INDEXED, &o->db_system)) ||
	    (st = any_text(r, f.v[SL_DB_OPERATION], OTLP_MAX_DB_OPERATION_BYTES,
			   &o->db_operation)) ||
	    (st = any_text(r, f.v[SL_DB_TABLE], OTLP_MAX_DB_TABLE_BYTES,
			   &o->db_table)) ||
	    (st = any_text(r, f.v[SL_SESSION_ID], OTLP_MAX_SESSION_ID_BYTES,
			   &o->session_id)) ||
	    (st = any_text(r, f.v[SL_GENAI_SYSTEM], OTLP_MAX_GENAI_NAME_BYTES,
			   &o->gen_ai_system)) ||
	    (st = any_text(r, f.v[SL_GENAI_OPERATION],
			   OTLP_MAX_GENAI_NAME_BYTES, &o->gen_ai_operation)) ||
	    (st = any_text(r, f.v[SL_GENAI_REQUEST_MODEL],
			   OTLP_MAX_GENAI_MODEL_BYTES,
			   &o->gen_ai_request_model)) ||
	    (st = any_text(r, f.v[SL_GENAI_RESPONSE_MODEL],
			   OTLP_MAX_GENAI_MODEL_BYTES,
			   &o->gen_ai_response_model)))
		return st;
	if (f.v[SL_HTTP_ROUTE]) {
		st = route_text(r, f.v[SL_HTTP_ROUTE], f.rank[SL_HTTP_ROUTE],
				&o->http_route);
		if (st)
			return st;
	}
	o->grpc_status = f.v[SL_GRPC_STATUS] ? grpc_code(f.v[SL_GRPC_STATUS],
							 f.rank[SL_GRPC_STATUS],
							 o->rpc_system)
					     : -1;
	/* rpc.method is fully qualified ("pkg.Service/Method") in current
	 * conventions, which dropped rpc.service; each part is cut on its
	 * own, from the string as sent */
	if (f.v[SL_RPC_METHOD] &&
	    f.v[SL_RPC_METHOD]->value_case ==
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		method = f.v[SL_RPC_METHOD]->string_value;
	else if ((st = any_text(r, f.v[SL_RPC_METHOD], NOT_INDEXED, &method)))
		return st;
	if (method) {
		const char *slash = strrchr(method, '/');
		const char *svc = method, *name = method;

		if (slash != NULL) {
			while (*svc == '/')
				svc++;
			if (o->rpc_service == NULL && svc < slash &&
			    (st = text_max(r, svc, (size_t)(slash - svc),
					   OTLP_MAX_RPC_NAME_BYTES,
					   &o->rpc_service)))
				return st;
			name = slash + 1;
		}
		if ((st = text_max(r, name, strlen(name),
				   OTLP_MAX_RPC_NAME_BYTES, &o->rpc_method)))
			return st;
	}
	return STATUS_OK;
}

static int
span_row(struct rows *r, const struct res_ctx *rc, const struct scope_ctx *sc,
	 const pb_span *s, size_t ri, size_t si, size_t k)
{
	struct otlp_span *o;
	const char *why = NULL;
	int st;

	if (!id_ok(&s->trace_id, 16))
		why = "trace id must be 16 bytes, not all zero (32 hex digits "
		      "in JSON)";
	else if (!id_ok(&s->span_id, 8))
		why = "span id must be 8 bytes, not all zero (16 hex digits in "
		      "JSON)";
	else if (s->parent_span_id.len != 0 && s->parent_span_id.len != 8)
		why = "parent span id must be empty or 8 bytes (16 hex digits "
		      "in JSON)";
	else if (s->name == NULL || s->name[0] == '\0')
		why = "span has no name";
	else if (s->start_time_unix_nano == 0)
		why = "span has no start time";
	else if (s->end_time_unix_nano < s->start_time_unix_nano)
		why = "span ends before it starts";
	if (why) {
		reject(r, 1, "resource %zu, scope %zu, span %zu: %s", ri, si, k,
		       why);
		return STATUS_OK;
	}

	o = &r->b->spans[r->b->n_spans];
	memset(o, 0, sizeof(*o));
	memcpy(o->trace_id, s->trace_id.data, 16);
	memcpy(o->span_id, s->span_id.data, 8);
	if (id_ok(&s->parent_span_id, 8)) { /* all zero: a root span */
		memcpy(o->parent_span_id, s->parent_span_id.data, 8);
		o->has_parent = true;
	}
	o->service_name = rc->service_name;
	o->service_namespace = rc->service_namespace;
	o->service_version = rc->service_version;
	o->k8s_namespace = rc->k8s_namespace;
	o->k8s_deployment = rc->k8s_deployment;
	o->k8s_pod = rc->k8s_pod;
	o->host_name = rc->host_name;
	o->resource_json = rc->resource_json;
	o->scope_name = sc->name;
	o->scope_version = sc->version;
	o->source = rc->ebpf || sc->ebpf ? OTLP_SOURCE_EBPF : OTLP_SOURCE_OTLP;
	o->kind = s->kind >= 0 && s->kind <= 5 ? (int)s->kind : 0;
	o->start_unix_nano = s->start_time_unix_nano;
	o->end_unix_nano = s->end_time_unix_nano;
	if (s->status) {
		o->status_code = s->status->code >= 0 && s->status->code <= 2
					 ? (int)s->status->code
					 : 0;
		if ((st = text(r, s->status->message, &o->status_message)))
			return st;
	}
	if ((st = text(r, s->name, &o->name)) || (st = span_columns(r, s, o)) ||
	    (st = attrs_json(r, s->attributes, s->n_attributes,
			     &o->attributes_json)) ||
	    (st = events_json(r, s, &o->events_json)) ||
	    (st = links_json(r, s, &o->links_json)) ||
	    (st = text(r, s->trace_state, &o->trace_state)) ||
	    (st = url_path(r, s, &o->url_path)))
		return st;
	r->b->n_spans++;
	return STATUS_OK;
}

static int
rows_begin(struct rows *r, const struct otlp_limits *lim,
	   const struct otlp_source_rules *rules, struct otlp_batch *b,
	   char *err, size_t errlen)
{
	r->lim = lim;
	r->rules = rules;
	r->b = b;
	r->a = b->arena;
	r->err = err;
	r->errlen = errlen;
	buf_init(&r->js, lim->max_memory);
	return STATUS_OK;
}

int
otlp_rows_traces(const pb_trace_request *req, const struct otlp_limits *lim,
		 const struct otlp_source_rules *rules, struct otlp_batch *b,
		 char *err, size_t errlen)
{
	struct rows r;
	size_t total = 0;
	int st = rows_begin(&r, lim, rules, b, err, errlen);

	for (size_t i = 0; i < req->n_resource_spans; i++)
		for (size_t j = 0; j < req->resource_spans[i]->n_scope_spans;
		     j++)
			total +=
				req->resource_spans[i]->scope_spans[j]->n_spans;
	if (total > 0) {
		b->spans = otlp_arena_alloc(r.a, total * sizeof(*b->spans));
		if (b->spans == NULL) {
			st = fail_mem(&r, otlp_arena_failure(r.a));
			goto out;
		}
	}
	for (size_t i = 0; st == STATUS_OK && i < req->n_resource_spans; i++) {
		const pb_resource_spans *rs = req->resource_spans[i];
		struct res_ctx rc;

		if (rs->n_scope_spans == 0)
			continue;
		st = resource_ctx(&r, rs->resource, &rc);
		for (size_t j = 0; st == STATUS_OK && j < rs->n_scope_spans;
		     j++) {
			const pb_scope_spans *ss = rs->scope_spans[j];
			struct scope_ctx sc;

			st = scope_ctx(&r, ss->scope, &sc);
			for (size_t k = 0; st == STATUS_OK && k < ss->n_spans;
			     k++)
				st = span_row(&r, &rc, &sc, ss->spans[k], i, j,
					      k);
		}
	}
out:
	buf_free(&r.js);
	return st;
}

/* ---- metrics ------------------------------------------------------------- */

struct metric_ctx {
	const struct res_ctx *res;
	const struct scope_ctx *scope;
	const char *name, *unit, *description;
	size_t ri, si, mi;
};

static struct otlp_point *
point_begin(struct rows *r, const struct metric_ctx *m,
	    enum otlp_point_type type)
{
	struct otlp_point *o = &r->b->points[r->b->n_points];

	memset(o, 0, sizeof(*o));
	o->type = type;
	o->name = m->name;
	o->unit = m->unit;
	o->description = m->description;
	o->service_name = m->res->service_name;
	o->service_namespace = m->res->service_namespace;
	o->resource_json = m->res->resource_json;
	o->scope_name = m->scope->name;
	o->source = m->res->ebpf || m->scope->ebpf ? OTLP_SOURCE_EBPF
						   : OTLP_SOURCE_OTLP;
	return o;
}

static enum otlp_temporality
temporality(int t)
{
	return t == OTLP_TEMPORALITY_DELTA || t == OTLP_TEMPORALITY_CUMULATIVE
		       ? (enum otlp_temporality)t
		       : OTLP_TEMPORALITY_UNSPECIFIED;
}

static int
number_row(struct rows *r, const struct metric_ctx *m,
	   enum otlp_point_type type, const pb_number_point *p, size_t k,
	   enum otlp_temporality t, bool monotonic)
{
	struct otlp_point *o;
	const char *why = NULL;
	int st;

	if (p->time_unix_nano == 0)
		why = "data point has no time";
	else if (
		p->value_case ==
			OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE__NOT_SET &&
		!(p->flags & OTLP_FLAG_NO_RECORDED_VALUE))
		why = "data point has no value";
	if (why) {
		reject(r, 1,
		       "resource %zu, scope %zu, metric %zu, point %zu: %s",
		       m->ri, m->si, m->mi, k, why);
		return STATUS_OK;
	}
	o = point_begin(r, m, type);
	o->start_unix_nano = p->start_time_unix_nano;
	o->time_unix_nano = p->time_unix_nano;
	o->flags = p->flags;
	o->temporality = t;
	o->monotonic = monotonic;
	switch (p->value_case) {
	case OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT:
		o->is_int = true;
		o->int_value = p->as_int;
		o->value = (double)p->as_int;
		break;
	case OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE:
		o->value = p->as_double;
		break;
	default: o->value = NAN;
	}
	st = attrs_json(r, p->attributes, p->n_attributes, &o->attributes_json);
	if (st)
		return st;
	r->b->n_points++;
	return STATUS_OK;
}

static int
histogram_row(struct rows *r, const struct metric_ctx *m,
	      const pb_histogram_point *p, size_t k, enum otlp_temporality t)
{
	struct otlp_point *o;
	const char *why = NULL;
	double *bounds = NULL;
	uint64_t *counts = NULL;
	int st;

	if (p->time_unix_nano == 0)
		why = "data point has no time";
	else if (!(p->n_bucket_counts == 0 && p->n_explicit_bounds == 0) &&
		 p->n_bucket_counts != p->n_explicit_bounds + 1)
		why = "histogram must have one more bucket count than bounds";
	for (size_t i = 0; why == NULL && i < p->n_explicit_bounds; i++)
		if (isnan(p->explicit_bounds[i]) ||
		    (i > 0 &&
		     !(p->explicit_bounds[i] > p->explicit_bounds[i - 1])))
			why = "histogram bounds must increase";
	if (why) {
		reject(r, 1,
		       "resource %zu, scope %zu, metric %zu, point %zu: %s",
		       m->ri, m->si, m->mi, k, why);
		return STATUS_OK;
	}
	/* the tree dies with the decode: the rows keep copies */
	if (p->n_explicit_bounds > 0) {
		bounds = otlp_arena_alloc(r->a, p->n_explicit_bounds *
							sizeof(*bounds));
		if (bounds == NULL)
			return fail_mem(r, otlp_arena_failure(r->a));
		memcpy(bounds, p->explicit_bounds,
		       p->n_explicit_bounds * sizeof(*bounds));
	}
	if (p->n_bucket_counts > 0) {
		counts = otlp_arena_alloc(r->a,
					  p->n_bucket_counts * sizeof(*counts));
		if (counts == NULL)
			return fail_mem(r, otlp_arena_failure(r->a));
		memcpy(counts, p->bucket_counts,
		       p->n_bucket_counts * sizeof(*counts));
	}
	o = point_begin(r, m, OTLP_POINT_HISTOGRAM);
	o->start_unix_nano = p->start_time_unix_nano;
	o->time_unix_nano = p->time_unix_nano;
	o->flags = p->flags;
	o->temporality = t;
	o->value = NAN;
	o->count = p->count;
	o->has_sum =
		p->sum_present_case ==
		OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__SUM_PRESENT_SUM;
	o->sum = o->has_sum ? p->sum : 0;
	o->has_min =
		p->min_present_case ==
		OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__MIN_PRESENT_MIN;
	o->min = o->has_min ? p->min : 0;
	o->has_max =
		p->max_present_case ==
		OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__MAX_PRESENT_MAX;
	o->max = o->has_max ? p->max : 0;
	o->n_bounds = p->n_explicit_bounds;
	o->bounds = bounds;
	o->n_bucket_counts = p->n_bucket_counts;
	o->bucket_counts = counts;
	st = attrs_json(r, p->attributes, p->n_attributes, &o->attributes_json);
	if (st)
		return st;
	r->b->n_points++;
	return STATUS_OK;
}

static int
metric_rows(struct rows *r, struct metric_ctx *m, const pb_metric *mt)
{
	size_t n = 0;
	int st;

	switch (mt->data_case) {
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
		n = mt->gauge->n_data_points;
		break;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
		n = mt->sum->n_data_points;
		break;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM:
		n = mt->histogram->n_data_points;
		break;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM:
		reject(r, mt->exponential_histogram->n_data_points,
		       "resource %zu, scope %zu, metric %zu: exponential "
		       "histograms are not stored: export explicit-bucket "
		       "histograms",
		       m->ri, m->si, m->mi);
		return STATUS_OK;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY:
		reject(r, mt->summary->n_data_points,
		       "resource %zu, scope %zu, metric %zu: summaries are not "
		       "stored: export histograms",
		       m->ri, m->si, m->mi);
		return STATUS_OK;
	default: return STATUS_OK;
	}
	if (mt->name == NULL || mt->name[0] == '\0') {
		reject(r, n,
		       "resource %zu, scope %zu, metric %zu: metric has no "
		       "name",
		       m->ri, m->si, m->mi);
		return STATUS_OK;
	}
	if ((st = text_max(r, mt->name, strlen(mt->name),
			   OTLP_MAX_METRIC_NAME_BYTES, &m->name)) ||
	    (st = text(r, mt->unit, &m->unit)) ||
	    (st = text(r, mt->description, &m->description)))
		return st;
	for (size_t k = 0; k < n; k++) {
		switch (mt->data_case) {
		case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
			st = number_row(r, m, OTLP_POINT_GAUGE,
					mt->gauge->data_points[k], k,
					OTLP_TEMPORALITY_UNSPECIFIED, false);
			break;
		case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
			st = number_row(
				r, m, OTLP_POINT_SUM, mt->sum->data_points[k],
				k,
				temporality(mt->sum->aggregation_temporality),
				mt->sum->is_monotonic);
			break;
		default:
			st = histogram_row(
				r, m, mt->histogram->data_points[k], k,
				temporality(mt->histogram
						    ->aggregation_temporality));
		}
		if (st)
			return st;
	}
	return STATUS_OK;
}

int
otlp_rows_metrics(const pb_metrics_request *req, const struct otlp_limits *lim,
		  const struct otlp_source_rules *rules, struct otlp_batch *b,
		  char *err, size_t errlen)
{
	struct rows r;
	size_t total = 0;
	int st = rows_begin(&r, lim, rules, b, err, errlen);

	for (size_t i = 0; i < req->n_resource_metrics; i++) {
		const pb_resource_metrics *rm = req->resource_metrics[i];

		for (size_t j = 0; j < rm->n_scope_metrics; j++)
			for (size_t k = 0; k < rm->scope_metrics[j]->n_metrics;
			     k++) {
				const pb_metric *mt =
					rm->scope_metrics[j]->metrics[k];

				if (mt->data_case ==
				    OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE)
					total += mt->gauge->n_data_points;
				else if (
					mt->data_case ==
					OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM)
					total += mt->sum->n_data_points;
				else if (
					mt->data_case ==
					OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM)
					total += mt->histogram->n_data_points;
			}
	}
	if (total > 0) {
		b->points = otlp_arena_alloc(r.a, total * sizeof(*b->points));
		if (b->points == NULL) {
			st = fail_mem(&r, otlp_arena_failure(r.a));
			goto out;
		}
	}
	for (size_t i = 0; st == STATUS_OK && i < req->n_resource_metrics;
	     i++) {
		const pb_resource_metrics *rm = req->resource_metrics[i];
		struct res_ctx rc;

		if (rm->n_scope_metrics == 0)
			continue;
		st = resource_ctx(&r, rm->resource, &rc);
		for (size_t j = 0; st == STATUS_OK && j < rm->n_scope_metrics;
		     j++) {
			const pb_scope_metrics *sm = rm->scope_metrics[j];
			struct scope_ctx sc;

			st = scope_ctx(&r, sm->scope, &sc);
			for (size_t k = 0; st == STATUS_OK && k < sm->n_metrics;
			     k++) {
				struct metric_ctx m = {.res = &rc,
						       .scope = &sc,
						       .ri = i,
						       .si = j,
						       .mi = k};

				st = metric_rows(&r, &m, sm->metrics[k]);
			}
		}
	}
out:
	buf_free(&r.js);
	return st;
}

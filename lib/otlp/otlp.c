/*
 * otlp.c - OTLP/HTTP request decoding (see otlp.h): content type and gzip,
 * the protobuf half (a bounded wire pre-scan, then protobuf-c unpacking
 * into an arena), the response bodies, and the arena every decode uses.
 * otlp_json.c builds the same message tree from JSON; otlp_rows.c turns it
 * into rows.
 */
#include "otlp/otlp.h"

#include <ctype.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "base/buf.h"
#include "otlp/otlp_internal.h"

/* ---- arena ------------------------------------------------------------ */

/*
 * Chunks grow with what the arena already holds (16 KiB up to 1 MiB) so a
 * one-span request stays small and a large one makes few mallocs; an
 * allocation bigger than a quarter chunk gets a chunk of its own.
 */
#define ARENA_MIN_CHUNK (16u * 1024)
#define ARENA_MAX_CHUNK (1024u * 1024)
#define ARENA_ALIGN	alignof(max_align_t)
#define ARENA_CHUNK_ALIGN                                                      \
	((sizeof(struct arena_chunk) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))

struct arena_chunk {
	struct arena_chunk *next;
	size_t size; /* usable bytes after the header */
	size_t used;
};

struct otlp_arena {
	struct arena_chunk *head; /* the chunk being filled */
	struct otlp_budget *budget;
	size_t total; /* bytes of all chunks */
	bool nomem;
};

static struct otlp_arena *
otlp_arena_new(struct otlp_budget *budget)
{
	struct otlp_arena *a = calloc(1, sizeof(*a));

	if (a)
		a->budget = budget;
	return a;
}

static void
otlp_arena_free(struct otlp_arena *a)
{
	struct arena_chunk *c, *next;

	if (a == NULL)
		return;
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

static uint8_t *
chunk_data(struct arena_chunk *c)
{
	return (uint8_t *)c + ARENA_CHUNK_ALIGN;
}

void *
otlp_arena_alloc(struct otlp_arena *a, size_t n)
{
	struct arena_chunk *c;
	size_t size;
	void *p;

	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / 2)
		goto refused;
	n = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	c = a->head;
	if (c && c->size - c->used >= n) {
		p = chunk_data(c) + c->used;
		c->used += n;
		return p;
	}
	size = a->total < ARENA_MIN_CHUNK   ? ARENA_MIN_CHUNK
	       : a->total > ARENA_MAX_CHUNK ? ARENA_MAX_CHUNK
					    : a->total;
	if (n > size / 4)
		size = n;
	if (a->budget) {
		if (size + ARENA_CHUNK_ALIGN >
		    a->budget->max - a->budget->used) {
			a->budget->exceeded = true;
			return NULL;
		}
	}
	c = malloc(ARENA_CHUNK_ALIGN + size);
	if (c == NULL)
		goto refused;
	if (a->budget)
		a->budget->used += size + ARENA_CHUNK_ALIGN;
	a->total += size + ARENA_CHUNK_ALIGN;
	c->size = size;
	c->used = n;
	if (size == n && a->head) {
		/* a dedicated chunk: keep filling the current one */
		c->next = a->head->next;
		a->head->next = c;
	} else {
		c->next = a->head;
		a->head = c;
	}
	return chunk_data(c);
refused:
	a->nomem = true;
	return NULL;
}

int
otlp_arena_failure(const struct otlp_arena *a)
{
	if (a->budget && a->budget->exceeded && !a->nomem)
		return STATUS_LIMIT;
	return STATUS_NOMEM;
}

static void *
pb_arena_alloc(void *data, size_t size)
{
	return otlp_arena_alloc(data, size);
}

static void
pb_arena_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

static void
otlp_arena_pb_allocator(struct otlp_arena *a, ProtobufCAllocator *pa)
{
	pa->alloc = pb_arena_alloc;
	pa->free = pb_arena_free;
	pa->allocator_data = a;
}

/* ---- small public helpers ------------------------------------------------ */

void
otlp_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
otlp_limit_key(char *err, size_t errlen, const char *key)
{
	size_t n = strlen(err);

	if (key != NULL && n < errlen)
		snprintf(err + n, errlen - n, " (%s)", key);
}

void
otlp_limits_default(struct otlp_limits *lim)
{
	lim->max_decompressed = 20u * 1024 * 1024;
	lim->max_spans = 100000;
	lim->max_points = 200000;
	lim->max_attr_bytes = 8192;
	lim->max_memory = 256u * 1024 * 1024;
	lim->decompressed_key = lim->items_key = NULL;
}

static const char *const default_sdk_names[] = {
	"beyla",
	"opentelemetry-ebpf-instrumentation",
};
static const char *const default_scope_prefixes[] = {
	"github.com/grafana/beyla",
	"go.opentelemetry.io/obi",
};
const struct otlp_source_rules otlp_default_source_rules = {
	.sdk_names = default_sdk_names,
	.n_sdk_names = sizeof(default_sdk_names) / sizeof(default_sdk_names[0]),
	.scope_prefixes = default_scope_prefixes,
	.n_scope_prefixes = sizeof(default_scope_prefixes) /
			    sizeof(default_scope_prefixes[0]),
};

const char *
otlp_source_name(enum otlp_source s)
{
	return s == OTLP_SOURCE_EBPF ? "ebpf" : "otlp";
}

const char *
otlp_status_name(int code)
{
	return code == 2 ? "error" : code == 1 ? "ok" : "unset";
}

const char *
otlp_kind_name(int kind)
{
	static const char *const names[] = {
		"unspecified", "internal", "server",
		"client",      "producer", "consumer",
	};

	return kind >= 0 && kind < 6 ? names[kind] : names[0];
}

const char *
otlp_point_type_name(enum otlp_point_type t)
{
	switch (t) {
	case OTLP_POINT_GAUGE: return "gauge";
	case OTLP_POINT_SUM: return "sum";
	case OTLP_POINT_HISTOGRAM: return "histogram";
	}
	return "unknown";
}

void
otlp_batch_free(struct otlp_batch *b)
{
	if (b == NULL)
		return;
	otlp_arena_free(b->arena);
	free(b);
}

/* ---- content type and encoding ------------------------------------------ */

/* s equals word (case-insensitive) up to optional spaces and ';' params. */
static bool
header_is(const char *s, const char *word)
{
	size_t n = strlen(word);

	while (*s == ' ' || *s == '\t')
		s++;
	if (strncasecmp(s, word, n) != 0)
		return false;
	s += n;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\0' || *s == ';';
}

int
otlp_content_type_encoding(const char *content_type, enum otlp_encoding *enc)
{
	if (content_type == NULL)
		return STATUS_UNSUPPORTED;
	if (header_is(content_type, "application/json")) {
		*enc = OTLP_ENCODING_JSON;
		return STATUS_OK;
	}
	if (header_is(content_type, "application/x-protobuf") ||
	    header_is(content_type, "application/protobuf")) {
		*enc = OTLP_ENCODING_PROTOBUF;
		return STATUS_OK;
	}
	return STATUS_UNSUPPORTED;
}

const char *
otlp_encoding_content_type(enum otlp_encoding enc)
{
	return enc == OTLP_ENCODING_JSON ? "application/json"
					 : "application/x-protobuf";
}

/* Copies at most 40 printable bytes of a header for an error message. */
static void
header_excerpt(const char *s, char *out, size_t outlen)
{
	size_t i, j = 0;

	for (i = 0; s[i] && j + 1 < outlen && i < 40; i++)
		out[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	out[j] = '\0';
}

/* ---- gzip ------------------------------------------------------------- */

/*
 * Inflates a gzip body (concatenated members allowed, RFC 1952 2.2) into a
 * buffer that never grows past max + 1 bytes: a bomb is refused as soon
 * as its output passes max, having allocated no more than that.
 */
static int
gunzip(const uint8_t *in, size_t n, size_t max, const char *max_key,
       uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	z_stream zs;
	uint8_t *buf = NULL, *nb;
	size_t cap, len = 0;
	int zrc, rc;

	*out = NULL;
	*outlen = 0;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return STATUS_NOMEM;
	cap = n < max / 4 ? n * 4 : max;
	if (cap < 4096)
		cap = 4096;
	if (cap > max)
		cap = max;
	cap += 1; /* room to notice the first byte past max */
	buf = malloc(cap);
	if (buf == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	zs.next_in = (Bytef *)in;
	for (;;) {
		if (len == cap) {
			size_t ncap;

			if (len > max)
				break;
			ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			nb = realloc(buf, ncap);
			if (nb == NULL) {
				rc = STATUS_NOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		/* avail_in and avail_out are uInt: feed at most 1 GiB a go */
		zs.avail_in = (uInt)(n - (size_t)(zs.next_in - in) > (1u << 30)
					     ? (1u << 30)
					     : n - (size_t)(zs.next_in - in));
		zs.next_out = buf + len;
		zs.avail_out =
			(uInt)(cap - len > (1u << 30) ? (1u << 30) : cap - len);
		{
			uInt before = zs.avail_out;

			zrc = inflate(&zs, Z_NO_FLUSH);
			len += before - zs.avail_out;
		}
		if (len > max)
			break;
		if (zrc == Z_STREAM_END) {
			if ((size_t)(zs.next_in - in) == n) {
				*out = buf;
				*outlen = len;
				buf = NULL;
				rc = STATUS_OK;
				goto out;
			}
			if (inflateReset(&zs) != Z_OK) {
				rc = STATUS_NOMEM;
				goto out;
			}
			continue;
		}
		if (zrc == Z_MEM_ERROR) {
			rc = STATUS_NOMEM;
			goto out;
		}
		if (zrc == Z_DATA_ERROR || zrc == Z_NEED_DICT) {
			otlp_set_err(err, errlen,
				     "gzip body is corrupt at compressed byte "
				     "%zu: %s",
				     (size_t)(zs.next_in - in),
				     zs.msg ? zs.msg : "bad data");
			rc = STATUS_INVALID;
			goto out;
		}
		if (zrc == Z_BUF_ERROR && zs.avail_out > 0) {
			otlp_set_err(err, errlen,
				     "gzip body is truncated after %zu "
				     "compressed bytes: send the whole stream",
				     n);
			rc = STATUS_INVALID;
			goto out;
		}
	}
	otlp_set_err(err, errlen,
		     "body is larger than %zu bytes once decompressed: send "
		     "smaller batches",
		     max);
	otlp_limit_key(err, errlen, max_key);
	rc = STATUS_LIMIT;
out:
	inflateEnd(&zs);
	free(buf);
	return rc;
}

/* ---- protobuf pre-scan --------------------------------------------------- */

/*
 * protobuf-c unpacks recursively with no depth bound and reports no
 * detail on failure.  This walk over the wire format, guided by the same
 * descriptors, runs first: it bounds nesting (OTLP_MAX_DEPTH), counts
 * spans and points against the limits before anything is allocated, and
 * says which field at which byte is malformed.
 */
struct scan {
	const uint8_t *base;
	size_t spans, points;
	const struct otlp_limits *lim;
	struct otlp_nuls *nuls; /* string fields that hold NUL */
	uint8_t *fix;		/* base, writable: their NULs become 0xff */
	char *err;
	size_t errlen;
};

/* 0, or -1 when truncated, -2 when longer than 10 bytes. */
static int
scan_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;
	int shift;

	for (shift = 0; shift < 70; shift += 7) {
		if (p == end)
			return -1;
		r |= (uint64_t)(*p & 0x7f) << shift;
		if ((*p++ & 0x80) == 0) {
			*pp = p;
			*v = r;
			return 0;
		}
	}
	return -2;
}

static bool
is_varint_type(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_BOOL:
	case PROTOBUF_C_TYPE_ENUM: return true;
	default: return false;
	}
}

static bool
is_fixed64_type(ProtobufCType t)
{
	return t == PROTOBUF_C_TYPE_FIXED64 || t == PROTOBUF_C_TYPE_SFIXED64 ||
	       t == PROTOBUF_C_TYPE_DOUBLE;
}

static bool
is_fixed32_type(ProtobufCType t)
{
	return t == PROTOBUF_C_TYPE_FIXED32 || t == PROTOBUF_C_TYPE_SFIXED32 ||
	       t == PROTOBUF_C_TYPE_FLOAT;
}

static bool
is_point_desc(const ProtobufCMessageDescriptor *d)
{
	return d == &opentelemetry__proto__metrics__v1__number_data_point__descriptor ||
	       d == &opentelemetry__proto__metrics__v1__histogram_data_point__descriptor ||
	       d == &opentelemetry__proto__metrics__v1__exponential_histogram_data_point__descriptor ||
	       d == &opentelemetry__proto__metrics__v1__summary_data_point__descriptor;
}

static int
scan_fail(struct scan *s, const ProtobufCMessageDescriptor *d,
	  const uint8_t *at, uint32_t num, const ProtobufCFieldDescriptor *f,
	  const char *what)
{
	otlp_set_err(s->err, s->errlen,
		     "malformed protobuf: %s, field %u%s%s%s of %s at byte %zu",
		     what, num, f ? " (" : "", f ? f->name : "", f ? ")" : "",
		     d->short_name, (size_t)(at - s->base));
	return STATUS_INVALID;
}

/* Packed repeated scalars: whole elements only. */
static int
scan_packed(struct scan *s, const ProtobufCMessageDescriptor *d,
	    const uint8_t *at, uint32_t num, const ProtobufCFieldDescriptor *f,
	    const uint8_t *p, const uint8_t *end)
{
	uint64_t v;

	if (is_fixed64_type(f->type)) {
		if ((end - p) % 8)
			return scan_fail(s, d, at, num, f,
					 "packed fixed64 values not a "
					 "multiple of 8 bytes");
		return STATUS_OK;
	}
	if (is_fixed32_type(f->type)) {
		if ((end - p) % 4)
			return scan_fail(s, d, at, num, f,
					 "packed fixed32 values not a "
					 "multiple of 4 bytes");
		return STATUS_OK;
	}
	while (p < end)
		if (scan_varint(&p, end, &v) != 0)
			return scan_fail(s, d, at, num, f,
					 "bad varint in packed values");
	return STATUS_OK;
}

/*
 * A string field's value (len bytes at p) that holds NUL: counted on the
 * first pass, its NULs made 0xff on the second (s->fix), which otlp_rows.c
 * turns into U+FFFD as any byte that is not UTF-8.  protobuf-c would keep
 * the bytes but hand them out as a C string, cut at the first NUL.
 */
static void
scan_nuls(struct scan *s, const ProtobufCMessageDescriptor *d,
	  const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len)
{
	const uint8_t *q = memchr(p, 0, len);

	if (q == NULL)
		return;
	if (s->fix != NULL) {
		for (size_t i = (size_t)(q - p); i < len; i++)
			if (p[i] == 0)
				s->fix[p + i - s->base] = 0xff;
		return;
	}
	if (s->nuls->values++ == 0)
		snprintf(s->nuls->first, sizeof(s->nuls->first),
			 "%s.%s at byte %zu", d->short_name, f->name,
			 (size_t)(q - s->base));
}

static int
scan_message(struct scan *s, const ProtobufCMessageDescriptor *d,
	     const uint8_t *p, const uint8_t *end, int depth)
{
	while (p < end) {
		const uint8_t *at = p;
		const ProtobufCFieldDescriptor *f;
		uint64_t key, v, len;
		uint32_t num;
		int wt, rc;

		if (scan_varint(&p, end, &key) != 0)
			return scan_fail(s, d, at, 0, NULL, "bad field key");
		if ((key >> 3) == 0 || (key >> 3) > 536870911u)
			return scan_fail(s, d, at, 0, NULL,
					 "field number out of range");
		num = (uint32_t)(key >> 3);
		wt = (int)(key & 7);
		f = protobuf_c_message_descriptor_get_field(d, num);
		switch (wt) {
		case 0:
			if (scan_varint(&p, end, &v) != 0)
				return scan_fail(s, d, at, num, f,
						 "truncated varint");
			if (f && !is_varint_type(f->type))
				return scan_fail(s, d, at, num, f,
						 "varint for a non-varint "
						 "field");
			break;
		case 1:
			if (end - p < 8)
				return scan_fail(s, d, at, num, f,
						 "truncated fixed64");
			p += 8;
			if (f && !is_fixed64_type(f->type))
				return scan_fail(s, d, at, num, f,
						 "fixed64 for another type");
			break;
		case 5:
			if (end - p < 4)
				return scan_fail(s, d, at, num, f,
						 "truncated fixed32");
			p += 4;
			if (f && !is_fixed32_type(f->type))
				return scan_fail(s, d, at, num, f,
						 "fixed32 for another type");
			break;
		case 2:
			if (scan_varint(&p, end, &len) != 0)
				return scan_fail(s, d, at, num, f,
						 "bad length");
			if (len > (uint64_t)(end - p))
				return scan_fail(s, d, at, num, f,
						 "length past the end "
						 "(truncated body?)");
			if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING)
				scan_nuls(s, d, f, p, (size_t)len);
			if (f == NULL || f->type == PROTOBUF_C_TYPE_STRING ||
			    f->type == PROTOBUF_C_TYPE_BYTES) {
				p += len;
				break;
			}
			if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
				const ProtobufCMessageDescriptor *sub =
					f->descriptor;

				if (depth + 1 > OTLP_MAX_DEPTH)
					return scan_fail(s, d, at, num, f,
							 "messages nested too "
							 "deep");
				if (sub == &opentelemetry__proto__trace__v1__span__descriptor &&
				    ++s->spans > s->lim->max_spans) {
					otlp_set_err(s->err, s->errlen,
						     "more than %zu spans in "
						     "one request: send "
						     "smaller batches",
						     s->lim->max_spans);
					otlp_limit_key(s->err, s->errlen,
						       s->lim->items_key);
					return STATUS_LIMIT;
				}
				if (is_point_desc(sub) &&
				    ++s->points > s->lim->max_points) {
					otlp_set_err(s->err, s->errlen,
						     "more than %zu data "
						     "points in one request: "
						     "send smaller batches",
						     s->lim->max_points);
					otlp_limit_key(s->err, s->errlen,
						       s->lim->items_key);
					return STATUS_LIMIT;
				}
				rc = scan_message(s, sub, p, p + len,
						  depth + 1);
				if (rc != STATUS_OK)
					return rc;
				p += len;
				break;
			}
			if (f->label == PROTOBUF_C_LABEL_REPEATED) {
				rc = scan_packed(s, d, at, num, f, p, p + len);
				if (rc != STATUS_OK)
					return rc;
				p += len;
				break;
			}
			return scan_fail(s, d, at, num, f,
					 "length-delimited value for a "
					 "scalar field");
		default:
			return scan_fail(s, d, at, num, f,
					 "unsupported wire type (groups are "
					 "not used by OTLP)");
		}
	}
	return STATUS_OK;
}

static int
pb_too_big(const struct otlp_limits *lim, char *err, size_t errlen)
{
	otlp_set_err(err, errlen,
		     "decoded request needs more than %zu bytes: send smaller "
		     "batches",
		     lim->max_memory);
	return STATUS_LIMIT;
}

static int
pb_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
	  size_t len, const struct otlp_limits *lim, struct otlp_arena *a,
	  ProtobufCMessage **msg, struct otlp_nuls *nuls, char *err,
	  size_t errlen)
{
	struct scan s = {.base = data,
			 .lim = lim,
			 .nuls = nuls,
			 .err = err,
			 .errlen = errlen};
	ProtobufCAllocator pa;
	uint8_t *copy;
	int rc;

	*msg = NULL;
	rc = scan_message(&s, desc, data, data + len, 1);
	if (rc != STATUS_OK)
		return rc;
	if (nuls->values > 0) {
		/* the body is borrowed: its NULs change in a copy */
		copy = otlp_arena_alloc(a, len);
		if (copy == NULL)
			return otlp_arena_failure(a) == STATUS_LIMIT
				       ? pb_too_big(lim, err, errlen)
				       : STATUS_NOMEM;
		memcpy(copy, data, len);
		s = (struct scan){.base = copy,
				  .lim = lim,
				  .fix = copy,
				  .err = err,
				  .errlen = errlen};
		if ((rc = scan_message(&s, desc, copy, copy + len, 1)) !=
		    STATUS_OK)
			return rc;
		data = copy;
	}
	otlp_arena_pb_allocator(a, &pa);
	*msg = protobuf_c_message_unpack(desc, &pa, len, data);
	if (*msg == NULL) {
		if (a->budget && a->budget->exceeded)
			return pb_too_big(lim, err, errlen);
		if (a->nomem)
			return STATUS_NOMEM;
		/* the pre-scan accepted the wire format: protobuf-c refused
		 * a value it checks itself */
		otlp_set_err(err, errlen,
			     "malformed protobuf %s: the body does not decode",
			     desc->short_name);
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

/* ---- decoding ------------------------------------------------------------ */

static size_t
count_spans(const pb_trace_request *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_resource_spans; i++)
		for (size_t j = 0; j < r->resource_spans[i]->n_scope_spans; j++)
			n += r->resource_spans[i]->scope_spans[j]->n_spans;
	return n;
}

static size_t
metric_points(const pb_metric *m)
{
	switch (m->data_case) {
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
		return m->gauge->n_data_points;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
		return m->sum->n_data_points;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM:
		return m->histogram->n_data_points;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM:
		return m->exponential_histogram->n_data_points;
	case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY:
		return m->summary->n_data_points;
	default: return 0;
	}
}

static size_t
count_points(const pb_metrics_request *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_resource_metrics; i++) {
		const pb_resource_metrics *rm = r->resource_metrics[i];

		for (size_t j = 0; j < rm->n_scope_metrics; j++)
			for (size_t k = 0; k < rm->scope_metrics[j]->n_metrics;
			     k++)
				n += metric_points(
					rm->scope_metrics[j]->metrics[k]);
	}
	return n;
}

/* b->message: the first rejection, then the values changed for their
 * NULs (OTLP: a partial_success may carry a warning with nothing
 * rejected). */
static void
batch_message(struct otlp_batch *b, const struct otlp_nuls *nuls)
{
	size_t n = 0;

	b->replaced = nuls->values;
	b->message[0] = '\0';
	if (b->rejected > 0)
		n = (size_t)snprintf(b->message, sizeof(b->message), "%s",
				     b->reject_reason);
	if (nuls->values > 0 && n < sizeof(b->message))
		snprintf(b->message + n, sizeof(b->message) - n,
			 "%s%zu string value%s held NUL (U+0000), which the "
			 "store cannot keep: stored with U+FFFD in its place "
			 "(the first: %s)",
			 n > 0 ? "; " : "", nuls->values,
			 nuls->values == 1 ? "" : "s", nuls->first);
}

static int
decode(enum otlp_signal sig, const char *content_type,
       const char *content_encoding, const void *body, size_t len,
       const struct otlp_limits *lim, const struct otlp_source_rules *rules,
       struct otlp_batch **out, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *desc =
		sig == OTLP_SIGNAL_TRACES
			? &opentelemetry__proto__collector__trace__v1__export_trace_service_request__descriptor
			: &opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__descriptor;
	struct otlp_limits deflim;
	struct otlp_budget budget;
	enum otlp_encoding enc;
	const uint8_t *data = body;
	uint8_t *plain = NULL;
	struct otlp_arena *tree = NULL;
	ProtobufCMessage *msg = NULL;
	struct otlp_batch *b = NULL;
	struct otlp_nuls nuls = {0};
	char ex[48];
	int rc;

	*out = NULL;
	if (errlen > 0)
		err[0] = '\0';
	if (lim == NULL) {
		otlp_limits_default(&deflim);
		lim = &deflim;
	}
	if (rules == NULL)
		rules = &otlp_default_source_rules;
	if (body == NULL)
		len = 0;

	rc = otlp_content_type_encoding(content_type, &enc);
	if (rc != STATUS_OK) {
		header_excerpt(content_type ? content_type : "", ex,
			       sizeof(ex));
		otlp_set_err(err, errlen,
			     "unsupported content type '%s': send "
			     "application/json or application/x-protobuf",
			     ex);
		goto out;
	}
	if (content_encoding && content_encoding[0] &&
	    !header_is(content_encoding, "identity")) {
		if (!header_is(content_encoding, "gzip") &&
		    !header_is(content_encoding, "x-gzip")) {
			header_excerpt(content_encoding, ex, sizeof(ex));
			otlp_set_err(err, errlen,
				     "unsupported content encoding '%s': send "
				     "gzip or no encoding",
				     ex);
			rc = STATUS_UNSUPPORTED;
			goto out;
		}
		rc = gunzip(data, len, lim->max_decompressed,
			    lim->decompressed_key, &plain, &len, err, errlen);
		if (rc != STATUS_OK)
			goto out;
		data = plain;
	} else if (len > lim->max_decompressed) {
		otlp_set_err(err, errlen,
			     "body is larger than %zu bytes: send smaller "
			     "batches",
			     lim->max_decompressed);
		otlp_limit_key(err, errlen, lim->decompressed_key);
		rc = STATUS_LIMIT;
		goto out;
	}

	budget = (struct otlp_budget){.max = lim->max_memory};
	tree = otlp_arena_new(&budget);
	if (tree == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (len == 0) {
		/* an empty body is an empty request, in both encodings */
		msg = otlp_arena_alloc(tree, desc->sizeof_message);
		if (msg == NULL) {
			rc = otlp_arena_failure(tree);
			goto out;
		}
		protobuf_c_message_init(desc, msg);
	} else if (enc == OTLP_ENCODING_JSON) {
		rc = otlp_json_decode(desc, (const char *)data, len, lim, tree,
				      &msg, &nuls, err, errlen);
		if (rc != STATUS_OK)
			goto out;
	} else {
		rc = pb_decode(desc, data, len, lim, tree, &msg, &nuls, err,
			       errlen);
		if (rc != STATUS_OK)
			goto out;
	}
	/* the protobuf pre-scan counted already; JSON is counted here */
	if (sig == OTLP_SIGNAL_TRACES &&
	    count_spans((const pb_trace_request *)msg) > lim->max_spans) {
		otlp_set_err(err, errlen,
			     "more than %zu spans in one request: send "
			     "smaller batches",
			     lim->max_spans);
		otlp_limit_key(err, errlen, lim->items_key);
		rc = STATUS_LIMIT;
		goto out;
	}
	if (sig == OTLP_SIGNAL_METRICS &&
	    count_points((const pb_metrics_request *)msg) > lim->max_points) {
		otlp_set_err(err, errlen,
			     "more than %zu data points in one request: send "
			     "smaller batches",
			     lim->max_points);
		otlp_limit_key(err, errlen, lim->items_key);
		rc = STATUS_LIMIT;
		goto out;
	}

	b = calloc(1, sizeof(*b));
	if (b == NULL || (b->arena = otlp_arena_new(&budget)) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (sig == OTLP_SIGNAL_TRACES)
		rc = otlp_rows_traces((const pb_trace_request *)msg, lim, rules,
				      b, err, errlen);
	else
		rc = otlp_rows_metrics((const pb_metrics_request *)msg, lim,
				       rules, b, err, errlen);
	if (rc != STATUS_OK)
		goto out;
	batch_message(b, &nuls);
	/* the budget is a local: the batch's arena makes no more
	 * allocations once it is handed out */
	b->arena->budget = NULL;
	*out = b;
	b = NULL;
out:
	if (rc == STATUS_NOMEM)
		otlp_set_err(err, errlen, "out of memory decoding the request");
	otlp_arena_free(tree);
	free(plain);
	otlp_batch_free(b);
	return rc;
}

int
otlp_decode_traces(const char *content_type, const char *content_encoding,
		   const void *body, size_t len, const struct otlp_limits *lim,
		   const struct otlp_source_rules *rules,
		   struct otlp_batch **out, char *err, size_t errlen)
{
	return decode(OTLP_SIGNAL_TRACES, content_type, content_encoding, body,
		      len, lim, rules, out, err, errlen);
}

int
otlp_decode_metrics(const char *content_type, const char *content_encoding,
		    const void *body, size_t len, const struct otlp_limits *lim,
		    const struct otlp_source_rules *rules,
		    struct otlp_batch **out, char *err, size_t errlen)
{
	return decode(OTLP_SIGNAL_METRICS, content_type, content_encoding, body,
		      len, lim, rules, out, err, errlen);
}

/* ---- responses ----------------------------------------------------------- */

/* Appends s as a JSON string (s is the gateway's own ASCII/UTF-8 text). */
static void
json_quote(struct buf *b, const char *s)
{
	buf_append(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			buf_printf(b, "\\u%04x", c);
		else
			buf_append(b, s, 1);
	}
	buf_append(b, "\"", 1);
}

/* Hands the data of b to the caller; any failure of its appends is
 * STATUS_NOMEM (the text is the gateway's own, far below the bound). */
static int
body_finish(struct buf *b, char **body, size_t *len)
{
	return buf_finish(b, body, len) == STATUS_OK ? STATUS_OK : STATUS_NOMEM;
}

int
otlp_response_body(enum otlp_encoding enc, enum otlp_signal sig,
		   size_t rejected, const char *error_message, char **body,
		   size_t *len)
{
	const char *msg = error_message ? error_message : "";
	struct buf b;

	*body = NULL;
	*len = 0;
	if (enc == OTLP_ENCODING_JSON) {
		buf_init(&b, 1024 * 1024);
		if (rejected == 0 && msg[0] == '\0') {
			buf_puts(&b, "{}");
		} else {
			/* proto3 JSON leaves a zero count out */
			buf_puts(&b, "{\"partialSuccess\":{");
			if (rejected > 0)
				buf_printf(&b, "\"%s\":\"%zu\"%s",
					   sig == OTLP_SIGNAL_TRACES
						   ? "rejectedSpans"
						   : "rejectedDataPoints",
					   rejected, msg[0] ? "," : "");
			if (msg[0]) {
				buf_puts(&b, "\"errorMessage\":");
				json_quote(&b, msg);
			}
			buf_puts(&b, "}}");
		}
		return body_finish(&b, body, len);
	}
	if (sig == OTLP_SIGNAL_TRACES) {
		Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse
			r = OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_RESPONSE__INIT;
		Opentelemetry__Proto__Collector__Trace__V1__ExportTracePartialSuccess
			ps = OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_PARTIAL_SUCCESS__INIT;

		if (rejected > 0 || msg[0]) {
			ps.rejected_spans = (int64_t)rejected;
			ps.error_message = (char *)msg;
			r.partial_success = &ps;
		}
		*len = protobuf_c_message_get_packed_size(&r.base);
		*body = malloc(*len ? *len : 1);
		if (*body == NULL)
			return STATUS_NOMEM;
		protobuf_c_message_pack(&r.base, (uint8_t *)*body);
	} else {
		Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceResponse
			r = OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_RESPONSE__INIT;
		Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsPartialSuccess
			ps = OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_PARTIAL_SUCCESS__INIT;

		if (rejected > 0 || msg[0]) {
			ps.rejected_data_points = (int64_t)rejected;
			ps.error_message = (char *)msg;
			r.partial_success = &ps;
		}
		*len = protobuf_c_message_get_packed_size(&r.base);
		*body = malloc(*len ? *len : 1);
		if (*body == NULL)
			return STATUS_NOMEM;
		protobuf_c_message_pack(&r.base, (uint8_t *)*body);
	}
	return STATUS_OK;
}

/* Appends v as a protobuf varint. */
static void
put_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	buf_append(b, tmp, n);
}

int
otlp_status_body(enum otlp_encoding enc, int code, const char *message,
		 char **body, size_t *len)
{
	const char *msg = message ? message : "";
	struct buf b;

	*body = NULL;
	*len = 0;
	buf_init(&b, 1024 * 1024);
	if (enc == OTLP_ENCODING_JSON) {
		buf_puts(&b, "{");
		if (code != 0)
			buf_printf(&b, "\"code\":%d,", code);
		buf_puts(&b, "\"message\":");
		json_quote(&b, msg);
		buf_puts(&b, "}");
		return body_finish(&b, body, len);
	}
	/* google.rpc.Status: int32 code = 1; string message = 2 */
	if (code != 0) {
		put_varint(&b, 1 << 3 | 0);
		put_varint(&b, (uint64_t)(int64_t)code);
	}
	if (msg[0]) {
		put_varint(&b, 2 << 3 | 2);
		put_varint(&b, strlen(msg));
		buf_puts(&b, msg);
	}
	return body_finish(&b, body, len);
}

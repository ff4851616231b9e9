/*
 * fuzz_otlp.c - libFuzzer harness for lib/otlp.
 *
 * Decodes each input as traces and as metrics, as JSON and as protobuf,
 * as sent and gzip-compressed (and as a gzip stream itself), under small
 * limits so the limit paths are reached.  Every batch is checked: the
 * contracts of otlp.h hold and every *_json field parses as JSON of the
 * promised shape.  Crashes, leaks and sanitizer reports are the findings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "otlp/otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_json(const char *s, json_type want)
{
	json_error_t e;
	json_t *j;

	if (s == NULL)
		abort();
	j = json_loads(s, 0, &e);
	if (j == NULL || json_typeof(j) != want)
		abort();
	json_decref(j);
}

/* NULL or a non-empty, valid UTF-8 string (jansson checks the UTF-8). */
static void
check_text(const char *s)
{
	json_t *j;

	if (s == NULL)
		return;
	if (s[0] == '\0')
		abort();
	j = json_string(s);
	if (j == NULL)
		abort();
	json_decref(j);
}

static void
check_batch(const struct otlp_batch *b)
{
	char *body;
	size_t len;

	for (size_t i = 0; i < b->n_spans; i++) {
		const struct otlp_span *s = &b->spans[i];

		if (s->name == NULL || s->end_unix_nano < s->start_unix_nano ||
		    s->start_unix_nano == 0 || s->kind < 0 || s->kind > 5 ||
		    s->status_code < 0 || s->status_code > 2)
			abort();
		check_text(s->name);
		check_text(s->service_name);
		check_text(s->status_message);
		check_text(s->http_route);
		check_text(s->rpc_service);
		check_text(s->rpc_method);
		check_text(s->session_id);
		check_json(s->attributes_json, JSON_OBJECT);
		check_json(s->resource_json, JSON_OBJECT);
		check_json(s->events_json, JSON_ARRAY);
	}
	for (size_t i = 0; i < b->n_points; i++) {
		const struct otlp_point *p = &b->points[i];

		if (p->name == NULL || p->time_unix_nano == 0)
			abort();
		if (p->type == OTLP_POINT_HISTOGRAM) {
			if (p->n_bucket_counts != 0 &&
			    p->n_bucket_counts != p->n_bounds + 1)
				abort();
			for (size_t k = 1; k < p->n_bounds; k++)
				if (!(p->bounds[k] > p->bounds[k - 1]))
					abort();
			for (size_t k = 0; k < p->n_bucket_counts; k++)
				if (p->bucket_counts[k] == 0xdeadbeefdeadbeef)
					abort(); /* read every count */
		}
		check_text(p->name);
		check_text(p->unit);
		check_json(p->attributes_json, JSON_OBJECT);
		check_json(p->resource_json, JSON_OBJECT);
	}
	if ((b->rejected == 0) != (b->reject_reason[0] == '\0'))
		abort();
	/* the answer speaks of every rejection and every value changed for
	 * a NUL, in valid UTF-8 */
	if ((b->rejected == 0 && b->replaced == 0) != (b->message[0] == '\0'))
		abort();
	if (b->message[0] != '\0')
		check_text(b->message);
	if (otlp_response_body(OTLP_ENCODING_PROTOBUF, OTLP_SIGNAL_TRACES,
			       b->rejected, b->message, &body,
			       &len) == STATUS_OK)
		free(body);
}

static void
decode_all(const char *encoding, const void *data, size_t size,
	   const struct otlp_limits *lim)
{
	static const char *const types[] = {"application/json",
					    "application/x-protobuf"};

	for (int t = 0; t < 2; t++) {
		for (int sig = 0; sig < 2; sig++) {
			struct otlp_batch *b = NULL;
			char err[256];
			int rc;

			err[0] = 'x';
			rc = sig == 0
				     ? otlp_decode_traces(types[t], encoding,
							  data, size, lim, NULL,
							  &b, err, sizeof(err))
				     : otlp_decode_metrics(
					       types[t], encoding, data, size,
					       lim, NULL, &b, err, sizeof(err));
			if (rc == STATUS_OK) {
				if (b == NULL)
					abort();
				check_batch(b);
				otlp_batch_free(b);
			} else if (b != NULL || err[0] == '\0' ||
				   strlen(err) >= sizeof(err)) {
				abort();
			}
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_limits lim;
	uLongf zlen;
	uint8_t *z;
	z_stream zs;

	otlp_limits_default(&lim);
	lim.max_decompressed = 1 << 20;
	lim.max_attr_bytes = 64;
	lim.max_memory = 64u << 20;
	lim.max_spans = 1000;
	lim.max_points = 1000;

	decode_all(NULL, data, size, &lim);
	decode_all("gzip", data, size, &lim);

	/* the same bytes behind a valid gzip stream */
	zlen = compressBound(size) + 32;
	z = malloc(zlen);
	if (z == NULL)
		return 0;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) == Z_OK) {
		zs.next_in = (Bytef *)data;
		zs.avail_in = (uInt)size;
		zs.next_out = z;
		zs.avail_out = (uInt)zlen;
		if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
			decode_all("gzip", z, zs.total_out, &lim);
		deflateEnd(&zs);
	}
	free(z);
	return 0;
}

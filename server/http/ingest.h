/*
 * ingest.h - the OTLP/HTTP receiver: POST /v1/traces and /v1/metrics.
 *
 * The body is decoded (lib/otlp) and written (lib/otlp/store) on a worker while
 * the connection is suspended; the answer is sent only after COMMIT, so an
 * acknowledged batch is never lost.  Failures map to the statuses OTLP
 * exporters understand: 400 (malformed, not retried), 413, 415, and 503
 * with Retry-After (queue full, database down: retried).
 */
#ifndef SEXTANT_INGEST_H
#define SEXTANT_INGEST_H

#include <microhttpd.h>
#include <stdbool.h>

struct req;
struct server;

/* Checks before the body is read (method, enabled, Content-Type, key,
 * draining or past the connection limit: 503, size); false with a
 * response queued in *ret when refused. */
bool ingest_gate(struct req *r, bool traces, enum MHD_Result *ret);

/* 413 for a body past ingest.max_body_bytes (by Content-Length, or once
 * read): a google.rpc.Status in the request's encoding naming the limit. */
enum MHD_Result ingest_too_large(struct req *r);

/* Runs once the body is complete, and again when the worker resumes the
 * connection. */
enum MHD_Result ingest_handle(struct req *r, bool traces);

#endif

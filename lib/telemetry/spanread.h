/*
 * spanread.h - one span whole: its fields, attributes, resource, events
 * and links, for a span's side panel (get_trace with a span_id).  The
 * trace statements read what a tree needs; this reads the rest of one
 * span, bounded in SQL so that no stored span makes a large answer.
 */
#ifndef SEXTANT_SPANREAD_H
#define SEXTANT_SPANREAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

/*
 * The bounds: the first SPANREAD_ATTRS attributes by name (resource the
 * same), the first SPANREAD_EVENTS events in their order with the first
 * SPANREAD_EVENT_ATTRS attributes each, the first SPANREAD_LINKS links;
 * a value longer than SPANREAD_VALUE characters (as text) is cut and ends
 * in "…", an event's or span's name and status message likewise.  Each
 * list comes with its stored total, so an answer can say what it left out.
 */
#define SPANREAD_ATTRS	     128
#define SPANREAD_EVENTS	     64
#define SPANREAD_EVENT_ATTRS 32
#define SPANREAD_LINKS	     16
#define SPANREAD_VALUE	     1024

/*
 * The span's rows, one per source that stored it (at most 2), OTLP first.
 * Each row is one compact JSON object:
 *   {"source": "otlp", "start_ns": int, "duration_ns": int, "kind": 0..5,
 *    "status": 0..2 (SPANQUERY_STATUS_SQL), "status_message": str|null,
 *    "parent_span_id": hex|null, "service": str, "name": str,
 *    "scope": str|null, "scope_version": str|null,
 *    "attributes": [[key, value], ...], "attributes_total": int,
 *    "resource": [[key, value], ...], "resource_total": int,
 *    "events": [{"offset_ns": int|null, "name": str|null,
 *                "attributes": [[key, value], ...],
 *                "attributes_total": int}, ...], "events_total": int,
 *    "links": [{"trace_id": hex|null, "span_id": hex|null,
 *               "attributes": [[key, value], ...]}, ...],
 *    "links_total": int}
 * values as stored (any JSON), not redacted: the caller redacts.
 * offset_ns is the event's time from the span's start, null when the
 * stored time is not a number.
 */
struct spanread {
	size_t n;
	const char *source[2];
	const char *json[2];
	void *priv_;
};

/* Sends the read of span span_id of trace trace_id (both binary). */
int spanread_send(struct pg_conn *c, const uint8_t trace_id[16],
		  const uint8_t span_id[8], struct pg_error *err) WUR;
/* *out: caller frees with spanread_free (n 0: no such span); NULL on
 * failure. */
int spanread_recv(struct pg_conn *c, struct spanread **out,
		  struct pg_error *err) WUR;
void spanread_free(struct spanread *r);

#endif

/*
 * sse.h - Server-Sent Events: the wire encoder and a bounded replay log.
 *
 * The encoder writes events as the HTML standard defines them (id, retry,
 * data lines, blank line).  The log keeps the most recent encoded events
 * of one stream, numbered by consecutive sequence numbers, so a client that
 * reconnects with Last-Event-ID gets what it missed; it is bounded both in
 * events and in bytes, evicting the oldest.  Not thread-safe: the owner
 * locks.
 */
#ifndef SEXTANT_SSE_H
#define SEXTANT_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

/*
 * Appends one event to b.  id: NULL for none; retry_ms < 0 for none; data
 * may be empty (a priming event still gets its "data:" line, which parsers
 * need to dispatch it) and is split into data: lines at '\n' (a '\r' is
 * dropped, as the format cannot carry it).  An event that does not fit
 * leaves b as it was, without error, and returns STATUS_LIMIT or
 * STATUS_NOMEM; one pending in b already is returned untouched.
 */
int sse_encode(struct buf *b, const char *id, int retry_ms, const char *data,
	       size_t len) WUR;

/* Appends a comment line (": text\n\n"), e.g. a keep-alive: a plain
 * append (buf.h), its failure kept in b. */
int sse_encode_comment(struct buf *b, const char *text);

struct sse_log;

/* max_events >= 1, max_bytes >= 1; the newest event is always kept. */
int sse_log_new(size_t max_events, size_t max_bytes, struct sse_log **out) WUR;
void sse_log_free(struct sse_log *log); /* accepts NULL */

/*
 * Copies an encoded event into the log as number seq, which must be the
 * last number plus one (any number for the first event).  Evicts the
 * oldest events beyond the bounds.  STATUS_INVALID for a wrong seq.
 */
int sse_log_append(struct sse_log *log, uint64_t seq, const char *ev,
		   size_t len) WUR;

size_t sse_log_count(const struct sse_log *log);
/* Oldest and newest kept numbers; false when the log is empty. */
bool sse_log_range(const struct sse_log *log, uint64_t *first, uint64_t *last);

/* Where a reader is: the next event to send and how much of it was sent. */
struct sse_cursor {
	uint64_t seq;
	size_t off;
};

/*
 * Copies up to max bytes of the events from the cursor on into dst and
 * advances the cursor.  When the cursor's event was evicted, it jumps to
 * the oldest kept event and sets *gap (the reader lost events).  Returns
 * the number of bytes copied (0: nothing new).
 */
size_t sse_log_read(const struct sse_log *log, struct sse_cursor *cur,
		    char *dst, size_t max, bool *gap);

/* The same, never reading event limit or later (events not yet allowed
 * out, e.g. not yet stored where other gateways can replay them). */
size_t sse_log_read_upto(const struct sse_log *log, struct sse_cursor *cur,
			 uint64_t limit, char *dst, size_t max, bool *gap);

/* Event seq as kept: *ev is borrowed until the next append (not
 * NUL-terminated).  STATUS_NOTFOUND when evicted or not yet appended. */
int sse_log_get(const struct sse_log *log, uint64_t seq, const char **ev,
		size_t *len) WUR;

/* True when the cursor is past the newest event (all sent). */
bool sse_log_drained(const struct sse_log *log, const struct sse_cursor *cur);

#endif

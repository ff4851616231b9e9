/*
 * sse.c - SSE encoder and bounded replay log (see sse.h).
 *
 * The log is a ring of consecutive sequence numbers: the event numbered
 * seq sits at (head + seq - first) modulo the capacity, so lookups on
 * resume and on every read are O(1).
 */
#include "base/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
sse_encode(struct buf *b, const char *id, int retry_ms, const char *data,
	   size_t len)
{
	const char *p = data, *end = data + len;
	size_t start = b->len;
	int rc = buf_error(b);

	if (rc != STATUS_OK)
		return rc;
	if (id != NULL)
		buf_printf(b, "id: %s\n", id);
	if (retry_ms >= 0)
		buf_printf(b, "retry: %d\n", retry_ms);
	for (;;) {
		const char *nl =
			p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		const char *stop = nl != NULL ? nl : end;

		buf_puts(b, "data: ");
		while (p < stop) {
			const char *cr = memchr(p, '\r', (size_t)(stop - p));
			const char *run = cr != NULL ? cr : stop;

			buf_append(b, p, (size_t)(run - p));
			p = cr != NULL ? cr + 1 : stop;
		}
		buf_puts(b, "\n");
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	rc = buf_puts(b, "\n");
	if (rc != STATUS_OK)
		buf_rollback(b, start); /* the event whole or not at all */
	return rc;
}

int
sse_encode_comment(struct buf *b, const char *text)
{
	return buf_printf(b, ": %s\n\n", text);
}

struct sse_entry {
	char *data;
	size_t len;
};

struct sse_log {
	struct sse_entry *ring;
	size_t cap;	/* max events */
	size_t head;	/* index of the oldest event */
	size_t count;	/* events kept */
	uint64_t first; /* seq of the oldest event */
	size_t bytes;
	size_t max_bytes;
};

int
sse_log_new(size_t max_events, size_t max_bytes, struct sse_log **out)
{
	struct sse_log *log;

	*out = NULL;
	if (max_events < 1 || max_bytes < 1)
		return STATUS_INVALID;
	log = calloc(1, sizeof(*log));
	if (log == NULL)
		return STATUS_NOMEM;
	log->ring = calloc(max_events, sizeof(*log->ring));
	if (log->ring == NULL) {
		free(log);
		return STATUS_NOMEM;
	}
	log->cap = max_events;
	log->max_bytes = max_bytes;
	*out = log;
	return STATUS_OK;
}

void
sse_log_free(struct sse_log *log)
{
	size_t i;

	if (log == NULL)
		return;
	for (i = 0; i < log->count; i++)
		free(log->ring[(log->head + i) % log->cap].data);
	free(log->ring);
	free(log);
}

static void
sse_log_evict(struct sse_log *log)
{
	struct sse_entry *e = &log->ring[log->head];

	log->bytes -= e->len;
	free(e->data);
	e->data = NULL;
	e->len = 0;
	log->head = (log->head + 1) % log->cap;
	log->count--;
	log->first++;
}

int
sse_log_append(struct sse_log *log, uint64_t seq, const char *ev, size_t len)
{
	struct sse_entry *e;
	char *copy;

	if (log->count > 0 && seq != log->first + log->count)
		return STATUS_INVALID;
	copy = malloc(len > 0 ? len : 1);
	if (copy == NULL)
		return STATUS_NOMEM;
	memcpy(copy, ev, len);
	if (log->count == log->cap)
		sse_log_evict(log);
	if (log->count == 0)
		log->first = seq;
	e = &log->ring[(log->head + log->count) % log->cap];
	e->data = copy;
	e->len = len;
	log->count++;
	log->bytes += len;
	while (log->count > 1 && log->bytes > log->max_bytes)
		sse_log_evict(log);
	return STATUS_OK;
}

size_t
sse_log_count(const struct sse_log *log)
{
	return log->count;
}

bool
sse_log_range(const struct sse_log *log, uint64_t *first, uint64_t *last)
{
	if (log->count == 0)
		return false;
	*first = log->first;
	*last = log->first + log->count - 1;
	return true;
}

size_t
sse_log_read(const struct sse_log *log, struct sse_cursor *cur, char *dst,
	     size_t max, bool *gap)
{
	return sse_log_read_upto(log, cur, UINT64_MAX, dst, max, gap);
}

size_t
sse_log_read_upto(const struct sse_log *log, struct sse_cursor *cur,
		  uint64_t limit, char *dst, size_t max, bool *gap)
{
	size_t copied = 0;

	*gap = false;
	if (log->count == 0)
		return 0;
	if (cur->seq < log->first) {
		*gap = true;
		cur->seq = log->first;
		cur->off = 0;
	}
	while (copied < max && cur->seq < log->first + log->count &&
	       cur->seq < limit) {
		const struct sse_entry *e =
			&log->ring[(log->head + (cur->seq - log->first)) %
				   log->cap];
		size_t n = e->len - cur->off;

		if (n > max - copied)
			n = max - copied;
		memcpy(dst + copied, e->data + cur->off, n);
		copied += n;
		cur->off += n;
		if (cur->off == e->len) {
			cur->seq++;
			cur->off = 0;
		}
	}
	return copied;
}

int
sse_log_get(const struct sse_log *log, uint64_t seq, const char **ev,
	    size_t *len)
{
	const struct sse_entry *e;

	*ev = NULL;
	*len = 0;
	if (log->count == 0 || seq < log->first ||
	    seq >= log->first + log->count)
		return STATUS_NOTFOUND;
	e = &log->ring[(log->head + (seq - log->first)) % log->cap];
	*ev = e->data;
	*len = e->len;
	return STATUS_OK;
}

bool
sse_log_drained(const struct sse_log *log, const struct sse_cursor *cur)
{
	return log->count == 0 || cur->seq >= log->first + log->count;
}

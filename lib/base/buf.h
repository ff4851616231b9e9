/*
 * buf.h - a growable byte buffer with a hard maximum and a sticky error.
 *
 * Every buffer fed by the network has a bound: appending past max fails
 * with STATUS_LIMIT.  The first failed append (STATUS_LIMIT, or
 * STATUS_NOMEM when memory runs out) is kept in the buffer and every later
 * append does nothing, so the rule is: append freely; check buf_error once
 * before using the bytes (buf_finish checks and hands them over in one
 * call).  The bytes before the failure stay, NUL-terminated (not counted
 * in len) so they can be handed to string APIs, but while an error is
 * pending they are not the whole text and must not be sent or stored.
 *
 * A writer on top of buf that returns a status and promises to leave b as
 * it was on failure (a table row, an SSE event, a quoted string) starts
 * only when no error is pending and gives a failed piece up with
 * buf_rollback; its status then matters, so it is WUR.  Plain appends feed
 * the sticky error and are not.
 *
 * Ownership: the buffer owns data until buf_steal or buf_finish hands it
 * to the caller; buf_free frees it.  No locking: one owner at a time.
 */
#ifndef SEXTANT_BUF_H
#define SEXTANT_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "base/status.h"

struct buf {
	char *data; /* NULL until the first append */
	size_t len;
	size_t cap;
	size_t max; /* hard maximum of len */
	int err;    /* the first failure; STATUS_OK while none is pending */
};

/* A buffer that will hold at most max bytes.  Allocates nothing yet. */
void buf_init(struct buf *b, size_t max);

/*
 * Appends, unless an error is pending (they then do nothing).  A failed
 * append leaves the bytes as they were and keeps its error in b:
 * STATUS_LIMIT past max, STATUS_NOMEM, STATUS_INVALID for a format
 * vsnprintf refuses.  Each returns buf_error(b) after the call, for a
 * caller that must stop at once (a reader filling a bounded buffer from a
 * stream); others ignore it and check once.
 */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);

/* The first failure since buf_init, buf_reset or buf_rollback, or
 * STATUS_OK. */
int buf_error(const struct buf *b) WUR;

/*
 * Keeps status (not STATUS_OK) as b's error unless one is pending: for a
 * writer on top of buf whose own step fails (a value it cannot encode),
 * so that its caller too checks once.
 */
void buf_set_error(struct buf *b, int status);

/*
 * Gives up what was appended past len, a b->len read while no error was
 * pending: drops those bytes and the error they met, so b takes appends
 * again.  For a writer that leaves b as it was on failure, and for a
 * caller that ends a table at the row that does not fit and then writes
 * its "N more" note.  len <= b->len.  At b->len itself (a failed append
 * leaves len where it was) every byte stays and only the failed append is
 * given up.  This is how len is lowered, never by hand.
 */
void buf_rollback(struct buf *b, size_t len);

/* Empties the buffer and forgets its error, keeping its memory. */
void buf_reset(struct buf *b);

/*
 * Hands the data to the caller (free() it) and leaves the buffer empty.
 * Returns an allocated empty string when nothing was appended.  NULL when
 * an error is pending (b is left as it is: buf_error says which, buf_free
 * cleans up) or on ENOMEM.
 */
char *buf_steal(struct buf *b, size_t *len);

/*
 * The one check and the hand-over: STATUS_OK with *out the data (caller
 * frees with free()) and *len its length (len may be NULL); else the
 * pending error, or STATUS_NOMEM, with *out NULL.  Either way the buffer
 * is left empty, without error, ready for more appends.
 */
int buf_finish(struct buf *b, char **out, size_t *len) WUR;

/* Frees the data and forgets the error.  The buffer can be reused after
 * buf_init. */
void buf_free(struct buf *b);

#endif

/*
 * buf.h - a growable byte buffer with a hard maximum.
 *
 * Every buffer fed by the network has a bound: appending past max fails
 * with STATUS_LIMIT and leaves the buffer as it was.  The data is always
 * NUL-terminated (not counted in len) so it can be handed to string APIs.
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
};

/* A buffer that will hold at most max bytes.  Allocates nothing yet. */
void buf_init(struct buf *b, size_t max);

/* STATUS_LIMIT past max, STATUS_NOMEM; the buffer is unchanged then. */
int buf_append(struct buf *b, const void *p, size_t n) WUR;
int buf_puts(struct buf *b, const char *s) WUR;
int buf_printf(struct buf *b, const char *fmt, ...) WUR PRINTF_LIKE(2, 3);
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) WUR
	PRINTF_LIKE(2, 0);

/* Empties the buffer, keeping its memory. */
void buf_reset(struct buf *b);

/*
 * Hands the data to the caller (free() it) and leaves the buffer empty.
 * Returns an allocated empty string when nothing was appended; NULL only
 * on ENOMEM.
 */
char *buf_steal(struct buf *b, size_t *len);

/* Frees the data.  The buffer can be reused after buf_init. */
void buf_free(struct buf *b);

#endif

/* buf.c - growable byte buffer with a hard maximum and a sticky error (see
 * buf.h). */
#include "base/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->err = STATUS_OK;
}

int
buf_error(const struct buf *b)
{
	return b->err;
}

/* Keeps rc as the buffer's error; returns it. */
static int
fail(struct buf *b, int rc)
{
	b->err = rc;
	return rc;
}

void
buf_set_error(struct buf *b, int status)
{
	if (status != STATUS_OK && b->err == STATUS_OK)
		fail(b, status);
}

static int
buf_reserve(struct buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->err != STATUS_OK)
		return b->err;
	if (n > b->max || b->len > b->max - n)
		return fail(b, STATUS_LIMIT);
	need = b->len + n + 1;
	if (need <= b->cap)
		return STATUS_OK;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return fail(b, STATUS_NOMEM);
	b->data = p;
	b->cap = cap;
	return STATUS_OK;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc != STATUS_OK)
		return rc;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return STATUS_OK;
}

int
buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, rc;

	if (b->err != STATUS_OK)
		return b->err;
	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return fail(b, STATUS_INVALID);
	rc = buf_reserve(b, (size_t)n);
	if (rc != STATUS_OK)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return STATUS_OK;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void
buf_rollback(struct buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		if (b->data != NULL)
			b->data[len] = '\0';
	}
	b->err = STATUS_OK;
}

void
buf_reset(struct buf *b)
{
	buf_rollback(b, 0);
}

char *
buf_steal(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (buf_error(b) != STATUS_OK)
		return NULL;
	if (p == NULL) {
		p = strdup("");
		if (p == NULL)
			return NULL;
	}
	if (len != NULL)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->err = STATUS_OK;
	return p;
}

int
buf_finish(struct buf *b, char **out, size_t *len)
{
	int rc = buf_error(b);

	*out = rc == STATUS_OK ? buf_steal(b, len) : NULL;
	if (*out != NULL)
		return STATUS_OK;
	buf_free(b);
	return rc != STATUS_OK ? rc : STATUS_NOMEM;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->err = STATUS_OK;
}

/*
 * base64.h - base64url without padding (RFC 4648 section 5), with one
 * spelling per value: opaque tokens (cursors, sealed request state) that
 * travel in JSON and URLs.  Pure; thread-safe.
 */
#ifndef SEXTANT_BASE64_H
#define SEXTANT_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Characters base64url_encode writes for n bytes, NUL excluded. */
#define BASE64URL_LEN(n) (((n) + 2) / 3 * 4)

/* Encodes n bytes into out (cap bytes, NUL-terminated); false when out is
 * too small (BASE64URL_LEN(n) + 1 needed). */
bool base64url_encode(const unsigned char *in, size_t n, char *out, size_t cap);

/*
 * Decodes s: no padding, no other byte, and the unused low bits of the
 * last character zero (so each value has exactly one spelling).  out has
 * room for cap bytes; *n gets the length.  false when s is not that or
 * does not fit.
 */
bool base64url_decode(const char *s, unsigned char *out, size_t cap, size_t *n);

#endif

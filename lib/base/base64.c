/*
 * base64.c - base64url without padding; see base64.h.
 */
#include "base/base64.h"

#include <stdint.h>
#include <string.h>

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

bool
base64url_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	if (BASE64URL_LEN(n) + 1 > cap)
		return false;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			v |= in[i + 2];
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
		if (left > 1)
			out[o++] = b64url[v >> 6 & 63];
		if (left > 2)
			out[o++] = b64url[v & 63];
	}
	out[o] = '\0';
	return true;
}

static int
value_of(int c)
{
	const char *p = c != '\0' ? strchr(b64url, c) : NULL;

	return p != NULL ? (int)(p - b64url) : -1;
}

bool
base64url_decode(const char *s, unsigned char *out, size_t cap, size_t *n)
{
	size_t len = strlen(s), o = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (len % 4 == 1)
		return false;
	for (size_t i = 0; i < len; i++) {
		int v = value_of((unsigned char)s[i]);

		if (v < 0)
			return false;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= cap)
				return false;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)
		return false;
	*n = o;
	return true;
}

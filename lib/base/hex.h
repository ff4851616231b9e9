/* hex.h - hexadecimal digits, shared by the parsers in lib/ (TOML \u
 * escapes, OTLP JSON ids and escapes, API key hashes, trace and span ids
 * read back from the store) and the writers of ids. */
#ifndef SEXTANT_HEX_H
#define SEXTANT_HEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/status.h"

/* 0..15 for '0'-'9', 'a'-'f', 'A'-'F'; -1 for anything else. */
static inline int
hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* s, exactly 2n hex digits (either case), into out[0..n); STATUS_INVALID
 * (out partly written) for another length or a non-digit. */
static inline int
hex_decode(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != n * 2)
		return STATUS_INVALID;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return STATUS_INVALID;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return STATUS_OK;
}

/* p[0..n) as 2n lowercase hex digits and a NUL into out (2n + 1 bytes). */
static inline void
hex_encode(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

#endif

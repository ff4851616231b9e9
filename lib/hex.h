/* hex.h - the value of a hexadecimal digit, shared by the parsers in lib/
 * (TOML \u escapes, OTLP JSON ids and escapes, API key hashes). */
#ifndef SEXTANT_HEX_H
#define SEXTANT_HEX_H

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

#endif

/* utf8.h - UTF-8 well-formedness, shared by the writers in lib/ that must
 * never cut or pass on a broken sequence (the log, error messages). */
#ifndef SEXTANT_UTF8_H
#define SEXTANT_UTF8_H

#include <stddef.h>

/*
 * Length of the well-formed UTF-8 sequence at s (at most n bytes; Unicode
 * 15, table 3-7: no overlongs, no surrogates, nothing past U+10FFFF), or 0
 * if ill-formed.  s[0] must be readable.
 */
static inline size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Length of the longest prefix of the NUL-terminated s of at most max
 * bytes that does not end inside a character: what "%.*s" may print of s
 * without cutting a sequence in two (s assumed well-formed).
 */
static inline size_t
utf8_prefix(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n] != '\0')
		n++;
	if (n == max)
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	return n;
}

#endif

/*
 * strdist.c - Levenshtein distance with one row of the table, an optional
 * case fold and an early exit (see strdist.h).
 */
#include "base/strdist.h"

#include <ctype.h>
#include <stdint.h>

size_t
strdist(const char *a, size_t la, const char *b, size_t lb, bool fold_case,
	size_t cap)
{
	size_t row[STRDIST_MAX_LEN + 1];

	if (la > STRDIST_MAX_LEN || lb > STRDIST_MAX_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		unsigned char ca = (unsigned char)a[i - 1];
		size_t diag = row[0], best_in_row;

		row[0] = i;
		best_in_row = row[0];
		for (size_t j = 1; j <= lb; j++) {
			unsigned char cb = (unsigned char)b[j - 1];
			size_t up = row[j],
			       v = diag + (fold_case
						   ? tolower(ca) != tolower(cb)
						   : ca != cb);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			diag = up;
			row[j] = v;
			if (v < best_in_row)
				best_in_row = v;
		}
		if (best_in_row >= cap)
			return cap;
	}
	return row[lb] < cap ? row[lb] : cap;
}

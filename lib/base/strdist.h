/*
 * strdist.h - Levenshtein distance for "did you mean" suggestions: config
 * keys, span and service names, metric names.  One implementation; each
 * caller chooses the case rule, how much of a name counts and when a
 * candidate is too far to matter.
 */
#ifndef SEXTANT_STRDIST_H
#define SEXTANT_STRDIST_H

#include <stdbool.h>
#include <stddef.h>

/* The longest input compared (a row of the table is on the stack). */
#define STRDIST_MAX_LEN 256

/*
 * The edit distance between a[0..la) and b[0..lb) (insertions, deletions,
 * substitutions), ASCII case folded when fold_case.  Gives up once every
 * path exceeds cap and returns cap; the result never exceeds cap (pass
 * SIZE_MAX for the exact distance).  SIZE_MAX when la or lb is over
 * STRDIST_MAX_LEN.  Pure, thread-safe.
 */
size_t strdist(const char *a, size_t la, const char *b, size_t lb,
	       bool fold_case, size_t cap);

#endif

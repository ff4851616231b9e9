/*
 * tokcache.h - verified tokens by SHA-256, so that a token seen before costs
 * a hash and a lookup instead of a signature check or an introspection call.
 *
 * A bounded set-associative cache: the entries are split in sets of
 * TOKCACHE_WAYS; a token's hash picks its set, and a new entry replaces an
 * expired one of the set, else the one used the longest ago (LRU per set).
 * One mutex; a lookup is a hash, a lock and at most TOKCACHE_WAYS compares.
 * The token itself is never stored, only its hash.
 */
#ifndef SEXTANT_TOKCACHE_H
#define SEXTANT_TOKCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define TOKCACHE_WAYS 8
#define TOKCACHE_KEY  32 /* SHA-256 */

struct tokcache;

/*
 * A cache of at least entries values of value_size bytes each (rounded up
 * to a multiple of TOKCACHE_WAYS; 0 gives a cache that keeps nothing); the
 * values are plain bytes, copied in and out.  STATUS_NOMEM.
 * Free with tokcache_free (accepts NULL).
 */
int tokcache_new(size_t entries, size_t value_size, struct tokcache **out) WUR;
void tokcache_free(struct tokcache *c);

/*
 * Copies the value cached under key into value when there is one that
 * expires after now_ms.  STATUS_NOTFOUND otherwise.  Thread-safe.
 */
int tokcache_get(struct tokcache *c, const unsigned char key[TOKCACHE_KEY],
		 int64_t now_ms, void *value) WUR;

/* Keeps a copy of value under key until expires_ms.  Thread-safe. */
void tokcache_put(struct tokcache *c, const unsigned char key[TOKCACHE_KEY],
		  int64_t expires_ms, int64_t now_ms, const void *value);

/* Entries held now (expired ones included until replaced). */
size_t tokcache_count(struct tokcache *c);

#endif

/*
 * auth.h - API key checking: keys are configured as SHA-256 hashes
 * ("sha256:<hex>"), presented as "Authorization: Bearer <key>", and compared
 * in constant time; plus random hex ids from the OpenSSL CSPRNG.
 *
 * Nothing here logs or keeps a plaintext key; error messages never echo the
 * configured value (it may be a key pasted by mistake).
 */
#ifndef SEXTANT_AUTH_H
#define SEXTANT_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#define AUTH_HASH_LEN 71 /* "sha256:" + 64 hex */
/* Configured key hashes; more is a configuration mistake, and each check
 * compares against all of them. */
#define AUTH_MAX_KEYS 1024
/* Random bytes per auth_random_hex call. */
#define AUTH_MAX_RANDOM_BYTES 4096

/*
 * Writes "sha256:<64 lowercase hex>" of key[0..keylen) and a NUL into out.
 * key may contain NULs; it may be NULL only when keylen is 0.  Uses OpenSSL
 * EVP.  STATUS_INVALID for a NULL key with keylen > 0, STATUS_IO if the
 * digest fails; out is "" on failure.  Thread-safe.
 */
int auth_hash_key(const char *key, size_t keylen,
		  char out[AUTH_HASH_LEN + 1]) WUR;

/* A set of accepted key hashes, immutable after creation, thread-safe to
 * check from any number of threads. */
struct auth_keys;

/* "key:" and 16 hex digits of the key's hash: names a key in logs and
 * binds the sessions it opens; says nothing of the key itself. */
#define AUTH_KEY_ID_LEN 20

/*
 * Builds a set from n "sha256:<64 hex>" strings (hex in either case; the
 * strings are copied, not kept), each optionally followed by blanks and
 * the scopes the key carries ("sha256:<hex> sextant:read sextant:ingest";
 * none: every scope).  n == 0 gives a set that accepts nothing.
 * On a malformed entry returns STATUS_INVALID and writes to err (if errlen >
 * 0) a message naming the entry by 1-based position and saying what is
 * expected, without echoing the entry; more than AUTH_MAX_KEYS gives
 * STATUS_LIMIT.  STATUS_NOMEM, STATUS_IO (digest unavailable).  *out is NULL
 * on failure; free with auth_keys_free.  err is "" on success.
 */
int auth_keys_new(char *const *hashes, size_t n, struct auth_keys **out,
		  char *err, size_t errlen) WUR;

/* Accepts NULL. */
void auth_keys_free(struct auth_keys *k);

/* Number of hashes in the set (0 for NULL). */
size_t auth_keys_count(const struct auth_keys *k);

/*
 * True if SHA-256(token[0..len)) equals one of the stored hashes.  Every
 * stored hash is compared with CRYPTO_memcmp and the loop never exits early,
 * so timing does not reveal which key (or how much of one) matched.  False
 * for a NULL set, an empty set, a NULL or empty token.  Thread-safe.
 */
bool auth_keys_check(const struct auth_keys *k, const char *token, size_t len);
/* As auth_keys_check, giving the 0-based entry that matched, or -1. */
long auth_keys_find(const struct auth_keys *k, const char *token, size_t len);
/* Entry i's scopes, space-separated, or NULL when it names none (the key
 * may do everything).  Borrowed, valid while k lives. */
const char *auth_keys_scopes(const struct auth_keys *k, size_t i);
/* Entry i's id (AUTH_KEY_ID_LEN characters and a NUL). */
void auth_keys_id(const struct auth_keys *k, size_t i,
		  char out[AUTH_KEY_ID_LEN + 1]);

/*
 * Parses an Authorization header value "Bearer <token>" (RFC 6750 2.1):
 * scheme case-insensitive, then one or more spaces, then a token of visible
 * ASCII (0x21-0x7e) with no blanks inside; blanks around the whole value are
 * ignored.  On success *token and *len point into header (borrowed, valid as long
 * as header).  STATUS_INVALID otherwise (NULL header, other scheme, missing
 * or malformed token), with *token NULL and *len 0.
 */
int auth_parse_bearer(const char *header, const char **token, size_t *len) WUR;

/*
 * Writes nbytes random bytes from RAND_bytes as lowercase hex plus a NUL:
 * out needs 2 * nbytes + 1 bytes (outlen).  STATUS_INVALID if outlen is too
 * small or nbytes > AUTH_MAX_RANDOM_BYTES, STATUS_IO if the CSPRNG fails; out
 * is "" on failure (when outlen > 0).  Thread-safe.
 */
int auth_random_hex(char *out, size_t outlen, size_t nbytes) WUR;

#endif

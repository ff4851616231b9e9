/*
 * jwks.h - the authorization server's signing keys: found through its
 * metadata (RFC 8414 /.well-known/oauth-authorization-server, then OpenID
 * discovery) or a configured jwks_uri, fetched, cached, and used to check
 * a JWS signature.
 *
 * A key set is immutable once fetched and reference-counted: a check takes
 * the current set under the lock and verifies outside it, so a refetch never
 * waits for checks nor checks for a refetch.  A kid the set does not hold
 * triggers a refetch, at most one per refetch_s (one thread fetches, the
 * others wait for it); when the fetch fails the last good set stays, and
 * the unknown kid fails (closed).
 */
#ifndef SEXTANT_JWKS_H
#define SEXTANT_JWKS_H

#include <cjose/cjose.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

struct jwks;

struct jwks_opts {
	const char *issuer;   /* metadata is found from it and must name it */
	const char *jwks_uri; /* NULL or "": discovered from issuer */
	int refetch_s;	      /* at most one fetch per this many seconds */
	int timeout_ms;
	const char *ca_file;
};

/* Copies the strings; fetches nothing yet.  STATUS_NOMEM. */
int jwks_new(const struct jwks_opts *o, struct jwks **out) WUR;
void jwks_free(struct jwks *j);

/*
 * Verifies jws's signature with the key named kid (NULL: each key that
 * fits alg is tried), which must fit alg: RSA for RS* and PS*, EC P-256 for
 * ES256, P-384 for ES384, P-521 for ES512; a key whose own "alg" differs or
 * whose "use" is not "sig" is never used.  Fetches the set on first use and
 * when kid is unknown (rate-bounded, see above).  STATUS_OK;
 * STATUS_NOTFOUND (no such key), STATUS_INVALID (bad signature), STATUS_IO
 * (no key set could ever be fetched); err says which without the token.
 * Thread-safe.
 */
int jwks_verify(struct jwks *j, cjose_jws_t *jws, const char *alg,
		const char *kid, int64_t now_ms, char *err, size_t errlen) WUR;

/* Successful fetches so far (for tests and metrics). */
unsigned jwks_fetches(struct jwks *j);

#endif

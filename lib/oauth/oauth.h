/*
 * oauth.h - OAuth 2.1 access tokens checked by a resource server: JWT
 * access tokens (RFC 9068) against the authorization server's keys, opaque
 * ones through token introspection (RFC 7662), each result cached by the
 * token's SHA-256 until it expires.
 *
 * Knows nothing of HTTP serving or MCP: the caller takes the token from
 * its Authorization header (base/auth.h: auth_parse_bearer) and turns a
 * failure into its 401.  Error messages name the check that failed
 * (fit for WWW-Authenticate's error_description) and never echo the token;
 * nothing here logs it.
 */
#ifndef SEXTANT_OAUTH_H
#define SEXTANT_OAUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* A longer token is refused before any work: real access tokens are 1-2
 * kB (a JWT with a few dozen scopes stays under 4 kB). */
#define OAUTH_MAX_TOKEN_BYTES 8192
#define OAUTH_MAX_ID	      256  /* sub, client_id, with the NUL */
#define OAUTH_MAX_SCOPE	      1024 /* the scopes, space-separated */
#define OAUTH_MAX_ALGS	      16

/* Who a token speaks for; a plain value. */
struct oauth_principal {
	char sub[OAUTH_MAX_ID];	      /* "" when the token has none */
	char client_id[OAUTH_MAX_ID]; /* client_id, else azp; may be "" */
	char scope[OAUTH_MAX_SCOPE];  /* "scope", or "scp" joined by spaces */
	/* 32 hex digits of SHA-256(sub NUL client_id): names the principal
	 * at a fixed length (sessions are bound to it) */
	char id[33];
	int64_t exp; /* Unix seconds */
};

/* What oauth_new needs; the strings are copied. */
struct oauth_settings {
	const char *issuer;   /* iss must equal it exactly */
	const char *audience; /* aud must contain it exactly */
	const char *jwks_uri; /* NULL or "": discovered from issuer */
	/* allowed "alg" values (NULL: RS256 RS384 RS512 PS256 ES256 ES384);
	 * "none" and HS* are refused by oauth_new */
	char *const *algorithms;
	size_t n_algorithms;
	/* also accept typ "JWT" (or none), as Keycloak, Entra ID and Auth0
	 * issue; RFC 9068 section 4 asks for "at+jwt" */
	bool accept_generic_typ;
	int leeway_s; /* clock skew allowed on exp, nbf and iat */
	const char *introspection_endpoint; /* NULL or "": opaque refused */
	const char *introspection_client_id;
	const char *introspection_client_secret_file;
	int introspection_cache_s; /* an active answer is kept this long */
	size_t cache_entries;	   /* verified tokens kept (both kinds) */
	int jwks_refetch_s;	   /* at most one JWKS fetch per this */
	int timeout_ms;		   /* each request to the server */
	const char *ca_file;	   /* NULL or "": the system's store */
};

struct oauth;

/*
 * A verifier.  Fetches nothing yet (the keys come at the first JWT).
 * STATUS_INVALID with err naming the setting (an algorithm not allowed, an
 * unreadable secret file), STATUS_NOMEM.  Free with oauth_free (accepts
 * NULL).
 */
int oauth_new(const struct oauth_settings *s, struct oauth **out, char *err,
	      size_t errlen) WUR;
void oauth_free(struct oauth *o);

/*
 * Checks token[0..len) at now_ms (Unix ms) and fills *p.  A JWT (three
 * base64url parts): the header's alg in the allow-list, typ, the signature
 * with a key of the issuer that fits alg (kid), then iss, aud, exp, nbf and
 * iat with the leeway.  Anything else: introspection.  A token seen before
 * and not expired costs a cache lookup.
 * STATUS_OK; STATUS_INVALID (a check failed: the 401 invalid_token);
 * STATUS_LIMIT (longer than OAUTH_MAX_TOKEN_BYTES); STATUS_IO (the keys or
 * the introspection endpoint cannot be reached and nothing cached
 * decides).  err says which check failed.  *p is zeroed on failure.
 * Thread-safe.
 */
int oauth_verify(struct oauth *o, const char *token, size_t len, int64_t now_ms,
		 struct oauth_principal *p, char *err, size_t errlen) WUR;

/*
 * Decodes a JWT's header and claims without checking anything (the
 * fuzzer's entry, and the first step of oauth_verify): three base64url
 * parts, the first two JSON objects.  *header and *claims are new
 * references on success, NULL on failure.  STATUS_INVALID with err.
 * Pure; thread-safe.
 */
int oauth_jwt_decode(const char *token, size_t len, json_t **header,
		     json_t **claims, char *err, size_t errlen) WUR;

/*
 * True if the space-separated scopes hold want exactly, or, for a want in
 * URI form ("api://<app id>/sextant.read": a scope Entra ID is asked for
 * by its API's URI), its last segment ("sextant.read", what Entra's scp
 * claim carries).
 */
bool oauth_scope_has(const char *scopes, const char *want);

/* want's last segment when it is in URI form (see oauth_scope_has), else
 * NULL. */
const char *oauth_scope_short(const char *want);

/* Successful JWKS fetches (for tests). */
unsigned oauth_jwks_fetches(struct oauth *o);

#endif

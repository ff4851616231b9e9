/*
 * fetch.h - one JSON document from an authorization server: its metadata
 * (RFC 8414, OpenID discovery), its JWKS, an introspection answer (RFC
 * 7662).  libcurl with the shared upstream settings (base/curlx.h: no
 * redirect, verified TLS), a deadline and a bounded body.
 */
#ifndef SEXTANT_OAUTH_FETCH_H
#define SEXTANT_OAUTH_FETCH_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

/* An authorization server's documents are a few kB; a JWKS with a dozen
 * RSA keys is under 20 kB.  Past this it is not what we asked for. */
#define FETCH_MAX_BYTES (256 * 1024)

struct fetch_opts {
	int timeout_ms;	     /* the whole request */
	const char *ca_file; /* NULL or "": the system's store */
	/* POST: the form body (application/x-www-form-urlencoded) and HTTP
	 * Basic credentials (RFC 6749 2.3.1); NULL form means GET */
	const char *form;
	const char *user;
	const char *password;
};

/*
 * Fetches url and parses the body as a JSON object.  A status other than
 * 200, a body past FETCH_MAX_BYTES, or not a JSON object fail.  On success
 * *out is a new reference (json_decref).  STATUS_IO (unreachable, other
 * status), STATUS_INVALID (not a JSON object), STATUS_LIMIT, STATUS_NOMEM;
 * err then says which, naming the URL (never the form: it may hold a
 * token).  Thread-safe (one curl handle per call).
 */
int fetch_json(const char *url, const struct fetch_opts *o, json_t **out,
	       char *err, size_t errlen) WUR;

#endif

/*
 * prm.h - what a protected resource tells its clients: the Protected
 * Resource Metadata document (RFC 9728), its well-known URL, and the
 * Bearer challenge of a 401 or 403 (RFC 6750 section 3, with RFC 9728
 * section 5.1's resource_metadata).  Pure text and JSON; the front end
 * serves them.
 */
#ifndef SEXTANT_PRM_H
#define SEXTANT_PRM_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

struct prm_info {
	const char *resource;		 /* the canonical URL */
	const char *const *auth_servers; /* issuer URLs, at least one */
	size_t n_auth_servers;
	const char *const *scopes; /* scopes_supported */
	size_t n_scopes;
	const char *resource_documentation; /* NULL or "": left out */
};

/*
 * The metadata document: resource, authorization_servers, scopes_supported,
 * bearer_methods_supported ["header"] (RFC 6750 2.1 only: the query form is
 * refused) and resource_documentation.  A new reference, NULL when out of
 * memory.
 */
json_t *prm_document(const struct prm_info *i);

/*
 * The metadata's URL for resource (RFC 9728 3.1): the well-known segment
 * between the host and the resource's path,
 * "https://h/.well-known/oauth-protected-resource/mcp".  STATUS_INVALID
 * when resource is not an absolute http(s) URL, STATUS_LIMIT when out is
 * too small; out is "" then.
 */
int prm_url(const char *resource, char *out, size_t cap) WUR;

/*
 * The WWW-Authenticate value: Bearer resource_metadata="...", scope="..."
 * and, when error is not NULL, error="..." and error_description="..."
 * (RFC 6750 3.1: a request without credentials gets no error code).  The
 * description's characters outside RFC 6750's set (a quote, a backslash,
 * control bytes) become '?'.  STATUS_LIMIT when out is too small (out is ""
 * then).
 */
int prm_challenge(char *out, size_t cap, const char *metadata_url,
		  const char *scope, const char *error,
		  const char *description) WUR;

#endif

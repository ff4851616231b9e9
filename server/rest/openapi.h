/*
 * openapi.h - the REST facade's OpenAPI 3.1 document, built from the
 * enabled tool registry and the resource route table (routes.h).
 *
 * Built at start-up and on reload (so it follows [tools] enablement) and
 * by `sextant openapi`; served at GET /api/openapi.json.
 */
#ifndef SEXTANT_REST_OPENAPI_H
#define SEXTANT_REST_OPENAPI_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

struct config;
struct tools;

/*
 * Builds the document describing the facade for the tools t enables
 * (borrowed for the call; nothing of it is kept): one POST
 * /api/v1/tools/<name> per listed tool, the resource GETs of rest_routes
 * whose tool is enabled, GET /api/v1/tools, Kiali's POST
 * /api/chat/mcp/{tool_name}, the RFC 9457 error responses, and the bearer
 * security scheme when cfg's [auth] keys are set.  Each tool's inputSchema
 * and outputSchema become components (their "$defs" hoisted beside them,
 * "$ref"s rewritten) so every reference resolves inside the document.
 *
 * On success *out is a new reference (caller frees with json_decref).
 * Returns STATUS_OK; STATUS_INVALID with err naming the tool when a schema
 * holds a "$ref" that cannot be rewritten or a "$defs" name that cannot be
 * a component name; STATUS_NOMEM.  *out is NULL on failure.  Thread-safe
 * (t is immutable).
 */
int openapi_build(const struct tools *t, const struct config *cfg, json_t **out,
		  char *err, size_t errlen) WUR;

#endif

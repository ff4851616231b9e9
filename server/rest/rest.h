/*
 * rest.h - the REST facade: the tools as plain HTTP on /api/ for UI
 * backends and curl, over the same registry, schema validation, worker
 * pool, cancellation, limits and timeouts as MCP.
 *
 *   GET  /api/v1/tools             the enabled tools and their schemas
 *   POST /api/v1/tools/{name}      body = arguments; ?view=text: Markdown
 *   GET  (routes.h: rest_routes)   query parameters onto arguments
 *   POST /api/chat/mcp/{tool_name} Kiali's route, body and answer
 *
 * Errors are RFC 9457 application/problem+json (Kiali's route: Kiali's
 * {"error": ...}).  main.c hands rest_handle, rest_refuse and
 * rest_origin_allowed to the front end (struct http_routes).
 */
#ifndef SEXTANT_REST_H
#define SEXTANT_REST_H

#include <microhttpd.h>
#include <stdbool.h>

#include "base/status.h"

struct req;
struct server;

/* Registers the facade's metrics in srv->expo and starts the thread that
 * watches parked requests for a client hanging up.  Once, before
 * http_start.  STATUS_NOMEM or STATUS_IO (no thread). */
int rest_init(struct server *srv) WUR;

/* The handler of every /api/ request, once its body is in (and again when
 * a parked call's answer resumes it). */
enum MHD_Result rest_handle(struct req *r);

/* The front end's refusals on /api/ (Host, Origin, API key, busy, body
 * size) as problem+json; headers as http_reply's. */
enum MHD_Result rest_refuse(struct req *r, unsigned status, const char *detail,
			    const char *const *headers);

/* True when origin (may be NULL) is listed in [rest] allowed_origins. */
bool rest_origin_allowed(struct req *r, const char *origin);

/*
 * Replies body (malloc'd, taken) with the facade's conventions: CORS for
 * [rest] allowed_origins, gzip past 1 KB when accepted, and on a GET or
 * HEAD 200 a strong ETag with 304 on If-None-Match; counted in
 * sextant_rest_requests_total under r->route and logged with the request
 * id.  extra: more headers (NULL-terminated name, value pairs; may be
 * NULL).
 */
enum MHD_Result rest_reply(struct req *r, unsigned status, const char *ctype,
			   char *body, size_t len, const char *const *extra);

#endif

/*
 * reqmeta.h - the per-request protocol fields of MCP 2026-07-28 (the
 * io.modelcontextprotocol/... keys of params._meta): which requests claim
 * that revision, and the checks every such request must pass before it is
 * served statelessly.  Transport-neutral.
 */
#ifndef SEXTANT_REQMETA_H
#define SEXTANT_REQMETA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#define REQMETA_VERSION		 "2026-07-28"
#define REQMETA_KEY_VERSION	 "io.modelcontextprotocol/protocolVersion"
#define REQMETA_KEY_CAPS	 "io.modelcontextprotocol/clientCapabilities"
#define REQMETA_KEY_INFO	 "io.modelcontextprotocol/clientInfo"
#define REQMETA_KEY_LEVEL	 "io.modelcontextprotocol/logLevel"
#define REQMETA_KEY_SERVER_INFO	 "io.modelcontextprotocol/serverInfo"
#define REQMETA_KEY_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* The revisions served statelessly, newest first, NULL-terminated. */
extern const char *const reqmeta_versions[];
bool reqmeta_version_supported(const char *version);

/* The fields of one request; strings and objects borrowed from it. */
struct reqmeta {
	const char *version;
	const json_t *caps;	   /* an object */
	const json_t *client_info; /* NULL when absent */
	int log_level;		   /* enum mcp_level; MCP_LEVEL_OFF if none */
};

/* True when msg's params._meta carries a protocolVersion claim (any
 * value): such a request is served by the stateless revisions. */
bool reqmeta_has_claim(const json_t *msg);

/*
 * Reads msg's _meta.  STATUS_INVALID with why naming the missing or bad
 * key (a -32602 error, HTTP 400): no params._meta, no string
 * protocolVersion, clientCapabilities missing or not an object, clientInfo
 * or logLevel of the wrong type or an unknown level.
 */
int reqmeta_parse(const json_t *msg, struct reqmeta *out, char *why,
		  size_t len) WUR;

/*
 * True when the client declared capability path ("sampling",
 * "elicitation", "roots", or "extensions/<id>") in caps.
 */
bool reqmeta_has_capability(const json_t *caps, const char *path);

#endif

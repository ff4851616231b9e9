/*
 * rpc.h - JSON-RPC 2.0 framing as MCP uses it: classifying messages,
 * building responses and errors, echoing ids with their type.
 */
#ifndef SEXTANT_RPC_H
#define SEXTANT_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

enum rpc_code {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	RPC_SERVER_BUSY = -32000,	 /* convention: transport-level */
	RPC_RESOURCE_NOT_FOUND = -32002, /* MCP resources/read (<= 2025) */
	/* 2026-07-28 */
	RPC_HEADER_MISMATCH = -32020,	  /* HTTP headers vs the body */
	RPC_MISSING_CAPABILITY = -32021,  /* needs an undeclared capability */
	RPC_UNSUPPORTED_VERSION = -32022, /* protocolVersion not served */
	/* Sextant's: the caller's credential lacks the scope a tool needs
	 * (data {"scope", "tool"}); HTTP's 403 insufficient_scope as
	 * JSON-RPC where no status can be given (transport.c ex_step_up) */
	RPC_INSUFFICIENT_SCOPE = -32030,
};

/* The answer to a tools/call the worker queue has no room for (with
 * RPC_SERVER_BUSY, or HTTP 503 and Retry-After). */
#define RPC_MSG_QUEUE_FULL                                                     \
	"server busy: the tool queue is full, retry in a second"

enum rpc_kind {
	RPC_REQUEST,	  /* method + id */
	RPC_NOTIFICATION, /* method, no id */
	RPC_RESPONSE,	  /* id + result or error */
	RPC_INVALID,
};

/*
 * Classifies msg.  For RPC_INVALID, *why says what is wrong (static
 * string) and *id is the id if one could be read (else NULL).  Ids must be
 * strings or integers (MCP forbids null); id 0 is valid.
 */
enum rpc_kind rpc_classify(const json_t *msg, const char **why,
			   const json_t **id);

/* {"jsonrpc":"2.0","id":id,"result":result}; result stolen; NULL: ENOMEM */
json_t *rpc_result(const json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id|null,"error":{code,message,data?}}; data
 * stolen (may be NULL). */
json_t *rpc_error(const json_t *id, int code, const char *message,
		  json_t *data);
/* A notification {"jsonrpc":"2.0","method":m,"params":params}; params
 * stolen (may be NULL). */
json_t *rpc_notification(const char *method, json_t *params);

/*
 * Serializes {"jsonrpc":"2.0","id":<id>,"result":<result_json>} without
 * re-encoding result_json (already compact JSON).  Caller frees.
 */
char *rpc_result_text(const json_t *id, const char *result_json,
		      size_t result_len, size_t *len);

/*
 * The text of rpc_result(id, result) with "key": <member> added as the
 * result's last member, member being compact JSON text already
 * serialized (not re-encoded, not checked); key a plain ASCII name.
 * result stolen.  Caller frees; NULL on ENOMEM.
 */
char *rpc_result_text_with(const json_t *id, json_t *result, const char *key,
			   const char *member, size_t member_len, size_t *len);

/* The id as text for logs ("7", "\"abc\""), truncated to fit. */
void rpc_id_text(const json_t *id, char *buf, size_t len);

/* MCP log levels, RFC 5424 order (logging/setLevel). */
enum mcp_level {
	MCP_LEVEL_DEBUG,
	MCP_LEVEL_INFO,
	MCP_LEVEL_NOTICE,
	MCP_LEVEL_WARNING,
	MCP_LEVEL_ERROR,
	MCP_LEVEL_CRITICAL,
	MCP_LEVEL_ALERT,
	MCP_LEVEL_EMERGENCY,
	MCP_LEVEL_OFF, /* 2026-07-28 requests without a logLevel: none */
};
int mcp_level_parse(const char *name); /* -1 when unknown */

/*
 * The JSON-RPC batch rules of revision 2025-03-26, the one revision with
 * batches, for every transport.  rpc_batch_shape: NULL when batch (an
 * array) holds 1 to RPC_BATCH_MAX messages and no initialize, else why
 * not (a static "invalid request: ..." message).  rpc_batch_allowed:
 * whether a session of revision version (NULL: no session yet) may send
 * one; else false with why (len bytes) saying to send one message per
 * unit ("POST", "line").
 */
#define RPC_BATCH_MAX 1000 /* the TS SDK's bound too */
const char *rpc_batch_shape(const json_t *batch);
bool rpc_batch_allowed(const char *version, const char *unit, char *why,
		       size_t len);

#endif

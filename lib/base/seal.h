/*
 * seal.h - tamper-proof tokens for state a client carries between
 * requests (MCP 2026-07-28 requestState): a JSON value, the scope it was
 * issued for (method and name), an expiry and a nonce, authenticated with
 * HMAC-SHA256 under a key only the server knows.  The client can read the
 * state (it is not encrypted) but cannot change it, replay it elsewhere or
 * keep it past its expiry.  Thread-safe once created.
 *
 * Token: base64url(payload) "." base64url(mac), payload the compact JSON
 * {"s": state, "x": expiry (Unix ms), "n": nonce}, mac over scope "\n"
 * payload.
 */
#ifndef SEXTANT_SEAL_H
#define SEXTANT_SEAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define SEAL_KEY_BYTES 32
/* Longest token accepted (and state sealed): request state is small. */
#define SEAL_MAX_TOKEN 16384

struct seal;

/* key: SEAL_KEY_BYTES bytes, or NULL for a random one (tokens then
 * open only in this process).  STATUS_IO when the CSPRNG fails. */
int seal_new(const unsigned char *key, struct seal **out) WUR;
void seal_free(struct seal *s); /* NULL ok */

/*
 * Seals state (borrowed, any JSON value) for scope, valid until
 * expires_ms.  *out: NUL-terminated, caller frees.  STATUS_LIMIT past
 * SEAL_MAX_TOKEN, STATUS_NOMEM, STATUS_IO (CSPRNG).
 */
int seal_pack(const struct seal *s, const char *scope, const json_t *state,
	      int64_t expires_ms, char **out) WUR;

/*
 * Opens token for scope at now_ms: *state is a new reference.
 * STATUS_INVALID for anything not sealed by this key for this scope
 * (malformed, altered, another scope), STATUS_TIMEOUT when expired.
 */
int seal_open(const struct seal *s, const char *scope, const char *token,
	      int64_t now_ms, json_t **state) WUR;

#endif

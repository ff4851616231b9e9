/*
 * fuzz_oauth.c - libFuzzer harness for the Authorization header path of
 * lib/oauth: the header value is parsed as a Bearer credential
 * (base/auth.h), the token decoded as a JWT (oauth_jwt_decode) and checked
 * by a verifier whose authorization server cannot be reached (one refused
 * connection on 127.0.0.1:1, then the refetch bound holds: the time is
 * fixed).  Invariants: no token is ever accepted (there are no keys), a
 * failure always says why, and the message never echoes the token.
 * Invariant breaks abort().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/auth.h"
#include "oauth/oauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW INT64_C(1795257015250)

static struct oauth *verifier;

static void
init(void)
{
	struct oauth_settings s = {
		.issuer = "http://127.0.0.1:1",
		.audience = "https://sextant.example/mcp",
		.jwks_uri = "http://127.0.0.1:1/jwks",
		.leeway_s = 60,
		.cache_entries = 16,
		.jwks_refetch_s = 86400,
		.timeout_ms = 200,
	};
	char err[256];

	if (oauth_new(&s, &verifier, err, sizeof(err)) != STATUS_OK)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *hdr = malloc(size + 1), err[512];
	const char *tok = NULL;
	size_t len = 0;
	json_t *h = NULL, *c = NULL;
	struct oauth_principal p;

	if (hdr == NULL)
		abort();
	if (verifier == NULL)
		init();
	memcpy(hdr, data, size);
	hdr[size] = '\0';
	if (auth_parse_bearer(hdr, &tok, &len) != STATUS_OK)
		goto out;
	if (oauth_jwt_decode(tok, len, &h, &c, err, sizeof(err)) == STATUS_OK) {
		if (!json_is_object(h) || !json_is_object(c))
			abort();
		json_decref(h);
		json_decref(c);
	} else if (h != NULL || c != NULL || err[0] == '\0') {
		abort();
	}
	if (oauth_verify(verifier, tok, len, NOW, &p, err, sizeof(err)) ==
	    STATUS_OK)
		abort(); /* accepted without a key */
	if (err[0] == '\0' || p.sub[0] != '\0')
		abort();
	if (len >= 24 && memmem(err, strlen(err), tok, len) != NULL)
		abort(); /* the token echoed */
out:
	free(hdr);
	return 0;
}

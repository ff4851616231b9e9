/*
 * fuzz_seal.c - libFuzzer harness for lib/base/seal and lib/base/base64: the
 * requestState a 2026-07-28 client sends back is attacker-controlled.
 *
 * Input: one mode byte, then the token (NUL bytes cut it).  Checks the
 * contract: seal_open never accepts a token this key did not seal for the
 * scope (the only sealed tokens here are built by the harness itself, and
 * must open to the same state); base64url_decode re-encodes to the same
 * text (one spelling per value).  Invariant breaks abort().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW INT64_C(1795257015250)

static struct seal *key;

static void
check_base64(const char *s)
{
	size_t len = strlen(s), n = 0;
	unsigned char *out = malloc(len + 1);
	/* encode asks for room for the padded length */
	char *back = malloc(BASE64URL_LEN(len) + 1);

	if (out == NULL || back == NULL)
		abort();
	if (base64url_decode(s, out, len + 1, &n)) {
		if (!base64url_encode(out, n, back, BASE64URL_LEN(len) + 1) ||
		    strcmp(back, s) != 0)
			abort(); /* two spellings of one value */
	}
	free(out);
	free(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *tok;
	json_t *st = NULL;
	int rc;

	if (key == NULL) {
		static const unsigned char k[SEAL_KEY_BYTES] = {42};

		if (seal_new(k, &key) != STATUS_OK)
			abort();
	}
	if (size < 1)
		return 0;
	tok = malloc(size);
	if (tok == NULL)
		return 0;
	memcpy(tok, data + 1, size - 1);
	tok[size - 1] = '\0';
	check_base64(tok);
	/* arbitrary input never opens: only this harness seals */
	rc = seal_open(key, "tools/call fuzz", tok, NOW, &st);
	if (rc == STATUS_OK)
		abort();
	if (st != NULL)
		abort();
	/* the input as a state: sealed, it opens to itself, and only for
	 * its scope, and not once expired */
	if (data[0] & 1) {
		json_t *v = json_string(tok), *got = NULL;
		char *sealed = NULL;

		if (v != NULL && seal_pack(key, "tools/call fuzz", v,
					   NOW + 1000, &sealed) == STATUS_OK) {
			if (seal_open(key, "tools/call fuzz", sealed, NOW,
				      &got) != STATUS_OK ||
			    !json_equal(got, v))
				abort();
			json_decref(got);
			got = NULL;
			if (seal_open(key, "tools/call other", sealed, NOW,
				      &got) == STATUS_OK ||
			    seal_open(key, "tools/call fuzz", sealed,
				      NOW + 1001, &got) == STATUS_OK)
				abort();
			free(sealed);
		}
		json_decref(v);
	}
	free(tok);
	return 0;
}

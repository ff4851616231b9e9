/*
 * seal.c - HMAC-SHA256 sealed state tokens; see seal.h.
 */
#include "base/seal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "base/base64.h"

#define MAC_BYTES 32

struct seal {
	unsigned char key[SEAL_KEY_BYTES];
};

int
seal_new(const unsigned char *key, struct seal **out)
{
	struct seal *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (s == NULL)
		return STATUS_NOMEM;
	if (key != NULL) {
		memcpy(s->key, key, SEAL_KEY_BYTES);
	} else if (RAND_bytes(s->key, SEAL_KEY_BYTES) != 1) {
		free(s);
		return STATUS_IO;
	}
	*out = s;
	return STATUS_OK;
}

void
seal_free(struct seal *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s->key, sizeof(s->key));
	free(s);
}

/* HMAC(key, scope "\n" payload) into mac. */
static int
mac_of(const struct seal *s, const char *scope, const char *payload,
       size_t plen, unsigned char mac[MAC_BYTES])
{
	size_t slen = strlen(scope);
	unsigned char *msg = malloc(slen + 1 + plen);
	unsigned int n = 0;
	int rc = STATUS_IO;

	if (msg == NULL)
		return STATUS_NOMEM;
	memcpy(msg, scope, slen);
	msg[slen] = '\n';
	memcpy(msg + slen + 1, payload, plen);
	if (HMAC(EVP_sha256(), s->key, SEAL_KEY_BYTES, msg, slen + 1 + plen,
		 mac, &n) != NULL &&
	    n == MAC_BYTES)
		rc = STATUS_OK;
	free(msg);
	return rc;
}

int
seal_pack(const struct seal *s, const char *scope, const json_t *state,
	  int64_t expires_ms, char **out)
{
	unsigned char nonce[12], mac[MAC_BYTES];
	char nonce_b64[BASE64URL_LEN(sizeof(nonce)) + 1];
	char mac_b64[BASE64URL_LEN(MAC_BYTES) + 1];
	json_t *p = NULL;
	char *json = NULL, *tok = NULL;
	size_t jlen, plen;
	int rc = STATUS_NOMEM;

	*out = NULL;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1)
		return STATUS_IO;
	(void)base64url_encode(nonce, sizeof(nonce), nonce_b64,
			       sizeof(nonce_b64));
	p = json_pack("{s:O, s:I, s:s}", "s", state, "x",
		      (json_int_t)expires_ms, "n", nonce_b64);
	json = p != NULL ? json_dumps(p, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (json == NULL)
		goto out;
	jlen = strlen(json);
	if (BASE64URL_LEN(jlen) + 1 + sizeof(mac_b64) > SEAL_MAX_TOKEN) {
		rc = STATUS_LIMIT;
		goto out;
	}
	tok = malloc(BASE64URL_LEN(jlen) + 1 + sizeof(mac_b64));
	if (tok == NULL)
		goto out;
	(void)base64url_encode((const unsigned char *)json, jlen, tok,
			       BASE64URL_LEN(jlen) + 1);
	plen = strlen(tok);
	if ((rc = mac_of(s, scope, tok, plen, mac)) != STATUS_OK)
		goto out;
	(void)base64url_encode(mac, MAC_BYTES, mac_b64, sizeof(mac_b64));
	tok[plen] = '.';
	memcpy(tok + plen + 1, mac_b64, strlen(mac_b64) + 1);
	*out = tok;
	tok = NULL;
	rc = STATUS_OK;
out:
	free(tok);
	free(json);
	json_decref(p);
	return rc;
}

int
seal_open(const struct seal *s, const char *scope, const char *token,
	  int64_t now_ms, json_t **state)
{
	unsigned char mac[MAC_BYTES], got[MAC_BYTES + 3];
	unsigned char *raw = NULL;
	const char *dot;
	char *payload = NULL;
	size_t plen, n = 0;
	json_t *p = NULL;
	int rc = STATUS_INVALID;

	*state = NULL;
	if (token == NULL || strlen(token) > SEAL_MAX_TOKEN ||
	    (dot = strchr(token, '.')) == NULL)
		return STATUS_INVALID;
	plen = (size_t)(dot - token);
	if (!base64url_decode(dot + 1, got, sizeof(got), &n) || n != MAC_BYTES)
		return STATUS_INVALID;
	if (mac_of(s, scope, token, plen, mac) != STATUS_OK)
		return STATUS_NOMEM;
	if (CRYPTO_memcmp(mac, got, MAC_BYTES) != 0)
		return STATUS_INVALID;
	payload = strndup(token, plen);
	raw = malloc(plen + 1);
	if (payload == NULL || raw == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (!base64url_decode(payload, raw, plen + 1, &n))
		goto out;
	p = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(p) || json_object_get(p, "s") == NULL ||
	    !json_is_integer(json_object_get(p, "x")))
		goto out;
	if (json_integer_value(json_object_get(p, "x")) < now_ms) {
		rc = STATUS_TIMEOUT;
		goto out;
	}
	*state = json_incref(json_object_get(p, "s"));
	rc = STATUS_OK;
out:
	json_decref(p);
	free(raw);
	free(payload);
	return rc;
}

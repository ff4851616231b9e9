/*
 * auth.c - API key hashes, constant-time key checks, Bearer header parsing
 * and CSPRNG hex ids, on OpenSSL 3 (EVP digests, CRYPTO_memcmp, RAND_bytes).
 */
#include "base/auth.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/hex.h"

#define SHA256_LEN    32
#define HASH_PREFIX   "sha256:"
#define HASH_PREFIX_N (sizeof(HASH_PREFIX) - 1)
#define HASH_HINT                                                              \
	"expected \"sha256:\" followed by 64 hex digits, the SHA-256 of the "  \
	"key (printf %%s \"$KEY\" | sha256sum)"

struct auth_keys {
	EVP_MD *md; /* fetched once: implicit fetches per check are slow */
	size_t n;
	unsigned char (*hash)[SHA256_LEN];
	char **scopes; /* per entry: the scopes after the hash, or NULL */
};

static int
sha256(const EVP_MD *md, const char *key, size_t keylen,
       unsigned char out[SHA256_LEN])
{
	unsigned int outlen = 0;

	if (EVP_Digest(keylen > 0 ? key : "", keylen, out, &outlen, md, NULL) !=
		    1 ||
	    outlen != SHA256_LEN)
		return STATUS_IO;
	return STATUS_OK;
}

int
auth_hash_key(const char *key, size_t keylen, char out[AUTH_HASH_LEN + 1])
{
	unsigned char md[SHA256_LEN];
	int rc;

	out[0] = '\0';
	if (key == NULL && keylen > 0)
		return STATUS_INVALID;
	rc = sha256(EVP_sha256(), key, keylen, md);
	if (rc != STATUS_OK)
		return rc;
	memcpy(out, HASH_PREFIX, HASH_PREFIX_N);
	hex_encode(md, SHA256_LEN, out + HASH_PREFIX_N);
	return STATUS_OK;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Decodes entry i; on error describes it by 1-based position, without
 * echoing it (a plaintext key pasted by mistake must not reach the log). */
static int
parse_hash(const char *s, size_t i, size_t n, unsigned char out[SHA256_LEN],
	   char *err, size_t errlen)
{
	size_t j, hexlen;

	if (s == NULL) {
		set_err(err, errlen,
			"key hash %zu of %zu is missing; " HASH_HINT, i + 1, n);
		return STATUS_INVALID;
	}
	if (strncmp(s, HASH_PREFIX, HASH_PREFIX_N) != 0) {
		set_err(err, errlen,
			"key hash %zu of %zu does not start with "
			"\"sha256:\"; " HASH_HINT,
			i + 1, n);
		return STATUS_INVALID;
	}
	s += HASH_PREFIX_N;
	hexlen = strcspn(s, " \t");
	if (hexlen != 2 * SHA256_LEN) {
		set_err(err, errlen,
			"key hash %zu of %zu has %zu characters after "
			"\"sha256:\"; " HASH_HINT,
			i + 1, n, hexlen);
		return STATUS_INVALID;
	}
	for (j = 0; j < SHA256_LEN; j++) {
		int hi = hex_digit(s[2 * j]), lo = hex_digit(s[2 * j + 1]);

		if (hi < 0 || lo < 0) {
			set_err(err, errlen,
				"key hash %zu of %zu has a non-hex character "
				"at position %zu after \"sha256:\"; " HASH_HINT,
				i + 1, n, 2 * j + (hi < 0 ? 1 : 2));
			return STATUS_INVALID;
		}
		out[j] = (unsigned char)(hi << 4 | lo);
	}
	return STATUS_OK;
}

/* The scopes an entry names after its hash, blanks squeezed to one space:
 * *out NULL when it names none (full access).  STATUS_NOMEM. */
static int
parse_scopes(const char *s, char **out)
{
	const char *p = s + strcspn(s, " \t");
	char *d;

	*out = NULL;
	p += strspn(p, " \t");
	if (*p == '\0')
		return STATUS_OK;
	d = *out = malloc(strlen(p) + 1);
	if (d == NULL)
		return STATUS_NOMEM;
	while (*p != '\0') {
		size_t w = strcspn(p, " \t");

		if (d != *out)
			*d++ = ' ';
		memcpy(d, p, w);
		d += w;
		p += w;
		p += strspn(p, " \t");
	}
	*d = '\0';
	return STATUS_OK;
}

int
auth_keys_new(char *const *hashes, size_t n, struct auth_keys **out, char *err,
	      size_t errlen)
{
	struct auth_keys *k = NULL;
	int rc;
	size_t i;

	*out = NULL;
	set_err(err, errlen, "%s", "");
	if (n > AUTH_MAX_KEYS) {
		set_err(err, errlen,
			"%zu key hashes configured; at most %d are allowed", n,
			AUTH_MAX_KEYS);
		return STATUS_LIMIT;
	}
	if (n > 0 && hashes == NULL) {
		set_err(err, errlen, "key hash list is missing");
		return STATUS_INVALID;
	}
	rc = STATUS_NOMEM;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		goto out;
	if (n > 0) {
		k->hash = calloc(n, sizeof(*k->hash));
		k->scopes = calloc(n, sizeof(*k->scopes));
		if (k->hash == NULL || k->scopes == NULL)
			goto out;
	}
	k->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (k->md == NULL) {
		set_err(err, errlen, "sha-256 is not available from openssl");
		rc = STATUS_IO;
		goto out;
	}
	for (i = 0; i < n; i++) {
		rc = parse_hash(hashes[i], i, n, k->hash[i], err, errlen);
		if (rc == STATUS_OK)
			rc = parse_scopes(hashes[i], &k->scopes[i]);
		if (rc != STATUS_OK)
			goto out;
	}
	k->n = n;
	*out = k;
	k = NULL;
	rc = STATUS_OK;
out:
	auth_keys_free(k);
	return rc;
}

void
auth_keys_free(struct auth_keys *k)
{
	if (k == NULL)
		return;
	EVP_MD_free(k->md);
	free(k->hash);
	for (size_t i = 0; k->scopes != NULL && i < k->n; i++)
		free(k->scopes[i]);
	free(k->scopes);
	free(k);
}

size_t
auth_keys_count(const struct auth_keys *k)
{
	return k != NULL ? k->n : 0;
}

long
auth_keys_find(const struct auth_keys *k, const char *token, size_t len)
{
	unsigned char md[SHA256_LEN];
	long found = -1;
	size_t i;

	if (k == NULL || k->n == 0 || token == NULL || len == 0)
		return -1;
	if (sha256(k->md, token, len, md) != STATUS_OK)
		return -1;
	/* no early exit: every hash is compared (an equal one twice in the
	 * list: the last wins, as any would) */
	for (i = 0; i < k->n; i++) {
		long eq = CRYPTO_memcmp(md, k->hash[i], SHA256_LEN) == 0;

		found = eq ? (long)i : found;
	}
	OPENSSL_cleanse(md, sizeof(md));
	return found;
}

bool
auth_keys_check(const struct auth_keys *k, const char *token, size_t len)
{
	return auth_keys_find(k, token, len) >= 0;
}

const char *
auth_keys_scopes(const struct auth_keys *k, size_t i)
{
	return k != NULL && i < k->n ? k->scopes[i] : NULL;
}

void
auth_keys_id(const struct auth_keys *k, size_t i, char out[AUTH_KEY_ID_LEN + 1])
{
	memcpy(out, "key:", 4);
	if (k == NULL || i >= k->n)
		memset(out + 4, '0', AUTH_KEY_ID_LEN - 4);
	else
		hex_encode(k->hash[i], (AUTH_KEY_ID_LEN - 4) / 2, out + 4);
	out[AUTH_KEY_ID_LEN] = '\0';
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

int
auth_parse_bearer(const char *header, const char **token, size_t *len)
{
	static const char scheme[] = "bearer";
	const char *p, *end;
	size_t i;

	*token = NULL;
	*len = 0;
	if (header == NULL)
		return STATUS_INVALID;
	p = header;
	while (is_blank(*p))
		p++;
	for (i = 0; i < sizeof(scheme) - 1; i++, p++)
		if (*p == '\0' || (*p | 0x20) != scheme[i])
			return STATUS_INVALID;
	/* RFC 6750 2.1: credentials = "Bearer" 1*SP b64token */
	if (*p != ' ')
		return STATUS_INVALID;
	while (*p == ' ')
		p++;
	end = p;
	while (*end > 0x20 && *end < 0x7f)
		end++;
	if (end == p)
		return STATUS_INVALID;
	for (i = 0; is_blank(end[i]); i++)
		;
	if (end[i] != '\0')
		return STATUS_INVALID;
	*token = p;
	*len = (size_t)(end - p);
	return STATUS_OK;
}

int
auth_random_hex(char *out, size_t outlen, size_t nbytes)
{
	unsigned char buf[256];
	size_t done = 0;

	if (out == NULL)
		return STATUS_INVALID;
	if (outlen > 0)
		out[0] = '\0';
	if (nbytes > AUTH_MAX_RANDOM_BYTES || outlen < 2 * nbytes + 1)
		return STATUS_INVALID;
	while (done < nbytes) {
		size_t chunk = nbytes - done;

		if (chunk > sizeof(buf))
			chunk = sizeof(buf);
		if (RAND_bytes(buf, (int)chunk) != 1) {
			OPENSSL_cleanse(buf, sizeof(buf));
			out[0] = '\0';
			return STATUS_IO;
		}
		hex_encode(buf, chunk, out + 2 * done);
		done += chunk;
	}
	out[2 * nbytes] = '\0';
	OPENSSL_cleanse(buf, sizeof(buf));
	return STATUS_OK;
}

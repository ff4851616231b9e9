/*
 * jwks.c - the authorization server's signing keys (see jwks.h).
 *
 * Locking: j->lock guards j->cur (the current set) and its reference
 * counts; j->fetch_lock is held by the one thread fetching, and guards
 * last_try_ms and the discovered jwks_uri.  Never both at once except
 * fetch_lock then lock, to swap the set in.
 */
#include "oauth/jwks.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oauth/fetch.h"

/* Keys kept from one JWKS; a set with more is not a signing key set. */
#define JWKS_MAX_KEYS 64

struct key {
	char *kid; /* NULL when the JWK has none */
	char *alg; /* NULL when the JWK does not pin one */
	cjose_jwk_t *jwk;
};

struct keyset {
	unsigned refs; /* under jwks.lock */
	size_t n;
	struct key k[JWKS_MAX_KEYS];
};

struct jwks {
	pthread_mutex_t lock;
	pthread_mutex_t fetch_lock;
	struct keyset *cur;
	int64_t last_try_ms;
	bool tried;
	unsigned fetches;
	char *issuer;
	char *jwks_uri; /* configured or discovered; NULL until known */
	int refetch_s;
	int timeout_ms;
	char *ca_file;
};

static void
set_free(struct keyset *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->k[i].kid);
		free(s->k[i].alg);
		cjose_jwk_release(s->k[i].jwk);
	}
	free(s);
}

int
jwks_new(const struct jwks_opts *o, struct jwks **out)
{
	struct jwks *j;

	*out = NULL;
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return STATUS_NOMEM;
	j->issuer = strdup(o->issuer != NULL ? o->issuer : "");
	j->ca_file = strdup(o->ca_file != NULL ? o->ca_file : "");
	if (o->jwks_uri != NULL && o->jwks_uri[0] != '\0')
		j->jwks_uri = strdup(o->jwks_uri);
	if (j->issuer == NULL || j->ca_file == NULL ||
	    (o->jwks_uri != NULL && o->jwks_uri[0] != '\0' &&
	     j->jwks_uri == NULL)) {
		free(j->issuer);
		free(j->ca_file);
		free(j->jwks_uri);
		free(j);
		return STATUS_NOMEM;
	}
	j->refetch_s = o->refetch_s;
	j->timeout_ms = o->timeout_ms;
	pthread_mutex_init(&j->lock, NULL);
	pthread_mutex_init(&j->fetch_lock, NULL);
	*out = j;
	return STATUS_OK;
}

void
jwks_free(struct jwks *j)
{
	if (j == NULL)
		return;
	set_free(j->cur);
	pthread_mutex_destroy(&j->lock);
	pthread_mutex_destroy(&j->fetch_lock);
	free(j->issuer);
	free(j->jwks_uri);
	free(j->ca_file);
	free(j);
}

unsigned
jwks_fetches(struct jwks *j)
{
	unsigned n;

	pthread_mutex_lock(&j->fetch_lock);
	n = j->fetches;
	pthread_mutex_unlock(&j->fetch_lock);
	return n;
}

static struct keyset *
acquire(struct jwks *j)
{
	struct keyset *s;

	pthread_mutex_lock(&j->lock);
	if ((s = j->cur) != NULL)
		s->refs++;
	pthread_mutex_unlock(&j->lock);
	return s;
}

static void
release(struct jwks *j, struct keyset *s)
{
	bool last;

	if (s == NULL)
		return;
	pthread_mutex_lock(&j->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (last)
		set_free(s);
}

/*
 * The metadata URLs of an issuer, in the order tried: RFC 8414 section 3
 * inserts the well-known segment between the host and the issuer's path;
 * OpenID Connect Discovery 1.0 section 4 appends it to the issuer.
 */
static int
discover(struct jwks *j, const struct fetch_opts *fo, char *err, size_t errlen)
{
	char urls[2][1024];
	const char *host, *path;
	json_t *meta = NULL;
	const char *iss, *uri;
	size_t ilen = strlen(j->issuer);
	int rc = STATUS_IO;

	if ((host = strstr(j->issuer, "://")) == NULL) {
		snprintf(err, errlen, "issuer is not an absolute URL");
		return STATUS_INVALID;
	}
	path = strchr(host + 3, '/');
	if (path == NULL || strcmp(path, "/") == 0)
		snprintf(
			urls[0], sizeof(urls[0]),
			"%.*s/.well-known/oauth-authorization-server",
			(int)(path != NULL ? (size_t)(path - j->issuer) : ilen),
			j->issuer);
	else
		snprintf(urls[0], sizeof(urls[0]),
			 "%.*s/.well-known/oauth-authorization-server%s",
			 (int)(path - j->issuer), j->issuer, path);
	snprintf(
		urls[1], sizeof(urls[1]),
		"%.*s/.well-known/openid-configuration",
		(int)(ilen > 0 && j->issuer[ilen - 1] == '/' ? ilen - 1 : ilen),
		j->issuer);
	for (int i = 0; i < 2; i++) {
		json_decref(meta);
		meta = NULL;
		rc = fetch_json(urls[i], fo, &meta, err, errlen);
		if (rc != STATUS_OK)
			continue;
		/* RFC 8414 3.3: the issuer in the metadata MUST be the one
		 * the URL was built from, else it is not this server's */
		iss = json_string_value(json_object_get(meta, "issuer"));
		uri = json_string_value(json_object_get(meta, "jwks_uri"));
		if (iss == NULL || strcmp(iss, j->issuer) != 0) {
			rc = STATUS_INVALID;
			snprintf(err, errlen,
				 "%.200s: metadata issuer does not match the "
				 "configured issuer",
				 urls[i]);
			continue;
		}
		if (uri == NULL || uri[0] == '\0') {
			rc = STATUS_INVALID;
			snprintf(err, errlen,
				 "%.200s: metadata has no jwks_uri", urls[i]);
			continue;
		}
		if ((j->jwks_uri = strdup(uri)) == NULL)
			rc = STATUS_NOMEM;
		break;
	}
	json_decref(meta);
	return rc;
}

/* Keys of the JWKS doc that can verify signatures; the others are skipped
 * (symmetric keys, encryption keys, kinds cjose does not know). */
static int
parse_set(json_t *doc, struct keyset **out, char *err, size_t errlen)
{
	json_t *keys = json_object_get(doc, "keys"), *k;
	struct keyset *s;
	size_t i;
	char *txt;
	cjose_err cerr;

	*out = NULL;
	if (!json_is_array(keys)) {
		snprintf(err, errlen, "jwks: no \"keys\" array");
		return STATUS_INVALID;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return STATUS_NOMEM;
	json_array_foreach(keys, i, k)
	{
		const char *kty = json_string_value(json_object_get(k, "kty"));
		const char *use = json_string_value(json_object_get(k, "use"));
		const char *kid = json_string_value(json_object_get(k, "kid"));
		const char *alg = json_string_value(json_object_get(k, "alg"));
		struct key *dst = &s->k[s->n];

		if (s->n == JWKS_MAX_KEYS)
			break;
		if (kty == NULL ||
		    (strcmp(kty, "RSA") != 0 && strcmp(kty, "EC") != 0) ||
		    (use != NULL && strcmp(use, "sig") != 0))
			continue;
		if ((txt = json_dumps(k, JSON_COMPACT)) == NULL)
			continue;
		dst->jwk = cjose_jwk_import(txt, strlen(txt), &cerr);
		free(txt);
		if (dst->jwk == NULL)
			continue;
		dst->kid = kid != NULL ? strdup(kid) : NULL;
		dst->alg = alg != NULL ? strdup(alg) : NULL;
		s->n++;
	}
	s->refs = 1;
	*out = s;
	return STATUS_OK;
}

/* Fetches the set unless one was tried less than refetch_s ago. */
static void
refetch(struct jwks *j, int64_t now_ms, char *err, size_t errlen)
{
	struct fetch_opts fo = {.timeout_ms = j->timeout_ms,
				.ca_file = j->ca_file};
	struct keyset *s = NULL, *old;
	json_t *doc = NULL;
	int rc;

	pthread_mutex_lock(&j->fetch_lock);
	if (j->tried && now_ms - j->last_try_ms < (int64_t)j->refetch_s * 1000)
		goto out;
	j->tried = true;
	j->last_try_ms = now_ms;
	if (j->jwks_uri == NULL && discover(j, &fo, err, errlen) != STATUS_OK)
		goto out;
	if ((rc = fetch_json(j->jwks_uri, &fo, &doc, err, errlen)) != STATUS_OK)
		goto out;
	if (parse_set(doc, &s, err, errlen) != STATUS_OK)
		goto out;
	j->fetches++;
	pthread_mutex_lock(&j->lock);
	old = j->cur;
	j->cur = s;
	pthread_mutex_unlock(&j->lock);
	release(j, old);
out:
	pthread_mutex_unlock(&j->fetch_lock);
	json_decref(doc);
}

static bool
key_fits(const struct key *k, const char *alg)
{
	cjose_err cerr;
	cjose_jwk_kty_t kty = cjose_jwk_get_kty(k->jwk, &cerr);

	if (k->alg != NULL && strcmp(k->alg, alg) != 0)
		return false;
	if (alg[0] == 'R' || alg[0] == 'P')
		return kty == CJOSE_JWK_KTY_RSA;
	if (kty != CJOSE_JWK_KTY_EC)
		return false;
	switch (cjose_jwk_EC_get_curve(k->jwk, &cerr)) {
	case CJOSE_JWK_EC_P_256: return strcmp(alg, "ES256") == 0;
	case CJOSE_JWK_EC_P_384: return strcmp(alg, "ES384") == 0;
	case CJOSE_JWK_EC_P_521: return strcmp(alg, "ES512") == 0;
	default: return false;
	}
}

/* STATUS_OK, STATUS_INVALID (a key fit and the signature failed) or
 * STATUS_NOTFOUND (no key of the set fits). */
static int
verify_with(struct keyset *s, cjose_jws_t *jws, const char *alg,
	    const char *kid)
{
	cjose_err cerr;
	int rc = STATUS_NOTFOUND;

	if (s == NULL)
		return STATUS_NOTFOUND;
	for (size_t i = 0; i < s->n; i++) {
		if (kid != NULL &&
		    (s->k[i].kid == NULL || strcmp(s->k[i].kid, kid) != 0))
			continue;
		if (!key_fits(&s->k[i], alg))
			continue;
		if (cjose_jws_verify(jws, s->k[i].jwk, &cerr))
			return STATUS_OK;
		rc = STATUS_INVALID;
	}
	return rc;
}

int
jwks_verify(struct jwks *j, cjose_jws_t *jws, const char *alg, const char *kid,
	    int64_t now_ms, char *err, size_t errlen)
{
	struct keyset *s = acquire(j);
	char ferr[256] = "";
	int rc = verify_with(s, jws, alg, kid);

	if (rc == STATUS_NOTFOUND) {
		release(j, s);
		refetch(j, now_ms, ferr, sizeof(ferr));
		s = acquire(j);
		rc = verify_with(s, jws, alg, kid);
	}
	if (rc == STATUS_NOTFOUND && s == NULL) {
		rc = STATUS_IO;
		snprintf(err, errlen,
			 "signing keys of the authorization server unavailable "
			 "(%s)",
			 ferr[0] != '\0' ? ferr : "fetch again later");
	} else if (rc == STATUS_NOTFOUND) {
		snprintf(err, errlen,
			 "no signing key of the authorization server fits the "
			 "token's kid and alg");
	} else if (rc == STATUS_INVALID) {
		snprintf(err, errlen, "signature does not verify");
	}
	release(j, s);
	return rc;
}

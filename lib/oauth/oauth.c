/*
 * oauth.c - access tokens checked by a resource server (see oauth.h).
 *
 * The order of the checks follows RFC 9068 section 4: the header (typ,
 * alg against the allow-list) before any key is looked up, the signature
 * before any claim is trusted, then iss, aud, exp, nbf and iat.
 */
#include "oauth/oauth.h"

#include <cjose/cjose.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base64.h"
#include "oauth/fetch.h"
#include "oauth/jwks.h"
#include "oauth/tokcache.h"

/* The client secret file holds one line; more is a mistake. */
#define OAUTH_MAX_SECRET 512

static const char *const default_algs[] = {"RS256", "RS384", "RS512",
					   "PS256", "ES256", "ES384"};
/* What cjose 0.6.2 can verify with a public key (no EdDSA: it has no OKP
 * keys). */
static const char *const known_algs[] = {"RS256", "RS384", "RS512",
					 "PS256", "PS384", "PS512",
					 "ES256", "ES384", "ES512"};

struct oauth {
	char *issuer;
	char *audience;
	char *algs[OAUTH_MAX_ALGS];
	size_t nalgs;
	bool accept_generic_typ;
	int leeway_s;
	char *introspection_endpoint; /* NULL: opaque tokens refused */
	char *client_id;
	char *client_secret;
	int introspection_cache_s;
	int timeout_ms;
	char *ca_file;
	struct jwks *jwks;
	struct tokcache *cache;
	EVP_MD *sha256; /* fetched once: an implicit fetch per token is slow */
};

static char *
dup_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? strdup(s) : NULL;
}

static int
read_secret(const char *path, char **out, char *err, size_t errlen)
{
	char buf[OAUTH_MAX_SECRET + 2];
	FILE *f;
	size_t n;

	*out = NULL;
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen,
			 "introspection_client_secret_file: cannot open it");
		return STATUS_INVALID;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (n == 0 || n > OAUTH_MAX_SECRET) {
		snprintf(err, errlen,
			 "introspection_client_secret_file: expected one line "
			 "of 1 to %d bytes",
			 OAUTH_MAX_SECRET);
		return STATUS_INVALID;
	}
	*out = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *out != NULL ? STATUS_OK : STATUS_NOMEM;
}

static bool
alg_known(const char *a)
{
	for (size_t i = 0; i < sizeof(known_algs) / sizeof(known_algs[0]); i++)
		if (strcmp(a, known_algs[i]) == 0)
			return true;
	return false;
}

int
oauth_new(const struct oauth_settings *s, struct oauth **out, char *err,
	  size_t errlen)
{
	struct oauth *o;
	struct jwks_opts jo = {.issuer = s->issuer,
			       .jwks_uri = s->jwks_uri,
			       .refetch_s = s->jwks_refetch_s,
			       .timeout_ms = s->timeout_ms,
			       .ca_file = s->ca_file};
	size_t nalgs = s->algorithms != NULL ? s->n_algorithms : 6;
	int rc = STATUS_NOMEM;

	*out = NULL;
	snprintf(err, errlen, "out of memory");
	if (s->issuer == NULL || s->issuer[0] == '\0' || s->audience == NULL ||
	    s->audience[0] == '\0') {
		snprintf(err, errlen, "issuer and audience are required");
		return STATUS_INVALID;
	}
	if (nalgs == 0 || nalgs > OAUTH_MAX_ALGS) {
		snprintf(err, errlen, "algorithms: expected 1 to %d names",
			 OAUTH_MAX_ALGS);
		return STATUS_INVALID;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < nalgs; i++) {
		const char *a = s->algorithms != NULL ? s->algorithms[i]
						      : default_algs[i];

		/* "none" and HMAC have no place with an issuer's public
		 * keys (RFC 8725 3.1, 3.2): a shared secret would be the
		 * key's public bytes */
		if (!alg_known(a)) {
			snprintf(err, errlen,
				 "algorithms: \"%s\" is not allowed; expected "
				 "RS256, RS384, RS512, PS256, PS384, PS512, "
				 "ES256, ES384 or ES512",
				 a);
			rc = STATUS_INVALID;
			goto fail;
		}
		if ((o->algs[o->nalgs++] = strdup(a)) == NULL)
			goto fail;
	}
	o->issuer = strdup(s->issuer);
	o->audience = strdup(s->audience);
	o->ca_file = dup_or_null(s->ca_file);
	o->introspection_endpoint = dup_or_null(s->introspection_endpoint);
	o->client_id = dup_or_null(s->introspection_client_id);
	if (o->issuer == NULL || o->audience == NULL)
		goto fail;
	if (o->introspection_endpoint != NULL &&
	    s->introspection_client_secret_file != NULL &&
	    s->introspection_client_secret_file[0] != '\0' &&
	    (rc = read_secret(s->introspection_client_secret_file,
			      &o->client_secret, err, errlen)) != STATUS_OK)
		goto fail;
	o->accept_generic_typ = s->accept_generic_typ;
	o->leeway_s = s->leeway_s;
	o->introspection_cache_s = s->introspection_cache_s;
	o->timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : 5000;
	jo.timeout_ms = o->timeout_ms;
	rc = STATUS_NOMEM;
	if ((o->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    jwks_new(&jo, &o->jwks) != STATUS_OK ||
	    tokcache_new(s->cache_entries, sizeof(struct oauth_principal),
			 &o->cache) != STATUS_OK)
		goto fail;
	err[0] = '\0';
	*out = o;
	return STATUS_OK;
fail:
	oauth_free(o);
	return rc;
}

void
oauth_free(struct oauth *o)
{
	if (o == NULL)
		return;
	for (size_t i = 0; i < o->nalgs; i++)
		free(o->algs[i]);
	free(o->issuer);
	free(o->audience);
	free(o->introspection_endpoint);
	free(o->client_id);
	if (o->client_secret != NULL) {
		explicit_bzero(o->client_secret, strlen(o->client_secret));
		free(o->client_secret);
	}
	free(o->ca_file);
	jwks_free(o->jwks);
	tokcache_free(o->cache);
	EVP_MD_free(o->sha256);
	free(o);
}

unsigned
oauth_jwks_fetches(struct oauth *o)
{
	return jwks_fetches(o->jwks);
}

const char *
oauth_scope_short(const char *want)
{
	const char *s = strrchr(want, '/');

	return s != NULL && s[1] != '\0' && strstr(want, "://") != NULL ? s + 1
									: NULL;
}

/* True if the space-separated scopes hold the n bytes at want. */
static bool
scope_in(const char *scopes, const char *want, size_t wl)
{
	for (const char *p = scopes; *p != '\0';) {
		size_t n = strcspn(p, " ");

		if (n == wl && memcmp(p, want, n) == 0)
			return true;
		p += n;
		p += strspn(p, " ");
	}
	return false;
}

bool
oauth_scope_has(const char *scopes, const char *want)
{
	const char *short_name = oauth_scope_short(want);

	if (want[0] == '\0')
		return false;
	return scope_in(scopes, want, strlen(want)) ||
	       (short_name != NULL &&
		scope_in(scopes, short_name, strlen(short_name)));
}

/* One base64url part of a JWT as a JSON object. */
static json_t *
decode_part(const char *s, size_t n)
{
	char *txt = NULL;
	unsigned char *raw = NULL;
	size_t rawlen = 0;
	json_t *j = NULL;

	if ((txt = malloc(n + 1)) == NULL || (raw = malloc(n + 1)) == NULL)
		goto out;
	memcpy(txt, s, n);
	txt[n] = '\0';
	if (!base64url_decode(txt, raw, n + 1, &rawlen))
		goto out;
	j = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, NULL);
	if (j != NULL && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
out:
	free(txt);
	free(raw);
	return j;
}

/* True when token looks like a JWS compact serialization: three parts of
 * base64url characters, the first two not empty. */
static bool
is_jwt(const char *t, size_t len, size_t dots[2])
{
	size_t nd = 0;

	for (size_t i = 0; i < len; i++) {
		char c = t[i];

		if (c == '.') {
			if (nd == 2)
				return false;
			dots[nd++] = i;
		} else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '_')) {
			return false;
		}
	}
	return nd == 2 && dots[0] > 0 && dots[1] > dots[0] + 1;
}

int
oauth_jwt_decode(const char *token, size_t len, json_t **header,
		 json_t **claims, char *err, size_t errlen)
{
	size_t dots[2];

	*header = *claims = NULL;
	if (len > OAUTH_MAX_TOKEN_BYTES || !is_jwt(token, len, dots)) {
		snprintf(err, errlen, "token is not a JWT");
		return STATUS_INVALID;
	}
	if ((*header = decode_part(token, dots[0])) == NULL) {
		snprintf(err, errlen, "JWT header is not base64url JSON");
		return STATUS_INVALID;
	}
	*claims = decode_part(token + dots[0] + 1, dots[1] - dots[0] - 1);
	if (*claims == NULL) {
		json_decref(*header);
		*header = NULL;
		snprintf(err, errlen, "JWT payload is not base64url JSON");
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

/* RFC 7519 7.3: StringOrURI values compare as strings, no normalizing. */
static bool
aud_has(json_t *aud, const char *want)
{
	size_t i;
	json_t *v;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	json_array_foreach(aud, i, v)
	{
		if (json_is_string(v) &&
		    strcmp(json_string_value(v), want) == 0)
			return true;
	}
	return false;
}

static bool
copy_id(char dst[OAUTH_MAX_ID], json_t *v)
{
	const char *s = json_string_value(v);

	if (s == NULL) {
		dst[0] = '\0';
		return v == NULL;
	}
	if (strlen(s) >= OAUTH_MAX_ID)
		return false;
	memcpy(dst, s, strlen(s) + 1);
	return true;
}

/* "scope" (RFC 9068 2.2.3, RFC 7662 2.2: space-separated) or "scp" (an
 * array, as Entra ID and Okta write it). */
static bool
copy_scope(char dst[OAUTH_MAX_SCOPE], json_t *claims)
{
	json_t *scope = json_object_get(claims, "scope");
	json_t *scp = json_object_get(claims, "scp"), *v;
	size_t used = 0, i;

	dst[0] = '\0';
	if (!json_is_string(scope) && json_is_string(scp))
		scope = scp;
	if (json_is_string(scope)) {
		if (json_string_length(scope) >= OAUTH_MAX_SCOPE)
			return false;
		memcpy(dst, json_string_value(scope),
		       json_string_length(scope) + 1);
		return true;
	}
	if (scp != NULL && !json_is_array(scp))
		return false;
	json_array_foreach(scp, i, v)
	{
		size_t n = json_string_length(v);

		if (!json_is_string(v))
			return false;
		if (used + n + 2 > OAUTH_MAX_SCOPE)
			return false;
		if (used > 0)
			dst[used++] = ' ';
		memcpy(dst + used, json_string_value(v), n);
		used += n;
		dst[used] = '\0';
	}
	return true;
}

/* A NumericDate claim: absent (*present false) or a number. */
static bool
num_claim(json_t *claims, const char *name, bool *present, int64_t *v)
{
	json_t *j = json_object_get(claims, name);

	*present = j != NULL;
	if (j == NULL)
		return true;
	if (!json_is_number(j))
		return false;
	*v = (int64_t)json_number_value(j);
	return true;
}

/*
 * The claims both kinds of token share: iss, aud, exp, nbf, iat, then the
 * principal.  need_iat: RFC 9068 2.2 requires iat in a JWT; RFC 7662 makes
 * it optional in an introspection answer.
 */
static int
check_claims(struct oauth *o, json_t *c, int64_t now_ms, bool need_iat,
	     struct oauth_principal *p, char *err, size_t errlen)
{
	const char *iss = json_string_value(json_object_get(c, "iss"));
	int64_t now = now_ms / 1000, exp = 0, nbf = 0, iat = 0;
	bool has_exp, has_nbf, has_iat;
	json_t *cid;

	if (iss == NULL || strcmp(iss, o->issuer) != 0) {
		snprintf(err, errlen, "issuer (iss) is not %s", o->issuer);
		return STATUS_INVALID;
	}
	if (!aud_has(json_object_get(c, "aud"), o->audience)) {
		snprintf(err, errlen,
			 "audience (aud) does not name this resource (%s)",
			 o->audience);
		return STATUS_INVALID;
	}
	if (!num_claim(c, "exp", &has_exp, &exp) || !has_exp) {
		snprintf(err, errlen, "expiry (exp) missing");
		return STATUS_INVALID;
	}
	if (!num_claim(c, "nbf", &has_nbf, &nbf) ||
	    !num_claim(c, "iat", &has_iat, &iat) || (need_iat && !has_iat)) {
		snprintf(err, errlen, "nbf or iat malformed or missing");
		return STATUS_INVALID;
	}
	if (now >= exp + o->leeway_s) {
		snprintf(err, errlen, "token expired (exp)");
		return STATUS_INVALID;
	}
	if (has_nbf && now + o->leeway_s < nbf) {
		snprintf(err, errlen, "token not valid yet (nbf)");
		return STATUS_INVALID;
	}
	if (has_iat && now + o->leeway_s < iat) {
		snprintf(err, errlen, "token issued in the future (iat)");
		return STATUS_INVALID;
	}
	cid = json_object_get(c, "client_id");
	if (cid == NULL)
		cid = json_object_get(c, "azp");
	if (!copy_id(p->sub, json_object_get(c, "sub")) ||
	    !copy_id(p->client_id, cid)) {
		snprintf(err, errlen,
			 "sub or client_id not a string of at most %d bytes",
			 OAUTH_MAX_ID - 1);
		return STATUS_INVALID;
	}
	if (!copy_scope(p->scope, c)) {
		snprintf(err, errlen,
			 "scope not a string (or scp an array of strings) of "
			 "at most %d bytes",
			 OAUTH_MAX_SCOPE - 1);
		return STATUS_INVALID;
	}
	p->exp = exp;
	return STATUS_OK;
}

static bool
typ_ok(struct oauth *o, const char *typ)
{
	/* RFC 9068 4: "at+jwt", or its media type; RFC 7515 4.1.9: the
	 * "application/" prefix may be omitted and the name compares
	 * case-insensitively */
	if (typ != NULL && (strcasecmp(typ, "at+jwt") == 0 ||
			    strcasecmp(typ, "application/at+jwt") == 0))
		return true;
	return o->accept_generic_typ &&
	       (typ == NULL || strcasecmp(typ, "JWT") == 0);
}

static int
verify_jwt(struct oauth *o, const char *token, size_t len, int64_t now_ms,
	   struct oauth_principal *p, char *err, size_t errlen)
{
	json_t *hdr = NULL, *claims = NULL;
	cjose_jws_t *jws = NULL;
	cjose_err cerr;
	const char *alg, *kid, *typ;
	bool allowed = false;
	int rc;

	if ((rc = oauth_jwt_decode(token, len, &hdr, &claims, err, errlen)) !=
	    STATUS_OK)
		goto out;
	rc = STATUS_INVALID;
	alg = json_string_value(json_object_get(hdr, "alg"));
	kid = json_string_value(json_object_get(hdr, "kid"));
	typ = json_string_value(json_object_get(hdr, "typ"));
	for (size_t i = 0; alg != NULL && i < o->nalgs; i++)
		allowed = allowed || strcmp(alg, o->algs[i]) == 0;
	if (!allowed) {
		snprintf(err, errlen, "algorithm (alg) %.16s not allowed",
			 alg != NULL ? alg : "missing");
		goto out;
	}
	if (json_object_get(hdr, "crit") != NULL) {
		snprintf(err, errlen, "critical header (crit) not understood");
		goto out;
	}
	if (!typ_ok(o, typ)) {
		snprintf(err, errlen,
			 "type (typ) is not at+jwt: not an access token");
		goto out;
	}
	if ((jws = cjose_jws_import(token, len, &cerr)) == NULL) {
		snprintf(err, errlen, "JWT not a valid JWS");
		goto out;
	}
	if ((rc = jwks_verify(o->jwks, jws, alg, kid, now_ms, err, errlen)) !=
	    STATUS_OK) {
		/* an unknown kid is a bad token, not a missing item */
		if (rc == STATUS_NOTFOUND)
			rc = STATUS_INVALID;
		goto out;
	}
	rc = check_claims(o, claims, now_ms, true, p, err, errlen);
out:
	cjose_jws_release(jws);
	json_decref(hdr);
	json_decref(claims);
	return rc;
}

/* RFC 7662 2.1: token=<token>&token_type_hint=access_token, form-encoded
 * (a bearer token is visible ASCII: only a few characters need escaping). */
static char *
introspection_form(const char *token, size_t len)
{
	static const char pre[] = "token_type_hint=access_token&token=";
	char *f = malloc(sizeof(pre) + 3 * len), *w;

	if (f == NULL)
		return NULL;
	memcpy(f, pre, sizeof(pre) - 1);
	w = f + sizeof(pre) - 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)token[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			*w++ = (char)c;
		} else {
			snprintf(w, 4, "%%%02X", c);
			w += 3;
		}
	}
	*w = '\0';
	return f;
}

static int
introspect(struct oauth *o, const char *token, size_t len, int64_t now_ms,
	   struct oauth_principal *p, char *err, size_t errlen)
{
	struct fetch_opts fo = {.timeout_ms = o->timeout_ms,
				.ca_file = o->ca_file,
				.user = o->client_id,
				.password = o->client_secret};
	char ferr[256];
	json_t *doc = NULL;
	char *form = NULL;
	int rc;

	if (o->introspection_endpoint == NULL) {
		snprintf(err, errlen,
			 "token is not a JWT and no introspection endpoint is "
			 "configured");
		return STATUS_INVALID;
	}
	if ((fo.form = form = introspection_form(token, len)) == NULL)
		return STATUS_NOMEM;
	rc = fetch_json(o->introspection_endpoint, &fo, &doc, ferr,
			sizeof(ferr));
	explicit_bzero(form, strlen(form));
	free(form);
	if (rc != STATUS_OK) {
		snprintf(err, errlen, "token introspection failed: %s", ferr);
		return STATUS_IO;
	}
	if (!json_is_true(json_object_get(doc, "active"))) {
		snprintf(err, errlen, "token is not active (introspection)");
		rc = STATUS_INVALID;
	} else {
		rc = check_claims(o, doc, now_ms, false, p, err, errlen);
	}
	json_decref(doc);
	return rc;
}

/* p->id from sub and client_id (the NUL between them keeps "a" + "bc"
 * apart from "ab" + "c"), computed once per token and cached with it. */
static int
principal_id(struct oauth *o, struct oauth_principal *p, char *err,
	     size_t errlen)
{
	unsigned char md[EVP_MAX_MD_SIZE], who[2 * OAUTH_MAX_ID];
	unsigned int mdlen = 0;
	size_t n = strlen(p->sub), m = strlen(p->client_id);

	memcpy(who, p->sub, n + 1);
	memcpy(who + n + 1, p->client_id, m);
	if (!EVP_Digest(who, n + 1 + m, md, &mdlen, o->sha256, NULL)) {
		snprintf(err, errlen, "cannot hash the principal");
		return STATUS_IO;
	}
	for (size_t i = 0; i < (sizeof(p->id) - 1) / 2; i++)
		snprintf(p->id + 2 * i, 3, "%02x", md[i]);
	return STATUS_OK;
}

int
oauth_verify(struct oauth *o, const char *token, size_t len, int64_t now_ms,
	     struct oauth_principal *p, char *err, size_t errlen)
{
	unsigned char key[TOKCACHE_KEY];
	unsigned int keylen = 0;
	size_t dots[2];
	int64_t until;
	bool jwt;
	int rc;

	memset(p, 0, sizeof(*p));
	err[0] = '\0';
	if (token == NULL || len == 0) {
		snprintf(err, errlen, "token missing");
		return STATUS_INVALID;
	}
	if (len > OAUTH_MAX_TOKEN_BYTES) {
		snprintf(err, errlen, "token longer than %d bytes",
			 OAUTH_MAX_TOKEN_BYTES);
		return STATUS_LIMIT;
	}
	if (!EVP_Digest(token, len, key, &keylen, o->sha256, NULL)) {
		snprintf(err, errlen, "cannot hash the token");
		return STATUS_IO;
	}
	if (tokcache_get(o->cache, key, now_ms, p) == STATUS_OK)
		return STATUS_OK;
	jwt = is_jwt(token, len, dots);
	rc = jwt ? verify_jwt(o, token, len, now_ms, p, err, errlen)
		 : introspect(o, token, len, now_ms, p, err, errlen);
	if (rc == STATUS_OK)
		rc = principal_id(o, p, err, errlen);
	if (rc != STATUS_OK) {
		memset(p, 0, sizeof(*p));
		return rc;
	}
	/* kept until it expires (the leeway is for clocks, not for the
	 * cache), an introspected one at most introspection_cache_s: it
	 * may be revoked meanwhile */
	until = p->exp * 1000;
	if (!jwt && until > now_ms + (int64_t)o->introspection_cache_s * 1000)
		until = now_ms + (int64_t)o->introspection_cache_s * 1000;
	tokcache_put(o->cache, key, until, now_ms, p);
	return STATUS_OK;
}

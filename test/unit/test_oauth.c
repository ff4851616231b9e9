/*
 * test_oauth.c - unit tests for lib/oauth against a real (tiny) authorization
 * server: a libmicrohttpd daemon on a loopback port serving OpenID discovery,
 * a JWKS that the test rotates, and RFC 7662 introspection.  Keys are made
 * here (cjose over OpenSSL: RSA 2048 and EC P-256); tokens are signed with
 * them, or forged by hand for the negative table (alg none, HS256 keyed with
 * the RSA public key, tampered parts).  Time is passed in, never waited for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjose/cjose.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "oauth/oauth.h"
#include "oauth/prm.h"

#define RESOURCE "https://sextant.example/mcp"
/* a fixed instant: the verifier takes the time from its caller */
#define NOW_S  1800000000LL
#define NOW_MS (NOW_S * 1000)

static struct MHD_Daemon *as;
static int as_port;
static char issuer[64];
static pthread_mutex_t as_lock = PTHREAD_MUTEX_INITIALIZER;
static char *jwks_doc;	    /* what /jwks serves now */
static int jwks_hits;	    /* GET /jwks */
static int introspect_hits; /* POST /introspect */
static cjose_jwk_t *rsa1, *rsa2, *ec1;

struct upload {
	char body[4096];
	size_t len;
};

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned status, const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Introspection answers by the token: "opaque-good" is active for this
 * resource, "opaque-other" for another one, anything else inactive. */
static enum MHD_Result
introspection(struct MHD_Connection *c, struct upload *u)
{
	char *pass = NULL, *user, doc[512];
	bool authed;

	user = MHD_basic_auth_get_username_password(c, &pass);
	authed = user != NULL && pass != NULL && strcmp(user, "sextant") == 0 &&
		 strcmp(pass, "s3cret") == 0;
	MHD_free(user);
	MHD_free(pass);
	if (!authed)
		return reply(c, 401, "{\"error\":\"invalid_client\"}");
	pthread_mutex_lock(&as_lock);
	introspect_hits++;
	pthread_mutex_unlock(&as_lock);
	u->body[u->len] = '\0';
	if (strstr(u->body, "token=opaque-good") != NULL ||
	    strstr(u->body, "token=opaque-other") != NULL)
		snprintf(doc, sizeof(doc),
			 "{\"active\":true,\"iss\":\"%s\",\"aud\":\"%s\","
			 "\"exp\":%lld,\"sub\":\"alice\",\"client_id\":\"cli\","
			 "\"scope\":\"sextant:read sextant:ingest\"}",
			 issuer,
			 strstr(u->body, "opaque-good") != NULL
				 ? RESOURCE
				 : "https://other.example/",
			 NOW_S + 3600);
	else
		snprintf(doc, sizeof(doc), "{\"active\":false}");
	return reply(c, 200, doc);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
	   const char *method, const char *version, const char *data,
	   size_t *data_size, void **con_cls)
{
	struct upload *u = *con_cls;
	char doc[512];
	enum MHD_Result ret;

	(void)cls;
	(void)version;
	if (u == NULL) {
		*con_cls = calloc(1, sizeof(*u));
		return *con_cls != NULL ? MHD_YES : MHD_NO;
	}
	if (*data_size > 0) {
		size_t n = *data_size;

		if (n > sizeof(u->body) - 1 - u->len)
			n = sizeof(u->body) - 1 - u->len;
		memcpy(u->body + u->len, data, n);
		u->len += n;
		*data_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, "/.well-known/openid-configuration") == 0) {
		snprintf(doc, sizeof(doc),
			 "{\"issuer\":\"%s\",\"jwks_uri\":\"%s/jwks\"}", issuer,
			 issuer);
		return reply(c, 200, doc);
	}
	if (strcmp(url, "/jwks") == 0) {
		pthread_mutex_lock(&as_lock);
		jwks_hits++;
		ret = reply(c, 200, jwks_doc);
		pthread_mutex_unlock(&as_lock);
		return ret;
	}
	if (strcmp(url, "/introspect") == 0 && strcmp(method, "POST") == 0)
		return introspection(c, u);
	return reply(c, 404, "{}");
}

static void
on_done(void *cls, struct MHD_Connection *c, void **con_cls,
	enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

static void
as_start(void)
{
	const union MHD_DaemonInfo *info;

	as = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
			      on_request, NULL, MHD_OPTION_NOTIFY_COMPLETED,
			      on_done, NULL, MHD_OPTION_END);
	assert_non_null(as);
	info = MHD_get_daemon_info(as, MHD_DAEMON_INFO_BIND_PORT);
	as_port = info->port;
	snprintf(issuer, sizeof(issuer), "http://127.0.0.1:%d", as_port);
}

/* The public JWKS of the given keys. */
static void
serve_keys(cjose_jwk_t *a, cjose_jwk_t *b)
{
	cjose_err e;
	char *ja = cjose_jwk_to_json(a, false, &e);
	char *jb = b != NULL ? cjose_jwk_to_json(b, false, &e) : NULL;
	size_t n = strlen(ja) + (jb != NULL ? strlen(jb) : 0) + 32;

	pthread_mutex_lock(&as_lock);
	free(jwks_doc);
	jwks_doc = malloc(n);
	snprintf(jwks_doc, n, "{\"keys\":[%s%s%s]}", ja, jb != NULL ? "," : "",
		 jb != NULL ? jb : "");
	pthread_mutex_unlock(&as_lock);
	free(ja);
	free(jb);
}

static int
hits(int *h)
{
	int n;

	pthread_mutex_lock(&as_lock);
	n = *h;
	pthread_mutex_unlock(&as_lock);
	return n;
}

static cjose_jwk_t *
keygen(bool rsa, const char *kid)
{
	static const uint8_t e65537[] = {1, 0, 1};
	cjose_err e;
	cjose_jwk_t *k =
		rsa ? cjose_jwk_create_RSA_random(2048, e65537, 3, &e)
		    : cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &e);

	assert_non_null(k);
	assert_true(cjose_jwk_set_kid(k, kid, strlen(kid), &e));
	return k;
}

/* A token signed with k: header {alg, kid, typ} and the claims. */
static char *
sign(cjose_jwk_t *k, const char *alg, const char *typ, const char *claims)
{
	cjose_err e;
	cjose_header_t *h = cjose_header_new(&e);
	cjose_jws_t *jws;
	const char *ser;
	char *out;

	assert_true(cjose_header_set(h, CJOSE_HDR_ALG, alg, &e));
	assert_true(cjose_header_set(h, CJOSE_HDR_KID, cjose_jwk_get_kid(k, &e),
				     &e));
	if (typ != NULL)
		assert_true(cjose_header_set(h, "typ", typ, &e));
	jws = cjose_jws_sign(k, h, (const uint8_t *)claims, strlen(claims), &e);
	assert_non_null(jws);
	assert_true(cjose_jws_export(jws, &ser, &e));
	out = strdup(ser);
	cjose_jws_release(jws);
	cjose_header_release(h);
	return out;
}

/* The claims of a token: good ones but for what the arguments change. */
static char *
claims(const char *iss, const char *aud, long long exp, long long nbf,
       const char *jti)
{
	char *c = malloc(1024);

	snprintf(c, 1024,
		 "{\"iss\":\"%s\",\"aud\":[\"%s\",\"https://other.example\"],"
		 "\"exp\":%lld,\"nbf\":%lld,\"iat\":%lld,\"sub\":\"alice\","
		 "\"client_id\":\"claude\",\"jti\":\"%s\","
		 "\"scope\":\"sextant:read sextant:write\"}",
		 iss, aud, exp, nbf, nbf, jti);
	return c;
}

static char *
good_token(cjose_jwk_t *k, const char *alg, const char *jti)
{
	char *c = claims(issuer, RESOURCE, NOW_S + 600, NOW_S - 10, jti);
	char *t = sign(k, alg, "at+jwt", c);

	free(c);
	return t;
}

static struct oauth *
verifier(bool generic_typ)
{
	struct oauth_settings s = {
		.issuer = issuer,
		.audience = RESOURCE,
		.accept_generic_typ = generic_typ,
		.leeway_s = 60,
		.cache_entries = 64,
		.jwks_refetch_s = 30,
		.timeout_ms = 2000,
	};
	struct oauth *o = NULL;
	char err[256];

	assert_int_equal(oauth_new(&s, &o, err, sizeof(err)), STATUS_OK);
	return o;
}

static int
setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rsa1 = keygen(true, "rsa1");
	rsa2 = keygen(true, "rsa2");
	ec1 = keygen(false, "ec1");
	as_start();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (as != NULL)
		MHD_stop_daemon(as);
	cjose_jwk_release(rsa1);
	cjose_jwk_release(rsa2);
	cjose_jwk_release(ec1);
	free(jwks_doc);
	curl_global_cleanup();
	return 0;
}

static int
verify(struct oauth *o, const char *tok, int64_t now_ms,
       struct oauth_principal *p, char *err, size_t errlen)
{
	return oauth_verify(o, tok, strlen(tok), now_ms, p, err, errlen);
}

static void
test_good_tokens_and_cache(void **state)
{
	struct oauth *o;
	struct oauth_principal p;
	char err[256], *rs, *es, *scp;
	int before;

	(void)state;
	serve_keys(rsa1, ec1);
	o = verifier(false);
	rs = good_token(rsa1, "RS256", "a1");
	es = good_token(ec1, "ES256", "a2");
	before = hits(&jwks_hits);
	assert_int_equal(verify(o, rs, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_string_equal(p.sub, "alice");
	assert_string_equal(p.client_id, "claude");
	assert_string_equal(p.scope, "sextant:read sextant:write");
	assert_int_equal(p.exp, NOW_S + 600);
	assert_true(oauth_scope_has(p.scope, "sextant:write"));
	assert_false(oauth_scope_has(p.scope, "sextant:ingest"));
	assert_false(oauth_scope_has(p.scope, "sextant"));
	/* a scope in URI form is held by its last segment too (Entra ID's
	 * scp), not by another segment or a prefix */
	assert_true(oauth_scope_has("openid sextant.read",
				    "api://sextant-app/sextant.read"));
	assert_true(oauth_scope_has("api://sextant-app/sextant.read",
				    "api://sextant-app/sextant.read"));
	assert_false(oauth_scope_has("sextant.write",
				     "api://sextant-app/sextant.read"));
	assert_false(oauth_scope_has("sextant-app",
				     "api://sextant-app/sextant.read"));
	assert_false(oauth_scope_has("sextant.read", "sextant/read"));
	assert_null(oauth_scope_short("sextant:read"));
	assert_null(oauth_scope_short("api://sextant-app/"));
	assert_string_equal(oauth_scope_short("api://a/b/sextant.read"),
			    "sextant.read");
	assert_int_equal(verify(o, es, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	/* one discovery, one JWKS fetch for both keys */
	assert_int_equal(hits(&jwks_hits) - before, 1);
	assert_int_equal(oauth_jwks_fetches(o), 1);

	/* scp as an array (Entra ID, Okta) and azp for the client */
	scp = malloc(512);
	snprintf(scp, 512,
		 "{\"iss\":\"%s\",\"aud\":\"%s\",\"exp\":%lld,\"iat\":%lld,"
		 "\"azp\":\"vscode\",\"scp\":[\"sextant:read\",\"x\"]}",
		 issuer, RESOURCE, NOW_S + 60, NOW_S);
	free(es);
	es = sign(ec1, "ES256", "application/at+jwt", scp);
	assert_int_equal(verify(o, es, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_string_equal(p.sub, "");
	assert_string_equal(p.client_id, "vscode");
	assert_string_equal(p.scope, "sextant:read x");

	free(scp);
	oauth_free(o);
	free(rs);
	free(es);
}

struct bad {
	const char *name;
	char *token;
	const char *why; /* a piece of the error message */
};

static char *
forge(const char *header, const char *claims_json, const char *sig)
{
	char h[512], c[1024], *t = malloc(2048);

	assert_true(base64url_encode((const unsigned char *)header,
				     strlen(header), h, sizeof(h)));
	assert_true(base64url_encode((const unsigned char *)claims_json,
				     strlen(claims_json), c, sizeof(c)));
	snprintf(t, 2048, "%s.%s.%s", h, c, sig);
	return t;
}

/* HS256 keyed with the RSA key's public JWK text: the classic confusion
 * where a verifier takes the public key as the HMAC secret. */
static char *
hs256_with_public_key(const char *claims_json)
{
	cjose_err e;
	char *pub = cjose_jwk_to_json(rsa1, false, &e);
	char *t =
		forge("{\"alg\":\"HS256\",\"kid\":\"rsa1\",\"typ\":\"at+jwt\"}",
		      claims_json, "");
	unsigned char mac[32];
	unsigned int maclen = 0;
	char sig[64];

	t[strlen(t) - 1] = '\0'; /* signing input: without the last dot */
	HMAC(EVP_sha256(), pub, (int)strlen(pub), (unsigned char *)t, strlen(t),
	     mac, &maclen);
	assert_true(base64url_encode(mac, maclen, sig, sizeof(sig)));
	snprintf(t + strlen(t), 2048 - strlen(t), ".%s", sig);
	free(pub);
	return t;
}

static void
test_negative_table(void **state)
{
	struct oauth *o;
	struct oauth_principal p;
	char err[256], *good, *c;
	struct bad bad[16];
	size_t n = 0, dot;
	char *big;

	(void)state;
	serve_keys(rsa1, ec1);
	o = verifier(false);
	good = good_token(rsa1, "RS256", "n0");
	assert_int_equal(verify(o, good, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);

	c = claims(issuer, RESOURCE, NOW_S - 61, NOW_S - 600, "n1");
	bad[n++] = (struct bad){"expired", sign(rsa1, "RS256", "at+jwt", c),
				"expired (exp)"};
	free(c);
	c = claims(issuer, RESOURCE, NOW_S + 600, NOW_S + 61, "n2");
	bad[n++] = (struct bad){"not yet valid",
				sign(rsa1, "RS256", "at+jwt", c), "(nbf)"};
	free(c);
	c = claims("https://evil.example", RESOURCE, NOW_S + 600, NOW_S, "n3");
	bad[n++] = (struct bad){"wrong issuer",
				sign(rsa1, "RS256", "at+jwt", c), "(iss)"};
	free(c);
	c = claims(issuer, "https://sextant.example/other", NOW_S + 600, NOW_S,
		   "n4");
	bad[n++] = (struct bad){"wrong audience",
				sign(rsa1, "RS256", "at+jwt", c), "(aud)"};
	free(c);
	/* RFC 7519 7.3: no normalization, so a trailing slash is another
	 * resource */
	c = claims(issuer, RESOURCE "/", NOW_S + 600, NOW_S, "n5");
	bad[n++] = (struct bad){"token for another resource",
				sign(rsa1, "RS256", "at+jwt", c), "(aud)"};
	free(c);
	c = claims(issuer, RESOURCE, NOW_S + 600, NOW_S, "n6");
	bad[n++] = (struct bad){
		"alg none",
		forge("{\"alg\":\"none\",\"typ\":\"at+jwt\"}", c, ""), "alg"};
	bad[n++] = (struct bad){"HS256 keyed with the public key",
				hs256_with_public_key(c), "HS256 not allowed"};
	bad[n++] = (struct bad){"unknown kid", sign(rsa2, "RS256", "at+jwt", c),
				"no signing key"};
	bad[n++] = (struct bad){"RSA key claimed for ES256",
				forge("{\"alg\":\"ES256\",\"kid\":\"rsa1\","
				      "\"typ\":\"at+jwt\"}",
				      c, "AAAA"),
				"no signing key"};
	bad[n++] = (struct bad){"typ JWT (an ID token's)",
				sign(rsa1, "RS256", "JWT", c), "(typ)"};
	free(c);

	/* tampered payload: the good token's claims swapped for others */
	{
		char *t = strdup(good), *other;
		char *f;

		c = claims(issuer, RESOURCE, NOW_S + 99999, NOW_S, "n0");
		other = forge("{}", c, "x");
		f = malloc(strlen(good) + strlen(other));
		dot = strchr(t, '.') - t;
		snprintf(f, strlen(good) + strlen(other), "%.*s%.*s%s",
			 (int)dot, t,
			 (int)(strrchr(other, '.') - strchr(other, '.')),
			 strchr(other, '.'), strrchr(t, '.'));
		bad[n++] = (struct bad){"tampered payload", f,
					"signature does not verify"};
		free(other);
		free(c);
		/* tampered signature: one character of it changed */
		t[strlen(t) - 5] = t[strlen(t) - 5] == 'A' ? 'B' : 'A';
		bad[n++] = (struct bad){"tampered signature", t,
					"signature does not verify"};
	}

	for (size_t i = 0; i < n; i++) {
		int rc = verify(o, bad[i].token, NOW_MS, &p, err, sizeof(err));

		if (rc != STATUS_INVALID || strstr(err, bad[i].why) == NULL)
			fail_msg("%s: rc %d, err \"%s\", expected \"%s\"",
				 bad[i].name, rc, err, bad[i].why);
		assert_string_equal(p.sub, "");
		/* the error never echoes the token */
		assert_null(strstr(err, bad[i].token));
		free(bad[i].token);
	}

	/* within the leeway: 59 s past exp still verifies */
	c = claims(issuer, RESOURCE, NOW_S - 59, NOW_S - 600, "n7");
	good = (free(good), sign(rsa1, "RS256", "at+jwt", c));
	free(c);
	assert_int_equal(verify(o, good, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	/* and the cache does not keep it past exp + ... : 2 s later the
	 * cache has nothing (exp passed) and the leeway has run out */
	assert_int_equal(verify(o, good, NOW_MS + 2000, &p, err, sizeof(err)),
			 STATUS_INVALID);

	/* oversized */
	big = malloc(OAUTH_MAX_TOKEN_BYTES + 2);
	memset(big, 'a', OAUTH_MAX_TOKEN_BYTES + 1);
	big[OAUTH_MAX_TOKEN_BYTES + 1] = '\0';
	assert_int_equal(verify(o, big, NOW_MS, &p, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_non_null(strstr(err, "longer than 8192"));
	free(big);
	/* an opaque token with no introspection configured */
	assert_int_equal(verify(o, "opaque-good", NOW_MS, &p, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "no introspection endpoint"));
	free(good);
	oauth_free(o);
}

static void
test_generic_typ_and_bad_settings(void **state)
{
	struct oauth *o = NULL;
	struct oauth_principal p;
	char err[256], *c, *t;
	char *algs[] = {"RS256", "HS256"};
	char *none[] = {"none"};
	struct oauth_settings s = {.issuer = issuer,
				   .audience = RESOURCE,
				   .algorithms = algs,
				   .n_algorithms = 2};

	(void)state;
	assert_int_equal(oauth_new(&s, &o, err, sizeof(err)), STATUS_INVALID);
	assert_null(o);
	assert_non_null(strstr(err, "\"HS256\" is not allowed"));
	s.algorithms = none;
	s.n_algorithms = 1;
	assert_int_equal(oauth_new(&s, &o, err, sizeof(err)), STATUS_INVALID);
	assert_non_null(strstr(err, "\"none\" is not allowed"));

	serve_keys(rsa1, ec1);
	o = verifier(true);
	c = claims(issuer, RESOURCE, NOW_S + 600, NOW_S, "g1");
	t = sign(rsa1, "RS256", "JWT", c);
	assert_int_equal(verify(o, t, NOW_MS, &p, err, sizeof(err)), STATUS_OK);
	free(t);
	t = sign(rsa1, "RS256", NULL, c);
	assert_int_equal(verify(o, t, NOW_MS, &p, err, sizeof(err)), STATUS_OK);
	free(t);
	free(c);
	oauth_free(o);
}

/* Rotation, the refetch bound, and the server going away. */
static void
test_rotation_and_server_down(void **state)
{
	struct oauth *o;
	struct oauth_principal p;
	char err[256], *t1, *t2, *t3, *t4;

	(void)state;
	serve_keys(rsa1, NULL);
	o = verifier(false);
	t1 = good_token(rsa1, "RS256", "r1");
	t2 = good_token(rsa2, "RS256", "r2");
	assert_int_equal(verify(o, t1, NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(oauth_jwks_fetches(o), 1);

	/* the server rotates to rsa2 */
	serve_keys(rsa2, NULL);
	/* within refetch_s (30 s) of the last fetch: no new fetch, the
	 * unknown kid fails */
	assert_int_equal(verify(o, t2, NOW_MS + 10000, &p, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "no signing key"));
	assert_int_equal(oauth_jwks_fetches(o), 1);
	/* past it: the new kid brings one refetch and verifies */
	assert_int_equal(verify(o, t2, NOW_MS + 31000, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(oauth_jwks_fetches(o), 2);
	/* the old kid is gone: a token signed by it (not cached) fails */
	t3 = good_token(rsa1, "RS256", "r3");
	assert_int_equal(verify(o, t3, NOW_MS + 32000, &p, err, sizeof(err)),
			 STATUS_INVALID);
	/* t1 was verified before: cached until its exp */
	assert_int_equal(verify(o, t1, NOW_MS + 32000, &p, err, sizeof(err)),
			 STATUS_OK);

	/* the server goes down: the known kid still verifies a new token,
	 * an unknown kid fails closed even once the refetch is allowed */
	MHD_stop_daemon(as);
	as = NULL;
	t4 = good_token(rsa2, "RS256", "r4");
	assert_int_equal(verify(o, t4, NOW_MS + 100000, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(verify(o, t3, NOW_MS + 100000, &p, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "no signing key"));
	assert_int_equal(oauth_jwks_fetches(o), 2);
	oauth_free(o);

	/* a new verifier with the server down: no keys at all */
	o = verifier(false);
	assert_int_equal(verify(o, t4, NOW_MS, &p, err, sizeof(err)),
			 STATUS_IO);
	assert_non_null(strstr(err, "signing keys"));
	oauth_free(o);
	as_start();
	free(t1);
	free(t2);
	free(t3);
	free(t4);
}

static void
test_introspection(void **state)
{
	struct oauth_settings s = {
		.issuer = issuer,
		.audience = RESOURCE,
		.leeway_s = 60,
		.cache_entries = 16,
		.jwks_refetch_s = 30,
		.timeout_ms = 2000,
		.introspection_client_id = "sextant",
		.introspection_cache_s = 60,
	};
	char url[128], err[256], path[] = "/tmp/test_oauth_secretXXXXXX";
	struct oauth *o = NULL;
	struct oauth_principal p;
	int fd, before;

	(void)state;
	snprintf(url, sizeof(url), "%s/introspect", issuer);
	s.introspection_endpoint = url;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "s3cret\n", 7), 7);
	close(fd);
	s.introspection_client_secret_file = path;
	assert_int_equal(oauth_new(&s, &o, err, sizeof(err)), STATUS_OK);
	unlink(path);

	before = hits(&introspect_hits);
	assert_int_equal(verify(o, "opaque-good", NOW_MS, &p, err, sizeof(err)),
			 STATUS_OK);
	assert_string_equal(p.sub, "alice");
	assert_string_equal(p.client_id, "cli");
	assert_true(oauth_scope_has(p.scope, "sextant:ingest"));
	assert_int_equal(hits(&introspect_hits) - before, 1);
	/* cached: no second call within introspection_cache_s */
	assert_int_equal(
		verify(o, "opaque-good", NOW_MS + 59000, &p, err, sizeof(err)),
		STATUS_OK);
	assert_int_equal(hits(&introspect_hits) - before, 1);
	/* past it: asked again */
	assert_int_equal(
		verify(o, "opaque-good", NOW_MS + 61000, &p, err, sizeof(err)),
		STATUS_OK);
	assert_int_equal(hits(&introspect_hits) - before, 2);

	assert_int_equal(
		verify(o, "opaque-revoked", NOW_MS, &p, err, sizeof(err)),
		STATUS_INVALID);
	assert_non_null(strstr(err, "not active"));
	assert_int_equal(
		verify(o, "opaque-other", NOW_MS, &p, err, sizeof(err)),
		STATUS_INVALID);
	assert_non_null(strstr(err, "(aud)"));
	oauth_free(o);
}

static void
test_jwt_decode(void **state)
{
	json_t *h, *c;
	char err[128];
	char *t = forge("{\"alg\":\"RS256\"}", "{\"a\":1}", "sig");

	(void)state;
	assert_int_equal(
		oauth_jwt_decode(t, strlen(t), &h, &c, err, sizeof(err)),
		STATUS_OK);
	assert_int_equal(json_integer_value(json_object_get(c, "a")), 1);
	json_decref(h);
	json_decref(c);
	free(t);
	static const char *const bad[] = {
		"", "a.b", "a.b.c.d", "..", "!!.b.c", "e30.e30", "W10.e30.x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(oauth_jwt_decode(bad[i], strlen(bad[i]), &h,
						  &c, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(h);
		assert_null(c);
	}
}

static void
test_prm(void **state)
{
	const char *servers[] = {"https://as.example"};
	const char *sc[] = {"sextant:read", "sextant:ingest"};
	struct prm_info i = {RESOURCE, servers, 1, sc, 2, NULL};
	json_t *d = prm_document(&i);
	char *txt, url[128], ch[256];

	(void)state;
	txt = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
		txt,
		"{\"authorization_servers\":[\"https://as.example\"],"
		"\"bearer_methods_supported\":[\"header\"],"
		"\"resource\":\"https://sextant.example/mcp\","
		"\"scopes_supported\":[\"sextant:read\",\"sextant:ingest\"]}");
	free(txt);
	json_decref(d);

	assert_int_equal(prm_url(RESOURCE, url, sizeof(url)), STATUS_OK);
	assert_string_equal(url, "https://sextant.example/.well-known/"
				 "oauth-protected-resource/mcp");
	assert_int_equal(prm_url("http://h:8080/", url, sizeof(url)),
			 STATUS_OK);
	assert_string_equal(
		url, "http://h:8080/.well-known/oauth-protected-resource");
	assert_int_equal(prm_url("ftp://h/mcp", url, sizeof(url)),
			 STATUS_INVALID);
	assert_int_equal(prm_url(RESOURCE, url, 20), STATUS_LIMIT);
	assert_string_equal(url, "");

	/* no credentials: no error code (RFC 6750 3.1) */
	assert_int_equal(prm_challenge(ch, sizeof(ch), "https://m", "a b", NULL,
				       "ignored"),
			 STATUS_OK);
	assert_string_equal(
		ch, "Bearer resource_metadata=\"https://m\", scope=\"a b\"");
	assert_int_equal(prm_challenge(ch, sizeof(ch), "https://m",
				       "sextant:write", "insufficient_scope",
				       "needs \"write\"\\\n"),
			 STATUS_OK);
	assert_string_equal(ch, "Bearer resource_metadata=\"https://m\", "
				"scope=\"sextant:write\", "
				"error=\"insufficient_scope\", "
				"error_description=\"needs ?write???\"");
	assert_int_equal(prm_challenge(ch, 10, "https://m", NULL, NULL, NULL),
			 STATUS_LIMIT);
	assert_string_equal(ch, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_tokens_and_cache),
		cmocka_unit_test(test_negative_table),
		cmocka_unit_test(test_generic_typ_and_bad_settings),
		cmocka_unit_test(test_rotation_and_server_down),
		cmocka_unit_test(test_introspection),
		cmocka_unit_test(test_jwt_decode),
		cmocka_unit_test(test_prm),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

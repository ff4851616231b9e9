/*
 * http.c - the HTTP front end on libmicrohttpd.
 *
 * Every request goes through the same gate before any body is read: the
 * Host and Origin checks against DNS rebinding, the API key, the route
 * and method, Content-Type, Accept and Content-Length.  Bodies are then
 * gathered up to server.max_body_bytes (ingest.max_body_bytes on the OTLP
 * routes) and the route's handler runs.  The access log and the request
 * metrics are written when MHD reports the request complete.
 *
 * Connections: server.max_connections counts those open; one more closes
 * the connection idle the longest (no request under way), so that idle
 * sockets never starve probes and clients.  MHD's own limit sits above,
 * sized by the open-file limit, and is met only when everything is busy.
 * Draining (SIGTERM) keeps accepting: probes are answered until the process
 * exits, new MCP and OTLP requests get 503 (not MHD_quiesce_daemon, which in
 * libmicrohttpd 0.9.75 with an epoll thread pool can abort the process:
 * "Failed to remove listen FD from epoll set").
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/auth.h"
#include "base/buf.h"
#include "oauth/oauth.h"
#include "oauth/prm.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/expo.h"
#include "base/pool.h"
#include "core/server.h"
#include "http/ingest.h"
#include "json/jsondump.h"
#include "json/jsonload.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "pg/pg.h"

static atomic_ullong req_counter;

/* The MCP routes (http_start): one daemon per process. */
static const struct http_routes *routes;

static bool conns_busy(struct MHD_Connection *conn);
static void conns_idle(struct MHD_Connection *conn);

const char *
http_header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Does a comma-separated media-range list admit type? */
bool
http_accepts(const char *accept, const char *type)
{
	const char *p = accept;
	size_t tlen = strlen(type);
	const char *slash = strchr(type, '/');
	size_t major = slash != NULL ? (size_t)(slash - type) : tlen;

	if (accept == NULL || *accept == '\0')
		return true;
	while (*p != '\0') {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ",;");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if ((n == tlen && strncasecmp(p, type, n) == 0) ||
		    (n == 3 && strncmp(p, "*/*", 3) == 0) ||
		    (n == major + 2 && strncasecmp(p, type, major) == 0 &&
		     p[major] == '/' && p[major + 1] == '*'))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

enum MHD_Result
http_queue(struct req *r, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result ret;

	MHD_add_response_header(resp, "X-Request-Id", r->rid);
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	r->replied = true;
	r->status = status;
	return ret;
}

static enum MHD_Result
reply_with(struct req *r, unsigned status, const char *ctype,
	   struct MHD_Response *resp, const char *const *headers)
{
	if (resp == NULL)
		return MHD_NO;
	if (ctype != NULL)
		MHD_add_response_header(resp, "Content-Type", ctype);
	for (; headers != NULL && headers[0] != NULL; headers += 2)
		MHD_add_response_header(resp, headers[0], headers[1]);
	return http_queue(r, status, resp);
}

enum MHD_Result
http_reply(struct req *r, unsigned status, const char *ctype, const char *body,
	   size_t len, const char *const *headers)
{
	return reply_with(r, status, ctype,
			  MHD_create_response_from_buffer(
				  len, (void *)body, MHD_RESPMEM_MUST_COPY),
			  headers);
}

enum MHD_Result
http_reply_owned(struct req *r, unsigned status, const char *ctype, char *body,
		 size_t len, const char *const *headers)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		len, body, MHD_RESPMEM_MUST_FREE);

	if (resp == NULL)
		free(body);
	return reply_with(r, status, ctype, resp, headers);
}

void
http_set_rpc_id(struct req *r, const json_t *msg)
{
	const json_t *id = NULL;
	const char *why;

	if (!json_is_object(msg))
		return; /* a batch: its errors are the batch's, id null */
	switch (rpc_classify(msg, &why, &id)) {
	case RPC_REQUEST: id = json_object_get(msg, "id"); break;
	case RPC_INVALID: break; /* the id, when one could be read */
	default: return;	 /* a response's id is not ours to answer */
	}
	if (!json_is_string(id) && !json_is_number(id))
		return;
	json_decref(r->rpc_id);
	r->rpc_id = json_deep_copy(id);
}

enum MHD_Result
http_reply_rpc_error(struct req *r, unsigned status, int code,
		     const char *message, const char *const *headers)
{
	json_t *err = rpc_error(r->rpc_id, code, message, NULL);
	char *text = err != NULL ? jsondump(err, JSON_COMPACT) : NULL;
	enum MHD_Result ret;

	json_decref(err);
	if (text == NULL)
		return MHD_NO;
	ret = http_reply(r, status, "application/json", text, strlen(text),
			 headers);
	free(text);
	return ret;
}

/* --- DNS-rebinding defence --------------------------------------------- */

static bool
is_loopback_host(const char *h, size_t n)
{
	return (n == 9 && strncasecmp(h, "localhost", 9) == 0) ||
	       (n >= 9 && strncmp(h, "127.", 4) == 0 &&
		strspn(h, "0123456789.") == n) ||
	       (n == 5 && strncmp(h, "[::1]", 5) == 0) ||
	       (n == 3 && strncmp(h, "::1", 3) == 0);
}

/* Splits "host[:port]" / "[v6]:port": returns the host's length. */
static size_t
host_part(const char *hostport)
{
	if (hostport[0] == '[') {
		const char *end = strchr(hostport, ']');

		return end != NULL ? (size_t)(end - hostport) + 1
				   : strlen(hostport);
	}
	return strcspn(hostport, ":");
}

static bool
listed(const struct strlist *l, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strlen(l->v[i]) == n && strncasecmp(l->v[i], s, n) == 0)
			return true;
	return false;
}

/* Host must name us when listening on loopback (or be listed). */
static bool
host_allowed(const struct server *srv, const char *host)
{
	const struct strlist *l = &srv->cfg->server.allowed_hosts;
	size_t n;

	if (host == NULL)
		return !srv->loopback && l->n == 0;
	n = host_part(host);
	if (listed(l, host, strlen(host)) || listed(l, host, n))
		return true;
	if (srv->loopback)
		return is_loopback_host(host, n);
	return l->n == 0;
}

/* A present Origin must be a loopback origin (when we listen on
 * loopback) or listed; no Origin (non-browser clients) is fine. */
static bool
origin_allowed(const struct server *srv, const char *origin)
{
	const char *h;

	if (origin == NULL)
		return true;
	if (listed(&srv->cfg->server.allowed_origins, origin, strlen(origin)))
		return true;
	if (!srv->loopback)
		return false;
	if (strncasecmp(origin, "http://", 7) == 0)
		h = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		h = origin + 8;
	else
		return false;
	return is_loopback_host(h, host_part(h));
}

/* --- routes ------------------------------------------------------------ */

static enum MHD_Result
serve_metrics(struct req *r)
{
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;

	if (expo_render(r->srv->expo, &text, &len) != STATUS_OK)
		return http_reply(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "text/plain", "metrics unavailable\n", 20,
				  NULL);
	ret = http_reply(r, MHD_HTTP_OK, "text/plain; version=0.0.4", text, len,
			 NULL);
	free(text);
	return ret;
}

static enum MHD_Result
serve_health(struct req *r, bool ready)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	static const char draining[] = "{\"status\":\"draining\"}";
	static const char nodb[] = "{\"status\":\"database unavailable\"}";

	if (ready && atomic_load(&r->srv->draining))
		return http_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "application/json", draining,
				  sizeof(draining) - 1, NULL);
	if (ready && r->srv->pg != NULL && !pg_pool_ready(r->srv->pg))
		return http_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "application/json", nodb, sizeof(nodb) - 1,
				  NULL);
	return http_reply(r, MHD_HTTP_OK, "application/json", ok,
			  sizeof(ok) - 1, NULL);
}

enum route {
	ROUTE_MCP,
	ROUTE_SSE,	/* 2024-11-05 HTTP+SSE: the stream */
	ROUTE_MESSAGES, /* 2024-11-05 HTTP+SSE: client messages */
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_TRACES,
	ROUTE_METRIC_POINTS,
	ROUTE_REST, /* /api/...: the REST facade (routes->rest) */
	ROUTE_PRM,  /* RFC 9728 metadata: open, served with [auth.oauth] */
	ROUTE_UI,   /* /ui/...: the web console's files (routes->ui) */
	ROUTE_NONE,
};

static const char *const route_labels[] = {
	"/mcp",	      "/sse",
	"/messages",  "/healthz",
	"/readyz",    "/metrics",
	"/v1/traces", "/v1/metrics",
	"/api",	      "/.well-known/oauth-protected-resource",
	"/ui",	      "other"};

static enum route
route_of(const char *url)
{
	if (strcmp(url, "/mcp") == 0 || strcmp(url, "/mcp/") == 0)
		return ROUTE_MCP;
	if (strcmp(url, "/sse") == 0)
		return ROUTE_SSE;
	if (strcmp(url, "/messages") == 0 || strcmp(url, "/messages/") == 0)
		return ROUTE_MESSAGES;
	if (strcmp(url, "/healthz") == 0)
		return ROUTE_HEALTHZ;
	if (strcmp(url, "/readyz") == 0)
		return ROUTE_READYZ;
	if (strcmp(url, "/metrics") == 0)
		return ROUTE_METRICS;
	if (strcmp(url, "/v1/traces") == 0)
		return ROUTE_TRACES;
	if (strcmp(url, "/v1/metrics") == 0)
		return ROUTE_METRIC_POINTS;
	if (strncmp(url, "/api/", 5) == 0 && routes->rest != NULL)
		return ROUTE_REST;
	/* the root form and the one suffixed with /mcp (RFC 9728 3.1) */
	if (strcmp(url, "/.well-known/oauth-protected-resource") == 0 ||
	    strcmp(url, "/.well-known/oauth-protected-resource/mcp") == 0)
		return ROUTE_PRM;
	if ((strcmp(url, "/ui") == 0 || strncmp(url, "/ui/", 4) == 0) &&
	    routes->ui != NULL)
		return ROUTE_UI;
	return ROUTE_NONE;
}

/* The first HTTP_MAX_CLIENTS client ids seen are their own metric label,
 * later ones "other": /metrics stays bounded whoever registers clients. */
#define HTTP_MAX_CLIENTS 100
static struct {
	pthread_mutex_t mu;
	char ids[HTTP_MAX_CLIENTS][64];
	size_t n;
} clients = {.mu = PTHREAD_MUTEX_INITIALIZER};

void
http_client_label(const char *client_id, char *out, size_t outlen)
{
	size_t i;

	if (client_id == NULL || client_id[0] == '\0') {
		snprintf(out, outlen, "%s", "");
		return;
	}
	pthread_mutex_lock(&clients.mu);
	for (i = 0; i < clients.n; i++)
		if (strncmp(clients.ids[i], client_id,
			    sizeof(clients.ids[i]) - 1) == 0)
			break;
	if (i == clients.n && clients.n < HTTP_MAX_CLIENTS)
		snprintf(clients.ids[clients.n++], sizeof(clients.ids[0]), "%s",
			 client_id);
	snprintf(out, outlen, "%s", i < clients.n ? clients.ids[i] : "other");
	pthread_mutex_unlock(&clients.mu);
}

/*
 * The credential of an API key (the caller holds the live read lock):
 * false when token is none of the keys.  A key naming scopes has those
 * only; *lacks is then scope_read if it is not among them, else NULL.
 */
static bool
key_credential(struct req *r, const char *token, size_t len, const char **lacks)
{
	const struct config *cfg = r->srv->cfg;
	long i = auth_keys_find(r->srv->keys, token, len);
	const char *scopes;

	*lacks = NULL;
	if (i < 0)
		return false;
	scopes = auth_keys_scopes(r->srv->keys, (size_t)i);
	auth_keys_id(r->srv->keys, (size_t)i, r->owner);
	snprintf(r->principal, sizeof(r->principal), "%s", r->owner);
	snprintf(r->client, sizeof(r->client), "apikey");
	snprintf(r->scope, sizeof(r->scope), "%s",
		 scopes != NULL ? scopes : "");
	r->read_only = scopes != NULL &&
		       !oauth_scope_has(scopes, cfg->oauth.scope_write);
	if (scopes != NULL && !oauth_scope_has(scopes, cfg->oauth.scope_read))
		*lacks = cfg->oauth.scope_read;
	return true;
}

/* The credential of a verified access token: its sessions are bound to
 * sub and client_id together (MCP authorization: bind sessions to the
 * principal), hashed to a fixed length. */
static void
token_credential(struct req *r, const struct oauth_principal *p)
{
	snprintf(r->owner, sizeof(r->owner), "tok:%s", p->id);
	snprintf(r->principal, sizeof(r->principal), "%.39s/%.39s", p->sub,
		 p->client_id);
	http_client_label(p->client_id, r->client, sizeof(r->client));
	memcpy(r->scope, p->scope, sizeof(r->scope));
	r->read_only =
		!oauth_scope_has(p->scope, r->srv->cfg->oauth.scope_write);
}

/* Without [auth.oauth]: 0 when no key is configured or a key is
 * presented, MHD_HTTP_UNAUTHORIZED, or MHD_HTTP_FORBIDDEN for a key whose
 * scopes leave out scope_read. */
static unsigned
auth_check(struct req *r)
{
	const char *hdr = http_header(r, "Authorization");
	const char *token, *lacks = NULL;
	size_t len;
	unsigned status = 0;

	server_live_rdlock(r->srv);
	if (r->srv->keys != NULL && auth_keys_count(r->srv->keys) > 0 &&
	    (hdr == NULL || auth_parse_bearer(hdr, &token, &len) != STATUS_OK ||
	     !key_credential(r, token, len, &lacks)))
		status = MHD_HTTP_UNAUTHORIZED;
	server_live_unlock(r->srv);
	return status == 0 && lacks != NULL ? MHD_HTTP_FORBIDDEN : status;
}

void
http_scope_why(char *out, size_t cap, const char *tool, const char *scope)
{
	snprintf(out, cap,
		 "tool %s needs scope %s, which this credential lacks: "
		 "authorize again asking for it",
		 tool, scope);
}

int
http_scope_challenge(const struct req *r, const char *needed,
		     const char *description, char *out, size_t cap)
{
	const struct config *cfg = r->srv->cfg;
	const char *named[] = {cfg->oauth.scope_read, cfg->oauth.scope_ingest,
			       cfg->oauth.scope_write};
	char scope[2 * OAUTH_MAX_SCOPE + 128];
	struct buf b;
	char *text = NULL;
	size_t len;
	int n;

	/* RFC 6750 3: scope is a space-delimited list; the credential's own
	 * first, then the missing one unless it is there already.  A held
	 * scope that is the short name of a configured one in URI form
	 * (Entra ID's scp) is named as configured: the name a client asks
	 * its provider for */
	buf_init(&b, sizeof(scope) - 1);
	for (const char *p = r->scope; *p != '\0';) {
		size_t k = strcspn(p, " "), i;

		for (i = 0; i < 3; i++) {
			const char *sn = oauth_scope_short(named[i]);

			if (sn != NULL && strlen(sn) == k &&
			    memcmp(sn, p, k) == 0)
				break;
		}
		if (b.len > 0)
			buf_puts(&b, " ");
		if (i < 3)
			buf_puts(&b, named[i]);
		else
			buf_append(&b, p, k);
		p += k;
		p += strspn(p, " ");
	}
	if (!oauth_scope_has(r->scope, needed)) {
		if (b.len > 0)
			buf_puts(&b, " ");
		buf_puts(&b, needed);
	}
	if (buf_finish(&b, &text, &len) == STATUS_OK)
		snprintf(scope, sizeof(scope), "%s", text);
	else
		snprintf(scope, sizeof(scope), "%s", needed);
	free(text);
	buf_free(&b);
	/* RFC 6749 3.3: a scope token has no quote, backslash or control
	 * byte; one from a token's claim must not end the quoted string */
	for (char *c = scope; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
			*c = ' ';
	if (r->srv->oauth_prm_url[0] != '\0')
		return prm_challenge(out, cap, r->srv->oauth_prm_url, scope,
				     "insufficient_scope", description);
	/* API keys only: no metadata to point at */
	n = snprintf(out, cap,
		     "Bearer realm=\"sextant\", scope=\"%s\", "
		     "error=\"insufficient_scope\"",
		     scope);
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			out[0] = '\0';
		return STATUS_LIMIT;
	}
	return STATUS_OK;
}

static enum MHD_Result refuse(struct req *r, enum route route, unsigned status,
			      int code, const char *msg,
			      const char *const *headers);

/* A 401, 400 or 403 of the OAuth gate: the Bearer challenge with the
 * metadata URL (MCP authorization, RFC 9728 5.1), and the same words in
 * the JSON-RPC error body (problem+json on /api/). */
static enum MHD_Result
oauth_refuse(struct req *r, enum route route, unsigned status,
	     const char *error, const char *why)
{
	const struct config *cfg = r->srv->cfg;
	char ch[1024], msg[512];

	if (prm_challenge(ch, sizeof(ch), r->srv->oauth_prm_url,
			  cfg->oauth.scope_read, error, why) != STATUS_OK)
		snprintf(ch, sizeof(ch), "Bearer resource_metadata=\"%s\"",
			 r->srv->oauth_prm_url);
	snprintf(msg, sizeof(msg), "%s: %s",
		 status == MHD_HTTP_FORBIDDEN	  ? "forbidden"
		 : status == MHD_HTTP_BAD_REQUEST ? "bad request"
						  : "unauthorized",
		 why);
	return refuse(r, route, status, RPC_SERVER_BUSY, msg,
		      (const char *[]){"WWW-Authenticate", ch, NULL});
}

/*
 * The gate with [auth.oauth]: an API key (when keys are configured) or an
 * access token for this resource holding scope_read.  MCP authorization:
 * 401 without a token or with a bad one, 403 insufficient_scope, 400 for a
 * malformed header; a token in the query string is never accepted (OAuth
 * 2.1 5.2 drops RFC 6750's URI query form): 400 saying so.
 */
static bool
oauth_gate(struct req *r, enum route route, enum MHD_Result *ret)
{
	struct server *srv = r->srv;
	const struct config *cfg = srv->cfg;
	const char *hdr = http_header(r, "Authorization"), *token;
	struct oauth_principal p;
	const char *lacks = NULL;
	char why[300];
	size_t len;
	bool key_ok;
	int rc;

	if (MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					"access_token") != NULL) {
		*ret = oauth_refuse(r, route, MHD_HTTP_BAD_REQUEST,
				    "invalid_request",
				    "access_token in the query string is "
				    "refused (it ends up in logs): send "
				    "Authorization: Bearer <token>");
		return false;
	}
	if (hdr == NULL) {
		*ret = oauth_refuse(r, route, MHD_HTTP_UNAUTHORIZED, NULL,
				    "send Authorization: Bearer <access "
				    "token>; the resource metadata names the "
				    "authorization server");
		return false;
	}
	if (auth_parse_bearer(hdr, &token, &len) != STATUS_OK) {
		*ret = oauth_refuse(r, route, MHD_HTTP_BAD_REQUEST,
				    "invalid_request",
				    "malformed Authorization header: expected "
				    "\"Bearer <token>\"");
		return false;
	}
	server_live_rdlock(srv);
	key_ok = srv->keys != NULL && auth_keys_count(srv->keys) > 0 &&
		 key_credential(r, token, len, &lacks);
	server_live_unlock(srv);
	if (key_ok && lacks != NULL) {
		snprintf(why, sizeof(why), "the API key lacks scope %s", lacks);
		*ret = oauth_refuse(r, route, MHD_HTTP_FORBIDDEN,
				    "insufficient_scope", why);
		return false;
	}
	if (key_ok)
		return true;
	rc = oauth_verify(srv->oauth, token, len, clock_wall_ms(), &p, why,
			  sizeof(why));
	if (rc == STATUS_IO) {
		/* Not the token's fault: a 401 would have the client drop a
		 * good token and send its user through the authorization
		 * server that is down; 503 says retry (RFC 9110 15.6.4).  The
		 * detail names the issuer's URL: the log only. */
		log_warn(&(struct log_fields){.request_id = r->rid,
					      .duration_ms = -1},
			 "access token not checked: %s", why);
		*ret = refuse(r, route, MHD_HTTP_SERVICE_UNAVAILABLE,
			      RPC_SERVER_BUSY,
			      "the authorization server could not be reached: "
			      "retry later",
			      (const char *[]){"Retry-After", "5", NULL});
		return false;
	}
	if (rc != STATUS_OK) {
		*ret = oauth_refuse(r, route, MHD_HTTP_UNAUTHORIZED,
				    "invalid_token", why);
		return false;
	}
	token_credential(r, &p);
	if (!oauth_scope_has(p.scope, cfg->oauth.scope_read)) {
		snprintf(why, sizeof(why), "the token lacks scope %s",
			 cfg->oauth.scope_read);
		*ret = oauth_refuse(r, route, MHD_HTTP_FORBIDDEN,
				    "insufficient_scope", why);
		return false;
	}
	return true;
}

/* A refusal of the gate: a JSON-RPC error, or on /api/ the facade's
 * problem+json. */
static enum MHD_Result
refuse(struct req *r, enum route route, unsigned status, int code,
       const char *msg, const char *const *headers)
{
	if (route == ROUTE_REST)
		return routes->rest_refuse(r, status, msg, headers);
	return http_reply_rpc_error(r, status, code, msg, headers);
}

static enum MHD_Result
draining_reply(struct req *r, enum route route)
{
	return refuse(r, route, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
		      "the server is shutting down: retry on another instance",
		      (const char *[]){"Retry-After", "1", "Connection",
				       "close", NULL});
}

/* A POST that came during the drain, body read: 503 with its id. */
static enum MHD_Result
draining_refuse(struct req *r, enum route route)
{
	json_t *body = NULL;
	json_error_t jerr;

	if (buf_error(&r->body) == STATUS_OK && r->body.len > 0)
		body = jsonload(r->body.data, r->body.len, &jerr);
	http_set_rpc_id(r, body);
	json_decref(body);
	return draining_reply(r, route);
}

/* A Content-Length past server.max_body_bytes is refused before a byte is
 * read, as a body past max is. */
static void
length_check(struct req *r)
{
	const char *clen = http_header(r, "Content-Length");
	char *end;
	unsigned long long n;

	if (clen == NULL)
		return;
	n = strtoull(clen, &end, 10);
	if (*end == '\0' &&
	    n > (unsigned long long)r->srv->cfg->server.max_body_bytes)
		buf_set_error(&r->body, STATUS_LIMIT);
}

/* The checks made before any body is read.  Returns true when the
 * request may go on; otherwise a response was queued in *ret. */
static bool
gate(struct req *r, enum route route, enum MHD_Result *ret)
{
	struct server *srv = r->srv;
	const char *ctype, *origin = http_header(r, "Origin");
	unsigned key_status = 0;

	if (!host_allowed(srv, http_header(r, "Host")) ||
	    (!origin_allowed(srv, origin) &&
	     !(route == ROUTE_REST && routes->rest_origin(r, origin)))) {
		*ret = refuse(
			r, route, MHD_HTTP_FORBIDDEN, RPC_SERVER_BUSY,
			"forbidden: this Host or Origin is not allowed (DNS "
			"rebinding protection); list it in "
			"server.allowed_hosts or server.allowed_origins",
			NULL);
		return false;
	}
	if (route == ROUTE_NONE) {
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, RPC_SERVER_BUSY,
			"not found: the MCP endpoint is /mcp (2024-11-05 "
			"clients: GET /sse); OTLP/HTTP goes to /v1/traces and "
			"/v1/metrics; /healthz, /readyz and /metrics serve "
			"operators",
			NULL);
		return false;
	}
	if (route == ROUTE_TRACES || route == ROUTE_METRIC_POINTS)
		return ingest_gate(r, route == ROUTE_TRACES, ret);
	if (route == ROUTE_PRM && srv->oauth_prm == NULL) {
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, RPC_SERVER_BUSY,
			"not found: OAuth is off ([auth.oauth] enabled)", NULL);
		return false;
	}
	if (route != ROUTE_MCP && route != ROUTE_SSE &&
	    route != ROUTE_MESSAGES && route != ROUTE_REST) {
		if (r->method != HTTP_GET) {
			*ret = http_reply_rpc_error(
				r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_BUSY,
				"method not allowed: use GET",
				(const char *[]){"Allow", "GET", NULL});
			return false;
		}
		return true;
	}
	/* a CORS preflight carries no credentials (Fetch, 4.8) */
	if (srv->oauth != NULL &&
	    !(route == ROUTE_REST && r->method == HTTP_OPTIONS) &&
	    !oauth_gate(r, route, ret))
		return false;
	if (srv->oauth == NULL &&
	    !(route == ROUTE_REST && r->method == HTTP_OPTIONS))
		key_status = auth_check(r);
	if (key_status == MHD_HTTP_FORBIDDEN) {
		char why[160];

		snprintf(why, sizeof(why),
			 "forbidden: the API key lacks scope %s",
			 srv->cfg->oauth.scope_read);
		*ret = refuse(r, route, MHD_HTTP_FORBIDDEN, RPC_SERVER_BUSY,
			      why, NULL);
		return false;
	}
	if (key_status == MHD_HTTP_UNAUTHORIZED) {
		bool presented = http_header(r, "Authorization") != NULL;

		*ret = refuse(
			r, route, MHD_HTTP_UNAUTHORIZED, RPC_SERVER_BUSY,
			presented ? "unauthorized: the API key is not valid"
				  : "unauthorized: send Authorization: Bearer "
				    "<api key>",
			(const char *[]){"WWW-Authenticate",
					 presented
						 ? "Bearer realm=\"sextant\", "
						   "error=\"invalid_token\""
						 : "Bearer realm=\"sextant\"",
					 NULL});
		return false;
	}
	if (r->over_limit) {
		*ret = refuse(
			r, route, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
			"server busy: every connection "
			"(server.max_connections) has a request under way; "
			"retry in a second",
			(const char *[]){"Retry-After", "1", "Connection",
					 "close", NULL});
		return false;
	}
	if (atomic_load(&srv->draining)) {
		/* a POST is answered once its body is in, with its id */
		if (r->method == HTTP_POST) {
			r->drain_refused = true;
			return true;
		}
		*ret = draining_reply(r, route);
		return false;
	}
	if (r->method != HTTP_POST)
		return true;
	if (route == ROUTE_REST) { /* its types and Accept: rest.c */
		length_check(r);
		return true;
	}
	ctype = http_header(r, "Content-Type");
	if (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0 ||
	    (ctype[16] != '\0' && ctype[16] != ';' && ctype[16] != ' ')) {
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, RPC_SERVER_BUSY,
			"unsupported Content-Type: POST a JSON-RPC message as "
			"application/json",
			NULL);
		return false;
	}
	if (!http_accepts(http_header(r, "Accept"), "application/json") &&
	    !http_accepts(http_header(r, "Accept"), "text/event-stream")) {
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_ACCEPTABLE, RPC_SERVER_BUSY,
			"not acceptable: send Accept: application/json, "
			"text/event-stream",
			NULL);
		return false;
	}
	length_check(r);
	return true;
}

static enum MHD_Result
body_too_large(struct req *r, enum route route)
{
	char msg[160];

	if (route == ROUTE_TRACES || route == ROUTE_METRIC_POINTS)
		return ingest_too_large(r);
	snprintf(msg, sizeof(msg),
		 "request body too large: the limit is %lld bytes "
		 "(server.max_body_bytes)",
		 (long long)r->srv->cfg->server.max_body_bytes);
	return refuse(r, route, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST,
		      msg, (const char *[]){"Connection", "close", NULL});
}

static struct req *
req_new(struct server *srv, struct MHD_Connection *conn, const char *method)
{
	struct req *r = calloc(1, sizeof(*r));
	unsigned long long n;

	if (r == NULL)
		return NULL;
	r->srv = srv;
	r->conn = conn;
	r->start_us = clock_mono_us();
	n = atomic_fetch_add(&req_counter, 1);
	snprintf(r->rid, sizeof(r->rid), "%016llx", n);
	buf_init(&r->body, (size_t)srv->cfg->server.max_body_bytes);
	if (strcmp(method, "POST") == 0)
		r->method = HTTP_POST;
	else if (strcmp(method, "GET") == 0)
		r->method = HTTP_GET;
	else if (strcmp(method, "DELETE") == 0)
		r->method = HTTP_DELETE;
	else if (strcmp(method, "HEAD") == 0)
		r->method = HTTP_HEAD;
	else if (strcmp(method, "OPTIONS") == 0)
		r->method = HTTP_OPTIONS;
	else
		r->method = HTTP_OTHER;
	expo_inc(srv->m.inflight);
	return r;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url,
	   const char *method, const char *version, const char *upload_data,
	   size_t *upload_data_size, void **con_cls)
{
	struct server *srv = cls;
	struct req *r = *con_cls;
	enum MHD_Result ret = MHD_YES;
	enum route route = route_of(url);

	(void)version;
	if (r != NULL)
		r->url = url;
	if (r == NULL) {
		r = req_new(srv, conn, method);
		if (r == NULL)
			return MHD_NO;
		*con_cls = r;
		r->url = url;
		r->route = route_labels[route];
		r->over_limit = conns_busy(conn);
		if (!gate(r, route, &ret))
			return ret;
		if (buf_error(&r->body) != STATUS_OK)
			return body_too_large(r, route);
		return MHD_YES;
	}
	if (r->replied) {
		*upload_data_size = 0; /* discard the rest */
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* past max (or out of memory) the rest is dropped: answered
		 * once the body is all in */
		buf_append(&r->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (buf_error(&r->body) != STATUS_OK)
		return body_too_large(r, route);
	if (r->drain_refused)
		return draining_refuse(r, route);
	switch (route) {
	case ROUTE_MCP: return routes->mcp(r);
	case ROUTE_SSE: return routes->sse(r);
	case ROUTE_MESSAGES: return routes->messages(r);
	case ROUTE_HEALTHZ: return serve_health(r, false);
	case ROUTE_READYZ: return serve_health(r, true);
	case ROUTE_METRICS: return serve_metrics(r);
	case ROUTE_TRACES: return ingest_handle(r, true);
	case ROUTE_METRIC_POINTS: return ingest_handle(r, false);
	case ROUTE_REST: return routes->rest(r);
	case ROUTE_PRM:
		return http_reply(r, MHD_HTTP_OK, "application/json",
				  r->srv->oauth_prm, strlen(r->srv->oauth_prm),
				  NULL);
	case ROUTE_UI: return routes->ui(r);
	case ROUTE_NONE: break;
	}
	return MHD_NO;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	     enum MHD_RequestTerminationCode toe)
{
	struct server *srv = cls;
	struct req *r = *con_cls;
	char code[8];
	double ms;

	if (r == NULL)
		return;
	*con_cls = NULL;
	conns_idle(conn);
	ms = (double)(clock_mono_us() - r->start_us) / 1000.0;
	snprintf(code, sizeof(code), "%u", r->status);
	expo_inc(expo_series(srv->m.http_requests,
			     (const char *[]){r->route, code}));
	if (r->rpc_method[0] != '\0')
		expo_observe(expo_series(srv->m.rpc_duration,
					 (const char *[]){r->rpc_method}),
			     ms / 1000.0);
	expo_dec(srv->m.inflight);
	{
		struct log_fields f = {
			.request_id = r->rid,
			.session = r->session[0] != '\0' ? r->session : NULL,
			.method =
				r->rpc_method[0] != '\0' ? r->rpc_method : NULL,
			.duration_ms = ms,
			.status = (int)r->status,
		};

		/* A client closing an event stream is routine: debug. */
		if (r->status >= 500)
			log_warn(&f, "%s answered with an error", r->route);
		else if (toe == MHD_REQUEST_TERMINATED_WITH_ERROR)
			log_debug(&f, "%s: the client closed the connection",
				  r->route);
		else if (r->principal[0] != '\0')
			log_debug(&f, "%s answered principal=%s", r->route,
				  r->principal);
		else
			log_debug(&f, "%s answered", r->route);
	}
	if (r->tp_free != NULL)
		r->tp_free(r->tp);
	json_decref(r->rpc_id);
	buf_free(&r->body);
	free(r);
}

/* MHD's own messages.  Peers that hang up mid-response are routine
 * (clients close event streams): those go to debug. */
static void mhd_log(void *cls, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	enum log_level level = LOG_LEVEL_WARN;

	(void)cls;
	if (strstr(fmt, "Failed to send") != NULL ||
	    strstr(fmt, "closed by remote") != NULL ||
	    strstr(fmt, "Connection reset") != NULL)
		level = LOG_LEVEL_DEBUG;
	if (log_enabled(level))
		log_vmsg(level, &(struct log_fields){.duration_ms = -1}, fmt,
			 ap);
}

static char *
read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct buf b;
	char chunk[4096];
	size_t n;

	if (f == NULL) {
		snprintf(err, errlen, "cannot open %s: %m", path);
		return NULL;
	}
	buf_init(&b, 1 << 20);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf_append(&b, chunk, n) != STATUS_OK) {
			snprintf(err, errlen, "%s is larger than 1 MiB", path);
			fclose(f);
			buf_free(&b);
			return NULL;
		}
	}
	fclose(f);
	return buf_steal(&b, NULL);
}

/* --- connections --------------------------------------------------- */

/*
 * One per MHD connection (its socket context), from MHD's "started" to its
 * "closed" notification.  An idle connection (no request under way: before
 * its first request, between keep-alive requests) sits on the idle list,
 * the one idle the longest first.  Evicting it shuts its socket down from
 * whichever thread accepted the newcomer; the MHD thread that owns it sees
 * the end of input and closes it.  The fd is valid while conns.mu is held:
 * MHD notifies "closed" (which takes conns.mu) before closing the socket.
 */
struct conn_slot {
	int fd;
	bool idle, evicted, over;
	struct conn_slot *prev, *next; /* idle list */
};

static struct {
	pthread_mutex_t mu;
	struct conn_slot *head, *tail; /* idle, oldest first */
	int open;		       /* counted: not evicted */
	int max;		       /* server.max_connections */
} conns = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void
idle_unlink(struct conn_slot *c)
{
	if (!c->idle)
		return;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		conns.head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		conns.tail = c->prev;
	c->prev = c->next = NULL;
	c->idle = false;
}

static void
idle_push(struct conn_slot *c)
{
	c->prev = conns.tail;
	c->next = NULL;
	if (conns.tail != NULL)
		conns.tail->next = c;
	else
		conns.head = c;
	conns.tail = c;
	c->idle = true;
}

/* Room for one more (conns.mu held): close the connection idle the
 * longest.  False when every other connection has a request under way. */
static bool
evict_idle(const struct conn_slot *keep)
{
	struct conn_slot *victim = conns.head;

	if (victim == keep)
		victim = victim->next;
	if (victim == NULL)
		return false;
	idle_unlink(victim);
	victim->evicted = true;
	conns.open--;
	(void)shutdown(victim->fd, SHUT_RDWR);
	return true;
}

static struct conn_slot *
slot_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info != NULL ? info->socket_context : NULL;
}

static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
	      enum MHD_ConnectionNotificationCode toe)
{
	struct conn_slot *c = *socket_context;
	const union MHD_ConnectionInfo *info;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c == NULL)
			return;
		pthread_mutex_lock(&conns.mu);
		idle_unlink(c);
		if (!c->evicted)
			conns.open--;
		pthread_mutex_unlock(&conns.mu);
		*socket_context = NULL;
		free(c);
		return;
	}
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (info == NULL || (c = calloc(1, sizeof(*c))) == NULL)
		return; /* not counted: MHD's own limit still holds */
	c->fd = info->connect_fd;
	pthread_mutex_lock(&conns.mu);
	conns.open++;
	idle_push(c);
	if (conns.open > conns.max)
		c->over = !evict_idle(c);
	pthread_mutex_unlock(&conns.mu);
	*socket_context = c;
}

/* A request starts on conn: not idle any more.  True when the connection
 * came past server.max_connections with nothing idle to close. */
static bool
conns_busy(struct MHD_Connection *conn)
{
	struct conn_slot *c = slot_of(conn);
	bool over;

	if (c == NULL)
		return false;
	pthread_mutex_lock(&conns.mu);
	idle_unlink(c);
	over = c->over;
	pthread_mutex_unlock(&conns.mu);
	return over;
}

/* The request on conn is complete: idle until the next one. */
static void
conns_idle(struct MHD_Connection *conn)
{
	struct conn_slot *c = slot_of(conn);

	if (c == NULL)
		return;
	pthread_mutex_lock(&conns.mu);
	if (!c->evicted && !c->idle)
		idle_push(c);
	pthread_mutex_unlock(&conns.mu);
}

/*
 * MHD's own connection limit: twice server.max_connections (room for the
 * evicted connections MHD has not closed yet), below the open-file limit
 * less what the rest of the process needs (database pool, logs,
 * upstreams).  When that does not fit, the limit this file keeps is
 * lowered to half of what does, so that eviction starts before MHD stops
 * accepting.
 */
#define HTTP_FD_RESERVE 256

static unsigned
connection_limits(int max_connections)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)max_connections * 2 + 64, room;

	conns.max = max_connections;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return (unsigned)want;
	room = rl.rlim_cur > HTTP_FD_RESERVE + 64
		       ? rl.rlim_cur - HTTP_FD_RESERVE
		       : 64;
	if (want <= room)
		return (unsigned)want;
	if ((rlim_t)max_connections > room / 2) {
		conns.max = (int)(room / 2);
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "server.max_connections lowered from %d to %d: the "
			 "open-file limit is %llu; raise ulimit -n",
			 max_connections, conns.max,
			 (unsigned long long)rl.rlim_cur);
	}
	return (unsigned)room;
}

int
http_start(struct server *srv, const struct http_routes *routes_in, char *err,
	   size_t errlen)
{
	const struct config *cfg = srv->cfg;
	char host[256];
	int port, threads = cfg->server.threads, rc;
	struct addrinfo hints = {0}, *ai = NULL;
	unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD |
			     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	char *cert = NULL, *key = NULL;
	struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};

	routes = routes_in;
	if (config_parse_listen(cfg->server.listen, host, sizeof(host),
				&port) != STATUS_OK) {
		snprintf(err, errlen, "server.listen: cannot parse \"%s\"",
			 cfg->server.listen);
		return STATUS_INVALID;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host[0] != '\0' ? host : NULL, NULL, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen,
			 "server.listen: cannot resolve \"%s\": %s", host,
			 gai_strerror(rc));
		return STATUS_IO;
	}
	if (ai->ai_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ai->ai_addr;

		a->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
		srv->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ai->ai_addr;

		a->sin_port = htons((uint16_t)port);
		srv->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (cfg->server.tls_cert[0] != '\0') {
		if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
			snprintf(err, errlen,
				 "server.tls: this libmicrohttpd "
				 "was built without TLS");
			rc = STATUS_UNSUPPORTED;
			goto out;
		}
		cert = read_file(cfg->server.tls_cert, err, errlen);
		key = cert != NULL ? read_file(cfg->server.tls_key, err, errlen)
				   : NULL;
		if (key == NULL) {
			rc = STATUS_IO;
			goto out;
		}
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
						 cert};
		tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
						 key};
	}
	if (threads <= 0)
		threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads <= 0)
		threads = 1;
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
		ai->ai_addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
		MHD_OPTION_CONNECTION_LIMIT,
		connection_limits(cfg->server.max_connections),
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)cfg->server.connection_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)cfg->server.max_header_bytes,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (srv->daemon == NULL) {
		snprintf(err, errlen,
			 "cannot listen on %s (address in use, or "
			 "not an address of this machine?)",
			 cfg->server.listen);
		rc = STATUS_IO;
		goto out;
	}
	rc = STATUS_OK;
out:
	free(cert);
	free(key);
	freeaddrinfo(ai);
	return rc;
}

int
http_port(struct server *srv)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);

	return info != NULL ? (int)info->port : 0;
}

void
http_stop(struct server *srv)
{
	if (srv->daemon != NULL)
		MHD_stop_daemon(srv->daemon);
	srv->daemon = NULL;
}

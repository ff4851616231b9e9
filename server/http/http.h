/*
 * http.h - the HTTP front end (libmicrohttpd): daemon, routing, request
 * limits, Host/Origin and API-key checks, health and metrics endpoints.
 *
 * MHD runs its own epoll thread(s); no MHD thread ever blocks.  Work that
 * waits (tool calls) suspends its connection, and the front end resumes
 * it when the answer is ready (transport.c).
 */
#ifndef SEXTANT_HTTP_H
#define SEXTANT_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "oauth/oauth.h"

struct server;

/* One HTTP request: MHD's per-request context (con_cls). */
struct req {
	struct server *srv;
	struct MHD_Connection *conn;
	char rid[20];	   /* request id for logs: 16 hex */
	int64_t start_us;  /* monotonic */
	const char *route; /* metric label: "/mcp", "/healthz", ... */
	const char *url; /* MHD's (decoded) path, valid while on_request runs */
	int method;	 /* enum http_method */
	/* an error in it: too large (by Content-Length, or past max) */
	struct buf body;
	bool replied;	     /* a response was queued */
	unsigned status;     /* the HTTP status queued */
	char rpc_method[40]; /* for the access log and metrics, or "" */
	char session[40];    /* for the access log, may be "" */
	/* the JSON-RPC id of the request once read (http_set_rpc_id):
	 * every error answer echoes it; NULL before */
	json_t *rpc_id;
	bool drain_refused; /* draining: answered 503 once the body is in */
	bool over_limit;    /* came past server.max_connections: 503 */
	char principal[80]; /* OAuth sub/client_id for the access log, or "" */
	/* The gate's verdict on the credential.  owner binds the sessions
	 * the request opens: "key:<16 hex>" for an API key (auth_keys_id),
	 * "tok:<32 hex of SHA-256(sub NUL client_id)>" for an access token,
	 * "" without credentials.  read_only: it lacks scope_write (no
	 * write tools).  client: the tool-call metric label (http_client). */
	char owner[40];
	bool read_only;
	char client[64];
	/* the scopes the credential holds, space-separated (the token's
	 * scope claim, a key's list; "" for a key without one): the step-up
	 * challenge names them with the one missing (http_scope_challenge) */
	char scope[OAUTH_MAX_SCOPE];
	/* Transport state, freed with the request (after MHD completes). */
	void *tp;
	void (*tp_free)(void *tp);
};

enum http_method {
	HTTP_GET,
	HTTP_POST,
	HTTP_DELETE,
	HTTP_HEAD,
	HTTP_OPTIONS,
	HTTP_OTHER,
};

/* The MCP routes, served by server/transport/: the front end names no
 * transport, main.c hands them in. */
struct http_routes {
	enum MHD_Result (*mcp)(struct req *r);	    /* /mcp: Streamable HTTP */
	enum MHD_Result (*sse)(struct req *r);	    /* GET /sse (2024-11-05) */
	enum MHD_Result (*messages)(struct req *r); /* POST /messages */
	/* /api/...: the REST facade, which checks its own methods, types
	 * and Accept; NULL: not served */
	enum MHD_Result (*rest)(struct req *r);
	/* the gate's refusals on /api/, as the facade words errors (RFC 9457
	 * problem+json); headers as http_reply's */
	enum MHD_Result (*rest_refuse)(struct req *r, unsigned status,
				       const char *detail,
				       const char *const *headers);
	/* Origin values the facade serves besides server.allowed_origins */
	bool (*rest_origin)(struct req *r, const char *origin);
	/* GET /ui/...: the web console's files; NULL: not served */
	enum MHD_Result (*ui)(struct req *r);
};

/* Starts the daemon on cfg's listen address, serving routes (borrowed:
 * static, outlives the daemon).  STATUS_IO with a message in
 * err when the address cannot be bound or TLS files cannot be read. */
int http_start(struct server *srv, const struct http_routes *routes, char *err,
	       size_t errlen) WUR;
void http_stop(struct server *srv);
/* The tool-call metric label of a client_id: itself for the first 100
 * distinct ids the process sees, then "other" (bounded cardinality); ""
 * for none.  Thread-safe. */
void http_client_label(const char *client_id, char *out, size_t outlen);
/* The port actually bound (useful with port 0). */
int http_port(struct server *srv);

/*
 * Queues a response.  body: copied; headers: NULL-terminated name, value
 * pairs (may be NULL).  Returns MHD's result for the access handler.
 */
enum MHD_Result http_reply(struct req *r, unsigned status, const char *ctype,
			   const char *body, size_t len,
			   const char *const *headers);
/* The same, handing body (malloc'd) to MHD, which frees it. */
enum MHD_Result http_reply_owned(struct req *r, unsigned status,
				 const char *ctype, char *body, size_t len,
				 const char *const *headers);
/* A JSON-RPC error body with an HTTP status; its id is the request's once
 * read (http_set_rpc_id), else null. */
enum MHD_Result http_reply_rpc_error(struct req *r, unsigned status, int code,
				     const char *message,
				     const char *const *headers);
/* Queues resp (destroyed here) with the common headers added. */
enum MHD_Result http_queue(struct req *r, unsigned status,
			   struct MHD_Response *resp);
const char *http_header(struct req *r, const char *name);
/* Records the id of msg (borrowed; copied), the JSON-RPC request r carries,
 * for the error answers that follow.  Only a request's id (or an invalid
 * request's, when one could be read): a batch, a notification or a
 * response leave the id null. */
void http_set_rpc_id(struct req *r, const json_t *msg);

/*
 * The WWW-Authenticate value of a 403 for a request whose credential lacks
 * scope needed (MCP authorization 2025-11-25, "Scope Challenge Handling"):
 * Bearer error="insufficient_scope", scope= the scopes r's credential
 * holds plus needed (the specification's recommended approach: existing
 * and new, so the client's new grant loses nothing), resource_metadata
 * when [auth.oauth] is on, and description.  STATUS_LIMIT when out is too
 * small (out is "" then).
 */
int http_scope_challenge(const struct req *r, const char *needed,
			 const char *description, char *out, size_t cap) WUR;

/* "tool <tool> needs scope <scope>, which this credential lacks: ..."
 * into out: the words of a step-up refusal, in its challenge and body. */
void http_scope_why(char *out, size_t cap, const char *tool, const char *scope);

/* True when Accept admits type ("application/json", ...): a missing
 * Accept, * / * and type/ * count. */
bool http_accepts(const char *accept, const char *type);

#endif

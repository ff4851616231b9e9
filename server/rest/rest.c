/*
 * rest.c - the REST facade (see rest.h).
 *
 * A tool call made over REST is a 2026-07-28 request in all but its
 * framing: it gets a request-scoped session (session_create_request, in
 * srv->requests), its arguments are checked by the tool's inputSchema as
 * tools/call checks them, and call_start runs it on the worker pool while
 * the connection is parked (MHD suspend).  The answer comes back through
 * this file's exchange, which keeps the JSON-RPC response and resumes the
 * connection; rest_handle then turns it into HTTP.  The janitor's call
 * timeout covers these sessions as it covers MCP's.
 *
 * A suspended connection is not polled by MHD, so a client that hangs up
 * would go unnoticed until the answer: one watcher thread polls the
 * sockets of parked requests for POLLRDHUP and deletes the session of a
 * request whose client is gone, which cancels its call and its SQL.
 *
 * Locking: a call's done/parked/answer are guarded by its session's
 * mutex, as transport.c guards its exchanges; the watch list has its own
 * mutex, never taken while a session mutex is held.
 */
#include "rest/rest.h"

#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "base/auth.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/expo.h"
#include "base/log.h"
#include "core/server.h"
#include "http/http.h"
#include "json/jsondump.h"
#include "json/jsonload.h"
#include "json/jsonschema.h"
#include "mcp/call.h"
#include "mcp/exchange.h"
#include "mcp/reqmeta.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "mcp/tools.h"
#include "rest/openapi.h"
#include "rest/params.h"
#include "rest/routes.h"

#define PROBLEM_BASE "https://sextant.dev/problems/"
/* Answers shorter than this go out as they are: gzip's header and
 * trailer would eat most of the gain. */
#define GZIP_MIN 1024
/* Absolute ranges do not change once written; a minute bounds how long a
 * late span stays unseen by a cache. */
#define MAX_AGE_ABSOLUTE "private, max-age=60"
/* Parked requests the watcher polls at once; more wait their turn. */
#define WATCH_MAX     1024
#define WATCH_POLL_MS 100

enum kind {
	K_TOOL,	 /* POST /api/v1/tools/{name} */
	K_GET,	 /* a resource GET of rest_routes */
	K_KIALI, /* POST /api/chat/mcp/{tool_name} */
};

/* r->tp of a request with a call: the exchange the call answers into. */
struct rest_call {
	struct exchange base; /* first */
	struct server *srv;
	struct session *s; /* reference, released with the exchange */
	struct MHD_Connection *conn;
	int fd;
	enum kind kind;
	bool view_text;
	bool names_object; /* the arguments name one trace or session */
	char tool[128];
	char cache[32];	  /* Cache-Control of a 200 */
	char cursor_q[8]; /* "cursor" when the tool pages, else "" */
	int64_t start_ms;
	/* under s->mu until done, then the request's */
	bool parked, done;
	json_t *answer;	   /* the JSON-RPC response; NULL: none (cancelled) */
	unsigned status;   /* decide(): the HTTP status */
	const char *slug;  /* a problem's type, NULL: the status's */
	const char *ctype; /* a 200's Content-Type */
	char *body;	   /* a 200's body, or a problem's detail */
	char *next_cursor; /* query_spans' next page, for Link */
	/* under watch.mu */
	bool watched, hung_up;
	struct rest_call *wprev, *wnext;
};

static struct {
	struct expo_family *requests, *duration;
} m;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rest_call *head;
	struct server *srv;
} watch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL};

/* --- replies ----------------------------------------------------------- */

struct hdrs {
	const char *v[40];
	size_t n;
};

static void
hdr_add(struct hdrs *h, const char *name, const char *value)
{
	if (h->n + 3 <= sizeof(h->v) / sizeof(h->v[0]) && value != NULL) {
		h->v[h->n++] = name;
		h->v[h->n++] = value;
	}
	h->v[h->n] = NULL;
}

bool
rest_origin_allowed(struct req *r, const char *origin)
{
	const struct strlist *l = &r->srv->cfg->rest.allowed_origins;

	if (origin == NULL)
		return false;
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->v[i], origin) == 0)
			return true;
	return false;
}

/* CORS on every answer to a listed origin (Fetch, 3.2.3). */
static void
cors(struct req *r, struct hdrs *h)
{
	const char *origin = http_header(r, "Origin");

	if (!rest_origin_allowed(r, origin))
		return;
	hdr_add(h, "Access-Control-Allow-Origin", origin);
	hdr_add(h, "Access-Control-Expose-Headers",
		"ETag, Link, Retry-After, X-Request-Id, WWW-Authenticate");
	hdr_add(h, "Vary", "Origin");
}

/* The metric and the log line of one answer. */
static void
account(struct req *r, unsigned status, const char *tool)
{
	char code[8];
	double ms = (double)(clock_mono_us() - r->start_us) / 1000.0;

	snprintf(code, sizeof(code), "%u", status);
	expo_inc(expo_series(m.requests, (const char *[]){r->route, code}));
	expo_observe(expo_series(m.duration, (const char *[]){r->route}),
		     ms / 1000.0);
	log_info(&(struct log_fields){.request_id = r->rid,
				      .method = r->route,
				      .tool = tool,
				      .duration_ms = ms,
				      .status = (int)status},
		 "rest %s answered", r->route);
}

/* Does Accept-Encoding admit gzip (a q of 0 refuses it)? */
static bool
wants_gzip(const char *ae)
{
	const char *p = ae;

	while (p != NULL && *p != '\0') {
		size_t n;

		while (*p == ' ' || *p == ',')
			p++;
		n = strcspn(p, ",;");
		if ((n == 4 && strncasecmp(p, "gzip", 4) == 0) ||
		    (n == 1 && *p == '*')) {
			const char *q = p + n;

			while (*q == ' ')
				q++;
			if (*q == ';') {
				q = strstr(q, "q=");
				if (q != NULL && strtod(q + 2, NULL) == 0.0 &&
				    (size_t)(q - p) < strcspn(p, ","))
					return false;
			}
			return true;
		}
		p += strcspn(p, ",");
	}
	return false;
}

/* body gzipped into *out (malloc'd); STATUS_NOMEM or STATUS_IO. */
static int
gzip_body(const char *body, size_t len, char **out, size_t *outlen)
{
	z_stream z = {0};
	uLong cap = compressBound((uLong)len) + 32;
	char *dst = malloc(cap);
	int rc;

	*out = NULL;
	if (dst == NULL)
		return STATUS_NOMEM;
	if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK) {
		free(dst);
		return STATUS_NOMEM;
	}
	z.next_in = (Bytef *)body;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)dst;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(dst);
		return STATUS_IO;
	}
	*out = dst;
	return STATUS_OK;
}

/* Does If-None-Match name etag (or "*")?  Weak comparison (RFC 9110,
 * 13.1.2): W/ prefixes are ignored. */
static bool
etag_matches(const char *inm, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p = inm;

	while (p != NULL && *p != '\0') {
		size_t n;

		while (*p == ' ' || *p == ',')
			p++;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		n = strcspn(p, ",");
		while (n > 0 && p[n - 1] == ' ')
			n--;
		if ((n == 1 && *p == '*') ||
		    (n == elen && strncmp(p, etag, n) == 0))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

/*
 * Sends body (taken) with the facade's conventions: CORS, gzip when
 * accepted and worth it, and on GET/HEAD answers 200 a strong ETag (a
 * hash of the body as sent) and 304 on If-None-Match.  extra: more
 * headers (NULL-terminated pairs; may be NULL).
 */
static enum MHD_Result
send_body(struct req *r, unsigned status, const char *ctype, char *body,
	  size_t len, const char *const *extra, const char *tool)
{
	struct hdrs h = {.n = 0};
	bool get = r->method == HTTP_GET || r->method == HTTP_HEAD;
	char etag[40], hash[AUTH_HASH_LEN + 1];
	char *gz = NULL;
	size_t gzlen = 0;
	enum MHD_Result ret;

	h.v[0] = NULL;
	cors(r, &h);
	for (; extra != NULL && extra[0] != NULL; extra += 2)
		hdr_add(&h, extra[0], extra[1]);
	if (len > GZIP_MIN) {
		hdr_add(&h, "Vary", "Accept-Encoding");
		if (wants_gzip(http_header(r, "Accept-Encoding")) &&
		    gzip_body(body, len, &gz, &gzlen) == STATUS_OK) {
			free(body);
			body = gz;
			len = gzlen;
			hdr_add(&h, "Content-Encoding", "gzip");
		}
	}
	if (get && status == MHD_HTTP_OK &&
	    auth_hash_key(body, len, hash) == STATUS_OK) {
		/* 128 bits of the body's sha256: one per representation,
		 * the gzipped one included */
		snprintf(etag, sizeof(etag), "\"%.32s\"", hash + 7);
		hdr_add(&h, "ETag", etag);
		if (etag_matches(http_header(r, "If-None-Match"), etag)) {
			free(body);
			account(r, MHD_HTTP_NOT_MODIFIED, tool);
			return http_reply(r, MHD_HTTP_NOT_MODIFIED, NULL, "", 0,
					  h.v);
		}
	}
	account(r, status, tool);
	ret = http_reply_owned(r, status, ctype, body, len, h.v);
	return ret;
}

enum MHD_Result
rest_reply(struct req *r, unsigned status, const char *ctype, char *body,
	   size_t len, const char *const *extra)
{
	return send_body(r, status, ctype, body, len, extra, NULL);
}

static const struct {
	unsigned status;
	const char *slug, *title;
} problems[] = {
	{400, "bad-request", "Bad request"},
	{401, "unauthorized", "Unauthorized"},
	{403, "forbidden", "Forbidden"},
	{404, "not-found", "Not found"},
	{405, "method-not-allowed", "Method not allowed"},
	{406, "not-acceptable", "Not acceptable"},
	{413, "body-too-large", "Request body too large"},
	{415, "unsupported-media-type", "Unsupported media type"},
	{422, "tool-error", "The tool answered with an error"},
	{429, "busy", "Too many requests"},
	{500, "internal-error", "Internal error"},
	{503, "busy", "Service unavailable"},
	{504, "timeout", "The tool call timed out"},
};

/*
 * A problem+json answer (RFC 9457): type, title, status, detail, instance
 * (the request path), and errors (stolen; NULL: none).  On Kiali's route,
 * Kiali's {"error": detail}.  slug: NULL for the status's own.
 */
static void url_encode(struct buf *b, const char *s, bool path);

/* Most bytes of the request path a problem's instance repeats. */
#define INSTANCE_MAX 1024

static enum MHD_Result
problem(struct req *r, unsigned status, const char *slug, const char *detail,
	json_t *errors, const char *const *headers, const char *tool)
{
	const char *title = "Error", *type_slug = NULL;
	char type[128];
	bool kiali =
		r->url != NULL && strncmp(r->url, "/api/chat/mcp/", 14) == 0;
	json_t *p;
	char *text;

	for (size_t i = 0; i < sizeof(problems) / sizeof(problems[0]); i++)
		if (problems[i].status == status) {
			title = problems[i].title;
			type_slug = problems[i].slug;
		}
	if (slug != NULL)
		type_slug = slug;
	if (type_slug != NULL)
		snprintf(type, sizeof(type), PROBLEM_BASE "%s", type_slug);
	else
		snprintf(type, sizeof(type), "about:blank");
	if (kiali) {
		json_decref(errors);
		p = json_pack("{s:s}", "error", detail);
	} else {
		/* the path as a URI reference: MHD hands it decoded; a
		 * path past INSTANCE_MAX keeps its first bytes */
		struct buf inst;
		char path[INSTANCE_MAX + 1];

		snprintf(path, sizeof(path), "%s",
			 r->url != NULL ? r->url : "/api/");
		buf_init(&inst, 3 * INSTANCE_MAX + 1);
		url_encode(&inst, path, true);
		buf_append(&inst, "", 1);
		p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type,
			      "title", title, "status", (int)status, "detail",
			      detail, "instance",
			      buf_error(&inst) == STATUS_OK ? inst.data
							    : "/api/");
		buf_free(&inst);
		if (p != NULL && errors != NULL)
			json_object_set_new(p, "errors", errors);
		else
			json_decref(errors);
	}
	text = p != NULL ? jsondump(p, JSON_COMPACT) : NULL;
	json_decref(p);
	if (text == NULL)
		return MHD_NO;
	return send_body(r, status,
			 kiali ? "application/json"
			       : "application/problem+json",
			 text, strlen(text), headers, tool);
}

enum MHD_Result
rest_refuse(struct req *r, unsigned status, const char *detail,
	    const char *const *headers)
{
	return problem(r, status, NULL, detail, NULL, headers, NULL);
}

/* A 400 naming one field. */
static enum MHD_Result
bad_field(struct req *r, const char *slug, const char *field,
	  const char *expected, const char *given, const char *message,
	  const char *tool)
{
	json_t *errors =
		json_pack("[{s:s, s:s, s:s, s:s}]", "field", field, "expected",
			  expected, "given", given, "message", message);

	return problem(r, MHD_HTTP_BAD_REQUEST, slug, message, errors, NULL,
		       tool);
}

/* --- the exchange a call answers into ------------------------------- */

static void
rc_unpark(struct rest_call *c)
{
	if (c->parked) {
		c->parked = false;
		MHD_resume_connection(c->conn);
	}
}

static void
unwatch(struct rest_call *c)
{
	pthread_mutex_lock(&watch.mu);
	if (c->watched) {
		if (c->wprev != NULL)
			c->wprev->wnext = c->wnext;
		else
			watch.head = c->wnext;
		if (c->wnext != NULL)
			c->wnext->wprev = c->wprev;
		c->watched = false;
		pthread_mutex_unlock(&watch.mu);
		exchange_unref(&c->base); /* the list's reference */
		return;
	}
	pthread_mutex_unlock(&watch.mu);
}

static void decide(struct rest_call *c);

static void
rc_deliver(struct rest_call *c, json_t *answer)
{
	unwatch(c);
	c->answer = answer; /* the call's one final answer: nothing races */
	decide(c);
	pthread_mutex_lock(&c->s->mu);
	c->done = true;
	rc_unpark(c);
	pthread_mutex_unlock(&c->s->mu);
}

static void
rc_send(struct exchange *base, json_t *msg, bool final)
{
	if (!final) { /* progress or a log line: REST has no stream */
		json_decref(msg);
		return;
	}
	rc_deliver((struct rest_call *)base, msg);
}

static void
rc_send_text(struct exchange *base, char *text, size_t len)
{
	json_error_t jerr;
	json_t *msg = jsonload(text, len, &jerr);

	free(text);
	rc_deliver((struct rest_call *)base, msg);
}

static int
rc_drop(struct exchange *base)
{
	(void)base;
	return STATUS_UNSUPPORTED;
}

static void
rc_free(struct exchange *base)
{
	struct rest_call *c = (struct rest_call *)base;

	json_decref(c->answer);
	free(c->body);
	free(c->next_cursor);
	session_release(c->s);
	free(c);
}

static const struct exchange_ops rest_exchange_ops = {
	.send = rc_send,
	.send_text = rc_send_text,
	.drop = rc_drop,
	.free = rc_free,
};

/* The request is complete (answered, or the client gone): its session
 * goes, which cancels a call still running. */
static void
rc_request_done(void *tp)
{
	struct rest_call *c = tp;

	unwatch(c);
	(void)session_delete(c->srv->requests, c->s->id);
	exchange_unref(&c->base);
}

/* --- the hang-up watcher ---------------------------------------------- */

static void *
watch_main(void *arg)
{
	struct pollfd fds[WATCH_MAX];
	struct rest_call *calls[WATCH_MAX];

	(void)arg;
	for (;;) {
		size_t n = 0;
		int ready;

		pthread_mutex_lock(&watch.mu);
		while (watch.head == NULL)
			pthread_cond_wait(&watch.cv, &watch.mu);
		for (struct rest_call *c = watch.head;
		     c != NULL && n < WATCH_MAX; c = c->wnext) {
			if (c->hung_up || c->fd < 0)
				continue;
			exchange_ref(&c->base);
			calls[n] = c;
			fds[n].fd = c->fd;
			fds[n].events = POLLRDHUP;
			fds[n].revents = 0;
			n++;
		}
		pthread_mutex_unlock(&watch.mu);
		ready = n > 0 ? poll(fds, n, WATCH_POLL_MS) : 0;
		if (n == 0) {
			struct timespec ts = {0, WATCH_POLL_MS * 1000000L};

			nanosleep(&ts, NULL);
		}
		for (size_t i = 0; i < n; i++) {
			struct rest_call *c = calls[i];
			bool gone = false;

			if (ready > 0 && (fds[i].revents &
					  (POLLRDHUP | POLLHUP | POLLERR))) {
				pthread_mutex_lock(&watch.mu);
				gone = c->watched && !c->hung_up;
				c->hung_up = true;
				pthread_mutex_unlock(&watch.mu);
			}
			if (gone) {
				log_info(
					&(struct log_fields){.tool = c->tool,
							     .duration_ms = -1},
					"rest: the client hung up: call "
					"cancelled");
				(void)session_delete(c->srv->requests,
						     c->s->id);
			}
			exchange_unref(&c->base);
		}
	}
	return NULL;
}

static void
watch_add(struct rest_call *c)
{
	pthread_mutex_lock(&watch.mu);
	exchange_ref(&c->base);
	c->watched = true;
	c->wprev = NULL;
	c->wnext = watch.head;
	if (watch.head != NULL)
		watch.head->wprev = c;
	watch.head = c;
	pthread_cond_signal(&watch.cv);
	pthread_mutex_unlock(&watch.mu);
}

int
rest_init(struct server *srv)
{
	pthread_t t;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	m.requests = expo_family(srv->expo, EXPO_COUNTER,
				 "sextant_rest_requests_total",
				 "REST facade answers by route and status code",
				 "route,code", NULL, 0);
	m.duration =
		expo_family(srv->expo, EXPO_HISTOGRAM,
			    "sextant_rest_request_duration_seconds",
			    "REST facade latency by route", "route", NULL, 0);
	if (m.requests == NULL || m.duration == NULL)
		return STATUS_NOMEM;
	watch.srv = srv;
	/* signals belong to the main thread (main.c) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, watch_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0 ? STATUS_OK : STATUS_IO;
}

/* --- answers ----------------------------------------------------------- */

static struct tools *
live_tools(struct server *srv)
{
	struct tools *t;

	server_live_rdlock(srv);
	t = srv->tools;
	tools_ref(t);
	server_live_unlock(srv);
	return t;
}

/* The Markdown of a result: its text items, joined. */
static char *
result_text(const json_t *res)
{
	const json_t *item;
	struct buf b;
	size_t i, n = 0;
	char *text = NULL;

	buf_init(&b, SIZE_MAX / 2);
	json_array_foreach(json_object_get(res, "content"), i, item)
	{
		const char *t =
			json_string_value(json_object_get(item, "text"));

		if (t == NULL)
			continue;
		if (n++ > 0)
			buf_puts(&b, "\n");
		buf_puts(&b, t);
	}
	if (buf_finish(&b, &text, NULL) != STATUS_OK)
		return NULL;
	return text;
}

/* A tool's answer that says the object is not there: get_trace and
 * get_session say found: false for the id they were given (get_session
 * without one lists sessions, found false too); others an error naming
 * what is missing. */
static bool
says_not_found(const struct rest_call *c, const json_t *sc, const char *text,
	       bool is_error)
{
	if (c->names_object && json_is_false(json_object_get(sc, "found")))
		return true;
	if (!is_error || text == NULL)
		return false;
	return strncasecmp(text, "no trace", 8) == 0 ||
	       strncasecmp(text, "no session", 10) == 0 ||
	       strncasecmp(text, "unknown metric", 14) == 0 ||
	       strstr(text, "has no spans in the telemetry store") != NULL;
}

/* Percent-encodes s (RFC 3986 unreserved kept; '/' too when path). */
static void
url_encode(struct buf *b, const char *s, bool path)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    ch == '_' || ch == '~' || (path && ch == '/')) {
			buf_append(b, s, 1);
		} else {
			char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};

			buf_append(b, e, 3);
		}
	}
}

struct link_ctx {
	struct buf *b;
	size_t n;
};

static enum MHD_Result
link_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct link_ctx *x = cls;

	(void)kind;
	if (strcmp(key, "cursor") == 0)
		return MHD_YES;
	buf_puts(x->b, x->n++ == 0 ? "?" : "&");
	url_encode(x->b, key, false);
	if (value != NULL) {
		buf_puts(x->b, "=");
		url_encode(x->b, value, false);
	}
	return MHD_YES;
}

/* Link: <the same request with cursor=next>; rel="next" (RFC 8288). */
static char *
next_link(struct req *r, const char *next)
{
	struct buf b;
	struct link_ctx x = {&b, 0};
	char *text = NULL;

	buf_init(&b, 64 * 1024);
	buf_puts(&b, "<");
	url_encode(&b, r->url, true);
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, link_arg, &x);
	buf_puts(&b, x.n == 0 ? "?cursor=" : "&cursor=");
	url_encode(&b, next, false);
	buf_puts(&b, ">; rel=\"next\"");
	if (buf_finish(&b, &text, NULL) != STATUS_OK)
		return NULL;
	return text;
}

/*
 * The call's answer, decided on the worker that produced it (so that the
 * MHD threads only queue it): c->status, and for a 200 c->body (its
 * content type c->ctype), else c->slug and c->body as the problem's
 * detail.  c->answer is consumed.
 */
static void
decide(struct rest_call *c)
{
	const json_t *res, *sc, *err, *rt;
	json_t *env = NULL;
	char *text = NULL;
	bool is_error;
	int64_t timeout_ms =
		(int64_t)c->srv->cfg->workers.call_timeout_s * 1000;

	c->ctype = "application/json";
	if (c->answer == NULL) {
		c->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		c->body = strdup("the call was cancelled before it answered "
				 "(the server is stopping): retry");
		goto out;
	}
	if ((err = json_object_get(c->answer, "error")) != NULL) {
		const char *msg =
			json_string_value(json_object_get(err, "message"));
		int code =
			(int)json_integer_value(json_object_get(err, "code"));

		if (msg == NULL)
			msg = "the call failed";
		if (json_is_true(json_object_get(json_object_get(err, "data"),
						 "retryable")) ||
		    strstr(msg, "shutting down") != NULL)
			c->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		else if (code == RPC_INVALID_PARAMS)
			c->status = MHD_HTTP_BAD_REQUEST;
		else
			c->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		c->body = strdup(msg);
		goto out;
	}
	res = json_object_get(c->answer, "result");
	sc = json_object_get(res, "structuredContent");
	rt = json_object_get(res, "resultType");
	if (json_is_string(rt) &&
	    strcmp(json_string_value(rt), "input_required") == 0) {
		c->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
		c->slug = "input-required";
		c->body = strdup("this call needs input from the client "
				 "(elicitation, sampling or roots), which REST "
				 "cannot give: call the tool over MCP");
		goto out;
	}
	text = result_text(res);
	if (text == NULL)
		goto out;
	is_error = json_is_true(json_object_get(res, "isError"));
	/* the janitor ends a call past workers.call_timeout_s with an
	 * error result: one that took that long is that one */
	if (is_error && clock_mono_ms() - c->start_ms >= timeout_ms)
		c->status = MHD_HTTP_GATEWAY_TIMEOUT;
	else if (says_not_found(c, sc, text, is_error))
		c->status = MHD_HTTP_NOT_FOUND;
	else if (is_error)
		c->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
	if (c->status != 0 || c->view_text) {
		if (c->status == 0)
			c->ctype = "text/markdown; charset=utf-8";
		c->body = text;
		text = NULL;
		goto out;
	}
	if (c->cursor_q[0] != '\0' &&
	    json_string_length(json_object_get(sc, "next_cursor")) > 0)
		c->next_cursor = strdup(
			json_string_value(json_object_get(sc, "next_cursor")));
	if (c->kind == K_KIALI)
		env = sc != NULL ? json_incref((json_t *)sc)
				 : json_pack("{s:s}", "text", text);
	else
		env = json_pack("{s:s, s:O, s:s}", "tool", c->tool, "data",
				sc != NULL ? sc : json_null(), "text", text);
	c->body = env != NULL ? jsondump(env, JSON_COMPACT) : NULL;
out:
	if (c->status == 0)
		c->status = MHD_HTTP_OK;
	if (c->body == NULL) { /* out of memory */
		c->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		c->slug = NULL;
	}
	json_decref(env);
	free(text);
	json_decref(c->answer);
	c->answer = NULL;
}

/* The decided answer, as HTTP (on the MHD thread). */
static enum MHD_Result
answer(struct req *r, struct rest_call *c)
{
	char *body = c->body, *link = NULL;
	enum MHD_Result ret;

	c->body = NULL;
	if (c->status != MHD_HTTP_OK) {
		bool retry = c->status == MHD_HTTP_SERVICE_UNAVAILABLE;

		ret = problem(r, c->status, c->slug,
			      body != NULL ? body : "out of memory", NULL,
			      retry ? (const char *[]){"Retry-After", "1", NULL}
				    : NULL,
			      c->tool);
		free(body);
		return ret;
	}
	if (c->next_cursor != NULL)
		link = next_link(r, c->next_cursor);
	ret = send_body(
		r, MHD_HTTP_OK, c->ctype, body, strlen(body),
		(const char *[]){"Cache-Control", c->cache, "Link", link, NULL},
		c->tool);
	free(link);
	return ret;
}

/* Cache-Control of a 200: a range given by absolute times (both ends
 * dates or epoch numbers) names data that no longer changes, kept a
 * minute; anything relative to now (the defaults, "now", "-1h") is live. */
static void
cache_control(const json_t *args, char *out, size_t cap)
{
	const char *from = json_string_value(json_object_get(args, "from"));
	const char *to = json_string_value(json_object_get(args, "to"));

	if (from != NULL && to != NULL && from[0] >= '0' && from[0] <= '9' &&
	    to[0] >= '0' && to[0] <= '9')
		snprintf(out, cap, "%s", MAX_AGE_ABSOLUTE);
	else
		snprintf(out, cap, "no-store");
}

/* 403 for a write tool called without scope_write, with the challenge
 * that lets an OAuth client step up (MCP authorization, runtime
 * insufficient scope). */
static enum MHD_Result
insufficient_scope(struct req *r, const struct tool_def *tool)
{
	const char *scope = r->srv->cfg->oauth.scope_write;
	char detail[300], ch[1024];

	http_scope_why(detail, sizeof(detail), tool->name, scope);
	/* the challenge MCP's /mcp gives: the scopes held and the one
	 * missing, so that a client's new grant loses nothing */
	if (http_scope_challenge(r, scope, detail, ch, sizeof(ch)) != STATUS_OK)
		snprintf(ch, sizeof(ch),
			 "Bearer realm=\"sextant\", "
			 "error=\"insufficient_scope\", scope=\"%s\"",
			 scope);
	return problem(r, MHD_HTTP_FORBIDDEN, NULL, detail, NULL,
		       (const char *[]){"WWW-Authenticate", ch, NULL},
		       tool->name);
}

/*
 * Validates args (taken) against tool's inputSchema, as tools/call does,
 * then runs the tool on the worker pool and parks the request.
 */
static enum MHD_Result
start(struct req *r, const struct tool_def *tool, json_t *args, enum kind kind,
      bool view_text)
{
	struct server *srv = r->srv;
	struct jsonschema_error verr;
	struct rest_call *c = NULL;
	struct session *s = NULL;
	const union MHD_ConnectionInfo *info;
	json_t *id = NULL;
	enum MHD_Result ret;
	bool parked;
	int rc;

	if (tool->write && r->read_only) {
		ret = insufficient_scope(r, tool);
		goto out;
	}
	if (jsonschema_apply_defaults(tool->input, args) == STATUS_NOMEM) {
		ret = problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			      "out of memory", NULL, NULL, tool->name);
		goto out;
	}
	if (jsonschema_validate(tool->input, args, &verr) != STATUS_OK) {
		char detail[800];

		snprintf(detail, sizeof(detail),
			 "invalid arguments for tool %s: %s", tool->name,
			 verr.msg);
		ret = problem(r, MHD_HTTP_BAD_REQUEST, "invalid-arguments",
			      detail,
			      json_pack("[{s:s, s:s, s:s, s:s}]", "field",
					verr.path[0] != '\0' ? verr.path : "/",
					"expected", verr.expected, "given",
					verr.received, "message", verr.msg),
			      NULL, tool->name);
		goto out;
	}
	rc = session_create_request(srv->requests, REQMETA_VERSION, NULL, NULL,
				    MCP_LEVEL_OFF, &s);
	if (rc != STATUS_OK) {
		ret = problem(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
			      "server busy: too many requests in flight, "
			      "retry in a second",
			      NULL, (const char *[]){"Retry-After", "1", NULL},
			      tool->name);
		goto out;
	}
	c = calloc(1, sizeof(*c));
	id = json_string(r->rid);
	if (c == NULL || id == NULL) {
		(void)session_delete(srv->requests, s->id);
		session_release(s);
		free(c);
		c = NULL;
		ret = problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			      "out of memory", NULL, NULL, tool->name);
		goto out;
	}
	c->base.ops = &rest_exchange_ops;
	atomic_init(&c->base.refs, 1);
	exchange_grant(&c->base, r->read_only, r->client);
	c->srv = srv;
	c->s = s; /* the exchange holds the reference now */
	c->conn = r->conn;
	info = MHD_get_connection_info(r->conn,
				       MHD_CONNECTION_INFO_CONNECTION_FD);
	c->fd = info != NULL ? info->connect_fd : -1;
	c->kind = kind;
	c->view_text = view_text;
	c->start_ms = clock_mono_ms();
	snprintf(c->tool, sizeof(c->tool), "%s", tool->name);
	c->names_object = json_object_get(args, "trace_id") != NULL ||
			  json_object_get(args, "session_id") != NULL;
	cache_control(args, c->cache, sizeof(c->cache));
	if (json_object_get(
		    json_object_get(json_object_get(tool->def, "inputSchema"),
				    "properties"),
		    "cursor") != NULL)
		snprintf(c->cursor_q, sizeof(c->cursor_q), "cursor");
	r->tp = c;
	r->tp_free = rc_request_done;
	rc = call_start(srv, s, &c->base, id, NULL, tool, args, NULL, NULL);
	args = NULL; /* taken */
	if (rc != STATUS_OK) {
		ret = problem(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
			      rc == STATUS_FULL
				      ? "server busy: the worker queue is "
					"full, retry in a second"
				      : "the server is shutting down: retry "
					"on another instance",
			      NULL, (const char *[]){"Retry-After", "1", NULL},
			      tool->name);
		goto out;
	}
	pthread_mutex_lock(&s->mu);
	parked = !c->done;
	if (parked) {
		c->parked = true;
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&s->mu);
	if (parked) {
		watch_add(c);
		ret = MHD_YES;
	} else {
		ret = answer(r, c);
	}
out:
	json_decref(args);
	json_decref(id);
	return ret;
}

/* --- routes ------------------------------------------------------------ */

/* Does Accept admit one of our types (JSON, problem+json; Markdown for
 * ?view=text)?  406 otherwise. */
static bool
acceptable(struct req *r, bool view_text)
{
	const char *a = http_header(r, "Accept");

	return http_accepts(a, "application/json") ||
	       http_accepts(a, "application/problem+json") ||
	       (view_text && http_accepts(a, "text/markdown"));
}

static enum MHD_Result
not_acceptable(struct req *r)
{
	return problem(r, MHD_HTTP_NOT_ACCEPTABLE, NULL,
		       "not acceptable: this route answers application/json "
		       "(errors application/problem+json; ?view=text "
		       "text/markdown): send Accept: application/json",
		       NULL, NULL, NULL);
}

static enum MHD_Result
not_allowed(struct req *r, const char *allow)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "method not allowed: %s takes %s", r->route,
		 allow);
	return problem(r, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, msg, NULL,
		       (const char *[]){"Allow", allow, NULL}, NULL);
}

/* A CORS preflight (Fetch, 4.8): the methods and headers a listed origin
 * may use; other origins get the Allow header alone. */
static enum MHD_Result
preflight(struct req *r, const char *allow)
{
	struct hdrs h = {.n = 0};

	h.v[0] = NULL;
	hdr_add(&h, "Allow", allow);
	if (rest_origin_allowed(r, http_header(r, "Origin"))) {
		hdr_add(&h, "Access-Control-Allow-Origin",
			http_header(r, "Origin"));
		hdr_add(&h, "Access-Control-Allow-Methods", allow);
		hdr_add(&h, "Access-Control-Allow-Headers",
			"Authorization, Content-Type, Accept, "
			"Accept-Encoding, If-None-Match");
		hdr_add(&h, "Access-Control-Max-Age", "600");
		hdr_add(&h, "Vary", "Origin");
	}
	account(r, MHD_HTTP_NO_CONTENT, NULL);
	return http_reply(r, MHD_HTTP_NO_CONTENT, NULL, "", 0, h.v);
}

/* The tool named in a path, if enabled and listed. */
static const struct tool_def *
listed_tool(const struct tools *t, const char *name)
{
	const struct tool_def *tool = tools_find(t, name);

	return tool != NULL && !tool->unlisted_callable ? tool : NULL;
}

static enum MHD_Result
unknown_tool(struct req *r, const char *name)
{
	char msg[300];

	snprintf(msg, sizeof(msg),
		 "unknown tool \"%.100s\": GET /api/v1/tools lists the tools "
		 "this server offers",
		 name);
	return problem(r, MHD_HTTP_NOT_FOUND, NULL, msg, NULL, NULL, NULL);
}

/* GET /api/v1/tools */
static enum MHD_Result
list_tools(struct req *r)
{
	struct tools *t = live_tools(r->srv);
	json_t *list = json_array(), *out;
	char *body;
	static const char *const keys[] = {"name",	   "title",
					   "description",  "inputSchema",
					   "outputSchema", "annotations"};

	for (size_t i = 0; list != NULL && i < tools_count(t); i++) {
		const json_t *def = tools_at(t, i)->def;
		json_t *item;

		if (r->read_only && tools_at(t, i)->write)
			continue; /* as tools/list: only what it may call */
		item = json_object();

		for (size_t k = 0; item != NULL && k < 6; k++) {
			json_t *v = json_object_get(def, keys[k]);

			if (v != NULL)
				json_object_set(item, keys[k], v);
		}
		json_array_append_new(list, item);
	}
	tools_unref(t);
	out = json_pack("{s:o*}", "tools", list);
	body = out != NULL ? jsondump(out, JSON_COMPACT) : NULL;
	json_decref(out);
	if (body == NULL)
		return problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			       "out of memory", NULL, NULL, NULL);
	return send_body(r, MHD_HTTP_OK, "application/json", body, strlen(body),
			 (const char *[]){"Cache-Control", "no-cache", NULL},
			 NULL);
}

/* ?view=: "json" (the default) or "text".  False with a 400 queued. */
static bool
view_of(struct req *r, const char *tool, bool *text, enum MHD_Result *ret)
{
	const char *v = MHD_lookup_connection_value(
		r->conn, MHD_GET_ARGUMENT_KIND, "view");

	*text = v != NULL && strcmp(v, "text") == 0;
	if (v == NULL || *text || strcmp(v, "json") == 0)
		return true;
	*ret = bad_field(r, NULL, "view", "json or text", v,
			 "view: expected json or text", tool);
	return false;
}

/* A POST body as arguments: {} when empty. */
static enum MHD_Result
post_tool(struct req *r, const char *name, enum kind kind)
{
	const char *ctype = http_header(r, "Content-Type");
	struct tools *t = NULL;
	const struct tool_def *tool;
	json_t *args = NULL;
	json_error_t jerr;
	enum MHD_Result ret;
	bool text = false;

	if ((ctype != NULL || r->body.len > 0) &&
	    (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0 ||
	     (ctype[16] != '\0' && ctype[16] != ';' && ctype[16] != ' ')))
		return problem(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
			       "unsupported Content-Type: POST the tool's "
			       "arguments as application/json",
			       NULL, NULL, name);
	if (kind == K_TOOL && !view_of(r, name, &text, &ret))
		return ret;
	if (!acceptable(r, text))
		return not_acceptable(r);
	t = live_tools(r->srv);
	tool = listed_tool(t, name);
	if (tool == NULL) {
		ret = unknown_tool(r, name);
		goto out;
	}
	args = r->body.len > 0 ? jsonload(r->body.data, r->body.len, &jerr)
			       : json_object();
	if (args == NULL) {
		char msg[300], at[64];

		snprintf(at, sizeof(at), "line %d, column %d", jerr.line,
			 jerr.column);
		snprintf(msg, sizeof(msg),
			 "malformed JSON body at %s: %s; send the arguments "
			 "as one JSON object",
			 at, jerr.text);
		ret = bad_field(r, "malformed-json", "/", "a JSON object", at,
				msg, name);
		goto out;
	}
	if (!json_is_object(args)) {
		ret = bad_field(r, "invalid-arguments", "/", "a JSON object",
				json_is_array(args) ? "an array"
						    : "not an object",
				"the body must be a JSON object of the "
				"tool's arguments",
				name);
		goto out;
	}
	/* Kiali's names for the same arguments (its tools take both) */
	if (kind == K_KIALI &&
	    rest_snake_args(
		    json_object_get(json_object_get(tool->def, "inputSchema"),
				    "properties"),
		    args) != STATUS_OK) {
		ret = problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			      "out of memory", NULL, NULL, name);
		goto out;
	}
	ret = start(r, tool, args, kind, text);
	args = NULL;
out:
	json_decref(args);
	tools_unref(t);
	return ret;
}

struct query_ctx {
	const json_t *props;
	json_t *args;
	json_t *errors; /* refusals */
	bool nomem;
};

static enum MHD_Result
query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
	  const char *value)
{
	struct query_ctx *x = cls;
	struct rest_param_error e;
	int rc;

	(void)kind;
	if (strcmp(key, "view") == 0 && json_object_get(x->props, key) == NULL)
		return MHD_YES;
	rc = rest_param_add(x->props, x->args, key, value, &e);
	if (rc == STATUS_NOMEM)
		x->nomem = true;
	else if (rc != STATUS_OK &&
		 json_array_append_new(x->errors,
				       json_pack("{s:s, s:s, s:s, s:s}",
						 "field", e.field, "expected",
						 e.expected, "given", e.given,
						 "message", e.message)) != 0)
		x->nomem = true;
	return MHD_YES;
}

/* The names a route accepts, for the 400 naming an unknown one. */
static void
accepted_names(const json_t *props, const struct rest_route *rt, char *out,
	       size_t cap)
{
	const char *key;
	const json_t *v;
	size_t len = 0;

	out[0] = '\0';
	json_object_foreach((json_t *)props, key, v)
	{
		bool path = false;

		for (size_t i = 0; i < rt->nparams; i++)
			path |= strcmp(rt->params[i].arg, key) == 0;
		if (path || len >= cap)
			continue;
		len += (size_t)snprintf(out + len, cap - len, "%s%s",
					len > 0 ? ", " : "", key);
	}
	if (len < cap)
		snprintf(out + len, cap - len, "%sview", len > 0 ? ", " : "");
}

/* A resource GET: path and query parameters onto the tool's arguments. */
static enum MHD_Result
get_route(struct req *r, const struct rest_route *rt,
	  const char *values[REST_MAX_PATH_PARAMS],
	  const size_t lens[REST_MAX_PATH_PARAMS])
{
	struct tools *t = live_tools(r->srv);
	const struct tool_def *tool = listed_tool(t, rt->tool);
	struct query_ctx x = {0};
	enum MHD_Result ret;
	bool text = false;
	char msg[600];

	if (tool == NULL) {
		if (strcmp(rt->tool, "get_mesh_graph") == 0)
			snprintf(msg, sizeof(msg),
				 "%s needs get_mesh_graph, in the tool set "
				 "\"mesh\": add \"mesh\" to [tools] "
				 "enabled_sets",
				 rt->path);
		else
			snprintf(msg, sizeof(msg),
				 "%s needs the tool %s, which is disabled "
				 "here ([tools] enabled_sets, disabled)",
				 rt->path, rt->tool);
		ret = problem(r, MHD_HTTP_NOT_FOUND, NULL, msg, NULL, NULL,
			      rt->tool);
		goto out;
	}
	if (!view_of(r, rt->tool, &text, &ret))
		goto out;
	if (!acceptable(r, text)) {
		ret = not_acceptable(r);
		goto out;
	}
	x.props = json_object_get(json_object_get(tool->def, "inputSchema"),
				  "properties");
	x.args = json_object();
	x.errors = json_array();
	if (x.args == NULL || x.errors == NULL) {
		x.nomem = true;
	} else {
		for (size_t i = 0; i < rt->nparams && !x.nomem; i++) {
			char *v = strndup(values[i], lens[i]);

			if (v == NULL)
				x.nomem = true;
			else
				query_arg(&x, MHD_GET_ARGUMENT_KIND,
					  rt->params[i].arg, v);
			free(v);
		}
		MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND,
					  query_arg, &x);
	}
	if (x.nomem) {
		ret = problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			      "out of memory", NULL, NULL, rt->tool);
		goto out;
	}
	if (json_array_size(x.errors) > 0) {
		char names[400];
		const char *first = json_string_value(json_object_get(
			json_array_get(x.errors, 0), "message"));

		accepted_names(x.props, rt, names, sizeof(names));
		snprintf(msg, sizeof(msg), "%s (this route accepts: %s)",
			 first != NULL ? first : "bad query parameter", names);
		ret = problem(r, MHD_HTTP_BAD_REQUEST, "invalid-parameters",
			      msg, x.errors, NULL, rt->tool);
		x.errors = NULL;
		goto out;
	}
	ret = start(r, tool, x.args, K_GET, text);
	x.args = NULL;
out:
	json_decref(x.args);
	json_decref(x.errors);
	tools_unref(t);
	return ret;
}

#define ALLOW_GET  "GET, HEAD, OPTIONS"
#define ALLOW_POST "POST, OPTIONS"

/* The tool name after prefix in path, or NULL (none, or not a name). */
/*
 * GET /api/openapi.json: the document for the live registry, built once per
 * registry (a reload that changes the tools builds a new registry, hence a
 * new document).  The cache holds a reference on the registry it describes,
 * so that a new registry at the same address cannot pass for it.
 */
static struct {
	pthread_mutex_t mu;
	struct tools *tools;
	char *text;
	size_t len;
} openapi = {.mu = PTHREAD_MUTEX_INITIALIZER};

static enum MHD_Result
serve_openapi(struct req *r)
{
	struct tools *t = live_tools(r->srv);
	char err[256] = "";
	char *body = NULL;
	size_t len = 0;
	json_t *doc = NULL;

	pthread_mutex_lock(&openapi.mu);
	if (openapi.tools != t && openapi_build(t, r->srv->cfg, &doc, err,
						sizeof(err)) == STATUS_OK) {
		char *text = json_dumps(doc, JSON_COMPACT);

		json_decref(doc);
		if (text != NULL) {
			free(openapi.text);
			openapi.text = text;
			openapi.len = strlen(text);
			if (openapi.tools != NULL)
				tools_unref(openapi.tools);
			tools_ref(t);
			openapi.tools = t;
		}
	}
	if (openapi.tools == t && (body = malloc(openapi.len)) != NULL) {
		memcpy(body, openapi.text, openapi.len);
		len = openapi.len;
	}
	pthread_mutex_unlock(&openapi.mu);
	tools_unref(t);
	if (body == NULL) {
		log_error(&(struct log_fields){.request_id = r->rid,
					       .duration_ms = -1},
			  "openapi: %s",
			  err[0] != '\0' ? err : "out of memory");
		return problem(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
			       "the OpenAPI document could not be built: see "
			       "the gateway's log",
			       NULL, NULL, NULL);
	}
	return rest_reply(r, MHD_HTTP_OK, "application/json", body, len, NULL);
}

static const char *
name_after(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) != 0 || path[n] == '\0' ||
	    strchr(path + n, '/') != NULL)
		return NULL;
	return path + n;
}

enum MHD_Result
rest_handle(struct req *r)
{
	const char *path = r->url, *name;
	const char *values[REST_MAX_PATH_PARAMS];
	size_t lens[REST_MAX_PATH_PARAMS];
	const struct rest_route *rt;
	bool get = r->method == HTTP_GET || r->method == HTTP_HEAD;

	if (r->tp != NULL) /* resumed: the call answered */
		return answer(r, r->tp);
	if (strcmp(path, "/api/v1/tools") == 0) {
		r->route = "/api/v1/tools";
		if (r->method == HTTP_OPTIONS)
			return preflight(r, ALLOW_GET);
		if (!get)
			return not_allowed(r, ALLOW_GET);
		if (!acceptable(r, false))
			return not_acceptable(r);
		return list_tools(r);
	}
	if ((name = name_after(path, "/api/v1/tools/")) != NULL ||
	    (name = name_after(path, "/api/chat/mcp/")) != NULL) {
		bool kiali = path[5] == 'c';

		r->route = kiali ? "/api/chat/mcp/{tool_name}"
				 : "/api/v1/tools/{name}";
		if (r->method == HTTP_OPTIONS)
			return preflight(r, ALLOW_POST);
		if (r->method != HTTP_POST)
			return not_allowed(r, ALLOW_POST);
		return post_tool(r, name, kiali ? K_KIALI : K_TOOL);
	}
	if (strcmp(path, "/api/openapi.json") == 0) {
		r->route = "/api/openapi.json";
		if (r->method == HTTP_OPTIONS)
			return preflight(r, ALLOW_GET);
		if (!get)
			return not_allowed(r, ALLOW_GET);
		return serve_openapi(r);
	}
	rt = rest_route_match(path, values, lens);
	if (rt != NULL) {
		r->route = rt->path;
		if (r->method == HTTP_OPTIONS)
			return preflight(r, ALLOW_GET);
		if (!get)
			return not_allowed(r, ALLOW_GET);
		return get_route(r, rt, values, lens);
	}
	r->route = "/api/other";
	return problem(r, MHD_HTTP_NOT_FOUND, NULL,
		       "no such route: GET /api/v1/tools lists the tools "
		       "(POST /api/v1/tools/{name} runs one); the resources "
		       "are /api/v1/services, /api/v1/traces/{trace_id}, "
		       "/api/v1/spans and the others of the OpenAPI document",
		       NULL, NULL, NULL);
}

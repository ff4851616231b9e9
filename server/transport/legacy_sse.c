/*
 * legacy_sse.c - the 2024-11-05 HTTP+SSE transport on GET /sse and
 * POST /messages?session_id=<id>.
 *
 * GET /sse registers a connection under a random id and answers with an
 * event stream whose first event is `endpoint`.  The MCP session does not
 * exist yet: initialize, POSTed to the endpoint, creates it (with the
 * dispatcher, like Streamable HTTP) and the connection becomes the reader
 * of the session's standalone stream, where everything the server says
 * goes: responses, progress, logs, server-to-client requests and
 * session-wide notifications, with the session's keep-alives.  Every POST
 * is answered 202 at once; the answers travel on the stream.  When the
 * stream's connection ends, the session is deleted, which cancels its
 * calls in flight.
 *
 * Locking: the connection table has its own mutex; each connection has a
 * mutex for its pre-session state and its suspended flag.  Order: table ->
 * connection, and session (s->mu) -> connection, never the reverse.  The
 * MHD connection is suspended only by the MHD thread running the reader
 * and resumed by whichever thread has news, both under the connection's
 * mutex.
 */
#include "transport/legacy_sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "core/server.h"
#include "http/http.h"
#include "json/jsondump.h"
#include "json/jsonload.h"
#include "mcp/dispatch.h"
#include "mcp/exchange.h"
#include "mcp/rpc.h"
#include "mcp/session.h"

/* SSE chunk size handed to MHD per reader call. */
#define SSE_BLOCK 16384
/* 128 random bits as hex, like session ids. */
#define LEGACY_ID_LEN 32
/* Bytes a connection holds before its session exists: the endpoint
 * event, keep-alives and errors for early messages; a client that floods
 * an uninitialized connection loses the excess. */
#define PRE_MAX 65536
/* The reframed bytes of one stream read (at most SSE_BLOCK in, and an
 * "id:" line is never shorter than 4 bytes, so 4x plus a line). */
#define OUT_MAX (4 * SSE_BLOCK + 64)

/* Revisions this transport serves: those with sessions.  A client that
 * asks for another gets 2024-11-05, the transport's own revision. */
static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18",
					      "2025-03-26", "2024-11-05", NULL};
#define LEGACY_FALLBACK "2024-11-05"

struct legacy_conn;

/* The exchange of a legacy session: every message onto its stream. */
struct legacy_exchange {
	struct exchange base; /* first */
	struct session *s;    /* reference */
};

struct legacy_conn {
	char id[LEGACY_ID_LEN + 1];  /* [const] */
	struct server *srv;	     /* [const] */
	struct MHD_Connection *conn; /* [const] */
	/* [const] the GET's credential (struct req's): POSTs of another
	 * owner find no session; the session's calls have its scopes */
	char owner[40];
	bool read_only;
	char client[64];
	atomic_int refs;
	pthread_mutex_t mu;
	/* under mu */
	bool suspended;
	bool closed;	   /* ended, or the server drains */
	bool initializing; /* an initialize is being handled */
	struct buf pre;	   /* events before the session exists */
	size_t pre_off;
	int64_t opened_ms, last_write_ms;
	/* set once under mu (and s->mu) by initialize, then [const] */
	struct session *s; /* reference */
	struct legacy_exchange *ex;
	struct stream *st;
	unsigned gen;
	/* the reader's (the MHD thread), st's cursor under s->mu */
	struct sse_cursor cur;
	struct legacy_sse_reframe rf;
	struct buf out; /* reframed bytes not yet handed to MHD */
	size_t out_off;
	struct legacy_conn *next; /* table */
};

static struct {
	pthread_mutex_t mu;
	struct legacy_conn *head;
	int count;
} table = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* --- the reframer ----------------------------------------------------- */

enum {
	RF_START, /* at the start of a line, collecting its head */
	RF_PASS,  /* copying the rest of the line */
	RF_SKIP,  /* dropping the rest of the line */
};

void
legacy_sse_reframe_init(struct legacy_sse_reframe *rf)
{
	memset(rf, 0, sizeof(*rf));
	rf->state = RF_START;
}

static bool
head_is_prefix(const struct legacy_sse_reframe *rf, const char *field)
{
	return rf->nhead <= strlen(field) &&
	       memcmp(rf->head, field, rf->nhead) == 0;
}

int
legacy_sse_reframe(struct legacy_sse_reframe *rf, const char *in, size_t n,
		   struct buf *out)
{
	static const char message[] = "event: message\n";
	const char *p = in, *end = in + n;

	/* to the first failure: the caller ends the stream then */
	while (p < end && buf_error(out) == STATUS_OK) {
		const char *nl;
		size_t run;

		if (rf->state != RF_START) {
			nl = memchr(p, '\n', (size_t)(end - p));
			run = (size_t)((nl != NULL ? nl + 1 : end) - p);
			if (rf->state == RF_PASS)
				buf_append(out, p, run);
			if (nl != NULL)
				rf->state = RF_START;
			p += run;
			continue;
		}
		if (*p == '\n') {
			buf_append(out, rf->head, rf->nhead);
			buf_append(out, "\n", 1);
			rf->nhead = 0;
			p++;
			continue;
		}
		rf->head[rf->nhead++] = *p++;
		if (rf->nhead == 3 && memcmp(rf->head, "id:", 3) == 0) {
			buf_append(out, message, sizeof(message) - 1);
			rf->state = RF_SKIP;
			rf->nhead = 0;
		} else if (rf->nhead == 6 &&
			   memcmp(rf->head, "retry:", 6) == 0) {
			rf->state = RF_SKIP;
			rf->nhead = 0;
		} else if (!head_is_prefix(rf, "id:") &&
			   !head_is_prefix(rf, "retry:")) {
			buf_append(out, rf->head, rf->nhead);
			rf->state = RF_PASS;
			rf->nhead = 0;
		}
	}
	return buf_error(out);
}

/* --- connections ------------------------------------------------------ */

static void
conn_unref(struct legacy_conn *c)
{
	if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->ex != NULL)
		exchange_unref(&c->ex->base);
	session_unref(c->s);
	buf_free(&c->pre);
	buf_free(&c->out);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* The connection with this id, with a reference; NULL if none. */
static struct legacy_conn *
conn_find(const char *id)
{
	struct legacy_conn *c;

	pthread_mutex_lock(&table.mu);
	for (c = table.head; c != NULL; c = c->next)
		if (strcmp(c->id, id) == 0)
			break;
	if (c != NULL)
		atomic_fetch_add(&c->refs, 1);
	pthread_mutex_unlock(&table.mu);
	return c;
}

static void
conn_unlink(struct legacy_conn *c)
{
	struct legacy_conn **pp;

	pthread_mutex_lock(&table.mu);
	for (pp = &table.head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			table.count--;
			break;
		}
	}
	pthread_mutex_unlock(&table.mu);
}

/* Resumes the reader if it is parked (c->mu held). */
static void
conn_wake_locked(struct legacy_conn *c)
{
	if (c->suspended) {
		c->suspended = false;
		MHD_resume_connection(c->conn);
	}
}

/* The session stream's wake callback (s->mu held). */
static void
stream_wake(void *arg)
{
	struct legacy_conn *c = arg;

	pthread_mutex_lock(&c->mu);
	conn_wake_locked(c);
	pthread_mutex_unlock(&c->mu);
}

/* Queues raw SSE bytes before the session exists (c->mu held). */
static void
pre_append_locked(struct legacy_conn *c, const char *text, size_t len)
{
	size_t mark = c->pre.len;

	if (buf_append(&c->pre, text, len) != STATUS_OK) {
		/* this message only: a later one may still fit */
		buf_rollback(&c->pre, mark);
		log_warn(&(struct log_fields){.duration_ms = -1},
			 "legacy SSE: message dropped: the stream of a "
			 "connection without a session is full");
		return;
	}
	c->last_write_ms = clock_mono_ms();
	conn_wake_locked(c);
}

/* Sends msg (stolen) as an `event: message` before the session exists. */
static void
pre_send(struct legacy_conn *c, json_t *msg)
{
	char *text = msg != NULL ? jsondump(msg, JSON_COMPACT) : NULL;
	struct buf ev;

	json_decref(msg);
	buf_init(&ev, PRE_MAX);
	if (text == NULL || buf_printf(&ev, "event: message\ndata: %s\n\n",
				       text) != STATUS_OK) {
		free(text);
		buf_free(&ev);
		log_error(&(struct log_fields){.duration_ms = -1},
			  "legacy SSE: message dropped: out of memory");
		return;
	}
	free(text);
	pthread_mutex_lock(&c->mu);
	pre_append_locked(c, ev.data, ev.len);
	pthread_mutex_unlock(&c->mu);
	buf_free(&ev);
}

/* --- the exchange ------------------------------------------------------ */

static void
ex_deliver(struct legacy_exchange *ex, const char *text, size_t len)
{
	struct session *s = ex->s;
	int rc = STATUS_CLOSED;

	pthread_mutex_lock(&s->mu);
	if (s->standalone != NULL)
		rc = stream_send_text(s->standalone, text, len);
	pthread_mutex_unlock(&s->mu);
	if (rc != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "legacy SSE: message dropped: %s", status_str(rc));
}

static void
ex_send(struct exchange *base, json_t *msg, bool last)
{
	char *text;

	(void)last; /* every message goes onto the stream as it comes */
	if (msg == NULL)
		return;
	text = jsondump(msg, JSON_COMPACT);
	json_decref(msg);
	if (text == NULL) {
		log_error(&(struct log_fields){.duration_ms = -1},
			  "legacy SSE: message dropped: out of memory");
		return;
	}
	ex_deliver((struct legacy_exchange *)base, text, strlen(text));
	free(text);
}

static void
ex_send_text(struct exchange *base, char *text, size_t len)
{
	ex_deliver((struct legacy_exchange *)base, text, len);
	free(text);
}

static int
ex_drop(struct exchange *base)
{
	(void)base;
	return STATUS_UNSUPPORTED; /* no resumption on this transport */
}

static void
ex_free(struct exchange *base)
{
	struct legacy_exchange *ex = (struct legacy_exchange *)base;

	session_unref(ex->s);
	free(ex);
}

static const struct exchange_ops legacy_exchange_ops = {
	.send = ex_send,
	.send_text = ex_send_text,
	.drop = ex_drop,
	.free = ex_free,
};

/* --- the stream (GET /sse) --------------------------------------------- */

/* Hands out what the reframer produced; 0 if nothing is left. */
static size_t
take_out(struct legacy_conn *c, char *buf, size_t max)
{
	size_t n = c->out.len - c->out_off;

	if (n > max)
		n = max;
	if (n > 0)
		memcpy(buf, c->out.data + c->out_off, n);
	c->out_off += n;
	if (c->out_off == c->out.len) {
		buf_reset(&c->out);
		c->out_off = 0;
	}
	return n;
}

static ssize_t
legacy_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct legacy_conn *c = cls;
	struct session *s;
	enum stream_state state;
	char stage[SSE_BLOCK];
	size_t n;

	(void)pos;
	if ((n = take_out(c, buf, max)) > 0)
		return (ssize_t)n;
	pthread_mutex_lock(&c->mu);
	if (c->pre_off < c->pre.len) {
		n = c->pre.len - c->pre_off;
		if (n > max)
			n = max;
		memcpy(buf, c->pre.data + c->pre_off, n);
		c->pre_off += n;
		if (c->pre_off == c->pre.len) {
			buf_reset(&c->pre);
			c->pre_off = 0;
		}
		pthread_mutex_unlock(&c->mu);
		return (ssize_t)n;
	}
	s = c->s;
	if (s == NULL) {
		bool closed = c->closed;

		if (!closed) {
			/* Park until initialize, the janitor or a drain. */
			c->suspended = true;
			MHD_suspend_connection(c->conn);
		}
		pthread_mutex_unlock(&c->mu);
		return closed ? MHD_CONTENT_READER_END_OF_STREAM : 0;
	}
	pthread_mutex_unlock(&c->mu);

	pthread_mutex_lock(&s->mu);
	state = stream_read(c->st, c->gen, &c->cur, stage, sizeof(stage), &n);
	if (state == STREAM_WAIT) {
		/* Under s->mu: an event appended after stream_read finds the
		 * flag set and resumes us (returning 0 without suspending
		 * would spin, microhttpd.h). */
		pthread_mutex_lock(&c->mu);
		c->suspended = true;
		MHD_suspend_connection(c->conn);
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&s->mu);
	if (state == STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n > 0 &&
	    legacy_sse_reframe(&c->rf, stage, n, &c->out) != STATUS_OK) {
		log_error(&(struct log_fields){.session = s->id,
					       .duration_ms = -1},
			  "legacy SSE: out of memory: ending the stream");
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return (ssize_t)take_out(c, buf, max);
}

/* The stream's connection is gone: so is the session. */
static void
legacy_free(void *cls)
{
	struct legacy_conn *c = cls;
	struct server *srv = c->srv;
	struct session *s;

	conn_unlink(c);
	pthread_mutex_lock(&c->mu);
	c->closed = true;
	s = c->s;
	pthread_mutex_unlock(&c->mu);
	if (s != NULL) {
		pthread_mutex_lock(&s->mu);
		stream_detach(c->st, c->gen);
		pthread_mutex_unlock(&s->mu);
		/* Closing it cancels the calls in flight: nobody is left to
		 * read their answers. */
		if (session_delete(srv->sessions, s->id) == STATUS_OK)
			log_info(&(struct log_fields){.session = s->id,
						      .duration_ms = -1},
				 "legacy SSE stream closed: session ended");
	}
	expo_dec(srv->m.sse_streams);
	conn_unref(c);
}

enum MHD_Result
legacy_sse_open(struct req *r)
{
	struct legacy_conn *c;
	struct MHD_Response *resp;
	int max = r->srv->cfg->server.max_sessions;

	if (r->method != HTTP_GET)
		return http_reply_rpc_error(
			r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_BUSY,
			"method not allowed: /sse takes GET (the 2024-11-05 "
			"transport); POST messages to the endpoint it "
			"announces",
			(const char *[]){"Allow", "GET", NULL});
	if (!http_accepts(http_header(r, "Accept"), "text/event-stream"))
		return http_reply_rpc_error(
			r, MHD_HTTP_NOT_ACCEPTABLE, RPC_SERVER_BUSY,
			"GET /sse opens an event stream: send Accept: "
			"text/event-stream",
			NULL);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto nomem;
	if (auth_random_hex(c->id, sizeof(c->id), LEGACY_ID_LEN / 2) !=
	    STATUS_OK) {
		free(c);
		return http_reply_rpc_error(
			r, MHD_HTTP_INTERNAL_SERVER_ERROR, RPC_INTERNAL_ERROR,
			"could not create a session id", NULL);
	}
	c->srv = r->srv;
	c->conn = r->conn;
	memcpy(c->owner, r->owner, sizeof(c->owner));
	c->read_only = r->read_only;
	memcpy(c->client, r->client, sizeof(c->client));
	atomic_init(&c->refs, 1); /* the response's */
	pthread_mutex_init(&c->mu, NULL);
	buf_init(&c->pre, PRE_MAX);
	buf_init(&c->out, OUT_MAX);
	legacy_sse_reframe_init(&c->rf);
	c->opened_ms = c->last_write_ms = clock_mono_ms();
	/* A relative URI on our own origin: the SDKs resolve it against
	 * the stream's URL and refuse another origin. */
	if (buf_printf(&c->pre,
		       "event: endpoint\ndata: /messages?session_id=%s\n\n",
		       c->id) != STATUS_OK) {
		conn_unref(c);
		goto nomem;
	}
	pthread_mutex_lock(&table.mu);
	if (table.count >= max) {
		pthread_mutex_unlock(&table.mu);
		conn_unref(c);
		return http_reply_rpc_error(
			r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
			"too many sessions: retry later",
			(const char *[]){"Retry-After", "1", NULL});
	}
	c->next = table.head;
	table.head = c;
	table.count++;
	pthread_mutex_unlock(&table.mu);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK,
						 legacy_read, c, legacy_free);
	if (resp == NULL) {
		conn_unlink(c);
		conn_unref(c);
		goto nomem;
	}
	expo_inc(r->srv->m.sse_streams);
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	log_debug(&(struct log_fields){.request_id = r->rid, .duration_ms = -1},
		  "legacy SSE stream opened");
	return http_queue(r, MHD_HTTP_OK, resp);
nomem:
	return http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    RPC_INTERNAL_ERROR, "out of memory", NULL);
}

/* --- messages (POST /messages) ------------------------------------------ */

static bool
is_method(const json_t *msg, const char *name)
{
	const char *m = json_string_value(json_object_get(msg, "method"));

	return m != NULL && strcmp(m, name) == 0;
}

/* initialize with the revision this transport will speak: the one asked
 * for when the transport serves it, else its own (msg: new reference). */
static json_t *
legacy_initialize_msg(const json_t *msg)
{
	const json_t *params = json_object_get(msg, "params");
	const char *asked =
		json_string_value(json_object_get(params, "protocolVersion"));
	json_t *copy;
	size_t i;

	for (i = 0; asked != NULL && legacy_versions[i] != NULL; i++)
		if (strcmp(asked, legacy_versions[i]) == 0 &&
		    dispatch_version_supported(asked))
			return json_incref((json_t *)msg);
	if (asked == NULL)
		return json_incref((json_t *)msg); /* the dispatcher says why */
	copy = json_deep_copy(msg);
	if (copy != NULL &&
	    json_object_set_new(json_object_get(copy, "params"),
				"protocolVersion",
				json_string(LEGACY_FALLBACK)) != 0) {
		json_decref(copy);
		copy = NULL;
	}
	return copy;
}

/* Creates the session and makes the connection its stream's reader. */
static void
legacy_initialize(struct legacy_conn *c, const json_t *msg)
{
	struct server *srv = c->srv;
	const json_t *id = json_object_get(msg, "id");
	json_t *imsg = NULL, *response = NULL;
	struct session *s = NULL;
	struct legacy_exchange *ex = NULL;
	char *text = NULL;
	bool busy, closed = false;
	int rc;

	pthread_mutex_lock(&c->mu);
	busy = c->initializing || c->s != NULL;
	c->initializing = true;
	pthread_mutex_unlock(&c->mu);
	if (busy) {
		pre_send(c, rpc_error(id, RPC_INVALID_REQUEST,
				      "initialize is already under way on "
				      "this connection",
				      NULL));
		return;
	}
	imsg = legacy_initialize_msg(msg);
	if (imsg == NULL)
		goto nomem;
	/* A refusal comes back as an error response (s NULL): sent below. */
	if (dispatch_initialize(srv, imsg, &response, &s) != STATUS_OK &&
	    response == NULL)
		goto nomem;
	if (s == NULL) {
		pre_send(c, response); /* the dispatcher's error */
		response = NULL;
		goto out;
	}
	/* before its id goes out: its tasks are this principal's (tasks.h) */
	memcpy(s->owner, c->owner, sizeof(s->owner));
	ex = calloc(1, sizeof(*ex));
	text = jsondump(response, JSON_COMPACT);
	if (ex == NULL || text == NULL)
		goto nomem;
	ex->base.ops = &legacy_exchange_ops;
	atomic_init(&ex->base.refs, 1); /* the connection's */
	exchange_grant(&ex->base, c->read_only, c->client);
	ex->s = s;
	session_ref(s);

	pthread_mutex_lock(&s->mu);
	rc = STATUS_OK;
	if (s->standalone == NULL)
		rc = stream_open(s, true, false, &s->standalone);
	pthread_mutex_lock(&c->mu);
	closed = c->closed;
	if (rc == STATUS_OK && !closed)
		rc = stream_attach(s->standalone, stream_wake, c, UINT64_MAX,
				   &c->gen, &c->cur);
	if (rc == STATUS_OK && !closed) {
		c->st = s->standalone;
		c->s = s;
		session_ref(s);
		c->ex = ex;
		ex = NULL;
	}
	c->initializing = false;
	pthread_mutex_unlock(&c->mu);
	/* After the reader is in place: the response wakes it. */
	if (rc == STATUS_OK && !closed &&
	    stream_send_text(s->standalone, text, strlen(text)) != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "legacy SSE: the initialize response was dropped");
	pthread_mutex_unlock(&s->mu);
	if (rc != STATUS_OK || closed) {
		/* No reader: the session is of no use to anyone. */
		session_delete(srv->sessions, s->id);
		if (!closed)
			pre_send(c, rpc_error(id, RPC_SERVER_BUSY,
					      "could not open the session's "
					      "event stream",
					      NULL));
	}
	goto out;
nomem:
	pthread_mutex_lock(&c->mu);
	c->initializing = false;
	pthread_mutex_unlock(&c->mu);
	if (s != NULL)
		session_delete(srv->sessions, s->id);
	pre_send(c, rpc_error(id, RPC_INTERNAL_ERROR, "out of memory", NULL));
out:
	if (ex != NULL)
		exchange_unref(&ex->base);
	free(text);
	json_decref(response);
	json_decref(imsg);
	session_release(s);
}

static enum MHD_Result
reply_accepted(struct req *r)
{
	return http_reply(r, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
}

/* A message on a connection whose session does not exist yet. */
static enum MHD_Result
post_before_session(struct req *r, struct legacy_conn *c, const json_t *msg,
		    enum rpc_kind kind)
{
	const json_t *id = json_object_get(msg, "id");

	if (kind != RPC_REQUEST)
		return reply_accepted(r); /* nothing to answer yet */
	if (is_method(msg, "initialize"))
		legacy_initialize(c, msg);
	else if (is_method(msg, "ping")) /* allowed before initialize */
		pre_send(c, rpc_result(id, json_object()));
	else
		pre_send(c, rpc_error(id, RPC_INVALID_REQUEST,
				      "not initialized: send initialize first",
				      NULL));
	return reply_accepted(r);
}

enum MHD_Result
legacy_sse_post(struct req *r)
{
	const char *id;
	struct legacy_conn *c = NULL;
	struct session *s = NULL, *linked;
	json_t *msg = NULL;
	json_error_t jerr;
	const char *why;
	const json_t *bad_id;
	enum rpc_kind kind;
	enum MHD_Result ret;
	char text[300];
	int rc;

	if (r->method != HTTP_POST)
		return http_reply_rpc_error(
			r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_BUSY,
			"method not allowed: POST JSON-RPC messages to "
			"/messages?session_id=<id> (the endpoint GET /sse "
			"announces)",
			(const char *[]){"Allow", "POST", NULL});
	id = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					 "session_id");
	if (id == NULL) /* the TypeScript SDK's spelling */
		id = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
						 "sessionId");
	if (id == NULL)
		return http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_SERVER_BUSY,
			"missing session_id: POST to the endpoint URI that "
			"the GET /sse stream announced",
			NULL);
	msg = jsonload(r->body.data != NULL ? r->body.data : "", r->body.len,
		       &jerr);
	if (msg == NULL) {
		snprintf(text, sizeof(text),
			 "parse error: the body is not valid JSON (%s at line "
			 "%d, column %d)",
			 jerr.text, jerr.line, jerr.column);
		ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					   RPC_PARSE_ERROR, text, NULL);
		goto out;
	}
	if (!json_is_object(msg)) {
		ret = http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
			"invalid request: POST one JSON-RPC message (an "
			"object) at a time",
			NULL);
		goto out;
	}
	kind = rpc_classify(msg, &why, &bad_id);
	http_set_rpc_id(r, msg); /* every error answer echoes it */
	c = conn_find(id);
	if (c != NULL && strcmp(c->owner, r->owner) != 0) {
		conn_unref(c); /* another principal's: as unknown */
		c = NULL;
	}
	if (c == NULL) {
		ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, -32001,
			"session not found: its event stream closed or never "
			"existed; open GET /sse again",
			NULL);
		goto out;
	}
	if (kind == RPC_INVALID) {
		snprintf(text, sizeof(text), "invalid request: %s", why);
		ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					   RPC_INVALID_REQUEST, text, NULL);
		goto out;
	}
	snprintf(r->rpc_method, sizeof(r->rpc_method), "%s",
		 dispatch_method_label(
			 json_string_value(json_object_get(msg, "method"))));
	pthread_mutex_lock(&c->mu);
	linked = c->closed ? NULL : c->s;
	if (!c->closed && linked == NULL) {
		pthread_mutex_unlock(&c->mu);
		ret = post_before_session(r, c, msg, kind);
		goto out;
	}
	pthread_mutex_unlock(&c->mu);
	/* Marks it busy, and fails once the stream has closed it. */
	if (linked == NULL ||
	    session_acquire(r->srv->sessions, linked->id, &s) != STATUS_OK) {
		ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, -32001,
			"session not found: it ended with its event stream; "
			"open GET /sse again",
			NULL);
		goto out;
	}
	snprintf(r->session, sizeof(r->session), "%s", s->id);
	if (kind == RPC_REQUEST && is_method(msg, "initialize")) {
		exchange_send(&c->ex->base,
			      rpc_error(json_object_get(msg, "id"),
					RPC_INVALID_REQUEST,
					"this session is already initialized: "
					"open a new GET /sse stream for "
					"another",
					NULL),
			      true);
		ret = reply_accepted(r);
		goto out;
	}
	rc = dispatch_message(r->srv, s, &c->ex->base, msg);
	if (rc == STATUS_FULL)
		ret = http_reply_rpc_error(
			r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
			RPC_MSG_QUEUE_FULL,
			(const char *[]){"Retry-After", "1", NULL});
	else
		ret = reply_accepted(r);
out:
	session_release(s);
	json_decref(msg);
	conn_unref(c);
	return ret;
}

/* --- janitor and drain --------------------------------------------------- */

void
legacy_sse_tick(struct server *srv, int64_t now_ms)
{
	static const char keepalive[] = ": keepalive\n\n";
	int64_t idle_ms =
		(int64_t)srv->cfg->server.session_idle_timeout_s * 1000;
	int64_t keep_ms = (int64_t)srv->cfg->server.sse_keepalive_s * 1000;
	struct legacy_conn *c;

	pthread_mutex_lock(&table.mu);
	for (c = table.head; c != NULL; c = c->next) {
		pthread_mutex_lock(&c->mu);
		if (c->s == NULL && !c->closed && !c->initializing) {
			if (now_ms - c->opened_ms > idle_ms) {
				c->closed = true; /* never initialized */
				conn_wake_locked(c);
			} else if (now_ms - c->last_write_ms >= keep_ms) {
				pre_append_locked(c, keepalive,
						  sizeof(keepalive) - 1);
			}
		}
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&table.mu);
}

void
legacy_sse_close_all(void)
{
	struct legacy_conn *c;

	pthread_mutex_lock(&table.mu);
	for (c = table.head; c != NULL; c = c->next) {
		pthread_mutex_lock(&c->mu);
		if (c->s == NULL) {
			c->closed = true;
			conn_wake_locked(c);
		}
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&table.mu);
}

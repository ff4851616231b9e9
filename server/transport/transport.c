/*
 * transport.c - MCP Streamable HTTP on /mcp.
 *
 * A POST becomes an exchange: its requests are dispatched, quick ones
 * answered at once, tool calls queued on the worker pool while the
 * connection is suspended.  When every request is answered and nothing
 * came before the answers, the reply is application/json; as soon as a
 * request sends a notification or a server-to-client request, the reply
 * becomes a text/event-stream whose events also go to the stream's replay
 * log, so a client that loses the connection resumes with GET and
 * Last-Event-ID (2025-11-25 basic/transports#resumability-and-redelivery).
 *
 * Locking: an exchange's state is guarded by its session's mutex.  The
 * MHD connection of an exchange or stream reader is suspended only by the
 * MHD thread that runs it and resumed by whichever thread produced data,
 * both under that mutex, with a flag telling whether it is suspended.
 */
#include "transport/transport.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/server.h"
#include "http/http.h"
#include "json/jsondump.h"
#include "json/jsonload.h"
#include "mcp/dispatch.h"
#include "mcp/exchange.h"
#include "mcp/reqmeta.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "mcp/sessstore.h"
#include "mcp/tools.h"
#include "pg/sessdb.h"

/* SSE chunk size handed to MHD per reader call. */
#define SSE_BLOCK 16384

struct text {
	char *p;
	size_t len;
};

struct http_exchange {
	struct exchange base; /* first */
	struct session *s;    /* reference */
	struct MHD_Connection *conn;
	/* under s->mu */
	int outstanding; /* requests not answered yet */
	bool parked;	 /* conn suspended until the answers are ready */
	/* JSON mode: answers so far, in order, already serialized (the
	 * tools/list page is spliced in as text: no re-encoding). */
	struct text *answers;
	size_t nanswers, capanswers;
	struct stream *stream; /* SSE mode once a message precedes them */
	bool drop_on_attach;
	unsigned status; /* HTTP status of a JSON reply (0: 200) */
	json_t *ids;	 /* shared sessions: the request ids it answers */
	bool batch;	 /* [const] the POST was a batch */
	/* status 403: the request's tool needs this scope (step-up, see
	 * ex_step_up); under s->mu */
	char step_up_scope[128];
	char step_up_tool[128];
};

/* An SSE connection reading one stream. */
struct sse_reader {
	struct server *srv;
	struct session *s; /* reference */
	struct stream *st;
	struct MHD_Connection *conn;
	unsigned gen;
	struct sse_cursor cur;
	bool suspended; /* under s->mu */
};

static bool
prime_streams(const struct session *s)
{
	/* Priming events only for clients that expect them: older ones
	 * choke on an empty data line (MCP-DIGEST A3.8). */
	return !s->stateless && strcmp(s->version, "2025-11-25") >= 0;
}

/* The HTTP status a 2026-07-28 error answer carries (SH): 404 for an
 * unknown method, 400 for the header, capability and version errors. */
static unsigned
stateless_status(int code)
{
	switch (code) {
	case RPC_METHOD_NOT_FOUND: return MHD_HTTP_NOT_FOUND;
	case RPC_HEADER_MISMATCH:
	case RPC_MISSING_CAPABILITY:
	case RPC_UNSUPPORTED_VERSION: return MHD_HTTP_BAD_REQUEST;
	default: return MHD_HTTP_OK;
	}
}

/* --- the exchange ---------------------------------------------------- */

static void
ex_unpark(struct http_exchange *ex)
{
	if (ex->parked) {
		ex->parked = false;
		MHD_resume_connection(ex->conn);
	}
}

static void
ex_clear_answers(struct http_exchange *ex)
{
	size_t i;

	for (i = 0; i < ex->nanswers; i++)
		free(ex->answers[i].p);
	ex->nanswers = 0;
}

/* Keeps an answer for the JSON reply (s->mu held); takes text. */
static int
ex_keep_answer(struct http_exchange *ex, char *text, size_t len)
{
	if (ex->nanswers == ex->capanswers) {
		size_t cap = ex->capanswers ? ex->capanswers * 2 : 1;
		struct text *v = realloc(ex->answers, cap * sizeof(*v));

		if (v == NULL) {
			free(text);
			return STATUS_NOMEM;
		}
		ex->answers = v;
		ex->capanswers = cap;
	}
	ex->answers[ex->nanswers].p = text;
	ex->answers[ex->nanswers].len = len;
	ex->nanswers++;
	return STATUS_OK;
}

/* Opens the SSE stream and moves the answers so far into it (s->mu). */
static int
ex_open_stream(struct http_exchange *ex)
{
	size_t i;
	int rc;

	rc = stream_open(ex->s, false, prime_streams(ex->s), &ex->stream);
	if (rc != STATUS_OK)
		return rc;
	/* stored with the stream: if this replica dies, another answers
	 * these with an error (sessstore.c) */
	if (ex->ids != NULL)
		ex->stream->requests = json_incref(ex->ids);
	for (i = 0; i < ex->nanswers; i++) {
		rc = stream_send_text(ex->stream, ex->answers[i].p,
				      ex->answers[i].len);
		if (rc != STATUS_OK)
			return rc;
	}
	ex_clear_answers(ex);
	ex_unpark(ex);
	return STATUS_OK;
}

/*
 * The one path for every message (s->mu not held): text is the message
 * serialized (taken), or NULL for a request that ends unanswered.
 */
static void
ex_deliver(struct http_exchange *ex, char *text, size_t len, bool final)
{
	struct session *s = ex->s;
	int rc = STATUS_OK;

	pthread_mutex_lock(&s->mu);
	if (final)
		ex->outstanding--;
	if (ex->stream == NULL && !final && text != NULL)
		rc = ex_open_stream(ex);
	if (rc != STATUS_OK) {
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "message dropped: no stream (%s)", status_str(rc));
	} else if (ex->stream != NULL) {
		if (text != NULL &&
		    stream_send_text(ex->stream, text, len) != STATUS_OK)
			log_warn(&(struct log_fields){.session = s->id,
						      .duration_ms = -1},
				 "message dropped: stream buffer");
		if (ex->outstanding == 0)
			stream_finish(ex->stream);
	} else {
		if (text != NULL) {
			rc = ex_keep_answer(ex, text, len);
			text = NULL;
			if (rc != STATUS_OK)
				log_error(
					&(struct log_fields){.session = s->id,
							     .duration_ms = -1},
					"answer dropped: out of memory");
		}
		if (ex->outstanding == 0)
			ex_unpark(ex);
	}
	pthread_mutex_unlock(&s->mu);
	free(text);
}

static bool
ex_stateless(const struct exchange *base)
{
	return ((const struct http_exchange *)base)->s->stateless;
}

/*
 * A call beyond the credential's scopes (RPC_INSUFFICIENT_SCOPE, error e)
 * answers HTTP 403 with the step-up challenge when the status is still
 * ours to choose: one request, no event stream open yet (MCP
 * authorization, "Scope Challenge Handling": the client authorizes again
 * with the scope and retries).  A batch member or an answer on a stream
 * keeps the JSON-RPC error alone.  False when it cannot be given.
 */
static bool
ex_step_up(struct http_exchange *ex, const json_t *e)
{
	const json_t *data = json_object_get(e, "data");
	const char *scope = json_string_value(json_object_get(data, "scope"));
	const char *tool = json_string_value(json_object_get(data, "tool"));
	bool ok;

	if (ex->batch || scope == NULL)
		return false;
	pthread_mutex_lock(&ex->s->mu);
	ok = ex->stream == NULL;
	if (ok) {
		ex->status = MHD_HTTP_FORBIDDEN;
		snprintf(ex->step_up_scope, sizeof(ex->step_up_scope), "%s",
			 scope);
		snprintf(ex->step_up_tool, sizeof(ex->step_up_tool), "%s",
			 tool != NULL ? tool : "");
	}
	pthread_mutex_unlock(&ex->s->mu);
	return ok;
}

static void
ex_send(struct exchange *base, json_t *msg, bool final)
{
	struct http_exchange *ex = (struct http_exchange *)base;
	const json_t *e = json_object_get(msg, "error");
	int code = (int)json_integer_value(json_object_get(e, "code"));
	char *text = NULL;

	if (final && e != NULL &&
	    !(code == RPC_INSUFFICIENT_SCOPE && ex_step_up(ex, e)) &&
	    ex_stateless(base))
		ex->status = stateless_status(code);
	if (msg != NULL) {
		text = jsondump(msg, JSON_COMPACT);
		if (text == NULL)
			log_error(&(struct log_fields){.duration_ms = -1},
				  "message dropped: out of memory");
	}
	ex_deliver((struct http_exchange *)base, text,
		   text != NULL ? strlen(text) : 0, final);
	/* after the answer is on its way: freeing a large result (thousands
	 * of values for query_traces) is no part of the client's wait */
	json_decref(msg);
}

static void
ex_send_text(struct exchange *base, char *text, size_t len)
{
	ex_deliver((struct http_exchange *)base, text, len, true);
}

static int
ex_drop(struct exchange *base)
{
	struct http_exchange *ex = (struct http_exchange *)base;
	int rc = STATUS_OK;

	pthread_mutex_lock(&ex->s->mu);
	if (!prime_streams(ex->s))
		rc = STATUS_UNSUPPORTED;
	else if (ex->stream == NULL)
		rc = ex_open_stream(ex);
	if (rc == STATUS_OK) {
		if (ex->stream->attached)
			stream_drop_connection(ex->stream);
		else
			ex->drop_on_attach = true;
	}
	pthread_mutex_unlock(&ex->s->mu);
	return rc;
}

static void
ex_free(struct exchange *base)
{
	struct http_exchange *ex = (struct http_exchange *)base;

	ex_clear_answers(ex);
	free(ex->answers);
	json_decref(ex->ids);
	session_release(ex->s);
	free(ex);
}

static const struct exchange_ops http_exchange_ops = {
	.send = ex_send,
	.send_text = ex_send_text,
	.drop = ex_drop,
	.free = ex_free,
};

/* --- SSE responses --------------------------------------------------- */

static void
sse_wake(void *arg)
{
	struct sse_reader *rd = arg;

	if (rd->suspended) {
		rd->suspended = false;
		MHD_resume_connection(rd->conn);
	}
}

static ssize_t
sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse_reader *rd = cls;
	enum stream_state state;
	size_t n;

	(void)pos;
	pthread_mutex_lock(&rd->s->mu);
	state = stream_read(rd->st, rd->gen, &rd->cur, buf, max, &n);
	if (state == STREAM_WAIT) {
		/* Park until stream_send or the janitor wakes us; returning
		 * 0 without suspending would spin (microhttpd.h). */
		rd->suspended = true;
		MHD_suspend_connection(rd->conn);
	}
	pthread_mutex_unlock(&rd->s->mu);
	if (state == STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)n;
}

static void
sse_free(void *cls)
{
	struct sse_reader *rd = cls;

	pthread_mutex_lock(&rd->s->mu);
	stream_detach(rd->st, rd->gen);
	pthread_mutex_unlock(&rd->s->mu);
	expo_dec(rd->srv->m.sse_streams);
	session_unref(rd->s);
	free(rd);
}

/*
 * Queues an SSE response reading st from after_seq (UINT64_MAX: from what
 * is new).  Called with s->mu held.  On failure nothing is queued and the
 * caller answers with an error.
 */
static int
sse_respond(struct req *r, struct session *s, struct stream *st,
	    uint64_t after_seq, bool drop_after_first, enum MHD_Result *mret)
{
	struct sse_reader *rd;
	struct MHD_Response *resp;
	int rc;

	rd = calloc(1, sizeof(*rd));
	if (rd == NULL)
		return STATUS_NOMEM;
	rd->srv = r->srv;
	rd->s = s;
	rd->st = st;
	rd->conn = r->conn;
	rc = stream_attach(st, sse_wake, rd, after_seq, &rd->gen, &rd->cur);
	if (rc != STATUS_OK) {
		free(rd);
		return rc;
	}
	if (drop_after_first)
		st->drop = true;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK,
						 sse_read, rd, sse_free);
	if (resp == NULL) {
		stream_detach(st, rd->gen);
		free(rd);
		return STATUS_NOMEM;
	}
	session_ref(s);
	expo_inc(r->srv->m.sse_streams);
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	if (!s->stateless)
		MHD_add_response_header(resp, "Mcp-Session-Id", s->id);
	*mret = http_queue(r, MHD_HTTP_OK, resp);
	return STATUS_OK;
}

/* --- POST ------------------------------------------------------------ */

static enum MHD_Result
reply_json_text(struct req *r, unsigned status, const char *text, size_t len,
		const char *session_id)
{
	const char *hdrs[] = {"Mcp-Session-Id", session_id, NULL};

	return http_reply(r, status, "application/json", text, len,
			  session_id != NULL ? hdrs : NULL);
}

static enum MHD_Result
reply_json(struct req *r, unsigned status, json_t *msg, const char *session_id)
{
	char *text = jsondump(msg, JSON_COMPACT);
	enum MHD_Result ret;

	json_decref(msg);
	if (text == NULL)
		return http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					    RPC_INTERNAL_ERROR, "out of memory",
					    NULL);
	ret = reply_json_text(r, status, text, strlen(text), session_id);
	free(text);
	return ret;
}

/* The answers of a 2025-03-26 batch as one JSON array (s->mu held). */
static char *
join_batch(struct http_exchange *ex, size_t *len)
{
	struct buf b;
	char *text;

	buf_init(&b, SIZE_MAX / 2);
	buf_puts(&b, "[");
	for (size_t i = 0; i < ex->nanswers; i++) {
		if (i > 0)
			buf_puts(&b, ",");
		buf_append(&b, ex->answers[i].p, ex->answers[i].len);
	}
	buf_puts(&b, "]");
	return buf_finish(&b, &text, len) == STATUS_OK ? text : NULL;
}

/* Answers an exchange whose replies are ready, or parks it again. */
static enum MHD_Result
exchange_answer(struct req *r, struct http_exchange *ex, bool batch)
{
	struct session *s = ex->s;
	enum MHD_Result ret = MHD_YES;
	char *body, sid[SESSION_ID_LEN + 1], challenge[2048];
	const char *const *hdrs, *step_up_hdrs[5];
	unsigned status;
	size_t len;
	int rc;

	memcpy(sid, s->id, sizeof(sid));
	hdrs = s->stateless ? NULL
			    : (const char *[]){"Mcp-Session-Id", sid, NULL};
	pthread_mutex_lock(&s->mu);
	if (ex->stream != NULL) {
		rc = sse_respond(r, s, ex->stream, UINT64_MAX,
				 ex->drop_on_attach, &ret);
		ex->drop_on_attach = false;
		pthread_mutex_unlock(&s->mu);
		if (rc != STATUS_OK)
			return http_reply_rpc_error(
				r, MHD_HTTP_SERVICE_UNAVAILABLE,
				RPC_SERVER_BUSY,
				rc == STATUS_FULL
					? "too many open streams on this "
					  "session: close one and retry"
					: "could not open the event stream",
				NULL);
		return ret;
	}
	if (ex->outstanding > 0) {
		ex->parked = true;
		MHD_suspend_connection(r->conn);
		pthread_mutex_unlock(&s->mu);
		return MHD_YES;
	}
	if (ex->nanswers == 0) {
		/* Every request ended without an answer (cancelled): an empty
		 * event stream says "done" without inventing a response. */
		pthread_mutex_unlock(&s->mu);
		return http_reply(r, MHD_HTTP_OK, "text/event-stream", "", 0,
				  hdrs);
	}
	if (!batch) {
		body = ex->answers[0].p;
		len = ex->answers[0].len;
		ex->answers[0].p = NULL;
		ex->nanswers = 0;
	} else {
		body = join_batch(ex, &len);
	}
	status = ex->status != 0 ? ex->status : MHD_HTTP_OK;
	if (ex->step_up_scope[0] != '\0') {
		char why[400];

		http_scope_why(why, sizeof(why), ex->step_up_tool,
			       ex->step_up_scope);
		if (http_scope_challenge(r, ex->step_up_scope, why, challenge,
					 sizeof(challenge)) == STATUS_OK) {
			size_t h = 0;

			if (!s->stateless) {
				step_up_hdrs[h++] = "Mcp-Session-Id";
				step_up_hdrs[h++] = sid;
			}
			step_up_hdrs[h++] = "WWW-Authenticate";
			step_up_hdrs[h++] = challenge;
			step_up_hdrs[h] = NULL;
			hdrs = step_up_hdrs;
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (body == NULL)
		return http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					    RPC_INTERNAL_ERROR, "out of memory",
					    NULL);
	return http_reply_owned(r, status, "application/json", body, len, hdrs);
}

/* What r->tp holds on /mcp: an exchange waiting for its answers, or a
 * request waiting for the session store (shared sessions). */
enum tp_kind {
	TP_POST = 1,
	TP_WAIT,
};

struct post_state {
	enum tp_kind kind; /* TP_POST */
	struct server *srv;
	struct http_exchange *ex;
	bool batch;
};

/* --- waiting for the session store ----------------------------------- */

enum wait_op {
	W_LOOKUP, /* the session is not resident here: load it */
	W_CREATE, /* initialize: the session is stored before its id goes out */
	W_DELETE,
	W_ATTACH, /* GET: a stream written elsewhere, or the GET stream */
};

/*
 * A request parked while a store job runs; the job's completion resumes
 * the connection and the request is handled again from the start (the
 * session is resident then), or answered from the outcome.  Two
 * references: the request's (tp_free) and the job's (until done runs).
 */
struct store_wait {
	enum tp_kind kind; /* TP_WAIT */
	enum wait_op op;
	atomic_int refs;
	pthread_mutex_t mu;
	struct MHD_Connection *conn;
	bool suspended, done; /* under mu */
	int rc;		      /* the job's status, once done */
	struct session *s;    /* W_CREATE, W_ATTACH: a reference */
	json_t *response;     /* W_CREATE: the InitializeResult */
	uint64_t after;	      /* W_ATTACH: Last-Event-ID's number */
	char stream_id[32];   /* W_ATTACH: "" for the GET stream */
};

static void
wait_unref(struct store_wait *w)
{
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	if (w->s != NULL)
		session_unref(w->s);
	json_decref(w->response);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static void
wait_free_tp(void *tp)
{
	wait_unref(tp);
}

/* A finished wait left on r (a lookup that made the session resident). */
static struct store_wait *
wait_of(struct req *r)
{
	struct store_wait *w = r->tp;

	return w != NULL && w->kind == TP_WAIT ? w : NULL;
}

static void
wait_clear(struct req *r)
{
	struct store_wait *w = wait_of(r);

	if (w != NULL) {
		r->tp = NULL;
		r->tp_free = NULL;
		wait_unref(w);
	}
}

static void
wait_done(void *arg, int status)
{
	struct store_wait *w = arg;

	pthread_mutex_lock(&w->mu);
	w->done = true;
	w->rc = status;
	if (w->suspended) {
		w->suspended = false;
		MHD_resume_connection(w->conn);
	}
	pthread_mutex_unlock(&w->mu);
	wait_unref(w);
}

static struct store_wait *
wait_new(struct req *r, enum wait_op op)
{
	struct store_wait *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->kind = TP_WAIT;
	w->op = op;
	atomic_init(&w->refs, 2);
	pthread_mutex_init(&w->mu, NULL);
	w->conn = r->conn;
	wait_clear(r);
	r->tp = w;
	r->tp_free = wait_free_tp;
	return w;
}

/* The answer when the store could not do its part: never a 404 that
 * would make a client drop a live session. */
static enum MHD_Result
store_unavailable(struct req *r)
{
	return http_reply_rpc_error(
		r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
		"the session store is unavailable: retry in a second",
		(const char *[]){"Retry-After", "1", NULL});
}

/*
 * Starts op on the store and parks the request.  The wait w is r->tp
 * already (wait_new); start queues the job with wait_done.  On a refused
 * job the request is answered 503 at once.
 */
static enum MHD_Result
wait_park(struct req *r, struct store_wait *w, int rc)
{
	if (rc != STATUS_OK) {
		wait_unref(w); /* the job's reference: it will not run */
		return store_unavailable(r);
	}
	pthread_mutex_lock(&w->mu);
	if (!w->done) {
		w->suspended = true;
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&w->mu);
	return MHD_YES;
}

static void
post_state_free(void *tp)
{
	struct post_state *ps = tp;
	struct session *s = ps->ex->s;
	bool gone;

	/* a 2026-07-28 request's session ends with it: at once, not at the
	 * janitor's next sweep, or a busy gateway fills the table.  A
	 * client that hangs up before the answer cancels the request (SH)
	 * and its call with it; a call that became a task keeps the session
	 * until it ends (the sweep takes it then). */
	pthread_mutex_lock(&s->mu);
	gone = s->stateless && (ps->ex->outstanding > 0 || s->calls == NULL);
	pthread_mutex_unlock(&s->mu);
	if (gone)
		(void)session_delete(ps->srv->requests, s->id);
	exchange_unref(&ps->ex->base);
	free(ps);
}

static enum MHD_Result post_first(struct req *r);
static enum MHD_Result get_stream(struct req *r);
static enum MHD_Result delete_session(struct req *r);

static const char *
version_list(void)
{
	return "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05";
}

/* Checks the MCP-Protocol-Version header: 400 when unsupported.  Only
 * the supported set is checked, not equality with the session's (the
 * conformance suite sends 2025-03-26 on 2025-11-25 sessions). */
static bool
version_header_ok(struct req *r, enum MHD_Result *ret)
{
	const char *v = http_header(r, "MCP-Protocol-Version");
	char msg[200];

	if (v == NULL || dispatch_version_supported(v))
		return true;
	snprintf(msg, sizeof(msg),
		 "unsupported MCP-Protocol-Version \"%.40s\": this server "
		 "speaks %s",
		 v, version_list());
	*ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST, RPC_SERVER_BUSY,
				    msg, NULL);
	return false;
}

/* Finds the session of the request: 400 without a header, 404 unknown. */
static struct session *
find_session(struct req *r, enum MHD_Result *ret)
{
	const char *id = http_header(r, "Mcp-Session-Id");
	struct session *s = NULL;

	if (id == NULL) {
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_SERVER_BUSY,
			"missing Mcp-Session-Id header: send initialize first "
			"and pass the session id it returns",
			NULL);
		return NULL;
	}
	if (session_acquire(r->srv->sessions, id, &s) != STATUS_OK) {
		struct store_wait *w = wait_of(r);

		/* shared sessions: load it (once) and come back */
		if (r->srv->store != NULL && w == NULL &&
		    strlen(id) == SESSION_ID_LEN) {
			w = wait_new(r, W_LOOKUP);
			if (w == NULL) {
				*ret = store_unavailable(r);
				return NULL;
			}
			*ret = wait_park(r, w,
					 sessstore_lookup(r->srv->store, id,
							  wait_done, w));
			return NULL;
		}
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, -32001,
			"session not found (expired or deleted): initialize a "
			"new session",
			NULL);
		return NULL;
	}
	if (strcmp(s->owner, r->owner) != 0) {
		/* another principal's session: as if unknown, so that an id
		 * seen elsewhere tells nothing (MCP authorization, sessions
		 * bound to the principal) */
		session_release(s);
		wait_clear(r);
		*ret = http_reply_rpc_error(
			r, MHD_HTTP_NOT_FOUND, -32001,
			"session not found (expired or deleted): initialize a "
			"new session",
			NULL);
		return NULL;
	}
	if (s->shared && wait_of(r) == NULL)
		sessstore_hit(s->store);
	wait_clear(r);
	snprintf(r->session, sizeof(r->session), "%s", s->id);
	return s;
}

/* initialize refused for server.max_sessions (counted across the gateways
 * sharing the store when shared): 503 with the request's id (borrowed)
 * and when to retry. */
static enum MHD_Result
sessions_full(struct req *r, const json_t *id, int retry_s, bool shared)
{
	char msg[300], after[16], *text;
	json_t *e;
	enum MHD_Result ret;

	snprintf(after, sizeof(after), "%d", retry_s);
	snprintf(msg, sizeof(msg),
		 "too many sessions: server.max_sessions (%d) are live%s; "
		 "retry in %d s, or end unused sessions with DELETE",
		 r->srv->cfg->server.max_sessions,
		 shared ? " across the gateways sharing the database" : "",
		 retry_s);
	e = rpc_error(id, RPC_SERVER_BUSY, msg, NULL);
	text = e != NULL ? jsondump(e, JSON_COMPACT) : NULL;
	json_decref(e);
	if (text == NULL)
		return http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					    RPC_INTERNAL_ERROR, "out of memory",
					    NULL);
	ret = http_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
			 text, strlen(text),
			 (const char *[]){"Retry-After", after, NULL});
	free(text);
	return ret;
}

static enum MHD_Result
post_initialize(struct req *r, const json_t *msg)
{
	struct session *s = NULL;
	json_t *response = NULL;
	char sid[SESSION_ID_LEN + 1];
	int rc;

	if (http_header(r, "Mcp-Session-Id") != NULL) {
		struct session *old = NULL;

		if (session_acquire(r->srv->sessions,
				    http_header(r, "Mcp-Session-Id"),
				    &old) == STATUS_OK) {
			session_release(old);
			return http_reply_rpc_error(
				r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
				"this session is already initialized: send "
				"initialize without Mcp-Session-Id to start a "
				"new session",
				NULL);
		}
	}
	snprintf(r->rpc_method, sizeof(r->rpc_method), "initialize");
	rc = dispatch_initialize(r->srv, msg, &response, &s);
	if (s == NULL) {
		if (response == NULL)
			return http_reply_rpc_error(
				r, MHD_HTTP_INTERNAL_SERVER_ERROR,
				RPC_INTERNAL_ERROR, "out of memory", NULL);
		if (rc == STATUS_FULL) {
			json_decref(response);
			return sessions_full(
				r, json_object_get(msg, "id"),
				session_table_retry_s(r->srv->sessions,
						      clock_mono_ms()),
				false);
		}
		return reply_json(r, MHD_HTTP_OK, response, NULL);
	}
	memcpy(sid, s->id, sizeof(sid));
	/* before the id goes out or is stored: no one else has s yet */
	memcpy(s->owner, r->owner, sizeof(s->owner));
	snprintf(r->session, sizeof(r->session), "%s", sid);
	if (r->srv->store != NULL) {
		/* stored before its id goes out: the client's next request
		 * may reach any replica */
		struct store_wait *w = wait_new(r, W_CREATE);
		char key[SESSDB_KEY_LEN + 1];

		if (w == NULL) {
			session_delete(r->srv->sessions, sid);
			session_release(s);
			json_decref(response);
			return store_unavailable(r);
		}
		sessdb_key(sid, key);
		session_share(r->srv->sessions, s, key, r->srv->store);
		session_ref(s);
		w->s = s;
		w->response = response;
		session_release(s);
		rc = sessstore_create(r->srv->store, s, wait_done, w);
		if (rc != STATUS_OK)
			session_delete(r->srv->sessions, sid);
		return wait_park(r, w, rc);
	}
	session_release(s);
	return reply_json(r, MHD_HTTP_OK, response, sid);
}

/* A GET stream that could not be opened (sse_respond's rc). */
static enum MHD_Result
stream_refused(struct req *r, int rc)
{
	return http_reply_rpc_error(
		r,
		rc == STATUS_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
				  : MHD_HTTP_INTERNAL_SERVER_ERROR,
		RPC_SERVER_BUSY,
		rc == STATUS_FULL
			? "too many open streams on this session "
			  "(server.max_streams_per_session): close one"
			: "could not open the event stream",
		NULL);
}

/* A parked request's store job is done: answer, or handle it again. */
static enum MHD_Result
wait_resumed(struct req *r, struct store_wait *w)
{
	struct session *s = w->s;
	struct stream *st;
	enum MHD_Result ret = MHD_YES;
	int rc;

	switch (w->op) {
	case W_LOOKUP:
		if (w->rc == STATUS_NOTFOUND)
			return http_reply_rpc_error(
				r, MHD_HTTP_NOT_FOUND, -32001,
				"session not found (expired or deleted): "
				"initialize a new session",
				NULL);
		if (w->rc != STATUS_OK)
			return store_unavailable(r);
		/* resident now: once more from the start (w stays on r so
		 * that a miss now is a 404, not another lookup) */
		switch (r->method) {
		case HTTP_POST: return post_first(r);
		case HTTP_GET: return get_stream(r);
		default: return delete_session(r);
		}
	case W_CREATE:
		if (w->rc != STATUS_OK) {
			session_delete(r->srv->sessions, s->id);
			if (w->rc == STATUS_FULL)
				return sessions_full(
					r, json_object_get(w->response, "id"),
					sessstore_full_retry_s(r->srv->store),
					true);
			return store_unavailable(r);
		}
		ret = reply_json(r, MHD_HTTP_OK, w->response, s->id);
		w->response = NULL;
		return ret;
	case W_DELETE:
		if (w->rc == STATUS_NOTFOUND)
			return http_reply_rpc_error(r, MHD_HTTP_NOT_FOUND,
						    -32001, "session not found",
						    NULL);
		if (w->rc != STATUS_OK)
			return store_unavailable(r);
		log_info(&(struct log_fields){.request_id = r->rid,
					      .session = r->session,
					      .duration_ms = -1},
			 "session deleted by the client");
		return http_reply(r, MHD_HTTP_OK, NULL, "", 0, NULL);
	case W_ATTACH: break;
	}
	if (w->rc == STATUS_NOTFOUND)
		return http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
			w->stream_id[0] != '\0'
				? "unknown Last-Event-ID: the stream is gone; "
				  "open a new stream without Last-Event-ID"
				: "session not found (expired or deleted): "
				  "initialize a new session",
			NULL);
	if (w->rc != STATUS_OK)
		return store_unavailable(r);
	pthread_mutex_lock(&s->mu);
	st = w->stream_id[0] != '\0'
		     ? stream_find(s, w->stream_id, strlen(w->stream_id))
		     : s->standalone;
	rc = st != NULL && !s->closed
		     ? sse_respond(r, s, st, w->after, false, &ret)
		     : STATUS_NOTFOUND;
	pthread_mutex_unlock(&s->mu);
	if (rc == STATUS_NOTFOUND)
		return store_unavailable(r); /* evicted meanwhile: retry */
	if (rc != STATUS_OK)
		return stream_refused(r, rc);
	return ret;
}

/* --- 2026-07-28: stateless requests --------------------------------- */

/* A JSON-RPC error without "id" when none could be read (the 2026-07-28
 * schema refuses a null id); data stolen. */
static enum MHD_Result stateless_error(struct req *r, unsigned status,
				       const json_t *id, int code, json_t *data,
				       const char *fmt, ...) PRINTF_LIKE(6, 7);

static enum MHD_Result
stateless_error(struct req *r, unsigned status, const json_t *id, int code,
		json_t *data, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	json_t *e;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e = rpc_error(id, code, msg, data);
	if (e != NULL && id == NULL)
		json_object_del(e, "id");
	if (e == NULL)
		return http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					    RPC_INTERNAL_ERROR, "out of memory",
					    NULL);
	snprintf(r->rpc_method, sizeof(r->rpc_method), "%s", "other");
	return reply_json(r, status, e, NULL);
}

/* A header value with optional whitespace trimmed and =?base64?..?=
 * decoded (strictly: canonical padding only) into buf.  False for bad
 * base64 or a value that does not fit. */
static bool
header_value(const char *raw, char *buf, size_t cap)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
				       "nopqrstuvwxyz0123456789+/";
	size_t n, pad = 0, out = 0;
	uint32_t acc = 0;
	int bits = 0;

	while (*raw == ' ' || *raw == '\t')
		raw++;
	n = strlen(raw);
	while (n > 0 && (raw[n - 1] == ' ' || raw[n - 1] == '\t'))
		n--;
	if (n < 11 || strncmp(raw, "=?base64?", 9) != 0 ||
	    strncmp(raw + n - 2, "?=", 2) != 0) {
		if (n >= cap)
			return false;
		memcpy(buf, raw, n);
		buf[n] = '\0';
		return true;
	}
	raw += 9;
	n -= 11;
	if (n % 4 != 0)
		return false;
	while (pad < 2 && pad < n && raw[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++) {
		const char *p = memchr(alphabet, raw[i], 64);

		if (raw[i] == '\0' || p == NULL)
			return false;
		acc = (acc << 6) | (uint32_t)(p - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (out + 1 >= cap)
				return false;
			buf[out++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* leftover bits must be zero: one spelling per value */
	if ((acc & ((1u << bits) - 1)) != 0)
		return false;
	buf[out] = '\0';
	return strlen(buf) == out;
}

/* The param Mcp-Name must repeat for method, or NULL when none. */
static const char *
name_param(const char *method)
{
	if (strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "prompts/get") == 0)
		return "name";
	if (strcmp(method, "resources/read") == 0)
		return "uri";
	if (strcmp(method, "tasks/get") == 0 ||
	    strcmp(method, "tasks/update") == 0 ||
	    strcmp(method, "tasks/cancel") == 0)
		return "taskId";
	return NULL;
}

/* Mcp-Method and Mcp-Name against the body (SEP-2243); why for -32020. */
static bool
standard_headers_ok(struct req *r, const json_t *msg, char *why, size_t len)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *h = http_header(r, "Mcp-Method"), *key;
	const json_t *want;
	char v[1024];

	if (h == NULL || !header_value(h, v, sizeof(v)) ||
	    strcmp(v, method) != 0) {
		snprintf(why, len,
			 "the Mcp-Method header %s: it must repeat the "
			 "request's method \"%.100s\" exactly",
			 h == NULL ? "is missing" : "does not match", method);
		return false;
	}
	key = name_param(method);
	want = key != NULL
		       ? json_object_get(json_object_get(msg, "params"), key)
		       : NULL;
	if (!json_is_string(want))
		return true; /* dispatch names the missing param */
	h = http_header(r, "Mcp-Name");
	if (h == NULL || !header_value(h, v, sizeof(v)) ||
	    strcmp(v, json_string_value(want)) != 0) {
		snprintf(why, len,
			 "the Mcp-Name header %s: it must repeat params.%s "
			 "(=?base64?...?= for values that are not plain "
			 "ASCII)",
			 h == NULL ? "is missing" : "does not match", key);
		return false;
	}
	return true;
}

/* SH "Value Encoding": a plain value is visible ASCII, space and tab;
 * anything else travels as =?base64?...?=. */
static bool
header_chars_ok(const char *raw)
{
	for (const unsigned char *p = (const unsigned char *)raw; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p > 0x7e)
			return false;
	return true;
}

/* One x-mcp-header parameter of a tools/call (SEP-2243 "Server Behavior
 * for Custom Headers"): a header it names must be valid even when the
 * argument has no value; when it has one, the header must be there and
 * match it.  STATUS_INVALID with why for -32020, or STATUS_NOMEM. */
static int
param_header_check(struct req *r, const struct tool_header *h,
		   const json_t *args, char *why, size_t len)
{
	const char *raw = http_header(r, h->header);
	const json_t *v = tools_header_arg(h, args);
	char *text;
	int rc = STATUS_OK;

	if (raw == NULL && v == NULL)
		return STATUS_OK;
	if (raw == NULL) {
		snprintf(why, len,
			 "the %s header is missing: params.arguments.%s has a "
			 "value, which the header must repeat (=?base64?...?= "
			 "for values that are not plain ASCII)",
			 h->header, h->arg);
		return STATUS_INVALID;
	}
	/* decoding never lengthens a value */
	if ((text = malloc(strlen(raw) + 1)) == NULL)
		return STATUS_NOMEM;
	if (!header_chars_ok(raw) ||
	    !header_value(raw, text, strlen(raw) + 1)) {
		snprintf(why, len,
			 "the %s header is not valid: send visible ASCII as "
			 "is, anything else as =?base64?<padded standard "
			 "Base64 of the UTF-8 value>?=",
			 h->header);
		rc = STATUS_INVALID;
	} else if (v != NULL && !tools_header_matches(h, v, text)) {
		snprintf(why, len,
			 "the %s header does not match params.arguments.%s: "
			 "it must repeat the value (%s)",
			 h->header, h->arg,
			 h->type == TOOL_HEADER_STRING ? "the same string"
			 : h->type == TOOL_HEADER_INTEGER
				 ? "the same integer in decimal"
				 : "true or false");
		rc = STATUS_INVALID;
	}
	free(text);
	return rc;
}

/* The Mcp-Param-* headers of a tools/call against its arguments.  An
 * unknown tool has none: dispatch answers it (-32602). */
static int
param_headers_check(struct req *r, const json_t *msg, char *why, size_t len)
{
	const json_t *params = json_object_get(msg, "params");
	const json_t *args = json_object_get(params, "arguments");
	const char *name = json_string_value(json_object_get(params, "name"));
	const struct tool_def *tool;
	struct tools *t;
	int rc = STATUS_OK;

	if (name == NULL)
		return STATUS_OK;
	server_live_rdlock(r->srv);
	t = r->srv->tools;
	tools_ref(t);
	server_live_unlock(r->srv);
	tool = tools_find(t, name);
	for (size_t i = 0;
	     tool != NULL && rc == STATUS_OK && i < tool->nheaders; i++)
		rc = param_header_check(r, &tool->headers[i], args, why, len);
	tools_unref(t);
	return rc;
}

/* Serves one 2026-07-28 request (SH, BI): envelope checks in the order
 * the specification's errors need, then a session of its own. */
static enum MHD_Result
post_stateless(struct req *r, const json_t *body)
{
	const char *hdr = http_header(r, "MCP-Protocol-Version");
	const char *why, *method;
	const json_t *id = NULL;
	struct reqmeta meta;
	struct session *s = NULL;
	struct http_exchange *ex = NULL;
	struct post_state *ps = NULL;
	enum rpc_kind kind = rpc_classify(body, &why, &id);
	char msg[600];
	int rc;

	if (kind == RPC_INVALID)
		return stateless_error(r, MHD_HTTP_BAD_REQUEST, id,
				       RPC_INVALID_REQUEST, NULL,
				       "invalid request: %s", why);
	if (kind == RPC_RESPONSE)
		return stateless_error(
			r, MHD_HTTP_BAD_REQUEST, id, RPC_INVALID_REQUEST, NULL,
			"invalid request: revision %s clients send "
			"no responses",
			REQMETA_VERSION);
	if (hdr == NULL)
		return stateless_error(
			r, MHD_HTTP_BAD_REQUEST, id, RPC_HEADER_MISMATCH, NULL,
			"the MCP-Protocol-Version header is required and must "
			"equal params._meta[\"%s\"]",
			REQMETA_KEY_VERSION);
	if (kind == RPC_NOTIFICATION) /* nothing to do statelessly */
		return http_reply(r, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	method = json_string_value(json_object_get(body, "method"));
	snprintf(r->rpc_method, sizeof(r->rpc_method), "%s",
		 dispatch_method_label(method));
	if (reqmeta_parse(body, &meta, msg, sizeof(msg)) != STATUS_OK)
		return stateless_error(r, MHD_HTTP_BAD_REQUEST, id,
				       RPC_INVALID_PARAMS, NULL, "%s", msg);
	if (strcmp(hdr, meta.version) != 0)
		return stateless_error(
			r, MHD_HTTP_BAD_REQUEST, id, RPC_HEADER_MISMATCH, NULL,
			"the MCP-Protocol-Version header \"%.40s\" does not "
			"match params._meta[\"%s\"] \"%.40s\"",
			hdr, REQMETA_KEY_VERSION, meta.version);
	if (!reqmeta_version_supported(meta.version)) {
		json_t *supported = json_array();

		for (size_t i = 0; supported != NULL && reqmeta_versions[i];
		     i++)
			json_array_append_new(supported,
					      json_string(reqmeta_versions[i]));
		return stateless_error(
			r, MHD_HTTP_BAD_REQUEST, id, RPC_UNSUPPORTED_VERSION,
			json_pack("{s:o, s:s}", "supported", supported,
				  "requested", meta.version),
			"unsupported protocol version \"%.40s\": this server "
			"speaks %s statelessly, and %s after initialize",
			meta.version, REQMETA_VERSION, version_list());
	}
	if (!standard_headers_ok(r, body, msg, sizeof(msg)))
		return stateless_error(r, MHD_HTTP_BAD_REQUEST, id,
				       RPC_HEADER_MISMATCH, NULL, "%s", msg);
	if (!dispatch_stateless_method(method))
		return stateless_error(
			r, MHD_HTTP_NOT_FOUND, id, RPC_METHOD_NOT_FOUND, NULL,
			"method \"%.100s\" does not exist in revision %s%s",
			method, REQMETA_VERSION,
			dispatch_session_method(method)
				? " (it belongs to the sessions of the 2025 "
				  "revisions: initialize first to use it)"
				: "");
	if (strcmp(method, "tools/call") == 0 &&
	    (rc = param_headers_check(r, body, msg, sizeof(msg))) != STATUS_OK)
		return rc == STATUS_NOMEM
			       ? stateless_error(r,
						 MHD_HTTP_INTERNAL_SERVER_ERROR,
						 id, RPC_INTERNAL_ERROR, NULL,
						 "out of memory")
			       : stateless_error(r, MHD_HTTP_BAD_REQUEST, id,
						 RPC_HEADER_MISMATCH, NULL,
						 "%s", msg);
	rc = session_create_request(r->srv->requests, meta.version, meta.caps,
				    meta.client_info, meta.log_level, &s);
	if (rc != STATUS_OK)
		return stateless_error(
			r,
			rc == STATUS_FULL ? MHD_HTTP_SERVICE_UNAVAILABLE
					  : MHD_HTTP_INTERNAL_SERVER_ERROR,
			id, RPC_INTERNAL_ERROR, NULL, "%s",
			rc == STATUS_FULL ? "server busy: too many requests "
					    "in flight, retry in a second"
					  : "out of memory");
	/* no one else has s yet: its tasks belong to this principal, which
	 * a stateless request names on every request (tasks.h) */
	memcpy(s->owner, r->owner, sizeof(s->owner));
	ex = calloc(1, sizeof(*ex));
	ps = calloc(1, sizeof(*ps));
	if (ex == NULL || ps == NULL) {
		free(ex);
		free(ps);
		(void)session_delete(r->srv->requests, s->id);
		session_release(s);
		return stateless_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, id,
				       RPC_INTERNAL_ERROR, NULL,
				       "out of memory");
	}
	ex->base.ops = &http_exchange_ops;
	atomic_init(&ex->base.refs, 1);
	exchange_grant(&ex->base, r->read_only, r->client);
	ex->s = s; /* the exchange holds the reference now */
	ex->conn = r->conn;
	ex->outstanding = 1;
	ps->srv = r->srv;
	ps->ex = ex;
	r->tp = ps;
	r->tp_free = post_state_free;
	if (dispatch_message(r->srv, s, &ex->base, body) == STATUS_FULL) {
		pthread_mutex_lock(&s->mu);
		ex->outstanding = 0;
		pthread_mutex_unlock(&s->mu);
		return stateless_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, id,
				       RPC_INTERNAL_ERROR, NULL,
				       RPC_MSG_QUEUE_FULL);
	}
	return exchange_answer(r, ex, false);
}

/* A request served by the 2026-07-28 rules: it claims that revision in
 * _meta, or its version header names no revision of the sessions (the
 * stateless path then asks for the _meta it lacks).  Responses, batches and
 * everything else stay on the session path. */
static bool
is_stateless(struct req *r, const json_t *body)
{
	const char *hdr = http_header(r, "MCP-Protocol-Version");

	if (!json_is_object(body) || json_object_get(body, "method") == NULL)
		return false;
	return reqmeta_has_claim(body) ||
	       (hdr != NULL && !dispatch_version_supported(hdr));
}

static bool
is_initialize(const json_t *msg)
{
	const char *m = json_string_value(json_object_get(msg, "method"));

	return m != NULL && strcmp(m, "initialize") == 0;
}

static enum MHD_Result
post_first(struct req *r)
{
	json_t *body = NULL;
	json_error_t jerr;
	struct session *s = NULL;
	struct http_exchange *ex = NULL;
	struct post_state *ps = NULL;
	enum MHD_Result ret = MHD_YES;
	const char *why;
	const json_t *bad_id;
	size_t i, n;
	bool batch, busy = false;
	int requests = 0;
	char msg[300];

	body = jsonload(r->body.data != NULL ? r->body.data : "", r->body.len,
			&jerr);
	if (body == NULL) {
		snprintf(msg, sizeof(msg),
			 "parse error: the body is not valid JSON (%s at line "
			 "%d, column %d)",
			 jerr.text, jerr.line, jerr.column);
		return http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					    RPC_PARSE_ERROR, msg, NULL);
	}
	if (!json_is_object(body) && !json_is_array(body)) {
		ret = http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
			"invalid request: the body must be a JSON-RPC message "
			"(an object) or, on 2025-03-26 sessions, a batch (an "
			"array)",
			NULL);
		goto out;
	}
	http_set_rpc_id(r, body); /* every error answer echoes it */
	if (is_stateless(r, body)) {
		ret = post_stateless(r, body);
		goto out;
	}
	if (!version_header_ok(r, &ret))
		goto out;
	batch = json_is_array(body);
	n = batch ? json_array_size(body) : 1;
	if (!batch && is_initialize(body)) {
		if (rpc_classify(body, &why, &bad_id) != RPC_REQUEST) {
			snprintf(msg, sizeof(msg), "invalid request: %s",
				 why != NULL ? why : "initialize needs an id");
			ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
						   RPC_INVALID_REQUEST, msg,
						   NULL);
		} else {
			ret = post_initialize(r, body);
		}
		goto out;
	}
	if (!batch && rpc_classify(body, &why, &bad_id) == RPC_INVALID) {
		snprintf(msg, sizeof(msg), "invalid request: %s", why);
		ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					   RPC_INVALID_REQUEST, msg, NULL);
		goto out;
	}
	if (batch && (why = rpc_batch_shape(body)) != NULL) {
		ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					   RPC_INVALID_REQUEST, why, NULL);
		goto out;
	}
	s = find_session(r, &ret);
	if (s == NULL)
		goto out;
	if (batch && !rpc_batch_allowed(s->version, "POST", msg, sizeof(msg))) {
		ret = http_reply_rpc_error(r, MHD_HTTP_BAD_REQUEST,
					   RPC_INVALID_REQUEST, msg, NULL);
		goto out;
	}
	ex = calloc(1, sizeof(*ex));
	ps = calloc(1, sizeof(*ps));
	if (ex == NULL || ps == NULL) {
		free(ex);
		free(ps);
		ex = NULL;
		ret = http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   RPC_INTERNAL_ERROR, "out of memory",
					   NULL);
		goto out;
	}
	ex->base.ops = &http_exchange_ops;
	atomic_init(&ex->base.refs, 1);
	exchange_grant(&ex->base, r->read_only, r->client);
	ex->s = s;
	s = NULL; /* the exchange holds the reference now */
	ex->conn = r->conn;
	ps->kind = TP_POST;
	ps->srv = r->srv;
	ps->ex = ex;
	ps->batch = batch;
	ex->batch = batch;
	r->tp = ps;
	r->tp_free = post_state_free;
	if (ex->s->shared && (ex->ids = json_array()) == NULL) {
		ret = http_reply_rpc_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   RPC_INTERNAL_ERROR, "out of memory",
					   NULL);
		goto out;
	}

	/* Count requests first so early answers cannot end the exchange. */
	for (i = 0; i < n; i++) {
		const json_t *m = batch ? json_array_get(body, i) : body;
		enum rpc_kind k = rpc_classify(m, &why, &bad_id);

		if (k == RPC_REQUEST || k == RPC_INVALID)
			requests++;
		if (k == RPC_REQUEST && ex->ids != NULL)
			json_array_append(ex->ids, json_object_get(m, "id"));
	}
	pthread_mutex_lock(&ex->s->mu);
	ex->outstanding = requests;
	pthread_mutex_unlock(&ex->s->mu);
	if (!batch)
		snprintf(r->rpc_method, sizeof(r->rpc_method), "%s",
			 dispatch_method_label(json_string_value(
				 json_object_get(body, "method"))));
	for (i = 0; i < n; i++) {
		const json_t *m = batch ? json_array_get(body, i) : body;

		if (dispatch_message(r->srv, ex->s, &ex->base, m) ==
		    STATUS_FULL) {
			if (!batch) {
				busy = true;
				break;
			}
			exchange_send(&ex->base,
				      rpc_error(json_object_get(m, "id"),
						RPC_SERVER_BUSY,
						RPC_MSG_QUEUE_FULL, NULL),
				      true);
		}
	}
	if (busy) {
		ret = http_reply_rpc_error(
			r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_BUSY,
			RPC_MSG_QUEUE_FULL,
			(const char *[]){"Retry-After", "1", NULL});
		goto out;
	}
	if (requests == 0) {
		/* Only notifications and responses: accepted (A3.6). */
		ret = http_reply(r, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
		goto out;
	}
	ret = exchange_answer(r, ex, batch);
out:
	if (s != NULL)
		session_release(s);
	json_decref(body);
	return ret;
}

/* --- GET and DELETE -------------------------------------------------- */

/* GET on a shared session: the store makes this replica the stream's
 * reader and fills a mirror of it; s: acquired, released here. */
static enum MHD_Result
get_shared(struct req *r, struct session *s, const char *id, size_t len,
	   uint64_t after)
{
	struct store_wait *w = wait_new(r, W_ATTACH);
	int rc;

	if (w == NULL) {
		session_release(s);
		return store_unavailable(r);
	}
	session_ref(s);
	w->s = s;
	w->after = after;
	if (id != NULL)
		snprintf(w->stream_id, sizeof(w->stream_id), "%.*s", (int)len,
			 id);
	rc = sessstore_attach(r->srv->store, s,
			      id != NULL ? w->stream_id : NULL, after,
			      wait_done, w);
	session_release(s);
	return wait_park(r, w, rc);
}

static enum MHD_Result
get_stream(struct req *r)
{
	const char *last = http_header(r, "Last-Event-ID");
	struct session *s;
	struct stream *st = NULL;
	enum MHD_Result ret = MHD_YES;
	uint64_t after = UINT64_MAX;
	int rc;

	if (!http_accepts(http_header(r, "Accept"), "text/event-stream"))
		return http_reply_rpc_error(
			r, MHD_HTTP_NOT_ACCEPTABLE, RPC_SERVER_BUSY,
			"GET opens an event stream: send Accept: "
			"text/event-stream",
			NULL);
	s = find_session(r, &ret);
	if (s == NULL)
		return ret;
	pthread_mutex_lock(&s->mu);
	if (last != NULL) {
		/* "<stream>-<seq>": a resumption of that stream only, scoped
		 * to this session (A3.11). */
		const char *dash = strrchr(last, '-');
		char *end;
		unsigned long long seq = 0;
		bool valid = false;

		if (dash != NULL && dash[1] >= '0' && dash[1] <= '9') {
			errno = 0;
			seq = strtoull(dash + 1, &end, 10);
			/* below INT64_MAX: the store's numbers are bigint,
			 * and UINT64_MAX means "no Last-Event-ID" here */
			valid = *end == '\0' && errno == 0 &&
				seq < (unsigned long long)INT64_MAX &&
				dash - last > 0 &&
				dash - last < STREAM_ID_LEN + 1;
			if (valid)
				st = stream_find(s, last,
						 (size_t)(dash - last));
		}
		/* a shared session's stream written on another replica, or
		 * mirrored here: the store has it (and the events since) */
		if (s->shared && valid && (st == NULL || st->mirror)) {
			pthread_mutex_unlock(&s->mu);
			return get_shared(r, s, last, (size_t)(dash - last),
					  seq);
		}
		if (st == NULL || !valid) {
			pthread_mutex_unlock(&s->mu);
			session_release(s);
			return http_reply_rpc_error(
				r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
				"unknown Last-Event-ID: the stream is gone; "
				"open a new stream without Last-Event-ID",
				NULL);
		}
		after = seq;
	} else if (s->shared) {
		pthread_mutex_unlock(&s->mu);
		return get_shared(r, s, NULL, 0, UINT64_MAX);
	} else {
		if (s->standalone == NULL) {
			rc = stream_open(s, true, prime_streams(s),
					 &s->standalone);
			if (rc != STATUS_OK) {
				pthread_mutex_unlock(&s->mu);
				session_release(s);
				return http_reply_rpc_error(
					r, MHD_HTTP_SERVICE_UNAVAILABLE,
					RPC_SERVER_BUSY,
					"too many streams on this session",
					NULL);
			}
		}
		st = s->standalone;
	}
	rc = sse_respond(r, s, st, after, false, &ret);
	pthread_mutex_unlock(&s->mu);
	session_release(s);
	if (rc != STATUS_OK)
		return stream_refused(r, rc);
	return ret;
}

static enum MHD_Result
delete_session(struct req *r)
{
	const char *id = http_header(r, "Mcp-Session-Id");

	if (id == NULL)
		return http_reply_rpc_error(
			r, MHD_HTTP_BAD_REQUEST, RPC_SERVER_BUSY,
			"missing Mcp-Session-Id header", NULL);
	if (r->owner[0] != '\0') { /* only its owner ends it */
		enum MHD_Result ret = MHD_YES;
		struct session *s = find_session(r, &ret);

		if (s == NULL)
			return ret;
		session_release(s);
	}
	if (r->srv->store != NULL && strlen(id) == SESSION_ID_LEN) {
		struct store_wait *w = wait_new(r, W_DELETE);

		if (w == NULL)
			return store_unavailable(r);
		snprintf(r->session, sizeof(r->session), "%s", id);
		return wait_park(
			r, w,
			sessstore_delete(r->srv->store, id, wait_done, w));
	}
	if (session_delete(r->srv->sessions, id) != STATUS_OK)
		return http_reply_rpc_error(r, MHD_HTTP_NOT_FOUND, -32001,
					    "session not found", NULL);
	log_info(&(struct log_fields){.request_id = r->rid,
				      .session = id,
				      .duration_ms = -1},
		 "session deleted by the client");
	return http_reply(r, MHD_HTTP_OK, NULL, "", 0, NULL);
}

enum MHD_Result
transport_mcp(struct req *r)
{
	enum MHD_Result ret = MHD_YES;

	if (r->tp != NULL) { /* resumed */
		struct post_state *ps = r->tp;
		struct store_wait *w = wait_of(r);

		if (w != NULL)
			return wait_resumed(r, w);
		return exchange_answer(r, ps->ex, ps->batch);
	}
	if (r->method != HTTP_POST && !version_header_ok(r, &ret))
		return ret;
	switch (r->method) {
	case HTTP_POST: return post_first(r);
	case HTTP_GET: return get_stream(r);
	case HTTP_DELETE: return delete_session(r);
	default:
		return http_reply_rpc_error(
			r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_BUSY,
			"method not allowed: /mcp takes POST, GET and DELETE",
			(const char *[]){"Allow", "GET, POST, DELETE", NULL});
	}
}

/*
 * ingest.c - OTLP/HTTP receiver (see ingest.h).
 *
 * A job is shared by the request (until MHD completes it) and the worker
 * (until it has answered): two references.  Its mutex guards done/parked
 * so that the worker resumes the connection only once the access handler
 * has suspended it.
 */
#include "http/ingest.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "core/server.h"
#include "http/http.h"
#include "mcp/rpc.h"
#include "oauth/oauth.h"
#include "oauth/prm.h"
#include "otlp/otlp.h"
#include "otlp/store.h"
#include "pg/pg.h"

/* How long a write waits for a database connection before 503. */
#define INGEST_ACQUIRE_MS 5000

struct ingest_job {
	struct pool_job job; /* first */
	atomic_int refs;
	struct server *srv;
	struct MHD_Connection *conn;
	char rid[20];
	enum otlp_signal sig;
	enum otlp_encoding enc;
	char encoding[16]; /* Content-Encoding */
	char *body;
	size_t len;
	pthread_mutex_t mu;
	bool parked, done;
	/* the answer */
	unsigned status;
	char *resp;
	size_t resp_len;
	bool retry;
};

static void
job_unref(struct ingest_job *j)
{
	if (j == NULL || atomic_fetch_sub(&j->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&j->mu);
	free(j->body);
	free(j->resp);
	free(j);
}

static void
job_free_tp(void *tp)
{
	job_unref(tp);
}

/* Sets the answer: a google.rpc.Status body for errors. */
static void
job_fail(struct ingest_job *j, unsigned status, int grpc_code, bool retry,
	 const char *msg)
{
	j->status = status;
	j->retry = retry;
	if (otlp_status_body(j->enc, grpc_code, msg, &j->resp, &j->resp_len) !=
	    STATUS_OK) {
		j->resp = NULL;
		j->resp_len = 0;
	}
}

static void
count_items(struct server *srv, enum otlp_signal sig, const char *outcome,
	    double n)
{
	if (n > 0)
		expo_add(expo_series(srv->m.ingest_items,
				     (const char *[]){sig == OTLP_SIGNAL_TRACES
							      ? "traces"
							      : "metrics",
						      outcome}),
			 n);
}

static void
ingest_run(struct pool_job *job)
{
	struct ingest_job *j = (struct ingest_job *)job;
	struct server *srv = j->srv;
	const struct config *cfg = srv->cfg;
	struct otlp_limits lim;
	struct otlp_batch *b = NULL;
	struct pg_conn *c = NULL;
	struct pg_error perr;
	char err[512];
	int64_t inserted = 0;
	size_t items;
	int rc;
	struct log_fields f = {.request_id = j->rid, .duration_ms = -1};

	otlp_limits_default(&lim);
	lim.max_decompressed = (size_t)cfg->ingest.max_decompressed_bytes;
	lim.max_spans = lim.max_points = (size_t)cfg->ingest.max_items;
	lim.decompressed_key = "ingest.max_decompressed_bytes";
	lim.items_key = "ingest.max_items";
	if (j->sig == OTLP_SIGNAL_TRACES)
		rc = otlp_decode_traces(otlp_encoding_content_type(j->enc),
					j->encoding, j->body, j->len, &lim,
					&srv->source_rules, &b, err,
					sizeof(err));
	else
		rc = otlp_decode_metrics(otlp_encoding_content_type(j->enc),
					 j->encoding, j->body, j->len, &lim,
					 &srv->source_rules, &b, err,
					 sizeof(err));
	free(j->body);
	j->body = NULL;
	switch (rc) {
	case STATUS_OK: break;
	case STATUS_UNSUPPORTED:
		job_fail(j, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, 3, false, err);
		goto out;
	case STATUS_LIMIT:
		job_fail(j, MHD_HTTP_CONTENT_TOO_LARGE, 8, false, err);
		goto out;
	case STATUS_INVALID:
		job_fail(j, MHD_HTTP_BAD_REQUEST, 3, false, err);
		goto out;
	default:
		job_fail(j, MHD_HTTP_SERVICE_UNAVAILABLE, 14, true,
			 "the gateway is out of memory: retry later");
		goto out;
	}
	items = j->sig == OTLP_SIGNAL_TRACES ? b->n_spans : b->n_points;
	if (items > 0) {
		if (srv->pg == NULL) {
			job_fail(j, MHD_HTTP_SERVICE_UNAVAILABLE, 14, true,
				 "no telemetry database is configured (set "
				 "DATABASE_URL or [database] url)");
			goto out;
		}
		rc = pg_acquire(srv->pg, NULL, INGEST_ACQUIRE_MS, &c, &perr);
		if (rc == STATUS_OK)
			rc = j->sig == OTLP_SIGNAL_TRACES
				     ? store_write_spans(c, b, &inserted, &perr)
				     : store_write_points(c, b, &inserted,
							  &perr);
		if (rc != STATUS_OK) {
			/* Data the store refuses (class 22 data, 23
			 * constraints, 54 limits such as an index entry too
			 * large) is not worth a retry: the same batch fails
			 * again.  Anything else (down, timeout) is. */
			bool bad = (perr.sqlstate[0] == '2' &&
				    (perr.sqlstate[1] == '2' ||
				     perr.sqlstate[1] == '3')) ||
				   (perr.sqlstate[0] == '5' &&
				    perr.sqlstate[1] == '4');

			log_warn(&f, "OTLP batch not stored: %s", perr.detail);
			job_fail(j,
				 bad ? MHD_HTTP_BAD_REQUEST
				     : MHD_HTTP_SERVICE_UNAVAILABLE,
				 bad ? 3 : 14, !bad, perr.client);
			count_items(srv, j->sig, "failed", (double)items);
			goto out;
		}
	}
	count_items(srv, j->sig, "stored", (double)inserted);
	count_items(srv, j->sig, "duplicate", (double)items - (double)inserted);
	count_items(srv, j->sig, "rejected", (double)b->rejected);
	if (b->rejected > 0)
		log_info(&f, "OTLP batch: %zu item(s) rejected: %s",
			 b->rejected, b->reject_reason);
	j->status = MHD_HTTP_OK;
	if (otlp_response_body(j->enc, j->sig, b->rejected, b->message,
			       &j->resp, &j->resp_len) != STATUS_OK) {
		j->resp = NULL;
		j->resp_len = 0;
	}
out:
	if (c != NULL)
		pg_release(c);
	otlp_batch_free(b);
	pthread_mutex_lock(&j->mu);
	j->done = true;
	if (j->parked) {
		j->parked = false;
		MHD_resume_connection(j->conn);
	}
	pthread_mutex_unlock(&j->mu);
	job_unref(j);
}

static enum MHD_Result
reply(struct req *r, struct ingest_job *j)
{
	const char *hdrs[] = {"Retry-After", "2", NULL};
	char *body = j->resp;

	j->resp = NULL;
	if (body == NULL)
		return http_reply(r, j->status, NULL, "", 0,
				  j->retry ? hdrs : NULL);
	return http_reply_owned(r, j->status,
				otlp_encoding_content_type(j->enc), body,
				j->resp_len, j->retry ? hdrs : NULL);
}

/* An error answered before a job exists: a google.rpc.Status in enc. */
static enum MHD_Result
reply_status(struct req *r, enum otlp_encoding enc, unsigned status,
	     int grpc_code, const char *msg, const char *const *headers)
{
	char *body = NULL;
	size_t len = 0;

	if (otlp_status_body(enc, grpc_code, msg, &body, &len) != STATUS_OK)
		return MHD_NO;
	return http_reply_owned(r, status, otlp_encoding_content_type(enc),
				body, len, headers);
}

/* An [auth] key naming scope_ingest among its scopes (the caller holds
 * the live read lock); a key naming no scope keeps to [auth]'s routes, as
 * before keys had scopes. */
static bool
auth_key_ingests(struct req *r, const char *token, size_t len)
{
	long i = auth_keys_find(r->srv->keys, token, len);
	const char *scopes =
		i >= 0 ? auth_keys_scopes(r->srv->keys, (size_t)i) : NULL;

	return scopes != NULL &&
	       oauth_scope_has(scopes, r->srv->cfg->oauth.scope_ingest);
}

static bool
ingest_key_ok(struct req *r)
{
	const char *hdr = http_header(r, "Authorization");
	const char *token;
	size_t len;
	bool ok;

	server_live_rdlock(r->srv);
	if (r->srv->ingest_keys == NULL ||
	    auth_keys_count(r->srv->ingest_keys) == 0)
		ok = true;
	else
		ok = hdr != NULL &&
		     auth_parse_bearer(hdr, &token, &len) == STATUS_OK &&
		     (auth_keys_check(r->srv->ingest_keys, token, len) ||
		      auth_key_ingests(r, token, len));
	server_live_unlock(r->srv);
	return ok;
}

/*
 * With [auth.oauth], OTLP takes an ingest key or an access token holding
 * scope_ingest: true when the request may go on, else the OTLP status is
 * queued in *ret (401 UNAUTHENTICATED with the Bearer challenge, 403
 * PERMISSION_DENIED naming the scope).
 */
static bool
ingest_oauth_ok(struct req *r, enum otlp_encoding enc, enum MHD_Result *ret)
{
	struct server *srv = r->srv;
	const char *scope = srv->cfg->oauth.scope_ingest;
	const char *hdr = http_header(r, "Authorization"), *token;
	const char *error = NULL;
	struct oauth_principal p;
	char why[300] = "send Authorization: Bearer <ingest key or access "
			"token>",
	     ch[1024], msg[400];
	unsigned status = MHD_HTTP_UNAUTHORIZED;
	size_t len;
	bool key_ok;
	int rc;

	if (hdr != NULL && auth_parse_bearer(hdr, &token, &len) == STATUS_OK) {
		server_live_rdlock(srv);
		key_ok = (srv->ingest_keys != NULL &&
			  auth_keys_check(srv->ingest_keys, token, len)) ||
			 auth_key_ingests(r, token, len);
		server_live_unlock(srv);
		if (key_ok)
			return true;
		error = "invalid_token";
		rc = oauth_verify(srv->oauth, token, len, clock_wall_ms(), &p,
				  why, sizeof(why));
		if (rc == STATUS_IO) {
			/* as at the MCP gate: the issuer is down, the token
			 * may be good; the detail for the log only */
			log_warn(&(struct log_fields){.request_id = r->rid,
						      .duration_ms = -1},
				 "access token not checked: %s", why);
			*ret = reply_status(
				r, enc, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				"the authorization server could not be "
				"reached: retry later",
				(const char *[]){"Retry-After", "5", NULL});
			return false;
		}
		if (rc == STATUS_OK) {
			snprintf(r->principal, sizeof(r->principal),
				 "%.39s/%.39s", p.sub, p.client_id);
			if (oauth_scope_has(p.scope, scope))
				return true;
			status = MHD_HTTP_FORBIDDEN;
			error = "insufficient_scope";
			snprintf(why, sizeof(why), "the token lacks scope %s",
				 scope);
		}
	} else if (hdr != NULL) {
		error = "invalid_request";
		snprintf(why, sizeof(why),
			 "malformed Authorization header: expected \"Bearer "
			 "<token>\"");
	}
	if (prm_challenge(ch, sizeof(ch), srv->oauth_prm_url, scope, error,
			  why) != STATUS_OK)
		snprintf(ch, sizeof(ch), "Bearer resource_metadata=\"%s\"",
			 srv->oauth_prm_url);
	snprintf(msg, sizeof(msg), "%s: %s",
		 status == MHD_HTTP_FORBIDDEN ? "permission denied"
					      : "unauthenticated",
		 why);
	/* gRPC codes: 16 UNAUTHENTICATED, 7 PERMISSION_DENIED */
	*ret = reply_status(r, enc, status,
			    status == MHD_HTTP_FORBIDDEN ? 7 : 16, msg,
			    (const char *[]){"WWW-Authenticate", ch, NULL});
	return false;
}

bool
ingest_gate(struct req *r, bool traces, enum MHD_Result *ret)
{
	const struct config *cfg = r->srv->cfg;
	enum otlp_encoding enc;
	const char *clen;

	(void)traces;
	if (r->method != HTTP_POST) {
		*ret = http_reply(r, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
				  "OTLP/HTTP takes POST\n", 21,
				  (const char *[]){"Allow", "POST", NULL});
		return false;
	}
	if (!cfg->ingest.enabled) {
		*ret = http_reply(r, MHD_HTTP_NOT_FOUND, "text/plain",
				  "ingestion is disabled ([ingest] enabled)\n",
				  41, NULL);
		return false;
	}
	if (otlp_content_type_encoding(http_header(r, "Content-Type"), &enc) !=
	    STATUS_OK) {
		*ret = http_reply(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				  "text/plain",
				  "OTLP/HTTP bodies are application/json or "
				  "application/x-protobuf\n",
				  63, NULL);
		return false;
	}
	if (r->srv->oauth != NULL && !ingest_oauth_ok(r, enc, ret))
		return false;
	if (r->srv->oauth == NULL && !ingest_key_ok(r)) {
		*ret = reply_status(r, enc, MHD_HTTP_UNAUTHORIZED, 16,
				    "unauthenticated: send Authorization: "
				    "Bearer <ingest key>",
				    (const char *[]){"WWW-Authenticate",
						     "Bearer realm=\"sextant\"",
						     NULL});
		return false;
	}
	/* UNAVAILABLE with Retry-After: exporters retry (OTLP/HTTP
	 * "Retryable Response Codes") */
	if (atomic_load(&r->srv->draining) || r->over_limit) {
		*ret = reply_status(
			r, enc, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
			r->over_limit
				? "server busy: every connection "
				  "(server.max_connections) has a request "
				  "under way; retry later"
				: "the server is shutting down: retry later",
			(const char *[]){"Retry-After", "2", "Connection",
					 "close", NULL});
		return false;
	}
	r->body.max = (size_t)cfg->ingest.max_body_bytes;
	clen = http_header(r, "Content-Length");
	if (clen != NULL) {
		char *end;
		unsigned long long n = strtoull(clen, &end, 10);

		if (*end == '\0' && n > (unsigned long long)r->body.max)
			buf_set_error(&r->body, STATUS_LIMIT);
	}
	return true;
}

enum MHD_Result
ingest_too_large(struct req *r)
{
	enum otlp_encoding enc;
	char msg[160];

	if (otlp_content_type_encoding(http_header(r, "Content-Type"), &enc) !=
	    STATUS_OK)
		enc = OTLP_ENCODING_PROTOBUF; /* checked by the gate */
	snprintf(msg, sizeof(msg),
		 "request body too large: the limit is %lld bytes "
		 "(ingest.max_body_bytes); send smaller batches",
		 (long long)r->srv->cfg->ingest.max_body_bytes);
	return reply_status(r, enc, MHD_HTTP_CONTENT_TOO_LARGE, 8, msg,
			    (const char *[]){"Connection", "close", NULL});
}

enum MHD_Result
ingest_handle(struct req *r, bool traces)
{
	struct ingest_job *j = r->tp;
	const char *ce;
	enum MHD_Result ret = MHD_YES;
	int rc;

	if (j != NULL) { /* resumed: the worker answered */
		pthread_mutex_lock(&j->mu);
		ret = j->done ? reply(r, j) : MHD_YES;
		pthread_mutex_unlock(&j->mu);
		return ret;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return MHD_NO;
	atomic_init(&j->refs, 2); /* the request's and the worker's */
	pthread_mutex_init(&j->mu, NULL);
	j->job.run = ingest_run;
	j->srv = r->srv;
	j->conn = r->conn;
	memcpy(j->rid, r->rid, sizeof(j->rid));
	j->sig = traces ? OTLP_SIGNAL_TRACES : OTLP_SIGNAL_METRICS;
	if (otlp_content_type_encoding(http_header(r, "Content-Type"),
				       &j->enc) != STATUS_OK)
		j->enc = OTLP_ENCODING_PROTOBUF; /* checked by the gate */
	ce = http_header(r, "Content-Encoding");
	snprintf(j->encoding, sizeof(j->encoding), "%s", ce != NULL ? ce : "");
	if (ce != NULL && strlen(ce) >= sizeof(j->encoding))
		snprintf(j->encoding, sizeof(j->encoding), "unsupported");
	j->body = buf_steal(&r->body, &j->len);
	r->tp = j;
	r->tp_free = job_free_tp;
	if (j->body == NULL) {
		atomic_store(&j->refs, 1);
		return MHD_NO;
	}
	pthread_mutex_lock(&j->mu);
	rc = pool_submit(r->srv->pool, &j->job);
	if (rc != STATUS_OK) {
		pthread_mutex_unlock(&j->mu);
		atomic_store(&j->refs, 1); /* the worker never had it */
		job_fail(j, MHD_HTTP_SERVICE_UNAVAILABLE, 14, true,
			 "the gateway is busy: retry later");
		return reply(r, j);
	}
	j->parked = true;
	MHD_suspend_connection(r->conn);
	pthread_mutex_unlock(&j->mu);
	return MHD_YES;
}

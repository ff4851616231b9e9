/*
 * sessdb.c - the statements of shared MCP sessions (contracts in
 * sessdb.h, tables and functions in migrations/0009_mcp_sessions.sql).
 */
#include "pg/sessdb.h"

#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/utf8.h"
#include "pg/locks.h"

/* "SEXTANT" 0x04 (0x01 migrate, 0x02 partitions, 0x03 rollups). */
#define SWEEP_LOCK "pg_try_advisory_xact_lock(" LOCK_SESSION_SWEEP ")"

void
sessdb_key(const char *session_id, char key[SESSDB_KEY_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t i;

	if (EVP_Digest(session_id, strlen(session_id), md, &mdlen, EVP_sha256(),
		       NULL) != 1 ||
	    mdlen < SESSDB_KEY_LEN / 2)
		memset(md, 0, sizeof(md)); /* cannot happen with OpenSSL 3 */
	for (i = 0; i < SESSDB_KEY_LEN / 2; i++) {
		key[2 * i] = hex[md[i] >> 4];
		key[2 * i + 1] = hex[md[i] & 15];
	}
	key[SESSDB_KEY_LEN] = '\0';
}

#define NOMEM_MSG "the session store is out of memory"

/* err for a failure found here rather than by the database: rc. */
static int
local_error(struct pg_error *err, int rc, const char *msg)
{
	snprintf(err->client, sizeof(err->client), "%s", msg);
	snprintf(err->detail, sizeof(err->detail), "%s", msg);
	err->sqlstate[0] = '\0';
	return rc;
}

static void
copy_field(char *dst, size_t cap, const PGresult *res, int row, int col)
{
	snprintf(dst, cap, "%s",
		 PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));
}

/* A one-row result's integer column; STATUS_IO when malformed. */
static int
field_i64(const PGresult *res, int row, int col, int64_t *out,
	  struct pg_error *err)
{
	if (PQgetisnull(res, row, col) ||
	    pg_text_i64(PQgetvalue(res, row, col), out) != STATUS_OK)
		return pg_bad_row(err, "a session store number");
	return STATUS_OK;
}

/* --- signed notifications -------------------------------------------- */

/* The signature of the n bytes at p: SESSDB_SIG_LEN hex and a NUL. */
static void
signature(const uint8_t key[SESSDB_NOTIFY_KEY_BYTES], const char *p, size_t n,
	  char out[SESSDB_SIG_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (HMAC(EVP_sha256(), key, SESSDB_NOTIFY_KEY_BYTES,
		 (const unsigned char *)p, n, md, &mdlen) == NULL ||
	    mdlen < SESSDB_SIG_LEN / 2)
		/* cannot happen with OpenSSL 3; a zero MAC verifies nothing
		 * a forger could not also write, so fail closed instead */
		RAND_bytes(md, SESSDB_SIG_LEN / 2);
	hex_encode(md, SESSDB_SIG_LEN / 2, out);
}

int
sessdb_sign(const uint8_t key[SESSDB_NOTIFY_KEY_BYTES], const char *payload,
	    char *out, size_t cap)
{
	size_t n = strlen(payload);

	if (n + 1 + SESSDB_SIG_LEN + 1 > cap)
		return STATUS_LIMIT;
	memcpy(out, payload, n);
	out[n] = ' ';
	signature(key, payload, n, out + n + 1);
	return STATUS_OK;
}

int
sessdb_verify(const uint8_t key[SESSDB_NOTIFY_KEY_BYTES],
	      const char *signed_payload, size_t *len)
{
	size_t n = strlen(signed_payload);
	char want[SESSDB_SIG_LEN + 1];

	*len = 0;
	if (n < SESSDB_SIG_LEN + 2 ||
	    signed_payload[n - SESSDB_SIG_LEN - 1] != ' ')
		return STATUS_INVALID;
	n -= SESSDB_SIG_LEN + 1;
	signature(key, signed_payload, n, want);
	if (CRYPTO_memcmp(want, signed_payload + n + 1, SESSDB_SIG_LEN) != 0)
		return STATUS_INVALID;
	*len = n;
	return STATUS_OK;
}

int
sessdb_notify_key(struct pg_conn *c,
		  const uint8_t fresh[SESSDB_NOTIFY_KEY_BYTES],
		  uint8_t key[SESSDB_NOTIFY_KEY_BYTES], struct pg_error *err)
{
	char hex[2 * SESSDB_NOTIFY_KEY_BYTES + 1];
	PGresult *res = NULL;
	int rc;

	hex_encode(fresh, SESSDB_NOTIFY_KEY_BYTES, hex);
	rc = pg_query(c,
		      "WITH i AS (INSERT INTO mcp_notify_key (key) VALUES "
		      "(decode($1, 'hex')) ON CONFLICT DO NOTHING RETURNING "
		      "key) SELECT encode(key, 'hex') FROM i UNION ALL "
		      "SELECT encode(key, 'hex') FROM mcp_notify_key",
		      1, (const char *[]){hex}, &res, err);
	if (rc != STATUS_OK)
		goto out;
	/* one of the two: the row this statement inserted, which the
	 * same snapshot cannot see, or the one that was there */
	if (PQntuples(res) < 1 ||
	    hex_decode(PQgetvalue(res, 0, 0), key, SESSDB_NOTIFY_KEY_BYTES) !=
		    STATUS_OK)
		rc = local_error(err, STATUS_IO,
				 "mcp_notify_key holds no valid key");
out:
	PQclear(res);
	return rc;
}

/* --- replicas --------------------------------------------------------- */

int
sessdb_register(struct pg_conn *c, const char *replica, const char *host,
		int pid, struct pg_error *err)
{
	char pidtext[16];

	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	return pg_query(c,
			"INSERT INTO mcp_replicas (id, host, pid) "
			"VALUES ($1, $2, $3::integer) "
			"ON CONFLICT (id) DO UPDATE SET seen_at = now()",
			3, (const char *[]){replica, host, pidtext}, NULL, err);
}

int
sessdb_heartbeat(struct pg_conn *c, const char *replica, struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	rc = pg_query(c,
		      "UPDATE mcp_replicas SET seen_at = now() WHERE id = $1 "
		      "AND seen_at > '-infinity'",
		      1, (const char *[]){replica}, &res, err);
	if (rc == STATUS_OK && strcmp(PQcmdTuples(res), "1") != 0)
		rc = STATUS_NOTFOUND;
	PQclear(res);
	return rc;
}

int
sessdb_retire(struct pg_conn *c, const char *replica, struct pg_error *err)
{
	return pg_query(c,
			"UPDATE mcp_replicas SET seen_at = '-infinity' "
			"WHERE id = $1",
			1, (const char *[]){replica}, NULL, err);
}

/* --- sessions --------------------------------------------------------- */

void
sessdb_session_free(struct sessdb_session *s)
{
	if (s == NULL)
		return;
	free(s->caps);
	free(s->info);
	free(s->subscriptions);
	free(s);
}

int
sessdb_insert(struct pg_conn *c, const struct sessdb_session *s, int max,
	      struct pg_error *err)
{
	char level[16], maxtext[16];
	PGresult *res = NULL;
	int64_t live = 0, added = 0;
	int rc;

	snprintf(level, sizeof(level), "%d", s->log_level);
	snprintf(maxtext, sizeof(maxtext), "%d", max);
	/* the count's row lock is held from the check to the commit: a
	 * second insert waits, then reads the count this one left
	 * (migration 0011) */
	rc = pg_query(c,
		      "WITH c AS (SELECT n FROM mcp_session_count FOR UPDATE), "
		      "i AS (INSERT INTO mcp_sessions (key, version, "
		      "client_caps, client_info, log_level, subscriptions, "
		      "owner) "
		      "SELECT $1, $2, $3::jsonb, $4::jsonb, $5::smallint, "
		      "coalesce($6::jsonb, '{}'), $8 FROM c WHERE c.n < "
		      "$7::bigint ON CONFLICT (key) DO NOTHING RETURNING 1) "
		      "SELECT (SELECT n FROM c), (SELECT count(*) FROM i)",
		      8,
		      (const char *[]){s->key, s->version, s->caps, s->info,
				       level, s->subscriptions, maxtext,
				       s->owner},
		      &res, err);
	if (rc != STATUS_OK)
		goto out;
	if (PQgetisnull(res, 0, 0)) {
		rc = local_error(err, STATUS_IO,
				 "mcp_session_count holds no row: run `sextant "
				 "migrate`");
		goto out;
	}
	if ((rc = field_i64(res, 0, 0, &live, err)) != STATUS_OK ||
	    (rc = field_i64(res, 0, 1, &added, err)) != STATUS_OK)
		goto out;
	if (added != 1)
		rc = live >= max ? STATUS_FULL : STATUS_EXISTS;
out:
	PQclear(res);
	return rc;
}

int
sessdb_next_expiry(struct pg_conn *c, int idle_s, int *secs,
		   struct pg_error *err)
{
	char idle[16];
	PGresult *res = NULL;
	int64_t v = 0;
	int rc;

	*secs = 0;
	snprintf(idle, sizeof(idle), "%d", idle_s);
	/* min() over the last_active index: one index probe */
	rc = pg_query(
		c,
		"SELECT coalesce(ceil(extract(epoch FROM min(last_active) "
		"+ make_interval(secs => $1::integer) - now())), 0)::bigint "
		"FROM mcp_sessions",
		1, (const char *[]){idle}, &res, err);
	if (rc == STATUS_OK &&
	    (rc = field_i64(res, 0, 0, &v, err)) == STATUS_OK)
		*secs = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int)v;
	PQclear(res);
	return rc;
}

int
sessdb_get(struct pg_conn *c, const char *key, struct sessdb_session **out,
	   struct pg_error *err)
{
	struct sessdb_session *s = NULL;
	PGresult *res = NULL;
	int64_t level;
	int rc;

	*out = NULL;
	rc = pg_query(c,
		      "SELECT version, client_caps::text, client_info::text, "
		      "log_level, subscriptions::text, rev, owner "
		      "FROM mcp_sessions WHERE key = $1",
		      1, (const char *[]){key}, &res, err);
	if (rc != STATUS_OK)
		goto out;
	if (PQntuples(res) != 1) {
		rc = STATUS_NOTFOUND;
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		rc = local_error(err, STATUS_NOMEM, NOMEM_MSG);
		goto out;
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	copy_field(s->version, sizeof(s->version), res, 0, 0);
	copy_field(s->owner, sizeof(s->owner), res, 0, 6);
	s->caps = strdup(PQgetvalue(res, 0, 1));
	s->info = strdup(PQgetvalue(res, 0, 2));
	s->subscriptions = strdup(PQgetvalue(res, 0, 4));
	if (s->caps == NULL || s->info == NULL || s->subscriptions == NULL) {
		rc = local_error(err, STATUS_NOMEM, NOMEM_MSG);
		goto out;
	}
	if ((rc = field_i64(res, 0, 3, &level, err)) != STATUS_OK ||
	    (rc = field_i64(res, 0, 5, &s->rev, err)) != STATUS_OK)
		goto out;
	s->log_level = (int)level;
	*out = s;
	s = NULL;
out:
	sessdb_session_free(s);
	PQclear(res);
	return rc;
}

/* A statement returning one row (rev[, more]) or none (gone). */
static int
one_row(struct pg_conn *c, const char *sql, int n, const char *const *v,
	PGresult **res, struct pg_error *err)
{
	int rc = pg_query(c, sql, n, v, res, err);

	if (rc == STATUS_OK && PQntuples(*res) != 1) {
		PQclear(*res);
		*res = NULL;
		rc = STATUS_NOTFOUND;
	}
	return rc;
}

int
sessdb_set_level(struct pg_conn *c, const char *key, int level, int64_t *rev,
		 struct pg_error *err)
{
	char ltext[16];
	PGresult *res = NULL;
	int rc;

	snprintf(ltext, sizeof(ltext), "%d", level);
	rc = one_row(c,
		     "WITH u AS (UPDATE mcp_sessions SET log_level = "
		     "$2::smallint, rev = rev + 1 WHERE key = $1 "
		     "RETURNING key, rev) "
		     "SELECT rev, pg_notify('" SESSDB_CHANNEL
		     "', 'u ' || key || ' ' || rev) FROM u",
		     2, (const char *[]){key, ltext}, &res, err);
	if (rc == STATUS_OK)
		rc = field_i64(res, 0, 0, rev, err);
	PQclear(res);
	return rc;
}

int
sessdb_subscribe(struct pg_conn *c, const char *key, const char *uri, bool on,
		 int64_t *rev, char **subs, struct pg_error *err)
{
	char max[16];
	PGresult *res = NULL;
	int rc;

	*subs = NULL;
	snprintf(max, sizeof(max), "%d", SESSDB_MAX_SUBSCRIPTIONS);
	/* the bound is checked in the same row update: two replicas
	 * subscribing at once cannot pass it together */
	rc = one_row(
		c,
		"WITH u AS (UPDATE mcp_sessions SET subscriptions = "
		"CASE WHEN $3 THEN subscriptions || "
		"jsonb_build_object($2::text, true) "
		"ELSE subscriptions - $2::text END, rev = rev + 1 "
		"WHERE key = $1 AND (NOT $3::boolean OR subscriptions ? "
		"$2::text OR (SELECT count(*) FROM "
		"jsonb_object_keys(subscriptions)) < $4::integer) "
		"RETURNING key, rev, subscriptions) "
		"SELECT rev, subscriptions::text, pg_notify('" SESSDB_CHANNEL
		"', 'u ' || key || ' ' || rev) FROM u",
		4, (const char *[]){key, uri, on ? "true" : "false", max}, &res,
		err);
	if (rc == STATUS_NOTFOUND && on) {
		/* gone, or full: tell which */
		PGresult *r2 = NULL;

		rc = pg_query(c, "SELECT 1 FROM mcp_sessions WHERE key = $1", 1,
			      (const char *[]){key}, &r2, err);
		if (rc == STATUS_OK)
			rc = PQntuples(r2) == 1 ? STATUS_FULL : STATUS_NOTFOUND;
		PQclear(r2);
	}
	if (rc == STATUS_OK &&
	    (rc = field_i64(res, 0, 0, rev, err)) == STATUS_OK) {
		*subs = strdup(PQgetvalue(res, 0, 1));
		if (*subs == NULL)
			rc = local_error(err, STATUS_NOMEM, NOMEM_MSG);
	}
	PQclear(res);
	return rc;
}

int
sessdb_delete(struct pg_conn *c, const char *key, const char *by,
	      struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	rc = one_row(c,
		     "WITH d AS (DELETE FROM mcp_sessions WHERE key = $1 "
		     "RETURNING key) SELECT pg_notify('" SESSDB_CHANNEL
		     "', 'd ' || key || coalesce(' ' || $2, '')) FROM d",
		     2, (const char *[]){key, by}, &res, err);
	PQclear(res);
	return rc;
}

int
sessdb_ack(struct pg_conn *c, const uint8_t nkey[SESSDB_NOTIFY_KEY_BYTES],
	   const char *to, const char *key, const char *replica,
	   struct pg_error *err)
{
	char payload[SESSDB_KEY_LEN + 64], sig[sizeof(payload) + 40];

	snprintf(payload, sizeof(payload), "x %s %.20s", key, replica);
	if (sessdb_sign(nkey, payload, sig, sizeof(sig)) != STATUS_OK)
		return local_error(err, STATUS_LIMIT, "notification too long");
	return pg_query(
		c, "SELECT pg_notify('" SESSDB_REPLICA_PREFIX "' || $1, $2)", 2,
		(const char *[]){to, sig}, NULL, err);
}

int
sessdb_peers(struct pg_conn *c, const char *replica, int dead_s,
	     PGresult **rows, struct pg_error *err)
{
	char dead[16];

	*rows = NULL;
	snprintf(dead, sizeof(dead), "%d", dead_s);
	return pg_query(c,
			"SELECT id FROM mcp_replicas WHERE id <> $1 AND "
			"seen_at >= now() - make_interval(secs => $2::integer) "
			"LIMIT 256",
			2, (const char *[]){replica, dead}, rows, err);
}

/* keys as a text[] literal: they are hex, so no quoting is needed. */
static char *
key_array(const char *const *keys, size_t n)
{
	size_t i, len = 3 + n * (SESSDB_KEY_LEN + 1);
	char *p = malloc(len), *q = p;

	if (p == NULL)
		return NULL;
	*q++ = '{';
	for (i = 0; i < n; i++) {
		size_t kl = strnlen(keys[i], SESSDB_KEY_LEN);

		if (i > 0)
			*q++ = ',';
		memcpy(q, keys[i], kl);
		q += kl;
	}
	*q++ = '}';
	*q = '\0';
	return p;
}

int
sessdb_touch(struct pg_conn *c, const char *const *keys, size_t n,
	     struct pg_error *err)
{
	char *arr;
	int rc;

	if (n == 0)
		return STATUS_OK;
	arr = key_array(keys, n);
	if (arr == NULL)
		return local_error(err, STATUS_NOMEM, NOMEM_MSG);
	rc = pg_query(c,
		      "UPDATE mcp_sessions SET last_active = now() "
		      "WHERE key = ANY($1::text[])",
		      1, (const char *[]){arr}, NULL, err);
	free(arr);
	return rc;
}

int
sessdb_revs(struct pg_conn *c, const char *const *keys, size_t n,
	    PGresult **rows, struct pg_error *err)
{
	char *arr;
	int rc;

	*rows = NULL;
	arr = key_array(keys, n);
	if (arr == NULL)
		return local_error(err, STATUS_NOMEM, NOMEM_MSG);
	rc = pg_query(c,
		      "SELECT k, s.rev FROM unnest($1::text[]) AS k "
		      "LEFT JOIN mcp_sessions s ON s.key = k",
		      1, (const char *[]){arr}, rows, err);
	free(arr);
	return rc;
}

int
sessdb_cancel(struct pg_conn *c, const uint8_t nkey[SESSDB_NOTIFY_KEY_BYTES],
	      const char *key, const char *idjson, struct pg_error *err)
{
	char payload[SESSDB_KEY_LEN + 220], sig[sizeof(payload) + 40];

	if (strlen(idjson) > 200)
		return local_error(err, STATUS_LIMIT,
				   "the request id is too long to cancel on "
				   "another replica");
	snprintf(payload, sizeof(payload), "c %s %s", key, idjson);
	if (sessdb_sign(nkey, payload, sig, sizeof(sig)) != STATUS_OK)
		return local_error(err, STATUS_LIMIT, "notification too long");
	return pg_query(c, "SELECT pg_notify('" SESSDB_CHANNEL "', $1)", 1,
			(const char *[]){sig}, NULL, err);
}

/* --- streams ---------------------------------------------------------- */

static bool
utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), len;

	while (left > 0) {
		len = p[0] < 0x80 ? 1 : utf8_len(p, left);
		if (len == 0)
			return false;
		p += len;
		left -= len;
	}
	return true;
}

/* strings as a JSON array (the text[] is built from it in SQL: no
 * array-literal quoting of arbitrary text).  STATUS_INVALID when one is
 * not UTF-8 (jansson refuses it, and so would the database). */
static int
json_strings(const char *const *v, size_t n, char **out)
{
	json_t *a = json_array();
	int rc = STATUS_NOMEM;
	size_t i;

	*out = NULL;
	if (a == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < n; i++) {
		json_t *s = json_string(v[i]);

		if (s == NULL) {
			if (v[i] != NULL && !utf8_ok(v[i]))
				rc = STATUS_INVALID;
			goto out;
		}
		if (json_array_append_new(a, s) != 0)
			goto out;
	}
	*out = json_dumps(a, JSON_COMPACT);
	rc = *out != NULL ? STATUS_OK : STATUS_NOMEM;
out:
	json_decref(a);
	return rc;
}

static int
strings_error(struct pg_error *err, int rc)
{
	return local_error(err, rc,
			   rc == STATUS_INVALID ? "an event is not valid UTF-8"
						: NOMEM_MSG);
}

static void
reader_out(const PGresult *res, int col, char reader[SESSDB_REPLICA_LEN + 1])
{
	copy_field(reader, SESSDB_REPLICA_LEN + 1, res, 0, col);
}

int
sessdb_append(struct pg_conn *c, const struct sessdb_append *a,
	      char reader[SESSDB_REPLICA_LEN + 1], struct pg_error *err)
{
	char seq[24], first[24], *data;
	PGresult *res = NULL;
	int rc;

	reader[0] = '\0';
	if ((rc = json_strings(a->data, a->n, &data)) != STATUS_OK)
		return strings_error(err, rc);
	snprintf(seq, sizeof(seq), "%" PRIu64, a->seq);
	snprintf(first, sizeof(first), "%" PRIu64, a->first);
	rc = one_row(c,
		     "SELECT mcp_append($1, $2, $3, $4::jsonb, $5::bigint, "
		     "ARRAY(SELECT e FROM jsonb_array_elements_text($6::jsonb) "
		     "WITH ORDINALITY AS t(e, i) ORDER BY i), $7::bigint, "
		     "$8::boolean)",
		     8,
		     (const char *[]){a->replica, a->key, a->stream,
				      a->requests != NULL ? a->requests : "[]",
				      seq, data, first,
				      a->done ? "true" : "false"},
		     &res, err);
	free(data);
	/* the stream's first row needs its session: 23503 = gone */
	if (rc == STATUS_INVALID && strcmp(err->sqlstate, "23503") == 0)
		rc = STATUS_NOTFOUND;
	if (rc == STATUS_OK) {
		if (strcmp(PQgetvalue(res, 0, 0), "lost") == 0)
			rc = STATUS_CLOSED;
		else if (strcmp(PQgetvalue(res, 0, 0), "gone") == 0)
			rc = STATUS_NOTFOUND;
		else
			reader_out(res, 0, reader);
	}
	PQclear(res);
	return rc;
}

int
sessdb_notify(struct pg_conn *c, const char *replica, const char *key,
	      const char *new_id, const char *prime, const char *json, int keep,
	      char stream[32], uint64_t *seq,
	      char reader[SESSDB_REPLICA_LEN + 1], struct pg_error *err)
{
	char ktext[16];
	PGresult *res = NULL;
	int64_t v;
	int rc;

	stream[0] = '\0';
	reader[0] = '\0';
	*seq = 0;
	snprintf(ktext, sizeof(ktext), "%d", keep);
	rc = one_row(
		c,
		"SELECT stream_id, seq, reader FROM mcp_notify($1, $2, $3, "
		"$4, $5, $6::integer) WHERE stream_id IS NOT NULL",
		6, (const char *[]){replica, key, new_id, prime, json, ktext},
		&res, err);
	if (rc == STATUS_INVALID && strcmp(err->sqlstate, "23503") == 0)
		rc = STATUS_NOTFOUND;
	if (rc == STATUS_OK &&
	    (rc = field_i64(res, 0, 1, &v, err)) == STATUS_OK) {
		copy_field(stream, 32, res, 0, 0);
		*seq = (uint64_t)v;
		reader_out(res, 2, reader);
	}
	PQclear(res);
	return rc;
}

int
sessdb_attach(struct pg_conn *c, const char *key, const char *stream_id,
	      const char *new_id, const char *prime, const char *replica,
	      int dead_s, struct sessdb_stream *out, struct pg_error *err)
{
	char dead[16];
	PGresult *res = NULL;
	int64_t next, first;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(dead, sizeof(dead), "%d", dead_s);
	if (stream_id == NULL) {
		/* the standalone stream, created if the session has none:
		 * the unique index settles two replicas creating it */
		rc = pg_query(
			c,
			"WITH i AS (INSERT INTO mcp_streams (session_key, "
			"id, standalone, next_seq) SELECT key, $2, true, "
			"CASE WHEN $3::text IS NULL THEN 0 ELSE 1 END "
			"FROM mcp_sessions WHERE key = $1 "
			"ON CONFLICT DO NOTHING RETURNING id) "
			"INSERT INTO mcp_events SELECT $1, id, 0, $3 "
			"FROM i WHERE $3::text IS NOT NULL",
			3, (const char *[]){key, new_id, prime}, &res, err);
		if (rc != STATUS_OK)
			goto out;
		PQclear(res);
		res = NULL;
	}
	rc = one_row(
		c,
		"WITH t AS (SELECT id, reader AS old FROM mcp_streams "
		"WHERE session_key = $1 AND (CASE WHEN $2::text IS NULL "
		"THEN standalone ELSE id = $2 END) FOR UPDATE), "
		"u AS (UPDATE mcp_streams m SET reader = $3 FROM t "
		"WHERE m.session_key = $1 AND m.id = t.id "
		"RETURNING m.*, t.old IS NULL AS fresh) "
		"SELECT u.id, u.standalone, u.done, u.next_seq, "
		"coalesce(u.owner, ''), u.owner IS NOT NULL AND "
		"coalesce(r.seen_at < now() - make_interval(secs => "
		"$4::integer), true), "
		"coalesce((SELECT min(seq) FROM mcp_events e WHERE "
		"e.session_key = $1 AND e.stream_id = u.id), u.next_seq), "
		"u.fresh FROM u LEFT JOIN mcp_replicas r ON r.id = u.owner",
		4, (const char *[]){key, stream_id, replica, dead}, &res, err);
	if (rc != STATUS_OK)
		goto out;
	copy_field(out->id, sizeof(out->id), res, 0, 0);
	out->standalone = PQgetvalue(res, 0, 1)[0] == 't';
	out->done = PQgetvalue(res, 0, 2)[0] == 't';
	copy_field(out->owner, sizeof(out->owner), res, 0, 4);
	out->owner_dead = PQgetvalue(res, 0, 5)[0] == 't';
	if ((rc = field_i64(res, 0, 3, &next, err)) != STATUS_OK ||
	    (rc = field_i64(res, 0, 6, &first, err)) != STATUS_OK)
		goto out;
	out->next_seq = (uint64_t)next;
	out->first = (uint64_t)first;
	out->fresh = PQgetvalue(res, 0, 7)[0] == 't';
out:
	PQclear(res);
	return rc;
}

int
sessdb_read(struct pg_conn *c, const char *key, const char *stream_id,
	    uint64_t after, int limit, PGresult **rows, bool *done,
	    uint64_t *next_seq, struct pg_error *err)
{
	char atext[24], ltext[16];
	PGresult *res = NULL;
	int64_t next;
	int rc;

	*rows = NULL;
	*done = false;
	*next_seq = 0;
	/* -1: from the oldest kept (after is unsigned; UINT64_MAX = none) */
	if (after == UINT64_MAX)
		snprintf(atext, sizeof(atext), "-1");
	else
		snprintf(atext, sizeof(atext), "%" PRIu64, after);
	snprintf(ltext, sizeof(ltext), "%d", limit);
	/* one snapshot for both: REPEATABLE READ is not needed, a single
	 * statement sees one */
	rc = pg_query(c,
		      "SELECT s.done, s.next_seq, e.seq, e.data, "
		      "coalesce(s.reader, '') "
		      "FROM mcp_streams s LEFT JOIN LATERAL (SELECT seq, data "
		      "FROM mcp_events e WHERE e.session_key = s.session_key "
		      "AND e.stream_id = s.id AND e.seq > $3::bigint "
		      "ORDER BY seq LIMIT $4::integer) e ON true "
		      "WHERE s.session_key = $1 AND s.id = $2 ORDER BY e.seq",
		      4, (const char *[]){key, stream_id, atext, ltext}, &res,
		      err);
	if (rc != STATUS_OK)
		goto out;
	if (PQntuples(res) == 0) {
		rc = STATUS_NOTFOUND;
		goto out;
	}
	*done = PQgetvalue(res, 0, 0)[0] == 't';
	if ((rc = field_i64(res, 0, 1, &next, err)) != STATUS_OK) {
		*done = false;
		goto out;
	}
	*next_seq = (uint64_t)next;
	*rows = res;
	res = NULL;
out:
	PQclear(res);
	return rc;
}

/* --- server-to-client requests --------------------------------------- */

int
sessdb_pending_add(struct pg_conn *c, const char *key, const char *id,
		   const char *owner, struct pg_error *err)
{
	int rc = pg_query(c,
			  "INSERT INTO mcp_pending (session_key, id, owner) "
			  "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
			  3, (const char *[]){key, id, owner}, NULL, err);

	if (rc == STATUS_INVALID && strcmp(err->sqlstate, "23503") == 0)
		rc = STATUS_NOTFOUND;
	return rc;
}

int
sessdb_pending_drop(struct pg_conn *c, const char *key, const char *id,
		    struct pg_error *err)
{
	return pg_query(c,
			"DELETE FROM mcp_pending WHERE session_key = $1 AND "
			"id = $2",
			2, (const char *[]){key, id}, NULL, err);
}

int
sessdb_pending_answer(struct pg_conn *c, const char *key, const char *id,
		      const char *answer, struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	rc = one_row(c,
		     "WITH a AS (UPDATE mcp_pending SET answer = $3::jsonb "
		     "WHERE session_key = $1 AND id = $2 AND answer IS NULL "
		     "RETURNING session_key, id, owner) "
		     "SELECT pg_notify('" SESSDB_REPLICA_PREFIX
		     "' || owner, 'a ' || session_key || ' ' || id) FROM a",
		     3, (const char *[]){key, id, answer}, &res, err);
	PQclear(res);
	return rc;
}

int
sessdb_pending_take(struct pg_conn *c, const char *owner, PGresult **rows,
		    struct pg_error *err)
{
	*rows = NULL;
	return pg_query(c,
			"DELETE FROM mcp_pending WHERE (session_key, id) IN "
			"(SELECT session_key, id FROM mcp_pending WHERE owner "
			"= $1 AND answer IS NOT NULL LIMIT 100) "
			"RETURNING session_key, id, answer::text",
			1, (const char *[]){owner}, rows, err);
}

/* --- upkeep ----------------------------------------------------------- */

int
sessdb_sweep(struct pg_conn *c, int idle_s, int keep_s, int pending_s,
	     int *expired, struct pg_error *err)
{
	char idle[16], keep[16], pend[16];
	PGresult *res = NULL;
	int64_t n = 0;
	int rc;

	*expired = 0;
	snprintf(idle, sizeof(idle), "%d", idle_s);
	snprintf(keep, sizeof(keep), "%d", keep_s);
	snprintf(pend, sizeof(pend), "%d", pending_s);
	if ((rc = pg_begin(c, err)) != STATUS_OK)
		return rc;
	if ((rc = pg_query(c, "SELECT " SWEEP_LOCK, 0, NULL, &res, err)) !=
	    STATUS_OK)
		goto fail;
	if (PQgetvalue(res, 0, 0)[0] != 't') {
		rc = STATUS_AGAIN;
		goto fail;
	}
	PQclear(res);
	res = NULL;
	if ((rc = pg_query(c,
			   "DELETE FROM mcp_streams WHERE done AND done_at < "
			   "now() - make_interval(secs => $1::integer)",
			   1, (const char *[]){keep}, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c,
			   "DELETE FROM mcp_pending WHERE created_at < now() - "
			   "make_interval(secs => $1::integer)",
			   1, (const char *[]){pend}, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c,
			   "DELETE FROM mcp_replicas r WHERE seen_at < now() - "
			   "interval '1 minute' AND NOT EXISTS (SELECT 1 FROM "
			   "mcp_streams s WHERE s.owner = r.id AND NOT s.done)",
			   0, NULL, NULL, err)) != STATUS_OK)
		goto fail;
	/* last: its trigger locks mcp_session_count, which every initialize
	 * waits for, until the commit */
	if ((rc = pg_query(
		     c,
		     "WITH d AS (DELETE FROM mcp_sessions WHERE key IN ("
		     "SELECT key FROM mcp_sessions WHERE last_active < now() - "
		     "make_interval(secs => $1::integer) ORDER BY last_active "
		     "LIMIT 500 FOR UPDATE SKIP LOCKED) RETURNING key) "
		     "SELECT count(pg_notify('" SESSDB_CHANNEL
		     "', 'd ' || key)) FROM d",
		     1, (const char *[]){idle}, &res, err)) != STATUS_OK ||
	    (rc = field_i64(res, 0, 0, &n, err)) != STATUS_OK)
		goto fail;
	PQclear(res);
	res = NULL;
	if ((rc = pg_commit(c, err)) != STATUS_OK)
		return rc;
	*expired = (int)n;
	return STATUS_OK;
fail:
	PQclear(res);
	{
		struct pg_error e2;

		(void)!pg_rollback(c, &e2);
	}
	return rc;
}

int
sessdb_orphans(struct pg_conn *c, int dead_s, PGresult **rows,
	       struct pg_error *err)
{
	char dead[16];

	*rows = NULL;
	snprintf(dead, sizeof(dead), "%d", dead_s);
	return pg_query(c,
			"SELECT s.session_key, s.id, s.owner, "
			"coalesce(s.requests, '[]')::text FROM mcp_streams s "
			"LEFT JOIN mcp_replicas r ON r.id = s.owner "
			"WHERE NOT s.done AND s.owner IS NOT NULL AND "
			"(r.id IS NULL OR r.seen_at < now() - "
			"make_interval(secs => $1::integer)) LIMIT 100",
			1, (const char *[]){dead}, rows, err);
}

int
sessdb_takeover(struct pg_conn *c, const char *key, const char *stream_id,
		const char *dead,
		int (*finish)(void *arg, PGresult *events, uint64_t next_seq,
			      char ***ev, size_t *n),
		void *arg, struct pg_error *err)
{
	PGresult *res = NULL;
	struct pg_error e2;
	char **ev = NULL, seq[24], *data = NULL;
	size_t n = 0, i;
	int64_t next;
	int rc;

	if ((rc = pg_begin(c, err)) != STATUS_OK)
		return rc;
	if ((rc = one_row(
		     c,
		     "SELECT next_seq FROM mcp_streams WHERE session_key = "
		     "$1 AND id = $2 AND owner = $3 AND NOT done FOR UPDATE",
		     3, (const char *[]){key, stream_id, dead}, &res, err)) !=
		    STATUS_OK ||
	    (rc = field_i64(res, 0, 0, &next, err)) != STATUS_OK)
		goto fail;
	PQclear(res);
	res = NULL;
	if ((rc = pg_query(c,
			   "SELECT seq, data FROM mcp_events WHERE session_key "
			   "= $1 AND stream_id = $2 ORDER BY seq",
			   2, (const char *[]){key, stream_id}, &res, err)) !=
	    STATUS_OK)
		goto fail;
	if ((rc = finish(arg, res, (uint64_t)next, &ev, &n)) != STATUS_OK) {
		local_error(err, rc,
			    "could not end a stopped replica's stream");
		goto fail;
	}
	PQclear(res);
	res = NULL;
	if ((rc = json_strings((const char *const *)ev, n, &data)) !=
	    STATUS_OK) {
		rc = strings_error(err, rc);
		goto fail;
	}
	snprintf(seq, sizeof(seq), "%" PRId64, next);
	/* one statement: the events, the stream ended and ownerless, the
	 * dead replica's pending requests of the session, the reader woken */
	if ((rc = pg_query(
		     c,
		     "WITH e AS (INSERT INTO mcp_events SELECT $1, $2, "
		     "$4::bigint + i - 1, d FROM jsonb_array_elements_text("
		     "$5::jsonb) WITH ORDINALITY AS t(d, i)), "
		     "s AS (UPDATE mcp_streams SET next_seq = $4::bigint + "
		     "jsonb_array_length($5::jsonb), done = true, done_at = "
		     "now(), owner = NULL WHERE session_key = $1 AND id = $2 "
		     "RETURNING reader), "
		     "p AS (DELETE FROM mcp_pending WHERE session_key = $1 AND "
		     "owner = $3) "
		     "SELECT pg_notify('" SESSDB_REPLICA_PREFIX
		     "' || reader, 'e ' || $1 || ' ' || $2) FROM s "
		     "WHERE reader IS NOT NULL AND reader <> $3",
		     5, (const char *[]){key, stream_id, dead, seq, data}, NULL,
		     err)) != STATUS_OK)
		goto fail;
	rc = pg_commit(c, err);
	goto out;
fail:
	/* err keeps the first failure, not the rollback's */
	(void)!pg_rollback(c, &e2);
out:
	PQclear(res);
	for (i = 0; i < n; i++)
		free(ev[i]);
	free(ev);
	free(data);
	return rc;
}

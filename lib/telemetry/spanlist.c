/*
 * spanlist.c - the span listing for query_spans (see spanlist.h): one
 * static statement per order, every value bound, PostgreSQL planning each
 * with the values known so that unused "$n IS NULL OR ..." filters cost
 * nothing; and the cursor, base64url of a small JSON object.
 */
#include "telemetry/spanlist.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "base/base64.h"
#include "base/hex.h"

/* latest start accepted in a cursor: 9999-12-31T23:59:59.999999Z */
#define MAX_START_US 253402300799999999LL

/*
 * $1 / $2 range, $3 service, $4 trace id, $5 session id, $6 outcome ("ok",
 * "error", "client_error": sextant_span_outcome), $7 min duration.  A span eBPF and OTLP both saw is its OTLP
 * row: the eBPF copy is left out whether or not the OTLP one matches, so
 * that the rows and their count agree whatever the filters.  The OTLP
 * copy is looked for within an hour of the range (the two copies of a
 * span start within moments of each other), which lets PostgreSQL prune
 * partitions and hash the range's OTLP ids instead of probing every day.
 */
#define FILTERS                                                                \
	"($1::timestamptz IS NULL OR s.start_time >= $1::timestamptz) "        \
	"AND ($2::timestamptz IS NULL OR s.start_time < $2::timestamptz) "     \
	"AND ($3::text IS NULL OR s.service_name = $3::text) "                 \
	"AND ($4::bytea IS NULL OR s.trace_id = $4::bytea) "                   \
	"AND ($5::text IS NULL OR s.session_id = $5::text) "                   \
	"AND ($6::text IS NULL OR sextant_span_outcome(s.kind, "               \
	"s.status_code, "                                                      \
	"s.http_status_code, s.rpc_grpc_status_code) = CASE $6::text "         \
	"WHEN 'error' THEN 1 WHEN 'client_error' THEN 2 ELSE 0 END) "          \
	"AND ($7::bigint IS NULL OR s.duration_ns >= $7::bigint) "             \
	"AND NOT (s.source = 'ebpf' AND EXISTS (SELECT 1 FROM spans o "        \
	"WHERE o.trace_id = s.trace_id AND o.span_id = s.span_id "             \
	"AND o.source = 'otlp' AND ($1::timestamptz IS NULL OR "               \
	"o.start_time >= $1::timestamptz - interval '1 hour') AND "            \
	"($2::timestamptz IS NULL OR "                                         \
	"o.start_time < $2::timestamptz + interval '1 hour'))) "

#define GENAI                                                                  \
	"(gen_ai_provider IS NOT NULL OR gen_ai_operation IS NOT NULL OR "     \
	"gen_ai_request_model IS NOT NULL OR gen_ai_response_model IS NOT "    \
	"NULL OR gen_ai_input_tokens IS NOT NULL OR gen_ai_output_tokens IS "  \
	"NOT NULL)"

#define INNER_COLS                                                             \
	"trace_id, span_id, parent_span_id, start_time, start_nanos, "         \
	"duration_ns, kind, status_code, source, service_name, name, "         \
	"status_message, session_id, gen_ai_provider, gen_ai_operation, "      \
	"coalesce(nullif(gen_ai_response_model, ''), "                         \
	"nullif(gen_ai_request_model, '')) AS model, "                         \
	"gen_ai_input_tokens, gen_ai_output_tokens, " GENAI " AS genai, "      \
	"http_status_code, rpc_grpc_status_code"

/* The cost and the eBPF twin are looked up for the page's rows only. */
#define OUTER_COLS                                                             \
	"encode(trace_id, 'hex'), encode(span_id, 'hex'), "                    \
	"encode(parent_span_id, 'hex'), "                                      \
	"(extract(epoch FROM start_time) * 1000000)::bigint, start_nanos, "    \
	"duration_ns, kind, status_code, source, service_name, name, "         \
	"status_message, session_id, gen_ai_provider, gen_ai_operation, "      \
	"model, gen_ai_input_tokens, gen_ai_output_tokens, genai, "            \
	"CASE WHEN genai THEN sextant_genai_cost_usd(gen_ai_provider, model, " \
	"gen_ai_input_tokens, gen_ai_output_tokens, start_time)::text END, "   \
	"source = 'otlp' AND EXISTS (SELECT 1 FROM spans e WHERE "             \
	"e.trace_id = p.trace_id AND e.span_id = p.span_id AND "               \
	"e.source = 'ebpf'), http_status_code, rpc_grpc_status_code, "         \
	"sextant_span_outcome(kind, status_code, http_status_code, "           \
	"rpc_grpc_status_code) "

/* $8..$12: the key of the row the page starts after (all NULL: none) */
#define AFTER_ROW                                                              \
	"($8::timestamptz, $9::smallint, $10::bytea, $11::bytea, $12::text)"
#define ROW_COLS                                                               \
	"(s.start_time, s.start_nanos, s.trace_id, s.span_id, s.source)"
#define BY_START                                                               \
	"start_time DESC, start_nanos DESC, trace_id DESC, span_id DESC, "     \
	"source DESC"

/* $13 limit + 1 (one more row says whether another page follows) */
static const char page_start_sql[] =
	"SELECT " OUTER_COLS "FROM (SELECT " INNER_COLS " FROM spans s WHERE "
	"" FILTERS "AND ($8::timestamptz IS NULL OR " ROW_COLS " < " AFTER_ROW
	") ORDER BY " BY_START " LIMIT $13::int) p ORDER BY " BY_START;

/* $14 the duration of the row the page starts after */
static const char page_duration_sql[] =
	"SELECT " OUTER_COLS "FROM (SELECT " INNER_COLS " FROM spans s WHERE "
	"" FILTERS "AND ($8::timestamptz IS NULL OR (s.duration_ns, "
	"s.start_time, s.start_nanos, s.trace_id, s.span_id, s.source) < "
	"($14::bigint, $8::timestamptz, $9::smallint, $10::bytea, $11::bytea, "
	"$12::text)) ORDER BY duration_ns DESC, " BY_START
	" LIMIT $13::int) p ORDER BY duration_ns DESC, " BY_START;

static const char count_sql[] = "SELECT count(*) FROM spans s WHERE " FILTERS;

static const char *const source_names[] = {"otlp", "ebpf"};

static void
bytea_text(const uint8_t *p, size_t n, char *out)
{
	out[0] = '\\';
	out[1] = 'x';
	hex_encode(p, n, out + 2);
}

/* The bound text of the seven filter parameters, in storage of the
 * caller's. */
struct filter_params {
	char from[48], to[48], trace[40], mind[24];
	const char *v[7];
};

static int
filter_params(const struct spanlist_filter *f, struct filter_params *p,
	      struct pg_error *err)
{
	memset(p, 0, sizeof(*p));
	if (f->has_range && f->from_ms >= f->to_ms) {
		return pg_error_set(
			err, STATUS_INVALID,
			"the time range is empty: from must be before to");
	}
	if (f->status < SPANLIST_STATUS_ANY ||
	    f->status > SPANLIST_STATUS_CLIENT_ERROR ||
	    (f->order != SPANLIST_ORDER_START &&
	     f->order != SPANLIST_ORDER_DURATION)) {
		return pg_error_set(err, STATUS_INVALID,
				    "status or order out of range");
	}
	if (f->has_range) {
		pg_ts_text(f->from_ms, p->from, sizeof(p->from));
		pg_ts_text(f->to_ms, p->to, sizeof(p->to));
		p->v[0] = p->from;
		p->v[1] = p->to;
	}
	p->v[2] = f->service;
	if (f->has_trace_id) {
		bytea_text(f->trace_id, 16, p->trace);
		p->v[3] = p->trace;
	}
	p->v[4] = f->session_id;
	if (f->status != SPANLIST_STATUS_ANY)
		p->v[5] = f->status == SPANLIST_STATUS_ERROR ? "error"
			  : f->status == SPANLIST_STATUS_CLIENT_ERROR
				  ? "client_error"
				  : "ok";
	if (f->min_duration_ns >= 0) {
		snprintf(p->mind, sizeof(p->mind), "%" PRId64,
			 f->min_duration_ns);
		p->v[6] = p->mind;
	}
	return STATUS_OK;
}

int
spanlist_page_send(struct pg_conn *c, const struct spanlist_filter *f,
		   const struct spanlist_key *after, size_t limit,
		   struct pg_error *err)
{
	struct filter_params fp;
	char start[48], nanos[8], trace[40], span[24], lim[16], dur[24];
	const char *v[14] = {NULL};
	int rc;

	if (limit < 1 || limit > SPANLIST_MAX_LIMIT) {
		return pg_error_set(err, STATUS_INVALID,
				    "limit must be 1..200");
	}
	if ((rc = filter_params(f, &fp, err)) != STATUS_OK)
		return rc;
	memcpy(v, fp.v, sizeof(fp.v));
	if (after != NULL) {
		if (after->start_us < 0 || after->start_us > MAX_START_US ||
		    after->start_nanos < 0 || after->start_nanos > 999 ||
		    after->duration_ns < 0 ||
		    (after->source != SPANLIST_SOURCE_OTLP &&
		     after->source != SPANLIST_SOURCE_EBPF)) {
			return pg_error_set(err, STATUS_INVALID,
					    "the page key is out of range");
		}
		pg_ts_text_us(after->start_us, start, sizeof(start));
		snprintf(nanos, sizeof(nanos), "%d", after->start_nanos);
		bytea_text(after->trace_id, 16, trace);
		bytea_text(after->span_id, 8, span);
		snprintf(dur, sizeof(dur), "%" PRId64, after->duration_ns);
		v[7] = start;
		v[8] = nanos;
		v[9] = trace;
		v[10] = span;
		v[11] = source_names[after->source];
		v[13] = dur;
	}
	snprintf(lim, sizeof(lim), "%zu", limit + 1);
	v[12] = lim;
	if (f->order == SPANLIST_ORDER_DURATION)
		return pg_send(c, page_duration_sql, 14, v, err);
	return pg_send(c, page_start_sql, 13, v, err);
}

struct page_priv {
	PGresult *res;
};

static const char *
opt_text(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static int
opt_i64(const PGresult *res, int row, int col, int64_t *out)
{
	*out = -1;
	if (PQgetisnull(res, row, col))
		return STATUS_OK;
	return pg_text_i64(PQgetvalue(res, row, col), out);
}

/* One row of the page statement into sp; STATUS_INVALID when unparsable. */
static int
page_row(const PGresult *res, int i, struct spanlist_span *sp)
{
	int64_t start_us, nanos, dur, kind, status, code = 0, code2 = 0,
						    outcome;
	const char *src = PQgetvalue(res, i, 8), *cost;
	char *end;

	if (hex_decode(PQgetvalue(res, i, 0), sp->key.trace_id, 16) ||
	    hex_decode(PQgetvalue(res, i, 1), sp->key.span_id, 8) ||
	    pg_text_i64(PQgetvalue(res, i, 3), &start_us) ||
	    pg_text_i64(PQgetvalue(res, i, 4), &nanos) ||
	    pg_text_i64(PQgetvalue(res, i, 5), &dur) ||
	    pg_text_i64(PQgetvalue(res, i, 6), &kind) ||
	    pg_text_i64(PQgetvalue(res, i, 7), &status) ||
	    opt_i64(res, i, 16, &sp->input_tokens) ||
	    opt_i64(res, i, 17, &sp->output_tokens) || start_us < 0 ||
	    start_us > MAX_START_US || nanos < 0 || nanos > 999 || dur < 0)
		return STATUS_INVALID;
	if (!PQgetisnull(res, i, 2)) {
		if (hex_decode(PQgetvalue(res, i, 2), sp->parent_span_id, 8))
			return STATUS_INVALID;
		sp->has_parent = true;
	}
	if (strcmp(src, "otlp") == 0)
		sp->key.source = SPANLIST_SOURCE_OTLP;
	else if (strcmp(src, "ebpf") == 0)
		sp->key.source = SPANLIST_SOURCE_EBPF;
	else
		return STATUS_INVALID;
	sp->key.start_us = start_us;
	sp->key.start_nanos = (int)nanos;
	sp->key.duration_ns = dur;
	sp->start_ns = (uint64_t)start_us * 1000u + (uint64_t)nanos;
	sp->kind = (int)kind;
	sp->status = (int)status;
	sp->service = PQgetvalue(res, i, 9);
	sp->name = PQgetvalue(res, i, 10);
	sp->status_message = opt_text(res, i, 11);
	sp->session_id = opt_text(res, i, 12);
	sp->provider = opt_text(res, i, 13);
	sp->operation = opt_text(res, i, 14);
	sp->model = opt_text(res, i, 15);
	sp->genai = strcmp(PQgetvalue(res, i, 18), "t") == 0;
	cost = opt_text(res, i, 19);
	if (cost != NULL) {
		errno = 0;
		sp->cost_usd = strtod(cost, &end);
		if (errno != 0 || end == cost || *end != '\0' ||
		    !(sp->cost_usd >= 0))
			return STATUS_INVALID;
		sp->priced = true;
	}
	sp->also_ebpf = strcmp(PQgetvalue(res, i, 20), "t") == 0;
	sp->http_status = sp->grpc_code = -1;
	if (opt_i64(res, i, 21, &code) || opt_i64(res, i, 22, &code2) ||
	    pg_text_i64(PQgetvalue(res, i, 23), &outcome) || outcome < 0 ||
	    outcome > 2 || code < INT_MIN || code > INT_MAX ||
	    code2 < INT_MIN || code2 > INT_MAX)
		return STATUS_INVALID;
	if (!PQgetisnull(res, i, 21))
		sp->http_status = (int)code;
	if (!PQgetisnull(res, i, 22))
		sp->grpc_code = (int)code2;
	sp->outcome = (int)outcome;
	return STATUS_OK;
}

int
spanlist_page_recv(struct pg_conn *c, size_t limit, struct spanlist_page **out,
		   struct pg_error *err)
{
	struct spanlist_page *p = NULL;
	struct page_priv *priv = NULL;
	PGresult *res = NULL;
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	n = (size_t)PQntuples(res);
	p = calloc(1, sizeof(*p));
	priv = calloc(1, sizeof(*priv));
	if (p == NULL || priv == NULL ||
	    (p->spans = calloc(n + 1, sizeof(*p->spans))) == NULL) {
		rc = pg_error_set(err, STATUS_NOMEM, "out of memory");
		goto fail;
	}
	if (PQnfields(res) != 24) {
		rc = STATUS_IO;
		goto bad;
	}
	if (n > limit) {
		p->more = true;
		n = limit;
	}
	for (size_t i = 0; i < n; i++)
		if (page_row(res, (int)i, &p->spans[i]) != STATUS_OK) {
			rc = STATUS_IO;
			goto bad;
		}
	p->n = n;
	priv->res = res;
	p->priv_ = priv;
	*out = p;
	return STATUS_OK;
bad:
	pg_bad_row(err, "span row");
fail:
	if (p != NULL)
		free(p->spans);
	free(p);
	free(priv);
	PQclear(res);
	return rc;
}

void
spanlist_page_free(struct spanlist_page *p)
{
	struct page_priv *priv;

	if (p == NULL)
		return;
	priv = p->priv_;
	if (priv != NULL)
		PQclear(priv->res);
	free(priv);
	free(p->spans);
	free(p);
}

int
spanlist_count_send(struct pg_conn *c, const struct spanlist_filter *f,
		    struct pg_error *err)
{
	struct filter_params fp;
	int rc;

	if ((rc = filter_params(f, &fp, err)) != STATUS_OK)
		return rc;
	return pg_send(c, count_sql, 7, fp.v, err);
}

int
spanlist_count_recv(struct pg_conn *c, int64_t *total, struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	*total = 0;
	if ((rc = pg_result(c, &res, err)) != STATUS_OK)
		return rc;
	if (PQntuples(res) != 1 || PQnfields(res) != 1 ||
	    pg_text_i64(PQgetvalue(res, 0, 0), total) != STATUS_OK ||
	    *total < 0) {
		*total = 0;
		rc = pg_bad_row(err, "count");
	}
	PQclear(res);
	return rc;
}

/* ---- the cursor --------------------------------------------------------- */

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME  1099511628211ull

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* A string with its NUL, or one 0xff byte for NULL: "" and NULL differ. */
static uint64_t
fnv_str(uint64_t h, const char *s)
{
	static const unsigned char none = 0xff;

	return s != NULL ? fnv(h, s, strlen(s) + 1) : fnv(h, &none, 1);
}

static uint64_t
fnv_i64(uint64_t h, int64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (8 * i));
	return fnv(h, b, 8);
}

uint64_t
spanlist_filter_hash(const struct spanlist_filter *f)
{
	uint64_t h = FNV_OFFSET;

	h = fnv_str(h, f->service);
	h = fnv_i64(h, f->has_trace_id);
	if (f->has_trace_id)
		h = fnv(h, f->trace_id, 16);
	h = fnv_str(h, f->session_id);
	h = fnv_i64(h, f->status);
	h = fnv_i64(h, f->min_duration_ns < 0 ? -1 : f->min_duration_ns);
	h = fnv_i64(h, f->order);
	return h;
}

int
spanlist_cursor_encode(const struct spanlist_cursor *cur, char *out, size_t cap)
{
	const struct spanlist_key *k = &cur->after;
	char hash[17], trace[33], span[17];
	char *text = NULL;
	json_t *o = NULL;
	int rc = STATUS_OK;

	if (cap > 0)
		out[0] = '\0';
	if ((cur->order != SPANLIST_ORDER_START &&
	     cur->order != SPANLIST_ORDER_DURATION) ||
	    (k->source != SPANLIST_SOURCE_OTLP &&
	     k->source != SPANLIST_SOURCE_EBPF) ||
	    k->start_us < 0 || k->start_us > MAX_START_US ||
	    k->start_nanos < 0 || k->start_nanos > 999 || k->duration_ns < 0 ||
	    cur->seen > INT64_MAX ||
	    (cur->has_range &&
	     (cur->from_ms < 0 || cur->to_ms > MAX_START_US / 1000 ||
	      cur->from_ms >= cur->to_ms)))
		return STATUS_INVALID;
	snprintf(hash, sizeof(hash), "%016" PRIx64, cur->filter_hash);
	hex_encode(k->trace_id, 16, trace);
	hex_encode(k->span_id, 8, span);
	o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:i, s:s, s:s, s:s}", "v",
		      1, "o",
		      cur->order == SPANLIST_ORDER_START ? "start" : "duration",
		      "h", hash, "k", (json_int_t)cur->seen, "d",
		      (json_int_t)k->duration_ns, "u", (json_int_t)k->start_us,
		      "n", k->start_nanos, "tr", trace, "sp", span, "s",
		      source_names[k->source]);
	if (o == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (cur->has_range &&
	    (json_object_set_new(o, "f", json_integer(cur->from_ms)) != 0 ||
	     json_object_set_new(o, "t", json_integer(cur->to_ms)) != 0)) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if ((text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	if (!base64url_encode((const unsigned char *)text, strlen(text), out,
			      cap)) {
		if (cap > 0)
			out[0] = '\0';
		rc = STATUS_LIMIT;
	}
out:
	free(text);
	json_decref(o);
	return rc;
}

/* o[key] as an integer in [lo, hi]. */
static bool
get_int(const json_t *o, const char *key, json_int_t lo, json_int_t hi,
	json_int_t *out)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return false;
	*out = json_integer_value(v);
	return *out >= lo && *out <= hi;
}

/* o[key] as exactly n bytes of lowercase hex. */
static bool
get_hex(const json_t *o, const char *key, uint8_t *out, size_t n)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (s == NULL || strlen(s) != 2 * n)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (*p >= 'A' && *p <= 'F')
			return false;
	return hex_decode(s, out, n) == STATUS_OK;
}

int
spanlist_cursor_decode(const char *s, struct spanlist_cursor *out)
{
	static const char *const known[] = {"v", "o",  "h",  "k", "d", "u",
					    "n", "tr", "sp", "s", "f", "t"};
	unsigned char raw[SPANLIST_CURSOR_MAX];
	struct spanlist_cursor cur = {0};
	const char *order, *src, *key;
	json_int_t v, ival;
	uint8_t hash[8];
	size_t n = 0;
	json_t *o = NULL, *val;
	int rc = STATUS_INVALID;

	memset(out, 0, sizeof(*out));
	if (s == NULL || strlen(s) > SPANLIST_CURSOR_MAX ||
	    !base64url_decode(s, raw, sizeof(raw), &n))
		return STATUS_INVALID;
	o = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o))
		goto out;
	json_object_foreach(o, key, val)
	{
		bool ok = false;

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= strcmp(key, known[i]) == 0;
		if (!ok)
			goto out;
	}
	order = json_string_value(json_object_get(o, "o"));
	src = json_string_value(json_object_get(o, "s"));
	if (!get_int(o, "v", 1, 1, &v) || order == NULL || src == NULL ||
	    !get_hex(o, "h", hash, 8) ||
	    !get_hex(o, "tr", cur.after.trace_id, 16) ||
	    !get_hex(o, "sp", cur.after.span_id, 8))
		goto out;
	if (strcmp(order, "start") == 0)
		cur.order = SPANLIST_ORDER_START;
	else if (strcmp(order, "duration") == 0)
		cur.order = SPANLIST_ORDER_DURATION;
	else
		goto out;
	if (strcmp(src, "otlp") == 0)
		cur.after.source = SPANLIST_SOURCE_OTLP;
	else if (strcmp(src, "ebpf") == 0)
		cur.after.source = SPANLIST_SOURCE_EBPF;
	else
		goto out;
	for (int i = 0; i < 8; i++)
		cur.filter_hash = cur.filter_hash << 8 | hash[i];
	if (!get_int(o, "k", 0, INT64_MAX, &ival))
		goto out;
	cur.seen = (uint64_t)ival;
	if (!get_int(o, "d", 0, INT64_MAX, &ival))
		goto out;
	cur.after.duration_ns = ival;
	if (!get_int(o, "u", 0, MAX_START_US, &ival))
		goto out;
	cur.after.start_us = ival;
	if (!get_int(o, "n", 0, 999, &ival))
		goto out;
	cur.after.start_nanos = (int)ival;
	if (json_object_get(o, "f") != NULL ||
	    json_object_get(o, "t") != NULL) {
		json_int_t from, to;

		if (!get_int(o, "f", 0, MAX_START_US / 1000, &from) ||
		    !get_int(o, "t", 0, MAX_START_US / 1000, &to) || from >= to)
			goto out;
		cur.has_range = true;
		cur.from_ms = from;
		cur.to_ms = to;
	}
	*out = cur;
	rc = STATUS_OK;
out:
	json_decref(o);
	return rc;
}

/*
 * rollup.c - duration buckets, histograms summed from rollup rows, the
 * split of a query range, and the refresh and pruning of span_rollup,
 * span_rollup_minute and span_rollup_5m (contracts in rollup.h, tables in
 * migrations/0005_span_rollup.sql, 0008_span_rollup_minute.sql,
 * 0015_span_rollup_5m.sql and docs/schema.md).
 */
#include "telemetry/rollup.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/locks.h"
#include "pg/migrate.h"
#include "telemetry/meshquery.h"
#include "telemetry/resourcequery.h"

/* Extra buckets allocated beyond the ones asked for when a histogram
 * grows, so rows arriving in ascending bucket order reallocate rarely. */
#define HIST_SLACK 64

/* "SEXTANT" 0x03 (lib/pg/migrate holds 0x01, the partition functions 0x02). */
#define REFRESH_LOCK "pg_try_advisory_xact_lock(" LOCK_ROLLUP_REFRESH ")"
/* The same lock, waited for (under the statement timeout); once held, the
 * transaction's REFRESH_LOCK takes it again at once. */
static const char wait_lock_sql[] =
	"SELECT pg_advisory_xact_lock(" LOCK_ROLLUP_REFRESH ")";

/* Times beyond which rollup_split_range gives no rollup part. */
#define SPLIT_LIMIT_MS (INT64_MAX / 4)

/* Units fetched per candidate query when max_units is 0 or large. */
#define CANDIDATE_BATCH 64

/* A dirty row's slot is floor(epoch / 10) of the statement that marked
 * it (lib/otlp/store); slot s is old once 10 (s + 1) + 60 <= now, i.e.
 * s < floor(now / 10) - 6: a writer that found the row there has
 * committed by then (its statement began inside slot s, and COMMIT
 * follows it at once).  The 6 is the parameter p (SLOT_LAG), so that a
 * fenced refresh (rollup_refresh_fenced) can take every mark instead. */
#define OLD_SLOT(p)                                                            \
	"(floor(extract(epoch FROM now()) / 10)::bigint - " p "::integer)"
#define SLOT_LAG "6"
/* Far below any slot a real clock gives: every mark counts as old. */
#define SLOT_LAG_ALL "-1000000000"

/*
 * Whether a transaction other than this one holds a transaction id (and
 * so the lock on it, until it ends).  A fenced refresh asks it after
 * deleting a unit's marks: a writer that found one of them before the
 * delete (ON CONFLICT DO NOTHING, no lock) holds an id, since it inserted
 * spans first, until it commits; one that comes after waits for the
 * delete's transaction and marks again.  With none, every span that mark
 * stood for is committed, and the aggregate's later snapshot (READ
 * COMMITTED: one per statement) sees it.  pg_locks, not the snapshot's
 * xip list: that one leaves out ids at or past its xmax, which a writer
 * that has not finished yet may hold.  A prepared transaction (no pid)
 * counts too.
 */
static const char fence_sql[] =
	"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = "
	"'transactionid' AND mode = 'ExclusiveLock' AND granted "
	"AND pid IS DISTINCT FROM pg_backend_pid())";

/* The span scans of a refresh read one period of every service: through
 * the (source, start_time) btree (rollup.h, ROLLUP_ALL_SOURCES). */
#define ALL_SOURCES ROLLUP_ALL_SOURCES

struct rollup_hist {
	int64_t *counts; /* counts[i] is bucket lo + i */
	int lo;		 /* first bucket covered */
	int n;		 /* buckets covered: lo .. lo + n - 1 */
	int64_t total;
};

static double
gamma_value(void)
{
	return (1.0 + ROLLUP_ALPHA) / (1.0 - ROLLUP_ALPHA);
}

int
rollup_bucket(int64_t duration_ns)
{
	double i;

	if (duration_ns <= 0)
		return 0;
	/* the same float8 operations as sextant_duration_bucket(): ln() is
	 * the C library's log() in PostgreSQL as here */
	i = ceil(log((double)duration_ns) / log(gamma_value()));
	if (i < 1)
		return 1;
	return i > ROLLUP_BUCKET_MAX ? ROLLUP_BUCKET_MAX : (int)i;
}

double
rollup_bucket_value(int bucket)
{
	double g = gamma_value();

	if (bucket <= 0)
		return 0;
	return 2.0 * pow(g, bucket) / (g + 1.0);
}

struct rollup_hist *
rollup_hist_new(void)
{
	return calloc(1, sizeof(struct rollup_hist));
}

void
rollup_hist_free(struct rollup_hist *h)
{
	if (h == NULL)
		return;
	free(h->counts);
	free(h);
}

/* Makes buckets first..last (within 0..ROLLUP_BUCKET_MAX) addressable. */
static int
hist_cover(struct rollup_hist *h, int first, int last)
{
	int lo = first, hi = last, have_hi = h->lo + h->n - 1;
	int64_t *counts;

	if (h->n > 0) {
		if (first >= h->lo && last <= have_hi)
			return STATUS_OK;
		if (h->lo < lo)
			lo = h->lo;
		if (have_hi > hi)
			hi = have_hi;
		/* grow on the side that ran out, with room for more */
		if (first < h->lo)
			lo -= HIST_SLACK + (hi - lo) / 2;
		if (last > have_hi)
			hi += HIST_SLACK + (hi - lo) / 2;
	} else {
		hi += HIST_SLACK;
	}
	if (lo < 0)
		lo = 0;
	if (hi > ROLLUP_BUCKET_MAX)
		hi = ROLLUP_BUCKET_MAX;
	counts = calloc((size_t)(hi - lo + 1), sizeof(*counts));
	if (counts == NULL)
		return STATUS_NOMEM;
	if (h->n > 0)
		memcpy(counts + (h->lo - lo), h->counts,
		       (size_t)h->n * sizeof(*counts));
	free(h->counts);
	h->counts = counts;
	h->lo = lo;
	h->n = hi - lo + 1;
	return STATUS_OK;
}

int
rollup_hist_add(struct rollup_hist *h, int bucket, int64_t count)
{
	int rc;

	if (h == NULL || bucket < 0 || bucket > ROLLUP_BUCKET_MAX || count < 0)
		return STATUS_INVALID;
	if (count > INT64_MAX - h->total)
		return STATUS_LIMIT;
	if (count == 0)
		return STATUS_OK;
	if ((rc = hist_cover(h, bucket, bucket)) != STATUS_OK)
		return rc;
	h->counts[bucket - h->lo] += count;
	h->total += count;
	return STATUS_OK;
}

/*
 * One non-negative decimal integer at *p (digits only, at most max),
 * advancing *p past it.  Hand-written rather than strtoll: this runs for
 * every bucket of every rollup row a query sums (hundreds of thousands per
 * query), and the input is PostgreSQL's own output, so no sign, space or
 * locale handling is wanted.  19 digits cannot overflow a uint64_t.
 */
static bool
parse_uint(const char **p, uint64_t max, int64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (*s >= '0' && *s <= '9') {
		if (++digits > 19)
			return false;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (digits == 0 || v > max)
		return false;
	*p = s;
	*out = (int64_t)v;
	return true;
}

/* Reads the elements of an array literal ("{1,2,3}", "{}", or a bare
 * "5") one at a time. */
struct cursor {
	const char *p;
	bool braces;
	bool done; /* past the last element */
};

static void
cursor_init(struct cursor *cu, const char *text)
{
	cu->braces = *text == '{';
	cu->p = text + cu->braces;
	cu->done = cu->braces && *cu->p == '}';
	if (cu->done)
		cu->p++;
}

/* The next element, up to max; false when the text is malformed there. */
static bool
cursor_next(struct cursor *cu, uint64_t max, int64_t *v)
{
	if (cu->done || !parse_uint(&cu->p, max, v))
		return false;
	if (cu->braces) {
		if (*cu->p == ',') {
			cu->p++;
			return true;
		}
		if (*cu->p != '}')
			return false;
		cu->p++;
	}
	cu->done = true;
	return true;
}

/* Takes back the first n elements added from buckets and counts (text
 * already read once, so known good). */
static void
hist_undo(struct rollup_hist *h, const char *buckets, const char *counts,
	  int64_t n)
{
	struct cursor cb, cc;

	cursor_init(&cb, buckets);
	cursor_init(&cc, counts);
	for (int64_t i = 0; i < n; i++) {
		int64_t b = 0, c = 0;

		(void)cursor_next(&cb, ROLLUP_BUCKET_MAX, &b);
		(void)cursor_next(&cc, INT64_MAX, &c);
		h->counts[b - h->lo] -= c;
		h->total -= c;
	}
}

int
rollup_hist_add_text(struct rollup_hist *h, const char *buckets,
		     const char *counts)
{
	struct cursor cb, cc;
	int64_t n = 0;
	int rc = STATUS_OK;

	if (h == NULL || buckets == NULL || counts == NULL)
		return STATUS_INVALID;
	/* one pass (the common case is well-formed text), added as read;
	 * a failure part-way takes back what was added */
	cursor_init(&cb, buckets);
	cursor_init(&cc, counts);
	while (!cb.done && !cc.done) {
		int64_t b = 0, c = 0;

		if (!cursor_next(&cb, ROLLUP_BUCKET_MAX, &b) ||
		    !cursor_next(&cc, INT64_MAX, &c)) {
			rc = STATUS_INVALID;
			break;
		}
		if (c > INT64_MAX - h->total) {
			rc = STATUS_LIMIT;
			break;
		}
		if ((b < h->lo || b >= h->lo + h->n) &&
		    (rc = hist_cover(h, (int)b, (int)b)) != STATUS_OK)
			break;
		h->counts[b - h->lo] += c;
		h->total += c;
		n++;
	}
	/* both arrays ended together, and nothing follows */
	if (rc == STATUS_OK &&
	    (!cb.done || !cc.done || *cb.p != '\0' || *cc.p != '\0'))
		rc = STATUS_INVALID;
	if (rc != STATUS_OK)
		hist_undo(h, buckets, counts, n);
	return rc;
}

int64_t
rollup_hist_count(const struct rollup_hist *h)
{
	return h != NULL ? h->total : 0;
}

double
rollup_hist_quantile(const struct rollup_hist *h, double q)
{
	int64_t rank0, cum = 0;
	double pos, frac, v0 = 0;
	bool have0 = false;

	if (h == NULL || h->total == 0)
		return 0;
	if (!(q > 0)) /* also NaN */
		q = 0;
	if (q > 1)
		q = 1;
	/* percentile_cont: rows first_row and first_row + 1 (0-based) of
	 * the sorted values, weighted by the fraction (PostgreSQL's
	 * orderedsetaggs.c does the same double arithmetic) */
	pos = q * (double)(h->total - 1);
	/* near 2^63 the double rounds up past INT64_MAX: clamp first */
	if (pos >= (double)(h->total - 1)) {
		rank0 = h->total - 1;
		frac = 0;
	} else {
		rank0 = (int64_t)floor(pos);
		frac = pos - (double)rank0;
	}
	for (int i = 0; i < h->n; i++) {
		if (h->counts[i] == 0)
			continue;
		cum += h->counts[i];
		if (!have0 && cum > rank0) {
			v0 = rollup_bucket_value(h->lo + i);
			have0 = true;
			if (frac <= 0)
				return v0;
		}
		if (have0 && cum > rank0 + 1) {
			double v1 = rollup_bucket_value(h->lo + i);

			return v0 + frac * (v1 - v0);
		}
	}
	return v0;
}

/* ---- refresh and pruning ------------------------------------------------ */

static int
bad_args(struct pg_error *err, const char *what)
{
	if (err != NULL) {
		snprintf(err->client, sizeof(err->client),
			 "the rollup maintenance was called wrongly");
		snprintf(err->detail, sizeof(err->detail), "rollup: %s", what);
		err->sqlstate[0] = '\0';
	}
	return STATUS_INVALID;
}

static int
unexpected(struct pg_error *err, const char *what, const char *value)
{
	if (err != NULL) {
		snprintf(err->client, sizeof(err->client),
			 "the database gave an unexpected answer");
		snprintf(err->detail, sizeof(err->detail),
			 "rollup: unexpected %s \"%.64s\"", what, value);
		err->sqlstate[0] = '\0';
	}
	return STATUS_IO;
}

/* A bigint column value. */
static bool
parse_bigint(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return false;
	*out = (int64_t)v;
	return true;
}

/*
 * Periods travel between statements as text in UTC ("2026-11-22
 * 20:00:00.000000+00"), which reads back exactly whatever the session's
 * DateStyle and TimeZone.
 */
#define PERIOD_TEXT                                                            \
	"to_char(period AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || "   \
	"'+00'"

/*
 * Settled periods (ended ROLLUP_SETTLE_S ago) after $1 (NULL: from the
 * oldest) whose dirty rows are all old (slot lag $5), oldest first, at
 * most $4.
 */
static const char candidates_sql[] =
	"SELECT " PERIOD_TEXT " FROM span_rollup_dirty "
	"WHERE period < now() - make_interval(secs => $2::integer + "
	"$3::integer) AND ($1::timestamptz IS NULL OR period > "
	"$1::timestamptz) "
	"GROUP BY period HAVING max(slot) < " OLD_SLOT(
		"$5") " "
		      "ORDER BY period LIMIT $4";

/* Whether another refresher holds the lock, and whether the period has a
 * young dirty row (slot lag $2: written in the last 60 s) as of this
 * transaction. */
static const char check_sql[] =
	"SELECT NOT " REFRESH_LOCK ", EXISTS (SELECT 1 FROM "
	"span_rollup_dirty WHERE period = $1::timestamptz AND slot "
	">= " OLD_SLOT("$2") ")";

static const char clear_dirty_sql[] =
	"DELETE FROM span_rollup_dirty WHERE period = $1::timestamptz "
	"AND slot < " OLD_SLOT("$2");

static const char clear_rollup_sql[] =
	"DELETE FROM span_rollup WHERE period = $1::timestamptz";

/* The calls of one period per key, with their histogram: counts per
 * bucket first, then one row per key with the buckets ascending. */
static const char aggregate_sql[] =
	"INSERT INTO span_rollup (period, service_name, source, protocol, k1, "
	"k2, status, span_error, requests, buckets, counts) "
	"SELECT $1::timestamptz, service_name, source, protocol, k1, k2, "
	"status, span_error, sum(n)::bigint, array_agg(b ORDER BY b), "
	"array_agg(n ORDER BY b) "
	"FROM (SELECT service_name, source, protocol, k1, k2, status, "
	"span_error, sextant_duration_bucket(duration_ns) AS b, count(*) AS n "
	"FROM span_calls WHERE start_time >= $1::timestamptz "
	"AND start_time < $1::timestamptz + make_interval(secs => "
	"$2::integer) AND protocol IS NOT NULL AND " ALL_SOURCES
	"GROUP BY service_name, source, protocol, k1, k2, status, span_error, "
	"b) g "
	"GROUP BY service_name, source, protocol, k1, k2, status, span_error";

static const char pending_sql[] =
	"SELECT count(DISTINCT period) FROM span_rollup_dirty "
	"WHERE period < now() - make_interval(secs => $1::integer + "
	"$2::integer)";

/*
 * Hours (as PERIOD_TEXT) after $1 (NULL: from the oldest) holding a
 * settled dirty minute (M + $2 + $3 s < now) whose marks are all old
 * (slot lag $5), oldest first, at most $4.
 */
static const char minute_candidates_sql[] =
	"SELECT " PERIOD_TEXT " FROM (SELECT date_trunc('hour', period, "
	"'UTC') AS period FROM span_rollup_minute_dirty "
	"WHERE period < now() - make_interval(secs => $2::integer + "
	"$3::integer) GROUP BY period HAVING max(slot) < " OLD_SLOT(
		"$5") ") m WHERE $1::timestamptz IS NULL OR period > "
		      "$1::timestamptz "
		      "GROUP BY period ORDER BY period LIMIT $4";

/*
 * In hour $1: the marks of the settled minutes that have no young mark
 * (slot lag $4), deleted; the minutes they named (Unix s), and the first and last.  A
 * writer's mark made after this statement's snapshot is not deleted, so
 * its minute is done again later.
 */
static const char minute_take_sql[] =
	"WITH h AS (SELECT period, slot FROM span_rollup_minute_dirty "
	"WHERE period >= $1::timestamptz AND period < $1::timestamptz + "
	"interval '1 hour'), "
	"d AS (DELETE FROM span_rollup_minute_dirty x USING h "
	"WHERE x.period = h.period AND x.slot = h.slot "
	"AND h.period < now() - make_interval(secs => $2::integer + "
	"$3::integer) AND h.period NOT IN (SELECT period FROM h WHERE slot "
	">= " OLD_SLOT("$4") ") RETURNING extract(epoch FROM x.period)::bigint "
			     "AS e) SELECT array_agg(DISTINCT e ORDER BY "
			     "e)::text, min(e), max(e) "
			     "FROM d";

/* Minute rows for the minutes $1 (Unix s) go, to be computed again. */
static const char minute_clear_sql[] =
	"DELETE FROM span_rollup_minute WHERE period = ANY (ARRAY(SELECT "
	"to_timestamp(unnest($1::bigint[]))))";

/* The calls of the minutes $1 (Unix s, $2 the first, $3 the last) per
 * minute and key, with their histograms, as aggregate_sql per hour. */
static const char minute_aggregate_sql[] =
	"INSERT INTO span_rollup_minute (period, service_name, source, "
	"protocol, k1, k2, status, span_error, requests, buckets, counts) "
	"SELECT to_timestamp(m), service_name, source, protocol, k1, k2, "
	"status, span_error, sum(n)::bigint, array_agg(b ORDER BY b), "
	"array_agg(n ORDER BY b) "
	"FROM (SELECT (floor(extract(epoch FROM start_time) / 60) * "
	"60)::bigint "
	"AS m, service_name, source, protocol, k1, k2, status, span_error, "
	"sextant_duration_bucket(duration_ns) AS b, count(*) AS n "
	"FROM span_calls WHERE start_time >= to_timestamp($2::bigint) "
	"AND start_time < to_timestamp($3::bigint + 60) "
	"AND protocol IS NOT NULL AND " ALL_SOURCES
	"AND (floor(extract(epoch FROM start_time) / 60) * 60)::bigint "
	"= ANY ($1::bigint[]) "
	"GROUP BY m, service_name, source, protocol, k1, k2, status, "
	"span_error, b) g "
	"GROUP BY m, service_name, source, protocol, k1, k2, status, "
	"span_error";

/* The 5-minute periods ($2 s long) holding the minutes $1 (Unix s): their
 * span_rollup_5m rows go, to be merged again from the minute rows. */
static const char five_clear_sql[] =
	"DELETE FROM span_rollup_5m WHERE period = ANY (ARRAY(SELECT DISTINCT "
	"to_timestamp(e / $2::bigint * $2::bigint) FROM unnest($1::bigint[]) "
	"e))";

/*
 * The minute rows of the periods ($4 s long) holding the minutes $1 (Unix
 * s, $2 the first, $3 the last), merged per period, service, source,
 * protocol and outcome: the counts of each bucket summed, then one row
 * with the buckets ascending, the arrays as text (as 0015 fills the
 * table).  The minute rows
 * are one range of span_rollup_minute_period_idx.
 */
#define FIVE_OF_MINUTE                                                         \
	"(extract(epoch FROM m.period)::bigint / $4::bigint * $4::bigint)"
static const char five_aggregate_sql[] =
	"INSERT INTO span_rollup_5m (period, service_name, source, protocol, "
	"outcome, requests, buckets, counts) "
	"SELECT to_timestamp(p), service_name, source, protocol, outcome, "
	"sum(n)::bigint, array_agg(b ORDER BY b)::text, array_agg(n ORDER BY "
	"b)::text "
	"FROM (SELECT " FIVE_OF_MINUTE " AS p, m.service_name, m.source, "
	"m.protocol, sextant_call_outcome(m.protocol, m.status, m.span_error) "
	"AS outcome, u.b, sum(u.n)::bigint AS n "
	"FROM span_rollup_minute m, unnest(m.buckets, m.counts) u(b, n) "
	"WHERE m.period >= to_timestamp($2::bigint / $4::bigint * $4::bigint) "
	"AND m.period < to_timestamp(($3::bigint / $4::bigint + 1) * "
	"$4::bigint) AND " FIVE_OF_MINUTE " = ANY (ARRAY(SELECT e / $4::bigint "
	"* $4::bigint FROM unnest($1::bigint[]) e)) "
	"GROUP BY 1, 2, 3, 4, 5, 6) g "
	"GROUP BY p, service_name, source, protocol, outcome";

static const char minute_pending_sql[] =
	"SELECT count(DISTINCT date_trunc('hour', period, 'UTC')) FROM "
	"span_rollup_minute_dirty WHERE period < now() - "
	"make_interval(secs => $1::integer + $2::integer)";

/*
 * How a refresh tells which marks it may take: by their age (lag
 * SLOT_LAG, the janitor's way), or every mark, with the fence of
 * fence_sql checked before the aggregate (rollup_refresh_fenced); and
 * whether a unit waits for another refresher's lock (rollup_refresh_wait)
 * or ends the call.
 */
struct refresh_mode {
	const char *lag;
	bool fenced;
	bool wait;
};

/* pg_begin, then in a waiting mode the refresh lock, waited for. */
static int
begin_unit(struct pg_conn *c, const struct refresh_mode *m,
	   struct pg_error *err)
{
	int rc = pg_begin(c, err);

	if (rc == STATUS_OK && m->wait &&
	    (rc = pg_query(c, wait_lock_sql, 0, NULL, NULL, err)) !=
		    STATUS_OK) {
		struct pg_error ignored;

		(void)!pg_rollback(c, &ignored);
	}
	return rc;
}

/*
 * In a fenced refresh, after the unit's marks were deleted: *held when
 * another transaction was in progress (the unit is then rolled back and
 * left for later).
 */
static int
fence(struct pg_conn *c, const struct refresh_mode *m, bool *held,
      struct pg_error *err)
{
	PGresult *res = NULL;
	int rc;

	*held = false;
	if (!m->fenced)
		return STATUS_OK;
	if ((rc = pg_query(c, fence_sql, 0, NULL, &res, err)) == STATUS_OK)
		*held = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return rc;
}

/*
 * The dirty settled minutes of one hour in one transaction.  *refreshed:
 * whether any was (false when every one has a young mark, or the fence
 * held); *locked_out: another refresher holds the lock.
 */
static int
refresh_minutes(struct pg_conn *c, const struct refresh_mode *m,
		const char *hour, bool *refreshed, bool *locked_out,
		struct pg_error *err)
{
	char len[16], settle[16], five[16];
	const char *take[] = {hour, len, settle, m->lag};
	const char *one[1], *two[2], *three[3], *four[4];
	PGresult *res = NULL;
	bool held = false;
	int rc;

	*refreshed = false;
	*locked_out = false;
	snprintf(len, sizeof(len), "%d", ROLLUP_MINUTE_S);
	snprintf(settle, sizeof(settle), "%d", ROLLUP_SETTLE_S);
	snprintf(five, sizeof(five), "%d", ROLLUP_5M_S);
	if ((rc = begin_unit(c, m, err)) != STATUS_OK)
		return rc;
	if ((rc = pg_query(c, "SELECT NOT " REFRESH_LOCK, 0, NULL, &res,
			   err)) != STATUS_OK)
		goto out;
	*locked_out = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	res = NULL;
	if (*locked_out)
		goto out;
	if ((rc = pg_query(c, minute_take_sql, 4, take, &res, err)) !=
	    STATUS_OK)
		goto out;
	if (PQntuples(res) != 1) {
		rc = unexpected(err, "minute list", "no row");
		goto out;
	}
	if (PQgetisnull(res, 0, 0))
		goto out; /* every minute has a young mark: rolled back */
	if ((rc = fence(c, m, &held, err)) != STATUS_OK || held)
		goto out;
	one[0] = three[0] = PQgetvalue(res, 0, 0);
	three[1] = PQgetvalue(res, 0, 1);
	three[2] = PQgetvalue(res, 0, 2);
	memcpy(four, three, sizeof(three));
	two[0] = one[0];
	two[1] = four[3] = five;
	if ((rc = pg_query(c, minute_clear_sql, 1, one, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c, minute_aggregate_sql, 3, three, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c, five_clear_sql, 2, two, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c, five_aggregate_sql, 4, four, NULL, err)) !=
		    STATUS_OK ||
	    (rc = resourcequery_rollup_minutes(c, one[0], err)) != STATUS_OK ||
	    (rc = meshquery_rollup_minutes(c, one[0], err)) != STATUS_OK)
		goto out;
	if ((rc = pg_commit(c, err)) == STATUS_OK)
		*refreshed = true;
out:
	PQclear(res);
	if (!*refreshed) {
		struct pg_error ignored;

		(void)!pg_rollback(c, &ignored);
	}
	return rc;
}

/*
 * One period in one transaction.  *refreshed: whether it was (false when
 * a young row appeared since it was picked, or the fence held);
 * *locked_out: another refresher holds the lock.
 */
static int
refresh_one(struct pg_conn *c, const struct refresh_mode *m, const char *period,
	    bool *refreshed, bool *locked_out, struct pg_error *err)
{
	char len[16];
	const char *one[] = {period, m->lag}, *two[] = {period, len};
	PGresult *res = NULL;
	bool held = false;
	int rc;

	*refreshed = false;
	*locked_out = false;
	snprintf(len, sizeof(len), "%d", ROLLUP_PERIOD_S);
	if ((rc = begin_unit(c, m, err)) != STATUS_OK)
		return rc;
	if ((rc = pg_query(c, check_sql, 2, one, &res, err)) != STATUS_OK)
		goto out;
	*locked_out = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	if (*locked_out || strcmp(PQgetvalue(res, 0, 1), "t") == 0)
		goto out; /* rolled back below: nothing was changed */
	PQclear(res);
	res = NULL;
	if ((rc = pg_query(c, clear_dirty_sql, 2, one, NULL, err)) !=
		    STATUS_OK ||
	    (rc = fence(c, m, &held, err)) != STATUS_OK || held ||
	    (rc = pg_query(c, clear_rollup_sql, 1, one, NULL, err)) !=
		    STATUS_OK ||
	    (rc = pg_query(c, aggregate_sql, 2, two, NULL, err)) != STATUS_OK ||
	    (rc = meshquery_rollup_hour(c, period, err)) != STATUS_OK)
		goto out;
	if ((rc = pg_commit(c, err)) == STATUS_OK)
		*refreshed = true;
out:
	PQclear(res);
	if (!*refreshed) {
		struct pg_error ignored;

		(void)!pg_rollback(c, &ignored);
	}
	return rc;
}

/* Adds the count of one pending statement to *pending. */
static int
count_pending(struct pg_conn *c, const char *sql, int len_s, int *pending,
	      struct pg_error *err)
{
	char len[16], settle[16];
	const char *params[] = {len, settle};
	PGresult *res = NULL;
	int64_t v = 0;
	int rc;

	snprintf(len, sizeof(len), "%d", len_s);
	snprintf(settle, sizeof(settle), "%d", ROLLUP_SETTLE_S);
	rc = pg_query(c, sql, 2, params, &res, err);
	if (rc == STATUS_OK) {
		if (PQntuples(res) != 1)
			rc = unexpected(err, "pending count", "no row");
		else if (!parse_bigint(PQgetvalue(res, 0, 0), &v) || v < 0 ||
			 v > INT32_MAX - *pending)
			rc = unexpected(err, "pending count",
					PQgetvalue(res, 0, 0));
		else
			*pending += (int)v;
	}
	PQclear(res);
	return rc;
}

/* The two kinds of unit, minutes first (see rollup.h). */
static const struct unit_kind {
	const char *candidates_sql;
	const char *pending_sql;
	int len_s;
	int (*refresh)(struct pg_conn *c, const struct refresh_mode *m,
		       const char *period, bool *refreshed, bool *locked_out,
		       struct pg_error *err);
} unit_kinds[] = {
	{minute_candidates_sql, minute_pending_sql, ROLLUP_MINUTE_S,
	 refresh_minutes},
	{candidates_sql, pending_sql, ROLLUP_PERIOD_S, refresh_one},
};

/*
 * Refreshes units of one kind, oldest first, while *n < max_units (0: no
 * limit).  *stop: another refresher holds the lock, or an error.
 */
static int
refresh_kind(struct pg_conn *c, const struct refresh_mode *m,
	     const struct unit_kind *k, int max_units, int *n, bool *stop,
	     struct pg_error *err)
{
	char after[64] = "", len[16], settle[16], limit[16];
	const char *params[] = {NULL, len, settle, limit, m->lag};
	PGresult *res = NULL;
	int rc = STATUS_OK;

	snprintf(len, sizeof(len), "%d", k->len_s);
	snprintf(settle, sizeof(settle), "%d", ROLLUP_SETTLE_S);
	while (!*stop && (max_units == 0 || *n < max_units)) {
		int want = CANDIDATE_BATCH, rows;

		if (max_units > 0 && max_units - *n < want)
			want = max_units - *n;
		snprintf(limit, sizeof(limit), "%d", want);
		params[0] = after[0] != '\0' ? after : NULL;
		if ((rc = pg_query(c, k->candidates_sql, 5, params, &res,
				   err)) != STATUS_OK) {
			*stop = true;
			break;
		}
		rows = PQntuples(res);
		for (int i = 0; i < rows && !*stop; i++) {
			const char *period = PQgetvalue(res, i, 0);
			bool refreshed, locked_out;

			if (strlen(period) >= sizeof(after)) {
				rc = unexpected(err, "period", period);
				*stop = true;
				break;
			}
			snprintf(after, sizeof(after), "%s", period);
			rc = k->refresh(c, m, period, &refreshed, &locked_out,
					err);
			if (rc != STATUS_OK || locked_out)
				*stop = true;
			else if (refreshed)
				(*n)++;
		}
		PQclear(res);
		res = NULL;
		if (rows < want)
			break;
	}
	PQclear(res);
	return rc;
}

static int
refresh(struct pg_conn *c, const struct refresh_mode *m, int max_units,
	int *done, int *pending, struct pg_error *err)
{
	bool stop = false;
	int rc = STATUS_OK, n = 0;

	if (pending != NULL)
		*pending = 0;
	if (done != NULL)
		*done = 0;
	if (c == NULL || done == NULL || max_units < 0)
		return bad_args(err, "no connection or result given, or "
				     "max_units below 0");
	for (size_t i = 0;
	     i < sizeof(unit_kinds) / sizeof(unit_kinds[0]) && !stop; i++)
		rc = refresh_kind(c, m, &unit_kinds[i], max_units, &n, &stop,
				  err);
	*done = n;
	for (size_t i = 0; rc == STATUS_OK && pending != NULL &&
			   i < sizeof(unit_kinds) / sizeof(unit_kinds[0]);
	     i++)
		rc = count_pending(c, unit_kinds[i].pending_sql,
				   unit_kinds[i].len_s, pending, err);
	if (rc != STATUS_OK && pending != NULL)
		*pending = 0;
	return rc;
}

int
rollup_refresh(struct pg_conn *c, int max_units, int *done, int *pending,
	       struct pg_error *err)
{
	static const struct refresh_mode by_age = {SLOT_LAG, false, false};

	return refresh(c, &by_age, max_units, done, pending, err);
}

int
rollup_refresh_wait(struct pg_conn *c, int *done, int *pending,
		    struct pg_error *err)
{
	static const struct refresh_mode by_age = {SLOT_LAG, false, true};

	return refresh(c, &by_age, 0, done, pending, err);
}

int
rollup_refresh_fenced(struct pg_conn *c, int *done, int *pending,
		      struct pg_error *err)
{
	static const struct refresh_mode fenced = {SLOT_LAG_ALL, true, false};

	return refresh(c, &fenced, 0, done, pending, err);
}

/*
 * The partitions (or chunks) of spans and metric_points whose rows changed
 * by at least $1 and a tenth of their size since their last ANALYZE.
 * regclass text is quoted as an identifier where it needs to be.
 */
static const char changed_sql[] =
	"SELECT c.oid::regclass::text FROM pg_inherits i "
	"JOIN pg_class c ON c.oid = i.inhrelid "
	"JOIN pg_stat_user_tables s ON s.relid = c.oid "
	"WHERE i.inhparent IN ('spans'::regclass, 'metric_points'::regclass) "
	"AND s.n_mod_since_analyze >= greatest($1::bigint, "
	"c.reltuples::bigint / 10) ORDER BY 1";

static const char summarize_sql[] =
	"SELECT brin_summarize_new_values(x.indexrelid) FROM pg_index x "
	"JOIN pg_class ic ON ic.oid = x.indexrelid "
	"JOIN pg_am am ON am.oid = ic.relam "
	"WHERE x.indrelid = $1::regclass AND am.amname = 'brin'";

int
rollup_analyze(struct pg_conn *c, int *analyzed, struct pg_error *err)
{
	char min[24], stmt[256];
	const char *one[1] = {min};
	PGresult *res = NULL;
	int rc;

	if (analyzed != NULL)
		*analyzed = 0;
	if (c == NULL || analyzed == NULL)
		return bad_args(err, "no connection or result given");
	snprintf(min, sizeof(min), "%d", ROLLUP_ANALYZE_MIN_ROWS);
	if ((rc = pg_query(c, changed_sql, 1, one, &res, err)) != STATUS_OK)
		return rc;
	for (int i = 0; i < PQntuples(res) && rc == STATUS_OK; i++) {
		const char *rel = PQgetvalue(res, i, 0);

		/* a catalog name: ANALYZE takes no parameter */
		if ((size_t)snprintf(stmt, sizeof(stmt), "ANALYZE %s", rel) >=
		    sizeof(stmt)) {
			rc = unexpected(err, "table name", rel);
			break;
		}
		one[0] = rel;
		if ((rc = pg_query(c, stmt, 0, NULL, NULL, err)) == STATUS_OK &&
		    (rc = pg_query(c, summarize_sql, 1, one, NULL, err)) ==
			    STATUS_OK)
			(*analyzed)++;
	}
	PQclear(res);
	return rc;
}

int
rollup_prune(struct pg_conn *c, int retention_days, struct pg_error *err)
{
	/* $2: the period's length in s */
	static const struct {
		const char *sql;
		int len_s;
	} sql[] = {
		{"DELETE FROM span_rollup WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_PERIOD_S},
		{"DELETE FROM span_rollup_dirty WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_PERIOD_S},
		{"DELETE FROM span_rollup_minute WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_MINUTE_S},
		{"DELETE FROM span_rollup_minute_dirty WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_MINUTE_S},
		{"DELETE FROM span_rollup_5m WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_5M_S},
		{"DELETE FROM edge_rollup WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_PERIOD_S},
		{"DELETE FROM edge_rollup_minute WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_MINUTE_S},
		{"DELETE FROM resource_rollup_minute WHERE period <= now() - "
		 "make_interval(days => $1::integer, secs => $2::integer)",
		 ROLLUP_MINUTE_S},
	};
	char days[16], len[16];
	const char *params[] = {days, len};
	int rc = STATUS_OK;

	if (c == NULL || retention_days < MIGRATE_RETENTION_DAYS_MIN ||
	    retention_days > MIGRATE_RETENTION_DAYS_MAX)
		return bad_args(err, "no connection, or retention_days out of "
				     "range (1..3650)");
	snprintf(days, sizeof(days), "%d", retention_days);
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]) && !rc; i++) {
		snprintf(len, sizeof(len), "%d", sql[i].len_s);
		rc = pg_query(c, sql[i].sql, 2, params, NULL, err);
	}
	return rc;
}

int64_t
rollup_period_floor(int64_t ms)
{
	const int64_t period = ROLLUP_PERIOD_S * 1000LL;
	int64_t r = ms % period;

	return ms - (r < 0 ? r + period : r);
}

int64_t
rollup_minute_floor(int64_t ms)
{
	const int64_t minute = ROLLUP_MINUTE_S * 1000LL;
	int64_t r = ms % minute;

	return ms - (r < 0 ? r + minute : r);
}

bool
rollup_split_range(int64_t from_ms, int64_t to_ms, int64_t now_ms,
		   struct rollup_split *out)
{
	const int64_t minute = ROLLUP_MINUTE_S * 1000LL,
		      hour = ROLLUP_PERIOD_S * 1000LL;
	int64_t settled, mto, hto;

	out->minute_from = out->minute_to = from_ms;
	out->hour_from = out->hour_to = from_ms;
	/* far outside any real clock (+-73 million years): nothing to
	 * round, and no overflow in the rounding below */
	if (from_ms >= to_ms || from_ms < -SPLIT_LIMIT_MS ||
	    to_ms > SPLIT_LIMIT_MS || now_ms < -SPLIT_LIMIT_MS ||
	    now_ms > SPLIT_LIMIT_MS)
		return false;
	settled = now_ms - ROLLUP_SETTLE_S * 1000LL;
	/* the first whole minute (hour) starts at or after from; the last
	 * ends at or before both to and the settling time */
	out->minute_from = rollup_minute_floor(from_ms + minute - 1);
	mto = rollup_minute_floor(to_ms);
	if (mto > rollup_minute_floor(settled))
		mto = rollup_minute_floor(settled);
	if (mto - out->minute_from < minute) {
		out->minute_from = from_ms;
		return false;
	}
	out->minute_to = mto;
	out->hour_from = rollup_period_floor(from_ms + hour - 1);
	hto = rollup_period_floor(to_ms);
	if (hto > rollup_period_floor(settled))
		hto = rollup_period_floor(settled);
	if (hto - out->hour_from < hour)
		out->hour_from = hto = mto;
	out->hour_to = hto;
	return true;
}

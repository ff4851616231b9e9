/*
 * migrate.c - applies the migrations embedded from migrations/NNNN_name.sql
 * (by scripts/gen-embed.sh into build/gen/migrations.c) and runs the
 * partition upkeep functions they define.  Contracts in migrate.h; schema
 * in docs/schema.md.
 */
#include "pg/migrate.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/embed.h"
#include "base/hex.h"
#include "base/log.h"
#include "pg/locks.h"

/* build/gen/migrations.c (scripts/gen-embed.sh) */
extern const struct embed_file migrate_sql[];
extern const size_t migrate_sql_count;

/* "SEXTANT" 0x01; the partition functions take "SEXTANT" 0x02. */
#define LOCK_KEY LOCK_MIGRATE

/* Highest version accepted in a file name ("0001_x.sql" .. "999999_x.sql"). */
#define VERSION_MAX 999999

#define SHA256_HEX 64

struct migration {
	int version;
	char name[128]; /* file name without directory and ".sql" */
	const char *text;
	char checksum[SHA256_HEX + 1];
};

PRINTF_LIKE(3, 4)
static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * "what: <PostgreSQL's primary message> (<detail>); <hint>" (libpq's own
 * message when there is no result), then STATUS_IO.  The detail and hint
 * say which object and what to do.
 */
static int
db_err(PGconn *conn, const PGresult *res, char *err, size_t errlen,
       const char *what)
{
	const char *msg = NULL, *detail = NULL, *hint = NULL;

	if (res) {
		msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
	}
	if (!msg)
		msg = PQerrorMessage(conn);
	if (!msg || !*msg)
		msg = "no answer from the server";
	set_err(err, errlen, "%s: %.*s%s%s%s%s%s", what,
		(int)strcspn(msg, "\n"), msg, detail ? " (" : "",
		detail ? detail : "", detail ? ")" : "", hint ? "; " : "",
		hint ? hint : "");
	return STATUS_IO;
}

/* A decimal integer column value (from our own integer columns). */
static bool
parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool
sqlstate_is(const PGresult *res, const char *code)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return s && strcmp(s, code) == 0;
}

/* Runs sql with text parameters; true when the result has status want. */
static bool
exec_ok(PGconn *conn, const char *sql, int n, const char *const *params,
	ExecStatusType want, PGresult **res)
{
	*res = n ? PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0)
		 : PQexec(conn, sql);
	return *res && PQresultStatus(*res) == want;
}

/* Ends a transaction left open by a failed step; the error is kept. */
static void
rollback_if_open(PGconn *conn)
{
	PGTransactionStatusType ts = PQtransactionStatus(conn);

	if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
		PQclear(PQexec(conn, "ROLLBACK"));
}

static int
check_conn(PGconn *conn, char *err, size_t errlen)
{
	if (PQstatus(conn) != CONNECTION_OK)
		return db_err(conn, NULL, err, errlen,
			      "the database connection is not open");
	if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
		set_err(err, errlen,
			"the database connection is inside a transaction: "
			"migrations need an idle connection of their own");
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

static int
sha256_hex(const char *text, char out[SHA256_HEX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) !=
		    1 ||
	    mdlen * 2 != SHA256_HEX)
		return STATUS_NOMEM;
	hex_encode(md, mdlen, out);
	return STATUS_OK;
}

/*
 * "migrations/0002_spans.sql" -> version 2, name "0002_spans".  A bad name
 * is a build mistake, reported with the expected form.
 */
static int
parse_file(const struct embed_file *f, struct migration *m, char *err,
	   size_t errlen)
{
	const char *base = strrchr(f->path, '/');
	size_t len;
	char *end;
	long v;

	base = base ? base + 1 : f->path;
	len = strlen(base);
	errno = 0;
	v = strtol(base, &end, 10);
	if (base[0] < '0' || base[0] > '9' || errno || v < 1 ||
	    v > VERSION_MAX || *end != '_' || len < 5 ||
	    strcmp(base + len - 4, ".sql") != 0 || len - 4 >= sizeof(m->name) ||
	    end + 1 >= base + len - 4) {
		set_err(err, errlen,
			"embedded migration \"%s\": expected a file name like "
			"\"0001_name.sql\" with a version between 1 and %d",
			base, VERSION_MAX);
		return STATUS_INVALID;
	}
	for (const char *c = end + 1; c < base + len - 4; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_')) {
			set_err(err, errlen,
				"embedded migration \"%s\": expected only "
				"a-z, 0-9 and '_' after the version",
				base);
			return STATUS_INVALID;
		}
	}
	m->version = (int)v;
	snprintf(m->name, sizeof(m->name), "%.*s", (int)(len - 4), base);
	m->text = f->text;
	if (sha256_hex(f->text, m->checksum)) {
		set_err(err, errlen, "cannot compute SHA-256 (OpenSSL failed)");
		return STATUS_NOMEM;
	}
	return STATUS_OK;
}

/* The embedded migrations, checked to be in strictly increasing order. */
static int
load_embedded(struct migration **out, char *err, size_t errlen)
{
	struct migration *m =
		calloc(migrate_sql_count ? migrate_sql_count : 1, sizeof(*m));
	int rc = STATUS_OK;

	*out = NULL;
	if (!m) {
		set_err(err, errlen, "out of memory");
		return STATUS_NOMEM;
	}
	for (size_t i = 0; i < migrate_sql_count; i++) {
		rc = parse_file(&migrate_sql[i], &m[i], err, errlen);
		if (rc)
			goto out;
		if (i > 0 && m[i].version <= m[i - 1].version) {
			set_err(err, errlen,
				"embedded migrations \"%s\" and \"%s\": "
				"versions must increase (one number per file)",
				m[i - 1].name, m[i].name);
			rc = STATUS_INVALID;
			goto out;
		}
	}
	*out = m;
	m = NULL;
out:
	free(m);
	return rc;
}

static int
create_history(PGconn *conn, char *err, size_t errlen)
{
	PGresult *res = NULL;
	int rc = STATUS_OK;

	if (!exec_ok(conn,
		     "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
		     NULL, PGRES_TUPLES_OK, &res)) {
		rc = db_err(conn, res, err, errlen,
			    "cannot look for schema_migrations");
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
		goto out;
	PQclear(res);
	if (!exec_ok(conn,
		     "CREATE TABLE schema_migrations ("
		     " version integer PRIMARY KEY,"
		     " name text NOT NULL,"
		     " applied_at timestamptz NOT NULL DEFAULT now(),"
		     " checksum text NOT NULL)",
		     0, NULL, PGRES_COMMAND_OK, &res))
		rc = db_err(conn, res, err, errlen,
			    "cannot create schema_migrations");
out:
	PQclear(res);
	return rc;
}

/*
 * Marks done[i] for each embedded migration already applied, after checking
 * the history against the embedded files.
 */
static int
check_history(PGconn *conn, const struct migration *m, size_t n, bool *done,
	      char *err, size_t errlen)
{
	PGresult *res = NULL;
	int rc = STATUS_OK;

	if (!exec_ok(conn,
		     "SELECT version, name, checksum FROM schema_migrations "
		     "ORDER BY version",
		     0, NULL, PGRES_TUPLES_OK, &res)) {
		rc = db_err(conn, res, err, errlen,
			    "cannot read schema_migrations");
		goto out;
	}
	for (int r = 0; r < PQntuples(res); r++) {
		const char *vs = PQgetvalue(res, r, 0);
		const char *name = PQgetvalue(res, r, 1);
		const char *sum = PQgetvalue(res, r, 2);
		long v = 0;
		size_t i = 0;

		if (!parse_int(vs, INT_MIN, INT_MAX, &v)) {
			set_err(err, errlen,
				"schema_migrations has version \"%s\": "
				"expected an integer",
				vs);
			rc = STATUS_INVALID;
			goto out;
		}
		while (i < n && m[i].version != v)
			i++;
		if (i == n) {
			set_err(err, errlen,
				"the database has migration %s (%s), which "
				"this sextant does not know: it was migrated "
				"by a newer sextant; run that version",
				vs, name);
			rc = STATUS_INVALID;
			goto out;
		}
		if (strcmp(sum, m[i].checksum) != 0) {
			set_err(err, errlen,
				"migration %s was applied with different "
				"content (checksum %.12s..., this sextant has "
				"%.12s...): applied migrations must never be "
				"edited; add a new migration instead",
				m[i].name, sum, m[i].checksum);
			rc = STATUS_INVALID;
			goto out;
		}
		done[i] = true;
	}
out:
	PQclear(res);
	return rc;
}

/* One boolean from a one-row query. */
static int
query_bool(PGconn *conn, const char *sql, bool *out, char *err, size_t errlen,
	   const char *what)
{
	PGresult *res = NULL;
	int rc = STATUS_OK;

	if (!exec_ok(conn, sql, 0, NULL, PGRES_TUPLES_OK, &res) ||
	    PQntuples(res) != 1) {
		rc = db_err(conn, res, err, errlen, what);
		goto out;
	}
	*out = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
out:
	PQclear(res);
	return rc;
}

/*
 * Whether the time tables are (or, for a new store, will be) hypertables.
 * A store keeps the choice it was created with (sextant_settings); a new
 * one (pending: migrations to apply) gets CREATE EXTENSION unless want is
 * OFF.
 */
static int
resolve_timescaledb(PGconn *conn, enum migrate_timescaledb want, bool pending,
		    bool *on, char *err, size_t errlen)
{
	PGresult *res = NULL;
	bool has_settings = false, available = false, installed = false;
	const char *why;
	int rc;

	*on = false;
	rc = query_bool(
		conn, "SELECT to_regclass('sextant_settings') IS NOT NULL",
		&has_settings, err, errlen, "cannot look for sextant_settings");
	if (rc)
		goto out;
	if (has_settings) {
		if (!exec_ok(conn,
			     "SELECT value FROM sextant_settings "
			     "WHERE key = 'timescaledb'",
			     0, NULL, PGRES_TUPLES_OK, &res)) {
			rc = db_err(conn, res, err, errlen,
				    "cannot read sextant_settings");
			goto out;
		}
	}
	if (res && PQntuples(res) == 1) {
		*on = strcmp(PQgetvalue(res, 0, 0), "on") == 0;
		if (want == MIGRATE_TIMESCALEDB_ON && !*on) {
			set_err(err, errlen,
				"database.timescaledb is \"on\" but this store "
				"was created with native partitioning: set it "
				"to \"auto\", or use a new database to get "
				"TimescaleDB");
			rc = STATUS_INVALID;
		} else if (want == MIGRATE_TIMESCALEDB_OFF && *on) {
			set_err(err, errlen,
				"database.timescaledb is \"off\" but this "
				"store was created with TimescaleDB: set it "
				"to \"auto\" or \"on\"");
			rc = STATUS_INVALID;
		}
		goto out;
	}
	if (want == MIGRATE_TIMESCALEDB_OFF || !pending)
		goto out;
	rc = query_bool(conn,
			"SELECT EXISTS (SELECT 1 FROM pg_available_extensions "
			"WHERE name = 'timescaledb')",
			&available, err, errlen,
			"cannot list the available extensions");
	if (!rc)
		rc = query_bool(conn,
				"SELECT EXISTS (SELECT 1 FROM pg_extension "
				"WHERE extname = 'timescaledb')",
				&installed, err, errlen,
				"cannot list the installed extensions");
	if (rc || installed) {
		*on = installed;
		goto out;
	}
	if (!available) {
		if (want == MIGRATE_TIMESCALEDB_ON) {
			set_err(err, errlen,
				"database.timescaledb is \"on\" but the "
				"server has no timescaledb extension: install "
				"it, or set database.timescaledb = \"auto\"");
			rc = STATUS_UNSUPPORTED;
			goto out;
		}
		log_info(NULL, "timescaledb is not available: the time "
			       "tables use native daily partitions");
		goto out;
	}
	PQclear(res);
	if (exec_ok(conn, "CREATE EXTENSION timescaledb", 0, NULL,
		    PGRES_COMMAND_OK, &res)) {
		*on = true;
		log_info(NULL, "created the timescaledb extension: the time "
			       "tables are hypertables");
		goto out;
	}
	if (want == MIGRATE_TIMESCALEDB_ON) {
		db_err(conn, res, err, errlen,
		       "database.timescaledb is \"on\" but CREATE EXTENSION "
		       "timescaledb failed (is it in shared_preload_libraries, "
		       "and may this role create it?)");
		rc = STATUS_UNSUPPORTED;
		goto out;
	}
	why = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	log_info(NULL,
		 "timescaledb is installed but CREATE EXTENSION failed (%s): "
		 "the time tables use native daily partitions",
		 why ? why : "no message");
out:
	PQclear(res);
	return rc;
}

/* One migration and its history row, in one transaction. */
static int
apply_one(PGconn *conn, const struct migration *m, bool timescaledb, char *err,
	  size_t errlen)
{
	const char *mode[] = {timescaledb ? "on" : "off"};
	char version[16], what[192];
	const char *row[] = {version, m->name, m->checksum};
	PGresult *res = NULL;
	int rc = STATUS_OK;

	snprintf(version, sizeof(version), "%d", m->version);
	snprintf(what, sizeof(what), "migration %s failed", m->name);
	/* notices ("... does not exist, skipping") would go to stderr raw */
	if (!exec_ok(conn,
		     "BEGIN; SET LOCAL client_min_messages = warning; "
		     "SET LOCAL statement_timeout = 0",
		     0, NULL, PGRES_COMMAND_OK, &res))
		goto fail;
	PQclear(res);
	/* read by migrations/0001 to record the store's partitioning */
	if (!exec_ok(conn, "SELECT set_config('sextant.timescaledb', $1, true)",
		     1, mode, PGRES_TUPLES_OK, &res))
		goto fail;
	PQclear(res);
	res = PQexec(conn, m->text);
	if (!res || (PQresultStatus(res) != PGRES_COMMAND_OK &&
		     PQresultStatus(res) != PGRES_TUPLES_OK &&
		     PQresultStatus(res) != PGRES_EMPTY_QUERY))
		goto fail;
	if (PQtransactionStatus(conn) != PQTRANS_INTRANS) {
		set_err(err, errlen,
			"migration %s ended its own transaction: a migration "
			"file must not contain BEGIN, COMMIT or ROLLBACK",
			m->name);
		rc = STATUS_INVALID;
		goto out;
	}
	PQclear(res);
	if (!exec_ok(conn,
		     "INSERT INTO schema_migrations (version, name, checksum) "
		     "VALUES ($1, $2, $3)",
		     3, row, PGRES_COMMAND_OK, &res))
		goto fail;
	PQclear(res);
	if (!exec_ok(conn, "COMMIT", 0, NULL, PGRES_COMMAND_OK, &res))
		goto fail;
	log_info(NULL, "applied migration %s", m->name);
	goto out;
fail:
	rc = db_err(conn, res, err, errlen, what);
out:
	PQclear(res);
	rollback_if_open(conn);
	return rc;
}

/* The day partitions and the retention policy, after migrating. */
static int
prepare_time_tables(PGconn *conn, const struct migrate_opts *opts, char *err,
		    size_t errlen)
{
	char ahead[16], keep[16];
	const char *params[] = {ahead, keep};
	PGresult *res = NULL;
	int rc = STATUS_OK;

	snprintf(ahead, sizeof(ahead), "%d", opts->days_ahead);
	snprintf(keep, sizeof(keep), "%d", opts->retention_days);
	if (!exec_ok(conn,
		     "SELECT sextant_create_partitions($1::integer), "
		     "sextant_set_retention($2::integer)",
		     2, params, PGRES_TUPLES_OK, &res))
		rc = db_err(conn, res, err, errlen,
			    "cannot prepare the day partitions and the "
			    "retention policy");
	PQclear(res);
	return rc;
}

int
migrate_timescaledb_parse(const char *s)
{
	if (!s)
		return -1;
	if (strcmp(s, "auto") == 0)
		return MIGRATE_TIMESCALEDB_AUTO;
	if (strcmp(s, "on") == 0)
		return MIGRATE_TIMESCALEDB_ON;
	if (strcmp(s, "off") == 0)
		return MIGRATE_TIMESCALEDB_OFF;
	return -1;
}

size_t
migrate_count(void)
{
	return migrate_sql_count;
}

static int
check_days(int retention_days, int days_ahead, char *err, size_t errlen)
{
	if (retention_days < MIGRATE_RETENTION_DAYS_MIN ||
	    retention_days > MIGRATE_RETENTION_DAYS_MAX) {
		set_err(err, errlen,
			"retention_days must be between %d and %d, got %d",
			MIGRATE_RETENTION_DAYS_MIN, MIGRATE_RETENTION_DAYS_MAX,
			retention_days);
		return STATUS_INVALID;
	}
	if (days_ahead < 0 || days_ahead > MIGRATE_DAYS_AHEAD_MAX) {
		set_err(err, errlen,
			"days_ahead must be between 0 and %d, got %d",
			MIGRATE_DAYS_AHEAD_MAX, days_ahead);
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

int
migrate_apply(PGconn *conn, const struct migrate_opts *opts, int *applied,
	      char *err, size_t errlen)
{
	static const char *const key[] = {LOCK_KEY};
	struct migration *m = NULL;
	bool *done = NULL, locked = false, timescaledb = false;
	size_t pending = 0;
	PGresult *res = NULL;
	int rc, count = 0;

	set_err(err, errlen, "%s", "");
	if (applied)
		*applied = 0;
	if (!conn || !opts || !applied) {
		set_err(err, errlen, "no connection, options or result given");
		return STATUS_INVALID;
	}
	if (opts->timescaledb != MIGRATE_TIMESCALEDB_AUTO &&
	    opts->timescaledb != MIGRATE_TIMESCALEDB_ON &&
	    opts->timescaledb != MIGRATE_TIMESCALEDB_OFF) {
		set_err(err, errlen,
			"timescaledb must be auto, on or off, got %d",
			(int)opts->timescaledb);
		return STATUS_INVALID;
	}
	rc = check_days(opts->retention_days, opts->days_ahead, err, errlen);
	if (!rc)
		rc = check_conn(conn, err, errlen);
	if (rc) /* the caller's transaction, if any, is not ours to end */
		return rc;
	rc = load_embedded(&m, err, errlen);
	if (rc)
		goto out;
	done = calloc(migrate_sql_count ? migrate_sql_count : 1, sizeof(*done));
	if (!done) {
		set_err(err, errlen, "out of memory");
		rc = STATUS_NOMEM;
		goto out;
	}
	if (!exec_ok(conn, "SELECT pg_advisory_lock($1::bigint)", 1, key,
		     PGRES_TUPLES_OK, &res)) {
		rc = db_err(conn, res, err, errlen,
			    "cannot take the migration lock");
		goto out;
	}
	locked = true;
	rc = create_history(conn, err, errlen);
	if (!rc)
		rc = check_history(conn, m, migrate_sql_count, done, err,
				   errlen);
	for (size_t i = 0; i < migrate_sql_count; i++)
		pending += !done[i];
	if (!rc)
		rc = resolve_timescaledb(conn, opts->timescaledb, pending > 0,
					 &timescaledb, err, errlen);
	for (size_t i = 0; !rc && i < migrate_sql_count; i++) {
		if (done[i])
			continue;
		rc = apply_one(conn, &m[i], timescaledb, err, errlen);
		if (!rc)
			count++;
	}
	if (!rc)
		rc = prepare_time_tables(conn, opts, err, errlen);
out:
	*applied = count;
	PQclear(res);
	rollback_if_open(conn);
	if (locked)
		PQclear(PQexecParams(conn,
				     "SELECT pg_advisory_unlock($1::bigint)", 1,
				     NULL, key, NULL, NULL, 0));
	free(done);
	free(m);
	return rc;
}

/* Runs "SELECT fn($1)" in its own transaction under the lock timeout. */
static int
maintain_step(PGconn *conn, const char *sql, int arg, int *result, char *err,
	      size_t errlen, const char *what)
{
	char sarg[16], timeout[16];
	const char *params[] = {sarg}, *tparams[] = {timeout};
	PGresult *res = NULL;
	long v = 0;
	int rc = STATUS_OK;

	snprintf(sarg, sizeof(sarg), "%d", arg);
	snprintf(timeout, sizeof(timeout), "%d", MIGRATE_LOCK_TIMEOUT_MS);
	if (!exec_ok(conn, "BEGIN", 0, NULL, PGRES_COMMAND_OK, &res))
		goto fail;
	PQclear(res);
	if (!exec_ok(conn, "SELECT set_config('lock_timeout', $1, true)", 1,
		     tparams, PGRES_TUPLES_OK, &res))
		goto fail;
	PQclear(res);
	if (!exec_ok(conn, sql, 1, params, PGRES_TUPLES_OK, &res) ||
	    PQntuples(res) != 1)
		goto fail;
	if (!parse_int(PQgetvalue(res, 0, 0), 0, INT_MAX, &v)) {
		set_err(err, errlen, "%s: unexpected result \"%s\"", what,
			PQgetvalue(res, 0, 0));
		rc = STATUS_IO;
		goto out;
	}
	*result = (int)v;
	PQclear(res);
	if (!exec_ok(conn, "COMMIT", 0, NULL, PGRES_COMMAND_OK, &res))
		goto fail;
	goto out;
fail:
	if (sqlstate_is(res, "42883") || sqlstate_is(res, "42P01")) {
		set_err(err, errlen,
			"%s: the store is not migrated yet: run `sextant "
			"migrate` first",
			what);
		rc = STATUS_INVALID;
	} else if (sqlstate_is(res, "55P03")) {
		set_err(err, errlen,
			"%s: a time table stayed locked for more than %d ms "
			"(a long query?): the next run tries again",
			what, MIGRATE_LOCK_TIMEOUT_MS);
		rc = STATUS_TIMEOUT;
	} else {
		rc = db_err(conn, res, err, errlen, what);
	}
out:
	PQclear(res);
	rollback_if_open(conn);
	return rc;
}

int
migrate_maintain(PGconn *conn, int retention_days, int days_ahead, char *err,
		 size_t errlen)
{
	int rc, created = 0, dropped = 0;

	set_err(err, errlen, "%s", "");
	if (!conn) {
		set_err(err, errlen, "no connection given");
		return STATUS_INVALID;
	}
	rc = check_days(retention_days, days_ahead, err, errlen);
	if (!rc)
		rc = check_conn(conn, err, errlen);
	if (rc)
		return rc;
	rc = maintain_step(conn,
			   "SELECT sextant_create_partitions($1::integer)",
			   days_ahead, &created, err, errlen,
			   "cannot create the day partitions");
	if (!rc)
		rc = maintain_step(conn,
				   "SELECT sextant_drop_expired($1::integer)",
				   retention_days, &dropped, err, errlen,
				   "cannot drop the expired partitions");
	if (created || dropped)
		log_info(NULL,
			 "partition upkeep: %d created, %d dropped "
			 "(retention %d days)",
			 created, dropped, retention_days);
	return rc;
}

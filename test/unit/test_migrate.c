/*
 * test_migrate.c - lib/pg/migrate against a throwaway PostgreSQL cluster
 * (test/unit/pgtest.h): fresh apply, re-apply, two appliers at once,
 * history checks, the timescaledb choice, partition upkeep, span dedupe
 * and nanosecond start times.  Each test works in a database of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "pg/migrate.h"
#include "pgtest.h"

static struct pgtest_cluster cluster;
static int db_seq;

static const struct migrate_opts default_opts = {
	.timescaledb = MIGRATE_TIMESCALEDB_AUTO,
	.retention_days = 7,
	.days_ahead = 2,
};

static int
group_setup(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_WARN);
	return pgtest_start(&cluster) == 0 ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	pgtest_destroy(&cluster);
	return 0;
}

static PGconn *
connect_db(const char *name)
{
	char conninfo[256];
	PGconn *c;

	snprintf(conninfo, sizeof(conninfo),
		 "host=127.0.0.1 port=%d dbname=%s user=postgres "
		 "sslmode=disable",
		 cluster.port, name);
	c = PQconnectdb(conninfo);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect to %s: %s", name, PQerrorMessage(c));
	return c;
}

/* Creates an empty database (named into name) and connects to it. */
static PGconn *
new_db(char *name, size_t len)
{
	char sql[128];
	PGconn *admin = connect_db("postgres");
	PGresult *res;

	snprintf(name, len, "t_migrate_%d", ++db_seq);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(admin));
	PQclear(res);
	PQfinish(admin);
	return connect_db(name);
}

/* Runs sql, which must succeed; the caller clears the result. */
static PGresult *
sql_ok(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK &&
	    PQresultStatus(res) != PGRES_TUPLES_OK)
		fail_msg("%s\n-> %s", sql, PQerrorMessage(c));
	return res;
}

static void
sql_do(PGconn *c, const char *sql)
{
	PQclear(sql_ok(c, sql));
}

/* The one value of a one-row, one-column query, copied into buf. */
static const char *
sql_text(PGconn *c, const char *sql, char *buf, size_t len)
{
	PGresult *res = sql_ok(c, sql);

	if (PQntuples(res) != 1 || PQnfields(res) != 1)
		fail_msg("%s: expected one value, got %d rows", sql,
			 PQntuples(res));
	if (PQgetisnull(res, 0, 0))
		snprintf(buf, len, "(null)");
	else
		snprintf(buf, len, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return buf;
}

static long long
sql_int(PGconn *c, const char *sql)
{
	char buf[64], *end;
	long long v;

	sql_text(c, sql, buf, sizeof(buf));
	v = strtoll(buf, &end, 10);
	if (end == buf || *end)
		fail_msg("%s: expected an integer, got \"%s\"", sql, buf);
	return v;
}

static bool
sql_bool(PGconn *c, const char *sql)
{
	char buf[16];

	sql_text(c, sql, buf, sizeof(buf));
	return strcmp(buf, "t") == 0;
}

/* The connection is idle and holds no advisory lock. */
static void
assert_clean(PGconn *c)
{
	assert_int_equal(PQtransactionStatus(c), PQTRANS_IDLE);
	assert_int_equal(sql_int(c, "SELECT count(*) FROM pg_locks "
				    "WHERE locktype = 'advisory'"),
			 0);
}

static void
apply_ok(PGconn *c, const struct migrate_opts *opts, int want_applied)
{
	char err[512] = "unset";
	int applied = -1,
	    rc = migrate_apply(c, opts, &applied, err, sizeof(err));

	if (rc != STATUS_OK)
		fail_msg("migrate_apply: %s: %s", status_str(rc), err);
	assert_string_equal(err, "");
	assert_int_equal(applied, want_applied);
	assert_clean(c);
}

/* ---- a fresh database --------------------------------------------------- */

/* Partitions named <table>_p<UTC day + offset> attached to table. */
#define DAY_PARTITIONS(table, from, to)                                        \
	"SELECT count(*) FROM generate_series(" from ", " to ") g "            \
	"JOIN pg_class c ON c.relname = '" table "_p' || "                     \
	"to_char((now() AT TIME ZONE 'UTC')::date + g, 'YYYYMMDD') "           \
	"JOIN pg_inherits i ON i.inhrelid = c.oid "                            \
	"AND i.inhparent = '" table "'::regclass"

static void
test_apply_empty(void **state)
{
	static const char *const tables[] = {
		"schema_migrations",   "sextant_settings",
		"sextant_time_tables", "spans",
		"metric_points",       "model_pricing",
		"spans_default",       "metric_points_default",
	};
	char name[64], buf[512];
	PGconn *c = new_db(name, sizeof(name));
	long long n = (long long)migrate_count();

	(void)state;
	assert_true(n >= 4);
	apply_ok(c, &default_opts, (int)n);

	/* the history: one row per file, with its SHA-256 */
	assert_int_equal(sql_int(c, "SELECT count(*) FROM schema_migrations"),
			 n);
	assert_int_equal(
		sql_int(c, "SELECT count(*) FROM schema_migrations "
			   "WHERE checksum ~ '^[0-9a-f]{64}$' AND version > 0 "
			   "AND name ~ '^[0-9]+_[a-z0-9_]+$' "
			   "AND applied_at <= now()"),
		n);
	assert_string_equal(sql_text(c,
				     "SELECT name FROM schema_migrations "
				     "ORDER BY version LIMIT 1",
				     buf, sizeof(buf)),
			    "0001_time_tables");

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[128];

		snprintf(sql, sizeof(sql),
			 "SELECT to_regclass('%s') IS NOT NULL", tables[i]);
		if (!sql_bool(c, sql))
			fail_msg("table %s is missing", tables[i]);
	}
	/* native partitioning (no TimescaleDB here) */
	assert_string_equal(sql_text(c,
				     "SELECT value FROM sextant_settings "
				     "WHERE key = 'timescaledb'",
				     buf, sizeof(buf)),
			    "off");
	assert_string_equal(
		sql_text(c,
			 "SELECT string_agg(relname || ':' || relkind::text, "
			 "',' "
			 "ORDER BY relname) FROM pg_class "
			 "WHERE relname IN ('spans', 'metric_points')",
			 buf, sizeof(buf)),
		"metric_points:p,spans:p");
	assert_string_equal(
		sql_text(c,
			 "SELECT string_agg(partdefid::regclass::text, ',' "
			 "ORDER BY partdefid::regclass::text) "
			 "FROM pg_partitioned_table",
			 buf, sizeof(buf)),
		"metric_points_default,spans_default");

	/* day partitions for yesterday, today and days_ahead (2) more, no
	 * further */
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "-1", "2")), 4);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("metric_points", "-1", "2")),
			 4);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "-2", "-2")), 0);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "3", "3")), 0);
	/* a day partition covers exactly its UTC day */
	assert_true(sql_bool(
		c, "SELECT lower_bound = (now() AT TIME ZONE 'UTC')::date "
		   "AT TIME ZONE 'UTC' AND upper_bound = lower_bound + "
		   "interval '1 day' FROM sextant_partitions('spans') "
		   "WHERE part::text = 'spans_p' || "
		   "to_char((now() AT TIME ZONE 'UTC')::date, 'YYYYMMDD')"));

	/* indexes, on the parents and (inherited) on a day partition */
	assert_string_equal(
		sql_text(c,
			 "SELECT string_agg(indexname, ',' ORDER BY indexname) "
			 "FROM pg_indexes WHERE tablename = 'spans'",
			 buf, sizeof(buf)),
		"spans_genai_idx,spans_pkey,spans_service_source_time_idx,"
		"spans_service_time_idx,spans_session_idx,"
		"spans_source_time_idx,spans_start_time_brin");
	assert_non_null(strstr(
		sql_text(c, "SELECT pg_get_indexdef('spans_pkey'::regclass)",
			 buf, sizeof(buf)),
		"(trace_id, span_id, source, start_time)"));
	assert_non_null(strstr(
		sql_text(
			c,
			"SELECT pg_get_indexdef('spans_session_idx'::regclass)",
			buf, sizeof(buf)),
		"(session_id, start_time) WHERE (session_id IS NOT NULL)"));
	assert_string_equal(
		sql_text(c,
			 "SELECT string_agg(indexname, ',' ORDER BY indexname) "
			 "FROM pg_indexes WHERE tablename = 'metric_points'",
			 buf, sizeof(buf)),
		"metric_points_name_time_idx,"
		"metric_points_service_name_time_idx,metric_points_time_brin");
	assert_int_equal(
		sql_int(c, "SELECT count(*) FROM pg_indexes WHERE tablename = "
			   "'spans_p' || to_char((now() AT TIME ZONE "
			   "'UTC')::date, 'YYYYMMDD')"),
		7);

	/* pricing: seeded, matched by longest prefix, editable */
	assert_true(sql_int(c, "SELECT count(*) FROM model_pricing") >= 10);
	assert_int_equal(
		sql_int(c, "SELECT count(DISTINCT provider) FROM model_pricing "
			   "WHERE provider IN ('openai', 'anthropic', "
			   "'gcp.gemini')"),
		3);
	assert_string_equal(
		sql_text(c,
			 "SELECT model || ' ' || input_usd_per_million::float8 "
			 "|| ' ' || output_usd_per_million::float8 FROM "
			 "sextant_model_price('openai', 'gpt-4o-2024-08-06')",
			 buf, sizeof(buf)),
		"gpt-4o 2.5 10");
	assert_string_equal(
		sql_text(c,
			 "SELECT model FROM sextant_model_price('openai', "
			 "'gpt-4o-mini-2024-07-18')",
			 buf, sizeof(buf)),
		"gpt-4o-mini");
	/* another provider's name for the same model still finds a price */
	assert_string_equal(sql_text(c,
				     "SELECT model FROM sextant_model_price("
				     "'azure.ai.openai', 'gpt-4o-mini')",
				     buf, sizeof(buf)),
			    "gpt-4o-mini");
	assert_string_equal(
		sql_text(c,
			 "SELECT sextant_genai_cost_usd('anthropic', "
			 "'claude-sonnet-4-20250514', 1000000, 100000)::float8",
			 buf, sizeof(buf)),
		"4.5");
	assert_string_equal(
		sql_text(c,
			 "SELECT sextant_genai_cost_usd('openai', 'gpt-4oxyz', "
			 "10, 10)",
			 buf, sizeof(buf)),
		"(null)");
	sql_do(c, "INSERT INTO model_pricing (provider, model, "
		  "input_usd_per_million, output_usd_per_million, "
		  "effective_from) VALUES ('openai', 'gpt-4o', 1, 4, "
		  "now() - interval '1 day')");
	assert_string_equal(
		sql_text(c,
			 "SELECT input_usd_per_million::float8 FROM "
			 "sextant_model_price('openai', 'gpt-4o', now())",
			 buf, sizeof(buf)),
		"1");
	assert_string_equal(
		sql_text(c,
			 "SELECT input_usd_per_million::float8 FROM "
			 "sextant_model_price('openai', 'gpt-4o', "
			 "now() - interval '2 days')",
			 buf, sizeof(buf)),
		"2.5");
	PQfinish(c);
}

static void
test_apply_again(void **state)
{
	char name[64], before[128], after[128];
	PGconn *c = new_db(name, sizeof(name));
	int n = (int)migrate_count();

	(void)state;
	apply_ok(c, &default_opts, n);
	sql_text(c,
		 "SELECT count(*) || ' ' || max(applied_at) || ' ' || "
		 "(SELECT count(*) FROM model_pricing) FROM schema_migrations",
		 before, sizeof(before));
	apply_ok(c, &default_opts, 0);
	apply_ok(c, &default_opts, 0);
	sql_text(c,
		 "SELECT count(*) || ' ' || max(applied_at) || ' ' || "
		 "(SELECT count(*) FROM model_pricing) FROM schema_migrations",
		 after, sizeof(after));
	assert_string_equal(before, after);
	PQfinish(c);
}

/* ---- two gateways at once ----------------------------------------------- */

struct applier {
	const char *db;
	pthread_barrier_t *start;
	int rc, applied;
	char err[512];
};

/* No cmocka assertion here: the main thread checks the results. */
static void *
applier_main(void *arg)
{
	struct applier *a = arg;
	char conninfo[256];
	PGconn *c;

	snprintf(conninfo, sizeof(conninfo),
		 "host=127.0.0.1 port=%d dbname=%s user=postgres "
		 "sslmode=disable",
		 cluster.port, a->db);
	c = PQconnectdb(conninfo);
	pthread_barrier_wait(a->start);
	a->rc = migrate_apply(c, &default_opts, &a->applied, a->err,
			      sizeof(a->err));
	PQfinish(c);
	return NULL;
}

static void
test_apply_concurrent(void **state)
{
	char name[64];
	PGconn *c = new_db(name, sizeof(name));
	pthread_barrier_t start;
	struct applier a[2];
	pthread_t th[2];
	int n = (int)migrate_count();

	(void)state;
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct applier){.db = name, .start = &start, .rc = 99};
		assert_int_equal(
			pthread_create(&th[i], NULL, applier_main, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 2; i++)
		if (a[i].rc != STATUS_OK)
			fail_msg("applier %d: %s: %s", i, status_str(a[i].rc),
				 a[i].err);
	/* one applied everything, the other found it done */
	assert_int_equal(a[0].applied + a[1].applied, n);
	assert_true(a[0].applied == 0 || a[1].applied == 0);
	assert_int_equal(sql_int(c, "SELECT count(DISTINCT version) "
				    "FROM schema_migrations"),
			 n);
	assert_int_equal(sql_int(c, "SELECT count(*) FROM schema_migrations"),
			 n);
	assert_int_equal(sql_int(c, "SELECT count(*) FROM sextant_time_tables"),
			 2);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "0", "2")), 3);
	assert_clean(c);
	PQfinish(c);
}

/* ---- the history is checked --------------------------------------------- */

static void
apply_fails(PGconn *c, const struct migrate_opts *opts, int want_rc,
	    const char *want1, const char *want2)
{
	char err[512] = "";
	int applied = -1,
	    rc = migrate_apply(c, opts, &applied, err, sizeof(err));

	if (rc != want_rc)
		fail_msg("migrate_apply: want %s, got %s (%s)",
			 status_str(want_rc), status_str(rc), err);
	assert_int_equal(applied, 0);
	if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
		fail_msg("error \"%s\" does not name \"%s\" and \"%s\"", err,
			 want1, want2 ? want2 : "");
	assert_clean(c);
}

static void
test_history_checked(void **state)
{
	char name[64];
	PGconn *c = new_db(name, sizeof(name));

	(void)state;
	apply_ok(c, &default_opts, (int)migrate_count());

	/* an applied migration whose file changed */
	sql_do(c, "UPDATE schema_migrations SET checksum = repeat('0', 64) "
		  "WHERE version = 2");
	apply_fails(c, &default_opts, STATUS_INVALID, "0002_spans", "checksum");
	sql_do(c, "UPDATE schema_migrations SET checksum = 'x' "
		  "WHERE version = 2");
	apply_fails(c, &default_opts, STATUS_INVALID, "0002_spans",
		    "never be edited");
	sql_do(c, "DELETE FROM schema_migrations WHERE version = 2");

	/* deleted history is re-applied, and fails on the existing table */
	apply_fails(c, &default_opts, STATUS_IO, "migration 0002_spans failed",
		    "already exists");
	assert_int_equal(sql_int(c, "SELECT count(*) FROM schema_migrations"),
			 migrate_count() - 1);

	/* a migration from a newer binary: refused before applying any */
	sql_do(c, "INSERT INTO schema_migrations (version, name, checksum) "
		  "VALUES (9999, '9999_future', 'z')");
	apply_fails(c, &default_opts, STATUS_INVALID, "9999 (9999_future)",
		    "newer sextant");
	PQfinish(c);
}

/* ---- TimescaleDB or native partitioning --------------------------------- */

static void
test_timescaledb_choice(void **state)
{
	struct migrate_opts on = default_opts, off = default_opts;
	char name[64];
	PGconn *c = new_db(name, sizeof(name));

	(void)state;
	assert_int_equal(migrate_timescaledb_parse("auto"),
			 MIGRATE_TIMESCALEDB_AUTO);
	assert_int_equal(migrate_timescaledb_parse("on"),
			 MIGRATE_TIMESCALEDB_ON);
	assert_int_equal(migrate_timescaledb_parse("off"),
			 MIGRATE_TIMESCALEDB_OFF);
	assert_int_equal(migrate_timescaledb_parse("On"), -1);
	assert_int_equal(migrate_timescaledb_parse(""), -1);
	assert_int_equal(migrate_timescaledb_parse(NULL), -1);

	on.timescaledb = MIGRATE_TIMESCALEDB_ON;
	off.timescaledb = MIGRATE_TIMESCALEDB_OFF;
	/* required but not installed: nothing is applied */
	apply_fails(c, &on, STATUS_UNSUPPORTED, "timescaledb", "auto");
	assert_false(sql_bool(c, "SELECT to_regclass('spans') IS NOT NULL"));
	assert_int_equal(sql_int(c, "SELECT count(*) FROM schema_migrations"),
			 0);

	apply_ok(c, &off, (int)migrate_count());
	assert_true(sql_bool(c, "SELECT NOT sextant_timescaledb()"));
	apply_ok(c, &default_opts, 0);
	/* the store keeps its choice; asking for the other one is an error */
	apply_fails(c, &on, STATUS_INVALID, "native partitioning", "\"auto\"");
	PQfinish(c);
}

/* ---- partition upkeep --------------------------------------------------- */

/* A span named name at start (an SQL timestamptz expression). */
static void
insert_span(PGconn *c, const char *start, const char *name)
{
	char sql[768];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO spans (start_time, duration_ns, trace_id, "
		 "span_id, source, name, service_name) VALUES (%s, 1000, "
		 "decode(md5('%s'), 'hex'), "
		 "substring(decode(md5('%s'), 'hex') from 1 for 8), 'otlp', "
		 "'%s', 'svc')",
		 start, name, name, name);
	sql_do(c, sql);
}

/* Where the span named name is stored ("(null)" when it is gone). */
static const char *
span_home(PGconn *c, const char *name, char *buf, size_t len)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "SELECT (SELECT tableoid::regclass::text FROM spans "
		 "WHERE name = '%s')",
		 name);
	return sql_text(c, sql, buf, len);
}

#define UTC_DAY(offset)                                                        \
	"(((now() AT TIME ZONE 'UTC')::date + (" offset                        \
	"))::timestamp AT TIME ZONE 'UTC')"

static void
test_maintain(void **state)
{
	struct migrate_opts opts = default_opts;
	char name[64], buf[128], want[128], err[512];
	PGconn *c = new_db(name, sizeof(name)), *other;
	int rc;

	(void)state;
	opts.days_ahead = 1;
	apply_ok(c, &opts, (int)migrate_count());
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "0", "1")), 2);

	/* tomorrow's partition lost; two made by hand under other names,
	 * one 30 days old, one 3; spans in each, and two in the DEFAULT
	 * partition: one 5 days ahead, one 20 days old */
	sql_do(c, "DO $$ BEGIN EXECUTE format('DROP TABLE %I', 'spans_p' || "
		  "to_char((now() AT TIME ZONE 'UTC')::date + 1, "
		  "'YYYYMMDD')); END $$");
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "1", "1")), 0);
	sql_do(c, "DO $$ DECLARE d date := (now() AT TIME ZONE 'UTC')::date; "
		  "BEGIN EXECUTE format('CREATE TABLE old_by_hand PARTITION "
		  "OF spans FOR VALUES FROM (%L) TO (%L)', "
		  "(d - 30)::text || ' 00:00:00+00', "
		  "(d - 29)::text || ' 00:00:00+00'); "
		  "EXECUTE format('CREATE TABLE recent_by_hand PARTITION "
		  "OF spans FOR VALUES FROM (%L) TO (%L)', "
		  "(d - 3)::text || ' 00:00:00+00', "
		  "(d - 2)::text || ' 00:00:00+00'); END $$");
	insert_span(c, UTC_DAY("-30") " + interval '1 hour'", "old");
	insert_span(c, UTC_DAY("-3") " + interval '1 hour'", "recent");
	insert_span(c, UTC_DAY("5") " + interval '1 hour'", "future");
	insert_span(c, UTC_DAY("-20") " + interval '1 hour'", "expired");
	insert_span(c, "now()", "today");
	assert_string_equal(span_home(c, "old", buf, sizeof(buf)),
			    "old_by_hand");
	assert_string_equal(span_home(c, "future", buf, sizeof(buf)),
			    "spans_default");
	assert_string_equal(span_home(c, "expired", buf, sizeof(buf)),
			    "spans_default");

	err[0] = 'x';
	rc = migrate_maintain(c, 7, 5, err, sizeof(err));
	if (rc != STATUS_OK)
		fail_msg("migrate_maintain: %s: %s", status_str(rc), err);
	assert_string_equal(err, "");
	assert_clean(c);

	/* today .. today + 5 exist, tomorrow's again */
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "0", "5")), 6);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("metric_points", "0", "5")),
			 6);
	/* the waiting span moved out of DEFAULT into its day */
	sql_text(c,
		 "SELECT 'spans_p' || to_char((now() AT TIME ZONE "
		 "'UTC')::date + 5, 'YYYYMMDD')",
		 want, sizeof(want));
	assert_string_equal(span_home(c, "future", buf, sizeof(buf)), want);
	/* past retention: the old partition and the old DEFAULT row */
	assert_false(sql_bool(c, "SELECT to_regclass('old_by_hand') "
				 "IS NOT NULL"));
	assert_string_equal(span_home(c, "old", buf, sizeof(buf)), "(null)");
	assert_string_equal(span_home(c, "expired", buf, sizeof(buf)),
			    "(null)");
	/* within retention: kept */
	assert_string_equal(span_home(c, "recent", buf, sizeof(buf)),
			    "recent_by_hand");
	assert_int_equal(sql_int(c, "SELECT count(*) FROM spans"), 3);

	/* again: nothing to do */
	sql_text(c,
		 "SELECT string_agg(part::text, ',' ORDER BY part::text) "
		 "FROM sextant_partitions('spans')",
		 want, sizeof(want));
	rc = migrate_maintain(c, 7, 5, NULL, 0);
	assert_int_equal(rc, STATUS_OK);
	assert_string_equal(
		sql_text(c,
			 "SELECT string_agg(part::text, ',' ORDER BY "
			 "part::text) FROM sextant_partitions('spans')",
			 buf, sizeof(buf)),
		want);

	/* a long query holding spans: upkeep gives up after the lock
	 * timeout instead of queueing every insert behind it */
	sql_do(c, "DO $$ BEGIN EXECUTE format('DROP TABLE %I', 'spans_p' || "
		  "to_char((now() AT TIME ZONE 'UTC')::date + 1, "
		  "'YYYYMMDD')); END $$");
	other = connect_db(name);
	sql_do(other, "BEGIN");
	sql_do(other, "LOCK TABLE spans IN ACCESS EXCLUSIVE MODE");
	assert_int_equal(migrate_maintain(c, 7, 5, err, sizeof(err)),
			 STATUS_TIMEOUT);
	assert_non_null(strstr(err, "locked for more than 5000 ms"));
	assert_int_equal(PQtransactionStatus(c), PQTRANS_IDLE);
	sql_do(other, "ROLLBACK");
	PQfinish(other);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "1", "1")), 0);
	assert_int_equal(migrate_maintain(c, 7, 5, err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(sql_int(c, DAY_PARTITIONS("spans", "1", "1")), 1);

	/* shorter retention drops the 3-day-old partition too */
	assert_int_equal(migrate_maintain(c, 2, 5, err, sizeof(err)),
			 STATUS_OK);
	assert_false(sql_bool(c, "SELECT to_regclass('recent_by_hand') "
				 "IS NOT NULL"));
	assert_int_equal(sql_int(c, "SELECT count(*) FROM spans"), 2);

	/* bad arguments */
	assert_int_equal(migrate_maintain(c, 0, 1, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "retention_days"));
	assert_int_equal(migrate_maintain(c, 7, 367, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "days_ahead"));
	assert_int_equal(migrate_maintain(NULL, 7, 1, err, sizeof(err)),
			 STATUS_INVALID);
	PQfinish(c);

	/* a database that was never migrated */
	c = new_db(name, sizeof(name));
	assert_int_equal(migrate_maintain(c, 7, 1, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "sextant migrate"));
	assert_clean(c);
	PQfinish(c);
}

/* ---- spans -------------------------------------------------------------- */

/*
 * The writer's path: COPY a batch into a staging table, then
 * INSERT ... ON CONFLICT DO NOTHING.  Returns the rows inserted.
 */
static long
copy_batch(PGconn *c, const char *rows)
{
	PGresult *res;
	char *end;
	long n;

	sql_do(c, "BEGIN");
	sql_do(c, "CREATE TEMP TABLE spans_in (LIKE spans INCLUDING DEFAULTS) "
		  "ON COMMIT DROP");
	res = PQexec(c, "COPY spans_in (start_time, start_nanos, duration_ns, "
			"trace_id, span_id, source, name, service_name, "
			"attributes) FROM STDIN");
	assert_int_equal(PQresultStatus(res), PGRES_COPY_IN);
	PQclear(res);
	assert_int_equal(PQputCopyData(c, rows, (int)strlen(rows)), 1);
	assert_int_equal(PQputCopyEnd(c, NULL), 1);
	res = PQgetResult(c);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail_msg("COPY: %s", PQerrorMessage(c));
	PQclear(res);
	assert_null(PQgetResult(c));
	res = sql_ok(c, "INSERT INTO spans SELECT * FROM spans_in "
			"ON CONFLICT DO NOTHING");
	n = strtol(PQcmdTuples(res), &end, 10);
	assert_true(*end == '\0');
	PQclear(res);
	sql_do(c, "COMMIT");
	return n;
}

static void
test_span_stored_once(void **state)
{
	char name[64], day[32], rows[1024], buf[256];
	PGconn *c = new_db(name, sizeof(name));
	PGresult *res;

	(void)state;
	apply_ok(c, &default_opts, (int)migrate_count());
	sql_text(c, "SELECT (now() AT TIME ZONE 'UTC')::date", day,
		 sizeof(day));
	snprintf(rows, sizeof(rows),
		 "%s 10:11:12.123456+00\t789\t1500\t"
		 "\\\\x0af7651916cd43dd8448eb211c80319c\t"
		 "\\\\xb7ad6b7169203331\totlp\tGET /cart\tcheckout\t"
		 "{\"http.route\": \"/cart\"}\n"
		 "%s 10:11:12.223456+00\t0\t500\t"
		 "\\\\x0af7651916cd43dd8448eb211c80319c\t"
		 "\\\\x00f067aa0ba902b7\totlp\tSELECT\tcheckout\t{}\n",
		 day, day);
	assert_int_equal(copy_batch(c, rows), 2);
	/* the same batch again (an exporter's retry) stores nothing */
	assert_int_equal(copy_batch(c, rows), 0);
	assert_int_equal(sql_int(c, "SELECT count(*) FROM spans"), 2);
	assert_string_equal(
		sql_text(c,
			 "SELECT encode(trace_id, 'hex') || ' ' || "
			 "encode(span_id, 'hex') || ' ' || start_nanos || ' ' "
			 "|| (attributes ->> 'http.route') || ' ' || "
			 "(tableoid::regclass::text = 'spans_p' || "
			 "to_char(start_time AT TIME ZONE 'UTC', 'YYYYMMDD')) "
			 "FROM spans WHERE name = 'GET /cart'",
			 buf, sizeof(buf)),
		"0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 789 /cart "
		"true");
	/* the same span seen by eBPF is another row */
	for (char *p = strstr(rows, "otlp"); p; p = strstr(p, "otlp"))
		memcpy(p, "ebpf", 4);
	assert_int_equal(copy_batch(c, rows), 2);
	assert_int_equal(sql_int(c, "SELECT count(*) FROM spans"), 4);
	assert_int_equal(
		sql_int(c, "SELECT count(*) FROM spans WHERE source = 'ebpf'"),
		2);

	/* without ON CONFLICT the key refuses the duplicate */
	res = PQexec(c, "INSERT INTO spans SELECT * FROM spans "
			"WHERE source = 'ebpf' LIMIT 1");
	assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
	assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "23505");
	PQclear(res);
	PQfinish(c);
}

static void
test_span_nanoseconds(void **state)
{
	static const char *const frac[] = {"123456789", "000000999",
					   "999999000", "000000000"};
	char name[64], nano[32], sql[512], buf[128];
	PGconn *c = new_db(name, sizeof(name));
	/* noon UTC today, in nanoseconds since the epoch, plus frac */
	long long noon = (long long)(time(NULL) / 86400 * 86400 + 43200);

	(void)state;
	apply_ok(c, &default_opts, (int)migrate_count());
	for (size_t i = 0; i < sizeof(frac) / sizeof(frac[0]); i++) {
		snprintf(nano, sizeof(nano), "%lld%s", noon, frac[i]);
		snprintf(
			sql, sizeof(sql),
			"INSERT INTO spans (start_time, start_nanos, "
			"duration_ns, trace_id, span_id, source, name, "
			"service_name) VALUES (sextant_time_from_unix_nano(%s),"
			" %s %% 1000, 1, decode(md5('%zu'), 'hex'), "
			"'\\x0102030405060708', 'otlp', 'n%zu', 'svc')",
			nano, nano, i, i);
		sql_do(c, sql);
		/* the exact start comes back, and start_time holds the
		 * microseconds (truncated, not rounded) */
		snprintf(sql, sizeof(sql),
			 "SELECT sextant_unix_nano(start_time, start_nanos) || "
			 "' ' || to_char(start_time AT TIME ZONE 'UTC', "
			 "'HH24:MI:SS.US') || ' ' || duration_ns FROM spans "
			 "WHERE name = 'n%zu'",
			 i);
		sql_text(c, sql, buf, sizeof(buf));
		snprintf(sql, sizeof(sql), "%s 12:00:00.%.6s 1", nano, frac[i]);
		assert_string_equal(buf, sql);
	}
	/* the day partition holds them, not DEFAULT */
	assert_int_equal(sql_int(c, "SELECT count(*) FROM spans_default"), 0);
	PQfinish(c);
}

/* ---- arguments and connection state ------------------------------------ */

static void
test_bad_calls(void **state)
{
	struct migrate_opts opts = default_opts;
	char name[64], err[512];
	PGconn *c = new_db(name, sizeof(name)), *dead;
	int applied = 5;

	(void)state;
	assert_int_equal(migrate_apply(NULL, &opts, &applied, err, sizeof(err)),
			 STATUS_INVALID);
	assert_int_equal(applied, 0);
	assert_int_equal(migrate_apply(c, NULL, &applied, err, sizeof(err)),
			 STATUS_INVALID);
	assert_int_equal(migrate_apply(c, &opts, NULL, err, sizeof(err)),
			 STATUS_INVALID);
	opts.retention_days = 0;
	assert_int_equal(migrate_apply(c, &opts, &applied, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "retention_days must be between 1 and "
				    "3650, got 0"));
	opts.retention_days = 3651;
	assert_int_equal(migrate_apply(c, &opts, &applied, NULL, 0),
			 STATUS_INVALID);
	opts = default_opts;
	opts.days_ahead = -1;
	assert_int_equal(migrate_apply(c, &opts, &applied, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "days_ahead"));
	opts = default_opts;
	opts.timescaledb = (enum migrate_timescaledb)7;
	assert_int_equal(migrate_apply(c, &opts, &applied, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "timescaledb"));

	/* inside the caller's transaction: refused, transaction untouched */
	sql_do(c, "BEGIN");
	assert_int_equal(
		migrate_apply(c, &default_opts, &applied, err, sizeof(err)),
		STATUS_INVALID);
	assert_non_null(strstr(err, "inside a transaction"));
	assert_int_equal(PQtransactionStatus(c), PQTRANS_INTRANS);
	assert_int_equal(migrate_maintain(c, 7, 1, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err, "inside a transaction"));
	assert_int_equal(PQtransactionStatus(c), PQTRANS_INTRANS);
	sql_do(c, "ROLLBACK");
	assert_false(sql_bool(c, "SELECT to_regclass('schema_migrations') "
				 "IS NOT NULL"));

	/* a connection that never opened */
	dead = PQconnectdb("host=127.0.0.1 port=1 dbname=x user=x "
			   "connect_timeout=2");
	assert_int_equal(
		migrate_apply(dead, &default_opts, &applied, err, sizeof(err)),
		STATUS_IO);
	assert_non_null(strstr(err, "not open"));
	assert_int_equal(migrate_maintain(dead, 7, 1, err, sizeof(err)),
			 STATUS_IO);
	PQfinish(dead);
	PQfinish(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_empty),
		cmocka_unit_test(test_apply_again),
		cmocka_unit_test(test_apply_concurrent),
		cmocka_unit_test(test_history_checked),
		cmocka_unit_test(test_timescaledb_choice),
		cmocka_unit_test(test_maintain),
		cmocka_unit_test(test_span_stored_once),
		cmocka_unit_test(test_span_nanoseconds),
		cmocka_unit_test(test_bad_calls),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

-- 0001_time_tables.sql - how Sextant's time-series tables are partitioned,
-- and the functions that keep their partitions current.  Applied by
-- lib/migrate in one transaction; see docs/schema.md.
--
-- A time table (spans, metric_points) is either
--   * a TimescaleDB hypertable with 1-day chunks, compression and a
--     retention policy, when the store was created with timescaledb on; or
--   * a plain table PARTITION BY RANGE on its time column, one partition per
--     UTC day (<table>_pYYYYMMDD) plus a DEFAULT partition (<table>_default)
--     that catches rows whose day has no partition yet, so an insert never
--     fails for want of one.  sextant_create_partitions() and
--     sextant_drop_expired() (called by `sextant maintain` and by `serve`)
--     create upcoming days and drop expired ones.
-- The choice is made once, when this file is applied: lib/migrate sets the
-- transaction-local setting sextant.timescaledb to 'on' only after
-- CREATE EXTENSION timescaledb succeeded.  Run by hand (psql), it is 'off'.

CREATE TABLE sextant_settings (
	key text PRIMARY KEY,
	value text NOT NULL
);

INSERT INTO sextant_settings (key, value)
VALUES ('timescaledb',
	CASE WHEN current_setting('sextant.timescaledb', true) = 'on'
	     THEN 'on' ELSE 'off' END);

-- True when the time tables are hypertables.
CREATE FUNCTION sextant_timescaledb() RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT coalesce((SELECT value = 'on' FROM sextant_settings
			 WHERE key = 'timescaledb'), false)
$$;

-- The time tables and their time column (the partitioning key).
CREATE TABLE sextant_time_tables (
	table_name text PRIMARY KEY,
	time_column text NOT NULL
);

-- OTLP carries times as nanoseconds since the Unix epoch; timestamptz keeps
-- microseconds.  A span stores start_time (microseconds, the partition key)
-- and start_nanos (the 0..999 nanoseconds beyond it).  Both conversions are
-- exact: integer arithmetic only, no float seconds.
CREATE FUNCTION sextant_time_from_unix_nano(unix_nano bigint)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE STRICT AS $$
	SELECT to_timestamp(unix_nano / 1000000000)
	       + (unix_nano % 1000000000 / 1000) * interval '1 microsecond'
$$;

CREATE FUNCTION sextant_unix_nano(t timestamptz, nanos smallint)
RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE STRICT AS $$
	SELECT (extract(epoch FROM t) * 1000000)::bigint * 1000 + nanos
$$;

-- Creates table_name with the given column list, partitioned the way this
-- store is (see the top of this file), and registers it as a time table.
-- segmentby / orderby: TimescaleDB compression settings.
CREATE FUNCTION sextant_create_time_table(table_name text, time_column text,
					  columns text, segmentby text,
					  orderby text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF sextant_timescaledb() THEN
		EXECUTE format('CREATE TABLE %I (%s)', table_name, columns);
		-- by_range() is the interface of 2.13 and later; the older
		-- one (time column and chunk_time_interval) is deprecated
		IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'by_range') THEN
			PERFORM create_hypertable(table_name::regclass,
				by_range(time_column::name, interval '1 day'),
				create_default_indexes => false);
		ELSE
			PERFORM create_hypertable(table_name::regclass,
				time_column::name,
				chunk_time_interval => interval '1 day',
				create_default_indexes => false);
		END IF;
		EXECUTE format('ALTER TABLE %I SET (timescaledb.compress, '
			       'timescaledb.compress_segmentby = %L, '
			       'timescaledb.compress_orderby = %L)',
			       table_name, segmentby, orderby);
		-- yesterday stays row-based: late spans still land there
		PERFORM add_compression_policy(table_name::regclass,
					       interval '2 days');
	ELSE
		EXECUTE format('CREATE TABLE %I (%s) PARTITION BY RANGE (%I)',
			       table_name, columns, time_column);
		EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT',
			       table_name || '_default', table_name);
	END IF;
	INSERT INTO sextant_time_tables VALUES (table_name, time_column);
END
$$;

-- The range partitions of a plain time table with their bounds (NULL for
-- MINVALUE / MAXVALUE); the DEFAULT partition is not listed.  Bounds are
-- read back from the catalog, so partitions made by hand count too.
CREATE FUNCTION sextant_partitions(table_name text)
RETURNS TABLE (part regclass, lower_bound timestamptz,
	       upper_bound timestamptz)
LANGUAGE sql STABLE
-- the bounds are printed and parsed back in these settings: a session's
-- own time zone abbreviation (IST, say) need not parse back the same
SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD' AS $$
	SELECT c.oid::regclass,
	       (regexp_match(b.expr, 'FROM \(''([^'']*)''\)'))[1]::timestamptz,
	       (regexp_match(b.expr, 'TO \(''([^'']*)''\)'))[1]::timestamptz
	FROM pg_inherits i
	JOIN pg_class c ON c.oid = i.inhrelid
	CROSS JOIN LATERAL
		(SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b
	WHERE i.inhparent = table_name::regclass
	  AND b.expr <> 'DEFAULT'
$$;

-- Creates the day partitions of every plain time table for yesterday and
-- today (UTC) and the days_ahead days after today, skipping days a
-- partition already covers.  Yesterday: spans arrive late around midnight,
-- and a fresh store gets the last 24 hours (demo data, replays).
-- Rows of a new day that are already in the DEFAULT partition are moved
-- into the new partition, so it can be attached.  Returns the number of
-- partitions created; 0 with TimescaleDB (chunks are made on insert).
CREATE FUNCTION sextant_create_partitions(days_ahead integer)
RETURNS integer
LANGUAGE plpgsql SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD' AS $$
DECLARE
	today date := (now() AT TIME ZONE 'UTC')::date;
	t record;
	d date;
	lo timestamptz;
	hi timestamptz;
	lo_text text;
	hi_text text;
	part text;
	def regclass;
	waiting boolean;
	created integer := 0;
BEGIN
	IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
		RAISE EXCEPTION 'days_ahead must be between 0 and 366, got %',
			days_ahead;
	END IF;
	IF sextant_timescaledb() THEN
		RETURN 0;
	END IF;
	-- two gateways maintaining at once: the second finds the work done.
	-- The key is "SEXTANT" 0x02; lib/migrate holds "SEXTANT" 0x01.
	PERFORM pg_advisory_xact_lock(6000299197437203458);
	FOR t IN SELECT * FROM sextant_time_tables ORDER BY table_name LOOP
		SELECT nullif(p.partdefid, 0::oid)::regclass INTO def
		FROM pg_partitioned_table p
		WHERE p.partrelid = t.table_name::regclass;
		FOR i IN -1 .. days_ahead LOOP
			d := today + i;
			lo_text := to_char(d, 'YYYY-MM-DD') || ' 00:00:00+00';
			hi_text := to_char(d + 1, 'YYYY-MM-DD') || ' 00:00:00+00';
			lo := lo_text::timestamptz;
			hi := hi_text::timestamptz;
			CONTINUE WHEN EXISTS (
				SELECT 1 FROM sextant_partitions(t.table_name) p
				WHERE tstzrange(p.lower_bound, p.upper_bound)
				      && tstzrange(lo, hi));
			part := t.table_name || '_p' || to_char(d, 'YYYYMMDD');
			waiting := false;
			IF def IS NOT NULL THEN
				EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s '
					       'WHERE %I >= $1 AND %I < $2)',
					       def, t.time_column,
					       t.time_column)
					INTO waiting USING lo, hi;
			END IF;
			IF waiting THEN
				EXECUTE format('CREATE TABLE %I (LIKE %I '
					       'INCLUDING DEFAULTS '
					       'INCLUDING CONSTRAINTS)',
					       part, t.table_name);
				EXECUTE format('WITH moved AS (DELETE FROM %s '
					       'WHERE %I >= $1 AND %I < $2 '
					       'RETURNING *) '
					       'INSERT INTO %I SELECT * FROM moved',
					       def, t.time_column,
					       t.time_column, part)
					USING lo, hi;
				EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I '
					       'FOR VALUES FROM (%L) TO (%L)',
					       t.table_name, part, lo_text,
					       hi_text);
			ELSE
				EXECUTE format('CREATE TABLE %I PARTITION OF %I '
					       'FOR VALUES FROM (%L) TO (%L)',
					       part, t.table_name, lo_text,
					       hi_text);
			END IF;
			created := created + 1;
		END LOOP;
	END LOOP;
	RETURN created;
END
$$;

-- With TimescaleDB: makes each time table's retention policy drop chunks
-- older than retention_days (replacing a policy with another interval).
-- Without it: does nothing; sextant_drop_expired() applies retention.
CREATE FUNCTION sextant_set_retention(retention_days integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t record;
	want interval := make_interval(days => retention_days);
	have interval;
BEGIN
	IF retention_days IS NULL OR retention_days < 1
	   OR retention_days > 3650 THEN
		RAISE EXCEPTION 'retention_days must be between 1 and 3650, '
			'got %', retention_days;
	END IF;
	IF NOT sextant_timescaledb() THEN
		RETURN;
	END IF;
	FOR t IN SELECT * FROM sextant_time_tables ORDER BY table_name LOOP
		SELECT (j.config ->> 'drop_after')::interval INTO have
		FROM timescaledb_information.jobs j
		WHERE j.proc_name = 'policy_retention'
		  AND j.hypertable_schema = current_schema()
		  AND j.hypertable_name = t.table_name;
		CONTINUE WHEN have = want;
		PERFORM remove_retention_policy(t.table_name::regclass,
						if_exists => true);
		PERFORM add_retention_policy(t.table_name::regclass,
					     drop_after => want);
	END LOOP;
END
$$;

-- Drops the day partitions of every plain time table that lie wholly
-- before now() - retention_days, and deletes rows that old from the
-- DEFAULT partitions.  Returns the number of partitions dropped.  With
-- TimescaleDB it only keeps the retention policies in line
-- (sextant_set_retention) and returns 0: the policies drop the chunks.
CREATE FUNCTION sextant_drop_expired(retention_days integer)
RETURNS integer
LANGUAGE plpgsql SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD' AS $$
DECLARE
	cutoff timestamptz;
	t record;
	p record;
	def regclass;
	dropped integer := 0;
BEGIN
	PERFORM sextant_set_retention(retention_days);
	IF sextant_timescaledb() THEN
		RETURN 0;
	END IF;
	cutoff := now() - make_interval(days => retention_days);
	PERFORM pg_advisory_xact_lock(6000299197437203458);
	FOR t IN SELECT * FROM sextant_time_tables ORDER BY table_name LOOP
		FOR p IN SELECT * FROM sextant_partitions(t.table_name)
			 WHERE upper_bound <= cutoff
			 ORDER BY upper_bound LOOP
			EXECUTE format('DROP TABLE %s', p.part);
			dropped := dropped + 1;
		END LOOP;
		SELECT nullif(pt.partdefid, 0::oid)::regclass INTO def
		FROM pg_partitioned_table pt
		WHERE pt.partrelid = t.table_name::regclass;
		IF def IS NOT NULL THEN
			EXECUTE format('DELETE FROM %s WHERE %I < $1', def,
				       t.time_column)
				USING cutoff;
		END IF;
	END LOOP;
	RETURN dropped;
END
$$;

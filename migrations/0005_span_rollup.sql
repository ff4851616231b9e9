-- 0005_span_rollup.sql - what counts as a call (the span_calls view, the one
-- definition every metrics query uses), the duration histogram buckets, and
-- the hourly rollup of calls that long-range queries read instead of raw
-- spans.  The rollup is a small plain table on plain PostgreSQL and with
-- TimescaleDB alike, recomputed by lib/rollup.  See docs/schema.md.

-- A span is a call when it is an HTTP or gRPC SERVER span, or a CLIENT span
-- of a database; protocol is NULL for every other span (queries filter
-- protocol IS NOT NULL).  A gRPC server span that also carries an HTTP
-- method counts as gRPC only.
--   k1: HTTP route (url path without one), gRPC "service/method", SQL
--       operation (upper case)
--   k2: HTTP method (upper case), '' for gRPC, SQL table ('' without one)
--   status: HTTP response status (0 without one), gRPC status code (-1
--       without one), SQL span status (0 unset, 1 ok, 2 error)
--   is_error: HTTP status >= 500, gRPC status code other than 0, SQL span
--       status ERROR; false when the attribute is missing
CREATE VIEW span_calls AS
SELECT start_time, service_name, source, duration_ns, trace_id,
	CASE WHEN kind = 2 AND rpc_system = 'grpc' THEN 'grpc'
	     WHEN kind = 2 AND http_method IS NOT NULL THEN 'http'
	     WHEN kind = 3 AND db_system IS NOT NULL THEN 'sql'
	END AS protocol,
	CASE WHEN kind = 2 AND rpc_system = 'grpc'
		THEN coalesce(rpc_service || '/', '') || coalesce(rpc_method, '')
	     WHEN kind = 2 AND http_method IS NOT NULL
		THEN coalesce(http_route, url_path, '')
	     WHEN kind = 3 AND db_system IS NOT NULL
		THEN upper(coalesce(db_operation, ''))
	END AS k1,
	CASE WHEN kind = 2 AND rpc_system = 'grpc' THEN ''
	     WHEN kind = 2 AND http_method IS NOT NULL THEN upper(http_method)
	     WHEN kind = 3 AND db_system IS NOT NULL
		THEN coalesce(db_table, '')
	END AS k2,
	CASE WHEN kind = 2 AND rpc_system = 'grpc'
		THEN coalesce(rpc_grpc_status_code, -1)
	     WHEN kind = 2 AND http_method IS NOT NULL
		THEN coalesce(http_status_code, 0)
	     WHEN kind = 3 AND db_system IS NOT NULL THEN status_code::integer
	END AS status,
	CASE WHEN kind = 2 AND rpc_system = 'grpc'
		THEN coalesce(rpc_grpc_status_code <> 0, false)
	     WHEN kind = 2 AND http_method IS NOT NULL
		THEN coalesce(http_status_code >= 500, false)
	     WHEN kind = 3 AND db_system IS NOT NULL THEN status_code = 2
	END AS is_error
FROM spans;

-- The histogram bucket of a duration in nanoseconds (DDSketch-style, with
-- relative accuracy alpha = 0.005): gamma = (1 + alpha) / (1 - alpha);
-- bucket 0 holds durations <= 0, bucket i >= 1 the durations d with
-- gamma^(i-1) < d <= gamma^i, whose value 2 gamma^i / (gamma + 1) is within
-- alpha of each of them.  lib/rollup.c does the same float8 arithmetic
-- (rollup_bucket).  Not STRICT, so that it is inlined into queries; NULL
-- gives NULL all the same.
CREATE FUNCTION sextant_duration_bucket(duration_ns bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN duration_ns <= 0 THEN 0
		ELSE greatest(1, ceil(ln(duration_ns::float8)
			/ ln((1 + 0.005::float8) / (1 - 0.005::float8))))::integer
		END
$$;

-- One row per hour, service, source and call key: the number of calls and
-- their duration histogram (sparse: the buckets that have calls, ascending,
-- and their counts).  Recomputed whole, one period at a time, from
-- span_calls by lib/rollup (rollup_refresh); see span_rollup_dirty.
CREATE TABLE span_rollup (
	period timestamptz NOT NULL, -- start of the hour (UTC)
	service_name text NOT NULL,
	source text NOT NULL,
	protocol text NOT NULL,
	k1 text NOT NULL,
	k2 text NOT NULL,
	status integer NOT NULL,
	requests bigint NOT NULL,
	buckets integer[] NOT NULL, -- ascending bucket indexes
	counts bigint[] NOT NULL,   -- same length, sum = requests
	PRIMARY KEY (service_name, period, source, protocol, k1, k2, status)
);

-- a refresh replaces one period, and pruning removes the oldest
CREATE INDEX span_rollup_period_idx ON span_rollup (period);

-- The periods whose spans changed since their rollup was computed.  Every
-- transaction that stores spans adds (hour of each span, its 10-second
-- slot) here, ON CONFLICT DO NOTHING.  A refresh deletes only rows whose
-- slot is older than 60 s, and skips a period that has a younger one: a
-- writer that found its row already there relies on that row surviving
-- until it commits.
CREATE TABLE span_rollup_dirty (
	period timestamptz NOT NULL,
	slot bigint NOT NULL, -- floor(epoch seconds / 10) when marked
	PRIMARY KEY (period, slot)
);

-- Spans stored before this migration have no rollup yet: every hour that
-- has spans is dirty, with slot 0 (long settled), so the first refresh
-- computes them all.
INSERT INTO span_rollup_dirty (period, slot)
SELECT DISTINCT date_trunc('hour', start_time, 'UTC'), 0
FROM spans;

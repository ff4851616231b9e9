-- 0008_span_rollup_minute.sql - one-minute rollups of calls beside the
-- hourly ones of 0005, so that a range reads minute rows where it has no
-- whole settled hour (a live "last hour", a range's edges, the minutes of
-- an hour with late spans) and raw spans only for its partial and
-- unsettled minutes.  Plain tables with TimescaleDB too, recomputed by
-- lib/rollup.  See docs/schema.md.

-- One row per minute, service, source and call key, as span_rollup per
-- hour.  The key leads with (service_name, source, period): a query reads
-- one service and source over a range of minutes.
CREATE TABLE span_rollup_minute (
	period timestamptz NOT NULL, -- start of the minute (UTC)
	service_name text NOT NULL,
	source text NOT NULL,
	protocol text NOT NULL,
	k1 text NOT NULL,
	k2 text NOT NULL,
	status integer NOT NULL,
	requests bigint NOT NULL,
	buckets integer[] NOT NULL, -- ascending bucket indexes
	counts bigint[] NOT NULL,   -- same length, sum = requests
	PRIMARY KEY (service_name, source, period, protocol, k1, k2, status)
);

-- a refresh replaces some minutes, list_services reads every service over
-- a range, and pruning removes the oldest
CREATE INDEX span_rollup_minute_period_idx ON span_rollup_minute (period);

-- The minutes whose spans changed since their rollup was computed, marked
-- by every transaction that stores spans together with the hour in
-- span_rollup_dirty (same statement, same 10-second slot), and consumed
-- by the minute refresh alone: the two tables are independent, so neither
-- refresh can take a mark the other still needs.
CREATE TABLE span_rollup_minute_dirty (
	period timestamptz NOT NULL, -- start of the minute (UTC)
	slot bigint NOT NULL,        -- floor(epoch seconds / 10) when marked
	PRIMARY KEY (period, slot)
);

-- Spans stored before this migration have no minute rollup yet: every
-- minute that has spans is dirty, with slot 0 (long settled), so the
-- first refresh computes them all.
INSERT INTO span_rollup_minute_dirty (period, slot)
SELECT DISTINCT date_trunc('minute', start_time, 'UTC'), 0
FROM spans;

-- 0015_span_rollup_5m.sql - five-minute rollups of a service's calls per
-- protocol and outcome, merged from the minute rows of 0008, so that a
-- timeline of a whole service in steps of 5 minutes or more (query_metrics
-- step, lib/telemetry/timeline) reads one row per period, protocol and
-- outcome instead of every minute row of every call key.  A plain table
-- with TimescaleDB too, recomputed by lib/rollup with the minutes it is
-- made of.  See docs/schema.md.

-- One row per 5 minutes, service, source, protocol and outcome
-- (sextant_call_outcome of the minute rows): the calls and their merged
-- duration histogram.  No call key: a route, method or status filter
-- reads the minute rows.  The key leads with (service_name, source,
-- period), the order a timeline reads it in.
--
-- The histogram is kept as the text of its integer[] and bigint[] arrays
-- ("{1,5,9}", "{3,1,2}"), which a query sends as it is: PostgreSQL's
-- output of an array costs about 70 ns per element, the most of a 24 h
-- timeline's time (about 200,000 elements for a busy service), and the
-- gateway reads the text form either way (rollup_hist_add_text).  The
-- CHECK keeps it two well-formed arrays of one length.
CREATE TABLE span_rollup_5m (
	period timestamptz NOT NULL, -- start of the 5 minutes (UTC)
	service_name text NOT NULL,
	source text NOT NULL,
	protocol text NOT NULL,
	outcome smallint NOT NULL,  -- 0 ok, 1 error, 2 client error
	requests bigint NOT NULL,
	buckets text NOT NULL,      -- integer[] text: ascending bucket indexes
	counts text NOT NULL,       -- bigint[] text: same length, sum = requests
	PRIMARY KEY (service_name, source, period, protocol, outcome),
	CHECK (cardinality(buckets::integer[]) =
		cardinality(counts::bigint[]))
);

-- pruning removes the oldest
CREATE INDEX span_rollup_5m_period_idx ON span_rollup_5m (period);

-- The minute rows already there, merged: per period and group, the
-- counts of each bucket summed, then one row with the buckets ascending
-- (what the minute refresh does for the periods it touches from now on).
-- A period with a dirty minute is computed again when that minute is;
-- until then queries read it from its minutes.
INSERT INTO span_rollup_5m (period, service_name, source, protocol, outcome,
	requests, buckets, counts)
SELECT period, service_name, source, protocol, outcome, sum(n)::bigint,
	array_agg(b ORDER BY b)::text, array_agg(n ORDER BY b)::text
FROM (SELECT to_timestamp(floor(extract(epoch FROM m.period) / 300) * 300)
		AS period, m.service_name, m.source, m.protocol,
		sextant_call_outcome(m.protocol, m.status, m.span_error)
		AS outcome, u.b, sum(u.n)::bigint AS n
	FROM span_rollup_minute m, unnest(m.buckets, m.counts) u(b, n)
	GROUP BY 1, 2, 3, 4, 5, 6) g
GROUP BY period, service_name, source, protocol, outcome;

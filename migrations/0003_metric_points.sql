-- 0003_metric_points.sql - one row per OTLP metric data point: gauge, sum
-- and (explicit-bucket) histogram points.  Exponential histograms and
-- summaries are not stored.  Column reference: docs/schema.md.

SELECT sextant_create_time_table('metric_points', 'time', $columns$
	-- the point's time_unix_nano (microseconds kept)
	time timestamptz NOT NULL,
	-- start_time_unix_nano: start of the aggregation window of cumulative
	-- and delta points; NULL when absent (0) or for gauges
	start_time timestamptz,
	name text NOT NULL,
	kind text NOT NULL CHECK (kind IN ('gauge', 'sum', 'histogram')),
	unit text,
	description text,
	-- OTLP AggregationTemporality of sums and histograms: 1 delta,
	-- 2 cumulative; NULL for gauges
	temporality smallint CHECK (temporality BETWEEN 0 AND 2),
	-- sums only
	is_monotonic boolean,
	-- gauge and sum value (as_int points are stored as double precision)
	value double precision,
	-- histogram: count, sum, min, max; bucket_counts has one more element
	-- than bounds (explicit_bounds), or none at all
	count bigint,
	sum double precision,
	min double precision,
	max double precision,
	bounds double precision[],
	bucket_counts bigint[],

	service_name text NOT NULL,
	service_namespace text,
	scope_name text,
	attributes jsonb NOT NULL DEFAULT '{}',
	resource_attributes jsonb NOT NULL DEFAULT '{}',

	CHECK (kind = 'histogram' OR value IS NOT NULL),
	CHECK (kind <> 'histogram' OR count IS NOT NULL),
	CHECK (cardinality(bucket_counts) = 0
	       OR cardinality(bucket_counts) = coalesce(cardinality(bounds), 0) + 1)
$columns$,
	'service_name, name',
	'time DESC');

CREATE INDEX metric_points_service_name_time_idx
	ON metric_points (service_name, name, time);
CREATE INDEX metric_points_name_time_idx ON metric_points (name, time);
CREATE INDEX metric_points_time_brin ON metric_points USING brin (time);

-- 0016_edge_rollup.sql - the service graph's edges rolled up per minute and
-- per hour beside the call rollups of 0005 and 0008, so that a day's graph
-- reads a few thousand rows instead of pairing millions of spans.  Plain
-- tables with TimescaleDB too, recomputed by lib/rollup in the same
-- transaction as span_rollup (an hour) and span_rollup_minute (minutes),
-- from the same dirty marks; the aggregate is lib/telemetry/meshquery's.
-- See docs/schema.md ("Service graph").
--
-- An edge is one call, counted in the period where its measured span
-- starts: the SERVER (CONSUMER) span under a CLIENT (PRODUCER) span of
-- another service, or a CLIENT (PRODUCER) span with no SERVER or CONSUMER
-- child (a leaf).  Each side keeps what every graph type needs: service
-- name, namespace, service.version and workload (k8s deployment, else
-- statefulset, else host name); '' for none.  A leaf's target is its peer
-- (peer.service, server.address, db.system and database, messaging system
-- and destination, else "unknown") in dst_service, with the rest ''.
-- outcome: sextant_span_outcome (0012) of the measured span.

CREATE TABLE edge_rollup (
	period timestamptz NOT NULL, -- start of the hour (UTC)
	src_service text NOT NULL,
	src_namespace text NOT NULL,
	src_version text NOT NULL,
	src_workload text NOT NULL,
	dst_service text NOT NULL,
	dst_namespace text NOT NULL,
	dst_version text NOT NULL,
	dst_workload text NOT NULL,
	leaf boolean NOT NULL,
	async boolean NOT NULL,
	protocol text NOT NULL, -- http, grpc, sql, messaging, tcp
	outcome smallint NOT NULL, -- 0 ok, 1 error, 2 client error
	requests bigint NOT NULL,
	buckets integer[] NOT NULL, -- ascending bucket indexes
	counts bigint[] NOT NULL,   -- same length, sum = requests
	PRIMARY KEY (period, src_service, src_namespace, src_version,
		src_workload, dst_service, dst_namespace, dst_version,
		dst_workload, leaf, async, protocol, outcome)
);

CREATE TABLE edge_rollup_minute (LIKE edge_rollup INCLUDING ALL);

-- Hours and minutes rolled up before this migration have no edges yet:
-- they are marked dirty (slot 0, long settled), so the next refresh
-- computes them.
INSERT INTO span_rollup_dirty (period, slot)
SELECT DISTINCT period, 0 FROM span_rollup
ON CONFLICT DO NOTHING;
INSERT INTO span_rollup_minute_dirty (period, slot)
SELECT DISTINCT period, 0 FROM span_rollup_minute
ON CONFLICT DO NOTHING;

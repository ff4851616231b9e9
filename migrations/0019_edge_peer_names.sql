-- 0019_edge_peer_names.sql - the service graph's edges name a call to a
-- Kubernetes service's DNS name (<service>.<namespace>.svc...) that no
-- server span answered by that service, not as a leaf of its DNS name,
-- and count a GenAI call as "http" rather than "tcp"
-- (lib/telemetry/meshquery).  The edge rollups written before this
-- migration hold the old names: every rolled-up hour and minute is marked
-- dirty (slot 0, long settled), so the next refresh computes them again
-- from the spans still stored.

INSERT INTO span_rollup_dirty (period, slot)
SELECT DISTINCT period, 0 FROM edge_rollup
ON CONFLICT DO NOTHING;
INSERT INTO span_rollup_minute_dirty (period, slot)
SELECT DISTINCT period, 0 FROM edge_rollup_minute
ON CONFLICT DO NOTHING;

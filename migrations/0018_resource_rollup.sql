-- 0018_resource_rollup.sql - what get_resource_detail says of a service or
-- workload, rolled up per minute beside the call rollups of 0008, so that a
-- day's list of resources reads a few tens of thousands of rows instead of
-- every span of the day.  A plain table with TimescaleDB too, recomputed by
-- lib/rollup in the transaction that refreshes span_rollup_minute, from the
-- same dirty marks; the aggregate is lib/telemetry/resourcequery's.  See
-- docs/schema.md.
--
-- One row per minute and resource as its spans name it: service.name,
-- namespace (service.namespace, else k8s.namespace.name), service.version,
-- workload (k8s deployment, else statefulset, else host.name), k8s.pod.name,
-- host.name ('' for none) and source.  spans: its spans starting in the
-- minute; last_start: the newest of them; last_error: the newest with
-- sextant_span_outcome 1 (NULL without).  requests, errors, client_errors:
-- its SERVER and CONSUMER spans counted once per span id, on the OTLP
-- copy's row when both sources stored it within 300 s (MESHQUERY_SLACK_S)
-- of each other, by outcome.
CREATE TABLE resource_rollup_minute (
	period timestamptz NOT NULL, -- start of the minute (UTC)
	service_name text NOT NULL,
	namespace text NOT NULL,
	version text NOT NULL,
	workload text NOT NULL,
	pod text NOT NULL,
	host text NOT NULL,
	source text NOT NULL,
	spans bigint NOT NULL,
	last_start timestamptz NOT NULL,
	last_error timestamptz,
	requests bigint NOT NULL,
	errors bigint NOT NULL,
	client_errors bigint NOT NULL,
	PRIMARY KEY (period, service_name, namespace, version, workload, pod,
		host, source)
);

-- Minutes rolled up before this migration have no resource rows yet: the
-- table is filled from the spans already stored, with the rule above (the
-- statement resourcequery's refresh runs, over the whole table).
INSERT INTO resource_rollup_minute
SELECT date_trunc('minute', start_time, 'UTC'), service_name, ns, ver, wl,
	pod, host, source, count(*), max(start_time),
	max(start_time) FILTER (WHERE o = 1),
	count(*) FILTER (WHERE req), count(*) FILTER (WHERE req AND o = 1),
	count(*) FILTER (WHERE req AND o = 2)
FROM (SELECT s.start_time, s.service_name,
		coalesce(nullif(s.service_namespace, ''),
			nullif(s.k8s_namespace_name, ''), '') AS ns,
		coalesce(s.service_version, '') AS ver,
		coalesce(nullif(s.k8s_deployment_name, ''),
			nullif(s.resource_attributes ->> 'k8s.statefulset.name', ''),
			nullif(s.host_name, ''), '') AS wl,
		coalesce(s.k8s_pod_name, '') AS pod,
		coalesce(s.host_name, '') AS host, s.source,
		sextant_span_outcome(s.kind, s.status_code, s.http_status_code,
			s.rpc_grpc_status_code) AS o,
		s.kind IN (2, 5) AND (s.source = 'otlp' OR NOT EXISTS (
			SELECT 1 FROM spans d WHERE d.trace_id = s.trace_id
			AND d.span_id = s.span_id AND d.source = 'otlp'
			AND d.start_time >= s.start_time - interval '300 s'
			AND d.start_time <= s.start_time + interval '300 s'))
			AS req
	FROM spans s WHERE s.source IN ('ebpf', 'otlp')) x
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

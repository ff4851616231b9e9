-- 0002_spans.sql - one row per span, seen by eBPF (Beyla / OBI) or sent by
-- an OpenTelemetry SDK, with the attributes queries filter on pulled out
-- into columns.  Column reference: docs/schema.md.
--
-- Stored once: the primary key is (trace_id, span_id, source, start_time).
-- start_time is in it because a partitioned table's (and a hypertable's)
-- unique keys must include the partitioning column; a span sent again
-- carries the same start time, so the key is (trace id, span id, source)
-- in effect.  Writers COPY into a staging table and move the rows with
--   INSERT INTO spans SELECT * FROM staging ON CONFLICT DO NOTHING
-- so a batch that is retried, or overlaps one already stored, stores each
-- span once.  The same span seen by eBPF and by OTLP is two rows.

SELECT sextant_create_time_table('spans', 'start_time', $columns$
	start_time timestamptz NOT NULL,
	duration_ns bigint NOT NULL CHECK (duration_ns >= 0),
	-- nanoseconds beyond start_time's microsecond: the exact start is
	-- sextant_unix_nano(start_time, start_nanos)
	start_nanos smallint NOT NULL DEFAULT 0
		CHECK (start_nanos BETWEEN 0 AND 999),
	-- OTLP SpanKind: 0 unspecified, 1 internal, 2 server, 3 client,
	-- 4 producer, 5 consumer
	kind smallint NOT NULL DEFAULT 0 CHECK (kind BETWEEN 0 AND 5),
	-- OTLP StatusCode: 0 unset, 1 ok, 2 error
	status_code smallint NOT NULL DEFAULT 0
		CHECK (status_code BETWEEN 0 AND 2),
	trace_id bytea NOT NULL CHECK (length(trace_id) = 16),
	span_id bytea NOT NULL CHECK (length(span_id) = 8),
	parent_span_id bytea CHECK (length(parent_span_id) = 8),
	source text NOT NULL CHECK (source IN ('ebpf', 'otlp')),
	name text NOT NULL,
	status_message text,
	trace_state text,

	-- resource: service.name, service.namespace, service.version,
	-- k8s.namespace.name, k8s.deployment.name, k8s.pod.name, host.name
	service_name text NOT NULL,
	service_namespace text,
	service_version text,
	k8s_namespace_name text,
	k8s_deployment_name text,
	k8s_pod_name text,
	host_name text,
	-- instrumentation scope
	scope_name text,
	scope_version text,

	-- HTTP: http.request.method (http.method), http.route,
	-- url.path (http.target), http.response.status_code (http.status_code)
	http_method text,
	http_route text,
	url_path text,
	http_status_code integer,
	-- RPC: rpc.system, rpc.service, rpc.method, rpc.grpc.status_code
	rpc_system text,
	rpc_service text,
	rpc_method text,
	rpc_grpc_status_code integer,
	-- DB: db.system(.name), db.operation(.name),
	-- db.collection.name (db.sql.table)
	db_system text,
	db_operation text,
	db_table text,
	-- session.id
	session_id text,
	-- GenAI: gen_ai.provider.name (gen_ai.system), gen_ai.operation.name,
	-- gen_ai.request.model, gen_ai.response.model,
	-- gen_ai.usage.input_tokens (prompt_tokens),
	-- gen_ai.usage.output_tokens (completion_tokens)
	gen_ai_provider text,
	gen_ai_operation text,
	gen_ai_request_model text,
	gen_ai_response_model text,
	gen_ai_input_tokens bigint,
	gen_ai_output_tokens bigint,

	-- everything, including what was pulled out above
	attributes jsonb NOT NULL DEFAULT '{}',
	resource_attributes jsonb NOT NULL DEFAULT '{}',
	-- [{"time_unix_nano": "...", "name": "exception",
	--   "attributes": {...}}, ...]; NULL when the span has none
	events jsonb,
	-- [{"trace_id": "<hex>", "span_id": "<hex>", "attributes": {...}}]
	links jsonb,

	PRIMARY KEY (trace_id, span_id, source, start_time)
$columns$,
	'service_name',
	'start_time DESC, trace_id, span_id, source');

-- trace id lookups use the primary key (it leads with trace_id)
CREATE INDEX spans_service_time_idx ON spans (service_name, start_time);
CREATE INDEX spans_session_idx ON spans (session_id, start_time)
	WHERE session_id IS NOT NULL;
CREATE INDEX spans_source_time_idx ON spans (source, start_time);
-- time-range scans over all services; rows arrive roughly in time order,
-- so a BRIN index is small and sufficient
CREATE INDEX spans_start_time_brin ON spans USING brin (start_time);

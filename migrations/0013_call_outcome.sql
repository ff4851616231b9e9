-- 0013_call_outcome.sql - calls, servers and rollups judged by
-- sextant_span_outcome (0012): span_calls gains outcome (0 ok, 1 error, 2
-- client error), span_error (the span status ERROR, which the rule needs
-- and a call's status does not say) and is_client_error, and is_error
-- follows the OpenTelemetry rule (a 404 or an UNAUTHENTICATED answered by a
-- server is a client error, not an error).  The rollups keep span_error in
-- their key, so that sextant_call_outcome gives a rollup row the outcome its
-- spans have.  See docs/schema.md.

-- The outcome of a call from what span_calls and the rollups keep: its
-- protocol, status (HTTP status, gRPC code or -1, SQL span status) and
-- span_error, through sextant_span_outcome as a SERVER span (HTTP, gRPC)
-- or a CLIENT one (SQL).  span_calls computes its outcome with it too, so
-- raw spans and rollups agree by construction.
CREATE FUNCTION sextant_call_outcome(protocol text, status integer,
	span_error boolean)
RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT sextant_span_outcome(
		(CASE WHEN protocol = 'sql' THEN 3 ELSE 2 END)::smallint,
		(CASE WHEN span_error OR (protocol = 'sql' AND status = 2)
			THEN 2 ELSE 0 END)::smallint,
		CASE WHEN protocol = 'http' THEN status END,
		CASE WHEN protocol = 'grpc' AND status >= 0 THEN status END)
$$;

-- The view of 0005 with the new rule: the same columns first (a view may
-- only gain columns at its end), then span_error, outcome and
-- is_client_error.  outcome is also set for spans that are not calls
-- (protocol NULL), by sextant_span_outcome on the span itself, for
-- query_spans' status filter.
CREATE OR REPLACE VIEW span_calls AS
SELECT start_time, service_name, source, duration_ns, trace_id, protocol, k1,
	k2, status, outcome = 1 AS is_error, span_error, outcome,
	outcome = 2 AS is_client_error
FROM (SELECT c.*, CASE WHEN c.protocol IS NULL
		THEN sextant_span_outcome(c.kind, c.status_code,
			c.http_status_code, c.rpc_grpc_status_code)
		ELSE sextant_call_outcome(c.protocol, c.status, c.span_error)
		END AS outcome
	FROM (SELECT start_time, service_name, source, duration_ns, trace_id,
		kind, status_code, http_status_code, rpc_grpc_status_code,
		CASE WHEN kind = 2 AND rpc_system = 'grpc' THEN 'grpc'
		     WHEN kind = 2 AND http_method IS NOT NULL THEN 'http'
		     WHEN kind = 3 AND db_system IS NOT NULL THEN 'sql'
		END AS protocol,
		CASE WHEN kind = 2 AND rpc_system = 'grpc'
			THEN coalesce(rpc_service || '/', '') ||
				coalesce(rpc_method, '')
		     WHEN kind = 2 AND http_method IS NOT NULL
			THEN coalesce(http_route, url_path, '')
		     WHEN kind = 3 AND db_system IS NOT NULL
			THEN upper(coalesce(db_operation, ''))
		END AS k1,
		CASE WHEN kind = 2 AND rpc_system = 'grpc' THEN ''
		     WHEN kind = 2 AND http_method IS NOT NULL
			THEN upper(http_method)
		     WHEN kind = 3 AND db_system IS NOT NULL
			THEN coalesce(db_table, '')
		END AS k2,
		CASE WHEN kind = 2 AND rpc_system = 'grpc'
			THEN coalesce(rpc_grpc_status_code, -1)
		     WHEN kind = 2 AND http_method IS NOT NULL
			THEN coalesce(http_status_code, 0)
		     WHEN kind = 3 AND db_system IS NOT NULL
			THEN status_code::integer
		END AS status,
		status_code = 2 AS span_error
		FROM spans) c) o;

-- The rollups: span_error joins the key (a key's spans with and without
-- status ERROR are two rows).  Rows computed before this migration have
-- span_error false, which sextant_call_outcome already judges right but
-- for HTTP and gRPC spans with status ERROR and a good code; every period
-- is marked dirty (slot 0, long settled), so the next refresh computes
-- them all again from the spans.
ALTER TABLE span_rollup ADD COLUMN span_error boolean NOT NULL DEFAULT false;
ALTER TABLE span_rollup DROP CONSTRAINT span_rollup_pkey,
	ADD PRIMARY KEY (service_name, period, source, protocol, k1, k2, status,
		span_error);
ALTER TABLE span_rollup_minute
	ADD COLUMN span_error boolean NOT NULL DEFAULT false;
ALTER TABLE span_rollup_minute DROP CONSTRAINT span_rollup_minute_pkey,
	ADD PRIMARY KEY (service_name, source, period, protocol, k1, k2, status,
		span_error);

INSERT INTO span_rollup_dirty (period, slot)
SELECT DISTINCT period, 0 FROM span_rollup
ON CONFLICT DO NOTHING;
INSERT INTO span_rollup_minute_dirty (period, slot)
SELECT DISTINCT period, 0 FROM span_rollup_minute
ON CONFLICT DO NOTHING;

-- analyze_genai judges a call by sextant_span_outcome too (an LLM call
-- answered 429 or 500 failed, whatever its span status): the GenAI index
-- of 0006 also holds what the rule reads, so that a range stays an
-- index-only scan.
DROP INDEX spans_genai_idx;
CREATE INDEX spans_genai_idx ON spans (start_time)
	INCLUDE (trace_id, span_id, source, duration_ns, status_code,
		 service_name, session_id, gen_ai_provider, gen_ai_operation,
		 gen_ai_request_model, gen_ai_response_model,
		 gen_ai_input_tokens, gen_ai_output_tokens, kind,
		 http_status_code, rpc_grpc_status_code)
	WHERE gen_ai_operation IN ('chat', 'text_completion',
				   'generate_content', 'embeddings')
	   OR gen_ai_input_tokens IS NOT NULL
	   OR gen_ai_output_tokens IS NOT NULL;

-- 0012_span_outcome.sql - one definition of a failed span, the
-- OpenTelemetry one, for every query and tool: sextant_span_outcome gives
-- 0 (ok), 1 (error: the server or the call failed) or 2 (client error:
-- the server answered a request the client got wrong).  See docs/schema.md.
--
-- From the semantic conventions' status rules:
--   span status ERROR set by the instrumentation: an error, whatever else
--       the span says;
--   HTTP: 5xx is an error; 4xx is a client error on a SERVER span and an
--       error on any other span (the client's call failed);
--   gRPC: on a SERVER span only UNKNOWN (2), DEADLINE_EXCEEDED (4),
--       UNIMPLEMENTED (12), INTERNAL (13), UNAVAILABLE (14) and DATA_LOSS
--       (15) are errors, every other non-OK code is a client error; on any
--       other span every non-OK code is an error.
-- A gRPC code decides before an HTTP status (a gRPC server span may carry
-- both).  Missing attributes count as ok.  Not STRICT, so that it is
-- inlined into queries.
CREATE FUNCTION sextant_span_outcome(kind smallint, status_code smallint,
	http_status integer, grpc_code integer)
RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT (CASE
		WHEN status_code = 2 THEN 1
		WHEN grpc_code IS NOT NULL AND grpc_code > 0 THEN
			CASE WHEN kind = 2 AND grpc_code NOT IN (2, 4, 12, 13, 14, 15)
				THEN 2 ELSE 1 END
		WHEN grpc_code = 0 THEN 0
		WHEN http_status >= 500 THEN 1
		WHEN http_status >= 400 THEN CASE WHEN kind = 2 THEN 2 ELSE 1 END
		ELSE 0
	END)::smallint
$$;

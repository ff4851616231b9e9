-- 0006_genai_index.sql - an index of the GenAI spans alone, for
-- analyze_genai (lib/genai.c): LLM calls are a few percent of the spans, so
-- reading a range of them through the time indexes means reading every
-- span of the range.  Partial (only the spans the query wants, with the
-- same predicate, spelled the same) and covering (every column the usage
-- query reads), so that a range is an index-only scan of a small index.

CREATE INDEX spans_genai_idx ON spans (start_time)
	INCLUDE (trace_id, span_id, source, duration_ns, status_code,
		 service_name, session_id, gen_ai_provider, gen_ai_operation,
		 gen_ai_request_model, gen_ai_response_model,
		 gen_ai_input_tokens, gen_ai_output_tokens)
	WHERE gen_ai_operation IN ('chat', 'text_completion',
				   'generate_content', 'embeddings')
	   OR gen_ai_input_tokens IS NOT NULL
	   OR gen_ai_output_tokens IS NOT NULL;

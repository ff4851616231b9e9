-- 0014_genai_models.sql - GenAI calls grouped as users think of them, and
-- failed by the one rule (0012):
--
-- sextant_model_family(model): the model without a date suffix, so that
-- dated snapshots and "-latest" aliases group under their family:
-- gpt-4o-2024-08-06 -> gpt-4o, gpt-4o-mini-2024-07-18 -> gpt-4o-mini,
-- claude-3-5-sonnet-20241022 and claude-3-5-sonnet-latest ->
-- claude-3-5-sonnet, claude-3-5-sonnet@20241022 (Vertex AI) likewise.
-- Suffixes: -latest, -YYYY-MM-DD, -YYYYMMDD, @YYYYMMDD, with a real month
-- and day in a year 19xx or 20xx (an 8-digit build number is not a date).
-- One suffix only; a name that would be left empty is kept whole.
--
-- sextant_genai_family(request_model, response_model): the family of one
-- call, the one definition lib/telemetry/genai.c groups by.  A call
-- without a response model (a failed one) belongs to the model its
-- request named; a response that is the requested family with a version
-- number (gemini-2.0-flash asked, gemini-2.0-flash-001 answered) belongs
-- to the family asked for; otherwise the response model's family.  Only a
-- number counts as a version, so gpt-4o asked and gpt-4o-mini-2024-07-18
-- answered (a router's fallback) stays gpt-4o-mini.  Empty strings count
-- as absent.  (0013 made spans_genai_idx cover what sextant_span_outcome
-- reads, so analyze_genai stays an index-only scan.)
CREATE FUNCTION sextant_model_family(model text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT coalesce(nullif(regexp_replace(model,
		'(-latest|-(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])'
		'|[-@](19|20)[0-9]{2}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01]))$',
		''), ''), model)
$$;

CREATE FUNCTION sextant_genai_family(request_model text, response_model text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
		WHEN nullif(response_model, '') IS NULL THEN
			sextant_model_family(nullif(request_model, ''))
		WHEN nullif(request_model, '') IS NOT NULL
			AND starts_with(response_model,
				sextant_model_family(request_model) || '-')
			AND substr(response_model,
				length(sextant_model_family(request_model)) + 2)
				~ '^[0-9]+$'
			THEN sextant_model_family(request_model)
		ELSE sextant_model_family(response_model)
	END
$$;

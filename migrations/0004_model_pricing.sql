-- 0004_model_pricing.sql - what GenAI tokens cost, for the cost of LLM
-- calls seen in spans.  Edit it with SQL; a price change is a new row with
-- a later effective_from, so past calls keep the price they were made at:
--   INSERT INTO model_pricing (provider, model, input_usd_per_million,
--                              output_usd_per_million, effective_from, note)
--   VALUES ('openai', 'gpt-4o', 2.00, 8.00, '2027-01-01', 'price cut');
-- See docs/schema.md.

CREATE TABLE model_pricing (
	-- gen_ai.provider.name value: 'openai', 'anthropic', 'gcp.gemini', ...
	provider text NOT NULL,
	-- the model name, or a prefix of dated names: 'gpt-4o' also prices
	-- 'gpt-4o-2024-08-06' (the longest matching name wins)
	model text NOT NULL CHECK (model <> ''),
	input_usd_per_million numeric(14, 6) NOT NULL
		CHECK (input_usd_per_million >= 0),
	output_usd_per_million numeric(14, 6) NOT NULL
		CHECK (output_usd_per_million >= 0),
	-- '-infinity' = since before any span was recorded
	effective_from timestamptz NOT NULL DEFAULT '-infinity',
	note text,
	PRIMARY KEY (provider, model, effective_from)
);

-- List prices in US dollars per million tokens, standard tier (no batch,
-- prompt-cache or long-context rates), as the providers published them in
-- 2025 (openai.com/api/pricing, anthropic.com/pricing,
-- ai.google.dev/gemini-api/docs/pricing).  Recorded 2026-11-21 and not
-- checked since: prices change, so check them and update with SQL.
INSERT INTO model_pricing (provider, model, input_usd_per_million,
			   output_usd_per_million, note)
VALUES
	('openai', 'gpt-4o', 2.50, 10.00, 'list price 2025, seeded'),
	('openai', 'gpt-4o-mini', 0.15, 0.60, 'list price 2025, seeded'),
	('openai', 'gpt-4.1', 2.00, 8.00, 'list price 2025, seeded'),
	('openai', 'gpt-4.1-mini', 0.40, 1.60, 'list price 2025, seeded'),
	('openai', 'gpt-4.1-nano', 0.10, 0.40, 'list price 2025, seeded'),
	('openai', 'o3', 2.00, 8.00, 'list price 2025, seeded'),
	('openai', 'o3-mini', 1.10, 4.40, 'list price 2025, seeded'),
	('openai', 'o4-mini', 1.10, 4.40, 'list price 2025, seeded'),
	('openai', 'gpt-5', 1.25, 10.00, 'list price 2025, seeded'),
	('openai', 'gpt-5-mini', 0.25, 2.00, 'list price 2025, seeded'),
	('openai', 'gpt-5-nano', 0.05, 0.40, 'list price 2025, seeded'),
	('anthropic', 'claude-3-5-haiku', 0.80, 4.00, 'list price 2025, seeded'),
	('anthropic', 'claude-haiku-4-5', 1.00, 5.00, 'list price 2025, seeded'),
	('anthropic', 'claude-sonnet-4', 3.00, 15.00, 'list price 2025, seeded'),
	('anthropic', 'claude-opus-4', 15.00, 75.00, 'list price 2025, seeded'),
	('anthropic', 'claude-opus-4-5', 5.00, 25.00, 'list price 2025, seeded'),
	('gcp.gemini', 'gemini-2.0-flash', 0.10, 0.40, 'list price 2025, seeded'),
	('gcp.gemini', 'gemini-2.5-flash', 0.30, 2.50, 'list price 2025, seeded'),
	('gcp.gemini', 'gemini-2.5-flash-lite', 0.10, 0.40,
	 'list price 2025, seeded'),
	('gcp.gemini', 'gemini-2.5-pro', 1.25, 10.00,
	 'list price 2025 (prompts up to 200k tokens), seeded');

-- The price row for a call to model at time at: the row whose model is
-- model itself or the longest prefix of it followed by '-' (dated and
-- variant names), preferring the same provider (NULL = any), then the
-- latest effective_from not after at.  No row: all columns NULL.
CREATE FUNCTION sextant_model_price(provider text, model text,
				    at timestamptz DEFAULT now())
RETURNS model_pricing
LANGUAGE sql STABLE AS $$
	SELECT p.*
	FROM model_pricing p
	WHERE p.effective_from <= sextant_model_price.at
	  AND (p.model = sextant_model_price.model
	       OR starts_with(sextant_model_price.model, p.model || '-'))
	ORDER BY length(p.model) DESC,
		 coalesce(p.provider = sextant_model_price.provider, false) DESC,
		 p.effective_from DESC
	LIMIT 1
$$;

-- The cost in US dollars of one call, or NULL for an unknown model.
CREATE FUNCTION sextant_genai_cost_usd(provider text, model text,
				       input_tokens bigint,
				       output_tokens bigint,
				       at timestamptz DEFAULT now())
RETURNS numeric
LANGUAGE sql STABLE AS $$
	SELECT (coalesce(input_tokens, 0) * p.input_usd_per_million
		+ coalesce(output_tokens, 0) * p.output_usd_per_million)
	       / 1000000
	FROM sextant_model_price(provider, model, at) p
$$;

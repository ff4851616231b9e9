// genaisql.mjs - the GenAI numbers as the tests compute them, straight
// from the spans table with the definitions of issue 5 (and lib/telemetry/genai.h),
// never through the gateway's SQL: a GenAI call is a span whose
// gen_ai.operation.name is chat, text_completion, generate_content or
// embeddings, or a span of another operation carrying token counts that no
// span below it in its trace carries (an agent span around chat spans is
// not counted again); one row per span id (the OTLP copy when eBPF saw it
// too); the model is the response model, else the request model, and rows
// by model are by its family (sextant_genai_family, checked by
// test_genai); a call or span failed by OpenTelemetry's rule (SQL_FAILED); the cost is
// computed here from the model_pricing rows (tooltest.mjs costOf), per
// exact model.

import { psqlJson } from './pgjson.mjs';
import { SQL_FAILED, costOf, lit } from './tooltest.mjs';

export const LLM_OPS = ['chat', 'text_completion', 'generate_content', 'embeddings'];

// The CTEs s0 (the spans of scope, one per span id), up (each span with a
// token-carrying span below it: (trace_id, anc)) and calls.  scope: a
// predicate on spans.
function callsCtes(scope) {
	return `WITH RECURSIVE
		s0 AS (SELECT DISTINCT ON (trace_id, span_id) trace_id, span_id, parent_span_id, source, start_time,
				sextant_unix_nano(start_time, start_nanos) AS start_ns, duration_ns,
				status_code,
				service_name, session_id, name, status_message, gen_ai_operation AS op,
				nullif(gen_ai_provider, '') AS provider,
				coalesce(nullif(gen_ai_response_model, ''), nullif(gen_ai_request_model, '')) AS model,
				sextant_genai_family(gen_ai_request_model, gen_ai_response_model) AS family,
				${SQL_FAILED} AS failed, -- the rule written out (tooltest.mjs)
				gen_ai_request_model AS req_model, gen_ai_response_model AS resp_model,
				gen_ai_input_tokens AS tin, gen_ai_output_tokens AS tout,
				(gen_ai_input_tokens IS NOT NULL OR gen_ai_output_tokens IS NOT NULL) AS has_tok
			FROM spans WHERE ${scope}
			ORDER BY trace_id, span_id, (source = 'otlp') DESC),
		up (trace_id, anc) AS (
			SELECT trace_id, parent_span_id FROM s0 WHERE has_tok AND parent_span_id IS NOT NULL
			UNION
			SELECT p.trace_id, p.parent_span_id FROM up JOIN s0 p ON p.trace_id = up.trace_id AND p.span_id = up.anc
			WHERE p.parent_span_id IS NOT NULL),
		calls AS (SELECT * FROM s0 WHERE op IN (${LLM_OPS.map(lit).join(', ')})
			OR (has_tok AND NOT EXISTS (SELECT 1 FROM up WHERE up.trace_id = s0.trace_id AND up.anc = s0.span_id)))`;
}

const rangeSql = (from, to) => `start_time >= ${lit(from)}::timestamptz AND start_time < ${lit(to)}::timestamptz`;

// Stats of a group of calls (SQL columns), percentiles with percentile_cont.
const STATS = `count(*) AS calls, count(*) FILTER (WHERE failed) AS errors,
	coalesce(sum(tin), 0) AS input_tokens, coalesce(sum(tout), 0) AS output_tokens,
	percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ns) / 1e6::float8 AS p50_ms,
	percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) / 1e6::float8 AS p95_ms,
	avg(duration_ns) / 1e6::float8 AS avg_ms`;

const CALL_COLS = `encode(trace_id, 'hex') AS trace_id, encode(span_id, 'hex') AS span_id, service_name AS service,
	session_id, name, provider, model, family, op, tin AS input_tokens, tout AS output_tokens, status_code, failed,
	start_ns::text AS start_ns, duration_ns / 1e6::float8 AS duration_ms`;

// The calls of a scope and their stats by model, service and session, and
// over all: {calls: [...], total, by_model, by_service, by_session}.
// callScope: a further predicate on the calls (e.g. their time range).
async function genaiSql(url, scope, callScope = 'true') {
	const j = await psqlJson(url, `${callsCtes(scope)},
		c AS (SELECT * FROM calls WHERE ${callScope})
		SELECT json_build_object(
			'calls', (SELECT coalesce(json_agg(x ORDER BY x.start_ns, x.span_id), '[]') FROM (SELECT ${CALL_COLS} FROM c) x),
			'total', (SELECT row_to_json(x) FROM (SELECT ${STATS} FROM c) x),
			'by_model', (SELECT coalesce(json_agg(x), '[]') FROM (SELECT family AS model, ${STATS} FROM c GROUP BY family) x),
			'by_service', (SELECT coalesce(json_agg(x), '[]') FROM (SELECT service_name AS service, ${STATS} FROM c GROUP BY service_name) x))`);
	for (const c of j.calls) {
		c.start_ms = Number(BigInt(c.start_ns) / 1000000n);
	}
	return j;
}

// The GenAI numbers of the calls started in [from, to) (ISO strings),
// optionally of one service or one model (request or response model).
export async function sqlUsage(url, { from, to, service, model }) {
	const range = rangeSql(from, to);
	const filters = [range];
	if (service) filters.push(`service_name = ${lit(service)}`);
	if (model) filters.push(`(req_model = ${lit(model)} OR resp_model = ${lit(model)} OR family = ${lit(model)})`);
	return genaiSql(url, `trace_id IN (SELECT trace_id FROM spans WHERE ${range})`, filters.join(' AND '));
}

// The GenAI numbers of a session: the traces with a span carrying the id
// started in [from, to).
export async function sqlSessionCalls(url, sessionId, { from, to }) {
	return genaiSql(url, sessionTraces(sessionId, from, to));
}

const sessionTraces = (sessionId, from, to) =>
	`trace_id IN (SELECT trace_id FROM spans WHERE session_id = ${lit(sessionId)} AND ${rangeSql(from, to)})`;

// Every span of a session (one per span id), for the session-level
// numbers: [{trace_id, span_id, parent_span_id, service, name, status_code,
// status_message, start_ns (BigInt), duration_ns (BigInt)}].
export async function sqlSessionSpans(url, sessionId, { from, to }) {
	const rows = await psqlJson(url, `${callsCtes(sessionTraces(sessionId, from, to))}
		SELECT coalesce(json_agg(x), '[]') FROM (SELECT encode(trace_id, 'hex') AS trace_id, encode(span_id, 'hex') AS span_id,
			encode(parent_span_id, 'hex') AS parent_span_id, service_name AS service, name, status_code, failed, status_message,
			source, start_ns::text AS start_ns, duration_ns::text AS duration_ns FROM s0) x`);
	for (const r of rows) {
		r.start_ns = BigInt(r.start_ns);
		r.duration_ns = BigInt(r.duration_ns);
	}
	return rows;
}

// Session-level numbers from its spans: counts, first start to last end,
// mean trace duration, services by span count, the span with the largest
// self time (its duration not covered by its children's intervals).
export function sessionSummary(spans) {
	const traces = new Map();
	for (const s of spans) {
		const t = traces.get(s.trace_id) ?? { start: s.start_ns, end: s.start_ns + s.duration_ns };
		if (s.start_ns < t.start) t.start = s.start_ns;
		if (s.start_ns + s.duration_ns > t.end) t.end = s.start_ns + s.duration_ns;
		traces.set(s.trace_id, t);
	}
	const start = spans.reduce((m, s) => (s.start_ns < m ? s.start_ns : m), spans[0].start_ns);
	const end = spans.reduce((m, s) => (s.start_ns + s.duration_ns > m ? s.start_ns + s.duration_ns : m), 0n);
	const services = new Map();
	for (const s of spans) {
		const v = services.get(s.service) ?? { name: s.service, spans: 0, errors: 0 };
		v.spans++;
		if (s.failed) v.errors++;
		services.set(s.service, v);
	}
	const kids = new Map();
	for (const s of spans) {
		if (!s.parent_span_id) continue;
		const k = `${s.trace_id}/${s.parent_span_id}`;
		if (!kids.has(k)) kids.set(k, []);
		kids.get(k).push(s);
	}
	for (const s of spans) s.self_ns = selfTime(s, kids.get(`${s.trace_id}/${s.span_id}`) ?? []);
	const bottleneck = [...spans].sort((a, b) => (b.self_ns > a.self_ns ? 1 : b.self_ns < a.self_ns ? -1 : 0))[0];
	const traceMs = [...traces.values()].map((t) => Number(t.end - t.start) / 1e6);
	return {
		traces: traces.size,
		spans: spans.length,
		errors: spans.filter((s) => s.failed).length,
		error_rate_pct: (100 * spans.filter((s) => s.failed).length) / spans.length,
		start_ns: start,
		end_ns: end,
		duration_ms: Number(end - start) / 1e6,
		avg_trace_ms: traceMs.reduce((a, b) => a + b, 0) / traceMs.length,
		services: [...services.values()].sort((a, b) => b.spans - a.spans || a.name.localeCompare(b.name)),
		bottleneck,
	};
}

// A span's duration not covered by its children (their intervals clipped
// to the span's).
export function selfTime(s, children) {
	const lo = s.start_ns;
	const hi = s.start_ns + s.duration_ns;
	const iv = children.map((c) => [c.start_ns < lo ? lo : c.start_ns, c.start_ns + c.duration_ns > hi ? hi : c.start_ns + c.duration_ns])
		.filter(([a, b]) => b > a).sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
	let covered = 0n;
	let curA = null;
	let curB = null;
	for (const [a, b] of iv) {
		if (curB === null || a > curB) {
			if (curB !== null) covered += curB - curA;
			curA = a;
			curB = b;
		} else if (b > curB) curB = b;
	}
	if (curB !== null) covered += curB - curA;
	return s.duration_ns - covered;
}

// Cost of a set of calls from the price rows: {cost (priced calls),
// priced, unpriced (calls with tokens of models without a price),
// unpricedModels (sorted, distinct)}.
export function costSum(pricing, calls) {
	let cost = 0;
	let priced = 0;
	let unpriced = 0;
	const models = new Set();
	for (const c of calls) {
		const usd = costOf(pricing, { provider: c.provider, model: c.model, input: c.input_tokens, output: c.output_tokens, atMs: c.start_ms });
		if (usd === null) {
			if (c.input_tokens !== null || c.output_tokens !== null) {
				unpriced++;
				models.add(c.model ?? '');
			}
		} else {
			cost += usd;
			priced++;
		}
	}
	return { cost, priced, unpriced, unpricedModels: [...models].sort() };
}

// A call's cost, or null for an unknown model.
export const callCost = (pricing, c) =>
	costOf(pricing, { provider: c.provider, model: c.model, input: c.input_tokens, output: c.output_tokens, atMs: c.start_ms });

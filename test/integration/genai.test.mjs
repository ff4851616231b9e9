// genai.test.mjs - get_session, analyze_genai and compare_sessions through
// the official MCP SDK client, over GenAI spans put in through the OTLP
// receiver.  Every number is compared with SQL the test runs itself on the
// spans table (lib/genaisql.mjs: calls, tokens, durations, percentiles with
// percentile_cont) and with costs the test computes from the model_pricing
// rows: nested agent spans (invoke_agent > chat, invoke_agent >
// execute_tool > invoke_agent > chat) whose tokens count once, models priced
// by a prefix of their dated name, unknown models (cost unknown and named,
// never 0; totals "at least"), a price change between two calls, the change
// against the previous period, not-found answers, and the character budget.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { callCost, costSum, sessionSummary, sqlSessionCalls, sqlSessionSpans, sqlUsage } from './lib/genaisql.mjs';
import { KIND, STATUS, newId, span } from './lib/otlpjson.mjs';
import { psql } from './lib/pg.mjs';
import {
	DAY_MS, HOUR_MS, MIN_MS, MS, ResBatch, callRefused, callTool, close, loadPricing, mdTable, rendered, rng, startStack,
} from './lib/tooltest.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS + 417n; // odd ns: precision
const random = rng(5005);

// ---- the data -------------------------------------------------------------------

const batch = new ResBatch();

// One span; times in ms from t0 (BigInt ns).  g: GenAI attributes
// {op, provider, model (request), resp (response model), tin, tout}.
function gspan(service, trace, t0, { source = 'otlp', id = newId(8), parent, name, kind = KIND.INTERNAL, at = 0, dur, session, conv, g = {}, status, attributes = {} }) {
	batch.add(service, source, span({
		traceId: trace,
		spanId: id,
		parentSpanId: parent,
		name,
		kind,
		startNs: t0 + BigInt(Math.round(at * 1e6)),
		durNs: BigInt(Math.round(dur * 1e6)),
		attributes: {
			'session.id': session,
			'gen_ai.conversation.id': conv,
			'gen_ai.operation.name': g.op,
			'gen_ai.provider.name': g.provider,
			'gen_ai.request.model': g.model,
			'gen_ai.response.model': g.resp,
			'gen_ai.usage.input_tokens': g.tin,
			'gen_ai.usage.output_tokens': g.tout,
			...attributes,
		},
		status,
	}));
	return id;
}
const chat = (provider, model, tin, tout, extra = {}) => ({ op: 'chat', provider, model, tin, tout, ...extra });

// sess-alpha: five traces in the last hour over three services.
const ALPHA = 'sess-alpha';
const A = {};
{
	// A1: invoke_agent (tokens: the sum of its two chats) > chat, chat;
	// vector-db's span carries no session id (it is of the session by its
	// trace) and is seen by eBPF too (counted once).
	const t = newId(16);
	const t0 = ago(50 * MIN_MS);
	A.t1 = t;
	const r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 900, session: ALPHA });
	const ag = gspan('agent-runner', t, t0, { parent: r, name: 'invoke_agent planner', at: 10, dur: 870, session: ALPHA, g: { op: 'invoke_agent', tin: 1500, tout: 300 } });
	A.c1 = gspan('agent-runner', t, t0, { parent: ag, name: 'chat gpt-4o', kind: KIND.CLIENT, at: 20, dur: 400, session: ALPHA, g: chat('openai', 'gpt-4o', 1000, 200, { resp: 'gpt-4o-2024-08-06' }) });
	gspan('agent-runner', t, t0, { parent: ag, name: 'chat gpt-4o', kind: KIND.CLIENT, at: 430, dur: 300, session: ALPHA, g: chat('openai', 'gpt-4o', 500, 100) });
	const v = newId(8);
	for (const source of ['otlp', 'ebpf']) {
		gspan('vector-db', t, t0, { source, id: v, parent: ag, name: source === 'otlp' ? 'SELECT embeddings' : 'SELECT', kind: KIND.CLIENT, at: 740, dur: source === 'otlp' ? 130 : 129 });
	}
}
{
	// A2 (the session named by gen_ai.conversation.id): invoke_agent
	// orchestrator (tokens, and a model) > execute_tool > invoke_agent
	// researcher (tokens) > chat claude (the slowest call); a gpt-4.1 call
	// before the price change.
	const t = newId(16);
	const t0 = ago(40 * MIN_MS);
	A.t2 = t;
	const r = gspan('chat-api', t, t0, { name: 'POST /research', kind: KIND.SERVER, dur: 2400, conv: ALPHA });
	const ag1 = gspan('agent-runner', t, t0, { parent: r, name: 'invoke_agent orchestrator', at: 5, dur: 2300, conv: ALPHA, g: { op: 'invoke_agent', provider: 'openai', model: 'gpt-4o', tin: 2000, tout: 400 } });
	const tool = gspan('agent-runner', t, t0, { parent: ag1, name: 'execute_tool web_search', at: 10, dur: 1700, conv: ALPHA, g: { op: 'execute_tool' } });
	const ag2 = gspan('agent-runner', t, t0, { parent: tool, name: 'invoke_agent researcher', at: 20, dur: 1650, conv: ALPHA, g: { op: 'invoke_agent', tin: 2000, tout: 400 } });
	A.claude = gspan('agent-runner', t, t0, { parent: ag2, name: 'chat claude-sonnet-4', kind: KIND.CLIENT, at: 30, dur: 1600, conv: ALPHA, g: chat('anthropic', 'claude-sonnet-4-20250514', 2000, 400) });
	A.g41a = gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4.1', kind: KIND.CLIENT, at: 1800, dur: 500, conv: ALPHA, g: chat('openai', 'gpt-4.1', 1000, 200) });
}
{
	// A3: an agent span with tokens and no token-carrying span below it
	// (a call of gpt-4o-mini), a call of an unknown model, an embeddings
	// call of a model without a price.
	const t = newId(16);
	const t0 = ago(30 * MIN_MS);
	const r = gspan('chat-api', t, t0, { name: 'POST /plan', kind: KIND.SERVER, dur: 1200, session: ALPHA });
	const ag = gspan('agent-runner', t, t0, { parent: r, name: 'invoke_agent summarizer', at: 10, dur: 600, session: ALPHA, g: { op: 'invoke_agent', provider: 'openai', model: 'gpt-4o-mini', tin: 300, tout: 50 } });
	gspan('agent-runner', t, t0, { parent: ag, name: 'execute_tool calculator', at: 20, dur: 100, session: ALPHA, g: { op: 'execute_tool' } });
	A.acme = gspan('chat-api', t, t0, { parent: r, name: 'chat acme', kind: KIND.CLIENT, at: 620, dur: 350, session: ALPHA, g: chat('acme', 'acme-llm-9', 800, 120) });
	gspan('chat-api', t, t0, { parent: r, name: 'embeddings', kind: KIND.CLIENT, at: 980, dur: 60, session: ALPHA, g: { op: 'embeddings', provider: 'openai', model: 'text-embedding-3-small', tin: 5000 } });
}
{
	// A4: a failed request: a failed gpt-4o call without tokens, the retry.
	const t = newId(16);
	const t0 = ago(20 * MIN_MS);
	const r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 800, session: ALPHA, status: { code: STATUS.ERROR, message: 'upstream failed' } });
	gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4o', kind: KIND.CLIENT, at: 5, dur: 90, session: ALPHA, g: { op: 'chat', provider: 'openai', model: 'gpt-4o' }, status: { code: STATUS.ERROR, message: 'rate limited' } });
	gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4o', kind: KIND.CLIENT, at: 100, dur: 650, session: ALPHA, g: chat('openai', 'gpt-4o', 700, 150) });
}
{
	// A5: a gpt-4.1 call after the price change.
	const t = newId(16);
	const t0 = ago(10 * MIN_MS);
	const r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 700, session: ALPHA });
	A.g41b = gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4.1', kind: KIND.CLIENT, at: 5, dur: 610, session: ALPHA, g: chat('openai', 'gpt-4.1', 2000, 500) });
}
// The price change: gpt-4.1 from this time on (between A2 and A5).
const PRICE_CHANGE_MS = Math.floor((NOW_MS - 25 * MIN_MS) / 1000) * 1000;

// sess-beta: two traces 2-3 h ago; cheaper, more errors, and a slow
// failing tool span as its bottleneck.
const BETA = 'sess-beta';
{
	let t = newId(16);
	let t0 = ago(3 * HOUR_MS);
	let r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 1300, session: BETA });
	gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4o-mini', kind: KIND.CLIENT, at: 10, dur: 120, session: BETA, g: chat('openai', 'gpt-4o-mini', 300, 80) });
	gspan('tool-svc', t, t0, { parent: r, name: 'execute_tool slow_lookup', at: 150, dur: 1100, session: BETA, g: { op: 'execute_tool' }, status: { code: STATUS.ERROR, message: 'lookup timed out' } });
	t = newId(16);
	t0 = ago(2 * HOUR_MS);
	r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 300, session: BETA, status: { code: STATUS.ERROR } });
	gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4o-mini', kind: KIND.CLIENT, at: 10, dur: 250, session: BETA, g: chat('openai', 'gpt-4o-mini', 200, 60), status: { code: STATUS.ERROR, message: 'content filter' } });
}

// Generated sessions: the current 24 h (12) and the 24 h before (8), one
// trace each with 1-3 calls; and calls without a session.
const MODELS = [
	['openai', 'gpt-4o-mini'], ['anthropic', 'claude-haiku-4-5-20251001'], ['gcp.gemini', 'gemini-2.5-flash'],
	['openai', 'gpt-5-nano'], ['acme', 'acme-llm-9'], ['openai', 'gpt-4o'],
];
const SERVICES = ['chat-api', 'support-bot', 'search-api'];
function genSession(id, ageMs, n) {
	const t = newId(16);
	const t0 = ago(ageMs);
	const service = SERVICES[Math.floor(random() * SERVICES.length)];
	const r = gspan(service, t, t0, { name: 'POST /ask', kind: KIND.SERVER, dur: 3000, session: id });
	for (let i = 0; i < n; i++) {
		const [provider, model] = MODELS[Math.floor(random() * MODELS.length)];
		gspan(service, t, t0, {
			parent: r, name: `chat ${model}`, kind: KIND.CLIENT, at: 10 + i * 900, dur: 50 + Math.round(random() * 800), session: id,
			g: chat(provider, model, 100 + Math.round(random() * 4000), 10 + Math.round(random() * 900)),
			status: random() < 0.15 ? { code: STATUS.ERROR } : undefined,
		});
	}
}
for (let i = 1; i <= 12; i++) genSession(`sess-gen-${String(i).padStart(2, '0')}`, (0.1 + 23.5 * random()) * HOUR_MS, 1 + (i % 3));
for (let i = 1; i <= 8; i++) genSession(`sess-prev-${String(i).padStart(2, '0')}`, (24.3 + 23.4 * random()) * HOUR_MS, 1 + (i % 2));
for (let i = 0; i < 6; i++) {
	const t = newId(16);
	gspan('batch-job', t, ago((1 + i * 3) * HOUR_MS), { name: 'chat gpt-4o-mini', kind: KIND.CLIENT, dur: 200 + 40 * i, g: chat('openai', 'gpt-4o-mini', 900, 300) });
}
// sess-zoo: 260 calls of 260 models without a price (and one priced
// call), twelve hours ago: more models than an answer shows.
const ZOO = 'sess-zoo';
const ZOO_MODELS = 260;
{
	const t = newId(16);
	const t0 = ago(12 * HOUR_MS);
	const r = gspan('zoo-svc', t, t0, { name: 'POST /zoo', kind: KIND.SERVER, dur: 30000, session: ZOO });
	for (let i = 0; i < ZOO_MODELS; i++) {
		gspan('zoo-svc', t, t0, { parent: r, name: `chat zoo ${i}`, kind: KIND.CLIENT, at: 1 + i * 100, dur: 20 + (i % 50), session: ZOO,
			g: chat('zoo', `zoo-model-${String(i).padStart(3, '0')}-with-a-long-name-for-the-table`, 10 + i, 5) });
	}
	gspan('zoo-svc', t, t0, { parent: r, name: 'chat priced', kind: KIND.CLIENT, at: 29000, dur: 500, session: ZOO, g: chat('openai', 'gpt-4o', 100, 10) });
}
// sess-old: nine days ago, beyond the 7 days looked at by default.
const OLD = 'sess-old';
{
	const t = newId(16);
	const t0 = ago(9 * DAY_MS);
	const r = gspan('chat-api', t, t0, { name: 'POST /chat', kind: KIND.SERVER, dur: 500, session: OLD });
	gspan('chat-api', t, t0, { parent: r, name: 'chat gpt-4o', kind: KIND.CLIENT, at: 5, dur: 400, session: OLD, g: chat('openai', 'gpt-4o', 100, 10) });
}

// helpdesk-llm, 50-52 h ago (before the 24 h and the day before it): 1,295 gpt-4o calls answered by the dated
// gpt-4o-2024-08-06 and 26 failed ones that name only the request model
// (20 with HTTP 429 and no span status: a CLIENT span's 4xx fails it; 6
// with status ERROR), 40 gpt-4o-mini calls answered by
// gpt-4o-mini-2024-07-18; in ten sessions hd-00..hd-09 whose tokens grow
// with their number, so hd-00 is the least expensive.
const HD = { service: 'helpdesk-llm', ok: 1295, failed: 26, mini: 40, sessions: 10, cost: 0, miniCost: 0 };
{
	const n = HD.ok + HD.failed + HD.mini;
	for (let i = 0; i < n; i++) {
		const k = i % HD.sessions;
		const t0 = ago(50 * HOUR_MS + (i / n) * 2 * HOUR_MS);
		const session = `hd-${String(k).padStart(2, '0')}`;
		const tin = 100 * (k + 1);
		const tout = 10 * (k + 1);
		let g;
		let status;
		let attributes = {};
		if (i < HD.ok) {
			g = chat('openai', 'gpt-4o', tin, tout, { resp: 'gpt-4o-2024-08-06' });
			HD.cost += (tin * 2.5 + tout * 10) / 1e6;
		} else if (i < HD.ok + HD.failed) {
			g = { op: 'chat', provider: 'openai', model: 'gpt-4o' };
			if (i < HD.ok + 20) attributes = { 'http.response.status_code': 429 };
			else status = { code: STATUS.ERROR, message: 'upstream error' };
		} else {
			g = chat('openai', 'gpt-4o-mini', tin, tout, { resp: 'gpt-4o-mini-2024-07-18' });
			HD.miniCost += (tin * 0.15 + tout * 0.6) / 1e6;
		}
		gspan(HD.service, newId(16), t0, { name: 'chat gpt-4o', kind: KIND.CLIENT, dur: 300 + (i % 97), session, g, status, attributes });
	}
}

// ---- set-up ----------------------------------------------------------------------

let st;
const call = (name, args, opts) => callTool(st.mcp, name, args, opts);

before(async () => {
	// sess-old is nine days old: keep it past the default 7-day retention
	// every row in structuredContent, to compare whole lists with SQL: 260
	// models are more than the default tools.max_answer_bytes holds
	st = await startStack({
		name: 'genai',
		env: { SEXTANT_DATABASE_RETENTION_DAYS: '30', SEXTANT_TOOLS_MAX_ANSWER_BYTES: '1048576' },
		post: (url) => batch.post(url),
	});
});

beforeEach(() => st?.srv.assertAlive());

after(async () => {
	if (st) await st.stop();
});

// The default 7-day window of session lookups as the test sees it.
const week = () => ({ from: new Date(Date.now() - 7 * DAY_MS - MIN_MS).toISOString(), to: new Date(Date.now() + MIN_MS).toISOString() });


// ---- comparisons ------------------------------------------------------------------

// Asserts that a stats object of a tool (calls, errors, error_rate_pct,
// tokens, cost, priced/unpriced, percentiles) equals the SQL group and the
// test's own cost of the group's calls.  pct: compare the percentiles.
function assertStats(got, want, calls, pricing, what, { pct = true } = {}) {
	assert.ok(got, `${what}: missing`);
	assert.equal(got.calls, Number(want?.calls ?? 0), `${what}: calls`);
	assert.equal(got.errors, Number(want?.errors ?? 0), `${what}: errors`);
	close(got.error_rate_pct, want?.calls ? (100 * want.errors) / want.calls : 0, `${what}: error_rate_pct`);
	assert.equal(got.input_tokens, Number(want?.input_tokens ?? 0), `${what}: input_tokens`);
	assert.equal(got.output_tokens, Number(want?.output_tokens ?? 0), `${what}: output_tokens`);
	const c = costSum(pricing, calls);
	assert.equal(got.priced_calls, c.priced, `${what}: priced_calls`);
	assert.equal(got.unpriced_calls, c.unpriced, `${what}: unpriced_calls`);
	assert.deepEqual([...got.unpriced_models].sort(), c.unpricedModels, `${what}: unpriced_models`);
	assert.equal(got.cost_complete, c.unpriced === 0, `${what}: cost_complete`);
	// no call at all: $0 or null (the schema says null when no call has a
	// price; nothing is unknown either way)
	if (c.priced === 0 && calls.length === 0) assert.ok(got.cost_usd === null || got.cost_usd === 0, `${what}: cost_usd without calls: ${got.cost_usd}`);
	else if (c.priced === 0) assert.equal(got.cost_usd, null, `${what}: cost_usd without a priced call must be null (unknown), not 0`);
	else close(got.cost_usd, c.cost, `${what}: cost_usd`, { rel: 1e-9, abs: 1e-12 });
	if (pct) {
		if (!want?.calls) {
			assert.equal(got.p50_ms, null, `${what}: p50_ms without calls`);
		} else {
			close(got.p50_ms, want.p50_ms, `${what}: p50_ms`);
			close(got.p95_ms, want.p95_ms, `${what}: p95_ms`);
		}
	}
	return c;
}

// Asserts rows of a tool keyed by key (model or service) against the SQL
// groups, with calls of the group for the cost.
function assertGroups(rows, groups, calls, pricing, key, what, { all = true } = {}) {
	const seen = new Set();
	for (const row of rows) {
		const k = row[key];
		assert.ok(!seen.has(k), `${what}: ${key} ${k} twice`);
		seen.add(k);
		const w = groups.find((g) => g[key] === k);
		assert.ok(w, `${what}: ${key} ${k} is not in SQL`);
		const cs = calls.filter((c) => (key === 'model' ? c.family === k : c.service === k));
		assertStats(row, w, cs, pricing, `${what} ${key} ${k}`);
		if (key === 'model') assert.equal(row.provider, cs[0].provider, `${what} ${k}: provider`);
	}
	if (all) assert.deepEqual([...seen].sort(), groups.map((g) => g[key]).sort(), `${what}: the ${key}s differ from SQL`);
}

const sortDesc = (f) => (a, b) => f(b) - f(a);

// Asserts a call row of a tool (slowest / most expensive) against the SQL
// call.
function assertCall(got, want, pricing, what) {
	assert.equal(got.span_id, want.span_id, `${what}: span_id`);
	assert.equal(got.trace_id, want.trace_id, `${what}: trace_id`);
	assert.equal(got.service, want.service, `${what}: service`);
	assert.equal(got.name, want.name, `${what}: name`);
	assert.equal(got.model, want.model, `${what}: model`);
	assert.equal(got.provider, want.provider, `${what}: provider`);
	close(got.duration_ms, want.duration_ms, `${what}: duration_ms`);
	assert.equal(got.input_tokens, want.input_tokens === null ? null : Number(want.input_tokens), `${what}: input_tokens`);
	assert.equal(got.output_tokens, want.output_tokens === null ? null : Number(want.output_tokens), `${what}: output_tokens`);
	const cost = callCost(pricing, want);
	if (cost === null) assert.equal(got.cost_usd, null, `${what}: an unknown model's cost is null, not 0`);
	else close(got.cost_usd, cost, `${what}: cost_usd`, { rel: 1e-9, abs: 1e-12 });
	assert.equal(got.status, ['unset', 'ok', 'error'][want.status_code], `${what}: status`);
	assert.ok(Math.abs(Date.parse(got.start) - want.start_ms) <= 1, `${what}: start ${got.start}`);
}

// The price printed in a Markdown cell ("$0.0120", "at least $0.0337 (...)").
const dollars = (cell) => /\$([\d,]+\.?\d*)/.exec(cell)?.[1];

// get_session checked against SQL over its own time range.  Returns
// {text, sc, want, calls, pricing}.
async function sessionMatchesSql(args) {
	const { text, sc } = await call('get_session', args);
	assert.equal(sc.found, true, `get_session(${JSON.stringify(args)}) found nothing: ${text.slice(0, 500)}`);
	assert.equal(sc.session_id, args.session_id);
	const range = sc.time_range;
	const pricing = await loadPricing(st.pg.url);
	const spans = await sqlSessionSpans(st.pg.url, args.session_id, range);
	const want = sessionSummary(spans);
	const g = await sqlSessionCalls(st.pg.url, args.session_id, range);
	const what = `get_session(${args.session_id})`;

	assert.equal(sc.traces, want.traces, `${what}: traces`);
	assert.equal(sc.traces_read, want.traces, `${what}: traces_read`);
	assert.equal(sc.truncated, false, `${what}: truncated`);
	assert.equal(sc.spans, want.spans, `${what}: spans (distinct span ids)`);
	assert.equal(sc.errors, want.errors, `${what}: errors`);
	close(sc.error_rate_pct, want.error_rate_pct, `${what}: error_rate_pct`);
	close(sc.duration_ms, want.duration_ms, `${what}: duration_ms`);
	close(sc.avg_trace_ms, want.avg_trace_ms, `${what}: avg_trace_ms`);
	assert.ok(Math.abs(Date.parse(sc.start) - Number(want.start_ns / MS)) <= 1, `${what}: start ${sc.start}`);
	assert.ok(Math.abs(Date.parse(sc.end) - Number(want.end_ns / MS)) <= 1, `${what}: end ${sc.end}`);
	assert.deepEqual(sc.services.map((v) => [v.name, v.spans, v.errors]).sort(), want.services.map((v) => [v.name, v.spans, v.errors]).sort(), `${what}: services`);
	for (let i = 1; i < sc.services.length; i++) assert.ok(sc.services[i - 1].spans >= sc.services[i].spans, `${what}: services not most spans first`);

	assertStats(sc.genai.total, g.total, g.calls, pricing, `${what} total`);
	assertGroups(sc.genai.by_model, g.by_model, g.calls, pricing, 'model', what, { all: g.by_model.length <= 200 });
	if (g.by_model.length > 200) assert.equal(sc.genai.by_model.length, 200, `${what}: by_model holds 200 rows`);

	// the 5 slowest and the 5 most expensive (priced) calls
	const slow = [...g.calls].sort(sortDesc((c) => c.duration_ms)).slice(0, 5);
	assert.equal(sc.slowest_calls.length, Math.min(5, g.calls.length), `${what}: slowest_calls`);
	sc.slowest_calls.forEach((c, i) => assertCall(c, slow[i], pricing, `${what} slowest_calls[${i}]`));
	const dear = g.calls.filter((c) => callCost(pricing, c) !== null).sort(sortDesc((c) => callCost(pricing, c))).slice(0, 5);
	assert.equal(sc.most_expensive_calls.length, dear.length, `${what}: most_expensive_calls`);
	sc.most_expensive_calls.forEach((c, i) => assertCall(c, dear[i], pricing, `${what} most_expensive_calls[${i}]`));

	// the first error spans, the bottleneck
	const errs = spans.filter((s) => s.failed).sort((a, b) => (a.start_ns < b.start_ns ? -1 : 1)).slice(0, 3);
	assert.deepEqual(sc.error_spans.map((e) => e.span_id), errs.map((e) => e.span_id), `${what}: error_spans (the earliest)`);
	sc.error_spans.forEach((e, i) => {
		assert.equal(e.message ?? null, errs[i].status_message, `${what}: error_spans[${i}].message`);
		close(e.self_ms, Number(errs[i].self_ns) / 1e6, `${what}: error_spans[${i}].self_ms`);
	});
	const b = want.bottleneck;
	assert.equal(spans.filter((s) => s.self_ns === b.self_ns).length, 1, 'the data has one largest self time');
	assert.equal(sc.bottleneck?.span_id, b.span_id, `${what}: bottleneck ${JSON.stringify(sc.bottleneck)}, SQL ${b.service}: ${b.name}`);
	close(sc.bottleneck.self_ms, Number(b.self_ns) / 1e6, `${what}: bottleneck.self_ms`);
	const t = spans.filter((s) => s.trace_id === b.trace_id);
	const tStart = t.reduce((m, s) => (s.start_ns < m ? s.start_ns : m), t[0].start_ns);
	const tEnd = t.reduce((m, s) => (s.start_ns + s.duration_ns > m ? s.start_ns + s.duration_ns : m), 0n);
	close(sc.bottleneck.trace_duration_ms, Number(tEnd - tStart) / 1e6, `${what}: bottleneck.trace_duration_ms`);
	return { text, sc, want, g, pricing, spans };
}

// ---- tests ------------------------------------------------------------------------

test('the data is stored as sent: spans per service and source, gen_ai.conversation.id as the session', async () => {
	const got = JSON.parse(await psql(st.pg.url, `SELECT json_object_agg(service_name || ' ' || source, n) FROM
		(SELECT service_name, source, count(*) AS n FROM spans GROUP BY 1, 2) c`));
	const want = {};
	for (const g of batch.groups.values()) want[`${g.service} ${g.source}`] = (want[`${g.service} ${g.source}`] ?? 0) + g.spans.length;
	assert.deepEqual(got, want);
	assert.equal(await psql(st.pg.url, `SELECT count(*) FROM spans WHERE session_id = 'sess-alpha' AND trace_id = '\\x${A.t2}'::bytea`), '6');
});

test('tools/list: get_session, analyze_genai, compare_sessions with output schemas and read-only annotations', () => {
	for (const n of ['get_session', 'analyze_genai', 'compare_sessions']) {
		const t = st.mcp.byName.get(n);
		assert.ok(t, `${n} missing from tools/list`);
		assert.ok(t.outputSchema, `${n}: no outputSchema`);
		assert.equal(t.annotations?.readOnlyHint, true, `${n}: readOnlyHint`);
		assert.match(t.description, /count once|counted again/, `${n}: the description does not state the token rule`);
	}
});

describe('get_session', () => {
	test('sess-alpha: every number equals SQL and the test\'s own cost; nested agents count their tokens once', async () => {
		const { sc, g, pricing } = await sessionMatchesSql({ session_id: ALPHA });
		assert.equal(Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from), 7 * DAY_MS, 'sessions are looked up over 7 days by default');
		// by hand: A1 2 chats, A2 claude + gpt-4.1, A3 the lone agent +
		// acme + embeddings, A4 2 chats, A5 gpt-4.1; the agent spans
		// around chats are not calls
		assert.equal(sc.genai.total.calls, 10);
		assert.equal(sc.genai.total.input_tokens, 1000 + 500 + 2000 + 1000 + 300 + 800 + 5000 + 700 + 2000);
		assert.equal(sc.genai.total.output_tokens, 200 + 100 + 400 + 200 + 50 + 120 + 150 + 500);
		const naive = Number(await psql(st.pg.url, `SELECT sum(gen_ai_input_tokens) FROM spans WHERE session_id = ${"'sess-alpha'"}`));
		assert.ok(naive > sc.genai.total.input_tokens, 'the data has agent spans whose tokens would count twice');
		assert.equal(sc.spans, 21, 'the eBPF copy of the vector-db span counts once, the span without a session id counts');
		assert.deepEqual(sc.genai.total.unpriced_models.sort(), ['acme-llm-9', 'text-embedding-3-small']);
		// a dated name grouped under its family, priced as its base model
		const gpt = sc.genai.by_model.find((m) => m.model === 'gpt-4o');
		assert.deepEqual(gpt.snapshots, ['gpt-4o-2024-08-06']);
		const fam = g.calls.filter((c) => c.family === 'gpt-4o');
		assert.ok(fam.some((c) => c.model === 'gpt-4o') && fam.some((c) => c.model === 'gpt-4o-2024-08-06'), 'calls with and without the dated model');
		assert.equal(gpt.calls, fam.length);
		close(gpt.cost_usd, fam.reduce((t, c) => t + callCost(pricing, c), 0), 'each call at its exact model\'s price, summed');
		close(fam.filter((c) => c.model === 'gpt-4o-2024-08-06').reduce((t, c) => t + callCost(pricing, c), 0), (1000 * 2.5 + 200 * 10) / 1e6, 'gpt-4o-2024-08-06 at the gpt-4o price');
		assert.ok(!sc.genai.by_model.some((m) => m.model === 'gpt-4o-2024-08-06'), 'no row of its own for the snapshot');
		const claude = sc.genai.by_model.find((m) => m.model === 'claude-sonnet-4');
		assert.deepEqual(claude.snapshots, ['claude-sonnet-4-20250514']);
		close(claude.cost_usd, (2000 * 3 + 400 * 15) / 1e6, 'claude-sonnet-4-20250514 at the claude-sonnet-4 price');
		assert.ok(g.calls.every((c) => ![A.t1].includes(c.trace_id) || c.op === 'chat'), 'no agent span of A1 is a call');
		assert.ok(pricing.length > 0);
	});

	test('text: the by-model table equals structuredContent; unknown models say so and name the model, never $0; the total says "at least"', async () => {
		const { text, sc } = await call('get_session', { session_id: ALPHA });
		const t = mdTable(text, /\|\s*Model\s*\|/);
		assert.ok(t, `no Model table in:\n${text}`);
		const col = (n) => t.header.findIndex((h) => new RegExp(`^${n}`, 'i').test(h));
		for (const m of sc.genai.by_model) {
			const row = t.rows.find((r) => r[col('Model')].replace(/ \(snapshots? .*\)$/, '') === m.model);
			assert.ok(row, `no row for ${m.model}`);
			for (const snap of m.snapshots) assert.ok(row[col('Model')].includes(snap), `${m.model}: snapshot ${snap} named`);
			assert.equal(Number(row[col('Calls')].replace(/,/g, '')), m.calls, `${m.model}: Calls`);
			assert.equal(Number(row[col('Input')].replace(/,/g, '')), m.input_tokens, `${m.model}: Input tokens`);
			assert.equal(Number(row[col('Output')].replace(/,/g, '')), m.output_tokens, `${m.model}: Output tokens`);
			const cost = row[col('Cost')];
			if (m.cost_usd === null) {
				assert.match(cost, new RegExp(`unknown \\(model ${m.model.replace(/[.]/g, '\\.')} has no price\\)`), `${m.model}: Cost`);
				assert.doesNotMatch(cost, /\$0(\.0*)?(?![\d.])/, `${m.model}: an unknown cost shown as $0`);
			} else {
				rendered(dollars(cost), m.cost_usd, `${m.model}: Cost`);
			}
		}
		const m = /at least \$([\d,.]+) \((\d+) calls? of unpriced models: ([^)]*)\)/.exec(text);
		assert.ok(m, `no "at least $X (N calls of unpriced models: ...)" in:\n${text}`);
		rendered(m[1], sc.genai.total.cost_usd, 'the total cost');
		assert.equal(Number(m[2]), 2);
		assert.deepEqual(m[3].split(/,\s*/).sort(), ['acme-llm-9', 'text-embedding-3-small']);
		assert.match(text, /## Session sess-alpha/);
		assert.match(text, /Bottleneck[^\n]*agent-runner: chat claude-sonnet-4/);
	});

	test('a price change between two calls: calls after effective_from take the new price, earlier calls keep the old one', async () => {
		const before1 = await sessionMatchesSql({ session_id: ALPHA });
		const old = before1.sc.genai.by_model.find((m) => m.model === 'gpt-4.1');
		close(old.cost_usd, (1000 * 2 + 200 * 8 + 2000 * 2 + 500 * 8) / 1e6, 'gpt-4.1 at the seeded price');
		const usage1 = await call('analyze_genai', { time_range: '1h', model: 'gpt-4.1' });
		close(usage1.sc.total.cost_usd, old.cost_usd, 'analyze_genai gpt-4.1 before');
		await psql(st.pg.url, `INSERT INTO model_pricing (provider, model, input_usd_per_million, output_usd_per_million, effective_from, note)
			VALUES ('openai', 'gpt-4.1', 1.00, 4.00, to_timestamp(${PRICE_CHANGE_MS / 1000}), 'price cut (test)')`);
		try {
			const after1 = await sessionMatchesSql({ session_id: ALPHA });
			const cut = after1.sc.genai.by_model.find((m) => m.model === 'gpt-4.1');
			close(cut.cost_usd, (1000 * 2 + 200 * 8 + 2000 * 1 + 500 * 4) / 1e6, 'gpt-4.1: A2 at the old price, A5 at the new one');
			close(after1.sc.genai.total.cost_usd - before1.sc.genai.total.cost_usd, -(2000 * 1 + 500 * 4) / 1e6, 'the total changes by A5\'s saving only', { abs: 1e-12 });
			const a5 = after1.sc.slowest_calls.find((c) => c.span_id === A.g41b);
			close(a5.cost_usd, (2000 * 1 + 500 * 4) / 1e6, 'the A5 call at the new price');
			const usage2 = await call('analyze_genai', { time_range: '1h', model: 'gpt-4.1' });
			close(usage2.sc.total.cost_usd, cut.cost_usd, 'analyze_genai gpt-4.1 after');
			const spans = await call('query_spans', { trace_id: A.t2 });
			const a2 = spans.sc.spans.find((x) => x.span_id === A.g41a);
			close(a2.gen_ai.cost_usd, (1000 * 2 + 200 * 8) / 1e6, 'query_spans: the A2 call keeps the old price');
		} finally {
			await psql(st.pg.url, `DELETE FROM model_pricing WHERE note = 'price cut (test)'`);
		}
	});

	test('sess-beta and sess-zoo (260 models without a price) equal SQL; the zoo answer fits the budget', async () => {
		await sessionMatchesSql({ session_id: BETA });
		const { sc, text } = await sessionMatchesSql({ session_id: ZOO });
		assert.equal(sc.genai.total.unpriced_calls, ZOO_MODELS);
		assert.equal(sc.genai.total.unpriced_models.length, ZOO_MODELS);
		close(sc.genai.total.cost_usd, (100 * 2.5 + 10 * 10) / 1e6, 'the one priced call');
		assert.match(text, /at least \$/);
		assert.match(text, /\d+ more/, 'the by-model table is cut with "N more"');
	});

	test('not found: "no session X in the last 7 days; recent sessions: ...", the most recently active sessions as SQL lists them', async () => {
		const { text, sc } = await call('get_session', { session_id: 'sess-nope' });
		assert.equal(sc.found, false);
		assert.match(text, /^no session sess-nope in the last 7 days; recent sessions: /m);
		const want = await psqlJsonRecent(sc.time_range);
		assert.deepEqual(sc.recent_sessions.map((r) => r.session_id), want.slice(0, 5).map((r) => r.session_id));
		for (const r of sc.recent_sessions) {
			const w = want.find((x) => x.session_id === r.session_id);
			assert.equal(r.service, w.service, `${r.session_id}: service of its first span`);
			assert.ok(Math.abs(Date.parse(r.start) - w.start_ms) <= 1, `${r.session_id}: start ${r.start}`);
			assert.equal(r.similar, false);
			assert.match(text, new RegExp(r.session_id));
		}
	});

	test('not found, similar ids first: another case, a prefix', async () => {
		const a = await call('get_session', { session_id: 'SESS-ALPHA' });
		assert.equal(a.sc.found, false);
		assert.equal(a.sc.recent_sessions[0].session_id, ALPHA);
		assert.equal(a.sc.recent_sessions[0].similar, true);
		const p = await call('get_session', { session_id: 'sess-gen' });
		assert.equal(p.sc.found, false);
		assert.equal(p.sc.recent_sessions.length, 5);
		const want = (await psqlJsonRecent(p.sc.time_range)).filter((r) => r.session_id.startsWith('sess-gen'));
		assert.deepEqual(p.sc.recent_sessions.map((r) => [r.session_id, r.similar]), want.slice(0, 5).map((r) => [r.session_id, true]));
	});

	test('sess-old (9 days ago): not found in the default 7 days, found with time_range 30d', async () => {
		const { sc, text } = await call('get_session', { session_id: OLD });
		assert.equal(sc.found, false);
		assert.match(text, /no session sess-old in the last 7 days/);
		const { sc: sc30 } = await sessionMatchesSql({ session_id: OLD, time_range: '30d' });
		assert.equal(sc30.genai.total.calls, 1);
	});

	test('bad arguments name the field', async () => {
		assert.match(await callRefused(st.mcp, 'get_session', { session_id: '' }), /session_id/);
		assert.match(await callRefused(st.mcp, 'get_session', { session_id: ALPHA, time_range: 'fortnight-ish' }), /time_range/);
	});
});

// The sessions with spans in range, most recently active first:
// [{session_id, service (of its first span), start_ms (first span)}].
async function psqlJsonRecent({ from, to }) {
	const rows = JSON.parse(await psql(st.pg.url, `SELECT coalesce(json_agg(x ORDER BY x.last DESC, x.session_id), '[]') FROM (
		SELECT DISTINCT ON (session_id) session_id, service_name AS service, (extract(epoch FROM start_time) * 1000)::float8 AS start_ms,
			max(start_time) OVER (PARTITION BY session_id) AS last
		FROM spans WHERE session_id IS NOT NULL AND start_time >= ${"'"}${from}'::timestamptz AND start_time < '${to}'::timestamptz
		ORDER BY session_id, start_time) x`));
	return rows;
}

describe('analyze_genai', () => {
	// analyze_genai checked against SQL over its range and the previous
	// period.  Returns {text, sc, cur, prev, pricing}.
	async function usageMatchesSql(args) {
		const { text, sc } = await call('analyze_genai', args);
		const what = `analyze_genai(${JSON.stringify(args)})`;
		const pricing = await loadPricing(st.pg.url);
		const len = Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from);
		assert.equal(Date.parse(sc.previous_range.to), Date.parse(sc.time_range.from), `${what}: the previous period ends where the range starts`);
		assert.equal(Date.parse(sc.time_range.from) - Date.parse(sc.previous_range.from), len, `${what}: the previous period is as long`);
		const cur = await sqlUsage(st.pg.url, { ...sc.time_range, service: args.service, model: args.model });
		const prev = await sqlUsage(st.pg.url, { ...sc.previous_range, service: args.service, model: args.model });
		const c = assertStats(sc.total, cur.total, cur.calls, pricing, `${what} total`);
		const p = assertStats(sc.previous, prev.total, prev.calls, pricing, `${what} previous`, { pct: false });
		assert.equal(sc.previous.p50_ms, null, `${what}: previous has no percentiles`);
		// the change: absolute, and % of the previous value (null for 0)
		const rate = (t) => (Number(t.calls) ? (100 * t.errors) / t.calls : 0);
		const pairs = {
			calls: [Number(cur.total.calls), Number(prev.total.calls)],
			input_tokens: [Number(cur.total.input_tokens), Number(prev.total.input_tokens)],
			output_tokens: [Number(cur.total.output_tokens), Number(prev.total.output_tokens)],
			cost_usd: [c.cost, p.cost],
			error_rate_pct: [rate(cur.total), rate(prev.total)],
		};
		for (const [k, [now, before]] of Object.entries(pairs)) {
			close(sc.change[k].absolute, now - before, `${what}: change.${k}.absolute`, { abs: 1e-9 });
			if (before === 0) assert.equal(sc.change[k].pct, null, `${what}: change.${k}.pct with a previous 0`);
			else close(sc.change[k].pct, (100 * (now - before)) / before, `${what}: change.${k}.pct`);
		}
		// by model and service: every group when they fit the 200 rows
		assert.equal(sc.models_total, cur.by_model.length, `${what}: models_total`);
		assert.equal(sc.services_total, cur.by_service.length, `${what}: services_total`);
		assertGroups(sc.by_model, cur.by_model, cur.calls, pricing, 'model', `${what} by_model`, { all: cur.by_model.length <= 200 });
		assertGroups(sc.by_service, cur.by_service, cur.calls, pricing, 'service', `${what} by_service`);
		if (cur.by_model.length > 200) assert.equal(sc.by_model.length, 200, `${what}: by_model holds 200 rows`);
		// top sessions by cost (the priced part)
		const sessions = new Map();
		for (const call1 of cur.calls.filter((x) => x.session_id)) {
			if (!sessions.has(call1.session_id)) sessions.set(call1.session_id, []);
			sessions.get(call1.session_id).push(call1);
		}
		assert.equal(sc.sessions_total, sessions.size, `${what}: sessions_total`);
		const ranked = [...sessions.entries()].map(([id, cs]) => ({ id, cs, cost: costSum(pricing, cs) }))
			.filter((x) => x.cost.priced > 0).sort((a, b) => b.cost.cost - a.cost.cost);
		const n = Math.min(5, ranked.length);
		assert.deepEqual(sc.top_sessions.slice(0, n).map((x) => x.session_id), ranked.slice(0, n).map((x) => x.id), `${what}: top_sessions by cost`);
		for (const [i, row] of sc.top_sessions.slice(0, n).entries()) {
			const want = ranked[i];
			assertStats(row, sqlGroupOf(want.cs), want.cs, pricing, `${what} top_sessions ${want.id}`, { pct: false });
			const first = [...want.cs].sort((a, b) => a.start_ms - b.start_ms)[0];
			assert.equal(row.service, first.service, `${what} top_sessions ${want.id}: service of its first call`);
		}
		return { text, sc, cur, prev, pricing };
	}

	// A SQL-like group of calls (counts and tokens) computed from the
	// SQL calls, for the session rows.
	function sqlGroupOf(cs) {
		return {
			calls: cs.length,
			errors: cs.filter((c) => c.failed).length,
			input_tokens: cs.reduce((a, c) => a + Number(c.input_tokens ?? 0), 0),
			output_tokens: cs.reduce((a, c) => a + Number(c.output_tokens ?? 0), 0),
		};
	}

	test('24h: totals, previous period, change, by model, by service and top sessions equal SQL; more models than fit', async () => {
		const { sc, text, cur, prev } = await usageMatchesSql({ time_range: '24h' });
		assert.equal(Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from), DAY_MS);
		assert.ok(Number(prev.total.calls) > 0 && Number(cur.total.calls) > Number(prev.total.calls), 'the data has calls in both periods');
		assert.ok(cur.by_model.length > 200, 'the data has more than 200 models');
		assert.match(text, /at least \$/);
		assert.match(text, /acme-llm-9/);
		assert.match(text, /\d+ more/, 'the model table is cut with "N more"');
		assert.match(text, /previous/i);
		// the change table: Calls row with both values and the change
		const t = mdTable(text, /\|\s*Metric\s*\|/);
		assert.ok(t, `no change table in:\n${text}`);
		const callsRow = t.rows.find((r) => /^Calls$/.test(r[0]));
		assert.ok(callsRow, 'no Calls row');
		assert.ok(callsRow.some((cell) => cell.replace(/,/g, '') === String(sc.total.calls)), `Calls row ${callsRow}`);
		assert.ok(callsRow.some((cell) => cell.replace(/,/g, '') === String(sc.previous.calls)), `Calls row ${callsRow}`);
		assert.ok(callsRow.some((cell) => new RegExp(`^\\+?${sc.change.calls.pct.toFixed(1)}%$`).test(cell)), `Calls row ${callsRow}: change ${sc.change.calls.pct}%`);
	});

	test('the default range is the last hour; its numbers equal SQL', async () => {
		const { sc } = await usageMatchesSql({});
		assert.equal(Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from), HOUR_MS);
		assert.ok(Math.abs(Date.parse(sc.time_range.to) - Date.now()) < 15000);
		assert.equal(sc.total.calls, 10, 'the last hour holds sess-alpha\'s ten calls');
	});

	test('filters: one service, one model (request or response model), both; 30d reaches sess-old', async () => {
		await usageMatchesSql({ time_range: '24h', service: 'agent-runner' });
		const m = await usageMatchesSql({ time_range: '24h', model: 'gpt-4o' });
		assert.ok(m.sc.by_model.some((r) => r.model === 'gpt-4o' && r.snapshots.includes('gpt-4o-2024-08-06')), 'a call requested as gpt-4o answered by a dated model is a gpt-4o call');
		assert.equal(m.sc.filters.model, 'gpt-4o');
		await usageMatchesSql({ time_range: '24h', service: 'chat-api', model: 'gpt-4o' });
		const w = await usageMatchesSql({ time_range: '30d' });
		assert.ok(w.cur.calls.some((c) => c.session_id === OLD));
	});

	test('a service as people name it: the one service meant, and the answer says from what', async () => {
		const exact = await call('analyze_genai', { time_range: '24h', service: 'agent-runner' });
		assert.doesNotMatch(exact.text, /^service: /m, 'the exact name takes no note');
		assert.ok(exact.sc.total.calls > 0);
		for (const given of ['Agent Runner', 'the agent runner service', 'AGENT_RUNNER']) {
			const r = await call('analyze_genai', { time_range: '24h', service: given });
			assert.match(r.text, new RegExp(`^service: agent-runner \\(from "${given}"\\)$`, 'm'), r.text);
			assert.deepEqual(r.sc.total, exact.sc.total, `${given}: the totals of agent-runner`);
			assert.deepEqual(r.sc.by_service.map((g) => g.service), ['agent-runner'], given);
		}
		// a typo is not guessed: no calls, and the closest names
		const typo = await call('analyze_genai', { time_range: '24h', service: 'agnet-runner' });
		assert.equal(typo.sc.total.calls, 0);
		assert.doesNotMatch(typo.text, /^service: /m);
		assert.match(typo.text, /agent-runner/, typo.text);
	});

	test('no calls: zero counts, null cost and percentiles, an answer that says so', async () => {
		const { sc, text } = await usageMatchesSql({ time_range: '24h', model: 'no-such-model' });
		assert.equal(sc.total.calls, 0);
		assert.deepEqual(sc.by_model, []);
		assert.match(text, /no (GenAI )?calls|no-such-model/i);
	});

	test('bad arguments name the field', async () => {
		assert.match(await callRefused(st.mcp, 'analyze_genai', { time_range: 'fortnight-ish' }), /time_range/);
		assert.match(await callRefused(st.mcp, 'analyze_genai', { from: 'yesterday-ish' }), /from/);
	});
});

describe('models as users think of them', () => {
	const range = () => ({ from: new Date(NOW_MS - 52 * HOUR_MS - MIN_MS).toISOString(), to: new Date(NOW_MS - 50 * HOUR_MS + MIN_MS).toISOString(), service: HD.service });

	test('a failed call naming only its request model and the dated successes: one gpt-4o row, 26 of 1,321 failed (2.0%), the snapshot named, cost per exact model', async () => {
		const { text, sc } = await call('analyze_genai', range());
		assert.deepEqual(sc.by_model.map((m) => m.model), ['gpt-4o', 'gpt-4o-mini'], 'snapshots and request-only calls in their family, gpt-4o-mini apart');
		const [gpt, mini] = sc.by_model;
		assert.equal(gpt.calls, 1321);
		assert.equal(gpt.errors, 26, 'the 20 HTTP 429s without a span status fail too');
		close(gpt.error_rate_pct, (100 * 26) / 1321, 'error rate');
		assert.deepEqual(gpt.snapshots, ['gpt-4o-2024-08-06']);
		assert.deepEqual(mini.snapshots, ['gpt-4o-mini-2024-07-18']);
		assert.equal(mini.errors, 0);
		close(gpt.cost_usd, HD.cost, 'gpt-4o: each call at its exact model\'s price', { rel: 1e-9 });
		close(mini.cost_usd, HD.miniCost, 'gpt-4o-mini priced as itself, not as gpt-4o', { rel: 1e-9 });
		assert.equal(sc.total.errors, 26);
		const t = mdTable(text, /\|\s*Model\s*\|/);
		const row = t.rows.find((r) => r[0].startsWith('gpt-4o (snapshot gpt-4o-2024-08-06)'));
		assert.ok(row, `no gpt-4o row naming its snapshot in:\n${text}`);
		assert.equal(row[t.header.indexOf('Calls')], '1,321');
		assert.equal(row[t.header.indexOf('Error rate')], '2.0%');
		assert.ok(!t.rows.some((r) => r[0].startsWith('gpt-4o-2024-08-06')), 'no row of its own for the snapshot');
		assert.ok(t.rows.some((r) => r[0].startsWith('gpt-4o-mini (snapshot gpt-4o-mini-2024-07-18)')));
		// the family filter takes the dated calls and the request-only ones
		const f = await call('analyze_genai', { ...range(), model: 'gpt-4o' });
		assert.equal(f.sc.total.calls, 1321);
		assert.equal(f.sc.total.errors, 26);
	});

	test('sessions least expensive first (order cost_asc), both ways on request', async () => {
		const asc = await call('analyze_genai', { ...range(), order: 'cost_asc' });
		const ids = asc.sc.least_expensive_sessions.map((x) => x.session_id);
		assert.deepEqual(ids, ['hd-00', 'hd-01', 'hd-02', 'hd-03', 'hd-04']);
		assert.deepEqual(asc.sc.top_sessions.map((x) => x.session_id), ['hd-09', 'hd-08', 'hd-07', 'hd-06', 'hd-05']);
		const t = mdTable(asc.text, /\|\s*Session\s*\|/);
		assert.deepEqual(t.rows.map((r) => r[0]), ids, 'the text lists the cheapest first');
		assert.match(asc.text, /### Least expensive sessions \(5 of 10\)/);
		assert.doesNotMatch(asc.text, /Top sessions by cost/);
		const both = await call('analyze_genai', { ...range(), order: 'both' });
		assert.match(both.text, /### Top sessions by cost \(5 of 10\)[^]*### Least expensive sessions \(5 of 10\)/);
		const dflt = await call('analyze_genai', range());
		assert.doesNotMatch(dflt.text, /Least expensive/, 'most expensive only by default');
		assert.match(await callRefused(st.mcp, 'analyze_genai', { ...range(), order: 'cheapest' }), /order/);
	});

	test('get_session without a session_id: the sessions of the range by cost, most and least expensive, as SQL ranks them', async () => {
		const { text, sc } = await call('get_session', {});
		const pricing = await loadPricing(st.pg.url);
		const cur = await sqlUsage(st.pg.url, sc.time_range);
		const by = new Map();
		for (const c of cur.calls.filter((x) => x.session_id)) by.set(c.session_id, [...(by.get(c.session_id) ?? []), c]);
		assert.equal(sc.sessions_total, by.size);
		const ranked = [...by.entries()].map(([id, cs]) => ({ id, n: cs.length, cost: costSum(pricing, cs) })).filter((x) => x.cost.priced > 0);
		const desc = [...ranked].sort((a, b) => b.cost.cost - a.cost.cost || b.n - a.n).slice(0, 5).map((x) => x.id);
		const asc = [...ranked].sort((a, b) => a.cost.cost - b.cost.cost || a.n - b.n).slice(0, 5).map((x) => x.id);
		assert.deepEqual(sc.top_sessions.map((x) => x.session_id), desc);
		assert.deepEqual(sc.least_expensive_sessions.map((x) => x.session_id), asc);
		assert.match(text, /### Top sessions by cost[^]*### Least expensive sessions/);
		const one = await call('get_session', { order: 'cost_asc' });
		assert.doesNotMatch(one.text, /Top sessions by cost/);
		assert.deepEqual(one.sc.least_expensive_sessions.map((x) => x.session_id), asc);
	});
});

describe('compare_sessions', () => {
	test('sess-alpha vs sess-beta: the table and structuredContent equal SQL, Diff = B against A in %', async () => {
		const { text, sc } = await call('compare_sessions', { session_id_1: ALPHA, session_id_2: BETA });
		const pricing = await loadPricing(st.pg.url);
		const rows = {};
		for (const [k, id] of [['a', ALPHA], ['b', BETA]]) {
			const spans = await sqlSessionSpans(st.pg.url, id, sc.time_range);
			const g = await sqlSessionCalls(st.pg.url, id, sc.time_range);
			rows[k] = { sum: sessionSummary(spans), g, cost: costSum(pricing, g.calls) };
		}
		const want = {
			'Total Spans': (r) => r.sum.spans,
			'Error Rate': (r) => r.sum.error_rate_pct,
			'Avg Latency': (r) => r.sum.avg_trace_ms,
			'Total Tokens': (r) => Number(r.g.total.input_tokens) + Number(r.g.total.output_tokens),
			'Estimated Cost': (r) => r.cost.cost,
		};
		assert.deepEqual(sc.metrics.map((m) => m.metric), Object.keys(want));
		for (const m of sc.metrics) {
			const a = want[m.metric](rows.a);
			const b = want[m.metric](rows.b);
			close(m.a, a, `${m.metric} A`);
			close(m.b, b, `${m.metric} B`);
			close(m.diff_pct, (100 * (b - a)) / a, `${m.metric} diff_pct`);
		}
		sc.sessions.forEach((s, i) => {
			const r = rows[i ? 'b' : 'a'];
			assert.equal(s.session_id, i ? BETA : ALPHA);
			assert.equal(s.found, true);
			assert.equal(s.traces, r.sum.traces);
			assert.equal(s.spans, r.sum.spans);
			assert.equal(s.errors, r.sum.errors);
			close(s.avg_latency_ms, r.sum.avg_trace_ms, `${s.session_id} avg_latency_ms`);
			assertStats(s.genai, r.g.total, r.g.calls, pricing, `${s.session_id} genai`);
			assert.equal(s.bottleneck.span_id, r.sum.bottleneck.span_id, `${s.session_id} bottleneck`);
		});
		// the Markdown table
		const t = mdTable(text, /\|\s*Metric\s*\|\s*Session A\s*\|\s*Session B\s*\|\s*Diff\s*\|/);
		assert.ok(t, `no table "Metric | Session A | Session B | Diff" in:\n${text}`);
		for (const m of sc.metrics) {
			const row = t.rows.find((r) => r[0] === m.metric);
			assert.ok(row, `no row ${m.metric}`);
			assert.match(row[3], new RegExp(`^[+-]?${Math.abs(m.diff_pct).toFixed(1)}%$`), `${m.metric}: Diff ${row[3]}, ${m.diff_pct}`);
		}
		const spansRow = t.rows.find((r) => r[0] === 'Total Spans');
		assert.equal(spansRow[1].replace(/,/g, ''), String(rows.a.sum.spans));
		assert.equal(spansRow[2].replace(/,/g, ''), String(rows.b.sum.spans));
		assert.match(t.rows.find((r) => r[0] === 'Estimated Cost')[1], /at least \$/, 'A\'s cost is a lower bound');
		// Key Differences: the metric that differs most, each bottleneck
		const kd = text.split('### Key Differences')[1];
		assert.ok(kd, `no "### Key Differences" in:\n${text}`);
		const bullets = kd.split('\n').filter((l) => /^\s*[-*] /.test(l));
		assert.ok(bullets.length >= 3, `Key Differences bullets:\n${kd}`);
		const most = [...sc.metrics].sort((x, y) => Math.abs(y.diff_pct) - Math.abs(x.diff_pct))[0];
		assert.match(bullets[0], new RegExp(most.metric), `the first bullet names the metric that differs most (${most.metric})`);
		for (const [r, who] of [[rows.a, 'A'], [rows.b, 'B']]) {
			const b = r.sum.bottleneck;
			assert.ok(bullets.some((l) => l.includes(`${b.service}: ${b.name}`) && l.includes(who)), `no bullet with ${who}'s bottleneck ${b.service}: ${b.name}`);
		}
		assert.deepEqual(sc.key_differences.length, bullets.length);
	});

	test('a session not found: said so with recent sessions, the other one still described', async () => {
		const { text, sc } = await call('compare_sessions', { session_id_1: ALPHA, session_id_2: 'sess-nope' });
		assert.match(text, /no session sess-nope in the last 7 days/);
		assert.deepEqual(sc.missing.map((m) => [m.session_id, m.found]), [['sess-nope', false]]);
		assert.ok(sc.missing[0].recent_sessions.length > 0);
	});
});

// tooltest.mjs - what the tool tests of issue 5 (spans, genai, redact)
// share: one private PostgreSQL and one gateway per file, an SDK client that
// lists every tool (so the SDK checks each structuredContent against its
// outputSchema), a call() that also checks the answer's size against the
// character budget, number comparisons, and the model prices of
// model_pricing applied in JavaScript (the test's own cost, never the
// store's sextant_genai_cost_usd).

import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { request } from './http.mjs';
import { SDK_NAME, attrs } from './otlpjson.mjs';
import { startPostgres } from './pg.mjs';
import { psqlJson } from './pgjson.mjs';
import { startServer } from './server.mjs';

export const MS = 1000000n; // ns per ms
export const MIN_MS = 60000;
export const HOUR_MS = 60 * MIN_MS;
export const DAY_MS = 24 * HOUR_MS;
// [tools] max_answer_chars by default
export const BUDGET = 16000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Deterministic randomness (mulberry32): a function giving 0 <= x < 1.
export function rng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

// SQL literals.
// OpenTelemetry's rule for a failed span, written out for the tests'
// own SQL (the gateway has it as sextant_span_outcome): span status
// ERROR; a gRPC code decides before an HTTP status: on a SERVER span only
// UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and
// DATA_LOSS are errors and every other non-OK code a client error, on
// other spans every non-OK code is an error; HTTP: 5xx errors, 4xx client
// errors on a SERVER span and errors on others.  Over a row of spans.
const SERVER_GRPC_ERRORS = '(2, 4, 12, 13, 14, 15)';
export const SQL_FAILED = `(status_code = 2 OR CASE
	WHEN rpc_grpc_status_code > 0 THEN kind <> 2 OR rpc_grpc_status_code IN ${SERVER_GRPC_ERRORS}
	WHEN rpc_grpc_status_code = 0 THEN false
	ELSE coalesce(http_status_code >= 500 OR (kind <> 2 AND http_status_code >= 400), false) END)`;
export const SQL_CLIENT_ERROR = `(status_code <> 2 AND kind = 2 AND CASE
	WHEN rpc_grpc_status_code > 0 THEN rpc_grpc_status_code NOT IN ${SERVER_GRPC_ERRORS}
	WHEN rpc_grpc_status_code = 0 THEN false
	ELSE coalesce(http_status_code BETWEEN 400 AND 499, false) END)`;

export const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
export const hexLit = (h) => {
	assert.match(h, /^[0-9a-f]+$/);
	return `'\\x${h}'::bytea`;
};

// test/conformance.toml with the conformance fixtures off (with them on,
// tools/list shows only the fixtures).
export const TOOL_ENV = { SEXTANT_CONFORMANCE_ENABLED: 'false' };
// The default sets and the eBPF plumbing tools (query_ebpf_*), which are
// listed only when [tools] enabled_sets names "ebpf".
export const EBPF_ENV = { SEXTANT_TOOLS_ENABLED_SETS: 'core,query,spans,genai,mesh,ebpf' };

export const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// A connected SDK client with every tool listed: {client, tools, byName};
// capabilities: the client's (e.g. extensions it declares).
export async function connect(server, name = 'sextant-tool-test', { capabilities } = {}) {
	const client = new Client({ name, version: '1.0.0' }, capabilities ? { capabilities } : undefined);
	await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl)));
	const tools = [];
	let cursor;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		tools.push(...page.tools);
		cursor = page.nextCursor;
	} while (cursor);
	return { client, tools, byName: new Map(tools.map((t) => [t.name, t])) };
}

// One PostgreSQL and one gateway (env: extra SEXTANT_* settings), data
// posted through /v1/traces by post(srv.url) once the gateway is up, and a
// client.  stop() closes the clients and stops both, failing on an unclean
// gateway exit or a sanitizer report.
export async function startStack({ name, env = {}, post }) {
	const st = { pg: null, srv: null, mcp: null, clients: [] };
	st.pg = await startPostgres({ name });
	try {
		st.srv = await startServer({ name, env: { DATABASE_URL: st.pg.url, ...TOOL_ENV, ...env } });
		if (post) await post(st.srv.url);
		st.mcp = await connect(st.srv, name);
		st.clients.push(st.mcp.client);
	} catch (e) {
		if (st.srv) await st.srv.kill();
		await st.pg.stop().catch(() => {});
		throw e;
	}
	st.stop = async () => {
		for (const c of st.clients) await c.close().catch(() => {});
		try {
			if (st.srv) await st.srv.stop();
		} finally {
			await st.pg.stop();
		}
	};
	return st;
}

// Asserts that a tool answer fits the character budget by itself: at most
// BUDGET characters of text, and not cut by the call layer's safety net
// (its note "[answer cut at ...]" means the tool overran).
export function assertFits(text, what, budget = BUDGET) {
	assert.ok(text.length <= budget, `${what}: ${text.length} characters of text, budget ${budget}`);
	assert.doesNotMatch(text, /\[answer cut at \d+ of \d+ characters/, `${what}: the tool overran the budget and was cut by the call layer`);
}

// Calls a tool on mcp; asserts isError is as expected, that a success has
// structuredContent, and that the text fits the budget.  Returns
// {r, text, sc}.
export async function callTool(mcp, name, args, { expectError = false, budget = BUDGET } = {}) {
	const r = await mcp.client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
	const text = textOf(r);
	const show = `${name}(${JSON.stringify(args)}) -> ${text.slice(0, 3000)}`;
	assert.equal(r.isError === true, expectError, `isError ${r.isError}: ${show}`);
	if (!expectError) assert.ok(r.structuredContent, `no structuredContent: ${show}`);
	assertFits(text, `${name}(${JSON.stringify(args)})`, budget);
	return { r, text, sc: r.structuredContent };
}

// A call that bad arguments refuse: an isError result, or a JSON-RPC
// invalid-params error when the input schema rejects them first.  Returns
// the message.
export async function callRefused(mcp, name, args) {
	try {
		const r = await mcp.client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
		assert.equal(r.isError, true, `${name}(${JSON.stringify(args)}) accepted: ${textOf(r).slice(0, 1000)}`);
		return textOf(r);
	} catch (e) {
		if (e?.code !== -32602) throw e;
		return e.message;
	}
}

// Tolerance of a tool number against the test's value: relative rel, and
// at least abs.
export function close(got, want, what, { rel = 1e-6, abs = 1e-9 } = {}) {
	assert.equal(typeof got, 'number', `${what}: not a number: ${JSON.stringify(got)}`);
	assert.equal(typeof want, 'number', `${what}: the expected value is not a number: ${JSON.stringify(want)}`);
	const tol = Math.max(rel * Math.abs(want), abs);
	assert.ok(Math.abs(got - want) <= tol, `${what}: tool ${got}, SQL ${want} (tolerance ${tol})`);
}

// Asserts that a number as printed (thousands separators, a leading $ and
// a trailing unit allowed) is value to the precision it was printed with.
export function rendered(textNum, value, what) {
	const s = String(textNum).replace(/[$,%\s]|ms$|s$/g, '');
	const dec = s.includes('.') ? s.length - s.indexOf('.') - 1 : 0;
	const tol = 0.5 * 10 ** -dec + 1e-9 + 1e-9 * Math.abs(value);
	assert.ok(Math.abs(Number(s) - value) <= tol, `${what}: printed ${textNum}, value ${value}`);
}

// Every string anywhere in v (keys and values), with its path.
export function strings(v, path = '$', out = []) {
	if (typeof v === 'string') out.push({ path, s: v });
	else if (Array.isArray(v)) v.forEach((x, i) => strings(x, `${path}[${i}]`, out));
	else if (v && typeof v === 'object') {
		for (const [k, x] of Object.entries(v)) {
			out.push({ path: `${path}{key}`, s: k });
			strings(x, `${path}.${k}`, out);
		}
	}
	return out;
}

// Asserts that none of secrets (strings) appears in the text or anywhere in
// the structuredContent of an answer.
export function assertNoSecrets({ text, sc }, secrets, what) {
	for (const secret of secrets) {
		const i = text.indexOf(secret);
		assert.equal(i, -1, `${what}: text shows ${JSON.stringify(secret)}: ...${text.slice(Math.max(0, i - 200), i + 100)}...`);
		const hit = strings(sc ?? {}).find((x) => x.s.includes(secret));
		assert.equal(hit, undefined, `${what}: structuredContent shows ${JSON.stringify(secret)} at ${hit?.path}: ${hit?.s.slice(0, 300)}`);
	}
}

// Markdown table rows of text under the first header line matching
// headerRe (the header cells, then every row up to the first line that is
// not a table row), as arrays of trimmed cells.  null when there is no such
// table.
export function mdTable(text, headerRe) {
	const lines = text.split('\n');
	const h = lines.findIndex((l) => l.trim().startsWith('|') && headerRe.test(l));
	if (h < 0) return null;
	const cells = (l) => {
		const t = l.trim().replace(/^\|/, '').replace(/\|$/, '');
		// cells are escaped by render_md_row: "\|" inside a cell
		return t.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
	};
	const header = cells(lines[h]);
	const rows = [];
	for (let i = h + 1; i < lines.length; i++) {
		const l = lines[i].trim();
		if (!l.startsWith('|')) break;
		if (/^\|[\s:|-]+\|$/.test(l)) continue; // the rule
		rows.push(cells(l));
	}
	return { header, rows };
}

// Spans grouped by (service, source, extra resource attributes such as
// service.namespace), posted as OTLP/JSON to /v1/traces like SpanBatch
// does (eBPF: telemetry.sdk.name "beyla").
export class ResBatch {
	constructor() {
		this.groups = new Map();
		this.count = 0;
	}

	add(service, source, s, resource = {}) {
		if (source !== 'ebpf' && source !== 'otlp') throw new Error(`source must be ebpf or otlp, got ${source}`);
		const key = JSON.stringify([service, source, resource]);
		let g = this.groups.get(key);
		if (!g) this.groups.set(key, (g = { service, source, resource, spans: [] }));
		g.spans.push(s);
		this.count++;
	}

	bodies(maxSpans = 4000) {
		const out = [];
		let cur = [];
		let n = 0;
		const flush = () => {
			if (cur.length) out.push(JSON.stringify({ resourceSpans: cur }));
			cur = [];
			n = 0;
		};
		for (const g of this.groups.values()) {
			for (let i = 0; i < g.spans.length;) {
				const part = g.spans.slice(i, i + (maxSpans - n));
				i += part.length;
				cur.push({
					resource: {
						attributes: attrs({
							'service.name': g.service,
							'telemetry.sdk.name': SDK_NAME[g.source],
							'telemetry.sdk.language': g.source === 'ebpf' ? 'go' : 'nodejs',
							...g.resource,
						}),
					},
					scopeSpans: [{ scope: { name: g.source === 'ebpf' ? 'beyla' : 'sextant-tool-test', version: '1.0.0' }, spans: part }],
				});
				n += part.length;
				if (n >= maxSpans) flush();
			}
		}
		flush();
		return out;
	}

	// Resolves once every request is answered 200 with nothing rejected
	// (the gateway answers after COMMIT).
	async post(baseUrl) {
		for (const body of this.bodies()) {
			const r = await request(`${baseUrl}/v1/traces`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body,
				timeoutMs: 60000,
			});
			if (r.status !== 200 || Number(r.json?.partialSuccess?.rejectedSpans ?? 0) > 0) {
				throw new Error(`POST /v1/traces: HTTP ${r.status}: ${r.text.slice(0, 500)}`);
			}
		}
	}
}

// ---- model prices ---------------------------------------------------------------

// The rows of model_pricing: {provider, model, input, output (USD per
// million tokens, numbers), fromMs (-Infinity for '-infinity')}.
export async function loadPricing(url) {
	const rows = await psqlJson(url, `SELECT coalesce(json_agg(json_build_object(
		'provider', provider, 'model', model,
		'input', input_usd_per_million::text, 'output', output_usd_per_million::text,
		'from', CASE WHEN effective_from = '-infinity' THEN NULL
			ELSE (extract(epoch FROM effective_from) * 1000)::text END)), '[]') FROM model_pricing`);
	return rows.map((r) => ({
		provider: r.provider,
		model: r.model,
		input: Number(r.input),
		output: Number(r.output),
		fromMs: r.from === null ? -Infinity : Number(r.from),
	}));
}

// The price row of a call to model (provider may be null) at atMs, by the
// rule of migrations/0004_model_pricing.sql: the row whose model is model
// itself or the longest prefix of it followed by '-', preferring the same
// provider, then the latest effective_from not after the call.  null: an
// unknown model.
export function priceFor(pricing, provider, model, atMs) {
	if (!model) return null;
	const cands = pricing.filter((p) => p.fromMs <= atMs && (p.model === model || model.startsWith(`${p.model}-`)));
	cands.sort((a, b) => b.model.length - a.model.length ||
		Number(b.provider === provider) - Number(a.provider === provider) ||
		b.fromMs - a.fromMs);
	return cands[0] ?? null;
}

// The cost in USD of a call, or null for an unknown model.
export function costOf(pricing, { provider, model, input, output, atMs }) {
	const p = priceFor(pricing, provider, model, atMs);
	if (!p) return null;
	return ((input ?? 0) * p.input + (output ?? 0) * p.output) / 1e6;
}

// rest.test.mjs - the REST facade (issue 21) on the demo data: for every
// default tool, REST and MCP (the official SDK client) give the same data
// for the same arguments; the resource GETs map path and query parameters
// onto the same calls; a catalog of bad input on every route gets a
// problem+json each, never a 500, the process alive; HTTP conventions
// (ETag/304, gzip, HEAD, CORS, Link next, X-Request-Id, /metrics);
// cancellation when the client hangs up; the queue full (503), the call
// timeout (504) and the API key (401) on a second gateway with tight limits.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';

import { metricValue, parseMetrics, request } from './lib/http.mjs';
import { psql, startPostgres } from './lib/pg.mjs';
import { ROOT, runSextant, startServer } from './lib/server.mjs';
import { OpenApiChecker } from './lib/openapi.mjs';
import { connect, EBPF_ENV, sleep, TOOL_ENV } from './lib/tooltest.mjs';

const DEMO_SPANS = '20000';
const ORIGIN = 'https://ui.example.com';
const MAX_BODY = 16384;
const API_KEY = 'rest-test-key-0123456789';

let pg, srv, mcp, oas;
// The demo day, as absolute times: answers that do not move between the
// REST call and the MCP call.
const NOW = new Date();
const FROM = new Date(NOW.getTime() - 26 * 3600 * 1000).toISOString();
const TO = new Date(NOW.getTime() + 3600 * 1000).toISOString();
const RANGE = { from: FROM, to: TO };

before(async () => {
	pg = await startPostgres({ name: 'rest' });
	srv = await startServer({
		name: 'rest',
		env: { DATABASE_URL: pg.url, ...TOOL_ENV, ...EBPF_ENV, SEXTANT_REST_ALLOWED_ORIGINS: ORIGIN, SEXTANT_SERVER_MAX_BODY_BYTES: String(MAX_BODY) },
	});
	const demo = runSextant(['demo-data', '--spans', DEMO_SPANS], { env: { DATABASE_URL: pg.url }, timeoutMs: 60000 });
	assert.equal(demo.code, 0, `sextant demo-data failed:\n${demo.stderr}`);
	mcp = await connect(srv, 'rest');
	// every answer below is checked against the gateway's own document
	oas = await OpenApiChecker.load(srv.url, request);
});

after(async () => {
	await mcp?.client.close().catch(() => {});
	if (srv) await srv.stop();
	if (pg) await pg.stop();
});

const api = (p) => `${srv.url}${p}`;
// Each answer checked against the OpenAPI document (lib/openapi.mjs).
async function checked(method, url, r) {
	oas.check(method, url, r);
	return r;
}
const post = async (p, body, headers = {}) =>
	checked(
		'POST',
		p,
		await request(api(p), {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
			body: typeof body === 'string' ? body : JSON.stringify(body),
			timeoutMs: 60000,
		}),
	);
const get = async (p, headers = {}) => checked('GET', p, await request(api(p), { headers: { accept: 'application/json', ...headers }, timeoutMs: 60000 }));
const qs = (o) => new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)])).toString();

// A problem+json answer with status (RFC 9457 members); returns its body.
function assertProblem(r, status, what) {
	assert.equal(r.status, status, `${what}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
	assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/, `${what}: content-type ${r.headers['content-type']}`);
	const p = r.json;
	assert.ok(p && typeof p === 'object', `${what}: no JSON body`);
	assert.match(p.type, /^(https:\/\/sextant\.dev\/problems\/[a-z-]+|about:blank)$/, `${what}: type ${p.type}`);
	assert.equal(typeof p.title, 'string', what);
	assert.equal(p.status, status, what);
	assert.ok(typeof p.detail === 'string' && p.detail.length > 0, `${what}: detail`);
	assert.equal(typeof p.instance, 'string', what);
	assert.match(r.headers['x-request-id'] ?? '', /^[0-9a-f]{16}$/, `${what}: X-Request-Id`);
	return p;
}

async function mcpCall(name, args) {
	const r = await mcp.client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
	return r;
}

// Volatile parts of get_server_status (uptime, counters) differ between two
// calls: its shape is compared instead.
const shape = (v) =>
	Array.isArray(v) ? v.map(shape) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, shape(v[k])])) : typeof v;

// A relative range is resolved at each call: its ends differ by the time
// between the two calls, and are left out of the comparison.
function stable(data, args) {
	if (args.from !== undefined) return data;
	const walk = (v) =>
		Array.isArray(v)
			? v.map(walk)
			: v && typeof v === 'object'
				? Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'from' && k !== 'to').map(([k, x]) => [k, walk(x)]))
				: v;
	return walk(data);
}

// Each default tool's argument sets; functions take the answers so far.
const CALLS = {
	get_server_status: [{}],
	list_services: [{}, RANGE, { ...RANGE, limit: 3 }, { time_range: '1d', compare_to: '1d' }],
	query_metrics: [
		{ service: 'inventory', ...RANGE },
		{ service: 'checkout', ...RANGE, protocol: 'http' },
		{ service: 'inventory', ...RANGE, step: '1h' },
	],
	query_ebpf_http_metrics: [{ service: 'inventory', ...RANGE }, { service: 'checkout', ...RANGE }],
	query_ebpf_grpc_metrics: [{ service: 'inventory', ...RANGE }],
	query_ebpf_sql_metrics: [{ service: 'inventory', ...RANGE }],
	query_traces: [{ ...RANGE }, { service: 'checkout', ...RANGE, max_traces: 3 }, { ...RANGE, sort: 'slowest' }],
	query_ebpf_traces: [{ ...RANGE }, { service: 'inventory', ...RANGE, max_traces: 2 }],
	query_spans: [{ ...RANGE }, { ...RANGE, limit: 5 }, { service_name: 'checkout', ...RANGE, status: 'error' }],
	query_telemetry_spans: [{ ...RANGE, limit: 20 }, { service: 'checkout', ...RANGE, limit: 5 }],
	query_telemetry_metrics: [{ ...RANGE }, (a) => ({ name: a.query_telemetry_metrics[0].metrics[0].name, ...RANGE })],
	get_trace: [(a) => ({ trace_id: a.query_traces[0].traces[0].trace_id }), (a) => ({ trace_id: a.query_traces[0].traces[1].trace_id })],
	analyze_genai: [{ ...RANGE }, { ...RANGE, order: 'cost_desc' }],
	get_session: [(a) => ({ session_id: a.analyze_genai[0].top_sessions[0].session_id, time_range: '7d' }), { time_range: '7d' }],
	get_mesh_graph: [{ ...RANGE }, { ...RANGE, graphType: 'service' }],
	// no from/to: a range that holds the whole demo day either way
	get_resource_detail: [{ resource_type: 'service', rateInterval: '3d' }, { resource_type: 'workload', resource_name: 'checkout', rateInterval: '3d' }],
	get_traces: [(a) => ({ trace_id: a.query_traces[0].traces[0].trace_id }), { service_name: 'checkout', error_only: true, lookback_seconds: 259200 }],
	compare_sessions: [
		(a) => ({
			session_id_1: a.analyze_genai[0].top_sessions[0].session_id,
			session_id_2: a.analyze_genai[0].top_sessions[1].session_id,
			time_range: '7d',
		}),
	],
};

describe('REST and MCP: the same data', () => {
	test('every default tool, several argument sets each', async () => {
		const listed = mcp.tools.map((t) => t.name).sort();
		assert.deepEqual(listed, Object.keys(CALLS).sort(), 'the default tools changed: give each new one argument sets here');
		const answers = {};
		let compared = 0;
		for (const [name, sets] of Object.entries(CALLS)) {
			answers[name] = [];
			for (const s of sets) {
				const args = typeof s === 'function' ? s(answers) : s;
				const what = `${name} ${JSON.stringify(args)}`;
				let m, r;
				// a relative range may cross a minute between the two: once more
				for (let attempt = 0; attempt < 2; attempt++) {
					m = await mcpCall(name, args);
					r = await post(`/api/v1/tools/${name}`, args);
					if (r.status === 200 && JSON.stringify(stable(r.json.data, args)) === JSON.stringify(stable(m.structuredContent, args))) break;
				}
				assert.equal(m.isError ?? false, false, `${what}: MCP answered an error`);
				assert.equal(r.status, 200, `${what}: REST HTTP ${r.status} ${r.text.slice(0, 300)}`);
				assert.equal(r.json.tool, name, what);
				assert.equal(typeof r.json.text, 'string', what);
				if (name === 'get_server_status') assert.deepEqual(shape(r.json.data), shape(m.structuredContent), what);
				else {
					assert.deepEqual(stable(r.json.data, args), stable(m.structuredContent, args), what);
					// a relative range's text prints its ends
					if (args.from !== undefined || args.time_range === undefined)
						assert.equal(r.json.text, m.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n'), `${what}: text`);
				}
				answers[name].push(m.structuredContent);
				compared++;
			}
		}
		assert.ok(compared >= 30, `${compared} comparisons`);
	});

	test('?view=text: the Markdown alone', async () => {
		const m = await mcpCall('list_services', RANGE);
		const r = await post('/api/v1/tools/list_services?view=text', RANGE, { accept: 'text/markdown' });
		assert.equal(r.status, 200, r.text);
		assert.equal(r.headers['content-type'], 'text/markdown; charset=utf-8');
		assert.equal(r.text, m.content[0].text);
	});

	test('GET /api/v1/tools lists the enabled tools with their schemas', async () => {
		const r = await get('/api/v1/tools');
		assert.equal(r.status, 200);
		const names = r.json.tools.map((t) => t.name).sort();
		assert.deepEqual(names, mcp.tools.map((t) => t.name).sort());
		for (const t of r.json.tools) {
			const m = mcp.byName.get(t.name);
			assert.deepEqual(t.inputSchema, m.inputSchema, t.name);
			assert.deepEqual(t.outputSchema, m.outputSchema, t.name);
			assert.equal(t.description, m.description, t.name);
			// the SDK keeps the annotations its schema knows (no title)
			assert.deepEqual({ ...t.annotations, title: undefined }, { ...m.annotations, title: undefined }, t.name);
		}
	});

	test('the resource GETs: path and query parameters onto the tool arguments', async () => {
		const traces = (await mcpCall('query_traces', RANGE)).structuredContent.traces;
		const genai = (await mcpCall('analyze_genai', RANGE)).structuredContent;
		const metric = (await mcpCall('query_telemetry_metrics', RANGE)).structuredContent.metrics[0].name;
		const cases = [
			['/api/v1/services', RANGE, 'list_services', RANGE],
			['/api/v1/services', { ...RANGE, limit: 2 }, 'list_services', { ...RANGE, limit: 2 }],
			['/api/v1/services/inventory/metrics', { ...RANGE, protocol: 'http' }, 'query_metrics', { service: 'inventory', ...RANGE, protocol: 'http' }],
			['/api/v1/services/checkout/traces', { ...RANGE, max_traces: 3 }, 'query_traces', { service: 'checkout', ...RANGE, max_traces: 3 }],
			[`/api/v1/traces/${traces[0].trace_id}`, {}, 'get_trace', { trace_id: traces[0].trace_id }],
			['/api/v1/spans', { ...RANGE, limit: 4, status: 'error' }, 'query_spans', { ...RANGE, limit: 4, status: 'error' }],
			[`/api/v1/sessions/${encodeURIComponent(genai.top_sessions[0].session_id)}`, { time_range: '7d' }, 'get_session', { session_id: genai.top_sessions[0].session_id, time_range: '7d' }],
			['/api/v1/genai/usage', { ...RANGE, order: 'cost_desc' }, 'analyze_genai', { ...RANGE, order: 'cost_desc' }],
			[`/api/v1/metrics/${encodeURIComponent(metric)}`, RANGE, 'query_telemetry_metrics', { name: metric, ...RANGE }],
			['/api/v1/graph', { ...RANGE, graphType: 'app' }, 'get_mesh_graph', { ...RANGE, graphType: 'app' }],
		];
		for (const [p, q, tool, args] of cases) {
			const r = await get(`${p}?${qs(q)}`);
			assert.equal(r.status, 200, `${p}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
			assert.equal(r.json.tool, tool, p);
			assert.deepEqual(stable(r.json.data, args), stable((await mcpCall(tool, args)).structuredContent, args), `${p}?${qs(q)} against ${tool} ${JSON.stringify(args)}`);
			assert.ok(r.headers.etag, `${p}: no ETag`);
		}
	});

	test('arrays as repeated or comma-separated parameters, booleans and integers typed by the inputSchema', async () => {
		// query_telemetry_metrics' group_by is an array of strings
		const metric = (await mcpCall('query_telemetry_metrics', RANGE)).structuredContent.metrics[0].name;
		const m = await mcpCall('query_telemetry_metrics', { name: metric, ...RANGE, group_by: ['service.name', 'host.name'] });
		const p = `/api/v1/metrics/${encodeURIComponent(metric)}?${qs(RANGE)}`;
		const repeated = await get(`${p}&group_by=service.name&group_by=host.name`);
		const comma = await get(`${p}&group_by=service.name,host.name`);
		assert.equal(repeated.status, 200, repeated.text);
		assert.deepEqual(repeated.json.data, m.structuredContent);
		assert.deepEqual(comma.json.data, m.structuredContent);
		const bad = await get(`/api/v1/services?limit=many`);
		const pb = assertProblem(bad, 400, 'limit=many');
		assert.deepEqual(pb.errors, [{ field: 'limit', expected: 'an integer', given: 'many', message: 'limit: expected an integer, got "many"' }]);
	});

	test('unknown query parameter: 400 naming it and listing the accepted ones', async () => {
		const r = await get('/api/v1/services?bogus=1&limit=2');
		const p = assertProblem(r, 400, 'bogus');
		assert.equal(p.errors.length, 1);
		assert.equal(p.errors[0].field, 'bogus');
		assert.match(p.detail, /unknown query parameter "bogus"/);
		assert.match(p.detail, /accepts: .*time_range.*limit/);
	});

	test('cursor pagination: Link rel="next" leads to the second page, as query_spans with its cursor', async () => {
		const first = await get(`/api/v1/spans?${qs({ ...RANGE, limit: 3 })}`);
		assert.equal(first.status, 200, first.text);
		const next = first.json.data.next_cursor;
		assert.ok(next, 'no next cursor on the first page');
		const m = /^<([^>]+)>; rel="next"$/.exec(first.headers.link ?? '');
		assert.ok(m, `Link: ${first.headers.link}`);
		const u = new URL(m[1], srv.url);
		assert.equal(u.searchParams.get('cursor'), next);
		const second = await get(u.pathname + u.search);
		assert.equal(second.status, 200, second.text);
		const viaMcp = await mcpCall('query_spans', { ...RANGE, limit: 3, cursor: next });
		assert.deepEqual(second.json.data, viaMcp.structuredContent);
		assert.notDeepEqual(second.json.data.spans, first.json.data.spans);
	});

	test('not found: an unknown trace, session, tool and route are 404s', async () => {
		assertProblem(await get('/api/v1/traces/0123456789abcdef0123456789abcdef'), 404, 'unknown trace');
		assertProblem(await get('/api/v1/sessions/no-such-session-xyz'), 404, 'unknown session');
		assertProblem(await post('/api/v1/tools/no_such_tool', {}), 404, 'unknown tool');
		assertProblem(await get('/api/v2/nothing'), 404, 'unknown route');
	});

	test("Kiali's POST /api/chat/mcp/{tool_name}: arguments in, the tool's result out; errors as {error}", async () => {
		const m = await mcpCall('list_services', RANGE);
		const r = await post('/api/chat/mcp/list_services', RANGE);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.json, m.structuredContent);
		const empty = await request(api('/api/chat/mcp/get_server_status'), { method: 'POST' });
		assert.equal(empty.status, 200, empty.text);
		// Kiali's camelCase names for get_traces' snake_case arguments
		const camel = await post('/api/chat/mcp/get_traces', { serviceName: 'checkout', errorOnly: true, lookbackSeconds: 259200, maxSpans: 3 });
		assert.equal(camel.status, 200, camel.text.slice(0, 300));
		const snake = await mcpCall('get_traces', { service_name: 'checkout', error_only: true, lookback_seconds: 259200, max_spans: 3 });
		assert.deepEqual(camel.json, snake.structuredContent);
		assert.ok(camel.json.total_found > 0, 'no failed checkout trace in the demo day');
		const missing = await post('/api/chat/mcp/no_such_tool', {});
		assert.equal(missing.status, 404);
		assert.equal(typeof missing.json.error, 'string');
	});
});

describe('bad input on every route: a clear problem each, never a 500', () => {
	const BIG = 'a'.repeat(10 * 1024);
	const INJECT = ["' OR 1=1 --", '$(rm -rf /)', '`id`', '<script>alert(1)</script>', '; DROP TABLE spans;'];

	test('path parameters: .., %00, 10 KB, injection strings', async () => {
		const seen = [];
		const templates = ['/api/v1/services/{}/metrics', '/api/v1/services/{}/traces', '/api/v1/traces/{}', '/api/v1/sessions/{}', '/api/v1/metrics/{}'];
		const values = ['..', '%2e%2e', '..%2F..%2Fetc', 'a%00b', '%00', BIG, ...INJECT.map(encodeURIComponent)];
		for (const t of templates) {
			for (const v of values) {
				const p = t.replace('{}', v);
				const r = await get(p);
				seen.push(r.status);
				assert.ok(r.status < 500, `${p.slice(0, 80)}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
				if (r.status !== 200) assertProblem(r, r.status, p.slice(0, 80));
				else assert.ok(r.json?.tool, `${p.slice(0, 80)}: 200 without an answer`);
			}
		}
		// the service filters answer (empty); ids and names that are no id are refused or not found
		assert.ok(seen.some((s) => s === 400) && seen.some((s) => s === 404), `statuses ${[...new Set(seen)]}`);
	});

	test('bodies: malformed JSON, wrong types, unknown fields, not an object, oversize', async () => {
		const cases = [
			['{"time_range":', 400, 'malformed-json'],
			['[1,2]', 400, 'invalid-arguments'],
			['"x"', 400, 'invalid-arguments'],
			[JSON.stringify({ limit: 'ten' }), 400, 'invalid-arguments'],
			[JSON.stringify({ limit: -5 }), 400, 'invalid-arguments'],
			[JSON.stringify({ time_range: 7 }), 400, 'invalid-arguments'],
			[JSON.stringify({ bogus_field: 1 }), 400, 'invalid-arguments'],
			[JSON.stringify({ time_range: INJECT[0] }), 422, 'tool-error'],
			[JSON.stringify({ x: 'y'.repeat(MAX_BODY) }), 413, 'body-too-large'],
		];
		for (const [body, status, slug] of cases) {
			const r = await post('/api/v1/tools/list_services', body);
			const p = assertProblem(r, status, body.slice(0, 60));
			assert.equal(p.type, `https://sextant.dev/problems/${slug}`, body.slice(0, 60));
			if (status === 400 && slug === 'invalid-arguments') {
				assert.ok(Array.isArray(p.errors) && p.errors.length > 0, `${body}: errors`);
				for (const e of p.errors) for (const k of ['field', 'expected', 'given', 'message']) assert.equal(typeof e[k], 'string', `${body}: errors[].${k}`);
			}
		}
		const typed = assertProblem(await post('/api/v1/tools/list_services', { limit: 'ten' }), 400, 'limit ten');
		assert.match(typed.errors[0].field, /limit/);
	});

	test('methods, content types and Accept', async () => {
		const cases = [
			[() => request(api('/api/v1/services'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 405, 'GET, HEAD, OPTIONS'],
			[() => request(api('/api/v1/services'), { method: 'DELETE' }), 405, 'GET, HEAD, OPTIONS'],
			[() => request(api('/api/v1/tools/list_services')), 405, 'POST, OPTIONS'],
			[() => request(api('/api/v1/tools'), { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' }), 405, 'GET, HEAD, OPTIONS'],
			[() => request(api('/api/chat/mcp/list_services'), { method: 'GET' }), 405, 'POST, OPTIONS'],
			[() => post('/api/v1/tools/list_services', '{}', { 'content-type': 'text/plain' }), 415],
			[() => post('/api/v1/tools/list_services', 'time_range=1d', { 'content-type': 'application/x-www-form-urlencoded' }), 415],
			[() => post('/api/v1/tools/list_services', '{}', { accept: 'image/png' }), 406],
			[() => get('/api/v1/services', { accept: 'text/html' }), 406],
			[() => get('/api/v1/services?view=pdf'), 400],
		];
		for (const [fn, status, allow] of cases) {
			const r = await fn();
			if (r.status === 405 || status !== 405) {
				assert.equal(r.status, status, `${status}: got ${r.status} ${r.text.slice(0, 200)}`);
				// Kiali's route answers Kiali's {"error": ...}
				if (r.json?.error === undefined) assert.match(r.headers['content-type'] ?? '', /problem\+json/, r.text);
			}
			if (allow) assert.equal(r.headers.allow, allow);
		}
	});

	test('the gateway is alive and healthy after the catalog', async () => {
		srv.assertAlive();
		assert.equal((await request(`${srv.url}/healthz`)).status, 200);
		const text = (await request(`${srv.url}/metrics`)).text;
		assert.ok(!/sextant_rest_requests_total\{[^}]*code="5\d\d"/.test(text), 'a REST answer was a 5xx');
	});
});

// node:http GET that keeps the raw body (no decompression).
function rawGet(url, headers = {}, method = 'GET') {
	return new Promise((resolve, reject) => {
		const req = http.request(url, { method, headers, agent: false }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
		});
		req.on('error', reject);
		req.end();
	});
}

describe('HTTP conventions', () => {
	const P = () => `/api/v1/services?${qs(RANGE)}`;

	test('ETag on GET answers, 304 on If-None-Match; X-Request-Id on every answer', async () => {
		const a = await get(P());
		const b = await get(P());
		assert.equal(a.status, 200);
		assert.match(a.headers.etag, /^"[0-9a-f]{32}"$/);
		assert.equal(a.headers.etag, b.headers.etag, 'the same answer, a different ETag');
		assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
		const c = await get(P(), { 'if-none-match': a.headers.etag });
		assert.equal(c.status, 304);
		assert.equal(c.text, '');
		assert.equal(c.headers.etag, a.headers.etag);
		const d = await get(P(), { 'if-none-match': '"0000"' });
		assert.equal(d.status, 200);
	});

	test('Cache-Control: a minute for absolute ranges, no-store for live ones', async () => {
		assert.equal((await get(P())).headers['cache-control'], 'private, max-age=60');
		assert.equal((await get('/api/v1/services?time_range=1h')).headers['cache-control'], 'no-store');
	});

	test('gzip when accepted and over 1 KB, with Vary: Accept-Encoding', async () => {
		const plain = await rawGet(api('/api/v1/tools'), { accept: 'application/json' });
		const gz = await rawGet(api('/api/v1/tools'), { accept: 'application/json', 'accept-encoding': 'gzip, deflate' });
		assert.equal(gz.headers['content-encoding'], 'gzip');
		assert.match(gz.headers.vary, /Accept-Encoding/);
		assert.ok(gz.body.length < plain.body.length / 2, `${gz.body.length} of ${plain.body.length} bytes`);
		assert.deepEqual(zlib.gunzipSync(gz.body), plain.body);
		assert.equal(plain.headers['content-encoding'], undefined);
		const refused = await rawGet(api('/api/v1/tools'), { 'accept-encoding': 'gzip;q=0' });
		assert.equal(refused.headers['content-encoding'], undefined);
		const small = await rawGet(api('/api/v1/traces/0123'), { 'accept-encoding': 'gzip' });
		assert.equal(small.headers['content-encoding'], undefined, 'a small problem compressed');
	});

	test('HEAD where GET is: the same headers, no body', async () => {
		const g = await rawGet(api(P()), {});
		const h = await rawGet(api(P()), {}, 'HEAD');
		assert.equal(h.status, 200);
		assert.equal(h.body.length, 0);
		assert.equal(h.headers.etag, g.headers.etag);
		assert.equal(h.headers['content-length'], g.headers['content-length']);
		assert.equal(h.headers['content-type'], g.headers['content-type']);
	});

	test('CORS: the listed origin gets its headers and a preflight; others none', async () => {
		const ok = await get(P(), { origin: ORIGIN });
		assert.equal(ok.status, 200);
		assert.equal(ok.headers['access-control-allow-origin'], ORIGIN);
		assert.match(ok.headers['access-control-expose-headers'], /ETag/);
		const pre = await request(api('/api/v1/tools/list_services'), {
			method: 'OPTIONS',
			headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
		});
		assert.equal(pre.status, 204);
		assert.equal(pre.headers['access-control-allow-origin'], ORIGIN);
		assert.match(pre.headers['access-control-allow-methods'], /POST/);
		assert.match(pre.headers['access-control-allow-headers'], /Content-Type/);
		assert.equal(pre.headers['access-control-max-age'], '600');
		// a loopback origin passes the front end's check but is not listed
		const local = await get(P(), { origin: 'http://localhost:3000' });
		assert.equal(local.status, 200);
		assert.equal(local.headers['access-control-allow-origin'], undefined);
		const localPre = await request(api('/api/v1/services'), { method: 'OPTIONS', headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'GET' } });
		assert.equal(localPre.headers['access-control-allow-origin'], undefined);
		// any other origin is refused, as on /mcp
		const other = await get(P(), { origin: 'https://evil.example.net' });
		assertProblem(other, 403, 'other origin');
		assert.equal(other.headers['access-control-allow-origin'], undefined);
		// and the listed origin is no pass to /mcp's checks beyond the REST routes
		assert.equal((await get('/healthz', { origin: ORIGIN })).status, 403);
	});

	test('per-route counters and latency histograms in /metrics', async () => {
		const samples = parseMetrics((await request(`${srv.url}/metrics`)).text);
		assert.ok(metricValue(samples, 'sextant_rest_requests_total', { route: '/api/v1/services', code: '200' }) >= 3);
		assert.ok(metricValue(samples, 'sextant_rest_requests_total', { route: '/api/v1/services', code: '304' }) >= 1);
		assert.ok(metricValue(samples, 'sextant_rest_request_duration_seconds_count', { route: '/api/v1/tools/{name}' }) >= 30);
		assert.ok(metricValue(samples, 'sextant_rest_request_duration_seconds_count', { route: '/api/v1/traces/{trace_id}' }) >= 1);
	});
});

// Holds ACCESS EXCLUSIVE on spans for lockS seconds from a psql session of
// its own; resolves once granted, to {done}: the promise of psql's end.
async function holdSpansLock(url, lockS) {
	const done = psql(url, `BEGIN; LOCK TABLE spans IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(${lockS}); COMMIT`);
	done.catch(() => {});
	const deadline = Date.now() + 10000;
	for (;;) {
		const n = await psql(url, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'spans' AND l.mode = 'AccessExclusiveLock' AND l.granted`);
		if (n === '1') return { done }; // not the promise itself: awaiting would wait for its end
		assert.ok(Date.now() < deadline, 'the lock on spans was not granted within 10 s');
		await sleep(20);
	}
}

const blocked = async (url) =>
	Number(await psql(url, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sextant' AND wait_event_type = 'Lock'`));

async function waitFor(fn, ms, what) {
	const deadline = Date.now() + ms;
	for (;;) {
		if (await fn()) return;
		assert.ok(Date.now() < deadline, `${what} within ${ms} ms`);
		await sleep(50);
	}
}

describe('cancellation, limits and timeouts', () => {
	test('a client that hangs up cancels the call and its SQL', async () => {
		const cancelled = async () =>
			metricValue(parseMetrics((await request(`${srv.url}/metrics`)).text), 'sextant_tool_calls_total', { tool: 'query_spans', outcome: 'cancelled' }) ?? 0;
		const before = await cancelled();
		const lock = await holdSpansLock(pg.url, 15);
		const ctl = new AbortController();
		const pending = fetch(api('/api/v1/spans?time_range=2h&service_name=checkout'), { signal: ctl.signal }).catch((e) => e);
		await waitFor(async () => (await blocked(pg.url)) > 0, 10000, 'the call waits for the lock');
		ctl.abort();
		await pending;
		await waitFor(async () => (await cancelled()) === before + 1, 5000, 'the call cancelled after the hang-up');
		await waitFor(async () => (await blocked(pg.url)) === 0, 5000, 'its statement cancelled');
		await psql(pg.url, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(15)%' AND pid <> pg_backend_pid()`);
		await lock.done.catch(() => {});
		assert.equal((await get(`/api/v1/services?time_range=1h`)).status, 200);
	});

	describe('a gateway with one worker, a queue of one, a 2 s call timeout and an API key', () => {
		let tight;
		before(async () => {
			const hash = runSextant(['hash-key', API_KEY]).stdout.trim();
			tight = await startServer({
				name: 'rest-tight',
				env: {
					DATABASE_URL: pg.url,
					...TOOL_ENV,
					SEXTANT_WORKERS_THREADS: '1',
					SEXTANT_WORKERS_QUEUE_SIZE: '1',
					SEXTANT_WORKERS_CALL_TIMEOUT_S: '2',
					SEXTANT_AUTH_KEYS: hash,
					// no mesh set: its route says how to enable it
					SEXTANT_TOOLS_ENABLED_SETS: 'core,query,spans,genai',
				},
			});
		});
		after(async () => {
			if (tight) await tight.stop();
		});
		const AUTH = { authorization: `Bearer ${API_KEY}`, accept: 'application/json' };

		test('401 without the key, with WWW-Authenticate; 200 with it', async () => {
			const r = await request(`${tight.url}/api/v1/tools`);
			assertProblem(r, 401, 'no key');
			assert.match(r.headers['www-authenticate'], /^Bearer realm="sextant"/);
			const bad = await request(`${tight.url}/api/v1/tools`, { headers: { authorization: 'Bearer nope' } });
			assertProblem(bad, 401, 'bad key');
			assert.match(bad.headers['www-authenticate'], /invalid_token/);
			assert.equal((await request(`${tight.url}/api/v1/tools`, { headers: AUTH })).status, 200);
		});

		test('the graph route without the mesh set: 404 naming how to enable it; the document without its paths', async () => {
			const p = assertProblem(await request(`${tight.url}/api/v1/graph`, { headers: AUTH }), 404, '/api/v1/graph');
			assert.match(p.detail, /add "mesh" to \[tools\] enabled_sets/);
			const doc = await request(`${tight.url}/api/openapi.json`, { headers: AUTH });
			assert.equal(doc.status, 200, doc.text.slice(0, 200));
			assert.equal(doc.json.paths['/api/v1/graph'], undefined);
			assert.equal(doc.json.paths['/api/v1/tools/get_mesh_graph'], undefined);
			assert.ok(doc.json.paths['/api/v1/services']);
			assert.ok(oas.doc.paths['/api/v1/graph'], 'the main gateway lists the mesh set');
			// the key is required: its bearer scheme applies
			assert.ok(doc.json.components.securitySchemes.bearer);
			assert.equal((await request(`${tight.url}/api/openapi.json`)).status, 401);
		});

		test('queue full: 503 with Retry-After; the call past the timeout: 504', async () => {
			const lock = await holdSpansLock(pg.url, 8);
			const t0 = Date.now();
			const running = request(`${tight.url}/api/v1/spans?time_range=2h&service_name=checkout`, { headers: AUTH, timeoutMs: 20000 });
			await waitFor(async () => (await blocked(pg.url)) > 0, 10000, 'the first call waits for the lock');
			const queued = request(`${tight.url}/api/v1/spans?time_range=3h`, { headers: AUTH, timeoutMs: 20000 });
			await sleep(200);
			const full = await request(`${tight.url}/api/v1/spans?time_range=4h`, { headers: AUTH });
			const p = assertProblem(full, 503, 'queue full');
			assert.equal(full.headers['retry-after'], '1');
			assert.match(p.detail, /queue is full/);
			const first = await running;
			assertProblem(first, 504, 'timeout');
			assert.ok(Date.now() - t0 < 7000, `the timeout took ${Date.now() - t0} ms`);
			const second = await queued;
			assert.ok([200, 504].includes(second.status), `queued: ${second.status} ${second.text.slice(0, 200)}`);
			await lock.done.catch(() => {});
			tight.assertAlive();
		});
	});
});

test('the typed client (openapi-typescript + openapi-fetch, fixtures/openapi-client.ts) calls every route', async () => {
	// Node runs the TypeScript fixture with its types stripped; openapi.test
	// compiles the same file against the document's types
	const { everyRoute, makeClient } = await import('./fixtures/openapi-client.ts');
	const results = await Promise.all(everyRoute(makeClient(srv.url)));
	const byStatus = {};
	for (const { data, error, response } of results) {
		const u = new URL(response.url);
		const body = data ?? error;
		const r = {
			status: response.status,
			headers: { 'content-type': response.headers.get('content-type') ?? '' },
			text: body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body),
			json: body,
		};
		assert.ok(response.status < 500, `${u.pathname}: HTTP ${response.status} ${r.text.slice(0, 200)}`);
		// the tools' and Kiali's routes are POSTs, the others GETs
		oas.check(/^\/api\/(v1\/tools|chat\/mcp)\//.test(u.pathname) ? 'POST' : 'GET', u.pathname, r);
		byStatus[response.status] = (byStatus[response.status] ?? 0) + 1;
	}
	console.log(`typed client: ${results.length} routes called, by status ${JSON.stringify(byStatus)}`);
	// the enabled tools answer; the opt-in sets' tools this gateway leaves
	// off and the made-up ids are 404s
	assert.ok(byStatus[200] >= 20, JSON.stringify(byStatus));
	assert.deepEqual(Object.keys(byStatus).filter((c) => !['200', '404', '422'].includes(c)), [], JSON.stringify(byStatus));
});

test('every REST answer above matched the OpenAPI document', () => {
	assert.ok(oas.checked >= 100, `${oas.checked} answers checked`);
});

describe('README: every curl line answers 2xx', () => {
	test('the curl lines of the README, as printed, against this gateway', async () => {
		const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
		const lines = readme
			.split('\n')
			.map((l) => l.trim())
			.filter((l) => l.startsWith('curl ') && /localhost:8080\/api\//.test(l));
		assert.ok(lines.length >= 4, `${lines.length} REST curl lines in README.md`);
		const port = srv.port;
		for (const line of lines) {
			const cmd = line.replaceAll('localhost:8080', `127.0.0.1:${port}`);
			const r = spawnSync('sh', ['-c', `${cmd} -s -o /dev/null -w '%{http_code}'`], { encoding: 'utf8', timeout: 30000 });
			assert.match(r.stdout, /^2\d\d$/, `${line}: HTTP ${r.stdout} ${r.stderr}`);
		}
	});
});

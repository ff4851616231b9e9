// http.test.mjs - the gateway's HTTP contract checked on the wire: status
// codes and headers of /mcp, /healthz, /readyz and /metrics, JSON-RPC error
// codes and id echoing, batches per revision, the standalone GET stream,
// sessions, auth, body and queue limits, SIGTERM draining and the CLI.
// Each describe() block runs its own gateway.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { ACCEPT_BOTH, collect, metricValue, open, parseMetrics, request, RawSession, SseStream } from './lib/http.mjs';
import { CONFORMANCE_CONFIG, runSextant, startServer } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LATEST_2025 = '2025-11-25';

const INIT = (id = 1, protocolVersion = '2025-11-25') =>
	JSON.stringify({
		jsonrpc: '2.0',
		id,
		method: 'initialize',
		params: { protocolVersion, capabilities: {}, clientInfo: { name: 'sextant-http-test', version: '1.0.0' } },
	});
const JSON_HEADERS = { 'content-type': 'application/json', accept: ACCEPT_BOTH };

// Asserts a JSON-RPC error message with the given code; returns it.
function assertRpcError(msg, code, what) {
	assert.ok(msg && typeof msg === 'object', `${what}: no JSON-RPC message in the body`);
	assert.equal(msg.jsonrpc, '2.0', `${what}: ${JSON.stringify(msg)}`);
	assert.equal(msg.error?.code, code, `${what}: expected error ${code}, got ${JSON.stringify(msg)}`);
	assert.equal(typeof msg.error.message, 'string', `${what}: error.message`);
	assert.ok(!('result' in msg), `${what}: both result and error`);
	return msg;
}

function assertEmptyBody(r, what) {
	assert.equal(r.text ?? '', '', `${what}: expected no body, got ${JSON.stringify(r.text)}`);
}

describe('gateway with the conformance fixtures', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'http', env: { SEXTANT_SERVER_SSE_KEEPALIVE_S: '1' } });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	const post = (body, headers = {}) => request(srv.mcpUrl, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body });

	test('/healthz and /readyz answer 200', async () => {
		for (const p of ['/healthz', '/readyz']) {
			const r = await request(srv.url + p);
			assert.equal(r.status, 200, `${p}: HTTP ${r.status}`);
		}
	});

	test('initialize with id 0 answers id 0, a session id and the server info', async () => {
		const s = new RawSession(srv.mcpUrl);
		const r = await s.post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: JSON.parse(INIT()).params });
		assert.equal(r.status, 200);
		assert.strictEqual(r.response?.id, 0, JSON.stringify(r.response));
		assert.equal(r.response.result.protocolVersion, '2025-11-25');
		assert.ok(r.response.result.serverInfo?.name && r.response.result.serverInfo?.version);
		assert.ok(r.response.result.capabilities?.tools, 'tools capability');
		const sid = r.headers['mcp-session-id'];
		assert.match(sid ?? '', /^[\x21-\x7e]+$/, `Mcp-Session-Id ${JSON.stringify(sid)}`);
		assert.ok(sid.length >= 16, 'session id looks too short to be unguessable');
	});

	test('initialize negotiates: supported revisions are echoed, unknown ones get the latest', async () => {
		for (const [asked, want] of [
			['2025-11-25', '2025-11-25'],
			['2025-06-18', '2025-06-18'],
			['2025-03-26', '2025-03-26'],
			['2099-01-01', '2025-11-25'],
		]) {
			const r = await new RawSession(srv.mcpUrl).post(INIT(1, asked));
			assert.equal(r.status, 200, `${asked}: HTTP ${r.status} ${r.text ?? ''}`);
			assert.equal(r.response?.result?.protocolVersion, want, `asked ${asked}: ${JSON.stringify(r.response)}`);
		}
	});

	test('415 for a POST whose Content-Type is not application/json', async () => {
		for (const ct of ['text/plain', 'application/x-www-form-urlencoded']) {
			const r = await post(INIT(), { 'content-type': ct });
			assert.equal(r.status, 415, `${ct}: HTTP ${r.status}`);
		}
		const ok = await post(INIT(), { 'content-type': 'application/json; charset=utf-8' });
		assert.equal(ok.status, 200, `application/json with a charset parameter: HTTP ${ok.status}`);
	});

	test('406 when Accept has neither application/json nor text/event-stream', async () => {
		for (const accept of ['text/html', 'image/png']) {
			const r = await post(INIT(), { accept });
			assert.equal(r.status, 406, `Accept ${accept}: HTTP ${r.status}`);
		}
		const ok = await post(INIT(), { accept: 'application/json' });
		assert.equal(ok.status, 200, `Accept application/json alone: HTTP ${ok.status}`);
	});

	test('403 for a non-loopback Host or Origin; loopback forms and no Origin are fine', async () => {
		const port = srv.port;
		const bad = [
			{ host: 'evil.example.com', origin: 'http://evil.example.com' },
			{ host: `evil.example.com:${port}` },
			{ host: `127.0.0.1:${port}`, origin: 'http://evil.example.com' },
			{ host: `127.0.0.1:${port}`, origin: `http://evil.example.com:${port}` },
		];
		for (const h of bad) {
			const r = await post(INIT(), h);
			assert.equal(r.status, 403, `${JSON.stringify(h)}: HTTP ${r.status}`);
		}
		const good = [
			{ host: `127.0.0.1:${port}` },
			{ host: `localhost:${port}` },
			{ host: `[::1]:${port}` },
			{ host: `localhost:${port}`, origin: `http://localhost:${port}` },
			{ host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
		];
		for (const h of good) {
			const r = await post(INIT(), h);
			assert.equal(r.status, 200, `${JSON.stringify(h)}: HTTP ${r.status}`);
		}
	});

	test('400 for a non-initialize request without Mcp-Session-Id', async () => {
		const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }), { 'mcp-protocol-version': '2025-11-25' });
		assert.equal(r.status, 400, `HTTP ${r.status}`);
	});

	test('404 for an unknown session id', async () => {
		const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }), {
			'mcp-session-id': 'no-such-session-0123456789abcdef',
			'mcp-protocol-version': '2025-11-25',
		});
		assert.equal(r.status, 404, `HTTP ${r.status}`);
	});

	test('400 for an unsupported MCP-Protocol-Version; any supported one is accepted', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		for (const v of ['1999-01-01', 'latest', '2024-13-45']) {
			const r = await s.call('ping', {}, { headers: { 'mcp-protocol-version': v } });
			assert.equal(r.status, 400, `MCP-Protocol-Version ${v}: HTTP ${r.status}`);
		}
		// conformance 0.1.16 sends 2025-03-26 inside 2025-11-25 sessions.
		for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
			const r = await s.call('ping', {}, { headers: { 'mcp-protocol-version': v } });
			assert.equal(r.status, 200, `MCP-Protocol-Version ${v}: HTTP ${r.status}`);
			assert.deepEqual(r.response?.result, {});
		}
	});

	test('202 with no body for notifications and for client responses', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const n = await s.post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
		assert.equal(n.status, 202, `notification: HTTP ${n.status}`);
		assertEmptyBody(n, 'notification');
		const u = await s.post({ jsonrpc: '2.0', method: 'notifications/no_such_notification', params: {} });
		assert.equal(u.status, 202, `unknown notification: HTTP ${u.status}`);
		assertEmptyBody(u, 'unknown notification');
		const c = await s.post({ jsonrpc: '2.0', id: 'srv-unmatched', result: {} });
		assert.equal(c.status, 202, `client response: HTTP ${c.status}`);
		assertEmptyBody(c, 'client response');
	});

	test('405 with Allow for other HTTP methods on /mcp', async () => {
		for (const method of ['PUT', 'PATCH']) {
			const r = await request(srv.mcpUrl, { method, headers: JSON_HEADERS, body: '{}' });
			assert.equal(r.status, 405, `${method}: HTTP ${r.status}`);
			const allow = (r.headers.allow ?? '').split(',').map((x) => x.trim().toUpperCase());
			for (const m of ['GET', 'POST', 'DELETE']) assert.ok(allow.includes(m), `${method}: Allow ${JSON.stringify(r.headers.allow)} lacks ${m}`);
		}
	});

	test('DELETE ends the session; afterwards its id gets 404', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const d = await s.delete();
		assert.ok(d.status >= 200 && d.status < 300, `DELETE: HTTP ${d.status}`);
		const r = await s.call('ping');
		assert.equal(r.status, 404, `request after DELETE: HTTP ${r.status}`);
		const g = await request(srv.mcpUrl, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': s.sessionId } });
		assert.equal(g.status, 404, `GET after DELETE: HTTP ${g.status}`);
		const d2 = await s.delete();
		assert.equal(d2.status, 404, `second DELETE: HTTP ${d2.status}`);
	});

	test('-32700 parse error with HTTP 400 for a body that is not JSON', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		for (const body of ['{not json', '{"jsonrpc":"2.0","id":1,"method":"ping"', '\xff\xfe']) {
			const r = await s.post(body);
			assert.equal(r.status, 400, `${JSON.stringify(body)}: HTTP ${r.status}`);
			const m = assertRpcError(r.json, -32700, JSON.stringify(body));
			assert.ok(m.id === null || !('id' in m), `parse error id must be null or absent: ${JSON.stringify(m)}`);
		}
		// Without a session, before any other check needs one.
		const r = await post('{not json');
		assert.equal(r.status, 400);
		assertRpcError(r.json, -32700, 'parse error without a session');
	});

	test('-32600 invalid request for malformed JSON-RPC messages', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const bodies = [
			{ jsonrpc: '2.0', id: 1 },
			{ jsonrpc: '1.0', id: 1, method: 'ping' },
			{ id: 1, method: 'ping' },
			{ jsonrpc: '2.0', id: null, method: 'ping' },
			{ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' },
			{ jsonrpc: '2.0', id: [1], method: 'ping' },
			{ jsonrpc: '2.0', id: 1.5, method: 'ping' },
			{ jsonrpc: '2.0', id: 1, method: 42 },
			'"just a string"',
			'42',
		];
		// Valid JSON that is not a request is -32600, not -32700 (JSON-RPC
		// 2.0 section 5.1).  Every case is tried; the mismatches are listed.
		const wrong = [];
		for (const b of bodies) {
			const text = typeof b === 'string' ? b : JSON.stringify(b);
			const r = await s.post(text);
			let msg = r.json ?? r.response;
			if (Array.isArray(msg)) msg = msg[0];
			if (![200, 400].includes(r.status) || msg?.jsonrpc !== '2.0' || msg?.error?.code !== -32600 || 'result' in msg) {
				wrong.push(`${text} -> HTTP ${r.status} ${r.text ?? JSON.stringify(msg)}`);
			}
		}
		assert.deepEqual(wrong, [], 'expected HTTP 200 or 400 with a -32600 error');
	});

	test('-32601 with HTTP 200 for an unknown method, id echoed', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const r = await s.call('no/such_method', {}, { id: 'm-1' });
		assert.equal(r.status, 200, `HTTP ${r.status}`);
		assertRpcError(r.response, -32601, 'unknown method');
		assert.strictEqual(r.response.id, 'm-1');
	});

	test('-32602 for bad params', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const cases = [
			['tools/call', {}],
			['tools/call', { name: 42 }],
			['tools/call', { name: 'no_such_tool', arguments: {} }],
			['tools/call', { name: 'test_simple_text', arguments: 'not an object' }],
			['logging/setLevel', { level: 'loud' }],
			['resources/read', {}],
			['prompts/get', { name: 'no_such_prompt' }],
			['prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'only one' } }],
		];
		for (const [method, params] of cases) {
			const r = await s.call(method, params);
			assert.equal(r.status, 200, `${method} ${JSON.stringify(params)}: HTTP ${r.status}`);
			assertRpcError(r.response, -32602, `${method} ${JSON.stringify(params)}`);
		}
	});

	test('ids are echoed with their type; ping returns exactly {}', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		for (const id of [7, '7', 0, '', 'a-string-id', 9007199254740991]) {
			const r = await s.call('ping', {}, { id });
			assert.equal(r.status, 200);
			assert.strictEqual(r.response?.id, id, `sent id ${JSON.stringify(id)}, got ${JSON.stringify(r.response)}`);
			assert.deepEqual(r.response.result, {});
		}
	});

	test('batches: accepted on a 2025-03-26 session, rejected on 2025-06-18', async () => {
		const old = new RawSession(srv.mcpUrl);
		await old.initialize('2025-03-26');
		assert.equal(old.version, '2025-03-26');
		const batch = [
			{ jsonrpc: '2.0', id: 1, method: 'ping' },
			{ jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
			{ jsonrpc: '2.0', id: 'two', method: 'ping' },
		];
		const r = await old.post(batch);
		assert.equal(r.status, 200, `2025-03-26 batch: HTTP ${r.status} ${r.text ?? ''}`);
		const ids = r.messages.filter((m) => 'result' in m).map((m) => m.id);
		assert.deepEqual(ids.sort(), [1, 'two'].sort(), `batch responses: ${JSON.stringify(r.messages)}`);
		const empty = await old.post('[]');
		assert.equal(empty.status, 400, `empty batch: HTTP ${empty.status}`);
		assertRpcError(Array.isArray(empty.json) ? empty.json[0] : empty.json, -32600, 'empty batch');
		const withInit = await old.post([JSON.parse(INIT(5, '2025-03-26'))]);
		assert.equal(withInit.status, 400, `batch with initialize: HTTP ${withInit.status}`);

		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-06-18');
		const rej = await s.post(batch);
		assert.equal(rej.status, 400, `2025-06-18 batch: HTTP ${rej.status}`);
		assertRpcError(Array.isArray(rej.json) ? rej.json[0] : rej.json, -32600, '2025-06-18 batch');
	});

	test('priming events (id, empty data) start POST streams on 2025-11-25 sessions only', async () => {
		const call = { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'p1' } };
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const r = await s.call('tools/call', call);
		assert.ok(r.sse, 'a tools/call with progress should be answered on SSE');
		assert.ok(r.events[0]?.id && r.events[0].data === '', `first event ${JSON.stringify(r.events[0])}`);
		const ids = r.events.map((e) => e.id);
		assert.equal(new Set(ids).size, ids.length, `event ids must be unique: ${ids}`);
		const progress = r.messages.filter((m) => m.method === 'notifications/progress');
		assert.ok(progress.length >= 3, `progress notifications: ${progress.length}`);
		assert.ok(progress.every((p) => p.params.progressToken === 'p1'), 'progress token not echoed as a string');
		assert.ok(r.messages.indexOf(r.response) > r.messages.indexOf(progress.at(-1)), 'progress after the response');

		for (const v of ['2025-06-18', '2025-03-26']) {
			const o = new RawSession(srv.mcpUrl);
			await o.initialize(v);
			const ro = await o.call('tools/call', call);
			assert.equal(ro.status, 200);
			assert.ok(ro.response?.result, `${v}: ${JSON.stringify(ro.response)}`);
			if (ro.sse) assert.ok(ro.events.every((e) => e.data !== ''), `${v} session got an empty-data (priming) event`);
		}
	});

	test('GET opens the standalone stream: text/event-stream with keep-alive comments', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const g = await open(srv.mcpUrl, {
			method: 'GET',
			headers: { accept: 'text/event-stream', 'mcp-session-id': s.sessionId, 'mcp-protocol-version': s.version },
		});
		assert.ok(g instanceof SseStream, `GET: HTTP ${g.status} ${g.headers?.['content-type']}`);
		assert.equal(g.status, 200);
		try {
			// Comment lines dispatch no event: poll what the parser has seen.
			const t0 = Date.now();
			while (!g.comments.length && !g.ended && Date.now() - t0 < 3500) await sleep(50);
			assert.ok(g.comments.length > 0, `no keep-alive comment within 3.5 s (server.sse_keepalive_s set to 1); ended=${g.ended}`);
			assert.ok(!g.ended, 'the standalone stream closed');
		} finally {
			g.close();
		}
		const noSession = await request(srv.mcpUrl, { method: 'GET', headers: { accept: 'text/event-stream' } });
		assert.equal(noSession.status, 400, `GET without a session: HTTP ${noSession.status}`);
	});

	test('/metrics is Prometheus text with sextant_http_requests_total and sextant_sessions', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const r = await request(`${srv.url}/metrics`);
		assert.equal(r.status, 200);
		assert.match(r.headers['content-type'] ?? '', /^text\/plain/);
		assert.match(r.text, /^# TYPE sextant_http_requests_total counter$/m);
		assert.match(r.text, /^# TYPE sextant_sessions gauge$/m);
		const m = parseMetrics(r.text);
		assert.ok(metricValue(m, 'sextant_http_requests_total') > 0, 'sextant_http_requests_total has no positive sample');
		assert.ok(metricValue(m, 'sextant_sessions') >= 1, 'sextant_sessions should count the live session');
		await s.delete();
	});

	test('the server shuts down cleanly', async () => {
		await srv.stop();
	});
});

describe('2026-07-28 stateless requests (what the conformance suite does not probe)', () => {
	let srv;
	before(async () => {
		// a hang-up on an idle stream is seen at its next keep-alive
		srv = await startServer({ name: 'http-2026', env: { SEXTANT_SERVER_SSE_KEEPALIVE_S: '1' } });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
	const HDRS = (method, name) => ({ ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}) });
	const call = (id, name, args, headers, meta = {}) =>
		request(srv.mcpUrl, {
			method: 'POST',
			headers,
			body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { ...META, ...meta } } }),
		});
	const b64 = (s) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;

	test('no session: no Mcp-Session-Id, resultType on the result, nothing to resume', async () => {
		const r = await call(1, 'test_simple_text', {}, HDRS('tools/call', 'test_simple_text'));
		assert.equal(r.status, 200, r.text);
		assert.equal(r.headers['mcp-session-id'], undefined, 'a stateless answer named a session');
		assert.equal(r.json.result.resultType, 'complete');
		assert.equal(r.json.result.content[0].type, 'text');
		// progress comes on the request's own stream, without event ids
		const p = await open(srv.mcpUrl, {
			method: 'POST',
			headers: HDRS('tools/call', 'test_tool_with_progress'),
			body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {}, _meta: { ...META, progressToken: 'p1' } } }),
		});
		assert.ok(p instanceof SseStream, 'progress did not turn the answer into a stream');
		const got = await collect(p, [2]);
		assert.ok(got.messages.filter((m) => m.method === 'notifications/progress').length >= 3, JSON.stringify(got.messages));
		assert.deepEqual(got.events.filter((e) => e.id !== undefined), [], 'SSE event ids: nothing can resume them');
		assert.equal(got.responses[0].result.resultType, 'complete');
	});

	test('Mcp-Name: base64 form decoded and compared; bad base64 or another name is -32020', async () => {
		const ok = await call(3, 'test_simple_text', {}, HDRS('tools/call', b64('test_simple_text')));
		assert.equal(ok.status, 200, ok.text);
		assert.equal(ok.json.result.resultType, 'complete');
		for (const [name, why] of [
			['=?base64?dGVzdF9zaW1wbGVfdGV4dA?=', 'no padding'],
			['=?base64?dGVzdF9zaW1wbGVfdGV4dA=?=', 'short padding'],
			['=?base64?dGVzdF9z!W1wbGVfdGV4dA==?=', 'a character outside the alphabet'],
			[b64('test_image_content'), 'another tool'],
			['test_image_content', 'another tool, plain'],
		]) {
			const r = await call(4, 'test_simple_text', {}, HDRS('tools/call', name));
			assert.equal(r.status, 400, `${why}: HTTP ${r.status} ${r.text}`);
			assert.equal(r.json.error.code, -32020, `${why}: ${r.text}`);
			assert.equal(r.json.id, 4, 'the error must echo the request id');
			assert.match(r.json.error.message, /Mcp-Name/);
		}
		const missing = await call(5, 'test_simple_text', {}, HDRS('tools/call'));
		assert.equal(missing.status, 400);
		assert.match(missing.json.error.message, /Mcp-Name header is missing/);
	});

	test('a request whose id cannot be read gets an error without "id" (never null)', async () => {
		const r = await request(srv.mcpUrl, {
			method: 'POST',
			headers: HDRS('tools/list'),
			body: JSON.stringify({ jsonrpc: '2.0', id: null, method: 'tools/list', params: { _meta: META } }),
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32600);
		assert.ok(!('id' in r.json), `id present: ${r.text}`);
	});

	test('log notifications only with a logLevel in _meta', async () => {
		const quiet = await call(6, 'test_tool_with_logging', {}, HDRS('tools/call', 'test_tool_with_logging'));
		assert.equal(quiet.status, 200);
		assert.equal(quiet.headers['content-type'], 'application/json', 'no notification may precede the answer');
		const loud = await open(srv.mcpUrl, {
			method: 'POST',
			headers: HDRS('tools/call', 'test_tool_with_logging'),
			body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'test_tool_with_logging', arguments: {}, _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'info' } } }),
		});
		assert.ok(loud instanceof SseStream);
		const got = await collect(loud, [7]);
		assert.equal(got.messages.filter((m) => m.method === 'notifications/message').length, 3);
	});

	test('hanging up cancels the request: the call stops, the server goes on', async () => {
		const cancelled = async () =>
			metricValue(parseMetrics((await request(`${srv.url}/metrics`)).text), 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		const before = await cancelled();
		const st = await open(srv.mcpUrl, {
			method: 'POST',
			headers: HDRS('tools/call', 'test_cancellation'),
			body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'test_cancellation', arguments: { duration_ms: 20000 }, _meta: { ...META, progressToken: 'c' } } }),
		});
		assert.ok(st instanceof SseStream, 'progress did not open a stream');
		assert.ok(await st.next(5000), 'no progress before hanging up');
		st.close();
		let now = before;
		for (let i = 0; i < 50 && now === before; i++) {
			await sleep(100);
			now = await cancelled();
		}
		assert.equal(now, before + 1, 'the call was not cancelled within 5 s of the hang-up');
		const r = await call(9, 'test_simple_text', {}, HDRS('tools/call', 'test_simple_text'));
		assert.equal(r.status, 200);
	});

	test('input_required: the requestState is bound to its tool and cannot be replayed on another', async () => {
		const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
		const first = await call(11, 'test_input_required_result_request_state', {}, HDRS('tools/call', 'test_input_required_result_request_state'), caps);
		assert.equal(first.status, 200, first.text);
		assert.equal(first.json.result.resultType, 'input_required');
		const state = first.json.result.requestState;
		assert.equal(typeof state, 'string');
		assert.ok(first.json.result.inputRequests.confirm, first.text);
		const answer = { confirm: { action: 'accept', content: { ok: true } } };
		const retry = (id, name, st) =>
			request(srv.mcpUrl, {
				method: 'POST',
				headers: HDRS('tools/call', name),
				body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, inputResponses: answer, requestState: st, _meta: { ...META, ...caps } } }),
			});
		const done = await retry(12, 'test_input_required_result_request_state', state);
		assert.equal(done.json.result.resultType, 'complete', done.text);
		assert.match(done.json.result.content[0].text, /state-ok/);
		// the same state on another tool, or changed by one character
		const moved = await retry(13, 'test_input_required_result_tampered_state', state);
		assert.equal(moved.json.error?.code, -32602, moved.text);
		assert.match(moved.json.error.message, /requestState/);
		const flipped = state.slice(0, 10) + (state[10] === 'A' ? 'B' : 'A') + state.slice(11);
		const changed = await retry(14, 'test_input_required_result_request_state', flipped);
		assert.equal(changed.json.error?.code, -32602, changed.text);
		// without the elicitation capability the tool cannot ask: -32021, HTTP 400
		const nocap = await call(15, 'test_input_required_result_elicitation', {}, HDRS('tools/call', 'test_input_required_result_elicitation'));
		assert.equal(nocap.status, 400, nocap.text);
		assert.equal(nocap.json.error.code, -32021);
		assert.deepEqual(nocap.json.error.data, { requiredCapabilities: { elicitation: {} } });
	});

	test('subscriptions/listen: acknowledged with the honored subset, then only what was asked, tagged', async () => {
		const listen = (id, notifications) =>
			open(srv.mcpUrl, {
				method: 'POST',
				headers: HDRS('subscriptions/listen'),
				body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: META } }),
			});
		const tools = await listen('L1', { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['test://no-such', 'test://watched-resource'] });
		const prompts = await listen('L2', { promptsListChanged: true });
		assert.ok(tools instanceof SseStream && prompts instanceof SseStream, 'listen did not open a stream');
		const ack = JSON.parse((await tools.next(5000)).data);
		assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
		// prompts never change here and an unknown resource cannot be watched: not promised
		assert.deepEqual(ack.params.notifications, { toolsListChanged: true, resourceSubscriptions: ['test://watched-resource'] });
		assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'L1');
		const ack2 = JSON.parse((await prompts.next(5000)).data);
		assert.deepEqual(ack2.params.notifications, {});
		const r = await call(20, 'test_trigger_tool_change', {}, HDRS('tools/call', 'test_trigger_tool_change'));
		assert.equal(r.json.result.resultType, 'complete', r.text);
		const changed = JSON.parse((await tools.next(5000)).data);
		assert.equal(changed.method, 'notifications/tools/list_changed');
		assert.equal(changed.params._meta['io.modelcontextprotocol/subscriptionId'], 'L1');
		await assert.rejects(prompts.next(700), /no SSE event/, 'a stream that did not ask got tools/list_changed');
		tools.close();
		prompts.close();
		for (let i = 0; i < 50; i++) {
			const m = parseMetrics((await request(`${srv.url}/metrics`)).text);
			if (metricValue(m, 'sextant_stateless_requests') === 0) return;
			await sleep(100);
		}
		assert.fail('the listen requests outlived their hang-up by 5 s (keep-alive 1 s)');
	});

	test('a finished request leaves nothing behind (not even until the next sweep)', async () => {
		const N = 64;
		const rs = await Promise.all(
			Array.from({ length: N }, (_, i) =>
				request(srv.mcpUrl, {
					method: 'POST',
					headers: HDRS('tools/list'),
					body: JSON.stringify({ jsonrpc: '2.0', id: 100 + i, method: 'tools/list', params: { _meta: META } }),
				}),
			),
		);
		assert.deepEqual([...new Set(rs.map((r) => r.status))], [200]);
		const m = parseMetrics((await request(`${srv.url}/metrics`)).text);
		assert.equal(metricValue(m, 'sextant_stateless_requests'), 0, 'request sessions outlived their requests');
		assert.equal(metricValue(m, 'sextant_sessions'), 0, 'a stateless request created a session');
	});

	test('2025 sessions are untouched: initialize still works, server/discover is theirs to miss', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST_2025);
		const r = await s.post({ jsonrpc: '2.0', id: 10, method: 'server/discover', params: {} });
		assert.equal(r.json.error.code, -32601, r.text);
	});
});

describe('two replicas sharing server.state_key_file', () => {
	let a, b, dir;
	before(async () => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-statekey-'));
		fs.writeFileSync(path.join(dir, 'key'), 'a-secret-of-more-than-thirty-two-bytes-0123456789\n');
		const env = { SEXTANT_SERVER_STATE_KEY_FILE: path.join(dir, 'key') };
		a = await startServer({ name: 'replica-a', env });
		b = await startServer({ name: 'replica-b', env });
	});
	after(async () => {
		await a?.kill();
		await b?.kill();
		if (dir) fs.rmSync(dir, { recursive: true, force: true });
	});

	const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
	const TOOL = 'test_input_required_result_request_state';
	const post = (srv, id, extra = {}) =>
		request(srv.mcpUrl, {
			method: 'POST',
			headers: { ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': TOOL },
			body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: {}, ...extra, _meta: META } }),
		});

	test('an input_required round started on one replica completes on the other', async () => {
		const first = await post(a, 1);
		assert.equal(first.json.result.resultType, 'input_required', first.text);
		const done = await post(b, 2, { inputResponses: { confirm: { action: 'accept', content: { ok: true } } }, requestState: first.json.result.requestState });
		assert.equal(done.json.result?.resultType, 'complete', done.text);
		assert.match(done.json.result.content[0].text, /state-ok/);
		// a replica with its own random key refuses it
		const c = await startServer({ name: 'replica-c' });
		try {
			const refused = await post(c, 3, { inputResponses: { confirm: { action: 'accept', content: { ok: true } } }, requestState: first.json.result.requestState });
			assert.equal(refused.json.error?.code, -32602, refused.text);
		} finally {
			await c.kill();
		}
	});

	test('a key file too short or missing stops the start with a message naming the key', () => {
		fs.writeFileSync(path.join(dir, 'short'), 'tiny');
		for (const f of [path.join(dir, 'short'), path.join(dir, 'missing')]) {
			const r = runSextant(['serve', '--config', CONFORMANCE_CONFIG], { env: { SEXTANT_SERVER_STATE_KEY_FILE: f, SEXTANT_LISTEN: '127.0.0.1:1' } });
			assert.equal(r.code, 2, `exit ${r.code}: ${r.stderr}`);
			assert.match(r.stderr, /server\.state_key_file/);
		}
	});
});

describe('body limit (server.max_body_bytes = 1024)', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'body-limit', env: { SEXTANT_SERVER_MAX_BODY_BYTES: '1024' } });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	test('413 beyond the limit, with or without Content-Length; smaller bodies pass', async () => {
		const pad = (n) => {
			const o = JSON.parse(INIT());
			o.params.clientInfo.name = 'x'.repeat(n);
			return JSON.stringify(o);
		};
		const big = pad(2000);
		assert.ok(big.length > 1024);
		const r = await request(srv.mcpUrl, { method: 'POST', headers: JSON_HEADERS, body: big });
		assert.equal(r.status, 413, `Content-Length body of ${big.length} bytes: HTTP ${r.status}`);
		const c = await request(srv.mcpUrl, { method: 'POST', headers: JSON_HEADERS, chunks: [big.slice(0, 600), big.slice(600)] });
		assert.equal(c.status, 413, `chunked body of ${big.length} bytes: HTTP ${c.status}`);
		const small = pad(700);
		assert.ok(small.length < 1024);
		const ok = await request(srv.mcpUrl, { method: 'POST', headers: JSON_HEADERS, body: small });
		assert.equal(ok.status, 200, `body of ${small.length} bytes: HTTP ${ok.status}`);
	});

	test('the server shuts down cleanly', async () => {
		await srv.stop();
	});
});

describe('auth ([auth] keys set)', () => {
	const key = 'sextant-test-key-0123456789';
	let srv;
	before(async () => {
		const h = runSextant(['hash-key', key]);
		assert.equal(h.code, 0, `hash-key: ${h.stderr}`);
		const hash = h.stdout.trim();
		assert.match(hash, /^sha256:[0-9a-f]{64}$/);
		srv = await startServer({ name: 'auth', env: { SEXTANT_AUTH_KEYS: hash } });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	test('401 with WWW-Authenticate: Bearer without a token or with a wrong one', async () => {
		for (const auth of [undefined, 'Bearer wrong-key', `Bearer ${key}x`, `Basic ${Buffer.from(`u:${key}`).toString('base64')}`, key]) {
			const headers = { ...JSON_HEADERS };
			if (auth) headers.authorization = auth;
			const r = await request(srv.mcpUrl, { method: 'POST', headers, body: INIT() });
			assert.equal(r.status, 401, `Authorization ${JSON.stringify(auth)}: HTTP ${r.status}`);
			assert.match(r.headers['www-authenticate'] ?? '', /^Bearer\b/, `WWW-Authenticate ${JSON.stringify(r.headers['www-authenticate'])}`);
			assert.ok(!(r.text ?? '').includes(key), 'the response echoes the key');
		}
		assert.ok(!srv.stderr().includes(key), 'the key appears in the server log');
	});

	test('the right bearer token is accepted on every request of a session', async () => {
		const s = new RawSession(srv.mcpUrl, { headers: { authorization: `Bearer ${key}` } });
		await s.initialize('2025-11-25');
		const r = await s.call('ping');
		assert.equal(r.status, 200);
		const bare = await request(srv.mcpUrl, {
			method: 'POST',
			headers: { ...JSON_HEADERS, 'mcp-session-id': s.sessionId, 'mcp-protocol-version': s.version },
			body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
		});
		assert.equal(bare.status, 401, `a session id is not a credential: HTTP ${bare.status}`);
	});

	test('/healthz and /readyz stay open', async () => {
		for (const p of ['/healthz', '/readyz']) {
			const r = await request(srv.url + p);
			assert.equal(r.status, 200, `${p}: HTTP ${r.status}`);
		}
	});

	test('the server shuts down cleanly', async () => {
		await srv.stop();
	});
});

describe('worker queue full (workers.threads = 1, workers.queue_size = 1)', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'queue', env: { SEXTANT_WORKERS_THREADS: '1', SEXTANT_WORKERS_QUEUE_SIZE: '1' } });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	test('503 with Retry-After and a JSON-RPC error body when the queue is full', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const callBody = (id) =>
			JSON.stringify({
				jsonrpc: '2.0',
				id,
				method: 'tools/call',
				params: { name: 'test_cancellation', arguments: { duration_ms: 3000 }, _meta: { progressToken: id } },
			});
		// Call 1 occupies the worker (wait for its first progress), call 2
		// fills the queue, calls 3 and 4 find it full.
		const first = await open(srv.mcpUrl, { method: 'POST', headers: s.headers(), body: callBody(1) });
		assert.ok(first instanceof SseStream, `call 1: HTTP ${first.status} ${first.text ?? ''}`);
		let ev;
		do ev = await first.next(5000);
		while (ev && !ev.data.includes('notifications/progress'));
		assert.ok(ev, 'call 1 sent no progress');
		const rest = await Promise.all([2, 3, 4].map((id) => open(srv.mcpUrl, { method: 'POST', headers: s.headers(), body: callBody(id) })));
		const statuses = [first, ...rest].map((r) => r.status);
		const busy = rest.filter((r) => r.status === 503);
		assert.ok(busy.length >= 1, `no 503 among ${statuses}`);
		assert.ok(busy.length <= 2, `call 2 fits in the queue: ${statuses}`);
		for (const r of busy) {
			assert.match(r.headers['retry-after'] ?? '', /^\d+$/, `Retry-After ${JSON.stringify(r.headers['retry-after'])}`);
			assert.equal(r.json?.jsonrpc, '2.0', `503 body: ${r.text}`);
			assert.equal(typeof r.json?.error?.code, 'number', `503 body: ${r.text}`);
		}
		// Cancel what runs, then the gateway takes calls again.
		for (const [i, r] of [first, ...rest].entries()) {
			if (r.status === 200) await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: i + 1, reason: 'test' } });
		}
		for (const r of [first, ...rest]) if (r instanceof SseStream) await collect(r, ['never'], 5000).catch(() => {});
		let ok;
		for (let i = 0; i < 50; i++) {
			ok = await s.call('tools/call', { name: 'test_simple_text' });
			if (ok.status !== 503) break;
			await sleep(100);
		}
		assert.equal(ok.status, 200, 'the queue never drained');
		assert.equal(ok.response?.result?.content?.[0]?.text, 'This is a simple text response for testing.');
	});

	test('the server shuts down cleanly', async () => {
		await srv.stop();
	});
});

describe('SIGTERM', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'sigterm' });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	test('an in-flight call is drained before the server exits 0', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const stream = await open(srv.mcpUrl, {
			method: 'POST',
			headers: s.headers(),
			body: JSON.stringify({
				jsonrpc: '2.0',
				id: 1,
				method: 'tools/call',
				params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 1 } },
			}),
		});
		assert.ok(stream instanceof SseStream, `HTTP ${stream.status} ${stream.text ?? ''}`);
		let ev;
		do ev = await stream.next(5000);
		while (ev && !ev.data.includes('notifications/progress'));
		assert.ok(ev, 'no progress before the stream ended');
		srv.terminate();
		const c = await collect(stream, [1], 10000);
		const stopped = await srv.stop().then(() => 'exited 0', (e) => e.message);
		assert.equal(c.responses.length, 1, `no response after SIGTERM (server then: ${stopped}); events: ${JSON.stringify(c.events)}`);
		assert.ok(c.responses[0].result, JSON.stringify(c.responses[0]));
		assert.notEqual(c.responses[0].result.isError, true);
		assert.equal(stopped, 'exited 0');
	});
});

describe('command line', () => {
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-cli-'));
	after(() => fs.rmSync(tmp, { recursive: true, force: true }));

	test('--version and --help exit 0', () => {
		const v = runSextant(['--version']);
		assert.equal(v.code, 0, v.stderr);
		assert.match(v.stdout, /\d+\.\d+\.\d+/);
		const h = runSextant(['--help']);
		assert.equal(h.code, 0, h.stderr);
		for (const word of ['serve', 'check-config', 'hash-key']) assert.ok(h.stdout.includes(word), `--help does not mention ${word}`);
	});

	test('an unknown command exits non-zero', () => {
		const r = runSextant(['no-such-command']);
		assert.notEqual(r.code, 0);
		assert.ok(r.stderr.length > 0, 'no error message');
	});

	test('hash-key prints sha256:<hex>, stable per key', () => {
		const a = runSextant(['hash-key', 'k1']);
		const b = runSextant(['hash-key', 'k1']);
		const c = runSextant(['hash-key', 'k2']);
		assert.equal(a.code, 0, a.stderr);
		assert.match(a.stdout.trim(), /^sha256:[0-9a-f]{64}$/);
		assert.equal(a.stdout, b.stdout);
		assert.notEqual(a.stdout, c.stdout);
	});

	test('check-config accepts a valid file and masks secrets', () => {
		const f = path.join(tmp, 'ok.toml');
		fs.writeFileSync(f, ['[server]', 'listen = "127.0.0.1:9999"', '', '[database]', 'url = "postgres://sextant:hunter2secret@db.invalid/sextant"', ''].join('\n'));
		const r = runSextant(['check-config', f]);
		assert.equal(r.code, 0, r.stderr);
		assert.ok(!(r.stdout + r.stderr).includes('hunter2secret'), `the database password is printed:\n${r.stdout}`);
		assert.ok(r.stdout.includes('****'), 'no masked value in the output');
		assert.ok(r.stdout.includes('127.0.0.1:9999'), 'the effective listen address is not printed');
	});

	test('check-config rejects a bad value, naming the key', () => {
		const f = path.join(tmp, 'bad.toml');
		fs.writeFileSync(f, '[server]\nmax_body_bytes = "lots"\n');
		const r = runSextant(['check-config', f]);
		assert.notEqual(r.code, 0);
		assert.match(r.stderr, /max_body_bytes/);
		const u = path.join(tmp, 'unknown.toml');
		fs.writeFileSync(u, '[server]\nno_such_key = 1\n');
		const ru = runSextant(['check-config', u]);
		assert.notEqual(ru.code, 0);
		assert.match(ru.stderr, /no_such_key/);
	});
});

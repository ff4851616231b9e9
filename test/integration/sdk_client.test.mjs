// sdk_client.test.mjs - the official MCP TypeScript SDK client
// (Client + StreamableHTTPClientTransport) against a gateway started with
// test/conformance.toml: listing with cursors, plain calls, progress,
// cancellation (and its metric), SEP-1699 reconnection through the SDK and
// by hand with Last-Event-ID, and argument validation errors.

import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { collect, metricValue, open, parseMetrics, request, RawSession, SseStream } from './lib/http.mjs';
import { startServer } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Tools test/conformance.toml must offer (digest Part B2, plus Sextant's
// test_cancellation).
const FIXTURE_TOOLS = [
	'test_simple_text',
	'test_image_content',
	'test_audio_content',
	'test_embedded_resource',
	'test_multiple_content_types',
	'test_tool_with_logging',
	'test_tool_with_progress',
	'test_error_handling',
	'test_reconnection',
	'test_sampling',
	'test_elicitation',
	'test_elicitation_sep1034_defaults',
	'test_elicitation_sep1330_enums',
	'json_schema_2020_12_tool',
	'test_cancellation',
];

let srv;
const clients = [];

before(async () => {
	srv = await startServer({ name: 'sdk' });
});

beforeEach(() => srv?.assertAlive());

after(async () => {
	for (const c of clients) await c.close().catch(() => {});
	if (srv) await srv.kill();
});

// A connected SDK client.  requests: [{method, headers}] of every HTTP
// request the transport made.
async function connect() {
	const client = new Client({ name: 'sextant-sdk-test', version: '1.0.0' });
	const errors = [];
	const requests = [];
	client.onerror = (e) => errors.push({ at: Date.now(), message: String(e?.message ?? e) });
	const spy = (url, init = {}) => {
		requests.push({ method: init.method ?? 'GET', headers: new Headers(init.headers) });
		return fetch(url, init);
	};
	const transport = new StreamableHTTPClientTransport(new URL(srv.mcpUrl), { fetch: spy });
	await client.connect(transport);
	clients.push(client);
	return { client, transport, errors, requests };
}

async function metrics() {
	const r = await request(`${srv.url}/metrics`);
	assert.equal(r.status, 200, `/metrics: HTTP ${r.status}`);
	return parseMetrics(r.text);
}

test('connect: initialize negotiates 2025-11-25 and the server declares tools', async () => {
	const { client, transport } = await connect();
	assert.equal(transport.protocolVersion, '2025-11-25');
	assert.ok(transport.sessionId, 'no session id');
	const info = client.getServerVersion();
	assert.ok(info?.name && info?.version, `serverInfo: ${JSON.stringify(info)}`);
	assert.ok(client.getServerCapabilities()?.tools, 'tools capability missing');
});

test('tools/list: following nextCursor until done lists every fixture once', async () => {
	const { client } = await connect();
	const names = [];
	let cursor;
	let pages = 0;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		pages++;
		for (const t of page.tools) {
			assert.ok(t.description, `${t.name} has no description`);
			assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema.type`);
			names.push(t.name);
		}
		cursor = page.nextCursor;
		assert.ok(pages < 100, 'more than 100 pages: the cursor does not advance');
	} while (cursor);
	assert.equal(new Set(names).size, names.length, `duplicates across pages: ${names}`);
	for (const n of FIXTURE_TOOLS) assert.ok(names.includes(n), `${n} missing from tools/list (${pages} pages: ${names})`);
});

test('tools/call test_simple_text returns its text', async () => {
	const { client } = await connect();
	const r = await client.callTool({ name: 'test_simple_text' });
	assert.notEqual(r.isError, true);
	assert.deepEqual(r.content, [{ type: 'text', text: 'This is a simple text response for testing.' }]);
});

test('tools/call test_tool_with_progress: >= 3 increasing progress notifications before the result', async () => {
	const { client } = await connect();
	const progress = [];
	let resultSeen = false;
	const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
		onprogress: (p) => progress.push({ ...p, afterResult: resultSeen }),
	});
	resultSeen = true;
	assert.notEqual(r.isError, true, JSON.stringify(r));
	assert.ok(progress.length >= 3, `got ${progress.length} progress notifications: ${JSON.stringify(progress)}`);
	for (let i = 1; i < progress.length; i++) {
		assert.ok(progress[i].progress > progress[i - 1].progress, `progress must increase: ${JSON.stringify(progress)}`);
	}
	assert.ok(progress.every((p) => !p.afterResult));
});

test('test_cancellation: aborting the call cancels it, progress stops, the metric counts it', async () => {
	const { client, errors } = await connect();
	const before = metricValue(await metrics(), 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
	const ac = new AbortController();
	let n = 0;
	let abortedAt = 0;
	const t0 = Date.now();
	const call = client.callTool({ name: 'test_cancellation', arguments: { duration_ms: 10000 } }, undefined, {
		signal: ac.signal,
		onprogress: () => {
			if (++n === 3) {
				abortedAt = Date.now();
				ac.abort(new Error('cancelled by the test'));
			}
		},
	});
	await assert.rejects(call, /cancelled by the test/);
	assert.equal(n, 3, 'progress reached the handler after the abort');
	// The SDK forgets the progress token on abort: any later progress or a
	// response for the call surfaces as a client error.  One step (100 ms)
	// may already be on the wire when the cancellation arrives.
	await sleep(1000);
	const late = errors.filter((e) => /progress notification|unknown message ID/i.test(e.message) && e.at - abortedAt > 300);
	assert.deepEqual(late.map((e) => e.message), [], 'server kept sending for the cancelled call');
	let after = before;
	for (let i = 0; i < 30 && after <= before; i++) {
		after = metricValue(await metrics(), 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		if (after <= before) await sleep(100);
	}
	assert.equal(after, before + 1, 'sextant_tool_calls_total{tool="test_cancellation",outcome="cancelled"} did not go up by 1');
	assert.ok(Date.now() - t0 < 9000, 'the call was not stopped early');
	// The session is still usable.
	const r = await client.callTool({ name: 'test_simple_text' });
	assert.equal(r.content[0].text, 'This is a simple text response for testing.');
});

test('test_reconnection through the SDK: the client resumes with Last-Event-ID and gets the result', async () => {
	const { client, requests } = await connect();
	const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, { timeout: 30000 });
	assert.notEqual(r.isError, true, JSON.stringify(r));
	assert.match(r.content?.[0]?.text ?? '', /Reconnection test completed/);
	const resumed = requests.filter((q) => q.method === 'GET' && q.headers.get('last-event-id'));
	assert.ok(resumed.length >= 1, 'the SDK never resumed with GET Last-Event-ID: the POST stream was not dropped before the result');
});

test('test_reconnection by hand: priming event, stream closed without the response, GET Last-Event-ID delivers it', async () => {
	const s = new RawSession(srv.mcpUrl);
	await s.initialize('2025-11-25');
	const post = await open(srv.mcpUrl, {
		method: 'POST',
		headers: s.headers(),
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'test_reconnection', arguments: {} } }),
	});
	assert.ok(post instanceof SseStream, `POST answered ${post.status} ${post.headers?.['content-type']}, expected an SSE stream`);
	assert.equal(post.status, 200);
	const first = await post.next();
	assert.ok(first, 'POST stream ended with no event');
	assert.ok(first.id, `first event has no id: ${JSON.stringify(first)}`);
	assert.equal(first.data, '', 'the priming event must have empty data');
	const c = await collect(post, [1], 10000);
	assert.ok(c.ended, 'POST stream did not close');
	assert.deepEqual(c.responses, [], 'the response came on the POST stream; test_reconnection must drop it first');
	const events = [first, ...c.events];
	assert.ok(events.some((e) => e.retry !== undefined && /^\d+$/.test(e.retry)), 'no SSE retry field before the close');
	const lastId = events.filter((e) => e.id).at(-1).id;

	// Another session must not be able to resume this stream.
	const other = new RawSession(srv.mcpUrl);
	await other.initialize('2025-11-25');
	const stolen = await open(srv.mcpUrl, {
		method: 'GET',
		headers: { accept: 'text/event-stream', 'mcp-session-id': other.sessionId, 'mcp-protocol-version': other.version, 'last-event-id': lastId },
	});
	if (stolen instanceof SseStream) {
		const leak = await collect(stolen, [1], 1500).catch(() => ({ responses: [] }));
		stolen.close();
		assert.deepEqual(leak.responses, [], 'another session replayed this stream');
	} else {
		assert.ok([400, 404].includes(stolen.status), `foreign Last-Event-ID: HTTP ${stolen.status}`);
	}

	const get = await open(srv.mcpUrl, {
		method: 'GET',
		headers: { accept: 'text/event-stream', 'mcp-session-id': s.sessionId, 'mcp-protocol-version': s.version, 'last-event-id': lastId },
	});
	assert.ok(get instanceof SseStream, `GET Last-Event-ID answered ${get.status} ${get.text ?? ''}`);
	assert.equal(get.status, 200);
	const g = await collect(get, [1], 10000);
	assert.equal(g.responses.length, 1, `no response on the resumed stream: ${JSON.stringify(g.events)}`);
	const resp = g.responses[0];
	assert.strictEqual(resp.id, 1);
	assert.match(resp.result?.content?.[0]?.text ?? '', /Reconnection test completed/);
	assert.ok(g.events.every((e) => !e.id || e.id !== lastId), 'the resumed stream replayed the event named by Last-Event-ID');
	const more = await get.next(5000).catch(() => 'still open');
	get.close();
	assert.equal(more, null, 'the resumed stream must end after the response (digest B4 step 4)');
	await s.delete();
	await other.delete();
});

test('a bad argument is a tool error (isError) naming the argument', async () => {
	const { client } = await connect();
	const r = await client.callTool({ name: 'test_cancellation', arguments: { duration_ms: 'x' } });
	assert.equal(r.isError, true, JSON.stringify(r));
	assert.match(r.content?.[0]?.text ?? '', /duration_ms/);
});

test('the server shuts down cleanly', async () => {
	for (const c of clients.splice(0)) await c.close().catch(() => {});
	await srv.stop();
});

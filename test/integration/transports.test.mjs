// transports.test.mjs - the two transports beside Streamable HTTP: stdio
// (`sextant stdio`, newline-delimited JSON-RPC on standard input and output)
// and the 2024-11-05 HTTP+SSE transport (GET /sse, POST /messages).  Each is
// driven by the official TypeScript SDK (StdioClientTransport,
// SSEClientTransport): listing tools page by page, calls, progress,
// sampling, cancellation, list-change notifications after a reload, the API
// key, and the status and query tools on a real PostgreSQL; and by hand for
// what the SDK never sends: malformed and overlong lines, messages before
// initialize, unknown sessions, bad bodies, a stream never initialized, a
// session that ends with its stream, SIGTERM and end of input with a call in
// flight, and a standard output that carries nothing but protocol.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { metricValue, open, parseMetrics, request } from './lib/http.mjs';
import { KIND, SpanBatch, newId, span } from './lib/otlpjson.mjs';
import { startPostgres } from './lib/pg.mjs';
import { BIN, CONFORMANCE_CONFIG, LOG_DIR, runSextant, sanitizerReports, serverEnv, startServer } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Tools of test/conformance.toml (fixtures), listed 4 per page here.
const FIXTURE_TOOLS = [
	'json_schema_2020_12_tool',
	'test_audio_content',
	'test_cancellation',
	'test_elicitation',
	'test_elicitation_sep1034_defaults',
	'test_elicitation_sep1330_enums',
	'test_embedded_resource',
	'test_error_handling',
	'test_image_content',
	'test_multiple_content_types',
	'test_reconnection',
	'test_sampling',
	'test_simple_text',
	'test_tool_with_logging',
	'test_tool_with_progress',
];
const PAGE = 4;
const PAGE_ENV = { SEXTANT_SERVER_LIST_PAGE_SIZE: String(PAGE) };
const SIMPLE_TEXT = 'This is a simple text response for testing.';

// ---- helpers ------------------------------------------------------------------

let stderrSeq = 0;
function stderrFile(name) {
	fs.mkdirSync(LOG_DIR, { recursive: true });
	return path.join(LOG_DIR, `${name}-${process.pid}-${++stderrSeq}.stderr`);
}

// A log line of the gateway: one JSON object with ts, level and msg.
function isLogLine(line) {
	try {
		const o = JSON.parse(line);
		return typeof o.ts === 'string' && typeof o.level === 'string' && typeof o.msg === 'string';
	} catch {
		return false;
	}
}

// An SDK client that declares sampling and answers every
// sampling/createMessage with "pong" (requests: the params it got).
function newClient(name) {
	const client = new Client({ name, version: '1.0.0' }, { capabilities: { sampling: {} } });
	const errors = [];
	const sampled = [];
	client.onerror = (e) => errors.push({ at: Date.now(), message: String(e?.message ?? e) });
	client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
		sampled.push(req.params);
		return { role: 'assistant', content: { type: 'text', text: 'pong' }, model: 'test-model' };
	});
	return { client, errors, sampled };
}

// `sextant stdio` through the SDK.  Resolves {client, errors, proc, exited,
// stderr()}: exited resolves to the process's {code, signal}.
async function stdioClient({ name, config = CONFORMANCE_CONFIG, env = {} }) {
	const stderrPath = stderrFile(name);
	const transport = new StdioClientTransport({
		command: BIN,
		args: ['stdio', '--config', config],
		env: serverEnv({ SEXTANT_SERVER_SHUTDOWN_GRACE_S: '2', ...env }),
		stderr: 'pipe',
	});
	const sink = fs.createWriteStream(stderrPath);
	transport.stderr.pipe(sink);
	const { client, errors, sampled } = newClient('sextant-stdio-test');
	await client.connect(transport);
	// The SDK keeps its child in a private field; the exit status is what
	// this test is about.
	const proc = transport._process;
	assert.ok(proc?.pid, 'no child process');
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
	const stderr = () => fs.readFileSync(stderrPath, 'utf8');
	return { client, transport, errors, sampled, proc, exited, stderr, stderrPath };
}

// An SDK client on GET /sse.  requests: [{method, url, headers}] of each
// fetch the transport made.
async function sseClient(srv, { headers } = {}) {
	const requests = [];
	const spy = (url, init = {}) => {
		requests.push({ method: init.method ?? 'GET', url: String(url), headers: new Headers(init.headers) });
		return fetch(url, init);
	};
	const transport = new SSEClientTransport(new URL(`${srv.url}/sse`), {
		fetch: spy,
		eventSourceInit: { fetch: spy },
		requestInit: headers ? { headers } : undefined,
	});
	const { client, errors, sampled } = newClient('sextant-sse-test');
	await client.connect(transport);
	return { client, transport, errors, sampled, requests };
}

// test_sampling: the server asks the client's LLM (a server-to-client
// request on the same channel) and returns its answer.
async function checkSampling(c) {
	const r = await c.client.callTool({ name: 'test_sampling', arguments: { prompt: 'ping?' } });
	assert.ok(!r.isError, JSON.stringify(r));
	assert.equal(r.content[0].text, 'LLM response: pong');
	assert.equal(c.sampled.at(-1)?.messages?.[0]?.content?.text, 'ping?');
}

// Every tool, following nextCursor; asserts the page size on the way.
async function listAllTools(client) {
	const names = [];
	let cursor;
	let pages = 0;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		pages++;
		assert.ok(page.tools.length <= PAGE, `page ${pages} holds ${page.tools.length} tools`);
		if (page.nextCursor) assert.equal(page.tools.length, PAGE, `a page before the last holds ${page.tools.length}`);
		names.push(...page.tools.map((t) => t.name));
		cursor = page.nextCursor;
		assert.ok(pages < 50, 'nextCursor never ends');
	} while (cursor);
	return { names, pages };
}

// Every fixture once (other fixtures may come and go: at least these).
async function checkListing(client) {
	const { names, pages } = await listAllTools(client);
	assert.deepEqual(FIXTURE_TOOLS.filter((n) => !names.includes(n)), [], `listed: ${names.join(' ')}`);
	assert.equal(new Set(names).size, names.length, 'a tool was listed twice');
	assert.equal(pages, Math.ceil(names.length / PAGE));
}

// test_tool_with_progress sends progress 0, 50 and 100 of 100, the last
// right before its result.  The SDK runs notification handlers a microtask
// after the messages of one read, so when the last progress and the result
// share a read it reports "unknown token" for that progress
// (typescript-sdk#2580).  stdio prevents it (a response waits until the
// client has read the notification before it); over SSE the client's reads
// are out of the server's hands, so there the last one may arrive that
// way.
async function checkProgress(client, errors, { lastMayBeLate = false } = {}) {
	const progress = [];
	let done = false;
	const since = errors.length;
	const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
		onprogress: (p) => progress.push({ ...p, afterResult: done }),
	});
	done = true;
	await sleep(50);
	assert.match(r.content[0].text, /progress/i);
	const late = errors.slice(since).filter((e) => /unknown token/.test(e.message));
	assert.deepEqual(errors.slice(since).filter((e) => !/unknown token/.test(e.message)), []);
	if (lastMayBeLate && late.length === 1 && /"progress":100,"total":100/.test(late[0].message)) {
		progress.push({ progress: 100, total: 100, late: true });
	} else {
		assert.deepEqual(late.map((e) => e.message), [], 'progress arrived after the result');
	}
	assert.ok(progress.length >= 3, `got ${progress.length} progress notifications: ${JSON.stringify(progress)}`);
	for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, JSON.stringify(progress));
	assert.ok(progress.every((p) => !p.afterResult));
}

// Aborts test_cancellation after its third progress notification; the call
// must stop (no later progress or response for it) and the session go on.
async function checkCancellation(client, errors) {
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
	await sleep(800);
	const late = errors.filter((e) => /progress notification|unknown message ID/i.test(e.message) && e.at - abortedAt > 300);
	assert.deepEqual(late.map((e) => e.message), [], 'the server kept sending for the cancelled call');
	assert.ok(Date.now() - t0 < 9000, 'the call was not stopped early');
	const r = await client.callTool({ name: 'test_simple_text' });
	assert.equal(r.content[0].text, SIMPLE_TEXT);
}

// ---- stdio through the SDK ----------------------------------------------------------

describe('stdio: the SDK StdioClientTransport', () => {
	let c;

	before(async () => {
		c = await stdioClient({ name: 'transports-stdio', env: PAGE_ENV });
	});

	after(async () => {
		if (c?.proc.exitCode === null) c.proc.kill('SIGKILL');
	});

	test('initialize: the server introduces itself and declares tools', () => {
		const info = c.client.getServerVersion();
		assert.equal(info?.name, 'sextant');
		assert.ok(c.client.getServerCapabilities()?.tools, 'no tools capability');
	});

	test('tools/list: every fixture once, 4 per page, following nextCursor', async () => {
		await checkListing(c.client);
	});

	test('tools/call: a plain call answers', async () => {
		const r = await c.client.callTool({ name: 'test_simple_text' });
		assert.equal(r.content[0].text, SIMPLE_TEXT);
		assert.ok(!r.isError);
	});

	test('progress: notifications arrive before the result, increasing', async () => {
		// several times: the last progress and the result are written
		// back to back
		for (let i = 0; i < 5; i++) await checkProgress(c.client, c.errors);
	});

	test('sampling: a server-to-client request is answered on stdin', async () => {
		await checkSampling(c);
	});

	test('cancellation: an aborted call stops and the session goes on', async () => {
		await checkCancellation(c.client, c.errors);
		assert.match(c.stderr(), /"msg":"tool call cancelled"[^\n]*"tool":"test_cancellation"/);
	});

	test('closing stdin ends the process with status 0; stdout held only protocol, stderr the logs', async () => {
		const t0 = Date.now();
		await c.client.close();
		const st = await c.exited;
		assert.deepEqual(st, { code: 0, signal: null }, `exit ${JSON.stringify(st)}`);
		assert.ok(Date.now() - t0 < 2000, 'the SDK had to signal the process: it did not exit on end of input');
		// Any non-protocol line on stdout is an SDK parse error.
		assert.deepEqual(c.errors.map((e) => e.message), []);
		const lines = c.stderr().trimEnd().split('\n');
		assert.ok(lines.some((l) => /serving MCP on standard input/.test(l)), 'no start-up log line on stderr');
		assert.deepEqual(lines.filter((l) => !isLogLine(l) && l !== ''), [], 'stderr lines that are not log lines');
		assert.deepEqual(sanitizerReports(c.stderr()), []);
	});
});

// ---- stdio by hand --------------------------------------------------------------------

// `sextant stdio` with pipes: send(lines) writes, next() resolves the next
// stdout line parsed (every stdout line must be a JSON-RPC message).
class RawStdio {
	constructor({ name, env = {}, config = CONFORMANCE_CONFIG }) {
		this.stderrPath = stderrFile(name);
		const fd = fs.openSync(this.stderrPath, 'w');
		this.proc = spawn(BIN, ['stdio', '--config', config], {
			env: serverEnv({ SEXTANT_SERVER_SHUTDOWN_GRACE_S: '2', ...env }),
			stdio: ['pipe', 'pipe', fd],
		});
		fs.closeSync(fd);
		this.lines = [];
		this.raw = '';
		this.waiters = [];
		this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
		this.proc.stdout.setEncoding('utf8');
		this.proc.stdout.on('data', (chunk) => {
			this.raw += chunk;
			let i;
			while ((i = this.raw.indexOf('\n')) >= 0) {
				const line = this.raw.slice(0, i);
				this.raw = this.raw.slice(i + 1);
				let msg;
				try {
					msg = JSON.parse(line);
				} catch {
					msg = { notJson: line };
				}
				this.lines.push(msg);
				const w = this.waiters.shift();
				if (w) w();
			}
		});
		this.read = 0;
	}

	send(...msgs) {
		for (const m of msgs) this.proc.stdin.write(typeof m === 'string' ? m : `${JSON.stringify(m)}\n`);
	}

	async next(timeoutMs = 10000) {
		const deadline = Date.now() + timeoutMs;
		while (this.read >= this.lines.length) {
			if (Date.now() > deadline) throw new Error(`no stdout line within ${timeoutMs} ms; stderr:\n${this.stderr()}`);
			await new Promise((resolve) => {
				this.waiters.push(resolve);
				setTimeout(resolve, 100);
			});
		}
		const msg = this.lines[this.read++];
		assert.equal(msg.notJson, undefined, `stdout line is not JSON: ${msg.notJson}`);
		assert.equal(msg.jsonrpc, '2.0', `stdout line is not JSON-RPC: ${JSON.stringify(msg)}`);
		return msg;
	}

	// The next message that is a response (skipping notifications).
	async response(timeoutMs) {
		for (;;) {
			const m = await this.next(timeoutMs);
			if ('result' in m || 'error' in m) return m;
		}
	}

	stderr() {
		return fs.readFileSync(this.stderrPath, 'utf8');
	}
}

const initialize = (id, version = '2025-11-25') => ({
	jsonrpc: '2.0',
	id,
	method: 'initialize',
	params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

describe('stdio: framing and bad input by hand', () => {
	test('malformed, overlong, early and batched lines get errors and the server keeps going', async () => {
		const s = new RawStdio({ name: 'transports-stdio-raw', env: { SEXTANT_SERVER_MAX_BODY_BYTES: '1024' } });
		try {
			s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
			let m = await s.response();
			assert.equal(m.id, 1);
			assert.equal(m.error?.code, -32600);
			assert.match(m.error.message, /initialize/);

			s.send('{"jsonrpc": "2.0", "id": 2, "method": "ping"}\r\n'); // CRLF, before initialize
			m = await s.response();
			assert.deepEqual(m, { jsonrpc: '2.0', id: 2, result: {} });

			s.send('{"jsonrpc":"2.0","id":3,\n'); // cut short
			m = await s.response();
			assert.equal(m.id, null);
			assert.equal(m.error?.code, -32700, JSON.stringify(m));

			s.send(initialize(4, '2025-06-18'));
			m = await s.response();
			assert.equal(m.id, 4);
			assert.equal(m.result?.protocolVersion, '2025-06-18');
			s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });

			// A line past server.max_body_bytes, written in small pieces.
			const big = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping', params: { pad: 'x'.repeat(3000) } });
			for (let i = 0; i < big.length; i += 500) s.send(big.slice(i, i + 500));
			s.send('\n');
			m = await s.response();
			assert.equal(m.id, null);
			assert.equal(m.error?.code, -32600);
			assert.match(m.error.message, /too large.*1024.*max_body_bytes/);

			s.send('[{"jsonrpc":"2.0","id":6,"method":"ping"}]\n'); // batches: 2025-03-26 only
			m = await s.response();
			assert.equal(m.error?.code, -32600);
			assert.match(m.error.message, /batch/);

			s.send('"just a string"\n', '{"jsonrpc":"2.0","id":7}\n', '\n', '   \n');
			m = await s.response();
			assert.equal(m.error?.code, -32600);
			m = await s.response();
			assert.equal(m.error?.code, -32600);

			s.send(initialize(8));
			m = await s.response();
			assert.equal(m.id, 8);
			assert.match(m.error?.message ?? '', /already initialized/);

			s.send({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'test_simple_text', arguments: {} } });
			m = await s.response();
			assert.equal(m.id, 9);
			assert.equal(m.result?.content?.[0]?.text, SIMPLE_TEXT);

			s.proc.stdin.end();
			assert.deepEqual(await s.exited, { code: 0, signal: null });
			assert.equal(s.raw, '', 'a partial line on stdout');
			// Every stdout line was checked by next(): none was left unread.
			assert.equal(s.read, s.lines.length, `unread stdout lines: ${JSON.stringify(s.lines.slice(s.read))}`);
			const err = s.stderr();
			assert.ok(err.split('\n').filter(Boolean).every(isLogLine), `stderr:\n${err}`);
			assert.deepEqual(sanitizerReports(err), []);
		} finally {
			if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
		}
	});

	test('SIGTERM drains: a call in flight finishes and is answered, then exit 0', async () => {
		const s = new RawStdio({ name: 'transports-stdio-term' });
		try {
			s.send(initialize(1));
			await s.response();
			s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
			s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_cancellation', arguments: { duration_ms: 700 } } });
			await sleep(200);
			s.proc.kill('SIGTERM');
			const m = await s.response();
			assert.equal(m.id, 2);
			assert.ok(m.result && !m.result.isError, JSON.stringify(m));
			assert.deepEqual(await s.exited, { code: 0, signal: null });
			assert.match(s.stderr(), /SIGTERM/);
			assert.deepEqual(sanitizerReports(s.stderr()), []);
		} finally {
			if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
		}
	});

	test('end of input with a call in flight: the answer is still written, then exit 0', async () => {
		const s = new RawStdio({ name: 'transports-stdio-eof' });
		try {
			s.send(initialize(1), { jsonrpc: '2.0', method: 'notifications/initialized' });
			s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_cancellation', arguments: { duration_ms: 300 } } });
			s.proc.stdin.end();
			assert.equal((await s.response()).id, 1);
			const m = await s.response();
			assert.equal(m.id, 2);
			assert.ok(m.result && !m.result.isError, JSON.stringify(m));
			assert.deepEqual(await s.exited, { code: 0, signal: null });
		} finally {
			if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
		}
	});
});

// ---- legacy HTTP+SSE ----------------------------------------------------------------------

describe('legacy HTTP+SSE (2024-11-05)', () => {
	const IDLE_S = 10; // the smallest server.session_idle_timeout_s
	let srv;
	const clients = [];

	before(async () => {
		srv = await startServer({
			name: 'transports-sse',
			env: { ...PAGE_ENV, SEXTANT_SERVER_SSE_KEEPALIVE_S: '1', SEXTANT_SERVER_SESSION_IDLE_TIMEOUT_S: String(IDLE_S) },
		});
	});

	after(async () => {
		for (const c of clients) await c.close().catch(() => {});
		if (srv) await srv.stop();
	});

	async function connect() {
		const c = await sseClient(srv);
		clients.push(c.client);
		return c;
	}

	async function metrics() {
		return parseMetrics((await request(`${srv.url}/metrics`)).text);
	}

	test('SDK: connects, lists every tool page by page, calls, gets progress', async () => {
		const { client, errors, requests } = await connect();
		assert.equal(client.getServerVersion()?.name, 'sextant');
		const posts = requests.filter((r) => r.method === 'POST');
		assert.ok(posts.length >= 2, 'no POSTs');
		assert.ok(posts.every((r) => /\/messages\?session_id=[0-9a-f]{32}$/.test(r.url)), posts.map((r) => r.url).join(' '));
		// The SDK asked for its newest revision, which this transport serves.
		assert.equal(posts.at(-1).headers.get('mcp-protocol-version'), '2025-11-25');
		await checkListing(client);
		const r = await client.callTool({ name: 'test_simple_text' });
		assert.equal(r.content[0].text, SIMPLE_TEXT);
		await checkProgress(client, errors, { lastMayBeLate: true });
	});

	test('SDK: sampling goes out on the stream and its answer comes back by POST', async () => {
		const c = await connect();
		await checkSampling(c);
		assert.deepEqual(c.errors.map((e) => e.message), []);
	});

	test('SDK: cancellation stops the call and counts it', async () => {
		const { client, errors } = await connect();
		const count = async () => metricValue(await metrics(), 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		const before0 = await count();
		await checkCancellation(client, errors);
		let now = before0;
		for (let i = 0; i < 30 && now <= before0; i++) {
			now = await count();
			if (now <= before0) await sleep(100);
		}
		assert.equal(now, before0 + 1);
	});

	// A raw stream: resolves {stream, endpoint}.
	async function rawStream(headers = {}) {
		const stream = await open(`${srv.url}/sse`, { headers: { accept: 'text/event-stream', ...headers } });
		assert.equal(stream.status, 200, `GET /sse: ${stream.status} ${stream.text ?? ''}`);
		assert.match(stream.headers['content-type'], /^text\/event-stream/);
		const first = await stream.next();
		assert.equal(first.event, 'endpoint');
		assert.match(first.data, /^\/messages\?session_id=[0-9a-f]{32}$/);
		assert.equal(first.id, undefined);
		return { stream, endpoint: `${srv.url}${first.data}` };
	}

	const post = (url, body, headers = {}) =>
		request(url, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...headers },
			body: typeof body === 'string' ? body : JSON.stringify(body),
		});

	// The next `message` event's JSON, skipping keep-alives.
	async function nextMessage(stream) {
		const ev = await stream.next();
		assert.ok(ev, 'the stream ended');
		assert.equal(ev.event, 'message', JSON.stringify(ev));
		assert.equal(ev.id, undefined, 'a legacy event carries an id');
		return JSON.parse(ev.data);
	}

	test('by hand: endpoint first, 202 for every message, answers as `event: message`, revisions', async () => {
		const { stream, endpoint } = await rawStream();
		try {
			let r = await post(endpoint, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
			assert.equal(r.status, 202);
			let m = await nextMessage(stream);
			assert.equal(m.id, 1);
			assert.match(m.error?.message ?? '', /initialize/);

			r = await post(endpoint, initialize(2, '2024-11-05'));
			assert.equal(r.status, 202);
			m = await nextMessage(stream);
			assert.equal(m.id, 2);
			assert.equal(m.result.protocolVersion, '2024-11-05');
			assert.equal(m.result.serverInfo.name, 'sextant');
			assert.equal((await post(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);

			r = await post(endpoint, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'p' } } });
			assert.equal(r.status, 202);
			const progress = [];
			for (;;) {
				m = await nextMessage(stream);
				if (m.method === 'notifications/progress') progress.push(m.params.progress);
				else break;
			}
			assert.equal(m.id, 3);
			assert.ok(progress.length >= 3, JSON.stringify(progress));
			// 2024-11-05 progress has no message field
			assert.equal((await post(endpoint, initialize(4))).status, 202);
			m = await nextMessage(stream);
			assert.match(m.error?.message ?? '', /already initialized/);
		} finally {
			stream.close();
		}
		// A revision this transport does not serve falls back to its own.
		const two = await rawStream();
		try {
			await post(two.endpoint, initialize(1, '1999-01-01'));
			assert.equal((await nextMessage(two.stream)).result?.protocolVersion, '2024-11-05');
		} finally {
			two.stream.close();
		}
	});

	test('by hand: unknown or missing session 404/400, bad bodies 400, wrong method 405, foreign Host 403', async () => {
		const { stream, endpoint } = await rawStream();
		try {
			let r = await post(`${srv.url}/messages?session_id=${'0'.repeat(32)}`, { jsonrpc: '2.0', id: 1, method: 'ping' });
			assert.equal(r.status, 404);
			assert.match(r.json?.error?.message ?? '', /session not found/);
			r = await post(`${srv.url}/messages`, { jsonrpc: '2.0', id: 1, method: 'ping' });
			assert.equal(r.status, 400);
			assert.match(r.json?.error?.message ?? '', /session_id/);
			r = await post(endpoint, '{"jsonrpc":');
			assert.equal(r.status, 400);
			assert.equal(r.json?.error?.code, -32700);
			r = await post(endpoint, '[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
			assert.equal(r.status, 400);
			assert.equal(r.json?.error?.code, -32600);
			r = await post(endpoint, { jsonrpc: '1.0', id: 1, method: 'ping' });
			assert.equal(r.status, 400);
			assert.equal(r.json?.error?.code, -32600);
			r = await post(endpoint, 'x', { 'content-type': 'text/plain' });
			assert.equal(r.status, 415);
			r = await request(endpoint);
			assert.equal(r.status, 405);
			assert.equal(r.headers.allow, 'POST');
			r = await request(`${srv.url}/sse`, { headers: { accept: 'application/json' } });
			assert.equal(r.status, 406);
			r = await request(`${srv.url}/sse`, { headers: { accept: 'text/event-stream', host: 'evil.example:80' } });
			assert.equal(r.status, 403);
			// The stream is still good after all that.
			assert.equal((await post(endpoint, initialize(9))).status, 202);
			assert.equal((await nextMessage(stream)).id, 9);
		} finally {
			stream.close();
		}
	});

	test('by hand: a stream never initialized gets keep-alives, then ends after the idle timeout', async () => {
		const t0 = Date.now();
		const { stream, endpoint } = await rawStream();
		try {
			while (!stream.comments.length && Date.now() - t0 < 3000) await sleep(50);
			assert.ok(stream.comments.includes('keepalive'), `no keep-alive within 3 s: ${JSON.stringify(stream.comments)}`);
			assert.equal(await stream.next((IDLE_S + 5) * 1000), null, 'an event on an idle stream');
			assert.ok(Date.now() - t0 >= IDLE_S * 1000, 'ended before the idle timeout');
			assert.equal((await post(endpoint, initialize(1))).status, 404);
		} finally {
			stream.close();
		}
	});

	test('by hand: closing the stream ends the session and cancels its call in flight', async () => {
		const count = async () => metricValue(await metrics(), 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		const before0 = await count();
		const { stream, endpoint } = await rawStream();
		await post(endpoint, initialize(1, '2024-11-05'));
		await nextMessage(stream);
		await post(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' });
		await post(endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_cancellation', arguments: { duration_ms: 20000 } } });
		await sleep(300);
		stream.close();
		// The server notices at its next write (progress or a keep-alive,
		// every second here).
		let status = 202;
		for (let i = 0; i < 50 && status !== 404; i++) {
			await sleep(100);
			status = (await post(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' })).status;
		}
		assert.equal(status, 404, 'the session outlived its stream');
		let now = before0;
		for (let i = 0; i < 30 && now <= before0; i++) {
			now = await count();
			if (now <= before0) await sleep(100);
		}
		assert.equal(now, before0 + 1, 'the call in flight was not cancelled');
	});
});

// ---- tools on a real database, over both transports ------------------------------------

describe('status and query tools on PostgreSQL over stdio and SSE', () => {
	let pg;
	let srv;
	const SERVICE = 'transports-svc';
	const ENV = { SEXTANT_CONFORMANCE_ENABLED: 'false' };

	before(async () => {
		pg = await startPostgres({ name: 'transports' });
		srv = await startServer({ name: 'transports-pg', env: { DATABASE_URL: pg.url, ...ENV } });
		const batch = new SpanBatch();
		const now = BigInt(Date.now()) * 1000000n;
		for (let i = 0; i < 12; i++) {
			batch.add(SERVICE, 'otlp', span({
				traceId: newId(16),
				spanId: newId(8),
				name: 'GET /api/items',
				kind: KIND.SERVER,
				startNs: now - BigInt(60000 + i * 1000) * 1000000n,
				durNs: 5000000n,
				attributes: { 'http.request.method': 'GET', 'http.route': '/api/items', 'http.response.status_code': 200 },
			}));
		}
		await batch.post(srv.url);
	});

	after(async () => {
		try {
			if (srv) await srv.stop();
		} finally {
			if (pg) await pg.stop();
		}
	});

	async function checkTools(client) {
		const st = await client.callTool({ name: 'get_server_status', arguments: {} });
		assert.ok(!st.isError, JSON.stringify(st));
		assert.equal(typeof st.structuredContent?.version, 'string', JSON.stringify(st));
		const q = await client.callTool({ name: 'query_metrics', arguments: { service: SERVICE, time_range: '1h' } });
		assert.ok(!q.isError, JSON.stringify(q));
		const text = q.content.map((c) => c.text ?? '').join('\n');
		assert.match(text, /\/api\/items/, text);
		assert.match(text, /\b12\b/, `12 requests expected in:\n${text}`);
	}

	test('stdio: get_server_status and query_metrics', async () => {
		const c = await stdioClient({ name: 'transports-stdio-pg', config: CONFORMANCE_CONFIG, env: { DATABASE_URL: pg.url, ...ENV } });
		try {
			await checkTools(c.client);
			await c.client.close();
			assert.deepEqual(await c.exited, { code: 0, signal: null });
			assert.deepEqual(sanitizerReports(c.stderr()), []);
		} finally {
			if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
		}
	});

	test('SSE: get_server_status and query_metrics', async () => {
		const { client } = await sseClient(srv);
		try {
			await checkTools(client);
		} finally {
			await client.close();
		}
	});
});

// ---- session-wide notifications (the standalone stream) -------------------------------

describe('tools/list_changed after a reload reaches stdio and SSE clients', () => {
	let dir;
	let config;
	let srv;

	before(async () => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-transports-'));
		config = path.join(dir, 'sextant.toml');
		fs.copyFileSync(CONFORMANCE_CONFIG, config);
		srv = await startServer({ name: 'transports-reload', config });
	});

	after(async () => {
		try {
			if (srv) await srv.stop();
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	test('SIGHUP with test_simple_text disabled: both get the notification, the tool is gone', async () => {
		const s = new RawStdio({ name: 'transports-stdio-reload', config });
		const { stream, endpoint } = await (async () => {
			const st = await open(`${srv.url}/sse`, { headers: { accept: 'text/event-stream' } });
			const first = await st.next();
			return { stream: st, endpoint: `${srv.url}${first.data}` };
		})();
		try {
			s.send(initialize(1));
			assert.equal((await s.response()).id, 1);
			await request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(initialize(1, '2024-11-05')) });
			assert.equal(JSON.parse((await stream.next()).data).id, 1);

			const text = fs.readFileSync(CONFORMANCE_CONFIG, 'utf8').replace(/^disabled = \[\]$/m, 'disabled = ["test_simple_text"]');
			assert.match(text, /test_simple_text/, 'the [tools] disabled line of test/conformance.toml moved');
			fs.writeFileSync(config, text);
			s.proc.kill('SIGHUP');
			srv.proc.kill('SIGHUP');

			const note = await s.next();
			assert.equal(note.method, 'notifications/tools/list_changed', JSON.stringify(note));
			let ev;
			do ev = await stream.next();
			while (ev && ev.event !== 'message');
			assert.equal(ev?.event, 'message');
			assert.equal(ev.id, undefined);
			assert.equal(JSON.parse(ev.data).method, 'notifications/tools/list_changed');

			s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
			const list = await s.response();
			const names = list.result.tools.map((t) => t.name);
			assert.ok(!names.includes('test_simple_text'), names.join(' '));
			assert.ok(names.includes('test_tool_with_progress'));

			s.proc.stdin.end();
			assert.deepEqual(await s.exited, { code: 0, signal: null });
			assert.deepEqual(sanitizerReports(s.stderr()), []);
		} finally {
			stream.close();
			if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
		}
	});
});

// ---- the gate's API key applies to /sse and /messages -----------------------------------

describe('legacy HTTP+SSE behind an API key', () => {
	const KEY = 'transports-test-key-0123456789';
	let srv;

	before(async () => {
		const h = runSextant(['hash-key', KEY]);
		assert.equal(h.code, 0, `hash-key: ${h.stderr}`);
		srv = await startServer({ name: 'transports-auth', env: { SEXTANT_AUTH_KEYS: h.stdout.trim() } });
	});

	after(async () => {
		if (srv) await srv.stop();
	});

	test('401 without the key on GET /sse and POST /messages; the SDK with the key works', async () => {
		let r = await request(`${srv.url}/sse`, { headers: { accept: 'text/event-stream' } });
		assert.equal(r.status, 401);
		assert.match(r.headers['www-authenticate'] ?? '', /^Bearer/);
		const { client, requests } = await sseClient(srv, { headers: { authorization: `Bearer ${KEY}` } });
		try {
			const t = await client.callTool({ name: 'test_simple_text' });
			assert.equal(t.content[0].text, SIMPLE_TEXT);
			const endpoint = requests.find((x) => x.method === 'POST').url;
			r = await request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
			assert.equal(r.status, 401);
			r = await request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
			assert.equal(r.status, 401);
		} finally {
			await client.close();
		}
	});
});

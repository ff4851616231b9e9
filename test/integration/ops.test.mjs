// ops.test.mjs - what operators rely on: HTTPS with [server.tls], SIGHUP
// reloads (tool set, log level, keys; a bad file keeps the running config),
// list_changed and resources/updated notifications on the standalone
// stream, cursor pagination of every list method, and the README's curl
// session run exactly as printed.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { RawSession, open, SseStream, LATEST, parseMetrics, metricValue } from './lib/http.mjs';
import { startServer, serverEnv, BIN, ROOT, CONFORMANCE_CONFIG } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-ops-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

// Reads events from a standalone GET stream until one matches pred.
async function waitEvent(stream, pred, timeoutMs = 8000) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const left = deadline - Date.now();
		if (left <= 0) return null;
		let ev;
		try {
			ev = await stream.next(left);
		} catch {
			return null;
		}
		if (!ev) return null;
		if (!ev.data) continue;
		const msg = JSON.parse(ev.data);
		if (pred(msg)) return msg;
	}
}

async function openStandalone(srv, s) {
	const g = await open(srv.mcpUrl, {
		method: 'GET',
		headers: { accept: 'text/event-stream', 'mcp-session-id': s.sessionId, 'mcp-protocol-version': s.version },
	});
	assert.ok(g instanceof SseStream, `GET: HTTP ${g.status}`);
	return g;
}

describe('HTTPS ([server.tls] cert and key)', () => {
	const cert = path.join(tmp, 'cert.pem');
	const key = path.join(tmp, 'key.pem');
	let proc;
	let port;
	before(async () => {
		execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
			'-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
			{ stdio: 'ignore' });
		port = await new Promise((resolve) => {
			const s = net.createServer().listen(0, '127.0.0.1', () => {
				const p = s.address().port;
				s.close(() => resolve(p));
			});
		});
		proc = spawn(BIN, ['serve', '--config', CONFORMANCE_CONFIG], {
			env: serverEnv({ SEXTANT_LISTEN: `127.0.0.1:${port}`, SEXTANT_SERVER_TLS_CERT: cert,
				SEXTANT_SERVER_TLS_KEY: key }),
			stdio: ['ignore', 'ignore', 'pipe'],
		});
		proc.stderrText = '';
		proc.stderr.on('data', (c) => (proc.stderrText += c));
	});
	after(async () => {
		if (proc.exitCode === null) {
			const done = new Promise((r) => proc.on('exit', r));
			proc.kill('SIGTERM');
			await done;
		}
		assert.equal(proc.exitCode, 0, proc.stderrText);
		assert.doesNotMatch(proc.stderrText, /AddressSanitizer|runtime error:|LeakSanitizer/);
	});

	function tlsPost(body) {
		return new Promise((resolve, reject) => {
			const req = https.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', ca: fs.readFileSync(cert),
				servername: 'localhost',
				headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
					host: `localhost:${port}`, 'content-length': Buffer.byteLength(body) } }, (r) => {
				let text = '';
				r.on('data', (c) => (text += c));
				r.on('end', () => resolve({ status: r.statusCode, headers: r.headers, text }));
			});
			req.on('error', reject);
			req.end(body);
		});
	}

	test('serves MCP over TLS with the configured certificate', async () => {
		const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
		let res;
		for (let i = 0; i < 100 && !res; i++) {
			res = await tlsPost(body).catch(() => null);
			if (!res) await sleep(100);
		}
		assert.ok(res, `no TLS answer; stderr:\n${proc.stderrText}`);
		assert.equal(res.status, 200, res.text);
		assert.equal(JSON.parse(res.text).result.protocolVersion, LATEST);
		assert.ok(res.headers['mcp-session-id']);
		assert.match(proc.stderrText, /listening on https:/);
	});

	test('plain HTTP on the TLS port gets no MCP answer', async () => {
		const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) })
			.then((x) => x.status).catch(() => 'refused');
		assert.notEqual(r, 200);
	});
});

describe('SIGHUP reload', () => {
	let srv;
	const conf = path.join(tmp, 'reload.toml');
	const base = fs.readFileSync(CONFORMANCE_CONFIG, 'utf8');
	before(async () => {
		fs.writeFileSync(conf, base);
		srv = await startServer({ name: 'reload', config: conf, env: { SEXTANT_SERVER_SSE_KEEPALIVE_S: '1' } });
	});
	after(async () => srv && srv.stop());

	test('a changed tool set is applied and announced with notifications/tools/list_changed', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const before = (await s.call('tools/list')).response.result.tools.map((t) => t.name);
		assert.ok(before.includes('test_simple_text'));
		const g = await openStandalone(srv, s);
		try {
			fs.writeFileSync(conf, base.replace('disabled = []', 'disabled = ["test_simple_text"]'));
			srv.proc.kill('SIGHUP');
			const note = await waitEvent(g, (m) => m.method === 'notifications/tools/list_changed');
			assert.ok(note, 'no notifications/tools/list_changed on the standalone stream');
		} finally {
			g.close();
		}
		const afterNames = (await s.call('tools/list')).response.result.tools.map((t) => t.name);
		assert.ok(!afterNames.includes('test_simple_text'), 'the disabled tool is still listed');
		assert.equal(afterNames.length, before.length - 1);
		const call = await s.call('tools/call', { name: 'test_simple_text', arguments: {} });
		assert.equal(call.response.error?.code, -32602, JSON.stringify(call.response));
	});

	test('an invalid file keeps the running config and logs why', async () => {
		fs.writeFileSync(conf, base.replace('max_sessions =', 'max_sesions ='));
		srv.proc.kill('SIGHUP');
		let logged = false;
		for (let i = 0; i < 50 && !logged; i++) {
			await sleep(100);
			logged = /reload failed, keeping the running config.*max_sesions.*did you mean/.test(srv.stderr());
		}
		assert.ok(logged, `no reload failure logged:\n${srv.tail(5)}`);
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const names = (await s.call('tools/list')).response.result.tools.map((t) => t.name);
		assert.ok(!names.includes('test_simple_text'), 'the last good config was not kept');
		assert.ok(names.includes('test_error_handling'));
	});

	test('log.level is applied at run time', async () => {
		fs.writeFileSync(conf, base.replace('level = "info"', 'level = "debug"'));
		srv.proc.kill('SIGHUP');
		let debug = false;
		for (let i = 0; i < 50 && !debug; i++) {
			await sleep(100);
			await fetch(`${srv.url}/healthz`).then((r) => r.arrayBuffer());
			debug = /"level":"debug"/.test(srv.stderr());
		}
		assert.ok(debug, 'no debug line after reloading with log.level = "debug"');
	});
});

describe('tool call durations to the microsecond', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'durations', config: CONFORMANCE_CONFIG });
	});
	after(async () => srv && srv.stop());

	// A call of test_simple_text takes well under a millisecond: counted in
	// whole milliseconds, its log line said 0, 1 or 2 and the histogram
	// observed as much.
	test('the log line and sextant_tool_call_duration_seconds carry sub-millisecond durations', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		for (let i = 0; i < 5; i++) {
			const r = await s.call('tools/call', { name: 'test_simple_text', arguments: {} });
			assert.ok(r.response.result, JSON.stringify(r.response));
		}
		let lines = [];
		for (let i = 0; i < 50 && lines.length < 5; i++) {
			lines = srv.stderr().split('\n').filter((l) => l.includes('"tool":"test_simple_text"') && l.includes('tool call ok'));
			if (lines.length < 5) await sleep(50);
		}
		assert.equal(lines.length, 5, srv.stderr());
		const ms = lines.map((l) => JSON.parse(l).duration_ms);
		for (const v of ms) assert.ok(v >= 0 && v < 10000, `duration_ms ${v}`);
		assert.ok(ms.some((v) => !Number.isInteger(v)), `whole milliseconds only: ${ms}`);
		const m = await fetch(`${srv.url}/metrics`).then((r) => r.text());
		const sum = metricValue(parseMetrics(m), 'sextant_tool_call_duration_seconds_sum', { tool: 'test_simple_text' });
		assert.ok(sum > 0 && sum < 10, `sextant_tool_call_duration_seconds_sum ${sum}`);
	});
});

describe('default tool set (no fixtures)', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'core', config: path.join(ROOT, 'config.example.toml'),
			env: { SEXTANT_SERVER_LIST_PAGE_SIZE: '1' } });
	});
	after(async () => srv && srv.stop());

	test('get_server_status returns structuredContent matching its outputSchema, and text', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const list = (await s.call('tools/list')).response.result.tools;
		const tool = list.find((t) => t.name === 'get_server_status');
		assert.ok(tool?.outputSchema, 'get_server_status with an outputSchema');
		const r = (await s.call('tools/call', { name: 'get_server_status', arguments: {} })).response.result;
		assert.equal(r.isError, undefined);
		assert.equal(typeof r.structuredContent.uptime_s, 'number');
		assert.equal(r.structuredContent.sessions >= 1, true);
		for (const k of tool.outputSchema.required) assert.ok(k in r.structuredContent, `missing ${k}`);
		assert.match(r.content[0].text, /Sessions: \d+/);
		// Older revisions get no structuredContent.
		const old = new RawSession(srv.mcpUrl);
		await old.initialize('2025-03-26');
		const ro = (await old.call('tools/call', { name: 'get_server_status', arguments: {} })).response.result;
		assert.equal(ro.structuredContent, undefined);
		assert.match(ro.content[0].text, /Sextant/);
	});

	test('subscribers of sextant://server/status get notifications/resources/updated', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const res = (await s.call('resources/list')).response.result.resources;
		assert.ok(res.some((r) => r.uri === 'sextant://server/status'));
		const sub = await s.call('resources/subscribe', { uri: 'sextant://server/status' });
		assert.deepEqual(sub.response.result, {});
		const g = await openStandalone(srv, s);
		try {
			await sleep(1200); // let the janitor see the current state
			const other = new RawSession(srv.mcpUrl); // changes the session count
			await other.initialize(LATEST);
			const note = await waitEvent(g, (m) => m.method === 'notifications/resources/updated');
			assert.ok(note, 'no notifications/resources/updated');
			assert.equal(note.params.uri, 'sextant://server/status');
		} finally {
			g.close();
		}
		const read = (await s.call('resources/read', { uri: 'sextant://server/status' })).response.result;
		assert.ok(JSON.parse(read.contents[0].text).sessions >= 2);
	});

	test('README curl session works as printed', () => {
		const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
		const m = /\*\*curl, MCP\*\*[^\n]*\n\n```sh\n([\s\S]*?)```/.exec(readme);
		assert.ok(m, 'README has no curl block');
		const script = m[1].replace('URL=http://127.0.0.1:8080/mcp', `URL=${srv.mcpUrl}`);
		const r = spawnSync('bash', ['-euc', script], { encoding: 'utf8', timeout: 20000 });
		assert.equal(r.status, 0, r.stderr);
		const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
		assert.equal(lines.length, 2, r.stdout);
		assert.ok(lines[0].result.tools.some((t) => t.name === 'get_server_status'));
		assert.match(lines[1].result.content[0].text, /^Sextant /);
	});
});

describe('cursor pagination (server.list_page_size = 4)', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'pages', env: { SEXTANT_SERVER_LIST_PAGE_SIZE: '4' } });
	});
	after(async () => srv && srv.stop());

	async function all(s, method, key) {
		const items = [];
		let cursor;
		let pages = 0;
		do {
			const r = (await s.call(method, cursor ? { cursor } : {})).response;
			assert.ok(r.result, `${method}: ${JSON.stringify(r)}`);
			items.push(...r.result[key]);
			cursor = r.result.nextCursor;
			pages++;
			assert.ok(pages < 50);
		} while (cursor);
		return { items, pages };
	}

	test('tools, resources and prompts page without losing or repeating an item', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const tools = await all(s, 'tools/list', 'tools');
		const names = tools.items.map((t) => t.name);
		assert.equal(new Set(names).size, names.length, 'a tool repeated');
		assert.equal(names.length, 35);
		assert.equal(tools.pages, 9);
		const prompts = await all(s, 'prompts/list', 'prompts');
		assert.equal(prompts.items.length, 5);
		assert.equal(prompts.pages, 2);
		const res = await all(s, 'resources/list', 'resources');
		assert.equal(res.items.length, 5); // 3 fixtures + the investigate skill's SKILL.md and definitions.md
	});

	test('an invalid cursor is -32602', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		for (const cursor of ['p3', 'garbage', 'p99999']) {
			const r = (await s.call('tools/list', { cursor })).response;
			assert.equal(r.error?.code, -32602, `cursor ${cursor}: ${JSON.stringify(r)}`);
		}
	});
});

describe('SIGTERM drain of a long call', () => {
	let srv;
	before(async () => {
		srv = await startServer({ name: 'drain-long' });
	});
	after(async () => srv && srv.kill());

	test('a call still running at SIGTERM finishes within the grace period and is answered', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize(LATEST);
		const pending = s.call('tools/call', { name: 'test_cancellation', arguments: { duration_ms: 1500 } },
			{ timeoutMs: 10000 });
		await sleep(300);
		const t0 = Date.now();
		srv.terminate();
		// draining: a new connection is still served (probes answered
		// until the process exits) while the call on the open one goes on
		await sleep(100);
		const got = await new Promise((resolve) => {
			const sock = net.connect(Number(new URL(srv.url).port), '127.0.0.1');
			let data = '';
			const timer = setTimeout(() => {
				sock.destroy();
				resolve('(no close within 3 s)');
			}, 3000);
			const done = () => {
				clearTimeout(timer);
				resolve(data);
			};
			sock.on('connect', () => sock.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
			sock.on('data', (d) => (data += d));
			sock.on('error', done);
			sock.on('close', done);
		});
		assert.match(got, /^HTTP\/1\.1 200 /, 'a probe on a new connection during the drain');
		const r = await pending;
		assert.equal(r.response?.result?.content?.[0]?.text, 'completed after 1500 ms', JSON.stringify(r.response));
		await srv.stop();
		assert.ok(Date.now() - t0 >= 1000, 'the server did not wait for the call');
		assert.match(srv.stderr(), /draining/);
	});
});

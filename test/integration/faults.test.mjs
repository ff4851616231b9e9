// faults.test.mjs - the gateway under the faults of a fault campaign
// (issue 17): SIGTERM with tool calls blocked in SQL past the grace period,
// thousands of idle connections, PostgreSQL killed under OTLP load, bodies
// past the OTLP limit, and the request id on every early error.  Each case
// is bounded in time; the whole file runs in well under a minute.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';

import { ACCEPT_BOTH, LATEST, RawSession, open, request } from './lib/http.mjs';
import { newId } from './lib/otlpjson.mjs';
import { findPsql, pgSh, psql, startPostgres } from './lib/pg.mjs';
import { sleep } from './lib/procs.mjs';
import { startServer } from './lib/server.mjs';

const DB_ENV = { SEXTANT_CONFORMANCE_ENABLED: 'false' };

async function waitFor(probe, ms, what) {
	const deadline = Date.now() + ms;
	let last;
	while (Date.now() < deadline) {
		last = await probe();
		if (last?.ok) return last;
		await sleep(100);
	}
	assert.fail(`${what} within ${ms} ms; last: ${JSON.stringify(last)}`);
}

// A GET bounded as a whole (connect and headers too), body as text.
async function get(url, timeoutMs = 2000) {
	const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
	const text = await res.text();
	let json;
	try {
		json = JSON.parse(text);
	} catch {
		json = undefined;
	}
	return { status: res.status, text, json };
}

// The cancelled-by-shutdown answer of request id.
function assertShutdownError(msg, id, what) {
	assert.ok(msg, `${what}: no answer`);
	assert.equal(msg.id, id, `${what}: ${JSON.stringify(msg)}`);
	assert.match(msg.error?.message ?? '', /cancelled by shutdown/, `${what}: ${JSON.stringify(msg)}`);
	assert.equal(msg.error?.data?.retryable, true, what);
}

test('SIGTERM with calls blocked past the grace period: every request answered with its id; probes served during the drain', { timeout: 60000 }, async () => {
	const pg = await startPostgres({ name: 'faults-drain' });
	let srv;
	let locker;
	try {
		srv = await startServer({
			name: 'faults-drain',
			// a query_spans call leases two connections: room for three
			env: { ...DB_ENV, DATABASE_URL: pg.url, SEXTANT_SERVER_SHUTDOWN_GRACE_S: '1', SEXTANT_DATABASE_POOL_SIZE: '10' },
		});
		// the campaign's lock: every statement on spans waits behind it
		locker = spawn(findPsql(), ['-X', '-w', '-q', '-d', pg.url, '-c',
			'BEGIN; LOCK TABLE spans IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(25); COMMIT'], { stdio: 'ignore' });
		await waitFor(async () => ({
			ok: (await psql(pg.url, "SELECT count(*) FROM pg_locks WHERE relation = 'spans'::regclass AND mode = 'AccessExclusiveLock' AND granted")) === '1',
		}), 10000, 'the lock on spans');

		const call = (id, meta) => ({
			jsonrpc: '2.0', id, method: 'tools/call',
			params: { name: 'query_spans', arguments: { time_range: '1h' }, ...(meta ? { _meta: meta } : {}) },
		});
		// JSON reply (Accept: application/json), SSE reply (progress first)
		const json = new RawSession(srv.mcpUrl, { headers: { accept: 'application/json' } });
		await json.initialize(LATEST);
		const sse = new RawSession(srv.mcpUrl);
		await sse.initialize(LATEST);
		const jsonReply = json.post(call(11), { timeoutMs: 30000 });
		const sseReply = sse.post(call(12, { progressToken: 'p12' }), { timeoutMs: 30000 });
		// the 2024-11-05 transport: the answer travels on the GET stream
		const legacy = await open(`${srv.url}/sse`, { headers: { accept: 'text/event-stream' } });
		assert.equal(legacy.status, 200);
		const endpoint = `${srv.url}${(await legacy.next()).data}`;
		const postLegacy = (body) => request(endpoint, {
			method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
		});
		assert.equal((await postLegacy({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } } })).status, 202);
		assert.equal(JSON.parse((await legacy.next()).data).id, 1);
		assert.equal((await postLegacy({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
		assert.equal((await postLegacy(call(13))).status, 202);

		// every call is in SQL, behind the lock
		await waitFor(async () => ({
			ok: Number(await psql(pg.url, "SELECT count(DISTINCT pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT encode(trace_id%'")) >= 3,
		}), 3000, 'three statements waiting for the lock');
		const t0 = Date.now();
		srv.terminate();
		await sleep(200);

		// during the drain (1 s grace; the tools give up on a lock after
		// 5 s): probes answered, new work refused
		// with its id
		const ready = await get(`${srv.url}/readyz`);
		assert.equal(ready.status, 503, `readyz during the drain: ${ready.text}`);
		assert.equal(ready.json?.status, 'draining');
		const health = await get(`${srv.url}/healthz`);
		assert.equal(health.status, 200, 'healthz during the drain');
		const late = await json.post({ jsonrpc: '2.0', id: 77, method: 'tools/list' }, { timeoutMs: 3000 });
		assert.equal(late.status, 503);
		assert.ok(late.headers['retry-after'], 'Retry-After on the refusal');
		assert.equal(late.response?.id, 77, `the refusal names the request: ${late.text}`);
		assert.match(late.response?.error?.message ?? '', /shutting down/);
		assert.ok(Date.now() - t0 < 1000, 'the probes ran inside the grace period');

		const j = await jsonReply;
		assert.equal(j.status, 200);
		assert.match(j.headers['content-type'], /^application\/json/);
		assertShutdownError(j.response, 11, 'the JSON reply');
		const s = await sseReply;
		assert.ok(s.sse, 'the progress turned the reply into a stream');
		assertShutdownError(s.response, 12, 'the SSE reply');
		let m;
		do {
			const ev = await legacy.next(10000);
			assert.ok(ev, 'the legacy stream ended without the answer');
			m = ev.data ? JSON.parse(ev.data) : {};
		} while (m.id !== 13);
		assertShutdownError(m, 13, 'the legacy SSE stream');
		legacy.close();
		await srv.stop();
		assert.match(srv.stderr(), /tool call shutdown/);
	} finally {
		locker?.kill('SIGKILL');
		if (srv) await srv.kill();
		await pg.stop();
	}
});

// Opens n TCP connections that never send a byte; resolves the sockets and
// a counter of those the server closed.
async function idleConnections(port, n) {
	const sockets = [];
	const state = { closedByServer: 0 };
	const opening = [];
	for (let i = 0; i < n; i++) {
		opening.push(new Promise((resolve) => {
			const s = net.connect({ host: '127.0.0.1', port });
			s.on('connect', () => resolve());
			s.on('end', () => {
				state.closedByServer++;
				s.destroy();
			});
			s.on('error', () => resolve());
			sockets.push(s);
		}));
		if (i % 500 === 499) await Promise.all(opening.splice(0));
	}
	await Promise.all(opening);
	return { sockets, state };
}

test('5,000 idle connections: the oldest idle ones are closed, /healthz answers within 1 s, an MCP call still works', { timeout: 60000 }, async (t) => {
	const srv = await startServer({ name: 'faults-idle', env: { SEXTANT_SERVER_MAX_CONNECTIONS: '1024' } });
	let idle;
	try {
		idle = await idleConnections(srv.port, 5000);
		const t0 = Date.now();
		const health = await get(`${srv.url}/healthz`, 1000);
		const ms = Date.now() - t0;
		assert.equal(health.status, 200);
		assert.ok(ms < 1000, `/healthz took ${ms} ms`);
		t.diagnostic(`/healthz answered in ${ms} ms beside 5000 idle connections`);
		const session = new RawSession(srv.mcpUrl);
		await session.initialize(LATEST);
		const r = await session.call('tools/list', {}, { timeoutMs: 3000 });
		assert.equal(r.status, 200);
		assert.ok(r.response?.result?.tools?.length > 0, r.text);
		// the connections past the limit were closed, oldest idle first
		await waitFor(async () => ({ ok: idle.state.closedByServer >= 5000 - 1024 - 16, closed: idle.state.closedByServer }),
			10000, 'idle connections past server.max_connections closed');
		assert.ok(idle.sockets[0].destroyed, 'the oldest idle connection was closed');
		assert.ok(!idle.sockets[4999].destroyed, 'the newest idle connection is still open');
		t.diagnostic(`${idle.state.closedByServer} idle connections closed by the server`);
	} finally {
		for (const s of idle?.sockets ?? []) s.destroy();
		await srv.stop();
	}
});

test('every connection busy: a new MCP or OTLP request gets 503 + Retry-After at once, probes are answered', { timeout: 30000 }, async () => {
	const srv = await startServer({ name: 'faults-busy', env: { SEXTANT_SERVER_MAX_CONNECTIONS: '3' } });
	const streams = [];
	try {
		// event streams hold their connections: nothing idle to close
		for (let i = 0; i < 3; i++) {
			const st = await open(`${srv.url}/sse`, { headers: { accept: 'text/event-stream' } });
			assert.equal(st.status, 200);
			streams.push(st);
		}
		const r = await request(srv.mcpUrl, {
			method: 'POST', timeoutMs: 2000,
			headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
		});
		assert.equal(r.status, 503, r.text);
		assert.ok(r.headers['retry-after']);
		assert.match(r.json?.error?.message ?? '', /server\.max_connections/);
		const o = await request(`${srv.url}/v1/traces`, {
			method: 'POST', timeoutMs: 2000, headers: { 'content-type': 'application/json' }, body: '{"resourceSpans":[]}',
		});
		assert.equal(o.status, 503, o.text);
		assert.equal(o.json?.code, 14, o.text);
		assert.equal((await get(`${srv.url}/healthz`, 1000)).status, 200);
		// a stream ends: its connection is free again
		streams.pop().close();
		await waitFor(async () => {
			const p = await request(`${srv.url}/v1/traces`, {
				method: 'POST', timeoutMs: 2000, headers: { 'content-type': 'application/json' }, body: '{"resourceSpans":[]}',
			});
			return { ok: p.status === 200, status: p.status };
		}, 5000, 'a request served once a connection is free');
	} finally {
		for (const st of streams) st.close();
		await srv.stop();
	}
});

// One batch of n spans of service "faults-load", as OTLP/JSON.
function spanBatch(n) {
	const ids = [];
	const spans = [];
	const traceId = newId(16);
	const now = BigInt(Date.now()) * 1000000n;
	for (let i = 0; i < n; i++) {
		const spanId = newId(8);
		ids.push(spanId);
		spans.push({ traceId, spanId, name: 'GET /load', kind: 2, startTimeUnixNano: String(now), endTimeUnixNano: String(now + 1000000n) });
	}
	const body = JSON.stringify({
		resourceSpans: [{
			resource: { attributes: [{ key: 'service.name', value: { stringValue: 'faults-load' } }] },
			scopeSpans: [{ scope: { name: 'faults' }, spans }],
		}],
	});
	return { ids, body };
}

// An exporter: posts batches until stopped, each retried (same body) on
// 503, any 5xx or a broken connection until acknowledged.
async function exporter(url, acked, stop, deadline) {
	let statuses = [];
	while (!stop.now) {
		const b = spanBatch(20);
		for (;;) {
			if (Date.now() > deadline) throw new Error(`a batch not acknowledged in time; statuses ${statuses.slice(-5)}`);
			let r;
			try {
				r = await request(`${url}/v1/traces`, {
					method: 'POST', headers: { 'content-type': 'application/json' }, body: b.body, timeoutMs: 10000,
				});
			} catch (e) {
				statuses.push(e.code ?? e.message);
				await sleep(100);
				continue;
			}
			statuses.push(r.status);
			if (r.status === 200) {
				for (const id of b.ids) acked.add(id);
				break;
			}
			if (r.status < 500) throw new Error(`HTTP ${r.status}: ${r.text}`);
			await sleep(100);
		}
	}
	return statuses;
}

test('PostgreSQL killed under OTLP load: every acknowledged span stored once, /readyz 503 then 200 without a restart', { timeout: 60000 }, async (t) => {
	const pg = await startPostgres({ name: 'faults-kill' });
	let srv;
	try {
		srv = await startServer({ name: 'faults-kill', env: { ...DB_ENV, DATABASE_URL: pg.url } });
		const acked = new Set();
		const stop = { now: false };
		const deadline = Date.now() + 40000;
		const clients = [0, 1, 2, 3].map(() => exporter(srv.url, acked, stop, deadline));
		await waitFor(async () => ({ ok: acked.size >= 200, acked: acked.size }), 10000, 'batches stored before the kill');

		const pid = Number(fs.readFileSync(path.join(pg.dir, 'data/postmaster.pid'), 'utf8').split('\n')[0]);
		process.kill(pid, 'SIGKILL');
		await waitFor(async () => {
			const r = await get(`${srv.url}/readyz`);
			return { ok: r.status === 503, status: r.status };
		}, 10000, '/readyz 503 with the database gone');
		await sleep(500);
		const started = await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
		assert.equal(started.code, 0, started.stderr);
		await waitFor(async () => {
			const r = await get(`${srv.url}/readyz`);
			return { ok: r.status === 200, status: r.status };
		}, 20000, '/readyz 200 once the database is back');
		const before = acked.size;
		await waitFor(async () => ({ ok: acked.size >= before + 200, acked: acked.size }), 15000, 'batches stored after the restart');
		stop.now = true;
		const statuses = (await Promise.all(clients)).flat();
		assert.ok(statuses.some((s) => s !== 200), 'the kill was seen by the exporters');

		const stored = (await psql(pg.url, "SELECT count(*) || ' ' || count(DISTINCT span_id) FROM spans WHERE service_name = 'faults-load'")).split(' ').map(Number);
		assert.equal(stored[0], stored[1], 'a span stored twice');
		const missing = [];
		const ids = [...acked];
		for (let i = 0; i < ids.length; i += 500) {
			const list = ids.slice(i, i + 500).map((h) => `'\\x${h}'::bytea`).join(',');
			const n = Number(await psql(pg.url, `SELECT count(*) FROM spans WHERE service_name = 'faults-load' AND span_id IN (${list})`));
			if (n !== Math.min(500, ids.length - i)) missing.push(i);
		}
		assert.deepEqual(missing, [], 'acknowledged spans missing from the store');
		assert.ok(stored[0] >= acked.size, `${stored[0]} stored, ${acked.size} acknowledged`);
		t.diagnostic(`${acked.size} spans acknowledged, ${stored[0]} stored (${stored[1]} distinct), ${statuses.filter((x) => x !== 200).length} of ${statuses.length} posts refused or broken`);
		await srv.stop();
		srv = null;
	} finally {
		if (srv) await srv.kill();
		await pg.stop();
	}
});

// google.rpc.Status in protobuf: {code (1, varint), message (2, string)}.
function decodeStatus(buf) {
	const out = {};
	let i = 0;
	const varint = () => {
		let v = 0;
		let shift = 0;
		for (;;) {
			const b = buf[i++];
			v += (b & 0x7f) * 2 ** shift;
			if (!(b & 0x80)) return v;
			shift += 7;
		}
	};
	while (i < buf.length) {
		const tag = varint();
		if (tag === 0x08) out.code = varint();
		else if (tag === 0x12) {
			const n = varint();
			out.message = buf.subarray(i, i + n).toString('utf8');
			i += n;
		} else if ((tag & 7) === 2) i += varint();
		else varint();
	}
	return out;
}

// A raw POST whose answer is read whole, as bytes.
function postRaw(url, headers, body) {
	return new Promise((resolve, reject) => {
		const u = new URL(url);
		const r = net.connect({ host: u.hostname, port: Number(u.port) }, () => {
			const head = [`POST ${u.pathname} HTTP/1.1`, `Host: ${u.host}`, 'Connection: close',
				...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
			r.write(head);
			if (headers['transfer-encoding'] === 'chunked') {
				for (let o = 0; o < body.length; o += 16384) {
					const part = body.subarray(o, o + 16384);
					r.write(`${part.length.toString(16)}\r\n`);
					r.write(part);
					r.write('\r\n');
				}
				r.write('0\r\n\r\n');
			} else {
				r.write(body);
			}
		});
		const chunks = [];
		r.on('data', (c) => chunks.push(c));
		r.on('error', (e) => (chunks.length ? r.emit('end') : reject(e)));
		r.on('end', () => {
			const all = Buffer.concat(chunks);
			const sep = all.indexOf('\r\n\r\n');
			const head = all.subarray(0, sep).toString('latin1').split('\r\n');
			const status = Number(head[0].split(' ')[1]);
			const hdrs = {};
			for (const l of head.slice(1)) hdrs[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
			let payload = all.subarray(sep + 4);
			if (/chunked/i.test(hdrs['transfer-encoding'] ?? '')) {
				const parts = [];
				let o = 0;
				for (;;) {
					const eol = payload.indexOf('\r\n', o);
					const n = parseInt(payload.subarray(o, eol).toString(), 16);
					if (!n) break;
					parts.push(payload.subarray(eol + 2, eol + 2 + n));
					o = eol + 2 + n + 2;
				}
				payload = Buffer.concat(parts);
			}
			resolve({ status, headers: hdrs, body: payload });
		});
		setTimeout(() => r.destroy(new Error('no answer within 10 s')), 10000).unref();
	});
}

test('OTLP bodies past ingest.max_body_bytes: 413 as google.rpc.Status naming the limit, JSON and protobuf', { timeout: 30000 }, async () => {
	const srv = await startServer({
		name: 'faults-413',
		env: {
			SEXTANT_SERVER_MAX_BODY_BYTES: '32768',
			SEXTANT_INGEST_MAX_BODY_BYTES: '65536',
			SEXTANT_INGEST_MAX_DECOMPRESSED_BYTES: '65536',
		},
	});
	try {
		const url = `${srv.url}/v1/traces`;
		const big = Buffer.alloc(100000, 0x20);
		// past server.max_body_bytes, within ingest.max_body_bytes: the OTLP
		// limit holds (no spans in it: answered without a database)
		const mid = Buffer.concat([Buffer.from('{"resourceSpans":[]}'), Buffer.alloc(50000, 0x20)]);
		let r = await postRaw(url, { 'content-type': 'application/json', 'content-length': mid.length }, mid);
		assert.equal(r.status, 200, `a 50 kB batch: ${r.body}`);

		for (const chunked of [false, true]) {
			const how = chunked ? 'chunked' : 'Content-Length';
			const lenHdr = chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': big.length };
			r = await postRaw(url, { 'content-type': 'application/json', ...lenHdr }, big);
			assert.equal(r.status, 413, how);
			assert.match(r.headers['content-type'], /^application\/json/);
			const status = JSON.parse(r.body.toString());
			assert.equal(status.code, 8, how);
			assert.match(status.message, /65536 bytes \(ingest\.max_body_bytes\)/, how);
			assert.doesNotMatch(status.message, /server\.max_body_bytes|jsonrpc/);

			r = await postRaw(url, { 'content-type': 'application/x-protobuf', ...lenHdr }, big);
			assert.equal(r.status, 413, how);
			assert.match(r.headers['content-type'], /^application\/x-protobuf/);
			const pb = decodeStatus(r.body);
			assert.equal(pb.code, 8, how);
			assert.match(pb.message, /65536 bytes \(ingest\.max_body_bytes\)/, how);
		}

		// small on the wire, past ingest.max_decompressed_bytes once inflated
		const bomb = zlib.gzipSync(Buffer.concat([Buffer.from('{"resourceSpans":[]}'), Buffer.alloc(200000, 0x20)]));
		r = await postRaw(url, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': bomb.length }, bomb);
		assert.equal(r.status, 413);
		const status = JSON.parse(r.body.toString());
		assert.match(status.message, /65536 bytes once decompressed.*\(ingest\.max_decompressed_bytes\)/);
	} finally {
		await srv.stop();
	}
});

test('early errors echo the request id: header and session errors on /mcp and /messages', { timeout: 30000 }, async () => {
	const srv = await startServer({ name: 'faults-ids' });
	try {
		const post = (url, body, headers = {}) => request(url, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
			body: JSON.stringify(body),
		});
		const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });
		let r = await post(srv.mcpUrl, ping(5));
		assert.equal(r.status, 400, 'no Mcp-Session-Id');
		assert.equal(r.json?.id, 5, r.text);
		r = await post(srv.mcpUrl, ping('a'), { 'mcp-session-id': 'f'.repeat(32) });
		assert.equal(r.status, 404);
		assert.equal(r.json?.id, 'a', r.text);
		r = await post(srv.mcpUrl, ping(6), { 'mcp-session-id': 'f'.repeat(32), 'mcp-protocol-version': '2025-01-01' });
		assert.equal(r.status, 400);
		assert.equal(r.json?.id, 6, r.text);
		r = await post(`${srv.url}/messages?session_id=${'0'.repeat(32)}`, ping(7));
		assert.equal(r.status, 404);
		assert.equal(r.json?.id, 7, r.text);
		// a response or a notification is not answered with its id
		r = await post(srv.mcpUrl, { jsonrpc: '2.0', id: 8, result: {} });
		assert.equal(r.status, 400);
		assert.equal(r.json?.id, null, r.text);
	} finally {
		await srv.stop();
	}
});

test('a table locked for long does not stall the janitor: an overdue call is still ended at workers.call_timeout_s', { timeout: 60000 }, async (t) => {
	const pg = await startPostgres({ name: 'faults-janitor' });
	let srv;
	let locker;
	try {
		// migrated by a first start, so that the second one migrates nothing
		srv = await startServer({ name: 'faults-janitor-0', env: { ...DB_ENV, DATABASE_URL: pg.url } });
		await srv.stop();
		locker = spawn(findPsql(), ['-X', '-w', '-q', '-d', pg.url, '-c',
			'BEGIN; LOCK TABLE spans IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(20); COMMIT'], { stdio: 'ignore' });
		await waitFor(async () => ({
			ok: (await psql(pg.url, "SELECT count(*) FROM pg_locks WHERE relation = 'spans'::regclass AND mode = 'AccessExclusiveLock' AND granted")) === '1',
		}), 10000, 'the lock on spans');
		// its first tick runs the partition upkeep, which meets the lock
		srv = await startServer({
			name: 'faults-janitor',
			env: { ...DB_ENV, DATABASE_URL: pg.url, SEXTANT_WORKERS_CALL_TIMEOUT_S: '2' },
		});
		const session = new RawSession(srv.mcpUrl, { headers: { accept: 'application/json' } });
		await session.initialize(LATEST);
		const t0 = Date.now();
		const r = await session.call('tools/call', { name: 'query_spans', arguments: { time_range: '1h' } }, { timeoutMs: 15000 });
		const ms = Date.now() - t0;
		assert.equal(r.status, 200, r.text);
		const msg = r.response;
		const text = msg?.error?.message ?? msg?.result?.content?.[0]?.text ?? '';
		assert.ok(msg?.error || msg?.result?.isError, `not an error: ${r.text}`);
		assert.match(text, /call_timeout_s|timed out/, r.text);
		assert.ok(ms < 6000, `the overdue call was answered after ${ms} ms (workers.call_timeout_s 2)`);
		t.diagnostic(`the overdue call was answered after ${ms} ms`);
		// start-up gave up on the lock instead of waiting 20 s; the
		// janitor applies the migrations once the lock is gone
		const log = () => fs.readFileSync(srv.stderrPath, 'utf8');
		assert.match(log(), /migrations not applied: .*lock timeout/);
		locker.kill();
		await waitFor(async () => ({ ok: /migrations applied on retry: 0/.test(log()) }), 15000, 'the janitor\'s migrations');
	} finally {
		locker?.kill();
		await srv?.stop();
		await pg.stop();
	}
});

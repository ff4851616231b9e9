// replicas.mjs - gateway replicas that share their 2025 sessions through one
// PostgreSQL database (docs/shared-sessions-design.md), for
// replicas.test.mjs.  startReplica() runs build/asan/sextant with the
// database, a shared state key and its own copy of the conformance config
// (so that a SIGHUP can change one replica's tools); Session is one MCP
// session whose every request goes to the replica the test names (raw
// HTTP, so no client library picks the server); the rest reads SSE streams
// by event, /metrics samples and the stored session rows.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ACCEPT_BOTH, LATEST, RawSession, SseStream, metricValue, open, parseMetrics, request } from './http.mjs';
import { psql } from './pg.mjs';
import { CONFORMANCE_CONFIG, startServer } from './server.mjs';

export { SseStream };

// sessions.replica_timeout_s of the test replicas (the bound's minimum):
// a killed replica is dead for the others after that many seconds.
export const REPLICA_TIMEOUT_S = 2;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The conformance config with tools.disabled = disabled (tool names).
export function conformanceConfig(disabled = []) {
	const base = fs.readFileSync(CONFORMANCE_CONFIG, 'utf8');
	if (!/^disabled = \[\]$/m.test(base)) throw new Error(`the [tools] disabled line of ${CONFORMANCE_CONFIG} moved`);
	return base.replace(/^disabled = \[\]$/m, `disabled = ${JSON.stringify(disabled)}`);
}

// Starts one replica: `sextant serve --config DIR/NAME.toml` (a copy of the
// conformance config, rewritten by reconfigure()) with DATABASE_URL = pgUrl,
// the shared state key file and the replica timeout above; env adds or
// overrides variables.  The returned Server gains configPath.
export async function startReplica({ name, dir, pgUrl, keyFile, env = {} }) {
	const configPath = path.join(dir, `${name}.toml`);
	fs.writeFileSync(configPath, conformanceConfig());
	const srv = await startServer({
		name,
		config: configPath,
		env: {
			DATABASE_URL: pgUrl,
			SEXTANT_SERVER_STATE_KEY_FILE: keyFile,
			SEXTANT_SESSIONS_REPLICA_TIMEOUT_S: String(REPLICA_TIMEOUT_S),
			...env,
		},
	});
	srv.configPath = configPath;
	return srv;
}

// A temp dir (named after prefix) holding the state key file replicas
// share: {dir, keyFile}.
export function replicaDir(prefix) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sextant-${prefix}-`));
	const keyFile = path.join(dir, 'state.key');
	fs.writeFileSync(keyFile, `${prefix}-test-state-key-of-more-than-32-bytes-0123456789\n`);
	return { dir, keyFile };
}

// The end of a suite: stops every replica (but those a test killed on
// purpose), then the database, removes dir, and throws once with every
// problem (a replica that did not exit 0, a sanitizer report).
export async function stopReplicas(servers, pg, dir) {
	const problems = [];
	for (const srv of servers) {
		if (!srv || (srv.exitStatus && srv.killSent)) continue;
		try {
			await srv.stop();
		} catch (e) {
			problems.push(e.message);
		}
	}
	try {
		await pg?.stop();
	} catch (e) {
		problems.push(e.message);
	}
	if (dir) fs.rmSync(dir, { recursive: true, force: true });
	if (problems.length) throw new Error(problems.join('\n'));
}

// /metrics of srv as parsed samples.
export async function metrics(srv) {
	const r = await request(`${srv.url}/metrics`);
	assert.equal(r.status, 200, `${srv.name} /metrics: HTTP ${r.status}`);
	return parseMetrics(r.text);
}

// The sum of the samples of name whose labels include want, on srv.
export async function metric(srv, name, want = {}) {
	return metricValue(await metrics(srv), name, want);
}

// Writes srv's config with tools.disabled = disabled, sends SIGHUP and
// waits until srv counts one more successful reload.
export async function reconfigure(srv, disabled) {
	const before = await metric(srv, 'sextant_config_reloads_total', { result: 'ok' });
	fs.writeFileSync(srv.configPath, conformanceConfig(disabled));
	srv.proc.kill('SIGHUP');
	await waitFor(async () => (await metric(srv, 'sextant_config_reloads_total', { result: 'ok' })) > before, 10000, `${srv.name}: the reload after SIGHUP`);
}

// Polls probe() every 100 ms until it resolves truthy; fails after ms with
// what and the last value.  Resolves to that value.
export async function waitFor(probe, ms, what) {
	const deadline = Date.now() + ms;
	let last;
	for (;;) {
		last = await probe();
		if (last) return last;
		if (Date.now() >= deadline) assert.fail(`${what}: not within ${ms} ms (last: ${JSON.stringify(last)})`);
		await sleep(100);
	}
}

// mcp_sessions.key of a session id: hex of the first 16 bytes of its
// SHA-256 (the id itself is never stored).
export function sessionKey(id) {
	return createHash('sha256').update(id).digest('hex').slice(0, 32);
}

// The stored row of session id ({log_level, subscriptions, rev}), or null
// when there is none (no mcp_sessions table counts as none).
export async function sessionRow(pgUrl, id) {
	if ((await psql(pgUrl, "SELECT to_regclass('mcp_sessions') IS NOT NULL")) !== 't') return null;
	const out = await psql(pgUrl, `SELECT json_build_object('log_level', log_level, 'subscriptions', subscriptions, 'rev', rev) FROM mcp_sessions WHERE key = '${sessionKey(id)}'`);
	return out ? JSON.parse(out) : null;
}

// "<stream>-<seq>" -> {stream, seq}; null for anything else.
export function eventId(id) {
	const m = /^(.+)-(\d+)$/.exec(id ?? '');
	return m ? { stream: m[1], seq: Number(m[2]) } : null;
}

// The JSON-RPC messages of an SSE event (none for a priming event).
function eventMessages(ev) {
	if (!ev.data) return [];
	const msg = JSON.parse(ev.data);
	return Array.isArray(msg) ? msg : [msg];
}

// Reads stream until pred(message, event) holds for a message, the stream
// ends, or ms pass.  Resolves {events, messages, match, matchEvent, ended,
// timedOut}; never rejects on a timeout (the caller asserts).
export async function readUntil(stream, pred, ms = 10000) {
	const out = { events: [], messages: [], match: null, matchEvent: null, ended: false, timedOut: false };
	const deadline = Date.now() + ms;
	for (;;) {
		let ev;
		try {
			ev = await stream.next(Math.max(1, deadline - Date.now()));
		} catch {
			out.timedOut = true;
			return out;
		}
		if (!ev) {
			out.ended = true;
			return out;
		}
		out.events.push(ev);
		for (const m of eventMessages(ev)) {
			out.messages.push(m);
			if (!out.match && pred(m, ev)) {
				out.match = m;
				out.matchEvent = ev;
			}
		}
		if (out.match) return out;
	}
}

// Reads stream to its end, or for ms; {events, messages, ended, timedOut}.
export function drain(stream, ms = 10000) {
	return readUntil(stream, () => false, ms);
}

export const isProgress = (m) => m.method === 'notifications/progress';
export const isResponse = (id) => (m) => m.id === id && ('result' in m || 'error' in m);

// Asserts that events (in arrival order, across connections) carry ids of
// one stream with strictly increasing sequence numbers; returns the ids.
export function assertIdsIncreasing(events, what) {
	const ids = events.filter((e) => e.id !== undefined).map((e) => e.id);
	assert.equal(new Set(ids).size, ids.length, `${what}: an event id repeats: ${ids.join(' ')}`);
	const parsed = ids.map((id) => eventId(id));
	assert.ok(parsed.every(Boolean), `${what}: ids not of the form <stream>-<seq>: ${ids.join(' ')}`);
	assert.equal(new Set(parsed.map((p) => p.stream)).size, ids.length ? 1 : 0, `${what}: ids of several streams: ${ids.join(' ')}`);
	for (let i = 1; i < parsed.length; i++) {
		assert.ok(parsed[i].seq > parsed[i - 1].seq, `${what}: sequence numbers out of order: ${ids.join(' ')}`);
	}
	return ids;
}

// One 2025 session; every method takes the replica (anything with an
// mcpUrl: a Server, the round-robin front) the request goes to.
export class Session {
	constructor({ capabilities = {}, version = LATEST } = {}) {
		this.capabilities = capabilities;
		this.protocolVersion = version;
		this.id = null;
		this.version = null;
		this.nextId = 1;
	}

	// A RawSession (lib/http.mjs) for this session on srv.
	at(srv) {
		const r = new RawSession(srv.mcpUrl);
		r.sessionId = this.id;
		r.version = this.version;
		return r;
	}

	headers(more = {}) {
		return this.at({ mcpUrl: '' }).headers(more);
	}

	// initialize + notifications/initialized on srv.
	async initialize(srv) {
		const r = this.at(srv);
		r.sessionId = null;
		r.version = null;
		const msg = await r.initialize(this.protocolVersion, { capabilities: this.capabilities });
		this.id = r.sessionId;
		this.version = r.version;
		return msg;
	}

	// A request with the next id (or opts.id), answered on srv; the result
	// of RawSession.post ({status, text, response, messages, events?}).
	call(srv, method, params = {}, opts = {}) {
		const id = opts.id ?? this.nextId++;
		return this.at(srv).post({ jsonrpc: '2.0', id, method, params }, opts);
	}

	// A notification or a response to a server request (no answer body).
	send(srv, message) {
		return this.at(srv).post({ jsonrpc: '2.0', ...message });
	}

	// tools/call name on srv, its SSE answer left open: {id, stream}.
	// meta: params._meta (a progressToken).
	async openCall(srv, name, args = {}, { meta } = {}) {
		const id = this.nextId++;
		const params = { name, arguments: args, ...(meta ? { _meta: meta } : {}) };
		const r = await open(srv.mcpUrl, { method: 'POST', headers: this.headers(), body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }) });
		assert.ok(r instanceof SseStream, `tools/call ${name} on ${srv.name}: HTTP ${r.status} ${r.headers?.['content-type'] ?? ''} ${r.text ?? ''}, expected an SSE stream`);
		assert.equal(r.status, 200);
		return { id, stream: r };
	}

	// GET /mcp on srv (Last-Event-ID when given): an SseStream, or
	// {status, headers, text, json} when the answer is not a stream.
	openGet(srv, lastEventId) {
		const h = { accept: 'text/event-stream' };
		if (this.id) h['mcp-session-id'] = this.id;
		if (this.version) h['mcp-protocol-version'] = this.version;
		if (lastEventId !== undefined) h['last-event-id'] = lastEventId;
		return open(srv.mcpUrl, { method: 'GET', headers: h });
	}

	delete(srv) {
		return this.at(srv).delete();
	}
}

// A stateless 2026-07-28 tools/list on srv (no session).
export function statelessToolsList(srv, id = 1) {
	return request(srv.mcpUrl, {
		method: 'POST',
		headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
		body: JSON.stringify({
			jsonrpc: '2.0',
			id,
			method: 'tools/list',
			params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
		}),
	});
}

// The tool names of a tools/list answer (asserting it is one).
export function toolNames(r, what) {
	assert.equal(r.status, 200, `${what}: HTTP ${r.status} ${r.text ?? ''}`);
	const tools = r.response?.result?.tools;
	assert.ok(Array.isArray(tools), `${what}: ${JSON.stringify(r.response ?? r.text)}`);
	return tools.map((t) => t.name).sort();
}

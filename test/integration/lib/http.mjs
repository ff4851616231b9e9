// http.mjs - raw HTTP and SSE helpers for tests that check the wire itself.
// Built on node:http rather than fetch so a test controls every header
// (Host included) and can read an SSE stream event by event, priming events
// and comments too.  RawSession drives one MCP session by hand.

import http from 'node:http';

export const ACCEPT_BOTH = 'application/json, text/event-stream';
export const LATEST = '2025-11-25';

const agent = new http.Agent({ keepAlive: false });

// Header names in headers must be lowercase.  chunks: send the body as
// these pieces with Transfer-Encoding: chunked (no Content-Length).
function send(url, { method = 'GET', headers = {}, body, chunks } = {}) {
	return new Promise((resolve, reject) => {
		const u = new URL(url);
		const h = { ...headers };
		if (chunks) h['transfer-encoding'] = 'chunked';
		else if (body !== undefined && h['content-length'] === undefined) h['content-length'] = Buffer.byteLength(body);
		const req = http.request(
			{ host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: h, agent, setHost: !('host' in h) },
			resolve,
		);
		req.on('error', reject);
		if (chunks) {
			for (const c of chunks) req.write(c);
			req.end();
		} else {
			req.end(body);
		}
	});
}

// One request, body read to the end.  Resolves {status, headers, text,
// json} where json is the parsed body or undefined.
export async function request(url, opts = {}) {
	const timeoutMs = opts.timeoutMs ?? 15000;
	const res = await send(url, opts);
	const chunks = [];
	const timer = setTimeout(() => res.destroy(new Error(`body of ${opts.method ?? 'GET'} ${url} not complete after ${timeoutMs} ms`)), timeoutMs);
	try {
		for await (const c of res) chunks.push(c);
	} finally {
		clearTimeout(timer);
	}
	const text = Buffer.concat(chunks).toString('utf8');
	let json;
	try {
		json = text ? JSON.parse(text) : undefined;
	} catch {
		json = undefined;
	}
	return { status: res.statusCode, headers: res.headers, text, json };
}

// An SSE response read event by event.  next() resolves the next item:
// {id?, event?, retry?, data, comments[]} for an event (dispatched on the
// blank line, even with empty data, so priming events are seen), or null at
// the end of the stream.  Comment lines (": keepalive") are collected in
// the event that follows and in this.comments.
export class SseStream {
	constructor(res) {
		this.res = res;
		this.status = res.statusCode;
		this.headers = res.headers;
		this.comments = [];
		this.ended = false;
		this._queue = [];
		this._waiters = [];
		this._buf = '';
		this._cur = null;
		res.setEncoding('utf8');
		res.on('data', (c) => this._feed(c));
		res.on('end', () => this._finish());
		res.on('close', () => this._finish());
		res.on('error', () => this._finish());
	}

	_push(item) {
		const w = this._waiters.shift();
		if (w) w(item);
		else this._queue.push(item);
	}

	_finish() {
		if (this.ended) return;
		this.ended = true;
		while (this._waiters.length) this._waiters.shift()(null);
	}

	_feed(chunk) {
		this._buf += chunk;
		let i;
		while ((i = this._buf.search(/\r\n|\r|\n/)) >= 0) {
			const line = this._buf.slice(0, i);
			this._buf = this._buf.slice(i + (this._buf.startsWith('\r\n', i) ? 2 : 1));
			this._line(line);
		}
	}

	_line(line) {
		const cur = (this._cur ??= { data: [], comments: [] });
		if (line === '') {
			if (cur.data.length || cur.id !== undefined || cur.retry !== undefined || cur.event !== undefined) {
				this._push({ ...cur, data: cur.data.join('\n') });
			}
			this._cur = null;
			return;
		}
		if (line.startsWith(':')) {
			cur.comments.push(line.slice(1).trim());
			this.comments.push(line.slice(1).trim());
			return;
		}
		const c = line.indexOf(':');
		const field = c < 0 ? line : line.slice(0, c);
		let value = c < 0 ? '' : line.slice(c + 1);
		if (value.startsWith(' ')) value = value.slice(1);
		if (field === 'data') cur.data.push(value);
		else if (field === 'id') cur.id = value;
		else if (field === 'event') cur.event = value;
		else if (field === 'retry') cur.retry = value;
	}

	// Next event or null at the end; rejects after timeoutMs.
	next(timeoutMs = 10000) {
		if (this._queue.length) return Promise.resolve(this._queue.shift());
		if (this.ended) return Promise.resolve(null);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this._waiters.splice(this._waiters.indexOf(w), 1);
				reject(new Error(`no SSE event within ${timeoutMs} ms`));
			}, timeoutMs);
			const w = (item) => {
				clearTimeout(timer);
				resolve(item);
			};
			this._waiters.push(w);
		});
	}

	close() {
		this.res.destroy();
		this._finish();
	}
}

// Opens a request and returns an SseStream if the answer is
// text/event-stream, else the plain {status, headers, text, json}.
export async function open(url, opts = {}) {
	const res = await send(url, opts);
	if (/^text\/event-stream/.test(res.headers['content-type'] ?? '')) return new SseStream(res);
	const chunks = [];
	for await (const c of res) chunks.push(c);
	const text = Buffer.concat(chunks).toString('utf8');
	let json;
	try {
		json = text ? JSON.parse(text) : undefined;
	} catch {
		json = undefined;
	}
	return { status: res.statusCode, headers: res.headers, text, json };
}

// Reads an SSE stream until a JSON-RPC response (a message with result or
// error) whose id is in ids arrives, or the stream ends.  Returns
// {events, messages, responses, ended}.
export async function collect(stream, ids, timeoutMs = 15000) {
	const want = new Set(ids.map((x) => JSON.stringify(x)));
	const out = { events: [], messages: [], responses: [], ended: false };
	const deadline = Date.now() + timeoutMs;
	while (want.size) {
		const ev = await stream.next(Math.max(1, deadline - Date.now()));
		if (!ev) {
			out.ended = true;
			break;
		}
		out.events.push(ev);
		if (!ev.data) continue;
		const msg = JSON.parse(ev.data);
		for (const m of Array.isArray(msg) ? msg : [msg]) {
			out.messages.push(m);
			if ('id' in m && ('result' in m || 'error' in m)) {
				out.responses.push(m);
				want.delete(JSON.stringify(m.id));
			}
		}
	}
	return out;
}

// One MCP session driven by hand.
export class RawSession {
	constructor(mcpUrl, { headers = {} } = {}) {
		this.url = mcpUrl;
		this.extra = headers;
		this.sessionId = null;
		this.version = null;
		this.nextId = 1;
	}

	headers(more = {}) {
		const h = { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...this.extra };
		if (this.sessionId) h['mcp-session-id'] = this.sessionId;
		if (this.version) h['mcp-protocol-version'] = this.version;
		return { ...h, ...more };
	}

	// initialize + notifications/initialized.  Returns the initialize
	// response message.
	async initialize(protocolVersion = LATEST, { id = 0, capabilities = {} } = {}) {
		const body = {
			jsonrpc: '2.0',
			id,
			method: 'initialize',
			params: { protocolVersion, capabilities, clientInfo: { name: 'sextant-test', version: '1.0.0' } },
		};
		const r = await this.post(body);
		if (r.status !== 200) throw new Error(`initialize: HTTP ${r.status}: ${r.text ?? ''}`);
		const msg = r.response;
		if (!msg?.result) throw new Error(`initialize: no result: ${JSON.stringify(msg)}`);
		this.sessionId = r.headers['mcp-session-id'];
		if (!this.sessionId) throw new Error('initialize: no Mcp-Session-Id header');
		this.version = msg.result.protocolVersion;
		const n = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
		if (n.status !== 202) throw new Error(`notifications/initialized: HTTP ${n.status}, expected 202`);
		return msg;
	}

	// POSTs body (object or string); for a request reads the response
	// from JSON or SSE.  Returns {status, headers, text?, json?, response?,
	// messages[]}.
	async post(body, { headers = {}, timeoutMs = 15000 } = {}) {
		const text = typeof body === 'string' ? body : JSON.stringify(body);
		const r = await open(this.url, { method: 'POST', headers: this.headers(headers), body: text });
		if (!(r instanceof SseStream)) {
			const out = { ...r, messages: [] };
			if (r.json !== undefined) {
				out.messages = Array.isArray(r.json) ? r.json : [r.json];
				out.response = out.messages.find((m) => 'result' in m || 'error' in m);
			}
			return out;
		}
		const ids = [];
		let parsed = body;
		if (typeof body === 'string') {
			try {
				parsed = JSON.parse(body);
			} catch {
				parsed = [];
			}
		}
		for (const m of Array.isArray(parsed) ? parsed : [parsed]) if (m && typeof m === 'object' && m.method && 'id' in m) ids.push(m.id);
		const c = await collect(r, ids, timeoutMs);
		r.close();
		return { status: r.status, headers: r.headers, sse: true, ...c, response: c.responses[0] };
	}

	// A request with the next id; returns the post() result.
	async call(method, params = {}, opts = {}) {
		const id = opts.id ?? this.nextId++;
		return this.post({ jsonrpc: '2.0', id, method, params }, opts);
	}

	async delete() {
		return request(this.url, { method: 'DELETE', headers: this.headers() });
	}
}

// Prometheus text exposition -> [{name, labels: {k: v}, value}] (samples
// only; # HELP / # TYPE lines are skipped).
export function parseMetrics(text) {
	const out = [];
	for (const line of text.split('\n')) {
		if (!line || line.startsWith('#')) continue;
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
		if (!m) continue;
		const labels = {};
		for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
		out.push({ name: m[1], labels, value: Number(m[3]) });
	}
	return out;
}

// Sum of the samples of metric name whose labels include want.
export function metricValue(samples, name, want = {}) {
	return samples
		.filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v))
		.reduce((a, s) => a + s.value, 0);
}

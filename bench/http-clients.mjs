// http-clients.mjs - the two HTTP/1.1 clients of the benchmarks, one
// keep-alive connection each, the same interface: post(text, headers)
// resolves to {status, headers (lower-case names), text}.
//
// NodeHttp: node:http with a keep-alive agent.  RawHttp: one socket, the
// request written in one piece, the answer read by Content-Length (or
// chunks), no HTTP library.  node:http's request and response machinery
// cost 0.3 ms a call more against nginx (bench/client-cost.sh), 0.4-0.9 ms
// through the gateway (bench/query.sh; bench/RESULTS.md); psql's clock has
// nothing like it.
import http from 'node:http';
import net from 'node:net';

export class NodeHttp {
	constructor(url, timeoutMs = 600000) {
		this.url = url;
		this.timeoutMs = timeoutMs;
		this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
	}
	post(text, headers = {}) {
		const all = { ...headers, 'content-length': Buffer.byteLength(text) };
		return new Promise((resolve, reject) => {
			const req = http.request(
				{ host: this.url.hostname, port: this.url.port, path: this.url.pathname, method: 'POST', headers: all, agent: this.agent },
				(res) => {
					const chunks = [];
					res.on('data', (c) => chunks.push(c));
					res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
					res.on('error', reject);
				},
			);
			req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
			req.on('error', reject);
			req.end(text);
		});
	}
	close() {
		this.agent.destroy();
	}
}

export class RawHttp {
	constructor(url, timeoutMs = 600000) {
		this.url = url;
		this.timeoutMs = timeoutMs;
		this.sock = null;
		this.buf = Buffer.alloc(0);
		this.waiter = null;
	}
	async open() {
		this.sock = net.connect(Number(this.url.port), this.url.hostname);
		this.sock.setNoDelay(true);
		await new Promise((resolve, reject) => {
			this.sock.once('connect', resolve);
			this.sock.once('error', reject);
		});
		this.sock.on('data', (c) => {
			this.buf = this.buf.length ? Buffer.concat([this.buf, c]) : c;
			this.parse();
		});
		this.sock.on('error', (e) => this.fail(e));
		this.sock.on('close', () => {
			this.closed = true;
			this.fail(new Error('the gateway closed the connection'));
		});
		this.closed = false;
	}
	fail(e) {
		const w = this.waiter;
		this.waiter = null;
		if (w) w.reject(e);
	}
	parse() {
		if (!this.waiter) return;
		const end = this.buf.indexOf('\r\n\r\n');
		if (end < 0) return;
		const head = this.buf.subarray(0, end).toString('latin1').split('\r\n');
		const status = Number(head[0].split(' ')[1]);
		const headers = {};
		for (const l of head.slice(1)) {
			const i = l.indexOf(':');
			headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
		}
		let body;
		let used;
		if (headers['content-length'] !== undefined) {
			const n = Number(headers['content-length']);
			if (this.buf.length < end + 4 + n) return;
			body = this.buf.subarray(end + 4, end + 4 + n);
			used = end + 4 + n;
		} else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
			const parts = [];
			let at = end + 4;
			for (;;) {
				const eol = this.buf.indexOf('\r\n', at);
				if (eol < 0) return;
				const n = parseInt(this.buf.subarray(at, eol).toString('latin1'), 16);
				if (this.buf.length < eol + 2 + n + 2) return;
				if (n === 0) {
					used = eol + 4;
					break;
				}
				parts.push(this.buf.subarray(eol + 2, eol + 2 + n));
				at = eol + 2 + n + 2;
			}
			body = Buffer.concat(parts);
		} else {
			this.fail(new Error(`an answer without Content-Length or chunks: ${head[0]}`));
			return;
		}
		this.buf = this.buf.subarray(used);
		const w = this.waiter;
		this.waiter = null;
		w.resolve({ status, headers, text: body.toString('utf8') });
	}
	// POSTs text with the given headers (an object); resolves to
	// {status, headers (lower-case names), text}.
	// A connection the gateway closed while idle (server.connection_timeout_s,
	// e.g. between two slow SQL calls of a round) is opened again first:
	// counted in reconnects, its connect inside that call's time.
	async post(text, headers = {}) {
		if (this.closed) {
			this.reconnects = (this.reconnects ?? 0) + 1;
			this.buf = Buffer.alloc(0);
			await this.open();
		}
		let req = `POST ${this.url.pathname} HTTP/1.1\r\nHost: ${this.url.host}\r\n`;
		for (const [k, v] of Object.entries(headers)) req += `${k}: ${v}\r\n`;
		req += `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => this.fail(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
			this.waiter = {
				resolve: (r) => (clearTimeout(timer), resolve(r)),
				reject: (e) => (clearTimeout(timer), reject(e)),
			};
			this.sock.write(req);
		});
	}
	close() {
		this.sock?.destroy();
	}
}

// nginx.mjs - a "Grafana-shaped" HTTP front for the integration tests, made
// of a real nginx (Debian /usr/sbin/nginx) in the foreground with its config,
// prefix, pid and logs in a temp dir on a free loopback port.  It answers
// the parts of Grafana's HTTP API that Sextant uses: data source lookup by
// UID and by name (Grafana's data source JSON), and the data source proxy
// /api/datasources/proxy/uid/<uid>/<path> mapped onto each data source's
// upstream; every /api path but /api/health wants "Authorization: Bearer
// <token>" and answers 401 with Grafana's JSON otherwise.  startRoundRobin()
// (below) is a load balancer over gateway replicas.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Proc, freePort, requireBinary, waitUntil } from './procs.mjs';
import { LOG_DIR } from './server.mjs';

export const NGINX_BIN = process.env.SEXTANT_NGINX_BIN || '/usr/sbin/nginx';

const dirs = new Set();
process.on('exit', () => {
	for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

// Grafana's answers to a request without a token, with a wrong one, for an
// unknown data source (GET /api/datasources/uid/<uid> and the proxy).
export const GRAFANA_UNAUTHORIZED = { message: 'Unauthorized' };
export const GRAFANA_BAD_TOKEN = { extra: null, message: 'Invalid API key', messageId: 'api-key.invalid', statusCode: 401, traceID: '' };
export const GRAFANA_DS_NOT_FOUND = { message: 'Data source not found' };

// Grafana's data source JSON (GET /api/datasources/uid/<uid>) for ds:
// {id, uid, name, upstream, type = 'prometheus'}.
export function datasourceJson(ds, isDefault) {
	return {
		id: ds.id,
		uid: ds.uid,
		orgId: 1,
		name: ds.name,
		type: ds.type ?? 'prometheus',
		typeName: (ds.type ?? 'prometheus') === 'prometheus' ? 'Prometheus' : ds.type,
		typeLogoUrl: `public/app/plugins/datasource/${ds.type ?? 'prometheus'}/img/${ds.type ?? 'prometheus'}_logo.svg`,
		access: 'proxy',
		url: ds.upstream,
		user: '',
		database: '',
		basicAuth: false,
		basicAuthUser: '',
		withCredentials: false,
		isDefault,
		jsonData: { httpMethod: 'POST', timeInterval: '1s' },
		secureJsonFields: {},
		version: 1,
		readOnly: false,
	};
}

// An nginx string literal (single quotes; no variables are expanded in the
// strings this file writes because none contains '$').
function lit(s) {
	if (s.includes('$')) throw new Error(`nginx literal with '$': ${s}`);
	return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function configText({ dir, port, token, datasources }) {
	const p = (f) => path.join(dir, f);
	const body = (o) => lit(JSON.stringify(o) + '\n');
	const proxies = datasources
		.map(
			(ds) => `
		location ${lit(`/api/datasources/proxy/uid/${ds.uid}/`)} {
			proxy_pass ${ds.upstream.replace(/\/*$/, '/')};
			proxy_set_header Authorization "";
			proxy_buffering off;
			proxy_read_timeout 60s;
			error_page 502 504 = @bad_gateway;
		}`,
		)
		.join('\n');
	return `# written by test/integration/lib/nginx.mjs
daemon off;
master_process off;
worker_processes 1;
pid ${p('nginx.pid')};
error_log ${p('error.log')} warn;
events { worker_connections 256; }
http {
	log_format requests '$request_method $request_uri $status';
	access_log ${p('access.log')} requests;
	client_body_temp_path ${p('tmp/body')};
	proxy_temp_path ${p('tmp/proxy')};
	fastcgi_temp_path ${p('tmp/fastcgi')};
	uwsgi_temp_path ${p('tmp/uwsgi')};
	scgi_temp_path ${p('tmp/scgi')};
	default_type application/json;
	server_tokens off;
	map $http_authorization $auth_state {
		${lit(`Bearer ${token}`)} ok;
		"" missing;
		default bad;
	}
	map $uri $public {
		/api/health 1;
		default 0;
	}
	map "$auth_state:$public" $deny {
		"missing:0" missing;
		"bad:0" bad;
		default "";
	}
	server {
		listen 127.0.0.1:${port};
		if ($deny = missing) {
			return 401 ${body(GRAFANA_UNAUTHORIZED)};
		}
		if ($deny = bad) {
			return 401 ${body(GRAFANA_BAD_TOKEN)};
		}
		location = /api/health {
			return 200 ${body({ commit: 'sextant-test', database: 'ok', version: '10.4.0' })};
		}
		location /api/datasources/uid/ {
			root ${p('www')};
			error_page 404 = @ds_not_found;
		}
		location /api/datasources/name/ {
			root ${p('www')};
			error_page 404 = @ds_not_found;
		}
${proxies}
		location /api/datasources/proxy/ {
			return 404 ${body(GRAFANA_DS_NOT_FOUND)};
		}
		location @ds_not_found {
			return 404 ${body(GRAFANA_DS_NOT_FOUND)};
		}
		location @bad_gateway {
			return 502 ${body({ message: 'Bad Gateway' })};
		}
		location / {
			return 404 ${body({ message: 'Not found' })};
		}
	}
}
`;
}

// One nginx process run from its own directory (nginx.conf written there by
// the caller), with its access log, error log and graceful stop.
class NginxProcess {
	constructor({ name, dir, port }) {
		this.name = name;
		this.dir = dir;
		this.port = port;
		this.url = `http://127.0.0.1:${port}`;
		this.logPath = path.join(LOG_DIR, `${name}-${port}-${Date.now()}.log`);
		this.accessLog = path.join(dir, 'access.log');
	}

	// Starts nginx and waits until probe (a path) answers 200 through it.
	async startAndWait(probe, what) {
		const conf = path.join(this.dir, 'nginx.conf');
		this.proc = new Proc(this.name, NGINX_BIN, ['-p', this.dir, '-c', conf, '-e', path.join(this.dir, 'error.log')], this.logPath);
		await waitUntil(this.proc, what, async () => {
			const res = await fetch(`${this.url}${probe}`, { signal: AbortSignal.timeout(1000) });
			await res.arrayBuffer();
			return res.status === 200;
		});
	}

	// The access log's lines after byte offset `from`.
	accessLines(from = 0) {
		let text = '';
		try {
			text = fs.readFileSync(this.accessLog, 'utf8');
		} catch {
			return [];
		}
		return text.slice(from).split('\n').filter(Boolean);
	}

	// The error log (upstream failures are logged there).
	errorLog() {
		try {
			return fs.readFileSync(path.join(this.dir, 'error.log'), 'utf8');
		} catch {
			return '';
		}
	}

	// SIGQUIT (graceful) and remove the temp dir; throws on a bad exit.
	async close() {
		try {
			const st = await this.proc.stop({ signal: 'SIGQUIT' });
			if (st.code !== 0) throw new Error(`${this.name}: exited ${JSON.stringify(st)}; log ${this.logPath}:\n${this.proc.tail()}\n${this.errorLog()}`);
		} finally {
			fs.rmSync(this.dir, { recursive: true, force: true });
			dirs.delete(this.dir);
		}
	}
}

export class GrafanaFront extends NginxProcess {
	constructor({ name, dir, port, token, datasources }) {
		super({ name, dir, port });
		this.token = token;
		this.datasources = datasources;
		this.mark = 0;
	}

	start() {
		return this.startAndWait('/api/health', '/api/health');
	}

	// The requests nginx logged since the last resetRequests():
	// [{method, uri, status}].
	requests() {
		return this.accessLines(this.mark).map((l) => {
			const [method, uri, status] = l.split(' ');
			return { method, uri, status: Number(status) };
		});
	}

	resetRequests() {
		try {
			this.mark = fs.statSync(this.accessLog).size;
		} catch {
			this.mark = 0;
		}
	}
}

// Starts the front.  datasources: [{id, uid, name, upstream}] where upstream
// is the data source URL ('http://127.0.0.1:<port>', Prometheus or any
// stand-in); the first is Grafana's default.  UIDs and names must not
// contain '/', '$' or quotes.  Fails with a clear message when nginx is
// not installed.
export async function startGrafanaFront({ name = 'grafana-front', token, datasources }) {
	requireBinary(NGINX_BIN, 'nginx-light (or nginx)');
	for (const ds of datasources) {
		if (/[/$'"\\]/.test(ds.uid + ds.name)) throw new Error(`data source uid/name with a reserved character: ${ds.uid} ${ds.name}`);
	}
	fs.mkdirSync(LOG_DIR, { recursive: true });
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sextant-${name}-`));
	dirs.add(dir);
	for (const sub of ['tmp', 'www/api/datasources/uid', 'www/api/datasources/name']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
	datasources.forEach((ds, i) => {
		const json = JSON.stringify(datasourceJson(ds, i === 0));
		fs.writeFileSync(path.join(dir, 'www/api/datasources/uid', ds.uid), json);
		fs.writeFileSync(path.join(dir, 'www/api/datasources/name', ds.name), json);
	});
	const port = await freePort();
	fs.writeFileSync(path.join(dir, 'nginx.conf'), configText({ dir, port, token, datasources }));
	const front = new GrafanaFront({ name, dir, port, token, datasources });
	await front.start();
	return front;
}

// ---- a round-robin front for gateway replicas --------------------------------------
//
// startRoundRobin() runs a second kind of nginx: a load balancer that sends
// each request to the next of several upstreams in turn (nginx balances per
// request, not per connection), the way a Kubernetes Service or an ingress
// spreads one MCP session over replicas.  Upstream keep-alive, HTTP/1.1,
// no response buffering (SSE goes through as it is written), the client's
// Host passed on (the gateway accepts loopback Hosts only).  An upstream is
// never marked down (max_fails=0) and a failed request is never retried on
// the other one (proxy_next_upstream off): a replica's error reaches the
// test instead of being hidden.

function roundRobinText({ dir, port, upstreams }) {
	const p = (f) => path.join(dir, f);
	return `# written by test/integration/lib/nginx.mjs (startRoundRobin)
daemon off;
master_process off;
worker_processes 1;
pid ${p('nginx.pid')};
error_log ${p('error.log')} warn;
events { worker_connections 1024; }
http {
	log_format upstreams '$request_method $request_uri $status $upstream_addr';
	access_log ${p('access.log')} upstreams;
	client_body_temp_path ${p('tmp/body')};
	proxy_temp_path ${p('tmp/proxy')};
	fastcgi_temp_path ${p('tmp/fastcgi')};
	uwsgi_temp_path ${p('tmp/uwsgi')};
	scgi_temp_path ${p('tmp/scgi')};
	server_tokens off;
	upstream replicas {
${upstreams.map((u) => `		server ${u} max_fails=0;`).join('\n')}
		keepalive 64;
	}
	server {
		listen 127.0.0.1:${port};
		location / {
			proxy_pass http://replicas;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $http_host;
			proxy_buffering off;
			proxy_read_timeout 60s;
			proxy_next_upstream off;
		}
	}
}
`;
}

export class RoundRobin extends NginxProcess {
	constructor({ name, dir, port, upstreams }) {
		super({ name, dir, port });
		this.upstreams = upstreams;
		this.mcpUrl = `${this.url}/mcp`;
	}

	// /healthz of whichever upstream comes next answers through nginx
	start() {
		return this.startAndWait('/healthz', '/healthz through nginx');
	}

	// Every request nginx logged: [{method, uri, status, upstream}] where
	// upstream is the 'host:port' that served it ('-' when none did).
	requests() {
		return this.accessLines().map((l) => {
			const [method, uri, status, upstream] = l.split(' ');
			return { method, uri, status: Number(status), upstream };
		});
	}
}

// Starts nginx on a free loopback port in front of upstreams: servers with
// a `host` ('127.0.0.1:<port>', as lib/server.mjs's Server has) or such
// strings.  Resolves once /healthz answers through it.
export async function startRoundRobin({ name = 'round-robin', upstreams }) {
	requireBinary(NGINX_BIN, 'nginx-light (or nginx)');
	const hosts = upstreams.map((u) => (typeof u === 'string' ? u : u.host));
	for (const h of hosts) {
		if (!/^[0-9.]+:\d+$/.test(h)) throw new Error(`round-robin upstream ${JSON.stringify(h)}: expected 'address:port'`);
	}
	fs.mkdirSync(LOG_DIR, { recursive: true });
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sextant-${name}-`));
	dirs.add(dir);
	fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
	const port = await freePort();
	fs.writeFileSync(path.join(dir, 'nginx.conf'), roundRobinText({ dir, port, upstreams: hosts }));
	const rr = new RoundRobin({ name, dir, port, upstreams: hosts });
	await rr.start();
	return rr;
}

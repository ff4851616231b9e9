// oauth.test.mjs - Sextant as an OAuth 2.1 resource server ([auth.oauth]),
// against a real authorization server (lib/issuer.mjs: oidc-provider with
// resource indicators, issuing JWT access tokens for Sextant's resource).
// Checks the protected resource metadata (RFC 9728), the 401 challenges,
// tools/call through the MCP SDK client with a token, and the SDK's own
// OAuth support end to end (authorization code with PKCE, client
// credentials); 403 insufficient_scope, write_tools behind sextant:write
// (MCP and REST), scoped API keys, sessions bound to their principal on
// two replicas, the client_id metric label, 400 for a malformed header and
// a query-string token, an unreachable issuer (503), probes staying open.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

import { startIssuer } from './lib/issuer.mjs';
import { startPostgres } from './lib/pg.mjs';
import { CONFORMANCE_CONFIG, freePort, startServer } from './lib/server.mjs';

const RESOURCE = 'https://sextant.test/mcp';
const API_KEY = 'oauth-test-api-key-0123456789';
const READ_KEY = 'oauth-test-read-only-key-9876543210';
const INGEST_KEY = 'oauth-test-ingest-only-key-5555555555';
const WRITE_TOOL = 'test_image_content'; // in write_tools below
let srv, srvB, as, issuer, tmp, pg;

// A client-credentials token from the provider for resource and scope.
const token = (clientId, scope, resource) => as.token(clientId, scope, resource);

before(async () => {
	as = await startIssuer({
		clients: { reader: 'sextant:read', nobody: 'other:scope', collector: 'sextant:ingest', writer: 'sextant:read sextant:write', both: 'sextant:read sextant:ingest', entra: 'sextant.read sextant.write' },
		resources: [RESOURCE, 'https://other.test/mcp'],
	});
	issuer = as.issuer;
	pg = await startPostgres({ name: 'oauth' });
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-oauth-'));
	const conf = path.join(tmp, 'oauth.toml');
	const sha = (k) => 'sha256:' + crypto.createHash('sha256').update(k).digest('hex');
	fs.writeFileSync(conf, fs.readFileSync(CONFORMANCE_CONFIG, 'utf8') +
		`\n[auth]\nkeys = ["${sha(API_KEY)}", "${sha(READ_KEY)} sextant:read", "${sha(INGEST_KEY)}  sextant:ingest"]\n\n` +
		`[auth.oauth]\nenabled = true\nresource = "${RESOURCE}"\nwrite_tools = ["${WRITE_TOOL}"]\n` +
		`issuer = "${issuer}"\nresource_documentation = "https://sextant.test/docs"\n`);
	const env = { SEXTANT_LOG_LEVEL: 'debug', DATABASE_URL: pg.url };
	srv = await startServer({ name: 'oauth', config: conf, env });
	// a second replica on the same database: shared sessions
	srvB = await startServer({ name: 'oauth-b', config: conf, env });
});

after(async () => {
	if (srv) await srv.stop();
	if (srvB) await srvB.stop();
	if (as) await as.close();
	if (pg) await pg.stop();
	if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const base = () => `http://127.0.0.1:${srv.port}`;
const PRM_URL = 'https://sextant.test/.well-known/oauth-protected-resource/mcp';
const post = (headers = {}, url = `${base()}/mcp`) => fetch(url, {
	method: 'POST',
	headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
	body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
});

test('protected resource metadata at the root and /mcp-suffixed well-known URLs, without a token', async () => {
	for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
		const r = await fetch(base() + p);
		assert.equal(r.status, 200, p);
		assert.match(r.headers.get('content-type'), /^application\/json/);
		assert.deepEqual(await r.json(), {
			resource: RESOURCE,
			authorization_servers: [issuer],
			scopes_supported: ['sextant:read', 'sextant:ingest', 'sextant:write'],
			bearer_methods_supported: ['header'],
			resource_documentation: 'https://sextant.test/docs',
		});
	}
});

test('401 without a token: resource_metadata and scope, no error code', async () => {
	const r = await post();
	assert.equal(r.status, 401);
	assert.equal(r.headers.get('www-authenticate'),
		`Bearer resource_metadata="${PRM_URL}", scope="sextant:read"`);
});

test('401 invalid_token naming the failed check: garbage, another resource, a tampered token', async () => {
	const cases = [
		['not-a-jwt-and-no-introspection', /not a JWT and no introspection/],
		[await token('reader', 'sextant:read', 'https://other.test/mcp'), /audience \(aud\)/],
	];
	const good = await token('reader', 'sextant:read');
	const [h, p, s] = good.split('.');
	const claims = JSON.parse(Buffer.from(p, 'base64url'));
	claims.scope = 'sextant:read sextant:write';
	cases.push([`${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`, /signature does not verify/]);
	for (const [tok, why] of cases) {
		const r = await post({ authorization: `Bearer ${tok}` });
		assert.equal(r.status, 401);
		const ch = r.headers.get('www-authenticate');
		assert.match(ch, /^Bearer resource_metadata="[^"]+", scope="sextant:read", error="invalid_token", error_description="[^"]+"$/);
		assert.match(ch, why);
		assert.ok(!ch.includes(tok), 'the challenge never echoes the token');
	}
});

// connect (initialize), then tools/call, with credential as the Bearer
async function callWith(credential) {
	const client = new Client({ name: 'oauth-test', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(`${base()}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${credential}` } },
	});
	await client.connect(transport);
	const r = await client.callTool({ name: 'test_simple_text' });
	await client.close();
	return r;
}

test('a tools/call with the token through the MCP SDK client; the principal in the access log', async () => {
	const tok = await token('reader', 'sextant:read');
	const r = await callWith(tok);
	assert.equal(r.isError, undefined);
	assert.match(r.content[0].text, /\S/);
	// the line is written when MHD completes the request, after the reply
	let log = '';
	for (let i = 0; i < 40 && !/answered principal=reader\/reader/.test(log); i++) {
		await new Promise((res) => setTimeout(res, 50));
		log = fs.readFileSync(srv.stderrPath, 'utf8');
	}
	// sub/client_id: RFC 9068 2.2 has sub = client_id for client credentials
	assert.match(log, /answered principal=reader\/reader/);
	assert.ok(!log.includes(tok), 'the token is never logged');
});

test('403 insufficient_scope naming the scope needed', async () => {
	const tok = await token('nobody', 'other:scope');
	const r = await post({ authorization: `Bearer ${tok}` });
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'),
		`Bearer resource_metadata="${PRM_URL}", scope="sextant:read", error="insufficient_scope", ` +
		'error_description="the token lacks scope sextant:read"');
});

test('400 for a malformed Authorization header and for access_token in the query string', async () => {
	let r = await post({ authorization: 'Basic dXNlcjpwYXNz' });
	assert.equal(r.status, 400);
	assert.match(r.headers.get('www-authenticate'), /error="invalid_request"/);
	const tok = await token('reader', 'sextant:read');
	r = await post({}, `${base()}/mcp?access_token=${tok}`);
	assert.equal(r.status, 400);
	assert.match(r.headers.get('www-authenticate'), /error="invalid_request", error_description="access_token in the query string is refused/);
});

test('API keys keep working beside tokens; probes stay open', async () => {
	const r = await callWith(API_KEY);
	assert.equal(r.isError, undefined);
	await assert.rejects(callWith('wrong-key'), /401|invalid_token|Unauthorized/i);
	for (const p of ['/healthz', '/metrics']) assert.equal((await fetch(base() + p)).status, 200, p);
});

test('OTLP ingest needs sextant:ingest: 401 without a token, 403 with a read token, 200 with an ingest token', async () => {
	const send = (headers = {}) => fetch(`${base()}/v1/traces`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify({ resourceSpans: [] }),
	});
	let r = await send();
	assert.equal(r.status, 401);
	assert.equal(r.headers.get('www-authenticate'), `Bearer resource_metadata="${PRM_URL}", scope="sextant:ingest"`);
	r = await send({ authorization: `Bearer ${await token('reader', 'sextant:read')}` });
	assert.equal(r.status, 403);
	assert.match(r.headers.get('www-authenticate'), /scope="sextant:ingest", error="insufficient_scope"/);
	r = await send({ authorization: `Bearer ${await token('collector', 'sextant:ingest')}` });
	assert.equal(r.status, 200, await r.text());
	// an [auth] key naming sextant:ingest ingests; one naming other scopes does not
	r = await send({ authorization: `Bearer ${INGEST_KEY}` });
	assert.equal(r.status, 200, await r.text());
	r = await send({ authorization: `Bearer ${READ_KEY}` });
	assert.equal(r.status, 401);
});

// connect with credential; the caller closes the client
async function connectWith(credential, url = `${base()}/mcp`) {
	const client = new Client({ name: 'oauth-test', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { authorization: `Bearer ${credential}` } },
	});
	await client.connect(transport);
	return { client, transport };
}

test('write_tools need sextant:write: tools/list shows them only to callers that may call them; a call beyond the scopes names the scope', async () => {
	const reader = await token('reader', 'sextant:read');
	const writer = await token('writer', 'sextant:read sextant:write');
	const cases = [[reader, false], [READ_KEY, false], [writer, true], [API_KEY, true]];
	for (const [cred, may] of cases) {
		const { client } = await connectWith(cred);
		try {
			const names = (await client.listTools()).tools.map((t) => t.name);
			assert.ok(names.includes('test_simple_text'), 'read tools are listed');
			assert.equal(names.includes(WRITE_TOOL), may, `${WRITE_TOOL} listed: ${names.includes(WRITE_TOOL)}`);
			if (may) {
				const r = await client.callTool({ name: WRITE_TOOL });
				assert.equal(r.isError, undefined);
			} else {
				// HTTP 403 with the step-up challenge (a client without
				// an auth provider cannot step up); the body keeps the
				// JSON-RPC error naming the scope
				await assert.rejects(client.callTool({ name: WRITE_TOOL }), (e) => {
					assert.equal(e.code, 403, e.message);
					assert.match(e.message, /"code":-32030/);
					assert.match(e.message, /"scope":"sextant:write"/);
					assert.match(e.message, /tool \\"test_image_content\\" needs scope sextant:write/);
					return true;
				});
			}
		} finally {
			await client.close();
		}
	}
});

// A JSON-RPC POST on /mcp with credential; extra headers added.
const rpc = (credential, msg, headers = {}) => fetch(`${base()}/mcp`, {
	method: 'POST',
	headers: {
		'content-type': 'application/json', accept: 'application/json, text/event-stream',
		authorization: `Bearer ${credential}`, ...headers,
	},
	body: JSON.stringify(msg),
});

// A session of revision version opened with credential: its id.
async function openSession(credential, version = '2025-11-25') {
	const r = await rpc(credential, {
		jsonrpc: '2.0', id: 0, method: 'initialize',
		params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'oauth-raw', version: '1.0.0' } },
	});
	assert.equal(r.status, 200, await r.text());
	const sid = r.headers.get('mcp-session-id');
	await rpc(credential, { jsonrpc: '2.0', method: 'notifications/initialized' },
		{ 'mcp-session-id': sid, 'mcp-protocol-version': version });
	return sid;
}

// A 2026-07-28 request (no session), the tasks extension declared.
const STATELESS = '2026-07-28';
const statelessCall = (credential, method, params, name) => rpc(credential, {
	jsonrpc: '2.0', id: 5, method,
	params: {
		...params,
		_meta: {
			'io.modelcontextprotocol/protocolVersion': STATELESS,
			'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
		},
	},
}, { 'mcp-protocol-version': STATELESS, 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}) });

const STEP_UP = (scope) => `Bearer resource_metadata="${PRM_URL}", scope="${scope}", error="insufficient_scope", ` +
	`error_description="tool ${WRITE_TOOL} needs scope sextant:write, which this credential lacks: authorize again asking for it"`;

test('Streamable HTTP step-up: a tools/call beyond the scopes is HTTP 403 insufficient_scope naming the scopes held and the one needed', async () => {
	const reader = await token('reader', 'sextant:read');
	const call = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: WRITE_TOOL, arguments: {} } };
	// a 2025-11-25 session: 403 with the challenge, the session header, and
	// the JSON-RPC error in the body
	let sid = await openSession(reader);
	let r = await rpc(reader, call, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'), STEP_UP('sextant:read sextant:write'));
	assert.equal(r.headers.get('mcp-session-id'), sid);
	let body = await r.json();
	assert.equal(body.id, 9);
	assert.equal(body.error.code, -32030);
	assert.deepEqual(body.error.data, { scope: 'sextant:write', tool: WRITE_TOOL });
	// the scopes the token holds are kept, whatever they are
	const both = await token('both', 'sextant:read sextant:ingest');
	r = await rpc(both, call, { 'mcp-session-id': await openSession(both), 'mcp-protocol-version': '2025-11-25' });
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'), STEP_UP('sextant:read sextant:ingest sextant:write'));
	// a scoped API key: its scopes and the one it lacks
	r = await rpc(READ_KEY, call, { 'mcp-session-id': await openSession(READ_KEY), 'mcp-protocol-version': '2025-11-25' });
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'), STEP_UP('sextant:read sextant:write'));
	// a 2026-07-28 request without a session: the same 403
	r = await statelessCall(reader, 'tools/call', { name: WRITE_TOOL, arguments: {} }, WRITE_TOOL);
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'), STEP_UP('sextant:read sextant:write'));
	assert.equal(r.headers.get('mcp-session-id'), null);
	assert.equal((await r.json()).error.code, -32030);
	// a batch (2025-03-26) cannot give one member a status: the JSON-RPC
	// error in a 200, the other member answered
	sid = await openSession(reader, '2025-03-26');
	r = await rpc(reader, [call, { jsonrpc: '2.0', id: 10, method: 'ping' }], { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' });
	assert.equal(r.status, 200);
	assert.equal(r.headers.get('www-authenticate'), null);
	body = await r.json();
	assert.equal(body.find((m) => m.id === 9).error.code, -32030);
	assert.deepEqual(body.find((m) => m.id === 10).result, {});
	// the legacy SSE transport answers on the stream (its POST was 202
	// already): the JSON-RPC error naming the scope
	const legacy = new Client({ name: 'oauth-legacy', version: '1.0.0' });
	await legacy.connect(new SSEClientTransport(new URL(`${base()}/sse`), { requestInit: { headers: { authorization: `Bearer ${reader}` } } }));
	try {
		await assert.rejects(legacy.callTool({ name: WRITE_TOOL }), (e) => {
			assert.equal(e.code, -32030, e.message);
			assert.deepEqual(e.data, { scope: 'sextant:write', tool: WRITE_TOOL });
			return true;
		});
		assert.equal((await legacy.callTool({ name: 'test_simple_text' })).isError, undefined, 'read tools still answer');
	} finally {
		await legacy.close();
	}
	// the tool did not run: nothing was called with the read token
	const m = await (await fetch(`${base()}/metrics`)).text();
	assert.doesNotMatch(m, /sextant_tool_calls_total\{tool="test_image_content",outcome="[a-z_]+",client="reader"\}/);
});

test('tasks are bound to the principal that created them: another token gets "unknown taskId" for get, update and cancel', async () => {
	const reader = await token('reader', 'sextant:read');
	let r = await statelessCall(reader, 'tools/call', { name: 'slow_compute', arguments: { seconds: 3 } }, 'slow_compute');
	assert.equal(r.status, 200);
	const created = (await r.json()).result;
	assert.equal(created.resultType, 'task', JSON.stringify(created));
	const taskId = created.taskId;
	assert.match(taskId, /^[0-9a-f]{32}$/);
	const others = [await token('writer', 'sextant:read sextant:write'), API_KEY, READ_KEY];
	for (const other of others) {
		for (const [method, params] of [
			['tasks/get', { taskId }],
			['tasks/update', { taskId, inputResponses: {} }],
			['tasks/cancel', { taskId }],
		]) {
			r = await statelessCall(other, method, params, taskId);
			assert.equal(r.status, 200);
			const body = await r.json();
			assert.equal(body.result, undefined, `${method} by ${other.slice(0, 8)} gave the task: ${JSON.stringify(body)}`);
			assert.equal(body.error.code, -32602);
			assert.match(body.error.message, new RegExp(`unknown taskId "${taskId}": it never existed here or expired`));
		}
	}
	// as for an id never issued
	r = await statelessCall(others[0], 'tasks/get', { taskId: '0'.repeat(32) }, '0'.repeat(32));
	assert.match((await r.json()).error.message, /unknown taskId "0{32}": it never existed here or expired/);
	// the owner (another token of the same client) still sees it, not
	// cancelled by the others, and can cancel it
	r = await statelessCall(await token('reader', 'sextant:read'), 'tasks/get', { taskId }, taskId);
	let got = (await r.json()).result;
	assert.equal(got.taskId, taskId);
	assert.equal(got.status, 'working');
	r = await statelessCall(reader, 'tasks/cancel', { taskId }, taskId);
	const ack = await r.json();
	assert.equal(ack.error, undefined, JSON.stringify(ack));
	assert.equal(ack.result.resultType, 'complete', 'the owner cancels');
	for (let i = 0; i < 40 && got.status !== 'cancelled'; i++) {
		await new Promise((res) => setTimeout(res, 100));
		got = (await (await statelessCall(reader, 'tasks/get', { taskId }, taskId)).json()).result;
	}
	assert.equal(got.status, 'cancelled');
});

test('REST facade: a write tool without sextant:write is 403 insufficient_scope with the challenge (the scopes held and the one missing, as /mcp names them); its list leaves the tool out', async () => {
	const reader = await token('reader', 'sextant:read');
	let r = await fetch(`${base()}/api/v1/tools/${WRITE_TOOL}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${reader}` },
		body: '{}',
	});
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'),
		`Bearer resource_metadata="${PRM_URL}", scope="sextant:read sextant:write", error="insufficient_scope", ` +
		'error_description="tool test_image_content needs scope sextant:write, which this credential lacks: authorize again asking for it"');
	assert.match((await r.json()).detail, /needs scope sextant:write/);
	r = await fetch(`${base()}/api/v1/tools`, { headers: { authorization: `Bearer ${reader}` } });
	assert.equal(r.status, 200);
	const names = (await r.json()).tools.map((t) => t.name);
	assert.ok(names.includes('test_simple_text') && !names.includes(WRITE_TOOL));
	r = await fetch(`${base()}/api/v1/tools/${WRITE_TOOL}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${await token('writer', 'sextant:read sextant:write')}` },
		body: '{}',
	});
	assert.equal(r.status, 200, await r.text());
});

test('an API key whose scopes leave out sextant:read is 403 naming it', async () => {
	const r = await post({ authorization: `Bearer ${INGEST_KEY}` });
	assert.equal(r.status, 403);
	assert.equal(r.headers.get('www-authenticate'),
		`Bearer resource_metadata="${PRM_URL}", scope="sextant:read", error="insufficient_scope", ` +
		'error_description="the API key lacks scope sextant:read"');
});

test('sessions are bound to the principal that opened them, on every replica: another token or key gets 404', async () => {
	const reader = await token('reader', 'sextant:read');
	const { client, transport } = await connectWith(reader);
	try {
		const sid = transport.sessionId;
		assert.match(sid, /^[0-9a-f]{32}$/);
		const ping = (cred, b = base()) => fetch(`${b}/mcp`, {
			method: 'POST',
			headers: {
				'content-type': 'application/json', accept: 'application/json, text/event-stream',
				'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${cred}`,
			},
			body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
		});
		const writer = await token('writer', 'sextant:read sextant:write');
		for (const b of [base(), `http://127.0.0.1:${srvB.port}`]) {
			// the owner: another token of the same client works on both replicas
			assert.equal((await ping(await token('reader', 'sextant:read'), b)).status, 200, b);
			for (const other of [writer, API_KEY, READ_KEY]) {
				const r = await ping(other, b);
				assert.equal(r.status, 404, `${b}: ${other.slice(0, 8)}`);
				assert.match((await r.json()).error.message, /session not found/);
			}
			const del = await fetch(`${b}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: `Bearer ${writer}` } });
			assert.equal(del.status, 404, 'another principal cannot end it');
		}
		assert.equal((await client.callTool({ name: 'test_simple_text' })).isError, undefined, 'still the owner\'s');
	} finally {
		await client.close();
	}
});

test('tool-call metrics carry the client_id ("apikey" for keys)', async () => {
	const { client } = await connectWith(await token('writer', 'sextant:read sextant:write'));
	await client.callTool({ name: 'test_simple_text' });
	await client.close();
	const k = await connectWith(API_KEY);
	await k.client.callTool({ name: 'test_simple_text' });
	await k.client.close();
	const text = await (await fetch(`${base()}/metrics`)).text();
	assert.match(text, /sextant_tool_calls_total\{tool="test_simple_text",outcome="ok",client="writer"\} [1-9]/);
	assert.match(text, /sextant_tool_calls_total\{tool="test_simple_text",outcome="ok",client="apikey"\} [1-9]/);
});

test('scopes named in URI form (Entra ID: api://<app>/sextant.read): metadata and challenges name them so, a token whose scp holds the short name is let in', async () => {
	const APP = 'api://sextant-app';
	const conf = path.join(tmp, 'entra.toml');
	fs.writeFileSync(conf, fs.readFileSync(CONFORMANCE_CONFIG, 'utf8') +
		`\n[auth.oauth]\nenabled = true\nresource = "${RESOURCE}"\nissuer = "${issuer}"\nwrite_tools = ["${WRITE_TOOL}"]\n` +
		`scope_read = "${APP}/sextant.read"\nscope_write = "${APP}/sextant.write"\n`);
	const s = await startServer({ name: 'oauth-entra', config: conf });
	try {
		const url = `http://127.0.0.1:${s.port}`;
		const prm = await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`)).json();
		assert.deepEqual(prm.scopes_supported, [`${APP}/sextant.read`, 'sextant:ingest', `${APP}/sextant.write`]);
		// stateless 2026-07-28 requests, as statelessCall sends them
		const call = (tok, method, params = {}, name) => fetch(`${url}/mcp`, {
			method: 'POST',
			headers: {
				'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tok}`,
				'mcp-protocol-version': STATELESS, 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}),
			},
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} } } }),
		});
		const ping = (tok) => call(tok, 'tools/list');
		const write = (tok) => call(tok, 'tools/call', { name: WRITE_TOOL, arguments: {} }, WRITE_TOOL);
		const reader = await token('entra', 'sextant.read');
		let r = await ping(reader);
		assert.equal(r.status, 200, await r.clone().text());
		// the short name of another scope, or the colon form, is not it
		r = await ping(await token('reader', 'sextant:read'));
		assert.equal(r.status, 403);
		assert.match(r.headers.get('www-authenticate'), new RegExp(`scope="${APP}/sextant\\.read"`));
		// step-up: the held scope named as configured, then the missing one
		r = await write(reader);
		assert.equal(r.status, 403, await r.clone().text());
		assert.match(r.headers.get('www-authenticate'), new RegExp(`scope="${APP}/sextant\\.read ${APP}/sextant\\.write", error="insufficient_scope"`));
		r = await write(await token('entra', 'sextant.read sextant.write'));
		assert.equal(r.status, 200);
		assert.equal((await r.json()).error, undefined);
	} finally {
		await s.stop();
	}
});

test('authorization server unreachable, nothing cached: 503 with a generic message, the detail in the log only', async () => {
	const dead = await freePort(); // nothing listens there
	const conf = path.join(tmp, 'dead.toml');
	fs.writeFileSync(conf, fs.readFileSync(CONFORMANCE_CONFIG, 'utf8') +
		`\n[auth.oauth]\nenabled = true\nresource = "${RESOURCE}"\nissuer = "http://127.0.0.1:${dead}"\ntimeout_ms = 500\n`);
	const s = await startServer({ name: 'oauth-dead', config: conf });
	try {
		const r = await fetch(`http://127.0.0.1:${s.port}/mcp`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${await token('reader', 'sextant:read')}` },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
		});
		assert.equal(r.status, 503);
		assert.equal(r.headers.get('retry-after'), '5');
		const body = JSON.stringify(await r.json());
		assert.match(body, /the authorization server could not be reached: retry later/);
		assert.ok(!body.includes(String(dead)) && !body.includes('127.0.0.1'), body);
		let log = '';
		for (let i = 0; i < 40 && !/access token not checked/.test(log); i++) {
			await new Promise((res) => setTimeout(res, 50));
			log = fs.readFileSync(s.stderrPath, 'utf8');
		}
		assert.match(log, /access token not checked: .*127\.0\.0\.1/);
		const otlp = await fetch(`http://127.0.0.1:${s.port}/v1/traces`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: `Bearer ${await token('collector', 'sextant:ingest')}` },
			body: JSON.stringify({ resourceSpans: [] }),
		});
		assert.equal(otlp.status, 503);
		const st = await otlp.json();
		assert.equal(st.code, 14);
		assert.equal(st.message, 'the authorization server could not be reached: retry later');
	} finally {
		await s.stop();
	}
});

// The SDK is pointed at the canonical URL (the resource in the metadata);
// this fetch takes its requests for that host to the gateway's port.
const toGateway = (input, init) => {
	const u = String(input instanceof Request ? input.url : input);
	return fetch(u.replace('https://sextant.test', base()), init);
};

// A browser for the authorization step: follows the redirects through the
// interaction (cookies kept) until the redirect URI, and gives the code.
async function authorize(url, redirectUri) {
	const jar = new Map();
	for (let i = 0; i < 12; i++) {
		const r = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
		for (const c of r.headers.getSetCookie()) {
			const kv = c.split(';')[0];
			jar.set(kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1));
		}
		const loc = r.headers.get('location');
		assert.ok(loc, `the authorization stopped at ${r.status} ${url}: ${(await r.text()).slice(0, 300)}`);
		const next = new URL(loc, url);
		if (next.href.startsWith(redirectUri)) {
			assert.equal(next.searchParams.get('error'), null, next.href);
			return next.searchParams.get('code');
		}
		url = next.href;
	}
	throw new Error('too many redirects');
}

// An OAuthClientProvider for the authorization code flow whose browser
// step is authorize(); seen records what the SDK handed it.
function codeProvider(redirectUri, seen) {
	return {
		get redirectUrl() { return redirectUri; },
		get clientMetadata() {
			return { client_name: 'oauth-test', redirect_uris: [redirectUri], grant_types: ['authorization_code'],
				response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'native' };
		},
		clientInformation: () => seen.client,
		saveClientInformation: (c) => { seen.client = c; },
		tokens: () => seen.tokens,
		saveTokens: (t) => { seen.tokens = t; },
		redirectToAuthorization: async (u) => { seen.authUrl = u; seen.code = await authorize(u.href, redirectUri); },
		saveCodeVerifier: (v) => { seen.verifier = v; },
		codeVerifier: () => seen.verifier,
	};
}

test('the MCP SDK client end to end through its OAuth support: 401 -> metadata -> registration -> code with PKCE -> token for the resource -> tools/call', async () => {
	const redirectUri = 'http://127.0.0.1:9/callback';
	const seen = { authUrl: null, code: null, tokens: null, client: null, verifier: null };
	const provider = codeProvider(redirectUri, seen);
	const mk = () => new StreamableHTTPClientTransport(new URL(RESOURCE), { authProvider: provider, fetch: toGateway });
	let transport = mk();
	const first = new Client({ name: 'oauth-sdk', version: '1.0.0' });
	await assert.rejects(first.connect(transport), UnauthorizedError);
	// the SDK found the server through the 401 and registered itself
	assert.ok(seen.client?.client_id, 'dynamic client registration');
	const au = seen.authUrl;
	assert.equal(au.origin, issuer);
	assert.equal(au.searchParams.get('code_challenge_method'), 'S256');
	assert.equal(au.searchParams.get('resource'), RESOURCE);
	assert.match(au.searchParams.get('scope'), /sextant:read/);
	assert.ok(seen.code, 'the authorization code');
	await transport.finishAuth(seen.code);
	const claims = JSON.parse(Buffer.from(seen.tokens.access_token.split('.')[1], 'base64url'));
	assert.equal(claims.aud, RESOURCE);
	assert.equal(claims.sub, 'alice');
	transport = mk();
	const client = new Client({ name: 'oauth-sdk', version: '1.0.0' });
	await client.connect(transport);
	try {
		const r = await client.callTool({ name: 'test_simple_text' });
		assert.equal(r.isError, undefined);
		assert.match(r.content[0].text, /\S/);
	} finally {
		await client.close();
	}
});

test('the MCP SDK client steps up: sextant:read first, a write tool answers 403 insufficient_scope, the SDK authorizes again for the challenge\'s scopes, the call then succeeds', async () => {
	const redirectUri = 'http://127.0.0.1:9/callback';
	const seen = { authUrl: null, code: null, tokens: null, client: null, verifier: null };
	const provider = codeProvider(redirectUri, seen);
	// registered beforehand for every scope it may come to need (an
	// authorization server grants a registered client no scope beyond its
	// registration: the SDK's own registration would name sextant:read
	// only, the 401's scope); it asks for less at first
	const reg = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()).registration_endpoint;
	const r = await fetch(reg, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ ...provider.clientMetadata, scope: 'sextant:read sextant:write' }),
	});
	assert.equal(r.status, 201, await r.clone().text());
	seen.client = await r.json();
	const mk = () => new StreamableHTTPClientTransport(new URL(RESOURCE), { authProvider: provider, fetch: toGateway });
	let transport = mk();
	await assert.rejects(new Client({ name: 'oauth-step-up', version: '1.0.0' }).connect(transport), UnauthorizedError);
	assert.equal(seen.authUrl.searchParams.get('scope'), 'sextant:read', 'the 401 asks for sextant:read only');
	await transport.finishAuth(seen.code);
	const scopeOf = () => JSON.parse(Buffer.from(seen.tokens.access_token.split('.')[1], 'base64url')).scope;
	assert.equal(scopeOf(), 'sextant:read');
	transport = mk();
	const client = new Client({ name: 'oauth-step-up', version: '1.0.0' });
	await client.connect(transport);
	try {
		const sid = transport.sessionId;
		assert.ok(!(await client.listTools()).tools.some((t) => t.name === WRITE_TOOL), 'the read token does not list the write tool');
		// the 403's challenge sends the SDK back to the authorization
		// server for its scopes; the browser step ends the call
		seen.authUrl = null;
		await assert.rejects(client.callTool({ name: WRITE_TOOL }), UnauthorizedError);
		assert.equal(seen.authUrl?.searchParams.get('scope'), 'sextant:read sextant:write', 'the scopes of the challenge');
		assert.equal(seen.authUrl.searchParams.get('resource'), RESOURCE);
		await transport.finishAuth(seen.code);
		assert.equal(scopeOf(), 'sextant:read sextant:write');
		// the same session (same principal), the call now allowed
		const res = await client.callTool({ name: WRITE_TOOL });
		assert.equal(res.isError, undefined);
		assert.equal(transport.sessionId, sid);
		assert.ok((await client.listTools()).tools.some((t) => t.name === WRITE_TOOL), 'the stepped-up token lists it');
	} finally {
		await client.close();
	}
});

test('the MCP SDK client with client credentials (ClientCredentialsProvider)', async () => {
	const provider = new ClientCredentialsProvider({ clientId: 'writer', clientSecret: 'writer-secret', scope: 'sextant:read sextant:write', expectedIssuer: issuer });
	const transport = new StreamableHTTPClientTransport(new URL(RESOURCE), { authProvider: provider, fetch: toGateway });
	const client = new Client({ name: 'oauth-cc', version: '1.0.0' });
	await client.connect(transport);
	try {
		const names = (await client.listTools()).tools.map((t) => t.name);
		assert.ok(names.includes(WRITE_TOOL), 'the write scope lists the write tool');
		assert.equal((await client.callTool({ name: WRITE_TOOL })).isError, undefined);
		assert.equal(JSON.parse(Buffer.from(provider.tokens().access_token.split('.')[1], 'base64url')).aud, RESOURCE);
	} finally {
		await client.close();
	}
});

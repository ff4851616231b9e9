// oauth.test.mjs - Sextant as an OAuth 2.1 resource server ([auth.oauth]),
// against a real authorization server: oidc-provider started here with
// client credentials and resource indicators, issuing JWT access tokens
// (at+jwt, RS256) for Sextant's resource.  Checks the protected resource
// metadata (RFC 9728), the 401 challenges, a tools/call through the MCP SDK
// client with the token, 403 insufficient_scope, 400 for a malformed header
// and for a token in the query string, API keys beside tokens, and the
// probes staying open.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Provider from 'oidc-provider';

import { startPostgres } from './lib/pg.mjs';
import { CONFORMANCE_CONFIG, freePort, startServer } from './lib/server.mjs';

const RESOURCE = 'https://sextant.test/mcp';
const API_KEY = 'oauth-test-api-key-0123456789';
let srv, as, issuer, tmp, pg;

async function startProvider() {
	const port = await freePort();
	issuer = `http://127.0.0.1:${port}`;
	const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
	const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'as-key-1', use: 'sig', alg: 'RS256' };
	const client = (id, scope) => ({
		client_id: id,
		client_secret: `${id}-secret`,
		grant_types: ['client_credentials'],
		redirect_uris: [],
		response_types: [],
		scope,
	});
	const provider = new Provider(issuer, {
		jwks: { keys: [jwk] },
		clients: [client('reader', 'sextant:read'), client('nobody', 'other:scope'), client('collector', 'sextant:ingest')],
		scopes: ['sextant:read', 'sextant:ingest', 'sextant:write', 'other:scope'],
		features: {
			devInteractions: { enabled: false },
			clientCredentials: { enabled: true },
			resourceIndicators: {
				enabled: true,
				defaultResource: () => RESOURCE,
				useGrantedResource: () => true,
				getResourceServerInfo: (ctx, indicator) => {
					if (indicator !== RESOURCE && indicator !== 'https://other.test/mcp')
						throw new Error(`unknown resource ${indicator}`);
					return {
						scope: 'sextant:read sextant:ingest sextant:write other:scope',
						audience: indicator,
						accessTokenTTL: 600,
						accessTokenFormat: 'jwt',
						jwt: { sign: { alg: 'RS256' } },
					};
				},
			},
		},
	});
	provider.on('server_error', (ctx, err) => console.error('oidc-provider:', err));
	const server = provider.listen(port);
	await new Promise((r) => server.once('listening', r));
	return server;
}

// A client-credentials token from the provider for resource and scope.
async function token(clientId, scope, resource = RESOURCE) {
	const r = await fetch(`${issuer}/token`, {
		method: 'POST',
		headers: {
			'content-type': 'application/x-www-form-urlencoded',
			authorization: 'Basic ' + Buffer.from(`${clientId}:${clientId}-secret`).toString('base64'),
		},
		body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
	});
	const body = await r.json();
	assert.equal(r.status, 200, JSON.stringify(body));
	assert.equal(body.token_type.toLowerCase(), 'bearer');
	return body.access_token;
}

before(async () => {
	as = await startProvider();
	pg = await startPostgres({ name: 'oauth' });
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-oauth-'));
	const conf = path.join(tmp, 'oauth.toml');
	const hash = 'sha256:' + crypto.createHash('sha256').update(API_KEY).digest('hex');
	fs.writeFileSync(conf, fs.readFileSync(CONFORMANCE_CONFIG, 'utf8') +
		`\n[auth]\nkeys = ["${hash}"]\n\n[auth.oauth]\nenabled = true\nresource = "${RESOURCE}"\n` +
		`issuer = "${issuer}"\nresource_documentation = "https://sextant.test/docs"\n`);
	srv = await startServer({ name: 'oauth', config: conf, env: { SEXTANT_LOG_LEVEL: 'debug', DATABASE_URL: pg.url } });
});

after(async () => {
	if (srv) await srv.stop();
	if (as) await new Promise((r) => as.close(r));
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
});

// mcp_headers.test.mjs - SEP-2243 custom headers on the wire: a 2026-07-28
// tools/call of a tool whose inputSchema marks parameters with x-mcp-header
// (the fixture test_custom_header: region string, count integer, verbose
// boolean, target.zone nested string) must repeat each argument that has a
// value in its Mcp-Param-<Name> header, plain or =?base64?...?=; a missing,
// undecodable or different header is 400 with JSON-RPC -32020 naming it.
// Raw node:http requests, so every header is under the test's control.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { ACCEPT_BOTH, RawSession, request } from './lib/http.mjs';
import { startServer } from './lib/server.mjs';

const TOOL = 'test_custom_header';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const HDRS = (extra = {}) => ({
	'content-type': 'application/json',
	accept: ACCEPT_BOTH,
	'mcp-protocol-version': '2026-07-28',
	'mcp-method': 'tools/call',
	'mcp-name': TOOL,
	...extra,
});
const b64 = (s) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;

describe('x-mcp-header parameters (2026-07-28 Mcp-Param-* headers)', () => {
	let srv;
	let nextId = 1;
	before(async () => {
		srv = await startServer({ name: 'mcp-headers' });
	});
	beforeEach(() => srv?.assertAlive());
	after(async () => {
		if (srv) await srv.kill();
	});

	async function call(args, headers, name = TOOL) {
		const id = nextId++;
		const r = await request(srv.mcpUrl, {
			method: 'POST',
			headers: HDRS({ 'mcp-name': name, ...headers }),
			body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: META } }),
		});
		return { ...r, id };
	}

	// The call reached the tool: 200, a result, the echoed arguments.
	function assertAccepted(r, args, what) {
		assert.equal(r.status, 200, `${what}: HTTP ${r.status} ${r.text}`);
		assert.equal(r.json?.error, undefined, `${what}: ${r.text}`);
		assert.equal(r.json.id, r.id);
		assert.equal(r.json.result.resultType, 'complete', `${what}: ${r.text}`);
		assert.notEqual(r.json.result.isError, true, `${what}: ${r.text}`);
		const text = r.json.result.content[0].text;
		assert.ok(text.startsWith('test_custom_header called with: '), text);
		assert.deepEqual(JSON.parse(text.slice(text.indexOf('{'))), args, what);
	}

	// 400, -32020, the request's id, a message naming the header.
	function assertRejected(r, header, what) {
		assert.equal(r.status, 400, `${what}: HTTP ${r.status} ${r.text}`);
		assert.equal(r.json?.error?.code, -32020, `${what}: ${r.text}`);
		assert.equal(r.json.id, r.id, `${what}: the error must echo the request id`);
		assert.ok(r.json.error.message.includes(header), `${what}: message does not name ${header}: ${r.json.error.message}`);
		assert.equal(r.json.result, undefined);
	}

	test('tools/list shows the annotations as written', async () => {
		const r = await request(srv.mcpUrl, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
			body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'tools/list', params: { _meta: META } }),
		});
		assert.equal(r.status, 200, r.text);
		const tool = r.json.result.tools.find((t) => t.name === TOOL);
		assert.ok(tool, 'test_custom_header is not listed');
		const p = tool.inputSchema.properties;
		assert.equal(p.region['x-mcp-header'], 'Region');
		assert.equal(p.count['x-mcp-header'], 'Count');
		assert.equal(p.verbose['x-mcp-header'], 'Verbose');
		assert.equal(p.target.properties.zone['x-mcp-header'], 'Zone');
	});

	test('matching headers are accepted: plain, base64, any header-name case, trimmed', async () => {
		const cases = [
			['plain string', { region: 'us-west1' }, { 'mcp-param-region': 'us-west1' }],
			['header name in upper case', { region: 'us-west1' }, { 'MCP-PARAM-REGION': 'us-west1' }],
			['optional whitespace around the value', { region: 'us-west1' }, { 'mcp-param-region': '  us-west1\t' }],
			['non-ASCII value in base64', { region: 'Hello, 世界' }, { 'mcp-param-region': b64('Hello, 世界') }],
			['leading space in base64', { region: ' padded ' }, { 'mcp-param-region': b64(' padded ') }],
			['sentinel-looking value in base64', { region: '=?base64?literal?=' }, { 'mcp-param-region': b64('=?base64?literal?=') }],
			['base64-looking literal', { region: 'SGVsbG8=' }, { 'mcp-param-region': 'SGVsbG8=' }],
			['prefix without suffix is literal', { region: '=?base64?SGVsbG8=' }, { 'mcp-param-region': '=?base64?SGVsbG8=' }],
			['empty string in base64', { region: '' }, { 'mcp-param-region': '=?base64??=' }],
			['integer', { region: 'r', count: 42 }, { 'mcp-param-region': 'r', 'mcp-param-count': '42' }],
			['integer compared numerically', { region: 'r', count: 42 }, { 'mcp-param-region': 'r', 'mcp-param-count': '42.0' }],
			['negative integer in base64', { region: 'r', count: -7 }, { 'mcp-param-region': 'r', 'mcp-param-count': b64('-7') }],
			['boolean true', { region: 'r', verbose: true }, { 'mcp-param-region': 'r', 'mcp-param-verbose': 'true' }],
			['boolean false', { region: 'r', verbose: false }, { 'mcp-param-region': 'r', 'mcp-param-verbose': 'false' }],
			['nested property', { region: 'r', target: { zone: 'eu-1' } }, { 'mcp-param-region': 'r', 'mcp-param-zone': 'eu-1' }],
			['object without the nested value', { region: 'r', target: {} }, { 'mcp-param-region': 'r' }],
			['argument not mirrored', { region: 'r', note: 'free text' }, { 'mcp-param-region': 'r' }],
			['valid header for an absent argument', { region: 'r' }, { 'mcp-param-region': 'r', 'mcp-param-count': '5' }],
		];
		for (const [what, args, headers] of cases) assertAccepted(await call(args, headers), args, what);
	});

	test('a null argument expects no header; validation then speaks for the schema', async () => {
		const r = await call({ region: 'r', count: null }, { 'mcp-param-region': 'r' });
		assert.equal(r.status, 200, r.text);
		assert.equal(r.json.error, undefined, r.text);
		assert.equal(r.json.result.isError, true, r.text);
		assert.match(r.json.result.content[0].text, /count: expected an integer, got null/);
	});

	test('missing, different or undecodable headers are 400 -32020 naming the header', async () => {
		const cases = [
			['value in the body, header omitted', { region: 'us-west1' }, {}, 'Mcp-Param-Region'],
			['another value', { region: 'us-west1' }, { 'mcp-param-region': 'us-east1' }, 'Mcp-Param-Region'],
			['values are case-sensitive', { region: 'us-west1' }, { 'mcp-param-region': 'US-WEST1' }, 'Mcp-Param-Region'],
			['base64 without padding', { region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }, 'Mcp-Param-Region'],
			['character outside the base64 alphabet', { region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVs!!!bG8=?=' }, 'Mcp-Param-Region'],
			['non-canonical base64 (stray bits)', { region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG9=?=' }, 'Mcp-Param-Region'],
			['base64 url alphabet', { region: '??>' }, { 'mcp-param-region': '=?base64?Pz8-?=' }, 'Mcp-Param-Region'],
			['raw non-ASCII byte', { region: 'café' }, { 'mcp-param-region': 'caf\u00e9' }, 'Mcp-Param-Region'],
			['base64 of another value', { region: 'Hello' }, { 'mcp-param-region': b64('Hellp') }, 'Mcp-Param-Region'],
			['integer differs', { region: 'r', count: 42 }, { 'mcp-param-region': 'r', 'mcp-param-count': '43' }, 'Mcp-Param-Count'],
			['integer in hex', { region: 'r', count: 42 }, { 'mcp-param-region': 'r', 'mcp-param-count': '0x2A' }, 'Mcp-Param-Count'],
			['integer header omitted', { region: 'r', count: 0 }, { 'mcp-param-region': 'r' }, 'Mcp-Param-Count'],
			['boolean as 1', { region: 'r', verbose: true }, { 'mcp-param-region': 'r', 'mcp-param-verbose': '1' }, 'Mcp-Param-Verbose'],
			['boolean capitalised', { region: 'r', verbose: false }, { 'mcp-param-region': 'r', 'mcp-param-verbose': 'False' }, 'Mcp-Param-Verbose'],
			['boolean header omitted', { region: 'r', verbose: false }, { 'mcp-param-region': 'r' }, 'Mcp-Param-Verbose'],
			['nested value differs', { region: 'r', target: { zone: 'eu-1' } }, { 'mcp-param-region': 'r', 'mcp-param-zone': 'eu-2' }, 'Mcp-Param-Zone'],
			['nested header omitted', { region: 'r', target: { zone: 'eu-1' } }, { 'mcp-param-region': 'r' }, 'Mcp-Param-Zone'],
			['a string where the schema says integer', { region: 'r', count: '42' }, { 'mcp-param-region': 'r', 'mcp-param-count': '42' }, 'Mcp-Param-Count'],
			['undecodable header for an absent argument', { region: 'r' }, { 'mcp-param-region': 'r', 'mcp-param-count': '=?base64?!!?=' }, 'Mcp-Param-Count'],
		];
		for (const [what, args, headers, header] of cases) assertRejected(await call(args, headers), header, what);
		const missing = await call({ region: 'us-west1' }, {});
		assert.match(missing.json.error.message, /Mcp-Param-Region header is missing: params\.arguments\.region has a value/);
		const nested = await call({ region: 'r', target: { zone: 'a' } }, { 'mcp-param-region': 'r', 'mcp-param-zone': 'b' });
		assert.match(nested.json.error.message, /Mcp-Param-Zone header does not match params\.arguments\.target\.zone/);
	});

	test('headers are checked before the call runs, and only for tools that declare them', async () => {
		const bad = await call({ region: 'x' }, { 'mcp-param-region': 'y' });
		assertRejected(bad, 'Mcp-Param-Region', 'mismatch');
		// a tool without annotations ignores Mcp-Param-* headers
		const r = await call({}, { 'mcp-param-region': 'anything' }, 'test_simple_text');
		assert.equal(r.status, 200, r.text);
		assert.equal(r.json.result.content[0].type, 'text');
		// an unknown tool is still dispatch's -32602, not a header error
		const unknown = await call({ region: 'r' }, {}, 'no_such_tool');
		assert.equal(unknown.json.error.code, -32602, unknown.text);
	});

	test('sessions of the 2025 revisions send no Mcp-Param-* headers', async () => {
		const s = new RawSession(srv.mcpUrl);
		await s.initialize('2025-11-25');
		const r = (await s.call('tools/call', { name: TOOL, arguments: { region: 'us-west1', count: 3 } })).response;
		assert.equal(r.error, undefined, JSON.stringify(r));
		assert.match(r.result.content[0].text, /"count":3,"region":"us-west1"/);
	});
});

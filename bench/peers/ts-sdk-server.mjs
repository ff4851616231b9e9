// ts-sdk-server.mjs - the benchmark's reference peer: an MCP server built on
// the official TypeScript SDK (Streamable HTTP, stateful, JSON responses)
// that offers the same tool definitions as Sextant's conformance set.
//
// Usage: node bench/peers/ts-sdk-server.mjs [--port N] [--tools DIR]
//                                           [--patch-stream-leak]
//   --port   loopback port, 0 (default) = any free port
//   --tools  directory of tool definition JSON files
//            (default server/conformance, relative to the repo root)
//   --patch-stream-leak
//            work around typescript-sdk issue #2559 (see pruneStreams)
// Prints "listening 127.0.0.1:PORT" once it accepts connections.
//
// The SDK is resolved from test/integration/node_modules (pinned there by
// package-lock.json), so this file needs no node_modules of its own.
//
// Tools are registered through the low-level Server class: McpServer's
// registerTool() wants zod schemas, and converting JSON Schema to zod and
// back would not give the same bytes.  tools/list returns the definitions
// as read from disk (MCP Tool fields only), which is the fair comparison.

import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SDK = join(ROOT, 'test/integration/node_modules/@modelcontextprotocol/sdk/dist/esm');
const sdk = (p) => import(pathToFileURL(join(SDK, p)).href);

const { Server } = await sdk('server/index.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const { ListToolsRequestSchema, CallToolRequestSchema, isInitializeRequest } =
	await sdk('types.js');

// Same cap as Sextant's default server.max_body_bytes.
const MAX_BODY_BYTES = 4 * 1024 * 1024;
// The fields of MCP's Tool type; anything else in a definition file is
// Sextant's own metadata and not part of what a client sees.
const TOOL_FIELDS = ['name', 'title', 'description', 'inputSchema', 'outputSchema',
	'annotations', 'icons', 'execution', '_meta'];

function parseArgs(argv) {
	const opts = { port: 0, tools: join(ROOT, 'server/conformance'), patch: false };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const v = argv[i + 1];
		if (a === '--port' && v !== undefined) {
			const n = Number(v);
			if (!Number.isInteger(n) || n < 0 || n > 65535)
				die(`--port: expected an integer between 0 and 65535, got "${v}"`);
			opts.port = n;
			i++;
		} else if (a === '--patch-stream-leak') {
			opts.patch = true;
		} else if (a === '--tools' && v !== undefined) {
			opts.tools = resolve(v);
			i++;
		} else {
			die(`unknown argument "${a}": expected --port N, --tools DIR or --patch-stream-leak`);
		}
	}
	return opts;
}

function die(msg) {
	process.stderr.write(`ts-sdk-server: ${msg}\n`);
	process.exit(2);
}

// Reads every *.json in dir, sorted by file name (the order Sextant's
// Makefile embeds them in), keeping the MCP Tool fields.
function loadTools(dir) {
	let files;
	try {
		files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
	} catch (e) {
		die(`cannot read tool directory ${dir}: ${e.message}`);
	}
	if (files.length === 0)
		die(`no tool definitions (*.json) in ${dir}: expected Sextant's conformance set`);
	return files.map((f) => {
		let def;
		try {
			def = JSON.parse(readFileSync(join(dir, f), 'utf8'));
		} catch (e) {
			die(`${join(dir, f)}: not valid JSON: ${e.message}`);
		}
		if (typeof def.name !== 'string' || typeof def.inputSchema !== 'object')
			die(`${join(dir, f)}: expected an object with "name" and "inputSchema"`);
		const tool = {};
		for (const k of TOOL_FIELDS)
			if (def[k] !== undefined) tool[k] = def[k];
		return tool;
	});
}

function newMcpServer(tools) {
	const server = new Server(
		{ name: 'ts-sdk-peer', version: '1.0.0' },
		{ capabilities: { tools: {} } },
	);
	server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
	server.setRequestHandler(CallToolRequestSchema, async (req) => ({
		content: [{ type: 'text', text: `the benchmark peer does not run tools (${req.params.name})` }],
		isError: true,
	}));
	return server;
}

function readBody(req) {
	return new Promise((ok, fail) => {
		const chunks = [];
		let size = 0;
		req.on('data', (c) => {
			size += c.length;
			if (size > MAX_BODY_BYTES) {
				fail(new Error('body too large'));
				req.destroy();
				return;
			}
			chunks.push(c);
		});
		req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
		req.on('error', fail);
	});
}

function jsonError(res, status, code, message) {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

// SDK 1.32.2 in JSON response mode never deletes a POST's _streamMapping
// entry (typescript-sdk issue #2559, fixed on main, open on v1.x): a
// session keeps every request it ever answered, about 4 KB each, until it
// is closed, and the growing heap costs GC time.  Once a response is sent,
// the entries no pending request id points at are stale; this drops them.
// Private fields: checked at start-up so an SDK upgrade fails loudly.
function pruneStreams(t) {
	const w = t._webStandardTransport;
	const live = new Set(w._requestToStreamMapping.values());
	for (const [id, s] of w._streamMapping)
		if (s.resolveJson && !live.has(id)) w._streamMapping.delete(id);
}

function checkPatchable() {
	const w = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
		._webStandardTransport;
	if (!(w?._streamMapping instanceof Map) || !(w?._requestToStreamMapping instanceof Map))
		die('--patch-stream-leak: this SDK version has no _streamMapping: drop the option');
}

const opts = parseArgs(process.argv.slice(2));
const tools = loadTools(opts.tools);
if (opts.patch) checkPatchable();
const transports = new Map(); // Mcp-Session-Id -> transport

// The session routing of the SDK's own stateful example
// (simpleStreamableHttp.ts), on node:http instead of express.
async function handle(req, res) {
	const url = new URL(req.url, 'http://localhost');
	if (url.pathname !== '/mcp') {
		res.writeHead(404).end();
		return;
	}
	const sid = req.headers['mcp-session-id'];
	if (req.method !== 'POST') {
		const t = sid && transports.get(sid);
		if (!t) {
			jsonError(res, 400, -32000, 'bad request: no valid session id');
			return;
		}
		await t.handleRequest(req, res);
		return;
	}
	let body;
	try {
		body = JSON.parse(await readBody(req));
	} catch (e) {
		jsonError(res, 400, -32700, `parse error: ${e.message}`);
		return;
	}
	let t = sid && transports.get(sid);
	if (!t) {
		if (sid || !isInitializeRequest(body)) {
			jsonError(res, sid ? 404 : 400, -32000,
				sid ? 'session not found' : 'bad request: no valid session id');
			return;
		}
		t = new StreamableHTTPServerTransport({
			sessionIdGenerator: () => randomUUID(),
			enableJsonResponse: true,
			onsessioninitialized: (id) => transports.set(id, t),
		});
		t.onclose = () => {
			if (t.sessionId) transports.delete(t.sessionId);
		};
		await newMcpServer(tools).connect(t);
	}
	await t.handleRequest(req, res, body);
	if (opts.patch) pruneStreams(t);
}

const http = createServer((req, res) => {
	handle(req, res).catch((e) => {
		process.stderr.write(`ts-sdk-server: ${e.stack || e}\n`);
		if (!res.headersSent) jsonError(res, 500, -32603, 'internal error');
		else res.end();
	});
});
http.keepAliveTimeout = 65000;
http.listen(opts.port, '127.0.0.1', () => {
	process.stdout.write(`listening 127.0.0.1:${http.address().port}\n`);
});
for (const sig of ['SIGINT', 'SIGTERM'])
	process.on(sig, () => process.exit(0));

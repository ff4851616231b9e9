// budget.test.mjs - the token budget of the tool definitions (issue 19):
// with the default configuration (every set but "conformance", no metrics
// instance), what the model reads per tool (name, title, description,
// inputSchema), counted with o200k_base, is at most DEF_TOKENS in all, and
// the whole tools/list answer at most LIST_BYTES.  Prints the per-tool
// table, and the bytes with a metrics instance too (not bounded: the budget
// is the default set's).  Also: query_grafana_metrics is listed only with an
// instance, and sextant://docs/definitions, which the short descriptions
// name, is served.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { RawSession } from './lib/http.mjs';
import { CONFORMANCE_CONFIG, startServer } from './lib/server.mjs';
import { definitionTable, definitionTokens } from './lib/tokens.mjs';
import { connect, TOOL_ENV } from './lib/tooltest.mjs';

const DEF_TOKENS = 4000;
const LIST_BYTES = 24 * 1024;
const DEFS_URI = 'sextant://docs/definitions';

let srv, mcp;

before(async () => {
	srv = await startServer({ name: 'budget', env: TOOL_ENV });
	mcp = await connect(srv, 'budget');
});

after(async () => {
	await mcp?.client.close().catch(() => {});
	if (srv) await srv.stop();
});

// The bytes of every tools/list page as they go on the wire.
async function listBytes(server) {
	const raw = new RawSession(server.mcpUrl);
	await raw.initialize();
	let bytes = 0;
	let cursor;
	do {
		const r = await raw.call('tools/list', cursor ? { cursor } : {});
		assert.equal(r.status, 200);
		bytes += Buffer.byteLength(r.text ?? JSON.stringify(r.response));
		cursor = r.response.result.nextCursor;
	} while (cursor);
	await raw.delete();
	return bytes;
}

test('the default tool set reads in at most 4,000 tokens and lists in at most 24 KB', async () => {
	const rows = definitionTokens(mcp.tools);
	console.log(definitionTable(rows));
	const total = rows.reduce((a, r) => a + r.tokens, 0);
	assert.ok(rows.length >= 10, `expected the default tool set, got ${rows.length} tools`);
	assert.ok(total <= DEF_TOKENS, `definitions read ${total} tokens (o200k_base), budget ${DEF_TOKENS}`);

	const bytes = await listBytes(srv);
	console.log(`tools/list: ${bytes} bytes, ${total} tokens read for ${rows.length} tools`);
	assert.ok(bytes <= LIST_BYTES, `tools/list is ${bytes} bytes, budget ${LIST_BYTES}`);
});

test('plumbing tools say "Advanced:" and the definitions live in one resource the descriptions name', async () => {
	for (const t of mcp.tools)
		if (/^query_(ebpf|telemetry)_/.test(t.name)) assert.match(t.description, /^Advanced:/, t.name);
	const naming = mcp.tools.filter((t) => t.description.includes(DEFS_URI)).map((t) => t.name);
	assert.ok(naming.includes('query_metrics') && naming.includes('analyze_genai'), `tools naming ${DEFS_URI}: ${naming}`);
	const { resources } = await mcp.client.listResources();
	assert.ok(resources.some((r) => r.uri === DEFS_URI), `${DEFS_URI} not in resources/list`);
	const read = await mcp.client.readResource({ uri: DEFS_URI });
	const text = read.contents[0].text;
	for (const term of ['Error rate', 'Percentiles', 'Rollups', 'eBPF', 'GenAI'])
		assert.match(text, new RegExp(`^#+ ${term}`, 'm'), `${DEFS_URI} lacks a "${term}" section`);
});

test('query_grafana_metrics is listed only when a metrics instance is configured', async () => {
	assert.ok(!mcp.byName.has('query_grafana_metrics'), 'listed without any [grafana.*]/[prometheus.*]');
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-budget-'));
	const config = path.join(tmp, 'sextant.toml');
	// an instance nobody answers: listing needs no upstream
	fs.writeFileSync(config, `${fs.readFileSync(CONFORMANCE_CONFIG, 'utf8')}\n[prometheus.local]\nurl = "http://127.0.0.1:9"\n`);
	const withProm = await startServer({ name: 'budget-prom', config, env: TOOL_ENV });
	try {
		const other = await connect(withProm, 'budget-prom');
		assert.ok(other.byName.has('query_grafana_metrics'), 'not listed with [prometheus.local]');
		console.log(`tools/list with query_grafana_metrics: ${await listBytes(withProm)} bytes for ${other.tools.length} tools`);
		await other.client.close();
	} finally {
		await withProm.stop();
		fs.rmSync(tmp, { recursive: true, force: true });
	}
});

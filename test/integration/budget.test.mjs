// budget.test.mjs - the token budget of the tool definitions (issue 19):
// with the default configuration (every set but "conformance", no metrics
// instance), what the model reads per tool (name, title, description,
// inputSchema), counted with o200k_base, is at most DEF_TOKENS in all, and
// the whole tools/list answer at most LIST_BYTES.  Prints the per-tool
// table, and the bytes with a metrics instance too (not bounded: the budget
// is the default set's).  Also: query_grafana_metrics is listed only with an
// instance, and sextant://docs/definitions, which the short descriptions
// name, is served.
// And the answers' budget: on the demo dataset each heavy tool's default
// answer reads at most ANSWER_TOKENS (text and structuredContent) within
// [tools] max_answer_bytes, 100 traces over 24 h stay within it with the
// exact count shown, and a small max_answer_bytes holds every answer.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { RawSession } from './lib/http.mjs';
import { startPostgres } from './lib/pg.mjs';
import { CONFORMANCE_CONFIG, runSextant, startServer } from './lib/server.mjs';
import { answerCost, definitionTable, definitionTokens, heavyAnswers } from './lib/tokens.mjs';
import { connect, TOOL_ENV } from './lib/tooltest.mjs';

const DEF_TOKENS = 4000;
const LIST_BYTES = 24 * 1024;
const DEFS_URI = 'sextant://docs/definitions';
// issue 19: a heavy tool's default answer, text and structuredContent
const ANSWER_TOKENS = 8000;
// [tools] max_answer_bytes by default, and a small one
const ANSWER_BYTES = 32768;
const SMALL_BYTES = 8192;
// demo spans for the answers: a day of every demo service, quick to load
const DEMO_SPANS = '20000';

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

describe('answers on the demo dataset', () => {
	let pg, demo, small;
	const stops = [];

	before(async () => {
		pg = await startPostgres({ name: 'budget-demo' });
		stops.push(() => pg.stop());
		const load = runSextant(['demo-data', '--spans', DEMO_SPANS], { env: { DATABASE_URL: pg.url }, timeoutMs: 120000 });
		assert.equal(load.code, 0, `demo-data failed: ${load.stderr}`);
		const env = { ...TOOL_ENV, DATABASE_URL: pg.url };
		const a = await startServer({ name: 'budget-demo', env });
		stops.unshift(() => a.stop());
		demo = await connect(a, 'budget-demo');
		stops.unshift(() => demo.client.close());
		// the least text budget a small answer budget allows
		const b = await startServer({ name: 'budget-small', env: { ...env, SEXTANT_TOOLS_MAX_ANSWER_BYTES: String(SMALL_BYTES), SEXTANT_TOOLS_MAX_ANSWER_CHARS: '4000' } });
		stops.unshift(() => b.stop());
		small = await connect(b, 'budget-small');
		stops.unshift(() => small.client.close());
	});

	after(async () => {
		for (const stop of stops) await stop().catch(() => {});
	});

	test(`each heavy tool's default answer reads at most ${ANSWER_TOKENS} tokens within ${ANSWER_BYTES} bytes`, async () => {
		const answers = await heavyAnswers(demo.client);
		assert.deepEqual(
			answers.map((a) => a.name),
			['list_services', 'query_metrics', 'query_traces', 'get_trace', 'query_spans', 'analyze_genai', 'get_session', 'get_mesh_graph'],
			'the demo dataset has a trace and a GenAI session to ask for',
		);
		for (const { name, args, r } of answers) {
			const c = answerCost(r);
			console.log(`${name} ${JSON.stringify(args)}: ${c.textTokens} + ${c.scTokens} tokens, ${c.bytes} bytes`);
			assert.notEqual(r.isError, true, `${name}: ${c.text.slice(0, 500)}`);
			assert.ok(c.textTokens + c.scTokens <= ANSWER_TOKENS, `${name}: ${c.textTokens} text + ${c.scTokens} structured tokens, budget ${ANSWER_TOKENS}`);
			assert.ok(c.bytes <= ANSWER_BYTES, `${name}: ${c.bytes} bytes, budget ${ANSWER_BYTES}`);
		}
	});

	test('100 traces over 24 h: within max_answer_bytes, the text says exactly how many are shown and how many more', async () => {
		const args = { service: 'api-gateway', time_range: '24h', max_traces: 100 };
		const r = await demo.client.callTool({ name: 'query_traces', arguments: args }, undefined, { timeout: 60000 });
		const { text, bytes } = answerCost(r);
		const sc = r.structuredContent;
		assert.ok(bytes <= ANSWER_BYTES, `${bytes} bytes, budget ${ANSWER_BYTES}`);
		const headers = text.split('\n').filter((l) => /^Trace [0-9a-f]{32} \(/.test(l)).length;
		assert.equal(headers, sc.traces.length, 'a tree in the text per trace in structuredContent');
		// the demo day has more than 100 api-gateway traces: 100 are read
		const cut = /^(\d+) traces? shown, (\d+) more read and more match \(the answer is full\)/m.exec(text);
		const all = /^More traces match than the (\d+) shown/m.exec(text);
		assert.ok(cut || all, `no count of the traces shown: ${text.slice(-800)}`);
		if (cut) {
			assert.equal(Number(cut[1]), sc.traces.length, cut[0]);
			assert.equal(Number(cut[1]) + Number(cut[2]), 100, cut[0]);
		} else assert.equal(Number(all[1]), sc.traces.length, all[0]);
		assert.equal(sc.more_traces, true);
		assert.doesNotMatch(text, /the 100 shown/, 'not every trace read is shown');
	});

	test(`max_answer_bytes ${SMALL_BYTES}: every heavy answer within it, what was left out said in counts`, async () => {
		const answers = await heavyAnswers(small.client);
		assert.equal(answers.length, 8);
		let cut = 0;
		for (const { name, r } of answers) {
			const c = answerCost(r);
			assert.notEqual(r.isError, true, `${name}: ${c.text.slice(0, 500)}`);
			assert.ok(c.bytes <= SMALL_BYTES, `${name}: ${c.bytes} bytes, budget ${SMALL_BYTES}`);
			const note = /\(structured content: (.*?): .*a whole answer is at most (\d+) bytes, tools\.max_answer_bytes\)/.exec(c.text);
			if (!note) continue;
			cut++;
			assert.equal(Number(note[2]), SMALL_BYTES);
			// "N <rows> shown, M more" per list cut, as the lists hold them
			for (const m of note[1].matchAll(/(\d+) ([a-z ]+?) shown, (\d+) more/g)) assert.ok(Number(m[3]) > 0, `${name}: ${m[0]}`);
		}
		// analyze_genai's lists do not fit 8 KB on the demo day
		assert.ok(cut > 0, 'no answer was cut to the small budget');
	});
});

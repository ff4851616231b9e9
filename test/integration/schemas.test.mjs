// schemas.test.mjs - the output schemas (issue 19): every default tool,
// called on the demo dataset, answers structuredContent that its
// outputSchema from tools/list accepts under JSON Schema 2020-12 (Ajv 2020,
// which the SDK ships; the SDK client checks each answer too), and the
// arrays that hold the tool's rows have row schemas (field names and types,
// reached through "#/$defs/..."), so a row with a field of the wrong type is
// refused.  Every "$ref" resolves inside its own outputSchema, whose $defs
// hold only the entries referenced; scripts/gen-tooldefs.sh, which copies
// them from server/tools/defs.json, refuses a reference to no entry.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020.js';

import { startPostgres } from './lib/pg.mjs';
import { ROOT, runSextant, startServer } from './lib/server.mjs';
import { callTool, connect, EBPF_ENV, TOOL_ENV } from './lib/tooltest.mjs';

const GEN = path.join(ROOT, 'scripts/gen-tooldefs.sh');
// enough for every row kind below, loaded in a few seconds under ASan
const DEMO_SPANS = '20000';

// Each default tool's calls, and the arrays of each answer that hold rows
// and must have a row schema (non-empty in that answer, so the check
// bites).  Functions take the answers so far.
const CALLS = [
	{ tool: 'get_server_status', args: {}, rows: [] },
	{ tool: 'list_services', args: { time_range: '1d' }, rows: ['services'] },
	{ tool: 'query_metrics', args: { service: 'inventory', time_range: '1d' }, rows: ['http', 'grpc', 'sql'] },
	{ tool: 'query_ebpf_http_metrics', args: { service: 'inventory', time_range: '1d' }, rows: ['http'] },
	{ tool: 'query_ebpf_grpc_metrics', args: { service: 'inventory', time_range: '1d' }, rows: ['grpc'] },
	{ tool: 'query_ebpf_sql_metrics', args: { service: 'inventory', time_range: '1d' }, rows: ['sql'] },
	{ tool: 'query_traces', args: { time_range: '1d' }, rows: ['traces'] },
	{ tool: 'query_ebpf_traces', args: { time_range: '1d' }, rows: ['traces'] },
	{ tool: 'query_spans', args: { time_range: '1d' }, rows: ['spans'] },
	{ tool: 'query_telemetry_spans', args: { time_range: '1d', limit: 20 }, rows: ['spans'] },
	{ tool: 'query_telemetry_metrics', args: { time_range: '1d' }, rows: ['metrics'] },
	{
		tool: 'query_telemetry_metrics',
		args: (a) => ({ name: a.query_telemetry_metrics.metrics[0].name, time_range: '1d' }),
		rows: ['series'],
	},
	{ tool: 'get_trace', args: (a) => ({ trace_id: a.query_traces.traces[0].trace_id }), rows: ['lines'] },
	{ tool: 'analyze_genai', args: { time_range: '1d' }, rows: ['by_model', 'by_service', 'top_sessions'] },
	{
		tool: 'get_session',
		args: (a) => ({ session_id: a.analyze_genai.top_sessions[0].session_id, time_range: '1d' }),
		rows: ['slowest_calls', 'most_expensive_calls'],
	},
	{
		tool: 'compare_sessions',
		args: (a) => ({
			session_id_1: a.analyze_genai.top_sessions[0].session_id,
			session_id_2: a.analyze_genai.top_sessions[1].session_id,
			time_range: '1d',
		}),
		rows: ['metrics'],
	},
	{ tool: 'get_mesh_graph', args: { rateInterval: '1d' }, rows: ['nodes', 'traffic'] },
	{ tool: 'get_resource_detail', args: { resource_type: 'service', rateInterval: '1d' }, rows: ['resources'] },
	{ tool: 'get_traces', args: { service_name: 'checkout', lookback_seconds: 86400 }, rows: ['traces'] },
];

let pg, srv, mcp;

before(async () => {
	pg = await startPostgres({ name: 'schemas' });
	srv = await startServer({ name: 'schemas', env: { DATABASE_URL: pg.url, ...TOOL_ENV, ...EBPF_ENV } });
	const demo = runSextant(['demo-data', '--spans', DEMO_SPANS], { env: { DATABASE_URL: pg.url }, timeoutMs: 60000 });
	assert.equal(demo.code, 0, `sextant demo-data failed:\n${demo.stderr}`);
	mcp = await connect(srv, 'schemas');
});

after(async () => {
	await mcp?.client.close().catch(() => {});
	if (srv) await srv.stop();
	if (pg) await pg.stop();
});

// The schema a "$ref" (a "#/..." pointer) names inside root.
function deref(root, schema) {
	const seen = new Set();
	while (schema?.$ref !== undefined) {
		assert.match(schema.$ref, /^#\/\$defs\/[A-Za-z0-9_]+$/, `"$ref": "${schema.$ref}"`);
		assert.ok(!seen.has(schema.$ref), `"$ref" loop at ${schema.$ref}`);
		seen.add(schema.$ref);
		const target = root.$defs?.[schema.$ref.slice('#/$defs/'.length)];
		assert.ok(target, `"$ref": "${schema.$ref}" names no entry of $defs`);
		// 2020-12: the keywords beside a "$ref" apply too
		const { $ref, ...beside } = schema;
		schema = { ...target, ...beside, properties: { ...target.properties, ...beside.properties } };
		if (target.$ref !== undefined) schema.$ref = target.$ref;
		else delete schema.$ref;
	}
	return schema;
}

// Every "$ref" anywhere in x.
function refs(x, out = []) {
	if (Array.isArray(x)) for (const v of x) refs(v, out);
	else if (x && typeof x === 'object')
		for (const [k, v] of Object.entries(x)) {
			if (k === '$ref') out.push(v);
			else refs(v, out);
		}
	return out;
}

// A value of another JSON type than the schema's "type" (or enum) allows.
function wrongFor(schema) {
	const types = [schema.type ?? []].flat();
	if (schema.enum) return 12345;
	if (types.includes('string')) return 12345;
	return 'not a number';
}

test('every default tool answers structuredContent its outputSchema accepts (Ajv 2020), with row schemas for its rows', async () => {
	const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true });
	const answers = {};
	const called = new Set();
	for (const c of CALLS) {
		const tool = mcp.byName.get(c.tool);
		assert.ok(tool, `${c.tool} not listed`);
		assert.ok(tool.outputSchema, `${c.tool}: no outputSchema`);
		const args = typeof c.args === 'function' ? c.args(answers) : c.args;
		const { sc } = await callTool(mcp, c.tool, args, { budget: Infinity });
		answers[c.tool] = sc;
		called.add(c.tool);
		const schema = tool.outputSchema;
		const validate = ajv.compile(schema);
		assert.ok(validate(sc), `${c.tool}(${JSON.stringify(args)}): ${ajv.errorsText(validate.errors)}`);

		for (const key of c.rows) {
			const what = `${c.tool}.${key}`;
			const rows = sc[key];
			assert.ok(Array.isArray(rows) && rows.length > 0, `${what}: expected rows in the demo answer, got ${JSON.stringify(rows)}`);
			const prop = schema.properties?.[key];
			assert.equal(prop?.type, 'array', `${what}: not an array in the schema`);
			const row = deref(schema, prop.items ?? {});
			const names = Object.keys(row.properties ?? {});
			assert.ok(names.length >= 2, `${what}: the row schema names ${names.length} fields: ${JSON.stringify(prop)}`);
			assert.ok((row.required ?? []).length > 0, `${what}: the row schema requires no field`);
			// every field it names is one the rows have (a misspelt
			// optional field would otherwise pass unseen)
			for (const n of names) assert.ok(rows.some((r) => n in r), `${what}: no row has "${n}", which the row schema names`);
			// and it is checked: a row whose field has another type is refused
			for (const n of names) {
				const bad = structuredClone(sc);
				const r = bad[key].find((x) => n in x);
				r[n] = wrongFor(deref(schema, row.properties[n]));
				assert.ok(!validate(bad), `${what}: a row with ${n}: ${JSON.stringify(r[n])} is accepted`);
			}
		}
	}
	const listed = mcp.tools.map((t) => t.name).sort();
	assert.deepEqual([...called].sort(), listed, 'every default tool is called once');
});

test('every "$ref" resolves inside its own outputSchema, whose $defs hold only what is referenced', () => {
	let withDefs = 0;
	for (const t of mcp.tools) {
		const schema = t.outputSchema;
		if (!schema) continue;
		const named = new Set();
		const pending = refs({ ...schema, $defs: undefined });
		while (pending.length > 0) {
			const r = pending.pop();
			const name = r.replace(/^#\/\$defs\//, '');
			assert.notEqual(name, r, `${t.name}: "$ref": "${r}" is not "#/$defs/<name>"`);
			assert.ok(schema.$defs?.[name], `${t.name}: "$ref": "${r}" is dangling`);
			if (!named.has(name)) pending.push(...refs(schema.$defs[name]));
			named.add(name);
		}
		assert.deepEqual(Object.keys(schema.$defs ?? {}).sort(), [...named].sort(), `${t.name}: $defs`);
		if (named.size > 0) withDefs++;
	}
	// the metrics row, the trace and the GenAI shapes are shared
	assert.ok(withDefs >= 8, `${withDefs} tools use $defs`);
});

// gen-tooldefs.sh DEFS TOOL... on files written here: {status, stdout,
// stderr, tools: path -> parsed definition}.
function gen(dir, defs, tools) {
	fs.writeFileSync(path.join(dir, 'defs.json'), `${JSON.stringify(defs, null, 2)}\n`);
	const files = [];
	for (const [name, def] of Object.entries(tools)) {
		const f = path.join(dir, `${name}.json`);
		fs.writeFileSync(f, `${JSON.stringify(def, null, 2)}\n`);
		files.push(f);
	}
	const r = spawnSync('sh', [GEN, path.join(dir, 'defs.json'), ...files], { encoding: 'utf8' });
	const parsed = {};
	// the C string literals: one '\t "..."' line per line of JSON
	for (const m of r.stdout.matchAll(/\t\{"([^"]+)",\n((?:\t ".*\n)*)\t\},/g)) {
		const text = m[2]
			.split('\n')
			.filter(Boolean)
			.map((l) => l.slice(3, -1).replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c)))
			.join('');
		parsed[path.basename(m[1], '.json')] = JSON.parse(text);
	}
	return { status: r.status, stdout: r.stdout, stderr: r.stderr, tools: parsed };
}

const toolWith = (properties) => ({
	name: 't',
	description: 'd',
	inputSchema: { type: 'object' },
	outputSchema: { type: 'object', properties },
});

test('gen-tooldefs.sh copies the entries a tool references, through other entries, and refuses a dangling or foreign "$ref"', () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-gen-'));
	try {
		const defs = {
			row: { properties: { id: { type: 'string' }, kids: { type: 'array', items: { $ref: '#/$defs/kid' } } } },
			kid: { properties: { n: { type: 'integer' } } },
			other: { properties: { x: { type: 'string' } } },
		};
		let r = gen(dir, defs, {
			a: toolWith({ rows: { type: 'array', items: { $ref: '#/$defs/row' } } }),
			b: toolWith({ o: { $ref: '#/$defs/other' } }),
			c: toolWith({ plain: { type: 'string' } }),
		});
		assert.equal(r.status, 0, r.stderr);
		assert.deepEqual(r.tools.a.outputSchema.$defs, { row: defs.row, kid: defs.kid });
		assert.deepEqual(r.tools.b.outputSchema.$defs, { other: defs.other });
		assert.equal(r.tools.c.outputSchema.$defs, undefined);
		assert.deepEqual(r.tools.c, toolWith({ plain: { type: 'string' } }));

		r = gen(dir, defs, { a: toolWith({ rows: { type: 'array', items: { $ref: '#/$defs/rows' } } }) });
		assert.notEqual(r.status, 0);
		assert.match(r.stderr, /a\.json: "\$ref": "#\/\$defs\/rows": no entry "rows" in .*defs\.json: add it there/);

		r = gen(dir, { ...defs, kid: { properties: { up: { $ref: '#/$defs/parent' } } } }, { a: toolWith({ rows: { $ref: '#/$defs/row' } }), b: toolWith({ o: { $ref: '#/$defs/other' } }) });
		assert.notEqual(r.status, 0);
		assert.match(r.stderr, /entry "kid": "\$ref": "#\/\$defs\/parent": no entry "parent"/);

		r = gen(dir, defs, { a: toolWith({ rows: { $ref: 'common.json#/row' } }) });
		assert.notEqual(r.status, 0);
		assert.match(r.stderr, /"\$ref": "common\.json#\/row": an outputSchema names a shape of .* only, as "#\/\$defs\/<name>"/);

		r = gen(dir, defs, { a: { ...toolWith({ rows: { $ref: '#/$defs/row' } }), outputSchema: { type: 'object', $defs: { row: {} } } } });
		assert.notEqual(r.status, 0);
		assert.match(r.stderr, /outputSchema has "\$defs" of its own: move them to/);

		r = gen(dir, defs, { a: toolWith({ rows: { $ref: '#/$defs/row' } }) });
		assert.notEqual(r.status, 0);
		assert.match(r.stderr, /entry "other" is used by no outputSchema: remove it/);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

// openapi.test.mjs - the REST facade's OpenAPI document as `sextant openapi
// --config F` prints it, for the default tools, every tool set (with API
// keys, a metrics instance, every opt-in set and the deprecated aliases) and the
// conformance fixtures: @redocly/cli lint finds no error (its warnings are
// listed), the OpenAPI 3.1 schema accepts it, Ajv (2020-12, the validator the
// facade's tests check answers with) validates request and answer bodies
// against it, and openapi-typescript's types compile a typed openapi-fetch
// client (fixtures/openapi-client.ts) that names every route.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';

import { CONFORMANCE_CONFIG, runSextant, sanitizerReports } from './lib/server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REDOCLY = path.join(HERE, 'node_modules/@redocly/cli/bin/cli.js');
const TSC = path.join(HERE, 'node_modules/typescript/bin/tsc');
const CLIENT = path.join(HERE, 'fixtures/openapi-client.ts');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-openapi-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

const EVERY_SET = `[tools]
enabled_sets = ["core", "query", "spans", "genai", "grafana", "mesh", "ebpf", "kiali", "istio"]
deprecated_aliases = true
[auth]
keys = ["sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]
[prometheus.local]
url = "http://127.0.0.1:9090"
`;

// `sextant openapi --config` for one config: the document and its file.
function generate(name, config) {
	let file = config;
	if (!config.endsWith('.toml')) {
		file = path.join(tmp, `${name}.toml`);
		fs.writeFileSync(file, config);
	}
	const r = runSextant(['openapi', '--config', file]);
	assert.deepEqual(sanitizerReports(r.stderr), []);
	assert.equal(r.code, 0, r.stderr);
	const doc = JSON.parse(r.stdout);
	const out = path.join(tmp, `${name}.json`);
	fs.writeFileSync(out, r.stdout);
	return { doc, file: out };
}

const docs = {
	default: generate('default', ''),
	every: generate('every', EVERY_SET),
	conformance: generate('conformance', CONFORMANCE_CONFIG),
};

function run(args, opts = {}) {
	return spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60000, ...opts });
}

for (const [name, { doc, file }] of Object.entries(docs)) {
	test(`${name}: redocly lint finds no error`, { timeout: 60000 }, (t) => {
		// cwd: a redocly.yaml here would configure the rules
		const r = run([REDOCLY, 'lint', file, '--format=json'], {
			cwd: HERE,
			env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
		});
		const report = JSON.parse(r.stdout);
		for (const p of report.problems)
			t.diagnostic(`${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer ?? ''}`);
		t.diagnostic(`${report.totals.errors} errors, ${report.totals.warnings} warnings`);
		assert.equal(report.totals.errors, 0, JSON.stringify(report.problems.filter((p) => p.severity === 'error'), null, 1));
		assert.equal(r.status, 0);
	});

	test(`${name}: a valid OpenAPI 3.1 document`, { timeout: 30000 }, async () => {
		assert.equal(doc.openapi, '3.1.0');
		const v = new Validator();
		const res = await v.validate(doc);
		assert.equal(res.valid, true, JSON.stringify(res.errors, null, 1));
		assert.equal(v.version, '3.1');
	});

	test(`${name}: Ajv validates bodies against the document`, { timeout: 30000 }, () => {
		const ajv = new Ajv2020({ strict: false, allErrors: true });
		addFormats(ajv);
		ajv.addSchema(doc, 'openapi.json');
		const at = (pointer) => ajv.compile({ $ref: `openapi.json#${pointer}` });
		const esc = (p) => p.replaceAll('~', '~0').replaceAll('/', '~1');
		let posts = 0;
		for (const [p, item] of Object.entries(doc.paths)) {
			if (!p.startsWith('/api/v1/tools/')) continue;
			const tool = p.slice('/api/v1/tools/'.length);
			const media = item.post.requestBody.content['application/json'];
			const body = at(`/paths/${esc(p)}/post/requestBody/content/application~1json/schema`);
			const example = media.examples?.minimal?.value;
			if (example !== undefined) assert.equal(body(example), true, `${tool}: ${JSON.stringify(body.errors)}`);
			const input = doc.components.schemas[`${tool}.input`];
			if (input.additionalProperties === false)
				assert.equal(body({ ...example, no_such_argument: 1 }), false, tool);
			const answer = at(`/paths/${esc(p)}/post/responses/200/content/application~1json/schema`);
			assert.equal(answer({ tool: 'another_tool', data: {}, text: '' }), false, tool);
			assert.equal(answer({ tool, text: '' }), false, `${tool}: data is required`);
			posts++;
		}
		assert.ok(posts >= (name === 'conformance' ? 30 : 10), `${posts} tools`);
		const problem = at('/components/responses/BadRequest/content/application~1problem+json/schema');
		assert.equal(
			problem({
				type: 'https://sextant.dev/problems/bad-argument',
				title: 'Bad argument',
				status: 400,
				detail: 'limit: expected an integer >= 1 and <= 200, got 0',
				instance: '/api/v1/spans',
				errors: [{ field: 'limit', expected: 'an integer >= 1 and <= 200', given: '0', message: 'limit: expected an integer >= 1 and <= 200, got 0' }],
			}),
			true,
			JSON.stringify(problem.errors),
		);
		assert.equal(problem({ title: 'Bad argument', status: '400' }), false);
		// Kiali's route: its own error body, the tool's data as the answer
		const kiali = '/paths/~1api~1chat~1mcp~1{tool_name}/post/responses';
		assert.equal(at(`${kiali}/404/content/application~1json/schema`)({ error: "Tool 'no_such_tool' not found" }), true);
		assert.equal(at(`${kiali}/404/content/application~1json/schema`)({ detail: 'x' }), false);
		assert.equal(problem({ title: 'x', status: 400, errors: [{ field: 'limit' }] }), false);
	});
}

// Types for doc, and tsc --noEmit over the typed client against them.
async function compileClient(name, doc) {
	const dir = path.join(tmp, `ts-${name}`);
	fs.mkdirSync(dir);
	const types = path.join(dir, 'sextant-openapi.d.ts');
	// defaultNonNullable off: an argument with a default is optional in a
	// request (the option's default makes it required, as in answers)
	fs.writeFileSync(types, astToString(await openapiTS(doc, { defaultNonNullable: false })));
	fs.writeFileSync(
		path.join(dir, 'tsconfig.json'),
		JSON.stringify({
			compilerOptions: {
				strict: true,
				noEmit: true,
				target: 'es2022',
				module: 'esnext',
				moduleResolution: 'bundler',
				lib: ['es2022', 'dom'],
				types: [],
				skipLibCheck: true,
				paths: { 'sextant-openapi': [types] },
			},
			files: [CLIENT],
		}),
	);
	return run([TSC, '-p', path.join(dir, 'tsconfig.json')]);
}

test('every set: the typed client compiles against openapi-typescript types of the document', { timeout: 120000 }, async () => {
	const client = fs.readFileSync(CLIENT, 'utf8');
	for (const p of Object.keys(docs.every.doc.paths)) assert.ok(client.includes(`'${p}'`), `${p} missing from fixtures/openapi-client.ts`);
	const r = await compileClient('every', docs.every.doc);
	assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('default set: the same client does not compile (the opt-in sets\' routes are absent)', { timeout: 120000 }, async () => {
	const r = await compileClient('default', docs.default.doc);
	assert.notEqual(r.status, 0);
	for (const p of ['/api/v1/tools/query_ebpf_traces', '/api/v1/tools/get_citations', '/api/v1/tools/manage_istio_config', '/api/v1/tools/query_grafana_metrics', '/api/v1/tools/query_beyla_traces'])
		assert.match(r.stdout, new RegExp(`"${p.replaceAll('/', '\\/')}"`), r.stdout);
	assert.doesNotMatch(r.stdout, /"\/api\/v1\/services"/);
	assert.doesNotMatch(r.stdout, /"\/api\/v1\/graph"/);
});

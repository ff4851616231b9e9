// conformance.test.mjs - the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package.json) run against a
// gateway started with test/conformance.toml.  One test case per server
// scenario of `--suite all` (pending ones included); a scenario passes when
// it has at least one SUCCESS check and no FAILURE.  There is no
// expected-failures list.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';

import { LOG_DIR, ROOT, startServer } from './lib/server.mjs';

const CLI = path.join(ROOT, 'test/integration/node_modules/@modelcontextprotocol/conformance/dist/index.js');
const EXPECTED_SCENARIOS = 32;
const SUITE_TIMEOUT_MS = 300000;

// Server scenarios as `conformance list --server` prints them.
function listScenarios() {
	const r = spawnSync(process.execPath, [CLI, 'list', '--server'], { encoding: 'utf8' });
	if (r.status !== 0) throw new Error(`conformance list failed: ${r.stderr}`);
	return [...r.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

function runSuite(url, outDir, logPath) {
	return new Promise((resolve) => {
		const log = fs.openSync(logPath, 'w');
		const child = spawn(process.execPath, [CLI, 'server', '--url', url, '--suite', 'all', '-o', outDir], {
			stdio: ['ignore', log, log],
		});
		fs.closeSync(log);
		const timer = setTimeout(() => child.kill('SIGKILL'), SUITE_TIMEOUT_MS);
		child.on('exit', (code, signal) => {
			clearTimeout(timer);
			resolve({ code, signal, output: fs.readFileSync(logPath, 'utf8') });
		});
	});
}

// scenario -> checks[] from the per-scenario checks.json files
// (<outDir>/server-<scenario>-<timestamp>/checks.json).
function readChecks(outDir, scenarios) {
	const byScenario = new Map();
	for (const dir of fs.readdirSync(outDir)) {
		const f = path.join(outDir, dir, 'checks.json');
		if (!fs.existsSync(f)) continue;
		const name = scenarios.find((s) => dir.startsWith(`server-${s}-`) && /^\d{4}-/.test(dir.slice(`server-${s}-`.length)));
		if (name) byScenario.set(name, JSON.parse(fs.readFileSync(f, 'utf8')));
	}
	return byScenario;
}

const scenarios = listScenarios();
fs.mkdirSync(LOG_DIR, { recursive: true });
const outDir = fs.mkdtempSync(path.join(LOG_DIR, 'conformance-'));
const logPath = path.join(outDir, 'suite.log');

let srv = null;
let setupError = null;
let suite = null;
let checks = new Map();
try {
	srv = await startServer({ name: 'conformance' });
	suite = await runSuite(srv.mcpUrl, outDir, logPath);
	checks = readChecks(outDir, scenarios);
} catch (err) {
	setupError = err;
}

after(async () => {
	if (srv) await srv.kill();
});

test(`the suite lists ${EXPECTED_SCENARIOS} server scenarios`, () => {
	assert.equal(scenarios.length, EXPECTED_SCENARIOS, `scenarios: ${scenarios.join(', ')}`);
});

for (const name of scenarios) {
	test(`conformance: ${name}`, (t) => {
		if (setupError) throw setupError;
		const cs = checks.get(name);
		assert.ok(cs, `no checks.json for ${name} (suite exit ${JSON.stringify(suite?.code ?? suite?.signal)}); see ${logPath}`);
		const line = (c) => `${c.status} ${c.name}: ${c.description}${c.errorMessage ? ` -- ${c.errorMessage}` : ''}`;
		for (const c of cs.filter((x) => x.status === 'WARNING')) t.diagnostic(line(c));
		const failures = cs.filter((c) => c.status === 'FAILURE');
		assert.deepEqual(failures.map(line), [], `${name} has failing checks`);
		const ok = cs.filter((c) => c.status === 'SUCCESS').length;
		assert.ok(ok > 0, `${name}: no SUCCESS check; checks:\n${cs.map(line).join('\n')}`);
	});
}

test('the conformance server shuts down cleanly', async () => {
	if (setupError && !srv) throw setupError;
	await srv.stop();
});

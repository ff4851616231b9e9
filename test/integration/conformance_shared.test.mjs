// conformance_shared.test.mjs - the official conformance suite 0.2.0-alpha.12
// `server --requirements 2025-11-25` against two gateways sharing their
// sessions through one PostgreSQL, behind an nginx that sends each request
// to the next replica: every request of a session after initialize may land
// on the other gateway (issue 7, sessions on any replica).  Every scenario
// must pass, as it does against one gateway in conformance_next.test.mjs,
// and both gateways must have served the suite's /mcp requests.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { checkLine, readChecks, runSuite } from './lib/conformance.mjs';
import { startRoundRobin } from './lib/nginx.mjs';
import { startPostgres } from './lib/pg.mjs';
import { LOG_DIR, startServer } from './lib/server.mjs';

const SCENARIOS = 33; // --requirements 2025-11-25, as conformance_next.test.mjs
const PLACEHOLDERS = new Set(['tasks-status-notifications']);

async function mcpRequests(srv) {
	const text = await (await fetch(`${srv.url}/metrics`)).text();
	let n = 0;
	for (const m of text.matchAll(/^sextant_http_requests_total\{route="\/mcp",code="\d+"\} (\d+)$/gm)) n += Number(m[1]);
	return n;
}

let pg = null;
let front = null;
const replicas = [];
let setupError = null;
let checks = new Map();
let suite = null;
let served = [];
try {
	pg = await startPostgres({ name: 'conformance-shared' });
	fs.mkdirSync(LOG_DIR, { recursive: true });
	const keyFile = path.join(fs.mkdtempSync(path.join(LOG_DIR, 'conformance-shared-key-')), 'state.key');
	fs.writeFileSync(keyFile, 'conformance-shared-state-key-of-more-than-32-bytes\n');
	for (const name of ['conformance-shared-a', 'conformance-shared-b'])
		replicas.push(await startServer({ name, env: { DATABASE_URL: pg.url, SEXTANT_SERVER_STATE_KEY_FILE: keyFile } }));
	front = await startRoundRobin({ name: 'conformance-shared-rr', upstreams: replicas });
	const before = await Promise.all(replicas.map(mcpRequests));
	const outDir = fs.mkdtempSync(path.join(LOG_DIR, 'conformance-shared-2025-11-25-'));
	suite = await runSuite(front.mcpUrl, '2025-11-25', outDir);
	checks = readChecks(outDir);
	served = (await Promise.all(replicas.map(mcpRequests))).map((n, i) => n - before[i]);
} catch (err) {
	setupError = err;
}

after(async () => {
	if (front) await front.close();
	for (const r of replicas) await r.stop();
	if (pg) await pg.stop();
});

describe('conformance 0.2.0-alpha.12 --requirements 2025-11-25 over two replicas sharing sessions', () => {
	test('setup: database, two gateways, round-robin front, the suite ran', () => {
		assert.equal(setupError, null, setupError?.stack);
		assert.ok(suite.code === 0 || suite.code === 1, `the suite exited ${suite.code} ${suite.signal ?? ''}: see ${suite.logPath}`);
		assert.equal(checks.size, SCENARIOS, `${checks.size} scenarios ran, expected ${SCENARIOS}: see ${suite.logPath}`);
	});

	test('both gateways served the suite (requests of one session went to both)', () => {
		assert.equal(setupError, null);
		for (const [i, n] of served.entries()) assert.ok(n >= 20, `gateway ${i} served only ${n} /mcp requests: ${served.join(', ')}`);
	});

	test('every scenario passes', () => {
		assert.equal(setupError, null);
		const bad = [];
		for (const [scenario, list] of checks) {
			const failed = list.filter((c) => c.status === 'FAILURE');
			const ok = list.some((c) => c.status === 'SUCCESS') || (PLACEHOLDERS.has(scenario) && list.every((c) => c.status === 'SKIPPED'));
			if (failed.length > 0 || !ok) bad.push(`${scenario}:\n  ${(failed.length ? failed : list).map(checkLine).join('\n  ')}`);
		}
		assert.deepEqual(bad, [], bad.join('\n'));
	});
});

// store_recovery.test.mjs - a gateway started while its database is down:
// /readyz says so, ingestion answers 503 (exporters retry), and when the
// database comes back the janitor applies the migrations and a batch is
// stored, without a restart.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { startPostgres, pgSh, psql } from './lib/pg.mjs';
import { startServer } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function spanBody() {
	const now = BigInt(Date.now()) * 1000000n;
	return JSON.stringify({
		resourceSpans: [{
			resource: { attributes: [{ key: 'service.name', value: { stringValue: 'late-db' } }] },
			scopeSpans: [{
				scope: { name: 'test' },
				spans: [{
					traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'GET /late',
					kind: 2, startTimeUnixNano: String(now), endTimeUnixNano: String(now + 5000000n),
				}],
			}],
		}],
	});
}

async function until(fn, ms, what) {
	const deadline = Date.now() + ms;
	let last;
	while (Date.now() < deadline) {
		last = await fn();
		if (last.ok) return last;
		await sleep(200);
	}
	assert.fail(`${what} within ${ms} ms; last: ${JSON.stringify(last)}`);
}

test('a database down at start-up is migrated when it comes back, then stores batches', async () => {
	const pg = await startPostgres({ name: 'late-db' });
	let srv;
	try {
		assert.equal((await pgSh('stop', pg.dir)).code, 0);
		srv = await startServer({ name: 'late-db', env: { DATABASE_URL: pg.url } });
		const ready = await fetch(`${srv.url}/readyz`);
		assert.equal(ready.status, 503, 'readyz while the database is down');
		const post = () => fetch(`${srv.url}/v1/traces`, {
			method: 'POST', headers: { 'content-type': 'application/json' }, body: spanBody(),
		});
		const down = await post();
		assert.equal(down.status, 503);
		assert.ok(down.headers.get('retry-after'));

		assert.equal((await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } })).code, 0);
		await until(async () => ({ ok: (await fetch(`${srv.url}/readyz`)).status === 200 }), 15000, 'readyz 200');
		await until(async () => {
			const r = await post();
			return { ok: r.status === 200, status: r.status, body: await r.text() };
		}, 15000, 'a stored batch');
		assert.equal(await psql(pg.url, "SELECT count(*) FROM spans WHERE service_name = 'late-db'"), '1');
		// the janitor logs once migrate_apply has returned, which can be a
		// moment after the tables exist and a batch is stored
		await until(async () => ({
			ok: /migrations applied on retry: \d+/.test(fs.readFileSync(srv.stderrPath, 'utf8')),
		}), 10000, 'the janitor\'s migrations log line');
	} finally {
		if (srv) await srv.stop();
		await pg.stop();
	}
});

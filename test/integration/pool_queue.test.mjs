// pool_queue.test.mjs - a burst of tool calls larger than the database
// pool: calls that find every connection leased wait their turn, up to
// their own deadline, instead of failing at once.  A psql session holds an
// ACCESS EXCLUSIVE lock on spans, so the gateway's statements block on it
// with their connections; the lock is held longer than the old fixed
// acquire timeout (5 s).  One throwaway PostgreSQL for the whole file.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { psql } from './lib/pg.mjs';
import { startServer } from './lib/server.mjs';
import { TOOL_ENV, connect, startStack, sleep, textOf } from './lib/tooltest.mjs';

const POOL = 4;
const CALLS = 12;
const LOCK_S = 7;

let st;

before(async () => {
	st = await startStack({
		name: 'pool-queue',
		env: { SEXTANT_DATABASE_POOL_SIZE: String(POOL), SEXTANT_WORKERS_THREADS: '16' },
	});
});

after(async () => {
	await st?.stop();
});

// Holds ACCESS EXCLUSIVE on spans for lockS seconds from a psql session of
// its own; resolves once the lock is granted, to {done}: the promise of
// psql's end.
async function holdSpansLock(url, lockS) {
	const done = psql(url, `BEGIN; LOCK TABLE spans IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(${lockS}); COMMIT`);
	done.catch(() => {}); // awaited by the caller
	const deadline = Date.now() + 10000;
	for (;;) {
		const n = await psql(
			url,
			`SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			 WHERE c.relname = 'spans' AND l.mode = 'AccessExclusiveLock' AND l.granted`,
		);
		if (n === '1') return { done };
		assert.ok(Date.now() < deadline, 'the lock on spans was not granted within 10 s');
		await sleep(20);
	}
}

// Waits (10 s at most) until the gateway's statements wait for the lock
// (pg_stat_activity): the calls that got a connection are stuck on it.
async function waitBlocked(url) {
	const deadline = Date.now() + 10000;
	for (;;) {
		const n = Number(
			await psql(url, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sextant' AND wait_event_type = 'Lock'`),
		);
		if (n > 0) return n;
		assert.ok(Date.now() < deadline, 'no statement of the gateway waits for the lock');
		await sleep(20);
	}
}

const callAll = (mcp, n) =>
	Promise.all(
		Array.from({ length: n }, () =>
			mcp.client.callTool({ name: 'list_services', arguments: {} }, undefined, { timeout: 60000 }).then(
				(r) => ({ r, text: textOf(r), at: Date.now() }),
			),
		),
	);

describe('a burst larger than the pool', () => {
	test(`${CALLS} concurrent calls, pool_size ${POOL}, every connection blocked for ${LOCK_S} s: all ${CALLS} answer`, async () => {
		const lock = await holdSpansLock(st.pg.url, LOCK_S);
		const t0 = Date.now();
		const calls = callAll(st.mcp, CALLS);
		// the calls that got a connection are stuck behind the lock: the
		// others, at least CALLS - POOL of them, wait for a connection
		assert.ok((await waitBlocked(st.pg.url)) <= POOL);
		// /metrics shows the queue
		const waiting = async () => {
			const text = await (await fetch(`${st.srv.url}/metrics`)).text();
			return Number(/^sextant_db_acquire_waiting (\d+)$/m.exec(text)?.[1]);
		};
		const deadlineQ = Date.now() + 5000;
		let queued = await waiting();
		while (!(queued >= CALLS - 2 * POOL) && Date.now() < deadlineQ) {
			await sleep(50);
			queued = await waiting();
		}
		assert.ok(queued >= CALLS - 2 * POOL, `sextant_db_acquire_waiting ${queued}`);
		const got = await calls;
		await lock.done;
		const took = Date.now() - t0;
		for (const [i, { r, text }] of got.entries()) {
			assert.notEqual(r.isError, true, `call ${i} failed: ${text}`);
			assert.ok(r.structuredContent, `call ${i}: no structuredContent: ${text}`);
		}
		// the lock held the pool for longer than the old fixed wait
		assert.ok(took > 5000, `the calls took ${took} ms: the lock did not hold them`);
	});
});

describe('a call that waits past its deadline', () => {
	let srv;
	let mcp;

	before(async () => {
		srv = await startServer({
			name: 'pool-deadline',
			env: {
				DATABASE_URL: st.pg.url,
				...TOOL_ENV,
				SEXTANT_DATABASE_POOL_SIZE: '2',
				SEXTANT_WORKERS_THREADS: '16',
				SEXTANT_WORKERS_CALL_TIMEOUT_S: '3',
			},
		});
		mcp = await connect(srv, 'pool-deadline');
	});

	after(async () => {
		await mcp?.client.close().catch(() => {});
		await srv?.stop();
	});

	test('workers.call_timeout_s 3: the waiting calls end before it, saying how long they waited and what to do', async () => {
		const lock = await holdSpansLock(st.pg.url, 6);
		const t0 = Date.now();
		const got = await callAll(mcp, 6);
		await lock.done;
		const waited = got.filter(({ text }) => /became free/.test(text));
		for (const { r, text, at } of waited) {
			assert.equal(r.isError, true, text);
			assert.match(
				text,
				/^telemetry store unavailable: no telemetry database connection became free in [0-9.]+ m?s: \d of 2 in use, \d more waiting; try again later, or raise database\.pool_size$/,
			);
			// before the call's own deadline (3 s), not at the old 5 s
			assert.ok(at - t0 < 3000, `answered after ${at - t0} ms: ${text}`);
		}
		// the calls on the two connections wait for the lock (they end as
		// the janitor's call timeout or the lock's end finds them); the
		// others waited for a connection
		assert.ok(waited.length >= 4, `only ${waited.length} calls waited: ${got.map((g) => g.text).join(' | ')}`);
		const metrics = await (await fetch(`${srv.url}/metrics`)).text();
		assert.match(metrics, /^# TYPE sextant_db_acquire_timeouts_total counter$/m);
		const timeouts = Number(/^sextant_db_acquire_timeouts_total (\d+)$/m.exec(metrics)?.[1]);
		assert.ok(timeouts >= waited.length, `sextant_db_acquire_timeouts_total ${timeouts}, ${waited.length} waits ran out`);
	});
});

describe('a full queue', () => {
	let srv;
	let mcp;

	before(async () => {
		srv = await startServer({
			name: 'pool-full',
			env: {
				DATABASE_URL: st.pg.url,
				...TOOL_ENV,
				SEXTANT_DATABASE_POOL_SIZE: '1',
				SEXTANT_DATABASE_ACQUIRE_QUEUE: '1',
				SEXTANT_WORKERS_THREADS: '16',
			},
		});
		mcp = await connect(srv, 'pool-full');
	});

	after(async () => {
		await mcp?.client.close().catch(() => {});
		await srv?.stop();
	});

	test('database.acquire_queue 1, pool_size 1: calls past the one waiter fail at once, saying so', async () => {
		const lock = await holdSpansLock(st.pg.url, 4);
		const t0 = Date.now();
		const got = await callAll(mcp, 5);
		await lock.done;
		const refused = got.filter(({ text }) => /too many calls wait/.test(text));
		assert.ok(refused.length >= 3, `only ${refused.length} refused: ${got.map((g) => g.text).join(' | ')}`);
		for (const { r, text, at } of refused) {
			assert.equal(r.isError, true, text);
			assert.match(text, /too many calls wait for a telemetry database connection: 1 of 1 in use, 1 waiting; try again later, or raise database\.pool_size/);
			// at once, not after the lock's 4 s
			assert.ok(at - t0 < 2000, `refused after ${at - t0} ms`);
		}
		const metrics = await (await fetch(`${srv.url}/metrics`)).text();
		const n = Number(/^sextant_db_acquire_refused_total (\d+)$/m.exec(metrics)?.[1]);
		assert.ok(n >= refused.length, `sextant_db_acquire_refused_total ${n}`);
	});
});

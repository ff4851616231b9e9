// sessions_limits.test.mjs - shared sessions at their limits (issue 17):
// two gateways A and B on one throwaway PostgreSQL, with a small
// server.max_sessions and sessions.cache_idle_s, so that the resident
// copies go idle within the test.  A session idle past cache_idle_s still
// answers on both replicas while the database is down (a session a replica
// never saw gets 503 with Retry-After); and server.max_sessions holds
// across both replicas, however long their copies have been idle, with a
// 503 that names the limit and says when to retry.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, beforeEach, describe, test } from 'node:test';

import { LATEST } from './lib/http.mjs';
import { findPsql, pgSh, psql, startPostgres } from './lib/pg.mjs';
import { Session, replicaDir, sleep, startReplica, stopReplicas, toolNames, waitFor } from './lib/replicas.mjs';

// server.max_sessions and sessions.cache_idle_s (its minimum) of A and B.
const MAX_SESSIONS = 5;
const CACHE_IDLE_S = 5;
// Past cache_idle_s for a copy last used now: the janitor's sweep runs
// once a second, and a sanitizer build on a busy machine is slow.
const IDLE_WAIT_MS = (CACHE_IDLE_S + 2) * 1000;

// One initialize on srv, whatever its outcome: {status, headers, response,
// session} (session: a Session for a 200, else null).
async function tryInitialize(srv) {
	const r = await new Session().at(srv).post({
		jsonrpc: '2.0',
		id: 1,
		method: 'initialize',
		params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'sessions-limits-test', version: '1' } },
	});
	let session = null;
	if (r.status === 200) {
		session = new Session();
		session.id = r.headers['mcp-session-id'];
		session.version = r.response?.result?.protocolVersion;
		assert.ok(session.id && session.version, `initialize on ${srv.name}: ${r.text}`);
	}
	return { ...r, session };
}

// r is initialize refused for server.max_sessions = max: 503 answering
// the request, a Retry-After of 1 to 300 s, the same wait and the limit
// in the message.  Resolves to the Retry-After.
function assertFull(r, max) {
	assert.equal(r.status, 503, `a refused initialize: HTTP ${r.status} ${r.text ?? ''}`);
	const after = Number(r.headers['retry-after']);
	assert.ok(Number.isInteger(after) && after >= 1 && after <= 300, `Retry-After: ${r.headers['retry-after']}`);
	assert.equal(r.response?.id, 1, `the refusal answers the request: ${r.text}`);
	assert.match(r.response?.error?.message ?? '', new RegExp(`server\\.max_sessions \\(${max}\\)`), r.text);
	assert.match(r.response.error.message, new RegExp(`retry in ${after} s`), r.text);
	return after;
}

describe('shared sessions at their limits', () => {
	let pg;
	let dir;
	let keyFile;
	let A;
	let B;

	const replica = (name, env = {}) =>
		startReplica({
			name,
			dir,
			pgUrl: pg.url,
			keyFile,
			env: {
				SEXTANT_SERVER_MAX_SESSIONS: String(MAX_SESSIONS),
				SEXTANT_SESSIONS_CACHE_IDLE_S: String(CACHE_IDLE_S),
				// an insert may wait 2.5 s for a row lock the test holds
				SEXTANT_SESSIONS_STORE_TIMEOUT_MS: '5000',
				...env,
			},
		});

	before(async () => {
		({ dir, keyFile } = replicaDir('limits'));
		pg = await startPostgres({ name: 'limits' });
		A = await replica('limits-a');
		B = await replica('limits-b');
	});
	beforeEach(() => {
		A?.assertAlive();
		B?.assertAlive();
	});
	after(() => stopReplicas([A, B], pg, dir));

	test('a session idle past cache_idle_s answers on both replicas through a database outage', async () => {
		const s = new Session();
		await s.initialize(A);
		toolNames(await s.call(B, 'tools/list'), 'tools/list on B');
		// a stream on each replica: what an idle copy sheds
		for (const srv of [A, B]) {
			const r = await s.call(srv, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: `idle-${srv.name}` } });
			assert.equal(r.status, 200, `tools/call on ${srv.name}: HTTP ${r.status} ${r.text ?? ''}`);
			assert.ok(r.sse && r.response?.result, `tools/call on ${srv.name}: ${JSON.stringify(r.messages)}`);
		}
		const unseen = new Session();
		await unseen.initialize(A);
		await sleep(IDLE_WAIT_MS);

		assert.equal((await pgSh('stop', pg.dir)).code, 0, 'pg.sh stop');
		let restarted = false;
		try {
			for (const srv of [A, B]) {
				toolNames(await s.call(srv, 'tools/list'), `tools/list on ${srv.name}, idle ${CACHE_IDLE_S} s and more, database down`);
				const call = await s.call(srv, 'tools/call', { name: 'test_simple_text', arguments: {} });
				assert.equal(call.status, 200, `tools/call on ${srv.name}, database down: HTTP ${call.status} ${call.text ?? ''}`);
				assert.equal(call.response?.result?.content?.[0]?.text, 'This is a simple text response for testing.', JSON.stringify(call.response));
			}
			// a session B never held cannot be read: 503, and when to retry
			const r = await unseen.call(B, 'tools/list', {}, { id: 4242 });
			assert.equal(r.status, 503, `a session B never saw, database down: HTTP ${r.status} ${r.text ?? ''}`);
			assert.equal(r.response?.id, 4242, `the 503 echoes the request id: ${r.text}`);
			assert.match(r.headers['retry-after'] ?? '', /^[1-9][0-9]*$/, 'Retry-After of the 503');
			assert.match(r.response?.error?.message ?? '', /retry/, r.text);

			assert.equal((await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } })).code, 0, 'pg.sh start');
			restarted = true;
			await waitFor(async () => (await unseen.call(B, 'tools/list')).status === 200, 15000, 'the unseen session on B once the database is back');
		} finally {
			if (!restarted) await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
		}
		toolNames(await s.call(B, 'tools/list'), 'tools/list on B after the outage');
		assert.equal((await s.delete(B)).status, 200);
		assert.equal((await unseen.delete(A)).status, 200);
		for (const srv of [A, B]) assert.equal((await s.call(srv, 'tools/list')).status, 404, `the deleted session on ${srv.name}`);
	});

	test('a session being stored when the notification connection comes back is not forgotten', async () => {
		// initialize's insert waits for the session count's row (held
		// here) while the listeners are cut: the replica re-reads its
		// copies after the reconnection, before the row exists
		const locker = spawn(findPsql(), ['-X', '-w', '-q', '-d', pg.url, '-c', 'BEGIN; SELECT n FROM mcp_session_count FOR UPDATE; SELECT pg_sleep(2.5); COMMIT;'], { stdio: 'ignore' });
		let s;
		try {
			await waitFor(async () => (await psql(pg.url, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2.5)%' AND state = 'active' AND pid <> pg_backend_pid()`)) !== '0', 5000, 'the count row lock');
			const init = tryInitialize(A);
			await waitFor(async () => (await psql(pg.url, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%mcp_session_count%'`)) !== '0', 2000, 'the insert waiting for the count');
			assert.notEqual(await psql(pg.url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'sextant-listen'`), '0', 'no listener connection to cut');
			const r = await init;
			assert.equal(r.status, 200, `initialize on A: HTTP ${r.status} ${r.text ?? ''}`);
			s = r.session;
		} finally {
			locker.kill();
		}
		// every copy was re-read by now (the janitor, once a second)
		await sleep(1500);
		toolNames(await s.call(A, 'tools/list'), 'tools/list on A for the session stored across the reconnection');
		assert.equal((await s.delete(B)).status, 200);
	});

	test('server.max_sessions holds across both replicas, before and after their copies go idle', async () => {
		const stored = async () => Number(await psql(pg.url, 'SELECT count(*) FROM mcp_sessions'));
		assert.equal(await stored(), 0, 'sessions left by the previous test');
		const flood = async (n) => {
			const all = await Promise.all(Array.from({ length: n }, (_, i) => tryInitialize(i % 2 ? B : A)));
			return { ok: all.filter((r) => r.status === 200), refused: all.filter((r) => r.status !== 200) };
		};
		const assertRefusal = (r) => assertFull(r, MAX_SESSIONS);

		const first = await flood(2 * MAX_SESSIONS);
		assert.equal(first.ok.length, MAX_SESSIONS, `sessions created by a first flood of ${2 * MAX_SESSIONS}: ${first.refused.map((r) => r.status).join(' ')}`);
		first.refused.forEach(assertRefusal);
		assert.equal(await stored(), MAX_SESSIONS);
		const [a, b] = [first.ok[0].session, first.ok[1].session];
		toolNames(await a.call(A, 'tools/list'), 'a session of the first flood on A');
		toolNames(await a.call(B, 'tools/list'), 'a session of the first flood on B');

		// every copy idle past cache_idle_s: still counted
		await sleep(IDLE_WAIT_MS);
		const second = await flood(2 * MAX_SESSIONS);
		assert.equal(second.ok.length, 0, `sessions created by a second flood after ${CACHE_IDLE_S} s idle`);
		second.refused.forEach(assertRefusal);
		assert.equal(await stored(), MAX_SESSIONS);
		assert.equal(await psql(pg.url, 'SELECT n FROM mcp_session_count'), String(MAX_SESSIONS));
		for (const srv of [A, B]) toolNames(await b.call(srv, 'tools/list'), `an idle session on ${srv.name}`);

		// a DELETE on one replica makes room on the other, for one
		assert.equal((await a.delete(B)).status, 200);
		const third = await flood(2);
		assert.equal(third.ok.length, 1, `sessions created after one DELETE: ${third.refused.map((r) => r.text).join(' ')}`);
		third.refused.forEach(assertRefusal);
		assert.equal(await stored(), MAX_SESSIONS);

		for (const r of [...first.ok.slice(1), ...third.ok]) assert.equal((await r.session.delete(A)).status, 200);
		assert.equal(await stored(), 0);
		assert.equal(await psql(pg.url, 'SELECT n FROM mcp_session_count'), '0');
	});

	test('sessions.store = "memory": the limit is the process\'s, refused with the same answer', async () => {
		const M = await replica('limits-memory', { SEXTANT_SESSIONS_STORE: 'memory', SEXTANT_SERVER_MAX_SESSIONS: '2', SEXTANT_SERVER_SESSION_IDLE_TIMEOUT_S: '60' });
		try {
			const ok = [await tryInitialize(M), await tryInitialize(M)];
			for (const r of ok) assert.equal(r.status, 200, `initialize on the memory replica: HTTP ${r.status} ${r.text ?? ''}`);
			// both idle since their initialize: the first expires 60 s
			// after it (as the janitor's sweep, once a second, saw it)
			await sleep(1500);
			const after = assertFull(await tryInitialize(M), 2);
			assert.ok(after >= 55 && after <= 62, `Retry-After ${after}, for sessions idle about 1.5 s of 60`);
			assert.equal((await ok[0].session.delete(M)).status, 200);
			const again = await tryInitialize(M);
			assert.equal(again.status, 200, `initialize after a DELETE: HTTP ${again.status} ${again.text ?? ''}`);
			assert.equal(await psql(pg.url, 'SELECT count(*) FROM mcp_sessions'), '0', 'a memory session was stored');
		} finally {
			await M.stop();
		}
	});
});

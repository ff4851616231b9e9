// replicas.test.mjs - 2025 sessions served by any gateway replica that
// shares the database (issue 7, docs/shared-sessions-design.md section 16):
// two gateways A and B on one throwaway PostgreSQL, requests sent by hand
// to the replica each step names; a session created on one is served by the
// other, a dropped stream resumes on the other with every event once, an
// answer or a cancel reaches the call on the other replica, a killed
// replica's unanswered request gets one retryable error and the session
// goes on, idle sessions expire everywhere, a database outage answers 503
// (never 404), and one session under round-robin load through nginx never
// sees "session not found".  SEXTANT_SESSIONS_STORE=memory keeps today's
// per-process sessions.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';

import { startRoundRobin } from './lib/nginx.mjs';
import { findPsql, pgSh, psql, startPostgres } from './lib/pg.mjs';
import {
	REPLICA_TIMEOUT_S,
	Session,
	SseStream,
	assertIdsIncreasing,
	drain,
	eventId,
	isProgress,
	isResponse,
	metric,
	readUntil,
	reconfigure,
	replicaDir,
	sessionRow,
	sleep,
	startReplica,
	statelessToolsList,
	stopReplicas,
	toolNames,
	waitFor,
} from './lib/replicas.mjs';

// server.session_idle_timeout_s of A and B (case 10); every other case
// uses its sessions well within it.
const IDLE_TIMEOUT_S = 10;
// A killed replica's unanswered request is answered by another replica
// within replica_timeout_s + about 2 s (design section 9); 2 s more for a
// loaded machine.
const TAKEOVER_MS = (REPLICA_TIMEOUT_S + 4) * 1000;
// "within 2 s" of the design for cross-replica effects (NOTIFY delivery is
// milliseconds), plus a second for sanitizer builds on a busy machine.
const CROSS_MS = 3000;
const ELICIT_CAPS = { elicitation: {} };
const isElicitation = (m) => m.method === 'elicitation/create' && m.id !== undefined;

// A session's store key: the first 16 bytes of SHA-256(id), in hex.
const keyOf = (id) => crypto.createHash('sha256').update(id).digest('hex').slice(0, 32);

describe('sessions shared by two replicas on one database', () => {
	let pg;
	let dir;
	let keyFile;
	let A;
	let B;
	const started = [];

	const replica = async (name, env = {}) => {
		const srv = await startReplica({ name, dir, pgUrl: pg.url, keyFile, env: { SEXTANT_SERVER_SESSION_IDLE_TIMEOUT_S: String(IDLE_TIMEOUT_S), ...env } });
		started.push(srv);
		return srv;
	};

	before(async () => {
		({ dir, keyFile } = replicaDir('replicas'));
		pg = await startPostgres({ name: 'replicas' });
		// one after the other: A applies the migrations, B finds them done
		A = await replica('replica-a');
		B = await replica('replica-b');
	});
	beforeEach(() => {
		A?.assertAlive();
		B?.assertAlive();
	});
	after(() => stopReplicas(started, pg, dir));

	test('1. initialize on A, call tools on B: one lookup, then hits; the session is a row keyed by a hash', async () => {
		const s = new Session();
		await s.initialize(A);
		const namesA = toolNames(await s.call(A, 'tools/list'), 'tools/list on A');
		const missBefore = await metric(B, 'sextant_session_cache_total', { result: 'miss' });
		const hitBefore = await metric(B, 'sextant_session_cache_total', { result: 'hit' });
		const namesB = toolNames(await s.call(B, 'tools/list'), 'tools/list on B');
		assert.deepEqual(namesB, namesA, 'B lists other tools than A');
		const call = await s.call(B, 'tools/call', { name: 'test_simple_text', arguments: {} });
		assert.equal(call.status, 200, `tools/call on B: HTTP ${call.status} ${call.text ?? ''}`);
		assert.equal(call.response?.result?.content?.[0]?.text, 'This is a simple text response for testing.', JSON.stringify(call.response));
		assert.equal((await metric(B, 'sextant_session_cache_total', { result: 'miss' })) - missBefore, 1, 'B should look the session up once');
		assert.ok((await metric(B, 'sextant_session_cache_total', { result: 'hit' })) - hitBefore >= 1, 'the second request on B was no cache hit');
		const row = await sessionRow(pg.url, s.id);
		assert.ok(row, 'no mcp_sessions row for the session');
		assert.deepEqual(row.subscriptions, {});
		assert.equal((await s.delete(B)).status, 200);
	});

	test('16. a burst of first requests on B for a session of A: one store read, every request answered', async () => {
		const s = new Session();
		await s.initialize(A);
		const lookup = { op: 'lookup', outcome: 'ok' };
		const readsBefore = await metric(B, 'sextant_session_store_ops_total', lookup);
		const missBefore = await metric(B, 'sextant_session_cache_total', { result: 'miss' });
		// the table held for a second: B's first read waits, so the
		// whole burst finds the session missing, as under load
		const locker = spawn(findPsql(), ['-X', '-w', '-q', '-d', pg.url, '-c', 'BEGIN; LOCK TABLE mcp_sessions IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(0.8); COMMIT;'], { stdio: 'ignore' });
		try {
			await waitFor(async () => (await psql(pg.url, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(0.8)%' AND state = 'active' AND pid <> pg_backend_pid()`)) !== '0', 5000, 'the table lock');
			const answers = await Promise.all(Array.from({ length: 12 }, () => s.call(B, 'tools/list')));
			for (const a of answers) assert.equal(a.status, 200, `tools/list on B: HTTP ${a.status} ${a.text ?? ''}`);
			for (const a of answers) assert.ok(Array.isArray(a.response?.result?.tools), JSON.stringify(a.response));
		} finally {
			locker.kill();
		}
		const misses = (await metric(B, 'sextant_session_cache_total', { result: 'miss' })) - missBefore;
		const reads = (await metric(B, 'sextant_session_store_ops_total', lookup)) - readsBefore;
		assert.equal(misses, 12, 'every request of the burst should find the session missing');
		assert.equal(reads, 1, `B read the session ${reads} times for ${misses} misses`);
		assert.equal((await s.delete(B)).status, 200);
	});

	test('17. DELETEs waiting for a replica that never confirms hold no store thread: another session loads meanwhile', async () => {
		// a live-looking replica that answers nothing: each DELETE on B
		// waits its bound (2-3 s) for the ghost's confirmation
		const ghost = 'deadbeefdeadbeef';
		const victims = [];
		for (let i = 0; i < 4; i++) {
			const s = new Session();
			await s.initialize(B);
			victims.push(s);
		}
		const other = new Session();
		await other.initialize(A);
		await psql(pg.url, `INSERT INTO mcp_replicas (id, host, pid, seen_at) VALUES ('${ghost}', 'ghost', 1, now() + interval '1 hour')`);
		try {
			const t0 = Date.now();
			const dels = victims.map((s) => s.delete(B).then((r) => ({ r, ms: Date.now() - t0 })));
			await sleep(300);
			// the ghost's confirmations, forged by a database role without
			// the store's key: ignored, so the DELETEs still wait
			const idB = await psql(pg.url, `SELECT id FROM mcp_replicas WHERE pid = ${B.proc.pid}`);
			assert.match(idB, /^[0-9a-f]{16}$/, "B's replica id");
			for (const v of victims) await psql(pg.url, `SELECT pg_notify('sextant_r_${idB}', 'x ${keyOf(v.id)} ${ghost}')`);
			const t1 = Date.now();
			const list = await other.call(B, 'tools/list');
			const loadMs = Date.now() - t1;
			const done = await Promise.all(dels);
			assert.equal(list.status, 200, `tools/list on B: HTTP ${list.status} ${list.text ?? ''}`);
			for (const { r, ms } of done) {
				assert.equal(r.status, 200, `DELETE on B: HTTP ${r.status} ${r.text ?? ''}`);
				assert.ok(ms >= 1500, `a DELETE answered after ${ms} ms: it took a forged confirmation, or never waited for the ghost`);
			}
			// with the waits on its 2 store threads, the load queued
			// behind them for 2 s and more
			assert.ok(loadMs < 1000, `loading the other session on B took ${loadMs} ms while the DELETEs waited`);
			for (const s of victims) assert.equal((await s.call(A, 'tools/list')).status, 404, 'a deleted session still answers on A');
		} finally {
			await psql(pg.url, `DELETE FROM mcp_replicas WHERE id = '${ghost}'`);
		}
		assert.equal((await other.delete(A)).status, 200);
	});

	test('2. a POST stream resumed on the other replica: every event once, in order', async () => {
		const s = new Session();
		await s.initialize(A);
		const { id, stream } = await s.openCall(B, 'test_tool_with_progress', {}, { meta: { progressToken: 'resume-2' } });
		const first = await readUntil(stream, isProgress);
		stream.close();
		assert.ok(first.match, `no progress on B's stream: ${JSON.stringify(first.events)}`);
		const lastId = first.matchEvent.id;
		assert.ok(eventId(lastId), `the progress event has no <stream>-<seq> id: ${JSON.stringify(first.matchEvent)}`);

		const get = await s.openGet(A, lastId);
		assert.ok(get instanceof SseStream, `GET on A with Last-Event-ID ${lastId}: HTTP ${get.status} ${get.text ?? ''}`);
		assert.equal(get.status, 200);
		const rest = await drain(get, 10000);
		get.close();
		assert.ok(rest.ended, `the resumed stream on A did not end: ${JSON.stringify(rest.events)}`);
		const all = [...first.messages, ...rest.messages];
		assert.deepEqual(all.filter(isProgress).map((m) => m.params.progress), [0, 50, 100], `progress across both connections: ${JSON.stringify(all)}`);
		assert.ok(all.filter(isProgress).every((m) => m.params.progressToken === 'resume-2'));
		const responses = all.filter(isResponse(id));
		assert.equal(responses.length, 1, `responses: ${JSON.stringify(responses)}`);
		assert.match(responses[0].result?.content?.[0]?.text ?? '', /progress 0, 50 and 100/);
		assert.equal(all.at(-1), responses[0], 'a message after the response');
		assert.ok(eventId(rest.events.find((e) => e.id)?.id)?.seq > eventId(lastId).seq, 'A replayed the event named by Last-Event-ID');
		assertIdsIncreasing([...first.events, ...rest.events], 'progress stream across B then A');

		// test_reconnection: B drops its own connection before the result
		const r = await s.openCall(B, 'test_reconnection');
		const dropped = await drain(r.stream, 10000);
		assert.ok(dropped.ended, 'B did not close the stream of test_reconnection');
		assert.deepEqual(dropped.messages.filter(isResponse(r.id)), [], 'the result came before the drop');
		const lastB = dropped.events.filter((e) => e.id).at(-1)?.id;
		assert.ok(lastB, `no event id on B's stream before the drop: ${JSON.stringify(dropped.events)}`);
		const get2 = await s.openGet(A, lastB);
		assert.ok(get2 instanceof SseStream, `GET on A with Last-Event-ID ${lastB}: HTTP ${get2.status} ${get2.text ?? ''}`);
		const resumed = await drain(get2, 10000);
		get2.close();
		assert.ok(resumed.ended, 'the resumed stream on A did not end after the result');
		const res2 = resumed.messages.filter(isResponse(r.id));
		assert.equal(res2.length, 1, `responses on A: ${JSON.stringify(resumed.messages)}`);
		assert.match(res2[0].result?.content?.[0]?.text ?? '', /Reconnection test completed/);
		assertIdsIncreasing([...dropped.events, ...resumed.events], 'reconnection stream across B then A');
		assert.equal((await s.delete(A)).status, 200);
	});

	test('3. the GET stream across replicas: tools/list_changed from reloads, resumed and live, once each', async () => {
		const s = new Session();
		await s.initialize(A);
		const seen = [];
		const nextChange = async (g, what) => {
			const r = await readUntil(g, (m) => m.method === 'notifications/tools/list_changed', 10000);
			assert.ok(r.match, `${what}: no tools/list_changed (${r.ended ? 'stream ended' : 'timed out'}): ${JSON.stringify(r.events)}`);
			assert.ok(eventId(r.matchEvent.id), `${what}: the event has no <stream>-<seq> id: ${JSON.stringify(r.matchEvent)}`);
			seen.push(...r.events);
			return r.matchEvent;
		};
		try {
			const g1 = await s.openGet(B);
			assert.ok(g1 instanceof SseStream, `GET on B: HTTP ${g1.status} ${g1.text ?? ''}`);
			await reconfigure(B, ['test_image_content']);
			const e1 = await nextChange(g1, 'event 1 (SIGHUP B, live on B)');
			g1.close();
			await reconfigure(B, ['test_audio_content']); // event 2, nobody reading

			const g2 = await s.openGet(A, e1.id);
			assert.ok(g2 instanceof SseStream, `GET on A with Last-Event-ID ${e1.id}: HTTP ${g2.status} ${g2.text ?? ''}`);
			try {
				const e2 = await nextChange(g2, 'event 2 (stored while no one read, replayed on A)');
				await reconfigure(B, ['test_embedded_resource']);
				const e3 = await nextChange(g2, 'event 3 (SIGHUP B, live on A)');
				await reconfigure(A, ['test_image_content']);
				const e4 = await nextChange(g2, 'event 4 (SIGHUP A, live on A)');
				assert.ok(eventId(e2.id).seq > eventId(e1.id).seq);
				assert.deepEqual([e1, e2, e3, e4].map((e) => eventId(e.id).stream), Array(4).fill(eventId(e1.id).stream), 'one stream, whichever replica appends');
				assertIdsIncreasing(seen, 'the GET stream across B then A');
				const more = await readUntil(g2, (m) => m.method === 'notifications/tools/list_changed', 1000);
				assert.equal(more.match, null, `a tools/list_changed twice: ${JSON.stringify(more.events)}`);
			} finally {
				g2.close();
			}
		} finally {
			await reconfigure(A, []);
			await reconfigure(B, []);
		}
		assert.equal((await s.delete(B)).status, 200);
	});

	test("4. an answer on the other replica: elicitation asked on B's stream, answered on A", async () => {
		const s = new Session({ capabilities: ELICIT_CAPS });
		await s.initialize(A);
		const { id, stream } = await s.openCall(B, 'test_elicitation', { message: 'Who are you?' });
		try {
			const ask = await readUntil(stream, isElicitation);
			assert.ok(ask.match, `no elicitation/create on B's stream: ${JSON.stringify(ask.events)}`);
			const ans = await s.send(A, { id: ask.match.id, result: { action: 'accept', content: { username: 'ada', email: 'ada@example.org' } } });
			assert.equal(ans.status, 202, `the answer POSTed to A: HTTP ${ans.status} ${ans.text ?? ''}`);
			const done = await readUntil(stream, isResponse(id), 10000);
			assert.ok(done.match, `no tool result on B's stream: ${JSON.stringify(done.events)}`);
			const text = done.match.result?.content?.[0]?.text ?? '';
			assert.match(text, /action=accept/, text);
			assert.match(text, /"username":"ada"/, text);
		} finally {
			stream.close();
		}
		assert.equal((await s.delete(A)).status, 200);
	});

	test('6. DELETE on B ends the call running on A', async () => {
		const s = new Session({ capabilities: ELICIT_CAPS });
		await s.initialize(A);
		const cancelled = () => metric(A, 'sextant_tool_calls_total', { tool: 'test_elicitation', outcome: 'cancelled' });
		const before0 = await cancelled();
		const { stream } = await s.openCall(A, 'test_elicitation', { message: 'never answered' });
		try {
			const ask = await readUntil(stream, isElicitation);
			assert.ok(ask.match, `no elicitation/create on A's stream: ${JSON.stringify(ask.events)}`);
			const del = await s.delete(B);
			assert.equal(del.status, 200, `DELETE on B: HTTP ${del.status} ${del.text}`);
			await waitFor(async () => (await cancelled()) === before0 + 1, CROSS_MS, "A's test_elicitation counted as cancelled");
			const r = await s.call(A, 'tools/list');
			assert.equal(r.status, 404, `tools/list on A after DELETE on B: HTTP ${r.status}`);
			assert.ok((await drain(stream, CROSS_MS)).ended, "A's POST stream outlived its session");
		} finally {
			stream.close();
		}
	});

	test('7. notifications/cancelled on B cancels the call running on A', async () => {
		const s = new Session();
		await s.initialize(A);
		const cancelled = () => metric(A, 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		const before0 = await cancelled();
		const t0 = Date.now();
		const { id, stream } = await s.openCall(A, 'test_cancellation', { duration_ms: 20000 }, { meta: { progressToken: 'cancel-7' } });
		try {
			const running = await readUntil(stream, isProgress);
			assert.ok(running.match, `no progress from test_cancellation on A: ${JSON.stringify(running.events)}`);
			const n = await s.send(B, { method: 'notifications/cancelled', params: { requestId: id, reason: 'cancelled on the other replica' } });
			assert.equal(n.status, 202, `notifications/cancelled on B: HTTP ${n.status} ${n.text ?? ''}`);
			await waitFor(async () => (await cancelled()) === before0 + 1, CROSS_MS, "A's test_cancellation counted as cancelled");
			assert.ok(Date.now() - t0 < 10000, 'the call ran on as if never cancelled');
			const rest = await drain(stream, CROSS_MS);
			assert.deepEqual(rest.messages.filter(isResponse(id)), [], 'a response to a cancelled request');
		} finally {
			stream.close();
		}
		assert.equal((await s.delete(A)).status, 200);
	});

	test('18. a cancel NOTIFY not signed with the store key (any database role can NOTIFY) cancels nothing', async () => {
		const s = new Session();
		await s.initialize(A);
		const cancelled = () => metric(A, 'sextant_tool_calls_total', { tool: 'test_cancellation', outcome: 'cancelled' });
		const before0 = await cancelled();
		const { id, stream } = await s.openCall(A, 'test_cancellation', { duration_ms: 20000 }, { meta: { progressToken: 'cancel-18' } });
		try {
			const running = await readUntil(stream, isProgress);
			assert.ok(running.match, `no progress from test_cancellation on A: ${JSON.stringify(running.events)}`);
			const payload = `c ${keyOf(s.id)} ${JSON.stringify(id)}`;
			// unsigned, and signed with a key that is not the store's
			await psql(pg.url, `SELECT pg_notify('sextant_sessions', '${payload}')`);
			await psql(pg.url, `SELECT pg_notify('sextant_sessions', '${payload} ${'0'.repeat(32)}')`);
			await sleep(1500);
			assert.equal(await cancelled(), before0, 'a forged cancel cancelled the call on A');
			// the signed path still works: a real cancel through B
			const n = await s.send(B, { method: 'notifications/cancelled', params: { requestId: id, reason: 'the real one' } });
			assert.equal(n.status, 202, `notifications/cancelled on B: HTTP ${n.status} ${n.text ?? ''}`);
			await waitFor(async () => (await cancelled()) === before0 + 1, CROSS_MS, "A's test_cancellation counted as cancelled");
		} finally {
			stream.close();
		}
		assert.equal((await s.delete(A)).status, 200);
	});

	test('8. logging/setLevel on A is obeyed on B; subscribe and unsubscribe on both lose no update', async () => {
		const s = new Session();
		await s.initialize(A);
		const logs = async () => {
			const r = await s.call(B, 'tools/call', { name: 'test_tool_with_logging', arguments: {} });
			assert.equal(r.status, 200, `test_tool_with_logging on B: HTTP ${r.status} ${r.text ?? ''}`);
			assert.ok(r.response?.result, JSON.stringify(r.response));
			return r.messages.filter((m) => m.method === 'notifications/message' && m.params?.level === 'info');
		};
		// B holds the session (and its level) before A changes it
		assert.equal((await logs()).length, 3, 'at the default level (info) the tool logs three lines');
		const rowBefore = await sessionRow(pg.url, s.id);
		const set = await s.call(A, 'logging/setLevel', { level: 'error' });
		assert.deepEqual(set.response?.result, {}, JSON.stringify(set.response ?? set.text));
		await waitFor(async () => (await logs()).length === 0, 1000, 'B obeying the level set on A');
		assert.deepEqual(await logs(), [], 'B logged at info again after setLevel error on A');
		const row = await sessionRow(pg.url, s.id);
		assert.ok(row && row.log_level !== rowBefore?.log_level && row.rev > rowBefore?.rev, `the stored level did not change: ${JSON.stringify([rowBefore, row])}`);

		const sub = async (srv, method, uri) => {
			const r = await s.call(srv, method, { uri });
			assert.deepEqual(r.response?.result, {}, `${method} ${uri} on ${srv.name}: ${JSON.stringify(r.response ?? r.text)}`);
		};
		await sub(A, 'resources/subscribe', 'test://static-text');
		await sub(B, 'resources/subscribe', 'test://watched-resource');
		await sub(B, 'resources/unsubscribe', 'test://static-text');
		assert.deepEqual((await sessionRow(pg.url, s.id))?.subscriptions, { 'test://watched-resource': true });
		await sub(A, 'resources/unsubscribe', 'test://watched-resource');
		assert.deepEqual((await sessionRow(pg.url, s.id))?.subscriptions, {});
		assert.equal((await s.delete(A)).status, 200);
	});

	test('13. one reader per stream: a GET on B replaces the GET on A, which ends, and events go to B only', async () => {
		const s = new Session();
		await s.initialize(A);
		const gA = await s.openGet(A);
		assert.ok(gA instanceof SseStream, `GET on A: HTTP ${gA.status} ${gA.text ?? ''}`);
		const gB = await s.openGet(B);
		assert.ok(gB instanceof SseStream, `GET on B: HTTP ${gB.status} ${gB.text ?? ''}`);
		try {
			await reconfigure(A, ['test_image_content']);
			const onB = await readUntil(gB, (m) => m.method === 'notifications/tools/list_changed', 10000);
			assert.ok(onB.match, `no tools/list_changed on B, the stream's reader: ${JSON.stringify(onB.events)}`);
			const onA = await readUntil(gA, (m) => m.method === 'notifications/tools/list_changed', 6000);
			assert.equal(onA.match, null, `the replaced reader on A got the event too: ${JSON.stringify(onA.events)}`);
			assert.ok(onA.ended, "A's replaced connection did not end");
		} finally {
			gA.close();
			gB.close();
			await reconfigure(A, []);
		}
		assert.equal((await s.delete(A)).status, 200);
	});

	test('14. Last-Event-ID numbers out of range are 400, never a 503 to retry forever or a fresh stream', async () => {
		const s = new Session();
		await s.initialize(A);
		for (const id of ['0a1b2c3d4e5f-9223372036854775807', '0a1b2c3d4e5f-18446744073709551615', '0a1b2c3d4e5f-99999999999999999999999']) {
			for (const srv of [A, B]) {
				const r = await s.openGet(srv, id);
				assert.ok(!(r instanceof SseStream), `Last-Event-ID ${id} on ${srv.name}: a stream was opened`);
				assert.equal(r.status, 400, `Last-Event-ID ${id} on ${srv.name}: HTTP ${r.status} ${r.text ?? ''}`);
			}
		}
		assert.equal((await s.delete(A)).status, 200);
	});

	test('15. SIGTERM while a request waits for the session store: it is answered and the gateway exits 0', async () => {
		const C = await startReplica({ name: 'replica-c', dir, pgUrl: pg.url, keyFile });
		let locker = null;
		try {
			// three sessions whose rows are held: their DELETEs wait in
			// C's store (2 threads, 2 s statement timeout) longer than
			// any fixed bound would
			const sessions = [];
			for (let i = 0; i < 3; i++) {
				const s = new Session();
				await s.initialize(C);
				sessions.push(s);
			}
			const keys = sessions.map((s) => `'${crypto.createHash('sha256').update(s.id).digest('hex').slice(0, 32)}'`);
			locker = spawn(findPsql(), ['-X', '-w', '-q', '-d', pg.url, '-c', `BEGIN; SELECT 1 FROM mcp_sessions WHERE key IN (${keys.join(', ')}) FOR UPDATE; SELECT pg_sleep(8); COMMIT;`], { stdio: 'ignore' });
			await waitFor(async () => (await psql(pg.url, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(8)%' AND state = 'active' AND pid <> pg_backend_pid()`)) !== '0', 5000, 'the row locks');
			const dels = sessions.map((s) => s.delete(C));
			await sleep(300);
			C.terminate();
			for (const r of await Promise.all(dels))
				assert.ok([200, 503].includes(r.status), `a parked DELETE: HTTP ${r.status} ${r.text ?? ''}`);
			await C.stop(); // throws unless exit 0 with no sanitizer report
		} finally {
			locker?.kill();
			if (!C.exitStatus) await C.stop().catch(() => {});
		}
	});

	test('12. sessions.store = "memory": a session stays in its process (404 on B) and is not stored', async () => {
		const M = await replica('replica-memory', { SEXTANT_SESSIONS_STORE: 'memory' });
		try {
			const s = new Session();
			await s.initialize(M);
			toolNames(await s.call(M, 'tools/list'), 'tools/list on the memory replica');
			const r = await s.call(B, 'tools/list');
			assert.equal(r.status, 404, `a memory session on B: HTTP ${r.status} ${r.text ?? ''}`);
			assert.equal(await sessionRow(pg.url, s.id), null, 'a memory session was stored');
			assert.equal((await s.delete(M)).status, 200);
		} finally {
			await M.stop();
		}
	});

	test('9. round-robin through nginx: one session, 16 workers, 3000 mixed requests, never "session not found"', async () => {
		const front = await startRoundRobin({ name: 'replicas-rr', upstreams: [A, B] });
		try {
			const mcpCount = (srv) => metric(srv, 'sextant_http_requests_total', { route: '/mcp' });
			const before0 = [await mcpCount(A), await mcpCount(B)];
			const s = new Session();
			await s.initialize(front);
			const TOTAL = 3000;
			const WORKERS = 16;
			const problems = [];
			let next = 0;
			let sse = 0;
			const one = async (i) => {
				let r;
				let what;
				if (i % 10 === 9) {
					what = 'tools/call test_tool_with_progress';
					const token = `rr-${i}`;
					r = await s.call(front, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: token } });
					if (r.status === 200) {
						sse++;
						const progress = r.messages.filter(isProgress);
						const values = progress.map((m) => m.params.progress);
						if (!r.sse) problems.push(`${i} ${what}: answered as JSON, not SSE`);
						else if (JSON.stringify(values) !== '[0,50,100]' || !progress.every((m) => m.params.progressToken === token)) problems.push(`${i} ${what}: progress ${JSON.stringify(progress)}`);
						else if (!r.response?.result || r.messages.at(-1) !== r.response) problems.push(`${i} ${what}: incomplete: ${JSON.stringify(r.messages)}`);
					}
				} else {
					what = ['tools/list', 'ping', 'tools/call test_simple_text'][i % 3];
					r = what === 'tools/call test_simple_text' ? await s.call(front, 'tools/call', { name: 'test_simple_text', arguments: {} }) : await s.call(front, what);
					if (r.status === 200 && !r.response?.result) problems.push(`${i} ${what}: ${r.text}`);
				}
				if (r.status < 200 || r.status > 299) problems.push(`${i} ${what}: HTTP ${r.status} ${(r.text ?? '').slice(0, 200)}`);
				if (/session not found/i.test(r.text ?? JSON.stringify(r.messages ?? []))) problems.push(`${i} ${what}: session not found`);
			};
			const worker = async () => {
				while (next < TOTAL) {
					const i = next++;
					try {
						await one(i);
					} catch (e) {
						problems.push(`${i}: ${e.message}`);
					}
				}
			};
			const t0 = Date.now();
			await Promise.all(Array.from({ length: WORKERS }, worker));
			const elapsed = Date.now() - t0;
			const notFound = problems.filter((p) => /HTTP 404|session not found/.test(p)).length;
			assert.deepEqual(problems.slice(0, 10), [], `${problems.length} of ${TOTAL} requests failed (${notFound} "session not found") in ${elapsed} ms`);
			assert.equal(sse, TOTAL / 10, 'SSE calls completed');
			const served = [(await mcpCount(A)) - before0[0], (await mcpCount(B)) - before0[1]];
			assert.ok(served[0] > 1000 && served[1] > 1000, `/mcp requests served by A and B: ${served.join(', ')}`);
			const del = await s.delete(front);
			assert.equal(del.status, 200, `DELETE through nginx: HTTP ${del.status}`);
		} finally {
			await front.close();
		}
	});

	// A after a test that killed it: a new replica (new id) in its place.
	const reviveA = async () => {
		if (A.exitStatus) A = await replica(`replica-a${started.length}`);
	};

	test('5. kill A mid-call: B answers the call with one retryable error, and serves the session on', async () => {
		const s = new Session({ capabilities: ELICIT_CAPS });
		await s.initialize(B);
		const takeovers = await metric(B, 'sextant_session_takeovers_total');
		try {
			const { id, stream } = await s.openCall(A, 'test_elicitation', { message: 'A dies first' });
			const ask = await readUntil(stream, isElicitation);
			assert.ok(ask.match, `no elicitation/create on A's stream: ${JSON.stringify(ask.events)}`);
			const lastId = ask.matchEvent.id;
			assert.ok(eventId(lastId), `the elicitation event has no <stream>-<seq> id: ${JSON.stringify(ask.matchEvent)}`);
			const killedAt = Date.now();
			await A.kill({ check: true });
			stream.close();

			toolNames(await s.call(B, 'tools/list'), 'tools/list on B right after the kill');
			const get = await s.openGet(B, lastId);
			assert.ok(get instanceof SseStream, `GET on B with Last-Event-ID ${lastId}: HTTP ${get.status} ${get.text ?? ''}`);
			const rest = await drain(get, Math.max(1, killedAt + TAKEOVER_MS - Date.now()));
			get.close();
			assert.ok(rest.ended, `the dead replica's stream did not end within ${TAKEOVER_MS} ms of the kill: ${JSON.stringify(rest.events)}`);
			const answers = rest.messages.filter(isResponse(id));
			assert.equal(answers.length, 1, `answers to the dead call: ${JSON.stringify(rest.messages)}`);
			assert.equal(answers[0].error?.code, -32603, JSON.stringify(answers[0]));
			assert.equal(answers[0].error?.data?.retryable, true, JSON.stringify(answers[0]));
			assertIdsIncreasing([ask.matchEvent, ...rest.events], "the dead call's stream");

			const call = await s.call(B, 'tools/call', { name: 'test_simple_text', arguments: {} });
			assert.equal(call.status, 200, `a new call on B: HTTP ${call.status} ${call.text ?? ''}`);
			assert.ok(call.response?.result, JSON.stringify(call.response));
			const g = await s.openGet(B);
			assert.ok(g instanceof SseStream && g.status === 200, `the GET stream on B: HTTP ${g.status} ${g.text ?? ''}`);
			g.close();
			assert.equal((await metric(B, 'sextant_session_takeovers_total')) - takeovers, 1, 'takeovers counted on B');
			assert.equal((await s.delete(B)).status, 200);
			assert.equal((await s.call(B, 'tools/list')).status, 404, 'tools/list after DELETE');
		} finally {
			await reviveA();
		}
	});

	test("5b. kill A while it holds the session's GET stream: B resumes the stream", async () => {
		const s = new Session();
		await s.initialize(B);
		const g1 = await s.openGet(A);
		assert.ok(g1 instanceof SseStream, `GET on A: HTTP ${g1.status} ${g1.text ?? ''}`);
		try {
			await reconfigure(A, ['test_image_content']);
			const e1 = await readUntil(g1, (m) => m.method === 'notifications/tools/list_changed');
			assert.ok(e1.match && eventId(e1.matchEvent.id), `no tools/list_changed with an id on A's GET stream: ${JSON.stringify(e1.events)}`);
			await A.kill({ check: true });
			await reconfigure(B, ['test_audio_content']);
			const g2 = await s.openGet(B, e1.matchEvent.id);
			assert.ok(g2 instanceof SseStream, `GET on B with Last-Event-ID ${e1.matchEvent.id}: HTTP ${g2.status} ${g2.text ?? ''}`);
			try {
				const e2 = await readUntil(g2, (m) => m.method === 'notifications/tools/list_changed');
				assert.ok(e2.match, `the dead replica's GET stream did not resume on B: ${JSON.stringify(e2.events)}`);
				assertIdsIncreasing([e1.matchEvent, ...e2.events], 'the GET stream across A (killed) then B');
			} finally {
				g2.close();
			}
		} finally {
			g1.close();
			await reconfigure(B, []);
			await reviveA();
		}
		assert.equal((await s.delete(B)).status, 200);
	});

	test('10. idle sessions expire on every replica; one with a GET stream open does not', async () => {
		const idle = new Session();
		await idle.initialize(A);
		const kept = new Session();
		await kept.initialize(A);
		const g = await kept.openGet(B);
		assert.ok(g instanceof SseStream, `GET on B: HTTP ${g.status} ${g.text ?? ''}`);
		try {
			const t0 = Date.now();
			toolNames(await idle.call(B, 'tools/list'), 'tools/list on B');
			// the row, read without touching the session
			await waitFor(async () => (await sessionRow(pg.url, idle.id)) === null, (IDLE_TIMEOUT_S + 10) * 1000, 'the idle session swept');
			const gone = Date.now() - t0;
			assert.ok(gone >= (IDLE_TIMEOUT_S - 0.5) * 1000, `swept after ${gone} ms, before the idle timeout`);
			// kept was last used before idle: the sweep that took idle
			// would have taken it too, but for its open stream
			assert.ok(await sessionRow(pg.url, kept.id), 'the session with a GET stream open was swept with the idle one');
			for (const srv of [A, B]) {
				const r = await idle.call(srv, 'tools/list');
				assert.equal(r.status, 404, `the expired session on ${srv.name}: HTTP ${r.status}`);
			}
			await sleep(Math.max(0, t0 + (IDLE_TIMEOUT_S + 5) * 1000 - Date.now()));
			assert.ok(await sessionRow(pg.url, kept.id), 'the session with a GET stream open expired later');
			assert.equal(g.ended, false, 'the GET stream was ended');
			toolNames(await kept.call(A, 'tools/list'), 'tools/list on A for the session with the GET stream');
		} finally {
			g.close();
		}
		assert.equal((await kept.delete(A)).status, 200);
	});

	test('11. database down: resident sessions answer, others get 503 with Retry-After (never 404); back when it is', async () => {
		const s = new Session();
		await s.initialize(A);
		toolNames(await s.call(A, 'tools/list'), 'tools/list on A');
		assert.equal((await pgSh('stop', pg.dir)).code, 0, 'pg.sh stop');
		let restarted = false;
		try {
			toolNames(await s.call(A, 'tools/list'), 'a session resident on A while the database is down');
			const init = await new Session().at(A).post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'replicas-test', version: '1' } } });
			assert.equal(init.status, 503, `initialize with the database down: HTTP ${init.status} ${init.text ?? ''}`);
			assert.ok(init.headers['retry-after'], 'no Retry-After on the 503 of initialize');
			const onB = await s.call(B, 'tools/list');
			assert.equal(onB.status, 503, `a session B never saw, database down: HTTP ${onB.status} ${onB.text ?? ''}`);
			assert.ok(onB.headers['retry-after'], 'no Retry-After on the 503 of B');
			for (const srv of [A, B]) {
				const r = await statelessToolsList(srv);
				assert.equal(r.status, 200, `stateless tools/list on ${srv.name}, database down: HTTP ${r.status} ${r.text}`);
			}

			assert.equal((await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } })).code, 0, 'pg.sh start');
			restarted = true;
			const statuses = [];
			await waitFor(async () => {
				const r = await s.call(B, 'tools/list');
				statuses.push(r.status);
				return r.status === 200;
			}, 15000, 'the session served by B once the database is back');
			assert.ok(!statuses.includes(404), `B answered 404 for a live session: ${statuses.join(' ')}`);
			const fresh = new Session();
			await waitFor(async () => {
				try {
					await fresh.initialize(A);
					return true;
				} catch {
					return false;
				}
			}, 15000, 'initialize on A once the database is back');
			toolNames(await fresh.call(B, 'tools/list'), 'a new session on B');
			assert.equal((await fresh.delete(B)).status, 200);
		} finally {
			if (!restarted) await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
		}
		assert.equal((await s.delete(A)).status, 200);
	});
});

// verdicts.test.mjs - scenario tests for the verdicts an on-call engineer
// reads first: each scenario is put in through the OTLP receiver with one
// known cause, and the tools must name it (issue 18).  Here: a downstream
// database as the true bottleneck of a slow request.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { KIND, newId, span } from './lib/otlpjson.mjs';
import { MIN_MS, MS, ResBatch, callTool, startStack } from './lib/tooltest.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS;
const batch = new ResBatch();

function sp(service, t, t0, { id = newId(8), parent, name, kind = KIND.INTERNAL, at = 0, dur, attributes }) {
	batch.add(service, 'otlp', span({
		traceId: t, spanId: id, parentSpanId: parent, name, kind,
		startNs: t0 + BigInt(Math.round(at * 1e6)), durNs: BigInt(Math.round(dur * 1e6)), attributes,
	}));
	return id;
}

// shop: checkout (120 ms) calls payments over HTTP; payments spends 85 ms
// in one SELECT on its database.  The SELECT is the bottleneck: 85 of the
// request's 120 ms, two services down.
const SLOW = newId(16);
{
	const t0 = ago(5 * MIN_MS);
	const root = sp('v-checkout', SLOW, t0, { name: 'POST /checkout', kind: KIND.SERVER, dur: 120,
		attributes: { 'http.request.method': 'POST', 'http.route': '/checkout', 'http.response.status_code': 200 } });
	const cl = sp('v-checkout', SLOW, t0, { parent: root, name: 'POST', kind: KIND.CLIENT, at: 10, dur: 102,
		attributes: { 'http.request.method': 'POST', 'server.address': 'v-payments', 'http.response.status_code': 200 } });
	const srv = sp('v-payments', SLOW, t0, { parent: cl, name: 'POST /charge', kind: KIND.SERVER, at: 11, dur: 100,
		attributes: { 'http.request.method': 'POST', 'http.route': '/charge', 'http.response.status_code': 200 } });
	sp('v-payments', SLOW, t0, { parent: srv, name: 'SELECT orders', kind: KIND.CLIENT, at: 20, dur: 85,
		attributes: { 'db.system': 'postgresql', 'db.operation': 'SELECT', 'db.sql.table': 'orders' } });
}
// fast checkouts around it, so that the slow one stands out
for (let i = 0; i < 20; i++) {
	const t = newId(16);
	sp('v-checkout', t, ago((6 + i) * MIN_MS), { name: 'POST /checkout', kind: KIND.SERVER, dur: 15 + i % 5,
		attributes: { 'http.request.method': 'POST', 'http.route': '/checkout', 'http.response.status_code': 200 } });
}

let st;
const call = (name, args, opts) => callTool(st.mcp, name, args, opts);

before(async () => {
	st = await startStack({ name: 'verdicts', post: (url) => batch.post(url) });
});
beforeEach(() => st?.srv.assertAlive());
after(async () => {
	if (st) await st.stop();
});

describe('a downstream database is the bottleneck', () => {
	test('get_trace names the SELECT, two services down, as a share of the request', async () => {
		const { text, sc } = await call('get_trace', { trace_id: SLOW });
		assert.match(text, /^1\. \[OTLP\] v-payments: SELECT orders \(85ms\): self time 85ms, 70\.8% of the request/m);
		assert.match(text, /^\s*└─ \[OTLP\] v-payments: SELECT orders \(85ms\) ← SLOW/m);
		// the request's own code comes second, far behind
		assert.match(text, /^2\. \[OTLP\] v-checkout: POST \/checkout \(120ms\): self time 18ms, 15\.0% of the request/m);
		const top = sc.bottlenecks[0];
		assert.equal(top.service, 'v-payments');
		assert.equal(top.name, 'SELECT orders');
		assert.ok(Math.abs(top.self_ms - 85) < 1e-6, `self_ms ${top.self_ms}`);
	});
	test('query_traces for checkout says the time is downstream, in the database', async () => {
		const { text, sc } = await call('query_traces', { service: 'v-checkout', time_range: '1h', min_duration_ms: 100 });
		assert.equal(sc.traces.length, 1, 'only the slow checkout is over 100 ms');
		assert.match(text, /^Analysis: the largest latency contributor on the critical path is v-payments: SELECT orders \(self time 85ms, 70\.8% of its request\), downstream of v-checkout;/m);
		// asked about payments, the same SELECT is in payments itself
		const p = await call('query_traces', { service: 'v-payments', time_range: '1h' });
		assert.match(p.text, /is v-payments: SELECT orders \(self time 85ms, 70\.8% of its request\), in v-payments itself/);
	});
});

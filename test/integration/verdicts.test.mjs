// verdicts.test.mjs - scenario tests for the verdicts an on-call engineer
// reads first: each scenario is put in through the OTLP receiver with one
// known cause, and the tools must name it (issue 18): a downstream
// database as the true bottleneck of a slow request; errors judged by
// OpenTelemetry's rule (failed logins are client errors, a 200 with span
// status ERROR an error, a client's 404 an error), the same in
// list_services, query_metrics and query_spans, over raw spans and over
// settled rollups; one error in 5,000 calls; health verdicts.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { KIND, STATUS, newId, span } from './lib/otlpjson.mjs';
import { psql } from './lib/pg.mjs';
import { CONFORMANCE_CONFIG, runSextant } from './lib/server.mjs';
import { HOUR_MS, MIN_MS, MS, ResBatch, callTool, startStack } from './lib/tooltest.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS;
const batch = new ResBatch();

function sp(service, t, t0, { id = newId(8), parent, name, kind = KIND.INTERNAL, at = 0, dur, attributes, status, source = 'otlp' }) {
	batch.add(service, source, span({
		traceId: t, spanId: id, parentSpanId: parent, name, kind,
		startNs: t0 + BigInt(Math.round(at * 1e6)), durNs: BigInt(Math.round(dur * 1e6)), attributes, status,
	}));
	return id;
}
const httpSrv = (route, code) => ({ 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': code });
const grpcSrv = (method, code) => ({ 'rpc.system': 'grpc', 'rpc.service': 'v.Auth', 'rpc.method': method, 'rpc.grpc.status_code': code });

// v-auth (gRPC, eBPF): 300 logins over the last 40 minutes and again three
// hours ago (rolled up): 30 UNAUTHENTICATED (a client error: failed
// logins), 3 INTERNAL (errors).
// v-web (HTTP, OTLP): 200 GETs the same way: 20 answered 404 (client
// errors), 4 answered 503 (errors), 2 answered 200 with span status ERROR
// (errors); and a CLIENT span answered 404 (the client's call failed: an
// error of the span, not a request).
// v-rare: one 500 in 5,000 GETs.
let T503; // a request answered 503 without span status ERROR
const WINDOWS = [{ base: 2 * MIN_MS, name: 'raw' }, { base: 3 * HOUR_MS, name: 'rolled up' }];
for (const { base } of WINDOWS) {
	for (let i = 0; i < 300; i++) {
		const code = i < 30 ? 16 : i < 33 ? 13 : 0;
		sp('v-auth', newId(16), ago(base + (i % 38) * MIN_MS + i * 7), { name: 'v.Auth/Login', kind: KIND.SERVER, dur: 40 + (i % 9), attributes: grpcSrv('Login', code), source: 'ebpf' });
	}
	for (let i = 0; i < 200; i++) {
		const code = i < 20 ? 404 : i < 24 ? 503 : 200;
		const status = i >= 24 && i < 26 ? { code: STATUS.ERROR, message: 'template failed' } : undefined;
		const t = newId(16);
		if (i === 20 && base === WINDOWS[0].base) T503 = t;
		const r = sp('v-web', t, ago(base + (i % 38) * MIN_MS + i * 11), { name: 'GET /page', kind: KIND.SERVER, dur: 10 + (i % 7), attributes: httpSrv('/page', code), status });
		if (i === 0) sp('v-web', t, ago(base + i * 11), { parent: r, name: 'GET', kind: KIND.CLIENT, at: 1, dur: 3, attributes: { 'http.request.method': 'GET', 'server.address': 'cdn.example', 'http.response.status_code': 404 } });
	}
}
for (let i = 0; i < 5000; i++) {
	sp('v-rare', newId(16), ago(2 * MIN_MS + (i % 38) * MIN_MS + i), { name: 'GET /busy', kind: KIND.SERVER, dur: 5 + (i % 3), attributes: httpSrv('/busy', i === 77 ? 500 : 200) });
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

// v-dual: 100 GET /same seen by eBPF and OTLP alike (eBPF's durations
// 0.05 ms longer, at the socket); 100 GET /sampled that an SDK sampling
// one in two saw 50 of.
for (let i = 0; i < 100; i++) {
	const t0 = ago(3 * MIN_MS + i * 300);
	const id = newId(8), t = newId(16);
	for (const source of ['ebpf', 'otlp']) {
		sp('v-dual', t, t0, { id, name: 'GET /same', kind: KIND.SERVER, dur: 10 + (i % 10) + (source === 'ebpf' ? 0.05 : 0), attributes: httpSrv('/same', 200), source });
	}
	const t2 = newId(16), id2 = newId(8);
	for (const source of i % 2 ? ['ebpf', 'otlp'] : ['ebpf']) {
		sp('v-dual', t2, t0, { id: id2, name: 'GET /sampled', kind: KIND.SERVER, dur: 20 + (i % 10), attributes: httpSrv('/sampled', 200), source });
	}
}

// Baselines: v-base served 100 calls of 10 ms 35-55 minutes ago and 200 of
// 20 ms in the last 25 minutes; v-new only lately, v-gone only before.
for (let i = 0; i < 100; i++) sp('v-base', newId(16), ago(35 * MIN_MS + i * 12000), { name: 'GET /b', kind: KIND.SERVER, dur: 10, attributes: httpSrv('/b', 200) });
for (let i = 0; i < 200; i++) sp('v-base', newId(16), ago(3 * MIN_MS + i * 6000), { name: 'GET /b', kind: KIND.SERVER, dur: 20, attributes: httpSrv('/b', i < 4 ? 500 : 200) });
for (let i = 0; i < 10; i++) sp('v-new', newId(16), ago(5 * MIN_MS + i * 1000), { name: 'GET /n', kind: KIND.SERVER, dur: 5, attributes: httpSrv('/n', 200) });
for (let i = 0; i < 10; i++) sp('v-gone', newId(16), ago(40 * MIN_MS + i * 1000), { name: 'GET /g', kind: KIND.SERVER, dur: 5, attributes: httpSrv('/g', 200) });

let st;
const call = (name, args, opts) => callTool(st.mcp, name, args, opts);

// Each window's range for the tools: the last 45 minutes (raw spans, and
// minute rollups once settled), and 2.5 to 3.8 hours ago after the rollup
// refresh (hour and minute rows).
const rangeOf = (w) => (w.name === 'raw'
	? { time_range: '45m' }
	: { from: new Date(NOW_MS - 4 * HOUR_MS).toISOString(), to: new Date(NOW_MS - 2.5 * HOUR_MS).toISOString() });

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

describe('errors by OpenTelemetry\'s rule, the same in every tool', () => {
	before(async () => {
		// the older window settled into rollups: marks aged, the
		// janitor's refresh run
		await psql(st.pg.url, 'UPDATE span_rollup_dirty SET slot = slot - 100; UPDATE span_rollup_minute_dirty SET slot = slot - 100');
		const r = runSextant(['maintain', '--config', CONFORMANCE_CONFIG], { env: { DATABASE_URL: st.pg.url } });
		assert.equal(r.code, 0, `sextant maintain: ${r.stderr}`);
		assert.ok(Number(await psql(st.pg.url, "SELECT count(*) FROM span_rollup WHERE service_name IN ('v-auth', 'v-web')")) > 0, 'no hour rolled up');
	});

	for (const w of WINDOWS) {
		test(`failed logins are client errors, INTERNAL an error (${w.name})`, async () => {
			const { text, sc } = await call('query_metrics', { service: 'v-auth', ...rangeOf(w) });
			if (w.name !== 'raw') assert.equal(sc.rollup, true, 'served by rollups');
			const row = sc.grpc.find((r) => r.method === 'v.Auth/Login');
			assert.equal(row.requests, 300);
			assert.equal(row.errors, 3);
			assert.equal(row.client_errors, 30);
			assert.deepEqual(row.error_codes, [{ code: 'INTERNAL', count: 3 }]);
			assert.deepEqual(row.client_error_codes, [{ code: 'UNAUTHENTICATED', count: 30 }]);
			assert.match(text, /Method: v\.Auth\/Login, Requests: 300, [^\n]*, Errors: 1\.0% \(INTERNAL ×3\); client errors: 10\.0% \(UNAUTHENTICATED ×30\): DEGRADED$/m, text);
			assert.match(text, /most client errors gRPC v\.Auth\/Login: 30 client errors in 300 calls \(10\.0%, mostly UNAUTHENTICATED\)/, text);
			// list_services agrees, and judges: 1% errors and 10% client
			// errors: DEGRADED (any error, and client errors at 10%)
			const ls = await call('list_services', { ...rangeOf(w) });
			const svc = ls.sc.services.find((v) => v.service === 'v-auth');
			assert.equal(svc.requests, 300);
			assert.equal(svc.errors, 3);
			assert.equal(svc.client_errors, 30);
			assert.equal(svc.health, 'DEGRADED');
			// query_spans finds exactly these
			const e = await call('query_spans', { service_name: 'v-auth', status: 'error', limit: 1, ...rangeOf(w) });
			assert.equal(e.sc.total, 3);
			assert.match(e.text, /\| error INTERNAL \|/);
			const c = await call('query_spans', { service_name: 'v-auth', status: 'client_error', limit: 1, ...rangeOf(w) });
			assert.equal(c.sc.total, 30);
			assert.match(c.text, /\| client error UNAUTHENTICATED \|/);
		});

		test(`404s are client errors, 503s and a 200 with status ERROR errors (${w.name})`, async () => {
			const { text, sc } = await call('query_metrics', { service: 'v-web', ...rangeOf(w) });
			const row = sc.http.find((r) => r.route === '/page');
			assert.equal(row.requests, 200);
			assert.equal(row.errors, 6);
			assert.equal(row.client_errors, 20);
			assert.deepEqual(row.error_codes, [{ code: '503', count: 4 }, { code: '200 with status ERROR', count: 2 }]);
			assert.match(text, /Route: \/page \(GET\), Requests: 200, [^\n]*, Errors: 3\.0% \(503 ×4, 200 with status ERROR ×2\); client errors: 10\.0% \(404 ×20\): DEGRADED$/m, text);
			const ls = await call('list_services', { ...rangeOf(w) });
			const svc = ls.sc.services.find((v) => v.service === 'v-web');
			assert.equal(svc.errors, 6);
			assert.equal(svc.client_errors, 20);
			assert.equal(svc.health, 'DEGRADED');
			assert.match(ls.text, /DEGRADED: [^\n]*v-web \(errors 3\.0% \(503 ×4, 200 with status ERROR ×2\), client errors 10\.0% \(404 ×20\)\)/, ls.text);
			// the span that is not a request: the client's 404 failed
			const e = await call('query_spans', { service_name: 'v-web', status: 'error', limit: 20, ...rangeOf(w) });
			assert.equal(e.sc.total, 7, '4 × 503, 2 × ERROR, the client 404');
			assert.ok(e.sc.spans.some((x) => x.name === 'GET' && x.http_status_code === 404 && x.outcome === 'error'));
		});
	}

	test('get_trace: a 503 without span status ERROR is an error span, the end of its chain', async () => {
		const { text, sc } = await call('get_trace', { trace_id: T503 });
		assert.equal(sc.error_spans, 1, text);
		assert.match(text, /^### Error chain\n[^#]*v-web: GET \/page \([\d.]+ms\) ERROR 503/m, text);
	});

	test('one error in 5,000 calls keeps its two digits and degrades the service', async () => {
		const { text, sc } = await call('query_metrics', { service: 'v-rare', time_range: '45m' });
		const row = sc.http[0];
		assert.equal(row.requests, 5000);
		assert.equal(row.errors, 1);
		assert.match(text, /Errors: 0\.020% \(500 ×1\): DEGRADED$/m, text);
		assert.doesNotMatch(text, /Errors: 0(\.0+)?%/);
		const ls = await call('list_services', { time_range: '45m' });
		assert.equal(ls.sc.services.find((v) => v.service === 'v-rare').health, 'DEGRADED');
	});
});

describe('one table when the sources agree', () => {
	test('identical eBPF and OTLP rows are one [eBPF+OTLP] row; disagreeing ones stay apart and Analysis names them', async () => {
		const { text, sc } = await call('query_metrics', { service: 'v-dual', time_range: '45m' });
		assert.match(text, /^HTTP Metrics \[eBPF\+OTLP\]:\nRoute: \/same \(GET\), Requests: 100, /m, text);
		assert.match(text, /^HTTP Metrics \[eBPF\]:\nRoute: \/sampled \(GET\), Requests: 100, /m, text);
		assert.match(text, /^HTTP Metrics \[OTLP\]:\nRoute: \/sampled \(GET\), Requests: 50, /m, text);
		assert.equal((text.match(/Route: \/same/g) ?? []).length, 1, 'the agreeing route is printed once');
		assert.match(text, /sources disagree on GET \/sampled \(eBPF 100 req, [^)]*vs OTLP 50 req/, text);
		// the whole service counts each call once: eBPF's 200
		assert.match(text, /^HTTP, whole service \[eBPF\]: 200 requests /m, text);
		// structured content keeps both sources, the pair marked
		const same = sc.http.filter((r) => r.route === '/same');
		assert.deepEqual(same.map((r) => [r.source, r.requests, r.merged]).sort(), [['ebpf', 100, true], ['otlp', 100, true]]);
		assert.ok(sc.http.filter((r) => r.route === '/sampled').every((r) => r.merged === false));
	});
});

describe('baselines', () => {
	test('list_services compare_to previous: each service\'s change, new ones, and those gone', async () => {
		const { text, sc } = await call('list_services', { time_range: '30m', compare_to: 'previous', limit: 1000 });
		assert.equal(Date.parse(sc.baseline.to), Date.parse(sc.time_range.from), 'the baseline ends where the range starts');
		assert.equal(Date.parse(sc.baseline.to) - Date.parse(sc.baseline.from), 30 * MIN_MS);
		const b = sc.services.find((v) => v.service === 'v-base');
		assert.equal(b.requests, 200);
		assert.equal(b.baseline.requests, 100);
		assert.equal(b.change.requests_change_pct, 100);
		assert.ok(Math.abs(b.change.error_rate_change_pp - 2) < 1e-9, `errors +2 pp: ${b.change.error_rate_change_pp}`);
		assert.ok(Math.abs(b.change.p95_change_pct - 100) < 2, `P95 doubled: ${b.change.p95_change_pct}`);
		assert.match(text, /\| v-base \|[^\n]*\| requests \+100%, errors \+2\.0 pp, P95 \+(99|100|101)(\.\d)?% \|$/m, text);
		const n = sc.services.find((v) => v.service === 'v-new');
		assert.equal(n.change.new, true);
		assert.match(text, /\| v-new \|[^\n]*\| new \|$/m);
		assert.match(text, /requests then, none now: [^\n]*v-gone/, text);
		// query_metrics: the row, the whole service and the rise named
		const q = await call('query_metrics', { service: 'v-base', time_range: '30m', compare_to: 'previous' });
		const row = q.sc.http[0];
		assert.equal(row.baseline.requests, 100);
		assert.equal(row.change.requests_change_pct, 100);
		assert.match(q.text, /^Route: \/b \(GET\), Requests: 200, [^\n]*; vs baseline: requests \+100%, errors \+2\.0 pp, P95 \+(99|100|101)(\.\d)?%: DEGRADED$/m, q.text);
		assert.match(q.text, /^HTTP, whole service \[OTLP\]: 200 requests [^\n]*; vs baseline: requests \+100%/m, q.text);
		assert.match(q.text, /^Baseline [^\n]*\(compare_to "previous"\): largest P95 rise GET \/b \+(99|100|101)(\.\d)?% \(10ms, now 20ms\) \[OTLP\]; largest error-rate rise GET \/b \+2\.0 pp \(0%, now 2\.0%\)/m, q.text);
		const qb = await call('query_metrics', { service: 'v-base', compare_to: '-' }, { expectError: true });
		assert.match(qb.text, /compare_to "-" is not understood/);
		const bad = await call('list_services', { compare_to: 'last tuesday' }, { expectError: true });
		assert.match(bad.text, /compare_to "last tuesday" is not understood: use "previous"/);
	});
});

describe('a service as people name it', () => {
	test('one obvious match resolves, and the answer says from what; none or two do not', async () => {
		const m = await call('query_metrics', { service: 'the web service', time_range: '45m' });
		assert.equal(m.sc.service, 'v-web');
		assert.match(m.text, /^service: v-web \(from "the web service"\)$/m, m.text);
		const t = await call('query_traces', { service: 'V Web', time_range: '45m', max_traces: 1 });
		assert.match(t.text, /^service: v-web \(from "V Web"\)$/m, t.text);
		const q = await call('query_spans', { service_name: 'V_WEB', limit: 1, time_range: '45m' });
		assert.match(q.text, /^service: v-web \(from "V_WEB"\)$/m, q.text);
		assert.equal(q.sc.spans[0].service, 'v-web');
		// the exact name is taken as it is, without a note
		const e = await call('query_metrics', { service: 'v-web', time_range: '45m' });
		assert.doesNotMatch(e.text, /^service: /m);
		// status classes in words
		const ce = await call('query_metrics', { service: 'v-web', time_range: '45m', status_code_range: 'client errors' });
		assert.equal(ce.sc.http.find((r) => r.route === '/page').requests, 20);
		const se = await call('query_metrics', { service: 'v-web', time_range: '45m', status_code_range: 'server errors' });
		assert.equal(se.sc.http.find((r) => r.route === '/page').requests, 4);
		// however written: case, dashes, singular
		for (const w of ['Server Errors', 'server-error', '5XX']) {
			const x = await call('query_metrics', { service: 'v-web', time_range: '45m', status_code_range: w });
			assert.equal(x.sc.http.find((r) => r.route === '/page').requests, 4, w);
		}
		const bad = await call('query_metrics', { service: 'v-web', time_range: '45m', status_code_range: 'timeouts' }, { expectError: true });
		assert.match(bad.text, /status_code_range "timeouts" is not understood: use "5xx" \(or "errors"\)/, bad.text);
		// a word of no service, or of several: "did you mean"
		const none = await call('query_metrics', { service: 'v-paymnets', time_range: '45m' }, { expectError: true });
		assert.match(none.text, /did you mean v-payments\?/, none.text);
	});
});

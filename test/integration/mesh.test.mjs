// mesh.test.mjs - get_mesh_graph (issue 20) on a known topology put in
// through the OTLP receiver: sync HTTP and gRPC calls, an async queue, a
// database and an external API nobody instrumented (leaves), a service
// whose spans eBPF saw as well (the same span ids: each call once), a call
// crossing namespaces.  Edges, counts, error rates and percentiles are
// compared with SQL over the same spans; health statuses sit at the
// tolerance boundaries (10% errors UNHEALTHY, 0.5% DEGRADED, 10% client
// errors DEGRADED, 9% HEALTHY); availability and topUnhealthy as Kiali
// computes them; a day read from the edge rollups (the same topology
// three hours back, refreshed by `sextant maintain`) agrees with SQL too.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { KIND, STATUS, newId, span } from './lib/otlpjson.mjs';
import { psql } from './lib/pg.mjs';
import { CONFORMANCE_CONFIG, runSextant } from './lib/server.mjs';
import { HOUR_MS, MIN_MS, MS, ResBatch, callRefused, callTool, close, startStack } from './lib/tooltest.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS;
const batch = new ResBatch();
const RES = {
	frontend: { 'service.namespace': 'shop', 'service.version': 'v1' },
	checkout: { 'service.namespace': 'shop', 'service.version': 'v1', 'k8s.deployment.name': 'checkout-deploy' },
	payments: { 'service.namespace': 'money', 'service.version': 'v2' },
	mailer: { 'service.namespace': 'shop', 'service.version': 'v1' },
	auth: { 'service.namespace': 'shop', 'service.version': 'v1' },
	search: { 'service.namespace': 'shop', 'service.version': 'v1' },
};

let shift = 0; // ms before now the topology being written starts
function sp(service, t, { id = newId(8), parent, kind, at, dur, attributes, status, sources = ['otlp'] }) {
	at += shift;
	for (const source of sources) {
		batch.add(service, source, span({
			traceId: t, spanId: id, parentSpanId: parent, name: `${service} op`, kind,
			startNs: ago(at), durNs: BigInt(Math.round(dur * 1e6)), attributes, status,
		}), RES[service]);
	}
	return id;
}
const http = (code) => ({ 'http.request.method': 'GET', 'http.route': '/x', 'http.response.status_code': code });
const grpc = (code) => ({ 'rpc.system': 'grpc', 'rpc.service': 'pay.Pay', 'rpc.method': 'Charge', 'rpc.grpc.status_code': code });

// A call from caller to callee: the CLIENT span, and the callee's SERVER
// span under it.
function call(caller, callee, i, { attributes, dur, sources, base = 30000 }) {
	const t = newId(16), at = base + i * 997;
	const c = sp(caller, t, { kind: KIND.CLIENT, at, dur: dur + 1, attributes });
	sp(callee, t, { parent: c, kind: KIND.SERVER, at: at - 0.5, dur, attributes, sources });
}

// The topology, now and again three hours back (for the rollups).
for (shift of [0, 3 * HOUR_MS]) {
	// frontend -> checkout, HTTP: 200 calls, 1 answered 503 (0.5%: DEGRADED)
	for (let i = 0; i < 200; i++) call('frontend', 'checkout', i, { attributes: http(i === 7 ? 503 : 200), dur: 10 + (i % 40) });
	// frontend -> auth: 100 calls, 10 answered 401 (client errors, 10%: DEGRADED)
	for (let i = 0; i < 100; i++) call('frontend', 'auth', i, { attributes: http(i < 10 ? 401 : 200), dur: 3 + (i % 7) });
	// frontend -> search: 100 calls, 9 answered 404 (9%: HEALTHY)
	for (let i = 0; i < 100; i++) call('frontend', 'search', i, { attributes: http(i < 9 ? 404 : 200), dur: 20 + (i % 13) });
	// checkout -> payments (namespace money), gRPC: 100 calls, 10 INTERNAL
	// (10%: UNHEALTHY); payments' spans seen by eBPF too
	for (let i = 0; i < 100; i++) call('checkout', 'payments', i, { attributes: grpc(i % 10 === 3 ? 13 : 0), dur: 30 + (i % 50), sources: ['otlp', 'ebpf'] });
	// checkout -> its database: 100 SELECTs, 2 failed (span status ERROR)
	for (let i = 0; i < 100; i++) {
		sp('checkout', newId(16), { kind: KIND.CLIENT, at: 40000 + i * 991, dur: 2 + (i % 5),
			attributes: { 'db.system': 'postgresql', 'db.name': 'orders', 'db.operation': 'SELECT' },
			status: i < 2 ? { code: STATUS.ERROR, message: 'deadlock' } : undefined });
	}
	// checkout -> an external API: 20 calls
	for (let i = 0; i < 20; i++) {
		sp('checkout', newId(16), { kind: KIND.CLIENT, at: 50000 + i * 1013, dur: 80 + i, attributes: { ...http(200), 'server.address': 'api.stripe.com' } });
	}
	// checkout -> mailer through a queue: 50 messages (async)
	for (let i = 0; i < 50; i++) {
		const t = newId(16), at = 60000 + i * 1009;
		const p = sp('checkout', t, { kind: KIND.PRODUCER, at, dur: 1, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'mail' } });
		sp('mailer', t, { parent: p, kind: KIND.CONSUMER, at: at - 200, dur: 15 + (i % 9), attributes: { 'messaging.system': 'kafka' } });
	}
}
shift = 0;
// an hour ago: outside a 10-minute rateInterval
for (let i = 0; i < 10; i++) call('frontend', 'checkout', i, { attributes: http(500), dur: 5, base: 60 * MIN_MS });

let st;
const tool = (args, opts) => callTool(st.mcp, 'get_mesh_graph', args, opts);

// The edges by SQL over the OTLP spans alone (every eBPF span here has an
// OTLP twin): callee spans under a caller span of another service, and
// caller spans with no callee; outcome by sextant_span_outcome on the
// measured span.
const edgesSql = (interval) => `
WITH s AS (SELECT *, sextant_span_outcome(kind, status_code, http_status_code, rpc_grpc_status_code) AS o
	FROM spans WHERE source = 'otlp' AND start_time >= now() - interval '${interval}'),
e AS (SELECT p.service_name AS src, c.service_name AS dst, c.o, c.duration_ns
	FROM s c JOIN s p ON p.trace_id = c.trace_id AND p.span_id = c.parent_span_id
	WHERE (c.kind, p.kind) IN ((2, 3), (5, 4)) AND p.service_name <> c.service_name
	UNION ALL
	SELECT p.service_name, coalesce(p.attributes ->> 'server.address', p.db_system || ' ' || (p.attributes ->> 'db.name')), p.o, p.duration_ns
	FROM s p WHERE p.kind IN (3, 4) AND NOT EXISTS (SELECT 1 FROM s c WHERE c.trace_id = p.trace_id AND c.parent_span_id = p.span_id))
SELECT json_agg(x) FROM (SELECT src, dst, count(*) AS n, count(*) FILTER (WHERE o = 1) AS e, count(*) FILTER (WHERE o = 2) AS ce,
	percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ns) / 1e6 AS p50,
	percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) / 1e6 AS p95
	FROM e GROUP BY 1, 2) x`;

before(async () => {
	st = await startStack({
		name: 'mesh',
		env: { SEXTANT_TOOLS_ENABLED_SETS: 'mesh,spans,query' },
		post: (url) => batch.post(url),
	});
});
beforeEach(() => st?.srv.assertAlive());
after(async () => {
	if (st) await st.stop();
});

describe('get_mesh_graph', () => {
	test('edges, counts, error rates and percentiles agree with SQL', async () => {
		const { sc } = await tool({ graphType: 'service' });
		const want = JSON.parse(await psql(st.pg.url, edgesSql('10 minutes')));
		assert.equal(sc.traffic.length, want.length, JSON.stringify(sc.traffic.map((e) => `${e.source}->${e.target}`)));
		assert.equal(sc.total_edges, 7);
		// labels carry the namespace: the graph spans two
		const strip = (l) => l.replace(/^[a-z]+\//, '');
		for (const w of want) {
			const e = sc.traffic.find((x) => strip(x.source) === w.src && strip(x.target) === w.dst);
			assert.ok(e, `edge ${w.src} -> ${w.dst} missing`);
			assert.equal(e.requests, w.n, `${w.src} -> ${w.dst} requests`);
			assert.equal(e.errors, w.e, `${w.src} -> ${w.dst} errors`);
			assert.equal(e.client_errors, w.ce, `${w.src} -> ${w.dst} client errors`);
			close(e.p50_ms, w.p50, `${w.src} -> ${w.dst} P50`, { rel: 0.005 });
			close(e.p95_ms, w.p95, `${w.src} -> ${w.dst} P95`, { rel: 0.005 });
		}
		// eBPF saw payments' 100 calls too: stored twice, counted once
		assert.equal(Number(await psql(st.pg.url, "SELECT count(*) FROM spans WHERE service_name = 'payments' AND start_time > now() - interval '10 minutes'")), 200);
		const pay = sc.traffic.find((x) => x.target === 'money/payments');
		assert.equal(pay.requests, 100);
		assert.equal(pay.protocol, 'grpc');
		assert.equal(pay.source, 'shop/checkout');
		const q = sc.traffic.find((x) => x.target === 'shop/mailer');
		assert.equal(q.async, true);
		assert.equal(q.protocol, 'messaging');
		const db = sc.nodes.find((n) => n.name === 'postgresql orders');
		assert.equal(db.leaf, true);
		assert.ok(sc.nodes.some((n) => n.name === 'api.stripe.com' && n.leaf));
	});

	test('health at the tolerance boundaries, unhealthy first in the text', async () => {
		const { text, sc } = await tool({ graphType: 'service', rateInterval: '10m' });
		const h = (src, dst) => sc.traffic.find((x) => x.source === `shop/${src}` && x.target.endsWith(dst)).health;
		assert.equal(h('checkout', 'payments'), 'UNHEALTHY'); // 10% errors
		assert.equal(h('frontend', 'checkout'), 'DEGRADED'); // 0.5% errors
		assert.equal(h('frontend', 'auth'), 'DEGRADED'); // 10% client errors
		assert.equal(h('frontend', 'search'), 'HEALTHY'); // 9% client errors
		assert.equal(h('checkout', 'postgresql orders'), 'DEGRADED'); // 2% failed queries
		assert.equal(h('checkout', 'mailer'), 'HEALTHY');
		const lines = text.split('\n').filter((l) => l.includes(' -> '));
		assert.match(lines[0], /^shop\/checkout -> money\/payments {2}gRPC {2}[\d.]+ req\/min {2}10\.0% errors {2}P95 [\d.]+ms {2}UNHEALTHY$/, text);
		assert.match(text, /^shop\/frontend -> shop\/auth {2}HTTP {2}10 req\/min {2}0% errors {2}10\.0% client errors {2}P95 [\d.]+ms {2}DEGRADED$/m, text);
		assert.match(text, /^shop\/checkout -> shop\/mailer {2}messaging async {2}5 req\/min/m, text);
		const firstHealthy = lines.findIndex((l) => l.endsWith('HEALTHY') && !l.endsWith('UNHEALTHY'));
		assert.ok(lines.slice(firstHealthy).every((l) => / HEALTHY$/.test(l)), text);
	});

	test("Kiali's mesh health summary: availability, statuses, topUnhealthy", async () => {
		const { text, sc } = await tool({ graphType: 'service' });
		const s = sc.health;
		// entities: frontend (DEGRADED: a 503 out), checkout (DEGRADED),
		// payments (UNHEALTHY), mailer and search (HEALTHY), auth
		// (DEGRADED); leaves are none
		// only the graph's kind: zeros for apps and workloads would say
		// there are none
		assert.deepEqual(s.entityCounts, { services: { total: 6, healthy: 2, degraded: 3, unhealthy: 1, notReady: 0 } });
		assert.equal(s.overallStatus, 'DEGRADED'); // 1 unhealthy, not more than half
		close(s.availability, (2 + 0.5 * 3) / 6 * 100, 'availability');
		assert.equal(s.namespaceCount, 2);
		assert.equal(s.namespaceSummary.money.status, 'UNHEALTHY');
		close(s.namespaceSummary.money.availability, 0, 'money availability', { abs: 1e-9 });
		// shop's rate: each entity's failed share of its calls, summed
		const shop = (1 + 10 + 9) / 400 + (1 + 10 + 2) / (200 + 100 + 100 + 20 + 50) + 10 / 100 + 9 / 100;
		close(s.namespaceSummary.shop.errorRate, shop, 'shop errorRate');
		assert.equal(s.namespaceSummary.shop.status, 'UNHEALTHY'); // rate > 0.05
		close(s.totalErrorRate, shop + 0.1, 'totalErrorRate');
		assert.equal(s.topUnhealthy.length, 1);
		assert.equal(s.topUnhealthy[0].name, 'payments');
		assert.equal(s.topUnhealthy[0].namespace, 'money');
		close(s.topUnhealthy[0].errorRate, 0.1, 'payments errorRate');
		assert.equal(s.rateInterval, '10m');
		assert.match(text, /^## Mesh graph \(service, last 10m\): 8 nodes, 7 edges; DEGRADED, availability 58\.3%$/m, text);
		assert.match(text, /^Unhealthy: money\/payments \(10\.0% of calls failed\)\.$/m, text);
	});

	test('graph types and the namespace filter', async () => {
		const v = await tool({});
		assert.equal(v.sc.graphType, 'versionedApp');
		assert.ok(v.sc.traffic.some((e) => e.source === 'shop/checkout (v1)' && e.target === 'money/payments (v2)'));
		assert.equal(v.sc.nodes.find((n) => n.name === 'money/payments (v2)')?.version, 'v2');
		const w = await tool({ graphType: 'workload' });
		assert.ok(w.sc.traffic.some((e) => e.source === 'shop/checkout-deploy' && e.target === 'money/payments'), JSON.stringify(w.sc.traffic));
		const m = await tool({ namespaces: 'money', graphType: 'app' });
		assert.deepEqual(m.sc.namespaces, ['money']);
		assert.equal(m.sc.traffic.length, 1);
		assert.equal(m.sc.traffic[0].target, 'money/payments');
		const none = await tool({ namespace: 'nowhere' });
		assert.equal(none.sc.traffic.length, 0);
		assert.match(none.text, /No calls between services/);
	});

	test('bad arguments are refused with what to give', async () => {
		const r = await callRefused(st.mcp, 'get_mesh_graph', { graphType: 'pods' });
		assert.match(r, /graphType/);
		const t = await tool({ rateInterval: 'soonish' }, { expectError: true });
		assert.match(t.text, /^rateInterval: /);
	});

	test('a day from the edge rollups agrees with SQL over the spans', async () => {
		// the older copy settled into rollups: marks aged, the janitor's
		// refresh run (as verdicts.test does)
		await psql(st.pg.url, 'UPDATE span_rollup_dirty SET slot = slot - 100; UPDATE span_rollup_minute_dirty SET slot = slot - 100');
		const r = runSextant(['maintain', '--config', CONFORMANCE_CONFIG], { env: { DATABASE_URL: st.pg.url } });
		assert.equal(r.code, 0, `sextant maintain: ${r.stderr}`);
		assert.ok(Number(await psql(st.pg.url, 'SELECT count(*) FROM edge_rollup')) > 0, 'no hour of edges rolled up');
		const { text, sc } = await tool({ graphType: 'service', rateInterval: '24h' });
		assert.match(text, /P50 and P95 from the minute and hourly rollups/);
		const want = JSON.parse(await psql(st.pg.url, edgesSql('24 hours')));
		assert.equal(sc.traffic.length, want.length);
		for (const w of want) {
			const e = sc.traffic.find((x) => x.source.replace(/^[a-z]+\//, '') === w.src && x.target.replace(/^[a-z]+\//, '') === w.dst);
			assert.ok(e, `edge ${w.src} -> ${w.dst} missing`);
			assert.equal(e.requests, w.n, `${w.src} -> ${w.dst} requests`);
			assert.equal(e.errors, w.e, `${w.src} -> ${w.dst} errors`);
			assert.equal(e.client_errors, w.ce, `${w.src} -> ${w.dst} client errors`);
			close(e.p50_ms, w.p50, `${w.src} -> ${w.dst} P50`, { rel: 0.005 });
			close(e.p95_ms, w.p95, `${w.src} -> ${w.dst} P95`, { rel: 0.005 });
		}
		// twice the topology, and the 10 calls of an hour ago
		assert.equal(sc.traffic.find((x) => x.target === 'money/payments').requests, 200);
		assert.equal(sc.traffic.find((x) => x.target === 'shop/checkout').requests, 410);
	});
});

// telemetry.test.mjs - the plumbing tools over raw OTLP data,
// query_telemetry_metrics and query_telemetry_spans, called through the
// official MCP SDK client (which checks structuredContent against each
// outputSchema) over metric points and spans posted to the OTLP receiver as
// OTLP/JSON.  Aggregates are compared with SQL run here (psql) or with
// values worked out by hand in the comments; bad input, unknown metrics and
// a database that went away must give isError answers that say what to do.

import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { request } from './lib/http.mjs';
import { KIND, STATUS, SpanBatch, attrs, span } from './lib/otlpjson.mjs';
import { pgSh, psql, startPostgres } from './lib/pg.mjs';
import { startServer } from './lib/server.mjs';

const MIN_MS = 60000;
// Ten minutes ago on a whole minute: every point is at an offset from here.
const BASE_MS = Math.floor(Date.now() / MIN_MS) * MIN_MS - 10 * MIN_MS;
const ns = (offsetS) => (BigInt(BASE_MS) * 1000000n + BigInt(Math.round(offsetS * 1e9))).toString();
const iso = (offsetS) => new Date(BASE_MS + offsetS * 1000).toISOString();
// [BASE, BASE + 3 min) in steps of a minute: what most calls ask for.
const RANGE = { from: iso(0), to: iso(180), step: '1m' };

let pg;
let srv;
let client;

// ---- data -----------------------------------------------------------------------

const gaugePoint = (host, offsetS, v) => ({ timeUnixNano: ns(offsetS), asDouble: v, attributes: attrs({ host }) });
const sumPoint = (startS, offsetS, v) => ({ startTimeUnixNano: ns(startS), timeUnixNano: ns(offsetS), asInt: String(v), attributes: attrs({ route: '/pay' }) });
const histPoint = (offsetS, counts, sum, max) => ({
	startTimeUnixNano: ns(-600),
	timeUnixNano: ns(offsetS),
	count: String(counts.reduce((a, b) => a + b, 0)),
	sum,
	...(max !== undefined ? { max } : {}),
	bucketCounts: counts.map(String),
	explicitBounds: [0.1, 0.5, 1],
});

function metricsBody() {
	const gauge = [];
	for (let i = 0; i < 18; i++) {
		gauge.push(gaugePoint('a', i * 10, i), gaugePoint('b', i * 10, 100 + 2 * i));
	}
	return JSON.stringify({
		resourceMetrics: [{
			resource: { attributes: attrs({ 'service.name': 'shop', 'telemetry.sdk.name': 'opentelemetry' }) },
			scopeMetrics: [{
				scope: { name: 'telemetry-test' },
				metrics: [
					{ name: 'queue.depth', unit: '1', gauge: { dataPoints: gauge } },
					{
						// cumulative, reset at 90 s (new start at 80 s)
						name: 'orders.created',
						unit: '{order}',
						sum: {
							aggregationTemporality: 2,
							isMonotonic: true,
							dataPoints: [
								sumPoint(-600, -30, 1000), sumPoint(-600, 0, 1030), sumPoint(-600, 30, 1090),
								sumPoint(-600, 60, 1150), sumPoint(80, 90, 10), sumPoint(80, 120, 70), sumPoint(80, 150, 130),
							],
						},
					},
					{
						name: 'http.server.request.duration',
						unit: 's',
						histogram: {
							aggregationTemporality: 2,
							dataPoints: [
								histPoint(-30, [0, 0, 0, 0], 0), histPoint(0, [10, 0, 0, 0], 0.5),
								histPoint(30, [10, 10, 0, 0], 3.5), histPoint(60, [20, 10, 5, 5], 13.5, 2),
							],
						},
					},
				],
			}],
		}],
	});
}

const T1 = '5b8efff798038103d269b633813fc60c';
const T2 = '5b8efff798038103d269b633813fc60d';
const spans = new SpanBatch();
spans.add('shop', 'otlp', span({
	traceId: T1, spanId: 'eee19b7ec3c1b174', name: 'POST /api/checkout', kind: KIND.SERVER,
	startNs: BigInt(ns(10)), durNs: 120000000n, attributes: { tenant: 'x', 'session.id': 'sess-1' },
	status: { code: STATUS.ERROR, message: 'card declined' },
}));
spans.add('shop', 'otlp', span({
	traceId: T1, spanId: 'eee19b7ec3c1b175', parentSpanId: 'eee19b7ec3c1b174', name: 'SELECT orders', kind: KIND.CLIENT,
	startNs: BigInt(ns(11)), durNs: 5000000n, attributes: { 'db.system': 'postgresql' }, status: { code: STATUS.OK },
}));
spans.add('shop', 'otlp', span({
	traceId: T2, spanId: 'eee19b7ec3c1b176', name: 'GET /api/cart', kind: KIND.SERVER,
	startNs: BigInt(ns(20)), durNs: 30000000n, attributes: { tenant: 'y' },
}));
// eBPF saw the checkout too: never listed by query_telemetry_spans
spans.add('shop', 'ebpf', span({
	traceId: T1, spanId: 'eee19b7ec3c1b177', name: 'POST /api/checkout', kind: KIND.SERVER,
	startNs: BigInt(ns(10)), durNs: 121000000n,
}));

// ---- MCP ------------------------------------------------------------------------

const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function call(name, args, { expectError = false } = {}) {
	const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
	const text = textOf(r);
	assert.equal(r.isError === true, expectError, `isError ${r.isError}: ${name}(${JSON.stringify(args)}) -> ${text.slice(0, 1000)}`);
	if (!expectError) assert.ok(r.structuredContent, `no structuredContent: ${text.slice(0, 500)}`);
	return { text, sc: r.structuredContent };
}

function close(got, want, what) {
	assert.equal(typeof got, 'number', `${what}: ${JSON.stringify(got)}`);
	assert.ok(Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)), `${what}: tool ${got}, want ${want}`);
}

// The points of one series as {iso time: value}.
const pointsOf = (series) => Object.fromEntries(series.points.map(([t, v]) => [t, v]));

before(async () => {
	pg = await startPostgres({ name: 'telemetry' });
	srv = await startServer({ name: 'telemetry', env: { DATABASE_URL: pg.url, SEXTANT_CONFORMANCE_ENABLED: 'false' } });
	const r = await request(`${srv.url}/v1/metrics`, {
		method: 'POST', headers: { 'content-type': 'application/json' }, body: metricsBody(),
	});
	assert.equal(r.status, 200, r.text);
	await spans.post(srv.url);
	client = new Client({ name: 'sextant-telemetry-test', version: '1.0.0' });
	await client.connect(new StreamableHTTPClientTransport(new URL(srv.mcpUrl)));
	await client.listTools(); // the SDK keeps the outputSchemas to check results
});

beforeEach(() => srv?.assertAlive());

after(async () => {
	if (client) await client.close().catch(() => {});
	if (srv) await srv.stop();
	if (pg) await pg.stop();
});

// ---- tests ----------------------------------------------------------------------

test('both tools are listed as read-only "Advanced" plumbing with output schemas', async () => {
	const tools = [];
	let cursor;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		tools.push(...page.tools);
		cursor = page.nextCursor;
	} while (cursor);
	for (const name of ['query_telemetry_metrics', 'query_telemetry_spans']) {
		const t = tools.find((x) => x.name === name);
		assert.ok(t, `${name} listed`);
		assert.match(t.description, /^Advanced/);
		assert.equal(t.annotations.readOnlyHint, true);
		assert.equal(t.outputSchema.type, 'object');
	}
});

test('gauge averages per host and step match SQL', async () => {
	const { sc, text } = await call('query_telemetry_metrics', { name: 'queue.depth', group_by: ['host'], ...RANGE });
	assert.equal(sc.kind, 'gauge');
	assert.equal(sc.aggregation, 'avg');
	assert.equal(sc.step_s, 60);
	assert.equal(sc.unit, '1');
	assert.deepEqual(sc.time_range, { from: RANGE.from.replace('.000Z', 'Z'), to: RANGE.to.replace('.000Z', 'Z') });
	const want = JSON.parse(await psql(pg.url, `SELECT json_object_agg(k, v) FROM (
		SELECT attributes->>'host' || ' ' || to_char(date_bin('1 minute', time, 'epoch') AT TIME ZONE 'UTC',
			'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS k, avg(value) AS v
		FROM metric_points WHERE name = 'queue.depth'
		AND time >= '${RANGE.from}' AND time < '${RANGE.to}' GROUP BY 1) x`));
	assert.equal(sc.series.length, 2);
	let n = 0;
	for (const s of sc.series) {
		for (const [t, v] of s.points) {
			close(v, want[`${s.labels.host} ${t}`], `${s.labels.host} ${t}`);
			n++;
		}
	}
	assert.equal(n, Object.keys(want).length);
	assert.match(text, /\[host=a\]/);
	assert.match(text, /\[host=b\]/);
});

test('counter rate handles the reset; attribute filters apply', async () => {
	// increases: 30 + 60 | 60 + 10 (after the reset) | 60 + 60, per 60 s
	const { sc } = await call('query_telemetry_metrics', { name: 'orders.created', attributes: { route: '/pay' }, service: 'shop', ...RANGE });
	assert.equal(sc.kind, 'sum');
	assert.equal(sc.aggregation, 'rate');
	const p = pointsOf(sc.series[0]);
	close(p[iso(0).replace('.000Z', 'Z')], 1.5, 'step 0');
	close(p[iso(60).replace('.000Z', 'Z')], 70 / 60, 'step 1');
	close(p[iso(120).replace('.000Z', 'Z')], 2, 'step 2');
	const none = await call('query_telemetry_metrics', { name: 'orders.created', attributes: { route: '/nope' }, ...RANGE });
	assert.equal(none.sc.series.length, 0);
	assert.match(none.text, /No metric points found/);
	assert.match(none.text, /attributes=\{"route":"\/nope"\}/);
	assert.ok(none.sc.latest_point);
});

test('histogram percentiles and counts from bucket increases', async () => {
	// step 0: [10,10,0,0] -> p95 = 0.1 + 0.4 * 9/10; step 1: [10,0,5,5],
	// max 2 -> p95 = 1 + 1 * 4/5
	const p95 = await call('query_telemetry_metrics', { name: 'http.server.request.duration', ...RANGE });
	assert.equal(p95.sc.aggregation, 'p95');
	const p = pointsOf(p95.sc.series[0]);
	close(p[iso(0).replace('.000Z', 'Z')], 0.46, 'p95 step 0');
	close(p[iso(60).replace('.000Z', 'Z')], 1.8, 'p95 step 1');
	const count = await call('query_telemetry_metrics', { name: 'http.server.request.duration', aggregation: 'count', ...RANGE });
	assert.deepEqual(count.sc.series[0].points.map(([, v]) => v), [20, 20]);
});

test('unknown metrics name the closest ones; bad arguments name the field', async () => {
	const unknown = await call('query_telemetry_metrics', { name: 'orders.create', service: 'shop' }, { expectError: true });
	assert.match(unknown.text, /did you mean "orders\.created"/);
	const svc = await call('query_telemetry_metrics', { name: 'orders.created', service: 'shpo' }, { expectError: true });
	assert.match(svc.text, /service "shpo" has no metric points.*"shop"/);
	const cases = [
		[{ name: 'queue.depth', step: '5s' }, /step "5s" is below the minimum of 10s/],
		[{ name: 'queue.depth', aggregation: 'p95' }, /aggregation "p95" does not apply .* a gauge: use avg/],
		[{ name: 'queue.depth', time_range: 'soon' }, /time_range "soon" is not understood/],
		[{ name: 'queue.depth', step: 'often' }, /step/],
		[{ name: 'queue.depth', attributes: { host: 7 } }, /attributes/],
	];
	for (const [args, re] of cases) {
		const r = await call('query_telemetry_metrics', args, { expectError: true });
		assert.match(r.text, re, JSON.stringify(args));
	}
	const many = await call('query_telemetry_metrics', { name: 'queue.depth', step: '1m', time_range: '30d' }, { expectError: true });
	assert.match(many.text, /more than 1000: use a step of at least/);
});

test('a service as people name it: the one service with metric points meant, and the answer says from what', async () => {
	const args = { name: 'orders.created', attributes: { route: '/pay' }, ...RANGE };
	const exact = await call('query_telemetry_metrics', { ...args, service: 'shop' });
	assert.doesNotMatch(exact.text, /^service: /m, 'the exact name takes no note');
	assert.ok(exact.sc.series.length > 0);
	for (const given of ['Shop', 'the shop service', 'shop-svc']) {
		const r = await call('query_telemetry_metrics', { ...args, service: given });
		assert.match(r.text, new RegExp(`^service: shop \\(from "${given}"\\)$`, 'm'), r.text);
		assert.deepEqual(r.sc.series, exact.sc.series, given);
	}
	// the listing too
	const list = await call('query_telemetry_metrics', { service: 'SHOP', from: RANGE.from, to: RANGE.to });
	assert.match(list.text, /^service: shop \(from "SHOP"\)$/m, list.text);
	assert.ok(list.sc.metrics.some((m) => m.name === 'orders.created'), list.text);
});

test('without a name: the metric names in the range with type, unit, series and last seen', async () => {
	const range = { from: RANGE.from, to: RANGE.to };
	const all = await call('query_telemetry_metrics', range);
	// queue.depth: hosts a and b; the others one series each; the newest
	// points in the range are at 170 s, 150 s and 60 s
	assert.deepEqual(all.sc.metrics, [
		{ name: 'http.server.request.duration', kind: 'histogram', unit: 's', series: 1, last_seen: iso(60).replace('.000Z', 'Z') },
		{ name: 'orders.created', kind: 'sum', unit: '{order}', series: 1, last_seen: iso(150).replace('.000Z', 'Z') },
		{ name: 'queue.depth', kind: 'gauge', unit: '1', series: 2, last_seen: iso(170).replace('.000Z', 'Z') },
	]);
	assert.equal(all.sc.total, 3);
	assert.equal(all.sc.truncated, false);
	assert.ok(!('name' in all.sc));
	assert.match(all.text, /\| queue\.depth \| gauge \| 1 \| 2 \| /);
	assert.match(all.text, /\| orders\.created \| sum \| \{order\} \| 1 \| /);
	// a range holding only the points before BASE: orders.created's -30 s
	const before = await call('query_telemetry_metrics', { from: iso(-60), to: iso(-1) });
	assert.deepEqual(before.sc.metrics.map((m) => [m.name, m.series, m.last_seen]), [
		['http.server.request.duration', 1, iso(-30).replace('.000Z', 'Z')],
		['orders.created', 1, iso(-30).replace('.000Z', 'Z')],
	]);
	const match = await call('query_telemetry_metrics', { match: 'ORDERS', service: 'shop', ...range });
	assert.deepEqual(match.sc.metrics.map((m) => m.name), ['orders.created']);
	const lim = await call('query_telemetry_metrics', { limit: 2, ...range });
	assert.deepEqual(lim.sc.metrics.map((m) => m.name), ['http.server.request.duration', 'orders.created']);
	assert.equal(lim.sc.total, 3);
	assert.equal(lim.sc.truncated, true);
	assert.match(lim.text, /1 more not shown: narrow with match or service, or raise limit/);
	const none = await call('query_telemetry_metrics', { service: 'nobody', ...range });
	assert.deepEqual(none.sc.metrics, []);
	assert.match(none.text, /No metric points found .*service=nobody/);
	const bad = await call('query_telemetry_metrics', { aggregation: 'avg' }, { expectError: true });
	assert.match(bad.text, /aggregation needs name/);
	const both = await call('query_telemetry_metrics', { name: 'queue.depth', match: 'queue' }, { expectError: true });
	assert.match(both.text, /match lists names/);
});

test('point queries give min, max, mean and last per series, with units', async () => {
	// per-minute averages: host a 2.5, 8.5, 14.5; host b 105, 117, 129
	const g = await call('query_telemetry_metrics', { name: 'queue.depth', group_by: ['host'], ...RANGE });
	const stats = Object.fromEntries(g.sc.series.map((s) => [s.labels.host, s.stats]));
	assert.deepEqual(stats, { a: { min: 2.5, max: 14.5, mean: 8.5, last: 14.5 }, b: { min: 105, max: 129, mean: 117, last: 129 } });
	assert.match(g.text, /\[host=a\]\n {2}min 2\.5, max 14\.5, mean 8\.5, last 14\.5\n/);
	// p95 0.46 s then 1.8 s
	const h = await call('query_telemetry_metrics', { name: 'http.server.request.duration', ...RANGE });
	const hs = h.sc.series[0].stats;
	close(hs.min, 0.46, 'min');
	close(hs.max, 1.8, 'max');
	close(hs.mean, 1.13, 'mean');
	close(hs.last, 1.8, 'last');
	assert.match(h.text, /min 0\.46 s, max 1\.8 s, mean 1\.13 s, last 1\.8 s/);
	// rates 1.5, 70/60 and 2 orders per second
	const c = await call('query_telemetry_metrics', { name: 'orders.created', ...RANGE });
	const cs = c.sc.series[0].stats;
	close(cs.min, 70 / 60, 'rate min');
	close(cs.mean, (1.5 + 70 / 60 + 2) / 3, 'rate mean');
	assert.deepEqual([cs.max, cs.last], [2, 2]);
	assert.match(c.text, /min 1\.16667 order\/s, max 2 order\/s, mean 1\.55556 order\/s, last 2 order\/s/);
	// counts carry no unit
	const n = await call('query_telemetry_metrics', { name: 'http.server.request.duration', aggregation: 'count', ...RANGE });
	assert.match(n.text, /min 20, max 20, mean 20, last 20\n/);
});

test('a misspelt metric name suggests the right one, ignoring case, and points to the listing', async () => {
	for (const name of ['queue.dpeth', 'Queue.Depth', 'QUEUE_DEPTH']) {
		const r = await call('query_telemetry_metrics', { name }, { expectError: true });
		assert.match(r.text, new RegExp(`^unknown metric "${name}": did you mean "queue\\.depth"`), name);
		assert.match(r.text, /Call query_telemetry_metrics without a name to list the metric names/, name);
	}
});

test('span search: OTLP only, every filter, limits', async () => {
	const want = (await psql(pg.url, `SELECT string_agg(encode(span_id, 'hex'), ',' ORDER BY start_time DESC)
		FROM spans WHERE source = 'otlp' AND service_name = 'shop'`)).split(',');
	const all = await call('query_telemetry_spans', { service: 'shop', time_range: '1h' });
	assert.deepEqual(all.sc.spans.map((s) => s.span_id), want);
	assert.equal(all.sc.count, 3);
	assert.equal(all.sc.truncated, false);
	const cases = [
		[{ trace_id: T1.toUpperCase() }, ['eee19b7ec3c1b175', 'eee19b7ec3c1b174']],
		[{ name: 'CHECKOUT' }, ['eee19b7ec3c1b174']],
		[{ status: 'error' }, ['eee19b7ec3c1b174']],
		[{ min_duration_ms: 25 }, ['eee19b7ec3c1b176', 'eee19b7ec3c1b174']],
		[{ min_duration_ms: 25, sort: 'slowest' }, ['eee19b7ec3c1b174', 'eee19b7ec3c1b176']],
		[{ attributes: { tenant: 'y' } }, ['eee19b7ec3c1b176']],
		[{ session_id: 'sess-1' }, ['eee19b7ec3c1b174']],
		[{ service: 'nobody' }, []],
	];
	for (const [args, ids] of cases) {
		const r = await call('query_telemetry_spans', args);
		assert.deepEqual(r.sc.spans.map((s) => s.span_id), ids, JSON.stringify(args));
		if (ids.length === 0) assert.match(r.text, /No spans found/);
	}
	const one = all.sc.spans.find((s) => s.span_id === 'eee19b7ec3c1b174');
	assert.equal(one.trace_id, T1);
	assert.equal(one.parent_span_id, null);
	assert.equal(one.kind, 'server');
	assert.equal(one.status, 'error');
	assert.equal(one.status_message, 'card declined');
	close(one.duration_ms, 120, 'duration');
	assert.equal(one.attributes.tenant, 'x');
	assert.equal(one.start, iso(10).replace('.000Z', 'Z'));
	assert.match(all.text, /POST \/api\/checkout {2}120\.0ms {2}error {2}trace 5b8efff798038103d269b633813fc60c/);
	const lim = await call('query_telemetry_spans', { limit: 2 });
	assert.equal(lim.sc.spans.length, 2);
	assert.equal(lim.sc.truncated, true);
	assert.match(lim.text, /More spans match/);
	const bad = await call('query_telemetry_spans', { trace_id: 'xyz' }, { expectError: true });
	assert.match(bad.text, /trace_id/);
});

test('a database that went away gives "telemetry store unavailable"', async () => {
	assert.equal((await pgSh('stop', pg.dir)).code, 0);
	try {
		const r = await call('query_telemetry_spans', { service: 'shop' }, { expectError: true });
		assert.match(r.text, /^telemetry store unavailable: /);
		const m = await call('query_telemetry_metrics', { name: 'queue.depth' }, { expectError: true });
		assert.match(m.text, /^telemetry store unavailable: /);
	} finally {
		assert.equal((await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } })).code, 0);
	}
});

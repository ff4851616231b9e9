// grafana.test.mjs - query_grafana_metrics (issue 6) through the official MCP
// SDK client against real parts: a Prometheus (Debian package) on loopback
// scraping the gateway's own /metrics and a text-exposition target with
// known values (lib/upstreams.mjs), reached directly and through a
// Grafana-shaped nginx front (lib/nginx.mjs) that serves data source JSON,
// maps the data source proxy onto Prometheus and checks the bearer token.
// Every series the tool returns is compared with Prometheus's own HTTP API
// answer for the PromQL the tool reports (and that PromQL with what it must
// mean); statistics are computed here; gauges, aggregations and quantiles
// are also checked against the values the target serves.  Faults:
// Prometheus stopped mid-test (circuit breaker opens, says so, shows in
// /metrics, closes after the restart), a slow data source (timeout), the
// per-instance concurrency limit, wrong and rotated tokens, an unreachable
// URL, an unknown or non-Prometheus data source, 10,001 points, and metric
// names and label values with PromQL metacharacters.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { metricValue, parseMetrics, request } from './lib/http.mjs';
import { startGrafanaFront } from './lib/nginx.mjs';
import { freePort, sleep } from './lib/procs.mjs';
import { startPrometheus } from './lib/prometheus.mjs';
import { startServer } from './lib/server.mjs';
import { CALL_SERIES, MANY_SERIES, startExpositionTarget, startSlowProxy } from './lib/upstreams.mjs';

const TOOL = 'query_grafana_metrics';
const TOKEN = 'glsa_sextantTest0123456789abcdef';
const WRONG_TOKEN = 'glsa_wrongToken000000000000000000';
// the gateway's [*.slow] timeout and the slow proxy's delay
const SLOW_TIMEOUT_MS = 800;
const SLOW_DELAY_MS = 2500;
// [*.narrow] max_concurrent, and the delay of its proxy
const NARROW_SLOTS = 2;
const NARROW_DELAY_MS = 250;
// [prometheus.direct] breaker settings
const BREAKER_FAILURES = 3;
const BREAKER_COOLDOWN_S = 2;
// seconds of scraped data the value tests want before they start
const DATA_S = 12;

// ---- helpers ------------------------------------------------------------------

const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// ms as the tool prints times: ISO 8601 UTC, milliseconds only when not 0.
const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

// printf's %.10g, the tool's number format in text.
function g10(v) {
	if (v === 0) return '0';
	const [m, e] = v.toExponential(9).split('e');
	const exp = Number(e);
	const strip = (s) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
	if (exp < -4 || exp >= 10) return `${strip(m)}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
	return strip(v.toFixed(9 - exp));
}

// Statistics over the finite values, as the issue defines them.
function stats(values) {
	const v = values.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
	if (!v.length) return { count: 0, min: null, max: null, mean: null, median: null, sum: null };
	const sum = v.reduce((a, x) => a + x, 0);
	const n = v.length;
	return { count: n, min: v[0], max: v[n - 1], mean: sum / n, median: n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, sum };
}

function close(got, want, what, rel = 1e-9) {
	assert.equal(typeof got, 'number', `${what}: not a number: ${JSON.stringify(got)}`);
	const tol = Math.max(rel * Math.abs(want), 1e-12);
	assert.ok(Math.abs(got - want) <= tol, `${what}: tool ${got}, expected ${want} (tolerance ${tol})`);
}

function assertStats(got, want, what) {
	assert.equal(got.count, want.count, `${what}: count`);
	for (const k of ['min', 'max', 'mean', 'median', 'sum']) {
		if (want[k] === null) assert.equal(got[k], null, `${what}: ${k}`);
		else close(got[k], want[k], `${what}: ${k}`);
	}
}

const labelKey = (labels) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));

// Prometheus's sample value string as the tool gives it (null for NaN, Inf).
const promNum = (s) => (Number.isFinite(Number(s)) ? Number(s) : null);

// Every page of tools/list through the validating client.
async function listAllTools() {
	const tools = [];
	let cursor;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		tools.push(...page.tools);
		cursor = page.nextCursor;
	} while (cursor);
	return tools;
}

// ---- the parts ------------------------------------------------------------------

let target; // exposition target
let prom; // Prometheus
let slow; // slow proxy in front of Prometheus (timeout)
let narrow; // slower proxy for the concurrency limit
let front; // nginx, Grafana-shaped
let srv; // the gateway
let client; // lists the tools first: the SDK checks structuredContent
let plainClient; // never lists them: no outputSchema check
let tmp;
let tokenFile;
let closedPort; // nothing listens there
let dataFromS; // first whole second with scraped data

function gatewayConfig(promUrl) {
	const grafana = (name, more) => `
[grafana.${name}]
url = "${front.url}"
${more}
retries = 1
retry_base_ms = 20
`;
	return `# written by test/integration/grafana.test.mjs
[server]
listen = "127.0.0.1:18080"
threads = 2
shutdown_grace_s = 2

[workers]
threads = 8
queue_size = 64
call_timeout_s = 30

[log]
level = "info"

[tools]
enabled_sets = []

[prometheus.direct]
url = "${promUrl}"
retries = 1
retry_base_ms = 20
breaker_failures = ${BREAKER_FAILURES}
breaker_cooldown_s = ${BREAKER_COOLDOWN_S}
services = ["checkout", "billing=payments-v2"]
${grafana('main', `datasource_uid = "prom-main"\ntoken_file = "${tokenFile}"`)}
${grafana('byname', `datasource_name = "Local Prometheus"\ntoken = "${TOKEN}"`)}
${grafana('badtoken', `datasource_uid = "prom-main"\ntoken = "${WRONG_TOKEN}"`)}
${grafana('notoken', `datasource_uid = "prom-main"`)}
${grafana('nods', `datasource_uid = "no-such-uid"\ntoken = "${TOKEN}"`)}
${grafana('logs', `datasource_uid = "loki-logs"\ntoken = "${TOKEN}"`)}
${grafana('slow', `datasource_uid = "prom-slow"\ntoken = "${TOKEN}"\ntimeout_ms = ${SLOW_TIMEOUT_MS}`)}
${grafana('narrow', `datasource_uid = "prom-narrow"\ntoken = "${TOKEN}"\nmax_concurrent = ${NARROW_SLOTS}`)}
[prometheus.nowhere]
url = "http://127.0.0.1:${closedPort}"
retries = 1
retry_base_ms = 20
connect_timeout_ms = 1000
services = ["ghost"]
`;
}

before(async () => {
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-grafana-test-'));
	tokenFile = path.join(tmp, 'token');
	fs.writeFileSync(tokenFile, `${TOKEN}\n`);
	closedPort = await freePort();
	target = await startExpositionTarget();
	// Prometheus's port first: the gateway's config names it, and
	// Prometheus's scrape config names the gateway.
	const promPort = await freePort();
	const promUrl = `http://127.0.0.1:${promPort}`;
	slow = await startSlowProxy({ upstream: promUrl, delayMs: SLOW_DELAY_MS });
	narrow = await startSlowProxy({ upstream: promUrl, delayMs: NARROW_DELAY_MS });
	front = await startGrafanaFront({
		token: TOKEN,
		datasources: [
			{ id: 1, uid: 'prom-main', name: 'Local Prometheus', upstream: promUrl },
			{ id: 2, uid: 'prom-slow', name: 'Slow Prometheus', upstream: slow.url },
			{ id: 3, uid: 'prom-narrow', name: 'Narrow Prometheus', upstream: narrow.url },
			{ id: 4, uid: 'loki-logs', name: 'Logs', upstream: promUrl, type: 'loki' },
		],
	});
	const config = path.join(tmp, 'sextant.toml');
	fs.writeFileSync(config, gatewayConfig(promUrl));
	srv = await startServer({ name: 'grafana', config });
	prom = await startPrometheus({
		port: promPort,
		targets: [
			{ job: 'fixture', target: target.hostPort },
			{ job: 'sextant', target: srv.host },
		],
	});
	client = new Client({ name: 'sextant-grafana-test', version: '1.0.0' });
	await client.connect(new StreamableHTTPClientTransport(new URL(srv.mcpUrl)));
	plainClient = new Client({ name: 'sextant-grafana-test-plain', version: '1.0.0' });
	await plainClient.connect(new StreamableHTTPClientTransport(new URL(srv.mcpUrl)));
	// every tool listed, so that the SDK checks structuredContent against
	// the outputSchema
	const tools = await listAllTools();
	assert.ok(
		tools.some((t) => t.name === TOOL),
		`${TOOL} not listed: ${tools.map((t) => t.name).join(', ')}`,
	);
	// Prometheus's service discovery hands targets over after ~5 s
	await prom.waitForSeries('fixture_quirky_info', { min: 3 });
	await prom.waitForSeries('fixture_request_duration_seconds_bucket', { min: 12 });
	await prom.waitForSeries('fixture_many_series', { min: MANY_SERIES });
	await prom.waitForSeries('up{job="sextant"} == 1');
	dataFromS = Math.ceil(Date.now() / 1000);
	// enough scraped seconds for statistics worth the name (every test
	// uses range(), so that any one of them can run alone)
	await sleep((dataFromS + DATA_S + 2) * 1000 - Date.now());
});

after(async () => {
	await client?.close().catch(() => {});
	await plainClient?.close().catch(() => {});
	const problems = [];
	for (const [what, f] of [
		['gateway', () => srv?.stop()],
		['prometheus', () => prom?.close()],
		['nginx', () => front?.close()],
		['target', () => target?.close()],
		['slow proxy', () => slow?.close()],
		['narrow proxy', () => narrow?.close()],
	]) {
		try {
			await f();
		} catch (e) {
			problems.push(`${what}: ${e.message}`);
		}
	}
	if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
	if (problems.length) throw new Error(problems.join('\n'));
});

// Calls the tool.  Resolves {r, text, sc}; asserts isError as expected.
// Successes go through the client that checks structuredContent against
// the outputSchema; errors through the other (the check has a test of its
// own: 'error results pass the SDK client's outputSchema check').
async function call(args, { expectError = false } = {}) {
	let r;
	try {
		r = await (expectError ? plainClient : client).callTool({ name: TOOL, arguments: args }, undefined, { timeout: 30000 });
	} catch (e) {
		if (expectError || !/output schema/.test(e.message)) throw e;
		// show what the answer was (an error result, most likely)
		const raw = await plainClient.callTool({ name: TOOL, arguments: args }, undefined, { timeout: 30000 });
		assert.fail(`${TOOL}(${JSON.stringify(args)}): the SDK client refused the answer (${e.message}); it was: isError ${raw.isError}: ${textOf(raw).slice(0, 1500)}`);
	}
	const text = textOf(r);
	const show = `${TOOL}(${JSON.stringify(args)}) -> ${text.slice(0, 1500)}`;
	assert.equal(r.isError === true, expectError, `isError ${r.isError}: ${show}`);
	assert.ok(r.structuredContent, `no structuredContent: ${show}`);
	return { r, text, sc: r.structuredContent, show };
}

// A call that must fail with type: the text starts "ERROR: <type>", has
// Message: and Suggestion: lines, and structuredContent has the same.
async function callError(args, type) {
	const { text, sc, show } = await call(args, { expectError: true });
	const m = /^ERROR: (\S+)\nMessage: (.*)\nSuggestion: (.*?)\n?$/s.exec(text);
	assert.ok(m, `not "ERROR: / Message: / Suggestion:": ${show}`);
	assert.equal(m[1], type, show);
	assert.equal(sc.error, type, `structuredContent.error: ${show}`);
	assert.equal(sc.message, m[2], `structuredContent.message differs from the text: ${show}`);
	assert.equal(sc.suggestion, m[3], `structuredContent.suggestion differs from the text: ${show}`);
	assert.ok(sc.message.length > 10 && sc.suggestion.length > 10, `empty message or suggestion: ${show}`);
	return { text, sc, show };
}

// The window [from, to] in whole seconds that holds scraped data, ending
// endAgoS seconds ago (committed samples only).
function range({ endAgoS = 2 } = {}) {
	const to = Math.floor(Date.now() / 1000) - endAgoS;
	return { from: dataFromS, to, start_time: iso(dataFromS * 1000), end_time: iso(to * 1000) };
}

// Asserts a success answer holds exactly what Prometheus answers to its
// query over its range and step, statistics included.  Returns
// Prometheus's series.
async function assertSameAsPrometheus(sc, show) {
	const from = Date.parse(sc.time_range.from) / 1000;
	const to = Date.parse(sc.time_range.to) / 1000;
	const want = await prom.queryRange(sc.query, from, to, sc.step_seconds);
	assert.equal(sc.series_count, want.length, `series count: ${show}`);
	assert.equal(sc.series.length, want.length, `series: ${show}`);
	const byKey = new Map(want.map((s) => [labelKey(s.metric), s]));
	const all = [];
	let points = 0;
	for (const s of sc.series) {
		const w = byKey.get(labelKey(s.labels));
		assert.ok(w, `series ${JSON.stringify(s.labels)} not in Prometheus's answer ${JSON.stringify(want.map((x) => x.metric))}: ${show}`);
		assert.equal(s.values.length, w.values.length, `points of ${JSON.stringify(s.labels)}: ${show}`);
		assert.equal(s.points, w.values.length, `points field of ${JSON.stringify(s.labels)}`);
		s.values.forEach(([t, v], i) => {
			close(t, w.values[i][0], `time of point ${i} of ${JSON.stringify(s.labels)}`, 0);
			const pv = promNum(w.values[i][1]);
			if (pv === null) assert.equal(v, null, `point ${i} of ${JSON.stringify(s.labels)}`);
			else close(v, pv, `value of point ${i} of ${JSON.stringify(s.labels)}`, 1e-12);
		});
		const vals = w.values.map(([, x]) => promNum(x));
		assertStats(s.statistics, stats(vals), `statistics of ${JSON.stringify(s.labels)}`);
		all.push(...vals);
		points += w.values.length;
	}
	assert.equal(sc.points, points, `points: ${show}`);
	assertStats(sc.statistics, stats(all), 'overall statistics');
	return want;
}

// The text's statistics block (first one) and its first points.
// The contract's "Statistics:" lines carry the unit after each value.
function assertTextStats(text, st, unit, show) {
	const u = unit ? ` ${unit}` : '';
	for (const [k, name] of [
		['min', 'Min'],
		['max', 'Max'],
		['mean', 'Mean'],
		['median', 'Median'],
		['sum', 'Sum'],
	]) {
		assert.ok(text.includes(`  ${name}: ${g10(st[k])}${u}\n`), `text lacks "${name}: ${g10(st[k])}${u}": ${show}`);
	}
}

async function gatewayMetrics() {
	const r = await request(`${srv.url}/metrics`);
	assert.equal(r.status, 200);
	return parseMetrics(r.text);
}

// ---- tests ----------------------------------------------------------------------

describe('tools/list', () => {
	test('query_grafana_metrics has the arguments of the issue', async () => {
		const t = (await listAllTools()).find((x) => x.name === TOOL);
		const props = Object.keys(t.inputSchema.properties).sort();
		assert.deepEqual(props, ['aggregation', 'end_time', 'filters', 'instance', 'metric_name', 'percentile', 'rate', 'start_time', 'step'].sort());
		assert.deepEqual(t.inputSchema.required, ['metric_name']);
		assert.ok(t.outputSchema, 'no outputSchema');
	});

	test("error results pass the SDK client's outputSchema check", async () => {
		// the issue wants the error fields in structuredContent; the
		// official client validates any structuredContent, isError or
		// not, so the outputSchema must admit the error form
		for (const args of [{ metric_name: 'up', instance: 'no-such-instance' }, { metric_name: 'up', aggregation: 'median' }]) {
			let r;
			try {
				r = await client.callTool({ name: TOOL, arguments: args });
			} catch (e) {
				assert.fail(`${JSON.stringify(args)}: the SDK client refused the error result: ${e.message}`);
			}
			assert.equal(r.isError, true);
			assert.equal(r.structuredContent?.error, 'invalid_query');
		}
	});
});

describe('get_server_status', () => {
	test('names the configured metrics instances (it said "not configured" whatever the config)', async () => {
		const r = await client.callTool({ name: 'get_server_status', arguments: {} });
		const text = textOf(r);
		const prom = r.structuredContent.sources.prometheus;
		assert.match(prom, /^configured: /, prom);
		const names = prom.slice('configured: '.length).split(', ').sort();
		assert.deepEqual(names, ['badtoken', 'byname', 'direct', 'logs', 'main', 'narrow', 'nods', 'notoken', 'nowhere', 'slow']);
		assert.ok(text.includes(`Prometheus: ${prom}`), text);
	});
});

describe('validation errors (nothing is sent upstream)', () => {
	test('end before start, equal times, bad ISO 8601: invalid_time_range naming the field', async () => {
		const now = Date.now();
		front.resetRequests();
		const cases = [
			[{ start_time: iso(now - 60000), end_time: iso(now - 120000) }, /end_time.*not after start_time/],
			[{ start_time: iso(now - 60000), end_time: iso(now - 60000) }, /end_time.*not after start_time/],
			[{ start_time: 'yesterday-ish', end_time: iso(now) }, /start_time "yesterday-ish"/],
			[{ start_time: '2026-13-45T99:00:00Z' }, /start_time "2026-13-45T99:00:00Z"/],
			[{ end_time: 'soon' }, /end_time "soon"/],
			[{ start_time: iso(now - 3600000), end_time: '2026-11-21T10:00:00+25:00' }, /end_time/],
		];
		for (const [c, msg] of cases) {
			const { sc, show } = await callError({ metric_name: 'fixture_temperature_celsius', instance: 'main', ...c }, 'invalid_time_range');
			assert.match(sc.message, msg, show);
			assert.match(sc.suggestion, /ISO 8601|earlier|start_time/, show);
		}
		assert.deepEqual(front.requests(), [], 'validation failures reached Grafana');
	});

	test('more than 90 days: invalid_time_range with how to narrow it', async () => {
		const now = Date.now();
		const { sc, show } = await callError({ metric_name: 'up', start_time: iso(now - 91 * 86400000), end_time: iso(now) }, 'invalid_time_range');
		assert.match(sc.message, /9[01](\.\d)? days/, show);
		assert.match(sc.suggestion, /90 days/, show);
		// 89 days pass validation (step chosen for the range)
		const ok = await call({ metric_name: 'up', filters: { job: 'fixture' }, start_time: iso(now - 89 * 86400000), end_time: iso(now) });
		assert.ok(ok.sc.step_seconds >= 3600, ok.show);
	});

	test('10,001 points are refused with a step that fits; 10,000 pass', async () => {
		const end = Math.floor(Date.now() / 1000) * 1000;
		const over = await callError({ metric_name: 'up', start_time: iso(end - 10000 * 1000), end_time: iso(end), step: '1s' }, 'invalid_query');
		assert.match(over.sc.message, /10,?001/, over.show);
		assert.match(over.sc.message, /10,?000/, over.show);
		assert.match(over.sc.suggestion, /step of at least 2s/, over.show);
		assert.equal(over.sc.points, 10001);
		const edge = await call({ metric_name: 'up', filters: { job: 'fixture' }, start_time: iso(end - 9999 * 1000), end_time: iso(end), step: 1 });
		assert.equal(edge.sc.step_seconds, 1, edge.show);
		assert.equal(Date.parse(edge.sc.time_range.to) - Date.parse(edge.sc.time_range.from), 9999 * 1000, edge.show);
	});

	test('bad aggregation, percentile, step, filters, instance: invalid_query naming the argument', async () => {
		const cases = [
			[{ aggregation: 'median' }, /aggregation/, /avg, max, min, sum/],
			[{ percentile: 'p90' }, /percentile/, /p50, p95 or p99/],
			[{ step: 'fast' }, /step/, /duration/],
			[{ step: '0s' }, /step/, /duration/],
			[{ step: 0 }, /step/, /duration/],
			[{ filters: { room: 5 } }, /filters.*room/, /label/],
			[{ filters: { 'room"} or vector(1) #': 'lab' } }, /filters|label/, /./],
			[{ filters: { __name__: 'up' } }, /filters|label/, /./],
			[{ instance: 'no-such-instance' }, /no-such-instance/, /direct.*main/],
			[{ percentile: 'p95', aggregation: 'avg' }, /aggregation|percentile/, /./],
		];
		for (const [extra, msg, sugg] of cases) {
			const { sc, show } = await callError({ metric_name: 'fixture_temperature_celsius', ...extra }, 'invalid_query');
			assert.match(sc.message, msg, show);
			assert.match(sc.suggestion, sugg, show);
		}
	});

	test('metric names with PromQL metacharacters are refused, never run', async () => {
		front.resetRequests();
		for (const name of [
			'fixture_temperature_celsius{room="lab"}',
			'fixture_temperature_celsius or vector(42)',
			'sum(fixture_temperature_celsius)',
			'fixture_temperature_celsius[5m]',
			'fixture_temperature_celsius"} or vector(42) #',
			'fixture temperature',
			'1fixture',
			'',
		]) {
			const { sc, show } = await callError({ metric_name: name, instance: 'main' }, 'invalid_query');
			assert.match(sc.message, /metric_name/, show);
		}
		assert.deepEqual(front.requests(), [], 'a refused metric name reached Grafana');
	});
});

describe('metric names', () => {
	test('unknown metric: metric_not_found with the closest existing names', async () => {
		const { sc, text, show } = await callError({ metric_name: 'fixture_temperatur', instance: 'byname' }, 'metric_not_found');
		assert.ok(Array.isArray(sc.closest_metrics) && sc.closest_metrics.length >= 3 && sc.closest_metrics.length <= 10, show);
		const names = await prom.api('label/__name__/values');
		for (const n of sc.closest_metrics) assert.ok(names.includes(n), `offered ${n}, which Prometheus does not have`);
		for (const n of ['fixture_temperature_celsius', 'fixture_temperature_fahrenheit', 'fixture_temperature_kelvin']) {
			assert.ok(sc.closest_metrics.slice(0, 3).includes(n), `${n} not among the 3 closest: ${show}`);
			assert.ok(text.includes(n), `${n} not in the text`);
		}
		assert.match(sc.message, /fixture_temperatur\b/, show);
	});

	test('percentile of a metric without buckets: metric_not_found offering histograms', async () => {
		const { sc, show } = await callError({ metric_name: 'fixture_temperature_celsius', percentile: 'p95' }, 'metric_not_found');
		assert.match(sc.message, /bucket/, show);
		assert.ok(sc.closest_metrics.includes('fixture_request_duration_seconds_bucket'), show);
		for (const n of sc.closest_metrics) assert.match(n, /_bucket$/, show);
	});
});

describe('values against Prometheus', () => {
	test('one gauge series: points, statistics, text, unit, type (direct and through Grafana agree)', async () => {
		const w = range();
		const args = { metric_name: 'fixture_queue_depth', filters: { queue: 'q1', job: 'fixture' }, start_time: w.start_time, end_time: w.end_time, step: '1s' };
		const direct = await call(args);
		const viaGrafana = await call({ ...args, instance: 'main' });
		for (const { sc, text, show } of [direct, viaGrafana]) {
			assert.equal(sc.metric, 'fixture_queue_depth');
			assert.equal(sc.type, 'gauge', show);
			assert.equal(sc.step_seconds, 1);
			assert.equal(sc.time_range.from, w.start_time, show);
			assert.equal(sc.time_range.to, w.end_time, show);
			assert.equal(sc.series_count, 1, show);
			assert.equal(sc.series[0].labels.queue, 'q1');
			assert.ok(sc.points >= DATA_S, `only ${sc.points} points: ${show}`);
			const want = await assertSameAsPrometheus(sc, show);
			// the values the target served: (second mod 10) * 1.5
			for (const v of sc.series[0].values) assert.ok(v[1] >= 0 && v[1] <= 13.5 && (v[1] / 1.5) % 1 === 0, `value ${v[1]} never served`);
			const st = stats(want[0].values.map(([, x]) => Number(x)));
			assertTextStats(text, st, sc.unit, show);
			// the Metrics Query Tool Contract's lines, in its order
			const u = sc.unit ? ` ${sc.unit}` : '';
			assert.ok(text.startsWith(`fixture_queue_depth (${sc.unit || 'unknown unit'})\nTime: ${w.start_time} to ${w.end_time}\nData Points: ${sc.points}\n`), show);
			assert.ok(want[0].values.length > 10, `only ${want[0].values.length} points`);
			const hms = (ms) => iso(ms).slice(11, 19);
			const lines = want[0].values.slice(0, 10).map(([t, v]) => `  ${hms(t * 1000)} - ${g10(Number(v))}${u}`);
			assert.ok(text.includes(`\nStatistics:\n  Min: `), show);
			assert.ok(text.includes(`\nData (first 10 points):\n${lines.join('\n')}\n`), `first 10 points not in text:\n${lines.join('\n')}\n${show}`);
			assert.ok(!text.includes(`  ${hms(want[0].values[10][0] * 1000)} - `), `an 11th point in the text: ${show}`);
		}
		assert.equal(direct.sc.instance, 'direct', 'default instance is the first configured');
		assert.equal(viaGrafana.sc.instance, 'main');
		assert.deepEqual(viaGrafana.sc.series, direct.sc.series, 'Grafana and direct answers differ');
		assert.deepEqual(viaGrafana.sc.statistics, direct.sc.statistics);
	});

	test('several series: one block per series with its labels; known constant values', async () => {
		const w = range();
		const { sc, text, show } = await call({ metric_name: 'fixture_temperature_celsius', start_time: w.start_time, end_time: w.end_time, step: 1, instance: 'byname' });
		assert.equal(sc.unit, 'celsius', show);
		assert.match(text, /^fixture_temperature_celsius \(celsius\)\n/);
		assert.match(text, /\n  Data Points: \d+\n  Statistics:\n  {3}Min: [0-9.]+ celsius\n/, show);
		assert.equal(sc.series_count, 3);
		await assertSameAsPrometheus(sc, show);
		const known = { lab: 21.5, office: 19.25, server: 27 };
		for (const s of sc.series) {
			const v = known[s.labels.room];
			assert.equal(s.statistics.min, v);
			assert.equal(s.statistics.max, v);
			assert.equal(s.statistics.median, v);
			close(s.statistics.sum, v * s.points, `sum of ${s.labels.room}`);
			const i = sc.series.indexOf(s) + 1;
			assert.match(text, new RegExp(`Series ${i} of 3: \\{[^}]*room="${s.labels.room}"`), show);
		}
		assert.equal(sc.statistics.min, 19.25);
		assert.equal(sc.statistics.max, 27);
	});

	test('aggregations avg, max, min, sum give one series with the known values', async () => {
		const w = range();
		const expect = { avg: (21.5 + 19.25 + 27) / 3, max: 27, min: 19.25, sum: 67.75 };
		for (const [agg, v] of Object.entries(expect)) {
			const { sc, show } = await call({ metric_name: 'fixture_temperature_celsius', aggregation: agg, filters: { job: 'fixture' }, start_time: w.start_time, end_time: w.end_time, step: '1s' });
			assert.equal(sc.series_count, 1, show);
			await assertSameAsPrometheus(sc, show);
			for (const [, x] of sc.series[0].values) close(x, v, `${agg} point`);
			const direct = await prom.queryRange(`${agg}(fixture_temperature_celsius{job="fixture"})`, w.from, w.to, 1);
			assert.equal(direct[0].values.length, sc.series[0].values.length, `${agg}: point count vs ${agg}(...) in Prometheus`);
		}
	});

	test('rate: per-second rate of a counter, as Prometheus evaluates it', async () => {
		const w = range();
		const res = {};
		for (const handler of ['/api', '/health']) {
			const { sc, text, show } = await call({ metric_name: 'fixture_requests_total', rate: true, filters: { handler }, start_time: w.start_time, end_time: w.end_time, step: '1s', instance: 'main' });
			assert.match(sc.query, /^rate\(fixture_requests_total\{[^}]*handler="\/api"|^rate\(fixture_requests_total\{[^}]*handler="\/health"/, show);
			assert.match(sc.unit, /per second|\/s/, show);
			assert.match(text, /rate/i);
			await assertSameAsPrometheus(sc, show);
			// the same numbers from the PromQL that rate must mean (window
			// max(step + 15s, 60s), the tool's description)
			const mine = await prom.queryRange(`rate(fixture_requests_total{handler="${handler}"}[60s])`, w.from, w.to, 1);
			assert.equal(mine.length, 1);
			assert.equal(sc.series[0].values.length, mine[0].values.length);
			sc.series[0].values.forEach(([, v], i) => close(v, Number(mine[0].values[i][1]), `rate point ${i}`, 1e-12));
			res[handler] = sc.series[0].values;
		}
		// both counters are sampled together: their rates keep the 5:2
		// ratio they are served with at every point
		res['/api'].forEach(([t, v], i) => {
			assert.equal(res['/health'][i][0], t);
			if (v !== null) close(v / res['/health'][i][1], 5 / 2, `rate ratio at ${t}`, 1e-9);
			assert.ok(v > 0 && v <= 5 * 1.0001, `rate ${v} outside (0, 5]`);
		});
	});

	test('percentiles: histogram_quantile over the buckets, the known bucket edges', async () => {
		const w = range();
		// per-second bucket increments (lib/upstreams.mjs): /api 20, 50,
		// 80, 95, 99, 100 at 0.05 .. +Inf: p50 = 0.1, p95 = 0.5, p99 = 1
		const known = { p50: 0.1, p95: 0.5, p99: 1 };
		for (const [p, v] of Object.entries(known)) {
			for (const metric_name of ['fixture_request_duration_seconds', 'fixture_request_duration_seconds_bucket']) {
				const { sc, show } = await call({ metric_name, percentile: p, filters: { handler: '/api' }, start_time: w.start_time, end_time: w.end_time, step: '1s', instance: 'direct' });
				assert.match(sc.query, /histogram_quantile\(0\.\d+, *sum by \(le\) \(rate\(fixture_request_duration_seconds_bucket\{/, show);
				assert.equal(sc.unit, 'seconds', show);
				await assertSameAsPrometheus(sc, show);
				assert.equal(sc.series_count, 1, show);
				for (const [, x] of sc.series[0].values) close(x, v, `${p} of /api`, 1e-9);
				const q = Number(p.slice(1)) / 100;
				const mine = await prom.queryRange(`histogram_quantile(${q}, sum by (le) (rate(fixture_request_duration_seconds_bucket{handler="/api"}[60s])))`, w.from, w.to, 1);
				sc.series[0].values.forEach(([, x], i) => close(x, Number(mine[0].values[i][1]), `${p} point ${i} vs Prometheus`, 1e-12));
			}
		}
		// both handlers summed by le: 30, 60, 90, 105, 109, 110 per second
		const { sc } = await call({ metric_name: 'fixture_request_duration_seconds', percentile: 'p50', start_time: w.start_time, end_time: w.end_time, step: '1s' });
		for (const [, x] of sc.series[0].values) close(x, 0.05 + (0.05 * (55 - 30)) / (60 - 30), 'p50 of both handlers', 1e-9);
	});

	test('the gateway\'s own /metrics, scraped by Prometheus', async () => {
		const w = range();
		const { sc, show } = await call({ metric_name: 'up', filters: { job: 'sextant' }, start_time: w.start_time, end_time: w.end_time, step: '1s' });
		await assertSameAsPrometheus(sc, show);
		assert.equal(sc.series[0].labels.instance, srv.host);
		assert.equal(sc.series[0].statistics.min, 1);
		const s2 = await call({ metric_name: 'sextant_sessions', start_time: w.start_time, end_time: w.end_time, step: '1s', instance: 'main' });
		await assertSameAsPrometheus(s2.sc, s2.show);
		assert.ok(s2.sc.series_count === 1 && s2.sc.statistics.min >= 1, `the test's session not counted: ${s2.show}`);
	});

	test('filters with metacharacters are escaped: exact series, never injected', async () => {
		const w = range();
		const cases = [
			['/a"b\\c', 7],
			['/a"} or vector(42) #', 11],
			['/plain', 3],
		];
		for (const [value, v] of cases) {
			for (const instance of ['direct', 'main']) {
				const { sc, show } = await call({ metric_name: 'fixture_quirky_info', filters: { path: value }, start_time: w.start_time, end_time: w.end_time, step: '1s', instance });
				assert.equal(sc.series_count, 1, show);
				assert.equal(sc.series[0].labels.path, value, show);
				assert.equal(sc.series[0].statistics.min, v, show);
				assert.equal(sc.series[0].statistics.max, v, show);
				await assertSameAsPrometheus(sc, show);
			}
		}
		// values no series has: no data, not an error, and nothing else
		for (const value of ['/a"b', 'lab\nroom', '.*', '"} or vector(42)', "'", '\\', '{{', 'ünïcödé ☃']) {
			const { sc, text, show } = await call({ metric_name: 'fixture_quirky_info', filters: { path: value }, start_time: w.start_time, end_time: w.end_time, step: '1s' });
			assert.equal(sc.series_count, 0, show);
			assert.equal(sc.points, 0);
			assert.match(text, /^No data available for this metric in the specified time range\.$/m, show);
		}
	});

	test('a result over 10,000 points (many series) is refused with how to narrow it', async () => {
		const w = range();
		const n = w.to - w.from + 1;
		assert.ok(MANY_SERIES * n > 10000, `only ${MANY_SERIES * n} points`);
		const args = { metric_name: 'fixture_many_series', start_time: w.start_time, end_time: w.end_time, step: '1s' };
		const { sc, show } = await callError(args, 'invalid_query');
		assert.equal(sc.points, MANY_SERIES * n, show);
		assert.equal(sc.series_count, MANY_SERIES, show);
		assert.match(sc.message, new RegExp(`${MANY_SERIES * n} points in ${MANY_SERIES} series`), show);
		assert.match(sc.suggestion, /filters|aggregation/, show);
		const step = /step \(at least (\d+)s\)/.exec(sc.suggestion);
		assert.ok(step, `no step offered: ${show}`);
		// each way out it offers works
		const bigger = await call({ ...args, step: `${step[1]}s` });
		assert.equal(bigger.sc.series_count, MANY_SERIES, bigger.show);
		assert.ok(bigger.sc.points <= 10000, bigger.show);
		const summed = await call({ ...args, aggregation: 'sum' });
		assert.equal(summed.sc.series_count, 1, summed.show);
		for (const [, v] of summed.sc.series[0].values) assert.equal(v, (MANY_SERIES * (MANY_SERIES - 1)) / 2);
		const one = await call({ ...args, filters: { i: '7' } });
		assert.equal(one.sc.series_count, 1);
		assert.equal(one.sc.statistics.max, 7);
	});

	test('no data in range: the metric exists, the answer says so', async () => {
		const w = range();
		const { sc, text, show } = await call({ metric_name: 'fixture_temperature_celsius', filters: { room: 'attic' }, start_time: w.start_time, end_time: w.end_time });
		assert.equal(sc.series_count, 0, show);
		assert.equal(sc.statistics.count, 0);
		assert.equal(sc.statistics.min, null);
		assert.match(text, /^No data available for this metric in the specified time range\.$/m);
	});

	test('default range and step: the last hour at about 500 points', async () => {
		const { sc, show } = await call({ metric_name: 'fixture_humidity_ratio' });
		const span = Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from);
		assert.ok(Math.abs(span - 3600000) <= sc.step_seconds * 1000, `range ${span} ms: ${show}`);
		assert.ok(Math.abs(Date.parse(sc.time_range.to) - Date.now()) < 60000, show);
		assert.ok(3600 / sc.step_seconds <= 500 && 3600 / sc.step_seconds >= 100, `step ${sc.step_seconds}: ${show}`);
		assert.equal(sc.unit, 'ratio');
		await assertSameAsPrometheus(sc, show);
	});
});

describe('query_metrics: the [Prometheus] source of mapped services', () => {
	// The gateway has no database here: the span sources are unavailable
	// and Prometheus still answers.
	async function qm(args, { expectError = false } = {}) {
		const r = await client.callTool({ name: 'query_metrics', arguments: args }, undefined, { timeout: 30000 });
		const text = textOf(r);
		const show = `query_metrics(${JSON.stringify(args)}) -> ${text.slice(0, 2000)}`;
		assert.equal(r.isError === true, expectError, `isError ${r.isError}: ${show}`);
		return { r, text, sc: r.structuredContent, show };
	}
	// A window of scraped data; the tool evaluates increase() over it at
	// its end, and so does every PromQL written here.
	function win() {
		const w = range();
		return { from: iso(w.from * 1000), to: iso(w.to * 1000), toS: w.to, secs: w.to - w.from };
	}
	const keyOf = (row) => JSON.stringify([row.route ?? row.method ?? row.operation, row.method && row.route ? row.method : (row.table ?? '')]);
	// {key: value} from an instant query grouped by the labels of p
	async function byKey(expr, t, p) {
		const out = {};
		for (const x of await prom.query(expr, t)) {
			const m = x.metric;
			const k =
				p === 'http'
					? JSON.stringify([m.http_route, m.http_request_method.toUpperCase()])
					: p === 'grpc'
						? JSON.stringify([m.rpc_method.replace(/^\/+/, ''), ''])
						: JSON.stringify([m.db_operation_name.toUpperCase(), m.db_collection_name]);
			out[k] = (out[k] ?? 0) + Number(x.value[1]);
		}
		return out;
	}
	const LABELS = { http: 'http_route, http_request_method', grpc: 'rpc_method', sql: 'db_operation_name, db_collection_name' };
	const METRIC = { http: 'http_server_request_duration_seconds', grpc: 'rpc_server_duration_seconds', sql: 'db_client_operation_duration_seconds' };
	const ERROR = { http: ',http_response_status_code=~"5.."', grpc: ',rpc_grpc_status_code!="0"', sql: ',error_type!=""' };

	// Every prometheus row equals what Prometheus answers to PromQL
	// written here: requests (rounded), error rate, P50/P95/P99; and
	// every key Prometheus has is a row.
	async function assertRowsAsPrometheus(sc, w, sel, show) {
		for (const p of ['http', 'grpc', 'sql']) {
			const m = METRIC[p];
			const rows = sc[p].filter((x) => x.source === 'prometheus');
			const total = await byKey(`sum by (${LABELS[p]}) (increase(${m}_count{${sel}}[${w.secs}s]))`, w.toS, p);
			const errors = await byKey(`sum by (${LABELS[p]}) (increase(${m}_count{${sel}${ERROR[p]}}[${w.secs}s]))`, w.toS, p);
			const keys = Object.keys(total).filter((k) => total[k] >= 0.5);
			assert.deepEqual(rows.map(keyOf).sort(), keys.sort(), `${p} keys: ${show}`);
			for (const row of rows) {
				const k = keyOf(row);
				assert.equal(row.requests, Math.round(total[k]), `${p} ${k} requests: ${show}`);
				close(row.error_rate_pct, (100 * (errors[k] ?? 0)) / total[k], `${p} ${k} error rate`);
				for (const [q, f] of [[0.5, 'p50_ms'], [0.95, 'p95_ms'], [0.99, 'p99_ms']]) {
					const want = await byKey(`histogram_quantile(${q}, sum by (le, ${LABELS[p]}) (increase(${m}_bucket{${sel}}[${w.secs}s])))`, w.toS, p);
					close(row[f], 1000 * want[k], `${p} ${k} ${f}`);
				}
			}
		}
	}

	test('HTTP, gRPC and SQL rows from the histograms, equal to PromQL and to the known buckets', async () => {
		const w = win();
		const { text, sc, show } = await qm({ service: 'checkout', from: w.from, to: w.to });
		assert.equal(sc.sources.prometheus, 'ok', show);
		assert.match(sc.sources.ebpf, /^unavailable: /, show);
		assert.match(sc.sources.otlp, /^unavailable: /, show);
		assert.match(text, /eBPF spans unavailable: /, show);
		for (const h of ['HTTP Metrics [Prometheus]:', 'gRPC Metrics [Prometheus]:', 'SQL Metrics [Prometheus]:']) assert.ok(text.includes(h), `no "${h}": ${show}`);
		assert.match(text, /increase\(\) over the range/, show);
		await assertRowsAsPrometheus(sc, w, 'service_name="checkout"', show);
		// the values the target serves (ratios are exact: every series of a
		// key is scraped at the same instants)
		const row = (p, pred) => sc[p].find((x) => x.source === 'prometheus' && pred(x));
		const pay = row('http', (x) => x.route === '/api/pay' && x.method === 'GET');
		close(pay.error_rate_pct, 20, 'GET /api/pay error rate');
		close(pay.p50_ms, 75, 'GET /api/pay p50', 1e-6);
		close(pay.p95_ms, 500, 'GET /api/pay p95 (rank in +Inf: the highest finite bound)', 1e-6);
		const orders = row('http', (x) => x.route === '/api/orders');
		assert.equal(orders.method, 'POST', 'the HTTP method is upper-cased as the spans have it');
		close(orders.p95_ms, 420, 'POST /api/orders p95', 1e-6);
		close(orders.p99_ms, 484, 'POST /api/orders p99', 1e-6);
		assert.equal(orders.error_rate_pct, 0);
		const add = row('grpc', (x) => x.method === 'shop.Cart/Add');
		assert.ok(add, `gRPC method without its leading '/': ${show}`);
		close(add.error_rate_pct, 25, 'gRPC error rate (status code other than 0)');
		close(add.p50_ms, 30, 'gRPC p50', 1e-6);
		const sel = row('sql', (x) => x.operation === 'SELECT' && x.table === 'orders');
		close(sel.error_rate_pct, 100 / 11, 'SQL error rate (error_type set)');
		close(sel.p50_ms, 2.125, 'SQL p50', 1e-6);
		close(sel.p95_ms, 100, 'SQL p95', 1e-6);
		// requests: increase() extrapolated over the window, about rate x window
		const perSecond = (labels) => CALL_SERIES.filter((c) => Object.entries(labels).every(([k, v]) => c.labels[k] === v)).reduce((a, c) => a + c.buckets[c.buckets.length - 1][1], 0);
		const want = perSecond({ service_name: 'checkout', http_route: '/api/pay' }) * w.secs;
		assert.ok(Math.abs(pay.requests - want) <= 0.15 * want, `GET /api/pay requests ${pay.requests}, about ${want} expected`);
		assert.match(text, /Route: \/api\/pay \(GET\), Requests: [\d,]+, P50: 75(\.0)?ms, P95: 500(\.0)?ms, P99: 500(\.0)?ms, Errors: 20\.0%/, show);
	});

	test('filters: method (any case), status class, gRPC method with a slash, protocol', async () => {
		const w = win();
		const get = await qm({ service: 'checkout', from: w.from, to: w.to, http_method: 'get' });
		assert.deepEqual(get.sc.http.map((x) => `${x.method} ${x.route}`), ['GET /api/pay'], get.show);
		assert.deepEqual(get.sc.grpc, [], 'an HTTP filter asks for HTTP only');
		const fives = await qm({ service: 'checkout', from: w.from, to: w.to, status_code_range: '5xx' });
		assert.deepEqual(fives.sc.http.map((x) => x.route), ['/api/pay'], fives.show);
		close(fives.sc.http[0].error_rate_pct, 100, 'only 5xx calls were counted (ratio of two increases: floating point)');
		await assertRowsAsPrometheus(fives.sc, w, 'service_name="checkout",http_response_status_code=~"5.."', fives.show);
		const g = await qm({ service: 'checkout', from: w.from, to: w.to, grpc_method: '/shop.Cart/Add' });
		assert.deepEqual(g.sc.grpc.map((x) => x.method), ['shop.Cart/Add'], g.show);
		const ok = await qm({ service: 'checkout', from: w.from, to: w.to, grpc_status_code: 0 });
		assert.equal(ok.sc.grpc[0].error_rate_pct, 0, ok.show);
		const sql = await qm({ service: 'checkout', from: w.from, to: w.to, protocol: 'sql', sql_operation: 'Select', table_name: 'orders' });
		assert.equal(sql.sc.sql.length, 1, sql.show);
		assert.deepEqual(sql.sc.http, []);
		const none = await qm({ service: 'checkout', from: w.from, to: w.to, http_route: '/nope' });
		assert.match(none.text, /^No metrics found for service "checkout"/m, none.show);
		assert.equal(none.sc.sources.prometheus, 'no_data', none.show);
	});

	test('a service mapped to another label value; unmapped and unreachable services', async () => {
		const w = win();
		const billing = await qm({ service: 'billing', from: w.from, to: w.to });
		assert.deepEqual(billing.sc.http.map((x) => `${x.source} ${x.method} ${x.route}`), ['prometheus POST /v1/charges'], billing.show);
		await assertRowsAsPrometheus(billing.sc, w, 'service_name="payments-v2"', billing.show);
		// [prometheus.nowhere] serves "ghost": its failure is reported, the call answers
		const ghost = await qm({ service: 'ghost', from: w.from, to: w.to });
		assert.match(ghost.sc.sources.prometheus, /^unavailable: .*instance nowhere/, ghost.show);
		assert.match(ghost.text, /Prometheus metrics unavailable: /, ghost.show);
		assert.match(ghost.text, /No metrics found for service "ghost"/, ghost.show);
		// no mapping and no database: nothing can answer
		const lone = await qm({ service: 'unmapped', from: w.from, to: w.to }, { expectError: true });
		assert.ok(lone.text.length > 0, lone.show);
		assert.equal(lone.sc?.sources?.prometheus, undefined, lone.show);
	});
});

describe('caches and limits', () => {
	test('metric names and metadata come from the cache on a second call', async () => {
		const w = range();
		const args = { metric_name: 'fixture_humidity_ratio', instance: 'byname', start_time: w.start_time, end_time: w.end_time, step: '1s' };
		await call(args); // byname has fetched names before: cached now
		const m0 = await gatewayMetrics();
		front.resetRequests();
		await call(args);
		await call({ ...args, metric_name: 'fixture_temperature_celsius' });
		const reqs = front.requests().map((r) => r.uri.replace(/\?.*/, ''));
		// the data source, the names and both metrics' metadata were
		// fetched before: only the two range queries go out
		assert.deepEqual(reqs, ['/api/datasources/proxy/uid/prom-main/api/v1/query_range', '/api/datasources/proxy/uid/prom-main/api/v1/query_range']);
		const m1 = await gatewayMetrics();
		const hits = (m) => metricValue(m, 'sextant_grafana_cache_lookups_total', { instance: 'byname', cache: 'names', result: 'hit' });
		assert.ok(hits(m1) - hits(m0) >= 2, `names cache hits ${hits(m0)} -> ${hits(m1)}`);
	});

	test(`at most max_concurrent (${NARROW_SLOTS}) upstream requests at once; the rest wait`, async () => {
		const w = range();
		narrow.requests = 0;
		narrow.maxInflight = 0;
		let peak = 0;
		let done = false;
		const calls = Promise.all(
			['q1', 'q2', 'q1', 'q2', 'q1'].map((queue) =>
				call({ metric_name: 'fixture_queue_depth', filters: { queue }, instance: 'narrow', start_time: w.start_time, end_time: w.end_time, step: '1s' }),
			),
		).finally(() => (done = true));
		while (!done) {
			const n = metricValue(await gatewayMetrics(), 'sextant_grafana_inflight_queries', { instance: 'narrow' });
			peak = Math.max(peak, n);
			await sleep(25);
		}
		for (const r of await calls) {
			assert.equal(r.sc.series_count, 1, r.show);
			await assertSameAsPrometheus(r.sc, r.show);
		}
		assert.ok(narrow.requests >= 5, `${narrow.requests} requests reached the data source`);
		assert.equal(narrow.maxInflight, NARROW_SLOTS, `the data source saw ${narrow.maxInflight} requests at once`);
		assert.ok(peak <= NARROW_SLOTS, `sextant_grafana_inflight_queries reached ${peak}`);
		assert.equal(metricValue(await gatewayMetrics(), 'sextant_grafana_inflight_queries', { instance: 'narrow' }), 0);
	});
});

describe('upstream failures', () => {
	test('wrong or missing token: grafana_unavailable naming the 401, token never shown', async () => {
		for (const instance of ['badtoken', 'notoken']) {
			front.resetRequests();
			const { sc, text, show } = await callError({ metric_name: 'fixture_humidity_ratio', instance }, 'grafana_unavailable');
			assert.equal(sc.http_status, 401, show);
			assert.match(sc.message, /401/, show);
			assert.match(sc.message, /token/i, show);
			assert.ok(sc.url.startsWith(front.url), show);
			assert.ok(!text.includes(WRONG_TOKEN) && !JSON.stringify(sc).includes(WRONG_TOKEN), 'the token is in the answer');
			const reqs = front.requests();
			assert.ok(reqs.length >= 1 && reqs.every((r) => r.status === 401), JSON.stringify(reqs));
			assert.equal(reqs.length, 1, `a 401 was retried: ${JSON.stringify(reqs)}`);
		}
	});

	test('token_file is read again when it changes', async () => {
		const w = range();
		const args = { metric_name: 'fixture_humidity_ratio', instance: 'main', start_time: w.start_time, end_time: w.end_time, step: '1s' };
		await call(args);
		fs.writeFileSync(tokenFile, `${WRONG_TOKEN}\n`);
		try {
			const bad = await callError(args, 'grafana_unavailable');
			assert.equal(bad.sc.http_status, 401, bad.show);
		} finally {
			fs.writeFileSync(tokenFile, `${TOKEN}\n`);
		}
		const good = await call(args);
		await assertSameAsPrometheus(good.sc, good.show);
	});

	test('data source by name, unknown uid, not Prometheus', async () => {
		front.resetRequests();
		const w = range();
		await call({ metric_name: 'fixture_humidity_ratio', instance: 'byname', start_time: w.start_time, end_time: w.end_time });
		const nods = await callError({ metric_name: 'fixture_humidity_ratio', instance: 'nods' }, 'grafana_unavailable');
		assert.equal(nods.sc.http_status, 404, nods.show);
		assert.match(nods.sc.message, /no-such-uid/, nods.show);
		assert.match(nods.sc.message, /Data source not found/, nods.show);
		const logs = await callError({ metric_name: 'fixture_humidity_ratio', instance: 'logs' }, 'grafana_unavailable');
		assert.match(logs.sc.message, /loki/, logs.show);
		const uris = front.requests().map((r) => `${r.uri} ${r.status}`);
		assert.ok(uris.includes('/api/datasources/uid/no-such-uid 404'), uris.join('\n'));
		assert.ok(uris.includes('/api/datasources/uid/loki-logs 200'), uris.join('\n'));
		assert.ok(!uris.some((u) => u.startsWith('/api/datasources/proxy/uid/loki-logs/')), `queried a Loki data source: ${uris.join('\n')}`);
	});

	test('unreachable URL: grafana_unavailable with the URL tried, after a retry', async () => {
		const retries = () => gatewayMetrics().then((m) => metricValue(m, 'sextant_grafana_retries_total', { instance: 'nowhere' }));
		const r0 = await retries();
		const t0 = Date.now();
		const { sc, text, show } = await callError({ metric_name: 'up', instance: 'nowhere' }, 'grafana_unavailable');
		assert.equal((await retries()) - r0, 1, 'retries = 1: one retry after the refused connection');
		assert.match(sc.message, /circuit breaker closed/, show);
		assert.ok(sc.url.startsWith(`http://127.0.0.1:${closedPort}/api/v1/`), show);
		assert.ok(text.includes(`127.0.0.1:${closedPort}`), show);
		assert.equal(sc.instance, 'nowhere');
		assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
	});

	test('slow data source: the call fails after timeout_ms with grafana_unavailable', async () => {
		const t0 = Date.now();
		slow.requests = 0;
		const { sc, show } = await callError({ metric_name: 'up', instance: 'slow' }, 'grafana_unavailable');
		const took = Date.now() - t0;
		assert.match(sc.message, new RegExp(`${SLOW_TIMEOUT_MS} ms|time`), show);
		assert.ok(sc.url.startsWith(`${front.url}/api/datasources/proxy/uid/prom-slow/`), show);
		assert.ok(took >= SLOW_TIMEOUT_MS && took < SLOW_DELAY_MS, `took ${took} ms, timeout ${SLOW_TIMEOUT_MS}, upstream delay ${SLOW_DELAY_MS}`);
		assert.ok(slow.requests >= 1, 'never reached the slow data source');
	});

	test('Prometheus stopped: errors with the URL, circuit opens (error and /metrics), closes after the restart', async () => {
		const w = range();
		const args = { metric_name: 'fixture_temperature_celsius', filters: { room: 'lab' }, start_time: w.start_time, end_time: w.end_time, step: '1s' };
		const before = await call(args);
		// names, metadata and data source of both instances cached now:
		// each call below sends its range query only
		await call({ ...args, instance: 'main' });
		const opens0 = metricValue(await gatewayMetrics(), 'sextant_grafana_circuit_opens_total', { instance: 'direct' });
		await prom.stop();
		try {
			// through Grafana: nginx answers 502, retried once (retries = 1)
			front.resetRequests();
			const g = await callError({ ...args, instance: 'main' }, 'grafana_unavailable');
			assert.ok(g.sc.url.startsWith(`${front.url}/api/datasources/proxy/uid/prom-main/api/v1/`), g.show);
			assert.match(g.sc.message, /502/, g.show);
			const tried = front.requests();
			assert.equal(tried.length, 2, `not one retry: ${JSON.stringify(tried)}`);
			assert.ok(tried.every((r) => r.status === 502 && r.uri.startsWith('/api/datasources/proxy/uid/prom-main/api/v1/query_range')), JSON.stringify(tried));
			// direct: refused connections until the breaker opens
			let last;
			for (let i = 1; i <= BREAKER_FAILURES; i++) {
				last = await callError(args, 'grafana_unavailable');
				assert.ok(last.sc.url.startsWith(`${prom.url}/api/v1/`), last.show);
				assert.equal(last.sc.circuit_breaker, i < BREAKER_FAILURES ? 'closed' : 'open', last.show);
			}
			assert.match(last.sc.message, /circuit breaker open/, last.show);
			const t0 = Date.now();
			const open = await callError(args, 'grafana_unavailable');
			assert.ok(Date.now() - t0 < 1000, 'an open breaker still waited for the upstream');
			assert.match(open.sc.message, /circuit breaker open/, open.show);
			assert.match(open.sc.suggestion, /cool-down|wait/i, open.show);
			assert.equal(open.sc.circuit_breaker, 'open');
			const m = await gatewayMetrics();
			assert.equal(metricValue(m, 'sextant_grafana_circuit_state', { instance: 'direct' }), 2, 'state not open in /metrics');
			assert.equal(metricValue(m, 'sextant_grafana_circuit_opens_total', { instance: 'direct' }), opens0 + 1);
			assert.equal(metricValue(m, 'sextant_grafana_circuit_state', { instance: 'byname' }), 0, 'another instance\'s breaker moved');
		} finally {
			await prom.start();
		}
		// still open until the cool-down is over, then one trial closes it
		await sleep(BREAKER_COOLDOWN_S * 1000 + 200);
		const again = await call(args);
		assert.deepEqual(again.sc.series, before.sc.series, 'the answer after the restart differs');
		await assertSameAsPrometheus(again.sc, again.show);
		const m = await gatewayMetrics();
		assert.equal(metricValue(m, 'sextant_grafana_circuit_state', { instance: 'direct' }), 0, 'breaker not closed in /metrics');
		const g2 = await call({ ...args, instance: 'main' });
		assert.deepEqual(g2.sc.series, before.sc.series);
		assert.match(srv.stderr(), /circuit breaker open/);
	});

	test('tokens never reach the log', async () => {
		const log = srv.stderr();
		assert.match(log, /badtoken/, 'the 401s were not logged at all');
		assert.ok(!log.includes(TOKEN), 'the token is in the log');
		assert.ok(!log.includes(WRONG_TOKEN), 'the wrong token is in the log');
	});
});

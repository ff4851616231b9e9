// otlp.test.mjs - the OTLP/HTTP receiver fed by the real OpenTelemetry JS
// SDK (sdk-trace-base and sdk-metrics with the OTLP JSON and protobuf
// exporters): every column of the stored rows is read back with psql and
// compared with what the SDK sent.  Also eBPF classification and
// deduplication, bad bodies (malformed, truncated, oversized, wrong type,
// gzip bomb, one bad span in a batch), NUL characters in strings, the
// database going down and coming back, and [ingest] keys.  One throwaway PostgreSQL for the whole file.

import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';

import { ROOT_CONTEXT, SpanKind, SpanStatusCode, ValueType, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { AggregationTemporality, DataPointType, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';

import { startServer, runSextant } from './lib/server.mjs';
import { startPostgres, pgSh, psql } from './lib/pg.mjs';
import { request, parseMetrics, metricValue } from './lib/http.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- time and ids -----------------------------------------------------------

const NS = 1000000000n;
const ns = (hr) => BigInt(hr[0]) * NS + BigInt(hr[1]);
const hr = (n) => [Number(n / NS), Number(n % NS)];
// A minute ago, on a whole second: span times are offsets from here, with
// sub-microsecond digits so that nanosecond precision is checked.
const T0 = (BigInt(Date.now()) / 1000n - 60n) * NS;
const at = (offsetNs) => hr(T0 + BigInt(offsetNs));

// A random id of n bytes, in hex (never all zero: the first byte is set).
function newId(bytes) {
	const id = crypto.randomBytes(bytes);
	id[0] |= 0x10;
	return id.toString('hex');
}

// ---- SDK plumbing -----------------------------------------------------------

const providers = []; // shut down in after() if a test failed first

// Wraps an SDK exporter: records what it was given and every result.
function recording(inner) {
	const rec = {
		sent: [],
		results: [],
		inner,
		export(items, cb) {
			rec.sent.push(items);
			inner.export(items, (res) => {
				rec.results.push(res);
				cb(res);
			});
		},
		forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
		shutdown: () => inner.shutdown(),
	};
	if (inner.selectAggregationTemporality) rec.selectAggregationTemporality = (t) => inner.selectAggregationTemporality(t);
	if (inner.selectAggregation) rec.selectAggregation = (t) => inner.selectAggregation(t);
	return rec;
}

// Runs exporter.export once; resolves the ExportResult.
const exportOnce = (exporter, items) => new Promise((resolve) => exporter.export(items, resolve));

function tracerSetup({ exporter, resource, scope = ['sextant-otlp-test', '0.3.1'], idGenerator, batch = true }) {
	const rec = recording(exporter);
	const provider = new BasicTracerProvider({
		resource: resourceFromAttributes(resource),
		idGenerator,
		spanProcessors: [batch ? new BatchSpanProcessor(rec, { scheduledDelayMillis: 60000 }) : new SimpleSpanProcessor(rec)],
	});
	providers.push(provider);
	return { provider, rec, tracer: provider.getTracer(...scope) };
}

const RESOURCE = {
	'service.name': 'checkout',
	'service.namespace': 'shop',
	'service.version': '1.4.2',
	'k8s.namespace.name': 'shop-prod',
	'k8s.deployment.name': 'checkout',
	'k8s.pod.name': 'checkout-7d9f8-x2x4q',
	'host.name': 'node-3.example',
	'deployment.environment.name': 'test',
	'telemetry.sdk.name': 'opentelemetry',
	'telemetry.sdk.language': 'nodejs',
};

// The columns extracted from attributes, all NULL unless a span sets them.
const NO_EXTRACTED = {
	http_method: null, http_route: null, url_path: null, http_status_code: null,
	rpc_system: null, rpc_service: null, rpc_method: null, rpc_grpc_status_code: null,
	db_system: null, db_operation: null, db_table: null, session_id: null,
	gen_ai_provider: null, gen_ai_operation: null, gen_ai_request_model: null, gen_ai_response_model: null,
	gen_ai_input_tokens: null, gen_ai_output_tokens: null,
};

// What each span of makeSpans() must give in the extracted columns, by
// span name: current and older semantic-convention names both.
const EXTRACTED = {
	'GET /api/orders/{id}': {
		http_method: 'GET', http_route: '/api/orders/{id}', url_path: '/api/orders/42', http_status_code: 200, session_id: 'sess-42',
	},
	// old names; http.route absent: the route is the target's path (lib/otlp/otlp.h)
	'POST /v1/pay': { http_method: 'POST', http_route: '/v1/pay', url_path: '/v1/pay', http_status_code: 502 },
	'SELECT orders': { db_system: 'postgresql', db_operation: 'SELECT', db_table: 'orders' },
	'UPDATE inventory': { db_system: 'postgresql', db_operation: 'UPDATE', db_table: 'inventory' },
	'payments.Payments/Charge': { rpc_system: 'grpc', rpc_service: 'payments.Payments', rpc_method: 'Charge', rpc_grpc_status_code: 14 },
	'chat gpt-4o': {
		gen_ai_provider: 'openai', gen_ai_operation: 'chat', gen_ai_request_model: 'gpt-4o', gen_ai_response_model: 'gpt-4o-2024-08-06',
		gen_ai_input_tokens: 120, gen_ai_output_tokens: 45, session_id: 'sess-42',
	},
	'chat claude-sonnet-4': {
		gen_ai_provider: 'anthropic', gen_ai_request_model: 'claude-sonnet-4', gen_ai_input_tokens: 300, gen_ai_output_tokens: 80,
	},
	'orders publish': {},
	// current names win over older ones whatever the order
	'orders process': { http_method: 'PUT', http_status_code: 204 },
};

// One request's worth of spans covering every column: a server root with
// children of each kind, old and new semantic-convention names, an error
// with an exception event, a link, and a remote parent with a trace state.
// Nine spans, all ended: the tracer's processor has them.
function makeSpans(tracer) {
	const root = tracer.startSpan('GET /api/orders/{id}', {
		kind: SpanKind.SERVER,
		startTime: at(123456789),
		attributes: {
			'http.request.method': 'GET',
			'http.route': '/api/orders/{id}',
			'url.path': '/api/orders/42',
			'http.response.status_code': 200,
			'session.id': 'sess-42',
			'app.cache_hit': false,
			'app.ratio': 0.25,
			'app.tags': ['a', 'b'],
			'app.items': 3,
			'app.note': 'tab\there "quoted" \\ back\nslash, ünïcødé ✓',
		},
	});
	root.setStatus({ code: SpanStatusCode.OK });
	const ctx = trace.setSpan(ROOT_CONTEXT, root);

	const pay = tracer.startSpan('POST /v1/pay', {
		kind: SpanKind.CLIENT,
		startTime: at(200000001),
		attributes: { 'http.method': 'POST', 'http.target': '/v1/pay', 'http.status_code': 502, 'server.address': 'pay.internal' },
	}, ctx);
	pay.addEvent('retry', { 'retry.attempt': 2 }, at(210000003));
	pay.recordException(new TypeError('payment gateway timed out'), at(260000007));
	pay.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream returned 502' });
	pay.end(at(261000009));

	const select = tracer.startSpan('SELECT orders', {
		kind: SpanKind.CLIENT,
		startTime: at(130000011),
		attributes: {
			'db.system': 'postgresql', 'db.operation': 'SELECT', 'db.sql.table': 'orders',
			'db.statement': 'SELECT * FROM orders WHERE id = $1',
		},
	}, ctx);
	select.end(at(131500013));

	const update = tracer.startSpan('UPDATE inventory', {
		kind: SpanKind.INTERNAL,
		startTime: at(140000017),
		attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'UPDATE', 'db.collection.name': 'inventory' },
	}, ctx);
	update.end(at(140900019));

	const grpc = tracer.startSpan('payments.Payments/Charge', {
		kind: SpanKind.CLIENT,
		startTime: at(150000023),
		attributes: { 'rpc.system': 'grpc', 'rpc.service': 'payments.Payments', 'rpc.method': 'Charge', 'rpc.grpc.status_code': 14 },
	}, ctx);
	grpc.setStatus({ code: SpanStatusCode.ERROR });
	grpc.end(at(159000029));

	const gpt = tracer.startSpan('chat gpt-4o', {
		kind: SpanKind.CLIENT,
		startTime: at(300000031),
		attributes: {
			'gen_ai.system': 'openai', 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o',
			'gen_ai.response.model': 'gpt-4o-2024-08-06', 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 45,
			'session.id': 'sess-42',
		},
	}, ctx);
	gpt.end(at(1300000037));

	const claude = tracer.startSpan('chat claude-sonnet-4', {
		kind: SpanKind.CLIENT,
		startTime: at(1400000041),
		attributes: {
			'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4',
			'gen_ai.usage.prompt_tokens': 300, 'gen_ai.usage.completion_tokens': 80,
		},
	}, ctx);
	claude.end(at(2100000043));

	const publish = tracer.startSpan('orders publish', {
		kind: SpanKind.PRODUCER,
		startTime: at(2200000047),
		attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' },
		links: [{ context: select.spanContext(), attributes: { 'link.reason': 'read before publish' } }],
	}, ctx);
	publish.end(at(2200500053));
	root.end(at(2300000059));

	// A consumer continuing a remote trace that carries a trace state.
	const remote = trace.setSpanContext(ROOT_CONTEXT, {
		traceId: newId(16),
		spanId: newId(8),
		traceFlags: 1,
		isRemote: true,
		traceState: new TraceState('sextant=t61rcWkgMzE,congo=ucfJifl5GOE'),
	});
	const process_ = tracer.startSpan('orders process', {
		kind: SpanKind.CONSUMER,
		startTime: at(2400000061),
		attributes: {
			'http.method': 'GET', 'http.request.method': 'PUT',
			'http.status_code': 500, 'http.response.status_code': 204,
		},
	}, remote);
	process_.end(at(2400700067));
}

// ---- rows -------------------------------------------------------------------

const HEX_RE = /^[0-9a-f]+$/;
const sqlList = (ids) => ids.map((id) => {
	assert.match(id, HEX_RE);
	return `'${id}'`;
}).join(',');

// Every column of the spans rows of these trace ids, as JSON: ids in hex,
// the start as exact unix nanoseconds and as microseconds (start_time).
async function spanRows(url, traceIds, extraWhere = 'true') {
	const out = await psql(url, `
		SELECT coalesce(jsonb_agg(r ORDER BY r->>'trace_id', r->>'name', r->>'source'), '[]')
		FROM (SELECT to_jsonb(s) - 'trace_id' - 'span_id' - 'parent_span_id' - 'start_time'
			|| jsonb_build_object(
				'trace_id', encode(trace_id, 'hex'),
				'span_id', encode(span_id, 'hex'),
				'parent_span_id', encode(parent_span_id, 'hex'),
				'start_unix_nano', sextant_unix_nano(start_time, start_nanos)::text,
				'start_time_us', (extract(epoch FROM start_time) * 1000000)::bigint::text) AS r
		      FROM spans s
		      WHERE encode(trace_id, 'hex') IN (${sqlList(traceIds)}) AND ${extraWhere}) q`);
	return JSON.parse(out);
}

const attrsObj = (a) => JSON.parse(JSON.stringify(a ?? {}));

// The row a ReadableSpan must become (links and trace_state: see the test
// of their own).
function expectedSpanRow(s, source = 'otlp', extracted = EXTRACTED[s.name]) {
	assert.ok(extracted, `no expected columns for span ${s.name}`);
	const start = ns(s.startTime);
	const end = ns(s.endTime);
	const res = s.resource.attributes;
	return {
		trace_id: s.spanContext().traceId,
		span_id: s.spanContext().spanId,
		parent_span_id: s.parentSpanContext?.spanId ?? null,
		start_unix_nano: start.toString(),
		start_time_us: (start / 1000n).toString(),
		start_nanos: Number(start % 1000n),
		duration_ns: Number(end - start),
		kind: s.kind + 1, // API SpanKind is OTLP's minus one
		status_code: s.status.code,
		status_message: s.status.message ?? null,
		source,
		name: s.name,
		service_name: res['service.name'],
		service_namespace: res['service.namespace'] ?? null,
		service_version: res['service.version'] ?? null,
		k8s_namespace_name: res['k8s.namespace.name'] ?? null,
		k8s_deployment_name: res['k8s.deployment.name'] ?? null,
		k8s_pod_name: res['k8s.pod.name'] ?? null,
		host_name: res['host.name'] ?? null,
		scope_name: s.instrumentationScope.name,
		scope_version: s.instrumentationScope.version ?? null,
		...NO_EXTRACTED,
		...extracted,
		attributes: attrsObj(s.attributes),
		resource_attributes: attrsObj(res),
		events: s.events.length === 0 ? null : s.events.map((e) => ({
			time_unix_nano: ns(e.time).toString(),
			name: e.name,
			attributes: attrsObj(e.attributes),
		})),
	};
}

const withoutLinks = ({ links, trace_state, ...rest }) => rest;
const byKey = (a, b) => (a.trace_id + a.name + a.source < b.trace_id + b.name + b.source ? -1 : 1);

// Every column of metric_points rows of a service; times in microseconds.
async function pointRows(url, service) {
	const out = await psql(url, `
		SELECT coalesce(jsonb_agg(r ORDER BY r->>'name', r->>'attributes'), '[]')
		FROM (SELECT to_jsonb(m) - 'time' - 'start_time'
			|| jsonb_build_object(
				'time_us', (extract(epoch FROM time) * 1000000)::bigint::text,
				'start_time_us', (extract(epoch FROM start_time) * 1000000)::bigint::text) AS r
		      FROM metric_points m WHERE service_name = '${service}') q`);
	return JSON.parse(out);
}

// ---- raw requests -----------------------------------------------------------

// An OTLP/JSON request with the given spans (objects in OTLP/JSON form).
function jsonTraces(spans, service = 'raw-client') {
	return JSON.stringify({
		resourceSpans: [{
			resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
			scopeSpans: [{ scope: { name: 'raw' }, spans }],
		}],
	});
}

function rawSpan(name, { traceId = newId(16), spanId = newId(8), startNs = T0 + 5000000000n } = {}) {
	return {
		traceId, spanId, name, kind: 2,
		startTimeUnixNano: startNs.toString(), endTimeUnixNano: (startNs + 1000n).toString(),
	};
}

const postJson = (srv, path, body, headers = {}) =>
	request(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

// The gateway's resident set in KiB, from /proc/<pid>/status.
function rssKiB(srv) {
	const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8'));
	assert.ok(m, 'no VmRSS line');
	return Number(m[1]);
}

async function waitFor(what, fn, timeoutMs) {
	const deadline = Date.now() + timeoutMs;
	let last;
	while (Date.now() < deadline) {
		last = await fn();
		if (last.ok) return last;
		await sleep(100);
	}
	assert.fail(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

async function ingestCounters(srv) {
	const r = await request(`${srv.url}/metrics`);
	assert.equal(r.status, 200);
	const m = parseMetrics(r.text);
	const c = (signal, outcome) => metricValue(m, 'sextant_ingest_items_total', { signal, outcome });
	return { stored: c('traces', 'stored'), duplicate: c('traces', 'duplicate'), rejected: c('traces', 'rejected'), points: c('metrics', 'stored') };
}

// ---- the tests --------------------------------------------------------------

let pg;
let srv;

before(async () => {
	pg = await startPostgres({ name: 'otlp' });
	srv = await startServer({ name: 'otlp', env: { DATABASE_URL: pg.url } });
});

beforeEach(() => srv?.assertAlive());

after(async () => {
	await Promise.allSettled(providers.map((p) => p.shutdown()));
	if (srv) await srv.kill();
	if (pg) await pg.stop();
});

describe('traces from the OpenTelemetry SDK', () => {
	for (const [label, Exporter, compression] of [
		['JSON exporter (application/json)', JsonTraceExporter, 'none'],
		['protobuf exporter (application/x-protobuf, gzip)', ProtoTraceExporter, 'gzip'],
	]) {
		test(`${label}: every column of every span matches what the SDK sent`, async () => {
			const exporter = new Exporter({ url: `${srv.url}/v1/traces`, compression, timeoutMillis: 10000 });
			const { provider, rec, tracer } = tracerSetup({ exporter, resource: RESOURCE });
			const before_ = await ingestCounters(srv);
			makeSpans(tracer);
			// BatchSpanProcessor: forceFlush rejects when the export fails,
			// and the gateway answers only after COMMIT, so the rows are
			// there as soon as it resolves.
			await provider.forceFlush();
			assert.deepEqual(rec.results.map((r) => r.code), [0], `export results: ${JSON.stringify(rec.results)}`);
			const sent = rec.sent.flat();
			assert.equal(sent.length, 9);

			const after_ = await ingestCounters(srv);
			assert.equal(after_.stored - before_.stored, 9, 'sextant_ingest_items_total{signal="traces",outcome="stored"}');
			await provider.shutdown();

			const traceIds = [...new Set(sent.map((s) => s.spanContext().traceId))];
			const rows = await spanRows(pg.url, traceIds);
			// The shape spelled out (OTLP kind, status, parent, events), so
			// that a surprise in the SDK cannot hide in the derived rows.
			const rootId = sent.find((s) => s.name === 'GET /api/orders/{id}').spanContext().spanId;
			const shape = (r) => [r.name, r.kind, r.status_code, r.status_message,
				r.parent_span_id === null ? 'root' : r.parent_span_id === rootId ? 'child' : 'remote',
				(r.events ?? []).map((e) => [e.name, e.attributes['exception.type'] ?? e.attributes['retry.attempt']])];
			assert.deepEqual(rows.map(shape).sort(), [
				['GET /api/orders/{id}', 2, 1, null, 'root', []],
				['POST /v1/pay', 3, 2, 'upstream returned 502', 'child', [['retry', 2], ['exception', 'TypeError']]],
				['SELECT orders', 3, 0, null, 'child', []],
				['UPDATE inventory', 1, 0, null, 'child', []],
				['chat claude-sonnet-4', 3, 0, null, 'child', []],
				['chat gpt-4o', 3, 0, null, 'child', []],
				['orders process', 5, 0, null, 'remote', []],
				['orders publish', 4, 0, null, 'child', []],
				['payments.Payments/Charge', 3, 2, null, 'child', []],
			]);
			const expected = sent.map((s) => expectedSpanRow(s)).sort(byKey);
			assert.deepEqual(rows.map(withoutLinks).sort(byKey), expected);
		});
	}

	test('links and trace state are stored (spans.links, spans.trace_state)', async () => {
		const exporter = new JsonTraceExporter({ url: `${srv.url}/v1/traces`, timeoutMillis: 10000 });
		const { provider, rec, tracer } = tracerSetup({ exporter, resource: RESOURCE });
		makeSpans(tracer);
		await provider.forceFlush();
		await provider.shutdown();
		const sent = rec.sent.flat();
		const rows = await spanRows(pg.url, [...new Set(sent.map((s) => s.spanContext().traceId))]);
		const got = rows.map((r) => ({ name: r.name, links: r.links, trace_state: r.trace_state }));
		const want = sent.map((s) => ({
			name: s.name,
			links: s.links.length === 0 ? null : s.links.map((l) => ({
				trace_id: l.context.traceId, span_id: l.context.spanId, attributes: attrsObj(l.attributes),
			})),
			trace_state: s.spanContext().traceState?.serialize() ?? null,
		}));
		const byName = (a, b) => (a.name < b.name ? -1 : 1);
		assert.deepEqual(got.sort(byName), want.sort(byName));
	});
});

describe('source classification and deduplication', () => {
	// The same ids every time: a provider whose generator always returns them.
	const fixed = (traceId, spanId) => ({ generateTraceId: () => traceId, generateSpanId: () => spanId });

	async function sendOne({ resource, scope, traceId, spanId, Exporter = JsonTraceExporter }) {
		const exporter = new Exporter({ url: `${srv.url}/v1/traces`, timeoutMillis: 10000 });
		const { provider, rec, tracer } = tracerSetup({ exporter, resource, scope, idGenerator: fixed(traceId, spanId), batch: false });
		const span = tracer.startSpan('GET /health', {
			kind: SpanKind.SERVER,
			startTime: at(9000000123),
			attributes: { 'http.request.method': 'GET', 'http.route': '/health', 'http.response.status_code': 200 },
		});
		span.end(at(9000500456));
		await provider.forceFlush();
		assert.deepEqual(rec.results.map((r) => r.code), [0], `export results: ${JSON.stringify(rec.results)}`);
		await provider.shutdown();
		return rec.sent.flat()[0];
	}

	const EXTRACTED_HEALTH = { http_method: 'GET', http_route: '/health', http_status_code: 200 };

	test('telemetry.sdk.name "beyla" is eBPF; the same ids from an SDK are a second row; a resend is stored once', async () => {
		const traceId = newId(16);
		const spanId = newId(8);
		const c0 = await ingestCounters(srv);
		const ebpf = await sendOne({
			// the resource alone marks it: the scope is an ordinary one
			resource: { 'service.name': 'frontend', 'telemetry.sdk.name': 'beyla', 'telemetry.sdk.language': 'go' },
			scope: ['net/http', '2.1.0'],
			traceId, spanId,
		});
		const otlp = await sendOne({
			resource: { 'service.name': 'frontend', 'telemetry.sdk.name': 'opentelemetry' },
			scope: ['@opentelemetry/instrumentation-http', '0.200.0'],
			traceId, spanId,
			Exporter: ProtoTraceExporter,
		});
		let rows = await spanRows(pg.url, [traceId]);
		assert.deepEqual(rows.map((r) => [r.source, r.span_id, r.scope_name]).sort(), [
			['ebpf', spanId, 'net/http'],
			['otlp', spanId, '@opentelemetry/instrumentation-http'],
		]);

		// The same OTLP span again, through both encodings.
		const json = new JsonTraceExporter({ url: `${srv.url}/v1/traces`, timeoutMillis: 10000 });
		const proto = new ProtoTraceExporter({ url: `${srv.url}/v1/traces`, timeoutMillis: 10000 });
		assert.equal((await exportOnce(json, [otlp])).code, 0);
		assert.equal((await exportOnce(proto, [otlp])).code, 0);
		assert.equal((await exportOnce(json, [ebpf])).code, 0);
		await json.shutdown();
		await proto.shutdown();
		rows = await spanRows(pg.url, [traceId]);
		assert.deepEqual(rows.map((r) => r.source).sort(), ['ebpf', 'otlp'], 'a span sent again must be stored once per source');
		const c1 = await ingestCounters(srv);
		assert.equal(c1.stored - c0.stored, 2, 'stored counter');
		assert.equal(c1.duplicate - c0.duplicate, 3, 'duplicate counter');
		// and both rows are the span as sent, apart from the source
		assert.deepEqual(rows.map(withoutLinks).sort(byKey), [
			expectedSpanRow(ebpf, 'ebpf', EXTRACTED_HEALTH),
			expectedSpanRow(otlp, 'otlp', EXTRACTED_HEALTH),
		].sort(byKey));
	});

	test('the other eBPF markers: opentelemetry-ebpf-instrumentation, scope prefixes of Beyla and OBI', async () => {
		const cases = [
			[{ 'service.name': 'obi-a', 'telemetry.sdk.name': 'opentelemetry-ebpf-instrumentation' }, ['any-scope'], 'ebpf'],
			[{ 'service.name': 'obi-b' }, ['go.opentelemetry.io/obi/pkg/http', '0.1.0'], 'ebpf'],
			[{ 'service.name': 'obi-c' }, ['github.com/grafana/beyla/v2', '2.0.0'], 'ebpf'],
			// near misses stay OTLP
			[{ 'service.name': 'obi-d', 'telemetry.sdk.name': 'Beyla' }, ['go.opentelemetry.io/otel'], 'otlp'],
			[{ 'service.name': 'obi-e', 'telemetry.sdk.name': 'beyla-ish' }, ['github.com/grafana/beyl'], 'otlp'],
		];
		for (const [resource, scope, source] of cases) {
			const traceId = newId(16);
			await sendOne({ resource, scope, traceId, spanId: newId(8) });
			const rows = await spanRows(pg.url, [traceId]);
			assert.deepEqual(rows.map((r) => r.source), [source], `${JSON.stringify(resource)} ${scope[0]}`);
		}
	});
});

describe('metrics from the OpenTelemetry SDK', () => {
	for (const [label, Exporter, service] of [
		['JSON exporter', JsonMetricExporter, 'metrics-json'],
		['protobuf exporter', ProtoMetricExporter, 'metrics-proto'],
	]) {
		test(`${label}: counter, up-down counter, observable gauge, histogram: every column`, async () => {
			const rec = recording(new Exporter({ url: `${srv.url}/v1/metrics`, timeoutMillis: 10000 }));
			const resource = { 'service.name': service, 'service.namespace': 'shop', 'host.name': 'node-3.example' };
			const provider = new MeterProvider({
				resource: resourceFromAttributes(resource),
				readers: [new PeriodicExportingMetricReader({ exporter: rec, exportIntervalMillis: 600000, exportTimeoutMillis: 15000 })],
			});
			providers.push(provider);
			const meter = provider.getMeter('sextant-otlp-test-meter', '0.3.1');

			const counter = meter.createCounter('shop.requests', { unit: '{request}', description: 'Requests served', valueType: ValueType.INT });
			counter.add(3, { route: '/a' });
			counter.add(4, { route: '/a' });
			counter.add(2, { route: '/b', ok: true });
			const queue = meter.createUpDownCounter('shop.queue.depth', { unit: '{item}' });
			queue.add(5.5);
			queue.add(-2);
			const gauge = meter.createObservableGauge('shop.cpu.utilization', { unit: '1', description: 'CPU in use' });
			gauge.addCallback((r) => {
				r.observe(0.75, { cpu: 0 });
				r.observe(0.125, { cpu: 1 });
			});
			const hist = meter.createHistogram('shop.latency', {
				unit: 'ms', description: 'Request latency', advice: { explicitBucketBoundaries: [10, 100, 1000] },
			});
			for (const v of [5, 50, 500, 5000, 7.5]) hist.record(v, { route: '/a' });

			const c0 = await ingestCounters(srv);
			await provider.forceFlush();
			const c1 = await ingestCounters(srv);
			// shutdown() exports once more: done now, while the gateway is up
			const rows = await pointRows(pg.url, service);
			await provider.shutdown();
			assert.equal(c1.points - c0.points, 6, 'sextant_ingest_items_total{signal="metrics",outcome="stored"}');
			// forceFlush's export, then shutdown's: both succeeded
			assert.deepEqual(rec.results.map((r) => r.code), [0, 0], `export results: ${JSON.stringify(rec.results.map((r) => String(r.error)))}`);

			// The rows the SDK's ResourceMetrics must become.
			const rm = rec.sent[0];
			const want = [];
			for (const sm of rm.scopeMetrics) {
				for (const m of sm.metrics) {
					for (const p of m.dataPoints) {
						const gaugeKind = m.dataPointType === DataPointType.GAUGE;
						const histKind = m.dataPointType === DataPointType.HISTOGRAM;
						const temporality = m.aggregationTemporality === AggregationTemporality.CUMULATIVE ? 2 : 1;
						want.push({
							name: m.descriptor.name,
							kind: histKind ? 'histogram' : gaugeKind ? 'gauge' : 'sum',
							unit: m.descriptor.unit || null,
							description: m.descriptor.description || null,
							time_us: (ns(p.endTime) / 1000n).toString(),
							// docs/schema.md: NULL for gauges
							start_time_us: gaugeKind ? null : (ns(p.startTime) / 1000n).toString(),
							temporality: gaugeKind ? null : temporality,
							is_monotonic: m.dataPointType === DataPointType.SUM ? m.isMonotonic : null,
							value: histKind ? null : p.value,
							count: histKind ? p.value.count : null,
							sum: histKind ? p.value.sum : null,
							min: histKind ? p.value.min : null,
							max: histKind ? p.value.max : null,
							bounds: histKind ? p.value.buckets.boundaries : null,
							bucket_counts: histKind ? p.value.buckets.counts : null,
							service_name: service,
							service_namespace: 'shop',
							scope_name: sm.scope.name,
							attributes: attrsObj(p.attributes),
							resource_attributes: attrsObj(rm.resource.attributes),
						});
					}
				}
			}
			// What the SDK computed is what was recorded above.
			const find = (name, attr = () => true) => want.filter((w) => w.name === name && attr(w.attributes));
			assert.deepEqual(find('shop.requests').map((w) => [w.attributes.route, w.value, w.kind, w.is_monotonic, w.temporality]).sort(),
				[['/a', 7, 'sum', true, 2], ['/b', 2, 'sum', true, 2]]);
			assert.deepEqual(find('shop.queue.depth').map((w) => [w.value, w.is_monotonic]), [[3.5, false]]);
			assert.deepEqual(find('shop.cpu.utilization').map((w) => [w.attributes.cpu, w.value, w.kind]).sort(), [[0, 0.75, 'gauge'], [1, 0.125, 'gauge']]);
			const [h] = find('shop.latency');
			assert.deepEqual([h.count, h.sum, h.min, h.max, h.bounds, h.bucket_counts, h.temporality],
				[5, 5562.5, 5, 5000, [10, 100, 1000], [2, 1, 1, 1], 2]);

			const key = (x) => x.name + JSON.stringify(Object.entries(x.attributes).sort());
			const order = (a, b) => (key(a) < key(b) ? -1 : 1);
			assert.deepEqual(rows.sort(order), want.sort(order));
		});
	}
});

describe('bad requests', () => {
	let small; // a gateway with small limits
	const SMALL_BODY = 262144;
	const SMALL_INFLATED = 4194304;
	before(async () => {
		small = await startServer({
			name: 'otlp-limits',
			env: {
				DATABASE_URL: pg.url,
				SEXTANT_INGEST_MAX_BODY_BYTES: String(SMALL_BODY),
				SEXTANT_INGEST_MAX_DECOMPRESSED_BYTES: String(SMALL_INFLATED),
			},
		});
	});
	after(async () => {
		if (small) await small.kill();
	});

	// A real SDK request body, serialized by the exporters' own serializers.
	async function sdkSpans() {
		const exporter = { export: (s, cb) => cb({ code: 0 }), shutdown: async () => {} };
		const { provider, rec, tracer } = tracerSetup({ exporter, resource: RESOURCE, batch: false });
		makeSpans(tracer);
		await provider.forceFlush();
		await provider.shutdown();
		return rec.sent.flat();
	}

	function assertStatusBody(r, code, what) {
		assert.equal(r.status, code, `${what}: HTTP ${r.status} ${r.text}`);
		assert.match(r.headers['content-type'] ?? '', /^application\/json/, `${what}: content-type`);
		assert.ok(r.json && typeof r.json === 'object' && !Array.isArray(r.json), `${what}: not a JSON object: ${r.text}`);
		assert.equal(typeof r.json.message, 'string', `${what}: no message in ${r.text}`);
		assert.ok(r.json.message.length > 0, `${what}: empty message`);
		if ('code' in r.json) assert.equal(typeof r.json.code, 'number', `${what}: code`);
	}

	test('malformed JSON: 400 with a google.rpc.Status body', async () => {
		for (const body of ['{"resourceSpans": [', 'not json', '{"resourceSpans": "nope"}', '[1,2]']) {
			const r = await postJson(srv, '/v1/traces', body);
			assertStatusBody(r, 400, `POST /v1/traces ${body}`);
		}
		const r = await postJson(srv, '/v1/metrics', '{"resourceMetrics": [{]}');
		assertStatusBody(r, 400, 'POST /v1/metrics malformed');
	});

	test('truncated protobuf: 400', async () => {
		const spans = await sdkSpans();
		const whole = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans));
		// One ResourceSpans: any cut inside it leaves its length prefix
		// pointing past the end.
		for (const cut of [whole.length - 1, whole.length - 37, Math.floor(whole.length / 2), 5]) {
			const r = await request(`${srv.url}/v1/traces`, {
				method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: whole.subarray(0, cut),
			});
			assert.equal(r.status, 400, `${cut} of ${whole.length} bytes: HTTP ${r.status}`);
			assert.match(r.headers['content-type'] ?? '', /^application\/x-protobuf/);
		}
		// The same bytes whole are accepted.
		const ok = await request(`${srv.url}/v1/traces`, {
			method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: whole,
		});
		assert.equal(ok.status, 200);
	});

	test('a body past ingest.max_body_bytes: 413, with Content-Length and chunked', async () => {
		const spans = [];
		for (let i = 0; i < 600; i++) spans.push({ ...rawSpan(`big-${i}`), attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(400) } }] });
		const body = jsonTraces(spans);
		assert.ok(body.length > SMALL_BODY);
		const r = await postJson(small, '/v1/traces', body);
		assert.equal(r.status, 413, `Content-Length ${body.length}: HTTP ${r.status}`);
		const chunks = [];
		for (let i = 0; i < body.length; i += 65536) chunks.push(body.slice(i, i + 65536));
		const c = await request(`${small.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, chunks });
		assert.equal(c.status, 413, `chunked: HTTP ${c.status}`);
		// still serving, and a body under the limit goes through
		const ok = await postJson(small, '/v1/traces', jsonTraces([rawSpan('small-ok')]));
		assert.equal(ok.status, 200, ok.text);
	});

	test('other content types: 415', async () => {
		for (const ct of ['text/plain', 'application/xml', 'application/grpc', undefined]) {
			const headers = ct ? { 'content-type': ct } : {};
			const r = await request(`${srv.url}/v1/traces`, { method: 'POST', headers, body: jsonTraces([rawSpan('x')]) });
			assert.equal(r.status, 415, `Content-Type ${ct}: HTTP ${r.status}`);
		}
		const r = await request(`${srv.url}/v1/metrics`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
		assert.equal(r.status, 415);
	});

	let bomb;
	function gzipBomb() {
		// 100 MB of zeros; gzip makes it about 100 KB
		bomb ??= zlib.gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 });
		return bomb;
	}

	// ingest.max_decompressed_bytes bounds what a bomb costs: the gateway
	// inflates at most that much and answers 413.  Under ASan freed memory
	// sits in quarantine, so RSS only grows: three bombs on the 4 MiB
	// gateway must together cost less than inflating one bomb (100 MiB).
	test('gzip bomb (100 MiB of zeros), 4 MiB inflated limit: 413 and the RSS does not jump', async () => {
		const body = gzipBomb();
		assert.ok(body.length < SMALL_BODY, `bomb is ${body.length} bytes`);
		const rss0 = rssKiB(small);
		for (const path of ['/v1/traces', '/v1/metrics', '/v1/traces']) {
			const r = await request(`${small.url}${path}`, {
				method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' }, body,
			});
			assert.equal(r.status, 413, `${path}: HTTP ${r.status} ${r.text}`);
		}
		const grew = rssKiB(small) - rss0;
		assert.ok(grew < 64 * 1024, `RSS grew by ${grew} KiB after three bombs`);
		small.assertAlive();
	});

	test('gzip bomb with the default limits (64 MiB inflated): 413 on both endpoints, JSON too', async () => {
		const body = gzipBomb();
		for (const [path, ct] of [['/v1/traces', 'application/x-protobuf'], ['/v1/metrics', 'application/json']]) {
			const r = await request(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': ct, 'content-encoding': 'gzip' }, body });
			assert.equal(r.status, 413, `${path} ${ct}: HTTP ${r.status} ${r.text}`);
			assert.match(r.headers['content-type'] ?? '', new RegExp(`^${ct}`), `${path}: content-type`);
			if (ct === 'application/json') assert.equal(typeof r.json?.message, 'string', r.text);
		}
		srv.assertAlive();
	});

	test('one span with a bad trace id and one good: 200, partialSuccess.rejectedSpans = 1, the good one stored', async () => {
		const good = rawSpan('good-one');
		const bad = rawSpan('bad-one', { traceId: 'abcd' });
		const c0 = await ingestCounters(srv);
		const r = await postJson(srv, '/v1/traces', jsonTraces([bad, good], 'partial'));
		assert.equal(r.status, 200, r.text);
		assert.ok(r.json?.partialSuccess, `no partialSuccess in ${r.text}`);
		assert.equal(Number(r.json.partialSuccess.rejectedSpans), 1, r.text);
		assert.match(r.json.partialSuccess.errorMessage ?? '', /trace id/, r.text);
		const rows = await spanRows(pg.url, [good.traceId]);
		assert.deepEqual(rows.map((x) => [x.name, x.service_name, x.span_id, x.start_unix_nano]),
			[['good-one', 'partial', good.spanId, good.startTimeUnixNano]]);
		const c1 = await ingestCounters(srv);
		assert.equal(c1.rejected - c0.rejected, 1, 'rejected counter');
		assert.equal(c1.stored - c0.stored, 1, 'stored counter');

		// The same in protobuf: the SDK serializer with a span id cut short.
		const spans = await sdkSpans();
		const goodPb = spans[0];
		const badPb = { ...spans[1], spanContext: () => ({ ...spans[1].spanContext(), spanId: 'abcdef' }) };
		const pr = await fetch(`${srv.url}/v1/traces`, {
			method: 'POST', headers: { 'content-type': 'application/x-protobuf' },
			body: ProtobufTraceSerializer.serializeRequest([goodPb, badPb]),
		});
		const bytes = new Uint8Array(await pr.arrayBuffer());
		assert.equal(pr.status, 200);
		assert.match(pr.headers.get('content-type') ?? '', /^application\/x-protobuf/);
		const resp = ProtobufTraceSerializer.deserializeResponse(bytes);
		assert.equal(Number(resp.partialSuccess?.rejectedSpans), 1, JSON.stringify(resp));
		const pbRows = await spanRows(pg.url, [goodPb.spanContext().traceId], `encode(span_id, 'hex') = '${goodPb.spanContext().spanId}'`);
		assert.equal(pbRows.length, 1);
	});

	test('the limits gateway shuts down cleanly', async () => {
		await small.stop();
	});
});

describe('NUL characters in strings', () => {
	// PostgreSQL text and jsonb cannot hold U+0000: the whole value is
	// stored with U+FFFD in its place, as for bytes that are not UTF-8, and
	// the answer's partialSuccess says how many values changed (a warning:
	// nothing is rejected).
	const NUL_WARNING = /^(\d+) string values? held NUL \(U\+0000\), which the store cannot keep: stored with U\+FFFD in its place \(the first: (.+)\)$/;

	test('JSON: service.name "nul\\u0000svc", a span name, an attribute key and value: stored whole with U+FFFD, partialSuccess counts 4', async () => {
		const span = { ...rawSpan('span\u0000name'), attributes: [{ key: 'k\u0000ey', value: { stringValue: 'v\u0000a\u0000l' } }] };
		const body = jsonTraces([span], 'nul\u0000svc');
		assert.match(body, /"nul\\u0000svc"/);
		const c0 = await ingestCounters(srv);
		const r = await postJson(srv, '/v1/traces', body);
		assert.equal(r.status, 200, r.text);
		const ps = r.json?.partialSuccess;
		assert.ok(ps, `no partialSuccess in ${r.text}`);
		assert.equal(Number(ps.rejectedSpans ?? 0), 0, r.text);
		const m = NUL_WARNING.exec(ps.errorMessage ?? '');
		assert.ok(m, r.text);
		assert.equal(m[1], '4');
		assert.equal(m[2], 'resourceSpans[0].resource.attributes[0].value.stringValue');
		const rows = await spanRows(pg.url, [span.traceId]);
		assert.equal(rows.length, 1);
		assert.equal(rows[0].service_name, 'nul\uFFFDsvc');
		assert.equal(rows[0].name, 'span\uFFFDname');
		assert.deepEqual(rows[0].attributes, { 'k\uFFFDey': 'v\uFFFDa\uFFFDl' });
		assert.equal(rows[0].resource_attributes['service.name'], 'nul\uFFFDsvc');
		const c1 = await ingestCounters(srv);
		assert.equal(c1.stored - c0.stored, 1, 'stored counter');
		assert.equal(c1.rejected - c0.rejected, 0, 'rejected counter');
	});

	test('protobuf from the SDK serializer: the NUL bytes of service.name, the span name and an attribute become U+FFFD', async () => {
		const exporter = { export: (s, cb) => cb({ code: 0 }), shutdown: async () => {} };
		const { provider, rec, tracer } = tracerSetup({ exporter, resource: { 'service.name': 'pb\u0000svc' }, batch: false });
		tracer.startSpan('pb\u0000span', { attributes: { 'pk\u0000': 'pv\u0000' } }).end();
		await provider.forceFlush();
		await provider.shutdown();
		const spans = rec.sent.flat();
		assert.equal(spans.length, 1);
		const pr = await fetch(`${srv.url}/v1/traces`, {
			method: 'POST', headers: { 'content-type': 'application/x-protobuf' },
			body: ProtobufTraceSerializer.serializeRequest(spans),
		});
		assert.equal(pr.status, 200);
		const resp = ProtobufTraceSerializer.deserializeResponse(new Uint8Array(await pr.arrayBuffer()));
		assert.equal(Number(resp.partialSuccess?.rejectedSpans ?? 0), 0, JSON.stringify(resp));
		const m = NUL_WARNING.exec(resp.partialSuccess?.errorMessage ?? '');
		assert.ok(m, JSON.stringify(resp));
		assert.equal(m[1], '4');
		assert.match(m[2], /^AnyValue\.string_value at byte \d+$/);
		const rows = await spanRows(pg.url, [spans[0].spanContext().traceId]);
		assert.equal(rows.length, 1);
		assert.equal(rows[0].service_name, 'pb\uFFFDsvc');
		assert.equal(rows[0].name, 'pb\uFFFDspan');
		assert.equal(rows[0].attributes['pk\uFFFD'], 'pv\uFFFD');
	});
});

describe('the database goes down and comes back', () => {
	test('503 with Retry-After, /readyz 503, then 200 again and the span is stored', async () => {
		const stop = await pgSh('stop', pg.dir);
		assert.equal(stop.code, 0, stop.stderr);
		try {
			const span = rawSpan('while-down');
			const t0 = Date.now();
			const r = await postJson(srv, '/v1/traces', jsonTraces([span], 'down'));
			assert.equal(r.status, 503, `HTTP ${r.status} ${r.text}`);
			assert.match(r.headers['retry-after'] ?? '', /^\d+$/, `Retry-After ${r.headers['retry-after']}`);
			assert.ok(Date.now() - t0 < 8000, `the 503 took ${Date.now() - t0} ms`);
			assert.equal(typeof r.json?.message, 'string', r.text);
			await waitFor('/readyz 503 with the database down', async () => {
				const x = await request(`${srv.url}/readyz`);
				return { ok: x.status === 503, status: x.status };
			}, 5000);
		} finally {
			const start = await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
			assert.equal(start.code, 0, start.stderr);
			assert.equal(start.stdout.trimEnd().split('\n').pop(), pg.url, 'the cluster came back on the same address');
		}
		await waitFor('/readyz 200 with the database back', async () => {
			const x = await request(`${srv.url}/readyz`);
			return { ok: x.status === 200, status: x.status };
		}, 20000);
		const span = rawSpan('after-restart');
		const r = await postJson(srv, '/v1/traces', jsonTraces([span], 'down'));
		assert.equal(r.status, 200, r.text);
		const rows = await spanRows(pg.url, [span.traceId]);
		assert.deepEqual(rows.map((x) => x.name), ['after-restart']);
	});

	test('an SDK exporter retries on 503 and its spans land once the database is back', async () => {
		const stop = await pgSh('stop', pg.dir);
		assert.equal(stop.code, 0, stop.stderr);
		let restarted = false;
		try {
			const exporter = new JsonTraceExporter({ url: `${srv.url}/v1/traces`, timeoutMillis: 20000 });
			const { provider, rec, tracer } = tracerSetup({ exporter, resource: { 'service.name': 'retrier' } });
			const span = tracer.startSpan('retried', { startTime: at(7000000001) });
			span.end(at(7000000999));
			const flushed = provider.forceFlush();
			await sleep(1500);
			const start = await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
			assert.equal(start.code, 0, start.stderr);
			restarted = true;
			await flushed;
			assert.deepEqual(rec.results.map((x) => x.code), [0]);
			const rows = await spanRows(pg.url, [span.spanContext().traceId]);
			assert.deepEqual(rows.map((x) => [x.name, x.source, x.duration_ns]), [['retried', 'otlp', 998]]);
			await provider.shutdown();
		} finally {
			if (!restarted) await pgSh('start', pg.dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
		}
	});
});

describe('[ingest] keys, separate from the MCP keys', () => {
	const ingestKey = 'otlp-ingest-key-0123456789';
	const mcpKey = 'mcp-key-9876543210';
	let keyed;
	before(async () => {
		const hash = (k) => {
			const h = runSextant(['hash-key', k]);
			assert.equal(h.code, 0, h.stderr);
			return h.stdout.trim();
		};
		keyed = await startServer({
			name: 'otlp-keys',
			env: { DATABASE_URL: pg.url, SEXTANT_INGEST_KEYS: hash(ingestKey), SEXTANT_AUTH_KEYS: hash(mcpKey) },
		});
	});
	after(async () => {
		if (keyed) await keyed.kill();
	});

	test('401 without a token, with a wrong one and with an MCP key; 200 with the ingest key', async () => {
		const span = rawSpan('keyed-raw');
		for (const auth of [undefined, 'Bearer wrong', `Bearer ${mcpKey}`, `Bearer ${ingestKey}x`, ingestKey]) {
			const headers = auth ? { authorization: auth } : {};
			const r = await postJson(keyed, '/v1/traces', jsonTraces([span]), headers);
			assert.equal(r.status, 401, `Authorization ${JSON.stringify(auth)}: HTTP ${r.status}`);
			assert.match(r.headers['www-authenticate'] ?? '', /^Bearer\b/);
			assert.equal(typeof r.json?.message, 'string', r.text);
			const m = await postJson(keyed, '/v1/metrics', '{}', headers);
			assert.equal(m.status, 401, `/v1/metrics, Authorization ${JSON.stringify(auth)}: HTTP ${m.status}`);
		}
		assert.deepEqual(await spanRows(pg.url, [span.traceId]), [], 'a refused request stored something');
		const ok = await postJson(keyed, '/v1/traces', jsonTraces([span]), { authorization: `Bearer ${ingestKey}` });
		assert.equal(ok.status, 200, ok.text);
		assert.equal((await spanRows(pg.url, [span.traceId])).length, 1);
	});

	test('the SDK exporter with the key in its headers succeeds; without it the export fails', async () => {
		const withKey = tracerSetup({
			exporter: new ProtoTraceExporter({ url: `${keyed.url}/v1/traces`, headers: { Authorization: `Bearer ${ingestKey}` } }),
			resource: { 'service.name': 'keyed-sdk' },
		});
		const a = withKey.tracer.startSpan('with-key', { startTime: at(8000000000) });
		a.end(at(8000000100));
		await withKey.provider.forceFlush();
		assert.equal((await spanRows(pg.url, [a.spanContext().traceId])).length, 1);
		await withKey.provider.shutdown();

		const noKey = tracerSetup({
			exporter: new JsonTraceExporter({ url: `${keyed.url}/v1/traces`, timeoutMillis: 5000 }),
			resource: { 'service.name': 'keyed-sdk' },
		});
		const b = noKey.tracer.startSpan('without-key', { startTime: at(8000000000) });
		b.end(at(8000000100));
		await assert.rejects(noKey.provider.forceFlush(), 'forceFlush without the key should fail');
		assert.notEqual(noKey.rec.results[0]?.code, 0);
		assert.deepEqual(await spanRows(pg.url, [b.spanContext().traceId]), []);
		await noKey.provider.shutdown();
	});

	test('the ingest key does not open /mcp; the MCP key does', async () => {
		const init = JSON.stringify({
			jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'otlp-test', version: '1' } },
		});
		const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
		const r = await request(keyed.mcpUrl, { method: 'POST', headers: { ...headers, authorization: `Bearer ${ingestKey}` }, body: init });
		assert.equal(r.status, 401, `/mcp with the ingest key: HTTP ${r.status}`);
		const ok = await request(keyed.mcpUrl, { method: 'POST', headers: { ...headers, authorization: `Bearer ${mcpKey}` }, body: init });
		assert.equal(ok.status, 200, `/mcp with the MCP key: HTTP ${ok.status}`);
	});

	test('the keyed gateway shuts down cleanly', async () => {
		await keyed.stop();
	});
});

describe('values too long for an index entry', () => {
	// PostgreSQL refuses a btree index entry past 2704 bytes, and with it
	// the whole batch ("index row size ... exceeds btree version 4
	// maximum"); random text does not compress to fit.  The receiver cuts
	// indexed columns to OTLP_MAX_*_BYTES (lib/otlp/otlp.h) and keeps the whole
	// value in the attributes.
	const MARK = '\u2026[truncated]';
	const CAP = {
		service_name: 512, session_id: 512, gen_ai_provider: 128, gen_ai_operation: 128,
		gen_ai_request_model: 256, gen_ai_response_model: 256, http_method: 64, http_route: 1024,
		url_path: 1024, rpc_service: 512, rpc_method: 512, db_operation: 256, db_table: 512, metric_name: 1024,
	};
	// Random characters of 1 to 4 bytes (ɐ grows under upper()), at
	// least `bytes` bytes of UTF-8; incompressible.
	const ALPHABET = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789é\u0250€😀'];
	function longText(bytes = 8000) {
		let s = '';
		while (Buffer.byteLength(s) < bytes) s += ALPHABET[crypto.randomInt(ALPHABET.length)];
		return s;
	}
	// col is full cut on a character boundary within cap bytes, plus the marker.
	function assertCut(col, full, cap, what) {
		assert.equal(typeof col, 'string', `${what}: ${col}`);
		assert.ok(col.endsWith(MARK), `${what} does not end with the marker`);
		const kept = col.slice(0, -MARK.length);
		assert.ok(full.startsWith(kept), `${what} is not a prefix of the value sent`);
		const n = Buffer.byteLength(kept);
		assert.ok(n <= cap && n > cap - 4, `${what}: ${n} bytes kept, cap ${cap}`);
	}
	const OLD = T0 - 3n * 3600n * NS; // a settled hour, for the rollup
	const str = (key, value) => ({ key, value: { stringValue: value } });
	const int = (key, value) => ({ key, value: { intValue: String(value) } });
	const v = {};
	let traceId;

	test('a JSON batch with 8000-byte values in every indexed column: 200, all spans stored, cut, and queryable', async () => {
		for (const k of ['service', 'name', 'session', 'provider', 'operation', 'rmodel', 'pmodel', 'method', 'route', 'path',
			'rpcsvc', 'rpcmethod', 'dbop', 'dbtable']) v[k] = longText();
		traceId = newId(16);
		const span = (name, kind, attributes) => ({
			...rawSpan(name, { traceId, startNs: OLD }), kind, attributes,
		});
		const spans = [
			span(v.name, 1, []),
			span('chat', 3, [str('gen_ai.operation.name', v.operation), str('gen_ai.provider.name', v.provider),
				str('gen_ai.request.model', v.rmodel), str('gen_ai.response.model', v.pmodel),
				str('session.id', v.session), int('gen_ai.usage.input_tokens', 12), int('gen_ai.usage.output_tokens', 34)]),
			span('GET long', 2, [str('http.request.method', v.method), str('http.route', v.route), str('url.path', v.path),
				int('http.response.status_code', 200)]),
			span('GET path only', 2, [str('http.request.method', 'GET'), str('url.path', v.path)]),
			span('rpc', 2, [str('rpc.system', 'grpc'), str('rpc.method', `${v.rpcsvc}/${v.rpcmethod}`), int('rpc.grpc.status_code', 0)]),
			span('query', 3, [str('db.system.name', 'postgresql'), str('db.operation.name', v.dbop), str('db.collection.name', v.dbtable)]),
		];
		const body = JSON.stringify({
			resourceSpans: [
				{ resource: { attributes: [str('service.name', v.service)] }, scopeSpans: [{ scope: { name: 'raw' }, spans }] },
				// a neighbour with ordinary values in the same request
				{ resource: { attributes: [str('service.name', 'long-neighbour')] },
					scopeSpans: [{ scope: { name: 'raw' }, spans: [span('neighbour', 2, [str('http.request.method', 'GET'), str('http.route', '/ok')])] }] },
			],
		});
		const c0 = await ingestCounters(srv);
		const r = await postJson(srv, '/v1/traces', body);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.json?.partialSuccess, undefined, r.text);
		const c1 = await ingestCounters(srv);
		assert.equal(c1.stored - c0.stored, 7, 'stored counter');

		const rows = await spanRows(pg.url, [traceId]);
		assert.equal(rows.length, 7);
		const by = Object.fromEntries(rows.map((x) => [x.name === v.name ? 'long' : x.name, x]));
		assert.deepEqual(Object.keys(by).sort(), ['GET long', 'GET path only', 'chat', 'long', 'neighbour', 'query', 'rpc']);
		for (const x of rows.filter((y) => y.name !== 'neighbour')) {
			assertCut(x.service_name, v.service, CAP.service_name, `${x.name.slice(0, 20)}: service_name`);
			assert.equal(x.resource_attributes['service.name'], v.service, 'the whole service.name in resource_attributes');
		}
		assert.equal(by.neighbour.service_name, 'long-neighbour');
		assert.equal(by.neighbour.http_route, '/ok');
		// the span name is in no index: kept up to max_attr_bytes (8 KiB)
		assert.equal(by.long.name, v.name);
		const cuts = [
			['chat', 'session_id', v.session], ['chat', 'gen_ai_provider', v.provider], ['chat', 'gen_ai_operation', v.operation],
			['chat', 'gen_ai_request_model', v.rmodel], ['chat', 'gen_ai_response_model', v.pmodel],
			['GET long', 'http_method', v.method], ['GET long', 'http_route', v.route], ['GET long', 'url_path', v.path],
			['GET path only', 'url_path', v.path], ['GET path only', 'http_route', v.path],
			['rpc', 'rpc_service', v.rpcsvc], ['rpc', 'rpc_method', v.rpcmethod],
			['query', 'db_operation', v.dbop], ['query', 'db_table', v.dbtable],
		];
		for (const [span_, col, full] of cuts) assertCut(by[span_][col], full, CAP[col], `${span_}: ${col}`);
		assert.equal(by.chat.attributes['session.id'], v.session, 'the whole session.id in attributes');
		assert.equal(by['GET long'].attributes['http.route'], v.route, 'the whole http.route in attributes');
		assert.equal(by.chat.gen_ai_input_tokens, 12);

		// found through the indexes on the cut values
		const svc = by.chat.service_name;
		const probe = async (where) => Number(await psql(pg.url, `SELECT count(*) FROM spans WHERE ${where}`));
		const lit = (x) => `'${x.replaceAll("'", "''")}'`;
		assert.equal(await probe(`service_name = ${lit(svc)}`), 6);
		assert.equal(await probe(`session_id = ${lit(by.chat.session_id)}`), 1);
		const genai = JSON.parse(await psql(pg.url, `
			SELECT coalesce(jsonb_agg(jsonb_build_object('provider', gen_ai_provider, 'model', gen_ai_request_model)), '[]')
			FROM spans WHERE start_time >= sextant_time_from_unix_nano(${OLD}) AND start_time < sextant_time_from_unix_nano(${OLD + 1000n})
			  AND encode(trace_id, 'hex') = '${traceId}' AND gen_ai_input_tokens IS NOT NULL`));
		assert.deepEqual(genai, [{ provider: by.chat.gen_ai_provider, model: by.chat.gen_ai_request_model }]);
	});

	test('the hour with those spans rolls up (span_rollup key: service, route, method, rpc and db names)', async () => {
		assert.ok(traceId, 'the JSON batch test did not run');
		await psql(pg.url, 'UPDATE span_rollup_dirty SET slot = slot - 100');
		const r = runSextant(['maintain'], { env: { DATABASE_URL: pg.url } });
		assert.equal(r.code, 0, `sextant maintain: ${r.stderr}`);
		const keys = JSON.parse(await psql(pg.url, `
			SELECT coalesce(jsonb_agg(jsonb_build_object('protocol', protocol, 'k1', k1, 'k2', k2, 'requests', requests)
				ORDER BY protocol, k1), '[]')
			FROM span_rollup WHERE period = date_trunc('hour', sextant_time_from_unix_nano(${OLD}), 'UTC')
			  AND service_name = (SELECT service_name FROM spans WHERE encode(trace_id, 'hex') = '${traceId}' AND name = 'rpc')`));
		assert.equal(keys.length, 4, JSON.stringify(keys).slice(0, 300));
		const key = (protocol, f = () => true) => {
			const k = keys.find((x) => x.protocol === protocol && f(x));
			assert.ok(k, `no ${protocol} key in ${JSON.stringify(keys.map((x) => [x.protocol, x.k2.slice(0, 8)]))}`);
			return k;
		};
		const route = key('http', (x) => x.k2 !== 'GET');
		assertCut(route.k1, v.route, CAP.http_route, 'http k1 (http_route)');
		assert.ok(Buffer.byteLength(route.k2) <= 3 * (CAP.http_method + Buffer.byteLength(MARK)), 'http k2 (upper(http_method))');
		assertCut(key('http', (x) => x.k2 === 'GET').k1, v.path, CAP.url_path, 'http k1 (url_path)');
		const grpc = key('grpc');
		assert.equal(grpc.k1.indexOf(`${MARK}/`) > 0 && grpc.k1.endsWith(MARK), true, 'grpc k1 is the cut service / the cut method');
		const sql = key('sql');
		assertCut(sql.k2, v.dbtable, CAP.db_table, 'sql k2 (db_table)');
		for (const k of keys) assert.equal(Number(k.requests), 1);
	});

	test('the protobuf SDK exporter with a long service.name and attributes: export succeeds and the spans are stored', async () => {
		const service = longText();
		const session = longText();
		const { provider, rec, tracer } = tracerSetup({
			exporter: new ProtoTraceExporter({ url: `${srv.url}/v1/traces`, compression: 'gzip', timeoutMillis: 10000 }),
			resource: { 'service.name': service },
		});
		const a = tracer.startSpan(longText(), { startTime: at(9000000000), kind: SpanKind.CLIENT,
			attributes: { 'session.id': session, 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': longText(), 'gen_ai.usage.input_tokens': 5 } });
		a.end(at(9000000500));
		const b = tracer.startSpan('short', { startTime: at(9000000000) });
		b.end(at(9000000100));
		await provider.forceFlush();
		assert.deepEqual(rec.results.map((x) => x.code), [0]);
		const rows = await spanRows(pg.url, [a.spanContext().traceId, b.spanContext().traceId]);
		assert.equal(rows.length, 2);
		for (const x of rows) assertCut(x.service_name, service, CAP.service_name, 'service_name');
		const chat = rows.find((x) => x.session_id !== null);
		assertCut(chat.session_id, session, CAP.session_id, 'session_id');
		assertCut(chat.gen_ai_request_model, a.attributes['gen_ai.request.model'], CAP.gen_ai_request_model, 'gen_ai_request_model');
		await provider.shutdown();
	});

	test('metrics: an 8000-byte metric name and service.name: 200 and the point stored, cut', async () => {
		const service = longText();
		const name = longText();
		const body = JSON.stringify({
			resourceMetrics: [{
				resource: { attributes: [str('service.name', service)] },
				scopeMetrics: [{ scope: { name: 'raw' }, metrics: [
					{ name, gauge: { dataPoints: [{ timeUnixNano: T0.toString(), asDouble: 1.5 }] } },
					{ name: 'long-neighbour.gauge', gauge: { dataPoints: [{ timeUnixNano: T0.toString(), asDouble: 2.5 }] } },
				] }],
			}],
		});
		const r = await postJson(srv, '/v1/metrics', body);
		assert.equal(r.status, 200, r.text);
		const rows = JSON.parse(await psql(pg.url, `
			SELECT coalesce(jsonb_agg(jsonb_build_object('name', name, 'service_name', service_name, 'value', value,
				'res', resource_attributes->>'service.name') ORDER BY value), '[]')
			FROM metric_points WHERE resource_attributes->>'service.name' = ${`'${service.replaceAll("'", "''")}'`}`));
		assert.equal(rows.length, 2);
		assertCut(rows[0].name, name, CAP.metric_name, 'metric name');
		assert.equal(rows[1].name, 'long-neighbour.gauge');
		for (const x of rows) assertCut(x.service_name, service, CAP.service_name, 'metric service_name');
	});
});

test('the gateway shuts down cleanly', async () => {
	await srv.stop();
});

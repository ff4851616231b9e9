// ingest-gen.mjs - the request bodies of bench/ingest.sh: K OTLP trace
// export requests of M spans each, serialized by the OpenTelemetry JS
// transformer (@opentelemetry/otlp-transformer, the code behind the SDK's
// OTLP exporters) once as protobuf and once, with other ids, as JSON.
//
//   node bench/ingest-gen.mjs --out DIR --requests K --spans-per-request M
//                             [--warmup-requests W] [--seed S] [--base-ms T]
//
// Writes DIR/pb/NNNNNN.pb, DIR/json/NNNNNN.json, W more of each under
// DIR/warm/ (other ids again: the warm-up before the measured runs) and
// DIR/manifest.json ({requests, spans_per_request, spans, warmup_requests,
// seed, base_ms, pb_bytes, json_bytes}).  A body never mixes sets.
// Deterministic for a given seed and base time: the spans lie in the hour
// before base_ms (default: now, rounded down to the minute), so that they
// fall in the store's current partitions.  Every span of both sets has its
// own (trace id, span id): ids carry the set and a counter, the rest is
// from the seeded generator.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'test/integration/package.json'));
const { ProtobufTraceSerializer, JsonTraceSerializer } = require('@opentelemetry/otlp-transformer');
const { resourceFromAttributes } = require('@opentelemetry/resources');

function die(msg) {
	process.stderr.write(`ingest-gen.mjs: ${msg}\n`);
	process.exit(2);
}

function args(argv) {
	const a = { seed: 1, 'base-ms': null, 'warmup-requests': 0 };
	for (let i = 0; i < argv.length; i += 2) {
		const k = argv[i]?.replace(/^--/, '');
		if (!['out', 'requests', 'spans-per-request', 'warmup-requests', 'seed', 'base-ms'].includes(k) || i + 1 >= argv.length) {
			die(`unknown or incomplete option "${argv[i]}": expected --out DIR --requests K --spans-per-request M [--warmup-requests W] [--seed S] [--base-ms T]`);
		}
		a[k] = argv[i + 1];
	}
	if (!a.out) die('--out DIR is required');
	for (const k of ['requests', 'spans-per-request', 'warmup-requests', 'seed']) {
		const v = Number(a[k]);
		const min = k === 'seed' || k === 'warmup-requests' ? 0 : 1;
		if (!Number.isInteger(v) || v < min || v > 0xffffff) {
			die(`--${k}: expected an integer in ${min}..16777215, got "${a[k]}"`);
		}
		a[k] = v;
	}
	if (a['base-ms'] === null) a['base-ms'] = Math.floor(Date.now() / 60000) * 60000;
	else {
		const v = Number(a['base-ms']);
		if (!Number.isInteger(v) || v < 0) die(`--base-ms: expected milliseconds since the epoch, got "${a['base-ms']}"`);
		a['base-ms'] = v;
	}
	return a;
}

// mulberry32: a small, fast, seeded 32-bit generator.
function rng(seed) {
	let s = seed >>> 0;
	const next = () => {
		s = (s + 0x6d2b79f5) >>> 0;
		let t = s;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0);
	};
	return {
		u32: next,
		int: (n) => next() % n, // 0..n-1
		pick: (arr) => arr[next() % arr.length],
		chance: (p) => next() / 4294967296 < p,
	};
}

const hex32 = (n) => (n >>> 0).toString(16).padStart(8, '0');

// ---- the services: one resource each ---------------------------------------

const SERVICES = [
	['api-gateway', 'edge', 'edge-prod'],
	['checkout', 'shop', 'shop-prod'],
	['cart', 'shop', 'shop-prod'],
	['catalog', 'shop', 'shop-prod'],
	['payments', 'payments', 'payments-prod'],
	['fraud', 'payments', 'payments-prod'],
	['inventory', 'shop', 'shop-prod'],
	['notifications', 'edge', 'edge-prod'],
];

const ROUTES = [
	['GET', '/api/orders/{id}', (r) => `/api/orders/${r.int(100000)}`, 'orders'],
	['GET', '/api/products', () => '/api/products', 'products'],
	['GET', '/api/products/{sku}', (r) => `/api/products/SKU-${r.int(50000)}`, 'products'],
	['POST', '/api/orders', () => '/api/orders', 'orders'],
	['PUT', '/api/cart/{id}/items', (r) => `/api/cart/${r.int(100000)}/items`, 'cart_items'],
	['DELETE', '/api/cart/{id}', (r) => `/api/cart/${r.int(100000)}`, 'carts'],
	['GET', '/healthz', () => '/healthz', null],
];

const AGENTS = [
	'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
	'okhttp/4.12.0',
	'Go-http-client/1.1',
	'curl/8.5.0',
];

function makeResources(r) {
	return SERVICES.map(([name, ns, k8sNs], i) => {
		const pod = `${name}-${hex32(r.u32()).slice(0, 5)}-${hex32(r.u32()).slice(0, 5)}`;
		return {
			name,
			resource: resourceFromAttributes({
				'service.name': name,
				'service.namespace': ns,
				'service.version': `1.${i}.${r.int(20)}`,
				'deployment.environment.name': 'prod',
				'k8s.namespace.name': k8sNs,
				'k8s.deployment.name': name,
				'k8s.pod.name': pod,
				'host.name': `node-${r.int(12)}.cluster.local`,
				'telemetry.sdk.name': 'opentelemetry',
				'telemetry.sdk.language': 'nodejs',
				'telemetry.sdk.version': '2.12.0',
			}),
			scope: { name: `@acme/${name}-instrumentation`, version: '0.57.0' },
		};
	});
}

// ---- spans --------------------------------------------------------------------

const NS_PER_MS = 1000000n;
const NS_PER_S = 1000000000n;
const hr = (ns) => [Number(ns / NS_PER_S), Number(ns % NS_PER_S)];

// A span in the shape the transformer reads (the SDK's ReadableSpan).
function span(svc, ctx, parent, name, kind, startNs, durNs, attributes, status = { code: 0 }, events = []) {
	return {
		name,
		kind,
		spanContext: () => ctx,
		parentSpanContext: parent ?? undefined,
		startTime: hr(startNs),
		endTime: hr(startNs + durNs),
		duration: hr(durNs),
		attributes,
		links: [],
		events,
		status,
		ended: true,
		resource: svc.resource,
		instrumentationScope: svc.scope,
		droppedAttributesCount: 0,
		droppedEventsCount: 0,
		droppedLinksCount: 0,
	};
}

// One trace of a request to svc, at most max spans: an HTTP server span
// and 0..3 children (SQL, an outgoing HTTP call, internal work).
function makeTrace(g, svc, startNs, max) {
	const { r } = g;
	const traceId = `${g.setTag}${hex32(g.seedTag).slice(1)}${hex32(g.trace++)}${hex32(r.u32())}${hex32(r.u32())}`;
	const sid = () => `${g.setTag}${hex32(r.u32()).slice(1)}${hex32(g.span++)}`;
	const rootCtx = { traceId, spanId: sid(), traceFlags: 1 };
	const [method, route, pathOf, table] = r.pick(ROUTES);
	const failed = r.chance(0.03);
	const code = failed ? r.pick([500, 502, 503]) : r.chance(0.05) ? r.pick([400, 404, 409]) : method === 'POST' ? 201 : 200;
	const durNs = BigInt(200000 + r.int(250000000));
	const rootEvents = failed
		? [{
			name: 'exception',
			time: hr(startNs + durNs - 1000n),
			attributes: {
				'exception.type': 'UpstreamError',
				'exception.message': `upstream ${r.pick(SERVICES)[0]} answered ${code}`,
				'exception.stacktrace': 'UpstreamError: upstream failed\n    at handler (/app/src/routes.js:118:11)\n    at process.processTicksAndRejections (node:internal/process/task_queues:105:5)',
			},
		}]
		: [];
	const spans = [span(svc, rootCtx, null, `${method} ${route}`, 1 /* SERVER */, startNs, durNs, {
		'http.request.method': method,
		'http.route': route,
		'url.path': pathOf(r),
		'url.scheme': 'http',
		'http.response.status_code': code,
		'server.address': `${svc.name}.svc.cluster.local`,
		'server.port': 8080,
		'client.address': `10.${r.int(256)}.${r.int(256)}.${r.int(256)}`,
		'network.protocol.version': '1.1',
		'user_agent.original': r.pick(AGENTS),
	}, failed ? { code: 2, message: `HTTP ${code}` } : { code: 0 }, rootEvents)];

	const children = Math.min(max - 1, r.int(4));
	let at = startNs + 50000n;
	for (let c = 0; c < children; c++) {
		const ctx = { traceId, spanId: sid(), traceFlags: 1 };
		const d = durNs / BigInt(children + 2);
		const kind = c % 3;
		if (kind === 0 && table) {
			const op = method === 'GET' ? 'SELECT' : method === 'DELETE' ? 'DELETE' : 'INSERT';
			spans.push(span(svc, ctx, rootCtx, `${op} ${table}`, 2 /* CLIENT */, at, d, {
				'db.system.name': 'postgresql',
				'db.operation.name': op,
				'db.collection.name': table,
				'db.namespace': 'shop',
				'db.query.text': `${op} ${op === 'SELECT' ? '* FROM' : op === 'DELETE' ? 'FROM' : 'INTO'} ${table} WHERE id = $1`,
				'server.address': 'postgres.db.svc.cluster.local',
				'server.port': 5432,
			}));
		} else if (kind === 1 || (kind === 0 && !table)) {
			const peer = r.pick(SERVICES)[0];
			const peerCode = failed ? code : 200;
			spans.push(span(svc, ctx, rootCtx, 'GET', 2 /* CLIENT */, at, d, {
				'http.request.method': 'GET',
				'url.full': `http://${peer}.svc.cluster.local:8080/internal/v1/check/${r.int(100000)}`,
				'server.address': `${peer}.svc.cluster.local`,
				'server.port': 8080,
				'http.response.status_code': peerCode,
			}, failed ? { code: 2, message: `HTTP ${peerCode}` } : { code: 0 }));
		} else {
			spans.push(span(svc, ctx, rootCtx, 'render response', 0 /* INTERNAL */, at, d, {
				'app.items': r.int(50),
				'app.cache_hit': r.chance(0.7),
			}));
		}
		at += d;
	}
	return spans;
}

// One set: `requests` requests, each from one service (as an SDK's batch
// exporter sends them), M spans each.  setTag: the first hex digit of
// every id of the set (1..f), so that no two sets share an id.
function makeSet(a, requests, setTag, serialize, dir, ext) {
	const r = rng(a.seed * 16 + parseInt(setTag, 16));
	const g = { r, setTag, seedTag: a.seed, trace: 0, span: 0 };
	const resources = makeResources(rng(a.seed)); // same services in every set
	const total = Math.max(1, requests * a['spans-per-request']);
	const baseNs = BigInt(a['base-ms']) * NS_PER_MS - 3600n * NS_PER_S;
	const stepNs = (3540n * NS_PER_S) / BigInt(total); // over 59 minutes
	fs.mkdirSync(dir, { recursive: true });
	let bytes = 0;
	let n = 0;
	for (let q = 0; q < requests; q++) {
		const svc = resources[q % resources.length];
		const spans = [];
		while (spans.length < a['spans-per-request']) {
			const startNs = baseNs + BigInt(n + spans.length) * stepNs + BigInt(r.int(1000));
			spans.push(...makeTrace(g, svc, startNs, a['spans-per-request'] - spans.length));
		}
		n += spans.length;
		const body = serialize(spans);
		fs.writeFileSync(path.join(dir, `${String(q).padStart(6, '0')}.${ext}`), body);
		bytes += body.length;
	}
	return bytes;
}

const a = args(process.argv.slice(2));
const t0 = performance.now();
const pbOf = (s) => ProtobufTraceSerializer.serializeRequest(s);
const jsonOf = (s) => JsonTraceSerializer.serializeRequest(s);
for (const d of ['pb', 'json', 'warm']) fs.rmSync(path.join(a.out, d), { recursive: true, force: true });
const pbBytes = makeSet(a, a.requests, '1', pbOf, path.join(a.out, 'pb'), 'pb');
const jsonBytes = makeSet(a, a.requests, '2', jsonOf, path.join(a.out, 'json'), 'json');
if (a['warmup-requests'] > 0) {
	makeSet(a, a['warmup-requests'], '3', pbOf, path.join(a.out, 'warm'), 'pb');
	makeSet(a, a['warmup-requests'], '4', jsonOf, path.join(a.out, 'warm'), 'json');
}
const manifest = {
	requests: a.requests,
	spans_per_request: a['spans-per-request'],
	spans: a.requests * a['spans-per-request'],
	warmup_requests: a['warmup-requests'],
	seed: a.seed,
	base_ms: a['base-ms'],
	pb_bytes: pbBytes,
	json_bytes: jsonBytes,
	generate_s: Number(((performance.now() - t0) / 1000).toFixed(2)),
};
fs.writeFileSync(path.join(a.out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(manifest)}\n`);

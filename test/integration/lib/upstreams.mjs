// upstreams.mjs - small in-process HTTP servers the Prometheus tests put
// around the real parts: a text-exposition target with known values for
// Prometheus to scrape (a fixture file plus time-dependent series with
// explicit timestamps, so rates and quantiles are exact), and a slow proxy
// that holds every request for a set delay before passing it on.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { ROOT } from './server.mjs';

export const STATIC_EXPOSITION = path.join(ROOT, 'test/integration/fixtures/grafana-static.prom');

// Per-second increments of the counter fixture_requests_total by handler.
export const REQUEST_RATES = { '/api': 5, '/health': 2 };

// Histogram fixture_request_duration_seconds: per-second increments of the
// cumulative bucket counts by handler (upper bound -> count).
export const DURATION_BUCKETS = {
	'/api': [
		['0.05', 20],
		['0.1', 50],
		['0.25', 80],
		['0.5', 95],
		['1', 99],
		['+Inf', 100],
	],
	'/health': [
		['0.05', 10],
		['0.1', 10],
		['0.25', 10],
		['0.5', 10],
		['1', 10],
		['+Inf', 10],
	],
};

// Call-duration histograms as Beyla/OBI export them, for query_metrics'
// [Prometheus] source: per-second increments of the cumulative bucket
// counts of each series (upper bound -> count).
export const CALL_SERIES = [
	{
		metric: 'http_server_request_duration_seconds',
		labels: { service_name: 'checkout', http_route: '/api/pay', http_request_method: 'GET', http_response_status_code: '200' },
		buckets: [['0.01', 2], ['0.05', 4], ['0.1', 6], ['0.5', 8], ['+Inf', 8]],
	},
	{
		metric: 'http_server_request_duration_seconds',
		labels: { service_name: 'checkout', http_route: '/api/pay', http_request_method: 'GET', http_response_status_code: '500' },
		buckets: [['0.01', 0], ['0.05', 0], ['0.1', 0], ['0.5', 1], ['+Inf', 2]],
	},
	{
		metric: 'http_server_request_duration_seconds',
		labels: { service_name: 'checkout', http_route: '/api/orders', http_request_method: 'post', http_response_status_code: '201' },
		buckets: [['0.01', 0], ['0.05', 1], ['0.1', 3], ['0.5', 4], ['+Inf', 4]],
	},
	{
		metric: 'http_server_request_duration_seconds',
		labels: { service_name: 'payments-v2', http_route: '/v1/charges', http_request_method: 'POST', http_response_status_code: '200' },
		buckets: [['0.1', 5], ['+Inf', 5]],
	},
	{
		metric: 'rpc_server_duration_seconds',
		labels: { service_name: 'checkout', rpc_method: '/shop.Cart/Add', rpc_grpc_status_code: '0' },
		buckets: [['0.01', 1], ['0.05', 3], ['0.1', 3], ['0.5', 3], ['+Inf', 3]],
	},
	{
		metric: 'rpc_server_duration_seconds',
		labels: { service_name: 'checkout', rpc_method: '/shop.Cart/Add', rpc_grpc_status_code: '2' },
		buckets: [['0.01', 0], ['0.05', 0], ['0.1', 1], ['0.5', 1], ['+Inf', 1]],
	},
	{
		metric: 'db_client_operation_duration_seconds',
		labels: { service_name: 'checkout', db_operation_name: 'select', db_collection_name: 'orders' },
		buckets: [['0.001', 5], ['0.01', 9], ['0.1', 10], ['+Inf', 10]],
	},
	{
		metric: 'db_client_operation_duration_seconds',
		labels: { service_name: 'checkout', db_operation_name: 'select', db_collection_name: 'orders', error_type: 'timeout' },
		buckets: [['0.001', 0], ['0.01', 0], ['0.1', 0], ['+Inf', 1]],
	},
];

function callExposition(out, s, ms) {
	const families = [...new Set(CALL_SERIES.map((c) => c.metric))];
	for (const metric of families) {
		out.push(`# HELP ${metric} Call duration.`, `# TYPE ${metric} histogram`);
		for (const c of CALL_SERIES.filter((x) => x.metric === metric)) {
			const l = Object.entries(c.labels).map(([k, v]) => `${k}="${v}"`).join(',');
			for (const [le, n] of c.buckets) out.push(`${metric}_bucket{${l},le="${le}"} ${n * s} ${ms}`);
			const count = c.buckets[c.buckets.length - 1][1];
			out.push(`${metric}_sum{${l}} ${0.05 * count * s} ${ms}`);
			out.push(`${metric}_count{${l}} ${count * s} ${ms}`);
		}
	}
}

// Series of the gauge fixture_many_series{i="0".."MANY_SERIES-1"}, value i:
// enough that a dozen seconds of them pass a range query's point limit.
export const MANY_SERIES = 1000;

// Gauge fixture_queue_depth at time ms: q1 steps through 0, 1.5, ... 13.5
// (one step per second), q2 mirrors it.
export function queueDepth(queue, ms) {
	const q1 = (Math.floor(ms / 1000) % 10) * 1.5;
	return queue === 'q1' ? q1 : 100 - q1;
}

// The generated part of the exposition at time ms: the time-dependent
// series with that timestamp (counters count from t0Ms), then
// fixture_many_series.
export function dynamicExposition(ms, t0Ms) {
	const s = (ms - t0Ms) / 1000;
	const out = [];
	out.push('# HELP fixture_requests_total Requests served.', '# TYPE fixture_requests_total counter');
	for (const [h, r] of Object.entries(REQUEST_RATES)) out.push(`fixture_requests_total{handler="${h}"} ${r * s} ${ms}`);
	out.push('# HELP fixture_queue_depth Items waiting.', '# TYPE fixture_queue_depth gauge');
	for (const q of ['q1', 'q2']) out.push(`fixture_queue_depth{queue="${q}"} ${queueDepth(q, ms)} ${ms}`);
	out.push('# HELP fixture_request_duration_seconds Request latency.', '# TYPE fixture_request_duration_seconds histogram');
	for (const [h, buckets] of Object.entries(DURATION_BUCKETS)) {
		for (const [le, n] of buckets) out.push(`fixture_request_duration_seconds_bucket{handler="${h}",le="${le}"} ${n * s} ${ms}`);
		const count = buckets[buckets.length - 1][1];
		out.push(`fixture_request_duration_seconds_sum{handler="${h}"} ${0.2 * count * s} ${ms}`);
		out.push(`fixture_request_duration_seconds_count{handler="${h}"} ${count * s} ${ms}`);
	}
	callExposition(out, s, ms);
	out.push('# HELP fixture_many_series One of many series.', '# TYPE fixture_many_series gauge');
	for (let i = 0; i < MANY_SERIES; i++) out.push(`fixture_many_series{i="${i}"} ${i}`);
	return out.join('\n') + '\n';
}

function listen(server) {
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve(server.address().port));
	});
}

function closeServer(server) {
	server.closeAllConnections?.();
	return new Promise((resolve) => server.close(() => resolve()));
}

// GET /metrics: the fixture file then dynamicExposition(now, t0Ms).
// Resolves to {url, hostPort, t0Ms, scrapes(), close()}.
export async function startExpositionTarget({ t0Ms = Date.now() } = {}) {
	const fixed = fs.readFileSync(STATIC_EXPOSITION, 'utf8');
	let scrapes = 0;
	const server = http.createServer((req, res) => {
		if (req.url !== '/metrics') {
			res.writeHead(404).end();
			return;
		}
		scrapes++;
		res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
		res.end(fixed + dynamicExposition(Date.now(), t0Ms));
	});
	const port = await listen(server);
	return {
		url: `http://127.0.0.1:${port}`,
		hostPort: `127.0.0.1:${port}`,
		t0Ms,
		scrapes: () => scrapes,
		close: () => closeServer(server),
	};
}

// A proxy to upstream (http://host:port) that holds each request delayMs
// (settable later through .delayMs) before forwarding it.  Counts requests
// (.requests) and the most in flight at once (.maxInflight; both may be
// reset by the caller).
export async function startSlowProxy({ upstream, delayMs }) {
	const up = new URL(upstream);
	const state = { delayMs, requests: 0, inflight: 0, maxInflight: 0 };
	const server = http.createServer((req, res) => {
		state.requests++;
		state.inflight++;
		state.maxInflight = Math.max(state.maxInflight, state.inflight);
		let done = false;
		const finish = () => {
			if (!done) state.inflight--;
			done = true;
		};
		res.on('close', finish);
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', () => {
			const timer = setTimeout(() => {
				const fwd = http.request(
					{ host: up.hostname, port: up.port, path: req.url, method: req.method, headers: { ...req.headers, host: up.host } },
					(ures) => {
						res.writeHead(ures.statusCode, ures.headers);
						ures.pipe(res);
					},
				);
				fwd.on('error', () => res.destroy());
				fwd.end(Buffer.concat(chunks));
			}, state.delayMs);
			res.on('close', () => clearTimeout(timer));
		});
	});
	const port = await listen(server);
	return Object.assign(state, {
		url: `http://127.0.0.1:${port}`,
		close: () => closeServer(server),
	});
}

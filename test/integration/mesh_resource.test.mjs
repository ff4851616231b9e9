// mesh_resource.test.mjs - get_resource_detail (issue 20) with the official
// SDK client on the demo dataset (`sextant demo-data`): the services and
// workloads lists and one of each in detail, their requests, versions,
// pods and edges equal to SQL over the same spans; a name as people write
// it resolved, unknown names refused naming close ones; and what the
// answers cost in tokens (Kiali's services list: 1,957 tokens after its
// cut from 5,232), printed and bounded.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { psql, startPostgres } from './lib/pg.mjs';
import { runSextant, startServer } from './lib/server.mjs';
import { answerCost } from './lib/tokens.mjs';
import { callTool, connect, lit, TOOL_ENV } from './lib/tooltest.mjs';

// demo spans: a day of every demo service, quick to load
const DEMO_SPANS = '20000';
// Kiali's services list after its cut (tokens)
const KIALI_LIST_TOKENS = 1957;

let st;
const tool = (args, opts) => callTool(st.mcp, 'get_resource_detail', args, opts);
const sql = async (q) => JSON.parse((await psql(st.pg.url, q)) || 'null');

before(async () => {
	const pg = await startPostgres({ name: 'mesh-resource' });
	st = { pg, stop: () => pg.stop() };
	const load = runSextant(['demo-data', '--spans', DEMO_SPANS], { env: { DATABASE_URL: pg.url }, timeoutMs: 120000 });
	assert.equal(load.code, 0, `demo-data failed: ${load.stderr}`);
	const srv = await startServer({ name: 'mesh-resource', env: { ...TOOL_ENV, DATABASE_URL: pg.url, SEXTANT_TOOLS_ENABLED_SETS: 'mesh,spans,query' } });
	st.stop = async () => {
		await st.mcp?.client.close().catch(() => {});
		try {
			await srv.stop();
		} finally {
			await pg.stop();
		}
	};
	st.mcp = await connect(srv, 'mesh-resource');
});
after(async () => {
	if (st) await st.stop();
});

// The namespace and workload as the gateway names them.
const NS = `coalesce(nullif(service_namespace, ''), nullif(k8s_namespace_name, ''), '')`;
const WL = `coalesce(nullif(k8s_deployment_name, ''), nullif(resource_attributes ->> 'k8s.statefulset.name', ''), nullif(host_name, ''), service_name)`;
const inRange = (tr) => `start_time >= ${lit(tr.from)}::timestamptz AND start_time < ${lit(tr.to)}::timestamptz`;

// Per resource (name, namespace): the requests it served, once per span
// id (the OTLP copy first), and their errors; versions and pods seen.
const resourcesSql = (tr, nameExpr) => `
WITH k AS (SELECT ${nameExpr} AS rname, ${NS} AS rns, * FROM spans WHERE ${inRange(tr)}),
d AS (SELECT DISTINCT ON (trace_id, span_id) rname, rns, sextant_span_outcome(kind, status_code, http_status_code, rpc_grpc_status_code) AS o
	FROM k WHERE kind IN (2, 5) ORDER BY trace_id, span_id, source DESC),
r AS (SELECT rname, rns, count(*) AS n, count(*) FILTER (WHERE o = 1) AS e FROM d GROUP BY 1, 2),
s AS (SELECT rname, rns, array_agg(DISTINCT service_version) FILTER (WHERE service_version <> '') AS versions,
	array_agg(DISTINCT k8s_pod_name) FILTER (WHERE k8s_pod_name <> '') AS pods FROM k GROUP BY 1, 2)
SELECT json_agg(json_build_object('name', s.rname, 'ns', s.rns, 'n', coalesce(r.n, 0), 'e', coalesce(r.e, 0),
	'versions', coalesce(s.versions, '{}'), 'pods', coalesce(s.pods, '{}')))
FROM s LEFT JOIN r USING (rname, rns)`;

// A resource's inbound calls: its SERVER (CONSUMER) spans under a CLIENT
// (PRODUCER) span of another service, once per span id.
const inboundSql = (tr, nameExpr, name) => `
WITH c AS (SELECT DISTINCT ON (trace_id, span_id) * FROM spans WHERE ${inRange(tr)} AND kind IN (2, 5)
	AND ${nameExpr} = ${lit(name)} ORDER BY trace_id, span_id, source DESC)
SELECT count(*) FROM c WHERE EXISTS (SELECT 1 FROM spans p WHERE p.trace_id = c.trace_id AND p.span_id = c.parent_span_id
	AND p.kind IN (3, 4) AND p.service_name <> c.service_name)`;

function checkRows(rows, want, type) {
	const byKey = new Map(want.map((w) => [`${w.name}|${w.ns}`, w]));
	assert.equal(rows.length, want.length, `${type}s listed`);
	for (const row of rows) {
		const w = byKey.get(`${row.name}|${row.namespace ?? ''}`);
		assert.ok(w, `${type} ${row.name} in SQL`);
		assert.equal(row.requests, w.n, `${row.name} requests`);
		assert.equal(row.errors ?? 0, w.e, `${row.name} errors`);
		assert.deepEqual(row.versions, w.versions.slice(0, 10), `${row.name} versions`);
		if (type === 'workload') assert.deepEqual(row.pods, w.pods.slice(0, 10), `${row.name} pods`);
		assert.ok(['HEALTHY', 'DEGRADED', 'UNHEALTHY', 'NA'].includes(row.health));
	}
}

describe('get_resource_detail on the demo day', () => {
	test('services: the list agrees with SQL, and costs fewer tokens than Kiali\'s', async () => {
		const { r, sc, text } = await tool({ resource_type: 'service', rateInterval: '24h' });
		assert.equal(sc.resource_type, 'service');
		assert.equal(sc.not_shown, 0);
		assert.ok(sc.resources.length >= 10, text);
		checkRows(sc.resources, await sql(resourcesSql(sc.time_range, 'service_name')), 'service');
		// worst health first
		const rank = { UNHEALTHY: 0, DEGRADED: 1, HEALTHY: 2, NA: 3 };
		for (let i = 1; i < sc.resources.length; i++) assert.ok(rank[sc.resources[i - 1].health] <= rank[sc.resources[i].health]);
		const cost = answerCost(r);
		console.log(`services list: ${sc.resources.length} services, ${cost.textTokens} text + ${cost.scTokens} structured tokens, ${cost.bytes} bytes`);
		assert.ok(cost.textTokens + cost.scTokens < KIALI_LIST_TOKENS, `${cost.textTokens} + ${cost.scTokens} tokens`);
	});

	test('workloads: the list agrees with SQL (deployment, statefulset, else host)', async () => {
		const { r, sc } = await tool({ resource_type: 'workload', rateInterval: '24h' });
		assert.equal(sc.resource_type, 'workload');
		checkRows(sc.resources, await sql(resourcesSql(sc.time_range, WL)), 'workload');
		const cost = answerCost(r);
		console.log(`workloads list: ${sc.resources.length} workloads, ${cost.textTokens} text + ${cost.scTokens} structured tokens`);
	});

	test('one service in detail: pods, hosts, edges, routes and last error agree with SQL', async () => {
		const { r, sc, text } = await tool({ resource_type: 'service', resource_name: 'checkout', rateInterval: '24h' });
		assert.equal(sc.name, 'checkout');
		const [w] = (await sql(resourcesSql(sc.time_range, 'service_name'))).filter((x) => x.name === 'checkout');
		assert.equal(sc.requests, w.n);
		assert.deepEqual(sc.pods, w.pods.slice(0, 10));
		const hosts = await sql(`SELECT array_to_json(array_agg(DISTINCT host_name)) FROM spans WHERE service_name = 'checkout' AND ${inRange(sc.time_range)}`);
		assert.deepEqual(sc.hosts, hosts.slice(0, 10));
		const inbound = Number(await psql(st.pg.url, inboundSql(sc.time_range, 'service_name', 'checkout')));
		assert.ok(inbound > 0);
		assert.equal(sc.inbound.reduce((a, e) => a + e.requests, 0), inbound, 'inbound calls');
		assert.ok(sc.outbound.length > 0 && sc.outbound_total >= sc.outbound.length);
		// the outbound calls are the list's calls_out, edge by edge
		assert.equal(sc.outbound.reduce((a, e) => a + e.requests, 0), sc.calls_out);
		assert.ok(sc.routes.length > 0 && sc.routes.length <= 5);
		for (let i = 1; i < sc.routes.length; i++) assert.ok(sc.routes[i - 1].requests >= sc.routes[i].requests);
		if (sc.last_error) {
			const last = await psql(st.pg.url, `SELECT encode(trace_id, 'hex') FROM spans WHERE service_name = 'checkout' AND ${inRange(sc.time_range)}
				AND sextant_span_outcome(kind, status_code, http_status_code, rpc_grpc_status_code) = 1 ORDER BY start_time DESC LIMIT 1`);
			assert.equal(sc.last_error.trace_id, last);
		}
		assert.match(text, /## service checkout/);
		assert.match(text, /^inbound \(\d+\):/m);
		const cost = answerCost(r);
		console.log(`service detail: ${cost.textTokens} text + ${cost.scTokens} structured tokens, ${cost.bytes} bytes`);
	});

	test('one workload in detail: its pods and inbound calls agree with SQL', async () => {
		const list = (await tool({ resource_type: 'workload', rateInterval: '24h' })).sc.resources;
		const busiest = [...list].sort((a, b) => b.requests - a.requests)[0];
		const { sc } = await tool({ resource_type: 'workload', resource_name: busiest.name, rateInterval: '24h' });
		assert.equal(sc.name, busiest.name);
		const [w] = (await sql(resourcesSql(sc.time_range, WL))).filter((x) => x.name === busiest.name);
		assert.deepEqual(sc.pods, w.pods.slice(0, 10));
		assert.equal(sc.requests, w.n);
		const inbound = Number(await psql(st.pg.url, inboundSql(sc.time_range, WL, busiest.name)));
		assert.equal(sc.inbound.reduce((a, e) => a + e.requests, 0), inbound);
	});

	test('names: as people write them, and unknown ones refused with close matches', async () => {
		const { sc, text } = await tool({ resource_type: 'service', resource_name: 'ApiGateway', rateInterval: '24h' });
		assert.equal(sc.name, 'api-gateway');
		assert.match(text, /from "ApiGateway"/);
		const wl = await tool({ resource_type: 'workload', resource_name: 'Api Gateway', rateInterval: '24h' });
		assert.equal(wl.sc.name, 'api-gateway');
		assert.match(wl.text, /workload: api-gateway \(from "Api Gateway"\)/);
		const bad = await tool({ resource_type: 'service', resource_name: 'chekout', rateInterval: '24h' }, { expectError: true });
		assert.match(bad.text, /service "chekout" has no spans.*did you mean checkout/);
		const list = (await tool({ resource_type: 'workload', rateInterval: '24h' })).sc.resources;
		const known = list.find((x) => x.name.length > 6).name;
		const typo = `${known.slice(0, -1)}x`;
		const badWl = await tool({ resource_type: 'workload', resource_name: typo, rateInterval: '24h' }, { expectError: true });
		assert.match(badWl.text, new RegExp(`workload "${typo}" has no spans.*did you mean .*${known}`));
		const badType = await st.mcp.client.callTool({ name: 'get_resource_detail', arguments: { resource_type: 'pod' } });
		assert.ok(badType.isError);
	});
});

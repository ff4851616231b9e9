// mesh_ui.test.mjs - get_citations and get_action_ui (tool set "kiali",
// listed when [tools] enabled_sets names it) through the official MCP SDK client,
// which checks each answer against the tool's outputSchema.  Citations:
// curated topics by their keywords, Sextant's own sections by a link to a
// file and heading that exist, nothing for words nothing matches.
// Actions: every path of Sextant's gateway answers 200 on the running
// gateway, and with [links] set (as SEXTANT_LINKS_* variables) the Kiali,
// Grafana Explore and Jaeger links are formed as config.example.toml and
// docs/mesh-ui.md say.  Neither tool reads the store: no PostgreSQL.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, startServer } from './lib/server.mjs';
import { TOOL_ENV, callRefused, callTool, connect } from './lib/tooltest.mjs';

const MESH_ENV = { ...TOOL_ENV, SEXTANT_TOOLS_ENABLED_SETS: 'kiali,core' };
const LINKS = {
	SEXTANT_LINKS_KIALI_URL: 'https://kiali.example.com/kiali/',
	SEXTANT_LINKS_GRAFANA_URL: 'https://grafana.example.com',
	SEXTANT_LINKS_GRAFANA_DATASOURCE: 'tempo-1',
	SEXTANT_LINKS_JAEGER_URL: 'https://jaeger.example.com',
};

// Every action with target "sextant" is a path the gateway answers 200.
async function assertGatewayPaths(srv, actions) {
	for (const a of actions.filter((x) => x.target === 'sextant')) {
		assert.match(a.payload, /^\//, `${a.title}: a path of the gateway`);
		const res = await fetch(srv.url + a.payload, { signal: AbortSignal.timeout(5000) });
		await res.arrayBuffer();
		assert.equal(res.status, 200, `GET ${a.payload} (${a.title})`);
	}
}

// A gateway and a connected client for the tests of a describe block.
function gateway(name, env) {
	const g = {};
	before(async () => {
		g.srv = await startServer({ name, env });
		g.mcp = await connect(g.srv, name);
	});
	after(async () => {
		await g.mcp?.client.close().catch(() => {});
		await g.srv?.stop();
	});
	return g;
}

describe('mesh tools for people and UIs, no [links]', { timeout: 60000 }, () => {
	const g = gateway('mesh-ui', MESH_ENV);

	test('both tools are listed with the mesh set', () => {
		assert.ok(g.mcp.byName.has('get_citations'));
		assert.ok(g.mcp.byName.has('get_action_ui'));
		assert.equal(g.mcp.byName.get('get_action_ui').annotations.readOnlyHint, true);
	});

	test('get_citations: curated topics by their keywords, at most 3', async () => {
		const cases = [
			[{ keywords: 'mtls, strict', domain: 'istio' }, 'https://istio.io/latest/docs/tasks/security/authentication/mtls-migration/'],
			[{ keywords: 'otlp, endpoint' }, 'https://opentelemetry.io/docs/languages/sdk-configuration/otlp-exporter/'],
			[{ keywords: 'Graph Empty, no traffic', domain: 'kiali' }, 'https://kiali.io/docs/faq/graph/#my-graph-is-empty'],
		];
		for (const [args, link] of cases) {
			const { text, sc } = await callTool(g.mcp, 'get_citations', args);
			assert.ok(sc.citations.length >= 1 && sc.citations.length <= 3, JSON.stringify(sc));
			assert.equal(sc.citations[0].link, link, JSON.stringify(args));
			for (let i = 1; i < sc.citations.length; i++) assert.ok(sc.citations[i - 1].score >= sc.citations[i].score);
			if (args.domain) for (const c of sc.citations) assert.equal(c.domain, args.domain);
			assert.ok(text.includes(link) && text.includes(sc.citations[0].title));
			assert.ok(sc.citations[0].body.length > 100);
		}
	});

	test("get_citations: Sextant's sections link to a file and heading that exist", async () => {
		const { sc } = await callTool(g.mcp, 'get_citations', { keywords: 'the map, one tool call', domain: 'sextant' });
		assert.ok(sc.citations.length >= 2);
		for (const c of sc.citations) {
			const [file, anchor] = c.link.split('#');
			const md = fs.readFileSync(path.join(ROOT, file), 'utf8');
			const headings = md.split('\n').filter((l) => l.startsWith('## '))
				.map((l) => l.slice(3).toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-'));
			assert.ok(headings.includes(anchor), `${c.link}: no such heading`);
		}
		assert.ok(sc.citations.some((c) => c.link === 'docs/architecture.md#the-map'));
	});

	test('get_citations: nothing for words nothing matches', async () => {
		const { text, sc } = await callTool(g.mcp, 'get_citations', { keywords: 'zzqx', domain: 'kiali' });
		assert.deepEqual(sc.citations, []);
		assert.match(text, /No documentation matches "zzqx" in kiali/);
		await callRefused(g.mcp, 'get_citations', { keywords: 'x', domain: 'grafana' });
	});

	test("get_action_ui: the console's deep links and the gateway paths answer 200; no console without [links]", async () => {
		const { text, sc } = await callTool(g.mcp, 'get_action_ui', { resourceType: 'overview' });
		assert.deepEqual(sc.actions.map((a) => a.payload), ['/ui/', '/readyz', '/metrics']);
		assert.match(text, /^Views to open: /);
		await assertGatewayPaths(g.srv, sc.actions);
		const views = [
			[{ resourceType: 'service', resourceName: 'check out' }, ['/ui/services/check%20out']],
			[{ resourceType: 'app', resourceName: 'checkout' }, ['/ui/services/checkout']],
			[{ resourceType: 'workload', resourceName: 'checkout-v3' }, ['/ui/?filter=checkout-v3']],
			[{ resourceType: 'graph' }, ['/ui/graph']],
			[{ resourceType: 'service' }, []],
		];
		for (const [args, paths] of views) {
			const v = await callTool(g.mcp, 'get_action_ui', args);
			assert.deepEqual(v.sc.actions.map((a) => a.payload), paths, JSON.stringify(args));
			for (const a of v.sc.actions) assert.match(a.title, /^Sextant console: /);
			await assertGatewayPaths(g.srv, v.sc.actions);
		}
		const none = await callTool(g.mcp, 'get_action_ui', { resourceType: 'istio' });
		assert.deepEqual(none.sc.actions, []);
		assert.match(none.text, /\[links\] names no console/);
		const bad = await callRefused(g.mcp, 'get_action_ui', { resourceType: 'service', namespaces: 'Shop_1' });
		assert.match(bad, /namespaces: "Shop_1" is not a namespace name/);
	});
});

describe('get_action_ui with [links]', { timeout: 60000 }, () => {
	const g = gateway('mesh-ui-links', { ...MESH_ENV, ...LINKS });

	test('a service: Kiali details, Grafana Explore with its TraceQL, Jaeger search', async () => {
		const { sc } = await callTool(g.mcp, 'get_action_ui', {
			resourceType: 'service', resourceName: 'check out', namespaces: 'shop', tab: 'traces', clusterName: 'east',
		});
		const by = Object.fromEntries(sc.actions.map((a) => [a.target, a]));
		assert.deepEqual(Object.keys(by).sort(), ['grafana', 'jaeger', 'kiali', 'sextant']);
		assert.equal(by.sextant.payload, '/ui/services/check%20out');
		assert.equal(by.kiali.payload, 'https://kiali.example.com/kiali/console/namespaces/shop/services/check%20out?tab=traces&clusterName=east');
		assert.equal(by.jaeger.payload, 'https://jaeger.example.com/search?service=check%20out');
		const u = new URL(by.grafana.payload);
		assert.equal(u.origin + u.pathname, 'https://grafana.example.com/explore');
		assert.equal(u.searchParams.get('schemaVersion'), '1');
		const pane = JSON.parse(u.searchParams.get('panes')).sextant;
		assert.equal(pane.datasource, 'tempo-1');
		assert.deepEqual(pane.range, { from: 'now-1h', to: 'now' });
		assert.deepEqual(pane.queries, [{
			refId: 'A', queryType: 'traceql', query: '{resource.service.name="check out"}', datasource: { type: 'tempo', uid: 'tempo-1' },
		}]);
		for (const a of sc.actions) assert.equal(a.kind, 'navigation');
	});

	test('graph, overview, istio and lists; details need one namespace', async () => {
		const graph = await callTool(g.mcp, 'get_action_ui', { resourceType: 'graph', namespaces: 'shop,pay', graphType: 'service' });
		assert.deepEqual(graph.sc.actions.map((a) => a.payload),
			['/ui/graph', 'https://kiali.example.com/kiali/console/graph/namespaces?namespaces=shop,pay&graphType=service']);
		const overview = await callTool(g.mcp, 'get_action_ui', { resourceType: 'overview' });
		assert.deepEqual(overview.sc.actions.map((a) => a.payload),
			['/ui/', '/readyz', '/metrics', 'https://kiali.example.com/kiali/console/overview']);
		await assertGatewayPaths(g.srv, overview.sc.actions);
		const istio = await callTool(g.mcp, 'get_action_ui', { resourceType: 'istio', namespaces: 'shop' });
		assert.deepEqual(istio.sc.actions.map((a) => a.payload), ['https://kiali.example.com/kiali/console/istio?namespaces=shop']);
		const two = await callTool(g.mcp, 'get_action_ui', { resourceType: 'workload', resourceName: 'api-v1', namespaces: 'shop,pay' });
		assert.deepEqual(two.sc.actions.map((a) => a.target), ['sextant', 'grafana']);
		assert.match(two.sc.errors, /exactly one namespace/);
		assert.match(two.text, /Left out: Kiali's workload details need exactly one namespace/);
	});
});

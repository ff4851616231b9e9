// apps.test.mjs - the MCP Apps (issue 22, SEP-1865) end to end: the gateway
// declares io.modelcontextprotocol/ui, lists ui://sextant/{trace,graph,
// session} as text/html;profile=mcp-app with their CSP metadata, and shows
// the tools' _meta.ui.resourceUri to a client that declared the extension
// only (the default tools/list stays within its budget).  A host harness
// page (fixtures/apps-host.html) in headless Chromium runs the official
// AppBridge of @modelcontextprotocol/ext-apps: each View is the resource's
// HTML in a sandboxed iframe under the spec's CSP, handed the tool result
// of the demo data, and the test reads what it drew (bars against the
// trace's spans, their order and critical path; the graph's edges; the
// session's calls) and clicks through, the View's tools/call going through
// the bridge to the gateway and back.  Screenshots in LOG_DIR/apps/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import esbuild from 'esbuild';
import puppeteer from 'puppeteer-core';

import { requireBinary } from './lib/procs.mjs';
import { LOG_DIR, ROOT, runSextant } from './lib/server.mjs';
import { connect, startStack } from './lib/tooltest.mjs';

const UI_EXT = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const CHROMIUM = '/usr/bin/chromium';
const FIXTURES = path.join(ROOT, 'test/integration/fixtures');
const OUT_DIR = path.join(LOG_DIR, 'apps');
// each step of a View (load, draw, a drill-down through the gateway)
const STEP_MS = 20000;

let st, ui, browser, page, web, userDir;
const calls = []; // the Views' tools/call, as the bridge handed them over
const problems = []; // console errors and page errors of host and Views

// Serves the harness and the AppBridge bundled for the browser.
async function serveHarness() {
	const bundle = await esbuild.build({
		entryPoints: [path.join(ROOT, 'test/integration/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js')],
		bundle: true,
		format: 'esm',
		platform: 'browser',
		write: false,
		logLevel: 'error',
	});
	// esbuild's service process ends now, while this process can reap it
	// (else it outlives the test as a zombie in the test's process group)
	await esbuild.stop();
	const files = {
		'/host.html': ['text/html', fs.readFileSync(path.join(FIXTURES, 'apps-host.html'))],
		'/apps-host.js': ['text/javascript', fs.readFileSync(path.join(FIXTURES, 'apps-host.js'))],
		'/app-bridge.js': ['text/javascript', bundle.outputFiles[0].contents],
	};
	const srv = http.createServer((req, res) => {
		const f = files[req.url];
		res.writeHead(f ? 200 : 404, { 'content-type': f ? f[0] : 'text/plain' });
		res.end(f ? f[1] : 'not found');
	});
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	return srv;
}

// Reads an app's resource as the host does, and hands the View args and result.
async function loadView(tool, args, result) {
	const uri = ui.byName.get(tool)._meta?.ui?.resourceUri;
	assert.match(uri ?? '', /^ui:\/\/sextant\//, `${tool}: no _meta.ui.resourceUri`);
	const read = await ui.client.readResource({ uri });
	const c = read.contents[0];
	assert.equal(c.mimeType, MIME);
	const app = await page.evaluate((v) => window.hostLoad(v), { html: c.text, meta: c._meta, args, result });
	const frame = await (await page.$('#frame')).contentFrame();
	return { frame, app };
}

const waitState = (frame, state) => frame.waitForFunction((s) => document.body.dataset.state === s, { timeout: STEP_MS }, state);

async function shot(name) {
	await page.screenshot({ path: path.join(OUT_DIR, `${name}.png`), fullPage: true });
}

async function tool(name, args) {
	const r = await ui.client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
	assert.ok(!r.isError && r.structuredContent, `${name}: ${JSON.stringify(r.content).slice(0, 500)}`);
	return r;
}

before(async () => {
	requireBinary(CHROMIUM, 'chromium');
	fs.mkdirSync(OUT_DIR, { recursive: true });
	st = await startStack({ name: 'apps' });
	const demo = runSextant(['demo-data', '--spans', '20000'], { env: { DATABASE_URL: st.pg.url }, timeoutMs: 60000 });
	assert.equal(demo.code, 0, `sextant demo-data failed:\n${demo.stderr}`);
	// the host's client: it declared the extension
	ui = await connect(st.srv, 'sextant-apps-host', { capabilities: { extensions: { [UI_EXT]: { mimeTypes: [MIME] } } } });
	st.clients.push(ui.client);
	web = await serveHarness();
	userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-apps-chromium-'));
	browser = await puppeteer.launch({
		executablePath: CHROMIUM,
		headless: true,
		userDataDir: userDir,
		// a View that never answers fails its step, not the whole run
		protocolTimeout: 2 * STEP_MS,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	page = await browser.newPage();
	await page.setViewport({ width: 1140, height: 800 });
	page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	await page.exposeFunction('mcpCallTool', async (params) => {
		calls.push(params);
		return ui.client.callTool(params, undefined, { timeout: 60000 });
	});
	await page.goto(`http://127.0.0.1:${web.address().port}/host.html`);
	await page.waitForFunction(() => window.hostReady === true, { timeout: STEP_MS });
});

after(async () => {
	await browser?.close().catch(() => {});
	web?.close();
	if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
	if (st) await st.stop();
});

describe('the server side', () => {
	test('declares the extension, lists the apps with their CSP, links the tools for its clients only', async () => {
		assert.deepEqual(ui.client.getServerCapabilities().extensions?.[UI_EXT], { mimeTypes: [MIME] });
		const list = await ui.client.listResources();
		const apps = list.resources.filter((r) => r.uri.startsWith('ui://'));
		assert.deepEqual(apps.map((r) => r.uri).sort(), ['ui://sextant/graph', 'ui://sextant/session', 'ui://sextant/trace']);
		for (const r of apps) {
			assert.equal(r.mimeType, MIME, r.uri);
			assert.deepEqual(r._meta?.ui?.csp, { connectDomains: [], resourceDomains: [] }, r.uri);
			const c = (await ui.client.readResource({ uri: r.uri })).contents[0];
			assert.equal(c.uri, r.uri);
			assert.match(c.text, /^<!doctype html>/i);
			assert.deepEqual(c._meta, r._meta);
			// self-contained: no file of ours fetched, nothing external
			assert.doesNotMatch(c.text, /<script[^>]+src=|<link[^>]+href=|@import|https?:\/\/(?!www\.w3\.org\/2000\/svg)/i, r.uri);
		}
		const want = { get_trace: 'trace', query_traces: 'trace', get_mesh_graph: 'graph', get_session: 'session' };
		for (const [name, app] of Object.entries(want)) {
			assert.equal(ui.byName.get(name)?._meta?.ui?.resourceUri, `ui://sextant/${app}`, name);
			// a client without the extension sees no _meta.ui (text answers only)
			assert.equal(st.mcp.byName.get(name)?._meta?.ui, undefined, name);
		}
	});
});

describe('the Views in a host', () => {
	test('trace: a bar per span in the answer\'s order, the critical path and errors marked, a span\'s attributes on a click', async () => {
		const qt = await tool('query_traces', { time_range: '1d', max_traces: 30, sort: 'slowest' });
		// a trace with nothing folded or cut, so that bars = spans
		let pick = null;
		for (const t of qt.structuredContent.traces) {
			const r = await tool('get_trace', { trace_id: t.trace_id });
			const sc = r.structuredContent;
			if (sc.folded_spans === 0 && sc.spans_not_shown === 0 && sc.span_count >= 5 && (!pick || sc.span_count > pick.sc.span_count)) pick = { r, sc };
		}
		assert.ok(pick, 'no trace of 5 or more spans without folding');
		const { frame, app } = await loadView('get_trace', { trace_id: pick.sc.trace_id }, pick.r);
		assert.equal(app.name, 'sextant-trace');
		await waitState(frame, 'waterfall');
		const bars = await frame.$$eval('g.wf-row', (els) => els.map((e) => ({ id: e.dataset.spanId, critical: e.classList.contains('crit'), error: e.classList.contains('err'), source: e.dataset.source })));
		assert.equal(bars.length, pick.sc.span_count, 'one bar per span');
		assert.deepEqual(bars.map((b) => b.id), pick.sc.lines.map((l) => l.span_id), 'in the answer\'s order');
		assert.deepEqual(bars.map((b) => b.critical), pick.sc.lines.map((l) => l.critical === true), 'critical path');
		assert.deepEqual(bars.map((b) => b.error), pick.sc.lines.map((l) => l.status === 'error'), 'errors');
		assert.deepEqual(bars.map((b) => b.source), pick.sc.lines.map((l) => l.source), 'sources');
		assert.ok(bars.some((b) => b.critical) && bars.some((b) => !b.critical) || bars.every((b) => b.critical), 'marks drawn');
		const marks = await frame.$$eval('.wf-mark', (els) => els.map((e) => e.textContent));
		assert.ok(marks.every((m) => /\[(eBPF|OTLP)\]/.test(m)), `source marks: ${marks.join(' | ')}`);
		const bottleneck = pick.sc.bottlenecks[0].span_id;
		const n = calls.length;
		await frame.click(`g.wf-row[data-span-id="${bottleneck}"] .wf-bar`);
		const panel = await frame.$eval('.wf-panel', (e) => (e.hidden ? '' : e.textContent));
		assert.ok(panel.includes(bottleneck), `side panel: ${panel}`);
		const attrs = pick.sc.key_attributes.find((k) => k.span_id === bottleneck)?.attributes || {};
		for (const k of Object.keys(attrs)) assert.ok(panel.includes(k), `attribute ${k} in the side panel`);
		// then the span whole, read through the host (get_trace with its span_id)
		await frame.waitForSelector('.wf-whole h4');
		assert.deepEqual(calls.slice(n), [{ name: 'get_trace', arguments: { trace_id: pick.sc.trace_id, span_id: bottleneck } }]);
		const whole = (await tool('get_trace', { trace_id: pick.sc.trace_id, span_id: bottleneck })).structuredContent;
		const full = await frame.$eval('.wf-panel', (e) => e.textContent);
		assert.ok(whole.attributes.length > 0, 'the bottleneck has attributes');
		for (const a of [...whole.attributes, ...whole.resource]) assert.ok(full.includes(a.key), `${a.key} in the side panel`);
		assert.ok(full.includes(`Events (${whole.span.events_total}`), `events counted: ${full}`);
		await shot('trace-waterfall');
	});

	test('trace: query_traces\' list, a click calls get_trace through the bridge and draws its answer', async () => {
		const r = await tool('query_traces', { time_range: '1d', max_traces: 8 });
		const { frame } = await loadView('query_traces', { time_range: '1d', max_traces: 8 }, r);
		await waitState(frame, 'list');
		const rows = await frame.$$eval('tr.trace-row', (els) => els.map((e) => e.dataset.traceId));
		assert.deepEqual(rows, r.structuredContent.traces.map((t) => t.trace_id));
		await shot('trace-list');
		const n = calls.length;
		await frame.click(`tr.trace-row[data-trace-id="${rows[1]}"]`);
		await waitState(frame, 'waterfall');
		assert.deepEqual(calls.slice(n), [{ name: 'get_trace', arguments: { trace_id: rows[1] } }]);
		const want = (await tool('get_trace', { trace_id: rows[1] })).structuredContent;
		const ids = await frame.$$eval('g.wf-row', (els) => els.map((e) => e.dataset.spanId));
		assert.deepEqual(ids, want.lines.map((l) => l.span_id));
	});

	test('graph: every edge of get_mesh_graph drawn between its nodes, leaf kinds apart; a node\'s traces through the bridge', async () => {
		const args = { rateInterval: '1d' };
		const r = await tool('get_mesh_graph', args);
		const sc = r.structuredContent;
		assert.ok(sc.traffic.length >= 10, `demo graph: ${sc.traffic.length} edges`);
		const { frame } = await loadView('get_mesh_graph', args, r);
		await waitState(frame, 'graph');
		const nodes = await frame.$$eval('g.gr-node', (els) => els.map((e) => [e.dataset.name, e.dataset.kind, e.dataset.health]));
		assert.deepEqual(nodes.map((n) => n[0]).sort(), sc.nodes.map((n) => n.name).sort());
		const edges = await frame.$$eval('g.gr-edge', (els) => els.map((e) => `${e.dataset.source} -> ${e.dataset.target}`));
		assert.deepEqual(edges.sort(), sc.traffic.map((e) => `${e.source} -> ${e.target}`).sort());
		const kind = new Map(nodes.map((n) => [n[0], n[1]]));
		// a leaf (no spans of its own) is an external API, or a database
		// when it answers SQL
		const sqlTargets = new Set(sc.traffic.filter((e) => e.protocol === 'sql').map((e) => e.target));
		for (const n of sc.nodes.filter((n) => n.leaf)) assert.equal(kind.get(n.name), sqlTargets.has(n.name) ? 'db' : 'external', n.name);
		assert.ok([...kind.values()].includes('external') && [...kind.values()].includes('db'));
		for (const e of sc.traffic.filter((e) => e.protocol === 'sql')) assert.equal(kind.get(e.target), 'db', e.target);
		assert.ok([...kind.values()].includes('service'));
		for (const n of nodes) assert.equal(n[2], sc.nodes.find((x) => x.name === n[0]).health ?? 'NA', `${n[0]} health`);
		const labels = await frame.$$eval('.gr-edge-label', (els) => els.map((e) => e.textContent));
		assert.ok(labels.every((l) => /^\S+ (req|rps) · \d+\.\d% err · P95 /.test(l)), labels.join(' | '));
		const shown = await frame.$$eval('.gr-edge-label', (els) => els.filter((e) => getComputedStyle(e).display !== 'none').length);
		assert.ok(shown >= labels.length / 2, `${shown} of ${labels.length} edge labels shown`);
		await shot('graph');
		const checkout = sc.nodes.find((n) => /\/checkout /.test(n.name));
		assert.ok(checkout, 'the demo checkout node');
		const n = calls.length;
		await frame.click(`g.gr-node[data-name="${checkout.name}"] .gr-shape`);
		await waitState(frame, 'traces');
		assert.equal(calls.length, n + 1);
		assert.equal(calls[n].name, 'query_traces');
		assert.equal(calls[n].arguments.service, 'checkout');
		const rows = await frame.$$('tr.trace-row');
		assert.ok(rows.length > 0, 'checkout\'s traces listed');
		await shot('graph-traces');
	});

	test('session: the session\'s calls on a timeline with model, tokens and cost; the list opens a session through the bridge', async () => {
		const list = await tool('get_session', {});
		const top = list.structuredContent.top_sessions[0].session_id;
		const r = await tool('get_session', { session_id: top });
		const sc = r.structuredContent;
		const { frame } = await loadView('get_session', { session_id: top }, r);
		await waitState(frame, 'session');
		const want = new Map([...sc.slowest_calls, ...sc.most_expensive_calls].map((c) => [c.span_id, c]));
		const drawn = await frame.$$eval('g.ss-call', (els) => els.map((e) => ({ id: e.dataset.spanId, text: e.textContent })));
		assert.deepEqual(drawn.map((d) => d.id).sort(), [...want.keys()].sort());
		const starts = drawn.map((d) => Date.parse(want.get(d.id).start));
		assert.deepEqual(starts, [...starts].sort((a, b) => a - b), 'by start time');
		for (const d of drawn) {
			const c = want.get(d.id);
			assert.ok(d.text.includes(c.model), `${d.id}: model ${c.model} in ${d.text}`);
			assert.ok(d.text.includes(c.input_tokens.toLocaleString('en-US')), `${d.id}: tokens in ${d.text}`);
			assert.ok(d.text.includes(`$${c.cost_usd.toFixed(c.cost_usd < 1 ? 4 : 2)}`), `${d.id}: cost in ${d.text}`);
		}
		await shot('session');
		const v = await loadView('get_session', {}, list);
		await waitState(v.frame, 'list');
		const n = calls.length;
		await v.frame.click(`tr.session-row[data-session-id="${top}"]`);
		await waitState(v.frame, 'session');
		assert.deepEqual(calls.slice(n), [{ name: 'get_session', arguments: { session_id: top } }]);
		const again = await v.frame.$$eval('g.ss-call', (els) => els.length);
		assert.equal(again, want.size);
	});

	test('no console or page errors in the host or the Views', () => {
		assert.deepEqual(problems, []);
	});
});

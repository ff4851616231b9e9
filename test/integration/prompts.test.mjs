// prompts.test.mjs - the investigation prompts, completion/complete and the
// sextant:// resource templates through the official MCP SDK client, over
// spans put in through the OTLP receiver: the prompts carry the rules and
// the live services busiest first with their namespace, completions come
// prefix first then fuzzy from the gateway's cache (at most 100, with total
// and hasMore), and a template read answers with the text of the tool that
// serves it (query_metrics, get_trace, get_session).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { KIND, newId, span } from './lib/otlpjson.mjs';
import { ACCEPT_BOTH, request } from './lib/http.mjs';
import { psql } from './lib/pg.mjs';
import { MIN_MS, MS, ResBatch, callTool, connect, sleep, startStack } from './lib/tooltest.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS + 13n;
const batch = new ResBatch();
const http = (code) => ({ 'http.request.method': 'GET', 'http.route': '/x', 'http.response.status_code': code });

// payments (30 requests, namespace shop) is busier than checkout (12,
// shop), busier than mailer (3, ops); 120 fleet-NNN services with one
// internal span each (no requests) in namespace fleet.
const REQS = { payments: [30, 'shop'], checkout: [12, 'shop'], mailer: [3, 'ops'] };
const traceIds = [];
for (const [svc, [n, ns]] of Object.entries(REQS)) {
	for (let i = 0; i < n; i++) {
		const t = newId(16);
		traceIds.push(t);
		batch.add(svc, 'otlp', span({ traceId: t, spanId: newId(8), name: 'GET /x', kind: KIND.SERVER,
			startNs: ago((2 + i) * MIN_MS), durNs: 5n * MS, attributes: http(i % 5 === 0 ? 500 : 200) }), { 'service.namespace': ns });
	}
}
const FLEET = 120;
for (let i = 0; i < FLEET; i++) {
	batch.add(`fleet-${String(i).padStart(3, '0')}`, 'otlp', span({ traceId: newId(16), spanId: newId(8), name: 'tick',
		startNs: ago(10 * MIN_MS), durNs: MS }), { 'service.namespace': 'fleet' });
}
// one GenAI session of checkout, model gpt-4o-mini
const SESSION = 'sess-prompt-7f3a';
const GEN_TRACE = newId(16);
batch.add('checkout', 'otlp', span({ traceId: GEN_TRACE, spanId: newId(8), name: 'chat gpt-4o-mini', kind: KIND.CLIENT,
	startNs: ago(4 * MIN_MS), durNs: 800n * MS,
	attributes: { 'session.id': SESSION, 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai',
		'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.response.model': 'gpt-4o-mini',
		'gen_ai.usage.input_tokens': 100, 'gen_ai.usage.output_tokens': 20 } }), { 'service.namespace': 'shop' });

// twelve older sessions conv-00 .. conv-11 (20 to 31 minutes ago, conv-00
// the oldest): completion keeps the 1,000 most recent ids, not five
const CONVS = 12;
for (let i = 0; i < CONVS; i++) {
	const t = newId(16);
	traceIds.push(t);
	batch.add('checkout', 'otlp', span({ traceId: t, spanId: newId(8), name: 'chat gpt-4o-mini', kind: KIND.CLIENT,
		startNs: ago((31 - i) * MIN_MS), durNs: 300n * MS,
		attributes: { 'session.id': `conv-${String(i).padStart(2, '0')}`, 'gen_ai.operation.name': 'chat',
			'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.response.model': 'gpt-4o-mini',
			'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 2 } }), { 'service.namespace': 'shop' });
}
const TRACES = traceIds.length + FLEET + 1; // and GEN_TRACE

let st;
let client;

before(async () => {
	st = await startStack({ name: 'prompts', post: (url) => batch.post(url) });
	client = st.mcp.client;
});
after(async () => {
	if (st) await st.stop();
});

const complete = (ref, name, value) => client.complete({ ref, argument: { name, value } });
const promptRef = (name) => ({ type: 'ref/prompt', name });
const resRef = (uri) => ({ type: 'ref/resource', uri });

// The cache fills in the background after a first request: ask until
// the services are there (bounded).
async function untilServices() {
	const deadline = Date.now() + 15000;
	for (;;) {
		const r = await complete(promptRef('investigate_service'), 'service', 'pay');
		if (r.completion.values.includes('payments')) return;
		assert.ok(Date.now() < deadline, 'the service list never reached the completion cache');
		await sleep(200);
	}
}

test('prompts/list: the five prompts with their arguments', async () => {
	const { prompts } = await client.listPrompts();
	const byName = new Map(prompts.map((p) => [p.name, p]));
	assert.deepEqual([...byName.keys()].sort(),
		['compare_sessions', 'error_triage', 'genai_cost_review', 'investigate_service', 'latency_regression']);
	const args = (n) => byName.get(n).arguments.map((a) => `${a.name}${a.required ? '!' : ''}`);
	assert.deepEqual(args('investigate_service'), ['service!', 'time_range']);
	assert.deepEqual(args('error_triage'), ['service', 'time_range']);
	assert.deepEqual(args('latency_regression'), ['service!', 'compare_to']);
	assert.deepEqual(args('genai_cost_review'), ['time_range', 'service', 'model']);
	assert.deepEqual(args('compare_sessions'), ['session_a!', 'session_b!']);
});

test('prompts/get: rules, the live services busiest first with namespace, then the plan', async () => {
	await untilServices();
	const r = await client.getPrompt({ name: 'investigate_service', arguments: { service: 'the payment service', time_range: 'last hour' } });
	assert.equal(r.messages.length, 1);
	assert.equal(r.messages[0].role, 'user');
	const text = r.messages[0].content.text;
	assert.match(text, /^Investigate service the payment service over time_range last hour/);
	assert.match(text, /"last hour" -> time_range "1h"/);
	assert.match(text, /"errors" -> status_code_range "errors"/);
	assert.match(text, /"success" -> "success" \(2xx\)/);
	const line = text.split('\n').find((l) => l.startsWith('Services now (busiest first): '));
	assert.ok(line, text);
	// busiest first, each with its namespace; 50 shown of 123
	assert.match(line, /^Services now \(busiest first\): payments \(shop\), checkout \(shop\), mailer \(ops\), fleet-\d{3} \(fleet\)/);
	assert.equal(line.split(', ').length, 50, line);
	assert.match(line, / and 73 more$/);
	assert.match(text, /\nPlan:\n1\. query_metrics \{service, time_range, compare_to: "previous"\}/);

	const c = await client.getPrompt({ name: 'compare_sessions', arguments: { session_a: SESSION, session_b: 'sess-b' } });
	assert.match(c.messages[0].content.text, new RegExp(`^Compare agent sessions ${SESSION} and sess-b`));
	assert.match(c.messages[0].content.text, /1\. compare_sessions \{session_id_1: session_a, session_id_2: session_b\}/);
	const g = await client.getPrompt({ name: 'genai_cost_review', arguments: { model: 'gpt-4o-mini' } });
	assert.match(g.messages[0].content.text, /^Review LLM cost and usage of every service, model gpt-4o-mini over time_range 24h\./);
	await assert.rejects(client.getPrompt({ name: 'latency_regression', arguments: {} }), /needs the argument "service"/);
});

test('initialize instructions: the rules and the services', async () => {
	await untilServices();
	const other = await connect(st.srv, 'prompts-instructions');
	st.clients.push(other.client);
	const ins = other.client.getInstructions();
	assert.match(ins, /^Sextant answers questions about services/);
	assert.match(ins, /\nRead the user's words as tool arguments: /);
	assert.match(ins, /\nServices \(busiest first\): payments \(shop\), checkout \(shop\), mailer \(ops\), /);
});

test('completion/complete: prefix first, then fuzzy; at most 100 with total and hasMore', async () => {
	await untilServices();
	let r = await complete(promptRef('investigate_service'), 'service', 'pay');
	assert.deepEqual(r.completion, { values: ['payments'], total: 1, hasMore: false });
	// a misspelling: no prefix match, the fuzzy one
	r = await complete(promptRef('latency_regression'), 'service', 'paymnets');
	assert.deepEqual(r.completion.values, ['payments']);
	// "check": checkout by prefix first
	r = await complete(promptRef('error_triage'), 'service', 'CHECK');
	assert.equal(r.completion.values[0], 'checkout');
	// 120 fleet services: 100 of them, total 120, hasMore
	r = await complete(promptRef('investigate_service'), 'service', 'fleet-');
	assert.equal(r.completion.values.length, 100);
	assert.equal(r.completion.total, 120);
	assert.equal(r.completion.hasMore, true);
	assert.ok(r.completion.values.every((v) => v.startsWith('fleet-')));
	// empty prefix: every service, busiest first
	r = await complete(resRef('sextant://services/{service}'), 'service', '');
	assert.deepEqual(r.completion.values.slice(0, 3), ['payments', 'checkout', 'mailer']);
	assert.equal(r.completion.total, 3 + FLEET);
	// time ranges and baselines
	r = await complete(promptRef('investigate_service'), 'time_range', '1');
	assert.deepEqual(r.completion.values, ['15m', '1h', '12h']);
	r = await complete(promptRef('latency_regression'), 'compare_to', 'pre');
	assert.deepEqual(r.completion.values, ['previous']);
	// models, sessions, traces, from the store
	r = await complete(promptRef('genai_cost_review'), 'model', 'gpt');
	assert.deepEqual(r.completion.values, ['gpt-4o-mini']);
	r = await complete(promptRef('compare_sessions'), 'session_b', 'sess-p');
	assert.deepEqual(r.completion.values, [SESSION]);
	r = await complete(resRef('sextant://sessions/{session_id}'), 'session_id', 'sess');
	assert.deepEqual(r.completion.values, [SESSION]);
	const tid = traceIds[0];
	r = await complete(resRef('sextant://traces/{trace_id}'), 'trace_id', tid.slice(0, 10));
	assert.deepEqual(r.completion.values, [tid]);
	// the cache holds the 1,000 most recent traces: all 178 here, 100
	// answered; the oldest completes by its first characters
	r = await complete(resRef('sextant://traces/{trace_id}'), 'trace_id', '');
	assert.equal(r.completion.values.length, 100);
	assert.equal(r.completion.total, TRACES);
	assert.equal(r.completion.hasMore, true);
	const oldest = traceIds[REQS.payments[0] - 1]; // payments' 31 minutes ago
	r = await complete(resRef('sextant://traces/{trace_id}'), 'trace_id', oldest.slice(0, 12));
	assert.deepEqual(r.completion.values, [oldest]);
	// and every session, newest first: conv-00 is the 13th most recent
	r = await complete(promptRef('compare_sessions'), 'session_a', 'conv-');
	assert.deepEqual(r.completion.values, Array.from({ length: CONVS }, (_, i) => `conv-${String(CONVS - 1 - i).padStart(2, '0')}`));
	r = await complete(resRef('sextant://sessions/{session_id}'), 'session_id', 'conv-00');
	assert.equal(r.completion.values[0], 'conv-00', 'the prefix match first, the fuzzy others after');
	// namespaces
	r = await complete(promptRef('investigate_service'), 'namespace', '');
	assert.deepEqual([...r.completion.values].sort(), ['fleet', 'ops', 'shop']);
});

test('resources/templates/list and resources/read on each template', async () => {
	const { resourceTemplates } = await client.listResourceTemplates();
	assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
		['sextant://services/{service}', 'sextant://sessions/{session_id}', 'sextant://traces/{trace_id}']);

	const read = async (uri) => {
		const r = await client.readResource({ uri });
		assert.equal(r.contents.length, 1);
		assert.equal(r.contents[0].uri, uri);
		assert.equal(r.contents[0].mimeType, 'text/markdown');
		return r.contents[0].text;
	};
	const tid = traceIds[0];
	assert.equal(await read(`sextant://traces/${tid}`), (await callTool(st.mcp, 'get_trace', { trace_id: tid })).text);
	assert.match(await read(`sextant://traces/${tid}`), /payments/);
	const sess = await read(`sextant://sessions/${SESSION}`);
	assert.equal(sess, (await callTool(st.mcp, 'get_session', { session_id: SESSION })).text);
	assert.match(sess, /gpt-4o-mini/);
	// the same figures as query_metrics; only the range's instants differ
	const noInstants = (t) => t.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T');
	const svc = await read('sextant://services/payments');
	assert.equal(noInstants(svc),
		noInstants((await callTool(st.mcp, 'query_metrics', { service: 'payments', time_range: '1h', compare_to: 'previous' })).text));
	assert.match(svc, /30 requests/);
	assert.match(svc, /payments/);
	// a percent-encoded name reads the same
	assert.equal(noInstants(await read('sextant://services/paym%65nts')), noInstants(svc));
	// an unknown trace: get_trace's words; a malformed id: not found
	const none = `${'0'.repeat(31)}1`;
	assert.equal(await read(`sextant://traces/${none}`), `no trace ${none} in the store\n`);
	await assert.rejects(client.readResource({ uri: 'sextant://traces/not-a-trace' }), (e) => {
		assert.equal(e.code, -32002, String(e));
		assert.match(e.message, /not-a-trace/);
		return true;
	});
	await assert.rejects(client.readResource({ uri: 'sextant://sessions/a%2Fb' }), (e) => {
		assert.equal(e.code, -32002, String(e));
		return true;
	});
});

test('a 2026-07-28 request reads a template the same way, marked not cacheable', async () => {
	const uri = `sextant://traces/${traceIds[1]}`;
	const r = await request(st.srv.mcpUrl, {
		method: 'POST',
		headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': uri },
		body: JSON.stringify({
			jsonrpc: '2.0', id: 7, method: 'resources/read',
			params: { uri, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
		}),
	});
	assert.equal(r.status, 200, r.text);
	const msg = r.json ?? JSON.parse(r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join(''));
	assert.equal(msg.id, 7);
	assert.equal(msg.result.resultType, 'complete');
	assert.equal(msg.result.ttlMs, 0);
	assert.equal(msg.result.contents[0].text, (await callTool(st.mcp, 'get_trace', { trace_id: traceIds[1] })).text);
});

test('resources/subscribe: a template\'s resource is refused, naming what can be subscribed', async () => {
	await assert.rejects(client.subscribeResource({ uri: 'sextant://services/payments' }), (e) => {
		assert.equal(e.code, -32602, String(e));
		assert.match(e.message, /sextant:\/\/services\/payments cannot be subscribed: .*resources\/list.*sextant:\/\/server\/status/, e.message);
		return true;
	});
	await assert.rejects(client.subscribeResource({ uri: `sextant://traces/${traceIds[0]}` }), (e) => e.code === -32602);
	// a listed resource is subscribed as before
	assert.deepEqual(await client.subscribeResource({ uri: 'sextant://server/status' }), {});
	await client.unsubscribeResource({ uri: 'sextant://server/status' });
});

test('the picture\'s refresh gives up after a second on a locked store, and completion still answers', async () => {
	await untilServices();
	const waiting = () => psql(st.pg.url, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		AND query LIKE '%latest AS (SELECT s.n AS service%'`);
	// a transaction holds spans for 6 s from (a little after) t0
	const lock = psql(st.pg.url, 'BEGIN; LOCK TABLE spans IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT;');
	const t0 = Date.now();
	try {
		// the picture is older than 2 s by now: a completion asks for a
		// refresh and answers at once from what it has
		await sleep(2100);
		const r = await complete(promptRef('investigate_service'), 'service', 'pay');
		assert.deepEqual(r.completion.values, ['payments']);
		let seen = false;
		for (let i = 0; i < 20 && !seen; i++) {
			seen = (await waiting()) === '1';
			if (!seen) await sleep(50);
		}
		assert.ok(seen, 'the refresh waited on the lock');
		const since = Date.now();
		while ((await waiting()) !== '0') {
			assert.ok(Date.now() - since < 2500, 'the refresh still waits on the lock after 2.5 s');
			await sleep(50);
		}
		assert.ok(Date.now() - t0 < 5800, 'given up while the lock was still held');
	} finally {
		await lock;
	}
});

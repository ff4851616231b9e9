// spans.test.mjs - query_spans, get_trace and list_services through the
// official MCP SDK client, over spans put in through the OTLP receiver
// (eBPF told apart by telemetry.sdk.name "beyla").  Every number is
// compared with SQL the test runs itself on the spans table: totals,
// durations, statuses, per-service rates, error rates, p95
// (percentile_cont) and last seen, GenAI tokens and costs (computed from
// the model_pricing rows).  Pagination of query_spans is walked page by
// page over spans with equal start times and durations (no row lost or
// repeated, the total exact on every page); get_trace draws a trace with
// its bottlenecks and error chain, and a 10,000-span trace within the
// character budget with its repeated siblings folded and counted.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { KIND, STATUS, attrs, newId, span } from './lib/otlpjson.mjs';
import { psql } from './lib/pg.mjs';
import { psqlJson } from './lib/pgjson.mjs';
import {
	HOUR_MS, MIN_MS, MS, ResBatch, SQL_CLIENT_ERROR, SQL_FAILED, callRefused, callTool, close, costOf, hexLit, lit, loadPricing, mdTable, rendered, rng, startStack,
} from './lib/tooltest.mjs';
import { selfTime } from './lib/genaisql.mjs';

const NOW_MS = Date.now();
const ago = (ms) => BigInt(NOW_MS - Math.round(ms)) * MS + 251n;
const random = rng(4242);

// ---- the data -------------------------------------------------------------------

const batch = new ResBatch();
const NS = { shop: { 'service.namespace': 'shop' }, jobs: { 'service.namespace': 'jobs' } };

// One span of trace t at t0 (BigInt ns) + at ms, lasting dur ms; events
// and links in OTLP/JSON form.
function sp(service, source, t, t0, { id = newId(8), parent, name, kind = KIND.INTERNAL, at = 0, dur, status, attributes, resource = {}, events, links }) {
	const s = span({
		traceId: t, spanId: id, parentSpanId: parent, name, kind,
		startNs: t0 + BigInt(Math.round(at * 1e6)), durNs: BigInt(Math.round(dur * 1e6)), attributes, status,
	});
	if (events) s.events = events;
	if (links) s.links = links;
	batch.add(service, source, s, resource);
	return id;
}
const http = (method, route, code) => ({ 'http.request.method': method, 'http.route': route, 'http.response.status_code': code });

// shop-api: requests over the last 50 minutes from both sources (half of
// them the same spans seen by both), some failing; each with a SQL child
// span of shop-db seen by eBPF.
for (let i = 0; i < 60; i++) {
	const t = newId(16);
	const t0 = ago((1 + 49 * random()) * MIN_MS);
	const fail = i % 6 === 0;
	const dur = 5 + 200 * random() ** 2;
	const r = newId(8);
	const sources = i % 2 ? ['otlp', 'ebpf'] : [i % 4 === 0 ? 'ebpf' : 'otlp'];
	for (const source of sources) {
		sp('shop-api', source, t, t0, {
			id: r, name: 'GET /api/items', kind: KIND.SERVER, dur: source === 'ebpf' ? dur - 0.1 : dur,
			attributes: http('GET', '/api/items', fail ? 500 : 200), status: fail ? { code: STATUS.ERROR, message: 'items failed' } : undefined,
			resource: NS.shop,
		});
	}
	sp('shop-db', 'ebpf', t, t0, { parent: r, name: 'SELECT items', kind: KIND.CLIENT, at: 1, dur: dur / 3, resource: NS.shop,
		attributes: { 'db.system': 'postgresql', 'db.operation': 'SELECT', 'db.sql.table': 'items' } });
}
// shop-grpc (eBPF and OTLP, different spans): gRPC server spans, some
// failing, an HTTP client span (not a request); its namespace changes from
// "old-shop" to "shop" (the newest span's counts).
for (let i = 0; i < 30; i++) {
	const source = i % 3 ? 'otlp' : 'ebpf';
	sp('shop-grpc', source, newId(16), ago((1 + 1.5 * i) * MIN_MS), {
		name: 'shop.Cart/Add', kind: KIND.SERVER, dur: 2 + 3 * random(), resource: { 'service.namespace': i < 2 ? 'shop' : 'old-shop' },
		attributes: { 'rpc.system': 'grpc', 'rpc.service': 'shop.Cart', 'rpc.method': 'Add', 'rpc.grpc.status_code': i % 7 === 0 ? 13 : i % 11 === 0 ? 5 : 0 },
	});
}
sp('shop-grpc', 'otlp', newId(16), ago(3 * MIN_MS), { name: 'GET /upstream', kind: KIND.CLIENT, dur: 50, attributes: http('GET', '/upstream', 503), resource: NS.shop });

// shop-worker (OTLP only, namespace jobs): jobs over 40 minutes.
for (let i = 0; i < 25; i++) {
	sp('shop-worker', 'otlp', newId(16), ago((2 + 38 * random()) * MIN_MS), {
		name: 'process order', kind: KIND.CONSUMER, dur: 20 + 400 * random(),
		status: i % 5 === 1 ? { code: STATUS.ERROR } : i % 5 === 2 ? { code: STATUS.OK } : undefined, resource: NS.jobs,
	});
}
// old-svc: last seen three hours ago.
for (let i = 0; i < 4; i++) {
	sp('old-svc', 'otlp', newId(16), ago((3 * 60 + i) * MIN_MS), { name: 'tick', kind: KIND.SERVER, dur: 10 + i, attributes: http('GET', '/tick', 200) });
}

// 300 small services with long names (one internal span each, in the
// k8s namespace "fleet"): more than a list_services answer can show.
const FLEET = 300;
for (let i = 0; i < FLEET; i++) {
	sp(`fleet-member-with-a-rather-long-service-name-${String(i).padStart(3, '0')}`, 'otlp', newId(16), ago((5 + random() * 40) * MIN_MS),
		{ name: 'tick', dur: 1, resource: { 'k8s.namespace.name': 'fleet' } });
}

// long-name-svc: 250 spans with long names: 200 rows do not fit an answer.
const LONG_N = 250;
const LONG_NAME = 'reconcile ledger entries for the nightly settlement batch against the upstream clearing house export file';
for (let i = 0; i < LONG_N; i++) sp('long-name-svc', 'otlp', newId(16), ago((4 + i * 0.1) * MIN_MS), { name: `${LONG_NAME} ${i}`, dur: 2 });

// page-svc: 45 spans starting at the same nanosecond with the same
// duration (ties in both orders), and 30 others, for pagination.
const PAGE_T0 = ago(7 * MIN_MS);
for (let i = 0; i < 45; i++) {
	sp('page-svc', 'otlp', newId(16), PAGE_T0, { name: `tie ${i}`, dur: 12.5, status: i % 9 === 0 ? { code: STATUS.ERROR } : undefined });
}
for (let i = 0; i < 30; i++) {
	sp('page-svc', i % 3 ? 'otlp' : 'ebpf', newId(16), ago((3 + i * 0.5) * MIN_MS), { name: `step ${i}`, dur: i % 4 === 0 ? 12.5 : 3 + i });
}

// GenAI spans of genai-svc in one session: priced, priced by a dated
// name, and an unknown model.
const SESSION = 'sess-spans-1';
const GEN = newId(16);
{
	const t0 = ago(15 * MIN_MS);
	const r = sp('genai-svc', 'otlp', GEN, t0, { name: 'POST /ask', kind: KIND.SERVER, dur: 2000, attributes: { 'session.id': SESSION } });
	const g = (name, at, dur, provider, model, tin, tout, resp) => sp('genai-svc', 'otlp', GEN, t0, {
		parent: r, name, kind: KIND.CLIENT, at, dur, attributes: {
			'session.id': SESSION, 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model,
			'gen_ai.response.model': resp, 'gen_ai.usage.input_tokens': tin, 'gen_ai.usage.output_tokens': tout,
		},
	});
	g('chat gpt-4o', 10, 500, 'openai', 'gpt-4o', 1200, 340, 'gpt-4o-2024-08-06');
	g('chat claude', 520, 700, 'anthropic', 'claude-sonnet-4-20250514', 2500, 410);
	g('chat acme', 1230, 300, 'acme', 'acme-llm-9', 800, 90);
	sp('genai-svc', 'otlp', GEN, t0, { parent: r, name: 'render answer', at: 1540, dur: 400, attributes: { 'session.id': SESSION } });
}

// T_ERR: root > handler > (db call, slow compute) with an error chain
// root > handler > charge > card (the deepest error).
const T_ERR = newId(16);
const ERR = {};
{
	const t0 = ago(12 * MIN_MS);
	ERR.root = sp('checkout', 'otlp', T_ERR, t0, { name: 'POST /checkout', kind: KIND.SERVER, dur: 1005, attributes: http('POST', '/checkout', 500), status: { code: STATUS.ERROR, message: 'checkout failed' } });
	ERR.handler = sp('checkout', 'otlp', T_ERR, t0, { parent: ERR.root, name: 'handle checkout', at: 10, dur: 950 });
	ERR.db = sp('checkout-db', 'ebpf', T_ERR, t0, { parent: ERR.handler, name: 'SELECT cart', kind: KIND.CLIENT, at: 20, dur: 80 });
	ERR.compute = sp('checkout', 'otlp', T_ERR, t0, { parent: ERR.handler, name: 'compute totals', at: 110, dur: 500 });
	ERR.charge = sp('checkout', 'otlp', T_ERR, t0, { parent: ERR.handler, name: 'charge', kind: KIND.CLIENT, at: 620, dur: 300, status: { code: STATUS.ERROR, message: 'payment declined' } });
	ERR.card = sp('payments', 'otlp', T_ERR, t0, { parent: ERR.charge, name: 'authorize card', kind: KIND.SERVER, at: 630, dur: 250, status: { code: STATUS.ERROR, message: 'card declined' } });
	ERR.fraud = sp('payments', 'otlp', T_ERR, t0, { parent: ERR.card, name: 'fraud check', at: 640, dur: 20 });
}

// T_ASYNC, the demo's checkout: the gateway's request (101 ms) waits on
// checkout, which waits on fraud's Score (68 ms) and publishes an event;
// notifications consumes it after the request ended and posts for 223 ms.
const T_ASYNC = newId(16);
const ASYNC = {};
{
	const t0 = ago(14 * MIN_MS);
	ASYNC.gw = sp('async-gateway', 'otlp', T_ASYNC, t0, { name: 'POST /api/checkout', kind: KIND.SERVER, dur: 101 });
	ASYNC.co = sp('async-checkout', 'otlp', T_ASYNC, t0, { parent: ASYNC.gw, name: 'POST /checkout', kind: KIND.SERVER, at: 1, dur: 99 });
	ASYNC.score = sp('async-fraud', 'otlp', T_ASYNC, t0, { parent: ASYNC.co, name: 'Score', kind: KIND.SERVER, at: 20, dur: 68 });
	ASYNC.pub = sp('async-checkout', 'otlp', T_ASYNC, t0, { parent: ASYNC.co, name: 'orders publish', kind: KIND.PRODUCER, at: 95, dur: 1 });
	ASYNC.con = sp('async-notify', 'otlp', T_ASYNC, t0, { parent: ASYNC.pub, name: 'orders process', kind: KIND.CONSUMER, at: 130, dur: 233 });
	ASYNC.post = sp('async-notify', 'otlp', T_ASYNC, t0, { parent: ASYNC.con, name: 'POST', kind: KIND.CLIENT, at: 140, dur: 223 });
}

// T_FAIL: a checkout that failed three ways below its request: payments
// answered 402 (its server span recorded the exception), the e-mail to
// api.sendgrid.com failed 503 (the slowest span), a gRPC call UNAVAILABLE.
const T_FAIL = newId(16);
const FAIL = {};
{
	const t0 = ago(11 * MIN_MS);
	const err = (message) => ({ code: STATUS.ERROR, message });
	FAIL.root = sp('fail-checkout', 'otlp', T_FAIL, t0, { name: 'POST /checkout', kind: KIND.SERVER, dur: 400, attributes: http('POST', '/checkout', 502), status: err('checkout failed') });
	FAIL.charge = sp('fail-checkout', 'otlp', T_FAIL, t0, {
		parent: FAIL.root, name: 'POST /charge', kind: KIND.CLIENT, at: 5, dur: 60, status: err('payment required'),
		attributes: { ...http('POST', undefined, 402), 'server.address': 'payments.internal', 'server.port': 8080 },
	});
	FAIL.pay = sp('fail-payments', 'otlp', T_FAIL, t0, {
		parent: FAIL.charge, name: 'POST /charge', kind: KIND.SERVER, at: 10, dur: 50, status: err('card declined'),
		attributes: { ...http('POST', '/charge', 402), 'card.token': 'tok_live_4242', 'payment.amount': 129.5, 'customer.contact': 'ann@example.com' },
		events: [{ timeUnixNano: (t0 + 40n * MS).toString(), name: 'exception', attributes: attrs({
			'exception.type': 'CardDeclinedError', 'exception.message': 'insufficient funds for ann@example.com', 'exception.stacktrace': 'at charge (pay.js:12)',
		}) }],
	});
	FAIL.mail = sp('fail-checkout', 'otlp', T_FAIL, t0, {
		parent: FAIL.root, name: 'POST', kind: KIND.CLIENT, at: 70, dur: 300, status: err('Service Unavailable'),
		attributes: { 'http.request.method': 'POST', 'http.response.status_code': 503, 'server.address': 'api.sendgrid.com', 'url.full': 'https://api.sendgrid.com/v3/mail/send' },
	});
	FAIL.grpc = sp('fail-checkout', 'otlp', T_FAIL, t0, {
		parent: FAIL.root, name: 'inventory.Stock/Reserve', kind: KIND.CLIENT, at: 375, dur: 20, status: err('connection refused'),
		attributes: { 'rpc.system': 'grpc', 'rpc.service': 'inventory.Stock', 'rpc.method': 'Reserve', 'rpc.grpc.status_code': 14, 'server.address': 'inventory' },
	});
}

// T_LINK: a request, and work it started through a span link rather than
// a parent (a batch consumer), running on after the request ended.
const T_LINK = newId(16);
const LINK = {};
{
	const t0 = ago(10 * MIN_MS);
	LINK.req = sp('link-api', 'otlp', T_LINK, t0, { name: 'POST /orders', kind: KIND.SERVER, dur: 40 });
	LINK.job = sp('link-worker', 'otlp', T_LINK, t0, { name: 'settle order', at: 60, dur: 150, links: [{ traceId: T_LINK, spanId: LINK.req }] });
}

// T_BIG: 10,000 spans: a root, 99 "process chunk" children with 100
// "write row" children each; one row fails, one chunk is slow.
const T_BIG = newId(16);
const BIG_N = 10000;
const BIG = {};
{
	const t0 = ago(9 * MIN_MS);
	BIG.root = sp('big-service', 'otlp', T_BIG, t0, { name: 'batch job', kind: KIND.SERVER, dur: 3000 });
	for (let j = 0; j < 99; j++) {
		const slow = j === 40;
		const c = sp('big-service', 'otlp', T_BIG, t0, { parent: BIG.root, name: 'process chunk', at: 1 + j * 25, dur: slow ? 600 : 20 });
		if (slow) BIG.slow = c;
		for (let k = 0; k < 100; k++) {
			const bad = j === 57 && k === 33;
			const id = sp('big-service', 'otlp', T_BIG, t0, {
				parent: c, name: 'write row', at: 1 + j * 25 + k * 0.1, dur: 0.05, status: bad ? { code: STATUS.ERROR, message: 'constraint violated' } : undefined,
			});
			if (bad) {
				BIG.badChunk = c;
				BIG.bad = id;
			}
		}
	}
}

// ---- set-up ----------------------------------------------------------------------

let st;
const call = (name, args, opts) => callTool(st.mcp, name, args, opts);

before(async () => {
	st = await startStack({ name: 'spans', post: (url) => batch.post(url) });
});

beforeEach(() => st?.srv.assertAlive());

after(async () => {
	if (st) await st.stop();
});


// ---- SQL: the expected answers ------------------------------------------------

const STATUS_NAME = ['unset', 'ok', 'error'];

// The spans matching query_spans' filters, one per span id (the OTLP row
// when both sources have it), in the tool's documented order: newest
// first (or longest first), then trace id, span id, source descending.
// f: {service_name, trace_id, session_id, from, to, status, min_duration_ms,
// order_by}.
async function sqlSpans(f) {
	const where = [];
	if (f.service_name) where.push(`service_name = ${lit(f.service_name)}`);
	if (f.trace_id) where.push(`trace_id = ${hexLit(f.trace_id)}`);
	if (f.session_id) where.push(`session_id = ${lit(f.session_id)}`);
	if (f.from) where.push(`start_time >= ${lit(f.from)}::timestamptz AND start_time < ${lit(f.to)}::timestamptz`);
	if (f.status === 'error') where.push(SQL_FAILED);
	if (f.status === 'client_error') where.push(SQL_CLIENT_ERROR);
	if (f.status === 'ok') where.push(`NOT ${SQL_FAILED} AND NOT ${SQL_CLIENT_ERROR}`);
	if (f.min_duration_ms !== undefined) where.push(`duration_ns >= ${Math.round(f.min_duration_ms * 1e6)}`);
	const order = `${f.order_by === 'duration' ? 'duration_ns DESC, ' : ''}start_time DESC, start_nanos DESC, trace_id DESC, span_id DESC, source DESC`;
	return psqlJson(st.pg.url, `
		WITH d AS (SELECT DISTINCT ON (trace_id, span_id) *,
				array_agg(source) OVER (PARTITION BY trace_id, span_id ORDER BY source
					ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS seen
			FROM spans s ORDER BY trace_id, span_id, (source = 'otlp') DESC)
		SELECT coalesce(json_agg(json_build_object(
			'trace_id', encode(trace_id, 'hex'), 'span_id', encode(span_id, 'hex'), 'parent_span_id', encode(parent_span_id, 'hex'),
			'source', source, 'also_seen_by', to_json(array_remove(seen, source)), 'service', service_name, 'name', name,
			'start_ns', sextant_unix_nano(start_time, start_nanos)::text, 'duration_ms', duration_ns / 1e6::float8,
			'status_code', status_code, 'status_message', status_message, 'session_id', session_id,
			'outcome', CASE WHEN ${SQL_FAILED} THEN 'error' WHEN ${SQL_CLIENT_ERROR} THEN 'client_error' ELSE 'ok' END,
			'provider', nullif(gen_ai_provider, ''), 'operation', gen_ai_operation,
			'model', coalesce(nullif(gen_ai_response_model, ''), nullif(gen_ai_request_model, '')),
			'input_tokens', gen_ai_input_tokens, 'output_tokens', gen_ai_output_tokens,
			'genai', coalesce(gen_ai_provider, gen_ai_operation, gen_ai_request_model, gen_ai_response_model,
				gen_ai_input_tokens::text, gen_ai_output_tokens::text) IS NOT NULL
		) ORDER BY ${order}), '[]') FROM d ${where.length ? `WHERE ${where.join(' AND ')}` : ''}`);
}

// Asserts a query_spans row against its SQL row.
function assertSpanRow(got, w, pricing, what) {
	const at = `${what} ${w.name} (${w.span_id})`;
	assert.equal(got.span_id, w.span_id, `${at}: span_id`);
	assert.equal(got.trace_id, w.trace_id, `${at}: trace_id`);
	assert.equal(got.parent_span_id, w.parent_span_id, `${at}: parent_span_id`);
	assert.equal(got.source, w.source, `${at}: source`);
	assert.deepEqual(got.also_seen_by, w.also_seen_by, `${at}: also_seen_by`);
	assert.equal(got.service, w.service, `${at}: service`);
	assert.equal(got.name, w.name, `${at}: name`);
	assert.equal(Date.parse(got.start), Number(BigInt(w.start_ns) / MS), `${at}: start ${got.start}, SQL ${w.start_ns} ns`);
	close(got.duration_ms, w.duration_ms, `${at}: duration_ms`);
	assert.equal(got.status, STATUS_NAME[w.status_code], `${at}: status`);
	assert.equal(got.outcome, w.outcome, `${at}: outcome`);
	assert.equal(got.status_message, w.status_message, `${at}: status_message`);
	assert.equal(got.session_id, w.session_id, `${at}: session_id`);
	if (!w.genai) {
		assert.equal(got.gen_ai, null, `${at}: gen_ai`);
		return;
	}
	assert.ok(got.gen_ai, `${at}: no gen_ai`);
	for (const k of ['provider', 'operation', 'model', 'input_tokens', 'output_tokens']) assert.equal(got.gen_ai[k], w[k], `${at}: gen_ai.${k}`);
	const cost = costOf(pricing, { provider: w.provider, model: w.model, input: w.input_tokens, output: w.output_tokens, atMs: Number(BigInt(w.start_ns) / MS) });
	if (cost === null) assert.equal(got.gen_ai.cost_usd, null, `${at}: an unknown model's cost is null, never 0`);
	else close(got.gen_ai.cost_usd, cost, `${at}: gen_ai.cost_usd`, { rel: 1e-9, abs: 1e-12 });
}

// Walks every page of query_spans(args): asserts that each page's total is
// the SQL count, that the pages together are the SQL rows in order (none
// lost or repeated), the text of each page, and returns {pages, rows}.
// stopAfter: check only that many pages (a prefix of the rows).
async function walk(args, { maxPages = 200, stopAfter = Infinity } = {}) {
	const pricing = await loadPricing(st.pg.url);
	let cursor;
	let want;
	const rows = [];
	let pages = 0;
	do {
		const { sc, text } = await call('query_spans', cursor ? { ...args, cursor } : args);
		pages++;
		assert.ok(pages <= maxPages, 'too many pages');
		if (!want) {
			if (!args.trace_id && !args.session_id) assert.ok(sc.time_range, 'no time_range in the answer');
			want = await sqlSpans({ ...args, ...(sc.time_range ?? {}) });
		}
		const what = `query_spans(${JSON.stringify(args)}) page ${pages}`;
		assert.equal(sc.total, want.length, `${what}: total`);
		assert.ok(sc.spans.length <= (args.limit ?? 20), `${what}: ${sc.spans.length} rows, limit ${args.limit ?? 20}`);
		const ids = new Set(rows.map((r) => r.span_id));
		for (const [i, r] of sc.spans.entries()) {
			assert.ok(!ids.has(r.span_id), `${what}: span ${r.span_id} repeated from an earlier page`);
			const w = want[rows.length + i];
			assert.ok(w, `${what}: more rows than SQL has`);
			assertSpanRow(r, w, pricing, `${what} row ${rows.length + i}`);
		}
		rows.push(...sc.spans);
		// the text: "## Spans (N of T total)", one table row per span,
		// "M more: call again with cursor" while rows remain
		const head = /^## Spans \((\d[\d,]*) of (\d[\d,]*) total\)/m.exec(text);
		assert.ok(head, `${what}: no "## Spans (N of T total)" header:\n${text.slice(0, 500)}`);
		assert.equal(Number(head[1].replace(/,/g, '')), sc.spans.length, `${what}: N of the header`);
		assert.equal(Number(head[2].replace(/,/g, '')), want.length, `${what}: T of the header`);
		const t = mdTable(text, /\|\s*Time\s*\|\s*Trace\s*\|\s*Service\s*\|\s*Name\s*\|\s*Duration\s*\|\s*Status\s*\|/);
		assert.ok(t || sc.spans.length === 0, `${what}: no table Time | Trace | Service | Name | Duration | Status`);
		if (t) {
			assert.equal(t.rows.length, sc.spans.length, `${what}: table rows`);
			t.rows.forEach((r, i) => {
				const sp = sc.spans[i];
				assert.equal(r[1], sp.trace_id.slice(0, 8), `${what}: the short trace id`);
				assert.equal(r[2], sp.service);
				assert.equal(r[3], sp.name);
				// "error 503: msg", "client error UNAUTHENTICATED", "ok"
				assert.ok(r[5].startsWith(sp.outcome.replace('_', ' ')), `${what}: Status cell ${r[5]} (${sp.outcome})`);
				const code = sp.grpc_status_code > 0 ? null : sp.http_status_code >= 400 ? String(sp.http_status_code) : null;
				if (sp.outcome !== 'ok' && code) assert.ok(r[5].includes(code), `${what}: Status cell ${r[5]} without ${code}`);
				if (sp.outcome !== 'ok' && sp.status_message) assert.ok(r[5].includes(sp.status_message), `${what}: Status cell ${r[5]} without the message`);
			});
		}
		const left = want.length - rows.length;
		if (left > 0) {
			assert.equal(typeof sc.next_cursor, 'string', `${what}: ${left} rows left and no next_cursor`);
			const more = /(\d[\d,]*) more: call again with cursor "([^"]+)"/.exec(text);
			assert.ok(more, `${what}: no "N more: call again with cursor" in the text`);
			assert.equal(Number(more[1].replace(/,/g, '')), left, `${what}: N more`);
			assert.equal(more[2], sc.next_cursor, `${what}: the cursor in the text`);
		} else {
			assert.equal(sc.next_cursor, null, `${what}: next_cursor on the last page`);
		}
		cursor = sc.next_cursor;
		if (pages >= stopAfter) return { pages, rows, want };
	} while (cursor);
	assert.equal(rows.length, want.length, `query_spans(${JSON.stringify(args)}): rows over every page`);
	return { pages, rows, want };
}

// A trace's spans, one per span id (the OTLP row first), with depth and
// self time: [{span_id, parent_span_id, service, name, source, start_ns,
// duration_ns, status_code, status_message, depth, self_ns, children}].
async function sqlTrace(traceId) {
	const rows = await psqlJson(st.pg.url, `SELECT coalesce(json_agg(x), '[]') FROM (
		SELECT DISTINCT ON (span_id) encode(span_id, 'hex') AS span_id, encode(parent_span_id, 'hex') AS parent_span_id,
			service_name AS service, name, source, sextant_unix_nano(start_time, start_nanos)::text AS start_ns,
			duration_ns::text AS duration_ns, status_code, status_message
		FROM spans WHERE trace_id = ${hexLit(traceId)} ORDER BY span_id, (source = 'otlp') DESC) x`);
	const byId = new Map();
	for (const r of rows) {
		r.start_ns = BigInt(r.start_ns);
		r.duration_ns = BigInt(r.duration_ns);
		r.children = [];
		byId.set(r.span_id, r);
	}
	for (const r of rows) if (r.parent_span_id && byId.has(r.parent_span_id)) byId.get(r.parent_span_id).children.push(r);
	for (const r of rows) {
		r.children.sort((a, b) => (a.start_ns < b.start_ns ? -1 : a.start_ns > b.start_ns ? 1 : 0));
		r.self_ns = selfTime(r, r.children);
		let d = 0;
		for (let p = r; p.parent_span_id && byId.has(p.parent_span_id); p = byId.get(p.parent_span_id)) d++;
		r.depth = d;
	}
	const start = rows.reduce((m, r) => (r.start_ns < m ? r.start_ns : m), rows[0].start_ns);
	const end = rows.reduce((m, r) => (r.start_ns + r.duration_ns > m ? r.start_ns + r.duration_ns : m), 0n);
	return { rows, byId, start, end, durationMs: Number(end - start) / 1e6 };
}

const subtree = (r) => 1 + r.children.reduce((a, c) => a + subtree(c), 0);
const ms = (ns) => Number(ns) / 1e6;

// ---- tests ------------------------------------------------------------------------

test('the data is stored as sent: spans per service and source', async () => {
	const got = JSON.parse(await psql(st.pg.url, `SELECT json_object_agg(service_name || ' ' || source, n) FROM
		(SELECT service_name, source, count(*) AS n FROM spans GROUP BY 1, 2) c`));
	const want = {};
	for (const g of batch.groups.values()) want[`${g.service} ${g.source}`] = (want[`${g.service} ${g.source}`] ?? 0) + g.spans.length;
	assert.deepEqual(got, want);
});

test('tools/list: query_spans, get_trace, list_services with output schemas and read-only annotations', () => {
	for (const n of ['query_spans', 'get_trace', 'list_services']) {
		const t = st.mcp.byName.get(n);
		assert.ok(t, `${n} missing from tools/list`);
		assert.ok(t.outputSchema, `${n}: no outputSchema`);
		assert.equal(t.annotations?.readOnlyHint, true, `${n}: readOnlyHint`);
	}
});

describe('query_spans', () => {
	test('pagination newest first over 45 spans with the same start and duration: every page exact, no row lost or repeated', async () => {
		const { pages, rows } = await walk({ service_name: 'page-svc', limit: 7 });
		assert.equal(rows.length, 75);
		assert.equal(pages, Math.ceil(75 / 7));
	});

	test('pagination longest first (ties in duration and start): every page exact', async () => {
		const { rows } = await walk({ service_name: 'page-svc', limit: 6, order_by: 'duration' });
		assert.equal(rows.length, 75);
		const { rows: e } = await walk({ service_name: 'page-svc', limit: 4, status: 'error' });
		assert.equal(e.length, 5);
	});

	test('a page is cut to fit the answer: 250 spans with long names at limit 200, walked to the end', async () => {
		const { rows, pages } = await walk({ service_name: 'long-name-svc', limit: 200 });
		assert.equal(rows.length, LONG_N);
		assert.ok(pages >= 3, `${pages} pages: 200 rows of ${LONG_NAME.length}-character names do not fit 16,000 characters`);
	});

	test('both sources: a span seen by both is listed once as its OTLP row with also_seen_by eBPF; filters each equal SQL', async () => {
		const { rows } = await walk({ service_name: 'shop-api', limit: 200 });
		assert.equal(rows.length, 60);
		assert.ok(rows.some((r) => r.source === 'otlp' && r.also_seen_by.includes('ebpf')));
		assert.ok(rows.some((r) => r.source === 'ebpf'));
		await walk({ service_name: 'shop-api', status: 'error', limit: 50 });
		// shop-grpc: INTERNAL errors, NOT_FOUND client errors; a client
		// span's 503 is an error too
		const ge = await walk({ service_name: 'shop-grpc', status: 'error', limit: 50 });
		assert.ok(ge.rows.some((r) => r.grpc_status_code === 13) && ge.rows.some((r) => r.http_status_code === 503), 'INTERNAL and a client 503 are errors');
		const gc = await walk({ service_name: 'shop-grpc', status: 'client_error', limit: 50 });
		assert.ok(gc.rows.length > 0 && gc.rows.every((r) => r.grpc_status_code === 5), 'NOT_FOUND answered by a server is a client error');
		await walk({ service_name: 'shop-api', status: 'ok', min_duration_ms: 50, limit: 50 });
		await walk({ min_duration_ms: 300, order_by: 'duration', limit: 50 });
		await walk({ trace_id: T_ERR });
		await walk({ session_id: SESSION });
		const from = new Date(NOW_MS - 30 * MIN_MS).toISOString();
		const to = new Date(NOW_MS - 10 * MIN_MS).toISOString();
		const { rows: r2 } = await walk({ service_name: 'shop-worker', from, to, limit: 100 });
		assert.ok(r2.length > 0);
		await walk({ time_range: '24h', service_name: 'old-svc' });
	});

	test('the default range is the last hour unless trace_id or session_id is given', async () => {
		const { sc } = await call('query_spans', { service_name: 'old-svc' });
		assert.equal(Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from), HOUR_MS);
		assert.equal(sc.total, 0, 'old-svc was last seen 3 hours ago');
	});

	test('GenAI spans: model, tokens, cost from the price table (dated names at their base price), unknown cost never 0', async () => {
		const { sc, text } = await call('query_spans', { trace_id: GEN });
		const pricing = await loadPricing(st.pg.url);
		const want = await sqlSpans({ trace_id: GEN });
		assert.equal(sc.total, 5);
		sc.spans.forEach((r, i) => assertSpanRow(r, want[i], pricing, 'GEN'));
		const gpt = sc.spans.find((r) => r.gen_ai?.model === 'gpt-4o-2024-08-06');
		close(gpt.gen_ai.cost_usd, (1200 * 2.5 + 340 * 10) / 1e6, 'gpt-4o-2024-08-06 at the gpt-4o price');
		assert.match(text, /^### GenAI Spans \(3 of 5\)/m);
		const t = mdTable(text, /\|\s*Model\s*\|\s*Tokens \(in\/out\)\s*\|\s*Cost\s*\|/);
		assert.ok(t, `no GenAI table in:\n${text}`);
		assert.equal(t.rows.length, 3);
		const col = (n) => t.header.findIndex((h) => h.startsWith(n));
		for (const r of sc.spans.filter((x) => x.gen_ai)) {
			const row = t.rows.find((x) => x[col('Model')] === r.gen_ai.model);
			assert.ok(row, `no GenAI row for ${r.gen_ai.model}`);
			assert.match(row[col('Tokens')], new RegExp(`^${r.gen_ai.input_tokens.toLocaleString('en-US')} / ${r.gen_ai.output_tokens.toLocaleString('en-US')}$`));
			if (r.gen_ai.cost_usd === null) {
				assert.match(row[col('Cost')], /unknown/);
				assert.match(row[col('Cost')], /acme-llm-9/);
			} else {
				rendered(/\$([\d.,]+)/.exec(row[col('Cost')])[1], r.gen_ai.cost_usd, `${r.gen_ai.model} cost`);
			}
		}
	});

	test('a bad cursor, or one of other arguments: "cursor is invalid or expired: call again without cursor"', async () => {
		const msg = await callRefused(st.mcp, 'query_spans', { service_name: 'page-svc', cursor: 'bm90LWEtY3Vyc29y' });
		assert.match(msg, /cursor is invalid or expired: call again without cursor/);
		const { sc } = await call('query_spans', { service_name: 'page-svc', limit: 5 });
		const other = await callRefused(st.mcp, 'query_spans', { service_name: 'shop-api', limit: 5, cursor: sc.next_cursor });
		assert.match(other, /cursor is invalid or expired: call again without cursor/);
		const tampered = `${sc.next_cursor.slice(0, -4)}AAAA`;
		assert.match(await callRefused(st.mcp, 'query_spans', { service_name: 'page-svc', limit: 5, cursor: tampered }), /cursor/);
	});

	test('nothing matches: total 0, no rows, an answer that says so', async () => {
		const { sc, text } = await call('query_spans', { service_name: 'no-such-service' });
		assert.equal(sc.total, 0);
		assert.deepEqual(sc.spans, []);
		assert.equal(sc.next_cursor, null);
		assert.match(text, /0 total|no spans/i);
	});

	test('bad arguments name the field', async () => {
		assert.match(await callRefused(st.mcp, 'query_spans', { trace_id: 'xyz' }), /trace_id/);
		assert.match(await callRefused(st.mcp, 'query_spans', { limit: 0 }), /limit/);
		assert.match(await callRefused(st.mcp, 'query_spans', { time_range: 'fortnight-ish' }), /time_range/);
		assert.match(await callRefused(st.mcp, 'query_spans', { status: 'bad' }), /status/);
	});
});

describe('get_trace', () => {
	// Asserts get_trace's answer against SQL: every line's span, depth,
	// duration, self time and status; folded lines against the runs of
	// siblings they stand for; counts; bottlenecks; the error chain.
	async function traceMatchesSql(traceId) {
		const { sc, text } = await call('get_trace', { trace_id: traceId });
		const tr = await sqlTrace(traceId);
		const what = `get_trace(${traceId})`;
		assert.equal(sc.found, true);
		assert.equal(sc.span_count, tr.rows.length, `${what}: span_count`);
		close(sc.duration_ms, tr.durationMs, `${what}: duration_ms`);
		assert.equal(sc.error_spans, tr.rows.filter((r) => r.status_code === 2).length, `${what}: error_spans`);
		const dups = Number(await psql(st.pg.url, `SELECT count(*) FROM (SELECT span_id FROM spans WHERE trace_id = ${hexLit(traceId)}
			GROUP BY span_id HAVING count(*) > 1) d`));
		assert.equal(sc.duplicates ?? 0, dups, `${what}: duplicates`);
		let shown = 0;
		let folded = 0;
		const seen = new Set();
		for (const [i, l] of sc.lines.entries()) {
			const r = tr.byId.get(l.span_id);
			const at = `${what} line ${i} (${l.name})`;
			assert.ok(r, `${at}: span ${l.span_id} is not in the store`);
			assert.ok(!seen.has(l.span_id), `${at}: span shown twice`);
			seen.add(l.span_id);
			assert.equal(l.depth, r.depth, `${at}: depth`);
			assert.equal(l.service, r.service, `${at}: service`);
			assert.equal(l.name, r.name, `${at}: name`);
			assert.equal(l.source, r.source, `${at}: source`);
			close(l.duration_ms, ms(r.duration_ns), `${at}: duration_ms`);
			if (l.self_ms !== undefined) close(l.self_ms, ms(r.self_ns), `${at}: self_ms`);
			if (l.repeat === 1) {
				shown++;
				assert.equal(l.status, STATUS_NAME[r.status_code], `${at}: status`);
				assert.equal(l.status_message ?? null, r.status_message, `${at}: status_message`);
				continue;
			}
			// a folded run: repeat consecutive siblings with the same
			// service and name from this one on, and everything below
			assert.ok(l.repeat >= 3, `${at}: a run of ${l.repeat}`);
			const sibs = r.parent_span_id ? tr.byId.get(r.parent_span_id).children : tr.rows.filter((x) => x.depth === 0);
			const k = sibs.indexOf(r);
			const run = sibs.slice(k, k + l.repeat);
			assert.equal(run.length, l.repeat, `${at}: the run goes past the siblings`);
			assert.ok(run.every((x) => x.service === r.service && x.name === r.name), `${at}: the run mixes names`);
			close(l.min_ms, Math.min(...run.map((x) => ms(x.duration_ns))), `${at}: min_ms`);
			close(l.max_ms, Math.max(...run.map((x) => ms(x.duration_ns))), `${at}: max_ms`);
			close(l.avg_ms, run.reduce((a, x) => a + ms(x.duration_ns), 0) / run.length, `${at}: avg_ms`);
			const n = run.reduce((a, x) => a + subtree(x), 0);
			assert.equal(l.spans, n, `${at}: spans behind the line`);
			assert.equal(l.error_spans ?? 0, 0, `${at}: a folded run with an error span`);
			for (const x of run) seen.add(x.span_id);
			folded += n;
		}
		assert.equal(sc.folded_spans ?? 0, folded, `${what}: folded_spans`);
		assert.equal(shown + folded + (sc.spans_not_shown ?? 0), tr.rows.length, `${what}: lines + folded + not shown`);
		// bottlenecks: the 5 largest self times
		const top = [...tr.rows].sort((a, b) => (b.self_ns > a.self_ns ? 1 : b.self_ns < a.self_ns ? -1 : 0)).slice(0, 5);
		assert.deepEqual(sc.bottlenecks.map((b) => ms(BigInt(Math.round(b.self_ms * 1e6)))), top.map((r) => ms(r.self_ns)), `${what}: bottleneck self times`);
		for (const b of sc.bottlenecks) {
			const r = tr.byId.get(b.span_id);
			close(b.self_ms, ms(r.self_ns), `${what}: bottleneck ${b.name} self_ms`);
			close(b.share_pct, (100 * ms(r.self_ns)) / tr.durationMs, `${what}: bottleneck ${b.name} share_pct`);
		}
		// the error chain: root to the deepest error span
		const errs = tr.rows.filter((r) => r.status_code === 2).sort((a, b) => b.depth - a.depth);
		const chain = [];
		if (errs.length) for (let p = errs[0]; p; p = p.parent_span_id ? tr.byId.get(p.parent_span_id) : null) chain.unshift(p.span_id);
		assert.deepEqual(sc.error_chain.map((e) => e.span_id), chain, `${what}: error_chain`);
		assert.match(text, /^### Bottlenecks/m);
		if (chain.length) assert.match(text, /^### Error chain/m);
		return { sc, text, tr };
	}

	test('a trace with errors: tree, self times, bottlenecks and the error chain equal SQL; errors marked in the text', async () => {
		const { sc, text } = await traceMatchesSql(T_ERR);
		assert.equal(sc.lines.length, 7);
		assert.equal(sc.folded_spans ?? 0, 0);
		assert.deepEqual(sc.error_chain.map((e) => e.span_id), [ERR.root, ERR.handler, ERR.charge, ERR.card]);
		assert.equal(sc.bottlenecks[0].span_id, ERR.compute);
		for (const m of ['checkout failed', 'payment declined', 'card declined']) assert.match(text, new RegExp(`ERROR[^\\n]*${m}`));
		assert.equal(sc.sources.ebpf, 'ok');
	});

	test('async work after the request (a Kafka consumer) is drawn, marked async, and kept off the bottlenecks; the request\'s bottleneck is fraud\'s Score', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_ASYNC });
		const line = (id) => sc.lines.find((l) => l.span_id === id);
		for (const id of [ASYNC.con, ASYNC.post]) assert.deepEqual([line(id).async, line(id).critical, line(id).slow], [true, false, false], line(id).name);
		for (const id of [ASYNC.gw, ASYNC.co, ASYNC.score, ASYNC.pub]) assert.deepEqual([line(id).async, line(id).critical], [false, true], line(id).name);
		// self times on the critical path, shares of the request's 101 ms
		// (not of the trace's 363): Score 68, checkout 99 - 68 - 1 = 30
		assert.deepEqual(sc.bottlenecks.map((b) => b.span_id).slice(0, 2), [ASYNC.score, ASYNC.co]);
		assert.ok(sc.bottlenecks.every((b) => b.critical && b.service !== 'async-notify'), JSON.stringify(sc.bottlenecks));
		close(sc.bottlenecks[0].share_pct, (100 * 68) / 101, 'Score share_pct', { rel: 1e-3 });
		close(sc.bottlenecks[1].self_ms, 30, 'checkout self_ms', { rel: 1e-3 });
		assert.match(text, /^363(\.0+)?ms, 6 spans, started [^;]+; the request took 101(\.0+)?ms; /m);
		assert.match(text, /async-notify: orders process \(233(\.0+)?ms\) \(async\)$/m);
		assert.match(text, /async-fraud: Score \(68(\.0+)?ms\) ← SLOW \[server\]$/m);
		assert.doesNotMatch(text, /async-notify[^\n]*← SLOW/);
		assert.match(text, /^1\. \[OTLP\] async-fraud: Score \(68(\.0+)?ms\): self time 68(\.0+)?ms, [\d.]+% of the request$/m);
		assert.match(text, /^Background: \[OTLP\] async-notify: POST \(223(\.0+)?ms\), after the request ended \(async, via \[OTLP\] async-notify: orders process \(233(\.0+)?ms\)\)$/m);
	});

	test('a trace seen by both sources: each span once, duplicates counted', async () => {
		const t = await psql(st.pg.url, `SELECT encode(trace_id, 'hex') FROM spans WHERE service_name = 'shop-api'
			GROUP BY trace_id HAVING count(*) > 1 LIMIT 1`);
		const { sc } = await traceMatchesSql(t);
		assert.equal(sc.duplicates, 1);
		assert.equal(sc.span_count, 2);
	});

	test('10,000 spans: repeated siblings folded and counted, the error and the slow chunk on their own lines, within the budget', async () => {
		const { sc, text } = await traceMatchesSql(T_BIG);
		assert.equal(sc.span_count, BIG_N);
		assert.ok(sc.folded_spans >= 9000, `folded_spans ${sc.folded_spans}`);
		assert.ok(sc.lines.length <= 100, `${sc.lines.length} lines`);
		const f = /([\d,]+) spans? (were )?folded|Folded: ([\d,]+) spans/i.exec(text);
		assert.ok(f, `the text does not say how many spans were folded:\n${text.slice(0, 1500)}`);
		assert.equal(Number((f[1] ?? f[3]).replace(/,/g, '')), sc.folded_spans);
		for (const id of [BIG.root, BIG.slow, BIG.badChunk, BIG.bad]) assert.ok(sc.lines.some((l) => l.span_id === id && l.repeat === 1), `span ${id} has no line of its own`);
		assert.deepEqual(sc.error_chain.map((e) => e.span_id), [BIG.root, BIG.badChunk, BIG.bad]);
		assert.match(text, /× \d+/);
		assert.match(text, /constraint violated/);
	});

	test('not found: an answer, not an error', async () => {
		const id = newId(16);
		const { sc, text } = await call('get_trace', { trace_id: id });
		assert.equal(sc.found, false);
		assert.equal(sc.span_count, 0);
		assert.match(text, new RegExp(`no trace ${id}`));
	});

	test('a bad trace id names the field', async () => {
		assert.match(await callRefused(st.mcp, 'get_trace', { trace_id: 'xyz' }), /trace_id/);
		assert.match(await callRefused(st.mcp, 'get_trace', {}), /trace_id/);
	});
});

describe('get_trace with a span_id: one span whole', () => {
	test('the span as stored: every attribute and resource key, its event at its offset, redacted', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_FAIL, span_id: FAIL.pay });
		const row = await psqlJson(st.pg.url, `SELECT json_build_object('attrs', attributes, 'res', resource_attributes) FROM spans WHERE trace_id = ${hexLit(T_FAIL)} AND span_id = ${hexLit(FAIL.pay)}`);
		assert.equal(sc.found, true);
		assert.deepEqual({ ...sc.span, duration_ms: undefined, start: undefined, resource_total: undefined }, {
			sources: ['otlp'], span_id: FAIL.pay, parent_span_id: FAIL.charge, service: 'fail-payments', name: 'POST /charge', kind: 'server',
			duration_ms: undefined, start: undefined, status: 'error', status_message: 'card declined', scope: sc.span.scope,
			attributes_total: Object.keys(row.attrs).length, resource_total: undefined, events_total: 1, links_total: 0,
		});
		assert.equal(sc.span.duration_ms, 50);
		assert.deepEqual(sc.attributes.map((a) => a.key), Object.keys(row.attrs).sort());
		assert.deepEqual(sc.resource.map((a) => a.key), Object.keys(row.res).sort());
		assert.equal(sc.span.resource_total, Object.keys(row.res).length);
		const a = Object.fromEntries(sc.attributes.map((x) => [x.key, x.value]));
		assert.equal(a['card.token'], '[REDACTED]');
		assert.equal(a['customer.contact'], '[REDACTED]');
		assert.equal(a['payment.amount'], 129.5);
		assert.equal(a['http.route'], '/charge');
		assert.deepEqual(sc.events, [{
			offset_ms: 30, name: 'exception', attributes_total: 3,
			attributes: { 'exception.message': 'insufficient funds for [REDACTED]', 'exception.stacktrace': 'at charge (pay.js:12)', 'exception.type': 'CardDeclinedError' },
		}]);
		assert.match(text, new RegExp(`^## Span ${FAIL.pay} of trace ${T_FAIL}\\nfail-payments: POST /charge · server · \\[OTLP\\] · started \\S+ · 50(\\.0+)?ms · ERROR: card declined\\nParent: ${FAIL.charge}`));
		assert.match(text, new RegExp(`### Attributes \\(${Object.keys(row.attrs).length}\\)`));
		assert.match(text, /- card\.token: \[REDACTED\]/);
		assert.match(text, /- payment\.amount: 129\.5\n/);
		assert.match(text, /### Events \(1\)\n- \+30(\.0+)?ms exception: exception\.message=insufficient funds for \[REDACTED\], exception\.stacktrace=at charge \(pay\.js:12\), exception\.type=CardDeclinedError/);
		assert.doesNotMatch(JSON.stringify(sc) + text, /tok_live_4242|ann@example\.com/);
	});

	test('a link into its own trace; the trace by its first digits', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_LINK.slice(0, 12), span_id: LINK.job });
		assert.equal(sc.trace_id, T_LINK);
		assert.equal(sc.span.links_total, 1);
		assert.deepEqual(sc.links, [{ trace_id: T_LINK, span_id: LINK.req, attributes: {} }]);
		assert.match(text, new RegExp(`### Links \\(1\\)\\n- trace ${T_LINK} \\(this one\\) span ${LINK.req}`));
	});

	test('a span larger than one answer: within max_answer_bytes, the text a whole beginning and a count, the lists cut with exact counts', async () => {
		const tid = newId(16);
		const sid = newId(8);
		await psql(st.pg.url, `INSERT INTO spans (trace_id, span_id, source, start_time, duration_ns, kind, name, service_name, attributes, events)
			SELECT ${hexLit(tid)}, ${hexLit(sid)}, 'otlp', now() - interval '1 hour', 5000000, 2, 'GET /huge', 'huge-svc',
			(SELECT jsonb_object_agg('key.' || lpad(i::text, 3, '0'), repeat('v', 2000)) FROM generate_series(1, 200) i),
			(SELECT jsonb_agg(jsonb_build_object('name', 'ev' || i, 'time_unix_nano', (sextant_unix_nano(now() - interval '1 hour', 0::smallint) + i * 1000)::text,
				'attributes', jsonb_build_object('a', repeat('x', 3000)))) FROM generate_series(1, 100) i)`);
		const r = await callTool(st.mcp, 'get_trace', { trace_id: tid, span_id: sid });
		assert.ok(Buffer.byteLength(JSON.stringify(r.r)) <= 32768, 'within the default max_answer_bytes');
		assert.equal(r.sc.span.attributes_total, 200);
		assert.equal(r.sc.span.events_total, 100);
		assert.match(r.text, /### Attributes \(200, the first 128 by name\)\n- key\.001: v{300}…\n/);
		const cut = Number(r.text.match(/\((\d+) more lines not shown: the answer is full\)/)?.[1]);
		const shown = (r.text.match(/^- key\.\d{3}: /gm) ?? []).length;
		// the text stops inside the attributes: the rest of them, the
		// resource's and the events' heads and 64 events are counted
		assert.ok(shown > 10 && shown < 128, `${shown} attribute lines`);
		assert.equal(shown + cut, 128 + 1 + 1 + 64, r.text.slice(-300));
		assert.equal(r.sc.attributes.length + (r.sc.truncated?.attributes ?? 0), 128);
		assert.equal(r.sc.events.length + (r.sc.truncated?.events ?? 0), 64);
		assert.match(r.text, new RegExp(`\\(structured content: ${r.sc.attributes.length} attributes shown, ${128 - r.sc.attributes.length} more`));
	});

	test('an unknown span is an answer; a bad span_id names the field', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_FAIL, span_id: '0123456789abcdef' });
		assert.equal(sc.found, false);
		assert.match(text, new RegExp(`no span 0123456789abcdef in trace ${T_FAIL}`));
		assert.match(await callRefused(st.mcp, 'get_trace', { trace_id: T_FAIL, span_id: 'xyz' }), /span_id/);
	});
});

describe('the details that explain a failure', () => {
	const D = '(\\.0+)?ms';
	const PAY = `fail-payments: POST /charge \\(50${D}\\) ERROR 402: card declined \\[server, HTTP 402, exception CardDeclinedError: insufficient funds for \\[REDACTED\\]\\]`;
	const MAIL = `fail-checkout: POST \\(300${D}\\) ERROR 503: Service Unavailable ← SLOW \\[client → api\\.sendgrid\\.com, HTTP 503\\]`;
	const GRPC = `fail-checkout: inventory\\.Stock/Reserve \\(20${D}\\) ERROR UNAVAILABLE: connection refused \\[client → inventory, gRPC UNAVAILABLE\\]`;
	const CHARGE = `fail-checkout: POST /charge \\(60${D}\\) ERROR 402: payment required \\[client → payments\\.internal:8080, HTTP 402\\]`;
	const WANT = {
		[FAIL.pay]: { kind: 'server', http_status_code: 402, exception: { type: 'CardDeclinedError', message: 'insufficient funds for [REDACTED]' } },
		[FAIL.mail]: { kind: 'client', http_status_code: 503, peer: 'api.sendgrid.com' },
		[FAIL.grpc]: { kind: 'client', grpc_status_code: 14, grpc_status: 'UNAVAILABLE', peer: 'inventory' },
		[FAIL.charge]: { kind: 'client', http_status_code: 402, peer: 'payments.internal:8080' },
		[FAIL.root]: { kind: 'server', http_status_code: 502 },
	};

	test('get_trace: error and slow spans show kind, code, peer and exception; the chain ends with the status code; Key attributes close the answer, redacted', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_FAIL });
		for (const re of [PAY, MAIL, GRPC, CHARGE]) assert.match(text, new RegExp(`[├└]─ \\[OTLP\\] ${re}$`, 'm'));
		assert.match(text, new RegExp(`\\[OTLP\\] fail-checkout: POST /checkout \\(400${D}\\) ERROR 502: checkout failed \\[server, HTTP 502\\]$`, 'm'));
		// the chain: root to payments' 402, the cause told on its last line
		assert.deepEqual(sc.error_chain.map((e) => e.span_id), [FAIL.root, FAIL.charge, FAIL.pay]);
		const chain = text.slice(text.indexOf('### Error chain'), text.indexOf('### Key attributes'));
		assert.match(chain, new RegExp(`^1\\. \\[OTLP\\] fail-checkout: POST /checkout \\(400${D}\\) ERROR 502: checkout failed$`, 'm'));
		assert.match(chain, new RegExp(`^3\\. \\[OTLP\\] ${PAY}$`, 'm'));
		assert.deepEqual(sc.error_chain.at(-1).details, WANT[FAIL.pay]);
		for (const [id, want] of Object.entries(WANT)) assert.deepEqual(sc.lines.find((l) => l.span_id === id).details, want, `details of ${id}`);
		// the answer ends with the attributes of the bottleneck (the
		// e-mail call) and of the deepest error (payments' 402)
		const at = text.indexOf('\n### Key attributes\n');
		assert.ok(at > text.indexOf('### Error chain'), text);
		const keys = text.slice(at).trim().split('\n');
		assert.equal(keys.length, 3, keys.join('\n'));
		assert.match(keys[1], new RegExp(`^Bottleneck, \\[OTLP\\] fail-checkout: POST \\(300${D}\\): .*server\\.address=api\\.sendgrid\\.com`));
		assert.match(keys[1], /http\.response\.status_code=503/);
		assert.match(keys[2], new RegExp(`^Deepest error, \\[OTLP\\] fail-payments: POST /charge \\(50${D}\\): `));
		for (const kv of ['card.token=[REDACTED]', 'customer.contact=[REDACTED]', 'payment.amount=129.5', 'http.response.status_code=402']) assert.ok(keys[2].includes(kv), `${kv} in ${keys[2]}`);
		assert.doesNotMatch(text, /tok_live|ann@example/);
		assert.deepEqual(sc.key_attributes.map((k) => [k.role, k.span_id]), [['bottleneck', FAIL.mail], ['deepest error', FAIL.pay]]);
		const pay = sc.key_attributes[1].attributes;
		assert.deepEqual([pay['card.token'], pay['customer.contact'], pay['payment.amount'], pay['http.response.status_code']], ['[REDACTED]', '[REDACTED]', 129.5, 402]);
		assert.equal(sc.key_attributes[0].attributes['server.address'], 'api.sendgrid.com');
	});

	test('get_trace: details only on error and slow spans; a slow span that is neither error nor remote shows its kind', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_ASYNC });
		const line = (id) => sc.lines.find((l) => l.span_id === id);
		assert.deepEqual(line(ASYNC.score).details, { kind: 'server' });
		for (const id of [ASYNC.gw, ASYNC.pub, ASYNC.con, ASYNC.post]) assert.equal(line(id).details, undefined, line(id).name);
		assert.match(text, /async-fraud: Score \(68(\.0+)?ms\) ← SLOW \[server\]$/m);
		assert.equal((text.match(/ \[(server|client|internal|producer|consumer)[\],]/g) ?? []).length, sc.lines.filter((l) => l.details).length);
		const keys = text.slice(text.indexOf('### Key attributes'));
		assert.match(keys, /^Bottleneck, \[OTLP\] async-fraud: Score \(68(\.0+)?ms\): \(none\)$/m);
	});

	test('query_traces: the same details on the error and slow spans, in text and structure', async () => {
		const { sc, text } = await call('query_traces', { trace_id: T_FAIL });
		for (const re of [PAY, MAIL, GRPC, CHARGE]) assert.match(text, new RegExp(`[├└]─ \\[OTLP\\] ${re}$`, 'm'));
		const flat = [];
		const walkTree = (ns) => ns.forEach((n) => { flat.push(n); walkTree(n.children ?? []); });
		walkTree(sc.traces[0].spans);
		for (const [id, want] of Object.entries(WANT)) assert.deepEqual(flat.find((n) => n.span_id === id).details, want, `details of ${id}`);
		assert.doesNotMatch(text, /ann@example/);
		const a = await call('query_traces', { trace_id: T_ASYNC });
		const fa = [];
		const walkA = (ns) => ns.forEach((n) => { fa.push(n); walkA(n.children ?? []); });
		walkA(a.sc.traces[0].spans);
		assert.deepEqual(fa.filter((n) => n.details).map((n) => n.span_id).sort(), fa.filter((n) => n.slow).map((n) => n.span_id).sort());
	});

	test('query_spans: the trace column holds the trace id\'s first 8 digits, the whole one in structured content', async () => {
		const { sc, text } = await call('query_spans', { service_name: 'fail-payments', time_range: '1h' });
		assert.equal(sc.spans.length, 1);
		assert.equal(sc.spans[0].trace_id, T_FAIL);
		const t = mdTable(text, /\|\s*Time\s*\|\s*Trace\s*\|/);
		assert.equal(t.rows[0][1], T_FAIL.slice(0, 8));
		assert.ok(!text.includes(T_FAIL), 'the full id stays out of the text');
		// the 8 digits the table shows are enough for get_trace
		const whole = await call('get_trace', { trace_id: T_FAIL });
		const short = await call('get_trace', { trace_id: t.rows[0][1].toUpperCase() });
		assert.equal(short.sc.trace_id, T_FAIL);
		assert.equal(short.text, whole.text);
		// none begins so: an error that says what to give
		const none = await call('get_trace', { trace_id: T_FAIL.slice(0, 8) === '00000000' ? '00000001' : '00000000' }, { expectError: true });
		assert.match(none.text, /no trace id begins with "0000000[01]": give the 32 hex digits/);
		assert.match(await callRefused(st.mcp, 'get_trace', { trace_id: T_FAIL.slice(0, 7) }), /trace_id/);
	});

	test('a span started through a link (no parent) is drawn under the linked span, async, off the critical path', async () => {
		const { sc, text } = await call('get_trace', { trace_id: T_LINK });
		const job = sc.lines.find((l) => l.span_id === LINK.job);
		assert.deepEqual([job.depth, job.async, job.critical, job.slow], [1, true, false, false]);
		assert.match(text, /└─ \[OTLP\] link-worker: settle order \(150(\.0+)?ms\) \(async\)$/m);
		assert.match(text, /^Background: \[OTLP\] link-worker: settle order \(150(\.0+)?ms\), after the request ended \(async\)$/m);
		assert.deepEqual(sc.bottlenecks.map((b) => b.span_id), [LINK.req]);
		const q = await call('query_traces', { trace_id: T_LINK });
		const root = q.sc.traces[0].spans;
		assert.equal(root.length, 1, 'one root: the request');
		assert.deepEqual(root[0].children.map((c) => [c.span_id, c.async, c.critical ?? false]), [[LINK.job, true, false]]);
	});
});

describe('list_services', () => {
	// Every service with a span in [from, to) as list_services defines it:
	// requests are HTTP and gRPC SERVER spans (issue 4's definitions) of
	// the source that saw the most of them (eBPF on a tie: a request both
	// sources saw counts once), errors and client errors by SQL_FAILED and
	// SQL_CLIENT_ERROR,
	// p95 by percentile_cont, from that source; namespace of the newest
	// span that has one.
	async function sqlServices({ from, to, namespace }) {
		const rows = await psqlJson(st.pg.url, `
			WITH s AS (SELECT * FROM spans WHERE start_time >= ${lit(from)}::timestamptz AND start_time < ${lit(to)}::timestamptz),
			r AS (SELECT *, ${SQL_FAILED} AS is_error, ${SQL_CLIENT_ERROR} AS is_client_error
				FROM s WHERE kind = 2 AND (rpc_system = 'grpc' OR http_method IS NOT NULL)),
			ns AS (SELECT DISTINCT ON (service_name) service_name, coalesce(service_namespace, k8s_namespace_name) AS namespace
				FROM s WHERE coalesce(service_namespace, k8s_namespace_name) IS NOT NULL
				ORDER BY service_name, start_time DESC, start_nanos DESC)
			SELECT coalesce(json_agg(x ORDER BY x.requests DESC, x.service), '[]') FROM (
				SELECT a.service_name AS service, ns.namespace, a.sources, a.last_seen_us,
					coalesce(q.requests, 0) AS requests, coalesce(q.errors, 0) AS errors,
					coalesce(q.client_errors, 0) AS client_errors, q.p95_ms
				FROM (SELECT service_name, array_agg(DISTINCT source ORDER BY source) AS sources,
						(extract(epoch FROM max(start_time)) * 1e6)::bigint AS last_seen_us FROM s GROUP BY 1) a
				LEFT JOIN ns USING (service_name)
				LEFT JOIN (SELECT DISTINCT ON (service_name) * FROM (
						SELECT service_name, source, count(*) AS requests, count(*) FILTER (WHERE is_error) AS errors,
							count(*) FILTER (WHERE is_client_error) AS client_errors,
							percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) / 1e6::float8 AS p95_ms
						FROM r GROUP BY 1, 2) per_source
					ORDER BY service_name, requests DESC, source) q USING (service_name)) x`);
		return namespace === undefined ? rows : rows.filter((r) => r.namespace === namespace);
	}

	// list_services(args) against SQL over the answer's range; rollup:
	// p95 may come from hourly rollups (0.5%).  Returns {sc, text, want}.
	async function servicesMatchSql(args, { rollup = false } = {}) {
		const { sc, text } = await call('list_services', args);
		const what = `list_services(${JSON.stringify(args)})`;
		const want = await sqlServices({ ...sc.time_range, namespace: args.namespace });
		const secs = (Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from)) / 1000;
		assert.equal(sc.total, want.length, `${what}: total`);
		assert.equal(sc.not_shown, want.length - sc.services.length, `${what}: not_shown`);
		// busiest first, then by name: the first rows of SQL's order
		assert.deepEqual(sc.services.map((v) => v.service), want.slice(0, sc.services.length).map((w) => w.service), `${what}: the services, busiest first`);
		for (const [i, v] of sc.services.entries()) {
			const w = want[i];
			const at = `${what} ${w.service}`;
			assert.equal(v.namespace, w.namespace, `${at}: namespace`);
			assert.deepEqual([...v.sources].sort(), w.sources, `${at}: sources`);
			assert.equal(v.requests, Number(w.requests), `${at}: requests`);
			close(v.request_rate_per_s, Number(w.requests) / secs, `${at}: request_rate_per_s`);
			if (Number(w.requests) === 0) {
				assert.equal(v.error_rate_pct, null, `${at}: error_rate_pct without requests`);
				assert.equal(v.p95_ms, null, `${at}: p95_ms without requests`);
			} else {
				close(v.error_rate_pct, (100 * w.errors) / w.requests, `${at}: error_rate_pct`);
				assert.equal(v.errors, Number(w.errors), `${at}: errors`);
				assert.equal(v.client_errors, Number(w.client_errors), `${at}: client_errors`);
				close(v.p95_ms, w.p95_ms, `${at}: p95_ms`, { rel: rollup ? 0.005 : 1e-6 });
			}
			assert.equal(Date.parse(v.last_seen), Math.floor(Number(w.last_seen_us) / 1000), `${at}: last_seen ${v.last_seen}`);
		}
		// the text: one table row per service listed
		const t = mdTable(text, /\|\s*Service\s*\|\s*Namespace\s*\|\s*Sources\s*\|\s*Req\/s\s*\|\s*Errors\s*\|\s*Client errors\s*\|\s*P95\s*\|\s*Health\s*\|\s*Last seen\s*\|/);
		assert.ok(t || sc.services.length === 0, `${what}: no table Service | Namespace | Sources | Req/s | Errors | Client errors | P95 | Health | Last seen in:\n${text.slice(0, 800)}`);
		assert.equal(t?.rows.length ?? 0, sc.services.length, `${what}: table rows`);
		for (const [i, v] of sc.services.entries()) {
			const row = t.rows[i];
			assert.equal(row[0], v.service);
			for (const src of v.sources) assert.match(row[2], src === 'ebpf' ? /eBPF/ : /OTLP/, `${v.service}: Sources ${row[2]}`);
			// a rate below 0.000001 prints as "<0.000001"
			const lt = /^<\s*([\d.]+)$/.exec(row[3]);
			if (lt) assert.ok(v.request_rate_per_s > 0 && v.request_rate_per_s < Number(lt[1]), `${v.service}: Req/s ${row[3]}, value ${v.request_rate_per_s}`);
			else if (v.requests > 0) rendered(row[3], v.request_rate_per_s, `${v.service}: Req/s`);
			if (v.error_rate_pct !== null) {
				rendered(row[4].split(' ')[0], v.error_rate_pct, `${v.service}: Errors`);
				rendered(row[5].split(' ')[0], v.client_error_rate_pct, `${v.service}: Client errors`);
			}
			// Kiali's request health at its default tolerances, by hand
			const ep = v.requests ? (100 * v.errors) / v.requests : 0, cp = v.requests ? (100 * v.client_errors) / v.requests : 0;
			const health = !v.requests ? 'NA'
				: ep >= 10 || cp >= 20 ? 'UNHEALTHY'
					: ep > 0 || cp >= 10 ? 'DEGRADED' : 'HEALTHY';
			assert.equal(v.health, health, `${v.service}: health (${v.errors} errors, ${v.client_errors} client errors in ${v.requests})`);
			assert.equal(row[7], health === 'NA' ? '–' : health, `${v.service}: Health cell`);
		}
		if (sc.not_shown > 0) assert.match(text, new RegExp(`${sc.not_shown.toLocaleString('en-US')} more|${sc.not_shown} more`), `${what}: no "N more"`);
		return { sc, text, want };
	}

	let hour; // the answer of list_services 1h, limit 1000

	test('last hour: every service with its sources, namespace, request rate, error rate, p95 and last seen equal SQL; more than fit', async () => {
		hour = await servicesMatchSql({ time_range: '1h', limit: 1000 });
		const { sc } = hour;
		assert.ok(sc.services.length < sc.total, `${sc.services.length} of ${sc.total} services in one answer`);
		assert.ok(!sc.services.some((v) => v.service === 'old-svc'), 'old-svc was last seen 3 hours ago');
		const grpc = sc.services.find((v) => v.service === 'shop-grpc');
		assert.equal(grpc.namespace, 'shop', 'the namespace of the newest span');
	});

	test('the default 24h (hourly rollups allowed: p95 within 0.5%) reaches old-svc', async () => {
		const { sc } = await servicesMatchSql({ limit: 1000 }, { rollup: true });
		assert.equal(Date.parse(sc.time_range.to) - Date.parse(sc.time_range.from), 24 * HOUR_MS);
		assert.ok(sc.services.some((v) => v.service === 'old-svc'));
	});

	test('namespace filter: service.namespace, else k8s.namespace.name', async () => {
		const { sc } = await servicesMatchSql({ time_range: '1h', namespace: 'shop' });
		assert.deepEqual(sc.services.map((v) => v.service).sort(), ['shop-api', 'shop-db', 'shop-grpc']);
		const db = sc.services.find((v) => v.service === 'shop-db');
		assert.equal(db.requests, 0, 'shop-db has client spans only');
		const { sc: fleet } = await servicesMatchSql({ time_range: '1h', namespace: 'fleet', limit: 3 });
		assert.equal(fleet.total, FLEET);
		assert.equal(fleet.services.length, 3, 'limit 3');
		const { sc: none, text } = await servicesMatchSql({ time_range: '1h', namespace: 'no-such-namespace' });
		assert.equal(none.total, 0);
		assert.match(text, /no-such-namespace/);
	});

	test('namespace not found as given: matched ignoring case, else the close names suggested', async () => {
		const exact = await call('list_services', { time_range: '1h', namespace: 'shop' });
		const { sc, text } = await call('list_services', { time_range: '1h', namespace: 'Shop' });
		assert.deepEqual(sc.services, exact.sc.services, '"Shop" lists what "shop" lists');
		assert.equal(sc.total, exact.sc.total);
		assert.match(text, /namespace "shop" matched it ignoring case/, text);
		const near = await call('list_services', { time_range: '1h', namespace: 'shopp' });
		assert.equal(near.sc.total, 0);
		assert.match(near.text, /No services with spans in [^\n]* in namespace "shopp"; did you mean namespace "shop"\? Or widen/, near.text);
	});


	test('a request seen by both eBPF and OTLP counts once', async () => {
		const { sc } = hour ?? (await call('list_services', { time_range: '1h' }));
		const v = sc.services.find((x) => x.service === 'shop-api');
		const where = `service_name = 'shop-api' AND kind = 2 AND start_time >= ${lit(sc.time_range.from)}::timestamptz AND start_time < ${lit(sc.time_range.to)}::timestamptz`;
		const rows = Number(await psql(st.pg.url, `SELECT count(*) FROM spans WHERE ${where}`));
		const most = Number(await psql(st.pg.url, `SELECT max(n) FROM (SELECT count(*) AS n FROM spans WHERE ${where} GROUP BY source) x`));
		assert.equal(rows, 90, '30 of the requests were seen by both sources');
		assert.ok(most < rows, 'neither source saw every span row');
		assert.equal(v.requests, most, `shop-api: ${rows} span rows (30 requests seen by both sources); the busier source saw ${most}; list_services says ${v.requests}`);
	});

	test('bad arguments name the field', async () => {
		assert.match(await callRefused(st.mcp, 'list_services', { time_range: 'fortnight-ish' }), /time_range/);
		assert.match(await callRefused(st.mcp, 'list_services', { limit: 0 }), /limit/);
	});
});

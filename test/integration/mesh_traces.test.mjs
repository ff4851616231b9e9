// mesh_traces.test.mjs - get_traces (issue 20), Kiali's trace summary, on
// the demo dataset through the official MCP SDK client: a failed checkout
// trace's bottlenecks and error chain against the same spans read with
// SQL (a span both sources saw taken once, as OTLP's; failed by
// OpenTelemetry's rule written out here, SQL_FAILED), self times and the
// request's share worked out here from those rows; the trace by id and by
// its first digits; a service's recent traces (newest first, limit and
// more_traces) and its failed ones only (error_only) against SQL; unknown
// names and ids refused with what to do.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { psql } from './lib/pg.mjs';
import { runSextant } from './lib/server.mjs';
import { SQL_FAILED, callTool, close, hexLit, lit, startStack } from './lib/tooltest.mjs';

// gRPC status codes by number, as the answers name them
const GRPC_NAMES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

// enough for a day with failed checkouts, loaded in a few seconds
const DEMO_SPANS = '20000';
const DAY_S = 86400;

let st;
const tool = (args, opts) => callTool(st.mcp, 'get_traces', args, opts);
const sqlJson = async (sql) => JSON.parse((await psql(st.pg.url, `SELECT coalesce(json_agg(x), '[]') FROM (${sql}) x`)) || '[]');

// The spans of a trace, each once (OTLP's row when both sources saw it),
// with the failure rule applied to the row kept.
async function traceRows(tid) {
	const rows = await sqlJson(`SELECT DISTINCT ON (span_id) encode(span_id, 'hex') AS id,
		encode(parent_span_id, 'hex') AS parent, kind, service_name AS svc, name, source,
		sextant_unix_nano(start_time, start_nanos)::text AS start, duration_ns::text AS dur,
		${SQL_FAILED} AS failed, http_status_code AS http, rpc_grpc_status_code AS grpc, status_message AS msg,
		EXISTS (SELECT 1 FROM spans o WHERE o.trace_id = s.trace_id AND o.span_id = s.span_id AND o.source <> s.source) AS both
		FROM spans s WHERE trace_id = ${hexLit(tid)} ORDER BY span_id, source <> 'otlp'`);
	const byId = new Map();
	for (const r of rows) {
		r.start = BigInt(r.start);
		r.end = r.start + BigInt(r.dur);
		r.kids = [];
		byId.set(r.id, r);
	}
	for (const r of rows) byId.get(r.parent)?.kids.push(r);
	for (const r of rows) r.kids.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
	return { rows, byId };
}

// Self time (ns) of each span: its duration less the time its synchronous
// children cover inside it (a consumer, a child of a producer and a child
// that starts once its parent ended were not waited for).
function selfTimes({ rows }) {
	const isAsync = (p, c) => c.kind === 5 || p.kind === 4 || (p.end > p.start && c.start >= p.end);
	for (const r of rows) {
		let pos = r.start, covered = 0n;
		for (const c of r.kids) {
			if (isAsync(r, c)) continue;
			const cs = c.start > pos ? c.start : pos, ce = c.end < r.end ? c.end : r.end;
			if (ce > cs) {
				covered += ce - cs;
				pos = ce;
			}
		}
		r.self = r.end - r.start - covered;
		r.syncKids = r.kids.filter((c) => !isAsync(r, c));
	}
}

const ms = (ns) => Number(ns) / 1e6;

before(async () => {
	st = await startStack({ name: 'mesh-traces', env: { SEXTANT_TOOLS_ENABLED_SETS: 'mesh,spans,query' } });
	const demo = runSextant(['demo-data', '--spans', DEMO_SPANS], { env: { DATABASE_URL: st.pg.url }, timeoutMs: 60000 });
	assert.equal(demo.code, 0, `sextant demo-data failed:\n${demo.stderr}`);
});
beforeEach(() => st?.srv.assertAlive());
after(async () => {
	if (st) await st.stop();
});

describe('get_traces', () => {
	let failed; // the service answer for checkout's failed traces of the day

	test("checkout's failed traces: the longest one's bottlenecks and error chain agree with SQL over its spans", async () => {
		const { text, sc } = await tool({ service_name: 'checkout', error_only: true, lookback_seconds: DAY_S });
		failed = sc;
		// the traces: those where a checkout span failed, by SQL
		const want = await sqlJson(`SELECT DISTINCT encode(trace_id, 'hex') AS id FROM spans
			WHERE service_name = 'checkout' AND start_time > now() - interval '1 day' AND ${SQL_FAILED}`);
		assert.ok(want.length > 0, 'the demo day has failed checkouts');
		assert.deepEqual(sc.traces.map((t) => t.trace_id).sort(), want.map((w) => w.id).sort());
		assert.equal(sc.total_found, want.length);
		assert.ok(sc.traces.every((t) => t.has_errors));

		// Kiali's pick: the longest failed trace, in full; each trace's
		// own lists are its first 3 spans of each
		const best = sc.traces.reduce((a, b) => (b.summary.total_duration_ms > a.summary.total_duration_ms ? b : a));
		assert.equal(sc.trace_id, best.trace_id);
		const s = sc.summary;
		for (const key of ['bottlenecks', 'error_spans', 'error_chain']) {
			const want = key === 'error_chain' && s[key].length > 3 ? [s[key][0], ...s[key].slice(-2)] : s[key].slice(0, 3);
			assert.deepEqual(best.summary[key], want, key);
		}
		assert.equal(best.summary.root_spans, undefined);
		assert.equal(s.root_spans.length, 1);
		const tr = await traceRows(sc.trace_id);
		selfTimes(tr);
		assert.equal(s.total_spans, tr.rows.length);
		const dups = tr.rows.filter((r) => r.both).length;
		assert.equal(s.duplicates, dups);

		// the request: the root server span; its synchronous tree
		const root = tr.rows.filter((r) => !tr.byId.has(r.parent)).sort((a, b) => (a.start < b.start ? -1 : 1))[0];
		assert.equal(root.kind, 2);
		close(s.request_ms, ms(root.end - root.start), 'request_ms');
		const sync = [];
		for (const stack = [root]; stack.length > 0;) {
			const r = stack.pop();
			sync.push(r);
			stack.push(...r.syncKids);
		}
		// bottlenecks: exact self times, most first, the first the largest
		// of the request's synchronous spans, each a share of the request
		assert.ok(s.bottlenecks.length > 0 && s.bottlenecks.length <= 7);
		for (const [i, b] of s.bottlenecks.entries()) {
			const r = tr.byId.get(b.span_id);
			assert.ok(r, `bottleneck ${b.span_id} not in the trace`);
			close(b.self_ms, ms(r.self), `self time of ${r.svc} ${r.name}`);
			close(b.duration_ms, ms(r.end - r.start), `duration of ${r.svc} ${r.name}`);
			close(b.share_pct, (100 * Number(r.self)) / Number(root.end - root.start), `share of ${r.svc} ${r.name}`, { abs: 0.005 });
			assert.equal(b.service, r.svc);
			assert.equal(b.operation, r.name);
			assert.equal(b.source, r.source);
			assert.equal(b.also_seen_by === 'ebpf', r.both, `${r.svc} ${r.name} seen by both`);
			assert.ok(sync.includes(r), `${r.svc} ${r.name} is not work the request waited on`);
			if (i > 0) assert.ok(b.self_ms <= s.bottlenecks[i - 1].self_ms);
		}
		const top = sync.reduce((a, b) => (b.self > a.self ? b : a));
		assert.equal(s.bottlenecks[0].span_id, top.id, `the largest self time is ${top.svc} ${top.name}`);

		// error spans: every failed span, longest first
		const errs = tr.rows.filter((r) => r.failed).sort((a, b) => (b.end - b.start > a.end - a.start ? 1 : -1));
		assert.equal(s.error_count, errs.length);
		assert.deepEqual(s.error_spans.map((e) => e.span_id), errs.slice(0, 7).map((e) => e.id));
		assert.ok(s.error_spans.every((e) => e.tags.error === 'true'));
		// error chain: root to the longest failed span with no failed span
		// below it
		const below = (r) => r.kids.some((k) => k.failed || below(k));
		const origin = errs.find((r) => !below(r));
		const chain = [];
		for (let r = origin; r; r = tr.byId.get(r.parent)) chain.unshift(r);
		assert.deepEqual(s.error_chain.map((e) => e.span_id), chain.map((r) => r.id));
		assert.equal(s.error_chain[0].span_id, root.id);
		// the line: the request, its largest share, the chain by service
		const services = chain.map((r) => r.svc).filter((v, i, a) => i === 0 || a[i - 1] !== v);
		const line = text.split('\n').find((l) => l.includes(sc.trace_id));
		assert.ok(line, text);
		assert.ok(line.startsWith(`${sc.traces.findIndex((t) => t.trace_id === sc.trace_id) + 1}. ${sc.trace_id} ${root.svc} `), line);
		assert.ok(line.includes(` in ${top.svc} ${top.name} (`), line);
		// what failed says of itself: its HTTP status or gRPC code's name
		// (else ERROR), then its status message
		const code = origin.http ?? (origin.grpc > 0 ? GRPC_NAMES[origin.grpc] : 'ERROR');
		assert.ok(line.endsWith(`; error chain: ${services.join(' -> ')}: ${code}${origin.msg ? ` (${origin.msg})` : ''}`), line);
		assert.match(text, /^### Trace \d+, the longest failed:$/m);
		assert.match(text, /^1\. \[(eBPF|OTLP)\] .*: self [\d.,]+m?s, [\d.]+% of the request$/m);
	});

	test('one trace by id and by its first digits: the same summary, and its sources counted', async () => {
		assert.ok(failed, 'the first test ran');
		const tid = failed.trace_id;
		const whole = await tool({ trace_id: tid });
		const part = await tool({ trace_id: tid.slice(0, 12).toUpperCase() });
		for (const { sc } of [whole, part]) {
			assert.equal(sc.found, true);
			assert.equal(sc.trace_id, tid);
			assert.deepEqual(sc.summary, failed.summary);
		}
		const [n] = await sqlJson(`SELECT count(*) FILTER (WHERE source = 'otlp') AS otlp, count(*) FILTER (WHERE source = 'ebpf') AS ebpf
			FROM spans WHERE trace_id = ${hexLit(tid)}`);
		assert.match(whole.text, new RegExp(`^Sources: OTLP ${n.otlp} spans; eBPF ${n.ebpf} spans \\(${failed.summary.duplicates} seen by both, shown once as OTLP\\)$`, 'm'));
		assert.match(whole.text, new RegExp(`^## Trace ${tid}: .*, ${failed.summary.total_spans} spans, ${failed.summary.error_count} error spans?$`, 'm'));
		assert.match(whole.text, /^Error chain \(root to where it began\):$/m);
		// max_spans caps every list
		const one = await tool({ trace_id: tid, max_spans: 1 });
		assert.equal(one.sc.summary.bottlenecks.length, 1);
		assert.equal(one.sc.summary.error_spans.length, 1);
		assert.equal(one.sc.summary.error_chain.length, 1);
		assert.equal(one.sc.summary.error_chain[0].span_id, failed.summary.error_chain.at(-1).span_id);
	});

	test("a service's recent traces, newest first, limit and more_traces; error_only keeps the failed ones", async () => {
		const hour = await tool({ service_name: 'api-gateway', lookback_seconds: 3600, limit: 3 });
		const want = await sqlJson(`SELECT encode(trace_id, 'hex') AS id, bool_or(${SQL_FAILED}) AS failed
			FROM spans WHERE trace_id IN (SELECT trace_id FROM spans WHERE service_name = 'api-gateway'
			AND start_time > now() - interval '1 hour' GROUP BY trace_id ORDER BY max(start_time) DESC LIMIT 3)
			GROUP BY trace_id`);
		assert.equal(hour.sc.traces.length, 3);
		assert.equal(hour.sc.more_traces, true);
		assert.deepEqual(hour.sc.traces.map((t) => t.trace_id).sort(), want.map((w) => w.id).sort());
		for (const t of hour.sc.traces) assert.equal(t.has_errors, want.find((w) => w.id === t.trace_id).failed, t.trace_id);
		const starts = hour.sc.traces.map((t) => Date.parse(t.start));
		assert.deepEqual(starts, [...starts].sort((a, b) => b - a));
		assert.match(hour.text, /^## api-gateway: 3 traces \(last 1h\), \d+ with errors, avg [\d.,]+m?s; more match \(raise limit\)$/m);

		// error_only: the traces where an api-gateway span failed, most
		// recently failed first; the first 10 by default, all of them
		// with a limit above their number, cut to the answer's bytes
		// with the count said
		const failedIds = await sqlJson(`SELECT encode(trace_id, 'hex') AS id FROM spans
			WHERE service_name = 'api-gateway' AND start_time > now() - interval '1 day' AND ${SQL_FAILED}
			GROUP BY trace_id ORDER BY max(start_time) DESC`);
		assert.ok(failedIds.length > 10 && failedIds.length < 100, `${failedIds.length} failed traces`);
		const ten = await tool({ service_name: 'api-gateway', error_only: true, lookback_seconds: DAY_S });
		assert.equal(ten.sc.traces.length, 10);
		assert.equal(ten.sc.more_traces, true);
		assert.deepEqual(ten.sc.traces.map((t) => t.trace_id).sort(), failedIds.slice(0, 10).map((w) => w.id).sort());
		assert.ok(ten.sc.traces.every((t) => t.has_errors && t.summary.error_chain.length > 0));
		const all = await tool({ service_name: 'api-gateway', error_only: true, lookback_seconds: DAY_S, limit: 100 });
		assert.equal(all.sc.total_found, failedIds.length);
		const shown = all.sc.traces.length;
		assert.ok(shown >= 1 && shown <= failedIds.length, `${shown} shown`);
		assert.deepEqual(all.sc.traces.slice(0, 10).map((t) => t.trace_id), ten.sc.traces.slice(0, shown).map((t) => t.trace_id));
		if (shown < failedIds.length) {
			assert.equal(all.sc.more_traces, true);
			assert.match(all.text, new RegExp(`\\(structured content: ${shown} traces shown, ${failedIds.length - shown} more: ask for fewer traces`));
		}

		// a hundred traces: a line each while the text has room, the
		// worst one's lists always
		const many = await tool({ service_name: 'api-gateway', lookback_seconds: DAY_S, limit: 100 });
		const lines = many.text.split('\n').filter((l) => /^\d+\. [0-9a-f]{32} /.test(l)).length;
		const rest = Number(many.text.match(/^\((\d+) more in structured content\)$/m)?.[1] ?? 0);
		assert.equal(lines + rest, 100, many.text.slice(-600));
		assert.match(many.text, /^### Trace \d+, the longest failed:\nBottlenecks/m);
		// no trace in the range: found false, not an error
		const none = await tool({ service_name: 'checkout', lookback_seconds: 1 });
		assert.equal(none.sc.found, false);
		assert.equal(none.sc.total_found, 0);
		assert.match(none.text, /^## checkout: 0 traces \(last 1s\)$/m);
	});

	test('unknown names and ids, and missing arguments, are refused with what to do', async () => {
		const name = await tool({ service_name: 'chekout' }, { expectError: true });
		assert.match(name.text, /service "chekout" has no spans .*did you mean checkout\?/);
		const id = await tool({ trace_id: '0123456789abcdef0123456789abcdef' }, { expectError: true });
		assert.match(id.text, /^no trace 0123456789abcdef0123456789abcdef in the store: give an id from get_traces\(service_name\) or query_traces$/);
		const prefix = await tool({ trace_id: 'ffffffffff' }, { expectError: true });
		assert.match(prefix.text, /^no trace id begins with "ffffffffff": give the 32 hex digits/);
		const nothing = await tool({}, { expectError: true });
		assert.match(nothing.text, /^give trace_id for one trace, or service_name/);
		const bad = await tool({ trace_id: 'xyz' }, { expectError: true });
		assert.match(bad.text, /trace_id/);
		// a name as people write it resolves, and the answer says so
		const words = await tool({ service_name: 'the checkout service', error_only: true, lookback_seconds: DAY_S });
		assert.match(words.text, /^\(service: checkout \(from "the checkout service"\)\)$/m);
		assert.equal(words.sc.query.service_name, 'checkout');
		assert.deepEqual(words.sc.traces, failed.traces);
		assert.ok(lit);
	});
});

// client-cost.mjs - the measuring half of bench/client-cost.sh: what an
// HTTP client costs a call, without the gateway.  The two clients of
// bench/query.sh (http-clients.mjs: node:http and the plain one) POST a
// tools/call to nginx, which answers every POST with the same static body
// the size and shape of a query_traces answer; each call is timed from
// building the request to having the parsed answer, as query-run.mjs
// times a tool call.  Rounds alternate which client goes first, with a
// pause between calls (the psql call of bench/query.sh).
//
//   node bench/client-cost.mjs --body FILE               writes the body
//   node bench/client-cost.mjs --url URL [--rounds N] [--pause-ms P] [--warmup N]
//
// Prints one JSON object: per client n, p50, p95 (ms), and the median of
// the per-round differences node:http - plain.
import { writeFileSync } from 'node:fs';

import { NodeHttp, RawHttp } from './http-clients.mjs';

const opt = { url: null, body: null, rounds: 200, pauseMs: 2, warmup: 20 };
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	const v = () => {
		if (i + 1 >= process.argv.length) throw new Error(`${a}: a value is missing`);
		return process.argv[++i];
	};
	if (a === '--url') opt.url = new URL(v());
	else if (a === '--body') opt.body = v();
	else if (a === '--rounds') opt.rounds = Number(v());
	else if (a === '--pause-ms') opt.pauseMs = Number(v());
	else if (a === '--warmup') opt.warmup = Number(v());
	else throw new Error(`unknown option ${a}`);
}

// A JSON-RPC result like query_traces' for 10 traces: a tree as text
// (box-drawing characters included) and 110 spans as structured content,
// about the 38 KB of the benchmark's answers.
function answer() {
	const hex = (n, i) => (i.toString(16) + 'a5f3c9d1e7b2'.repeat(3)).slice(0, n);
	const spans = [];
	const lines = [];
	for (let t = 0; t < 10; t++) {
		lines.push(`Trace ${hex(32, t)} (45ms, 2026-11-21T22:38:59.099Z, 11 spans)`);
		const kids = [];
		for (let s = 0; s < 11; s++) {
			const id = hex(16, t * 100 + s);
			lines.push(`${'│  '.repeat(s % 5)}├─ [OTLP] checkout: GET /orders/{id} (${(s * 1.7).toFixed(1)}ms) (also seen by eBPF)`);
			kids.push({
				span_id: id,
				parent_span_id: hex(16, t * 100),
				service: 'checkout',
				name: `GET /orders/{id} ${s}`,
				source: s % 2 ? 'otlp' : 'ebpf',
				also_seen_by: s % 2 ? ['ebpf'] : [],
				start: '2026-11-21T22:38:59.099Z',
				duration_ms: 1.234567 * (s + 1),
				status: 'unset',
				slow: s === 7,
				children: [],
			});
		}
		spans.push({ trace_id: hex(32, t), start: '2026-11-21T22:38:59.099Z', duration_ms: 45.497626, span_count: 11, spans_not_shown: 0, spans: kids });
	}
	return JSON.stringify({
		jsonrpc: '2.0',
		id: 1,
		result: {
			content: [{ type: 'text', text: `${lines.join('\n')}\n\nAnalysis: ...` }],
			structuredContent: { traces: spans, sources: { ebpf: 'ok', otlp: 'ok' }, more_traces: true },
			isError: false,
		},
	});
}

if (opt.body) {
	writeFileSync(opt.body, answer());
	process.exit(0);
}
if (!opt.url) throw new Error('--url or --body is needed');

const clients = { 'node:http': new NodeHttp(opt.url), plain: new RawHttp(opt.url) };
await clients.plain.open();
const request = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query_traces', arguments: { service: 'checkout' } } });
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const pause = () => new Promise((r) => setTimeout(r, opt.pauseMs));

let bodyBytes = 0;
async function call(c) {
	const t0 = process.hrtime.bigint();
	const r = await c.post(request, headers);
	bodyBytes = Buffer.byteLength(r.text);
	const m = JSON.parse(r.text);
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	if (r.status !== 200 || m.id !== 1) throw new Error(`HTTP ${r.status}: ${r.text.slice(0, 200)}`);
	return ms;
}

const ms = { 'node:http': [], plain: [] };
const diff = [];
for (let i = 0; i < opt.warmup + opt.rounds; i++) {
	const order = i % 2 ? ['plain', 'node:http'] : ['node:http', 'plain'];
	const got = {};
	for (const name of order) {
		got[name] = await call(clients[name]);
		await pause();
	}
	if (i < opt.warmup) continue;
	for (const name of order) ms[name].push(got[name]);
	diff.push(got['node:http'] - got.plain);
}
clients.plain.close();
clients['node:http'].close();

const q = (v, p) => {
	const s = [...v].sort((a, b) => a - b);
	const x = (s.length - 1) * p;
	const lo = Math.floor(x);
	return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (x - lo);
};
const r3 = (x) => Math.round(x * 1000) / 1000;
const out = { rounds: opt.rounds, pause_ms: opt.pauseMs, body_bytes: bodyBytes, clients: {}, diff_p50: r3(q(diff, 0.5)) };
for (const [name, v] of Object.entries(ms)) out.clients[name] = { n: v.length, p50: r3(q(v, 0.5)), p95: r3(q(v, 0.95)) };
console.log(JSON.stringify(out));

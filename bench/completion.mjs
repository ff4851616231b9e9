// completion.mjs - the measuring half of bench/completion.sh: through the
// official SDK client, completion/complete latency (p50, p99, max) over
// N requests cycling through prefixes of every kind of value (services of
// 100+, trace and session ids, models, time ranges, a misspelling), and
// ping in the same run, interleaved, as the floor of a request.
//
//   node bench/completion.mjs --mcp URL --traces URL [--requests N]

import { performance } from 'node:perf_hooks';

import { KIND, newId, span } from '../test/integration/lib/otlpjson.mjs';
import { MS, ResBatch, connect, sleep } from '../test/integration/lib/tooltest.mjs';

const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : dflt;
};
const mcpUrl = arg('--mcp');
const base = arg('--base');
const N = Number(arg('--requests', '2000'));
if (!mcpUrl || !base || !(N > 0)) {
	console.error('completion.mjs: --mcp URL --base URL [--requests N] are required');
	process.exit(2);
}

// 120 more services (fleet-000 .. fleet-119), one span each, beside the
// demo's twelve: a service list of 132 names to complete from
const FLEET = 120;
const batch = new ResBatch();
const now = BigInt(Date.now()) * MS;
for (let i = 0; i < FLEET; i++) {
	batch.add(`fleet-${String(i).padStart(3, '0')}`, 'otlp', span({ traceId: newId(16), spanId: newId(8), name: 'tick',
		kind: KIND.INTERNAL, startNs: now - BigInt(60 + i) * 1000n * MS, durNs: MS }));
}
await batch.post(base);

const { client } = await connect({ mcpUrl }, 'sextant-bench-completion');
const complete = (ref, name, value) => client.complete({ ref, argument: { name, value } });
const prompt = (name) => ({ type: 'ref/prompt', name });
const res = (uri) => ({ type: 'ref/resource', uri });

// the picture is filled by a background job: wait until it holds the
// fleet (bounded)
const deadline = Date.now() + 30000;
for (;;) {
	const r = await complete(prompt('investigate_service'), 'service', 'fleet-');
	if (r.completion.total === FLEET) break;
	if (Date.now() > deadline) throw new Error('the fleet services never reached the completion cache');
	await sleep(200);
}
const anyIds = async (uri, name) => (await complete(res(uri), name, '')).completion;
const traces = await anyIds('sextant://traces/{trace_id}', 'trace_id');
const sessions = await anyIds('sextant://sessions/{session_id}', 'session_id');
const services = (await complete(prompt('investigate_service'), 'service', '')).completion;

const cases = [
	['service ""', prompt('investigate_service'), 'service', ''],
	['service "pay"', prompt('investigate_service'), 'service', 'pay'],
	['service "fleet-0"', res('sextant://services/{service}'), 'service', 'fleet-0'],
	['service "paymnets"', prompt('latency_regression'), 'service', 'paymnets'],
	['trace_id 6 hex', res('sextant://traces/{trace_id}'), 'trace_id', traces.values.at(-1)?.slice(0, 6) ?? 'ab'],
	['session_id 8 chars', res('sextant://sessions/{session_id}'), 'session_id', sessions.values.at(-1)?.slice(0, 8) ?? 'sess'],
	['model "gpt"', prompt('genai_cost_review'), 'model', 'gpt'],
	['time_range "1"', prompt('investigate_service'), 'time_range', '1'],
];

const pct = (xs, p) => {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const timed = async (fn) => {
	const t = performance.now();
	await fn();
	return performance.now() - t;
};

// warm-up, unrecorded
for (let i = 0; i < 200; i++) {
	const c = cases[i % cases.length];
	await complete(c[1], c[2], c[3]);
	await client.ping();
}
const perCase = new Map(cases.map((c) => [c[0], []]));
const all = [];
const pings = [];
for (let i = 0; i < N; i++) {
	const c = cases[i % cases.length];
	const ms = await timed(() => complete(c[1], c[2], c[3]));
	perCase.get(c[0]).push(ms);
	all.push(ms);
	pings.push(await timed(() => client.ping()));
}
await client.close();

const f = (x) => x.toFixed(2);
const row = (name, xs) => `| ${name} | ${xs.length} | ${f(pct(xs, 50))} | ${f(pct(xs, 99))} | ${f(Math.max(...xs))} |`;
console.log(`Picture: ${services.total} services, ${traces.total} trace ids, ${sessions.total} session ids.\n`);
console.log('| request | n | p50 ms | p99 ms | max ms |');
console.log('|---|---:|---:|---:|---:|');
console.log(row('ping (the floor)', pings));
console.log(row('**completion/complete, all**', all));
for (const [name, xs] of perCase) console.log(row(`complete ${name}`, xs));
console.log(`\ncompletion/complete above the floor: p50 ${f(pct(all, 50) - pct(pings, 50))} ms, p99 ${f(pct(all, 99) - pct(pings, 99))} ms (target: p99 under 5 ms).`);

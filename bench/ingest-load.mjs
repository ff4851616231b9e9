// ingest-load.mjs - the load generator of bench/ingest.sh: POSTs the
// OTLP bodies that ingest-gen.mjs wrote to /v1/traces with C parallel
// keep-alive connections and reports what came back, as one JSON line.
//
//   node bench/ingest-load.mjs --url http://127.0.0.1:PORT/v1/traces
//        --dir DIR [--dir DIR2 ...] [--concurrency C] [--duration S]
//        [--timeout-ms T] [--out FILE] [--cpu NAME=PID ...] [--clk-tck N]
//
// Without --duration (or 0): every body once, in file order, C at a time;
// wall_s runs from the first request sent to the last 200 received.  With
// --duration S: the bodies of all dirs, interleaved, again and again until
// S seconds have passed (a request under way then is still awaited).
// Content-Type from the file name: .pb application/x-protobuf, .json
// application/json.  Each file holds `spans_per_request` spans (read from
// DIR/../manifest.json).  --cpu NAME=PID: the CPU the process PID and its
// children (threads, backends; exited children it has reaped included)
// used over the same window, in cores; for the first NAME also per thread.
// Exit status 1 when any answer was not 200.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

function die(msg) {
	process.stderr.write(`ingest-load.mjs: ${msg}\n`);
	process.exit(2);
}

function args(argv) {
	const a = { dir: [], cpu: [], concurrency: 8, duration: 0, 'timeout-ms': 60000, 'clk-tck': 100, out: null, url: null };
	for (let i = 0; i < argv.length; i += 2) {
		const k = argv[i]?.replace(/^--/, '');
		if (!(k in a) || i + 1 >= argv.length) {
			die(`unknown or incomplete option "${argv[i]}": expected --url URL --dir DIR [--concurrency C] [--duration S] [--timeout-ms T] [--out FILE]`);
		}
		if (k === 'dir' || k === 'cpu') a[k].push(argv[i + 1]);
		else a[k] = argv[i + 1];
	}
	if (!a.url) die('--url is required');
	if (a.dir.length === 0) die('--dir is required');
	a.cpu = a.cpu.map((c) => {
		const m = /^([A-Za-z0-9_-]+)=([0-9]+)$/.exec(c);
		if (!m) die(`--cpu: expected NAME=PID, got "${c}"`);
		return { name: m[1], pid: Number(m[2]) };
	});
	for (const [k, min] of [['concurrency', 1], ['duration', 0], ['timeout-ms', 1], ['clk-tck', 1]]) {
		const v = Number(a[k]);
		if (!Number.isInteger(v) || v < min || v > 1e7) die(`--${k}: expected an integer >= ${min}, got "${a[k]}"`);
		a[k] = v;
	}
	return a;
}

const TYPES = { '.pb': 'application/x-protobuf', '.json': 'application/json' };

function loadDir(dir) {
	const manifest = JSON.parse(fs.readFileSync(path.join(dir, '..', 'manifest.json'), 'utf8'));
	const names = fs.readdirSync(dir).filter((n) => TYPES[path.extname(n)]).sort();
	if (names.length === 0) die(`${dir}: no .pb or .json bodies: run ingest-gen.mjs first`);
	return names.map((n) => ({
		name: path.join(dir, n),
		type: TYPES[path.extname(n)],
		body: fs.readFileSync(path.join(dir, n)),
		spans: manifest.spans_per_request,
	}));
}

const a = args(process.argv.slice(2));
const sets = a.dir.map(loadDir);
// Interleaved: pb 0, json 0, pb 1, json 1, ...
const bodies = [];
for (let i = 0; i < Math.max(...sets.map((s) => s.length)); i++) {
	for (const s of sets) if (i < s.length) bodies.push(s[i]);
}

const url = new URL(a.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: a.concurrency, maxFreeSockets: a.concurrency });

function post(b) {
	return new Promise((resolve) => {
		const t = performance.now();
		const req = http.request({
			host: url.hostname,
			port: url.port,
			path: url.pathname,
			method: 'POST',
			agent,
			headers: { 'content-type': b.type, 'content-length': b.body.length },
			timeout: a['timeout-ms'],
		}, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t, end: performance.now(), text: Buffer.concat(chunks) }));
			res.on('error', (e) => resolve({ status: 0, ms: performance.now() - t, end: performance.now(), error: e.message }));
		});
		req.on('timeout', () => req.destroy(new Error(`no answer within ${a['timeout-ms']} ms`)));
		req.on('error', (e) => resolve({ status: 0, ms: performance.now() - t, end: performance.now(), error: e.message }));
		req.end(b.body);
	});
}

// ---- CPU accounting from /proc ------------------------------------------------

// Fields of /proc/PID/stat after the command name: [0] is field 3 (state),
// so utime = [11], stime = [12], cutime = [13], cstime = [14], ppid = [1].
function stat(file) {
	try {
		const s = fs.readFileSync(file, 'utf8');
		return { comm: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), f: s.slice(s.lastIndexOf(')') + 2).split(' ').map(Number) };
	} catch {
		return null;
	}
}

function snapshot() {
	const children = new Map(); // ppid -> [pid]
	for (const d of fs.readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(d)) continue;
		const st = stat(`/proc/${d}/stat`);
		if (!st) continue;
		const pp = st.f[1];
		if (!children.has(pp)) children.set(pp, []);
		children.get(pp).push(Number(d));
	}
	const procs = {};
	for (const { name, pid } of a.cpu) {
		const own = stat(`/proc/${pid}/stat`);
		let ticks = own ? own.f[11] + own.f[12] + own.f[13] + own.f[14] : 0;
		for (const c of children.get(pid) ?? []) {
			const st = stat(`/proc/${c}/stat`);
			if (st) ticks += st.f[11] + st.f[12];
		}
		procs[name] = ticks;
	}
	const threads = {};
	if (a.cpu.length) {
		const pid = a.cpu[0].pid;
		let tids = [];
		try {
			tids = fs.readdirSync(`/proc/${pid}/task`);
		} catch {
			// gone
		}
		for (const t of tids) {
			const st = stat(`/proc/${pid}/task/${t}/stat`);
			if (st) threads[t] = { comm: st.comm, ticks: st.f[11] + st.f[12] };
		}
	}
	const cpuLine = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
	const idle = cpuLine[3] + cpuLine[4];
	const total = cpuLine.reduce((x, y) => x + y, 0);
	return { t: performance.now(), procs, threads, idle, total };
}

function cpuReport(s0, s1) {
	const secs = (s1.t - s0.t) / 1000;
	const cores = (ticks) => Number((ticks / a['clk-tck'] / secs).toFixed(2));
	const out = {};
	for (const { name } of a.cpu) out[name] = cores(s1.procs[name] - s0.procs[name]);
	if (a.cpu.length) {
		out[`${a.cpu[0].name}_threads`] = Object.entries(s1.threads)
			.map(([tid, v]) => ({ tid: Number(tid), comm: v.comm, cores: cores(v.ticks - (s0.threads[tid]?.ticks ?? 0)) }))
			.filter((x) => x.cores > 0)
			.sort((x, y) => y.cores - x.cores);
	}
	out.machine_busy = Number((1 - (s1.idle - s0.idle) / (s1.total - s0.total)).toFixed(3));
	return out;
}

const statuses = {};
const problems = [];
const lat = [];
let sent = 0;
let okSpans = 0;
let okRequests = 0;
let lastOk = 0;
let next = 0;
const snap0 = snapshot();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const deadline = a.duration > 0 ? t0 + a.duration * 1000 : Infinity;

async function client() {
	for (;;) {
		let b;
		if (a.duration > 0) {
			if (performance.now() >= deadline) return;
			b = bodies[next++ % bodies.length];
		} else {
			if (next >= bodies.length) return;
			b = bodies[next++];
		}
		sent++;
		const r = await post(b);
		statuses[r.status] = (statuses[r.status] ?? 0) + 1;
		lat.push(r.ms);
		if (r.status === 200) {
			okRequests++;
			okSpans += b.spans;
			lastOk = r.end;
		} else if (problems.length < 5) {
			problems.push(`${b.name}: ${r.status === 0 ? r.error : `HTTP ${r.status}: ${r.text.toString('utf8', 0, 300)}`}`);
		}
	}
}

await Promise.all(Array.from({ length: a.concurrency }, client));
const t1 = performance.now();
const snap1 = snapshot();
agent.destroy();
const cpu = process.cpuUsage(cpu0);
lat.sort((x, y) => x - y);
const q = (p) => (lat.length ? Number(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1)) : null);
const wall = ((a.duration > 0 ? t1 : lastOk || t1) - t0) / 1000;
const result = {
	url: a.url,
	dirs: a.dir,
	concurrency: a.concurrency,
	duration_s: a.duration,
	requests: sent,
	ok_requests: okRequests,
	statuses,
	spans_ok: okSpans,
	wall_s: Number(wall.toFixed(3)),
	spans_per_s: wall > 0 ? Math.round(okSpans / wall) : 0,
	requests_per_s: wall > 0 ? Number((okRequests / wall).toFixed(1)) : 0,
	latency_ms: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: q(1) },
	loader_cpu_s: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
	loader_cores: Number(((cpu.user + cpu.system) / 1e6 / ((t1 - t0) / 1000)).toFixed(2)),
	cpu_cores: cpuReport(snap0, snap1),
	problems,
};
const line = `${JSON.stringify(result)}\n`;
if (a.out) fs.writeFileSync(a.out, line);
process.stdout.write(line);
process.exit(okRequests === sent ? 0 : 1);

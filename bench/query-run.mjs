// query-run.mjs - the measuring half of bench/query.sh: query_metrics (1 h,
// 24 h, and 24 h with a timeline of 5 m steps), query_traces (1 h) and
// get_mesh_graph (1 h, 24 h) through MCP, interleaved call by call with
// the single SQL statement that computes the same numbers from raw spans,
// run by one long-lived psql with \timing on.  MCP through two clients on
// one session: a plain HTTP/1.1 client (RawHttp, the targets are judged on
// it) and node:http.  Checks first that the tool and the SQL give the same
// answer (and both clients the same result), then records every latency.
// See bench/README.md.
//
//   node bench/query-run.mjs --mcp URL --pg-url URL --out FILE
//        [--psql PATH] [--services a,b] [--calls N] [--warmup N]
//        [--to ISO | --live] [--kinds m1h,m24h,t1h,tl24h,g1h,g24h,r24h,rd24h,sp]
//        [--traces-sql walk|group|prepared]
//
// --to ISO: absolute ranges ending there (from/to arguments, the same
// range on every call); --live: time_range "1h" / "24h" and now() in SQL.
// Output: one JSON object in FILE (samples, summaries, checks) and a short
// summary on stdout.  Exit 1 when a call failed or an answer disagreed.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { NodeHttp, RawHttp } from './http-clients.mjs';

const ACCEPT = 'application/json, text/event-stream';
const PROTOCOL = '2025-11-25';
const CALL_TIMEOUT_MS = 600000;

function die(msg) {
	console.error(`query-run.mjs: ${msg}`);
	process.exit(2);
}

// ---- arguments ---------------------------------------------------------------
const opt = {
	psql: 'psql',
	services: 'checkout,payments,api-gateway,inventory',
	calls: 30,
	warmup: 1,
	kinds: 'm1h,m24h,t1h,tl24h',
	live: false,
	tracesSql: 'walk',
};
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	const v = () => {
		if (i + 1 >= process.argv.length) die(`${a} needs a value`);
		return process.argv[++i];
	};
	if (a === '--mcp') opt.mcp = v();
	else if (a === '--pg-url') opt.pgUrl = v();
	else if (a === '--psql') opt.psql = v();
	else if (a === '--out') opt.out = v();
	else if (a === '--services') opt.services = v();
	else if (a === '--calls') opt.calls = Number(v());
	else if (a === '--warmup') opt.warmup = Number(v());
	else if (a === '--kinds') opt.kinds = v();
	else if (a === '--to') opt.to = v();
	else if (a === '--live') opt.live = true;
	else if (a === '--traces-sql') opt.tracesSql = v();
	else die(`unknown argument ${a}`);
}
if (!opt.mcp || !opt.pgUrl || !opt.out) die('--mcp, --pg-url and --out are required');
if (!Number.isInteger(opt.calls) || opt.calls < 1) die('--calls: expected a positive integer');
if (!Number.isInteger(opt.warmup) || opt.warmup < 0) die('--warmup: expected a non-negative integer');
if (opt.live === (opt.to !== undefined)) die('give exactly one of --to ISO and --live');
if (!['walk', 'group', 'prepared'].includes(opt.tracesSql)) die(`--traces-sql: walk, group or prepared, not ${opt.tracesSql}`);
const anchorMs = opt.live ? null : Date.parse(opt.to);
if (!opt.live && !Number.isFinite(anchorMs)) die(`--to: not a date: ${opt.to}`);
const services = opt.services.split(',').filter(Boolean);
if (!services.length) die('--services: empty');
// Service names go into SQL literals: keep them to what services are named.
for (const s of services) if (!/^[A-Za-z0-9._-]+$/.test(s)) die(`--services: unexpected name ${s}`);

const HOUR_MS = 3600 * 1000;
const KINDS = {
	m1h: { tool: 'query_metrics', hours: 1, what: 'query_metrics 1h' },
	m24h: { tool: 'query_metrics', hours: 24, what: 'query_metrics 24h' },
	t1h: { tool: 'query_traces', hours: 1, what: 'query_traces 1h' },
	tl24h: { tool: 'query_metrics', hours: 24, step: '5m', what: 'query_metrics 24h, step 5m' },
	g1h: { tool: 'get_mesh_graph', hours: 1, graph: true, what: 'get_mesh_graph 1h' },
	g24h: { tool: 'get_mesh_graph', hours: 24, graph: true, what: 'get_mesh_graph 24h' },
	r24h: { tool: 'get_resource_detail', hours: 24, resource: 'list', what: 'get_resource_detail services 24h' },
	rd24h: { tool: 'get_resource_detail', hours: 24, resource: 'detail', what: 'get_resource_detail one service 24h' },
	sp: { tool: 'get_trace', hours: 24, span: true, what: 'get_trace one span whole (span_id)' },
};
const kinds = opt.kinds.split(',').filter(Boolean);
for (const k of kinds) if (!KINDS[k]) die(`--kinds: unknown ${k} (${Object.keys(KINDS).join(', ')})`);

// get_resource_detail takes no from/to, only Kiali's rateInterval: in the
// anchored mode its kinds ask for the last N hours, N whole hours that
// reach back past the start of the dataset's 24 h (which ends at the
// anchor), so that both sides read all of it however long the run takes
// (up to an hour); the SQL side asks for the same N hours before now().
const resourceHours = opt.live ? 24 : Math.ceil((Date.now() - (anchorMs - 24 * HOUR_MS)) / HOUR_MS) + 1;

// ---- the SQL ---------------------------------------------------------------------
// range: {from, to} ISO strings, or null for "the last N hours as of now()".
function sqlRange(hours, range) {
	if (!range) return [`now() - interval '${hours} hours'`, 'now()'];
	return [`'${range.from}'::timestamptz`, `'${range.to}'::timestamptz`];
}

// Per source, protocol and key: requests, errors, exact percentiles of the
// duration, from span_calls (the view the tool reads: one definition of a
// call, its key and an error).  One statement for both sources.
function metricsSql(service, hours, range) {
	const [from, to] = sqlRange(hours, range);
	return (
		'SELECT source, protocol, k1, k2, count(*), count(*) FILTER (WHERE is_error), ' +
		'percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ns) ' +
		`FROM span_calls WHERE service_name = '${service}' AND protocol IS NOT NULL ` +
		`AND start_time >= ${from} AND start_time < ${to} ` +
		'GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4'
	);
}

// The timeline: per source, protocol and 5 m step (epoch-aligned, as the
// tool's), requests, errors, client errors and the exact P95.
function timelineSql(service, hours, range) {
	const [from, to] = sqlRange(hours, range);
	return (
		"SELECT source, protocol, floor(extract(epoch FROM start_time) / 300)::bigint * 300000, count(*), " +
		'count(*) FILTER (WHERE outcome = 1), count(*) FILTER (WHERE outcome = 2), ' +
		'percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) ' +
		`FROM span_calls WHERE service_name = '${service}' AND protocol IS NOT NULL ` +
		`AND start_time >= ${from} AND start_time < ${to} ` +
		'GROUP BY 1, 2, 3 ORDER BY 1, 2, 3'
	);
}

// The 10 traces with the most recent span of the service in the range (all
// sources), and every span of them.  The best statement found: a walk of
// the (service_name, start_time) index newest first that stops at the 10th
// distinct trace (a recursive CTE carrying the ids seen; ties to the lower
// id), as the tool does per source.  Results before 2026-11-22 05:00 UTC
// were measured against grouping the newest 20,000 spans of the range
// instead (--traces-sql group): 15-40 ms where the walk takes a few.
// --traces-sql prepared: the walk statement prepared once for the psql
// session (PREPARE, then EXECUTE with the service and range; PostgreSQL
// chooses custom or generic plans as it does for any prepared statement),
// so that the SQL side skips planning too, as the tool's prepared
// statements do.  The check below compares the ids.
function tracesStatement(svc, from, to) {
	const where = `service_name = ${svc} AND start_time >= ${from} AND start_time < ${to}`;
	const ids =
		opt.tracesSql === 'group'
			? 'ids AS (SELECT trace_id FROM (SELECT trace_id, start_time FROM spans ' +
				`WHERE ${where} ORDER BY start_time DESC LIMIT 20000) s GROUP BY trace_id ` +
				'ORDER BY max(start_time) DESC, trace_id LIMIT 10) '
			: 'RECURSIVE ids (trace_id, start_time, seen) AS (' +
				`(SELECT trace_id, start_time, ARRAY[trace_id] FROM spans WHERE ${where} ` +
				'ORDER BY start_time DESC, trace_id LIMIT 1) UNION ALL ' +
				'(SELECT n.trace_id, n.start_time, ids.seen || n.trace_id FROM ids CROSS JOIN LATERAL ' +
				`(SELECT trace_id, start_time FROM spans WHERE ${where} AND start_time <= ids.start_time ` +
				'AND trace_id <> ALL (ids.seen) ORDER BY start_time DESC, trace_id LIMIT 1) n ' +
				'WHERE cardinality(ids.seen) < 10)) ';
	return (
		`WITH ${ids}` +
		"SELECT encode(trace_id, 'hex'), encode(span_id, 'hex'), encode(parent_span_id, 'hex'), " +
		'source, sextant_unix_nano(start_time, start_nanos), duration_ns, kind, status_code, ' +
		'service_name, name, status_message FROM spans ' +
		'WHERE trace_id IN (SELECT trace_id FROM ids) ORDER BY trace_id, start_time'
	);
}

const PREPARED_NAME = 'sextant_bench_traces';
const PREPARE_SQL =
	`PREPARE ${PREPARED_NAME} (text, timestamptz, timestamptz) AS ` +
	tracesStatement('$1', '$2::timestamptz', '$3::timestamptz');

function tracesSql(service, hours, range) {
	const [from, to] = sqlRange(hours, range);
	if (opt.tracesSql === 'prepared') return `EXECUTE ${PREPARED_NAME}('${service}', ${from}, ${to})`;
	return tracesStatement(`'${service}'`, from, to);
}

// The service graph (get_mesh_graph, graphType service): every call of
// the range, counted once per span id (the OTLP copy of a span both
// sources saw), as a SERVER (CONSUMER) span under a CLIENT (PRODUCER) span
// of another service or a CLIENT (PRODUCER) span without such a child (a
// leaf, named from its peer); per edge requests, errors, client errors
// and the exact P50 and P95 of the measured spans.  One statement, the
// best found: the spans that can end a call once, 300 s around the range
// (a call's parent may start before it), then the self-join.
function graphSql(hours, range) {
	const [from, to] = sqlRange(hours, range);
	const peer =
		"coalesce(nullif(attributes ->> 'peer.service', ''), nullif(attributes ->> 'server.address', ''), " +
		"db_system || coalesce(' ' || nullif(coalesce(attributes ->> 'db.namespace', attributes ->> 'db.name'), ''), ''), " +
		"nullif(attributes ->> 'messaging.system', '') || coalesce(' ' || nullif(attributes ->> 'messaging.destination.name', ''), ''), 'unknown')";
	return (
		'WITH s AS MATERIALIZED (SELECT DISTINCT ON (trace_id, span_id) trace_id, span_id, parent_span_id, kind, start_time, ' +
		'duration_ns, service_name, sextant_span_outcome(kind, status_code, http_status_code, rpc_grpc_status_code) AS o, ' +
		`CASE WHEN kind IN (3, 4) THEN ${peer} END AS peer FROM spans WHERE source IN ('ebpf', 'otlp') AND kind IN (2, 3, 4, 5) ` +
		`AND start_time >= ${from} - interval '300 s' AND start_time < ${to} + interval '300 s' ` +
		'ORDER BY trace_id, span_id, source DESC), ' +
		'e AS (SELECT p.service_name AS src, c.service_name AS dst, c.o, c.duration_ns FROM s c JOIN s p ' +
		'ON p.trace_id = c.trace_id AND p.span_id = c.parent_span_id WHERE ((c.kind = 2 AND p.kind = 3) OR (c.kind = 5 AND p.kind = 4)) ' +
		`AND p.service_name <> c.service_name AND c.start_time >= ${from} AND c.start_time < ${to} ` +
		'UNION ALL SELECT p.service_name, p.peer, p.o, p.duration_ns FROM s p WHERE p.kind IN (3, 4) ' +
		`AND p.start_time >= ${from} AND p.start_time < ${to} AND NOT EXISTS (SELECT 1 FROM s c ` +
		'WHERE c.trace_id = p.trace_id AND c.parent_span_id = p.span_id AND c.kind IN (2, 5))) ' +
		'SELECT src, dst, count(*), count(*) FILTER (WHERE o = 1), count(*) FILTER (WHERE o = 2), ' +
		'percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ns), percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ns) ' +
		'FROM e GROUP BY 1, 2 ORDER BY 1, 2'
	);
}

// get_resource_detail's numbers for every service (r24h) or one (rd24h):
// namespace, sources, the versions, workloads, pods and hosts its spans
// name, its SERVER and CONSUMER spans once per span id (an eBPF copy only
// when no OTLP copy starts within 300 s of it, found through the primary
// key) by outcome, and its newest error.  The calls out are the graph's
// (g1h, g24h).  One statement over the spans of the range.
function resourceSql(service, range) {
	const [from, to] = sqlRange(resourceHours, null);
	const ns = "coalesce(nullif(service_namespace, ''), nullif(k8s_namespace_name, ''), '')";
	const wl = "coalesce(nullif(k8s_deployment_name, ''), nullif(resource_attributes ->> 'k8s.statefulset.name', ''), nullif(host_name, ''), '')";
	const names = (v) => `coalesce(string_agg(DISTINCT ${v}, ',' ORDER BY ${v}) FILTER (WHERE ${v} <> ''), '')`;
	const one = service ? `AND service_name = '${service}' ` : '';
	return (
		`SELECT service_name, ns, string_agg(DISTINCT source, ',' ORDER BY source), ${names('ver')}, ${names('wl')}, ` +
		`${names('pod')}, ${names('host')}, count(*) FILTER (WHERE req), count(*) FILTER (WHERE req AND o = 1), ` +
		"count(*) FILTER (WHERE req AND o = 2), max(start_time) FILTER (WHERE o = 1) FROM (SELECT service_name, ns, ver, wl, pod, host, " +
		"source, start_time, o, kind IN (2, 5) AND (source = 'otlp' OR NOT EXISTS (SELECT 1 FROM spans d WHERE d.trace_id = s.trace_id " +
		"AND d.span_id = s.span_id AND d.source = 'otlp' AND d.start_time >= s.start_time - interval '300 s' " +
		"AND d.start_time <= s.start_time + interval '300 s')) AS req FROM (SELECT trace_id, span_id, kind, start_time, source, " +
		`service_name, ${ns} AS ns, coalesce(service_version, '') AS ver, ${wl} AS wl, coalesce(k8s_pod_name, '') AS pod, ` +
		"coalesce(host_name, '') AS host, sextant_span_outcome(kind, status_code, http_status_code, rpc_grpc_status_code) AS o " +
		`FROM spans WHERE source IN ('ebpf', 'otlp') AND start_time >= ${from} AND start_time < ${to} ${one}) s) x ` +
		'GROUP BY 1, 2 ORDER BY 1, 2'
	);
}

// Runs kind's statement on psql: {ms, rows}.  The graph's self-join runs
// with nested loops off (not timed: a SET before, a RESET after), as the
// tool's does: PostgreSQL estimates a CTE's filtered rows at one or two
// and would pair every SERVER span with every CLIENT span (an hour of the
// 200,000-span demo day took 7 s so, 69 ms with hash joins).
async function runSql(psql, kind, service, range) {
	if (!KINDS[kind].graph) return psql.run(sqlFor(kind, service, range));
	await psql.run('SET enable_nestloop = off');
	try {
		return await psql.run(sqlFor(kind, service, range));
	} finally {
		await psql.run('RESET enable_nestloop');
	}
}

// sp: per service, the span read (its newest with events in the range,
// else its newest), found once before the run: {trace_id, span_id}.
const spanOf = new Map();
async function pickSpans(psql, range) {
	const [from, to] = sqlRange(24, range);
	for (const svc of services) {
		const pick = (extra) =>
			psql.run(`SELECT encode(trace_id, 'hex'), encode(span_id, 'hex') FROM spans WHERE service_name = '${svc}' ` +
				`AND start_time >= ${from} AND start_time < ${to}${extra} ORDER BY start_time DESC LIMIT 1`);
		let { rows } = await pick(' AND events IS NOT NULL');
		if (!rows.length) ({ rows } = await pick(''));
		if (!rows.length) die(`sp: no span of ${svc} in the range`);
		spanOf.set(svc, { trace_id: rows[0][0], span_id: rows[0][1] });
	}
}

// The database's side of a span read: the row of each source, every
// attribute, resource attribute and event read (detoasted) and counted.
function spanSql(service) {
	const s = spanOf.get(service) ?? { trace_id: '<trace id>', span_id: '<span id>' };
	return (
		"SELECT source, (SELECT count(*) FROM jsonb_object_keys(attributes)), (SELECT count(*) FROM jsonb_object_keys(resource_attributes)), " +
		'coalesce(jsonb_array_length(events), 0), length(attributes::text) + length(resource_attributes::text) + coalesce(length(events::text), 0) ' +
		`FROM spans WHERE trace_id = '\\x${s.trace_id}'::bytea AND span_id = '\\x${s.span_id}'::bytea ORDER BY source = 'otlp' DESC`
	);
}

// One span's counts against the row's (the OTLP one when both sources
// stored it).
function checkSpan(result, rows) {
	const problems = [];
	const sp = result.structuredContent?.span;
	if (!sp) return { problems: ['no span in the answer'] };
	if (!rows.length) return { problems: ['no span row in SQL'] };
	const [source, nattr, nres, nev] = rows[0];
	const got = [sp.sources[0], sp.attributes_total, sp.resource_total, sp.events_total].join();
	if (got !== [source, nattr, nres, nev].join()) problems.push(`span ${got} vs SQL ${rows[0].slice(0, 4).join()}`);
	if (sp.sources.length !== rows.length) problems.push(`${sp.sources.length} sources vs SQL ${rows.length} rows`);
	return { problems };
}

function sqlFor(kind, service, range) {
	const k = KINDS[kind];
	if (k.span) return spanSql(service);
	if (k.graph) return graphSql(k.hours, range);
	if (k.resource) return resourceSql(k.resource === 'detail' ? service : null, range);
	if (k.step) return timelineSql(service, k.hours, range);
	return k.tool === 'query_metrics' ? metricsSql(service, k.hours, range) : tracesSql(service, k.hours, range);
}

function argsFor(kind, service, range) {
	const k = KINDS[kind];
	if (k.span) return spanOf.get(service) ?? { trace_id: '<trace id>', span_id: '<span id>' };
	if (k.graph) return range ? { graphType: 'service', from: range.from, to: range.to } : { graphType: 'service', rateInterval: `${k.hours}h` };
	if (k.resource === 'list') return { resource_type: 'service', rateInterval: `${resourceHours}h` };
	if (k.resource) return { resource_type: 'service', resource_name: service, rateInterval: `${resourceHours}h` };
	const step = k.step ? { step: k.step } : {};
	if (range) return { service, from: range.from, to: range.to, ...step };
	return { service, time_range: `${k.hours}h`, ...step };
}

// ---- psql -------------------------------------------------------------------
// One psql process for the whole run, statements written to its stdin;
// \timing prints the time from sending the statement to having its whole
// result, as measured inside psql (no pipe to this process in it).
class Psql {
	constructor(bin, url) {
		this.p = spawn(bin, ['-X', '-q', '-A', '-t', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-d', url], {
			stdio: ['pipe', 'pipe', 'pipe'],
		});
		this.buf = '';
		this.stderr = '';
		this.waiter = null;
		this.n = 0;
		this.p.stdout.setEncoding('utf8');
		this.p.stdout.on('data', (c) => {
			this.buf += c;
			this.poke();
		});
		this.p.stderr.setEncoding('utf8');
		this.p.stderr.on('data', (c) => {
			this.stderr += c;
		});
		this.exited = new Promise((resolve) => this.p.on('exit', (code) => resolve(code)));
		this.exited.then((code) => {
			this.dead = `psql exited (status ${code}): ${this.stderr.trim()}`;
			this.poke();
		});
		this.p.stdin.write('\\timing on\n');
	}

	poke() {
		if (!this.waiter) return;
		const { marker, resolve, reject } = this.waiter;
		const i = this.buf.indexOf(`${marker}\n`);
		if (i >= 0) {
			const out = this.buf.slice(0, i);
			this.buf = this.buf.slice(i + marker.length + 1);
			this.waiter = null;
			resolve(out);
		} else if (this.dead) {
			this.waiter = null;
			reject(new Error(this.dead));
		}
	}

	// Runs one statement: {ms, rows: [[col, ...], ...]}.
	async run(sql) {
		const marker = `__query_run_${++this.n}__`;
		const out = new Promise((resolve, reject) => {
			this.waiter = { marker, resolve, reject };
		});
		this.p.stdin.write(`${sql};\n\\echo ${marker}\n`);
		this.poke();
		const text = await out;
		const rows = [];
		let ms = null;
		for (const line of text.split('\n')) {
			if (line === '') continue;
			const t = /^Time: ([0-9.]+) ms/.exec(line);
			if (t) ms = Number(t[1]);
			else rows.push(line.split('\t'));
		}
		if (ms === null) throw new Error(`psql printed no timing for: ${sql}\n${text}`);
		return { ms, rows };
	}

	async close() {
		this.p.stdin.end();
		await this.exited;
	}
}

// ---- MCP --------------------------------------------------------------------
// One session, one keep-alive connection per client (http-clients.mjs).
const mcpUrl = new URL(opt.mcp);
const nodeHttp = new NodeHttp(mcpUrl, CALL_TIMEOUT_MS);
let sessionId = null;
let nextId = 1;

function mcpHeaders() {
	const h = { 'content-type': 'application/json', accept: ACCEPT };
	if (sessionId) {
		h['mcp-session-id'] = sessionId;
		h['mcp-protocol-version'] = PROTOCOL;
	}
	return h;
}

const post = (body) => nodeHttp.post(JSON.stringify(body), mcpHeaders());

// The same session over the plain client: the targets are judged on it,
// node:http is reported beside it.
const raw = new RawHttp(mcpUrl, CALL_TIMEOUT_MS);
const rawPost = (body) => raw.post(JSON.stringify(body), mcpHeaders());

// The JSON-RPC response of id in a JSON or SSE body.
function response(r, id) {
	let msgs = [];
	if (/^text\/event-stream/.test(r.headers['content-type'] ?? '')) {
		for (const ev of r.text.split(/\r?\n\r?\n/)) {
			const data = ev
				.split(/\r?\n/)
				.filter((l) => l.startsWith('data:'))
				.map((l) => l.slice(5).replace(/^ /, ''))
				.join('\n');
			if (data) msgs.push(...[JSON.parse(data)].flat());
		}
	} else if (r.text) {
		msgs = [JSON.parse(r.text)].flat();
	}
	return msgs.find((m) => m.id === id && ('result' in m || 'error' in m));
}

async function initialize() {
	const r = await post({
		jsonrpc: '2.0',
		id: 0,
		method: 'initialize',
		params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'sextant-bench-query', version: '1.0' } },
	});
	if (r.status !== 200) throw new Error(`initialize: HTTP ${r.status}: ${r.text}`);
	sessionId = r.headers['mcp-session-id'];
	if (!sessionId) throw new Error('initialize: no Mcp-Session-Id');
	const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
	if (n.status !== 202) throw new Error(`notifications/initialized: HTTP ${n.status}`);
}

// One tools/call, timed from writing the request to having parsed the
// answer: {ms, result}.  Throws on a transport or JSON-RPC error; a tool
// result with isError comes back as is.
async function callTool(name, args, via = post) {
	const id = nextId++;
	const t0 = process.hrtime.bigint();
	const r = await via({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
	const m = r.status === 200 ? response(r, id) : undefined;
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	if (!m) throw new Error(`tools/call ${name}: HTTP ${r.status}, no response: ${r.text.slice(0, 300)}`);
	if (m.error) throw new Error(`tools/call ${name}: JSON-RPC error ${JSON.stringify(m.error)}`);
	return { ms, result: m.result };
}

// ---- checks: the tool and the SQL give the same numbers -----------------------
const PROTO_KEYS = { http: ['route', 'method'], grpc: ['method', null], sql: ['operation', 'table'] };

function relDiff(a, b) {
	if (a === b) return 0;
	return Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b), 1e-9);
}

// Compares one query_metrics answer with the SQL rows; returns a list of
// problems (empty when equal) and the largest percentile difference.
function checkMetrics(result, rows) {
	const problems = [];
	const sc = result.structuredContent ?? {};
	const tool = new Map();
	for (const proto of Object.keys(PROTO_KEYS)) {
		for (const r of sc[proto] ?? []) {
			const [a, b] = PROTO_KEYS[proto];
			tool.set([r.source, proto, r[a], b ? r[b] : ''].join('\u0001'), r);
		}
	}
	let maxPct = 0;
	let maxErr = 0;
	for (const row of rows) {
		const [source, proto, k1, k2, count, errors, pct] = row;
		const key = [source, proto, k1, k2].join('\u0001');
		const t = tool.get(key);
		if (!t) {
			problems.push(`no tool row for ${source}/${proto} ${k1} ${k2}`);
			continue;
		}
		tool.delete(key);
		if (t.requests !== Number(count)) problems.push(`${key}: requests ${t.requests} vs SQL ${count}`);
		const p = pct.replace(/[{}]/g, '').split(',').map((x) => Number(x) / 1e6);
		const q = [t.p50_ms, t.p95_ms, t.p99_ms];
		for (let i = 0; i < 3; i++) {
			// the tool rounds to 0.01 ms
			const d = Math.abs(p[i] - q[i]) <= 0.006 ? 0 : relDiff(p[i], q[i]);
			maxPct = Math.max(maxPct, d);
		}
		const errPct = (100 * Number(errors)) / Number(count);
		maxErr = Math.max(maxErr, Math.abs(errPct - t.error_rate_pct));
	}
	for (const k of tool.keys()) problems.push(`tool row without SQL row: ${k.replaceAll('\u0001', ' ')}`);
	if (maxErr > 0.051) problems.push(`error rates differ by up to ${maxErr.toFixed(3)} points`);
	return { problems, keys: rows.length, maxPctDiff: maxPct, rollup: sc.rollup === true };
}

// Compares the timeline of one query_metrics answer with the SQL rows:
// every step's counts exact (steps without a row: 0), P95 within 0.5%.
function checkTimeline(result, rows) {
	const problems = [];
	const sc = result.structuredContent ?? {};
	const want = new Map(rows.map((r) => [[r[0], r[1], Number(r[2])].join(' '), r]));
	let maxPct = 0;
	let steps = 0;
	for (const s of sc.timeline?.series ?? []) {
		for (let i = 0; i < s.t.length; i++) {
			const key = [s.source, s.protocol, Date.parse(s.t[i])].join(' ');
			const w = want.get(key) ?? [0, 0, 0, '0', '0', '0', null];
			want.delete(key);
			steps++;
			const got = [s.requests[i], s.errors[i], s.client_errors[i]];
			if (got.join() !== w.slice(3, 6).map(Number).join()) problems.push(`${key}: ${got} vs SQL ${w.slice(3, 6)}`);
			if (w[6] !== null) {
				const p = Number(w[6]) / 1e6;
				maxPct = Math.max(maxPct, Math.abs(p - s.p95_ms[i]) <= 0.006 ? 0 : relDiff(p, s.p95_ms[i]));
			}
		}
	}
	for (const k of want.keys()) problems.push(`SQL step without a tool step: ${k}`);
	if (maxPct > 0.005 * (1 + 1e-6)) problems.push(`P95 differs by ${(100 * maxPct).toFixed(3)}%`);
	return { problems, keys: steps, maxPctDiff: maxPct, rollup: sc.rollup === true };
}

// Compares one get_mesh_graph answer (graphType service) with the SQL
// rows: every edge's counts exact, P50 and P95 within 0.5%.  Node names
// carry "namespace/" when the graph spans several.
function checkGraph(result, rows) {
	const problems = [];
	const sc = result.structuredContent ?? {};
	const strip = (l) => l.replace(/^[^/]*\//, '');
	const tool = new Map((sc.traffic ?? []).map((e) => [`${strip(e.source)} -> ${strip(e.target)}`, e]));
	let maxPct = 0;
	if ((sc.not_shown ?? 0) > 0) problems.push(`${sc.not_shown} edges not shown (the answer's budget): only those shown are compared`);
	for (const [src, dst, n, e, ce, p50, p95] of rows) {
		const key = `${src} -> ${dst}`;
		const t = tool.get(key);
		if (!t) {
			if (!sc.not_shown) problems.push(`no tool edge ${key}`);
			continue;
		}
		tool.delete(key);
		if ([t.requests, t.errors, t.client_errors].join() !== [n, e, ce].map(Number).join()) problems.push(`${key}: ${t.requests}/${t.errors}/${t.client_errors} vs SQL ${n}/${e}/${ce}`);
		for (const [got, want] of [[t.p50_ms, Number(p50) / 1e6], [t.p95_ms, Number(p95) / 1e6]]) maxPct = Math.max(maxPct, relDiff(got, want));
	}
	for (const k of tool.keys()) problems.push(`tool edge without SQL row: ${k}`);
	if (maxPct > 0.005 * (1 + 1e-6)) problems.push(`P50/P95 differ by ${(100 * maxPct).toFixed(3)}%`);
	return { problems, keys: rows.length, maxPctDiff: maxPct, rollup: /from the minute and hourly rollups/.test(result.content?.[0]?.text ?? '') };
}

// Compares get_resource_detail's list (r24h) or detail (rd24h) with the
// SQL rows: per service its requests, errors and client errors exact, its
// sources, and the versions and workloads (and the detail's pods and
// hosts) it names (the first 10 of each, and how many), the same.
function checkResources(result, rows) {
	const problems = [];
	const sc = result.structuredContent ?? {};
	const items = sc.resources ?? (sc.name ? [sc] : []);
	const tool = new Map(items.map((r) => [`${r.namespace ?? ''}/${r.name}`, r]));
	if ((sc.not_shown ?? 0) > 0) problems.push(`${sc.not_shown} resources not shown (the answer's budget)`);
	const detail = !sc.resources;
	for (const [svc, ns, sources, ver, wl, pod, host, n, e, ce] of rows) {
		const key = `${ns}/${svc}`;
		const t = tool.get(key);
		if (!t) {
			if (!detail) problems.push(`no tool resource ${key}`);
			continue;
		}
		tool.delete(key);
		const got = [t.requests, t.errors ?? 0, t.client_errors ?? 0].join();
		if (got !== [n, e, ce].map(Number).join()) problems.push(`${key}: ${got} vs SQL ${n},${e},${ce}`);
		if ([...t.sources].sort().join() !== sources) problems.push(`${key}: sources ${t.sources} vs SQL ${sources}`);
		const lists = [['versions', ver], ['workloads', wl]];
		if (detail) lists.push(['pods', pod], ['hosts', host]);
		for (const [field, want] of lists) {
			const all = want ? want.split(',') : [];
			const shown = t[field] ?? [];
			const total = t[`${field}_total`] ?? shown.length;
			if (total !== all.length || shown.some((x) => !all.includes(x))) problems.push(`${key}: ${field} ${shown.join(',')} (${total}) vs SQL ${want}`);
		}
	}
	if (!detail) for (const k of tool.keys()) problems.push(`tool resource without SQL row: ${k}`);
	return { problems, keys: rows.length, maxPctDiff: 0, rollup: null };
}

function checkTraces(result, rows) {
	const problems = [];
	const sc = result.structuredContent ?? {};
	const toolIds = (sc.traces ?? []).map((t) => t.trace_id);
	const sqlIds = [...new Set(rows.map((r) => r[0]))];
	const a = [...toolIds].sort().join(',');
	const b = [...sqlIds].sort().join(',');
	if (a !== b) problems.push(`trace ids differ: tool [${toolIds.join(' ')}] vs SQL [${sqlIds.join(' ')}]`);
	// the tool keeps one copy of a span both sources saw
	const spans = new Map();
	for (const r of rows) spans.set(r[0], (spans.get(r[0]) ?? new Set()).add(r[1]));
	for (const t of sc.traces ?? []) {
		const n = spans.get(t.trace_id)?.size;
		if (n !== undefined && n !== t.span_count) problems.push(`trace ${t.trace_id}: ${t.span_count} spans vs SQL ${n} distinct`);
	}
	return { problems, traces: toolIds.length, spanRows: rows.length };
}

// ---- statistics -------------------------------------------------------------------
// Linear interpolation between closest ranks (percentile_cont).
function quantile(sorted, q) {
	if (!sorted.length) return null;
	const x = q * (sorted.length - 1);
	const lo = Math.floor(x);
	const hi = Math.ceil(x);
	return sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo);
}

function summary(values) {
	const s = [...values].sort((a, b) => a - b);
	const r3 = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
	return {
		n: s.length,
		p50: r3(quantile(s, 0.5)),
		p95: r3(quantile(s, 0.95)),
		min: r3(s[0] ?? null),
		max: r3(s[s.length - 1] ?? null),
		mean: r3(s.length ? s.reduce((a, b) => a + b, 0) / s.length : null),
	};
}

// A result as compared between the two clients: a rateInterval's range
// (get_resource_detail's kinds) ends at each call's now, and so differs.
function sameRange(kind, result) {
	if (!KINDS[kind].resource || !result.structuredContent) return result;
	const { time_range: _, ...sc } = result.structuredContent;
	return { ...result, structuredContent: sc };
}

// ---- the run ------------------------------------------------------------------------
function rangeAt(kind, endMs) {
	const to = new Date(endMs);
	const from = new Date(endMs - KINDS[kind].hours * HOUR_MS);
	return { from: from.toISOString(), to: to.toISOString() };
}

async function main() {
	const psql = new Psql(opt.psql, opt.pgUrl);
	if (opt.tracesSql === 'prepared' && kinds.includes('t1h')) await psql.run(PREPARE_SQL);
	if (kinds.includes('sp')) await pickSpans(psql, opt.live ? null : rangeAt('sp', anchorMs));
	await initialize();
	await raw.open();
	const out = {
		started: new Date().toISOString(),
		mode: opt.live ? 'live' : 'anchored',
		traces_sql: opt.tracesSql,
		prepare_sql: opt.tracesSql === 'prepared' ? PREPARE_SQL : null,
		anchor: opt.live ? null : new Date(anchorMs).toISOString(),
		services,
		calls: opt.calls,
		kinds: {},
		checks: [],
		samples: [],
		failures: [],
	};
	for (const k of kinds) {
		out.kinds[k] = {
			what: KINDS[k].what,
			sql: sqlFor(k, '<service>', opt.live ? null : rangeAt(k, anchorMs)),
			args: argsFor(k, '<service>', opt.live ? null : rangeAt(k, anchorMs)),
		};
	}

	// 1. the same answer: both sides with the same absolute range
	const checkEnd = opt.live ? Math.floor(Date.now() / 1000) * 1000 : anchorMs;
	for (const svc of services) {
		for (const k of kinds) {
			// one graph for every service: checked once
			if ((KINDS[k].graph || KINDS[k].resource === 'list') && svc !== services[0]) continue;
			const range = rangeAt(k, checkEnd);
			const m = await callTool(KINDS[k].tool, argsFor(k, svc, range));
			const p = await callTool(KINDS[k].tool, argsFor(k, svc, range), rawPost);
			const s = await runSql(psql, k, svc, range);
			const c = { kind: k, service: svc, mcp_ms: m.ms, sql_ms: s.ms };
			if (m.result.isError) {
				c.problems = [`isError: ${JSON.stringify(m.result.content).slice(0, 300)}`];
			} else {
				const check = KINDS[k].span ? checkSpan : KINDS[k].graph ? checkGraph : KINDS[k].resource ? checkResources : KINDS[k].step ? checkTimeline : KINDS[k].tool === 'query_metrics' ? checkMetrics : checkTraces;
				Object.assign(c, check(m.result, s.rows));
			}
			if (JSON.stringify(sameRange(k, p.result)) !== JSON.stringify(sameRange(k, m.result))) c.problems.push('the plain client got another result than node:http');
			out.checks.push(c);
			const tag = c.problems.length ? 'DIFFERS' : 'same';
			console.error(
				`check ${k} ${svc}: ${tag}` +
					(c.keys !== undefined ? ` (${c.keys} keys, percentiles within ${(100 * c.maxPctDiff).toFixed(3)}%, rollup ${c.rollup})` : '') +
					(c.traces !== undefined ? ` (${c.traces} traces, ${c.spanRows} span rows)` : ''),
			);
			for (const p of c.problems.slice(0, 5)) console.error(`  ${p}`);
		}
	}

	// 2. warm-up, not recorded; 3. measured, interleaved
	const total = opt.warmup * services.length + opt.calls;
	for (let i = 0; i < total; i++) {
		const measured = i >= opt.warmup * services.length;
		const j = measured ? i - opt.warmup * services.length : i;
		const svc = services[j % services.length];
		for (const k of kinds) {
			const range = opt.live ? null : rangeAt(k, anchorMs);
			// Each MCP call between two psql calls: neither client follows
			// the other, whose gateway and backend it would find warm.  The
			// first call of a round follows the last query (for query_traces
			// a 24 h scan of seconds) and runs cold, 1 ms slower: the
			// rotation gives that place to each side in a quarter of its
			// calls.
			const sides = ['mcp', 'sql', 'raw', 'sql'];
			for (let r = 0; r < j % 4; r++) sides.push(sides.shift());
			for (const via of sides) {
				let ms;
				let rollup = null;
				try {
					if (via !== 'sql') {
						const m = await callTool(KINDS[k].tool, argsFor(k, svc, range), via === 'raw' ? rawPost : post);
						ms = m.ms;
						if (m.result.isError) throw new Error(`isError: ${JSON.stringify(m.result.content).slice(0, 300)}`);
						rollup = KINDS[k].graph ? /from the minute and hourly rollups/.test(m.result.content?.[0]?.text ?? '') : (m.result.structuredContent?.rollup ?? null);
					} else {
						ms = (await runSql(psql, k, svc, range)).ms;
					}
				} catch (e) {
					out.failures.push({ kind: k, service: svc, via, error: String(e.message ?? e) });
					console.error(`query-run.mjs: ${k} ${svc} ${via}: ${e.message ?? e}`);
					continue;
				}
				if (measured) out.samples.push({ i: j, kind: k, service: svc, via, ms: Math.round(ms * 1000) / 1000, rollup });
			}
		}
		if (measured && (j + 1) % 10 === 0) console.error(`${j + 1}/${opt.calls} rounds`);
	}
	await psql.close();
	raw.close();
	nodeHttp.close();
	out.raw_reconnects = raw.reconnects ?? 0;
	if (out.raw_reconnects > 0) console.error(`plain client: ${out.raw_reconnects} reconnect(s) after the gateway closed an idle connection`);

	out.summary = {};
	for (const k of kinds) {
		const mcp = summary(out.samples.filter((s) => s.kind === k && s.via === 'mcp').map((s) => s.ms));
		const rawS = summary(out.samples.filter((s) => s.kind === k && s.via === 'raw').map((s) => s.ms));
		const sql = summary(out.samples.filter((s) => s.kind === k && s.via === 'sql').map((s) => s.ms));
		out.summary[k] = { mcp, raw: rawS, sql, rollup_calls: out.samples.filter((s) => s.kind === k && s.via === 'mcp' && s.rollup === true).length };
	}
	out.finished = new Date().toISOString();
	writeFileSync(opt.out, `${JSON.stringify(out, null, 1)}\n`);
	for (const k of kinds) {
		const { mcp, raw: plain, sql } = out.summary[k];
		console.log(
			`${KINDS[k].what}: MCP (plain client) p50 ${plain.p50} p95 ${plain.p95} ms, (node:http) p50 ${mcp.p50} p95 ${mcp.p95} ms; ` +
				`SQL p50 ${sql.p50} p95 ${sql.p95} ms`,
		);
	}
	const bad = out.checks.filter((c) => c.problems.length).length;
	if (bad || out.failures.length) {
		console.error(`query-run.mjs: ${bad} check(s) differ, ${out.failures.length} call(s) failed`);
		process.exit(1);
	}
	process.exit(0);
}

main().catch((e) => {
	console.error(`query-run.mjs: ${e.stack ?? e}`);
	process.exit(1);
});

// answers.mjs - the call runner behind test/answers/check.sh: sends every
// call of calls.json to two running gateways (base and new), one MCP session
// on each, and compares the answers byte for byte.
//
//   node answers.mjs --base URL --new URL --calls FILE --out DIR --now ISO
//                    [--prometheus] [--partial-saves] [--timeout-ms N]
//
// URL is a gateway's /mcp endpoint; --now is the instant both gateways' frozen
// clock shows (check.sh runs them under libfaketime), used for the ${now...}
// placeholders and checked before the first call; --prometheus when a
// [prometheus.*] instance is configured (else calls with "needs":
// "prometheus" are skipped); --partial-saves when answers are cut short
// (check.sh's ANSWERS_MAX_CHARS), see "save" below.
//
// calls.json: {"calls": [{"tool", "args", "protocol"?, "needs"?, "save"?}]}.
//   args      the tool's arguments; strings may hold placeholders:
//             ${now}, ${now-90m}, ${now+1h}, ${now-7h@h} (s, m, h, d; @m, @h,
//             @d floor the instant to the minute, hour, day): the frozen
//             clock as ISO 8601 ("2026-11-28T01:07:18Z");
//             ${NAME}: a value saved from an earlier answer (a string that
//             is only the placeholder takes the value as is, number or
//             string).
//   save      {"NAME": "dotted.path"}: values of the base answer's result,
//             e.g. "structuredContent.traces.0.trace_id".  A path that is
//             missing is a fatal error (the list no longer fits the data),
//             but with --partial-saves (a small text budget leaves out of
//             the answer, structured content included, the second trace)
//             the calls that need that value are skipped instead.
//   protocol  the session's revision (default 2025-11-25; "2025-03-26"
//             exercises the older result shape).
//   needs     "prometheus": skipped without a Prometheus instance.
//
// Each call goes to both gateways at once (same JSON-RPC id); the answers are
// the whole JSON-RPC response bodies, compared as bytes together with the HTTP
// status.  A pair that differs is sent again once (a boundary of uptime_s, a
// worker busy with the rollup janitor) and only then counted.  Nothing is
// normalised except USD amounts (see usdOnly below): answers that differ only
// there count as "USD only", listed in usd-differences.txt, and do not fail.
//
// Writes DIR/base/NNN-tool.json and DIR/new/NNN-tool.json (the response bodies
// as received), DIR/index.tsv, DIR/differences.txt, DIR/usd-differences.txt,
// DIR/summary.txt.  Exit status: 0 no difference but USD formats, 1 some call
// differs, 2 the run could not be made.

import fs from 'node:fs';
import path from 'node:path';

const DEFAULT_PROTOCOL = '2025-11-25';
const SNIPPET = 48; // bytes shown either side of a first difference
const USD_LINES_SHOWN = 40; // console lines of allowed USD differences

function die(msg) {
	console.error(`answers: ${msg}`);
	process.exit(2);
}

function parseArgs(argv) {
	const o = { timeoutMs: 120000, prometheus: false };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const v = () => {
			if (i + 1 >= argv.length) die(`${a} needs a value`);
			return argv[++i];
		};
		if (a === '--base') o.base = v();
		else if (a === '--new') o.new = v();
		else if (a === '--calls') o.calls = v();
		else if (a === '--out') o.out = v();
		else if (a === '--now') o.now = v();
		else if (a === '--timeout-ms') o.timeoutMs = Number(v());
		else if (a === '--prometheus') o.prometheus = true;
		else if (a === '--partial-saves') o.partialSaves = true;
		else die(`unknown argument ${a}`);
	}
	for (const k of ['base', 'new', 'calls', 'out', 'now']) if (!o[k]) die(`--${k} is required`);
	o.nowMs = Date.parse(o.now);
	if (!Number.isFinite(o.nowMs)) die(`--now ${o.now}: not an ISO 8601 instant`);
	return o;
}

// ---- placeholders -------------------------------------------------------

const UNIT_MS = { s: 1000, m: 60000, h: 3600000, d: 86400000 };

function isoSeconds(ms) {
	return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// ${now...} or ${NAME}: the value, or undefined when NAME is not saved.
function lookup(expr, nowMs, saved) {
	const m = /^now(?:([+-])(\d+)([smhd]))?(?:@([mhd]))?$/.exec(expr);
	if (m) {
		let t = nowMs;
		if (m[1]) t += (m[1] === '-' ? -1 : 1) * Number(m[2]) * UNIT_MS[m[3]];
		if (m[4]) t -= ((t % UNIT_MS[m[4]]) + UNIT_MS[m[4]]) % UNIT_MS[m[4]];
		return isoSeconds(t);
	}
	if (!Object.hasOwn(saved, expr)) return undefined;
	return saved[expr];
}

function resolve(v, nowMs, saved, where) {
	if (typeof v === 'string') {
		const whole = /^\$\{([^}]+)\}$/.exec(v);
		if (whole) {
			const r = lookup(whole[1], nowMs, saved);
			if (r === undefined) die(`${where}: placeholder \${${whole[1]}} has no value (not saved by an earlier call)`);
			return r;
		}
		return v.replace(/\$\{([^}]+)\}/g, (_, e) => {
			const r = lookup(e, nowMs, saved);
			if (r === undefined) die(`${where}: placeholder \${${e}} has no value (not saved by an earlier call)`);
			return String(r);
		});
	}
	if (Array.isArray(v)) return v.map((x) => resolve(x, nowMs, saved, where));
	if (v && typeof v === 'object') {
		const o = {};
		for (const [k, x] of Object.entries(v)) o[k] = resolve(x, nowMs, saved, where);
		return o;
	}
	return v;
}

function getPath(obj, dotted) {
	let cur = obj;
	for (const part of dotted.split('.')) {
		if (cur === null || typeof cur !== 'object') return undefined;
		cur = Array.isArray(cur) ? cur[Number(part)] : cur[part];
	}
	return cur;
}

// ---- MCP over Streamable HTTP -------------------------------------------

function headers(sess) {
	const h = {
		'Content-Type': 'application/json',
		Accept: 'application/json, text/event-stream',
	};
	if (sess) {
		h['Mcp-Session-Id'] = sess.sid;
		h['MCP-Protocol-Version'] = sess.protocol;
	}
	return h;
}

async function openSession(url, protocol, timeoutMs) {
	const init = {
		jsonrpc: '2.0',
		id: 0,
		method: 'initialize',
		params: { protocolVersion: protocol, capabilities: {}, clientInfo: { name: 'sextant-answers', version: '1' } },
	};
	const res = await fetch(url, {
		method: 'POST',
		headers: headers(null),
		body: JSON.stringify(init),
		signal: AbortSignal.timeout(timeoutMs),
	});
	const text = await res.text();
	const sid = res.headers.get('mcp-session-id');
	if (res.status !== 200 || !sid) die(`initialize (${protocol}) on ${url}: HTTP ${res.status}, no session: ${text.slice(0, 300)}`);
	const sess = { url, sid, protocol };
	const ack = await fetch(url, {
		method: 'POST',
		headers: headers(sess),
		body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
		signal: AbortSignal.timeout(timeoutMs),
	});
	await ack.arrayBuffer();
	if (ack.status !== 202) die(`notifications/initialized (${protocol}) on ${url}: HTTP ${ack.status}`);
	return sess;
}

async function closeSession(sess) {
	try {
		const res = await fetch(sess.url, { method: 'DELETE', headers: headers(sess), signal: AbortSignal.timeout(5000) });
		await res.arrayBuffer();
	} catch {
		// the server is going away anyway
	}
}

// The JSON-RPC response with this id out of an SSE body (data lines of its
// event), or null.
function sseResponse(buf, id) {
	for (const block of buf.toString('utf8').split(/\r?\n\r?\n/)) {
		const data = block
			.split(/\r?\n/)
			.filter((l) => l.startsWith('data:'))
			.map((l) => l.slice(5).replace(/^ /, ''))
			.join('\n');
		if (!data) continue;
		try {
			const msg = JSON.parse(data);
			if (msg && msg.id === id && ('result' in msg || 'error' in msg)) return Buffer.from(data, 'utf8');
		} catch {
			// not JSON: a priming event or a comment
		}
	}
	return null;
}

// One tools/call.  Resolves to {status, answer: Buffer, json|null, failure|null}:
// answer is the response body (for SSE, the data of the response event).
async function callTool(sess, id, name, args, timeoutMs) {
	const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
	let res;
	let buf;
	try {
		res = await fetch(sess.url, { method: 'POST', headers: headers(sess), body, signal: AbortSignal.timeout(timeoutMs) });
		buf = Buffer.from(await res.arrayBuffer());
	} catch (e) {
		const failure = `no answer: ${e.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : e.message}`;
		return { status: 0, answer: Buffer.from(`<${failure}>`), json: null, failure };
	}
	let answer = buf;
	let failure = null;
	if ((res.headers.get('content-type') || '').startsWith('text/event-stream')) {
		answer = sseResponse(buf, id);
		if (!answer) {
			failure = 'an SSE stream without the response';
			answer = buf;
		}
	}
	let json = null;
	try {
		json = JSON.parse(answer.toString('utf8'));
	} catch {
		failure ??= `HTTP ${res.status}, not JSON`;
	}
	return { status: res.status, answer, json, failure };
}

// ---- comparison ---------------------------------------------------------

// The one normalisation: USD amounts as the tools print them, "$0.5",
// "$0.5000", "$0", "$0.00", "$1,234.56", "<$0.000001".  A "$" followed by
// digits is an amount only with a decimal point, as "$0" or after "<" (so SQL
// placeholders such as "$1" stay literal).  Two answers differ "in USD format
// only" when everything outside the amounts is byte-identical, they hold the
// same number of amounts, and each pair of amounts can be the same value
// rounded differently: "$0.7380" / "$0.74" yes, "$0.50" / "$5.00" no.
const MONEY_RE = /<?\$\d[\d,]*(?:\.\d+)?/g;

function isMoney(tok) {
	return tok.startsWith('<') || tok.includes('.') || tok === '$0';
}

// {lits: [...], toks: [...]}: the text between amounts and the amounts.
function splitMoney(s) {
	const lits = [];
	const toks = [];
	let last = 0;
	for (const m of s.matchAll(MONEY_RE)) {
		if (!isMoney(m[0])) continue;
		lits.push(s.slice(last, m.index));
		toks.push(m[0]);
		last = m.index + m[0].length;
	}
	lits.push(s.slice(last));
	return { lits, toks };
}

// The values an amount stands for: [lo, hi].
function moneyInterval(tok) {
	const less = tok.startsWith('<');
	const digits = tok.replace(/^<?\$/, '').replace(/,/g, '');
	const v = Number(digits);
	if (less) return [0, v];
	const dot = digits.indexOf('.');
	const places = dot < 0 ? 0 : digits.length - dot - 1;
	const half = 0.5 * 10 ** -places;
	return [v - half, v + half];
}

function usdOnly(a, b) {
	const x = splitMoney(a.toString('utf8'));
	const y = splitMoney(b.toString('utf8'));
	if (x.toks.length !== y.toks.length || x.toks.length === 0) return false;
	for (let i = 0; i < x.lits.length; i++) if (x.lits[i] !== y.lits[i]) return false;
	for (let i = 0; i < x.toks.length; i++) {
		if (x.toks[i] === y.toks[i]) continue;
		const [lo1, hi1] = moneyInterval(x.toks[i]);
		const [lo2, hi2] = moneyInterval(y.toks[i]);
		if (Math.max(lo1, lo2) > Math.min(hi1, hi2) + 1e-12) return false;
	}
	return true;
}

// The lines that differ between two parsed answers, for the USD report:
// every string value (by path) whose lines differ, line by line.
function differingLines(a, b, where = '$', out = []) {
	if (typeof a === 'string' && typeof b === 'string') {
		if (a === b) return out;
		const la = a.split('\n');
		const lb = b.split('\n');
		for (let i = 0; i < Math.max(la.length, lb.length); i++) {
			if (la[i] === lb[i]) continue;
			out.push(`  ${where} line ${i + 1}:`);
			out.push(`    - ${la[i] ?? '(none)'}`);
			out.push(`    + ${lb[i] ?? '(none)'}`);
		}
		return out;
	}
	if (a && b && typeof a === 'object' && typeof b === 'object') {
		for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) differingLines(a[k], b[k], `${where}.${k}`, out);
	}
	return out;
}

function firstDifference(a, b) {
	const n = Math.min(a.length, b.length);
	let i = 0;
	while (i < n && a[i] === b[i]) i++;
	return i;
}

function snippet(buf, at) {
	const from = Math.max(0, at - SNIPPET);
	const s = buf.subarray(from, Math.min(buf.length, at + SNIPPET)).toString('utf8');
	return (from > 0 ? '…' : '') + JSON.stringify(s).slice(1, -1) + (at + SNIPPET < buf.length ? '…' : '');
}

function same(x, y) {
	return x.status === y.status && x.answer.equals(y.answer);
}

function kindOf(r) {
	if (r.failure) return 'failure';
	if (r.json && r.json.error) return 'rpc-error';
	if (r.json && r.json.result && r.json.result.isError) return 'tool-error';
	return 'result';
}

// ---- the run --------------------------------------------------------------

async function main() {
	const o = parseArgs(process.argv.slice(2));
	let list;
	try {
		list = JSON.parse(fs.readFileSync(o.calls, 'utf8')).calls;
	} catch (e) {
		die(`${o.calls}: ${e.message}`);
	}
	if (!Array.isArray(list) || list.length === 0) die(`${o.calls}: no "calls" array`);

	for (const d of ['base', 'new']) {
		fs.rmSync(path.join(o.out, d), { recursive: true, force: true });
		fs.mkdirSync(path.join(o.out, d), { recursive: true });
	}

	// Every session is opened before the first call, so that both gateways
	// count the same sessions throughout (get_server_status).
	const protocols = [...new Set(list.map((c) => c.protocol || DEFAULT_PROTOCOL))].sort();
	const sessions = { base: {}, new: {} };
	for (const p of protocols) {
		sessions.base[p] = await openSession(o.base, p, o.timeoutMs);
		sessions.new[p] = await openSession(o.new, p, o.timeoutMs);
	}

	// The frozen clock must be in effect on both: a relative range ends at
	// --now.  (The same call on both, so that neither warms a cache alone.)
	for (const side of ['base', 'new']) {
		const s = sessions[side][protocols.includes(DEFAULT_PROTOCOL) ? DEFAULT_PROTOCOL : protocols[0]];
		const r = await callTool(s, 0, 'list_services', { time_range: '1h', limit: 1 }, o.timeoutMs);
		const to = r.json?.result?.structuredContent?.time_range?.to;
		if (to === undefined) die(`${side}: list_services gave no time_range.to, cannot check the frozen clock: ${r.answer.toString('utf8').slice(0, 300)}`);
		if (to !== isoSeconds(o.nowMs)) die(`${side}: the gateway's clock says ${to}, expected ${isoSeconds(o.nowMs)}: is libfaketime in effect?`);
	}

	const saved = {};
	const unsaved = new Set(); // --partial-saves: names the base answer lacked
	const perTool = new Map();
	const index = ['#\ttool\tstatus\tbase\tnew\targs'];
	const diffs = [];
	const usd = [];
	let identical = 0;
	let differ = 0;
	let usdCount = 0;
	let retried = 0;
	let skipped = 0;
	let skippedUnsaved = 0;
	const kinds = { result: 0, 'tool-error': 0, 'rpc-error': 0, failure: 0 };
	const started = Date.now();

	for (let i = 0; i < list.length; i++) {
		const c = list[i];
		const n = String(i + 1).padStart(3, '0');
		const where = `calls.json call ${n} (${c.tool})`;
		if (typeof c.tool !== 'string') die(`${where}: no "tool"`);
		if (c.needs === 'prometheus' && !o.prometheus) {
			skipped++;
			index.push(`${n}\t${c.tool}\tskipped\t\t\t${JSON.stringify(c.args ?? {})}`);
			continue;
		}
		const needed = [...JSON.stringify(c.args ?? {}).matchAll(/\$\{([^}]+)\}/g)].map((m) => m[1]);
		if (needed.some((name) => unsaved.has(name))) {
			skipped++;
			skippedUnsaved++;
			index.push(`${n}\t${c.tool}\tskipped\t\t\t${JSON.stringify(c.args ?? {})}`);
			continue;
		}
		perTool.set(c.tool, (perTool.get(c.tool) || 0) + 1);
		const args = resolve(c.args ?? {}, o.nowMs, saved, where);
		const p = c.protocol || DEFAULT_PROTOCOL;
		const id = i + 1;
		const send = () =>
			Promise.all([
				callTool(sessions.base[p], id, c.tool, args, o.timeoutMs),
				callTool(sessions.new[p], id, c.tool, args, o.timeoutMs),
			]);
		let [b, w] = await send();
		let status = 'identical';
		if (!same(b, w)) {
			retried++;
			await new Promise((r) => setTimeout(r, 100));
			[b, w] = await send();
		}
		const label = `${n} ${c.tool}${p === DEFAULT_PROTOCOL ? '' : ` [${p}]`} ${JSON.stringify(args)}`;
		if (same(b, w) && !b.failure) {
			identical++;
		} else if (!b.failure && !w.failure && b.status === w.status && usdOnly(b.answer, w.answer)) {
			differ++;
			usdCount++;
			status = 'usd-only';
			const lines = b.json && w.json ? differingLines(b.json, w.json) : ['  (answers are not JSON)'];
			usd.push(label, ...lines);
			console.log(`USD  ${label}: USD format only (${lines.filter((l) => l.startsWith('    -')).length} line(s))`);
		} else {
			differ++;
			status = 'differ';
			let line;
			if (b.failure || w.failure) {
				line = `DIFF ${label}: ${b.failure ? `base ${b.failure}` : ''}${b.failure && w.failure ? '; ' : ''}${w.failure ? `new ${w.failure}` : ''}`;
			} else if (b.status !== w.status) {
				line = `DIFF ${label}: HTTP status base ${b.status}, new ${w.status}`;
			} else {
				const at = firstDifference(b.answer, w.answer);
				line = `DIFF ${label}: byte ${at} of ${b.answer.length}/${w.answer.length}: base «${snippet(b.answer, at)}» new «${snippet(w.answer, at)}»`;
			}
			console.log(line);
			diffs.push(line);
		}
		kinds[kindOf(b)]++;
		const file = `${n}-${c.tool}.json`;
		fs.writeFileSync(path.join(o.out, 'base', file), b.answer);
		fs.writeFileSync(path.join(o.out, 'new', file), w.answer);
		index.push(`${n}\t${c.tool}\t${status}\t${b.status}\t${w.status}\t${JSON.stringify(args)}`);

		if (c.save) {
			for (const [name, p2] of Object.entries(c.save)) {
				const v = b.json && b.json.result ? getPath(b.json.result, p2) : undefined;
				if ((v === undefined || v === null) && o.partialSaves) {
					unsaved.add(name);
					continue;
				}
				if (v === undefined || v === null) die(`${where}: save ${name}: the base answer has no ${p2}: ${b.answer.toString('utf8').slice(0, 300)}`);
				saved[name] = v;
			}
		}
		if ((i + 1) % 50 === 0) console.error(`answers: ${i + 1}/${list.length} calls (${((Date.now() - started) / 1000).toFixed(0)} s)`);
	}

	for (const p of protocols) {
		await closeSession(sessions.base[p]);
		await closeSession(sessions.new[p]);
	}

	const total = identical + differ;
	const tools = [...perTool.entries()].map(([t, k]) => `${t} ${k}`).join(', ');
	const info = [
		`answers: calls per tool: ${tools}`,
		`answers: base answers: ${kinds.result} results, ${kinds['tool-error']} tool errors (isError), ${kinds['rpc-error']} JSON-RPC errors, ${kinds.failure} without an answer; ${retried} pair(s) sent twice; ${skipped} skipped${skipped ? ` (${skipped - skippedUnsaved} without Prometheus, ${skippedUnsaved} without a value the cut answers lack)` : ''}; ${((Date.now() - started) / 1000).toFixed(1)} s`,
	];
	const summary = `answers: ${total} calls, ${identical} identical, ${differ} differ (${usdCount} USD only)`;

	fs.writeFileSync(path.join(o.out, 'index.tsv'), index.join('\n') + '\n');
	fs.writeFileSync(path.join(o.out, 'differences.txt'), diffs.length ? diffs.join('\n') + '\n' : '');
	fs.writeFileSync(
		path.join(o.out, 'usd-differences.txt'),
		usd.length ? `# allowed USD differences (base -, new +)\n${usd.join('\n')}\n` : '',
	);
	fs.writeFileSync(path.join(o.out, 'summary.txt'), [...info, summary].join('\n') + '\n');

	if (usd.length) {
		console.log(`allowed USD differences (base -, new +; all in ${path.join(o.out, 'usd-differences.txt')}):`);
		for (const l of usd.slice(0, USD_LINES_SHOWN)) console.log(`  ${l}`);
		if (usd.length > USD_LINES_SHOWN) console.log(`  ... ${usd.length - USD_LINES_SHOWN} more line(s)`);
	}
	for (const l of info) console.log(l);
	console.log(summary);
	process.exit(differ - usdCount > 0 ? 1 : 0);
}

main().catch((e) => die(e.stack || String(e)));

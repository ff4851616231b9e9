// app.js - the console: a router over path routes under /ui/ (the list is
// docs/console.md) and one function per page, each reading the REST facade
// through api.js and drawing with the modules of ../lib/ (shared with the
// MCP Apps).  The range picker
// and auto-refresh keep their values in the URL's query (?range=, ?refresh=),
// so every view is a link.
import { api, ApiError } from './api.js';
import { el, fmtMs, fmtNum, fmtPct, fmtRate, fmtUsd, healthClass, isoMs, svg } from '../lib/dom.js';
import { nodeService, renderGraph } from '../lib/graph.js';
import { renderSession } from '../lib/session.js';
import { renderWaterfall } from '../lib/waterfall.js';

const main = document.getElementById('cx-main');
const rangeSel = document.getElementById('cx-range');
const refreshSel = document.getElementById('cx-refresh');
const STEPS = { '15m': '1m', '1h': '5m', '6h': '15m', '24h': '1h', '7d': '6h' };
let timer = null;
let generation = 0; // a page drawn for an older navigation is dropped
let lastPath = null;

const query = () => new URLSearchParams(location.search);
const range = () => (STEPS[query().get('range')] ? query().get('range') : '1h');
const enc = encodeURIComponent;

// A link inside the console, keeping the range and refresh.
export function href(path, extra = {}) {
	const q = query();
	const keep = new URLSearchParams();
	for (const k of ['range', 'refresh']) if (q.get(k)) keep.set(k, q.get(k));
	for (const [k, v] of Object.entries(extra)) keep.set(k, v);
	return `/ui/${path}${keep.size ? `?${keep}` : ''}`;
}

export function go(url) {
	history.pushState(null, '', url);
	route();
}

function link(parent, path, text, attrs = {}) {
	return el('a', { href: href(path), ...attrs }, parent, text);
}

// A table row that is one tab stop and opens path on Enter or a click.
function rowLink(tr, path) {
	tr.tabIndex = 0;
	tr.classList.add('cx-rowlink');
	tr.addEventListener('click', (ev) => {
		if (ev.target.closest('a')) return;
		go(href(path));
	});
	tr.addEventListener('keydown', (ev) => {
		if (ev.key === 'Enter') go(href(path));
	});
}

function heading(text, sub) {
	const h = el('div', { class: 'cx-head' }, main);
	el('h1', {}, h, text);
	if (sub) el('p', { class: 'cx-sub' }, h, sub);
	return h;
}

function healthBadge(parent, h) {
	return el('span', { class: `cx-health h-${healthClass(h)}` }, parent, h ? String(h).toLowerCase() : 'n/a');
}

// A sortable, filterable table: cols [{key, label, num, fmt, cell}].
// The sort each table (by caption) was left in, so that an auto-refresh
// redraws it the same way.
const sorts = new Map();

function dataTable(parent, rows, cols, { caption, sortKey, desc = true, filter, rowPath } = {}) {
	const wrap = el('div', { class: 'cx-tablewrap' }, parent);
	let sort = sorts.get(caption) ?? { key: sortKey ?? cols[0].key, desc };
	let needle = '';
	if (filter) {
		const lab = el('label', { class: 'cx-filter' }, wrap, 'Filter ');
		const inp = el('input', { type: 'search', placeholder: filter, 'aria-label': `filter ${caption ?? ''}` }, lab);
		inp.value = query().get('filter') ?? '';
		needle = inp.value.trim().toLowerCase();
		inp.addEventListener('input', () => {
			needle = inp.value.trim().toLowerCase();
			// the filter is part of the view's link (and survives a refresh)
			const q = query();
			if (needle) q.set('filter', inp.value.trim());
			else q.delete('filter');
			history.replaceState(null, '', `${location.pathname}${q.size ? `?${q}` : ''}${location.hash}`);
			draw();
		});
	}
	const table = el('table', { class: 'sx-table' }, wrap);
	if (caption) el('caption', {}, table, caption);
	const hr = el('tr', {}, el('thead', {}, table));
	const ths = cols.map((c) => {
		const th = el('th', { scope: 'col', class: c.num ? 'num' : null }, hr);
		const b = el('button', { type: 'button', class: 'cx-sort' }, th, c.label);
		b.addEventListener('click', () => {
			sort = { key: c.key, desc: sort.key === c.key ? !sort.desc : !!c.num };
			sorts.set(caption, sort);
			draw();
		});
		return th;
	});
	const tb = el('tbody', {}, table);
	const draw = () => {
		const val = (r, k) => r[k] ?? (typeof r[k] === 'number' ? 0 : '');
		const list = rows
			.filter((r) => !needle || cols.some((c) => String(r[c.key] ?? '').toLowerCase().includes(needle)))
			.sort((a, b) => {
				const x = val(a, sort.key);
				const y = val(b, sort.key);
				const d = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
				return sort.desc ? -d : d;
			});
		cols.forEach((c, i) => ths[i].setAttribute('aria-sort', c.key === sort.key ? (sort.desc ? 'descending' : 'ascending') : 'none'));
		tb.replaceChildren();
		for (const r of list) {
			const tr = el('tr', {}, tb);
			for (const c of cols) {
				const td = el('td', { class: c.num ? 'num' : null }, tr);
				if (c.cell) c.cell(td, r);
				else td.textContent = c.fmt ? c.fmt(r[c.key]) : String(r[c.key] ?? '-');
			}
			if (rowPath) rowLink(tr, rowPath(r));
		}
		if (!list.length) el('td', { colspan: cols.length, class: 'cx-empty' }, el('tr', {}, tb), 'nothing in this range');
	};
	draw();
	return table;
}

// ---- pages ---------------------------------------------------------------

async function overview(gen) {
	const d = await api('services', { time_range: range() });
	if (gen !== generation) return;
	main.replaceChildren();
	heading('Services', `${d.services.length} services, ${range()} to ${new Date(isoMs(d.time_range.to)).toLocaleTimeString()}`);
	const counts = {};
	for (const s of d.services) counts[healthClass(s.health)] = (counts[healthClass(s.health)] ?? 0) + 1;
	const cards = el('div', { class: 'cx-cards' }, main);
	for (const [k, label] of [
		['ok', 'healthy'],
		['warn', 'degraded'],
		['bad', 'unhealthy'],
	]) {
		const c = el('div', { class: `cx-card h-${k}` }, cards);
		el('strong', {}, c, String(counts[k] ?? 0));
		el('span', {}, c, label);
	}
	dataTable(main, d.services, [
		{ key: 'service', label: 'Service', cell: (td, r) => link(td, `services/${enc(r.service)}`, r.service, { tabindex: -1 }) },
		{ key: 'namespace', label: 'Namespace' },
		{ key: 'sources', label: 'Sources', fmt: (v) => (v ?? []).map((s) => (s === 'ebpf' ? 'eBPF' : s.toUpperCase())).join(' + ') },
		{ key: 'request_rate_per_s', label: 'Requests', num: true, fmt: fmtRate },
		{ key: 'error_rate_pct', label: 'Errors', num: true, fmt: fmtPct },
		{ key: 'client_error_rate_pct', label: 'Client errors', num: true, fmt: fmtPct },
		{ key: 'p95_ms', label: 'P95', num: true, fmt: fmtMs },
		{ key: 'health', label: 'Health', cell: (td, r) => healthBadge(td, r.health) },
	], { caption: 'Services', sortKey: 'request_rate_per_s', filter: 'service or namespace', rowPath: (r) => `services/${enc(r.service)}` });
}

async function graph(gen) {
	const d = await api('graph', { rateInterval: range() });
	if (gen !== generation) return;
	main.replaceChildren();
	heading('Service graph', `${d.nodes.length} nodes, ${d.traffic.length} edges; overall ${String(d.health?.overallStatus ?? 'n/a').toLowerCase()}`);
	const box = el('div', { class: 'cx-graph' }, main);
	renderGraph(box, d, {
		onNode: (n) => n.namespace && go(href(`services/${enc(nodeService(n.name))}`)),
		onEdge: (e) => go(href(`services/${enc(nodeService(e.source))}`, { calls: nodeService(e.target) }) + '#traces'),
	});
}

// Timelines of requests, errors and P95 from query_metrics' step series
// (the sources' series summed per step; P95 their largest).
function timelines(parent, tl) {
	const byT = new Map();
	for (const s of tl?.series ?? [])
		s.t.forEach((t, i) => {
			const p = byT.get(t) ?? { req: 0, err: 0, p95: 0 };
			p.req += s.requests?.[i] ?? 0;
			p.err += s.errors?.[i] ?? 0;
			p.p95 = Math.max(p.p95, s.p95_ms?.[i] ?? 0);
			byT.set(t, p);
		});
	const ts = [...byT.keys()].sort();
	const box = el('div', { class: 'cx-charts' }, parent);
	for (const [key, label, fmt] of [
		['req', 'Requests', fmtNum],
		['err', 'Errors', fmtNum],
		['p95', 'P95', fmtMs],
	]) {
		const fig = el('figure', { class: `cx-chart c-${key}` }, box);
		const vals = ts.map((t) => byT.get(t)[key]);
		const max = Math.max(...vals, 0);
		el('figcaption', {}, fig, `${label} per ${tl?.step ?? 'step'} (max ${fmt(max)})`);
		const W = 300;
		const H = 80;
		const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'cx-spark', role: 'img', 'aria-label': `${label}: ${ts.length} steps, max ${fmt(max)}` }, fig);
		if (ts.length > 1) {
			const pts = vals.map((v, i) => `${((i / (ts.length - 1)) * W).toFixed(1)},${(H - 4 - (max ? v / max : 0) * (H - 10)).toFixed(1)}`);
			svg('polyline', { points: pts.join(' '), class: 'cx-line' }, s);
		}
	}
}

function traceTable(parent, traces, caption) {
	dataTable(parent, traces.map((t) => ({ ...t, root: t.spans?.[0] ? `${t.spans[0].service}: ${t.spans[0].name}` : t.trace_id })), [
		{ key: 'start', label: 'Start', fmt: (v) => new Date(isoMs(v)).toLocaleString() },
		{ key: 'root', label: 'Request', cell: (td, r) => link(td, `traces/${r.trace_id}`, r.root, { tabindex: -1 }) },
		{ key: 'span_count', label: 'Spans', num: true, fmt: fmtNum },
		{ key: 'duration_ms', label: 'Duration', num: true, fmt: fmtMs },
	], { caption, sortKey: caption.startsWith('Slowest') ? 'duration_ms' : 'start', rowPath: (r) => `traces/${r.trace_id}` });
}

async function service(gen, name) {
	const r = range();
	const [m, recent, slow] = await Promise.all([
		api(`services/${enc(name)}/metrics`, { time_range: r, step: STEPS[r] }),
		api(`services/${enc(name)}/traces`, { time_range: r, sort: 'recent', max_traces: 10, max_spans: 1 }),
		api(`services/${enc(name)}/traces`, { time_range: r, sort: 'slowest', max_traces: 10, max_spans: 1 }),
	]);
	if (gen !== generation) return;
	main.replaceChildren();
	const tt = m.service_totals ?? {};
	const t = tt.http ?? tt.grpc ?? tt.sql ?? {};
	const errPct = t.error_rate_pct ?? (t.requests ? (100 * (t.errors ?? 0)) / t.requests : null);
	heading(name, `${fmtNum(t.requests)} requests, ${fmtPct(errPct)} errors, P95 ${fmtMs(t.p95_ms)} in ${r}`);
	timelines(main, m.timeline);
	const merged = (list) => list.filter((x) => !(x.merged && x.source === 'ebpf')).map((x) => ({ ...x, source: x.merged ? 'eBPF + OTLP' : x.source === 'ebpf' ? 'eBPF' : 'OTLP' }));
	const common = [
		{ key: 'requests', label: 'Requests', num: true, fmt: fmtNum },
		{ key: 'error_rate_pct', label: 'Errors', num: true, fmt: fmtPct },
		{ key: 'p95_ms', label: 'P95', num: true, fmt: fmtMs },
		{ key: 'source', label: 'Source' },
		{ key: 'health', label: 'Health', cell: (td, x) => healthBadge(td, x.health) },
	];
	const sec = el('section', { class: 'cx-grid' }, main);
	if (m.http?.length) dataTable(sec, merged(m.http), [{ key: 'method', label: 'Method' }, { key: 'route', label: 'Route' }, ...common], { caption: 'HTTP routes', sortKey: 'requests' });
	if (m.grpc?.length) dataTable(sec, merged(m.grpc), [{ key: 'method', label: 'gRPC method' }, ...common], { caption: 'gRPC methods', sortKey: 'requests' });
	if (m.sql?.length) dataTable(sec, merged(m.sql), [{ key: 'operation', label: 'Operation' }, { key: 'table', label: 'Table' }, ...common], { caption: 'SQL operations', sortKey: 'requests' });
	const tr = el('section', { class: 'cx-grid', id: 'traces' }, main);
	const calls = query().get('calls');
	if (calls) el('p', { class: 'cx-sub' }, tr, `Traces of ${name}, opened from its edge to ${calls}.`);
	traceTable(tr, recent.traces ?? [], 'Recent traces');
	traceTable(tr, slow.traces ?? [], 'Slowest traces');
	if (location.hash === '#traces') tr.scrollIntoView();
}

async function trace(gen, id) {
	const d = await api(`traces/${enc(id)}`);
	if (gen !== generation) return;
	main.replaceChildren();
	heading(`Trace ${id.slice(0, 16)}`, `${fmtNum(d.span_count)} spans, ${fmtMs(d.duration_ms)}, started ${new Date(isoMs(d.start)).toLocaleString()}`);
	const box = el('div', { class: 'cx-waterfall' }, main);
	const t0 = performance.now();
	renderWaterfall(box, d, { loadSpan: (sid) => api(`traces/${enc(d.trace_id)}/spans/${enc(sid)}`) });
	performance.measure('sx-waterfall', { start: t0 });
}

async function sessions(gen) {
	const d = await api('genai/usage', { time_range: range() });
	if (gen !== generation) return;
	main.replaceChildren();
	const tot = d.total ?? {};
	heading('GenAI usage', `${fmtNum(tot.calls)} calls, ${fmtNum(tot.input_tokens)} input and ${fmtNum(tot.output_tokens)} output tokens, ${fmtUsd(tot.cost_usd)} in ${range()}`);
	const sec = el('section', { class: 'cx-grid' }, main);
	dataTable(sec, d.by_model ?? [], [
		{ key: 'model', label: 'Model' },
		{ key: 'provider', label: 'Provider' },
		{ key: 'calls', label: 'Calls', num: true, fmt: fmtNum },
		{ key: 'error_rate_pct', label: 'Errors', num: true, fmt: fmtPct },
		{ key: 'input_tokens', label: 'Input tokens', num: true, fmt: fmtNum },
		{ key: 'output_tokens', label: 'Output tokens', num: true, fmt: fmtNum },
		{ key: 'cost_usd', label: 'Cost', num: true, fmt: fmtUsd },
		{ key: 'p95_ms', label: 'P95', num: true, fmt: fmtMs },
	], { caption: 'Usage and cost by model', sortKey: 'cost_usd' });
	dataTable(sec, [...(d.top_sessions ?? []), ...(d.least_expensive_sessions ?? [])].filter((s, i, a) => a.findIndex((x) => x.session_id === s.session_id) === i), [
		{ key: 'session_id', label: 'Session', cell: (td, r) => link(td, `sessions/${enc(r.session_id)}`, r.session_id, { tabindex: -1 }) },
		{ key: 'service', label: 'Service' },
		{ key: 'calls', label: 'Calls', num: true, fmt: fmtNum },
		{ key: 'input_tokens', label: 'Input tokens', num: true, fmt: fmtNum },
		{ key: 'output_tokens', label: 'Output tokens', num: true, fmt: fmtNum },
		{ key: 'cost_usd', label: 'Cost', num: true, fmt: fmtUsd },
	], { caption: 'Sessions by cost', sortKey: 'cost_usd', rowPath: (r) => `sessions/${enc(r.session_id)}` });
}

async function session(gen, id) {
	const [d, spans] = await Promise.all([api(`sessions/${enc(id)}`, { time_range: '7d' }), api('spans', { session_id: id, time_range: '7d', limit: 200 })]);
	if (gen !== generation) return;
	main.replaceChildren();
	const tot = d.genai?.total ?? {};
	heading(`Session ${id}`, `${fmtNum(tot.calls)} model calls, ${fmtNum(tot.input_tokens)} in / ${fmtNum(tot.output_tokens)} out tokens, ${fmtUsd(tot.cost_usd)}, ${fmtMs(d.duration_ms)}`);
	const box = el('div', { class: 'cx-session' }, main);
	renderSession(box, d, { calls: (spans.spans ?? []).filter((s) => s.gen_ai), onCall: (c) => go(href(`traces/${c.trace_id}`)) });
}

// ---- router --------------------------------------------------------------

const ROUTES = [
	[/^\/ui\/?$/, 'overview', overview],
	[/^\/ui\/graph\/?$/, 'graph', graph],
	[/^\/ui\/services\/([^/]+)\/?$/, 'service', service],
	[/^\/ui\/traces\/([0-9a-fA-F]+)\/?$/, 'trace', trace],
	[/^\/ui\/sessions\/?$/, 'sessions', sessions],
	[/^\/ui\/sessions\/([^/]+)\/?$/, 'session', session],
];

async function route() {
	const gen = ++generation;
	const path = location.pathname;
	if (path !== lastPath) sorts.clear();
	lastPath = path;
	const hit = ROUTES.map(([re, name, fn]) => [path.match(re), name, fn]).find(([m]) => m);
	rangeSel.value = range();
	refreshSel.value = query().get('refresh') ?? '0';
	document.body.dataset.ready = '';
	for (const a of document.querySelectorAll('.cx-top nav a')) a.toggleAttribute('aria-current', false);
	clearInterval(timer);
	if (!hit) {
		main.replaceChildren();
		heading('Not found', `No console page at ${path}.`);
		link(main, '', 'Back to the overview');
		document.body.dataset.ready = 'notfound';
		return;
	}
	const [m, name, fn] = hit;
	const nav = { overview: 'overview', service: 'overview', trace: 'overview', graph: 'graph', sessions: 'sessions', session: 'sessions' }[name];
	document.querySelector(`.cx-top nav a[data-page="${nav}"]`)?.setAttribute('aria-current', 'page');
	document.title = `Sextant · ${name}${m[1] ? ` ${decodeURIComponent(m[1])}` : ''}`;
	try {
		await fn(gen, ...m.slice(1).map(decodeURIComponent));
	} catch (e) {
		if (gen !== generation) return;
		main.replaceChildren();
		heading(e instanceof ApiError && e.status === 404 ? 'Not found' : 'Could not load this page', e.message);
		link(main, '', 'Back to the overview');
	}
	if (gen !== generation) return;
	document.body.dataset.ready = name;
	performance.mark(`sx-ready-${name}`);
	const every = Number(refreshSel.value);
	if (every > 0) timer = setInterval(() => fn(gen, ...m.slice(1).map(decodeURIComponent)).catch(() => {}), every * 1000);
}

function setQuery(k, v) {
	const q = query();
	q.set(k, v);
	go(`${location.pathname}?${q}${location.hash}`);
}

rangeSel.addEventListener('change', () => setQuery('range', rangeSel.value));
refreshSel.addEventListener('change', () => setQuery('refresh', refreshSel.value));
document.addEventListener('click', (ev) => {
	const a = ev.target.closest('a[href^="/ui/"], a[href="/ui"]');
	if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
	ev.preventDefault();
	// the nav keeps the range and refresh
	go(a.closest('.cx-top') ? href(a.getAttribute('href').slice(4)) : a.getAttribute('href'));
});
window.addEventListener('popstate', route);
route();

// session.js - one GenAI session from get_session's structuredContent: its
// calls on a timeline (a lane per model, a bar per call from its start for
// its duration, labelled with tokens and cost; failed calls marked), and
// the session's usage by model as a table.  get_session carries the most
// expensive and the slowest calls; opts.calls may add the session's other
// calls (query_spans' spans with gen_ai, as the console reads them).
// No fetches: a click on a call goes to opts.onCall(call).  Without a
// session, renderSessionList draws get_session's sessions by cost to pick
// from.  Used by the console and the session app.
import { el, fmtMs, fmtNum, fmtUsd, isoMs, serviceColor, svg } from './dom.js';

const SS_LANE_H = 34;
const SS_LABEL_W = 190;
const SS_AXIS_H = 24;

// The session's calls, one per span id, by start time.
export function sessionCalls(sc, extra = []) {
	const byId = new Map();
	const add = (c) => {
		const g = c.gen_ai ?? {};
		const call = {
			span_id: c.span_id,
			trace_id: c.trace_id,
			start: c.start,
			duration_ms: c.duration_ms ?? 0,
			name: c.name ?? '',
			service: c.service ?? '',
			provider: c.provider ?? g.provider ?? '',
			model: c.model ?? g.model ?? `(${c.operation ?? g.operation ?? 'call'})`,
			operation: c.operation ?? g.operation ?? null,
			input_tokens: c.input_tokens ?? g.input_tokens ?? null,
			output_tokens: c.output_tokens ?? g.output_tokens ?? null,
			cost_usd: c.cost_usd ?? g.cost_usd ?? null,
			failed: c.failed === true || c.status === 'error' || c.outcome === 'error',
		};
		if (!byId.has(call.span_id)) byId.set(call.span_id, call);
	};
	for (const c of [...(sc.calls ?? []), ...(sc.most_expensive_calls ?? []), ...(sc.slowest_calls ?? []), ...extra]) add(c);
	return [...byId.values()].sort((a, b) => isoMs(a.start) - isoMs(b.start));
}

export function renderSession(container, sc, opts = {}) {
	const calls = sessionCalls(sc, opts.calls ?? []);
	const root = el('div', { class: 'ss' });
	const t0 = Math.min(isoMs(sc.start), ...calls.map((c) => isoMs(c.start)));
	const t1 = Math.max(isoMs(sc.end) || 0, ...calls.map((c) => isoMs(c.start) + c.duration_ms));
	const span = Math.max(1, t1 - t0);
	const models = [...new Set(calls.map((c) => c.model))];
	const width = Math.max(720, container.clientWidth || 960);
	const barW = width - SS_LABEL_W - 20;
	const x = (t) => SS_LABEL_W + ((t - t0) / span) * barW;
	const height = SS_AXIS_H + models.length * SS_LANE_H + 8;
	const s = svg('svg', { class: 'ss-svg', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': `session timeline: ${calls.length} calls over ${fmtMs(span)}` }, root);
	for (let t = 0; t <= 4; t++) {
		const ms = (span * t) / 4;
		svg('line', { x1: x(t0 + ms), x2: x(t0 + ms), y1: SS_AXIS_H - 6, y2: height, class: 'ss-tick' }, s);
		svg('text', { x: x(t0 + ms), y: 15, class: 'ss-axis', 'text-anchor': t === 0 ? 'start' : t === 4 ? 'end' : 'middle' }, s, `+${fmtMs(ms)}`);
	}
	models.forEach((m, k) => {
		const y = SS_AXIS_H + k * SS_LANE_H;
		svg('text', { x: 6, y: y + 21, class: 'ss-model' }, s, m.length > 28 ? m.slice(0, 27) + '…' : m);
		svg('line', { x1: SS_LABEL_W, x2: width, y1: y + SS_LANE_H, y2: y + SS_LANE_H, class: 'ss-lane' }, s);
	});
	for (const c of calls) {
		const y = SS_AXIS_H + models.indexOf(c.model) * SS_LANE_H;
		const bx = x(isoMs(c.start));
		const bw = Math.max(3, x(isoMs(c.start) + c.duration_ms) - bx);
		// exact counts: the call's own, not a summary
		const exact = (n) => (n === null || n === undefined ? '-' : n.toLocaleString('en-US'));
		const tokens = `${exact(c.input_tokens)} in / ${exact(c.output_tokens)} out`;
		const g = svg('g', { class: `ss-call${c.failed ? ' err' : ''}`, tabindex: 0, role: 'button', 'data-span-id': c.span_id, 'aria-label': `${c.model}${c.operation ? ` ${c.operation}` : ''} at +${fmtMs(isoMs(c.start) - t0)}: ${fmtMs(c.duration_ms)}, ${tokens}, ${fmtUsd(c.cost_usd)}${c.failed ? ', failed' : ''}` }, s);
		svg('rect', { x: bx, y: y + 6, width: bw, height: SS_LANE_H - 12, rx: 3, class: 'ss-bar', fill: serviceColor(c.model) }, g);
		svg('title', {}, g, `${c.name} (${c.service})\n${c.model}: ${tokens}, ${fmtUsd(c.cost_usd)}, ${fmtMs(c.duration_ms)}${c.failed ? '\nfailed' : ''}`);
		const go = () => opts.onCall?.(c);
		g.addEventListener('click', go);
		g.addEventListener('keydown', (ev) => ev.key === 'Enter' && go());
	}

	const table = el('table', { class: 'sx-table ss-calls' }, root);
	el('caption', {}, table, `${calls.length} calls`);
	const hr = el('tr', {}, el('thead', {}, table));
	for (const h of ['start', 'model', 'operation', 'duration', 'input tokens', 'output tokens', 'cost']) el('th', { scope: 'col', class: ['duration', 'input tokens', 'output tokens', 'cost'].includes(h) ? 'num' : null }, hr, h);
	const tb = el('tbody', {}, table);
	for (const c of calls) {
		const tr = el('tr', { class: c.failed ? 'err' : null, tabindex: 0, 'data-trace-id': c.trace_id }, tb);
		tr.addEventListener('click', () => opts.onCall?.(c));
		tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && opts.onCall?.(c));
		el('td', {}, tr, `+${fmtMs(isoMs(c.start) - t0)}`);
		el('td', {}, tr, c.model);
		el('td', {}, tr, c.operation ?? c.name);
		el('td', { class: 'num' }, tr, fmtMs(c.duration_ms));
		el('td', { class: 'num' }, tr, fmtNum(c.input_tokens));
		el('td', { class: 'num' }, tr, fmtNum(c.output_tokens));
		el('td', { class: 'num' }, tr, fmtUsd(c.cost_usd));
	}
	const bm = sc.genai?.by_model ?? [];
	if (bm.length) {
		const t = el('table', { class: 'sx-table ss-models' }, root);
		el('caption', {}, t, 'By model');
		const h = el('tr', {}, el('thead', {}, t));
		['model', 'calls', 'errors', 'input tokens', 'output tokens', 'cost', 'P95'].forEach((x, i) => el('th', { scope: 'col', class: i ? 'num' : null }, h, x));
		const b = el('tbody', {}, t);
		for (const m of bm) {
			const tr = el('tr', {}, b);
			[m.model, fmtNum(m.calls), fmtNum(m.errors), fmtNum(m.input_tokens), fmtNum(m.output_tokens), fmtUsd(m.cost_usd), fmtMs(m.p95_ms)].forEach((v, i) => el('td', { class: i ? 'num' : null }, tr, v));
		}
	}
	container.replaceChildren(root);
	return { calls };
}

// Sessions by cost (get_session without session_id, or the REST usage's
// top and least expensive sessions), each once; onPick(session_id).
export function renderSessionList(container, sc, onPick) {
	const table = el('table', { class: 'sx-table ss-list' });
	const head = el('tr', {}, el('thead', {}, table));
	for (const h of ['session', 'service', 'calls', 'errors', 'tokens in / out', 'cost']) el('th', { scope: 'col', class: ['session', 'service'].includes(h) ? null : 'num' }, head, h);
	const body = el('tbody', {}, table);
	const seen = new Set();
	for (const s of [...(sc.top_sessions ?? []), ...(sc.least_expensive_sessions ?? [])]) {
		if (seen.has(s.session_id)) continue;
		seen.add(s.session_id);
		const tr = el('tr', { class: 'session-row', 'data-session-id': s.session_id, tabindex: 0 }, body);
		el('td', {}, tr, s.session_id);
		el('td', {}, tr, s.service ?? '');
		el('td', { class: 'num' }, tr, fmtNum(s.calls));
		el('td', { class: 'num' }, tr, fmtNum(s.errors));
		el('td', { class: 'num' }, tr, `${fmtNum(s.input_tokens)} / ${fmtNum(s.output_tokens)}`);
		el('td', { class: 'num' }, tr, fmtUsd(s.cost_usd));
		tr.addEventListener('click', () => onPick(s.session_id));
		tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && onPick(s.session_id));
	}
	container.replaceChildren(table);
}

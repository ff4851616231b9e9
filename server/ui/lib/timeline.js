// timeline.js - a GenAI session (get_session) on a time axis: each call the
// answer lists (the slowest and the most expensive, once each) as a bar
// from its start for its duration, labelled with model, tokens and cost,
// failed calls in red; usage by model below.  Without a session, the
// sessions by cost as a list to pick from.  Used by the session app and
// the console.
import { fmtMs, fmtNum, fmtUsd, htmlEl, isoMs, serviceColor, svgEl } from './draw.js';

const TL_ROW_H = 26;
const TL_LABEL_W = 340;
const TL_AXIS_H = 24;

// The calls of a get_session answer, each once, by start time.
export function sessionCalls(sc) {
	const byId = new Map();
	for (const c of [...(sc.slowest_calls || []), ...(sc.most_expensive_calls || [])]) if (!byId.has(c.span_id)) byId.set(c.span_id, c);
	return [...byId.values()].sort((a, b) => isoMs(a.start) - isoMs(b.start));
}

// Draws sc into container; onCall(call) on a click.  Returns the calls.
export function renderSession(container, sc, { onCall } = {}) {
	const calls = sessionCalls(sc);
	const wrap = htmlEl('div', { class: 'tl' });
	const t0 = isoMs(sc.start);
	const total = Math.max(sc.duration_ms || 0, ...calls.map((c) => isoMs(c.start) - t0 + (c.duration_ms || 0)), 1);
	const width = Math.max(640, container.clientWidth || 900);
	const barW = width - TL_LABEL_W - 16;
	const x = (ms) => TL_LABEL_W + (ms / total) * barW;
	const svg = svgEl('svg', { width, height: TL_AXIS_H + calls.length * TL_ROW_H + 4, class: 'tl-svg', role: 'img', 'aria-label': `session timeline, ${calls.length} calls` }, wrap);
	for (let t = 0; t <= 4; t++) {
		const ms = (total * t) / 4;
		svgEl('line', { x1: x(ms), x2: x(ms), y1: TL_AXIS_H - 4, y2: TL_AXIS_H + calls.length * TL_ROW_H, class: 'wf-tick' }, svg);
		svgEl('text', { x: x(ms), y: 14, class: 'wf-axis', 'text-anchor': t === 0 ? 'start' : t === 4 ? 'end' : 'middle' }, svg, `+${fmtMs(ms)}`);
	}
	calls.forEach((c, i) => {
		const y = TL_AXIS_H + i * TL_ROW_H;
		const g = svgEl('g', { class: 'tl-call' + (c.failed ? ' error' : ''), 'data-span-id': c.span_id, 'data-trace-id': c.trace_id, 'data-model': c.model || '', tabindex: 0 }, svg);
		svgEl('text', { x: 4, y: y + 17, class: 'wf-label' }, g, `${c.model || c.name || '?'} · ${fmtNum(c.input_tokens)} in / ${fmtNum(c.output_tokens)} out`);
		const off = Math.max(0, isoMs(c.start) - t0);
		const bx = x(off), bw = Math.max(3, x(off + (c.duration_ms || 0)) - bx);
		svgEl('rect', { x: bx, y: y + 5, width: bw, height: TL_ROW_H - 10, rx: 2, class: 'bar' + (c.failed ? ' error' : ''), fill: serviceColor(c.model || c.name || ''), stroke: c.failed ? 'var(--sx-bad)' : 'none' }, g);
		const mark = `${fmtMs(c.duration_ms)} · ${fmtUsd(c.cost_usd)}${c.failed ? ' ✖' : ''}`;
		const right = bx + bw + 4 + mark.length * 6.2 > width;
		svgEl('text', { x: right ? bx - 4 : bx + bw + 4, y: y + 17, class: 'wf-mark', 'text-anchor': right ? 'end' : 'start' }, g, mark);
		svgEl('title', {}, g, `${c.service}: ${c.name} (trace ${c.trace_id})`);
		if (onCall) g.addEventListener('click', () => onCall(c));
	});
	const models = sc.genai?.by_model || [];
	if (models.length) {
		const table = htmlEl('table', { class: 'tl-list tl-models' }, wrap);
		const head = htmlEl('tr', {}, htmlEl('thead', {}, table));
		for (const h of ['model', 'calls', 'input tokens', 'output tokens', 'cost', 'P95']) htmlEl('th', {}, head, h);
		const body = htmlEl('tbody', {}, table);
		for (const m of models) {
			const tr = htmlEl('tr', {}, body);
			htmlEl('td', {}, tr, m.model || '?');
			for (const v of [fmtNum(m.calls), fmtNum(m.input_tokens), fmtNum(m.output_tokens), fmtUsd(m.cost_usd), fmtMs(m.p95_ms)]) htmlEl('td', { class: 'num' }, tr, v);
		}
	}
	container.replaceChildren(wrap);
	return calls;
}

// Sessions by cost (get_session without session_id); onPick(session_id).
export function renderSessionList(container, sc, onPick) {
	const table = htmlEl('table', { class: 'tl-list' });
	const head = htmlEl('tr', {}, htmlEl('thead', {}, table));
	for (const h of ['session', 'service', 'calls', 'errors', 'tokens in / out', 'cost']) htmlEl('th', {}, head, h);
	const body = htmlEl('tbody', {}, table);
	const seen = new Set();
	for (const s of [...(sc.top_sessions || []), ...(sc.least_expensive_sessions || [])]) {
		if (seen.has(s.session_id)) continue;
		seen.add(s.session_id);
		const tr = htmlEl('tr', { class: 'session-row', 'data-session-id': s.session_id, tabindex: 0 }, body);
		htmlEl('td', {}, tr, s.session_id);
		htmlEl('td', {}, tr, s.service || '');
		htmlEl('td', { class: 'num' }, tr, fmtNum(s.calls));
		htmlEl('td', { class: 'num' }, tr, fmtNum(s.errors));
		htmlEl('td', { class: 'num' }, tr, `${fmtNum(s.input_tokens)} / ${fmtNum(s.output_tokens)}`);
		htmlEl('td', { class: 'num' }, tr, fmtUsd(s.cost_usd));
		tr.addEventListener('click', () => onPick(s.session_id));
		tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && onPick(s.session_id));
	}
	container.replaceChildren(table);
}

// waterfall.js - a trace as bars on a time axis: get_trace's lines or one
// of query_traces' trace trees.  Service colours, [eBPF]/[OTLP] marks, the
// critical path outlined, async spans hatched and labelled, errors in red
// with a mark, a subtree folds under its caret, runs of like siblings fold
// into their first (expandable), and a click shows a span's attributes in
// the side panel.  Used by the trace app and the console.
import { fmtMs, htmlEl, isoMs, serviceColor, showPanel, svgEl } from './draw.js';

const WF_ROW_H = 22;
const WF_LABEL_W = 330;
const WF_AXIS_H = 24;
const WF_RUN_MIN = 4; // like siblings in a row before they fold into one

// Rows, in the answer's order, from a get_trace structuredContent or one
// query_traces trace ({trace_id, start, duration_ms, spans: tree}).
export function waterfallRows(sc) {
	const rows = [];
	if (Array.isArray(sc.lines)) {
		const t0 = isoMs(sc.start);
		for (const l of sc.lines)
			rows.push({
				id: l.span_id,
				parent: l.parent_span_id || null,
				depth: l.depth || 0,
				service: l.service || '',
				name: l.name || '',
				source: l.source || '',
				also: l.also_seen_by || [],
				offset: Math.max(0, isoMs(l.start) - t0 || 0),
				dur: l.duration_ms || 0,
				self: l.self_ms,
				critical: !!l.critical,
				async: !!l.async,
				error: l.status === 'error' || l.failed === true,
				statusMessage: l.status_message,
				repeat: l.repeat || 1,
				slow: !!l.slow,
				details: l.details,
			});
		return rows;
	}
	const walk = (s, depth, parent) => {
		rows.push({
			id: s.span_id,
			parent,
			depth,
			service: s.service || '',
			name: s.name || '',
			source: s.source || '',
			also: s.also_seen_by || [],
			offset: s.offset_ms || 0,
			dur: s.duration_ms || 0,
			critical: !!s.critical,
			async: !!s.async,
			error: !!(s.error || s.failed || s.status === 'error'),
			statusMessage: s.status_message,
			repeat: s.repeat || 1,
			slow: !!s.slow,
			details: s.details,
		});
		for (const c of s.children || []) walk(c, depth + 1, s.span_id);
	};
	for (const s of sc.spans || []) walk(s, 0, null);
	return rows;
}

const sourceMark = (r) => [r.source, ...r.also].map((s) => (s === 'ebpf' ? '[eBPF]' : s === 'otlp' ? '[OTLP]' : `[${s}]`)).join('');

// Which rows start a run of like siblings (same parent, service and name):
// runs.get(firstIndex) = indexes of the others.
function findRuns(rows) {
	const runs = new Map();
	for (let i = 0; i < rows.length; ) {
		const r = rows[i];
		const same = [i];
		// a sibling run skips over each sibling's subtree
		let j = i + 1;
		while (j < rows.length && rows[j].depth > r.depth) j++;
		while (j < rows.length && rows[j].depth === r.depth && rows[j].parent === r.parent && rows[j].service === r.service && rows[j].name === r.name) {
			same.push(j);
			j++;
			while (j < rows.length && rows[j].depth > r.depth) j++;
		}
		if (same.length >= WF_RUN_MIN) {
			runs.set(i, same.slice(1));
			i = j;
		} else i++;
	}
	return runs;
}

// Draws sc into container (replacing what was there); span details go to
// panel.  Returns the rows.
export function renderWaterfall(container, panel, sc, { keyAttributes = sc.key_attributes || [] } = {}) {
	const rows = waterfallRows(sc);
	const total = Math.max(sc.duration_ms || 0, ...rows.map((r) => r.offset + r.dur), 0.001);
	const attrsById = new Map(keyAttributes.map((k) => [k.span_id, k.attributes]));
	const folded = new Set(); // ids whose subtree is hidden
	const runs = findRuns(rows);
	const runOpen = new Set();
	const view = htmlEl('div', { class: 'wf' });
	container.replaceChildren(view);

	const draw = () => {
		const width = Math.max(640, container.clientWidth || 900);
		const barW = width - WF_LABEL_W - 16;
		const x = (ms) => WF_LABEL_W + (ms / total) * barW;
		const hidden = new Set();
		rows.forEach((r, i) => {
			if (hidden.has(r.id) || (r.parent && (hidden.has(r.parent) || folded.has(r.parent)))) hidden.add(r.id);
			const run = runs.get(i);
			if (run && !runOpen.has(r.id) && !hidden.has(r.id)) for (const k of run) hidden.add(rows[k].id);
		});
		const shown = rows.filter((r) => !hidden.has(r.id));
		const svg = svgEl('svg', { width, height: WF_AXIS_H + shown.length * WF_ROW_H + 4, class: 'wf-svg', role: 'img', 'aria-label': `trace waterfall, ${rows.length} spans` });
		for (let t = 0; t <= 4; t++) {
			const ms = (total * t) / 4;
			svgEl('line', { x1: x(ms), x2: x(ms), y1: WF_AXIS_H - 4, y2: WF_AXIS_H + shown.length * WF_ROW_H, class: 'wf-tick' }, svg);
			svgEl('text', { x: x(ms), y: 14, class: 'wf-axis', 'text-anchor': t === 0 ? 'start' : t === 4 ? 'end' : 'middle' }, svg, fmtMs(ms));
		}
		shown.forEach((r, i) => {
			const y = WF_AXIS_H + i * WF_ROW_H;
			const idx = rows.indexOf(r);
			const g = svgEl('g', { class: 'wf-row', 'data-span-id': r.id, tabindex: 0 }, svg);
			const hasKids = idx + 1 < rows.length && rows[idx + 1].depth > r.depth;
			const run = runs.get(idx);
			let label = `${'  '.repeat(r.depth)}${hasKids ? (folded.has(r.id) ? '▸ ' : '▾ ') : '  '}${r.service}: ${r.name}`;
			if (r.repeat > 1) label += ` ×${r.repeat}`;
			if (run) label += runOpen.has(r.id) ? ' (fold run)' : ` (+${run.length} like it)`;
			const text = svgEl('text', { x: 4, y: y + 15, class: 'wf-label' + (r.error ? ' wf-err-text' : '') }, g);
			text.textContent = label.length > 52 ? label.slice(0, 51) + '…' : label;
			svgEl('title', {}, text, `${r.service}: ${r.name}`);
			const bx = x(r.offset);
			const bw = Math.max(2, x(r.offset + r.dur) - bx);
			const cls = ['bar', r.critical ? 'critical' : '', r.async ? 'async' : '', r.error ? 'error' : ''].filter(Boolean).join(' ');
			svgEl('rect', { x: bx, y: y + 4, width: bw, height: WF_ROW_H - 8, rx: 2, fill: r.async ? 'url(#wf-hatch)' : serviceColor(r.service), stroke: serviceColor(r.service), class: cls, 'data-span-id': r.id, 'data-critical': r.critical ? 1 : 0, 'data-async': r.async ? 1 : 0, 'data-error': r.error ? 1 : 0, 'data-source': r.source }, g);
			const marks = `${sourceMark(r)}${r.async ? ' async' : ''}${r.error ? ' ✖' : ''} ${fmtMs(r.dur)}`;
			// after the bar, else inside it, else before it
			const textW = marks.length * 6.2;
			const where = bx + bw + 4 + textW <= width ? 'after' : bw >= textW + 8 ? 'inside' : 'before';
			const tx = where === 'after' ? bx + bw + 4 : where === 'inside' ? bx + bw - 4 : bx - 4;
			svgEl('text', { x: tx, y: y + 15, class: 'wf-mark' + (where === 'inside' ? ' wf-mark-in' : '') + (r.error ? ' wf-err-text' : ''), 'text-anchor': where === 'after' ? 'start' : 'end' }, g, marks);
			g.addEventListener('click', (ev) => {
				if (ev.offsetX < WF_LABEL_W && (hasKids || run)) {
					if (run) runOpen.has(r.id) ? runOpen.delete(r.id) : runOpen.add(r.id);
					else folded.has(r.id) ? folded.delete(r.id) : folded.add(r.id);
					draw();
				}
				showSpan(panel, r, attrsById.get(r.id));
			});
			g.addEventListener('keydown', (ev) => {
				if (ev.key === 'Enter') showSpan(panel, r, attrsById.get(r.id));
			});
		});
		const defs = svgEl('defs', {}, svg);
		const pat = svgEl('pattern', { id: 'wf-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
		svgEl('rect', { width: 6, height: 6, fill: 'var(--sx-bg)' }, pat);
		svgEl('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: 'var(--sx-muted)', 'stroke-width': 3 }, pat);
		view.replaceChildren(svg);
	};
	draw();
	// the side panel, a resized window: the axis follows the room left
	let drawnWidth = container.clientWidth;
	new ResizeObserver(() => {
		if (container.clientWidth !== drawnWidth && container.contains(view)) {
			drawnWidth = container.clientWidth;
			draw();
		}
	}).observe(container);
	return rows;
}

function showSpan(panel, r, attrs) {
	if (!panel) return;
	showPanel(panel, `${r.service}: ${r.name}`, [
		['span', r.id],
		['parent', r.parent],
		['source', sourceMark(r)],
		['start', `+${fmtMs(r.offset)}`],
		['duration', fmtMs(r.dur)],
		['self time', r.self !== undefined ? fmtMs(r.self) : null],
		['repeated', r.repeat > 1 ? `${r.repeat} times` : null],
		['critical path', r.critical ? 'yes' : 'no'],
		['async', r.async ? 'yes' : null],
		['error', r.error ? r.statusMessage || 'yes' : null],
		...Object.entries(r.details || {}),
		...Object.entries(attrs || {}),
	]);
}

// query_traces' traces as a list: one row per trace, a bar for its
// duration against the slowest; onPick(trace_id) on a click.
export function renderTraceList(container, sc, onPick) {
	const traces = sc.traces || [];
	const longest = Math.max(...traces.map((t) => t.duration_ms || 0), 0.001);
	const table = htmlEl('table', { class: 'tl-list' });
	const head = htmlEl('tr', {}, htmlEl('thead', {}, table));
	for (const h of ['start', 'request', 'spans', 'duration', '']) htmlEl('th', {}, head, h);
	const body = htmlEl('tbody', {}, table);
	for (const t of traces) {
		const root = (t.spans || [])[0] || {};
		const tr = htmlEl('tr', { class: 'trace-row', 'data-trace-id': t.trace_id, tabindex: 0 }, body);
		htmlEl('td', {}, tr, (t.start || '').replace('T', ' ').slice(0, 23));
		htmlEl('td', { title: t.trace_id }, tr, `${root.service || '?'}: ${root.name || t.trace_id.slice(0, 8)}`);
		htmlEl('td', { class: 'num' }, tr, String(t.span_count ?? '-'));
		htmlEl('td', { class: 'num' }, tr, fmtMs(t.duration_ms));
		const bar = htmlEl('td', { class: 'tl-bar' }, tr);
		htmlEl('span', { style: `width:${Math.max(1, (100 * (t.duration_ms || 0)) / longest)}%;background:${serviceColor(root.service || '')}` }, bar);
		tr.addEventListener('click', () => onPick(t.trace_id));
		tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && onPick(t.trace_id));
	}
	container.replaceChildren(table);
}

// waterfall.js - one trace as bars on a time axis, drawn as SVG from
// get_trace's structuredContent (its `lines`; one of query_traces' span
// trees works too): a colour per service, [eBPF]/[OTLP] marks, the critical
// path outlined, async spans hatched and marked, errors in red, subtrees
// folded under their caret, runs of like siblings folded into their first
// row (expandable), and a span's fields and attributes in a side panel;
// with opts.loadSpan, the span whole (every attribute, its resource, events
// and links: get_trace with a span_id) fills the panel once it comes.
// Used by the console (server/ui/console) and the MCP Apps; no fetches of
// its own.
// renderTraceList draws query_traces' traces as rows to pick from.
import { detailList, el, fmtMs, isoMs, serviceColor, showDetails, svg } from './dom.js';

const WF_ROW_H = 22;
const WF_LABEL_W = 340;
const WF_AXIS_H = 26;
const WF_RUN_MIN = 5; // like siblings in a row before they fold into one row
const WF_TICKS = 5;

// The rows, in the answer's order: {id, parent, depth, service, name,
// source, also, offset, dur, self, critical, async, error, message,
// repeat, details}.
export function waterfallRows(sc) {
	const rows = [];
	const row = (s, depth, parent, offset) => ({
		id: s.span_id,
		parent: parent ?? null,
		depth,
		service: s.service ?? '',
		name: s.name ?? '',
		source: s.source ?? '',
		also: s.also_seen_by ?? [],
		offset,
		dur: s.duration_ms ?? 0,
		self: s.self_ms,
		critical: !!s.critical,
		async: !!s.async,
		error: s.status === 'error' || s.failed === true || s.error === true,
		message: s.status_message ?? null,
		repeat: s.repeat ?? 1,
		slow: !!s.slow,
		details: s.details ?? s.attributes ?? null,
		events: s.events ?? null,
	});
	if (Array.isArray(sc.lines)) {
		const t0 = isoMs(sc.start);
		for (const l of sc.lines) rows.push(row(l, l.depth ?? 0, l.parent_span_id, Math.max(0, isoMs(l.start) - t0 || 0)));
		return rows;
	}
	const walk = (s, depth, parent) => {
		rows.push(row(s, depth, parent, s.offset_ms ?? 0));
		for (const c of s.children ?? []) walk(c, depth + 1, s.span_id);
	};
	for (const s of sc.spans ?? []) walk(s, 0, null);
	return rows;
}

export const sourceMarks = (r) =>
	[r.source, ...r.also]
		.filter(Boolean)
		.map((s) => (s === 'ebpf' ? '[eBPF]' : s === 'otlp' ? '[OTLP]' : `[${s}]`))
		.join('');

// For each row that starts a run of like siblings (same parent, service
// and name, at least WF_RUN_MIN in a row), the indexes of the others.
function findRuns(rows) {
	const runs = new Map();
	const end = (i) => {
		let j = i + 1;
		while (j < rows.length && rows[j].depth > rows[i].depth) j++;
		return j;
	};
	for (let i = 0; i < rows.length; ) {
		const r = rows[i];
		const same = [];
		let j = end(i);
		while (j < rows.length && rows[j].depth === r.depth && rows[j].parent === r.parent && rows[j].service === r.service && rows[j].name === r.name) {
			same.push(j);
			j = end(j);
		}
		if (same.length + 1 >= WF_RUN_MIN) {
			runs.set(i, same);
			i = j;
		} else i++;
	}
	return runs;
}

const countNote = (shown, total) => (total > shown ? ` (${total}, the first ${shown} shown)` : ` (${total})`);

// The whole span (get_trace's answer with a span_id) into box: its
// attributes, resource, events (offset from the span's start) and links.
function showWhole(box, w) {
	box.replaceChildren();
	if (!w || w.found === false || !w.span) {
		box.textContent = 'the span is not in the store';
		return;
	}
	const sp = w.span;
	const pairs = (title, rows, total) => {
		el('h4', {}, box, `${title}${countNote(rows.length, total ?? rows.length)}`);
		detailList(box, rows.map((a) => [a.key, a.value]));
	};
	if (sp.scope) el('p', { class: 'wf-scope' }, box, `scope ${sp.scope}`);
	pairs('Attributes', w.attributes ?? [], sp.attributes_total);
	pairs('Resource', w.resource ?? [], sp.resource_total);
	const events = w.events ?? [];
	el('h4', {}, box, `Events${countNote(events.length, sp.events_total ?? events.length)}`);
	const ul = el('ul', { class: 'wf-events' }, box);
	for (const e of events) {
		const li = el('li', {}, ul);
		el('b', {}, li, `${e.offset_ms !== null && e.offset_ms !== undefined ? `+${fmtMs(e.offset_ms)} ` : ''}${e.name ?? '(unnamed)'}`);
		detailList(li, Object.entries(e.attributes ?? {}));
	}
	if (sp.links_total) {
		el('h4', {}, box, `Links${countNote((w.links ?? []).length, sp.links_total)}`);
		const ll = el('ul', { class: 'wf-links' }, box);
		for (const l of w.links ?? []) el('li', {}, ll, `trace ${l.trace_id} span ${l.span_id}${Object.keys(l.attributes ?? {}).length ? ` ${JSON.stringify(l.attributes)}` : ''}`);
	}
}

// Draws sc into container (replacing its content): a toolbar, the SVG and
// a side panel.  opts.keyAttributes defaults to sc.key_attributes;
// opts.onSelect(row) is called when a span is picked; opts.loadSpan(spanId)
// returns a promise of get_trace's answer for that span (span_id given).  Returns {rows,
// expandAll(), select(spanId)}.
export function renderWaterfall(container, sc, opts = {}) {
	const rows = waterfallRows(sc);
	const total = Math.max(sc.duration_ms ?? 0, ...rows.map((r) => r.offset + r.dur), 0.001);
	const attrs = new Map();
	const whole = new Map(); // span id -> promise of its whole answer
	for (const k of opts.keyAttributes ?? sc.key_attributes ?? []) attrs.set(k.span_id, { ...attrs.get(k.span_id), ...k.attributes });
	const hasKids = rows.map((r, i) => i + 1 < rows.length && rows[i + 1].depth > r.depth);
	const runs = findRuns(rows);
	const folded = new Set(); // row indexes whose subtree is hidden
	const runOpen = new Set(); // run starts shown expanded
	let selected = null;

	const root = el('div', { class: 'wf' });
	const bar = el('div', { class: 'wf-toolbar' }, root);
	el('span', { class: 'wf-sum' }, bar, `${rows.length} spans · ${fmtMs(total)}${sc.error_spans ? ` · ${sc.error_spans} failed` : ''}`);
	// get_trace keeps to the gateway's answer size and counts the rest
	if (sc.spans_not_shown) el('span', { class: 'wf-cut' }, bar, `${sc.spans_not_shown} more spans not shown (the answer is full: [tools] max_answer_bytes)`);
	el('span', { class: 'wf-key wf-key-crit' }, bar, 'critical path');
	el('span', { class: 'wf-key wf-key-async' }, bar, 'async');
	el('span', { class: 'wf-key wf-key-err' }, bar, 'error');
	const expandBtn = el('button', { type: 'button', class: 'wf-expand' }, bar, 'Expand all');
	const body = el('div', { class: 'wf-body' }, root);
	const main = el('div', { class: 'wf-main' }, body);
	const panel = el('aside', { class: 'wf-panel', 'aria-label': 'span details', hidden: true }, body);
	container.replaceChildren(root);

	const memberOf = new Map(); // a folded run's member -> its first row
	for (const [i, run] of runs) for (const k of run) memberOf.set(k, i);
	const lastOf = (k) => {
		let j = k + 1;
		while (j < rows.length && rows[j].depth > rows[k].depth) j++;
		return j;
	};
	const visible = () => {
		const out = [];
		for (let i = 0; i < rows.length; ) {
			const start = memberOf.get(i);
			if (start !== undefined && !runOpen.has(start)) {
				i = lastOf(i);
				continue;
			}
			out.push(i);
			i = folded.has(i) ? lastOf(i) : i + 1;
		}
		return out;
	};

	const showSpan = (i) => {
		const r = rows[i];
		selected = i;
		for (const g of main.querySelectorAll('.wf-row.sel')) g.classList.remove('sel');
		main.querySelector(`.wf-row[data-index="${i}"]`)?.classList.add('sel');
		showDetails(panel, `${r.service}: ${r.name}`, [
			['span id', r.id],
			['parent', r.parent],
			['source', sourceMarks(r)],
			['start', `+${fmtMs(r.offset)}`],
			['duration', fmtMs(r.dur)],
			['self time', r.self !== undefined && r.self !== null ? fmtMs(r.self) : null],
			['repeated', r.repeat > 1 ? `${r.repeat} times` : null],
			['critical path', r.critical ? 'yes' : 'no'],
			['async', r.async ? 'yes' : null],
			['status', r.error ? `error${r.message ? `: ${r.message}` : ''}` : null],
			...Object.entries(r.details ?? {}),
			...Object.entries(attrs.get(r.id) ?? {}),
		]);
		if (r.events?.length) {
			el('h4', {}, panel, 'Events');
			const ul = el('ul', { class: 'wf-events' }, panel);
			for (const e of r.events) el('li', {}, ul, `${e.name ?? ''}${e.attributes ? ' ' + JSON.stringify(e.attributes) : ''}`);
		}
		if (opts.loadSpan && r.id) {
			if (!whole.has(r.id)) whole.set(r.id, Promise.resolve().then(() => opts.loadSpan(r.id)));
			const box = el('div', { class: 'wf-whole' }, panel, 'reading the span…');
			whole.get(r.id).then(
				(w) => selected === i && showWhole(box, w),
				(e) => {
					whole.delete(r.id);
					if (selected === i) box.textContent = `span not read: ${e?.message ?? e}`;
				},
			);
		}
		const close = el('button', { type: 'button', class: 'wf-close', 'aria-label': 'close span details' }, null, '×');
		close.addEventListener('click', () => {
			panel.hidden = true;
			main.querySelector(`.wf-row[data-index="${i}"]`)?.focus();
		});
		panel.prepend(close);
		opts.onSelect?.(r);
	};

	const toggle = (i, open = null) => {
		if (hasKids[i]) {
			if (open ?? folded.has(i)) folded.delete(i);
			else folded.add(i);
		} else if (runs.has(i)) {
			if (open ?? !runOpen.has(i)) runOpen.add(i);
			else runOpen.delete(i);
		}
		draw(i);
	};

	function draw(focusIndex = null) {
		const shown = visible();
		const width = Math.max(720, main.clientWidth || container.clientWidth || 960);
		const barW = width - WF_LABEL_W - 150;
		const x = (ms) => WF_LABEL_W + (ms / total) * barW;
		const height = WF_AXIS_H + shown.length * WF_ROW_H + 6;
		const s = svg('svg', { class: 'wf-svg', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': `trace waterfall: ${rows.length} spans over ${fmtMs(total)}` });
		const defs = svg('defs', {}, s);
		const pat = svg('pattern', { id: 'wf-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
		svg('rect', { width: 6, height: 6, class: 'wf-hatch-bg' }, pat);
		svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'wf-hatch-line' }, pat);
		for (let t = 0; t <= WF_TICKS; t++) {
			const ms = (total * t) / WF_TICKS;
			svg('line', { x1: x(ms), x2: x(ms), y1: WF_AXIS_H - 6, y2: height, class: 'wf-tick' }, s);
			svg('text', { x: x(ms), y: 16, class: 'wf-axis', 'text-anchor': t === 0 ? 'start' : t === WF_TICKS ? 'end' : 'middle' }, s, fmtMs(ms));
		}
		shown.forEach((i, k) => {
			const r = rows[i];
			const y = WF_AXIS_H + k * WF_ROW_H;
			const run = runs.get(i);
			const cls = ['wf-row', r.critical && 'crit', r.async && 'async', r.error && 'err', selected === i && 'sel'].filter(Boolean).join(' ');
			const g = svg('g', { class: cls, 'data-index': i, 'data-span-id': r.id, 'data-source': r.source, tabindex: 0, role: 'button', 'aria-roledescription': r.critical ? 'span on the critical path' : 'span' }, s);
			svg('rect', { x: 0, y, width, height: WF_ROW_H, class: 'wf-hit' }, g);
			if (r.critical) svg('rect', { x: 0, y: y + 3, width: 3, height: WF_ROW_H - 6, class: 'wf-crit-mark' }, g);
			const indent = 8 + Math.min(r.depth, 16) * 12;
			if (hasKids[i] || run) {
				const open = hasKids[i] ? !folded.has(i) : runOpen.has(i);
				const c = svg('text', { x: indent - 2, y: y + 15, class: 'wf-caret', 'data-caret': i }, g, open ? '▾' : '▸');
				c.addEventListener('click', (ev) => {
					ev.stopPropagation();
					toggle(i);
				});
			}
			let label = `${r.service}: ${r.name}`;
			if (r.repeat > 1) label += ` ×${r.repeat}`;
			const maxChars = Math.floor((WF_LABEL_W - indent - 16) / 6.6);
			const lt = svg('text', { x: indent + 10, y: y + 15, class: 'wf-label' }, g, label.length > maxChars ? label.slice(0, maxChars - 1) + '…' : label);
			svg('title', {}, lt, label);
			if (run) {
				const more = svg('text', { x: WF_LABEL_W - 6, y: y + 15, class: 'wf-run', 'text-anchor': 'end', 'data-run': i }, g, runOpen.has(i) ? 'fold' : `+${run.length}`);
				more.addEventListener('click', (ev) => {
					ev.stopPropagation();
					runOpen.has(i) ? runOpen.delete(i) : runOpen.add(i);
					draw(i);
				});
			}
			const bx = x(r.offset);
			const bw = Math.max(1.5, x(r.offset + r.dur) - bx);
			svg('rect', { x: bx, y: y + 4, width: bw, height: WF_ROW_H - 8, rx: 2, class: 'wf-bar', fill: r.async ? 'url(#wf-hatch)' : serviceColor(r.service), stroke: serviceColor(r.service), 'data-span-id': r.id }, g);
			const marks = `${sourceMarks(r)}${r.async ? ' async' : ''}${r.error ? ' ✖' : ''} ${fmtMs(r.dur)}`;
			const right = bx + bw + 4 + marks.length * 6 > width;
			svg('text', { x: right ? bx - 4 : bx + bw + 4, y: y + 15, class: 'wf-mark', 'text-anchor': right ? 'end' : 'start' }, g, marks);
			g.addEventListener('click', () => showSpan(i));
			g.addEventListener('keydown', (ev) => {
				if (ev.key === 'Enter' || ev.key === ' ') {
					ev.preventDefault();
					showSpan(i);
				} else if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') {
					ev.preventDefault();
					toggle(i, ev.key === 'ArrowRight');
				} else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
					ev.preventDefault();
					(ev.key === 'ArrowDown' ? g.nextElementSibling : g.previousElementSibling)?.focus?.();
				}
			});
		});
		main.replaceChildren(s);
		if (focusIndex !== null) main.querySelector(`.wf-row[data-index="${focusIndex}"]`)?.focus();
	}

	expandBtn.addEventListener('click', () => {
		folded.clear();
		for (const i of runs.keys()) runOpen.add(i);
		draw();
	});
	draw();
	return {
		rows,
		expandAll: () => expandBtn.click(),
		select: (id) => {
			const i = rows.findIndex((r) => r.id === id);
			if (i >= 0) showSpan(i);
		},
	};
}

// query_traces' traces as a table: a row per trace with a bar for its
// duration against the slowest; onPick(trace_id) on a click or Enter.
export function renderTraceList(container, sc, onPick) {
	const traces = sc.traces ?? [];
	const longest = Math.max(...traces.map((t) => t.duration_ms ?? 0), 0.001);
	const table = el('table', { class: 'sx-table wf-list' });
	const head = el('tr', {}, el('thead', {}, table));
	for (const h of ['start', 'request', 'spans', 'duration', '']) el('th', { scope: 'col', class: h === 'spans' || h === 'duration' ? 'num' : null }, head, h);
	const body = el('tbody', {}, table);
	for (const t of traces) {
		const root = t.spans?.[0] ?? {};
		const tr = el('tr', { class: 'trace-row', 'data-trace-id': t.trace_id, tabindex: 0 }, body);
		el('td', {}, tr, (t.start ?? '').replace('T', ' ').slice(0, 23));
		el('td', { title: t.trace_id }, tr, `${root.service ?? '?'}: ${root.name ?? t.trace_id.slice(0, 8)}`);
		el('td', { class: 'num' }, tr, String(t.span_count ?? '-'));
		el('td', { class: 'num' }, tr, fmtMs(t.duration_ms));
		const bar = el('span', { class: 'wf-list-bar' }, el('td', { class: 'wf-list-cell' }, tr));
		bar.style.width = `${Math.max(1, (100 * (t.duration_ms ?? 0)) / longest)}%`;
		bar.style.background = serviceColor(root.service ?? '');
		tr.addEventListener('click', () => onPick(t.trace_id));
		tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && onPick(t.trace_id));
	}
	container.replaceChildren(table);
}

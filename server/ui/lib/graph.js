// graph.js - get_mesh_graph's nodes and traffic as an SVG service graph,
// laid out in layers of our own (longest path from the callers, then one
// barycentre pass to uncross edges).  Nodes coloured by health; databases
// (SQL targets) drawn as cylinders, queues (async targets) as
// parallelograms, external APIs (leaf nodes) as hexagons; edges labelled
// rate / errors / P95, async ones dashed.  The edge labels lie in a layer
// above the edges and nodes, each where it overlaps no node and no label
// placed before; one with no free place shows over the rest while its edge
// (or the label) is hovered or focused.  Used by the graph app and the
// console; no fetches: clicks go to onNode(node) and onEdge(edge).
import { el, fmtMs, healthClass, svg } from './dom.js';

const GR_COL_W = 250;
const GR_ROW_H = 104;
const GR_PAD = 100; // half a long node label
// where along an edge its label may lie (a fraction of the curve), nearest
// the middle first: the finer the steps, the more labels find a free spot
const GR_LABEL_AT = Array.from({ length: 17 }, (_, i) => 0.1 + i * 0.05).sort((a, b) => Math.abs(a - 0.55) - Math.abs(b - 0.55));
const GR_R = 18;

// The service name a node stands for: "shop/cart (1.4.0)" -> "cart".
export const nodeService = (name) => String(name).replace(/^[^/ ]+\//, '').replace(/ \([^)]*\)$/, '');

// Each node's kind: "db", "queue", "external" or "service".
function nodeKinds(nodes, edges) {
	const kind = new Map(nodes.map((n) => [n.name, n.leaf ? 'external' : 'service']));
	for (const e of edges) {
		if (e.protocol === 'sql' || e.protocol === 'db' || e.protocol === 'redis') kind.set(e.target, 'db');
		else if ((e.async || e.protocol === 'messaging' || e.protocol === 'kafka') && kind.get(e.target) !== 'db') kind.set(e.target, 'queue');
	}
	return kind;
}

// {name: {layer, pos}}: layers by longest path (cycles cut at a revisit),
// positions by the mean position of the callers, one pass left to right.
export function layoutGraph(nodes, edges) {
	const names = nodes.map((n) => n.name);
	const preds = new Map(names.map((n) => [n, []]));
	for (const e of edges) if (preds.has(e.target) && preds.has(e.source) && e.source !== e.target) preds.get(e.target).push(e.source);
	const layer = new Map();
	const visiting = new Set();
	const depth = (n) => {
		if (layer.has(n)) return layer.get(n);
		if (visiting.has(n)) return 0;
		visiting.add(n);
		let d = 0;
		for (const p of preds.get(n)) d = Math.max(d, depth(p) + 1);
		visiting.delete(n);
		layer.set(n, d);
		return d;
	};
	names.forEach(depth);
	const layers = [];
	for (const n of [...names].sort()) (layers[layer.get(n)] ||= []).push(n);
	const pos = new Map();
	layers.forEach((col, li) => {
		if (li > 0) {
			const bary = (n) => {
				const ps = preds.get(n).filter((p) => pos.has(p));
				return ps.length ? ps.reduce((s, p) => s + pos.get(p), 0) / ps.length : Infinity;
			};
			col.sort((a, b) => bary(a) - bary(b) || a.localeCompare(b));
		}
		col.forEach((n, i) => pos.set(n, i));
	});
	const out = {};
	for (const n of names) out[n] = { layer: layer.get(n), pos: pos.get(n), layerSize: layers[layer.get(n)].length };
	return { at: out, layers: layers.length, rows: Math.max(...layers.map((c) => c.length), 1) };
}

function edgeLabel(e) {
	// a rate that rounds to nothing says less than the count
	const rate = e.throughput && !/^0\.00 /.test(e.throughput) ? e.throughput : `${e.requests} req`;
	const err = e.requests ? `${((100 * (e.errors || 0)) / e.requests).toFixed(1)}% err` : '0% err';
	return `${rate} · ${err} · P95 ${fmtMs(e.p95_ms)}`;
}

// The point at t of a cubic Bézier curve.
const bez = (t, a, b, c, d) => (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t * t * c + t ** 3 * d;

function drawNode(g, kind, x, y) {
	const a = { class: 'gr-shape' };
	if (kind === 'db') {
		svg('path', { ...a, d: `M${x - 16},${y - 12} v24 a16,6 0 0 0 32,0 v-24 a16,6 0 0 0 -32,0 a16,6 0 0 0 32,0` }, g);
	} else if (kind === 'queue') {
		svg('path', { ...a, d: `M${x - 20},${y + 12} L${x - 12},${y - 12} L${x + 20},${y - 12} L${x + 12},${y + 12} Z` }, g);
	} else if (kind === 'external') {
		const pts = [0, 60, 120, 180, 240, 300].map((deg) => `${x + 19 * Math.cos((deg * Math.PI) / 180)},${y + 19 * Math.sin((deg * Math.PI) / 180)}`);
		svg('polygon', { ...a, points: pts.join(' ') }, g);
	} else svg('circle', { ...a, cx: x, cy: y, r: GR_R }, g);
}

// Draws sc into container (replacing its content), with a legend; onNode(node)
// and onEdge(edge) on a click or Enter.  Returns {nodes: Map name ->
// element, edges: [element]}.
export function renderGraph(container, sc, { onNode, onEdge } = {}) {
	const nodes = sc.nodes || [];
	const edges = (sc.traffic || []).filter((e) => nodes.some((n) => n.name === e.source) && nodes.some((n) => n.name === e.target));
	const { at, layers, rows } = layoutGraph(nodes, edges);
	const kind = nodeKinds(nodes, edges);
	const width = GR_PAD * 2 + Math.max(0, layers - 1) * GR_COL_W + 120;
	const height = GR_PAD * 2 + Math.max(0, rows - 1) * GR_ROW_H;
	const xy = (n) => {
		const p = at[n];
		return [GR_PAD + p.layer * GR_COL_W, GR_PAD + (p.pos + (rows - p.layerSize) / 2) * GR_ROW_H];
	};
	const root = el('div', { class: 'gr' });
	const s = svg('svg', { width: '100%', viewBox: `0 0 ${width} ${height}`, class: 'gr-svg', role: 'group', 'aria-label': `service graph, ${nodes.length} nodes, ${edges.length} edges` }, root);
	s.style.maxWidth = `${width}px`; // scaled down to the room there is, never up (CSSOM: no style attribute under the console's CSP)
	const defs = svg('defs', {}, s);
	for (const h of ['ok', 'warn', 'bad', 'none']) {
		const m = svg('marker', { id: `gr-arrow-${h}`, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
		svg('path', { d: 'M0,0 L10,5 L0,10 z', class: `gr-arrowhead h-${h}` }, m);
	}
	const edgeEls = [];
	// boxes of the nodes and their names, then of the edge labels placed
	const taken = nodes.map((n) => {
		const [x, y] = xy(n.name);
		return { x: x - Math.max(GR_R, n.name.length * 3.2), y: y - GR_R, w: Math.max(2 * GR_R, n.name.length * 6.4), h: 2 * GR_R + 18 };
	});
	const eg = svg('g', { class: 'gr-edges' }, s);
	const ng = svg('g', { class: 'gr-nodes' }, s);
	const lg = svg('g', { class: 'gr-labels' }, s);
	const crowded = []; // drawn last, so that one shown lies over the others
	for (const e of edges) {
		const [x1, y1] = xy(e.source);
		const [x2, y2] = xy(e.target);
		const back = x2 <= x1;
		const sx = x1 + GR_R + 2;
		const tx = x2 - GR_R - 4;
		const bend = back ? 60 : Math.max(30, (tx - sx) / 2);
		const c = back ? [x1, y1 + GR_R, x1, y1 + GR_R + bend, x2, y2 + GR_R + bend, x2, y2 + GR_R + 3] : [sx, y1, sx + bend, y1, tx - bend, y2, tx, y2];
		const d = `M${c[0]},${c[1]} C${c[2]},${c[3]} ${c[4]},${c[5]} ${c[6]},${c[7]}`;
		const h = healthClass(e.health);
		const g = svg('g', { class: `gr-edge h-${h}${e.async ? ' async' : ''}`, 'data-source': e.source, 'data-target': e.target, 'data-protocol': e.protocol, tabindex: 0, role: 'link' }, eg);
		svg('path', { d, class: 'gr-line', 'marker-end': `url(#gr-arrow-${h})` }, g);
		svg('path', { d, class: 'gr-hit' }, g);
		// just above or below the curve where it overlaps no label or node
		// placed before
		const text = edgeLabel(e);
		const lw = text.length * 6.2 + 4; // 10.5 px text, with room to spare
		const lh = 15; // its ascent and descent
		let box = null;
		for (const t of GR_LABEL_AT)
			for (const dy of [-2 - lh, 2]) {
				const b = { x: bez(t, c[0], c[2], c[4], c[6]) - lw / 2, y: bez(t, c[1], c[3], c[5], c[7]) + dy, w: lw, h: lh };
				if (!box && !taken.some((o) => b.x < o.x + o.w && o.x < b.x + b.w && b.y < o.y + o.h && o.y < b.y + b.h)) box = b;
			}
		if (box) taken.push(box);
		const lx = box ? box.x + lw / 2 : bez(0.6, c[0], c[2], c[4], c[6]);
		const ly = box ? box.y + lh - 4 : bez(0.6, c[1], c[3], c[5], c[7]) - 4; // the baseline
		const label = svg('text', { x: lx, y: ly, class: `gr-edge-label${box ? '' : ' crowded'}`, 'text-anchor': 'middle', 'data-source': e.source, 'data-target': e.target });
		if (box) lg.appendChild(label);
		else crowded.push(label);
		const title = `${e.source} → ${e.target} (${e.protocol}${e.async ? ', async' : ''}): ${text}`;
		svg('title', {}, g, title);
		g.setAttribute('aria-label', title);
		label.textContent = text;
		// a crowded label shows while its edge or itself is hovered or focused
		const on = new Set();
		const show = (why, yes) => {
			if (yes) on.add(why);
			else on.delete(why);
			label.classList.toggle('show', on.size > 0);
		};
		for (const [node, why] of [
			[g, 'edge'],
			[label, 'label'],
		]) {
			node.addEventListener('mouseenter', () => show(why, true));
			node.addEventListener('mouseleave', () => show(why, false));
		}
		g.addEventListener('focus', () => show('focus', true));
		g.addEventListener('blur', () => show('focus', false));
		if (onEdge) {
			for (const node of [g, label]) node.addEventListener('click', () => onEdge(e));
			g.addEventListener('keydown', (ev) => ev.key === 'Enter' && onEdge(e));
		}
		edgeEls.push(g);
	}
	for (const label of crowded) lg.appendChild(label);
	const nodeEls = new Map();
	for (const n of nodes) {
		const [x, y] = xy(n.name);
		const k = kind.get(n.name);
		const g = svg('g', { class: `gr-node kind-${k} h-${healthClass(n.health)}`, 'data-name': n.name, 'data-service': nodeService(n.name), 'data-kind': k, 'data-health': n.health || 'NA', tabindex: 0, role: 'link' }, ng);
		drawNode(g, k, x, y);
		svg('text', { x, y: y + GR_R + 14, class: 'gr-node-label', 'text-anchor': 'middle' }, g, n.name);
		svg('title', {}, g, `${n.name}: ${n.health || 'no health'}`);
		if (onNode) {
			g.addEventListener('click', () => onNode(n));
			g.addEventListener('keydown', (ev) => ev.key === 'Enter' && onNode(n));
		}
		nodeEls.set(n.name, g);
	}
	const legend = el('p', { class: 'gr-legend' }, root);
	for (const [c, t] of [
		['h-ok', 'healthy'],
		['h-warn', 'degraded'],
		['h-bad', 'failing'],
		['h-none', 'no health'],
	])
		el('span', { class: `gr-key ${c}` }, legend, t);
	el('span', {}, legend, 'cylinder: database · parallelogram: queue · hexagon: external API · dashed: async · a crowded edge shows its label on hover or focus');
	container.replaceChildren(root);
	return { nodes: nodeEls, edges: edgeEls };
}

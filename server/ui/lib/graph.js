// graph.js - get_mesh_graph's nodes and traffic as an SVG service graph,
// laid out in layers of our own (longest path from the callers, then one
// barycentre pass to uncross edges).  Nodes coloured by health; databases
// (SQL targets) drawn as cylinders, queues (async targets) as
// parallelograms, external APIs (leaf nodes) as hexagons; edges labelled
// rate / errors / P95, async ones dashed.  Used by the graph app and the
// console.
import { fmtMs, healthColor, svgEl } from './draw.js';

const GR_COL_W = 230;
const GR_ROW_H = 96;
const GR_PAD = 100; // half a long node label
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

function drawNode(g, kind, x, y, fill) {
	const a = { fill, class: 'gr-shape', stroke: 'var(--sx-fg)', 'stroke-width': 1.2 };
	if (kind === 'db') {
		svgEl('path', { ...a, d: `M${x - 16},${y - 12} v24 a16,6 0 0 0 32,0 v-24 a16,6 0 0 0 -32,0 a16,6 0 0 0 32,0` }, g);
	} else if (kind === 'queue') {
		svgEl('path', { ...a, d: `M${x - 20},${y + 12} L${x - 12},${y - 12} L${x + 20},${y - 12} L${x + 12},${y + 12} Z` }, g);
	} else if (kind === 'external') {
		const pts = [0, 60, 120, 180, 240, 300].map((deg) => `${x + 19 * Math.cos((deg * Math.PI) / 180)},${y + 19 * Math.sin((deg * Math.PI) / 180)}`);
		svgEl('polygon', { ...a, points: pts.join(' ') }, g);
	} else svgEl('circle', { ...a, cx: x, cy: y, r: GR_R }, g);
}

// Draws sc into container; onNode(node) and onEdge(edge) on clicks.
// Returns {nodes: Map name -> element, edges: [element]}.
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
	// scaled down to the room there is, never up
	const svg = svgEl('svg', { width: '100%', style: `max-width:${width}px`, viewBox: `0 0 ${width} ${height}`, class: 'gr-svg', role: 'img', 'aria-label': `service graph, ${nodes.length} nodes, ${edges.length} edges` });
	const defs = svgEl('defs', {}, svg);
	for (const h of ['HEALTHY', 'DEGRADED', 'FAILURE', 'NA']) {
		const m = svgEl('marker', { id: `gr-arrow-${h}`, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
		svgEl('path', { d: 'M0,0 L10,5 L0,10 z', fill: healthColor(h) }, m);
	}
	const edgeEls = [];
	// boxes of the nodes and their labels, then of the edge labels placed
	const taken = nodes.map((n) => {
		const [x, y] = xy(n.name);
		return { x: x - Math.max(GR_R, n.name.length * 3.2), y: y - GR_R, w: Math.max(2 * GR_R, n.name.length * 6.4), h: 2 * GR_R + 18 };
	});
	const eg = svgEl('g', { class: 'gr-edges' }, svg);
	for (const e of edges) {
		const [x1, y1] = xy(e.source);
		const [x2, y2] = xy(e.target);
		const back = x2 <= x1;
		const sx = x1 + GR_R + 2, tx = x2 - GR_R - 4;
		const bend = back ? 60 : Math.max(30, (tx - sx) / 2);
		const c = back ? [x1, y1 + GR_R, x1, y1 + GR_R + bend, x2, y2 + GR_R + bend, x2, y2 + GR_R + 3] : [sx, y1, sx + bend, y1, tx - bend, y2, tx, y2];
		const d = `M${c[0]},${c[1]} C${c[2]},${c[3]} ${c[4]},${c[5]} ${c[6]},${c[7]}`;
		const h = ['HEALTHY', 'DEGRADED', 'FAILURE'].includes(String(e.health).toUpperCase()) ? String(e.health).toUpperCase() : 'NA';
		const g = svgEl('g', { class: 'gr-edge' + (e.async ? ' async' : ''), 'data-source': e.source, 'data-target': e.target, 'data-protocol': e.protocol, tabindex: 0 }, eg);
		svgEl('path', { d, fill: 'none', stroke: healthColor(h), 'stroke-width': 1.6, 'stroke-dasharray': e.async ? '6 4' : null, 'marker-end': `url(#gr-arrow-${h})` }, g);
		svgEl('path', { d, fill: 'none', stroke: 'transparent', 'stroke-width': 10 }, g);
		// on the curve where it overlaps no label or node placed before;
		// where none is free, shown on hover only
		const text = edgeLabel(e);
		const lw = text.length * 5.4, lh = 12;
		let at = null;
		for (const t of [0.6, 0.4, 0.75, 0.3, 0.5, 0.85]) {
			const box = { x: bez(t, c[0], c[2], c[4], c[6]) - lw / 2, y: bez(t, c[1], c[3], c[5], c[7]) - 4 - lh, w: lw, h: lh };
			if (!taken.some((b) => box.x < b.x + b.w && b.x < box.x + box.w && box.y < b.y + b.h && b.y < box.y + box.h)) {
				at = box;
				break;
			}
		}
		if (at) taken.push(at);
		const lx = at ? at.x + lw / 2 : bez(0.6, c[0], c[2], c[4], c[6]), ly = at ? at.y + lh : bez(0.6, c[1], c[3], c[5], c[7]) - 4;
		svgEl('text', { x: lx, y: ly, class: 'gr-edge-label' + (at ? '' : ' crowded'), 'text-anchor': 'middle' }, g, text);
		svgEl('title', {}, g, `${e.source} → ${e.target} (${e.protocol}${e.async ? ', async' : ''})`);
		if (onEdge) g.addEventListener('click', () => onEdge(e));
		edgeEls.push(g);
	}
	const nodeEls = new Map();
	const ng = svgEl('g', { class: 'gr-nodes' }, svg);
	for (const n of nodes) {
		const [x, y] = xy(n.name);
		const g = svgEl('g', { class: `gr-node ${kind.get(n.name)}`, 'data-name': n.name, 'data-kind': kind.get(n.name), 'data-health': n.health || 'NA', tabindex: 0 }, ng);
		drawNode(g, kind.get(n.name), x, y, healthColor(n.health));
		svgEl('text', { x, y: y + GR_R + 14, class: 'gr-node-label', 'text-anchor': 'middle' }, g, n.name);
		svgEl('title', {}, g, `${n.name}: ${n.health || 'no health'}`);
		if (onNode) {
			g.addEventListener('click', () => onNode(n));
			g.addEventListener('keydown', (ev) => ev.key === 'Enter' && onNode(n));
		}
		nodeEls.set(n.name, g);
	}
	container.replaceChildren(svg);
	return { nodes: nodeEls, edges: edgeEls };
}

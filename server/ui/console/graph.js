// graph.js - the service graph from get_mesh_graph's structuredContent
// (nodes, and the edges in `traffic`), drawn as SVG with a small layered
// layout of our own: callers left of what they call (longest path from the
// entry points; cycles broken where a depth-first walk meets its own path),
// each layer ordered by its callers' mean position, twice over to cut
// crossings.  Nodes coloured by health; leaves drawn by kind (a database a
// cylinder, a queue a parallelogram, an external API a cloud-like pill);
// edge labels rate / errors / P95; async edges dashed.  No fetches: clicks
// go to opts.onNode(node) and opts.onEdge(edge).
import { el, fmtMs, fmtNum, healthClass, svg } from './dom.js';

const NODE_W = 176;
const NODE_H = 42;
const COL_GAP = 110;
const ROW_GAP = 30;
const PAD = 24;

// The service a node stands for: "shop/checkout (3.2.0)" -> checkout.
export function nodeService(n) {
	const name = String(n.name ?? '');
	const noVersion = name.replace(/ \([^)]*\)$/, '');
	const slash = noVersion.indexOf('/');
	return slash >= 0 ? noVersion.slice(slash + 1) : noVersion;
}

// A leaf's kind from what calls it: "db" (SQL), "queue" (messaging),
// "external" (a host outside the mesh: no namespace, or type "service"
// with a dotted name); "" for a service.
export function nodeKind(n, inbound, outbound) {
	if (outbound > 0) return '';
	const protos = new Set(inbound.map((e) => e.protocol));
	if (protos.has('sql') || /postgres|mysql|redis|mongo/i.test(n.name)) return 'db';
	if (protos.has('messaging') || /kafka|rabbit|nats|queue/i.test(n.name)) return 'queue';
	if (!n.namespace && String(n.name).includes('.')) return 'external';
	return '';
}

export function edgeLabel(e) {
	// Kiali's throughput rounds a quiet edge to "0.00 rps": count it instead
	const quiet = !e.throughput || /^0\.00 /.test(e.throughput);
	const parts = [quiet ? (e.requests !== undefined ? `${fmtNum(e.requests)} req` : null) : e.throughput];
	if (e.errors) parts.push(`${fmtNum(e.errors)} err`);
	if (e.p95_ms !== undefined && e.p95_ms !== null) parts.push(`P95 ${fmtMs(e.p95_ms)}`);
	return parts.filter(Boolean).join(' · ');
}

// Layers (columns) by longest path from the nodes nothing calls.
function layers(names, edges) {
	const out = new Map(names.map((n) => [n, []]));
	for (const e of edges) if (out.has(e.source) && out.has(e.target) && e.source !== e.target) out.get(e.source).push(e.target);
	const back = new Set(); // "a\0b" edges that close a cycle
	const state = new Map();
	const dfs = (n) => {
		state.set(n, 1);
		for (const m of out.get(n)) {
			if (state.get(m) === 1) back.add(`${n}\0${m}`);
			else if (!state.has(m)) dfs(m);
		}
		state.set(n, 2);
	};
	for (const n of names) if (!state.has(n)) dfs(n);
	const layer = new Map(names.map((n) => [n, 0]));
	// longest path over the acyclic rest: relax |V| times at most
	for (let pass = 0, changed = true; changed && pass < names.length; pass++) {
		changed = false;
		for (const n of names)
			for (const m of out.get(n))
				if (!back.has(`${n}\0${m}`) && layer.get(m) < layer.get(n) + 1) {
					layer.set(m, layer.get(n) + 1);
					changed = true;
				}
	}
	const cols = [];
	for (const n of names) (cols[layer.get(n)] ??= []).push(n);
	const pos = new Map();
	const ins = new Map(names.map((n) => [n, []]));
	for (const e of edges) if (ins.has(e.target) && out.has(e.source)) ins.get(e.target).push(e.source);
	cols.forEach((c) => c.forEach((n, i) => pos.set(n, i)));
	for (let sweep = 0; sweep < 2; sweep++)
		for (const c of cols.slice(1)) {
			const bary = (n) => {
				const p = ins.get(n).map((m) => pos.get(m));
				return p.length ? p.reduce((a, b) => a + b, 0) / p.length : pos.get(n);
			};
			c.sort((a, b) => bary(a) - bary(b) || a.localeCompare(b));
			c.forEach((n, i) => pos.set(n, i));
		}
	return cols.filter(Boolean);
}

// Draws sc into container (replacing its content).  Returns {nodes,
// edges}: what was drawn, each with its element.
export function renderGraph(container, sc, opts = {}) {
	const nodes = (sc.nodes ?? []).map((n) => ({ ...n }));
	const byName = new Map(nodes.map((n) => [n.name, n]));
	const edges = (sc.traffic ?? sc.edges ?? []).filter((e) => byName.has(e.source) && byName.has(e.target));
	const cols = layers(
		nodes.map((n) => n.name),
		edges,
	);
	const tallest = Math.max(1, ...cols.map((c) => c.length));
	const width = PAD * 2 + cols.length * NODE_W + Math.max(0, cols.length - 1) * COL_GAP;
	const height = PAD * 2 + tallest * NODE_H + (tallest - 1) * ROW_GAP;
	cols.forEach((c, ci) => {
		const off = ((tallest - c.length) * (NODE_H + ROW_GAP)) / 2;
		c.forEach((name, ri) => {
			const n = byName.get(name);
			n.x = PAD + ci * (NODE_W + COL_GAP);
			n.y = PAD + off + ri * (NODE_H + ROW_GAP);
		});
	});
	for (const n of nodes)
		n.kind = nodeKind(
			n,
			edges.filter((e) => e.target === n.name),
			edges.filter((e) => e.source === n.name).length,
		);

	const root = el('div', { class: 'gr' });
	const s = svg('svg', { class: 'gr-svg', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': `service graph: ${nodes.length} nodes, ${edges.length} edges` }, root);
	s.style.maxWidth = `${width}px`; // scales down to its box, never up
	const defs = svg('defs', {}, s);
	const arrow = svg('marker', { id: 'gr-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
	svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'gr-arrowhead' }, arrow);
	const edgeLayer = svg('g', { class: 'gr-edges' }, s);
	const nodeLayer = svg('g', { class: 'gr-nodes' }, s);

	const indeg = new Map(nodes.map((n) => [n.name, 0]));
	const outdeg = new Map(nodes.map((n) => [n.name, 0]));
	for (const e of edges) {
		indeg.set(e.target, indeg.get(e.target) + 1);
		outdeg.set(e.source, outdeg.get(e.source) + 1);
	}
	for (const e of edges) {
		const a = byName.get(e.source);
		const b = byName.get(e.target);
		const x1 = a.x + NODE_W;
		const y1 = a.y + NODE_H / 2;
		const backward = b.x <= a.x;
		const x2 = backward ? b.x + NODE_W / 2 : b.x;
		const y2 = backward ? b.y + (b.y > a.y ? 0 : NODE_H) : b.y + NODE_H / 2;
		const mx = (x1 + x2) / 2;
		const d = backward ? `M${x1},${y1} C${x1 + 60},${y1} ${x2},${(y1 + y2) / 2} ${x2},${y2}` : `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
		const label = edgeLabel(e);
		const g = svg('g', { class: `gr-edge h-${healthClass(e.health)}${e.async ? ' async' : ''}`, tabindex: 0, role: 'link', 'data-source': e.source, 'data-target': e.target, 'aria-label': `${e.source} calls ${e.target}${e.async ? ' (async)' : ''}: ${label}` }, edgeLayer);
		svg('path', { d, class: 'gr-hit' }, g);
		svg('path', { d, class: 'gr-line', 'marker-end': 'url(#gr-arrow)' }, g);
		// the label sits near the end with fewer edges: along a caller's
		// fan-out near each target, along a database's fan-in near each
		// caller, so that the labels do not stack
		const t = indeg.get(e.target) > outdeg.get(e.source) ? 0.3 : 0.75;
		const bez = (p0, p1, p2, p3) => (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t * t * p2 + t ** 3 * p3;
		const lx = backward ? x1 + 30 : bez(x1, mx, mx, x2) - 8;
		const ly = backward ? (y1 + y2) / 2 - 4 : bez(y1, y1, y2, y2) - 4;
		svg('text', { x: lx, y: ly, class: 'gr-elabel', 'text-anchor': 'middle' }, g, label);
		svg('title', {}, g, `${e.source} → ${e.target} (${e.protocol ?? ''}${e.async ? ', async' : ''}): ${label}`);
		e.element = g;
		const go = () => opts.onEdge?.(e);
		g.addEventListener('click', go);
		g.addEventListener('keydown', (ev) => ev.key === 'Enter' && go());
	}

	for (const n of nodes) {
		const hc = healthClass(n.health);
		const title = n.kind === 'external' ? n.name : nodeService(n);
		const sub = [n.namespace, n.version && `v${n.version}`, n.kind, String(n.health ?? 'no health').toLowerCase()].filter(Boolean).join(' · ');
		const shown = title.length > 22 ? title.slice(0, 21) + '…' : title;
		// named by the text it shows (WCAG 2.5.3, label in name)
		const g = svg('g', { class: `gr-node h-${hc}${n.kind ? ` kind-${n.kind}` : ''}`, transform: `translate(${n.x},${n.y})`, tabindex: 0, role: 'link', 'data-name': n.name, 'data-service': nodeService(n) }, nodeLayer);
		if (n.kind === 'db') {
			// a cylinder: its top a flat ellipse above the name
			svg('path', { d: `M0,5 A${NODE_W / 2},5 0 0 1 ${NODE_W},5 L${NODE_W},${NODE_H - 4} A${NODE_W / 2},5 0 0 1 0,${NODE_H - 4} Z`, class: 'gr-shape' }, g);
			svg('path', { d: `M0,5 A${NODE_W / 2},5 0 0 0 ${NODE_W},5`, class: 'gr-shape-line' }, g);
		} else if (n.kind === 'queue') svg('path', { d: `M12,0 L${NODE_W},0 L${NODE_W - 12},${NODE_H} L0,${NODE_H} Z`, class: 'gr-shape' }, g);
		else if (n.kind === 'external') svg('rect', { width: NODE_W, height: NODE_H, rx: NODE_H / 2, class: 'gr-shape gr-dashed' }, g);
		else svg('rect', { width: NODE_W, height: NODE_H, rx: 6, class: 'gr-shape' }, g);
		const dy = n.kind === 'db' ? 4 : 0; // below the cylinder's top
		svg('circle', { cx: 12, cy: NODE_H / 2 + dy, r: 5, class: 'gr-dot' }, g);
		svg('text', { x: 22, y: 17 + dy, class: 'gr-name' }, g, shown);
		svg('text', { x: 22, y: 32 + dy, class: 'gr-sub' }, g, sub);
		n.element = g;
		const go = () => opts.onNode?.(n);
		g.addEventListener('click', go);
		g.addEventListener('keydown', (ev) => ev.key === 'Enter' && go());
	}
	const legend = el('p', { class: 'gr-legend' }, root);
	for (const [c, t] of [
		['h-ok', 'healthy'],
		['h-warn', 'degraded'],
		['h-bad', 'unhealthy'],
		['kind-db', 'database'],
		['kind-queue', 'queue'],
		['kind-external', 'external API'],
		['async', 'async (dashed)'],
	])
		el('span', { class: `gr-key ${c}` }, legend, t);
	container.replaceChildren(root);
	return { nodes, edges };
}

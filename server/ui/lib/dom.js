// dom.js - what the drawing modules (waterfall, graph, session) share:
// HTML and SVG elements, colours by service and health, numbers written as
// the tools' text answers write them.  No state, no fetches; styles are
// classes (ui.css) or CSSOM properties, never a style attribute, so the
// modules run under a Content-Security-Policy without 'unsafe-inline'.
export const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(node, attrs, parent, text) {
	for (const [k, v] of Object.entries(attrs)) {
		if (v === undefined || v === null || v === false) continue;
		if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
		else node.setAttribute(k, v === true ? '' : String(v));
	}
	if (text !== undefined && text !== null) node.textContent = String(text);
	if (parent) parent.appendChild(node);
	return node;
}

// An HTML element: el('td', {class: 'num'}, row, '12 ms').
export const el = (tag, attrs = {}, parent = null, text = null) => fill(document.createElement(tag), attrs, parent, text);
// An SVG element, the same way.
export const svg = (tag, attrs = {}, parent = null, text = null) => fill(document.createElementNS(SVG_NS, tag), attrs, parent, text);

// A stable colour per service: a hue from the name's FNV-1a hash, at a
// lightness that keeps white text and the dark bar outline readable; the
// reds (hue 340..20) are left to errors.
export function serviceColor(name) {
	let h = 2166136261;
	for (const c of String(name ?? '')) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
	return `hsl(${20 + ((h >>> 0) % 320)} 60% 42%)`;
}

// Kiali's health verdicts (and get_mesh_graph's) as a class suffix.
export function healthClass(h) {
	switch (String(h ?? '').toUpperCase()) {
		case 'HEALTHY':
			return 'ok';
		case 'DEGRADED':
			return 'warn';
		case 'UNHEALTHY':
		case 'FAILURE':
			return 'bad';
		default:
			return 'none';
	}
}

export function fmtMs(ms) {
	if (ms === null || ms === undefined || Number.isNaN(ms)) return '-';
	if (ms === 0) return '0';
	if (ms >= 60000) return `${(ms / 60000).toFixed(1)} min`;
	if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
	if (ms >= 10) return `${Math.round(ms)} ms`;
	if (ms >= 1) return `${ms.toFixed(1)} ms`;
	return `${Math.round(ms * 1000)} µs`;
}

export function fmtNum(n) {
	if (n === null || n === undefined) return '-';
	if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
	if (Math.abs(n) >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
	return Number.isInteger(n) ? n.toLocaleString('en-US') : n.toFixed(n < 1 ? 3 : 1);
}

export const fmtPct = (p) => (p === null || p === undefined ? '-' : `${p < 1 && p > 0 ? p.toFixed(2) : p.toFixed(1)}%`);
// dollars as the text answers write them: four decimals below $1
export const fmtUsd = (v) => (v === null || v === undefined ? '-' : `$${v.toFixed(v < 1 ? 4 : 2)}`);
export const fmtRate = (r) => (r === null || r === undefined ? '-' : r >= 1 ? `${r.toFixed(1)}/s` : `${(r * 60).toFixed(1)}/min`);
export const isoMs = (s) => (s ? Date.parse(s) : NaN);

// A definition list of [name, value] pairs into parent: a string as it
// is, anything else as JSON.
export function detailList(parent, pairs) {
	const dl = el('dl', { class: 'sx-dl' }, parent);
	for (const [k, v] of pairs) {
		el('dt', {}, dl, k);
		el('dd', {}, dl, typeof v === 'string' ? v : JSON.stringify(v));
	}
	return dl;
}

// A side panel's content: a title and a definition list of [name, value]
// pairs (null values left out).
export function showDetails(panel, title, pairs) {
	panel.replaceChildren();
	el('h3', {}, panel, title);
	detailList(panel, pairs.filter(([, v]) => v !== null && v !== undefined && v !== ''));
	panel.hidden = false;
}

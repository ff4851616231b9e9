// draw.js - what the drawing modules share: SVG and HTML elements, the
// service colours, durations, numbers and dollars as the text answers
// write them.  No state.
export const SVG_NS = 'http://www.w3.org/2000/svg';

// An SVG element with attributes (and text), appended to parent if given.
export function svgEl(tag, attrs = {}, parent = null, text = null) {
	const el = document.createElementNS(SVG_NS, tag);
	for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
	if (text !== null) el.textContent = text;
	if (parent) parent.appendChild(el);
	return el;
}

// An HTML element with attributes (and text), appended to parent if given.
export function htmlEl(tag, attrs = {}, parent = null, text = null) {
	const el = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
	if (text !== null) el.textContent = text;
	if (parent) parent.appendChild(el);
	return el;
}

// A stable colour per service name (a hue from its hash).
export function serviceColor(name) {
	let h = 2166136261;
	for (const c of String(name)) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
	return `hsl(${(h >>> 0) % 360} 55% 55%)`;
}

// Kiali's health verdicts to colours.
export function healthColor(health) {
	switch (String(health || '').toUpperCase()) {
		case 'HEALTHY':
			return 'var(--sx-ok)';
		case 'DEGRADED':
			return 'var(--sx-warn)';
		case 'FAILURE':
		case 'UNHEALTHY':
			return 'var(--sx-bad)';
		default:
			return 'var(--sx-na)';
	}
}

export function fmtMs(ms) {
	if (ms === null || ms === undefined || Number.isNaN(ms)) return '-';
	if (ms === 0) return '0';
	if (ms >= 60000) return `${(ms / 60000).toFixed(1)} min`;
	if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
	if (ms >= 1) return `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
	return `${(ms * 1000).toFixed(0)} µs`;
}

export function fmtNum(n) {
	if (n === null || n === undefined) return '-';
	return Number(n).toLocaleString('en-US', { maximumFractionDigits: 2 });
}

export function fmtUsd(v) {
	if (v === null || v === undefined) return 'unpriced';
	return `$${Number(v).toFixed(v < 1 ? 4 : 2)}`;
}

// Milliseconds since the epoch of an ISO 8601 time, NaN when absent.
export const isoMs = (s) => (s ? Date.parse(s) : NaN);

// Replaces the contents of a side panel with a title and key/value rows.
export function showPanel(panel, title, rows) {
	panel.replaceChildren();
	htmlEl('h3', {}, panel, title);
	const dl = htmlEl('dl', {}, panel);
	for (const [k, v] of rows) {
		if (v === undefined || v === null || v === '') continue;
		htmlEl('dt', {}, dl, k);
		htmlEl('dd', {}, dl, typeof v === 'object' ? JSON.stringify(v) : String(v));
	}
	panel.hidden = false;
}

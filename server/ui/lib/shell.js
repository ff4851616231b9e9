// shell.js - what the three apps' pages share: the status line, the
// body's data-state (what the page shows: waiting, list, calling,
// waterfall, graph, traces, session, text, error), a result without
// structured content shown as its text, and a drill-down call through the
// host with its status.
import { appConnect } from './bridge.js';

export const byId = (id) => document.getElementById(id);

export function setStatus(text, err = false) {
	byId('status').textContent = text;
	byId('status').className = err ? 'status err' : 'status';
}

export const setState = (state) => (document.body.dataset.state = state);

// The result's structuredContent; without one (a host or an error that
// dropped it) its text in the status line, and null.
export function structuredOf(result) {
	const sc = result?.structuredContent;
	if (!sc) {
		setState(result?.isError ? 'error' : 'text');
		setStatus((result?.content || []).map((c) => c.text || '').join('\n') || 'no result', !!result?.isError);
	}
	return sc || null;
}

// tools/call tool(args) through the host, then draw(structuredContent);
// a failure goes to the status line.
export async function drillDown(app, tool, args, what, draw) {
	setStatus(`${tool} ${what} through the host`);
	setState('calling');
	try {
		const r = await app.callTool(tool, args);
		draw(r.structuredContent);
	} catch (e) {
		setStatus(`${tool} failed: ${e.message}`, true);
		setState('error');
	}
}

// Connects the page as app name: onResult(result), a cancelled call and a
// failed handshake in the status line.
export function startApp(name, onResult, onInput) {
	const app = appConnect(name, { onInput, onResult, onCancelled: (why) => setStatus(`cancelled: ${why}`, true) });
	app.ready.catch((e) => setStatus(`host: ${e.message}`, true));
	return app;
}

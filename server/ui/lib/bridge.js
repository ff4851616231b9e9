// bridge.js - the app (View) side of MCP Apps (SEP-1865, extension
// io.modelcontextprotocol/ui, protocol 2026-01-26): JSON-RPC 2.0 over
// postMessage with the host window.  ui/initialize, then
// ui/notifications/initialized; the host's tool-input and tool-result
// notifications go to the callbacks; tools/call goes through the host.
export const APPS_PROTOCOL = '2026-01-26';
// a host that never answers must not leave a call waiting for ever
const APPS_CALL_TIMEOUT_MS = 60000;

// Connects to the host.  handlers: onInput(arguments), onResult(CallToolResult),
// onContext(hostContext), onCancelled(reason).  Returns {ready, callTool}.
export function appConnect(name, handlers) {
	const host = window.parent;
	const pending = new Map();
	let nextId = 1;
	const post = (msg) => host.postMessage(msg, '*');
	const notify = (method, params) => post({ jsonrpc: '2.0', method, params });
	const request = (method, params) =>
		new Promise((resolve, reject) => {
			const id = nextId++;
			const timer = setTimeout(() => {
				pending.delete(id);
				reject(new Error(`${method}: no answer from the host in ${APPS_CALL_TIMEOUT_MS / 1000} s`));
			}, APPS_CALL_TIMEOUT_MS);
			pending.set(id, { resolve, reject, timer });
			post({ jsonrpc: '2.0', id, method, params });
		});
	const answer = (id, result, error) => post(error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result });

	window.addEventListener('message', (ev) => {
		const m = ev.data;
		if (ev.source !== host || !m || m.jsonrpc !== '2.0') return;
		if (m.method === undefined) {
			const p = pending.get(m.id);
			if (!p) return;
			pending.delete(m.id);
			clearTimeout(p.timer);
			if (m.error) p.reject(new Error(m.error.message || 'host error'));
			else p.resolve(m.result);
			return;
		}
		if (m.id !== undefined) {
			// requests from the host: teardown and ping only
			if (m.method === 'ui/resource-teardown' || m.method === 'ping') answer(m.id, {});
			else answer(m.id, null, { code: -32601, message: `method not found: ${m.method}` });
			return;
		}
		const p = m.params || {};
		if (m.method === 'ui/notifications/tool-input') handlers.onInput?.(p.arguments || {});
		else if (m.method === 'ui/notifications/tool-result') handlers.onResult?.(p);
		else if (m.method === 'ui/notifications/host-context-changed') applyHostContext(p, handlers);
		else if (m.method === 'ui/notifications/tool-cancelled') handlers.onCancelled?.(p.reason || 'cancelled');
	});

	const ready = request('ui/initialize', {
		appInfo: { name, version: '1.0.0' },
		appCapabilities: { availableDisplayModes: ['inline'] },
		protocolVersion: APPS_PROTOCOL,
	}).then((res) => {
		applyHostContext(res?.hostContext || {}, handlers);
		notify('ui/notifications/initialized', {});
		watchSize(notify);
		return res;
	});
	return {
		ready,
		// The result of a tools/call made through the host (CallToolResult);
		// rejects on a JSON-RPC error or a tool error (isError).
		callTool: async (tool, args) => {
			const r = await request('tools/call', { name: tool, arguments: args });
			if (r?.isError) throw new Error((r.content || []).map((c) => c.text || '').join(' ') || `${tool} failed`);
			return r;
		},
	};
}

// The host's theme and style variables on :root (spec: Theming).
function applyHostContext(ctx, handlers) {
	const root = document.documentElement;
	if (ctx.theme === 'light' || ctx.theme === 'dark') root.style.colorScheme = ctx.theme;
	for (const [k, v] of Object.entries(ctx.styles?.variables || {}))
		if (k.startsWith('--') && typeof v === 'string') root.style.setProperty(k, v);
	handlers.onContext?.(ctx);
}

// ui/notifications/size-changed whenever the document's size changes.
function watchSize(notify) {
	let last = '';
	const send = () => {
		// the body's own box: the document's would never shrink below the
		// iframe the host sized from the last notification
		const box = document.body.getBoundingClientRect();
		const size = { width: Math.ceil(document.documentElement.scrollWidth), height: Math.ceil(box.bottom + window.scrollY) };
		const key = `${size.width}x${size.height}`;
		if (key === last) return;
		last = key;
		notify('ui/notifications/size-changed', size);
	};
	new ResizeObserver(send).observe(document.body);
	send();
}

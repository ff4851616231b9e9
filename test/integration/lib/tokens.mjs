// tokens.mjs - what a model reads of a tool list, counted with a real
// tokenizer (js-tiktoken's o200k_base, the GPT-4o/o-series encoding, pinned
// in package.json): shared by budget.test.mjs and bench/tokens.mjs.

import { getEncoding } from 'js-tiktoken';

const enc = getEncoding('o200k_base');

export const countTokens = (text) => enc.encode(text).length;

// Per tool, what the model reads before choosing a tool (name, title,
// description, inputSchema as JSON) and what the client also receives
// (outputSchema): [{name, tokens, outTokens, bytes}], in list order.
export function definitionTokens(tools) {
	return tools.map((t) => ({
		name: t.name,
		tokens:
			countTokens(t.name) +
			countTokens(t.title ?? '') +
			countTokens(t.description ?? '') +
			countTokens(JSON.stringify(t.inputSchema ?? {})),
		outTokens: t.outputSchema ? countTokens(JSON.stringify(t.outputSchema)) : 0,
		bytes: Buffer.byteLength(JSON.stringify(t)),
	}));
}

// The rows as a Markdown table with a total line.
export function definitionTable(rows) {
	const lines = ['| tool | read tokens | outputSchema tokens | bytes |', '|---|---:|---:|---:|'];
	for (const r of rows) lines.push(`| ${r.name} | ${r.tokens} | ${r.outTokens} | ${r.bytes} |`);
	const sum = (k) => rows.reduce((a, r) => a + r[k], 0);
	lines.push(`| **${rows.length} tools** | **${sum('tokens')}** | **${sum('outTokens')}** | **${sum('bytes')}** |`);
	return lines.join('\n');
}

// What one tool answer costs: tokens of its text, of its structuredContent
// as JSON, and the result's JSON in bytes (as the client holds it).
export function answerCost(r) {
	const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
	const sc = r.structuredContent ? JSON.stringify(r.structuredContent) : '';
	return { text, textTokens: countTokens(text), scTokens: sc ? countTokens(sc) : 0, bytes: Buffer.byteLength(JSON.stringify(r)) };
}

// The typical answers of the heavy tools on the demo dataset, with their
// default arguments (24 h where a range is asked), each id or name taken
// from an answer before: [{name, args, r}], in call order.
export async function heavyAnswers(client, { timeout = 60000 } = {}) {
	const out = [];
	const call = async (name, args) => {
		const r = await client.callTool({ name, arguments: args }, undefined, { timeout });
		out.push({ name, args, r });
		return r.structuredContent ?? {};
	};
	const services = await call('list_services', { time_range: '24h' });
	const service = services.services?.[0]?.service ?? 'checkout';
	await call('query_metrics', { service, time_range: '24h' });
	const traces = await call('query_traces', { service, time_range: '24h' });
	const traceId = traces.traces?.[0]?.trace_id;
	if (traceId) await call('get_trace', { trace_id: traceId });
	await call('query_spans', { service_name: service, time_range: '24h' });
	const genai = await call('analyze_genai', { time_range: '24h' });
	const sessionId = genai.top_sessions?.[0]?.session_id;
	if (sessionId) await call('get_session', { session_id: sessionId });
	await call('get_mesh_graph', { rateInterval: '24h' });
	return out;
}

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

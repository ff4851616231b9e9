// tokens.mjs - the measuring half of bench/tokens.sh: through the official
// SDK client, the definitions of every listed tool (test/integration's
// lib/tokens.mjs, as budget.test.mjs counts them) and one typical answer
// of each heavy tool (default arguments on the demo dataset, lib/tokens.mjs'
// heavyAnswers, as budget.test.mjs calls them): tokens of the text, of the
// structured content as JSON, both, and the result JSON in bytes.
//
//   node bench/tokens.mjs --mcp URL [--spans N]

import { answerCost, definitionTable, definitionTokens, heavyAnswers } from '../test/integration/lib/tokens.mjs';
import { connect } from '../test/integration/lib/tooltest.mjs';

// mcp-grafana's own figure for its tool definitions (README, "~15.5k
// tokens" for about 100 tools), the comparison issue 19 names.
const GRAFANA_DEF_TOKENS = 15500;

const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : dflt;
};
const url = arg('--mcp');
if (!url) {
	console.error('tokens.mjs: --mcp URL is required');
	process.exit(2);
}

// the SDK client and every listed tool, as the integration tests connect
const { client, tools } = await connect({ mcpUrl: url }, 'sextant-bench-tokens');
const rows = definitionTokens(tools);
const defTokens = rows.reduce((a, r) => a + r.tokens, 0);
const listBytes = Buffer.byteLength(JSON.stringify({ tools }));

const calls = await heavyAnswers(client, { timeout: 120000 });
// and the largest query_traces answer there is: 100 traces over 24 h
const wide = { ...calls.find((c) => c.name === 'query_traces').args, max_traces: 100 };
calls.push({ name: 'query_traces', args: wide, r: await client.callTool({ name: 'query_traces', arguments: wide }, undefined, { timeout: 120000 }) });
const answers = calls.map(({ name, args, r }) => ({
	call: `${name} ${JSON.stringify(args)}`,
	error: r.isError === true,
	...answerCost(r),
}));
await client.close();

const out = [];
out.push(`## Tool definitions (${tools.length} tools listed, o200k_base)`, '', definitionTable(rows), '');
out.push('| server | definition tokens (read by the model) | per tool |', '|---|---:|---:|');
out.push(`| Sextant, default tool set | ${defTokens} | ${Math.round(defTokens / tools.length)} |`);
out.push(`| mcp-grafana (published, ~100 tools) | ~${GRAFANA_DEF_TOKENS} | ~${Math.round(GRAFANA_DEF_TOKENS / 100)} |`, '');
out.push(`tools/list as JSON: ${listBytes} bytes.`, '');
out.push(`## Typical answers (demo data${arg('--spans') ? `, ${arg('--spans')} spans` : ''})`, '');
out.push('| call | text tokens | structuredContent tokens | tokens in all | result JSON bytes |', '|---|---:|---:|---:|---:|');
for (const a of answers)
	out.push(`| \`${a.call}\`${a.error ? ' (error)' : ''} | ${a.textTokens} | ${a.scTokens} | ${a.textTokens + a.scTokens} | ${a.bytes} |`);
const sum = (k) => answers.reduce((t, a) => t + a[k], 0);
out.push(`| **${answers.length} answers** | **${sum('textTokens')}** | **${sum('scTokens')}** | **${sum('textTokens') + sum('scTokens')}** | **${sum('bytes')}** |`);
console.log(out.join('\n'));

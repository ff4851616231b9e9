// tokens.mjs - the measuring half of bench/tokens.sh: through the official
// SDK client, the definitions of every listed tool (test/integration's
// lib/tokens.mjs, as budget.test.mjs counts them) and one typical answer
// of each heavy tool (default arguments on the demo dataset): tokens of
// the text, of the structured content as JSON, and the result JSON in bytes.
//
//   node bench/tokens.mjs --mcp URL [--spans N]

import { countTokens, definitionTable, definitionTokens } from '../test/integration/lib/tokens.mjs';
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

const answers = [];
async function measure(name, args) {
	const r = await client.callTool({ name, arguments: args });
	const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
	const sc = r.structuredContent ? JSON.stringify(r.structuredContent) : '';
	answers.push({
		call: `${name} ${JSON.stringify(args)}`,
		error: r.isError === true,
		textTokens: countTokens(text),
		scTokens: sc ? countTokens(sc) : 0,
		bytes: Buffer.byteLength(JSON.stringify(r)),
	});
	return r.structuredContent ?? {};
}

const services = await measure('list_services', { time_range: '24h' });
const service = services.services?.[0]?.service ?? services.services?.[0]?.name ?? 'checkout';
await measure('query_metrics', { service, time_range: '24h' });
const traces = await measure('query_traces', { service, time_range: '24h' });
const traceId = traces.traces?.[0]?.trace_id;
if (traceId) await measure('get_trace', { trace_id: traceId });
await measure('query_spans', { service_name: service, time_range: '24h' });
const genai = await measure('analyze_genai', { time_range: '24h' });
const sessionId = genai.top_sessions?.[0]?.session_id;
if (sessionId) await measure('get_session', { session_id: sessionId });
await client.close();

const out = [];
out.push(`## Tool definitions (${tools.length} tools listed, o200k_base)`, '', definitionTable(rows), '');
out.push('| server | definition tokens (read by the model) | per tool |', '|---|---:|---:|');
out.push(`| Sextant, default tool set | ${defTokens} | ${Math.round(defTokens / tools.length)} |`);
out.push(`| mcp-grafana (published, ~100 tools) | ~${GRAFANA_DEF_TOKENS} | ~${Math.round(GRAFANA_DEF_TOKENS / 100)} |`, '');
out.push(`tools/list as JSON: ${listBytes} bytes.`, '');
out.push(`## Typical answers (demo data${arg('--spans') ? `, ${arg('--spans')} spans` : ''})`, '');
out.push('| call | text tokens | structuredContent tokens | result JSON bytes |', '|---|---:|---:|---:|');
for (const a of answers) out.push(`| \`${a.call}\`${a.error ? ' (error)' : ''} | ${a.textTokens} | ${a.scTokens} | ${a.bytes} |`);
const sum = (k) => answers.reduce((t, a) => t + a[k], 0);
out.push(`| **${answers.length} answers** | **${sum('textTokens')}** | **${sum('scTokens')}** | **${sum('bytes')}** |`);
console.log(out.join('\n'));

// redact.test.mjs - redaction ([redact]) in every answer that shows what
// spans carry: attribute values under sensitive keys (every default:
// authorization, password, passwd, secret, token, api_key, cookie,
// set-cookie), e-mail addresses inside values, names and status messages,
// and a configured extra key and value pattern, in the text and the
// structuredContent of query_traces, query_ebpf_traces,
// query_telemetry_spans, query_metrics, query_spans, get_trace (a trace
// and one span whole, its events too),
// get_session, analyze_genai, compare_sessions and list_services.  The
// secrets are put in through the OTLP receiver and checked to be in the
// store (redaction is at answer time), so an answer that leaves them out
// is redaction, and the answers are checked to show [REDACTED] where the
// secret was, so a tool cannot pass by showing nothing.  Two gateways on
// one database: the default configuration, and one with an extra key and
// value pattern.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { attrs, KIND, STATUS, SpanBatch, newId, span } from './lib/otlpjson.mjs';
import { psqlJson } from './lib/pgjson.mjs';
import { CONFORMANCE_CONFIG, startServer } from './lib/server.mjs';
import { EBPF_ENV, MIN_MS, MS, TOOL_ENV, assertNoSecrets, callTool, connect, hexLit, startStack, strings } from './lib/tooltest.mjs';

const MARK = '[REDACTED]';
const NOW_MS = Date.now();
const at = (minutesAgo) => BigInt(NOW_MS - Math.round(minutesAgo * MIN_MS)) * MS + 321n;

// Attribute values under each default key pattern, with the key's case
// and separators varied ("-" and "_" are alike, case is ignored).
const KEY_SECRETS = {
	'http.request.header.Authorization': 'Bearer AUTHZ-8d1c2f0e',
	'db.password': 'PW-93kfj2aa',
	'user.passwd': 'PASSWD-x81kq9',
	'oauth.client_secret': 'SECRET-q02mzz',
	'auth.access_token': 'TOKEN-z7y6w5',
	'openai.api_key': 'sk-APIKEY-55aa11',
	'X-Api-Key': 'APIKEY2-77bb22',
	'http.request.header.cookie': 'sid=COOKIE-4e4e4e',
	'http.response.header.set-cookie': 'sid=SETCOOKIE-9f9f9f; HttpOnly',
};
// E-mail addresses inside values, names and status messages.
const EMAILS = ['alice.smith@example.com', 'bob+ops@corp.example.org', 'carol@example.net', 'dave_x@mail.example.co.uk',
	'erin@example.com', 'frank@example.com', 'grace.h@example.io', 'heidi@example.org', 'judy@example.com'];
// The configured extra value pattern and key, and what they hide.
const EXTRA_VALUE_RE = 'ACME-[0-9]{6}';
const EXTRA_VALUES = ['ACME-123456', 'ACME-654321'];
const EXTRA_KEY = 'internal_ref';
const EXTRA_KEY_VALUE = 'IREF-0a0b0c';
// Near misses that stay visible: not a key pattern, not an address, five
// digits only.
const VISIBLE = { 'http.route': '/api/vault', 'vault.note': 'ACME-12345x rotated', 'user.handle': 'ivan at example' };

const SECRETS = [...Object.values(KEY_SECRETS), ...EMAILS];
// The addresses in span names (and the eBPF path): the rest are in
// attribute values and status messages only.
const IN_NAMES = [EMAILS[2], EMAILS[4], EMAILS[6], EMAILS[8]];
const IN_VALUES = SECRETS.filter((x) => !IN_NAMES.includes(x));

const batch = new SpanBatch();
const T1 = newId(16);
const T2 = newId(16);
const T3 = newId(16);
const T_EDGE = newId(16);
const ID = {};
{
	// T1, session sess-redact-1: a failed request whose status message
	// names an address and a ticket, a slow notification named after an
	// address (the trace's bottleneck), and an LLM call named after one
	// with a prompt carrying another.
	const t0 = at(20);
	ID.root = newId(8);
	ID.notify = newId(8);
	ID.chat = newId(8);
	const sess = { 'session.id': 'sess-redact-1' };
	batch.add('vault-api', 'otlp', span({
		traceId: T1, spanId: ID.root, name: 'POST /api/vault', kind: KIND.SERVER, startNs: t0, durNs: 500n * MS,
		attributes: {
			...KEY_SECRETS, ...VISIBLE, ...sess, [EXTRA_KEY]: EXTRA_KEY_VALUE,
			'http.request.method': 'POST', 'http.response.status_code': 500,
			'user.contact': `write to ${EMAILS[0]} today`,
		},
		status: { code: STATUS.ERROR, message: `denied for ${EMAILS[1]} (ticket ${EXTRA_VALUES[0]})` },
	}));
	// its exception event carries a password and an address too
	const notify = span({
		traceId: T1, spanId: ID.notify, parentSpanId: ID.root, name: `notify ${EMAILS[2]}`, kind: KIND.INTERNAL,
		startNs: t0 + 10n * MS, durNs: 400n * MS,
		attributes: { ...sess, 'vault.ticket': `ticket ${EXTRA_VALUES[1]} for ${EMAILS[3]}` },
		status: { code: STATUS.ERROR, message: `mailbox ${EMAILS[3]} full` },
	});
	notify.events = [{ name: 'exception', timeUnixNano: (t0 + 300n * MS).toString(), attributes: attrs({ 'exception.message': `smtp refused ${EMAILS[3]}`, 'smtp.password': KEY_SECRETS['db.password'] }) }];
	batch.add('vault-api', 'otlp', notify);
	batch.add('vault-api', 'otlp', span({
		traceId: T1, spanId: ID.chat, parentSpanId: ID.root, name: `chat summary for ${EMAILS[4]}`, kind: KIND.CLIENT,
		startNs: t0 + 420n * MS, durNs: 70n * MS,
		attributes: {
			...sess, 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o',
			'gen_ai.usage.input_tokens': 1200, 'gen_ai.usage.output_tokens': 300,
			'gen_ai.prompt': `summarise the mail of ${EMAILS[5]}`,
		},
	}));
	// T2, session sess-redact-2: one LLM call named after an address.
	const t2 = at(12);
	const r2 = newId(8);
	batch.add('vault-api', 'otlp', span({
		traceId: T2, spanId: r2, name: 'POST /api/vault', kind: KIND.SERVER, startNs: t2, durNs: 90n * MS,
		attributes: { 'session.id': 'sess-redact-2', 'http.request.method': 'POST', 'http.response.status_code': 200, ...KEY_SECRETS },
	}));
	batch.add('vault-api', 'otlp', span({
		traceId: T2, spanId: newId(8), parentSpanId: r2, name: `chat draft for ${EMAILS[6]}`, kind: KIND.CLIENT,
		startNs: t2 + 5n * MS, durNs: 80n * MS,
		attributes: {
			'session.id': 'sess-redact-2', 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai',
			'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.usage.input_tokens': 400, 'gen_ai.usage.output_tokens': 90,
		},
		status: { code: STATUS.ERROR, message: `quota of ${EMAILS[7]} exceeded` },
	}));
	// T3: OTLP spans of vault-api outside sessions.
	const t3 = at(8);
	batch.add('vault-api', 'otlp', span({
		traceId: T3, spanId: newId(8), name: 'GET /api/vault', kind: KIND.SERVER, startNs: t3, durNs: 15n * MS,
		attributes: { 'http.request.method': 'GET', 'http.route': '/api/vault', 'http.response.status_code': 200, 'db.password': KEY_SECRETS['db.password'] },
	}));
	// T_EDGE: eBPF requests whose path holds an address (shown as the
	// route of route-less requests).
	for (let i = 0; i < 3; i++) {
		batch.add('vault-edge', 'ebpf', span({
			traceId: i === 0 ? T_EDGE : newId(16), spanId: newId(8), name: `GET /users/${EMAILS[8]}/keys`, kind: KIND.SERVER,
			startNs: at(5 + i), durNs: BigInt(10 + i) * MS,
			attributes: { 'http.request.method': 'GET', 'url.path': `/users/${EMAILS[8]}/keys`, 'http.response.status_code': 200 },
		}));
	}
}

let st; // the default gateway and its database
let extra; // {srv, mcp}: [redact] with an extra key and value pattern
let tmpDir;

before(async () => {
	st = await startStack({ name: 'redact', env: EBPF_ENV, post: (url) => batch.post(url) });
});

beforeEach(() => st?.srv.assertAlive());

after(async () => {
	if (st) await st.stop();
});

// Every call of the file: the tool, its arguments, and what its answer
// must show as [REDACTED] in attribute values and status messages, and in
// span names and routes (checks on {text, sc}), so that leaving the data
// out does not pass for redaction.
const CALLS = [
	['query_traces', { service: 'vault-api' }, ({ text }) => assert.match(text, /ERROR 500: denied for \[REDACTED\]/), ({ sc }) => {
		const names = strings(sc.traces).map((x) => x.s);
		assert.ok(names.includes(`notify ${MARK}`), 'the span named after an address is not shown as "notify [REDACTED]"');
		assert.ok(names.includes(`chat summary for ${MARK}`));
	}],
	['query_traces', { trace_id: T1 }, ({ text }) => assert.match(text, /mailbox \[REDACTED\] full/), ({ text }) => assert.match(text, /notify \[REDACTED\]/)],
	['query_ebpf_traces', { service: 'vault-edge' }, () => {}, ({ text }) => assert.match(text, /\/users\/\[REDACTED\]\/keys/)],
	['query_metrics', { service: 'vault-edge' }, () => {}, ({ sc }) => assert.deepEqual(sc.http.map((r) => r.route), [`/users/${MARK}/keys`])],
	['query_ebpf_http_metrics', { service: 'vault-edge' }, () => {}, ({ text }) => assert.match(text, /\/users\/\[REDACTED\]\/keys/)],
	['query_telemetry_spans', { service: 'vault-api', limit: 50 }, ({ sc }) => {
		const root = sc.spans.find((s) => s.span_id === ID.root);
		assert.ok(root, 'the root span of T1 is not listed');
		for (const k of Object.keys(KEY_SECRETS)) assert.equal(root.attributes[k], MARK, `attribute ${k}`);
		for (const [k, v] of Object.entries(VISIBLE)) assert.equal(root.attributes[k], v, `attribute ${k} must stay visible`);
		assert.equal(root.attributes['user.contact'], `write to ${MARK} today`);
		assert.match(root.status_message, /^denied for \[REDACTED\] \(ticket /);
		const notify = sc.spans.find((s) => s.span_id === ID.notify);
		assert.match(notify.attributes['vault.ticket'], / for \[REDACTED\]$/);
		assert.equal(notify.status_message, `mailbox ${MARK} full`);
		const chat = sc.spans.find((s) => s.span_id === ID.chat);
		assert.equal(chat.attributes['gen_ai.prompt'], `summarise the mail of ${MARK}`);
	}, ({ sc }) => assert.equal(sc.spans.find((s) => s.span_id === ID.notify).name, `notify ${MARK}`)],
	['query_telemetry_spans', { trace_id: T1 }, ({ sc }) => assert.match(sc.spans.find((s) => s.span_id === ID.root).status_message, /^denied for \[REDACTED\]/), ({ text }) => assert.match(text, /notify \[REDACTED\]/)],
	['query_spans', { service_name: 'vault-api' }, ({ text }) => assert.match(text, /mailbox \[REDACTED\] full/), ({ text }) => assert.match(text, /notify \[REDACTED\]/)],
	['query_spans', { trace_id: T1 }, ({ sc }) => {
		assert.equal(sc.spans.find((s) => s.span_id === ID.notify).status_message, `mailbox ${MARK} full`);
	}, ({ text }) => assert.match(text, /chat summary for \[REDACTED\]/)],
	['get_trace', { trace_id: T1 }, ({ text }) => assert.match(text, /denied for \[REDACTED\]/), ({ text }) => {
		assert.match(text, /notify \[REDACTED\]/);
		assert.match(text, /chat summary for \[REDACTED\]/);
	}],
	['get_trace', { trace_id: T1, span_id: ID.root }, ({ sc, text }) => {
		const a = Object.fromEntries(sc.attributes.map((r) => [r.key, r.value]));
		for (const k of Object.keys(KEY_SECRETS)) assert.equal(a[k], MARK, `attribute ${k}`);
		for (const [k, v] of Object.entries(VISIBLE)) assert.equal(a[k], v, `attribute ${k} must stay visible`);
		assert.equal(a['user.contact'], `write to ${MARK} today`);
		assert.match(sc.span.status_message, /^denied for \[REDACTED\] \(ticket /);
		assert.match(text, /- db\.password: \[REDACTED\]/);
	}, ({ text }) => assert.match(text, /POST \/api\/vault/)],
	['get_trace', { trace_id: T1, span_id: ID.notify }, ({ sc, text }) => {
		assert.equal(sc.span.status_message, `mailbox ${MARK} full`);
		assert.deepEqual(sc.events[0].attributes, { 'exception.message': `smtp refused ${MARK}`, 'smtp.password': MARK });
		assert.match(text, /exception: exception\.message=smtp refused \[REDACTED\], smtp\.password=\[REDACTED\]/);
	}, ({ sc, text }) => {
		assert.equal(sc.span.name, `notify ${MARK}`);
		assert.match(text, /vault-api: notify \[REDACTED\]/);
	}],
	['get_session', { session_id: 'sess-redact-1' }, ({ text }) => assert.match(text, /denied for \[REDACTED\]/), ({ text }) => assert.match(text, /notify \[REDACTED\]/)],
	['get_session', { session_id: 'sess-redact-2' }, ({ text }) => assert.match(text, /quota of \[REDACTED\] exceeded/), ({ text }) => assert.match(text, /chat draft for \[REDACTED\]/)],
	['analyze_genai', { time_range: '24h' }, () => {}, () => {}],
	['analyze_genai', { time_range: '24h', service: 'vault-api' }, () => {}, () => {}],
	['compare_sessions', { session_id_1: 'sess-redact-1', session_id_2: 'sess-redact-2' }, () => {}, ({ text }) => assert.match(text, /notify \[REDACTED\]/)],
	['list_services', { time_range: '1h' }, () => {}, () => {}],
];

test('the secrets are in the store as sent: redaction is at answer time', async () => {
	const rows = await psqlJson(st.pg.url, `SELECT json_agg(json_build_object('name', name, 'msg', status_message,
		'attrs', attributes, 'path', url_path)) FROM spans WHERE trace_id IN (${[T1, T2, T_EDGE].map(hexLit).join(',')})`);
	const all = JSON.stringify(rows);
	for (const s of [...SECRETS, ...EXTRA_VALUES, EXTRA_KEY_VALUE]) assert.ok(all.includes(s), `${s} not stored`);
});

describe('default [redact]: every default key, e-mail addresses', () => {
	for (const [tool, args, values, names] of CALLS) {
		test(`${tool}(${JSON.stringify(args)}): attribute values and status messages: no secret in text or structuredContent, [REDACTED] in their place`, async () => {
			const a = await callTool(st.mcp, tool, args);
			assertNoSecrets(a, IN_VALUES, tool);
			values(a);
		});
		test(`${tool}(${JSON.stringify(args)}): span names and routes: no address, [REDACTED] in its place`, async () => {
			const a = await callTool(st.mcp, tool, args);
			assertNoSecrets(a, IN_NAMES, tool);
			names(a);
		});
	}

	test('the extra pattern and key are not defaults: the default gateway shows them', async () => {
		const { sc } = await callTool(st.mcp, 'query_telemetry_spans', { trace_id: T1 });
		const root = sc.spans.find((s) => s.span_id === ID.root);
		assert.equal(root.attributes[EXTRA_KEY], EXTRA_KEY_VALUE);
		assert.match(root.status_message, new RegExp(EXTRA_VALUES[0]));
	});
});

describe('[redact] with an extra key and value pattern', () => {
	// the default keys and the extra one, the extra value pattern, in a
	// configuration file (a regex may hold a comma, which the
	// SEXTANT_REDACT_* list form would split)
	before(async () => {
		tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-redact-'));
		const config = path.join(tmpDir, 'redact.toml');
		const keys = ['authorization', 'password', 'passwd', 'secret', 'token', 'api_key', 'cookie', 'set-cookie', EXTRA_KEY];
		fs.writeFileSync(config, `${fs.readFileSync(CONFORMANCE_CONFIG, 'utf8')}
[redact]
keys = ${JSON.stringify(keys)}
values = ${JSON.stringify([EXTRA_VALUE_RE])}
emails = true
`);
		const srv = await startServer({ name: 'redact-extra', config, env: { DATABASE_URL: st.pg.url, ...TOOL_ENV, ...EBPF_ENV, SEXTANT_DATABASE_AUTO_MIGRATE: 'false' } });
		extra = { srv, mcp: await connect(srv, 'redact-extra') };
	});

	beforeEach(() => extra?.srv.assertAlive());

	after(async () => {
		await extra?.mcp?.client.close().catch(() => {});
		try {
			if (extra?.srv) await extra.srv.stop();
		} finally {
			if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
		}
	});

	for (const [tool, args, values] of CALLS) {
		test(`${tool}(${JSON.stringify(args)}): the defaults, ${EXTRA_KEY} and ${EXTRA_VALUE_RE} hidden in values and messages`, async () => {
			const a = await callTool(extra.mcp, tool, args);
			assertNoSecrets(a, [...IN_VALUES, ...EXTRA_VALUES, EXTRA_KEY_VALUE], `${tool} (extra)`);
			values(a);
		});
	}

	test('query_telemetry_spans: the extra key and pattern come out as [REDACTED], near misses stay', async () => {
		const { sc } = await callTool(extra.mcp, 'query_telemetry_spans', { trace_id: T1 });
		const root = sc.spans.find((s) => s.span_id === ID.root);
		assert.equal(root.attributes[EXTRA_KEY], MARK);
		assert.equal(root.status_message, `denied for ${MARK} (ticket ${MARK})`);
		assert.equal(root.attributes['vault.note'], VISIBLE['vault.note'], 'ACME-12345x does not match ACME-[0-9]{6}');
		const notify = sc.spans.find((s) => s.span_id === ID.notify);
		assert.equal(notify.attributes['vault.ticket'], `ticket ${MARK} for ${MARK}`);
		assert.equal(notify.attributes[EXTRA_KEY], undefined);
	});
});

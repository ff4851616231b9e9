// istio.test.mjs - manage_istio_config (the "mesh" set) against a Kubernetes
// API.  A real kube-apiserver cannot run on these machines (it needs etcd
// and a cluster), so the tests run a stand-in (lib/kube-standin.mjs: CRUD
// of custom resources with resourceVersion, 404, 409 on create of an
// existing name and on a stale resourceVersion, 422 on a bad body, merge
// patch, list with labelSelector, a bearer token, TLS with a throwaway
// CA) and first prove it honest by driving it with kubectl, Kubernetes'
// own client (Debian's kubernetes-client), in this file: kubectl --server
// --token --certificate-authority apply, get, patch, replace and delete a
// VirtualService and reads the API's errors as it reads kube-apiserver's.
// kubectl apply runs with --validate=false: the stand-in serves no
// OpenAPI document.  Then the tool through the official SDK client, with
// [tools] enabled_sets naming "istio": reads; writes refused when off and
// outside allowed kinds, namespaces and groups; a preview that changes
// nothing (the stand-in's object unchanged, no write request sent);
// confirmed=true applying; the elicitation path (the SDK client answering
// elicitation/create, accepting and declining; a 2026-07-28 request's
// input_required round); the 404, 409 and 422
// messages naming what to do; each write logged with the caller.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { ACCEPT_BOTH, request } from './lib/http.mjs';
import { startKubeStandin } from './lib/kube-standin.mjs';
import { requireBinary } from './lib/procs.mjs';
import { startServer } from './lib/server.mjs';

const TOKEN = 'standin-token-7f3a';
const GROUP = 'networking.istio.io';
const KUBECTL = process.env.SEXTANT_KUBECTL_BIN || '/usr/bin/kubectl';

let kube;
let readGw; // [kubernetes] allow_writes = false
let writeGw; // allow_writes, VirtualService and DestinationRule in bookinfo
let reader;
let writer;
let asker; // declares elicitation
const asked = []; // the elicitation/create requests asker got
let answer = { action: 'accept', content: { apply: true } };

function kubectl(...args) {
	return new Promise((resolve) => {
		execFile(
			KUBECTL,
			['--server', kube.url, '--token', TOKEN, '--certificate-authority', kube.ca, '--cache-dir', path.join(kube.dir, 'cache'), ...args],
			{ encoding: 'utf8', timeout: 20000, env: { ...process.env, HOME: kube.dir, KUBECONFIG: '/dev/null' } },
			(err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }),
		);
	});
}

function gatewayConfig(writes) {
	return `# written by test/integration/istio.test.mjs
[server]
threads = 2
shutdown_grace_s = 2

[workers]
threads = 4
call_timeout_s = 30

[tools]
enabled_sets = ["istio", "core"]

[kubernetes]
api_url = "${kube.url}"
token_file = "${path.join(kube.dir, 'token')}"
ca_file = "${kube.ca}"
timeout_ms = 5000
${writes ? 'allow_writes = true\nallowed_kinds = ["VirtualService", "DestinationRule"]\nallowed_namespaces = ["bookinfo"]' : ''}
`;
}

async function connect(srv, name, capabilities) {
	const c = new Client({ name, version: '1.0.0' }, capabilities ? { capabilities } : undefined);
	await c.connect(new StreamableHTTPClientTransport(new URL(srv.mcpUrl)));
	await c.listTools(); // so that the SDK checks structuredContent against outputSchema
	return c;
}

const call = (c, args) => c.callTool({ name: 'manage_istio_config', arguments: args });
const text = (r) => r.content.map((b) => b.text).join('\n');

function vs(name, ns, spec, labels) {
	return { apiVersion: `${GROUP}/v1`, kind: 'VirtualService', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, spec };
}

const writes = () => kube.requests.filter((r) => r.method !== 'GET').length;

before(async () => {
	requireBinary(KUBECTL, 'kubernetes-client');
	kube = await startKubeStandin({ token: TOKEN });
	fs.writeFileSync(path.join(kube.dir, 'token'), `${TOKEN}\n`);
	for (const [name, writesOn] of [
		['istio-read', false],
		['istio-write', true],
	]) {
		const config = path.join(kube.dir, `${name}.toml`);
		fs.writeFileSync(config, gatewayConfig(writesOn));
		const srv = await startServer({ name, config });
		if (writesOn) writeGw = srv;
		else readGw = srv;
	}
	reader = await connect(readGw, 'istio-reader');
	writer = await connect(writeGw, 'istio-writer');
	asker = await connect(writeGw, 'istio-asker', { elicitation: {} });
	asker.setRequestHandler(ElicitRequestSchema, async (req) => {
		asked.push(req.params);
		return answer;
	});
});

after(async () => {
	for (const c of [reader, writer, asker]) await c?.close();
	for (const s of [readGw, writeGw]) if (s) await s.stop();
	await kube?.stop();
});

describe('the stand-in answers as kube-apiserver does (driven by kubectl)', () => {
	test('kubectl apply, get, patch, replace and delete a VirtualService', async () => {
		const file = path.join(kube.dir, 'vs.yaml');
		const yaml = (subset) => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings
  namespace: kubectl
  labels: {app: ratings}
spec:
  hosts: [ratings]
  http:
  - route:
    - destination: {host: ratings, subset: ${subset}}
`;
		fs.writeFileSync(file, yaml('v1'));
		let r = await kubectl('apply', '--validate=false', '-f', file);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /virtualservice.networking.istio.io\/ratings created/);
		const created = kube.get(GROUP, 'VirtualService', 'kubectl', 'ratings');
		assert.equal(created.spec.http[0].route[0].destination.subset, 'v1');

		r = await kubectl('get', 'virtualservices', '-n', 'kubectl', '-l', 'app=ratings', '-o', 'json');
		assert.equal(r.code, 0, r.stderr);
		const list = JSON.parse(r.stdout);
		assert.deepEqual(
			list.items.map((o) => [o.metadata.name, o.metadata.resourceVersion]),
			[['ratings', created.metadata.resourceVersion]],
		);
		r = await kubectl('get', 'virtualservices', '-n', 'kubectl', '-l', 'app=other', '-o', 'json');
		assert.deepEqual(JSON.parse(r.stdout).items, []);

		r = await kubectl('patch', 'virtualservice', 'ratings', '-n', 'kubectl', '--type=merge', '-p', '{"spec":{"hosts":["ratings","ratings.kubectl"]}}');
		assert.equal(r.code, 0, r.stderr);
		const patched = kube.get(GROUP, 'VirtualService', 'kubectl', 'ratings');
		assert.deepEqual(patched.spec.hosts, ['ratings', 'ratings.kubectl']);
		assert.ok(Number(patched.metadata.resourceVersion) > Number(created.metadata.resourceVersion));
		assert.ok(kube.requests.some((q) => q.method === 'PATCH' && q.contentType === 'application/merge-patch+json'));

		// apply of a changed file: kubectl's three-way merge patch
		fs.writeFileSync(file, yaml('v2'));
		r = await kubectl('apply', '--validate=false', '-f', file);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /configured/);
		assert.equal(kube.get(GROUP, 'VirtualService', 'kubectl', 'ratings').spec.http[0].route[0].destination.subset, 'v2');

		// 409: create of an existing name, replace with a stale resourceVersion
		r = await kubectl('create', '--validate=false', '-f', file);
		assert.equal(r.code, 1);
		assert.match(r.stderr, /\(AlreadyExists\).*"ratings" already exists/);
		const stale = { ...vs('ratings', 'kubectl', { hosts: ['x'] }), metadata: { name: 'ratings', namespace: 'kubectl', resourceVersion: created.metadata.resourceVersion } };
		fs.writeFileSync(path.join(kube.dir, 'stale.json'), JSON.stringify(stale));
		r = await kubectl('replace', '--validate=false', '-f', path.join(kube.dir, 'stale.json'));
		assert.equal(r.code, 1);
		assert.match(r.stderr, /\(Conflict\).*the object has been modified/);

		// 422: a spec that is no object
		fs.writeFileSync(path.join(kube.dir, 'bad.json'), JSON.stringify(vs('bad', 'kubectl', 'not-an-object')));
		r = await kubectl('create', '--validate=false', '-f', path.join(kube.dir, 'bad.json'));
		assert.equal(r.code, 1);
		assert.match(r.stderr, /is invalid: spec/);

		r = await kubectl('delete', 'virtualservice', 'ratings', '-n', 'kubectl', '--wait=false');
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /"ratings" deleted/);
		r = await kubectl('get', 'virtualservice', 'ratings', '-n', 'kubectl');
		assert.equal(r.code, 1);
		assert.match(r.stderr, /\(NotFound\).*"ratings" not found/);
	});

	test('kubectl with a wrong token is refused', async () => {
		const r = await new Promise((resolve) =>
			execFile(KUBECTL, ['--server', kube.url, '--token', 'wrong', '--certificate-authority', kube.ca, '--cache-dir', path.join(kube.dir, 'cache-wrong'), 'get', 'virtualservices', '-A'], { encoding: 'utf8', timeout: 20000, env: { ...process.env, HOME: kube.dir, KUBECONFIG: '/dev/null' } }, (err, stdout, stderr) =>
				resolve({ code: err ? err.code : 0, stderr }),
			),
		);
		assert.equal(r.code, 1);
		assert.match(r.stderr, /Unauthorized|provide credentials/);
	});
});

describe('manage_istio_config through the SDK client', () => {
	before(() => {
		kube.seed(vs('reviews', 'bookinfo', { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews', subset: 'v1' } }] }] }, { app: 'reviews' }));
		kube.seed(vs('details', 'bookinfo', { hosts: ['details'] }, { app: 'details' }));
		kube.seed(vs('frontend', 'shop', { hosts: ['frontend'] }, { app: 'frontend' }));
	});

	test('tools/list: listed in the mesh set, destructiveHint', async () => {
		const { tools } = await writer.listTools();
		const t = tools.find((x) => x.name === 'manage_istio_config');
		assert.ok(t, 'manage_istio_config is listed');
		assert.equal(t.annotations.destructiveHint, true);
		assert.equal(t.annotations.readOnlyHint, false);
	});

	test('list: every namespace, one namespace, a label selector', async () => {
		let r = await call(reader, { action: 'list', kind: 'VirtualService' });
		assert.ok(!r.isError, text(r));
		assert.deepEqual(
			r.structuredContent.items.map((i) => `${i.namespace}/${i.name}`),
			['bookinfo/details', 'bookinfo/reviews', 'shop/frontend'],
		);
		assert.match(text(r), /^3 VirtualService objects in all namespaces/);
		r = await call(reader, { action: 'list', kind: 'VirtualService', namespace: 'bookinfo' });
		assert.deepEqual(
			r.structuredContent.items.map((i) => i.name),
			['details', 'reviews'],
		);
		assert.equal(r.structuredContent.items[1].resourceVersion, kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews').metadata.resourceVersion);
		r = await call(reader, { action: 'list', kind: 'virtualservices', label_selector: 'app in (reviews,frontend)' });
		assert.deepEqual(
			r.structuredContent.items.map((i) => i.name),
			['reviews', 'frontend'],
		);
		assert.ok(kube.requests.some((q) => q.query === '?labelSelector=app%20in%20%28reviews%2Cfrontend%29'));
	});

	test('get: the object as stored', async () => {
		const r = await call(reader, { action: 'get', kind: 'VirtualService', namespace: 'bookinfo', object: 'reviews' });
		assert.ok(!r.isError, text(r));
		assert.deepEqual(r.structuredContent.object, kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews'));
		assert.match(text(r), /VirtualService bookinfo\/reviews \(resourceVersion \d+\)/);
	});

	test('404, and a group outside allowed_groups', async () => {
		let r = await call(reader, { action: 'get', kind: 'VirtualService', namespace: 'bookinfo', object: 'nope' });
		assert.equal(r.isError, true);
		assert.match(text(r), /HTTP 404.*"nope" not found: check the name with action=list/);
		r = await call(reader, { action: 'list', group: 'apps', kind: 'Deployment' });
		assert.equal(r.isError, true);
		assert.match(text(r), /group "apps" is not one this tool reaches: \[kubernetes\] allowed_groups is networking.istio.io/);
	});

	test('writes refused when allow_writes is off: nothing sent', async () => {
		const before = writes();
		for (const args of [
			{ action: 'create', namespace: 'bookinfo', object: 'new', json_data: JSON.stringify({ spec: { hosts: ['new'] } }), confirmed: true },
			{ action: 'patch', namespace: 'bookinfo', object: 'reviews', json_data: '{"spec":{"hosts":["x"]}}', confirmed: true },
			{ action: 'delete', namespace: 'bookinfo', object: 'reviews', confirmed: true },
		]) {
			const r = await call(reader, { kind: 'VirtualService', ...args });
			assert.equal(r.isError, true);
			assert.match(text(r), new RegExp(`writes are off: the gateway's \\[kubernetes\\] allow_writes is false, so ${args.action} is refused`));
		}
		assert.equal(writes(), before);
		assert.ok(kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews'));
	});

	test('writes outside allowed_kinds or allowed_namespaces refused', async () => {
		const before = writes();
		let r = await call(writer, { action: 'delete', kind: 'Gateway', namespace: 'bookinfo', object: 'gw', confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /kind "Gateway" may not be written: \[kubernetes\] allowed_kinds is VirtualService, DestinationRule/);
		r = await call(writer, { action: 'delete', kind: 'VirtualService', namespace: 'shop', object: 'frontend', confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /namespace "shop" may not be written: \[kubernetes\] allowed_namespaces is bookinfo/);
		assert.equal(writes(), before);
		assert.ok(kube.get(GROUP, 'VirtualService', 'shop', 'frontend'));
	});

	test('create: the preview changes nothing, confirmed=true creates, again is 409', async () => {
		const args = { action: 'create', kind: 'VirtualService', namespace: 'bookinfo', object: 'ratings', json_data: JSON.stringify({ spec: { hosts: ['ratings'] } }) };
		const before = writes();
		let r = await call(writer, args);
		assert.ok(!r.isError, text(r));
		assert.equal(r.structuredContent.applied, false);
		assert.deepEqual(r.structuredContent.object, vs('ratings', 'bookinfo', { hosts: ['ratings'] }));
		assert.match(text(r), /Preview only: nothing changed.*confirmed=true/s);
		assert.equal(writes(), before);
		assert.equal(kube.get(GROUP, 'VirtualService', 'bookinfo', 'ratings'), undefined);

		r = await call(writer, { ...args, confirmed: true });
		assert.ok(!r.isError, text(r));
		assert.equal(r.structuredContent.applied, true);
		const stored = kube.get(GROUP, 'VirtualService', 'bookinfo', 'ratings');
		assert.deepEqual(stored.spec, { hosts: ['ratings'] });
		assert.match(text(r), new RegExp(`Created VirtualService bookinfo/ratings \\(resourceVersion ${stored.metadata.resourceVersion}\\)`));
		const post = kube.requests.filter((q) => q.method === 'POST').at(-1);
		assert.equal(post.path, '/apis/networking.istio.io/v1/namespaces/bookinfo/virtualservices');
		// the write is logged with the caller
		assert.match(writeGw.stderr(), /kubernetes write create VirtualService bookinfo\/ratings \(networking.istio.io\/v1\) by session \S+ client istio-writer 1.0.0: applied/);

		r = await call(writer, { ...args, confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /HTTP 409.*"ratings" already exists: an object of that name exists: patch it, or create under another name/);
	});

	test('create: a body the API refuses is 422 naming the field', async () => {
		const r = await call(writer, { action: 'create', kind: 'VirtualService', namespace: 'bookinfo', object: 'broken', json_data: '{"spec": "not-an-object"}', confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /HTTP 422.*is invalid: spec: .*: fix json_data where the message says/);
		assert.equal(kube.get(GROUP, 'VirtualService', 'bookinfo', 'broken'), undefined);
		const bad = await call(writer, { action: 'create', kind: 'VirtualService', namespace: 'bookinfo', object: 'broken', json_data: '{"spec": ', confirmed: true });
		assert.equal(bad.isError, true);
		assert.match(text(bad), /json_data: expected a JSON object/);
		const plural = await call(writer, { action: 'create', kind: 'virtualservices', namespace: 'bookinfo', object: 'broken', json_data: '{"spec": {}}', confirmed: true });
		assert.equal(plural.isError, true);
		assert.match(text(plural), /kind "virtualservices" is a resource name: create needs the Kind \("VirtualService"\)/);
	});

	test('patch: the preview lists the changes and changes nothing, confirmed=true applies; stale resourceVersion is 409', async () => {
		const was = kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews');
		const patch = { spec: { http: [{ route: [{ destination: { host: 'reviews', subset: 'v2' } }] }] }, metadata: { labels: { canary: 'true' } } };
		const args = { action: 'patch', kind: 'VirtualService', namespace: 'bookinfo', object: 'reviews', json_data: JSON.stringify(patch) };
		const before = writes();
		let r = await call(writer, args);
		assert.ok(!r.isError, text(r));
		assert.equal(r.structuredContent.applied, false);
		assert.deepEqual(
			r.structuredContent.changes.map((c) => [c.op, c.path]),
			[
				['add', '/metadata/labels/canary'],
				['replace', '/spec/http'],
			],
		);
		assert.match(text(r), /2 changes/);
		assert.equal(writes(), before);
		assert.deepEqual(kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews'), was);

		r = await call(writer, { ...args, confirmed: true });
		assert.ok(!r.isError, text(r));
		assert.equal(r.structuredContent.applied, true);
		const now = kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews');
		assert.equal(now.spec.http[0].route[0].destination.subset, 'v2');
		assert.equal(now.metadata.labels.canary, 'true');
		assert.ok(r.structuredContent.changes.some((c) => c.path === '/metadata/resourceVersion'));
		assert.equal(kube.requests.filter((q) => q.method === 'PATCH').at(-1).contentType, 'application/merge-patch+json');

		r = await call(writer, { ...args, json_data: JSON.stringify({ metadata: { resourceVersion: was.metadata.resourceVersion }, spec: { hosts: ['x'] } }), confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /HTTP 409.*the object has been modified.*get it again and retry with the new one/);
		assert.deepEqual(kube.get(GROUP, 'VirtualService', 'bookinfo', 'reviews').spec.hosts, ['reviews']);
	});

	test('delete: the preview shows the object and keeps it, confirmed=true deletes, then 404', async () => {
		const args = { action: 'delete', kind: 'VirtualService', namespace: 'bookinfo', object: 'details' };
		let r = await call(writer, args);
		assert.ok(!r.isError, text(r));
		assert.equal(r.structuredContent.applied, false);
		assert.deepEqual(r.structuredContent.object, kube.get(GROUP, 'VirtualService', 'bookinfo', 'details'));
		assert.ok(kube.get(GROUP, 'VirtualService', 'bookinfo', 'details'));
		r = await call(writer, { ...args, confirmed: true });
		assert.ok(!r.isError, text(r));
		assert.match(text(r), /Deleted VirtualService bookinfo\/details/);
		assert.equal(kube.get(GROUP, 'VirtualService', 'bookinfo', 'details'), undefined);
		r = await call(writer, { ...args, confirmed: true });
		assert.equal(r.isError, true);
		assert.match(text(r), /HTTP 404.*"details" not found/);
	});

	test('a client with elicitation is asked: accept applies, decline changes nothing', async () => {
		answer = { action: 'accept', content: { apply: true } };
		asked.length = 0;
		const args = { action: 'create', kind: 'DestinationRule', namespace: 'bookinfo', object: 'reviews', json_data: JSON.stringify({ spec: { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }] } }) };
		let r = await call(asker, args);
		assert.ok(!r.isError, text(r));
		assert.equal(asked.length, 1);
		assert.match(asked[0].message, /Apply this change to the cluster\?\ncreate DestinationRule bookinfo\/reviews/);
		assert.deepEqual(asked[0].requestedSchema.required, ['apply']);
		assert.equal(r.structuredContent.applied, true);
		assert.equal(kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews').spec.host, 'reviews');

		// declined, even with confirmed=true: the person decides
		answer = { action: 'decline' };
		const was = kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews');
		const before = writes();
		r = await call(asker, { action: 'delete', kind: 'DestinationRule', namespace: 'bookinfo', object: 'reviews', confirmed: true });
		assert.ok(!r.isError, text(r));
		assert.equal(asked.length, 2);
		assert.match(asked[1].message, /delete DestinationRule bookinfo\/reviews/);
		assert.equal(r.structuredContent.applied, false);
		assert.match(text(r), /Not applied: the user did not confirm the delete/);
		assert.equal(writes(), before);
		assert.deepEqual(kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews'), was);

		// accepted without the box ticked is no
		answer = { action: 'accept', content: { apply: false } };
		r = await call(asker, { action: 'patch', kind: 'DestinationRule', namespace: 'bookinfo', object: 'reviews', json_data: '{"spec":{"host":"x"}}' });
		assert.equal(r.structuredContent.applied, false);
		assert.equal(kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews').spec.host, 'reviews');
	});

	test('a 2026-07-28 request with elicitation: input_required, then applied on the retry with the answer', async () => {
		const TOOL = 'manage_istio_config';
		const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
		const args = { action: 'patch', kind: 'DestinationRule', namespace: 'bookinfo', object: 'reviews', json_data: '{"spec":{"trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}}' };
		const post = (id, extra = {}) =>
			request(writeGw.mcpUrl, {
				method: 'POST',
				headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': TOOL },
				body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: args, ...extra, _meta: META } }),
			});
		const before = writes();
		const first = await post(1);
		assert.equal(first.status, 200, first.text);
		assert.equal(first.json.result.resultType, 'input_required', first.text);
		const ask = first.json.result.inputRequests.confirm_write;
		assert.equal(ask.method, 'elicitation/create');
		assert.match(ask.params.message, /patch DestinationRule bookinfo\/reviews .*1 change\n  add \/spec\/trafficPolicy/);
		assert.equal(writes(), before);
		assert.equal(kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews').spec.trafficPolicy, undefined);
		const done = await post(2, { inputResponses: { confirm_write: { action: 'accept', content: { apply: true } } }, requestState: first.json.result.requestState });
		assert.equal(done.json.result.resultType, 'complete', done.text);
		assert.equal(done.json.result.structuredContent.applied, true, done.text);
		assert.equal(kube.get(GROUP, 'DestinationRule', 'bookinfo', 'reviews').spec.trafficPolicy.tls.mode, 'ISTIO_MUTUAL');
	});
});

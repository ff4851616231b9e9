// kube-standin.mjs - a small stand-in for the Kubernetes API server, for
// manage_istio_config's tests (a real kube-apiserver needs etcd and cannot
// run on these machines).  It serves, over HTTPS with a throwaway CA made
// by openssl, what kubectl and the gateway use of custom resources:
// discovery (/api, /apis, /apis/{group}/{version}), and CRUD under
// /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}] with
// resourceVersion, list with labelSelector, create (POST), JSON merge
// patch (PATCH, application/merge-patch+json), replace (PUT) and delete,
// answering errors as the API does: a Status object with reason and code
// (401 without the bearer token, 404 NotFound, 409 AlreadyExists on create
// of an existing name, 409 Conflict on a stale resourceVersion, 415 for
// another patch type, 422 Invalid for a bad body).  istio.test.mjs drives
// it with kubectl first, to show it answers as kube-apiserver does.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

// The kinds served: group -> version -> kinds.
export const KINDS = {
	'networking.istio.io': { v1: ['VirtualService', 'DestinationRule', 'Gateway', 'ServiceEntry'] },
	'security.istio.io': { v1: ['AuthorizationPolicy', 'PeerAuthentication'] },
	'gateway.networking.k8s.io': { v1: ['HTTPRoute', 'Gateway'] },
};

const plural = (kind) => {
	const k = kind.toLowerCase();
	if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
	if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
	return `${k}s`;
};

function run(cmd, args, cwd) {
	const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
	if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
}

// A CA and a certificate for 127.0.0.1 signed by it, in dir.
export function makeCerts(dir) {
	const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
	run('openssl', ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=kube-standin-ca'], dir);
	run('openssl', ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-standin'], dir);
	fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
	run('openssl', ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'ext.cnf'], dir);
	return { ca: path.join(dir, 'ca.crt'), cert: path.join(dir, 'server.crt'), key: path.join(dir, 'server.key') };
}

// "app=reviews,version!=v1,tier in (a,b),!canary,env" against labels.
export function selects(selector, labels = {}) {
	const terms = selector.match(/[^,(]+(\([^)]*\))?/g) ?? [];
	return terms.every((raw) => {
		const t = raw.trim();
		let m;
		if ((m = t.match(/^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/))) {
			const set = m[3].split(',').map((s) => s.trim());
			return (m[2] === 'in') === set.includes(labels[m[1]]);
		}
		if ((m = t.match(/^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/))) {
			return m[2] === '!=' ? labels[m[1]] !== m[3] : labels[m[1]] === m[3];
		}
		if ((m = t.match(/^!([\w./-]+)$/))) return !(m[1] in labels);
		return t in labels;
	});
}

// RFC 7386.
export function mergePatch(target, patch) {
	if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
	const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
	for (const [k, v] of Object.entries(patch)) {
		if (v === null) delete out[k];
		else out[k] = mergePatch(out[k], v);
	}
	return out;
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export class KubeStandin {
	constructor({ token }) {
		this.token = token;
		this.objects = new Map(); // "group/plural/ns/name" -> object
		this.rv = 100;
		this.uid = 0;
		this.requests = []; // {method, path, contentType}
		this.types = new Map(); // "group/version/plural" -> {group, version, kind, plural}
		for (const [group, versions] of Object.entries(KINDS))
			for (const [version, kinds] of Object.entries(versions))
				for (const kind of kinds) this.types.set(`${group}/${version}/${plural(kind)}`, { group, version, kind, plural: plural(kind) });
	}

	// The object stored, as the API would answer it (a copy), or undefined.
	get(group, kind, ns, name) {
		const o = this.objects.get(`${group}/${plural(kind)}/${ns}/${name}`);
		return o && structuredClone(o);
	}

	// Puts an object in directly, as if created earlier.
	seed(obj) {
		const [group, version] = obj.apiVersion.split('/');
		const t = this.types.get(`${group}/${version}/${plural(obj.kind)}`);
		return this.#store(t, obj.metadata.namespace, this.#fresh(t, obj.metadata.namespace, obj));
	}

	#fresh(t, ns, body) {
		return {
			...body,
			apiVersion: `${t.group}/${t.version}`,
			kind: t.kind,
			metadata: { ...body.metadata, namespace: ns, uid: `uid-${++this.uid}`, creationTimestamp: '2026-11-28T10:00:00Z', generation: 1 },
		};
	}

	#store(t, ns, obj) {
		obj.metadata.resourceVersion = String(++this.rv);
		this.objects.set(`${t.group}/${t.plural}/${ns}/${obj.metadata.name}`, obj);
		return structuredClone(obj);
	}

	async start(dir) {
		const c = makeCerts(dir);
		this.ca = c.ca;
		this.server = https.createServer({ key: fs.readFileSync(c.key), cert: fs.readFileSync(c.cert) }, (req, res) => this.#serve(req, res));
		await new Promise((resolve, reject) => {
			this.server.once('error', reject);
			this.server.listen(0, '127.0.0.1', resolve);
		});
		this.url = `https://127.0.0.1:${this.server.address().port}`;
		return this;
	}

	async stop() {
		this.server?.closeAllConnections();
		await new Promise((r) => (this.server ? this.server.close(r) : r()));
		if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
	}

	#send(res, code, body) {
		res.writeHead(code, { 'Content-Type': 'application/json' });
		res.end(JSON.stringify(body));
	}

	#status(res, code, reason, message, details) {
		this.#send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code });
	}

	async #serve(req, res) {
		const url = new URL(req.url, 'https://x');
		let raw = '';
		for await (const chunk of req) raw += chunk;
		this.requests.push({ method: req.method, path: url.pathname, query: url.search, contentType: req.headers['content-type'] ?? '' });
		if (req.headers.authorization !== `Bearer ${this.token}`) return this.#status(res, 401, 'Unauthorized', 'Unauthorized');
		const p = url.pathname.replace(/\/+$/, '');
		// discovery, the legacy (unaggregated) form kubectl falls back to
		if (p === '/version') return this.#send(res, 200, { major: '1', minor: '32', gitVersion: 'v1.32.0-standin', platform: 'linux/amd64' });
		if (p === '/api') return this.#send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
		if (p === '/api/v1') return this.#send(res, 200, { kind: 'APIResourceList', groupVersion: 'v1', resources: [] });
		if (p === '/apis') {
			const groups = Object.entries(KINDS).map(([name, versions]) => {
				const vs = Object.keys(versions).map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
				return { name, versions: vs, preferredVersion: vs[0] };
			});
			return this.#send(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
		}
		// every namespace exists (kubectl asks after a 404)
		let m = p.match(/^\/api\/v1\/namespaces\/([^/]+)$/);
		if (m && req.method === 'GET') return this.#send(res, 200, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: m[1] }, status: { phase: 'Active' } });
		m = p.match(/^\/apis\/([^/]+)\/([^/]+)$/);
		if (m) {
			const resources = [...this.types.values()]
				.filter((t) => t.group === m[1] && t.version === m[2])
				.map((t) => ({ name: t.plural, singularName: t.kind.toLowerCase(), namespaced: true, kind: t.kind, verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] }));
			if (resources.length === 0) return this.#status(res, 404, 'NotFound', 'the server could not find the requested resource');
			return this.#send(res, 200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${m[1]}/${m[2]}`, resources });
		}
		m = p.match(/^\/apis\/([^/]+)\/([^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/);
		const t = m && this.types.get(`${m[1]}/${m[2]}/${m[4]}`);
		if (!t) return this.#status(res, 404, 'NotFound', 'the server could not find the requested resource');
		const [ns, name] = [m[3], m[5]];
		const resource = `${t.plural}.${t.group}`;
		const key = `${t.group}/${t.plural}/${ns}/${name}`;
		const notFound = () => this.#status(res, 404, 'NotFound', `${resource} "${name}" not found`, { name, group: t.group, kind: t.plural });
		const invalid = (field, why) =>
			this.#status(res, 422, 'Invalid', `${t.kind}.${t.group} "${name ?? '<unknown>'}" is invalid: ${field}: ${why}`, { name, group: t.group, kind: t.kind, causes: [{ reason: 'FieldValueInvalid', message: why, field }] });
		const parse = () => {
			try {
				return JSON.parse(raw);
			} catch (e) {
				this.#status(res, 400, 'BadRequest', `the body of the request was in an unknown format: ${e.message}`);
				return undefined;
			}
		};
		// a body's checks, those the CRDs' schemas make
		const check = (o, nameWanted) => {
			if (o === null || typeof o !== 'object' || Array.isArray(o)) return invalid('<body>', 'expected an object'), false;
			if (o.apiVersion !== undefined && o.apiVersion !== `${t.group}/${t.version}`) return invalid('apiVersion', `must be ${t.group}/${t.version}`), false;
			if (o.kind !== undefined && o.kind !== t.kind) return invalid('kind', `must be ${t.kind}`), false;
			const n = o.metadata?.name;
			if (typeof n !== 'string' || !NAME_RE.test(n)) return invalid('metadata.name', `Invalid value: ${JSON.stringify(n)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`), false;
			if (nameWanted !== undefined && n !== nameWanted) return invalid('metadata.name', `Invalid value: "${n}": the name of the object (${n}) does not match the name on the URL (${nameWanted})`), false;
			if (o.spec !== undefined && (o.spec === null || typeof o.spec !== 'object' || Array.isArray(o.spec)))
				return invalid('spec', `Invalid value: "${Array.isArray(o.spec) ? 'array' : typeof o.spec}": spec in body must be of type object: "${Array.isArray(o.spec) ? 'array' : typeof o.spec}"`), false;
			return true;
		};

		if (req.method === 'GET' && name === undefined) {
			const sel = url.searchParams.get('labelSelector');
			const items = [...this.objects.entries()]
				.filter(([k, o]) => k.startsWith(`${t.group}/${t.plural}/`) && (ns === undefined || o.metadata.namespace === ns) && (!sel || selects(sel, o.metadata.labels)))
				.map(([, o]) => o)
				.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
			return this.#send(res, 200, { apiVersion: `${t.group}/${t.version}`, kind: `${t.kind}List`, metadata: { resourceVersion: String(this.rv) }, items });
		}
		if (req.method === 'GET') return this.objects.has(key) ? this.#send(res, 200, this.objects.get(key)) : notFound();
		if (ns === undefined) return this.#status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
		if (req.method === 'POST' && name === undefined) {
			const o = parse();
			if (o === undefined || !check(o)) return;
			const k = `${t.group}/${t.plural}/${ns}/${o.metadata.name}`;
			if (this.objects.has(k)) return this.#status(res, 409, 'AlreadyExists', `${resource} "${o.metadata.name}" already exists`, { name: o.metadata.name, group: t.group, kind: t.plural });
			if (o.metadata.namespace !== undefined && o.metadata.namespace !== ns)
				return this.#status(res, 400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
			return this.#send(res, 201, this.#store(t, ns, this.#fresh(t, ns, o)));
		}
		if (name === undefined) return this.#status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
		const cur = this.objects.get(key);
		if (req.method === 'DELETE') {
			if (!cur) return notFound();
			this.objects.delete(key);
			return this.#send(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, group: t.group, kind: t.plural, uid: cur.metadata.uid } });
		}
		if (req.method !== 'PATCH' && req.method !== 'PUT') return this.#status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
		if (!cur) return notFound();
		const ct = (req.headers['content-type'] ?? '').split(';')[0].trim();
		if (req.method === 'PATCH' && ct !== 'application/merge-patch+json')
			return this.#status(res, 415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json`);
		const body = parse();
		if (body === undefined) return;
		if (body === null || typeof body !== 'object' || Array.isArray(body)) return invalid('<body>', 'expected an object');
		const next = req.method === 'PATCH' ? mergePatch(cur, body) : body;
		const rvSent = body.metadata?.resourceVersion;
		if (rvSent !== undefined && rvSent !== cur.metadata.resourceVersion)
			return this.#status(res, 409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`, { name, group: t.group, kind: t.plural });
		if (!check(next, name)) return;
		// what the server owns stays its own
		next.metadata = { ...next.metadata, namespace: ns, uid: cur.metadata.uid, creationTimestamp: cur.metadata.creationTimestamp, generation: cur.metadata.generation + 1 };
		next.apiVersion = `${t.group}/${t.version}`;
		next.kind = t.kind;
		return this.#send(res, 200, this.#store(t, ns, next));
	}
}

// A stand-in on a free loopback port, its certificates in a new
// temporary directory.
export async function startKubeStandin({ token = 'standin-token' } = {}) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-standin-'));
	const k = new KubeStandin({ token });
	k.dir = dir;
	return k.start(dir);
}

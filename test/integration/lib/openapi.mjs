// openapi.mjs - checks REST answers against the gateway's own OpenAPI
// document (GET /api/openapi.json): the operation is found by method and
// path (a concrete path first, then the templates), the response by status
// (else "default"), its schema by content type, and a JSON body is
// validated with Ajv 2020 (OpenAPI 3.1 schemas are JSON Schema 2020-12).
// An answer the document does not describe (no path, method, status or
// content type) is an error too: the document must cover what the facade
// sends.

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const METHODS = new Set(['get', 'head', 'post', 'put', 'patch', 'delete', 'options']);

export class OpenApiChecker {
	constructor(doc) {
		this.doc = doc;
		this.ajv = new Ajv2020({ strict: false, allErrors: false });
		addFormats(this.ajv);
		this.ajv.addSchema(doc, 'openapi.json');
		this.compiled = new Map();
		this.templates = Object.keys(doc.paths)
			.filter((p) => p.includes('{'))
			.map((p) => ({ p, re: new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`) }));
		this.checked = 0;
	}

	static async load(baseUrl, request, headers = {}) {
		const r = await request(`${baseUrl}/api/openapi.json`, { headers: { accept: 'application/json', ...headers } });
		if (r.status !== 200) throw new Error(`GET /api/openapi.json: HTTP ${r.status} ${r.text.slice(0, 200)}`);
		return new OpenApiChecker(r.json);
	}

	// The path item of a request path (no query string), or undefined.
	pathOf(p) {
		if (this.doc.paths[p]) return p;
		return this.templates.find((t) => t.re.test(p))?.p;
	}

	// "#/a/b" -> the object it points at in the document.
	deref(x) {
		while (x && x.$ref) {
			x = x.$ref
				.slice(2)
				.split('/')
				.map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
				.reduce((o, k) => o?.[k], this.doc);
		}
		return x;
	}

	// Throws when r (as lib/http.mjs request returns it) is not what the
	// document says method url answers.
	check(method, url, r) {
		const u = new URL(url, 'http://x');
		// the gateway's other endpoints (/healthz, /mcp) are not the facade's
		if (!u.pathname.startsWith('/api/')) return;
		const p = this.pathOf(decodeURIComponent(u.pathname)) ?? this.pathOf(u.pathname);
		const what = `${method} ${u.pathname} -> ${r.status}`;
		if (!p) {
			// a path no route has: nothing to describe but the 404
			if (r.status === 404) return;
			throw new Error(`${what}: the document has no path for it`);
		}
		const m = method.toLowerCase();
		if (!METHODS.has(m)) throw new Error(`${what}: method`);
		// HEAD answers as GET does, without a body
		const op = this.doc.paths[p][m === 'head' ? 'get' : m];
		if (!op) throw new Error(`${what}: the document has no ${m} for ${p}`);
		const resp = this.deref(op.responses?.[String(r.status)] ?? op.responses?.default);
		if (!resp) throw new Error(`${what}: the document has no response ${r.status} for ${m} ${p}`);
		this.checked++;
		if (m === 'head' || r.status === 304 || r.status === 204 || !r.text) return;
		const ctype = (r.headers['content-type'] ?? '').split(';')[0].trim();
		const media = resp.content?.[ctype];
		if (!media) throw new Error(`${what}: content type ${ctype} not in the document (${Object.keys(resp.content ?? {}).join(', ')})`);
		if (!ctype.endsWith('json') || !media.schema) return;
		const ptr = `#/paths/${p.replaceAll('~', '~0').replaceAll('/', '~1')}/${m}/responses/${op.responses[String(r.status)] ? r.status : 'default'}`;
		const key = `${ptr}|${ctype}`;
		let v = this.compiled.get(key);
		if (!v) {
			// through a response $ref: validate against the referenced one
			const ref = op.responses[String(r.status)] ?? op.responses.default;
			const base = ref.$ref ?? ptr;
			v = this.ajv.compile({ $ref: `openapi.json${base}/content/${ctype.replace('/', '~1')}/schema` });
			this.compiled.set(key, v);
		}
		if (!v(r.json)) throw new Error(`${what}: body does not match the document: ${this.ajv.errorsText(v.errors)} in ${r.text.slice(0, 300)}`);
	}
}

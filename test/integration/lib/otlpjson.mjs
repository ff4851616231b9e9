// otlpjson.mjs - spans written by hand in OTLP/JSON and posted to the
// gateway's /v1/traces, for tests that need exact control over ids, times,
// kinds and attributes (the SDK picks its own).  A span seen by eBPF is one
// whose resource carries telemetry.sdk.name "beyla" (lib/otlp/otlp.h
// otlp_default_source_rules); anything else is OTLP.

import crypto from 'node:crypto';

import { request } from './http.mjs';

export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 };
export const STATUS = { UNSET: 0, OK: 1, ERROR: 2 };
// telemetry.sdk.name of each source: "beyla" is one of the default eBPF
// markers, "opentelemetry" is what the SDKs send.
export const SDK_NAME = { ebpf: 'beyla', otlp: 'opentelemetry' };

// A random id of n bytes in hex, never all zero.
export function newId(bytes) {
	const id = crypto.randomBytes(bytes);
	id[0] |= 0x10;
	return id.toString('hex');
}

// OTLP/JSON attribute list from a plain object: integers become intValue,
// other numbers doubleValue, booleans boolValue, the rest stringValue.
// undefined / null values are left out.
export function attrs(obj) {
	const out = [];
	for (const [key, v] of Object.entries(obj ?? {})) {
		if (v === undefined || v === null) continue;
		let value;
		if (typeof v === 'number') value = Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
		else if (typeof v === 'boolean') value = { boolValue: v };
		else value = { stringValue: String(v) };
		out.push({ key, value });
	}
	return out;
}

// One span in OTLP/JSON form.  startNs and durNs are BigInt nanoseconds.
export function span({ traceId, spanId, parentSpanId, name, kind = KIND.INTERNAL, startNs, durNs, attributes, status }) {
	const s = {
		traceId,
		spanId,
		name,
		kind,
		startTimeUnixNano: startNs.toString(),
		endTimeUnixNano: (startNs + durNs).toString(),
		attributes: attrs(attributes),
	};
	if (parentSpanId) s.parentSpanId = parentSpanId;
	if (status) s.status = status;
	return s;
}

// Collects spans by (service, source) and posts them as OTLP/JSON requests
// of at most maxSpans spans each.
export class SpanBatch {
	constructor() {
		this.groups = new Map(); // "service\0source" -> {service, source, spans}
		this.count = 0;
	}

	add(service, source, s) {
		if (source !== 'ebpf' && source !== 'otlp') throw new Error(`source must be ebpf or otlp, got ${source}`);
		const key = `${service}\0${source}`;
		let g = this.groups.get(key);
		if (!g) this.groups.set(key, (g = { service, source, spans: [] }));
		g.spans.push(s);
		this.count++;
	}

	// Request bodies, each at most maxSpans spans.
	bodies(maxSpans = 4000) {
		const out = [];
		let cur = [];
		let n = 0;
		const flush = () => {
			if (cur.length) out.push(JSON.stringify({ resourceSpans: cur }));
			cur = [];
			n = 0;
		};
		for (const g of this.groups.values()) {
			for (let i = 0; i < g.spans.length;) {
				const part = g.spans.slice(i, i + (maxSpans - n));
				i += part.length;
				cur.push({
					resource: {
						attributes: attrs({
							'service.name': g.service,
							'telemetry.sdk.name': SDK_NAME[g.source],
							'telemetry.sdk.language': g.source === 'ebpf' ? 'go' : 'nodejs',
						}),
					},
					scopeSpans: [{ scope: { name: g.source === 'ebpf' ? 'beyla' : 'sextant-query-test', version: '1.0.0' }, spans: part }],
				});
				n += part.length;
				if (n >= maxSpans) flush();
			}
		}
		flush();
		return out;
	}

	// POSTs every body to baseUrl/v1/traces; throws unless each is answered
	// 200 with nothing rejected.  The gateway answers after COMMIT, so the
	// rows are queryable when this resolves.
	async post(baseUrl) {
		for (const body of this.bodies()) {
			const r = await request(`${baseUrl}/v1/traces`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body,
				timeoutMs: 60000,
			});
			if (r.status !== 200 || Number(r.json?.partialSuccess?.rejectedSpans ?? 0) > 0) {
				throw new Error(`POST /v1/traces: HTTP ${r.status}: ${r.text.slice(0, 500)}`);
			}
		}
	}
}

// prometheus.mjs - a real Prometheus (Debian /usr/bin/prometheus) for the
// integration tests: its own temp dir (config, TSDB, log), a free loopback
// port, static scrape targets, and helpers that ask its HTTP API directly so
// a test can compare a tool's numbers with Prometheus's own answers.
// stop()/start() take it down and bring it back on the same port and data.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Proc, freePort, requireBinary, waitUntil } from './procs.mjs';
import { LOG_DIR } from './server.mjs';

export const PROMETHEUS_BIN = process.env.SEXTANT_PROMETHEUS_BIN || '/usr/bin/prometheus';

const dirs = new Set();
process.on('exit', () => {
	for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

// targets: [{job, target: 'host:port', path = '/metrics', honorTimestamps
// = true}].  Every job is scraped every intervalS seconds.
function configText(targets, intervalS) {
	const lines = ['global:', `  scrape_interval: ${intervalS}s`, `  scrape_timeout: ${intervalS}s`, 'scrape_configs:'];
	for (const t of targets) {
		lines.push(`  - job_name: ${JSON.stringify(t.job)}`);
		lines.push(`    metrics_path: ${JSON.stringify(t.path ?? '/metrics')}`);
		lines.push(`    honor_timestamps: ${t.honorTimestamps ?? true}`);
		lines.push('    static_configs:');
		lines.push(`      - targets: [${JSON.stringify(t.target)}]`);
	}
	return lines.join('\n') + '\n';
}

export class Prometheus {
	constructor({ name, dir, port, targets, intervalS }) {
		this.name = name;
		this.dir = dir;
		this.port = port;
		this.url = `http://127.0.0.1:${port}`;
		this.configPath = path.join(dir, 'prometheus.yml');
		this.logPath = path.join(LOG_DIR, `${name}-${port}-${Date.now()}.log`);
		fs.writeFileSync(this.configPath, configText(targets, intervalS));
		this.proc = null;
	}

	get running() {
		return this.proc !== null && this.proc.exitStatus === null;
	}

	// Starts (or restarts) the server on this.port with this.dir's data
	// and waits for /-/ready.
	async start() {
		if (this.running) throw new Error(`${this.name}: already running`);
		this.proc = new Proc(
			this.name,
			PROMETHEUS_BIN,
			[
				`--config.file=${this.configPath}`,
				`--storage.tsdb.path=${path.join(this.dir, 'data')}`,
				`--web.listen-address=127.0.0.1:${this.port}`,
				'--storage.tsdb.retention.time=1d',
				'--log.level=warn',
			],
			this.logPath,
		);
		await waitUntil(this.proc, '/-/ready', async () => {
			const res = await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(1000) });
			await res.arrayBuffer();
			return res.status === 200;
		});
	}

	// SIGTERM and wait; throws unless it exits 0.  The data stays.
	async stop() {
		if (!this.proc) return;
		const st = await this.proc.stop();
		if (st.code !== 0) throw new Error(`${this.name}: exited ${JSON.stringify(st)} after SIGTERM; log ${this.logPath}:\n${this.proc.tail()}`);
	}

	// stop() and remove the temp dir.
	async close() {
		try {
			await this.stop();
		} finally {
			fs.rmSync(this.dir, { recursive: true, force: true });
			dirs.delete(this.dir);
		}
	}

	// GET /api/v1/<what>?params; resolves to `data` of a success answer,
	// rejects with Prometheus's error otherwise.
	async api(what, params = {}) {
		const u = new URL(`${this.url}/api/v1/${what}`);
		for (const [k, v] of Object.entries(params)) {
			for (const x of Array.isArray(v) ? v : [v]) u.searchParams.append(k, String(x));
		}
		const res = await fetch(u, { signal: AbortSignal.timeout(10000) });
		const body = await res.json();
		if (body.status !== 'success') throw new Error(`${this.name} ${u}: ${body.errorType}: ${body.error}`);
		return body.data;
	}

	// Instant query at time (seconds; default now): [{metric, value: [t, "v"]}].
	async query(expr, time) {
		const d = await this.api('query', time === undefined ? { query: expr } : { query: expr, time });
		return d.result;
	}

	// Range query (start, end in seconds; step in seconds):
	// [{metric, values: [[t, "v"], ...]}].
	async queryRange(expr, start, end, step) {
		const d = await this.api('query_range', { query: expr, start, end, step });
		return d.result;
	}

	// Waits until the instant query expr has at least min series.
	async waitForSeries(expr, { min = 1, timeoutMs = 20000 } = {}) {
		await waitUntil(this.proc, `${min} series for ${expr}`, async () => (await this.query(expr)).length >= min, timeoutMs);
	}
}

// Creates the temp dir and config and starts the server.  targets as for
// configText.  Fails with a clear message when Prometheus is not installed.
export async function startPrometheus({ name = 'prometheus', targets = [], intervalS = 1, port } = {}) {
	requireBinary(PROMETHEUS_BIN, 'prometheus');
	fs.mkdirSync(LOG_DIR, { recursive: true });
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sextant-${name}-`));
	dirs.add(dir);
	const prom = new Prometheus({ name, dir, port: port ?? (await freePort()), targets, intervalS });
	await prom.start();
	return prom;
}

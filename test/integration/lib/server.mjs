// server.mjs - runs the real build/asan/sextant for the integration tests.
// startServer() picks a free loopback port (retrying if another process takes
// it first), waits for /healthz and sends the server's stderr to a log file;
// stop() sends SIGTERM and fails unless the server exits 0 within the grace
// period with no sanitizer report in its stderr; kill({ check: true })
// crashes it on purpose (SIGKILL) and checks its stderr up to then.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = process.env.SEXTANT_BIN || path.join(ROOT, 'build/asan/sextant');
export const CONFORMANCE_CONFIG = path.join(ROOT, 'test/conformance.toml');
export const LOG_DIR = process.env.SEXTANT_TEST_LOGDIR || path.join(ROOT, 'build/asan/test-logs');

// Seconds the server is given to drain on SIGTERM (server.shutdown_grace_s);
// stop() waits that long plus STOP_MARGIN_MS for the process to exit.
export const GRACE_S = 5;
const STOP_MARGIN_MS = 5000;
const READY_TIMEOUT_MS = 20000;
const PORT_TRIES = 5;

// The sanitizer options test/run.sh sets; applied here too so a test file
// run on its own (node --test FILE) checks the same things.
const SANITIZER_ENV = {
	ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0',
	UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};

const SANITIZER_RE = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer/;

// Lines of text that are sanitizer reports (ASan, UBSan, LSan).
export function sanitizerReports(text) {
	return text.split('\n').filter((l) => SANITIZER_RE.test(l));
}

const live = new Set();
process.on('exit', () => {
	for (const s of live) s.proc.kill('SIGKILL');
});

// The environment a sextant process gets: ours without any SEXTANT_* or
// DATABASE_URL a developer may have exported (tests must be hermetic), plus
// the sanitizer options and extra.
export function serverEnv(extra = {}) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (k.startsWith('SEXTANT_') || k === 'DATABASE_URL') continue;
		env[k] = v;
	}
	for (const [k, v] of Object.entries(SANITIZER_ENV)) env[k] ??= v;
	return { ...env, ...extra };
}

// Runs `sextant ARGS...` to completion (CLI subcommands).
export function runSextant(args, { env = {}, timeoutMs = 30000 } = {}) {
	const r = spawnSync(BIN, args, { env: serverEnv(env), encoding: 'utf8', timeout: timeoutMs });
	if (r.error) throw r.error;
	return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.unref();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Server {
	constructor(proc, port, stderrPath, name) {
		this.proc = proc;
		this.port = port;
		this.name = name;
		this.stderrPath = stderrPath;
		this.host = `127.0.0.1:${port}`;
		this.url = `http://${this.host}`;
		this.mcpUrl = `${this.url}/mcp`;
		this.exitStatus = null;
		this.termSent = false;
		this.killSent = false;
		this.exited = new Promise((resolve) => {
			proc.on('exit', (code, signal) => {
				this.exitStatus = { code, signal };
				live.delete(this);
				resolve(this.exitStatus);
			});
		});
	}

	stderr() {
		try {
			return fs.readFileSync(this.stderrPath, 'utf8');
		} catch {
			return '';
		}
	}

	// The last n lines of stderr, for failure messages.
	tail(n = 30) {
		return this.stderr().trimEnd().split('\n').slice(-n).join('\n');
	}

	// Throws (with the stderr tail) if the server has died.
	assertAlive() {
		if (this.exitStatus && !this.termSent && !this.killSent) {
			throw new Error(`${this.name}: server died (${JSON.stringify(this.exitStatus)}); stderr (${this.stderrPath}), last lines:\n${this.tail()}`);
		}
	}

	// Sends SIGTERM without waiting (stop() then only waits).
	terminate() {
		this.termSent = true;
		this.proc.kill('SIGTERM');
	}

	// Sends SIGTERM (unless terminate() did) and waits for the exit.  Throws
	// (with the stderr tail) when the server had died before, does not exit
	// within the grace period, exits non-zero or by a signal, or reported a
	// sanitizer error.
	async stop({ graceMs = GRACE_S * 1000 + STOP_MARGIN_MS } = {}) {
		const problems = [];
		if (this.exitStatus && !this.termSent) {
			problems.push(`server exited before stop(): ${JSON.stringify(this.exitStatus)}`);
		} else {
			if (!this.termSent) this.terminate();
			let timer;
			const late = new Promise((resolve) => (timer = setTimeout(resolve, graceMs, null)));
			const st = await Promise.race([this.exited, late]);
			clearTimeout(timer);
			if (!st) {
				problems.push(`server still running ${graceMs} ms after SIGTERM; killed`);
				this.proc.kill('SIGKILL');
				await this.exited;
			} else if (st.code !== 0) {
				problems.push(`server exited with ${st.signal ? `signal ${st.signal}` : `code ${st.code}`} after SIGTERM, expected 0`);
			}
		}
		const reports = sanitizerReports(this.stderr());
		if (reports.length) problems.push(`sanitizer report in stderr:\n  ${reports.slice(0, 5).join('\n  ')}`);
		if (problems.length) {
			throw new Error(`${this.name}: ${problems.join('; ')}\n--- stderr (${this.stderrPath}), last lines:\n${this.tail()}`);
		}
	}

	// SIGKILL and wait for the exit.  Without check it is the cleanup of
	// after() hooks: nothing is checked.  With check (a test crashing a
	// server on purpose) it throws, with the stderr tail, when the server
	// had died by itself before, or when its stderr up to the kill holds a
	// sanitizer report (a killed process reports no leaks: only what it
	// wrote before the kill is checked).
	async kill({ check = false } = {}) {
		const problems = [];
		if (this.exitStatus) {
			if (!check) return;
			if (!this.termSent && !this.killSent) problems.push(`server exited before kill(): ${JSON.stringify(this.exitStatus)}`);
		} else {
			this.killSent = true;
			this.proc.kill('SIGKILL');
			await this.exited;
		}
		if (!check) return;
		const reports = sanitizerReports(this.stderr());
		if (reports.length) problems.push(`sanitizer report in stderr:\n  ${reports.slice(0, 5).join('\n  ')}`);
		if (problems.length) {
			throw new Error(`${this.name}: ${problems.join('; ')}\n--- stderr (${this.stderrPath}), last lines:\n${this.tail()}`);
		}
	}
}

async function waitReady(srv, timeoutMs) {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (srv.exitStatus) return false;
		try {
			const res = await fetch(`${srv.url}/healthz`, { signal: AbortSignal.timeout(1000) });
			await res.arrayBuffer();
			if (res.status === 200) return true;
		} catch {
			// not listening yet
		}
		await sleep(50);
	}
	return false;
}

// Starts `sextant serve --config CONFIG` on a free 127.0.0.1 port.
// env: extra environment (SEXTANT_<TABLE>_<KEY> overrides).  Resolves once
// /healthz answers 200; rejects with the server's stderr if it never does.
export async function startServer({ name = 'sextant', config = CONFORMANCE_CONFIG, env = {}, args = [] } = {}) {
	if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run make asan`);
	fs.mkdirSync(LOG_DIR, { recursive: true });
	let lastErr = '';
	for (let attempt = 0; attempt < PORT_TRIES; attempt++) {
		const port = await freePort();
		const stderrPath = path.join(LOG_DIR, `${name}-${port}-${Date.now()}.stderr`);
		const fd = fs.openSync(stderrPath, 'w');
		const proc = spawn(BIN, ['serve', '--config', config, ...args], {
			env: serverEnv({
				SEXTANT_SERVER_SHUTDOWN_GRACE_S: String(GRACE_S),
				...env,
				SEXTANT_LISTEN: `127.0.0.1:${port}`,
			}),
			stdio: ['ignore', 'ignore', fd],
		});
		fs.closeSync(fd);
		const srv = new Server(proc, port, stderrPath, name);
		live.add(srv);
		if (await waitReady(srv, READY_TIMEOUT_MS)) return srv;
		await srv.kill();
		lastErr = srv.tail();
		// Only a lost race for the port is worth another try.
		if (!/in use|EADDRINUSE/i.test(lastErr)) break;
	}
	throw new Error(`${name}: server did not become ready on /healthz; stderr:\n${lastErr}`);
}

// procs.mjs - child processes the integration tests run beside the gateway
// (Prometheus, nginx): free loopback ports, a check that the Debian binary is
// there (a clear failure, never a silent skip), and a Proc that logs to a
// file, is killed when the test process exits, and can be stopped cleanly.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

const live = new Set();
process.on('exit', () => {
	for (const p of live) p.proc.kill('SIGKILL');
});

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A free TCP port on 127.0.0.1 (free when asked: a caller that loses the
// race sees EADDRINUSE in the child's log).
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

// Throws unless bin is an executable file; the message names the Debian
// package and scripts/deps.sh, which installs it.
export function requireBinary(bin, pkg) {
	try {
		fs.accessSync(bin, fs.constants.X_OK);
	} catch {
		throw new Error(`${bin} not found: install the Debian package ${pkg} (sh scripts/deps.sh test, as root, installs every test dependency)`);
	}
}

// One child process with stdout and stderr appended to logPath.
export class Proc {
	constructor(name, bin, args, logPath, { env = process.env } = {}) {
		this.name = name;
		this.logPath = logPath;
		const fd = fs.openSync(logPath, 'a');
		this.proc = spawn(bin, args, { env, stdio: ['ignore', fd, fd] });
		fs.closeSync(fd);
		this.exitStatus = null;
		live.add(this);
		this.exited = new Promise((resolve) => {
			this.proc.on('exit', (code, signal) => {
				this.exitStatus = { code, signal };
				live.delete(this);
				resolve(this.exitStatus);
			});
		});
	}

	log() {
		try {
			return fs.readFileSync(this.logPath, 'utf8');
		} catch {
			return '';
		}
	}

	tail(n = 20) {
		return this.log().trimEnd().split('\n').slice(-n).join('\n');
	}

	// Sends signal and waits up to graceMs for the exit, then SIGKILL.
	// Resolves to the exit status.
	async stop({ signal = 'SIGTERM', graceMs = 10000 } = {}) {
		if (this.exitStatus) return this.exitStatus;
		this.proc.kill(signal);
		let timer;
		const late = new Promise((r) => (timer = setTimeout(r, graceMs, null)));
		const st = await Promise.race([this.exited, late]);
		clearTimeout(timer);
		if (st) return st;
		this.proc.kill('SIGKILL');
		return this.exited;
	}
}

// Polls probe() (an async function resolving truthy when ready) every 50 ms
// until it does, proc dies or timeoutMs passes; throws with the log tail.
export async function waitUntil(proc, what, probe, timeoutMs = 15000) {
	const deadline = Date.now() + timeoutMs;
	let last = '';
	while (Date.now() < deadline) {
		if (proc.exitStatus) {
			throw new Error(`${proc.name} exited (${JSON.stringify(proc.exitStatus)}) before ${what}; log ${proc.logPath}:\n${proc.tail()}`);
		}
		try {
			if (await probe()) return;
		} catch (e) {
			last = e.message;
		}
		await sleep(50);
	}
	throw new Error(`${proc.name}: no ${what} within ${timeoutMs} ms${last ? ` (${last})` : ''}; log ${proc.logPath}:\n${proc.tail()}`);
}

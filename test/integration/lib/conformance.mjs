// conformance.mjs - running the official MCP conformance suite's server
// scenarios (the 0.2.0-alpha.12 CLI, package alias conformance-next) and
// reading its checks, for conformance_next.test.mjs and
// conformance_shared.test.mjs.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT } from './server.mjs';

export const NEXT_CLI = path.join(ROOT, 'test/integration/node_modules/conformance-next/dist/index.js');
export const SUITE_TIMEOUT_MS = 300000;

// Runs `server --url url` with --requirements revision, or --scenario
// scenario when given; the suite's output goes to outDir/suite.log.
export function runSuite(url, revision, outDir, scenario) {
	const logPath = path.join(outDir, 'suite.log');
	const select = scenario ? ['--scenario', scenario] : ['--requirements', revision];
	return new Promise((resolve) => {
		const log = fs.openSync(logPath, 'w');
		const child = spawn(process.execPath, [NEXT_CLI, 'server', '--url', url, ...select, '-o', outDir], {
			stdio: ['ignore', log, log],
		});
		fs.closeSync(log);
		const timer = setTimeout(() => child.kill('SIGKILL'), SUITE_TIMEOUT_MS);
		child.on('exit', (code, signal) => {
			clearTimeout(timer);
			resolve({ code, signal, logPath });
		});
	});
}

// scenario -> checks[] from <outDir>/server-<scenario>-<ISO time>/checks.json
export function readChecks(outDir) {
	const out = new Map();
	for (const dir of fs.readdirSync(outDir)) {
		const m = /^server-(.+)-(\d{4}-\d\d-\d\dT[\d-]+Z)$/.exec(dir);
		const f = path.join(outDir, dir, 'checks.json');
		if (m && fs.existsSync(f)) out.set(m[1], JSON.parse(fs.readFileSync(f, 'utf8')));
	}
	return out;
}

// One check as a line for failure messages.
export const checkLine = (c) => `${c.status} ${c.id ?? c.name}: ${c.description ?? ''}${c.errorMessage ? ` -- ${c.errorMessage}` : ''}`;

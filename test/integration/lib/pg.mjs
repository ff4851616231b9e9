// pg.mjs - throwaway PostgreSQL clusters for the integration tests, made by
// scripts/pg.sh so the script behind `make run` is exercised too.
// startPostgres() runs `pg.sh start` in a new temp dir (durability off:
// the data dies with the test); stop() stops the server and deletes the dir.
// A cluster whose test fails before stop() is stopped and removed when the
// process exits, even by SIGKILL (see guardCluster).

import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { ROOT } from './server.mjs';

export const PG_SH = path.join(ROOT, 'scripts/pg.sh');
const run = promisify(execFile);
const PG_SH_TIMEOUT_MS = 90000;

// pg.sh exit statuses of `status`.
export const PG_RUNNING = 0;
export const PG_STOPPED = 3;
export const PG_NO_CLUSTER = 4;

const guarded = new Map(); // cluster dir -> dir to remove
process.on('exit', () => {
	for (const [dir, remove] of guarded) {
		spawnSync('sh', [PG_SH, 'stop', dir], { stdio: 'ignore', timeout: 30000 });
		fs.rmSync(remove, { recursive: true, force: true });
	}
});

// Stops the cluster in dir and removes removeDir when this process exits
// without unguard(dir) (a failed test).  pg_ctl detaches the postmaster from
// our process group, so test/run.sh killing the group at its time limit
// would not reach it: a detached watchdog then does the same within a
// second, and exits by itself once removeDir is gone.
export function guardCluster(dir, removeDir = dir) {
	guarded.set(dir, removeDir);
	const script = 'while kill -0 "$1" 2>/dev/null && [ -d "$3" ]; do sleep 1; done; ' +
		'if [ -d "$3" ]; then sh "$4" stop "$2"; rm -rf "$3"; fi';
	spawn('sh', ['-c', script, 'pg-watchdog', String(process.pid), dir, removeDir, PG_SH], {
		detached: true,
		stdio: 'ignore',
	}).unref();
}

// Ends guardCluster(dir): the caller has stopped the cluster and removed
// its directory itself.
export function unguardCluster(dir) {
	guarded.delete(dir);
}

// The environment for pg.sh: ours without PG* connection settings.
function pgEnv(extra = {}) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (k.startsWith('PG') || k.startsWith('SEXTANT_PG')) continue;
		env[k] = v;
	}
	return { ...env, ...extra };
}

// Runs `pg.sh CMD DIR`; resolves to { code, stdout, stderr } whatever the
// exit status.
export async function pgSh(cmd, dir, { env = {} } = {}) {
	try {
		const { stdout, stderr } = await run('sh', [PG_SH, cmd, dir], {
			env: pgEnv(env),
			timeout: PG_SH_TIMEOUT_MS,
		});
		return { code: 0, stdout, stderr };
	} catch (e) {
		if (typeof e.code !== 'number') throw e;
		return { code: e.code, stdout: e.stdout, stderr: e.stderr };
	}
}

// Starts a cluster in a new temp dir named after name.  Resolves to
// { url, dir, stop() }: url is the libpq connection string pg.sh printed
// (Unix socket, database sextant); stop() stops the server and removes dir
// (idempotent; throws when the server does not stop).  throwaway: false
// keeps fsync on.
export async function startPostgres({ name = 'pg', throwaway = true } = {}) {
	const safe = name.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 32);
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sextant-pg-${safe}-`));
	let stopped = false;
	const stop = async () => {
		if (stopped) return;
		const r = await pgSh('stop', dir);
		if (r.code !== 0) throw new Error(`pg.sh stop ${dir} failed (${r.code}):\n${r.stderr}`);
		stopped = true;
		fs.rmSync(dir, { recursive: true, force: true });
		unguardCluster(dir);
	};
	guardCluster(dir);
	const r = await pgSh('start', dir, { env: throwaway ? { SEXTANT_PG_THROWAWAY: '1' } : {} });
	if (r.code !== 0) {
		await stop().catch(() => {});
		throw new Error(`pg.sh start ${dir} failed (${r.code}):\n${r.stderr}`);
	}
	const url = r.stdout.trimEnd().split('\n').pop();
	return { url, dir, stop };
}

// The psql client: the one on PATH, else the newest /usr/lib/postgresql/*/bin.
export function findPsql() {
	for (const d of (process.env.PATH || '').split(':')) {
		if (!d) continue;
		const p = path.join(d, 'psql');
		try {
			fs.accessSync(p, fs.constants.X_OK);
			return p;
		} catch {
			// not here
		}
	}
	let best = null;
	let bestMajor = -1;
	let versions = [];
	try {
		versions = fs.readdirSync('/usr/lib/postgresql');
	} catch {
		// no Debian PostgreSQL
	}
	for (const v of versions) {
		const p = `/usr/lib/postgresql/${v}/bin/psql`;
		const major = parseInt(v, 10);
		if (fs.existsSync(p) && major > bestMajor) {
			best = p;
			bestMajor = major;
		}
	}
	if (!best) throw new Error('psql not found: install the Debian package postgresql-client');
	return best;
}

// Runs sql with psql on url (unaligned, tuples only, stop on error, never
// prompts for a password).
// Resolves to the trimmed output; rejects with psql's stderr.
export async function psql(url, sql, { env = {} } = {}) {
	try {
		const { stdout } = await run(findPsql(), ['-X', '-w', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], {
			env: pgEnv(env),
			timeout: 30000,
		});
		return stdout.trim();
	} catch (e) {
		throw new Error(`psql ${JSON.stringify(sql)}: ${e.stderr || e.message}`);
	}
}

// pg.test.mjs - the private PostgreSQL behind `make run` and the tests:
// scripts/pg.sh start/stop/status (first start, reuse, restart with the
// data kept, a stale postmaster.pid after kill -9, a DIR too long for a
// socket path) and scripts/run.sh's lifecycle (database started, gateway
// served, SIGINT or SIGTERM stops both, the next run reuses the data;
// DATABASE_URL set: the private cluster is left alone).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import {
	startPostgres, pgSh, psql, guardCluster, unguardCluster, PG_SH, PG_RUNNING, PG_STOPPED, PG_NO_CLUSTER,
} from './lib/pg.mjs';
import { BIN, LOG_DIR, ROOT, serverEnv, sanitizerReports } from './lib/server.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ACCEPT_BOTH, request } from './lib/http.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const RUN_SH = path.join(ROOT, 'scripts/run.sh');

// The state letter of a process ("S", "R", "Z", ...), null when it is gone.
function procState(pid) {
	try {
		const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
		return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
	} catch {
		return null;
	}
}

// A zombie has exited; only its parent (here init, for the detached
// postmaster) has not collected it yet.
const alive = (pid) => {
	const s = procState(pid);
	return s !== null && s !== 'Z';
};

async function waitGone(pid, ms = 10000) {
	const deadline = Date.now() + ms;
	while (alive(pid) && Date.now() < deadline) await sleep(50);
	return !alive(pid);
}

// Live processes (pid and command line) that run in dir, name it on their
// command line, or are children of ppid; guardCluster's watchdogs aside.
function processes({ dir = null, ppid = null } = {}) {
	const found = [];
	for (const ent of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(ent) || Number(ent) === process.pid || !alive(ent)) continue;
		let cmd = '';
		let cwd = '';
		let parent = -1;
		try {
			cmd = fs.readFileSync(`/proc/${ent}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
			const stat = fs.readFileSync(`/proc/${ent}/stat`, 'utf8');
			parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
			cwd = fs.readlinkSync(`/proc/${ent}/cwd`);
		} catch {
			// gone meanwhile, or not ours to read
		}
		const hit = (dir && (cmd.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`))) ||
			(ppid !== null && parent === ppid);
		if (hit && !cmd.includes('pg-watchdog')) found.push({ pid: Number(ent), cmd });
	}
	return found;
}

function postmasterPid(dir) {
	return Number(fs.readFileSync(path.join(dir, 'data/postmaster.pid'), 'utf8').split('\n')[0]);
}

const lastLine = (s) => s.trimEnd().split('\n').pop();

// A new temp dir that the server's user (postgres, when we are root) can
// pass through to reach a cluster directory inside.
function tmpDir(prefix) {
	const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
	fs.chmodSync(dir, 0o711);
	return dir;
}

function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

// ---- scripts/pg.sh -------------------------------------------------------------

test('start: a UTF8 cluster on a socket inside DIR, psql connects with the printed URL', async (t) => {
	const pg = await startPostgres({ name: 'basic' });
	t.after(() => pg.stop());
	const dir = fs.realpathSync(pg.dir);

	assert.match(pg.url, /^postgresql:\/\/postgres@\/sextant\?host=[^&]+&port=\d+$/);
	assert.equal(fs.readFileSync(path.join(dir, 'url'), 'utf8').trim(), pg.url);
	assert.equal(
		await psql(pg.url, "SELECT current_database() || '|' || current_setting('server_encoding') || '|' || " +
			"current_setting('listen_addresses') || '|' || current_setting('unix_socket_directories')"),
		`sextant|UTF8|127.0.0.1|${dir}/sock`,
	);
	const pid = postmasterPid(dir);
	if (process.getuid() === 0) {
		assert.notEqual(fs.statSync(`/proc/${pid}`).uid, 0, 'postgres must not run as root');
	}

	// Loopback TCP asks for the password pg.sh generated.
	const port = pg.url.match(/port=(\d+)/)[1];
	const tcp = `host=127.0.0.1 port=${port} dbname=sextant user=postgres`;
	await assert.rejects(psql(tcp, 'SELECT 1', { env: { PGPASSFILE: path.join(dir, 'no-pgpass') } }), /password/);
	const password = fs.readFileSync(path.join(dir, 'password'), 'utf8').trim();
	assert.equal(await psql(tcp, 'SELECT 1', { env: { PGPASSWORD: password } }), '1');

	// A second start on the running cluster prints the same URL and leaves
	// the server alone; status reports it.
	const again = await pgSh('start', dir);
	assert.equal(again.code, 0, again.stderr);
	assert.equal(lastLine(again.stdout), pg.url);
	assert.equal(postmasterPid(dir), pid);
	const st = await pgSh('status', dir);
	assert.equal(st.code, PG_RUNNING, st.stdout);
	assert.equal(lastLine(st.stdout), pg.url);
});

test('stop and start again: the data and the address are kept', async (t) => {
	const pg = await startPostgres({ name: 'restart', throwaway: false });
	t.after(() => pg.stop());
	await psql(pg.url, 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)');
	const pid = postmasterPid(pg.dir);

	const stop = await pgSh('stop', pg.dir);
	assert.equal(stop.code, 0, stop.stderr);
	assert.ok(await waitGone(pid), `postmaster ${pid} still running after pg.sh stop`);
	assert.ok(!fs.existsSync(path.join(pg.dir, 'data/postmaster.pid')), 'postmaster.pid left after a clean stop');
	assert.match(fs.readFileSync(path.join(pg.dir, 'postgres.log'), 'utf8'), /database system is shut down/);
	assert.equal((await pgSh('status', pg.dir)).code, PG_STOPPED);
	assert.equal((await pgSh('stop', pg.dir)).code, 0, 'stop on a stopped cluster is no error');

	const start = await pgSh('start', pg.dir);
	assert.equal(start.code, 0, start.stderr);
	assert.equal(lastLine(start.stdout), pg.url, 'the port is reused');
	assert.equal(await psql(pg.url, 'SELECT x FROM kept'), '42');
});

test('a postmaster killed with SIGKILL leaves a stale postmaster.pid that start gets past', async (t) => {
	const pg = await startPostgres({ name: 'stale' });
	t.after(() => pg.stop());
	await psql(pg.url, 'CREATE TABLE survivor (x int); INSERT INTO survivor VALUES (7)');
	const pid = postmasterPid(pg.dir);

	process.kill(pid, 'SIGKILL');
	assert.ok(await waitGone(pid), `postmaster ${pid} survived SIGKILL`);
	assert.ok(fs.existsSync(path.join(pg.dir, 'data/postmaster.pid')), 'the crash should leave postmaster.pid');
	assert.equal((await pgSh('status', pg.dir)).code, PG_STOPPED, 'a stale pid file is not a running server');

	const start = await pgSh('start', pg.dir);
	assert.equal(start.code, 0, start.stderr);
	assert.equal(lastLine(start.stdout), pg.url);
	assert.notEqual(postmasterPid(pg.dir), pid);
	assert.equal(await psql(pg.url, 'SELECT x FROM survivor'), '7');
	assert.match(fs.readFileSync(path.join(pg.dir, 'postgres.log'), 'utf8'), /not properly shut down/);
});

test('a DIR too long for a socket path gets a socket directory under /tmp', async (t) => {
	const base = tmpDir('sextant-pg-long-');
	const dir = path.join(base, 'd'.repeat(100));
	guardCluster(dir, base);
	t.after(async () => {
		await pgSh('stop', dir);
		fs.rmSync(base, { recursive: true, force: true });
		unguardCluster(dir);
	});
	const start = await pgSh('start', dir, { env: { SEXTANT_PG_THROWAWAY: '1' } });
	assert.equal(start.code, 0, start.stderr);
	const url = lastLine(start.stdout);
	const sock = decodeURIComponent(url.match(/host=([^&]+)/)[1]);
	assert.match(sock, /^\/tmp\/sextant-pg\.[A-Za-z0-9]+$/);
	assert.equal(await psql(url, 'SELECT current_database()'), 'sextant');
	assert.equal((await pgSh('stop', dir)).code, 0);
	assert.ok(!fs.existsSync(sock), `stop should remove ${sock}`);
});

test('a test process killed with SIGKILL: its cluster is stopped and removed anyway', async (t) => {
	const child = spawn(process.execPath, ['--input-type=module', '-e',
		`const m = await import(${JSON.stringify(new URL('./lib/pg.mjs', import.meta.url).href)});
		const pg = await m.startPostgres({ name: 'orphan' });
		console.log(JSON.stringify({ dir: pg.dir }));
		setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
	let dir = null;
	t.after(async () => {
		if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
		if (dir && fs.existsSync(dir)) {
			await pgSh('stop', dir);
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
	let out = '';
	for await (const chunk of child.stdout) {
		out += chunk;
		if (out.includes('\n')) break;
	}
	dir = JSON.parse(out).dir;
	const pid = postmasterPid(dir);
	assert.ok(alive(pid));

	child.kill('SIGKILL');
	const deadline = Date.now() + 15000;
	while (fs.existsSync(dir) && Date.now() < deadline) await sleep(100);
	assert.ok(!fs.existsSync(dir), `${dir} still there 15 s after its test process died`);
	assert.ok(await waitGone(pid), `postmaster ${pid} outlived its test process`);
});

test('pg.sh: status and stop without a cluster, usage errors', async (t) => {
	const dir = tmpDir('sextant-pg-none-');
	t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
	const st = await pgSh('status', dir);
	assert.equal(st.code, PG_NO_CLUSTER, st.stdout);
	assert.equal((await pgSh('status', path.join(dir, 'missing'))).code, PG_NO_CLUSTER);
	assert.equal((await pgSh('stop', dir)).code, 0);
	assert.equal((await pgSh('restart', dir)).code, 2);
	assert.deepEqual(fs.readdirSync(dir), [], 'status and stop must not create anything');
	const r = await promisify(execFile)('sh', [PG_SH]).catch((e) => e);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /usage: pg\.sh start\|stop\|status DIR/);
});

// ---- scripts/run.sh ------------------------------------------------------------

// Runs scripts/run.sh with the ASan binary on a free port; its output is
// also written to LOG_DIR so that test/run.sh checks it for sanitizer
// reports.
async function startRun(env, port = null) {
	port ??= await freePort();
	fs.mkdirSync(LOG_DIR, { recursive: true });
	const logPath = path.join(LOG_DIR, `run-sh-${port}-${Date.now()}.stderr`);
	const proc = spawn('sh', [RUN_SH], {
		env: serverEnv({ SEXTANT_BIN: BIN, SEXTANT_SERVER_SHUTDOWN_GRACE_S: '5', SEXTANT_DEMO_SPANS: '2000', ...env, SEXTANT_LISTEN: `127.0.0.1:${port}` }),
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const run = { proc, port, url: `http://127.0.0.1:${port}`, text: '', status: null };
	const log = fs.createWriteStream(logPath);
	for (const s of [proc.stdout, proc.stderr]) {
		s.on('data', (c) => {
			run.text += c;
			log.write(c);
		});
	}
	run.exited = new Promise((resolve) => {
		proc.on('close', (code, signal) => {
			run.status = { code, signal };
			log.end();
			resolve(run.status);
		});
	});
	return run;
}

async function waitHealthy(run, ms = 60000) {
	const deadline = Date.now() + ms;
	while (Date.now() < deadline && !run.status) {
		try {
			const res = await fetch(`${run.url}/healthz`, { signal: AbortSignal.timeout(1000) });
			await res.arrayBuffer();
			if (res.status === 200) return;
		} catch {
			// not listening yet
		}
		await sleep(100);
	}
	throw new Error(`run.sh never served /healthz (${JSON.stringify(run.status)}); output:\n${run.text}`);
}

async function waitExit(run, ms = 30000) {
	let timer;
	const late = new Promise((resolve) => (timer = setTimeout(resolve, ms, null)));
	const st = await Promise.race([run.exited, late]);
	clearTimeout(timer);
	assert.ok(st, `run.sh still running ${ms} ms after the signal; output:\n${run.text}`);
	return st;
}

// Kills what a failed test may have left: run.sh, its gateway, the cluster.
async function killRun(run, pgdir) {
	if (run && !run.status) {
		for (const p of processes({ ppid: run.proc.pid })) process.kill(p.pid, 'SIGKILL');
		run.proc.kill('SIGKILL');
		await run.exited;
	}
	if (pgdir) await pgSh('stop', pgdir);
}

// The banner's "revisions A .. B" is what the gateway serves: initialize
// keeps A, B is its newest (the stateless server/discover lists it, and no
// revision it lists or initialize picks is newer).
async function assertBannerRevisions(run) {
	const m = /\(Streamable HTTP, revisions (\d{4}-\d\d-\d\d) \.\. (\d{4}-\d\d-\d\d)\)/.exec(run.text);
	assert.ok(m, `the banner names no revisions:\n${run.text}`);
	const [, oldest, newest] = m;
	const mcp = `${run.url}/mcp`;
	const headers = { 'content-type': 'application/json', accept: ACCEPT_BOTH };
	const init = async (v) => (await request(mcp, { method: 'POST', headers, body: JSON.stringify({
		jsonrpc: '2.0', id: 1, method: 'initialize',
		params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'pg.test', version: '1' } },
	}) })).json?.result?.protocolVersion;
	assert.equal(await init(oldest), oldest, `initialize does not keep the banner's oldest revision ${oldest}`);
	const sessionNewest = await init('9999-12-31'); // unknown: the newest is offered
	const d = await request(mcp, {
		method: 'POST',
		headers: { ...headers, 'mcp-protocol-version': newest, 'mcp-method': 'server/discover' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: {
			'io.modelcontextprotocol/protocolVersion': newest, 'io.modelcontextprotocol/clientCapabilities': {},
		} } }),
	});
	const listed = d.json?.result?.supportedVersions;
	assert.ok(Array.isArray(listed) && listed.includes(newest), `server/discover at the banner's newest ${newest}: ${d.status} ${d.text}`);
	for (const v of [...listed, sessionNewest]) assert.ok(v <= newest, `the gateway serves ${v}, newer than the banner's ${newest}`);
}

// One `make run`: serve, check the banner and its curl example, then stop
// with signal and check that the gateway and the database are gone.
async function lifecycle(runs, pgdir, signal, during) {
	const run = await startRun({ SEXTANT_PG_DIR: pgdir });
	runs.push(run);
	await waitHealthy(run);

	const gateway = processes({ ppid: run.proc.pid }).find((p) => p.cmd.includes('sextant'));
	assert.ok(gateway, `no gateway child of run.sh; output:\n${run.text}`);
	const postmaster = postmasterPid(pgdir);
	assert.ok(alive(postmaster));
	const url = fs.readFileSync(path.join(pgdir, 'url'), 'utf8').trim();

	for (const want of [`http://127.0.0.1:${run.port}/mcp`, `http://127.0.0.1:${run.port}/v1/traces`,
		`http://127.0.0.1:${run.port}/v1/metrics`, `database      ${url}`]) {
		assert.ok(run.text.includes(want), `banner lacks ${want}:\n${run.text}`);
	}
	// The printed curl example, run as printed.
	const lines = run.text.split('\n');
	let i = lines.findIndex((l) => /^\s+curl -si /.test(l));
	assert.ok(i >= 0, `no curl example in:\n${run.text}`);
	const curl = [];
	do curl.push(lines[i]); while (lines[i++].endsWith('\\') && i < lines.length);
	const { stdout } = await promisify(execFile)('sh', ['-c', curl.join('\n')], { timeout: 10000 });
	assert.match(stdout, /^HTTP\/1\.1 200/);
	assert.match(stdout, /"protocolVersion":"2025-11-25"/);
	await assertBannerRevisions(run);

	await during(url);

	run.proc.kill(signal);
	const st = await waitExit(run);
	assert.deepEqual(st, { code: 0, signal: null }, `run.sh exit after ${signal}; output:\n${run.text}`);
	assert.ok(!alive(gateway.pid), 'the gateway outlived run.sh');
	assert.ok(await waitGone(postmaster), 'the postmaster outlived run.sh');
	assert.match(run.text, /"msg":"stopped"/, 'the gateway did not drain and stop');
	assert.equal((await pgSh('status', pgdir)).code, PG_STOPPED);
	assert.deepEqual(processes({ dir: pgdir }), [], 'processes left in the cluster directory');
	assert.deepEqual(sanitizerReports(run.text), []);
}

test('run.sh: private database, gateway, SIGINT stops both, the next run reuses the data', async (t) => {
	const base = tmpDir('sextant-run-');
	const pgdir = path.join(base, 'pg');
	const runs = [];
	guardCluster(pgdir, base);
	t.after(async () => {
		for (const run of runs) await killRun(run, pgdir);
		fs.rmSync(base, { recursive: true, force: true });
		unguardCluster(pgdir);
	});

	await lifecycle(runs, pgdir, 'SIGINT', async (url) => {
		// the empty private store got the demo dataset (SEXTANT_DEMO_SPANS)
		assert.equal(await psql(url, 'SELECT count(*) FROM spans'), '2000');
		await psql(url, "CREATE TABLE marker (note text); INSERT INTO marker VALUES ('first run')");
	});
	await lifecycle(runs, pgdir, 'SIGTERM', async (url) => {
		assert.equal(await psql(url, 'SELECT note FROM marker'), 'first run');
		// not loaded twice
		assert.equal(await psql(url, 'SELECT count(*) FROM spans'), '2000');
	});
});

// Issue 17: right after `make run` the first list_services over 24 h timed
// out while the janitor worked through a day of dirty rollup hours.  The
// store must be current when the gateway first says it is ready: no settled
// hour or minute still dirty, rollup rows written, every spans partition
// analyzed; and the first call answers.
test('run.sh: /readyz is 200 only once the demo store has current rollups and statistics', async (t) => {
	const base = tmpDir('sextant-run-ready-');
	const pgdir = path.join(base, 'pg');
	let run = null;
	let client = null;
	guardCluster(pgdir, base);
	t.after(async () => {
		await client?.close();
		await killRun(run, pgdir);
		fs.rmSync(base, { recursive: true, force: true });
		unguardCluster(pgdir);
	});

	run = await startRun({ SEXTANT_PG_DIR: pgdir, SEXTANT_DEMO_SPANS: '30000' });
	const deadline = Date.now() + 90000;
	let ready = false;
	while (!ready && Date.now() < deadline && !run.status) {
		try {
			const res = await fetch(`${run.url}/readyz`, { signal: AbortSignal.timeout(1000) });
			await res.arrayBuffer();
			ready = res.status === 200;
		} catch {
			// not listening yet
		}
		if (!ready) await sleep(100);
	}
	assert.ok(ready, `never ready; output:\n${run.text}`);
	const readyAt = Date.now();
	const url = fs.readFileSync(path.join(pgdir, 'url'), 'utf8').trim();
	// settled when the gateway said ready: an hour (minute) that ended
	// ROLLUP_SETTLE_S (120 s) before it (5 s of margin for the poll); a
	// minute that settles after that is the janitor's next round, not
	// readiness (a CI run met one)
	const settled = (ms) => new Date(readyAt - ms - 5000).toISOString();
	assert.equal(await psql(url, `SELECT count(*) FROM span_rollup_dirty WHERE period < '${settled(62 * 60000)}'`), '0');
	assert.equal(await psql(url, `SELECT count(*) FROM span_rollup_minute_dirty WHERE period < '${settled(3 * 60000)}'`), '0');
	assert.ok(Number(await psql(url, 'SELECT count(*) FROM span_rollup')) > 0);
	// reltuples is -1 until a partition is first analyzed (or vacuumed)
	assert.equal(await psql(url, "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'spans'::regclass AND c.reltuples < 0"), '0');

	client = new Client({ name: 'sextant-first-call', version: '1.0.0' });
	await client.connect(new StreamableHTTPClientTransport(new URL(`${run.url}/mcp`)));
	const r = await client.callTool({ name: 'list_services', arguments: {} });
	assert.ok(!r.isError, JSON.stringify(r));
	assert.match(r.content[0].text, /## Services \(\d+, last 1d\)/);
	assert.match(r.content[0].text, /\| api-gateway \|/);
});

test('run.sh: a gateway that cannot listen stops the private database too', async (t) => {
	const base = tmpDir('sextant-run-busy-');
	const pgdir = path.join(base, 'pg');
	const busy = net.createServer();
	let run = null;
	guardCluster(pgdir, base);
	t.after(async () => {
		await killRun(run, pgdir);
		busy.close();
		fs.rmSync(base, { recursive: true, force: true });
		unguardCluster(pgdir);
	});
	await new Promise((resolve) => busy.listen(0, '127.0.0.1', resolve));

	run = await startRun({ SEXTANT_PG_DIR: pgdir }, busy.address().port);
	const st = await waitExit(run);
	assert.equal(st.code, 1, `run.sh should exit 1 when the gateway cannot listen; output:\n${run.text}`);
	assert.match(run.text, /stopping PostgreSQL/);
	assert.equal((await pgSh('status', pgdir)).code, PG_STOPPED);
	assert.deepEqual(processes({ dir: pgdir }), []);
});

test('run.sh with DATABASE_URL: uses it and leaves the private cluster alone', async (t) => {
	const base = tmpDir('sextant-run-ext-');
	const pgdir = path.join(base, 'pg');
	let pg = null;
	let run = null;
	t.after(async () => {
		await killRun(run, pgdir);
		await pg?.stop();
		fs.rmSync(base, { recursive: true, force: true });
	});
	pg = await startPostgres({ name: 'external' });

	run = await startRun({ SEXTANT_PG_DIR: pgdir, DATABASE_URL: pg.url });
	await waitHealthy(run);
	assert.match(run.text, /database {6}DATABASE_URL from the environment/);
	assert.ok(!run.text.includes(pg.url), 'DATABASE_URL is printed (it may hold a password)');
	assert.ok(!fs.existsSync(pgdir), 'a private cluster was created although DATABASE_URL is set');

	run.proc.kill('SIGINT');
	assert.deepEqual(await waitExit(run), { code: 0, signal: null }, run.text);
	assert.equal((await pgSh('status', pg.dir)).code, PG_RUNNING, 'run.sh stopped a database it did not start');
	assert.deepEqual(sanitizerReports(run.text), []);
});

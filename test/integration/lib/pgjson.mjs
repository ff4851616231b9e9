// pgjson.mjs - one SQL statement run with psql whose single value is JSON,
// parsed.  Unlike pg.mjs psql(), the output may be large (a 10,000-span
// trace is megabytes), so stdout is not bounded by execFile's default 1 MB.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { findPsql } from './pg.mjs';

const run = promisify(execFile);
const MAX_OUTPUT = 256 * 1024 * 1024;

// The environment for psql: ours without PG* connection settings, so that
// url alone says where to connect.
function psqlEnv() {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PG')) env[k] = v;
	return env;
}

// Runs sql (one statement returning one JSON value) on url; resolves to the
// parsed value, rejects with psql's stderr.
export async function psqlJson(url, sql) {
	let stdout;
	try {
		({ stdout } = await run(findPsql(), ['-X', '-w', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], {
			env: psqlEnv(),
			timeout: 60000,
			maxBuffer: MAX_OUTPUT,
		}));
	} catch (e) {
		throw new Error(`psql ${JSON.stringify(sql.slice(0, 300))}: ${e.stderr || e.message}`);
	}
	return JSON.parse(stdout);
}

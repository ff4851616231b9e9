#!/usr/bin/env bash
# query.sh - query latency benchmark: query_metrics (1 h, 24 h, and 24 h
# with a timeline of 5 m steps) and query_traces (1 h) through MCP against the single SQL statement that
# computes the same numbers from raw spans, run by psql, interleaved call
# by call in one run, on a private PostgreSQL holding the demo dataset
# (10 million spans over 24 hours by default).  See bench/README.md.
#
# Run from anywhere as `sh bench/query.sh [options]` (re-executes itself
# under bash).  Options:
#   --spans N     spans in the dataset                       10000000
#   --seed S      demo-data seed                             1
#   --calls N     measured calls per query and side per run  30
#   --runs R      runs (one query-run.mjs each); medians     3
#   --fresh       load the dataset again even when the kept one matches
#   --live        time_range "1h" / "24h" and now() in SQL (needs data
#                 loaded in the last 15 minutes: use with --fresh); the
#                 default asks for absolute ranges ending where the data
#                 ends, the same range on every call
#   --services L  comma-separated                checkout,payments,api-gateway,inventory
#   --kinds L     queries measured, comma-separated: m1h, m24h, t1h, tl24h
#                 (query_metrics 24 h with step 5m), g1h, g24h
#                 (get_mesh_graph, tool set "mesh"), r24h, rd24h
#                 (get_resource_detail: the services, one service; the
#                 dataset's whole 24 h: see query-run.mjs), sp (get_trace
#                 with a span_id: one span whole, against reading its
#                 row)  m1h,m24h,t1h,tl24h
#   --pg-set N=V  a PostgreSQL setting for the runs (ALTER DATABASE ... SET,
#                 so the gateway and psql both get it), e.g. jit=off;
#                 repeatable; every run starts from RESET ALL
#   --shared-buffers SIZE  PostgreSQL shared_buffers (restarts the cluster
#                 when it differs)                           128MB
#   --traces-sql walk|group|prepared  the SQL side of query_traces: a walk
#                 of the index newest first that stops at the 10th trace
#                 (the best found), grouping the newest 20,000 spans (the
#                 statement of the runs before 2026-11-22 05:00), or the
#                 walk prepared once per psql session (PREPARE / EXECUTE:
#                 no planning per call, as the tool's statements)  walk
# Knobs (env): BENCH_SEXTANT (binary, build/sextant), BENCH_CONFIG (config
# file for serve, none: built-in defaults), BENCH_PGDIR (the kept cluster,
# bench/out/query-pg); SEXTANT_* reach the gateway.
#
# The loaded cluster is kept in BENCH_PGDIR (stopped at the end) and
# reused by the next run with the same --spans and --seed; remove it with
# `sh scripts/pg.sh stop bench/out/query-pg; rm -rf bench/out/query-pg`.
# Output: a Markdown report on stdout (also bench/out/query/results.md);
# raw results in bench/out/query/.  Exit 1 when a call failed or the tool
# and the SQL disagreed; a missed target is only reported.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=bench/out/query
PGDIR=${BENCH_PGDIR:-bench/out/query-pg}
STATE=$PGDIR/bench-state

SPANS=10000000
SEED=1
CALLS=30
RUNS=3
FRESH=0
LIVE=0
SERVICES=checkout,payments,api-gateway,inventory
KINDS=m1h,m24h,t1h,tl24h
PG_SETS=()
SHARED_BUFFERS=128MB
TRACES_SQL=walk
SEXTANT=${BENCH_SEXTANT:-build/sextant}
CONFIG=${BENCH_CONFIG:-}
# Targets of issue 4.
TARGET_1H_RATIO=1.3 # query_metrics 1 h p50 over the SQL's
TARGET_1H_P95=100   # ms
TARGET_24H_SPEEDUP=5
TARGET_TL_P95=100 # ms: query_metrics 24 h with step 5m (issue 18)
TARGET_G_P95=200  # ms: get_mesh_graph 24 h (issue 20), besides >= 5x SQL
TARGET_R_P95=1000 # ms: get_resource_detail 24 h, list and detail (issue 20)
# Bounds, in seconds.
START_S=60      # gateway start-up
STOP_S=20       # gateway shutdown after SIGTERM
PG_S=180        # pg.sh start / stop
LOAD_S=7200     # demo-data
VACUUM_S=3600   # VACUUM ANALYZE after the load
MIGRATE_S=3600  # migrations new since the load (indexes over the spans)
ROLLUP_S=1800   # rollups catching up
RUN_S=7200      # one query-run.mjs
LIVE_MAX_AGE_S=900

die() {
	echo "query.sh: $*" >&2
	exit 1
}
note() { echo "== $*" >&2; }
usage() {
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
while [ $# -gt 0 ]; do
	case "$1" in
	--spans | --seed | --calls | --runs | --services | --kinds)
		[ $# -ge 2 ] || die "$1 needs a value"
		case "$1" in
		--spans) SPANS=$2 ;;
		--seed) SEED=$2 ;;
		--calls) CALLS=$2 ;;
		--runs) RUNS=$2 ;;
		--services) SERVICES=$2 ;;
		--kinds) KINDS=$2 ;;
		esac
		shift 2
		;;
	--pg-set)
		[ $# -ge 2 ] || die "$1 needs a value"
		[[ "$2" =~ ^[a-z_][a-z0-9_.]*=[A-Za-z0-9_.-]+$ ]] ||
			die "--pg-set: expected name=value (e.g. jit=off), got \"$2\""
		PG_SETS+=("$2")
		shift 2
		;;
	--shared-buffers)
		[ $# -ge 2 ] || die "$1 needs a value"
		[[ "$2" =~ ^[0-9]+(kB|MB|GB)$ ]] ||
			die "--shared-buffers: expected a size such as 128MB or 2GB, got \"$2\""
		SHARED_BUFFERS=$2
		shift 2
		;;
	--traces-sql)
		[ $# -ge 2 ] || die "$1 needs a value"
		[[ "$2" =~ ^(walk|group|prepared)$ ]] || die "--traces-sql: walk, group or prepared, got \"$2\""
		TRACES_SQL=$2
		shift 2
		;;
	--fresh) FRESH=1 && shift ;;
	--live) LIVE=1 && shift ;;
	-h | --help) usage ;;
	*) echo "query.sh: unknown option $1" >&2 && usage ;;
	esac
done
for v in SPANS CALLS RUNS; do
	{ is_uint "${!v}" && [ "${!v}" -gt 0 ]; } ||
		die "--${v,,}: expected a positive integer, got \"${!v}\""
done
is_uint "$SEED" || die "--seed: expected a non-negative integer, got \"$SEED\""
[[ "$KINDS" =~ ^(m1h|m24h|t1h|tl24h|g1h|g24h|r24h|rd24h|sp)(,(m1h|m24h|t1h|tl24h|g1h|g24h|r24h|rd24h|sp))*$ ]] ||
	die "--kinds: expected some of m1h,m24h,t1h,tl24h,g1h,g24h,r24h,rd24h,sp, comma-separated, got \"$KINDS\""
[[ "$SERVICES" =~ ^[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*$ ]] ||
	die "--services: expected comma-separated service names, got \"$SERVICES\""

for tool in curl timeout; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: install it (coreutils / curl)"
done
PSQL=$(command -v psql 2>/dev/null) || PSQL=""
if [ -z "$PSQL" ]; then
	for d in /usr/lib/postgresql/*/bin; do [ -x "$d/psql" ] && PSQL=$d/psql; done
fi
[ -n "$PSQL" ] || die "psql not found: install the Debian package postgresql-client"
NODE=$(sh scripts/node.sh) || die "no Node 24: see the message of scripts/node.sh above"
if [ ! -x "$SEXTANT" ]; then
	[ "$SEXTANT" = build/sextant ] || die "$SEXTANT not found or not executable"
	note "build/sextant missing: make all"
	make all >&2 || die "make all failed"
fi
[ -z "$CONFIG" ] || [ -r "$CONFIG" ] || die "BENCH_CONFIG: $CONFIG not readable"
set --
[ -z "$CONFIG" ] || set -- --config "$CONFIG"
CONFIG_ARGS=("$@")

# ---- cleanup ---------------------------------------------------------------
SEXTANT_PID=""
CHILDREN=""
PG_STARTED=0

alive() { # PID: running, not a zombie
	local st
	st=$(sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || st=""
	case "$st" in '' | Z*) return 1 ;; *) return 0 ;; esac
}

stop_pid() { # PID SECONDS: SIGTERM, then SIGKILL when still there
	local i=0
	kill -TERM "$1" 2>/dev/null || return 0
	while alive "$1" && [ "$i" -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if alive "$1"; then
		echo "query.sh: process $1 ignored SIGTERM for $2 s: killing it" >&2
		kill -KILL "$1" 2>/dev/null || true
	fi
	wait "$1" 2>/dev/null || true
}

cleanup() {
	set +e
	trap '' INT TERM HUP
	for p in $CHILDREN; do stop_pid "$p" 5; done
	[ -n "$SEXTANT_PID" ] && stop_pid "$SEXTANT_PID" "$STOP_S"
	if [ "$PG_STARTED" = 1 ]; then
		timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 ||
			echo "query.sh: pg.sh stop $PGDIR failed: the cluster may still run" >&2
	fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# bounded SECONDS CMD...: CMD under timeout, in the background so that a
# signal to this script is handled at once.  Returns CMD's status.
bounded() {
	local s=$1 pid rc=0
	shift
	timeout "$s" "$@" &
	pid=$!
	CHILDREN="$CHILDREN $pid"
	wait "$pid" || rc=$?
	CHILDREN=${CHILDREN% "$pid"}
	return "$rc"
}

sql() { # SQL: one value, unaligned
	bounded "${SQL_S:-600}" "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$PG_URL" -c "$1"
}

pg_start() {
	PG_STARTED=1
	PG_URL=$(SEXTANT_PG_THROWAWAY=1 timeout "$PG_S" sh scripts/pg.sh start "$PGDIR" | tail -n 1) ||
		die "scripts/pg.sh start $PGDIR failed (log: $PGDIR/postgres.log)"
	[ -n "$PG_URL" ] || die "scripts/pg.sh start printed no URL"
}

pg_stop() {
	timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 || die "scripts/pg.sh stop $PGDIR failed"
	PG_STARTED=0
}

state_get() { # KEY: its value in the state file, empty when absent
	[ -f "$STATE" ] || return 0
	sed -n "s/^$1=//p" "$STATE" | tail -n 1
}

mkdir -p "$OUT"
rm -f "$OUT"/run-*.json "$OUT"/*.md "$OUT"/sextant.log "$OUT"/statements.tsv "$OUT"/maintain.log \
	"$OUT"/migrate.log

# ---- 1. the dataset ------------------------------------------------------------
# A kept cluster is reused when it holds a complete load of the same size
# and seed (the state file is written last, after VACUUM ANALYZE).
REUSE=1
if [ "$FRESH" = 1 ] || [ "$(state_get spans)" != "$SPANS" ] || [ "$(state_get seed)" != "$SEED" ] ||
	[ -z "$(state_get anchor)" ]; then
	REUSE=0
fi
if [ "$REUSE" = 0 ]; then
	if [ -d "$PGDIR" ]; then
		note "removing the kept cluster $PGDIR"
		timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 || true
		rm -rf "$PGDIR"
	fi
	note "creating a private PostgreSQL in $PGDIR"
	pg_start
	# pg_stat_statements: the gateway's own statements and their time in
	# the database, beside the client-side figures
	sql "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" >/dev/null
	pg_stop
	pg_start
	sql 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null
	note "loading $SPANS demo spans (seed $SEED): several minutes"
	t0=$EPOCHREALTIME
	DATABASE_URL=$PG_URL bounded "$LOAD_S" "$SEXTANT" demo-data --spans "$SPANS" --seed "$SEED" \
		"${CONFIG_ARGS[@]}" >"$OUT/demo-data.log" 2>&1 || {
		tail -n 5 "$OUT/demo-data.log" >&2
		die "sextant demo-data failed (log: $OUT/demo-data.log)"
	}
	t1=$EPOCHREALTIME
	LOAD_S_TOOK=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
	note "loaded in $LOAD_S_TOOK s; VACUUM ANALYZE (autovacuum would do it during the runs)"
	SQL_S=$VACUUM_S sql 'VACUUM (ANALYZE) spans' >/dev/null
	ROWS=$(sql 'SELECT count(*) FROM spans')
	[ "$ROWS" -ge "$SPANS" ] || die "spans holds $ROWS rows, expected at least $SPANS"
	# where the data ends: the ranges of the default (anchored) mode end here
	ANCHOR=$(sql "SELECT to_char((date_trunc('second', max(start_time)) + interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM spans")
	{
		echo "spans=$SPANS"
		echo "seed=$SEED"
		echo "rows=$ROWS"
		echo "anchor=$ANCHOR"
		echo "load_s=$LOAD_S_TOOK"
		echo "loaded=$(date -u '+%Y-%m-%dT%H:%M:%SZ')"
	} >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
else
	note "reusing the cluster in $PGDIR ($(state_get rows) rows, loaded $(state_get loaded))"
	pg_start
fi
# shared_buffers needs a restart; the 128MB default is PostgreSQL's own
if [ "$(sql "SELECT setting::bigint * 8192 = pg_size_bytes('$SHARED_BUFFERS') FROM pg_settings WHERE name = 'shared_buffers'")" != t ]; then
	note "restarting PostgreSQL with shared_buffers = $SHARED_BUFFERS"
	sql "ALTER SYSTEM SET shared_buffers = '$SHARED_BUFFERS'" >/dev/null
	pg_stop
	pg_start
fi
ANCHOR=$(state_get anchor)
ROWS=$(state_get rows)
PG_VERSION=$(sql 'SHOW server_version')
DB_SIZE=$(sql "SELECT pg_size_pretty(pg_database_size(current_database()))")
AGE_S=$(($(date +%s) - $(date -d "$ANCHOR" +%s)))
if [ "$LIVE" = 1 ] && [ "$AGE_S" -gt "$LIVE_MAX_AGE_S" ]; then
	die "--live: the data ends $AGE_S s ago (over $LIVE_MAX_AGE_S s): the last hour would be partly empty; add --fresh"
fi

# A kept cluster may predate migrations of the binary: apply them here,
# where an index over millions of spans may take minutes, not in serve's
# start-up.
note "applying migrations (sextant migrate)"
DATABASE_URL=$PG_URL bounded "$MIGRATE_S" "$SEXTANT" migrate "${CONFIG_ARGS[@]}" >"$OUT/migrate.log" 2>&1 || {
	tail -n 5 "$OUT/migrate.log" >&2
	die "sextant migrate failed (log: $OUT/migrate.log)"
}

# ---- 2. rollups ------------------------------------------------------------------
# Every hour and minute that has settled (ended over ROLLUP_SETTLE_S = 120 s
# ago) and is marked dirty is recomputed by `sextant maintain`; it skips
# periods written in the last 60 s, so it runs until none is left.  Only the
# current hour(s) and the last minutes may stay dirty.
settled_dirty() {
	sql "SELECT (SELECT count(DISTINCT period) FROM span_rollup_dirty WHERE period + interval '1 hour 120 seconds' < now())
		+ (SELECT count(DISTINCT period) FROM span_rollup_minute_dirty WHERE period + interval '180 seconds' < now())"
}
note "bringing the rollups up to date (sextant maintain)"
t0=$(date +%s)
while [ "$(settled_dirty)" != 0 ]; do
	DATABASE_URL=$PG_URL bounded "$ROLLUP_S" "$SEXTANT" maintain "${CONFIG_ARGS[@]}" >>"$OUT/maintain.log" 2>&1 ||
		die "sextant maintain failed (log: $OUT/maintain.log)"
	[ "$(settled_dirty)" = 0 ] && break
	[ $(($(date +%s) - t0)) -lt "$ROLLUP_S" ] || die "rollups not up to date after $ROLLUP_S s"
	sleep 10
done
ROLLUP_ROWS=$(sql "SELECT (SELECT count(*) FROM span_rollup) || ' hourly, ' || (SELECT count(*) FROM span_rollup_minute) || ' minute'")
DIRTY_LEFT=$(sql "SELECT coalesce(string_agg(DISTINCT to_char(period AT TIME ZONE 'UTC', 'HH24:MI'), ' '), 'none') FROM span_rollup_dirty")
note "rollup rows: $ROLLUP_ROWS; hours still dirty (UTC): $DIRTY_LEFT"

# ---- 3. settings and the gateway ----------------------------------------------------
# Per-database settings reach every new connection: the gateway's pool and
# psql alike.  The kept cluster may hold those of an earlier run.
sql "DO \$\$BEGIN EXECUTE format('ALTER DATABASE %I RESET ALL', current_database()); END\$\$" >/dev/null
for kv in "${PG_SETS[@]}"; do
	sql "DO \$\$BEGIN EXECUTE format('ALTER DATABASE %I SET ${kv%%=*} = %L', current_database(), '${kv#*=}'); END\$\$" >/dev/null ||
		die "--pg-set $kv: PostgreSQL refused it"
done
PG_SETTINGS=$(sql "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('jit', 'shared_buffers', 'work_mem', 'max_parallel_workers_per_gather', 'effective_cache_size', 'random_page_cost')")
# ---- the gateway ---------------------------------------------------------------
PORT=$("$NODE" -e "const s=require('net').createServer();
s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
BASE=http://127.0.0.1:$PORT
note "starting $SEXTANT on 127.0.0.1:$PORT"
# get_mesh_graph and get_resource_detail are in the "mesh" set, listed
# only when named
[[ ",$KINDS," != *,[gr]* ]] || export SEXTANT_TOOLS_ENABLED_SETS=${SEXTANT_TOOLS_ENABLED_SETS:-core,query,spans,genai,grafana,mesh}
DATABASE_URL=$PG_URL SEXTANT_LISTEN=127.0.0.1:$PORT "$SEXTANT" serve "${CONFIG_ARGS[@]}" >"$OUT/sextant.log" 2>&1 &
SEXTANT_PID=$!
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$BASE/readyz")" = 200 ]; do
	alive "$SEXTANT_PID" || {
		tail -n 20 "$OUT/sextant.log" >&2
		die "sextant exited during start-up (log: $OUT/sextant.log)"
	}
	i=$((i + 1))
	[ "$i" -lt $((START_S * 10)) ] || die "sextant not ready (/readyz) within $START_S s (log: $OUT/sextant.log)"
	sleep 0.1
done

# ---- 4. the runs ---------------------------------------------------------------------
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
if [ "$LIVE" = 1 ]; then MODE=(--live); else MODE=(--to "$ANCHOR"); fi
sql 'SELECT pg_stat_statements_reset()' >/dev/null
FAILED=0
for r in $(seq 1 "$RUNS"); do
	note "run $r of $RUNS: $CALLS calls per query and side"
	bounded "$RUN_S" "$NODE" bench/query-run.mjs --mcp "$BASE/mcp" --pg-url "$PG_URL" --psql "$PSQL" \
		--services "$SERVICES" --kinds "$KINDS" --calls "$CALLS" --traces-sql "$TRACES_SQL" "${MODE[@]}" --out "$OUT/run-$r.json" >&2 || {
		echo "query.sh: run $r: a call failed or the tool and the SQL disagreed (see $OUT/run-$r.json)" >&2
		FAILED=1
	}
	[ -s "$OUT/run-$r.json" ] || die "run $r gave no result"
done
LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
alive "$SEXTANT_PID" || die "sextant died during the runs (log: $OUT/sextant.log)"

# Time in the database per statement (all runs, check and warm-up calls
# included): the gateway's statements and psql's.
sql "SELECT calls, round(mean_exec_time::numeric, 2), round(stddev_exec_time::numeric, 2), rows / greatest(calls, 1),
	regexp_replace(left(query, 160), '\s+', ' ', 'g')
	FROM pg_stat_statements WHERE calls >= $RUNS AND query !~* 'pg_stat_statements|^(SET|SHOW|BEGIN|COMMIT)'
	ORDER BY total_exec_time DESC LIMIT 12" | tr '|' '\t' >"$OUT/statements.tsv" || true

# ---- report ------------------------------------------------------------------------------
"$NODE" - "$OUT" "$RUNS" "$TARGET_1H_RATIO" "$TARGET_1H_P95" "$TARGET_24H_SPEEDUP" "$TARGET_TL_P95" "$TARGET_G_P95" "$TARGET_R_P95" <<'EOF' >"$OUT/table.md"
const fs = require('fs');
const [out, runs, t1hRatio, t1hP95, t24Speed, tlP95, gP95, rP95] = process.argv.slice(2);
const rs = [];
for (let r = 1; r <= Number(runs); r++) rs.push(JSON.parse(fs.readFileSync(`${out}/run-${r}.json`, 'utf8')));
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const f = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const lines = [];
lines.push('| query | side | p50 ms | p95 ms | per-run p50 | per-run p95 | MCP/SQL p50 | MCP/SQL p95 | target | met |');
lines.push('|---|---|---:|---:|---|---|---:|---:|---|---|');
for (const k of Object.keys(rs[0].summary)) {
	const what = rs[0].kinds[k].what;
	const g = (side, q) => rs.map((r) => r.summary[k][side][q]);
	// the targets are judged on the plain client when the runs have it
	// (see query-run.mjs, RawHttp); node:http is shown beside it
	const plain = rs.every((r) => r.summary[k].raw && r.summary[k].raw.n > 0);
	const judged = plain ? 'raw' : 'mcp';
	const mp50 = med(g(judged, 'p50')), mp95 = med(g(judged, 'p95'));
	const sp50 = med(g('sql', 'p50')), sp95 = med(g('sql', 'p95'));
	const ratio = mp50 / sp50;
	let target = '', met = '';
	if (k === 'm1h' || k === 't1h') {
		target = `p50 <= ${t1hRatio}x SQL, p95 < ${t1hP95} ms`;
		const okR = ratio <= Number(t1hRatio), okP = mp95 < Number(t1hP95);
		met = okR && okP ? 'yes' : `**no** (${[okR ? '' : 'ratio', okP ? '' : 'p95'].filter(Boolean).join(', ')})`;
	} else if (k === 'm24h') {
		target = `SQL/MCP p50 >= ${t24Speed}x`;
		met = `${sp50 / mp50 >= Number(t24Speed) ? 'yes' : '**no**'} (${(sp50 / mp50).toFixed(1)}x)`;
	} else if (k === 'g24h') {
		target = `SQL/MCP p50 >= ${t24Speed}x, p95 < ${gP95} ms`;
		const okS = sp50 / mp50 >= Number(t24Speed), okP = mp95 < Number(gP95);
		met = `${okS && okP ? 'yes' : '**no**'} (${(sp50 / mp50).toFixed(1)}x)`;
	} else if (k === 'r24h' || k === 'rd24h') {
		target = `p95 < ${rP95} ms`;
		met = `${mp95 < Number(rP95) ? 'yes' : '**no**'} (${(sp50 / mp50).toFixed(1)}x SQL)`;
	} else if (k === 'tl24h') {
		target = `p95 < ${tlP95} ms`;
		met = mp95 < Number(tlP95) ? 'yes' : '**no**';
	}
	lines.push(`| ${what} | MCP${plain ? ', plain HTTP/1.1 client' : ''} | ${f(mp50)} | ${f(mp95)} | ${g(judged, 'p50').map(f).join(', ')} | ${g(judged, 'p95').map(f).join(', ')} | ${ratio.toFixed(2)} | ${(mp95 / sp95).toFixed(2)} | ${target} | ${met} |`);
	if (plain) {
		const hp50 = med(g('mcp', 'p50')), hp95 = med(g('mcp', 'p95'));
		lines.push(`| ${what} | MCP, node:http | ${f(hp50)} | ${f(hp95)} | ${g('mcp', 'p50').map(f).join(', ')} | ${g('mcp', 'p95').map(f).join(', ')} | ${(hp50 / sp50).toFixed(2)} | ${(hp95 / sp95).toFixed(2)} | (client cost shown) | |`);
	}
	lines.push(`| ${what} | SQL (psql) | ${f(sp50)} | ${f(sp95)} | ${g('sql', 'p50').map(f).join(', ')} | ${g('sql', 'p95').map(f).join(', ')} | | | | |`);
}
lines.push('');
const checks = rs.flatMap((r) => r.checks);
const diff = checks.filter((c) => c.problems.length).length;
const pct = Math.max(...checks.filter((c) => c.maxPctDiff !== undefined).map((c) => c.maxPctDiff));
const rollupCalls = (k) => rs.map((r) => r.summary[k] ? r.summary[k].rollup_calls : 0).reduce((a, b) => a + b, 0);
lines.push(`Same answer: ${checks.length - diff} of ${checks.length} checks equal (requests, error rates; ${Number.isFinite(pct) ? `percentiles within ${(100 * pct).toFixed(2)}% at most; ` : ''}trace ids and span counts; a span's attribute, resource and event counts); served from rollups: query_metrics 1h in ${rollupCalls('m1h')}, 24h in ${rollupCalls('m24h')}, 24h step 5m in ${rollupCalls('tl24h')}, get_mesh_graph 1h in ${rollupCalls('g1h')}, 24h in ${rollupCalls('g24h')} of ${rs.length * rs[0].calls} measured calls each.`);
console.log(lines.join('\n'));
EOF

{
	echo "# Query latency: $ROWS spans over 24 h, MCP against psql"
	echo
	echo "$STARTED, $(nproc) CPUs, load average before: $LOADAVG, after: $LOADAVG_AFTER;" \
		"PostgreSQL $PG_VERSION (private cluster, fsync off; ${PG_SETS[*]:-no --pg-set}: $PG_SETTINGS), database $DB_SIZE;" \
		"sextant ${CONFIG:-with its built-in defaults}$(env | grep '^SEXTANT_' | sed 's/^/, /' | tr -d '\n')."
	if [ "$LIVE" = 1 ]; then
		echo "Ranges: time_range \"1h\" / \"24h\" (SQL: now() - interval), data ending $AGE_S s before the runs."
	else
		echo "Ranges: from/to ending at $ANCHOR, where the data ends (loaded $(state_get loaded)), the same on every call."
	fi
	echo "$RUNS runs x $CALLS rounds, services $SERVICES in turn; per round and query node:http, psql, the plain client, psql" \
		"(each MCP call between two psql calls: $CALLS MCP calls per client, $((2 * CALLS)) psql calls), the first place (cold) rotating;" \
		"MCP: a plain HTTP/1.1 client on one socket (the targets are judged on it: no HTTP library's cost in its" \
		"clock, as none is in psql's), and node:http on one keep-alive connection, same session, shown beside it;" \
		"query_traces SQL: $TRACES_SQL; rollup rows: $ROLLUP_ROWS, hours still dirty: $DIRTY_LEFT."
	echo
	cat "$OUT/table.md"
	echo
	echo "Database time per statement over all runs (pg_stat_statements: calls, mean ms, stddev ms, rows per call, statement):"
	echo
	echo '```'
	cut -c1-240 "$OUT/statements.tsv"
	echo '```'
} >"$OUT/results.md"
cat "$OUT/results.md"
[ "$FAILED" = 0 ] || die "some calls failed or disagreed with the SQL (above)"

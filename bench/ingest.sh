#!/usr/bin/env bash
# ingest.sh - OTLP ingestion benchmark: the same spans sent to Sextant's
# /v1/traces as OTLP protobuf and as OTLP JSON by parallel keep-alive
# clients, against psql's COPY of the same rows into the same table, and
# the gateway's memory under a sustained load, in one run on a throwaway
# PostgreSQL.  See bench/README.md.
#
# Run from anywhere as `sh bench/ingest.sh` (re-executes itself under bash).
# Knobs (env):
#   BENCH_SPANS               spans per set (protobuf, JSON)      100000
#   BENCH_SPANS_PER_REQUEST   spans per OTLP request              500
#   BENCH_CONCURRENCY         parallel clients / psql processes   8
#   BENCH_SEED                generator seed                      1
#   BENCH_RSS_DURATION        seconds of sustained load           60
#   BENCH_RSS_INTERVAL        seconds between RSS samples         2
#   BENCH_SEXTANT             Sextant binary                      build/sextant
#   BENCH_CONFIG              Sextant config (empty: defaults)    ""
# SEXTANT_* variables in the environment reach the gateway (e.g.
# SEXTANT_DATABASE_POOL_SIZE=8).  Output: a Markdown table on stdout (also
# bench/out/ingest/results.md); raw outputs in bench/out/ingest/.  Exit 1
# when a request failed or a row count is wrong; a missed target is only
# reported.
# shellcheck disable=SC2016 # jget evaluates JavaScript (template literals)
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=bench/out/ingest
PGDIR=bench/out/ingest-pg

SPANS=${BENCH_SPANS:-100000}
PER_REQ=${BENCH_SPANS_PER_REQUEST:-500}
CONC=${BENCH_CONCURRENCY:-8}
SEED=${BENCH_SEED:-1}
RSS_DURATION=${BENCH_RSS_DURATION:-60}
RSS_INTERVAL=${BENCH_RSS_INTERVAL:-2}
SEXTANT=${BENCH_SEXTANT:-build/sextant}
CONFIG=${BENCH_CONFIG:-}
# Targets of issue 3, as ratios to the best COPY rate.
TARGET_PB=0.5
TARGET_JSON=0.35
RSS_FLAT_PCT=20
# Bounds, in seconds.
START_S=30     # gateway start-up (migrations included)
STOP_S=20      # gateway shutdown after SIGTERM
PG_S=120       # pg.sh start / stop
SQL_S=900      # one psql command (COPY of all rows)
GEN_S=600      # generating the bodies
LOAD_S=1800    # one load run (each body once)
REQ_MS=120000  # one request

die() {
	echo "ingest.sh: $*" >&2
	exit 1
}
note() { echo "== $*" >&2; }

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
for v in SPANS PER_REQ CONC RSS_DURATION RSS_INTERVAL; do
	{ is_uint "${!v}" && [ "${!v}" -gt 0 ]; } ||
		die "$v (BENCH_*): expected a positive integer, got \"${!v}\""
done
is_uint "$SEED" || die "BENCH_SEED: expected a non-negative integer, got \"$SEED\""
[ $((SPANS % PER_REQ)) -eq 0 ] ||
	die "BENCH_SPANS ($SPANS) must be a multiple of BENCH_SPANS_PER_REQUEST ($PER_REQ)"
REQUESTS=$((SPANS / PER_REQ))
[ "$REQUESTS" -le 16777215 ] || die "BENCH_SPANS / BENCH_SPANS_PER_REQUEST: at most 16777215 requests"

for tool in curl timeout split; do
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
CLK_TCK=$(getconf CLK_TCK)

# ---- cleanup ---------------------------------------------------------------
SEXTANT_PID=""
SAMPLER_PID=""
TOP_PID=""
CHILDREN=""
PG_STARTED=0

alive() { # PID: running, not a zombie
	local st
	st=$(sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || st=""
	case "$st" in '' | Z*) return 1 ;; *) return 0 ;; esac
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL when still there.
stop_pid() {
	local i=0
	kill -TERM "$1" 2>/dev/null || return 0
	while alive "$1" && [ "$i" -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if alive "$1"; then
		echo "ingest.sh: process $1 ignored SIGTERM for $2 s: killing it" >&2
		kill -KILL "$1" 2>/dev/null || true
	fi
	wait "$1" 2>/dev/null || true
}

cleanup() {
	set +e
	trap '' INT TERM HUP
	for p in $CHILDREN $TOP_PID; do stop_pid "$p" 5; done
	[ -n "$SAMPLER_PID" ] && stop_pid "$SAMPLER_PID" 2
	[ -n "$SEXTANT_PID" ] && stop_pid "$SEXTANT_PID" "$STOP_S"
	if [ "$PG_STARTED" = 1 ]; then
		timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 ||
			echo "ingest.sh: pg.sh stop $PGDIR failed: the cluster may still run" >&2
	fi
	rm -rf "$PGDIR" "$OUT/spans.copy" "$OUT/slices"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- helpers -----------------------------------------------------------------
# bounded SECONDS CMD...: CMD under timeout, in the background so that a
# signal to this script is handled at once (bash runs traps only between
# foreground commands, and timeout takes its child out of the terminal's
# process group, away from Ctrl-C).  Returns CMD's status.
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

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%d", (s > 0 ? n / s : 0) }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

sql() { # SQL: one value, unaligned
	timeout "$SQL_S" "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$PG_URL" -c "$1"
}

span_rows() { sql 'SELECT count(*) FROM spans'; }

# CPU ticks of the postmaster and its backends (exited ones it reaped
# included): fields 14-17 of its /proc/PID/stat, 14-15 of the children's.
pg_ticks() {
	local pm c
	pm=$(sed -n 1p "$PGDIR/data/postmaster.pid")
	{
		sed 's/.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }'
		for c in $(ps -o pid= --ppid "$pm"); do
			sed 's/.*) //' "/proc/$c/stat" 2>/dev/null | awk '{ print $12 + $13 }' || true
		done
	} | awk '{ s += $1 } END { print s + 0 }'
}
# Busy and total ticks of all CPUs (/proc/stat: idle and iowait are idle).
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat; }
busy_pct() { # "BUSY0 TOTAL0" "BUSY1 TOTAL1"
	awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ");
		printf "%d", ((y[2] > x[2]) ? 100 * (y[1] - x[1]) / (y[2] - x[2]) : 0) }'
}
cores() { # TICKS SECONDS
	awk -v t="$1" -v s="$2" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", (s > 0 ? t / hz / s : 0) }'
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

jget() { # FILE EXPR: a value of a one-line JSON result
	"$NODE" -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const v = (new Function("r", "return " + process.argv[2]))(r); console.log(typeof v === "object" ? JSON.stringify(v) : v)' "$1" "$2"
}

# ---- 1. the bodies -----------------------------------------------------------
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.tsv "$OUT"/*.md "$OUT"/*.log
note "generating $REQUESTS requests x $PER_REQ spans, protobuf and JSON (seed $SEED)"
bounded "$GEN_S" "$NODE" bench/ingest-gen.mjs --out "$OUT" --requests "$REQUESTS" \
	--spans-per-request "$PER_REQ" --warmup-requests "$CONC" --seed "$SEED" >"$OUT/gen.txt" ||
	die "ingest-gen.mjs failed or took over $GEN_S s"
PB_BYTES=$(jget "$OUT/manifest.json" r.pb_bytes)
JSON_BYTES=$(jget "$OUT/manifest.json" r.json_bytes)
note "bodies: protobuf $(mib $((PB_BYTES / 1024))) MiB, JSON $(mib $((JSON_BYTES / 1024))) MiB"

# ---- 2. PostgreSQL and the gateway --------------------------------------------
if [ -d "$PGDIR" ]; then # left by a run killed with SIGKILL
	timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 || true
	rm -rf "$PGDIR"
fi
note "starting a throwaway PostgreSQL in $PGDIR"
PG_STARTED=1
PG_URL=$(SEXTANT_PG_THROWAWAY=1 timeout "$PG_S" sh scripts/pg.sh start "$PGDIR" | tail -n 1) ||
	die "scripts/pg.sh start $PGDIR failed (log: $PGDIR/postgres.log)"
[ -n "$PG_URL" ] || die "scripts/pg.sh start printed no URL"
PG_VERSION=$(sql 'SHOW server_version')

PORT=$("$NODE" -e "const s=require('net').createServer();
s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
BASE=http://127.0.0.1:$PORT
note "starting $SEXTANT on 127.0.0.1:$PORT"
set --
[ -z "$CONFIG" ] || set -- --config "$CONFIG"
DATABASE_URL=$PG_URL SEXTANT_LISTEN=127.0.0.1:$PORT "$SEXTANT" serve "$@" >"$OUT/sextant.log" 2>&1 &
SEXTANT_PID=$!
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$BASE/readyz")" = 200 ]; do
	alive "$SEXTANT_PID" || {
		tail -n 20 "$OUT/sextant.log" >&2
		die "sextant exited during start-up (log: $OUT/sextant.log)"
	}
	i=$((i + 1))
	[ "$i" -lt $((START_S * 10)) ] || {
		tail -n 20 "$OUT/sextant.log" >&2
		die "sextant not ready (/readyz) within $START_S s (log: $OUT/sextant.log)"
	}
	sleep 0.1
done
[ "$(span_rows)" = 0 ] || die "the spans table of the new cluster is not empty"
RSS_START=$(rss_kb "$SEXTANT_PID")

FAILED=0
check_rows() { # VAR EXPECTED WHAT: VAR = rows in spans, checked
	local n
	n=$(span_rows)
	if [ "$n" != "$2" ]; then
		echo "ingest.sh: $3: spans holds $n rows, expected $2" >&2
		FAILED=1
	fi
	printf -v "$1" '%s' "$n"
}

# ---- 3. OTLP over HTTP, each body once ----------------------------------------
PM_PID=$(sed -n 1p "$PGDIR/data/postmaster.pid")
load() { # SET: one pass over bench/out/ingest/SET
	sql CHECKPOINT >/dev/null
	note "POST the $1 bodies, $CONC clients"
	bounded "$LOAD_S" "$NODE" bench/ingest-load.mjs --url "$BASE/v1/traces" --dir "$OUT/$1" \
		--concurrency "$CONC" --timeout-ms "$REQ_MS" --clk-tck "$CLK_TCK" \
		--cpu "sextant=$SEXTANT_PID" --cpu "postgres=$PM_PID" --out "$OUT/load-$1.json" \
		>/dev/null || {
		echo "ingest.sh: $1: not every request got 200 (see $OUT/load-$1.json)" >&2
		[ -s "$OUT/load-$1.json" ] && jget "$OUT/load-$1.json" r.problems >&2
		FAILED=1
	}
	[ -s "$OUT/load-$1.json" ] || die "$1: the load generator gave no result"
}

# Warm-up, not measured: every connection (client, gateway, PostgreSQL
# backend) used once, each decoder run; then the table is emptied.
load warm
check_rows ROWS_WARM $((2 * CONC * PER_REQ)) "after the warm-up"
sql 'TRUNCATE spans' >/dev/null
load pb
check_rows ROWS_PB "$SPANS" "after the protobuf set"
load json
check_rows ROWS_JSON $((2 * SPANS)) "after the JSON set"

# ---- 4. psql COPY of the same rows --------------------------------------------
note "exporting the stored spans (COPY TO STDOUT)"
bounded "$SQL_S" "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_URL" \
	-c 'COPY (SELECT * FROM spans) TO STDOUT' >"$OUT/spans.copy" ||
	die "COPY (SELECT * FROM spans) TO STDOUT failed"
COPY_ROWS=$(wc -l <"$OUT/spans.copy")
[ "$COPY_ROWS" = $((2 * SPANS)) ] || die "exported $COPY_ROWS rows, expected $((2 * SPANS))"
ABS_COPY=$(pwd)/$OUT/spans.copy
mkdir -p "$OUT/slices"
split -n "l/$CONC" -d -a 3 "$OUT/spans.copy" "$OUT/slices/part."

copy_run() { # LABEL CLIENTS: TRUNCATE, then \copy with CLIENTS psql processes
	local t0 t1 p0 p1 m0 m1 pids=() f rc=0
	sql 'TRUNCATE spans' >/dev/null
	sql CHECKPOINT >/dev/null
	note "psql \\copy of $COPY_ROWS rows, $2 client(s)"
	p0=$(pg_ticks)
	m0=$(machine_ticks)
	t0=$(now)
	if [ "$2" = 1 ]; then
		bounded "$SQL_S" "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_URL" \
			-c "\\copy spans FROM '$ABS_COPY'" || rc=1
	else
		for f in "$OUT"/slices/part.*; do
			timeout "$SQL_S" "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_URL" \
				-c "\\copy spans FROM '$(pwd)/$f'" &
			pids+=($!)
			CHILDREN="$CHILDREN $!"
		done
		for f in "${pids[@]}"; do wait "$f" || rc=1; done
		CHILDREN=""
	fi
	t1=$(now)
	m1=$(machine_ticks)
	p1=$(pg_ticks)
	[ "$rc" = 0 ] || {
		echo "ingest.sh: $1: a psql \\copy failed" >&2
		FAILED=1
	}
	COPY_S=$(elapsed "$t0" "$t1")
	COPY_PG_CORES=$(cores $((p1 - p0)) "$COPY_S")
	COPY_BUSY=$(busy_pct "$m0" "$m1")
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$COPY_ROWS" "$COPY_S" "$COPY_PG_CORES" "$COPY_BUSY" >>"$OUT/copy.tsv"
}

printf 'run\trows\tseconds\tpostgres_cores\tmachine_busy_pct\n' >"$OUT/copy.tsv"
copy_run copy1 1
COPY1_S=$COPY_S
COPY1_PG=$COPY_PG_CORES
COPY1_BUSY=$COPY_BUSY
check_rows ROWS_COPY1 $((2 * SPANS)) "after \\copy, 1 client"
copy_run copyN "$CONC"
COPYN_S=$COPY_S
COPYN_PG=$COPY_PG_CORES
COPYN_BUSY=$COPY_BUSY
check_rows ROWS_COPYN $((2 * SPANS)) "after \\copy, $CONC clients"
rm -rf "$OUT/spans.copy" "$OUT/slices"

# ---- 5. memory under a sustained load -------------------------------------------
# Every body again, protobuf and JSON interleaved: all are duplicates by
# now, and still go through decoding, COPY and ON CONFLICT DO NOTHING.
note "sustained load for $RSS_DURATION s, RSS every $RSS_INTERVAL s"
RSS_BEFORE=$(rss_kb "$SEXTANT_PID")
# Samples at INTERVAL, 2 INTERVAL, ... strictly before the load ends: one
# taken as it ends would see the in-flight requests' memory already freed.
(
	trap 'exit 0' TERM
	t=$RSS_INTERVAL
	while [ "$t" -lt "$RSS_DURATION" ]; do
		sleep "$RSS_INTERVAL"
		printf '%s\t%s\n' "$t" "$(rss_kb "$SEXTANT_PID")"
		t=$((t + RSS_INTERVAL))
	done
) >"$OUT/rss.tsv" &
SAMPLER_PID=$!
# What top shows a third of the way in: the second of two frames 3 s apart
# (the first one's %CPU is not over an interval).
(
	sleep $((RSS_DURATION / 3))
	timeout 15 top -b -n 2 -d 3 -w 200 | awk '/^top -/ { n++ } n == 2' | head -n 30
) >"$OUT/top-sustained.txt" 2>&1 &
TOP_PID=$!
bounded $((RSS_DURATION + REQ_MS / 1000 + 60)) "$NODE" bench/ingest-load.mjs --url "$BASE/v1/traces" \
	--dir "$OUT/pb" --dir "$OUT/json" --concurrency "$CONC" --duration "$RSS_DURATION" \
	--timeout-ms "$REQ_MS" --clk-tck "$CLK_TCK" --cpu "sextant=$SEXTANT_PID" --cpu "postgres=$PM_PID" \
	--out "$OUT/load-sustained.json" >/dev/null || {
	echo "ingest.sh: sustained load: not every request got 200 (see $OUT/load-sustained.json)" >&2
	FAILED=1
}
stop_pid "$SAMPLER_PID" 2
SAMPLER_PID=""
wait "$TOP_PID" 2>/dev/null || true
TOP_PID=""
[ -s "$OUT/load-sustained.json" ] || die "sustained load: the load generator gave no result"
sleep 2
RSS_AFTER=$(rss_kb "$SEXTANT_PID")
check_rows ROWS_SUSTAINED $((2 * SPANS)) "after the sustained load (duplicates only)"
alive "$SEXTANT_PID" || die "sextant died during the run (log: $OUT/sextant.log)"

# ---- report ------------------------------------------------------------------
PB_RATE=$(jget "$OUT/load-pb.json" r.spans_per_s)
JSON_RATE=$(jget "$OUT/load-json.json" r.spans_per_s)
COPY1_RATE=$(rate "$COPY_ROWS" "$COPY1_S")
COPYN_RATE=$(rate "$COPY_ROWS" "$COPYN_S")
BEST=$COPY1_RATE
[ "$COPYN_RATE" -gt "$BEST" ] && BEST=$COPYN_RATE
ratio() { awk -v a="$1" -v b="$BEST" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
met() { awk -v r="$1" -v t="$2" 'BEGIN { print ((r + 0 >= t + 0) ? "yes" : "**no**") }'; }
cpu_of() { # FILE: "sextant X, postgres Y, load generator Z, other W cores; machine B% busy"
	jget "$1" '`sextant ${r.cpu_cores.sextant}, postgres ${r.cpu_cores.postgres}, load generator ${r.loader_cores}, other processes ${Math.max(0, r.cpu_cores.machine_busy * '"$(nproc)"' - r.cpu_cores.sextant - r.cpu_cores.postgres - r.loader_cores).toFixed(2)} cores; machine ${Math.round(r.cpu_cores.machine_busy * 100)}% busy`'
}
threads_of() { # FILE: the busiest gateway threads
	jget "$1" 'r.cpu_cores.sextant_threads.slice(0, 4).map((t) => t.comm + "/" + t.tid + " " + t.cores).join(", ")'
}

[ -s "$OUT/rss.tsv" ] || die "no RSS sample: BENCH_RSS_DURATION must exceed BENCH_RSS_INTERVAL"
read -r RSS_MIN RSS_MAX RSS_N < <(awk '{ if (NR == 1 || $2 < mn) mn = $2; if ($2 > mx) mx = $2 } END { print mn + 0, mx + 0, NR }' "$OUT/rss.tsv")
# Drift: the mean of the last third of the samples against the first third.
RSS_DRIFT=$(awk '{ v[NR] = $2 } END { k = int(NR / 3); if (k < 1) { print "n/a"; exit }
	for (i = 1; i <= k; i++) { a += v[i]; b += v[NR - k + i] }
	printf "%+.1f%%", (b - a) * 100 / a }' "$OUT/rss.tsv")
RSS_GROWTH=$(awk -v a="$RSS_MIN" -v b="$RSS_MAX" 'BEGIN { printf "%.1f", (a > 0 ? (b - a) * 100 / a : 0) }')
RSS_FLAT=$(awk -v g="$RSS_GROWTH" -v t="$RSS_FLAT_PCT" 'BEGIN { print ((g + 0 < t + 0) ? "flat" : "**NOT flat**") }')
PB_R=$(ratio "$PB_RATE")
JSON_R=$(ratio "$JSON_RATE")

{
	echo "# OTLP ingestion: $SPANS spans per set, $PER_REQ spans per request, $CONC clients"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average before: $LOADAVG," \
		"PostgreSQL $PG_VERSION (throwaway: fsync off), sextant ${CONFIG:-with its built-in defaults}$(env | grep '^SEXTANT_' | sed 's/^/, /' | tr -d '\n')." \
		"Bodies: protobuf $(mib $((PB_BYTES / 1024))) MiB, JSON $(mib $((JSON_BYTES / 1024))) MiB (seed $SEED)."
	echo
	echo "| path | spans | seconds | spans/s | ratio to COPY | target | met |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	echo "| OTLP/HTTP protobuf, $CONC clients | $SPANS | $(jget "$OUT/load-pb.json" r.wall_s) | $PB_RATE | $PB_R | >= $TARGET_PB | $(met "$PB_R" "$TARGET_PB") |"
	echo "| OTLP/HTTP JSON, $CONC clients | $SPANS | $(jget "$OUT/load-json.json" r.wall_s) | $JSON_RATE | $JSON_R | >= $TARGET_JSON | $(met "$JSON_R" "$TARGET_JSON") |"
	echo "| psql \\copy, 1 client | $COPY_ROWS | $COPY1_S | $COPY1_RATE | $(ratio "$COPY1_RATE") | | |"
	echo "| psql \\copy, $CONC clients | $COPY_ROWS | $COPYN_S | $COPYN_RATE | $(ratio "$COPYN_RATE") | | |"
	echo
	echo "Gateway RSS under a ${RSS_DURATION} s sustained load ($(jget "$OUT/load-sustained.json" r.ok_requests) requests," \
		"$(jget "$OUT/load-sustained.json" r.spans_per_s) spans/s, all duplicates), $RSS_N samples every $RSS_INTERVAL s:" \
		"min $(mib "$RSS_MIN") MiB, max $(mib "$RSS_MAX") MiB, (max - min) / min = $RSS_GROWTH%: $RSS_FLAT (< $RSS_FLAT_PCT%); mean of the last third of the samples against the first third: $RSS_DRIFT." \
		"At start-up $(mib "$RSS_START") MiB, before the sustained load $(mib "$RSS_BEFORE") MiB, 2 s after it $(mib "$RSS_AFTER") MiB."
	echo
	echo "Rows in spans: $ROWS_WARM after the warm-up ($CONC protobuf and $CONC JSON requests, not measured; TRUNCATE after it), $ROWS_PB after protobuf, $ROWS_JSON after JSON, $ROWS_COPY1 and $ROWS_COPYN after each \\copy" \
		"(TRUNCATE before each), $ROWS_SUSTAINED after the sustained load."
	echo "Latency per request (p50 / p99 ms): protobuf $(jget "$OUT/load-pb.json" '`${r.latency_ms.p50} / ${r.latency_ms.p99}`'), JSON $(jget "$OUT/load-json.json" '`${r.latency_ms.p50} / ${r.latency_ms.p99}`')."
	echo
	echo "CPU during each run (cores of 2):"
	echo "- protobuf: $(cpu_of "$OUT/load-pb.json"); busiest gateway threads: $(threads_of "$OUT/load-pb.json")"
	echo "- JSON: $(cpu_of "$OUT/load-json.json"); busiest gateway threads: $(threads_of "$OUT/load-json.json")"
	echo "- \\copy: postgres $COPY1_PG cores, machine $COPY1_BUSY% busy (1 client); postgres $COPYN_PG cores, machine $COPYN_BUSY% busy ($CONC clients)"
	echo "- sustained: $(cpu_of "$OUT/load-sustained.json") (top: $OUT/top-sustained.txt)"
} >"$OUT/results.md"
cat "$OUT/results.md"
[ "$FAILED" = 0 ] || die "some requests failed or a row count was wrong (above)"

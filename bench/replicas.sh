#!/usr/bin/env bash
# replicas.sh - the 2026-07-28 stateless path and the 2025 session path side
# by side (issue 7): req/s, p50/p99, CPU per request, errors and "session
# not found" (404) answers for tools/list and tools/call of a fixture tool,
# on one gateway and on two replicas behind nginx round-robin per request,
# the replicas sharing their sessions through one PostgreSQL database; plus
# the session path on a gateway keeping its sessions in memory (what the
# shared store costs).  One interleaved run.  See bench/README.md.
# Target: stateless req/s >= 0.90 x session req/s per topology and request
# (the median over the rounds of the ratio of the two runs of a round).
#
# Run from anywhere as `sh bench/replicas.sh` (re-executes itself under
# bash).  Knobs (env):
#   BENCH_ROUNDS 3            interleaved rounds
#   BENCH_DURATION 8          seconds per wrk run
#   BENCH_WARMUP 2            seconds of unrecorded warm-up per cell (0 = none)
#   BENCH_CONNECTIONS 32      wrk keep-alive connections
#   BENCH_THREADS 2           wrk threads
#   BENCH_SERVER_THREADS 1    [server] threads of each gateway
#   BENCH_NGINX_WORKERS 2     nginx worker processes
#   BENCH_SEXTANT build/sextant, BENCH_CONFIG test/conformance.toml,
#   BENCH_NGINX /usr/sbin/nginx
#   BENCH_KEEP_PG 0           1 = keep the (stopped) cluster in
#                             bench/out/replicas-pg after the run
# Output: a Markdown report on stdout and in bench/out/replicas/report.md;
# raw wrk output, results.tsv, the curl checks and the logs in
# bench/out/replicas/.  Exit 1 when a run had errors or a 404, a check
# failed or a process died; 2 when a tool is missing.  A missed target is
# only reported.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -Eeuo pipefail
trap 'echo "replicas.sh: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=bench/out/replicas
PGDIR=bench/out/replicas-pg
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-8}
WARMUP=${BENCH_WARMUP:-2}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
SERVER_THREADS=${BENCH_SERVER_THREADS:-1}
NGINX_WORKERS=${BENCH_NGINX_WORKERS:-2}
SEXTANT=${BENCH_SEXTANT:-build/sextant}
CONFIG=${BENCH_CONFIG:-test/conformance.toml}
NGINX=${BENCH_NGINX:-/usr/sbin/nginx}
KEEP_PG=${BENCH_KEEP_PG:-0}
TOOL=test_simple_text
REQUESTS="tools/list tools/call:$TOOL"
SESSION_PROTO=2025-11-25
STATELESS_PROTO=2026-07-28
START_S=30 # a gateway's /readyz, nginx's port
PG_S=120   # pg.sh start / stop
CURL_S=10

die() {
	echo "replicas.sh: $*" >&2
	exit 1
}
note() { echo "== $*" >&2; }

for t in wrk curl jq python3 timeout "$NGINX"; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "replicas.sh: $t not found (apt-get install wrk nginx curl jq python3)" >&2
		exit 2
	}
done
if [ ! -x "$SEXTANT" ]; then
	[ -z "${BENCH_SEXTANT:-}" ] || die "$SEXTANT is not an executable"
	note "building $SEXTANT (make all)"
	make all >&2 || die "make all failed"
fi

# ---- processes -----------------------------------------------------------------

PIDS=()     # gateways and nginx, ours to end
WRK_PID=""
PG_STARTED=0

alive() { # PID: running, not a zombie
	local st
	st=$(sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || st=""
	case "$st" in '' | Z*) return 1 ;; *) return 0 ;; esac
}

cleanup() {
	set +e
	[ -n "$WRK_PID" ] && kill -TERM "$WRK_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 100); do
		local left=0
		for p in "${PIDS[@]}"; do alive "$p" && left=1; done
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
	if [ "$PG_STARTED" = 1 ]; then
		timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >&2 ||
			echo "replicas.sh: pg.sh stop $PGDIR failed: the cluster may still run" >&2
		[ "$KEEP_PG" = 1 ] || rm -rf "$PGDIR"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# CPU time (user + system, all threads) of PIDs in clock ticks: fields 14
# and 15 of /proc/PID/stat, counted after the ")" that ends the name.
cpu_ticks() {
	local p
	for p in "$@"; do sed 's/.*) //' "/proc/$p/stat" 2>/dev/null || true; done |
		awk '{ s += $12 + $13 } END { print s + 0 }'
}
CLK_TCK=$(getconf CLK_TCK)

nginx_pids() {
	echo "$NGINX_PID"
	ps -o pid= --ppid "$NGINX_PID" 2>/dev/null || true
}

# PostgreSQL: postmaster + backends, plus the exited backends' time the
# postmaster has collected (fields 16, 17).
pg_ticks() {
	local pm
	pm=$(sed -n 1p "$PGDIR/data/postmaster.pid" 2>/dev/null) || pm=""
	[ -n "$pm" ] || {
		echo 0
		return
	}
	{
		sed 's/.*) //' "/proc/$pm/stat" 2>/dev/null | awk '{ print $12 + $13 + $14 + $15 }'
		# shellcheck disable=SC2046 # one pid per word
		cpu_ticks $(ps -o pid= --ppid "$pm" 2>/dev/null || true)
	} | awk '{ s += $1 } END { print s + 0 }'
}

# ---- PostgreSQL, the gateways, nginx -------------------------------------------

rm -rf "$OUT"
mkdir -p "$OUT/check" "$OUT/nginx/tmp"
CHK=$OUT/check
timeout "$PG_S" sh scripts/pg.sh stop "$PGDIR" >/dev/null 2>&1 || true
rm -rf "$PGDIR"
note "starting a throwaway PostgreSQL in $PGDIR"
PG_STARTED=1
PG_URL=$(SEXTANT_PG_THROWAWAY=1 timeout "$PG_S" sh scripts/pg.sh start "$PGDIR" 2>>"$OUT/pg.log" |
	tail -n 1) || die "scripts/pg.sh start $PGDIR failed (see $OUT/pg.log, $PGDIR/postgres.log)"
[ -n "$PG_URL" ] || die "scripts/pg.sh start printed no URL"
DATABASE_URL=$PG_URL "$SEXTANT" migrate --config "$CONFIG" >"$OUT/migrate.log" 2>&1 ||
	die "sextant migrate failed (log: $OUT/migrate.log)"

# The secret that seals 2026-07-28 requestState: shared, as replicas must.
KEY=$ROOT/$OUT/state.key
(umask 077 && head -c 48 /dev/urandom | base64 >"$KEY")

start_gateway() { # NAME STORE -> sets PORT, PID
	PORT=$(free_port)
	DATABASE_URL=$PG_URL SEXTANT_LISTEN=127.0.0.1:$PORT \
		SEXTANT_SERVER_THREADS=$SERVER_THREADS SEXTANT_SERVER_STATE_KEY_FILE=$KEY \
		SEXTANT_SESSIONS_STORE=$2 \
		"$SEXTANT" serve --config "$CONFIG" >"$OUT/$1.log" 2>&1 &
	PID=$!
	PIDS+=("$PID")
	for _ in $(seq $((START_S * 10))); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
			"http://127.0.0.1:$PORT/readyz")" = 200 ] && return 0
		alive "$PID" || {
			tail -n 5 "$OUT/$1.log" >&2
			die "gateway $1 exited during start-up (log: $OUT/$1.log)"
		}
		sleep 0.1
	done
	die "gateway $1 not ready (/readyz) within $START_S s (log: $OUT/$1.log)"
}

note "starting gateways A and B (sessions in the database) and C (sessions in memory)"
start_gateway a database
PORT_A=$PORT PID_A=$PID
start_gateway b database
PORT_B=$PORT PID_B=$PID
start_gateway c memory
PORT_C=$PORT PID_C=$PID

PORT_N=$(free_port)
user=""
[ "$(id -u)" = 0 ] && user="user root;"
sed -e "s|@PREFIX@|$ROOT/$OUT/nginx|g" -e "s|@PORT@|$PORT_N|g" -e "s|@A@|$PORT_A|g" \
	-e "s|@B@|$PORT_B|g" -e "s|@WORKERS@|$NGINX_WORKERS|g" -e "s|@USER@|$user|g" \
	bench/peers/nginx-rr.conf.in >"$OUT/nginx/nginx.conf"
"$NGINX" -t -q -p "$ROOT/$OUT/nginx/" -c "$ROOT/$OUT/nginx/nginx.conf" \
	-e "$ROOT/$OUT/nginx/error.log" || die "nginx rejected $OUT/nginx/nginx.conf"
"$NGINX" -p "$ROOT/$OUT/nginx/" -c "$ROOT/$OUT/nginx/nginx.conf" \
	-e "$ROOT/$OUT/nginx/error.log" >"$OUT/nginx.log" 2>&1 &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
for _ in $(seq $((START_S * 10))); do
	curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_N/healthz" && break
	alive "$NGINX_PID" || die "nginx exited during start-up (log: $OUT/nginx.log)"
	sleep 0.1
done

URL_A=http://127.0.0.1:$PORT_A/mcp
URL_B=http://127.0.0.1:$PORT_B/mcp
URL_C=http://127.0.0.1:$PORT_C/mcp
URL_N=http://127.0.0.1:$PORT_N/mcp

# "127.0.0.1:PORT" (nginx's X-Upstream) -> A or B
replica_of() {
	case "$1" in
	*:"$PORT_A") echo A ;;
	*:"$PORT_B") echo B ;;
	*) echo "${1:--}" ;;
	esac
}
name_replicas() { sed -e "s/127\.0\.0\.1:$PORT_A\b/A/g" -e "s/127\.0\.0\.1:$PORT_B\b/B/g"; }

# ---- requests with curl ----------------------------------------------------------

slug() { echo "${1%%:*}" | tr / _; } # tools/call:NAME -> tools_call

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"sextant-bench","version":"1.0"}}'

req_body() { # REQUEST ID PATH
	local method=${1%%:*} p=""
	[ "$method" = tools/call ] && p="\"name\":\"${1#*:}\",\"arguments\":{}"
	[ "$3" = stateless ] && p="$p${p:+,}$META"
	if [ -n "$p" ]; then
		printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":{%s}}' "$2" "$method" "$p"
	else
		printf '{"jsonrpc":"2.0","id":%s,"method":"%s"}' "$2" "$method"
	fi
}

# post URL SID PROTO BODY NAME [CURL ARGS...]: writes $CHK/NAME.hdr and
# NAME.json (the JSON-RPC message, also when it came as one SSE event);
# prints the HTTP status (000: no answer).
post() {
	local url=$1 sid=$2 proto=$3 body=$4 name=$5 code
	shift 5
	local h=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
	[ "$sid" = - ] || h+=(-H "Mcp-Session-Id: $sid")
	[ -z "$proto" ] || h+=(-H "MCP-Protocol-Version: $proto")
	code=$(curl -sS --max-time "$CURL_S" -o "$CHK/$name.raw" -D "$CHK/$name.hdr" \
		-w '%{http_code}' "${h[@]}" "$@" -X POST --data-binary "$body" "$url" 2>>"$CHK/curl.err") ||
		code=000
	if grep -qi '^content-type: *text/event-stream' "$CHK/$name.hdr" 2>/dev/null; then
		sed -n 's/^data: \{0,1\}//p' "$CHK/$name.raw" | tail -n 1 >"$CHK/$name.json"
	else
		cp "$CHK/$name.raw" "$CHK/$name.json" 2>/dev/null || : >"$CHK/$name.json"
	fi
	echo "$code"
}

header() { # NAME HEADER: the value of HEADER in $CHK/NAME.hdr
	tr -d '\r' <"$CHK/$1.hdr" | awk -v h="$(echo "$2" | tr '[:upper:]' '[:lower:]')" -F': ' \
		'tolower($1) == h { print $2; exit }'
}

# what NAME: "HTTP <code> from <replica>: <body>" for messages
what() {
	local up
	up=$(header "$1" X-Upstream)
	echo "HTTP $2${up:+ from replica $(replica_of "$up")}: $(head -c 300 "$CHK/$1.raw" | tr '\n' ' ')"
}

# ask URL SID PATH REQUEST NAME: one request; dies unless it is answered
# 200 with a result (tools/list: the tools of the reference, tools/call: a
# text content, not an error).
ask() {
	local url=$1 sid=$2 path=$3 req=$4 name=$5 proto=$SESSION_PROTO code
	local extra=()
	if [ "$path" = stateless ]; then
		proto=$STATELESS_PROTO
		extra=(-H "Mcp-Method: ${req%%:*}")
		[ "${req%%:*}" = tools/call ] && extra+=(-H "Mcp-Name: ${req#*:}")
	fi
	code=$(post "$url" "$sid" "$proto" "$(req_body "$req" 7 "$path")" "$name" "${extra[@]}")
	[ "$code" = 200 ] || die "check $name ($path $req on $url): $(what "$name" "$code")"
	case "$req" in
	tools/list)
		local names
		names=$(jq -r 'if .id == 7 then .result.tools[].name else error("id") end' \
			"$CHK/$name.json" 2>/dev/null | sort | tr '\n' ' ') || names=""
		[ -n "$names" ] || die "check $name: tools/list has no tools: $(what "$name" "$code")"
		if [ -z "${TOOL_NAMES:-}" ]; then
			TOOL_NAMES=$names
		elif [ "$names" != "$TOOL_NAMES" ]; then
			die "check $name: tools/list names differ from the first answer's: $names vs $TOOL_NAMES"
		fi
		;;
	tools/call:*)
		jq -e '.id == 7 and (.result.isError | not) and (.result.content[0].text | length > 0)' \
			"$CHK/$name.json" >/dev/null 2>&1 ||
			die "check $name: tools/call gave no text result: $(what "$name" "$code")"
		;;
	esac
}

# open_session URL NAME: initialize + notifications/initialized; sets SID and
# INIT_ON (the replica that answered initialize: A, B, or - without nginx).
open_session() {
	local code proto
	code=$(post "$1" - "" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'$SESSION_PROTO'","capabilities":{},"clientInfo":{"name":"sextant-bench","version":"1.0"}}}' "$2-initialize")
	[ "$code" = 200 ] || die "$2: initialize on $1: $(what "$2-initialize" "$code")"
	SID=$(header "$2-initialize" Mcp-Session-Id)
	[ -n "$SID" ] || die "$2: initialize on $1 gave no Mcp-Session-Id"
	proto=$(jq -r '.result.protocolVersion // empty' "$CHK/$2-initialize.json" 2>/dev/null) || proto=""
	[ "$proto" = "$SESSION_PROTO" ] || die "$2: initialize on $1 negotiated '$proto', not $SESSION_PROTO"
	INIT_ON=$(replica_of "$(header "$2-initialize" X-Upstream)")
	code=$(post "$1" "$SID" "$SESSION_PROTO" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$2-initialized")
	[ "$code" = 202 ] || die "$2: notifications/initialized on $1: $(what "$2-initialized" "$code")"
}

close_session() { # URL NAME: DELETE, as a client ends a session (status logged)
	local code
	code=$(curl -sS --max-time "$CURL_S" -o /dev/null -w '%{http_code}' -X DELETE \
		-H "Mcp-Session-Id: $SID" -H "MCP-Protocol-Version: $SESSION_PROTO" "$1" 2>/dev/null) ||
		code=000
	echo "$2 DELETE: HTTP $code" >>"$CHK/sessions.log"
}

# metrics PORT: sets M to "<POSTs to /mcp> <sessions loaded from the
# database> <session store operations other than the janitor's>"; when
# /metrics does not answer, M is "0 0 0" and METRICS_ERR says why.
METRICS_ERR=""
metrics() {
	local body
	if ! body=$(curl -sS --max-time "$CURL_S" "http://127.0.0.1:$1/metrics" 2>&1); then
		METRICS_ERR="$METRICS_ERR${METRICS_ERR:+; }GET /metrics of 127.0.0.1:$1 at $(date -u +%H:%M:%S): $body"
		M="0 0 0"
		return 0
	fi
	M=$(echo "$body" | awk '
	/^sextant_http_requests_total\{route="\/mcp"/ { r += $NF }
	/^sextant_session_cache_total\{result="miss"\}/ { m += $NF }
	/^sextant_session_store_ops_total\{/ && !/op="janitor"/ { o += $NF }
	END { printf "%d %d %d\n", r, m, o }')
}

# ---- checks before measuring -------------------------------------------------------

note "checking the answers with curl"
{
	# A session made on A is served by B (which loads it from the
	# database), and the other way round.
	metrics "$PORT_B"
	miss0=$(echo "$M" | cut -d' ' -f2)
	open_session "$URL_A" x-ab
	ask "$URL_B" "$SID" session tools/list x-ab-list-on-b
	ask "$URL_B" "$SID" session "tools/call:$TOOL" x-ab-call-on-b
	ask "$URL_A" "$SID" session tools/list x-ab-list-on-a
	metrics "$PORT_B"
	miss1=$(echo "$M" | cut -d' ' -f2)
	[ "$((miss1 - miss0))" -ge 1 ] ||
		die "check: B answered A's session without loading it from the database (sextant_session_cache_total miss $miss0 -> $miss1)"
	echo "session made on A, answered by B (B loaded it: cache misses $miss0 -> $miss1)"
	close_session "$URL_B" x-ab
	open_session "$URL_B" x-ba
	ask "$URL_A" "$SID" session "tools/call:$TOOL" x-ba-call-on-a
	ask "$URL_A" "$SID" session tools/list x-ba-list-on-a
	echo "session made on B, answered by A"
	close_session "$URL_A" x-ba

	# Through nginx: one session, requests on both replicas.
	open_session "$URL_N" x-n
	ups=""
	for i in 1 2 3 4 5 6; do
		req=tools/list
		[ $((i % 3)) = 0 ] && req=tools/call:$TOOL
		ask "$URL_N" "$SID" session "$req" "x-n-$i"
		ups="$ups $(replica_of "$(header "x-n-$i" X-Upstream)")"
	done
	case "$ups" in *A*B* | *B*A*) ;; *) die "check: nginx did not spread one session's requests over A and B: $ups" ;; esac
	echo "session through nginx (initialized on $INIT_ON), 6 requests answered by:$ups"
	close_session "$URL_N" x-n

	# Stateless on every front.
	for f in A:$URL_A B:$URL_B C:$URL_C nginx:$URL_N; do
		for req in $REQUESTS; do
			ask "${f#*:}" - stateless "$req" "x-stateless-${f%%:*}-$(slug "$req")"
		done
	done
	echo "stateless tools/list and tools/call answered by A, B, C and nginx"

	# C keeps its sessions in memory: A must not know them.
	open_session "$URL_C" x-c
	ask "$URL_C" "$SID" session tools/list x-c-list
	code=$(post "$URL_A" "$SID" "$SESSION_PROTO" "$(req_body tools/list 7 session)" x-c-list-on-a)
	[ "$code" = 404 ] ||
		die "check: A answered C's in-memory session with HTTP $code, expected 404: C's sessions reach the database"
	echo "session made on C (memory store) is unknown to A (404), as it must be"
	close_session "$URL_C" x-c
	echo "tools/list: $(echo "$TOOL_NAMES" | wc -w) tools, $(wc -c <"$CHK/x-ab-list-on-b.raw") bytes;" \
		"tools/call $TOOL: $(wc -c <"$CHK/x-ab-call-on-b.raw") bytes"
} >"$CHK/summary.txt"
sed 's/^/   /' "$CHK/summary.txt" >&2

# ---- the runs ------------------------------------------------------------------------

RESULTS=$OUT/results.tsv
printf 'round\ttopology\trequest\tpath\trps\tp50_us\tp99_us\trequests\terrors\tnotfound\tgw_us\tnginx_us\tpg_us\ta_share\tinit_on\tdb_loads\tstore_ops\tfile\n' >"$RESULTS"
FAILED=""

kv() { # KEY LINE
	echo " $2" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"
}

per_req() { # TICKS REQUESTS -> microseconds per request
	awk -v t="$1" -v n="$2" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0) }'
}

run_cell() { # ROUND TOPOLOGY REQUEST PATH SECONDS
	local round=$1 topo=$2 req=$3 path=$4 secs=$5
	local url gw sid=- proto=$STATELESS_PROTO tag f line rc
	case "$topo" in
	one) url=$URL_A gw="$PID_A" ;;
	two) url=$URL_N gw="$PID_A $PID_B" ;;
	mem) url=$URL_C gw="$PID_C" ;;
	esac
	tag=r$round
	[ "$round" = warmup ] && tag=warmup
	f=$OUT/wrk-$tag-$topo-$(slug "$req")-$path.txt
	local ma0 mb0 ma1 mb1 g0 g1 n0 n1 p0 p1
	# Before initialize: a replica that loads the session to answer
	# notifications/initialized counts as a load of this run.
	METRICS_ERR=""
	metrics "$PORT_A"
	ma0=$M
	metrics "$PORT_B"
	mb0=$M
	INIT_ON=-
	if [ "$path" = session ]; then
		open_session "$url" "$tag-$topo-$(slug "$req")"
		sid=$SID
		proto=$SESSION_PROTO
		if [ "$INIT_ON" = - ]; then
			INIT_ON=A
			[ "$topo" = mem ] && INIT_ON=C
		fi
	fi
	echo "# round=$round topology=$topo request=$req path=$path url=$url session=$sid protocol=$proto init_on=$INIT_ON" >"$f"
	# shellcheck disable=SC2086 # one pid per word
	g0=$(cpu_ticks $gw)
	# shellcheck disable=SC2046
	n0=$(cpu_ticks $(nginx_pids))
	p0=$(pg_ticks)
	timeout -k 5 $((secs + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${secs}s" \
		--timeout 5s --latency -s bench/wrk-mcp.lua "$url" -- "$req" "$sid" "$proto" \
		>>"$f" 2>&1 &
	WRK_PID=$!
	if wait "$WRK_PID"; then rc=0; else rc=$?; fi
	WRK_PID=""
	# shellcheck disable=SC2086
	g1=$(cpu_ticks $gw)
	# shellcheck disable=SC2046
	n1=$(cpu_ticks $(nginx_pids))
	p1=$(pg_ticks)
	metrics "$PORT_A"
	ma1=$M
	metrics "$PORT_B"
	mb1=$M
	[ "$path" = session ] && close_session "$url" "$tag-$topo-$(slug "$req")"
	if [ -n "$METRICS_ERR" ]; then
		FAILED="$FAILED
- round $round, $topo $req $path: $METRICS_ERR"
		note "round $round $topo $req $path: $METRICS_ERR"
	fi
	line=$(grep '^MCPBENCH requests=' "$f" || true)
	if [ "$rc" != 0 ] || [ -z "$line" ]; then
		FAILED="$FAILED
- round $round, $topo $req $path: wrk failed (exit $rc), see $f"
		note "round $round $topo $req $path: wrk failed (exit $rc)"
		return 0
	fi
	local n rps p50 p99 errs nf share loads ops
	n=$(kv requests "$line")
	rps=$(kv rps "$line")
	p50=$(kv p50_us "$line")
	p99=$(kv p99_us "$line")
	errs=$(kv errors "$line")
	nf=$(kv notfound "$line")
	# shellcheck disable=SC2086 # three numbers each
	set -- $ma0 $mb0 $ma1 $mb1
	# $1-$3: A before, $4-$6: B before, $7-$9: A after, $10-$12: B after
	share=-
	if [ "$topo" = two ]; then
		share=$(awk -v a=$(($7 - $1)) -v b=$((${10} - $4)) \
			'BEGIN { printf "%.1f", (a + b > 0 ? 100 * a / (a + b) : 0) }')
	fi
	loads=$(($8 - $2 + ${11} - $5))
	ops=$(($9 - $3 + ${12} - $6))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$round" "$topo" "$req" "$path" "$rps" "$p50" "$p99" "$n" "$errs" "$nf" \
		"$(per_req $((g1 - g0)) "$n")" "$(per_req $((n1 - n0)) "$n")" \
		"$(per_req $((p1 - p0)) "$n")" "$share" "$INIT_ON" "$loads" "$ops" "$f" >>"$RESULTS"
	if [ "$errs" != 0 ] || [ "$nf" != 0 ]; then
		local bad bad404
		bad=$(sed -n 's/^MCPBENCH first_bad_response: //p' "$f" | name_replicas)
		bad404=$(sed -n 's/^MCPBENCH first_404_response: //p' "$f" | name_replicas)
		[ "$bad404" = "$bad" ] && bad404=""
		FAILED="$FAILED
- round $round, $topo $req $path (session initialized on $INIT_ON): $errs errors, $nf of them 404 ($(echo "$line" | sed 's/.*non200=/non200=/; s/ errors=.*//')); first bad answer: $bad${bad404:+; first 404: $bad404}"
	fi
	note "round $round $topo $req $path: $rps req/s, p50 $p50 us, p99 $p99 us, errors $errs, 404 $nf"
	sleep 1
}

# The cells of a round: per request, each topology with both paths (the
# order of the two paths alternates from round to round), then the
# memory-store reference.
round() { # ROUND SECONDS
	local req topo first second
	first=session second=stateless
	if [ "$1" != warmup ] && [ $(($1 % 2)) = 0 ]; then first=stateless second=session; fi
	for req in $REQUESTS; do
		for topo in one two; do
			run_cell "$1" "$topo" "$req" "$first" "$2"
			run_cell "$1" "$topo" "$req" "$second" "$2"
		done
		run_cell "$1" mem "$req" session "$2"
	done
}

CELLS=10
note "$((CELLS * ROUNDS)) runs of ${DURATION} s after $CELLS warm-ups of ${WARMUP} s" \
	"(about $(((CELLS * (ROUNDS * (DURATION + 2) + WARMUP + 2)) / 60 + 1)) min)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START_TIME=$(date -u '+%Y-%m-%d %H:%M UTC')
[ "$WARMUP" -gt 0 ] && round warmup "$WARMUP"
for r in $(seq "$ROUNDS"); do round "$r" "$DURATION"; done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
for p in "${PIDS[@]}"; do
	alive "$p" || FAILED="$FAILED
- a process (pid $p) died during the benchmark"
done

# ---- report --------------------------------------------------------------------------

# Medians over the valid runs (no error, no 404) of rounds 1..N.
summary=$(awk -F'\t' '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR > 1 && $1 != "warmup" {
	k = $2 SUBSEP $3 SUBSEP $4
	total[k]++; err[k] += $9; nf[k] += $10
	if ($9 == 0 && $10 == 0) {
		n[k]++; rps[k] = rps[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7
		gw[k] = gw[k] " " $11; all[k] = all[k] " " ($11 + $12 + $13); pg[k] = pg[k] " " $13
		if ($14 != "-") share[k] = share[k] " " $14
		loads[k] += $16
		run[$1 SUBSEP k] = $5; rounds[$1] = 1
	}
}
END {
	split("one two mem", T, " "); split("tools/list tools/call:'"$TOOL"'", Q, " "); split("session stateless", P, " ")
	name["one"] = "one gateway (A)"; name["two"] = "two replicas, nginx"; name["mem"] = "one gateway, memory store (C)"
	for (q = 1; q <= 2; q++) for (t = 1; t <= 3; t++) for (p = 1; p <= 2; p++) {
		k = T[t] SUBSEP Q[q] SUBSEP P[p]
		if (!total[k]) continue
		req = Q[q]; sub(/:/, " ", req)
		if (!n[k]) {
			printf "R| %s | %s | %s | invalid | - | - | - | - | - | - | - | %d | %d | 0/%d |\n", name[T[t]], req, P[p], err[k], nf[k], total[k]
			continue
		}
		m = median(rps[k]); M[k] = m; G[k] = median(gw[k])
		printf "R| %s | %s | %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.1f | %s | %s | %d | %d | %d/%d |\n", name[T[t]], req, P[p], m,
			median(p50[k]) / 1000, median(p99[k]) / 1000, median(gw[k]), median(all[k]), median(pg[k]),
			(share[k] != "" ? sprintf("%.0f%%", median(share[k])) : "-"),
			(T[t] == "mem" || P[p] == "stateless" ? "-" : loads[k] ""), err[k], nf[k], n[k], total[k]
	}
	for (q = 1; q <= 2; q++) for (t = 1; t <= 2; t++) {
		req = Q[q]; sub(/:/, " ", req)
		s = T[t] SUBSEP Q[q] SUBSEP "session"; l = T[t] SUBSEP Q[q] SUBSEP "stateless"
		# paired: the two runs of one round ran back to back, so their
		# ratio shares the load of that moment; the verdict takes the
		# median of those ratios
		pr = ""; np = 0
		for (r in rounds)
			if ((r SUBSEP s) in run && (r SUBSEP l) in run && run[r SUBSEP s] > 0) {
				pr = pr " " run[r SUBSEP l] / run[r SUBSEP s]; np++
			}
		if (M[s] > 0 && M[l] > 0 && np > 0) {
			pm = median(pr)
			printf "V| %s | %s | %.0f | %.0f | %.2f | %.2f (%d) | %s | %s |\n", name[T[t]], req, M[l], M[s], M[l] / M[s],
				pm, np, (pm >= 0.9 ? "PASS" : "FAIL"), (G[s] > 0 ? sprintf("%.2f", G[l] / G[s]) : "-")
		} else
			printf "V| %s | %s | - | - | - | - | no valid runs | - |\n", name[T[t]], req
	}
	for (q = 1; q <= 2; q++) {
		req = Q[q]; sub(/:/, " ", req)
		s = "one" SUBSEP Q[q] SUBSEP "session"; c = "mem" SUBSEP Q[q] SUBSEP "session"
		if (M[s] > 0 && M[c] > 0)
			printf "M| %s | %.0f | %.0f | %.2f |\n", req, M[s], M[c], M[s] / M[c]
	}
}' "$RESULTS")

every_run=$(awk -F'\t' 'NR > 1 {
	req = $3; sub(/:/, " ", req)
	printf "| %s | %s | %s | %s | %.0f | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, req, $4, $5,
		$6 / 1000, $7 / 1000, $11, $12, $13, ($14 == "-" ? "-" : $14 "%"), $15, ($4 == "session" ? $16 : "-"), $17, $9, $10
}' "$RESULTS")

{
	echo "## Stateless 2026-07-28 and 2025 sessions, one gateway and two replicas sharing sessions"
	echo
	echo "$START_TIME, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' + uncommitted changes')," \
		"$(nproc) CPUs shared by wrk, nginx, the gateways and PostgreSQL, loopback;" \
		"load average before: $LOAD_START, after: $LOAD_END."
	echo "wrk $({ wrk -v 2>&1 || true; } | sed -n '1s/^wrk \([^ ]*\).*/\1/p'): $CONNECTIONS keep-alive connections, $THREADS threads," \
		"${DURATION} s per run, $ROUNDS interleaved rounds after ${WARMUP} s of warm-up per cell;" \
		"every request its own JSON-RPC id; a fresh session per session run (initialize through the same front, DELETE after)."
	echo "Gateways: $SEXTANT serve --config $CONFIG, [server] threads = $SERVER_THREADS, one state_key_file;" \
		"A and B: sessions.store = database, C: memory; all on one throwaway PostgreSQL" \
		"($(psql --version 2>/dev/null | sed 's/^psql (PostgreSQL) //'), fsync off)." \
		"nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'): $NGINX_WORKERS workers, round-robin per request over A and B, keep-alive upstreams."
	echo
	echo "Checks before the runs:"
	sed 's/^/- /' "$CHK/summary.txt"
	echo
	echo "| topology | request | path | req/s | p50 ms | p99 ms | gateway CPU/req | all CPU/req | PG CPU/req | on A | DB loads | errors | 404 | valid runs |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	echo "$summary" | sed -n 's/^R|/|/p'
	echo
	echo "Stateless / session req/s (target: >= 0.90, judged on the paired ratio: the median over the rounds of stateless / session req/s" \
		"of the same round, whose two runs ran back to back (in brackets: how many rounds had both runs valid);" \
		"the ratio of the medians is beside it; the last column, for reading it: what a stateless request costs the gateways in CPU against a session request):"
	echo
	echo "| topology | request | stateless req/s | session req/s | ratio of medians | paired ratio | verdict | gateway CPU/req, stateless / session |"
	echo "|---|---|---:|---:|---:|---:|---|---:|"
	echo "$summary" | sed -n 's/^V|/|/p'
	echo
	echo "What the shared store costs the session path (one gateway, same requests):"
	echo
	echo "| request | session, database store (A) req/s | session, memory store (C) req/s | database / memory |"
	echo "|---|---:|---:|---:|"
	echo "$summary" | sed -n 's/^M|/|/p'
	echo
	echo "Medians over the valid runs of rounds 1-$ROUNDS.  CPU/req: user + system CPU time during the run" \
		"(/proc/PID/stat) / requests answered, in microseconds; gateway = the gateways the topology uses;" \
		"all = gateways + nginx + PostgreSQL.  on A: share of the POSTs that A answered (the rest: B)." \
		"DB loads: sessions loaded from the database by a replica that did not hold them," \
		"summed over the runs (one per run is expected behind round-robin: the replica that did not answer initialize)." \
		"errors: non-200, answers without a result, socket errors; 404: the non-200s that were \"session not found\"."
	echo
	echo "### Every run"
	echo
	echo "| round | topology | request | path | req/s | p50 ms | p99 ms | gw us/req | nginx us/req | PG us/req | on A | init on | DB loads | store ops | errors | 404 |"
	echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"
	echo "$every_run"
	echo
	echo "store ops: session-store operations of A and B during the run other than the janitor's (heartbeat, touch, sweep)."
	echo
	if [ -n "$FAILED" ]; then
		echo "### Failures (runs with errors are left out of the medians)"
		echo "$FAILED"
	else
		echo "All runs valid: no non-200 answer, no 404, no answer without a result, no socket error."
	fi
	echo
	echo "Raw output: $OUT/ (wrk-<round>-<topology>-<request>-<path>.txt, results.tsv, check/, logs)."
} >"$OUT/report.md"
cat "$OUT/report.md"
[ -z "$FAILED" ] || exit 1

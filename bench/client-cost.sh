#!/usr/bin/env bash
# client-cost.sh - what the two HTTP clients of bench/query.sh cost a call
# with no gateway behind them: nginx (bench/peers/nginx.conf.in) answers
# every POST /mcp/query_traces with one static body the size of a
# query_traces answer (39.5 KB), and bench/client-cost.mjs times node:http
# and the plain client in turn, as query-run.mjs times a tool call.  See
# bench/README.md.
#
# Run from anywhere as `sh bench/client-cost.sh [RUNS]` (re-executes itself
# under bash); RUNS (3) runs of 300 rounds, 2 ms between calls.  Knobs
# (env): BENCH_NGINX (/usr/sbin/nginx).  Output: a Markdown table on
# stdout; the runs' JSON in bench/out/client-cost/.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=bench/out/client-cost
NGINX=${BENCH_NGINX:-/usr/sbin/nginx}
RUNS=${1:-3}
die() {
	echo "client-cost.sh: $*" >&2
	exit 1
}
[[ "$RUNS" =~ ^[1-9][0-9]?$ ]] || die "RUNS: a number of runs from 1 to 99, got \"$RUNS\""
for t in "$NGINX" python3 curl; do
	command -v "$t" >/dev/null 2>&1 || die "$t not found (apt-get install nginx python3 curl)"
done
NODE=$(sh scripts/node.sh) || die "no Node 24 (scripts/node.sh)"

rm -rf "$OUT"
mkdir -p "$OUT/nginx/www/mcp" "$OUT/nginx/tmp"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NODE" bench/client-cost.mjs --body "$OUT/nginx/www/mcp/query_traces"
# bench/protocol.sh's nginx: POST answered with a static file
user=""
[ "$(id -u)" = 0 ] && user="user root;"
sed -e "s|@PREFIX@|$ROOT/$OUT/nginx|g" -e "s|@PORT@|$PORT|g" -e "s|@USER@|$user|g" \
	bench/peers/nginx.conf.in >"$OUT/nginx/nginx.conf"
"$NGINX" -p "$ROOT/$OUT/nginx/" -c "$ROOT/$OUT/nginx/nginx.conf" -e "$ROOT/$OUT/nginx/error.log" >"$OUT/nginx.log" 2>&1 &
NGINX_PID=$!
trap 'kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	curl -sf -X POST -d '{}' "http://127.0.0.1:$PORT/mcp/query_traces" -o /dev/null && break
	kill -0 "$NGINX_PID" 2>/dev/null || die "nginx exited (log: $OUT/nginx.log, $OUT/nginx/error.log)"
	sleep 0.1
done
curl -sf -X POST -d '{}' "http://127.0.0.1:$PORT/mcp/query_traces" -o /dev/null || die "nginx does not answer on port $PORT"

for r in $(seq "$RUNS"); do
	"$NODE" bench/client-cost.mjs --url "http://127.0.0.1:$PORT/mcp/query_traces" --rounds 300 --pause-ms 2 >"$OUT/run-$r.json"
done
echo "# HTTP client cost: node:http against a plain client, nginx answering $(stat -c %s "$OUT/nginx/www/mcp/query_traces") bytes"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $RUNS runs x 300 rounds, the clients alternating first, 2 ms between calls."
echo
echo '| run | node:http p50 / p95 ms | plain p50 / p95 ms | node:http - plain, p50 of the per-round differences |'
echo '|---|---|---|---:|'
for r in $(seq "$RUNS"); do
	"$NODE" -e '
const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const c = j.clients;
console.log(`| ${process.argv[2]} | ${c["node:http"].p50} / ${c["node:http"].p95} | ${c.plain.p50} / ${c.plain.p95} | ${j.diff_p50} |`);
' "$OUT/run-$r.json" "$r"
done

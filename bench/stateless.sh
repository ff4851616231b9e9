#!/usr/bin/env bash
# stateless.sh - what serving MCP 2026-07-28 statelessly costs: the same
# requests (tools/list, and tools/call of a fixture tool) on the 2025
# session path (initialize once, Mcp-Session-Id on every request) and on
# the 2026-07-28 stateless path (no session; _meta and the Mcp-Method /
# Mcp-Name headers on every request), interleaved in one run, on one
# gateway and on two replicas behind nginx round-robin.  See
# bench/README.md.  Target (issue 7): the stateless path costs no more than
# 10% against the session path (req/s at least 0.9x).
#
# Run from anywhere as `sh bench/stateless.sh`.  Knobs (env):
#   BENCH_ROUNDS 3, BENCH_DURATION 8 (s per wrk run), BENCH_CONNECTIONS 32,
#   BENCH_THREADS 2, BENCH_SEXTANT build/sextant, BENCH_CONFIG
#   test/conformance.toml (its fixture tools are what is called).
# Output: a Markdown report on stdout and in bench/out/stateless/report.md,
# raw wrk output in bench/out/stateless/.  Exit 1 when a run had errors.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=bench/out/stateless
SEXTANT=${BENCH_SEXTANT:-build/sextant}
CONFIG=${BENCH_CONFIG:-test/conformance.toml}
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-8}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
NGINX=${BENCH_NGINX:-/usr/sbin/nginx}
TOOL=test_simple_text

for t in wrk curl "$NGINX" "$SEXTANT"; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "stateless.sh: $t not found (make; apt-get install wrk nginx curl)" >&2
		exit 2
	}
done
rm -rf "$OUT"
mkdir -p "$OUT/nginx/logs" "$OUT/nginx/tmp"

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -f "$OUT/nginx/nginx.pid" ] && kill "$(cat "$OUT/nginx/nginx.pid")" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT

start_gateway() { # NAME -> sets PORT
	PORT=$(free_port)
	SEXTANT_LISTEN=127.0.0.1:$PORT "$SEXTANT" serve --config "$CONFIG" \
		>"$OUT/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0
		sleep 0.1
	done
	echo "stateless.sh: $1 did not start; see $OUT/$1.log" >&2
	exit 1
}

start_gateway a
A=$PORT
start_gateway b
B=$PORT
N=$(free_port)
cat >"$OUT/nginx/nginx.conf" <<EOF
worker_processes 2;
pid $PWD/$OUT/nginx/nginx.pid;
error_log $PWD/$OUT/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $PWD/$OUT/nginx/tmp;
	proxy_temp_path $PWD/$OUT/nginx/tmp;
	upstream replicas { server 127.0.0.1:$A; server 127.0.0.1:$B; keepalive 128; }
	server {
		listen 127.0.0.1:$N;
		location / {
			proxy_pass http://replicas;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$http_host;
			proxy_buffering off;
		}
	}
}
EOF
"$NGINX" -p "$PWD/$OUT/nginx" -c "$PWD/$OUT/nginx/nginx.conf"
for _ in $(seq 50); do
	curl -sf "http://127.0.0.1:$N/healthz" >/dev/null && break
	sleep 0.1
done

# open_session URL: initialize + notifications/initialized; prints the id
open_session() {
	local sid
	sid=$(curl -s -D - -o /dev/null -X POST "$1" \
		-H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		-d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' |
		tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
	curl -s -o /dev/null -X POST "$1" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' \
		-d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	echo "$sid"
}

RESULTS=$OUT/results.tsv
printf 'round\tsetup\trequest\tpath\trps\tp50_us\tp99_us\terrors\n' >"$RESULTS"
FAILED=0
run() { # ROUND SETUP URL REQUEST PATH
	local sid=- proto=2026-07-28 f line
	if [ "$5" = session ]; then
		sid=$(open_session "$3")
		proto=2025-11-25
	fi
	f=$OUT/wrk-r$1-$2-${4//[\/:]/_}-$5.txt
	wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency \
		-s bench/wrk-mcp.lua "$3" -- "$4" "$sid" "$proto" >"$f" 2>&1 || true
	line=$(grep '^MCPBENCH requests' "$f" || echo "")
	if [ -z "$line" ]; then
		echo "stateless.sh: wrk failed, see $f" >&2
		FAILED=1
		return
	fi
	local rps p50 p99 err
	rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$line")
	p50=$(sed -n 's/.* p50_us=\([0-9]*\).*/\1/p' <<<"$line")
	p99=$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$line")
	err=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$line")
	[ "$err" = 0 ] || FAILED=1
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$4" "$5" "$rps" "$p50" "$p99" "$err" >>"$RESULTS"
}

SETUPS="one:http://127.0.0.1:$A/mcp two:http://127.0.0.1:$N/mcp"
REQUESTS="tools/list tools/call:$TOOL"
for r in $(seq "$ROUNDS"); do
	for s in $SETUPS; do
		for q in $REQUESTS; do
			for p in session stateless; do
				# sessions live on one replica until they are shared
				# (issue 7): behind round-robin they would 404
				[ "${s%%:*}" = two ] && [ "$p" = session ] && continue
				run "$r" "${s%%:*}" "${s#*:}" "$q" "$p"
			done
		done
	done
done

# medians over the rounds, and the stateless / session ratio
report() {
	awk -F'\t' -v rounds="$ROUNDS" '
	NR > 1 { k = $2 "\t" $3 "\t" $4; rps[k] = rps[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7; err[k] += $8; keys[k] = 1 }
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		for (k in keys) {
			split(k, f, "\t")
			printf "R| %s | %s | %s | %.0f | %.2f | %.2f | %d |\n", (f[1] == "one" ? "one gateway" : "two replicas, nginx"), f[2], f[3], median(rps[k]), median(p50[k]) / 1000, median(p99[k]) / 1000, err[k]
			m[k] = median(rps[k])
		}
		print ""
		for (k in keys) {
			split(k, f, "\t")
			if (f[1] == "one" && f[3] == "stateless") {
				s = "one\t" f[2] "\tsession"
				if (s in m && m[s] > 0)
					printf "S- %s, one gateway: stateless / session = %.2f (target >= 0.90: %s)\n", f[2], m[k] / m[s], (m[k] / m[s] >= 0.9 ? "met" : "NOT met")
			}
		}
		print "T- two replicas: the session path is not measured (sessions are not shared between replicas yet)"
	}' "$RESULTS" >"$OUT/summary.txt"
	echo "| setup | request | path | req/s (median) | p50 ms | p99 ms | errors |"
	echo "|---|---|---|---:|---:|---:|---:|"
	sed -n 's/^R//p' "$OUT/summary.txt" | sort
	echo
	sed -n 's/^[ST]//p' "$OUT/summary.txt" | sort
}
{
	echo "# stateless.sh: $ROUNDS rounds x ${DURATION}s, $CONNECTIONS connections, $THREADS wrk threads, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	report
} | tee "$OUT/report.md"
exit "$FAILED"

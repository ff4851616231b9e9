#!/bin/sh
# rest.sh - the REST facade against MCP tools/call for the same tool and
# arguments, interleaved in one run on one gateway over the demo data:
#   GET /api/v1/services            vs tools/call list_services {}
#   GET /api/v1/traces/{trace_id}   vs tools/call get_trace {trace_id}
# Each run starts once the calls of the one before have ended, and the
# order of the two faces alternates between rounds.
# MCP requests are stateless 2026-07-28 tools/call (one POST each, the
# per-request _meta): the same request-scoped session and worker pool the
# facade uses.  Target (issue 21): REST req/s >= 0.95 x MCP's and a p99 no
# higher.  See bench/README.md.
#
# Run from anywhere as `sh bench/rest.sh` (POSIX sh).  Knobs (env):
#   BENCH_SPANS        demo spans loaded               200000
#   BENCH_ROUNDS       interleaved rounds              3
#   BENCH_DURATION     seconds per wrk run             8
#   BENCH_CONNECTIONS  wrk keep-alive connections      32
#   BENCH_THREADS      wrk threads                     2
#   BENCH_WARMUP       seconds of unrecorded warm-up per cell  2
#   BENCH_SEXTANT      Sextant binary                  build/sextant
# Output: a Markdown table on stdout (also bench/out/rest/rest.md), raw wrk
# outputs in bench/out/rest/wrk-*.txt.  Exit 1 if any run had errors.
set -eu

cd "$(dirname "$0")/.."
BENCH=rest.sh
OUT=bench/out/rest
SPANS=${BENCH_SPANS:-200000}
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-8}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
WARMUP=${BENCH_WARMUP:-2}
for t in wrk curl jq; do
	command -v "$t" >/dev/null || { echo "$BENCH: $t is missing" >&2; exit 1; }
done
. bench/demo-gateway.sh
URL=http://127.0.0.1:$PORT

TRACE=$(curl -s --max-time 60 -X POST -H 'Content-Type: application/json' \
	-d '{"time_range":"1d","max_traces":1}' "$URL/api/v1/tools/query_traces" |
	jq -r '.data.traces[0].trace_id')
case "$TRACE" in
[0-9a-f]*) ;;
*) echo "$BENCH: no trace id from query_traces" >&2; exit 1 ;;
esac

# cell: name tool args rest_path
CELLS="services|list_services|{}|/api/v1/services
trace|get_trace|{\"trace_id\":\"$TRACE\"}|/api/v1/traces/$TRACE"

# run_wrk FILE METHOD PROTOCOL ARGS [SECONDS]: one wrk run, its MCPBENCH
# line kept
run_wrk() {
	timeout -k 5 $((${5:-$DURATION} + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" \
		-d"${5:-$DURATION}s" --latency -s bench/wrk-mcp.lua "$URL/mcp" -- \
		"$2" - "$3" "$4" >"$1" 2>&1 || echo "MCPBENCH wrk-failed errors=1" >>"$1"
}

# The gateway's CPU time (user + system, all threads) in clock ticks: per
# request it is each face's own cost, whatever else the machine runs (the
# store's work is PostgreSQL's, the same for both faces).  Fields 14 and 15
# of /proc/PID/stat, counted after the ")" that ends the command name.
gw_ticks() {
	sed 's/.*) //' "/proc/$SEXTANT_PID/stat" | awk '{ print $12 + $13 }'
}
CLK_TCK=$(getconf CLK_TCK)

# Waits (10 s at most) until no call is running or queued: the calls a
# run left in flight when wrk stopped (list_services takes ~0.4 s each) would
# otherwise slow the start of the next run.
settle() {
	i=0
	while [ "$i" -lt 100 ]; do
		busy=$(curl -s --max-time 2 "$URL/metrics" |
			awk '/^sextant_workers_busy / || /^sextant_worker_queue_depth / {s += $2} END {print s + 0}')
		[ "$busy" = 0 ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
}

: >"$OUT/results.tsv"
if [ "$WARMUP" -gt 0 ]; then
	echo "$CELLS" | while IFS='|' read -r name tool args path; do
		echo "== warm-up $name" >&2
		run_wrk "$OUT/warmup.txt" "GET:$path" 2025-11-25 "{}" "$WARMUP"
		settle
		run_wrk "$OUT/warmup.txt" "tools/call:$tool" 2026-07-28 "$args" "$WARMUP"
	done
fi
r=1
while [ "$r" -le "$ROUNDS" ]; do
	echo "$CELLS" | while IFS='|' read -r name tool args path; do
		# the order alternates between rounds
		faces="rest mcp"
		[ $((r % 2)) -eq 0 ] && faces="mcp rest"
		for face in $faces; do
			f=$OUT/wrk-r$r-$name-$face.txt
			settle
			echo "== round $r $name $face" >&2
			t0=$(gw_ticks)
			if [ "$face" = rest ]; then
				run_wrk "$f" "GET:$path" 2025-11-25 "{}"
			else
				run_wrk "$f" "tools/call:$tool" 2026-07-28 "$args"
			fi
			settle
			t1=$(gw_ticks)
			sed -n 's/^MCPBENCH requests=\([0-9]*\) .*rps=\([0-9.]*\) .*p99_us=\([0-9]*\) .*errors=\([0-9]*\)$/\1 \2 \3 \4/p' "$f" |
				awk -v n="$name" -v fc="$face" -v r="$r" -v t=$((t1 - t0)) -v hz="$CLK_TCK" \
					'{printf "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", n, fc, r, $2, $3, $4, ($1 > 0 ? t * 1e6 / hz / $1 : 0)}' >>"$OUT/results.tsv"
			grep -q '^MCPBENCH requests=' "$f" || printf '%s\t%s\t%s\t0\t0\t1\t0\n' "$name" "$face" "$r" >>"$OUT/results.tsv"
		done
	done
	r=$((r + 1))
done

# medians of the rounds per cell; the ratio REST / MCP per request
{
	echo "| request | face | req/s | p99 ms | gateway CPU us/req | errors |"
	echo "|---|---|---:|---:|---:|---:|"
	for name in services trace; do
		for face in rest mcp; do
			awk -F'\t' -v n="$name" -v f="$face" '$1 == n && $2 == f' "$OUT/results.tsv" >"$OUT/cell.tsv"
			rps=$(cut -f4 "$OUT/cell.tsv" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
			p99=$(cut -f5 "$OUT/cell.tsv" | sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]/1000}')
			err=$(cut -f6 "$OUT/cell.tsv" | awk '{s+=$1} END {print s}')
			cpu=$(cut -f7 "$OUT/cell.tsv" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
			echo "| $name | $face | $rps | $p99 | $cpu | $err |"
			echo "$name $face $rps $p99 $err $cpu" >>"$OUT/medians.txt"
		done
	done
	echo
	awk '{rps[$1 " " $2] = $3; p99[$1 " " $2] = $4; cpu[$1 " " $2] = $6}
	END {
		for (c in rps) { split(c, part, " "); if (part[2] == "rest") names[part[1]] = 1 }
		for (nm in names)
			printf "- %s: REST / MCP req/s %.2f (target >= 0.95), p99 %s ms against %s ms; gateway CPU per request REST / MCP %.2f\n",
				nm, rps[nm " rest"] / rps[nm " mcp"], p99[nm " rest"], p99[nm " mcp"],
				(cpu[nm " mcp"] > 0 ? cpu[nm " rest"] / cpu[nm " mcp"] : 0)
	}' "$OUT/medians.txt"
	echo
	echo "$(nproc) CPUs shared by wrk and the gateway, loopback; $SPANS demo spans;" \
		"$CONNECTIONS keep-alive connections, $THREADS wrk threads, $ROUNDS rounds of ${DURATION} s, medians."
} >"$OUT/rest.md"
rm -f "$OUT/cell.tsv" "$OUT/warmup.txt"
cat "$OUT/rest.md"
rm -f "$OUT/medians.txt"
! awk -F'\t' '$6 > 0 {bad = 1} END {exit !bad}' "$OUT/results.tsv"

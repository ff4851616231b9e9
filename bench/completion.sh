#!/bin/sh
# completion.sh - completion/complete latency (issue 19: under 5 ms p99):
# the demo dataset (`sextant demo-data`) and 120 more services in a
# throwaway PostgreSQL, one gateway, then N completions over every kind of
# value (bench/completion.mjs, the official SDK client, one request at a
# time) with a ping after each as the floor of a request in the same run.
# Prints a Markdown table (also bench/out/completion/results.md).
#
#   sh bench/completion.sh [--spans N] [--requests N]   (200000, 2000)
#
# Knobs (env): BENCH_SEXTANT (binary, build/sextant); SEXTANT_* reach the
# gateway.  No config file: the built-in defaults.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
SPANS=200000
REQUESTS=2000
while [ $# -gt 0 ]; do
	case $1 in
	--spans) SPANS=$2; shift 2 ;;
	--requests) REQUESTS=$2; shift 2 ;;
	*) echo "completion.sh: unknown option $1 (--spans N, --requests N)" >&2; exit 2 ;;
	esac
done
OUT=bench/out/completion
BENCH=completion.sh
. bench/demo-gateway.sh
echo "== measuring" >&2
timeout 600 "$NODE" bench/completion.mjs --mcp "http://127.0.0.1:$PORT/mcp" \
	--base "http://127.0.0.1:$PORT" --requests "$REQUESTS" | tee "$OUT/results.md"

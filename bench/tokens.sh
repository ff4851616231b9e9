#!/bin/sh
# tokens.sh - what Sextant costs a model in tokens (issue 19): the tool
# definitions of the default tool set and the typical answers of the heavy
# tools, counted with o200k_base (js-tiktoken, pinned in
# test/integration/package.json), on the demo dataset (`sextant demo-data`)
# in a throwaway PostgreSQL, beside mcp-grafana's published ~15.5k tokens of
# definitions.  Prints a Markdown report (also bench/out/tokens/results.md).
#
#   sh bench/tokens.sh [--spans N]        (default 200000)
#
# Knobs (env): BENCH_SEXTANT (binary, build/sextant); SEXTANT_* reach the
# gateway.  No config file: the built-in defaults, as `make run` without
# sextant.toml.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
SPANS=200000
while [ $# -gt 0 ]; do
	case $1 in
	--spans) SPANS=$2; shift 2 ;;
	*) echo "tokens.sh: unknown option $1 (--spans N)" >&2; exit 2 ;;
	esac
done
OUT=bench/out/tokens
BENCH=tokens.sh
. bench/demo-gateway.sh
echo "== measuring" >&2
timeout 300 "$NODE" bench/tokens.mjs --mcp "http://127.0.0.1:$PORT/mcp" --spans "$SPANS" | tee "$OUT/results.md"

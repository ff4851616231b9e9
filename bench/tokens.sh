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
SEXTANT=${BENCH_SEXTANT:-build/sextant}
[ -x "$SEXTANT" ] || { echo "tokens.sh: $SEXTANT is missing: run make all" >&2; exit 1; }
NODE=$(sh scripts/node.sh)
OUT=bench/out/tokens
PGDIR=$OUT/pg
mkdir -p "$OUT"
SEXTANT_PID=
cleanup() {
	[ -n "$SEXTANT_PID" ] && kill "$SEXTANT_PID" 2>/dev/null && wait "$SEXTANT_PID" 2>/dev/null
	timeout 60 sh scripts/pg.sh stop "$PGDIR" >/dev/null 2>&1 || true
	rm -rf "$PGDIR"
}
trap cleanup EXIT INT TERM

echo "== a throwaway PostgreSQL in $PGDIR" >&2
rm -rf "$PGDIR"
PG_URL=$(SEXTANT_PG_THROWAWAY=1 timeout 120 sh scripts/pg.sh start "$PGDIR" | tail -n 1)
echo "== sextant demo-data --spans $SPANS" >&2
DATABASE_URL=$PG_URL timeout 1800 "$SEXTANT" demo-data --spans "$SPANS" >"$OUT/demo-data.log" 2>&1 ||
	{ tail -n 5 "$OUT/demo-data.log" >&2; exit 1; }

PORT=$("$NODE" -e "const s=require('net').createServer();
s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
DATABASE_URL=$PG_URL SEXTANT_LISTEN=127.0.0.1:$PORT "$SEXTANT" serve >"$OUT/sextant.log" 2>&1 &
SEXTANT_PID=$!
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$PORT/readyz")" = 200 ]; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { tail -n 20 "$OUT/sextant.log" >&2; echo "tokens.sh: sextant not ready" >&2; exit 1; }
	sleep 0.1
done
echo "== measuring" >&2
timeout 300 "$NODE" bench/tokens.mjs --mcp "http://127.0.0.1:$PORT/mcp" --spans "$SPANS" | tee "$OUT/results.md"

# demo-gateway.sh - sourced by the benchmarks that measure one gateway on
# the demo dataset (tokens.sh, completion.sh): a throwaway PostgreSQL in
# $OUT/pg, `sextant demo-data --spans $SPANS`, then `sextant serve` on a free
# loopback port, ready (/readyz 200); stopped and removed on exit.
# The caller sets BENCH (its name, for messages), OUT and SPANS; this sets
# NODE, PG_URL, PORT and SEXTANT_PID.  POSIX sh, after `set -eu` and a cd
# to the repository root.
SEXTANT=${BENCH_SEXTANT:-build/sextant}
[ -x "$SEXTANT" ] || { echo "$BENCH: $SEXTANT is missing: run make all" >&2; exit 1; }
NODE=$(sh scripts/node.sh)
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
	[ "$i" -lt 300 ] || { tail -n 20 "$OUT/sextant.log" >&2; echo "$BENCH: sextant not ready" >&2; exit 1; }
	sleep 0.1
done

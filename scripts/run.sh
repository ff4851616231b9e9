#!/bin/sh
# run.sh - what `make run` does after building: unless DATABASE_URL is set,
# start a private PostgreSQL under ./var/pg (scripts/pg.sh), apply the
# migrations when the binary has `migrate`, then serve on 127.0.0.1:8080
# (SEXTANT_LISTEN to change it) with ./sextant.toml when present, and print
# how to connect.  Ctrl-C (or SIGTERM) stops the gateway, then the private
# database; the next run reuses its data.
#
# Environment: DATABASE_URL (use that database as is), SEXTANT_LISTEN,
# SEXTANT_DEMO_SPANS (demo spans loaded into an empty private store,
# default 200000, 0 = none),
# SEXTANT_PG_DIR (the private cluster, default var/pg, relative to the
# repository), SEXTANT_BIN (the binary, default build/sextant).
set -eu
cd "$(dirname "$0")/.."
set --
[ -f sextant.toml ] && set -- --config sextant.toml
bin=${SEXTANT_BIN:-build/sextant}
listen=${SEXTANT_LISTEN:-127.0.0.1:8080}
pgdir=${SEXTANT_PG_DIR:-var/pg}

# As root, PostgreSQL runs as another user, who must be able to enter the
# repository; a clone in /root (mode 700) is out of its reach, so the
# private cluster of that clone lives under /var/lib/sextant instead.
if [ -z "${SEXTANT_PG_DIR:-}" ] && [ "$(id -u)" -eq 0 ]; then
	d=$(pwd -P)
	while [ -n "$d" ] && [ -n "$(find "$d" -maxdepth 0 -perm -o+x)" ]; do
		d=${d%/*}
	done
	if [ -n "$d" ]; then
		pgdir=/var/lib/sextant/$(pwd -P | cksum | cut -d' ' -f1)/pg
		echo "run.sh: PostgreSQL cannot run from here ($d is private to root): the private cluster is in $pgdir" >&2
	fi
fi

[ -x "$bin" ] || {
	echo "run.sh: $bin is missing: build it with make" >&2
	exit 1
}

gateway= # pid of the running gateway
own_pg=0 # 1 while the private cluster may be running
rc=0

# Stops the gateway (SIGTERM: it drains) and then the private database;
# safe to call twice.  rc becomes the gateway's exit status.
stop_all() {
	if [ -n "$gateway" ]; then
		kill -TERM "$gateway" 2>/dev/null || true
		rc=0
		wait "$gateway" || rc=$?
		gateway=
	fi
	if [ "$own_pg" = 1 ]; then
		own_pg=0
		sh scripts/pg.sh stop "$pgdir" || rc=1
	fi
}

# A terminal's Ctrl-C reaches the gateway too; the second signal is harmless
# (it is already draining).  Further signals are ignored so the database
# is always stopped cleanly.
# shellcheck disable=SC2317 # invoked by the traps below
on_signal() {
	trap '' INT TERM
	rc=$1
	[ -n "$gateway" ] && rc=0
	stop_all
	exit "$rc"
}
trap stop_all EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

if [ -z "${DATABASE_URL:-}" ]; then
	own_pg=1
	out=$(sh scripts/pg.sh start "$pgdir") || {
		echo "run.sh: could not start the private PostgreSQL in $pgdir (set DATABASE_URL to use another database)" >&2
		exit 1
	}
	DATABASE_URL=$(printf '%s\n' "$out" | tail -n 1)
	export DATABASE_URL
	database="$DATABASE_URL
                (private cluster in $pgdir, log $pgdir/postgres.log)"
	stops="the gateway and the private database"
else
	# Never printed: it may hold a password.
	database="DATABASE_URL from the environment"
	stops="the gateway"
fi

if "$bin" --help 2>/dev/null | grep -Eq '^[[:space:]]+migrate([[:space:]]|$)'; then
	"$bin" migrate "$@" || {
		echo "run.sh: sextant migrate failed" >&2
		exit 1
	}
fi

# A private store that is still empty gets the demo dataset, so that the
# tools have something to answer from (SEXTANT_DEMO_SPANS=0 skips it; a
# database given in DATABASE_URL is never touched).
demo_spans=${SEXTANT_DEMO_SPANS:-200000}
if [ "$own_pg" = 1 ] && [ "$demo_spans" != 0 ] && command -v psql >/dev/null 2>&1 &&
	[ "$(psql -X -w -At -d "$DATABASE_URL" -c 'SELECT NOT EXISTS (SELECT 1 FROM spans)' 2>/dev/null)" = t ]; then
	echo "run.sh: the store is empty: loading $demo_spans demo spans (sextant demo-data)" >&2
	"$bin" demo-data --spans "$demo_spans" "$@" || {
		echo "run.sh: sextant demo-data failed" >&2
		exit 1
	}
fi

# The revisions from the binary's own table (sextant --version), oldest first.
revisions=$("$bin" --version 2>/dev/null | sed -n 's/^MCP revisions: //p')
served="Streamable HTTP"
[ -n "$revisions" ] && served="$served, revisions ${revisions%% *} .. ${revisions##* }"

cat <<EOM
Sextant is starting on http://$listen/mcp

  MCP endpoint  http://$listen/mcp   ($served)
  OTLP/HTTP     http://$listen/v1/traces   http://$listen/v1/metrics
  health        http://$listen/healthz   metrics  http://$listen/metrics
  database      $database

Try it:
  curl -si http://$listen/mcp -H 'Content-Type: application/json' \\
    -H 'Accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'

Ctrl-C stops $stops.

EOM
# In the background so that a signal to this script (not only a terminal's
# Ctrl-C to the whole group) reaches the trap at once and is forwarded.
SEXTANT_LISTEN=$listen "$bin" serve "$@" </dev/null &
gateway=$!
wait "$gateway" || rc=$?
gateway=
stop_all
exit "$rc"

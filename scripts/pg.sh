#!/bin/sh
# pg.sh start|stop|status DIR - a private PostgreSQL cluster for `make run`
# and the integration tests: DIR/data (initdb on first start), a Unix socket
# in DIR/sock and a free loopback port, log in DIR/postgres.log.  `start`
# prints the connection string as the last line of stdout and writes it to
# DIR/url; everything else goes to stderr.
#
# As root the server runs as the `postgres` user (created as `sextant-pg`
# when there is none), never as root.  Authentication: trust on the Unix
# socket, whose directory only the server's user (and root) can enter;
# scram-sha-256 on 127.0.0.1 with the generated password in DIR/password,
# because any local user can reach a loopback port.
#
# Environment: SEXTANT_PG_THROWAWAY=1 turns fsync and full_page_writes off
# for clusters that tests delete.
#
# Exit status: 0 ok (status: running), 1 failure, 2 usage, 3 (status) the
# cluster is stopped, 4 (status) DIR holds no cluster.
set -eu

DBNAME=sextant
SUPERUSER=postgres
# Ports tried for the loopback listener: below Linux's ephemeral range
# (32768-60999), so outgoing connections rarely hold them, and clear of 5432.
PORT_MIN=20000
PORT_SPAN=12768
PORT_TRIES=10
# A Unix socket path is at most 107 bytes (sun_path); the file inside the
# directory is ".s.PGSQL.<port>", 15 bytes with the slash.
SOCKDIR_MAX=92
START_TIMEOUT_S=60
# Longest wait for the processes of a killed server to go away.
EXIT_WAIT_S=30
STOP_TIMEOUT_S=60

me=pg.sh
die() {
	echo "$me: $*" >&2
	exit 1
}
note() { echo "$me: $*" >&2; }
usage() {
	echo "usage: pg.sh start|stop|status DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
case "$cmd" in start | stop | status) ;; *) usage ;; esac
[ -n "$2" ] || usage

# Connection settings a developer may have exported would redirect the
# client calls below to another server.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGOPTIONS PGSERVICE PGDATA \
	PGSSLMODE PGCONNECT_TIMEOUT 2>/dev/null || true

# ---- paths -------------------------------------------------------------------
# Parents made here keep the caller's umask: the server's user must be able
# to pass through them.
if [ "$cmd" = start ]; then
	mkdir -p "$2" || die "cannot create $2"
fi
umask 077
if [ ! -d "$2" ]; then
	[ "$cmd" = status ] && {
		echo "$me: no cluster in $2"
		exit 4
	}
	exit 0 # stop: nothing to stop
fi
dir=$(cd "$2" && pwd -P) || die "cannot enter $2"
data=$dir/data
log=$dir/postgres.log
# The user running the server may not be able to enter the caller's
# working directory (/root): run everything from /.
cd /

# ---- binaries ----------------------------------------------------------------
has_server() { [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ]; }

find_bindir() {
	d=$(pg_config --bindir 2>/dev/null) || d=
	if [ -n "$d" ] && has_server "$d"; then
		echo "$d"
		return 0
	fi
	best=
	best_major=-1
	for d in /usr/lib/postgresql/*/bin; do
		has_server "$d" || continue
		v=${d#/usr/lib/postgresql/}
		v=${v%%/*}
		major=${v%%.*}
		case "$major" in '' | *[!0-9]*) continue ;; esac
		if [ "$major" -gt "$best_major" ]; then
			best=$d
			best_major=$major
		fi
	done
	if [ -n "$best" ]; then
		echo "$best"
		return 0
	fi
	d=$(command -v initdb 2>/dev/null) || d=
	if [ -n "$d" ] && has_server "${d%/*}"; then
		echo "${d%/*}"
		return 0
	fi
	return 1
}

bindir=$(find_bindir) ||
	die "no PostgreSQL server binaries (initdb, pg_ctl, postgres) under pg_config --bindir, /usr/lib/postgresql/*/bin or PATH: install the Debian package postgresql (apt-get install postgresql; scripts/deps.sh installs it when run as root)"

# ---- the user the server runs as ---------------------------------------------
pguser= # empty: ourselves (not root)

create_pg_user() {
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	[ -x "$nologin" ] || nologin=/bin/false
	if command -v useradd >/dev/null 2>&1; then
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell "$nologin" sextant-pg >&2
	elif command -v adduser >/dev/null 2>&1; then
		adduser --system --group --no-create-home --home /nonexistent \
			--shell "$nologin" sextant-pg >&2
	else
		return 1
	fi
}

# Sets pguser when running as root: the owner of an existing cluster, else
# postgres, else sextant-pg (created when create=1).
pick_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	if [ -d "$data" ]; then
		pguser=$(stat -c %U "$data") || die "cannot read the owner of $data"
		[ "$pguser" != root ] ||
			die "$data belongs to root and PostgreSQL refuses to run as root: chown -R postgres $data, or remove it to start afresh"
		return 0
	fi
	if id -u postgres >/dev/null 2>&1; then
		pguser=postgres
	elif id -u sextant-pg >/dev/null 2>&1; then
		pguser=sextant-pg
	elif [ "${1:-0}" = 1 ]; then
		note "creating the system user sextant-pg to run PostgreSQL (it never runs as root)"
		create_pg_user || die "cannot create the system user sextant-pg: create it (useradd --system sextant-pg) or install the postgresql package, which creates the user postgres"
		pguser=sextant-pg
	fi
}

# as_pg CMD...: runs CMD as the server's user.
as_pg() {
	if [ -z "$pguser" ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u "$pguser" -- "$@"
	elif command -v setpriv >/dev/null 2>&1; then
		setpriv --reuid="$pguser" --regid="$(id -g "$pguser")" --init-groups -- "$@"
	else
		die "runuser or setpriv (util-linux) is needed to run PostgreSQL as $pguser"
	fi
}

# give PATH...: hands files we created to the server's user.
give() {
	[ -z "$pguser" ] || chown "$pguser:" "$@"
}

# ---- state -------------------------------------------------------------------
# The postmaster's pid when one is running on $data.  A pid file left by a
# crash may name a process that has since reused the pid: the postmaster's
# working directory is always its data directory, so check that too.
live_pid() {
	[ -f "$data/postmaster.pid" ] || return 1
	p=$(sed -n 1p "$data/postmaster.pid" 2>/dev/null) || return 1
	case "$p" in '' | *[!0-9]*) return 1 ;; esac
	kill -0 "$p" 2>/dev/null || return 1
	if [ -d "/proc/$p" ]; then
		[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$data" ] || return 1
	fi
	echo "$p"
}

# Line N of the running postmaster's pid file (4 = port, 5 = socket dir).
pid_line() { sed -n "${1}p" "$data/postmaster.pid"; }

# The value of KEY in $data/sextant.conf, unquoted (empty when absent).
conf_get() {
	[ -f "$data/sextant.conf" ] || return 0
	sed -n "s/^$1 = '\{0,1\}\([^']*\)'\{0,1\}\$/\1/p" "$data/sextant.conf" | tail -n 1
}

# Percent-encodes $1 for a URL query value (RFC 3986 unreserved and '/' stay).
urlencode() {
	printf '%s' "$1" | od -An -v -tx1 | awk '
		BEGIN {
			safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/"
			for (i = 0; i < 256; i++) val[sprintf("%02x", i)] = i
		}
		{
			for (f = 1; f <= NF; f++) {
				n = val[$f]
				c = n < 128 ? sprintf("%c", n) : ""
				if (c != "" && index(safe, c)) printf "%s", c
				else printf "%%%s", toupper($f)
			}
		}'
}

conn_url() { # SOCKDIR PORT
	echo "postgresql://$SUPERUSER@/$DBNAME?host=$(urlencode "$1")&port=$2"
}

psql_admin() { # SOCKDIR PORT SQL
	as_pg "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$1" -p "$2" \
		-U "$SUPERUSER" -d postgres -c "$3"
}

bytes() { printf '%s' "$1" | wc -c; }

# ---- status ------------------------------------------------------------------
do_status() {
	if [ ! -f "$data/PG_VERSION" ]; then
		echo "$me: no cluster in $dir"
		exit 4
	fi
	if pid=$(live_pid); then
		sock=$(pid_line 5)
		port=$(pid_line 4)
		echo "$me: running (pid $pid) in $data, socket $sock, tcp 127.0.0.1:$port (password in $dir/password)"
		conn_url "$sock" "$port"
		exit 0
	fi
	echo "$me: stopped (cluster in $data)"
	exit 3
}

# ---- stop --------------------------------------------------------------------
do_stop() {
	[ -f "$data/PG_VERSION" ] || exit 0
	pick_user 0
	lock
	sock=$(conf_get unix_socket_directories)
	if pid=$(live_pid); then
		note "stopping PostgreSQL (pid $pid)"
		as_pg "$bindir/pg_ctl" stop -D "$data" -m fast -w -t "$STOP_TIMEOUT_S" -s >&2 ||
			die "PostgreSQL (pid $pid) did not stop within ${STOP_TIMEOUT_S}s: see $log"
	fi
	# A socket directory under /tmp (DIR's path was too long) is ours alone.
	case "$sock" in /tmp/sextant-pg.*) rm -rf "$sock" ;; esac
	exit 0
}

# ---- start -------------------------------------------------------------------
# Serialises start and stop on one DIR (two `make run` at once).  Closed in
# the server's environment (9>&- below) so the lock dies with this script.
lock() {
	command -v flock >/dev/null 2>&1 || return 0
	exec 9>>"$dir/.lock"
	flock -w 120 9 || die "another pg.sh holds $dir/.lock for over 120 s"
}

random_port() {
	r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	echo $((PORT_MIN + r % PORT_SPAN))
}

init_cluster() {
	note "creating a PostgreSQL cluster in $data (first start; $bindir)"
	rm -rf "$data.init"
	if [ ! -f "$dir/password" ]; then
		od -An -N18 -tx1 /dev/urandom | tr -d ' \n' >"$dir/password.tmp"
		echo >>"$dir/password.tmp"
		give "$dir/password.tmp"
		mv "$dir/password.tmp" "$dir/password"
	fi
	locale=C
	if locale -a 2>/dev/null | grep -Eqi '^c\.utf-?8$'; then locale=C.UTF-8; fi
	nosync=
	[ "${SEXTANT_PG_THROWAWAY:-0}" = 1 ] && nosync=--no-sync
	# Into a side directory first, so an interrupted initdb never leaves a
	# half-made cluster where the next start would look for one.
	if ! as_pg "$bindir/initdb" -D "$data.init" -U "$SUPERUSER" -E UTF8 \
		--locale="$locale" --auth-local=trust --auth-host=scram-sha-256 \
		--pwfile="$dir/password" $nosync >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "initdb failed (log above and in $log)"
	fi
	{
		echo
		echo "# Sextant's private cluster: scripts/pg.sh rewrites sextant.conf"
		echo "# (port, socket directory) on every start."
		echo "include_if_exists = 'sextant.conf'"
	} >>"$data.init/postgresql.conf"
	mv "$data.init" "$data"
}

# write_conf SOCKDIR PORT
write_conf() {
	q=$(printf '%s' "$1" | sed "s/'/''/g")
	{
		echo "# written by scripts/pg.sh on every start: do not edit"
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $2"
		echo "unix_socket_directories = '$q'"
		echo "unix_socket_permissions = 0700"
		if [ "${SEXTANT_PG_THROWAWAY:-0}" = 1 ]; then
			# Only an operating system crash can lose data; a server
			# crash keeps every commit (tests kill the postmaster).
			echo "# SEXTANT_PG_THROWAWAY=1: an OS crash may lose data"
			echo "fsync = off"
			echo "full_page_writes = off"
		fi
	} >"$data/sextant.conf.tmp"
	give "$data/sextant.conf.tmp"
	mv "$data/sextant.conf.tmp" "$data/sextant.conf"
}

# The socket directory: DIR/sock, or a private one under /tmp when that
# path is too long for a socket (the previous one is kept while it exists).
pick_sockdir() {
	sock=$dir/sock
	if [ "$(bytes "$sock")" -le "$SOCKDIR_MAX" ]; then
		mkdir -p "$sock"
		chmod 700 "$sock"
		give "$sock"
		echo "$sock"
		return 0
	fi
	prev=$(conf_get unix_socket_directories)
	case "$prev" in
	/tmp/sextant-pg.*)
		if [ -d "$prev" ] && [ "$(stat -c %U "$prev")" = "${pguser:-$(id -un)}" ]; then
			echo "$prev"
			return 0
		fi
		;;
	esac
	sock=$(mktemp -d /tmp/sextant-pg.XXXXXX) || die "cannot create a socket directory under /tmp"
	give "$sock"
	note "$dir is too long a path for a Unix socket: using $sock"
	echo "$sock"
}

# ready SOCKDIR PORT: waits until the server accepts connections.
ready() {
	"$bindir/pg_isready" -q -h "$1" -p "$2" -U "$SUPERUSER" -d postgres \
		-t "$START_TIMEOUT_S" ||
		as_pg "$bindir/pg_isready" -q -h "$1" -p "$2" -U "$SUPERUSER" \
			-d postgres -t 5
}

# finish SOCKDIR PORT: creates the database, records and prints the URL.
finish() {
	ready "$1" "$2" || die "PostgreSQL does not accept connections on $1 port $2: see $log"
	have=$(psql_admin "$1" "$2" "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'") ||
		die "cannot query the cluster on $1 port $2: see $log"
	if [ "$have" != 1 ]; then
		psql_admin "$1" "$2" "CREATE DATABASE $DBNAME" ||
			die "cannot create the database $DBNAME: see $log"
	fi
	url=$(conn_url "$1" "$2")
	printf '%s\n' "$url" >"$dir/url.tmp"
	chmod 644 "$dir/url.tmp"
	mv "$dir/url.tmp" "$dir/url"
	printf '%s\n' "$url"
}

do_start() {
	pick_user 1
	[ -e "$log" ] || : >"$log"
	if [ -n "$pguser" ]; then
		chown "$pguser:" "$dir" "$log"
		as_pg test -w "$dir" ||
			die "$pguser cannot write $dir (a parent directory is not searchable by it): use a directory under a path other users can enter, or chmod o+x the parents"
	fi
	chmod 700 "$dir"
	lock
	if [ -d "$data" ] && [ ! -f "$data/PG_VERSION" ]; then
		die "$data exists but holds no cluster (no PG_VERSION): remove it to create a new one"
	fi
	[ -d "$data" ] || init_cluster

	if pid=$(live_pid); then
		note "PostgreSQL already running (pid $pid) in $data"
		finish "$(pid_line 5)" "$(pid_line 4)"
		return 0
	fi

	sock=$(pick_sockdir)
	port=$(conf_get port)
	[ -n "$port" ] || port=$(random_port)
	port_tries=0
	waits=0
	while :; do
		write_conf "$sock" "$port"
		before=$(wc -c <"$log")
		note "starting PostgreSQL on $sock and 127.0.0.1:$port (log $log)"
		# pg_ctl detaches the postmaster (setsid) and sends its output to the
		# log: a terminal's Ctrl-C does not reach it, and no pipe of ours is
		# held open.  A stale postmaster.pid (crash, kill -9) is handled by
		# pg_ctl and the postmaster.
		if as_pg "$bindir/pg_ctl" start -D "$data" -l "$log" -w \
			-t "$START_TIMEOUT_S" -s >&2 9>&-; then
			break
		fi
		new=$(tail -c +"$((before + 1))" "$log")
		case "$new" in
		*"Address already in use"* | *"could not create any TCP/IP sockets"*)
			port_tries=$((port_tries + 1))
			if [ "$port_tries" -lt "$PORT_TRIES" ]; then
				note "port $port is taken: trying another"
				port=$(random_port)
				continue
			fi
			;;
		*"shared memory block is still in use"* | *"lock file"*"already exists"*)
			# Backends of a killed postmaster exit once they notice, and
			# the postmaster's pid stays taken until its parent reaps it.
			waits=$((waits + 1))
			if [ "$waits" -le "$EXIT_WAIT_S" ]; then
				[ "$waits" -eq 1 ] && note "processes of a previous server are still exiting: waiting up to ${EXIT_WAIT_S}s"
				sleep 1
				continue
			fi
			printf '%s\n' "$new" | tail -n 20 >&2
			die "PostgreSQL did not start: if no server runs from $data, the pid in its postmaster.pid now belongs to another process of ${pguser:-$(id -un)}; remove that file and retry"
			;;
		esac
		printf '%s\n' "$new" | tail -n 20 >&2
		die "PostgreSQL did not start (log above and in $log)"
	done
	finish "$sock" "$port"
}

case "$cmd" in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
esac

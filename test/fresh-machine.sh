#!/bin/sh
# fresh-machine.sh [--skip-test] [--repo DIR] - the README's two commands on
# a fresh Debian bookworm, for a person to run before a release (not part of
# `make test`).  As root: debootstraps a minimal bookworm (minbase, plus make,
# which the README asks for) into a folder, puts a clean clone of the
# repository's HEAD in it, and in that chroot runs `make run` until /readyz
# answers 200, makes the first tool call (list_services over MCP with curl,
# from this machine), stops the gateway with SIGINT as Ctrl-C would, then runs
# `make test` (unless --skip-test).  Ends with what each step installed and
# how long it took.
#
# Needs debootstrap, curl, git and a Debian mirror (apt and npm in the chroot
# use this machine's network).  The chroot's /usr/sbin/policy-rc.d stops
# packages from starting their daemons (Debian's postgresql and nginx would
# listen on this machine's 5432 and 80).
#
# Environment: SEXTANT_FRESH_DIR (the chroot, default /var/tmp/sextant-fresh,
# removed and made again on every run), SEXTANT_FRESH_TARBALL (debootstrap's
# package tarball, reused when present, default
# /var/tmp/sextant-fresh-bookworm.tgz), SEXTANT_FRESH_MIRROR (default
# http://deb.debian.org/debian).
set -eu

READY_TIMEOUT_S=3600 # make run: apt, the build and the demo data, to /readyz
# The first tool call may wait for the rollups of the demo data.
CALL_TIMEOUT_S=120
STOP_TIMEOUT_S=60

me=fresh-machine.sh
die() {
	echo "$me: $*" >&2
	exit 1
}
say() { echo "$me: $*"; }

skip_test=0
ca_env= # NODE_EXTRA_CA_CERTS=... for the chroot, below
repo=$(cd "$(dirname "$0")/.." && pwd)
while [ $# -gt 0 ]; do
	case "$1" in
	--skip-test) skip_test=1 ;;
	--repo)
		[ $# -ge 2 ] || die "--repo needs a directory"
		repo=$2
		shift
		;;
	*)
		echo "usage: $me [--skip-test] [--repo DIR]" >&2
		exit 2
		;;
	esac
	shift
done

root=${SEXTANT_FRESH_DIR:-/var/tmp/sextant-fresh}
tarball=${SEXTANT_FRESH_TARBALL:-/var/tmp/sextant-fresh-bookworm.tgz}
mirror=${SEXTANT_FRESH_MIRROR:-http://deb.debian.org/debian}
src=/root/sextant # the clone, inside the chroot

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mount)"
for tool in debootstrap chroot curl git mount setsid; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool not found: apt-get install debootstrap curl git"
done
case "$root" in
/*) ;;
*) die "SEXTANT_FRESH_DIR=$root: give an absolute path" ;;
esac
case "$root" in
/ | /var | /var/tmp | /tmp | "") die "SEXTANT_FRESH_DIR=$root: name a folder of its own" ;;
esac
git -C "$repo" rev-parse --verify -q HEAD >/dev/null ||
	die "$repo is not a git repository with a commit: give --repo DIR"

log_dir=$(mktemp -d /tmp/sextant-fresh-log.XXXXXX)
run_pid= # setsid'd `make run`: its pid is its process group

# The processes whose root is the chroot (all started by this script).
chroot_pids() {
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"
	done
	return 0
}

unmount_all() {
	for m in dev/shm dev/pts dev sys proc; do
		if mountpoint -q "$root/$m" 2>/dev/null; then
			umount "$root/$m" || umount -l "$root/$m" || true
		fi
	done
}

# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	trap '' INT TERM
	[ -n "$run_pid" ] && kill -INT "-$run_pid" 2>/dev/null
	if [ -d "$root" ]; then
		i=0
		while [ -n "$(chroot_pids)" ] && [ "$i" -lt "$STOP_TIMEOUT_S" ]; do
			sleep 1
			i=$((i + 1))
		done
		for p in $(chroot_pids); do kill -KILL "$p" 2>/dev/null || true; done
		unmount_all
	fi
	say "logs in $log_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s; }

# in_root CMD...: CMD in the chroot, from the clone, with a clean environment.
in_root() {
	# shellcheck disable=SC2086 # ca_env: empty or one word
	chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		$ca_env "$@"
}

# Packages installed in the chroot and their Installed-Size in KiB.
pkg_count() { in_root dpkg-query -W -f '${db:Status-Abbrev}\n' | grep -c '^ii'; }
pkg_kib() {
	in_root dpkg-query -W -f '${db:Status-Abbrev} ${Installed-Size}\n' |
		awk '$1 == "ii" { s += $2 } END { print s + 0 }'
}
gb() { awk -v k="$1" 'BEGIN { printf "%.2f GB", k / 1024 / 1024 }'; }
# What the chroot holds on disk in KiB, apt's cache of .deb files included
# (a machine keeps it too); not the clone, its build or the private
# cluster.
disk_kib() {
	du -skx --exclude="$root$src" --exclude="$root/var/lib/sextant" "$root" | cut -f1
}

# ---- 1. a minimal bookworm -----------------------------------------------------
t0=$(now)
if [ -d "$root" ]; then
	[ -z "$(chroot_pids)" ] || die "processes still run in $root: stop them first"
	unmount_all
	rm -rf "$root"
fi
if [ ! -f "$tarball" ]; then
	say "downloading a minimal bookworm into $tarball (debootstrap --make-tarball)"
	debootstrap --variant=minbase --include=make --make-tarball="$tarball" \
		bookworm "$root.tarball-work" "$mirror" >"$log_dir/debootstrap.log" 2>&1 ||
		die "debootstrap --make-tarball failed: see $log_dir/debootstrap.log"
	rm -rf "$root.tarball-work"
fi
say "debootstrap of a minimal bookworm into $root (from $tarball)"
debootstrap --variant=minbase --include=make --unpack-tarball="$tarball" \
	bookworm "$root" "$mirror" >>"$log_dir/debootstrap.log" 2>&1 ||
	die "debootstrap failed: see $log_dir/debootstrap.log"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Certificate authorities this machine adds to Debian's (an egress proxy that
# re-signs TLS, as in CI sandboxes): a fresh machine behind the same proxy
# would trust them too, or npm's https fetches fail (SELF_SIGNED_CERT_IN_CHAIN).
# apt needs none (its mirror is http).
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
	mkdir -p "$root/etc/ssl"
	cat /usr/local/share/ca-certificates/*.crt >"$root/etc/ssl/host-extra-ca.pem"
	ca_env=NODE_EXTRA_CA_CERTS=/etc/ssl/host-extra-ca.pem
	say "this machine's extra certificate authorities are trusted in the chroot ($ca_env)"
fi
[ -f "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"
printf '#!/bin/sh\n# fresh-machine.sh: no daemons started in this chroot\nexit 101\n' \
	>"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --make-private "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm" # PostgreSQL's shared memory
git clone -q --no-local "$repo" "$root$src"
rev=$(git -C "$root$src" log -1 --format='%h %s')
t_boot=$(($(now) - t0))
pkgs0=$(pkg_count)
kib0=$(pkg_kib)
disk0=$(disk_kib)
say "bookworm ready in ${t_boot}s: $pkgs0 packages, $(gb "$kib0") installed; clone of $repo at $rev"

# ---- 2. make run, until /readyz answers 200 --------------------------------
port=
for try in 1 2 3 4 5 6 7 8 9 10; do
	p=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 12000))
	if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
		port=$p
		break
	fi
	: "$try"
done
[ -n "$port" ] || die "no free loopback port found"
base=http://127.0.0.1:$port

say "make run (SEXTANT_LISTEN=127.0.0.1:$port), its output:"
t0=$(now)
: >"$log_dir/make-run.log"
# A background job of sh starts with SIGINT ignored, and so would make and
# run.sh: env gives it back, as a terminal's Ctrl-C finds it.
# shellcheck disable=SC2086 # ca_env: empty or one word
setsid env --default-signal=INT chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin $ca_env \
	SEXTANT_LISTEN="127.0.0.1:$port" sh -c "cd $src && exec make run" \
	>"$log_dir/make-run.log" 2>&1 </dev/null &
run_pid=$!
shown=0 # bytes of the log already shown
show_log() {
	size=$(wc -c <"$log_dir/make-run.log")
	[ "$size" -gt "$shown" ] || return 0
	tail -c +"$((shown + 1))" "$log_dir/make-run.log" | head -c "$((size - shown))" |
		sed 's/^/  | /'
	shown=$size
}
while :; do
	show_log
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$base/readyz" || true)
	[ "$code" = 200 ] && break
	kill -0 "$run_pid" 2>/dev/null || {
		show_log
		run_pid=
		die "make run exited after $(($(now) - t0))s, before /readyz answered 200; it installed $(($(pkg_count) - pkgs0)) packages, $(gb $(($(pkg_kib) - kib0))) (+$(gb $(($(disk_kib) - disk0))) on disk)"
	}
	[ $(($(now) - t0)) -lt "$READY_TIMEOUT_S" ] ||
		die "/readyz did not answer 200 within ${READY_TIMEOUT_S}s"
	sleep 1
done
t_run=$(($(now) - t0))
pkgs1=$(pkg_count)
kib1=$(pkg_kib)
disk1=$(disk_kib)
say "make run: /readyz 200 after ${t_run}s; it installed $((pkgs1 - pkgs0)) packages, $(gb $((kib1 - kib0))) (+$(gb $((disk1 - disk0))) on disk)"

# ---- 3. the first tool call --------------------------------------------------
# The README's curl session: initialize, initialized, then tools/call.
H1='Content-Type: application/json'
H2='Accept: application/json, text/event-stream'
mcp() { # SID BODY: prints the response body
	curl -s -m 30 -H "$H1" -H "$H2" ${1:+-H "Mcp-Session-Id: $1"} "$base/mcp" -d "$2"
}
t0=$(now)
tries=0
answer=
while :; do
	tries=$((tries + 1))
	sid=$(curl -s -m 10 -D - -o /dev/null -H "$H1" -H "$H2" "$base/mcp" \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fresh-machine","version":"1"}}}' |
		tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }') || sid=
	if [ -n "$sid" ]; then
		mcp "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null || true
		answer=$(mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_services","arguments":{}}}') || answer=
		curl -s -m 5 -X DELETE -H "Mcp-Session-Id: $sid" "$base/mcp" >/dev/null || true
		# The demo dataset's services (lib/demo/demo.c).
		case "$answer" in
		*'"isError":true'*) ;;
		*api-gateway*checkout* | *checkout*api-gateway*) break ;;
		esac
	fi
	show_log
	[ $(($(now) - t0)) -lt "$CALL_TIMEOUT_S" ] || {
		printf '%s\n' "$answer" | head -c 2000 >&2
		echo >&2
		die "list_services did not name the demo services within ${CALL_TIMEOUT_S}s ($tries tries)"
	}
	sleep 2
done
t_call=$(($(now) - t0))
show_log
printf '%s\n' "$answer" >"$log_dir/list_services.txt"
say "first tool call: list_services named the demo services after ${t_call}s ($tries tries; answer in $log_dir/list_services.txt)"

# ---- 4. Ctrl-C ---------------------------------------------------------------
t0=$(now)
kill -INT "-$run_pid"
i=0
while [ -n "$(chroot_pids)" ] && [ "$i" -lt "$STOP_TIMEOUT_S" ]; do
	sleep 1
	i=$((i + 1))
done
show_log
[ -z "$(chroot_pids)" ] || die "make run left processes behind ${STOP_TIMEOUT_S}s after SIGINT: $(chroot_pids | tr '\n' ' ')"
wait "$run_pid" 2>/dev/null || true
run_pid=
t_stop=$(($(now) - t0))
say "make run stopped ${t_stop}s after SIGINT"

# ---- 5. make test ------------------------------------------------------------
t_test=0
result=
if [ "$skip_test" = 0 ]; then
	say "make test, its output in $log_dir/make-test.log"
	t0=$(now)
	rc=0
	in_root sh -c "cd $src && exec make test" >"$log_dir/make-test.log" 2>&1 </dev/null || rc=$?
	t_test=$(($(now) - t0))
	result=$(tail -n 1 "$log_dir/make-test.log")
	[ "$rc" -eq 0 ] || tail -n 40 "$log_dir/make-test.log" | sed 's/^/  | /'
fi
pkgs2=$(pkg_count)
kib2=$(pkg_kib)
disk2=$(disk_kib)

echo
echo "fresh bookworm ($rev)"
printf '  %-13s %6ss  %4s packages, %s\n' debootstrap "$t_boot" "$pkgs0" "$(gb "$kib0")"
printf '  %-13s %6ss  +%3s packages, +%s installed, +%s on disk (to /readyz 200)\n' \
	"make run" "$t_run" "$((pkgs1 - pkgs0))" "$(gb $((kib1 - kib0)))" \
	"$(gb $((disk1 - disk0)))"
printf '  %-13s %6ss  %s tries\n' "first call" "$t_call" "$tries"
printf '  %-13s %6ss\n' "Ctrl-C" "$t_stop"
if [ "$skip_test" = 1 ]; then
	printf '  %-13s skipped\n' "make test"
else
	printf '  %-13s %6ss  +%3s packages, +%s installed, +%s on disk: %s\n' \
		"make test" "$t_test" "$((pkgs2 - pkgs1))" "$(gb $((kib2 - kib1)))" \
		"$(gb $((disk2 - disk1)))" "$result"
fi
[ "$skip_test" = 1 ] || [ "${rc:-0}" -eq 0 ]

#!/bin/sh
# deps.sh build|run|test|fuzz|bench - installs the Debian packages that a
# make target needs and that are missing (as root, with apt-get); as another
# user it names them and exits non-zero.  Silent when nothing is missing;
# otherwise it names the packages once, then apt's progress a line per tenth
# (apt's whole output goes to build/deps.log).  Node 24 and the npm packages
# for the tests come from scripts/node.sh.
#
#   build  make all: the compiler and the -dev libraries
#   run    make run: build, and the PostgreSQL server for the private store
#   test   make test: run, and cmocka, clang-format, Prometheus, nginx, npm,
#          curl, openssl and kubectl for the unit and integration tests,
#          chromium for the console's browser test
#   fuzz   make fuzz: build, and clang with its libFuzzer runtime
#   bench  make bench: run, and wrk, nginx, npm, curl and jq
set -eu
build="gcc make pkg-config libmicrohttpd-dev libjansson-dev libpq-dev
libssl-dev libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler
zlib1g-dev libcjose-dev"
run="$build postgresql"
case "${1:-}" in
build) want=$build ;;
run) want=$run ;;
test) want="$run libcmocka-dev clang-format prometheus nginx-light npm curl chromium
openssl kubernetes-client" ;;
fuzz) want="$build clang libclang-rt-14-dev" ;;
bench) want="$run wrk nginx-light npm curl jq" ;;
*)
	echo "usage: deps.sh build|run|test|fuzz|bench" >&2
	exit 2
	;;
esac
profile=$1
missing=""
for p in $want; do
	# npm may come with another Node package (NodeSource's nodejs).
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	# kubectl may come from Kubernetes' own package (kubectl).
	[ "$p" = kubernetes-client ] && command -v kubectl >/dev/null 2>&1 &&
		continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages for make $profile:$missing" >&2
	echo "deps.sh: install them (sudo apt-get install$missing) or run as root" >&2
	exit 1
fi

log=$(cd "$(dirname "$0")/.." && pwd)/build/deps.log
mkdir -p "${log%/*}"
: >"$log"
fail() {
	tail -n 20 "$log" | sed 's/^/  | /' >&2
	echo "deps.sh: $1 failed (above; all of it in $log)" >&2
	exit 1
}

echo "deps.sh: make $profile needs$missing"
started=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: apt-get update"
apt-get update -q >>"$log" 2>&1 || fail "apt-get update"

# The plan first, as apt states it before downloading (--assume-no stops
# there): how many packages with their dependencies, and how large.
# shellcheck disable=SC2086
plan=$(apt-get install --assume-no -q --no-install-recommends $missing 2>&1) || true
printf '%s\n' "$plan" >>"$log"
printf '%s\n' "$plan" | awk '
	/newly installed/ { n = $3 }
	/^Need to get / { sub(/^Need to get /, ""); sub(/ of archives\.$/, ""); get = $0 }
	/^After this operation, / { sub(/^After this operation, /, ""); sub(/ of additional.*/, ""); disk = $0 }
	END {
		if (n != "")
			printf "deps.sh: apt-get installs %s packages with their dependencies: %s to download, %s on disk\n", n, get, disk
	}'

# apt's status lines (APT::Status-Fd, "dlstatus:N:PERCENT:TEXT" while
# downloading, "pmstatus:PACKAGE:PERCENT:TEXT" while installing) become a
# line per tenth of each stage; its output goes to the log.  The exit status
# comes through the pipe as a last "exit:N" line.
{
	rc=0
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends -o APT::Status-Fd=3 \
		$missing 3>&1 >>"$log" 2>&1 || rc=$?
	echo "exit:$rc"
} | awk -F: '
	$1 == "dlstatus" || $1 == "pmstatus" {
		stage = $1 == "dlstatus" ? "downloading" : "installing"
		tenth = int($3 / 10)
		if (stage != last || tenth > shown) {
			printf "deps.sh: %s %d%%\n", stage, tenth * 10
			fflush()
			last = stage
			shown = tenth
		}
		next
	}
	$1 == "exit" { rc = $2 }
	END { exit rc == "" ? 1 : rc }' || fail "apt-get install"
echo "deps.sh: installed in $(($(date +%s) - started))s"

#!/bin/sh
# deps.sh [build|test|bench] - installs the Debian packages Sextant needs
# that are missing (as root, with apt-get); as another user it names them
# and exits non-zero.  Node 24 and the npm packages for the tests come from
# scripts/node.sh.
set -eu
profile=${1:-test}
build="gcc make pkg-config libmicrohttpd-dev libjansson-dev libpq-dev
libssl-dev libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler
zlib1g-dev"
test="$build libcmocka-dev clang-format clang libclang-rt-14-dev npm
postgresql prometheus nginx-light wrk curl jq"
case "$profile" in
build) want=$build ;;
test | bench) want=$test ;;
*) echo "usage: deps.sh [build|test|bench]" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
	# npm may come with another Node package (NodeSource's nodejs).
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages:$missing" >&2
	echo "deps.sh: install them (sudo apt-get install$missing) or run as root" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null

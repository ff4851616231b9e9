#!/bin/sh
# run.sh - what `make run` does after building: serve on 127.0.0.1:8080
# (SEXTANT_LISTEN to change it) with ./sextant.toml when present, and print
# how to connect.  Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."
conf=""
[ -f sextant.toml ] && conf="--config sextant.toml"
listen=${SEXTANT_LISTEN:-127.0.0.1:8080}
cat <<EOM
Sextant is starting on http://$listen/mcp

  MCP endpoint  http://$listen/mcp   (Streamable HTTP, revisions 2025-03-26 .. 2025-11-25)
  health        http://$listen/healthz   metrics  http://$listen/metrics

Try it:
  curl -si http://$listen/mcp -H 'Content-Type: application/json' \\
    -H 'Accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'

EOM
SEXTANT_LISTEN=$listen exec build/sextant serve $conf

#!/usr/bin/env bash
# Soak: reproduces the resource-exhaustion attacks on the real gateway binary and prints one
# markdown table (baseline / peak / after figures per scenario). See docs/benchmarks.md,
# "Soak: resource bounds".
#
#   bench/soak.sh                          every scenario (about 6 minutes)
#   bench/soak.sh -only request-flood      one scenario (comma-separated list)
#   bench/soak.sh -out /tmp/soak.md        also write the table to a file
#   bench/soak.sh -wait 130s               how long the trickle and idle checks wait (75 s)
#   bench/soak.sh -bin /path/to/mcpgw      measure that binary (no goroutine/heap figures
#                                          unless it was built with -tags soakdebug)
#
# Builds cmd/mcpgw with -tags soakdebug and the harness into a temp dir. Needs the go-sdk
# fixture at .tools/bin/everything-server (bash scripts/test.sh installs it) or
# MCPGW_GO_FIXTURE. Everything listens on 127.0.0.1; every process started is stopped on exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in
-h | --help)
	sed -n '2,15p' "$0"
	exit 0
	;;
esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-soak.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
go build -o "$TMP/soak" ./bench/soak
"$TMP/soak" -repo "$PWD" "$@"

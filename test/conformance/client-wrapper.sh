#!/usr/bin/env bash
# Client-leg wrapper for the conformance suite (scripts/conformance.sh):
#
#   conformance client --command "bash test/conformance/client-wrapper.sh" ...
#
# The suite appends the scenario server's URL as the last argument. This script starts mcpgw on a
# free loopback port with that URL as its only upstream ("up"; a temporary config), runs the
# known-good client (conf-client.mjs, TS SDK v2) against the gateway's scoped endpoint
# http://127.0.0.1:PORT/up/mcp, then stops the gateway. It exits with the client's status.
#
# Environment:
#   MCPGW_BIN            gateway binary (required)
#   CONF_LOG_DIR         where to keep the gateway's log as <scenario>.gateway.log (default: dropped)
#   CONF_WORK_DIR        where to make this run's scratch directory (default $TMPDIR or /tmp)
#   CONF_PID_DIR         where to note the gateway's pid while it runs, so scripts/conformance.sh
#                        can stop it if this wrapper is killed (optional)
#   MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION   set by the suite, passed on
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
url=${!#}
: "${MCPGW_BIN:?MCPGW_BIN must point at the mcpgw binary}"
scenario=${MCP_CONFORMANCE_SCENARIO:-unknown}
safe=${scenario//\//_}

work_root=${CONF_WORK_DIR:-${TMPDIR:-/tmp}}
mkdir -p "$work_root"
work=$(mktemp -d "$work_root/mcpgw-conf-client.XXXXXX")
gwpid=
clientpid=

cleanup() {
	if [ -n "$clientpid" ]; then
		kill "$clientpid" 2>/dev/null
		wait "$clientpid" 2>/dev/null
	fi
	if [ -n "$gwpid" ]; then
		kill "$gwpid" 2>/dev/null
		# the gateway drains for up to 10 s; do not wait that long
		for _ in $(seq 1 30); do
			kill -0 "$gwpid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$gwpid" 2>/dev/null
		wait "$gwpid" 2>/dev/null
		[ -n "${CONF_PID_DIR:-}" ] && rm -f "$CONF_PID_DIR/$gwpid"
	fi
	if [ -n "${CONF_LOG_DIR:-}" ] && [ -f "$work/gateway.log" ]; then
		mkdir -p "$CONF_LOG_DIR"
		cp "$work/gateway.log" "$CONF_LOG_DIR/$safe.gateway.log"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# YAML double-quoted scalar: the scenario URL is plain ASCII, but quote it anyway.
cat >"$work/config.yaml" <<EOF
general_settings:
  mcp_scoped_prefix: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
mcp_servers:
  up:
    url: "$url"
    allow_elicitation: true
    allow_sampling: true
EOF

LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true \
	LITELLM_SALT_KEY="${LITELLM_SALT_KEY:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}" \
	"$MCPGW_BIN" serve --config "$work/config.yaml" --host 127.0.0.1 --port 0 \
	--log-level debug --data-dir "$work/data" >"$work/gateway.log" 2>&1 &
gwpid=$!
[ -n "${CONF_PID_DIR:-}" ] && : >"$CONF_PID_DIR/$gwpid"

addr=
for _ in $(seq 1 150); do
	addr=$(grep -m1 '"msg":"listening"' "$work/gateway.log" 2>/dev/null | grep -o '"addr":"[^"]*"' | sed 's/^"addr":"//; s/"$//')
	[ -n "$addr" ] && break
	if ! kill -0 "$gwpid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "client-wrapper: the gateway did not start; its log:" >&2
	cat "$work/gateway.log" >&2
	exit 1
fi

echo "client-wrapper: scenario $scenario, upstream $url, gateway http://$addr/up/mcp"
node "$here/conf-client.mjs" "http://$addr/up/mcp" &
clientpid=$!
wait "$clientpid"
rc=$?
clientpid=
exit "$rc"

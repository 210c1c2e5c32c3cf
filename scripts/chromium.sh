#!/usr/bin/env bash
# Sourced by scripts/test.sh: makes sure Debian's chromium is installed for the admin UI's browser
# tests (test/ui, driven headless through chromedp) and exports MCPGW_CHROMIUM. As root, without
# it, Debian's chromium is installed; otherwise the step fails with the command to run.

ensure_chromium() {
	local bin
	bin=$(command -v chromium || true)
	if [ -z "$bin" ]; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "chromium is needed for the admin UI browser tests; install it (apt-get install -y chromium)" >&2
			return 1
		fi
		echo "no chromium: installing Debian's chromium for the admin UI browser tests" >&2
		export DEBIAN_FRONTEND=noninteractive
		if ! apt-get install -y --no-install-recommends chromium >&2 </dev/null; then
			apt-get update >&2 </dev/null
			apt-get install -y --no-install-recommends chromium >&2 </dev/null
		fi
		bin=$(command -v chromium)
	fi
	export MCPGW_CHROMIUM=$bin
}

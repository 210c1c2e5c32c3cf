#!/usr/bin/env bash
# A throwaway Redis for the tests: the shared limits and the replica end-to-end tests (test/e2e)
# run against MCPGW_TEST_REDIS_URL, each test under key names of its own.
#
# Sourced (scripts/test.sh does this): `start_test_redis` finds Debian's redis-server (on PATH; as
# root, installs Debian's redis-server when missing), starts it on 127.0.0.1 at a free port with
# its working directory in a temporary directory and no persistence (`--save ''`,
# `--appendonly no`), exports MCPGW_TEST_REDIS_URL and stops it and deletes the directory at exit.
# Tests that must stop or restart a Redis mid-test start their own (internal/redistest).
#
# Executed: `scripts/redis.sh CMD ARGS...` does the same, runs CMD with that environment and
# stops the server when CMD ends, e.g. `scripts/redis.sh go test -race ./internal/limits/...`.

REDIS_TEST_DIR=""
REDIS_TEST_PID=""

# install_redis installs Debian's redis-server (root only), updating the package lists first
# when the install fails without them.
install_redis() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "redis-server is needed for the shared-limit tests; install it (apt-get install -y redis-server)" >&2
		return 1
	fi
	echo "no redis-server: installing Debian's redis-server for the tests" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends redis-server >&2 </dev/null; then
		apt-get update >&2 </dev/null
		apt-get install -y --no-install-recommends redis-server >&2 </dev/null
	fi
}

# redis_test_port prints a TCP port on 127.0.0.1 nothing listens on.
redis_test_port() {
	local port
	for _ in $(seq 50); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	return 1
}

# redis_test_ping succeeds when a Redis answers PING on 127.0.0.1:$1.
redis_test_ping() {
	local reply
	reply=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'PING\r\n' >&3
		IFS= read -r -t 1 line <&3 && echo "${line%$'\r'}"
	) 2>/dev/null
	[ "$reply" = "+PONG" ]
}

start_test_redis() {
	command -v redis-server >/dev/null || install_redis || return 1
	command -v redis-server >/dev/null || {
		echo "no redis-server found after installing it" >&2
		return 1
	}
	REDIS_TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-redis.XXXXXX") || return 1
	# Keep an EXIT trap set before (scripts/postgres.sh's) and run it too.
	local prev
	prev=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT\$/\1/")
	case "$prev" in
	*stop_test_redis*) ;;
	*) trap "${prev:+$prev; }stop_test_redis" EXIT ;;
	esac
	local port attempt
	for attempt in 1 2 3 4 5; do
		port=$(redis_test_port) || return 1
		redis-server --bind 127.0.0.1 --port "$port" --dir "$REDIS_TEST_DIR" --save '' --appendonly no \
			--protected-mode yes --daemonize no --logfile "$REDIS_TEST_DIR/server.log" \
			</dev/null >/dev/null 2>&1 &
		REDIS_TEST_PID=$!
		for _ in $(seq 100); do
			if redis_test_ping "$port"; then
				export MCPGW_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
				echo "redis: $(redis-server --version | cut -d' ' -f1-3) on 127.0.0.1:$port ($REDIS_TEST_DIR)" >&2
				return 0
			fi
			kill -0 "$REDIS_TEST_PID" 2>/dev/null || break
			sleep 0.05
		done
		kill "$REDIS_TEST_PID" 2>/dev/null
		wait "$REDIS_TEST_PID" 2>/dev/null
		REDIS_TEST_PID=""
		echo "redis-server did not start on port $port (attempt $attempt)" >&2
	done
	cat "$REDIS_TEST_DIR/server.log" >&2
	return 1
}

# stop_test_redis stops the server and deletes its directory (the EXIT trap).
stop_test_redis() {
	if [ -n "$REDIS_TEST_PID" ]; then
		kill "$REDIS_TEST_PID" 2>/dev/null
		wait "$REDIS_TEST_PID" 2>/dev/null
		REDIS_TEST_PID=""
	fi
	if [ -n "$REDIS_TEST_DIR" ] && [ -d "$REDIS_TEST_DIR" ]; then
		rm -rf "$REDIS_TEST_DIR"
	fi
	REDIS_TEST_DIR=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	start_test_redis
	if [ $# -gt 0 ]; then
		"$@"
		exit
	fi
	echo "MCPGW_TEST_REDIS_URL=$MCPGW_TEST_REDIS_URL (stopped when this script exits)"
fi

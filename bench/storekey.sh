#!/usr/bin/env bash
# Store key vs master key: the gateway's CPU time per tools/call with each, same gateway, same run.
#
#   bench/storekey.sh            prints the table (docs/benchmarks.md, "Store key vs master key")
#
# Builds cmd/mcpgw and bench/loadgen into a temp dir, starts the go-sdk fixture (stateless) and
# the gateway (SQLite key store in the temp dir) on free 127.0.0.1 ports, mints a store key with
# `mcpgw key create --servers fx`, then runs closed-loop 2026-07-28 tools/call rounds: each round
# runs the master key and the store key back to back (their order alternating from round to
# round), and the gateway's CPU time (utime+stime from /proc) per call is read for each run.
# Knobs (environment): BENCH_ROUNDS (6), BENCH_C (10), BENCH_D (measured seconds per run at C,
# 5), BENCH_D1 (seconds per run at C=1, 3). Needs the fixture at .tools/bin/everything-server or
# MCPGW_GO_FIXTURE. Every process started here is stopped on exit. About 2 minutes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
case ${1:-} in
-h | --help)
	sed -n '2,13p' "$0"
	exit 0
	;;
"") ;;
*)
	echo "bench/storekey.sh: no arguments (knobs are environment variables; see --help)" >&2
	exit 2
	;;
esac

ROUNDS=${BENCH_ROUNDS:-6}
C=${BENCH_C:-10}
D=${BENCH_D:-5}
D1=${BENCH_D1:-3}
KEY=sk-bench-master-key-0123456789
SALT=6d6370677720626e6368206b657920666f722062656e63686d61726b73206f6e6c79
FIXTURE=${MCPGW_GO_FIXTURE:-$ROOT/.tools/bin/everything-server}
if [ ! -x "$FIXTURE" ]; then
	echo "bench/storekey.sh: the go-sdk fixture is missing at $FIXTURE (bash scripts/test.sh installs it)" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-storekey.XXXXXX")
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "storekey: $*" >&2; }
START=$SECONDS
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)

log "building the gateway and the load generator"
go build -o "$TMP/mcpgw" ./cmd/mcpgw
go build -o "$TMP/loadgen" ./bench/loadgen
LG=$TMP/loadgen
RES=$TMP/results.jsonl
read -r P_FX P_GW <<<"$(timeout 10 "$LG" ports -n 2)"

"$FIXTURE" -http "127.0.0.1:$P_FX" >"$TMP/fixture.log" 2>&1 &
FX_PID=$!
PIDS+=("$FX_PID")
timeout 20 "$LG" wait -addr "127.0.0.1:$P_FX"

cat >"$TMP/gw.yaml" <<YAML
general_settings:
  master_key: $KEY
mcp_servers:
  fx:
    url: http://127.0.0.1:$P_FX/mcp
YAML
(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$TMP/mcpgw" serve --config "$TMP/gw.yaml" --host 127.0.0.1 --port "$P_GW" \
	--data-dir "$TMP/data" >>"$TMP/gateway.log" 2>&1) &
GW_PID=$!
PIDS+=("$GW_PID")
timeout 20 "$LG" wait -addr "127.0.0.1:$P_GW"

STORE_KEY=$(LITELLM_MASTER_KEY=$KEY "$TMP/mcpgw" key create --url "http://127.0.0.1:$P_GW" --alias bench --servers fx 2>/dev/null |
	sed -n 's/^key: *//p')
if [ -z "$STORE_KEY" ]; then
	echo "bench/storekey.sh: mcpgw key create did not print a key" >&2
	exit 1
fi

# run TARGET KEY C D ROUND: one measured run through the gateway.
run() {
	log "C=$3 round $5: $1"
	timeout 60 "$LG" call -era modern -c "$3" -d "${4}s" -url "http://127.0.0.1:$P_GW/mcp" -key "$2" \
		-tool fx-test_simple_text -cpu "gateway=$GW_PID,upstream=$FX_PID" -target "$1" -round "$5" -out "$RES" >/dev/null
}
for c_d in "$C:$D" "1:$D1"; do
	c=${c_d%%:*} d=${c_d##*:}
	for round in $(seq 1 "$ROUNDS"); do
		if [ $((round % 2)) = 1 ]; then
			run master "$KEY" "$c" "$d" "$round"
			run store-key "$STORE_KEY" "$c" "$d" "$round"
		else
			run store-key "$STORE_KEY" "$c" "$d" "$round"
			run master "$KEY" "$c" "$d" "$round"
		fi
	done
done

echo
echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores," \
	"$(go env GOVERSION); load average before the run $LOAD_AT_START; $ROUNDS rounds, C=$C for ${D} s and C=1 for ${D1} s per run."
echo
"$LG" keyreport -in "$RES"
log "done in $((SECONDS - START)) s"

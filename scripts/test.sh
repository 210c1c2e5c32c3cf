#!/usr/bin/env bash
# The project's test command. Installs the real MCP peers the tests run against (pinned versions),
# then runs go vet, the unreachable-code check (scripts/deadcode.sh) and the race-enabled test
# suite. Runs unattended on a fresh machine. Every Node-based step and test runs on the one pinned
# Node.js in test/node (scripts/node.sh), whatever Node the machine has: the machine's npm is used
# only to fetch it (as root, without npm, Debian's npm is installed for that). The store's Postgres
# tests run against a throwaway cluster (scripts/postgres.sh; as root, without Postgres, Debian's
# postgresql is installed for that), and the shared-limit tests against a throwaway redis-server
# (scripts/redis.sh; as root, without it, Debian's redis-server is installed), both stopped when
# the script exits. Every step prints how long it
# took.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
GO_SDK_VERSION=v1.8.0 # keep in step with go.mod and internal/testpeers
# shellcheck source=node.sh
source "$ROOT/scripts/node.sh"
# shellcheck source=postgres.sh
source "$ROOT/scripts/postgres.sh"
# shellcheck source=redis.sh
source "$ROOT/scripts/redis.sh"
# shellcheck source=chromium.sh
source "$ROOT/scripts/chromium.sh"

step() {
	local name=$1
	shift
	echo "==> $name"
	local start=$SECONDS
	"$@"
	echo "==> $name: $((SECONDS - start))s"
}

install_go_fixture() {
	GOBIN="$ROOT/.tools/bin" go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$GO_SDK_VERSION"
}

# The OpenID provider the JWT/OIDC tests sign in at (zitadel/oidc's example OP; .tools/bin/server).
OIDC_PROVIDER_VERSION=v3.52.0 # keep in step with internal/testpeers OIDCProviderVersion
install_oidc_provider() {
	GOBIN="$ROOT/.tools/bin" go install "github.com/zitadel/oidc/v3/example/server@$OIDC_PROVIDER_VERSION"
}

total=$SECONDS
echo "go: $(go version)"
step "pinned node and npm (test/node)" ensure_pinned_node
echo "node: $(command -v node) $(node --version), npm: $(npm --version), MCPGW_NODE=$MCPGW_NODE"
step "npm ci test/peers" npm ci --prefix test/peers --no-audit --no-fund
step "npm ci test/clients" npm ci --prefix test/clients --no-audit --no-fund
step "go install everything-server@$GO_SDK_VERSION" install_go_fixture
step "go install zitadel oidc example provider@$OIDC_PROVIDER_VERSION" install_oidc_provider
step "throwaway postgres (MCPGW_TEST_DATABASE_URL)" start_test_postgres
step "throwaway redis (MCPGW_TEST_REDIS_URL)" start_test_redis
step "chromium for the admin UI browser tests (MCPGW_CHROMIUM)" ensure_chromium

export MCPGW_REQUIRE_PEERS=1
step "go vet" go vet ./...
step "deadcode" bash scripts/deadcode.sh
step "go test -race" go test -race -count=1 -timeout 25m ./...
# The held-stack tests skip under -race (its stack guard makes every goroutine outgrow 2 KB).
step "held-stack tests (no race detector)" go test -count=1 -run 'TestHeldStackStaysSmall|TestHandoffHeldStackIs2KB' ./internal/shallow ./internal/h1serve
# The official MCP conformance suite, directly against the Go SDK fixture and through the
# gateway in front of it; fails on any scored check that fails only through the gateway.
step "conformance (server and client legs, 2025-11-25 and 2026-07-28)" bash scripts/conformance.sh
echo "==> all steps: $((SECONDS - total))s"

#!/usr/bin/env bash
# Redis soak: three gateway processes sharing limits through one throwaway Redis (scripts/redis.sh)
# in front of the go-sdk fixture, C=30 modern tools/call for 60 s, one replica killed with SIGKILL
# at 30 s; prints calls lost, the shared rpm's accuracy and Redis commands per call. See
# docs/benchmarks.md, "Redis: shared limits and a replica failure".
#
#   bench/redis-soak.sh                               the full run
#   bench/redis-soak.sh -duration 20s -kill-at 10s    a shorter one
#   bench/redis-soak.sh -c 30 -replicas 3 -rpm 600 -out /tmp/redis-soak.md
#
# Needs redis-server (Debian's) and the fixture at .tools/bin/everything-server (bash
# scripts/test.sh installs it) or MCPGW_GO_FIXTURE.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export MCPGW_GO_FIXTURE=${MCPGW_GO_FIXTURE:-$PWD/.tools/bin/everything-server}
exec bash scripts/redis.sh go run ./bench/redissoak -repo "$PWD" "$@"

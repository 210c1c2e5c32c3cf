#!/usr/bin/env bash
# Fails when a function is unreachable from the project's main packages (golang.org/x/tools'
# deadcode, pinned below) and is not on scripts/deadcode-allow.txt. Allowlist lines are
# "path/to/file.go:Func  # reason" (methods as Type.Method) or "path/to/dir/  # reason" for a whole
# directory; positions are matched without line numbers, so edits elsewhere in a file keep an entry
# valid. Entries that no longer match anything are reported as stale but do not fail the run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
DEADCODE_VERSION=v0.52.0
ALLOW=scripts/deadcode-allow.txt

report=$(go run "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION" ./...)

# Each report line is "file.go:LINE:COL: unreachable func: Name".
awk '
	FNR == NR {
		sub(/#.*/, "")
		gsub(/[ \t]+/, "")
		if ($0 == "") next
		if ($0 ~ /\/$/) dirs[$0] = 0; else funcs[$0] = 0
		next
	}
	$0 == "" { next }
	{
		split($0, pos, ":")
		name = $0
		sub(/.*unreachable func: /, "", name)
		key = pos[1] ":" name
		if (key in funcs) { funcs[key]++; next }
		for (d in dirs) if (index(pos[1], d) == 1) { dirs[d]++; next }
		dead[++n] = $0
	}
	END {
		for (k in funcs) if (funcs[k] == 0) printf "deadcode: stale allowlist entry %s\n", k > "/dev/stderr"
		for (d in dirs) if (dirs[d] == 0) printf "deadcode: stale allowlist entry %s\n", d > "/dev/stderr"
		if (n == 0) exit 0
		printf "deadcode: %d unreachable function(s) not on %s; delete them, move test-only ones into a _test.go file, or allowlist them with a reason:\n", n, ALLOW > "/dev/stderr"
		for (i = 1; i <= n; i++) print "  " dead[i] > "/dev/stderr"
		exit 1
	}
' ALLOW="$ALLOW" "$ALLOW" - <<<"$report"
echo "deadcode: clean (allowlist: $ALLOW)"

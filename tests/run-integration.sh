#!/bin/sh
# run-integration.sh - runs every tests/integration/*.sh with RFSCK and TOOLS set.
# Each script exits 0 on success, 77 to skip (with a reason on stderr), else fails.
# Prints the closing line "N passed, N failed, N skipped".
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${RFSCK:?RFSCK must name the rfsck binary}"
export RFSCK TOOLS
export TOP=$(cd "$here/.." && pwd)
export SHARED=${SHARED:-$(cd "$TOP/../shared" 2>/dev/null && pwd || echo /nonexistent)}
pass=0; fail=0; skip=0
for t in "$here"/integration/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	work=$(mktemp -d "${TMPDIR:-/tmp}/rfsck-it.$name.XXXXXX")
	start=$(date +%s)
	WORK=$work sh "$t" >"$work.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $name (${secs}s)"; rm -rf "$work" "$work.log" ;;
	77) skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$work.log")"; rm -rf "$work" "$work.log" ;;
	*) fail=$((fail + 1)); echo "FAIL $name (exit $rc, ${secs}s); last lines:"; tail -n 30 "$work.log" | sed 's/^/    /' ;;
	esac
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

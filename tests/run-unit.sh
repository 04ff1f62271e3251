#!/bin/sh
# run-unit.sh BIN... - runs each cmocka test binary; fails if any fails.
set -u
fail=0; pass=0
for t in "$@"; do
	if "$t"; then pass=$((pass + 1)); else echo "FAILED: $t" >&2; fail=$((fail + 1)); fi
done
echo "unit test programs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

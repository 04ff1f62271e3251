#!/bin/sh
# reader_public_robust.sh - info, ls -R -l and cat of every listed file, on
# every image of ../shared/corpus-public (reference, syzkaller seeds, fuzzed,
# negative), under the ASan/UBSan build:
#   - exit status 0 or 8, never a crash, a sanitizer report or a hang (timeout);
#   - an exit 8 comes with exactly one line on stderr naming the reason
#     (info and cat; ls may also list per-entry errors before its last line);
#   - the image file is unchanged (sha256).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${SHARED:?}"
pub=$SHARED/corpus-public
[ -d "$pub" ] || { echo "no public corpus at $pub"; exit 77; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
TIMEOUT=${RFSCK_TEST_TIMEOUT:-60}
images=0; runs=0; ok=0; refused=0

# run NAME CMD...: runs one rfsck command, checks status and stderr.
run() {
	name=$1; shift
	set +e
	timeout "$TIMEOUT" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	set -e
	runs=$((runs + 1))
	if grep -q -e "AddressSanitizer" -e "runtime error" -e "LeakSanitizer" "$WORK/err"; then
		echo "SANITIZER REPORT: $name: $*"; cat "$WORK/err"; exit 1
	fi
	case $rc in
	0) ok=$((ok + 1)) ;;
	8) refused=$((refused + 1))
	   [ -s "$WORK/err" ] || { echo "exit 8 without a reason: $name: $*"; exit 1; } ;;
	124) echo "HANG (>${TIMEOUT}s): $name: $*"; exit 1 ;;
	*) echo "unexpected exit $rc: $name: $*"; cat "$WORK/err"; exit 1 ;;
	esac
	return 0
}

for src in $(find "$pub" -type f \( -name '*.xz' -o -name '*.gz' -o -name '*.bin' \) | sort); do
	img=$WORK/image
	case $src in
	*.xz) xz -dc "$src" >"$img" ;;
	*.gz) gzip -dc "$src" >"$img" ;;
	*) cp "$src" "$img" ;;
	esac
	chmod 0444 "$img"     # read-only: every reading command must still work
	images=$((images + 1))
	name=${src#$pub/}
	before=$(sha256sum "$img" | cut -d' ' -f1)
	run "$name" "$RFSCK" info "$img"
	[ "$rc" -ne 8 ] || [ "$(wc -l <"$WORK/err")" -eq 1 ] || { echo "info: more than one line"; cat "$WORK/err"; exit 1; }
	run "$name" "$RFSCK" info --json "$img"
	if [ "$rc" -eq 0 ]; then python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/out"; fi
	run "$name" "$RFSCK" ls -R -l "$img"
	run "$name" "$RFSCK" ls -R --json "$img"
	if [ "$rc" -eq 0 ] || [ -s "$WORK/out" ]; then
		python3 - "$WORK/out" >"$WORK/files" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
for e in d["entries"]:
    if e["type"] in ("file", "symlink"):
        print(e["path_hex"])
PY
		count=0
		while read -r hexpath && [ $count -lt 50 ]; do
			path=$(printf '%s' "$hexpath" | python3 -c 'import sys,os; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read().strip()))')
			run "$name" "$RFSCK" cat "$img" "$path"
			[ "$rc" -ne 8 ] || [ "$(wc -l <"$WORK/err")" -eq 1 ] || { echo "cat: more than one line"; cat "$WORK/err"; exit 1; }
			count=$((count + 1))
		done <"$WORK/files"
	fi
	after=$(sha256sum "$img" | cut -d' ' -f1)
	[ "$before" = "$after" ] || { echo "image changed: $name"; exit 1; }
	rm -f "$img"
done
echo "$images images, $runs runs: $ok exit 0, $refused exit 8, no crash, hang or sanitizer report"
[ "$images" -ge 90 ] || { echo "expected >= 90 public images, found $images"; exit 1; }

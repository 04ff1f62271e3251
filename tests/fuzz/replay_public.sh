#!/bin/sh
# replay_public.sh RFSCK PUBLIC WORK - the whole-mode contracts of the fuzz
# harnesses (modes_common.h M1-M3, fuzz_check.c C1-C4, fuzz_rebuild.c R1,
# fuzz_salvage.c S1-S3) on every image of PUBLIC/fuzzed (syzbot and
# reiserfs-devel reproducers of kernel bugs) and PUBLIC/negative, whole and
# uncut, through the ASan/UBSan rfsck: check --json, check -q, fix --dry-run,
# rebuild --dry-run --json and salvage.  Run by `make fuzz-regress` (so by
# `make test`): these are the fuzzed images of issue 9's acceptance, and the
# reader commands alone (tests/integration/reader_public_robust.sh) do not
# reach the check passes, the repairs, rebuild or salvage.
#
# Per image and command: no sanitizer report, no hang (RFS_FUZZ_TIMEOUT
# seconds, default 120), an exit status in the documented set, a reason on
# stderr with 8, the image (read-only, 0444) byte-identical afterwards; check
# --json is one JSON object whose exit/verdict match and whose status is the
# one its problems imply; check -q agrees; fix --dry-run exits 8 or as check
# did; rebuild --dry-run --json with 0 says the tree it would write checks
# "clean"; salvage with 0/4 writes report.json with the same exit and the
# image unchanged, and nothing outside OUTDIR.  Exit 0 when all hold, 1 with
# the failures listed, 77 when PUBLIC is missing.
set -u
RFSCK=${1:?usage: replay_public.sh RFSCK PUBLIC WORK}
PUBLIC=${2:?}
WORK=${3:?}
TIMEOUT=${RFS_FUZZ_TIMEOUT:-120}
[ -d "$PUBLIC/fuzzed" ] || { echo "replay_public: no $PUBLIC/fuzzed, skipped"; exit 77; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
mkdir -p "$WORK" || exit 1
images=0; runs=0; fail=0
by_status=""

bad() {
	echo "replay_public: FAIL $name: $*"
	sed -n '1,12p' "$WORK/err" | sed 's/^/    /'
	fail=$((fail + 1))
}

# run LABEL ALLOWED CMD...: runs one command; sets rc; fails on a sanitizer
# report, a hang, a status outside ALLOWED, 8 without a reason, or a changed
# image.
run() {
	label=$1 allowed=$2; shift 2
	timeout "$TIMEOUT" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	runs=$((runs + 1))
	by_status="$by_status $label:$rc"
	if grep -q -e "AddressSanitizer" -e "runtime error" -e "LeakSanitizer" "$WORK/err"; then
		bad "sanitizer report: $*"; rc=-1; return
	fi
	[ "$rc" -ne 124 ] || { bad "hang (> ${TIMEOUT} s): $*"; rc=-1; return; }
	case " $allowed " in
	*" $rc "*) ;;
	*) bad "exit $rc (allowed: $allowed): $*"; rc=-1; return ;;
	esac
	if [ "$rc" -eq 8 ] && ! grep -q "^rfsck $2: " "$WORK/err"; then
		bad "exit 8 without 'rfsck $2: reason' on stderr: $*"
	fi
	[ "$(sha256sum <"$img" | cut -d' ' -f1)" = "$before" ] || bad "the image changed: $*"
}

for src in $(find "$PUBLIC/fuzzed" "$PUBLIC/negative" -type f \( -name '*.xz' -o -name '*.gz' \) 2>/dev/null | sort); do
	name=${src#"$PUBLIC"/}
	img=$WORK/image
	rm -f "$img"
	case $src in
	*.xz) xz -dc "$src" >"$img" ;;
	*.gz) gzip -dc "$src" >"$img" ;;
	esac || { echo "replay_public: cannot decompress $src"; fail=$((fail + 1)); continue; }
	chmod 0444 "$img"
	before=$(sha256sum <"$img" | cut -d' ' -f1)
	images=$((images + 1))

	run check "0 4 6 8" "$RFSCK" check --json "$img"
	check_rc=$rc
	cp "$WORK/out" "$WORK/check.json"
	if [ "$rc" -ge 0 ] && [ "$rc" -ne 8 ]; then
		python3 - "$WORK/out" "$rc" <<'PY' >"$WORK/why" 2>&1 || bad "check --json: $(cat "$WORK/why")"
import json, sys
rc = int(sys.argv[2])
d = json.load(open(sys.argv[1]))
assert d["exit"] == rc, "exit %r, status %d" % (d["exit"], rc)
assert d["verdict"] == {0: "clean", 4: "needs-rebuild", 6: "fixable"}[rc], d["verdict"]
sev = {p["severity"] for p in d["problems"]}
implied = 4 if sev & {"needs-rebuild", "fatal"} else 6 if "fixable" in sev else 0
assert implied == rc, "problems imply %d, status %d" % (implied, rc)
PY
	elif [ "$rc" -eq 8 ] && [ -s "$WORK/out" ]; then
		bad "check --json printed on stdout with exit 8"
	fi
	run check-q "0 4 6 8" "$RFSCK" check -q "$img"
	[ "$rc" -lt 0 ] || [ "$check_rc" -lt 0 ] || [ "$rc" -eq "$check_rc" ] ||
		bad "check -q exit $rc, check --json exit $check_rc"
	run fix-dry-run "0 4 6 8" "$RFSCK" fix --dry-run -q "$img"
	[ "$rc" -lt 0 ] || [ "$check_rc" -lt 0 ] || [ "$rc" -eq 8 ] || [ "$rc" -eq "$check_rc" ] ||
		bad "fix --dry-run exit $rc, check exit $check_rc"
	run rebuild-dry-run "0 8" "$RFSCK" rebuild --dry-run --json "$img"
	if [ "$rc" -eq 0 ]; then
		python3 - "$WORK/out" "$WORK/check.json" <<'PY' >"$WORK/why" 2>&1 || bad "rebuild --dry-run --json: $(cat "$WORK/why")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "dry-run", d["mode"]
assert d["leaves"]["accepted"] >= 1, d["leaves"]
# The rebuilt tree must check clean.  Superblock faults that rebuild does not
# repair (journal placement, a device shorter than the block count) may stay,
# but only those the source image already had.
after = d["check_after"]
if after != "clean":
    src = {p["code"] for p in json.load(open(sys.argv[2]))["problems"]}
    left = after.split(":", 1)[1].split()
    assert left and all(c.startswith("SB_") and c in src for c in left), \
        "check_after: %s (source: %s)" % (after, sorted(src))
PY
	fi
	out=$WORK/salvage/a/out
	rm -rf "$WORK/salvage"; mkdir -p "$WORK/salvage/a"
	run salvage "0 4 8" "$RFSCK" salvage -q "$img" "$out"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 4 ]; then
		python3 - "$out/report.json" "$rc" <<'PY' >"$WORK/why" 2>&1 || bad "salvage report.json: $(cat "$WORK/why")"
import json, sys
rc = int(sys.argv[2])
d = json.load(open(sys.argv[1]))
assert d["exit"] == rc, "exit %r, status %d" % (d["exit"], rc)
assert d["image_sha256"]["unchanged"] is True, d["image_sha256"]
assert d["status"] == ("complete" if rc == 0 else "incomplete"), d["status"]
PY
	fi
	[ "$(ls -A "$WORK/salvage")" = a ] && [ "$(ls -A "$WORK/salvage/a" | grep -v '^out$')" = "" ] ||
		bad "salvage created something outside OUTDIR"
	chmod -R u+rwX "$WORK/salvage" 2>/dev/null; rm -rf "$WORK/salvage"
	rm -f "$img"
done
# One line per command with how often each status came out.
summary=$(printf '%s\n' $by_status | awk -F: '{ n[$1 " " $2]++ } END { for (k in n) print k, n[k] }' |
	sort | awk '{ if ($1 != c) { printf "%s%s:", (c == "" ? "" : "; "), $1; c = $1 }
	              printf " %s x%s", $2, $3 }')
echo "replay_public: $images images, $runs runs (status x count: $summary), $fail failure(s)"
[ "$images" -ge 30 ] || { echo "replay_public: expected >= 30 fuzzed/negative images, found $images"; exit 1; }
[ "$fail" -eq 0 ]

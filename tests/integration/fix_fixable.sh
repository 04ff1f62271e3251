#!/bin/sh
# fix_fixable.sh - `rfsck fix` on fixable damage of kernel-written images:
#   1. check: exit 6 with the damage's own problem code;
#   2. fix --dry-run: image unchanged; its repairs and blocks are recorded;
#   3. fix --yes (undo log): exit 1, the same repairs and the same blocks as the
#      dry run; check exit 0; reiserfsck --check finds no corruption; every
#      ground-truth file reads back intact (manifest);
#   4. undo: the image is byte-identical to the damaged one again;
#   5. the same repair with --output NEW: the damaged image untouched, NEW equal
#      to the in-place result.
# Cases: tests/lib/fixable_damage.py recipes, corpus damage recipes that are
# fixable (zero-bitmaps, zero-journal-header), and the power-cut images with
# committed transactions still in the journal.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
codes() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(sorted(p["code"] for p in d["problems"] if p["severity"]=="fixable")))' "$1"; }
blocks() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blocks_written"])' "$1"; }
n=0

# run_case NAME DAMAGED MANIFEST EXPECTED_CODE
run_case() {
	name=$1; img=$2; manifest=$3; want=$4
	rm -f "$img.rfsck-undo" "$W/out.img"
	set +e
	"$RFSCK" check --json "$img" >"$W/c1.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] || { echo "$name: check exit $rc, 6 expected"; head -c 2000 "$W/c1.json"; exit 1; }
	grep -q "\"$want\"" "$W/c1.json" || { echo "$name: $want not reported"; exit 1; }
	damaged=$(sum "$img")
	set +e
	"$RFSCK" fix --dry-run --json "$img" >"$W/dry.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] || { echo "$name: dry-run exit $rc"; exit 1; }
	[ "$(sum "$img")" = "$damaged" ] || { echo "$name: dry-run changed the image"; exit 1; }
	[ ! -e "$img.rfsck-undo" ] || { echo "$name: dry-run made an undo file"; exit 1; }
	cp "$img" "$W/copy.img"
	set +e
	"$RFSCK" fix --yes --json "$img" >"$W/real.json"; rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "$name: fix exit $rc, 1 expected"; cat "$W/real.json"; exit 1; }
	[ "$(codes "$W/dry.json")" = "$(codes "$W/real.json")" ] || { echo "$name: dry-run and real repairs differ"; exit 1; }
	[ "$(blocks "$W/dry.json")" = "$(blocks "$W/real.json")" ] || { echo "$name: dry-run and real blocks differ: $(blocks "$W/dry.json") vs $(blocks "$W/real.json")"; exit 1; }
	"$RFSCK" check -q "$img" || { echo "$name: check after fix: exit $?"; "$RFSCK" check "$img"; exit 1; }
	cp "$img" "$W/rf.img"
	set +e
	reiserfsck --check --yes "$W/rf.img" >"$W/rf.log" 2>&1; rrc=$?
	set -e
	[ "$rrc" -eq 0 ] || { echo "$name: reiserfsck --check after fix: exit $rrc"; tail -20 "$W/rf.log"; exit 1; }
	if [ "$want" = ENTRY_POINTS_NOWHERE ] || [ "$want" = DIR_LOOP ]; then
		# the damaged name is removed: the ground truth without it, and its
		# file with one link less
		python3 - "$W/c1.json" "$want" "$manifest" "$W/expected.jsonl" "$name" <<'PY'
import json, sys
c1, want, src, dst, name = sys.argv[1:]
paths = [p["path"] for p in json.load(open(c1))["problems"] if p["code"] == want]
assert len(paths) == 1, paths
rows = [json.loads(l) for l in open(src)]
gone = [r for r in rows if r["path"] == paths[0]]
assert len(gone) == 1, (paths, gone)
parent = paths[0].rsplit("/", 1)[0] or "/"
base = paths[0].rsplit("/", 1)[1].encode()
# the directory loses the entry: 16 bytes of head plus the name, padded to 8
# bytes in 3.6 directories, unpadded in 3.5 ones
slot = len(base) if name.startswith("r35") else (len(base) + 7) // 8 * 8
with open(dst, "w") as f:
    for r in rows:
        if r["path"] == paths[0]:
            continue
        if r.get("ino") == gone[0].get("ino") and r["type"] == "file":
            r["nlink"] -= 1
        if r["path"] == parent:
            r["size"] -= 16 + slot
        f.write(json.dumps(r) + "\n")
PY
		manifest=$W/expected.jsonl
	fi
	python3 "$TOP/tests/lib/compare_manifest.py" "$RFSCK" "$img" "$manifest" >/dev/null || {
		echo "$name: files differ from the ground truth after fix"; python3 "$TOP/tests/lib/compare_manifest.py" "$RFSCK" "$img" "$manifest"; exit 1; }
	fixed=$(sum "$img")
	"$RFSCK" undo -q "$img.rfsck-undo" "$img" >/dev/null
	[ "$(sum "$img")" = "$damaged" ] || { echo "$name: undo did not restore the damaged image"; exit 1; }
	"$RFSCK" fix --yes -q --output "$W/out.img" "$W/copy.img" || [ $? -eq 1 ]
	[ "$(sum "$W/copy.img")" = "$damaged" ] || { echo "$name: --output changed its source"; exit 1; }
	[ "$(sum "$W/out.img")" = "$fixed" ] || { echo "$name: --output result differs from the in-place fix"; exit 1; }
	n=$((n + 1))
	echo "ok $name ($want)"
}

for base in r36-features-r5 r35-features-r5; do
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/clean.img"
	m=$TOP/corpus/images/$base.manifest.jsonl
	for r in leaf-free-space dc-size item-flags entry-state tree-height free-count oid-map root-nlink root-size root-blocks dotdot dangling-entry dir-second-name version hash-code trans-max trans-max-both; do
		cp "$W/clean.img" "$W/d.img"
		want=$(python3 "$TOP/tests/lib/fixable_damage.py" "$r" "$W/d.img")
		run_case "$base/$r" "$W/d.img" "$m" "$want"
		case $r in hash-code|trans-max*)
			# the superblock's fields come back from evidence: the names'
			# hash, the journal header's limit (and its batch), or the
			# kernel's default limit when the header has none
			cmp -s "$W/out.img" "$W/clean.img" || {
				echo "$base/$r: the fixed image differs from the clean one:"; cmp -l "$W/out.img" "$W/clean.img" | head; exit 1; } ;;
		esac
	done
	# the version fix writes back what the kernel wrote: 0 for 3.5, 2 for 3.6
	v_clean=$(od -A n -t u2 -j 65608 -N 2 "$W/clean.img" | tr -d ' ')
	v_fixed=$(od -A n -t u2 -j 65608 -N 2 "$W/out.img" | tr -d ' ')
	[ "$v_fixed" = "$v_clean" ] || { echo "$base/version: fixed version $v_fixed, the kernel wrote $v_clean"; exit 1; }
	for r in zero-bitmaps zero-journal-header; do
		python3 "$TOP/corpus/tools/damage.py" "$r" "$W/clean.img" "$W/d.img" --seed 1 --record "$W/rec.json" >/dev/null
		case $r in zero-bitmaps) want=BITMAP_USED_MARKED_FREE ;; *) want=JOURNAL_HEADER_MISMATCH ;; esac
		run_case "$base/$r" "$W/d.img" "$m" "$want"
	done
done
# the hash comes from the names, not a default: tea and rupasov volumes
for base in r36-hash-tea r36-hash-rupasov; do
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/clean.img"
	cp "$W/clean.img" "$W/d.img"
	want=$(python3 "$TOP/tests/lib/fixable_damage.py" hash-code "$W/d.img")
	run_case "$base/hash-code" "$W/d.img" "$TOP/corpus/images/$base.manifest.jsonl" "$want"
	cmp -s "$W/out.img" "$W/clean.img" || { echo "$base/hash-code: the fixed image differs from the clean one"; exit 1; }
done
for base in r36-crash-commit r36-crash-safelink; do
	xz -dc "$TOP/corpus/images/$base.prereplay.img.xz" >"$W/d.img"
	run_case "$base.prereplay" "$W/d.img" "$TOP/corpus/images/$base.manifest.jsonl" JOURNAL_PENDING
done
echo "$n fixable cases repaired, verified, undone and reproduced with --output"

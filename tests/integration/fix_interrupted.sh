#!/bin/sh
# fix_interrupted.sh - `rfsck fix` stopped after its Nth block write (the test
# build's RFSCK_TEST_STOP_AFTER_WRITE hook: that write and all later ones never
# reach the image, as in a crash), for every N from 1 to one past the number of
# writes the repair needs.  Each run must end in exit 8 with an undo file
# that restores the damaged image byte for byte, or (N past the end) in exit 1;
# and after every interrupted run, a second `fix` (new undo file) must finish
# the job: exit 1, a clean check, and reiserfsck --check finds no corruption.
# SQLite's before-or-after rule for images.
# The safe-link and relink repairs change the tree's shape; each of their
# commits is a journal transaction (include/rfs/tree_edit.h), so a stop at
# any write leaves the old tree or a transaction the rerun replays: the
# power-cut image with two pending unlinks, and an orphaned directory tree
# relinked with --relink (lost+found made, then the link), are swept too.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
"$RFSCK" --version >/dev/null
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
cases=0; runs=0
sweep() {   # NAME DAMAGED_IMAGE [FIX OPTION]
	name=$1; src=$2; opt=${3:-}
	damaged=$(sum "$src")
	cp "$src" "$W/probe.img"
	"$RFSCK" fix --yes --json --no-undo $opt "$W/probe.img" >"$W/probe.json" || [ $? -eq 1 ]
	writes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["writes"])' "$W/probe.json")
	[ "$writes" -ge 2 ] || { echo "$name: only $writes writes, not a useful sweep"; exit 1; }
	n=1
	while [ "$n" -le $((writes + 1)) ]; do
		cp "$src" "$W/x.img"
		rm -f "$W/x.img.rfsck-undo" "$W/x.img.second-undo"
		set +e
		RFSCK_TEST_STOP_AFTER_WRITE=$n "$RFSCK" fix --yes -q $opt "$W/x.img" >/dev/null 2>"$W/err"
		rc=$?
		set -e
		runs=$((runs + 1))
		if [ "$n" -le "$writes" ]; then
			[ "$rc" -eq 8 ] || { echo "$name: stop at write $n: exit $rc, 8 expected"; cat "$W/err"; exit 1; }
			cp "$W/x.img" "$W/y.img"
			"$RFSCK" undo -q "$W/x.img.rfsck-undo" "$W/y.img" >/dev/null
			[ "$(sum "$W/y.img")" = "$damaged" ] || { echo "$name: undo after stop at write $n does not restore"; exit 1; }
			set +e
			"$RFSCK" fix --yes -q $opt --undo "$W/x.img.second-undo" "$W/x.img" >/dev/null 2>"$W/err"
			rc=$?
			set -e
			[ "$rc" -eq 1 ] || { echo "$name: rerun after stop at write $n: exit $rc"; cat "$W/err"; exit 1; }
		else
			[ "$rc" -eq 1 ] || { echo "$name: no stop ($n > $writes writes): exit $rc"; cat "$W/err"; exit 1; }
		fi
		"$RFSCK" check -q "$W/x.img" || { echo "$name: not clean after stop at $n and rerun"; exit 1; }
		cp "$W/x.img" "$W/rf.img"
		reiserfsck --check --yes -q "$W/rf.img" >"$W/rf.log" 2>&1 ||
			{ echo "$name: reiserfsck finds corruption after stop at $n and rerun"; tail -5 "$W/rf.log"; exit 1; }
		n=$((n + 1))
	done
	cases=$((cases + 1))
	echo "ok $name: $writes writes, stopped after each"
}
xz -dc "$TOP/corpus/images/r36-crash-commit.prereplay.img.xz" >"$W/d1.img"
sweep crash-commit-journal "$W/d1.img"
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/d2.img"
for r in leaf-free-space dc-size root-nlink tree-height free-count; do
	python3 "$TOP/tests/lib/fixable_damage.py" "$r" "$W/d2.img" >/dev/null
done
python3 "$TOP/corpus/tools/damage.py" zero-bitmaps "$W/d2.img" "$W/d3.img" --seed 1 --record "$W/r.json" >/dev/null
sweep combined-damage "$W/d3.img"
xz -dc "$TOP/corpus/images/r36-crash-safelink.prereplay.img.xz" >"$W/d4.img"
sweep crash-safelink-unlinks "$W/d4.img"
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/d5.img"
python3 "$TOP/tests/lib/fixable_damage.py" orphan "$W/d5.img" /deep >/dev/null
sweep relink-directory-tree "$W/d5.img" --relink
echo "$cases cases, $runs interrupted runs: undo restores, a rerun finishes"

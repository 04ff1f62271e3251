#!/bin/sh
# rebuild_interrupted.sh - `rfsck rebuild` stopped after its Nth block write
# (the test build's RFSCK_TEST_STOP_AFTER_WRITE hook: that write and every
# later one never reach the image, as in a crash or SIGKILL at that moment),
# for every N from 1 to one past the writes the rebuild needs.  Each stopped
# run must exit 8 and leave an undo file that restores the damaged image byte
# for byte; and after every stopped run, a second rebuild (new undo file) on
# the half-written image must finish: exit 1, a clean check, and every file of
# the ground truth intact (the damage here loses no leaf).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
"$RFSCK" --version >/dev/null
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
runs=0; cases=0
sweep() {   # NAME DAMAGED_IMAGE BASE
	name=$1; src=$2; base=$3
	damaged=$(sum "$src")
	cp "$src" "$W/probe.img"
	"$RFSCK" rebuild --yes --json --no-undo "$W/probe.img" >"$W/probe.json" || [ $? -eq 1 ]
	writes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blocks_written"])' "$W/probe.json")
	[ "$writes" -ge 3 ] || { echo "$name: only $writes writes, not a useful sweep"; exit 1; }
	# blocks_written counts distinct blocks; a block written twice is one more write
	n=1
	while [ "$n" -le $((writes + 3)) ]; do
		cp "$src" "$W/x.img"
		rm -f "$W/x.img.rfsck-undo" "$W/x.img.second-undo"
		set +e
		RFSCK_TEST_STOP_AFTER_WRITE=$n "$RFSCK" rebuild --yes -q "$W/x.img" >/dev/null 2>"$W/err"
		rc=$?
		set -e
		runs=$((runs + 1))
		if [ "$rc" -eq 8 ]; then
			cp "$W/x.img" "$W/y.img"
			"$RFSCK" undo -q "$W/x.img.rfsck-undo" "$W/y.img" >/dev/null
			[ "$(sum "$W/y.img")" = "$damaged" ] || { echo "$name: undo after stop at write $n does not restore"; exit 1; }
			set +e
			"$RFSCK" rebuild --yes -q --undo "$W/x.img.second-undo" "$W/x.img" >/dev/null 2>"$W/err"
			rc=$?
			set -e
			[ "$rc" -eq 1 ] || { echo "$name: rerun after stop at write $n: exit $rc"; cat "$W/err"; exit 1; }
		else
			[ "$rc" -eq 1 ] || { echo "$name: stop at write $n: exit $rc"; cat "$W/err"; exit 1; }
			last_clean=$n
		fi
		"$RFSCK" check -q "$W/x.img" || { echo "$name: not clean after stop at $n and rerun"; exit 1; }
		python3 "$TOP/corpus/tools/read-rfsck" "$RFSCK" "$W/x.img" "$W/x.manifest.jsonl" >/dev/null 2>&1
		python3 "$TOP/corpus/tools/score.py" --json "$TOP/corpus/images/$base.manifest.jsonl" "$W/x.manifest.jsonl" >"$W/score.json"
		python3 - "$W/score.json" "$name" "$n" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
if not (s["intact"] == s["truth_entries"] and s["foreign"] == 0 and s["lost_found"] == 0):
    sys.exit("%s: after stop at write %s: %s" % (sys.argv[2], sys.argv[3], s))
PY
		n=$((n + 1))
	done
	[ -n "${last_clean:-}" ] || { echo "$name: no run finished without a stop"; exit 1; }
	cases=$((cases + 1))
	echo "ok $name: $writes blocks written, stopped after each write"
}
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/c.img"
python3 "$TOP/corpus/tools/damage.py" zero-internal "$W/c.img" "$W/d1.img" --seed 1 --record "$W/r.json" >/dev/null
sweep features-zero-internal "$W/d1.img" r36-features-r5
python3 "$TOP/corpus/tools/damage.py" zero-bitmaps "$W/c.img" "$W/d2.img" --seed 1 --record "$W/r.json" >/dev/null
sweep features-zero-bitmaps "$W/d2.img" r36-features-r5
echo "$cases cases, $runs interrupted runs: undo restores, a rerun finishes"

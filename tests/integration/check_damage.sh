#!/bin/sh
# check_damage.sh - `rfsck check` on the corpus damage recipes
# (corpus/tools/damage.py, seeded) applied to copies of kernel-written images:
# each damage is detected with the right exit status and a problem code that
# names what was damaged, the damaged copy stays byte-identical, and the JSON
# output parses.  Expectations (recipe exit code...):
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
damage=$TOP/corpus/tools/damage.py
expect() {   # recipe exit code
	case $1 in
	zero-root) echo "4 NODE_BAD_LEVEL" ;;
	zero-internal) echo "4 NODE_BAD_LEVEL" ;;
	zero-bitmaps) echo "6 BITMAP_USED_MARKED_FREE" ;;
	zero-super) echo "8 -" ;;
	zero-leaves) echo "4 NODE_BAD_LEVEL" ;;
	truncate) echo "4 SB_DEVICE_TOO_SMALL" ;;
	zero-journal-header) echo "6 JOURNAL_HEADER_MISMATCH" ;;
	flip-leaves) echo "4 -" ;;
	esac
}
n=0
for base in r36-features-r5 r35-features-r5 r36-hash-tea r36-hash-rupasov r36-stdjournal-r5; do
	src=$TOP/corpus/images/$base.img.xz
	[ -f "$src" ] || { echo "missing $src"; exit 1; }
	xz -dc "$src" >"$WORK/clean.img"
	for recipe in zero-root zero-internal zero-bitmaps zero-super zero-leaves flip-leaves truncate zero-journal-header; do
		for seed in 1 2; do
			python3 "$damage" "$recipe" "$WORK/clean.img" "$WORK/d.img" --seed "$seed" \
				--record "$WORK/d.json" >/dev/null
			before=$(sha256sum "$WORK/d.img" | cut -d' ' -f1)
			set +e
			"$RFSCK" check --json "$WORK/d.img" >"$WORK/out.json" 2>"$WORK/err"
			rc=$?
			set -e
			set -- $(expect "$recipe")
			[ "$rc" -eq "$1" ] || { echo "$base/$recipe/$seed: exit $rc, $1 expected"; cat "$WORK/err" "$WORK/out.json" | head -40; exit 1; }
			if [ "$rc" -ne 8 ]; then
				python3 - "$WORK/out.json" "$2" "$rc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
codes = {p["code"] for p in d["problems"]}
assert d["exit"] == int(sys.argv[3]), d["exit"]
assert sys.argv[2] == "-" or sys.argv[2] in codes, (sys.argv[2], codes)
sev = {"4": "needs-rebuild", "6": "fixable"}[sys.argv[3]]
assert any(p["severity"] == sev for p in d["problems"]), codes
PY
			else
				[ "$(wc -l <"$WORK/err")" -eq 1 ] || { echo "exit 8 needs one line"; exit 1; }
			fi
			after=$(sha256sum "$WORK/d.img" | cut -d' ' -f1)
			[ "$before" = "$after" ] || { echo "check wrote to $base/$recipe"; exit 1; }
			n=$((n + 1))
		done
	done
done
echo "$n damaged images: every damage detected with the expected status and code"

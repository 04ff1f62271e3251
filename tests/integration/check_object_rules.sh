#!/bin/sh
# check_object_rules.sh - the object rules of `rfsck check` that only a rebuild
# repairs (tests/lib/rebuild_damage.py): each damage is reported with its
# code and exit 4, fix refuses (exit 4, image unchanged), reiserfsck --check
# also finds corruption, and `rfsck rebuild` gives an image that rfsck check
# and reiserfsck --check both find clean.  Then the one object rule fix repairs
# (a flipped directory mode over a file's items): check exit 6 MODE_WRONG, and
# both fix and rebuild give back every file byte for byte (salvage compared
# with the undamaged image's).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
n=0
for r in dir-item-direct tail-cross split-indirect split-direct swap-leaves; do
	xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/d.img"
	want=$(python3 "$TOP/tests/lib/rebuild_damage.py" "$r" "$W/d.img")
	set +e
	"$RFSCK" check --json "$W/d.img" >"$W/c.json"; rc=$?
	set -e
	[ "$rc" -eq 4 ] || { echo "$r: check exit $rc, 4 expected"; exit 1; }
	grep -q "\"$want\"" "$W/c.json" || { echo "$r: $want not reported"; head -c 1500 "$W/c.json"; exit 1; }
	before=$(sum "$W/d.img")
	set +e
	"$RFSCK" fix --yes -q "$W/d.img" >/dev/null 2>&1; rc=$?
	set -e
	[ "$rc" -eq 4 ] && [ "$(sum "$W/d.img")" = "$before" ] || { echo "$r: fix exit $rc or changed the image"; exit 1; }
	cp "$W/d.img" "$W/rf.img"
	set +e
	reiserfsck --check --yes "$W/rf.img" >"$W/rf.log" 2>&1; rrc=$?
	set -e
	[ "$rrc" -ne 0 ] || { echo "$r: reiserfsck --check finds nothing (exit 0)"; exit 1; }
	rm -f "$W/out.img"
	set +e
	"$RFSCK" rebuild --yes -q --output "$W/out.img" "$W/d.img" >/dev/null 2>"$W/err"; rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "$r: rebuild exit $rc"; cat "$W/err"; exit 1; }
	"$RFSCK" check -q "$W/out.img" || { echo "$r: rebuilt image not clean"; "$RFSCK" check "$W/out.img" | head; exit 1; }
	set +e
	reiserfsck --check --yes "$W/out.img" >"$W/rf.log" 2>&1; rrc=$?
	set -e
	[ "$rrc" -eq 0 ] || { echo "$r: reiserfsck --check of the rebuilt image: exit $rrc"; tail -5 "$W/rf.log"; exit 1; }
	echo "ok $r: $want (reiserfsck exit $rrc after rebuild)"
	n=$((n + 1))
done
echo "$n object-rule damages reported and rebuilt"

# same_files A B: the files, links and directories salvaged from images A and B
# are identical (content, type, symlink targets)
same_files() {
	rm -rf "$W/sa" "$W/sb"
	"$RFSCK" salvage -q "$1" "$W/sa" >/dev/null 2>&1 || { echo "salvage of $1 failed"; return 1; }
	"$RFSCK" salvage -q "$2" "$W/sb" >/dev/null 2>&1 || { echo "salvage of $2 failed"; return 1; }
	diff -r --no-dereference "$W/sa/root" "$W/sb/root"
}
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/orig.img"
cp "$W/orig.img" "$W/d.img"
want=$(python3 "$TOP/tests/lib/rebuild_damage.py" dir-mode-file "$W/d.img")
[ "$want" = MODE_WRONG ] || { echo "dir-mode-file: recipe says $want"; exit 1; }
set +e
"$RFSCK" check --json "$W/d.img" >"$W/c.json"; rc=$?
set -e
[ "$rc" -eq 6 ] || { echo "dir-mode-file: check exit $rc, 6 expected"; exit 1; }
python3 - "$W/c.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
codes = sorted(p["code"] for p in j["problems"] if p["severity"] != "info")
assert codes == ["MODE_WRONG"], codes
PY
cp "$W/d.img" "$W/r.img"
rm -f "$W/out.img"
set +e
"$RFSCK" rebuild --yes -q --output "$W/out.img" "$W/d.img" >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "dir-mode-file: rebuild exit $rc, 1 expected"; exit 1; }
same_files "$W/orig.img" "$W/out.img" || { echo "dir-mode-file: rebuild lost or changed files"; exit 1; }
set +e
"$RFSCK" fix --yes -q "$W/d.img" >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "dir-mode-file: fix exit $rc, 1 expected"; exit 1; }
"$RFSCK" check -q "$W/d.img" || { echo "dir-mode-file: not clean after fix"; exit 1; }
same_files "$W/orig.img" "$W/d.img" || { echo "dir-mode-file: fix lost or changed files"; exit 1; }
set +e
reiserfsck --check --yes "$W/d.img" >"$W/rf.log" 2>&1; rrc=$?
set -e
[ "$rrc" -eq 0 ] || { echo "dir-mode-file: reiserfsck --check after fix: exit $rrc"; tail -5 "$W/rf.log"; exit 1; }
echo "ok dir-mode-file: MODE_WRONG fixed, every file as before (fix and rebuild)"

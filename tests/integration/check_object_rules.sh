#!/bin/sh
# check_object_rules.sh - the object rules of `rfsck check` that only a rebuild
# repairs (tests/lib/rebuild_damage.py): each damage is reported with its
# code and exit 4, fix refuses (exit 4, image unchanged), reiserfsck --check
# also finds corruption, and `rfsck rebuild` gives an image that rfsck check
# and reiserfsck --check both find clean.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
n=0
for r in dir-mode-file tail-cross; do
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

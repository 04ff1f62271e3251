#!/bin/sh
# test-kernel.sh [IMAGE_NAME...] - decompress shipped images (default: three
# of them) to the scratch dir, read them back through the 6.1 kernel
# (read-kernel, on a copy, mounted ro) and compare with the shipped manifest
# using score.py.  Passes only if every entry is intact, nothing is missing,
# corrupted or foreign, and no metadata differs.  Prints 'N passed, N failed'.
#
# test-kernel.sh --rebuilt [IMAGE_NAME:RECIPE...] - the kernel reads images
# that rfsck rebuilt: each shipped image is damaged with corpus/tools/damage.py
# RECIPE --seed 1 (default cases: r36-features-r5:zero-root,
# r36-features-r5:zero-internal, r35-features-r5:zero-root, r36-nested:zero-root),
# `$RFSCK rebuild --yes -q --json --output REBUILT DAMAGED` must exit 1 and
# leave DAMAGED unchanged, and the 6.1 kernel's view of REBUILT must hold every
# ground-truth entry intact with the same criteria as above (0 corrupted,
# missing, foreign, /lost+found entries, metadata differences).  RFSCK
# defaults to the repository's ./rfsck.
#
# test-kernel.sh --fixed [IMAGE_NAME:RECIPE...] - the kernel reads and writes
# images that `rfsck fix` repaired (corpus/tools/fixed_kernel.py: cases, damage,
# oracles; default: the 56 cases of `fixed_kernel.py list`).  Per case: rfsck
# check of the damaged image exits 6; `$RFSCK fix --yes` exits 1; rfsck check
# then exits 0 and reiserfsck --check finds no corruption; the 6.1 kernel
# (up to RFSCK_KERNEL_BATCH images per boot, default 25) mounts it read-only and
# reads every ground-truth entry intact, then writes, re-reads and deletes new
# files read-write, with no reiserfs warning, error, replay or safe-link
# completion in its log; after that rfsck check and reiserfsck --check are
# clean again.  Prints 'N passed, N failed (images repaired by rfsck fix)'.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
C=$(dirname "$HERE")
CACHE=${RFSCK_CORPUS_CACHE:-$C/build}
mkdir -p "$CACHE/test-kernel"
perfect='import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["intact"]==s["truth_entries"] and s["corrupted"]==s["missing"]==s["foreign"]==s["meta_differs"]==s["lost_found"]==0 else 1)'
if [ "${1:-}" = --rebuilt ]; then
    shift
    RFSCK=${RFSCK:-$(dirname "$C")/rfsck}
    [ -x "$RFSCK" ] || { echo "test-kernel --rebuilt: no rfsck binary at $RFSCK (set RFSCK or run make)"; exit 1; }
    [ $# -gt 0 ] || set -- r36-features-r5:zero-root r36-features-r5:zero-internal r35-features-r5:zero-root r36-nested:zero-root
    D="$CACHE/test-kernel/rebuilt"
    mkdir -p "$D"
    pass=0; fail=0
    for spec in "$@"; do
        n=${spec%%:*}; r=${spec#*:}
        m="$C/images/$n.manifest.jsonl"
        xz -dc "$C/images/$n.img.xz" > "$D/$n.orig.img"
        python3 "$HERE/damage.py" "$r" "$D/$n.orig.img" "$D/$n.$r.damaged.img" --seed 1 --manifest "$m" \
            --record "$D/$n.$r.damage.json" > /dev/null
        rm -f "$D/$n.orig.img" "$D/$n.$r.rebuilt.img"
        before=$(sha256sum "$D/$n.$r.damaged.img" | cut -d' ' -f1)
        set +e
        "$RFSCK" rebuild --yes -q --json --output "$D/$n.$r.rebuilt.img" "$D/$n.$r.damaged.img" \
            > "$D/$n.$r.report.json" 2> "$D/$n.$r.rebuild.err"
        rc=$?
        set -e
        after=$(sha256sum "$D/$n.$r.damaged.img" | cut -d' ' -f1)
        out="$D/$n.$r.kernel.manifest.jsonl"
        if [ "$rc" -ne 1 ] || [ ! -s "$D/$n.$r.rebuilt.img" ]; then
            echo "FAIL $n $r: rfsck rebuild exit $rc (1 expected); $(tail -n 3 "$D/$n.$r.rebuild.err" | tr '\n' ' ')"
            fail=$((fail+1))
        elif [ "$before" != "$after" ]; then
            echo "FAIL $n $r: rfsck rebuild --output changed the damaged image"
            fail=$((fail+1))
        elif python3 "$HERE/read-kernel" "$D/$n.$r.rebuilt.img" "$out"; then
            if python3 "$HERE/score.py" --json "$m" "$out" | python3 -c "$perfect"; then
                echo "PASS $n $r, rebuilt by rfsck: $(python3 "$HERE/score.py" "$m" "$out" | sed -n 1p)"
                pass=$((pass+1))
            else
                echo "FAIL $n $r, rebuilt by rfsck:"; python3 "$HERE/score.py" --details 10 "$m" "$out"
                fail=$((fail+1))
            fi
        else
            echo "FAIL $n $r: the kernel could not mount/read the rebuilt image (see $out.run.json)"
            fail=$((fail+1))
        fi
        rm -f "$D/$n.$r.damaged.img" "$D/$n.$r.rebuilt.img"
    done
    echo "$pass passed, $fail failed (images rebuilt by rfsck)"
    [ "$fail" -eq 0 ]
    exit
fi
if [ "${1:-}" = --fixed ]; then
    shift
    RFSCK=${RFSCK:-$(dirname "$C")/rfsck}
    [ -x "$RFSCK" ] || { echo "test-kernel --fixed: no rfsck binary at $RFSCK (set RFSCK or run make)"; exit 1; }
    exec python3 "$HERE/fixed_kernel.py" test "$RFSCK" "$@"
fi
[ $# -gt 0 ] || set -- r36-features-r5 r35-features-r5 r36-crash-safelink
pass=0; fail=0
for n in "$@"; do
    img="$CACHE/test-kernel/$n.img"
    out="$CACHE/test-kernel/$n.kernel.manifest.jsonl"
    xz -dc "$C/images/$n.img.xz" > "$img"
    if python3 "$HERE/read-kernel" "$img" "$out"; then
        s=$(python3 "$HERE/score.py" --json "$C/images/$n.manifest.jsonl" "$out")
        if echo "$s" | python3 -c "$perfect"; then
            echo "PASS $n: $(python3 "$HERE/score.py" "$C/images/$n.manifest.jsonl" "$out" | sed -n 1p)"
            pass=$((pass+1))
        else
            echo "FAIL $n:"; python3 "$HERE/score.py" --details 10 "$C/images/$n.manifest.jsonl" "$out"
            fail=$((fail+1))
        fi
    else
        echo "FAIL $n: kernel could not mount/read the image (see $out.run.json)"
        fail=$((fail+1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/sh
# test-kernel.sh [IMAGE_NAME...] - decompress shipped images (default: three
# of them) to the scratch dir, read them back through the 6.1 kernel
# (read-kernel, on a copy, mounted ro) and compare with the shipped manifest
# using score.py.  Passes only if every entry is intact, nothing is missing,
# corrupted or foreign, and no metadata differs.  Prints 'N passed, N failed'.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
C=$(dirname "$HERE")
CACHE=${RFSCK_CORPUS_CACHE:-$C/build}
mkdir -p "$CACHE/test-kernel"
[ $# -gt 0 ] || set -- r36-features-r5 r35-features-r5 r36-crash-safelink
pass=0; fail=0
for n in "$@"; do
    img="$CACHE/test-kernel/$n.img"
    out="$CACHE/test-kernel/$n.kernel.manifest.jsonl"
    xz -dc "$C/images/$n.img.xz" > "$img"
    if python3 "$HERE/read-kernel" "$img" "$out"; then
        s=$(python3 "$HERE/score.py" --json "$C/images/$n.manifest.jsonl" "$out")
        if echo "$s" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["intact"]==s["truth_entries"] and s["corrupted"]==s["missing"]==s["foreign"]==s["meta_differs"]==s["lost_found"]==0 else 1)'; then
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

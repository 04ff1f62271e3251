#!/bin/sh
# rebuild_nested.sh - `rfsck rebuild --yes --output OUT` on r36-nested, an
# outer volume holding an 8 MiB ReiserFS image as the file /images/inner.img
# (corpus/images/r36-nested.nested.json: path, size, sha256, inner manifest).
# Cases: none, zero-root, zero-nested-leaf (damage.py: the leaf holding the
# image file's first indirect item, and its stat data, is zeroed).
# For every case:
#   - exit 1, the damaged image byte-identical afterwards, the JSON report
#     follows the contract;
#   - OUT scored against the outer ground truth: 0 foreign; no entry of OUT
#     (lost+found included) carries an inner file's content or path;
#   - report.nested has a volume at the byte offset where the inner image
#     starts in the outer image (first data block of /images/inner.img x
#     block size, read from the ORIGINAL image's indirect item), with its
#     superblock block, block size 4096 and block count 2048;
#   - `rfsck check OUT` and `reiserfsck --check` (oracle.py) exit 0.
# none / zero-root: every outer entry intact (metadata too, /lost+found
# empty), /images/inner.img byte-identical to nested_sha256, and the nested
# volume's holder is /images/inner.img's object.
# zero-nested-leaf: the strict rule of rebuild_corpus.sh (every entry outside
# the destroyed leaf intact; the rest partial or lost with its leaf), and
# `rfsck ls -R --offset OFFSET` + `rfsck salvage --offset OFFSET` of the
# DAMAGED image read every file of the inner volume intact (inner manifest).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
export TOP
W=$WORK
H="$TOP/tests/lib/rebuild_case.py"
T=$TOP/corpus/tools
set +e
"$RFSCK" rebuild --help >/dev/null 2>"$W/help.err"; hrc=$?
set -e
if [ "$hrc" -ne 0 ]; then
	if grep -q "not implemented" "$W/help.err"; then echo "rfsck rebuild is not implemented yet" >&2; exit 77; fi
	echo "rfsck rebuild --help: exit $hrc"; cat "$W/help.err"; exit 1
fi
command -v reiserfsck >/dev/null || { echo "reiserfsck missing (apt-get install reiserfsprogs)"; exit 1; }
export RFSCK_CORPUS_CACHE=$W/cache
trap 'rm -f "$W"/*.img "$W"/*.img.damage.json; rm -rf "$W/cache"' EXIT
sum() { sha256sum "$1" | cut -d' ' -f1; }
base=r36-nested
truth=$TOP/corpus/images/$base.manifest.jsonl
side=$TOP/corpus/images/$base.nested.json
xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img"
off=$(python3 "$H" nested-offset "$W/orig.img" "$truth" "$side")
python3 "$H" inner-truth "$side" "$W/inner.jsonl"
# the inner volume reads intact at that offset of the undamaged image
python3 "$H" read "$RFSCK" "$W/orig.img" "$W/inner-orig.jsonl" --offset "$off"
python3 "$H" expect-intact "inner volume at offset $off of the original" "$W/inner.jsonl" "$W/inner-orig.jsonl"
n=0
for recipe in none zero-root zero-nested-leaf; do
	name="$base/$recipe"
	rm -f "$W/out.img"
	python3 "$H" damage "$recipe" 1 - "$W/orig.img" "$W/d.img" "$W/rec.json" --manifest "$truth"
	before=$(sum "$W/d.img")
	set +e
	"$RFSCK" rebuild --yes -q --json --output "$W/out.img" "$W/d.img" >"$W/rep.json" 2>"$W/err"
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "FAIL $name: rebuild exit $rc, 1 expected"; tail -n 20 "$W/err"; head -c 2000 "$W/rep.json"; exit 1; }
	[ "$(sum "$W/d.img")" = "$before" ] || { echo "FAIL $name: rebuild --output changed the damaged image"; exit 1; }
	python3 "$H" read "$RFSCK" "$W/out.img" "$W/res.jsonl" || { echo "FAIL $name: cannot read the rebuilt image"; exit 1; }
	if [ "$recipe" = zero-nested-leaf ]; then kind=damaged; expect=loss; else kind=intact; expect=intact; fi
	python3 "$H" verify "$name" "$truth" "$W/res.jsonl" "$W/rep.json" "$W/rec.json" "$W/orig.img" \
		--expect "$expect" --damaged "$W/d.img" >"$W/verify.log" || { cat "$W/verify.log"; exit 1; }
	python3 "$H" nested-check "$name" "$W/rep.json" "$W/res.jsonl" "$side" "$truth" "$off" "$kind" \
		>"$W/nested.log" || { cat "$W/nested.log"; exit 1; }
	extra=""
	if [ "$recipe" = zero-nested-leaf ]; then
		python3 "$H" read "$RFSCK" "$W/d.img" "$W/inner-d.jsonl" --offset "$off" ||
			{ echo "FAIL $name: rfsck cannot read the inner volume at offset $off of the damaged image"; exit 1; }
		python3 "$H" expect-intact "$name: inner volume at offset $off" "$W/inner.jsonl" "$W/inner-d.jsonl" \
			>"$W/inner.log" || { cat "$W/inner.log"; exit 1; }
		extra="; $(cat "$W/inner.log")"
		# informational: is the inner volume still readable inside the rebuilt image?
		if python3 "$H" read "$RFSCK" "$W/out.img" "$W/inner-out.jsonl" --offset "$off" 2>/dev/null &&
			python3 "$H" expect-intact x "$W/inner.jsonl" "$W/inner-out.jsonl" >/dev/null; then
			extra="$extra; (info: inner volume intact inside OUT too)"
		else
			extra="$extra; (info: inner volume NOT intact inside OUT)"
		fi
	fi
	set +e
	"$RFSCK" check -q "$W/out.img" >"$W/check.log" 2>&1; crc=$?
	set -e
	[ "$crc" -eq 0 ] || { echo "FAIL $name: rfsck check of the rebuilt image: exit $crc"; "$RFSCK" check "$W/out.img" 2>&1 | head -n 30; exit 1; }
	python3 "$T/oracle.py" check "$W/out.img" >"$W/oracle.json"
	orc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit"])' "$W/oracle.json")
	[ "$orc" -eq 0 ] || { echo "FAIL $name: reiserfsck --check of the rebuilt image: exit $orc"; cat "$W/oracle.json"; exit 1; }
	echo "$(cat "$W/verify.log"); $(cat "$W/nested.log")$extra; check 0, reiserfsck 0"
	n=$((n + 1))
done
echo "$n nested cases: outer files kept, inner volume detected and never injected"

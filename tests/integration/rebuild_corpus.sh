#!/bin/sh
# rebuild_corpus.sh - `rfsck rebuild --yes --output OUT` on seeded damage
# (corpus/tools/damage.py) of kernel-written images, scored against the
# kernel's ground truth (corpus/images/NAME.manifest.jsonl).
# Images: r36-features-r5, r35-features-r5, r36-hash-tea, r36-hash-rupasov.
# Damage: none, zero-root, zero-internal, zero-leaves N=3 (seeds 1, 2),
# flip-leaves N=3 (seeds 1, 2), zero-bitmaps, copy-leaves N=3 (each copy must
# be rejected as a duplicate).  For every case:
#   - exit 1; the damaged image is byte-identical afterwards (sha256);
#   - stdout is one JSON report with the contract's fields and types
#     (tests/lib/rebuild_case.py schema), mode "rebuild";
#   - OUT read back by rfsck (ls -R --json + salvage; cross-checked once per
#     image against corpus/tools/read-rfsck, the `rfsck cat` reader) and scored
#     with score.py: foreign == 0 always;
#   - none / zero-root / zero-internal / zero-bitmaps / copy-leaves: every ground-truth entry
#     intact, no metadata difference, /lost+found empty, no partial file;
#   - zero-leaves / flip-leaves: the strict rule of rebuild_case.py verify:
#     the ORIGINAL image's leaves are parsed to find where each path's stat
#     data, name (directory entry) and body items lived.  A path untouched by
#     the destroyed leaves must be intact.  A touched path that is not intact
#     must be listed in partial_files (by objectid or path), or be missing
#     because its stat data / its name / an ancestor lived in a destroyed
#     leaf, or (flip-leaves only) be corrupted because a flipped bit fell into
#     its own items or directory entry (undetectable without checksums);
#   - partial_files paths exist in OUT; /lost+found holds only DIRID_OBJECTID
#     names, as many as objects.lost_found says;
#   - `rfsck check OUT` exits 0 and `reiserfsck --check` on a copy
#     (corpus/tools/oracle.py check) exits 0.
# REBUILD_READER=cat reads every case with `rfsck cat` (slow under ASan).
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
n=0; failed=0

# run_case is called as `run_case ... || failed=...`, where set -e does not
# apply: every command in it is checked explicitly.
run_case() {   # BASE RECIPE SEED N EXPECT
	base=$1; recipe=$2; seed=$3; nn=$4; expect=$5
	name="$base/$recipe${nn:+ N=$nn}/s$seed"
	truth=$TOP/corpus/images/$base.manifest.jsonl
	rm -f "$W/out.img" "$W/d.img.rfsck-undo"
	python3 "$H" damage "$recipe" "$seed" "${nn:--}" "$W/orig.img" "$W/d.img" "$W/rec.json" ||
		{ echo "FAIL $name: damage.py"; return 1; }
	before=$(sum "$W/d.img") || return 1
	set +e
	"$RFSCK" rebuild --yes -q --json --output "$W/out.img" "$W/d.img" >"$W/rep.json" 2>"$W/err"
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "FAIL $name: rebuild exit $rc, 1 expected"; tail -n 20 "$W/err"; head -c 2000 "$W/rep.json"; return 1; }
	[ "$(sum "$W/d.img")" = "$before" ] || { echo "FAIL $name: rebuild --output changed the damaged image"; return 1; }
	[ -s "$W/out.img" ] || { echo "FAIL $name: no output image"; return 1; }
	[ ! -e "$W/d.img.rfsck-undo" ] || { echo "FAIL $name: --output left an undo file next to the source"; return 1; }
	python3 "$H" read "$RFSCK" "$W/out.img" "$W/res.jsonl" || { echo "FAIL $name: cannot read the rebuilt image"; return 1; }
	if [ "$recipe" = copy-leaves ]; then   # each copied leaf is rejected once, as a duplicate
		python3 -c 'import json,sys
rep = json.load(open(sys.argv[1])); rec = json.load(open(sys.argv[2]))
got = rep["leaves"]["rejected_by_reason"].get("duplicate", 0)
want = len(rec["leaves_copied"])
sys.exit(0 if got == want and want > 0 else "duplicates rejected: %d, %d leaves copied" % (got, want))' \
			"$W/rep.json" "$W/rec.json" || { echo "FAIL $name: duplicate leaves"; return 1; }
	fi
	if [ "$recipe" = zero-root ]; then   # the fast reader agrees with read-rfsck
		python3 "$T/read-rfsck" "$RFSCK" "$W/out.img" "$W/res-cat.jsonl" 2>/dev/null ||
			{ echo "FAIL $name: read-rfsck"; return 1; }
		python3 "$H" same-manifest "$W/res.jsonl" "$W/res-cat.jsonl" >"$W/same.log" ||
			{ echo "FAIL $name: rebuild_case.py read and read-rfsck disagree"; cat "$W/same.log"; return 1; }
	fi
	# the score, rfsck check and reiserfsck --check: all three run, all failures shown
	bad=0
	python3 "$H" verify "$name" "$truth" "$W/res.jsonl" "$W/rep.json" "$W/rec.json" "$W/orig.img" \
		--expect "$expect" --damaged "$W/d.img" >"$W/verify.log" || bad=1
	"$RFSCK" check -q "$W/out.img" >"$W/check.log" 2>&1; crc=$?
	python3 "$T/oracle.py" check "$W/out.img" >"$W/oracle.json" || { echo "FAIL $name: oracle.py"; return 1; }
	orc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit"])' "$W/oracle.json") || return 1
	if [ "$bad" -eq 0 ] && [ "$crc" -eq 0 ] && [ "$orc" -eq 0 ]; then
		echo "$(cat "$W/verify.log"); check 0, reiserfsck 0"
	else
		if [ "$bad" -eq 0 ]; then echo "FAIL $name: $(sed 's/^ok [^:]*: //' "$W/verify.log")"; else cat "$W/verify.log"; fi
		[ "$crc" -eq 0 ] || { echo "  - rfsck check of the rebuilt image: exit $crc"; "$RFSCK" check "$W/out.img" 2>&1 | head -n 12 | sed 's/^/      /'; }
		[ "$orc" -eq 0 ] || { echo "  - reiserfsck --check of the rebuilt image: exit $orc:"
			python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\n".join("      " + l for l in d["key_lines"] + d["log_tail"].splitlines()[-8:]))' "$W/oracle.json"; }
		return 1
	fi
	n=$((n + 1))
}

for base in r36-features-r5 r35-features-r5 r36-hash-tea r36-hash-rupasov; do
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img"
	for r in none zero-root zero-internal zero-bitmaps; do
		run_case "$base" "$r" 1 "" intact || failed=$((failed + 1))
	done
	run_case "$base" copy-leaves 1 3 intact || failed=$((failed + 1))
	for seed in 1 2; do
		run_case "$base" zero-leaves "$seed" 3 loss || failed=$((failed + 1))
		run_case "$base" flip-leaves "$seed" 3 loss || failed=$((failed + 1))
	done
done
[ "$failed" -eq 0 ] || { echo "$failed of $((n + failed)) rebuild cases FAILED (details above)"; exit 1; }
echo "$n rebuilt images: ground truth kept as the damage allows, 0 foreign, check and reiserfsck clean"

#!/bin/sh
# rebuild_keyorder.sh - rebuild's two ways to the items in key order give the
# same result (rebuild/keyorder.c).
#
# When the accepted leaves' key ranges do not overlap, rebuild reads the items
# leaf by leaf (no index over all items, no ranking); otherwise, or with
# RFSCK_REBUILD_GENERAL=1, it builds item_key and ranks the keys found in
# several leaves.  Every case runs `rfsck rebuild --yes --json --output` both
# ways (SOURCE_DATE_EPOCH fixed, so created stat data carry the same time) and
# requires:
#   - the same exit status and byte-identical output images;
#   - the same JSON report, apart from seconds, the index and output paths and
#     leaves.items_in_key_order;
#   - items_in_key_order false in every forced run.
# Cases: the shipped corpus images (damage none, zero-root, zero-internal,
# zero-bitmaps, zero-leaves N=3, flip-leaves N=3), r36-nested damaged, and
# (when ../shared is visible) every image of corpus-public/fuzzed and
# corpus-public/reference other than the syzkaller seeds (empty volumes).
# And one built to overlap: r36-features-r5 with its internal nodes zeroed and
# a leaf copied, one free-space byte changed (another checksum, the same
# items), into a block the bitmap calls free, rebuilt with --scan all.  Both
# copies are accepted, so the default run must fall back by itself
# (items_in_key_order false) and report the repeated keys as conflicts.
# The default runs must take the leaf order at least once.  And a leaf edited
# between the scan (a kept --index) and the build stops the run with "changed
# since the scan": the walk checks each leaf against the scan's checksum.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
H="$TOP/tests/lib/rebuild_case.py"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
export SOURCE_DATE_EPOCH=1700000000
TIMEOUT=${RFSCK_TEST_TIMEOUT:-120}
trap 'rm -f "$W"/*.img' EXIT
n=0; ordered=0; failed=0

# same NAME IMAGE [OPTIONS...]: both runs, compared.  Prints the default run's
# items_in_key_order in $W/ko.
same() {
	name=$1; img=$2; shift 2
	for way in fast general; do
		rm -f "$W/out-$way.img"
		set +e
		if [ "$way" = general ]; then
			RFSCK_REBUILD_GENERAL=1 timeout "$TIMEOUT" "$RFSCK" rebuild --yes -q --json "$@" \
				--output "$W/out-$way.img" "$img" >"$W/rep-$way.json" 2>"$W/err-$way"
		else
			timeout "$TIMEOUT" "$RFSCK" rebuild --yes -q --json "$@" \
				--output "$W/out-$way.img" "$img" >"$W/rep-$way.json" 2>"$W/err-$way"
		fi
		echo $? >"$W/rc-$way"
		set -e
		if grep -q -e "AddressSanitizer" -e "runtime error" -e "LeakSanitizer" "$W/err-$way"; then
			echo "FAIL $name ($way): sanitizer report"; cat "$W/err-$way"; return 1
		fi
		[ "$(cat "$W/rc-$way")" != 124 ] || { echo "FAIL $name ($way): no result in ${TIMEOUT}s"; return 1; }
	done
	[ "$(cat "$W/rc-fast")" = "$(cat "$W/rc-general")" ] ||
		{ echo "FAIL $name: exit $(cat "$W/rc-fast") in leaf order, $(cat "$W/rc-general") by item_key"
		  tail -n 5 "$W/err-fast" "$W/err-general"; return 1; }
	if [ -e "$W/out-fast.img" ] || [ -e "$W/out-general.img" ]; then
		cmp -s "$W/out-fast.img" "$W/out-general.img" ||
			{ echo "FAIL $name: the rebuilt images differ"; return 1; }
	fi
	python3 - "$W/rep-fast.json" "$W/rep-general.json" "$W/ko" "$name" <<'EOF' || return 1
import json, sys
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except ValueError:
        return None  # refused images print no report; the exit status was compared
a, b = load(sys.argv[1]), load(sys.argv[2])
ko = "none"
if a is not None or b is not None:
    if a is None or b is None:
        sys.exit("FAIL %s: a report from one way only" % sys.argv[4])
    ko = a["leaves"]["items_in_key_order"]
    if b["leaves"]["items_in_key_order"] is not False:
        sys.exit("FAIL %s: RFSCK_REBUILD_GENERAL=1 still read the leaves in order" % sys.argv[4])
    for r in (a, b):
        for k in ("seconds", "index", "target"):
            r.pop(k, None)
        r["leaves"].pop("items_in_key_order")
    if a != b:
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print("  %s: leaf order %s, item_key %s" % (k, json.dumps(a.get(k))[:300],
                                                           json.dumps(b.get(k))[:300]))
        sys.exit("FAIL %s: the reports differ" % sys.argv[4])
with open(sys.argv[3], "w") as f:
    f.write(str(ko).lower())
EOF
	n=$((n + 1))
	[ "$(cat "$W/ko")" != true ] || ordered=$((ordered + 1))
	return 0
}

# free_byte_edit copy|in-place: in $W/d.img, the first leaf of $W/orig.img's
# tree with free space gets its first free byte inverted: still a valid leaf
# with the same items, another checksum.  copy: the edited leaf goes to an
# all-zero block in the image's second half (a free block), the original
# stays; in-place: the leaf itself is edited.
free_byte_edit() {
	python3 - "$1" "$W/orig.img" "$W/d.img" "$TOP/corpus/tools" <<'EOF'
import os, struct, sys
sys.path.insert(0, sys.argv[4])
import damage, rcorpus
fs = rcorpus.Fs(sys.argv[2])
bs = fs.blocksize
leaves, _ = damage.tree_nodes(fs)
with open(sys.argv[3], "r+b") as f:
    def block(b):
        f.seek(b * bs)
        return f.read(bs)
    src = next(b for b in sorted(leaves) if struct.unpack_from("<H", block(b), 4)[0] > 0)
    dst = src
    if sys.argv[1] == "copy":
        size = os.fstat(f.fileno()).st_size // bs
        dst = next(b for b in range(size - 1, size // 2, -1) if block(b) == b"\0" * bs)
    data = bytearray(block(src))
    nr = struct.unpack_from("<H", data, 2)[0]
    data[24 + 24 * nr] ^= 0xFF
    f.seek(dst * bs)
    f.write(data)
EOF
}

for base in r36-features-r5 r35-features-r5 r36-hash-tea r36-hash-rupasov; do
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img"
	for r in none zero-root zero-internal zero-bitmaps; do
		python3 "$H" damage "$r" 1 - "$W/orig.img" "$W/d.img" "$W/rec.json" >/dev/null
		same "$base/$r" "$W/d.img" || failed=$((failed + 1))
	done
	for r in zero-leaves flip-leaves; do
		python3 "$H" damage "$r" 1 3 "$W/orig.img" "$W/d.img" "$W/rec.json" >/dev/null
		same "$base/$r N=3" "$W/d.img" || failed=$((failed + 1))
	done
done
xz -dc "$TOP/corpus/images/r36-nested.damaged.img.xz" >"$W/d.img"
same r36-nested.damaged "$W/d.img" || failed=$((failed + 1))

# leaves that overlap: the fallback, taken by the default run itself
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/orig.img"
python3 "$H" damage zero-internal 1 - "$W/orig.img" "$W/d.img" "$W/rec.json" >/dev/null
free_byte_edit copy
same "r36-features-r5/overlapping-leaves" "$W/d.img" --scan all || failed=$((failed + 1))
python3 - "$W/rep-fast.json" <<'EOF' || failed=$((failed + 1))
import json, sys
r = json.load(open(sys.argv[1]))
if r["leaves"]["items_in_key_order"] is not False:
    sys.exit("FAIL overlapping-leaves: the default run read overlapping leaves in leaf order")
if r["conflicts"] < 1:
    sys.exit("FAIL overlapping-leaves: no conflict reported for the repeated keys")
print("overlapping leaves: fallback taken, %d conflicts" % r["conflicts"])
EOF

# a leaf that changed between the scan and the build (a kept index, then the
# image edited): the walk checks every leaf against the scan's checksum
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/orig.img"
python3 "$H" damage zero-root 1 - "$W/orig.img" "$W/d.img" "$W/rec.json" >/dev/null
rm -f "$W/ix.db"*
set +e
"$RFSCK" rebuild --dry-run -q --json --index "$W/ix.db" "$W/d.img" >"$W/rep1.json" 2>"$W/err1"; rc1=$?
set -e
python3 - "$W/rep1.json" "$rc1" <<'EOF' || failed=$((failed + 1))
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2] != "0" or r["leaves"]["items_in_key_order"] is not True:
    sys.exit("FAIL changed-leaf: the first dry run (exit %s) did not read the leaves in order" % sys.argv[2])
EOF
free_byte_edit in-place
set +e
"$RFSCK" rebuild --dry-run -q --json --index "$W/ix.db" "$W/d.img" >"$W/rep2.json" 2>"$W/err2"; rc2=$?
set -e
if [ "$rc2" -eq 0 ] || ! grep -q "changed since the scan" "$W/err2"; then
	echo "FAIL changed-leaf: the build after an edited leaf: exit $rc2"; cat "$W/err2"; failed=$((failed + 1))
else
	echo "changed leaf: exit $rc2, $(head -n 1 "$W/err2")"
fi
rm -f "$W/ix.db"*

pub=${SHARED:-/nonexistent}/corpus-public
if [ -d "$pub" ]; then
	for src in $(find "$pub/fuzzed" "$pub/reference" -type f \( -name '*.xz' -o -name '*.gz' -o -name '*.bin' \) \
			-not -path '*syzkaller-seeds*' | sort); do
		case $src in
		*.xz) xz -dc "$src" >"$W/p.img" ;;
		*.gz) gzip -dc "$src" >"$W/p.img" ;;
		*) cp "$src" "$W/p.img" ;;
		esac
		same "public/${src#"$pub"/}" "$W/p.img" || failed=$((failed + 1))
	done
else
	echo "no public corpus at $pub: the fuzzed images were not compared"
fi
[ "$failed" -eq 0 ] || { echo "$failed of $((n + failed)) cases FAILED"; exit 1; }
[ "$ordered" -gt 0 ] || { echo "FAIL: no default run read the leaves in order"; exit 1; }
echo "$n cases: the same images and reports both ways; $ordered read in leaf order"

#!/bin/sh
# fix_safelink.sh - `rfsck fix` finishes what safe links record, as the
# kernel's mount does (finish_unfinished), and removes invalid ones.
#
# 1. r36-crash-safelink.prereplay: written by the 6.1 kernel, two files held
#    open and unlinked at a power cut, the journal not yet replayed.  check:
#    exit 6 with JOURNAL_PENDING and 2 SAFELINK_PENDING.  fix --dry-run: image
#    unchanged, the same repairs and the same blocks as the real run (21).
#    fix: exit 1; check exit 0; reiserfsck --check clean; the ground truth
#    (the kernel's view after its own mount finished the unlinks) intact; the
#    free count, objectid map and bitmap equal to those of the shipped
#    r36-crash-safelink.img, which is that image after the kernel's mount;
#    undo restores the damaged image byte for byte; --output gives the bytes
#    of the in-place repair.
# 2. r36-crash-safelink (after the kernel's mount): no safe link, nothing to
#    repair (exit 0, image unchanged).
# 3. Links crafted into r36-features-r5 (tests/lib/fixable_damage.py), each
#    with the same protocol: truncates to sizes inside an indirect item, at a
#    block boundary, inside a tail, to 0 and past the file's end, and on a
#    3.5 volume (r35-features-r5: tails cut to the byte); an unlink of
#    an open file; an unlink and a truncate of one file (the kernel's order:
#    the unlink, then the truncate link names no object); a link that names
#    no object (SAFELINK_BAD).  A truncated
#    file must read as the first N bytes of the original, the free count must
#    grow by exactly the blocks past N (computed from the original sizes), an
#    unlinked file must be gone (the ground truth without it, its directory
#    smaller by its entry), and everything else intact.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
IMG=$TOP/corpus/images
sum() { sha256sum "$1" | cut -d' ' -f1; }
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
codes() { jget "$1" '" ".join(sorted(p["code"] for p in d["problems"] if p["severity"]=="fixable"))'; }
n=0

# protocol NAME IMAGE MANIFEST CODES_EXPECTED
# (CODES_EXPECTED: the sorted fixable codes of the first check)
protocol() {
	name=$1; img=$2; manifest=$3; want=$4
	rm -f "$img.rfsck-undo" "$W/out.img"
	set +e
	"$RFSCK" check --json "$img" >"$W/c1.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] || { echo "$name: check exit $rc, 6 expected"; exit 1; }
	[ "$(codes "$W/c1.json")" = "$want" ] || { echo "$name: check codes [$(codes "$W/c1.json")], [$want] expected"; exit 1; }
	damaged=$(sum "$img")
	set +e
	"$RFSCK" fix --dry-run --json "$img" >"$W/dry.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] || { echo "$name: dry-run exit $rc"; exit 1; }
	[ "$(sum "$img")" = "$damaged" ] || { echo "$name: dry-run changed the image"; exit 1; }
	cp "$img" "$W/copy.img"
	set +e
	"$RFSCK" fix --yes --json "$img" >"$W/real.json"; rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "$name: fix exit $rc, 1 expected"; cat "$W/real.json"; exit 1; }
	[ "$(codes "$W/dry.json")" = "$(codes "$W/real.json")" ] || { echo "$name: dry-run and real repairs differ"; exit 1; }
	[ "$(jget "$W/dry.json" 'd["blocks_written"]')" = "$(jget "$W/real.json" 'd["blocks_written"]')" ] ||
		{ echo "$name: dry-run and real runs write different blocks"; exit 1; }
	[ "$(jget "$W/real.json" 'd["repairs"]')" -eq "$(jget "$W/c1.json" 'sum(1 for p in d["problems"] if p["severity"]=="fixable")')" ] ||
		{ echo "$name: not every fixable problem was repaired"; exit 1; }
	"$RFSCK" check -q "$img" || { echo "$name: check after fix: exit $?"; "$RFSCK" check "$img"; exit 1; }
	cp "$img" "$W/rf.img"
	set +e
	reiserfsck --check --yes "$W/rf.img" >"$W/rf.log" 2>&1; rrc=$?
	set -e
	[ "$rrc" -eq 0 ] || { echo "$name: reiserfsck --check after fix: exit $rrc"; tail -20 "$W/rf.log"; exit 1; }
	grep -q "Safe links 0" "$W/rf.log" || { echo "$name: reiserfsck still counts safe links"; exit 1; }
	if [ -n "${CONTENT_OF:-}" ]; then
		# every entry's metadata, the content of the files the case touches
		python3 "$W/light.py" "$RFSCK" "$img" "$manifest" $CONTENT_OF >"$W/cmp.log" ||
			{ echo "$name: files differ from the ground truth after fix"; cat "$W/cmp.log"; exit 1; }
	else
		python3 "$TOP/tests/lib/compare_manifest.py" "$RFSCK" "$img" "$manifest" >"$W/cmp.log" ||
			{ echo "$name: files differ from the ground truth after fix"; cat "$W/cmp.log"; exit 1; }
	fi
	fixed=$(sum "$img")
	"$RFSCK" undo -q "$img.rfsck-undo" "$img" >/dev/null
	[ "$(sum "$img")" = "$damaged" ] || { echo "$name: undo did not restore the damaged image"; exit 1; }
	"$RFSCK" fix --yes -q --output "$W/out.img" "$W/copy.img" || [ $? -eq 1 ]
	[ "$(sum "$W/copy.img")" = "$damaged" ] || { echo "$name: --output changed its source"; exit 1; }
	[ "$(sum "$W/out.img")" = "$fixed" ] || { echo "$name: --output result differs from the in-place fix"; exit 1; }
	cp "$W/out.img" "$W/fixed.img"
	n=$((n + 1))
}

# superblock fields and the first bitmap block of two images must agree
same_allocation() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
sb = 65536
bs = struct.unpack_from("<H", a, sb + 44)[0]
def fields(d):
    n = struct.unpack_from("<H", d, sb + 48)[0]
    return (struct.unpack_from("<I", d, sb + 4)[0], d[sb + 204:sb + 204 + 4 * n])
fa, fb = fields(a), fields(b)
bm = (sb // bs + 1) * bs
assert fa == fb, ("free count / objectid map", fa, fb)
assert a[bm:bm + bs] == b[bm:bm + bs], "bitmap differs"
print("free %d, objectid map %s, bitmap equal" % (fa[0], list(struct.unpack("<%dI" % (len(fa[1]) // 4), fa[1]))))
PY
}

# 1. the kernel-written power cut
xz -dc "$IMG/r36-crash-safelink.prereplay.img.xz" >"$W/d.img"
protocol crash-safelink.prereplay "$W/d.img" "$IMG/r36-crash-safelink.manifest.jsonl" \
	"JOURNAL_PENDING SAFELINK_PENDING SAFELINK_PENDING"
[ "$(jget "$W/real.json" 'len(d["blocks_written"])')" -eq 21 ] ||
	{ echo "crash-safelink: $(jget "$W/real.json" 'len(d["blocks_written"])') blocks written, 21 measured"; exit 1; }
xz -dc "$IMG/r36-crash-safelink.img.xz" >"$W/kernel.img"
echo "ok crash-safelink.prereplay: as the kernel's mount left it: $(same_allocation "$W/fixed.img" "$W/kernel.img")"

# 2. after the kernel's mount
before=$(sum "$W/kernel.img")
set +e
"$RFSCK" fix --yes -q "$W/kernel.img"; rc=$?
set -e
[ "$rc" -eq 0 ] && [ "$(sum "$W/kernel.img")" = "$before" ] || { echo "crash-safelink: fix exit $rc or changed the image"; exit 1; }
echo "ok crash-safelink: nothing to repair"

# 3. crafted links.  Every manifest entry is compared as listed by one
# `rfsck ls -R --json` (type, size, mode, owner, mtime, links, objectid);
# contents (sha256 of `rfsck cat`) for the paths named in CONTENT_OF, the
# files a case touches (compare_manifest.py reads all 75 files, a minute per
# case under ASan; case 1 uses it).
cat >"$W/light.py" <<'PY'
import hashlib, json, subprocess, sys
rfsck, image, manifest = sys.argv[1:4]
content = set(p.encode() for p in sys.argv[4:])
truth = {bytes.fromhex(e["path_hex"]): e for e in map(json.loads, open(manifest))}
ls = subprocess.run([rfsck, "ls", "-R", "--json", image], stdout=subprocess.PIPE, check=True)
ours = {bytes.fromhex(e["path_hex"]): e for e in json.loads(ls.stdout)["entries"]}
bad = []
for path, t in truth.items():
    if path == b"/":
        continue
    e = ours.get(path)
    if e is None:
        bad.append("missing: %r" % path)
        continue
    for k in ("type", "size", "mode", "uid", "gid", "mtime", "nlink"):
        if t.get(k) != e.get(k):
            bad.append("%r: %s is %r, %r expected" % (path, k, e.get(k), t.get(k)))
    if t.get("ino") != e.get("objectid"):
        bad.append("%r: objectid differs" % path)
    if path in content:
        c = subprocess.run([rfsck, "cat", image, path], stdout=subprocess.PIPE, check=True)
        if hashlib.sha256(c.stdout).hexdigest() != t["sha256"]:
            bad.append("%r: content differs" % path)
bad += ["not in the manifest: %r" % p for p in ours if p not in truth and not p.startswith(b"/.reiserfs_priv")]
print("\n".join(bad[:40]))
print("%d entries, %d contents read, %d disagreements" % (len(truth), len(content), len(bad)))
sys.exit(1 if bad else 0)
PY
xz -dc "$IMG/r36-features-r5.img.xz" >"$W/clean.img"
M=$IMG/r36-features-r5.manifest.jsonl
free_of() { "$RFSCK" info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["free_blocks"])'; }

# truncate PATH N: the ground truth with PATH cut to N bytes; the free count
# grows by the blocks past N of a file without holes or tail, or by FREED
truncate_case() {
	path=$1; size=$2; freed=$3
	cp "$W/clean.img" "$W/d.img"
	python3 "$TOP/tests/lib/fixable_damage.py" safelink-truncate "$W/d.img" "$path" "$size" >/dev/null
	"$RFSCK" cat "$W/clean.img" "$path" 2>/dev/null | head -c "$size" >"$W/head.bin"
	python3 - "$M" "$W/expected.jsonl" "$path" "$size" "$W/head.bin" <<'PY'
import hashlib, json, sys
src, dst, path, size, head = sys.argv[1:6]
with open(dst, "w") as f:
    for line in open(src):
        r = json.loads(line)
        if r["path"] == path:
            r["size"] = int(size)
            # cut, or extended with a hole that reads as zeros
            data = open(head, "rb").read()
            r["sha256"] = hashlib.sha256(data + bytes(int(size) - len(data))).hexdigest()
        f.write(json.dumps(r) + "\n")
PY
	f0=$(free_of "$W/d.img")
	CONTENT_OF=$path protocol "truncate $path to $size" "$W/d.img" "$W/expected.jsonl" SAFELINK_PENDING
	f1=$(free_of "$W/fixed.img")
	[ $((f1 - f0)) -eq "$freed" ] || { echo "truncate $path to $size: $((f1 - f0)) blocks freed, $freed expected"; exit 1; }
	# the last data block holds zeros past the size (the kernel zeroes the
	# page tail), where the original had file data
	python3 - "$TOP/tests/lib" "$W/clean.img" "$W/fixed.img" "$path" "$size" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
from craft_hostile import Image, TYPE_INDIRECT
path, size = sys.argv[4].encode("utf-8", "surrogateescape"), int(sys.argv[5])
def last_block(f):
    img = Image(bytearray(open(f, "rb").read()))
    key, _ = img.resolve(path)
    ptrs = []
    for it in img.items():
        if (it[2], it[3], it[5]) == (key[0], key[1], TYPE_INDIRECT):
            ptrs += struct.unpack_from("<%dI" % (it[7] // 4), img.d, it[8])
    i = (size - 1) // img.bs if size else -1
    if i < 0 or i >= len(ptrs) or not ptrs[i] or size % img.bs == 0:
        return None
    b = ptrs[i]
    return img.d[b * img.bs + size % img.bs:(b + 1) * img.bs]
after, before = last_block(sys.argv[3]), last_block(sys.argv[2])
if after is not None:
    assert not any(after), "bytes past the size are not zero"
    print("zeroed %d byte(s) past the size, %d of them were data" % (len(after), sum(1 for x in before if x)))
PY
	echo "ok truncate $path to $size: $freed block(s) freed"
}
# (100000, 8193 and 5243003 bytes: 25, 3 and 1281 data blocks, no holes;
# sz_1000 is a tail, sz_4097 two blocks)
truncate_case /sizes/sz_100000 5000 23
truncate_case /sizes/sz_8193 8192 1
truncate_case /sizes/sz_1000 3 0
truncate_case /big/five_mib 0 1281
truncate_case /sizes/sz_4097 999999 0
# a sparse file: 10 of its data blocks lie past byte 1000001 (measured)
truncate_case /sparse/holes_many 1000001 10
# a 3.5 volume: tails are cut to the byte, first_direct_byte follows (16383
# bytes: three blocks and a tail; the cut lands in the tail)
cp "$W/clean.img" "$W/clean36.img"
xz -dc "$IMG/r35-features-r5.img.xz" >"$W/clean.img"
M36=$M
M=$IMG/r35-features-r5.manifest.jsonl
truncate_case /size_____16383 12289 0
truncate_case /big_two_indirect 5000 1048
cp "$W/clean36.img" "$W/clean.img"
M=$M36

# unlink of a file open when the power went: gone, its directory smaller.
# unlink_case RECIPE PATH FREED [N] (safelink-both: a truncate to N as well)
unlink_case() {
	recipe=$1; path=$2; freed=$3
	cp "$W/clean.img" "$W/d.img"
	python3 "$TOP/tests/lib/fixable_damage.py" "$recipe" "$W/d.img" "$path" ${4:-} >/dev/null
	python3 - "$M" "$W/expected.jsonl" "$path" <<'PY'
import json, sys
src, dst, path = sys.argv[1:4]
rows = [json.loads(l) for l in open(src)]
parent, base = path.rsplit("/", 1)
with open(dst, "w") as f:
    for r in rows:
        if r["path"] == path:
            continue
        if r["path"] == parent:
            r["size"] -= 16 + (len(base) + 7) // 8 * 8
        f.write(json.dumps(r) + "\n")
PY
	f0=$(free_of "$W/d.img")
	want=SAFELINK_PENDING
	[ "$recipe" = safelink-both ] && want="SAFELINK_PENDING SAFELINK_PENDING"
	CONTENT_OF=/sizes/sz_8192 protocol "$recipe $path" "$W/d.img" "$W/expected.jsonl" "$want"
	f1=$(free_of "$W/fixed.img")
	[ $((f1 - f0)) -eq "$freed" ] || { echo "$recipe $path: $((f1 - f0)) blocks freed, $freed expected"; exit 1; }
	echo "ok $recipe $path: $freed blocks freed"
}
# 65537 bytes: 17 data blocks; 65536: 16 (the unlink runs first, the
# truncate link then names no object and goes)
unlink_case safelink-unlink /sizes/sz_65537 17
unlink_case safelink-both /sizes/sz_65536 16 1000

# a safe link that names no object: removed, nothing else changes
cp "$W/clean.img" "$W/d.img"
python3 "$TOP/tests/lib/fixable_damage.py" safelink-bad "$W/d.img" >/dev/null
CONTENT_OF=/big/five_mib protocol "safe link to nothing" "$W/d.img" "$M" SAFELINK_BAD
echo "ok safe link to nothing: removed"

echo "$n safe-link cases repaired as the kernel would, verified, undone and reproduced with --output"

#!/bin/sh
# salvage_hostile.sh - `rfsck salvage` on images crafted to attack the
# extraction (tests/lib/craft_hostile.py edits a kernel-written image):
#   names with '/', absolute and "../" names, ".", "..", a NUL inside a name,
#   a '%' name; symlinks (absolute and "../../../" relative, pointing at a
#   canary directory next to OUTDIR) renamed like a later directory of the
#   same parent, so that a writer that follows symlinks would write into the
#   canary; a directory cycle (an entry pointing at an ancestor), a directory
#   pointing at its parent, a second name for a directory, an entry to a
#   missing object, and a file whose size claims 1 TiB over 64 KiB of data.
# Asserts: salvage ends (timeout) with exit 4 (problems listed in
# report.json), nothing outside OUTDIR changes (snapshot of the canary and of
# WORK before/after, /etc/passwd), every directory under OUTDIR resolves inside
# OUTDIR, the manifest records each crafted name exactly (path_hex) and
# escaped (extracted_as), colliding names are kept apart ("%~2"), hard links
# still go to the right file, the 1 TiB file stays sparse, and the image is
# unchanged.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
src=$TOP/corpus/images/r36-features-r5.img.xz
[ -f "$src" ] || { echo "corpus image r36-features-r5 missing"; exit 77; }
W=$(cd "$WORK" && pwd -P)
xz -dc "$src" >"$W/clean.img"
mkdir "$W/canary"
echo "canary" >"$W/canary/keep"
n255=$(printf 'n%.0s' $(seq 255))
d255=d_$(printf 'd%.0s' $(seq 253))
python3 "$TOP/tests/lib/craft_hostile.py" "$W/clean.img" "$W/hostile.img" \
	--rename "/names/$n255" "$W/canary/abs_escape" \
	--rename "/names/with space and 'quote'" "../../../canary/rel_esc" \
	--rename /names/.hidden .. \
	--rename /names/... . \
	--rename /names/-leading-dash hex:6e756c006d6964 \
	--rename '/names/back\slash' 'pct%41' \
	--rename "/names/$d255" "../../../canary" \
	--symlink-target /links/sym_1000 "$W/canary" \
	--rename /links/sym_1000 b \
	--symlink-target /links/sym_3901 ../../../canary \
	--rename /links/sym_3901 a \
	--point /deep/l0/l1/l2/l3 /deep \
	--point /empty_dirs/x/y /empty_dirs/x \
	--point /special/sticky /links \
	--size /big/rand_64k 1099511627776 \
	--point-key /sizes/sz_0 4 999999
rm -f "$W/clean.img"
chmod 0444 "$W/hostile.img"

mkdir "$W/snap"
snapshot() {
	# everything in WORK except OUTDIR and the snapshots: names, types,
	# sizes, modes, mtimes, contents (WORK's own mtime changes: OUTDIR is new)
	(cd "$W" && find . -mindepth 1 \( -path ./out -o -path ./snap \) -prune -o -print0 | sort -z |
		xargs -0 stat -c '%n %F %s %a %Y' && find . \( -path ./out -o -path ./snap \) -prune -o -type f -print0 |
		sort -z | xargs -0 sha256sum) 2>&1
	sha256sum /etc/passwd
}
snapshot >"$W/snap/before.txt"
img_before=$(sha256sum "$W/hostile.img" | cut -d' ' -f1)

set +e
timeout 120 "$RFSCK" salvage -q "$W/hostile.img" "$W/out"
rc=$?
set -e
[ "$rc" -ne 124 ] || { echo "salvage did not finish in 120 s"; exit 1; }
[ "$rc" -eq 4 ] || { echo "salvage exit $rc, 4 expected (damaged objects listed)"; cat "$W/out/report.json" 2>/dev/null; exit 1; }
snapshot >"$W/snap/after.txt"
diff "$W/snap/before.txt" "$W/snap/after.txt" || { echo "something outside OUTDIR changed"; exit 1; }
[ "$(sha256sum "$W/hostile.img" | cut -d' ' -f1)" = "$img_before" ] || { echo "image changed"; exit 1; }

python3 - "$W" <<'EOF'
import json, os, stat, sys
W = sys.argv[1].encode()
out = os.path.join(W, b"out")
root = os.path.join(out, b"root")
man = {}
for line in open(os.path.join(out, b"manifest.jsonl")):
    e = json.loads(line)
    man.setdefault(bytes.fromhex(e["path_hex"]), []).append(e)
rep = json.load(open(os.path.join(out, b"report.json")))
bad = []

def expect(path, extracted_as, kind):
    es = man.get(path)
    if not es:
        bad.append("no manifest line for %r" % path)
        return
    e = es[0]
    got = bytes.fromhex(e["extracted_as_hex"]) if "extracted_as_hex" in e else (e["extracted_as"] or "").encode()
    if got != extracted_as:
        bad.append("%r extracted as %r, %r expected" % (path, got, extracted_as))
    if not e.get("name_escaped"):
        bad.append("%r: name_escaped not set" % path)
    try:
        st = os.lstat(os.path.join(out, extracted_as))
        if (stat.S_ISDIR(st.st_mode) and kind != "dir") or (stat.S_ISREG(st.st_mode) and kind != "file"):
            bad.append("%r: wrong type" % path)
    except OSError as ex:
        bad.append("%r: %s" % (path, ex))

names = [
    (b"/names" + b"/" + W + b"/canary/abs_escape", b"root/names/" + W.replace(b"/", b"%2F") + b"%2Fcanary%2Fabs_escape", "file"),
    (b"/names/../../../canary/rel_esc", b"root/names/..%2F..%2F..%2Fcanary%2Frel_esc", "file"),
    (b"/names/..", b"root/names/%2E%2E", "file"),
    (b"/names/.", b"root/names/%2E", "file"),
    (b"/names/nul\0mid", b"root/names/nul%00mid", "file"),
    (b"/names/pct%41", b"root/names/pct%2541", "file"),
    (b"/names/../../../canary", b"root/names/..%2F..%2F..%2Fcanary", "dir"),
]
for p, x, k in names:
    expect(p, x, k)

# colliding names in /links: one symlink and one directory each for "a" and "b"
links = os.path.join(root, b"links")
for n in (b"a", b"b"):
    kinds = {}
    for cand in (n, n + b"%~2"):
        st = os.lstat(os.path.join(links, cand))
        kinds[cand] = "link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "?"
    if sorted(kinds.values()) != ["dir", "link"]:
        bad.append("/links/%s: %r" % (n.decode(), kinds))
    d = [c for c, k in kinds.items() if k == "dir"][0]
    inside = os.listdir(os.path.join(links, d))
    want = [b"orig"] if n == b"a" else [b"hard1", b"sym_rel"]
    if sorted(inside) != want:
        bad.append("/links/%s directory holds %r" % (n.decode(), inside))
    if len(man.get(b"/links/" + n, [])) != 2:
        bad.append("/links/%s: %d manifest lines, 2 expected" % (n.decode(), len(man.get(b"/links/" + n, []))))
a_dir = [c for c in (b"a", b"a%~2") if os.path.isdir(os.path.join(links, c)) and not os.path.islink(os.path.join(links, c))][0]
b_dir = [c for c in (b"b", b"b%~2") if os.path.isdir(os.path.join(links, c)) and not os.path.islink(os.path.join(links, c))][0]
i1 = os.lstat(os.path.join(links, a_dir, b"orig")).st_ino
i2 = os.lstat(os.path.join(links, b_dir, b"hard1")).st_ino
i3 = os.lstat(os.path.join(links, b"hard2")).st_ino
if not (i1 == i2 == i3):
    bad.append("hard links of /links/a/orig broken")
tgt = {os.readlink(os.path.join(links, c)) for c in (b"a", b"a%~2", b"b", b"b%~2") if os.path.islink(os.path.join(links, c))}
if tgt != {b"../../../canary", W + b"/canary"}:
    bad.append("symlink targets %r" % tgt)

# cycles, a second name for a directory, a missing object
for p in (b"/deep/l0/l1/l2/l3", b"/empty_dirs/x/y", b"/special/sticky"):
    st = [e["status"] for e in man.get(p, [])]
    if st != ["not_extracted"]:
        bad.append("%r: status %r, not_extracted expected" % (p, st))
if [e["status"] for e in man.get(b"/sizes/sz_0", [])] != ["unreadable"]:
    bad.append("/sizes/sz_0: %r" % man.get(b"/sizes/sz_0"))
if rep["exit"] != 4 or rep["totals"]["errors"] < 4 or len(rep["problems"]) != rep["totals"]["errors"]:
    bad.append("report: exit %r errors %r problems %d" % (rep["exit"], rep["totals"]["errors"], len(rep["problems"])))
if not any("cycle" in p["problem"] for p in rep["problems"]):
    bad.append("no cycle problem in report.json")

# 1 TiB claimed over 64 KiB of data: sparse, and no digest of a terabyte of zeros
st = os.lstat(os.path.join(root, b"big/rand_64k"))
if st.st_size != 1 << 40 or st.st_blocks * 512 > (1 << 20):
    bad.append("rand_64k: size %d, %d bytes allocated" % (st.st_size, st.st_blocks * 512))
e = man[b"/big/rand_64k"][0]
if "sha256" in e or "not computed" not in e.get("note", ""):
    bad.append("rand_64k: %r" % e)

# nothing under OUTDIR resolves outside it; total allocation stays small
real_out = os.path.realpath(out)
alloc = 0
for d, dirs, files in os.walk(out, followlinks=False):
    if not os.path.realpath(d).startswith(real_out + b"/") and os.path.realpath(d) != real_out:
        bad.append("directory %r resolves outside OUTDIR" % d)
    for f in files:
        alloc += os.lstat(os.path.join(d, f)).st_blocks * 512
if alloc > 64 << 20:
    bad.append("OUTDIR allocates %d bytes" % alloc)
for b in bad:
    print("  " + b)
print("hostile image: %d manifest lines, %d escaped names, %d problems in report.json, %d bytes allocated under OUTDIR, %d failures"
      % (sum(len(v) for v in man.values()), rep["totals"]["escaped_names"], rep["totals"]["errors"], alloc, len(bad)))
sys.exit(1 if bad else 0)
EOF
echo "hostile image salvaged safely"

# Unreadable data (a ddrescue mapfile marks one data block of /big/five_mib
# bad): the rest of the file and of the image is extracted, the block's range
# is written as zeros and listed as missing, status "partial", exit 4.
xz -dc "$src" >"$W/clean.img"
chmod 0444 "$W/clean.img"
"$RFSCK" salvage -q "$W/clean.img" "$W/ref"
python3 - "$W" <<'EOF2'
import json, sys
W = sys.argv[1]
e = [json.loads(l) for l in open(W + "/ref/manifest.jsonl") if json.loads(l)["path"] == "/big/five_mib"][0]
first, count = e["source_blocks"][0]
assert count > 20, e["source_blocks"]
bad = first + 10
size = 16777216
with open(W + "/bad.map", "w") as f:
    f.write("# Mapfile. Created by salvage_hostile.sh\n# current_pos  current_status  current_pass\n0x0  +  1\n")
    f.write("0x%x 0x%x +\n0x%x 0x1000 -\n0x%x 0x%x +\n" % (0, bad * 4096, bad * 4096, bad * 4096 + 4096, size - bad * 4096 - 4096))
EOF2
set +e
timeout 120 "$RFSCK" salvage -q --mapfile "$W/bad.map" "$W/clean.img" "$W/mapped"
rc=$?
set -e
[ "$rc" -eq 4 ] || { echo "salvage with a bad block: exit $rc, 4 expected"; exit 1; }
python3 - "$W" <<'EOF2'
import hashlib, json, sys
W = sys.argv[1]
man = {json.loads(l)["path"]: json.loads(l) for l in open(W + "/mapped/manifest.jsonl")}
ref = {json.loads(l)["path"]: json.loads(l) for l in open(W + "/ref/manifest.jsonl")}
e = man["/big/five_mib"]
assert e["status"] == "partial" and e["missing"] == [[40960, 45056]] and "sha256" not in e, e
want = bytearray(open(W + "/ref/root/big/five_mib", "rb").read())
want[40960:45056] = bytes(4096)
got = open(W + "/mapped/root/big/five_mib", "rb").read()
assert got == bytes(want), "partial content differs from the reference with zeros in the bad block"
others = [p for p in ref if p != "/big/five_mib" and (man[p]["status"] != ref[p]["status"] or man[p].get("sha256") != ref[p].get("sha256"))]
assert not others, others
rep = json.load(open(W + "/mapped/report.json"))
assert rep["exit"] == 4 and rep["totals"]["errors"] == 1, rep["totals"]
print("bad block: five_mib partial, missing [40960, 45056) as zeros, %d other objects identical" % (len(ref) - 1))
EOF2
echo "unreadable block handled"

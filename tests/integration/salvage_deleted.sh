#!/bin/sh
# salvage_deleted.sh - `rfsck salvage --deleted` against what was measured by
# hand on the kernel-written corpus (docs/salvage.md, "Deleted objects"); the
# expectations and checks are in tests/lib/salvage_deleted.py.  Every run is
# on a read-only (0444) copy whose sha256 must not change.
#   - r36-features-r5: without --deleted nothing of it appears; with it, the
#     13 deleted files (f0, f2 .. f22, big_gone; features.sh) come back under
#     deleted/deleted/ byte-identical to the generator's output, and the
#     deleted directory /empty_dirs/x/y/z; no live file is among them; the
#     rest of the output is identical with and without the flag; `mactime`
#     reads the body file; the same in the damaged-tree mode (--scan; the
#     zero-root damage; a salvage reusing the index of `rebuild --dry-run
#     --scan all`, which then reads fewer blocks);
#   - a data block of deleted/f0 overwritten and marked used (reused): f0
#     comes back with exactly that block's range missing, as zeros;
#   - r35-features-r5 (deleted_later_1, 3, 5), r36-crash-safelink (victim,
#     victim_small_tail), r36-hash-tea (25 empty entry_6xx): all back, intact;
#     and the old names of r36-hash-tea's 25 renamed files, of live objects;
#   - r36-crash-commit (base/b2, b3 left no stale copy) and r36-nested (a
#     nested image in a live file is no stale leaf): nothing under deleted/;
#   - r36-nested.damaged: the 18 files of the zeroed leaf come back from a
#     journal copy, intact, flagged blocks_marked_used;
#   - a hostile stale leaf (tests/lib/craft_stale.py) in a free block: names
#     with "/" and "..", a symlink and a directory of one name, two deleted
#     directories naming each other, a 1 TiB file pointing at a block in use,
#     a bitmap block, a block beyond the end and a free block: everything stays
#     inside OUTDIR/deleted, escaped, sparse, and only the free block is read.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
chk=$TOP/tests/lib/salvage_deleted.py
sum() { sha256sum "$1" | cut -d' ' -f1; }

# salvage IMG OUT [ARGS...]: runs salvage, keeps the exit in $rc, and fails
# on anything but 0/4, a change of the image, or something beside OUTDIR.
salvage() {
	s_img=$1; s_out=$2; shift 2
	before=$(sum "$s_img")
	rm -rf "$W/box"; mkdir "$W/box"
	set +e
	"$RFSCK" salvage -q "$@" "$s_img" "$W/box/out" >/dev/null 2>"$W/err"
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || [ "$rc" -eq 4 ] || { echo "salvage $* $s_img: exit $rc"; cat "$W/err"; exit 1; }
	[ "$(sum "$s_img")" = "$before" ] || { echo "salvage $* $s_img: the image changed"; exit 1; }
	[ "$(ls -A "$W/box")" = out ] || { echo "salvage $*: something beside OUTDIR"; ls -A "$W/box"; exit 1; }
	rm -rf "$s_out"; mv "$W/box/out" "$s_out"
}

unpack() {   # NAME -> $W/NAME.img, read-only
	rm -f "$W/$1.img"
	xz -dc "$TOP/corpus/images/$1.img.xz" >"$W/$1.img"
	chmod 0444 "$W/$1.img"
}

# --- r36-features-r5, healthy tree ---------------------------------------
unpack r36-features-r5
I=$W/r36-features-r5.img
salvage "$I" "$W/plain"
python3 "$chk" absent "$W/plain"
salvage "$I" "$W/del" --deleted
python3 "$chk" expect "$W/del" r36-features-r5 --exit 0
python3 "$chk" same "$W/plain" "$W/del"
if command -v mactime >/dev/null 2>&1; then
	mactime -b "$W/del/bodyfile" -d >"$W/timeline" 2>"$W/err" || { echo "mactime failed"; cat "$W/err"; exit 1; }
	n=$(grep -c '(deleted)' "$W/timeline" || true)
	[ "$n" -ge 14 ] || { echo "mactime lists $n '(deleted)' events, fewer than the 14 objects"; exit 1; }
	echo "ok mactime reads the body file ($n '(deleted)' events)"
fi

# --- the same in the damaged-tree mode -----------------------------------
salvage "$I" "$W/plain_scan" --scan
salvage "$I" "$W/del_scan" --scan --deleted
python3 "$chk" expect "$W/del_scan" r36-features-r5 --exit 0
python3 "$chk" same "$W/plain_scan" "$W/del_scan"
# a rebuild's index of every block: only its leaves among the free blocks are read
"$RFSCK" rebuild --dry-run -q --scan all --index "$W/ev.db" "$I" >/dev/null
salvage "$I" "$W/del_ix" --index "$W/ev.db" --deleted
python3 "$chk" expect "$W/del_ix" r36-features-r5 --exit 0
python3 - "$W/del_ix/report.json" "$W/del/report.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["deleted_scan"] for p in sys.argv[1:])
assert a["free_blocks_from_index"] is True and a["blocks_skipped_by_index"] > 0, a
assert a["blocks_read"] + a["blocks_skipped_by_index"] == b["blocks_read"], (a, b)
assert a["stale_leaves_free"] == b["stale_leaves_free"] == 1, (a, b)
print("ok --index: %d blocks read instead of %d" % (a["blocks_read"], b["blocks_read"]))
PY
python3 "$TOP/tests/lib/rebuild_case.py" damage zero-root 1 0 "$W/r36-features-r5.img" "$W/zr.img" "$W/zr.json" >/dev/null
chmod 0444 "$W/zr.img"
salvage "$W/zr.img" "$W/zr_plain"
salvage "$W/zr.img" "$W/zr_del" --deleted
python3 "$chk" expect "$W/zr_del" r36-features-r5
python3 "$chk" same "$W/zr_plain" "$W/zr_del"

# --- a block of a deleted file reused: never presented as its content -----
range=$(python3 "$chk" reuse "$I" "$W/del" /deleted/f0 2 "$W/reused.img")
chmod 0444 "$W/reused.img"
# shellcheck disable=SC2086
set -- $range
salvage "$W/reused.img" "$W/del_reused" --deleted
python3 "$chk" expect "$W/del_reused" r36-features-r5 --missing /deleted/f0 "$1" "$2"

# --- a hostile stale leaf (tests/lib/craft_stale.py) ----------------------
python3 "$TOP/tests/lib/craft_stale.py" "$I" "$W/hostile.img" >"$W/hostile.json"
chmod 0444 "$W/hostile.img"
salvage "$W/hostile.img" "$W/hplain"
python3 "$chk" absent "$W/hplain"
salvage "$W/hostile.img" "$W/hdel" --deleted
[ "$rc" -eq 0 ] || { echo "hostile stale leaf: exit $rc"; exit 1; }
python3 "$chk" same "$W/hplain" "$W/hdel"
python3 - "$W/hdel" "$W/hostile.json" <<'PY'
import hashlib, json, os, stat, sys
out, facts = sys.argv[1], json.load(open(sys.argv[2]))
man = {}
for l in open(os.path.join(out, "manifest.jsonl")):
    e = json.loads(l)
    if e["status"] == "deleted":
        man.setdefault(e["path"], []).append(e)
bad = []
def line(path, key):
    for e in man.get(path, []):
        if e["key"] == key:
            return e
    bad.append("%s %s: no deleted line" % (path, key))
    return {}
D = os.path.join(out, "deleted")
# a name with "/" and "..": escaped, inside deleted/, with every pointer judged
e = line("/../../escape", [2, 950])
bs, data = 4096, 3 * 4096
want = [[0, data], [data + bs + bs, 1 << 40]]   # in use, bitmap, beyond; DATA read; a hole
if e.get("extracted_as") != "deleted/..%2F..%2Fescape" or e.get("missing") != want or "sha256" in e \
        or e.get("source_blocks") != [[facts["data"], 1]]:
    bad.append("escape: %r" % e)
p = os.path.join(D, "..%2F..%2Fescape")
st = os.lstat(p)
if not stat.S_ISREG(st.st_mode) or st.st_size != 1 << 40 or st.st_blocks * 512 > 1 << 20:
    bad.append("escape: size %d, %d bytes allocated" % (st.st_size, st.st_blocks * 512))
with open(p, "rb") as f:
    f.seek(data)
    if hashlib.sha256(f.read(bs)).hexdigest() != facts["data_sha256"]:
        bad.append("escape: the free block's data is not where the pointer puts it")
    f.seek(0)
    if f.read(data) != bytes(data):
        bad.append("escape: a block in use / metadata / beyond the end was presented")
e = line("/a/b", [2, 951])
if e.get("extracted_as") != "deleted/a%2Fb" or open(os.path.join(D, "a%2Fb"), "rb").read() != b"hello":
    bad.append("a/b: %r" % e)
# a deleted directory and a deleted symlink of one name: the symlink is
# created beside it, never followed
d, l = line("/link", [2, 955]), line("/link", [2, 952])
if not stat.S_ISDIR(os.lstat(os.path.join(D, "link")).st_mode) or d.get("extracted_as") != "deleted/link":
    bad.append("link (dir): %r" % d)
if l.get("extracted_as") != "deleted/link%~2" or os.readlink(os.path.join(D, "link%~2")) != "/etc/passwd":
    bad.append("link (symlink): %r" % l)
if open(os.path.join(D, "link", "inner"), "rb").read() != b"inside\n":
    bad.append("link/inner")
# two deleted directories naming each other: placed once each, no name reached
cyc = [e for es in man.values() for e in es if e["key"] in ([2, 953], [953, 954])]
if len(cyc) != 2 or any(e["name_resolved"] or e["type"] != "dir" or not e["extracted_as"].startswith("deleted/")
                        or not os.path.isdir(os.path.join(out, e["extracted_as"])) for e in cyc):
    bad.append("cycle: %r" % cyc)
rep = json.load(open(os.path.join(out, "report.json")))
if rep["totals"]["deleted"]["objects"] != 14 + 7 or rep["deleted_scan"]["stale_leaves_free"] != 2:
    bad.append("totals %r scan %r" % (rep["totals"]["deleted"], rep["deleted_scan"]))
if bad:
    print("hostile stale leaf: %d problem(s)" % len(bad))
    for b in bad:
        print("  - " + b)
    sys.exit(1)
print("ok hostile stale leaf: names escaped, nothing followed, pointers judged, the cycle placed")
PY

# --- other images ---------------------------------------------------------
for img in r35-features-r5 r36-crash-safelink r36-hash-tea r36-crash-commit r36-nested r36-nested.damaged; do
	unpack "$img"
	salvage "$W/$img.img" "$W/p_$img"
	rc_plain=$rc
	salvage "$W/$img.img" "$W/d_$img" --deleted
	[ "$rc" -eq "$rc_plain" ] || { echo "$img: exit $rc with --deleted, $rc_plain without"; exit 1; }
	python3 "$chk" expect "$W/d_$img" "$img"
	python3 "$chk" same "$W/p_$img" "$W/d_$img"
	rm -f "$W/$img.img"
done
echo "salvage --deleted: all cases as measured"

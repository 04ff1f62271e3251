#!/bin/sh
# fix_relink.sh - objects that no name reaches (ORPHAN_OBJECT): reported and
# left by `rfsck fix`, linked into /lost+found as DIRID_OBJECTID by
# `rfsck fix --relink` (/lost+found made when missing).
# Orphans are made from kernel-written images by removing one directory entry
# (tests/lib/fixable_damage.py orphan PATH: the directory's size, block count
# and link count follow, so the orphan is the only problem).
#
# Every case:
#   - check: exit 6, only ORPHAN_OBJECT (as many as the subtree has objects);
#   - fix without --relink, real and dry run: exit 6, nothing written (no undo
#     file either), the orphans named in the output as left;
#   - fix --relink --dry-run: exit 6, image unchanged; then fix --relink: exit
#     1, the same repairs and blocks; check exit 0; reiserfsck --check clean;
#     the ground truth with the orphan's subtree under /lost+found/D_O: every
#     entry's type, size, mode, owner, mtime, link count and objectid, and the
#     contents of the moved files; /lost+found itself as predicted (mode 0700,
#     the root's mtime, the first free objectid of the map, its size and link
#     count from its entries), the root and the old parent with their sizes
#     and link counts updated;
#   - undo restores byte for byte; --output gives the in-place bytes.
# Cases: a file and a 62-object directory tree (r36-features-r5); a 3.5
# volume (r35-features-r5); a root leaf with 20 bytes free, so that the name
# "lost+found" splits it (r36-stdjournal-r5: 41 leaves -> 42); /lost+found
# there already (a second orphan after the first case); a name removed from
# a leaf's first item (r36-hash-tea: the key above the leaf follows); an
# orphan next to other damage without --relink (the rest is repaired, the
# orphan left).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
IMG=$TOP/corpus/images
sum() { sha256sum "$1" | cut -d' ' -f1; }
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
codes() { jget "$1" '" ".join(sorted(set(p["code"] for p in d["problems"] if p["severity"]!="info")))'; }
n=0

# The ground truth after relinking ORPHAN (a path of SRC_IMAGE, whose
# manifest is MANIFEST; DAMAGED is the image with the orphan; LF_JSON the
# existing /lost+found's entry or "-"): writes OUT, prints the moved paths.
cat >"$W/expect.py" <<'PY'
import json, struct, subprocess, sys
rfsck, manifest, src, damaged, orphan, out, lf_json, lib = sys.argv[1:9]
rows = [json.loads(l) for l in open(manifest)]
d = open(damaged, "rb").read()
sb = 65536
v35 = struct.unpack_from("<H", d, sb + 72)[0] == 0 and d[sb + 52:sb + 61] != b"ReIsEr2Fs"
slot = (lambda n: n) if v35 else (lambda n: (n + 7) // 8 * 8)
ls = {e["path"]: e for e in json.loads(subprocess.run([rfsck, "ls", "-R", "--json", src],
                                         stdout=subprocess.PIPE, check=True).stdout)["entries"]}
o = ls[orphan]
name = "%d_%d" % (o["dirid"], o["objectid"])
parent, base = orphan.rsplit("/", 1)
parent = parent or "/"
is_dir = o["type"] == "dir"
lf = json.loads(lf_json) if lf_json != "-" else None
created = lf is None
if created:
    root = [r for r in rows if r["path"] == "/"][0]
    first_free = struct.unpack_from("<I", d, sb + (76 if v35 else 204) + 4)[0]
    # "." and ".." stored as the root stores its own
    sys.path.insert(0, lib)
    from craft_hostile import Image
    slots = {e[3]: e[2] for e in Image(bytearray(d)).entries(1, 2) if e[3] in (b".", b"..")}
    dots = 32 + slots[b"."] + slots[b".."]
    lf = {"path": "/lost+found", "type": "dir", "size": dots, "mode": 0o40700, "uid": 0,
          "gid": 0, "mtime": root["mtime"], "nlink": 2, "ino": first_free}
lf = dict(lf)
lf["size"] += 16 + slot(len(name))
lf["nlink"] += 1 if is_dir else 0
moved = []
with open(out, "w") as f:
    for r in rows:
        p = r["path"]
        if p == orphan or p.startswith(orphan + "/"):
            r["path"] = "/lost+found/" + name + p[len(orphan):]
            r["path_hex"] = r["path"].encode("utf-8", "surrogateescape").hex()
            moved.append(r["path"])
        elif p == "/lost+found":
            continue
        if p == parent:
            r["size"] -= 16 + slot(len(base.encode("utf-8", "surrogateescape")))
            r["nlink"] -= 1 if is_dir and r["nlink"] > 2 else 0
        if p == "/" and created:
            r["size"] += 16 + slot(len(b"lost+found"))
            r["nlink"] += 1
        f.write(json.dumps(r) + "\n")
    lf["path_hex"] = b"/lost+found".hex()
    f.write(json.dumps(lf) + "\n")
print(" ".join(moved))
PY
# metadata of every entry from one `rfsck ls -R --json`, contents of the
# files named after the manifest (the moved ones)
cat >"$W/light.py" <<'PY'
import hashlib, json, subprocess, sys
rfsck, image, manifest = sys.argv[1:4]
content = set(p.encode("utf-8", "surrogateescape") for p in sys.argv[4:])
truth = {bytes.fromhex(e["path_hex"]): e for e in map(json.loads, open(manifest))}
ls = subprocess.run([rfsck, "ls", "-R", "--json", image], stdout=subprocess.PIPE, check=True)
ours = {bytes.fromhex(e["path_hex"]): e for e in json.loads(ls.stdout)["entries"]}
bad, read = [], 0
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
        bad.append("%r: objectid %r, %r expected" % (path, e.get("objectid"), t.get("ino")))
    if path in content and t["type"] == "file":
        c = subprocess.run([rfsck, "cat", image, path], stdout=subprocess.PIPE, check=True)
        read += 1
        if hashlib.sha256(c.stdout).hexdigest() != t["sha256"]:
            bad.append("%r: content differs" % path)
bad += ["not in the manifest: %r" % p for p in ours if p not in truth and not p.startswith(b"/.reiserfs_priv")]
print("\n".join(bad[:40]))
print("%d entries, %d contents read, %d disagreements" % (len(truth), read, len(bad)))
sys.exit(1 if bad else 0)
PY
# (the root's own size and link count are not listed by ls -R; check judges
# them: DIR_SIZE_WRONG, NLINK_WRONG)

# relink_case NAME CLEAN_IMAGE MANIFEST ORPHAN_PATH ORPHANS [LF_JSON]
relink_case() {
	name=$1; clean=$2; manifest=$3; orphan=$4; want_orphans=$5; lfjson=${6:--}
	img=$W/d.img
	cp "$clean" "$img"
	python3 "$TOP/tests/lib/fixable_damage.py" orphan "$img" "$orphan" >/dev/null
	rm -f "$img.rfsck-undo" "$W/out.img"
	set +e
	"$RFSCK" check --json "$img" >"$W/c1.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] && [ "$(codes "$W/c1.json")" = ORPHAN_OBJECT ] ||
		{ echo "$name: check exit $rc, codes [$(codes "$W/c1.json")]"; exit 1; }
	got=$(jget "$W/c1.json" 'sum(1 for p in d["problems"] if p["code"]=="ORPHAN_OBJECT")')
	[ "$got" -eq "$want_orphans" ] || { echo "$name: $got orphans, $want_orphans expected"; exit 1; }
	damaged=$(sum "$img")
	# without --relink: reported, nothing written
	for mode in --dry-run --yes; do
		set +e
		"$RFSCK" fix $mode "$img" >"$W/norelink.out"; rc=$?
		set -e
		[ "$rc" -eq 6 ] || { echo "$name: fix $mode without --relink: exit $rc"; exit 1; }
		[ "$(sum "$img")" = "$damaged" ] && [ ! -e "$img.rfsck-undo" ] ||
			{ echo "$name: fix $mode without --relink wrote"; exit 1; }
		grep -q "only with --relink" "$W/norelink.out" || { echo "$name: no word on --relink"; exit 1; }
	done
	set +e
	"$RFSCK" fix --relink --dry-run --json "$img" >"$W/dry.json"; rc=$?
	set -e
	[ "$rc" -eq 6 ] && [ "$(sum "$img")" = "$damaged" ] || { echo "$name: --relink --dry-run exit $rc or wrote"; exit 1; }
	cp "$img" "$W/copy.img"
	set +e
	"$RFSCK" fix --relink --yes --json "$img" >"$W/real.json"; rc=$?
	set -e
	[ "$rc" -eq 1 ] || { echo "$name: fix --relink exit $rc, 1 expected"; cat "$W/real.json"; exit 1; }
	[ "$(jget "$W/real.json" 'd["repairs"]')" -eq "$want_orphans" ] || { echo "$name: $(jget "$W/real.json" 'd["repairs"]') repairs"; exit 1; }
	[ "$(codes "$W/dry.json")" = "$(codes "$W/real.json")" ] &&
		[ "$(jget "$W/dry.json" 'd["blocks_written"]')" = "$(jget "$W/real.json" 'd["blocks_written"]')" ] ||
		{ echo "$name: dry-run and real runs differ"; exit 1; }
	"$RFSCK" check -q "$img" || { echo "$name: check after fix: exit $?"; "$RFSCK" check "$img"; exit 1; }
	cp "$img" "$W/rf.img"
	set +e
	reiserfsck --check --yes "$W/rf.img" >"$W/rf.log" 2>&1; rrc=$?
	set -e
	[ "$rrc" -eq 0 ] || { echo "$name: reiserfsck --check after fix: exit $rrc"; tail -20 "$W/rf.log"; exit 1; }
	moved=$(python3 "$W/expect.py" "$RFSCK" "$manifest" "$clean" "$W/copy.img" "$orphan" "$W/expected.jsonl" "$lfjson" "$TOP/tests/lib")
	python3 "$W/light.py" "$RFSCK" "$img" "$W/expected.jsonl" $moved >"$W/cmp.log" ||
		{ echo "$name: the relinked tree differs from the ground truth"; cat "$W/cmp.log"; exit 1; }
	fixed=$(sum "$img")
	"$RFSCK" undo -q "$img.rfsck-undo" "$img" >/dev/null
	[ "$(sum "$img")" = "$damaged" ] || { echo "$name: undo did not restore the damaged image"; exit 1; }
	"$RFSCK" fix --relink --yes -q --output "$W/out.img" "$W/copy.img" || [ $? -eq 1 ]
	[ "$(sum "$W/out.img")" = "$fixed" ] || { echo "$name: --output differs from the in-place fix"; exit 1; }
	cp "$W/out.img" "$W/fixed.img"
	n=$((n + 1))
	echo "ok $name: $want_orphans orphan(s) under /lost+found, $(tail -1 "$W/cmp.log")"
}

leaves() { "$RFSCK" check --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["statistics"]["leaves"])'; }
lf_entry() {   # the /lost+found entry of an image, as expect.py's LF_JSON
	"$RFSCK" ls -R --json "$1" | python3 -c '
import json, sys
e = [e for e in json.load(sys.stdin)["entries"] if e["path"] == "/lost+found"][0]
print(json.dumps({"path": "/lost+found", "type": "dir", "size": e["size"], "mode": e["mode"],
                  "uid": e["uid"], "gid": e["gid"], "mtime": e["mtime"], "nlink": e["nlink"],
                  "ino": e["objectid"]}))'
}

xz -dc "$IMG/r36-features-r5.img.xz" >"$W/r36.img"
M36=$IMG/r36-features-r5.manifest.jsonl
relink_case "file /big/five_mib" "$W/r36.img" "$M36" /big/five_mib 1
cp "$W/fixed.img" "$W/with-lf.img"
relink_case "directory tree /deep" "$W/r36.img" "$M36" /deep 62

# /lost+found already there: a second orphan in the image the first case made
lf=$(lf_entry "$W/with-lf.img")
"$RFSCK" ls -R --json "$W/with-lf.img" | python3 -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    r = {k: e.get(k) for k in ("path", "path_hex", "type", "size", "mode", "uid", "gid", "mtime", "nlink")}
    r["ino"] = e["objectid"]
    if e["path"] != "/lost+found":
        print(json.dumps(r))' >"$W/with-lf.jsonl"
# contents: from the original manifest, for the files that kept or changed their path
python3 - "$M36" "$W/with-lf.jsonl" <<'PY'
import json, sys
orig = {r["ino"]: r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "file"}
rows = [json.loads(l) for l in open(sys.argv[2])]
with open(sys.argv[2], "w") as f:
    for r in rows:
        if r["type"] == "file" and r["ino"] in orig:
            r["sha256"] = orig[r["ino"]]["sha256"]
        f.write(json.dumps(r) + "\n")
PY
lfo=$(echo "$lf" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ino"])')
relink_case "second orphan, /lost+found there" "$W/with-lf.img" "$W/with-lf.jsonl" /sizes/sz_100000 1 "$lf"
lfo2=$(lf_entry "$W/fixed.img" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ino"])')
[ "$lfo" = "$lfo2" ] || { echo "/lost+found was made again ($lfo -> $lfo2)"; exit 1; }

xz -dc "$IMG/r35-features-r5.img.xz" >"$W/r35.img"
relink_case "3.5 volume /big_two_indirect" "$W/r35.img" "$IMG/r35-features-r5.manifest.jsonl" /big_two_indirect 1

xz -dc "$IMG/r36-stdjournal-r5.img.xz" >"$W/std.img"
before=$(leaves "$W/std.img")
relink_case "full root leaf (r36-stdjournal-r5) /similar/01" "$W/std.img" \
	"$IMG/r36-stdjournal-r5.manifest.jsonl" /similar/01 1
after=$(leaves "$W/fixed.img")
[ "$before" -eq 41 ] && [ "$after" -eq 42 ] || { echo "root leaf split: $before -> $after leaves, 41 -> 42 measured"; exit 1; }
echo "ok the root leaf split: $before -> $after leaves"

# a name removed from the first item of a leaf (the leaf's first key and the
# key above it change: the removal goes through the tree-edit layer); its
# file, nameless now, is relinked with --relink, and left without it
xz -dc "$IMG/r36-hash-tea.img.xz" >"$W/tea.img"
for opt in "" --relink; do
	cp "$W/tea.img" "$W/d.img"
	python3 "$TOP/tests/lib/fixable_damage.py" dangling-leaf-first "$W/d.img" >/dev/null
	rm -f "$W/d.img.rfsck-undo"
	set +e
	"$RFSCK" check --json "$W/d.img" >"$W/c1.json"; rc=$?
	"$RFSCK" fix --yes --json $opt "$W/d.img" >"$W/real.json"; frc=$?
	"$RFSCK" check --json "$W/d.img" >"$W/after.json"; crc=$?
	set -e
	[ "$rc" -eq 6 ] && [ "$(codes "$W/c1.json")" = "ENTRY_POINTS_NOWHERE ORPHAN_OBJECT" ] ||
		{ echo "dangling-leaf-first: check exit $rc [$(codes "$W/c1.json")]"; exit 1; }
	if [ -z "$opt" ]; then
		[ "$frc" -eq 6 ] && [ "$crc" -eq 6 ] && [ "$(codes "$W/after.json")" = ORPHAN_OBJECT ] ||
			{ echo "dangling-leaf-first: fix $frc, then check $crc [$(codes "$W/after.json")]"; exit 1; }
	else
		[ "$frc" -eq 1 ] && [ "$crc" -eq 0 ] || { echo "dangling-leaf-first --relink: fix $frc, check $crc"; exit 1; }
		"$RFSCK" ls "$W/d.img" /lost+found | grep -q '_' || { echo "dangling-leaf-first: nothing in /lost+found"; exit 1; }
	fi
	cp "$W/d.img" "$W/rf.img"
	reiserfsck --check --yes -q "$W/rf.img" >"$W/rf.log" 2>&1 ||
		{ echo "dangling-leaf-first $opt: reiserfsck finds corruption"; tail -5 "$W/rf.log"; exit 1; }
	"$RFSCK" undo -q "$W/d.img.rfsck-undo" "$W/d.img" >/dev/null
	cp "$W/tea.img" "$W/d2.img"
	python3 "$TOP/tests/lib/fixable_damage.py" dangling-leaf-first "$W/d2.img" >/dev/null
	[ "$(sum "$W/d.img")" = "$(sum "$W/d2.img")" ] || { echo "dangling-leaf-first: undo does not restore"; exit 1; }
done
echo "ok a leaf's first name removed (key above follows), its file relinked with --relink"

# other damage next to an orphan, without --relink: the rest is repaired
cp "$W/r36.img" "$W/d.img"
python3 "$TOP/tests/lib/fixable_damage.py" orphan "$W/d.img" /big/five_mib >/dev/null
python3 "$TOP/tests/lib/fixable_damage.py" root-nlink "$W/d.img" >/dev/null
rm -f "$W/d.img.rfsck-undo"
set +e
"$RFSCK" fix --yes --json "$W/d.img" >"$W/mixed.json"; rc=$?
"$RFSCK" check --json "$W/d.img" >"$W/after.json"; rc2=$?
set -e
[ "$rc" -eq 6 ] && [ "$rc2" -eq 6 ] && [ "$(codes "$W/after.json")" = ORPHAN_OBJECT ] ||
	{ echo "orphan + root-nlink without --relink: fix $rc, check $rc2 [$(codes "$W/after.json")]"; exit 1; }
[ "$(jget "$W/mixed.json" 'd["repairs"]')" -eq 1 ] || { echo "orphan + root-nlink: $(jget "$W/mixed.json" 'd["repairs"]') repairs, 1 expected"; exit 1; }
echo "ok orphan next to other damage without --relink: the other repaired, the orphan left"

echo "$n relink cases: orphans under /lost+found, verified, undone and reproduced with --output"

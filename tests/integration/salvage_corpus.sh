#!/bin/sh
# salvage_corpus.sh - `rfsck salvage` against the ground truth of the
# kernel-written corpus (corpus/images/*.img.xz + *.manifest.jsonl), on every
# image and on the pre-replay copies of the power-cut images (journal replayed
# in memory only).  For each, on a read-only (0444) copy of the image:
#   - exit 0, report.json: errors 0, image sha256 before = after = sha256sum,
#     timing phases (digest, extraction, digest) that make up its seconds;
#   - every manifest path exists under OUTDIR/root (names mapped through the
#     escaping rule, reimplemented here) with the same type, mode, uid, gid,
#     mtime; files byte-identical (sha256) and symlink targets exact; names of
#     one inode are hard links of one output file, with the manifest's nlink;
#   - files with holes stay sparse (allocated < apparent size for a file with
#     a hole of 1 MB or more);
#   - OUTDIR holds nothing the manifest lacks (except /.reiserfs_priv);
#   - rfsck's manifest.jsonl has a "complete" line per object with the right
#     key, sha256 and target; `mactime -b` reads the body file;
#   - the image file is byte-identical afterwards.
# Then, on r36-features-r5: --devices creates the FIFO and devices (as root),
# a run as uid 65534 extracts everything but ownership (exit 0),
# a non-empty OUTDIR is refused with exit 16 and accepted with --force, and
# --json prints one object.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
dir=$TOP/corpus/images
# mactime comes with Debian's sleuthkit, which `make test` installs.
command -v mactime >/dev/null 2>&1 || { echo "mactime missing (apt-get install sleuthkit)"; exit 1; }
have_mactime=1

cat >"$WORK/verify.py" <<'EOF'
import hashlib, json, os, stat, sys

outdir, truth_path, image_sha, devices = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
root = os.path.join(outdir.encode(), b"root")
bad = []

def esc(name):
    # docs/salvage.md: '%', '/', NUL -> %XX; "." / ".." -> %2E / %2E%2E; "" -> %
    if name == b"":
        return b"%"
    if name in (b".", b".."):
        return b"%2E" * len(name)
    out = b"".join(b"%%%02X" % c if c in (0x25, 0x2F, 0) else bytes([c]) for c in name)
    assert len(out) <= 255, "test corpus has no over-long names"
    return out

def outpath(p):
    comps = [c for c in p.split(b"/") if c != b""]
    return os.path.join(root, *[esc(c) for c in comps]) if comps else root

truth = [json.loads(l) for l in open(truth_path)]
ours = {}
for line in open(os.path.join(outdir, "manifest.jsonl")):
    e = json.loads(line)
    ours[bytes.fromhex(e["path_hex"])] = e
report = json.load(open(os.path.join(outdir, "report.json")))
if report["image_sha256"]["before"] != image_sha or report["image_sha256"]["after"] != image_sha:
    bad.append("report.json image sha256 %r, sha256sum says %s" % (report["image_sha256"], image_sha))
if report["totals"]["errors"] != 0 or report["exit"] != 0 or report["status"] != "complete":
    bad.append("report.json: errors %r exit %r status %r" % (report["totals"]["errors"], report["exit"], report["status"]))
# the three phases follow one another and make up the run
ph = report["timing"].get("phases") or {}
parts = [ph.get(k) for k in ("image_digest_before", "extract", "image_digest_after")]
if any(not isinstance(x, (int, float)) or x < 0 for x in parts) or \
        abs(sum(parts) - report["timing"]["seconds"]) > 1e-3:
    bad.append("report.json: timing phases %r do not make up %r s" % (ph, report["timing"]["seconds"]))

by_ino = {}
# owners are compared when the salvage ran as root (argument 5 overrides)
is_root = sys.argv[5] == "1" if len(sys.argv) > 5 else os.geteuid() == 0
sparse_checked = 0
for t in truth:
    p = bytes.fromhex(t["path_hex"])
    o = outpath(p)
    m = ours.get(p)
    if m is None:
        bad.append("%r: not in rfsck's manifest" % p)
    else:
        if m["status"] != "complete":
            bad.append("%r: status %s" % (p, m["status"]))
        if m["key"][1] != t["ino"] or m["type"] != t["type"] or m["size"] != t["size"]:
            bad.append("%r: manifest key/type/size %r %r %r vs %r %r %r" % (p, m["key"], m["type"], m["size"], t["ino"], t["type"], t["size"]))
        if t["type"] == "file" and m.get("sha256") != t["sha256"]:
            bad.append("%r: manifest sha256 differs" % p)
        if t["type"] == "symlink" and m.get("target_hex") != t["target_hex"]:
            bad.append("%r: manifest target differs" % p)
    if t["type"] in ("chr", "blk", "fifo", "sock") and not devices:
        if os.path.lexists(o):
            bad.append("%r: created without --devices" % p)
        continue
    try:
        st = os.lstat(o)
    except OSError as ex:
        bad.append("%r: %s" % (p, ex))
        continue
    kind = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo",
            stat.S_IFCHR: "chr", stat.S_IFBLK: "blk", stat.S_IFSOCK: "sock"}.get(stat.S_IFMT(st.st_mode))
    if kind != t["type"]:
        bad.append("%r: extracted as %s, kernel says %s" % (p, kind, t["type"]))
        continue
    if kind != "symlink" and st.st_mode != t["mode"]:
        bad.append("%r: mode %o, kernel says %o" % (p, st.st_mode, t["mode"]))
    if is_root and (st.st_uid, st.st_gid) != (t["uid"], t["gid"]):
        bad.append("%r: owner %d:%d, kernel says %d:%d" % (p, st.st_uid, st.st_gid, t["uid"], t["gid"]))
    if int(st.st_mtime) != t["mtime"]:
        bad.append("%r: mtime %d, kernel says %d" % (p, st.st_mtime, t["mtime"]))
    if kind == "file":
        h = hashlib.sha256()
        with open(o, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != t["sha256"] or st.st_size != t["size"]:
            bad.append("%r: content differs" % p)
        by_ino.setdefault(t["ino"], []).append((p, st, t["nlink"]))
        # sparse: a file of 1 MiB or more whose name says "hole" must keep
        # at least 512 KiB unallocated
        if t["size"] >= (1 << 20) and st.st_blocks * 512 + (1 << 19) <= t["size"]:
            sparse_checked += 1
        elif b"hole" in p and t["size"] >= (1 << 20):
            bad.append("%r: holes were filled (%d bytes allocated of %d)" % (p, st.st_blocks * 512, t["size"]))
    if kind == "symlink" and os.readlink(o) != bytes.fromhex(t["target_hex"]):
        bad.append("%r: symlink target differs" % p)
    if kind in ("chr", "blk") and (os.major(st.st_rdev), os.minor(st.st_rdev)) != (t["rdev_major"], t["rdev_minor"]):
        bad.append("%r: rdev %d:%d" % (p, os.major(st.st_rdev), os.minor(st.st_rdev)))

links = 0
for ino, names in by_ino.items():
    inodes = {(st.st_dev, st.st_ino) for _, st, _ in names}
    if len(inodes) != 1:
        bad.append("object %d: %d names extracted as %d separate files" % (ino, len(names), len(inodes)))
    if len(names) > 1:
        links += 1
        for p, st, nl in names:
            if st.st_nlink != nl:
                bad.append("%r: %d links, kernel says %d" % (p, st.st_nlink, nl))

truth_out = {outpath(bytes.fromhex(t["path_hex"])) for t in truth}
extra = 0
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        q = os.path.join(d, n)
        if q not in truth_out and not q.startswith(os.path.join(root, b".reiserfs_priv")):
            extra += 1
            bad.append("extracted but not in the manifest: %r" % q)
for b in bad[:40]:
    print("  " + b)
print("%d ground-truth objects, %d in rfsck's manifest, %d hard-linked objects, %d sparse files checked, %d disagreements"
      % (len(truth), len(ours), links, sparse_checked, len(bad)))
sys.exit(1 if bad else 0)
EOF

n=0
for m in "$dir"/*.manifest.jsonl; do
	name=$(basename "$m" .manifest.jsonl)
	for variant in "" .prereplay; do
		src=$dir/$name$variant.img.xz
		[ -f "$src" ] || continue
		img=$WORK/$name$variant.img
		out=$WORK/out.$name$variant
		xz -dc "$src" >"$img"
		chmod 0444 "$img"
		before=$(sha256sum "$img" | cut -d' ' -f1)
		set +e
		timeout 600 "$RFSCK" salvage -q "$img" "$out"
		rc=$?
		set -e
		[ "$rc" -eq 0 ] || { echo "salvage of $name$variant: exit $rc, 0 expected"; cat "$out/report.json" 2>/dev/null; exit 1; }
		after=$(sha256sum "$img" | cut -d' ' -f1)
		[ "$before" = "$after" ] || { echo "$img changed"; exit 1; }
		printf '%s: ' "$name$variant"
		python3 "$WORK/verify.py" "$out" "$m" "$before" 0
		if [ "$have_mactime" = 1 ]; then
			mactime -b "$out/bodyfile" -d >"$WORK/timeline.csv" 2>"$WORK/mactime.err" ||
				{ echo "mactime -b failed on $name$variant"; cat "$WORK/mactime.err"; exit 1; }
			[ ! -s "$WORK/mactime.err" ] || { echo "mactime complained:"; cat "$WORK/mactime.err"; exit 1; }
			lines=$(wc -l <"$out/bodyfile")
			tl=$(wc -l <"$WORK/timeline.csv")
			# each object appears at least once in the timeline (plus the header)
			[ "$tl" -gt "$lines" ] || { echo "mactime timeline has $tl lines for $lines objects"; exit 1; }
		fi
		rm -rf "$out" "$img"
		n=$((n + 1))
	done
done
[ "$n" -ge 8 ] || { echo "expected at least 8 corpus images, found $n"; exit 1; }
[ "$have_mactime" = 1 ] || echo "note: mactime (Debian sleuthkit) not installed; body file not read back"

# Options on one image.
img=$WORK/features.img
xz -dc "$dir/r36-features-r5.img.xz" >"$img"
chmod 0444 "$img"
sum=$(sha256sum "$img" | cut -d' ' -f1)
if [ "$(id -u)" = 0 ]; then
	timeout 600 "$RFSCK" salvage -q --devices "$img" "$WORK/dev"
	printf 'devices: '
	python3 "$WORK/verify.py" "$WORK/dev" "$dir/r36-features-r5.manifest.jsonl" "$sum" 1
fi
# Not root: ownership is not set (and not an error), everything else is.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$WORK"
	mkdir "$WORK/nobody"
	chown 65534:65534 "$WORK/nobody"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		timeout 600 "$RFSCK" salvage -q "$img" "$WORK/nobody/out"
	printf 'as uid 65534: '
	python3 "$WORK/verify.py" "$WORK/nobody/out" "$dir/r36-features-r5.manifest.jsonl" "$sum" 0 0
	grep -q '"ownership_set": false' "$WORK/nobody/out/report.json" || { echo "report.json claims ownership was set"; exit 1; }
fi
# Sparse images: the digest hashes holes as zeros without reading them
# (SEEK_HOLE), and must still equal sha256sum's: holes inside the volume (its
# zero blocks), a hole after it, and one before it (--offset).
{ head -c 3145728 /dev/zero; cat "$img"; } >"$WORK/lead.raw"
cp --sparse=always "$WORK/lead.raw" "$WORK/lead.img"
cp --sparse=always "$img" "$WORK/trail.img"
truncate -s +7M "$WORK/trail.img"
rm -f "$WORK/lead.raw"
for v in lead trail; do
	off=0
	[ "$v" = lead ] && off=3145728
	want=$(sha256sum "$WORK/$v.img" | cut -d' ' -f1)
	timeout 600 "$RFSCK" salvage -q --offset "$off" "$WORK/$v.img" "$WORK/out.$v"
	python3 - "$WORK/out.$v/report.json" "$want" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["image_sha256"]
assert d["before"] == d["after"] == sys.argv[2], (d, sys.argv[2])
EOF
	alloc=$(($(stat -c '%b * %B' "$WORK/$v.img")))
	size=$(stat -c %s "$WORK/$v.img")
	printf 'sparse image (%s): digest equals sha256sum; %d of %d bytes allocated\n' "$v" "$alloc" "$size"
	[ "$alloc" -lt "$size" ] || echo "note: $WORK has no holes; the hole path was not exercised"
	rm -rf "$WORK/out.$v" "$WORK/$v.img"
done
mkdir -p "$WORK/busy"
echo keep >"$WORK/busy/precious"
set +e
"$RFSCK" salvage -q "$img" "$WORK/busy" 2>"$WORK/busy.err"
rc=$?
set -e
[ "$rc" -eq 16 ] || { echo "non-empty OUTDIR: exit $rc, 16 expected"; exit 1; }
grep -q "not empty" "$WORK/busy.err" || { echo "no clear message:"; cat "$WORK/busy.err"; exit 1; }
[ ! -e "$WORK/busy/root" ] || { echo "wrote into a refused OUTDIR"; exit 1; }
"$RFSCK" salvage --force --json "$img" "$WORK/busy" >"$WORK/summary.json"
python3 - "$WORK/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["exit"] == 0 and s["status"] == "complete", s
assert s["totals"]["files"] >= 75 and s["totals"]["hardlinks"] == 3, s["totals"]
assert s["image_sha256"]["unchanged"] is True
print("--json summary: %d files, %d dirs, %d symlinks, %d others, %d bytes" % (
    s["totals"]["files"], s["totals"]["dirs"], s["totals"]["symlinks"], s["totals"]["others"], s["totals"]["bytes"]))
EOF
[ "$(cat "$WORK/busy/precious")" = keep ] || { echo "--force clobbered an unrelated file"; exit 1; }
[ "$(sha256sum "$img" | cut -d' ' -f1)" = "$sum" ] || { echo "image changed"; exit 1; }
echo "$n corpus images salvaged identical to their kernel-written manifests"

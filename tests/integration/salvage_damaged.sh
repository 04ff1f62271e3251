#!/bin/sh
# salvage_damaged.sh - `rfsck salvage` on damaged trees (the damaged-tree mode:
# a tree rebuilt in memory from the scanned leaves, nothing written), against
# the kernel-written ground truth.  For each case, on a read-only copy:
#   - the image is byte-identical afterwards (sha256, and report.json says so);
#   - report.json says "source": "scan" with the reason;
#   - every ground-truth file whose stat data, name and body lived outside the
#     destroyed leaves is extracted under OUTDIR/root at its path, byte-identical
#     (sha256 in the manifest and of the file itself);
#   - no file of a nested image appears among the volume's own files;
#   - objects no name reaches are under OUTDIR/lost+found with status "orphan"
#     (or "partial"), each one's content is a ground-truth file's or a
#     leftover of a destroyed leaf's object (listed as touched);
#   - files the rebuild found incomplete are "partial" with missing ranges;
#   - nothing is created outside OUTDIR.
# Then --index: a salvage after `rebuild --dry-run --index DB` reuses the scan.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
case_py=$TOP/tests/lib/rebuild_case.py
sum() { sha256sum "$1" | cut -d' ' -f1; }
n=0
run() {   # BASE RECIPE SEED N
	base=$1; recipe=$2; seed=$3; num=$4
	name="$base/$recipe/s$seed"
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img"
	extra=""
	[ "$recipe" = zero-nested-leaf ] && extra="--manifest $TOP/corpus/images/$base.manifest.jsonl"
	# shellcheck disable=SC2086
	python3 "$case_py" damage "$recipe" "$seed" "$num" "$W/orig.img" "$W/d.img" "$W/rec.json" $extra >/dev/null
	python3 "$case_py" analyze "$W/orig.img" "$TOP/corpus/images/$base.manifest.jsonl" "$W/rec.json" \
		--damaged "$W/d.img" >"$W/an.json" || true
	chmod 0444 "$W/d.img"
	before=$(sum "$W/d.img")
	rm -rf "$W/out" "$W/box"
	mkdir "$W/box"
	set +e
	"$RFSCK" salvage -q "$W/d.img" "$W/box/out" >/dev/null 2>"$W/err"
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || [ "$rc" -eq 4 ] || { echo "$name: salvage exit $rc"; cat "$W/err"; exit 1; }
	[ "$(sum "$W/d.img")" = "$before" ] || { echo "$name: the image changed"; exit 1; }
	[ "$(ls -A "$W/box")" = out ] || { echo "$name: something was created beside OUTDIR"; ls -A "$W/box"; exit 1; }
	python3 - "$W/box/out" "$TOP/corpus/images/$base.manifest.jsonl" "$W/an.json" "$name" "$before" <<'PY'
import hashlib, json, os, sys
out, truth_p, an_p, name, before = sys.argv[1:]
rep = json.load(open(os.path.join(out, "report.json")))
fail = []
if rep.get("source") != "scan":
    fail.append("source is %r, not scan" % rep.get("source"))
sha = rep["image_sha256"]
if not (sha["unchanged"] and sha["before"] == before == sha["after"]):
    fail.append("image sha256 in report.json: %s" % sha)
an = json.load(open(an_p))
touched = set(an["touched"])
truth = [json.loads(l) for l in open(truth_p)]
man = {}
for l in open(os.path.join(out, "manifest.jsonl")):
    e = json.loads(l)
    man.setdefault(e["path_hex"], e)
truth_sha = {t.get("sha256") for t in truth if t["type"] == "file"}
def filesha(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()
kept = 0
for t in truth:
    p = t["path"]
    if p == "/" or p.startswith("/.reiserfs_priv") or p in touched:
        continue
    e = man.get(t["path_hex"])
    if e is None:
        fail.append("%s: untouched by the damage but not extracted" % p)
        continue
    if t["type"] == "file":
        if e.get("sha256") != t["sha256"] or e.get("status") != "complete":
            fail.append("%s: %s sha %s (truth %s)" % (p, e.get("status"), e.get("sha256"), t["sha256"]))
            continue
        rel = bytes.fromhex(e["extracted_as_hex"]) if "extracted_as_hex" in e else e["extracted_as"].encode()
        if filesha(os.path.join(out.encode(), rel)) != t["sha256"]:
            fail.append("%s: the extracted bytes differ" % p)
            continue
    kept += 1
orph = [e for e in man.values() if e["path"].startswith("/lost+found/")]
for e in orph:
    if e["type"] != "file":
        continue
    if e.get("status") not in ("orphan", "partial"):
        fail.append("%s: status %s" % (e["path"], e.get("status")))
    elif e.get("status") == "orphan" and e.get("sha256") not in truth_sha:
        fail.append("%s: an orphan whose content is no ground-truth file's" % e["path"])
for e in man.values():
    if e.get("status") == "partial" and not e.get("missing"):
        fail.append("%s: partial without missing ranges" % e["path"])
truth_paths = {t["path_hex"] for t in truth}
LF, PRIV = "/lost+found".encode().hex(), "/.reiserfs_priv".encode().hex()
foreign = [bytes.fromhex(p).decode("utf-8", "replace") for p in man
           if p not in truth_paths and not p.startswith(LF) and not p.startswith(PRIV)
           and p not in ("", "2f")]
if foreign:
    fail.append("not in the ground truth: %s" % foreign[:5])
if fail:
    print("%s: %d problem(s):" % (name, len(fail)))
    for f in fail[:15]:
        print("  - " + f)
    sys.exit(1)
print("ok %s: %d untouched entries extracted intact, %d touched by the damage, %d orphans, exit %s"
      % (name, kept, len(touched), len(orph), rep.get("exit")))
PY
	n=$((n + 1))
}
run r36-features-r5 zero-root 1 0
run r36-features-r5 zero-leaves 1 3
run r36-hash-tea zero-leaves 1 3
run r35-features-r5 zero-internal 1 0
run r36-nested zero-nested-leaf 1 0
run r36-nested zero-root 1 0
# --index: the dry run's scan serves the salvage
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/orig.img"
python3 "$case_py" damage zero-root 1 0 "$W/orig.img" "$W/d2.img" "$W/rec.json" >/dev/null
"$RFSCK" rebuild --dry-run -q --index "$W/ev.db" "$W/d2.img" >/dev/null
rm -rf "$W/out2"
set +e
"$RFSCK" salvage -q --index "$W/ev.db" "$W/d2.img" "$W/out2" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 0 ] || { echo "salvage --index: exit $rc"; exit 1; }
python3 - "$W/out2/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["source"] == "scan" and r["rebuild"]["scan"]["resumed"] is True, (r["source"], r.get("rebuild", {}).get("scan"))
PY
echo "ok salvage --index reuses the dry run's scan"
echo "$n damaged-tree salvages checked"

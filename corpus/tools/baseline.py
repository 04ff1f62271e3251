#!/usr/bin/env python3
"""baseline.py - what reiserfsck leaves after each damage recipe, scored by the
kernel view.

usage: baseline.py [-j N] [--only CASE,...] [--images DIR]

For each case of CASES: decompress the shipped image (corpus/images) into the
scratch dir, apply the damage recipe (damage.py, seeded) to a copy, run
reiserfsck in the given mode on a copy of that (oracle.py), read the result
through the 6.1 kernel (read-kernel: ro mount of a copy) and score it against
the shipped ground-truth manifest (score.py).  Also scores the damaged image
itself through the kernel (before any repair) for comparison.
Writes build/baseline/results.json and build/baseline/table.md.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402
import damage  # noqa: E402
import oracle  # noqa: E402
import score  # noqa: E402

KTIMEOUT = int(os.environ.get("RFSCK_BASELINE_KERNEL_TIMEOUT", "600"))
F, N, T, P = "r36-features-r5", "r36-nested", "r36-hash-tea", "r35-features-r5"
S = "r36-stdjournal-r5"
# (image, damage recipe or "none", n, seed, reiserfsck mode)
CASES = [
    (F, "none", None, 1, "rebuild-tree"),
    (F, "zero-root", None, 1, "rebuild-tree"),
    (F, "zero-internal", None, 1, "rebuild-tree"),
    (F, "zero-bitmaps", None, 1, "fix-fixable"),
    (F, "zero-bitmaps", None, 1, "rebuild-tree"),
    (F, "zero-super", None, 1, "rebuild-tree"),
    (F, "zero-leaves", 3, 1, "rebuild-tree"),
    (F, "flip-leaves", 3, 1, "fix-fixable"),
    (F, "flip-leaves", 3, 1, "rebuild-tree"),
    (F, "truncate", 50, 1, "rebuild-tree"),
    (F, "zero-journal-header", None, 1, "fix-fixable"),
    (F, "zero-journal-header", None, 1, "rebuild-tree"),
    (S, "zero-journal-header", None, 1, "fix-fixable"),
    (S, "zero-root", None, 1, "rebuild-tree"),
    (T, "zero-leaves", 3, 2, "rebuild-tree"),
    (P, "zero-root", None, 1, "rebuild-tree"),
    (N, "none", None, 1, "rebuild-tree"),
    (N, "zero-nested-leaf", None, 1, "rebuild-tree"),
    # built on demand (make corpus-big), read from the scratch dir, skipped if absent
    ("r36-bigtree", "zero-internal", None, 1, "rebuild-tree"),
]


def case_id(c):
    img, dmg, n, seed, mode = c
    return "%s__%s%s__s%d__%s" % (img, dmg, "" if n is None else str(n), seed, mode)


def run_case(c, outdir, imgdir):
    img, dmg, n, seed, mode = c
    cid = case_id(c)
    d = os.path.join(outdir, cid)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "orig.img")
    if os.path.exists(os.path.join(imgdir, img + ".img.xz")):
        subprocess.run(["sh", "-c", 'xz -dc "$1" > "$2"', "xz", os.path.join(imgdir, img + ".img.xz"), src],
                       check=True)
        truth_m = os.path.join(imgdir, img + ".manifest.jsonl")
    else:  # big, not shipped: take it from the build cache
        bdir = os.path.join(rcorpus.cache_dir(), "images")
        shutil.copyfile(os.path.join(bdir, img + ".img"), src)
        truth_m = os.path.join(bdir, img + ".manifest.jsonl")
    truth = rcorpus.read_manifest(truth_m)
    damaged = os.path.join(d, "damaged.img")
    if dmg == "none":
        os.replace(src, damaged)
        drec = {"recipe": "none"}
    else:
        drec = damage.apply(dmg, src, damaged, seed, n, truth_m)
        os.remove(src)
    rec = {"case": cid, "image": img, "damage": dmg, "n": n, "seed": seed, "fsck_mode": mode,
           "damage_record": drec}
    kd = os.path.join(d, "damaged.kernel.manifest.jsonl")
    rec["damaged_kernel_status"] = rcorpus.read_kernel(damaged, kd, timeout=KTIMEOUT)
    rec["score_damaged"] = score.score(truth, rcorpus.read_manifest(kd))
    fixed = os.path.join(d, "fixed.img")
    rec["fsck"] = oracle.run_fsck(damaged, mode, keep=fixed)
    km = os.path.join(d, "fixed.kernel.manifest.jsonl")
    rec["fixed_kernel_status"] = rcorpus.read_kernel(fixed, km, timeout=KTIMEOUT)
    rec["score_fixed"] = score.score(truth, rcorpus.read_manifest(km), details=15)
    for p in (damaged, fixed):
        if os.path.exists(p):
            os.remove(p)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(rec, f, indent=1)
    print("baseline: %s: fsck exit %s, kernel %s, %s" % (cid, rec["fsck"]["exit"], rec["fixed_kernel_status"],
          {k: rec["score_fixed"][k] for k in ("intact", "corrupted", "missing", "foreign", "lost_found")}),
          file=sys.stderr, flush=True)
    return rec


def inner_injection(rec, outdir, imgdir):
    """For nested images: how many result entries (foreign or in lost+found)
    carry the content of a file of the INNER image (by sha256)."""
    side = os.path.join(imgdir, rec["image"] + ".nested.json")
    km = os.path.join(outdir, rec["case"], "fixed.kernel.manifest.jsonl")
    if not (os.path.exists(side) and os.path.exists(km)):
        return None
    with open(side) as f:
        inner = json.load(f)["inner_manifest"]
    isha = {e["sha256"] for e in inner if e["type"] == "file"}
    truth = {e["path_hex"] for e in rcorpus.read_manifest(os.path.join(imgdir, rec["image"] + ".manifest.jsonl"))}
    res = [e for e in rcorpus.read_manifest(km) if e["path_hex"] not in truth]
    hits = [e for e in res if e.get("sha256") in isha]
    return {"inner_files": len(isha), "new_entries": len(res), "new_files_with_inner_content": len(hits)}


def table(recs):
    rows = ["| image | damage (seed) | reiserfsck mode / exit | kernel before repair: intact/corr/miss | "
            "after: kernel mount | truth | intact | corrupted | missing | foreign | lost+found (recovered) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        sd, sf = r["score_damaged"], r["score_fixed"]
        dmg = r["damage"] + ("" if r["n"] is None else " N=%s" % r["n"]) + " (%d)" % r["seed"]
        rows.append("| %s | %s | %s / %s | %s: %d/%d/%d | %s | %d | %d | %d | %d | %d | %d (%d) |" % (
            r["image"], dmg, r["fsck_mode"], r["fsck"]["exit"], r["damaged_kernel_status"],
            sd["intact"], sd["corrupted"], sd["missing"], r["fixed_kernel_status"], sf["truth_entries"],
            sf["intact"], sf["corrupted"], sf["missing"], sf["foreign"], sf["lost_found"],
            sf["lost_found_recovered"]))
    for r in recs:
        if r.get("inner_injection"):
            rows.append("")
            rows.append("%s / %s: %s" % (r["image"], r["damage"], json.dumps(r["inner_injection"])))
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--missing-only", action="store_true", help="run only cases without a result yet")
    ap.add_argument("--images", default=os.path.join(rcorpus.CORPUS, "images"))
    a = ap.parse_args()
    outdir = os.path.join(rcorpus.cache_dir(), "baseline")
    os.makedirs(outdir, exist_ok=True)
    cases = CASES
    if a.only:
        keep = a.only.split(",")
        cases = [c for c in CASES if case_id(c) in keep or c[1] in keep]
    rcorpus.kernel_info()
    big = os.path.join(rcorpus.cache_dir(), "images", "r36-bigtree.img")
    cases = [c for c in cases if c[0] != "r36-bigtree" or os.path.exists(big)]
    recs = {}
    for c in CASES:  # merge: keep earlier per-case results of cases not rerun now
        rj = os.path.join(outdir, case_id(c), "result.json")
        if os.path.exists(rj):
            with open(rj) as f:
                recs[case_id(c)] = json.load(f)
    if a.missing_only:
        cases = [c for c in cases if case_id(c) not in recs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as ex:
        futs = {ex.submit(run_case, c, outdir, a.images): case_id(c) for c in cases}
        for f in concurrent.futures.as_completed(futs):
            try:
                recs[futs[f]] = f.result()
            except Exception as e:  # noqa: BLE001
                print("baseline: %s FAILED: %r" % (futs[f], e), file=sys.stderr)
    ordered = [recs[case_id(c)] for c in CASES if case_id(c) in recs]
    for r in ordered:
        inj = inner_injection(r, outdir, a.images)
        if inj:
            r["inner_injection"] = inj
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(ordered, f, indent=1)
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write(table(ordered))
    print(table(ordered))
    return 0 if all(case_id(c) in recs for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())

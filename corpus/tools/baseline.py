#!/usr/bin/env python3
"""baseline.py - what reiserfsck (and rfsck) leave after each damage recipe,
scored by the kernel view.

usage: baseline.py [-j N] [--only CASE,...] [--images DIR] [--missing-only]
                   [--rfsck-only] [--no-rfsck]

For each case of CASES: decompress the shipped image (corpus/images) into the
scratch dir, apply the damage recipe (damage.py, seeded) to a copy, run
reiserfsck in the given mode on a copy of that (oracle.py), read the result
through the 6.1 kernel (read-kernel: ro mount of a copy) and score it against
the shipped ground-truth manifest (score.py).  Also scores the damaged image
itself through the kernel (before any repair) for comparison.

rfsck column: for every rebuild-tree case, `rfsck rebuild --yes -q --json
--output RF.img DAMAGED` runs on the same damaged image (the binary from env
RFSCK, default ./rfsck); RF.img is read through the kernel the same way and
scored, so the table shows reiserfsck and rfsck side by side.  The rfsck
report (--json) is kept as rfsck.report.json in the case directory.
--rfsck-only reruns just the rfsck part of cases that already have a result
(the damage is deterministic), keeping their reiserfsck columns; --no-rfsck
skips it.
Writes build/baseline/results.json and build/baseline/table.md.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402
import damage  # noqa: E402
import oracle  # noqa: E402
import score  # noqa: E402

KTIMEOUT = int(os.environ.get("RFSCK_BASELINE_KERNEL_TIMEOUT", "600"))
RFSCK = os.path.abspath(os.environ.get("RFSCK", "./rfsck"))
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


def run_rfsck(damaged, d, truth):
    """rfsck rebuild --output on DAMAGED (left untouched), kernel view, score."""
    out = os.path.join(d, "rfsck.img")
    rj = os.path.join(d, "rfsck.report.json")
    if os.path.exists(out):
        os.remove(out)
    before = rcorpus.sha256_file(damaged)
    cmd = [RFSCK, "rebuild", "--yes", "-q", "--json", "--output", out, damaged]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=600)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = -1, e.stdout or b"", e.stderr or b""
    r = {"command": "rfsck rebuild --yes -q --json --output RF.img DAMAGED", "binary": RFSCK, "exit": rc,
         "seconds": round(time.time() - t0, 1), "stderr_tail": stderr.decode("utf-8", "replace")[-1500:],
         "damaged_unchanged": rcorpus.sha256_file(damaged) == before}
    with open(rj, "wb") as f:
        f.write(stdout)
    try:
        rep = json.loads(stdout.decode("utf-8"))
        r["report"] = {k: rep.get(k) for k in ("scan", "hash", "leaves", "conflicts", "objects", "tree",
                                                 "blocks_written")}
        r["report"]["nested"] = [{k: v for k, v in n.items() if k != "libmagic"} for n in rep.get("nested") or []]
        r["report"]["partial_files"] = len(rep.get("partial_files") or [])
    except (ValueError, AttributeError):
        r["report"] = None
    km = os.path.join(d, "rfsck.kernel.manifest.jsonl")
    if os.path.exists(out) and os.path.getsize(out) > 0:  # measured whatever the exit (contract: 1)
        r["kernel_status"] = rcorpus.read_kernel(out, km, timeout=KTIMEOUT)
    else:
        rcorpus.write_manifest(km, [])
        r["kernel_status"] = "no_output"
    r["score"] = score.score(truth, rcorpus.read_manifest(km), details=15)
    if os.path.exists(out):
        os.remove(out)
    return r


def damage_case(c, d, imgdir):
    """Decompress + damage: returns (damaged path, truth manifest path, damage record)."""
    img, dmg, n, seed, _mode = c
    src = os.path.join(d, "orig.img")
    if os.path.exists(os.path.join(imgdir, img + ".img.xz")):
        subprocess.run(["sh", "-c", 'xz -dc "$1" > "$2"', "xz", os.path.join(imgdir, img + ".img.xz"), src],
                       check=True)
        truth_m = os.path.join(imgdir, img + ".manifest.jsonl")
    else:  # big, not shipped: take it from the build cache
        bdir = os.path.join(rcorpus.cache_dir(), "images")
        shutil.copyfile(os.path.join(bdir, img + ".img"), src)
        truth_m = os.path.join(bdir, img + ".manifest.jsonl")
    damaged = os.path.join(d, "damaged.img")
    if dmg == "none":
        os.replace(src, damaged)
        drec = {"recipe": "none"}
    else:
        drec = damage.apply(dmg, src, damaged, seed, n, truth_m)
        os.remove(src)
    return damaged, truth_m, drec


def run_rfsck_only(c, outdir, imgdir):
    """Rerun only the rfsck column of a case that already has a result.json."""
    cid = case_id(c)
    d = os.path.join(outdir, cid)
    with open(os.path.join(d, "result.json")) as f:
        rec = json.load(f)
    damaged, truth_m, drec = damage_case(c, d, imgdir)
    if drec.get("result_sha256") and rec["damage_record"].get("result_sha256") not in (None, drec["result_sha256"]):
        rec["damage_record_note"] = "damage result differs from the earlier run (different image build?)"
    rec["rfsck"] = run_rfsck(damaged, d, rcorpus.read_manifest(truth_m))
    os.remove(damaged)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(rec, f, indent=1)
    log_case(rec)
    return rec


def log_case(rec):
    msg = "baseline: %s: fsck exit %s, kernel %s, %s" % (
        rec["case"], rec["fsck"]["exit"], rec["fixed_kernel_status"],
        {k: rec["score_fixed"][k] for k in ("intact", "corrupted", "missing", "foreign", "lost_found")})
    if rec.get("rfsck"):
        r = rec["rfsck"]
        msg += "; rfsck exit %s, kernel %s, %s" % (r["exit"], r["kernel_status"], {
            k: r["score"][k] for k in ("intact", "corrupted", "missing", "foreign", "lost_found")})
    print(msg, file=sys.stderr, flush=True)


def run_case(c, outdir, imgdir, with_rfsck=True):
    img, dmg, n, seed, mode = c
    cid = case_id(c)
    d = os.path.join(outdir, cid)
    os.makedirs(d, exist_ok=True)
    damaged, truth_m, drec = damage_case(c, d, imgdir)
    truth = rcorpus.read_manifest(truth_m)
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
    if with_rfsck and mode == "rebuild-tree":
        rec["rfsck"] = run_rfsck(damaged, d, truth)
    for p in (damaged, fixed):
        if os.path.exists(p):
            os.remove(p)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(rec, f, indent=1)
    log_case(rec)
    return rec


def inner_injection(rec, outdir, imgdir, which="fixed"):
    """For nested images: how many result entries (foreign or in lost+found)
    carry the content of a file of the INNER image (by sha256).
    which: "fixed" (reiserfsck's result) or "rfsck"."""
    side = os.path.join(imgdir, rec["image"] + ".nested.json")
    km = os.path.join(outdir, rec["case"], which + ".kernel.manifest.jsonl")
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
            "after: kernel mount | truth | intact | corrupted | missing | foreign | lost+found (recovered) | "
            "rfsck rebuild exit | rfsck: kernel mount | rfsck intact | rfsck corrupted | rfsck missing | "
            "rfsck foreign | rfsck lost+found (recovered) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        sd, sf = r["score_damaged"], r["score_fixed"]
        dmg = r["damage"] + ("" if r["n"] is None else " N=%s" % r["n"]) + " (%d)" % r["seed"]
        rf = r.get("rfsck")
        if rf:
            s = rf["score"]
            rcol = "%s | %s | %d | %d | %d | %d | %d (%d)" % (
                rf["exit"], rf["kernel_status"], s["intact"], s["corrupted"], s["missing"], s["foreign"],
                s["lost_found"], s["lost_found_recovered"])
        else:
            rcol = " | ".join(["-"] * 7)
        rows.append("| %s | %s | %s / %s | %s: %d/%d/%d | %s | %d | %d | %d | %d | %d | %d (%d) | %s |" % (
            r["image"], dmg, r["fsck_mode"], r["fsck"]["exit"], r["damaged_kernel_status"],
            sd["intact"], sd["corrupted"], sd["missing"], r["fixed_kernel_status"], sf["truth_entries"],
            sf["intact"], sf["corrupted"], sf["missing"], sf["foreign"], sf["lost_found"],
            sf["lost_found_recovered"], rcol))
    for r in recs:
        for key, who in (("inner_injection", "reiserfsck"), ("rfsck_inner_injection", "rfsck")):
            if r.get(key):
                rows.append("")
                rows.append("%s / %s (%s): %s" % (r["image"], r["damage"], who, json.dumps(r[key])))
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--missing-only", action="store_true", help="run only cases without a result yet")
    ap.add_argument("--images", default=os.path.join(rcorpus.CORPUS, "images"))
    ap.add_argument("--rfsck-only", action="store_true",
                    help="rerun only rfsck's column of rebuild-tree cases that already have a result")
    ap.add_argument("--no-rfsck", action="store_true", help="reiserfsck columns only")
    a = ap.parse_args()
    if not a.no_rfsck and not os.access(RFSCK, os.X_OK):
        ap.error("rfsck binary %s not found (set RFSCK, or --no-rfsck)" % RFSCK)
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
        if a.rfsck_only:
            cases = [c for c in cases if c[4] == "rebuild-tree"]
            futs = {ex.submit(run_rfsck_only if case_id(c) in recs else run_case, c, outdir, a.images):
                    case_id(c) for c in cases}
        else:
            futs = {ex.submit(run_case, c, outdir, a.images, not a.no_rfsck): case_id(c) for c in cases}
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
        inj = inner_injection(r, outdir, a.images, "rfsck") if r.get("rfsck") else None
        if inj:
            r["rfsck_inner_injection"] = inj
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(ordered, f, indent=1)
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write(table(ordered))
    print(table(ordered))
    return 0 if all(case_id(c) in recs for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""build-bench-images.py - large kernel-written ReiserFS volumes for `make bench`.

usage: build-bench-images.py [--only NAME,...] [--files N] [--force] [--keep-check-copy]

For each entry of IMAGES (sparse image files under corpus/build/bench/):
  1. truncate -s SIZE + mkreiserfs (3.6, r5, standard journal) on the host;
  2. one boot of the Debian 6.1 kernel under qemu (rcorpus.run_guest, mode
     "bench": no full manifest walk) runs `guesthelper mkbench`: NDIRS
     directories nested up to depth 10, NFILES files written in bursts
     (70% 0-4 KiB tails, 29% 4-32 KiB, 1% 32 KiB-1 MiB; names 6-40 bytes),
     NLARGE sparse large files (4 written extents each), 2% of the small files
     deleted; it writes a sample of ~2000 files (path, size, sha256 of the
     bytes written, hashed while writing) to /out/sample.tsv;
  3. verification on a sparse copy (cp --sparse=always): a second boot mounts
     it read-only and `guesthelper sumlist` reads every sampled file back
     through the kernel; then `reiserfsck --check --yes` on that copy must
     report no corruption (exit 0);
  4. NAME.json: provenance, counts, timings, verification results.
An image whose NAME.json says "verified": true is reused unless --force.
Scratch: $RFSCK_CORPUS_CACHE/bench (default corpus/build/bench).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402

# name, size GiB, files, dirs, large sparse files (apparent size up to MiB), seed
IMAGES = [
    {"name": "bench-4g", "gib": 4, "files": 300000, "dirs": 3000, "large": 4, "largemib": 1024,
     "seed": 4004},
    {"name": "bench-32g", "gib": 32, "files": 1000000, "dirs": 10000, "large": 12, "largemib": 4096,
     "seed": 3232},
    # memory at TiB scale: the per-block sets grow with the volume, not the
    # files; the kernel's dirid_groups allocator spreads the files over the
    # whole volume, so every part of every per-block set is touched
    {"name": "bench-1t", "gib": 1024, "files": 300000, "dirs": 3000, "large": 12, "largemib": 4096,
     "seed": 1024},
]
SAMPLE = 2000
MAXDEPTH = 10

# QEMU 7.2 (Debian 12) with one vCPU translates guest code without CF_PARALLEL
# and so elides the guest's memory barriers; under heavy virtio-blk traffic a
# completion notification is then lost between the vCPU thread and the I/O
# thread and the guest waits forever (seen here twice: kworkers and the writer
# in D state in blk_mq_get_tag / bit_wait_io after ~750 MB; fixed upstream in
# QEMU 8.1, commit c914d46d0a64 "tcg: Do not elide memory barriers for
# !CF_PARALLEL in system mode").  `-smp 1,maxcpus=2` makes QEMU translate
# with CF_PARALLEL (barriers kept) while still running one vCPU.
BENCH_SMP = os.environ.get("RFSCK_BENCH_SMP", "1,maxcpus=2")
_subprocess_run = subprocess.run


_subprocess_popen = subprocess.Popen


def _bench_smp(cmd):
    if isinstance(cmd, list) and cmd and cmd[0] == "qemu-system-x86_64" and "-smp" in cmd:
        cmd = list(cmd)
        cmd[cmd.index("-smp") + 1] = BENCH_SMP
    return cmd


def _run_with_bench_smp(cmd, *a, **kw):
    return _subprocess_run(_bench_smp(cmd), *a, **kw)


def _popen_with_bench_smp(cmd, *a, **kw):
    return _subprocess_popen(_bench_smp(cmd), *a, **kw)


# rcorpus starts qemu with Popen (its watchdog) and helpers with run: both
# go through the -smp rewrite.  (Only run was wrapped until 2026-12-07, after
# rcorpus had moved to Popen: the guest ran with plain -smp 1 and hung.)
rcorpus.subprocess = type(subprocess)("subprocess_bench")
rcorpus.subprocess.__dict__.update(subprocess.__dict__)
rcorpus.subprocess.run = _run_with_bench_smp
rcorpus.subprocess.Popen = _popen_with_bench_smp


def log(*a):
    print("build-bench:", *a, file=sys.stderr, flush=True)


def bench_dir():
    d = os.path.join(rcorpus.cache_dir(), "bench")
    os.makedirs(d, exist_ok=True)
    return d


def allocated(path):
    return os.stat(path).st_blocks * 512


def fsck_check(img, logf):
    t0 = time.time()
    p = subprocess.run(["reiserfsck", "--check", "--yes", "-l", logf, img],
                       capture_output=True, stdin=subprocess.DEVNULL)
    secs = time.time() - t0
    text = re.sub(r".\x08", "", p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace"))
    summary = {}
    for key in ("Leaves", "Internal nodes", "Directories", "Other files", "Data block pointers",
                "Safe links"):
        m = re.search(r"\t%s (\d+)" % key, text)
        if m:
            summary[key] = int(m.group(1))
    return {"exit": p.returncode, "no_corruptions": "No corruptions found" in text,
            "summary": summary, "seconds": round(secs, 1),
            "key_lines": [ln for ln in text.splitlines() if re.search(r"corruption|Fatal|abort", ln)][-6:]}


def parse_sample(text):
    out = {}
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 3:
            out[f[0]] = (int(f[1]), f[2])
    return out


def build_one(ent, force, keep_copy):
    bdir = bench_dir()
    name = ent["name"]
    img = os.path.join(bdir, name + ".img")
    meta = os.path.join(bdir, name + ".json")
    if not force and os.path.exists(img) and os.path.exists(meta):
        with open(meta) as f:
            m = json.load(f)
        if m.get("verified") and m.get("files") == ent["files"]:
            log("%s: reusing (verified %s)" % (name, m.get("built")))
            return m
    info = rcorpus.kernel_info()
    prov = {"name": name, "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel_package": info["KPKG"], "kernel_package_version": info["KPKG_VERSION"],
            "kernel_release": info["KVER"], "size_gib": ent["gib"], "files": ent["files"],
            "dirs": ent["dirs"], "maxdepth": MAXDEPTH, "large": ent["large"], "largemib": ent["largemib"],
            "seed": ent["seed"], "guest_mem_mib": int(os.environ.get("RFSCK_GUEST_MEM", "512"))}
    t_all = time.time()
    if os.path.exists(img):
        os.remove(img)
    with open(img, "wb") as f:
        f.truncate(ent["gib"] << 30)
    mk = ["mkreiserfs", "-f", "-q", "--format", "3.6", "-h", "r5", img]
    subprocess.run(mk, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prov["mkfs"] = "truncate -s %dG IMG && mkreiserfs -f -q --format 3.6 -h r5 IMG" % ent["gib"]
    with tempfile.TemporaryDirectory(dir=bdir) as td:
        recipe = os.path.join(td, "bench.sh")
        with open(recipe, "w") as f:
            f.write("# bench volume %s\n# rfsck-mountopts: rw\n" % name)
            f.write("$GH mkbench /mnt %d %d %d %d %d %d %d > /out/sample.tsv 2> /out/mkbench.log\n" %
                    (ent["seed"], ent["files"], ent["dirs"], MAXDEPTH, ent["large"], ent["largemib"], SAMPLE))
            f.write("sync\ndf -k /mnt > /out/df.txt\necho bench done\n")
        log("%s: writing %d files in the guest (%d GiB volume)" % (name, ent["files"], ent["gib"]))
        r = rcorpus.run_guest(img, recipe, mode="bench", mountopts="rw", timeout=ent.get("timeout", 7200),
                              log_path=img + ".console.log")
    fl = r["files"]
    prov["build_boot"] = {"status": r["status"], "seconds": r["seconds"],
                          "recipe_rc": fl.get("recipe.rc", b"").decode().strip(),
                          "umount_rc": fl.get("umount.rc", b"").decode().strip(),
                          "mkbench_log": fl.get("mkbench.log", b"").decode("utf-8", "replace")[-1500:],
                          "df": fl.get("df.txt", b"").decode("utf-8", "replace")}
    log("%s: guest %s in %.0f s: %s" % (name, r["status"], r["seconds"],
                                         prov["build_boot"]["mkbench_log"].strip().splitlines()[-1:]))
    if r["status"] != "ok" or prov["build_boot"]["recipe_rc"] != "0" or prov["build_boot"]["umount_rc"] != "0":
        prov["verified"] = False
        with open(meta, "w") as f:
            json.dump(prov, f, indent=1)
        raise RuntimeError("%s: guest build failed (%s); see %s.console.log" % (name, r["status"], img))
    sample_txt = fl.get("sample.tsv", b"").decode("utf-8", "surrogateescape")
    with open(os.path.join(bdir, name + ".sample.tsv"), "w", errors="surrogateescape") as f:
        f.write(sample_txt)
    sample = parse_sample(sample_txt)
    prov["build_seconds_guest"] = r["seconds"]
    prov["image_bytes"] = os.path.getsize(img)
    prov["image_allocated_bytes"] = allocated(img)
    # verification on a sparse copy: kernel read-back (ro), then reiserfsck --check
    copy = os.path.join(bdir, name + ".check.img")
    t0 = time.time()
    subprocess.run(["cp", "--sparse=always", img, copy], check=True)
    prov["sparse_copy_seconds"] = round(time.time() - t0, 1)
    with tempfile.TemporaryDirectory(dir=bdir) as td:
        lst = os.path.join(td, "sample.tsv")
        with open(lst, "w", errors="surrogateescape") as f:
            f.write(sample_txt)
        recipe = os.path.join(td, "verify.sh")
        with open(recipe, "w") as f:
            f.write("# read the sample back\n$GH sumlist $JOB/sample.tsv > /out/verify.tsv 2> /out/verify.err\n")
        log("%s: reading %d sampled files back through the kernel (ro mount of a copy)" % (name, len(sample)))
        v = rcorpus.run_guest(copy, recipe, mode="bench", mountopts="ro", payload=[lst],
                              timeout=3600, log_path=img + ".verify.console.log")
    got = parse_sample(v["files"].get("verify.tsv", b"").decode("utf-8", "surrogateescape"))
    match = mism = missing = 0
    bad = []
    for p, (size, sha) in sample.items():
        g = got.get(p)
        if g is None:
            missing += 1
            bad.append(p)
        elif g[0] == size and (sha == "-" and g[1] not in ("ERROR",) or g[1] == sha):
            match += 1
        else:
            mism += 1
            bad.append(p)
    prov["kernel_readback"] = {"status": v["status"], "seconds": v["seconds"], "sampled": len(sample),
                               "large_files_size_only": sum(1 for s in sample.values() if s[1] == "-"),
                               "match": match, "mismatch": mism, "missing": missing, "bad": bad[:10]}
    log("%s: kernel read-back: %d/%d match (%d mismatch, %d missing)" % (name, match, len(sample), mism, missing))
    log("%s: reiserfsck --check on the copy" % name)
    chk = fsck_check(copy, os.path.join(bdir, name + ".fsck.log"))
    prov["reiserfsck_check"] = chk
    log("%s: reiserfsck --check exit %d in %.0f s %s" % (name, chk["exit"], chk["seconds"], chk["summary"]))
    if not keep_copy:
        os.remove(copy)
    fs = rcorpus.Fs(img)
    prov["fs"] = {"block_count": fs.block_count, "blocksize": fs.blocksize, "root_block": fs.root_block,
                  "tree_height": fs.tree_height, "bmap_nr": fs.bmap_nr}
    prov["verified"] = (chk["exit"] == 0 and v["status"] == "ok" and len(sample) > 0 and
                        match == len(sample))
    prov["total_seconds"] = round(time.time() - t_all, 1)
    with open(meta, "w") as f:
        json.dump(prov, f, indent=1)
    log("%s: %s, %.0f s total" % (name, "VERIFIED" if prov["verified"] else "NOT VERIFIED", prov["total_seconds"]))
    return prov


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--files", type=int, help="override the file count (tests)")
    ap.add_argument("--gib", type=int, help="override the volume size (tests)")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--keep-check-copy", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("RFSCK_GUEST_MEM", "2048")
    todo = IMAGES
    if a.only:
        todo = [e for e in IMAGES if e["name"] in a.only.split(",")]
    bad = 0
    for e in todo:
        e = dict(e)
        if a.files:
            e["files"] = a.files
            e["dirs"] = max(10, a.files // 100)
        if a.gib:
            e["gib"] = a.gib
        try:
            p = build_one(e, a.force, a.keep_check_copy)
            bad += 0 if p.get("verified") else 1
        except Exception as ex:  # noqa: BLE001
            log("PROBLEM:", ex)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bigbench.py RFSCK RESULTS.json IMAGE.img... - the large-volume benchmarks.

For each image (built and verified by corpus/tools/build-bench-images.py; its
facts come from IMAGE's .json next to it), in the same run, page cache dropped
before every timed run (`echo 3 > /proc/sys/vm/drop_caches`; "hot" is recorded
if that is not allowed):
  read        cat IMAGE > /dev/null                       (reads the holes too)
  check       rfsck check -q IMAGE
  fsck        reiserfsck --check --yes COPY                (sparse copy, reused)
  read_data   readdata.py IMAGE: the data extents only, 4 MiB reads (the
              physical limit for what a scan of the image must read)
  dry         rfsck rebuild --dry-run -q --progress --json --index DB IMAGE
              (fresh DB each run; the scan phase's time is the report's
              seconds.scan)
              read_data and dry run in BENCH_SCAN_PAIRS (4) pairs whose order
              alternates: read, dry, dry, read, read, dry, ...  Under a VM the
              host keeps a cache of its own that dropping the guest's page
              cache does not empty, so a full read of the image right after
              another one is faster than the first; measured one after the
              other, read_data (after three runs of `cat`) met a warm host and
              the scan a cold one.  Alternating gives both the same positions.
  check_warm, dry_warm
              check and the dry run again, BENCH_RUNS times each, with the
              page cache kept (readdata.py first): CPU per block, for the
              growth from volume to volume; dry_warm_phases holds the
              median seconds of scan, decide and build
  rebuild     rfsck rebuild --yes --no-undo -q --progress --json --output NEW RB
              RB = sparse copy with the root node zeroed (damage.py zero-root)
  inplace     rfsck rebuild --yes -q --json --undo UNDO COPY  (a fresh sparse copy
              of RB, rebuilt in place with the default undo log: the same
              starting point and the same kind of run as rtree)
  rtree       reiserfsck --rebuild-tree on a fresh sparse copy of RB ("Yes" on stdin)
  salvage     rfsck salvage -q IMAGE OUTDIR, OUTDIR on an ext4 made afresh
              for every run (a sparse file, loop-mounted, when we are root and
              mount works; else a directory in the scratch area, recorded in
              salvage_target).  In a directory where the previous runs created
              and deleted hundreds of thousands of files, ext4's inode
              allocator searched past the recently freed inodes and took half
              of salvage's time (notes.md, "Profiles"): that measured the
              host's history, not rfsck.
  salvage_mem the same salvage into a directory on tmpfs (/dev/shm) when the
              memory holds its output: rfsck's own cost, without the
              destination disk's write speed (the page cache holds the 4 GiB
              volume's output and not the 32 GiB one's)
A volume above SCALE_BYTES (256 GiB; bench-1t, which is there for memory
at TiB scale) skips `read` and `salvage`: both read the whole image file,
holes included (a TiB of zeros), which measures the host, not rfsck.
Small steps (read, check, fsck): median of BENCH_RUNS (3) runs; read_data and
dry: median of the BENCH_SCAN_PAIRS pairs.  Heavy
steps (rebuild, rtree, salvage: minutes each): BENCH_HEAVY_RUNS runs
(default 3 below 8 GiB, 1 above).  Peak RSS of each: GNU time %M (max over the runs).
Scratch: $BENCH_SCRATCH (default next to the image); removed at the end.
Writes RESULTS.json (every number) and prints nothing else of note.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "corpus", "tools"))
import rcorpus  # noqa: E402

MEASURE = os.path.join(HERE, "measure.py")
SCALE_BYTES = 256 << 30


def log(*a):
    print("bigbench:", *a, file=sys.stderr, flush=True)


def measure(n, cmd, drop=True, pre=None, stdout=None, stderr=None, inp=None, stderr_ts=None):
    args = [sys.executable, MEASURE, "--all"]
    if drop:
        args.append("--drop")
    if pre:
        args += ["--pre", pre]
    if stdout:
        args += ["--stdout", stdout]
    if stderr:
        args += ["--stderr", stderr]
    if stderr_ts:
        args += ["--stderr-ts", stderr_ts]
    if inp:
        args += ["--input", inp]
    t0 = time.time()
    out = subprocess.run(args + [str(n)] + cmd, capture_output=True, text=True, check=True).stdout.split()
    r = {"seconds": float(out[0]), "peak_kib": int(out[1]), "exit": int(out[2]), "runs": n}
    if drop:
        r["cache"] = out[3]
    r["all"] = [float(x) for x in out[-1].split(",")]
    for key in ("cpu", "user"):
        v = [float(x[len(key) + 1:]) for x in out if x.startswith(key + "=")]
        if v:
            r[key] = v[0]
    log("  %-8s median %.2f s (%s), peak %d MiB, exit %d  [%.0f s wall]" %
        (cmd[0].split("/")[-1] + " " + (cmd[1] if len(cmd) > 1 else ""), r["seconds"],
         ", ".join("%.2f" % x for x in r["all"]), r["peak_kib"] // 1024, r["exit"], time.time() - t0))
    return r


def merge_runs(rs):
    """measure()'s result for single runs taken apart: median time, highest
    peak, the last exit status (the first non-zero one if any)."""
    secs = [r["seconds"] for r in rs]
    bad = [r["exit"] for r in rs if r["exit"]]
    m = {"seconds": statistics.median(secs), "peak_kib": max(r["peak_kib"] for r in rs),
         "exit": bad[0] if bad else rs[-1]["exit"], "runs": len(rs), "all": secs}
    for key in ("cpu", "user"):
        if all(key in r for r in rs):
            m[key] = statistics.median(r[key] for r in rs)
    if any("cache" in r for r in rs):
        m["cache"] = ",".join(sorted({r.get("cache", "") for r in rs}))
    return m


def scan_seconds(progress_file):
    """Time of the scan phase from timestamped progress output (measure.py
    --stderr-ts): the last 'scan: done/total blocks (..%), RATE blocks/s'
    line says the phase began done/RATE seconds before it arrived; the phase
    ended when the line was cleared (the next chunk after it)."""
    try:
        with open(progress_file, errors="replace") as f:
            chunks = [json.loads(ln) for ln in f if ln.strip()]
    except (OSError, ValueError):
        return None
    last, t_last, t_end = None, None, None
    for t, text in chunks:
        ms = list(re.finditer(r"scan: (\d+)/(\d+) blocks \([\d.]+%\), (\d+) blocks/s", text))
        if ms:
            last, t_last, t_end = ms[-1], t, None
            rest = text[ms[-1].end():]
            if "\r" in rest:  # the clearing "\r   ...   \r" came in the same chunk
                t_end = t
        elif last is not None and t_end is None:
            t_end = t
    if not last:
        return None
    done, total, rate = int(last.group(1)), int(last.group(2)), int(last.group(3))
    if not rate:
        return None
    start = t_last - done / rate
    end = t_end if t_end is not None else t_last
    return {"seconds": round(end - start, 3), "start": round(start, 3), "end": round(end, 3),
            "last_done": done, "total": total}


def sparse_copy(src, dst):
    if os.path.exists(dst):
        os.remove(dst)
    t0 = time.time()
    subprocess.run(["cp", "--sparse=always", src, dst], check=True)
    return time.time() - t0


def zero_root(path):
    """damage.py zero-root, in place on an existing (sparse) copy."""
    fs = rcorpus.Fs(path)
    with open(path, "r+b") as f:
        f.seek(fs.root_block * fs.blocksize)
        f.write(b"\0" * fs.blocksize)
    return {"recipe": "zero-root", "blocks_zeroed": [fs.root_block], "tree_height": fs.tree_height}


def load_json(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bench_image(rfsck, img, runs, heavy, scratch):
    meta = load_json(os.path.splitext(img)[0] + ".json") or {}
    fs = rcorpus.Fs(img)
    st = os.stat(img)
    res = {"image": os.path.basename(img), "bytes": st.st_size, "allocated": st.st_blocks * 512,
           "blocks": fs.block_count, "blocksize": fs.blocksize, "tree_height": fs.tree_height,
           "meta": {k: meta.get(k) for k in ("files", "dirs", "large", "kernel_release", "built",
                                              "build_seconds_guest", "total_seconds", "verified",
                                              "kernel_readback", "reiserfsck_check")},
           "runs": runs, "heavy_runs": heavy}
    summ = (meta.get("reiserfsck_check") or {}).get("summary") or {}
    res["leaves"] = summ.get("Leaves")
    res["files"] = summ.get("Other files")
    res["dirs"] = summ.get("Directories")
    os.makedirs(scratch, exist_ok=True)
    w = lambda n: os.path.join(scratch, n)  # noqa: E731
    log("%s: %d MiB, %d allocated, %d blocks" % (res["image"], st.st_size >> 20, res["allocated"] >> 20,
                                                fs.block_count))
    scale = st.st_size > SCALE_BYTES
    res["scale_only"] = scale
    if not scale:
        res["read"] = measure(runs, ["sh", "-c", "cat \"$0\" > /dev/null", img])
    res["check"] = measure(runs, [rfsck, "check", "-q", img])
    res["copy_seconds"] = sparse_copy(img, w("fsck.img"))
    res["fsck"] = measure(runs, ["reiserfsck", "--check", "--yes", w("fsck.img")])
    os.remove(w("fsck.img"))
    db = w("index.db")
    reads, drys, scans, order = [], [], [], []
    for i in range(max(1, int(os.environ.get("BENCH_SCAN_PAIRS", "4")))):
        for step in (("read", "dry") if i % 2 == 0 else ("dry", "read")):
            if step == "read":
                reads.append(measure(1, [sys.executable, os.path.join(HERE, "readdata.py"), img]))
                order.append(["read_data", reads[-1]["seconds"]])
                continue
            drys.append(measure(1, [rfsck, "rebuild", "--dry-run", "-q", "--progress", "--json", "--index", db,
                                    img],
                                pre="rm -f '%s' '%s-wal' '%s-shm' '%s-journal'" % (db, db, db, db),
                                stdout=w("dry.json"), stderr_ts=w("dry.progress")))
            scan_s = ((load_json(w("dry.json")) or {}).get("seconds") or {}).get("scan")
            scans.append(scan_s)
            order.append(["scan", scan_s])
    res["read_data"] = merge_runs(reads)
    res["dry"] = merge_runs(drys)
    res["scan_read_order"] = order
    dj = load_json(w("dry.json")) or {}
    res["dry_report"] = {k: dj.get(k) for k in ("scan", "leaves", "objects", "tree", "hash", "conflicts")}
    res["index_bytes"] = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    cand = (dj.get("scan") or {}).get("candidates") or 0
    res["index_bytes_per_candidate"] = res["index_bytes"] / cand if cand else None
    got = sorted(x for x in scans if x is not None)
    res["dry_scan"] = {"seconds": round(statistics.median(got), 3), "all": scans} if got else None
    res["dry_scan_progress"] = scan_seconds(w("dry.progress"))  # the last dry run's, as a cross-check
    # warm: the used blocks put in the page cache (one read of the data
    # extents), then check and the dry run without dropping it.  What is left
    # is their CPU per block, so the growth from one volume to the next is
    # not decided by where the host's cache served the cold runs from
    # (bench-4g's cold reads ran at memory speed, bench-32g's did not).
    subprocess.run([sys.executable, os.path.join(HERE, "readdata.py"), img], stdout=subprocess.DEVNULL,
                   check=True)
    res["check_warm"] = measure(runs, [rfsck, "check", "-q", img], drop=False)
    dws, phases = [], []
    for _ in range(runs):
        dws.append(measure(1, [rfsck, "rebuild", "--dry-run", "-q", "--json", "--index", db, img], drop=False,
                           pre="rm -f '%s' '%s-wal' '%s-shm' '%s-journal'" % (db, db, db, db),
                           stdout=w("dryw.json")))
        phases.append((load_json(w("dryw.json")) or {}).get("seconds") or {})
    res["dry_warm"] = merge_runs(dws)
    res["dry_warm_phases"] = {k: round(statistics.median(v), 3) for k in ("scan", "decide", "build")
                              for v in [[ph[k] for ph in phases if k in ph]] if v}
    for s in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + s):
            os.remove(db + s)
    # the real rebuild, on a copy with the root node zeroed
    rb = w("zeroroot.img")
    res["zeroroot_copy_seconds"] = sparse_copy(img, rb)
    res["damage"] = zero_root(rb)
    new = w("rebuilt.img")
    res["rebuild"] = measure(heavy, [rfsck, "rebuild", "--yes", "--no-undo", "-q", "--progress", "--json",
                                     "--output", new, rb],
                             pre="rm -f '%s'" % new, stdout=w("rebuild.json"), stderr_ts=w("rebuild.progress"))
    rj = load_json(w("rebuild.json")) or {}
    res["rebuild_report"] = {k: rj.get(k) for k in ("scan", "leaves", "objects", "tree", "conflicts",
                                                    "repairs_after_build", "blocks_written", "check_after")}
    res["rebuild_scan"] = scan_seconds(w("rebuild.progress"))
    if os.path.exists(new):
        t0 = time.time()
        p = subprocess.run([rfsck, "check", "-q", new], capture_output=True)
        res["rebuilt_check"] = {"exit": p.returncode, "seconds": round(time.time() - t0, 1)}
        res["rebuilt_allocated"] = os.stat(new).st_blocks * 512
        os.remove(new)
    ip, undo = w("inplace.img"), w("inplace.undo")
    res["inplace"] = measure(heavy, [rfsck, "rebuild", "--yes", "-q", "--json", "--undo", undo, ip],
                             pre="rm -f '%s' '%s'; cp --sparse=always '%s' '%s'" % (ip, undo, rb, ip),
                             stdout=w("inplace.json"))
    ij = load_json(w("inplace.json")) or {}
    res["inplace_report"] = {k: ij.get(k) for k in ("repairs_after_build", "blocks_written", "check_after")}
    if os.path.exists(ip):
        p = subprocess.run([rfsck, "check", "-q", ip], capture_output=True)
        res["inplace_check"] = {"exit": p.returncode}
        res["inplace_undo_bytes"] = os.path.getsize(undo) if os.path.exists(undo) else None
    for x in (ip, undo):
        if os.path.exists(x):
            os.remove(x)
    rt = w("rtree.img")
    res["rtree"] = measure(heavy, ["reiserfsck", "--rebuild-tree", "-l", w("rtree.log"), rt],
                           pre="cp --sparse=always '%s' '%s'" % (rb, rt), inp="Yes\\n",
                           stderr=w("rtree.err"))
    txt = ""
    for lf in (w("rtree.err"), w("rtree.log")):
        if os.path.exists(lf):
            with open(lf, errors="replace") as f:
                txt += re.sub(r".\x08", "", f.read())
    res["rtree_summary"] = {k: int(m.group(1)) for k, rx in (("leaves", r"Leaves among those (\d+)"),
                                                             ("files", r"Files found: (\d+)"),
                                                             ("dirs", r"Directories found: (\d+)"))
                            for m in [re.search(rx, txt)] if m}
    for p in (rt, rb):
        if os.path.exists(p):
            os.remove(p)
    if scale:
        return res
    fsimg, mnt = w("salvage-fs.img"), w("salvage-mnt")
    # room for every byte the volume holds, its metadata and a margin
    fresh = ("umount '%(m)s' 2>/dev/null; rm -f '%(i)s' && truncate -s %(s)d '%(i)s'"
             " && mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 '%(i)s'"
             " && mkdir -p '%(m)s' && mount -o loop,noinit_itable '%(i)s' '%(m)s'" %
             {"m": mnt, "i": fsimg, "s": 2 * res["allocated"] + (4 << 30)})
    on_fs = subprocess.run(["sh", "-c", fresh], capture_output=True).returncode == 0
    out = os.path.join(mnt, "out") if on_fs else w("salvage")
    res["salvage_target"] = "fresh ext4 per run (loop)" if on_fs else "directory in the scratch area"
    res["salvage"] = measure(heavy, [rfsck, "salvage", "-q", img, out],
                             pre=fresh if on_fs else "rm -rf '%s'" % out)
    rep = load_json(os.path.join(out, "report.json")) or {}
    res["salvage_report"] = {k: v for k, v in rep.items() if isinstance(v, (int, float, str))}
    res["salvage_phases"] = (rep.get("timing") or {}).get("phases")   # the last run's
    salvage_in_memory(res, rfsck, img, heavy)
    if on_fs:
        subprocess.run(["umount", mnt], check=False)
        for p in (fsimg,):
            if os.path.exists(p):
                os.remove(p)
        shutil.rmtree(mnt, ignore_errors=True)
    else:
        shutil.rmtree(out, ignore_errors=True)
    return res


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for ln in f:
                if ln.startswith("MemAvailable:"):
                    return int(ln.split()[1]) * 1024
    except OSError:
        pass
    return 0


def salvage_in_memory(res, rfsck, img, heavy):
    """salvage_mem: the same salvage into a tmpfs (/dev/shm), where no disk
    takes the files: what rfsck itself costs, apart from the destination's
    write speed.  Only when the memory holds the output (allocated bytes and
    a third more for the files' slack) with 2 GiB to spare."""
    shm = "/dev/shm"
    need = res["allocated"] * 4 // 3 + (2 << 30)
    if not os.path.isdir(shm) or mem_available() < need:
        res["salvage_mem_skipped"] = "less memory available than %d GiB" % (need >> 30)
        return
    out = os.path.join(shm, "rfsck-bench-salvage-%d" % os.getpid())
    try:
        res["salvage_mem"] = measure(heavy, [rfsck, "salvage", "-q", img, out],
                                     pre="rm -rf '%s'" % out)
        rep = load_json(os.path.join(out, "report.json")) or {}
        res["salvage_mem_phases"] = (rep.get("timing") or {}).get("phases")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    rfsck, results = sys.argv[1], sys.argv[2]
    imgs = sys.argv[3:]
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    allres = []
    for img in imgs:
        big = os.path.getsize(img) > (8 << 30)
        heavy = int(os.environ.get("BENCH_HEAVY_RUNS", "1" if big else "3"))
        scratch = os.environ.get("BENCH_SCRATCH") or os.path.join(os.path.dirname(os.path.abspath(img)),
                                                                   "scratch")
        t0 = time.time()
        r = bench_image(os.path.abspath(rfsck), img, runs, heavy, scratch)
        r["wall_seconds"] = round(time.time() - t0, 1)
        allres.append(r)
        shutil.rmtree(scratch, ignore_errors=True)
        with open(results, "w") as f:
            json.dump(allres, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

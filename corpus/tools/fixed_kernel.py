#!/usr/bin/env python3
"""fixed_kernel.py - fixable damage, a repair, and the oracles after it: the
machinery of `test-kernel.sh --fixed` and of tests/lib/fix_table.py.

usage: fixed_kernel.py test RFSCK [CASE...]     (what test-kernel.sh --fixed runs)
       fixed_kernel.py list                     (the default cases)

A CASE is BASE:RECIPE, BASE a shipped image (corpus/images/BASE.img.xz):
  * RECIPE one of FIXABLE_RECIPES: tests/lib/fixable_damage.py RECIPE on a copy
    (one field of the first leaf / the superblock / a directory entry);
  * RECIPE zero-bitmaps or zero-journal-header: corpus/tools/damage.py, seed 1;
  * RECIPE prereplay: BASE.prereplay.img.xz as the power cut left it (pending
    journal transactions; r36-crash-safelink also holds two safe links of files
    that were open and unlinked);
  * RECIPE safelink-truncate:PATH:N, safelink-unlink:PATH, safelink-bad:
    fixable_damage.py's safe links crafted into the image (a truncate of PATH
    to N bytes in flight, an unlink of PATH open at the power cut, a link to
    no object; the cases of tests/integration/fix_safelink.sh).  The expected
    view is what the kernel's mount makes of them: PATH cut to (or extended
    with zeros to) N bytes, its content the first N bytes read by `rfsck cat`
    from the clean image (whose whole content must match the ground truth
    first); PATH gone and its directory smaller by its entry; nothing changed;
  * RECIPE flip-leaves:SEED: damage.py flip-leaves --n 1 --seed SEED (8 random
    bits of one leaf).  Most seeds need a rebuild or change nothing visible; the
    default list has the seeds of r36-features-r5 in 1..40 that both rfsck
    check and reiserfsck --check rate fixable (exit 6): 5, 13, 14, 16, 26, 28.
The ground truth is BASE.manifest.jsonl.  The two recipes that make a name
wrong (dangling-entry, dir-second-name) cost that name: the expected view is
the ground truth without it and with its file's link count one lower.  Which
name it is comes from the image bytes (the entry the recipe changed), not from
any repair tool's report.  A flipped bit inside an item (a data pointer, tail
bytes, stat data) damages that object's own bytes, which no checker can
restore on a file system without checksums: such objects are "touched"
(again found from the bytes and the damage record), must still be present
after the repair, and are not required intact; every other entry is.

The test of one case (test(): prepare, the checkers, kernel_view, kernel_verdict):
  1. `rfsck check` of the damaged image exits 6 and reports the recipe's code
     (the damage is there and rated fixable);
  2. `rfsck fix --yes` exits 1; `rfsck check` then exits 0; `reiserfsck
     --check` on a copy exits 0 and says "No corruptions found";
  3. the 6.1 kernel (mode "multi" of guest-init.sh; up to RFSCK_KERNEL_BATCH
     images per qemu boot, default and at most 25, in even batches) mounts
     the image read-only, reads every file, unmounts; then mounts it
     read-write, writes a 1 MiB file, a 3000-byte file and a symlink,
     unmounts, drops caches, mounts again, reads everything back (old files
     and new), deletes the new files and unmounts.  Both reads must hold
     every expected entry intact with no metadata difference (judge_view)
     and nothing else (the new files with the generator's sha256), every
     step must exit 0, and the kernel log of both phases must hold no
     reiserfs warning or error and nothing the kernel had to finish (journal
     replay, safe links): kernel_complaints();
  4. after the kernel's writes, `rfsck check` exits 0 and `reiserfsck --check`
     finds no corruption again.
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle  # noqa: E402
import rcorpus  # noqa: E402
import score  # noqa: E402

CORPUS = os.path.dirname(HERE)
TOP = os.path.dirname(CORPUS)
FIXABLE_DAMAGE = os.path.join(TOP, "tests", "lib", "fixable_damage.py")

# tests/lib/fixable_damage.py recipes, grouped as the issue names them
FIXABLE_RECIPES = ["leaf-free-space", "dc-size", "item-flags", "entry-state", "tree-height",
                   "free-count", "oid-map", "root-nlink", "root-size", "root-blocks", "dotdot",
                   "dangling-entry", "dir-second-name", "version", "hash-code", "trans-max",
                   "trans-max-both"]
FAMILY = {"leaf-free-space": "wrong count", "dc-size": "wrong count", "item-flags": "stray bits",
          "entry-state": "stray bits", "tree-height": "wrong count", "free-count": "wrong count",
          "oid-map": "wrong map", "root-nlink": "wrong count", "root-size": "wrong count",
          "root-blocks": "wrong count", "dotdot": "wrong entry", "dangling-entry": "wrong entry",
          "dir-second-name": "wrong entry", "version": "wrong field", "hash-code": "wrong field",
          "trans-max": "wrong field", "trans-max-both": "wrong field", "zero-bitmaps": "bitmaps zeroed",
          "zero-journal-header": "journal header zeroed", "prereplay": "power cut",
          "flip-leaves": "random bit flips", "safelink-truncate": "safe link",
          "safelink-unlink": "safe link", "safelink-bad": "safe link"}
CORPUS_RECIPES = {"zero-bitmaps": "BITMAP_USED_MARKED_FREE",
                  "zero-journal-header": "JOURNAL_HEADER_MISMATCH"}
FLIP_SEEDS = [5, 13, 14, 16, 26, 28]
SAFELINK_CASES = ["safelink-truncate:/sizes/sz_100000:5000",
                  "safelink-truncate:/sizes/sz_8193:8192",
                  "safelink-truncate:/sizes/sz_1000:3", "safelink-truncate:/big/five_mib:0",
                  "safelink-truncate:/sizes/sz_4097:999999",
                  "safelink-truncate:/sparse/holes_many:1000001",
                  "safelink-unlink:/sizes/sz_65537", "safelink-bad"]
DEFAULT_CASES = (["%s:%s" % (b, r) for b in ("r36-features-r5", "r35-features-r5")
                  for r in FIXABLE_RECIPES + list(CORPUS_RECIPES)]
                 + ["r36-features-r5:flip-leaves:%d" % s for s in FLIP_SEEDS]
                 + ["r36-features-r5:" + c for c in SAFELINK_CASES]
                 + ["r36-hash-tea:hash-code", "r36-hash-rupasov:hash-code"]
                 + ["r36-crash-commit:prereplay", "r36-crash-safelink:prereplay"])

WRITE_TEST_PREFIX = "/rfsck-write-test"
# names >= 8 bytes in the root only: 6.1 cannot read a 3.5 directory item whose
# names average fewer than 8 bytes, and every new 3.5 directory is one
# (corpus/README.md, findings), so the test makes no directory
WRITE_SH = """# write.sh - the kernel writes to a repaired image (cwd = mount point)
$GH gen 5101 1048576 rand > rfsck-write-test-1MiB
$GH gen 5102 3000 text > rfsck-write-test-tail
ln -s rfsck-write-test-tail rfsck-write-test-symlink
sync
echo "sum rfsck-write-test-1MiB $($GH gen 5101 1048576 rand | sha256sum | cut -d' ' -f1)"
echo "sum rfsck-write-test-tail $($GH gen 5102 3000 text | sha256sum | cut -d' ' -f1)"
"""
CLEANUP_SH = """# cleanup.sh - delete what write.sh made
rm -f rfsck-write-test-1MiB rfsck-write-test-tail rfsck-write-test-symlink
"""
STEPS_RO = ["ro.mount", "ro.manifest", "ro.umount"]
STEPS_RW = ["write.mount", "write.recipe", "write.umount", "rw.mount", "rw.manifest",
            "cleanup.recipe", "rw.umount"]

# kernel log lines of a healthy mount; anything else that names reiserfs, or
# any fault report, is a complaint
BENIGN = [r"REISERFS warning:\s+read_super_block: reiserfs filesystem is deprecated",
          r"REISERFS \(device \w+\): found reiserfs format \"3\.[56]\" with (non-)?standard journal",
          r"REISERFS \(device \w+\): using ordered data mode",
          r"reiserfs: using flush barriers",
          r"REISERFS \(device \w+\): journal params: ",
          r"REISERFS \(device \w+\): checking transaction log \(\w+\)",
          r"REISERFS \(device \w+\): Using \w+ hash to sort names"]
FAULT = re.compile(r"reiserfs|BUG|Oops|WARNING|Call Trace|I/O error|read-only|fsck|"
                   r"error|corrupt", re.I)


def kernel_complaints(dmesg):
    """Lines of a phase's kernel log that are not a healthy mount's: reiserfs
    warnings and errors, a journal replay or safe-link completion (work a
    repair should have left done), and any fault report."""
    out = []
    for line in dmesg.splitlines():
        msg = re.sub(r"^<\d+>", "", line)
        msg = re.sub(r"^\[\s*[\d.]+\]\s*", "", msg).strip()
        if not msg or any(re.search(b, msg) for b in BENIGN):
            continue
        if FAULT.search(msg):
            out.append(msg)
    return out


def decompress(src, dst):
    with open(dst, "wb") as f:
        subprocess.run(["xz", "-dc", src], stdout=f, check=True)


# ----------------------------------------------------------------------------
# damage and the expected view
# ----------------------------------------------------------------------------

def changed_entry(clean, damaged, manifest):
    """The directory entry a name recipe changed, found from the bytes: the
    entry head that differs between CLEAN and DAMAGED.  Returns the manifest
    row of its path (the name as the ground truth knows it)."""
    with open(clean, "rb") as f:
        f.seek(65536 + 44)
        bs, = struct.unpack("<H", f.read(2))
    hits = []
    with open(clean, "rb") as a, open(damaged, "rb") as b:
        blk = 0
        while True:
            x, y = a.read(bs), b.read(bs)
            if not x:
                break
            if x != y:
                hits.append((blk, x, y))
            blk += 1
    if len(hits) != 1:
        raise SystemExit("name recipe: %d blocks changed, 1 expected" % len(hits))
    _, x, y = hits[0]
    level, nr = struct.unpack_from("<HH", x, 0)
    if level != 1:
        raise SystemExit("name recipe: the changed block is not a leaf")
    dirs = {e["ino"]: e for e in rcorpus.read_manifest(manifest) if e["type"] == "dir"}
    found = []
    for i in range(nr):
        ih = 24 + 24 * i
        oid = struct.unpack_from("<I", x, ih + 4)[0]
        cnt, ilen, iloc = struct.unpack_from("<HHH", x, ih + 16)
        if oid not in dirs:
            continue
        uniq = struct.unpack_from("<I", x, ih + 12)[0]
        if not (uniq == 500 or uniq >> 28 == 3):
            continue
        end = ilen
        for e in range(cnt):
            at = iloc + 16 * e
            loc = struct.unpack_from("<H", x, at + 12)[0]
            name = x[iloc + loc:iloc + end].rstrip(b"\0")
            end = loc
            if x[at:at + 16] != y[at:at + 16]:
                parent = bytes.fromhex(dirs[oid]["path_hex"])
                found.append((parent.rstrip(b"/") + b"/" + name).hex())
    if len(found) != 1:
        raise SystemExit("name recipe: %d entries changed, 1 expected" % len(found))
    rows = [e for e in rcorpus.read_manifest(manifest) if e["path_hex"] == found[0]]
    if len(rows) != 1:
        raise SystemExit("name recipe: changed name %s not in the ground truth" % found[0])
    return rows[0]


def flip_touched(clean, record, manifest):
    """path_hex of every entry whose object a flip of RECORD (damage.py
    flip-leaves) landed in: an item head or body of that object in the clean
    leaf; for a directory's body, also the names in it."""
    fs = rcorpus.Fs(clean)
    ents = rcorpus.read_manifest(manifest)
    oids, dirs = set(), set()
    for fl in json.load(open(record))["bits_flipped"]:
        blk = fs.read_block(fl["block"])
        o = fl["byte"]
        for i, it in enumerate(fs.leaf_items(blk)):
            if 24 + 24 * i <= o < 48 + 24 * i or it["loc"] <= o < it["loc"] + it["len"]:
                oids.add(it["oid"])
                if it["type"] == "dir":
                    dirs.add(it["oid"])
    by_ino = {e["ino"]: e for e in ents if e["type"] == "dir"}
    tops = [bytes.fromhex(by_ino[d]["path_hex"]).rstrip(b"/") + b"/" for d in dirs if d in by_ino]
    out = set()
    for e in ents:
        raw = bytes.fromhex(e["path_hex"])
        if e["ino"] in oids or any(raw.startswith(t) and b"/" not in raw[len(t):] for t in tops):
            out.add(e["path_hex"])
    out.discard("2f")
    return sorted(out)


def expected_rows(manifest, drop=None, v35=False, resize=None):
    """The ground truth with the name DROP (path_hex) gone, its directory
    smaller by its entry and its file's other names with one link less; or
    with one file resized: RESIZE = (path_hex, size, sha256)."""
    rows = rcorpus.read_manifest(manifest)
    if drop is not None:
        gone = [e for e in rows if e["path_hex"] == drop][0]
        raw = bytes.fromhex(drop)
        parent = (raw.rsplit(b"/", 1)[0] or b"/").hex()
        leaf = raw.rsplit(b"/", 1)[1]
        # the directory loses the entry: a 16-byte head and the name, padded
        # to 8 bytes in 3.6 directories, unpadded in 3.5 ones
        slot = 16 + (len(leaf) if v35 else (len(leaf) + 7) // 8 * 8)
        out = []
        for e in rows:
            if e["path_hex"] == drop:
                continue
            if e["type"] == "file" and e["ino"] == gone["ino"]:
                e = dict(e, nlink=e["nlink"] - 1)
            if e["path_hex"] == parent:
                e = dict(e, size=e["size"] - slot)
            out.append(e)
        rows = out
    if resize is not None:
        rows = [dict(e, size=resize[1], sha256=resize[2]) if e["path_hex"] == resize[0] else e
                for e in rows]
    return rows


def prepare(spec, wd, rfsck=None):
    """Make the damaged image of CASE spec in directory wd.  Returns a dict:
    name, base, recipe, family, damaged (path), truth (path of the expected
    view), truth_entries (N, root excluded), want (problem code, None for
    random flips), lost (the path the recipe costs, or None), touched
    (path_hex of entries a flip damaged).  RFSCK (its `cat`) is needed by
    safelink-truncate only."""
    base, recipe = spec.split(":", 1)
    name = "%s:%s" % (base, recipe)
    recipe, *args = recipe.split(":")
    seed = args[0] if args else ""
    stem = os.path.join(wd, re.sub(r"[^A-Za-z0-9_.-]", "_", name.replace(":", ".")))
    manifest = os.path.join(CORPUS, "images", base + ".manifest.jsonl")
    clean = stem + ".clean.img"
    damaged = stem + ".damaged.img"
    truth = manifest
    lost = None
    touched = []
    if recipe == "flip-leaves":
        decompress(os.path.join(CORPUS, "images", base + ".img.xz"), clean)
        subprocess.run(["python3", os.path.join(HERE, "damage.py"), recipe, clean, damaged,
                        "--seed", seed, "--n", "1", "--record", stem + ".damage.json"],
                       stdout=subprocess.DEVNULL, check=True)
        touched = flip_touched(clean, stem + ".damage.json", manifest)
        want = None
    elif recipe == "prereplay":
        decompress(os.path.join(CORPUS, "images", base + ".prereplay.img.xz"), damaged)
        want = "JOURNAL_PENDING"
    elif recipe in CORPUS_RECIPES:
        decompress(os.path.join(CORPUS, "images", base + ".img.xz"), clean)
        subprocess.run(["python3", os.path.join(HERE, "damage.py"), recipe, clean, damaged,
                        "--seed", "1", "--record", stem + ".damage.json"],
                       stdout=subprocess.DEVNULL, check=True)
        want = CORPUS_RECIPES[recipe]
    elif recipe in FIXABLE_RECIPES:
        decompress(os.path.join(CORPUS, "images", base + ".img.xz"), clean)
        shutil.copyfile(clean, damaged)
        want = subprocess.run(["python3", FIXABLE_DAMAGE, recipe, damaged], stdout=subprocess.PIPE,
                              check=True).stdout.decode().strip()
        if recipe in ("dangling-entry", "dir-second-name"):
            gone = changed_entry(clean, damaged, manifest)
            lost = gone["path"]
            truth = stem + ".expected.jsonl"
            rcorpus.write_manifest(truth, expected_rows(manifest, drop=gone["path_hex"],
                                                        v35=rcorpus.Fs(damaged).version < 2))
    elif recipe in ("safelink-truncate", "safelink-unlink", "safelink-bad"):
        decompress(os.path.join(CORPUS, "images", base + ".img.xz"), clean)
        shutil.copyfile(clean, damaged)
        want = subprocess.run(["python3", FIXABLE_DAMAGE, recipe, damaged] + args,
                              stdout=subprocess.PIPE, check=True).stdout.decode().strip()
        rows = None
        by_path = {e["path"]: e for e in rcorpus.read_manifest(manifest)}
        if recipe == "safelink-truncate":
            e = by_path[args[0]]
            data = subprocess.run([rfsck, "cat", clean, args[0]], stdout=subprocess.PIPE,
                                  check=True).stdout
            if hashlib.sha256(data).hexdigest() != e["sha256"]:
                raise SystemExit("%s: rfsck cat of %s differs from the ground truth" % (name, args[0]))
            n = int(args[1], 0)
            head = data[:n] + bytes(max(0, n - len(data)))
            rows = expected_rows(manifest, resize=(e["path_hex"], n, hashlib.sha256(head).hexdigest()))
        elif recipe == "safelink-unlink":
            lost = args[0]
            rows = expected_rows(manifest, drop=by_path[args[0]]["path_hex"],
                                 v35=rcorpus.Fs(damaged).version < 2)
        if rows is not None:
            truth = stem + ".expected.jsonl"
            rcorpus.write_manifest(truth, rows)
    else:
        raise SystemExit("unknown recipe %s (fixed_kernel.py list)" % recipe)
    if os.path.exists(clean):
        os.unlink(clean)
    n = sum(1 for e in rcorpus.read_manifest(truth) if e["path_hex"] != "2f")
    return {"name": name, "base": base, "recipe": recipe, "family": FAMILY[recipe],
            "damaged": damaged, "truth": truth, "truth_entries": n, "want": want, "lost": lost,
            "touched": touched}


# ----------------------------------------------------------------------------
# the tools
# ----------------------------------------------------------------------------

def run(cmd, timeout=600):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return -1, "", "timeout"


def rfsck_check(rfsck, img):
    """(exit, problem codes other than info)"""
    rc, out, err = run([rfsck, "check", "--json", img])
    codes = []
    try:
        codes = sorted({p["code"] for p in json.loads(out)["problems"] if p["severity"] != "info"})
    except (ValueError, KeyError):
        pass
    return rc, codes


def reiserfsck_check(img):
    """(exit, clean): reiserfsck --check on a copy; clean = exit 0 and the
    words "No corruptions found"."""
    r = oracle.run_fsck(img, "check")
    clean = r["exit"] == 0 and any("No corruptions found" in ln for ln in r["key_lines"])
    return r["exit"], clean


# ----------------------------------------------------------------------------
# the kernel view, several images per boot
# ----------------------------------------------------------------------------

def kernel_view(images, write=True, log_dir=None):
    """Boot the guest in mode multi on IMAGES (modified in place: pass copies)
    and return one dict per image: status (of the boot), steps {name: rc},
    ro / rw (manifest entries), sums {write-test name: sha256}, dmesg_ro,
    dmesg_rw, seconds (boot wall time shared by the batch), hung (text, only
    for an image the kernel did not come back from).  A boot that ends without
    output (hang, panic) is retried one image per boot, so one bad image
    cannot hide the others; an image on which the guest goes silent for
    RFSCK_GUEST_IMAGE_TIMEOUT seconds (default 300) is taken out of the batch
    (hung_view) and the batch boots again without it.  Every boot starts from
    the images as they were given (copies are kept for the retries)."""
    most = max(1, min(25, int(os.environ.get("RFSCK_KERNEL_BATCH", "25"))))
    boots = -(-len(images) // most)
    batch = -(-len(images) // boots) if images else 1  # even batches, as few boots as allowed
    orig = {}
    for img in images:
        orig[img] = img + ".kv-orig"
        shutil.copyfile(img, orig[img])
    res = [None] * len(images)
    try:
        pending = list(range(len(images)))
        nboot = 0
        while pending:
            group = pending[:batch]
            for i in group:
                shutil.copyfile(orig[images[i]], images[i])
            nboot += 1
            got, hung = _boot([images[i] for i in group], write, log_dir, "boot%d-%d" % (nboot, group[0]))
            if hung is not None:
                k = group[hung]
                res[k] = hung_view(images[k], orig[images[k]], got[hung], write, log_dir)
                pending.remove(k)
                continue
            if len(group) > 1 and any(g["status"] != "ok" for g in got):
                got = []
                for i in group:
                    shutil.copyfile(orig[images[i]], images[i])
                    (one,), h = _boot([images[i]], write, log_dir, "alone%d" % i)
                    got.append(one if h is None else hung_view(images[i], orig[images[i]], one, write,
                                                               log_dir))
            for i, g in zip(group, got):
                res[i] = g
            pending = pending[len(group):]
    finally:
        for p in orig.values():
            if os.path.exists(p):
                os.remove(p)
    return res


def image_timeout():
    return int(os.environ.get("RFSCK_GUEST_IMAGE_TIMEOUT", "300"))


def hung_view(img, orig, first, write, log_dir):
    """The view of an image the guest went silent on: IMG stays as the killed
    boot left it (what "after the kernel" checks see); a second boot on a copy
    of the original, read-only phase only, tells whether the read-only phase
    works and what it reads.  When it does and there was a read-write phase,
    the hang was there (steps get write.mount -2, so no write counts as done).
    hung_phase ("ro" or "rw") says which phase; hung says it in words."""
    secs = image_timeout()
    tmp = img + ".kv-ro"
    shutil.copyfile(orig, tmp)
    try:
        (ro,), again = _boot([tmp], False, log_dir, "hung-ro-" + os.path.basename(img))
    finally:
        os.remove(tmp)
    v = dict(ro)
    v["status"] = first["status"]
    ro_ok = again is None and ro["status"] == "ok"
    if ro_ok and write:
        v["steps"] = dict(ro["steps"], **{"write.mount": -2})
        v["hung_phase"] = "rw"
        v["hung"] = "the read-write phase did not come back within %d s" % secs
    else:
        v["hung_phase"] = "ro"
        v["hung"] = "the read-only phase did not come back within %d s%s" % (
            secs, "" if again is not None else "; a second read-only boot ended " + ro["status"])
    return v


def _boot(group, write, log_dir, tag):
    tmp = tempfile.mkdtemp(prefix="kv-", dir=rcorpus.cache_dir())
    try:
        payload = []
        if write:
            for nm, text in (("write.sh", WRITE_SH), ("cleanup.sh", CLEANUP_SH)):
                payload.append(os.path.join(tmp, nm))
                with open(payload[-1], "w") as f:
                    f.write(text)
        timeout = int(os.environ.get("RFSCK_GUEST_TIMEOUT", "0")) or 300 + 120 * len(group)
        log = os.path.join(log_dir, tag + ".console.log") if log_dir else None
        r = rcorpus.run_guest(group[0], mode="multi", payload=payload, timeout=timeout,
                              log_path=log, extra_images=group[1:], idle_timeout=image_timeout())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    files = r["files"]
    out = []
    for i in range(len(group)):
        p = "i%d." % i

        def text(n):
            return files.get(p + n, b"").decode("utf-8", "replace")
        steps = {}
        for ln in text("steps").splitlines():
            k, _, v = ln.partition(" ")
            steps[k] = int(v) if v.strip().lstrip("-").isdigit() else -1
        sums = {}
        for ln in text("write.log").splitlines():
            f = ln.split()
            if len(f) == 3 and f[0] == "sum":
                sums[f[1]] = f[2]
        out.append({"status": r["status"], "seconds": r["seconds"], "tag": tag, "steps": steps,
                    "ro": rcorpus.tsv_to_entries(files.get(p + "ro.manifest.tsv", b"")),
                    "rw": rcorpus.tsv_to_entries(files.get(p + "rw.manifest.tsv", b"")),
                    "sums": sums, "dmesg_ro": text("ro.dmesg"), "dmesg_rw": text("rw.dmesg"),
                    "mount_log": text("ro.mount.log") + text("rw.mount.log"),
                    "write_log": text("write.log")})
    # the image the guest started and did not finish when it went silent
    hung = None
    if r["status"] == "idle":
        started = re.findall(r"RFSCK: image (\d+) on ", r["log"])
        ended = set(re.findall(r"RFSCK: image (\d+): ", r["log"]))
        left = [int(i) for i in started if i not in ended and int(i) < len(group)]
        hung = left[-1] if left else None
    return out, hung


def perfect(s):
    return (s["intact"] == s["truth_entries"] and s["corrupted"] == s["missing"] == s["foreign"]
            == s["meta_differs"] == s["lost_found"] == 0)


def judge_view(truth, result, touched=(), phase="ro"):
    """Problems of one kernel read against the expected view: every entry
    intact, with no metadata difference, and nothing else; entries in
    TOUCHED (path_hex) need only be present.  Beyond score.py (which leaves
    out the root and the size and link count of directories, since a rebuild
    may change them), a repair must also give every directory, the root
    included, its size and link count back, and the root its mode and owner;
    the root's size and mtime only before the kernel's own writes (phase
    "ro"), as the write test adds its files to the root."""
    t = set(touched)
    s = score.score([e for e in truth if e["path_hex"] not in t],
                    [e for e in result if e["path_hex"] not in t], details=5)
    probs = [] if perfect(s) else [_brief(s)]
    got = {e["path_hex"]: e for e in result}
    for e in truth:
        r = got.get(e["path_hex"])
        if e["type"] != "dir" or e["path_hex"] in t or not r or r["type"] != "dir":
            continue
        fields = ["size", "nlink"]
        if e["path_hex"] == "2f":
            # the write test adds its files to the root: its size and mtime
            # are the ground truth's only before the kernel's writes
            fields = ["nlink", "mode", "uid", "gid"] + (["size", "mtime"] if phase == "ro" else [])
        diff = ["%s %s, not %s" % (f, r.get(f), e.get(f)) for f in fields if r.get(f) != e.get(f)]
        if diff:
            probs.append("directory %s: %s" % (e["path"], "; ".join(diff)))
    have = {e["path_hex"] for e in result}
    gone = [bytes.fromhex(h).decode("utf-8", "backslashreplace") for h in sorted(t - have)]
    if gone:
        probs.append("touched entries missing: %s" % gone[:5])
    return probs


def kernel_verdict(kv, truth_path, write=True, touched=()):
    """Judge one image's kernel view.  Returns (ok, problems (list of text),
    summary dict: mounted, intact (ro read, over the whole expected view),
    truth, written, score (ro read), complaints)."""
    truth = rcorpus.read_manifest(truth_path)
    probs = []
    mounted = kv["steps"].get("ro.mount") == 0
    s_ro = score.score(truth, kv["ro"], details=5) if mounted else None
    if kv["status"] != "ok":
        probs.append("guest: %s" % kv["status"])
    if not all(kv["steps"].get(s) == 0 for s in STEPS_RO):
        probs.append("read-only phase: %s; %s" % (kv["steps"], kv["mount_log"].strip()[-300:]))
    if mounted:
        probs += ["read-only view: " + p for p in judge_view(truth, kv["ro"], touched)]
    written = None
    if write and "write.mount" in kv["steps"]:
        rw_ok = all(kv["steps"].get(s) == 0 for s in STEPS_RW)
        written = rw_ok
        if not rw_ok:
            probs.append("write phase: %s; %s" % (kv["steps"], kv["write_log"].strip()[-300:]))
        else:
            pre = WRITE_TEST_PREFIX.encode().hex()
            new = {bytes.fromhex(e["path_hex"]).decode(): e for e in kv["rw"]
                   if e["path_hex"].startswith(pre)}
            old = [e for e in kv["rw"] if not e["path_hex"].startswith(pre)]
            probs += ["view after the kernel's writes: " + p
                      for p in judge_view(truth, old, touched, phase="rw")]
            want = {WRITE_TEST_PREFIX + "-1MiB": ("file", kv["sums"].get("rfsck-write-test-1MiB")),
                    WRITE_TEST_PREFIX + "-tail": ("file", kv["sums"].get("rfsck-write-test-tail")),
                    WRITE_TEST_PREFIX + "-symlink": ("symlink", b"rfsck-write-test-tail".hex())}
            for path, (typ, val) in want.items():
                e = new.get(path)
                got = e and (e.get("sha256") if typ == "file" else e.get("target_hex"))
                if not e or e["type"] != typ or not val or got != val:
                    probs.append("written file %s read back wrong: %s" % (path, e))
            if set(new) != set(want):
                probs.append("write test: unexpected entries %s" % sorted(set(new) - set(want)))
    for phase in ("ro", "rw"):
        c = kernel_complaints(kv["dmesg_" + phase])
        if c:
            probs.append("kernel log (%s phase): %s" % (phase, " | ".join(c[:6])))
    summ = {"mounted": mounted, "intact": s_ro["intact"] if s_ro else 0,
            "truth": len([e for e in truth if e["path_hex"] != "2f"]), "written": written,
            "score": s_ro,
            "complaints": kernel_complaints(kv["dmesg_ro"]) + kernel_complaints(kv["dmesg_rw"])}
    return not probs, probs, summ


def _brief(s):
    d = {k: v for k, v in s.get("details", {}).items() if v}
    return "intact %d of %d, corrupted %d, missing %d, foreign %d, meta %d, lost+found %d %s" % (
        s["intact"], s["truth_entries"], s["corrupted"], s["missing"], s["foreign"],
        s["meta_differs"], s["lost_found"], json.dumps(d, ensure_ascii=False)[:400])


# ----------------------------------------------------------------------------
# test-kernel.sh --fixed
# ----------------------------------------------------------------------------

def test(rfsck, specs):
    t0 = time.time()
    wd = os.path.join(rcorpus.cache_dir(), "test-kernel", "fixed")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    cases, fails = [], {}
    for spec in specs:
        try:
            c = prepare(spec, wd, rfsck)
        except (SystemExit, subprocess.CalledProcessError, KeyError, OSError) as e:
            fails[spec] = ["cannot make the damaged image: %s" % e]
            continue
        img = c["damaged"]
        rc, codes = rfsck_check(rfsck, img)
        if rc != 6 or (c["want"] and c["want"] not in codes):
            fails[c["name"]] = ["rfsck check of the damaged image: exit %d, codes %s "
                                "(6 and %s expected)" % (rc, codes, c["want"] or "fixable codes")]
            continue
        c["codes"] = codes
        rc, out, err = run([rfsck, "fix", "--yes", "-q", img])
        if os.path.exists(img + ".rfsck-undo"):
            os.unlink(img + ".rfsck-undo")
        if rc != 1:
            fails[c["name"]] = ["rfsck fix --yes: exit %d (1 expected): %s" % (rc, (out + err)[-400:])]
            continue
        rc, codes = rfsck_check(rfsck, img)
        rrc, clean = reiserfsck_check(img)
        if rc != 0 or not clean:
            fails[c["name"]] = ["after fix: rfsck check exit %d %s, reiserfsck --check exit %d%s"
                                % (rc, codes, rrc, "" if clean else " (not 'No corruptions found')")]
            continue
        cases.append(c)
    t_kernel = time.time()
    kvs = kernel_view([c["damaged"] for c in cases], write=True, log_dir=wd)
    t_kernel = time.time() - t_kernel
    boots = sorted({(kv["tag"], kv["seconds"]) for kv in kvs})
    for c, kv in zip(cases, kvs):
        ok, probs, summ = kernel_verdict(kv, c["truth"], touched=c["touched"])
        rc, codes = rfsck_check(rfsck, c["damaged"])
        rrc, clean = reiserfsck_check(c["damaged"])
        if rc != 0 or not clean:
            probs.append("after the kernel's writes: rfsck check exit %d %s, reiserfsck --check exit %d"
                         % (rc, codes, rrc))
        if probs:
            fails[c["name"]] = probs
            with open(c["damaged"].replace(".damaged.img", ".kernel.json"), "w") as f:
                json.dump(kv, f, indent=1)
        else:
            print("PASS %s (%s, %s): fix 1, check 0, reiserfsck 0, kernel: %d/%d intact%s, "
                  "written and read back, log clean, check 0 after" % (
                      c["name"], c["family"], c["want"] or " ".join(c["codes"]), summ["intact"],
                      c["truth_entries"], " (%d touched by the flips, present)" % len(c["touched"])
                      if c["touched"] else ""))
            os.unlink(c["damaged"])
    for name in specs:
        if name in fails:
            print("FAIL %s:" % name)
            for p in fails[name]:
                print("    " + p)
    n_fail = len(fails)
    print("kernel: %d image(s) in %d boot(s) (%s s), %.0f s; all: %.0f s" % (
        len(cases), len(boots), " + ".join("%.0f" % b[1] for b in boots), t_kernel, time.time() - t0))
    print("%d passed, %d failed (images repaired by rfsck fix)" % (len(specs) - n_fail, n_fail))
    return 0 if n_fail == 0 else 1


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "list":
        print("\n".join(DEFAULT_CASES))
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "test":
        return test(sys.argv[2], sys.argv[3:] or DEFAULT_CASES)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 16


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""salvage_deleted.py - the checks of tests/integration/salvage_deleted.sh
(`rfsck salvage --deleted`, docs/salvage.md "Deleted objects").

Subcommands (exit 0 = ok, 1 = assertion failed, 2 = usage):

  expect OUT CASE [--missing PATH FROM TO] [--exit N]
        OUT holds exactly the deleted objects measured for CASE (EXPECT
        below): the manifest's "deleted" lines (path, key, type, size, status,
        extracted_as, sha256, missing ranges, item copies), the files and
        directories under OUT/deleted and their bytes (the corpus generator's
        output, tests/lib/guest_gen.py, or the ground truth's sha256), the
        body file's " (deleted)" lines, report.json's totals.deleted; and no
        live object under deleted/.  --missing: that file must instead lack
        exactly [FROM, TO) (a hole, zeros) and match everywhere else.
  absent OUT
        nothing of --deleted: no OUT/deleted, no "deleted" line, no
        " (deleted)" body-file line, no totals.deleted / deleted_scan.
  same PLAIN WITH
        the output of a run with --deleted is that of the run without it plus
        the deleted objects: the other manifest and body-file lines are
        identical, OUT/root and OUT/lost+found hold the same tree (names,
        types, modes, sizes, mtimes, contents, link targets), the same exit
        and totals.  A time inside a run's own window (a stat data the
        damaged-tree mode creates in memory gets the time of the run) counts
        as "the run's time" on both sides.
  reuse IMAGE OUT CASE_PATH INDEX NEWIMAGE
        writes NEWIMAGE: IMAGE where the INDEX-th data block of deleted file
        CASE_PATH (from OUT's manifest) is overwritten with other bytes and
        marked used in the bitmap (a block the volume reused); prints the
        byte range the file must now lack.
"""
import hashlib
import json
import os
import stat
import struct
import sys

sys.dont_write_bytecode = True   # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest_gen import gen  # noqa: E402

EMPTY_SHA = hashlib.sha256(b"").hexdigest()
TOP = os.environ.get("TOP", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def features_r36():
    files = {"/deleted/f%d" % i: {"key": [153, 154 + i], "gen": (100 + i, 20000 + i * 777)}
             for i in range(0, 24, 2)}
    files["/deleted/big_gone"] = {"key": [153, 178], "gen": (200, 2000000)}
    # `rm -r empty_dirs/x/y/z`: the directory's stat data is in a journal copy
    return {"files": files, "dirs": {"/empty_dirs/x/y/z": [79, 80]}}


def nested_damaged():
    # the 18 objects of the leaf the damage zeroed (557): found only in a
    # journal copy; their data blocks are still marked used
    truth = {}
    for line in open(os.path.join(TOP, "corpus/images/r36-nested.manifest.jsonl")):
        e = json.loads(line)
        truth[e["path"]] = e
    files = {}
    for p in ["/own/outer_f%d" % i for i in range(43, 60)] + ["/own/outer_big"]:
        files[p] = {"key": None, "sha256": truth[p]["sha256"], "marked_used": True}
    return {"files": files, "dirs": {}}


# What was measured by hand (docs/salvage.md, "Deleted objects"), per image.
EXPECT = {
    # features.sh: f0, f2 .. f22 and big_gone deleted; all 13 come back
    "r36-features-r5": features_r36,
    # format35.sh: deleted_later_1, 3, 5 (only in journal copies)
    "r35-features-r5": lambda: {"files": {"/deleted_later_%d" % i: {"key": [2, 25 + i],
                                                                      "gen": (i, 30000)}
                                          for i in (1, 3, 5)}, "dirs": {}},
    # crash-safelink.sh: two files held open and unlinked at the power cut
    "r36-crash-safelink": lambda: {"files": {"/victim": {"key": [2, 15], "gen": (77, 400000)},
                                             "/victim_small_tail": {"key": [2, 16],
                                                                    "gen": (78, 300000)}},
                                   "dirs": {}},
    # hashnames.sh: entry_601, 603 .. 649 removed (empty files); entry_600,
    # 602 .. 648 renamed to renamed_6xx: their old names, of live objects
    "r36-hash-tea": lambda: {"files": {"/many/entry_%d" % i: {"key": [4, 66 + i], "gen": (0, 0)}
                                       for i in range(601, 650, 2)}, "dirs": {},
                             "old_names": {"/many/entry_%d" % i: [4, 66 + i] for i in range(600, 650, 2)}},
    # crash-commit.sh removes base/b2 and base/b3, but no stale copy of their
    # items survives (measured: no item of a key the tree lacks, anywhere)
    "r36-crash-commit": lambda: {"files": {}, "dirs": {}},
    # a nested image inside a live file is that file's data, never stale leaves
    "r36-nested": lambda: {"files": {}, "dirs": {}},
    "r36-nested.damaged": nested_damaged,
}

fails = []


def fail(msg):
    fails.append(msg)


def finish(ok_msg):
    if fails:
        for f in fails[:25]:
            print("  - " + f)
        print("%d problem(s)" % len(fails))
        sys.exit(1)
    print(ok_msg)
    sys.exit(0)


def manifest(out):
    return [json.loads(l) for l in open(os.path.join(out, "manifest.jsonl"))]


def out_bytes(rel):
    return rel.encode()


def sha_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def expected_bytes(spec):
    if "gen" in spec:
        seed, size = spec["gen"]
        return gen(seed, size, "text")
    return None


def cmd_expect(argv):
    out, case = argv[0], argv[1]
    missing_for = None
    want_exit = None
    i = 2
    while i < len(argv):
        if argv[i] == "--missing":
            missing_for = (argv[i + 1], int(argv[i + 2]), int(argv[i + 3]))
            i += 4
        elif argv[i] == "--exit":
            want_exit = int(argv[i + 1])
            i += 2
        else:
            print("usage")
            sys.exit(2)
    exp = EXPECT[case]()
    rep = json.load(open(os.path.join(out, "report.json")))
    if not rep["image_sha256"]["unchanged"]:
        fail("report.json: image sha256 changed")
    if want_exit is not None and rep["exit"] != want_exit:
        fail("exit %r, expected %r" % (rep["exit"], want_exit))
    man = manifest(out)
    dl = [e for e in man if e["status"] == "deleted"]
    live = [e for e in man if e["status"] != "deleted"]
    by_path = {}
    for e in dl:
        if e["path"] in by_path:
            fail("%s: two deleted lines" % e["path"])
        by_path[e["path"]] = e
    old_names = exp.get("old_names", {})
    want = set(exp["files"]) | set(exp["dirs"]) | set(old_names)
    if set(by_path) != want:
        fail("deleted paths: extra %s, missing %s" % (sorted(set(by_path) - want)[:8],
                                                       sorted(want - set(by_path))[:8]))
    live_keys = {tuple(e["key"]) for e in live}
    root_out = os.path.join(out, "deleted")
    n_partial = n_complete = 0
    on_disk_files, on_disk_dirs = set(), set()
    for path, spec in exp["files"].items():
        e = by_path.get(path)
        if e is None:
            continue
        if tuple(e["key"]) in live_keys:
            fail("%s: key %s is a live object's" % (path, e["key"]))
        if spec["key"] is not None and e["key"] != spec["key"]:
            fail("%s: key %s, expected %s" % (path, e["key"], spec["key"]))
        if e["type"] != "file" or not e.get("name_resolved"):
            fail("%s: type %s name_resolved %s" % (path, e["type"], e.get("name_resolved")))
        if e.get("extracted_as") != "deleted" + path:
            fail("%s: extracted_as %r" % (path, e.get("extracted_as")))
            continue
        if not e.get("item_copies") or any(c["area"] not in ("free", "journal") for c in e["item_copies"]):
            fail("%s: item_copies %r" % (path, e.get("item_copies")))
        if spec.get("marked_used") and not e.get("blocks_marked_used"):
            fail("%s: no blocks_marked_used" % path)
        if not spec.get("marked_used") and e.get("blocks_marked_used"):
            fail("%s: blocks_marked_used %r in a sound tree" % (path, e.get("blocks_marked_used")))
        data = expected_bytes(spec)
        want_sha = hashlib.sha256(data).hexdigest() if data is not None else spec["sha256"]
        p = os.path.join(out, e["extracted_as"])
        on_disk_files.add(e["extracted_as"])
        if not os.path.isfile(p) or os.path.islink(p):
            fail("%s: OUT/%s is not a file" % (path, e["extracted_as"]))
            continue
        got = open(p, "rb").read()
        if data is not None and e["size"] != len(data):
            fail("%s: size %d, expected %d" % (path, e["size"], len(data)))
        if len(got) != e["size"]:
            fail("%s: %d bytes extracted, size %d" % (path, len(got), e["size"]))
        if missing_for and missing_for[0] == path:
            a, b = missing_for[1], missing_for[2]
            n_partial += 1
            if e["missing"] != [[a, b]] or "sha256" in e:
                fail("%s: missing %r sha256 %r, expected [[%d, %d]] and no sha256"
                     % (path, e["missing"], e.get("sha256"), a, b))
            if got[a:b] != bytes(b - a):
                fail("%s: the missing range is not zeros (a reused block was presented)" % path)
            if data is not None and (got[:a] != data[:a] or got[b:] != data[b:]):
                fail("%s: bytes outside the missing range differ" % path)
            if "in use now" not in e.get("note", ""):
                fail("%s: note %r does not say the block is in use" % (path, e.get("note")))
            continue
        n_complete += 1
        if e["missing"] != [] or e.get("sha256") != want_sha:
            fail("%s: missing %r sha256 %r, expected none and %s" % (path, e["missing"], e.get("sha256"), want_sha))
        if hashlib.sha256(got).hexdigest() != want_sha:
            fail("%s: the extracted bytes are not the file's" % path)
        blocks = sum(r[1] for r in e["source_blocks"])
        if blocks != (e["size"] + 4095) // 4096 and e["size"] > 4096:
            fail("%s: %d source blocks for %d bytes" % (path, blocks, e["size"]))
    for path, key in old_names.items():
        e = by_path.get(path)
        if e is None:
            continue
        if e["key"] != key or e["type"] != "unknown" or e.get("extracted_as") is not None or \
                tuple(key) not in live_keys or not e.get("name_resolved"):
            fail("%s: old name line %r" % (path, e))
    for path, key in exp["dirs"].items():
        e = by_path.get(path)
        if e is None:
            continue
        if e["type"] != "dir" or e["key"] != key or e.get("extracted_as") != "deleted" + path:
            fail("%s: %s %s %r" % (path, e["type"], e["key"], e.get("extracted_as")))
        on_disk_dirs.add(e["extracted_as"])
    # exactly these under OUT/deleted (plus the directories leading to them)
    if exp["files"] or exp["dirs"]:
        for rel in list(on_disk_files) + list(on_disk_dirs):
            parts = rel.split("/")
            for k in range(1, len(parts)):
                on_disk_dirs.add("/".join(parts[:k]))
        found_files, found_dirs = set(), set()
        for dp, dns, fns in os.walk(root_out):
            rel = os.path.relpath(dp, out)
            found_dirs.add(rel)
            for f in fns:
                found_files.add(os.path.join(rel, f))
            for d in dns:
                if os.path.islink(os.path.join(dp, d)):
                    found_files.add(os.path.join(rel, d))
        if found_files != on_disk_files or found_dirs != on_disk_dirs:
            fail("OUT/deleted: files extra %s missing %s; dirs extra %s missing %s" % (
                sorted(found_files - on_disk_files)[:5], sorted(on_disk_files - found_files)[:5],
                sorted(found_dirs - on_disk_dirs)[:5], sorted(on_disk_dirs - found_dirs)[:5]))
    elif os.listdir(root_out):
        fail("OUT/deleted is not empty: %s" % os.listdir(root_out)[:5])
    # nothing live under deleted/, nothing deleted outside it
    for e in live:
        if (e.get("extracted_as") or "").startswith("deleted/"):
            fail("live %s extracted under deleted/" % e["path"])
    # body file: one " (deleted)" line per deleted line, inode = objectid
    body = [l.rstrip("\n").split("|") for l in open(os.path.join(out, "bodyfile"))]
    marked = [f for f in body if f[1].endswith(" (deleted)")]
    if sorted((f[1][:-len(" (deleted)")], int(f[2])) for f in marked) != \
            sorted((e["path"], e["key"][1]) for e in dl):
        fail("body file: %d ' (deleted)' lines do not match the %d deleted lines" % (len(marked), len(dl)))
    td = rep["totals"].get("deleted")
    if td is None:
        fail("report.json: no totals.deleted")
    else:
        want_t = {"objects": len(exp["files"]) + len(exp["dirs"]), "files": len(exp["files"]),
                  "dirs": len(exp["dirs"]), "files_complete": n_complete,
                  "files_with_missing_ranges": n_partial, "unresolved_names": 0, "names_only": 0,
                  "old_names_of_live_objects": len(old_names)}
        got_t = {k: td.get(k) for k in want_t}
        if got_t != want_t:
            fail("totals.deleted %s, expected %s" % (got_t, want_t))
    if "deleted_scan" not in rep or rep["deleted_scan"]["live_tree_incomplete"]:
        fail("report.json: deleted_scan %r" % rep.get("deleted_scan"))
    finish("ok %s: %d deleted object(s) as measured (%d file(s) intact%s), none live; %d old name(s)"
           % (case, len(want) - len(old_names), n_complete,
              ", 1 with its reused block missing" if n_partial else "", len(old_names)))


def cmd_absent(argv):
    out = argv[0]
    if os.path.lexists(os.path.join(out, "deleted")):
        fail("OUT/deleted exists without --deleted")
    for e in manifest(out):
        if e["status"] == "deleted":
            fail("a deleted line without --deleted: %s" % e["path"])
    for l in open(os.path.join(out, "bodyfile")):
        if l.split("|")[1].endswith(" (deleted)"):
            fail("a ' (deleted)' body-file line without --deleted")
    rep = json.load(open(os.path.join(out, "report.json")))
    if "deleted" in rep["totals"] or "deleted_scan" in rep:
        fail("report.json speaks of deleted objects without --deleted")
    finish("ok nothing of --deleted without it")


def run_window(out):
    """[start, end] of a run in epoch seconds (a stat data the rebuild
    creates in memory gets the time of the run)."""
    import calendar
    import time as _t
    rep = json.load(open(os.path.join(out, "report.json")))
    f = lambda s: calendar.timegm(_t.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))
    return f(rep["timing"]["started"]) - 1, f(rep["timing"]["finished"]) + 1


def norm_time(t, win):
    return "RUN" if win[0] <= t <= win[1] else t


def norm_line(e, win):
    for k in ("atime", "mtime", "ctime"):
        if k in e:
            e[k] = norm_time(e[k], win)
    return e


def norm_body(line, win):
    f = line.rstrip("\n").split("|")
    for i in (7, 8, 9):
        f[i] = str(norm_time(int(f[i]), win))
    return f


def tree(base, win):
    """name -> (type, mode, size, mtime, content digest or link target), no following."""
    res = {}
    if not os.path.lexists(base):
        return res
    for dp, dns, fns in os.walk(base):
        for n in dns + fns:
            p = os.path.join(dp, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, base)
            if stat.S_ISLNK(st.st_mode):
                res[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                res[rel] = ("d", stat.S_IMODE(st.st_mode))
            else:
                res[rel] = ("f", stat.S_IMODE(st.st_mode), st.st_size,
                            norm_time(int(st.st_mtime), win),
                            sha_file(p) if stat.S_ISREG(st.st_mode) else None)
    return res


def cmd_same(argv):
    plain, withd = argv[0], argv[1]
    wa, wb = run_window(plain), run_window(withd)
    a = [norm_line(json.loads(l), wa) for l in open(os.path.join(plain, "manifest.jsonl"))]
    b = [norm_line(e, wb) for e in manifest(withd) if e["status"] != "deleted"]
    if a != b:
        diff = [(x.get("path"), y.get("path")) for x, y in zip(a, b) if x != y]
        fail("manifest lines other than the deleted ones differ (%d vs %d lines; first %s)"
             % (len(a), len(b), diff[:1]))
    a = [norm_body(l, wa) for l in open(os.path.join(plain, "bodyfile"))]
    b = [norm_body(l, wb) for l in open(os.path.join(withd, "bodyfile"))
         if not l.split("|")[1].endswith(" (deleted)")]
    if a != b:
        fail("body-file lines other than the deleted ones differ")
    for sub in ("root", "lost+found"):
        if tree(os.path.join(plain, sub), wa) != tree(os.path.join(withd, sub), wb):
            fail("OUT/%s differs with --deleted" % sub)
    ra = json.load(open(os.path.join(plain, "report.json")))
    rb = json.load(open(os.path.join(withd, "report.json")))
    tb = dict(rb["totals"])
    tb.pop("deleted", None)
    if ra["totals"] != tb or ra["exit"] != rb["exit"] or ra["status"] != rb["status"]:
        fail("report.json: totals/exit/status differ: %s %s vs %s %s" % (ra["totals"], ra["exit"], tb, rb["exit"]))
    if ra["image_sha256"] != rb["image_sha256"]:
        fail("report.json: image sha256 differ")
    finish("ok the rest of the output is identical with and without --deleted")


def cmd_reuse(argv):
    image, out, path, index, newimage = argv[0], argv[1], argv[2], int(argv[3]), argv[4]
    e = [x for x in manifest(out) if x["status"] == "deleted" and x["path"] == path][0]
    blocks = [f + k for f, n in e["source_blocks"] for k in range(n)]
    blk = blocks[index]
    img = bytearray(open(image, "rb").read())
    bs = struct.unpack_from("<H", img, 65536 + 44)[0]
    sb_block = 65536 // bs
    if struct.unpack_from("<H", img, 65536 + 70)[0] != 1:   # s_bmap_nr: one bitmap block here
        print("reuse: more than one bitmap block")
        sys.exit(2)
    bmp = (sb_block + 1) * bs
    if img[bmp + blk // 8] >> (blk % 8) & 1:
        print("reuse: block %d is already marked used" % blk)
        sys.exit(1)
    img[bmp + blk // 8] |= 1 << (blk % 8)
    img[blk * bs:(blk + 1) * bs] = b"reused by another file\n".ljust(bs, b"#")
    open(newimage, "wb").write(img)
    a = index * bs
    print(a, min(a + bs, e["size"]))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    {"expect": cmd_expect, "absent": cmd_absent, "same": cmd_same, "reuse": cmd_reuse}[sys.argv[1]](sys.argv[2:])

#!/usr/bin/env python3
"""verdict_table.py RFSCK OUT.md - `rfsck check` and `reiserfsck --check` side by
side: on every corpus damage recipe (two seeds, several kernel-written images)
and on every public image (reference, fuzzed, negative).  reiserfsck runs on a
throwaway copy (it writes even in --check mode).  Writes a Markdown table with
both exit codes, rfsck's problem codes and whether the verdicts agree
(same exit status, or both refusing: 8 vs an abort).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("SHARED", os.path.join(TOP, "..", "shared"))
RECIPES = ["zero-root", "zero-internal", "zero-bitmaps", "zero-super", "zero-leaves",
           "flip-leaves", "truncate", "zero-journal-header"]
BASES = ["r36-features-r5", "r35-features-r5", "r36-hash-tea", "r36-stdjournal-r5"]


def decompress(src, dst):
    if src.endswith(".xz"):
        cmd = ["xz", "-dc", src]
    elif src.endswith(".gz"):
        cmd = ["gzip", "-dc", src]
    else:
        shutil.copy(src, dst)
        return
    with open(dst, "wb") as f:
        subprocess.run(cmd, stdout=f, check=True)


def rfsck_check(rfsck, img):
    r = subprocess.run([rfsck, "check", "--json", img], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    codes = []
    if r.returncode in (0, 4, 6):
        d = json.loads(r.stdout)
        codes = sorted({p["code"] for p in d["problems"] if p["severity"] != "info"})
    else:
        codes = [r.stderr.decode(errors="replace").strip().split(": ", 1)[-1][:70]]
    return r.returncode, codes


def reiserfsck_check(img, tmp):
    copy = os.path.join(tmp, "rf.img")
    shutil.copy(img, copy)
    r = subprocess.run(["reiserfsck", "--check", "--yes", copy], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    os.unlink(copy)
    return r.returncode if r.returncode >= 0 else 128 - r.returncode


def agree(a, b):
    return a == b or (a == 8 and b >= 128) or (a == 4 and b >= 128)


def main():
    rfsck, out = sys.argv[1], sys.argv[2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean.img")
        dmg = os.path.join(tmp, "d.img")
        for base in BASES:
            decompress(os.path.join(TOP, "corpus", "images", base + ".img.xz"), clean)
            for recipe in RECIPES:
                for seed in (1, 2):
                    subprocess.run(["python3", os.path.join(TOP, "corpus", "tools", "damage.py"),
                                    recipe, clean, dmg, "--seed", str(seed), "--record",
                                    os.path.join(tmp, "rec.json")], stdout=subprocess.DEVNULL,
                                   check=True)
                    rc, codes = rfsck_check(rfsck, dmg)
                    rrc = reiserfsck_check(dmg, tmp)
                    rows.append(("%s / %s / seed %d" % (base, recipe, seed), rc, rrc, codes))
        pub = os.path.join(SHARED, "corpus-public")
        for dirpath, _, files in sorted(os.walk(pub)):
            for f in sorted(files):
                if not f.endswith((".xz", ".gz", ".bin")):
                    continue
                src = os.path.join(dirpath, f)
                decompress(src, clean)
                rc, codes = rfsck_check(rfsck, clean)
                rrc = reiserfsck_check(clean, tmp)
                rows.append((os.path.relpath(src, pub), rc, rrc, codes))
    n_agree = sum(1 for r in rows if agree(r[1], r[2]))
    with open(out, "w") as f:
        f.write("| image / damage | rfsck check | reiserfsck --check | agree | rfsck problem codes (non-info) |\n")
        f.write("| --- | --- | --- | --- | --- |\n")
        for name, rc, rrc, codes in rows:
            f.write("| %s | %d | %s | %s | %s |\n" % (name, rc, "abort (%d)" % rrc if rrc >= 128 else rrc,
                                                  "yes" if agree(rc, rrc) else "**no**",
                                                  ", ".join(codes)))
        f.write("\n%d rows, %d agree.\n" % (len(rows), n_agree))
    print("%d rows, %d agree" % (len(rows), n_agree))


if __name__ == "__main__":
    main()

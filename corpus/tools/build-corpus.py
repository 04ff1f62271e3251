#!/usr/bin/env python3
"""build-corpus.py - build the kernel-written ReiserFS corpus from nothing.

usage: build-corpus.py [--big] [--only NAME,...] [-j N] [--no-ship]

For every entry of IMAGES: make a sparse image file, mkreiserfs it on the host,
optionally patch it (fix35root for 3.5), run the recipe(s) in the 6.1 guest
(tools/run-guest logic), check the result with `reiserfsck --check` on a
copy, and (unless --no-ship or the entry is big) ship it to corpus/images/ as
NAME.img.xz + NAME.manifest.jsonl + NAME.json (provenance).  Crash entries
also ship NAME.prereplay.img.xz (the image as the power cut left it).
The nested entry ships NAME.nested.json (inner image path/size + manifest).
Scratch goes to $RFSCK_CORPUS_CACHE (default corpus/build/).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402
import oracle  # noqa: E402

R = os.path.join(rcorpus.CORPUS, "recipes")

# name: size MiB, mkreiserfs args, recipes, options
IMAGES = [
    {"name": "r36-features-r5", "mib": 16, "mkfs": ["--format", "3.6", "-h", "r5", "-s", "513"],
     "recipes": ["features.sh"]},
    {"name": "r36-hash-tea", "mib": 8, "mkfs": ["--format", "3.6", "-h", "tea", "-s", "513"],
     "recipes": ["hashnames.sh"]},
    {"name": "r36-hash-rupasov", "mib": 8, "mkfs": ["--format", "3.6", "-h", "rupasov", "-s", "513"],
     "recipes": ["hashnames.sh"]},
    {"name": "r36-stdjournal-r5", "mib": 40, "mkfs": ["--format", "3.6", "-h", "r5"],
     "recipes": ["hashnames.sh"]},
    {"name": "r35-features-r5", "mib": 16, "mkfs": ["--format", "3.5", "-h", "r5", "-s", "513"],
     "fix35root": True, "recipes": ["format35.sh"]},
    {"name": "r36-crash-commit", "mib": 16, "mkfs": ["--format", "3.6", "-h", "r5", "-s", "513"],
     "recipes": ["crash-commit.sh"], "crash": True},
    {"name": "r36-crash-safelink", "mib": 16, "mkfs": ["--format", "3.6", "-h", "r5", "-s", "513"],
     "recipes": ["crash-safelink.sh"], "crash": True},
    {"name": "r36-nested", "mib": 16, "mkfs": ["--format", "3.6", "-h", "r5", "-s", "513"],
     "recipes": ["nested-outer.sh"],
     "inner": {"mib": 8, "mkfs": ["--format", "3.6", "-h", "r5", "-s", "513"],
               "recipes": ["nested-inner.sh"], "path_in_outer": "/images/inner.img"}},
    {"name": "r36-bigtree", "mib": 320, "mkfs": ["--format", "3.6", "-h", "r5"],
     "recipes": ["bigtree.sh"], "big": True},
]


def log(*a):
    print("build-corpus:", *a, file=sys.stderr, flush=True)


def mkfs(img, mib, args):
    if os.path.exists(img):
        os.remove(img)
    with open(img, "wb") as f:
        f.truncate(mib << 20)
    cmd = ["mkreiserfs", "-f", "-q"] + args + [img]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return "truncate -s %dM IMG && mkreiserfs -f -q %s IMG" % (mib, " ".join(args))


def run_recipes(img, recipes, manifest, payload=()):
    """Run recipes in order (each a separate boot); return list of run records."""
    runs = []
    for rcp in recipes:
        cmd = [sys.executable, os.path.join(rcorpus.TOOLS, "run-guest")]
        for p in payload:
            cmd += ["--payload", p]
        cmd += [img, os.path.join(R, rcp), manifest]
        subprocess.run(cmd, check=True)
        with open(manifest + ".run.json") as f:
            runs.append(json.load(f))
    return runs


def tool_versions():
    v = {}
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "reiserfsprogs"],
                             capture_output=True, text=True).stdout
        v["reiserfsprogs"] = out
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "qemu-system-x86"],
                             capture_output=True, text=True).stdout
        v["qemu-system-x86"] = out
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "busybox-static"],
                             capture_output=True, text=True).stdout
        v["busybox-static"] = out
    except OSError:
        pass
    return v


def build_one(ent, ship):
    cache = rcorpus.cache_dir()
    bdir = os.path.join(cache, "images")
    os.makedirs(bdir, exist_ok=True)
    name = ent["name"]
    img = os.path.join(bdir, name + ".img")
    man = os.path.join(bdir, name + ".manifest.jsonl")
    info = rcorpus.kernel_info()
    prov = {"name": name, "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel_package": info["KPKG"], "kernel_package_version": info["KPKG_VERSION"],
            "kernel_release": info["KVER"], "guest_modules_in_load_order": info["MODULES"],
            "tools": tool_versions(), "recipes": ent["recipes"]}
    payload = []
    if "inner" in ent:
        inn = ent["inner"]
        iimg = os.path.join(bdir, name + ".inner.img")
        iman = os.path.join(bdir, name + ".inner.manifest.jsonl")
        prov["inner_mkfs"] = mkfs(iimg, inn["mib"], inn["mkfs"])
        prov["inner_runs"] = run_recipes(iimg, inn["recipes"], iman)
        prov["inner_recipes"] = inn["recipes"]
        # the payload must be called inner.img inside the job tar
        pdir = os.path.join(bdir, name + ".payload")
        os.makedirs(pdir, exist_ok=True)
        shutil.copyfile(iimg, os.path.join(pdir, "inner.img"))
        payload = [os.path.join(pdir, "inner.img")]
    prov["mkfs"] = mkfs(img, ent["mib"], ent["mkfs"])
    if ent.get("fix35root"):
        subprocess.run([sys.executable, os.path.join(rcorpus.TOOLS, "fix35root.py"), img], check=True)
        prov["post_mkfs"] = "tools/fix35root.py IMG (pads the root dir item of the fresh 3.5 fs; see README)"
    runs = run_recipes(img, ent["recipes"], man, payload)
    prov["runs"] = [{"recipe": os.path.basename(r["recipe"]), "mountopts": r["mountopts"],
                     "crash": r["crash"], "boots": [{"status": b["status"], "seconds": b["seconds"]}
                                                    for b in r["boots"]],
                     "recipe_log": r["boots"][0]["guest_files"].get("recipe.log", "")[-2000:]}
                    for r in runs]
    prov["image_bytes"] = os.path.getsize(img)
    prov["image_sha256"] = rcorpus.sha256_file(img)
    chk = oracle.run_fsck(img, "check")
    prov["reiserfsck_check"] = {"exit": chk["exit"], "meaning": chk["meaning"], "summary": chk["summary"]}
    fs = rcorpus.Fs(img)
    prov["fs"] = {"block_count": fs.block_count, "blocksize": fs.blocksize, "root_block": fs.root_block,
                  "tree_height": fs.tree_height, "bmap_nr": fs.bmap_nr, "magic": fs.magic.decode(),
                  "format": "3.6" if (fs.magic == b"ReIsEr2Fs" or (fs.magic == b"ReIsEr3Fs" and fs.version == 2))
                  else "3.5", "hash_code": fs.hash_code}
    ents = rcorpus.read_manifest(man)
    prov["manifest_entries"] = len(ents)
    if ent.get("crash"):
        pre = img + ".prereplay"
        prov["prereplay_sha256"] = rcorpus.sha256_file(pre)
        pchk = oracle.run_fsck(pre, "check")
        prov["prereplay_reiserfsck_check"] = {"exit": pchk["exit"], "meaning": pchk["meaning"],
                                              "summary": pchk["summary"]}
    if "inner" in ent:
        iman = os.path.join(bdir, name + ".inner.manifest.jsonl")
        inner_ents = rcorpus.read_manifest(iman)
        pth = ent["inner"]["path_in_outer"]
        hit = [e for e in ents if e["path"] == pth]
        nested = {"outer_image": name, "nested_path": pth,
                  "nested_path_hex": pth.encode().hex(),
                  "nested_size": hit[0]["size"] if hit else None,
                  "nested_sha256": hit[0].get("sha256") if hit else None,
                  "inner_image_sha256": rcorpus.sha256_file(os.path.join(bdir, name + ".inner.img")),
                  "inner_mkfs": prov["inner_mkfs"], "inner_recipes": ent["inner"]["recipes"],
                  "inner_manifest": inner_ents}
        with open(os.path.join(bdir, name + ".nested.json"), "w") as f:
            json.dump(nested, f, indent=1)
        prov["nested_sidecar"] = name + ".nested.json"
    with open(os.path.join(bdir, name + ".json"), "w") as f:
        json.dump(prov, f, indent=1)
    if ship and not ent.get("big"):
        dst = os.path.join(rcorpus.CORPUS, "images")
        os.makedirs(dst, exist_ok=True)
        subprocess.run(["sh", "-c", 'xz -T1 -9 -c "$1" > "$2.tmp" && mv "$2.tmp" "$2"', "xz",
                        img, os.path.join(dst, name + ".img.xz")], check=True)
        if ent.get("crash"):
            subprocess.run(["sh", "-c", 'xz -T1 -9 -c "$1" > "$2.tmp" && mv "$2.tmp" "$2"', "xz",
                            img + ".prereplay", os.path.join(dst, name + ".prereplay.img.xz")], check=True)
        for suf in (".manifest.jsonl", ".json", ".nested.json"):
            if os.path.exists(os.path.join(bdir, name + suf)):
                shutil.copyfile(os.path.join(bdir, name + suf), os.path.join(dst, name + suf))
    log("%s: done, %d entries, reiserfsck --check exit %d, height %d" %
        (name, len(ents), chk["exit"], fs.tree_height))
    return name, chk["exit"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also build big (not shipped) images")
    ap.add_argument("--only")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--no-ship", action="store_true")
    a = ap.parse_args()
    rcorpus.kernel_info()  # fetch kernel / build initramfs once, before the pool
    todo = [e for e in IMAGES if (a.big or not e.get("big"))]
    if a.only:
        names = a.only.split(",")
        todo = [e for e in IMAGES if e["name"] in names]
    bad = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as ex:
        futs = {ex.submit(build_one, e, not a.no_ship): e["name"] for e in todo}
        for f in concurrent.futures.as_completed(futs):
            try:
                name, rc = f.result()
                if rc not in (0,):
                    bad.append("%s: reiserfsck --check exit %d" % (name, rc))
            except Exception as ex_:  # noqa: BLE001
                bad.append("%s: %s" % (futs[f], ex_))
    for b in bad:
        log("PROBLEM:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

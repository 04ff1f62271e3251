#!/usr/bin/env python3
"""compare_manifest.py RFSCK IMAGE MANIFEST.jsonl - rfsck's reader against the
ground truth the Linux kernel wrote (corpus/README.md, manifest format).

Every manifest path must be listed by `rfsck ls -R --json` with the same type,
size, mode, uid, gid, mtime, link count and object id (the guest's inode
number is the objectid), symlinks with the same target bytes, and regular
files with the same content (sha256 of `rfsck cat`).  rfsck may list nothing
the manifest lacks, except /.reiserfs_priv and what is under it.
Prints one summary line; exits 1 on any disagreement.
"""
import hashlib
import json
import subprocess
import sys

FIELDS = ("type", "size", "mode", "uid", "gid", "mtime", "nlink")


def main():
    rfsck, image, manifest = sys.argv[1:4]
    truth = {}
    with open(manifest) as f:
        for line in f:
            e = json.loads(line)
            truth[bytes.fromhex(e["path_hex"])] = e
    r = subprocess.run([rfsck, "ls", "-R", "--json", image], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace"))
        raise SystemExit("rfsck ls failed with exit %d" % r.returncode)
    ours = {bytes.fromhex(e["path_hex"]): e for e in json.loads(r.stdout)["entries"]}
    bad = []
    for path, t in sorted(truth.items()):
        if path == b"/":
            continue
        e = ours.get(path)
        if e is None:
            bad.append("missing: %r" % path)
            continue
        for k in FIELDS:
            if t.get(k) != e.get(k):
                bad.append("%r: %s is %r, kernel says %r" % (path, k, e.get(k), t.get(k)))
        if t.get("ino") != e.get("objectid"):
            bad.append("%r: objectid %r, kernel inode %r" % (path, e.get("objectid"), t.get("ino")))
        if t["type"] == "symlink" and t.get("target_hex") != e.get("target_hex"):
            bad.append("%r: symlink target differs" % path)
        if t["type"] == "file":
            c = subprocess.run([rfsck, "cat", image, path], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=600)
            if c.returncode != 0:
                bad.append("%r: cat failed: %s" % (path, c.stderr.decode(errors="replace")))
            elif hashlib.sha256(c.stdout).hexdigest() != t["sha256"]:
                bad.append("%r: content differs (%d bytes read)" % (path, len(c.stdout)))
    for path in ours:
        if path not in truth and not path.startswith(b"/.reiserfs_priv"):
            bad.append("not in the manifest: %r" % path)
    for b in bad[:40]:
        print("  " + b)
    print("%s: %d manifest paths, %d listed by rfsck, %d disagreements"
          % (image.rsplit("/", 1)[-1], len(truth), len(ours), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""compare_grub.py RFSCK IMAGE - rfsck's reader against GRUB's (grub-fstest).

GRUB's ReiserFS reader is an independent implementation (grub-core/fs/reiserfs.c)
that does not replay the journal and does not list names starting with '.'.
GRUB also follows symlinks when listing (a symlink shows its target's size,
dangling ones are left out) and prints one name per line, so symlinks and names
holding a newline are left out of the comparison.  For every directory rfsck
lists, the names, types and sizes of the other entries must be the same as
GRUB's, and every regular file's content must be byte-identical.
Prints a summary line; exits 1 on any disagreement.
"""
import hashlib
import json
import os
import re
import subprocess
import sys

LINE = re.compile(rb"^(DIR|\d+)\s+(\d{14}) (.*)$")


def grub(image, *args):
    r = subprocess.run(["grub-fstest", image, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return r.stdout


def grub_ls(image, path, tolerant):
    out = {}
    for line in grub(image, "ls", "--", "-l", path + b"/" if path else b"/").split(b"\n"):
        if not line.strip():
            continue
        m = LINE.match(line)
        if not m:
            if tolerant:
                continue
            raise SystemExit("unparsed grub-fstest line: %r" % line)
        name = m.group(3)
        is_dir = m.group(1) == b"DIR"
        if is_dir:
            name = name[:-1] if name.endswith(b"/") else name
        out[name] = (is_dir, None if is_dir else int(m.group(1)))
    return out


def main():
    rfsck, image = sys.argv[1], sys.argv[2]
    r = subprocess.run([rfsck, "ls", "-R", "--json", "--no-replay", image],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace"))
        raise SystemExit("rfsck ls failed with exit %d" % r.returncode)
    entries = json.loads(r.stdout)["entries"]
    problems = 0
    # info: GRUB's probe must see ReiserFS with the same UUID (3.6 only: GRUB
    # reads 3.5's UUID bytes from the objectid map area).
    info = json.loads(subprocess.run([rfsck, "info", "--json", image], stdout=subprocess.PIPE,
                                     check=True, timeout=60).stdout)
    probe = grub(image, "ls", "(loop0)").decode(errors="replace")
    if "Filesystem type reiserfs" not in probe:
        problems += 1
        print("grub does not see ReiserFS: %r" % probe)
    if info["format"] == "3.6" and "UUID " + info["uuid"] not in probe:
        problems += 1
        print("UUID differs: rfsck %s, grub %r" % (info["uuid"], probe.strip()))
    dirs = {b"": {}}
    files = []
    for e in entries:
        path = bytes.fromhex(e["path_hex"])
        parent, _, name = path.rpartition(b"/")
        dirs.setdefault(parent, {})[name] = e
        if e["type"] == "dir":
            dirs.setdefault(path, {})
        if e["type"] == "file":
            files.append((path, e))
    hidden = lambda p: any(c.startswith(b".") for c in p.split(b"/") if c)
    for d, children in sorted(dirs.items()):
        if hidden(d):
            continue
        newline = {n for n in children if b"\n" in n}
        skip = {n for n, e in children.items() if e["type"] == "symlink"} | newline
        skip |= {n.split(b"\n")[0] for n in newline}   # what GRUB's first line shows
        ours = {n: (e["type"] == "dir", None if e["type"] == "dir" else e["size"])
                for n, e in children.items() if not n.startswith(b".") and n not in skip}
        theirs = {n: v for n, v in grub_ls(image, d, bool(newline)).items() if n not in skip}
        if ours != theirs:
            problems += 1
            print("directory %r differs:\n  rfsck %r\n  grub  %r" % (d or b"/", ours, theirs))
    compared = 0
    for path, e in files:
        if hidden(path) or b"\n" in path:
            continue
        mine = subprocess.run([rfsck, "cat", "--no-replay", image, path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if mine.returncode != 0:
            problems += 1
            print("rfsck cat %r failed: %s" % (path, mine.stderr.decode(errors="replace")))
            continue
        theirs = grub(image, "cat", path)
        if hashlib.sha256(mine.stdout).digest() != hashlib.sha256(theirs).digest():
            problems += 1
            print("content of %r differs (rfsck %d bytes, grub %d bytes)"
                  % (path, len(mine.stdout), len(theirs)))
        compared += 1
    print("%s: %d directories, %d files compared, %d disagreements"
          % (os.path.basename(image), len(dirs), compared, problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

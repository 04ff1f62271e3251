#!/usr/bin/env python3
"""craft_hostile.py IN.img OUT.img EDIT... - makes a hostile ReiserFS image
from a kernel-written one by editing bytes in place, for the salvage safety
tests (tests/integration/salvage_hostile.sh).

Only bytes inside existing items change; nothing is recomputed, so every
directory item stays structurally valid (entry heads, locations, offsets
untouched).  A renamed entry no longer matches its hash; rfsck's lookup falls
back to a scan, and salvage iterates directories without lookups anyway.
The tree is walked from the superblock's root block; only leaves reachable
from it are edited (the corpus images are cleanly unmounted, so the journal
holds nothing that would be replayed over the edits).

EDITs (PATH is an image path; NAME and TARGET take "hex:..." for any bytes):
  --rename PATH NAME         replace the entry's name bytes (NAME no longer
                             than the entry's slot; padded with NULs)
  --point PATH TO_PATH       make the entry refer to TO_PATH's object key
                             (a cycle when TO_PATH is an ancestor)
  --point-key PATH DIRID OBJECTID   refer to an arbitrary key
  --symlink-target PATH TARGET      overwrite a symlink's body (TARGET no
                             longer than its direct item) and set its size
  --size PATH N              set the size field of PATH's stat data
Edits apply in order; paths are resolved in the image as already edited.
"""
import struct
import sys

SB_OFFSET = 65536
TYPE_STAT, TYPE_INDIRECT, TYPE_DIRECT, TYPE_DIRENTRY = 0, 1, 2, 3
V1_TYPES = {0: TYPE_STAT, 0xFFFFFFFE: TYPE_INDIRECT, 0xFFFFFFFF: TYPE_DIRECT, 500: TYPE_DIRENTRY}


class Image:
    def __init__(self, data):
        self.d = data
        self.bs = struct.unpack_from("<H", data, SB_OFFSET + 44)[0]
        self.root = struct.unpack_from("<I", data, SB_OFFSET + 8)[0]
        if data[SB_OFFSET + 52:SB_OFFSET + 60] not in (b"ReIsErFs", b"ReIsEr2F", b"ReIsEr3F"):
            raise SystemExit("no ReiserFS superblock at 64 KiB")
        self.leaves = []
        self._walk(self.root, 0)

    def _walk(self, blk, depth):
        if depth > 8:
            raise SystemExit("tree deeper than 8 levels")
        off = blk * self.bs
        level, nr = struct.unpack_from("<HH", self.d, off)
        if level == 1:
            self.leaves.append(blk)
            return
        for i in range(nr + 1):
            child = struct.unpack_from("<I", self.d, off + 24 + 16 * nr + 8 * i)[0]
            self._walk(child, depth + 1)

    def items(self):
        """(leaf offset, item head offset, dirid, objectid, offset, type, count, len, body offset)"""
        for blk in self.leaves:
            off = blk * self.bs
            nr = struct.unpack_from("<H", self.d, off + 2)[0]
            for i in range(nr):
                ih = off + 24 + 24 * i
                dirid, oid = struct.unpack_from("<II", self.d, ih)
                cnt, ln, loc, ver = struct.unpack_from("<HHHH", self.d, ih + 16)
                if ver & 0xFFF == 0:
                    koff, uniq = struct.unpack_from("<II", self.d, ih + 8)
                    ktype = V1_TYPES.get(uniq, -1)
                else:
                    v = struct.unpack_from("<Q", self.d, ih + 8)[0]
                    koff, ktype = v & ((1 << 60) - 1), v >> 60
                yield (off, ih, dirid, oid, koff, ktype, cnt, ln, off + loc)

    def entries(self, dirid, oid):
        """(entry head offset, name slot offset, slot length, name, dirid, objectid)"""
        for (_, _, d, o, _, t, cnt, ln, body) in self.items():
            if (d, o, t) != (dirid, oid, TYPE_DIRENTRY):
                continue
            prev = ln
            for i in range(cnt):
                h = body + 16 * i
                e_dir, e_oid, loc = struct.unpack_from("<IIH", self.d, h + 4)
                slot = self.d[body + loc:body + prev]
                yield (h, body + loc, prev - loc, bytes(slot).rstrip(b"\0"), e_dir, e_oid)
                prev = loc

    def resolve(self, path):
        """(key, entry) of path; entry is None for the root."""
        key, entry = (1, 2), None
        for comp in [c for c in path.split(b"/") if c]:
            for e in self.entries(*key):
                if e[3] == comp:
                    key, entry = (e[4], e[5]), e
                    break
            else:
                raise SystemExit("%r: no entry %r" % (path, comp))
        return key, entry

    def item_of(self, key, ktype):
        for it in self.items():
            if (it[2], it[3], it[5]) == (key[0], key[1], ktype):
                return it
        raise SystemExit("object %r has no item of type %d" % (key, ktype))


def arg_bytes(s):
    return bytes.fromhex(s[4:]) if s.startswith("hex:") else s.encode("utf-8", "surrogateescape")


def set_size(img, key, n):
    st = img.item_of(key, TYPE_STAT)
    if st[7] == 44:
        struct.pack_into("<Q", img.d, st[8] + 8, n)
    else:
        struct.pack_into("<I", img.d, st[8] + 8, n)


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    with open(argv[1], "rb") as f:
        data = bytearray(f.read())
    img = Image(data)
    a = argv[3:]
    i = 0
    while i < len(a):
        op = a[i]
        if op == "--rename":
            _, e = img.resolve(arg_bytes(a[i + 1]))
            new = arg_bytes(a[i + 2])
            if e is None or len(new) > e[2] or not new.rstrip(b"\0"):
                raise SystemExit("--rename %s: %d bytes do not fit the %s-byte slot" % (a[i + 1], len(new), e and e[2]))
            data[e[1]:e[1] + e[2]] = new + b"\0" * (e[2] - len(new))
            i += 3
        elif op in ("--point", "--point-key"):
            _, e = img.resolve(arg_bytes(a[i + 1]))
            if op == "--point":
                to, _ = img.resolve(arg_bytes(a[i + 2]))
                i += 3
            else:
                to = (int(a[i + 2]), int(a[i + 3]))
                i += 4
            if e is None:
                raise SystemExit("cannot repoint the root")
            struct.pack_into("<II", data, e[0] + 4, to[0], to[1])
        elif op == "--symlink-target":
            key, _ = img.resolve(arg_bytes(a[i + 1]))
            t = arg_bytes(a[i + 2])
            it = img.item_of(key, TYPE_DIRECT)
            if len(t) > it[7]:
                raise SystemExit("target of %d bytes longer than the %d-byte item" % (len(t), it[7]))
            data[it[8]:it[8] + len(t)] = t
            set_size(img, key, len(t))
            i += 3
        elif op == "--size":
            key, _ = img.resolve(arg_bytes(a[i + 1]))
            set_size(img, key, int(a[i + 2], 0))
            i += 3
        else:
            raise SystemExit("unknown edit %r" % op)
    with open(argv[2], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv)

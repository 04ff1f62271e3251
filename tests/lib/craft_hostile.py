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
  --key-offset PATH TYPE N   set the key offset of PATH's first item of TYPE
                             (indirect or direct) to N (60 bits in a 3.6 key)
Structure edits (for the hang tests, tests/integration/hostile_modes.sh):
  --child NODE INDEX TARGET  set child INDEX of internal node NODE to TARGET;
                             NODE and TARGET are "root", "root/I/J" (the
                             root's child I, its child J) or a block number
                             (a pointer cycle when TARGET is an ancestor)
  --all-children NODE TARGET every child pointer of NODE becomes TARGET
  --dag LEVELS               LEVELS new internal nodes (levels 2..LEVELS+1,
                             at most 4) in free blocks, each with as many
                             children as a node holds, all pointing at the
                             node below; the lowest points at the root's first
                             leaf; the top one becomes the root (tree height
                             LEVELS+2): (max children)^LEVELS paths to one leaf
  --sb-field FIELD VALUE     set a superblock field (block_count, free_blocks,
                             root, tree_height, bmap_nr, oid_maxsize,
                             oid_cursize, blocksize, j_size, j_trans_max)
  --oid-map-garbage SEED     fill the objectid map with pseudo-random words
                             and set its current size to the maximum
Edits apply in order; paths are resolved in the image as already edited
(the tree is walked once, before the first edit).
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

    def node_block(self, spec):
        """Block number of "root", "root/I/J..." (child indexes) or a number."""
        if spec.isdigit():
            return int(spec)
        parts = spec.split("/")
        if parts[0] != "root":
            raise SystemExit("node %r: 'root', 'root/I/..' or a block number" % spec)
        blk = self.root
        for p in parts[1:]:
            nr = self.node_nr(blk)
            if struct.unpack_from("<H", self.d, blk * self.bs)[0] < 2 or int(p) > nr:
                raise SystemExit("node %r: block %d has no child %s" % (spec, blk, p))
            blk = struct.unpack_from("<I", self.d, blk * self.bs + 24 + 16 * nr + 8 * int(p))[0]
        return blk

    def node_nr(self, blk):
        return struct.unpack_from("<H", self.d, blk * self.bs + 2)[0]

    def set_child(self, node, idx, target):
        off = node * self.bs
        level, nr = struct.unpack_from("<HH", self.d, off)
        if level < 2 or idx > nr:
            raise SystemExit("block %d is not an internal node with a child %d" % (node, idx))
        struct.pack_into("<I", self.d, off + 24 + 16 * nr + 8 * idx, target)

    def free_blocks(self, n):
        """n blocks marked free in the bitmap (one bitmap block assumed per
        bs*8 blocks, right after the superblock), from the end; marks them used."""
        count = struct.unpack_from("<I", self.d, SB_OFFSET)[0]
        per = self.bs * 8
        sb_block = SB_OFFSET // self.bs
        out = []
        for b in range(min(count, len(self.d) // self.bs) - 1, sb_block + 1, -1):
            bm = (sb_block + 1) * self.bs if b < per else (b // per) * per * self.bs
            byte = bm + (b % per) // 8
            if not self.d[byte] & (1 << (b % 8)):
                self.d[byte] |= 1 << (b % 8)
                out.append(b)
                if len(out) == n:
                    return out
        raise SystemExit("not enough free blocks for the edit")

    def make_dag(self, levels):
        if not 1 <= levels <= 4:
            raise SystemExit("--dag takes 1..4 levels (the tree is at most 5 high)")
        below = self.leaves[0]
        nr = (self.bs - 24 - 8) // 24          # keys of a full internal node
        for level, blk in zip(range(2, levels + 2), self.free_blocks(levels)):
            off = blk * self.bs
            self.d[off:off + self.bs] = bytes(self.bs)
            struct.pack_into("<HHH", self.d, off, level, nr, self.bs - 24 - 16 * nr - 8 * (nr + 1))
            for k in range(nr):                 # strictly increasing keys
                struct.pack_into("<IIII", self.d, off + 24 + 16 * k, 2, 1000 + k, 0, 0)
            for j in range(nr + 1):
                struct.pack_into("<IH", self.d, off + 24 + 16 * nr + 8 * j, below, self.bs - 24)
            below = blk
        struct.pack_into("<I", self.d, SB_OFFSET + 8, below)
        struct.pack_into("<H", self.d, SB_OFFSET + 68, levels + 2)


SB_FIELDS = {
    "block_count": (0, "<I"), "free_blocks": (4, "<I"), "root": (8, "<I"),
    "j_size": (20, "<I"), "j_trans_max": (24, "<I"), "blocksize": (44, "<H"),
    "oid_maxsize": (46, "<H"), "oid_cursize": (48, "<H"), "tree_height": (68, "<H"),
    "bmap_nr": (70, "<H"),
}


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
        elif op == "--key-offset":
            key, _ = img.resolve(arg_bytes(a[i + 1]))
            ktype = {"indirect": TYPE_INDIRECT, "direct": TYPE_DIRECT}[a[i + 2]]
            it = img.item_of(key, ktype)
            n = int(a[i + 3], 0)
            ver = struct.unpack_from("<H", data, it[1] + 22)[0]
            if ver & 0xFFF == 0:
                struct.pack_into("<I", data, it[1] + 8, n & 0xFFFFFFFF)
            else:
                struct.pack_into("<Q", data, it[1] + 8, (n & ((1 << 60) - 1)) | (ktype << 60))
            i += 4
        elif op == "--size":
            key, _ = img.resolve(arg_bytes(a[i + 1]))
            set_size(img, key, int(a[i + 2], 0))
            i += 3
        elif op == "--child":
            node, target = img.node_block(a[i + 1]), img.node_block(a[i + 3])
            img.set_child(node, int(a[i + 2]), target)
            i += 4
        elif op == "--all-children":
            node, target = img.node_block(a[i + 1]), img.node_block(a[i + 2])
            for j in range(img.node_nr(node) + 1):
                img.set_child(node, j, target)
            i += 3
        elif op == "--dag":
            img.make_dag(int(a[i + 1]))
            i += 2
        elif op == "--sb-field":
            name = a[i + 1]
            if name not in SB_FIELDS:
                raise SystemExit("--sb-field: unknown field %r (%s)" % (name, ", ".join(SB_FIELDS)))
            off, fmt = SB_FIELDS[name]
            struct.pack_into(fmt, data, SB_OFFSET + off, int(a[i + 2], 0))
            i += 3
        elif op == "--oid-map-garbage":
            seed = int(a[i + 1], 0)
            maxsize = struct.unpack_from("<H", data, SB_OFFSET + 46)[0]
            x = seed or 1
            for k in range(maxsize):
                x = (x * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
                struct.pack_into("<I", data, SB_OFFSET + 204 + 4 * k, x >> 32)
            struct.pack_into("<H", data, SB_OFFSET + 48, maxsize)
            i += 2
        else:
            raise SystemExit("unknown edit %r" % op)
    with open(argv[2], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv)

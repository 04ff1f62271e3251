#!/usr/bin/env python3
"""craft_stale.py IN.img OUT.img - writes a hostile stale leaf into a free
block of a kernel-written 3.6 image (4 KiB blocks, one bitmap block), for
tests/integration/salvage_deleted.sh.  The bitmap is left alone: the block
stays free, so only `salvage --deleted` looks at it.  Prints a JSON object
with the blocks used and what the leaf holds.

The leaf (valid: sorted keys, bodies packed from the end, directory items
with increasing offsets; names need not match their hashes) holds
  - a stale item of the root directory (1, 2) with the names
      "../../escape" -> (2, 950)   a file of 2^40 bytes whose indirect item
                                   points at a block in use (the root node),
                                   a bitmap block, a block beyond the end, a
                                   free block holding DATA, and a hole
      "a/b"          -> (2, 951)   a file "hello"
      "link"         -> (2, 952)   a symlink to /etc/passwd
      "link"         -> (2, 955)   a directory of the same name, holding
      (in 955)  "inner" -> (955, 956)  a file "inside\\n"
  - two deleted directories naming each other, (2, 953) holding "b" ->
    (953, 954) and (953, 954) holding "a" -> (2, 953), named by nothing else.
The leaf and the DATA block are free blocks that no leaf anywhere points
into and that hold no leaf (the image's own stale leaves stay as they are).
"""
import json
import struct
import sys

BS = 4096
SB = 65536
DATA = b"stale data that nothing uses now\n".ljust(BS, b"=")


def used_pointers(img):
    """Every block any leaf-looking block (anywhere) points to."""
    ptrs = set()
    for b in range(len(img) // BS):
        blk = img[b * BS:(b + 1) * BS]
        level, nr = struct.unpack_from("<HH", blk, 0)
        if level != 1 or not 1 <= nr <= 169:
            continue
        for i in range(nr):
            o = 24 + 24 * i
            ln, loc, ver = struct.unpack_from("<HHH", blk, o + 18)
            if ver & 0xFFF == 1:
                t = struct.unpack_from("<Q", blk, o + 8)[0] >> 60
            else:
                t = {0xFFFFFFFE: 1}.get(struct.unpack_from("<I", blk, o + 12)[0], 0)
            if t == 1 and loc + ln <= BS:
                ptrs.update(struct.unpack_from("<%dI" % (ln // 4), blk, loc))
    return ptrs


def key(d, o, off, t):
    return struct.pack("<IIQ", d, o, off | (t << 60))


def sd(mode, size, nlink=1):
    return struct.pack("<HHIQIIIIIII", mode, 0, nlink, size, 0, 0, 1700000000, 1700000000,
                       1700000000, 8, 0)


def direntries(entries):
    """entries: (offset, dir_id, objectid, name) in increasing offset order."""
    n = len(entries)
    heads, names = b"", b""
    total = 16 * n + sum((len(e[3]) + 7) & ~7 for e in entries)
    loc = total
    for off, d, o, name in entries:
        slot = (len(name) + 7) & ~7
        loc -= slot
        heads += struct.pack("<IIIHH", off, d, o, loc, 4)
        names = name.ljust(slot, b"\0") + names
    return heads + names, n


def leaf(items):
    """items: (key bytes, count, body) in key order."""
    blk = bytearray(BS)
    loc = BS
    for i, (k, count, body) in enumerate(items):
        loc -= len(body)
        blk[loc:loc + len(body)] = body
        struct.pack_into("<16sHHHH", blk, 24 + 24 * i, k, count, len(body), loc, 1)
    free = loc - 24 - 24 * len(items)
    struct.pack_into("<HHH", blk, 0, 1, len(items), free)
    return bytes(blk)


def main(src, dst):
    img = bytearray(open(src, "rb").read())
    assert struct.unpack_from("<H", img, SB + 44)[0] == BS, "4 KiB blocks only"
    assert struct.unpack_from("<H", img, SB + 70)[0] == 1, "one bitmap block only"
    root = struct.unpack_from("<I", img, SB + 8)[0]
    nblocks = struct.unpack_from("<I", img, SB + 0)[0]
    jfirst, jsize = struct.unpack_from("<I", img, SB + 12)[0], struct.unpack_from("<I", img, SB + 20)[0]
    bmp = (SB // BS + 1) * BS
    ptrs = used_pointers(img)
    # free, pointed to by nothing, and no leaf already (stale leaves stay)
    free = [b for b in range(jfirst + jsize + 1, nblocks)
            if not img[bmp + b // 8] >> (b % 8) & 1 and b not in ptrs
            and struct.unpack_from("<H", img, b * BS)[0] != 1]
    leaf_blk, data_blk = free[0], free[1]
    img[data_blk * BS:(data_blk + 1) * BS] = DATA
    root_dir, nroot = direntries([(1, 1, 2, b"."), (2, 0, 1, b".."),
                                  (1000, 2, 950, b"../../escape"), (2000, 2, 951, b"a/b"),
                                  (3000, 2, 952, b"link"), (3001, 2, 955, b"link")])
    a_dir, na = direntries([(1, 2, 953, b"."), (2, 953, 954, b".."), (5000, 953, 954, b"b")])
    b_dir, nb = direntries([(1, 953, 954, b"."), (2, 2, 953, b".."), (6000, 2, 953, b"a")])
    l_dir, nl = direntries([(1, 2, 955, b"."), (2, 1, 2, b".."), (7000, 955, 956, b"inner")])
    ind = struct.pack("<5I", root, SB // BS + 1, 1 << 30, data_blk, 0)
    items = [
        (key(1, 2, 1, 3), nroot, root_dir),
        (key(2, 950, 0, 0), 0xFFFF, sd(0o100644, 1 << 40)),
        (key(2, 950, 1, 1), 0, ind),
        (key(2, 951, 0, 0), 0xFFFF, sd(0o100600, 5)),
        (key(2, 951, 1, 2), 0, b"hello\0\0\0"),
        (key(2, 952, 0, 0), 0xFFFF, sd(0o120777, 11)),
        (key(2, 952, 1, 2), 0, b"/etc/passwd\0\0\0\0\0"),
        (key(2, 953, 0, 0), 0xFFFF, sd(0o40755, len(a_dir), 3)),
        (key(2, 953, 1, 3), na, a_dir),
        (key(2, 955, 0, 0), 0xFFFF, sd(0o40700, len(l_dir), 2)),
        (key(2, 955, 1, 3), nl, l_dir),
        (key(953, 954, 0, 0), 0xFFFF, sd(0o40755, len(b_dir), 2)),
        (key(953, 954, 1, 3), nb, b_dir),
        (key(955, 956, 0, 0), 0xFFFF, sd(0o100644, 7)),
        (key(955, 956, 1, 2), 0, b"inside\n\0"),
    ]
    img[leaf_blk * BS:(leaf_blk + 1) * BS] = leaf(items)
    open(dst, "wb").write(img)
    print(json.dumps({"leaf": leaf_blk, "data": data_blk, "in_use": root,
                      "bitmap": SB // BS + 1, "beyond": 1 << 30,
                      "data_sha256": __import__("hashlib").sha256(DATA).hexdigest()}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/env python3
"""fixable_damage.py RECIPE IMAGE - damages a copy of an image in one field that
`rfsck fix` (and reiserfsck --fix-fixable) can repair without a rebuild, and
prints the problem code rfsck must report.  Deterministic: the first leaf of
the tree (the one holding the root directory) is the target.

Recipes and the code each must produce:
  leaf-free-space   LEAF_BAD_FREE_SPACE     block head free space of the first leaf
  dc-size           INTERNAL_DC_SIZE        root node's recorded size of child 0
  item-flags        ITEM_FLAGS_SET          fsck flag bits in item 0's head
  entry-state       DIR_ENTRY_STATE         state of entry 2 of the root directory
  tree-height       SB_TREE_HEIGHT_WRONG    superblock tree height + 1
  free-count        BITMAP_FREE_COUNT       superblock free block count - 7
  oid-map           STAT_OBJECTID_FREE      objectid map reset to [1, 3)
  root-nlink        NLINK_WRONG             root directory link count + 5
  root-size         DIR_SIZE_WRONG          root directory size + 16
  root-blocks       BLOCKS_WRONG            root directory block count + 8
  dotdot            DOTDOT_WRONG            ".." of the root points to [1 2]
  dangling-entry    ENTRY_POINTS_NOWHERE    one name of a hard-linked file points to
                                            objectid 0x7ffffff0 (the file keeps its
                                            other names: NLINK_WRONG follows)
  dir-second-name   DIR_LOOP                the same name points to the root
                                            directory: a second name of a directory
"""
import struct
import sys

SB = 65536


def u16(b, o): return struct.unpack_from("<H", b, o)[0]
def u32(b, o): return struct.unpack_from("<I", b, o)[0]


def leaves(rd, blk):
    node = rd(blk)
    if u16(node, 0) == 1:
        yield blk, node
        return
    nr = u16(node, 2)
    for i in range(nr + 1):
        yield from leaves(rd, u32(node, 24 + 16 * nr + 8 * i))


def hardlink_name(rd, root):
    """(block, leaf bytes, entry head offset) of the last name, in key order,
    of a regular file with two or more links."""
    nlink, names = {}, []
    for blk, node in leaves(rd, root):
        for i in range(u16(node, 2)):
            ih = 24 + 24 * i
            d, o = u32(node, ih), u32(node, ih + 4)
            ln, loc = u16(node, ih + 18), u16(node, ih + 20)
            uniq = u32(node, ih + 12)
            v2type = u32(node, ih + 12) >> 28
            is_sd = uniq == 0 and u32(node, ih + 8) == 0
            is_dir = uniq == 500 or (v2type == 3 and uniq != 500)
            if is_sd and ln in (32, 44):
                mode = u16(node, loc)
                n = u32(node, loc + 4) if ln == 44 else u16(node, loc + 2)
                if mode & 0o170000 == 0o100000:
                    nlink[(d, o)] = n
            elif is_dir:
                for e in range(u16(node, ih + 16)):
                    at = loc + 16 * e
                    if u32(node, at) > 2:
                        names.append((blk, at, (u32(node, at + 4), u32(node, at + 8))))
    for blk, at, key in reversed(names):
        if nlink.get(key, 0) >= 2:
            return blk, rd(blk), at
    raise SystemExit("no hard-linked file in this image")


def main():
    recipe, path = sys.argv[1], sys.argv[2]
    with open(path, "r+b") as f:
        f.seek(SB)
        sb = bytearray(f.read(1024))
        bs = u16(sb, 44)
        root = u32(sb, 8)

        def rd(blk):
            f.seek(blk * bs)
            return bytearray(f.read(bs))

        def wr(blk, data):
            f.seek(blk * bs)
            f.write(data)

        def wsb():
            f.seek(SB)
            f.write(sb)

        node, blk, parent = rd(root), root, None
        while u16(node, 0) > 1:
            parent = (blk, node)
            nr = u16(node, 2)
            blk = u32(node, 24 + 16 * nr)
            node = rd(blk)
        # item 0 = root stat data (v2), item 1 = root directory entries
        sd_loc = u16(node, 24 + 20)
        v2 = u16(node, 24 + 18) == 44          # stat data v2 (3.6) or v1 (3.5)
        dir_loc = u16(node, 48 + 20)
        if recipe == "leaf-free-space":
            struct.pack_into("<H", node, 4, u16(node, 4) + 8); wr(blk, node); code = "LEAF_BAD_FREE_SPACE"
        elif recipe == "dc-size":
            pblk, pn = parent
            nr = u16(pn, 2)
            struct.pack_into("<H", pn, 24 + 16 * nr + 4, u16(pn, 24 + 16 * nr + 4) - 24)
            wr(pblk, pn); code = "INTERNAL_DC_SIZE"
        elif recipe == "item-flags":
            struct.pack_into("<H", node, 24 + 22, u16(node, 24 + 22) | 0x2000); wr(blk, node); code = "ITEM_FLAGS_SET"
        elif recipe == "entry-state":
            struct.pack_into("<H", node, dir_loc + 2 * 16 + 14, 0); wr(blk, node); code = "DIR_ENTRY_STATE"
        elif recipe == "tree-height":
            struct.pack_into("<H", sb, 68, u16(sb, 68) + 1); wsb(); code = "SB_TREE_HEIGHT_WRONG"
        elif recipe == "free-count":
            struct.pack_into("<I", sb, 4, u32(sb, 4) - 7); wsb(); code = "BITMAP_FREE_COUNT"
        elif recipe == "oid-map":
            off = 204 if u16(sb, 72) == 2 or sb[52:61] == b"ReIsEr2Fs" else 76
            struct.pack_into("<II", sb, off, 1, 3); struct.pack_into("<H", sb, 48, 2); wsb(); code = "STAT_OBJECTID_FREE"
        elif recipe == "root-nlink":
            if v2:
                struct.pack_into("<I", node, sd_loc + 4, u32(node, sd_loc + 4) + 5)
            else:
                struct.pack_into("<H", node, sd_loc + 2, u16(node, sd_loc + 2) + 5)
            wr(blk, node); code = "NLINK_WRONG"
        elif recipe == "root-size":
            if v2:
                struct.pack_into("<Q", node, sd_loc + 8, struct.unpack_from("<Q", node, sd_loc + 8)[0] + 16)
            else:
                struct.pack_into("<I", node, sd_loc + 8, u32(node, sd_loc + 8) + 16)
            wr(blk, node); code = "DIR_SIZE_WRONG"
        elif recipe == "root-blocks":
            o = sd_loc + (36 if v2 else 24)
            struct.pack_into("<I", node, o, u32(node, o) + 8); wr(blk, node); code = "BLOCKS_WRONG"
        elif recipe in ("dangling-entry", "dir-second-name"):
            blk2, node2, at = hardlink_name(rd, root)
            if recipe == "dangling-entry":
                struct.pack_into("<I", node2, at + 8, 0x7FFFFFF0); code = "ENTRY_POINTS_NOWHERE"
            else:
                struct.pack_into("<II", node2, at + 4, 1, 2); code = "DIR_LOOP"
            wr(blk2, node2)
        elif recipe == "dotdot":
            struct.pack_into("<II", node, dir_loc + 16 + 4, 1, 2); wr(blk, node); code = "DOTDOT_WRONG"
        else:
            raise SystemExit("unknown recipe " + recipe)
    print(code)


if __name__ == "__main__":
    main()

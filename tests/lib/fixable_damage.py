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
  version           SB_BAD_VERSION          superblock version 20 (ReIsEr3Fs magic
                                            only: the format then comes from the
                                            layout, and fix writes 0 or 2 back)
  hash-code         SB_BAD_HASH_CODE        superblock hash code 7 (fix decides the
                                            hash from the names: the clean code back)
  trans-max         SB_JOURNAL_BAD_TRANS_MAX superblock journal transaction limit and
                                            batch 0 (fix takes the journal header's
                                            limit: the clean fields back)
  trans-max-both    SB_JOURNAL_BAD_TRANS_MAX the same in the superblock and in the
                                            journal header (no valid copy: fix
                                            computes the kernel's default, which
                                            for these journals is the clean 256)
  root-nlink        NLINK_WRONG             root directory link count + 5
  root-size         DIR_SIZE_WRONG          root directory size + 16
  root-blocks       BLOCKS_WRONG            root directory block count + 8
  dotdot            DOTDOT_WRONG            ".." of the root points to [1 2]
  dangling-entry    ENTRY_POINTS_NOWHERE    one name of a hard-linked file points to
                                            objectid 0x7ffffff0 (the file keeps its
                                            other names: NLINK_WRONG follows)
  dir-second-name   DIR_LOOP                the same name points to the root
                                            directory: a second name of a directory
  dangling-leaf-first ENTRY_POINTS_NOWHERE  the first entry of the first leaf
                                            that starts with a directory item
                                            other than "." and ".." points to
                                            objectid 0x7ffffff0: removing it
                                            changes the leaf's first key (its
                                            object loses its name: ORPHAN_OBJECT)

Recipes that take an image PATH (resolved with craft_hostile.py's reader; the
leaf that changes is rebuilt with its free space and its parent's child size
right, so that the named problem is the only one):
  orphan PATH                ORPHAN_OBJECT     PATH's entry is removed from its
                             directory (whose size, block count and, for a
                             directory, link count follow): the object and
                             everything under it are reachable no more
  safelink-unlink PATH       SAFELINK_PENDING  as orphan, link count 0, and an
                             unlink safe link for it: an open file unlinked
                             when the power went (the kernel deletes it on mount)
  safelink-truncate PATH N   SAFELINK_PENDING  stat data size set to N and a
                             truncate safe link: a truncate to N in flight (the
                             items past N are still there; the kernel cuts them)
  safelink-both PATH N       SAFELINK_PENDING  both: a truncate to N and then
                             an unlink (the kernel takes the unlink first and
                             then finds no object for the truncate link)
  safelink-bad               SAFELINK_BAD      an unlink safe link naming an
                             object that does not exist
The entry of PATH must not be the first of its directory item (that would
change the item's key); safe links are added at the end of the last leaf.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from craft_hostile import Image, TYPE_DIRENTRY, TYPE_STAT  # noqa: E402

SB = 65536
SAFELINK_DIRID = 0xFFFFFFFF


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


def leaf_items(d, off):
    """[head (bytearray, 24 bytes), body (bytes)] of the leaf at byte offset off."""
    out = []
    for i in range(u16(d, off + 2)):
        ih = off + 24 + 24 * i
        ln, loc = u16(d, ih + 18), u16(d, ih + 20)
        out.append([bytearray(d[ih:ih + 24]), bytes(d[off + loc:off + loc + ln])])
    return out


def write_leaf(d, off, bs, items):
    """Packs items into the leaf at off (bodies from the end, in item order)."""
    blk = bytearray(bs)
    end = bs
    for i, (head, body) in enumerate(items):
        end -= len(body)
        h = bytearray(head)
        struct.pack_into("<HH", h, 18, len(body), end)
        blk[24 + 24 * i:48 + 24 * i] = h
        blk[end:end + len(body)] = body
    free = end - 24 - 24 * len(items)
    if free < 0:
        raise SystemExit("the items do not fit the leaf")
    struct.pack_into("<HHH", blk, 0, 1, len(items), free)
    d[off:off + bs] = blk
    return bs - 24 - free


def set_parent_size(img, leaf_blk, used):
    """The disk-child size of leaf_blk in its parent."""
    def walk(blk):
        off = blk * img.bs
        level, nr = struct.unpack_from("<HH", img.d, off)
        if level == 1:
            return False
        for i in range(nr + 1):
            dc = off + 24 + 16 * nr + 8 * i
            child = u32(img.d, dc)
            if child == leaf_blk:
                struct.pack_into("<H", img.d, dc + 4, used)
                return True
            if walk(child):
                return True
        return False
    if leaf_blk != img.root and not walk(img.root):
        raise SystemExit("leaf %d has no parent" % leaf_blk)


def sd_field(img, key, v2_off, v1_off, v2_fmt, v1_fmt, fn):
    """Applies fn to a stat data field of key (v2 or v1 layout)."""
    st = img.item_of(key, TYPE_STAT)
    off, fmt = (v2_off, v2_fmt) if st[7] == 44 else (v1_off, v1_fmt)
    v = struct.unpack_from(fmt, img.d, st[8] + off)[0]
    struct.pack_into(fmt, img.d, st[8] + off, fn(v))


def remove_entry(img, path):
    """Takes PATH's entry out of its directory item; returns (key, is_dir)."""
    key, e = img.resolve(path)
    if e is None:
        raise SystemExit("the root has no entry to remove")
    parent, _ = img.resolve(path.rsplit(b"/", 1)[0] or b"/")
    for (loff, ih, d, o, _, t, cnt, ln, body) in img.items():
        if (d, o, t) != (parent[0], parent[1], TYPE_DIRENTRY) or not body <= e[0] < body + ln:
            continue
        idx, pos = (ih - loff - 24) // 24, (e[0] - body) // 16
        if pos == 0:
            raise SystemExit("%r is the first entry of its item" % path)
        ents, prev = [], ln
        for i in range(cnt):
            h = body + 16 * i
            loc = u16(img.d, h + 12)
            ents.append((bytes(img.d[h:h + 12]), u16(img.d, h + 14), bytes(img.d[body + loc:body + prev])))
            prev = loc
        del ents[pos]
        nb = bytearray(16 * len(ents) + sum(len(x[2]) for x in ents))
        end = len(nb)
        for i, (h12, state, slot) in enumerate(ents):
            end -= len(slot)
            nb[16 * i:16 * i + 12] = h12
            struct.pack_into("<HH", nb, 16 * i + 12, end, state)
            nb[end:end + len(slot)] = slot
        items = leaf_items(img.d, loff)
        struct.pack_into("<H", items[idx][0], 16, len(ents))
        items[idx][1] = bytes(nb)
        used = write_leaf(img.d, loff, img.bs, items)
        set_parent_size(img, loff // img.bs, used)
        is_dir = img.item_of(key, TYPE_STAT)
        mode = u16(img.d, is_dir[8])
        is_dir = mode & 0o170000 == 0o040000
        sd_field(img, parent, 8, 8, "<Q", "<I", lambda v: v - 16 - e[2])
        st = img.item_of(parent, TYPE_STAT)
        size = struct.unpack_from("<Q" if st[7] == 44 else "<I", img.d, st[8] + 8)[0]
        sd_field(img, parent, 36, 24, "<I", "<I", lambda v: (size + 511) // 512)
        if is_dir:
            sd_field(img, parent, 4, 2, "<I", "<H", lambda v: v - 1 if v > 2 else v)
        return key, is_dir
    raise SystemExit("%r: entry not found in an item" % path)


def add_safelink(img, objectid, dirid, truncate):
    """A safe link item at the end of the last leaf, as the kernel writes it."""
    blk = img.leaves[-1]
    off = blk * img.bs
    items = leaf_items(img.d, off)
    offset, uniq, free = (1, 0xFFFFFFFE, 0) if truncate else (img.bs + 1, 0xFFFFFFFF, 0xFFFF)
    # in key order among the links already there (3.5 keys: offset at 8)
    key = (SAFELINK_DIRID, objectid, offset)
    at = len(items)
    while at > 0 and (u32(items[at - 1][0], 0), u32(items[at - 1][0], 4),
                      u32(items[at - 1][0], 8) if u32(items[at - 1][0], 0) == SAFELINK_DIRID else 0) > key:
        at -= 1
    if at == 0 or items[at - 1][0][:12] == struct.pack("<III", *key):
        raise SystemExit("no place for this safe link in the last leaf")
    head = bytearray(24)
    struct.pack_into("<IIIIHHHH", head, 0, SAFELINK_DIRID, objectid, offset, uniq, free, 4, 0, 0)
    items.insert(at, [head, struct.pack("<I", dirid)])
    used = write_leaf(img.d, off, img.bs, items)
    set_parent_size(img, blk, used)


def main():
    recipe, path = sys.argv[1], sys.argv[2]
    if recipe in ("orphan", "safelink-unlink", "safelink-truncate", "safelink-both", "safelink-bad"):
        with open(path, "rb") as f:
            img = Image(bytearray(f.read()))
        arg = sys.argv[3].encode("utf-8", "surrogateescape") if len(sys.argv) > 3 else b""
        if recipe == "orphan":
            remove_entry(img, arg)
            code = "ORPHAN_OBJECT"
        elif recipe == "safelink-unlink":
            key, is_dir = remove_entry(img, arg)
            if is_dir:
                raise SystemExit("safelink-unlink takes a file")
            sd_field(img, key, 4, 2, "<I", "<H", lambda v: 0)
            add_safelink(img, key[1], key[0], False)
            code = "SAFELINK_PENDING"
        elif recipe == "safelink-both":
            key, is_dir = remove_entry(img, arg)
            n = int(sys.argv[4], 0)
            sd_field(img, key, 8, 8, "<Q", "<I", lambda v: n)
            sd_field(img, key, 4, 2, "<I", "<H", lambda v: 0)
            add_safelink(img, key[1], key[0], True)
            add_safelink(img, key[1], key[0], False)
            code = "SAFELINK_PENDING"
        elif recipe == "safelink-truncate":
            key, _ = img.resolve(arg)
            n = int(sys.argv[4], 0)
            sd_field(img, key, 8, 8, "<Q", "<I", lambda v: n)
            add_safelink(img, key[1], key[0], True)
            code = "SAFELINK_PENDING"
        else:
            add_safelink(img, 0x7FFFFFF0, 3, False)
            code = "SAFELINK_BAD"
        with open(path, "r+b") as f:
            f.write(img.d)
        print(code)
        return
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
        elif recipe == "version":
            if sb[52:61] != b"ReIsEr3Fs":
                raise SystemExit("version takes an image with the ReIsEr3Fs magic")
            struct.pack_into("<H", sb, 72, 20); wsb(); code = "SB_BAD_VERSION"
        elif recipe == "hash-code":
            struct.pack_into("<I", sb, 64, 7); wsb(); code = "SB_BAD_HASH_CODE"
        elif recipe in ("trans-max", "trans-max-both"):
            struct.pack_into("<I", sb, 24, 0)              # transaction limit
            struct.pack_into("<I", sb, 32, 0)              # batch
            wsb(); code = "SB_JOURNAL_BAD_TRANS_MAX"
            if recipe == "trans-max-both":
                # the header (after the log) holds the same parameters at 12
                hblk = u32(sb, 12) + u32(sb, 20)
                h = rd(hblk)
                struct.pack_into("<I", h, 12 + 12, 0)
                struct.pack_into("<I", h, 12 + 20, 0)
                wr(hblk, h)
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
        elif recipe == "dangling-leaf-first":
            for lblk, lnode in leaves(rd, root):
                ih = 24
                v1 = u16(lnode, ih + 22) & 0xFFF == 0
                if v1 and u32(lnode, ih + 12) == 500 and u32(lnode, ih + 8) > 2:
                    struct.pack_into("<I", lnode, u16(lnode, ih + 20) + 8, 0x7FFFFFF0)
                    wr(lblk, lnode)
                    break
            else:
                raise SystemExit("no leaf starts with a directory item")
            code = "ENTRY_POINTS_NOWHERE"
        elif recipe == "dotdot":
            struct.pack_into("<II", node, dir_loc + 16 + 4, 1, 2); wr(blk, node); code = "DOTDOT_WRONG"
        else:
            raise SystemExit("unknown recipe " + recipe)
    print(code)


if __name__ == "__main__":
    main()

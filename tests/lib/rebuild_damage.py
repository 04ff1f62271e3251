#!/usr/bin/env python3
"""rebuild_damage.py RECIPE IMAGE - damages an image in place so that the
object rules of `rfsck check` fire (damage that only a rebuild repairs), and
prints the problem code check must report.  Deterministic: the first matching
object in key order.

  dir-mode-file     MODE_WRONG           a regular file with body items gets a
                                         directory mode in its stat data (fixable:
                                         every item says "file")
  dir-item-direct   ITEM_TYPE_MISMATCH   a directory's first directory item (its
                                         "." and "..") gets a direct item's key
                                         type: a body item that holds names
  tail-cross        TAIL_CROSSES_BLOCK   a tail's key offset moved so that it
                                         runs past the end of its block
  split-indirect    ITEMS_MERGEABLE      an indirect item cut in two items side
                                         by side in its leaf (all else right:
                                         offsets, layout, free space, dc_size)
  split-direct      ITEMS_MERGEABLE      the same with a tail (direct item)
  swap-leaves       LEAF_KEYS_UNSORTED   two neighbouring leaves swap places in
                                         their parent, where one object's items
                                         run across both: the walk meets the
                                         object's end first, then the objects
                                         before it, then the object again
"""
import struct
import sys

SB = 65536


def u16(b, o): return struct.unpack_from("<H", b, o)[0]
def u32(b, o): return struct.unpack_from("<I", b, o)[0]


def main():
    recipe, path = sys.argv[1], sys.argv[2]
    with open(path, "r+b") as f:
        f.seek(SB)
        sb = f.read(1024)
        bs = u16(sb, 44)

        def rd(blk):
            f.seek(blk * bs)
            return bytearray(f.read(bs))

        def wr(blk, data):
            f.seek(blk * bs)
            f.write(data)

        def leaves(blk, parent=None):
            node = rd(blk)
            if u16(node, 0) == 1:
                yield blk, node, parent
                return
            nr = u16(node, 2)
            for i in range(nr + 1):
                yield from leaves(u32(node, 24 + 16 * nr + 8 * i), (blk, 24 + 16 * nr + 8 * i))

        def v2type(node, ih):
            return u32(node, ih + 12) >> 28   # v2 keys: 1 indirect, 2 direct

        if recipe == "dir-mode-file":
            for blk, node, _ in leaves(u32(sb, 8)):
                nr = u16(node, 2)
                for i in range(nr - 1):
                    ih, nx = 24 + 24 * i, 24 + 24 * (i + 1)
                    ln, loc = u16(node, ih + 18), u16(node, ih + 20)
                    same = node[ih:ih + 8] == node[nx:nx + 8]
                    if ln == 44 and same and v2type(node, nx) in (1, 2) and \
                            u16(node, loc) & 0o170000 == 0o100000:
                        struct.pack_into("<H", node, loc, 0o040755)
                        wr(blk, node)
                        print("MODE_WRONG")
                        return
        elif recipe == "dir-item-direct":
            for blk, node, _ in leaves(u32(sb, 8)):
                nr = u16(node, 2)
                for i in range(1, nr):
                    ih = 24 + 24 * i
                    # 3.5-format key (directory items use them): offset 1,
                    # uniqueness 500 = the directory's first item
                    if node[ih - 24:ih - 16] == node[ih:ih + 8] and u16(node, ih + 22) == 0 and \
                            u32(node, ih + 8) == 1 and u32(node, ih + 12) == 500 and \
                            u32(node, ih + 4) != 2:
                        struct.pack_into("<I", node, ih + 12, 0xFFFFFFFF)
                        wr(blk, node)
                        print("ITEM_TYPE_MISMATCH")
                        return
        elif recipe == "tail-cross":
            for blk, node, _ in leaves(u32(sb, 8)):
                for i in range(u16(node, 2)):
                    ih = 24 + 24 * i
                    ln = u16(node, ih + 18)
                    if v2type(node, ih) == 2 and ln >= 16:
                        off = struct.unpack_from("<Q", node, ih + 8)[0] & ((1 << 60) - 1)
                        block = (off - 1) // bs
                        new = block * bs + bs - 8 + 1   # 8 bytes left in the block
                        struct.pack_into("<Q", node, ih + 8, new | (2 << 60))
                        wr(blk, node)
                        print("TAIL_CROSSES_BLOCK")
                        return
        elif recipe in ("split-indirect", "split-direct"):
            want = 1 if recipe == "split-indirect" else 2
            for blk, node, parent in leaves(u32(sb, 8)):
                nr, free = u16(node, 2), u16(node, 4)
                if parent is None or free < 24:
                    continue
                for i in range(1, nr):
                    ih = 24 + 24 * i
                    ln, loc = u16(node, ih + 18), u16(node, ih + 20)
                    if v2type(node, ih) != want or node[ih - 24:ih - 16] != node[ih:ih + 8]:
                        continue
                    # cut point: k pointers, or k bytes of the tail (8-aligned:
                    # a 3.6 tail is padded to 8 bytes)
                    cut = 4 * (ln // 8) if want == 1 else 8 * (ln // 16)
                    if cut == 0:
                        continue
                    off = struct.unpack_from("<Q", node, ih + 8)[0] & ((1 << 60) - 1)
                    boff = off + (cut // 4) * bs if want == 1 else off + cut
                    # bodies are packed from the block's end in item order, so
                    # the second half's bytes go first in the item's region
                    body = bytes(node[loc:loc + ln])
                    node[loc:loc + ln] = body[cut:] + body[:cut]
                    first = bytearray(node[ih:ih + 24])
                    second = bytearray(first)
                    struct.pack_into("<HH", first, 18, cut, loc + ln - cut)
                    struct.pack_into("<HH", second, 18, ln - cut, loc)
                    struct.pack_into("<Q", second, 8, boff | (want << 60))
                    end = 24 + 24 * nr
                    node[ih + 24:end + 24] = node[ih:end]
                    node[ih:ih + 24] = first
                    node[ih + 24:ih + 48] = second
                    struct.pack_into("<HH", node, 2, nr + 1, free - 24)
                    wr(blk, node)
                    pblk, pdc = parent
                    pn = rd(pblk)
                    struct.pack_into("<H", pn, pdc + 4, u16(pn, pdc + 4) + 24)
                    wr(pblk, pn)
                    print("ITEMS_MERGEABLE")
                    return
        elif recipe == "swap-leaves":
            def twig(blk):
                node = rd(blk)
                level, nr = u16(node, 0), u16(node, 2)
                if level == 2:
                    yield blk, node
                elif level > 2:
                    for i in range(nr + 1):
                        yield from twig(u32(node, 24 + 16 * nr + 8 * i))
            for blk, node in twig(u32(sb, 8)):
                nr = u16(node, 2)
                for i in range(nr):
                    dc = 24 + 16 * nr + 8 * i
                    a, b = rd(u32(node, dc)), rd(u32(node, dc + 8))
                    last = 24 + 24 * (u16(a, 2) - 1)
                    if u16(a, 0) == 1 and u16(b, 0) == 1 and a[last:last + 8] == b[24:32]:
                        node[dc:dc + 16] = node[dc + 8:dc + 16] + node[dc:dc + 8]
                        wr(blk, node)
                        print("LEAF_KEYS_UNSORTED")
                        return
        raise SystemExit("no object for recipe " + recipe)


if __name__ == "__main__":
    main()

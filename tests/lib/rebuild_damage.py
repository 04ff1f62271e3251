#!/usr/bin/env python3
"""rebuild_damage.py RECIPE IMAGE - damages an image in place so that the
object rules of `rfsck check` fire (damage that only a rebuild repairs), and
prints the problem code check must report.  Deterministic: the first matching
object in key order.

  dir-mode-file     ITEM_TYPE_MISMATCH   a regular file with body items gets a
                                         directory mode in its stat data
  tail-cross        TAIL_CROSSES_BLOCK   a tail's key offset moved so that it
                                         runs past the end of its block
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

        def leaves(blk):
            node = rd(blk)
            if u16(node, 0) == 1:
                yield blk, node
                return
            nr = u16(node, 2)
            for i in range(nr + 1):
                yield from leaves(u32(node, 24 + 16 * nr + 8 * i))

        def v2type(node, ih):
            return u32(node, ih + 12) >> 28   # v2 keys: 1 indirect, 2 direct

        if recipe == "dir-mode-file":
            for blk, node in leaves(u32(sb, 8)):
                nr = u16(node, 2)
                for i in range(nr - 1):
                    ih, nx = 24 + 24 * i, 24 + 24 * (i + 1)
                    ln, loc = u16(node, ih + 18), u16(node, ih + 20)
                    same = node[ih:ih + 8] == node[nx:nx + 8]
                    if ln == 44 and same and v2type(node, nx) in (1, 2) and \
                            u16(node, loc) & 0o170000 == 0o100000:
                        struct.pack_into("<H", node, loc, 0o040755)
                        wr(blk, node)
                        print("ITEM_TYPE_MISMATCH")
                        return
        elif recipe == "tail-cross":
            for blk, node in leaves(u32(sb, 8)):
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
        raise SystemExit("no object for recipe " + recipe)


if __name__ == "__main__":
    main()

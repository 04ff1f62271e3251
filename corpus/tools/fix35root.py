#!/usr/bin/env python3
"""fix35root.py IMAGE - make a fresh `mkreiserfs --format 3.5` image mountable
by Linux 6.1.

Finding: 6.1's is_leaf() rejects the root leaf that mkreiserfs 3.6.27 writes
for 3.5: the root directory item holds 2 entries in 35 bytes (names "." and
".." unpadded) and the kernel demands entry_count * 24 (IH_SIZE) <= item_len
("reiserfs-5093 is_leaf: item entry count seems wrong"), so mount fails with
EUCLEAN.  This tool rewrites ONLY that item: the two names are stored
NUL-padded to 8 bytes each (item 48 bytes, as the 3.6 layout has), the root
stat-data size becomes 48 and the leaf's free space shrinks by 13.  NUL-padded
names are legal on disk (readers strip trailing NULs).  Refuses anything that
is not exactly a fresh 3.5 root leaf (2 items: v1 stat data, 35-byte dir).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402


def main():
    path = sys.argv[1]
    fs = rcorpus.Fs(path)
    bs = fs.blocksize
    blk = bytearray(fs.read_block(fs.root_block))
    level, nr, free = struct.unpack_from("<HHH", blk, 0)
    items = fs.leaf_items(bytes(blk))
    if fs.version != 0 or level != 1 or nr != 2 or items[0]["type"] != "sd" or items[1]["type"] != "dir" \
            or items[0]["len"] != 32 or items[1]["len"] != 35 or items[1]["count"] != 2:
        sys.exit("fix35root: not a fresh 3.5 root leaf; nothing done")
    sd = bytes(blk[items[0]["loc"]:items[0]["loc"] + 32])
    d = bytes(blk[items[1]["loc"]:items[1]["loc"] + 35])
    heads = [bytearray(d[0:16]), bytearray(d[16:32])]
    struct.pack_into("<H", heads[0], 12, 40)   # "."  name at 40..48
    struct.pack_into("<H", heads[1], 12, 32)   # ".." name at 32..40
    body = bytes(heads[0] + heads[1]) + b"..".ljust(8, b"\0") + b".".ljust(8, b"\0")
    sd = bytearray(sd)
    struct.pack_into("<I", sd, 8, 48)          # v1 stat data size
    loc0 = bs - 32
    loc1 = loc0 - 48
    blk[loc1:bs] = body + bytes(sd)
    # item heads: len at +18, location at +20
    struct.pack_into("<HH", blk, 24 + 16 + 2, 32, loc0)
    struct.pack_into("<HH", blk, 48 + 16 + 2, 48, loc1)
    struct.pack_into("<H", blk, 4, free - 13)
    with open(path, "r+b") as f:
        f.seek(fs.root_block * bs)
        f.write(blk)
    print("fix35root: root leaf %d rewritten (dir item 35 -> 48 bytes)" % fs.root_block)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""make_seeds.py - seed corpora for the libFuzzer harnesses in tests/fuzz/.

Usage: make_seeds.py OUT_DIR [PUBLIC_CORPUS_DIR [TEAM_CORPUS_DIR]]

Writes OUT_DIR/<target>/<sha1> files (the libFuzzer corpus layout) and
OUT_DIR/reiserfs.dict.  Nothing is written anywhere else: public images are
decompressed in memory, never on disk, and never modified.

Sources, for every target:
  * hand-made inputs built here (a valid leaf, internal node, directory item,
    stat data of both versions, a journal transaction, hash names), so the
    seeds exist even without the public corpus;
  * every image of PUBLIC_CORPUS_DIR (default ../shared/corpus-public):
    superblocks at 64 KiB and 8 KiB, the tree reached from the root (internal
    nodes, leaves), any other block whose block head looks like a node,
    directory items, stat data and names of those leaves, the journal header
    and descriptor/commit pairs found in the journal area, and the whole image
    as a sparse patch list over a zero base (see fuzz_image.c);
  * for the whole-mode harnesses (check, rebuild, salvage; modes_common.h):
    the built-in template with each option setting, hostile edits of the
    template (internal-node pointer cycles, a directory cycle, a file of 2^60
    bytes, a garbage objectid map, a block count far beyond the device, a
    broken journal, the nested image's superblock wiped), and every public
    and team image (TEAM_CORPUS_DIR, default ../../corpus/images) as a patch
    list cut at 4 MiB, plus, for a larger image, the same with its block
    count set to what fits in 4 MiB.

Input layouts (must match the harnesses):
  super:    [loc flag][dev_blocks u32][superblock bytes]
  leaf, internal: [bs selector: 512 << (b % 5)][block]
  dir:      [entry count u16][body]
  stat:     [body]
  journal:  [bs selector][descriptor block][commit block]
  hash:     [hash code][name]
  image:    [base][flags][size/512 u32] then (u32 offset, u16 len, bytes)*
  check, rebuild, salvage: the image layout, the image cut at 4 MiB
"""
import gzip
import hashlib
import lzma
import os
import re
import struct
import sys

MODE_TARGETS = ("check", "rebuild", "salvage")
TARGETS = ("super", "leaf", "internal", "dir", "stat", "journal", "hash", "image") + MODE_TARGETS
SB_OFFSETS = (65536, 8192)
MAX_IMAGE_SEED = 1 << 20          # bytes of patch list per image seed
MODES_MAX_IMAGE = 4 << 20         # modes_common.h caps images at 4 MiB
MAX_PER_IMAGE = 40                # seeds of one kind from one image
BS_SEL = {512: 0, 1024: 1, 2048: 2, 4096: 3, 8192: 4}


def le16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def le32(b, o):
    return struct.unpack_from("<I", b, o)[0]


class Seeds:
    def __init__(self, out):
        self.out = out
        self.count = {t: 0 for t in TARGETS}
        for t in TARGETS:
            os.makedirs(os.path.join(out, t), exist_ok=True)

    def add(self, target, data):
        name = hashlib.sha1(data).hexdigest()
        path = os.path.join(self.out, target, name)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
            self.count[target] += 1


# --------------------------------------------------------------------------
# Hand-made inputs.

def key_v2(dir_id, oid, offset, typ):
    return struct.pack("<IIQ", dir_id, oid, offset | (typ << 60))


def dir_body(entries):
    """entries: list of (offset, dir_id, objectid, name bytes), sorted."""
    heads = 16 * len(entries)
    slots = [(len(n) + 7) & ~7 for _, _, _, n in entries]
    total = heads + sum(slots)
    body = bytearray(total)
    loc = total
    for i, (off, d, o, name) in enumerate(entries):
        loc -= slots[i]
        struct.pack_into("<IIIHH", body, 16 * i, off, d, o, loc, 4)
        body[loc:loc + len(name)] = name
    return bytes(body)


def stat_v2(mode, nlink, size):
    return struct.pack("<HHIQIIIIIII", mode, 0, nlink, size, 0, 0,
                       1700000000, 1700000000, 1700000000, 1, 0)


def stat_v1(mode, nlink, size):
    return struct.pack("<HHHHIIIIII", mode, nlink, 0, 0, size,
                       1700000000, 1700000000, 1700000000, 1, 0xFFFFFFFF)


def leaf(bs, items):
    """items: list of (key16, count, body)."""
    blk = bytearray(bs)
    struct.pack_into("<HHH", blk, 0, 1, len(items), 0)
    loc = bs
    for i, (key, count, body) in enumerate(items):
        loc -= len(body)
        ih = 24 + 24 * i
        blk[ih:ih + 16] = key
        struct.pack_into("<HHHH", blk, ih + 16, count, len(body), loc, 1)
        blk[loc:loc + len(body)] = body
    struct.pack_into("<H", blk, 4, loc - 24 - 24 * len(items))
    return bytes(blk)


def internal(bs, keys, children):
    blk = bytearray(bs)
    n = len(keys)
    struct.pack_into("<HHH", blk, 0, 2, n, bs - 24 - 16 * n - 8 * (n + 1))
    for i, k in enumerate(keys):
        blk[24 + 16 * i:40 + 16 * i] = k
    for j, c in enumerate(children):
        struct.pack_into("<IH", blk, 24 + 16 * n + 8 * j, c, 100)
    return bytes(blk)


def hand_made(seeds):
    root_dir = dir_body([(1, 1, 2, b"."), (2, 0, 1, b".."),
                         (0x1234580, 2, 3, b"file"), (0x7fffff00, 2, 4, b"dir")])
    sd = stat_v2(0o40755, 3, len(root_dir))
    for bs in (512, 4096):
        blk = leaf(bs, [(key_v2(1, 2, 0, 0), 0, sd),
                        (key_v2(1, 2, 1, 3), 4, root_dir),
                        (key_v2(2, 3, 0, 0), 0, stat_v2(0o100644, 1, 5000)),
                        (key_v2(2, 3, 1, 1), 0, struct.pack("<III", 300, 0, 301)),
                        (key_v2(2, 3, 8193, 2), 0, b"tail....")])
        seeds.add("leaf", bytes([BS_SEL[bs]]) + blk)
        seeds.add("internal", bytes([BS_SEL[bs]]) +
                  internal(bs, [key_v2(2, 3, 0, 0), key_v2(2, 4, 0, 0)], [300, 301, 302]))
    seeds.add("dir", struct.pack("<H", 4) + root_dir)
    seeds.add("stat", stat_v2(0o100644, 1, 1 << 40))
    seeds.add("stat", stat_v1(0o20644, 1, 0))
    for bs in (512, 4096):
        desc = bytearray(bs)
        struct.pack_into("<IIIII", desc, 0, 10, 2, 1, 300, 301)
        desc[bs - 12:bs - 4] = b"ReIsErLB"
        commit = bytearray(bs)
        struct.pack_into("<II", commit, 0, 10, 2)
        seeds.add("journal", bytes([BS_SEL[bs]]) + bytes(desc) + bytes(commit))
    for code in (1, 2, 3, 0, 9):
        for name in (b"", b".", b"..", b"lost+found", b"\xff\x80\x7f", b"a" * 255):
            seeds.add("hash", bytes([code]) + name)
    # fuzz_image: the built-in template, with and without replay and per hash.
    for flags in (0, 1, 2, 4, 6, 8):
        seeds.add("image", bytes([0, flags]) + b"\0\0\0\0")
    # template with its root pointer aimed at each tree block and at the journal
    for target in (164, 165, 131, 0, 199, 4000):
        seeds.add("image", bytes([0, 0]) + b"\0\0\0\0" +
                  struct.pack("<IH", 128 * 512 + 8, 4) + struct.pack("<I", target))
    # template truncated inside the tree, and a huge claimed block count
    seeds.add("image", bytes([0, 0]) + struct.pack("<I", 165))
    seeds.add("image", bytes([0, 0]) + b"\0\0\0\0" +
              struct.pack("<IH", 128 * 512, 4) + struct.pack("<I", 0xFFFFFFF0))


# --------------------------------------------------------------------------
# Whole-mode harnesses (fuzz_check.c, fuzz_rebuild.c, fuzz_salvage.c).
#
# The hostile seeds patch the built-in template of modes_common.h at offsets
# that follow from its layout (1024-byte blocks; superblock 64, journal
# 66..577 with the log copy of leaf B at 67, header 578, root 580, leaf A 581,
# leaf B 582, /f data 590..592, nested superblock 600).  If the template
# changes, update T_* below; a stale offset only makes a seed less pointed.

T_BS, T_SB, T_JFIRST, T_JHDR, T_ROOT, T_LEAF_A, T_LEAF_B, T_INNER_SB = \
    1024, 64, 66, 578, 580, 581, 582, 600
T_LOG_B = T_JFIRST + 1                     # the journal's copy of leaf B
SB = T_SB * T_BS


def rec(off, data):
    return struct.pack("<IH", off, len(data)) + data


def mode_input(flags, *records, size=0, zero=False):
    return bytes([1 if zero else 0, flags]) + struct.pack("<I", size) + b"".join(records)


MODE_FLAGS = {
    "check": (0, 1, 2, 4, 6, 8, 0x10, 0x19),
    "rebuild": (0, 1, 2, 8, 0x10, 0x18),
    "salvage": (0, 1, 2, 8),
}


def leaf_b_rec(off_in_leaf, data):
    """The same edit in leaf B and in its logged copy (replay installs it)."""
    return [rec(T_LEAF_B * T_BS + off_in_leaf, data), rec(T_LOG_B * T_BS + off_in_leaf, data)]


def hostile_template_inputs():
    """(name, input) of hostile edits of the template, flags 0."""
    child0 = T_ROOT * T_BS + 24 + 16          # one key, then the child array
    child1 = child0 + 8
    out = [
        ("root-child-is-root", mode_input(0, rec(child0, struct.pack("<I", T_ROOT)))),
        ("both-children-root", mode_input(0, rec(child0, struct.pack("<I", T_ROOT)),
                                          rec(child1, struct.pack("<I", T_ROOT)))),
        ("root-is-leaf-b-height-3", mode_input(0, rec(SB + 8, struct.pack("<I", T_LEAF_B)))),
        ("tree-height-5", mode_input(0, rec(SB + 68, struct.pack("<H", 5)))),
        # /d/t's entry (dir_d body at 720 in leaf A, entry 2) -> the root: a
        # directory cycle; -> /d itself: a self loop
        ("dir-cycle-to-root", mode_input(0, rec(T_LEAF_A * T_BS + 720 + 32 + 4,
                                                struct.pack("<II", 1, 2)))),
        ("dir-self-loop", mode_input(0, rec(T_LEAF_A * T_BS + 720 + 32 + 4,
                                            struct.pack("<II", 2, 3)))),
        # /f's stat data (leaf B, body at 980): size 2^60, and 2^64-1
        ("file-2e60", mode_input(0, *leaf_b_rec(980 + 8, struct.pack("<Q", 1 << 60)))),
        ("file-size-max", mode_input(0, *leaf_b_rec(980 + 8, struct.pack("<Q", (1 << 64) - 1)))),
        # /n's stat data (body at 868): 2^60 over its 66 pointers
        ("holder-2e60", mode_input(0, *leaf_b_rec(868 + 8, struct.pack("<Q", 1 << 60)))),
        # objectid map: cursize at its maximum, garbage values
        ("oid-map-garbage", mode_input(0, rec(SB + 48, struct.pack("<H", 410)),
                                       rec(SB + 204, bytes((i * 37 + 11) & 0xFF for i in range(820))))),
        ("oid-map-cursize-huge", mode_input(0, rec(SB + 48, struct.pack("<H", 0xFFFF)))),
        ("oid-map-descending", mode_input(0, rec(SB + 204, struct.pack("<IIII", 0xFFFFFFF0, 8, 7, 1)),
                                          rec(SB + 48, struct.pack("<H", 4)))),
        # block counts far beyond the 640 KiB device
        ("block-count-2e32", mode_input(0, rec(SB, struct.pack("<I", 0xFFFFFFFF)))),
        ("block-count-1e6-bmap", mode_input(0, rec(SB, struct.pack("<I", 1000000)),
                                            rec(SB + 70, struct.pack("<H", 123)))),
        ("free-blocks-huge", mode_input(0, rec(SB + 4, struct.pack("<I", 0xFFFFFFFF)))),
        # journal: trans_max 2^32-1 with a descriptor of length 2^32-2 (the
        # wrap of tests/fuzz/regressions/image/journal-len-wrap-hang)
        ("journal-len-wrap", mode_input(0, rec(SB + 24, struct.pack("<I", 0xFFFFFFFF)),
                                        rec(T_JFIRST * T_BS + 4, struct.pack("<I", 0xFFFFFFFE)))),
        ("journal-header-garbage", mode_input(0, rec(T_JHDR * T_BS, b"\xff" * 44))),
        ("nested-sb-wiped", mode_input(0, rec(T_INNER_SB * T_BS + 52, b"\0" * 10))),
        ("nested-root-is-outer-root", mode_input(0, rec(T_INNER_SB * T_BS + 8, struct.pack("<I", 1000)))),
        ("bitmap-zeroed", mode_input(0, rec(65 * T_BS, bytes(T_BS)))),
        ("truncated-in-tree", mode_input(0, size=(T_LEAF_A * T_BS) // 512)),
        ("truncated-before-sb", mode_input(0, size=SB // 512)),
        ("blocksize-4096", mode_input(0, rec(SB + 44, struct.pack("<H", 4096)))),
    ]
    return out


def mode_seeds(seeds):
    for t in MODE_TARGETS:
        for f in MODE_FLAGS[t]:
            seeds.add(t, mode_input(f))
        for _name, data in hostile_template_inputs():
            seeds.add(t, data)


def capped_patch_list(img, cap, block_count=None):
    """The image cut at cap bytes as a zero-base patch list (at most
    MAX_IMAGE_SEED bytes), optionally with the superblock's block count set."""
    part = bytearray(img[:cap])
    if block_count is not None and len(part) >= 65536 + 204:
        struct.pack_into("<I", part, 65536, block_count)
    return patch_list(bytes(part), MAX_IMAGE_SEED)


def mode_image_seeds(seeds, img, label):
    pls = [capped_patch_list(img, MODES_MAX_IMAGE)]
    if len(img) > MODES_MAX_IMAGE and len(img) >= 65536 + 204 and \
            img[65536 + 52:65536 + 58] == b"ReIsEr":
        bs = le16(img, 65536 + 44)
        if bs in BS_SEL:
            pls.append(capped_patch_list(img, MODES_MAX_IMAGE, MODES_MAX_IMAGE // bs))
    for pl in pls:
        if pl is None:
            print(f"make_seeds: {label}: mode seed over {MAX_IMAGE_SEED} bytes, skipped",
                  file=sys.stderr)
            continue
        for t in MODE_TARGETS:
            seeds.add(t, pl)


# --------------------------------------------------------------------------
# Public images.

def open_image(path):
    if path.endswith(".xz"):
        return lzma.open(path).read()
    if path.endswith(".gz"):
        return gzip.open(path).read()
    with open(path, "rb") as f:
        return f.read()


def patch_list(img, max_bytes):
    """The image as a zero-base patch list: runs of non-zero bytes, merged
    across gaps shorter than 32 bytes, cut into records of <= 65535 bytes."""
    out = bytearray([1, 0]) + struct.pack("<I", (len(img) + 511) // 512)
    runs = []
    for m in re.finditer(rb"[^\x00]+", img):
        if runs and m.start() - runs[-1][1] < 32:
            runs[-1][1] = m.end()
        else:
            runs.append([m.start(), m.end()])
    for start, end in runs:
        for pos in range(start, end, 65535):
            chunk = img[pos:min(end, pos + 65535)]
            out += struct.pack("<IH", pos, len(chunk)) + chunk
            if len(out) > max_bytes:
                return None
    return bytes(out)


def node_level(blk):
    return le16(blk, 0)


def plausible_node(blk, bs):
    level, nr = le16(blk, 0), le16(blk, 2)
    if level == 1:
        return 1 <= nr <= (bs - 24) // 25
    if 2 <= level <= 5:
        return nr <= (bs - 32) // 24
    return False


def leaf_items(blk, bs):
    """Yields (key bytes, type, count, body) for items whose body is in range."""
    nr = le16(blk, 2)
    for i in range(min(nr, (bs - 24) // 24)):
        ih = 24 + 24 * i
        count, length, loc, version = struct.unpack_from("<HHHH", blk, ih + 16)
        if length == 0 or loc + length > bs:
            continue
        key = blk[ih:ih + 16]
        off64 = struct.unpack_from("<Q", key, 8)[0]
        if (version & 0xFFF) == 1:
            typ = off64 >> 60
        else:
            uniq = le32(key, 12)
            typ = {0: 0, 500: 3, 0xFFFFFFFF: 2, 0xFFFFFFFE: 1}.get(uniq, 14)
        yield key, typ, count, blk[loc:loc + length]


def dir_names(body, count):
    names = []
    if count * 16 > len(body):
        return names
    end = len(body)
    for i in range(count):
        loc = le16(body, 16 * i + 12)
        if loc >= end:
            break
        names.append(body[loc:end].rstrip(b"\0"))
        end = loc
    return names


def from_image(seeds, img, label):
    found = False
    for sb_off in SB_OFFSETS:
        if len(img) < sb_off + 204:
            continue
        sb = img[sb_off:sb_off + 204]
        magic = sb[52:62]
        if not (magic.startswith(b"ReIsErFs") or magic.startswith(b"ReIsEr2Fs") or
                magic.startswith(b"ReIsEr3Fs")):
            continue
        bs = le16(sb, 44)
        dev_blocks = len(img) // bs if bs else 0
        flag = 0 if sb_off == 65536 else 1
        seeds.add("super", bytes([flag]) + struct.pack("<I", dev_blocks & 0xFFFFFFFF) + sb)
        # also with the objectid map that follows it
        seeds.add("super", bytes([flag]) + struct.pack("<I", dev_blocks & 0xFFFFFFFF) +
                  img[sb_off:sb_off + min(bs or 1024, 1024)])
        if bs not in BS_SEL or found:
            continue
        found = True
        sel = bytes([BS_SEL[bs]])
        nblocks = len(img) // bs

        def block(b):
            return img[b * bs:(b + 1) * bs] if 0 <= b < nblocks else None

        # tree walk from the root, then a scan for node-looking blocks
        nodes = {}
        stack = [le32(sb, 8)]
        while stack and len(nodes) < 4 * MAX_PER_IMAGE:
            b = stack.pop()
            blk = block(b)
            if b in nodes or blk is None or not plausible_node(blk, bs):
                continue
            nodes[b] = blk
            lvl, nr = node_level(blk), le16(blk, 2)
            if lvl >= 2:
                for j in range(nr + 1):
                    stack.append(le32(blk, 24 + 16 * nr + 8 * j))
        for b in range(nblocks):
            if len(nodes) >= 4 * MAX_PER_IMAGE:
                break
            blk = block(b)
            if b not in nodes and blk[0] in (1, 2, 3, 4, 5) and blk[1] == 0 and \
                    plausible_node(blk, bs):
                nodes[b] = blk
        n_leaf = n_int = 0
        for b, blk in sorted(nodes.items()):
            if node_level(blk) == 1 and n_leaf < MAX_PER_IMAGE:
                n_leaf += 1
                seeds.add("leaf", sel + blk)
                for key, typ, count, body in leaf_items(blk, bs):
                    if typ == 3:
                        seeds.add("dir", struct.pack("<H", count) + body)
                        for name in dir_names(body, count)[:8]:
                            for code in (1, 2, 3):
                                seeds.add("hash", bytes([code]) + name)
                    elif typ == 0:
                        seeds.add("stat", body)
            elif node_level(blk) >= 2 and n_int < MAX_PER_IMAGE:
                n_int += 1
                seeds.add("internal", sel + blk)

        # journal: header, and descriptor + commit pairs in the log
        j_first, j_dev, j_size = le32(sb, 12), le32(sb, 16), le32(sb, 20)
        if j_dev == 0 and 0 < j_size < 65536:
            hdr = block(j_first + j_size)
            if hdr is not None:
                seeds.add("journal", sel + hdr + bytes(bs))
            pairs = 0
            for off in range(j_size):
                d = block(j_first + off)
                if d is None or d[bs - 12:bs - 4] != b"ReIsErLB":
                    continue
                length = le32(d, 4)
                c = block(j_first + (off + length + 1) % j_size) if length < j_size else None
                seeds.add("journal", sel + d + (c if c is not None else bytes(bs)))
                pairs += 1
                if pairs >= MAX_PER_IMAGE:
                    break
    mode_image_seeds(seeds, img, label)
    pl = patch_list(img, MAX_IMAGE_SEED)
    if pl is not None:
        seeds.add("image", pl)
    else:
        print(f"make_seeds: {label}: image seed over {MAX_IMAGE_SEED} bytes, skipped",
              file=sys.stderr)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    public = sys.argv[2] if len(sys.argv) > 2 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/corpus-public")
    team = sys.argv[3] if len(sys.argv) > 3 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../corpus/images")
    seeds = Seeds(out)
    hand_made(seeds)
    mode_seeds(seeds)
    images = 0
    for d in (public, team):
        if not os.path.isdir(d):
            print(f"make_seeds: no corpus at {d}; skipped", file=sys.stderr)
            continue
        for root, _dirs, files in os.walk(d):
            for fn in sorted(files):
                if not (fn.endswith(".xz") or fn.endswith(".gz") or fn.endswith(".bin")):
                    continue
                path = os.path.join(root, fn)
                try:
                    img = open_image(path)
                except (OSError, EOFError, lzma.LZMAError) as e:
                    print(f"make_seeds: {path}: {e}", file=sys.stderr)
                    continue
                from_image(seeds, img, os.path.relpath(path, d))
                images += 1
    with open(os.path.join(out, "reiserfs.dict"), "w") as f:
        for word in (b"ReIsErFs", b"ReIsEr2Fs", b"ReIsEr3Fs", b"ReIsErLB", b"ReIsEr4",
                     b"\x01\x00", b"\x02\x00", b"\xf4\x01\x00\x00", b"\xff\xff\xff\xff",
                     b"\xfe\xff\xff\xff", b"\x00\x02", b"\x00\x10", b".reiserfs_priv"):
            f.write('"' + "".join("\\x%02x" % c for c in word) + '"\n')
    print("make_seeds: %d public and team images; seeds: %s" %
          (images, ", ".join(f"{t} {seeds.count[t]}" for t in TARGETS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

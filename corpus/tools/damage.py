#!/usr/bin/env python3
"""damage.py - deterministic, seeded damage recipes for ReiserFS v3 images.

usage: damage.py RECIPE IN_IMAGE OUT_IMAGE [--seed S] [--n N] [--manifest M]
                 [--record OUT.json]
       damage.py --list

IN_IMAGE is never modified: it is copied to OUT_IMAGE and the damage is done
on the copy.  A JSON record (recipe, seed, blocks touched, details) goes to
--record (default OUT_IMAGE.damage.json) and to stdout.

It parses just enough ReiserFS (rcorpus.Fs): superblock at 64 KiB, root
block, walk of internal nodes (block head level, nr, disk_child pointers),
leaf item heads, bitmap and journal header locations.  Little-endian.

Recipes:
  zero-root            zero the root node
  zero-internal        zero every internal node (level >= 2; none if height 2)
  zero-bitmaps         zero every bitmap block
  zero-super           zero the superblock block (64 KiB)
  zero-leaves          zero N random leaves (default N=3)
  flip-leaves          flip 8 random bits in each of N random leaves (default N=3)
  truncate             cut the image to 50% of its length (N = percent to keep)
  zero-journal-header  zero the journal header block
  zero-nested-leaf     zero the leaf holding the first indirect item of the
                       nested image file (needs --manifest with the file's ino,
                       and the path from NAME.nested.json or --nested-path)
  copy-leaves          copy N random leaves (default N=2) into free blocks no
                       file claims, mark them used, and zero the root: the
                       rebuild meets each copied leaf twice
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402

RECIPES = ["zero-root", "zero-internal", "zero-bitmaps", "zero-super", "zero-leaves", "flip-leaves",
           "truncate", "zero-journal-header", "zero-nested-leaf", "copy-leaves"]


def zero_blocks(path, bs, blocks):
    with open(path, "r+b") as f:
        for b in blocks:
            f.seek(b * bs)
            f.write(b"\0" * bs)


def tree_nodes(fs):
    leaves, internals = [], []
    for b, level, _parent in fs.walk():
        if level == 1:
            leaves.append(b)
        elif level is not None and level >= 2:
            internals.append(b)
    return sorted(leaves), sorted(internals)


def claimed_blocks(fs, leaves):
    """Every block an indirect item of the tree's leaves points to."""
    out = set()
    for b in leaves:
        blk = fs.read_block(b)
        for it in fs.leaf_items(blk):
            if it["type"] != "indirect":
                continue
            for k in range(it["len"] // 4):
                p, = struct.unpack_from("<I", blk, it["loc"] + 4 * k)
                if p:
                    out.add(p)
    return out


def copy_leaves(fs, dst, rng, n, leaves, internals):
    """Copies n leaves of the tree, byte for byte, into blocks that are free,
    outside the journal, and that no file claims, marks the copies used in
    the bitmap, and zeroes the root: a rebuild then finds every copied leaf
    twice, with the same strength, and must keep one of each pair."""
    bs = fs.blocksize
    taken = claimed_blocks(fs, leaves) | set(leaves) | set(internals) | set(fs.bitmap_blocks())
    bmap = [bytearray(fs.read_block(b)) for b in fs.bitmap_blocks()]
    bits = 8 * bs
    def used(i):
        return bmap[i // bits][(i % bits) // 8] >> (i % 8) & 1
    low = fs.j_first + fs.j_size + 1 if fs.j_dev == 0 else fs.sb_block + 2
    free = [i for i in range(low, fs.block_count) if not used(i) and i not in taken]
    chosen = sorted(rng.sample(leaves, min(n, len(leaves))))
    if len(free) < len(chosen):
        raise SystemExit("copy-leaves: not enough free blocks")
    targets = sorted(rng.sample(free, len(chosen)))
    with open(dst, "r+b") as f:
        for src, to in zip(chosen, targets):
            f.seek(to * bs)
            f.write(fs.read_block(src))
            bmap[to // bits][(to % bits) // 8] |= 1 << (to % 8)
        for i, b in enumerate(fs.bitmap_blocks()):
            f.seek(b * bs)
            f.write(bytes(bmap[i]))
    return [{"from": s_, "to": t} for s_, t in zip(chosen, targets)]


def find_nested_leaves(fs, leaves, oid):
    """Leaves holding indirect items of object oid, in key order."""
    hits = []
    for b in leaves:
        blk = fs.read_block(b)
        for it in fs.leaf_items(blk):
            if it["oid"] == oid and it["type"] == "indirect":
                hits.append((it["offset"], b))
    hits.sort()
    out = []
    for _off, b in hits:
        if b not in out:
            out.append(b)
    return out


def apply(recipe, src, dst, seed=1, n=None, manifest=None, nested_path=None):
    shutil.copyfile(src, dst)
    fs = rcorpus.Fs(dst)
    bs = fs.blocksize
    rng = random.Random(seed)
    rec = {"recipe": recipe, "seed": seed, "source": os.path.basename(src),
           "source_sha256": rcorpus.sha256_file(src), "blocksize": bs,
           "block_count": fs.block_count, "root_block": fs.root_block,
           "tree_height": fs.tree_height, "blocks_zeroed": [], "bits_flipped": []}
    leaves, internals = tree_nodes(fs)
    rec["tree_leaves"] = len(leaves)
    rec["tree_internal_nodes"] = len(internals)
    if recipe == "zero-root":
        rec["blocks_zeroed"] = [fs.root_block]
    elif recipe == "zero-internal":
        rec["blocks_zeroed"] = internals
        if not internals:
            rec["note"] = "tree height 2: no internal nodes, image unchanged"
    elif recipe == "zero-bitmaps":
        rec["blocks_zeroed"] = fs.bitmap_blocks()
    elif recipe == "zero-super":
        rec["blocks_zeroed"] = [fs.sb_block]
    elif recipe == "zero-leaves":
        n = n or 3
        rec["n"] = n
        rec["blocks_zeroed"] = sorted(rng.sample(leaves, min(n, len(leaves))))
    elif recipe == "flip-leaves":
        n = n or 3
        rec["n"] = n
        chosen = sorted(rng.sample(leaves, min(n, len(leaves))))
        with open(dst, "r+b") as f:
            for b in chosen:
                for _ in range(8):
                    byte = rng.randrange(bs)
                    bit = rng.randrange(8)
                    f.seek(b * bs + byte)
                    v = f.read(1)[0]
                    f.seek(b * bs + byte)
                    f.write(bytes([v ^ (1 << bit)]))
                    rec["bits_flipped"].append({"block": b, "byte": byte, "bit": bit})
        rec["blocks_touched"] = chosen
    elif recipe == "truncate":
        pct = n or 50
        rec["keep_percent"] = pct
        new = (os.path.getsize(dst) * pct // 100) // bs * bs
        with open(dst, "r+b") as f:
            f.truncate(new)
        rec["new_size"] = new
        rec["blocks_removed_from"] = new // bs
    elif recipe == "zero-journal-header":
        if fs.j_dev != 0:
            rec["note"] = "journal on another device; nothing done"
        else:
            rec["blocks_zeroed"] = [fs.journal_header_block()]
    elif recipe == "copy-leaves":
        n = n or 2
        rec["n"] = n
        rec["leaves_copied"] = copy_leaves(fs, dst, rng, n, leaves, internals)
        rec["blocks_zeroed"] = [fs.root_block]
    elif recipe == "zero-nested-leaf":
        if not manifest:
            raise SystemExit("zero-nested-leaf needs --manifest (and the nested path)")
        ents = rcorpus.read_manifest(manifest)
        if not nested_path:
            side = manifest.replace(".manifest.jsonl", ".nested.json")
            with open(side) as f:
                nested_path = json.load(f)["nested_path"]
        hit = [e for e in ents if e["path"] == nested_path]
        if not hit:
            raise SystemExit("nested path %s not in manifest" % nested_path)
        oid = hit[0]["ino"]
        holders = find_nested_leaves(fs, leaves, oid)
        rec["nested_path"] = nested_path
        rec["nested_objectid"] = oid
        rec["leaves_with_nested_indirect_items"] = holders
        rec["blocks_zeroed"] = holders[:1]
    else:
        raise SystemExit("unknown recipe %s" % recipe)
    if rec["blocks_zeroed"]:
        zero_blocks(dst, bs, rec["blocks_zeroed"])
    rec["result_sha256"] = rcorpus.sha256_file(dst)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("recipe", nargs="?")
    ap.add_argument("src", nargs="?")
    ap.add_argument("dst", nargs="?")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int)
    ap.add_argument("--manifest")
    ap.add_argument("--nested-path")
    ap.add_argument("--record")
    a = ap.parse_args()
    if a.list:
        print("\n".join(RECIPES))
        return 0
    if not (a.recipe and a.src and a.dst):
        ap.error("RECIPE IN_IMAGE OUT_IMAGE required")
    if os.path.abspath(a.src) == os.path.abspath(a.dst):
        ap.error("OUT_IMAGE must differ from IN_IMAGE")
    rec = apply(a.recipe, a.src, a.dst, a.seed, a.n, a.manifest, a.nested_path)
    with open(a.record or a.dst + ".damage.json", "w") as f:
        json.dump(rec, f, indent=1)
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())

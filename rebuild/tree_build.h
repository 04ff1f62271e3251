/*
 * tree_build.h - the tree builder of `rfsck rebuild`: a bottom-up bulk load of
 * a ReiserFS S+tree from items that arrive in key order.
 *
 * The caller (emit.c) feeds every item of the new tree once, in strictly
 * increasing rfs_key_cmp order, then calls tb_finish for the root block and
 * the height.  The builder packs items into leaves, keeps unchanged leaves
 * where they are, writes the rest to blocks the caller's allocator hands out,
 * and builds the internal levels as it goes (one open node per level, as in a
 * B-tree bulk load).
 *
 * Invariants:
 *  (1) Every node the builder writes or keeps passes rfs_leaf_validate or
 *      rfs_internal_validate with no fault at all: item bodies packed from the
 *      end of the block in item order, free_space and dc_size exact, item
 *      heads with version = key format and no fsck flags, reserved bytes and
 *      the block head's right key zero.  In the nodes it writes every unused
 *      byte is zero.
 *  (2) Keys strictly increase along the leaf level; internal key i of a node is
 *      the leftmost key of child i+1, written in the key format of that leaf
 *      item, so every subtree lies between its delimiting keys.
 *  (3) Every internal node has at least one key (two children).  The kernel
 *      would accept fewer (see tree_build.c), but a node with one child is the
 *      first thing its balancing code merges away, and reiserfsck's pass over
 *      the tree has nothing to gain from it.  The root has >= 2 children or is
 *      a leaf (height 1).
 *  (4) A leaf stays in place (no write) only when the block its items came from
 *      already holds, byte for byte, the leaf those items alone would form
 *      (or, with tb_options.keep_stale_free_space, the same block except in
 *      the free gap between the item heads and the bodies), and no block is
 *      used twice by one builder: not kept twice, not kept after the allocator
 *      handed it out, not handed out after it was kept.  A kept leaf therefore
 *      cannot be overwritten later by this builder.
 *  (5) Nothing is written except through rfs_dev_write_batch on o->dev, and
 *      only to blocks from o->alloc.  Writes are batched (see tb_options.batch)
 *      and every buffered block is written by tb_finish.
 *  (6) Errors are sticky: after the first failure every call returns the same
 *      status and error, nothing more is written, and tb_free is the only
 *      thing left to do.  Blocks already written stay written (the device's
 *      undo log, if any, covers them).
 *  (7) Memory: a few blocks per level (at most 5 levels), the pending leaf, the
 *      run leaf, the write batch, and a sparse set of the block numbers used
 *      (about 2 bytes per node, bitmap.h); nothing per item.
 */
#ifndef RFS_TREE_BUILD_H
#define RFS_TREE_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/format.h"
#include "rfs/io.h"
#include "rfs/status.h"

/* One item, ready to be placed in a leaf. */
struct tb_item {
	struct rfs_key key;          /* must round-trip through fmt (and through the
				      * kernel's format guess, for internal keys) */
	enum rfs_key_format fmt;     /* key format = item head version */
	uint16_t free_or_count;      /* dir: entry count; stat data, direct: 0xFFFF;
				      * indirect: 0 (or the source's value) */
	uint16_t len;                /* body length, 1 .. bs - 48 */
	const uint8_t *body;         /* len bytes; copied by tb_add_item */
	uint64_t source_leaf;        /* leaf block the item came from; RFS_NO_BLOCK
				      * when synthesized */
};

/* A free block for a new node in *blk (OUT).  A failure (RFS_ERR_LIMIT or any
 * other status, with err filled) stops the build. */
typedef rfs_status (*tb_alloc_fn)(void *ctx, uint64_t *blk, struct rfs_error *err);

/* Told once for every node of the new tree: blk at level (1 = leaf), and
 * whether it was kept in place (no write) or written.  Written nodes are
 * reported after their write succeeded. */
typedef void (*tb_placed_fn)(void *ctx, uint64_t blk, unsigned level, bool kept_in_place,
			     bool written);

struct tb_options {
	struct rfs_dev *dev;         /* reads of source leaves, writes of new nodes */
	uint32_t bs;                 /* block size; must equal the device's */
	tb_alloc_fn alloc;           /* required */
	tb_placed_fn placed;         /* may be NULL */
	void *ctx;                   /* passed to alloc and placed */
	unsigned batch;              /* blocks per write batch; 0 = as many as fit
				      * in 1 MiB, at most RFS_UNDO_MAX_BATCH */
	bool keep_stale_free_space;  /* also keep a leaf whose only difference is
				      * old bytes in its free gap (the kernel does
				      * not clear it); default: whole-block match */
};

struct tb_stats {
	uint64_t items;              /* items added */
	uint64_t leaves;             /* leaves in the tree = kept + new */
	uint64_t leaves_kept;        /* left in place, not written */
	uint64_t leaves_new;         /* written to allocated blocks */
	uint64_t internal_nodes;     /* written to allocated blocks */
	uint64_t blocks_written;     /* leaves_new + internal_nodes */
	uint64_t sources_unreadable; /* runs whose source leaf could not be read */
	uint64_t items_merged;       /* items that continued the previous one
				      * (same file, next byte) and were merged */
};

struct tree_builder;

/* A new builder in *out (OUT), owned by the caller until tb_free.
 * RFS_ERR_INVALID: no device or allocator, bs not the device's block size.
 * RFS_ERR_NOMEM. */
rfs_status tb_new(const struct tb_options *o, struct tree_builder **out, struct rfs_error *err);

/* Adds one item; its body is copied before the call returns.
 * RFS_ERR_INVALID: key not strictly greater than the previous item's, a key
 * its format cannot hold, an unknown type, len 0 or > bs - 48, a stat data
 * body not 32/44 bytes, an indirect body not a multiple of 4, a directory
 * body that fails rfs_dir_validate with its entry count.  Such an item leaves
 * the builder usable (nothing was added).  Any other failure (the
 * allocator's, a write, RFS_ERR_NOMEM, RFS_ERR_LIMIT for a tree deeper than
 * RFS_MAX_HEIGHT, RFS_ERR_INVALID for a block the allocator handed out twice
 * or outside the device) is sticky, see (6). */
rfs_status tb_add_item(struct tree_builder *tb, const struct tb_item *it, struct rfs_error *err);

/* Writes what is buffered and closes every level.  *root (OUT) is the root
 * block and *height (OUT) the root's level (1 = the root is a leaf; the
 * superblock's tree_height field is height + 1); *st (OUT, may be NULL) the
 * counts.  RFS_ERR_INVALID if no item was added; RFS_ERR_LIMIT if the tree
 * would need more than RFS_MAX_HEIGHT levels; or the sticky error.  Call it
 * once; afterwards only tb_free. */
rfs_status tb_finish(struct tree_builder *tb, uint64_t *root, unsigned *height,
		     struct tb_stats *st, struct rfs_error *err);

/* Frees the builder (NULL is fine).  Buffered writes not yet flushed by
 * tb_finish are dropped. */
void tb_free(struct tree_builder *tb);

#endif

/*
 * tree_edit_int.h - what the files of the tree-edit layer share
 * (src/tree_edit.c: session, block set, allocation, objectids, commit and
 * journal; src/tree_edit_node.c: search and node changes;
 * src/tree_edit_dir.c: directory entries).  Not for use outside them.
 */
#ifndef RFS_TREE_EDIT_INT_H
#define RFS_TREE_EDIT_INT_H

#include "rfs/tree_edit.h"

/* One block copied into the session.  dirty: changed since the last commit
 * (written by it); fresh: allocated in this operation (its old content does
 * not matter). */
struct te_block {
	uint64_t blk;
	uint8_t *buf;
	bool dirty, fresh;
	bool node;                   /* a tree node (read by te_node or made by te_new_node) */
};

struct rfs_tedit {
	struct rfs_fs *fs;
	uint32_t bs;
	rfs_tedit_write_fn write;
	void *write_ctx;
	struct te_block *blocks;     /* the block set: every block read or changed */
	size_t n, cap;               /* since the last commit */
	bool failed;                 /* a write failed: the session refuses work */
	/* superblock fields, from the superblock block (the copy in the set) */
	uint64_t root;
	unsigned height;             /* root level + 1 */
	/* journal */
	bool journal;                /* commits go through the journal */
	uint64_t j_first, j_header;  /* first log block, header block */
	uint32_t j_size, j_trans_max;
	uint32_t j_offset;           /* first unflushed offset: where the next transaction goes */
	uint32_t j_last_flush, j_mount_id;
	uint64_t n_journaled, n_direct;
};

/* Path from the root to a node: lv[0] is the root. */
struct te_path {
	int depth;                   /* levels held */
	struct {
		uint64_t blk;
		int pos;             /* child index (internal) or item index, -1 before the first */
	} lv[RFS_MAX_HEIGHT + 1];
};

/* The session's copy of a block: read from the device the first time.
 * Node checks are the caller's (te_node). */
rfs_status te_get(struct rfs_tedit *te, uint64_t blk, struct te_block **out,
		  struct rfs_error *err);
/* te_get for a tree node that must have this level (0: any node level) and
 * pass structural validation. */
rfs_status te_node(struct rfs_tedit *te, uint64_t blk, int level, uint8_t **buf,
		   struct rfs_error *err);
void te_mark_dirty(struct rfs_tedit *te, uint64_t blk);
/* A new block from the allocator, zeroed, in the set (dirty, fresh). */
rfs_status te_new_node(struct rfs_tedit *te, uint64_t near, uint64_t *blk, uint8_t **buf,
		       struct rfs_error *err);
/* Superblock field changes (the copy in the set is marked dirty). */
rfs_status te_set_root(struct rfs_tedit *te, uint64_t root, unsigned height,
		       struct rfs_error *err);

/* Node layer (tree_edit_node.c). */
/* Descends from the root with key down to the node of level stop_level (1 =
 * the leaf); for the leaf, lv[].pos is the last item <= key (-1 if none) and
 * *exact whether it equals key. */
rfs_status te_search(struct rfs_tedit *te, const struct rfs_key *key, int stop_level,
		     struct te_path *p, bool *exact, struct rfs_error *err);
/* Fixes the disk-child sizes of every changed node and checks invariants
 * (1)-(3) of tree_edit.h on them; called by the commit. */
rfs_status te_fixup_and_verify(struct rfs_tedit *te, struct rfs_error *err);

/* Used bytes of a node (what its parent's disk-child size must say). */
uint16_t te_node_used(const uint8_t *node, uint32_t bs);

#endif

/*
 * tree.h - key search and ordered iteration over the S+tree.
 *
 * A cursor holds a copy of every node on the path from the root to a leaf.
 * Every node it reads is checked before use: block number inside the
 * filesystem and outside its metadata area, level equal to the level expected
 * at that depth (so a pointer cycle cannot make it loop), and the structural
 * validation of src/node.c.  A node that fails is an RFS_ERR_CORRUPT naming
 * the block and the problem code, never a crash.
 *
 * An internal node the cursor already holds, validated, is not read again
 * while the device's generation (rfs_dev_generation) is unchanged: a seek per
 * file (salvage, ls, cat) then reads and validates only the leaf.  So a
 * caller that edits an internal node in the cursor's copy must write it
 * through the device (which moves the generation), as repair_entry.c does;
 * leaves are always read again, since callers edit the leaf copy and may
 * leave it unwritten.
 *
 * Position: a cursor is at an item (leaf level, 0 <= pos < nr), or before the
 * first item of the tree (pos == -1), or past the end (at_end).
 */
#ifndef RFS_TREE_H
#define RFS_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/fs.h"

struct rfs_cursor_level {
	uint64_t block;
	int pos;                     /* child index (internal) or item index (leaf) */
	int nr;                      /* keys (internal) or items (leaf) */
	uint8_t *buf;
	uint64_t valid_gen;          /* internal node: buf is block, validated, at
				      * device generation valid_gen - 1; 0 = not */
};

struct rfs_cursor {
	struct rfs_fs *fs;
	int height;                  /* levels on the path; lv[0] is the root */
	struct rfs_cursor_level lv[RFS_MAX_HEIGHT + 1];
	bool at_end;
	enum rfs_problem_code last_problem;  /* why the last node was refused */
};

rfs_status rfs_cursor_init(struct rfs_fs *fs, struct rfs_cursor *cur, struct rfs_error *err);
void rfs_cursor_free(struct rfs_cursor *cur);

/* Positions at the last item whose key is <= key (pos -1 when every item is
 * greater).  *exact (may be NULL) tells whether that item's key equals key. */
rfs_status rfs_cursor_seek(struct rfs_cursor *cur, const struct rfs_key *key, bool *exact,
			   struct rfs_error *err);

/* Positions at the first item of object (start->dir_id, start->objectid)
 * whose key is >= start; *found is false when the object has none. */
rfs_status rfs_cursor_seek_object(struct rfs_cursor *cur, const struct rfs_key *start,
				  bool *found, struct rfs_error *err);

/* Moves to the next item in key order; sets at_end past the last one. */
rfs_status rfs_cursor_next(struct rfs_cursor *cur, struct rfs_error *err);

/* The current item (cursor at an item).  body points into the cursor's leaf
 * copy and stays valid until the cursor moves. */
void rfs_cursor_item(const struct rfs_cursor *cur, struct rfs_item_head *ih,
		     const uint8_t **body);
/* true when the cursor is at an item. */
bool rfs_cursor_at_item(const struct rfs_cursor *cur);
/* Block number of the leaf holding the current item. */
uint64_t rfs_cursor_leaf_block(const struct rfs_cursor *cur);

#endif

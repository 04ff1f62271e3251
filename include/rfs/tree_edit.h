/*
 * tree_edit.h - item deletion and insertion in a live tree, in place, for the
 * repairs of `rfsck fix` that change the tree's shape (safe links, relinking
 * into /lost+found).
 *
 * A session (struct rfs_tedit) sits on an opened filesystem.  Every change is
 * made to copies of the blocks it touches, held in the session; nothing reaches
 * the device until rfs_tedit_commit, which writes them all as one unit:
 *   - first as one journal transaction (descriptor, logged copies, commit block
 *     at the journal header's first unflushed offset, with the next trans id
 *     and the header's mount id), then to their homes, then the journal header
 *     is advanced past it.  A process killed at any write therefore leaves the
 *     old tree, or a committed transaction that the kernel's mount, reiserfsck
 *     and `rfsck fix` all replay: every commit is atomic.
 *   - or, without a usable journal (an external one, a header that names no
 *     replay start, or options.no_journal), straight to their homes.
 * All writes go through options.write (default: rfs_dev_write_block), so the
 * device's undo log, --output copy or --dry-run overlay apply unchanged.
 *
 * Invariants after every successful commit (each one is verified on the
 * changed nodes before anything is written; a violation aborts the commit with
 * RFS_ERR_CORRUPT and writes nothing):
 *  (1) every changed node passes rfs_leaf_validate / rfs_internal_validate
 *      without a single fault (free space, flags, order, layout);
 *  (2) descending from the root with a changed node's first key reaches that
 *      node at the level its own level implies; a leaf's first key equals its
 *      left delimiting key, its last key is below its right one; an internal
 *      node's keys lie strictly between its delimiting keys;
 *  (3) each changed node's disk-child size in its parent equals the bytes it
 *      uses;
 *  (4) the bitmap bit of every block a commit allocates is set and of every
 *      block it frees is clear, and the superblock's free count moved by the
 *      same amount; root block and tree height follow splits and collapses;
 *  (5) the objectid map stays sorted, as the kernel keeps it.
 * Leaves are split (2 or 3 ways) when an insertion or a growing item does not
 * fit; internal nodes split up to a new root (height + 1).  A leaf that loses
 * its last item is removed from its parent; an internal node left with one
 * child and no key is merged into a sibling with room for it, or takes the
 * nearest child of a full sibling; a root left so is replaced by its child
 * (height - 1).  Leaves are never merged and items never move between
 * existing leaves, so two body items of one object never become neighbours in
 * one leaf (a sparse tree is the price: the kernel rebalances when it next
 * writes there).
 */
#ifndef RFS_TREE_EDIT_H
#define RFS_TREE_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/fs.h"

struct rfs_tedit;

/* Writes one block home (or into the journal area); the session's only way
 * to change the device.  Must behave like rfs_dev_write_block. */
typedef rfs_status (*rfs_tedit_write_fn)(void *ctx, uint64_t blk, const void *buf,
					 struct rfs_error *err);

struct rfs_tedit_options {
	rfs_tedit_write_fn write;    /* NULL: rfs_dev_write_block on fs->dev */
	void *write_ctx;
	bool no_journal;             /* write home directly even with a usable journal */
};

/* Opens a session: reads the superblock block and the journal header.
 * The caller keeps fs open for the session's life; fs->sb's root, height and
 * free count are kept up to date by every commit (so tree cursors see the
 * committed tree).  Errors: RFS_ERR_NOMEM, read errors. */
rfs_status rfs_tedit_open(struct rfs_fs *fs, const struct rfs_tedit_options *opt,
			  struct rfs_tedit **out, struct rfs_error *err);
/* Drops uncommitted changes and frees the session. */
void rfs_tedit_close(struct rfs_tedit *te);

/* Makes every change since the last commit durable as one unit (see above).
 * A commit with no change writes nothing.  On any error the changes are
 * dropped, and the session refuses further work if a write failed. */
rfs_status rfs_tedit_commit(struct rfs_tedit *te, struct rfs_error *err);
/* Drops every change since the last commit. */
void rfs_tedit_abort(struct rfs_tedit *te);
/* Blocks changed since the last commit, and how many one commit may hold
 * (the journal's transaction limit less a margin for one more operation).
 * Callers commit before an operation that could go past the limit. */
size_t rfs_tedit_pending(const struct rfs_tedit *te);
size_t rfs_tedit_budget(const struct rfs_tedit *te);
/* Transactions committed through the journal, and straight home. */
void rfs_tedit_counts(const struct rfs_tedit *te, uint64_t *journaled, uint64_t *direct);

/* ---- items (all see the changes not yet committed) ---- */

/* An item copied out of the tree.  body has room for a block. */
struct rfs_tedit_item {
	struct rfs_item_head ih;     /* location is meaningless */
	uint8_t *body;
};
rfs_status rfs_tedit_item_alloc(const struct rfs_tedit *te, struct rfs_tedit_item *it);
void rfs_tedit_item_free(struct rfs_tedit_item *it);

/* Copies the last item whose key is <= key into *out; *found is false when
 * every item of the tree is greater.  RFS_ERR_CORRUPT when a node on the way
 * fails validation. */
rfs_status rfs_tedit_seek(struct rfs_tedit *te, const struct rfs_key *key,
			  struct rfs_tedit_item *out, bool *found, struct rfs_error *err);

/* Inserts a new item (ih->key must not be in the tree; ih->len bytes of body;
 * ih->key_format and ih->free_or_count as given).  With new_leaf, the item
 * starts a leaf of its own unless it already is a leaf's first item (so that
 * it never shares a leaf with the item before it).  RFS_ERR_INVALID: the key
 * exists, or a length the format does not allow. */
rfs_status rfs_tedit_insert(struct rfs_tedit *te, const struct rfs_item_head *ih,
			    const uint8_t *body, bool new_leaf, struct rfs_error *err);
/* Replaces the item with key ih->key by a new head and body of any length
 * (splitting its leaf when it no longer fits).  RFS_ERR_NOT_FOUND. */
rfs_status rfs_tedit_replace(struct rfs_tedit *te, const struct rfs_item_head *ih,
			     const uint8_t *body, struct rfs_error *err);
/* The same for the item with key *at, whose key becomes ih->key: the new key
 * must be above the old one and below the next item's (the item keeps its
 * place; a leaf's first key and the delimiting key above it follow), e.g. a
 * directory item that lost its first entry.  RFS_ERR_INVALID otherwise. */
rfs_status rfs_tedit_rekey(struct rfs_tedit *te, const struct rfs_key *at,
			   const struct rfs_item_head *ih, const uint8_t *body,
			   struct rfs_error *err);
/* Deletes the item with exactly this key.  RFS_ERR_NOT_FOUND. */
rfs_status rfs_tedit_delete(struct rfs_tedit *te, const struct rfs_key *key,
			    struct rfs_error *err);

/* ---- directory entries ---- */

/* Adds name -> (to_dir_id, to_objectid) to directory (dir_id, objectid) under
 * the filesystem's hash, with the lowest free generation number, in the
 * directory item whose range holds it (splitting the item into two, in two
 * leaves, when it would pass half a block).  The name's slot is padded to 8
 * bytes when pad8 (what the kernel does in directories with 3.6 stat data),
 * else stored as is.  *offset (may be NULL) gets the entry's deh_offset and
 * *bytes (may be NULL) what the directory's size grows by.
 * RFS_ERR_INVALID: the name exists already, is empty, has a '/' or a NUL, or
 * is longer than 255 bytes; RFS_ERR_NOT_FOUND: the directory has no items;
 * RFS_ERR_LIMIT: all 128 generations of the hash are taken;
 * RFS_ERR_UNSUPPORTED: the filesystem's hash is unknown. */
rfs_status rfs_tedit_add_entry(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			       const uint8_t *name, uint16_t len, bool pad8, uint32_t to_dir_id,
			       uint32_t to_objectid, uint32_t *offset, uint32_t *bytes,
			       struct rfs_error *err);
/* Points the entry with deh_offset (e.g. 2 for "..") of a directory at a new
 * target.  RFS_ERR_NOT_FOUND when there is no such entry. */
rfs_status rfs_tedit_set_entry(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			       uint32_t deh_offset, uint32_t to_dir_id, uint32_t to_objectid,
			       struct rfs_error *err);

/* ---- blocks and objectids (journaled with the operation) ---- */

/* Allocates a free block (bitmap bit clear, not metadata), searching upwards
 * from near and wrapping; marks it used and lowers the free count.
 * RFS_ERR_LIMIT when the filesystem is full. */
rfs_status rfs_tedit_alloc_block(struct rfs_tedit *te, uint64_t near, uint64_t *blk,
				 struct rfs_error *err);
/* Frees a used block (bitmap bit cleared, free count raised).  A block that is
 * metadata, outside the filesystem or already free is refused (RFS_ERR_INVALID)
 * and nothing changes. */
rfs_status rfs_tedit_free_block(struct rfs_tedit *te, uint64_t blk, struct rfs_error *err);
/* A writable copy of a data (unformatted) block, written home with the next
 * commit. */
rfs_status rfs_tedit_data_block(struct rfs_tedit *te, uint64_t blk, uint8_t **buf,
				struct rfs_error *err);
/* Takes the first free objectid of the superblock's map, as the kernel does.
 * RFS_ERR_LIMIT when none is left. */
rfs_status rfs_tedit_alloc_objectid(struct rfs_tedit *te, uint32_t *objectid,
				    struct rfs_error *err);
/* Marks an objectid free in the map, as the kernel does; *released (may be
 * NULL) is false when it was free already or the map has no room to split a
 * run (the id then stays marked used, which only wastes it). */
rfs_status rfs_tedit_release_objectid(struct rfs_tedit *te, uint32_t objectid, bool *released,
				      struct rfs_error *err);
/* Whether the map marks objectid used (pending changes included). */
rfs_status rfs_tedit_objectid_used(struct rfs_tedit *te, uint32_t objectid, bool *used,
				   struct rfs_error *err);

#endif

/*
 * scan_rows.h - what rebuild's scan makes of one run of blocks: the index rows
 * its blocks yield and the counters they move, kept in memory by the worker
 * thread that validated the run until the thread that owns the index stores
 * them (scan.c).  Validation is thus spread over the cores while every
 * SQLite call stays on one thread (index.h, invariant 4).
 *
 * Invariants:
 *  (1) One batch belongs to one run slot of the read pipeline: its worker
 *      fills it, then the index's thread stores it (readahead.h, invariant 4).
 *  (2) Rows point into the run they came from (directory entry names, read
 *      error texts): a batch is stored before its run is released.
 *  (3) Storing batches in run order gives the index exactly the rows, in
 *      exactly the order, of a scan on one thread.
 *  (4) Memory: the batch's buffer grows to the largest run's rows and is
 *      reused for the next run of its slot.
 */
#ifndef RFS_REBUILD_SCAN_ROWS_H
#define RFS_REBUILD_SCAN_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "rebuild.h"

struct rb_rows {
	uint8_t *buf;                /* records: struct row_head then its payload */
	size_t len, cap;
	struct rb_counts n;          /* what this run adds to the scan's counters */
	uint32_t max_objectid;
	uint32_t hash_votes[3];
};

void rb_rows_reset(struct rb_rows *r);
void rb_rows_free(struct rb_rows *r);

rfs_status rb_rows_leaf(struct rb_rows *r, const struct rfs_index_leaf *l, struct rfs_error *err);
rfs_status rb_rows_item(struct rb_rows *r, const struct rfs_index_item *it, struct rfs_error *err);
rfs_status rb_rows_dirent(struct rb_rows *r, const struct rfs_index_dirent *d,
			  struct rfs_error *err);
rfs_status rb_rows_claim(struct rb_rows *r, uint64_t first, uint64_t count, uint64_t block,
			 uint32_t pos, uint32_t dir_id, uint32_t objectid, uint64_t file_offset,
			 struct rfs_error *err);
rfs_status rb_rows_internal(struct rb_rows *r, uint64_t block, unsigned level, unsigned nr_keys,
			    int area, const uint64_t *children, const struct rfs_key *keys,
			    struct rfs_error *err);
rfs_status rb_rows_nested(struct rb_rows *r, const struct rfs_index_nested *n,
			  struct rfs_error *err);
rfs_status rb_rows_unreadable(struct rb_rows *r, uint64_t block, const char *error,
			      struct rfs_error *err);

/* Stores the batch in c's index (inside the caller's transaction), adds its
 * counters to c and marks its candidate leaves in c->leaves. */
rfs_status rb_rows_store(const struct rb_rows *r, struct rb_ctx *c, struct rfs_error *err);

/* What one block of the scan yields (scan_classify.c): nothing for most
 * blocks, rows for leaves, internal nodes and superblocks of nested
 * filesystems.  area 0: the main area; area 1: the journal (older copies).
 * Reads only the image-independent parts of c (block size, old_used), so
 * workers may call it at the same time. */
rfs_status rb_classify(const struct rb_ctx *c, uint64_t blk, const uint8_t *buf, int area,
		       struct rb_rows *out, struct rfs_error *err);

#endif

/*
 * check.h - the state shared by the passes of `rfsck check` (src/check_*.c).
 *
 * Pass order and what each relies on (the driver table is in src/check.c):
 *   super     superblock and journal          -> problems only
 *   tree      walk from the root               -> claimed (tree + data blocks),
 *                                                 objects, bad_nodes
 *   bitmap    on-disk bitmaps vs claimed       -> problems only
 *   objectid  objectid map vs objects          -> problems only
 *   semantic  namespace from the root          -> objects' names/reached flags;
 *             skipped when bad_nodes > 0 (the tree cannot be trusted)
 */
#ifndef RFS_CHECK_H
#define RFS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/bitmap.h"
#include "rfs/fs.h"
#include "rfs/objtab.h"
#include "rfs/progress.h"
#include "rfs/report.h"

struct rfs_check_stats {
	uint64_t leaves, internal_nodes, items, directories, files, symlinks, others;
	uint64_t data_pointers, zero_pointers, safe_links, names;
	uint64_t blocks_claimed;
};

struct rfs_check {
	struct rfs_fs *fs;
	struct rfs_reporter *rep;
	struct rfs_bitmap claimed;      /* blocks used by the tree, its data and metadata */
	struct rfs_objtab objects;
	struct rfs_check_stats stats;
	uint64_t bad_nodes;             /* subtrees skipped */
	bool hash_trusted;              /* hash self-test passed and a hash is known */
	bool skipped_semantic;
	struct rfs_progress progress;
	struct rfs_fault sb_faults[32]; /* found while opening, reported by pass super */
	int n_sb_faults;
};

/* rfs_fault_fn that stores superblock faults in a struct rfs_check. */
void check_collect_sb_fault(void *check, const struct rfs_fault *f);

typedef rfs_status (*rfs_check_pass_fn)(struct rfs_check *c, struct rfs_error *err);

rfs_status check_pass_super(struct rfs_check *c, struct rfs_error *err);
rfs_status check_pass_tree(struct rfs_check *c, struct rfs_error *err);
rfs_status check_pass_bitmap(struct rfs_check *c, struct rfs_error *err);
rfs_status check_pass_objectid(struct rfs_check *c, struct rfs_error *err);
rfs_status check_pass_semantic(struct rfs_check *c, struct rfs_error *err);

/* Runs every pass in order.  Returns an operational failure only (I/O on the
 * device as a whole, memory); findings go to the reporter. */
rfs_status rfs_check_run(struct rfs_check *c, struct rfs_error *err);

/* Name of pass i for banners and JSON, NULL past the last. */
const char *rfs_check_pass_name(unsigned i);

#endif

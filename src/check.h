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
#include <stdio.h>

#include "rfs/bitmap.h"
#include "rfs/fs.h"
#include "rfs/objtab.h"
#include "rfs/progress.h"
#include "rfs/u64set.h"
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
	uint8_t *sb_buf;                /* superblock block being repaired (lazy) */
	bool sb_dirty;
	uint64_t blocks_written;        /* by repairs (overlay writes in --dry-run) */
	struct u64set written;          /* which blocks repairs wrote */
	/* repairs asked for by one pass and made by a later one */
	uint32_t oid_rebuild_pending;   /* SB_BAD_OID_MAP_SIZE answers to mark fixed */
	uint32_t free_count_pending;    /* SB_FREE_EXCEEDS_COUNT answers to mark fixed */
	uint32_t bitmap_fixes[4];       /* per bitmap problem code, see check_bitmap.c */
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
/* Runs every pass on an opened filesystem in the given mode (check, fix or
 * dry run) with a new reporter; c is zeroed by the caller except fs.  The
 * caller frees with check_release. */
rfs_status check_run_mode(struct rfs_fs *fs, enum rfs_mode mode, FILE *text, bool json,
			  int verbose, struct rfs_check *c, struct rfs_error *err);
/* The same with the reporter's options given whole (fix's declined codes). */
struct rfs_reporter_options;
rfs_status check_run_with(struct rfs_fs *fs, const struct rfs_reporter_options *ro,
			  struct rfs_check *c, struct rfs_error *err);
void check_release(struct rfs_check *c);

rfs_status rfs_check_run(struct rfs_check *c, struct rfs_error *err);

/* Repairs (src/repair.c).  Only called after problem_report() said "fix".
 * The superblock block is edited in memory and written once, at the end of
 * the run, so that passes can each change their own fields of it. */
rfs_status repair_write(struct rfs_check *c, uint64_t blk, const void *buf,
			struct rfs_error *err);
rfs_status repair_sb(struct rfs_check *c, uint8_t **sb, struct rfs_error *err);
rfs_status repair_sb_commit(struct rfs_check *c, struct rfs_error *err);
/* Sets a stat data field of (dir_id, objectid), found through cur. */
enum repair_sd_field { SD_FIELD_SIZE, SD_FIELD_NLINK, SD_FIELD_BLOCKS, SD_FIELD_FIRST_DIRECT,
		       SD_FIELD_MODE };
struct rfs_cursor;
rfs_status repair_stat_field(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			     uint32_t objectid, enum repair_sd_field field, uint64_t value,
			     struct rfs_error *err);

/* Points the entry with deh_offset (1 ".", 2 "..") of a directory at a target. */
/* Removes the entry with deh_offset from directory (dir_id, objectid) in place
 * (src/repair_entry.c); *freed (may be NULL) gets the bytes the directory's
 * size shrinks by (16 + the name's slot).
 * RFS_ERR_UNSUPPORTED when it would empty its leaf. */
rfs_status repair_remove_entry(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			       uint32_t objectid, uint32_t deh_offset, uint32_t *freed,
			       struct rfs_error *err);
rfs_status repair_dot_entry(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			    uint32_t objectid, uint32_t deh_offset, uint32_t to_dir_id,
			    uint32_t to_objectid, struct rfs_error *err);

/* Name of pass i for banners and JSON, NULL past the last. */
const char *rfs_check_pass_name(unsigned i);

#endif

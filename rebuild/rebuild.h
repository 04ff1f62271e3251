/*
 * rebuild.h - state shared by the stages of `rfsck rebuild` (the files of rebuild/).
 *
 * Stages, in order, and what each hands on (the driver is src/cmd_rebuild.c):
 *   scan.c      every block of the scan set -> index rows (leaf, item, claim,
 *               dirent, internal, nested, unreadable); bitmap `leaves`
 *   nested.c    nested filesystems: extent, holder file, libmagic -> bitmap
 *               `nested`, nested rows
 *   select.c    hash choice, leaf decisions (accepted/rejected + reason), item
 *               winners, double claims -> bitmap `accepted`; keyorder.c
 *               says whether the accepted leaves are in key order
 *               (key_ordered: nothing to rank, emit reads the leaves)
 *   objects.c   the object table c->objs, in memory (objmap.h), from
 *               keyorder.c's walk or item_key
 *   namespace.c names kept, entries removed, lost+found links, stat data to
 *               create -> dirent.keep, outcome rows, c->objs flags
 *   emit.c      the new tree: items in key order into tree_build.c
 *   finish.c    superblock (root, height, hash, state), journal header; then
 *               check's repair passes compute bitmaps, counts and sizes
 *
 * Invariants:
 *  (1) Nothing is written before emit.c; the scan and every decision only
 *      read the image and write the index.
 *  (2) A block becomes part of the new tree only if select.c accepted it (or
 *      emit.c allocated it from `free_for_tree`, which excludes every leaf
 *      candidate, every claimed data block, every nested extent and all
 *      metadata): no file's data and no nested image is ever overwritten.
 *  (3) Memory is a few bitmaps over the blocks plus bounded buffers; every
 *      per-candidate fact lives in the index.  One exception: the object
 *      table, 9 bytes per object (objs, objmap.h), from select.c to the end
 *      of emit.c: the namespace walk asks it about every name's target and
 *      emit about every item's and name's object.
 */
#ifndef RFS_REBUILD_H
#define RFS_REBUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rfs/bitmap.h"
#include "rfs/fs.h"
#include "rfs/index.h"
#include "rfs/progress.h"

#include "objmap.h"

enum rb_scan_mode { RB_SCAN_AUTO, RB_SCAN_USED, RB_SCAN_ALL };

struct rb_options {
	bool dry_run;
	enum rb_scan_mode scan;
	bool quiet, progress_force;
	unsigned hash_override;      /* --hash, 0 = decide */
	uint64_t data_blocks;        /* blocks that really hold data (an --output copy
				      * of a truncated image is extended with zeros
				      * beyond them); 0 = all */
	bool detached_orphans;       /* salvage: objects no name reaches go into a
				      * new directory that no name reaches either
				      * (lf_objectid), not into /lost+found */
};

struct rb_counts {
	uint64_t blocks_scanned, candidates, invalid, journal_copies, internal_nodes;
	uint64_t partly_valid;       /* invalid leaves whose standing items are used */
	uint64_t unreadable, nested_superblocks;
	uint64_t accepted, rejected;
	uint64_t conflicts, pointers_zeroed;
	uint64_t by_name, lost_found, entries_removed, sd_created, partial;
	uint64_t modes_from_items;   /* stat data whose type the items corrected */
	bool resumed;
};

/* The steps of decide and build, timed separately in the report. */
enum rb_step {
	RB_STEP_LOOKUP, RB_STEP_NESTED, RB_STEP_SELECT, RB_STEP_NAMESPACE,
	RB_STEP_JOURNAL, RB_STEP_EMIT, RB_STEP_FINISH, RB_STEP_BITMAPS,
	RB_STEP_COUNT
};

/* Their names in the report, in enum order. */
extern const char *const rb_step_names[RB_STEP_COUNT];

struct rb_ctx {
	struct rfs_fs *fs;
	struct rfs_dev *dev;
	uint32_t bs;
	uint64_t nblocks;            /* min(superblock block count, device blocks) */
	struct rfs_index *ix;
	struct rb_options opt;

	enum rb_scan_mode scan_mode; /* what was chosen */
	char scan_reason[200];
	/* Dense: one bit per block.  Sparse: about 2 bytes per member, at most
	 * one bit per block (bitmap.h).  After rb_build only salvage reads
	 * them; `rfsck rebuild` frees them (rb_release_sets) before its check
	 * passes, which keep their own. */
	struct rfs_bitmap old_used;  /* dense: on-disk bitmap at open */
	struct rfs_bitmap meta;      /* sparse: superblock area, bitmaps, journal */
	struct rfs_bitmap leaves;    /* sparse: valid leaf candidates (any decision) */
	struct rfs_bitmap nested;    /* sparse: blocks inside a nested filesystem */
	struct rfs_bitmap accepted;  /* sparse: leaves of the new tree (before emit) */
	struct rfs_bitmap claimed;   /* dense: data blocks owned by emitted indirect
				      * items and, unless dry_run, the nodes emit placed */
	struct rfs_bitmap nodes;     /* sparse, dry_run only: the nodes emit placed.
				      * Kept out of claimed because salvage reads
				      * the old contents of those blocks; a dry run
				      * of rebuild adds them to its bitmaps, as the
				      * real run's claimed has them */

	unsigned hash_code;
	const char *hash_source;     /* "superblock", "majority", "option", "default" */
	uint32_t hash_votes[3];      /* r5, tea, rupasov */
	uint32_t max_objectid;
	uint32_t lf_objectid;        /* /lost+found, 0 when none is needed */
	bool key_ordered;            /* the accepted leaves' items are in key order
				      * as the leaves' first keys sort them
				      * (keyorder.c): no item_key, no ranking */
	struct rb_objmap objs;       /* the object table (objects.c); freed by
				      * rb_release_sets */
	bool root_items_aside;       /* namespace.c: the root's stat data and file
				      * bodies lost (win = 0), a directory stat
				      * data is created */

	struct rb_counts n;
	struct rfs_progress progress;

	/* wall seconds per stage, for the report and the benchmarks; t_step
	 * splits decide and build into their steps (RB_STEP_*), t_check is the
	 * check pass after the build (set by cmd_rebuild) */
	double t_scan, t_decide, t_build, t_check;
	double t_step[RB_STEP_COUNT];

	/* results of emit/finish */
	uint64_t root;
	unsigned height;
	uint64_t tree_leaves, leaves_kept, leaves_new, internal_nodes;
};

/* Index of a hash code (1 tea, 2 rupasov, 3 r5) in hash_votes / hmask bits:
 * bit 0 r5, bit 1 tea, bit 2 rupasov. */
static inline int rb_hash_slot(unsigned code)
{
	return code == 3 ? 0 : code == 1 ? 1 : code == 2 ? 2 : -1;
}

/* The pipeline (pipeline.c): init, then rb_decide (scan .. namespace: reads
 * only), then rb_build (journal flush, emit, superblock: writes through the
 * device), then rb_release. */
void rb_init(struct rb_ctx *c, struct rfs_fs *fs, const struct rb_options *opt);
rfs_status rb_decide(struct rb_ctx *c, const char *index_path, struct rfs_error *err);
rfs_status rb_build(struct rb_ctx *c, struct rfs_error *err);
/* Between rb_decide and rb_build: the writes go to fs, another open of an
 * identical image (rebuild --output decides on the source while its copy is
 * made).  Refused unless fs has the same size, block size and superblock
 * block as the image decided on.  The caller still owns (and closes) both. */
rfs_status rb_retarget(struct rb_ctx *c, struct rfs_fs *fs, struct rfs_error *err);
void rb_release(struct rb_ctx *c);
/* Frees the block sets (the index stays open). */
void rb_release_sets(struct rb_ctx *c);
/* The missing byte ranges of a file reported partial ("[[from,to],...]",
 * malloc'd), or NULL. */
char *rb_partial_ranges(struct rb_ctx *c, uint32_t dir_id, uint32_t objectid);

rfs_status rb_scan(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_nested(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_select(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_namespace(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_emit(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_flush_journal(struct rb_ctx *c, struct rfs_error *err);
rfs_status rb_finish(struct rb_ctx *c, struct rfs_error *err);
/* After rb_build: the bitmaps (only the blocks that change) and the free
 * count of the new tree: metadata, nodes and kept data blocks in use.  Adds
 * meta into claimed.  Does nothing for a journal on another device.  Every
 * bitmap block lies on the device: rb_build refused a device without them. */
rfs_status rb_write_bitmaps(struct rb_ctx *c, struct rfs_error *err);

/* CLOCK_MONOTONIC in seconds, for the stage times. */
double rb_now(void);

/* What the driver adds to the report after the writes. */
struct rb_run_result {
	uint64_t repairs;            /* fixes made by the repair passes after the build */
	uint64_t blocks_written;
	char written_sha256[65];     /* of the sorted written block numbers, one per line */
	const char *check_after;     /* "clean" or what a check of the result found */
	const char *undo;            /* undo file, or NULL */
};

struct json_t;
/* The report as one JSON object (report.c); rb_report_text renders it. */
struct json_t *rb_report_json(struct rb_ctx *c, const struct rb_run_result *r);
void rb_report_text(FILE *f, struct json_t *j);

/* A 64-bit hash of a block's content, for duplicate detection (scan.c);
 * it also names the image in the index's identity, so an index written with
 * another checksum is never resumed. */
uint64_t rb_checksum(const uint8_t *blk, uint32_t bs);

#endif

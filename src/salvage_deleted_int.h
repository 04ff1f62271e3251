/*
 * salvage_deleted_int.h - the state src/salvage_deleted.c (finding and
 * deciding) hands to src/salvage_deleted_write.c (placing and writing) for
 * `rfsck salvage --deleted`.
 *
 * Every array below grows with what the scan found (stale items, names,
 * leaves) and is freed by salvage_deleted_free.  Indices are uint32_t: the
 * record cap (SALVAGE_DELETED_RECORDS_MAX) keeps them far below UINT32_MAX.
 */
#ifndef RFS_SALVAGE_DELETED_INT_H
#define RFS_SALVAGE_DELETED_INT_H

#include "salvage_int.h"

#include "rfs/bitmap.h"
#include "rfs/u64set.h"

/* A stale item of a key the live tree does not hold. */
struct sdel_item {
	uint32_t dir_id, objectid;
	uint64_t offset;
	uint32_t copy;               /* index in copies */
	uint32_t sd;                 /* stat data: index in sds, else UINT32_MAX */
	uint16_t pos, len;           /* item index in the leaf copy, body length */
	uint8_t type;                /* RFS_TYPE_STAT / DIRECT / INDIRECT */
};

/* Consecutive non-zero pointers of a stale indirect item. */
struct sdel_run {
	uint32_t first, count;       /* blocks [first, first + count) */
	uint32_t item;               /* index in items */
};

/* A stale directory entry: in names, one naming a key the live tree does
 * not hold; in old_names, one naming a live key. */
struct sdel_name {
	uint32_t dir_id, objectid;   /* the directory holding it */
	uint32_t t_dir_id, t_objectid;  /* the key it names */
	uint32_t copy;               /* index in copies */
	uint32_t off;                /* its hash offset (deh_offset) */
	uint16_t len;
	uint8_t *name;               /* len bytes (owned) */
};

/* A free block holding a valid leaf (any, with or without kept items). */
struct sdel_leaf {
	uint64_t block;
	uint64_t gen;                /* salvage_copy_generation of it */
	uint32_t copy;               /* index in copies, or UINT32_MAX */
	bool as_data;                /* taken for a deleted file's data (contract 5) */
};

/* A log block's place in the journal's transactions. */
struct sdel_jslot {
	bool is_desc;                /* holds a descriptor's magic */
	bool mapped;                 /* logged by a valid transaction */
	uint32_t desc_trans, desc_len;  /* the descriptor's fields (is_desc) */
	uint32_t trans, home;        /* mapped: its transaction and home block */
};

struct sdel_jleaf {              /* a valid leaf in the log */
	uint64_t log_off;
	uint64_t checksum;
};

/* A deleted object chosen for extraction. */
struct sdel_object {
	uint32_t dir_id, objectid;
	uint32_t sd_item;            /* the newest stat data (index in items) */
	uint32_t plan, nplan;        /* its body items: plan[plan, plan + nplan), by offset */
	uint32_t name;               /* the newest name (index in names), or UINT32_MAX */
	uint32_t other_names;        /* further distinct names found */
	uint64_t gen;                /* generation of the stat data's copy */
	/* placement (salvage_deleted_write.c) */
	uint8_t path_state;          /* 0 not placed, 1 being placed, 2 placed */
	bool resolved;               /* a chain of names reaches the live tree */
	char *opath;                 /* under OUTDIR/deleted: '/'-joined escaped names */
	uint8_t *ipath;              /* the image path it had (or "<unnamed>/...") */
	size_t ipath_len;
};

/* A live directory some stale name is under, as the walk extracted it. */
struct sdel_dirpath {
	uint64_t key;                /* dir_id << 32 | objectid */
	char *opath;                 /* OUTDIR-relative ("root", "root/a", "lost+found/x") */
	uint8_t *ipath;              /* image path ("" for the root) */
	size_t ipath_len;
};

/* A data block claimed by several chosen objects: one row per claim. */
struct sdel_multi {
	uint64_t block;
	uint64_t gen;                /* the claiming item's copy generation */
	uint32_t object;             /* index in objects */
};

/* One block being classified by the scan. */
struct sdel_scan_block {
	uint64_t block;
	bool journal;
	uint64_t log_off;            /* journal: offset in the log */
	uint64_t checksum;
	bool have_trans;             /* free: identical to a dated journal copy */
	uint32_t trans_id;
	uint32_t copy;               /* the copy made for it, or UINT32_MAX */
};

struct salvage_deleted {
	struct rfs_fs *live_fs, *disk_fs;
	bool nodes_on_disk;
	const struct rfs_bitmap *excluded;
	struct rfs_index *index;
	struct rfs_progress *progress;
	uint32_t bs;
	uint64_t nblocks;            /* min(block count, device blocks) */

	struct u64set live;          /* keys the live tree holds */
	struct rfs_bitmap in_use;    /* live nodes, live data, extra; and the bitmap's
				      * used blocks when the tree is the image's own */
	struct rfs_bitmap marked_used;  /* the allocation bitmap's used blocks */
	struct rfs_bitmap stale;     /* free blocks holding valid leaves */
	struct rfs_bitmap index_leaf;   /* leaf rows of the index */
	bool index_covers;           /* the index scanned every block */
	struct rfs_bitmap claim1, claim2;  /* chosen pointers: claimed once / again */

	uint64_t jsize;
	struct sdel_jslot *jmap;     /* jsize slots */
	struct sdel_jleaf *jleaves;
	size_t njleaves, jleaves_cap;
	struct salvage_jcopy *jcopies;   /* dated journal leaves, by home */
	size_t njcopies, jcopies_cap;

	uint64_t records;            /* items + runs + names kept (the cap) */
	struct salvage_copy *copies;
	size_t ncopies, copies_cap;
	struct sdel_item *items;
	size_t nitems, items_cap;
	struct rfs_stat *sds;
	size_t nsds, sds_cap;
	struct sdel_run *runs;       /* in item order */
	size_t nruns, runs_cap;
	struct sdel_name *names;     /* after choose_names: by target, best first */
	size_t nnames, names_cap;
	struct sdel_leaf *leaves;    /* in block order */
	size_t nleaves, leaves_cap;

	struct sdel_object *objects; /* in key order */
	size_t nobjects, objects_cap;
	uint32_t *plan;
	size_t nplan, plan_cap;
	uint32_t *names_only;        /* names (indices) whose target has no stat data */
	size_t names_only_n, names_only_cap;
	struct sdel_name *old_names; /* after choose_old_names: the distinct ones the
				      * live directory does not have, by target */
	size_t nold_names, old_names_cap;
	struct sdel_multi *multi;    /* by block, newest first */
	size_t nmulti, multi_cap;

	struct u64set wanted;        /* live directories stale names are under */
	struct u64set placed;        /* ... whose path the walk reported */
	struct sdel_dirpath *dirpaths;
	size_t ndirpaths, dirpaths_cap;

	struct salvage_deleted_totals t;
};

/* Grows *v (elements of elem bytes, *cap allocated) to hold need; false on
 * overflow or allocation failure (*v unchanged). */
bool sdel_grow(void **v, size_t *cap, size_t need, size_t elem);
/* Index of the chosen object (dir_id, objectid), or UINT32_MAX. */
uint32_t sdel_find_object(const struct salvage_deleted *d, uint32_t dir_id, uint32_t objectid);
/* The runs of item: runs[*first, *first + *n). */
void sdel_item_runs(const struct salvage_deleted *d, uint32_t item, size_t *first, size_t *n);
/* What is known about data block blk (for salvage_block_verdict). */
void sdel_block_facts(const struct salvage_deleted *d, uint64_t blk, struct salvage_block_facts *f);

#endif

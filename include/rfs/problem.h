/*
 * problem.h - the one catalogue of problems rfsck can find.
 *
 * Every inconsistency has one stable code here and one entry in the table in
 * src/problem.c (name, group, severity, message template, fix wording).  Check
 * output, JSON, fix decisions, exit status and tests all read that table; no
 * pass prints a finding on its own.
 *
 * Invariants (tested by tests/unit/test_problem.c):
 *  (1) Codes are dense: PR_NONE = 0, then every code in the table in enum order.
 *  (2) Names are unique, upper-case, and never change once released (scripts and
 *      test expectations match on them).
 *  (3) Every entry has a message template; every FIXABLE entry has fix wording.
 *
 * Template placeholders: {block} {block2} {item} {entry} {key} {expected}
 * {found} {path} {name} {detail}.
 */
#ifndef RFS_PROBLEM_H
#define RFS_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

enum rfs_severity {
	RFS_SEV_INFO = 0,      /* worth saying; not a problem */
	RFS_SEV_FIXABLE,       /* fix repairs it */
	RFS_SEV_REBUILD,       /* only rebuild repairs it */
	RFS_SEV_FATAL,         /* rfsck cannot open or read the filesystem */
};

/* Groups: which structure the problem is in (superblock, journal, ...). */
enum rfs_problem_group {
	RFS_PG_SUPER, RFS_PG_BITMAP, RFS_PG_JOURNAL, RFS_PG_TREE, RFS_PG_ITEM,
	RFS_PG_DIR, RFS_PG_FILE, RFS_PG_ALLOC, RFS_PG_SEMANTIC, RFS_PG_DEVICE,
};

enum rfs_problem_code {
	PR_NONE = 0,
	/* superblock */
	PR_SB_BAD_BLOCKSIZE,
	PR_SB_BLOCK_COUNT_ZERO,
	PR_SB_DEVICE_TOO_SMALL,
	PR_SB_ROOT_OUT_OF_RANGE,
	PR_SB_BAD_TREE_HEIGHT,
	PR_SB_BAD_HASH_CODE,
	PR_SB_HASH_UNDECIDED,
	PR_SB_BMAP_NR_MISMATCH,
	PR_SB_FREE_EXCEEDS_COUNT,
	PR_SB_BAD_OID_MAP_SIZE,
	PR_SB_OID_MAP_UNSORTED,
	PR_SB_BAD_VERSION,
	PR_SB_JOURNAL_EXTERNAL,
	PR_SB_JOURNAL_BAD_PLACEMENT,
	PR_SB_JOURNAL_BAD_SIZE,
	PR_SB_JOURNAL_BAD_TRANS_MAX,
	PR_SB_OLD_LOCATION,
	PR_SB_FS_STATE_ERROR,
	PR_SB_UNCLEAN,
	/* journal */
	PR_JOURNAL_HEADER_MISMATCH,
	PR_JOURNAL_HEADER_BAD,
	PR_JOURNAL_PENDING,
	PR_JOURNAL_TRANS_BROKEN,
	/* tree nodes */
	PR_NODE_READ_ERROR,
	PR_NODE_BAD_LEVEL,
	PR_NODE_OUT_OF_RANGE,
	PR_NODE_IN_METADATA,
	PR_NODE_CLAIMED_TWICE,
	PR_INTERNAL_BAD_NR_KEYS,
	PR_INTERNAL_KEYS_UNSORTED,
	PR_INTERNAL_ZERO_CHILD,
	PR_INTERNAL_BAD_FREE_SPACE,
	PR_LEAF_BAD_NR_ITEMS,
	PR_LEAF_ITEM_BAD_LOCATION,
	PR_LEAF_ITEM_BAD_LENGTH,
	PR_LEAF_ITEM_OVERLAP,
	PR_LEAF_BAD_FREE_SPACE,
	PR_LEAF_KEYS_UNSORTED,
	/* items */
	PR_ITEM_BAD_TYPE,
	PR_ITEM_FLAGS_SET,
	PR_ITEM_BAD_KEY_FORMAT,
	PR_STAT_BAD_LENGTH,
	PR_INDIRECT_BAD_LENGTH,
	PR_DIRECT_TOO_LONG,
	/* directory items */
	PR_DIR_NO_ENTRIES,
	PR_DIR_COUNT_TOO_BIG,
	PR_DIR_BAD_LOCATION,
	PR_DIR_OFFSETS_UNSORTED,
	PR_DIR_NAME_EMPTY,
	PR_DIR_LAST_NAME_GAP,
	PR_DIR_BAD_HASH,
	PR_DIR_ENTRY_STATE,
	/* tree shape (check) */
	PR_SB_TREE_HEIGHT_WRONG,
	PR_NODE_DELIM_LEFT,
	PR_NODE_DELIM_RIGHT,
	PR_INTERNAL_DC_SIZE,
	/* items across a leaf or object (check) */
	PR_ITEM_NO_STAT_DATA,
	PR_FILE_ITEMS_GAP,
	PR_ITEM_AFTER_TAIL,
	PR_TAIL_CROSSES_BLOCK,
	PR_ITEM_TYPE_MISMATCH,
	PR_ITEMS_MERGEABLE,
	PR_INDIRECT_PTR_OUT_OF_RANGE,
	PR_INDIRECT_PTR_METADATA,
	PR_INDIRECT_PTR_SHARED,
	PR_SAFELINK_BAD,
	PR_SAFELINK_PENDING,
	PR_STAT_OBJECTID_FREE,
	/* allocation (check) */
	PR_BITMAP_READ_ERROR,
	PR_BITMAP_USED_MARKED_FREE,
	PR_BITMAP_LEAKED_BLOCK,
	PR_BITMAP_TAIL_BITS,
	PR_BITMAP_FREE_COUNT,
	/* namespace (check) */
	PR_ROOT_MISSING,
	PR_ROOT_NOT_DIR,
	PR_ENTRY_POINTS_NOWHERE,
	PR_DIR_LOOP,
	PR_DOT_WRONG,
	PR_DOTDOT_WRONG,
	PR_NLINK_WRONG,
	PR_FILE_SIZE_WRONG,
	PR_DIR_SIZE_WRONG,
	PR_ORPHAN_OBJECT,
	PR_BLOCKS_WRONG,
	PR_FIRST_DIRECT_BYTE_WRONG,
	PR_MODE_WRONG,
	PR_CODE_COUNT
};

struct rfs_problem_def {
	enum rfs_problem_code code;
	const char *name;            /* "LEAF_BAD_FREE_SPACE" (no PR_ prefix) */
	enum rfs_problem_group group;
	enum rfs_severity severity;
	const char *message;         /* template, see placeholders above */
	const char *fix_done;        /* "free space set to {expected}" */
	const char *fix_would;       /* "would set free space to {expected}" */
	bool fix_pending;            /* FIXABLE by design, repair not in this version:
				      * fix answers "no" and the problem stays counted */
};

/* The table entry for a code, or NULL for PR_NONE / out of range. */
const struct rfs_problem_def *rfs_problem_def(enum rfs_problem_code code);
/* Looks a code up by its name (with or without "PR_"); PR_NONE if unknown. */
enum rfs_problem_code rfs_problem_by_name(const char *name);
const char *rfs_severity_name(enum rfs_severity sev);
const char *rfs_problem_group_name(enum rfs_problem_group group);

/* The whole table, for the table test and for `rfsck --list-problems`. */
const struct rfs_problem_def *rfs_problem_table(unsigned *count);

#endif

/*
 * fs.h - an opened ReiserFS volume: device, decoded superblock, journal state,
 * and the hash in use.  Everything that reads the tree starts here.
 *
 * Invariants after rfs_fs_open() returns RFS_OK:
 *  (1) sb passed rfs_super_check() without a FATAL problem; bs is its block
 *      size and the device's block size.
 *  (2) If replay was asked for, every committed transaction the kernel would
 *      replay has been put into the device's in-memory overlay (never written),
 *      and sb was re-read through the overlay.
 *  (3) hash_code is 1..3 when known (from --hash, else the superblock), else 0.
 */
#ifndef RFS_FS_H
#define RFS_FS_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/format.h"
#include "rfs/io.h"
#include "rfs/status.h"

/* What the journal holds (src/journal.c). */
struct rfs_journal_state {
	bool header_valid;           /* the header names a replay start */
	struct rfs_journal_header header;
	bool header_matches_sb;      /* its params equal the superblock's */
	uint32_t pending;            /* committed transactions the kernel would replay */
	uint32_t pending_blocks;     /* logged blocks in them */
	uint32_t first_trans_id, last_trans_id;
	uint32_t mount_id;
	bool broken;                 /* replay would stop at a bad transaction */
	char broken_reason[120];
	uint32_t replayed;           /* transactions put into the overlay */
	uint32_t next_offset;        /* log offset after the last pending transaction */
	/* the newest valid transaction anywhere in the log (for header repair) */
	bool have_newest;
	uint32_t newest_trans_id, newest_mount_id, newest_next_offset;
};

struct rfs_fs {
	struct rfs_dev *dev;
	struct rfs_super sb;
	struct rfs_super sb_on_disk;  /* before replay */
	uint32_t bs;
	unsigned hash_code;
	struct rfs_journal_state journal;
	bool sb_at_both_locations;    /* a magic was at 8 KiB too */
};

struct rfs_fs_options {
	struct rfs_dev_options dev;
	bool replay;                 /* replay the journal into the overlay */
	unsigned hash_override;      /* --hash, 0 = use the superblock's */
	rfs_fault_fn sb_fault;       /* receives superblock problems (may be NULL) */
	void *sb_fault_ctx;
};

/* Opens the device, finds and checks the superblock (64 KiB, then 8 KiB),
 * analyses the journal and, if asked, replays it in memory.
 * Errors: RFS_ERR_NOT_REISERFS (no magic), RFS_ERR_CORRUPT (unusable
 * superblock), RFS_ERR_IO/RFS_ERR_SHORT, RFS_ERR_UNSUPPORTED (external journal
 * when replay is needed). */
rfs_status rfs_fs_open(const struct rfs_fs_options *opt, struct rfs_fs **out,
		       struct rfs_error *err);
rfs_status rfs_fs_close(struct rfs_fs *fs, struct rfs_error *err);

/* Journal analysis and in-memory replay (src/journal.c). */
rfs_status rfs_journal_analyse(struct rfs_fs *fs, bool replay, struct rfs_error *err);

#endif

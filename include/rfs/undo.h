/*
 * undo.h - the undo log: the original contents of every block that a repair
 * overwrites, saved before the overwrite, so that `rfsck undo` can put the
 * image back byte for byte.
 *
 * The writer side (undo_create .. undo_finish) is used only by src/io.c, which
 * calls it before each first write of a block; the reader side (undo_apply) is
 * used by `rfsck undo`.  The file format and the invariants are stated in the
 * header comment of src/io_undo.c, which is the one place that implements them.
 */
#ifndef RFS_UNDO_H
#define RFS_UNDO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

struct rfs_undo;

/* Most blocks one undo_save_batch call may save with one sync.  A killed run
 * can leave at most this many records torn at the end of the file. */
#define RFS_UNDO_MAX_BATCH 256u
/* Identity ranges: at most this many, with at most this many bytes in all. */
#define RFS_UNDO_MAX_IDENTITY_RANGES 4u
#define RFS_UNDO_MAX_IDENTITY_BYTES 256u

/* What the undo file is for: the image as rfs_dev saw it. */
struct undo_target {
	uint32_t block_size;          /* filesystem block size (512..65536) */
	uint64_t fs_offset;           /* byte offset of the filesystem in the image */
	uint64_t image_size;          /* bytes from fs_offset to the end of the image */
};

/*
 * Creates a new undo file at path (O_EXCL: an existing file, possibly the only
 * way back from an earlier run, is never overwritten -> RFS_ERR_BUSY).  The file
 * stays empty (state "creating") until the first undo_save_batch.
 * On success *out is owned by the caller until undo_finish or undo_abandon.
 */
rfs_status undo_create(const char *path, const struct undo_target *target,
		       struct rfs_undo **out, struct rfs_error *err);

/*
 * Records that the len bytes at fs-relative offset off, whose current content
 * is bytes, identify the image and will not be changed by the run (the caller
 * enforces that; src/io.c refuses writes that would change them).  Allowed
 * only before the first save: later -> RFS_ERR_INVALID.  Too many ranges or
 * bytes -> RFS_ERR_LIMIT.
 */
rfs_status undo_add_identity(struct rfs_undo *u, uint64_t off, const void *bytes, uint32_t len,
			     struct rfs_error *err);

/* Changes the block size recorded for the target; allowed only before the
 * first save (RFS_ERR_INVALID afterwards, or for a bad size). */
rfs_status undo_set_block_size(struct rfs_undo *u, uint32_t block_size, struct rfs_error *err);

/* True when blk's original contents are already in the undo file. */
bool undo_has_block(const struct rfs_undo *u, uint64_t blk);

/*
 * Appends the original contents orig[i] (block_size bytes each) of blocks
 * blks[i], i < n <= RFS_UNDO_MAX_BATCH, none of them saved before, and syncs
 * the undo file.  Only after RFS_OK may the caller overwrite those blocks.
 * Any failure is sticky: every later call fails with the same status.
 */
rfs_status undo_save_batch(struct rfs_undo *u, size_t n, const uint64_t *blks,
			   const uint8_t *const *orig, struct rfs_error *err);

/* Remembers what was last written to blk (a saved block), for the finished
 * file's record of the image state that the run left behind. */
rfs_status undo_note_written(struct rfs_undo *u, uint64_t blk, const uint8_t *data,
			     struct rfs_error *err);

/*
 * Marks the undo file finished (final-content record, header checksum,
 * state "finished", synced) and frees u, whatever the outcome.  The caller
 * must have synced the image first.
 */
rfs_status undo_finish(struct rfs_undo *u, struct rfs_error *err);

/* Frees u leaving the file as it is (state "open": still applicable). */
void undo_abandon(struct rfs_undo *u);

/* ---- applying (rfsck undo) ---- */

enum undo_apply_flags {
	UNDO_APPLY_DRY_RUN = 1u << 0,  /* verify everything, write nothing */
	UNDO_APPLY_FORCE = 1u << 1,    /* see undo_apply */
};

enum undo_file_state { UNDO_STATE_CREATING = 0, UNDO_STATE_OPEN = 1, UNDO_STATE_FINISHED = 2 };

/* Called once per restored (or, in a dry run, restorable) block. */
typedef void (*undo_block_fn)(void *ctx, uint64_t blk);

struct undo_apply_result {
	enum undo_file_state state;    /* OUT: state the undo file was left in */
	struct undo_target target;     /* OUT: geometry named by the header */
	uint32_t identity_ranges;      /* OUT: identity ranges checked */
	uint64_t records;              /* OUT: valid block records */
	uint64_t blocks_restored;      /* OUT: blocks written (0 in a dry run) */
	uint64_t torn_bytes;           /* OUT: bytes of an ignored torn tail */
	uint64_t changed_since_run;    /* OUT: blocks that differ from what the run left */
	uint64_t already_original;     /* OUT: saved blocks the image already holds as saved */
	bool forced;                   /* OUT: --force overrode a check */
};

/*
 * Verifies the undo file at undo_path against the image at image_path, then,
 * unless UNDO_APPLY_DRY_RUN, writes every saved block back and syncs.
 * Verification (all before any write): header magic/version/checksums; the
 * image size and the identity ranges; every record's checksums, sequence and
 * block number; each block saved at most once.  A torn tail of an
 * unfinished file (records of the last sync batch, or the final-content
 * record of a run killed while finishing) is ignored: by invariant (1) of
 * io_undo.c the blocks of an unsynced batch were never overwritten.
 * With UNDO_APPLY_FORCE, two more things are accepted: a damaged tail in a
 * finished file, and image blocks that differ from what the run left behind
 * (the image was changed after the run).  When every saved block already
 * holds its original (a second apply), that is not a change: RFS_OK.
 * Geometry, identity and record
 * checksums are never forced.
 * Returns RFS_ERR_UNDO when something does not verify (image untouched),
 * RFS_ERR_IO / RFS_ERR_SHORT on I/O failure.  res is filled as far as known.
 */
rfs_status undo_apply(const char *undo_path, const char *image_path, unsigned flags,
		      undo_block_fn on_block, void *ctx, struct undo_apply_result *res,
		      struct rfs_error *err);

/* CRC-32C (Castagnoli, reflected, init/final xor 0xffffffff), continued from
 * crc (start with 0).  Exposed for the known-answer tests. */
uint32_t undo_crc32c(uint32_t crc, const void *data, size_t len);

/* The reversible transform applied to saved bytes (an XOR keystream derived
 * from seed), so saved blocks never look like ReiserFS metadata on disk.
 * Applying it twice with the same seed gives back the input. */
void undo_transform(uint64_t seed, uint8_t *data, size_t len);

#endif

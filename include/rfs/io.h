/*
 * io.h - the only way rfsck touches an image: block reads and writes.
 *
 * A struct rfs_dev is an image file or block device, optionally starting at a
 * byte offset inside it (a partition or a nested image), seen as an array of
 * blocks of the filesystem's block size.
 *
 * Invariants:
 *  (1) A device opened without RFS_DEV_WRITE is opened O_RDONLY: no code path
 *      can write to it.  check, info, ls, cat, salvage and every --dry-run open
 *      it that way.
 *  (2) With RFS_DEV_DRY_RUN every write goes to the in-memory overlay and never
 *      reaches the file; reads see the overlay first.  Journal replay during
 *      check uses the same overlay (rfs_dev_overlay_put).
 *  (3) With RFS_DEV_WRITE and an undo file, no block is overwritten until its
 *      original contents are in the undo file and synced (see undo.h).  Writing
 *      without an undo file needs RFS_DEV_NO_UNDO, set only on the user's
 *      explicit --no-undo or --output.
 *  (4) A read that fails or comes back short is an error value naming the
 *      block; it is never turned into zeros.  Blocks that a ddrescue mapfile
 *      marks unread fail the same way (RFS_ERR_IO, sys_errno EIO).
 *  (5) Block numbers are checked against the device size before any read.
 *  (6) After any write-path error the device refuses all further writes
 *      (sticky error), so a half-failed repair cannot go on writing.
 */
#ifndef RFS_IO_H
#define RFS_IO_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

struct rfs_dev;
struct rfs_undo;

enum rfs_dev_flags {
	RFS_DEV_WRITE = 1u << 0,     /* open O_RDWR; writes reach the file */
	RFS_DEV_DRY_RUN = 1u << 1,   /* writes stay in the overlay (opened O_RDONLY) */
	RFS_DEV_NO_UNDO = 1u << 2,   /* allow RFS_DEV_WRITE without an undo file */
	RFS_DEV_CREATE = 1u << 3,    /* create/truncate the path (for --output) */
};

struct rfs_dev_options {
	const char *path;
	uint64_t offset;             /* filesystem starts this many bytes in */
	unsigned flags;              /* enum rfs_dev_flags */
	const char *undo_path;       /* required with RFS_DEV_WRITE unless NO_UNDO */
	const char *mapfile;         /* optional GNU ddrescue mapfile */
	/* Test hooks (0 = off): fail the Nth block read with RFS_ERR_INJECTED
	 * naming the block (every block of read_block/read_run counts, and each
	 * read_bytes call counts one; only the Nth fails); make the Nth block
	 * write and all later ones fail without writing (sticky).  With an undo
	 * file the Nth write's original is saved and synced first, so the hook
	 * stops the run at its most delicate point. */
	uint64_t fail_read_nth;
	uint64_t stop_after_write_nth;
};

/* Opens the device with block size 4096 until rfs_dev_set_block_size.  A block
 * device that is mounted is refused for writing (RFS_ERR_BUSY). */
rfs_status rfs_dev_open(const struct rfs_dev_options *opt, struct rfs_dev **out,
			struct rfs_error *err);

/* Syncs the image, finishes the undo file (marking it complete) and frees dev
 * whatever the outcome.  Also returns the sticky write error, if any, so that
 * a caller who ignored a failed write still sees it; the undo file then stays
 * unfinished (still applicable). */
rfs_status rfs_dev_close(struct rfs_dev *dev, struct rfs_error *err);

/* Closes without marking the undo file finished (simulates a crash). */
void rfs_dev_abandon(struct rfs_dev *dev);

/* Sets the block size (512..65536, power of two); drops cached blocks. */
rfs_status rfs_dev_set_block_size(struct rfs_dev *dev, uint32_t bs, struct rfs_error *err);
uint32_t rfs_dev_block_size(const struct rfs_dev *dev);

/* With RFS_DEV_CREATE only: sets the file's length to offset + size (for
 * --output, which starts from an empty file).  RFS_ERR_INVALID otherwise. */
rfs_status rfs_dev_set_size(struct rfs_dev *dev, uint64_t size, struct rfs_error *err);

/* Bytes from the filesystem start to the end of the file or device. */
uint64_t rfs_dev_size(const struct rfs_dev *dev);
/* Whole blocks available: rfs_dev_size / block size. */
uint64_t rfs_dev_block_count(const struct rfs_dev *dev);

/* Reads len bytes at byte offset off (relative to the filesystem start),
 * overlay applied.  Used for superblock probing before the block size is known. */
rfs_status rfs_dev_read_bytes(struct rfs_dev *dev, uint64_t off, void *buf, size_t len,
			      struct rfs_error *err);

/* Reads one block into buf (block size bytes), overlay applied. */
rfs_status rfs_dev_read_block(struct rfs_dev *dev, uint64_t blk, void *buf,
			      struct rfs_error *err);

/* Says that blocks [first, first + count) will be read soon, so the kernel
 * can fetch them in parallel with the caller's work (posix_fadvise
 * WILLNEED: a tree walk that reads one node at a time then keeps many
 * requests in flight instead of one).  Only a hint: it reads nothing into
 * the caller's memory, changes no state, and ignores ranges outside the
 * device or that a ddrescue mapfile marks unread (a bad area gets no read
 * that the caller did not ask for). */
void rfs_dev_prefetch(struct rfs_dev *dev, uint64_t first, uint64_t count);

/* Reads blocks [first, first + count) with one system call into the block
 * cache, so that the rfs_dev_read_block calls which follow for them copy from
 * memory (a tree walk reading leaves that lie side by side: one pread
 * instead of up to RFS_DEV_CACHE_RUN_MAX).  Only a hint, like
 * rfs_dev_prefetch: it changes nothing a read returns and nothing it reports
 * (a failure, a short file, a range outside the device or one a mapfile marks
 * unread: nothing is cached and the single reads meet the fault), and it does
 * not count for the fail_read_nth test hook.  Runs of fewer than 2 or more
 * than RFS_DEV_CACHE_RUN_MAX blocks are ignored. */
enum { RFS_DEV_CACHE_RUN_MAX = 64 };
void rfs_dev_cache_run(struct rfs_dev *dev, uint64_t first, uint32_t count);

/* Reads count consecutive blocks with one large read (for scans), overlay
 * applied.  On failure, *bad (if not NULL) is the first block that failed;
 * callers may then fall back to rfs_dev_read_block per block. */
rfs_status rfs_dev_read_run(struct rfs_dev *dev, uint64_t first, uint32_t count, void *buf,
			    uint64_t *bad, struct rfs_error *err);

/* Writes one block: into the overlay (dry run), or through the undo file. */
rfs_status rfs_dev_write_block(struct rfs_dev *dev, uint64_t blk, const void *buf,
			       struct rfs_error *err);

/* Writes n blocks (blks[i] <- bufs[i]) like n rfs_dev_write_block calls, but
 * saves the originals of up to RFS_UNDO_MAX_BATCH of them with one undo sync
 * before overwriting any of them (invariant (3) still holds per block).  On
 * failure some of the blocks may have been written; the error is sticky. */
rfs_status rfs_dev_write_batch(struct rfs_dev *dev, size_t n, const uint64_t *blks,
			       const void *const *bufs, struct rfs_error *err);

/* Designates len bytes at fs-relative offset off as the image's identity:
 * recorded in the undo file (so `rfsck undo` refuses another image) and
 * immutable through this device (a write that would change any of them fails,
 * sticky, RFS_ERR_INVALID).  For ReiserFS: the superblock's block count, magic
 * and UUID.  Call after the block size is set and before the first write; at
 * most 4 ranges, 256 bytes in all.  Without an undo file only the
 * immutability applies. */
rfs_status rfs_dev_set_identity(struct rfs_dev *dev, uint64_t off, uint32_t len,
				struct rfs_error *err);

/* Puts a block into the overlay without writing (journal replay in memory). */
rfs_status rfs_dev_overlay_put(struct rfs_dev *dev, uint64_t blk, const void *buf,
			       struct rfs_error *err);

/* Number of blocks in the overlay, and iteration in ascending block order
 * (for --dry-run reports of the blocks that would be written). */
uint64_t rfs_dev_overlay_count(const struct rfs_dev *dev);
rfs_status rfs_dev_overlay_blocks(const struct rfs_dev *dev, uint64_t **blocks, uint64_t *n,
				  struct rfs_error *err);

/* From now on, remember every block written (to the file or, in a dry run,
 * to the overlay); rfs_dev_written_blocks returns them sorted (caller frees).
 * Lets a dry run and the real run be compared block for block. */
void rfs_dev_track_writes(struct rfs_dev *dev);
rfs_status rfs_dev_written_blocks(const struct rfs_dev *dev, uint64_t **blocks, size_t *n,
				  struct rfs_error *err);

/* A number that changes (it only grows) whenever what a block read returns
 * may change: at every write or overlay put attempted, refused or failed ones
 * included, and when the size or block size changes.  A copy of a block read
 * while the generation had one value is what a read returns as long as it
 * keeps that value (tree.c keeps its internal nodes by it). */
uint64_t rfs_dev_generation(const struct rfs_dev *dev);

/* Counters for reports and benchmarks. */
struct rfs_dev_stats {
	uint64_t blocks_read;        /* blocks handed to callers (any source) */
	uint64_t bytes_read;         /* bytes read from the file or device */
	uint64_t read_calls;         /* pread system calls on the image */
	uint64_t blocks_written;     /* blocks written to the image or the dry-run overlay */
	uint64_t writes_started;     /* block writes begun, finished or not: 0 means the
				      * image holds nothing rfsck wrote */
	uint64_t cache_hits;         /* block reads served by the block cache */
	uint64_t undo_blocks_saved;  /* originals saved to the undo file */
};
void rfs_dev_get_stats(const struct rfs_dev *dev, struct rfs_dev_stats *st);

#endif

/*
 * io_overlay.h - private to src/io*.c: the in-memory overlay of block
 * contents that dry runs and journal replay write instead of the image.
 *
 * Invariants: every buffer holds exactly block_size bytes; a block is in the
 * overlay at most once (a later put replaces the content); memory grows only
 * with the number of distinct blocks put.
 */
#ifndef RFS_IO_OVERLAY_H
#define RFS_IO_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

struct io_overlay {
	uint32_t block_size;          /* bytes per buffer */
	size_t cap;                   /* slots, a power of two (0 before first put) */
	size_t count;                 /* blocks held */
	uint64_t *blocks;             /* block number per slot */
	uint8_t **data;               /* NULL marks an empty slot */
};

/* Starts an empty overlay; no allocation until the first put. */
void io_overlay_init(struct io_overlay *ov, uint32_t block_size);

/* The overlay's copy of blk, or NULL.  Valid until the next put or free. */
const uint8_t *io_overlay_find(const struct io_overlay *ov, uint64_t blk);

/* Stores a copy of buf (block_size bytes) as blk's content. */
rfs_status io_overlay_put(struct io_overlay *ov, uint64_t blk, const void *buf,
			  struct rfs_error *err);

/* *blocks (malloc'ed, caller frees; NULL when *n is 0) = the block numbers in
 * ascending order. */
rfs_status io_overlay_list(const struct io_overlay *ov, uint64_t **blocks, uint64_t *n,
			   struct rfs_error *err);

/* Frees every buffer; the overlay is empty and reusable afterwards. */
void io_overlay_free(struct io_overlay *ov);

#endif

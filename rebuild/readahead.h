/*
 * readahead.h - the scan's reader thread: it reads the next runs of the scan
 * set while the main thread validates and indexes the current one, so a scan
 * of a real disk overlaps its I/O with the CPU work.
 *
 * Invariants:
 *  (1) While a reader runs, it is the only user of the device: the main
 *      thread touches nothing but the runs handed to it (rfs_dev is not
 *      thread-safe, and the scan needs nothing else from it).
 *  (2) Runs come out in ascending block order, each exactly once; a block that
 *      cannot be read is marked, with its error text, never zero-filled.
 *  (3) Memory: RA_RUNS buffers of RA_BLOCKS blocks.
 */
#ifndef RFS_READAHEAD_H
#define RFS_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/bitmap.h"
#include "rfs/io.h"
#include "rfs/status.h"

enum { RA_BLOCKS = 256, RA_RUNS = 4 };

struct ra_run {
	uint64_t first;              /* first block */
	uint32_t n;                  /* blocks in the run (all in the scan set) */
	uint8_t *data;               /* n blocks */
	bool failed[RA_BLOCKS];      /* block i could not be read */
	char *why[RA_BLOCKS];        /* its error (malloc'd), when failed */
};

/* Which blocks to read: [next, end), those for which in_set says true. */
typedef bool (*ra_in_set_fn)(const void *ctx, uint64_t blk);

struct readahead;

rfs_status ra_start(struct rfs_dev *dev, uint32_t bs, uint64_t next, uint64_t end,
		    ra_in_set_fn in_set, const void *ctx, struct readahead **out,
		    struct rfs_error *err);
/* The next run in *run (valid until the next call), or NULL at the end. */
rfs_status ra_next(struct readahead *ra, struct ra_run **run, struct rfs_error *err);
/* Stops the reader (also early) and frees everything. */
void ra_stop(struct readahead *ra);

#endif

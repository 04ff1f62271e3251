/*
 * readahead.h - the scan's read pipeline: a reader thread reads the next runs
 * of the scan set, optional worker threads process each run (rebuild's scan
 * validates its blocks there, on every core), and the consumer takes the
 * runs back in block order, so a scan overlaps I/O, validation and indexing.
 *
 * Invariants:
 *  (1) While the pipeline runs, its reader is the only user of the device:
 *      workers and consumer touch nothing but the runs handed to them (rfs_dev
 *      is not thread-safe, and the scan needs nothing else from it).
 *  (2) Runs come out in ascending block order, each exactly once, whatever
 *      the number of workers or the order in which they finish; a block that
 *      cannot be read is marked, with its error text, never zero-filled.
 *  (3) A run holds blocks of the set and, when `gap` > 0, the few blocks
 *      between them that are not (read so that one large read replaces many
 *      small ones): in_set[i] tells which; workers and consumers skip the rest.
 *  (4) The work function runs on a worker thread with the run to itself; the
 *      consumer sees a run only after its work finished (the pipeline's mutex
 *      orders the two), and the run stays valid until the next ra_next.
 *  (5) Memory: RA_RUNS buffers of RA_BLOCKS blocks, plus what work keeps in
 *      each run's `work_out`.
 */
#ifndef RFS_READAHEAD_H
#define RFS_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/bitmap.h"
#include "rfs/io.h"
#include "rfs/status.h"

enum { RA_BLOCKS = 256, RA_RUNS = 8, RA_MAX_WORKERS = 8 };

struct ra_run {
	uint64_t first;              /* first block */
	uint32_t n;                  /* blocks in the run */
	uint8_t *data;               /* n blocks */
	bool in_set[RA_BLOCKS];      /* block i is in the scan set (else: read across a gap) */
	bool failed[RA_BLOCKS];      /* block i could not be read */
	char *why[RA_BLOCKS];        /* its error (malloc'd), when failed */
	void *work_out;              /* the work function's per-slot state (kept across runs) */
	rfs_status work_status;      /* what the work function returned */
	struct rfs_error work_err;
};

/* Which blocks to read: [next, end), those for which in_set says true. */
typedef bool (*ra_in_set_fn)(const void *ctx, uint64_t blk);
/* Work on one run (on a worker thread); a non-OK status stops the scan. */
typedef rfs_status (*ra_work_fn)(void *ctx, struct ra_run *run, struct rfs_error *err);
/* Frees a slot's work_out when the pipeline stops. */
typedef void (*ra_work_free_fn)(void *work_out);

struct ra_config {
	uint32_t bs;
	uint64_t next, end;
	ra_in_set_fn in_set;
	const void *set_ctx;
	uint32_t gap;                /* read across up to this many blocks outside the set */
	ra_work_fn work;             /* NULL: no workers, runs go straight to the consumer */
	ra_work_free_fn work_free;
	void *work_ctx;
	unsigned workers;            /* 1..RA_MAX_WORKERS when work is set */
};

struct readahead;

rfs_status ra_start(struct rfs_dev *dev, const struct ra_config *cfg, struct readahead **out,
		    struct rfs_error *err);
/* The next run in *run (valid until the next call), or NULL at the end.  A
 * work function's failure is returned here, in block order. */
rfs_status ra_next(struct readahead *ra, struct ra_run **run, struct rfs_error *err);
/* Stops the reader and workers (also early) and frees everything. */
void ra_stop(struct readahead *ra);

/* Worker threads for this machine: its online CPUs, 1..RA_MAX_WORKERS
 * (RFSCK_SCAN_THREADS overrides, for benchmarks). */
unsigned ra_default_workers(void);

#endif

/*
 * sha256_worker.h - SHA-256 digests of a sequence of jobs, computed on a
 * second thread while the caller goes on.
 *
 * Salvage hashes every file it writes, its holes as zeros.  On one core
 * that was a third of the extraction of bench-32g (docs/benchmarks.md); the
 * other core was idle.  The caller feeds a job's bytes and hole lengths as
 * it writes the file, closes the job, and reads the digest later, when it
 * writes the file's manifest line.
 *
 * Invariants:
 *  (1) Jobs are hashed in the order they were opened, each from its own
 *      context; a job's digest is that of rfs_sha256 fed the same bytes and
 *      zeros in the same order (tests/unit/test_sha256_worker.c).
 *  (2) Data is copied into chunks allocated when the worker starts: at most
 *      RFS_SHA256_WORKER_CHUNKS * RFS_SHA256_WORKER_CHUNK bytes (32 MiB) wait
 *      at any time, and feeding data never allocates or fails; a caller
 *      that gets ahead waits for a free chunk.  Zeros cost no chunk space
 *      beyond one message per run, however many pieces the run came in.
 *  (3) A job's digest lives in slot id % nslots (the number given to
 *      rfs_sha256_worker_start) until it is read (rfs_sha256_worker_result)
 *      or its job was closed without a digest.  Opening a job whose slot holds an unread digest fails
 *      (RFS_ERR_INVALID): the caller keeps fewer unread digests than slots.
 *  (4) Only the thread that started the worker calls these functions; the
 *      worker's own thread touches nothing but the chunks handed to it and
 *      the slots, under the mutex.
 *  (5) rfs_sha256_worker_stop joins the thread: nothing runs after it.
 */
#ifndef RFS_SHA256_WORKER_H
#define RFS_SHA256_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/sha256.h"
#include "rfs/status.h"

enum {
	RFS_SHA256_WORKER_CHUNK = 256 * 1024,
	RFS_SHA256_WORKER_CHUNKS = 128,
};

struct rfs_sha256_worker;

/* Starts the thread, with nslots (>= 1) slots for digests.  RFS_ERR_NOMEM,
 * or RFS_ERR_IO when no thread can be created (then hash in the caller's
 * thread instead). */
rfs_status rfs_sha256_worker_start(struct rfs_sha256_worker **out, size_t nslots,
				   struct rfs_error *err);

/* Joins the thread and frees everything; jobs not yet hashed are dropped.
 * NULL is allowed. */
void rfs_sha256_worker_stop(struct rfs_sha256_worker *w);

/* Opens the next job (ids start at 1).  Waits while the job that last used
 * its slot is still being hashed; RFS_ERR_INVALID when that job's digest was
 * never read (invariant 3). */
rfs_status rfs_sha256_worker_open(struct rfs_sha256_worker *w, uint64_t *id);

/* Adds bytes (copied) or n zero bytes to the open job. */
void rfs_sha256_worker_data(struct rfs_sha256_worker *w, const void *data, size_t n);
void rfs_sha256_worker_zeros(struct rfs_sha256_worker *w, uint64_t n);

/* Closes the open job; with keep false its digest is not wanted and its
 * slot is free as soon as it has been hashed. */
void rfs_sha256_worker_close(struct rfs_sha256_worker *w, bool keep);

/* Bytes (data and zeros) given to the worker and not hashed yet: how far
 * behind the caller it is.  Counted per chunk: a chunk's bytes leave the
 * count when the worker is done with the whole chunk, which may be just
 * after the digests of its jobs can be read. */
uint64_t rfs_sha256_worker_backlog(struct rfs_sha256_worker *w);

/* The digest of job id (closed with keep).  With wait, waits for it; without,
 * returns false when it is not ready yet.  Reading it frees the slot.
 * false also for an id that has no digest waiting (never kept, already
 * read, or overwritten) and for the job still open. */
bool rfs_sha256_worker_result(struct rfs_sha256_worker *w, uint64_t id, bool wait,
			      uint8_t out[RFS_SHA256_LEN]);

#endif

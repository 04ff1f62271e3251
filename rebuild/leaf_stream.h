/*
 * leaf_stream.h - the rows (block, checksum) of a query over leaves, read a
 * batch ahead so that leaves lying side by side on the disk are read with
 * one system call each batch (rfs_dev_cache_run) instead of one per leaf.
 *
 * Invariant: rows come out in the query's order, each once; the stream only
 * adds cache hints, so what rfs_dev_read_block returns for any block, and
 * every error it reports, is what it would be without the stream.
 */
#ifndef RFS_REBUILD_LEAF_STREAM_H
#define RFS_REBUILD_LEAF_STREAM_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "rfs/io.h"

enum { RB_LEAF_STREAM_AHEAD = 64 };

struct rb_leaf_stream {
	sqlite3_stmt *q;             /* columns 0 block, 1 checksum; not owned */
	struct rfs_dev *dev;
	uint64_t blk[RB_LEAF_STREAM_AHEAD], sum[RB_LEAF_STREAM_AHEAD];
	uint64_t sorted[RB_LEAF_STREAM_AHEAD];
	unsigned n, at;
	int end_rc;                  /* sqlite3_step's last code once the query ended */
	bool ended;
};

void rb_leaf_stream_init(struct rb_leaf_stream *s, sqlite3_stmt *q, struct rfs_dev *dev);

/* The next row: SQLITE_ROW with *blk and *sum set, else the code that ended
 * the query (SQLITE_DONE, or an error after every row before it). */
int rb_leaf_stream_next(struct rb_leaf_stream *s, uint64_t *blk, uint64_t *sum);

#endif

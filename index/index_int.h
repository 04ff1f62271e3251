/*
 * index_int.h - the index's private state, shared by the files of index/.
 */
#ifndef RFS_INDEX_INT_H
#define RFS_INDEX_INT_H

#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/index.h"

enum rfs_index_stmt {
	IX_LEAF, IX_ITEM, IX_CLAIM, IX_DIRENT, IX_INTERNAL, IX_CHILD, IX_NESTED, IX_UNREADABLE,
	IX_CONFLICT, IX_OUTCOME, IX_LEAF_DECIDE, IX_NSTMT
};

/* Bulk inserts (insert.c): while `bulk` is on, rows of the scan's tables wait
 * here, IX_BULK_ROWS per table, and go in with one multi-row statement.  A
 * waiting row owns copies of its text and blob bytes (`bytes`), so callers'
 * buffers may go at once.  Rows reach SQLite in the order they were added. */
enum { IX_BULK_ROWS = 32, IX_BULK_COLS = 16 };

struct ix_val {
	enum { IXV_NULL, IXV_INT, IXV_TEXT, IXV_BLOB } kind;
	int64_t i;
	const void *p;               /* caller's bytes (before buffering) */
	size_t off, len;             /* the copy in bytes (after) */
};

struct ix_pending {
	unsigned n;                  /* rows waiting */
	struct ix_val v[IX_BULK_ROWS][IX_BULK_COLS];
};

struct rfs_index {
	sqlite3 *db;
	char path[PATH_MAX];
	bool temporary;
	sqlite3_stmt *stmt[IX_NSTMT];
	sqlite3_stmt *many[IX_NSTMT];     /* IX_BULK_ROWS rows per statement */
	unsigned ncols[IX_NSTMT];
	bool bulk;
	bool item_lookup;            /* item_key exists (build_item_lookup) */
	struct ix_pending *pending[IX_NSTMT];
	uint8_t *bytes;
	size_t bytes_len, bytes_cap;
};

rfs_status rfs_index_prepare_inserts(struct rfs_index *ix, struct rfs_error *err);
void rfs_index_finalize_inserts(struct rfs_index *ix);
/* Stores the waiting rows (a no-op outside bulk mode). */
rfs_status rfs_index_flush(struct rfs_index *ix, struct rfs_error *err);
/* Forgets the waiting rows and leaves bulk mode (before a rollback). */
void rfs_index_discard(struct rfs_index *ix);

#endif

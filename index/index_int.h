/*
 * index_int.h - the index's private state, shared by the files of index/.
 */
#ifndef RFS_INDEX_INT_H
#define RFS_INDEX_INT_H

#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "rfs/index.h"

enum rfs_index_stmt {
	IX_LEAF, IX_ITEM, IX_CLAIM, IX_DIRENT, IX_INTERNAL, IX_CHILD, IX_NESTED, IX_UNREADABLE,
	IX_CONFLICT, IX_OUTCOME, IX_LEAF_DECIDE, IX_NSTMT
};

struct rfs_index {
	sqlite3 *db;
	char path[PATH_MAX];
	bool temporary;
	sqlite3_stmt *stmt[IX_NSTMT];
};

rfs_status rfs_index_prepare_inserts(struct rfs_index *ix, struct rfs_error *err);
void rfs_index_finalize_inserts(struct rfs_index *ix);

#endif

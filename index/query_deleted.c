/*
 * query_deleted.c - what `rfsck salvage --deleted` asks of rebuild's evidence
 * index: which blocks of the main area its scan found a valid leaf in (or
 * could not read), so that a salvage after a scan reads only those among the
 * free blocks instead of every one of them.  Read-only: nothing here writes
 * to the index.
 */
#include <sqlite3.h>
#include <string.h>

#include "index_int.h"

rfs_status rfs_index_scanned_leaves(struct rfs_index *ix, bool *covers_all,
				    void (*fn)(void *ctx, uint64_t block), void *ctx,
				    struct rfs_error *err)
{
	*covers_all = false;
	char mode[16];
	bool have_mode, have_done;
	uint64_t done = 0;
	rfs_status st = rfs_index_meta_get(ix, "scan_mode", mode, sizeof(mode), &have_mode, err);
	if (!st)
		st = rfs_index_meta_get_u64(ix, "scan_done", &done, &have_done, err);
	if (st)
		return st;
	/* only a finished scan of every block says "no leaf here" for a free block */
	if (!have_mode || strcmp(mode, "all") != 0 || !have_done || done != 1)
		return RFS_OK;
	sqlite3_stmt *q;
	st = rfs_index_prepare(ix,
		"SELECT block FROM leaf WHERE area = 0 AND valid = 1"
		" UNION SELECT block FROM unreadable ORDER BY 1", &q, err);
	if (st)
		return st;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		fn(ctx, (uint64_t)sqlite3_column_int64(q, 0));
	if (rc != SQLITE_DONE)
		st = rfs_index_fail(ix, "leaf rows", err);
	sqlite3_finalize(q);
	if (!st)
		*covers_all = true;
	return st;
}

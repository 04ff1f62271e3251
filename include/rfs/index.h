/*
 * index.h - rebuild's evidence index: an SQLite database (schema in
 * index/schema.sql, documented in docs/rebuild.md).
 *
 * Everything that talks to SQLite lives in index/: opening and configuring the
 * database, the bulk inserts of the scan (prepared statements, one
 * transaction per batch), and the queries that decide and report.
 *
 * Invariants:
 *  (1) An index is for one image: rfs_index_bind compares the identity string
 *      (size, block size, superblock checksum) with the stored one and empties
 *      the index when they differ, so rows never describe another image.
 *  (2) Inserts happen only between rfs_index_begin and rfs_index_commit; a
 *      batch and its meta('scan_next') commit together (resumable scan).
 *  (3) A temporary index (path NULL) lives in $TMPDIR and is unlinked when
 *      opened: nothing is left behind, even after a kill.
 *  (4) One thread at a time uses an index and its statements (the scan's
 *      reader and worker threads never do): the connection is opened without
 *      SQLite's own mutexes.
 *  (5) Rows added in bulk mode reach the database in the order they were
 *      added, each table's exactly as without bulk mode.
 */
#ifndef RFS_INDEX_H
#define RFS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/format.h"
#include "rfs/status.h"

struct rfs_index;
struct sqlite3;
struct sqlite3_stmt;

rfs_status rfs_index_open(const char *path, struct rfs_index **out, struct rfs_error *err);
void rfs_index_close(struct rfs_index *ix);
struct sqlite3 *rfs_index_db(struct rfs_index *ix);
const char *rfs_index_path(const struct rfs_index *ix);

/* Binds the index to an image identity; *fresh is true when it was emptied
 * (new, or another image's). */
rfs_status rfs_index_bind(struct rfs_index *ix, const char *identity, bool *fresh,
			  struct rfs_error *err);

rfs_status rfs_index_meta_get(struct rfs_index *ix, const char *key, char *buf, size_t len,
			      bool *found, struct rfs_error *err);
rfs_status rfs_index_meta_set(struct rfs_index *ix, const char *key, const char *value,
			      struct rfs_error *err);
rfs_status rfs_index_meta_get_u64(struct rfs_index *ix, const char *key, uint64_t *v,
				  bool *found, struct rfs_error *err);
rfs_status rfs_index_meta_set_u64(struct rfs_index *ix, const char *key, uint64_t v,
				  struct rfs_error *err);

/* Runs SQL without results (several statements allowed). */
rfs_status rfs_index_exec(struct rfs_index *ix, const char *sql, struct rfs_error *err);
/* Prepares a statement; errors carry SQLite's message. */
rfs_status rfs_index_prepare(struct rfs_index *ix, const char *sql, struct sqlite3_stmt **st,
			     struct rfs_error *err);
/* Turns an SQLite result code into an rfs error (RFS_ERR_IO with the message). */
rfs_status rfs_index_fail(struct rfs_index *ix, const char *what, struct rfs_error *err);

rfs_status rfs_index_begin(struct rfs_index *ix, struct rfs_error *err);
/* Commits, storing first the rows bulk mode keeps waiting. */
rfs_status rfs_index_commit(struct rfs_index *ix, struct rfs_error *err);
/* Bulk mode (the scan): rows added with rfs_index_add_* may wait in memory
 * and go in several per statement; they are stored by rfs_index_commit and
 * when bulk mode ends (on: false), and are not seen by queries before that. */
rfs_status rfs_index_bulk(struct rfs_index *ix, bool on, struct rfs_error *err);
/* Rolls the open transaction back, rows waiting in bulk mode included, and
 * ends bulk mode. */
void rfs_index_rollback(struct rfs_index *ix);
/* Deletes every decision (status/reason/win/keep) so they can be made again. */
rfs_status rfs_index_clear_decisions(struct rfs_index *ix, struct rfs_error *err);
/* Runs sql, which must return one row, and stores its first ncol columns as
 * integers in out[0..ncol). */
rfs_status rfs_index_query_u64(struct rfs_index *ix, const char *sql, uint64_t *out, int ncol,
			       struct rfs_error *err);
/* Creates the lookup indexes the decide queries need (after the scan). */
rfs_status rfs_index_build_lookup(struct rfs_index *ix, struct rfs_error *err);
/* The two lookups only damage needs, built (once) before the first query
 * that uses them: dirent_target, the names that point at an object (the
 * "who names this" of a lost directory's '..' probe and the report's paths),
 * and claim_obj, the blocks one file claims (a nested image's extent).
 * A query that runs without them is correct but scans the whole table. */
rfs_status rfs_index_build_target_lookup(struct rfs_index *ix, struct rfs_error *err);
rfs_status rfs_index_build_owner_lookup(struct rfs_index *ix, struct rfs_error *err);
/* item_key, the items by key (rebuild/keyorder.c: needed only when the
 * accepted leaves' key ranges overlap, or by a query for one object's items
 * such as a created stat data's size).  Built once, then a no-op. */
rfs_status rfs_index_build_item_lookup(struct rfs_index *ix, struct rfs_error *err);

/* Rows of the scan (index/insert.c). */
struct rfs_index_leaf {
	uint64_t block;
	int area, valid;
	const char *fault;
	uint32_t nr_items;
	uint64_t checksum;
	bool used;
	uint32_t votes[3], names;
	bool has_key;
	struct rfs_key first_key;
};
struct rfs_index_item {
	uint64_t block;
	uint32_t pos, dir_id, objectid;
	uint64_t offset;
	unsigned type, fmt, len;
	bool is_sd;
	uint32_t sd_mode, sd_mtime;
};
struct rfs_index_dirent {
	uint32_t dir_id, objectid, off, t_dir_id, t_objectid;
	const uint8_t *name;
	size_t name_len;
	unsigned state, fmt, hmask;
	unsigned slot;               /* stored name length, padding included */
	uint64_t block;              /* RFS_NO_BLOCK when synthesized */
	uint32_t pos;
	bool keep;
	const char *why;
};
struct rfs_index_nested {
	uint64_t sb_block, start_byte, block_count;
	uint32_t block_size;
	const char *magic;
	uint64_t root;
	unsigned height;
};

rfs_status rfs_index_add_leaf(struct rfs_index *ix, const struct rfs_index_leaf *l,
			      struct rfs_error *err);
rfs_status rfs_index_add_item(struct rfs_index *ix, const struct rfs_index_item *it,
			      struct rfs_error *err);
rfs_status rfs_index_add_claim(struct rfs_index *ix, uint64_t first, uint64_t count,
			       uint64_t block, uint32_t pos, uint32_t dir_id, uint32_t objectid,
			       uint64_t file_offset, struct rfs_error *err);
rfs_status rfs_index_add_dirent(struct rfs_index *ix, const struct rfs_index_dirent *d,
				struct rfs_error *err);
rfs_status rfs_index_add_internal(struct rfs_index *ix, uint64_t block, unsigned level,
				  unsigned nr_keys, int area, const uint64_t *children,
				  const struct rfs_key *keys, struct rfs_error *err);
rfs_status rfs_index_add_nested(struct rfs_index *ix, const struct rfs_index_nested *n,
				struct rfs_error *err);
rfs_status rfs_index_add_unreadable(struct rfs_index *ix, uint64_t block, const char *error,
				    struct rfs_error *err);
rfs_status rfs_index_add_conflict(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				  uint64_t offset, unsigned type, uint64_t winner, uint64_t loser,
				  const char *reason, struct rfs_error *err);
rfs_status rfs_index_add_outcome(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				 const char *what, const char *detail, struct rfs_error *err);

/* For salvage --deleted (index/query_deleted.c): when the index holds a
 * finished scan of every block, calls fn for each main-area block with a
 * valid leaf row or an unreadable row, in block order, and sets *covers_all;
 * otherwise calls nothing and leaves it false. */
rfs_status rfs_index_scanned_leaves(struct rfs_index *ix, bool *covers_all,
				    void (*fn)(void *ctx, uint64_t block), void *ctx,
				    struct rfs_error *err);

/* Sets a leaf's decision. */
rfs_status rfs_index_leaf_decide(struct rfs_index *ix, uint64_t block, bool accepted,
				 const char *reason, const char *detail, struct rfs_error *err);

#endif

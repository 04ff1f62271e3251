/*
 * insert.c - the scan's bulk inserts: one prepared statement per table,
 * reset and rebound for every row (the caller wraps batches in one
 * transaction with rfs_index_begin/commit).
 */
#include <sqlite3.h>

#include "index_int.h"

static const char *const insert_sql[IX_NSTMT] = {
	[IX_LEAF] = "INSERT OR REPLACE INTO leaf(block, area, valid, fault, nr_items, checksum, used,"
		    " votes_r5, votes_tea, votes_rup, names, k_dir, k_obj, k_off, k_type)"
		    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[IX_ITEM] = "INSERT OR REPLACE INTO item(block, pos, dir_id, objectid, offset, type, fmt, len,"
		    " sd_mode, sd_mtime) VALUES (?,?,?,?,?,?,?,?,?,?)",
	[IX_CLAIM] = "INSERT INTO claim(first, count, block, pos, dir_id, objectid, file_offset)"
		     " VALUES (?,?,?,?,?,?,?)",
	[IX_DIRENT] = "INSERT INTO dirent(dir_id, objectid, off, t_dir_id, t_objectid, name, state,"
		       " fmt, block, pos, hmask, keep, why, slot) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[IX_INTERNAL] = "INSERT OR REPLACE INTO internal(block, level, nr_keys, area)"
			" VALUES (?,?,?,?)",
	[IX_CHILD] = "INSERT INTO internal_child(parent, idx, child, k_dir, k_obj, k_off, k_type)"
		     " VALUES (?,?,?,?,?,?,?)",
	[IX_NESTED] = "INSERT OR REPLACE INTO nested(sb_block, start_byte, block_size, block_count,"
		      " magic, root, height) VALUES (?,?,?,?,?,?,?)",
	[IX_UNREADABLE] = "INSERT OR REPLACE INTO unreadable(block, error) VALUES (?,?)",
	[IX_CONFLICT] = "INSERT INTO conflict(dir_id, objectid, offset, type, winner, loser, reason)"
			" VALUES (?,?,?,?,?,?,?)",
	[IX_OUTCOME] = "INSERT INTO outcome(dir_id, objectid, what, detail) VALUES (?,?,?,?)",
	[IX_LEAF_DECIDE] = "UPDATE leaf SET status = ?, reason = ?, detail = ? WHERE block = ?",
};

rfs_status rfs_index_prepare_inserts(struct rfs_index *ix, struct rfs_error *err)
{
	for (int i = 0; i < IX_NSTMT; i++) {
		rfs_status st = rfs_index_prepare(ix, insert_sql[i], &ix->stmt[i], err);
		if (st)
			return st;
	}
	return RFS_OK;
}

void rfs_index_finalize_inserts(struct rfs_index *ix)
{
	for (int i = 0; i < IX_NSTMT; i++) {
		sqlite3_finalize(ix->stmt[i]);
		ix->stmt[i] = NULL;
	}
}

static rfs_status run(struct rfs_index *ix, sqlite3_stmt *s, const char *what,
		      struct rfs_error *err)
{
	int rc = sqlite3_step(s);
	rfs_status st = rc == SQLITE_DONE ? RFS_OK : rfs_index_fail(ix, what, err);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return st;
}

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
	sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

rfs_status rfs_index_add_leaf(struct rfs_index *ix, const struct rfs_index_leaf *l,
			      struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_LEAF];
	bind_u64(s, 1, l->block);
	sqlite3_bind_int(s, 2, l->area);
	sqlite3_bind_int(s, 3, l->valid);
	if (l->fault)
		sqlite3_bind_text(s, 4, l->fault, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 5, (int)l->nr_items);
	bind_u64(s, 6, l->checksum);
	sqlite3_bind_int(s, 7, l->used);
	for (int i = 0; i < 3; i++)
		sqlite3_bind_int(s, 8 + i, (int)l->votes[i]);
	sqlite3_bind_int(s, 11, (int)l->names);
	if (l->has_key) {
		bind_u64(s, 12, l->first_key.dir_id);
		bind_u64(s, 13, l->first_key.objectid);
		bind_u64(s, 14, l->first_key.offset);
		sqlite3_bind_int(s, 15, l->first_key.type);
	}
	return run(ix, s, "leaf", err);
}

rfs_status rfs_index_add_item(struct rfs_index *ix, const struct rfs_index_item *it,
			      struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_ITEM];
	bind_u64(s, 1, it->block);
	sqlite3_bind_int(s, 2, (int)it->pos);
	bind_u64(s, 3, it->dir_id);
	bind_u64(s, 4, it->objectid);
	bind_u64(s, 5, it->offset);
	sqlite3_bind_int(s, 6, (int)it->type);
	sqlite3_bind_int(s, 7, (int)it->fmt);
	sqlite3_bind_int(s, 8, (int)it->len);
	if (it->is_sd) {
		bind_u64(s, 9, it->sd_mode);
		bind_u64(s, 10, it->sd_mtime);
	}
	return run(ix, s, "item", err);
}

rfs_status rfs_index_add_claim(struct rfs_index *ix, uint64_t first, uint64_t count,
			       uint64_t block, uint32_t pos, uint32_t dir_id, uint32_t objectid,
			       uint64_t file_offset, struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_CLAIM];
	bind_u64(s, 1, first);
	bind_u64(s, 2, count);
	bind_u64(s, 3, block);
	sqlite3_bind_int(s, 4, (int)pos);
	bind_u64(s, 5, dir_id);
	bind_u64(s, 6, objectid);
	bind_u64(s, 7, file_offset);
	return run(ix, s, "claim", err);
}

rfs_status rfs_index_add_dirent(struct rfs_index *ix, const struct rfs_index_dirent *d,
				struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_DIRENT];
	bind_u64(s, 1, d->dir_id);
	bind_u64(s, 2, d->objectid);
	bind_u64(s, 3, d->off);
	bind_u64(s, 4, d->t_dir_id);
	bind_u64(s, 5, d->t_objectid);
	sqlite3_bind_blob(s, 6, d->name_len ? (const void *)d->name : "", (int)d->name_len,
			  SQLITE_STATIC);
	sqlite3_bind_int(s, 7, (int)d->state);
	sqlite3_bind_int(s, 8, (int)d->fmt);
	if (d->block != RFS_NO_BLOCK) {
		bind_u64(s, 9, d->block);
		sqlite3_bind_int(s, 10, (int)d->pos);
	}
	sqlite3_bind_int(s, 11, (int)d->hmask);
	sqlite3_bind_int(s, 12, d->keep);
	if (d->why)
		sqlite3_bind_text(s, 13, d->why, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 14, (int)d->slot);
	return run(ix, s, "dirent", err);
}

rfs_status rfs_index_add_internal(struct rfs_index *ix, uint64_t block, unsigned level,
				  unsigned nr_keys, int area, const uint64_t *children,
				  const struct rfs_key *keys, struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_INTERNAL];
	bind_u64(s, 1, block);
	sqlite3_bind_int(s, 2, (int)level);
	sqlite3_bind_int(s, 3, (int)nr_keys);
	sqlite3_bind_int(s, 4, area);
	rfs_status st = run(ix, s, "internal", err);
	for (unsigned i = 0; !st && i <= nr_keys; i++) {
		s = ix->stmt[IX_CHILD];
		bind_u64(s, 1, block);
		sqlite3_bind_int(s, 2, (int)i);
		bind_u64(s, 3, children[i]);
		if (i > 0) {
			bind_u64(s, 4, keys[i - 1].dir_id);
			bind_u64(s, 5, keys[i - 1].objectid);
			bind_u64(s, 6, keys[i - 1].offset);
			sqlite3_bind_int(s, 7, keys[i - 1].type);
		}
		st = run(ix, s, "internal child", err);
	}
	return st;
}

rfs_status rfs_index_add_nested(struct rfs_index *ix, const struct rfs_index_nested *n,
				struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_NESTED];
	bind_u64(s, 1, n->sb_block);
	bind_u64(s, 2, n->start_byte);
	bind_u64(s, 3, n->block_size);
	bind_u64(s, 4, n->block_count);
	sqlite3_bind_text(s, 5, n->magic, -1, SQLITE_STATIC);
	bind_u64(s, 6, n->root);
	sqlite3_bind_int(s, 7, (int)n->height);
	return run(ix, s, "nested", err);
}

rfs_status rfs_index_add_unreadable(struct rfs_index *ix, uint64_t block, const char *error,
				    struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_UNREADABLE];
	bind_u64(s, 1, block);
	sqlite3_bind_text(s, 2, error, -1, SQLITE_STATIC);
	return run(ix, s, "unreadable", err);
}

rfs_status rfs_index_add_conflict(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				  uint64_t offset, unsigned type, uint64_t winner, uint64_t loser,
				  const char *reason, struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_CONFLICT];
	bind_u64(s, 1, dir_id);
	bind_u64(s, 2, objectid);
	bind_u64(s, 3, offset);
	sqlite3_bind_int(s, 4, (int)type);
	if (winner != RFS_NO_BLOCK)
		bind_u64(s, 5, winner);
	bind_u64(s, 6, loser);
	sqlite3_bind_text(s, 7, reason, -1, SQLITE_STATIC);
	return run(ix, s, "conflict", err);
}

rfs_status rfs_index_add_outcome(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				 const char *what, const char *detail, struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_OUTCOME];
	bind_u64(s, 1, dir_id);
	bind_u64(s, 2, objectid);
	sqlite3_bind_text(s, 3, what, -1, SQLITE_STATIC);
	if (detail)
		sqlite3_bind_text(s, 4, detail, -1, SQLITE_TRANSIENT);
	return run(ix, s, "outcome", err);
}

rfs_status rfs_index_leaf_decide(struct rfs_index *ix, uint64_t block, bool accepted,
				 const char *reason, const char *detail, struct rfs_error *err)
{
	sqlite3_stmt *s = ix->stmt[IX_LEAF_DECIDE];
	sqlite3_bind_text(s, 1, accepted ? "accepted" : "rejected", -1, SQLITE_STATIC);
	if (reason)
		sqlite3_bind_text(s, 2, reason, -1, SQLITE_STATIC);
	if (detail)
		sqlite3_bind_text(s, 3, detail, -1, SQLITE_TRANSIENT);
	bind_u64(s, 4, block);
	return run(ix, s, "decision", err);
}

/*
 * insert.c - the scan's bulk inserts: one prepared statement per table, reset
 * and rebound for every row, and in bulk mode a second one that inserts
 * IX_BULK_ROWS rows at once (SQLite's per-statement work, not the B-tree,
 * was most of the cost of a row).  The caller wraps batches in one
 * transaction with rfs_index_begin/commit.
 *
 * Every row goes through put_row as an array of values, so the two paths
 * bind the same values in the same order.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index_int.h"

static const char *const insert_sql[IX_NSTMT] = {
	[IX_LEAF] = "INSERT OR REPLACE INTO leaf(block, area, valid, fault, nr_items, checksum, used,"
		    " votes_r5, votes_tea, votes_rup, names, k_dir, k_obj, k_off, k_type)"
		    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[IX_ITEM] = "INSERT OR REPLACE INTO item(block, pos, dir_id, objectid, offset, type, fmt, len,"
		    " sd_mode, sd_mtime, win) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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

/* The multi-row form of a single-row "INSERT ... VALUES (?,...)". */
static char *many_sql(const char *one, unsigned *ncols)
{
	const char *values = strstr(one, "VALUES (");
	if (!values)
		return NULL;
	const char *tuple = values + 7;
	size_t tlen = strlen(tuple);
	*ncols = 0;
	for (const char *q = tuple; *q; q++)
		*ncols += *q == '?';
	size_t len = strlen(one) + (size_t)(IX_BULK_ROWS - 1) * (tlen + 1) + 1;
	char *sql = malloc(len);
	if (!sql)
		return NULL;
	char *at = sql + sprintf(sql, "%s", one);
	for (int i = 1; i < IX_BULK_ROWS; i++)
		at += sprintf(at, ",%s", tuple);
	return sql;
}

rfs_status rfs_index_prepare_inserts(struct rfs_index *ix, struct rfs_error *err)
{
	for (int i = 0; i < IX_NSTMT; i++) {
		rfs_status st = rfs_index_prepare(ix, insert_sql[i], &ix->stmt[i], err);
		if (st)
			return st;
		if (strncmp(insert_sql[i], "INSERT", 6) != 0)
			continue;
		char *sql = many_sql(insert_sql[i], &ix->ncols[i]);
		if (!sql || ix->ncols[i] > IX_BULK_COLS) {
			free(sql);
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "bulk insert statement");
		}
		st = rfs_index_prepare(ix, sql, &ix->many[i], err);
		free(sql);
		if (st)
			return st;
	}
	return RFS_OK;
}

void rfs_index_finalize_inserts(struct rfs_index *ix)
{
	for (int i = 0; i < IX_NSTMT; i++) {
		sqlite3_finalize(ix->stmt[i]);
		sqlite3_finalize(ix->many[i]);
		ix->stmt[i] = ix->many[i] = NULL;
		free(ix->pending[i]);
		ix->pending[i] = NULL;
	}
	free(ix->bytes);
	ix->bytes = NULL;
	ix->bytes_len = ix->bytes_cap = 0;
}

/* Binds n values from parameter `first` on; buffered values point into
 * ix->bytes, direct ones at the caller's bytes (which outlive the step). */
static void bind_vals(struct rfs_index *ix, sqlite3_stmt *s, int first, const struct ix_val *v,
		      unsigned n, bool buffered)
{
	for (unsigned c = 0; c < n; c++) {
		const void *p = buffered ? (const void *)(ix->bytes + v[c].off) : v[c].p;
		switch (v[c].kind) {
		case IXV_NULL: sqlite3_bind_null(s, first + (int)c); break;
		case IXV_INT: sqlite3_bind_int64(s, first + (int)c, v[c].i); break;
		case IXV_TEXT:
			sqlite3_bind_text(s, first + (int)c, p, (int)v[c].len, SQLITE_STATIC);
			break;
		case IXV_BLOB:
			sqlite3_bind_blob(s, first + (int)c, v[c].len ? p : "", (int)v[c].len,
					  SQLITE_STATIC);
			break;
		}
	}
}

static rfs_status step(struct rfs_index *ix, sqlite3_stmt *s, const char *what,
		       struct rfs_error *err)
{
	int rc = sqlite3_step(s);
	rfs_status st = rc == SQLITE_DONE ? RFS_OK : rfs_index_fail(ix, what, err);
	sqlite3_reset(s);
	return st;
}

static rfs_status flush_table(struct rfs_index *ix, int t, struct rfs_error *err)
{
	struct ix_pending *pd = ix->pending[t];
	if (!pd || pd->n == 0)
		return RFS_OK;
	rfs_status st = RFS_OK;
	if (pd->n == IX_BULK_ROWS) {
		for (unsigned r = 0; r < pd->n; r++)
			bind_vals(ix, ix->many[t], 1 + (int)(r * ix->ncols[t]), pd->v[r], ix->ncols[t], true);
		st = step(ix, ix->many[t], "bulk insert", err);
	} else {
		for (unsigned r = 0; !st && r < pd->n; r++) {
			bind_vals(ix, ix->stmt[t], 1, pd->v[r], ix->ncols[t], true);
			st = step(ix, ix->stmt[t], "insert", err);
		}
	}
	pd->n = 0;
	return st;
}

rfs_status rfs_index_flush(struct rfs_index *ix, struct rfs_error *err)
{
	rfs_status st = RFS_OK;
	for (int t = 0; !st && t < IX_NSTMT; t++)
		st = flush_table(ix, t, err);
	ix->bytes_len = 0;
	return st;
}

void rfs_index_discard(struct rfs_index *ix)
{
	for (int t = 0; t < IX_NSTMT; t++)
		if (ix->pending[t])
			ix->pending[t]->n = 0;
	ix->bytes_len = 0;
	ix->bulk = false;
}

rfs_status rfs_index_bulk(struct rfs_index *ix, bool on, struct rfs_error *err)
{
	rfs_status st = on ? RFS_OK : rfs_index_flush(ix, err);
	ix->bulk = on;
	return st;
}

/* Copies a value's bytes into ix->bytes (buffered rows own their bytes). */
static rfs_status keep_bytes(struct rfs_index *ix, struct ix_val *v, struct rfs_error *err)
{
	if (v->kind != IXV_TEXT && v->kind != IXV_BLOB)
		return RFS_OK;
	if (ix->bytes_cap - ix->bytes_len < v->len) {
		size_t cap = ix->bytes_cap ? ix->bytes_cap : 65536;
		while (cap - ix->bytes_len < v->len)
			cap *= 2;
		uint8_t *nb = realloc(ix->bytes, cap);
		if (!nb)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "index row bytes");
		ix->bytes = nb;
		ix->bytes_cap = cap;
	}
	if (v->len)
		memcpy(ix->bytes + ix->bytes_len, v->p, v->len);
	v->off = ix->bytes_len;
	ix->bytes_len += v->len;
	return RFS_OK;
}

/* One row of table t: stored now, or (bulk mode) kept until its table has
 * IX_BULK_ROWS rows waiting.  The byte copies go when every table has been
 * flushed (rfs_index_flush), which bounds them by a few full batches. */
static rfs_status put_row(struct rfs_index *ix, int t, struct ix_val *v, unsigned n,
			  const char *what, struct rfs_error *err)
{
	if (!ix->bulk || !ix->many[t]) {
		bind_vals(ix, ix->stmt[t], 1, v, n, false);
		return step(ix, ix->stmt[t], what, err);
	}
	if (!ix->pending[t] && !(ix->pending[t] = calloc(1, sizeof(struct ix_pending))))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "index rows");
	struct ix_pending *pd = ix->pending[t];
	for (unsigned c = 0; c < n; c++) {
		rfs_status st = keep_bytes(ix, &v[c], err);
		if (st)
			return st;
		pd->v[pd->n][c] = v[c];
	}
	if (++pd->n < IX_BULK_ROWS)
		return RFS_OK;
	rfs_status st = flush_table(ix, t, err);
	if (!st && ix->bytes_len > ((size_t)1 << 20))
		st = rfs_index_flush(ix, err);
	return st;
}

static struct ix_val vint(int64_t i)
{
	return (struct ix_val){ .kind = IXV_INT, .i = i };
}

static struct ix_val vu64(uint64_t u)
{
	return vint((int64_t)u);
}

static struct ix_val vnull(void)
{
	return (struct ix_val){ .kind = IXV_NULL };
}

static struct ix_val vtext(const char *t)
{
	if (!t)
		return vnull();
	return (struct ix_val){ .kind = IXV_TEXT, .p = t, .len = strlen(t) };
}

rfs_status rfs_index_add_leaf(struct rfs_index *ix, const struct rfs_index_leaf *l,
			      struct rfs_error *err)
{
	struct ix_val v[15] = {
		vu64(l->block), vint(l->area), vint(l->valid), vtext(l->fault),
		vint(l->nr_items), vu64(l->checksum), vint(l->used),
		vint(l->votes[0]), vint(l->votes[1]), vint(l->votes[2]), vint(l->names),
		vnull(), vnull(), vnull(), vnull(),
	};
	if (l->has_key) {
		v[11] = vu64(l->first_key.dir_id);
		v[12] = vu64(l->first_key.objectid);
		v[13] = vu64(l->first_key.offset);
		v[14] = vint(l->first_key.type);
	}
	return put_row(ix, IX_LEAF, v, 15, "leaf", err);
}

rfs_status rfs_index_add_item(struct rfs_index *ix, const struct rfs_index_item *it,
			      struct rfs_error *err)
{
	/* win = 1: decide takes it away from the few items that lose (their
	 * leaf rejected, or a stronger copy of their key), which costs far less
	 * than giving it to every item of every accepted leaf */
	struct ix_val v[11] = {
		vu64(it->block), vint(it->pos), vu64(it->dir_id), vu64(it->objectid),
		vu64(it->offset), vint(it->type), vint(it->fmt), vint(it->len),
		it->is_sd ? vu64(it->sd_mode) : vnull(), it->is_sd ? vu64(it->sd_mtime) : vnull(),
		vint(1),
	};
	return put_row(ix, IX_ITEM, v, 11, "item", err);
}

rfs_status rfs_index_add_claim(struct rfs_index *ix, uint64_t first, uint64_t count,
			       uint64_t block, uint32_t pos, uint32_t dir_id, uint32_t objectid,
			       uint64_t file_offset, struct rfs_error *err)
{
	struct ix_val v[7] = {
		vu64(first), vu64(count), vu64(block), vint(pos), vu64(dir_id), vu64(objectid),
		vu64(file_offset),
	};
	return put_row(ix, IX_CLAIM, v, 7, "claim", err);
}

rfs_status rfs_index_add_dirent(struct rfs_index *ix, const struct rfs_index_dirent *d,
				struct rfs_error *err)
{
	bool placed = d->block != RFS_NO_BLOCK;
	struct ix_val v[14] = {
		vu64(d->dir_id), vu64(d->objectid), vu64(d->off), vu64(d->t_dir_id),
		vu64(d->t_objectid),
		{ .kind = IXV_BLOB, .p = d->name, .len = d->name_len },
		vint(d->state), vint(d->fmt),
		placed ? vu64(d->block) : vnull(), placed ? vint(d->pos) : vnull(),
		vint(d->hmask), vint(d->keep), vtext(d->why), vint(d->slot),
	};
	return put_row(ix, IX_DIRENT, v, 14, "dirent", err);
}

rfs_status rfs_index_add_internal(struct rfs_index *ix, uint64_t block, unsigned level,
				  unsigned nr_keys, int area, const uint64_t *children,
				  const struct rfs_key *keys, struct rfs_error *err)
{
	struct ix_val v[7] = { vu64(block), vint(level), vint(nr_keys), vint(area) };
	rfs_status st = put_row(ix, IX_INTERNAL, v, 4, "internal", err);
	for (unsigned i = 0; !st && i <= nr_keys; i++) {
		struct ix_val c[7] = { vu64(block), vint(i), vu64(children[i]),
				       vnull(), vnull(), vnull(), vnull() };
		if (i > 0) {
			c[3] = vu64(keys[i - 1].dir_id);
			c[4] = vu64(keys[i - 1].objectid);
			c[5] = vu64(keys[i - 1].offset);
			c[6] = vint(keys[i - 1].type);
		}
		st = put_row(ix, IX_CHILD, c, 7, "internal child", err);
	}
	return st;
}

rfs_status rfs_index_add_nested(struct rfs_index *ix, const struct rfs_index_nested *n,
				struct rfs_error *err)
{
	struct ix_val v[7] = {
		vu64(n->sb_block), vu64(n->start_byte), vu64(n->block_size), vu64(n->block_count),
		vtext(n->magic), vu64(n->root), vint(n->height),
	};
	return put_row(ix, IX_NESTED, v, 7, "nested", err);
}

rfs_status rfs_index_add_unreadable(struct rfs_index *ix, uint64_t block, const char *error,
				    struct rfs_error *err)
{
	struct ix_val v[2] = { vu64(block), vtext(error) };
	return put_row(ix, IX_UNREADABLE, v, 2, "unreadable", err);
}

rfs_status rfs_index_add_conflict(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				  uint64_t offset, unsigned type, uint64_t winner, uint64_t loser,
				  const char *reason, struct rfs_error *err)
{
	struct ix_val v[7] = {
		vu64(dir_id), vu64(objectid), vu64(offset), vint(type),
		winner != RFS_NO_BLOCK ? vu64(winner) : vnull(), vu64(loser), vtext(reason),
	};
	return put_row(ix, IX_CONFLICT, v, 7, "conflict", err);
}

rfs_status rfs_index_add_outcome(struct rfs_index *ix, uint32_t dir_id, uint32_t objectid,
				 const char *what, const char *detail, struct rfs_error *err)
{
	struct ix_val v[4] = { vu64(dir_id), vu64(objectid), vtext(what), vtext(detail) };
	return put_row(ix, IX_OUTCOME, v, 4, "outcome", err);
}

rfs_status rfs_index_leaf_decide(struct rfs_index *ix, uint64_t block, bool accepted,
				 const char *reason, const char *detail, struct rfs_error *err)
{
	struct ix_val v[4] = { vtext(accepted ? "accepted" : "rejected"), vtext(reason),
			       vtext(detail), vu64(block) };
	return put_row(ix, IX_LEAF_DECIDE, v, 4, "decision", err);
}

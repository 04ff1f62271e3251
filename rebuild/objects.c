/*
 * objects.c - the object table (temp.obj) that namespace.c and emit.c read:
 * one row per (dir_id, objectid) with a winning item, built from a stream of
 * those items in key order, one group per object.
 *
 * Columns (the rules namespace.c relies on):
 *   has_sd     a stat data item won;
 *   sd_dir     the stat data's mode says directory (NULL without a stat data
 *              or with one that did not decode);
 *   is_dir     the stat data's type, unless every other item says the other
 *              one (a flipped mode: check's MODE_WRONG, emit rewrites it):
 *                - directory mode, file bodies and no directory item: 2, a
 *                  directory only if some ".." names it (namespace.c decides);
 *                - file mode, directory items and no file body: 1;
 *                - no stat data: 1 when there is a directory item;
 *   create_sd  0, or 1 (file) / 2 (directory) when emit must create the stat
 *              data.
 * Safe links (dir_id 0xFFFFFFFF) are no objects: rebuild makes them moot.
 *
 * Two streams feed it (keyorder.c): the accepted leaves in first-key order
 * when their ranges do not overlap, else the index item_key.  Either way the
 * rows must come grouped by object; rb_objects_add checks that they do.
 */
#include <sqlite3.h>
#include <stdlib.h>

#include "objects.h"

enum { MODE_FMT = 0170000, MODE_DIR = 0040000, MODE_REG = 0100000 };

static const char create_sql[] =
	"DROP TABLE IF EXISTS temp.obj;"
	"CREATE TEMP TABLE obj(dir_id INTEGER, objectid INTEGER, is_dir INTEGER, has_sd INTEGER,"
	" sd_dir INTEGER, create_sd INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY(dir_id, objectid)) WITHOUT ROWID;";

rfs_status rb_objects_begin(struct rb_ctx *c, struct rb_objects *w, struct rfs_error *err)
{
	*w = (struct rb_objects){ .c = c };
	rfs_status st = rfs_index_exec(c->ix, create_sql, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"INSERT INTO obj(dir_id, objectid, is_dir, has_sd, sd_dir, create_sd)"
			" VALUES (?, ?, ?, ?, ?, ?)", &w->ins, err);
	return st;
}

/* The group just ended becomes a row. */
static rfs_status flush(struct rb_objects *w, struct rfs_error *err)
{
	if (!w->open)
		return RFS_OK;
	w->open = false;
	if (w->d == 0xFFFFFFFFu)
		return RFS_OK;
	int is_dir, sd_dir = -1;
	if (w->has_sd && w->sd_known) {
		unsigned fmt = w->sd_mode & MODE_FMT;
		sd_dir = fmt == MODE_DIR;
		if (fmt == MODE_DIR)
			is_dir = !w->has_dir_item && w->has_body ? 2 : 1;
		else if (fmt == MODE_REG)
			is_dir = w->has_dir_item && !w->has_body;
		else
			is_dir = 0;
	} else if (w->has_sd) {
		is_dir = 0;
	} else {
		is_dir = w->has_dir_item;
	}
	sqlite3_stmt *q = w->ins;
	sqlite3_bind_int64(q, 1, w->d);
	sqlite3_bind_int64(q, 2, w->o);
	sqlite3_bind_int(q, 3, is_dir);
	sqlite3_bind_int(q, 4, w->has_sd);
	if (sd_dir < 0)
		sqlite3_bind_null(q, 5);
	else
		sqlite3_bind_int(q, 5, sd_dir);
	sqlite3_bind_int(q, 6, w->has_sd ? 0 : is_dir ? 2 : 1);
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? RFS_OK : rfs_index_fail(w->c->ix, "object table", err);
}

rfs_status rb_objects_add(struct rb_objects *w, uint32_t d, uint32_t o, unsigned type,
			  int64_t sd_mode, struct rfs_error *err)
{
	uint64_t k = ((uint64_t)d << 32) | o;
	if (!w->open || k != w->key) {
		if (w->open && k < w->key)
			return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
					     "object table: items of %u %u came after %u %u", d, o,
					     w->d, w->o);
		rfs_status st = flush(w, err);
		if (st)
			return st;
		w->open = true;
		w->key = k;
		w->d = d;
		w->o = o;
		w->has_sd = w->sd_known = w->has_dir_item = w->has_body = false;
		w->sd_mode = 0;
	}
	if (type == RFS_TYPE_STAT) {
		/* one stat data per object among winners; a fuzzed key with
		 * type 0 and another offset makes two, and the larger mode
		 * counts (as SQL's max() did before this table was built in C) */
		w->has_sd = true;
		if (sd_mode >= 0 && (!w->sd_known || (uint32_t)sd_mode > w->sd_mode)) {
			w->sd_known = true;
			w->sd_mode = (uint32_t)sd_mode;
		}
	} else if (type == RFS_TYPE_DIRENTRY) {
		w->has_dir_item = true;
	} else if (type == RFS_TYPE_DIRECT || type == RFS_TYPE_INDIRECT) {
		w->has_body = true;
	}
	return RFS_OK;
}

rfs_status rb_objects_end(struct rb_objects *w, struct rfs_error *err)
{
	rfs_status st = flush(w, err);
	sqlite3_finalize(w->ins);
	w->ins = NULL;
	return st;
}

void rb_objects_abandon(struct rb_objects *w)
{
	sqlite3_finalize(w->ins);
	w->ins = NULL;
	w->open = false;
}

rfs_status rb_objects_from_index(struct rb_ctx *c, struct rfs_error *err)
{
	sqlite3_stmt *q = NULL;
	struct rb_objects w;
	rfs_status st = rfs_index_build_item_lookup(c->ix, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"SELECT dir_id, objectid, type, sd_mode FROM item WHERE win = 1"
			" ORDER BY dir_id, objectid", &q, err);
	if (!st)
		st = rfs_index_begin(c->ix, err);   /* one commit for all rows */
	if (st) {
		sqlite3_finalize(q);
		return st;
	}
	st = rb_objects_begin(c, &w, err);
	int rc = SQLITE_DONE;
	while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW)
		st = rb_objects_add(&w, (uint32_t)sqlite3_column_int64(q, 0),
				    (uint32_t)sqlite3_column_int64(q, 1),
				    (unsigned)sqlite3_column_int64(q, 2),
				    sqlite3_column_type(q, 3) == SQLITE_NULL ? -1 :
				    sqlite3_column_int64(q, 3), err);
	if (!st && rc != SQLITE_DONE)
		st = rfs_index_fail(c->ix, "object table: items", err);
	sqlite3_finalize(q);
	if (!st)
		st = rb_objects_end(&w, err);
	else
		rb_objects_abandon(&w);
	if (!st)
		return rfs_index_commit(c->ix, err);
	rfs_index_rollback(c->ix);
	return st;
}

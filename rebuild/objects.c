/*
 * objects.c - rebuild's object table (objmap.h, c->objs): one entry per
 * (dir_id, objectid) with a winning item, built from a stream of those items
 * in key order, one group per object.
 *
 * The rules behind the flags (namespace.c relies on them):
 *   OBJ_SD       a stat data item won;
 *   OBJ_SD_DIR   the stat data's mode says directory;
 *   OBJ_DIR      the stat data's type, unless every other item says the other
 *                one (a flipped mode: check's MODE_WRONG, emit rewrites it):
 *                  - directory mode, file bodies and no directory item:
 *                    OBJ_DIR | OBJ_DIR_UNSURE, a directory only if some ".."
 *                    names it (namespace.c decides);
 *                  - file mode, directory items and no file body: a directory;
 *                  - no stat data: a directory when there is a directory item.
 * Safe links (dir_id 0xFFFFFFFF) are no objects: rebuild makes them moot.
 *
 * Two streams feed it (keyorder.c): the accepted leaves in first-key order
 * when their ranges do not overlap, else the index item_key.  Either way the
 * rows must come grouped by object; rb_objects_add checks that they do.
 */
#include <sqlite3.h>

#include "objects.h"

enum { MODE_FMT = 0170000, MODE_DIR = 0040000, MODE_REG = 0100000 };

void rb_objects_begin(struct rb_ctx *c, struct rb_objects *w)
{
	*w = (struct rb_objects){ .c = c };
	rb_objmap_reset(&c->objs);
}

/* The group just ended becomes an entry. */
static rfs_status flush(struct rb_objects *w, struct rfs_error *err)
{
	if (!w->open)
		return RFS_OK;
	w->open = false;
	if (w->d == 0xFFFFFFFFu)
		return RFS_OK;
	uint8_t f = 0;
	if (w->has_sd && w->sd_known) {
		unsigned fmt = w->sd_mode & MODE_FMT;
		if (fmt == MODE_DIR)
			f = OBJ_SD_DIR | OBJ_DIR |
			    (!w->has_dir_item && w->has_body ? OBJ_DIR_UNSURE : 0);
		else if (fmt == MODE_REG && w->has_dir_item && !w->has_body)
			f = OBJ_DIR;
	} else if (!w->has_sd && w->has_dir_item) {
		f = OBJ_DIR;
	}
	if (w->has_sd)
		f |= OBJ_SD;
	return rb_objmap_append(&w->c->objs, w->key, f, err);
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
	return flush(w, err);
}

void rb_objects_abandon(struct rb_objects *w)
{
	w->open = false;
	rb_objmap_reset(&w->c->objs);
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
	if (st)
		return st;
	rb_objects_begin(c, &w);
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
	if (st)
		rb_objects_abandon(&w);
	return st;
}

/*
 * keyorder.c - the items of the accepted leaves in key order, without an
 * index over all the items when the leaves allow it.
 *
 * A tree that lost only its internal nodes (the common case) leaves behind
 * leaves whose key ranges do not overlap.  Then key order is the accepted
 * leaves in the order of their first keys, each leaf's items in position
 * order: a sort of the leaves, not of the items (on bench-32g 0.3 M leaves
 * against 2.2 M items, whose index item_key took a second to build, and
 * whose GROUP BY for the objects another).
 *
 * rb_keyorder_probe reads that stream once and trusts it only if it proves
 * itself: every key strictly greater than the one before and every item
 * still a winner.  While reading it fills the object table (objects.c).
 * It is not tried when an accepted leaf was only partly valid (its items
 * stand alone, some left out).  When it holds (c->key_ordered):
 *   - no key is in two accepted leaves, so select.c has no winners to rank;
 *   - the object table (c->objs) is complete;
 *   - emit.c walks the leaves of rb_keyorder_leaves_sql and takes the items
 *     from the blocks, which it reads anyway, checked against the scan's
 *     checksum: no row per item, no second validation.
 * When it does not, nothing of it is kept and the general path runs: item_key
 * is built, keys found in several leaves are ranked, the object table is
 * built from item_key.  The two paths give the same rows (tests/integration
 * test_rebuild_keyorder: every image rebuilt both ways, the results compared).
 *
 * Invariant: while c->key_ordered, temp.lorder holds every accepted leaf
 * once (block, scan checksum), seq ascending with the leaves' first keys;
 * every accepted leaf was fully valid; and every item of an accepted leaf
 * wins, except the root's when namespace.c sets them aside
 * (c->root_items_aside), which emit.c skips.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "keyorder.h"
#include "objects.h"

const char rb_keyorder_leaves_sql[] =
	"SELECT block, checksum FROM lorder ORDER BY seq";

static const char lorder_sql[] =
	"DROP TABLE IF EXISTS temp.lorder;"
	"CREATE TEMP TABLE lorder(seq INTEGER PRIMARY KEY, block INTEGER NOT NULL,"
	" checksum INTEGER NOT NULL);"
	"INSERT INTO lorder(block, checksum) SELECT block, checksum FROM leaf"
	" WHERE status = 'accepted' ORDER BY k_dir, k_obj, k_off, k_type, block;";

rfs_status rb_keyorder_probe(struct rb_ctx *c, struct rfs_error *err)
{
	c->key_ordered = false;
	if (getenv("RFSCK_REBUILD_GENERAL"))
		return RFS_OK;   /* tests: the general path, on images that would not need it */
	uint64_t partly = 0;
	rfs_status st = rfs_index_query_u64(c->ix,
		"SELECT EXISTS (SELECT 1 FROM leaf WHERE status = 'accepted' AND valid <> 1)",
		&partly, 1, err);
	if (st || partly)
		return st;
	sqlite3_stmt *q = NULL;
	struct rb_objects w;
	rb_objects_begin(c, &w);
	if ((st = rfs_index_begin(c->ix, err)))
		return st;
	st = rfs_index_exec(c->ix, lorder_sql, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"SELECT i.dir_id, i.objectid, i.offset, i.type, i.sd_mode, i.win FROM lorder o"
			" CROSS JOIN item i ON i.block = o.block ORDER BY o.seq, i.pos", &q, err);
	bool ordered = true, have_prev = false;
	/* rfs_key_cmp orders as SQL's ORDER BY dir_id, objectid, offset, type,
	 * the order every cursor of emit.c uses */
	struct rfs_key prev = { 0 }, k;
	int rc = SQLITE_DONE;
	while (!st && ordered && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		k = (struct rfs_key){ .dir_id = (uint32_t)sqlite3_column_int64(q, 0),
				      .objectid = (uint32_t)sqlite3_column_int64(q, 1),
				      .offset = (uint64_t)sqlite3_column_int64(q, 2),
				      .type = (uint8_t)sqlite3_column_int64(q, 3) };
		if (sqlite3_column_int64(q, 5) != 1 || (have_prev && rfs_key_cmp(&prev, &k) >= 0)) {
			ordered = false;
			break;
		}
		prev = k;
		have_prev = true;
		st = rb_objects_add(&w, k.dir_id, k.objectid, k.type,
				    sqlite3_column_type(q, 4) == SQLITE_NULL ? -1 :
				    sqlite3_column_int64(q, 4), err);
	}
	if (!st && ordered && rc != SQLITE_DONE)
		st = rfs_index_fail(c->ix, "accepted leaves in key order", err);
	sqlite3_finalize(q);
	if (!st && ordered) {
		st = rb_objects_end(&w, err);
		if (!st)
			st = rfs_index_commit(c->ix, err);
		else
			rfs_index_rollback(c->ix);
		c->key_ordered = !st;
		return st;
	}
	rb_objects_abandon(&w);
	if (st) {
		rfs_index_rollback(c->ix);
		return st;
	}
	/* out of order: the general path builds the object table again */
	return rfs_index_commit(c->ix, err);
}

/*
 * emit.c - stage 4 of rebuild: the new tree, item by item in key order, into
 * the tree builder (tree_build.c).
 *
 * Three sorted cursors are merged by object key:
 *   items   winning stat data and body items (direct/indirect) of objects
 *           whose type matches (no file body under a directory stat data):
 *           rows of the index item_key, or, when the accepted leaves are in
 *           key order (keyorder.c), the item heads of those leaves read in
 *           turn;
 *   dirents the names namespace.c kept, grouped back into the directory
 *           items they came from (a name that moved or was added joins the
 *           current item); so an untouched directory item is re-encoded byte
 *           for byte and its leaf can stay in place;
 *   sds     objects that get a created stat data (no OBJ_SD in the object
 *           table c->objs).
 * Items and dirents are matched with their object (its type, in the object
 * table, objmap.h) by a merge of each with its own cursor over the table in
 * the same key order, not by a lookup per row (3 M on bench-32g).  A row
 * whose object the table lacks is skipped.
 * Bodies are read again from their leaves (re-validated, key checked; on the
 * key-order walk the leaf is checked against the scan's checksum instead: an
 * image that changed since the scan stops the run).  Indirect pointers are
 * filtered: out of range, into metadata, at an accepted leaf, or at a block
 * an earlier item already owns -> zeroed, and the file is reported partial.
 * Files whose items leave gaps or end before the stat data's size are
 * reported partial with the missing byte ranges.
 *
 * New nodes get blocks from alloc_block: free in the old bitmap and none of
 * metadata, a leaf candidate, a nested extent, a block any accepted leaf
 * claims, or a block the builder already used.  Only when those run out are
 * old internal nodes reused; never a block that may hold someone's data.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyorder.h"
#include "leaf_stream.h"
#include "rebuild.h"
#include "rfs/bytes.h"
#include "tree_build.h"

#define KEY(d, o) (((uint64_t)(d) << 32) | (uint32_t)(o))

enum {
	MAX_RANGES = 32,
	GAP_LEAVES_MAX = 64,         /* lost leaves a gap in one file may stand for */
};

/* One row of the item cursor: a winning stat data or file body. */
struct item_row {
	uint32_t d, o;
	uint64_t off;
	unsigned type;
	uint64_t blk;
	uint32_t pos;
};

struct emitter {
	struct rb_ctx *c;
	struct tree_builder *tb;
	sqlite3_stmt *items, *ents;
	size_t sd_at;                /* the object table's next object without OBJ_SD */
	bool have_item, have_ent;
	struct item_row it;          /* the current item, while have_item */
	/* while c->key_ordered the items come from the accepted leaves
	 * themselves, in lorder's order (keyorder.c), not from items */
	sqlite3_stmt *walk_q;        /* block, checksum of each leaf in turn */
	struct rb_leaf_stream walk_rows;  /* walk_q's rows, a batch ahead */
	uint8_t *walk;               /* that leaf, checked against its checksum */
	uint64_t walk_blk;
	uint32_t walk_pos, walk_nr;
	bool skip_root_items;        /* namespace.c set the root's items aside */
	rfs_status walk_st;          /* why the cursor stopped early (walk_err) */
	struct rfs_error walk_err;
	/* the object of the current item / dirent row: a position in the
	 * object table, moved forward only (a merge) */
	size_t item_obj, ent_obj;
	uint8_t *leaf;               /* cached source leaf */
	uint64_t leaf_blk;
	bool leaf_damaged;           /* it failed validation: items stand alone */
	uint8_t *body;
	struct rfs_bitmap reserved;  /* blocks claimed by any accepted leaf */
	struct rfs_bitmap old_internal;
	uint64_t alloc_cursor;
	int alloc_pass;
	uint32_t now;
	/* per object */
	bool is_reg;
	uint64_t size, next_byte;
	uint64_t ranges[MAX_RANGES][2];
	unsigned nranges;
	bool partial;
	int sd_version;
	bool size_unknown;           /* stat data created: the real size is lost */
	bool tail_seen;              /* a direct item came: nothing but its block may follow */
	uint64_t tail_block;
	/* directory item being grouped */
	struct rfs_dirent_in *dents;
	uint8_t *names;
	size_t ndents, dcap, names_len, group_bytes;
	uint64_t group_block;
	uint32_t group_pos;
	bool group_modified;
	uint32_t group_dir, group_obj;
	unsigned group_fmt;
};

static uint64_t col_u64(sqlite3_stmt *s, int i)
{
	return (uint64_t)sqlite3_column_int64(s, i);
}

static uint64_t cur_key(sqlite3_stmt *s, bool have)
{
	return have ? KEY(col_u64(s, 0), col_u64(s, 1)) : UINT64_MAX;
}

static uint64_t item_key(const struct emitter *e)
{
	return e->have_item ? KEY(e->it.d, e->it.o) : UINT64_MAX;
}

static bool step(sqlite3_stmt *s)
{
	return sqlite3_step(s) == SQLITE_ROW;
}

/* Moves *at to the first object >= key; true when that object is key. */
static bool obj_seek(const struct rb_objmap *m, size_t *at, uint64_t key)
{
	while (*at < m->n && m->keys[*at] < key)
		(*at)++;
	return *at < m->n && m->keys[*at] == key;
}

static bool obj_is_dir(const struct rb_objmap *m, size_t at)
{
	return (m->flags[at] & OBJ_DIR) != 0;
}

/* The next object whose stat data emit creates, from *at on. */
static size_t next_created_sd(const struct rb_objmap *m, size_t at)
{
	while (at < m->n && (m->flags[at] & OBJ_SD))
		at++;
	return at;
}

static uint64_t sd_key(const struct emitter *e)
{
	return e->sd_at < e->c->objs.n ? e->c->objs.keys[e->sd_at] : UINT64_MAX;
}

/* The next leaf of the walk; false at the end or on an error (walk_st).  The
 * leaf must still be the one the scan found fully valid: the same checksum,
 * or the run stops (as source_item stops on a changed item). */
static bool walk_next_leaf(struct emitter *e)
{
	uint64_t blk, sum;
	int rc = rb_leaf_stream_next(&e->walk_rows, &blk, &sum);
	if (rc != SQLITE_ROW) {
		if (rc != SQLITE_DONE)
			e->walk_st = rfs_index_fail(e->c->ix, "accepted leaves", &e->walk_err);
		return false;
	}
	e->walk_blk = RFS_NO_BLOCK;
	if ((e->walk_st = rfs_dev_read_block(e->c->dev, blk, e->walk, &e->walk_err)))
		return false;
	if (rb_checksum(e->walk, e->c->bs) != sum) {
		e->walk_st = rfs_error_set(&e->walk_err, RFS_ERR_CORRUPT, blk,
					   "leaf %llu changed since the scan; rescan",
					   (unsigned long long)blk);
		return false;
	}
	struct rfs_block_head bh;
	rfs_block_head_decode(e->walk, &bh);
	e->walk_blk = blk;
	e->walk_pos = 0;
	e->walk_nr = bh.nr_items < rfs_leaf_max_items(e->c->bs) ? bh.nr_items :
		     rfs_leaf_max_items(e->c->bs);
	return true;
}

/* The next row of the cursor, before the object filter: the index's next
 * row, or the walk's next stat data or file body (the filter of items_sql:
 * win = 1 and type 0, 1 or 2; every item of an accepted leaf won, except the
 * root's when namespace.c set them aside). */
static bool next_row(struct emitter *e)
{
	if (!e->walk_q) {
		if (!step(e->items))
			return false;
		e->it = (struct item_row){
			.d = (uint32_t)col_u64(e->items, 0), .o = (uint32_t)col_u64(e->items, 1),
			.off = col_u64(e->items, 2), .type = (unsigned)col_u64(e->items, 3),
			.blk = col_u64(e->items, 4), .pos = (uint32_t)col_u64(e->items, 5),
		};
		return true;
	}
	for (;;) {
		while (e->walk_blk != RFS_NO_BLOCK && e->walk_pos < e->walk_nr) {
			struct rfs_item_head ih;
			uint32_t pos = e->walk_pos++;
			rfs_leaf_item_head(e->walk, (int)pos, &ih);
			unsigned type = ih.key.type;
			if (type != RFS_TYPE_STAT && type != RFS_TYPE_INDIRECT && type != RFS_TYPE_DIRECT)
				continue;
			if (e->skip_root_items && ih.key.dir_id == 1 && ih.key.objectid == 2)
				continue;
			e->it = (struct item_row){ .d = ih.key.dir_id, .o = ih.key.objectid,
						   .off = ih.key.offset, .type = type,
						   .blk = e->walk_blk, .pos = pos };
			return true;
		}
		if (!walk_next_leaf(e))
			return false;
	}
}

/* The next winning item that goes into the tree: its object exists and it is
 * a stat data, or a file body of an object that is not a directory. */
static bool next_item(struct emitter *e)
{
	while (next_row(e)) {
		unsigned type = e->it.type;
		if (!obj_seek(&e->c->objs, &e->item_obj, KEY(e->it.d, e->it.o)))
			continue;
		if (type == RFS_TYPE_STAT || (!obj_is_dir(&e->c->objs, e->item_obj) &&
					      (type == RFS_TYPE_INDIRECT || type == RFS_TYPE_DIRECT)))
			return true;
	}
	return false;
}

/* The next kept name of a directory. */
static bool next_ent(struct emitter *e)
{
	while (step(e->ents))
		if (obj_seek(&e->c->objs, &e->ent_obj, cur_key(e->ents, true)) &&
		    obj_is_dir(&e->c->objs, e->ent_obj))
			return true;
	return false;
}

/* The allocator handed to the tree builder. */
static rfs_status alloc_block(void *ctx, uint64_t *blk, struct rfs_error *err)
{
	struct emitter *e = ctx;
	struct rb_ctx *c = e->c;
	for (; e->alloc_pass < 2; e->alloc_pass++, e->alloc_cursor = 0) {
		while (e->alloc_cursor < c->nblocks) {
			uint64_t b = e->alloc_cursor++;
			if (rfs_bitmap_test(&c->meta, b) || rfs_bitmap_test(&c->leaves, b) ||
			    rfs_bitmap_test(&c->nested, b) || rfs_bitmap_test(&e->reserved, b))
				continue;
			if (e->alloc_pass == 0 ? rfs_bitmap_test(&c->old_used, b)
					       : !rfs_bitmap_test(&e->old_internal, b))
				continue;
			*blk = b;
			return RFS_OK;
		}
	}
	return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
			     "no free block left for the new tree that holds nobody's data");
}

static void placed(void *ctx, uint64_t blk, unsigned level, bool kept, bool written)
{
	struct emitter *e = ctx;
	(void)written;
	/* rb_write_bitmaps marks it used.  In claimed only when the tree is
	 * written: a tree built in memory (a dry run, salvage) leaves the old
	 * contents of its new blocks on disk, and salvage reads deleted data
	 * there; nodes keeps them for a dry run's bitmaps.  Emit's decisions
	 * never depend on either: new nodes avoid every block an accepted leaf
	 * points to (reserved), kept ones are in accepted. */
	if (!e->c->opt.dry_run)
		rfs_bitmap_set(&e->c->claimed, blk);
	else
		rfs_bitmap_set(&e->c->nodes, blk);
	if (level == 1) {
		e->c->tree_leaves++;
		if (kept)
			e->c->leaves_kept++;
		else
			e->c->leaves_new++;
	} else {
		e->c->internal_nodes++;
	}
}

static rfs_status load_leaf(struct emitter *e, uint64_t blk, struct rfs_error *err)
{
	if (e->leaf_blk == blk)
		return RFS_OK;
	e->leaf_blk = RFS_NO_BLOCK;
	if (e->walk_blk == blk) {
		/* the walk's leaf: fully valid at the scan and unchanged since */
		memcpy(e->leaf, e->walk, e->c->bs);
		e->leaf_damaged = false;
		e->leaf_blk = blk;
		return RFS_OK;
	}
	rfs_status st = rfs_dev_read_block(e->c->dev, blk, e->leaf, err);
	if (st)
		return st;
	/* a leaf the scan found partly valid is used item by item: each item is
	 * bounds-checked and key-checked in source_item */
	e->leaf_damaged = rfs_leaf_validate(e->leaf, e->c->bs, NULL, NULL) != RFS_OK;
	e->leaf_blk = blk;
	return RFS_OK;
}

/* The item head of (blk, pos) after checking it is still the indexed key. */
static rfs_status source_item(struct emitter *e, uint64_t blk, uint32_t pos, uint32_t d,
			      uint32_t o, uint64_t off, unsigned type, struct rfs_item_head *ih,
			      struct rfs_error *err)
{
	rfs_status st = load_leaf(e, blk, err);
	if (st)
		return st;
	struct rfs_block_head bh;
	rfs_block_head_decode(e->leaf, &bh);
	uint32_t bs = e->c->bs;
	bool in = pos < bh.nr_items && pos < rfs_leaf_max_items(bs);
	if (in)
		rfs_leaf_item_head(e->leaf, (int)pos, ih);
	if (in && e->leaf_damaged)
		in = ih->len > 0 && ih->location >= RFS_BLKH_SIZE + (pos + 1) * RFS_IH_SIZE &&
		     (uint32_t)ih->location + ih->len <= bs;
	if (!in || ih->key.dir_id != d || ih->key.objectid != o ||
	    ih->key.offset != off || ih->key.type != type)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "leaf %llu changed since the scan (item %u differs); rescan",
				     (unsigned long long)blk, pos);
	return RFS_OK;
}

static rfs_status add(struct emitter *e, const struct rfs_key *k, enum rfs_key_format fmt,
		      uint16_t foc, const uint8_t *body, size_t len, uint64_t source,
		      struct rfs_error *err)
{
	struct tb_item it = { .key = *k, .fmt = fmt, .free_or_count = foc, .len = (uint16_t)len,
			      .body = body, .source_leaf = source };
	return tb_add_item(e->tb, &it, err);
}

static void note_missing(struct emitter *e, uint64_t from, uint64_t to)
{
	if (to <= from)
		return;
	e->partial = true;
	if (e->nranges > 0 && e->ranges[e->nranges - 1][1] == from) {
		e->ranges[e->nranges - 1][1] = to;
		return;
	}
	if (e->nranges < MAX_RANGES) {
		e->ranges[e->nranges][0] = from;
		e->ranges[e->nranges][1] = to;
		e->nranges++;
	}
}

/* ---- stat data ---- */

static rfs_status emit_source_sd(struct emitter *e, struct rfs_error *err)
{
	uint32_t d = e->it.d, o = e->it.o;
	uint64_t blk = e->it.blk;
	struct rfs_item_head ih;
	rfs_status st = source_item(e, blk, e->it.pos, d, o, e->it.off, RFS_TYPE_STAT, &ih, err);
	if (st)
		return st;
	const uint8_t *body = e->leaf + ih.location;
	struct rfs_stat sd;
	if (rfs_stat_decode(body, ih.len, &sd) == RFS_OK) {
		bool dir = obj_is_dir(&e->c->objs, e->item_obj);
		if (dir != ((sd.mode & 0170000) == 0040000) && ih.len <= e->c->bs) {
			/* the namespace pass judged the type by the items: the
			 * mode flipped (permission bits kept) */
			sd.mode = (uint16_t)((dir ? 0040000 : 0100000) | (sd.mode & 07777));
			memcpy(e->body, body, ih.len);
			le16_put(e->body, 0, sd.mode);
			body = e->body;
			e->c->n.modes_from_items++;
		}
		e->sd_version = sd.version;
		/* files and symlinks: their bytes are data that can go missing */
		e->is_reg = (sd.mode & 0170000) == 0100000 || (sd.mode & 0170000) == 0120000;
		e->size = sd.size;
	}
	return add(e, &ih.key, ih.key_format, ih.free_or_count, body, ih.len, blk, err);
}

static rfs_status emit_created_sd(struct emitter *e, uint32_t d, uint32_t o, bool dir,
				  struct rfs_error *err)
{
	struct rb_ctx *c = e->c;
	bool v2 = c->fs->sb.format == RFS_FORMAT_36;
	struct rfs_stat sd = {
		.version = v2 ? 2 : 1,
		.mode = dir ? (d == 1 && o == 2 ? 040755 : 040700) : 0100600,
		.nlink = dir ? 2 : 1,
		.atime = e->now, .mtime = e->now, .ctime = e->now,
		.first_direct_byte = 0xFFFFFFFFu,
	};
	if (!dir) {
		/* the size the items reach: the real one is unknown */
		sqlite3_stmt *q;
		rfs_status st = rfs_index_prepare(c->ix,
			"SELECT coalesce(max(offset - 1 + CASE type WHEN 1 THEN len / 4 * ?3 ELSE len END), 0),"
			" min(CASE type WHEN 2 THEN offset END) FROM item"
			" WHERE win = 1 AND dir_id = ?1 AND objectid = ?2 AND type IN (1, 2)", &q, err);
		if (st)
			return st;
		sqlite3_bind_int64(q, 1, d);
		sqlite3_bind_int64(q, 2, o);
		sqlite3_bind_int64(q, 3, c->bs);
		if (step(q)) {
			sd.size = col_u64(q, 0);
			if (!v2 && sqlite3_column_type(q, 1) != SQLITE_NULL)
				sd.first_direct_byte = (uint32_t)col_u64(q, 1);
		}
		sqlite3_finalize(q);
	}
	uint8_t body[64];
	size_t len;
	rfs_status st = rfs_stat_encode(&sd, body, sizeof(body), &len);
	if (st)
		return rfs_error_set(err, st, RFS_NO_BLOCK, "stat data for %u %u", d, o);
	e->sd_version = sd.version;
	e->is_reg = !dir;
	e->size = sd.size;
	e->size_unknown = !dir;
	struct rfs_key k = { d, o, 0, RFS_TYPE_STAT };
	c->n.sd_created++;
	return add(e, &k, v2 ? RFS_KEY_V2 : RFS_KEY_V1, 0xFFFF, body, len, RFS_NO_BLOCK, err);
}

/* ---- directory items ---- */

static rfs_status flush_group(struct emitter *e, struct rfs_error *err)
{
	if (e->ndents == 0)
		return RFS_OK;
	enum rfs_key_format pad = e->sd_version == 2 ? RFS_KEY_V2 : RFS_KEY_V1;
	size_t len;
	rfs_status st = rfs_dir_item_encode(e->dents, e->ndents, pad, e->body, e->c->bs, &len);
	if (!st && len < 24 * e->ndents) {
		/* The kernel (5.x and later) refuses a leaf whose first directory
		 * item is shorter than 24 bytes per entry (a 3.5 empty directory
		 * is 35 bytes): names padded to 8 bytes, which every version
		 * reads, keep such an item acceptable wherever it lands. */
		for (size_t i = 0; i < e->ndents; i++)
			e->dents[i].stored_len = 0;
		st = rfs_dir_item_encode(e->dents, e->ndents, RFS_KEY_V2, e->body, e->c->bs, &len);
		e->group_modified = true;
	}
	if (st)
		return rfs_error_set(err, st, RFS_NO_BLOCK, "directory item of %u %u",
				     e->group_dir, e->group_obj);
	struct rfs_key k = { e->group_dir, e->group_obj, e->dents[0].offset, RFS_TYPE_DIRENTRY };
	st = add(e, &k, e->group_fmt ? RFS_KEY_V2 : RFS_KEY_V1, (uint16_t)e->ndents, e->body, len,
		 e->group_modified ? RFS_NO_BLOCK : e->group_block, err);
	e->ndents = 0;
	e->names_len = 0;
	e->group_bytes = 0;
	e->group_block = RFS_NO_BLOCK;
	e->group_modified = false;
	return st;
}

static rfs_status emit_dirent(struct emitter *e, struct rfs_error *err)
{
	sqlite3_stmt *s = e->ents;
	uint32_t d = (uint32_t)col_u64(s, 0), o = (uint32_t)col_u64(s, 1);
	const void *name = sqlite3_column_blob(s, 5);
	size_t nlen = (size_t)sqlite3_column_bytes(s, 5);
	unsigned slot = (unsigned)col_u64(s, 8);
	bool synth = sqlite3_column_type(s, 9) == SQLITE_NULL;
	uint64_t blk = synth ? RFS_NO_BLOCK : col_u64(s, 9);
	uint32_t pos = synth ? 0 : (uint32_t)col_u64(s, 10);
	if (nlen == 0 || nlen > 4032)
		return RFS_OK;
	enum rfs_key_format pad = e->sd_version == 2 ? RFS_KEY_V2 : RFS_KEY_V1;
	size_t esize = slot ? 16 + slot : rfs_dir_entry_size((uint16_t)nlen, pad);
	rfs_status st = RFS_OK;
	bool other_source = !synth && e->group_block != RFS_NO_BLOCK &&
			    (e->group_block != blk || e->group_pos != pos);
	if (e->ndents && (other_source || e->group_bytes + esize > e->c->bs - 48))
		st = flush_group(e, err);
	if (st)
		return st;
	if (e->ndents == e->dcap) {
		size_t nc = e->dcap ? 2 * e->dcap : 256;
		struct rfs_dirent_in *w = realloc(e->dents, nc * sizeof(*w));
		if (!w)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory entries");
		e->dents = w;
		e->dcap = nc;
	}
	if (e->ndents == 0) {
		e->group_dir = d;
		e->group_obj = o;
		e->group_fmt = (unsigned)col_u64(s, 7);
	}
	if (synth)
		e->group_modified = true;
	else if (e->group_block == RFS_NO_BLOCK) {
		e->group_block = blk;
		e->group_pos = pos;
	}
	/* names live in one buffer of bs bytes: the group never exceeds it */
	memcpy(e->names + e->names_len, name, nlen);
	e->dents[e->ndents++] = (struct rfs_dirent_in){
		.offset = (uint32_t)col_u64(s, 2), .dir_id = (uint32_t)col_u64(s, 3),
		.objectid = (uint32_t)col_u64(s, 4), .state = (uint16_t)col_u64(s, 6),
		.name = e->names + e->names_len, .name_len = (uint16_t)nlen,
		.stored_len = (uint16_t)slot,
	};
	e->names_len += nlen;
	e->group_bytes += esize;
	return RFS_OK;
}

/* ---- body items ---- */

/* Items of this file before ih are lost: the missing whole blocks become a
 * hole (indirect items of zero pointers) and, before a tail, the missing part
 * of its block becomes zero bytes (direct items), so the file stays well
 * formed and its remaining data keeps its offsets; the range is reported
 * missing. */
static rfs_status fill_gap(struct emitter *e, const struct rfs_item_head *ih,
			   struct rfs_error *err)
{
	uint64_t bs = e->c->bs, from = e->next_byte - 1, to = ih->key.offset - 1;
	if (e->is_reg)
		note_missing(e, from, to);
	bool tail = ih->key.type == RFS_TYPE_DIRECT;
	uint64_t hole_end = tail ? to / bs * bs : to;
	if (from % bs || hole_end % bs) {
		if (!tail || to - from >= bs)
			return RFS_OK;   /* nothing well formed can stand for it */
		hole_end = from;
	}
	uint64_t per = (bs - 48) / 4;
	uint8_t *zero = calloc(1, (size_t)bs);
	if (!zero)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "hole");
	rfs_status st = RFS_OK;
	for (uint64_t b = from / bs; !st && b < hole_end / bs;) {
		uint64_t n = hole_end / bs - b < per ? hole_end / bs - b : per;
		struct rfs_key k = { ih->key.dir_id, ih->key.objectid, b * bs + 1, RFS_TYPE_INDIRECT };
		if (ih->key_format == RFS_KEY_V1 && k.offset > 0xFFFFFFFFull)
			break;
		st = add(e, &k, ih->key_format, 0, zero, (size_t)n * 4, RFS_NO_BLOCK, err);
		b += n;
	}
	/* zero bytes up to the tail, at most bs - 48 per direct item */
	for (uint64_t at = hole_end > from ? hole_end : from; !st && tail && at < to;) {
		uint64_t n = to - at < bs - 48 ? to - at : bs - 48;
		struct rfs_key k = { ih->key.dir_id, ih->key.objectid, at + 1, RFS_TYPE_DIRECT };
		st = add(e, &k, ih->key_format, 0xFFFF, zero, (size_t)n, RFS_NO_BLOCK, err);
		at += n;
	}
	free(zero);
	return st;
}

static rfs_status emit_body(struct emitter *e, struct rfs_error *err)
{
	struct rb_ctx *c = e->c;
	uint32_t d = e->it.d, o = e->it.o;
	uint64_t off = e->it.off;
	unsigned type = e->it.type;
	uint64_t blk = e->it.blk;
	uint32_t pos = e->it.pos;
	if (off < e->next_byte) {
		/* overlaps data already emitted for this file: the earlier wins */
		c->n.conflicts++;
		return rfs_index_add_conflict(c->ix, d, o, off, type, RFS_NO_BLOCK, blk,
					      "overlapping file data", err);
	}
	struct rfs_item_head ih;
	rfs_status st = source_item(e, blk, pos, d, o, off, type, &ih, err);
	if (st)
		return st;
	/* the tail rules: nothing after a direct item but more of its block */
	uint16_t len = ih.len;
	if (type == RFS_TYPE_DIRECT || e->tail_seen) {
		uint64_t bs = c->bs;
		if (!e->tail_seen) {
			e->tail_seen = true;
			e->tail_block = (off - 1) / bs;
		}
		uint64_t block_end = (e->tail_block + 1) * bs;
		if (type != RFS_TYPE_DIRECT || off - 1 >= block_end) {
			c->n.conflicts++;
			return rfs_index_add_conflict(c->ix, d, o, off, type, RFS_NO_BLOCK, blk,
						      "item after the file's tail", err);
		}
		/* a 3.6 tail may carry up to 7 padding bytes past its block */
		if (off - 1 + len > block_end + 7) {
			if (e->is_reg)
				note_missing(e, block_end, off - 1 + len);
			len = (uint16_t)(block_end - (off - 1));
		}
	}
	if (off > e->next_byte) {
		/* a gap wider than a few dozen lost leaves could have held is no
		 * lost leaf: what lies beyond it is not trusted to be this file's
		 * (a fuzzed offset of 2^60 would ask for 2^48 hole pointers) */
		uint64_t gap_blocks = (off - e->next_byte) / c->bs;
		if (gap_blocks > (uint64_t)GAP_LEAVES_MAX * ((c->bs - 48) / 4)) {
			if (e->is_reg)
				note_missing(e, e->next_byte - 1, e->next_byte);
			c->n.conflicts++;
			return rfs_index_add_conflict(c->ix, d, o, off, type, RFS_NO_BLOCK, blk,
						      "beyond an implausible gap in the file", err);
		}
		if ((st = fill_gap(e, &ih, err)))
			return st;
	}
	/* fill_gap may have loaded another leaf (never: it reads nothing) */
	memcpy(e->body, e->leaf + ih.location, ih.len);
	uint64_t end;
	uint64_t source = blk;
	if (type == RFS_TYPE_INDIRECT) {
		uint32_t n = ih.len / 4;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t p = le32_at(e->body, 4 * (size_t)i);
			if (!p)
				continue;
			bool bad = p >= c->nblocks ||
				   (c->opt.data_blocks && p >= c->opt.data_blocks) ||
				   rfs_bitmap_test(&c->meta, p) ||
				   rfs_bitmap_test(&c->accepted, p) || rfs_bitmap_test(&c->claimed, p);
			if (!bad) {
				rfs_bitmap_set(&c->claimed, p);
				continue;
			}
			le32_put(e->body, 4 * (size_t)i, 0);
			source = RFS_NO_BLOCK;
			c->n.pointers_zeroed++;
			uint64_t from = off - 1 + (uint64_t)i * c->bs;
			note_missing(e, from, from + c->bs);
		}
		end = off - 1 + (uint64_t)n * c->bs;
	} else {
		end = off - 1 + len;
		if (len != ih.len)
			source = RFS_NO_BLOCK;
	}
	e->next_byte = end + 1;
	return add(e, &ih.key, ih.key_format, ih.free_or_count, e->body, len, source, err);
}

static rfs_status finish_object(struct emitter *e, uint32_t d, uint32_t o, struct rfs_error *err)
{
	if (!e->is_reg)
		return RFS_OK;
	/* the last block may be partly used, a 3.6 tail padded: only bytes
	 * beyond what the items could hold are missing */
	if (e->size > e->next_byte - 1)
		note_missing(e, e->next_byte - 1, e->size);
	if (!e->partial && !e->size_unknown)
		return RFS_OK;
	char detail[MAX_RANGES * 48 + 64];
	size_t n = 0;
	n += (size_t)snprintf(detail + n, sizeof(detail) - n, "{\"missing\":[");
	for (unsigned i = 0; i < e->nranges && n < sizeof(detail); i++)
		n += (size_t)snprintf(detail + n, sizeof(detail) - n, "%s[%llu,%llu]", i ? "," : "",
				      (unsigned long long)e->ranges[i][0],
				      (unsigned long long)e->ranges[i][1]);
	/* a lost stat data took the size with it: what came after the last
	 * item found is unknown */
	if (n < sizeof(detail))
		snprintf(detail + n, sizeof(detail) - n, "],\"size_unknown\":%s}",
			 e->size_unknown ? "true" : "false");
	e->c->n.partial++;
	return rfs_index_add_outcome(e->c->ix, d, o, "partial", detail, err);
}

static rfs_status emit_object(struct emitter *e, uint64_t k, struct rfs_error *err)
{
	uint32_t d = (uint32_t)(k >> 32), o = (uint32_t)k;
	e->is_reg = false;
	e->size = 0;
	e->next_byte = 1;
	e->nranges = 0;
	e->partial = false;
	e->size_unknown = false;
	e->tail_seen = false;
	e->sd_version = e->c->fs->sb.format == RFS_FORMAT_36 ? 2 : 1;
	rfs_status st = RFS_OK;
	bool have_sd = false;
	if (e->have_item && item_key(e) == k && e->it.type == RFS_TYPE_STAT) {
		st = emit_source_sd(e, err);
		e->have_item = next_item(e);
		have_sd = true;
	}
	if (!st && sd_key(e) == k) {
		if (!have_sd)
			st = emit_created_sd(e, d, o, obj_is_dir(&e->c->objs, e->sd_at), err);
		e->sd_at = next_created_sd(&e->c->objs, e->sd_at + 1);
	}
	while (!st && e->have_ent && cur_key(e->ents, true) == k) {
		st = emit_dirent(e, err);
		e->have_ent = next_ent(e);
	}
	if (!st)
		st = flush_group(e, err);
	while (!st && e->have_item && item_key(e) == k) {
		if (e->it.type != RFS_TYPE_STAT)
			st = emit_body(e, err);
		e->have_item = next_item(e);
	}
	if (!st)
		st = finish_object(e, d, o, err);
	return st;
}

static rfs_status load_reserved(struct emitter *e, struct rfs_error *err)
{
	struct rb_ctx *c = e->c;
	sqlite3_stmt *q;
	rfs_status st = rfs_index_prepare(c->ix,
		"SELECT first, count FROM claim WHERE block IN"
		" (SELECT block FROM leaf WHERE status = 'accepted')", &q, err);
	if (st)
		return st;
	while (step(q)) {
		uint64_t first = col_u64(q, 0), count = col_u64(q, 1);
		for (uint64_t b = first; b < first + count && b < c->nblocks; b++)
			rfs_bitmap_set(&e->reserved, b);
	}
	sqlite3_finalize(q);
	if ((st = rfs_index_prepare(c->ix, "SELECT block FROM internal WHERE area = 0", &q, err)))
		return st;
	while (step(q)) {
		uint64_t b = col_u64(q, 0);
		if (b < c->nblocks)
			rfs_bitmap_set(&e->old_internal, b);
	}
	sqlite3_finalize(q);
	return RFS_OK;
}

/* Both orders must be the object table's, (dir_id, objectid) first:
 * next_item and next_ent merge them with it.  While c->key_ordered the items come from the
 * leaves of rb_keyorder_leaves_sql instead (next_row): the same rows in the
 * same order, without item_key and without a row per item (keyorder.c). */
static const char items_sql[] =
	"SELECT dir_id, objectid, offset, type, block, pos FROM item"
	" WHERE win = 1 AND type IN (0, 1, 2) ORDER BY dir_id, objectid, offset, type";
static const char ents_sql[] =
	"SELECT dir_id, objectid, off, t_dir_id, t_objectid, name, state, fmt, slot, block, pos"
	" FROM dirent WHERE keep = 1 ORDER BY dir_id, objectid, off";

/* The time created stat data carry: now, or SOURCE_DATE_EPOCH when set (the
 * reproducible-builds convention), so that two runs can be compared byte
 * for byte (tests/integration/rebuild_keyorder.sh). */
static uint32_t stamp_now(void)
{
	const char *env = getenv("SOURCE_DATE_EPOCH");
	if (env && *env) {
		char *end;
		unsigned long long v = strtoull(env, &end, 10);
		if (*end == '\0' && v <= UINT32_MAX)
			return (uint32_t)v;
	}
	return (uint32_t)time(NULL);
}

rfs_status rb_emit(struct rb_ctx *c, struct rfs_error *err)
{
	struct emitter e = { .c = c, .leaf_blk = RFS_NO_BLOCK, .group_block = RFS_NO_BLOCK,
			     .now = stamp_now() };
	rfs_status st = RFS_OK;
	e.walk_blk = RFS_NO_BLOCK;
	e.skip_root_items = c->root_items_aside;
	e.leaf = malloc(c->bs);
	e.body = malloc(c->bs);
	e.names = malloc(c->bs);
	e.walk = c->key_ordered ? malloc(c->bs) : NULL;
	if (!e.leaf || !e.body || !e.names || (c->key_ordered && !e.walk))
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "emit buffers");
	if (!st)
		st = rfs_bitmap_init_sparse(&e.reserved, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init_sparse(&e.old_internal, c->nblocks, err);
	if (!st)
		st = load_reserved(&e, err);
	if (!st)
		st = rfs_bitmap_status(&e.reserved, "data blocks of the accepted leaves", err);
	if (!st)
		st = rfs_bitmap_status(&e.old_internal, "old internal nodes", err);
	/* a created stat data asks item_key for its object's size (emit_created_sd) */
	bool creates = false;
	for (size_t i = 0; i < c->objs.n && !creates; i++)
		creates = (c->objs.flags[i] & (OBJ_SD | OBJ_DIR)) == 0;
	if (!st && creates)
		st = rfs_index_build_item_lookup(c->ix, err);
	if (!st && c->key_ordered) {
		st = rfs_index_prepare(c->ix, rb_keyorder_leaves_sql, &e.walk_q, err);
		rb_leaf_stream_init(&e.walk_rows, e.walk_q, c->dev);
	} else if (!st)
		st = rfs_index_prepare(c->ix, items_sql, &e.items, err);
	if (!st)
		st = rfs_index_prepare(c->ix, ents_sql, &e.ents, err);
	struct tb_options to = { .dev = c->dev, .bs = c->bs, .alloc = alloc_block, .placed = placed,
				 .keep_stale_free_space = true,
				 .ctx = &e };
	if (!st)
		st = tb_new(&to, &e.tb, err);
	if (!st)
		st = rfs_index_begin(c->ix, err);
	if (!st) {
		e.have_item = next_item(&e);
		e.have_ent = next_ent(&e);
		e.sd_at = next_created_sd(&c->objs, 0);
		uint64_t done = 0;
		rfs_progress_phase(&c->progress, "build", "objects", 0);
		while (!st && !e.walk_st && (e.have_item || e.have_ent || e.sd_at < c->objs.n)) {
			uint64_t k = item_key(&e), k2 = cur_key(e.ents, e.have_ent);
			uint64_t k3 = sd_key(&e);
			if (k2 < k)
				k = k2;
			if (k3 < k)
				k = k3;
			st = emit_object(&e, k, err);
			rfs_progress_update(&c->progress, ++done);
		}
		rfs_progress_done(&c->progress);
		if (!st && e.walk_st) {
			*err = e.walk_err;
			st = e.walk_st;
		}
		if (!st) {
			struct tb_stats ts;
			st = tb_finish(e.tb, &c->root, &c->height, &ts, err);
		}
		if (!st)
			st = rfs_index_commit(c->ix, err);
		else
			rfs_index_rollback(c->ix);
	}
	tb_free(e.tb);
	sqlite3_finalize(e.items);
	sqlite3_finalize(e.walk_q);
	sqlite3_finalize(e.ents);
	rfs_bitmap_free(&e.reserved);
	rfs_bitmap_free(&e.old_internal);
	free(e.leaf);
	free(e.walk);
	free(e.body);
	free(e.names);
	free(e.dents);
	return st;
}

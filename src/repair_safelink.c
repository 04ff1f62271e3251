/*
 * repair_safelink.c - finishes what safe links record, as the kernel's mount
 * does (fs/reiserfs/super.c, finish_unfinished), and removes invalid links.
 *
 * A safe link is an item with key (0xFFFFFFFF, objectid, ...) whose 4-byte
 * body is the object's dir_id: direct type at offset blocksize + 1 for an
 * unlink that had not finished, indirect type at offset 1 for a truncate.
 * Like the kernel, the links are taken from the greatest key down (so an
 * unlink runs before a truncate of the same object), one at a time:
 *   - a malformed link (other type or offset, body not 4 bytes), or one whose
 *     object has no stat data: the link goes, and its objectid is released
 *     when no object uses it (the kernel's "iget failed" case; it releases
 *     unconditionally, which could free a live id) - SAFELINK_BAD;
 *   - unlink of an object whose link count is not 0 ("not unlinked"), or
 *     truncate of a directory: only the link goes;
 *   - unlink (link count 0): every item of the object goes, from its last to
 *     its stat data, its data blocks are freed, then the link, and its
 *     objectid is released;
 *   - truncate: the file is cut to the size in its stat data: pointers to
 *     blocks wholly past it are dropped and the blocks freed, a tail past it
 *     is deleted or shortened (3.6 files keep the tail padded to 8 bytes, as
 *     the kernel cuts it), the bytes past the size in the last data block are
 *     zeroed (the kernel zeroes the page tail), the block count and (3.5)
 *     first_direct_byte follow; then the link goes.  A file whose link count
 *     is 0 is then deleted too (the kernel's iput after the truncate).
 * An object's items are deleted over as many commits as the journal's
 * transaction size needs; every commit leaves a consistent tree in which the
 * link still names a partly removed object, so a rerun finishes the work.
 */
#include "repair_tree.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/object.h"

static const uint64_t KEY_OFFSET_MAX = (UINT64_C(1) << 60) - 1;

struct sl_stats {
	uint64_t items, blocks;      /* items deleted, data blocks freed */
};

/* Commits when the next change could pass the transaction budget. */
static rfs_status room(struct rfs_tedit *te, size_t need, struct rfs_error *err)
{
	if (rfs_tedit_pending(te) + need <= rfs_tedit_budget(te))
		return RFS_OK;
	return rfs_tedit_commit(te, err);
}

/* The last item of object (d, o); *found false when it has none left. */
static rfs_status last_item(struct rfs_tedit *te, uint32_t d, uint32_t o,
			    struct rfs_tedit_item *it, bool *found, struct rfs_error *err)
{
	struct rfs_key k = { d, o, KEY_OFFSET_MAX, RFS_TYPE_ANY };
	rfs_status st = rfs_tedit_seek(te, &k, it, found, err);
	if (!st && *found && (it->ih.key.dir_id != d || it->ih.key.objectid != o))
		*found = false;
	return st;
}

/* Frees pointers [keep, n) of indirect item it, from the last, as far as the
 * budget allows; then deletes the item (keep == 0, all freed) or shortens it
 * to the pointers left.  *done tells whether every pointer past keep went. */
static rfs_status cut_indirect(struct rfs_tedit *te, struct rfs_tedit_item *it, uint32_t keep,
			       struct sl_stats *s, bool *done, struct rfs_error *err)
{
	uint32_t n = it->ih.len / 4, end = n;
	rfs_status st = RFS_OK;
	while (end > keep && rfs_tedit_pending(te) + 8 < rfs_tedit_budget(te)) {
		uint32_t p = le32_at(it->body, 4 * (size_t)(end - 1));
		if (p) {
			st = rfs_tedit_free_block(te, p, err);
			if (st)
				return st;
			s->blocks++;
		}
		end--;
	}
	*done = end == keep;
	if (end == 0) {
		s->items++;
		return rfs_tedit_delete(te, &it->ih.key, err);
	}
	if (end == n)
		return RFS_OK;
	it->ih.len = (uint16_t)(4 * end);
	return rfs_tedit_replace(te, &it->ih, it->body, err);
}

/* Deletes every item of (d, o), last first, committing whenever the next
 * deletion could pass the transaction budget. */
static rfs_status delete_object(struct rfs_tedit *te, uint32_t d, uint32_t o, struct sl_stats *s,
				struct rfs_error *err)
{
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "item copy");
	rfs_status st = RFS_OK;
	for (;;) {
		bool found, done;
		if ((st = room(te, 16, err)) || (st = last_item(te, d, o, &it, &found, err)) || !found)
			break;
		if (it.ih.key.type == RFS_TYPE_INDIRECT) {
			st = cut_indirect(te, &it, 0, s, &done, err);
		} else {
			st = rfs_tedit_delete(te, &it.ih.key, err);
			s->items++;
		}
		if (st)
			break;
	}
	rfs_tedit_item_free(&it);
	return st;
}

/* Cuts file (d, o) to size bytes, as reiserfs_do_truncate does. */
static rfs_status truncate_file(struct rfs_check *c, struct rfs_tedit *te, uint32_t d, uint32_t o,
				const struct rfs_stat *sd, struct sl_stats *s, struct rfs_error *err)
{
	const uint64_t bs = c->fs->bs, size = sd->size;
	const uint64_t keep_blocks = (size + bs - 1) / bs;
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "item copy");
	rfs_status st = RFS_OK;
	bool direct_left = false;
	uint64_t last_ptr = 0;           /* data block holding byte size - 1, if any */
	for (;;) {
		bool found, done = true;
		if ((st = room(te, 16, err)) || (st = last_item(te, d, o, &it, &found, err)) || !found ||
		    it.ih.key.type == RFS_TYPE_STAT)
			break;
		uint64_t start = it.ih.key.offset - 1;   /* file byte of the item's first byte */
		if (it.ih.key.type == RFS_TYPE_INDIRECT) {
			uint64_t first = start / bs, n = it.ih.len / 4;
			uint64_t keep = keep_blocks <= first ? 0 : keep_blocks - first;
			if (keep > n)
				keep = n;
			if (keep > 0 && size % bs && keep_blocks - first <= n)
				last_ptr = le32_at(it.body, 4 * (size_t)(keep - 1));
			if (keep == n)
				break;
			st = cut_indirect(te, &it, (uint32_t)keep, s, &done, err);
			if (st || (done && keep > 0))
				break;
			continue;
		}
		if (it.ih.key.type != RFS_TYPE_DIRECT)
			break;   /* not a file body: nothing a truncate touches */
		/* 3.6 files keep their tail padded to 8 bytes */
		uint64_t limit = sd->version == 2 ? (size + 7) / 8 * 8 : size;
		if (limit <= start) {
			st = rfs_tedit_delete(te, &it.ih.key, err);
			s->items++;
			if (st)
				break;
			continue;
		}
		direct_left = true;
		if (limit - start < it.ih.len) {
			it.ih.len = (uint16_t)(limit - start);
			st = rfs_tedit_replace(te, &it.ih, it.body, err);
		}
		break;
	}
	rfs_tedit_item_free(&it);
	if (st)
		return st;
	/* the bytes past the size in the last data block read as zeros (the
	 * kernel zeroes the page tail); written only when they are not yet */
	if (last_ptr && !direct_left) {
		uint8_t *blk = malloc(bs);
		if (!blk)
			return rfs_error_set(err, RFS_ERR_NOMEM, last_ptr, "data block");
		st = rfs_dev_read_block(c->fs->dev, last_ptr, blk, err);
		bool dirty = false;
		for (uint64_t i = size % bs; !st && i < bs && !dirty; i++)
			dirty = blk[i] != 0;
		free(blk);
		if (!st && dirty) {
			st = rfs_tedit_data_block(te, last_ptr, &blk, err);
			if (!st)
				memset(blk + size % bs, 0, bs - size % bs);
		}
		if (st)
			return st;
	}
	/* block count and first_direct_byte as check computes them */
	struct rfs_objinfo *oi = rfs_objtab_find(&c->objects, d, o);
	struct rfs_objbody *ob = oi ? rfs_objtab_body(&c->objects, oi) : NULL;
	/* an object without a body passed check's block count rule, so its
	 * stat data's count says how many pointers it had (check_rules.c) */
	uint64_t had = 0;
	if (ob) {
		had = ob->unfm;
	} else if (oi && rfs_mode_type(oi->mode) == RFS_FT_REG) {
		had = (uint64_t)sd->blocks / (bs / 512);
		if (had && (oi->flags & RFS_OBJ_HAS_DIRECT))
			had--;
	}
	uint64_t unfm = had >= s->blocks ? had - s->blocks : 0;
	bool has_direct = direct_left;
	struct rfs_stat nsd = *sd;
	nsd.blocks = (uint32_t)((unfm + (has_direct ? 1 : 0)) * (bs / 512));
	if (sd->version == 1 && !has_direct)
		nsd.first_direct_byte = UINT32_MAX;
	if (nsd.blocks != sd->blocks || nsd.first_direct_byte != sd->first_direct_byte)
		st = repair_tree_put_sd(te, d, o, &nsd, err);
	if (oi && !st) {
		if (ob)
			ob->unfm = (uint32_t)unfm;   /* never above what it was */
		if (!has_direct)
			oi->flags &= (uint8_t)~RFS_OBJ_HAS_DIRECT;
	}
	return st;
}

/* Objects this run deleted (the object table keeps describing the tree that
 * check saw, so that links are classified as check classified them). */
struct gone {
	struct { uint32_t d, o; } *v;
	size_t n, cap;
};

static bool is_gone(const struct gone *g, uint32_t d, uint32_t o)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].d == d && g->v[i].o == o)
			return true;
	return false;
}

static rfs_status add_gone(struct gone *g, uint32_t d, uint32_t o, struct rfs_error *err)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		void *v = realloc(g->v, cap * sizeof(*g->v));
		if (!v)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted objects");
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n].d = d;
	g->v[g->n++].o = o;
	return RFS_OK;
}

/* Whether an object with a stat data still uses objectid o. */
static bool objectid_in_use(const struct rfs_check *c, const struct gone *g, uint32_t o)
{
	for (size_t i = 0; i < c->objects.count; i++) {
		const struct rfs_objinfo *x = rfs_objtab_at(&c->objects, i);
		if (x->objectid == o && (x->flags & RFS_OBJ_HAS_SD) && !is_gone(g, x->dir_id, o))
			return true;
	}
	return false;
}

/* Removes the link and, when asked and no object uses the id, releases it. */
static rfs_status drop_link(struct rfs_check *c, const struct gone *g, struct rfs_tedit *te,
			    const struct rfs_key *link, bool release, bool *released,
			    struct rfs_error *err)
{
	*released = false;
	rfs_status st = rfs_tedit_delete(te, link, err);
	if (!st && release && !objectid_in_use(c, g, link->objectid))
		st = rfs_tedit_release_objectid(te, link->objectid, released, err);
	return st;
}

/* Handles the link it (the greatest safe link in the tree). */
static rfs_status one_link(struct rfs_check *c, struct rfs_tedit *te,
			   const struct repair_tree_opts *o, struct gone *g,
			   struct rfs_tedit_item *it, struct rfs_error *err)
{
	const struct rfs_key link = it->ih.key;
	char lk[80];
	rfs_key_format_str(&link, lk, sizeof(lk));
	bool truncate = link.type == RFS_TYPE_INDIRECT && link.offset == 1;
	bool unlink = link.type == RFS_TYPE_DIRECT && link.offset == (uint64_t)c->fs->bs + 1;
	bool released = false;
	rfs_status st;
	/* the classification of check_tree.c's check_safe_link (on the tree
	 * check saw), so that each repair answers the problem it reported */
	uint32_t d = it->ih.len == 4 ? le32_at(it->body, 0) : 0;
	struct rfs_objinfo *oi = rfs_objtab_find(&c->objects, d, link.objectid);
	if ((!truncate && !unlink) || it->ih.len != 4 || !oi || !(oi->flags & RFS_OBJ_HAS_SD)) {
		st = drop_link(c, g, te, &link, true, &released, err);
		if (!st)
			st = rfs_tedit_commit(te, err);
		if (st)
			return st;
		problem_fixed(c->rep, PR_SAFELINK_BAD);
		repair_tree_note(o, "safe link %s: invalid, removed%s", lk,
				 released ? "; its objectid released" : "");
		return RFS_OK;
	}
	struct rfs_stat sd;
	bool found;
	st = repair_tree_get_sd(te, d, link.objectid, &sd, &found, err);
	if (st)
		return st;
	bool is_dir = found && rfs_mode_type(sd.mode) == RFS_FT_DIR;
	struct sl_stats s = { 0, 0 };
	const char *what;
	bool deleted = false;
	if (!found) {
		/* an unlink link of the same object came first and deleted it:
		 * the kernel's iget then fails, and the link goes */
		what = "object already deleted: only the link removed";
		st = drop_link(c, g, te, &link, true, &released, err);
	} else if ((unlink && sd.nlink != 0) || (truncate && is_dir)) {
		what = unlink ? "the object is still linked: only the link removed"
			      : "truncate of a directory: only the link removed";
		st = drop_link(c, g, te, &link, false, &released, err);
	} else if (unlink || sd.nlink == 0) {
		if (truncate)
			st = truncate_file(c, te, d, link.objectid, &sd, &s, err);
		if (!st)
			st = delete_object(te, d, link.objectid, &s, err);
		if (!st)
			st = add_gone(g, d, link.objectid, err);
		if (!st) {
			deleted = true;
			st = drop_link(c, g, te, &link, true, &released, err);
		}
		what = unlink ? "unlink finished" : "truncate finished, then the unlinked file deleted";
	} else {
		st = truncate_file(c, te, d, link.objectid, &sd, &s, err);
		if (!st)
			st = drop_link(c, g, te, &link, false, &released, err);
		what = "truncate finished";
	}
	if (!st)
		st = rfs_tedit_commit(te, err);
	if (st) {
		if (deleted)
			g->n--;   /* not committed: the object is there after all */
		return st;
	}
	problem_fixed(c->rep, PR_SAFELINK_PENDING);
	repair_tree_note(o, "safe link %s: [%u %u] %s (%llu item(s) deleted, %llu block(s) freed%s)",
			 lk, d, link.objectid, what, (unsigned long long)s.items,
			 (unsigned long long)s.blocks, released ? ", objectid released" : "");
	return RFS_OK;
}

rfs_status repair_safelinks(struct rfs_check *c, struct rfs_tedit *te,
			    const struct repair_tree_opts *o, struct rfs_error *err)
{
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "item copy");
	const struct rfs_key top = { RFS_SAFELINK_DIR_ID, UINT32_MAX, KEY_OFFSET_MAX, RFS_TYPE_ANY };
	struct rfs_key prev = { 0, 0, 0, 0 };
	bool have_prev = false;
	struct gone g = { NULL, 0, 0 };
	rfs_status st = RFS_OK;
	for (;;) {
		bool found;
		st = rfs_tedit_seek(te, &top, &it, &found, err);
		if (st || !found || it.ih.key.dir_id != RFS_SAFELINK_DIR_ID)
			break;
		/* every round removes the link it took: the same key again means
		 * its removal did not happen, and the loop must end */
		if (have_prev && rfs_key_cmp(&prev, &it.ih.key) == 0) {
			st = rfs_error_set(err, RFS_ERR_CORRUPT, RFS_NO_BLOCK,
					   "safe link was not removed");
			break;
		}
		prev = it.ih.key;
		have_prev = true;
		struct rfs_error e;
		rfs_error_clear(&e);
		st = one_link(c, te, o, &g, &it, &e);
		if (st == RFS_ERR_CORRUPT || st == RFS_ERR_INVALID || st == RFS_ERR_NOT_FOUND ||
		    st == RFS_ERR_LIMIT) {
			/* the tree-edit layer refused: nothing of this commit was
			 * written; the problem stays, the rest too (the loop would
			 * take the same link again) */
			char line[300];
			rfs_error_format(&e, line, sizeof(line));
			fprintf(stderr, "rfsck fix: safe links left as they are: %s\n", line);
			rfs_tedit_abort(te);
			st = RFS_OK;
			break;
		}
		if (st) {
			if (err && err->status == RFS_OK)
				*err = e;
			break;
		}
	}
	rfs_tedit_item_free(&it);
	free(g.v);
	return st;
}

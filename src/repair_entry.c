/*
 * repair_entry.c - removing one directory entry in place, for `rfsck fix`
 * (names that point nowhere, second names of a directory).
 *
 * Usually the change stays inside one leaf and its parent's disk-child size:
 * the directory item is re-encoded without the entry (or the item removed
 * when it was the entry's only one), the bodies below it move up by the bytes
 * freed, the leaf's free space grows by as much, and the parent's dc_size
 * shrinks by as much.  A directory item whose first entry goes gets the next
 * entry's offset as its key offset.  When that changes the leaf's first key
 * (the item is the leaf's first) or empties the leaf, the delimiting key
 * above must follow, or the leaf must leave its parent: that change goes
 * through the tree-edit layer (include/rfs/tree_edit.h), as one journaled
 * commit.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rfs/bytes.h"
#include "rfs/tree.h"
#include "rfs/tree_edit.h"

/* Moves the bodies of items first..nr-1 up by delta bytes (they lie below
 * the changed item) and updates their locations. */
static void shift_bodies(uint8_t *leaf, int first, int nr, uint32_t delta)
{
	if (first >= nr || delta == 0)
		return;
	uint16_t lo = le16_at(leaf, RFS_BLKH_SIZE + (size_t)(nr - 1) * RFS_IH_SIZE + IH_LOCATION);
	uint16_t hi_item_loc = le16_at(leaf, RFS_BLKH_SIZE + (size_t)first * RFS_IH_SIZE + IH_LOCATION);
	uint16_t hi_item_len = le16_at(leaf, RFS_BLKH_SIZE + (size_t)first * RFS_IH_SIZE + IH_LEN);
	size_t span = (size_t)hi_item_loc + hi_item_len - lo;
	memmove(leaf + lo + delta, leaf + lo, span);
	memset(leaf + lo, 0, delta);
	for (int j = first; j < nr; j++) {
		size_t h = RFS_BLKH_SIZE + (size_t)j * RFS_IH_SIZE + IH_LOCATION;
		le16_put(leaf, h, (uint16_t)(le16_at(leaf, h) + delta));
	}
}

/* Encodes the entries of directory item (ih, body) but the victim-th into
 * nb (ih->len bytes of room); *len, *n and *first (the new first entry's
 * offset) are OUT. */
static rfs_status encode_without(const struct rfs_item_head *ih, const uint8_t *body, int victim,
				 uint8_t *nb, size_t *len, size_t *n, uint32_t *first)
{
	struct rfs_dirent_in *in = calloc(ih->free_or_count, sizeof(*in));
	if (!in)
		return RFS_ERR_NOMEM;
	*n = 0;
	for (int e = 0; e < ih->free_or_count; e++) {
		if (e == victim)
			continue;
		struct rfs_dirent d;
		rfs_dir_entry(body, ih->len, e, &d);
		in[(*n)++] = (struct rfs_dirent_in){ .offset = d.offset, .dir_id = d.dir_id,
						     .objectid = d.objectid, .state = d.state,
						     .name = d.name, .name_len = d.name_len,
						     .stored_len = d.stored_len };
	}
	rfs_status st = rfs_dir_item_encode(in, *n, RFS_KEY_V2, nb, ih->len, len);
	if (!st)
		*first = in[0].offset;
	free(in);
	return st;
}

static rfs_status write_through_repair(void *ctx, uint64_t blk, const void *buf,
				       struct rfs_error *err)
{
	return repair_write(ctx, blk, buf, err);
}

/* The removal as a tree change: the item goes (its leaf too, when it was the
 * leaf's only item) or is rewritten under its new first offset. */
static rfs_status remove_by_tree_edit(struct rfs_check *c, const struct rfs_item_head *ih,
				      const uint8_t *body, int victim, struct rfs_error *err)
{
	/* the passes' superblock copy goes first: the session reads and
	 * writes the superblock (free count, root, height) itself */
	rfs_status st = repair_sb_commit(c, err);
	if (st)
		return st;
	struct rfs_tedit_options to = { .write = write_through_repair, .write_ctx = c };
	struct rfs_tedit *te;
	st = rfs_tedit_open(c->fs, &to, &te, err);
	if (st)
		return st;
	if (ih->free_or_count == 1) {
		st = rfs_tedit_delete(te, &ih->key, err);
	} else {
		uint8_t *nb = malloc(ih->len);
		size_t len, n;
		uint32_t first;
		st = nb ? encode_without(ih, body, victim, nb, &len, &n, &first) : RFS_ERR_NOMEM;
		if (st) {
			st = rfs_error_set(err, st, RFS_NO_BLOCK, "re-encoding a directory item");
		} else {
			struct rfs_item_head nh = *ih;
			nh.key.offset = first;
			nh.len = (uint16_t)len;
			nh.free_or_count = (uint16_t)n;
			st = rfs_tedit_rekey(te, &ih->key, &nh, nb, err);
		}
		free(nb);
	}
	if (!st)
		st = rfs_tedit_commit(te, err);
	rfs_tedit_close(te);
	return st;
}

rfs_status repair_remove_entry(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			       uint32_t objectid, uint32_t deh_offset, uint32_t *freed,
			       struct rfs_error *err)
{
	struct rfs_key k = { dir_id, objectid, deh_offset, RFS_TYPE_DIRENTRY };
	bool exact;
	rfs_status st = rfs_cursor_seek(cur, &k, &exact, err);
	if (st)
		return st;
	if (!rfs_cursor_at_item(cur))
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "entry vanished");
	struct rfs_item_head ih;
	rfs_cursor_item(cur, &ih, NULL);
	if (ih.key.dir_id != dir_id || ih.key.objectid != objectid ||
	    ih.key.type != RFS_TYPE_DIRENTRY)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				     "entry %u of [%u %u] vanished", deh_offset, dir_id, objectid);
	struct rfs_cursor_level *lv = &cur->lv[cur->height - 1];
	uint8_t *leaf = lv->buf;
	const uint32_t bs = c->fs->bs;
	int pos = lv->pos, nr = lv->nr;
	const uint8_t *body = leaf + ih.location;
	int victim = -1;
	for (int e = 0; e < ih.free_or_count; e++)
		if (le32_at(body, (size_t)e * RFS_DEH_SIZE + DEH_OFFSET) == deh_offset)
			victim = e;
	if (victim < 0)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				     "entry %u of [%u %u] vanished", deh_offset, dir_id, objectid);
	struct rfs_dirent vd;
	rfs_dir_entry(body, ih.len, victim, &vd);
	uint32_t entry_bytes = RFS_DEH_SIZE + vd.stored_len;
	if (pos == 0 && (victim == 0 || ih.free_or_count == 1)) {
		/* the leaf's first key changes, or the leaf empties */
		st = remove_by_tree_edit(c, &ih, body, victim, err);
		if (!st && freed)
			*freed = entry_bytes;
		return st;
	}
	uint32_t delta;
	if (ih.free_or_count == 1) {
		/* the whole item goes: heads after it move down, bodies up */
		delta = ih.len;
		shift_bodies(leaf, pos + 1, nr, delta);
		size_t h = RFS_BLKH_SIZE + (size_t)pos * RFS_IH_SIZE;
		memmove(leaf + h, leaf + h + RFS_IH_SIZE, (size_t)(nr - pos - 1) * RFS_IH_SIZE);
		memset(leaf + RFS_BLKH_SIZE + (size_t)(nr - 1) * RFS_IH_SIZE, 0, RFS_IH_SIZE);
		le16_put(leaf, BLKH_NR_ITEMS, (uint16_t)(nr - 1));
		delta += RFS_IH_SIZE;
	} else {
		uint8_t *nb = malloc(ih.len);
		if (!nb)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "entry removal");
		size_t len, n;
		uint32_t first;
		st = encode_without(&ih, body, victim, nb, &len, &n, &first);
		if (!st) {
			delta = ih.len - (uint32_t)len;
			/* the item keeps its end; its body starts delta bytes later */
			memcpy(leaf + ih.location + delta, nb, len);
			memset(leaf + ih.location, 0, delta);
			shift_bodies(leaf, pos + 1, nr, delta);
			size_t h = RFS_BLKH_SIZE + (size_t)pos * RFS_IH_SIZE;
			le16_put(leaf, h + IH_LOCATION, (uint16_t)(ih.location + delta));
			le16_put(leaf, h + IH_LEN, (uint16_t)len);
			le16_put(leaf, h + IH_FREE_OR_COUNT, (uint16_t)n);
			if (victim == 0) {
				/* not the leaf's first item: no delimiting key above */
				struct rfs_key nk = ih.key;
				nk.offset = first;
				rfs_key_encode(&nk, ih.key_format, leaf + h + IH_KEY);
			}
		}
		free(nb);
		if (st)
			return rfs_error_set(err, st, lv->block, "re-encoding a directory item");
	}
	le16_put(leaf, BLKH_FREE_SPACE, (uint16_t)(le16_at(leaf, BLKH_FREE_SPACE) + delta));
	if (rfs_leaf_validate(leaf, bs, NULL, NULL) != RFS_OK)
		return rfs_error_set(err, RFS_ERR_CORRUPT, lv->block,
				     "the leaf would not validate after the removal; left alone");
	st = repair_write(c, lv->block, leaf, err);
	if (!st && cur->height >= 2) {
		struct rfs_cursor_level *pl = &cur->lv[cur->height - 2];
		size_t dc = RFS_BLKH_SIZE + (size_t)pl->nr * RFS_KEY_SIZE +
			    (size_t)pl->pos * RFS_DC_SIZE + DC_SIZE;
		le16_put(pl->buf, dc, (uint16_t)(le16_at(pl->buf, dc) - delta));
		st = repair_write(c, pl->block, pl->buf, err);
	}
	if (!st && freed)
		*freed = entry_bytes;
	return st;
}

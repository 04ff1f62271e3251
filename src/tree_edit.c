/*
 * tree_edit.c - the tree-edit session: the set of block copies an operation
 * changes, block and objectid allocation, and the commit that writes a set as
 * one journal transaction (or straight home).  Node changes are in
 * src/tree_edit_node.c, directory entries in src/tree_edit_dir.c; the contract
 * is in include/rfs/tree_edit.h.
 *
 * Commit order with a journal (each step a write through the session's write
 * function, so the device's undo log saves every original first):
 *   1. descriptor, the logged copies and the commit block, at consecutive log
 *      offsets from the header's first unflushed offset (modulo the log size);
 *   2. every block to its home, in block order;
 *   3. the journal header: last flushed id = this transaction, first unflushed
 *      offset = just past it, mount id unchanged.
 * Killed before the commit block, the transaction is invalid and nothing of it
 * reached a home block; killed after it, the transaction is valid and newer
 * than the header's last flushed id, so the next mount (kernel), reiserfsck
 * and `rfsck fix` replay it whole.  The header is only ever advanced past a
 * transaction whose blocks are all home.
 */
#include "tree_edit_int.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"

/* Blocks one operation can change besides the ones counted so far: a leaf
 * split three ways, a split at every internal level and a new root, the
 * delimiting keys on the path, the bitmap blocks of their allocations and the
 * superblock. */
enum { TE_OP_MARGIN = 64, TE_DIRECT_BUDGET = 1024 };

static rfs_status default_write(void *ctx, uint64_t blk, const void *buf, struct rfs_error *err)
{
	return rfs_dev_write_block(ctx, blk, buf, err);
}

static void drop_set(struct rfs_tedit *te)
{
	for (size_t i = 0; i < te->n; i++)
		free(te->blocks[i].buf);
	te->n = 0;
}

static struct te_block *find_block(struct rfs_tedit *te, uint64_t blk)
{
	for (size_t i = 0; i < te->n; i++)
		if (te->blocks[i].blk == blk)
			return &te->blocks[i];
	return NULL;
}

/* Appends an entry for blk with a new zeroed buffer. */
static rfs_status add_block(struct rfs_tedit *te, uint64_t blk, struct te_block **out,
			    struct rfs_error *err)
{
	if (te->n == te->cap) {
		size_t cap = te->cap ? 2 * te->cap : 32;
		struct te_block *v = realloc(te->blocks, cap * sizeof(*v));
		if (!v)
			return rfs_error_set(err, RFS_ERR_NOMEM, blk, "tree edit block set");
		te->blocks = v;
		te->cap = cap;
	}
	uint8_t *buf = calloc(1, te->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, blk, "tree edit block");
	te->blocks[te->n] = (struct te_block){ .blk = blk, .buf = buf };
	*out = &te->blocks[te->n++];
	return RFS_OK;
}

rfs_status te_get(struct rfs_tedit *te, uint64_t blk, struct te_block **out,
		  struct rfs_error *err)
{
	struct te_block *b = find_block(te, blk);
	if (b) {
		*out = b;
		return RFS_OK;
	}
	if (blk >= te->fs->sb.block_count)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "block beyond the filesystem end (%u blocks)",
				     te->fs->sb.block_count);
	rfs_status st = add_block(te, blk, &b, err);
	if (st)
		return st;
	st = rfs_dev_read_block(te->fs->dev, blk, b->buf, err);
	if (st) {
		free(b->buf);
		te->n--;
		return st;
	}
	*out = b;
	return RFS_OK;
}

rfs_status te_node(struct rfs_tedit *te, uint64_t blk, int level, uint8_t **buf,
		   struct rfs_error *err)
{
	if (rfs_super_block_is_metadata(&te->fs->sb, blk))
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "tree pointer into the superblock, bitmap or journal area");
	struct te_block *b;
	rfs_status st = te_get(te, blk, &b, err);
	if (st)
		return st;
	int got = le16_at(b->buf, BLKH_LEVEL);
	if (got < RFS_LEVEL_LEAF || got > RFS_MAX_HEIGHT || (level && got != level))
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "node has level %d, %d expected",
				     got, level);
	/* Nodes the session built are checked at commit; nodes read from disk
	 * are checked before their first use (a fixable fault is no obstacle). */
	if (!b->node && !b->dirty) {
		rfs_status vs = got == RFS_LEVEL_LEAF ? rfs_leaf_validate(b->buf, te->bs, NULL, NULL)
						      : rfs_internal_validate(b->buf, te->bs, NULL, NULL);
		if (vs)
			return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "invalid %s",
					     got == RFS_LEVEL_LEAF ? "leaf" : "internal node");
	}
	b->node = true;
	*buf = b->buf;
	return RFS_OK;
}

void te_mark_dirty(struct rfs_tedit *te, uint64_t blk)
{
	struct te_block *b = find_block(te, blk);
	if (b)
		b->dirty = true;
}

/* ------------------------------------------------------------ superblock */

static rfs_status sb_copy(struct rfs_tedit *te, uint8_t **sb, struct rfs_error *err)
{
	struct te_block *b;
	rfs_status st = te_get(te, te->fs->sb.sb_block, &b, err);
	if (st)
		return st;
	*sb = b->buf + te->fs->sb.sb_byte_offset % te->bs;
	return RFS_OK;
}

rfs_status te_set_root(struct rfs_tedit *te, uint64_t root, unsigned height,
		       struct rfs_error *err)
{
	uint8_t *sb;
	rfs_status st = sb_copy(te, &sb, err);
	if (st)
		return st;
	le32_put(sb, SB_ROOT_BLOCK, (uint32_t)root);
	le16_put(sb, SB_TREE_HEIGHT, (uint16_t)height);
	te_mark_dirty(te, te->fs->sb.sb_block);
	te->root = root;
	te->height = height;
	return RFS_OK;
}

/* Reads root and height from the superblock copy (after an abort or commit). */
static rfs_status load_sb_fields(struct rfs_tedit *te, struct rfs_error *err)
{
	uint8_t *sb;
	rfs_status st = sb_copy(te, &sb, err);
	if (st)
		return st;
	te->root = le32_at(sb, SB_ROOT_BLOCK);
	te->height = le16_at(sb, SB_TREE_HEIGHT);
	return RFS_OK;
}

/* ------------------------------------------------------------- allocation */

static rfs_status bitmap_byte(struct rfs_tedit *te, uint64_t blk, uint8_t **byte, uint8_t *bit,
			      struct rfs_error *err)
{
	uint64_t per = (uint64_t)te->bs * 8;
	uint32_t i = (uint32_t)(blk / per);
	if (i >= te->fs->sb.bmap_count)
		return rfs_error_set(err, RFS_ERR_INVALID, blk, "no bitmap block covers it");
	struct te_block *b;
	rfs_status st = te_get(te, rfs_bitmap_block(&te->fs->sb, i), &b, err);
	if (st)
		return st;
	uint64_t j = blk % per;
	*byte = b->buf + j / 8;
	*bit = (uint8_t)(1u << (j % 8));
	return RFS_OK;
}

static rfs_status add_free_count(struct rfs_tedit *te, int delta, struct rfs_error *err)
{
	uint8_t *sb;
	rfs_status st = sb_copy(te, &sb, err);
	if (st)
		return st;
	uint32_t f = le32_at(sb, SB_FREE_BLOCKS);
	le32_put(sb, SB_FREE_BLOCKS, (uint32_t)((int64_t)f + delta));
	te_mark_dirty(te, te->fs->sb.sb_block);
	return RFS_OK;
}

rfs_status rfs_tedit_alloc_block(struct rfs_tedit *te, uint64_t near, uint64_t *blk,
				 struct rfs_error *err)
{
	const struct rfs_super *sb = &te->fs->sb;
	const uint64_t count = sb->block_count, per = (uint64_t)te->bs * 8;
	if (near >= count)
		near = 0;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t b = pass == 0 ? near : 0, to = pass == 0 ? count : near;
		while (b < to) {
			/* one bitmap block at a time */
			uint32_t i = (uint32_t)(b / per);
			if (i >= sb->bmap_count)
				break;
			uint64_t bmblk = rfs_bitmap_block(sb, i);
			struct te_block *bm;
			rfs_status st = te_get(te, bmblk, &bm, err);
			if (st)
				return st;
			uint8_t *map = bm->buf;
			uint64_t end = (uint64_t)(i + 1) * per < to ? (uint64_t)(i + 1) * per : to;
			for (; b < end; b++) {
				uint64_t j = b % per;
				if (map[j / 8] == 0xFF && j % 8 == 0 && b + 8 <= end) {
					b += 7;   /* a full byte: eight used blocks */
					continue;
				}
				if ((map[j / 8] & (1u << (j % 8))) || rfs_super_block_is_metadata(sb, b))
					continue;
				map[j / 8] |= (uint8_t)(1u << (j % 8));
				te_mark_dirty(te, bmblk);
				st = add_free_count(te, -1, err);
				if (st)
					return st;
				*blk = b;
				return RFS_OK;
			}
		}
	}
	return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK, "no free block left");
}

rfs_status rfs_tedit_free_block(struct rfs_tedit *te, uint64_t blk, struct rfs_error *err)
{
	const struct rfs_super *sb = &te->fs->sb;
	if (blk >= sb->block_count || rfs_super_block_is_metadata(sb, blk))
		return rfs_error_set(err, RFS_ERR_INVALID, blk,
				     "refusing to free a metadata block or one past the end");
	uint8_t *byte = NULL, bit = 0;
	rfs_status st = bitmap_byte(te, blk, &byte, &bit, err);
	if (st)
		return st;
	if (!(*byte & bit))
		return rfs_error_set(err, RFS_ERR_INVALID, blk, "block is free already");
	*byte &= (uint8_t)~bit;
	te_mark_dirty(te, rfs_bitmap_block(sb, (uint32_t)(blk / ((uint64_t)te->bs * 8))));
	/* A freed node's copy must not be written: its content no longer counts. */
	struct te_block *b = find_block(te, blk);
	if (b) {
		free(b->buf);
		*b = te->blocks[--te->n];
	}
	return add_free_count(te, +1, err);
}

rfs_status te_new_node(struct rfs_tedit *te, uint64_t near, uint64_t *blk, uint8_t **buf,
		       struct rfs_error *err)
{
	rfs_status st = rfs_tedit_alloc_block(te, near, blk, err);
	if (st)
		return st;
	struct te_block *b;
	st = add_block(te, *blk, &b, err);
	if (st)
		return st;
	b->dirty = b->fresh = b->node = true;
	*buf = b->buf;
	return RFS_OK;
}

rfs_status rfs_tedit_data_block(struct rfs_tedit *te, uint64_t blk, uint8_t **buf,
				struct rfs_error *err)
{
	if (rfs_super_block_is_metadata(&te->fs->sb, blk))
		return rfs_error_set(err, RFS_ERR_INVALID, blk, "not a data block");
	struct te_block *b;
	rfs_status st = te_get(te, blk, &b, err);
	if (st)
		return st;
	b->dirty = true;
	*buf = b->buf;
	return RFS_OK;
}

/* -------------------------------------------------------------- objectids */

/* The map in the superblock copy: *n boundaries at map (sorted, even count). */
static rfs_status oid_map(struct rfs_tedit *te, uint8_t **sb, uint8_t **map, uint32_t *n,
			  uint32_t *max, struct rfs_error *err)
{
	rfs_status st = sb_copy(te, sb, err);
	if (st)
		return st;
	const struct rfs_super *s = &te->fs->sb;
	uint32_t cap = (uint32_t)((te->bs - s->sb_byte_offset % te->bs - s->sb_size) / 4);
	*n = le16_at(*sb, SB_OID_CURSIZE);
	*max = le16_at(*sb, SB_OID_MAXSIZE);
	if (*max > cap || *max == 0)
		*max = cap & ~1u;
	if (*n < 2 || *n % 2 || *n > *max)
		return rfs_error_set(err, RFS_ERR_CORRUPT, s->sb_block,
				     "objectid map of %u entries (capacity %u)", *n, *max);
	*map = *sb + s->sb_size;
	return RFS_OK;
}

static uint32_t m_at(const uint8_t *map, uint32_t i) { return le32_at(map, 4 * (size_t)i); }
static void m_put(uint8_t *map, uint32_t i, uint32_t v) { le32_put(map, 4 * (size_t)i, v); }

rfs_status rfs_tedit_objectid_used(struct rfs_tedit *te, uint32_t objectid, bool *used,
				   struct rfs_error *err)
{
	uint8_t *sb, *map;
	uint32_t n, max;
	rfs_status st = oid_map(te, &sb, &map, &n, &max, err);
	if (st)
		return st;
	*used = false;
	for (uint32_t i = 0; i + 1 < n; i += 2)
		if (objectid >= m_at(map, i) && objectid < m_at(map, i + 1))
			*used = true;
	return RFS_OK;
}

rfs_status rfs_tedit_alloc_objectid(struct rfs_tedit *te, uint32_t *objectid,
				    struct rfs_error *err)
{
	uint8_t *sb, *map;
	uint32_t n, max;
	rfs_status st = oid_map(te, &sb, &map, &n, &max, err);
	if (st)
		return st;
	/* The first id after the first used run: the end of that run moves up,
	 * and when it meets the next run the two become one. */
	uint32_t id = m_at(map, 1);
	if (id == UINT32_MAX || id < 2)
		return rfs_error_set(err, RFS_ERR_LIMIT, te->fs->sb.sb_block, "no objectid left");
	m_put(map, 1, id + 1);
	if (n > 2 && m_at(map, 1) == m_at(map, 2)) {
		memmove(map + 4, map + 12, (size_t)(n - 3) * 4);
		le16_put(sb, SB_OID_CURSIZE, (uint16_t)(n - 2));
		memset(map + 4 * (size_t)(n - 2), 0, 8);
	}
	te_mark_dirty(te, te->fs->sb.sb_block);
	*objectid = id;
	return RFS_OK;
}

rfs_status rfs_tedit_release_objectid(struct rfs_tedit *te, uint32_t objectid, bool *released,
				      struct rfs_error *err)
{
	uint8_t *sb, *map;
	uint32_t n, max;
	bool done = false;
	rfs_status st = oid_map(te, &sb, &map, &n, &max, err);
	if (st)
		return st;
	for (uint32_t i = 0; i + 1 < n; i += 2) {
		uint32_t lo = m_at(map, i), hi = m_at(map, i + 1);
		if (objectid < lo || objectid >= hi)
			continue;
		if (objectid == lo) {
			/* the run loses its first id; an emptied run goes */
			m_put(map, i, lo + 1);
			if (lo + 1 == hi) {
				memmove(map + 4 * (size_t)i, map + 4 * (size_t)(i + 2),
					(size_t)(n - i - 2) * 4);
				memset(map + 4 * (size_t)(n - 2), 0, 8);
				le16_put(sb, SB_OID_CURSIZE, (uint16_t)(n - 2));
			}
			done = true;
		} else if (objectid + 1 == hi) {
			m_put(map, i + 1, objectid);
			done = true;
		} else if (n + 2 <= max) {
			/* split the run in two around the id */
			memmove(map + 4 * (size_t)(i + 3), map + 4 * (size_t)(i + 1),
				(size_t)(n - i - 1) * 4);
			m_put(map, i + 1, objectid);
			m_put(map, i + 2, objectid + 1);
			le16_put(sb, SB_OID_CURSIZE, (uint16_t)(n + 2));
			done = true;
		}
		break;
	}
	if (done)
		te_mark_dirty(te, te->fs->sb.sb_block);
	if (released)
		*released = done;
	return RFS_OK;
}

/* ----------------------------------------------------------------- session */

/* A journal we may write transactions into: on this device, with a header
 * that names a replay start (the state every kernel unmount leaves). */
static rfs_status open_journal(struct rfs_tedit *te, struct rfs_error *err)
{
	const struct rfs_super *sb = &te->fs->sb;
	te->journal = false;
	if (sb->j_dev != 0 || sb->j_size < 4)
		return RFS_OK;
	te->j_first = sb->j_first;
	te->j_size = sb->j_size;
	te->j_header = rfs_super_journal_header_block(sb);
	struct te_block *b;
	rfs_status st = te_get(te, te->j_header, &b, err);
	if (st)
		return st;
	struct rfs_journal_header h;
	rfs_journal_header_decode(b->buf, &h);
	if (h.last_flush_trans_id == UINT32_MAX || h.first_unflushed_offset >= sb->j_size)
		return RFS_OK;
	if (h.last_flush_trans_id == 0) {
		/* A header that names no replay start (a volume never mounted):
		 * a mount scans the whole log and starts at its oldest valid
		 * transaction.  With none in the log, ours (id 1) is the only one;
		 * otherwise the header must first point past the newest, so that
		 * nothing stale is ever replayed before ours. */
		const struct rfs_journal_state *js = &te->fs->journal;
		if (js->have_newest) {
			h.last_flush_trans_id = js->newest_trans_id;
			h.first_unflushed_offset = js->newest_next_offset;
			h.mount_id = js->newest_mount_id;
			le32_put(b->buf, JH_LAST_FLUSH, h.last_flush_trans_id);
			le32_put(b->buf, JH_FIRST_UNFLUSHED, h.first_unflushed_offset);
			le32_put(b->buf, JH_MOUNT_ID, h.mount_id);
			st = te->write(te->write_ctx, te->j_header, b->buf, err);
			if (st)
				return st;
		}
	}
	uint32_t tmax = sb->j_trans_max ? sb->j_trans_max : 1024;
	if (tmax > sb->j_size - 2)
		tmax = sb->j_size - 2;
	if (tmax > 2 * rfs_journal_trans_half(te->bs))
		tmax = 2 * rfs_journal_trans_half(te->bs);
	if (tmax <= TE_OP_MARGIN + 8)
		return RFS_OK;
	te->j_trans_max = tmax;
	te->j_offset = h.first_unflushed_offset;
	te->j_last_flush = h.last_flush_trans_id;
	te->j_mount_id = h.mount_id;
	te->journal = true;
	return RFS_OK;
}

rfs_status rfs_tedit_open(struct rfs_fs *fs, const struct rfs_tedit_options *opt,
			  struct rfs_tedit **out, struct rfs_error *err)
{
	struct rfs_tedit *te = calloc(1, sizeof(*te));
	if (!te)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree edit session");
	te->fs = fs;
	te->bs = fs->bs;
	te->write = opt && opt->write ? opt->write : default_write;
	te->write_ctx = opt && opt->write ? opt->write_ctx : fs->dev;
	rfs_status st = load_sb_fields(te, err);
	if (!st && !(opt && opt->no_journal))
		st = open_journal(te, err);
	drop_set(te);
	if (st) {
		rfs_tedit_close(te);
		return st;
	}
	*out = te;
	return RFS_OK;
}

void rfs_tedit_close(struct rfs_tedit *te)
{
	if (!te)
		return;
	drop_set(te);
	free(te->blocks);
	free(te);
}

void rfs_tedit_abort(struct rfs_tedit *te)
{
	drop_set(te);
	struct rfs_error e;
	rfs_error_clear(&e);
	if (load_sb_fields(te, &e))
		te->failed = true;   /* cannot even read the superblock: stop */
	drop_set(te);
}

size_t rfs_tedit_pending(const struct rfs_tedit *te)
{
	size_t k = 0;
	for (size_t i = 0; i < te->n; i++)
		k += te->blocks[i].dirty;
	return k;
}

size_t rfs_tedit_budget(const struct rfs_tedit *te)
{
	return te->journal ? te->j_trans_max - TE_OP_MARGIN : TE_DIRECT_BUDGET;
}

void rfs_tedit_counts(const struct rfs_tedit *te, uint64_t *journaled, uint64_t *direct)
{
	*journaled = te->n_journaled;
	*direct = te->n_direct;
}

static int cmp_block(const void *a, const void *b)
{
	const struct te_block *x = *(const struct te_block *const *)a;
	const struct te_block *y = *(const struct te_block *const *)b;
	return (x->blk > y->blk) - (x->blk < y->blk);
}

/* Writes the descriptor, the copies and the commit block of one transaction. */
static rfs_status write_transaction(struct rfs_tedit *te, struct te_block **v, uint32_t len,
				    struct rfs_error *err)
{
	uint32_t half = rfs_journal_trans_half(te->bs);
	uint32_t id = te->j_last_flush + 1;
	uint8_t *desc = calloc(1, te->bs), *commit = calloc(1, te->bs);
	rfs_status st = RFS_OK;
	if (!desc || !commit) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal transaction");
		goto out;
	}
	le32_put(desc, JD_TRANS_ID, id);
	le32_put(desc, JD_LEN, len);
	le32_put(desc, JD_MOUNT_ID, te->j_mount_id);
	memcpy(desc + te->bs - 12, RFS_JOURNAL_DESC_MAGIC, 8);
	le32_put(commit, JC_TRANS_ID, id);
	le32_put(commit, JC_LEN, len);
	for (uint32_t i = 0; i < len; i++) {
		if (i < half)
			le32_put(desc, JD_REAL + 4 * (size_t)i, (uint32_t)v[i]->blk);
		else
			le32_put(commit, JC_REAL + 4 * (size_t)(i - half), (uint32_t)v[i]->blk);
	}
	uint64_t off = te->j_offset;
	st = te->write(te->write_ctx, te->j_first + off % te->j_size, desc, err);
	for (uint32_t i = 0; !st && i < len; i++)
		st = te->write(te->write_ctx, te->j_first + (off + 1 + i) % te->j_size, v[i]->buf,
			       err);
	if (!st)
		st = te->write(te->write_ctx, te->j_first + (off + 1 + len) % te->j_size, commit,
			       err);
out:
	free(desc);
	free(commit);
	return st;
}

/* Advances the journal header past the transaction just written home. */
static rfs_status advance_header(struct rfs_tedit *te, uint32_t len, struct rfs_error *err)
{
	uint8_t *h = malloc(te->bs);
	if (!h)
		return rfs_error_set(err, RFS_ERR_NOMEM, te->j_header, "journal header");
	rfs_status st = rfs_dev_read_block(te->fs->dev, te->j_header, h, err);
	uint32_t next = (uint32_t)(((uint64_t)te->j_offset + len + 2) % te->j_size);
	if (!st) {
		le32_put(h, JH_LAST_FLUSH, te->j_last_flush + 1);
		le32_put(h, JH_FIRST_UNFLUSHED, next);
		le32_put(h, JH_MOUNT_ID, te->j_mount_id);
		st = te->write(te->write_ctx, te->j_header, h, err);
	}
	free(h);
	if (!st) {
		te->j_last_flush++;
		te->j_offset = next;
	}
	return st;
}

/* After a commit: the decoded superblock follows the tree (cursors read it). */
static rfs_status refresh_fs_sb(struct rfs_tedit *te, struct rfs_error *err)
{
	uint8_t *sb;
	rfs_status st = sb_copy(te, &sb, err);
	if (st)
		return st;
	struct rfs_super *s = &te->fs->sb;
	s->root_block = le32_at(sb, SB_ROOT_BLOCK);
	s->tree_height = le16_at(sb, SB_TREE_HEIGHT);
	s->free_blocks = le32_at(sb, SB_FREE_BLOCKS);
	s->oid_cursize = le16_at(sb, SB_OID_CURSIZE);
	te->root = s->root_block;
	te->height = s->tree_height;
	return RFS_OK;
}

rfs_status rfs_tedit_commit(struct rfs_tedit *te, struct rfs_error *err)
{
	if (te->failed)
		return rfs_error_set(err, RFS_ERR_IO, RFS_NO_BLOCK,
				     "an earlier write of this tree edit failed");
	if (rfs_tedit_pending(te) == 0) {
		drop_set(te);
		return RFS_OK;
	}
	rfs_status st = te_fixup_and_verify(te, err);
	size_t len = 0;
	struct te_block **v = NULL;
	if (!st) {
		v = malloc(te->n * sizeof(*v));
		if (!v)
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "commit list");
	}
	if (!st) {
		for (size_t i = 0; i < te->n; i++)
			if (te->blocks[i].dirty)
				v[len++] = &te->blocks[i];
		qsort(v, len, sizeof(*v), cmp_block);
		if (te->journal && len > te->j_trans_max)
			st = rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
					   "%zu blocks changed; a transaction holds at most %u",
					   len, te->j_trans_max);
	}
	if (st) {
		free(v);
		rfs_tedit_abort(te);
		return st;
	}
	if (te->journal)
		st = write_transaction(te, v, (uint32_t)len, err);
	for (size_t i = 0; !st && i < len; i++)
		st = te->write(te->write_ctx, v[i]->blk, v[i]->buf, err);
	if (!st && te->journal)
		st = advance_header(te, (uint32_t)len, err);
	free(v);
	if (st) {
		te->failed = true;
		drop_set(te);
		return st;
	}
	if (te->journal)
		te->n_journaled++;
	else
		te->n_direct++;
	for (size_t i = 0; i < te->n; i++)
		te->blocks[i].dirty = te->blocks[i].fresh = false;
	st = refresh_fs_sb(te, err);
	drop_set(te);
	return st;
}

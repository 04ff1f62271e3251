/*
 * pipeline.c - the rebuild stages in order, shared by `rfsck rebuild` (which
 * then runs check's repair passes and reports) and by `rfsck salvage` on a
 * damaged tree (which builds the new tree in a dry-run overlay, in memory,
 * and walks it).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rebuild.h"

/* What binds an index to this image: its size, block size and superblock. */
static rfs_status image_identity(struct rfs_fs *fs, char *out, size_t len, struct rfs_error *err)
{
	uint8_t *buf = malloc(fs->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "identity");
	rfs_status st = rfs_dev_read_block(fs->dev, fs->sb.sb_block, buf, err);
	if (!st)
		snprintf(out, len, "bytes=%llu bs=%u sb=%016llx",
			 (unsigned long long)rfs_dev_size(fs->dev), fs->bs,
			 (unsigned long long)rb_checksum(buf, fs->bs));
	free(buf);
	return st;
}

void rb_init(struct rb_ctx *c, struct rfs_fs *fs, const struct rb_options *opt)
{
	memset(c, 0, sizeof(*c));
	c->fs = fs;
	c->dev = fs->dev;
	c->bs = fs->bs;
	c->opt = *opt;
	c->nblocks = fs->sb.block_count;
	if (rfs_dev_block_count(fs->dev) < c->nblocks)
		c->nblocks = rfs_dev_block_count(fs->dev);
	rfs_progress_init(&c->progress, opt->progress_force, opt->quiet);
}

rfs_status rb_retarget(struct rb_ctx *c, struct rfs_fs *fs, struct rfs_error *err)
{
	char was[256], now_id[256];
	rfs_status st = image_identity(c->fs, was, sizeof(was), err);
	if (!st)
		st = image_identity(fs, now_id, sizeof(now_id), err);
	if (st)
		return st;
	uint64_t n = fs->sb.block_count;
	if (rfs_dev_block_count(fs->dev) < n)
		n = rfs_dev_block_count(fs->dev);
	if (strcmp(was, now_id) != 0 || fs->bs != c->bs || n != c->nblocks)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "the copy does not match the image it was made from (%s; %s)",
				     was, now_id);
	c->fs = fs;
	c->dev = fs->dev;
	return RFS_OK;
}

void rb_release(struct rb_ctx *c)
{
	rfs_index_close(c->ix);
	c->ix = NULL;
	rb_release_sets(c);
}

void rb_release_sets(struct rb_ctx *c)
{
	rfs_bitmap_free(&c->old_used);
	rfs_bitmap_free(&c->meta);
	rfs_bitmap_free(&c->leaves);
	rfs_bitmap_free(&c->nested);
	rfs_bitmap_free(&c->accepted);
	rfs_bitmap_free(&c->claimed);
	rfs_bitmap_free(&c->nodes);
	rb_objmap_free(&c->objs);
}

double rb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *const rb_step_names[RB_STEP_COUNT] = {
	[RB_STEP_LOOKUP] = "lookup", [RB_STEP_NESTED] = "nested", [RB_STEP_SELECT] = "select",
	[RB_STEP_NAMESPACE] = "namespace", [RB_STEP_JOURNAL] = "journal", [RB_STEP_EMIT] = "emit",
	[RB_STEP_FINISH] = "finish", [RB_STEP_BITMAPS] = "bitmaps",
};

static rfs_status timed(struct rb_ctx *c, enum rb_step step,
			rfs_status (*fn)(struct rb_ctx *, struct rfs_error *), struct rfs_error *err)
{
	double t0 = rb_now();
	rfs_status st = fn(c, err);
	c->t_step[step] += rb_now() - t0;
	return st;
}

static rfs_status build_lookup(struct rb_ctx *c, struct rfs_error *err)
{
	return rfs_index_build_lookup(c->ix, err);
}

rfs_status rb_decide(struct rb_ctx *c, const char *index_path, struct rfs_error *err)
{
	double t0 = rb_now();
	char identity[256];
	bool fresh;
	rfs_status st = image_identity(c->fs, identity, sizeof(identity), err);
	if (!st)
		st = rfs_index_open(index_path, &c->ix, err);
	if (!st)
		st = rfs_index_bind(c->ix, identity, &fresh, err);
	if (!st)
		st = rb_scan(c, err);
	if (!st)
		st = rfs_bitmap_status(&c->leaves, "leaf candidates", err);
	double t1 = rb_now();
	c->t_scan = t1 - t0;
	/* decisions are always made again (cheap); only the scan is resumed */
	if (!st && c->n.resumed)
		st = rfs_index_clear_decisions(c->ix, err);
	if (!st)
		st = timed(c, RB_STEP_LOOKUP, build_lookup, err);
	if (!st)
		st = timed(c, RB_STEP_NESTED, rb_nested, err);
	if (!st)
		st = rfs_bitmap_status(&c->nested, "blocks of nested filesystems", err);
	if (!st)
		st = timed(c, RB_STEP_SELECT, rb_select, err);
	if (!st)
		st = rfs_bitmap_status(&c->accepted, "accepted leaves", err);
	if (!st && c->n.accepted == 0)
		st = rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				   "no usable leaf was found (%llu candidates, all rejected); "
				   "nothing was written", (unsigned long long)c->n.candidates);
	if (!st)
		st = timed(c, RB_STEP_NAMESPACE, rb_namespace, err);
	c->t_decide = rb_now() - t1;
	return st;
}

/* A tree written where its bitmaps cannot follow would be a volume the
 * kernel refuses and check calls damaged; said before the first write.  The
 * bitmap blocks lie in increasing order, so the last one decides.  (A device
 * that is only short of data blocks is a truncated image: its new tree is
 * written, and check reports the missing length.) */
static rfs_status bitmaps_fit(const struct rb_ctx *c, struct rfs_error *err)
{
	const struct rfs_super *sb = &c->fs->sb;
	uint64_t have = rfs_dev_block_count(c->dev);
	if (sb->bmap_count == 0)
		return RFS_OK;
	uint64_t last = rfs_bitmap_block(sb, sb->bmap_count - 1);
	if (last < have)
		return RFS_OK;
	return rfs_error_set(err, RFS_ERR_SHORT, last,
			     "the device holds %llu blocks, the superblock says %llu, and the "
			     "last of its %u bitmaps lies beyond the end: no tree written",
			     (unsigned long long)have, (unsigned long long)sb->block_count,
			     sb->bmap_count);
}

rfs_status rb_build(struct rb_ctx *c, struct rfs_error *err)
{
	double t0 = rb_now();
	rfs_status st = c->opt.dry_run ? RFS_OK : bitmaps_fit(c, err);
	if (!st)
		st = timed(c, RB_STEP_JOURNAL, rb_flush_journal, err);
	if (!st)
		st = timed(c, RB_STEP_EMIT, rb_emit, err);
	if (!st)
		st = timed(c, RB_STEP_FINISH, rb_finish, err);
	c->t_build = rb_now() - t0;
	return st;
}

char *rb_partial_ranges(struct rb_ctx *c, uint32_t dir_id, uint32_t objectid)
{
	sqlite3_stmt *q;
	struct rfs_error e;
	if (!c->ix || rfs_index_prepare(c->ix, "SELECT detail FROM outcome WHERE what = 'partial'"
				       " AND dir_id = ? AND objectid = ? LIMIT 1", &q, &e))
		return NULL;
	sqlite3_bind_int64(q, 1, dir_id);
	sqlite3_bind_int64(q, 2, objectid);
	char *r = NULL;
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		r = strdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return r;
}

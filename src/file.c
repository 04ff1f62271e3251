/*
 * file.c - streaming an object's body (direct and indirect items) in file
 * order, with holes reported as holes.
 *
 * Guarantees (whatever the image says): pieces handed to the callback are
 * contiguous, start at 0 and end exactly at min(stat size, format limit);
 * overlapping or misaligned items are an RFS_ERR_CORRUPT, not silently merged;
 * data pointers outside the filesystem or into its metadata are refused; no
 * allocation depends on a size read from disk.
 */
#include "rfs/object.h"
#include "rfs/bytes.h"
#include "rfs/strbuf.h"

#include <stdlib.h>

enum { READ_RUN_MAX = 64 };     /* blocks per sequential data read */

struct body_reader {
	struct rfs_cursor *cur;
	const struct rfs_object *obj;
	rfs_data_fn fn;
	void *ctx;
	uint64_t size;              /* bytes to deliver */
	uint64_t pos;               /* bytes delivered */
	uint8_t *buf;               /* READ_RUN_MAX blocks */
	struct rfs_read_stats *stats;
	bool stop;
};

static rfs_status emit_hole_to(struct body_reader *r, uint64_t off)
{
	if (off > r->pos) {
		if (r->fn(r->ctx, r->pos, NULL, off - r->pos))
			r->stop = true;
		r->stats->holes++;
		r->pos = off;
	}
	return RFS_OK;
}

static rfs_status check_order(struct body_reader *r, uint64_t off, struct rfs_error *err)
{
	if (off < r->pos)
		return rfs_error_set(err, RFS_ERR_CORRUPT, rfs_cursor_leaf_block(r->cur),
				     "items of [%u %u] overlap at file offset %llu",
				     r->obj->dir_id, r->obj->objectid, (unsigned long long)off);
	return RFS_OK;
}

/* Delivers a run of n data blocks starting at home block first, covering file
 * bytes [off, off + n*bs) clipped to size. */
static rfs_status emit_run(struct body_reader *r, uint32_t first, uint32_t n, uint64_t off,
			   struct rfs_error *err)
{
	struct rfs_fs *fs = r->cur->fs;
	rfs_status st = rfs_dev_read_run(fs->dev, first, n, r->buf, NULL, err);
	if (st)
		return st;
	uint64_t len = (uint64_t)n * fs->bs;
	if (off + len > r->size)
		len = r->size - off;
	if (r->fn(r->ctx, off, r->buf, (size_t)len))
		r->stop = true;
	r->stats->data_blocks += n;
	r->pos = off + len;
	return RFS_OK;
}

static rfs_status read_indirect(struct body_reader *r, const struct rfs_item_head *ih,
				const uint8_t *body, struct rfs_error *err)
{
	struct rfs_fs *fs = r->cur->fs;
	uint64_t base = ih->key.offset - 1;
	if (base % fs->bs)
		return rfs_error_set(err, RFS_ERR_CORRUPT, rfs_cursor_leaf_block(r->cur),
				     "indirect item of [%u %u] at unaligned offset %llu",
				     r->obj->dir_id, r->obj->objectid,
				     (unsigned long long)ih->key.offset);
	rfs_status st = check_order(r, base, err);
	if (st)
		return st;
	uint32_t n = ih->len / 4;
	/* Copy the pointers: reading data may not disturb the cursor, but keep the
	 * loop independent of the leaf buffer anyway. */
	uint32_t i = 0;
	while (i < n && !r->stop) {
		uint64_t off = base + (uint64_t)i * fs->bs;
		if (off >= r->size)
			break;
		uint32_t ptr = le32_at(body, 4 * (size_t)i);
		if (ptr == 0) {
			uint32_t j = i;
			while (j < n && le32_at(body, 4 * (size_t)j) == 0)
				j++;
			uint64_t end = base + (uint64_t)j * fs->bs;
			emit_hole_to(r, end < r->size ? end : r->size);
			i = j;
			continue;
		}
		/* A run of consecutive, valid pointers. */
		uint32_t run = 0;
		while (i + run < n && run < READ_RUN_MAX && off + (uint64_t)run * fs->bs < r->size) {
			uint32_t p = le32_at(body, 4 * (size_t)(i + run));
			if (p != ptr + run)
				break;
			if (p >= fs->sb.block_count || rfs_super_block_is_metadata(&fs->sb, p))
				return rfs_error_set(err, RFS_ERR_CORRUPT, rfs_cursor_leaf_block(r->cur),
						     "[%u %u] points to block %u %s at file offset %llu",
						     r->obj->dir_id, r->obj->objectid, p,
						     p >= fs->sb.block_count ? "beyond the end"
									      : "in the metadata area",
						     (unsigned long long)(off + (uint64_t)run * fs->bs));
			run++;
		}
		emit_hole_to(r, off);
		if (r->stop)
			break;
		st = emit_run(r, ptr, run, off, err);
		if (st)
			return st;
		i += run;
	}
	return RFS_OK;
}

static rfs_status read_direct(struct body_reader *r, const struct rfs_item_head *ih,
			      const uint8_t *body, struct rfs_error *err)
{
	uint64_t off = ih->key.offset - 1;
	rfs_status st = check_order(r, off, err);
	if (st)
		return st;
	if (off >= r->size)
		return RFS_OK;
	uint64_t len = ih->len;
	if (off + len > r->size)
		len = r->size - off;   /* 3.6 tails are padded to 8 bytes */
	emit_hole_to(r, off);
	if (!r->stop && r->fn(r->ctx, off, body, (size_t)len))
		r->stop = true;
	r->stats->direct_bytes += len;
	r->pos = off + len;
	return RFS_OK;
}

rfs_status rfs_object_read(struct rfs_cursor *cur, const struct rfs_object *obj,
			   rfs_data_fn fn, void *ctx, struct rfs_read_stats *stats,
			   struct rfs_error *err)
{
	struct rfs_read_stats local = { 0 };
	struct body_reader r = { .cur = cur, .obj = obj, .fn = fn, .ctx = ctx,
				 .stats = stats ? stats : &local };
	uint64_t max = rfs_max_file_size(cur->fs, obj->sd.version);
	if (obj->sd.size > max)
		return rfs_error_set(err, RFS_ERR_CORRUPT, obj->sd_block,
				     "[%u %u] claims %llu bytes, more than the format allows",
				     obj->dir_id, obj->objectid, (unsigned long long)obj->sd.size);
	r.size = obj->sd.size;
	r.buf = malloc((size_t)READ_RUN_MAX * cur->fs->bs);
	if (!r.buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "file read buffer");

	struct rfs_key start = { obj->dir_id, obj->objectid, 1, RFS_TYPE_STAT };
	bool found;
	rfs_status st = rfs_cursor_seek_object(cur, &start, &found, err);
	while (!st && found && !r.stop && rfs_cursor_at_item(cur)) {
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(cur, &ih, &body);
		if (ih.key.dir_id != obj->dir_id || ih.key.objectid != obj->objectid)
			break;
		if (ih.key.offset == 0)
			st = rfs_error_set(err, RFS_ERR_CORRUPT, rfs_cursor_leaf_block(cur),
					   "body item of [%u %u] at offset 0", obj->dir_id,
					   obj->objectid);
		else if (ih.key.type == RFS_TYPE_INDIRECT)
			st = read_indirect(&r, &ih, body, err);
		else if (ih.key.type == RFS_TYPE_DIRECT)
			st = read_direct(&r, &ih, body, err);
		if (!st && !r.stop)
			st = rfs_cursor_next(cur, err);
	}
	if (!st && !r.stop)
		emit_hole_to(&r, r.size);
	free(r.buf);
	return st;
}

struct small_sink {
	struct strbuf *out;
	size_t max;
};

static int append_piece(void *c, uint64_t off, const uint8_t *data, size_t len)
{
	struct small_sink *k = c;
	(void)off;
	if (k->out->len + len > k->max)
		return 1;
	if (data)
		return sb_add(k->out, data, len) ? 1 : 0;
	for (size_t i = 0; i < len; i++)
		if (sb_add(k->out, "", 1))
			return 1;
	return 0;
}

rfs_status rfs_object_read_small(struct rfs_cursor *cur, const struct rfs_object *obj,
				 size_t max, struct strbuf *out, struct rfs_error *err)
{
	if (obj->sd.size > max)
		return rfs_error_set(err, RFS_ERR_LIMIT, obj->sd_block,
				     "object [%u %u] of %llu bytes is larger than %zu", obj->dir_id,
				     obj->objectid, (unsigned long long)obj->sd.size, max);
	struct small_sink k = { out, max };
	return rfs_object_read(cur, obj, append_piece, &k, NULL, err);
}

/*
 * salvage_body.c - reading a regular file's body for salvage, going on past
 * what cannot be read.
 *
 * rfs_object_read (src/file.c) stops at the first unreadable block, which is
 * right for `cat` but loses the rest of a file for salvage.  This reader walks
 * the same items in key order and delivers the same pieces (contiguous from 0
 * to size, holes as data == NULL), except that a byte range it cannot read is
 * delivered as a hole and listed as missing:
 *   - a data block whose read fails (I/O error, or marked bad by a ddrescue
 *     mapfile): runs are read in one call and retried block by block;
 *   - a pointer outside the filesystem or into its metadata area;
 *   - an item that overlaps what was already delivered (skipped; first wins);
 *   - everything after a leaf that cannot be read (the cursor cannot move on).
 * Bounds: pieces stop at size (the caller clips size to the format limit);
 * one buffer of RUN_MAX blocks; the missing list grows with the number of
 * failures, which is bounded by the pointers the items hold.
 */
#include "salvage_int.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"

enum { RUN_MAX = 64 };

struct body {
	struct rfs_cursor *cur;
	const struct rfs_object *obj;
	rfs_data_fn fn;
	void *ctx;
	uint64_t size, pos;
	uint8_t *buf;
	struct salvage_missing *miss;
	bool stop;                   /* fn asked to stop */
	bool nomem;
};

static void deliver(struct body *b, uint64_t off, const uint8_t *data, uint64_t len)
{
	if (!len || b->stop)
		return;
	if (b->fn(b->ctx, off, data, (size_t)len))
		b->stop = true;
	b->pos = off + len;
}

static void hole_to(struct body *b, uint64_t off)
{
	if (off > b->pos)
		deliver(b, b->pos, NULL, off - b->pos);
}

/* Records [from, to) as missing (merging with the previous range) and
 * delivers it as a hole. */
static void missing(struct body *b, uint64_t from, uint64_t to, const char *why)
{
	struct salvage_missing *m = b->miss;
	if (to <= from)
		return;
	if (!m->first_reason[0])
		snprintf(m->first_reason, sizeof(m->first_reason), "%s", why);
	if (m->n && m->v[2 * m->n - 1] == from) {
		m->v[2 * m->n - 1] = to;
	} else {
		if (m->n == m->cap) {
			size_t ncap = m->cap ? m->cap * 2 : 8;
			uint64_t *nv = realloc(m->v, 2 * ncap * sizeof(*nv));
			if (!nv) {
				b->nomem = true;
				b->stop = true;
				return;
			}
			m->v = nv;
			m->cap = ncap;
		}
		m->v[2 * m->n] = from;
		m->v[2 * m->n + 1] = to;
		m->n++;
	}
	hole_to(b, from);
	deliver(b, from, NULL, to - from);
}

static bool bad_pointer(const struct rfs_fs *fs, uint32_t p)
{
	return p >= fs->sb.block_count || rfs_super_block_is_metadata(&fs->sb, p);
}

/* n valid consecutive blocks from home block first at file offset off. */
static void read_run(struct body *b, uint32_t first, uint32_t n, uint64_t off)
{
	struct rfs_fs *fs = b->cur->fs;
	struct rfs_error err;
	rfs_error_clear(&err);
	uint64_t len = (uint64_t)n * fs->bs;
	if (off + len > b->size)
		len = b->size - off;
	hole_to(b, off);
	if (rfs_dev_read_run(fs->dev, first, n, b->buf, NULL, &err) == RFS_OK) {
		deliver(b, off, b->buf, len);
		return;
	}
	/* Block by block: keep every block that reads. */
	for (uint32_t i = 0; i < n && !b->stop; i++) {
		uint64_t o = off + (uint64_t)i * fs->bs;
		uint64_t l = o + fs->bs > b->size ? b->size - o : fs->bs;
		rfs_error_clear(&err);
		if (rfs_dev_read_block(fs->dev, first + i, b->buf, &err) == RFS_OK) {
			deliver(b, o, b->buf, l);
		} else {
			char why[240];
			rfs_error_format(&err, why, sizeof(why));
			missing(b, o, o + l, why);
		}
	}
}

static void read_indirect(struct body *b, const struct rfs_item_head *ih, const uint8_t *body,
			  uint64_t base)
{
	struct rfs_fs *fs = b->cur->fs;
	uint32_t n = ih->len / 4;
	uint32_t i = 0;
	while (i < n && !b->stop) {
		uint64_t off = base + (uint64_t)i * fs->bs;
		if (off >= b->size)
			break;
		uint32_t p = le32_at(body, 4 * (size_t)i);
		uint64_t end = off + fs->bs > b->size ? b->size : off + fs->bs;
		if (p == 0) {
			hole_to(b, end);
			i++;
			continue;
		}
		if (bad_pointer(fs, p)) {
			char why[120];
			snprintf(why, sizeof(why), "pointer to block %u %s", p,
				 p >= fs->sb.block_count ? "beyond the end" : "in the metadata area");
			missing(b, off, end, why);
			i++;
			continue;
		}
		uint32_t run = 1;
		while (i + run < n && run < RUN_MAX &&
		       off + (uint64_t)run * fs->bs < b->size &&
		       le32_at(body, 4 * (size_t)(i + run)) == p + run && !bad_pointer(fs, p + run))
			run++;
		read_run(b, p, run, off);
		i += run;
	}
}

rfs_status salvage_body_read(struct rfs_cursor *cur, const struct rfs_object *obj, uint64_t size,
			     rfs_data_fn fn, void *ctx, struct salvage_missing *miss)
{
	struct body b = { .cur = cur, .obj = obj, .fn = fn, .ctx = ctx, .size = size, .miss = miss };
	b.buf = malloc((size_t)RUN_MAX * cur->fs->bs);
	if (!b.buf)
		return RFS_ERR_NOMEM;
	struct rfs_key start = { obj->dir_id, obj->objectid, 1, RFS_TYPE_STAT };
	struct rfs_error err;
	rfs_error_clear(&err);
	bool found;
	rfs_status st = rfs_cursor_seek_object(cur, &start, &found, &err);
	while (!st && found && !b.stop && rfs_cursor_at_item(cur)) {
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(cur, &ih, &body);
		if (ih.key.dir_id != obj->dir_id || ih.key.objectid != obj->objectid)
			break;
		uint64_t base = ih.key.offset ? ih.key.offset - 1 : 0;
		bool is_ind = ih.key.type == RFS_TYPE_INDIRECT, is_dir = ih.key.type == RFS_TYPE_DIRECT;
		if ((is_ind || is_dir) && ih.key.offset != 0 && base < size) {
			if (base < b.pos || (is_ind && base % cur->fs->bs)) {
				/* Overlapping or misaligned: the first item wins; note it. */
				if (!miss->first_reason[0])
					snprintf(miss->first_reason, sizeof(miss->first_reason),
						 "item at file offset %llu overlaps or is misaligned; skipped",
						 (unsigned long long)base);
				miss->skipped_items++;
			} else if (is_ind) {
				read_indirect(&b, &ih, body, base);
			} else {
				uint64_t len = ih.len;
				if (base + len > size)
					len = size - base;   /* 3.6 tails are padded to 8 bytes */
				hole_to(&b, base);
				deliver(&b, base, body, len);
			}
		}
		if (!b.stop)
			st = rfs_cursor_next(cur, &err);
	}
	if (st == RFS_ERR_NOMEM) {
		free(b.buf);
		return st;
	}
	if (st && !b.stop) {
		/* The next leaf cannot be read: what it held is lost to this walk. */
		char why[240];
		rfs_error_format(&err, why, sizeof(why));
		missing(&b, b.pos, size, why);
	}
	if (!b.stop)
		hole_to(&b, size);
	free(b.buf);
	return b.nomem ? RFS_ERR_NOMEM : RFS_OK;
}

/*
 * nested.c - nested filesystems: a block other than the volume's own
 * superblock that carries a ReiserFS superblock marks a filesystem image
 * stored inside the volume (a loop image, a VM disk, a dd backup).  Its
 * leaves are perfectly valid leaves and must never join the outer tree.
 *
 * For each such superblock (in block order):
 *   - inside an extent already derived (the inner journal holds copies of
 *     the inner superblock): recorded as 'inside', nothing more;
 *   - holder: the file whose indirect item claims the superblock block, if a
 *     valid leaf still has it; the extent is then every block that file
 *     claims (exact, also when the image is fragmented);
 *   - no holder (the leaf with the image file's indirect item is lost): the
 *     extent is contiguous from where the image starts for its block count,
 *     clamped to the volume;
 *   - the inner tree is walked through that mapping (bounded), to show the
 *     extent really holds that filesystem (report: inner leaves found);
 *   - libmagic describes the bytes at the image's start, as a second opinion
 *     independent of rfsck's own decoder.
 * The extent goes into the `nested` bitmap; select.c rejects the candidates
 * in it that no outer evidence claims.
 */
#include <magic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rebuild.h"
#include "rfs/bytes.h"

enum { INNER_WALK_MAX = 1u << 20 };

static rfs_status mark_holder_extent(struct rb_ctx *c, uint32_t dir_id, uint32_t objectid,
				     uint64_t *marked, struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(c->ix,
		"SELECT first, count FROM claim WHERE dir_id = ? AND objectid = ?", &s, err);
	if (st)
		return st;
	sqlite3_bind_int64(s, 1, dir_id);
	sqlite3_bind_int64(s, 2, objectid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t first = (uint64_t)sqlite3_column_int64(s, 0);
		uint64_t count = (uint64_t)sqlite3_column_int64(s, 1);
		for (uint64_t b = first; b < first + count && b < c->nblocks; b++)
			if (!rfs_bitmap_test(&c->meta, b)) {
				rfs_bitmap_set(&c->nested, b);
				(*marked)++;
			}
	}
	sqlite3_finalize(s);
	return RFS_OK;
}

/* Walks the inner tree assuming the image is contiguous from first_block and
 * uses the outer block size; counts the inner leaves found where the inner
 * internal nodes say they are. */
static uint64_t walk_inner_tree(struct rb_ctx *c, uint64_t first_block, uint64_t inner_blocks,
				uint64_t root, unsigned height)
{
	if (root == 0 || root >= inner_blocks || height < 1 || height > RFS_MAX_HEIGHT)
		return 0;
	uint8_t *buf = malloc(c->bs);
	uint64_t *queue = malloc(sizeof(uint64_t) * 4096);
	if (!buf || !queue) {
		free(buf);
		free(queue);
		return 0;
	}
	size_t cap = 4096, head = 0, tail = 0, visited = 0;
	uint64_t leaves = 0;
	queue[tail++] = root;
	while (head < tail && visited < INNER_WALK_MAX) {
		uint64_t ib = queue[head++];
		visited++;
		uint64_t ob = first_block + ib;
		struct rfs_error e;
		if (ib >= inner_blocks || ob >= c->nblocks || rfs_dev_read_block(c->dev, ob, buf, &e))
			continue;
		uint16_t level = le16_at(buf, 0);
		if (level == RFS_LEVEL_LEAF) {
			if (rfs_leaf_validate(buf, c->bs, NULL, NULL) == RFS_OK)
				leaves++;
			continue;
		}
		if (level < 2 || level > RFS_MAX_HEIGHT ||
		    rfs_internal_validate(buf, c->bs, NULL, NULL) != RFS_OK)
			continue;
		uint16_t nr = le16_at(buf, 2);
		for (int i = 0; i <= nr; i++) {
			struct rfs_disk_child dc;
			rfs_internal_child(buf, nr, i, &dc);
			if (tail == cap) {
				if (head > 0) {
					memmove(queue, queue + head, (tail - head) * sizeof(*queue));
					tail -= head;
					head = 0;
				}
				if (tail == cap) {
					uint64_t *q = realloc(queue, 2 * cap * sizeof(*queue));
					if (!q)
						break;
					queue = q;
					cap *= 2;
				}
			}
			queue[tail++] = dc.block;
		}
	}
	free(buf);
	free(queue);
	return leaves;
}

static void describe_with_libmagic(struct rb_ctx *c, magic_t m, uint64_t start_byte, char *out,
				   size_t len)
{
	snprintf(out, len, "(libmagic unavailable)");
	if (!m)
		return;
	size_t n = 65536 + c->bs;
	uint8_t *buf = calloc(1, n);
	if (!buf)
		return;
	struct rfs_error e;
	if (start_byte + n <= rfs_dev_size(c->dev) &&
	    rfs_dev_read_bytes(c->dev, start_byte, buf, n, &e) == RFS_OK) {
		const char *d = magic_buffer(m, buf, n);
		snprintf(out, len, "%s", d ? d : magic_error(m));
	} else {
		snprintf(out, len, "(unreadable)");
	}
	free(buf);
}

rfs_status rb_nested(struct rb_ctx *c, struct rfs_error *err)
{
	sqlite3_stmt *s, *hold, *upd;
	/* a holder's extent is read by owner (mark_holder_extent) */
	uint64_t any = 0;
	rfs_status st = rfs_index_query_u64(c->ix, "SELECT EXISTS (SELECT 1 FROM nested)", &any, 1,
					    err);
	if (!st && any)
		st = rfs_index_build_owner_lookup(c->ix, err);
	if (st)
		return st;
	st = rfs_index_prepare(c->ix,
		"SELECT sb_block, start_byte, block_size, block_count, root, height FROM nested"
		" ORDER BY sb_block", &s, err);
	if (st)
		return st;
	if ((st = rfs_index_prepare(c->ix,
		"SELECT dir_id, objectid FROM claim WHERE first <= ?1 AND first + count > ?1"
		" ORDER BY first DESC LIMIT 1", &hold, err))) {
		sqlite3_finalize(s);
		return st;
	}
	if ((st = rfs_index_prepare(c->ix,
		"UPDATE nested SET holder_dir_id = ?, holder_objectid = ?, libmagic = ?, status = ?"
		" WHERE sb_block = ?", &upd, err))) {
		sqlite3_finalize(s);
		sqlite3_finalize(hold);
		return st;
	}
	magic_t m = magic_open(MAGIC_NONE);
	if (m && magic_load(m, NULL) != 0) {
		magic_close(m);
		m = NULL;
	}
	st = rfs_index_begin(c->ix, err);
	while (!st && sqlite3_step(s) == SQLITE_ROW) {
		uint64_t sb_block = (uint64_t)sqlite3_column_int64(s, 0);
		uint64_t start = (uint64_t)sqlite3_column_int64(s, 1);
		uint64_t ibs = (uint64_t)sqlite3_column_int64(s, 2);
		uint64_t icount = (uint64_t)sqlite3_column_int64(s, 3);
		uint64_t iroot = (uint64_t)sqlite3_column_int64(s, 4);
		unsigned iheight = (unsigned)sqlite3_column_int(s, 5);
		char status[200], desc[256] = "";
		bool have_holder = false;
		uint32_t hd = 0, ho = 0;
		if (sb_block < c->nblocks && rfs_bitmap_test(&c->nested, sb_block)) {
			snprintf(status, sizeof(status), "inside");
		} else {
			sqlite3_bind_int64(hold, 1, (sqlite3_int64)sb_block);
			if (sqlite3_step(hold) == SQLITE_ROW) {
				have_holder = true;
				hd = (uint32_t)sqlite3_column_int64(hold, 0);
				ho = (uint32_t)sqlite3_column_int64(hold, 1);
			}
			sqlite3_reset(hold);
			uint64_t marked = 0;
			if (have_holder)
				st = mark_holder_extent(c, hd, ho, &marked, err);
			/* Without a holder the image is taken to be contiguous; select.c
			 * still keeps a candidate in it that outer evidence (an outer
			 * internal node) references. */
			uint64_t first = start / c->bs;
			uint64_t nb = have_holder ? 0 : (icount * ibs + c->bs - 1) / c->bs;
			for (uint64_t b = first; !st && b < first + nb && b < c->nblocks; b++)
				if (!rfs_bitmap_test(&c->meta, b) && !rfs_bitmap_test(&c->nested, b)) {
					rfs_bitmap_set(&c->nested, b);
					marked++;
				}
			uint64_t inner_leaves = ibs == c->bs && start % c->bs == 0
				? walk_inner_tree(c, first, icount, iroot, iheight) : 0;
			describe_with_libmagic(c, m, start, desc, sizeof(desc));
			snprintf(status, sizeof(status),
				 "nested: %llu blocks in extent, inner tree root %llu height %u, "
				 "%llu inner leaves found in place",
				 (unsigned long long)marked, (unsigned long long)iroot, iheight,
				 (unsigned long long)inner_leaves);
		}
		if (have_holder) {
			sqlite3_bind_int64(upd, 1, hd);
			sqlite3_bind_int64(upd, 2, ho);
		}
		if (*desc)
			sqlite3_bind_text(upd, 3, desc, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(upd, 4, status, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(upd, 5, (sqlite3_int64)sb_block);
		if (!st && sqlite3_step(upd) != SQLITE_DONE)
			st = rfs_index_fail(c->ix, "nested", err);
		sqlite3_reset(upd);
		sqlite3_clear_bindings(upd);
	}
	if (!st)
		st = rfs_index_commit(c->ix, err);
	if (m)
		magic_close(m);
	sqlite3_finalize(s);
	sqlite3_finalize(hold);
	sqlite3_finalize(upd);
	return st;
}

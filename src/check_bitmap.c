/*
 * check_bitmap.c - pass "bitmaps": the on-disk allocation bitmaps and free
 * count against the blocks the tree pass found in use.
 *
 * Relies on: c->claimed from pass tree (metadata, nodes, data blocks).  When
 * subtrees were skipped, blocks they own are unknown, so "marked used but
 * unused" is not reported (it would invite freeing live data).
 * Findings are reported per run of consecutive blocks, not per block, so a
 * zeroed bitmap gives a handful of records, not millions.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"

/* "fix" answers for bitmap problems (counted in c->bitmap_fixes), made all
 * at once by rewriting the bitmaps. */
static const enum rfs_problem_code bitmap_codes[4] = {
	PR_BITMAP_USED_MARKED_FREE, PR_BITMAP_LEAKED_BLOCK, PR_BITMAP_TAIL_BITS,
	PR_BITMAP_READ_ERROR,
};

static void note_fix(struct rfs_check *c, enum rfs_problem_code code)
{
	for (int i = 0; i < 4; i++)
		if (bitmap_codes[i] == code)
			c->bitmap_fixes[i]++;
}

static void report_run(struct rfs_check *c, enum rfs_problem_code code, uint64_t first,
		       uint64_t end)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = first;
	ctx.block2 = end - 1;
	ctx.found = end - first;
	if (problem_report(c->rep, code, &ctx))
		note_fix(c, code);
}

static void unreadable(void *ctx, uint32_t index, uint64_t block, const struct rfs_error *e)
{
	struct rfs_check *c = ctx;
	char line[240];
	(void)index;
	rfs_error_format(e, line, sizeof(line));
	struct rfs_problem_ctx pc = rfs_problem_ctx_none();
	pc.block = block;
	pc.detail = line;
	if (problem_report(c->rep, PR_BITMAP_READ_ERROR, &pc))
		note_fix(c, PR_BITMAP_READ_ERROR);
}

/* Writes every bitmap block from the blocks found in use; bits past the last
 * block are set, as the format requires. */
static rfs_status rewrite_bitmaps(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint64_t per = (uint64_t)fs->bs * 8;
	uint8_t *buf = malloc(fs->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "bitmap rewrite");
	rfs_status st = RFS_OK;
	for (uint32_t i = 0; i < fs->sb.bmap_count && !st; i++) {
		memset(buf, 0, fs->bs);
		for (uint64_t j = 0; j < per; j++) {
			uint64_t b = (uint64_t)i * per + j;
			if (b >= fs->sb.block_count || rfs_bitmap_test(&c->claimed, b))
				buf[j >> 3] |= (uint8_t)(1u << (j & 7));
		}
		st = repair_write(c, rfs_bitmap_block(&fs->sb, i), buf, err);
	}
	free(buf);
	return st;
}

/* One sweep over the on-disk bitmaps, block by block (never the whole
 * bitmap in memory: at 1 TiB that is 32 MiB more than c->claimed): reports
 * the runs where the on-disk bit and c->claimed disagree the way `code`
 * says.  Bitmap blocks found unreadable by the first sweep (bad) read as
 * all-used here, whatever a second read would give. */
static rfs_status sweep(struct rfs_check *c, enum rfs_problem_code code, uint8_t *buf,
			const struct rfs_bitmap *bad, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint64_t per = (uint64_t)fs->bs * 8, nbits = c->claimed.nbits;
	bool want_used = code == PR_BITMAP_USED_MARKED_FREE;
	uint64_t run = UINT64_MAX;
	for (uint64_t b = 0; b < nbits;) {
		uint64_t i = b / per, end = b + per < nbits ? b + per : nbits;
		bool on_disk = i < fs->sb.bmap_count;
		if (on_disk && rfs_bitmap_test(bad, i))
			memset(buf, 0xFF, fs->bs);
		else if (on_disk) {
			rfs_status st = rfs_bitmap_read_block(fs, (uint32_t)i, buf, NULL, NULL, err);
			if (st)
				return st;
		}
		for (; b < end; b++) {
			uint64_t j = b - i * per;
			bool used = rfs_bitmap_test(&c->claimed, b);
			bool marked = on_disk && (buf[j >> 3] >> (j & 7) & 1);
			bool wrong = want_used ? (used && !marked) : (!used && marked);
			if (wrong && run == UINT64_MAX)
				run = b;
			if (!wrong && run != UINT64_MAX) {
				report_run(c, code, run, b);
				run = UINT64_MAX;
			}
		}
	}
	if (run != UINT64_MAX)
		report_run(c, code, run, nbits);
	return RFS_OK;
}

struct first_sweep {
	struct rfs_check *c;
	struct rfs_bitmap *bad;
};

static void note_unreadable(void *ctx, uint32_t index, uint64_t block, const struct rfs_error *e)
{
	struct first_sweep *f = ctx;
	rfs_bitmap_set(f->bad, index);
	unreadable(f->c, index, block, e);
}

/* Reads every bitmap block once for the read errors (reported first, in
 * bitmap order) and the clear bits past the last block. */
static rfs_status first_sweep(struct rfs_check *c, uint8_t *buf, struct rfs_bitmap *bad,
			      uint64_t *tail_clear, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint64_t per = (uint64_t)fs->bs * 8;
	struct first_sweep f = { c, bad };
	*tail_clear = 0;
	for (uint32_t i = 0; i < fs->sb.bmap_count; i++) {
		uint64_t first = (uint64_t)i * per;
		if (first >= c->claimed.nbits)
			break;
		rfs_status st = rfs_bitmap_read_block(fs, i, buf, note_unreadable, &f, err);
		if (st)
			return st;
		for (uint64_t j = 0; j < per; j++) {
			uint64_t b = first + j;
			if (b >= c->claimed.nbits && b >= fs->sb.block_count && !(buf[j >> 3] >> (j & 7) & 1))
				(*tail_clear)++;
		}
	}
	return RFS_OK;
}

rfs_status check_pass_bitmap(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint8_t *buf = malloc(fs->bs);
	struct rfs_bitmap bad = { 0 };
	rfs_status st = buf ? rfs_bitmap_init(&bad, fs->sb.bmap_count, err)
			    : rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "bitmap buffer");
	uint64_t tail_clear = 0;
	if (!st)
		st = first_sweep(c, buf, &bad, &tail_clear, err);
	/* pass 0: used but marked free; pass 1: marked used but unused */
	if (!st)
		st = sweep(c, PR_BITMAP_USED_MARKED_FREE, buf, &bad, err);
	if (!st && !c->bad_nodes)
		st = sweep(c, PR_BITMAP_LEAKED_BLOCK, buf, &bad, err);
	free(buf);
	rfs_bitmap_free(&bad);
	if (st)
		return st;
	if (tail_clear) {
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.block = rfs_bitmap_block(&fs->sb, fs->sb.bmap_count - 1);
		ctx.found = tail_clear;
		if (problem_report(c->rep, PR_BITMAP_TAIL_BITS, &ctx))
			note_fix(c, PR_BITMAP_TAIL_BITS);
	}
	uint32_t *n = c->bitmap_fixes;
	if (n[0] + n[1] + n[2] + n[3]) {
		st = rewrite_bitmaps(c, err);
		if (st)
			goto out;
		for (int i = 0; i < 4; i++)
			for (; n[i]; n[i]--)
				problem_fixed(c->rep, bitmap_codes[i]);
	}
	if (!c->bad_nodes) {
		uint64_t beyond = fs->sb.block_count - c->claimed.nbits;
		uint64_t free_blocks = fs->sb.block_count - rfs_bitmap_count(&c->claimed) - beyond;
		bool set = c->free_count_pending > 0;
		if (fs->sb.free_blocks != free_blocks) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = fs->sb.sb_block;
			ctx.expected = free_blocks;
			ctx.found = fs->sb.free_blocks;
			if (problem_report(c->rep, PR_BITMAP_FREE_COUNT, &ctx)) {
				set = true;
				problem_fixed(c->rep, PR_BITMAP_FREE_COUNT);
			}
		}
		if (set) {
			uint8_t *sb;
			st = repair_sb(c, &sb, err);
			if (st)
				goto out;
			le32_put(sb, SB_FREE_BLOCKS, (uint32_t)free_blocks);
			for (; c->free_count_pending; c->free_count_pending--)
				problem_fixed(c->rep, PR_SB_FREE_EXCEEDS_COUNT);
		}
	}
out:
	return st;
}

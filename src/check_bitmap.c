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

rfs_status check_pass_bitmap(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	struct rfs_bitmap disk;
	rfs_status st = rfs_bitmap_init(&disk, c->claimed.nbits, err);
	if (st)
		return st;
	uint64_t tail_clear = 0;
	st = rfs_bitmap_load(fs, &disk, &tail_clear, unreadable, c, err);
	if (st)
		goto out;
	for (int pass = 0; pass < 2; pass++) {
		/* pass 0: used but marked free; pass 1: marked used but unused */
		if (pass == 1 && c->bad_nodes)
			break;
		enum rfs_problem_code code = pass == 0 ? PR_BITMAP_USED_MARKED_FREE
						       : PR_BITMAP_LEAKED_BLOCK;
		uint64_t run = UINT64_MAX;
		for (uint64_t b = 0; b < c->claimed.nbits; b++) {
			bool used = rfs_bitmap_test(&c->claimed, b);
			bool marked = rfs_bitmap_test(&disk, b);
			bool bad = pass == 0 ? (used && !marked) : (!used && marked);
			if (bad && run == UINT64_MAX)
				run = b;
			if (!bad && run != UINT64_MAX) {
				report_run(c, code, run, b);
				run = UINT64_MAX;
			}
		}
		if (run != UINT64_MAX)
			report_run(c, code, run, c->claimed.nbits);
	}
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
	rfs_bitmap_free(&disk);
	return st;
}

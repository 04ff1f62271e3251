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

static void report_run(struct rfs_check *c, enum rfs_problem_code code, uint64_t first,
		       uint64_t end)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = first;
	ctx.block2 = end - 1;
	ctx.found = end - first;
	problem_report(c->rep, code, &ctx);
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
	problem_report(c->rep, PR_BITMAP_READ_ERROR, &pc);
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
		problem_report(c->rep, PR_BITMAP_TAIL_BITS, &ctx);
	}
	if (!c->bad_nodes) {
		uint64_t beyond = fs->sb.block_count - c->claimed.nbits;
		uint64_t free_blocks = fs->sb.block_count - rfs_bitmap_count(&c->claimed) - beyond;
		if (fs->sb.free_blocks != free_blocks) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = fs->sb.sb_block;
			ctx.expected = free_blocks;
			ctx.found = fs->sb.free_blocks;
			problem_report(c->rep, PR_BITMAP_FREE_COUNT, &ctx);
		}
	}
out:
	rfs_bitmap_free(&disk);
	return st;
}

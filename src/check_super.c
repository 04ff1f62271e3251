/*
 * check_super.c - pass "superblock and journal".
 *
 * Checks: the superblock's own fields (collected while opening, see
 * rfs_super_check) and the journal: header against superblock, committed
 * transactions not yet written home (they were replayed into the overlay, so
 * the later passes check the state the kernel would mount), broken ones.
 * Relies on: rfs_fs_open with replay.  Produces: problems only.
 */
#include "check.h"

void check_collect_sb_fault(void *check, const struct rfs_fault *f)
{
	struct rfs_check *c = check;
	if (c->n_sb_faults < (int)(sizeof(c->sb_faults) / sizeof(c->sb_faults[0])))
		c->sb_faults[c->n_sb_faults++] = *f;
}

rfs_status check_pass_super(struct rfs_check *c, struct rfs_error *err)
{
	(void)err;
	struct rfs_fs *fs = c->fs;
	for (int i = 0; i < c->n_sb_faults; i++) {
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.block = fs->sb.sb_block;
		ctx.expected = c->sb_faults[i].expected;
		ctx.found = c->sb_faults[i].found;
		ctx.item = c->sb_faults[i].item;
		problem_report(c->rep, c->sb_faults[i].code, &ctx);
	}
	const struct rfs_journal_state *j = &fs->journal;
	if (fs->sb.j_dev != 0)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = rfs_super_journal_header_block(&fs->sb);
	if (!j->header_matches_sb)
		problem_report(c->rep, PR_JOURNAL_HEADER_MISMATCH, &ctx);
	if (j->header.last_flush_trans_id && j->header.first_unflushed_offset >= fs->sb.j_size) {
		ctx.expected = fs->sb.j_size;
		ctx.found = j->header.first_unflushed_offset;
		problem_report(c->rep, PR_JOURNAL_HEADER_BAD, &ctx);
	}
	if (j->pending) {
		ctx = rfs_problem_ctx_none();
		ctx.found = j->pending;
		ctx.expected = j->pending_blocks;
		problem_report(c->rep, PR_JOURNAL_PENDING, &ctx);
	}
	if (j->broken) {
		ctx = rfs_problem_ctx_none();
		ctx.detail = j->broken_reason;
		problem_report(c->rep, PR_JOURNAL_TRANS_BROKEN, &ctx);
	}
	return RFS_OK;
}

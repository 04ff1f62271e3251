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

#include <stdlib.h>

#include "rfs/bytes.h"

void check_collect_sb_fault(void *check, const struct rfs_fault *f)
{
	struct rfs_check *c = check;
	if (c->n_sb_faults < (int)(sizeof(c->sb_faults) / sizeof(c->sb_faults[0])))
		c->sb_faults[c->n_sb_faults++] = *f;
}

/* Writes the journal header: parameters from the superblock, and a replay
 * start that the kernel will find already flushed. */
static rfs_status write_journal_header(struct rfs_check *c, uint32_t last_flush, uint32_t offset,
				       uint32_t mount_id, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	const struct rfs_super *sb = &fs->sb;
	uint64_t blk = rfs_super_journal_header_block(sb);
	uint8_t *buf = malloc(fs->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal header");
	rfs_status st = rfs_dev_read_block(fs->dev, blk, buf, err);
	if (!st) {
		le32_put(buf, JH_LAST_FLUSH, last_flush);
		le32_put(buf, JH_FIRST_UNFLUSHED, offset);
		le32_put(buf, JH_MOUNT_ID, mount_id);
		const uint32_t p[8] = { sb->j_first, sb->j_dev, sb->j_size, sb->j_trans_max,
					sb->j_magic, sb->j_max_batch, sb->j_max_commit_age,
					sb->j_max_trans_age };
		for (int i = 0; i < 8; i++)
			le32_put(buf, JH_PARAMS + 4 * (size_t)i, p[i]);
		st = repair_write(c, blk, buf, err);
	}
	free(buf);
	return st;
}

/* Writes every replayed block (held in the overlay since rfs_fs_open) to its
 * home, then marks the transactions flushed in the journal header. */
static rfs_status flush_replayed(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint64_t *blocks = NULL, n = 0;
	rfs_status st = rfs_dev_overlay_blocks(fs->dev, &blocks, &n, err);
	uint8_t *buf = malloc(fs->bs);
	if (!st && !buf)
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal flush");
	for (uint64_t i = 0; !st && i < n; i++) {
		st = rfs_dev_read_block(fs->dev, blocks[i], buf, err);
		if (!st)
			st = repair_write(c, blocks[i], buf, err);
	}
	free(buf);
	free(blocks);
	if (!st)
		st = write_journal_header(c, fs->journal.last_trans_id, fs->journal.next_offset,
					  fs->journal.mount_id, err);
	return st;
}

/* Superblock problems whose repair is a field of the superblock itself, or a
 * recomputation done by a later pass. */
static rfs_status repair_sb_fault(struct rfs_check *c, const struct rfs_fault *f,
				  struct rfs_error *err)
{
	uint8_t *sb;
	rfs_status st;
	switch (f->code) {
	case PR_SB_BMAP_NR_MISMATCH:
		if ((st = repair_sb(c, &sb, err)))
			return st;
		le16_put(sb, SB_BMAP_NR, f->expected > 0xFFFF ? 0 : (uint16_t)f->expected);
		problem_fixed(c->rep, f->code);
		return RFS_OK;
	case PR_SB_BAD_VERSION:
		/* The format was already decided from the layout (super.c); the
		 * field is made to say the same, 0 for 3.5 and 2 for 3.6. */
		if ((st = repair_sb(c, &sb, err)))
			return st;
		le16_put(sb, SB_VERSION, (uint16_t)f->expected);
		problem_fixed(c->rep, f->code);
		return RFS_OK;
	case PR_SB_BAD_OID_MAP_SIZE:
		c->oid_rebuild_pending++;
		return RFS_OK;
	case PR_SB_FREE_EXCEEDS_COUNT:
		c->free_count_pending++;
		return RFS_OK;
	default:
		return RFS_OK;
	}
}

rfs_status check_pass_super(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	rfs_status st;
	for (int i = 0; i < c->n_sb_faults; i++) {
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.block = fs->sb.sb_block;
		ctx.expected = c->sb_faults[i].expected;
		ctx.found = c->sb_faults[i].found;
		ctx.item = c->sb_faults[i].item;
		if (problem_report(c->rep, c->sb_faults[i].code, &ctx) &&
		    (st = repair_sb_fault(c, &c->sb_faults[i], err)))
			return st;
	}
	const struct rfs_journal_state *j = &fs->journal;
	if (fs->sb.j_dev != 0)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = rfs_super_journal_header_block(&fs->sb);
	/* A damaged header is rewritten to point past the newest transaction in
	 * the log, so that nothing stale is replayed by the next mount. */
	bool header_fix = false;
	enum rfs_problem_code header_code = PR_NONE;
	if (!j->header_matches_sb) {
		header_code = PR_JOURNAL_HEADER_MISMATCH;
		header_fix = problem_report(c->rep, header_code, &ctx);
	} else if (j->header.last_flush_trans_id &&
		   j->header.first_unflushed_offset >= fs->sb.j_size) {
		ctx.expected = fs->sb.j_size;
		ctx.found = j->header.first_unflushed_offset;
		header_code = PR_JOURNAL_HEADER_BAD;
		header_fix = problem_report(c->rep, header_code, &ctx);
	}
	if (header_fix) {
		st = j->have_newest
			? write_journal_header(c, j->newest_trans_id, j->newest_next_offset,
					       j->newest_mount_id, err)
			: write_journal_header(c, 0, 0, 0, err);
		if (st)
			return st;
		problem_fixed(c->rep, header_code);
	}
	if (j->pending) {
		ctx = rfs_problem_ctx_none();
		ctx.found = j->pending;
		ctx.expected = j->pending_blocks;
		if (problem_report(c->rep, PR_JOURNAL_PENDING, &ctx)) {
			if ((st = flush_replayed(c, err)))
				return st;
			problem_fixed(c->rep, PR_JOURNAL_PENDING);
		}
	}
	if (j->broken) {
		ctx = rfs_problem_ctx_none();
		ctx.detail = j->broken_reason;
		problem_report(c->rep, PR_JOURNAL_TRANS_BROKEN, &ctx);
	}
	return RFS_OK;
}

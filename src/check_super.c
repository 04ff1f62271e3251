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

#include <stdio.h>
#include <stdlib.h>

#include "rfs/bytes.h"
#include "rfs/hash.h"
#include "rfs/hash_detect.h"

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

/* The limit a repair writes: the journal header's copy when that one is
 * valid (the kernel reads the header's, so the volume keeps what it ran
 * with); else the kernel's own choice for a journal without one: 1024 blocks
 * of 4 KiB (fewer for smaller blocks, as many bytes), at most half the
 * journal, at least 256 blocks of 4 KiB. */
static uint32_t trans_max_for(const struct rfs_fs *fs)
{
	const struct rfs_super *sb = &fs->sb;
	uint32_t hv = fs->journal.header.params[3];
	if (rfs_super_trans_max_valid(hv, sb->j_size))
		return hv;
	uint32_t ratio = sb->blocksize < 4096 ? 4096 / sb->blocksize : 1;
	uint32_t v = 1024 / ratio;
	if (sb->j_size / v < 2)
		v = sb->j_size / 2;
	if (v < 256 / ratio)
		v = 256 / ratio;
	return v;
}

/* Decides the hash an invalid hash code is replaced by, before the problem
 * is reported (the report names it): --hash when given, else the directory
 * names' verdict (rfs/hash_detect.h).  A decided hash becomes the one this
 * run verifies names with.  Returns the code to report: SB_BAD_HASH_CODE with
 * f->expected set, or SB_HASH_UNDECIDED. */
static rfs_status hash_verdict(struct rfs_check *c, struct rfs_fault *f, char *detail,
			       size_t len, enum rfs_problem_code *code, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	*code = PR_SB_BAD_HASH_CODE;
	if (fs->hash_code != 0) {
		f->expected = fs->hash_code;
		snprintf(detail, len, "%s was asked for (--hash)", rfs_hash_name(fs->hash_code));
		return RFS_OK;
	}
	struct rfs_hash_detect d;
	rfs_status st = rfs_hash_detect(fs, &d, err);
	if (st)
		return st;
	if (d.code == 0) {
		*code = PR_SB_HASH_UNDECIDED;
		f->expected = d.names;
		snprintf(detail, len, "r5 %u, tea %u, rupasov %u%s", d.votes[3], d.votes[1],
			 d.votes[2], d.complete ? "" : "; the tree walk stopped early");
		return RFS_OK;
	}
	f->expected = d.code;
	if (d.names == 0)
		snprintf(detail, len, "nothing: the tree holds no name, so r5, the default");
	else
		snprintf(detail, len, "%s (%u of the %u names read match it)",
			 rfs_hash_name(d.code), d.votes[d.code], d.names);
	fs->hash_code = d.code;
	struct rfs_error he;
	rfs_error_clear(&he);
	c->hash_trusted = rfs_hash_selftest(&he) == RFS_OK;
	return RFS_OK;
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
	case PR_SB_BAD_HASH_CODE:
		/* expected: the hash decided in hash_verdict before the report */
		if ((st = repair_sb(c, &sb, err)))
			return st;
		le32_put(sb, SB_HASH, (uint32_t)f->expected);
		c->fs->sb.hash_code = (uint32_t)f->expected;
		problem_fixed(c->rep, f->code);
		return RFS_OK;
	case PR_SB_JOURNAL_BAD_TRANS_MAX: {
		uint32_t v = trans_max_for(c->fs);
		if ((st = repair_sb(c, &sb, err)))
			return st;
		le32_put(sb, SB_JP_TRANS_MAX, v);
		c->fs->sb.j_trans_max = v;
		/* the kernel lowers a batch above the limit; a new limit takes the
		 * batch mkreiserfs pairs with it (900/1024 of it) */
		if (c->fs->sb.j_max_batch == 0 || c->fs->sb.j_max_batch > v) {
			c->fs->sb.j_max_batch = (uint32_t)((uint64_t)v * 900 / 1024);
			le32_put(sb, SB_JP_MAX_BATCH, c->fs->sb.j_max_batch);
		}
		/* A header that matched the old superblock holds the same bad limit
		 * (the kernel reads the header's): it takes the new one and keeps
		 * its replay position.  One that did not match is rewritten whole
		 * by the journal part of this pass. */
		const struct rfs_journal_state *j = &c->fs->journal;
		if (c->fs->sb.j_dev == 0 && j->header_matches_sb && j->header.params[3] != v &&
		    (st = write_journal_header(c, j->header.last_flush_trans_id,
					       j->header.first_unflushed_offset, j->header.mount_id,
					       err)))
			return st;
		problem_fixed(c->rep, f->code);
		return RFS_OK;
	}
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
		struct rfs_fault *f = &c->sb_faults[i];
		enum rfs_problem_code code = f->code;
		char detail[160];
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		if (code == PR_SB_BAD_HASH_CODE) {
			if ((st = hash_verdict(c, f, detail, sizeof(detail), &code, err)))
				return st;
			ctx.detail = detail;
		} else if (code == PR_SB_JOURNAL_BAD_TRANS_MAX) {
			snprintf(detail, sizeof(detail), "%u", trans_max_for(fs));
			ctx.detail = detail;
		}
		ctx.block = fs->sb.sb_block;
		ctx.expected = f->expected;
		ctx.found = f->found;
		ctx.item = f->item;
		if (problem_report(c->rep, code, &ctx) && (st = repair_sb_fault(c, f, err)))
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

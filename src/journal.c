/*
 * journal.c - which journal transactions the kernel would replay, and their
 * replay into the device's in-memory overlay.
 *
 * The rules follow the kernel's journal_read (format reference 1.4):
 *  - a header with first_unflushed_offset < size and last_flush_trans_id > 0 is
 *    valid: transactions older than last_flush + 1 or from an older mount id
 *    are ignored, and if none is valid at the header's offset nothing replays;
 *  - otherwise (and also after that check) the whole log is scanned for valid
 *    transactions; replay starts at the one with the smallest trans id and
 *    continues while each next transaction is valid, not older, and from the
 *    newest mount id, stopping when the walk wraps to its start;
 *  - a transaction is valid when its descriptor has the magic, 0 < len <=
 *    trans_max, and the commit block at the expected place repeats trans id
 *    and len; replay stops ("broken") at a transaction whose home blocks are
 *    outside the filesystem or inside the journal.
 * A header whose journal parameters differ from the superblock's is taken as
 * damaged: nothing is replayed (reported by check as JOURNAL_HEADER_MISMATCH).
 * Nothing here writes to the device: replay uses rfs_dev_overlay_put.
 */
#include "rfs/fs.h"
#include "rfs/bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trans {
	uint32_t start;              /* log offset of the descriptor */
	uint32_t trans_id, len, mount_id;
};

struct jctx {
	struct rfs_fs *fs;
	uint32_t size;               /* log blocks */
	uint64_t first;              /* first log block */
	uint8_t *desc, *commit;
};

static uint64_t log_block(const struct jctx *j, uint64_t off)
{
	return j->first + off % j->size;
}

/* Reads the transaction at log offset off into j->desc/j->commit; true if valid. */
static bool trans_at(struct jctx *j, uint32_t off, struct trans *t)
{
	struct rfs_error e;
	rfs_error_clear(&e);
	if (rfs_dev_read_block(j->fs->dev, log_block(j, off), j->desc, &e))
		return false;
	uint32_t id, len, mid;
	if (!rfs_journal_desc_decode(j->desc, j->fs->bs, &id, &len, &mid))
		return false;
	uint32_t tmax = j->fs->sb.j_trans_max ? j->fs->sb.j_trans_max : 1024;
	if (len == 0 || len > tmax || (uint64_t)len + 2 > j->size)
		return false;
	if (rfs_dev_read_block(j->fs->dev, log_block(j, (uint64_t)off + len + 1), j->commit, &e))
		return false;
	if (le32_at(j->commit, JC_TRANS_ID) != id || le32_at(j->commit, JC_LEN) != len)
		return false;
	t->start = off;
	t->trans_id = id;
	t->len = len;
	t->mount_id = mid;
	return true;
}

static bool home_ok(const struct rfs_fs *fs, uint32_t home)
{
	if (home >= fs->sb.block_count)
		return false;
	uint64_t jend = rfs_super_journal_end(&fs->sb);
	return !(home >= fs->sb.j_first && home < jend);
}

/* Replays (or only counts, when replay is false) one valid transaction whose
 * descriptor and commit are in j->desc / j->commit. */
static rfs_status replay_one(struct jctx *j, const struct trans *t, bool replay,
			     uint8_t *buf, struct rfs_error *err)
{
	struct rfs_fs *fs = j->fs;
	for (uint32_t i = 0; i < t->len; i++) {
		uint32_t home;
		if (!rfs_journal_real_block(j->desc, j->commit, fs->bs, i, &home) ||
		    !home_ok(fs, home)) {
			fs->journal.broken = true;
			snprintf(fs->journal.broken_reason, sizeof(fs->journal.broken_reason),
				 "transaction %u logs home block %u outside the filesystem or inside the journal",
				 t->trans_id, home);
			return RFS_ERR_CORRUPT;
		}
	}
	if (!replay)
		return RFS_OK;
	for (uint32_t i = 0; i < t->len; i++) {
		uint32_t home;
		rfs_journal_real_block(j->desc, j->commit, fs->bs, i, &home);
		rfs_status st = rfs_dev_read_block(fs->dev, log_block(j, (uint64_t)t->start + 1 + i),
						   buf, err);
		if (st)
			return st;
		st = rfs_dev_overlay_put(fs->dev, home, buf, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

rfs_status rfs_journal_analyse(struct rfs_fs *fs, bool replay, struct rfs_error *err)
{
	struct rfs_journal_state *js = &fs->journal;
	memset(js, 0, sizeof(*js));
	if (fs->sb.j_dev != 0)
		return RFS_OK;   /* external journal: reported by the superblock check */
	struct jctx j = { .fs = fs, .size = fs->sb.j_size, .first = fs->sb.j_first };
	uint64_t hdr_blk = rfs_super_journal_header_block(&fs->sb);
	if (j.size < 2 || hdr_blk >= fs->sb.block_count ||
	    hdr_blk >= rfs_dev_block_count(fs->dev) || j.first == 0)
		return RFS_OK;   /* unusable geometry: reported by the superblock check */

	rfs_status st = RFS_OK;
	j.desc = malloc(fs->bs);
	j.commit = malloc(fs->bs);
	uint8_t *buf = malloc(fs->bs);
	if (!j.desc || !j.commit || !buf) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal buffers");
		goto out;
	}
	struct rfs_error herr;
	rfs_error_clear(&herr);
	if (rfs_dev_read_block(fs->dev, hdr_blk, buf, &herr)) {
		if (herr.status == RFS_ERR_NOMEM) {
			st = rfs_error_set(err, RFS_ERR_NOMEM, hdr_blk, "journal header");
			goto out;
		}
		/* An unreadable header means nothing can be replayed; the reading
		 * commands go on with the on-disk state and say why. */
		js->broken = true;
		char line[90];
		rfs_error_format(&herr, line, sizeof(line));
		snprintf(js->broken_reason, sizeof(js->broken_reason), "header unreadable: %.90s", line);
		goto out;
	}
	rfs_journal_header_decode(buf, &js->header);
	const uint32_t sbp[8] = { fs->sb.j_first, fs->sb.j_dev, fs->sb.j_size, fs->sb.j_trans_max,
				  fs->sb.j_magic, fs->sb.j_max_batch, fs->sb.j_max_commit_age,
				  fs->sb.j_max_trans_age };
	js->header_matches_sb = true;
	for (int i = 0; i < 5; i++)   /* ages and batch are tunables, not identity */
		if (js->header.params[i] != sbp[i])
			js->header_matches_sb = false;

	/* The newest transaction in the log, whatever the header says: a header
	 * repair points just past it so that nothing stale is ever replayed. */
	for (uint64_t off = 0; off < j.size;) {
		struct trans t;
		if (trans_at(&j, (uint32_t)off, &t)) {
			if (!js->have_newest || t.trans_id > js->newest_trans_id) {
				js->have_newest = true;
				js->newest_trans_id = t.trans_id;
				js->newest_mount_id = t.mount_id;
				js->newest_next_offset = (uint32_t)((off + t.len + 2) % j.size);
			}
			off += t.len + 2;
		} else {
			off++;
		}
	}

	/* A header that disagrees with the superblock is damaged (or belongs to
	 * another journal); nothing it leads to can be trusted, so nothing is
	 * replayed.  The kernel refuses such a relocated journal outright. */
	if (!js->header_matches_sb)
		goto out;

	uint32_t oldest_ok_id = 0, newest_mount = 0;
	if (js->header.first_unflushed_offset < j.size && js->header.last_flush_trans_id > 0) {
		js->header_valid = true;
		oldest_ok_id = js->header.last_flush_trans_id + 1;
		newest_mount = js->header.mount_id;
		struct trans t;
		if (!trans_at(&j, js->header.first_unflushed_offset, &t) ||
		    t.trans_id < oldest_ok_id || t.mount_id < newest_mount)
			goto out;   /* nothing to replay */
	}

	/* Scan the log for the oldest acceptable transaction and the newest mount. */
	bool found = false;
	struct trans oldest = { 0 };
	for (uint64_t off = 0; off < j.size;) {
		struct trans t;
		if (trans_at(&j, (uint32_t)off, &t) && t.trans_id >= oldest_ok_id &&
		    (newest_mount == 0 || t.mount_id >= newest_mount)) {
			if (!found || t.trans_id < oldest.trans_id)
				oldest = t;
			found = true;
			if (t.mount_id > newest_mount)
				newest_mount = t.mount_id;
			off += t.len + 2;
		} else {
			off++;
		}
	}
	if (!found)
		goto out;

	/* Walk forward from the oldest. */
	js->mount_id = newest_mount;
	js->first_trans_id = oldest.trans_id;
	uint64_t off = oldest.start;
	uint64_t walked = 0;
	while (walked < j.size) {
		struct trans t;
		if (!trans_at(&j, (uint32_t)(off % j.size), &t) || t.trans_id < oldest.trans_id ||
		    t.mount_id != newest_mount)
			break;
		if (js->pending && t.trans_id <= js->last_trans_id)
			break;   /* wrapped onto an older transaction */
		rfs_status rs = replay_one(&j, &t, replay, buf, err);
		if (rs == RFS_ERR_CORRUPT)
			break;   /* broken: kernel refuses to go on; reported */
		if (rs) {
			st = rs;
			goto out;
		}
		js->pending++;
		js->pending_blocks += t.len;
		js->last_trans_id = t.trans_id;
		if (replay)
			js->replayed++;
		off = (off + t.len + 2) % j.size;
		js->next_offset = (uint32_t)off;
		walked += t.len + 2;
	}
out:
	free(j.desc);
	free(j.commit);
	free(buf);
	return st;
}

/*
 * fs.c - opening a volume: superblock discovery, geometry, journal.
 *
 * Superblock location policy: 64 KiB first, 8 KiB only when 64 KiB holds no
 * ReiserFS magic (see src/super.c for why this differs from the kernel).
 */
#include "rfs/fs.h"

#include <stdlib.h>
#include <string.h>

static rfs_status read_super_at(struct rfs_dev *dev, uint64_t off, struct rfs_super *sb,
				struct rfs_error *err)
{
	uint8_t buf[SB_V2_SIZE];
	if (rfs_dev_size(dev) < off + sizeof(buf))
		return rfs_error_set(err, RFS_ERR_NOT_REISERFS, RFS_NO_BLOCK,
				     "device of %llu bytes is too small to hold a superblock at %llu",
				     (unsigned long long)rfs_dev_size(dev), (unsigned long long)off);
	rfs_status st = rfs_dev_read_bytes(dev, off, buf, sizeof(buf), err);
	if (st)
		return st;
	return rfs_super_decode(buf, sizeof(buf), off, sb, err);
}

struct sb_fault_relay {
	rfs_fault_fn fn;
	void *ctx;
	struct rfs_fault fatal;
};

static void relay_sb_fault(void *c, const struct rfs_fault *f)
{
	struct sb_fault_relay *r = c;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	if (d && d->severity == RFS_SEV_FATAL && r->fatal.code == PR_NONE)
		r->fatal = *f;
	if (r->fn)
		r->fn(r->ctx, f);
}

/* Finds the superblock and sets the device block size. */
static rfs_status locate_super(struct rfs_fs *fs, const struct rfs_fs_options *opt,
			       struct rfs_error *err)
{
	struct rfs_error e1, e2;
	rfs_error_clear(&e1);
	rfs_error_clear(&e2);
	rfs_status st = read_super_at(fs->dev, RFS_SB_OFFSET, &fs->sb, &e1);
	struct rfs_super old;
	rfs_status st_old = read_super_at(fs->dev, RFS_SB_OLD_OFFSET, &old, &e2);
	if (st == RFS_OK) {
		fs->sb_at_both_locations = st_old == RFS_OK;
	} else if (st == RFS_ERR_NOT_REISERFS && st_old == RFS_OK && old.blocksize == 4096) {
		fs->sb = old;
	} else {
		if (err && err->status == RFS_OK)
			*err = e1;
		return st;
	}
	(void)opt;
	return RFS_OK;
}

rfs_status rfs_fs_open(const struct rfs_fs_options *opt, struct rfs_fs **out,
		       struct rfs_error *err)
{
	*out = NULL;
	struct rfs_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "opening the filesystem");
	rfs_status st = rfs_dev_open(&opt->dev, &fs->dev, err);
	if (st)
		goto fail;
	st = locate_super(fs, opt, err);
	if (st)
		goto fail;

	/* The block size must be sane before anything divides by it. */
	struct sb_fault_relay relay = { opt->sb_fault, opt->sb_fault_ctx, { .code = PR_NONE } };
	uint32_t bs = fs->sb.blocksize;
	bool bs_ok = bs >= 512 && bs <= 65536 && (bs & (bs - 1)) == 0 &&
		     fs->sb.sb_byte_offset % bs == 0;
	uint64_t dev_blocks = bs_ok ? rfs_dev_size(fs->dev) / bs : 0;
	st = rfs_super_check(&fs->sb, dev_blocks, relay_sb_fault, &relay);
	if (st || !bs_ok) {
		const struct rfs_problem_def *d = rfs_problem_def(relay.fatal.code);
		st = rfs_error_set(err, RFS_ERR_CORRUPT, RFS_NO_BLOCK, "unusable superblock: %s",
				   d ? d->name : "block size not a multiple of the superblock offset");
		goto fail;
	}
	st = rfs_dev_set_block_size(fs->dev, bs, err);
	if (st)
		goto fail;
	fs->bs = bs;
	fs->sb_on_disk = fs->sb;

	st = rfs_journal_analyse(fs, opt->replay, err);
	if (st)
		goto fail;
	if (fs->journal.replayed) {
		/* The superblock itself may have been logged; re-read it. */
		struct rfs_super replayed;
		struct rfs_error e;
		rfs_error_clear(&e);
		/* A logged superblock is adopted only if it passes the same check as
		 * the on-disk one (and keeps its geometry); else the on-disk stays. */
		if (read_super_at(fs->dev, fs->sb.sb_byte_offset, &replayed, &e) == RFS_OK &&
		    replayed.blocksize == fs->sb.blocksize &&
		    replayed.block_count == fs->sb.block_count &&
		    rfs_super_check(&replayed, dev_blocks, NULL, NULL) == RFS_OK)
			fs->sb = replayed;
	}
	fs->hash_code = opt->hash_override ? opt->hash_override
		      : (fs->sb.hash_code >= 1 && fs->sb.hash_code <= 3 ? fs->sb.hash_code : 0);
	*out = fs;
	return RFS_OK;
fail:
	if (fs->dev)
		rfs_dev_abandon(fs->dev);
	free(fs);
	return st;
}

rfs_status rfs_fs_close(struct rfs_fs *fs, struct rfs_error *err)
{
	if (!fs)
		return RFS_OK;
	rfs_status st = rfs_dev_close(fs->dev, err);
	free(fs);
	return st;
}

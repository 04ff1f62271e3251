/*
 * check.c - the driver of `rfsck check`: the pass table and the run.
 * What each pass checks, relies on and produces is in src/check.h and in the
 * header comment of each src/check_<pass>.c.
 */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

#include "rfs/hash.h"

static const struct {
	const char *name;
	rfs_check_pass_fn run;
} check_passes[] = {
	{ "superblock and journal", check_pass_super },
	{ "tree", check_pass_tree },
	{ "bitmaps", check_pass_bitmap },
	{ "objectid map", check_pass_objectid },
	{ "namespace", check_pass_semantic },
};

const char *rfs_check_pass_name(unsigned i)
{
	return i < sizeof(check_passes) / sizeof(check_passes[0]) ? check_passes[i].name : NULL;
}

rfs_status rfs_check_run(struct rfs_check *c, struct rfs_error *err)
{
	uint64_t nbits = c->fs->sb.block_count;
	uint64_t dev = rfs_dev_block_count(c->fs->dev);
	if (dev < nbits)
		nbits = dev;   /* nothing beyond the device can be claimed */
	rfs_status st = rfs_bitmap_init(&c->claimed, nbits, err);
	if (st)
		return st;
	for (unsigned i = 0; i < sizeof(check_passes) / sizeof(check_passes[0]); i++) {
		rfs_progress_phase(&c->progress, check_passes[i].name, "", 0);
		st = check_passes[i].run(c, err);
		if (st)
			return st;
		if (rfs_reporter_exhausted(c->rep))
			break;
	}
	rfs_progress_done(&c->progress);
	/* The superblock collects repairs from several passes; written once. */
	return repair_sb_commit(c, err);
}

rfs_status check_run_mode(struct rfs_fs *fs, enum rfs_mode mode, FILE *text, bool json,
			     int verbose, struct rfs_check *c,
			struct rfs_error *err)
{
	struct rfs_reporter_options ro = { .mode = mode, .json = json, .text = text,
					   .verbose = verbose };
	return check_run_with(fs, &ro, c, err);
}

rfs_status check_run_with(struct rfs_fs *fs, const struct rfs_reporter_options *ro,
			  struct rfs_check *c, struct rfs_error *err)
{
	c->fs = fs;
	c->rep = rfs_reporter_new(ro);
	if (!c->rep)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reporter");
	struct rfs_error he;
	rfs_error_clear(&he);
	c->hash_trusted = fs->hash_code != 0 && rfs_hash_selftest(&he) == RFS_OK;
	return rfs_check_run(c, err);
}

void check_release(struct rfs_check *c)
{
	rfs_objtab_free(&c->objects);
	rfs_bitmap_free(&c->claimed);
	u64set_free(&c->written);
	free(c->sb_buf);   /* left only when a run failed before committing it */
	c->sb_buf = NULL;
	rfs_reporter_free(c->rep);
	c->rep = NULL;
}

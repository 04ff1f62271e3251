/* check_rules.c - see check_rules.h. */
#include "check_rules.h"

#include "rfs/object.h"

static bool rules_skip(const struct rfs_objinfo *o)
{
	return o->flags & (RFS_OBJ_ITEMS_BAD | RFS_OBJ_SAFELINK);
}

bool check_rule_size_wrong(const struct rfs_fs *fs, const struct rfs_objinfo *o,
			   const struct rfs_objbody *b)
{
	if (rules_skip(o))
		return false;
	enum rfs_file_type t = rfs_mode_type(o->mode);
	if (t != RFS_FT_REG && t != RFS_FT_LNK)
		return false;
	/* The items may end up to one block past the size (last block partly
	 * used), or up to 7 bytes past it for a padded 3.6 tail; a size beyond
	 * the items is a sparse end and allowed. */
	uint64_t slack = (o->flags & RFS_OBJ_HAS_DIRECT) ? (o->sd_version == 2 ? 7 : 0) : fs->bs - 1;
	/* A symlink is exactly its bytes: a size beyond them is wrong too
	 * (reiserfsck's "too big size"); a regular file may be sparse at the end. */
	return b->body_end > b->size + slack ||
	       (t == RFS_FT_LNK && b->size > b->body_end) ||
	       b->size > rfs_max_file_size(fs, o->sd_version);   /* no such file */
}

/* As reiserfsck computes it: a regular file counts each non-zero pointer and
 * its tail (if any) as one block; directories and symlinks count their size
 * rounded up; other 3.6 objects count nothing (3.5 devices keep rdev in that
 * field). */
bool check_rule_blocks_want(const struct rfs_fs *fs, const struct rfs_objinfo *o,
			    const struct rfs_objbody *b, uint64_t *want)
{
	if (rules_skip(o))
		return false;
	uint64_t per = fs->bs / 512;
	switch (rfs_mode_type(o->mode)) {
	case RFS_FT_REG:
		*want = (b->unfm + ((o->flags & RFS_OBJ_HAS_DIRECT) ? 1 : 0)) * per;
		return true;
	case RFS_FT_DIR:
	case RFS_FT_LNK:
		*want = (b->size + 511) / 512;
		return true;
	default:
		if (o->sd_version == 1)
			return false;
		*want = 0;
		return true;
	}
}

/* 3.5 stat data say where the tail starts: the first direct item's offset
 * for files and symlinks that have one, 0xFFFFFFFF for everything else. */
bool check_rule_first_direct_want(const struct rfs_objinfo *o, const struct rfs_objbody *b,
				  uint32_t *want)
{
	if (o->sd_version != 1 || rules_skip(o))
		return false;
	enum rfs_file_type t = rfs_mode_type(o->mode);
	*want = (t == RFS_FT_REG || t == RFS_FT_LNK) && b->first_direct &&
		b->first_direct <= 0xFFFFFFFEu ? b->first_direct : 0xFFFFFFFFu;
	return true;
}

bool check_rules_pass(const struct rfs_fs *fs, const struct rfs_objinfo *o,
		      const struct rfs_objbody *b)
{
	if (!(o->flags & RFS_OBJ_HAS_SD))
		return true;
	if (o->flags & (RFS_OBJ_ITEMS_BAD | RFS_OBJ_SAFELINK | RFS_OBJ_MODE_FROM_ITEMS) ||
	    rfs_mode_type(o->mode) == RFS_FT_DIR)
		return false;
	uint64_t blocks;
	uint32_t first;
	return !check_rule_size_wrong(fs, o, b) &&
	       !(check_rule_blocks_want(fs, o, b, &blocks) && blocks != b->blocks) &&
	       !(check_rule_first_direct_want(o, b, &first) && first != b->sd_first_direct);
}

/*
 * object.c - stat data lookup and the mapping from mode bits to file types.
 */
#include "rfs/object.h"

enum rfs_file_type rfs_mode_type(uint16_t mode)
{
	switch (mode & 0170000) {
	case 0100000: return RFS_FT_REG;
	case 0040000: return RFS_FT_DIR;
	case 0120000: return RFS_FT_LNK;
	case 0010000: return RFS_FT_FIFO;
	case 0020000: return RFS_FT_CHR;
	case 0060000: return RFS_FT_BLK;
	case 0140000: return RFS_FT_SOCK;
	default: return RFS_FT_UNKNOWN;
	}
}

const char *rfs_file_type_name(enum rfs_file_type t)
{
	static const char *const names[] = { "unknown", "file", "dir", "symlink", "fifo",
					     "chr", "blk", "sock" };
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

rfs_status rfs_object_get(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			  struct rfs_object *out, struct rfs_error *err)
{
	struct rfs_key k = { dir_id, objectid, 0, RFS_TYPE_STAT };
	bool exact;
	rfs_status st = rfs_cursor_seek(cur, &k, &exact, err);
	if (st)
		return st;
	if (!exact)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				     "no stat data for object [%u %u]", dir_id, objectid);
	struct rfs_item_head ih;
	const uint8_t *body;
	rfs_cursor_item(cur, &ih, &body);
	out->dir_id = dir_id;
	out->objectid = objectid;
	out->sd_block = rfs_cursor_leaf_block(cur);
	if (rfs_stat_decode(body, ih.len, &out->sd))
		return rfs_error_set(err, RFS_ERR_CORRUPT, out->sd_block,
				     "stat data of [%u %u] has length %u", dir_id, objectid, ih.len);
	return RFS_OK;
}

uint64_t rfs_max_file_size(const struct rfs_fs *fs, int sd_version)
{
	if (sd_version == 1)
		return 0x7FFFFFFFu;
	/* the kernel's s_maxbytes for 3.6 objects: 2^41 - block size */
	return (UINT64_C(1) << 41) - fs->bs;
}

/*
 * check_objectid.c - pass "objectid map": the superblock's map of used
 * objectids against the objects found.
 *
 * The map is a sorted array of u32 boundaries after the superblock structure:
 * objectid x is used iff map[2i] <= x < map[2i+1] for some i.
 * Relies on: c->objects from pass tree.  Produces: problems only.
 */
#include "check.h"

#include <stdlib.h>

#include "rfs/bytes.h"

static bool oid_used(const uint32_t *map, uint32_t n, uint32_t x)
{
	/* first boundary > x; x is used iff that index is odd */
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (map[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo & 1;
}

rfs_status check_pass_objectid(struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	const struct rfs_super *sb = &fs->sb;
	uint32_t cap = (fs->bs - sb->sb_size) / 4;
	uint32_t n = sb->oid_cursize;
	if (n > cap)
		n = cap;
	uint8_t *raw = malloc(fs->bs);
	uint32_t *map = malloc(((size_t)n + 1) * sizeof(*map));
	rfs_status st = RFS_OK;
	if (!raw || !map) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "objectid map");
		goto out;
	}
	uint64_t in_block = sb->sb_byte_offset % fs->bs;
	st = rfs_dev_read_block(fs->dev, sb->sb_block, raw, err);
	if (st)
		goto out;
	bool sorted = true;
	for (uint32_t i = 0; i < n; i++) {
		size_t off = (size_t)in_block + sb->sb_size + 4 * (size_t)i;
		map[i] = off + 4 <= fs->bs ? le32_at(raw, off) : UINT32_MAX;
		if (i > 0 && map[i] <= map[i - 1] && sorted) {
			sorted = false;
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = sb->sb_block;
			ctx.item = (int)i;
			problem_report(c->rep, PR_SB_OID_MAP_UNSORTED, &ctx);
		}
	}
	if (!sorted)
		goto out;   /* membership is meaningless in an unsorted map */
	for (size_t i = 0; i < c->objects.cap; i++) {
		const struct rfs_objinfo *o = &c->objects.slots[i];
		if (!(o->flags & RFS_OBJ_HAS_SD) || oid_used(map, n, o->objectid))
			continue;
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.has_key = true;
		ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
		ctx.found = o->objectid;
		problem_report(c->rep, PR_STAT_OBJECTID_FREE, &ctx);
	}
out:
	free(raw);
	free(map);
	return st;
}

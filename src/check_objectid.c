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
#include <string.h>

#include "rfs/bytes.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Rewrites the map from the objectids in use: 1 (the root's virtual parent)
 * and every object with a stat data, as runs [start, end).  When the runs do
 * not fit the map's capacity, the smallest gaps are merged (marking a few
 * unused ids used, which only wastes them). */
static rfs_status rebuild_map(struct rfs_check *c, struct rfs_error *err)
{
	const struct rfs_super *sb = &c->fs->sb;
	size_t n = 1;
	uint32_t *ids = malloc((c->objects.count + 2) * sizeof(*ids));
	if (!ids)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "objectid map");
	ids[0] = RFS_ROOT_PARENT_OBJECTID;
	for (size_t i = 0; i < c->objects.count; i++)
		if (rfs_objtab_at(&c->objects, i)->flags & RFS_OBJ_HAS_SD)
			ids[n++] = rfs_objtab_at(&c->objects, i)->objectid;
	qsort(ids, n, sizeof(*ids), cmp_u32);
	/* runs as boundary pairs, written in place over ids (never longer) */
	uint32_t cap = (c->fs->bs - sb->sb_size) / 4;
	if (sb->oid_maxsize && sb->oid_maxsize < cap)
		cap = sb->oid_maxsize;
	cap &= ~1u;
	uint32_t *map = malloc((2 * n + 2) * sizeof(*map));
	if (!map) {
		free(ids);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "objectid map");
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && ids[i] <= map[m - 1]) {
			if (ids[i] == map[m - 1] && ids[i] != UINT32_MAX)
				map[m - 1] = ids[i] + 1;
			continue;
		}
		map[m++] = ids[i];
		map[m++] = ids[i] == UINT32_MAX ? UINT32_MAX : ids[i] + 1;
	}
	while (m > cap && m >= 4) {
		/* merge the smallest gap map[2k+1] .. map[2k+2] */
		size_t best = 1;
		for (size_t k = 1; k + 1 < m; k += 2)
			if (map[k + 1] - map[k] < map[best + 1] - map[best])
				best = k;
		memmove(&map[best], &map[best + 2], (m - best - 2) * sizeof(*map));
		m -= 2;
	}
	uint8_t *raw;
	rfs_status st = repair_sb(c, &raw, err);
	if (!st) {
		for (size_t i = 0; i < m; i++)
			le32_put(raw, sb->sb_size + 4 * i, map[i]);
		le16_put(raw, SB_OID_CURSIZE, (uint16_t)m);
		if (!sb->oid_maxsize || sb->oid_maxsize > (c->fs->bs - sb->sb_size) / 4)
			le16_put(raw, SB_OID_MAXSIZE, (uint16_t)(((c->fs->bs - sb->sb_size) / 4) & ~1u));
	}
	free(ids);
	free(map);
	return st;
}

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
	bool sorted = true, rebuild = c->oid_rebuild_pending > 0;
	uint32_t fixed_unsorted = 0, fixed_free = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t off = (size_t)in_block + sb->sb_size + 4 * (size_t)i;
		map[i] = off + 4 <= fs->bs ? le32_at(raw, off) : UINT32_MAX;
		if (i > 0 && map[i] <= map[i - 1] && sorted) {
			sorted = false;
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = sb->sb_block;
			ctx.item = (int)i;
			if (problem_report(c->rep, PR_SB_OID_MAP_UNSORTED, &ctx)) {
				rebuild = true;
				fixed_unsorted++;
			}
		}
	}
	if (!sorted)
		goto repair;   /* membership is meaningless in an unsorted map */
	for (size_t i = 0; i < c->objects.count; i++) {
		const struct rfs_objinfo *o = rfs_objtab_at(&c->objects, i);
		if (!(o->flags & RFS_OBJ_HAS_SD) || oid_used(map, n, o->objectid))
			continue;
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.has_key = true;
		ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
		ctx.found = o->objectid;
		if (problem_report(c->rep, PR_STAT_OBJECTID_FREE, &ctx)) {
			rebuild = true;
			fixed_free++;
		}
	}
repair:
	if (rebuild && !c->bad_nodes) {
		st = rebuild_map(c, err);
		if (st)
			goto out;
		for (; fixed_unsorted; fixed_unsorted--)
			problem_fixed(c->rep, PR_SB_OID_MAP_UNSORTED);
		for (; fixed_free; fixed_free--)
			problem_fixed(c->rep, PR_STAT_OBJECTID_FREE);
		for (; c->oid_rebuild_pending; c->oid_rebuild_pending--)
			problem_fixed(c->rep, PR_SB_BAD_OID_MAP_SIZE);
	}
out:
	free(raw);
	free(map);
	return st;
}

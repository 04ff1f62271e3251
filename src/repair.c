/*
 * repair.c - the write side of `rfsck fix`: block writes through the device
 * (undo log, --output or the --dry-run overlay), the superblock edited in
 * memory and written once, and stat data field updates.
 *
 * Contract: nothing here decides whether to repair; callers act only on a
 * "fix" answer from problem_report().  Every write goes through rfs_dev, whose
 * invariants (undo before overwrite, O_RDONLY in dry-run) apply.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/tree.h"

rfs_status repair_write(struct rfs_check *c, uint64_t blk, const void *buf, struct rfs_error *err)
{
	rfs_status st = rfs_dev_write_block(c->fs->dev, blk, buf, err);
	if (!st) {
		c->blocks_written++;
		if (u64set_add(&c->written, blk, NULL))
			return rfs_error_set(err, RFS_ERR_NOMEM, blk, "list of written blocks");
	}
	return st;
}

rfs_status repair_sb(struct rfs_check *c, uint8_t **sb, struct rfs_error *err)
{
	if (!c->sb_buf) {
		c->sb_buf = malloc(c->fs->bs);
		if (!c->sb_buf)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "superblock buffer");
		rfs_status st = rfs_dev_read_block(c->fs->dev, c->fs->sb.sb_block, c->sb_buf, err);
		if (st) {
			free(c->sb_buf);
			c->sb_buf = NULL;
			return st;
		}
	}
	*sb = c->sb_buf + c->fs->sb.sb_byte_offset % c->fs->bs;
	c->sb_dirty = true;
	return RFS_OK;
}

rfs_status repair_sb_commit(struct rfs_check *c, struct rfs_error *err)
{
	rfs_status st = RFS_OK;
	if (c->sb_buf && c->sb_dirty)
		st = repair_write(c, c->fs->sb.sb_block, c->sb_buf, err);
	c->sb_dirty = false;
	free(c->sb_buf);
	c->sb_buf = NULL;
	return st;
}

/* Positions cur at the item with exactly key k and gives its head and the
 * cursor's copy of the leaf (which the caller edits and writes back). */
static rfs_status seek_exact_item(struct rfs_cursor *cur, const struct rfs_key *k,
				  struct rfs_item_head *ih, uint8_t **leaf, struct rfs_error *err)
{
	bool exact;
	rfs_status st = rfs_cursor_seek(cur, k, &exact, err);
	if (st)
		return st;
	if (!exact)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				     "item [%u %u %llu %s] vanished", k->dir_id, k->objectid,
				     (unsigned long long)k->offset, rfs_item_type_name(k->type));
	rfs_cursor_item(cur, ih, NULL);
	*leaf = cur->lv[cur->height - 1].buf;
	return RFS_OK;
}

rfs_status repair_stat_field(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			     uint32_t objectid, enum repair_sd_field field, uint64_t value,
			     struct rfs_error *err)
{
	struct rfs_key k = { dir_id, objectid, 0, RFS_TYPE_STAT };
	struct rfs_item_head ih;
	uint8_t *leaf;
	rfs_status st = seek_exact_item(cur, &k, &ih, &leaf, err);
	if (st)
		return st;
	uint8_t *sd = leaf + ih.location;
	bool v2 = ih.len == RFS_SD_V2_SIZE;
	switch (field) {
	case SD_FIELD_SIZE:
		if (v2)
			le64_put(sd, 8, value);
		else
			le32_put(sd, 8, (uint32_t)value);
		break;
	case SD_FIELD_NLINK:
		if (v2)
			le32_put(sd, 4, (uint32_t)value);
		else
			le16_put(sd, 2, (uint16_t)value);
		break;
	case SD_FIELD_BLOCKS:
		le32_put(sd, v2 ? 36 : 24, (uint32_t)value);
		break;
	case SD_FIELD_MODE:
		le16_put(sd, 0, (uint16_t)value);   /* offset 0 in both versions */
		break;
	case SD_FIELD_FIRST_DIRECT:
		if (v2)
			return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
					     "3.6 stat data has no first_direct_byte");
		le32_put(sd, 28, (uint32_t)value);
		break;
	}
	return repair_write(c, rfs_cursor_leaf_block(cur), leaf, err);
}

rfs_status repair_dot_entry(struct rfs_check *c, struct rfs_cursor *cur, uint32_t dir_id,
			    uint32_t objectid, uint32_t deh_offset, uint32_t to_dir_id,
			    uint32_t to_objectid, struct rfs_error *err)
{
	struct rfs_key k = { dir_id, objectid, 1, RFS_TYPE_DIRENTRY };
	struct rfs_item_head ih;
	uint8_t *leaf;
	rfs_status st = seek_exact_item(cur, &k, &ih, &leaf, err);
	if (st)
		return st;
	uint8_t *body = leaf + ih.location;
	for (int e = 0; e < ih.free_or_count; e++) {
		uint8_t *h = body + (size_t)e * RFS_DEH_SIZE;
		if (le32_at(h, DEH_OFFSET) != deh_offset)
			continue;
		le32_put(h, DEH_DIR_ID, to_dir_id);
		le32_put(h, DEH_OBJECTID, to_objectid);
		return repair_write(c, rfs_cursor_leaf_block(cur), leaf, err);
	}
	return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
			     "entry %u of [%u %u] vanished", deh_offset, dir_id, objectid);
}

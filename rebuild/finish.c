/*
 * finish.c - stage 6 of rebuild: make the volume describe the new tree.
 *
 *   rb_flush_journal (before emit): committed transactions that the open
 *     replayed into memory are written home and the journal header marked
 *     flushed, so the kernel will not replay old blocks over the new tree;
 *   rb_finish (after emit): the superblock gets the new root, height and hash
 *     and is marked clean;
 *   rb_write_bitmaps (`rfsck rebuild` only, after rb_build): the allocation
 *     bitmaps and free count of the new tree, which emit knows exactly.
 * The objectid map, link counts, sizes and block counts are then computed
 * from the new tree by check's repair passes (src/cmd_rebuild.c runs them),
 * and those passes also verify the bitmaps: one implementation of those
 * rules for fix and rebuild.  When the first pass finds nothing, a second,
 * verifying one is not needed.
 */
#include <stdlib.h>
#include <string.h>

#include "rebuild.h"
#include "rfs/bytes.h"

rfs_status rb_flush_journal(struct rb_ctx *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	if (fs->journal.replayed == 0)
		return RFS_OK;
	uint64_t *blocks = NULL, n = 0;
	rfs_status st = rfs_dev_overlay_blocks(fs->dev, &blocks, &n, err);
	uint8_t *buf = malloc(c->bs);
	if (!st && !buf)
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal flush");
	for (uint64_t i = 0; !st && i < n; i++) {
		st = rfs_dev_read_block(fs->dev, blocks[i], buf, err);
		if (!st)
			st = rfs_dev_write_block(fs->dev, blocks[i], buf, err);
	}
	uint64_t jh = rfs_super_journal_header_block(&fs->sb);
	if (!st)
		st = rfs_dev_read_block(fs->dev, jh, buf, err);
	if (!st) {
		le32_put(buf, JH_LAST_FLUSH, fs->journal.last_trans_id);
		le32_put(buf, JH_FIRST_UNFLUSHED, fs->journal.next_offset);
		le32_put(buf, JH_MOUNT_ID, fs->journal.mount_id);
		st = rfs_dev_write_block(fs->dev, jh, buf, err);
	}
	free(buf);
	free(blocks);
	return st;
}

rfs_status rb_finish(struct rb_ctx *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	uint8_t *buf = malloc(c->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "superblock");
	uint64_t blk = fs->sb.sb_block;
	size_t at = (size_t)(fs->sb.sb_byte_offset - blk * c->bs);
	rfs_status st = rfs_dev_read_block(fs->dev, blk, buf, err);
	if (!st) {
		uint8_t *sb = buf + at;
		le32_put(sb, SB_ROOT_BLOCK, (uint32_t)c->root);
		le16_put(sb, SB_TREE_HEIGHT, (uint16_t)(c->height + 1));
		le32_put(sb, SB_HASH, c->hash_code);
		le16_put(sb, SB_FS_STATE, 0);
		le16_put(sb, SB_UMOUNT_STATE, 1);
		st = rfs_dev_write_block(fs->dev, blk, buf, err);
	}
	if (!st) {
		/* the in-memory view follows, for the repair passes that come next */
		fs->sb.root_block = (uint32_t)c->root;
		fs->sb.tree_height = (uint16_t)(c->height + 1);
		fs->sb.hash_code = c->hash_code;
		fs->sb.fs_state = 0;
		fs->sb.umount_state = 1;
		fs->hash_code = c->hash_code;
	}
	free(buf);
	return st;
}

/* Bitmap block i of the new tree into buf: bit set for a block in use
 * (c->claimed) and for every bit past the last block, as the format
 * requires.  Blocks the device does not have (a truncated image rebuilt in
 * place) stay clear, as check counts them. */
static void bitmap_block_image(const struct rb_ctx *c, uint32_t i, uint8_t *buf)
{
	uint64_t per = (uint64_t)c->bs * 8, first = (uint64_t)i * per;
	uint64_t count = c->fs->sb.block_count;
	for (uint64_t k = 0; k < per; k += 64) {
		uint64_t b = first + k, w = 0;
		if (b + 64 <= c->nblocks) {
			w = c->claimed.words[b / 64];
		} else {
			for (unsigned j = 0; j < 64; j++)
				if (b + j >= count ||
				    (b + j < c->nblocks && rfs_bitmap_test(&c->claimed, b + j)))
					w |= 1ull << j;
		}
		le64_put(buf, (size_t)(k / 8), w);
	}
}

rfs_status rb_write_bitmaps(struct rb_ctx *c, struct rfs_error *err)
{
	struct rfs_fs *fs = c->fs;
	const struct rfs_super *sb = &fs->sb;
	/* check claims the area of a relocated journal by its own rule: its
	 * repair pass writes those bitmaps */
	if (sb->j_dev != 0 || !c->claimed.words || c->claimed.nbits != c->nblocks)
		return RFS_OK;
	/* a dry run's nodes: so that its check of the result sees the bitmaps
	 * the real run writes, and reports the repairs that run would make */
	rfs_status st = rfs_bitmap_status(&c->nodes, "tree nodes", err);
	if (st)
		return st;
	rfs_bitmap_or(&c->claimed, &c->meta);
	rfs_bitmap_or(&c->claimed, &c->nodes);
	uint8_t *want = malloc(c->bs), *have = malloc(c->bs);
	if (!want || !have)
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "bitmaps");
	for (uint32_t i = 0; !st && i < sb->bmap_count; i++) {
		uint64_t blk = rfs_bitmap_block(sb, i);
		bitmap_block_image(c, i, want);
		st = rfs_dev_read_block(c->dev, blk, have, err);
		if (!st && memcmp(want, have, c->bs) != 0)
			st = rfs_dev_write_block(c->dev, blk, want, err);
	}
	uint64_t free_blocks = c->nblocks - rfs_bitmap_count(&c->claimed);
	uint64_t at_blk = sb->sb_block;
	size_t at = (size_t)(sb->sb_byte_offset - at_blk * c->bs);
	if (!st)
		st = rfs_dev_read_block(c->dev, at_blk, want, err);
	if (!st && le32_at(want + at, SB_FREE_BLOCKS) != (uint32_t)free_blocks) {
		le32_put(want + at, SB_FREE_BLOCKS, (uint32_t)free_blocks);
		st = rfs_dev_write_block(c->dev, at_blk, want, err);
	}
	if (!st)
		fs->sb.free_blocks = (uint32_t)free_blocks;
	free(want);
	free(have);
	return st;
}

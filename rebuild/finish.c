/*
 * finish.c - stage 6 of rebuild: make the volume describe the new tree.
 *
 *   rb_flush_journal (before emit): committed transactions that the open
 *     replayed into memory are written home and the journal header marked
 *     flushed, so the kernel will not replay old blocks over the new tree;
 *   rb_finish (after emit): the superblock gets the new root, height and hash
 *     and is marked clean.  Bitmaps, the free count, the objectid map, link
 *     counts, sizes and block counts are then computed from the new tree by
 *     check's repair passes (src/cmd_rebuild.c runs them): one implementation
 *     of those rules for fix and rebuild.
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

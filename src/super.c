/*
 * super.c - decoding and self-consistency checks of the superblock, and the
 * geometry derived from it (bitmap placement, journal area, metadata blocks).
 *
 * Policy on the two superblock locations (see docs/design.md): rfsck reads the
 * 64 KiB location first and uses the old 8 KiB location only when 64 KiB holds
 * no magic; the kernel probes 8 KiB first, but a stale 8 KiB copy on a modern
 * volume is far more likely than a pre-1999 3.5 volume.  src/fs.c applies it.
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <string.h>

static enum rfs_magic_kind magic_kind(const uint8_t *m)
{
	if (memcmp(m, "ReIsErFs", 8) == 0)
		return RFS_MAGIC_35;
	if (memcmp(m, "ReIsEr2Fs", 9) == 0)
		return RFS_MAGIC_36;
	if (memcmp(m, "ReIsEr3Fs", 9) == 0)
		return RFS_MAGIC_JR;
	return RFS_MAGIC_NONE;
}

/*
 * The format of a ReIsEr3Fs volume whose version field is damaged (neither 0 nor
 * 2) is read off the layout the superblock's writer chose: mkreiserfs sizes the
 * objectid map to fill the block after a 76-byte (3.5) or 204-byte (3.6)
 * superblock, rounded down to an even count, and the map's first entry is 1.
 * Without such evidence the kernel's choice stands: any version but 0 is 3.6.
 */
static enum rfs_fs_format jr_format(const uint8_t *buf, size_t len, uint16_t version,
				 uint16_t blocksize, uint16_t oid_maxsize)
{
	if (version == 0)
		return RFS_FORMAT_35;
	if (version == 2 || blocksize <= SB_V2_SIZE)
		return RFS_FORMAT_36;
	if (oid_maxsize == (((unsigned)blocksize - SB_V1_SIZE) / 4 & ~1u))
		return RFS_FORMAT_35;
	if (oid_maxsize == (((unsigned)blocksize - SB_V2_SIZE) / 4 & ~1u))
		return RFS_FORMAT_36;
	bool map_at_v1 = le32_at(buf, SB_V1_SIZE) == 1;
	bool map_at_v2 = len >= SB_V2_SIZE + 4 && le32_at(buf, SB_V2_SIZE) == 1;
	return map_at_v1 && !map_at_v2 ? RFS_FORMAT_35 : RFS_FORMAT_36;
}

rfs_status rfs_super_decode(const uint8_t *buf, size_t len, uint64_t sb_byte_offset,
			    struct rfs_super *out, struct rfs_error *err)
{
	memset(out, 0, sizeof(*out));
	if (len < SB_V2_SIZE)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "superblock buffer of %zu bytes is too short", len);
	out->magic_kind = magic_kind(buf + SB_MAGIC);
	if (out->magic_kind == RFS_MAGIC_NONE)
		return rfs_error_set(err, RFS_ERR_NOT_REISERFS, RFS_NO_BLOCK,
				     "no ReiserFS magic at byte %llu",
				     (unsigned long long)(sb_byte_offset + SB_MAGIC));
	out->block_count = le32_at(buf, SB_BLOCK_COUNT);
	out->free_blocks = le32_at(buf, SB_FREE_BLOCKS);
	out->root_block = le32_at(buf, SB_ROOT_BLOCK);
	out->j_first = le32_at(buf, SB_JP_FIRST);
	out->j_dev = le32_at(buf, SB_JP_DEV);
	out->j_size = le32_at(buf, SB_JP_SIZE);
	out->j_trans_max = le32_at(buf, SB_JP_TRANS_MAX);
	out->j_magic = le32_at(buf, SB_JP_MAGIC);
	out->j_max_batch = le32_at(buf, SB_JP_MAX_BATCH);
	out->j_max_commit_age = le32_at(buf, SB_JP_MAX_COMMIT_AGE);
	out->j_max_trans_age = le32_at(buf, SB_JP_MAX_TRANS_AGE);
	out->blocksize = le16_at(buf, SB_BLOCKSIZE);
	out->oid_maxsize = le16_at(buf, SB_OID_MAXSIZE);
	out->oid_cursize = le16_at(buf, SB_OID_CURSIZE);
	out->umount_state = le16_at(buf, SB_UMOUNT_STATE);
	memcpy(out->magic, buf + SB_MAGIC, SB_MAGIC_LEN);
	out->fs_state = le16_at(buf, SB_FS_STATE);
	out->hash_code = le32_at(buf, SB_HASH);
	out->tree_height = le16_at(buf, SB_TREE_HEIGHT);
	out->bmap_nr = le16_at(buf, SB_BMAP_NR);
	out->version = le16_at(buf, SB_VERSION);
	out->reserved_for_journal = le16_at(buf, SB_RESERVED_JOURNAL);

	/* The magic decides, except for ReIsEr3Fs where the version field does. */
	if (out->magic_kind == RFS_MAGIC_35)
		out->format = RFS_FORMAT_35;
	else if (out->magic_kind == RFS_MAGIC_36)
		out->format = RFS_FORMAT_36;
	else
		out->format = jr_format(buf, len, out->version, out->blocksize,
					out->oid_maxsize);

	if (out->format == RFS_FORMAT_36) {
		out->sb_size = SB_V2_SIZE;
		out->inode_generation = le32_at(buf, SB_INODE_GEN);
		out->flags = le32_at(buf, SB_FLAGS);
		memcpy(out->uuid, buf + SB_UUID, 16);
		memcpy(out->label, buf + SB_LABEL, 16);
		out->mnt_count = le16_at(buf, SB_MNT_COUNT);
		out->max_mnt_count = le16_at(buf, SB_MAX_MNT_COUNT);
		out->lastcheck = le32_at(buf, SB_LASTCHECK);
		out->check_interval = le32_at(buf, SB_CHECK_INTERVAL);
	} else {
		out->sb_size = SB_V1_SIZE;
	}
	out->sb_byte_offset = sb_byte_offset;
	out->old_layout = sb_byte_offset != RFS_SB_OFFSET;
	if (out->blocksize) {
		out->sb_block = (uint32_t)(sb_byte_offset / out->blocksize);
		uint64_t per_bitmap = (uint64_t)out->blocksize * 8;
		out->bmap_count = out->block_count
			? (uint32_t)((out->block_count - 1) / per_bitmap + 1) : 0;
	}
	return RFS_OK;
}

static bool blocksize_valid(uint32_t bs)
{
	return bs >= 512 && bs <= 65536 && (bs & (bs - 1)) == 0;
}

uint64_t rfs_bitmap_block(const struct rfs_super *sb, uint32_t i)
{
	if (sb->old_layout)
		return (uint64_t)sb->sb_block + 1 + i;
	if (i == 0)
		return (uint64_t)sb->sb_block + 1;
	return (uint64_t)i * sb->blocksize * 8;
}

uint64_t rfs_super_journal_header_block(const struct rfs_super *sb)
{
	return (uint64_t)sb->j_first + sb->j_size;
}

bool rfs_super_trans_max_valid(uint32_t trans_max, uint32_t j_size)
{
	return trans_max != 0 && trans_max <= 1024 && (uint64_t)trans_max * 2 <= j_size;
}

uint64_t rfs_super_journal_end(const struct rfs_super *sb)
{
	if (sb->j_dev != 0)
		return (uint64_t)sb->sb_block + 2 + (sb->old_layout ? sb->bmap_count : 0) +
		       sb->reserved_for_journal;
	return (uint64_t)sb->j_first + sb->j_size + 1;
}

bool rfs_super_block_is_metadata(const struct rfs_super *sb, uint64_t blk)
{
	if (blk <= sb->sb_block)
		return true;
	if (sb->old_layout && blk <= (uint64_t)sb->sb_block + sb->bmap_count)
		return true;
	if (!sb->old_layout && blk == (uint64_t)sb->sb_block + 1)
		return true;
	if (blk >= sb->j_first && blk < rfs_super_journal_end(sb) && sb->j_dev == 0)
		return true;
	if (sb->j_dev != 0 && blk < rfs_super_journal_end(sb))
		return true;
	uint64_t per = (uint64_t)sb->blocksize * 8;
	if (!sb->old_layout && per && blk % per == 0 && blk / per < sb->bmap_count)
		return true;
	return false;
}

static void report(rfs_fault_fn fn, void *ctx, enum rfs_problem_code code, uint64_t expected,
		   uint64_t found)
{
	struct rfs_fault f = { .code = code, .item = -1, .entry = -1,
			       .expected = expected, .found = found };
	if (fn)
		fn(ctx, &f);
}

rfs_status rfs_super_check(const struct rfs_super *sb, uint64_t dev_blocks,
			   rfs_fault_fn fn, void *ctx)
{
	rfs_status st = RFS_OK;
	if (!blocksize_valid(sb->blocksize)) {
		report(fn, ctx, PR_SB_BAD_BLOCKSIZE, 4096, sb->blocksize);
		return RFS_ERR_CORRUPT;
	}
	if (sb->block_count == 0) {
		report(fn, ctx, PR_SB_BLOCK_COUNT_ZERO, 0, 0);
		return RFS_ERR_CORRUPT;
	}
	if (sb->j_dev != 0)
		report(fn, ctx, PR_SB_JOURNAL_EXTERNAL, 0, sb->j_dev);
	if (sb->old_layout)
		report(fn, ctx, PR_SB_OLD_LOCATION, RFS_SB_OFFSET, sb->sb_byte_offset);
	if (dev_blocks < sb->block_count)
		report(fn, ctx, PR_SB_DEVICE_TOO_SMALL, sb->block_count, dev_blocks);
	if (sb->magic_kind == RFS_MAGIC_JR && sb->version != 0 && sb->version != 2)
		report(fn, ctx, PR_SB_BAD_VERSION, sb->format, sb->version);
	if (sb->free_blocks > sb->block_count)
		report(fn, ctx, PR_SB_FREE_EXCEEDS_COUNT, sb->block_count, sb->free_blocks);
	if (sb->bmap_nr != 0 && sb->bmap_nr != sb->bmap_count)
		report(fn, ctx, PR_SB_BMAP_NR_MISMATCH, sb->bmap_count, sb->bmap_nr);
	if (sb->bmap_nr == 0 && sb->bmap_count <= 0xFFFF)
		report(fn, ctx, PR_SB_BMAP_NR_MISMATCH, sb->bmap_count, 0);
	if (sb->hash_code < 1 || sb->hash_code > 3)
		report(fn, ctx, PR_SB_BAD_HASH_CODE, 3, sb->hash_code);
	if (sb->tree_height < 2 || sb->tree_height > RFS_MAX_HEIGHT + 1)
		report(fn, ctx, PR_SB_BAD_TREE_HEIGHT, 2, sb->tree_height);

	uint32_t oid_cap = (sb->blocksize - sb->sb_size) / 4;
	if (sb->oid_maxsize > oid_cap || sb->oid_cursize > sb->oid_maxsize ||
	    (sb->oid_cursize & 1))
		report(fn, ctx, PR_SB_BAD_OID_MAP_SIZE, sb->oid_maxsize, sb->oid_cursize);

	if (sb->j_dev == 0) {
		uint64_t first_free = sb->old_layout
			? (uint64_t)sb->sb_block + 1 + sb->bmap_count
			: (uint64_t)sb->sb_block + 2;
		uint64_t per = (uint64_t)sb->blocksize * 8;
		if (sb->j_first < first_free)
			report(fn, ctx, PR_SB_JOURNAL_BAD_PLACEMENT, first_free, sb->j_first);
		else if (sb->j_size < 512 || (uint64_t)sb->j_first + sb->j_size >= sb->block_count)
			report(fn, ctx, PR_SB_JOURNAL_BAD_SIZE, 512, sb->j_size);
		else if (!sb->old_layout && (uint64_t)sb->j_first + sb->j_size + 1 > per)
			report(fn, ctx, PR_SB_JOURNAL_BAD_PLACEMENT, per, sb->j_first);
		else if (!rfs_super_trans_max_valid(sb->j_trans_max, sb->j_size))
			report(fn, ctx, PR_SB_JOURNAL_BAD_TRANS_MAX, sb->j_size, sb->j_trans_max);
	}

	if (sb->root_block >= sb->block_count ||
	    rfs_super_block_is_metadata(sb, sb->root_block))
		report(fn, ctx, PR_SB_ROOT_OUT_OF_RANGE, sb->block_count, sb->root_block);
	if (sb->fs_state != 0)
		report(fn, ctx, PR_SB_FS_STATE_ERROR, 0, sb->fs_state);
	if (sb->umount_state != 1)
		report(fn, ctx, PR_SB_UNCLEAN, 1, sb->umount_state);
	return st;
}

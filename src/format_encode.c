/*
 * format_encode.c - encoders for item heads, block heads, stat data and
 * directory items: the exact inverses of src/node.c and src/item.c.
 *
 * Every field is written with an explicit little-endian store at the offset
 * that include/rfs/format.h pins; nothing casts a struct over a buffer.  The
 * encoders that can fail check their input first and write nothing that a
 * decoder would read differently (see the contract in format.h).
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <string.h>

/* File type bits of the mode (POSIX values, as stored on disk). */
enum { MODE_FMT = 0170000, MODE_CHR = 0020000, MODE_BLK = 0060000 };

static bool mode_is_device(uint16_t mode)
{
	unsigned t = mode & MODE_FMT;
	return t == MODE_CHR || t == MODE_BLK;
}

void rfs_item_head_encode(const struct rfs_item_head *ih, uint8_t *p)
{
	rfs_key_encode(&ih->key, ih->key_format, p + IH_KEY);
	le16_put(p, IH_FREE_OR_COUNT, ih->free_or_count);
	le16_put(p, IH_LEN, ih->len);
	le16_put(p, IH_LOCATION, ih->location);
	le16_put(p, IH_VERSION, (uint16_t)ih->key_format);
}

void rfs_block_head_encode(const struct rfs_block_head *bh, uint8_t *blk)
{
	le16_put(blk, BLKH_LEVEL, bh->level);
	le16_put(blk, BLKH_NR_ITEMS, bh->nr_items);
	le16_put(blk, BLKH_FREE_SPACE, bh->free_space);
	le16_put(blk, BLKH_RESERVED, 0);
	memset(blk + BLKH_RIGHT_KEY, 0, RFS_KEY_SIZE);
}

rfs_status rfs_stat_encode(const struct rfs_stat *st, uint8_t *b, size_t cap, size_t *len)
{
	bool dev = mode_is_device(st->mode);
	if (st->version == 1) {
		if (cap < RFS_SD_V1_SIZE || st->nlink > 0xFFFF || st->uid > 0xFFFF ||
		    st->gid > 0xFFFF || st->size > UINT32_MAX)
			return RFS_ERR_INVALID;
		le16_put(b, 0, st->mode);
		le16_put(b, 2, (uint16_t)st->nlink);
		le16_put(b, 4, (uint16_t)st->uid);
		le16_put(b, 6, (uint16_t)st->gid);
		le32_put(b, 8, (uint32_t)st->size);
		le32_put(b, 12, st->atime);
		le32_put(b, 16, st->mtime);
		le32_put(b, 20, st->ctime);
		le32_put(b, 24, dev ? st->rdev : st->blocks);
		le32_put(b, 28, st->first_direct_byte);
		*len = RFS_SD_V1_SIZE;
		return RFS_OK;
	}
	if (st->version == 2) {
		if (cap < RFS_SD_V2_SIZE)
			return RFS_ERR_INVALID;
		le16_put(b, 0, st->mode);
		le16_put(b, 2, st->attrs);
		le32_put(b, 4, st->nlink);
		le64_put(b, 8, st->size);
		le32_put(b, 16, st->uid);
		le32_put(b, 20, st->gid);
		le32_put(b, 24, st->atime);
		le32_put(b, 28, st->mtime);
		le32_put(b, 32, st->ctime);
		le32_put(b, 36, st->blocks);
		le32_put(b, 40, dev ? st->rdev : st->generation);
		*len = RFS_SD_V2_SIZE;
		return RFS_OK;
	}
	return RFS_ERR_INVALID;
}

size_t rfs_dir_entry_size(uint16_t name_len, enum rfs_key_format fmt)
{
	size_t stored = fmt == RFS_KEY_V2 ? ((size_t)name_len + 7) / 8 * 8 : name_len;
	return RFS_DEH_SIZE + stored;
}

/* Slot size of entry e's name under fmt, or e->stored_len when given. */
static size_t slot_len(const struct rfs_dirent_in *e, enum rfs_key_format fmt)
{
	if (e->stored_len)
		return e->stored_len;
	return rfs_dir_entry_size(e->name_len, fmt) - RFS_DEH_SIZE;
}

rfs_status rfs_dir_item_encode(const struct rfs_dirent_in *e, size_t n, enum rfs_key_format fmt,
			       uint8_t *body, size_t cap, size_t *len)
{
	if (n == 0)
		return RFS_ERR_INVALID;
	/* Check everything and size the body before writing a byte. */
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (e[i].name_len == 0 || !e[i].name || e[i].name[e[i].name_len - 1] == 0)
			return RFS_ERR_INVALID;
		if (e[i].stored_len && e[i].stored_len < e[i].name_len)
			return RFS_ERR_INVALID;
		if (i > 0 && e[i].offset <= e[i - 1].offset)
			return RFS_ERR_INVALID;
		total += RFS_DEH_SIZE + slot_len(&e[i], fmt);
		if (total > 0xFFFF || total > cap)
			return RFS_ERR_INVALID;
	}
	/* Names from the end: entry 0's slot ends at total, entry i's ends where
	 * entry i-1's starts; the last one starts right after the heads. */
	size_t end = total;
	for (size_t i = 0; i < n; i++) {
		size_t slot = slot_len(&e[i], fmt);
		size_t loc = end - slot;
		uint8_t *h = body + i * RFS_DEH_SIZE;
		le32_put(h, DEH_OFFSET, e[i].offset);
		le32_put(h, DEH_DIR_ID, e[i].dir_id);
		le32_put(h, DEH_OBJECTID, e[i].objectid);
		le16_put(h, DEH_LOCATION, (uint16_t)loc);
		le16_put(h, DEH_STATE, e[i].state);
		memcpy(body + loc, e[i].name, e[i].name_len);
		memset(body + loc + e[i].name_len, 0, slot - e[i].name_len);
		end = loc;
	}
	*len = total;
	return RFS_OK;
}

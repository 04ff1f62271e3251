/*
 * journal_format.c - decoding of journal header, descriptor and commit blocks.
 * Replay logic (which transactions count) lives in src/journal.c.
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <string.h>

void rfs_journal_header_decode(const uint8_t *blk, struct rfs_journal_header *out)
{
	out->last_flush_trans_id = le32_at(blk, JH_LAST_FLUSH);
	out->first_unflushed_offset = le32_at(blk, JH_FIRST_UNFLUSHED);
	out->mount_id = le32_at(blk, JH_MOUNT_ID);
	for (int i = 0; i < 8; i++)
		out->params[i] = le32_at(blk, JH_PARAMS + 4 * (size_t)i);
}

bool rfs_journal_desc_decode(const uint8_t *blk, uint32_t bs, uint32_t *trans_id,
			     uint32_t *len, uint32_t *mount_id)
{
	if (bs < 64 || memcmp(blk + bs - 12, RFS_JOURNAL_DESC_MAGIC, 8) != 0)
		return false;
	*trans_id = le32_at(blk, JD_TRANS_ID);
	*len = le32_at(blk, JD_LEN);
	*mount_id = le32_at(blk, JD_MOUNT_ID);
	return true;
}

bool rfs_journal_real_block(const uint8_t *desc, const uint8_t *commit, uint32_t bs,
			    uint32_t i, uint32_t *home)
{
	uint32_t half = rfs_journal_trans_half(bs);
	if (i < half) {
		*home = le32_at(desc, JD_REAL + 4 * (size_t)i);
		return true;
	}
	i -= half;
	if (i >= half)
		return false;
	*home = le32_at(commit, JC_REAL + 4 * (size_t)i);
	return true;
}

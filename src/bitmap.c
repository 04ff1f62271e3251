/* bitmap.c - see include/rfs/bitmap.h. */
#include "rfs/bitmap.h"

#include <stdlib.h>
#include <string.h>

rfs_status rfs_bitmap_init(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err)
{
	b->nbits = nbits;
	b->words = calloc((size_t)((nbits + 63) / 64) + 1, sizeof(uint64_t));
	if (!b->words)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK,
				     "bitmap of %llu bits", (unsigned long long)nbits);
	return RFS_OK;
}

void rfs_bitmap_free(struct rfs_bitmap *b)
{
	free(b->words);
	b->words = NULL;
	b->nbits = 0;
}

uint64_t rfs_bitmap_count(const struct rfs_bitmap *b)
{
	uint64_t n = 0;
	for (uint64_t i = 0; i < (b->nbits + 63) / 64; i++)
		n += (uint64_t)__builtin_popcountll(b->words[i]);
	return n;
}

rfs_status rfs_bitmap_load(struct rfs_fs *fs, struct rfs_bitmap *out, uint64_t *tail_clear,
			   rfs_bitmap_unreadable_fn unreadable, void *ctx, struct rfs_error *err)
{
	uint32_t bs = fs->bs;
	uint64_t per = (uint64_t)bs * 8;
	uint8_t *buf = malloc(bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "bitmap buffer");
	if (tail_clear)
		*tail_clear = 0;
	for (uint32_t i = 0; i < fs->sb.bmap_count; i++) {
		uint64_t first = (uint64_t)i * per;
		if (first >= out->nbits)
			break;
		uint64_t blk = rfs_bitmap_block(&fs->sb, i);
		struct rfs_error e;
		rfs_error_clear(&e);
		if (rfs_dev_read_block(fs->dev, blk, buf, &e)) {
			if (e.status == RFS_ERR_NOMEM) {
				free(buf);
				return rfs_error_set(err, RFS_ERR_NOMEM, blk, "reading bitmap");
			}
			if (unreadable)
				unreadable(ctx, i, blk, &e);
			memset(buf, 0xFF, bs);
		}
		for (uint64_t j = 0; j < per; j++) {
			uint64_t b = first + j;
			bool set = buf[j >> 3] >> (j & 7) & 1;
			if (b < out->nbits) {
				if (set)
					rfs_bitmap_set(out, b);
			} else if (b >= fs->sb.block_count && !set && tail_clear) {
				(*tail_clear)++;
			}
		}
	}
	free(buf);
	return RFS_OK;
}

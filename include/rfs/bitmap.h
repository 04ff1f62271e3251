/*
 * bitmap.h - in-memory block bitmaps (one bit per block) and loading the
 * on-disk allocation bitmaps into one.
 *
 * Invariant: a bitmap has nbits bits; test() of a bit >= nbits answers false
 * and set() of it does nothing, so a block number read from disk can never
 * index outside the allocation.
 */
#ifndef RFS_BITMAP_H
#define RFS_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/fs.h"

struct rfs_bitmap {
	uint64_t *words;
	uint64_t nbits;
};

rfs_status rfs_bitmap_init(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err);
void rfs_bitmap_free(struct rfs_bitmap *b);

static inline bool rfs_bitmap_test(const struct rfs_bitmap *b, uint64_t i)
{
	return i < b->nbits && (b->words[i >> 6] >> (i & 63) & 1);
}

static inline void rfs_bitmap_set(struct rfs_bitmap *b, uint64_t i)
{
	if (i < b->nbits)
		b->words[i >> 6] |= UINT64_C(1) << (i & 63);
}

static inline void rfs_bitmap_clear(struct rfs_bitmap *b, uint64_t i)
{
	if (i < b->nbits)
		b->words[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

uint64_t rfs_bitmap_count(const struct rfs_bitmap *b);

/* Reads the filesystem's allocation bitmaps (blocks [0, nbits) of out).  A
 * bitmap block that cannot be read is reported through unreadable(ctx, i,
 * err) and its range is marked all-used (as reiserfsprogs does).  *tail_clear
 * (may be NULL) receives the number of clear bits past block_count in the last
 * bitmap block. */
typedef void (*rfs_bitmap_unreadable_fn)(void *ctx, uint32_t bitmap_index, uint64_t block,
					 const struct rfs_error *err);
rfs_status rfs_bitmap_load(struct rfs_fs *fs, struct rfs_bitmap *out, uint64_t *tail_clear,
			   rfs_bitmap_unreadable_fn unreadable, void *ctx, struct rfs_error *err);

#endif

/*
 * bitmap.h - in-memory sets of block numbers, and loading the on-disk
 * allocation bitmaps into one.
 *
 * Two representations behind one interface:
 *   dense  (rfs_bitmap_init): one bit per block, words[] -- for sets that
 *          cover most of the volume (blocks in use, blocks claimed);
 *   sparse (rfs_bitmap_init_sparse): one chunk per 2^16 blocks, each empty,
 *          a sorted array of 16-bit offsets (up to RFS_BITMAP_ARRAY_MAX
 *          members, 2 bytes each) or, past that, an 8 KiB bit array -- for
 *          sets of a few blocks in a hundred (leaf candidates, nested
 *          filesystems, metadata), which then cost about 2 bytes per member
 *          and never more than one bit per block plus 24 bytes per chunk.
 * Which one a set uses changes its memory, never an answer.
 *
 * Invariants: a bitmap has nbits bits; test() of a bit >= nbits answers
 * false and set() of it does nothing, so a block number read from disk can
 * never index outside the allocation.  Exactly one of words and chunks is
 * non-NULL while the bitmap is initialised.  A sparse array is sorted and
 * holds no duplicates.  Adding to a sparse set can need memory:
 * rfs_bitmap_add() reports that as a status; set() on a sparse set records
 * it in `failed`, which only rfs_bitmap_status() clears.
 */
#ifndef RFS_BITMAP_H
#define RFS_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/fs.h"

#define RFS_BITMAP_CHUNK_SHIFT 16
#define RFS_BITMAP_ARRAY_MAX 4096

struct rfs_bitmap_chunk {
	uint16_t *members;  /* sorted offsets within the chunk, or NULL */
	uint64_t *bits;     /* 2^16 bits once the array would pass ARRAY_MAX */
	uint32_t n;         /* members (array or bits) */
	uint32_t cap;       /* allocated entries of members */
};

struct rfs_bitmap {
	uint64_t *words;                 /* dense */
	struct rfs_bitmap_chunk *chunks; /* sparse */
	uint64_t nbits;
	bool failed;                     /* a sparse set() ran out of memory */
};

rfs_status rfs_bitmap_init(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err);
rfs_status rfs_bitmap_init_sparse(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err);
void rfs_bitmap_free(struct rfs_bitmap *b);

bool rfs_bitmap_sparse_test(const struct rfs_bitmap *b, uint64_t i);
bool rfs_bitmap_sparse_add(struct rfs_bitmap *b, uint64_t i);
void rfs_bitmap_sparse_clear(struct rfs_bitmap *b, uint64_t i);

static inline bool rfs_bitmap_test(const struct rfs_bitmap *b, uint64_t i)
{
	if (i >= b->nbits)
		return false;
	if (b->words)
		return b->words[i >> 6] >> (i & 63) & 1;
	return rfs_bitmap_sparse_test(b, i);
}

static inline void rfs_bitmap_set(struct rfs_bitmap *b, uint64_t i)
{
	if (i >= b->nbits)
		return;
	if (b->words)
		b->words[i >> 6] |= UINT64_C(1) << (i & 63);
	else if (!rfs_bitmap_sparse_add(b, i))
		b->failed = true;
}

static inline void rfs_bitmap_clear(struct rfs_bitmap *b, uint64_t i)
{
	if (i >= b->nbits)
		return;
	if (b->words)
		b->words[i >> 6] &= ~(UINT64_C(1) << (i & 63));
	else
		rfs_bitmap_sparse_clear(b, i);
}

/* set() that reports running out of memory as RFS_ERR_NOMEM. */
rfs_status rfs_bitmap_add(struct rfs_bitmap *b, uint64_t i, struct rfs_error *err);
/* RFS_ERR_NOMEM if a set() since the last call lost a member. */
rfs_status rfs_bitmap_status(struct rfs_bitmap *b, const char *what, struct rfs_error *err);

uint64_t rfs_bitmap_count(const struct rfs_bitmap *b);
/* Bytes the set holds on the heap (for the memory accounting in docs). */
uint64_t rfs_bitmap_bytes(const struct rfs_bitmap *b);
/* dst |= src over the bits both have (a sparse dst records running out of
 * memory in `failed`). */
void rfs_bitmap_or(struct rfs_bitmap *dst, const struct rfs_bitmap *src);

typedef void (*rfs_bitmap_unreadable_fn)(void *ctx, uint32_t bitmap_index, uint64_t block,
					 const struct rfs_error *err);

/* Reads bitmap block i into buf (fs->bs bytes); one that cannot be read is
 * reported through unreadable (may be NULL) and reads as all-used. */
rfs_status rfs_bitmap_read_block(struct rfs_fs *fs, uint32_t i, uint8_t *buf,
				 rfs_bitmap_unreadable_fn unreadable, void *ctx,
				 struct rfs_error *err);

/* Reads the filesystem's allocation bitmaps (blocks [0, nbits) of out).  A
 * bitmap block that cannot be read is reported through unreadable(ctx, i,
 * err) and its range is marked all-used (as reiserfsprogs does).  *tail_clear
 * (may be NULL) receives the number of clear bits past block_count in the last
 * bitmap block. */
rfs_status rfs_bitmap_load(struct rfs_fs *fs, struct rfs_bitmap *out, uint64_t *tail_clear,
			   rfs_bitmap_unreadable_fn unreadable, void *ctx, struct rfs_error *err);

#endif

/* bitmap.c - see include/rfs/bitmap.h. */
#include "rfs/bitmap.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS (UINT64_C(1) << RFS_BITMAP_CHUNK_SHIFT)
#define CHUNK_WORDS (CHUNK_BITS / 64)

rfs_status rfs_bitmap_init(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err)
{
	memset(b, 0, sizeof(*b));
	b->words = calloc((size_t)((nbits + 63) / 64) + 1, sizeof(uint64_t));
	if (!b->words)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK,
				     "bitmap of %llu bits", (unsigned long long)nbits);
	b->nbits = nbits;
	return RFS_OK;
}

rfs_status rfs_bitmap_init_sparse(struct rfs_bitmap *b, uint64_t nbits, struct rfs_error *err)
{
	memset(b, 0, sizeof(*b));
	b->chunks = calloc((size_t)((nbits + CHUNK_BITS - 1) >> RFS_BITMAP_CHUNK_SHIFT) + 1,
			   sizeof(*b->chunks));
	if (!b->chunks)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK,
				     "block set of %llu bits", (unsigned long long)nbits);
	b->nbits = nbits;
	return RFS_OK;
}

static uint64_t chunk_count(const struct rfs_bitmap *b)
{
	return (b->nbits + CHUNK_BITS - 1) >> RFS_BITMAP_CHUNK_SHIFT;
}

void rfs_bitmap_free(struct rfs_bitmap *b)
{
	if (b->chunks) {
		for (uint64_t c = 0; c < chunk_count(b); c++) {
			free(b->chunks[c].members);
			free(b->chunks[c].bits);
		}
	}
	free(b->chunks);
	free(b->words);
	memset(b, 0, sizeof(*b));
}

/* Index of the first member >= off in a chunk's array (n if none). */
static uint32_t lower_bound(const struct rfs_bitmap_chunk *k, uint16_t off)
{
	uint32_t lo = 0, hi = k->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (k->members[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool rfs_bitmap_sparse_test(const struct rfs_bitmap *b, uint64_t i)
{
	const struct rfs_bitmap_chunk *k = &b->chunks[i >> RFS_BITMAP_CHUNK_SHIFT];
	uint16_t off = (uint16_t)(i & (CHUNK_BITS - 1));
	if (k->bits)
		return k->bits[off >> 6] >> (off & 63) & 1;
	if (k->n == 0 || k->members[k->n - 1] < off)
		return false;
	uint32_t at = lower_bound(k, off);
	return at < k->n && k->members[at] == off;
}

/* The array has reached its limit: from now on the chunk is a bit array,
 * which at this size costs what the array did. */
static bool chunk_to_bits(struct rfs_bitmap_chunk *k)
{
	uint64_t *bits = calloc(CHUNK_WORDS, sizeof(uint64_t));
	if (!bits)
		return false;
	for (uint32_t j = 0; j < k->n; j++)
		bits[k->members[j] >> 6] |= UINT64_C(1) << (k->members[j] & 63);
	free(k->members);
	k->members = NULL;
	k->cap = 0;
	k->bits = bits;
	return true;
}

bool rfs_bitmap_sparse_add(struct rfs_bitmap *b, uint64_t i)
{
	struct rfs_bitmap_chunk *k = &b->chunks[i >> RFS_BITMAP_CHUNK_SHIFT];
	uint16_t off = (uint16_t)(i & (CHUNK_BITS - 1));
	if (!k->bits) {
		/* members mostly arrive in block order: appending is the rule */
		uint32_t at = k->n && k->members[k->n - 1] >= off ? lower_bound(k, off) : k->n;
		if (at < k->n && k->members[at] == off)
			return true;
		if (k->n == RFS_BITMAP_ARRAY_MAX) {
			if (!chunk_to_bits(k))
				return false;
		} else {
			if (k->n == k->cap) {
				uint32_t cap = k->cap ? k->cap + k->cap / 2 : 8;  /* <= 3 bytes a member */
				if (cap > RFS_BITMAP_ARRAY_MAX)
					cap = RFS_BITMAP_ARRAY_MAX;
				uint16_t *m = realloc(k->members, cap * sizeof(*m));
				if (!m)
					return false;
				k->members = m;
				k->cap = cap;
			}
			memmove(k->members + at + 1, k->members + at, (k->n - at) * sizeof(uint16_t));
			k->members[at] = off;
			k->n++;
			return true;
		}
	}
	uint64_t bit = UINT64_C(1) << (off & 63);
	if (!(k->bits[off >> 6] & bit)) {
		k->bits[off >> 6] |= bit;
		k->n++;
	}
	return true;
}

void rfs_bitmap_sparse_clear(struct rfs_bitmap *b, uint64_t i)
{
	struct rfs_bitmap_chunk *k = &b->chunks[i >> RFS_BITMAP_CHUNK_SHIFT];
	uint16_t off = (uint16_t)(i & (CHUNK_BITS - 1));
	if (k->bits) {
		uint64_t bit = UINT64_C(1) << (off & 63);
		if (k->bits[off >> 6] & bit) {
			k->bits[off >> 6] &= ~bit;
			k->n--;
		}
		return;
	}
	uint32_t at = lower_bound(k, off);
	if (at < k->n && k->members[at] == off) {
		memmove(k->members + at, k->members + at + 1, (k->n - at - 1) * sizeof(uint16_t));
		k->n--;
	}
}

rfs_status rfs_bitmap_add(struct rfs_bitmap *b, uint64_t i, struct rfs_error *err)
{
	if (i >= b->nbits)
		return RFS_OK;
	if (b->words) {
		rfs_bitmap_set(b, i);
		return RFS_OK;
	}
	if (rfs_bitmap_sparse_add(b, i))
		return RFS_OK;
	return rfs_error_set(err, RFS_ERR_NOMEM, i, "block set");
}

rfs_status rfs_bitmap_status(struct rfs_bitmap *b, const char *what, struct rfs_error *err)
{
	if (!b->failed)
		return RFS_OK;
	b->failed = false;
	return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "%s: out of memory", what);
}

uint64_t rfs_bitmap_count(const struct rfs_bitmap *b)
{
	uint64_t n = 0;
	if (b->chunks) {
		for (uint64_t c = 0; c < chunk_count(b); c++)
			n += b->chunks[c].n;
		return n;
	}
	for (uint64_t i = 0; i < (b->nbits + 63) / 64; i++)
		n += (uint64_t)__builtin_popcountll(b->words[i]);
	return n;
}

uint64_t rfs_bitmap_bytes(const struct rfs_bitmap *b)
{
	if (b->words)
		return ((b->nbits + 63) / 64 + 1) * sizeof(uint64_t);
	if (!b->chunks)
		return 0;
	uint64_t n = (chunk_count(b) + 1) * sizeof(*b->chunks);
	for (uint64_t c = 0; c < chunk_count(b); c++)
		n += b->chunks[c].bits ? CHUNK_WORDS * sizeof(uint64_t)
				       : b->chunks[c].cap * sizeof(uint16_t);
	return n;
}

void rfs_bitmap_or(struct rfs_bitmap *dst, const struct rfs_bitmap *src)
{
	uint64_t nbits = dst->nbits < src->nbits ? dst->nbits : src->nbits;
	if (src->words) {
		uint64_t words = dst->words ? nbits / 64 : 0;
		for (uint64_t w = 0; w < words; w++)
			dst->words[w] |= src->words[w];
		for (uint64_t b = words * 64; b < nbits; b++)
			if (rfs_bitmap_test(src, b))
				rfs_bitmap_set(dst, b);
		return;
	}
	for (uint64_t c = 0; c < chunk_count(src); c++) {
		const struct rfs_bitmap_chunk *k = &src->chunks[c];
		uint64_t base = c << RFS_BITMAP_CHUNK_SHIFT;
		if (k->bits) {
			for (uint64_t j = 0; j < CHUNK_BITS && base + j < nbits; j++)
				if (k->bits[j >> 6] >> (j & 63) & 1)
					rfs_bitmap_set(dst, base + j);
		} else {
			for (uint32_t j = 0; j < k->n && base + k->members[j] < nbits; j++)
				rfs_bitmap_set(dst, base + k->members[j]);
		}
	}
}

rfs_status rfs_bitmap_read_block(struct rfs_fs *fs, uint32_t i, uint8_t *buf,
				 rfs_bitmap_unreadable_fn unreadable, void *ctx,
				 struct rfs_error *err)
{
	uint64_t blk = rfs_bitmap_block(&fs->sb, i);
	struct rfs_error e;
	rfs_error_clear(&e);
	if (rfs_dev_read_block(fs->dev, blk, buf, &e)) {
		if (e.status == RFS_ERR_NOMEM)
			return rfs_error_set(err, RFS_ERR_NOMEM, blk, "reading bitmap");
		if (unreadable)
			unreadable(ctx, i, blk, &e);
		memset(buf, 0xFF, fs->bs);
	}
	return RFS_OK;
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
		rfs_status st = rfs_bitmap_read_block(fs, i, buf, unreadable, ctx, err);
		if (st) {
			free(buf);
			return st;
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
	return rfs_bitmap_status(out, "allocation bitmap", err);
}

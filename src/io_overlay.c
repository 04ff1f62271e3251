/*
 * io_overlay.c - the in-memory overlay: block number -> block content, an
 * open-addressing hash table with linear probing that doubles at half load.
 * See io_overlay.h for the invariants.  Nothing here touches a file.
 */
#include "io_overlay.h"

#include <stdlib.h>
#include <string.h>
#include "rfs/u64set.h"

void io_overlay_init(struct io_overlay *ov, uint32_t block_size)
{
	memset(ov, 0, sizeof(*ov));
	ov->block_size = block_size;
}

static size_t slot_of(const struct io_overlay *ov, uint64_t blk)
{
	/* Fibonacci hashing spreads consecutive block numbers over the table. */
	size_t i = (size_t)((blk * 0x9e3779b97f4a7c15ull) >> 17) & (ov->cap - 1);
	while (ov->data[i] && ov->blocks[i] != blk)
		i = (i + 1) & (ov->cap - 1);
	return i;
}

const uint8_t *io_overlay_find(const struct io_overlay *ov, uint64_t blk)
{
	if (ov->count == 0)
		return NULL;
	return ov->data[slot_of(ov, blk)];
}

static rfs_status grow(struct io_overlay *ov, struct rfs_error *err)
{
	size_t ncap = ov->cap ? ov->cap * 2 : 64;
	uint64_t *nb = calloc(ncap, sizeof(*nb));
	uint8_t **nd = calloc(ncap, sizeof(*nd));
	if (!nb || !nd) {
		free(nb);
		free(nd);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "growing the block overlay");
	}
	struct io_overlay old = *ov;
	ov->cap = ncap;
	ov->blocks = nb;
	ov->data = nd;
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.data[i])
			continue;
		size_t j = slot_of(ov, old.blocks[i]);
		ov->blocks[j] = old.blocks[i];
		ov->data[j] = old.data[i];
	}
	free(old.blocks);
	free(old.data);
	return RFS_OK;
}

rfs_status io_overlay_put(struct io_overlay *ov, uint64_t blk, const void *buf,
			  struct rfs_error *err)
{
	if ((ov->count + 1) * 2 > ov->cap) {
		rfs_status st = grow(ov, err);
		if (st)
			return st;
	}
	size_t i = slot_of(ov, blk);
	if (!ov->data[i]) {
		uint8_t *copy = malloc(ov->block_size);
		if (!copy)
			return rfs_error_set(err, RFS_ERR_NOMEM, blk, "overlay block");
		ov->data[i] = copy;
		ov->blocks[i] = blk;
		ov->count++;
	}
	memcpy(ov->data[i], buf, ov->block_size);
	return RFS_OK;
}

rfs_status io_overlay_list(const struct io_overlay *ov, uint64_t **blocks, uint64_t *n,
			   struct rfs_error *err)
{
	*blocks = NULL;
	*n = 0;
	if (ov->count == 0)
		return RFS_OK;
	uint64_t *list = malloc(ov->count * sizeof(*list));
	if (!list)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "overlay block list");
	size_t k = 0;
	for (size_t i = 0; i < ov->cap; i++)
		if (ov->data[i])
			list[k++] = ov->blocks[i];
	qsort(list, k, sizeof(*list), u64_compare);
	*blocks = list;
	*n = k;
	return RFS_OK;
}

void io_overlay_free(struct io_overlay *ov)
{
	for (size_t i = 0; i < ov->cap; i++)
		free(ov->data[i]);
	free(ov->blocks);
	free(ov->data);
	io_overlay_init(ov, ov->block_size);
}

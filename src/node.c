/*
 * node.c - structural validation of tree nodes (leaves and internal nodes) and
 * accessors for nodes that passed it.
 *
 * What a valid leaf guarantees to the rest of rfsck (the decoders past this
 * point rely on it and do no further bounds checks on item heads):
 *  (1) 1 <= nr_items <= (bs - 24) / 25;
 *  (2) item bodies are packed from the end of the block in item order, each
 *      1 <= len <= bs - 48, none overlapping the item head array;
 *  (3) every item has a known type; stat data is 32 or 44 bytes; indirect
 *      items are a multiple of 4; directory items pass rfs_dir_validate;
 *  (4) keys strictly increase within the leaf.
 * Free space and fsck flags are checked too, but are FIXABLE: they do not make
 * the leaf unusable.
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <string.h>

void rfs_block_head_decode(const uint8_t *blk, struct rfs_block_head *out)
{
	out->level = le16_at(blk, BLKH_LEVEL);
	out->nr_items = le16_at(blk, BLKH_NR_ITEMS);
	out->free_space = le16_at(blk, BLKH_FREE_SPACE);
}

void rfs_leaf_item_head(const uint8_t *blk, int i, struct rfs_item_head *out)
{
	const uint8_t *p = blk + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE;
	out->free_or_count = le16_at(p, IH_FREE_OR_COUNT);
	out->len = le16_at(p, IH_LEN);
	out->location = le16_at(p, IH_LOCATION);
	out->version = le16_at(p, IH_VERSION);
	unsigned fmt = out->version & 0x0FFF;
	if (fmt == RFS_KEY_V1 || fmt == RFS_KEY_V2)
		out->key_format = (enum rfs_key_format)fmt;
	else
		out->key_format = rfs_key_guess_format(p + IH_KEY);
	rfs_key_decode(p + IH_KEY, out->key_format, &out->key);
}

void rfs_internal_key(const uint8_t *blk, int i, struct rfs_key *out)
{
	const uint8_t *p = blk + RFS_BLKH_SIZE + (size_t)i * RFS_KEY_SIZE;
	rfs_key_decode(p, rfs_key_guess_format(p), out);
}

void rfs_internal_child(const uint8_t *blk, int nr_keys, int i, struct rfs_disk_child *out)
{
	const uint8_t *p = blk + RFS_BLKH_SIZE + (size_t)nr_keys * RFS_KEY_SIZE +
			   (size_t)i * RFS_DC_SIZE;
	out->block = le32_at(p, DC_BLOCK);
	out->size = le16_at(p, DC_SIZE);
}

/* Reports a fault to fn (if any); returns true when the problem makes the
 * node unusable (REBUILD severity or worse). */
static bool fault(rfs_fault_fn fn, void *ctx, enum rfs_problem_code code, int item, int entry,
		  uint64_t expected, uint64_t found)
{
	struct rfs_fault f = { .code = code, .item = item, .entry = entry,
			       .expected = expected, .found = found };
	if (fn)
		fn(ctx, &f);
	const struct rfs_problem_def *d = rfs_problem_def(code);
	return d && d->severity >= RFS_SEV_REBUILD;
}

/* In a validator loop: note a fault; without a callback, stop at the first
 * that makes the node unusable (the scanner's fast path). */
#define NOTE(...)                                        \
	do {                                             \
		if (fault(fn, ctx, __VA_ARGS__)) {       \
			bad = true;                      \
			if (!fn)                         \
				return RFS_ERR_CORRUPT;  \
		}                                        \
	} while (0)

struct dir_fault_ctx {
	rfs_fault_fn fn;
	void *ctx;
	int item;
	bool bad;
};

static void dir_fault(void *c, const struct rfs_fault *f)
{
	struct dir_fault_ctx *d = c;
	struct rfs_fault g = *f;
	g.item = d->item;
	if (d->fn)
		d->fn(d->ctx, &g);
	const struct rfs_problem_def *def = rfs_problem_def(f->code);
	if (def && def->severity >= RFS_SEV_REBUILD)
		d->bad = true;
}

rfs_status rfs_leaf_validate(const uint8_t *blk, uint32_t bs, rfs_fault_fn fn, void *ctx)
{
	struct rfs_block_head bh;
	bool bad = false;

	rfs_block_head_decode(blk, &bh);
	if (bh.level != RFS_LEVEL_LEAF) {
		fault(fn, ctx, PR_NODE_BAD_LEVEL, -1, -1, RFS_LEVEL_LEAF, bh.level);
		return RFS_ERR_CORRUPT;
	}
	uint32_t max = rfs_leaf_max_items(bs);
	if (bh.nr_items == 0 || bh.nr_items > max) {
		fault(fn, ctx, PR_LEAF_BAD_NR_ITEMS, -1, -1, max, bh.nr_items);
		return RFS_ERR_CORRUPT;
	}
	uint32_t heads_end = RFS_BLKH_SIZE + (uint32_t)bh.nr_items * RFS_IH_SIZE;
	uint32_t prev = bs;              /* where the previous body starts */
	struct rfs_key prev_key;
	for (int i = 0; i < bh.nr_items; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(blk, i, &ih);
		if (ih.len < 1 || ih.len > bs - 2 * RFS_IH_SIZE) {
			fault(fn, ctx, PR_LEAF_ITEM_BAD_LENGTH, i, -1, bs - 48, ih.len);
			return RFS_ERR_CORRUPT;
		}
		if ((uint32_t)ih.location + ih.len != prev) {
			fault(fn, ctx, PR_LEAF_ITEM_BAD_LOCATION, i, -1, prev - ih.len, ih.location);
			return RFS_ERR_CORRUPT;
		}
		if (ih.location < heads_end) {
			fault(fn, ctx, PR_LEAF_ITEM_OVERLAP, i, -1, heads_end, ih.location);
			return RFS_ERR_CORRUPT;
		}
		prev = ih.location;

		/* From here on the body blk[location, location+len) is in bounds. */
		if (ih.version & RFS_IH_FLAGS_MASK)
			NOTE(PR_ITEM_FLAGS_SET, i, -1, 0, ih.version >> 12);
		unsigned fmt = ih.version & 0x0FFF;
		const uint8_t *body = blk + ih.location;
		switch (ih.key.type) {
		case RFS_TYPE_STAT:
			if (ih.len != RFS_SD_V1_SIZE && ih.len != RFS_SD_V2_SIZE)
				NOTE(PR_STAT_BAD_LENGTH, i, -1, RFS_SD_V2_SIZE, ih.len);
			break;
		case RFS_TYPE_INDIRECT:
			if (ih.len % 4)
				NOTE(PR_INDIRECT_BAD_LENGTH, i, -1, 4, ih.len);
			break;
		case RFS_TYPE_DIRECT:
			break;
		case RFS_TYPE_DIRENTRY: {
			struct dir_fault_ctx dc = { fn, ctx, i, false };
			rfs_dir_validate(body, ih.len, ih.free_or_count, dir_fault, &dc);
			if (dc.bad) {
				bad = true;
				if (!fn)
					return RFS_ERR_CORRUPT;
			}
			break;
		}
		default:
			NOTE(PR_ITEM_BAD_TYPE, i, -1, 0, ih.key.type);
			break;
		}
		if (fmt > RFS_KEY_V2)
			NOTE(PR_ITEM_BAD_KEY_FORMAT, i, -1,
			     rfs_key_guess_format(blk + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE), fmt);
		if (i > 0 && rfs_key_cmp(&prev_key, &ih.key) >= 0)
			NOTE(PR_LEAF_KEYS_UNSORTED, i, -1, 0, 0);
		prev_key = ih.key;
	}
	uint32_t want_free = prev - heads_end;
	if (bh.free_space != want_free)
		fault(fn, ctx, PR_LEAF_BAD_FREE_SPACE, -1, -1, want_free, bh.free_space);
	return bad ? RFS_ERR_CORRUPT : RFS_OK;
}

rfs_status rfs_internal_validate(const uint8_t *blk, uint32_t bs, rfs_fault_fn fn, void *ctx)
{
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	if (bh.level <= RFS_LEVEL_LEAF || bh.level > RFS_MAX_HEIGHT) {
		fault(fn, ctx, PR_NODE_BAD_LEVEL, -1, -1, 2, bh.level);
		return RFS_ERR_CORRUPT;
	}
	uint32_t max = rfs_internal_max_keys(bs);
	if (bh.nr_items > max) {
		fault(fn, ctx, PR_INTERNAL_BAD_NR_KEYS, -1, -1, max, bh.nr_items);
		return RFS_ERR_CORRUPT;
	}
	bool bad = false;
	struct rfs_key prev, k;
	for (int i = 0; i < bh.nr_items; i++) {
		rfs_internal_key(blk, i, &k);
		if (i > 0 && rfs_key_cmp(&prev, &k) >= 0)
			NOTE(PR_INTERNAL_KEYS_UNSORTED, i, -1, 0, 0);
		prev = k;
	}
	for (int i = 0; i <= bh.nr_items; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(blk, bh.nr_items, i, &dc);
		if (dc.block == 0)
			NOTE(PR_INTERNAL_ZERO_CHILD, i, -1, 0, 0);
	}
	uint32_t want_free = bs - RFS_BLKH_SIZE - (uint32_t)bh.nr_items * RFS_KEY_SIZE -
			     ((uint32_t)bh.nr_items + 1) * RFS_DC_SIZE;
	if (bh.free_space != want_free)
		fault(fn, ctx, PR_INTERNAL_BAD_FREE_SPACE, -1, -1, want_free, bh.free_space);
	return bad ? RFS_ERR_CORRUPT : RFS_OK;
}

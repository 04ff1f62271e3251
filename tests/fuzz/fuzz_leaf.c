/*
 * fuzz_leaf.c - libFuzzer harness for rfs_leaf_validate() and the item
 * decoders behind it (src/node.c, src/item.c, src/key.c).
 *
 * Input: byte 0 picks the block size (512 << (b % 5), 512..8192); the rest is
 * the block, zero-padded or cut to exactly that size, in a heap buffer of
 * exactly bs bytes so that ASan sees any read past the block.
 *
 * Contracts asserted (abort() on violation):
 *  (1) the verdict is the same with a fault callback and without one;
 *  (2) every fault has a known code, and item/entry indexes in range;
 *      with the callback, RFS_OK <=> no fault of REBUILD severity or worse;
 *  (3) "validates => decodes in bounds": when the verdict is RFS_OK, every
 *      item head lies in the head array, every body in [heads end, bs) in
 *      packing order, keys strictly increase, stat data decodes (32/44
 *      bytes), indirect bodies are whole pointers, directory bodies pass
 *      rfs_dir_validate() on their own and every entry decodes inside its
 *      body (bodies are copied to exact-size buffers to catch stray reads
 *      into the neighbouring item), with names packed without gaps.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/format.h"
#include "rfs/hash.h"
#include "rfs/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

struct fault_log {
	unsigned count;
	bool fatal;                  /* a REBUILD-or-worse fault was reported */
	int nr_items;                /* from the block head, for index checks */
};

static void log_fault(void *ctx, const struct rfs_fault *f)
{
	struct fault_log *log = ctx;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	CHECK(d != NULL);
	CHECK(f->item >= -1 && f->item < (log->nr_items > 0 ? log->nr_items : 1) + 1);
	CHECK(f->entry >= -1 && f->entry < 65536);
	if (d->severity >= RFS_SEV_REBUILD)
		log->fatal = true;
	log->count++;
}

/* Decodes directory body (exact-size copy) and checks packing. */
static void check_dir_body(const uint8_t *body, uint16_t len, uint16_t count)
{
	CHECK(rfs_dir_validate(body, len, count, NULL, NULL) == RFS_OK);
	size_t heads = (size_t)count * RFS_DEH_SIZE;
	size_t packed = 0;
	uint32_t prev_off = 0;
	for (int e = 0; e < count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(body, len, e, &de);
		CHECK(de.location >= heads && (size_t)de.location + de.stored_len <= len);
		CHECK(de.name == body + de.location);
		CHECK(de.name_len >= 1 && de.name_len <= de.stored_len);
		CHECK(e == 0 || de.offset > prev_off);
		prev_off = de.offset;
		packed += de.stored_len;
		/* touch every name byte through the hash code paths */
		(void)rfs_hash_entry_offset(RFS_HASH_R5, de.name, de.name_len);
	}
	CHECK(packed == len - heads);
}

static void check_valid_leaf(const uint8_t *blk, uint32_t bs)
{
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	CHECK(bh.level == RFS_LEVEL_LEAF);
	CHECK(bh.nr_items >= 1 && bh.nr_items <= rfs_leaf_max_items(bs));
	uint32_t heads_end = RFS_BLKH_SIZE + (uint32_t)bh.nr_items * RFS_IH_SIZE;
	CHECK(heads_end <= bs);
	uint32_t prev = bs;
	struct rfs_key prev_key = { 0 };
	for (int i = 0; i < bh.nr_items; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(blk, i, &ih);
		CHECK(ih.len >= 1 && ih.location >= heads_end);
		CHECK((uint32_t)ih.location + ih.len == prev);
		prev = ih.location;
		CHECK(ih.key.type <= RFS_TYPE_DIRENTRY);
		CHECK(i == 0 || rfs_key_cmp(&prev_key, &ih.key) < 0);
		CHECK(i == 0 || rfs_key_cmp(&ih.key, &prev_key) > 0);
		prev_key = ih.key;

		/* Key encode/decode round trip in the item's own format. */
		uint8_t kb[RFS_KEY_SIZE];
		struct rfs_key k2;
		rfs_key_encode(&ih.key, ih.key_format, kb);
		rfs_key_decode(kb, ih.key_format, &k2);
		CHECK(rfs_key_cmp(&ih.key, &k2) == 0);

		uint8_t *body = malloc(ih.len);
		CHECK(body != NULL);
		memcpy(body, blk + ih.location, ih.len);
		switch (ih.key.type) {
		case RFS_TYPE_STAT: {
			struct rfs_stat sd;
			CHECK(rfs_stat_decode(body, ih.len, &sd) == RFS_OK);
			CHECK(sd.version == (ih.len == RFS_SD_V1_SIZE ? 1 : 2));
			break;
		}
		case RFS_TYPE_INDIRECT: {
			CHECK(ih.len % 4 == 0);
			uint32_t x = 0;
			for (uint32_t j = 0; j < ih.len; j += 4)
				x ^= (uint32_t)body[j] | (uint32_t)body[j + 3] << 24;
			(void)x;
			break;
		}
		case RFS_TYPE_DIRECT:
			break;
		case RFS_TYPE_DIRENTRY:
			check_dir_body(body, ih.len, ih.free_or_count);
			break;
		default:
			abort();
		}
		free(body);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t bs = 512u << (data[0] % 5);
	uint8_t *blk = calloc(1, bs);
	CHECK(blk != NULL);
	size_t n = size - 1 < bs ? size - 1 : bs;
	memcpy(blk, data + 1, n);

	struct fault_log log = { .nr_items = blk[2] | blk[3] << 8 };
	rfs_status with_fn = rfs_leaf_validate(blk, bs, log_fault, &log);
	rfs_status without = rfs_leaf_validate(blk, bs, NULL, NULL);
	CHECK(with_fn == RFS_OK || with_fn == RFS_ERR_CORRUPT);
	CHECK(with_fn == without);
	CHECK((with_fn == RFS_OK) == !log.fatal);
	if (with_fn == RFS_OK)
		check_valid_leaf(blk, bs);
	free(blk);
	return 0;
}

/*
 * fuzz_internal.c - libFuzzer harness for rfs_internal_validate() and the
 * internal-node accessors (src/node.c, src/key.c).
 *
 * Input: byte 0 picks the block size (512 << (b % 5)); the rest is the block,
 * zero-padded or cut to exactly bs bytes in an exact-size heap buffer.
 *
 * Contracts asserted (abort() on violation):
 *  (1) the verdict is the same with a fault callback and without one, and is
 *      RFS_OK exactly when no REBUILD-or-worse fault was reported;
 *  (2) every fault has a known code and an index in -1..nr_keys;
 *  (3) when valid: level 2..5, nr_keys <= rfs_internal_max_keys(bs), the key
 *      and child arrays end inside the block, keys strictly increase (checked
 *      again with rfs_key_cmp in both directions), every child block is
 *      non-zero, and rfs_key_cmp is antisymmetric on neighbouring keys.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/format.h"
#include "rfs/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

struct fault_log {
	bool fatal;
	int nr;
};

static void log_fault(void *ctx, const struct rfs_fault *f)
{
	struct fault_log *log = ctx;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	CHECK(d != NULL);
	CHECK(f->item >= -1 && f->item <= log->nr);
	if (d->severity >= RFS_SEV_REBUILD)
		log->fatal = true;
}

static void check_valid_internal(const uint8_t *blk, uint32_t bs)
{
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	CHECK(bh.level > RFS_LEVEL_LEAF && bh.level <= RFS_MAX_HEIGHT);
	CHECK(bh.nr_items <= rfs_internal_max_keys(bs));
	size_t end = RFS_BLKH_SIZE + (size_t)bh.nr_items * RFS_KEY_SIZE +
		     ((size_t)bh.nr_items + 1) * RFS_DC_SIZE;
	CHECK(end <= bs);
	struct rfs_key prev = { 0 }, k;
	for (int i = 0; i < bh.nr_items; i++) {
		rfs_internal_key(blk, i, &k);
		if (i > 0) {
			CHECK(rfs_key_cmp(&prev, &k) < 0);
			CHECK(rfs_key_cmp(&k, &prev) > 0);
			CHECK(rfs_key_cmp_short(&prev, &k) <= 0);
		}
		CHECK(rfs_key_cmp(&k, &k) == 0);
		char txt[96];
		rfs_key_format_str(&k, txt, sizeof(txt));
		CHECK(memchr(txt, 0, sizeof(txt)) != NULL);
		prev = k;
	}
	for (int i = 0; i <= bh.nr_items; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(blk, bh.nr_items, i, &dc);
		CHECK(dc.block != 0);
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

	struct fault_log log = { .nr = blk[2] | blk[3] << 8 };
	rfs_status with_fn = rfs_internal_validate(blk, bs, log_fault, &log);
	rfs_status without = rfs_internal_validate(blk, bs, NULL, NULL);
	CHECK(with_fn == RFS_OK || with_fn == RFS_ERR_CORRUPT);
	CHECK(with_fn == without);
	CHECK((with_fn == RFS_OK) == !log.fatal);
	if (with_fn == RFS_OK)
		check_valid_internal(blk, bs);
	free(blk);
	return 0;
}

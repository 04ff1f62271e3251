/*
 * fuzz_super.c - libFuzzer harness for rfs_super_decode(), rfs_super_check()
 * and the geometry helpers derived from a superblock (src/super.c).
 *
 * Input: byte 0 bit 0 picks the superblock location (0: 64 KiB, 1: 8 KiB);
 * bytes 1-4 are the device size in blocks (little-endian u32) given to the
 * check; the rest is the superblock buffer, passed at its exact length in an
 * exact-size heap buffer (so short buffers test the length check).
 *
 * Contracts asserted (abort() on violation):
 *  (1) decode: RFS_ERR_INVALID for fewer than 204 bytes, RFS_ERR_NOT_REISERFS
 *      without a magic, else RFS_OK; a failure fills err with the same status,
 *      RFS_OK leaves err untouched (include/rfs/status.h invariants 1, 2);
 *  (2) decoded: magic kind, format (magic, or version for ReIsEr3Fs), sb_size
 *      76/204 by format, raw fields equal the bytes at their offsets;
 *  (3) check: same verdict with and without a callback; RFS_ERR_CORRUPT
 *      exactly when a FATAL fault was reported; every fault is a superblock
 *      problem; DEVICE_TOO_SMALL exactly when dev_blocks < block_count;
 *  (4) when the check passes: block size is a power of two in 512..65536,
 *      block count > 0, block 0, the superblock block and every bitmap block
 *      (first 64) count as metadata, bitmap blocks strictly increase, and
 *      the journal header block is metadata for an internal journal.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/format.h"
#include "rfs/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

struct fault_log {
	bool fatal;
	bool too_small;
};

static void log_fault(void *ctx, const struct rfs_fault *f)
{
	struct fault_log *log = ctx;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	CHECK(d != NULL && d->group == RFS_PG_SUPER);
	if (d->severity == RFS_SEV_FATAL)
		log->fatal = true;
	if (f->code == PR_SB_DEVICE_TOO_SMALL)
		log->too_small = true;
}

static void check_geometry(const struct rfs_super *sb)
{
	CHECK(sb->blocksize >= 512 && (sb->blocksize & (sb->blocksize - 1)) == 0);
	CHECK(sb->block_count > 0);
	CHECK(rfs_super_block_is_metadata(sb, 0));
	CHECK(rfs_super_block_is_metadata(sb, sb->sb_block));
	uint32_t n = sb->bmap_count < 64 ? sb->bmap_count : 64;
	uint64_t prev = sb->sb_block;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t b = rfs_bitmap_block(sb, i);
		CHECK(b > prev);
		CHECK(rfs_super_block_is_metadata(sb, b));
		prev = b;
	}
	if (sb->j_dev == 0) {
		uint64_t hdr = rfs_super_journal_header_block(sb);
		CHECK(rfs_super_journal_end(sb) == hdr + 1);
		CHECK(rfs_super_block_is_metadata(sb, hdr));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	uint64_t where = (data[0] & 1) ? RFS_SB_OLD_OFFSET : RFS_SB_OFFSET;
	uint64_t dev_blocks = le32_at(data, 1);
	size_t len = size - 5;
	uint8_t *buf = malloc(len ? len : 1);
	CHECK(buf != NULL);
	memcpy(buf, data + 5, len);

	struct rfs_super sb;
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_super_decode(buf, len, where, &sb, &err);
	if (len < SB_V2_SIZE) {
		CHECK(st == RFS_ERR_INVALID && err.status == st);
		goto out;
	}
	if (st != RFS_OK) {
		CHECK(st == RFS_ERR_NOT_REISERFS && err.status == st);
		CHECK(sb.magic_kind == RFS_MAGIC_NONE);
		goto out;
	}
	CHECK(err.status == RFS_OK);
	CHECK(sb.magic_kind == RFS_MAGIC_35 || sb.magic_kind == RFS_MAGIC_36 ||
	      sb.magic_kind == RFS_MAGIC_JR);
	if (sb.magic_kind == RFS_MAGIC_35)
		CHECK(sb.format == RFS_FORMAT_35);
	else if (sb.magic_kind == RFS_MAGIC_36)
		CHECK(sb.format == RFS_FORMAT_36);
	else
		CHECK(sb.format == (sb.version == 0 ? RFS_FORMAT_35 : RFS_FORMAT_36));
	CHECK(sb.sb_size == (sb.format == RFS_FORMAT_36 ? SB_V2_SIZE : SB_V1_SIZE));
	CHECK(sb.block_count == le32_at(buf, SB_BLOCK_COUNT));
	CHECK(sb.root_block == le32_at(buf, SB_ROOT_BLOCK));
	CHECK(sb.blocksize == le16_at(buf, SB_BLOCKSIZE));
	CHECK(sb.j_trans_max == le32_at(buf, SB_JP_TRANS_MAX));
	CHECK(sb.sb_byte_offset == where && sb.old_layout == (where != RFS_SB_OFFSET));

	struct fault_log log = { false, false };
	rfs_status c1 = rfs_super_check(&sb, dev_blocks, log_fault, &log);
	rfs_status c2 = rfs_super_check(&sb, dev_blocks, NULL, NULL);
	CHECK(c1 == c2);
	CHECK(c1 == RFS_OK || c1 == RFS_ERR_CORRUPT);
	CHECK((c1 == RFS_ERR_CORRUPT) == log.fatal);
	if (c1 == RFS_OK) {
		CHECK(log.too_small == (dev_blocks < sb.block_count));
		check_geometry(&sb);
	}
out:
	free(buf);
	return 0;
}

/*
 * fuzz_journal.c - libFuzzer harness for the journal block decoders:
 * rfs_journal_header_decode(), rfs_journal_desc_decode() and
 * rfs_journal_real_block() (src/journal_format.c).
 *
 * Input: byte 0 picks the block size (512 << (b % 5)); then the descriptor
 * block and the commit block, bs bytes each (zero-padded), in two exact-size
 * heap buffers so ASan sees a read past either.
 *
 * Contracts asserted (abort() on violation):
 *  (1) the header decoder reads the fields at the documented offsets;
 *  (2) the descriptor decoder answers true exactly when "ReIsErLB" is at
 *      bs - 12, and then returns trans id, length and mount id from 0, 4, 8;
 *  (3) rfs_journal_real_block() answers true exactly for i < 2 * half
 *      (half = (bs - 24) / 4), taking entry i from the descriptor at 12 + 4i
 *      for i < half and from the commit at 8 + 4(i - half) after, and never
 *      reads outside either block.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t bs = 512u << (data[0] % 5);
	uint8_t *desc = calloc(1, bs), *commit = calloc(1, bs);
	CHECK(desc != NULL && commit != NULL);
	size_t rest = size - 1;
	size_t n1 = rest < bs ? rest : bs;
	memcpy(desc, data + 1, n1);
	rest -= n1;
	memcpy(commit, data + 1 + n1, rest < bs ? rest : bs);

	struct rfs_journal_header jh;
	rfs_journal_header_decode(desc, &jh);
	CHECK(jh.last_flush_trans_id == le32_at(desc, JH_LAST_FLUSH));
	CHECK(jh.first_unflushed_offset == le32_at(desc, JH_FIRST_UNFLUSHED));
	CHECK(jh.mount_id == le32_at(desc, JH_MOUNT_ID));
	CHECK(jh.params[7] == le32_at(desc, JH_PARAMS + 28));

	uint32_t id = 0, len = 0, mid = 0;
	bool is_desc = rfs_journal_desc_decode(desc, bs, &id, &len, &mid);
	CHECK(is_desc == (memcmp(desc + bs - 12, RFS_JOURNAL_DESC_MAGIC, 8) == 0));
	if (is_desc)
		CHECK(id == le32_at(desc, JD_TRANS_ID) && len == le32_at(desc, JD_LEN) &&
		      mid == le32_at(desc, JD_MOUNT_ID));

	uint32_t half = rfs_journal_trans_half(bs);
	for (uint32_t i = 0; i < 2 * half + 4; i++) {
		uint32_t home = 0;
		bool ok = rfs_journal_real_block(desc, commit, bs, i, &home);
		CHECK(ok == (i < 2 * half));
		if (ok)
			CHECK(home == (i < half ? le32_at(desc, JD_REAL + 4 * (size_t)i)
						: le32_at(commit, JC_REAL + 4 * (size_t)(i - half))));
	}
	/* Far out of range, including values that would wrap 2 * half. */
	uint32_t home;
	CHECK(!rfs_journal_real_block(desc, commit, bs, UINT32_MAX, &home));
	CHECK(!rfs_journal_real_block(desc, commit, bs, UINT32_MAX - half + 1, &home));
	free(desc);
	free(commit);
	return 0;
}

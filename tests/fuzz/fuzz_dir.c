/*
 * fuzz_dir.c - libFuzzer harness for directory item bodies: rfs_dir_validate()
 * then rfs_dir_entry() for every entry (src/item.c).
 *
 * Input: bytes 0-1 are the item head's entry count (little-endian), the rest
 * is the item body (at most 65535 bytes, as an item length is a u16), copied
 * to an exact-size heap buffer so ASan sees any read outside the body.
 *
 * Contracts asserted (abort() on violation):
 *  (1) the verdict is the same with a fault callback and without one, and is
 *      RFS_OK exactly when no REBUILD-or-worse fault was reported; faults
 *      carry known codes, item -1, and an entry index in -1..count-1;
 *  (2) when valid, for every entry: its name lies in [16 * count, len), is
 *      at least one byte after stripping NULs, offsets strictly increase,
 *      and the name slots tile [16 * count, len) exactly (no gap, no overlap).
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
	int count;
};

static void log_fault(void *ctx, const struct rfs_fault *f)
{
	struct fault_log *log = ctx;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	CHECK(d != NULL && d->group == RFS_PG_DIR);
	CHECK(f->item == -1);
	CHECK(f->entry >= -1 && f->entry < log->count);
	if (d->severity >= RFS_SEV_REBUILD)
		log->fatal = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint16_t count = (uint16_t)(data[0] | data[1] << 8);
	size_t len = size - 2 > 65535 ? 65535 : size - 2;
	uint8_t *body = malloc(len ? len : 1);
	CHECK(body != NULL);
	memcpy(body, data + 2, len);

	struct fault_log log = { .count = count };
	rfs_status with_fn = rfs_dir_validate(body, len, count, log_fault, &log);
	rfs_status without = rfs_dir_validate(body, len, count, NULL, NULL);
	CHECK(with_fn == RFS_OK || with_fn == RFS_ERR_CORRUPT);
	CHECK(with_fn == without);
	CHECK((with_fn == RFS_OK) == !log.fatal);
	if (with_fn == RFS_OK) {
		size_t heads = (size_t)count * RFS_DEH_SIZE;
		size_t packed = 0;
		uint32_t prev = 0;
		for (int e = 0; e < count; e++) {
			struct rfs_dirent de;
			rfs_dir_entry(body, len, e, &de);
			CHECK(de.location >= heads && (size_t)de.location + de.stored_len <= len);
			CHECK(de.name == body + de.location);
			CHECK(de.name_len >= 1 && de.name_len <= de.stored_len);
			CHECK(de.name[de.name_len - 1] != 0);
			CHECK(e == 0 || de.offset > prev);
			prev = de.offset;
			packed += de.stored_len;
		}
		CHECK(packed == len - heads);
	}
	free(body);
	return 0;
}

/*
 * fuzz_stat.c - libFuzzer harness for rfs_stat_decode() and the mode helpers
 * (src/item.c, src/object.c).
 *
 * Input: the stat data body, any length, in an exact-size heap buffer.
 *
 * Contracts asserted (abort() on violation):
 *  (1) RFS_OK exactly for lengths 32 (version 1) and 44 (version 2), else
 *      RFS_ERR_CORRUPT, and no read outside the body either way;
 *  (2) decoded fields equal the little-endian fields at the offsets of
 *      include/rfs/format.h (mode, nlink, size); v2 has no first direct byte
 *      (0xFFFFFFFF); a v1 size is below 2^32;
 *  (3) rfs_mode_type() gives a type whose name is a non-empty string, and
 *      only the S_IFMT bits decide it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/format.h"
#include "rfs/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	CHECK(b != NULL);
	memcpy(b, data, size);
	struct rfs_stat sd;
	rfs_status st = rfs_stat_decode(b, size, &sd);
	if (size == RFS_SD_V1_SIZE) {
		CHECK(st == RFS_OK && sd.version == 1);
		CHECK(sd.mode == le16_at(b, 0) && sd.nlink == le16_at(b, 2));
		CHECK(sd.size == le32_at(b, 8));
		CHECK(sd.first_direct_byte == le32_at(b, 28));
	} else if (size == RFS_SD_V2_SIZE) {
		CHECK(st == RFS_OK && sd.version == 2);
		CHECK(sd.mode == le16_at(b, 0) && sd.nlink == le32_at(b, 4));
		CHECK(sd.size == le64_at(b, 8));
		CHECK(sd.first_direct_byte == UINT32_MAX);
	} else {
		CHECK(st == RFS_ERR_CORRUPT);
	}
	if (st == RFS_OK) {
		enum rfs_file_type t = rfs_mode_type(sd.mode);
		const char *name = rfs_file_type_name(t);
		CHECK(name != NULL && name[0] != '\0');
		CHECK(rfs_mode_type((uint16_t)(sd.mode & 0170000)) == t);
	}
	free(b);
	return 0;
}

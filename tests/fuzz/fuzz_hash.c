/*
 * fuzz_hash.c - libFuzzer harness for the three name hashes and the entry
 * offset mapping (src/hash.c).
 *
 * Input: byte 0 is a hash code (any value, so unknown codes are exercised);
 * the rest is a name of arbitrary bytes, in an exact-size heap buffer.
 *
 * Contracts asserted (abort() on violation):
 *  (1) the known-answer self test passes (once per process);
 *  (2) rfs_hash_by_code() agrees with the three functions for codes 1..3
 *      and is 0 for any other code;
 *  (3) rfs_hash_entry_offset() is never 0: 1 for "" and ".", 2 for "..",
 *      otherwise the hash masked to bits 7..30, or 128 when that is zero;
 *      rupasov's low 7 bits are always zero;
 *  (4) results do not depend on the buffer's address (a copy at another
 *      alignment hashes the same), and UBSan sees no signed overflow or bad
 *      shift (the rupasov overflow syzbot found in the kernel, class 16 of
 *      corpus-public/README.md);
 *  (5) hash names: rfs_hash_name() never returns NULL, and a name that
 *      rfs_hash_code_from_name() accepts maps back to itself (or is "yura").
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/hash.h"
#include "rfs/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

static bool selftest_done;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!selftest_done) {
		struct rfs_error err;
		rfs_error_clear(&err);
		CHECK(rfs_hash_selftest(&err) == RFS_OK);
		selftest_done = true;
	}
	if (size < 1)
		return 0;
	unsigned code = data[0];
	size_t len = size - 1;
	uint8_t *name = malloc(len ? len : 1);
	uint8_t *shifted = malloc(len + 3);
	CHECK(name != NULL && shifted != NULL);
	memcpy(name, data + 1, len);
	memcpy(shifted + 3, data + 1, len);

	uint32_t tea = rfs_hash_tea(name, len);
	uint32_t rup = rfs_hash_rupasov(name, len);
	uint32_t r5 = rfs_hash_r5(name, len);
	CHECK(tea == rfs_hash_tea(shifted + 3, len));
	CHECK(rup == rfs_hash_rupasov(shifted + 3, len));
	CHECK(r5 == rfs_hash_r5(shifted + 3, len));
	CHECK((rup & RFS_HASH_GEN_MASK) == 0);
	CHECK(rfs_hash_by_code(1, name, len) == tea);
	CHECK(rfs_hash_by_code(2, name, len) == rup);
	CHECK(rfs_hash_by_code(3, name, len) == r5);
	if (code < 1 || code > 3)
		CHECK(rfs_hash_by_code(code, name, len) == 0);

	for (unsigned c = 0; c <= 4; c++) {
		unsigned cc = c == 4 ? code : c;
		uint32_t off = rfs_hash_entry_offset(cc, name, len);
		CHECK(off != 0);
		if (len == 0 || (len == 1 && name[0] == '.')) {
			CHECK(off == 1);
		} else if (len == 2 && name[0] == '.' && name[1] == '.') {
			CHECK(off == 2);
		} else {
			uint32_t h = rfs_hash_by_code(cc, name, len) & RFS_HASH_VALUE_MASK;
			CHECK(off == (h ? h : 128));
			CHECK((off & ~(uint32_t)RFS_HASH_VALUE_MASK) == 0);
		}
	}

	CHECK(rfs_hash_name(code) != NULL);
	char *s = malloc(len + 1);
	CHECK(s != NULL);
	memcpy(s, name, len);
	s[len] = '\0';
	unsigned back = rfs_hash_code_from_name(s);
	if (back)
		CHECK(strcmp(rfs_hash_name(back), s) == 0 || strcmp(s, "yura") == 0);
	free(s);
	free(name);
	free(shifted);
	return 0;
}

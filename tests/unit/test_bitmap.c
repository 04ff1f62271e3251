/* test_bitmap.c - block sets: a sparse set answers every test() exactly as a
 * dense one given the same random sets and clears (across the array -> bit
 * array switch of a chunk, chunk edges and the last partial chunk); counts,
 * or() into dense and sparse sets, out-of-range bits, the memory a sparse
 * set holds (2-3 bytes per member while sparse, capped by the bit array),
 * and rfs_bitmap_add()/status() on success. */
#include "testutil.h"

#include "rfs/bitmap.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next(void)
{
	return test_xorshift(&rng);
}

/* Members clustered so some chunks pass ARRAY_MAX and others stay small. */
static uint64_t pick(uint64_t nbits)
{
	uint64_t r = next() % 16;
	if (r < 8)
		return (UINT64_C(3) << 16) + next() % 9000;   /* a dense-ish chunk */
	if (r < 15)
		return (UINT64_C(1) << 16) - 3 + next() % 6;  /* across a chunk edge */
	return next() % (nbits + 10);                     /* anywhere, some out of range */
}

static void test_sparse_matches_dense(void **state)
{
	(void)state;
	const uint64_t nbits = (UINT64_C(7) << 16) + 1234;   /* last chunk partial */
	struct rfs_bitmap d, s;
	assert_int_equal(rfs_bitmap_init(&d, nbits, NULL), RFS_OK);
	assert_int_equal(rfs_bitmap_init_sparse(&s, nbits, NULL), RFS_OK);
	for (int round = 0; round < 200000; round++) {
		uint64_t b = pick(nbits);
		if (next() % 5 == 0) {
			rfs_bitmap_clear(&d, b);
			rfs_bitmap_clear(&s, b);
		} else {
			rfs_bitmap_set(&d, b);
			rfs_bitmap_set(&s, b);
		}
	}
	assert_false(s.failed);
	assert_int_equal(rfs_bitmap_status(&s, "test", NULL), RFS_OK);
	uint64_t n = 0;
	for (uint64_t b = 0; b < nbits + 100; b++) {
		bool want = rfs_bitmap_test(&d, b);
		if (rfs_bitmap_test(&s, b) != want)
			fail_msg("bit %llu: sparse %d, dense %d", (unsigned long long)b, !want, want);
		n += want;
	}
	assert_true(n > 10000);
	assert_int_equal(rfs_bitmap_count(&d), n);
	assert_int_equal(rfs_bitmap_count(&s), n);
	/* the clustered chunk went past the array limit, the others did not */
	assert_non_null(s.chunks[3].bits);
	assert_null(s.chunks[3].members);
	assert_null(s.chunks[5].bits);
	assert_true(s.chunks[5].n > 0);
	rfs_bitmap_free(&d);
	rfs_bitmap_free(&s);
	assert_null(s.chunks);
	assert_int_equal(s.nbits, 0);
}

static void test_out_of_range(void **state)
{
	(void)state;
	struct rfs_bitmap s;
	assert_int_equal(rfs_bitmap_init_sparse(&s, 100, NULL), RFS_OK);
	rfs_bitmap_set(&s, 100);
	rfs_bitmap_set(&s, UINT64_MAX);
	assert_int_equal(rfs_bitmap_add(&s, 1000, NULL), RFS_OK);
	assert_false(rfs_bitmap_test(&s, 100));
	assert_false(rfs_bitmap_test(&s, UINT64_MAX));
	rfs_bitmap_clear(&s, UINT64_MAX);
	assert_int_equal(rfs_bitmap_count(&s), 0);
	assert_int_equal(rfs_bitmap_add(&s, 99, NULL), RFS_OK);
	assert_true(rfs_bitmap_test(&s, 99));
	assert_int_equal(rfs_bitmap_count(&s), 1);
	rfs_bitmap_free(&s);
}

static void test_memory(void **state)
{
	(void)state;
	/* 1 TiB of 4 KiB blocks, one member in a hundred: the dense set would be
	 * 32 MiB; the sparse one costs about 2 bytes a member. */
	const uint64_t nbits = UINT64_C(1) << 28;
	struct rfs_bitmap s;
	assert_int_equal(rfs_bitmap_init_sparse(&s, nbits, NULL), RFS_OK);
	uint64_t members = 0;
	for (uint64_t b = 7; b < nbits; b += 100) {
		rfs_bitmap_set(&s, b);
		members++;
	}
	assert_false(s.failed);
	assert_int_equal(rfs_bitmap_count(&s), members);
	uint64_t bytes = rfs_bitmap_bytes(&s);
	assert_true(bytes < members * 3);
	assert_true(bytes >= members * 2);
	/* a set holding every block costs one bit per block plus the chunks */
	struct rfs_bitmap full;
	const uint64_t fbits = UINT64_C(1) << 22;
	assert_int_equal(rfs_bitmap_init_sparse(&full, fbits, NULL), RFS_OK);
	for (uint64_t b = 0; b < fbits; b++)
		rfs_bitmap_set(&full, b);
	assert_int_equal(rfs_bitmap_count(&full), fbits);
	assert_true(rfs_bitmap_bytes(&full) <= fbits / 8 + (fbits >> 16) * 32 + 64);
	rfs_bitmap_free(&full);
	rfs_bitmap_free(&s);
}

static void test_or(void **state)
{
	(void)state;
	const uint64_t nbits = (UINT64_C(2) << 16) + 77;
	struct rfs_bitmap s, d, d2, s2;
	assert_int_equal(rfs_bitmap_init_sparse(&s, nbits, NULL), RFS_OK);
	assert_int_equal(rfs_bitmap_init(&d, nbits, NULL), RFS_OK);
	assert_int_equal(rfs_bitmap_init(&d2, nbits - 10, NULL), RFS_OK);
	assert_int_equal(rfs_bitmap_init_sparse(&s2, nbits, NULL), RFS_OK);
	for (uint64_t b = 0; b < 70000; b++)          /* chunk 0 becomes a bit array */
		rfs_bitmap_set(&s, b * 3 % (UINT64_C(1) << 16));
	rfs_bitmap_set(&s, (UINT64_C(1) << 16) + 5);  /* chunk 1 stays an array */
	rfs_bitmap_set(&s, nbits - 1);                /* beyond d2 */
	rfs_bitmap_set(&d, 4);
	rfs_bitmap_or(&d, &s);
	rfs_bitmap_or(&d2, &s);
	rfs_bitmap_or(&s2, &d);
	for (uint64_t b = 0; b < nbits; b++) {
		bool in = rfs_bitmap_test(&s, b) || b == 4;
		assert_true(rfs_bitmap_test(&d, b) == in);
		assert_true(rfs_bitmap_test(&s2, b) == in);
		assert_true(rfs_bitmap_test(&d2, b) == (rfs_bitmap_test(&s, b) && b < nbits - 10));
	}
	assert_false(s2.failed);
	rfs_bitmap_free(&s);
	rfs_bitmap_free(&d);
	rfs_bitmap_free(&d2);
	rfs_bitmap_free(&s2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_matches_dense),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_or),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

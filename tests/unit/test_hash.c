/* test_hash.c - r5, tea and rupasov against every vector of the format
 * reference, the entry-offset rules, and the self-test. */
#include "testutil.h"

#include "rfs/hash.h"

struct vec { const char *name; uint32_t r5, tea, rupasov; };
static const struct vec vectors[] = {
	{ "a", 0x000042f2u, 0x3a17e4e6u, 0x003e5280u },
	{ "disk.img", 0xa229cf25u, 0x03b4888fu, 0x6a0e2880u },
	{ "inner_file", 0xa7f88236u, 0xea8031a8u, 0xc6f5d280u },
	{ "lost+found", 0xfbd7df7bu, 0xdaec1218u, 0xe46ff000u },
	{ "\xc3\xa9", 0xfffdf4bau, 0x65cfcaa1u, 0x003bd580u },
	{ "abcdefghijklmnop", 0x5af9c74bu, 0x5f7662efu, 0x9d0ba500u },
	{ "abcdefghijklmnopqrstuvwxyz0123", 0x65dee777u, 0x30813238u, 0xd6855780u },
	{ "caf\xc3\xa9_\xff\x80xyz", 0x0678a66fu, 0x299ad511u, 0x0b58a400u },
	{ "12345678901", 0xc2afcd95u, 0x3ff1a092u, 0xee4c5480u },
};

static void test_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const uint8_t *n = (const uint8_t *)vectors[i].name;
		size_t len = strlen(vectors[i].name);
		assert_int_equal(rfs_hash_r5(n, len), vectors[i].r5);
		assert_int_equal(rfs_hash_tea(n, len), vectors[i].tea);
		assert_int_equal(rfs_hash_rupasov(n, len), vectors[i].rupasov);
		assert_int_equal(rfs_hash_by_code(3, n, len), vectors[i].r5);
		assert_int_equal(rfs_hash_by_code(1, n, len), vectors[i].tea);
		assert_int_equal(rfs_hash_by_code(2, n, len), vectors[i].rupasov);
	}
}

static void test_entry_offset(void **state)
{
	(void)state;
	const uint8_t *d = (const uint8_t *)"disk.img";
	assert_int_equal(rfs_hash_entry_offset(3, d, 8), 0x2229cf00u);
	assert_int_equal(rfs_hash_entry_offset(3, (const uint8_t *)".", 1), 1);
	assert_int_equal(rfs_hash_entry_offset(3, (const uint8_t *)"..", 2), 2);
	/* a name whose masked hash is 0 maps to 128: rupasov of a 256-byte
	 * name of '0' bytes sums to 0 before the shift */
	uint8_t zeros[256];
	memset(zeros, '0', sizeof(zeros));
	assert_int_equal(rfs_hash_rupasov(zeros, sizeof(zeros)), 0);
	assert_int_equal(rfs_hash_entry_offset(2, zeros, sizeof(zeros)), 128);
	assert_int_equal(rfs_hash_by_code(7, d, 8), 0);
}

static void test_offset_matches(void **state)
{
	(void)state;
	const uint8_t *d = (const uint8_t *)"disk.img";
	/* every generation number of the right hash matches, under that hash only */
	for (uint32_t gen = 0; gen <= RFS_HASH_GEN_MASK; gen++) {
		assert_true(rfs_hash_offset_matches(3, d, 8, 0x2229cf00u + gen));
		assert_false(rfs_hash_offset_matches(1, d, 8, 0x2229cf00u + gen));
		assert_false(rfs_hash_offset_matches(2, d, 8, 0x2229cf00u + gen));
	}
	assert_true(rfs_hash_offset_matches(1, d, 8, 0x03b48880u + 5));
	assert_true(rfs_hash_offset_matches(2, d, 8, 0x6a0e2880u));
	/* one bit above the generation changes the hash part */
	assert_false(rfs_hash_offset_matches(3, d, 8, 0x2229cf80u));
	assert_false(rfs_hash_offset_matches(3, d, 8, 0x2229ce00u));
	/* an unknown hash code confirms nothing but "." and ".." */
	assert_false(rfs_hash_offset_matches(7, d, 8, 0x2229cf00u));
	assert_true(rfs_hash_offset_matches(3, (const uint8_t *)".", 1, 1));
	assert_true(rfs_hash_offset_matches(3, (const uint8_t *)"..", 2, 2));
	assert_false(rfs_hash_offset_matches(3, (const uint8_t *)"..", 2, 1));
}

static void test_long_names_all_lengths(void **state)
{
	(void)state;
	/* Lengths 0..300, high bytes included: must not crash or trip UBSan,
	 * and tea must depend on length (pad) even for equal prefixes. */
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 0x80);
	uint32_t prev = 0;
	for (size_t len = 0; len <= sizeof(buf); len++) {
		uint32_t t = rfs_hash_tea(buf, len);
		(void)rfs_hash_r5(buf, len);
		(void)rfs_hash_rupasov(buf, len);
		if (len > 0)
			assert_true(t != prev);
		prev = t;
	}
}

static void test_names_and_selftest(void **state)
{
	(void)state;
	assert_int_equal(rfs_hash_code_from_name("r5"), 3);
	assert_int_equal(rfs_hash_code_from_name("tea"), 1);
	assert_int_equal(rfs_hash_code_from_name("rupasov"), 2);
	assert_int_equal(rfs_hash_code_from_name("yura"), 2);
	assert_int_equal(rfs_hash_code_from_name("md5"), 0);
	assert_string_equal(rfs_hash_name(3), "r5");
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_hash_selftest(&err), RFS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_entry_offset),
		cmocka_unit_test(test_offset_matches),
		cmocka_unit_test(test_long_names_all_lengths),
		cmocka_unit_test(test_names_and_selftest),
	};
	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}

/* test_sha256.c - SHA-256 against the FIPS 180-2 vectors ("abc", the empty
 * message, the 448-bit message), streaming in every split, and the self-test,
 * each on the portable compression function and (where the CPU has them) on
 * the SHA extensions; then both paths on the same random messages. */
#include "testutil.h"

#include "rfs/sha256.h"

static void digest_hex(const void *m, size_t n, char hex[RFS_SHA256_HEX_LEN + 1])
{
	struct rfs_sha256 c;
	uint8_t d[RFS_SHA256_LEN];
	rfs_sha256_init(&c);
	rfs_sha256_update(&c, m, n);
	rfs_sha256_final(&c, d);
	rfs_sha256_hex(d, hex);
}

static void test_fips_vectors(void **state)
{
	(void)state;
	char hex[RFS_SHA256_HEX_LEN + 1];
	digest_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	digest_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_int_equal(strlen(m448) * 8, 448);
	digest_hex(m448, strlen(m448), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* Every split of the 448-bit message into two updates gives the same digest
 * (the partial-block path), and so do byte-at-a-time updates. */
static void test_streaming(void **state)
{
	(void)state;
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	size_t n = strlen(m);
	for (size_t cut = 0; cut <= n; cut++) {
		struct rfs_sha256 c;
		uint8_t d[RFS_SHA256_LEN];
		char hex[RFS_SHA256_HEX_LEN + 1];
		rfs_sha256_init(&c);
		rfs_sha256_update(&c, m, cut);
		rfs_sha256_update(&c, m + cut, n - cut);
		rfs_sha256_final(&c, d);
		rfs_sha256_hex(d, hex);
		assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	/* 55, 56 and 64 bytes: the padding boundaries */
	struct { size_t len; const char *hex; } pad[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
	};
	for (size_t i = 0; i < sizeof(pad) / sizeof(pad[0]); i++) {
		char buf[64], hex[RFS_SHA256_HEX_LEN + 1];
		memset(buf, 'a', sizeof(buf));
		struct rfs_sha256 c;
		uint8_t d[RFS_SHA256_LEN];
		rfs_sha256_init(&c);
		for (size_t k = 0; k < pad[i].len; k++)
			rfs_sha256_update(&c, buf + k, 1);
		rfs_sha256_final(&c, d);
		rfs_sha256_hex(d, hex);
		assert_string_equal(hex, pad[i].hex);
	}
}

static void test_selftest(void **state)
{
	(void)state;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_sha256_selftest(&err), RFS_OK);
}

static void digest_raw(const uint8_t *m, size_t n, size_t chunk, uint8_t d[RFS_SHA256_LEN])
{
	struct rfs_sha256 c;
	rfs_sha256_init(&c);
	for (size_t off = 0; off < n; off += chunk)
		rfs_sha256_update(&c, m + off, n - off < chunk ? n - off : chunk);
	rfs_sha256_final(&c, d);
}

/* The two compression functions agree on random messages of every length up
 * to five blocks, fed whole and in odd chunks, and on 1 MiB + 7 bytes. */
static void test_paths_agree(void **state)
{
	(void)state;
	if (!rfs_sha256_accel(true))
		skip();
	enum { BIG = (1 << 20) + 7 };
	uint8_t *m = malloc(BIG);
	assert_non_null(m);
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (size_t i = 0; i < BIG; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		m[i] = (uint8_t)x;
	}
	for (size_t n = 0; n <= 5 * 64; n++) {
		for (size_t chunk = 1; chunk <= 129; chunk += 64) {
			uint8_t a[RFS_SHA256_LEN], b[RFS_SHA256_LEN];
			assert_false(rfs_sha256_accel(false));
			digest_raw(m, n, n ? (chunk < n ? chunk : n) : 1, a);
			assert_true(rfs_sha256_accel(true));
			digest_raw(m, n, n ? (chunk < n ? chunk : n) : 1, b);
			assert_memory_equal(a, b, RFS_SHA256_LEN);
		}
	}
	uint8_t a[RFS_SHA256_LEN], b[RFS_SHA256_LEN];
	rfs_sha256_accel(false);
	digest_raw(m, BIG, BIG, a);
	rfs_sha256_accel(true);
	digest_raw(m, BIG, 4096, b);
	assert_memory_equal(a, b, RFS_SHA256_LEN);
	free(m);
}

static int use_portable(void **state)
{
	(void)state;
	rfs_sha256_accel(false);
	return 0;
}

/* rfs_sha256_zeros equals updates from a buffer of zeros, after a partial
 * block and across its own 64 KiB steps; the digest of a million zeros, as
 * sha256sum prints it, pins the value. */
static void test_zeros(void **state)
{
	(void)state;
	static const uint64_t lens[] = { 0, 1, 63, 64, 65, 65536, 65536 + 7, (1u << 20) + 3 };
	static uint8_t z[(1u << 20) + 3];
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct rfs_sha256 a, b;
		rfs_sha256_init(&a);
		rfs_sha256_init(&b);
		rfs_sha256_update(&a, "abc", 3);
		rfs_sha256_update(&b, "abc", 3);
		rfs_sha256_update(&a, z, (size_t)lens[i]);
		rfs_sha256_zeros(&b, lens[i]);
		uint8_t da[RFS_SHA256_LEN], db[RFS_SHA256_LEN];
		rfs_sha256_final(&a, da);
		rfs_sha256_final(&b, db);
		assert_memory_equal(da, db, RFS_SHA256_LEN);
	}
	struct rfs_sha256 c;
	uint8_t d[RFS_SHA256_LEN];
	char hex[RFS_SHA256_HEX_LEN + 1];
	rfs_sha256_init(&c);
	rfs_sha256_zeros(&c, 1000000);
	rfs_sha256_final(&c, d);
	rfs_sha256_hex(d, hex);
	assert_string_equal(hex, "d29751f2649b32ff572b5e0a9f541ea660a50f94ff0beedfb0b692b924cc8025");
}

static int use_accel(void **state)
{
	(void)state;
	rfs_sha256_accel(true);
	return 0;
}

int main(void)
{
	const struct CMUnitTest portable[] = {
		cmocka_unit_test(test_fips_vectors),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_selftest),
		cmocka_unit_test(test_zeros),
	};
	const struct CMUnitTest accel[] = {
		cmocka_unit_test(test_fips_vectors),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_selftest),
		cmocka_unit_test(test_paths_agree),
		cmocka_unit_test(test_zeros),
	};
	int failed = cmocka_run_group_tests_name("portable", portable, use_portable, NULL);
	if (!rfs_sha256_accel(true))
		printf("no SHA extensions on this CPU: only the portable path was tested\n");
	failed += cmocka_run_group_tests_name("sha-extensions", accel, use_accel, NULL);
	return failed;
}

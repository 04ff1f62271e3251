/*
 * test_checksum.c - rb_checksum (rebuild/scan.c), the content hash that
 * decides which leaves are duplicates of each other.
 *
 * A collision would reject a distinct leaf as a "duplicate", so the tests
 * look for the ways a fast word-wise hash can go wrong: a change the hash
 * does not see (any single bit of a block, the tail bytes of a length that is
 * not a multiple of the word stride, the length itself), changes that cancel
 * (the same word moved to another position or lane, two equal flips), and
 * structured content (zero blocks, blocks that differ only in a counter).
 */
#include "testutil.h"

#include "../../rebuild/rebuild.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* n values, sorted in place: true when no two are equal. */
static bool all_distinct(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return false;
	return true;
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t)(seed >> 56);
	}
}

/* Same bytes, same value; the value does not depend on the buffer's address. */
static void test_deterministic(void **state)
{
	(void)state;
	uint8_t *a = malloc(4096 + 8), *b = malloc(4096);
	assert_non_null(a);
	assert_non_null(b);
	fill(b, 4096, 1);
	uint64_t want = rb_checksum(b, 4096);
	for (int shift = 0; shift < 8; shift++) {
		memcpy(a + shift, b, 4096);
		assert_true(rb_checksum(a + shift, 4096) == want);
	}
	free(a);
	free(b);
}

/* Every one of the 32768 single-bit changes of a 4 KiB block gives a value
 * of its own, different from the original's and from each other's. */
static void test_every_bit_flip(void **state)
{
	(void)state;
	enum { BS = 4096, N = BS * 8 + 1 };
	uint8_t *b = malloc(BS);
	uint64_t *v = malloc(N * sizeof(*v));
	assert_non_null(b);
	assert_non_null(v);
	fill(b, BS, 2);
	v[0] = rb_checksum(b, BS);
	for (size_t bit = 0; bit < (size_t)BS * 8; bit++) {
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		v[bit + 1] = rb_checksum(b, BS);
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_true(all_distinct(v, N));
	free(b);
	free(v);
}

/* Two flipped bits do not cancel: all pairs of flipped bytes over the first
 * and last 64 bytes of the block (words in every lane and in the tail). */
static void test_byte_pairs(void **state)
{
	(void)state;
	enum { BS = 4096 };
	size_t pos[128];
	for (size_t i = 0; i < 64; i++) {
		pos[i] = i;
		pos[64 + i] = BS - 64 + i;
	}
	uint8_t *b = calloc(1, BS);
	uint64_t *v = malloc((128 * 127 / 2 + 1) * sizeof(*v));
	assert_non_null(b);
	assert_non_null(v);
	size_t n = 0;
	v[n++] = rb_checksum(b, BS);
	for (size_t i = 0; i < 128; i++)
		for (size_t j = i + 1; j < 128; j++) {
			b[pos[i]] = b[pos[j]] = 0x80;
			v[n++] = rb_checksum(b, BS);
			b[pos[i]] = b[pos[j]] = 0;
		}
	assert_true(all_distinct(v, n));
	free(b);
	free(v);
}

/* Where a word sits matters: one nonzero word at each of the 512 word
 * positions of a zero block gives 512 different values (the same word in the
 * same lane one stride later, too). */
static void test_position(void **state)
{
	(void)state;
	enum { BS = 4096, W = BS / 8 };
	uint8_t *b = calloc(1, BS);
	uint64_t *v = malloc(W * sizeof(*v));
	assert_non_null(b);
	assert_non_null(v);
	for (size_t w = 0; w < W; w++) {
		put_le64(b + w * 8, 0x0123456789abcdefull);
		v[w] = rb_checksum(b, BS);
		memset(b + w * 8, 0, 8);
	}
	assert_true(all_distinct(v, W));
	free(b);
	free(v);
}

/* The length counts, and bytes past the last full stride are hashed: zero
 * blocks of every length from 0 to 4096 all differ, and so do the blocks of
 * a 100-byte length that differ in one of the 4 tail bytes. */
static void test_lengths_and_tail(void **state)
{
	(void)state;
	enum { MAX = 4096 };
	uint8_t *z = calloc(1, MAX);
	uint64_t *v = malloc((MAX + 1) * sizeof(*v));
	assert_non_null(z);
	assert_non_null(v);
	for (uint32_t n = 0; n <= MAX; n++)
		v[n] = rb_checksum(z, n);
	assert_true(all_distinct(v, MAX + 1));
	uint8_t t[100] = { 0 };
	uint64_t tv[5];
	tv[0] = rb_checksum(t, sizeof(t));
	for (int i = 0; i < 4; i++) {
		t[96 + i] = 1;
		tv[1 + i] = rb_checksum(t, sizeof(t));
		t[96 + i] = 0;
	}
	assert_true(all_distinct(tv, 5));
	free(z);
	free(v);
}

/* Structured content: 65536 leaf-like blocks that differ only in a 16-bit
 * counter at the start and a key at the end (what duplicate leaves of one
 * directory look like) give 65536 values. */
static void test_counter_blocks(void **state)
{
	(void)state;
	enum { BS = 4096, N = 65536 };
	uint8_t *b = malloc(BS);
	uint64_t *v = malloc(N * sizeof(*v));
	assert_non_null(b);
	assert_non_null(v);
	fill(b, BS, 3);
	for (uint32_t i = 0; i < N; i++) {
		put_le16(b, (uint16_t)i);
		put_le32(b + BS - 4, i * 2654435761u);
		v[i] = rb_checksum(b, BS);
	}
	assert_true(all_distinct(v, N));
	free(b);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_every_bit_flip),
		cmocka_unit_test(test_byte_pairs),
		cmocka_unit_test(test_position),
		cmocka_unit_test(test_lengths_and_tail),
		cmocka_unit_test(test_counter_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

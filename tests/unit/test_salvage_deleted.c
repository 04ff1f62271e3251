/* test_salvage_deleted.c - the decision rules of `rfsck salvage --deleted`
 * (src/salvage_deleted.c, declared in src/salvage_int.h):
 *  - salvage_rank_cmp: which of two stale copies of an item is used (newer
 *    transaction; the copy holding the chosen stat data; newer ctime, mtime;
 *    a free block before a journal copy; the lower block), a total order;
 *  - salvage_free_copy_trans: a free leaf is dated only by a journal copy of
 *    its own block with identical content, the newest such;
 *  - salvage_block_verdict: a data pointer is read only when nothing in use,
 *    no metadata, no newer stale leaf and no newer (or equally new) deleted
 *    object claims its block. */
#include "testutil.h"

#include "../../src/salvage_int.h"

static struct salvage_rank rank(uint64_t gen, bool with_sd, uint32_t ctime, uint32_t mtime,
				bool journal, uint64_t block)
{
	return (struct salvage_rank){ .gen = gen, .with_sd = with_sd, .ctime = ctime,
				      .mtime = mtime, .journal = journal, .block = block };
}

static void test_generation(void **state)
{
	(void)state;
	struct salvage_copy c = { .trans_id = 0, .have_trans = true };
	assert_int_equal(salvage_copy_generation(&c), 1);   /* trans 0 is still dated */
	c.have_trans = false;
	c.trans_id = 99;
	assert_int_equal(salvage_copy_generation(&c), 0);   /* undated: the oldest */
	c.have_trans = true;
	c.trans_id = UINT32_MAX;
	assert_true(salvage_copy_generation(&c) > UINT32_MAX);
}

static void test_rank_order(void **state)
{
	(void)state;
	/* each pair: a must win over b, by exactly one criterion */
	const struct { struct salvage_rank a, b; } cases[] = {
		{ rank(5, false, 0, 0, true, 900), rank(4, true, 9, 9, false, 1) },    /* generation */
		{ rank(5, true, 0, 0, true, 900), rank(5, false, 9, 9, false, 1) },    /* with the sd */
		{ rank(5, false, 7, 0, true, 900), rank(5, false, 6, 9, false, 1) },   /* ctime */
		{ rank(5, false, 7, 3, true, 900), rank(5, false, 7, 2, false, 1) },   /* mtime */
		{ rank(5, false, 7, 3, false, 900), rank(5, false, 7, 3, true, 1) },   /* free first */
		{ rank(5, false, 7, 3, true, 10), rank(5, false, 7, 3, true, 11) },    /* lower block */
		{ rank(0, false, 0, 0, false, 10), rank(0, false, 0, 0, true, 10) },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(salvage_rank_cmp(&cases[i].a, &cases[i].b) < 0);
		assert_true(salvage_rank_cmp(&cases[i].b, &cases[i].a) > 0);
		assert_int_equal(salvage_rank_cmp(&cases[i].a, &cases[i].a), 0);
	}
	/* transitive on a small grid (a total order, as qsort needs) */
	struct salvage_rank g[32];
	size_t n = 0;
	for (unsigned bits = 0; bits < 32; bits++)
		g[n++] = rank(bits & 1, bits & 2, (bits >> 2) & 1, 0, bits & 8, (bits >> 4) & 1);
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < n; b++)
			for (size_t c = 0; c < n; c++)
				if (salvage_rank_cmp(&g[a], &g[b]) < 0 && salvage_rank_cmp(&g[b], &g[c]) < 0)
					assert_true(salvage_rank_cmp(&g[a], &g[c]) < 0);
}

static void test_free_copy_trans(void **state)
{
	(void)state;
	/* sorted by home */
	const struct salvage_jcopy jc[] = {
		{ .home = 100, .checksum = 7, .trans_id = 3 },
		{ .home = 549, .checksum = 1, .trans_id = 10 },
		{ .home = 549, .checksum = 2, .trans_id = 12 },
		{ .home = 549, .checksum = 2, .trans_id = 17 },
		{ .home = 549, .checksum = 3, .trans_id = 20 },
		{ .home = 600, .checksum = 2, .trans_id = 30 },
	};
	size_t n = sizeof(jc) / sizeof(jc[0]);
	uint32_t t = 0;
	assert_true(salvage_free_copy_trans(jc, n, 549, 2, &t));
	assert_int_equal(t, 17);                          /* the newest identical copy */
	assert_true(salvage_free_copy_trans(jc, n, 549, 1, &t));
	assert_int_equal(t, 10);
	/* same content logged for another block says nothing about this one */
	assert_false(salvage_free_copy_trans(jc, n, 548, 2, &t));
	assert_false(salvage_free_copy_trans(jc, n, 601, 2, &t));
	/* content no journal copy of the block has: undated */
	assert_false(salvage_free_copy_trans(jc, n, 549, 9, &t));
	assert_false(salvage_free_copy_trans(jc, 0, 549, 2, &t));
	assert_true(salvage_free_copy_trans(jc, n, 100, 7, &t));
	assert_int_equal(t, 3);
}

static void test_block_verdict(void **state)
{
	(void)state;
	struct salvage_block_facts f = { .claimants = 1 };
	assert_int_equal(salvage_block_verdict(&f, 0), SALVAGE_BLOCK_DATA);
	f.marked_used = true;
	assert_int_equal(salvage_block_verdict(&f, 0), SALVAGE_BLOCK_DATA_MARKED);
	f.marked_used = false;

	/* the strongest reason not to read wins */
	struct salvage_block_facts all = { .outside = true, .in_use = true, .stale_leaf = true,
					   .claimants = 3, .newest_gen = 9, .newest_count = 2 };
	assert_int_equal(salvage_block_verdict(&all, 1), SALVAGE_BLOCK_OUTSIDE);
	all.outside = false;
	assert_int_equal(salvage_block_verdict(&all, 1), SALVAGE_BLOCK_IN_USE);
	all.in_use = false;
	assert_int_equal(salvage_block_verdict(&all, 1), SALVAGE_BLOCK_LEAF);
	all.stale_leaf = false;
	assert_int_equal(salvage_block_verdict(&all, 1), SALVAGE_BLOCK_REUSED);
	assert_int_equal(salvage_block_verdict(&all, 9), SALVAGE_BLOCK_CONTESTED);

	/* several claims: only the unique newest reads it */
	struct salvage_block_facts m = { .claimants = 2, .newest_gen = 12, .newest_count = 1 };
	assert_int_equal(salvage_block_verdict(&m, 12), SALVAGE_BLOCK_DATA);
	assert_int_equal(salvage_block_verdict(&m, 11), SALVAGE_BLOCK_REUSED);
	assert_int_equal(salvage_block_verdict(&m, 0), SALVAGE_BLOCK_REUSED);
	m.newest_count = 2;
	assert_int_equal(salvage_block_verdict(&m, 12), SALVAGE_BLOCK_CONTESTED);
	m.marked_used = true;
	m.newest_count = 1;
	assert_int_equal(salvage_block_verdict(&m, 12), SALVAGE_BLOCK_DATA_MARKED);

	/* every verdict has words for the manifest */
	for (int v = SALVAGE_BLOCK_DATA; v <= SALVAGE_BLOCK_CONTESTED; v++) {
		const char *s = salvage_block_verdict_text((enum salvage_block_verdict)v);
		assert_non_null(s);
		assert_true(strlen(s) > 3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_rank_order),
		cmocka_unit_test(test_free_copy_trans),
		cmocka_unit_test(test_block_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

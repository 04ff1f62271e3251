/* test_objtab.c - check's per-object table: records keep their address while
 * the table grows, every key is found after the index is rebuilt, records
 * come back in arrival order, keys out of order and colliding low bits are
 * told apart, and the saturating counter stops at UINT32_MAX. */
#include "testutil.h"

#include "rfs/objtab.h"

/* A key order that is not the arrival order, with many equal dir_ids and
 * objectids that differ only in high bits. */
static void key_of(uint32_t i, uint32_t *d, uint32_t *o)
{
	*d = 1 + (i % 97);
	*o = (i * 2654435761u) ^ (i << 20);
	if (!*o)
		*o = 0x80000000u;
}

static void test_grow_keeps_records(void **state)
{
	(void)state;
	struct rfs_objtab t = { 0 };
	enum { N = 3 * RFS_OBJTAB_CHUNK + 123 };
	static struct rfs_objinfo *first[N];
	for (uint32_t i = 0; i < N; i++) {
		uint32_t d, o;
		key_of(i, &d, &o);
		assert_int_equal(rfs_objtab_get(&t, d, o, &first[i]), RFS_OK);
		assert_non_null(first[i]);
		assert_int_equal(first[i]->dir_id, d);
		assert_int_equal(first[i]->objectid, o);
		assert_int_equal(first[i]->flags, 0);
		first[i]->nlink = i;   /* a mark to find again */
	}
	assert_int_equal(t.count, N);
	assert_true(t.count * 4 <= t.cap * 3);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t d, o;
		key_of(i, &d, &o);
		/* same address as when created, several index growths later */
		assert_ptr_equal(rfs_objtab_find(&t, d, o), first[i]);
		struct rfs_objinfo *again = NULL;
		assert_int_equal(rfs_objtab_get(&t, d, o, &again), RFS_OK);
		assert_ptr_equal(again, first[i]);
		assert_ptr_equal(rfs_objtab_at(&t, i), first[i]);
		assert_int_equal(rfs_objtab_at(&t, i)->nlink, i);
	}
	assert_int_equal(t.count, N);   /* finding created nothing */
	rfs_objtab_free(&t);
	assert_int_equal(t.count, 0);
	assert_null(rfs_objtab_find(&t, 1, 2));
}

static void test_absent_and_invalid(void **state)
{
	(void)state;
	struct rfs_objtab t = { 0 };
	struct rfs_objinfo *r = (struct rfs_objinfo *)&t;   /* must be reset */
	assert_int_equal(rfs_objtab_get(&t, 0, 0, &r), RFS_ERR_INVALID);
	assert_null(r);
	assert_int_equal(t.count, 0);
	assert_null(rfs_objtab_find(&t, 0, 0));
	assert_int_equal(rfs_objtab_get(&t, 1, 2, &r), RFS_OK);
	/* (2, 1) and (1, 3) are other objects; (0, 2) is allowed */
	assert_null(rfs_objtab_find(&t, 2, 1));
	assert_null(rfs_objtab_find(&t, 1, 3));
	assert_int_equal(rfs_objtab_get(&t, 0, 2, &r), RFS_OK);
	assert_int_equal(t.count, 2);
	assert_ptr_equal(rfs_objtab_find(&t, 0, 2), r);
	assert_int_equal(rfs_objtab_at(&t, 0)->objectid, 2);
	assert_int_equal(rfs_objtab_at(&t, 0)->dir_id, 1);
	rfs_objtab_free(&t);
}

static void test_saturating_count(void **state)
{
	(void)state;
	assert_int_equal(rfs_sat_add32(0, 1), 1);
	assert_int_equal(rfs_sat_add32(UINT32_MAX - 2, 1), UINT32_MAX - 1);
	assert_int_equal(rfs_sat_add32(UINT32_MAX - 1, 1), UINT32_MAX);
	assert_int_equal(rfs_sat_add32(UINT32_MAX, 1), UINT32_MAX);
	assert_int_equal(rfs_sat_add32(5, UINT64_MAX), UINT32_MAX);
	assert_int_equal(rfs_sat_add32(7, 0), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_keeps_records),
		cmocka_unit_test(test_absent_and_invalid),
		cmocka_unit_test(test_saturating_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

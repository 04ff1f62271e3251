/* test_objtab.c - check's per-object table: records keep their address while
 * the table grows, every key is found by binary search while keys arrive in
 * order and through the index once one does not, records come back in
 * arrival order, colliding low bits are told apart, bodies come zeroed, keep
 * their address and are reused once dropped, and the saturating counter
 * stops at UINT32_MAX. */
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
		bool created = false;
		assert_int_equal(rfs_objtab_get(&t, d, o, &first[i], &created), RFS_OK);
		assert_true(created);
		assert_non_null(first[i]);
		assert_int_equal(first[i]->dir_id, d);
		assert_int_equal(first[i]->objectid, o);
		assert_int_equal(first[i]->flags, 0);
		assert_int_equal(first[i]->body, 0);
		first[i]->nlink = i;   /* a mark to find again */
	}
	assert_int_equal(t.count, N);
	assert_true(t.unsorted);
	assert_true(t.count * 4 <= t.cap * 3);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t d, o;
		key_of(i, &d, &o);
		/* same address as when created, several index growths later */
		assert_ptr_equal(rfs_objtab_find(&t, d, o), first[i]);
		struct rfs_objinfo *again = NULL;
		bool created = true;
		assert_int_equal(rfs_objtab_get(&t, d, o, &again, &created), RFS_OK);
		assert_ptr_equal(again, first[i]);
		assert_false(created);
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
	assert_int_equal(rfs_objtab_get(&t, 0, 0, &r, NULL), RFS_ERR_INVALID);
	assert_null(r);
	assert_int_equal(t.count, 0);
	assert_null(rfs_objtab_find(&t, 0, 0));
	assert_int_equal(rfs_objtab_get(&t, 1, 2, &r, NULL), RFS_OK);
	/* (2, 1) and (1, 3) are other objects; (0, 2) is allowed */
	assert_null(rfs_objtab_find(&t, 2, 1));
	assert_null(rfs_objtab_find(&t, 1, 3));
	assert_int_equal(rfs_objtab_get(&t, 0, 2, &r, NULL), RFS_OK);
	assert_true(t.unsorted);   /* (0, 2) came after (1, 2) */
	assert_int_equal(t.count, 2);
	assert_ptr_equal(rfs_objtab_find(&t, 0, 2), r);
	assert_int_equal(rfs_objtab_at(&t, 0)->objectid, 2);
	assert_int_equal(rfs_objtab_at(&t, 0)->dir_id, 1);
	rfs_objtab_free(&t);
}

/* Keys in tree order (dir_id, then objectid, as unsigned numbers): no index
 * is built, and every key, present or absent, is answered right, across
 * chunk boundaries and at both ends of the 32-bit ranges. */
static void test_sorted_without_index(void **state)
{
	(void)state;
	struct rfs_objtab t = { 0 };
	enum { N = 2 * RFS_OBJTAB_CHUNK + 77 };
	for (uint32_t i = 0; i < N; i++) {
		struct rfs_objinfo *r;
		/* even objectids only, so that the odd ones between are absent;
		 * the last dir_id is the largest possible */
		uint32_t d = i < N - 3 ? 1 + i / 1000 : UINT32_MAX;
		uint32_t o = i < N - 3 ? 2 * (i % 1000) + 2 : UINT32_MAX - 2 * (N - 1 - i);
		assert_int_equal(rfs_objtab_get(&t, d, o, &r, NULL), RFS_OK);
		r->nlink = i;
	}
	assert_false(t.unsorted);
	assert_null(t.index);
	assert_int_equal(t.cap, 0);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t d = i < N - 3 ? 1 + i / 1000 : UINT32_MAX;
		uint32_t o = i < N - 3 ? 2 * (i % 1000) + 2 : UINT32_MAX - 2 * (N - 1 - i);
		struct rfs_objinfo *r = rfs_objtab_find(&t, d, o);
		assert_non_null(r);
		assert_int_equal(r->nlink, i);
		assert_ptr_equal(r, rfs_objtab_at(&t, i));
		assert_null(rfs_objtab_find(&t, d, o - 1));
		assert_null(rfs_objtab_find(&t, d, o + 1));
	}
	assert_null(rfs_objtab_find(&t, 0, 1));
	assert_null(rfs_objtab_find(&t, 1, 0));
	assert_null(rfs_objtab_find(&t, UINT32_MAX, UINT32_MAX - 1));
	/* an equal key is found, not added; a smaller one switches to the index */
	struct rfs_objinfo *r;
	bool created = true;
	assert_int_equal(rfs_objtab_get(&t, 1, 2, &r, &created), RFS_OK);
	assert_false(created);
	assert_false(t.unsorted);
	assert_int_equal(rfs_objtab_get(&t, 1, 3, &r, &created), RFS_OK);
	assert_true(created);
	assert_true(t.unsorted);
	assert_true(t.count * 4 <= t.cap * 3);
	assert_int_equal(t.count, N + 1);
	for (uint32_t i = 0; i < N; i++)
		assert_ptr_equal(rfs_objtab_find(&t, rfs_objtab_at(&t, i)->dir_id,
						 rfs_objtab_at(&t, i)->objectid), rfs_objtab_at(&t, i));
	assert_ptr_equal(rfs_objtab_find(&t, 1, 3), r);
	assert_null(rfs_objtab_find(&t, 1, 5));
	rfs_objtab_free(&t);
}

/* Bodies: zeroed when given, at a fixed address, given once per record, and
 * the memory of dropped ones is handed out again before any new. */
static void test_bodies(void **state)
{
	(void)state;
	struct rfs_objtab t = { 0 };
	enum { N = RFS_OBJTAB_CHUNK + 9 };
	static struct rfs_objbody *b[N];
	for (uint32_t i = 0; i < N; i++) {
		struct rfs_objinfo *r;
		assert_int_equal(rfs_objtab_get(&t, 5, i + 1, &r, NULL), RFS_OK);
		assert_null(rfs_objtab_body(&t, r));
		assert_int_equal(rfs_objtab_body_new(&t, r, &b[i]), RFS_OK);
		assert_non_null(b[i]);
		assert_ptr_equal(rfs_objtab_body(&t, r), b[i]);
		assert_int_equal(b[i]->size, 0);
		assert_int_equal(b[i]->blocks, 0);
		b[i]->size = 1000 + i;
		struct rfs_objbody *again;
		assert_int_equal(rfs_objtab_body_new(&t, r, &again), RFS_OK);
		assert_ptr_equal(again, b[i]);   /* kept, not replaced */
		assert_int_equal(again->size, 1000 + i);
	}
	assert_int_equal(t.live_bodies, N);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(rfs_objtab_body(&t, rfs_objtab_find(&t, 5, i + 1))->size, 1000 + i);
	/* drop three, then three new bodies reuse exactly their memory */
	uint32_t drop[3] = { 3, N - 1, 7 };
	for (int k = 0; k < 3; k++) {
		struct rfs_objinfo *r = rfs_objtab_find(&t, 5, drop[k] + 1);
		rfs_objtab_body_drop(&t, r);
		assert_int_equal(r->body, 0);
		assert_null(rfs_objtab_body(&t, r));
		rfs_objtab_body_drop(&t, r);   /* no body: nothing happens */
	}
	assert_int_equal(t.live_bodies, N - 3);
	size_t handed = t.nbodies;
	for (int k = 0; k < 3; k++) {
		struct rfs_objinfo *r;
		struct rfs_objbody *nb;
		assert_int_equal(rfs_objtab_get(&t, 6, (uint32_t)k + 1, &r, NULL), RFS_OK);
		assert_int_equal(rfs_objtab_body_new(&t, r, &nb), RFS_OK);
		assert_true(nb == b[drop[0]] || nb == b[drop[1]] || nb == b[drop[2]]);
		assert_int_equal(nb->size, 0);
		assert_int_equal(nb->blocks, 0);   /* the free list's link is cleared */
	}
	assert_int_equal(t.nbodies, handed);
	assert_int_equal(t.live_bodies, N);
	for (uint32_t i = 0; i < N; i++) {
		if (i == drop[0] || i == drop[1] || i == drop[2])
			continue;
		assert_int_equal(rfs_objtab_body(&t, rfs_objtab_find(&t, 5, i + 1))->size, 1000 + i);
	}
	rfs_objtab_free(&t);
	assert_int_equal(t.nbodies, 0);
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
		cmocka_unit_test(test_sorted_without_index),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_saturating_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_objmap.c - rebuild's object map (rebuild/objmap.h): appends must
 * ascend strictly and a key out of order is refused without changing the
 * map; every appended key is found at its position across many growths and
 * keys between them are not; a rare insert lands in key order and keeps
 * the flags of a key already there. */
#include "testutil.h"

#include "../../rebuild/objmap.h"

static uint64_t key_at(size_t i)
{
	/* objectids spread over several dir_ids, with gaps between keys */
	return ((uint64_t)(1 + i / 1000) << 32) | (uint32_t)(3 * (i % 1000) + 5);
}

static void test_append_find(void **state)
{
	(void)state;
	struct rb_objmap m = { 0 };
	enum { N = 20000 };   /* several doublings past the first 4096 */
	struct rfs_error err;
	for (size_t i = 0; i < N; i++)
		assert_int_equal(rb_objmap_append(&m, key_at(i), (uint8_t)(i % 4), &err), RFS_OK);
	assert_int_equal(m.n, N);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(rb_objmap_find(&m, key_at(i)), i);
		assert_int_equal(m.flags[i], i % 4);
		/* the keys between two members are absent */
		assert_int_equal(rb_objmap_find(&m, key_at(i) + 1), RB_OBJMAP_NONE);
	}
	assert_int_equal(rb_objmap_find(&m, 0), RB_OBJMAP_NONE);
	assert_int_equal(rb_objmap_find(&m, UINT64_MAX), RB_OBJMAP_NONE);

	/* out of order and equal keys are refused, the map unchanged */
	rfs_error_clear(&err);
	assert_int_equal(rb_objmap_append(&m, key_at(5), 0, &err), RFS_ERR_INVALID);
	assert_non_null(strstr(err.msg, "object map"));
	rfs_error_clear(&err);
	assert_int_equal(rb_objmap_append(&m, key_at(N - 1), 0, &err), RFS_ERR_INVALID);
	assert_int_equal(m.n, N);
	assert_int_equal(rb_objmap_find(&m, key_at(N - 1)), N - 1);

	rb_objmap_reset(&m);
	assert_int_equal(m.n, 0);
	assert_int_equal(rb_objmap_find(&m, key_at(0)), RB_OBJMAP_NONE);
	rb_objmap_free(&m);
	assert_null(m.keys);
	assert_int_equal(m.cap, 0);
}

static void test_insert(void **state)
{
	(void)state;
	struct rb_objmap m = { 0 };
	struct rfs_error err;
	/* into an empty map, in front, between, at the end */
	assert_int_equal(rb_objmap_insert(&m, 50, OBJ_DIR, &err), RFS_OK);
	assert_int_equal(rb_objmap_insert(&m, 10, OBJ_SD, &err), RFS_OK);
	assert_int_equal(rb_objmap_insert(&m, 30, 0, &err), RFS_OK);
	assert_int_equal(rb_objmap_insert(&m, 70, OBJ_DIR | OBJ_SD, &err), RFS_OK);
	/* a key already there keeps its flags */
	assert_int_equal(rb_objmap_insert(&m, 30, OBJ_DIR, &err), RFS_OK);
	const uint64_t want[] = { 10, 30, 50, 70 };
	const uint8_t flags[] = { OBJ_SD, 0, OBJ_DIR, OBJ_DIR | OBJ_SD };
	assert_int_equal(m.n, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(m.keys[i], want[i]);
		assert_int_equal(m.flags[i], flags[i]);
		assert_int_equal(rb_objmap_find(&m, want[i]), i);
	}
	/* appending still checks against the largest key */
	assert_int_equal(rb_objmap_append(&m, 60, 0, &err), RFS_ERR_INVALID);
	assert_int_equal(rb_objmap_append(&m, 80, 0, &err), RFS_OK);
	assert_int_equal(rb_objmap_find(&m, 80), 4);
	rb_objmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_find),
		cmocka_unit_test(test_insert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

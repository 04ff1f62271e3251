/*
 * test_readahead.c - the scan's read pipeline (rebuild/readahead.c) on a real
 * file: every block of the set exactly once and in order, whatever the
 * number of workers and the order in which they finish; reads across small
 * gaps of blocks outside the set but not across large ones; unreadable
 * blocks (a ddrescue mapfile's bad area) marked with their error, never
 * handed over as data; a worker's failure reported in block order.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "rfs/bytes.h"
#include "../../rebuild/readahead.h"

enum { BS = 4096, NBLOCKS = 3000, BAD = 1234 };

static char dir[64], img_path[128], map_path[128];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/rfs-test-ra.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img_path, sizeof(img_path), "%s/img", dir);
	snprintf(map_path, sizeof(map_path), "%s/map", dir);
	/* block b begins with b, then bytes that depend on b */
	FILE *f = fopen(img_path, "wb");
	if (!f)
		return -1;
	uint8_t blk[BS];
	for (uint64_t b = 0; b < NBLOCKS; b++) {
		put_le64(blk, b);
		for (int i = 8; i < BS; i++)
			blk[i] = (uint8_t)(b * 31 + (uint64_t)i);
		if (fwrite(blk, 1, BS, f) != BS)
			return -1;
	}
	return fclose(f);
}

static int teardown(void **state)
{
	(void)state;
	unlink(img_path);
	unlink(map_path);
	rmdir(dir);
	return 0;
}

/* The set: gaps of one block every seventh block, one of 100 blocks at
 * 1000..1099, nothing past 2900. */
static bool in_set(const void *ctx, uint64_t b)
{
	(void)ctx;
	return b % 7 != 3 && !(b >= 1000 && b < 1100) && b < 2900;
}

static bool block_intact(const uint8_t *p, uint64_t b)
{
	if (p[0] != (uint8_t)b || p[1] != (uint8_t)(b >> 8))
		return false;
	for (int i = 8; i < BS; i += 97)
		if (p[i] != (uint8_t)(b * 31 + (uint64_t)i))
			return false;
	return true;
}

static struct rfs_dev *open_dev(const char *mapfile)
{
	struct rfs_dev_options o = { .path = img_path, .mapfile = mapfile };
	struct rfs_dev *dev = NULL;
	struct rfs_error err;
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_OK);
	return dev;
}

struct work_ctx {
	uint64_t fail_at;            /* the run holding this block fails (or none) */
};

/* Sums the set's block numbers of the run as read from the data, and sleeps
 * less for later runs of a group of four, so workers finish out of order. */
static rfs_status sum_run(void *ctx, struct ra_run *r, struct rfs_error *err)
{
	const struct work_ctx *w = ctx;
	if (!r->work_out && !(r->work_out = calloc(1, sizeof(uint64_t))))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "test");
	uint64_t sum = 0;
	for (uint32_t i = 0; i < r->n; i++)
		if (r->in_set[i] && !r->failed[i])
			sum += le64_at(r->data + (size_t)i * BS, 0);
	*(uint64_t *)r->work_out = sum;
	struct timespec ts = { 0, (long)(3 - (r->first / 512) % 4) * 300000L };
	nanosleep(&ts, NULL);
	if (w->fail_at >= r->first && w->fail_at < r->first + r->n)
		return rfs_error_set(err, RFS_ERR_CORRUPT, w->fail_at, "work failed here");
	return RFS_OK;
}

/* Runs the pipeline to its end (or first error) and checks every run. */
static rfs_status drain(struct rfs_dev *dev, const struct ra_config *cfg, unsigned *nruns,
			uint64_t *seen, uint64_t *unreadable, bool *spanned_gap, uint64_t *last_end,
			struct rfs_error *err)
{
	struct readahead *ra = NULL;
	rfs_status st = ra_start(dev, cfg, &ra, err);
	assert_int_equal(st, RFS_OK);
	uint64_t prev_end = 0;
	*nruns = 0;
	*seen = *unreadable = 0;
	*spanned_gap = false;
	for (;;) {
		struct ra_run *r;
		if ((st = ra_next(ra, &r, err)) || !r)
			break;
		(*nruns)++;
		assert_true(r->n >= 1 && r->n <= RA_BLOCKS);
		assert_true(r->first >= prev_end);
		/* nothing of the set is skipped between two runs */
		for (uint64_t b = prev_end ? prev_end : cfg->next; b < r->first; b++)
			assert_false(in_set(NULL, b));
		assert_true(r->in_set[0] && r->in_set[r->n - 1]);
		uint64_t sum = 0;
		for (uint32_t i = 0; i < r->n; i++) {
			uint64_t b = r->first + i;
			assert_int_equal(r->in_set[i], in_set(NULL, b));
			if (!r->in_set[i]) {
				*spanned_gap = true;
				continue;
			}
			if (r->failed[i]) {
				assert_non_null(r->why[i]);
				(*unreadable)++;
				continue;
			}
			assert_true(block_intact(r->data + (size_t)i * BS, b));
			(*seen)++;
			sum += b;
		}
		if (cfg->work)
			assert_int_equal(*(uint64_t *)r->work_out, sum);
		prev_end = r->first + r->n;
	}
	*last_end = prev_end;
	ra_stop(ra);
	return st;
}

static uint64_t set_size(void)
{
	uint64_t n = 0;
	for (uint64_t b = 0; b < NBLOCKS; b++)
		n += in_set(NULL, b);
	return n;
}

static void test_plain_runs(void **state)
{
	(void)state;
	struct rfs_dev *dev = open_dev(NULL);
	struct ra_config cfg = { .bs = BS, .next = 0, .end = NBLOCKS, .in_set = in_set };
	unsigned nruns;
	uint64_t seen, unreadable, end;
	bool spanned;
	struct rfs_error err;
	assert_int_equal(drain(dev, &cfg, &nruns, &seen, &unreadable, &spanned, &end, &err), RFS_OK);
	assert_int_equal(seen, set_size());
	assert_int_equal(unreadable, 0);
	assert_false(spanned);
	unsigned starts = 0;                 /* split at every gap: one run per stretch */
	for (uint64_t b = 0; b < NBLOCKS; b++)
		starts += in_set(NULL, b) && (b == 0 || !in_set(NULL, b - 1));
	assert_int_equal(nruns, starts);
	rfs_dev_abandon(dev);
}

static void test_workers_gaps_order(void **state)
{
	(void)state;
	struct rfs_dev *dev = open_dev(NULL);
	struct work_ctx w = { .fail_at = UINT64_MAX };
	for (unsigned workers = 1; workers <= 4; workers++) {
		struct ra_config cfg = { .bs = BS, .next = 5, .end = NBLOCKS, .in_set = in_set,
					 .gap = 16, .work = sum_run, .work_free = free,
					 .work_ctx = &w, .workers = workers };
		unsigned nruns;
		uint64_t seen, unreadable, end;
		bool spanned;
		struct rfs_error err;
		assert_int_equal(drain(dev, &cfg, &nruns, &seen, &unreadable, &spanned, &end, &err),
				 RFS_OK);
		uint64_t want = 0;
		for (uint64_t b = 5; b < NBLOCKS; b++)
			want += in_set(NULL, b);
		assert_int_equal(seen, want);
		assert_true(spanned);
		/* 256-block runs that end on a block of the set and stop at the
		 * 100-block gap: 5..260, 261..516, 517..772, 773..999, 1100..1355,
		 * 1356..1611, 1612..1867, 1868..2123, 2124..2379, 2380..2634 (2635
		 * is a gap), 2636..2891, 2892..2899 */
		_Static_assert(RA_BLOCKS == 256, "the runs listed here are 256 blocks long");
		assert_int_equal(nruns, 12);
		assert_int_equal(end, 2900);
	}
	rfs_dev_abandon(dev);
}

static void test_unreadable_blocks(void **state)
{
	(void)state;
	FILE *f = fopen(map_path, "w");
	assert_non_null(f);
	fprintf(f, "0x0 +\n0x0 0x%x +\n0x%x 0x%x -\n0x%x 0x%x +\n", BAD * BS, BAD * BS, BS,
		(BAD + 1) * BS, (NBLOCKS - BAD - 1) * BS);
	fclose(f);
	struct rfs_dev *dev = open_dev(map_path);
	struct work_ctx w = { .fail_at = UINT64_MAX };
	struct ra_config cfg = { .bs = BS, .next = 0, .end = NBLOCKS, .in_set = in_set, .gap = 16,
				 .work = sum_run, .work_free = free, .work_ctx = &w, .workers = 2 };
	unsigned nruns;
	uint64_t seen, unreadable, end;
	bool spanned;
	struct rfs_error err;
	assert_true(in_set(NULL, BAD));
	assert_int_equal(drain(dev, &cfg, &nruns, &seen, &unreadable, &spanned, &end, &err), RFS_OK);
	assert_int_equal(unreadable, 1);
	assert_int_equal(seen, set_size() - 1);
	rfs_dev_abandon(dev);
}

static void test_work_failure_in_order(void **state)
{
	(void)state;
	struct rfs_dev *dev = open_dev(NULL);
	struct work_ctx w = { .fail_at = 2000 };
	struct ra_config cfg = { .bs = BS, .next = 0, .end = NBLOCKS, .in_set = in_set, .gap = 16,
				 .work = sum_run, .work_free = free, .work_ctx = &w, .workers = 3 };
	unsigned nruns;
	uint64_t seen, unreadable, end;
	bool spanned;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(drain(dev, &cfg, &nruns, &seen, &unreadable, &spanned, &end, &err),
			 RFS_ERR_CORRUPT);
	assert_int_equal(err.block, 2000);
	/* every run before the failing one was handed over, none after it */
	assert_true(end <= 2000);
	uint64_t want = 0;
	for (uint64_t b = 0; b < end; b++)
		want += in_set(NULL, b);
	assert_int_equal(seen, want);
	/* a bad configuration is refused */
	struct readahead *ra = NULL;
	cfg.workers = 0;
	assert_int_equal(ra_start(dev, &cfg, &ra, &err), RFS_ERR_INVALID);
	assert_null(ra);
	rfs_dev_abandon(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workers_gaps_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_work_failure_in_order, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

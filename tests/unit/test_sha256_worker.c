/* test_sha256_worker.c - digests on the second thread (src/sha256_worker.c)
 * equal those of rfs_sha256 fed the same bytes and zeros: for more jobs than
 * slots, read in order while others are still fed; for jobs of one byte,
 * of several chunks, of holes only and of nothing; for jobs closed without a
 * digest.  Opening a job over an unread digest fails; the digest of a job
 * still open is not waited for; a worker stopped in a hole of a terabyte
 * returns. */
#include "testutil.h"

#include <unistd.h>

#include "../../src/sha256_worker.h"

/* A deterministic byte stream, so every job differs. */
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	return test_xorshift(&rng);
}

static uint8_t buf[3 * RFS_SHA256_WORKER_CHUNK + 777];
static const uint8_t zero_block[4096];

/* Feeds job j (the same pieces) to both the worker and a local context. */
static void feed(struct rfs_sha256_worker *w, struct rfs_sha256 *ref, unsigned j)
{
	unsigned pieces = (unsigned)(next_rand() % 5);
	for (unsigned p = 0; p < pieces; p++) {
		uint64_t r = next_rand();
		if (r % 3 == 0) {
			uint64_t n = (r >> 8) % 20000 + (j % 7 == 0 ? 1u << 20 : 0);
			rfs_sha256_worker_zeros(w, n);
			for (uint64_t left = n; left;) {
				size_t k = left < sizeof(zero_block) ? (size_t)left : sizeof(zero_block);
				rfs_sha256_update(ref, zero_block, k);
				left -= k;
			}
		} else {
			/* mostly small; every 50th job larger than three chunks */
			size_t n = j % 50 == 0 ? sizeof(buf) : (size_t)((r >> 8) % 3000) + 1;
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)next_rand();
			rfs_sha256_worker_data(w, buf, n);
			rfs_sha256_update(ref, buf, n);
		}
	}
}

enum { SLOTS = 1024, JOBS = 12 * SLOTS + 17, LAG = 1000 };

static int start_worker(void **state)
{
	struct rfs_sha256_worker *w;
	struct rfs_error err;
	if (rfs_sha256_worker_start(&w, SLOTS, &err) != RFS_OK)
		return -1;
	*state = w;
	return 0;
}

static int stop_worker(void **state)
{
	rfs_sha256_worker_stop(*state);
	return 0;
}

static void worker_digests_match(void **state)
{
	struct rfs_sha256_worker *w = *state;
	static uint8_t want[JOBS + 1][RFS_SHA256_LEN];
	static bool kept[JOBS + 1];
	uint64_t read_upto = 0;
	unsigned got_early = 0, dropped = 0;
	for (unsigned j = 1; j <= JOBS; j++) {
		uint64_t id;
		assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_OK);
		assert_int_equal(id, j);
		struct rfs_sha256 ref;
		rfs_sha256_init(&ref);
		feed(w, &ref, j);
		rfs_sha256_final(&ref, want[j]);
		kept[j] = j % 11 != 5;
		dropped += !kept[j];
		rfs_sha256_worker_close(w, kept[j]);
		/* read without waiting whatever is ready, and wait for the
		 * oldest once LAG digests are unread */
		while (read_upto < j) {
			uint64_t k = read_upto + 1;
			uint8_t d[RFS_SHA256_LEN];
			bool wait = j - read_upto > LAG;
			bool got = rfs_sha256_worker_result(w, k, wait, d);
			if (!kept[k]) {
				assert_false(got);
				read_upto = k;
				continue;
			}
			if (!got) {
				assert_false(wait);
				break;
			}
			got_early += !wait;
			assert_memory_equal(d, want[k], RFS_SHA256_LEN);
			read_upto = k;
		}
	}
	for (uint64_t k = read_upto + 1; k <= JOBS; k++) {
		uint8_t d[RFS_SHA256_LEN];
		bool got = rfs_sha256_worker_result(w, k, true, d);
		assert_int_equal(got, kept[k]);
		if (got)
			assert_memory_equal(d, want[k], RFS_SHA256_LEN);
		/* read once: the slot is free again */
		assert_false(rfs_sha256_worker_result(w, k, true, d));
	}
	assert_true(dropped > 0);
	/* every digest was read, so every byte was hashed; the count follows
	 * when the worker is done with the last chunk (within a second) */
	uint64_t left = rfs_sha256_worker_backlog(w);
	for (int i = 0; i < 1000 && left; i++) {
		usleep(1000);
		left = rfs_sha256_worker_backlog(w);
	}
	assert_int_equal(left, 0);
	printf("  %u jobs, %u read without waiting, %u without digest\n", JOBS, got_early, dropped);
}

/* The empty job's digest is that of the empty message. */
static void worker_empty_job(void **state)
{
	struct rfs_sha256_worker *w = *state;
	uint64_t id;
	assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_OK);
	uint8_t d[RFS_SHA256_LEN];
	assert_false(rfs_sha256_worker_result(w, id, true, d));   /* still open */
	rfs_sha256_worker_close(w, true);
	assert_true(rfs_sha256_worker_result(w, id, true, d));
	char hex[RFS_SHA256_HEX_LEN + 1];
	rfs_sha256_hex(d, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* Invariant 3: a slot whose digest nobody read is not given to a new job. */
static void worker_unread_slot_refused(void **state)
{
	struct rfs_sha256_worker *w = *state;
	uint64_t id;
	for (unsigned j = 0; j < SLOTS; j++) {
		assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_OK);
		rfs_sha256_worker_data(w, "x", 1);
		rfs_sha256_worker_close(w, true);
	}
	assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_ERR_INVALID);
	uint8_t d[RFS_SHA256_LEN];
	assert_true(rfs_sha256_worker_result(w, 1, true, d));
	assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_OK);
	assert_int_equal(id, SLOTS + 1);
	rfs_sha256_worker_close(w, false);
}

/* A hole of 1 TiB would take ten minutes to hash: stop does not wait. */
static void worker_stops_in_a_hole(void **state)
{
	struct rfs_sha256_worker *w = *state;
	uint64_t id;
	assert_int_equal(rfs_sha256_worker_open(w, &id), RFS_OK);
	for (int i = 0; i < 1024; i++)
		rfs_sha256_worker_zeros(w, UINT64_C(1) << 30);
	rfs_sha256_worker_close(w, true);
	/* a second job of more than a chunk hands the hole to the worker */
	uint64_t id2;
	assert_int_equal(rfs_sha256_worker_open(w, &id2), RFS_OK);
	rfs_sha256_worker_data(w, buf, sizeof(buf));
	rfs_sha256_worker_close(w, true);
	usleep(50 * 1000);
	uint8_t d[RFS_SHA256_LEN];
	assert_false(rfs_sha256_worker_result(w, id, false, d));
	/* the hole counts as work not done yet, however it was cut up */
	assert_true(rfs_sha256_worker_backlog(w) > (UINT64_C(1) << 40) - (UINT64_C(1) << 36));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(worker_digests_match, start_worker, stop_worker),
		cmocka_unit_test_setup_teardown(worker_empty_job, start_worker, stop_worker),
		cmocka_unit_test_setup_teardown(worker_unread_slot_refused, start_worker, stop_worker),
		cmocka_unit_test_setup_teardown(worker_stops_in_a_hole, start_worker, stop_worker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

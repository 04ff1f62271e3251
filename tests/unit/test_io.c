/* test_io.c - struct rfs_dev: reads (cache, runs, offset, short device,
 * mapfile), the test hooks, read-only and dry-run opens, the overlay, sticky
 * write errors and identity immutability.  Each test works on files in a
 * fresh temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "rfs/io.h"

#define BS 4096u

static char dir[64];
static char img_path[128], undo_path[128], map_path[128];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/rfs-test-io.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img_path, sizeof(img_path), "%s/img", dir);
	snprintf(undo_path, sizeof(undo_path), "%s/undo", dir);
	snprintf(map_path, sizeof(map_path), "%s/map", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(img_path);
	unlink(undo_path);
	unlink(map_path);
	rmdir(dir);
	return 0;
}

/* Writes len bytes where byte i of block b is (b * 7 + i) & 0xff ^ salt. */
static uint8_t *make_image(size_t len, uint8_t salt)
{
	uint8_t *d = malloc(len);
	assert_non_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = (uint8_t)(((i / BS) * 7 + i) ^ salt);
	FILE *f = fopen(img_path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(d, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return d;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *d = malloc((size_t)n + 1);
	assert_non_null(d);
	assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return d;
}

static void assert_file_equals(const uint8_t *want, size_t len)
{
	size_t n;
	uint8_t *got = read_file(img_path, &n);
	assert_int_equal(n, len);
	assert_memory_equal(got, want, len);
	free(got);
}

static struct rfs_dev *open_dev(const struct rfs_dev_options *o)
{
	struct rfs_dev *dev = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_dev_open(o, &dev, &err);
	if (st)
		fprintf(stderr, "open: %s\n", err.msg);
	assert_int_equal(st, RFS_OK);
	return dev;
}

static void test_reads_and_cache(void **state)
{
	(void)state;
	uint8_t *orig = make_image(16 * BS, 0);
	struct rfs_dev_options o = { .path = img_path };
	struct rfs_dev *dev = open_dev(&o);
	assert_int_equal(rfs_dev_block_size(dev), 4096);
	assert_int_equal(rfs_dev_size(dev), 16 * BS);
	assert_int_equal(rfs_dev_block_count(dev), 16);
	uint8_t buf[BS], run[4 * BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 5, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 5 * BS, BS);
	assert_int_equal(rfs_dev_read_block(dev, 5, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 5 * BS, BS);
	assert_int_equal(rfs_dev_read_run(dev, 3, 4, run, NULL, &err), RFS_OK);
	assert_memory_equal(run, orig + 3 * BS, 4 * BS);
	uint8_t small[10];
	assert_int_equal(rfs_dev_read_bytes(dev, 8192 + 50, small, 10, &err), RFS_OK);
	assert_memory_equal(small, orig + 8192 + 50, 10);
	struct rfs_dev_stats st;
	rfs_dev_get_stats(dev, &st);
	assert_int_equal(st.cache_hits, 1);
	assert_int_equal(st.blocks_read, 6);
	assert_int_equal(st.bytes_read, BS + 4 * BS + 10);
	/* A smaller block size: block 3 of 1024 bytes. */
	assert_int_equal(rfs_dev_set_block_size(dev, 1024, &err), RFS_OK);
	assert_int_equal(rfs_dev_block_count(dev), 64);
	assert_int_equal(rfs_dev_read_block(dev, 3, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 3 * 1024, 1024);
	assert_int_equal(rfs_dev_set_block_size(dev, 3000, &err), RFS_ERR_INVALID);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_OK);
	free(orig);
}

static void test_offset(void **state)
{
	(void)state;
	uint8_t *orig = make_image(10 * BS, 3);
	struct rfs_dev_options o = { .path = img_path, .offset = 2 * BS + 512 };
	struct rfs_dev *dev = open_dev(&o);
	assert_int_equal(rfs_dev_size(dev), 8 * BS - 512);
	assert_int_equal(rfs_dev_block_count(dev), 7);
	uint8_t buf[BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 1, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 3 * BS + 512, BS);
	rfs_dev_abandon(dev);
	o.offset = 11 * BS;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_SHORT);
	free(orig);
}

static void test_short_device(void **state)
{
	(void)state;
	uint8_t *orig = make_image(2 * BS + BS / 2, 1);
	struct rfs_dev_options o = { .path = img_path };
	struct rfs_dev *dev = open_dev(&o);
	assert_int_equal(rfs_dev_block_count(dev), 2);
	uint8_t buf[3 * BS];
	memset(buf, 0xee, sizeof(buf));
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 2, buf, &err), RFS_ERR_SHORT);
	assert_int_equal(err.block, 2);
	assert_int_equal(buf[0], 0xee);	/* never turned into zeros */
	rfs_error_clear(&err);
	uint64_t bad = 0;
	assert_int_equal(rfs_dev_read_run(dev, 1, 2, buf, &bad, &err), RFS_ERR_SHORT);
	assert_int_equal(bad, 2);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_bytes(dev, 2 * BS, buf, BS, &err), RFS_ERR_SHORT);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, UINT64_MAX / 2, buf, &err), RFS_ERR_SHORT);
	/* The partial last block is still readable by bytes. */
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_bytes(dev, 2 * BS, buf, BS / 2, &err), RFS_OK);
	assert_memory_equal(buf, orig + 2 * BS, BS / 2);
	rfs_dev_abandon(dev);
	free(orig);
}

static void test_fail_read_nth(void **state)
{
	(void)state;
	uint8_t *orig = make_image(16 * BS, 2);
	struct rfs_dev_options o = { .path = img_path, .fail_read_nth = 3 };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[8 * BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 9, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 10, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 11, buf, &err), RFS_ERR_INJECTED);
	assert_int_equal(err.status, RFS_ERR_INJECTED);
	assert_int_equal(err.block, 11);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 11, buf, &err), RFS_OK);	/* only the Nth */
	rfs_dev_abandon(dev);

	/* In a run, the Nth block of the run fails and *bad names it. */
	o.fail_read_nth = 6;
	dev = open_dev(&o);
	uint64_t bad = 0;
	assert_int_equal(rfs_dev_read_block(dev, 0, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_run(dev, 4, 8, buf, &bad, &err), RFS_ERR_INJECTED);
	assert_int_equal(bad, 8);
	assert_int_equal(err.block, 8);
	rfs_dev_abandon(dev);
	free(orig);
}

static void test_mapfile_unreadable(void **state)
{
	(void)state;
	uint8_t *orig = make_image(16 * BS, 4);
	FILE *f = fopen(map_path, "w");
	assert_non_null(f);
	/* The filesystem starts at BS; absolute 6*BS..7*BS is bad = fs block 5. */
	fprintf(f, "# ddrescue\n0x0 +\n0x0 0x%x +\n0x%x 0x%x -\n0x%x 0x%x +\n", 6 * BS, 6 * BS,
		BS, 7 * BS, 9 * BS);
	fclose(f);
	struct rfs_dev_options o = { .path = img_path, .offset = BS, .mapfile = map_path };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[8 * BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 4, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 5, buf, &err), RFS_ERR_IO);
	assert_int_equal(err.block, 5);
	assert_int_equal(err.sys_errno, EIO);
	rfs_error_clear(&err);
	uint64_t bad = 0;
	assert_int_equal(rfs_dev_read_run(dev, 2, 6, buf, &bad, &err), RFS_ERR_IO);
	assert_int_equal(bad, 5);
	rfs_dev_abandon(dev);
	free(orig);

	f = fopen(map_path, "w");
	fprintf(f, "0x0 +\n0x0 0x10 X\n");
	fclose(f);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_INVALID);
}

static void test_readonly_and_flags(void **state)
{
	(void)state;
	uint8_t *orig = make_image(8 * BS, 5);
	assert_int_equal(chmod(img_path, 0444), 0);
	struct rfs_dev_options o = { .path = img_path };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 7, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 7 * BS, BS);
	memset(buf, 0, BS);
	uint64_t gen = rfs_dev_generation(dev);
	assert_int_equal(rfs_dev_read_block(dev, 6, buf, &err), RFS_OK);
	assert_true(rfs_dev_generation(dev) == gen);   /* reads leave it */
	assert_int_equal(rfs_dev_write_block(dev, 1, buf, &err), RFS_ERR_READONLY);
	/* a refused write moves it too: the caller may have edited a copy */
	assert_true(rfs_dev_generation(dev) > gen);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_OK);
	assert_file_equals(orig, 8 * BS);

	rfs_error_clear(&err);
	o.flags = RFS_DEV_WRITE;	/* no undo file, no NO_UNDO */
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_INVALID);
	rfs_error_clear(&err);
	o.flags = RFS_DEV_WRITE | RFS_DEV_DRY_RUN | RFS_DEV_NO_UNDO;
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_INVALID);
	rfs_error_clear(&err);
	o.flags = RFS_DEV_WRITE;
	o.undo_path = img_path;	/* the undo file cannot be the image */
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_INVALID);
	assert_int_equal(chmod(img_path, 0644), 0);
	free(orig);
}

static void test_dry_run_overlay(void **state)
{
	(void)state;
	uint8_t *orig = make_image(16 * BS, 6);
	assert_int_equal(chmod(img_path, 0444), 0);
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_DRY_RUN };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS], run[4 * BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 9, buf, &err), RFS_OK);	/* now cached */
	static const uint64_t order[] = { 9, 2, 14, 5 };
	for (int i = 0; i < 4; i++) {
		memset(buf, 0x40 + i, BS);
		assert_int_equal(rfs_dev_write_block(dev, order[i], buf, &err), RFS_OK);
	}
	memset(buf, 0x77, BS);
	uint64_t gen = rfs_dev_generation(dev);
	assert_int_equal(rfs_dev_overlay_put(dev, 3, buf, &err), RFS_OK);
	assert_true(rfs_dev_generation(dev) > gen);
	gen = rfs_dev_generation(dev);
	assert_int_equal(rfs_dev_write_block(dev, 14, buf, &err), RFS_OK);   /* dry run: overlay */
	assert_true(rfs_dev_generation(dev) > gen);
	memset(buf, 0x43, BS);
	assert_int_equal(rfs_dev_write_block(dev, 14, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 9, buf, &err), RFS_OK);
	assert_int_equal(buf[100], 0x40);	/* overlay beats the cache */
	assert_int_equal(rfs_dev_read_run(dev, 2, 4, run, NULL, &err), RFS_OK);
	assert_int_equal(run[0], 0x41);
	assert_int_equal(run[BS], 0x77);
	assert_memory_equal(run + 2 * BS, orig + 4 * BS, BS);
	assert_int_equal(run[3 * BS + 5], 0x43);
	uint8_t bytes[8];
	assert_int_equal(rfs_dev_read_bytes(dev, 3 * BS - 4, bytes, 8, &err), RFS_OK);
	assert_int_equal(bytes[3], 0x41);	/* block 2, written above */
	assert_int_equal(bytes[4], 0x77);	/* block 3, put in the overlay */
	assert_int_equal(rfs_dev_read_bytes(dev, 5 * BS - 2, bytes, 4, &err), RFS_OK);
	assert_memory_equal(bytes, orig + 5 * BS - 2, 2);
	assert_int_equal(bytes[2], 0x43);
	assert_int_equal(rfs_dev_overlay_count(dev), 5);
	uint64_t *blocks, n;
	assert_int_equal(rfs_dev_overlay_blocks(dev, &blocks, &n, &err), RFS_OK);
	assert_int_equal(n, 5);
	static const uint64_t sorted[] = { 2, 3, 5, 9, 14 };
	for (int i = 0; i < 5; i++)
		assert_int_equal(blocks[i], sorted[i]);
	free(blocks);
	/* Many blocks: the table grows and iteration stays ascending. */
	for (uint64_t b = 15; b > 0; b--)
		assert_int_equal(rfs_dev_overlay_put(dev, b, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_overlay_blocks(dev, &blocks, &n, &err), RFS_OK);
	assert_int_equal(n, 15);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(blocks[i], i + 1);
	free(blocks);
	assert_int_equal(rfs_dev_set_block_size(dev, 1024, &err), RFS_ERR_INVALID);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_OK);
	assert_file_equals(orig, 16 * BS);
	assert_int_equal(chmod(img_path, 0644), 0);
	free(orig);
}

static void test_stop_after_write_sticky(void **state)
{
	(void)state;
	uint8_t *orig = make_image(16 * BS, 7);
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO,
				     .stop_after_write_nth = 3 };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	for (uint64_t b = 1; b <= 2; b++) {
		memset(buf, (int)b, BS);
		assert_int_equal(rfs_dev_write_block(dev, b, buf, &err), RFS_OK);
		memcpy(orig + b * BS, buf, BS);
	}
	memset(buf, 0x33, BS);
	assert_int_equal(rfs_dev_write_block(dev, 3, buf, &err), RFS_ERR_INJECTED);
	assert_int_equal(err.block, 3);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_write_block(dev, 4, buf, &err), RFS_ERR_INJECTED);
	assert_int_equal(err.block, 3);	/* the first error, kept */
	/* Reads still work, and see what was written. */
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 2, buf, &err), RFS_OK);
	assert_int_equal(buf[0], 2);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_ERR_INJECTED);
	assert_file_equals(orig, 16 * BS);
	free(orig);
}

static void test_write_errors_are_sticky(void **state)
{
	(void)state;
	uint8_t *orig = make_image(4 * BS, 8);
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS];
	memset(buf, 1, BS);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_write_block(dev, 4, buf, &err), RFS_ERR_SHORT);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_write_block(dev, 1, buf, &err), RFS_ERR_SHORT);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_ERR_SHORT);
	assert_file_equals(orig, 4 * BS);
	free(orig);
}

static void test_write_through_cache_and_identity(void **state)
{
	(void)state;
	uint8_t *orig = make_image(8 * BS, 9);
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_set_identity(dev, BS + 100, 16, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 2, buf, &err), RFS_OK);
	memset(buf, 0x5a, BS);
	const void *ptrs[2] = { buf, buf };
	uint64_t blks[2] = { 2, 6 };
	assert_int_equal(rfs_dev_write_batch(dev, 2, blks, ptrs, &err), RFS_OK);
	uint8_t got[BS];
	assert_int_equal(rfs_dev_read_block(dev, 2, got, &err), RFS_OK);
	assert_memory_equal(got, buf, BS);
	memcpy(orig + 2 * BS, buf, BS);
	memcpy(orig + 6 * BS, buf, BS);
	/* Block 1 keeps its identity bytes: allowed.  Changing them: refused. */
	memcpy(buf, orig + BS, BS);
	buf[0] ^= 1;
	assert_int_equal(rfs_dev_write_block(dev, 1, buf, &err), RFS_OK);
	orig[BS] ^= 1;
	buf[110] ^= 1;
	assert_int_equal(rfs_dev_write_block(dev, 1, buf, &err), RFS_ERR_INVALID);
	assert_int_equal(err.block, 1);
	assert_int_equal(rfs_dev_set_identity(dev, 0, 4, &err), RFS_ERR_INVALID);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_ERR_INVALID);
	assert_file_equals(orig, 8 * BS);
	free(orig);
}

static void test_create_and_set_size(void **state)
{
	(void)state;
	uint8_t *orig = make_image(4 * BS, 10);
	struct rfs_dev_options o = { .path = img_path, .offset = 512,
				     .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO | RFS_DEV_CREATE };
	struct rfs_dev *dev = open_dev(&o);
	assert_int_equal(rfs_dev_size(dev), 0);
	uint8_t buf[BS];
	memset(buf, 0x21, BS);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_set_size(dev, 3 * BS, &err), RFS_OK);
	assert_int_equal(rfs_dev_block_count(dev), 3);
	assert_int_equal(rfs_dev_write_block(dev, 2, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_OK);
	uint8_t *want = calloc(1, 512 + 3 * BS);
	memset(want + 512 + 2 * BS, 0x21, BS);
	assert_file_equals(want, 512 + 3 * BS);
	free(want);
	/* Not allowed without RFS_DEV_CREATE. */
	o.flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO;
	dev = open_dev(&o);
	assert_int_equal(rfs_dev_set_size(dev, BS, &err), RFS_ERR_INVALID);
	rfs_dev_abandon(dev);
	free(orig);
}

/* rfs_dev_cache_run: one pread for a run, the reads that follow copy from
 * the cache and return the file's bytes (the overlay's where it has them);
 * faults, the test hook and the mapfile still hit the single reads. */
static void test_cache_run(void **state)
{
	(void)state;
	uint8_t *orig = make_image(80 * BS, 9);
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_DRY_RUN };
	struct rfs_dev *dev = open_dev(&o);
	uint8_t buf[BS];
	struct rfs_error err;
	rfs_error_clear(&err);
	memset(buf, 0x5a, BS);
	assert_int_equal(rfs_dev_write_block(dev, 12, buf, &err), RFS_OK);	/* overlay */
	struct rfs_dev_stats s0, s1;
	rfs_dev_get_stats(dev, &s0);
	rfs_dev_cache_run(dev, 10, 8);
	rfs_dev_get_stats(dev, &s1);
	assert_int_equal(s1.read_calls - s0.read_calls, 1);
	assert_int_equal(s1.blocks_read, s0.blocks_read);	/* nothing handed out yet */
	for (uint64_t b = 10; b < 18; b++) {
		assert_int_equal(rfs_dev_read_block(dev, b, buf, &err), RFS_OK);
		if (b == 12) {
			assert_int_equal(buf[0], 0x5a);
			assert_int_equal(buf[BS - 1], 0x5a);
		} else {
			assert_memory_equal(buf, orig + b * BS, BS);
		}
	}
	rfs_dev_get_stats(dev, &s0);
	assert_int_equal(s0.read_calls, s1.read_calls);	/* all from memory */
	assert_int_equal(s0.cache_hits - s1.cache_hits, 7);	/* 12 came from the overlay */
	/* all cached: no second read; too short, too long, past the end: none */
	rfs_dev_cache_run(dev, 10, 8);
	rfs_dev_cache_run(dev, 30, 1);
	rfs_dev_cache_run(dev, 0, RFS_DEV_CACHE_RUN_MAX + 1);
	rfs_dev_cache_run(dev, 75, 8);
	rfs_dev_get_stats(dev, &s1);
	assert_int_equal(s1.read_calls, s0.read_calls);
	assert_int_equal(rfs_dev_read_block(dev, 76, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 76 * BS, BS);
	rfs_dev_get_stats(dev, &s0);
	assert_int_equal(s0.read_calls, s1.read_calls + 1);
	rfs_dev_abandon(dev);

	/* The hook counts the reads of the blocks, not the run's read. */
	o = (struct rfs_dev_options){ .path = img_path, .fail_read_nth = 3 };
	dev = open_dev(&o);
	rfs_dev_cache_run(dev, 40, 6);
	assert_int_equal(rfs_dev_read_block(dev, 40, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 41, buf, &err), RFS_OK);
	assert_int_equal(rfs_dev_read_block(dev, 42, buf, &err), RFS_ERR_INJECTED);
	assert_int_equal(err.block, 42);
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 42, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 42 * BS, BS);
	rfs_dev_abandon(dev);

	/* A run over a block the mapfile marks unread reads nothing. */
	FILE *f = fopen(map_path, "w");
	assert_non_null(f);
	fprintf(f, "0x0 +\n0x0 0x%x +\n0x%x 0x%x -\n0x%x 0x%x +\n", 22 * BS, 22 * BS, BS,
		23 * BS, 57 * BS);
	assert_int_equal(fclose(f), 0);
	o = (struct rfs_dev_options){ .path = img_path, .mapfile = map_path };
	dev = open_dev(&o);
	rfs_dev_get_stats(dev, &s0);
	rfs_dev_cache_run(dev, 20, 5);
	rfs_dev_get_stats(dev, &s1);
	assert_int_equal(s1.read_calls, s0.read_calls);
	assert_int_equal(rfs_dev_read_block(dev, 21, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 21 * BS, BS);
	assert_int_equal(rfs_dev_read_block(dev, 22, buf, &err), RFS_ERR_IO);
	assert_int_equal(err.block, 22);
	rfs_dev_abandon(dev);

	/* A written block (write-through) is read back as written. */
	o = (struct rfs_dev_options){ .path = img_path, .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO };
	dev = open_dev(&o);
	rfs_error_clear(&err);
	memset(buf, 0x3c, BS);
	assert_int_equal(rfs_dev_write_block(dev, 50, buf, &err), RFS_OK);
	rfs_dev_cache_run(dev, 48, 5);
	assert_int_equal(rfs_dev_read_block(dev, 50, buf, &err), RFS_OK);
	assert_int_equal(buf[7], 0x3c);
	assert_int_equal(rfs_dev_read_block(dev, 49, buf, &err), RFS_OK);
	assert_memory_equal(buf, orig + 49 * BS, BS);
	assert_int_equal(rfs_dev_close(dev, &err), RFS_OK);
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reads_and_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_read_nth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapfile_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_overlay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_after_write_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_errors_are_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_through_cache_and_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_and_set_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_run, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_undo.c - the undo log: CRC-32C known answers, the transform, write
 * then apply round trips (random, repeated, batched, other block sizes and
 * offsets), crashes at every write of a run (stop hook + abandon), torn tails,
 * and refusal of corrupt undo files and wrong images with the image untouched.
 * Each test works on files in a fresh temporary directory. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "rfs/io.h"
#include "rfs/undo.h"

static char dir[64];
static char img_path[128], undo_path[128], other_path[128];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/rfs-test-undo.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img_path, sizeof(img_path), "%s/img", dir);
	snprintf(undo_path, sizeof(undo_path), "%s/undo", dir);
	snprintf(other_path, sizeof(other_path), "%s/other", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(img_path);
	unlink(undo_path);
	unlink(other_path);
	rmdir(dir);
	return 0;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_random(uint8_t *d, size_t len, uint64_t *rng)
{
	for (size_t i = 0; i < len; i++)
		d[i] = (uint8_t)rng_next(rng);
}

static void write_file(const char *path, const uint8_t *d, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(d, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
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

static bool file_equals(const char *path, const uint8_t *want, size_t len)
{
	size_t n;
	uint8_t *got = read_file(path, &n);
	bool same = n == len && memcmp(got, want, len) == 0;
	free(got);
	return same;
}

/* A random image whose blocks look like ReiserFS metadata (magic, leaf level). */
static uint8_t *make_image(size_t len, uint32_t bs, uint64_t seed)
{
	uint8_t *d = malloc(len);
	assert_non_null(d);
	fill_random(d, len, &seed);
	for (size_t b = 0; b + bs <= len; b += bs) {
		put_le16(d + b, 1);
		memcpy(d + b + 52, "ReIsEr2Fs", 10);
	}
	write_file(img_path, d, len);
	return d;
}

enum run_end { END_CLOSE, END_ABANDON };

struct run_spec {
	uint32_t bs;
	uint64_t offset;
	uint64_t seed, writes, range, batch, stop;
	enum run_end end;
};

/* Writes spec->writes random blocks (block 0's first 64 bytes pinned as the
 * identity) and returns the status of the first failed write (or close). */
static rfs_status run_writes(const struct run_spec *spec, uint64_t *distinct)
{
	struct rfs_dev_options o = { .path = img_path, .undo_path = undo_path, .offset = spec->offset,
				     .flags = RFS_DEV_WRITE, .stop_after_write_nth = spec->stop };
	struct rfs_dev *dev;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_OK);
	assert_int_equal(rfs_dev_set_block_size(dev, spec->bs, &err), RFS_OK);
	assert_int_equal(rfs_dev_set_identity(dev, 0, 64, &err), RFS_OK);
	uint64_t rng = spec->seed, nblocks = rfs_dev_block_count(dev);
	uint64_t range = spec->range && spec->range < nblocks - 1 ? spec->range : nblocks - 1;
	uint64_t batch = spec->batch ? spec->batch : 1;
	uint8_t *bufs = malloc(batch * spec->bs);
	uint64_t *blks = malloc(batch * sizeof(*blks));
	const void **ptrs = malloc(batch * sizeof(*ptrs));
	assert_true(bufs && blks && ptrs);
	rfs_status st = RFS_OK;
	for (uint64_t done = 0; done < spec->writes && !st;) {
		uint64_t n = spec->writes - done < batch ? spec->writes - done : batch;
		for (uint64_t i = 0; i < n; i++) {
			blks[i] = 1 + rng_next(&rng) % range;
			fill_random(bufs + i * spec->bs, spec->bs, &rng);
			ptrs[i] = bufs + i * spec->bs;
		}
		st = rfs_dev_write_batch(dev, n, blks, ptrs, &err);
		done += n;
	}
	struct rfs_dev_stats stats;
	rfs_dev_get_stats(dev, &stats);
	if (distinct)
		*distinct = stats.undo_blocks_saved;
	free(bufs);
	free(blks);
	free(ptrs);
	if (spec->end == END_ABANDON) {
		rfs_dev_abandon(dev);
		return st;
	}
	rfs_status cst = rfs_dev_close(dev, &err);
	return st ? st : cst;
}

static rfs_status apply(unsigned flags, struct undo_apply_result *res, struct rfs_error *err)
{
	rfs_error_clear(err);
	return undo_apply(undo_path, img_path, flags, NULL, NULL, res, err);
}

static void test_crc32c_known_answers(void **state)
{
	(void)state;
	assert_int_equal(undo_crc32c(0, "", 0), 0);
	assert_int_equal(undo_crc32c(0, "123456789", 9), 0xe3069283u);
	uint8_t buf[32];
	memset(buf, 0, 32);
	assert_int_equal(undo_crc32c(0, buf, 32), 0x8a9136aau);	/* RFC 3720 B.4 */
	memset(buf, 0xff, 32);
	assert_int_equal(undo_crc32c(0, buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(undo_crc32c(0, buf, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(undo_crc32c(0, buf, 32), 0x113fdb5cu);
	/* Continuation: crc(a then b) == crc(ab), at every split point. */
	const char *s = "The quick brown fox jumps over the lazy dog";
	uint32_t whole = undo_crc32c(0, s, strlen(s));
	assert_int_equal(whole, 0x22620404u);
	for (size_t k = 0; k <= strlen(s); k++)
		assert_int_equal(undo_crc32c(undo_crc32c(0, s, k), s + k, strlen(s) - k), whole);
}

static void test_transform(void **state)
{
	(void)state;
	uint8_t block[4096], copy[4096];
	memset(block, 0, sizeof(block));
	memcpy(block + 52, "ReIsEr2Fs", 10);
	memcpy(copy, block, sizeof(block));
	undo_transform(42, block, sizeof(block));
	assert_memory_not_equal(block, copy, sizeof(block));
	assert_null(memmem(block, sizeof(block), "ReIsEr", 6));
	undo_transform(42, block, sizeof(block));
	assert_memory_equal(block, copy, sizeof(block));
	/* Odd lengths too. */
	undo_transform(7, block, 13);
	undo_transform(7, block, 13);
	assert_memory_equal(block, copy, sizeof(block));
}

static void test_roundtrip_random_and_repeated(void **state)
{
	(void)state;
	const size_t len = 256 * 4096;
	uint8_t *orig = make_image(len, 4096, 11);
	uint64_t distinct;
	struct run_spec spec = { .bs = 4096, .seed = 5, .writes = 400, .range = 40 };
	assert_int_equal(run_writes(&spec, &distinct), RFS_OK);
	assert_true(distinct <= 40);	/* every block saved once despite 400 writes */
	assert_false(file_equals(img_path, orig, len));
	/* The undo file holds no plaintext magic though every block had one. */
	size_t ulen;
	uint8_t *u = read_file(undo_path, &ulen);
	assert_int_equal(ulen, 512 + distinct * (48 + 4096) + 48 + distinct * 12);
	assert_null(memmem(u, ulen, "ReIsEr", 6));
	free(u);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(UNDO_APPLY_DRY_RUN, &res, &err), RFS_OK);
	assert_int_equal(res.records, distinct);
	assert_int_equal(res.blocks_restored, 0);
	assert_false(file_equals(img_path, orig, len));
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_int_equal(res.state, UNDO_STATE_FINISHED);
	assert_int_equal(res.blocks_restored, distinct);
	assert_int_equal(res.identity_ranges, 1);
	assert_true(file_equals(img_path, orig, len));
	/* A second apply finds the originals already there. */
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_int_equal(res.already_original, distinct);
	assert_true(file_equals(img_path, orig, len));
	free(orig);
}

static void test_roundtrip_batches_blocksizes_offsets(void **state)
{
	(void)state;
	static const struct { uint32_t bs; uint64_t offset, batch; } cases[] = {
		{ 4096, 0, 7 }, { 1024, 512, 300 }, { 512, 4096 * 3, 1 }, { 65536, 1000, 3 },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const size_t len = (size_t)cases[c].offset + 64 * cases[c].bs + 100;
		uint8_t *orig = make_image(len, cases[c].bs, 100 + c);
		struct run_spec spec = { .bs = cases[c].bs, .offset = cases[c].offset, .seed = c,
					 .writes = 600, .range = 50, .batch = cases[c].batch };
		assert_int_equal(run_writes(&spec, NULL), RFS_OK);
		struct undo_apply_result res;
		struct rfs_error err;
		assert_int_equal(apply(0, &res, &err), RFS_OK);
		assert_int_equal(res.target.fs_offset, cases[c].offset);
		assert_true(file_equals(img_path, orig, len));
		unlink(undo_path);
		free(orig);
	}
}

/* Crash after every possible write: the stop hook fails write k after its
 * undo sync, the run is abandoned, and apply restores the original. */
static void test_crash_at_every_write(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	for (uint64_t k = 1; k <= 40; k++) {
		uint8_t *orig = make_image(len, 4096, 1000 + k);
		struct run_spec spec = { .bs = 4096, .seed = k, .writes = 40, .range = 25,
					 .batch = k % 3 == 0 ? 4 : 1, .stop = k, .end = END_ABANDON };
		assert_int_equal(run_writes(&spec, NULL), RFS_ERR_INJECTED);
		struct undo_apply_result res;
		struct rfs_error err;
		assert_int_equal(apply(0, &res, &err), RFS_OK);
		assert_int_equal(res.state, UNDO_STATE_OPEN);
		assert_true(file_equals(img_path, orig, len));
		unlink(undo_path);
		free(orig);
	}
}

/* A run killed mid-record: cut the unfinished file anywhere inside its last
 * record; apply ignores the torn record and still restores. */
static void test_torn_tail(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	uint8_t *orig = make_image(len, 4096, 77);
	struct run_spec spec = { .bs = 4096, .seed = 9, .writes = 10, .range = 60, .end = END_ABANDON };
	uint64_t distinct;
	assert_int_equal(run_writes(&spec, &distinct), RFS_OK);
	size_t ulen;
	uint8_t *u = read_file(undo_path, &ulen);
	assert_int_equal(ulen, 512 + distinct * (48 + 4096));
	/* The last record's block: pretend it was never overwritten. */
	uint64_t last_blk = 0;
	for (int i = 0; i < 8; i++)
		last_blk |= (uint64_t)u[ulen - 4096 - 48 + 16 + i] << (8 * i);
	uint8_t *img = read_file(img_path, &(size_t){ 0 });
	memcpy(img + last_blk * 4096, orig + last_blk * 4096, 4096);
	write_file(img_path, img, len);
	static const size_t cuts[] = { 1, 40, 48, 49, 2000, 4143 };
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		write_file(undo_path, u, ulen - cuts[c]);
		struct undo_apply_result res;
		struct rfs_error err;
		assert_int_equal(apply(UNDO_APPLY_DRY_RUN, &res, &err), RFS_OK);
		assert_int_equal(res.records, distinct - 1);
		assert_int_equal(res.torn_bytes, 4096 + 48 - cuts[c]);
	}
	/* Garbage instead of a torn record is the same case. */
	memset(u + ulen - 100, 0xa5, 100);
	write_file(undo_path, u, ulen);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_true(file_equals(img_path, orig, len));
	free(u);
	free(img);
	free(orig);
}

/* Batches of 8 records synced together: a bad record inside the LAST batch
 * (power loss before its sync) is a torn tail even with valid records after
 * it; the same damage in an earlier batch is corruption. */
static void test_torn_inside_last_batch(void **state)
{
	(void)state;
	const size_t len = 256 * 4096, rec = 48 + 4096;
	uint8_t *orig = make_image(len, 4096, 78);
	/* 3 batches of 8 distinct blocks: the first seed that gives no repeat. */
	struct run_spec spec = { .bs = 4096, .seed = 12, .writes = 24, .range = 250, .batch = 8,
				 .end = END_ABANDON };
	uint64_t distinct = 0;
	for (; distinct != 24 && spec.seed < 100; spec.seed++) {
		write_file(img_path, orig, len);
		unlink(undo_path);
		assert_int_equal(run_writes(&spec, &distinct), RFS_OK);
	}
	assert_int_equal(distinct, 24);
	size_t ulen;
	uint8_t *u = read_file(undo_path, &ulen);
	uint8_t *img = read_file(img_path, &(size_t){ 0 });
	/* Blocks of records 19..23 go back to their originals, as if the last
	 * batch's writes never happened; record 19's payload is damaged. */
	for (size_t r = 19; r < 24; r++) {
		uint64_t blk = 0;
		for (int i = 0; i < 8; i++)
			blk |= (uint64_t)u[512 + r * rec + 16 + i] << (8 * i);
		memcpy(img + blk * 4096, orig + blk * 4096, 4096);
	}
	write_file(img_path, img, len);
	u[512 + 19 * rec + 48 + 10] ^= 0xff;
	write_file(undo_path, u, ulen);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(UNDO_APPLY_DRY_RUN, &res, &err), RFS_OK);
	assert_int_equal(res.records, 19);
	assert_int_equal(res.torn_bytes, 5 * rec);
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_true(file_equals(img_path, orig, len));
	/* Damage in the middle batch: refused. */
	u[512 + 19 * rec + 48 + 10] ^= 0xff;
	u[512 + 12 * rec + 48 + 10] ^= 0xff;
	write_file(undo_path, u, ulen);
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	free(u);
	free(img);
	free(orig);
}

/* Killed inside undo_finish: the final record is there, the header is still
 * "open".  The file is applicable. */
static void test_killed_inside_finish(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	uint8_t *orig = make_image(len, 4096, 79);
	struct run_spec spec = { .bs = 4096, .seed = 13, .writes = 30, .range = 40 };
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	size_t ulen;
	uint8_t *u = read_file(undo_path, &ulen);
	memset(u + 448, 0, 512 - 448);	/* state open, finished part empty */
	u[448] = UNDO_STATE_OPEN;
	write_file(undo_path, u, ulen);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_int_equal(res.state, UNDO_STATE_OPEN);
	assert_int_equal(res.torn_bytes, 0);
	assert_true(file_equals(img_path, orig, len));
	/* ... and with the final record torn as well. */
	write_file(undo_path, u, ulen - 5);
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_true(res.torn_bytes > 0);
	free(u);
	free(orig);
}

/* Expects apply to refuse (RFS_ERR_UNDO) and the image to be unchanged. */
static void expect_refused(const uint8_t *undo, size_t ulen, const uint8_t *img, size_t len)
{
	write_file(undo_path, undo, ulen);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	assert_int_equal(err.status, RFS_ERR_UNDO);
	assert_true(file_equals(img_path, img, len));
}

static void test_corrupt_undo_refused(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	uint8_t *orig = make_image(len, 4096, 5);
	struct run_spec spec = { .bs = 4096, .seed = 3, .writes = 30, .range = 20 };
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	size_t ulen, ilen;
	uint8_t *u = read_file(undo_path, &ulen);
	uint8_t *repaired = read_file(img_path, &ilen);
	/* Flip one bit at many places: header, identity, record heads, payloads,
	 * the final record.  Each must be refused. */
	size_t spots[] = { 0, 9, 16, 24, 33, 41, 64, 130, 384, 448, 456, 470, 508,
			   512, 512 + 20, 512 + 44, 512 + 48, 512 + 3000, 512 + 4144 + 4000,
			   ulen - 60, ulen - 48, ulen - 1 };
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		u[spots[i]] ^= 0x10;
		expect_refused(u, ulen, repaired, len);
		u[spots[i]] ^= 0x10;
	}
	expect_refused(u, 100, repaired, len);		/* truncated header */
	expect_refused(u, 511, repaired, len);
	expect_refused(u, ulen - 1, repaired, len);	/* finished file cut short */
	expect_refused(u, 512 + 4144 * 3, repaired, len);
	uint8_t *longer = malloc(ulen + 10);
	memcpy(longer, u, ulen);
	memset(longer + ulen, 0, 10);
	expect_refused(longer, ulen + 10, repaired, len);	/* trailing bytes */
	free(longer);
	/* The intact file still works. */
	write_file(undo_path, u, ulen);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_true(file_equals(img_path, orig, len));
	free(u);
	free(repaired);
	free(orig);
}

static void test_unfinished_corruption_refused(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	free(make_image(len, 4096, 6));
	struct run_spec spec = { .bs = 4096, .seed = 4, .writes = 20, .range = 60, .end = END_ABANDON };
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	size_t ulen, ilen;
	uint8_t *u = read_file(undo_path, &ulen);
	uint8_t *repaired = read_file(img_path, &ilen);
	/* A bad record that is not at the tail is corruption, not a torn write. */
	u[512 + 4144 + 100] ^= 1;
	expect_refused(u, ulen, repaired, len);
	u[512 + 4144 + 100] ^= 1;
	/* An unfinished header must have nothing in its finished part. */
	u[470] = 1;
	expect_refused(u, ulen, repaired, len);
	free(u);
	free(repaired);
}

static void test_wrong_image_refused(void **state)
{
	(void)state;
	const size_t len = 64 * 4096;
	uint8_t *orig = make_image(len, 4096, 8);
	struct run_spec spec = { .bs = 4096, .seed = 8, .writes = 30, .range = 20 };
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	size_t ilen;
	uint8_t *repaired = read_file(img_path, &ilen);
	/* Same size, other identity bytes. */
	uint8_t *other = malloc(len);
	memcpy(other, repaired, len);
	other[10] ^= 0xff;
	write_file(img_path, other, len);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	assert_non_null(strstr(err.msg, "wrong image"));
	assert_true(file_equals(img_path, other, len));
	assert_int_equal(apply(UNDO_APPLY_FORCE, &res, &err), RFS_ERR_UNDO);
	/* Other size. */
	write_file(img_path, repaired, len - 4096);
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	assert_true(file_equals(img_path, repaired, len - 4096));
	/* Same identity, but blocks changed after the run: refused unless forced. */
	size_t ulen;
	uint8_t *u = read_file(undo_path, &ulen);
	uint64_t first_saved = 0;	/* block of the first record */
	for (int i = 0; i < 8; i++)
		first_saved |= (uint64_t)u[512 + 16 + i] << (8 * i);
	free(u);
	memcpy(other, repaired, len);
	other[first_saved * 4096 + 7] ^= 1;
	write_file(img_path, other, len);
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	assert_true(file_equals(img_path, other, len));
	assert_int_equal(apply(UNDO_APPLY_FORCE, &res, &err), RFS_OK);
	assert_true(res.forced);
	free(other);
	free(repaired);
	free(orig);
}

static void test_undo_file_states(void **state)
{
	(void)state;
	const size_t len = 16 * 4096;
	uint8_t *orig = make_image(len, 4096, 9);
	/* Opened and abandoned before any write: empty file, state creating. */
	struct run_spec spec = { .bs = 4096, .writes = 0, .end = END_ABANDON };
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	struct undo_apply_result res;
	struct rfs_error err;
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_int_equal(res.state, UNDO_STATE_CREATING);
	/* An existing undo file is never overwritten. */
	struct rfs_dev_options o = { .path = img_path, .undo_path = undo_path, .flags = RFS_DEV_WRITE };
	struct rfs_dev *dev;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_ERR_BUSY);
	unlink(undo_path);
	/* Closed without writes: finished with no records. */
	spec.end = END_CLOSE;
	assert_int_equal(run_writes(&spec, NULL), RFS_OK);
	assert_int_equal(apply(0, &res, &err), RFS_OK);
	assert_int_equal(res.state, UNDO_STATE_FINISHED);
	assert_int_equal(res.records, 0);
	assert_true(file_equals(img_path, orig, len));
	/* Not an undo file at all. */
	write_file(undo_path, orig, 4096);
	assert_int_equal(apply(0, &res, &err), RFS_ERR_UNDO);
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_known_answers),
		cmocka_unit_test(test_transform),
		cmocka_unit_test_setup_teardown(test_roundtrip_random_and_repeated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_batches_blocksizes_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_at_every_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_inside_last_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_inside_finish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_undo_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unfinished_corruption_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_image_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undo_file_states, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_copy_sparse.c - the --output copy (src/cli_write.c cli_copy_sparse):
 * byte-identical to its source, holes kept as holes (skipped with SEEK_DATA),
 * all-zero MiB runs of data turned into holes, a trailing hole kept as the
 * file's length, and an existing destination refused.  The same for the copy
 * on a thread (cli_copy_start / cli_copy_finish, rebuild --output), plus its
 * refusal before any thread starts, and a cancel that stops and joins.  Where
 * /tmp has reflinks (btrfs, XFS) the copy is one and shares every block, so
 * only the bytes are compared; tests/integration/output_reflink.sh tests that
 * path on an XFS of its own. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/cli_common.h"

static char dir[] = "/tmp/rfsck-copy-XXXXXX";

static void write_at(int fd, off_t pos, const void *p, size_t n)
{
	assert_int_equal(pwrite(fd, p, n, pos), (ssize_t)n);
}

static uint8_t *slurp(const char *path, off_t *len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *b = malloc((size_t)st.st_size + 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = st.st_size;
	return b;
}

/* A 64 MiB source: hole 0..8 MiB, 3 MiB data, 2 MiB of written zeros,
 * 12345 bytes of data, hole to 64 MiB. */
static void make_source(const char *src)
{
	int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	enum { MIB = 1 << 20 };
	uint8_t *data = malloc(3 * MIB), *zero = calloc(1, 2 * MIB);
	assert_non_null(data);
	assert_non_null(zero);
	for (size_t i = 0; i < 3 * MIB; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13) | 1;
	write_at(fd, 8 * MIB, data, 3 * MIB);
	write_at(fd, 11 * MIB, zero, 2 * MIB);
	write_at(fd, 13 * MIB, data, 12345);
	assert_int_equal(ftruncate(fd, 64 * MIB), 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);
	free(data);
	free(zero);
}

static bool cloned;   /* what the last copy said */

/* dst holds what src holds, with the zeros as holes (unless it is a reflink,
 * which shares the source's blocks, zeros included). */
static void assert_sparse_equal(const char *src, const char *dst)
{
	enum { MIB = 1 << 20 };
	off_t ls, ld;
	uint8_t *a = slurp(src, &ls), *b = slurp(dst, &ld);
	assert_int_equal(ls, 64 * MIB);
	assert_int_equal(ld, ls);
	assert_memory_equal(a, b, (size_t)ls);
	if (cloned) {
		free(a);
		free(b);
		return;
	}
	struct stat ss, sd;
	assert_int_equal(stat(src, &ss), 0);
	assert_int_equal(stat(dst, &sd), 0);
	/* the 2 MiB of zeros became a hole: at least 1 MiB less allocated
	 * (file systems may allocate around the edges) */
	assert_true((sd.st_blocks + 2048) <= ss.st_blocks);
	assert_true(sd.st_blocks * 512 < 8 * MIB);
	free(a);
	free(b);
}

static char src[64], dst[64];

/* Every test starts from a fresh source and no destination. */
static int setup(void **state)
{
	(void)state;
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dst, sizeof(dst), "%s/dst", dir);
	make_source(src);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(src);
	unlink(dst);
	return 0;
}

static void test_sparse_copy(void **state)
{
	(void)state;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(cli_copy_sparse(src, dst, &cloned, &err), RFS_OK);
	assert_sparse_equal(src, dst);
	/* the destination must not exist */
	rfs_error_clear(&err);
	assert_int_not_equal(cli_copy_sparse(src, dst, &cloned, &err), RFS_OK);
}

static void test_copy_thread(void **state)
{
	(void)state;
	struct rfs_error err;
	rfs_error_clear(&err);
	struct cli_copy_job *job = NULL;
	assert_int_equal(cli_copy_start(src, dst, &job, &err), RFS_OK);
	assert_non_null(job);
	/* dst exists as soon as start returns: a second copy is refused at once,
	 * with no job */
	struct cli_copy_job *other = job;   /* non-NULL: start must clear it */
	assert_int_not_equal(cli_copy_start(src, dst, &other, &err), RFS_OK);
	assert_null(other);
	assert_int_equal(err.status, RFS_ERR_IO);
	rfs_error_clear(&err);
	assert_int_equal(cli_copy_finish(job, false, &cloned, &err), RFS_OK);
	assert_sparse_equal(src, dst);
	unlink(dst);

	/* a missing source: refused before any thread, nothing created */
	char missing[80];
	snprintf(missing, sizeof(missing), "%s/none", dir);
	assert_int_not_equal(cli_copy_start(missing, dst, &job, &err), RFS_OK);
	assert_null(job);
	assert_int_equal(access(dst, F_OK), -1);

	/* cancelled: joins, says OK, leaves at most the source's length */
	rfs_error_clear(&err);
	assert_int_equal(cli_copy_start(src, dst, &job, &err), RFS_OK);
	assert_int_equal(cli_copy_finish(job, true, NULL, &err), RFS_OK);
	struct stat sd;
	assert_int_equal(stat(dst, &sd), 0);
	assert_true(sd.st_size <= 64 * (1 << 20));
	/* a NULL job finishes at once */
	assert_int_equal(cli_copy_finish(NULL, false, &cloned, &err), RFS_OK);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sparse_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_thread, setup, teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return failed;
}

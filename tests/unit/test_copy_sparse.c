/* test_copy_sparse.c - the --output copy (src/cli_write.c cli_copy_sparse):
 * byte-identical to its source, holes kept as holes (skipped with SEEK_DATA),
 * all-zero MiB runs of data turned into holes, a trailing hole kept as the
 * file's length, and an existing destination refused. */
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

static void test_sparse_copy(void **state)
{
	(void)state;
	char src[64], dst[64];
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dst, sizeof(dst), "%s/dst", dir);
	int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	enum { MIB = 1 << 20 };
	uint8_t *data = malloc(3 * MIB), *zero = calloc(1, 2 * MIB);
	assert_non_null(data);
	assert_non_null(zero);
	for (size_t i = 0; i < 3 * MIB; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13) | 1;
	/* hole 0..8 MiB, 3 MiB data, 2 MiB of written zeros, 12345 bytes of
	 * data, hole to 64 MiB */
	write_at(fd, 8 * MIB, data, 3 * MIB);
	write_at(fd, 11 * MIB, zero, 2 * MIB);
	write_at(fd, 13 * MIB, data, 12345);
	assert_int_equal(ftruncate(fd, 64 * MIB), 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);

	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(cli_copy_sparse(src, dst, &err), RFS_OK);
	off_t ls, ld;
	uint8_t *a = slurp(src, &ls), *b = slurp(dst, &ld);
	assert_int_equal(ls, 64 * MIB);
	assert_int_equal(ld, ls);
	assert_memory_equal(a, b, (size_t)ls);
	struct stat ss, sd;
	assert_int_equal(stat(src, &ss), 0);
	assert_int_equal(stat(dst, &sd), 0);
	/* the 2 MiB of zeros became a hole: at least 1 MiB less allocated
	 * (file systems may allocate around the edges) */
	assert_true((sd.st_blocks + 2048) <= ss.st_blocks);
	assert_true(sd.st_blocks * 512 < 8 * MIB);

	/* the destination must not exist */
	rfs_error_clear(&err);
	assert_int_not_equal(cli_copy_sparse(src, dst, &err), RFS_OK);
	free(a);
	free(b);
	free(data);
	free(zero);
	unlink(src);
	unlink(dst);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_sparse_copy) };
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return failed;
}

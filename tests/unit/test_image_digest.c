/* test_image_digest.c - salvage's digest of a whole image file
 * (src/image_digest.c): equal to the SHA-256 of every byte as read(2)
 * returns them, for a sparse file with a hole at its start, holes between
 * extents, and a trailing hole, holding more data than the helper thread may
 * read ahead (so it waits for the hasher); for an empty file; for a
 * character device (no reader ahead; read until end of file); and a missing
 * file is an error with its name, not a digest. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/image_digest.h"

enum { MIB = 1 << 20 };

static char dir[] = "/tmp/rfsck-digest-XXXXXX";

/* The reference: read(2) from the start, holes read as zeros. */
static void reference_hex(const char *path, char hex[RFS_SHA256_HEX_LEN + 1])
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(MIB);
	assert_non_null(buf);
	struct rfs_sha256 c;
	rfs_sha256_init(&c);
	ssize_t n;
	while ((n = read(fd, buf, MIB)) > 0)
		rfs_sha256_update(&c, buf, (size_t)n);
	assert_int_equal(n, 0);
	uint8_t d[RFS_SHA256_LEN];
	rfs_sha256_final(&c, d);
	rfs_sha256_hex(d, hex);
	free(buf);
	close(fd);
}

/* 12 extents of 16 MiB (192 MiB of data, beyond the 128 MiB read ahead)
 * after a 5 MiB hole, 7 MiB holes between them, and a 40 MiB hole at the
 * end; the last extent is 12345 bytes short of its MiB. */
static void make_sparse(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	uint8_t *data = malloc(16 * MIB);
	assert_non_null(data);
	off_t pos = 5 * MIB;
	for (int e = 0; e < 12; e++) {
		for (size_t i = 0; i < 16 * MIB; i++)
			data[i] = (uint8_t)((i + (size_t)e * 977) * 2654435761u >> 11);
		size_t len = e == 11 ? 16 * MIB - 12345 : 16 * MIB;
		assert_int_equal(pwrite(fd, data, len, pos), (ssize_t)len);
		pos += (off_t)len + 7 * MIB;
	}
	assert_int_equal(ftruncate(fd, pos + 40 * MIB), 0);
	close(fd);
	free(data);
}

static void digest_sparse_file(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "%s/sparse.img", dir);
	make_sparse(path);
	char want[RFS_SHA256_HEX_LEN + 1], got[RFS_SHA256_HEX_LEN + 1];
	reference_hex(path, want);
	struct rfs_error e;
	rfs_error_clear(&e);
	assert_int_equal(rfs_image_digest(path, got, &e), RFS_OK);
	assert_string_equal(got, want);
	/* twice: the second run reads what the first left in the cache */
	memset(got, 0, sizeof(got));
	assert_int_equal(rfs_image_digest(path, got, &e), RFS_OK);
	assert_string_equal(got, want);
	unlink(path);
}

static void digest_empty_file(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "%s/empty.img", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	char got[RFS_SHA256_HEX_LEN + 1];
	struct rfs_error e;
	rfs_error_clear(&e);
	assert_int_equal(rfs_image_digest(path, got, &e), RFS_OK);
	assert_string_equal(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	unlink(path);
}

static void digest_character_device(void **state)
{
	(void)state;
	char got[RFS_SHA256_HEX_LEN + 1];
	struct rfs_error e;
	rfs_error_clear(&e);
	assert_int_equal(rfs_image_digest("/dev/null", got, &e), RFS_OK);
	assert_string_equal(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void digest_missing_file(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "%s/absent.img", dir);
	char got[RFS_SHA256_HEX_LEN + 1];
	struct rfs_error e;
	rfs_error_clear(&e);
	assert_int_not_equal(rfs_image_digest(path, got, &e), RFS_OK);
	char line[512];
	rfs_error_format(&e, line, sizeof(line));
	assert_non_null(strstr(line, "absent.img"));
	assert_non_null(strstr(line, strerror(ENOENT)));
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(digest_sparse_file),
		cmocka_unit_test(digest_empty_file),
		cmocka_unit_test(digest_character_device),
		cmocka_unit_test(digest_missing_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * cli_write.c - what the writing commands (fix, rebuild) share: the sparse
 * copy behind --output, the confirmation prompt, and the superblock identity
 * that no repair may change.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"

/* Copies src to dst, leaving all-zero 64 KiB runs as holes. */
rfs_status cli_copy_sparse(const char *src, const char *dst, struct rfs_error *err)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening %s", src);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		int e = errno;
		close(in);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "creating %s (it must not exist)", dst);
	}
	enum { CHUNK = 65536 };
	static uint8_t buf[CHUNK], zero[CHUNK];
	rfs_status st = RFS_OK;
	off_t pos = 0;
	for (;;) {
		ssize_t n = read(in, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "reading %s", src);
			break;
		}
		if (n == 0)
			break;
		if (n == CHUNK && memcmp(buf, zero, CHUNK) == 0) {
			pos += n;
			continue;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, buf + done, (size_t)(n - done), pos + done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "writing %s", dst);
				break;
			}
			done += w;
		}
		if (st)
			break;
		pos += n;
	}
	if (!st && ftruncate(out, pos) != 0)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "sizing %s", dst);
	if (!st && fsync(out) != 0)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "syncing %s", dst);
	close(in);
	if (close(out) != 0 && !st)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing %s", dst);
	return st;
}

/* Marks the superblock's identity immutable (and records it in the undo log):
 * block count, magic and UUID, which no repair changes. */
rfs_status cli_set_identity(struct rfs_fs *fs, struct rfs_error *err)
{
	uint64_t sb = fs->sb.sb_byte_offset;
	rfs_status st = rfs_dev_set_identity(fs->dev, sb + SB_BLOCK_COUNT, 4, err);
	if (!st)
		st = rfs_dev_set_identity(fs->dev, sb + SB_MAGIC, SB_MAGIC_LEN, err);
	if (!st && fs->sb.format == RFS_FORMAT_36)
		st = rfs_dev_set_identity(fs->dev, sb + SB_UUID, 16, err);
	return st;
}

bool cli_confirm(const char *cmd, const char *question, bool yes)
{
	if (yes)
		return true;
	if (!isatty(STDIN_FILENO)) {
		fprintf(stderr, "rfsck %s: not confirmed: use --yes, or --dry-run to see what it "
				"would do\n", cmd);
		return false;
	}
	fprintf(stderr, "%s [y/N] ", question);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

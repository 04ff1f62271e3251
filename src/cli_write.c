/*
 * cli_write.c - what the writing commands (fix, rebuild) share: the sparse
 * copy behind --output, the confirmation prompt, and the superblock identity
 * that no repair may change.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli_common.h"

bool cli_next_data(int fd, off_t pos, bool *seekable, off_t *start, off_t *end)
{
	if (*seekable) {
		off_t d = lseek(fd, pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			return false;
		if (d >= 0) {
			off_t h = lseek(fd, d, SEEK_HOLE);
			if (h > d) {
				*start = d;
				*end = h;
				return true;
			}
		}
		*seekable = false;
	}
	*start = pos;
	*end = -1;   /* read until read() says end of file */
	return true;
}

/* The two ends of a copy, opened before any byte moves, so that a
 * destination that exists is refused before the caller starts its work. */
static rfs_status copy_open(const char *src, const char *dst, int *in, int *out,
			    struct rfs_error *err)
{
	*in = open(src, O_RDONLY | O_CLOEXEC);
	if (*in < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening %s", src);
	*out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (*out < 0) {
		int e = errno;
		close(*in);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "creating %s (it must not exist)", dst);
	}
	return RFS_OK;
}

/* Copies in to out.  Where the file system can (btrfs, XFS with reflink, and
 * others with FICLONE), out becomes a reflink of in: it shares in's extents
 * until either is written, so the copy costs neither time nor space, and
 * *cloned is set.  Elsewhere (ext4, a block device, two file systems) the
 * ioctl says no and out is written as a sparse file: the source's holes are
 * skipped without reading them (SEEK_DATA/SEEK_HOLE), and all-zero 1 MiB
 * runs of its data become holes too.  A 32 GiB benchmark volume holding 8 GiB is read as
 * 8 GiB (docs/benchmarks.md).  Closes both.  Not synced here: the caller
 * opens dst as its target and the device close syncs it (and deletes it on
 * failure), so the kernel writes the copy back while the caller already
 * works, instead of the caller waiting for the disk twice.  Stops with
 * RFS_ERR_CANCELLED between two chunks once *cancel is set. */
static rfs_status copy_fds(int in, int out, const char *src, const char *dst,
			   const atomic_bool *cancel, bool *cloned, struct rfs_error *err)
{
	enum { CHUNK = 1 << 20 };
	*cloned = false;
	if (ioctl(out, FICLONE, in) == 0) {
		*cloned = true;
		close(in);
		return close(out) == 0 ? RFS_OK
				       : rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing %s", dst);
	}
	uint8_t *buf = malloc(CHUNK), *zero = calloc(1, CHUNK);
	rfs_status st = RFS_OK;
	if (!buf || !zero)
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "copy buffers");
	off_t size = lseek(in, 0, SEEK_END);   /* -1 for some devices: then read to EOF */
	(void)posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);   /* a hint: larger readahead */
	bool seekable = size > 0;
	off_t pos = 0, start, end;
	while (!st && cli_next_data(in, pos, &seekable, &start, &end)) {
		pos = start;
		bool eof = false;
		while (!st && !eof && (end < 0 || pos < end)) {
			if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
				st = rfs_error_set(err, RFS_ERR_CANCELLED, RFS_NO_BLOCK,
						   "copy to %s stopped", dst);
				break;
			}
			size_t want = end < 0 || end - pos > CHUNK ? CHUNK : (size_t)(end - pos);
			ssize_t n = pread(in, buf, want, pos);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "reading %s", src);
				break;
			}
			if (n == 0) {
				eof = true;
				break;
			}
			if (memcmp(buf, zero, (size_t)n) != 0) {
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
			}
			pos += n;
		}
		if (eof || end < 0)
			break;
	}
	if (!st && size > pos)
		pos = size;   /* a trailing hole */
	if (!st && ftruncate(out, pos) != 0)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "sizing %s", dst);
	free(buf);
	free(zero);
	close(in);
	if (close(out) != 0 && !st)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing %s", dst);
	return st;
}

rfs_status cli_copy_sparse(const char *src, const char *dst, bool *cloned, struct rfs_error *err)
{
	int in, out;
	bool c = false;
	rfs_status st = copy_open(src, dst, &in, &out, err);
	if (!st)
		st = copy_fds(in, out, src, dst, NULL, &c, err);
	if (cloned)
		*cloned = c;
	return st;
}

struct cli_copy_job {
	pthread_t thread;
	int in, out;
	const char *src, *dst;
	atomic_bool cancel;
	bool cloned;
	rfs_status st;
	struct rfs_error err;
};

static void *copy_thread(void *arg)
{
	struct cli_copy_job *j = arg;
	pthread_setname_np(pthread_self(), "rfsck-copy");
	j->st = copy_fds(j->in, j->out, j->src, j->dst, &j->cancel, &j->cloned, &j->err);
	return NULL;
}

rfs_status cli_copy_start(const char *src, const char *dst, struct cli_copy_job **job,
			  struct rfs_error *err)
{
	*job = NULL;
	struct cli_copy_job *j = calloc(1, sizeof(*j));
	if (!j)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "copy job");
	j->src = src;
	j->dst = dst;
	atomic_init(&j->cancel, false);
	rfs_error_clear(&j->err);
	rfs_status st = copy_open(src, dst, &j->in, &j->out, err);
	if (st) {
		free(j);
		return st;
	}
	int e = pthread_create(&j->thread, NULL, copy_thread, j);
	if (e) {
		close(j->in);
		close(j->out);
		unlink(dst);
		free(j);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "starting the copy to %s", dst);
	}
	*job = j;
	return RFS_OK;
}

rfs_status cli_copy_finish(struct cli_copy_job *job, bool cancel, bool *cloned,
			   struct rfs_error *err)
{
	if (cloned)
		*cloned = false;
	if (!job)
		return RFS_OK;
	if (cancel)
		atomic_store(&job->cancel, true);
	pthread_join(job->thread, NULL);
	if (cloned)
		*cloned = job->cloned;
	rfs_status st = job->st;
	if (st && !cancel)
		*err = job->err;
	free(job);
	return cancel ? RFS_OK : st;
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

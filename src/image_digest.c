/*
 * image_digest.c - SHA-256 of a whole image file (image_digest.h).
 *
 * The hash runs at the speed of one core (1.6 GB/s with SHA-NI) and the
 * reads at the speed of the disk.  Hashed in line, a cold sparse image costs
 * the read time of its data plus the hash time of its holes: bench-32g
 * (8.4 GiB of data in 32 GiB) took 32-37 s cold against 22 s warm.  So a
 * helper thread reads the data extents ahead of the hasher into the page
 * cache, at most READ_AHEAD bytes of data ahead, while the hasher works on
 * the zeros of the holes between them; the hasher then reads from memory.
 * The helper only warms the cache: what is hashed is always what the hasher
 * itself reads, so the helper failing, falling behind or being evicted
 * changes the time, never the digest.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "image_digest.h"

enum {
	CHUNK = 1 << 20,
	READ_AHEAD = 128 << 20,   /* bytes of data, holes not counted */
};

/* The reader ahead and the hasher count the same data bytes in the same
 * order (extents in file order), so "ahead" is read - hashed. */
struct reader_ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t moved;
	int fd;                   /* its own open file: its own SEEK_DATA walk */
	uint64_t hashed;          /* data bytes the hasher has taken (lock) */
	bool stop;                /* the hasher is done (lock) */
	uint8_t *buf;
};

/* Waits until the reader may read n more bytes; false when it should stop. */
static bool may_read(struct reader_ahead *ra, uint64_t read, size_t n)
{
	pthread_mutex_lock(&ra->lock);
	while (!ra->stop && read + n > ra->hashed + READ_AHEAD)
		pthread_cond_wait(&ra->moved, &ra->lock);
	bool go = !ra->stop;
	pthread_mutex_unlock(&ra->lock);
	return go;
}

static void *read_ahead_thread(void *arg)
{
	struct reader_ahead *ra = arg;
	pthread_setname_np(pthread_self(), "rfsck-readahead");
	struct stat sb;
	bool seekable = fstat(ra->fd, &sb) == 0 && S_ISREG(sb.st_mode);
	off_t pos = 0, start, end;
	uint64_t read_bytes = 0;
	while (cli_next_data(ra->fd, pos, &seekable, &start, &end)) {
		pos = start;
		while (end < 0 || pos < end) {
			size_t want = end < 0 || end - pos > CHUNK ? CHUNK : (size_t)(end - pos);
			if (!may_read(ra, read_bytes, want))
				return NULL;
			ssize_t n = pread(ra->fd, ra->buf, want, pos);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)   /* an error or the end: the hasher meets it itself */
				return NULL;
			pos += n;
			read_bytes += (uint64_t)n;
		}
	}
	return NULL;
}

/* Starts the reader on the file the hasher has open (sb); false (and
 * nothing to stop) when it cannot run, which only costs the overlap.  Only
 * for files that pread reads without consuming: a FIFO opened twice would
 * hand half its bytes to the reader, and its open would wait for a writer.
 * O_NONBLOCK, and the same inode or nothing, keep a path replaced meanwhile
 * from doing either. */
static bool reader_start(struct reader_ahead *ra, const char *path, const struct stat *sb)
{
	if (!S_ISREG(sb->st_mode) && !S_ISBLK(sb->st_mode))
		return false;
	ra->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (ra->fd < 0)
		return false;
	struct stat rsb;
	if (fstat(ra->fd, &rsb) || rsb.st_dev != sb->st_dev || rsb.st_ino != sb->st_ino) {
		close(ra->fd);
		return false;
	}
	ra->buf = malloc(CHUNK);
	ra->hashed = 0;
	ra->stop = false;
	if (ra->buf && pthread_mutex_init(&ra->lock, NULL) == 0) {
		if (pthread_cond_init(&ra->moved, NULL) == 0) {
			if (pthread_create(&ra->thread, NULL, read_ahead_thread, ra) == 0)
				return true;
			pthread_cond_destroy(&ra->moved);
		}
		pthread_mutex_destroy(&ra->lock);
	}
	free(ra->buf);
	close(ra->fd);
	return false;
}

static void reader_hashed(struct reader_ahead *ra, size_t n)
{
	pthread_mutex_lock(&ra->lock);
	ra->hashed += n;
	pthread_cond_signal(&ra->moved);
	pthread_mutex_unlock(&ra->lock);
}

static void reader_stop(struct reader_ahead *ra)
{
	pthread_mutex_lock(&ra->lock);
	ra->stop = true;
	pthread_cond_signal(&ra->moved);
	pthread_mutex_unlock(&ra->lock);
	pthread_join(ra->thread, NULL);
	pthread_cond_destroy(&ra->moved);
	pthread_mutex_destroy(&ra->lock);
	free(ra->buf);
	close(ra->fd);
}

/* Hashes the zeros of a hole [pos, end); returns end (pos when end <= pos). */
static off_t hash_zeros(struct rfs_sha256 *c, off_t pos, off_t end)
{
	if (end <= pos)
		return pos;
	rfs_sha256_zeros(c, (uint64_t)(end - pos));
	return end;
}

rfs_status rfs_image_digest(const char *path, char hex[RFS_SHA256_HEX_LEN + 1],
			    struct rfs_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "%s: cannot open for hashing", path);
	uint8_t *buf = malloc(CHUNK);
	if (!buf) {
		close(fd);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "hash buffer");
	}
	struct stat sb;
	bool have_sb = fstat(fd, &sb) == 0;
	bool seekable = have_sb && S_ISREG(sb.st_mode);
	struct reader_ahead ra;
	bool ahead = have_sb && reader_start(&ra, path, &sb);
	struct rfs_sha256 c;
	rfs_sha256_init(&c);
	rfs_status st = RFS_OK;
	off_t pos = 0, start, end;
	bool eof = false;
	while (!st && !eof && cli_next_data(fd, pos, &seekable, &start, &end)) {
		pos = hash_zeros(&c, pos, start);   /* the hole before it */
		while (!st && (end < 0 || pos < end)) {
			size_t want = end < 0 || end - pos > CHUNK ? CHUNK : (size_t)(end - pos);
			ssize_t n = pread(fd, buf, want, pos);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				st = rfs_error_sys(err, errno, RFS_NO_BLOCK,
						   "%s: read failed while hashing", path);
				break;
			}
			if (n == 0) {   /* end of file (inside an extent: it shrank) */
				eof = true;
				break;
			}
			rfs_sha256_update(&c, buf, (size_t)n);
			pos += n;
			if (ahead)
				reader_hashed(&ra, (size_t)n);
		}
	}
	/* a trailing hole: SEEK_DATA says ENXIO after the last extent */
	if (!st && seekable && fstat(fd, &sb) == 0)
		pos = hash_zeros(&c, pos, sb.st_size);
	if (ahead)
		reader_stop(&ra);
	free(buf);
	close(fd);
	if (!st) {
		uint8_t d[RFS_SHA256_LEN];
		rfs_sha256_final(&c, d);
		rfs_sha256_hex(d, hex);
	}
	return st;
}

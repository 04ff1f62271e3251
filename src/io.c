/*
 * io.c - struct rfs_dev: block reads and writes on an image file or block
 * device, with a block cache, the dry-run/replay overlay (io_overlay.c), the
 * ddrescue bad-region map (mapfile.c), the undo log (io_undo.c) and the
 * mounted-image refusal (io_mount.c).
 * The invariants (1)..(6) are those of include/rfs/io.h; how this file keeps
 * them:
 *  (1) open() gets O_RDWR only with RFS_DEV_WRITE, which excludes DRY_RUN.
 *  (2) write_batch sends dry-run writes to the overlay and returns.
 *  (3) write_batch calls undo_save_batch (which syncs) before any pwrite.
 *  (4) pread_full reports how much was read; any shortfall is RFS_ERR_SHORT
 *      or RFS_ERR_IO naming the block, and the buffer is never used.
 *  (5) check_range runs before every read and write.
 *  (6) dev->sticky holds the first write-path error; write_batch returns it.
 * The cache holds only bytes equal to the file's (writes are write-through and
 * update it), so it never needs flushing.  Leaves behind: nothing after close
 * or abandon except the file contents and the undo file.
 */
#include "rfs/io.h"
#include "rfs/u64set.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_mount.h"
#include "io_overlay.h"
#include "rfs/mapfile.h"
#include "rfs/undo.h"

#define DEFAULT_BLOCK_SIZE 4096u
#define CACHE_WAYS 4u
#define CACHE_BYTES (2u << 20)
/* Largest single pread; Linux transfers at most 0x7ffff000 bytes per call. */
#define MAX_PREAD (1u << 30)

struct identity_range {
	uint64_t off;
	uint32_t len;
	uint8_t bytes[RFS_UNDO_MAX_IDENTITY_BYTES];
};

struct rfs_dev {
	int fd;
	unsigned flags;
	uint64_t offset;              /* filesystem start in the file */
	uint64_t size;                /* bytes from offset to the end */
	uint32_t bs;
	/* Set-associative cache: set s holds ways s*CACHE_WAYS .. +CACHE_WAYS-1. */
	uint32_t cache_sets;
	uint8_t *cache_data;          /* cache_sets * CACHE_WAYS blocks */
	uint64_t *cache_blk;          /* block held by each way */
	uint64_t *cache_used;         /* last-use tick per way; 0 = empty */
	uint64_t tick;
	struct io_overlay overlay;
	struct rfs_mapfile *map;
	struct rfs_undo *undo;
	uint32_t id_count;
	struct identity_range ids[RFS_UNDO_MAX_IDENTITY_RANGES];
	bool written;                 /* a block reached the file: identity is frozen */
	uint64_t fail_read_nth, reads_seen;
	uint64_t stop_after_write_nth, writes_seen;
	struct rfs_dev_stats stats;
	struct rfs_error sticky;      /* first write-path failure */
	uint8_t *run_buf;             /* rfs_dev_cache_run's read buffer */
	uint8_t *scratch;             /* originals for one undo batch */
	size_t scratch_blocks;
	uint64_t generation;          /* rfs_dev_generation */
	bool tracking;                /* remember which blocks were written */
	struct u64set written_set;
};

/* ------------------------------------------------------------ raw access */

/* Reads len bytes at absolute file offset pos; *got = bytes before EOF. */
static rfs_status pread_full(struct rfs_dev *dev, uint8_t *buf, size_t len, uint64_t pos,
			     size_t *got, uint64_t blk, struct rfs_error *err)
{
	*got = 0;
	while (*got < len) {
		size_t want = len - *got < MAX_PREAD ? len - *got : MAX_PREAD;
		ssize_t n = pread(dev->fd, buf + *got, want, (off_t)(pos + *got));
		dev->stats.read_calls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rfs_error_sys(err, errno, blk, "reading %zu bytes at byte %llu", len,
					     (unsigned long long)pos);
		if (n == 0)
			break;
		*got += (size_t)n;
		dev->stats.bytes_read += (uint64_t)n;
	}
	return RFS_OK;
}

static rfs_status pwrite_full(struct rfs_dev *dev, const uint8_t *buf, size_t len, uint64_t pos,
			      uint64_t blk, struct rfs_error *err)
{
	while (len) {
		ssize_t n = pwrite(dev->fd, buf, len, (off_t)pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rfs_error_sys(err, n < 0 ? errno : EIO, blk, "writing the block");
		buf += n;
		len -= (size_t)n;
		pos += (uint64_t)n;
	}
	return RFS_OK;
}

/* Reads block blk from the file into buf, whole or RFS_ERR_SHORT. */
static rfs_status read_raw_block(struct rfs_dev *dev, uint64_t blk, uint8_t *buf,
				 struct rfs_error *err)
{
	size_t got;
	rfs_status st = pread_full(dev, buf, dev->bs, dev->offset + blk * dev->bs, &got, blk, err);
	if (st)
		return st;
	if (got < dev->bs)
		return rfs_error_set(err, RFS_ERR_SHORT, blk, "the image ends inside this block "
				     "(%zu of %u bytes)", got, dev->bs);
	return RFS_OK;
}

static rfs_status check_range(const struct rfs_dev *dev, uint64_t first, uint64_t count,
			      struct rfs_error *err)
{
	uint64_t nblocks = dev->size / dev->bs;
	if (first >= nblocks || count > nblocks - first)
		return rfs_error_set(err, RFS_ERR_SHORT, first >= nblocks ? first : nblocks,
				     "the device has %llu blocks of %u bytes",
				     (unsigned long long)nblocks, dev->bs);
	return RFS_OK;
}

static rfs_status check_mapfile(const struct rfs_dev *dev, uint64_t first, uint64_t count,
				uint64_t *bad, struct rfs_error *err)
{
	uint64_t first_bad;
	if (!dev->map || rfs_mapfile_readable(dev->map, dev->offset + first * dev->bs,
					      count * dev->bs, &first_bad))
		return RFS_OK;
	uint64_t blk = (first_bad - dev->offset) / dev->bs;
	if (bad)
		*bad = blk;
	return rfs_error_sys(err, EIO, blk, "the ddrescue mapfile marks this block unread");
}

/* Counts n block reads for the fail_read_nth hook; RFS_ERR_INJECTED when the
 * Nth falls among them (*bad = that block). */
static rfs_status read_hook(struct rfs_dev *dev, uint64_t first, uint64_t n, uint64_t *bad,
			    struct rfs_error *err)
{
	uint64_t before = dev->reads_seen;
	dev->reads_seen += n;
	if (!dev->fail_read_nth || dev->fail_read_nth <= before || dev->fail_read_nth > before + n)
		return RFS_OK;
	uint64_t blk = first + (dev->fail_read_nth - before - 1);
	if (bad)
		*bad = blk;
	return rfs_error_set(err, RFS_ERR_INJECTED, blk, "read number %llu failed by the test hook",
			     (unsigned long long)dev->fail_read_nth);
}

/* ------------------------------------------------------------------ cache */

static void cache_free(struct rfs_dev *dev)
{
	free(dev->cache_data);
	free(dev->cache_blk);
	free(dev->cache_used);
	dev->cache_data = NULL;
	dev->cache_blk = NULL;
	dev->cache_used = NULL;
	dev->cache_sets = 0;
}

static rfs_status cache_alloc(struct rfs_dev *dev, struct rfs_error *err)
{
	uint32_t sets = 16;
	while ((uint64_t)sets * 2 * CACHE_WAYS * dev->bs <= CACHE_BYTES)
		sets *= 2;
	size_t ways = (size_t)sets * CACHE_WAYS;
	dev->cache_data = malloc(ways * dev->bs);
	dev->cache_blk = calloc(ways, sizeof(uint64_t));
	dev->cache_used = calloc(ways, sizeof(uint64_t));
	if (!dev->cache_data || !dev->cache_blk || !dev->cache_used) {
		cache_free(dev);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "block cache");
	}
	dev->cache_sets = sets;
	return RFS_OK;
}

static size_t cache_set_of(const struct rfs_dev *dev, uint64_t blk)
{
	return (size_t)(blk & (dev->cache_sets - 1)) * CACHE_WAYS;
}

static uint8_t *cache_lookup(struct rfs_dev *dev, uint64_t blk)
{
	size_t base = cache_set_of(dev, blk);
	for (size_t w = base; w < base + CACHE_WAYS; w++) {
		if (dev->cache_used[w] && dev->cache_blk[w] == blk) {
			dev->cache_used[w] = ++dev->tick;
			return dev->cache_data + w * dev->bs;
		}
	}
	return NULL;
}

/* Whether blk is cached, without counting it as a use. */
static bool cache_peek(const struct rfs_dev *dev, uint64_t blk)
{
	size_t base = cache_set_of(dev, blk);
	for (size_t w = base; w < base + CACHE_WAYS; w++)
		if (dev->cache_used[w] && dev->cache_blk[w] == blk)
			return true;
	return false;
}

/* Stores blk's file content, replacing the least recently used way. */
static void cache_store(struct rfs_dev *dev, uint64_t blk, const uint8_t *data)
{
	size_t base = cache_set_of(dev, blk), victim = base;
	for (size_t w = base; w < base + CACHE_WAYS; w++) {
		if (dev->cache_used[w] && dev->cache_blk[w] == blk) {
			victim = w;
			break;
		}
		if (dev->cache_used[w] < dev->cache_used[victim])
			victim = w;
	}
	memcpy(dev->cache_data + victim * dev->bs, data, dev->bs);
	dev->cache_blk[victim] = blk;
	dev->cache_used[victim] = ++dev->tick;
}

/* ------------------------------------------------------------ open/close */

static rfs_status open_file(struct rfs_dev *dev, const struct rfs_dev_options *opt,
			    struct rfs_error *err)
{
	bool write = opt->flags & RFS_DEV_WRITE;
	int oflags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	if (write && (opt->flags & RFS_DEV_CREATE))
		oflags |= O_CREAT | O_TRUNC;
	struct stat st;
	if (write && stat(opt->path, &st) == 0) {
		rfs_status mst = io_mount_refuse_mounted(opt->path, &st, err);
		if (mst)
			return mst;
		if (S_ISBLK(st.st_mode))	/* the kernel refuses it while mounted */
			oflags |= O_EXCL;
	}
	dev->fd = open(opt->path, oflags, 0600);
	if (dev->fd < 0) {
		if (errno == EBUSY)
			return rfs_error_set(err, RFS_ERR_BUSY, RFS_NO_BLOCK, "%s is in use", opt->path);
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening %s", opt->path);
	}
	if (fstat(dev->fd, &st) != 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "examining %s", opt->path);
	uint64_t total;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(dev->fd, BLKGETSIZE64, &total) != 0)
			return rfs_error_sys(err, errno, RFS_NO_BLOCK, "getting the size of %s",
					     opt->path);
	} else if (S_ISREG(st.st_mode)) {
		total = (uint64_t)st.st_size;
	} else {
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "%s is neither a regular file nor a block device", opt->path);
	}
	if (opt->offset > total && !(opt->flags & RFS_DEV_CREATE))
		return rfs_error_set(err, RFS_ERR_SHORT, RFS_NO_BLOCK,
				     "offset %llu is past the end of %s (%llu bytes)",
				     (unsigned long long)opt->offset, opt->path,
				     (unsigned long long)total);
	dev->size = opt->offset > total ? 0 : total - opt->offset;
	return RFS_OK;
}

static rfs_status check_flags(const struct rfs_dev_options *opt, struct rfs_error *err)
{
	unsigned f = opt->flags;
	if ((f & RFS_DEV_WRITE) && (f & RFS_DEV_DRY_RUN))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "a dry run cannot open the image for writing");
	if ((f & RFS_DEV_CREATE) && !(f & RFS_DEV_WRITE))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "creating needs writing");
	if ((f & RFS_DEV_WRITE) && !opt->undo_path && !(f & RFS_DEV_NO_UNDO))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "writing needs an undo file (or an explicit --no-undo)");
	if (opt->undo_path && !(f & RFS_DEV_WRITE))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "an undo file is only for writing");
	return RFS_OK;
}

/* Refuses an undo file that is the image itself. */
static rfs_status check_undo_not_image(const struct rfs_dev *dev, const char *undo_path,
				       struct rfs_error *err)
{
	struct stat img, und;
	if (fstat(dev->fd, &img) == 0 && stat(undo_path, &und) == 0 &&
	    img.st_dev == und.st_dev && img.st_ino == und.st_ino)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "the undo file cannot be the image");
	return RFS_OK;
}

rfs_status rfs_dev_open(const struct rfs_dev_options *opt, struct rfs_dev **out,
			struct rfs_error *err)
{
	*out = NULL;
	rfs_status st = check_flags(opt, err);
	if (st)
		return st;
	struct rfs_dev *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "device state");
	dev->fd = -1;
	dev->flags = opt->flags;
	dev->offset = opt->offset;
	dev->bs = DEFAULT_BLOCK_SIZE;
	dev->fail_read_nth = opt->fail_read_nth;
	dev->stop_after_write_nth = opt->stop_after_write_nth;
	rfs_error_clear(&dev->sticky);
	io_overlay_init(&dev->overlay, dev->bs);
	st = open_file(dev, opt, err);
	if (!st)
		st = cache_alloc(dev, err);
	if (!st && opt->mapfile)
		st = rfs_mapfile_load(opt->mapfile, &dev->map, err);
	if (!st && opt->undo_path)
		st = check_undo_not_image(dev, opt->undo_path, err);
	if (!st && opt->undo_path) {
		struct undo_target t = { dev->bs, dev->offset, dev->size };
		st = undo_create(opt->undo_path, &t, &dev->undo, err);
	}
	if (st) {
		rfs_dev_abandon(dev);
		return st;
	}
	*out = dev;
	return RFS_OK;
}

static void dev_free(struct rfs_dev *dev)
{
	cache_free(dev);
	io_overlay_free(&dev->overlay);
	rfs_mapfile_free(dev->map);
	free(dev->scratch);
	free(dev->run_buf);
	u64set_free(&dev->written_set);
	free(dev);
}

void rfs_dev_abandon(struct rfs_dev *dev)
{
	if (!dev)
		return;
	undo_abandon(dev->undo);
	if (dev->fd >= 0)
		close(dev->fd);
	dev_free(dev);
}

rfs_status rfs_dev_close(struct rfs_dev *dev, struct rfs_error *err)
{
	if (!dev)
		return RFS_OK;
	rfs_status st = dev->sticky.status;
	if (st && err && err->status == RFS_OK)
		*err = dev->sticky;
	if (!st && (dev->flags & RFS_DEV_WRITE)) {
		while (fsync(dev->fd) != 0 && !st) {
			if (errno != EINTR)
				st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "syncing the image");
		}
	}
	if (dev->undo) {
		/* Finished only when every write reached the disk, invariant (4). */
		rfs_status ust = st ? RFS_OK : undo_finish(dev->undo, err);
		if (st)
			undo_abandon(dev->undo);
		dev->undo = NULL;
		if (!st)
			st = ust;
	}
	if (close(dev->fd) != 0 && !st && (dev->flags & RFS_DEV_WRITE))
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing the image");
	dev_free(dev);
	return st;
}

/* ------------------------------------------------------------- geometry */

rfs_status rfs_dev_set_block_size(struct rfs_dev *dev, uint32_t bs, struct rfs_error *err)
{
	if (bs < 512 || bs > 65536 || (bs & (bs - 1)))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "block size %u is not a power of two in 512..65536", bs);
	if (bs == dev->bs)
		return RFS_OK;
	if (dev->overlay.count || dev->id_count)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "block size cannot change once blocks are in the overlay or "
				     "an identity is set");
	if (dev->undo) {
		rfs_status st = undo_set_block_size(dev->undo, bs, err);
		if (st)
			return st;
	}
	dev->generation++;
	cache_free(dev);
	free(dev->scratch);
	free(dev->run_buf);
	dev->run_buf = NULL;
	dev->scratch = NULL;
	dev->scratch_blocks = 0;
	dev->bs = bs;
	io_overlay_init(&dev->overlay, bs);
	return cache_alloc(dev, err);
}

rfs_status rfs_dev_set_size(struct rfs_dev *dev, uint64_t size, struct rfs_error *err)
{
	if (!(dev->flags & RFS_DEV_CREATE) || dev->undo)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "only a device created for --output can be resized");
	if (size > (uint64_t)INT64_MAX - dev->offset)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "size %llu is too large",
				     (unsigned long long)size);
	if (ftruncate(dev->fd, (off_t)(dev->offset + size)) != 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "setting the size of the output");
	dev->size = size;
	dev->generation++;
	/* Blocks past a shrunken end must not be served from the cache. */
	memset(dev->cache_used, 0, (size_t)dev->cache_sets * CACHE_WAYS * sizeof(uint64_t));
	return RFS_OK;
}

uint32_t rfs_dev_block_size(const struct rfs_dev *dev)
{
	return dev->bs;
}

uint64_t rfs_dev_size(const struct rfs_dev *dev)
{
	return dev->size;
}

uint64_t rfs_dev_block_count(const struct rfs_dev *dev)
{
	return dev->size / dev->bs;
}

/* ----------------------------------------------------------------- reads */

/* Copies the overlay's blocks that intersect [off, off + len) over buf. */
static void apply_overlay(const struct rfs_dev *dev, uint64_t off, uint8_t *buf, size_t len)
{
	if (!dev->overlay.count || len == 0)
		return;
	uint64_t end = off + len;
	for (uint64_t blk = off / dev->bs; blk * dev->bs < end; blk++) {
		const uint8_t *ov = io_overlay_find(&dev->overlay, blk);
		if (!ov)
			continue;
		uint64_t bstart = blk * dev->bs;
		uint64_t from = bstart > off ? bstart : off;
		uint64_t to = bstart + dev->bs < end ? bstart + dev->bs : end;
		memcpy(buf + (from - off), ov + (from - bstart), (size_t)(to - from));
	}
}

rfs_status rfs_dev_read_bytes(struct rfs_dev *dev, uint64_t off, void *buf, size_t len,
			      struct rfs_error *err)
{
	if (off > dev->size || len > dev->size - off)
		return rfs_error_set(err, RFS_ERR_SHORT, off / dev->bs,
				     "bytes %llu..%llu are past the end (%llu bytes)",
				     (unsigned long long)off, (unsigned long long)(off + len),
				     (unsigned long long)dev->size);
	uint64_t blk = off / dev->bs;
	rfs_status st = read_hook(dev, blk, 1, NULL, err);
	if (st)
		return st;
	uint64_t first_bad;
	if (dev->map && !rfs_mapfile_readable(dev->map, dev->offset + off, len, &first_bad))
		return rfs_error_sys(err, EIO, (first_bad - dev->offset) / dev->bs,
				     "the ddrescue mapfile marks byte %llu unread",
				     (unsigned long long)first_bad);
	size_t got;
	st = pread_full(dev, buf, len, dev->offset + off, &got, blk, err);
	if (st)
		return st;
	if (got < len)
		return rfs_error_set(err, RFS_ERR_SHORT, (off + got) / dev->bs,
				     "the image ended after %zu of %zu bytes", got, len);
	apply_overlay(dev, off, buf, len);
	return RFS_OK;
}

rfs_status rfs_dev_read_block(struct rfs_dev *dev, uint64_t blk, void *buf,
			      struct rfs_error *err)
{
	rfs_status st = check_range(dev, blk, 1, err);
	if (!st)
		st = read_hook(dev, blk, 1, NULL, err);
	if (st)
		return st;
	const uint8_t *src = io_overlay_find(&dev->overlay, blk);
	if (!src && (src = cache_lookup(dev, blk)) != NULL)
		dev->stats.cache_hits++;
	if (src) {
		memcpy(buf, src, dev->bs);
		dev->stats.blocks_read++;
		return RFS_OK;
	}
	st = check_mapfile(dev, blk, 1, NULL, err);
	if (!st)
		st = read_raw_block(dev, blk, buf, err);
	if (st)
		return st;
	cache_store(dev, blk, buf);
	dev->stats.blocks_read++;
	return RFS_OK;
}

void rfs_dev_prefetch(struct rfs_dev *dev, uint64_t first, uint64_t count)
{
	struct rfs_error ignored;
	if (count == 0 || dev->fd < 0 || check_range(dev, first, count, &ignored))
		return;
	if (dev->map && !rfs_mapfile_readable(dev->map, dev->offset + first * dev->bs,
					      count * dev->bs, &(uint64_t){ 0 }))
		return;
	/* advice only: an error here costs nothing but the overlap */
	(void)posix_fadvise(dev->fd, (off_t)(dev->offset + first * dev->bs),
			    (off_t)(count * dev->bs), POSIX_FADV_WILLNEED);
}

void rfs_dev_cache_run(struct rfs_dev *dev, uint64_t first, uint32_t count)
{
	struct rfs_error ignored;
	if (count < 2 || count > RFS_DEV_CACHE_RUN_MAX || dev->fd < 0 || !dev->cache_sets ||
	    check_range(dev, first, count, &ignored) ||
	    check_mapfile(dev, first, count, NULL, &ignored))
		return;
	/* all cached already: nothing to gain */
	uint32_t have = 0;
	for (uint32_t i = 0; i < count; i++)
		have += cache_peek(dev, first + i);
	if (have == count)
		return;
	if (!dev->run_buf && !(dev->run_buf = malloc((size_t)RFS_DEV_CACHE_RUN_MAX * dev->bs)))
		return;
	size_t len = (size_t)count * dev->bs, got;
	/* Not through read_hook: the reads that follow count (and fail) there
	 * one block at a time, as they would without this call.  A failed or
	 * short read leaves them to find and report the bad block. */
	if (pread_full(dev, dev->run_buf, len, dev->offset + first * dev->bs, &got, first, &ignored) ||
	    got < len)
		return;
	for (uint32_t i = 0; i < count; i++)
		cache_store(dev, first + i, dev->run_buf + (size_t)i * dev->bs);
}

rfs_status rfs_dev_read_run(struct rfs_dev *dev, uint64_t first, uint32_t count, void *buf,
			    uint64_t *bad, struct rfs_error *err)
{
	if (count == 0)
		return RFS_OK;
	rfs_status st = check_range(dev, first, count, err);
	if (st) {
		if (bad)
			*bad = first < rfs_dev_block_count(dev) ? rfs_dev_block_count(dev) : first;
		return st;
	}
	st = read_hook(dev, first, count, bad, err);
	if (!st)
		st = check_mapfile(dev, first, count, bad, err);
	if (st)
		return st;
	size_t len = (size_t)count * dev->bs, got;
	st = pread_full(dev, buf, len, dev->offset + first * dev->bs, &got, first, err);
	if (st) {
		if (bad)
			*bad = first;
		return st;
	}
	if (got < len) {
		uint64_t short_blk = first + got / dev->bs;
		if (bad)
			*bad = short_blk;
		return rfs_error_set(err, RFS_ERR_SHORT, short_blk,
				     "the image ends inside this block");
	}
	apply_overlay(dev, first * dev->bs, buf, len);
	dev->stats.blocks_read += count;
	return RFS_OK;
}

/* ---------------------------------------------------------------- writes */

static rfs_status write_fail(struct rfs_dev *dev, rfs_status st, struct rfs_error *err)
{
	if (dev->sticky.status == RFS_OK) {
		if (err && err->status == st)
			dev->sticky = *err;
		else
			rfs_error_set(&dev->sticky, st, RFS_NO_BLOCK, "a write failed");
	}
	return st;
}

/* Refuses a write that would change a byte of an identity range. */
static rfs_status check_identity_kept(const struct rfs_dev *dev, uint64_t blk, const uint8_t *buf,
				      struct rfs_error *err)
{
	uint64_t bstart = blk * dev->bs, bend = bstart + dev->bs;
	for (uint32_t i = 0; i < dev->id_count; i++) {
		const struct identity_range *r = &dev->ids[i];
		uint64_t from = r->off > bstart ? r->off : bstart;
		uint64_t to = r->off + r->len < bend ? r->off + r->len : bend;
		if (from < to && memcmp(buf + (from - bstart), r->bytes + (from - r->off),
					(size_t)(to - from)) != 0)
			return rfs_error_set(err, RFS_ERR_INVALID, blk,
					     "write would change identity bytes %llu..%llu",
					     (unsigned long long)r->off,
					     (unsigned long long)(r->off + r->len));
	}
	return RFS_OK;
}

/* Counts a write for the stop_after_write_nth hook. */
static rfs_status write_hook(struct rfs_dev *dev, uint64_t blk, struct rfs_error *err)
{
	dev->writes_seen++;
	if (dev->stop_after_write_nth && dev->writes_seen >= dev->stop_after_write_nth)
		return rfs_error_set(err, RFS_ERR_INJECTED, blk,
				     "write number %llu stopped by the test hook",
				     (unsigned long long)dev->writes_seen);
	return RFS_OK;
}

/* Saves the originals of those of blks[0..n) not yet saved (one sync). */
static rfs_status save_originals(struct rfs_dev *dev, size_t n, const uint64_t *blks,
				 struct rfs_error *err)
{
	if (n > dev->scratch_blocks) {
		uint8_t *p = realloc(dev->scratch, n * dev->bs);
		if (!p)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo batch buffer");
		dev->scratch = p;
		dev->scratch_blocks = n;
	}
	uint64_t todo[RFS_UNDO_MAX_BATCH];
	const uint8_t *orig[RFS_UNDO_MAX_BATCH];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool dup = undo_has_block(dev->undo, blks[i]);
		for (size_t j = 0; j < k && !dup; j++)
			dup = todo[j] == blks[i];
		if (dup)
			continue;
		uint8_t *o = dev->scratch + k * dev->bs;
		/* The original is what the file holds: not the overlay, not the map. */
		rfs_status st = read_raw_block(dev, blks[i], o, err);
		if (st)
			return st;
		todo[k] = blks[i];
		orig[k++] = o;
	}
	rfs_status st = undo_save_batch(dev->undo, k, todo, orig, err);
	if (!st)
		dev->stats.undo_blocks_saved += k;
	return st;
}

static rfs_status write_chunk(struct rfs_dev *dev, size_t n, const uint64_t *blks,
			      const void *const *bufs, struct rfs_error *err)
{
	rfs_status st = RFS_OK;
	for (size_t i = 0; i < n && !st; i++) {
		st = check_range(dev, blks[i], 1, err);
		if (!st)
			st = check_identity_kept(dev, blks[i], bufs[i], err);
	}
	if (st)
		return st;
	if (dev->flags & RFS_DEV_DRY_RUN) {
		for (size_t i = 0; i < n && !st; i++) {
			st = write_hook(dev, blks[i], err);
			if (!st)
				st = io_overlay_put(&dev->overlay, blks[i], bufs[i], err);
			if (!st)
				dev->stats.blocks_written++;
			if (!st && dev->tracking)
				st = u64set_add(&dev->written_set, blks[i], NULL);
		}
		return st;
	}
	if (dev->undo)
		st = save_originals(dev, n, blks, err);
	for (size_t i = 0; i < n && !st; i++) {
		const uint8_t *data = bufs[i];
		/* The hook fires after the undo sync: a crash's worst moment. */
		st = write_hook(dev, blks[i], err);
		if (!st) {
			dev->stats.writes_started++;
			st = pwrite_full(dev, data, dev->bs, dev->offset + blks[i] * dev->bs, blks[i], err);
		}
		if (st)
			break;
		dev->written = true;
		dev->stats.blocks_written++;
		if (dev->tracking && (st = u64set_add(&dev->written_set, blks[i], NULL)))
			break;
		if (dev->undo)
			st = undo_note_written(dev->undo, blks[i], data, err);
		cache_store(dev, blks[i], data);
		if (!st && io_overlay_find(&dev->overlay, blks[i]))
			st = io_overlay_put(&dev->overlay, blks[i], data, err);
	}
	return st;
}

rfs_status rfs_dev_write_batch(struct rfs_dev *dev, size_t n, const uint64_t *blks,
			       const void *const *bufs, struct rfs_error *err)
{
	dev->generation++;   /* first: a refused write may follow an edit in place */
	if (!(dev->flags & (RFS_DEV_WRITE | RFS_DEV_DRY_RUN)))
		return rfs_error_set(err, RFS_ERR_READONLY, n ? blks[0] : RFS_NO_BLOCK,
				     "the image was opened read-only");
	if (dev->sticky.status) {
		if (err && err->status == RFS_OK)
			*err = dev->sticky;
		return dev->sticky.status;
	}
	for (size_t done = 0; done < n;) {
		size_t k = n - done < RFS_UNDO_MAX_BATCH ? n - done : RFS_UNDO_MAX_BATCH;
		rfs_status st = write_chunk(dev, k, blks + done, bufs + done, err);
		if (st)
			return write_fail(dev, st, err);
		done += k;
	}
	return RFS_OK;
}

void rfs_dev_track_writes(struct rfs_dev *dev)
{
	dev->tracking = true;
}

rfs_status rfs_dev_written_blocks(const struct rfs_dev *dev, uint64_t **blocks, size_t *n,
				  struct rfs_error *err)
{
	if (u64set_sorted(&dev->written_set, blocks, n))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "written block list");
	return RFS_OK;
}

rfs_status rfs_dev_write_block(struct rfs_dev *dev, uint64_t blk, const void *buf,
			       struct rfs_error *err)
{
	return rfs_dev_write_batch(dev, 1, &blk, &buf, err);
}

rfs_status rfs_dev_set_identity(struct rfs_dev *dev, uint64_t off, uint32_t len,
				struct rfs_error *err)
{
	if (dev->written || dev->writes_seen)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "the identity must be set before the first write");
	if (dev->id_count >= RFS_UNDO_MAX_IDENTITY_RANGES || len == 0 ||
	    len > RFS_UNDO_MAX_IDENTITY_BYTES)
		return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
				     "identity: at most %u ranges of 1..%u bytes",
				     RFS_UNDO_MAX_IDENTITY_RANGES, RFS_UNDO_MAX_IDENTITY_BYTES);
	struct identity_range *r = &dev->ids[dev->id_count];
	if (off > dev->size || len > dev->size - off)
		return rfs_error_set(err, RFS_ERR_SHORT, RFS_NO_BLOCK, "identity range past the end");
	size_t got;
	/* The file's bytes, not the overlay's: the identity is what is on disk. */
	rfs_status st = pread_full(dev, r->bytes, len, dev->offset + off, &got, off / dev->bs, err);
	if (!st && got < len)
		st = rfs_error_set(err, RFS_ERR_SHORT, off / dev->bs, "identity range past the end");
	if (!st && dev->undo)
		st = undo_add_identity(dev->undo, off, r->bytes, len, err);
	if (st)
		return st;
	r->off = off;
	r->len = len;
	dev->id_count++;
	return RFS_OK;
}

/* ---------------------------------------------------------------- overlay */

rfs_status rfs_dev_overlay_put(struct rfs_dev *dev, uint64_t blk, const void *buf,
			       struct rfs_error *err)
{
	dev->generation++;
	rfs_status st = check_range(dev, blk, 1, err);
	if (st)
		return st;
	return io_overlay_put(&dev->overlay, blk, buf, err);
}

uint64_t rfs_dev_overlay_count(const struct rfs_dev *dev)
{
	return dev->overlay.count;
}

rfs_status rfs_dev_overlay_blocks(const struct rfs_dev *dev, uint64_t **blocks, uint64_t *n,
				  struct rfs_error *err)
{
	return io_overlay_list(&dev->overlay, blocks, n, err);
}

uint64_t rfs_dev_generation(const struct rfs_dev *dev)
{
	return dev->generation;
}

void rfs_dev_get_stats(const struct rfs_dev *dev, struct rfs_dev_stats *st)
{
	*st = dev->stats;
}

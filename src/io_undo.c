/*
 * io_undo.c - the undo log: writing it (for src/io.c) and applying it (for
 * `rfsck undo`).  This file is the only one that knows the undo file format.
 *
 * Invariants:
 *  (1) No block of the image is written until its original content is in the
 *      undo file and synced (fdatasync): src/io.c calls undo_save_batch, which
 *      returns RFS_OK only after the sync, before its pwrite of the block.
 *  (2) Each block is saved at most once, with its content from before the
 *      run's first write to it; later writes of the same block save nothing
 *      (the saved-block map).  So restoring every record, in any order, gives
 *      back the original image.
 *  (3) Every record carries its own checksums and the file's nonce and a
 *      sequence number, so a record is valid only complete, in its place, and
 *      in this file.  A record that fails is accepted as the torn tail of a
 *      killed run only in an unfinished file, only within the last sync batch
 *      (no record of a later batch follows it, and at most RFS_UNDO_MAX_BATCH
 *      records' worth of bytes remain); by (1) the blocks of an unsynced
 *      batch were never overwritten, so ignoring them is safe.  Any other
 *      failure refuses the whole file.
 *  (4) The header's state is "finished" and its whole-header checksum is set
 *      only by undo_finish, after the image was synced and after the record of
 *      the final contents was synced.  An unfinished file stays applicable.
 *  (5) Saved bytes and identity bytes are stored through undo_transform (an
 *      XOR keystream), so no saved block looks like a ReiserFS superblock or
 *      leaf to a scanner, and the file holds no "ReIsEr" magic in plaintext:
 *      an undo file kept on another ReiserFS volume is not a nested filesystem
 *      for rebuild to find.
 *  (6) undo_apply writes nothing until the header, every record, the image
 *      size and the identity ranges have verified.
 *
 * States of an undo file:
 *   creating  - created, empty: no record, so no block was written (apply: no-op)
 *   open      - header (state 1) and records synced; the run is going on, or
 *               was killed.  Applicable; a torn tail is ignored.
 *   finished  - state 2, header checksum valid, record count, records end and
 *               final-content record set: the run closed cleanly.
 *
 * Target identity (why this design): the header names the geometry (block
 * size, fs offset, image size) and up to 4 byte ranges that the caller
 * designates as identity, with their contents (for ReiserFS: the superblock's
 * block count, magic and UUID).  The I/O layer refuses any write that would
 * change those bytes, so the check at apply time is exact and needs no
 * knowledge of the filesystem format.  A finished file also records a CRC of
 * what the run last wrote to each block; apply compares it with the image and
 * refuses an image that changed since (or was never the target) unless forced.
 *
 * Format (all integers little-endian):
 *   header, 512 bytes at offset 0:
 *     0 magic "RFSUNDO1"   8 u32 version (1)   12 u32 header size (512)
 *    16 u32 block size    20 u32 identity range count   24 u64 fs offset
 *    32 u64 image size    40 u64 nonce         48 u64 creation time (unix)
 *    56 u32 identity bytes in all              60 u32 max batch
 *    64 4 x { u64 offset, u32 length, u32 0 }  128 identity bytes (256, transformed)
 *   384 u32 CRC-32C of bytes 0..383 (set at creation)
 *   448 u32 state (0 creating, 1 open, 2 finished)
 *   456 u64 block records   464 u64 end of block records   472 u64 end of final records
 *   508 u32 CRC-32C of bytes 0..507 (finished only, else 0)
 *   records from offset 512, each a 48-byte head and a payload:
 *     0 "UREC"  4 u32 type (1 block, 2 final)  8 u64 sequence (from 0)
 *    16 u64 block number (final: entry count)  24 u32 payload length
 *    28 u32 CRC-32C of the payload as stored   32 u64 nonce
 *    40 u32 index of the record in its sync batch (0 = first)
 *    44 u32 CRC-32C of head bytes 0..43
 *   block payload: the original block, transformed with seed nonce ^ mix(block)
 *   final payload: entries { u64 block, u32 CRC-32C of the last content written }
 *
 * Leaves behind: the undo file (closed); nothing in memory after finish/abandon.
 */
#include "rfs/undo.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rfs/bytes.h"
#include "rfs/io.h"

#define UNDO_MAGIC "RFSUNDO1"
#define UNDO_VERSION 1u
#define HDR_SIZE 512u
enum {
	H_MAGIC = 0, H_VERSION = 8, H_HDR_SIZE = 12, H_BLOCK_SIZE = 16, H_ID_COUNT = 20,
	H_FS_OFFSET = 24, H_IMAGE_SIZE = 32, H_NONCE = 40, H_CREATED = 48, H_ID_BYTES = 56,
	H_MAX_BATCH = 60, H_RANGES = 64, H_RANGE_SIZE = 16, H_ID_DATA = 128,
	H_FIXED_CRC = 384, H_STATE = 448, H_RECORDS = 456, H_RECORDS_END = 464,
	H_FINAL_END = 472, H_HDR_CRC = 508,
};
#define REC_MAGIC "UREC"
#define REC_HEAD 48u
enum { R_MAGIC = 0, R_TYPE = 4, R_SEQ = 8, R_BLK = 16, R_LEN = 24, R_PAYLOAD_CRC = 28,
       R_NONCE = 32, R_BATCH_INDEX = 40, R_CRC = 44 };
enum { REC_BLOCK = 1, REC_FINAL = 2 };
#define FINAL_ENTRY 12u
#define FINAL_PER_RECORD 65536u
/* Seed offset so that identity bytes and blocks use different keystreams. */
#define IDENTITY_SEED 0x6964656e74697479ull

/* ---------------------------------------------------------------- checksums */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t undo_crc32c(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&crc_once, crc_init);
	const uint8_t *p = data;
	uint32_t c = ~crc;
	while (len >= 8) {	/* slicing by 8 */
		uint32_t lo = c ^ le32_at(p, 0), hi = le32_at(p, 4);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return ~c;
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void undo_transform(uint64_t seed, uint8_t *data, size_t len)
{
	uint64_t state = seed;
	size_t i = 0;
	for (; i + 8 <= len; i += 8)
		le64_put(data, i, le64_at(data, i) ^ splitmix64(&state));
	if (i < len) {
		uint64_t k = splitmix64(&state);
		for (; i < len; i++, k >>= 8)
			data[i] ^= (uint8_t)k;
	}
}

static uint64_t block_seed(uint64_t nonce, uint64_t blk)
{
	uint64_t s = blk;
	return nonce ^ splitmix64(&s);
}

/* ------------------------------------------------------ block -> crc map */

/* Open addressing; a slot is in use when used[i] is set. */
struct blkmap {
	uint64_t *keys;
	uint32_t *crcs;
	uint8_t *used;          /* 0 empty, 1 saved, 2 saved and written (crc valid) */
	size_t cap, count;
};

static size_t blkmap_slot(const struct blkmap *m, uint64_t blk)
{
	uint64_t s = blk;
	size_t i = (size_t)splitmix64(&s) & (m->cap - 1);
	while (m->used[i] && m->keys[i] != blk)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static bool blkmap_has(const struct blkmap *m, uint64_t blk)
{
	return m->cap && m->used[blkmap_slot(m, blk)];
}

static rfs_status blkmap_grow(struct blkmap *m, struct rfs_error *err)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct blkmap n = { calloc(ncap, sizeof(uint64_t)), calloc(ncap, sizeof(uint32_t)),
			    calloc(ncap, 1), ncap, 0 };
	if (!n.keys || !n.crcs || !n.used) {
		free(n.keys);
		free(n.crcs);
		free(n.used);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo block map");
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = blkmap_slot(&n, m->keys[i]);
		n.keys[j] = m->keys[i];
		n.crcs[j] = m->crcs[i];
		n.used[j] = m->used[i];
		n.count++;
	}
	free(m->keys);
	free(m->crcs);
	free(m->used);
	*m = n;
	return RFS_OK;
}

/* Adds blk (state 1) if absent; *added tells whether it was new. */
static rfs_status blkmap_add(struct blkmap *m, uint64_t blk, bool *added, struct rfs_error *err)
{
	if (m->count * 2 >= m->cap) {
		rfs_status st = blkmap_grow(m, err);
		if (st)
			return st;
	}
	size_t i = blkmap_slot(m, blk);
	*added = !m->used[i];
	if (*added) {
		m->keys[i] = blk;
		m->used[i] = 1;
		m->count++;
	}
	return RFS_OK;
}

static void blkmap_free(struct blkmap *m)
{
	free(m->keys);
	free(m->crcs);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ file helpers */

static rfs_status pwrite_all(int fd, const uint8_t *buf, size_t len, uint64_t off,
			     const char *what, struct rfs_error *err)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rfs_error_sys(err, n < 0 ? errno : EIO, RFS_NO_BLOCK, "writing %s", what);
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return RFS_OK;
}

/* Reads up to len bytes; *got is how many were there before end of file. */
static rfs_status pread_upto(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got,
			     const char *what, struct rfs_error *err)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, buf + *got, len - *got, (off_t)(off + *got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rfs_error_sys(err, errno, RFS_NO_BLOCK, "reading %s", what);
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return RFS_OK;
}

static rfs_status sync_data(int fd, struct rfs_error *err)
{
	while (fdatasync(fd) != 0) {
		if (errno != EINTR)
			return rfs_error_sys(err, errno, RFS_NO_BLOCK, "syncing the undo file");
	}
	return RFS_OK;
}

/* Makes the undo file's directory entry durable, so a crash cannot lose the
 * file after image blocks were written. */
static rfs_status sync_parent_dir(const char *path, struct rfs_error *err)
{
	char *copy = strdup(path);
	if (!copy)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo path");
	int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (dfd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening the undo file's directory");
	int rc = fsync(dfd);
	int e = errno;
	close(dfd);
	/* Some file systems cannot fsync a directory; the data sync still holds. */
	if (rc != 0 && e != EINVAL && e != EROFS)
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "syncing the undo file's directory");
	return RFS_OK;
}

/* ------------------------------------------------------------------ writer */

struct rfs_undo {
	int fd;
	char *path;
	struct undo_target target;
	uint64_t nonce, created;
	uint32_t id_count, id_len;
	uint64_t id_off[RFS_UNDO_MAX_IDENTITY_RANGES];
	uint32_t id_size[RFS_UNDO_MAX_IDENTITY_RANGES];
	uint8_t id_data[RFS_UNDO_MAX_IDENTITY_BYTES];   /* plaintext, concatenated */
	bool header_written;
	uint64_t seq;                 /* block records written */
	uint64_t end;                 /* file offset of the next record */
	struct blkmap saved;
	uint8_t *stage;               /* staging buffer for one batch */
	size_t stage_cap;
	struct rfs_error sticky;      /* first failure; status RFS_OK if none */
};

static uint64_t fresh_nonce(void)
{
	uint64_t n = 0;
	if (getrandom(&n, sizeof(n), GRND_NONBLOCK) != (ssize_t)sizeof(n)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
		n = splitmix64(&s);
	}
	return n;
}

static void header_encode(const struct rfs_undo *u, uint32_t state, uint64_t final_end,
			  uint8_t *h)
{
	memset(h, 0, HDR_SIZE);
	memcpy(h + H_MAGIC, UNDO_MAGIC, 8);
	le32_put(h, H_VERSION, UNDO_VERSION);
	le32_put(h, H_HDR_SIZE, HDR_SIZE);
	le32_put(h, H_BLOCK_SIZE, u->target.block_size);
	le32_put(h, H_ID_COUNT, u->id_count);
	le64_put(h, H_FS_OFFSET, u->target.fs_offset);
	le64_put(h, H_IMAGE_SIZE, u->target.image_size);
	le64_put(h, H_NONCE, u->nonce);
	le64_put(h, H_CREATED, u->created);
	le32_put(h, H_ID_BYTES, u->id_len);
	le32_put(h, H_MAX_BATCH, RFS_UNDO_MAX_BATCH);
	for (uint32_t i = 0; i < u->id_count; i++) {
		le64_put(h, H_RANGES + H_RANGE_SIZE * i, u->id_off[i]);
		le32_put(h, H_RANGES + H_RANGE_SIZE * i + 8, u->id_size[i]);
	}
	memcpy(h + H_ID_DATA, u->id_data, u->id_len);
	undo_transform(u->nonce ^ IDENTITY_SEED, h + H_ID_DATA, RFS_UNDO_MAX_IDENTITY_BYTES);
	le32_put(h, H_FIXED_CRC, undo_crc32c(0, h, H_FIXED_CRC));
	le32_put(h, H_STATE, state);
	if (state == UNDO_STATE_FINISHED) {
		le64_put(h, H_RECORDS, u->seq);
		le64_put(h, H_RECORDS_END, u->end);
		le64_put(h, H_FINAL_END, final_end);
		le32_put(h, H_HDR_CRC, undo_crc32c(0, h, H_HDR_CRC));
	}
}

static void record_head_encode(uint8_t *r, uint32_t type, uint64_t seq, uint64_t blk,
			       uint32_t len, uint32_t payload_crc, uint64_t nonce,
			       uint32_t batch_index)
{
	memset(r, 0, REC_HEAD);
	memcpy(r + R_MAGIC, REC_MAGIC, 4);
	le32_put(r, R_TYPE, type);
	le64_put(r, R_SEQ, seq);
	le64_put(r, R_BLK, blk);
	le32_put(r, R_LEN, len);
	le32_put(r, R_PAYLOAD_CRC, payload_crc);
	le64_put(r, R_NONCE, nonce);
	le32_put(r, R_BATCH_INDEX, batch_index);
	le32_put(r, R_CRC, undo_crc32c(0, r, R_CRC));
}

static rfs_status undo_fail(struct rfs_undo *u, rfs_status st, struct rfs_error *err)
{
	if (u->sticky.status == RFS_OK && err && err->status != RFS_OK)
		u->sticky = *err;
	else if (u->sticky.status == RFS_OK)
		rfs_error_set(&u->sticky, st, RFS_NO_BLOCK, "undo file write failed earlier");
	return st;
}

static rfs_status undo_check_sticky(const struct rfs_undo *u, struct rfs_error *err)
{
	if (u->sticky.status == RFS_OK)
		return RFS_OK;
	if (err && err->status == RFS_OK)
		*err = u->sticky;
	return u->sticky.status;
}

rfs_status undo_create(const char *path, const struct undo_target *target,
		       struct rfs_undo **out, struct rfs_error *err)
{
	*out = NULL;
	uint32_t bs = target->block_size;
	if (bs < 512 || bs > 65536 || (bs & (bs - 1)))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "undo: block size %u is not a power of two in 512..65536", bs);
	struct rfs_undo *u = calloc(1, sizeof(*u));
	if (!u || !(u->path = strdup(path))) {
		free(u);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo file state");
	}
	rfs_error_clear(&u->sticky);
	u->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (u->fd < 0) {
		int e = errno;
		free(u->path);
		free(u);
		if (e == EEXIST)
			return rfs_error_set(err, RFS_ERR_BUSY, RFS_NO_BLOCK,
					     "undo file %s exists; it may be the only way back from an "
					     "earlier run: move it away or name another", path);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "creating undo file %s", path);
	}
	u->target = *target;
	u->nonce = fresh_nonce();
	u->created = (uint64_t)time(NULL);
	u->end = HDR_SIZE;
	*out = u;
	return RFS_OK;
}

rfs_status undo_add_identity(struct rfs_undo *u, uint64_t off, const void *bytes, uint32_t len,
			     struct rfs_error *err)
{
	if (u->header_written)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "undo identity must be set before the first write");
	if (len == 0 || off > u->target.image_size || len > u->target.image_size - off)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "undo identity range %llu+%u is outside the image",
				     (unsigned long long)off, len);
	if (u->id_count >= RFS_UNDO_MAX_IDENTITY_RANGES ||
	    len > RFS_UNDO_MAX_IDENTITY_BYTES - u->id_len)
		return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
				     "undo identity: at most %u ranges of %u bytes in all",
				     RFS_UNDO_MAX_IDENTITY_RANGES, RFS_UNDO_MAX_IDENTITY_BYTES);
	u->id_off[u->id_count] = off;
	u->id_size[u->id_count] = len;
	memcpy(u->id_data + u->id_len, bytes, len);
	u->id_count++;
	u->id_len += len;
	return RFS_OK;
}

rfs_status undo_set_block_size(struct rfs_undo *u, uint32_t block_size, struct rfs_error *err)
{
	if (u->header_written)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "block size cannot change after blocks were saved for undo");
	if (block_size < 512 || block_size > 65536 || (block_size & (block_size - 1)))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "undo: block size %u is not a power of two in 512..65536",
				     block_size);
	u->target.block_size = block_size;
	return RFS_OK;
}

bool undo_has_block(const struct rfs_undo *u, uint64_t blk)
{
	return blkmap_has(&u->saved, blk);
}

rfs_status undo_save_batch(struct rfs_undo *u, size_t n, const uint64_t *blks,
			   const uint8_t *const *orig, struct rfs_error *err)
{
	rfs_status st = undo_check_sticky(u, err);
	if (st)
		return st;
	if (n == 0)
		return RFS_OK;
	if (n > RFS_UNDO_MAX_BATCH)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "undo batch of %zu blocks (at most %u)", n, RFS_UNDO_MAX_BATCH);
	for (size_t i = 0; i < n; i++) {
		bool dup = undo_has_block(u, blks[i]);
		for (size_t j = 0; j < i && !dup; j++)
			dup = blks[i] == blks[j];
		if (dup)	/* would break invariant (2) */
			return rfs_error_set(err, RFS_ERR_INVALID, blks[i],
					     "block saved twice in the undo file");
	}

	uint32_t bs = u->target.block_size;
	size_t rec = REC_HEAD + bs, need = n * rec;
	if (need > u->stage_cap) {
		uint8_t *p = realloc(u->stage, need);
		if (!p)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo staging buffer");
		u->stage = p;
		u->stage_cap = need;
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t *r = u->stage + i * rec;
		memcpy(r + REC_HEAD, orig[i], bs);
		undo_transform(block_seed(u->nonce, blks[i]), r + REC_HEAD, bs);
		record_head_encode(r, REC_BLOCK, u->seq + i, blks[i], bs,
				   undo_crc32c(0, r + REC_HEAD, bs), u->nonce, (uint32_t)i);
	}
	if (!u->header_written) {
		uint8_t h[HDR_SIZE];
		header_encode(u, UNDO_STATE_OPEN, 0, h);
		st = pwrite_all(u->fd, h, HDR_SIZE, 0, "the undo header", err);
		if (st)
			return undo_fail(u, st, err);
	}
	st = pwrite_all(u->fd, u->stage, need, u->end, "undo records", err);
	if (!st)
		st = sync_data(u->fd, err);
	if (!st && !u->header_written)
		st = sync_parent_dir(u->path, err);
	if (st)
		return undo_fail(u, st, err);
	u->header_written = true;
	for (size_t i = 0; i < n; i++) {
		bool added;
		st = blkmap_add(&u->saved, blks[i], &added, err);
		if (st)
			return undo_fail(u, st, err);
	}
	u->seq += n;
	u->end += need;
	return RFS_OK;
}

rfs_status undo_note_written(struct rfs_undo *u, uint64_t blk, const uint8_t *data,
			     struct rfs_error *err)
{
	if (!blkmap_has(&u->saved, blk))
		return rfs_error_set(err, RFS_ERR_INVALID, blk, "block written before it was saved");
	size_t i = blkmap_slot(&u->saved, blk);
	u->saved.crcs[i] = undo_crc32c(0, data, u->target.block_size);
	u->saved.used[i] = 2;
	return RFS_OK;
}

static void undo_free(struct rfs_undo *u)
{
	if (u->fd >= 0)
		close(u->fd);
	blkmap_free(&u->saved);
	free(u->stage);
	free(u->path);
	free(u);
}

void undo_abandon(struct rfs_undo *u)
{
	if (u)
		undo_free(u);
}

/* Appends the final-content records; *end is the offset after them. */
static rfs_status write_final_records(struct rfs_undo *u, uint64_t *end, struct rfs_error *err)
{
	size_t written = 0;
	for (size_t i = 0; i < u->saved.cap; i++)
		written += u->saved.used[i] == 2;
	uint8_t *buf = malloc(REC_HEAD + (size_t)FINAL_PER_RECORD * FINAL_ENTRY);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo final record");
	uint64_t pos = u->end, seq = u->seq;
	size_t slot = 0;
	rfs_status st = RFS_OK;
	do {	/* at least one record, so a finished file always ends with one */
		uint32_t k = 0;
		for (; slot < u->saved.cap && k < FINAL_PER_RECORD; slot++) {
			if (u->saved.used[slot] != 2)
				continue;
			le64_put(buf, REC_HEAD + (size_t)k * FINAL_ENTRY, u->saved.keys[slot]);
			le32_put(buf, REC_HEAD + (size_t)k * FINAL_ENTRY + 8, u->saved.crcs[slot]);
			k++;
		}
		uint32_t len = k * FINAL_ENTRY;
		record_head_encode(buf, REC_FINAL, seq++, k, len,
				   undo_crc32c(0, buf + REC_HEAD, len), u->nonce, 0);
		st = pwrite_all(u->fd, buf, REC_HEAD + len, pos, "undo final record", err);
		pos += REC_HEAD + len;
		written -= k;
	} while (!st && written > 0);
	free(buf);
	*end = pos;
	return st;
}

rfs_status undo_finish(struct rfs_undo *u, struct rfs_error *err)
{
	rfs_status st = undo_check_sticky(u, err);
	uint8_t h[HDR_SIZE];
	uint64_t final_end = 0;
	if (!st && !u->header_written) {
		/* No block was saved: still write a header, so the file says so. */
		header_encode(u, UNDO_STATE_OPEN, 0, h);
		st = pwrite_all(u->fd, h, HDR_SIZE, 0, "the undo header", err);
	}
	if (!st)
		st = write_final_records(u, &final_end, err);
	if (!st)
		st = sync_data(u->fd, err);
	if (!st) {
		header_encode(u, UNDO_STATE_FINISHED, final_end, h);
		st = pwrite_all(u->fd, h, HDR_SIZE, 0, "the undo header", err);
	}
	if (!st)
		st = sync_data(u->fd, err);
	if (!st && !u->header_written)
		st = sync_parent_dir(u->path, err);
	if (!st && close(u->fd) != 0)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing the undo file");
	else if (!st)
		u->fd = -1;
	undo_free(u);
	return st;
}

/* ----------------------------------------------------------------- reader */

struct undo_reader {
	int fd;
	uint64_t file_size;
	uint8_t hdr[HDR_SIZE];
	uint32_t state, bs, id_count;
	uint64_t nonce, records, records_end, final_end;
	struct undo_target target;
	uint8_t *rec;                 /* REC_HEAD + bs */
	uint8_t *final_buf;           /* one final record */
};

static rfs_status bad_undo(struct rfs_error *err, const char *fmt, const char *detail,
			   uint64_t where)
{
	return rfs_error_set(err, RFS_ERR_UNDO, RFS_NO_BLOCK, fmt, detail,
			     (unsigned long long)where);
}

/* Reads and verifies the header.  An empty file is state creating. */
static rfs_status reader_open(struct undo_reader *rd, const char *path, struct rfs_error *err)
{
	rd->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (rd->fd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening undo file %s", path);
	struct stat stt;
	if (fstat(rd->fd, &stt) != 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "examining undo file %s", path);
	if (!S_ISREG(stt.st_mode))
		return rfs_error_set(err, RFS_ERR_UNDO, RFS_NO_BLOCK, "%s is not a regular file", path);
	rd->file_size = (uint64_t)stt.st_size;
	if (rd->file_size == 0) {
		rd->state = UNDO_STATE_CREATING;
		return RFS_OK;
	}
	size_t got;
	rfs_status st = pread_upto(rd->fd, rd->hdr, HDR_SIZE, 0, &got, "the undo header", err);
	if (st)
		return st;
	uint8_t *h = rd->hdr;
	if (got < HDR_SIZE)
		return bad_undo(err, "%s (%llu bytes)", "undo header is truncated", got);
	if (memcmp(h + H_MAGIC, UNDO_MAGIC, 8) != 0)
		return bad_undo(err, "%s%llu", "not an rfsck undo file (bad magic)", 0);
	if (le32_at(h, H_VERSION) != UNDO_VERSION || le32_at(h, H_HDR_SIZE) != HDR_SIZE)
		return bad_undo(err, "%s %llu", "unsupported undo file version",
				le32_at(h, H_VERSION));
	if (le32_at(h, H_FIXED_CRC) != undo_crc32c(0, h, H_FIXED_CRC))
		return bad_undo(err, "%s%llu", "undo header checksum mismatch (identity part)", 0);
	rd->state = le32_at(h, H_STATE);
	if (rd->state != UNDO_STATE_OPEN && rd->state != UNDO_STATE_FINISHED)
		return bad_undo(err, "%s %llu", "undo header has unknown state", rd->state);
	if (rd->state == UNDO_STATE_FINISHED &&
	    le32_at(h, H_HDR_CRC) != undo_crc32c(0, h, H_HDR_CRC))
		return bad_undo(err, "%s%llu", "undo header checksum mismatch (finished part)", 0);
	if (rd->state == UNDO_STATE_OPEN) {
		for (uint32_t i = H_STATE + 4; i < HDR_SIZE; i++)
			if (h[i])
				return bad_undo(err, "%s %llu", "unfinished undo header has data at byte", i);
	}
	rd->bs = le32_at(h, H_BLOCK_SIZE);
	rd->id_count = le32_at(h, H_ID_COUNT);
	rd->nonce = le64_at(h, H_NONCE);
	rd->target.block_size = rd->bs;
	rd->target.fs_offset = le64_at(h, H_FS_OFFSET);
	rd->target.image_size = le64_at(h, H_IMAGE_SIZE);
	rd->records = le64_at(h, H_RECORDS);
	rd->records_end = le64_at(h, H_RECORDS_END);
	rd->final_end = le64_at(h, H_FINAL_END);
	if (rd->bs < 512 || rd->bs > 65536 || (rd->bs & (rd->bs - 1)))
		return bad_undo(err, "%s %llu", "undo header has a bad block size", rd->bs);
	if (rd->id_count > RFS_UNDO_MAX_IDENTITY_RANGES ||
	    le32_at(h, H_ID_BYTES) > RFS_UNDO_MAX_IDENTITY_BYTES)
		return bad_undo(err, "%s %llu", "undo header has too many identity ranges",
				rd->id_count);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < rd->id_count; i++)
		sum += le32_at(h, H_RANGES + H_RANGE_SIZE * i + 8);
	if (sum != le32_at(h, H_ID_BYTES))
		return bad_undo(err, "%s %llu", "undo identity ranges do not add up to", sum);
	if (rd->state == UNDO_STATE_FINISHED &&
	    (rd->records_end != HDR_SIZE + rd->records * (REC_HEAD + rd->bs) ||
	     rd->final_end < rd->records_end + REC_HEAD || rd->final_end != rd->file_size))
		return bad_undo(err, "%s (file size %llu)",
				"finished undo header disagrees with the file's length", rd->file_size);
	undo_transform(rd->nonce ^ IDENTITY_SEED, h + H_ID_DATA, RFS_UNDO_MAX_IDENTITY_BYTES);
	rd->rec = malloc(REC_HEAD + rd->bs);
	rd->final_buf = malloc(REC_HEAD + (size_t)FINAL_PER_RECORD * FINAL_ENTRY);
	if (!rd->rec || !rd->final_buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "undo record buffer");
	return RFS_OK;
}

static void reader_close(struct undo_reader *rd)
{
	if (rd->fd >= 0)
		close(rd->fd);
	free(rd->rec);
	free(rd->final_buf);
}

enum rec_verdict { REC_VALID, REC_INVALID };

/*
 * Reads the record at pos into rd->rec (block) or rd->final_buf (final) and
 * verifies it.  *verdict is REC_INVALID for anything short or mismatched;
 * *type and *len describe a valid record.  Returns an error only for I/O.
 */
static rfs_status read_record(struct undo_reader *rd, uint64_t pos, uint64_t seq,
			      enum rec_verdict *verdict, uint32_t *type, uint32_t *len,
			      struct rfs_error *err)
{
	*verdict = REC_INVALID;
	size_t got;
	uint8_t head[REC_HEAD];
	rfs_status st = pread_upto(rd->fd, head, REC_HEAD, pos, &got, "an undo record", err);
	if (st || got < REC_HEAD)
		return st;
	if (memcmp(head + R_MAGIC, REC_MAGIC, 4) != 0 ||
	    le32_at(head, R_CRC) != undo_crc32c(0, head, R_CRC) ||
	    le64_at(head, R_NONCE) != rd->nonce || le64_at(head, R_SEQ) != seq)
		return RFS_OK;
	*type = le32_at(head, R_TYPE);
	*len = le32_at(head, R_LEN);
	uint8_t *dst;
	if (*type == REC_BLOCK && *len == rd->bs)
		dst = rd->rec;
	else if (*type == REC_FINAL && *len == le64_at(head, R_BLK) * FINAL_ENTRY &&
		 *len <= FINAL_PER_RECORD * FINAL_ENTRY)
		dst = rd->final_buf;
	else
		return RFS_OK;
	memcpy(dst, head, REC_HEAD);
	st = pread_upto(rd->fd, dst + REC_HEAD, *len, pos + REC_HEAD, &got, "an undo record", err);
	if (st || got < *len)
		return st;
	if (undo_crc32c(0, dst + REC_HEAD, *len) != le32_at(head, R_PAYLOAD_CRC))
		return RFS_OK;
	*verdict = REC_VALID;
	return RFS_OK;
}

/* True when a valid record head of a LATER sync batch than record seq sits
 * after pos: then record seq's batch had been synced (the writer starts a
 * batch only after the previous one's sync), so a failure at seq is
 * corruption, not a torn write.  Only the next RFS_UNDO_MAX_BATCH positions
 * need looking at: a longer tail is refused anyway. */
static bool later_batch_follows(struct undo_reader *rd, uint64_t pos, uint64_t seq)
{
	uint64_t rec = REC_HEAD + rd->bs;
	for (uint64_t k = 1; k <= RFS_UNDO_MAX_BATCH; k++) {
		uint64_t q = pos + k * rec;
		uint8_t head[REC_HEAD];
		size_t got;
		if (q + REC_HEAD > rd->file_size ||
		    pread_upto(rd->fd, head, REC_HEAD, q, &got, "an undo record", NULL) || got < REC_HEAD)
			return false;
		if (memcmp(head + R_MAGIC, REC_MAGIC, 4) != 0 ||
		    le32_at(head, R_CRC) != undo_crc32c(0, head, R_CRC) ||
		    le64_at(head, R_NONCE) != rd->nonce || le64_at(head, R_SEQ) != seq + k)
			continue;
		if (seq + k - le32_at(head, R_BATCH_INDEX) > seq)
			return true;
	}
	return false;
}

struct apply_ctx {
	struct undo_reader rd;
	struct rfs_dev *dev;
	unsigned flags;
	struct undo_apply_result *res;
	uint64_t valid_end;           /* offset after the last valid block record */
	uint8_t *img;                 /* one image block */
};

static rfs_status check_identity(struct apply_ctx *a, struct rfs_error *err)
{
	const uint8_t *h = a->rd.hdr;
	uint32_t at = 0;
	uint8_t cur[RFS_UNDO_MAX_IDENTITY_BYTES];
	for (uint32_t i = 0; i < a->rd.id_count; i++) {
		uint64_t off = le64_at(h, H_RANGES + H_RANGE_SIZE * i);
		uint32_t len = le32_at(h, H_RANGES + H_RANGE_SIZE * i + 8);
		if (off > a->rd.target.image_size || len > a->rd.target.image_size - off)
			return bad_undo(err, "%s %llu", "undo identity range outside the image at", off);
		rfs_status st = rfs_dev_read_bytes(a->dev, off, cur, len, err);
		if (st)
			return st;
		if (memcmp(cur, h + H_ID_DATA + at, len) != 0)
			return bad_undo(err, "%s at byte %llu of the filesystem",
					"wrong image: identity bytes differ", off);
		at += len;
	}
	a->res->identity_ranges = a->rd.id_count;
	return RFS_OK;
}

/* Compares each block the run last wrote with the image (finished files). */
static rfs_status check_final(struct apply_ctx *a, uint64_t pos, uint64_t seq,
			      struct rfs_error *err)
{
	while (pos < a->rd.final_end) {
		enum rec_verdict v;
		uint32_t type = 0, len = 0;
		rfs_status st = read_record(&a->rd, pos, seq, &v, &type, &len, err);
		if (st)
			return st;
		if (v != REC_VALID || type != REC_FINAL)
			return bad_undo(err, "%s %llu", "bad final-content record at offset", pos);
		for (uint32_t k = 0; k < len / FINAL_ENTRY; k++) {
			const uint8_t *e = a->rd.final_buf + REC_HEAD + (size_t)k * FINAL_ENTRY;
			uint64_t blk = le64_at(e, 0);
			if (blk >= a->rd.target.image_size / a->rd.bs)
				return bad_undo(err, "%s %llu", "final record names a block past the end:", blk);
			st = rfs_dev_read_block(a->dev, blk, a->img, err);
			if (st)
				return st;
			if (undo_crc32c(0, a->img, a->rd.bs) != le32_at(e, 8))
				a->res->changed_since_run++;
		}
		pos += REC_HEAD + len;
		seq++;
	}
	if (a->res->changed_since_run && a->res->already_original == a->res->records)
		return RFS_OK;	/* already restored: writing again changes nothing */
	if (a->res->changed_since_run && !(a->flags & UNDO_APPLY_FORCE))
		return rfs_error_set(err, RFS_ERR_UNDO, RFS_NO_BLOCK,
				     "%llu block(s) of the image differ from what the repair left: "
				     "the image changed since, or it is the wrong image (--force "
				     "restores anyway)", (unsigned long long)a->res->changed_since_run);
	if (a->res->changed_since_run)
		a->res->forced = true;
	return RFS_OK;
}

/*
 * Walks the block records.  Pass 1 (write == false) verifies all of them and
 * sets valid_end; pass 2 writes the blocks pass 1 verified, re-verifying each.
 */
static rfs_status walk_records(struct apply_ctx *a, bool write, undo_block_fn on_block,
			       void *ctx, struct rfs_error *err)
{
	struct undo_reader *rd = &a->rd;
	uint64_t rec = REC_HEAD + rd->bs, pos = HDR_SIZE, seq = 0;
	uint64_t nblocks = rd->target.image_size / rd->bs;
	uint64_t limit = write ? a->valid_end
		       : rd->state == UNDO_STATE_FINISHED ? rd->records_end : rd->file_size;
	struct blkmap seen = { 0 };
	rfs_status st = RFS_OK;
	while (pos < limit) {
		enum rec_verdict v;
		uint32_t type = 0, len = 0;
		st = read_record(rd, pos, seq, &v, &type, &len, err);
		if (st)
			break;
		if (v == REC_VALID && type == REC_FINAL && rd->state == UNDO_STATE_OPEN && !write)
			break;	/* killed inside undo_finish: the block records are complete */
		if (v != REC_VALID || type != REC_BLOCK) {
			if (write) {
				st = bad_undo(err, "%s %llu", "undo file changed while applying, at offset", pos);
				break;
			}
			uint64_t tail = rd->file_size - pos;
			bool torn = rd->state == UNDO_STATE_OPEN &&
				    tail <= (uint64_t)RFS_UNDO_MAX_BATCH * rec &&
				    !later_batch_follows(rd, pos, seq);
			if (!torn && !(a->flags & UNDO_APPLY_FORCE)) {
				st = bad_undo(err, "%s %llu", "undo record fails verification at offset", pos);
				break;
			}
			a->res->forced |= !torn;
			a->res->torn_bytes = tail;
			break;
		}
		uint64_t blk = le64_at(rd->rec, R_BLK);
		if (blk >= nblocks) {
			st = bad_undo(err, "%s %llu", "undo record names a block past the image end:", blk);
			break;
		}
		if (!write) {
			/* Pass 1 also notes blocks that already hold their original, so
			 * that a second apply is recognised instead of refused. */
			st = rfs_dev_read_block(a->dev, blk, a->img, err);
			if (st)
				break;
			undo_transform(block_seed(rd->nonce, blk), rd->rec + REC_HEAD, rd->bs);
			a->res->already_original += memcmp(a->img, rd->rec + REC_HEAD, rd->bs) == 0;
			bool added;
			st = blkmap_add(&seen, blk, &added, err);
			if (st)
				break;
			if (!added) {
				st = bad_undo(err, "%s %llu", "undo file saves a block twice:", blk);
				break;
			}
			a->res->records++;
		} else {
			undo_transform(block_seed(rd->nonce, blk), rd->rec + REC_HEAD, rd->bs);
			if (!(a->flags & UNDO_APPLY_DRY_RUN)) {
				st = rfs_dev_write_block(a->dev, blk, rd->rec + REC_HEAD, err);
				if (st)
					break;
				a->res->blocks_restored++;
			}
			if (on_block)
				on_block(ctx, blk);
		}
		pos += rec;
		seq++;
	}
	blkmap_free(&seen);
	if (st)
		return st;
	if (!write) {
		a->valid_end = pos;
		if (rd->state == UNDO_STATE_FINISHED && a->res->torn_bytes == 0)
			return check_final(a, rd->records_end, rd->records, err);
	}
	return RFS_OK;
}

rfs_status undo_apply(const char *undo_path, const char *image_path, unsigned flags,
		      undo_block_fn on_block, void *ctx, struct undo_apply_result *res,
		      struct rfs_error *err)
{
	memset(res, 0, sizeof(*res));
	struct apply_ctx a = { .rd = { .fd = -1 }, .flags = flags, .res = res };
	rfs_status st = reader_open(&a.rd, undo_path, err);
	res->state = a.rd.state;
	res->target = a.rd.target;
	if (st || a.rd.state == UNDO_STATE_CREATING)
		goto out;	/* creating: no record, so the run wrote nothing */
	struct rfs_dev_options o = {
		.path = image_path, .offset = a.rd.target.fs_offset,
		.flags = flags & UNDO_APPLY_DRY_RUN ? 0 : RFS_DEV_WRITE | RFS_DEV_NO_UNDO,
	};
	st = rfs_dev_open(&o, &a.dev, err);
	if (st)
		goto out;
	if (rfs_dev_size(a.dev) != a.rd.target.image_size) {
		st = rfs_error_set(err, RFS_ERR_UNDO, RFS_NO_BLOCK,
				   "wrong image: %llu bytes from offset %llu, the undo file is for %llu",
				   (unsigned long long)rfs_dev_size(a.dev),
				   (unsigned long long)a.rd.target.fs_offset,
				   (unsigned long long)a.rd.target.image_size);
		goto out;
	}
	st = rfs_dev_set_block_size(a.dev, a.rd.bs, err);
	if (!st && !(a.img = malloc(a.rd.bs)))
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "image block buffer");
	if (!st)
		st = check_identity(&a, err);
	if (!st)
		st = walk_records(&a, false, NULL, NULL, err);
	if (!st)
		st = walk_records(&a, true, on_block, ctx, err);
out:
	if (a.dev) {
		struct rfs_error cerr;
		rfs_error_clear(&cerr);
		rfs_status cst = rfs_dev_close(a.dev, &cerr);	/* syncs the image */
		if (!st && cst) {
			st = cst;
			if (err && err->status == RFS_OK)
				*err = cerr;
		}
	}
	free(a.img);
	reader_close(&a.rd);
	return st;
}

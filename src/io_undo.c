/*
 * io_undo.c - the undo log's format and its writer (used by src/io.c before
 * every first write of a block).  src/undo_apply.c reads and applies it for
 * `rfsck undo`; src/undo_format.h holds the constants both share.
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

#include "undo_format.h"

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

uint64_t undo_block_seed(uint64_t nonce, uint64_t blk)
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

rfs_status undo_pread_upto(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got,
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
		undo_transform(undo_block_seed(u->nonce, blks[i]), r + REC_HEAD, bs);
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

/*
 * undo_apply.c - `rfsck undo`'s engine: verifies an undo file (format and
 * invariants in src/io_undo.c) against an image and writes the saved blocks
 * back.  Invariant (6) of io_undo.c lives here: pass 1 verifies the header,
 * the image's size and identity, and every record, and only then pass 2
 * writes, re-verifying each record as it goes.  The image is opened through
 * rfs_dev (so a mounted image is refused) and synced at the end.
 * Leaves behind: the restored image; the undo file is never modified.
 */
#include "rfs/undo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rfs/bytes.h"
#include "rfs/io.h"
#include "rfs/u64set.h"
#include "undo_format.h"

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

/* Every verification failure below is RFS_ERR_UNDO: the file is refused. */
#define UNDO_BAD(err, ...) rfs_error_set((err), RFS_ERR_UNDO, RFS_NO_BLOCK, __VA_ARGS__)

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
	rfs_status st = undo_pread_upto(rd->fd, rd->hdr, HDR_SIZE, 0, &got, "the undo header", err);
	if (st)
		return st;
	uint8_t *h = rd->hdr;
	if (got < HDR_SIZE)
		return UNDO_BAD(err, "undo header is truncated (%llu bytes)",
				(unsigned long long)(got));
	if (memcmp(h + H_MAGIC, UNDO_MAGIC, 8) != 0)
		return UNDO_BAD(err, "not an rfsck undo file (bad magic)");
	if (le32_at(h, H_VERSION) != UNDO_VERSION || le32_at(h, H_HDR_SIZE) != HDR_SIZE)
		return UNDO_BAD(err, "unsupported undo file version %llu",
				(unsigned long long)(le32_at(h, H_VERSION)));
	if (le32_at(h, H_FIXED_CRC) != undo_crc32c(0, h, H_FIXED_CRC))
		return UNDO_BAD(err, "undo header checksum mismatch (identity part)");
	rd->state = le32_at(h, H_STATE);
	if (rd->state != UNDO_STATE_OPEN && rd->state != UNDO_STATE_FINISHED)
		return UNDO_BAD(err, "undo header has unknown state %llu",
				(unsigned long long)(rd->state));
	if (rd->state == UNDO_STATE_FINISHED &&
	    le32_at(h, H_HDR_CRC) != undo_crc32c(0, h, H_HDR_CRC))
		return UNDO_BAD(err, "undo header checksum mismatch (finished part)");
	if (rd->state == UNDO_STATE_OPEN) {
		for (uint32_t i = H_STATE + 4; i < HDR_SIZE; i++)
			if (h[i])
				return UNDO_BAD(err, "unfinished undo header has data at byte %llu",
						(unsigned long long)(i));
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
		return UNDO_BAD(err, "undo header has a bad block size %llu",
				(unsigned long long)(rd->bs));
	if (rd->id_count > RFS_UNDO_MAX_IDENTITY_RANGES ||
	    le32_at(h, H_ID_BYTES) > RFS_UNDO_MAX_IDENTITY_BYTES)
		return UNDO_BAD(err, "undo header has too many identity ranges %llu",
				(unsigned long long)(rd->id_count));
	uint64_t sum = 0;
	for (uint32_t i = 0; i < rd->id_count; i++)
		sum += le32_at(h, H_RANGES + H_RANGE_SIZE * i + 8);
	if (sum != le32_at(h, H_ID_BYTES))
		return UNDO_BAD(err, "undo identity ranges do not add up to %llu",
				(unsigned long long)(sum));
	if (rd->state == UNDO_STATE_FINISHED &&
	    (rd->records_end != HDR_SIZE + rd->records * (REC_HEAD + rd->bs) ||
	     rd->final_end < rd->records_end + REC_HEAD || rd->final_end != rd->file_size))
		return UNDO_BAD(err, "finished undo header disagrees with the file's length (%llu)",
				(unsigned long long)rd->file_size);
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
	rfs_status st = undo_pread_upto(rd->fd, head, REC_HEAD, pos, &got, "an undo record", err);
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
	st = undo_pread_upto(rd->fd, dst + REC_HEAD, *len, pos + REC_HEAD, &got, "an undo record", err);
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
		    undo_pread_upto(rd->fd, head, REC_HEAD, q, &got, "an undo record", NULL) || got < REC_HEAD)
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
			return UNDO_BAD(err, "undo identity range outside the image at %llu",
					(unsigned long long)(off));
		rfs_status st = rfs_dev_read_bytes(a->dev, off, cur, len, err);
		if (st)
			return st;
		if (memcmp(cur, h + H_ID_DATA + at, len) != 0)
			return UNDO_BAD(err, "wrong image: identity bytes differ at byte %llu of the "
					"filesystem", (unsigned long long)off);
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
			return UNDO_BAD(err, "bad final-content record at offset %llu",
					(unsigned long long)(pos));
		for (uint32_t k = 0; k < len / FINAL_ENTRY; k++) {
			const uint8_t *e = a->rd.final_buf + REC_HEAD + (size_t)k * FINAL_ENTRY;
			uint64_t blk = le64_at(e, 0);
			if (blk >= a->rd.target.image_size / a->rd.bs)
				return UNDO_BAD(err, "final record names a block past the end: %llu",
						(unsigned long long)(blk));
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
	struct u64set seen = { 0 };
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
				st = UNDO_BAD(err, "undo file changed while applying, at offset %llu",
						(unsigned long long)(pos));
				break;
			}
			/* A final record whose head verifies (type set) was being
			 * written by undo_finish: every block record precedes it. */
			uint64_t tail = rd->file_size - pos;
			bool torn = rd->state == UNDO_STATE_OPEN &&
				    (type == REC_FINAL ||
				     (tail <= (uint64_t)RFS_UNDO_MAX_BATCH * rec &&
				      !later_batch_follows(rd, pos, seq)));
			if (!torn && !(a->flags & UNDO_APPLY_FORCE)) {
				st = UNDO_BAD(err, "undo record fails verification at offset %llu",
						(unsigned long long)(pos));
				break;
			}
			a->res->forced |= !torn;
			a->res->torn_bytes = tail;
			break;
		}
		uint64_t blk = le64_at(rd->rec, R_BLK);
		if (blk >= nblocks) {
			st = UNDO_BAD(err, "undo record names a block past the image end: %llu",
					(unsigned long long)(blk));
			break;
		}
		if (!write) {
			/* Pass 1 also notes blocks that already hold their original, so
			 * that a second apply is recognised instead of refused. */
			st = rfs_dev_read_block(a->dev, blk, a->img, err);
			if (st)
				break;
			undo_transform(undo_block_seed(rd->nonce, blk), rd->rec + REC_HEAD, rd->bs);
			a->res->already_original += memcmp(a->img, rd->rec + REC_HEAD, rd->bs) == 0;
			bool added;
			if (u64set_add(&seen, blk, &added)) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, blk, "set of restored blocks");
				break;
			}
			if (!added) {
				st = UNDO_BAD(err, "undo file saves a block twice: %llu",
						(unsigned long long)(blk));
				break;
			}
			a->res->records++;
		} else {
			undo_transform(undo_block_seed(rd->nonce, blk), rd->rec + REC_HEAD, rd->bs);
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
	u64set_free(&seen);
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

/*
 * undo_format.h - private to src/io_undo.c and src/undo_apply.c: the undo
 * file's layout constants and the helpers both sides share.  The format and
 * its invariants are described once, in the header comment of src/io_undo.c.
 */
#ifndef RFS_UNDO_FORMAT_H
#define RFS_UNDO_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

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

/* Keystream seed for the saved copy of block blk in a file with this nonce. */
uint64_t undo_block_seed(uint64_t nonce, uint64_t blk);

/* Reads up to len bytes at off, retrying EINTR and short reads; *got is how
 * many were there before end of file.  RFS_ERR_IO only for a failed read. */
rfs_status undo_pread_upto(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got,
			   const char *what, struct rfs_error *err);

#endif

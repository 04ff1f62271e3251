/*
 * format.h - the ReiserFS v3 on-disk format (formats 3.5 and 3.6), as offset
 * tables and decoded structs.
 *
 * Source of truth: ../shared/docs/reiserfs-format.md (section 1), restated from
 * the kernel driver and reiserfsprogs.  Every integer on disk is little-endian.
 *
 * Rules for code that uses this header:
 *  - Raw blocks are decoded by the functions declared here (src/super.c,
 *    src/node.c, src/item.c, src/journal_format.c).  Nothing past the decoders
 *    reads a raw buffer, and nothing casts a struct over disk bytes.
 *  - Every decoder checks lengths and offsets against the buffer it was given
 *    and returns RFS_ERR_CORRUPT (with a problem code in the fault) instead of
 *    reading outside it.
 *  - Decoded values are plain host integers; nothing here trusts a count read
 *    from disk to size an allocation without a bound derived from the block size.
 */
#ifndef RFS_FORMAT_H
#define RFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/problem.h"
#include "rfs/status.h"

/* ------------------------------------------------------------------------- */
/* Superblock.
 *
 *   OFFSET SIZE DESCRIPTION
 *        0    4 block_count
 *        4    4 free_blocks
 *        8    4 root_block
 *       12    4 journal: first block
 *       16    4 journal: device (0 = on this device)
 *       20    4 journal: size in blocks, not counting the header block
 *       24    4 journal: max blocks per transaction
 *       28    4 journal: magic (random, repeated in the journal header)
 *       32    4 journal: max batch
 *       36    4 journal: max commit age
 *       40    4 journal: max transaction age
 *       44    2 blocksize
 *       46    2 objectid map capacity (u32 entries)
 *       48    2 objectid map entries in use
 *       50    2 umount_state (1 clean, 2 mounted/unclean)
 *       52   10 magic "ReIsErFs" / "ReIsEr2Fs" / "ReIsEr3Fs", NUL padded
 *       62    2 fs_state (0 consistent, 1 error, 2 fatal, 4 io error)
 *       64    4 hash code (0 unset, 1 tea, 2 rupasov, 3 r5)
 *       68    2 tree height (root level + 1)
 *       70    2 bitmap block count (a hint; 0 on huge volumes)
 *       72    2 version (0 = 3.5, 2 = 3.6; decisive only with ReIsEr3Fs)
 *       74    2 blocks reserved for a relocated journal
 *   -- end of the 3.5 superblock (76 bytes); 3.6 continues:
 *       76    4 inode generation
 *       80    4 flags (bit 0: attributes cleared)
 *       84   16 uuid
 *      100   16 label
 *      116    2 mount count
 *      118    2 max mount count
 *      120    4 last check time
 *      124    4 check interval
 *      128   76 unused
 *   -- end of the 3.6 superblock (204 bytes).  The objectid map (u32 entries)
 *      follows the superblock structure inside the same block.
 */
enum {
	RFS_SB_OFFSET = 65536,       /* byte offset of the superblock */
	RFS_SB_OLD_OFFSET = 8192,    /* pre-mid-1999 3.5 filesystems */

	SB_BLOCK_COUNT = 0, SB_FREE_BLOCKS = 4, SB_ROOT_BLOCK = 8,
	SB_JP_FIRST = 12, SB_JP_DEV = 16, SB_JP_SIZE = 20, SB_JP_TRANS_MAX = 24,
	SB_JP_MAGIC = 28, SB_JP_MAX_BATCH = 32, SB_JP_MAX_COMMIT_AGE = 36,
	SB_JP_MAX_TRANS_AGE = 40, SB_BLOCKSIZE = 44, SB_OID_MAXSIZE = 46,
	SB_OID_CURSIZE = 48, SB_UMOUNT_STATE = 50, SB_MAGIC = 52, SB_MAGIC_LEN = 10,
	SB_FS_STATE = 62, SB_HASH = 64, SB_TREE_HEIGHT = 68, SB_BMAP_NR = 70,
	SB_VERSION = 72, SB_RESERVED_JOURNAL = 74, SB_V1_SIZE = 76,
	SB_INODE_GEN = 76, SB_FLAGS = 80, SB_UUID = 84, SB_LABEL = 100,
	SB_MNT_COUNT = 116, SB_MAX_MNT_COUNT = 118, SB_LASTCHECK = 120,
	SB_CHECK_INTERVAL = 124, SB_UNUSED = 128, SB_V2_SIZE = 204,
};

enum rfs_magic_kind { RFS_MAGIC_NONE = 0, RFS_MAGIC_35, RFS_MAGIC_36, RFS_MAGIC_JR };
enum rfs_fs_format { RFS_FORMAT_35 = 0, RFS_FORMAT_36 = 2 };
enum rfs_hash_code { RFS_HASH_UNSET = 0, RFS_HASH_TEA = 1, RFS_HASH_RUPASOV = 2, RFS_HASH_R5 = 3 };

struct rfs_super {
	/* fields as stored */
	uint32_t block_count, free_blocks, root_block;
	uint32_t j_first, j_dev, j_size, j_trans_max, j_magic, j_max_batch;
	uint32_t j_max_commit_age, j_max_trans_age;
	uint16_t blocksize, oid_maxsize, oid_cursize, umount_state;
	uint8_t magic[SB_MAGIC_LEN];
	uint16_t fs_state;
	uint32_t hash_code;
	uint16_t tree_height, bmap_nr, version, reserved_for_journal;
	uint32_t inode_generation, flags;           /* 3.6 only, else 0 */
	uint8_t uuid[16];
	uint8_t label[16];
	uint16_t mnt_count, max_mnt_count;
	uint32_t lastcheck, check_interval;
	/* derived by rfs_super_decode */
	enum rfs_magic_kind magic_kind;
	enum rfs_fs_format format;   /* what the magic (and version for JR) says */
	uint32_t sb_size;            /* 76 or 204: where the objectid map starts */
	uint64_t sb_byte_offset;     /* 65536 or 8192 */
	uint32_t sb_block;           /* block number holding the superblock */
	uint32_t bmap_count;         /* derived from block_count, not bmap_nr */
	bool old_layout;             /* superblock at 8 KiB: contiguous bitmaps */
};

/* Decodes a superblock from len bytes read at byte offset sb_byte_offset.
 * Returns RFS_ERR_NOT_REISERFS when no magic is there; RFS_OK otherwise, even
 * when fields are wrong (use rfs_super_check for that). */
rfs_status rfs_super_decode(const uint8_t *buf, size_t len, uint64_t sb_byte_offset,
			    struct rfs_super *out, struct rfs_error *err);

/* Checks the superblock's own consistency against a device of dev_blocks
 * whole blocks, calling fn for every problem found.  RFS_OK: usable for reading
 * (problems, if any, are of lower severity); RFS_ERR_CORRUPT: a FATAL problem
 * (block size, block count) makes it unusable. */
struct rfs_fault;
typedef void (*rfs_fault_fn)(void *ctx, const struct rfs_fault *fault);
rfs_status rfs_super_check(const struct rfs_super *sb, uint64_t dev_blocks,
			   rfs_fault_fn fn, void *ctx);

/* Block holding bitmap i (spread layout: first after the superblock, then i*8*bs;
 * old layout: contiguous after the superblock). */
uint64_t rfs_bitmap_block(const struct rfs_super *sb, uint32_t i);

/* Journal geometry: the header block, and the first block after the journal
 * area (log + header); blocks below that, other than bitmaps beyond the first,
 * are metadata that no tree node or file may use. */
uint64_t rfs_super_journal_header_block(const struct rfs_super *sb);
uint64_t rfs_super_journal_end(const struct rfs_super *sb);
/* A journal transaction limit check accepts: 1..1024 blocks and at most half
 * of a journal of j_size blocks (the kernel clamps others at mount). */
bool rfs_super_trans_max_valid(uint32_t trans_max, uint32_t j_size);
/* true if blk is the superblock area, a bitmap block or in the journal area. */
bool rfs_super_block_is_metadata(const struct rfs_super *sb, uint64_t blk);

/* ------------------------------------------------------------------------- */
/* Keys.
 *
 *   OFFSET SIZE DESCRIPTION
 *        0    4 dir_id (packing locality)
 *        4    4 objectid
 *        8    8 format 1: offset u32 at 8, uniqueness u32 at 12
 *               format 2: u64, bits 0-59 offset, bits 60-63 type
 */
enum { RFS_KEY_SIZE = 16 };

enum rfs_item_type {
	RFS_TYPE_STAT = 0,
	RFS_TYPE_INDIRECT = 1,
	RFS_TYPE_DIRECT = 2,
	RFS_TYPE_DIRENTRY = 3,
	RFS_TYPE_UNKNOWN = 14,       /* a v1 uniqueness that is none of the above */
	RFS_TYPE_ANY = 15,
};

enum rfs_key_format { RFS_KEY_V1 = 0, RFS_KEY_V2 = 1 };

enum {
	RFS_V1_UNIQ_STAT = 0, RFS_V1_UNIQ_DIRENTRY = 500, RFS_V1_UNIQ_ANY = 555,
	RFS_V1_UNIQ_DIRECT = 0xFFFFFFFFu, RFS_V1_UNIQ_INDIRECT = 0xFFFFFFFEu,
};

struct rfs_key {
	uint32_t dir_id;
	uint32_t objectid;
	uint64_t offset;
	uint8_t type;                /* enum rfs_item_type */
};

/* Decodes 16 bytes as a key of the given format. */
void rfs_key_decode(const uint8_t *p, enum rfs_key_format fmt, struct rfs_key *out);
/* The format the kernel infers from the bytes alone (top nibble 1..3 => v2). */
enum rfs_key_format rfs_key_guess_format(const uint8_t *p);
/* Encodes a key in the given format.  A v1 key cannot hold offsets >= 2^32. */
void rfs_key_encode(const struct rfs_key *k, enum rfs_key_format fmt, uint8_t *p);
/* Total order of the kernel's comp_keys: dir_id, objectid, offset, type. */
int rfs_key_cmp(const struct rfs_key *a, const struct rfs_key *b);
/* Compares only dir_id and objectid. */
int rfs_key_cmp_short(const struct rfs_key *a, const struct rfs_key *b);
const char *rfs_item_type_name(unsigned type);
/* "[dir_id objectid offset type]" into buf. */
void rfs_key_format_str(const struct rfs_key *k, char *buf, size_t len);

/* ------------------------------------------------------------------------- */
/* Block head (every tree node).
 *
 *   OFFSET SIZE DESCRIPTION
 *        0    2 level (0 free, 1 leaf, 2..5 internal)
 *        2    2 number of items (leaf) or keys (internal)
 *        4    2 free space in bytes
 *        6    2 reserved
 *        8   16 right delimiting key (unused, not trusted)
 *
 * Internal node: keys at 24 + 16*i (i < nr), then nr+1 disk children at
 * 24 + 16*nr + 8*j:  block u32 at 0, used size u16 at 4, reserved u16 at 6.
 *
 * Item head (leaf, at 24 + 24*i):
 *   OFFSET SIZE DESCRIPTION
 *        0   16 key
 *       16    2 entry count (directory) / free space in last unformatted node
 *       18    2 body length
 *       20    2 body location (from the start of the block)
 *       22    2 version: bits 0-11 key format (0 v1, 1 v2); 12-15 fsck flags
 */
enum {
	RFS_BLKH_SIZE = 24, BLKH_LEVEL = 0, BLKH_NR_ITEMS = 2, BLKH_FREE_SPACE = 4,
	BLKH_RESERVED = 6, BLKH_RIGHT_KEY = 8,
	RFS_DC_SIZE = 8, DC_BLOCK = 0, DC_SIZE = 4, DC_RESERVED = 6,
	RFS_IH_SIZE = 24, IH_KEY = 0, IH_FREE_OR_COUNT = 16, IH_LEN = 18,
	IH_LOCATION = 20, IH_VERSION = 22,
	RFS_LEVEL_FREE = 0, RFS_LEVEL_LEAF = 1, RFS_MAX_HEIGHT = 5,
	RFS_IH_FLAGS_MASK = 0xF000,
};

struct rfs_block_head {
	uint16_t level, nr_items, free_space;
};

struct rfs_item_head {
	struct rfs_key key;
	uint16_t free_or_count;
	uint16_t len;
	uint16_t location;
	uint16_t version;            /* raw: format in bits 0-11, flags 12-15 */
	enum rfs_key_format key_format;
};

struct rfs_disk_child {
	uint32_t block;
	uint16_t size;
};

/* A decoding failure: which problem, where in the block, and the two values
 * that disagree.  Filled by the validators; turned into a problem report by
 * the caller (check) or into a reject reason (rebuild's scanner). */
struct rfs_fault {
	enum rfs_problem_code code;
	int item;                    /* item / key / child index, or -1 */
	int entry;                   /* directory entry index, or -1 */
	uint64_t expected, found;
};

void rfs_block_head_decode(const uint8_t *blk, struct rfs_block_head *out);

/* Validates a leaf block of bs bytes: the kernel's and reiserfsprogs'
 * structural tests, item types and lengths, directory item layout, and key
 * order inside the leaf.  Every problem goes to fn (may be NULL: then it stops
 * at the first REBUILD-severity one).  Returns RFS_OK when the leaf can be used
 * (only FIXABLE/INFO problems), RFS_ERR_CORRUPT when it cannot.  Reads nothing
 * outside blk[0, bs). */
rfs_status rfs_leaf_validate(const uint8_t *blk, uint32_t bs, rfs_fault_fn fn, void *ctx);
/* Validates an internal node block: level 2..5, key count bound, keys strictly
 * increasing, child block numbers non-zero; free space (FIXABLE). */
rfs_status rfs_internal_validate(const uint8_t *blk, uint32_t bs, rfs_fault_fn fn, void *ctx);

/* Accessors for a node that passed validation (i is in range). */
void rfs_leaf_item_head(const uint8_t *blk, int i, struct rfs_item_head *out);
void rfs_internal_key(const uint8_t *blk, int i, struct rfs_key *out);
void rfs_internal_child(const uint8_t *blk, int nr_keys, int i, struct rfs_disk_child *out);

/* Maximum items in a leaf / keys in an internal node for block size bs. */
static inline uint32_t rfs_leaf_max_items(uint32_t bs) { return (bs - RFS_BLKH_SIZE) / (RFS_IH_SIZE + 1); }
static inline uint32_t rfs_internal_max_keys(uint32_t bs) { return (bs - RFS_BLKH_SIZE - RFS_DC_SIZE) / (RFS_KEY_SIZE + RFS_DC_SIZE); }

/* ------------------------------------------------------------------------- */
/* Stat data.
 *
 * v1 (32 bytes): mode u16 @0, nlink u16 @2, uid u16 @4, gid u16 @6, size u32 @8,
 *   atime @12, mtime @16, ctime @20, rdev-or-blocks u32 @24,
 *   first_direct_byte u32 @28.
 * v2 (44 bytes): mode u16 @0, attrs u16 @2, nlink u32 @4, size u64 @8,
 *   uid u32 @16, gid u32 @20, atime @24, mtime @28, ctime @32, blocks u32 @36,
 *   rdev-or-generation u32 @40.
 */
enum { RFS_SD_V1_SIZE = 32, RFS_SD_V2_SIZE = 44 };

struct rfs_stat {
	int version;                 /* 1 or 2 */
	uint16_t mode, attrs;
	uint32_t nlink, uid, gid;
	uint64_t size;
	uint32_t atime, mtime, ctime;
	uint32_t blocks;             /* 512-byte units (v1: only for non-devices) */
	uint32_t rdev;               /* device files */
	uint32_t generation;         /* v2 non-devices */
	uint32_t first_direct_byte;  /* v1 only; 0xFFFFFFFF = none */
};

/* Decodes a stat data body of 32 (v1) or 44 (v2) bytes; RFS_ERR_CORRUPT for
 * any other length. */
rfs_status rfs_stat_decode(const uint8_t *body, size_t len, struct rfs_stat *out);

/* ------------------------------------------------------------------------- */
/* Directory items: entry_count heads of 16 bytes, names packed from the end in
 * reverse order.
 *   OFFSET SIZE DESCRIPTION
 *        0    4 deh_offset (hash bits 7-30 | generation bits 0-6; "." 1, ".." 2)
 *        4    4 dir_id of the target
 *        8    4 objectid of the target
 *       12    2 location of the name inside the item body
 *       14    2 state (bit 2 visible)
 */
enum { RFS_DEH_SIZE = 16, DEH_OFFSET = 0, DEH_DIR_ID = 4, DEH_OBJECTID = 8,
       DEH_LOCATION = 12, DEH_STATE = 14, RFS_DEH_STATE_VISIBLE = 4,
       RFS_DOT_OFFSET = 1, RFS_DOTDOT_OFFSET = 2, RFS_NAME_MAX_KERNEL = 255 };

struct rfs_dirent {
	uint32_t offset;
	uint32_t dir_id, objectid;
	uint16_t location, state;
	const uint8_t *name;         /* points into the item body */
	uint16_t name_len;           /* trailing NULs stripped */
	uint16_t stored_len;         /* bytes of the slot, padding included */
};

/* Validates a directory item body against its head (entry count, locations
 * strictly decreasing and within the body, offsets strictly increasing, entry
 * state).  fault->item is left for the caller to set. */
rfs_status rfs_dir_validate(const uint8_t *body, size_t len, uint16_t entry_count,
			    rfs_fault_fn fn, void *ctx);
/* Decodes entry i of a validated directory item. */
void rfs_dir_entry(const uint8_t *body, size_t len, int i, struct rfs_dirent *out);
/* Whether an item body of len bytes whose head carries entry_count starts
 * like a directory item of object `objectid`: a first entry "." at offset 1
 * naming the object itself.  Any bytes are safe to pass; a file body under a
 * directory key type flip is what it recognises. */
bool rfs_body_holds_dot(const uint8_t *body, size_t len, uint16_t entry_count, uint32_t objectid);
/* The next run of consecutive non-zero block pointers of an indirect item
 * body of n pointers, from pointer *i on: true with *first, *count and the
 * run's index in *at, *i moved past it; false when only zeros (holes) are
 * left.  Pointers are not range-checked. */
bool rfs_indirect_next_run(const uint8_t *body, uint32_t n, uint32_t *i, uint32_t *first,
			   uint32_t *count, uint32_t *at);

/* ------------------------------------------------------------------------- */
/* Journal blocks.
 *
 * Header (block j_first + j_size):
 *   0 u32 last flushed trans id; 4 u32 first unflushed offset; 8 u32 mount id;
 *   12..43 copy of the superblock journal params (8 u32: first, dev, size,
 *   trans_max, magic, max_batch, max_commit_age, max_trans_age).
 * Descriptor: 0 trans id, 4 len, 8 mount id, 12.. real block numbers (first
 *   half), magic "ReIsErLB" at bs - 12.
 * Commit: 0 trans id, 4 len, 8.. real block numbers (second half).
 */
enum { JH_LAST_FLUSH = 0, JH_FIRST_UNFLUSHED = 4, JH_MOUNT_ID = 8, JH_PARAMS = 12,
       JD_TRANS_ID = 0, JD_LEN = 4, JD_MOUNT_ID = 8, JD_REAL = 12,
       JC_TRANS_ID = 0, JC_LEN = 4, JC_REAL = 8 };
#define RFS_JOURNAL_DESC_MAGIC "ReIsErLB"

struct rfs_journal_header {
	uint32_t last_flush_trans_id, first_unflushed_offset, mount_id;
	uint32_t params[8];
};

void rfs_journal_header_decode(const uint8_t *blk, struct rfs_journal_header *out);
/* true if blk is a descriptor (magic present); fills trans id, len, mount id. */
bool rfs_journal_desc_decode(const uint8_t *blk, uint32_t bs, uint32_t *trans_id,
			     uint32_t *len, uint32_t *mount_id);
/* Home block of logged block i of a transaction (i < len); desc and commit are
 * the two blocks; returns false if i is out of the representable range. */
bool rfs_journal_real_block(const uint8_t *desc, const uint8_t *commit, uint32_t bs,
			    uint32_t i, uint32_t *home);
static inline uint32_t rfs_journal_trans_half(uint32_t bs) { return (bs - 24) / 4; }

/* ------------------------------------------------------------------------- */
/* Special objects. */
enum {
	RFS_ROOT_PARENT_OBJECTID = 1,
	RFS_ROOT_DIR_ID = 1,
	RFS_ROOT_OBJECTID = 2,
	RFS_SAFELINK_DIR_ID = 0xFFFFFFFFu,
};

/* ------------------------------------------------------------------------- */
/* Encoders (src/format_encode.c): the inverses of the decoders above, for the
 * code that writes nodes (rebuild's tree builder, repairs).
 *
 * Contract: for every block that the decoders accept,
 *   encode(decode(bytes)) == bytes
 * for item heads without fsck flags, stat data, and directory items (with
 * rfs_dirent_in.stored_len taken from rfs_dirent.stored_len), which
 * tests/unit/test_format_encode.c checks on every leaf of kernel-written
 * images.  decode(encode(x)) == x holds for every x the encoder accepts.
 * Encoders write little-endian stores only; none casts a struct over bytes.
 */

/* Writes the 24-byte item head at p: key in ih->key_format, the entry count or
 * free space, len, location, and version = key_format with the fsck flag bits
 * (12-15) zero.  ih->version is ignored. */
void rfs_item_head_encode(const struct rfs_item_head *ih, uint8_t *p);

/* Writes the 24-byte block head at the start of blk: level, nr_items,
 * free_space; reserved and the right delimiting key zeroed. */
void rfs_block_head_encode(const struct rfs_block_head *bh, uint8_t *blk);

/* Encodes st as stat data of st->version (1: 32 bytes, 2: 44 bytes) into
 * body[0, cap); *len (OUT) is the body length.  Character and block devices
 * store rdev in the shared field (v1 @24, v2 @40); other files store blocks
 * (v1) or generation (v2).  v1 cannot hold attrs or generation (ignored) nor
 * values wider than its 16/32-bit fields.
 * RFS_ERR_INVALID: unknown version, cap too small, or a value that the version
 * cannot represent (v1 nlink/uid/gid > 0xFFFF, size > 0xFFFFFFFF). */
rfs_status rfs_stat_encode(const struct rfs_stat *st, uint8_t *body, size_t cap, size_t *len);

/* One directory entry to encode. */
struct rfs_dirent_in {
	uint32_t offset;             /* deh_offset: hash | generation; 1 ".", 2 ".." */
	uint32_t dir_id, objectid;   /* key of the object the name points to */
	uint16_t state;              /* RFS_DEH_STATE_VISIBLE for a normal entry */
	const uint8_t *name;         /* name bytes, not NUL-terminated */
	uint16_t name_len;           /* >= 1; the last byte must not be NUL */
	uint16_t stored_len;         /* 0: the slot size fmt gives; else the exact
				      * slot size (>= name_len, NUL padded), to
				      * reproduce an existing item byte for byte */
};

/* Bytes one entry takes in a directory item: 16 + the stored name length.
 * fmt is the padding rule, not the item head's key format: RFS_KEY_V2 pads the
 * name with NULs to a multiple of 8 (what the 3.6 kernel writes in directories
 * with v2 stat data, although it gives the directory items themselves key
 * format v1); RFS_KEY_V1 stores it unpadded (3.5). */
size_t rfs_dir_entry_size(uint16_t name_len, enum rfs_key_format fmt);

/* Encodes n entries as one directory item body into body[0, cap): entry heads
 * in order, names packed from the end in reverse order (entry 0's name last),
 * each slot sized by rfs_dir_entry_size or e[i].stored_len.  *len (OUT) is the
 * body length; the item head's entry count is n.  The result passes
 * rfs_dir_validate.
 * RFS_ERR_INVALID: n == 0, an empty name or one ending in NUL, stored_len <
 * name_len, offsets not strictly increasing, or the body longer than cap or
 * 0xFFFF bytes; body is then unspecified. */
rfs_status rfs_dir_item_encode(const struct rfs_dirent_in *e, size_t n, enum rfs_key_format fmt,
			       uint8_t *body, size_t cap, size_t *len);

#endif

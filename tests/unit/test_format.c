/*
 * test_format.c - the on-disk layout pins and the decoders/validators of
 * src/super.c, src/key.c, src/node.c, src/item.c, src/journal_format.c.
 *
 * Leaves are built here byte by byte the way the kernel lays them out (the
 * layout of a fresh mkreiserfs root leaf), then damaged one field at a time;
 * each damage must give its own problem code.  A mutation loop checks the
 * contract "a leaf that validates can be fully decoded without reading out of
 * bounds" under AddressSanitizer.
 */
#include "testutil.h"

#include "rfs/bytes.h"
#include "rfs/format.h"
#include "rfs/hash.h"

enum { BS = 4096 };

static void test_offsets_pinned(void **state)
{
	(void)state;
	assert_int_equal(SB_BLOCK_COUNT, 0);
	assert_int_equal(SB_FREE_BLOCKS, 4);
	assert_int_equal(SB_ROOT_BLOCK, 8);
	assert_int_equal(SB_JP_FIRST, 12);
	assert_int_equal(SB_JP_DEV, 16);
	assert_int_equal(SB_JP_SIZE, 20);
	assert_int_equal(SB_JP_TRANS_MAX, 24);
	assert_int_equal(SB_JP_MAGIC, 28);
	assert_int_equal(SB_JP_MAX_BATCH, 32);
	assert_int_equal(SB_JP_MAX_COMMIT_AGE, 36);
	assert_int_equal(SB_JP_MAX_TRANS_AGE, 40);
	assert_int_equal(SB_BLOCKSIZE, 44);
	assert_int_equal(SB_OID_MAXSIZE, 46);
	assert_int_equal(SB_OID_CURSIZE, 48);
	assert_int_equal(SB_UMOUNT_STATE, 50);
	assert_int_equal(SB_MAGIC, 52);
	assert_int_equal(SB_FS_STATE, 62);
	assert_int_equal(SB_HASH, 64);
	assert_int_equal(SB_TREE_HEIGHT, 68);
	assert_int_equal(SB_BMAP_NR, 70);
	assert_int_equal(SB_VERSION, 72);
	assert_int_equal(SB_RESERVED_JOURNAL, 74);
	assert_int_equal(SB_V1_SIZE, 76);
	assert_int_equal(SB_INODE_GEN, 76);
	assert_int_equal(SB_FLAGS, 80);
	assert_int_equal(SB_UUID, 84);
	assert_int_equal(SB_LABEL, 100);
	assert_int_equal(SB_MNT_COUNT, 116);
	assert_int_equal(SB_MAX_MNT_COUNT, 118);
	assert_int_equal(SB_LASTCHECK, 120);
	assert_int_equal(SB_CHECK_INTERVAL, 124);
	assert_int_equal(SB_UNUSED, 128);
	assert_int_equal(SB_V2_SIZE, 204);
	assert_int_equal(RFS_BLKH_SIZE, 24);
	assert_int_equal(RFS_KEY_SIZE, 16);
	assert_int_equal(RFS_IH_SIZE, 24);
	assert_int_equal(IH_FREE_OR_COUNT, 16);
	assert_int_equal(IH_LEN, 18);
	assert_int_equal(IH_LOCATION, 20);
	assert_int_equal(IH_VERSION, 22);
	assert_int_equal(RFS_DC_SIZE, 8);
	assert_int_equal(RFS_DEH_SIZE, 16);
	assert_int_equal(DEH_LOCATION, 12);
	assert_int_equal(DEH_STATE, 14);
	assert_int_equal(RFS_SD_V1_SIZE, 32);
	assert_int_equal(RFS_SD_V2_SIZE, 44);
	assert_int_equal(rfs_leaf_max_items(4096), 162);
	assert_int_equal(rfs_internal_max_keys(4096), 169);
	assert_int_equal(rfs_journal_trans_half(4096), 1018);
	assert_int_equal(rfs_journal_trans_half(1024), 250);
}

static void test_keys(void **state)
{
	(void)state;
	uint8_t b[16];
	struct rfs_key k = { 7, 9, 4097, RFS_TYPE_INDIRECT }, d;
	rfs_key_encode(&k, RFS_KEY_V2, b);
	assert_int_equal(rfs_key_guess_format(b), RFS_KEY_V2);
	rfs_key_decode(b, RFS_KEY_V2, &d);
	assert_int_equal(rfs_key_cmp(&k, &d), 0);
	assert_int_equal(le64_at(b, 8), (UINT64_C(1) << 60) | 4097);

	rfs_key_encode(&k, RFS_KEY_V1, b);
	assert_int_equal(le32_at(b, 12), 0xFFFFFFFEu);
	assert_int_equal(rfs_key_guess_format(b), RFS_KEY_V1);
	rfs_key_decode(b, RFS_KEY_V1, &d);
	assert_int_equal(rfs_key_cmp(&k, &d), 0);

	struct rfs_key dir = { 1, 2, 1, RFS_TYPE_DIRENTRY };
	rfs_key_encode(&dir, RFS_KEY_V1, b);
	assert_int_equal(le32_at(b, 12), 500);
	rfs_key_decode(b, RFS_KEY_V1, &d);
	assert_int_equal(d.type, RFS_TYPE_DIRENTRY);
	le32_put(b, 12, 12345);
	rfs_key_decode(b, RFS_KEY_V1, &d);
	assert_int_equal(d.type, RFS_TYPE_UNKNOWN);

	/* comp_keys order: dir_id, objectid, offset, type (SD < IND < DRCT < DIR) */
	struct rfs_key order[] = {
		{ 1, 2, 0, RFS_TYPE_STAT }, { 1, 2, 1, RFS_TYPE_INDIRECT },
		{ 1, 2, 1, RFS_TYPE_DIRECT }, { 1, 2, 1, RFS_TYPE_DIRENTRY },
		{ 1, 2, 0x2229cf00u, RFS_TYPE_DIRENTRY }, { 1, 3, 0, RFS_TYPE_STAT },
		{ 1, 0xFFFFFFF0u, 0, RFS_TYPE_STAT }, { 2, 1, 0, RFS_TYPE_STAT },
		{ 0xFFFFFFFFu, 5, 1, RFS_TYPE_INDIRECT },
	};
	size_t n = sizeof(order) / sizeof(order[0]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int c = rfs_key_cmp(&order[i], &order[j]);
			assert_int_equal(c < 0, i < j);
			assert_int_equal(c == 0, i == j);
		}
}

/* Builds the kind of root leaf mkreiserfs writes: stat data v2 of (1,2) and
 * a directory item with "." and ".." (names padded to 8 bytes). */
static void build_root_leaf(uint8_t *blk, unsigned hash_code, bool add_file)
{
	memset(blk, 0, BS);
	int nr = add_file ? 3 : 2;
	le16_put(blk, BLKH_LEVEL, 1);
	le16_put(blk, BLKH_NR_ITEMS, (uint16_t)nr);
	uint16_t loc = BS;
	/* item 0: stat data of the root */
	struct rfs_key k0 = { 1, 2, 0, RFS_TYPE_STAT };
	uint8_t *ih = blk + 24;
	rfs_key_encode(&k0, RFS_KEY_V1, ih);
	loc -= 44;
	le16_put(ih, IH_LEN, 44);
	le16_put(ih, IH_LOCATION, loc);
	le16_put(ih, IH_VERSION, 1);
	le16_put(blk, loc, 040755);
	le32_put(blk, loc + 4, 3);
	le64_put(blk, loc + 8, add_file ? 72 : 48);
	/* item 1: directory entries */
	int ents = add_file ? 3 : 2;
	uint16_t len = (uint16_t)(ents * 16 + 8 + 8 + (add_file ? 8 : 0));
	ih = blk + 48;
	struct rfs_key k1 = { 1, 2, 1, RFS_TYPE_DIRENTRY };
	rfs_key_encode(&k1, RFS_KEY_V1, ih);
	loc -= len;
	le16_put(ih, IH_FREE_OR_COUNT, (uint16_t)ents);
	le16_put(ih, IH_LEN, len);
	le16_put(ih, IH_LOCATION, loc);
	uint8_t *body = blk + loc;
	uint16_t nloc = len;
	const char *names[] = { ".", "..", "a.txt" };
	uint32_t offs[] = { 1, 2, rfs_hash_entry_offset(hash_code, (const uint8_t *)"a.txt", 5) };
	uint32_t tgt[][2] = { { 1, 2 }, { 0, 1 }, { 2, 3 } };
	for (int i = 0; i < ents; i++) {
		nloc -= 8;
		le32_put(body, i * 16 + 0, offs[i]);
		le32_put(body, i * 16 + 4, tgt[i][0]);
		le32_put(body, i * 16 + 8, tgt[i][1]);
		le16_put(body, i * 16 + 12, nloc);
		le16_put(body, i * 16 + 14, 4);
		memcpy(body + nloc, names[i], strlen(names[i]));
	}
	if (add_file) {
		/* item 2: a direct item of file (2,3) */
		ih = blk + 72;
		struct rfs_key k2 = { 2, 3, 1, RFS_TYPE_DIRECT };
		rfs_key_encode(&k2, RFS_KEY_V2, ih);
		loc -= 8;
		le16_put(ih, IH_FREE_OR_COUNT, 0xFFFF);
		le16_put(ih, IH_LEN, 8);
		le16_put(ih, IH_LOCATION, loc);
		le16_put(ih, IH_VERSION, 1);
		memcpy(blk + loc, "hello!\n", 7);
	}
	le16_put(blk, BLKH_FREE_SPACE, (uint16_t)(loc - 24 - 24 * nr));
}

struct faults {
	enum rfs_problem_code codes[64];
	int n;
};

static void record(void *c, const struct rfs_fault *f)
{
	struct faults *fl = c;
	if (fl->n < 64)
		fl->codes[fl->n++] = f->code;
}

static bool has(const struct faults *fl, enum rfs_problem_code code)
{
	for (int i = 0; i < fl->n; i++)
		if (fl->codes[i] == code)
			return true;
	return false;
}

static void test_leaf_valid(void **state)
{
	(void)state;
	static uint8_t blk[BS];
	for (int add = 0; add <= 1; add++) {
		build_root_leaf(blk, 3, add);
		struct faults fl = { .n = 0 };
		assert_int_equal(rfs_leaf_validate(blk, BS, record, &fl), RFS_OK);
		assert_int_equal(fl.n, 0);
		assert_int_equal(rfs_leaf_validate(blk, BS, NULL, NULL), RFS_OK);
		struct rfs_item_head ih;
		rfs_leaf_item_head(blk, 1, &ih);
		struct rfs_dirent de;
		rfs_dir_entry(blk + ih.location, ih.len, 1, &de);
		assert_int_equal(de.name_len, 2);
		assert_int_equal(de.stored_len, 8);
		assert_memory_equal(de.name, "..", 2);
		assert_int_equal(de.objectid, 1);
		rfs_leaf_item_head(blk, 0, &ih);
		struct rfs_stat sd;
		assert_int_equal(rfs_stat_decode(blk + ih.location, ih.len, &sd), RFS_OK);
		assert_int_equal(sd.version, 2);
		assert_int_equal(sd.mode, 040755);
		assert_int_equal(sd.nlink, 3);
	}
}

/* One damage, the code it must produce, and whether the leaf stays usable. */
static void expect_damage(void (*damage)(uint8_t *), enum rfs_problem_code code, bool usable)
{
	static uint8_t blk[BS];
	build_root_leaf(blk, 3, true);
	damage(blk);
	struct faults fl = { .n = 0 };
	rfs_status st = rfs_leaf_validate(blk, BS, record, &fl);
	if (!has(&fl, code))
		fail_msg("expected problem %s, got %d problems (first %s)", rfs_problem_def(code)->name,
			 fl.n, fl.n ? rfs_problem_def(fl.codes[0])->name : "none");
	assert_int_equal(st == RFS_OK, usable);
	assert_int_equal(rfs_leaf_validate(blk, BS, NULL, NULL) == RFS_OK, usable);
}

static void dmg_level(uint8_t *b) { le16_put(b, BLKH_LEVEL, 2); }
static void dmg_nr_huge(uint8_t *b) { le16_put(b, BLKH_NR_ITEMS, 400); }
static void dmg_nr_zero(uint8_t *b) { le16_put(b, BLKH_NR_ITEMS, 0); }
static void dmg_free(uint8_t *b) { le16_put(b, BLKH_FREE_SPACE, 17); }
static void dmg_loc(uint8_t *b) { le16_put(b + 48, IH_LOCATION, (uint16_t)(le16_at(b + 48, IH_LOCATION) + 4)); }
static void dmg_len0(uint8_t *b) { le16_put(b + 24, IH_LEN, 0); }
static void dmg_len_big(uint8_t *b) { le16_put(b + 24, IH_LEN, 5000); }
static void dmg_overlap(uint8_t *b)
{
	/* the last body is stretched down into the item head array */
	uint16_t end = le16_at(b + 48, IH_LOCATION);
	le16_put(b + 72, IH_LOCATION, 50);
	le16_put(b + 72, IH_LEN, (uint16_t)(end - 50));
}
static void dmg_flags(uint8_t *b) { le16_put(b + 24, IH_VERSION, 0x2001); }
static void dmg_keyfmt(uint8_t *b) { le16_put(b + 24, IH_VERSION, 7); }
static void dmg_type(uint8_t *b) { le32_put(b + 48, 12, 777); }
static void dmg_sd_len(uint8_t *b)
{
	/* shrink the stat data to 40 bytes, keeping the packing consistent */
	le16_put(b + 24, IH_LEN, 40);
	le16_put(b + 24, IH_LOCATION, (uint16_t)(le16_at(b + 24, IH_LOCATION) + 4));
}
static void dmg_unsorted(uint8_t *b) { le32_put(b + 72, 0, 0); }
static void dmg_dir_count(uint8_t *b) { le16_put(b + 48, IH_FREE_OR_COUNT, 60); }
static void dmg_dir_count0(uint8_t *b) { le16_put(b + 48, IH_FREE_OR_COUNT, 0); }
static void dmg_dir_loc(uint8_t *b) { le16_put(b + le16_at(b + 48, IH_LOCATION), 16 + 12, 9000); }
static void dmg_dir_offs(uint8_t *b) { le32_put(b + le16_at(b + 48, IH_LOCATION), 32, 1); }
static void dmg_dir_state(uint8_t *b) { le16_put(b + le16_at(b + 48, IH_LOCATION), 14, 0); }
static void dmg_dir_gap(uint8_t *b) { le16_put(b + le16_at(b + 48, IH_LOCATION), 32 + 12, 50); }
static void dmg_dir_empty(uint8_t *b)
{
	uint8_t *body = b + le16_at(b + 48, IH_LOCATION);
	memset(body + le16_at(body, 32 + 12), 0, 8);
}

static void test_leaf_damage(void **state)
{
	(void)state;
	expect_damage(dmg_level, PR_NODE_BAD_LEVEL, false);
	expect_damage(dmg_nr_huge, PR_LEAF_BAD_NR_ITEMS, false);
	expect_damage(dmg_nr_zero, PR_LEAF_BAD_NR_ITEMS, false);
	expect_damage(dmg_free, PR_LEAF_BAD_FREE_SPACE, true);
	expect_damage(dmg_loc, PR_LEAF_ITEM_BAD_LOCATION, false);
	expect_damage(dmg_len0, PR_LEAF_ITEM_BAD_LENGTH, false);
	expect_damage(dmg_len_big, PR_LEAF_ITEM_BAD_LENGTH, false);
	expect_damage(dmg_overlap, PR_LEAF_ITEM_OVERLAP, false);
	expect_damage(dmg_flags, PR_ITEM_FLAGS_SET, true);
	expect_damage(dmg_keyfmt, PR_ITEM_BAD_KEY_FORMAT, true);
	expect_damage(dmg_type, PR_ITEM_BAD_TYPE, false);
	expect_damage(dmg_sd_len, PR_STAT_BAD_LENGTH, false);
	expect_damage(dmg_unsorted, PR_LEAF_KEYS_UNSORTED, false);
	expect_damage(dmg_dir_count, PR_DIR_COUNT_TOO_BIG, false);
	expect_damage(dmg_dir_count0, PR_DIR_NO_ENTRIES, false);
	expect_damage(dmg_dir_loc, PR_DIR_BAD_LOCATION, false);
	expect_damage(dmg_dir_offs, PR_DIR_OFFSETS_UNSORTED, false);
	expect_damage(dmg_dir_state, PR_DIR_ENTRY_STATE, true);
	expect_damage(dmg_dir_gap, PR_DIR_LAST_NAME_GAP, false);
	expect_damage(dmg_dir_empty, PR_DIR_NAME_EMPTY, false);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)rng_state;
}

/* Decodes everything a validated leaf offers; ASan catches any stray read. */
static unsigned decode_all(const uint8_t *blk)
{
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	unsigned sum = 0;
	for (int i = 0; i < bh.nr_items; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(blk, i, &ih);
		const uint8_t *body = blk + ih.location;
		for (unsigned j = 0; j < ih.len; j++)
			sum += body[j];
		if (ih.key.type == RFS_TYPE_DIRENTRY)
			for (int e = 0; e < ih.free_or_count; e++) {
				struct rfs_dirent de;
				rfs_dir_entry(body, ih.len, e, &de);
				for (unsigned j = 0; j < de.name_len; j++)
					sum += de.name[j];
			}
		if (ih.key.type == RFS_TYPE_STAT) {
			struct rfs_stat sd;
			assert_int_equal(rfs_stat_decode(body, ih.len, &sd), RFS_OK);
		}
	}
	return sum;
}

static void test_leaf_mutations(void **state)
{
	(void)state;
	/* The block is allocated at exactly BS bytes so ASan sees any overrun. */
	uint8_t *blk = malloc(BS);
	assert_non_null(blk);
	unsigned valid = 0, total = 0;
	for (int iter = 0; iter < 60000; iter++) {
		build_root_leaf(blk, 3, iter & 1);
		int flips = 1 + (int)(rng() % 4);
		for (int f = 0; f < flips; f++) {
			/* aim at the head area most of the time */
			size_t pos = (rng() % 4) ? rng() % 120 : (size_t)(BS - 1 - rng() % 160);
			blk[pos] ^= (uint8_t)(1u << (rng() % 8));
		}
		struct faults fl = { .n = 0 };
		rfs_status a = rfs_leaf_validate(blk, BS, record, &fl);
		rfs_status b = rfs_leaf_validate(blk, BS, NULL, NULL);
		assert_int_equal(a, b);   /* callback or not, same verdict */
		total++;
		if (a == RFS_OK) {
			valid++;
			total += decode_all(blk) & 0;
		}
	}
	/* Random bytes: must never crash; almost never valid. */
	for (int iter = 0; iter < 20000; iter++) {
		for (int i = 0; i < BS; i++)
			blk[i] = (uint8_t)rng();
		blk[0] = 1;
		blk[1] = 0;
		if (rfs_leaf_validate(blk, BS, NULL, NULL) == RFS_OK)
			decode_all(blk);
	}
	free(blk);
	assert_true(valid > 0 && valid < total);
}

static void test_internal(void **state)
{
	(void)state;
	static uint8_t blk[BS];
	memset(blk, 0, BS);
	le16_put(blk, BLKH_LEVEL, 2);
	le16_put(blk, BLKH_NR_ITEMS, 2);
	struct rfs_key k1 = { 1, 5, 0, RFS_TYPE_STAT }, k2 = { 3, 9, 0, RFS_TYPE_STAT };
	rfs_key_encode(&k1, RFS_KEY_V1, blk + 24);
	rfs_key_encode(&k2, RFS_KEY_V1, blk + 40);
	for (int i = 0; i < 3; i++) {
		le32_put(blk, 56 + 8 * i, (uint32_t)(100 + i));
		le16_put(blk, 56 + 8 * i + 4, 4000);
	}
	le16_put(blk, BLKH_FREE_SPACE, BS - 24 - 32 - 24);
	struct faults fl = { .n = 0 };
	assert_int_equal(rfs_internal_validate(blk, BS, record, &fl), RFS_OK);
	assert_int_equal(fl.n, 0);
	struct rfs_disk_child dc;
	rfs_internal_child(blk, 2, 2, &dc);
	assert_int_equal(dc.block, 102);
	assert_int_equal(dc.size, 4000);

	le16_put(blk, BLKH_FREE_SPACE, 5);
	fl.n = 0;
	assert_int_equal(rfs_internal_validate(blk, BS, record, &fl), RFS_OK);
	assert_true(has(&fl, PR_INTERNAL_BAD_FREE_SPACE));

	rfs_key_encode(&k1, RFS_KEY_V1, blk + 40);   /* keys equal: unsorted */
	fl.n = 0;
	assert_int_equal(rfs_internal_validate(blk, BS, record, &fl), RFS_ERR_CORRUPT);
	assert_true(has(&fl, PR_INTERNAL_KEYS_UNSORTED));

	rfs_key_encode(&k2, RFS_KEY_V1, blk + 40);
	le32_put(blk, 56 + 8, 0);
	fl.n = 0;
	assert_int_equal(rfs_internal_validate(blk, BS, record, &fl), RFS_ERR_CORRUPT);
	assert_true(has(&fl, PR_INTERNAL_ZERO_CHILD));

	le16_put(blk, BLKH_NR_ITEMS, 170);
	assert_int_equal(rfs_internal_validate(blk, BS, NULL, NULL), RFS_ERR_CORRUPT);
	le16_put(blk, BLKH_LEVEL, 6);
	fl.n = 0;
	assert_int_equal(rfs_internal_validate(blk, BS, record, &fl), RFS_ERR_CORRUPT);
	assert_true(has(&fl, PR_NODE_BAD_LEVEL));
}

/* A superblock like mkreiserfs -f -q on a 64 MiB file writes. */
static void build_super(uint8_t *b, const char *magic, uint16_t version)
{
	memset(b, 0, SB_V2_SIZE);
	le32_put(b, SB_BLOCK_COUNT, 16384);
	le32_put(b, SB_FREE_BLOCKS, 8172);
	le32_put(b, SB_ROOT_BLOCK, 8211);
	le32_put(b, SB_JP_FIRST, 18);
	le32_put(b, SB_JP_SIZE, 8192);
	le32_put(b, SB_JP_TRANS_MAX, 1024);
	le32_put(b, SB_JP_MAX_BATCH, 900);
	le32_put(b, SB_JP_MAX_COMMIT_AGE, 30);
	le16_put(b, SB_BLOCKSIZE, 4096);
	le16_put(b, SB_OID_MAXSIZE, 972);
	le16_put(b, SB_OID_CURSIZE, 2);
	le16_put(b, SB_UMOUNT_STATE, 1);
	memcpy(b + SB_MAGIC, magic, strlen(magic));
	le32_put(b, SB_HASH, 3);
	le16_put(b, SB_TREE_HEIGHT, 2);
	le16_put(b, SB_BMAP_NR, 1);
	le16_put(b, SB_VERSION, version);
	memcpy(b + SB_LABEL, "lbl", 3);
}

static void test_super(void **state)
{
	(void)state;
	uint8_t b[SB_V2_SIZE];
	struct rfs_super sb;
	struct rfs_error err;
	rfs_error_clear(&err);
	build_super(b, "ReIsEr2Fs", 2);
	assert_int_equal(rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err), RFS_OK);
	assert_int_equal(sb.format, RFS_FORMAT_36);
	assert_int_equal(sb.sb_block, 16);
	assert_int_equal(sb.bmap_count, 1);
	assert_int_equal(sb.sb_size, 204);
	assert_memory_equal(sb.label, "lbl", 3);
	assert_int_equal(rfs_bitmap_block(&sb, 0), 17);
	assert_int_equal(rfs_super_journal_header_block(&sb), 8210);
	assert_int_equal(rfs_super_journal_end(&sb), 8211);
	assert_true(rfs_super_block_is_metadata(&sb, 16));
	assert_true(rfs_super_block_is_metadata(&sb, 17));
	assert_true(rfs_super_block_is_metadata(&sb, 8210));
	assert_false(rfs_super_block_is_metadata(&sb, 8211));
	struct faults fl = { .n = 0 };
	assert_int_equal(rfs_super_check(&sb, 16384, record, &fl), RFS_OK);
	assert_int_equal(fl.n, 0);

	fl.n = 0;
	assert_int_equal(rfs_super_check(&sb, 8000, record, &fl), RFS_OK);
	assert_true(has(&fl, PR_SB_DEVICE_TOO_SMALL));

	build_super(b, "ReIsErFs", 0);
	assert_int_equal(rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err), RFS_OK);
	assert_int_equal(sb.format, RFS_FORMAT_35);
	assert_int_equal(sb.sb_size, 76);
	assert_int_equal(sb.label[0], 0);   /* 3.5 has no label: not decoded */

	build_super(b, "ReIsEr3Fs", 0);
	assert_int_equal(rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err), RFS_OK);
	assert_int_equal(sb.format, RFS_FORMAT_35);
	build_super(b, "ReIsEr3Fs", 2);
	assert_int_equal(rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err), RFS_OK);
	assert_int_equal(sb.format, RFS_FORMAT_36);

	/* 32769 blocks need two bitmaps; the second sits at 32768 */
	le32_put(b, SB_BLOCK_COUNT, 32769);
	le16_put(b, SB_BMAP_NR, 0);
	rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err);
	assert_int_equal(sb.bmap_count, 2);
	assert_int_equal(rfs_bitmap_block(&sb, 1), 32768);
	assert_true(rfs_super_block_is_metadata(&sb, 32768));
	fl.n = 0;
	rfs_super_check(&sb, 32769, record, &fl);
	assert_true(has(&fl, PR_SB_BMAP_NR_MISMATCH));

	/* bad block size is fatal; a zero-filled buffer has no magic */
	build_super(b, "ReIsEr2Fs", 2);
	le16_put(b, SB_BLOCKSIZE, 1000);
	rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err);
	fl.n = 0;
	assert_int_equal(rfs_super_check(&sb, 16384, record, &fl), RFS_ERR_CORRUPT);
	assert_true(has(&fl, PR_SB_BAD_BLOCKSIZE));
	memset(b, 0, sizeof(b));
	assert_int_equal(rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err),
			 RFS_ERR_NOT_REISERFS);

	/* journal over the bitmap, root inside the journal, odd oid map, bad hash */
	build_super(b, "ReIsEr2Fs", 2);
	le32_put(b, SB_JP_FIRST, 10);
	le32_put(b, SB_ROOT_BLOCK, 100);
	le16_put(b, SB_OID_CURSIZE, 3);
	le32_put(b, SB_HASH, 9);
	rfs_super_decode(b, sizeof(b), RFS_SB_OFFSET, &sb, &err);
	fl.n = 0;
	rfs_super_check(&sb, 16384, record, &fl);
	assert_true(has(&fl, PR_SB_JOURNAL_BAD_PLACEMENT));
	assert_true(has(&fl, PR_SB_ROOT_OUT_OF_RANGE));
	assert_true(has(&fl, PR_SB_BAD_OID_MAP_SIZE));
	assert_true(has(&fl, PR_SB_BAD_HASH_CODE));
}

/* The expected value of the first SB_BAD_VERSION a check reports, or -1. */
static void record_version(void *c, const struct rfs_fault *f)
{
	long *expected = c;
	if (f->code == PR_SB_BAD_VERSION && *expected < 0)
		*expected = (long)f->expected;
}

static long bad_version_expected(const uint8_t *b, size_t len, enum rfs_fs_format *format)
{
	struct rfs_super sb;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_super_decode(b, len, RFS_SB_OFFSET, &sb, &err), RFS_OK);
	*format = sb.format;
	long expected = -1;
	assert_int_equal(rfs_super_check(&sb, 16384, record_version, &expected), RFS_OK);
	return expected;
}

/* A ReIsEr3Fs version field other than 0 or 2: the format comes from the
 * layout (objectid map capacity, then where the map starts), and the
 * problem's expected value is the version of that format. */
static void test_super_bad_version(void **state)
{
	(void)state;
	static uint8_t b[4096];
	enum rfs_fs_format fmt;
	memset(b, 0, sizeof(b));

	/* a 3.6 layout: map capacity (4096 - 204) / 4 = 973, rounded to 972 */
	build_super(b, "ReIsEr3Fs", 20);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), 2);
	assert_int_equal(fmt, RFS_FORMAT_36);

	/* a 3.5 layout: capacity (4096 - 76) / 4 = 1005, rounded to 1004 */
	le16_put(b, SB_OID_MAXSIZE, 1004);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), 0);
	assert_int_equal(fmt, RFS_FORMAT_35);

	/* capacity damaged too: the map's first entry decides */
	le16_put(b, SB_OID_MAXSIZE, 500);
	le32_put(b, SB_V1_SIZE, 1);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), 0);
	assert_int_equal(fmt, RFS_FORMAT_35);
	le32_put(b, SB_V2_SIZE, 1);   /* both places look like a map: 3.6 */
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), 2);
	assert_int_equal(fmt, RFS_FORMAT_36);
	/* a buffer that ends before byte 208 does not show the second place */
	assert_int_equal(bad_version_expected(b, SB_V2_SIZE, &fmt), 0);
	assert_int_equal(fmt, RFS_FORMAT_35);
	le32_put(b, SB_V1_SIZE, 7);   /* no evidence either way: 3.6, as the kernel */
	le32_put(b, SB_V2_SIZE, 0);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), 2);
	assert_int_equal(fmt, RFS_FORMAT_36);

	/* 0 and 2 are not faults, whatever the layout says */
	le16_put(b, SB_OID_MAXSIZE, 1004);
	le16_put(b, SB_VERSION, 2);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), -1);
	assert_int_equal(fmt, RFS_FORMAT_36);
	le16_put(b, SB_OID_MAXSIZE, 972);
	le16_put(b, SB_VERSION, 0);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), -1);
	assert_int_equal(fmt, RFS_FORMAT_35);
	/* the other magics ignore the field */
	memcpy(b + SB_MAGIC, "ReIsEr2Fs", 9);
	le16_put(b, SB_VERSION, 20);
	assert_int_equal(bad_version_expected(b, sizeof(b), &fmt), -1);
	assert_int_equal(fmt, RFS_FORMAT_36);
}

static void test_journal_blocks(void **state)
{
	(void)state;
	static uint8_t d[BS], c[BS];
	memset(d, 0, BS);
	memset(c, 0, BS);
	uint32_t id, len, mid, home;
	assert_false(rfs_journal_desc_decode(d, BS, &id, &len, &mid));
	le32_put(d, JD_TRANS_ID, 7);
	le32_put(d, JD_LEN, 1020);
	le32_put(d, JD_MOUNT_ID, 3);
	memcpy(d + BS - 12, "ReIsErLB", 8);
	for (uint32_t i = 0; i < 1018; i++)
		le32_put(d, JD_REAL + 4 * i, 9000 + i);
	le32_put(c, JC_REAL, 19018);
	le32_put(c, JC_REAL + 4, 19019);
	assert_true(rfs_journal_desc_decode(d, BS, &id, &len, &mid));
	assert_int_equal(id, 7);
	assert_int_equal(len, 1020);
	assert_int_equal(mid, 3);
	assert_true(rfs_journal_real_block(d, c, BS, 0, &home));
	assert_int_equal(home, 9000);
	assert_true(rfs_journal_real_block(d, c, BS, 1017, &home));
	assert_int_equal(home, 10017);
	assert_true(rfs_journal_real_block(d, c, BS, 1019, &home));
	assert_int_equal(home, 19019);
	assert_false(rfs_journal_real_block(d, c, BS, 2036, &home));
}

/* Runs of consecutive pointers: holes split them, so does a jump. */
static void test_indirect_runs(void **state)
{
	(void)state;
	const uint32_t ptr[] = { 0, 5, 6, 7, 0, 9, 11, 12, 0 };
	uint8_t body[sizeof(ptr)];
	for (size_t k = 0; k < sizeof(ptr) / 4; k++)
		le32_put(body, 4 * k, ptr[k]);
	uint32_t n = (uint32_t)(sizeof(ptr) / 4), i = 0, first, count, at;
	const uint32_t want[][3] = { { 5, 3, 1 }, { 9, 1, 5 }, { 11, 2, 6 } };
	for (size_t r = 0; r < 3; r++) {
		assert_true(rfs_indirect_next_run(body, n, &i, &first, &count, &at));
		assert_int_equal(first, want[r][0]);
		assert_int_equal(count, want[r][1]);
		assert_int_equal(at, want[r][2]);
	}
	assert_false(rfs_indirect_next_run(body, n, &i, &first, &count, &at));
	assert_int_equal(i, n);
	i = 0;
	assert_false(rfs_indirect_next_run(body, 0, &i, &first, &count, &at));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets_pinned),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_leaf_valid),
		cmocka_unit_test(test_leaf_damage),
		cmocka_unit_test(test_leaf_mutations),
		cmocka_unit_test(test_internal),
		cmocka_unit_test(test_super),
		cmocka_unit_test(test_super_bad_version),
		cmocka_unit_test(test_journal_blocks),
		cmocka_unit_test(test_indirect_runs),
	};
	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}

/*
 * test_format_encode.c - the encoders of src/format_encode.c.
 *
 * Two kinds of evidence:
 *  - round trips: encode -> decode gives back what was encoded, for item
 *    heads (both key formats, every item type), block heads, stat data v1/v2
 *    (devices and other files), directory items with padded and unpadded
 *    names; and the encoders refuse what they cannot represent;
 *  - kernel-written bytes: every leaf of the trees of six corpus images
 *    (3.6 with each hash, and 3.5, written by Linux 6.1) is decoded, and every item head, block
 *    head, stat data and directory item is re-encoded from its decoded form;
 *    the bytes must be identical.  Directory items are re-encoded both with the
 *    padding rule of their directory's stat data version and with the decoded
 *    slot sizes.
 * The corpus images are decompressed with `xz -dc` through popen; the tests run
 * from the top of the source tree (make unit), or from RFS_CORPUS_DIR.
 */
#include "testutil.h"

#include "rfs/bytes.h"
#include "rfs/format.h"

/* ------------------------------------------------------------ round trips */

static void test_item_head_roundtrip(void **state)
{
	(void)state;
	const struct rfs_key keys[] = {
		{ 1, 2, 0, RFS_TYPE_STAT }, { 7, 9, 4097, RFS_TYPE_INDIRECT },
		{ 7, 9, 12289, RFS_TYPE_DIRECT }, { 1, 2, 0x2229cf00u, RFS_TYPE_DIRENTRY },
		{ 0xFFFFFFFFu, 0x12345678u, 0xFFFFFFFFu, RFS_TYPE_DIRECT },
	};
	for (int fmt = RFS_KEY_V1; fmt <= RFS_KEY_V2; fmt++) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			uint8_t blk[4096] = { 0 };
			struct rfs_item_head ih = { .key = keys[i], .free_or_count = (uint16_t)(0xFFF0 + i),
						    .len = (uint16_t)(40 + i), .location = (uint16_t)(3000 - i),
						    .version = 0xF00F, /* ignored */
						    .key_format = (enum rfs_key_format)fmt };
			rfs_item_head_encode(&ih, blk + RFS_BLKH_SIZE);
			assert_int_equal(le16_at(blk, RFS_BLKH_SIZE + IH_VERSION), fmt);
			struct rfs_item_head d;
			rfs_leaf_item_head(blk, 0, &d);
			assert_int_equal(rfs_key_cmp(&d.key, &ih.key), 0);
			assert_int_equal(d.key.type, ih.key.type);
			assert_int_equal(d.key_format, fmt);
			assert_int_equal(d.version, fmt);
			assert_int_equal(d.free_or_count, ih.free_or_count);
			assert_int_equal(d.len, ih.len);
			assert_int_equal(d.location, ih.location);
			/* and back to the same bytes */
			uint8_t again[RFS_IH_SIZE];
			rfs_item_head_encode(&d, again);
			assert_memory_equal(again, blk + RFS_BLKH_SIZE, RFS_IH_SIZE);
		}
	}
	/* a v2 key with a 60-bit offset */
	uint8_t blk[4096] = { 0 };
	struct rfs_item_head ih = { .key = { 3, 4, (UINT64_C(1) << 59) + 1, RFS_TYPE_INDIRECT },
				    .len = 8, .location = 4088, .key_format = RFS_KEY_V2 };
	rfs_item_head_encode(&ih, blk + RFS_BLKH_SIZE);
	struct rfs_item_head d;
	rfs_leaf_item_head(blk, 0, &d);
	assert_true(d.key.offset == ih.key.offset);
}

static void test_block_head_roundtrip(void **state)
{
	(void)state;
	uint8_t blk[4096];
	memset(blk, 0xAB, sizeof(blk));
	struct rfs_block_head bh = { 3, 17, 3656 }, d;
	rfs_block_head_encode(&bh, blk);
	rfs_block_head_decode(blk, &d);
	assert_int_equal(d.level, 3);
	assert_int_equal(d.nr_items, 17);
	assert_int_equal(d.free_space, 3656);
	for (int i = BLKH_RESERVED; i < RFS_BLKH_SIZE; i++)
		assert_int_equal(blk[i], 0);
	assert_int_equal(blk[RFS_BLKH_SIZE], 0xAB);  /* nothing past the head */
}

static void assert_stat_equal(const struct rfs_stat *a, const struct rfs_stat *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->attrs, b->attrs);
	assert_int_equal(a->nlink, b->nlink);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_true(a->size == b->size);
	assert_int_equal(a->atime, b->atime);
	assert_int_equal(a->mtime, b->mtime);
	assert_int_equal(a->ctime, b->ctime);
	assert_int_equal(a->blocks, b->blocks);
	assert_int_equal(a->rdev, b->rdev);
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->first_direct_byte, b->first_direct_byte);
}

static void test_stat_roundtrip(void **state)
{
	(void)state;
	uint8_t b[64];
	size_t len;
	struct rfs_stat d;

	/* v1 regular file: field 24 is blocks */
	struct rfs_stat v1 = { .version = 1, .mode = 0100644, .nlink = 3, .uid = 1000,
			       .gid = 100, .size = 0xFFFFFFF0u, .atime = 1, .mtime = 2,
			       .ctime = 3, .blocks = 77, .rdev = 77, .first_direct_byte = 4097 };
	assert_int_equal(rfs_stat_encode(&v1, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(len, RFS_SD_V1_SIZE);
	assert_int_equal(le32_at(b, 24), 77);
	assert_int_equal(rfs_stat_decode(b, len, &d), RFS_OK);
	assert_stat_equal(&d, &v1);

	/* v1 block device: field 24 is rdev, blocks is not stored */
	struct rfs_stat v1d = { .version = 1, .mode = 060660, .nlink = 1, .rdev = 0x0801,
				.blocks = 0x0801, .first_direct_byte = UINT32_MAX };
	assert_int_equal(rfs_stat_encode(&v1d, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(le32_at(b, 24), 0x0801);
	assert_int_equal(rfs_stat_decode(b, len, &d), RFS_OK);
	assert_stat_equal(&d, &v1d);
	v1d.blocks = 5;          /* the device's "blocks" cannot be stored: rdev wins */
	assert_int_equal(rfs_stat_encode(&v1d, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(le32_at(b, 24), 0x0801);

	/* v2 regular file: field 40 is the generation */
	struct rfs_stat v2 = { .version = 2, .mode = 0100755, .attrs = 0x10, .nlink = 70000,
			       .uid = 70001, .gid = 70002, .size = UINT64_C(1) << 40,
			       .atime = 0xFFFFFFFFu, .mtime = 5, .ctime = 6, .blocks = 123456,
			       .rdev = 99, .generation = 99, .first_direct_byte = UINT32_MAX };
	assert_int_equal(rfs_stat_encode(&v2, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(len, RFS_SD_V2_SIZE);
	assert_int_equal(rfs_stat_decode(b, len, &d), RFS_OK);
	assert_stat_equal(&d, &v2);

	/* v2 character device: field 40 is rdev */
	struct rfs_stat v2c = { .version = 2, .mode = 020620, .nlink = 1, .rdev = 0x8803,
				.generation = 0x8803, .first_direct_byte = UINT32_MAX };
	assert_int_equal(rfs_stat_encode(&v2c, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(le32_at(b, 40), 0x8803);
	v2c.generation = 1;
	assert_int_equal(rfs_stat_encode(&v2c, b, sizeof(b), &len), RFS_OK);
	assert_int_equal(le32_at(b, 40), 0x8803);

	/* what cannot be represented */
	struct rfs_stat bad = v1;
	bad.nlink = 0x10000;
	assert_int_equal(rfs_stat_encode(&bad, b, sizeof(b), &len), RFS_ERR_INVALID);
	bad = v1;
	bad.uid = 0x10000;
	assert_int_equal(rfs_stat_encode(&bad, b, sizeof(b), &len), RFS_ERR_INVALID);
	bad = v1;
	bad.gid = 0x10000;
	assert_int_equal(rfs_stat_encode(&bad, b, sizeof(b), &len), RFS_ERR_INVALID);
	bad = v1;
	bad.size = UINT64_C(1) << 32;
	assert_int_equal(rfs_stat_encode(&bad, b, sizeof(b), &len), RFS_ERR_INVALID);
	bad.version = 3;
	assert_int_equal(rfs_stat_encode(&bad, b, sizeof(b), &len), RFS_ERR_INVALID);
	assert_int_equal(rfs_stat_encode(&v1, b, 31, &len), RFS_ERR_INVALID);
	assert_int_equal(rfs_stat_encode(&v2, b, 43, &len), RFS_ERR_INVALID);
}

/* Decodes a directory item and compares it with the entries encoded. */
static void check_dir_decodes(const uint8_t *body, size_t len, const struct rfs_dirent_in *e,
			      size_t n, enum rfs_key_format fmt)
{
	assert_int_equal(rfs_dir_validate(body, len, (uint16_t)n, NULL, NULL), RFS_OK);
	size_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct rfs_dirent d;
		rfs_dir_entry(body, len, (int)i, &d);
		assert_int_equal(d.offset, e[i].offset);
		assert_int_equal(d.dir_id, e[i].dir_id);
		assert_int_equal(d.objectid, e[i].objectid);
		assert_int_equal(d.state, e[i].state);
		assert_int_equal(d.name_len, e[i].name_len);
		assert_memory_equal(d.name, e[i].name, e[i].name_len);
		size_t want = e[i].stored_len ? e[i].stored_len
					      : rfs_dir_entry_size(e[i].name_len, fmt) - RFS_DEH_SIZE;
		assert_int_equal(d.stored_len, want);
		sum += RFS_DEH_SIZE + d.stored_len;
	}
	assert_int_equal(sum, len);
}

static void test_dir_roundtrip(void **state)
{
	(void)state;
	assert_int_equal(rfs_dir_entry_size(1, RFS_KEY_V2), 24);
	assert_int_equal(rfs_dir_entry_size(8, RFS_KEY_V2), 24);
	assert_int_equal(rfs_dir_entry_size(9, RFS_KEY_V2), 32);
	assert_int_equal(rfs_dir_entry_size(1, RFS_KEY_V1), 17);
	assert_int_equal(rfs_dir_entry_size(9, RFS_KEY_V1), 25);

	struct rfs_dirent_in e[] = {
		{ 1, 1, 2, RFS_DEH_STATE_VISIBLE, (const uint8_t *)".", 1, 0 },
		{ 2, 0, 1, RFS_DEH_STATE_VISIBLE, (const uint8_t *)"..", 2, 0 },
		{ 0x1000, 2, 3, RFS_DEH_STATE_VISIBLE, (const uint8_t *)"a.txt", 5, 0 },
		{ 0x2080, 2, 4, RFS_DEH_STATE_VISIBLE, (const uint8_t *)"exactly8", 8, 0 },
		{ 0x2081, 2, 5, RFS_DEH_STATE_VISIBLE, (const uint8_t *)"a rather longer name", 20, 0 },
	};
	size_t n = sizeof(e) / sizeof(e[0]);
	uint8_t body[512];
	size_t len;

	/* The empty directory of the format reference: 48 / 35 bytes. */
	assert_int_equal(rfs_dir_item_encode(e, 2, RFS_KEY_V2, body, sizeof(body), &len), RFS_OK);
	assert_int_equal(len, 48);
	assert_int_equal(le16_at(body, DEH_LOCATION), 40);
	assert_int_equal(le16_at(body, 16 + DEH_LOCATION), 32);
	assert_memory_equal(body + 32, "..\0\0\0\0\0\0.\0\0\0\0\0\0\0", 16);
	check_dir_decodes(body, len, e, 2, RFS_KEY_V2);
	assert_int_equal(rfs_dir_item_encode(e, 2, RFS_KEY_V1, body, sizeof(body), &len), RFS_OK);
	assert_int_equal(len, 35);
	assert_memory_equal(body + 32, "...", 3);
	check_dir_decodes(body, len, e, 2, RFS_KEY_V1);

	for (int fmt = RFS_KEY_V1; fmt <= RFS_KEY_V2; fmt++) {
		assert_int_equal(rfs_dir_item_encode(e, n, (enum rfs_key_format)fmt, body,
						     sizeof(body), &len), RFS_OK);
		size_t want = 0;
		for (size_t i = 0; i < n; i++)
			want += rfs_dir_entry_size(e[i].name_len, (enum rfs_key_format)fmt);
		assert_int_equal(len, want);
		check_dir_decodes(body, len, e, n, (enum rfs_key_format)fmt);
	}

	/* explicit slot sizes (what mkreiserfs does to "." and ".." in 3.5) */
	struct rfs_dirent_in m[3];
	memcpy(m, e, sizeof(m));
	m[0].stored_len = 8;
	m[1].stored_len = 8;
	m[2].stored_len = 5;
	assert_int_equal(rfs_dir_item_encode(m, 3, RFS_KEY_V1, body, sizeof(body), &len), RFS_OK);
	assert_int_equal(len, 48 + 8 + 8 + 5);
	check_dir_decodes(body, len, m, 3, RFS_KEY_V1);

	/* refusals */
	assert_int_equal(rfs_dir_item_encode(e, 0, RFS_KEY_V2, body, sizeof(body), &len),
			 RFS_ERR_INVALID);
	assert_int_equal(rfs_dir_item_encode(e, n, RFS_KEY_V2, body, 100, &len), RFS_ERR_INVALID);
	m[2].stored_len = 4;     /* shorter than the name */
	assert_int_equal(rfs_dir_item_encode(m, 3, RFS_KEY_V1, body, sizeof(body), &len),
			 RFS_ERR_INVALID);
	memcpy(m, e, sizeof(m));
	m[2].offset = 2;         /* not increasing */
	assert_int_equal(rfs_dir_item_encode(m, 3, RFS_KEY_V1, body, sizeof(body), &len),
			 RFS_ERR_INVALID);
	memcpy(m, e, sizeof(m));
	m[2].name_len = 0;
	assert_int_equal(rfs_dir_item_encode(m, 3, RFS_KEY_V1, body, sizeof(body), &len),
			 RFS_ERR_INVALID);
	memcpy(m, e, sizeof(m));
	m[2].name = (const uint8_t *)"ab\0";
	m[2].name_len = 3;       /* trailing NUL would be stripped by the decoder */
	assert_int_equal(rfs_dir_item_encode(m, 3, RFS_KEY_V1, body, sizeof(body), &len),
			 RFS_ERR_INVALID);
}

/* ------------------------------------------------------- kernel-written bytes */

static uint8_t *load_image(const char *name, size_t *len)
{
	const char *dir = getenv("RFS_CORPUS_DIR");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "xz -dc '%s/%s'", dir ? dir : "corpus/images", name);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 24, n = 0;
	uint8_t *buf = malloc(cap);
	assert_non_null(buf);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			uint8_t *nb = realloc(buf, cap);
			assert_non_null(nb);
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, p);
		if (got == 0)
			break;
		n += got;
	}
	assert_int_equal(pclose(p), 0);
	assert_true(n > RFS_SB_OFFSET + 4096);
	*len = n;
	return buf;
}

/* What the corpus walk saw. */
struct corpus_stats {
	unsigned leaves, internals, item_heads, stats, dir_items, dir_by_rule, dir_dots_kept;
	/* the last stat data seen: directories inherit their padding rule from it */
	uint32_t sd_dir_id, sd_objectid;
	int sd_version;
	int v1_dirs, v2_dirs;
};

static void check_dir_item(const uint8_t *body, uint16_t len, uint16_t count,
			   const struct rfs_key *key, struct corpus_stats *cs)
{
	assert_int_equal(rfs_dir_validate(body, len, count, NULL, NULL), RFS_OK);
	struct rfs_dirent_in *in = calloc(count, sizeof(*in));
	assert_non_null(in);
	uint8_t *out = malloc(len);
	assert_non_null(out);
	size_t olen;
	for (int i = 0; i < count; i++) {
		struct rfs_dirent d;
		rfs_dir_entry(body, len, i, &d);
		in[i] = (struct rfs_dirent_in){ d.offset, d.dir_id, d.objectid, d.state,
						d.name, d.name_len, d.stored_len };
	}
	/* 1. with the decoded slot sizes: always the same bytes */
	assert_int_equal(rfs_dir_item_encode(in, count, RFS_KEY_V1, out, len, &olen), RFS_OK);
	assert_int_equal(olen, len);
	assert_memory_equal(out, body, len);

	/* 2. with the padding rule of the directory's stat data version.  The only
	 * exception the corpus has: mkreiserfs pads "." and ".." of the 3.5 root
	 * directory, which the kernel would not; those keep their slot size. */
	assert_int_equal(cs->sd_dir_id, key->dir_id);
	assert_int_equal(cs->sd_objectid, key->objectid);
	enum rfs_key_format rule = cs->sd_version == 2 ? RFS_KEY_V2 : RFS_KEY_V1;
	for (int i = 0; i < count; i++) {
		bool dot = cs->sd_version == 1 && (in[i].offset == RFS_DOT_OFFSET ||
						   in[i].offset == RFS_DOTDOT_OFFSET);
		if (dot && in[i].stored_len != in[i].name_len)
			cs->dir_dots_kept++;
		else
			in[i].stored_len = 0;
	}
	assert_int_equal(rfs_dir_item_encode(in, count, rule, out, len, &olen), RFS_OK);
	assert_int_equal(olen, len);
	assert_memory_equal(out, body, len);
	cs->dir_by_rule++;
	if (rule == RFS_KEY_V2)
		cs->v2_dirs++;
	else
		cs->v1_dirs++;
	free(in);
	free(out);
}

static void check_leaf(const uint8_t *blk, uint32_t bs, struct corpus_stats *cs)
{
	assert_int_equal(rfs_leaf_validate(blk, bs, NULL, NULL), RFS_OK);
	cs->leaves++;
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	uint8_t head[RFS_BLKH_SIZE];
	rfs_block_head_encode(&bh, head);
	assert_memory_equal(head, blk, RFS_BLKH_SIZE);
	for (int i = 0; i < bh.nr_items; i++) {
		const uint8_t *raw = blk + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE;
		struct rfs_item_head ih;
		rfs_leaf_item_head(blk, i, &ih);
		uint8_t enc[RFS_IH_SIZE];
		rfs_item_head_encode(&ih, enc);
		assert_memory_equal(enc, raw, RFS_IH_SIZE);
		cs->item_heads++;
		const uint8_t *body = blk + ih.location;
		if (ih.key.type == RFS_TYPE_STAT) {
			struct rfs_stat st;
			uint8_t sd[RFS_SD_V2_SIZE];
			size_t len;
			assert_int_equal(rfs_stat_decode(body, ih.len, &st), RFS_OK);
			assert_int_equal(rfs_stat_encode(&st, sd, sizeof(sd), &len), RFS_OK);
			assert_int_equal(len, ih.len);
			assert_memory_equal(sd, body, len);
			cs->stats++;
			cs->sd_dir_id = ih.key.dir_id;
			cs->sd_objectid = ih.key.objectid;
			cs->sd_version = st.version;
		} else if (ih.key.type == RFS_TYPE_DIRENTRY) {
			check_dir_item(body, ih.len, ih.free_or_count, &ih.key, cs);
			cs->dir_items++;
		}
	}
}

static void walk(const uint8_t *img, size_t len, uint32_t bs, uint64_t blk, unsigned level,
		 struct corpus_stats *cs)
{
	assert_true((blk + 1) * bs <= len);
	const uint8_t *b = img + blk * bs;
	struct rfs_block_head bh;
	rfs_block_head_decode(b, &bh);
	assert_int_equal(bh.level, level);
	if (level == RFS_LEVEL_LEAF) {
		check_leaf(b, bs, cs);
		return;
	}
	assert_int_equal(rfs_internal_validate(b, bs, NULL, NULL), RFS_OK);
	cs->internals++;
	uint8_t head[RFS_BLKH_SIZE];
	rfs_block_head_encode(&bh, head);
	assert_memory_equal(head, b, RFS_BLKH_SIZE);
	for (int i = 0; i <= bh.nr_items; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(b, bh.nr_items, i, &dc);
		walk(img, len, bs, dc.block, level - 1, cs);
	}
}

static void check_image(const char *name, int want_rule)
{
	size_t len;
	uint8_t *img = load_image(name, &len);
	struct rfs_super sb;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_super_decode(img + RFS_SB_OFFSET, len - RFS_SB_OFFSET, RFS_SB_OFFSET,
					  &sb, &err), RFS_OK);
	struct corpus_stats cs = { 0 };
	walk(img, len, sb.blocksize, sb.root_block, (unsigned)sb.tree_height - 1, &cs);
	print_message("%s: %u leaves, %u internal, %u item heads, %u stat data, %u dir items "
		      "(%d v1-rule, %d v2-rule, %u mkreiserfs dots) re-encoded identically\n",
		      name, cs.leaves, cs.internals, cs.item_heads, cs.stats, cs.dir_items,
		      cs.v1_dirs, cs.v2_dirs, cs.dir_dots_kept);
	assert_true(cs.leaves > 1);
	assert_true(cs.stats > 10);
	assert_true(cs.dir_items >= 2);
	assert_int_equal(cs.dir_by_rule, cs.dir_items);
	/* every directory of the image follows the rule of its format */
	if (want_rule == RFS_KEY_V2)
		assert_int_equal(cs.v1_dirs, 0);
	else
		assert_int_equal(cs.v2_dirs, 0);
	free(img);
}

static void test_corpus_r36(void **state)
{
	(void)state;
	check_image("r36-features-r5.img.xz", RFS_KEY_V2);
}

static void test_corpus_r35(void **state)
{
	(void)state;
	check_image("r35-features-r5.img.xz", RFS_KEY_V1);
}

/* More 3.6 images: other hashes, a bigger tree, one with a nested image. */
static void test_corpus_more(void **state)
{
	(void)state;
	check_image("r36-hash-tea.img.xz", RFS_KEY_V2);
	check_image("r36-hash-rupasov.img.xz", RFS_KEY_V2);
	check_image("r36-stdjournal-r5.img.xz", RFS_KEY_V2);
	check_image("r36-nested.img.xz", RFS_KEY_V2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_item_head_roundtrip),
		cmocka_unit_test(test_block_head_roundtrip),
		cmocka_unit_test(test_stat_roundtrip),
		cmocka_unit_test(test_dir_roundtrip),
		cmocka_unit_test(test_corpus_r36),
		cmocka_unit_test(test_corpus_r35),
		cmocka_unit_test(test_corpus_more),
	};
	return cmocka_run_group_tests_name("format_encode", tests, NULL, NULL);
}

/*
 * test_tree_edit.c - the tree-edit layer (include/rfs/tree_edit.h) on small
 * filesystems made by mkreiserfs (1 KiB blocks, so that leaves and internal
 * nodes fill after a few dozen items and the tree grows to its full height
 * quickly; 32 MiB, so four bitmap blocks).  The oracle is rfsck's own check,
 * run read-only after the edits: it must find no problem at all except the
 * ORPHAN_OBJECT records of the objects the tests insert without names (and
 * the info-only ones), which covers leaf and internal node structure, key
 * order, delimiting keys, child sizes, ITEMS_MERGEABLE, the bitmaps against
 * the blocks in use, the free count and the objectid map.  Besides:
 *  - every item inserted reads back (key, format, count, body) until deleted;
 *  - inserting in random key order grows the tree from a root leaf to height
 *    5 (leaf splits, internal splits, new roots); deleting everything again,
 *    in another random order, shrinks it back to a root leaf in its old block
 *    with the template's bitmaps, free count and objectid map;
 *  - directory entries: 1500 names added to the root reach their objects
 *    through rfs_dir_lookup, the root's items split in two leaves at a time;
 *    then the first name of a leaf's first directory item goes (rekey: the
 *    item's key and the key above the leaf move up; lower keys refused);
 *  - an internal node emptied down to one child next to a full sibling takes
 *    a child from it (others merge into a sibling, checked on the way down);
 *  - the objectid map follows the kernel's allocation and release rules;
 *  - refusals (existing key, missing key, oversized item, a change that would
 *    break a node) change nothing on disk;
 *  - a commit stopped at each of its writes leaves, after the journal is
 *    replayed as a mount would, either the old tree or the whole new one;
 *  - the hash of a volume whose superblock names none is decided from its
 *    names (rfs/hash_detect.h), and check reports it or says it cannot.
 * Skipped when mkreiserfs is not installed.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "rfs/bytes.h"
#include "rfs/fs.h"
#include "rfs/hash_detect.h"
#include "rfs/object.h"
#include "rfs/tree.h"
#include "rfs/tree_edit.h"
#include "../../src/check.h"

static char dir[64], tmpl[128], img[128];
static bool have_mkfs;
static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	assert_non_null(in);
	assert_non_null(out);
	static uint8_t buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static int setup_group(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/rfs-test-te.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(tmpl, sizeof(tmpl), "%s/tmpl.img", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	char cmd[400];
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 32M '%s' && mkreiserfs -f -q -b 1024 -s 513 '%s' >/dev/null 2>&1",
		 tmpl, tmpl);
	have_mkfs = system(cmd) == 0;
	return 0;
}

static int teardown_group(void **state)
{
	(void)state;
	unlink(tmpl);
	unlink(img);
	rmdir(dir);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	if (have_mkfs)
		copy_file(tmpl, img);
	rng_state = 0x9E3779B97F4A7C15ull;
	return 0;
}

static struct rfs_fs *open_fs(bool write, bool replay, uint64_t stop_after)
{
	struct rfs_fs_options o = { .replay = replay };
	o.dev.path = img;
	o.dev.flags = write ? RFS_DEV_WRITE | RFS_DEV_NO_UNDO : 0;
	o.dev.stop_after_write_nth = stop_after;
	struct rfs_fs *fs = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_fs_open(&o, &fs, &err), RFS_OK);
	return fs;
}

static void close_fs(struct rfs_fs *fs)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_fs_close(fs, &err);
}

static struct rfs_tedit *open_te(struct rfs_fs *fs, bool journal)
{
	struct rfs_tedit_options o = { .no_journal = !journal };
	struct rfs_tedit *te = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_open(fs, &o, &te, &err), RFS_OK);
	return te;
}

static void commit(struct rfs_tedit *te)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_tedit_commit(te, &err);
	if (st)
		fail_msg("commit: %s", err.msg);
}

/* Runs check read-only on the image (replaying the journal in memory when
 * replay); fails on any problem other than orphans (exactly want_orphans of
 * them), JOURNAL_PENDING (exactly want_pending) and info-only ones.  Returns
 * the number of leaves. */
static uint64_t assert_clean_j(uint64_t want_orphans, bool replay, uint64_t want_pending)
{
	struct rfs_fs *fs = open_fs(false, replay, 0);
	struct rfs_check c;
	memset(&c, 0, sizeof(c));
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(check_run_mode(fs, RFS_MODE_CHECK, NULL, false, 0, &c, &err), RFS_OK);
	unsigned n;
	const struct rfs_problem_def *t = rfs_problem_table(&n);
	for (unsigned i = 1; i < n; i++) {
		uint64_t k = rfs_reporter_count(c.rep, t[i].code);
		if (t[i].code == PR_ORPHAN_OBJECT) {
			if (k != want_orphans)
				fail_msg("%llu orphans, %llu expected", (unsigned long long)k,
					 (unsigned long long)want_orphans);
		} else if (t[i].code == PR_JOURNAL_PENDING) {
			if (k != want_pending)
				fail_msg("JOURNAL_PENDING %llu, %llu expected", (unsigned long long)k,
					 (unsigned long long)want_pending);
		} else if (k && t[i].severity != RFS_SEV_INFO) {
			fail_msg("check finds %s (%llu)", t[i].name, (unsigned long long)k);
		}
	}
	uint64_t leaves = c.stats.leaves;
	check_release(&c);
	close_fs(fs);
	return leaves;
}

/* As `rfsck check` does: with the journal replayed in memory, which finds
 * nothing pending when every commit advanced the header past itself. */
static uint64_t assert_clean(uint64_t want_orphans, bool replay)
{
	return assert_clean_j(want_orphans, replay, 0);
}

/* reiserfsck --check on a copy of the image must find no corruption (when
 * reiserfsprogs is installed). */
static void assert_reiserfsck_clean(void)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd),
		 "command -v reiserfsck >/dev/null || exit 0; cp '%s' '%s.rf' && "
		 "reiserfsck --check --yes -q '%s.rf' >'%s.rflog' 2>&1; rc=$?; rm -f '%s.rf'; "
		 "[ $rc -eq 0 ] || { tail -5 '%s.rflog'; exit 1; }",
		 img, img, img, img, img, img);
	if (system(cmd) != 0)
		fail_msg("reiserfsck --check finds corruption");
	snprintf(cmd, sizeof(cmd), "%s.rflog", img);
	unlink(cmd);
}

/* Internal nodes without a key (one child) in the tree. */
static unsigned keyless_nodes(struct rfs_fs *fs, uint64_t blk, int level)
{
	uint8_t *b = malloc(fs->bs);
	assert_non_null(b);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(fs->dev, blk, b, &err), RFS_OK);
	unsigned n = 0;
	if (level > RFS_LEVEL_LEAF) {
		int nr = le16_at(b, BLKH_NR_ITEMS);
		n += nr == 0;
		for (int i = 0; i <= nr; i++) {
			struct rfs_disk_child dc;
			rfs_internal_child(b, nr, i, &dc);
			n += keyless_nodes(fs, dc.block, level - 1);
		}
	}
	free(b);
	return n;
}

/* Keys and child count of a node read from the device. */
static int node_keys(struct rfs_fs *fs, uint64_t blk, struct rfs_key *k, uint32_t *child)
{
	uint8_t *b = malloc(fs->bs);
	assert_non_null(b);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(fs->dev, blk, b, &err), RFS_OK);
	int nr = le16_at(b, BLKH_NR_ITEMS);
	for (int i = 0; i < nr && k; i++)
		rfs_internal_key(b, i, &k[i]);
	for (int i = 0; i <= nr && child; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(b, nr, i, &dc);
		child[i] = dc.block;
	}
	free(b);
	return nr;
}

/* ------------------------------------------------------------- objects */

/* An object of the tests: stat data v2 of a regular file and, when tail > 0,
 * a direct item of tail bytes (padded to 8 as 3.6 tails are). */
struct obj {
	uint32_t d, o;
	uint16_t tail;
	uint8_t seed;
};

static void obj_sd(const struct obj *x, struct rfs_item_head *ih, uint8_t *body)
{
	struct rfs_stat st = { .version = 2, .mode = 0100644, .nlink = 1, .size = x->tail,
			       .mtime = 1000 + x->o, .blocks = x->tail ? 2 : 0 };
	size_t len;
	assert_int_equal(rfs_stat_encode(&st, body, RFS_SD_V2_SIZE, &len), RFS_OK);
	*ih = (struct rfs_item_head){ .key = { x->d, x->o, 0, RFS_TYPE_STAT },
				      .free_or_count = 0xFFFF, .len = (uint16_t)len,
				      .key_format = RFS_KEY_V2 };
}

static void obj_tail(const struct obj *x, struct rfs_item_head *ih, uint8_t *body)
{
	uint16_t len = (uint16_t)((x->tail + 7) / 8 * 8);
	for (uint16_t i = 0; i < len; i++)
		body[i] = i < x->tail ? (uint8_t)(x->seed + i * 7) : 0;
	*ih = (struct rfs_item_head){ .key = { x->d, x->o, 1, RFS_TYPE_DIRECT },
				      .free_or_count = 0xFFFF, .len = len,
				      .key_format = RFS_KEY_V2 };
}

static void insert_obj(struct rfs_tedit *te, struct obj *x)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_alloc_objectid(te, &x->o, &err), RFS_OK);
	uint8_t body[1024];
	struct rfs_item_head ih;
	obj_sd(x, &ih, body);
	rfs_status st = rfs_tedit_insert(te, &ih, body, false, &err);
	if (st)
		fail_msg("insert [%u %u]: %s", x->d, x->o, err.msg);
	if (x->tail) {
		obj_tail(x, &ih, body);
		st = rfs_tedit_insert(te, &ih, body, false, &err);
		if (st)
			fail_msg("insert tail of [%u %u]: %s", x->d, x->o, err.msg);
	}
}

static void delete_obj(struct rfs_tedit *te, const struct obj *x)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	if (x->tail) {
		struct rfs_key k = { x->d, x->o, 1, RFS_TYPE_DIRECT };
		assert_int_equal(rfs_tedit_delete(te, &k, &err), RFS_OK);
	}
	struct rfs_key k = { x->d, x->o, 0, RFS_TYPE_STAT };
	rfs_status st = rfs_tedit_delete(te, &k, &err);
	if (st)
		fail_msg("delete [%u %u]: %s", x->d, x->o, err.msg);
}

static int cmp_oid_desc(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;
	return (x->o < y->o) - (x->o > y->o);
}

/* Every item of x reads back as written. */
static void verify_obj(struct rfs_tedit *te, const struct obj *x)
{
	struct rfs_tedit_item it;
	assert_int_equal(rfs_tedit_item_alloc(te, &it), RFS_OK);
	struct rfs_error err;
	rfs_error_clear(&err);
	uint8_t body[1024];
	struct rfs_item_head want;
	bool found;
	for (int part = 0; part < (x->tail ? 2 : 1); part++) {
		if (part == 0)
			obj_sd(x, &want, body);
		else
			obj_tail(x, &want, body);
		assert_int_equal(rfs_tedit_seek(te, &want.key, &it, &found, &err), RFS_OK);
		assert_true(found);
		assert_int_equal(rfs_key_cmp(&it.ih.key, &want.key), 0);
		assert_int_equal(it.ih.len, want.len);
		assert_int_equal(it.ih.key_format, want.key_format);
		assert_int_equal(it.ih.free_or_count, want.free_or_count);
		assert_memory_equal(it.body, body, want.len);
	}
	rfs_tedit_item_free(&it);
}

static void read_sb(uint8_t *sb)
{
	FILE *f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, RFS_SB_OFFSET, SEEK_SET), 0);
	assert_int_equal(fread(sb, 1, 1024, f), 1024);
	fclose(f);
}

/* ------------------------------------------------------------------ tests */

static void grow_and_shrink(bool journal)
{
	if (!have_mkfs)
		skip();
	uint8_t sb0[1024], sb1[1024];
	read_sb(sb0);
	enum { MAX_OBJ = 9000 };
	struct obj *v = calloc(MAX_OBJ, sizeof(*v));
	assert_non_null(v);
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, journal);
	size_t n = 0;
	unsigned seen[RFS_MAX_HEIGHT + 2] = { 0 };
	seen[fs->sb.tree_height]++;
	/* random keys, one to four objects per commit, until height 5 (a root
	 * of level 4: three new roots and splits at levels 1 to 3) */
	while (fs->sb.tree_height < 5 && n < MAX_OBJ) {
		unsigned k = 1 + rnd(4);
		for (unsigned j = 0; j < k && n < MAX_OBJ; j++) {
			struct obj *x = &v[n++];
			x->d = 10 + rnd(4000000);
			x->tail = (uint16_t)(rnd(5) ? 50 + rnd(300) : 0);
			x->seed = (uint8_t)rnd(256);
			insert_obj(te, x);
		}
		assert_true(rfs_tedit_pending(te) <= rfs_tedit_budget(te));
		commit(te);
		seen[fs->sb.tree_height]++;
	}
	/* heights 2 (a root leaf) to 5 all passed */
	for (int h = 2; h <= 5; h++)
		if (!seen[h])
			fail_msg("height %d never seen (%u %u %u %u)", h, seen[2], seen[3], seen[4],
				 seen[5]);
	for (size_t i = 0; i < n; i += 7)
		verify_obj(te, &v[i]);
	uint64_t journaled, direct;
	rfs_tedit_counts(te, &journaled, &direct);
	assert_true(journal ? journaled > 0 && direct == 0 : journaled == 0 && direct > 0);
	rfs_tedit_close(te);
	close_fs(fs);
	uint64_t leaves = assert_clean(n, true);
	assert_reiserfsck_clean();
	assert_true(leaves > 42 * 21);
	print_message("  %zu objects: %llu leaves, height 5\n", n, (unsigned long long)leaves);

	/* every object goes again, in another order */
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd((uint32_t)i);
		struct obj t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	fs = open_fs(true, false, 0);
	te = open_te(fs, journal);
	for (size_t i = 0; i < n; i++) {
		delete_obj(te, &v[i]);
		if (i % 3 == 0 || i + 1 == n)
			commit(te);
		if (i == n / 2 || i == n - n / 10 || i == n - 13) {
			/* midway: the objects left read back, the tree is sound
			 * for check and reiserfsck alike */
			for (size_t j = i + 1; j < n; j += 11)
				verify_obj(te, &v[j]);
			commit(te);
			rfs_tedit_close(te);
			unsigned keyless = keyless_nodes(fs, fs->sb.root_block, fs->sb.tree_height - 1);
			print_message("  %zu objects left: height %u, %u internal node(s) without keys\n",
				      n - i - 1, fs->sb.tree_height, keyless);
			assert_int_equal(keyless, 0);
			close_fs(fs);
			assert_clean(n - i - 1, true);
			assert_reiserfsck_clean();
			fs = open_fs(true, false, 0);
			te = open_te(fs, journal);
		}
	}
	assert_int_equal(fs->sb.tree_height, 2);
	/* objectids from the highest down: each release shortens the last run
	 * (released in random order they would split runs until the map is
	 * full, and the kernel's rule then keeps an id marked used) */
	qsort(v, n, sizeof(*v), cmp_oid_desc);
	struct rfs_error err;
	rfs_error_clear(&err);
	for (size_t i = 0; i < n; i++) {
		bool released;
		assert_int_equal(rfs_tedit_release_objectid(te, v[i].o, &released, &err), RFS_OK);
		assert_true(released);
	}
	commit(te);
	rfs_tedit_close(te);
	close_fs(fs);
	assert_clean(0, true);
	assert_reiserfsck_clean();
	read_sb(sb1);
	/* the template's free count, root block, height and objectid map */
	assert_int_equal(le32_at(sb1, SB_FREE_BLOCKS), le32_at(sb0, SB_FREE_BLOCKS));
	assert_int_equal(le32_at(sb1, SB_ROOT_BLOCK), le32_at(sb0, SB_ROOT_BLOCK));
	assert_int_equal(le16_at(sb1, SB_TREE_HEIGHT), le16_at(sb0, SB_TREE_HEIGHT));
	assert_int_equal(le16_at(sb1, SB_OID_CURSIZE), le16_at(sb0, SB_OID_CURSIZE));
	assert_memory_equal(sb1 + SB_V2_SIZE, sb0 + SB_V2_SIZE, 4 * (size_t)le16_at(sb0, SB_OID_CURSIZE));
	free(v);
}

static void test_grow_shrink_journal(void **state)
{
	(void)state;
	grow_and_shrink(true);
}

static void test_grow_shrink_direct(void **state)
{
	(void)state;
	grow_and_shrink(false);
}

/* Names in the root directory for new objects. */
static void test_dir_entries(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	enum { N = 1500 };
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, true);
	struct rfs_error err;
	rfs_error_clear(&err);
	uint32_t oid[N];
	uint64_t grown = 0;
	for (int i = 0; i < N; i++) {
		struct obj x = { .d = RFS_ROOT_OBJECTID };
		insert_obj(te, &x);
		oid[i] = x.o;
		char name[32];
		int len = snprintf(name, sizeof(name), "name_%05d", i);
		uint32_t off, bytes;
		rfs_status st = rfs_tedit_add_entry(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID,
						    (const uint8_t *)name, (uint16_t)len, true,
						    RFS_ROOT_OBJECTID, x.o, &off, &bytes, &err);
		if (st)
			fail_msg("add %s: %s", name, err.msg);
		assert_int_equal(bytes, 16 + 16);
		assert_true(off >= 128);
		grown += bytes;
		if (i % 5 == 4)
			commit(te);
		/* the same name again is refused */
		if (i == 7) {
			rfs_error_clear(&err);
			assert_int_equal(rfs_tedit_add_entry(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID,
							     (const uint8_t *)name, (uint16_t)len, true,
							     RFS_ROOT_OBJECTID, x.o, NULL, NULL, &err),
					 RFS_ERR_INVALID);
		}
	}
	/* the root's size and block count follow its entries */
	struct rfs_tedit_item it;
	assert_int_equal(rfs_tedit_item_alloc(te, &it), RFS_OK);
	struct rfs_key rk = { RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, 0, RFS_TYPE_STAT };
	bool found;
	assert_int_equal(rfs_tedit_seek(te, &rk, &it, &found, &err), RFS_OK);
	assert_true(found);
	struct rfs_stat sd;
	assert_int_equal(rfs_stat_decode(it.body, it.ih.len, &sd), RFS_OK);
	sd.size += grown;
	sd.blocks = (uint32_t)((sd.size + 511) / 512);
	size_t len;
	assert_int_equal(rfs_stat_encode(&sd, it.body, it.ih.len, &len), RFS_OK);
	assert_int_equal(rfs_tedit_replace(te, &it.ih, it.body, &err), RFS_OK);
	rfs_tedit_item_free(&it);
	commit(te);
	rfs_tedit_close(te);
	close_fs(fs);
	uint64_t leaves = assert_clean(0, true);
	print_message("  %d names: %llu leaves\n", N, (unsigned long long)leaves);
	fs = open_fs(false, false, 0);
	struct rfs_cursor cur;
	assert_int_equal(rfs_cursor_init(fs, &cur, &err), RFS_OK);
	for (int i = 0; i < N; i++) {
		char name[32];
		int nlen = snprintf(name, sizeof(name), "name_%05d", i);
		uint32_t d, o;
		assert_int_equal(rfs_dir_lookup(&cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID,
						(const uint8_t *)name, (size_t)nlen, &d, &o, &err), RFS_OK);
		assert_int_equal(d, RFS_ROOT_OBJECTID);
		assert_int_equal(o, oid[i]);
	}
	struct rfs_dirent_list l = { 0 };
	assert_int_equal(rfs_dir_collect(&cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, true, false, &l,
					 &err), RFS_OK);
	assert_int_equal(l.n, N);
	rfs_dirent_list_free(&l);
	rfs_cursor_free(&cur);
	close_fs(fs);

	/* rekey: a leaf that starts with a directory item of the root loses
	 * that item's first name; the item moves up to its second name's
	 * offset, and the key above the leaf follows */
	fs = open_fs(true, false, 0);
	te = open_te(fs, true);
	struct rfs_key k0;
	uint32_t rc[64];
	int nr = node_keys(fs, fs->sb.root_block, NULL, rc);
	assert_true(nr >= 2 && fs->sb.tree_height >= 3);
	struct rfs_tedit_item it2;
	assert_int_equal(rfs_tedit_item_alloc(te, &it2), RFS_OK);
	bool got = false;
	for (int c = 1; c <= nr && !got; c++) {
		/* the leftmost leaf under child c of the root */
		uint64_t b = rc[c];
		for (int lvl = (int)fs->sb.tree_height - 2; lvl > 1; lvl--) {
			uint32_t ch[200];
			node_keys(fs, b, NULL, ch);
			b = ch[0];
		}
		uint8_t *leaf = malloc(fs->bs);
		assert_non_null(leaf);
		assert_int_equal(rfs_dev_read_block(fs->dev, b, leaf, &err), RFS_OK);
		struct rfs_item_head ih0;
		rfs_leaf_item_head(leaf, 0, &ih0);
		free(leaf);
		if (ih0.key.type != RFS_TYPE_DIRENTRY || ih0.key.objectid != RFS_ROOT_OBJECTID ||
		    ih0.free_or_count < 2)
			continue;
		got = true;
		k0 = ih0.key;
	}
	assert_true(got);
	assert_int_equal(rfs_tedit_seek(te, &k0, &it2, &found, &err), RFS_OK);
	struct rfs_dirent e0, e1;
	rfs_dir_entry(it2.body, it2.ih.len, 0, &e0);
	rfs_dir_entry(it2.body, it2.ih.len, 1, &e1);
	/* keep entries 1.. (their slots end where entry 0's begins) */
	uint32_t cut = RFS_DEH_SIZE + e0.stored_len;
	uint8_t nb[1024];
	uint16_t count = it2.ih.free_or_count;
	for (int e = 1; e < count; e++) {
		memcpy(nb + (size_t)(e - 1) * RFS_DEH_SIZE, it2.body + (size_t)e * RFS_DEH_SIZE,
		       RFS_DEH_SIZE);
		le16_put(nb, (size_t)(e - 1) * RFS_DEH_SIZE + DEH_LOCATION,
			 (uint16_t)(le16_at(it2.body, (size_t)e * RFS_DEH_SIZE + DEH_LOCATION) - RFS_DEH_SIZE));
	}
	memcpy(nb + (size_t)(count - 1) * RFS_DEH_SIZE, it2.body + (size_t)count * RFS_DEH_SIZE,
	       e0.location - (size_t)count * RFS_DEH_SIZE);
	struct rfs_item_head nh = it2.ih;
	nh.key.offset = e1.offset;
	nh.len = (uint16_t)(it2.ih.len - cut);
	nh.free_or_count = (uint16_t)(count - 1);
	/* a key below the old one, or at the next item's, is refused */
	struct rfs_item_head bad = nh;
	bad.key.offset = k0.offset - 1;
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_rekey(te, &k0, &bad, nb, &err), RFS_ERR_INVALID);
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_rekey(te, &k0, &nh, nb, &err), RFS_OK);
	/* the root's size follows; the nameless object stays, an orphan */
	assert_int_equal(rfs_tedit_item_alloc(te, &it), RFS_OK);
	assert_int_equal(rfs_tedit_seek(te, &rk, &it, &found, &err), RFS_OK);
	assert_int_equal(rfs_stat_decode(it.body, it.ih.len, &sd), RFS_OK);
	sd.size -= cut;
	sd.blocks = (uint32_t)((sd.size + 511) / 512);
	assert_int_equal(rfs_stat_encode(&sd, it.body, it.ih.len, &len), RFS_OK);
	assert_int_equal(rfs_tedit_replace(te, &it.ih, it.body, &err), RFS_OK);
	rfs_tedit_item_free(&it);
	rfs_tedit_item_free(&it2);
	commit(te);
	rfs_tedit_close(te);
	close_fs(fs);
	assert_clean(1, true);
	assert_reiserfsck_clean();
}

/* The kernel's objectid rules: take the end of the first used run; release
 * shrinks a run at either end or splits it; merges and full maps. */
static void test_objectid_map(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, false);
	struct rfs_error err;
	rfs_error_clear(&err);
	uint32_t a, b, c, d;
	assert_int_equal(rfs_tedit_alloc_objectid(te, &a, &err), RFS_OK);
	assert_int_equal(rfs_tedit_alloc_objectid(te, &b, &err), RFS_OK);
	assert_int_equal(rfs_tedit_alloc_objectid(te, &c, &err), RFS_OK);
	assert_int_equal(b, a + 1);
	assert_int_equal(c, a + 2);
	bool rel, used;
	/* middle: the run splits in two */
	assert_int_equal(rfs_tedit_release_objectid(te, b, &rel, &err), RFS_OK);
	assert_true(rel);
	assert_int_equal(rfs_tedit_objectid_used(te, b, &used, &err), RFS_OK);
	assert_false(used);
	assert_int_equal(rfs_tedit_objectid_used(te, c, &used, &err), RFS_OK);
	assert_true(used);
	/* a free id is not released twice */
	assert_int_equal(rfs_tedit_release_objectid(te, b, &rel, &err), RFS_OK);
	assert_false(rel);
	/* the next allocation fills the hole and merges the runs again */
	assert_int_equal(rfs_tedit_alloc_objectid(te, &d, &err), RFS_OK);
	assert_int_equal(d, b);
	commit(te);
	uint8_t sb[1024];
	read_sb(sb);
	assert_int_equal(le16_at(sb, SB_OID_CURSIZE), 2);
	assert_int_equal(le32_at(sb, SB_V2_SIZE + 4), c + 1);
	/* release the end, then the whole run back to the template's */
	assert_int_equal(rfs_tedit_release_objectid(te, c, &rel, &err), RFS_OK);
	assert_true(rel);
	assert_int_equal(rfs_tedit_release_objectid(te, a, &rel, &err), RFS_OK);
	assert_true(rel);
	assert_int_equal(rfs_tedit_release_objectid(te, b, &rel, &err), RFS_OK);
	assert_true(rel);
	/* a map with no room to split: the id stays used */
	uint32_t ids[300];
	for (int i = 0; i < 300; i++)
		assert_int_equal(rfs_tedit_alloc_objectid(te, &ids[i], &err), RFS_OK);
	int splits = 0;
	for (int i = 1; i < 299; i += 2) {
		assert_int_equal(rfs_tedit_release_objectid(te, ids[i], &rel, &err), RFS_OK);
		splits += rel;
	}
	rfs_tedit_commit(te, &err);
	read_sb(sb);
	uint16_t max = le16_at(sb, SB_OID_MAXSIZE);
	assert_int_equal(le16_at(sb, SB_OID_CURSIZE), max);
	assert_int_equal(splits, (max - 2) / 2);
	rfs_tedit_close(te);
	close_fs(fs);
}

/* Refused operations change nothing on disk. */
static void test_refusals(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, true);
	struct rfs_error err;
	rfs_error_clear(&err);
	for (int i = 0; i < 40; i++) {
		struct obj x = { .d = 500 + (uint32_t)i * 3, .tail = 100 };
		insert_obj(te, &x);
	}
	commit(te);
	rfs_tedit_close(te);
	close_fs(fs);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.before'", img, img);
	assert_int_equal(system(cmd), 0);

	fs = open_fs(true, false, 0);
	te = open_te(fs, true);
	uint8_t body[1024] = { 0 };
	/* an existing key */
	struct rfs_item_head ih = { .key = { RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, 0, RFS_TYPE_STAT },
				    .len = 44, .key_format = RFS_KEY_V2 };
	assert_int_equal(rfs_tedit_insert(te, &ih, body, false, &err), RFS_ERR_INVALID);
	/* a missing key */
	rfs_error_clear(&err);
	struct rfs_key k = { 77, 88, 0, RFS_TYPE_STAT };
	assert_int_equal(rfs_tedit_delete(te, &k, &err), RFS_ERR_NOT_FOUND);
	/* an item longer than a leaf holds */
	rfs_error_clear(&err);
	ih = (struct rfs_item_head){ .key = { 90, 91, 1, RFS_TYPE_DIRECT }, .len = 1024 - 47,
				     .key_format = RFS_KEY_V2 };
	assert_int_equal(rfs_tedit_insert(te, &ih, body, false, &err), RFS_ERR_INVALID);
	/* a stat data of a length no stat data has: the node check at commit
	 * refuses it, and nothing is written */
	rfs_error_clear(&err);
	ih = (struct rfs_item_head){ .key = { 90, 91, 0, RFS_TYPE_STAT }, .len = 40,
				     .key_format = RFS_KEY_V2 };
	assert_int_equal(rfs_tedit_insert(te, &ih, body, false, &err), RFS_OK);
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_commit(te, &err), RFS_ERR_CORRUPT);
	assert_int_equal(rfs_tedit_pending(te), 0);
	/* freeing metadata or a free block */
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_free_block(te, fs->sb.sb_block, &err), RFS_ERR_INVALID);
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_free_block(te, fs->sb.block_count - 1, &err), RFS_ERR_INVALID);
	rfs_tedit_abort(te);
	/* the session goes on after a refusal */
	struct obj x = { .d = 999999, .tail = 8 };
	insert_obj(te, &x);
	rfs_tedit_abort(te);
	rfs_tedit_close(te);
	close_fs(fs);
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s.before'", img, img);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.before", img);
	unlink(cmd);
	assert_clean(40, true);
}

/* A node emptied down to one child next to a full sibling takes a child
 * from it: the first node of level 2 is emptied while the second is full. */
static void test_borrow_from_full_sibling(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	enum { MAX = 4000 };
	const int full = (int)rfs_internal_max_keys(1024);
	struct obj *v = calloc(MAX, sizeof(*v));
	assert_non_null(v);
	bool *gone = calloc(MAX, sizeof(*gone));
	assert_non_null(gone);
	size_t n = 0;
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, true);
	struct rfs_key rk[64];
	uint32_t rc[64];
	/* increasing keys until the root (level 3) has three children */
	while (!(fs->sb.tree_height == 4 && node_keys(fs, fs->sb.root_block, NULL, NULL) >= 2)) {
		assert_true(n < MAX);
		v[n] = (struct obj){ .d = 100 + 10 * (uint32_t)n, .tail = 300 };
		insert_obj(te, &v[n++]);
		commit(te);
	}
	node_keys(fs, fs->sb.root_block, rk, rc);
	size_t stream = n;
	/* fill the second level-2 node to exactly its capacity */
	for (size_t i = 0; node_keys(fs, rc[1], NULL, NULL) < full; i++) {
		assert_true(i < 9 * stream && n < MAX);
		uint32_t d = v[i % stream].d + 1 + (uint32_t)(i / stream);
		if (d <= rk[0].dir_id || d >= rk[1].dir_id)
			continue;
		v[n] = (struct obj){ .d = d, .tail = 300 };
		insert_obj(te, &v[n++]);
		commit(te);
		assert_int_equal(node_keys(fs, fs->sb.root_block, NULL, rc), 2);
	}
	/* empty the first level-2 node but for the root directory's leaf (the
	 * object at the boundary may have its stat data on the left of it) */
	size_t left = n;
	for (size_t i = 0; i < n; i++) {
		if (v[i].d > rk[0].dir_id)
			continue;
		delete_obj(te, &v[i]);
		gone[i] = true;
		left--;
		commit(te);
	}
	uint32_t c0[64], c1[64];
	assert_int_equal(node_keys(fs, fs->sb.root_block, NULL, rc), 2);
	assert_int_equal(node_keys(fs, rc[0], NULL, c0), 1);
	assert_int_equal(node_keys(fs, rc[1], NULL, c1), full - 1);
	for (size_t i = 0; i < n; i += 5)
		if (!gone[i])
			verify_obj(te, &v[i]);
	rfs_tedit_close(te);
	close_fs(fs);
	assert_clean(left, true);
	assert_reiserfsck_clean();
	free(v);
	free(gone);
}

/* Counts the writes of a commit. */
struct counter {
	struct rfs_dev *dev;
	uint64_t n;
};

static rfs_status counting_write(void *ctx, uint64_t blk, const void *buf, struct rfs_error *err)
{
	struct counter *c = ctx;
	c->n++;
	return rfs_dev_write_block(c->dev, blk, buf, err);
}

/* One operation that splits leaves and grows the tree, committed as one
 * transaction. */
static void big_operation(struct rfs_tedit *te, struct obj *v, int n)
{
	for (int i = 0; i < n; i++) {
		v[i] = (struct obj){ .d = 5000 + (uint32_t)i, .tail = 200, .seed = (uint8_t)i };
		insert_obj(te, &v[i]);
	}
}

static bool obj_present(struct rfs_fs *fs, const struct obj *x)
{
	struct rfs_cursor cur;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_cursor_init(fs, &cur, &err), RFS_OK);
	struct rfs_key k = { x->d, x->o, 0, RFS_TYPE_STAT };
	bool exact = false;
	assert_int_equal(rfs_cursor_seek(&cur, &k, &exact, &err), RFS_OK);
	rfs_cursor_free(&cur);
	return exact;
}

/* One cursor kept across commits that split leaves and internal nodes and
 * grow the tree: every object inserted so far is found after each commit.
 * The cursor keeps the internal nodes it validated (tree.h) until the
 * device is written; a cursor that kept them past a write would follow the
 * old child pointers and miss objects that moved. */
static void test_cursor_across_commits(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	enum { ROUNDS = 6, PER = 120 };
	static struct obj v[ROUNDS * PER];
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct rfs_tedit *te = open_te(fs, true);
	struct rfs_error err;
	rfs_error_clear(&err);
	struct rfs_cursor cur;
	assert_int_equal(rfs_cursor_init(fs, &cur, &err), RFS_OK);
	int n = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < PER; i++, n++) {
			/* interleaved keys, so later rounds split the leaves and
			 * nodes the cursor already holds */
			v[n] = (struct obj){ .d = 6000 + (uint32_t)(i * ROUNDS + r), .tail = 150,
					     .seed = (uint8_t)n };
			insert_obj(te, &v[n]);
		}
		commit(te);
		for (int i = 0; i < n; i++) {
			struct rfs_key k = { v[i].d, v[i].o, 0, RFS_TYPE_STAT };
			bool exact = false;
			assert_int_equal(rfs_cursor_seek(&cur, &k, &exact, &err), RFS_OK);
			if (!exact)
				fail_msg("round %d: [%u %u] not found", r, v[i].d, v[i].o);
		}
	}
	assert_true(cur.height >= 3);
	rfs_cursor_free(&cur);
	rfs_tedit_close(te);
	close_fs(fs);
}

static void test_journal_crash(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	enum { N = 12 };
	char base[160];
	snprintf(base, sizeof(base), "%s.base", img);
	copy_file(img, base);
	/* the clean run, counting its writes */
	struct obj v[N];
	struct rfs_fs *fs = open_fs(true, false, 0);
	struct counter cnt = { fs->dev, 0 };
	struct rfs_tedit_options o = { .write = counting_write, .write_ctx = &cnt };
	struct rfs_tedit *te = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_tedit_open(fs, &o, &te, &err), RFS_OK);
	big_operation(te, v, N);
	size_t len = rfs_tedit_pending(te);
	commit(te);
	rfs_tedit_close(te);
	assert_int_equal(fs->sb.tree_height, 3);   /* the root leaf split */
	close_fs(fs);
	assert_clean(N, true);
	/* descriptor, L logged blocks, commit, L homes, the header (L may
	 * exceed the blocks pending before the commit: parents' child sizes) */
	if (cnt.n < 2 * len + 3 || cnt.n % 2 == 0)
		fail_msg("%llu writes for %zu blocks", (unsigned long long)cnt.n, len);
	uint64_t L = (cnt.n - 3) / 2;
	print_message("  one transaction of %zu+ blocks: %llu writes\n", len,
		      (unsigned long long)cnt.n);
	for (uint64_t stop = 1; stop <= cnt.n; stop++) {
		copy_file(base, img);
		fs = open_fs(true, false, stop);
		te = open_te(fs, true);
		big_operation(te, v, N);
		rfs_error_clear(&err);
		assert_int_equal(rfs_tedit_commit(te, &err), RFS_ERR_INJECTED);
		rfs_tedit_close(te);
		rfs_dev_abandon(fs->dev);
		free(fs);
		/* as a mount would see it: the journal replayed.  The commit
		 * block is write L + 2 (descriptor, L copies, commit). */
		bool committed = stop > L + 2;
		fs = open_fs(false, true, 0);
		assert_int_equal(fs->journal.replayed, committed ? 1 : 0);
		int present = 0;
		for (int i = 0; i < N; i++)
			present += obj_present(fs, &v[i]);
		close_fs(fs);
		/* all or nothing */
		assert_int_equal(present, committed ? N : 0);
		assert_clean_j(committed ? N : 0, true, committed);
	}
	unlink(base);
}


/* Adds n names "<prefix>NNN" to the root under hash code `code` (entries
 * that point at the root itself: detection reads names, not targets). */
static void add_names(unsigned code, const char *prefix, int n)
{
	struct rfs_fs *fs = open_fs(true, false, 0);
	fs->hash_code = code;
	struct rfs_tedit *te = open_te(fs, true);
	struct rfs_error err;
	rfs_error_clear(&err);
	for (int i = 0; i < n; i++) {
		char name[32];
		int len = snprintf(name, sizeof(name), "%s%03d", prefix, i);
		rfs_status st = rfs_tedit_add_entry(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID,
						    (const uint8_t *)name, (uint16_t)len, true,
						    RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, NULL, NULL,
						    &err);
		if (st)
			fail_msg("add %s: %s", name, err.msg);
	}
	commit(te);
	rfs_tedit_close(te);
	close_fs(fs);
}

static struct rfs_hash_detect detect(void)
{
	struct rfs_fs *fs = open_fs(false, false, 0);
	struct rfs_hash_detect d;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_hash_detect(fs, &d, &err), RFS_OK);
	close_fs(fs);
	assert_true(d.complete);
	return d;
}

/* Check of a volume whose hash code is 7: the code it reports (SB_BAD_HASH_CODE
 * with the hash decided in expected, or SB_HASH_UNDECIDED). */
static void check_bad_code(enum rfs_problem_code want, uint64_t want_hash)
{
	int fd = open(img, O_RDWR);
	assert_true(fd >= 0);
	uint8_t code[4];
	put_le32(code, 7);
	assert_int_equal(pwrite(fd, code, 4, RFS_SB_OFFSET + SB_HASH), 4);
	struct rfs_fs *fs = open_fs(false, false, 0);
	assert_int_equal(fs->hash_code, 0);
	struct rfs_check c;
	memset(&c, 0, sizeof(c));
	struct rfs_error err;
	rfs_error_clear(&err);
	/* the superblock's faults, as `rfsck check` collects them when it opens */
	rfs_super_check(&fs->sb, rfs_dev_size(fs->dev) / fs->bs, check_collect_sb_fault, &c);
	assert_int_equal(check_run_mode(fs, RFS_MODE_CHECK, NULL, false, 0, &c, &err), RFS_OK);
	assert_int_equal(rfs_reporter_count(c.rep, want), 1);
	assert_int_equal(rfs_reporter_count(c.rep, want == PR_SB_BAD_HASH_CODE
					    ? PR_SB_HASH_UNDECIDED : PR_SB_BAD_HASH_CODE), 0);
	/* a decided hash is the one the names are then verified with */
	assert_int_equal(fs->hash_code, want_hash);
	assert_int_equal(c.hash_trusted, want_hash != 0);
	check_release(&c);
	close_fs(fs);
	put_le32(code, 3);
	assert_int_equal(pwrite(fd, code, 4, RFS_SB_OFFSET + SB_HASH), 4);
	close(fd);
}

/* rfs_hash_detect's verdict: r5 for a tree without names, else a hash that
 * matches more than half of the names and more than twice any other. */
static void test_hash_detect(void **state)
{
	(void)state;
	if (!have_mkfs)
		skip();
	struct rfs_hash_detect d = detect();
	assert_int_equal(d.names, 0);
	assert_int_equal(d.code, 3);
	add_names(1, "tea_", 30);
	d = detect();
	assert_int_equal(d.names, 30);
	assert_int_equal(d.votes[1], 30);
	assert_int_equal(d.votes[2] + d.votes[3], 0);
	assert_int_equal(d.code, 1);
	check_bad_code(PR_SB_BAD_HASH_CODE, 1);
	/* 30 tea, 30 r5: no majority */
	add_names(3, "r5_a", 30);
	d = detect();
	assert_int_equal(d.votes[1], 30);
	assert_int_equal(d.votes[3], 30);
	assert_int_equal(d.code, 0);
	check_bad_code(PR_SB_HASH_UNDECIDED, 0);
	/* 60 r5 against 30 tea: a majority, but not more than twice */
	add_names(3, "r5_b", 30);
	d = detect();
	assert_int_equal(d.names, 90);
	assert_int_equal(d.code, 0);
	/* one more r5 name decides it */
	add_names(3, "r5_c", 1);
	d = detect();
	assert_int_equal(d.votes[3], 61);
	assert_int_equal(d.code, 3);
	check_bad_code(PR_SB_BAD_HASH_CODE, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_grow_shrink_journal, setup),
		cmocka_unit_test_setup(test_grow_shrink_direct, setup),
		cmocka_unit_test_setup(test_borrow_from_full_sibling, setup),
		cmocka_unit_test_setup(test_dir_entries, setup),
		cmocka_unit_test_setup(test_objectid_map, setup),
		cmocka_unit_test_setup(test_refusals, setup),
		cmocka_unit_test_setup(test_cursor_across_commits, setup),
		cmocka_unit_test_setup(test_journal_crash, setup),
		cmocka_unit_test_setup(test_hash_detect, setup),
	};
	return cmocka_run_group_tests_name("tree_edit", tests, setup_group, teardown_group);
}

/*
 * fuzz_image.c - libFuzzer harness for the whole reader: rfs_fs_open() with
 * journal replay, tree iteration, directory walk, name lookup, stat data and
 * file bodies (src/fs.c, journal.c, tree.c, dir.c, object.c, file.c, io.c).
 *
 * Input: a sparse patch list over a base image.
 *   byte 0     base: even = the built-in template below, odd = all zeros
 *   byte 1     bit 0: do not replay the journal; bits 1-2: hash override;
 *              bits 3-7: stop each file read after that many pieces (0: no)
 *   bytes 2-5  image size in 512-byte units (u32 LE); 0 = the base's size;
 *              at most 128 MiB (the largest public image)
 *   then records until the input ends:
 *              u32 LE offset (taken modulo the image size), u16 LE length,
 *              length bytes (cut at the input end and at the image end)
 * The image is written to a memfd and opened read-only by its /proc path.
 * make_seeds.py turns public images into such lists (zero base plus their
 * non-zero runs), so seeds are small however large the image is.
 *
 * The template (512-byte blocks, 3.6 format, r5 hash, tree height 3) has a
 * root internal node over two leaves, five objects (a directory, a file with
 * an indirect item and a hole, a symlink, a tail file in the subdirectory)
 * and one committed journal transaction that rewrites the second leaf, so
 * the pristine template exercises replay, descent, iteration and both kinds
 * of body items.  The first run checks that the reader finds exactly that.
 *
 * Contracts asserted (abort() on violation):
 *  (1) every call returns RFS_OK or an rfs_status error; a failure fills err
 *      with the same status and RFS_OK leaves it untouched (status.h);
 *  (2) after rfs_fs_open: block size valid and equal to the device's, hash
 *      code 0..3, replayed <= pending, superblock faults are superblock codes,
 *      and fs->sb (re-read through the overlay after replay) still passes
 *      rfs_super_check() (fs.h invariant 1);
 *  (3) iterating the whole tree yields strictly increasing keys, and bodies
 *      inside the leaf (tree.h, object.h "visits each item once, in order");
 *  (4) every name rfs_dir_iterate() yields is found again by rfs_dir_lookup()
 *      unless the lookup stops on an error other than RFS_ERR_NOT_FOUND;
 *  (5) rfs_object_read() delivers non-empty pieces, contiguous from 0, none
 *      after the callback returned non-zero, and (unless stopped) on RFS_OK
 *      exactly up to the stat size (object.h);
 *  (6) rfs_path_resolve("/") finds the root object that rfs_object_get does.
 * Bounds on the walk: 256 directories, 4096 entries in all, 1024 objects
 * read, 64 MiB of file data; a directory already visited is not walked again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1   /* memfd_create */
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rfs/bytes.h"
#include "rfs/format.h"
#include "rfs/fs.h"
#include "rfs/hash.h"
#include "rfs/object.h"
#include "rfs/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_image: contract violated: %s (line %d)\n", \
				#cond, __LINE__);                                \
			abort();                                                 \
		}                                                                \
	} while (0)

/* ------------------------------------------------------------------------- */
/* The built-in template image. */

enum {
	T_BS = 512, T_BLOCKS = 200, T_SB = 128, T_BITMAP = 129,
	T_JFIRST = 130, T_JSIZE = 32, T_JHDR = T_JFIRST + T_JSIZE,   /* 162 */
	T_ROOT = 163, T_LEAF_A = 164, T_LEAF_B = 165,
	T_DATA0 = 170, T_DATA1 = 171, T_DATA2 = 172,
	T_TRANS_ID = 10, T_MOUNT_ID = 1, T_JMAGIC = 0x5a5a1234,
	T_FILE_SIZE = 1900,
};

static const char tail_on_disk[] = "hello tail\n";
static const char tail_in_log[] = "hello log!\n";   /* what replay installs */

struct t_item {
	struct rfs_key key;
	uint16_t count;              /* entry count for directory items */
	const uint8_t *body;
	uint16_t len;
};

/* Writes a leaf of 3.6 items (v2 keys) into blk, bodies packed from the end. */
static void t_leaf(uint8_t *blk, const struct t_item *it, int n)
{
	memset(blk, 0, T_BS);
	le16_put(blk, BLKH_LEVEL, RFS_LEVEL_LEAF);
	le16_put(blk, BLKH_NR_ITEMS, (uint16_t)n);
	uint16_t loc = T_BS;
	for (int i = 0; i < n; i++) {
		uint8_t *ih = blk + RFS_BLKH_SIZE + RFS_IH_SIZE * i;
		loc = (uint16_t)(loc - it[i].len);
		rfs_key_encode(&it[i].key, RFS_KEY_V2, ih + IH_KEY);
		le16_put(ih, IH_FREE_OR_COUNT, it[i].count);
		le16_put(ih, IH_LEN, it[i].len);
		le16_put(ih, IH_LOCATION, loc);
		le16_put(ih, IH_VERSION, RFS_KEY_V2);
		memcpy(blk + loc, it[i].body, it[i].len);
	}
	le16_put(blk, BLKH_FREE_SPACE, (uint16_t)(loc - RFS_BLKH_SIZE - RFS_IH_SIZE * n));
}

static void t_stat(uint8_t *sd, uint16_t mode, uint32_t nlink, uint64_t size, uint32_t blocks)
{
	memset(sd, 0, RFS_SD_V2_SIZE);
	le16_put(sd, 0, mode);
	le32_put(sd, 4, nlink);
	le64_put(sd, 8, size);
	le32_put(sd, 24, 1700000000);
	le32_put(sd, 28, 1700000000);
	le32_put(sd, 32, 1700000000);
	le32_put(sd, 36, blocks);
}

struct t_dirent { const char *name; uint32_t dir_id, objectid; };

/* Builds a directory item body (entries sorted by r5 offset, names padded to
 * 8 bytes); returns its length. */
static uint16_t t_dir(uint8_t *body, struct t_dirent *e, int n)
{
	uint32_t off[8];
	for (int i = 0; i < n; i++)
		off[i] = rfs_hash_entry_offset(RFS_HASH_R5, (const uint8_t *)e[i].name,
					       strlen(e[i].name));
	for (int i = 1; i < n; i++)          /* insertion sort by offset */
		for (int j = i; j > 0 && off[j - 1] > off[j]; j--) {
			uint32_t t = off[j]; off[j] = off[j - 1]; off[j - 1] = t;
			struct t_dirent d = e[j]; e[j] = e[j - 1]; e[j - 1] = d;
		}
	uint16_t len = (uint16_t)(n * RFS_DEH_SIZE);
	for (int i = 0; i < n; i++)
		len = (uint16_t)(len + ((strlen(e[i].name) + 7) & ~(size_t)7));
	memset(body, 0, len);
	uint16_t loc = len;
	for (int i = 0; i < n; i++) {
		size_t nl = strlen(e[i].name);
		loc = (uint16_t)(loc - ((nl + 7) & ~(size_t)7));
		uint8_t *h = body + RFS_DEH_SIZE * i;
		le32_put(h, DEH_OFFSET, off[i]);
		le32_put(h, DEH_DIR_ID, e[i].dir_id);
		le32_put(h, DEH_OBJECTID, e[i].objectid);
		le16_put(h, DEH_LOCATION, loc);
		le16_put(h, DEH_STATE, RFS_DEH_STATE_VISIBLE);
		memcpy(body + loc, e[i].name, nl);
	}
	return len;
}

static void t_leaf_b(uint8_t *blk, const char *tail)
{
	uint8_t sd_f[44], sd_l[44], sd_t[44], ind[16], lnk[8] = "target", tl[16] = { 0 };
	t_stat(sd_f, 0100644, 1, T_FILE_SIZE, 6);
	t_stat(sd_l, 0120777, 1, 6, 0);
	t_stat(sd_t, 0100600, 1, strlen(tail), 0);
	le32_put(ind, 0, T_DATA0);
	le32_put(ind, 4, T_DATA1);
	le32_put(ind, 8, 0);                  /* a hole */
	le32_put(ind, 12, T_DATA2);
	memcpy(tl, tail, strlen(tail));
	const struct t_item it[] = {
		{ { 2, 4, 0, RFS_TYPE_STAT }, 0, sd_f, 44 },
		{ { 2, 4, 1, RFS_TYPE_INDIRECT }, 0, ind, 16 },
		{ { 2, 5, 0, RFS_TYPE_STAT }, 0, sd_l, 44 },
		{ { 2, 5, 1, RFS_TYPE_DIRECT }, 0, lnk, 8 },
		{ { 3, 6, 0, RFS_TYPE_STAT }, 0, sd_t, 44 },
		{ { 3, 6, 1, RFS_TYPE_DIRECT }, 0, tl, 16 },
	};
	t_leaf(blk, it, 6);
}

/* Fills img (T_BLOCKS * T_BS bytes, zeroed) with the template. */
static void t_build(uint8_t *img)
{
	uint8_t *sb = img + (size_t)T_SB * T_BS;
	le32_put(sb, SB_BLOCK_COUNT, T_BLOCKS);
	le32_put(sb, SB_FREE_BLOCKS, T_BLOCKS - 80);
	le32_put(sb, SB_ROOT_BLOCK, T_ROOT);
	le32_put(sb, SB_JP_FIRST, T_JFIRST);
	le32_put(sb, SB_JP_SIZE, T_JSIZE);
	le32_put(sb, SB_JP_TRANS_MAX, 8);
	le32_put(sb, SB_JP_MAGIC, T_JMAGIC);
	le32_put(sb, SB_JP_MAX_BATCH, 7);
	le32_put(sb, SB_JP_MAX_COMMIT_AGE, 30);
	le32_put(sb, SB_JP_MAX_TRANS_AGE, 30);
	le16_put(sb, SB_BLOCKSIZE, T_BS);
	le16_put(sb, SB_OID_MAXSIZE, (T_BS - SB_V2_SIZE) / 4 / 2 * 2);
	le16_put(sb, SB_OID_CURSIZE, 2);
	le16_put(sb, SB_UMOUNT_STATE, 1);
	memcpy(sb + SB_MAGIC, "ReIsEr2Fs", 9);
	le32_put(sb, SB_HASH, RFS_HASH_R5);
	le16_put(sb, SB_TREE_HEIGHT, 3);
	le16_put(sb, SB_BMAP_NR, 1);
	le16_put(sb, SB_VERSION, RFS_FORMAT_36);
	memcpy(sb + SB_LABEL, "fuzz-template", 13);
	le32_put(sb, SB_V2_SIZE, 1);          /* objectid map: [1, 7) used */
	le32_put(sb, SB_V2_SIZE + 4, 7);

	uint8_t *bm = img + (size_t)T_BITMAP * T_BS;
	for (unsigned b = 0; b <= T_DATA2; b++)
		bm[b / 8] |= (uint8_t)(1u << (b % 8));

	/* Root internal node: key of leaf B's first item, children A and B. */
	uint8_t *root = img + (size_t)T_ROOT * T_BS;
	le16_put(root, BLKH_LEVEL, 2);
	le16_put(root, BLKH_NR_ITEMS, 1);
	le16_put(root, BLKH_FREE_SPACE, T_BS - RFS_BLKH_SIZE - RFS_KEY_SIZE - 2 * RFS_DC_SIZE);
	struct rfs_key kb = { 2, 4, 0, RFS_TYPE_STAT };
	rfs_key_encode(&kb, RFS_KEY_V2, root + RFS_BLKH_SIZE);
	uint8_t *dc = root + RFS_BLKH_SIZE + RFS_KEY_SIZE;
	le32_put(dc, DC_BLOCK, T_LEAF_A);
	le16_put(dc, DC_SIZE, 200);
	le32_put(dc + RFS_DC_SIZE, DC_BLOCK, T_LEAF_B);
	le16_put(dc + RFS_DC_SIZE, DC_SIZE, 300);

	/* Leaf A: the root directory and directory "d". */
	uint8_t sd_root[44], sd_d[44], dir_root[160], dir_d[96];
	struct t_dirent er[] = { { ".", 1, 2 }, { "..", 0, 1 }, { "d", 2, 3 },
				 { "f", 2, 4 }, { "l", 2, 5 } };
	struct t_dirent ed[] = { { ".", 2, 3 }, { "..", 1, 2 }, { "t", 3, 6 } };
	uint16_t lr = t_dir(dir_root, er, 5), ld = t_dir(dir_d, ed, 3);
	t_stat(sd_root, 040755, 3, lr, 1);
	t_stat(sd_d, 040700, 2, ld, 1);
	const struct t_item ia[] = {
		{ { 1, 2, 0, RFS_TYPE_STAT }, 0, sd_root, 44 },
		{ { 1, 2, 1, RFS_TYPE_DIRENTRY }, 5, dir_root, lr },
		{ { 2, 3, 0, RFS_TYPE_STAT }, 0, sd_d, 44 },
		{ { 2, 3, 1, RFS_TYPE_DIRENTRY }, 3, dir_d, ld },
	};
	t_leaf(img + (size_t)T_LEAF_A * T_BS, ia, 4);
	t_leaf_b(img + (size_t)T_LEAF_B * T_BS, tail_on_disk);
	for (unsigned b = T_DATA0; b <= T_DATA2; b++)
		memset(img + (size_t)b * T_BS, (int)('A' + b - T_DATA0), T_BS);

	/* Journal: transaction 10 of mount 1 at log offset 0 logs leaf B. */
	uint8_t *desc = img + (size_t)T_JFIRST * T_BS;
	le32_put(desc, JD_TRANS_ID, T_TRANS_ID);
	le32_put(desc, JD_LEN, 1);
	le32_put(desc, JD_MOUNT_ID, T_MOUNT_ID);
	le32_put(desc, JD_REAL, T_LEAF_B);
	memcpy(desc + T_BS - 12, RFS_JOURNAL_DESC_MAGIC, 8);
	t_leaf_b(img + (size_t)(T_JFIRST + 1) * T_BS, tail_in_log);
	uint8_t *commit = img + (size_t)(T_JFIRST + 2) * T_BS;
	le32_put(commit, JC_TRANS_ID, T_TRANS_ID);
	le32_put(commit, JC_LEN, 1);
	uint8_t *hdr = img + (size_t)T_JHDR * T_BS;
	le32_put(hdr, JH_LAST_FLUSH, T_TRANS_ID - 1);
	le32_put(hdr, JH_FIRST_UNFLUSHED, 0);
	le32_put(hdr, JH_MOUNT_ID, T_MOUNT_ID);
	const uint32_t params[8] = { T_JFIRST, 0, T_JSIZE, 8, T_JMAGIC, 7, 30, 30 };
	for (int i = 0; i < 8; i++)
		le32_put(hdr, JH_PARAMS + 4 * (size_t)i, params[i]);
}

/* ------------------------------------------------------------------------- */
/* Running the reader. */

enum { MAX_IMAGE = 128u << 20, MAX_DIRS = 256, MAX_ENTRIES = 4096, MAX_READS = 1024,
       MAX_DATA = 64u << 20, MAX_ITEMS = 1u << 20 };

static void check_status(rfs_status st, const struct rfs_error *err)
{
	if (st == RFS_OK) {
		CHECK(err->status == RFS_OK);
	} else {
		CHECK(st >= RFS_ERR_IO && st < RFS_STATUS_END);
		CHECK(err->status == st);
	}
}

static void sb_fault(void *ctx, const struct rfs_fault *f)
{
	(void)ctx;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	CHECK(d != NULL && d->group == RFS_PG_SUPER);
}

struct entry { uint32_t dir_id, objectid, offset; uint16_t len; uint8_t *name; };

struct collect {
	struct entry *e;
	int n, cap;
};

/* rfs_dirent_fn: copies the entry, never touches the cursor. */
static int collect_entry(void *ctx, const struct rfs_dirent *de)
{
	struct collect *c = ctx;
	CHECK(de->name_len <= de->stored_len);
	if (c->n >= c->cap)
		return 1;
	struct entry *e = &c->e[c->n];
	e->name = malloc(de->name_len ? de->name_len : 1);
	CHECK(e->name != NULL);
	memcpy(e->name, de->name, de->name_len);   /* ASan checks the name bytes */
	e->len = de->name_len;
	e->dir_id = de->dir_id;
	e->objectid = de->objectid;
	e->offset = de->offset;
	c->n++;
	return 0;
}

struct reader {
	uint64_t pos;                /* next expected offset */
	uint64_t budget;             /* data bytes still allowed */
	unsigned pieces_left;        /* stop after this many pieces (0 = no limit) */
	bool stopped;                /* the callback asked to stop */
	uint32_t sum;
};

/* rfs_data_fn: checks contiguity, touches the data, and stops on budget. */
static int read_piece(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	struct reader *r = ctx;
	CHECK(!r->stopped);          /* no call after the callback said stop */
	CHECK(len > 0 && off == r->pos);
	r->pos += len;
	if (data) {
		for (size_t i = 0; i < len; i += 61)
			r->sum += data[i];
		r->sum += data[len - 1];
		if (len >= r->budget)
			r->stopped = true;
		r->budget = len >= r->budget ? 0 : r->budget - len;
	}
	if (r->pieces_left && --r->pieces_left == 0)
		r->stopped = true;
	return r->stopped;
}

struct walk {
	struct rfs_fs *fs;
	struct rfs_cursor cur;
	uint64_t dirs_seen[MAX_DIRS];
	int ndirs;
	int entries_left, reads_left;
	uint64_t data_left;
	unsigned piece_limit;        /* per file read, from the input; 0 = none */
	/* what the template self-check looks at */
	int objects, files_read;
	uint64_t file_bytes;
	char tail[32];
};

static bool seen_dir(struct walk *w, uint32_t d, uint32_t o)
{
	uint64_t k = (uint64_t)d << 32 | o;
	for (int i = 0; i < w->ndirs; i++)
		if (w->dirs_seen[i] == k)
			return true;
	return false;
}

static int tail_piece(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	char *t = ctx;
	if (data && off < 31)
		memcpy(t + off, data, len < 31 - off ? len : 31 - off);
	return 0;
}

static void read_object(struct walk *w, const struct rfs_object *obj)
{
	struct rfs_error err;
	struct reader r = { .budget = w->data_left, .pieces_left = w->piece_limit };
	struct rfs_read_stats stats;
	rfs_error_clear(&err);
	rfs_status st = rfs_object_read(&w->cur, obj, read_piece, &r, &stats, &err);
	check_status(st, &err);
	if (st == RFS_OK && !r.stopped)
		CHECK(r.pos == obj->sd.size);
	w->data_left = r.budget;
	w->files_read++;
	w->file_bytes += r.pos;
	if (obj->dir_id == 3 && obj->objectid == 6) {
		rfs_error_clear(&err);
		memset(w->tail, 0, sizeof(w->tail));
		(void)rfs_object_read(&w->cur, obj, tail_piece, w->tail, NULL, &err);
	}
}

static void walk_dir(struct walk *w, uint32_t dir_id, uint32_t objectid, int depth)
{
	if (w->ndirs >= MAX_DIRS || seen_dir(w, dir_id, objectid) || depth > 64)
		return;
	w->dirs_seen[w->ndirs++] = (uint64_t)dir_id << 32 | objectid;

	struct collect c = { .cap = w->entries_left < 512 ? w->entries_left : 512 };
	if (c.cap <= 0)
		return;
	c.e = calloc((size_t)c.cap, sizeof(*c.e));
	CHECK(c.e != NULL);
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_dir_iterate(&w->cur, dir_id, objectid, collect_entry, &c, &err);
	check_status(st, &err);
	w->entries_left -= c.n;

	for (int i = 0; i < c.n; i++) {
		struct entry *e = &c.e[i];
		bool dot = (e->len == 1 && e->name[0] == '.') ||
			   (e->len == 2 && e->name[0] == '.' && e->name[1] == '.');
		uint32_t d, o;
		rfs_error_clear(&err);
		st = rfs_dir_lookup(&w->cur, dir_id, objectid, e->name, e->len, &d, &o, &err);
		check_status(st, &err);
		CHECK(st != RFS_ERR_NOT_FOUND);
		if (dot || w->reads_left <= 0)
			continue;
		w->reads_left--;
		struct rfs_object obj;
		rfs_error_clear(&err);
		st = rfs_object_get(&w->cur, e->dir_id, e->objectid, &obj, &err);
		check_status(st, &err);
		if (st)
			continue;
		CHECK(obj.dir_id == e->dir_id && obj.objectid == e->objectid);
		CHECK(obj.sd.version == 1 || obj.sd.version == 2);
		w->objects++;
		enum rfs_file_type t = rfs_mode_type(obj.sd.mode);
		if (t == RFS_FT_DIR)
			walk_dir(w, e->dir_id, e->objectid, depth + 1);
		else if (t == RFS_FT_REG || t == RFS_FT_LNK)
			read_object(w, &obj);
	}
	for (int i = 0; i < c.n; i++)
		free(c.e[i].name);
	free(c.e);
}

/* Iterates the whole tree in key order; returns the number of items. */
static long iterate_tree(struct walk *w)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	struct rfs_key lowest = { 0, 0, 0, RFS_TYPE_STAT };
	rfs_status st = rfs_cursor_seek(&w->cur, &lowest, NULL, &err);
	check_status(st, &err);
	if (st)
		return -1;
	long n = 0;
	struct rfs_key prev = { 0 };
	bool have_prev = false;
	if (!rfs_cursor_at_item(&w->cur)) {
		st = rfs_cursor_next(&w->cur, &err);
		check_status(st, &err);
	}
	while (st == RFS_OK && rfs_cursor_at_item(&w->cur)) {
		CHECK(n < MAX_ITEMS);
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(&w->cur, &ih, &body);
		CHECK((uint32_t)ih.location + ih.len <= w->fs->bs);
		CHECK(body == w->cur.lv[w->cur.height - 1].buf + ih.location);
		(void)body[0];
		(void)body[ih.len - 1];
		if (have_prev)
			CHECK(rfs_key_cmp(&prev, &ih.key) < 0);
		prev = ih.key;
		have_prev = true;
		n++;
		st = rfs_cursor_next(&w->cur, &err);
		check_status(st, &err);
	}
	return n;
}

/* Runs the reader on the image at path; fills *out for the self-check. */
static void run_reader(const char *path, bool replay, unsigned hash, struct walk *w)
{
	struct rfs_fs_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.dev.path = path;
	opt.replay = replay;
	opt.hash_override = hash;
	opt.sb_fault = sb_fault;
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_fs_open(&opt, &w->fs, &err);
	check_status(st, &err);
	if (st)
		return;
	struct rfs_fs *fs = w->fs;
	CHECK(fs->bs == fs->sb.blocksize && fs->bs >= 512 && fs->bs <= 65536 &&
	      (fs->bs & (fs->bs - 1)) == 0);
	CHECK(rfs_dev_block_size(fs->dev) == fs->bs);
	CHECK(fs->hash_code <= 3);
	CHECK(fs->journal.replayed <= fs->journal.pending);
	CHECK(replay || fs->journal.replayed == 0);
	/* fs.h invariant (1): sb (re-read after replay) has no FATAL problem. */
	CHECK(rfs_super_check(&fs->sb, rfs_dev_block_count(fs->dev), NULL, NULL) == RFS_OK);

	rfs_error_clear(&err);
	st = rfs_cursor_init(fs, &w->cur, &err);
	check_status(st, &err);
	if (st == RFS_OK) {
		w->entries_left = MAX_ENTRIES;
		w->reads_left = MAX_READS;
		w->data_left = MAX_DATA;
		(void)iterate_tree(w);

		struct rfs_object root, root2;
		rfs_error_clear(&err);
		st = rfs_object_get(&w->cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, &root, &err);
		check_status(st, &err);
		struct rfs_error err2;
		rfs_error_clear(&err2);
		rfs_status st2 = rfs_path_resolve(&w->cur, "/", &root2, &err2);
		check_status(st2, &err2);
		CHECK(st == st2);
		if (st == RFS_OK) {
			CHECK(root2.dir_id == root.dir_id && root2.objectid == root.objectid &&
			      root2.sd.mode == root.sd.mode && root2.sd.size == root.sd.size);
			w->objects++;
			walk_dir(w, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, 0);
			rfs_error_clear(&err);
			st = rfs_path_resolve(&w->cur, "/d/t", &root2, &err);
			check_status(st, &err);
		}
		rfs_cursor_free(&w->cur);
	}
	rfs_error_clear(&err);
	st = rfs_fs_close(fs, &err);
	check_status(st, &err);
}

/* ------------------------------------------------------------------------- */

static int img_fd = -1;
static char img_path[64];
static uint8_t *template_img;

static void write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		CHECK(w > 0);
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
}

/* One-time set-up and the known-answer check on the pristine template. */
static void setup(void)
{
	img_fd = memfd_create("rfs-fuzz-image", 0);
	CHECK(img_fd >= 0);
	snprintf(img_path, sizeof(img_path), "/proc/self/fd/%d", img_fd);
	template_img = calloc(T_BLOCKS, T_BS);
	CHECK(template_img != NULL);
	t_build(template_img);

	CHECK(ftruncate(img_fd, (off_t)T_BLOCKS * T_BS) == 0);
	write_all(img_fd, template_img, (size_t)T_BLOCKS * T_BS, 0);
	struct walk w;
	memset(&w, 0, sizeof(w));
	run_reader(img_path, true, 0, &w);
	CHECK(w.fs != NULL);
	CHECK(w.objects == 5 && w.files_read == 3);   /* root, d, f, l, t */
	CHECK(w.file_bytes == T_FILE_SIZE + 6 + strlen(tail_in_log));
	CHECK(strcmp(w.tail, tail_in_log) == 0);
	memset(&w, 0, sizeof(w));
	run_reader(img_path, false, 0, &w);
	CHECK(strcmp(w.tail, tail_on_disk) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (img_fd < 0)
		setup();
	if (size < 6)
		return 0;
	bool zero_base = data[0] & 1;
	bool replay = !(data[1] & 1);
	unsigned hash = (data[1] >> 1) & 3;
	uint64_t img_size = (uint64_t)le32_at(data, 2) * 512;
	if (img_size == 0)
		img_size = zero_base ? (1u << 20) : (uint64_t)T_BLOCKS * T_BS;
	if (img_size > MAX_IMAGE)
		img_size = MAX_IMAGE;

	CHECK(ftruncate(img_fd, 0) == 0);
	CHECK(ftruncate(img_fd, (off_t)img_size) == 0);
	if (!zero_base) {
		size_t n = (size_t)T_BLOCKS * T_BS;
		write_all(img_fd, template_img, n < img_size ? n : (size_t)img_size, 0);
	}
	size_t p = 6;
	while (p + 6 <= size) {
		uint64_t off = le32_at(data, p) % img_size;
		size_t len = le16_at(data, p + 4);
		p += 6;
		if (len > size - p)
			len = size - p;
		if (len > img_size - off)
			len = (size_t)(img_size - off);
		if (len)
			write_all(img_fd, data + p, len, off);
		p += len;
	}

	struct walk w;
	memset(&w, 0, sizeof(w));
	w.piece_limit = data[1] >> 3;
	run_reader(img_path, replay, hash, &w);
	return 0;
}

/*
 * modes_common.h - what the whole-mode harnesses (fuzz_check.c,
 * fuzz_rebuild.c, fuzz_salvage.c) share: the input format, the built-in
 * template image, running a command entry point (cmd_check, cmd_rebuild,
 * cmd_salvage, cmd_fix) on the image with its stdout and stderr captured, and
 * the contracts every mode must keep.  Included exactly once by each harness
 * (it defines static functions and the cli_print_command_help stub that
 * src/main.c would otherwise provide).
 *
 * Input: the patch list of fuzz_image.c, so corpora can be shared:
 *   byte 0     base: even = the built-in template below, odd = all zeros
 *   byte 1     option bits, per harness (bits 1-2 are always --hash:
 *              0 none, 1 tea, 2 rupasov, 3 r5)
 *   bytes 2-5  image size in 512-byte units (u32 LE); 0 = the base's size
 *              (640 KiB, the template's size, for either base); capped at
 *              MODES_MAX_IMAGE (4 MiB) so one execution stays well under 50 ms
 *   then records until the input ends:
 *              u32 LE offset (modulo the image size), u16 LE length,
 *              length bytes (cut at the input end and at the image end)
 * The image is written to a memfd and given to the command as
 * /proc/self/fd/N, exactly as a user would pass a path.
 *
 * The template (1024-byte blocks, 640 blocks, format 3.6, r5, tree height 3;
 * `rfsck check` finds only the pending transaction):
 *   block 64 superblock, 65 bitmap, 66..577 journal (512 blocks, the
 *   minimum), 578 journal header; 580 root internal node over leaves 581 (A)
 *   and 582 (B); 590..592 data of /f, 600..601 the nested image inside /n.
 *   Objects: / (1,2), /d (2,3), /f (2,4) 3172 bytes as an indirect item
 *   [590, 591, hole, 592], /l (2,5) symlink "target", /d/t (3,6) tail file,
 *   /n (2,7) 67584 bytes as an indirect item of 64 holes then [600, 601]:
 *   block 600 holds a ReiserFS superblock at the 64 KiB position of an inner
 *   filesystem (1024-byte blocks, root 65 = outer 601, height 2) and block
 *   601 that inner root leaf, whose keys (1,2) collide with the outer root
 *   directory: the nested-image trap rebuild must not fall into.
 *   The journal holds one committed transaction (trans 10, mount 1) that
 *   rewrites leaf B with /d/t reading "hello log!\n" instead of "hello tail\n".
 * Each harness checks its known answer on the pristine template at start-up.
 *
 * Contracts kept by every mode (abort() on violation, like a sanitizer):
 *  (M1) the exit status is in the mode's documented set;
 *  (M2) the image bytes are unchanged (read back and compared);
 *  (M3) an exit status of 8 comes with a "rfsck CMD: ..." line on stderr;
 *  (M4) no file is left in TMPDIR (a private empty directory; rebuild's
 *       temporary SQLite index must be unlinked at open);
 *  (M5) no file descriptor is leaked (count of /proc/self/fd before/after).
 * libFuzzer adds: no sanitizer report, no leak, no execution over -timeout,
 * no malloc over -malloc_limit_mb (fuzz.mk gives these targets 256 MiB: a
 * 4 MiB image must not make any mode allocate by a number read from disk).
 */
#ifndef RFS_FUZZ_MODES_COMMON_H
#define RFS_FUZZ_MODES_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1   /* memfd_create, open_memstream */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rfs/bytes.h"
#include "rfs/cli.h"
#include "rfs/format.h"
#include "rfs/hash.h"
#include "rfs/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void cli_print_command_help(const char *cmd, FILE *out);

/* src/main.c is not linked into the harnesses; --help is never passed. */
void cli_print_command_help(const char *cmd, FILE *out)
{
	(void)cmd;
	(void)out;
}

static const char *modes_harness = "fuzz_modes";   /* set by the harness */
static FILE *modes_real_stderr;                     /* stderr outside a run */

#define CHECK(cond)                                                               \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(modes_real_stderr ? modes_real_stderr : stderr,   \
				"%s: contract violated: %s (line %d)\n",          \
				modes_harness, #cond, __LINE__);                  \
			abort();                                                  \
		}                                                                 \
	} while (0)

/* ------------------------------------------------------------------------- */
/* The built-in template image. */

enum {
	T_BS = 1024, T_BLOCKS = 640, T_SB = 64, T_BITMAP = 65,
	T_JFIRST = 66, T_JSIZE = 512, T_JHDR = T_JFIRST + T_JSIZE,  /* 578 */
	T_ROOT = 580, T_LEAF_A = 581, T_LEAF_B = 582,
	T_DATA0 = 590, T_DATA1 = 591, T_DATA2 = 592,
	T_INNER_SB = 600, T_INNER_LEAF = 601,
	T_TRANS_ID = 10, T_MOUNT_ID = 1, T_JMAGIC = 0x5a5a1234,
	T_FILE_SIZE = 3 * T_BS + 100,
	T_HOLDER_PTRS = 66, T_HOLDER_SIZE = T_HOLDER_PTRS * T_BS,
	MODES_MAX_IMAGE = 4u << 20,
};

static const char modes_tail_on_disk[] = "hello tail\n";
static const char modes_tail_in_log[] = "hello log!\n";

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
	uint8_t sd_f[44], sd_l[44], sd_n[44], sd_t[44], ind[16], lnk[8] = "target", tl[16] = { 0 };
	uint8_t hold[4 * T_HOLDER_PTRS];
	t_stat(sd_f, 0100644, 1, T_FILE_SIZE, 6);
	t_stat(sd_l, 0120777, 1, 6, 1);
	t_stat(sd_n, 0100644, 1, T_HOLDER_SIZE, 4);
	t_stat(sd_t, 0100600, 1, strlen(tail), 2);
	le32_put(ind, 0, T_DATA0);
	le32_put(ind, 4, T_DATA1);
	le32_put(ind, 8, 0);                  /* a hole */
	le32_put(ind, 12, T_DATA2);
	memset(hold, 0, sizeof(hold));        /* 64 holes: the inner image's first 64 KiB */
	le32_put(hold, 4 * (T_HOLDER_PTRS - 2), T_INNER_SB);
	le32_put(hold, 4 * (T_HOLDER_PTRS - 1), T_INNER_LEAF);
	memcpy(tl, tail, strlen(tail));
	const struct t_item it[] = {
		{ { 2, 4, 0, RFS_TYPE_STAT }, 0, sd_f, 44 },
		{ { 2, 4, 1, RFS_TYPE_INDIRECT }, 0, ind, 16 },
		{ { 2, 5, 0, RFS_TYPE_STAT }, 0, sd_l, 44 },
		{ { 2, 5, 1, RFS_TYPE_DIRECT }, 0, lnk, 8 },
		{ { 2, 7, 0, RFS_TYPE_STAT }, 0, sd_n, 44 },
		{ { 2, 7, 1, RFS_TYPE_INDIRECT }, 0, hold, sizeof(hold) },
		{ { 3, 6, 0, RFS_TYPE_STAT }, 0, sd_t, 44 },
		{ { 3, 6, 1, RFS_TYPE_DIRECT }, 0, tl, 16 },
	};
	t_leaf(blk, it, 8);
}

/* A superblock for block count / root / height at sb (3.6, r5). */
static void t_super(uint8_t *sb, uint32_t blocks, uint32_t free_blocks, uint32_t root,
		    uint16_t height, uint32_t jfirst, const char *label)
{
	le32_put(sb, SB_BLOCK_COUNT, blocks);
	le32_put(sb, SB_FREE_BLOCKS, free_blocks);
	le32_put(sb, SB_ROOT_BLOCK, root);
	le32_put(sb, SB_JP_FIRST, jfirst);
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
	le16_put(sb, SB_TREE_HEIGHT, height);
	le16_put(sb, SB_BMAP_NR, 1);
	le16_put(sb, SB_VERSION, RFS_FORMAT_36);
	memcpy(sb + SB_LABEL, label, strlen(label));
	le32_put(sb, SB_V2_SIZE, 1);          /* objectid map: [1, 8) used */
	le32_put(sb, SB_V2_SIZE + 4, 8);
}

/* Fills img (T_BLOCKS * T_BS bytes, zeroed) with the template. */
static void t_build(uint8_t *img)
{
	static const uint32_t used[][2] = {    /* [first, last] used block runs */
		{ 0, T_JHDR }, { T_ROOT, T_LEAF_B }, { T_DATA0, T_DATA2 },
		{ T_INNER_SB, T_INNER_LEAF } };
	uint32_t nused = 0;
	uint8_t *bm = img + (size_t)T_BITMAP * T_BS;
	for (size_t r = 0; r < sizeof(used) / sizeof(used[0]); r++)
		for (uint32_t b = used[r][0]; b <= used[r][1]; b++) {
			bm[b / 8] |= (uint8_t)(1u << (b % 8));
			nused++;
		}
	for (uint32_t b = T_BLOCKS; b < 8 * T_BS; b++)   /* bits past the end are set */
		bm[b / 8] |= (uint8_t)(1u << (b % 8));
	t_super(img + (size_t)T_SB * T_BS, T_BLOCKS, T_BLOCKS - nused, T_ROOT, 3, T_JFIRST,
		"fuzz-modes");

	/* Root internal node: key of leaf B's first item, children A and B. */
	uint8_t *root = img + (size_t)T_ROOT * T_BS;
	le16_put(root, BLKH_LEVEL, 2);
	le16_put(root, BLKH_NR_ITEMS, 1);
	le16_put(root, BLKH_FREE_SPACE, T_BS - RFS_BLKH_SIZE - RFS_KEY_SIZE - 2 * RFS_DC_SIZE);
	struct rfs_key kb = { 2, 4, 0, RFS_TYPE_STAT };
	rfs_key_encode(&kb, RFS_KEY_V2, root + RFS_BLKH_SIZE);
	uint8_t *dc = root + RFS_BLKH_SIZE + RFS_KEY_SIZE;
	le32_put(dc, DC_BLOCK, T_LEAF_A);
	le32_put(dc + RFS_DC_SIZE, DC_BLOCK, T_LEAF_B);

	/* Leaf A: the root directory and directory "d". */
	uint8_t sd_root[44], sd_d[44], dir_root[200], dir_d[96];
	struct t_dirent er[] = { { ".", 1, 2 }, { "..", 0, 1 }, { "d", 2, 3 },
				 { "f", 2, 4 }, { "l", 2, 5 }, { "n", 2, 7 } };
	struct t_dirent ed[] = { { ".", 2, 3 }, { "..", 1, 2 }, { "t", 3, 6 } };
	uint16_t lr = t_dir(dir_root, er, 6), ld = t_dir(dir_d, ed, 3);
	t_stat(sd_root, 040755, 3, lr, 1);
	t_stat(sd_d, 040700, 2, ld, 1);
	const struct t_item ia[] = {
		{ { 1, 2, 0, RFS_TYPE_STAT }, 0, sd_root, 44 },
		{ { 1, 2, 1, RFS_TYPE_DIRENTRY }, 6, dir_root, lr },
		{ { 2, 3, 0, RFS_TYPE_STAT }, 0, sd_d, 44 },
		{ { 2, 3, 1, RFS_TYPE_DIRENTRY }, 3, dir_d, ld },
	};
	t_leaf(img + (size_t)T_LEAF_A * T_BS, ia, 4);
	t_leaf_b(img + (size_t)T_LEAF_B * T_BS, modes_tail_on_disk);
	for (int i = 0; i < 2; i++) {         /* dc_size: bytes the child uses */
		const uint8_t *leaf = img + (size_t)(T_LEAF_A + i) * T_BS;
		le16_put(dc + RFS_DC_SIZE * i, DC_SIZE,
			 (uint16_t)(T_BS - RFS_BLKH_SIZE - le16_at(leaf, BLKH_FREE_SPACE)));
	}
	for (unsigned b = T_DATA0; b <= T_DATA2; b++)
		memset(img + (size_t)b * T_BS, (int)('A' + b - T_DATA0), T_BS);

	/* The nested image: its superblock at its own 64 KiB (outer block 120,
	 * inner block 64) and its root leaf at inner block 65 = outer 121. */
	t_super(img + (size_t)T_INNER_SB * T_BS, T_HOLDER_PTRS, 0, 65, 2, 18, "inner");
	uint8_t isd[44], idir[48];
	struct t_dirent ie[] = { { ".", 1, 2 }, { "..", 0, 1 } };
	uint16_t li = t_dir(idir, ie, 2);
	t_stat(isd, 040755, 2, li, 1);
	const struct t_item ii[] = {
		{ { 1, 2, 0, RFS_TYPE_STAT }, 0, isd, 44 },
		{ { 1, 2, 1, RFS_TYPE_DIRENTRY }, 2, idir, li },
	};
	t_leaf(img + (size_t)T_INNER_LEAF * T_BS, ii, 2);

	/* Journal: transaction 10 of mount 1 at log offset 0 logs leaf B. */
	uint8_t *desc = img + (size_t)T_JFIRST * T_BS;
	le32_put(desc, JD_TRANS_ID, T_TRANS_ID);
	le32_put(desc, JD_LEN, 1);
	le32_put(desc, JD_MOUNT_ID, T_MOUNT_ID);
	le32_put(desc, JD_REAL, T_LEAF_B);
	memcpy(desc + T_BS - 12, RFS_JOURNAL_DESC_MAGIC, 8);
	t_leaf_b(img + (size_t)(T_JFIRST + 1) * T_BS, modes_tail_in_log);
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
/* The environment: the image memfd, a private TMPDIR, captured output. */

struct modes_env {
	int img_fd;
	char img_path[64];
	uint8_t *template_img;
	uint8_t *img;                /* the current image (what the memfd must hold) */
	size_t img_size;
	uint8_t *readback;           /* MODES_MAX_IMAGE bytes for (M2) */
	char root[256];              /* private directory of this process */
	char tmpdir[300];            /* root/tmp, TMPDIR for the commands */
	unsigned flags;              /* byte 1 of the input */
};

static struct modes_env menv = { .img_fd = -1 };

struct modes_run {
	int rc;
	char *out;                   /* captured stdout, NUL-terminated */
	size_t out_len;
	char *err;                   /* captured stderr, NUL-terminated */
	size_t err_len;
};

static void modes_run_free(struct modes_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static int count_dir(const char *path, const char *only)
{
	DIR *d = opendir(path);
	CHECK(d != NULL);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (only && !strcmp(de->d_name, only))
			continue;
		fprintf(modes_real_stderr, "%s: unexpected entry %s/%s\n", modes_harness, path,
			de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	int n = 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

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

/* Removes the private directory at a normal exit (a crash leaves it for
 * the post-mortem; it is under /dev/shm or TMPDIR). */
static void modes_cleanup(void)
{
	if (!menv.root[0])
		return;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", menv.root,
		 menv.root);
	if (system(cmd) != 0)
		fprintf(modes_real_stderr, "%s: could not remove %s\n", modes_harness, menv.root);
}

/* One-time set-up: memfd, template, private directories, TMPDIR. */
static void modes_setup(const char *harness)
{
	modes_harness = harness;
	modes_real_stderr = stderr;
	menv.img_fd = memfd_create("rfs-fuzz-modes", 0);
	CHECK(menv.img_fd >= 0);
	snprintf(menv.img_path, sizeof(menv.img_path), "/proc/self/fd/%d", menv.img_fd);
	menv.template_img = calloc(T_BLOCKS, T_BS);
	menv.img = malloc(MODES_MAX_IMAGE);
	menv.readback = malloc(MODES_MAX_IMAGE);
	CHECK(menv.template_img && menv.img && menv.readback);
	t_build(menv.template_img);
	const char *dump = getenv("RFS_FUZZ_WRITE_TEMPLATE");
	if (dump) {
		FILE *f = fopen(dump, "wb");
		CHECK(f != NULL);
		CHECK(fwrite(menv.template_img, T_BS, T_BLOCKS, f) == T_BLOCKS);
		CHECK(fclose(f) == 0);
	}
	/* /dev/shm when there is one (salvage writes files on every run). */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	snprintf(menv.root, sizeof(menv.root), "%s/rfsck-%s-XXXXXX", base ? base : "/tmp", harness);
	CHECK(mkdtemp(menv.root) != NULL);
	atexit(modes_cleanup);
	snprintf(menv.tmpdir, sizeof(menv.tmpdir), "%s/tmp", menv.root);
	CHECK(mkdir(menv.tmpdir, 0700) == 0);
	CHECK(setenv("TMPDIR", menv.tmpdir, 1) == 0);
	CHECK(setenv("SQLITE_TMPDIR", menv.tmpdir, 1) == 0);
}

/* Decodes the input into menv.img and the memfd.  Returns false when the
 * input is too short to name an image. */
static bool modes_load(const uint8_t *data, size_t size)
{
	if (size < 6)
		return false;
	bool zero_base = data[0] & 1;
	menv.flags = data[1];
	uint64_t img_size = (uint64_t)le32_at(data, 2) * 512;
	if (img_size == 0)
		img_size = (uint64_t)T_BLOCKS * T_BS;
	if (img_size > MODES_MAX_IMAGE)
		img_size = MODES_MAX_IMAGE;
	menv.img_size = (size_t)img_size;
	memset(menv.img, 0, menv.img_size);
	if (!zero_base) {
		size_t n = (size_t)T_BLOCKS * T_BS;
		memcpy(menv.img, menv.template_img, n < menv.img_size ? n : menv.img_size);
	}
	size_t p = 6;
	while (p + 6 <= size) {
		size_t off = le32_at(data, p) % menv.img_size;
		size_t len = le16_at(data, p + 4);
		p += 6;
		if (len > size - p)
			len = size - p;
		if (len > menv.img_size - off)
			len = menv.img_size - off;
		memcpy(menv.img + off, data + p, len);
		p += len;
	}
	/* The whole image is rewritten, so only a change of size needs ftruncate
	 * (keeping the memfd's pages saves most of the cost of a run). */
	struct stat st;
	CHECK(fstat(menv.img_fd, &st) == 0);
	if ((size_t)st.st_size != menv.img_size)
		CHECK(ftruncate(menv.img_fd, (off_t)menv.img_size) == 0);
	write_all(menv.img_fd, menv.img, menv.img_size, 0);
	return true;
}

/* The --hash option of flags bits 1-2, or NULL. */
static const char *modes_hash_arg(void)
{
	static const char *const names[4] = { NULL, "--hash=tea", "--hash=rupasov", "--hash=r5" };
	return names[(menv.flags >> 1) & 3];
}

/* Runs cmd with argv (NULL-terminated) and stdout/stderr captured; checks
 * (M1) against the allowed statuses (a list ending in -1), (M3), (M4), (M5). */
static void modes_call(int (*cmd)(int, char **), const char *const *argv, const int *allowed,
		       struct modes_run *r)
{
	memset(r, 0, sizeof(*r));
	char *args[16];
	int argc = 0;
	for (; argv[argc]; argc++) {
		CHECK(argc < 15);
		args[argc] = (char *)argv[argc];
	}
	args[argc] = NULL;
	int fds = count_fds();
	FILE *out = open_memstream(&r->out, &r->out_len);
	FILE *err = open_memstream(&r->err, &r->err_len);
	CHECK(out && err);
	FILE *saved_out = stdout, *saved_err = stderr;
	stdout = out;
	stderr = err;
	r->rc = cmd(argc, args);
	stdout = saved_out;
	stderr = saved_err;
	CHECK(fclose(out) == 0 && fclose(err) == 0);
	bool ok = false;
	for (const int *a = allowed; *a >= 0; a++)
		ok |= r->rc == *a;
	if (!ok)
		fprintf(stderr, "%s: %s exited %d; stderr: %.400s\n", modes_harness, argv[0], r->rc,
			r->err);
	CHECK(ok);                                           /* (M1) */
	if (r->rc == RFS_EXIT_OPERATIONAL) {                 /* (M3) */
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "rfsck %s: ", argv[0]);
		CHECK(strstr(r->err, prefix) != NULL);
	}
	CHECK(count_dir(menv.tmpdir, NULL) == 0);           /* (M4) */
	CHECK(count_fds() == fds);                           /* (M5) */
}

/* (M2): the memfd still holds exactly the image that was written. */
static void modes_check_unchanged(void)
{
	struct stat st;
	CHECK(fstat(menv.img_fd, &st) == 0);
	CHECK((size_t)st.st_size == menv.img_size);
	size_t got = 0;
	while (got < menv.img_size) {
		ssize_t n = pread(menv.img_fd, menv.readback + got, menv.img_size - got, (off_t)got);
		CHECK(n > 0);
		got += (size_t)n;
	}
	CHECK(memcmp(menv.readback, menv.img, menv.img_size) == 0);
}

/* Parses captured stdout as exactly one JSON object; NULL if it is not. */
static json_t *modes_json(const struct modes_run *r)
{
	json_error_t je;
	json_t *j = json_loadb(r->out, r->out_len, 0, &je);
	if (!j || !json_is_object(j)) {
		fprintf(stderr, "%s: stdout is not one JSON object (%s): %.300s\n", modes_harness,
			j ? "not an object" : je.text, r->out);
		json_decref(j);
		return NULL;
	}
	return j;
}

#endif

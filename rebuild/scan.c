/*
 * scan.c - stage 1 of rebuild: read the scan set in large sequential runs,
 * reject non-leaves with a few comparisons, validate candidates fully, and
 * index what they hold.
 *
 * The scan set is every block outside the superblock area, the bitmaps and
 * the journal (--scan all), or only those the on-disk bitmap marks used
 * (--scan used; the default when the bitmaps pass the trust test below).
 * The journal area is scanned separately: leaves there are older copies,
 * indexed as such (area 1) and never used.
 *
 * Threads (readahead.h): a reader reads the runs, one worker per core
 * validates them into row batches (scan_classify.c, scan_rows.c), and this
 * thread, the only one that talks to SQLite, stores the batches in block
 * order.
 *
 * Resumable: meta('scan_next') commits with each batch of rows.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

#include "readahead.h"
#include "scan_rows.h"

/* BATCH_BLOCKS: rows commit (with the resume position) every 64 MiB of 4 KiB
 * blocks.  RB_SCAN_GAP: a read runs across up to 64 KiB of blocks outside
 * the scan set, so that fragmented free space does not split it into many
 * small reads (the reader reads them; no one classifies them). */
enum { BATCH_BLOCKS = 16384, RB_SCAN_GAP = 16 };

/* RB_SCAN_GAP, or RFSCK_SCAN_GAP (0..255 blocks) for measurements. */
static unsigned scan_gap(void)
{
	const char *env = getenv("RFSCK_SCAN_GAP");
	long g = env && *env ? strtol(env, NULL, 10) : RB_SCAN_GAP;
	return g < 0 ? 0 : g > 255 ? 255 : (unsigned)g;
}

/* Four independent multiply chains over 64-bit words, folded together and
 * finished with a full avalanche.  A byte-at-a-time hash (FNV-1a, which this
 * replaced) is one dependent multiply per byte: 5 % of a rebuild's cycles.
 * Each chain step (xor a word, multiply by an odd constant, xor-shift) is a
 * bijection of the chain state, so two blocks that differ in one word always
 * differ in that chain; the value is a duplicate test, not a defence against
 * a forger (nothing in an unchecksummed format is). */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* One 64-bit little-endian word; memcpy compiles to a single load. */
static inline uint64_t word_at(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return le64toh(w);
}

static inline uint64_t chain_step(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

uint64_t rb_checksum(const uint8_t *blk, uint32_t bs)
{
	uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
	uint64_t c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
	uint32_t i = 0;
	for (; i + 32 <= bs; i += 32) {
		a = chain_step(a, word_at(blk + i));
		b = chain_step(b, word_at(blk + i + 8));
		c = chain_step(c, word_at(blk + i + 16));
		d = chain_step(d, word_at(blk + i + 24));
	}
	uint64_t t = bs;
	for (; i < bs; i++)
		t = chain_step(t, blk[i]);
	return mix64(mix64(mix64(mix64(t ^ a) ^ b) ^ c) ^ d);
}

static bool in_scan_set(const struct rb_ctx *c, uint64_t blk)
{
	if (rfs_bitmap_test(&c->meta, blk))
		return false;
	return c->scan_mode == RB_SCAN_ALL || rfs_bitmap_test(&c->old_used, blk);
}

static bool in_scan_set_cb(const void *ctx, uint64_t blk)
{
	return in_scan_set(ctx, blk);
}

static bool in_journal_cb(const void *ctx, uint64_t blk)
{
	(void)ctx;
	(void)blk;
	return true;
}

struct scan_work {
	const struct rb_ctx *c;
	int area;
};

/* A worker's job (readahead.h): the rows of every block of the set in one
 * run; blocks that could not be read become unreadable rows, never zeros. */
static rfs_status validate_run(void *ctx, struct ra_run *r, struct rfs_error *err)
{
	const struct scan_work *w = ctx;
	struct rb_rows *rows = r->work_out;
	if (!rows) {
		if (!(rows = calloc(1, sizeof(*rows))))
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "scan rows");
		r->work_out = rows;
	}
	rb_rows_reset(rows);
	rfs_status st = RFS_OK;
	for (uint32_t i = 0; !st && i < r->n; i++) {
		if (!r->in_set[i])
			continue;
		uint64_t blk = r->first + i;
		if (r->failed[i]) {
			rows->n.unreadable++;
			st = rb_rows_unreadable(rows, blk, r->why[i] ? r->why[i] : "unreadable", err);
			continue;
		}
		rows->n.blocks_scanned++;
		st = rb_classify(w->c, blk, r->data + (size_t)i * w->c->bs, w->area, rows, err);
	}
	return st;
}

static void rows_free(void *p)
{
	rb_rows_free(p);
	free(p);
}

/* Scans [first, end) through the read pipeline and stores the rows in run
 * order; in the main area (area 0) a batch commits every BATCH_BLOCKS blocks
 * with the position to resume from. */
static rfs_status scan_range(struct rb_ctx *c, uint64_t first, uint64_t end, int area,
			     struct rfs_error *err)
{
	struct scan_work w = { .c = c, .area = area };
	struct ra_config cfg = {
		.bs = c->bs, .next = first, .end = end,
		.in_set = area ? in_journal_cb : in_scan_set_cb, .set_ctx = c,
		.gap = area ? 0 : scan_gap(), .work = validate_run, .work_free = rows_free,
		.work_ctx = &w, .workers = ra_default_workers(),
	};
	struct readahead *ra = NULL;
	rfs_status st = ra_start(c->dev, &cfg, &ra, err);
	uint64_t batch_start = first;
	while (!st) {
		struct ra_run *r;
		if ((st = ra_next(ra, &r, err)) || !r)
			break;
		st = rb_rows_store(r->work_out, c, err);
		uint64_t b = r->first + r->n;
		if (area)
			continue;
		rfs_progress_update(&c->progress, b);
		if (!st && b - batch_start >= BATCH_BLOCKS) {
			st = rfs_index_meta_set_u64(c->ix, "scan_next", b, err);
			if (!st)
				st = rfs_index_meta_set_u64(c->ix, "blocks_scanned", c->n.blocks_scanned, err);
			if (!st)
				st = rfs_index_commit(c->ix, err);
			if (!st)
				st = rfs_index_begin(c->ix, err);
			batch_start = b;
		}
	}
	ra_stop(ra);
	return st;
}

/* The trust test for --scan used: every bitmap block readable and marking
 * itself, the superblock area and the journal used, and more than the
 * metadata marked (a zeroed bitmap fails). */
static bool bitmap_trusted(struct rb_ctx *c, bool any_unreadable, char *why, size_t len)
{
	if (any_unreadable) {
		snprintf(why, len, "a bitmap block is unreadable");
		return false;
	}
	uint64_t meta = 0, bad = 0;
	for (uint64_t b = 0; b < c->nblocks; b++) {
		if (!rfs_bitmap_test(&c->meta, b))
			continue;
		meta++;
		if (!rfs_bitmap_test(&c->old_used, b))
			bad++;
	}
	if (bad) {
		snprintf(why, len, "the bitmaps mark %llu metadata blocks free",
			 (unsigned long long)bad);
		return false;
	}
	if (rfs_bitmap_count(&c->old_used) <= meta) {
		snprintf(why, len, "the bitmaps mark nothing but metadata used");
		return false;
	}
	snprintf(why, len, "the bitmaps mark all metadata used");
	return true;
}

static void note_unreadable_bitmap(void *ctx, uint32_t i, uint64_t blk, const struct rfs_error *e)
{
	(void)i;
	(void)blk;
	(void)e;
	*(bool *)ctx = true;
}

static rfs_status setup_sets(struct rb_ctx *c, struct rfs_error *err)
{
	const struct rfs_super *sb = &c->fs->sb;
	/* a few blocks in a hundred: sparse; claimed covers the data: dense */
	rfs_status st = rfs_bitmap_init_sparse(&c->meta, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init_sparse(&c->leaves, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init_sparse(&c->nested, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init_sparse(&c->accepted, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&c->claimed, c->nblocks, err);
	if (!st && c->opt.dry_run)
		st = rfs_bitmap_init_sparse(&c->nodes, c->nblocks, err);
	if (st)
		return st;
	for (uint64_t b = 0; b <= sb->sb_block && b < c->nblocks; b++)
		rfs_bitmap_set(&c->meta, b);
	for (uint32_t i = 0; i < sb->bmap_count; i++) {
		uint64_t b = rfs_bitmap_block(sb, i);
		if (b < c->nblocks)
			rfs_bitmap_set(&c->meta, b);
	}
	if (sb->j_dev == 0)
		for (uint64_t b = sb->j_first; b < rfs_super_journal_end(sb) && b < c->nblocks; b++)
			rfs_bitmap_set(&c->meta, b);
	if ((st = rfs_bitmap_status(&c->meta, "metadata blocks", err)))
		return st;
	bool unreadable = false;
	if ((st = rfs_bitmap_init(&c->old_used, c->nblocks, err)))
		return st;
	if ((st = rfs_bitmap_load(c->fs, &c->old_used, NULL, note_unreadable_bitmap, &unreadable,
				  err)))
		return st;
	char why[160];
	bool trusted = bitmap_trusted(c, unreadable, why, sizeof(why));
	switch (c->opt.scan) {
	case RB_SCAN_ALL:
		c->scan_mode = RB_SCAN_ALL;
		snprintf(c->scan_reason, sizeof(c->scan_reason), "asked for (--scan all)");
		break;
	case RB_SCAN_USED:
		c->scan_mode = RB_SCAN_USED;
		snprintf(c->scan_reason, sizeof(c->scan_reason), "asked for (--scan used); %s", why);
		break;
	case RB_SCAN_AUTO:
		c->scan_mode = trusted ? RB_SCAN_USED : RB_SCAN_ALL;
		snprintf(c->scan_reason, sizeof(c->scan_reason), "%s", why);
		break;
	}
	return RFS_OK;
}

/* Rebuilds the `leaves` bitmap and the counters from the index (resume). */
static rfs_status reload_from_index(struct rb_ctx *c, struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(c->ix,
		"SELECT block, area, valid FROM leaf", &s, err);
	if (st)
		return st;
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t b = (uint64_t)sqlite3_column_int64(s, 0);
		int area = sqlite3_column_int(s, 1), valid = sqlite3_column_int(s, 2);
		if (!valid)
			c->n.invalid++;
		else if (area)
			c->n.journal_copies++;
		else if (b < c->nblocks) {
			c->n.candidates++;
			rfs_bitmap_set(&c->leaves, b);
		}
	}
	sqlite3_finalize(s);
	static const char *const q[] = {
		"SELECT count(*) FROM internal", "SELECT count(*) FROM unreadable",
		"SELECT count(*) FROM nested", "SELECT coalesce(max(objectid), 0) FROM item",
		("SELECT coalesce(sum(votes_r5),0), coalesce(sum(votes_tea),0),"
		 " coalesce(sum(votes_rup),0) FROM leaf WHERE area = 0 AND valid >= 1"),
	};
	uint64_t v[4];
	for (int i = 0; i < 5; i++) {
		if ((st = rfs_index_prepare(c->ix, q[i], &s, err)))
			return st;
		if (sqlite3_step(s) == SQLITE_ROW) {
			if (i < 4)
				v[i] = (uint64_t)sqlite3_column_int64(s, 0);
			else
				for (int h = 0; h < 3; h++)
					c->hash_votes[h] = (uint32_t)sqlite3_column_int64(s, h);
		}
		sqlite3_finalize(s);
	}
	c->n.internal_nodes = v[0];
	c->n.unreadable = v[1];
	c->n.nested_superblocks = v[2];
	c->max_objectid = (uint32_t)v[3];
	bool found;
	return rfs_index_meta_get_u64(c->ix, "blocks_scanned", &c->n.blocks_scanned, &found, err);
}

rfs_status rb_scan(struct rb_ctx *c, struct rfs_error *err)
{
	rfs_status st = setup_sets(c, err);
	if (st)
		return st;
	uint64_t next = 0, done_flag = 0;
	bool found, found_done;
	if ((st = rfs_index_meta_get_u64(c->ix, "scan_next", &next, &found, err)) ||
	    (st = rfs_index_meta_get_u64(c->ix, "scan_done", &done_flag, &found_done, err)))
		return st;
	char mode_str[16];
	bool have_mode;
	if ((st = rfs_index_meta_get(c->ix, "scan_mode", mode_str, sizeof(mode_str), &have_mode,
				     err)))
		return st;
	if (found && have_mode) {
		/* A resumed scan keeps the scan set it started with. */
		c->n.resumed = true;
		c->scan_mode = strcmp(mode_str, "all") == 0 ? RB_SCAN_ALL : RB_SCAN_USED;
		if ((st = reload_from_index(c, err)))
			return st;
		if (found_done && done_flag)
			return RFS_OK;
	} else {
		next = 0;
		if ((st = rfs_index_meta_set(c->ix, "scan_mode",
					     c->scan_mode == RB_SCAN_ALL ? "all" : "used", err)))
			return st;
	}
	const struct rfs_super *sb = &c->fs->sb;
	if ((st = rfs_index_begin(c->ix, err)) || (st = rfs_index_bulk(c->ix, true, err)))
		return st;
	if (next == 0 && sb->j_dev == 0) {
		/* The journal area: older copies only. */
		uint64_t jend = rfs_super_journal_end(sb);
		st = scan_range(c, sb->j_first, jend < c->nblocks ? jend : c->nblocks, 1, err);
	}
	rfs_progress_phase(&c->progress, "scan", "blocks", c->nblocks);
	if (!st)
		st = scan_range(c, next, c->nblocks, 0, err);
	rfs_progress_done(&c->progress);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "scan_next", c->nblocks, err);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "blocks_scanned", c->n.blocks_scanned, err);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "scan_done", 1, err);
	if (!st)
		st = rfs_index_bulk(c->ix, false, err);
	if (!st)
		st = rfs_index_commit(c->ix, err);
	else
		rfs_index_rollback(c->ix);
	return st;
}

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
 * Resumable: meta('scan_next') commits with each batch of rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

#include "readahead.h"
#include "rebuild.h"
#include "rfs/bytes.h"
#include "rfs/hash.h"
#include "rfs/problem.h"

enum { RUN_BLOCKS = 256, BATCH_BLOCKS = 16384 };

uint64_t rb_checksum(const uint8_t *blk, uint32_t bs)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < bs; i++) {
		h ^= blk[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

struct first_fault {
	bool have;
	struct rfs_fault f;
};

static void keep_first_fault(void *ctx, const struct rfs_fault *f)
{
	struct first_fault *ff = ctx;
	if (!ff->have && rfs_problem_def(f->code)->severity == RFS_SEV_REBUILD) {
		ff->have = true;
		ff->f = *f;
	}
}

/* Directory entries of one item: hash evidence and index rows. */
static rfs_status index_dir_item(struct rb_ctx *c, uint64_t blk, int pos,
				 const struct rfs_item_head *ih, const uint8_t *body,
				 struct rfs_index_leaf *row, struct rfs_error *err)
{
	static const unsigned codes[3] = { 3, 1, 2 };   /* r5, tea, rupasov */
	for (int e = 0; e < ih->free_or_count; e++) {
		struct rfs_dirent d;
		rfs_dir_entry(body, ih->len, e, &d);
		unsigned hmask = 0;
		if (d.offset == RFS_DOT_OFFSET || d.offset == RFS_DOTDOT_OFFSET) {
			/* "." and ".." have fixed offsets instead of hashes: their
			 * names are the evidence */
			bool dot = d.name_len == 1 && d.name[0] == '.';
			bool dotdot = d.name_len == 2 && d.name[0] == '.' && d.name[1] == '.';
			if (d.offset == RFS_DOT_OFFSET ? dot : dotdot)
				hmask = 7;
		} else {
			row->names++;
			for (int h = 0; h < 3; h++) {
				if (rfs_hash_entry_offset(codes[h], d.name, d.name_len) ==
				    (d.offset & ~0x7Fu)) {
					hmask |= 1u << h;
					row->votes[h]++;
				}
			}
		}
		struct rfs_index_dirent r = {
			.dir_id = ih->key.dir_id, .objectid = ih->key.objectid, .off = d.offset,
			.t_dir_id = d.dir_id, .t_objectid = d.objectid, .name = d.name,
			.name_len = d.name_len, .state = d.state, .fmt = ih->key_format,
			.slot = d.stored_len,
			.block = blk, .pos = (uint32_t)pos, .hmask = hmask,
		};
		rfs_status st = rfs_index_add_dirent(c->ix, &r, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

/* Indirect pointers as runs of consecutive blocks. */
static rfs_status index_claims(struct rb_ctx *c, uint64_t blk, int pos,
			       const struct rfs_item_head *ih, const uint8_t *body,
			       struct rfs_error *err)
{
	uint32_t n = ih->len / 4;
	uint64_t base = ih->key.offset ? ih->key.offset - 1 : 0;
	uint32_t i = 0, p, cnt, at;
	while (rfs_indirect_next_run(body, n, &i, &p, &cnt, &at)) {
		rfs_status st = rfs_index_add_claim(c->ix, p, cnt, blk, (uint32_t)pos,
						    ih->key.dir_id, ih->key.objectid,
						    base + (uint64_t)at * c->bs, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

/* Items of a leaf that failed validation which still stand on their own:
 * head inside the block, body after the head array and inside the block, no
 * body overlapping another one kept, a known type whose body decodes, keys
 * strictly increasing.  A few flipped bits then cost the items they hit, not
 * the whole leaf (reiserfsck corrects such leaves in place; rebuild copies
 * the items that stand and never writes the damaged block). */
static unsigned standing_items(const uint8_t *buf, uint32_t bs, bool *use)
{
	struct rfs_block_head bh;
	rfs_block_head_decode(buf, &bh);
	unsigned nr = bh.nr_items;
	if (nr > rfs_leaf_max_items(bs))
		nr = rfs_leaf_max_items(bs);
	uint32_t heads_end = RFS_BLKH_SIZE + nr * RFS_IH_SIZE;
	/* 1. items that stand alone (bounds, type, body) */
	static _Thread_local struct rfs_key key[4096];
	static _Thread_local uint32_t lo[4096], hi[4096];
	static _Thread_local int len[4096], prev[4096];
	for (unsigned i = 0; i < nr; i++) {
		use[i] = false;
		struct rfs_item_head ih;
		rfs_leaf_item_head(buf, (int)i, &ih);
		lo[i] = ih.location;
		hi[i] = (uint32_t)ih.location + ih.len;
		key[i] = ih.key;
		if (ih.len == 0 || lo[i] < heads_end || hi[i] > bs || ih.key.type > RFS_TYPE_DIRENTRY ||
		    (ih.version & 0x0FFF) > RFS_KEY_V2)
			continue;
		const uint8_t *b = buf + lo[i];
		bool ok;
		switch (ih.key.type) {
		case RFS_TYPE_STAT:
			ok = ih.key.offset == 0 && (ih.len == RFS_SD_V1_SIZE || ih.len == RFS_SD_V2_SIZE);
			break;
		case RFS_TYPE_INDIRECT: ok = ih.len % 4 == 0 && ih.key.offset > 0; break;
		case RFS_TYPE_DIRECT: ok = ih.len <= bs - 48 && ih.key.offset > 0; break;
		default:
			ok = ih.free_or_count > 0 && ih.key.offset > 0 &&
			     rfs_dir_validate(b, ih.len, ih.free_or_count, NULL, NULL) == RFS_OK;
			break;
		}
		use[i] = ok;
	}
	/* 2. bodies must not overlap: of two that do, neither is trusted */
	for (unsigned i = 0; i < nr; i++)
		for (unsigned k = i + 1; k < nr && use[i]; k++)
			if (use[k] && lo[i] < hi[k] && lo[k] < hi[i])
				use[i] = use[k] = false;
	/* 3. keys: the longest strictly increasing run of them, so that one
	 * flipped key drops that item, not every item after it */
	int best = -1;
	for (unsigned i = 0; i < nr; i++) {
		len[i] = 0;
		prev[i] = -1;
		if (!use[i])
			continue;
		len[i] = 1;
		for (unsigned k = 0; k < i; k++)
			if (use[k] && len[k] + 1 > len[i] && rfs_key_cmp(&key[k], &key[i]) < 0) {
				len[i] = len[k] + 1;
				prev[i] = (int)k;
			}
		if (best < 0 || len[i] > len[best])
			best = (int)i;
	}
	for (unsigned i = 0; i < nr; i++)
		use[i] = false;
	unsigned kept = 0;
	for (int i = best; i >= 0; i = prev[i]) {
		use[i] = true;
		kept++;
	}
	return kept;
}

static rfs_status index_leaf(struct rb_ctx *c, uint64_t blk, const uint8_t *buf, int area,
			     struct rfs_error *err)
{
	struct first_fault ff = { 0 };
	struct rfs_block_head bh;
	rfs_block_head_decode(buf, &bh);
	struct rfs_index_leaf row = {
		.block = blk, .area = area, .nr_items = bh.nr_items,
		.checksum = rb_checksum(buf, c->bs),
		.used = blk < c->old_used.nbits && rfs_bitmap_test(&c->old_used, blk),
	};
	bool use[4096];
	bool partly = false;
	if (rfs_leaf_validate(buf, c->bs, keep_first_fault, &ff) != RFS_OK) {
		row.fault = ff.have ? rfs_problem_def(ff.f.code)->name : "LEAF_INVALID";
		if (area != 0 || standing_items(buf, c->bs, use) == 0) {
			row.valid = 0;
			c->n.invalid++;
			return rfs_index_add_leaf(c->ix, &row, err);
		}
		partly = true;
		c->n.partly_valid++;
	}
	row.valid = partly ? 2 : 1;
	for (int i = 0; i < bh.nr_items && i < (int)rfs_leaf_max_items(c->bs); i++) {
		if (partly && !use[i])
			continue;
		struct rfs_item_head ih0;
		rfs_leaf_item_head(buf, i, &ih0);
		row.has_key = true;
		row.first_key = ih0.key;
		break;
	}
	if (area == 1) {
		c->n.journal_copies++;
		return rfs_index_add_leaf(c->ix, &row, err);
	}
	c->n.candidates++;
	rfs_bitmap_set(&c->leaves, blk);
	rfs_status st = RFS_OK;
	for (int i = 0; !st && i < bh.nr_items && i < (int)rfs_leaf_max_items(c->bs); i++) {
		if (partly && !use[i])
			continue;
		struct rfs_item_head ih;
		rfs_leaf_item_head(buf, i, &ih);
		const uint8_t *body = buf + ih.location;
		struct rfs_index_item it = {
			.block = blk, .pos = (uint32_t)i, .dir_id = ih.key.dir_id,
			.objectid = ih.key.objectid, .offset = ih.key.offset, .type = ih.key.type,
			.fmt = ih.key_format, .len = ih.len,
		};
		if (ih.key.type == RFS_TYPE_STAT) {
			struct rfs_stat sd;
			if (rfs_stat_decode(body, ih.len, &sd) == RFS_OK) {
				it.is_sd = true;
				it.sd_mode = sd.mode;
				it.sd_mtime = sd.mtime;
			}
		}
		if (ih.key.objectid > c->max_objectid)
			c->max_objectid = ih.key.objectid;
		st = rfs_index_add_item(c->ix, &it, err);
		if (!st && ih.key.type == RFS_TYPE_DIRENTRY)
			st = index_dir_item(c, blk, i, &ih, body, &row, err);
		else if (!st && ih.key.type == RFS_TYPE_INDIRECT)
			st = index_claims(c, blk, i, &ih, body, err);
	}
	for (int h = 0; h < 3; h++)
		c->hash_votes[h] += row.votes[h];
	return st ? st : rfs_index_add_leaf(c->ix, &row, err);
}

static bool has_sb_magic(const uint8_t *buf, uint32_t bs)
{
	return bs >= 64 && memcmp(buf + 52, "ReIsEr", 6) == 0 &&
	       (memcmp(buf + 58, "Fs", 2) == 0 || memcmp(buf + 58, "2Fs", 3) == 0 ||
		memcmp(buf + 58, "3Fs", 3) == 0);
}

/* A ReiserFS superblock at the 64 KiB location of a filesystem that would
 * begin 64 KiB before this block. */
static rfs_status index_superblock(struct rb_ctx *c, uint64_t blk, const uint8_t *buf,
				   struct rfs_error *err)
{
	uint64_t at = blk * c->bs;
	if (at < 65536)
		return RFS_OK;
	struct rfs_super isb;
	struct rfs_error ignored;
	if (rfs_super_decode(buf, c->bs, 65536, &isb, &ignored) != RFS_OK)
		return RFS_OK;
	if (isb.blocksize < 512 ||
	    (isb.blocksize & (isb.blocksize - 1)) || isb.block_count == 0)
		return RFS_OK;
	char magic[16];
	snprintf(magic, sizeof(magic), "%.*s", 10, (const char *)buf + 52);
	struct rfs_index_nested n = {
		.sb_block = blk, .start_byte = at - 65536, .block_size = isb.blocksize,
		.block_count = isb.block_count, .magic = magic, .root = isb.root_block,
		.height = isb.tree_height,
	};
	c->n.nested_superblocks++;
	return rfs_index_add_nested(c->ix, &n, err);
}

/* The cheap test first: most blocks are rejected by their first six bytes. */
static rfs_status classify(struct rb_ctx *c, uint64_t blk, const uint8_t *buf, int area,
			   struct rfs_error *err)
{
	uint16_t level = le16_at(buf, 0), nr = le16_at(buf, 2), free_space = le16_at(buf, 4);
	if (level == RFS_LEVEL_LEAF && nr >= 1 && nr <= rfs_leaf_max_items(c->bs) &&
	    free_space <= c->bs - RFS_BLKH_SIZE)
		return index_leaf(c, blk, buf, area, err);
	if (level >= 2 && level <= RFS_MAX_HEIGHT && nr >= 1 && nr <= rfs_internal_max_keys(c->bs)) {
		if (rfs_internal_validate(buf, c->bs, NULL, NULL) != RFS_OK)
			return RFS_OK;
		uint64_t children[2732];   /* rfs_internal_max_keys(65536) + 1 */
		struct rfs_key keys[2731];
		for (int i = 0; i <= nr; i++) {
			struct rfs_disk_child dc;
			rfs_internal_child(buf, nr, i, &dc);
			children[i] = dc.block;
			if (i < nr)
				rfs_internal_key(buf, i, &keys[i]);
		}
		c->n.internal_nodes++;
		return rfs_index_add_internal(c->ix, blk, level, nr, area, children, keys, err);
	}
	if (area == 0 && has_sb_magic(buf, c->bs))
		return index_superblock(c, blk, buf, err);
	return RFS_OK;
}

static bool in_scan_set(const struct rb_ctx *c, uint64_t blk)
{
	if (rfs_bitmap_test(&c->meta, blk))
		return false;
	return c->scan_mode == RB_SCAN_ALL || rfs_bitmap_test(&c->old_used, blk);
}

/* Reads [first, first + n) in one run, falling back to single blocks around
 * a read error, and classifies every block that is in the set. */
static rfs_status scan_run(struct rb_ctx *c, uint64_t first, uint32_t n, int area, uint8_t *buf,
			   struct rfs_error *err)
{
	uint64_t bad;
	struct rfs_error rerr;
	rfs_status st = rfs_dev_read_run(c->dev, first, n, buf, &bad, &rerr);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t blk = first + i;
		if (area == 0 && !in_scan_set(c, blk))
			continue;
		uint8_t *b = buf + (size_t)i * c->bs;
		if (st) {
			struct rfs_error e1;
			if (rfs_dev_read_block(c->dev, blk, b, &e1) != RFS_OK) {
				char msg[256];
				rfs_error_format(&e1, msg, sizeof(msg));
				c->n.unreadable++;
				rfs_status s2 = rfs_index_add_unreadable(c->ix, blk, msg, err);
				if (s2)
					return s2;
				continue;
			}
		}
		c->n.blocks_scanned++;
		rfs_status s2 = classify(c, blk, b, area, err);
		if (s2)
			return s2;
	}
	return RFS_OK;
}

/* Classifies a run the reader thread read (blocks that failed are indexed
 * as unreadable, never treated as zeros). */
static rfs_status scan_ready_run(struct rb_ctx *c, const struct ra_run *r, struct rfs_error *err)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t blk = r->first + i;
		if (r->failed[i]) {
			c->n.unreadable++;
			rfs_status s2 = rfs_index_add_unreadable(c->ix, blk,
								 r->why[i] ? r->why[i] : "unreadable", err);
			if (s2)
				return s2;
			continue;
		}
		c->n.blocks_scanned++;
		rfs_status s2 = classify(c, blk, r->data + (size_t)i * c->bs, 0, err);
		if (s2)
			return s2;
	}
	return RFS_OK;
}

static bool in_scan_set_cb(const void *ctx, uint64_t blk)
{
	return in_scan_set(ctx, blk);
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
	rfs_status st = rfs_bitmap_init(&c->meta, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&c->leaves, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&c->nested, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&c->accepted, c->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&c->claimed, c->nblocks, err);
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
	uint8_t *buf = malloc((size_t)RUN_BLOCKS * c->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "scan buffer");
	const struct rfs_super *sb = &c->fs->sb;
	if ((st = rfs_index_begin(c->ix, err)))
		goto out;
	if (next == 0 && sb->j_dev == 0) {
		/* The journal area: older copies only. */
		uint64_t jend = rfs_super_journal_end(sb);
		for (uint64_t b = sb->j_first; !st && b < jend && b < c->nblocks; b += RUN_BLOCKS) {
			uint64_t n = jend - b < RUN_BLOCKS ? jend - b : RUN_BLOCKS;
			if (b + n > c->nblocks)
				n = c->nblocks - b;
			st = scan_run(c, b, (uint32_t)n, 1, buf, err);
		}
	}
	rfs_progress_phase(&c->progress, "scan", "blocks", c->nblocks);
	/* the reader thread reads ahead; this thread validates and indexes */
	struct readahead *ra = NULL;
	if (!st)
		st = ra_start(c->dev, c->bs, next, c->nblocks, in_scan_set_cb, c, &ra, err);
	uint64_t batch_start = next;
	while (!st) {
		struct ra_run *r;
		if ((st = ra_next(ra, &r, err)) || !r)
			break;
		st = scan_ready_run(c, r, err);
		uint64_t b = r->first + r->n;
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
	rfs_progress_done(&c->progress);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "scan_next", c->nblocks, err);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "blocks_scanned", c->n.blocks_scanned, err);
	if (!st)
		st = rfs_index_meta_set_u64(c->ix, "scan_done", 1, err);
	if (!st)
		st = rfs_index_commit(c->ix, err);
	else
		rfs_index_exec(c->ix, "ROLLBACK", NULL);
out:
	free(buf);
	return st;
}

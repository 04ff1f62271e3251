/*
 * scan_classify.c - what one block of rebuild's scan yields: most blocks are
 * rejected by their first six bytes; leaf candidates are validated in full
 * (or, when damaged, down to the items that still stand), their directory
 * names are checked against the three hash functions and their content
 * checksummed; internal nodes and superblocks of nested filesystems are
 * recorded too.  Runs on the scan's worker threads (scan_rows.h): it reads
 * only the block and the constant parts of the context, and writes only its
 * batch.
 */
#include <stdio.h>
#include <string.h>

#include "scan_rows.h"
#include "rfs/bytes.h"
#include "rfs/hash.h"
#include "rfs/problem.h"

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
static rfs_status index_dir_item(struct rb_rows *out, uint64_t blk, int pos,
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
				if (rfs_hash_offset_matches(codes[h], d.name, d.name_len, d.offset)) {
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
			.keep = true,   /* until decide says otherwise (select.c) */
		};
		rfs_status st = rb_rows_dirent(out, &r, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

/* Indirect pointers as runs of consecutive blocks. */
static rfs_status index_claims(const struct rb_ctx *c, struct rb_rows *out, uint64_t blk, int pos,
			       const struct rfs_item_head *ih, const uint8_t *body,
			       struct rfs_error *err)
{
	uint32_t n = ih->len / 4;
	uint64_t base = ih->key.offset ? ih->key.offset - 1 : 0;
	uint32_t i = 0, p, cnt, at;
	while (rfs_indirect_next_run(body, n, &i, &p, &cnt, &at)) {
		rfs_status st = rb_rows_claim(out, p, cnt, blk, (uint32_t)pos,
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

static rfs_status index_leaf(const struct rb_ctx *c, uint64_t blk, const uint8_t *buf, int area,
			     struct rb_rows *out, struct rfs_error *err)
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
			out->n.invalid++;
			return rb_rows_leaf(out, &row, err);
		}
		partly = true;
		out->n.partly_valid++;
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
		out->n.journal_copies++;
		return rb_rows_leaf(out, &row, err);
	}
	out->n.candidates++;
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
		if (ih.key.objectid > out->max_objectid)
			out->max_objectid = ih.key.objectid;
		st = rb_rows_item(out, &it, err);
		if (!st && ih.key.type == RFS_TYPE_DIRENTRY)
			st = index_dir_item(out, blk, i, &ih, body, &row, err);
		else if (!st && ih.key.type == RFS_TYPE_INDIRECT)
			st = index_claims(c, out, blk, i, &ih, body, err);
	}
	for (int h = 0; h < 3; h++)
		out->hash_votes[h] += row.votes[h];
	return st ? st : rb_rows_leaf(out, &row, err);
}

static bool has_sb_magic(const uint8_t *buf, uint32_t bs)
{
	return bs >= 64 && memcmp(buf + 52, "ReIsEr", 6) == 0 &&
	       (memcmp(buf + 58, "Fs", 2) == 0 || memcmp(buf + 58, "2Fs", 3) == 0 ||
		memcmp(buf + 58, "3Fs", 3) == 0);
}

/* A ReiserFS superblock at the 64 KiB location of a filesystem that would
 * begin 64 KiB before this block. */
static rfs_status index_superblock(const struct rb_ctx *c, uint64_t blk, const uint8_t *buf,
				   struct rb_rows *out, struct rfs_error *err)
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
	out->n.nested_superblocks++;
	return rb_rows_nested(out, &n, err);
}

/* The cheap test first: most blocks are rejected by their first six bytes. */
rfs_status rb_classify(const struct rb_ctx *c, uint64_t blk, const uint8_t *buf, int area,
		       struct rb_rows *out, struct rfs_error *err)
{
	uint16_t level = le16_at(buf, 0), nr = le16_at(buf, 2), free_space = le16_at(buf, 4);
	if (level == RFS_LEVEL_LEAF && nr >= 1 && nr <= rfs_leaf_max_items(c->bs) &&
	    free_space <= c->bs - RFS_BLKH_SIZE)
		return index_leaf(c, blk, buf, area, out, err);
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
		out->n.internal_nodes++;
		return rb_rows_internal(out, blk, level, nr, area, children, keys, err);
	}
	if (area == 0 && has_sb_magic(buf, c->bs))
		return index_superblock(c, blk, buf, out, err);
	return RFS_OK;
}


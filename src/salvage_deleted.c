/*
 * salvage_deleted.c - `rfsck salvage --deleted`, part 1: finding the deleted
 * objects and deciding what of them can be believed.  Part 2
 * (src/salvage_deleted_write.c) places and writes them.
 *
 * Contract (include/rfs/salvage.h gives the invariants):
 *  1. The live tree (the one salvage walks) is walked once: every key it
 *     holds is live, and its nodes (when they are blocks of the image) and
 *     the data blocks of its indirect items are in use, besides what the
 *     allocation bitmap marks used.
 *  2. The journal area is read whole: leaf copies there are stale items;
 *     the valid transactions in the log say which home block each logged
 *     copy is a version of, and when (transaction id).
 *  3. Every other block that is neither metadata nor in use is read (or only
 *     those rebuild's index found a leaf in, when its scan covered them):
 *     valid leaves there are stale copies too.  A free copy identical to a
 *     journal copy of its own block carries that copy's transaction id.
 *  4. Of each copy, the items of keys the live tree does not hold are kept
 *     (stat data decoded, indirect pointers as runs), and every directory
 *     entry that names such a key (of any directory, live or not).
 *  5. A free leaf that a deleted file's pointer claims as data is taken for
 *     that data (its items dropped) unless it is provably newer than every
 *     claim; two rounds, the second counting only the claims of copies the
 *     first kept (pointers inside a deleted nested image then claim nothing).
 *  6. Per object: the newest stat data copy, per item key the newest copy
 *     (salvage_rank_cmp); per object the newest name.  Data pointers claimed
 *     by several deleted objects go to the newest claim alone.
 * Memory: a few bitmaps over the blocks, plus records proportional to the
 * stale items found (capped at SALVAGE_DELETED_RECORDS_MAX).
 */
#include "salvage_deleted_int.h"

#include <stdlib.h>
#include <string.h>

#include "../rebuild/readahead.h"
#include "../rebuild/rebuild.h"
#include "rfs/bytes.h"
#include "rfs/index.h"

enum { JOURNAL_RUN = 256 };

/* ------------------------------------------------------------------------- */
/* The decision rules (also unit-tested: tests/unit/test_salvage_deleted.c). */

int salvage_rank_cmp(const struct salvage_rank *a, const struct salvage_rank *b)
{
	if (a->gen != b->gen)
		return a->gen > b->gen ? -1 : 1;
	if (a->with_sd != b->with_sd)
		return a->with_sd ? -1 : 1;
	if (a->ctime != b->ctime)
		return a->ctime > b->ctime ? -1 : 1;
	if (a->mtime != b->mtime)
		return a->mtime > b->mtime ? -1 : 1;
	if (a->journal != b->journal)
		return a->journal ? 1 : -1;
	if (a->block != b->block)
		return a->block < b->block ? -1 : 1;
	return 0;
}

bool salvage_free_copy_trans(const struct salvage_jcopy *jc, size_t n, uint64_t block,
			     uint64_t checksum, uint32_t *trans_id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (jc[mid].home < block)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool found = false;
	for (size_t i = lo; i < n && jc[i].home == block; i++) {
		if (jc[i].checksum != checksum)
			continue;
		if (!found || jc[i].trans_id > *trans_id)
			*trans_id = jc[i].trans_id;
		found = true;
	}
	return found;
}

enum salvage_block_verdict salvage_block_verdict(const struct salvage_block_facts *f, uint64_t gen)
{
	if (f->outside)
		return SALVAGE_BLOCK_OUTSIDE;
	if (f->in_use)
		return SALVAGE_BLOCK_IN_USE;
	if (f->stale_leaf)
		return SALVAGE_BLOCK_LEAF;
	if (f->claimants > 1) {
		if (gen < f->newest_gen)
			return SALVAGE_BLOCK_REUSED;
		if (f->newest_count > 1)
			return SALVAGE_BLOCK_CONTESTED;
	}
	return f->marked_used ? SALVAGE_BLOCK_DATA_MARKED : SALVAGE_BLOCK_DATA;
}

const char *salvage_block_verdict_text(enum salvage_block_verdict v)
{
	switch (v) {
	case SALVAGE_BLOCK_DATA: return "read";
	case SALVAGE_BLOCK_DATA_MARKED: return "read, although marked used";
	case SALVAGE_BLOCK_OUTSIDE: return "outside the filesystem or in its metadata";
	case SALVAGE_BLOCK_IN_USE: return "in use now (reused)";
	case SALVAGE_BLOCK_LEAF: return "overwritten by a newer tree leaf";
	case SALVAGE_BLOCK_REUSED: return "claimed by a newer deleted object";
	case SALVAGE_BLOCK_CONTESTED: return "claimed by another deleted object of the same age";
	}
	return "?";
}

/* ------------------------------------------------------------------------- */
/* Growing arrays. */

bool sdel_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return false;
		ncap *= 2;
	}
	void *nv = realloc(*v, ncap * elem);
	if (!nv)
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

#define PUSH(d, arr, n, cap, val)                                                        \
	(sdel_grow((void **)&(d)->arr, &(d)->cap, (d)->n + 1, sizeof(*(d)->arr))           \
		 ? ((d)->arr[(d)->n++] = (val), true)                                      \
		 : false)

static uint64_t key64(uint32_t dir_id, uint32_t objectid)
{
	return (uint64_t)dir_id << 32 | objectid;
}

/* A key that names a real object (not a safe link, not the root's parent). */
static bool real_key(uint32_t dir_id, uint32_t objectid)
{
	return dir_id != 0xFFFFFFFFu && dir_id != 0 && objectid != 0;
}

/* Counts one record against the cap; false when it is reached. */
static bool room(struct salvage_deleted *d)
{
	if (d->records >= SALVAGE_DELETED_RECORDS_MAX) {
		d->t.records_truncated = true;
		return false;
	}
	d->records++;
	return true;
}

/* ------------------------------------------------------------------------- */
/* 1. The live tree. */

static rfs_status live_walk(struct salvage_deleted *d, struct rfs_error *err)
{
	struct rfs_cursor cur;
	rfs_status st = rfs_cursor_init(d->live_fs, &cur, err);
	if (st)
		return st;
	struct rfs_error werr;
	rfs_error_clear(&werr);
	struct rfs_key k0 = { 0, 0, 0, 0 };
	rfs_status ws = rfs_cursor_seek(&cur, &k0, NULL, &werr);
	if (!ws && !rfs_cursor_at_item(&cur))
		ws = rfs_cursor_next(&cur, &werr);
	uint64_t last_leaf = RFS_NO_BLOCK, last_key = 0;
	bool have_key = false;
	while (!ws && rfs_cursor_at_item(&cur)) {
		uint64_t leaf = rfs_cursor_leaf_block(&cur);
		if (leaf != last_leaf) {
			last_leaf = leaf;
			if (d->nodes_on_disk)
				for (int i = 0; i < cur.height; i++)
					rfs_bitmap_set(&d->in_use, cur.lv[i].block);
		}
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(&cur, &ih, &body);
		uint64_t k = key64(ih.key.dir_id, ih.key.objectid);
		if (!have_key || k != last_key) {
			have_key = true;
			if (u64set_add(&d->live, k, NULL)) {
				ws = RFS_ERR_NOMEM;
				break;
			}
			last_key = k;
		}
		if (ih.key.type == RFS_TYPE_INDIRECT)
			/* the cursor validated the leaf: the body is inside it */
			for (size_t i = 0; i + 4 <= ih.len; i += 4)
				rfs_bitmap_set(&d->in_use, le32_at(body, i));
		ws = rfs_cursor_next(&cur, &werr);
	}
	rfs_cursor_free(&cur);
	if (ws == RFS_ERR_NOMEM)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "live keys");
	if (ws) {
		d->t.live_incomplete = true;
		rfs_error_format(&werr, d->t.live_error, sizeof(d->t.live_error));
	}
	return RFS_OK;
}

/* ------------------------------------------------------------------------- */
/* 4. What one stale leaf copy holds. */

/* The copy index of the block being classified, created on first use. */
static bool copy_of(struct salvage_deleted *d, struct sdel_scan_block *sb, uint32_t *out)
{
	if (sb->copy == UINT32_MAX) {
		struct salvage_copy c = {
			.block = sb->block, .home = sb->journal ? RFS_NO_BLOCK : sb->block,
			.checksum = sb->checksum, .journal = sb->journal,
			.trans_id = sb->trans_id, .have_trans = sb->have_trans,
		};
		if (d->ncopies >= UINT32_MAX - 1 || !PUSH(d, copies, ncopies, copies_cap, c))
			return false;
		sb->copy = (uint32_t)(d->ncopies - 1);
	}
	*out = sb->copy;
	return true;
}

static rfs_status keep_item(struct salvage_deleted *d, struct sdel_scan_block *sb, int pos,
			    const struct rfs_item_head *ih, const uint8_t *body)
{
	unsigned type = ih->key.type;
	if (type == RFS_TYPE_STAT ? ih->key.offset != 0
				  : (type != RFS_TYPE_DIRECT && type != RFS_TYPE_INDIRECT) ||
					    ih->key.offset == 0)
		return RFS_OK;
	struct rfs_stat sd;
	if (type == RFS_TYPE_STAT && rfs_stat_decode(body, ih->len, &sd) != RFS_OK)
		return RFS_OK;
	if (!room(d))
		return RFS_OK;
	uint32_t copy;
	if (!copy_of(d, sb, &copy) || d->nitems >= UINT32_MAX - 1)
		return RFS_ERR_NOMEM;
	struct sdel_item it = {
		.dir_id = ih->key.dir_id, .objectid = ih->key.objectid, .offset = ih->key.offset,
		.copy = copy, .sd = UINT32_MAX, .pos = (uint16_t)pos, .len = ih->len,
		.type = (uint8_t)type,
	};
	if (type == RFS_TYPE_STAT) {
		if (d->nsds >= UINT32_MAX - 1 || !PUSH(d, sds, nsds, sds_cap, sd))
			return RFS_ERR_NOMEM;
		it.sd = (uint32_t)(d->nsds - 1);
	}
	if (!PUSH(d, items, nitems, items_cap, it))
		return RFS_ERR_NOMEM;
	if (type != RFS_TYPE_INDIRECT)
		return RFS_OK;
	uint32_t item = (uint32_t)(d->nitems - 1);
	uint32_t n = ih->len / 4;
	uint32_t i = 0, p, cnt, at;
	while (rfs_indirect_next_run(body, n, &i, &p, &cnt, &at)) {
		if (!room(d))
			return RFS_OK;
		struct sdel_run r = { .first = p, .count = cnt, .item = item };
		if (!PUSH(d, runs, nruns, runs_cap, r))
			return RFS_ERR_NOMEM;
	}
	return RFS_OK;
}

/* Every entry (but "." and "..") of a stale directory item: one naming a
 * key the tree does not hold goes to names, one naming a live key to
 * old_names (choose_old_names keeps those the live directory lacks). */
static rfs_status keep_names(struct salvage_deleted *d, struct sdel_scan_block *sb,
			     const struct rfs_item_head *ih, const uint8_t *body)
{
	for (int e = 0; e < ih->free_or_count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(body, ih->len, e, &de);
		if (de.offset <= RFS_DOTDOT_OFFSET || !real_key(de.dir_id, de.objectid))
			continue;
		bool live = u64set_has(&d->live, key64(de.dir_id, de.objectid));
		if (!room(d))
			return RFS_OK;
		uint32_t copy;
		if (!copy_of(d, sb, &copy))
			return RFS_ERR_NOMEM;
		struct sdel_name nm = {
			.dir_id = ih->key.dir_id, .objectid = ih->key.objectid,
			.t_dir_id = de.dir_id, .t_objectid = de.objectid, .copy = copy,
			.off = de.offset, .len = de.name_len,
			.name = malloc(de.name_len ? de.name_len : 1),
		};
		if (!nm.name)
			return RFS_ERR_NOMEM;
		memcpy(nm.name, de.name, de.name_len);
		if (live ? !PUSH(d, old_names, nold_names, old_names_cap, nm)
			 : !PUSH(d, names, nnames, names_cap, nm)) {
			free(nm.name);
			return RFS_ERR_NOMEM;
		}
	}
	return RFS_OK;
}

/* A block of the scan: a stale leaf copy when it is a valid leaf. */
static rfs_status classify(struct salvage_deleted *d, struct sdel_scan_block *sb, const uint8_t *buf,
			   struct rfs_error *err)
{
	uint32_t bs = d->bs;
	uint16_t level = le16_at(buf, 0), nr = le16_at(buf, 2), free_space = le16_at(buf, 4);
	if (level != RFS_LEVEL_LEAF || nr < 1 || nr > rfs_leaf_max_items(bs) ||
	    free_space > bs - RFS_BLKH_SIZE)
		return RFS_OK;
	if (rfs_leaf_validate(buf, bs, NULL, NULL) != RFS_OK) {
		d->t.leaves_invalid++;
		return RFS_OK;
	}
	sb->checksum = rb_checksum(buf, bs);
	sb->copy = UINT32_MAX;
	if (sb->journal) {
		d->t.leaves_journal++;
		struct sdel_jleaf jl = { .log_off = sb->log_off, .checksum = sb->checksum };
		if (!PUSH(d, jleaves, njleaves, jleaves_cap, jl))
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal leaves");
	} else {
		d->t.leaves_free++;
		sb->have_trans = salvage_free_copy_trans(d->jcopies, d->njcopies, sb->block,
							 sb->checksum, &sb->trans_id);
		rfs_bitmap_set(&d->stale, sb->block);
	}
	rfs_status st = RFS_OK;
	for (int i = 0; !st && i < nr; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(buf, i, &ih);
		const uint8_t *body = buf + ih.location;
		if (!real_key(ih.key.dir_id, ih.key.objectid))
			continue;
		if (ih.key.type == RFS_TYPE_DIRENTRY) {
			st = keep_names(d, sb, &ih, body);
			continue;
		}
		if (u64set_has(&d->live, key64(ih.key.dir_id, ih.key.objectid))) {
			d->t.live_items_skipped++;
			continue;
		}
		st = keep_item(d, sb, i, &ih, body);
	}
	if (st)
		return rfs_error_set(err, st, RFS_NO_BLOCK, "stale items");
	if (!sb->journal) {
		struct sdel_leaf l = {
			.block = sb->block, .gen = sb->have_trans ? (uint64_t)sb->trans_id + 1 : 0,
			.copy = sb->copy,
		};
		if (!PUSH(d, leaves, nleaves, leaves_cap, l))
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "stale leaves");
	}
	return RFS_OK;
}

/* ------------------------------------------------------------------------- */
/* 2. The journal area. */

static uint64_t log_block(const struct salvage_deleted *d, uint64_t off)
{
	return d->disk_fs->sb.j_first + off % d->jsize;
}

/* Reads the whole log once: descriptors are noted, leaves classified. */
static rfs_status read_log(struct salvage_deleted *d, uint8_t *buf, struct rfs_error *err)
{
	uint32_t bs = d->bs;
	for (uint64_t off = 0; off < d->jsize; off += JOURNAL_RUN) {
		uint32_t n = d->jsize - off < JOURNAL_RUN ? (uint32_t)(d->jsize - off) : JOURNAL_RUN;
		struct rfs_error rerr;
		rfs_error_clear(&rerr);
		rfs_status rs = rfs_dev_read_run(d->disk_fs->dev, log_block(d, off), n, buf, NULL, &rerr);
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *b = buf + (size_t)i * bs;
			uint64_t blk = log_block(d, off + i);
			if (rs) {
				rfs_error_clear(&rerr);
				if (rfs_dev_read_block(d->disk_fs->dev, blk, b, &rerr)) {
					if (rerr.status == RFS_ERR_NOMEM)
						return rfs_error_set(err, RFS_ERR_NOMEM, blk, "journal read");
					d->t.unreadable++;
					continue;
				}
			}
			d->t.blocks_read++;
			uint32_t tid, len, mid;
			if (rfs_journal_desc_decode(b, bs, &tid, &len, &mid)) {
				d->jmap[off + i].is_desc = true;
				d->jmap[off + i].desc_trans = tid;
				d->jmap[off + i].desc_len = len;
				continue;
			}
			struct sdel_scan_block sb = { .block = blk, .journal = true, .log_off = off + i };
			rfs_status st = classify(d, &sb, b, err);
			if (st)
				return st;
		}
	}
	return RFS_OK;
}

/* Walks the log like the kernel's scan (a valid transaction is skipped
 * whole) and records, for each logged block, its transaction and home. */
static rfs_status map_transactions(struct salvage_deleted *d, struct rfs_error *err)
{
	uint32_t bs = d->bs;
	uint8_t *desc = malloc(bs), *commit = malloc(bs);
	if (!desc || !commit) {
		free(desc);
		free(commit);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal buffers");
	}
	uint32_t tmax = d->disk_fs->sb.j_trans_max ? d->disk_fs->sb.j_trans_max : 1024;
	for (uint64_t off = 0; off < d->jsize;) {
		struct sdel_jslot *js = &d->jmap[off];
		uint32_t len = js->desc_len;
		bool ok = js->is_desc && len > 0 && len <= tmax && (uint64_t)len + 2 <= d->jsize;
		struct rfs_error e;
		rfs_error_clear(&e);
		ok = ok && !rfs_dev_read_block(d->disk_fs->dev, log_block(d, off), desc, &e) &&
		     !rfs_dev_read_block(d->disk_fs->dev, log_block(d, off + len + 1), commit, &e) &&
		     le32_at(commit, JC_TRANS_ID) == js->desc_trans && le32_at(commit, JC_LEN) == len;
		if (!ok) {
			off++;
			continue;
		}
		d->t.journal_transactions++;
		for (uint32_t i = 0; i < len; i++) {
			uint32_t home;
			if (!rfs_journal_real_block(desc, commit, bs, i, &home))
				break;
			struct sdel_jslot *s = &d->jmap[(off + 1 + i) % d->jsize];
			if (!s->mapped || js->desc_trans > s->trans) {
				s->mapped = true;
				s->trans = js->desc_trans;
				s->home = home;
			}
		}
		off += (uint64_t)len + 2;
	}
	free(desc);
	free(commit);
	return RFS_OK;
}

static int cmp_jcopy(const void *a, const void *b)
{
	const struct salvage_jcopy *x = a, *y = b;
	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->trans_id < y->trans_id ? -1 : x->trans_id > y->trans_id;
}

static rfs_status scan_journal(struct salvage_deleted *d, struct rfs_error *err)
{
	const struct rfs_super *sb = &d->disk_fs->sb;
	if (sb->j_dev != 0 || sb->j_size < 2 || sb->j_first == 0 ||
	    (uint64_t)sb->j_first + sb->j_size > d->nblocks)
		return RFS_OK;   /* no usable journal area: nothing stale there */
	d->jsize = sb->j_size;
	d->jmap = calloc(d->jsize, sizeof(*d->jmap));
	uint8_t *buf = malloc((size_t)JOURNAL_RUN * d->bs);
	if (!d->jmap || !buf) {
		free(buf);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal map");
	}
	rfs_status st = read_log(d, buf, err);
	free(buf);
	if (!st)
		st = map_transactions(d, err);
	if (st)
		return st;
	/* the copies learn what they are versions of */
	for (size_t i = 0; i < d->ncopies; i++) {
		struct salvage_copy *c = &d->copies[i];
		const struct sdel_jslot *s = &d->jmap[c->block - sb->j_first];
		if (s->mapped) {
			c->home = s->home;
			c->trans_id = s->trans;
			c->have_trans = true;
		}
	}
	for (size_t i = 0; i < d->njleaves; i++) {
		const struct sdel_jslot *s = &d->jmap[d->jleaves[i].log_off];
		if (!s->mapped)
			continue;
		struct salvage_jcopy jc = { .home = s->home, .checksum = d->jleaves[i].checksum,
					    .trans_id = s->trans };
		if (!PUSH(d, jcopies, njcopies, jcopies_cap, jc))
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "journal copies");
	}
	if (d->njcopies)
		qsort(d->jcopies, d->njcopies, sizeof(*d->jcopies), cmp_jcopy);
	return RFS_OK;
}

/* ------------------------------------------------------------------------- */
/* 3. The free blocks. */

static bool in_scan_set(const void *ctx, uint64_t blk)
{
	const struct salvage_deleted *d = ctx;
	if (rfs_bitmap_test(&d->in_use, blk) || rfs_bitmap_test(&d->marked_used, blk) ||
	    rfs_super_block_is_metadata(&d->disk_fs->sb, blk))
		return false;
	if (d->excluded && rfs_bitmap_test(d->excluded, blk))
		return false;
	return !d->index_covers || rfs_bitmap_test(&d->index_leaf, blk);
}

static void index_leaf_cb(void *ctx, uint64_t block)
{
	struct salvage_deleted *d = ctx;
	rfs_bitmap_set(&d->index_leaf, block);
}

static rfs_status scan_free(struct salvage_deleted *d, struct rfs_error *err)
{
	if (d->index) {
		bool covers = false;
		rfs_status st = rfs_bitmap_init(&d->index_leaf, d->nblocks, err);
		if (!st)
			st = rfs_index_scanned_leaves(d->index, &covers, index_leaf_cb, d, err);
		if (st)
			return st;
		d->index_covers = covers;
		if (covers) {
			d->t.from_index = true;
			for (uint64_t b = 0; b < d->nblocks; b++)
				if (!rfs_bitmap_test(&d->in_use, b) && !rfs_bitmap_test(&d->marked_used, b) &&
				    !rfs_super_block_is_metadata(&d->disk_fs->sb, b) &&
				    !(d->excluded && rfs_bitmap_test(d->excluded, b)) &&
				    !rfs_bitmap_test(&d->index_leaf, b))
					d->t.blocks_skipped_by_index++;
		}
	}
	if (d->progress)
		rfs_progress_phase(d->progress, "deleted: reading free blocks", "blocks", d->nblocks);
	struct readahead *ra = NULL;
	struct ra_config cfg = { .bs = d->bs, .next = 0, .end = d->nblocks, .in_set = in_scan_set,
				 .set_ctx = d };
	rfs_status st = ra_start(d->disk_fs->dev, &cfg, &ra, err);
	while (!st) {
		struct ra_run *r;
		if ((st = ra_next(ra, &r, err)) || !r)
			break;
		for (uint32_t i = 0; !st && i < r->n; i++) {
			if (r->failed[i]) {
				d->t.unreadable++;
				continue;
			}
			d->t.blocks_read++;
			struct sdel_scan_block sb = { .block = r->first + i };
			st = classify(d, &sb, r->data + (size_t)i * d->bs, err);
		}
		if (d->progress)
			rfs_progress_update(d->progress, r->first + r->n);
	}
	ra_stop(ra);
	if (d->progress)
		rfs_progress_done(d->progress);
	return st;
}

/* ------------------------------------------------------------------------- */
/* 5. Free leaves that are a deleted file's data. */

struct leaf_claim {
	uint64_t block;
	uint64_t gen;
};

static int cmp_leaf_claim(const void *a, const void *b)
{
	const struct leaf_claim *x = a, *y = b;
	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* One round: a free leaf claimed as data by a stale pointer (of a copy not
 * taken for data itself) is data unless it is newer than every claim. */
static rfs_status claim_round(struct salvage_deleted *d, struct rfs_error *err)
{
	struct leaf_claim *cl = NULL;
	size_t n = 0, cap = 0;
	for (size_t r = 0; r < d->nruns; r++) {
		const struct sdel_run *run = &d->runs[r];
		const struct salvage_copy *c = &d->copies[d->items[run->item].copy];
		if (c->as_data)
			continue;
		for (uint64_t b = run->first; b < (uint64_t)run->first + run->count; b++) {
			if (!rfs_bitmap_test(&d->stale, b))
				continue;
			if (!sdel_grow((void **)&cl, &cap, n + 1, sizeof(*cl))) {
				free(cl);
				return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "leaf claims");
			}
			cl[n++] = (struct leaf_claim){ b, salvage_copy_generation(c) };
		}
	}
	if (n)
		qsort(cl, n, sizeof(*cl), cmp_leaf_claim);
	bool *as_data = calloc(d->nleaves ? d->nleaves : 1, sizeof(*as_data));
	if (!as_data) {
		free(cl);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "leaf claims");
	}
	/* both lists are in block order (the scan went up the device) */
	size_t j = 0;
	for (size_t i = 0; i < d->nleaves; i++) {
		struct sdel_leaf *l = &d->leaves[i];
		while (j < n && cl[j].block < l->block)
			j++;
		bool claimed = false;
		uint64_t newest = 0;
		for (size_t k = j; k < n && cl[k].block == l->block; k++) {
			claimed = true;
			newest = cl[k].gen;   /* sorted: the last is the newest */
		}
		as_data[i] = claimed && !(l->gen > newest);
	}
	for (size_t i = 0; i < d->nleaves; i++) {
		d->leaves[i].as_data = as_data[i];
		if (d->leaves[i].copy != UINT32_MAX)
			d->copies[d->leaves[i].copy].as_data = as_data[i];
	}
	free(as_data);
	free(cl);
	return RFS_OK;
}

/* ------------------------------------------------------------------------- */
/* 6. Choosing versions and names. */

static void rank_of(const struct salvage_deleted *d, const struct sdel_item *it, uint32_t sd_copy,
		    struct salvage_rank *r)
{
	const struct salvage_copy *c = &d->copies[it->copy];
	*r = (struct salvage_rank){ .gen = salvage_copy_generation(c), .journal = c->journal,
				    .block = c->block, .with_sd = it->copy == sd_copy };
	if (it->sd != UINT32_MAX) {
		r->ctime = d->sds[it->sd].ctime;
		r->mtime = d->sds[it->sd].mtime;
	}
}

/* qsort has no context argument: the one sort running points here. */
static const struct salvage_deleted *sort_ctx;

static int cmp_item_key(const void *a, const void *b)
{
	const struct sdel_item *x = &sort_ctx->items[*(const uint32_t *)a];
	const struct sdel_item *y = &sort_ctx->items[*(const uint32_t *)b];
	if (x->dir_id != y->dir_id)
		return x->dir_id < y->dir_id ? -1 : 1;
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint32_t plan_sd_copy;   /* with sort_ctx: the chosen stat data's copy */

static int cmp_body_rank(const void *a, const void *b)
{
	const struct sdel_item *x = &sort_ctx->items[*(const uint32_t *)a];
	const struct sdel_item *y = &sort_ctx->items[*(const uint32_t *)b];
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	struct salvage_rank rx, ry;
	rank_of(sort_ctx, x, plan_sd_copy, &rx);
	rank_of(sort_ctx, y, plan_sd_copy, &ry);
	int c = salvage_rank_cmp(&rx, &ry);
	if (c)
		return c;
	return x->type < y->type ? -1 : x->type > y->type;
}

static rfs_status choose_objects(struct salvage_deleted *d, struct rfs_error *err)
{
	uint32_t *ord = malloc((d->nitems ? d->nitems : 1) * sizeof(*ord));
	uint32_t *body = malloc((d->nitems ? d->nitems : 1) * sizeof(*body));
	if (!ord || !body) {
		free(ord);
		free(body);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "stale items");
	}
	size_t n = 0;
	for (size_t i = 0; i < d->nitems; i++)
		if (!d->copies[d->items[i].copy].as_data)
			ord[n++] = (uint32_t)i;
	sort_ctx = d;
	if (n)
		qsort(ord, n, sizeof(*ord), cmp_item_key);
	rfs_status st = RFS_OK;
	for (size_t g = 0; g < n && !st;) {
		const struct sdel_item *first = &d->items[ord[g]];
		size_t e = g;
		while (e < n && d->items[ord[e]].dir_id == first->dir_id &&
		       d->items[ord[e]].objectid == first->objectid)
			e++;
		/* the newest stat data */
		uint32_t best = UINT32_MAX;
		struct salvage_rank rb = { 0 };
		for (size_t i = g; i < e; i++) {
			const struct sdel_item *it = &d->items[ord[i]];
			if (it->type != RFS_TYPE_STAT)
				continue;
			struct salvage_rank r;
			rank_of(d, it, UINT32_MAX, &r);
			if (best == UINT32_MAX || salvage_rank_cmp(&r, &rb) < 0) {
				best = ord[i];
				rb = r;
			}
		}
		if (best == UINT32_MAX) {
			d->t.without_stat_data++;
			g = e;
			continue;
		}
		/* per item key the newest copy, then per start offset the better
		 * of a direct and an indirect item */
		size_t nb = 0;
		for (size_t i = g; i < e; i++)
			if (d->items[ord[i]].type != RFS_TYPE_STAT)
				body[nb++] = ord[i];
		plan_sd_copy = d->items[best].copy;
		if (nb)
			qsort(body, nb, sizeof(*body), cmp_body_rank);
		struct sdel_object ob = {
			.dir_id = first->dir_id, .objectid = first->objectid, .sd_item = best,
			.plan = (uint32_t)d->nplan, .name = UINT32_MAX, .gen = rb.gen,
		};
		for (size_t i = 0; i < nb; i++) {
			if (i > 0 && d->items[body[i]].offset == d->items[body[i - 1]].offset)
				continue;   /* an older copy, or the worse of two types */
			if (d->nplan >= UINT32_MAX - 1 || !PUSH(d, plan, nplan, plan_cap, body[i])) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "object plan");
				break;
			}
			ob.nplan++;
		}
		if (!st && (d->nobjects >= UINT32_MAX - 1 || !PUSH(d, objects, nobjects, objects_cap, ob)))
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted objects");
		g = e;
	}
	sort_ctx = NULL;
	free(ord);
	free(body);
	return st;
}

static int cmp_name(const void *a, const void *b)
{
	const struct salvage_deleted *d = sort_ctx;
	const struct sdel_name *x = a, *y = b;
	if (x->t_dir_id != y->t_dir_id)
		return x->t_dir_id < y->t_dir_id ? -1 : 1;
	if (x->t_objectid != y->t_objectid)
		return x->t_objectid < y->t_objectid ? -1 : 1;
	/* usable names first, then the newest */
	bool ux = !d->copies[x->copy].as_data, uy = !d->copies[y->copy].as_data;
	if (ux != uy)
		return ux ? -1 : 1;
	const struct salvage_copy *cx = &d->copies[x->copy], *cy = &d->copies[y->copy];
	struct salvage_rank rx = { .gen = salvage_copy_generation(cx), .journal = cx->journal,
				   .block = cx->block };
	struct salvage_rank ry = { .gen = salvage_copy_generation(cy), .journal = cy->journal,
				   .block = cy->block };
	int c = salvage_rank_cmp(&rx, &ry);
	if (c)
		return c;
	if (x->dir_id != y->dir_id)
		return x->dir_id < y->dir_id ? -1 : 1;
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	size_t m = x->len < y->len ? x->len : y->len;
	int k = memcmp(x->name, y->name, m);
	if (k)
		return k;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int cmp_name_text(const void *a, const void *b)
{
	const struct sdel_name *x = &sort_ctx->names[*(const uint32_t *)a];
	const struct sdel_name *y = &sort_ctx->names[*(const uint32_t *)b];
	if (x->dir_id != y->dir_id)
		return x->dir_id < y->dir_id ? -1 : 1;
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	size_t m = x->len < y->len ? x->len : y->len;
	int k = memcmp(x->name, y->name, m);
	if (k)
		return k;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	/* the same name: the better-ranked copy (lower index) first */
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Index of the object (dir_id, objectid), or UINT32_MAX. */
uint32_t sdel_find_object(const struct salvage_deleted *d, uint32_t dir_id, uint32_t objectid)
{
	size_t lo = 0, hi = d->nobjects;
	uint64_t k = key64(dir_id, objectid);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t m = key64(d->objects[mid].dir_id, d->objects[mid].objectid);
		if (m == k)
			return (uint32_t)mid;
		if (m < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

static bool same_text(const struct sdel_name *a, const struct sdel_name *b)
{
	return a->dir_id == b->dir_id && a->objectid == b->objectid && a->len == b->len &&
	       memcmp(a->name, b->name, a->len) == 0;
}

/* Per named key: the newest usable name, how many other distinct names it
 * had, and the live directories those names are under (wanted). */
static rfs_status choose_names(struct salvage_deleted *d, struct rfs_error *err)
{
	sort_ctx = d;
	if (d->nnames)
		qsort(d->names, d->nnames, sizeof(*d->names), cmp_name);
	uint32_t *tmp = malloc((d->nnames ? d->nnames : 1) * sizeof(*tmp));
	if (!tmp) {
		sort_ctx = NULL;
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "names");
	}
	rfs_status st = RFS_OK;
	for (size_t g = 0; g < d->nnames && !st;) {
		const struct sdel_name *f = &d->names[g];
		size_t e = g, usable = 0;
		while (e < d->nnames && d->names[e].t_dir_id == f->t_dir_id &&
		       d->names[e].t_objectid == f->t_objectid) {
			if (!d->copies[d->names[e].copy].as_data)
				tmp[usable++] = (uint32_t)e;   /* usable ones sort first */
			e++;
		}
		uint32_t o = sdel_find_object(d, f->t_dir_id, f->t_objectid);
		/* distinct names (the same name in several copies counts once; its
		 * best-ranked copy represents it) */
		if (usable)
			qsort(tmp, usable, sizeof(*tmp), cmp_name_text);
		for (size_t i = 0; i < usable && !st; i++) {
			if (i > 0 && same_text(&d->names[tmp[i - 1]], &d->names[tmp[i]]))
				continue;   /* a worse copy of the previous name */
			const struct sdel_name *nm = &d->names[tmp[i]];
			if (o != UINT32_MAX) {
				if (tmp[i] == g)
					d->objects[o].name = (uint32_t)g;
				else
					d->objects[o].other_names++;
				if (tmp[i] != g)
					continue;
			} else if (!PUSH(d, names_only, names_only_n, names_only_cap, tmp[i])) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "names");
				break;
			}
			if (u64set_add(&d->wanted, key64(nm->dir_id, nm->objectid), NULL))
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "names");
		}
		g = e;
	}
	sort_ctx = NULL;
	free(tmp);
	return st;
}

/* Old names of live objects. */

static int cmp_old_name(const void *a, const void *b)
{
	const struct salvage_deleted *d = sort_ctx;
	const struct sdel_name *x = a, *y = b;
	if (x->t_dir_id != y->t_dir_id)
		return x->t_dir_id < y->t_dir_id ? -1 : 1;
	if (x->t_objectid != y->t_objectid)
		return x->t_objectid < y->t_objectid ? -1 : 1;
	if (x->dir_id != y->dir_id)
		return x->dir_id < y->dir_id ? -1 : 1;
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	size_t m = x->len < y->len ? x->len : y->len;
	int k = memcmp(x->name, y->name, m);
	if (k)
		return k;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	/* the same name: the newest copy first */
	const struct salvage_copy *cx = &d->copies[x->copy], *cy = &d->copies[y->copy];
	struct salvage_rank rx = { .gen = salvage_copy_generation(cx), .journal = cx->journal,
				   .block = cx->block };
	struct salvage_rank ry = { .gen = salvage_copy_generation(cy), .journal = cy->journal,
				   .block = cy->block };
	return salvage_rank_cmp(&rx, &ry);
}

/* Does live directory (dir_id, objectid) hold name at hash offset off for
 * target?  One search: directory items are keyed by the offsets of their
 * first entries, the entries of one item increase. */
static rfs_status live_has_name(struct rfs_cursor *cur, const struct sdel_name *nm, bool *has,
				struct rfs_error *err)
{
	*has = false;
	struct rfs_key k = { nm->dir_id, nm->objectid, nm->off, RFS_TYPE_DIRENTRY };
	rfs_status st = rfs_cursor_seek(cur, &k, NULL, err);
	if (st || !rfs_cursor_at_item(cur))
		return st;
	struct rfs_item_head ih;
	const uint8_t *body;
	rfs_cursor_item(cur, &ih, &body);
	if (ih.key.dir_id != nm->dir_id || ih.key.objectid != nm->objectid ||
	    ih.key.type != RFS_TYPE_DIRENTRY)
		return RFS_OK;
	for (int e = 0; e < ih.free_or_count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(body, ih.len, e, &de);
		if (de.offset == nm->off && de.name_len == nm->len &&
		    memcmp(de.name, nm->name, nm->len) == 0 && de.dir_id == nm->t_dir_id &&
		    de.objectid == nm->t_objectid)
			*has = true;
	}
	return RFS_OK;
}

/* Keeps, once each, the stale names of live objects that their (live)
 * directory no longer has, or whose directory is gone: a rename's old name,
 * a removed hard link.  A failed lookup keeps the name (said in the note). */
static rfs_status choose_old_names(struct salvage_deleted *d, struct rfs_error *err)
{
	sort_ctx = d;
	if (d->nold_names)
		qsort(d->old_names, d->nold_names, sizeof(*d->old_names), cmp_old_name);
	sort_ctx = NULL;
	size_t n = d->nold_names;
	bool *dup = calloc(n ? n : 1, sizeof(*dup));
	if (!dup)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "old names");
	for (size_t i = 1; i < n; i++) {
		const struct sdel_name *a = &d->old_names[i - 1], *b = &d->old_names[i];
		dup[i] = a->t_dir_id == b->t_dir_id && a->t_objectid == b->t_objectid &&
			 a->dir_id == b->dir_id && a->objectid == b->objectid && a->len == b->len &&
			 memcmp(a->name, b->name, a->len) == 0;
	}
	struct rfs_cursor cur;
	rfs_status st = rfs_cursor_init(d->live_fs, &cur, err);
	size_t kept = 0;
	bool keep = false;           /* the verdict on the name (and its copies) */
	for (size_t i = 0; i < n; i++) {
		struct sdel_name *nm = &d->old_names[i];
		if (!st && !dup[i]) {
			/* the first copy is the newest: it decides */
			bool current = false;
			if (u64set_has(&d->live, key64(nm->dir_id, nm->objectid))) {
				struct rfs_error lerr;
				rfs_error_clear(&lerr);
				if (live_has_name(&cur, nm, &current, &lerr) == RFS_ERR_NOMEM)
					st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "old names");
			}
			keep = !current && !d->copies[nm->copy].as_data;
			if (!st && keep && u64set_add(&d->wanted, key64(nm->dir_id, nm->objectid), NULL))
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "old names");
			if (!st && keep) {
				d->old_names[kept++] = *nm;
				continue;
			}
		}
		free(nm->name);
	}
	d->nold_names = kept;
	free(dup);
	rfs_cursor_free(&cur);
	return st;
}

/* ------------------------------------------------------------------------- */
/* Data blocks claimed by several deleted objects. */

static int cmp_multi(const void *a, const void *b)
{
	const struct sdel_multi *x = a, *y = b;
	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	return x->gen > y->gen ? -1 : x->gen < y->gen;
}

/* The runs of item (contiguous in runs: they were pushed with it). */
void sdel_item_runs(const struct salvage_deleted *d, uint32_t item, size_t *first, size_t *n)
{
	size_t lo = 0, hi = d->nruns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->runs[mid].item < item)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t e = lo;
	while (e < d->nruns && d->runs[e].item == item)
		e++;
	*first = lo;
	*n = e - lo;
}

static rfs_status multi_claims(struct salvage_deleted *d, struct rfs_error *err)
{
	rfs_status st = rfs_bitmap_init(&d->claim1, d->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&d->claim2, d->nblocks, err);
	if (st)
		return st;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t o = 0; o < d->nobjects; o++) {
			const struct sdel_object *ob = &d->objects[o];
			for (uint32_t p = 0; p < ob->nplan; p++) {
				uint32_t item = d->plan[ob->plan + p];
				if (d->items[item].type != RFS_TYPE_INDIRECT)
					continue;
				uint64_t gen = salvage_copy_generation(&d->copies[d->items[item].copy]);
				size_t r0, nr;
				sdel_item_runs(d, item, &r0, &nr);
				for (size_t r = r0; r < r0 + nr; r++) {
					const struct sdel_run *run = &d->runs[r];
					for (uint64_t b = run->first; b < (uint64_t)run->first + run->count; b++) {
						if (pass == 0) {
							if (rfs_bitmap_test(&d->claim1, b))
								rfs_bitmap_set(&d->claim2, b);
							else
								rfs_bitmap_set(&d->claim1, b);
						} else if (rfs_bitmap_test(&d->claim2, b)) {
							struct sdel_multi m = { .block = b, .gen = gen,
										.object = (uint32_t)o };
							if (!PUSH(d, multi, nmulti, multi_cap, m))
								return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK,
										     "claims");
						}
					}
				}
			}
		}
	}
	if (d->nmulti)
		qsort(d->multi, d->nmulti, sizeof(*d->multi), cmp_multi);
	return RFS_OK;
}

void sdel_block_facts(const struct salvage_deleted *d, uint64_t blk, struct salvage_block_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->claimants = 1;
	f->outside = blk >= d->nblocks || blk >= d->disk_fs->sb.block_count ||
		     rfs_super_block_is_metadata(&d->disk_fs->sb, blk);
	if (f->outside)
		return;
	f->in_use = rfs_bitmap_test(&d->in_use, blk);
	f->marked_used = !f->in_use && rfs_bitmap_test(&d->marked_used, blk);
	if (rfs_bitmap_test(&d->stale, blk)) {
		size_t lo = 0, hi = d->nleaves;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (d->leaves[mid].block < blk)
				lo = mid + 1;
			else
				hi = mid;
		}
		f->stale_leaf = lo < d->nleaves && d->leaves[lo].block == blk && !d->leaves[lo].as_data;
	}
	if (!rfs_bitmap_test(&d->claim2, blk))
		return;
	size_t lo = 0, hi = d->nmulti;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->multi[mid].block < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	f->claimants = 0;
	for (size_t i = lo; i < d->nmulti && d->multi[i].block == blk; i++) {
		if (f->claimants == 0)
			f->newest_gen = d->multi[i].gen;   /* sorted newest first */
		f->claimants++;
		if (d->multi[i].gen == f->newest_gen)
			f->newest_count++;
	}
}

/* ------------------------------------------------------------------------- */

/* dst |= src over the blocks both cover. */
rfs_status salvage_deleted_scan(const struct salvage_deleted_options *o,
				struct salvage_deleted **out, struct rfs_error *err)
{
	*out = NULL;
	struct salvage_deleted *d = calloc(1, sizeof(*d));
	if (!d)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted objects");
	d->live_fs = o->live_fs;
	d->disk_fs = o->disk_fs;
	d->nodes_on_disk = o->live_nodes_on_disk;
	d->excluded = o->excluded;
	d->index = o->index;
	d->progress = o->progress;
	d->bs = o->disk_fs->bs;
	d->nblocks = o->disk_fs->sb.block_count;
	if (rfs_dev_block_count(o->disk_fs->dev) < d->nblocks)
		d->nblocks = rfs_dev_block_count(o->disk_fs->dev);
	rfs_status st = rfs_bitmap_init(&d->in_use, d->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&d->stale, d->nblocks, err);
	if (!st)
		st = rfs_bitmap_init(&d->marked_used, d->nblocks, err);
	if (!st && o->used) {
		rfs_bitmap_or(&d->marked_used, o->used);
	} else if (!st) {
		/* an unreadable bitmap block marks its range used: never scanned */
		st = rfs_bitmap_load(o->disk_fs, &d->marked_used, NULL, NULL, NULL, err);
	}
	/* The bitmap of a sound tree says what is in use; that of a damaged
	 * one also marks the blocks of objects the damage took (marked_used
	 * then only keeps them out of the scan and flags their reads). */
	if (!st && d->nodes_on_disk)
		rfs_bitmap_or(&d->in_use, &d->marked_used);
	for (int i = 0; !st && i < 2; i++)
		if (o->in_use[i])
			rfs_bitmap_or(&d->in_use, o->in_use[i]);
	if (!st) {
		if (d->progress)
			rfs_progress_phase(d->progress, "deleted: walking the live tree", "", 0);
		st = live_walk(d, err);
		if (d->progress)
			rfs_progress_done(d->progress);
	}
	if (!st && !d->t.live_incomplete) {
		st = scan_journal(d, err);
		if (!st)
			st = scan_free(d, err);
		/* two rounds (contract 5) */
		if (!st)
			st = claim_round(d, err);
		if (!st)
			st = claim_round(d, err);
		for (size_t i = 0; !st && i < d->nleaves; i++)
			d->t.leaves_as_data += d->leaves[i].as_data;
		if (!st)
			st = choose_objects(d, err);
		if (!st)
			st = choose_names(d, err);
		if (!st)
			st = choose_old_names(d, err);
		if (!st)
			st = multi_claims(d, err);
	}
	if (st) {
		salvage_deleted_free(d);
		return st;
	}
	*out = d;
	return RFS_OK;
}

rfs_status salvage_deleted_dir_entered(void *ctx, uint32_t dir_id, uint32_t objectid,
				       const struct strbuf *ipath, const struct strbuf *opath)
{
	struct salvage_deleted *d = ctx;
	uint64_t k = key64(dir_id, objectid);
	bool added;
	if (!u64set_has(&d->wanted, k) || u64set_add(&d->placed, k, &added) || !added)
		return RFS_OK;   /* not wanted, or placed at its first path */
	struct sdel_dirpath dp = { .key = k, .ipath_len = ipath->len };
	dp.ipath = malloc(ipath->len ? ipath->len : 1);
	dp.opath = strdup(sb_str(opath));
	if (!dp.ipath || !dp.opath) {
		free(dp.ipath);
		free(dp.opath);
		return RFS_ERR_NOMEM;
	}
	if (ipath->len)
		memcpy(dp.ipath, ipath->buf, ipath->len);
	if (!PUSH(d, dirpaths, ndirpaths, dirpaths_cap, dp)) {
		free(dp.ipath);
		free(dp.opath);
		return RFS_ERR_NOMEM;
	}
	return RFS_OK;
}

const struct salvage_deleted_totals *salvage_deleted_get_totals(const struct salvage_deleted *d)
{
	return &d->t;
}

void salvage_deleted_free(struct salvage_deleted *d)
{
	if (!d)
		return;
	u64set_free(&d->live);
	u64set_free(&d->wanted);
	u64set_free(&d->placed);
	rfs_bitmap_free(&d->in_use);
	rfs_bitmap_free(&d->marked_used);
	rfs_bitmap_free(&d->stale);
	rfs_bitmap_free(&d->index_leaf);
	rfs_bitmap_free(&d->claim1);
	rfs_bitmap_free(&d->claim2);
	for (size_t i = 0; i < d->nnames; i++)
		free(d->names[i].name);
	for (size_t i = 0; i < d->nold_names; i++)
		free(d->old_names[i].name);
	free(d->old_names);
	for (size_t i = 0; i < d->nobjects; i++) {
		free(d->objects[i].opath);
		free(d->objects[i].ipath);
	}
	for (size_t i = 0; i < d->ndirpaths; i++) {
		free(d->dirpaths[i].opath);
		free(d->dirpaths[i].ipath);
	}
	free(d->copies);
	free(d->items);
	free(d->sds);
	free(d->runs);
	free(d->names);
	free(d->leaves);
	free(d->jleaves);
	free(d->jcopies);
	free(d->jmap);
	free(d->objects);
	free(d->plan);
	free(d->names_only);
	free(d->multi);
	free(d->dirpaths);
	free(d);
}

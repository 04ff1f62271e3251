/*
 * tree.c - key search and iteration (see include/rfs/tree.h for the contract).
 *
 * Descending from a node of level L, the child must have level L - 1; the
 * root's level is taken from the root block itself (checked against 1..5).
 * Therefore a descent reads at most 5 nodes and iteration terminates even on a
 * tree whose pointers form cycles.
 */
#include "rfs/tree.h"

#include <stdlib.h>
#include <string.h>

rfs_status rfs_cursor_init(struct rfs_fs *fs, struct rfs_cursor *cur, struct rfs_error *err)
{
	memset(cur, 0, sizeof(*cur));
	cur->fs = fs;
	for (int i = 0; i <= RFS_MAX_HEIGHT; i++) {
		cur->lv[i].buf = malloc(fs->bs);
		if (!cur->lv[i].buf) {
			rfs_cursor_free(cur);
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree cursor");
		}
	}
	return RFS_OK;
}

void rfs_cursor_free(struct rfs_cursor *cur)
{
	for (int i = 0; i <= RFS_MAX_HEIGHT; i++) {
		free(cur->lv[i].buf);
		cur->lv[i].buf = NULL;
	}
}

struct first_fault {
	struct rfs_fault f;
	bool set;
};

static void keep_first_rebuild_fault(void *c, const struct rfs_fault *f)
{
	struct first_fault *ff = c;
	const struct rfs_problem_def *d = rfs_problem_def(f->code);
	if (!ff->set && d && d->severity >= RFS_SEV_REBUILD) {
		ff->f = *f;
		ff->set = true;
	}
}

static int node_level(const struct rfs_cursor *cur, int d)
{
	return cur->lv[d].buf[0] | cur->lv[d].buf[1] << 8;
}

/* Reads block blk into level d of the path and checks it is a valid node of
 * the given level (0 = take the level from the block, for the root). */
static rfs_status load_node(struct rfs_cursor *cur, int d, uint64_t blk, int level,
			    struct rfs_error *err)
{
	struct rfs_fs *fs = cur->fs;
	struct rfs_cursor_level *lv = &cur->lv[d];
	uint64_t gen = rfs_dev_generation(fs->dev);
	if (lv->valid_gen == gen + 1 && lv->block == blk && level != RFS_LEVEL_LEAF) {
		int held = node_level(cur, d);
		if (level == 0 ? held > RFS_LEVEL_LEAF : held == level) {
			lv->pos = 0;
			return RFS_OK;
		}
	}
	lv->valid_gen = 0;   /* buf is about to change */
	if (blk >= fs->sb.block_count) {
		cur->last_problem = PR_NODE_OUT_OF_RANGE;
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "tree pointer beyond the filesystem end (%u blocks)",
				     fs->sb.block_count);
	}
	if (rfs_super_block_is_metadata(&fs->sb, blk)) {
		cur->last_problem = PR_NODE_IN_METADATA;
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "tree pointer into the superblock, bitmap or journal area");
	}
	rfs_status st = rfs_dev_read_block(fs->dev, blk, lv->buf, err);
	if (st) {
		cur->last_problem = PR_NODE_READ_ERROR;
		return st;
	}
	struct rfs_block_head bh;
	rfs_block_head_decode(lv->buf, &bh);
	if (level == 0) {
		if (bh.level < RFS_LEVEL_LEAF || bh.level > RFS_MAX_HEIGHT) {
			cur->last_problem = PR_NODE_BAD_LEVEL;
			return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
					     "root node has level %u", bh.level);
		}
		level = bh.level;
	}
	if (bh.level != level) {
		cur->last_problem = PR_NODE_BAD_LEVEL;
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "node has level %u, %d expected", bh.level, level);
	}
	struct first_fault ff = { .set = false };
	st = level == RFS_LEVEL_LEAF
		? rfs_leaf_validate(lv->buf, fs->bs, keep_first_rebuild_fault, &ff)
		: rfs_internal_validate(lv->buf, fs->bs, keep_first_rebuild_fault, &ff);
	if (st) {
		const struct rfs_problem_def *def = rfs_problem_def(ff.f.code);
		cur->last_problem = ff.f.code;
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "invalid %s: %s",
				     level == RFS_LEVEL_LEAF ? "leaf" : "internal node",
				     def ? def->name : "unknown problem");
	}
	lv->block = blk;
	lv->nr = bh.nr_items;
	lv->pos = 0;
	if (level > RFS_LEVEL_LEAF)
		lv->valid_gen = gen + 1;
	return RFS_OK;
}

/* Child index in internal node d for key: the number of keys <= key. */
static int child_for(const struct rfs_cursor *cur, int d, const struct rfs_key *key)
{
	int lo = 0, hi = cur->lv[d].nr;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct rfs_key k;
		rfs_internal_key(cur->lv[d].buf, mid, &k);
		if (rfs_key_cmp(&k, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Descends from level d (already loaded) to a leaf, always taking the
 * leftmost child, and positions at the first item. */
static rfs_status descend_leftmost(struct rfs_cursor *cur, int d, struct rfs_error *err)
{
	while (node_level(cur, d) > RFS_LEVEL_LEAF) {
		struct rfs_disk_child dc;
		rfs_internal_child(cur->lv[d].buf, cur->lv[d].nr, cur->lv[d].pos, &dc);
		rfs_status st = load_node(cur, d + 1, dc.block, node_level(cur, d) - 1, err);
		if (st)
			return st;
		d++;
	}
	cur->height = d + 1;
	cur->lv[d].pos = 0;
	return RFS_OK;
}

rfs_status rfs_cursor_seek(struct rfs_cursor *cur, const struct rfs_key *key, bool *exact,
			   struct rfs_error *err)
{
	if (exact)
		*exact = false;
	cur->at_end = false;
	cur->height = 0;
	rfs_status st = load_node(cur, 0, cur->fs->sb.root_block, 0, err);
	if (st)
		return st;
	int d = 0;
	while (node_level(cur, d) > RFS_LEVEL_LEAF) {
		int c = child_for(cur, d, key);
		cur->lv[d].pos = c;
		struct rfs_disk_child dc;
		rfs_internal_child(cur->lv[d].buf, cur->lv[d].nr, c, &dc);
		st = load_node(cur, d + 1, dc.block, node_level(cur, d) - 1, err);
		if (st)
			return st;
		d++;
	}
	cur->height = d + 1;
	/* last item with key <= target */
	struct rfs_cursor_level *lf = &cur->lv[d];
	int lo = 0, hi = lf->nr;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct rfs_item_head ih;
		rfs_leaf_item_head(lf->buf, mid, &ih);
		if (rfs_key_cmp(&ih.key, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	lf->pos = lo - 1;
	if (lf->pos >= 0 && exact) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(lf->buf, lf->pos, &ih);
		*exact = rfs_key_cmp(&ih.key, key) == 0;
	}
	return RFS_OK;
}

rfs_status rfs_cursor_next(struct rfs_cursor *cur, struct rfs_error *err)
{
	if (cur->at_end || cur->height == 0)
		return RFS_OK;
	int d = cur->height - 1;
	if (cur->lv[d].pos + 1 < cur->lv[d].nr) {
		cur->lv[d].pos++;
		return RFS_OK;
	}
	/* Keys must keep increasing from leaf to leaf; otherwise a damaged tree
	 * whose nodes share children could make iteration revisit items forever. */
	struct rfs_item_head last, first;
	uint64_t leaf = cur->lv[d].block;
	rfs_leaf_item_head(cur->lv[d].buf, cur->lv[d].nr - 1, &last);
	/* Climb to the first ancestor with a child to the right. */
	while (--d >= 0) {
		if (cur->lv[d].pos < cur->lv[d].nr) {
			cur->lv[d].pos++;
			rfs_status st = descend_leftmost(cur, d, err);
			if (st)
				return st;
			const struct rfs_cursor_level *lf = &cur->lv[cur->height - 1];
			rfs_leaf_item_head(lf->buf, 0, &first);
			if (rfs_key_cmp(&last.key, &first.key) >= 0) {
				cur->last_problem = PR_LEAF_KEYS_UNSORTED;
				return rfs_error_set(err, RFS_ERR_CORRUPT, lf->block,
						     "first key of this leaf is not above the last key of leaf %llu",
						     (unsigned long long)leaf);
			}
			return RFS_OK;
		}
	}
	cur->at_end = true;
	return RFS_OK;
}

bool rfs_cursor_at_item(const struct rfs_cursor *cur)
{
	if (cur->at_end || cur->height == 0)
		return false;
	const struct rfs_cursor_level *lf = &cur->lv[cur->height - 1];
	return lf->pos >= 0 && lf->pos < lf->nr;
}

void rfs_cursor_item(const struct rfs_cursor *cur, struct rfs_item_head *ih,
		     const uint8_t **body)
{
	const struct rfs_cursor_level *lf = &cur->lv[cur->height - 1];
	rfs_leaf_item_head(lf->buf, lf->pos, ih);
	if (body)
		*body = lf->buf + ih->location;
}

uint64_t rfs_cursor_leaf_block(const struct rfs_cursor *cur)
{
	return cur->height ? cur->lv[cur->height - 1].block : 0;
}

/* Positions cur at the first item of object (dir_id, objectid) whose key is >=
 * start; *found is false when the object has no such item. */
rfs_status rfs_cursor_seek_object(struct rfs_cursor *cur, const struct rfs_key *start,
				   bool *found, struct rfs_error *err)
{
	*found = false;
	rfs_status st = rfs_cursor_seek(cur, start, NULL, err);
	if (st)
		return st;
	for (;;) {
		if (!rfs_cursor_at_item(cur)) {
			if (cur->at_end)
				return RFS_OK;
		} else {
			struct rfs_item_head ih;
			rfs_cursor_item(cur, &ih, NULL);
			int c = rfs_key_cmp_short(&ih.key, start);
			if (c > 0)
				return RFS_OK;
			if (c == 0 && rfs_key_cmp(&ih.key, start) >= 0) {
				*found = true;
				return RFS_OK;
			}
		}
		st = rfs_cursor_next(cur, err);
		if (st)
			return st;
	}
}


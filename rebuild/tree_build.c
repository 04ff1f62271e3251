/*
 * tree_build.c - bottom-up bulk load of the S+tree (see tree_build.h for the
 * contract and invariants).
 *
 * Pipeline of one item:
 *   tb_add_item -> the run leaf (items of one source leaf, in a leaf of their
 *   own) or the pending leaf (dense packing of everything else)
 *   -> a finished leaf: kept in place (run identical to its source) or
 *   written to an allocated block -> a child of the open level-2 node
 *   -> a full internal node is written and becomes a child one level up.
 *
 * Internal levels.  Each level keeps an open node and at most one "held" full
 * node.  When the open node is full and another child arrives, the full node
 * is held back (not written) and a new open node starts; the held node is
 * written once the new one has a second child.  So at the end a level never
 * has an open node with a single child next to a node already written: if the
 * open node has one child, the held node shares its children with it.  That
 * guarantees invariant (3), every internal node has >= 2 children.
 *
 * What the kernel accepts (fs/reiserfs/stree.c is_internal, run on every node
 * that search_by_key reads): level 2..5, nr_items <= (bs - 32) / 24, and
 * free_space exactly bs - 24 - 16*nr - 8*(nr+1).  There is no lower bound on
 * the key count ("for internal which is not root we might check min number of
 * keys"), so a non-root internal node with 0 keys (1 child) is readable; the
 * balancing code (fix_node.c dc_check_balance_internal) treats any node below
 * MIN_NR_KEY = MAX_NR_KEY / 2 keys as underfull and merges or refills it on the
 * next deletion below it.  rfs_internal_validate has no lower bound either.
 * We still never write such a node (invariant (3)).
 *
 * Writes are collected in a batch and written with one rfs_dev_write_batch
 * call, so that an undo-logged device syncs its undo file once per batch.
 * A block in the unflushed batch is in `used`, so it is never read back as a
 * source leaf (whose on-disk bytes would be stale).
 */
#include "tree_build.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/bitmap.h"
#include "rfs/undo.h"

enum {
	TB_BATCH_BYTES = 1 << 20,    /* default write batch: 1 MiB of blocks */
	TB_INTERNAL_LEVELS = RFS_MAX_HEIGHT - 1,  /* levels 2..5 */
};

/* A child entry of an internal node being filled. */
struct tb_child {
	uint32_t block;              /* child block */
	uint16_t size;               /* dc_size: bytes used in the child */
	uint8_t key[RFS_KEY_SIZE];   /* child's leftmost key, as stored on disk */
};

/* An internal node being filled: n children in c[0, n). */
struct tb_inode {
	unsigned n;
	struct tb_child *c;          /* max_keys + 1 entries */
};

/* One internal level (index i = disk level i + 2). */
struct tb_level {
	struct tb_inode open;        /* receives the next child */
	struct tb_inode held;        /* full, not written yet (if has_held) */
	bool has_held;
	uint64_t passed;             /* nodes of this level handed to the next */
};

/* A leaf being filled: nr items, bodies from body_start to bs. */
struct tb_leaf {
	uint8_t *blk;                /* bs bytes; zero where nothing was put */
	unsigned nr;
	uint32_t body_start;         /* bs when empty */
};

struct tree_builder {
	struct tb_options o;
	uint32_t max_keys;           /* keys per internal node */
	uint64_t dev_blocks;         /* device size in blocks */
	rfs_status status;           /* sticky: first failure */
	struct rfs_error err;        /* its details */
	bool finished;               /* tb_finish was called */

	bool have_last;
	struct rfs_key last;         /* key of the last item added */

	struct tb_leaf pending;      /* dense leaf of items that are not kept */
	struct tb_leaf run;          /* items of the current run, alone */
	uint64_t run_src;            /* source of the current run; RFS_NO_BLOCK: none */
	bool run_spilled;            /* run outgrew a leaf: its items go to pending */
	uint8_t *src_buf;            /* a source leaf as read from the device */
	uint8_t *node_buf;           /* an internal node being encoded */

	struct tb_level lv[TB_INTERNAL_LEVELS];
	unsigned nlevels;            /* internal levels in use */
	struct rfs_bitmap used;      /* sparse: blocks kept or allocated by this builder */

	unsigned batch_cap, batch_n; /* write batch */
	uint8_t *batch_buf;          /* batch_cap blocks */
	uint64_t *batch_blk;
	unsigned *batch_level;
	const void **batch_ptr;

	struct tb_stats st;
};

/* Records the first failure; every later call returns it (invariant (6)). */
static rfs_status fail(struct tree_builder *tb, rfs_status s, const struct rfs_error *e)
{
	if (tb->status == RFS_OK) {
		tb->status = s;
		if (e && e->status == s)
			tb->err = *e;
		else
			rfs_error_set(&tb->err, s, RFS_NO_BLOCK, "%s", rfs_strerror(s));
	}
	return tb->status;
}

static rfs_status sticky(const struct tree_builder *tb, struct rfs_error *err)
{
	if (err && err->status == RFS_OK)
		*err = tb->err;
	return tb->status;
}

/* ------------------------------------------------------------------ leaves */

static void leaf_reset(struct tb_leaf *l, uint32_t bs)
{
	memset(l->blk, 0, bs);
	l->nr = 0;
	l->body_start = bs;
}

static bool leaf_fits(const struct tb_leaf *l, uint16_t len)
{
	return RFS_BLKH_SIZE + (l->nr + 1) * RFS_IH_SIZE + (uint32_t)len <= l->body_start;
}

/* Appends an item (head bytes with any location, body) that fits. */
static void leaf_append(struct tb_leaf *l, const uint8_t *ih, const uint8_t *body, uint16_t len)
{
	uint8_t *h = l->blk + RFS_BLKH_SIZE + (size_t)l->nr * RFS_IH_SIZE;
	memcpy(h, ih, RFS_IH_SIZE);
	l->body_start -= len;
	le16_put(h, IH_LOCATION, (uint16_t)l->body_start);
	memcpy(l->blk + l->body_start, body, len);
	l->nr++;
}

static uint32_t leaf_heads_end(const struct tb_leaf *l)
{
	return RFS_BLKH_SIZE + l->nr * RFS_IH_SIZE;
}

/* Writes the block head; the leaf is then a complete block. */
static void leaf_seal(struct tb_leaf *l)
{
	struct rfs_block_head bh = { RFS_LEVEL_LEAF, (uint16_t)l->nr,
				     (uint16_t)(l->body_start - leaf_heads_end(l)) };
	rfs_block_head_encode(&bh, l->blk);
}

/* The child entry for a sealed leaf at blk. */
static struct tb_child leaf_child(const struct tb_leaf *l, uint32_t bs, uint64_t blk)
{
	struct tb_child c;
	c.block = (uint32_t)blk;
	c.size = (uint16_t)(leaf_heads_end(l) + (bs - l->body_start) - RFS_BLKH_SIZE);
	memcpy(c.key, l->blk + RFS_BLKH_SIZE + IH_KEY, RFS_KEY_SIZE);
	return c;
}

/* ------------------------------------------------------------------ writes */

static rfs_status flush(struct tree_builder *tb)
{
	if (tb->status)
		return tb->status;
	if (tb->batch_n == 0)
		return RFS_OK;
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_status s = rfs_dev_write_batch(tb->o.dev, tb->batch_n, tb->batch_blk, tb->batch_ptr, &e);
	if (s)
		return fail(tb, s, &e);
	for (unsigned i = 0; i < tb->batch_n; i++) {
		if (tb->batch_level[i] == RFS_LEVEL_LEAF)
			tb->st.leaves_new++;
		else
			tb->st.internal_nodes++;
		tb->st.blocks_written++;
		if (tb->o.placed)
			tb->o.placed(tb->o.ctx, tb->batch_blk[i], tb->batch_level[i], false, true);
	}
	tb->batch_n = 0;
	return RFS_OK;
}

/* A block from the allocator for a new node of the given level, into the
 * write batch with a copy of buf.  *blk (OUT) is the block. */
static rfs_status node_write(struct tree_builder *tb, const uint8_t *buf, unsigned level,
			     uint64_t *blk)
{
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_status s = tb->o.alloc(tb->o.ctx, blk, &e);
	if (s)
		return fail(tb, s, &e);
	if (*blk == 0 || *blk > UINT32_MAX || *blk >= tb->dev_blocks) {
		rfs_error_set(&e, RFS_ERR_INVALID, *blk,
			      "the allocator returned a block outside the device");
		return fail(tb, RFS_ERR_INVALID, &e);
	}
	if (rfs_bitmap_test(&tb->used, *blk)) {
		rfs_error_set(&e, RFS_ERR_INVALID, *blk,
			      "the allocator returned a block already in the new tree");
		return fail(tb, RFS_ERR_INVALID, &e);
	}
	if ((s = rfs_bitmap_add(&tb->used, *blk, &e)))
		return fail(tb, s, &e);
	unsigned i = tb->batch_n++;
	memcpy(tb->batch_buf + (size_t)i * tb->o.bs, buf, tb->o.bs);
	tb->batch_blk[i] = *blk;
	tb->batch_level[i] = level;
	if (tb->batch_n == tb->batch_cap)
		return flush(tb);
	return RFS_OK;
}

/* ---------------------------------------------------------- internal levels */

static rfs_status add_child(struct tree_builder *tb, unsigned i, const struct tb_child *c);

/* Encodes node (>= 1 child) as an internal node of level i + 2 into node_buf. */
static void inode_encode(struct tree_builder *tb, unsigned i, const struct tb_inode *node)
{
	uint8_t *b = tb->node_buf;
	uint32_t nk = node->n - 1;
	memset(b, 0, tb->o.bs);
	struct rfs_block_head bh = { (uint16_t)(i + 2), (uint16_t)nk,
				     (uint16_t)(tb->o.bs - RFS_BLKH_SIZE - nk * RFS_KEY_SIZE -
						node->n * RFS_DC_SIZE) };
	rfs_block_head_encode(&bh, b);
	for (uint32_t k = 0; k < nk; k++)
		memcpy(b + RFS_BLKH_SIZE + k * RFS_KEY_SIZE, node->c[k + 1].key, RFS_KEY_SIZE);
	uint8_t *dc = b + RFS_BLKH_SIZE + nk * RFS_KEY_SIZE;
	for (uint32_t j = 0; j < node->n; j++) {
		le32_put(dc, j * RFS_DC_SIZE + DC_BLOCK, node->c[j].block);
		le16_put(dc, j * RFS_DC_SIZE + DC_SIZE, node->c[j].size);
	}
}

/* Writes node as a level i + 2 node and hands it to level i + 1. */
static rfs_status inode_write(struct tree_builder *tb, unsigned i, struct tb_inode *node)
{
	inode_encode(tb, i, node);
	uint64_t blk;
	rfs_status s = node_write(tb, tb->node_buf, i + 2, &blk);
	if (s)
		return s;
	struct tb_child up;
	up.block = (uint32_t)blk;
	up.size = (uint16_t)((node->n - 1) * RFS_KEY_SIZE + node->n * RFS_DC_SIZE);
	memcpy(up.key, node->c[0].key, RFS_KEY_SIZE);
	node->n = 0;
	tb->lv[i].passed++;
	return add_child(tb, i + 1, &up);
}

static rfs_status level_open(struct tree_builder *tb, unsigned i)
{
	struct tb_level *L = &tb->lv[i];
	size_t n = (size_t)tb->max_keys + 1;
	L->open.c = calloc(n, sizeof(*L->open.c));
	L->held.c = calloc(n, sizeof(*L->held.c));
	if (!L->open.c || !L->held.c)
		return fail(tb, RFS_ERR_NOMEM, NULL);
	tb->nlevels = i + 1;
	return RFS_OK;
}

/* Adds a child to the open node of internal level i (disk level i + 2). */
static rfs_status add_child(struct tree_builder *tb, unsigned i, const struct tb_child *c)
{
	if (tb->status)
		return tb->status;
	if (i >= tb->nlevels) {
		if (i >= TB_INTERNAL_LEVELS) {
			struct rfs_error e;
			rfs_error_clear(&e);
			rfs_error_set(&e, RFS_ERR_LIMIT, RFS_NO_BLOCK,
				      "the tree would need more than %d levels", RFS_MAX_HEIGHT);
			return fail(tb, RFS_ERR_LIMIT, &e);
		}
		rfs_status s = level_open(tb, i);
		if (s)
			return s;
	}
	struct tb_level *L = &tb->lv[i];
	if (L->open.n == tb->max_keys + 1) {
		/* Full: hold it back until the next node has two children.  The
		 * held slot is free: it was written when the open node reached two. */
		struct tb_inode t = L->held;
		L->held = L->open;
		L->open = t;
		L->open.n = 0;
		L->has_held = true;
	}
	L->open.c[L->open.n++] = *c;
	if (L->has_held && L->open.n == 2) {
		L->has_held = false;
		return inode_write(tb, i, &L->held);
	}
	return RFS_OK;
}

/* Moves children from the end of the held (full) node to the front of the
 * open node, which has one child, so that both have at least two. */
static void level_rebalance(struct tb_level *L)
{
	unsigned total = L->held.n + L->open.n;
	unsigned want = total / 2;           /* children the open node gets */
	unsigned move = want - L->open.n;
	memmove(L->open.c + move, L->open.c, L->open.n * sizeof(*L->open.c));
	memcpy(L->open.c, L->held.c + (L->held.n - move), move * sizeof(*L->open.c));
	L->held.n -= move;
	L->open.n += move;
}

/* ----------------------------------------------------------- leaves, placed */

/* Writes the pending leaf, if it has items, and hands it to level 2. */
static rfs_status pending_emit(struct tree_builder *tb)
{
	if (tb->status)
		return tb->status;
	if (tb->pending.nr == 0)
		return RFS_OK;
	leaf_seal(&tb->pending);
	uint64_t blk;
	rfs_status s = node_write(tb, tb->pending.blk, RFS_LEVEL_LEAF, &blk);
	if (s)
		return s;
	struct tb_child c = leaf_child(&tb->pending, tb->o.bs, blk);
	leaf_reset(&tb->pending, tb->o.bs);
	tb->st.leaves++;
	return add_child(tb, 0, &c);
}

/* Bytes of the file an item covers (direct: its length; indirect: a block
 * per pointer). */
static uint64_t item_span(const struct rfs_key *k, uint16_t len, uint32_t bs)
{
	return k->type == RFS_TYPE_INDIRECT ? (uint64_t)(len / 4) * bs : len;
}

/* 1 when the item (head ih) continues the last item of leaf l exactly (same
 * object, same body type, next byte): the kernel's balancing never leaves two
 * such items side by side in one leaf and reiserfsck calls it "the wrong
 * order of items", so they are merged into one, or kept in separate leaves. */
static int mergeable_with_last(const struct tb_leaf *l, const uint8_t *ih, uint32_t bs)
{
	if (l->nr == 0)
		return 0;
	const uint8_t *lh = l->blk + RFS_BLKH_SIZE + (size_t)(l->nr - 1) * RFS_IH_SIZE;
	struct rfs_key a, b;
	rfs_key_decode(lh + IH_KEY, (enum rfs_key_format)(le16_at(lh, IH_VERSION) & 0x0FFF), &a);
	rfs_key_decode(ih + IH_KEY, (enum rfs_key_format)(le16_at(ih, IH_VERSION) & 0x0FFF), &b);
	if (a.dir_id != b.dir_id || a.objectid != b.objectid || a.type != b.type)
		return 0;
	if (a.type == RFS_TYPE_DIRENTRY)
		return 1;           /* names of one directory: one item per leaf */
	if (a.type != RFS_TYPE_DIRECT && a.type != RFS_TYPE_INDIRECT)
		return 0;
	return a.offset + item_span(&a, le16_at(lh, IH_LEN), bs) == b.offset;
}

/* Merges the directory item (ih, body, len) into the leaf's last item, which
 * holds earlier names of the same directory: the entries are re-encoded as
 * one item with every name slot kept as it was.  false when it does not fit
 * (item longer than bs - 48, or no room in the leaf) or cannot be encoded. */
static bool merge_dir_items(struct tb_leaf *l, const uint8_t *ih, const uint8_t *body, uint16_t len,
			    uint32_t bs)
{
	uint8_t *lh = l->blk + RFS_BLKH_SIZE + (size_t)(l->nr - 1) * RFS_IH_SIZE;
	uint16_t old = le16_at(lh, IH_LEN), na = le16_at(lh, IH_FREE_OR_COUNT);
	uint16_t nb = le16_at(ih, IH_FREE_OR_COUNT);
	if ((uint32_t)old + len > bs - 48 || l->body_start < leaf_heads_end(l) + len)
		return false;
	struct rfs_dirent_in *e = malloc(((size_t)na + nb) * sizeof(*e));
	uint8_t *out = malloc((size_t)old + len);
	uint8_t *src = malloc(old);
	bool ok = e && out && src;
	if (ok) {
		memcpy(src, l->blk + l->body_start, old);
		for (unsigned i = 0; i < (unsigned)na + nb; i++) {
			const uint8_t *b = i < na ? src : body;
			size_t bl = i < na ? old : len;
			struct rfs_dirent d;
			rfs_dir_entry(b, bl, (int)(i < na ? i : i - na), &d);
			e[i] = (struct rfs_dirent_in){ .offset = d.offset, .dir_id = d.dir_id,
						       .objectid = d.objectid, .state = d.state,
						       .name = d.name, .name_len = d.name_len,
						       .stored_len = d.stored_len };
		}
		size_t got;
		ok = rfs_dir_item_encode(e, (size_t)na + nb, RFS_KEY_V2, out, (size_t)old + len, &got) ==
			     RFS_OK && got == (size_t)old + len;
	}
	if (ok) {
		l->body_start -= len;
		memcpy(l->blk + l->body_start, out, (size_t)old + len);
		le16_put(lh, IH_LOCATION, (uint16_t)l->body_start);
		le16_put(lh, IH_LEN, (uint16_t)(old + len));
		le16_put(lh, IH_FREE_OR_COUNT, (uint16_t)(na + nb));
	}
	free(e);
	free(out);
	free(src);
	return ok;
}

/* Appends an item to the pending leaf, writing the leaf first if full; an
 * item that continues the leaf's last item is merged into it. */
static rfs_status pending_add(struct tree_builder *tb, const uint8_t *ih, const uint8_t *body,
			      uint16_t len)
{
	struct tb_leaf *l = &tb->pending;
	uint32_t bs = tb->o.bs;
	struct rfs_key k;
	rfs_key_decode(ih + IH_KEY, (enum rfs_key_format)(le16_at(ih, IH_VERSION) & 0x0FFF), &k);
	int merge = mergeable_with_last(l, ih, bs);
	if (merge && k.type == RFS_TYPE_DIRENTRY) {
		if (merge_dir_items(l, ih, body, len, bs)) {
			tb->st.items_merged++;
			return RFS_OK;
		}
		rfs_status s = pending_emit(tb);
		if (s)
			return s;
	} else if (merge) {
		uint8_t *lh = l->blk + RFS_BLKH_SIZE + (size_t)(l->nr - 1) * RFS_IH_SIZE;
		uint16_t old = le16_at(lh, IH_LEN);
		bool room = l->body_start >= leaf_heads_end(l) + len;
		if (room && (uint32_t)old + len <= bs - 48) {
			/* the last body is lowest in the block: it moves down by len
			 * and the new bytes follow it */
			memmove(l->blk + l->body_start - len, l->blk + l->body_start, old);
			memcpy(l->blk + l->body_start - len + old, body, len);
			l->body_start -= len;
			le16_put(lh, IH_LOCATION, (uint16_t)l->body_start);
			le16_put(lh, IH_LEN, (uint16_t)(old + len));
			/* v1 indirect: free space in the last unformatted block */
			le16_put(lh, IH_FREE_OR_COUNT, le16_at(ih, IH_FREE_OR_COUNT));
			tb->st.items_merged++;
			return RFS_OK;
		}
		rfs_status s = pending_emit(tb);   /* never side by side in one leaf */
		if (s)
			return s;
	}
	if (!leaf_fits(&tb->pending, len)) {
		rfs_status s = pending_emit(tb);
		if (s)
			return s;
	}
	leaf_append(&tb->pending, ih, body, len);
	return RFS_OK;
}

/* Moves every item of the run leaf into the pending leaf, in order. */
static rfs_status run_to_pending(struct tree_builder *tb)
{
	struct tb_leaf *r = &tb->run;
	uint32_t end = tb->o.bs;
	for (unsigned k = 0; k < r->nr; k++) {
		const uint8_t *ih = r->blk + RFS_BLKH_SIZE + (size_t)k * RFS_IH_SIZE;
		uint16_t loc = le16_at(ih, IH_LOCATION);
		rfs_status s = pending_add(tb, ih, r->blk + loc, (uint16_t)(end - loc));
		if (s)
			return s;
		end = loc;
	}
	leaf_reset(r, tb->o.bs);
	return RFS_OK;
}

/* Whether the sealed run leaf may stay at src: src is a block this builder
 * has not used, readable, and holds the same bytes (invariant (4)). */
static rfs_status run_matches_source(struct tree_builder *tb, uint64_t src, bool *same)
{
	*same = false;
	if (src == 0 || src > UINT32_MAX || src >= tb->dev_blocks || rfs_bitmap_test(&tb->used, src))
		return RFS_OK;
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_status s = rfs_dev_read_block(tb->o.dev, src, tb->src_buf, &e);
	if (s == RFS_ERR_NOMEM)
		return fail(tb, s, &e);
	if (s) {
		/* Unreadable now: the items are in hand, so the leaf is written
		 * elsewhere instead of failing the build. */
		tb->st.sources_unreadable++;
		return RFS_OK;
	}
	const struct tb_leaf *r = &tb->run;
	if (tb->o.keep_stale_free_space) {
		uint32_t he = leaf_heads_end(r);
		*same = memcmp(r->blk, tb->src_buf, he) == 0 &&
			memcmp(r->blk + r->body_start, tb->src_buf + r->body_start,
			       tb->o.bs - r->body_start) == 0;
	} else {
		*same = memcmp(r->blk, tb->src_buf, tb->o.bs) == 0;
	}
	return RFS_OK;
}

/* Completes the current run: keeps its leaf in place or moves its items to
 * the pending leaf. */
static rfs_status run_close(struct tree_builder *tb)
{
	if (tb->status)
		return tb->status;
	uint64_t src = tb->run_src;
	bool spilled = tb->run_spilled;
	tb->run_src = RFS_NO_BLOCK;
	tb->run_spilled = false;
	if (src == RFS_NO_BLOCK || spilled || tb->run.nr == 0)
		return RFS_OK;
	leaf_seal(&tb->run);
	bool same;
	rfs_status s = run_matches_source(tb, src, &same);
	if (s)
		return s;
	if (!same)
		return run_to_pending(tb);
	/* Key order: what is pending precedes this run. */
	s = pending_emit(tb);
	if (s)
		return s;
	struct rfs_error e;
	rfs_error_clear(&e);
	if ((s = rfs_bitmap_add(&tb->used, src, &e)))
		return fail(tb, s, &e);
	struct tb_child c = leaf_child(&tb->run, tb->o.bs, src);
	leaf_reset(&tb->run, tb->o.bs);
	tb->st.leaves++;
	tb->st.leaves_kept++;
	if (tb->o.placed)
		tb->o.placed(tb->o.ctx, src, RFS_LEVEL_LEAF, true, false);
	return add_child(tb, 0, &c);
}

/* -------------------------------------------------------------- interface */

rfs_status tb_new(const struct tb_options *o, struct tree_builder **out, struct rfs_error *err)
{
	*out = NULL;
	if (!o || !o->dev || !o->alloc || o->bs != rfs_dev_block_size(o->dev) || o->bs < 512)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "tree builder: a device, an allocator and its block size are needed");
	struct tree_builder *tb = calloc(1, sizeof(*tb));
	if (!tb)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree builder");
	tb->o = *o;
	tb->max_keys = rfs_internal_max_keys(o->bs);
	tb->dev_blocks = rfs_dev_block_count(o->dev);
	tb->run_src = RFS_NO_BLOCK;
	unsigned cap = o->batch;
	if (cap == 0)
		cap = TB_BATCH_BYTES / o->bs;
	if (cap == 0)
		cap = 1;
	if (cap > RFS_UNDO_MAX_BATCH)
		cap = RFS_UNDO_MAX_BATCH;
	tb->batch_cap = cap;
	tb->pending.blk = malloc(o->bs);
	tb->run.blk = malloc(o->bs);
	tb->src_buf = malloc(o->bs);
	tb->node_buf = malloc(o->bs);
	tb->batch_buf = malloc((size_t)cap * o->bs);
	tb->batch_blk = calloc(cap, sizeof(*tb->batch_blk));
	tb->batch_level = calloc(cap, sizeof(*tb->batch_level));
	tb->batch_ptr = calloc(cap, sizeof(*tb->batch_ptr));
	if (!tb->pending.blk || !tb->run.blk || !tb->src_buf || !tb->node_buf || !tb->batch_buf ||
	    !tb->batch_blk || !tb->batch_level || !tb->batch_ptr) {
		tb_free(tb);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree builder buffers");
	}
	for (unsigned i = 0; i < cap; i++)
		tb->batch_ptr[i] = tb->batch_buf + (size_t)i * o->bs;
	/* a block past 2^32 - 1 or the device's end is never used */
	uint64_t nbits = tb->dev_blocks < UINT32_MAX ? tb->dev_blocks : (uint64_t)UINT32_MAX + 1;
	rfs_status s = rfs_bitmap_init_sparse(&tb->used, nbits, err);
	if (s) {
		tb_free(tb);
		return s;
	}
	leaf_reset(&tb->pending, o->bs);
	leaf_reset(&tb->run, o->bs);
	*out = tb;
	return RFS_OK;
}

/* Checks an item against the format and the order; RFS_ERR_INVALID with a
 * message in err when it cannot be placed. */
static rfs_status item_check(const struct tree_builder *tb, const struct tb_item *it,
			     struct rfs_error *err)
{
	char kb[80];
	rfs_key_format_str(&it->key, kb, sizeof(kb));
	if (it->fmt != RFS_KEY_V1 && it->fmt != RFS_KEY_V2)
		return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
				     "item %s: key format %d", kb, (int)it->fmt);
	if (it->key.type > RFS_TYPE_DIRENTRY)
		return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
				     "item %s: type %u cannot be stored", kb, it->key.type);
	/* The key must come back unchanged from its format, and from the format
	 * the kernel guesses when it reads the key in an internal node. */
	uint8_t raw[RFS_KEY_SIZE];
	struct rfs_key back, guessed;
	rfs_key_encode(&it->key, it->fmt, raw);
	rfs_key_decode(raw, it->fmt, &back);
	rfs_key_decode(raw, rfs_key_guess_format(raw), &guessed);
	if (rfs_key_cmp(&back, &it->key) != 0 || rfs_key_cmp(&guessed, &it->key) != 0)
		return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
				     "item %s: key not representable in format %d", kb,
				     (int)it->fmt);
	if (tb->have_last && rfs_key_cmp(&tb->last, &it->key) >= 0) {
		char lb[80];
		rfs_key_format_str(&tb->last, lb, sizeof(lb));
		return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
				     "item %s does not follow %s in key order", kb, lb);
	}
	if (it->len == 0 || it->len > tb->o.bs - 2 * RFS_IH_SIZE || !it->body)
		return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
				     "item %s: length %u outside 1..%u", kb, it->len,
				     tb->o.bs - 2 * RFS_IH_SIZE);
	switch (it->key.type) {
	case RFS_TYPE_STAT:
		if (it->len != RFS_SD_V1_SIZE && it->len != RFS_SD_V2_SIZE)
			return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
					     "item %s: stat data of %u bytes", kb, it->len);
		break;
	case RFS_TYPE_INDIRECT:
		if (it->len % 4)
			return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
					     "item %s: indirect item of %u bytes", kb, it->len);
		break;
	case RFS_TYPE_DIRENTRY:
		if (rfs_dir_validate(it->body, it->len, it->free_or_count, NULL, NULL))
			return rfs_error_set(err, RFS_ERR_INVALID, it->source_leaf,
					     "item %s: directory item does not validate", kb);
		break;
	default:
		break;
	}
	return RFS_OK;
}

rfs_status tb_add_item(struct tree_builder *tb, const struct tb_item *it, struct rfs_error *err)
{
	if (tb->status)
		return sticky(tb, err);
	if (tb->finished)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "tree builder: item added after tb_finish");
	rfs_status s = item_check(tb, it, err);
	if (s)
		return s;

	uint8_t ih[RFS_IH_SIZE];
	struct rfs_item_head h = { .key = it->key, .free_or_count = it->free_or_count,
				   .len = it->len, .location = 0, .key_format = it->fmt };
	rfs_item_head_encode(&h, ih);
	tb->last = it->key;
	tb->have_last = true;
	tb->st.items++;

	if (it->source_leaf != tb->run_src) {
		if (run_close(tb))
			return sticky(tb, err);
		tb->run_src = it->source_leaf;   /* RFS_NO_BLOCK: no run */
	}
	if (it->source_leaf == RFS_NO_BLOCK || tb->run_spilled) {
		s = pending_add(tb, ih, it->body, it->len);
	} else if (mergeable_with_last(&tb->run, ih, tb->o.bs)) {
		/* The source leaf holds two items the kernel would have merged
		 * (check's ITEMS_MERGEABLE): it cannot stay as it is. */
		tb->run_spilled = true;
		s = run_to_pending(tb);
		if (!s)
			s = pending_add(tb, ih, it->body, it->len);
	} else if (leaf_fits(&tb->run, it->len)) {
		leaf_append(&tb->run, ih, it->body, it->len);
	} else {
		/* More than one leaf: the source cannot be identical. */
		tb->run_spilled = true;
		s = run_to_pending(tb);
		if (!s)
			s = pending_add(tb, ih, it->body, it->len);
	}
	return s ? sticky(tb, err) : RFS_OK;
}

rfs_status tb_finish(struct tree_builder *tb, uint64_t *root, unsigned *height,
		     struct tb_stats *st, struct rfs_error *err)
{
	if (tb->status)
		return sticky(tb, err);
	if (tb->finished)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "tree builder: tb_finish called twice");
	tb->finished = true;
	if (tb->st.items == 0) {
		struct rfs_error e;
		rfs_error_clear(&e);
		rfs_error_set(&e, RFS_ERR_INVALID, RFS_NO_BLOCK, "tree builder: no items, no tree");
		fail(tb, RFS_ERR_INVALID, &e);
		return sticky(tb, err);
	}
	if (run_close(tb) || pending_emit(tb))
		return sticky(tb, err);

	uint64_t r = 0;
	unsigned h = 0;
	for (unsigned i = 0; i < tb->nlevels && !tb->status; i++) {
		struct tb_level *L = &tb->lv[i];
		if (L->passed == 0 && !L->has_held) {
			/* The only node of the top level. */
			if (i + 1 != tb->nlevels || L->open.n == 0) {
				struct rfs_error e;
				rfs_error_clear(&e);
				rfs_error_set(&e, RFS_ERR_INVALID, RFS_NO_BLOCK,
					      "tree builder: level %u inconsistent (never happens)", i + 2);
				fail(tb, RFS_ERR_INVALID, &e);
				break;
			}
			if (L->open.n == 1) {       /* its child is the root */
				r = L->open.c[0].block;
				h = i + 1;
			} else {
				inode_encode(tb, i, &L->open);
				if (node_write(tb, tb->node_buf, i + 2, &r))
					break;
				h = i + 2;
			}
			break;
		}
		if (L->has_held) {
			if (L->open.n == 1)
				level_rebalance(L);
			L->has_held = false;
			if (inode_write(tb, i, &L->held))
				break;
		}
		if (L->open.n < 2) {
			struct rfs_error e;
			rfs_error_clear(&e);
			rfs_error_set(&e, RFS_ERR_INVALID, RFS_NO_BLOCK,
				      "tree builder: a level-%u node with one child (never happens)", i + 2);
			fail(tb, RFS_ERR_INVALID, &e);
			break;
		}
		if (inode_write(tb, i, &L->open))
			break;
	}
	if (flush(tb))
		return sticky(tb, err);
	if (h == 0) {
		struct rfs_error e;
		rfs_error_clear(&e);
		rfs_error_set(&e, RFS_ERR_INVALID, RFS_NO_BLOCK, "tree builder: no root (never happens)");
		fail(tb, RFS_ERR_INVALID, &e);
		return sticky(tb, err);
	}
	*root = r;
	*height = h;
	if (st)
		*st = tb->st;
	return RFS_OK;
}

void tb_free(struct tree_builder *tb)
{
	if (!tb)
		return;
	for (unsigned i = 0; i < TB_INTERNAL_LEVELS; i++) {
		free(tb->lv[i].open.c);
		free(tb->lv[i].held.c);
	}
	rfs_bitmap_free(&tb->used);
	free(tb->pending.blk);
	free(tb->run.blk);
	free(tb->src_buf);
	free(tb->node_buf);
	free(tb->batch_buf);
	free(tb->batch_blk);
	free(tb->batch_level);
	free(tb->batch_ptr);
	free(tb);
}

/*
 * tree_edit_node.c - search, and the node changes of the tree-edit layer:
 * a leaf is rewritten from a list of items (split into two or three leaves
 * when they do not fit), new leaves and nodes are hung into their parents
 * (internal nodes split up to a new root), emptied leaves and nodes are taken
 * out (a root left with one child gives way to it), and the delimiting key
 * above a subtree follows its first key.  Disk-child sizes are set once per
 * commit by te_fixup_and_verify, which then checks invariants (1)-(3) of
 * include/rfs/tree_edit.h on every changed node.
 *
 * Keys in internal nodes are copied as their 16 stored bytes (the format of
 * the item they came from), never re-encoded.
 */
#include "tree_edit_int.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"

/* A key as stored (16 bytes) and decoded. */
struct te_key {
	struct rfs_key k;
	uint8_t raw[RFS_KEY_SIZE];
};

/* An item of a leaf being rewritten: its stored head (location ignored) and
 * body (pointing into a scratch copy or the caller's buffer). */
struct te_litem {
	uint8_t head[RFS_IH_SIZE];
	const uint8_t *body;
	uint16_t len;
	struct rfs_key key;
};

/* A child pointer of an internal node being rewritten. */
struct te_child {
	uint32_t block;
	uint16_t size;
};

uint16_t te_node_used(const uint8_t *node, uint32_t bs)
{
	unsigned nr = le16_at(node, BLKH_NR_ITEMS);
	if (le16_at(node, BLKH_LEVEL) == RFS_LEVEL_LEAF) {
		if (nr == 0)
			return 0;
		uint16_t loc = le16_at(node, RFS_BLKH_SIZE + (size_t)(nr - 1) * RFS_IH_SIZE + IH_LOCATION);
		return (uint16_t)(nr * RFS_IH_SIZE + bs - loc);
	}
	return (uint16_t)(nr * RFS_KEY_SIZE + (nr + 1) * RFS_DC_SIZE);
}

static void key_from_raw(struct te_key *k, const uint8_t *raw)
{
	memcpy(k->raw, raw, RFS_KEY_SIZE);
	rfs_key_decode(raw, rfs_key_guess_format(raw), &k->k);
}

/* The key of leaf item i as stored in its head. */
static void leaf_key(const uint8_t *leaf, int i, struct te_key *k)
{
	struct rfs_item_head ih;
	rfs_leaf_item_head(leaf, i, &ih);
	memcpy(k->raw, leaf + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE + IH_KEY, RFS_KEY_SIZE);
	k->k = ih.key;
}

/* Number of keys of an internal node that are <= key: the child covering it. */
static int child_for(const uint8_t *node, const struct rfs_key *key)
{
	int lo = 0, hi = le16_at(node, BLKH_NR_ITEMS);
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct rfs_key k;
		rfs_internal_key(node, mid, &k);
		if (rfs_key_cmp(&k, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

rfs_status te_search(struct rfs_tedit *te, const struct rfs_key *key, int stop_level,
		     struct te_path *p, bool *exact, struct rfs_error *err)
{
	if (exact)
		*exact = false;
	p->depth = 0;
	uint64_t blk = te->root;
	int want = (int)te->height - 1;
	if (want < RFS_LEVEL_LEAF || want > RFS_MAX_HEIGHT)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "tree height %u", te->height);
	if (stop_level > want)
		return RFS_OK;   /* the tree has no node of that level */
	for (int d = 0;; d++) {
		uint8_t *node;
		rfs_status st = te_node(te, blk, want, &node, err);
		if (st)
			return st;
		p->lv[d].blk = blk;
		p->depth = d + 1;
		int nr = le16_at(node, BLKH_NR_ITEMS);
		if (want == RFS_LEVEL_LEAF) {
			int lo = 0, hi = nr;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				struct rfs_item_head ih;
				rfs_leaf_item_head(node, mid, &ih);
				if (rfs_key_cmp(&ih.key, key) <= 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			p->lv[d].pos = lo - 1;
			if (lo > 0 && exact) {
				struct rfs_item_head ih;
				rfs_leaf_item_head(node, lo - 1, &ih);
				*exact = rfs_key_cmp(&ih.key, key) == 0;
			}
			return RFS_OK;
		}
		int c = child_for(node, key);
		p->lv[d].pos = c;
		if (want == stop_level)
			return RFS_OK;
		struct rfs_disk_child dc;
		rfs_internal_child(node, nr, c, &dc);
		blk = dc.block;
		want--;
	}
}

/* ------------------------------------------------------------- leaves */

/* Builds a leaf in buf from items [from, to). */
static void build_leaf(uint8_t *buf, uint32_t bs, const struct te_litem *it, int from, int to)
{
	memset(buf, 0, bs);
	uint32_t end = bs;
	int n = to - from;
	for (int i = 0; i < n; i++) {
		const struct te_litem *x = &it[from + i];
		uint8_t *h = buf + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE;
		end -= x->len;
		memcpy(h, x->head, RFS_IH_SIZE);
		le16_put(h, IH_LEN, x->len);
		le16_put(h, IH_LOCATION, (uint16_t)end);
		memcpy(buf + end, x->body, x->len);
	}
	struct rfs_block_head bh = { .level = RFS_LEVEL_LEAF, .nr_items = (uint16_t)n,
				     .free_space = (uint16_t)(end - RFS_BLKH_SIZE - (uint32_t)n * RFS_IH_SIZE) };
	rfs_block_head_encode(&bh, buf);
}

static uint32_t item_cost(const struct te_litem *x)
{
	return RFS_IH_SIZE + x->len;
}

/* Splits items into runs that each fit a leaf; a run must start at index cut
 * (when cut > 0).  Two runs as even as possible when two can do, else runs
 * filled greedily.  Returns the number of runs; starts[i] is run i's first
 * item (starts has room for n entries). */
static int partition(const struct te_litem *it, int n, int cut, uint32_t cap, int *starts)
{
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += item_cost(&it[i]);
	starts[0] = 0;
	if (total <= cap && cut <= 0)
		return 1;
	int best = -1;
	uint64_t best_max = UINT64_MAX, left = 0;
	for (int c = 1; c < n; c++) {
		left += item_cost(&it[c - 1]);
		if (cut > 0 && c != cut)
			continue;
		uint64_t right = total - left, mx = left > right ? left : right;
		if (left <= cap && right <= cap && mx < best_max) {
			best = c;
			best_max = mx;
		}
	}
	if (best > 0) {
		starts[1] = best;
		return 2;
	}
	int k = 1;
	uint64_t run = 0;
	for (int i = 0; i < n; i++) {
		if (i > 0 && (run + item_cost(&it[i]) > cap || i == cut)) {
			starts[k++] = i;
			run = 0;
		}
		run += item_cost(&it[i]);
	}
	return k;
}

/* Loads a leaf's items, their bodies pointing into scratch (a copy of the leaf). */
static int load_items(const uint8_t *leaf, uint8_t *scratch, uint32_t bs, struct te_litem *it)
{
	memcpy(scratch, leaf, bs);
	int n = le16_at(scratch, BLKH_NR_ITEMS);
	for (int i = 0; i < n; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(scratch, i, &ih);
		memcpy(it[i].head, scratch + RFS_BLKH_SIZE + (size_t)i * RFS_IH_SIZE, RFS_IH_SIZE);
		it[i].body = scratch + ih.location;
		it[i].len = ih.len;
		it[i].key = ih.key;
	}
	return n;
}

static rfs_status insert_child(struct rfs_tedit *te, int level, const struct te_key *key,
			       uint64_t child, struct rfs_error *err);

/* The delimiting key of the subtree at depth d of path p (its first key) is
 * in the lowest ancestor that does not reach it through its child 0. */
static rfs_status update_left_delim(struct rfs_tedit *te, const struct te_path *p, int d,
				    const uint8_t *raw, struct rfs_error *err)
{
	for (int a = d - 1; a >= 0; a--) {
		if (p->lv[a].pos <= 0)
			continue;
		uint8_t *node;
		rfs_status st = te_node(te, p->lv[a].blk, 0, &node, err);
		if (st)
			return st;
		memcpy(node + RFS_BLKH_SIZE + (size_t)(p->lv[a].pos - 1) * RFS_KEY_SIZE, raw,
		       RFS_KEY_SIZE);
		te_mark_dirty(te, p->lv[a].blk);
		return RFS_OK;
	}
	return RFS_OK;   /* the leftmost subtree of the tree: no delimiting key */
}

/* Reads an internal node's keys and children into arrays with room for one
 * more of each. */
static rfs_status load_internal(struct rfs_tedit *te, uint64_t blk, uint8_t **node,
				struct te_key **keys, struct te_child **ch, int *nr,
				struct rfs_error *err)
{
	rfs_status st = te_node(te, blk, 0, node, err);
	if (st)
		return st;
	*nr = le16_at(*node, BLKH_NR_ITEMS);
	*keys = malloc(((size_t)*nr + 1) * sizeof(**keys));
	*ch = malloc(((size_t)*nr + 2) * sizeof(**ch));
	if (!*keys || !*ch) {
		free(*keys);
		free(*ch);
		return rfs_error_set(err, RFS_ERR_NOMEM, blk, "internal node copy");
	}
	for (int i = 0; i < *nr; i++)
		key_from_raw(&(*keys)[i], *node + RFS_BLKH_SIZE + (size_t)i * RFS_KEY_SIZE);
	for (int i = 0; i <= *nr; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(*node, *nr, i, &dc);
		(*ch)[i] = (struct te_child){ dc.block, dc.size };
	}
	return RFS_OK;
}

static void build_internal(uint8_t *buf, uint32_t bs, int level, const struct te_key *keys,
			   const struct te_child *ch, int nr)
{
	memset(buf, 0, bs);
	struct rfs_block_head bh = {
		.level = (uint16_t)level, .nr_items = (uint16_t)nr,
		.free_space = (uint16_t)(bs - RFS_BLKH_SIZE - (uint32_t)nr * RFS_KEY_SIZE -
					 ((uint32_t)nr + 1) * RFS_DC_SIZE) };
	rfs_block_head_encode(&bh, buf);
	for (int i = 0; i < nr; i++)
		memcpy(buf + RFS_BLKH_SIZE + (size_t)i * RFS_KEY_SIZE, keys[i].raw, RFS_KEY_SIZE);
	for (int i = 0; i <= nr; i++) {
		uint8_t *dc = buf + RFS_BLKH_SIZE + (size_t)nr * RFS_KEY_SIZE + (size_t)i * RFS_DC_SIZE;
		le32_put(dc, DC_BLOCK, ch[i].block);
		le16_put(dc, DC_SIZE, ch[i].size);
	}
}

/* Hangs child (first key key) into the tree at level + 1, right after the
 * child that covers key; splits that node when it is full (its upper half
 * goes to a new node hung one level up in turn), and grows a new root when
 * level + 1 is above the root. */
static rfs_status insert_child(struct rfs_tedit *te, int level, const struct te_key *key,
			       uint64_t child, struct rfs_error *err)
{
	int plevel = level + 1;
	if (plevel > RFS_MAX_HEIGHT)
		return rfs_error_set(err, RFS_ERR_LIMIT, child, "the tree would grow past level %d",
				     RFS_MAX_HEIGHT);
	if ((int)te->height - 1 < plevel) {
		uint64_t blk;
		uint8_t *buf;
		rfs_status st = te_new_node(te, te->root, &blk, &buf, err);
		if (st)
			return st;
		struct te_child ch[2] = { { (uint32_t)te->root, 0 }, { (uint32_t)child, 0 } };
		build_internal(buf, te->bs, plevel, key, ch, 1);
		return te_set_root(te, blk, (unsigned)plevel + 1, err);
	}
	struct te_path p;
	rfs_status st = te_search(te, &key->k, plevel, &p, NULL, err);
	if (st)
		return st;
	uint64_t nblk = p.lv[p.depth - 1].blk;
	int pos = p.lv[p.depth - 1].pos;
	uint8_t *node;
	struct te_key *keys;
	struct te_child *ch;
	int nr;
	st = load_internal(te, nblk, &node, &keys, &ch, &nr, err);
	if (st)
		return st;
	memmove(&keys[pos + 1], &keys[pos], (size_t)(nr - pos) * sizeof(*keys));
	keys[pos] = *key;
	memmove(&ch[pos + 2], &ch[pos + 1], (size_t)(nr - pos) * sizeof(*ch));
	ch[pos + 1] = (struct te_child){ (uint32_t)child, 0 };
	nr++;
	if ((uint32_t)nr <= rfs_internal_max_keys(te->bs)) {
		build_internal(node, te->bs, plevel, keys, ch, nr);
		te_mark_dirty(te, nblk);
	} else {
		/* keys [0, mid) stay, keys[mid] goes up, keys (mid, nr) move right */
		int mid = nr / 2;
		uint64_t rblk;
		uint8_t *rbuf;
		st = te_new_node(te, nblk, &rblk, &rbuf, err);
		if (!st) {
			build_internal(rbuf, te->bs, plevel, keys + mid + 1, ch + mid + 1, nr - mid - 1);
			build_internal(node, te->bs, plevel, keys, ch, mid);
			te_mark_dirty(te, nblk);
			struct te_key up = keys[mid];
			st = insert_child(te, plevel, &up, rblk, err);
		}
	}
	free(keys);
	free(ch);
	return st;
}

/* While the root is an internal node with one child and no key, that child
 * becomes the root (height - 1). */
static rfs_status collapse_root(struct rfs_tedit *te, struct rfs_error *err)
{
	while (te->height > 2) {
		uint8_t *node;
		rfs_status st = te_node(te, te->root, (int)te->height - 1, &node, err);
		if (st)
			return st;
		if (le16_at(node, BLKH_NR_ITEMS) != 0)
			return RFS_OK;
		struct rfs_disk_child dc;
		rfs_internal_child(node, 0, 0, &dc);
		st = rfs_tedit_free_block(te, te->root, err);
		if (!st)
			st = te_set_root(te, dc.block, te->height - 1, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

static rfs_status fill_keyless(struct rfs_tedit *te, struct te_path *p, int d,
			       struct rfs_error *err);

/* Takes the child at path depth d + 1 out of the node at depth d.  A node
 * left without children goes too; one left with a single child and no key
 * is merged into a sibling (or takes a child from a full one); a root left
 * so gives way to its child. */
static rfs_status remove_child(struct rfs_tedit *te, struct te_path *p, int d,
			       struct rfs_error *err)
{
	uint64_t nblk = p->lv[d].blk;
	int pos = p->lv[d].pos;
	uint8_t *node;
	struct te_key *keys;
	struct te_child *ch;
	int nr;
	rfs_status st = load_internal(te, nblk, &node, &keys, &ch, &nr, err);
	if (st)
		return st;
	int level = le16_at(node, BLKH_LEVEL);
	if (nr == 0) {
		free(keys);
		free(ch);
		if (d == 0)
			return rfs_error_set(err, RFS_ERR_INVALID, nblk, "the tree would be empty");
		st = rfs_tedit_free_block(te, nblk, err);
		return st ? st : remove_child(te, p, d - 1, err);
	}
	struct te_key old0 = keys[0];
	if (pos > 0) {
		memmove(&keys[pos - 1], &keys[pos], (size_t)(nr - pos) * sizeof(*keys));
		memmove(&ch[pos], &ch[pos + 1], (size_t)(nr - pos) * sizeof(*ch));
	} else {
		memmove(&keys[0], &keys[1], (size_t)(nr - 1) * sizeof(*keys));
		memmove(&ch[0], &ch[1], (size_t)nr * sizeof(*ch));
	}
	nr--;
	build_internal(node, te->bs, level, keys, ch, nr);
	te_mark_dirty(te, nblk);
	free(keys);
	free(ch);
	if (pos == 0) {
		/* the subtree now starts where its second child started */
		st = update_left_delim(te, p, d, old0.raw, err);
		if (st)
			return st;
	}
	if (d == 0)
		return collapse_root(te, err);
	return nr == 0 ? fill_keyless(te, p, d, err) : RFS_OK;
}

/* The node at depth d (not the root) has one child and no key: its child
 * moves into a sibling that has room (the node goes, and its parent loses a
 * key in turn), or it takes the nearest child of a full sibling.  The key
 * between two children is always the first key under the right one, so the
 * keys that move are the ones already separating those subtrees. */
static rfs_status fill_keyless(struct rfs_tedit *te, struct te_path *p, int d,
			       struct rfs_error *err)
{
	uint64_t nblk = p->lv[d].blk, pblk = p->lv[d - 1].blk;
	int j = p->lv[d - 1].pos;
	uint8_t *pn, *nn, *sn;
	struct te_key *pk = NULL, *nk = NULL, *sk = NULL;
	struct te_child *pc = NULL, *nc = NULL, *sc = NULL;
	int pnr, nnr, snr;
	rfs_status st = load_internal(te, pblk, &pn, &pk, &pc, &pnr, err);
	if (!st)
		st = load_internal(te, nblk, &nn, &nk, &nc, &nnr, err);
	if (st || pnr == 0 || nnr != 0)
		goto out;   /* an only child has no sibling: it stays as it is */
	bool left = j > 0;
	int s = left ? j - 1 : j + 1;
	uint64_t sblk = pc[s].block;
	struct te_key k = left ? pk[j - 1] : pk[j];   /* between the node and the sibling */
	st = load_internal(te, sblk, &sn, &sk, &sc, &snr, err);
	if (st)
		goto out;
	int level = le16_at(nn, BLKH_LEVEL), plevel = le16_at(pn, BLKH_LEVEL);
	if ((uint32_t)snr + 1 <= rfs_internal_max_keys(te->bs)) {
		if (left) {
			sk[snr] = k;
			sc[snr + 1] = nc[0];
		} else {
			memmove(&sk[1], &sk[0], (size_t)snr * sizeof(*sk));
			memmove(&sc[1], &sc[0], ((size_t)snr + 1) * sizeof(*sc));
			sk[0] = k;
			sc[0] = nc[0];
		}
		snr++;
		build_internal(sn, te->bs, level, sk, sc, snr);
		te_mark_dirty(te, sblk);
		int kidx = left ? j - 1 : j;
		memmove(&pk[kidx], &pk[kidx + 1], (size_t)(pnr - kidx - 1) * sizeof(*pk));
		memmove(&pc[j], &pc[j + 1], (size_t)(pnr - j) * sizeof(*pc));
		pnr--;
		build_internal(pn, te->bs, plevel, pk, pc, pnr);
		te_mark_dirty(te, pblk);
		st = rfs_tedit_free_block(te, nblk, err);
		if (!st && pnr == 0)
			st = d - 1 == 0 ? collapse_root(te, err) : fill_keyless(te, p, d - 1, err);
	} else {
		struct te_child two[2];
		if (left) {
			two[0] = sc[snr];
			two[1] = nc[0];
			pk[j - 1] = sk[snr - 1];
		} else {
			two[0] = nc[0];
			two[1] = sc[0];
			pk[j] = sk[0];
			memmove(&sk[0], &sk[1], ((size_t)snr - 1) * sizeof(*sk));
			memmove(&sc[0], &sc[1], (size_t)snr * sizeof(*sc));
		}
		snr--;
		build_internal(sn, te->bs, level, sk, sc, snr);
		build_internal(nn, te->bs, level, &k, two, 1);
		build_internal(pn, te->bs, plevel, pk, pc, pnr);
		te_mark_dirty(te, sblk);
		te_mark_dirty(te, nblk);
		te_mark_dirty(te, pblk);
	}
out:
	free(pk);
	free(pc);
	free(nk);
	free(nc);
	free(sk);
	free(sc);
	return st;
}

/* Rewrites the leaf at the end of path p with items it[0, n): in place when
 * they fit, else in that leaf and one or two new leaves after it (a new leaf
 * must start at item cut when cut > 0).  An empty list removes the leaf.
 * The delimiting key above follows a changed first key. */
static rfs_status rewrite_leaf(struct rfs_tedit *te, struct te_path *p, struct te_litem *it,
			       int n, int cut, struct rfs_error *err)
{
	int d = p->depth - 1;
	uint64_t blk = p->lv[d].blk;
	uint8_t *leaf;
	rfs_status st = te_node(te, blk, RFS_LEVEL_LEAF, &leaf, err);
	if (st)
		return st;
	if (n == 0) {
		if (d == 0)
			return rfs_error_set(err, RFS_ERR_INVALID, blk, "the tree would be empty");
		st = rfs_tedit_free_block(te, blk, err);
		return st ? st : remove_child(te, p, d - 1, err);
	}
	struct te_key old_first;
	leaf_key(leaf, 0, &old_first);
	int *starts = malloc((size_t)n * sizeof(*starts));
	if (!starts)
		return rfs_error_set(err, RFS_ERR_NOMEM, blk, "leaf split");
	int runs = partition(it, n, cut, te->bs - RFS_BLKH_SIZE, starts);
	/* new leaves first: the items' bodies may point into the old leaf */
	uint64_t *nblk = calloc((size_t)runs, sizeof(*nblk));
	struct te_key *nkey = calloc((size_t)runs, sizeof(*nkey));
	if (!nblk || !nkey)
		st = rfs_error_set(err, RFS_ERR_NOMEM, blk, "leaf split");
	for (int r = 1; !st && r < runs; r++) {
		uint8_t *buf;
		st = te_new_node(te, blk, &nblk[r], &buf, err);
		if (st)
			break;
		int to = r + 1 < runs ? starts[r + 1] : n;
		build_leaf(buf, te->bs, it, starts[r], to);
		leaf_key(buf, 0, &nkey[r]);
	}
	if (!st) {
		/* (block buffers stay where they are while the set grows) */
		build_leaf(leaf, te->bs, it, 0, runs > 1 ? starts[1] : n);
		te_mark_dirty(te, blk);
		struct te_key first;
		leaf_key(leaf, 0, &first);
		if (rfs_key_cmp(&first.k, &old_first.k) != 0 ||
		    memcmp(first.raw, old_first.raw, RFS_KEY_SIZE) != 0)
			st = update_left_delim(te, p, d, first.raw, err);
	}
	for (int r = 1; !st && r < runs; r++)
		st = insert_child(te, RFS_LEVEL_LEAF, &nkey[r], nblk[r], err);
	free(starts);
	free(nblk);
	free(nkey);
	return st;
}

/* A scratch copy of the leaf at the end of p and its items (room for one more). */
struct leaf_work {
	uint8_t *scratch;
	struct te_litem *it;
	int n;
};

static rfs_status leaf_work_load(struct rfs_tedit *te, const struct te_path *p,
				 struct leaf_work *w, struct rfs_error *err)
{
	uint8_t *leaf;
	rfs_status st = te_node(te, p->lv[p->depth - 1].blk, RFS_LEVEL_LEAF, &leaf, err);
	if (st)
		return st;
	int nr = le16_at(leaf, BLKH_NR_ITEMS);
	w->scratch = malloc(te->bs);
	w->it = malloc(((size_t)nr + 1) * sizeof(*w->it));
	if (!w->scratch || !w->it) {
		free(w->scratch);
		free(w->it);
		return rfs_error_set(err, RFS_ERR_NOMEM, p->lv[p->depth - 1].blk, "leaf copy");
	}
	w->n = load_items(leaf, w->scratch, te->bs, w->it);
	return RFS_OK;
}

static void leaf_work_free(struct leaf_work *w)
{
	free(w->scratch);
	free(w->it);
}

static rfs_status check_item(const struct rfs_tedit *te, const struct rfs_item_head *ih,
			     struct rfs_error *err)
{
	if (ih->len == 0 || ih->len > te->bs - 2 * RFS_IH_SIZE)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "an item of %u bytes does not fit a leaf", ih->len);
	if (ih->key_format != RFS_KEY_V1 && ih->key_format != RFS_KEY_V2)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "key format %d",
				     ih->key_format);
	return RFS_OK;
}

static void item_from_head(struct te_litem *x, const struct rfs_item_head *ih, const uint8_t *body)
{
	struct rfs_item_head h = *ih;
	h.location = 0;
	rfs_item_head_encode(&h, x->head);
	x->body = body;
	x->len = ih->len;
	x->key = ih->key;
}

rfs_status rfs_tedit_insert(struct rfs_tedit *te, const struct rfs_item_head *ih,
			    const uint8_t *body, bool new_leaf, struct rfs_error *err)
{
	rfs_status st = check_item(te, ih, err);
	if (st)
		return st;
	struct te_path p;
	bool exact;
	st = te_search(te, &ih->key, RFS_LEVEL_LEAF, &p, &exact, err);
	if (st)
		return st;
	if (exact)
		return rfs_error_set(err, RFS_ERR_INVALID, p.lv[p.depth - 1].blk,
				     "an item with key [%u %u %llu %s] exists", ih->key.dir_id,
				     ih->key.objectid, (unsigned long long)ih->key.offset,
				     rfs_item_type_name(ih->key.type));
	struct leaf_work w;
	st = leaf_work_load(te, &p, &w, err);
	if (st)
		return st;
	int at = p.lv[p.depth - 1].pos + 1;
	memmove(&w.it[at + 1], &w.it[at], (size_t)(w.n - at) * sizeof(*w.it));
	item_from_head(&w.it[at], ih, body);
	st = rewrite_leaf(te, &p, w.it, w.n + 1, new_leaf ? at : -1, err);
	leaf_work_free(&w);
	return st;
}

rfs_status rfs_tedit_rekey(struct rfs_tedit *te, const struct rfs_key *at,
			   const struct rfs_item_head *ih, const uint8_t *body,
			   struct rfs_error *err)
{
	rfs_status st = check_item(te, ih, err);
	if (st)
		return st;
	struct te_path p;
	bool exact;
	st = te_search(te, at, RFS_LEVEL_LEAF, &p, &exact, err);
	if (st)
		return st;
	if (!exact)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "no item to replace");
	struct leaf_work w;
	st = leaf_work_load(te, &p, &w, err);
	if (st)
		return st;
	int at_pos = p.lv[p.depth - 1].pos;
	int c = rfs_key_cmp(&ih->key, at);
	/* the item keeps its place: above its old key (so above every key left
	 * of it, in this leaf or before) and below the next item of the leaf
	 * (the next leaf's keys are above that; the commit checks the rest) */
	if (c < 0 || (c > 0 && at_pos + 1 < w.n && rfs_key_cmp(&ih->key, &w.it[at_pos + 1].key) >= 0)) {
		leaf_work_free(&w);
		return rfs_error_set(err, RFS_ERR_INVALID, p.lv[p.depth - 1].blk,
				     "the new key would move the item");
	}
	/* the body may point into the leaf itself: copy it out first */
	uint8_t *copy = malloc(ih->len);
	if (!copy) {
		leaf_work_free(&w);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "item copy");
	}
	memcpy(copy, body, ih->len);
	item_from_head(&w.it[at_pos], ih, copy);
	st = rewrite_leaf(te, &p, w.it, w.n, -1, err);
	free(copy);
	leaf_work_free(&w);
	return st;
}

rfs_status rfs_tedit_replace(struct rfs_tedit *te, const struct rfs_item_head *ih,
			     const uint8_t *body, struct rfs_error *err)
{
	return rfs_tedit_rekey(te, &ih->key, ih, body, err);
}

rfs_status rfs_tedit_delete(struct rfs_tedit *te, const struct rfs_key *key,
			    struct rfs_error *err)
{
	struct te_path p;
	bool exact;
	rfs_status st = te_search(te, key, RFS_LEVEL_LEAF, &p, &exact, err);
	if (st)
		return st;
	if (!exact)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "no item to delete");
	struct leaf_work w;
	st = leaf_work_load(te, &p, &w, err);
	if (st)
		return st;
	int at = p.lv[p.depth - 1].pos;
	memmove(&w.it[at], &w.it[at + 1], (size_t)(w.n - at - 1) * sizeof(*w.it));
	st = rewrite_leaf(te, &p, w.it, w.n - 1, -1, err);
	leaf_work_free(&w);
	return st;
}

rfs_status rfs_tedit_item_alloc(const struct rfs_tedit *te, struct rfs_tedit_item *it)
{
	memset(&it->ih, 0, sizeof(it->ih));
	it->body = malloc(te->bs);
	return it->body ? RFS_OK : RFS_ERR_NOMEM;
}

void rfs_tedit_item_free(struct rfs_tedit_item *it)
{
	free(it->body);
	it->body = NULL;
}

rfs_status rfs_tedit_seek(struct rfs_tedit *te, const struct rfs_key *key,
			  struct rfs_tedit_item *out, bool *found, struct rfs_error *err)
{
	struct te_path p;
	*found = false;
	rfs_status st = te_search(te, key, RFS_LEVEL_LEAF, &p, NULL, err);
	if (st)
		return st;
	int d = p.depth - 1;
	int pos = p.lv[d].pos;
	if (pos < 0) {
		/* every item of this leaf is greater: the answer is the last item of
		 * the leaf before it, if there is one */
		int a = d - 1;
		while (a >= 0 && p.lv[a].pos == 0)
			a--;
		if (a < 0)
			return RFS_OK;
		/* descend through the child left of the path, rightmost all the way */
		uint8_t *node;
		st = te_node(te, p.lv[a].blk, 0, &node, err);
		if (st)
			return st;
		struct rfs_disk_child dc;
		rfs_internal_child(node, le16_at(node, BLKH_NR_ITEMS), p.lv[a].pos - 1, &dc);
		uint64_t blk = dc.block;
		int level = le16_at(node, BLKH_LEVEL) - 1;
		for (;;) {
			st = te_node(te, blk, level, &node, err);
			if (st)
				return st;
			int nr = le16_at(node, BLKH_NR_ITEMS);
			if (level == RFS_LEVEL_LEAF) {
				p.lv[d].blk = blk;
				pos = nr - 1;
				break;
			}
			rfs_internal_child(node, nr, nr, &dc);
			blk = dc.block;
			level--;
		}
	}
	uint8_t *leaf;
	st = te_node(te, p.lv[d].blk, RFS_LEVEL_LEAF, &leaf, err);
	if (st)
		return st;
	rfs_leaf_item_head(leaf, pos, &out->ih);
	memcpy(out->body, leaf + out->ih.location, out->ih.len);
	*found = true;
	return RFS_OK;
}

/* ------------------------------------------------- fix-up and verification */

/* A key that leads from the root to node blk (its first key, or for an
 * internal node without keys, the first key under its child 0). */
static rfs_status probe_key(struct rfs_tedit *te, uint64_t blk, struct rfs_key *k,
			    struct rfs_error *err)
{
	for (int guard = 0; guard <= RFS_MAX_HEIGHT; guard++) {
		uint8_t *node;
		rfs_status st = te_node(te, blk, 0, &node, err);
		if (st)
			return st;
		int nr = le16_at(node, BLKH_NR_ITEMS);
		if (le16_at(node, BLKH_LEVEL) == RFS_LEVEL_LEAF) {
			struct rfs_item_head ih;
			rfs_leaf_item_head(node, 0, &ih);
			*k = ih.key;
			return RFS_OK;
		}
		if (nr > 0) {
			rfs_internal_key(node, 0, k);
			return RFS_OK;
		}
		struct rfs_disk_child dc;
		rfs_internal_child(node, 0, 0, &dc);
		blk = dc.block;
	}
	return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "no key under this node");
}

struct fault_flag {
	bool any;
	struct rfs_fault first;
};

static void note_fault(void *ctx, const struct rfs_fault *f)
{
	struct fault_flag *ff = ctx;
	if (!ff->any)
		ff->first = *f;
	ff->any = true;
}

/* Descends to changed node blk (of this level) by its probe key, collecting
 * its delimiting keys from the ancestors; fails unless the path reaches it. */
static rfs_status locate(struct rfs_tedit *te, uint64_t blk, int level, struct te_path *p,
			 struct rfs_key *left, bool *has_left, struct rfs_key *right,
			 bool *has_right, struct rfs_error *err)
{
	struct rfs_key k;
	rfs_status st = probe_key(te, blk, &k, err);
	if (st)
		return st;
	st = te_search(te, &k, level, p, NULL, err);
	if (st)
		return st;
	*has_left = *has_right = false;
	if (p->depth == 0 || p->lv[p->depth - 1].blk != blk)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "changed node is not reached by its own first key");
	/* the deepest ancestor with a key on each side gives the tightest bound */
	for (int a = 0; a < p->depth - 1; a++) {
		uint8_t *node;
		st = te_node(te, p->lv[a].blk, 0, &node, err);
		if (st)
			return st;
		int nr = le16_at(node, BLKH_NR_ITEMS), pos = p->lv[a].pos;
		if (pos > 0) {
			rfs_internal_key(node, pos - 1, left);
			*has_left = true;
		}
		if (pos < nr) {
			rfs_internal_key(node, pos, right);
			*has_right = true;
		}
	}
	return RFS_OK;
}

/* Sets the disk-child size of changed node blk (level L, not the root) in its
 * parent. */
static rfs_status fix_dc(struct rfs_tedit *te, uint64_t blk, int level, struct rfs_error *err)
{
	struct rfs_key k;
	rfs_status st = probe_key(te, blk, &k, err);
	if (st)
		return st;
	struct te_path p;
	st = te_search(te, &k, level + 1, &p, NULL, err);
	if (st)
		return st;
	if (p.depth == 0)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk, "no parent above this node");
	uint64_t pblk = p.lv[p.depth - 1].blk;
	int pos = p.lv[p.depth - 1].pos;
	uint8_t *parent, *node;
	if ((st = te_node(te, pblk, level + 1, &parent, err)) || (st = te_node(te, blk, level, &node, err)))
		return st;
	int nr = le16_at(parent, BLKH_NR_ITEMS);
	struct rfs_disk_child dc;
	rfs_internal_child(parent, nr, pos, &dc);
	if (dc.block != blk)
		return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
				     "changed node is not where its first key leads (parent %llu)",
				     (unsigned long long)pblk);
	uint16_t used = te_node_used(node, te->bs);
	if (dc.size != used) {
		le16_put(parent, RFS_BLKH_SIZE + (size_t)nr * RFS_KEY_SIZE + (size_t)pos * RFS_DC_SIZE +
			 DC_SIZE, used);
		te_mark_dirty(te, pblk);
	}
	return RFS_OK;
}

rfs_status te_fixup_and_verify(struct rfs_tedit *te, struct rfs_error *err)
{
	rfs_status st;
	/* sizes, from the leaves up: fixing a level changes only the one above */
	for (int level = RFS_LEVEL_LEAF; level <= RFS_MAX_HEIGHT; level++) {
		for (size_t i = 0; i < te->n; i++) {
			struct te_block *b = &te->blocks[i];
			if (!b->node || !b->dirty || b->blk == te->root ||
			    le16_at(b->buf, BLKH_LEVEL) != level)
				continue;
			uint64_t blk = b->blk;   /* b may move when the set grows */
			if ((st = fix_dc(te, blk, level, err)))
				return st;
		}
	}
	for (size_t i = 0; i < te->n; i++) {
		if (!te->blocks[i].node || !te->blocks[i].dirty)
			continue;
		uint64_t blk = te->blocks[i].blk;
		uint8_t *node = te->blocks[i].buf;
		int level = le16_at(node, BLKH_LEVEL);
		struct fault_flag ff = { .any = false };
		rfs_status vs = level == RFS_LEVEL_LEAF ? rfs_leaf_validate(node, te->bs, note_fault, &ff)
							: rfs_internal_validate(node, te->bs, note_fault, &ff);
		if (vs || ff.any) {
			const struct rfs_problem_def *d = rfs_problem_def(ff.first.code);
			return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
					     "a changed node would not validate (%s); nothing written",
					     d ? d->name : "unknown");
		}
		if (blk == te->root) {
			if ((int)te->height != level + 1)
				return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
						     "root of level %d under tree height %u", level,
						     te->height);
			continue;
		}
		struct te_path p;
		struct rfs_key left, right;
		bool hl, hr;
		if ((st = locate(te, blk, level, &p, &left, &hl, &right, &hr, err)))
			return st;
		node = te->blocks[i].buf;
		int nr = le16_at(node, BLKH_NR_ITEMS);
		struct rfs_key first, last;
		bool ok = true;
		if (level == RFS_LEVEL_LEAF) {
			struct rfs_item_head ih;
			rfs_leaf_item_head(node, 0, &ih);
			first = ih.key;
			rfs_leaf_item_head(node, nr - 1, &ih);
			last = ih.key;
			ok = (!hl || rfs_key_cmp(&first, &left) == 0) &&
			     (!hr || rfs_key_cmp(&last, &right) < 0);
		} else if (nr > 0) {
			rfs_internal_key(node, 0, &first);
			rfs_internal_key(node, nr - 1, &last);
			ok = (!hl || rfs_key_cmp(&first, &left) > 0) &&
			     (!hr || rfs_key_cmp(&last, &right) < 0);
		}
		if (!ok)
			return rfs_error_set(err, RFS_ERR_CORRUPT, blk,
					     "a changed node's keys would break its delimiting keys; nothing written");
	}
	return RFS_OK;
}

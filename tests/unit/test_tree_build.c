/*
 * test_tree_build.c - rebuild/tree_build.c on scratch images.
 *
 * Items come from a deterministic generator (objects with stat data v1/v2,
 * direct, indirect and directory items with real encoded bodies, keys in both
 * formats), so the same stream can be generated again to check what a tree
 * holds without keeping the items in memory.  Every tree built is read back
 * from the device and checked:
 *  - every node passes rfs_leaf_validate / rfs_internal_validate with no fault
 *    at all (not even a fixable one), no block appears twice;
 *  - levels decrease by one per depth, every internal node has >= 1 key;
 *  - keys strictly increase across the whole walk; internal key i equals the
 *    leftmost key of child i+1 (same 16 bytes) and every subtree lies between
 *    its delimiting keys; dc_size equals the child's used bytes;
 *  - the items read back equal the items added (key, format, count, length,
 *    body bytes), in order, and nothing else.
 * Then: keep-in-place (zero writes for unchanged leaves, one rewritten leaf
 * after a one-byte change, stale free space, a source block the allocator
 * handed out before its run), refusals (order, format, lengths), heights 1 to
 * 5 and the level limit, node-count edge cases of the internal levels, and
 * failures (allocator exhausted at every point, write errors, allocator
 * returning a kept block) that must end cleanly under ASan.  Last, the tree of
 * a kernel-written corpus image is fed back with its leaves as sources.
 */
#include <unistd.h>

#include "testutil.h"

#include "rfs/bytes.h"
#include "rfs/format.h"
#include "rfs/io.h"
#include "rfs/undo.h"
#include "../../rebuild/tree_build.h"

static char dir[64];
static char img_path[128];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/rfs-test-tb.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img_path, sizeof(img_path), "%s/img", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(img_path);
	rmdir(dir);
	return 0;
}

static struct rfs_dev *scratch_dev(uint32_t bs, uint64_t nblocks, uint64_t stop_after_write)
{
	struct rfs_dev_options o = { .path = img_path,
				     .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO | RFS_DEV_CREATE,
				     .stop_after_write_nth = stop_after_write };
	struct rfs_dev *dev = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_OK);
	assert_int_equal(rfs_dev_set_block_size(dev, bs, &err), RFS_OK);
	assert_int_equal(rfs_dev_set_size(dev, nblocks * bs, &err), RFS_OK);
	return dev;
}

/* The same image again (not truncated), failing the Nth block read. */
static struct rfs_dev *reopen_dev(uint32_t bs, uint64_t fail_read_nth)
{
	struct rfs_dev_options o = { .path = img_path, .flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO,
				     .fail_read_nth = fail_read_nth };
	struct rfs_dev *dev = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_open(&o, &dev, &err), RFS_OK);
	assert_int_equal(rfs_dev_set_block_size(dev, bs, &err), RFS_OK);
	return dev;
}

static void close_dev(struct rfs_dev *dev)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_dev_close(dev, &err);
}

/* ---------------------------------------------------------------- generator */

enum gen_mode { GEN_MIXED, GEN_BIG, GEN_STAT };
enum { GEN_MAX_ITEMS = 12 };

/* A stream of items: objects in key order, each stat data then its body
 * items.  GEN_BIG: every object is stat data + one direct item that together
 * fill a leaf exactly, so leaves = objects.  GEN_STAT: stat data only. */
struct gen {
	uint32_t bs;
	enum gen_mode mode;
	uint64_t rng;
	uint64_t obj, nobj;
	struct tb_item it[GEN_MAX_ITEMS];
	uint8_t *body[GEN_MAX_ITEMS];
	unsigned n, next;
	uint64_t index;              /* items handed out */
	uint64_t mutate;             /* flip the last body byte of this item */
};

static uint32_t rnd(struct gen *g, uint32_t n)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return (uint32_t)(g->rng % n);
}

static void gen_init(struct gen *g, uint32_t bs, enum gen_mode mode, uint64_t nobj, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	g->bs = bs;
	g->mode = mode;
	g->nobj = nobj;
	g->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	g->mutate = UINT64_MAX;
	for (int i = 0; i < GEN_MAX_ITEMS; i++) {
		g->body[i] = malloc(bs);
		assert_non_null(g->body[i]);
	}
}

static void gen_free(struct gen *g)
{
	for (int i = 0; i < GEN_MAX_ITEMS; i++)
		free(g->body[i]);
}

static struct tb_item *gen_slot(struct gen *g, const struct rfs_key *k, enum rfs_key_format fmt,
				uint16_t foc)
{
	assert_true(g->n < GEN_MAX_ITEMS);
	struct tb_item *it = &g->it[g->n];
	*it = (struct tb_item){ .key = *k, .fmt = fmt, .free_or_count = foc,
				.body = g->body[g->n], .source_leaf = RFS_NO_BLOCK };
	g->n++;
	return it;
}

static void gen_stat(struct gen *g, uint32_t d, uint32_t o, enum rfs_key_format fmt, uint16_t mode)
{
	struct rfs_key k = { d, o, 0, RFS_TYPE_STAT };
	struct tb_item *it = gen_slot(g, &k, fmt, 0xFFFF);
	struct rfs_stat st = { .version = fmt == RFS_KEY_V2 ? 2 : 1, .mode = mode,
			       .nlink = 1 + rnd(g, 5), .uid = rnd(g, 60000), .gid = rnd(g, 60000),
			       .size = rnd(g, 1u << 30), .atime = rnd(g, 0xFFFFFFF0u),
			       .mtime = rnd(g, 1000), .ctime = rnd(g, 1000), .blocks = rnd(g, 99),
			       .rdev = rnd(g, 0xFFFF), .generation = rnd(g, 77),
			       .first_direct_byte = UINT32_MAX };
	size_t len;
	assert_int_equal(rfs_stat_encode(&st, (uint8_t *)it->body, g->bs, &len), RFS_OK);
	it->len = (uint16_t)len;
}

static void gen_bytes(struct gen *g, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd(g, 256);
}

static void gen_direct(struct gen *g, uint32_t d, uint32_t o, enum rfs_key_format fmt,
		       uint64_t off, uint16_t len)
{
	struct rfs_key k = { d, o, off, RFS_TYPE_DIRECT };
	struct tb_item *it = gen_slot(g, &k, fmt, 0xFFFF);
	it->len = len;
	gen_bytes(g, (uint8_t *)it->body, len);
}

static void gen_dir(struct gen *g, uint32_t d, uint32_t o, enum rfs_key_format sdfmt)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789._-";
	unsigned names = rnd(g, 60);
	struct rfs_dirent_in e[64];
	char name[64][40];
	unsigned total = names + 2;
	for (unsigned i = 0; i < total; i++) {
		e[i] = (struct rfs_dirent_in){ .state = RFS_DEH_STATE_VISIBLE,
					       .dir_id = d, .objectid = o + 1 + i };
		if (i < 2) {
			e[i].offset = i + 1;
			e[i].name = (const uint8_t *)(i == 0 ? "." : "..");
			e[i].name_len = (uint16_t)(i + 1);
			continue;
		}
		unsigned len = 1 + rnd(g, 30);
		for (unsigned c = 0; c < len; c++)
			name[i][c] = alpha[rnd(g, sizeof(alpha) - 1)];
		e[i].offset = (i + 1) << 7 | rnd(g, 128);
		e[i].name = (const uint8_t *)name[i];
		e[i].name_len = (uint16_t)len;
	}
	/* Items packed greedily up to bs - 48 bytes: the next name did not fit,
	 * so no two items of one directory could be merged (the kernel never
	 * leaves two such items side by side in a leaf, the builder merges them). */
	size_t limit = g->bs - 48;
	enum rfs_key_format rule = sdfmt;
	for (unsigned first = 0; first < total;) {
		unsigned cnt = 0;
		size_t size = 0;
		while (first + cnt < total &&
		       size + rfs_dir_entry_size(e[first + cnt].name_len, rule) <= limit) {
			size += rfs_dir_entry_size(e[first + cnt].name_len, rule);
			cnt++;
		}
		assert_true(cnt > 0);
		/* The kernel writes directory items with key format v1. */
		struct rfs_key k = { d, o, first == 0 ? 1 : e[first].offset, RFS_TYPE_DIRENTRY };
		struct tb_item *it = gen_slot(g, &k, RFS_KEY_V1, (uint16_t)cnt);
		size_t len;
		assert_int_equal(rfs_dir_item_encode(e + first, cnt, rule, (uint8_t *)it->body,
						     g->bs, &len), RFS_OK);
		it->len = (uint16_t)len;
		first += cnt;
	}
}

static void gen_object(struct gen *g)
{
	g->n = g->next = 0;
	uint32_t d = 1 + (uint32_t)(g->obj / 64);
	uint32_t o = 1000 + (uint32_t)g->obj * 100;
	enum rfs_key_format fmt = rnd(g, 2) ? RFS_KEY_V2 : RFS_KEY_V1;
	g->obj++;
	if (g->mode == GEN_BIG) {
		gen_stat(g, d, o, fmt, 0100644);
		gen_direct(g, d, o, fmt, 1, (uint16_t)(g->bs - 116));
		return;
	}
	if (g->mode == GEN_STAT) {
		gen_stat(g, d, o, fmt, 0100644);
		return;
	}
	switch (rnd(g, 5)) {
	case 0:
		gen_stat(g, d, o, fmt, 040755);
		gen_dir(g, d, o, fmt);
		break;
	case 1:
		gen_stat(g, d, o, fmt, 0100644);
		gen_direct(g, d, o, fmt, 1, (uint16_t)(1 + rnd(g, g->bs / 2)));
		break;
	case 2: {
		gen_stat(g, d, o, fmt, 0100600);
		unsigned pieces = 1 + rnd(g, 3);
		uint64_t off = 1;
		for (unsigned p = 0; p < pieces; p++) {
			struct rfs_key k = { d, o, off, RFS_TYPE_INDIRECT };
			struct tb_item *it = gen_slot(g, &k, fmt, 0);
			/* every piece but the last full: two pieces that could be
			 * one item would be merged (the kernel never leaves them) */
			uint32_t ptrs = p + 1 < pieces ? (g->bs - 48) / 4 : 1 + rnd(g, (g->bs - 48) / 4);
			it->len = (uint16_t)(ptrs * 4);
			for (uint32_t q = 0; q < ptrs; q++)
				le32_put((uint8_t *)it->body, q * 4, 5000 + rnd(g, 100000));
			off += (uint64_t)ptrs * g->bs;
		}
		if (rnd(g, 2))
			gen_direct(g, d, o, fmt, off, (uint16_t)(1 + rnd(g, 200)));
		break;
	}
	case 3:
		gen_stat(g, d, o, fmt, 020644);  /* a device: stat data only */
		break;
	default:
		gen_stat(g, d, o, fmt, 0120777);
		gen_direct(g, d, o, fmt, 1, (uint16_t)(1 + rnd(g, 60)));
		break;
	}
}

/* The next item (body valid until the next call), or false at the end. */
static bool gen_next(struct gen *g, struct tb_item *out)
{
	while (g->next == g->n) {
		if (g->obj == g->nobj)
			return false;
		gen_object(g);
	}
	*out = g->it[g->next++];
	if (g->index == g->mutate) {
		uint8_t *b = (uint8_t *)out->body;
		b[out->len - 1] ^= 0x5A;
	}
	g->index++;
	return true;
}

/* -------------------------------------------------------- allocator, placed */

struct bump {
	uint64_t next, limit;        /* hands out next, next+1, ... below limit */
	uint64_t script[4];          /* handed out first, in order */
	unsigned nscript, calls;
};

static rfs_status bump_alloc(void *ctx, uint64_t *blk, struct rfs_error *err)
{
	struct bump *b = ctx;
	if (b->calls < b->nscript) {
		*blk = b->script[b->calls++];
		return RFS_OK;
	}
	if (b->next >= b->limit)
		return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK, "test allocator: no blocks left");
	b->calls++;
	*blk = b->next++;
	return RFS_OK;
}

struct placed_log {
	uint64_t kept, written, by_level[8];
	uint64_t *kept_blocks;       /* in the order reported */
	size_t nkept, cap;
};

static void placed_rec(void *ctx, uint64_t blk, unsigned level, bool kept, bool written)
{
	struct placed_log *p = ctx;
	assert_true(level >= 1 && level <= RFS_MAX_HEIGHT);
	assert_true(kept != written);
	p->by_level[level]++;
	if (written) {
		p->written++;
		return;
	}
	assert_int_equal(level, 1);
	p->kept++;
	if (p->nkept == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->kept_blocks = realloc(p->kept_blocks, p->cap * sizeof(uint64_t));
		assert_non_null(p->kept_blocks);
	}
	p->kept_blocks[p->nkept++] = blk;
}

/* Both the allocator and the log, for the builder's single ctx. */
struct ctx {
	struct bump bump;
	struct placed_log log;
};

static rfs_status ctx_alloc(void *c, uint64_t *blk, struct rfs_error *err)
{
	return bump_alloc(&((struct ctx *)c)->bump, blk, err);
}

static void ctx_placed(void *c, uint64_t blk, unsigned level, bool kept, bool written)
{
	placed_rec(&((struct ctx *)c)->log, blk, level, kept, written);
}

/* ---------------------------------------------------------------- the walk */

static void no_fault(void *ctx, const struct rfs_fault *f)
{
	(void)ctx;
	fail_msg("validator reported problem %d (item %d, expected %llu, found %llu)", (int)f->code,
		 f->item, (unsigned long long)f->expected, (unsigned long long)f->found);
}

struct walk {
	struct rfs_dev *dev;
	uint32_t bs;
	struct gen g;                /* regenerates the expected items */
	uint8_t *seen;               /* one byte per block */
	uint64_t nblocks;
	bool have_prev;
	struct rfs_key prev;
	uint64_t leaves, internals;
	uint64_t *leaf_blocks;       /* in key order */
	uint64_t *leaf_items;        /* items per leaf */
	size_t cap;
};

static void walk_node(struct walk *w, uint64_t blk, unsigned level, const struct rfs_key *lo,
		      const struct rfs_key *hi, uint8_t first_raw[RFS_KEY_SIZE], uint16_t *used)
{
	assert_true(blk > 0 && blk < w->nblocks);
	assert_int_equal(w->seen[blk], 0);
	w->seen[blk] = 1;
	uint8_t *b = malloc(w->bs);
	assert_non_null(b);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(w->dev, blk, b, &err), RFS_OK);
	struct rfs_block_head bh;
	rfs_block_head_decode(b, &bh);
	assert_int_equal(bh.level, level);
	for (int i = BLKH_RESERVED; i < RFS_BLKH_SIZE; i++)
		assert_int_equal(b[i], 0);
	*used = (uint16_t)(w->bs - RFS_BLKH_SIZE - bh.free_space);

	if (level == RFS_LEVEL_LEAF) {
		assert_int_equal(rfs_leaf_validate(b, w->bs, no_fault, NULL), RFS_OK);
		if (w->leaves == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 256;
			w->leaf_blocks = realloc(w->leaf_blocks, w->cap * sizeof(uint64_t));
			w->leaf_items = realloc(w->leaf_items, w->cap * sizeof(uint64_t));
			assert_non_null(w->leaf_blocks);
			assert_non_null(w->leaf_items);
		}
		w->leaf_blocks[w->leaves] = blk;
		w->leaf_items[w->leaves] = bh.nr_items;
		w->leaves++;
		memcpy(first_raw, b + RFS_BLKH_SIZE + IH_KEY, RFS_KEY_SIZE);
		for (int i = 0; i < bh.nr_items; i++) {
			struct rfs_item_head ih;
			rfs_leaf_item_head(b, i, &ih);
			struct tb_item want;
			assert_true(gen_next(&w->g, &want));
			assert_int_equal(rfs_key_cmp(&ih.key, &want.key), 0);
			assert_int_equal(ih.key_format, want.fmt);
			assert_int_equal(ih.version, want.fmt);
			assert_int_equal(ih.free_or_count, want.free_or_count);
			assert_int_equal(ih.len, want.len);
			assert_memory_equal(b + ih.location, want.body, want.len);
			if (w->have_prev)
				assert_true(rfs_key_cmp(&w->prev, &ih.key) < 0);
			if (lo)
				assert_true(rfs_key_cmp(lo, &ih.key) <= 0);
			if (hi)
				assert_true(rfs_key_cmp(&ih.key, hi) < 0);
			w->prev = ih.key;
			w->have_prev = true;
		}
		free(b);
		return;
	}

	assert_int_equal(rfs_internal_validate(b, w->bs, no_fault, NULL), RFS_OK);
	assert_true(bh.nr_items >= 1);
	w->internals++;
	for (int i = 0; i <= bh.nr_items; i++) {
		struct rfs_key klo, khi;
		if (i > 0)
			rfs_internal_key(b, i - 1, &klo);
		if (i < bh.nr_items)
			rfs_internal_key(b, i, &khi);
		struct rfs_disk_child dc;
		rfs_internal_child(b, bh.nr_items, i, &dc);
		uint8_t child_first[RFS_KEY_SIZE];
		uint16_t child_used;
		walk_node(w, dc.block, level - 1, i > 0 ? &klo : lo, i < bh.nr_items ? &khi : hi,
			  child_first, &child_used);
		assert_int_equal(dc.size, child_used);
		if (i == 0)
			memcpy(first_raw, child_first, RFS_KEY_SIZE);
		else   /* key i-1 is child i's leftmost key, byte for byte */
			assert_memory_equal(b + RFS_BLKH_SIZE + (size_t)(i - 1) * RFS_KEY_SIZE,
					    child_first, RFS_KEY_SIZE);
	}
	free(b);
}

/* Reads the tree back and compares it with the generator's stream. */
static void walk_tree(struct walk *w, struct rfs_dev *dev, uint32_t bs, enum gen_mode mode,
		      uint64_t nobj, uint64_t seed, uint64_t mutate, uint64_t root, unsigned height)
{
	memset(w, 0, sizeof(*w));
	w->dev = dev;
	w->bs = bs;
	w->nblocks = rfs_dev_block_count(dev);
	w->seen = calloc(w->nblocks, 1);
	assert_non_null(w->seen);
	gen_init(&w->g, bs, mode, nobj, seed);
	w->g.mutate = mutate;
	uint8_t first[RFS_KEY_SIZE];
	uint16_t used;
	walk_node(w, root, height, NULL, NULL, first, &used);
	struct tb_item extra;
	assert_false(gen_next(&w->g, &extra));  /* every item is in the tree */
	gen_free(&w->g);
	free(w->seen);
	w->seen = NULL;
}

static void walk_free(struct walk *w)
{
	free(w->leaf_blocks);
	free(w->leaf_items);
}

/* ---------------------------------------------------------------- building */

struct build {
	struct rfs_dev *dev;
	uint32_t bs;
	enum gen_mode mode;
	uint64_t nobj, seed;
	uint64_t mutate;             /* item whose last byte is changed, or UINT64_MAX */
	const uint64_t *sources;     /* per-leaf source blocks, with source_counts */
	const uint64_t *source_counts;
	size_t nsources;
	unsigned batch;
	bool keep_stale;
	/* results */
	rfs_status status;
	struct rfs_error err;
	uint64_t added;              /* items accepted before a failure */
	uint64_t root;
	unsigned height;
	struct tb_stats st;
};

/* Feeds the generator's items into a new builder; fills b's results. */
static void build_run(struct build *b, struct ctx *c)
{
	struct tb_options o = { .dev = b->dev, .bs = b->bs, .alloc = ctx_alloc,
				.placed = ctx_placed, .ctx = c, .batch = b->batch,
				.keep_stale_free_space = b->keep_stale };
	struct tree_builder *tb;
	rfs_error_clear(&b->err);
	assert_int_equal(tb_new(&o, &tb, &b->err), RFS_OK);
	struct gen g;
	gen_init(&g, b->bs, b->mode, b->nobj, b->seed);
	g.mutate = b->mutate;
	struct tb_item it;
	size_t leaf = 0;
	uint64_t in_leaf = 0;
	b->status = RFS_OK;
	while (gen_next(&g, &it)) {
		if (b->sources) {
			while (leaf < b->nsources && in_leaf == b->source_counts[leaf]) {
				leaf++;
				in_leaf = 0;
			}
			assert_true(leaf < b->nsources);
			it.source_leaf = b->sources[leaf];
			in_leaf++;
		}
		b->status = tb_add_item(tb, &it, &b->err);
		if (b->status)
			break;
		b->added++;
	}
	if (b->status) {
		/* sticky: the next call says the same */
		struct rfs_error e2;
		rfs_error_clear(&e2);
		assert_int_equal(tb_finish(tb, &b->root, &b->height, &b->st, &e2), b->status);
		assert_int_equal(e2.status, b->status);
	} else {
		b->status = tb_finish(tb, &b->root, &b->height, &b->st, &b->err);
	}
	gen_free(&g);
	tb_free(tb);
}

/* Builds and checks a tree; returns the walk (leaf list) for more checks. */
static void build_and_check(struct build *b, struct ctx *c, struct walk *w)
{
	build_run(b, c);
	if (b->status)
		fail_msg("build failed: %s", b->err.msg);
	assert_int_equal(b->st.leaves, b->st.leaves_kept + b->st.leaves_new);
	assert_int_equal(b->st.blocks_written, b->st.leaves_new + b->st.internal_nodes);
	assert_int_equal(c->log.written, b->st.blocks_written);
	assert_int_equal(c->log.kept, b->st.leaves_kept);
	assert_int_equal(c->log.by_level[1], b->st.leaves);
	walk_tree(w, b->dev, b->bs, b->mode, b->nobj, b->seed, b->mutate, b->root, b->height);
	assert_int_equal(w->leaves, b->st.leaves);
	assert_int_equal(w->internals, b->st.internal_nodes);
	assert_int_equal(w->g.index, b->st.items);
}

static void ctx_free(struct ctx *c)
{
	free(c->log.kept_blocks);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------------- tests */

static void test_build_mixed(void **state)
{
	(void)state;
	const uint32_t sizes[] = { 4096, 1024 };
	for (size_t s = 0; s < 2; s++) {
		uint32_t bs = sizes[s];
		struct rfs_dev *dev = scratch_dev(bs, 40000, 0);
		for (unsigned batch = 0; batch <= 1; batch++) {
			struct ctx c = { .bump = { .next = 16, .limit = 40000 } };
			struct build b = { .dev = dev, .bs = bs, .mode = GEN_MIXED, .nobj = 3000,
					   .seed = 7 + s, .mutate = UINT64_MAX, .batch = batch };
			struct walk w;
			build_and_check(&b, &c, &w);
			print_message("bs %u batch %u: %llu items, %llu leaves, %llu internal, height %u\n",
				      bs, batch, (unsigned long long)b.st.items,
				      (unsigned long long)b.st.leaves,
				      (unsigned long long)b.st.internal_nodes, b.height);
			assert_true(b.st.items > 6000);
			assert_int_equal(b.st.leaves_kept, 0);
			assert_true(b.height >= 3);
			walk_free(&w);
			ctx_free(&c);
		}
		close_dev(dev);
	}
}

static unsigned build_big(uint32_t bs, uint64_t nobj, uint64_t *leaves)
{
	uint64_t nblocks = nobj + nobj / 8 + 64;
	struct rfs_dev *dev = scratch_dev(bs, nblocks, 0);
	struct ctx c = { .bump = { .next = 8, .limit = nblocks } };
	struct build b = { .dev = dev, .bs = bs, .mode = GEN_BIG, .nobj = nobj, .seed = nobj,
			   .mutate = UINT64_MAX };
	struct walk w;
	build_and_check(&b, &c, &w);
	*leaves = b.st.leaves;
	walk_free(&w);
	ctx_free(&c);
	close_dev(dev);
	return b.height;
}

/* Leaf counts around the node capacity: a level whose last node would get
 * one child, two, three; a full level; one more than a full level. */
static void test_heights_and_edges(void **state)
{
	(void)state;
	/* bs 1024: 41 keys, 42 children per internal node */
	const struct { uint64_t nobj; unsigned height; } cases[] = {
		{ 1, 1 }, { 2, 2 }, { 3, 2 }, { 41, 2 }, { 42, 2 }, { 43, 3 }, { 44, 3 },
		{ 84, 3 }, { 85, 3 }, { 86, 3 }, { 42 * 42, 3 }, { 42 * 42 + 1, 4 },
		{ 42 * 42 + 2, 4 }, { 2000, 4 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t leaves;
		unsigned h = build_big(1024, cases[i].nobj, &leaves);
		assert_int_equal(leaves, cases[i].nobj);
		assert_int_equal(h, cases[i].height);
	}
	/* bs 512: 20 keys, 21 children: 21^3 = 9261 leaves fit in height 4 */
	uint64_t leaves;
	assert_int_equal(build_big(512, 9261, &leaves), 4);
	assert_int_equal(build_big(512, 9262, &leaves), 5);
	assert_int_equal(leaves, 9262);
}

/* 21^4 + 1 leaves of 512 bytes need a sixth level: RFS_ERR_LIMIT, cleanly. */
static void test_too_many_levels(void **state)
{
	(void)state;
	uint64_t nobj = 21ull * 21 * 21 * 21 + 1, nblocks = nobj + nobj / 8 + 64;
	struct rfs_dev *dev = scratch_dev(512, nblocks, 0);
	struct ctx c = { .bump = { .next = 8, .limit = nblocks } };
	struct build b = { .dev = dev, .bs = 512, .mode = GEN_BIG, .nobj = nobj, .seed = 1,
			   .mutate = UINT64_MAX };
	build_run(&b, &c);
	assert_int_equal(b.status, RFS_ERR_LIMIT);
	assert_non_null(strstr(b.err.msg, "levels"));
	/* a full level-5 root holds 21^4 leaves; only the end overflows it */
	assert_true(b.added >= 2 * (nobj - 21));
	assert_true(c.log.by_level[1] >= nobj - 21 - RFS_UNDO_MAX_BATCH);  /* batch not flushed */
	assert_int_equal(c.log.by_level[5], 0);
	ctx_free(&c);
	close_dev(dev);
}

/* A first tree puts leaves at known blocks; the same items fed again with
 * their source blocks keep every leaf in place. */
static void test_keep_in_place(void **state)
{
	(void)state;
	const uint32_t bs = 4096;
	struct rfs_dev *dev = scratch_dev(bs, 8000, 0);
	struct ctx c = { .bump = { .next = 16, .limit = 3000 } };
	struct build a = { .dev = dev, .bs = bs, .mode = GEN_MIXED, .nobj = 400, .seed = 3,
			   .mutate = UINT64_MAX };
	struct walk wa;
	build_and_check(&a, &c, &wa);
	ctx_free(&c);
	assert_true(wa.leaves > 20);

	/* 1. unchanged: no leaf written, kept leaves reported in key order */
	struct rfs_dev_stats before, after;
	rfs_dev_get_stats(dev, &before);
	struct ctx c2 = { .bump = { .next = 3000, .limit = 8000 } };
	struct build b = a;
	b.sources = wa.leaf_blocks;
	b.source_counts = wa.leaf_items;
	b.nsources = wa.leaves;
	struct walk wb;
	build_and_check(&b, &c2, &wb);
	rfs_dev_get_stats(dev, &after);
	assert_int_equal(b.st.leaves_kept, wa.leaves);
	assert_int_equal(b.st.leaves_new, 0);
	assert_int_equal(after.blocks_written - before.blocks_written, b.st.internal_nodes);
	assert_int_equal(c2.log.nkept, wa.leaves);
	assert_memory_equal(c2.log.kept_blocks, wa.leaf_blocks, wa.leaves * sizeof(uint64_t));
	assert_memory_equal(wb.leaf_blocks, wa.leaf_blocks, wa.leaves * sizeof(uint64_t));
	walk_free(&wb);
	ctx_free(&c2);

	/* 2. one byte of one item changed: that leaf alone is rewritten */
	size_t m = wa.leaves / 2;
	uint64_t first_of_m = 0;
	for (size_t i = 0; i < m; i++)
		first_of_m += wa.leaf_items[i];
	struct ctx c3 = { .bump = { .next = 3000, .limit = 8000 } };
	struct build d = b;
	d.mutate = first_of_m + wa.leaf_items[m] / 2;
	build_and_check(&d, &c3, &wb);
	assert_int_equal(d.st.leaves_kept, wa.leaves - 1);
	assert_int_equal(d.st.leaves_new, 1);
	assert_int_equal(c3.log.nkept, wa.leaves - 1);
	for (size_t i = 0, k = 0; i < wa.leaves; i++) {
		if (i == m) {
			assert_true(wb.leaf_blocks[i] >= 3000);
			continue;
		}
		assert_int_equal(c3.log.kept_blocks[k++], wa.leaf_blocks[i]);
		assert_int_equal(wb.leaf_blocks[i], wa.leaf_blocks[i]);
	}
	walk_free(&wb);
	ctx_free(&c3);

	/* 3. the allocator hands out a later source leaf before its run comes:
	 * that run must not be kept (its block now belongs to another leaf, even
	 * while the write is still in the batch).  Leaf 0's items are fed as
	 * synthesized, so the first allocation (for them) happens when leaf 1's
	 * run is kept. */
	uint64_t victim = wa.leaf_blocks[2];
	uint8_t saved[4096];
	struct rfs_error rerr;
	rfs_error_clear(&rerr);
	assert_int_equal(rfs_dev_read_block(dev, victim, saved, &rerr), RFS_OK);
	uint64_t *src = malloc(wa.leaves * sizeof(uint64_t));
	assert_non_null(src);
	memcpy(src, wa.leaf_blocks, wa.leaves * sizeof(uint64_t));
	src[0] = RFS_NO_BLOCK;
	struct ctx c4 = { .bump = { .next = 3000, .limit = 8000, .script = { victim }, .nscript = 1 } };
	struct build e = b;
	e.sources = src;
	build_and_check(&e, &c4, &wb);
	assert_int_equal(e.st.leaves_kept, wa.leaves - 2);
	assert_int_equal(wb.leaf_blocks[0], victim);  /* leaf 0's items went there */
	assert_true(wb.leaf_blocks[2] >= 3000);        /* leaf 2's items moved */
	walk_free(&wb);
	ctx_free(&c4);
	free(src);
	/* put leaf 2 back for what follows */
	assert_int_equal(rfs_dev_write_block(dev, victim, saved, &rerr), RFS_OK);

	/* 4. a run longer than one leaf (leaves 0 and 1 claim the same source)
	 * cannot be identical; sources outside the device or block 0 are never
	 * kept; none of that is an error */
	uint64_t *cnt = malloc(wa.leaves * sizeof(uint64_t));
	src = malloc(wa.leaves * sizeof(uint64_t));
	assert_non_null(cnt);
	assert_non_null(src);
	src[0] = wa.leaf_blocks[0];
	cnt[0] = wa.leaf_items[0] + wa.leaf_items[1];
	for (size_t i = 2; i < wa.leaves; i++) {
		src[i - 1] = wa.leaf_blocks[i];
		cnt[i - 1] = wa.leaf_items[i];
	}
	src[3] = 8000 + 5;
	src[4] = 0;
	struct ctx c6 = { .bump = { .next = 3000, .limit = 8000 } };
	struct build g = b;
	g.sources = src;
	g.source_counts = cnt;
	g.nsources = wa.leaves - 1;
	build_and_check(&g, &c6, &wb);
	assert_int_equal(g.st.leaves_kept, wa.leaves - 4);
	assert_int_equal(g.st.sources_unreadable, 0);
	walk_free(&wb);
	ctx_free(&c6);
	free(src);
	free(cnt);

	/* 5. the allocator hands out a kept leaf: refused, nothing overwritten */
	struct ctx c5 = { .bump = { .next = 3000, .limit = 8000,
				    .script = { wa.leaf_blocks[0] }, .nscript = 1 } };
	struct build f = b;
	build_run(&f, &c5);
	assert_int_equal(f.status, RFS_ERR_INVALID);
	assert_non_null(strstr(f.err.msg, "already in the new tree"));
	ctx_free(&c5);

	/* 6. a source leaf that cannot be read is written elsewhere */
	close_dev(dev);
	dev = reopen_dev(bs, 3);
	struct ctx c7 = { .bump = { .next = 3000, .limit = 8000 } };
	struct build h = b;
	h.dev = dev;
	build_and_check(&h, &c7, &wb);
	assert_int_equal(h.st.leaves_kept, wa.leaves - 1);
	assert_int_equal(h.st.sources_unreadable, 1);
	assert_true(wb.leaf_blocks[2] >= 3000);
	walk_free(&wb);
	ctx_free(&c7);
	walk_free(&wa);
	close_dev(dev);
}

/* A single leaf: kept means no write at all, the root is the source leaf.
 * Old bytes in the free gap defeat the whole-block match unless
 * keep_stale_free_space is set. */
static void test_keep_single_leaf_and_gap(void **state)
{
	(void)state;
	const uint32_t bs = 4096;
	struct rfs_dev *dev = scratch_dev(bs, 200, 0);
	struct ctx c = { .bump = { .next = 50, .limit = 60 } };
	struct build a = { .dev = dev, .bs = bs, .mode = GEN_STAT, .nobj = 20, .seed = 11,
			   .mutate = UINT64_MAX };
	struct walk wa;
	build_and_check(&a, &c, &wa);
	assert_int_equal(a.height, 1);
	assert_int_equal(a.root, 50);
	ctx_free(&c);

	struct rfs_dev_stats before, after;
	rfs_dev_get_stats(dev, &before);
	struct ctx c2 = { .bump = { .next = 100, .limit = 200 } };
	struct build b = a;
	b.sources = wa.leaf_blocks;
	b.source_counts = wa.leaf_items;
	b.nsources = 1;
	struct walk wb;
	build_and_check(&b, &c2, &wb);
	rfs_dev_get_stats(dev, &after);
	assert_int_equal(after.blocks_written, before.blocks_written);
	assert_int_equal(b.st.blocks_written, 0);
	assert_int_equal(b.root, 50);
	assert_int_equal(b.height, 1);
	assert_int_equal(c2.log.kept, 1);
	walk_free(&wb);
	ctx_free(&c2);

	/* stale bytes in the gap between the heads and the bodies */
	uint8_t blk[4096];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, 50, blk, &err), RFS_OK);
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	assert_true(bh.free_space > 8);
	memset(blk + RFS_BLKH_SIZE + bh.nr_items * RFS_IH_SIZE, 0xEE, 8);
	assert_int_equal(rfs_dev_write_block(dev, 50, blk, &err), RFS_OK);

	struct ctx c3 = { .bump = { .next = 100, .limit = 200 } };
	build_and_check(&b, &c3, &wb);
	assert_int_equal(b.st.leaves_kept, 0);
	assert_int_equal(b.root, 100);
	walk_free(&wb);
	ctx_free(&c3);

	struct ctx c4 = { .bump = { .next = 120, .limit = 200 } };
	b.keep_stale = true;
	build_and_check(&b, &c4, &wb);
	assert_int_equal(b.st.leaves_kept, 1);
	assert_int_equal(b.st.blocks_written, 0);
	assert_int_equal(b.root, 50);
	walk_free(&wb);
	ctx_free(&c4);
	walk_free(&wa);
	close_dev(dev);
}

static rfs_status add_one(struct tree_builder *tb, uint32_t d, uint32_t o, uint64_t off,
			  uint8_t type, enum rfs_key_format fmt, uint16_t foc, const uint8_t *body,
			  uint16_t len)
{
	struct tb_item it = { .key = { d, o, off, type }, .fmt = fmt, .free_or_count = foc,
			      .len = len, .body = body, .source_leaf = RFS_NO_BLOCK };
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status s = tb_add_item(tb, &it, &err);
	assert_int_equal(err.status, s);
	return s;
}

/* Items that continue the previous one (same file, same body type, next
 * byte) are merged in the leaf, or kept in separate leaves when the merged
 * item would be too long: never side by side (reiserfsck's "wrong order"). */
static void test_merge_continuations(void **state)
{
	(void)state;
	const uint32_t bs = 1024;
	struct rfs_dev *dev = scratch_dev(bs, 100, 0);
	struct ctx c = { .bump = { .next = 10, .limit = 100 } };
	struct tb_options o = { .dev = dev, .bs = bs, .alloc = ctx_alloc, .placed = ctx_placed,
				.ctx = &c };
	struct tree_builder *tb;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(tb_new(&o, &tb, &err), RFS_OK);
	uint8_t sd[64], a[16], b[16], big[1024];
	size_t sdlen;
	struct rfs_stat st = { .version = 2, .mode = 0100644, .nlink = 1 };
	assert_int_equal(rfs_stat_encode(&st, sd, sizeof(sd), &sdlen), RFS_OK);
	for (int i = 0; i < 16; i++) {
		a[i] = (uint8_t)i;
		b[i] = (uint8_t)(100 + i);
	}
	memset(big, 7, sizeof(big));
	/* file 5/6: two indirect items of 2 pointers each, then a tail in two pieces */
	assert_int_equal(add_one(tb, 5, 6, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, (uint16_t)sdlen), RFS_OK);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_INDIRECT, RFS_KEY_V2, 0, a, 8), RFS_OK);
	assert_int_equal(add_one(tb, 5, 6, 1 + 2 * bs, RFS_TYPE_INDIRECT, RFS_KEY_V2, 0, b, 8), RFS_OK);
	assert_int_equal(add_one(tb, 5, 6, 1 + 4 * bs, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, a, 10), RFS_OK);
	assert_int_equal(add_one(tb, 5, 6, 11 + 4 * bs, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, b, 6), RFS_OK);
	/* file 5/7: two direct items whose sum exceeds bs - 48: separate leaves */
	assert_int_equal(add_one(tb, 5, 7, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, (uint16_t)sdlen), RFS_OK);
	assert_int_equal(add_one(tb, 5, 7, 1, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, big, 600), RFS_OK);
	assert_int_equal(add_one(tb, 5, 7, 601, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, big, 400), RFS_OK);
	/* directory 5/8: two small items of its names become one */
	struct rfs_stat dst = { .version = 2, .mode = 040755, .nlink = 2 };
	assert_int_equal(rfs_stat_encode(&dst, sd, sizeof(sd), &sdlen), RFS_OK);
	struct rfs_dirent_in d1[2] = {
		{ .offset = 1, .dir_id = 5, .objectid = 8, .state = RFS_DEH_STATE_VISIBLE,
		  .name = (const uint8_t *)".", .name_len = 1 },
		{ .offset = 2, .dir_id = 1, .objectid = 5, .state = RFS_DEH_STATE_VISIBLE,
		  .name = (const uint8_t *)"..", .name_len = 2 } };
	struct rfs_dirent_in d2[1] = {
		{ .offset = 0x1000, .dir_id = 8, .objectid = 9, .state = RFS_DEH_STATE_VISIBLE,
		  .name = (const uint8_t *)"name", .name_len = 4 } };
	uint8_t db1[128], db2[64];
	size_t l1, l2;
	assert_int_equal(rfs_dir_item_encode(d1, 2, RFS_KEY_V2, db1, sizeof(db1), &l1), RFS_OK);
	assert_int_equal(rfs_dir_item_encode(d2, 1, RFS_KEY_V2, db2, sizeof(db2), &l2), RFS_OK);
	assert_int_equal(add_one(tb, 5, 8, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, (uint16_t)sdlen), RFS_OK);
	assert_int_equal(add_one(tb, 5, 8, 1, RFS_TYPE_DIRENTRY, RFS_KEY_V1, 2, db1, (uint16_t)l1), RFS_OK);
	assert_int_equal(add_one(tb, 5, 8, 0x1000, RFS_TYPE_DIRENTRY, RFS_KEY_V1, 1, db2, (uint16_t)l2), RFS_OK);
	uint64_t root;
	unsigned height;
	struct tb_stats ts;
	assert_int_equal(tb_finish(tb, &root, &height, &ts, &err), RFS_OK);
	assert_int_equal(ts.items_merged, 3);
	tb_free(tb);
	/* read back every leaf in key order */
	uint8_t blk[1024];
	uint64_t leaves[8];
	int nl = 0;
	assert_int_equal(rfs_dev_read_block(dev, root, blk, &err), RFS_OK);
	if (le16_at(blk, 0) == 1) {
		leaves[nl++] = root;
	} else {
		uint16_t nr = le16_at(blk, 2);
		for (int i = 0; i <= nr && nl < 8; i++) {
			struct rfs_disk_child dc;
			rfs_internal_child(blk, nr, i, &dc);
			leaves[nl++] = dc.block;
		}
	}
	assert_true(nl >= 2);
	int seen = 0;
	for (int l = 0; l < nl; l++) {
		assert_int_equal(rfs_dev_read_block(dev, leaves[l], blk, &err), RFS_OK);
		assert_int_equal(rfs_leaf_validate(blk, bs, no_fault, NULL), RFS_OK);
		struct rfs_block_head bh;
		rfs_block_head_decode(blk, &bh);
		for (int i = 0; i < bh.nr_items; i++, seen++) {
			struct rfs_item_head ih;
			rfs_leaf_item_head(blk, i, &ih);
			if (ih.key.objectid == 6 && ih.key.type == RFS_TYPE_INDIRECT) {
				assert_int_equal(ih.len, 16);
				assert_memory_equal(blk + ih.location, a, 8);
				assert_memory_equal(blk + ih.location + 8, b, 8);
			}
			if (ih.key.objectid == 6 && ih.key.type == RFS_TYPE_DIRECT) {
				assert_int_equal(ih.len, 16);
				assert_memory_equal(blk + ih.location, a, 10);
				assert_memory_equal(blk + ih.location + 10, b, 6);
			}
			if (ih.key.objectid == 8 && ih.key.type == RFS_TYPE_DIRENTRY) {
				assert_int_equal(ih.free_or_count, 3);
				assert_int_equal(ih.len, l1 + l2);
				struct rfs_dirent de;
				rfs_dir_entry(blk + ih.location, ih.len, 2, &de);
				assert_int_equal(de.offset, 0x1000);
				assert_int_equal(de.name_len, 4);
				assert_memory_equal(de.name, "name", 4);
			}
			if (i > 0) {
				struct rfs_item_head prev;
				rfs_leaf_item_head(blk, i - 1, &prev);
				bool same_dir = prev.key.objectid == ih.key.objectid &&
						prev.key.type == RFS_TYPE_DIRENTRY &&
						ih.key.type == RFS_TYPE_DIRENTRY;
				assert_false(same_dir);
				bool cont = prev.key.objectid == ih.key.objectid &&
					    prev.key.type == ih.key.type &&
					    (ih.key.type == RFS_TYPE_DIRECT || ih.key.type == RFS_TYPE_INDIRECT) &&
					    prev.key.offset + (ih.key.type == RFS_TYPE_INDIRECT
							       ? (uint64_t)prev.len / 4 * bs : prev.len) ==
						    ih.key.offset;
				assert_false(cont);
			}
		}
	}
	assert_int_equal(seen, 8);   /* 11 added, 3 merged */
	struct rfs_error cerr;
	rfs_error_clear(&cerr);
	rfs_dev_close(dev, &cerr);
}

static void test_refusals(void **state)
{
	(void)state;
	const uint32_t bs = 1024;
	struct rfs_dev *dev = scratch_dev(bs, 100, 0);
	struct ctx c = { .bump = { .next = 10, .limit = 100 } };
	struct tb_options o = { .dev = dev, .bs = bs, .alloc = ctx_alloc, .placed = ctx_placed,
				.ctx = &c };
	struct tree_builder *tb;
	struct rfs_error err;
	rfs_error_clear(&err);

	/* bad options */
	struct tb_options bad = o;
	bad.bs = 4096;
	assert_int_equal(tb_new(&bad, &tb, &err), RFS_ERR_INVALID);
	assert_null(tb);
	bad = o;
	bad.alloc = NULL;
	rfs_error_clear(&err);
	assert_int_equal(tb_new(&bad, &tb, &err), RFS_ERR_INVALID);

	/* no items, no tree */
	rfs_error_clear(&err);
	assert_int_equal(tb_new(&o, &tb, &err), RFS_OK);
	uint64_t root;
	unsigned height;
	assert_int_equal(tb_finish(tb, &root, &height, NULL, &err), RFS_ERR_INVALID);
	tb_free(tb);

	rfs_error_clear(&err);
	assert_int_equal(tb_new(&o, &tb, &err), RFS_OK);
	uint8_t body[1024] = { 0 };
	uint8_t sd[64];
	size_t sdlen;
	struct rfs_stat st = { .version = 2, .mode = 0100644, .nlink = 1 };
	assert_int_equal(rfs_stat_encode(&st, sd, sizeof(sd), &sdlen), RFS_OK);

	assert_int_equal(add_one(tb, 5, 6, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, 44), RFS_OK);
	/* equal and smaller keys */
	assert_int_equal(add_one(tb, 5, 6, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, 44),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 5, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, 44),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 4, 9, 9, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, body, 4),
			 RFS_ERR_INVALID);
	/* lengths and bodies */
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, body, 0),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, body, bs - 47),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 7, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, 40),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_INDIRECT, RFS_KEY_V2, 0, body, 6),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_DIRENTRY, RFS_KEY_V1, 2, body, 48),
			 RFS_ERR_INVALID);
	/* keys the format cannot hold */
	assert_int_equal(add_one(tb, 5, 6, UINT64_C(1) << 32, RFS_TYPE_DIRECT, RFS_KEY_V1, 0xFFFF,
				 body, 8), RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_ANY, RFS_KEY_V2, 0xFFFF, body, 8),
			 RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_DIRECT, (enum rfs_key_format)2, 0xFFFF,
				 body, 8), RFS_ERR_INVALID);
	assert_int_equal(add_one(tb, 5, 8, UINT64_C(1) << 33, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF,
				 sd, 44), RFS_ERR_INVALID);   /* read back as v1 in a parent */
	/* none of that was added; the builder goes on */
	assert_int_equal(add_one(tb, 5, 6, 1, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF, body,
				 bs - 48), RFS_OK);
	assert_int_equal(add_one(tb, 5, 6, UINT64_C(1) << 40, RFS_TYPE_DIRECT, RFS_KEY_V2, 0xFFFF,
				 body, 8), RFS_OK);
	struct tb_stats ts;
	rfs_error_clear(&err);
	assert_int_equal(tb_finish(tb, &root, &height, &ts, &err), RFS_OK);
	assert_int_equal(ts.items, 3);
	assert_int_equal(ts.leaves, 3);   /* 68 | 24 + 976 = bs - 24 | 32 */
	assert_int_equal(height, 2);
	/* after finish: only tb_free */
	assert_int_equal(add_one(tb, 9, 9, 0, RFS_TYPE_STAT, RFS_KEY_V2, 0xFFFF, sd, 44),
			 RFS_ERR_INVALID);
	rfs_error_clear(&err);
	assert_int_equal(tb_finish(tb, &root, &height, &ts, &err), RFS_ERR_INVALID);
	tb_free(tb);
	tb_free(NULL);
	ctx_free(&c);
	close_dev(dev);
}

/* The allocator runs out at every possible point: each build fails with the
 * allocator's error, sticky, and frees everything (ASan). */
static void test_alloc_exhausted(void **state)
{
	(void)state;
	const uint32_t bs = 1024;
	struct rfs_dev *dev = scratch_dev(bs, 2000, 0);
	struct ctx c = { .bump = { .next = 10, .limit = 2000 } };
	struct build b = { .dev = dev, .bs = bs, .mode = GEN_MIXED, .nobj = 200, .seed = 5,
			   .mutate = UINT64_MAX, .batch = 3 };
	struct walk w;
	build_and_check(&b, &c, &w);
	uint64_t need = b.st.blocks_written;
	walk_free(&w);
	ctx_free(&c);
	assert_true(need > 50);
	for (uint64_t limit = 0; limit < need; limit += (limit < 60 ? 1 : 7)) {
		struct ctx cl = { .bump = { .next = 10, .limit = 10 + limit } };
		struct build bl = b;
		build_run(&bl, &cl);
		assert_int_equal(bl.status, RFS_ERR_LIMIT);
		assert_non_null(strstr(bl.err.msg, "no blocks left"));
		assert_true(cl.log.written <= limit);
		ctx_free(&cl);
	}
	struct ctx ok = { .bump = { .next = 10, .limit = 10 + need } };
	struct build bo = b;
	build_and_check(&bo, &ok, &w);
	walk_free(&w);
	ctx_free(&ok);
	close_dev(dev);
}

/* A write that fails stops the build with the device's error. */
static void test_write_error(void **state)
{
	(void)state;
	const uint32_t bs = 1024;
	for (unsigned batch = 1; batch <= 4; batch += 3) {
		struct rfs_dev *dev = scratch_dev(bs, 2000, 5);
		struct ctx c = { .bump = { .next = 10, .limit = 2000 } };
		struct build b = { .dev = dev, .bs = bs, .mode = GEN_MIXED, .nobj = 200, .seed = 5,
				   .mutate = UINT64_MAX, .batch = batch };
		build_run(&b, &c);
		assert_int_equal(b.status, RFS_ERR_INJECTED);
		assert_true(c.log.written < 5);
		ctx_free(&c);
		struct rfs_error err;
		rfs_error_clear(&err);
		assert_int_equal(rfs_dev_close(dev, &err), RFS_ERR_INJECTED);
	}
}

/* ------------------------------------------------- kernel-written leaves */

/* Items of a tree, in key order, copied out. */
struct item_list {
	struct rfs_item_head *ih;
	uint8_t **body;
	uint64_t *leaf;              /* leaf holding each item */
	size_t n, cap;
	uint64_t leaves, internals;
};

static void collect(struct rfs_dev *dev, uint32_t bs, uint64_t blk, unsigned level,
		    struct item_list *l)
{
	uint8_t *b = malloc(bs);
	assert_non_null(b);
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_block(dev, blk, b, &err), RFS_OK);
	struct rfs_block_head bh;
	rfs_block_head_decode(b, &bh);
	assert_int_equal(bh.level, level);
	if (level > RFS_LEVEL_LEAF) {
		assert_int_equal(rfs_internal_validate(b, bs, no_fault, NULL), RFS_OK);
		l->internals++;
		for (int i = 0; i <= bh.nr_items; i++) {
			struct rfs_disk_child dc;
			rfs_internal_child(b, bh.nr_items, i, &dc);
			collect(dev, bs, dc.block, level - 1, l);
		}
		free(b);
		return;
	}
	assert_int_equal(rfs_leaf_validate(b, bs, no_fault, NULL), RFS_OK);
	l->leaves++;
	for (int i = 0; i < bh.nr_items; i++) {
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 256;
			l->ih = realloc(l->ih, l->cap * sizeof(*l->ih));
			l->body = realloc(l->body, l->cap * sizeof(*l->body));
			l->leaf = realloc(l->leaf, l->cap * sizeof(*l->leaf));
			assert_non_null(l->ih);
			assert_non_null(l->body);
			assert_non_null(l->leaf);
		}
		rfs_leaf_item_head(b, i, &l->ih[l->n]);
		l->body[l->n] = malloc(l->ih[l->n].len);
		assert_non_null(l->body[l->n]);
		memcpy(l->body[l->n], b + l->ih[l->n].location, l->ih[l->n].len);
		l->leaf[l->n] = blk;
		l->n++;
	}
	free(b);
}

static void item_list_free(struct item_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->body[i]);
	free(l->ih);
	free(l->body);
	free(l->leaf);
	memset(l, 0, sizeof(*l));
}

/* The tree of a kernel-written image fed back through the builder with each
 * item's leaf as its source: every leaf whose free gap is clean stays in
 * place; with keep_stale_free_space every leaf does.  The new tree holds the
 * same items. */
static void test_corpus_keep(void **state)
{
	(void)state;
	const char *cdir = getenv("RFS_CORPUS_DIR");
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "xz -dc '%s/r36-features-r5.img.xz' > '%s' && truncate -s +4M '%s'",
		 cdir ? cdir : "corpus/images", img_path, img_path);
	assert_int_equal(system(cmd), 0);
	struct rfs_dev *dev = reopen_dev(4096, 0);
	uint8_t sb[4096];
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_dev_read_bytes(dev, RFS_SB_OFFSET, sb, sizeof(sb), &err), RFS_OK);
	uint32_t old_root = le32_at(sb, SB_ROOT_BLOCK);
	unsigned old_height = le16_at(sb, SB_TREE_HEIGHT) - 1u;
	uint64_t fs_blocks = le32_at(sb, SB_BLOCK_COUNT);
	struct item_list old = { 0 };
	collect(dev, 4096, old_root, old_height, &old);
	assert_true(old.leaves > 10);

	for (int keep_stale = 0; keep_stale <= 1; keep_stale++) {
		/* new nodes go past the end of the filesystem: nothing of it is touched */
		struct ctx c = { .bump = { .next = fs_blocks + 100 * (uint64_t)keep_stale,
					   .limit = rfs_dev_block_count(dev) } };
		struct tb_options o = { .dev = dev, .bs = 4096, .alloc = ctx_alloc,
					.placed = ctx_placed, .ctx = &c,
					.keep_stale_free_space = keep_stale };
		struct tree_builder *tb;
		rfs_error_clear(&err);
		assert_int_equal(tb_new(&o, &tb, &err), RFS_OK);
		for (size_t i = 0; i < old.n; i++) {
			struct tb_item it = { .key = old.ih[i].key, .fmt = old.ih[i].key_format,
					      .free_or_count = old.ih[i].free_or_count,
					      .len = old.ih[i].len, .body = old.body[i],
					      .source_leaf = old.leaf[i] };
			assert_int_equal(tb_add_item(tb, &it, &err), RFS_OK);
		}
		uint64_t root;
		unsigned height;
		struct tb_stats st;
		assert_int_equal(tb_finish(tb, &root, &height, &st, &err), RFS_OK);
		tb_free(tb);
		print_message("r36-features-r5, %s: %llu of %llu leaves kept, %llu written\n",
			      keep_stale ? "stale free space accepted" : "whole-block match",
			      (unsigned long long)st.leaves_kept, (unsigned long long)old.leaves,
			      (unsigned long long)st.blocks_written);
		if (keep_stale) {
			assert_int_equal(st.leaves_kept, old.leaves);
			assert_int_equal(st.leaves_new, 0);
		} else {
			assert_true(st.leaves_kept > 0 && st.leaves_kept < old.leaves);
		}
		assert_int_equal(height, old_height);
		struct item_list now = { 0 };
		collect(dev, 4096, root, height, &now);
		assert_int_equal(now.n, old.n);
		assert_int_equal(now.leaves, st.leaves);
		for (size_t i = 0; i < old.n; i++) {
			assert_int_equal(rfs_key_cmp(&now.ih[i].key, &old.ih[i].key), 0);
			assert_int_equal(now.ih[i].version, old.ih[i].version);
			assert_int_equal(now.ih[i].free_or_count, old.ih[i].free_or_count);
			assert_int_equal(now.ih[i].len, old.ih[i].len);
			assert_memory_equal(now.body[i], old.body[i], old.ih[i].len);
		}
		item_list_free(&now);
		ctx_free(&c);
	}
	item_list_free(&old);
	close_dev(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_build_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heights_and_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_single_leaf_and_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_continuations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corpus_keep, setup, teardown),
	};
	return cmocka_run_group_tests_name("tree_build", tests, NULL, NULL);
}

/*
 * check_tree.c - pass "tree": a depth-first walk from the root in key order.
 *
 * Checks every node reached (range, metadata area, reached twice, level for its
 * depth, structure via rfs_leaf_validate/rfs_internal_validate, the child size
 * recorded in the parent, delimiting keys), every item (key order across
 * leaves, stat data first for each object, body items contiguous, indirect
 * pointers in range / not metadata / not shared, directory names hashing to
 * their offsets, safe links well formed).
 * Relies on: pass super (journal replayed in the overlay).
 * Produces: c->claimed (metadata, tree nodes, data blocks), c->objects (per
 * object: stat data fields, body extent, pointers, directory bytes),
 * c->bad_nodes (subtrees that could not be checked), statistics.
 * A subtree whose root fails is skipped, never followed.
 */
#include "check.h"
#include "check_rules.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/hash.h"
#include "rfs/object.h"
#include "rfs/u64set.h"

struct walk {
	struct rfs_check *c;
	uint8_t *buf[RFS_MAX_HEIGHT + 1];
	bool have_prev;
	struct rfs_key prev_key;        /* last item key seen, across leaves */
	bool have_obj;
	uint32_t obj_dir_id, obj_objectid;
	struct rfs_objinfo *obj;        /* valid until the next object starts */
	struct rfs_objbody *body;       /* obj's body, until the object ends */
	uint64_t next_off;              /* expected key offset of the next body item */
	bool tail_seen;                 /* the object's direct item came: nothing may follow */
	uint64_t tail_block;            /* file block holding the tail */
	int obj_kind;                   /* from its stat data: 0 unknown, 1 directory, 2 other */
	/* The object's items against its stat data's type, judged when the
	 * object ends (finish_object): the first disagreeing item is kept for
	 * the report. */
	unsigned n_body, n_names, n_mismatch;
	bool names_in_body;             /* a body item holds a directory item's "." */
	uint64_t mm_block;
	int mm_item;
	struct rfs_key mm_key;
	bool resync;                    /* a subtree was skipped: don't judge the next object's start */
	uint64_t cur_block;             /* for the fault relay */
	uint64_t nodes;                 /* tree nodes read, for progress */
	bool dirty[RFS_MAX_HEIGHT + 1]; /* node at that depth was repaired in memory */
	struct rfs_fault fixes[64];     /* "fix" answers for the node being validated */
	uint64_t *pf;                   /* prefetch_children's scratch: pf_cap blocks */
	size_t pf_cap;
	int n_fixes;
};

static void relay_fault(void *ctx, const struct rfs_fault *f)
{
	struct walk *w = ctx;
	struct rfs_problem_ctx pc = rfs_problem_ctx_none();
	pc.block = w->cur_block;
	pc.item = f->item;
	pc.entry = f->entry;
	pc.expected = f->expected;
	pc.found = f->found;
	/* Repairs wait until validation of the node is over. */
	if (problem_report(w->c->rep, f->code, &pc) &&
	    w->n_fixes < (int)(sizeof(w->fixes) / sizeof(w->fixes[0])))
		w->fixes[w->n_fixes++] = *f;
}

/* Applies the in-node repairs collected while validating node (valid now). */
static void apply_node_fixes(struct walk *w, uint8_t *node, int depth)
{
	for (int i = 0; i < w->n_fixes; i++) {
		const struct rfs_fault *f = &w->fixes[i];
		uint8_t *ih = node + RFS_BLKH_SIZE + (size_t)(f->item > 0 ? f->item : 0) * RFS_IH_SIZE;
		switch (f->code) {
		case PR_LEAF_BAD_FREE_SPACE:
		case PR_INTERNAL_BAD_FREE_SPACE:
			le16_put(node, BLKH_FREE_SPACE, (uint16_t)f->expected);
			break;
		case PR_ITEM_FLAGS_SET:
			le16_put(ih, IH_VERSION, le16_at(ih, IH_VERSION) & 0x0FFF);
			break;
		case PR_ITEM_BAD_KEY_FORMAT:
			le16_put(ih, IH_VERSION, (uint16_t)f->expected);
			break;
		case PR_DIR_ENTRY_STATE:
			le16_put(node + le16_at(ih, IH_LOCATION),
				 (size_t)f->entry * RFS_DEH_SIZE + DEH_STATE, RFS_DEH_STATE_VISIBLE);
			break;
		default:
			continue;
		}
		w->dirty[depth] = true;
		problem_fixed(w->c->rep, f->code);
	}
	w->n_fixes = 0;
}
static void claim_metadata(struct rfs_check *c)
{
	const struct rfs_super *sb = &c->fs->sb;
	for (uint64_t b = 0; b <= sb->sb_block; b++)
		rfs_bitmap_set(&c->claimed, b);
	for (uint32_t i = 0; i < sb->bmap_count; i++)
		rfs_bitmap_set(&c->claimed, rfs_bitmap_block(sb, i));
	uint64_t jend = rfs_super_journal_end(sb);
	uint64_t jstart = sb->j_dev ? sb->sb_block + 1 : sb->j_first;
	for (uint64_t b = jstart; b < jend && b < c->claimed.nbits; b++)
		rfs_bitmap_set(&c->claimed, b);
}

static void count_object_type(struct rfs_check *c, uint16_t mode)
{
	switch (rfs_mode_type(mode)) {
	case RFS_FT_DIR: c->stats.directories++; break;
	case RFS_FT_REG: c->stats.files++; break;
	case RFS_FT_LNK: c->stats.symlinks++; break;
	default: c->stats.others++; break;
	}
}

/* Safe links: key (0xFFFFFFFF, objectid), body = the object's dir_id (4 bytes);
 * indirect type at offset 1 = pending truncate, direct at bs + 1 = pending unlink. */
static void check_safe_link(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *ih,
			    const uint8_t *body)
{
	struct rfs_check *c = w->c;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.item = i;
	ctx.has_key = true;
	ctx.key = ih->key;
	bool truncate = ih->key.type == RFS_TYPE_INDIRECT && ih->key.offset == 1;
	bool unlink = ih->key.type == RFS_TYPE_DIRECT && ih->key.offset == (uint64_t)c->fs->bs + 1;
	if ((!truncate && !unlink) || ih->len != 4) {
		problem_report(c->rep, PR_SAFELINK_BAD, &ctx);
		return;
	}
	uint32_t dir_id = le32_at(body, 0);
	c->stats.safe_links++;
	struct rfs_objinfo *o = rfs_objtab_find(&c->objects, dir_id, ih->key.objectid);
	if (!o || !(o->flags & RFS_OBJ_HAS_SD)) {
		problem_report(c->rep, PR_SAFELINK_BAD, &ctx);
		return;
	}
	o->flags |= RFS_OBJ_SAFELINK;
	ctx.found = dir_id;
	ctx.expected = ih->key.objectid;
	ctx.detail = truncate ? "truncate" : "unlink";
	problem_report(c->rep, PR_SAFELINK_PENDING, &ctx);
}

/* The ended object's items against its stat data's type: items that all
 * disagree with it the same way (only file bodies under a directory mode, or
 * only names under a file mode) mean one flipped mode, which fix sets from the
 * items (the semantic pass reports MODE_WRONG); a body item that holds a
 * directory's "." means the item's type is what flipped, and a mix means no
 * single field explains it: those need a rebuild. */
static void judge_item_types(struct walk *w)
{
	if (w->n_mismatch == 0)
		return;
	struct rfs_objinfo *o = w->obj;
	bool file_items = w->obj_kind == 1 && w->n_names == 0 && w->n_body > 0 && !w->names_in_body;
	bool dir_items = w->obj_kind == 2 && w->n_body == 0 && w->n_names > 0 &&
			 rfs_mode_type(o->mode) == RFS_FT_REG;
	if ((file_items || dir_items) && !(o->flags & RFS_OBJ_ITEMS_BAD)) {
		o->flags |= RFS_OBJ_MODE_FROM_ITEMS;
		return;
	}
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = w->mm_block;
	ctx.item = w->mm_item;
	ctx.has_key = true;
	ctx.key = w->mm_key;
	ctx.detail = w->obj_kind == 1 ? "directory" : "not a directory";
	problem_report(w->c->rep, PR_ITEM_TYPE_MISMATCH, &ctx);
	o->flags |= RFS_OBJ_ITEMS_BAD;
}

/* Ends the current object: judges its item types, then drops its body when
 * the semantic pass could find nothing in it (check_rules.h), which is what
 * keeps the object table at 24 bytes for nearly every object. */
static void finish_object(struct walk *w)
{
	if (!w->have_obj || !w->obj)
		return;
	judge_item_types(w);
	if (w->body && check_rules_pass(w->c->fs, w->obj, w->body))
		rfs_objtab_body_drop(&w->c->objects, w->obj);
	w->body = NULL;
}

static rfs_status start_object(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *ih)
{
	struct rfs_check *c = w->c;
	finish_object(w);
	w->n_body = w->n_names = w->n_mismatch = 0;
	w->names_in_body = false;
	w->have_obj = true;
	w->obj_dir_id = ih->key.dir_id;
	w->obj_objectid = ih->key.objectid;
	w->next_off = 1;
	w->tail_seen = false;
	w->obj_kind = 0;
	bool created;
	rfs_status st = rfs_objtab_get(&c->objects, ih->key.dir_id, ih->key.objectid, &w->obj, &created);
	if (st)
		return st;
	/* An object that ended without keeping its body comes back: its items
	 * are not in one run of the tree, and what the rules would read of the
	 * first run is gone, so the rules skip it (as for items with gaps). */
	bool revisit = !created && !w->obj->body;
	if ((st = rfs_objtab_body_new(&c->objects, w->obj, &w->body)))
		return st;
	if (revisit)
		w->obj->flags |= RFS_OBJ_ITEMS_BAD;
	if (ih->key.type != RFS_TYPE_STAT && !w->resync) {
		struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
		ctx.block = blk;
		ctx.item = i;
		ctx.has_key = true;
		ctx.key = ih->key;
		problem_report(c->rep, PR_ITEM_NO_STAT_DATA, &ctx);
		w->obj->flags |= RFS_OBJ_ITEMS_BAD;
	}
	w->resync = false;
	return RFS_OK;
}

static void check_body_offset(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *ih)
{
	if (ih->key.offset == w->next_off)
		return;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.item = i;
	ctx.has_key = true;
	ctx.key = ih->key;
	ctx.expected = w->next_off - 1;
	ctx.found = ih->key.offset - 1;
	problem_report(w->c->rep, PR_FILE_ITEMS_GAP, &ctx);
	w->obj->flags |= RFS_OBJ_ITEMS_BAD;
}

/* A body item after the tail, a tail that leaves its block, and items of the
 * wrong kind for the stat data (a file body under a directory, names under a
 * file): the kernel would misread each, and only a rebuild can decide which
 * item is right. */
static void check_item_fits_object(struct walk *w, uint64_t blk, int i,
				   const struct rfs_item_head *ih, const uint8_t *body_bytes)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.item = i;
	ctx.has_key = true;
	ctx.key = ih->key;
	bool body = ih->key.type == RFS_TYPE_DIRECT || ih->key.type == RFS_TYPE_INDIRECT;
	bool names = ih->key.type == RFS_TYPE_DIRENTRY;
	w->n_body += body;
	w->n_names += names;
	if ((body && w->obj_kind == 1) || (names && w->obj_kind == 2)) {
		/* judged when the object ends (finish_object) */
		if (w->n_mismatch++ == 0) {
			w->mm_block = blk;
			w->mm_item = i;
			w->mm_key = ih->key;
		}
		if (body && rfs_body_holds_dot(body_bytes, ih->len, ih->free_or_count, ih->key.objectid))
			w->names_in_body = true;
	}
	if (!body)
		return;
	uint64_t bs = w->c->fs->bs;
	if (w->tail_seen && ih->key.type == RFS_TYPE_INDIRECT) {
		problem_report(w->c->rep, PR_ITEM_AFTER_TAIL, &ctx);
		w->obj->flags |= RFS_OBJ_ITEMS_BAD;
		return;
	}
	if (ih->key.type != RFS_TYPE_DIRECT || ih->key.offset == 0 || ih->len == 0)
		return;
	uint64_t first = ih->key.offset - 1, last = first + ih->len - 1;
	if (!w->tail_seen) {
		w->tail_seen = true;
		w->tail_block = first / bs;
	}
	/* a 3.6 tail may carry up to 7 bytes of padding past the data */
	if (last / bs != w->tail_block && (last - 7) / bs != w->tail_block) {
		ctx.expected = (w->tail_block + 1) * bs;
		ctx.found = last + 1;
		problem_report(w->c->rep, PR_TAIL_CROSSES_BLOCK, &ctx);
		w->obj->flags |= RFS_OBJ_ITEMS_BAD;
	}
}

static void check_indirect(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *ih,
			   uint8_t *body, int depth)
{
	struct rfs_check *c = w->c;
	const struct rfs_super *sb = &c->fs->sb;
	check_body_offset(w, blk, i, ih);
	uint32_t n = ih->len / 4;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t p = le32_at(body, 4 * (size_t)j);
		if (p == 0) {
			c->stats.zero_pointers++;
			continue;
		}
		c->stats.data_pointers++;
		enum rfs_problem_code code = PR_NONE;
		if (p >= sb->block_count || p >= c->claimed.nbits)
			code = PR_INDIRECT_PTR_OUT_OF_RANGE;
		else if (rfs_super_block_is_metadata(sb, p))
			code = PR_INDIRECT_PTR_METADATA;
		else if (rfs_bitmap_test(&c->claimed, p))
			code = PR_INDIRECT_PTR_SHARED;
		if (code != PR_NONE) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = blk;
			ctx.item = i;
			ctx.entry = (int)j;
			ctx.has_key = true;
			ctx.key = ih->key;
			ctx.found = p;
			ctx.expected = sb->block_count;
			if (problem_report(c->rep, code, &ctx)) {
				le32_put(body, 4 * (size_t)j, 0);   /* the file gets a hole */
				w->dirty[depth] = true;
				problem_fixed(c->rep, code);
			}
			continue;
		}
		rfs_bitmap_set(&c->claimed, p);
		w->body->unfm = rfs_sat_add32(w->body->unfm, 1);
	}
	w->next_off = ih->key.offset + (uint64_t)n * c->fs->bs;
	w->body->body_end = w->next_off - 1;
}

static void check_dir_item(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *ih,
			   const uint8_t *body)
{
	struct rfs_check *c = w->c;
	for (int e = 0; e < ih->free_or_count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(body, ih->len, e, &de);
		w->body->dir_bytes += RFS_DEH_SIZE + de.stored_len;
		c->stats.names++;
		bool dot = de.name_len == 1 && de.name[0] == '.';
		bool dotdot = de.name_len == 2 && de.name[0] == '.' && de.name[1] == '.';
		if (dot || dotdot || !c->hash_trusted)
			continue;
		if (!rfs_hash_offset_matches(c->fs->hash_code, de.name, de.name_len, de.offset)) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = blk;
			ctx.item = i;
			ctx.entry = e;
			ctx.has_key = true;
			ctx.key = ih->key;
			ctx.name = de.name;
			ctx.name_len = de.name_len;
			ctx.expected = rfs_hash_entry_offset(c->fs->hash_code, de.name, de.name_len);
			ctx.found = de.offset;
			problem_report(c->rep, PR_DIR_BAD_HASH, &ctx);
		}
	}
}

/* Inside one leaf an object has at most one item of each body kind: the kernel
 * pastes into the item already there and merges neighbours when it shifts
 * items between nodes, so a body item may follow only the object's stat data,
 * or (a tail) its indirect item.  Two such items side by side were not written
 * by the kernel; which bytes are right is a rebuild's decision. */
static void check_item_pair(struct walk *w, uint64_t blk, int i, const struct rfs_item_head *prev,
			    const struct rfs_item_head *ih)
{
	if (ih->key.type == RFS_TYPE_STAT || prev->key.type == RFS_TYPE_STAT)
		return;
	if (prev->key.dir_id != ih->key.dir_id || prev->key.objectid != ih->key.objectid)
		return;
	if (prev->key.type == RFS_TYPE_INDIRECT && ih->key.type == RFS_TYPE_DIRECT)
		return;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.item = i;
	ctx.has_key = true;
	ctx.key = ih->key;
	ctx.detail = rfs_item_type_name(prev->key.type);
	problem_report(w->c->rep, PR_ITEMS_MERGEABLE, &ctx);
	if (w->obj)
		w->obj->flags |= RFS_OBJ_ITEMS_BAD;
}

static rfs_status check_leaf_items(struct walk *w, uint64_t blk, uint8_t *leaf, int depth)
{
	struct rfs_check *c = w->c;
	struct rfs_block_head bh;
	rfs_block_head_decode(leaf, &bh);
	struct rfs_item_head prev_ih;
	memset(&prev_ih, 0, sizeof(prev_ih));
	for (int i = 0; i < bh.nr_items; i++) {
		struct rfs_item_head ih;
		rfs_leaf_item_head(leaf, i, &ih);
		uint8_t *body = leaf + ih.location;
		c->stats.items++;
		if (i > 0 && ih.key.dir_id != RFS_SAFELINK_DIR_ID)
			check_item_pair(w, blk, i, &prev_ih, &ih);
		prev_ih = ih;
		if (w->have_prev && i == 0 && rfs_key_cmp(&w->prev_key, &ih.key) >= 0) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = blk;
			ctx.item = i;
			ctx.has_key = true;
			ctx.key = ih.key;
			problem_report(c->rep, PR_LEAF_KEYS_UNSORTED, &ctx);
		}
		w->have_prev = true;
		w->prev_key = ih.key;
		if (ih.key.dir_id == RFS_SAFELINK_DIR_ID) {
			check_safe_link(w, blk, i, &ih, body);
			continue;
		}
		if (!w->have_obj || ih.key.dir_id != w->obj_dir_id ||
		    ih.key.objectid != w->obj_objectid) {
			rfs_status st = start_object(w, blk, i, &ih);
			if (st)
				return st;
		}
		if (ih.key.type != RFS_TYPE_STAT)
			check_item_fits_object(w, blk, i, &ih, body);
		switch (ih.key.type) {
		case RFS_TYPE_STAT: {
			struct rfs_stat sd;
			if (rfs_stat_decode(body, ih.len, &sd) == RFS_OK) {
				w->obj_kind = rfs_mode_type(sd.mode) == RFS_FT_DIR ? 1 : 2;
				struct rfs_objinfo *o = w->obj;
				o->flags |= RFS_OBJ_HAS_SD;
				o->mode = sd.mode;
				o->sd_version = (uint8_t)sd.version;
				o->nlink = sd.nlink;
				w->body->size = sd.size;
				w->body->blocks = sd.blocks;
				w->body->sd_first_direct = sd.first_direct_byte;
				count_object_type(c, sd.mode);
			}
			break;
		}
		case RFS_TYPE_INDIRECT:
			check_indirect(w, blk, i, &ih, body, depth);
			break;
		case RFS_TYPE_DIRECT:
			check_body_offset(w, blk, i, &ih);
			w->next_off = ih.key.offset + ih.len;
			w->body->body_end = w->next_off - 1;
			w->obj->flags |= RFS_OBJ_HAS_DIRECT;
			if (!w->body->first_direct)
				w->body->first_direct = ih.key.offset > UINT32_MAX ? UINT32_MAX
								     : (uint32_t)ih.key.offset;
			break;
		case RFS_TYPE_DIRENTRY:
			check_dir_item(w, blk, i, &ih, body);
			break;
		default:
			break;
		}
	}
	return RFS_OK;
}

static void report_node(struct walk *w, enum rfs_problem_code code, uint64_t blk, uint64_t parent,
			uint64_t expected, uint64_t found, const char *detail)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.block2 = parent;
	ctx.expected = expected;
	ctx.found = found;
	ctx.detail = detail;
	problem_report(w->c->rep, code, &ctx);
	w->c->bad_nodes++;
	w->resync = true;
}

static void report_delim(struct walk *w, enum rfs_problem_code code, uint64_t blk,
			 uint64_t parent, const struct rfs_key *k)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.block = blk;
	ctx.block2 = parent;
	ctx.has_key = true;
	ctx.key = *k;
	problem_report(w->c->rep, code, &ctx);
}

/* Announces the children of a validated internal node before the walk reads
 * them one by one: sorted and merged into runs (gaps of up to PREFETCH_GAP
 * blocks are read along), so the device sees a queue of requests in block
 * order instead of one synchronous read at a time.  The children of a node
 * just above the leaves (leaves) are also read into the block cache a run
 * at a time: a leaf then costs a copy instead of a system call.  Blocks that
 * the walk will refuse (out of range) are left out; the walk itself is
 * unchanged. */
enum { PREFETCH_GAP = 4 };
static void prefetch_children(struct walk *w, const uint8_t *node, int nr_items, bool leaves)
{
	size_t n = 0;
	for (int i = 0; i <= nr_items && (size_t)i < w->pf_cap; i++) {
		struct rfs_disk_child dc;
		rfs_internal_child(node, nr_items, i, &dc);
		if (dc.block < w->c->fs->sb.block_count)
			w->pf[n++] = dc.block;
	}
	if (!n)
		return;
	qsort(w->pf, n, sizeof(*w->pf), u64_compare);
	uint64_t first = w->pf[0], last = w->pf[0];
	for (size_t i = 1; i <= n; i++) {
		if (i < n && w->pf[i] - last <= PREFETCH_GAP) {
			last = w->pf[i];
			continue;
		}
		rfs_dev_prefetch(w->c->fs->dev, first, last - first + 1);
		for (uint64_t at = first; leaves && at < last; at += RFS_DEV_CACHE_RUN_MAX) {
			uint64_t left = last - at + 1;
			rfs_dev_cache_run(w->c->fs->dev, at, (uint32_t)(left < RFS_DEV_CACHE_RUN_MAX ?
								 left : RFS_DEV_CACHE_RUN_MAX));
		}
		if (i < n)
			first = last = w->pf[i];
	}
}

/* Walks the subtree at blk.  want_level 0 = the root.  left/right are the
 * delimiting keys from the ancestors (NULL at the edges of the tree). */
static rfs_status walk_node(struct walk *w, int depth, uint64_t blk, int want_level,
			    const struct rfs_key *left, const struct rfs_key *right, uint64_t parent,
			    int child_index, uint16_t dc_size)
{
	struct rfs_check *c = w->c;
	struct rfs_fs *fs = c->fs;
	if (blk >= fs->sb.block_count || blk >= c->claimed.nbits) {
		report_node(w, PR_NODE_OUT_OF_RANGE, parent, parent, fs->sb.block_count, blk, NULL);
		return RFS_OK;
	}
	if (rfs_super_block_is_metadata(&fs->sb, blk)) {
		report_node(w, PR_NODE_IN_METADATA, parent, parent, 0, blk, NULL);
		return RFS_OK;
	}
	if (rfs_bitmap_test(&c->claimed, blk)) {
		report_node(w, PR_NODE_CLAIMED_TWICE, blk, parent, 0, 0, NULL);
		return RFS_OK;
	}
	rfs_bitmap_set(&c->claimed, blk);
	w->nodes++;
	rfs_progress_update(&c->progress, w->nodes);
	uint8_t *node = w->buf[depth];
	struct rfs_error e;
	rfs_error_clear(&e);
	if (rfs_dev_read_block(fs->dev, blk, node, &e)) {
		if (e.status == RFS_ERR_NOMEM)
			return e.status;
		char line[240];
		rfs_error_format(&e, line, sizeof(line));
		report_node(w, PR_NODE_READ_ERROR, blk, parent, 0, 0, line);
		return RFS_OK;
	}
	struct rfs_block_head bh;
	rfs_block_head_decode(node, &bh);
	int level = bh.level;
	if (want_level == 0) {
		if (level < RFS_LEVEL_LEAF || level > RFS_MAX_HEIGHT) {
			report_node(w, PR_NODE_BAD_LEVEL, blk, parent, fs->sb.tree_height - 1, level, NULL);
			return RFS_OK;
		}
		if (fs->sb.tree_height != level + 1) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = fs->sb.sb_block;
			ctx.expected = (uint64_t)level + 1;
			ctx.found = fs->sb.tree_height;
			if (problem_report(c->rep, PR_SB_TREE_HEIGHT_WRONG, &ctx)) {
				uint8_t *sb;
				rfs_status st = repair_sb(c, &sb, NULL);
				if (st)
					return st;
				le16_put(sb, SB_TREE_HEIGHT, (uint16_t)(level + 1));
				problem_fixed(c->rep, PR_SB_TREE_HEIGHT_WRONG);
			}
		}
	} else if (level != want_level) {
		report_node(w, PR_NODE_BAD_LEVEL, blk, parent, (uint64_t)want_level, (uint64_t)level, NULL);
		return RFS_OK;
	}
	w->cur_block = blk;
	w->n_fixes = 0;
	w->dirty[depth] = false;
	rfs_status vs = level == RFS_LEVEL_LEAF ? rfs_leaf_validate(node, fs->bs, relay_fault, w)
						 : rfs_internal_validate(node, fs->bs, relay_fault, w);
	if (vs) {
		c->bad_nodes++;
		w->resync = true;
		w->n_fixes = 0;
		return RFS_OK;
	}
	apply_node_fixes(w, node, depth);
	if (want_level != 0) {
		/* What the node really uses, from its layout (not from its free
		 * space field, which has its own problem code). */
		uint32_t used;
		if (level == RFS_LEVEL_LEAF) {
			struct rfs_item_head lastih;
			rfs_leaf_item_head(node, bh.nr_items - 1, &lastih);
			used = (uint32_t)bh.nr_items * RFS_IH_SIZE + fs->bs - lastih.location;
		} else {
			used = (uint32_t)bh.nr_items * RFS_KEY_SIZE +
			       ((uint32_t)bh.nr_items + 1) * RFS_DC_SIZE;
		}
		if (dc_size != used) {
			struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
			ctx.block = parent;
			ctx.block2 = blk;
			ctx.item = child_index;
			ctx.expected = used;
			ctx.found = dc_size;
			if (problem_report(c->rep, PR_INTERNAL_DC_SIZE, &ctx)) {
				uint8_t *pn = w->buf[depth - 1];
				size_t nr = le16_at(pn, BLKH_NR_ITEMS);
				le16_put(pn, RFS_BLKH_SIZE + nr * RFS_KEY_SIZE +
					 (size_t)child_index * RFS_DC_SIZE + DC_SIZE, (uint16_t)used);
				w->dirty[depth - 1] = true;
				problem_fixed(c->rep, PR_INTERNAL_DC_SIZE);
			}
		}
	}
	if (level == RFS_LEVEL_LEAF) {
		c->stats.leaves++;
		struct rfs_item_head first, last;
		rfs_leaf_item_head(node, 0, &first);
		rfs_leaf_item_head(node, bh.nr_items - 1, &last);
		if (left && rfs_key_cmp(&first.key, left) != 0)
			report_delim(w, PR_NODE_DELIM_LEFT, blk, parent, &first.key);
		if (right && rfs_key_cmp(&last.key, right) >= 0)
			report_delim(w, PR_NODE_DELIM_RIGHT, blk, parent, &last.key);
		rfs_status ls = check_leaf_items(w, blk, node, depth);
		if (!ls && w->dirty[depth])
			ls = repair_write(c, blk, node, NULL);
		return ls;
	}
	c->stats.internal_nodes++;
	struct rfs_key k0, kn;
	if (bh.nr_items > 0) {
		rfs_internal_key(node, 0, &k0);
		rfs_internal_key(node, bh.nr_items - 1, &kn);
		if (left && rfs_key_cmp(&k0, left) <= 0)
			report_delim(w, PR_NODE_DELIM_LEFT, blk, parent, &k0);
		if (right && rfs_key_cmp(&kn, right) >= 0)
			report_delim(w, PR_NODE_DELIM_RIGHT, blk, parent, &kn);
	}
	prefetch_children(w, node, bh.nr_items, level == RFS_LEVEL_LEAF + 1);
	for (int i = 0; i <= bh.nr_items; i++) {
		struct rfs_key lk, rk;
		const struct rfs_key *l = left, *r = right;
		if (i > 0) {
			rfs_internal_key(node, i - 1, &lk);
			l = &lk;
		}
		if (i < bh.nr_items) {
			rfs_internal_key(node, i, &rk);
			r = &rk;
		}
		struct rfs_disk_child dc;
		rfs_internal_child(node, bh.nr_items, i, &dc);
		rfs_status st = walk_node(w, depth + 1, dc.block, level - 1, l, r, blk, i, dc.size);
		if (st)
			return st;
		if (rfs_reporter_exhausted(c->rep))
			break;
	}
	if (w->dirty[depth])
		return repair_write(c, blk, node, NULL);
	return RFS_OK;
}

rfs_status check_pass_tree(struct rfs_check *c, struct rfs_error *err)
{
	struct walk w = { .c = c };
	rfs_status st = RFS_OK;
	claim_metadata(c);
	/* Progress counts tree nodes; about one block in 60 of the used ones. */
	uint64_t used = c->fs->sb.block_count > c->fs->sb.free_blocks
		? c->fs->sb.block_count - c->fs->sb.free_blocks : 0;
	rfs_progress_phase(&c->progress, "checking the tree", "nodes", used / 60 + 1);
	for (int i = 0; i <= RFS_MAX_HEIGHT; i++) {
		w.buf[i] = malloc(c->fs->bs);
		if (!w.buf[i]) {
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree walk buffers");
			goto out;
		}
	}
	/* an internal node has at most (bs - header) / (key + child) + 1 children */
	w.pf_cap = c->fs->bs / (RFS_KEY_SIZE + RFS_DC_SIZE) + 1;
	w.pf = malloc(w.pf_cap * sizeof(*w.pf));
	if (!w.pf) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "tree walk buffers");
		goto out;
	}
	st = walk_node(&w, 0, c->fs->sb.root_block, 0, NULL, NULL, RFS_NO_BLOCK, -1, 0);
	if (!st)
		finish_object(&w);
	if (st)
		rfs_error_set(err, st, RFS_NO_BLOCK, "tree walk");
	c->stats.blocks_claimed = rfs_bitmap_count(&c->claimed);
out:
	for (int i = 0; i <= RFS_MAX_HEIGHT; i++)
		free(w.buf[i]);
	free(w.pf);
	return st;
}

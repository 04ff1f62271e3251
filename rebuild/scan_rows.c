/*
 * scan_rows.c - a run's index rows held in memory between its worker and the
 * index's thread (see scan_rows.h).
 *
 * Each record is a row_head and its payload, padded to 8 bytes; payloads are
 * the index's own row structs, copied in and out with memcpy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan_rows.h"

enum row_kind { ROW_LEAF, ROW_ITEM, ROW_DIRENT, ROW_CLAIM, ROW_INTERNAL, ROW_NESTED,
		ROW_UNREADABLE };

struct row_head {
	uint32_t kind;
	uint32_t size;               /* payload bytes, before padding */
};

struct row_claim {
	uint64_t first, count, block, file_offset;
	uint32_t pos, dir_id, objectid;
};

struct row_internal {
	uint64_t block;
	uint32_t level, nr_keys;
	int area;
	/* then nr_keys + 1 children (uint64_t) and nr_keys keys */
};

struct row_nested {
	struct rfs_index_nested n;
	char magic[16];
};

struct row_unreadable {
	uint64_t block;
	const char *error;
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void rb_rows_reset(struct rb_rows *r)
{
	r->len = 0;
	memset(&r->n, 0, sizeof(r->n));
	r->max_objectid = 0;
	memset(r->hash_votes, 0, sizeof(r->hash_votes));
}

void rb_rows_free(struct rb_rows *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Appends a record of `size` payload bytes; *payload points at them. */
static rfs_status append(struct rb_rows *r, enum row_kind kind, size_t size, uint8_t **payload,
			 struct rfs_error *err)
{
	size_t need = sizeof(struct row_head) + pad8(size);
	if (r->cap - r->len < need) {
		size_t cap = r->cap ? r->cap : 65536;
		while (cap - r->len < need)
			cap *= 2;
		uint8_t *nb = realloc(r->buf, cap);
		if (!nb)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "scan rows (%zu bytes)", cap);
		r->buf = nb;
		r->cap = cap;
	}
	struct row_head h = { .kind = kind, .size = (uint32_t)size };
	memcpy(r->buf + r->len, &h, sizeof(h));
	*payload = r->buf + r->len + sizeof(h);
	r->len += need;
	return RFS_OK;
}

static rfs_status append_copy(struct rb_rows *r, enum row_kind kind, const void *p, size_t size,
			      struct rfs_error *err)
{
	uint8_t *dst = NULL;
	rfs_status st = append(r, kind, size, &dst, err);
	if (!st)
		memcpy(dst, p, size);
	return st;
}

rfs_status rb_rows_leaf(struct rb_rows *r, const struct rfs_index_leaf *l, struct rfs_error *err)
{
	return append_copy(r, ROW_LEAF, l, sizeof(*l), err);
}

rfs_status rb_rows_item(struct rb_rows *r, const struct rfs_index_item *it, struct rfs_error *err)
{
	return append_copy(r, ROW_ITEM, it, sizeof(*it), err);
}

rfs_status rb_rows_dirent(struct rb_rows *r, const struct rfs_index_dirent *d,
			  struct rfs_error *err)
{
	return append_copy(r, ROW_DIRENT, d, sizeof(*d), err);
}

rfs_status rb_rows_claim(struct rb_rows *r, uint64_t first, uint64_t count, uint64_t block,
			 uint32_t pos, uint32_t dir_id, uint32_t objectid, uint64_t file_offset,
			 struct rfs_error *err)
{
	struct row_claim c = { .first = first, .count = count, .block = block,
			       .file_offset = file_offset, .pos = pos, .dir_id = dir_id,
			       .objectid = objectid };
	return append_copy(r, ROW_CLAIM, &c, sizeof(c), err);
}

rfs_status rb_rows_internal(struct rb_rows *r, uint64_t block, unsigned level, unsigned nr_keys,
			    int area, const uint64_t *children, const struct rfs_key *keys,
			    struct rfs_error *err)
{
	size_t ch = ((size_t)nr_keys + 1) * sizeof(uint64_t);
	size_t ks = (size_t)nr_keys * sizeof(struct rfs_key);
	uint8_t *dst = NULL;
	rfs_status st = append(r, ROW_INTERNAL, sizeof(struct row_internal) + ch + ks, &dst, err);
	if (st)
		return st;
	struct row_internal h = { .block = block, .level = level, .nr_keys = nr_keys, .area = area };
	memcpy(dst, &h, sizeof(h));
	memcpy(dst + sizeof(h), children, ch);
	if (ks)
		memcpy(dst + sizeof(h) + ch, keys, ks);
	return RFS_OK;
}

rfs_status rb_rows_nested(struct rb_rows *r, const struct rfs_index_nested *n,
			  struct rfs_error *err)
{
	struct row_nested rn = { .n = *n };
	snprintf(rn.magic, sizeof(rn.magic), "%s", n->magic ? n->magic : "");
	rn.n.magic = NULL;
	return append_copy(r, ROW_NESTED, &rn, sizeof(rn), err);
}

rfs_status rb_rows_unreadable(struct rb_rows *r, uint64_t block, const char *error,
			      struct rfs_error *err)
{
	struct row_unreadable u = { .block = block, .error = error };
	return append_copy(r, ROW_UNREADABLE, &u, sizeof(u), err);
}

static rfs_status store_internal(struct rfs_index *ix, const uint8_t *p, struct rfs_error *err)
{
	struct row_internal h;
	memcpy(&h, p, sizeof(h));
	uint64_t children[2732];     /* rfs_internal_max_keys(65536) + 1 */
	struct rfs_key keys[2731];
	if (h.nr_keys > 2731)
		return rfs_error_set(err, RFS_ERR_INVALID, h.block, "internal row of %u keys",
				     h.nr_keys);
	size_t ch = ((size_t)h.nr_keys + 1) * sizeof(uint64_t);
	memcpy(children, p + sizeof(h), ch);
	if (h.nr_keys)
		memcpy(keys, p + sizeof(h) + ch, (size_t)h.nr_keys * sizeof(struct rfs_key));
	return rfs_index_add_internal(ix, h.block, h.level, h.nr_keys, h.area, children, keys, err);
}

static void add_counts(struct rb_counts *to, const struct rb_counts *from)
{
	to->blocks_scanned += from->blocks_scanned;
	to->candidates += from->candidates;
	to->invalid += from->invalid;
	to->partly_valid += from->partly_valid;
	to->journal_copies += from->journal_copies;
	to->internal_nodes += from->internal_nodes;
	to->nested_superblocks += from->nested_superblocks;
	to->unreadable += from->unreadable;
}

rfs_status rb_rows_store(const struct rb_rows *r, struct rb_ctx *c, struct rfs_error *err)
{
	rfs_status st = RFS_OK;
	for (size_t at = 0; !st && at < r->len;) {
		struct row_head h;
		memcpy(&h, r->buf + at, sizeof(h));
		const uint8_t *p = r->buf + at + sizeof(h);
		at += sizeof(h) + pad8(h.size);
		switch ((enum row_kind)h.kind) {
		case ROW_LEAF: {
			struct rfs_index_leaf l;
			memcpy(&l, p, sizeof(l));
			if (l.area == 0 && l.valid && l.block < c->leaves.nbits)
				rfs_bitmap_set(&c->leaves, l.block);
			st = rfs_index_add_leaf(c->ix, &l, err);
			break;
		}
		case ROW_ITEM: {
			struct rfs_index_item it;
			memcpy(&it, p, sizeof(it));
			st = rfs_index_add_item(c->ix, &it, err);
			break;
		}
		case ROW_DIRENT: {
			struct rfs_index_dirent d;
			memcpy(&d, p, sizeof(d));
			st = rfs_index_add_dirent(c->ix, &d, err);
			break;
		}
		case ROW_CLAIM: {
			struct row_claim cl;
			memcpy(&cl, p, sizeof(cl));
			st = rfs_index_add_claim(c->ix, cl.first, cl.count, cl.block, cl.pos, cl.dir_id,
						 cl.objectid, cl.file_offset, err);
			break;
		}
		case ROW_INTERNAL:
			st = store_internal(c->ix, p, err);
			break;
		case ROW_NESTED: {
			struct row_nested rn;
			memcpy(&rn, p, sizeof(rn));
			rn.n.magic = rn.magic;
			st = rfs_index_add_nested(c->ix, &rn.n, err);
			break;
		}
		case ROW_UNREADABLE: {
			struct row_unreadable u;
			memcpy(&u, p, sizeof(u));
			st = rfs_index_add_unreadable(c->ix, u.block, u.error, err);
			break;
		}
		}
	}
	if (st)
		return st;
	add_counts(&c->n, &r->n);
	if (r->max_objectid > c->max_objectid)
		c->max_objectid = r->max_objectid;
	for (int h = 0; h < 3; h++)
		c->hash_votes[h] += r->hash_votes[h];
	return RFS_OK;
}

/*
 * dir.c - directory iteration, name lookup and path resolution.
 *
 * Contract: the rfs_dirent_fn callback must not move the cursor it was called
 * from (collect entries first, then look them up).
 */
#include "rfs/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/hash.h"

/* Walks the directory items of an object from key offset `from`, calling fn
 * per entry; stops when fn returns non-zero (*stopped set). */
static rfs_status walk_entries(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			       uint32_t from, rfs_dirent_fn fn, void *ctx, bool *stopped,
			       struct rfs_error *err)
{
	struct rfs_key start = { dir_id, objectid, from, RFS_TYPE_DIRENTRY };
	bool found;
	*stopped = false;
	rfs_status st = rfs_cursor_seek_object(cur, &start, &found, err);
	if (st || !found)
		return st;
	while (rfs_cursor_at_item(cur)) {
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(cur, &ih, &body);
		if (ih.key.dir_id != dir_id || ih.key.objectid != objectid)
			break;
		if (ih.key.type == RFS_TYPE_DIRENTRY) {
			for (int i = 0; i < ih.free_or_count; i++) {
				struct rfs_dirent de;
				rfs_dir_entry(body, ih.len, i, &de);
				if (fn(ctx, &de)) {
					*stopped = true;
					return RFS_OK;
				}
			}
		}
		st = rfs_cursor_next(cur, err);
		if (st)
			return st;
	}
	return RFS_OK;
}

rfs_status rfs_dir_iterate(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			   rfs_dirent_fn fn, void *ctx, struct rfs_error *err)
{
	bool stopped;
	return walk_entries(cur, dir_id, objectid, 0, fn, ctx, &stopped, err);
}

struct lookup_ctx {
	const uint8_t *name;
	size_t len;
	uint32_t lo, hi;             /* offset window, or 0..UINT32_MAX for a scan */
	bool found;
	uint32_t dir_id, objectid;
};

static int match_entry(void *c, const struct rfs_dirent *de)
{
	struct lookup_ctx *l = c;
	if (de->offset > l->hi)
		return 1;
	if (de->offset < l->lo)
		return 0;
	if (de->name_len == l->len && memcmp(de->name, l->name, l->len) == 0) {
		l->found = true;
		l->dir_id = de->dir_id;
		l->objectid = de->objectid;
		return 1;
	}
	return 0;
}

rfs_status rfs_dir_lookup(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			  const uint8_t *name, size_t len, uint32_t *out_dir_id,
			  uint32_t *out_objectid, struct rfs_error *err)
{
	struct lookup_ctx l = { .name = name, .len = len };
	bool stopped;
	rfs_status st;
	unsigned code = cur->fs->hash_code;
	if (code) {
		uint32_t h = rfs_hash_entry_offset(code, name, len);
		l.lo = h;
		l.hi = h <= 2 ? h : h + RFS_HASH_GEN_MASK;
		/* The entry sits in the last item whose key offset is <= h, or later. */
		struct rfs_key k = { dir_id, objectid, h, RFS_TYPE_DIRENTRY };
		st = rfs_cursor_seek(cur, &k, NULL, err);
		if (st)
			return st;
		uint32_t from = 0;
		if (rfs_cursor_at_item(cur)) {
			struct rfs_item_head ih;
			rfs_cursor_item(cur, &ih, NULL);
			if (ih.key.dir_id == dir_id && ih.key.objectid == objectid &&
			    ih.key.type == RFS_TYPE_DIRENTRY)
				from = (uint32_t)ih.key.offset;
		}
		st = walk_entries(cur, dir_id, objectid, from, match_entry, &l, &stopped, err);
		if (st)
			return st;
	}
	if (!l.found) {
		/* Unknown or wrong hash: fall back to a scan of the whole directory. */
		l.lo = 0;
		l.hi = UINT32_MAX;
		st = walk_entries(cur, dir_id, objectid, 0, match_entry, &l, &stopped, err);
		if (st)
			return st;
	}
	if (!l.found)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "no such name");
	*out_dir_id = l.dir_id;
	*out_objectid = l.objectid;
	return RFS_OK;
}

rfs_status rfs_path_resolve(struct rfs_cursor *cur, const char *path, struct rfs_object *out,
			    struct rfs_error *err)
{
	rfs_status st = rfs_object_get(cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, out, err);
	if (st)
		return st;
	const char *p = path;
	int depth = 0;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (!(n == 1 && p[0] == '.')) {
			if (++depth > RFS_PATH_MAX_DEPTH)
				return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
						     "path has more than %d components",
						     RFS_PATH_MAX_DEPTH);
			if (rfs_mode_type(out->sd.mode) != RFS_FT_DIR)
				return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
						     "'%.*s': a path component is not a directory",
						     (int)n, p);
			uint32_t d, o;
			st = rfs_dir_lookup(cur, out->dir_id, out->objectid, (const uint8_t *)p, n,
					    &d, &o, err);
			if (st) {
				if (st == RFS_ERR_NOT_FOUND && err)
					snprintf(err->msg, sizeof(err->msg), "'%.*s' not found",
						 (int)(n > 200 ? 200 : n), p);
				return st;
			}
			st = rfs_object_get(cur, d, o, out, err);
			if (st)
				return st;
		}
		p += n;
	}
	return RFS_OK;
}

struct collect_ctx {
	struct rfs_dirent_list *l;
	bool skip_dots, nomem;
};

static bool is_real_dot(const struct rfs_dirent *de)
{
	if (de->name_len == 1 && de->name[0] == '.')
		return de->offset == RFS_DOT_OFFSET;
	if (de->name_len == 2 && de->name[0] == '.' && de->name[1] == '.')
		return de->offset == RFS_DOTDOT_OFFSET;
	return false;
}

static int collect_one(void *ctx, const struct rfs_dirent *de)
{
	struct collect_ctx *c = ctx;
	struct rfs_dirent_list *l = c->l;
	if (c->skip_dots && is_real_dot(de))
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 32;
		struct rfs_dirent_copy *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv) {
			c->nomem = true;
			return 1;
		}
		l->v = nv;
		l->cap = ncap;
	}
	struct rfs_dirent_copy *e = &l->v[l->n];
	e->name = malloc(de->name_len ? de->name_len : 1);
	if (!e->name) {
		c->nomem = true;
		return 1;
	}
	memcpy(e->name, de->name, de->name_len);
	e->len = de->name_len;
	e->offset = de->offset;
	e->dir_id = de->dir_id;
	e->objectid = de->objectid;
	l->n++;
	return 0;
}

static int copy_cmp(const void *a, const void *b)
{
	const struct rfs_dirent_copy *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

void rfs_dirent_list_free(struct rfs_dirent_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

rfs_status rfs_dir_collect(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			   bool skip_dots, bool sort, struct rfs_dirent_list *out,
			   struct rfs_error *err)
{
	struct collect_ctx c = { out, skip_dots, false };
	rfs_status st = rfs_dir_iterate(cur, dir_id, objectid, collect_one, &c, err);
	if (c.nomem || st == RFS_ERR_NOMEM) {
		rfs_dirent_list_free(out);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory entries");
	}
	if (sort && out->n)
		qsort(out->v, out->n, sizeof(*out->v), copy_cmp);
	return st;
}

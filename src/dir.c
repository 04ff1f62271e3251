/*
 * dir.c - directory iteration, name lookup and path resolution.
 *
 * Contract: the rfs_dirent_fn callback must not move the cursor it was called
 * from (collect entries first, then look them up).
 */
#include "rfs/object.h"

#include <stdio.h>
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

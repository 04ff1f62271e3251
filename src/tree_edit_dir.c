/*
 * tree_edit_dir.c - directory entries through the tree-edit layer: adding a
 * name (hash offset with the lowest free generation, in the directory item
 * whose range holds it) and re-pointing an entry.  The directory's stat data
 * (size, link count) is the caller's to update.
 *
 * A directory item that would grow past half a block is split into two items
 * of about half its entries each; the second starts a leaf of its own, so two
 * items of one directory never sit side by side in one leaf (the kernel merges
 * such neighbours, and check calls them ITEMS_MERGEABLE).
 */
#include "tree_edit_int.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"
#include "rfs/hash.h"

/* The directory item of (d, o) with the greatest key offset <= off. */
static rfs_status dir_item_at(struct rfs_tedit *te, uint32_t d, uint32_t o, uint32_t off,
			      struct rfs_tedit_item *it, bool *found, struct rfs_error *err)
{
	struct rfs_key k = { d, o, off, RFS_TYPE_DIRENTRY };
	rfs_status st = rfs_tedit_seek(te, &k, it, found, err);
	if (st)
		return st;
	if (*found && (it->ih.key.dir_id != d || it->ih.key.objectid != o ||
		       it->ih.key.type != RFS_TYPE_DIRENTRY))
		*found = false;
	return RFS_OK;
}

/* Marks in used[] the generations taken by entries with hash h in item it,
 * and tells whether one of them is name. */
static void scan_item(const struct rfs_tedit_item *it, uint32_t h, const uint8_t *name,
		      uint16_t len, bool used[128], bool *exists)
{
	for (int e = 0; e < it->ih.free_or_count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(it->body, it->ih.len, e, &de);
		if (de.offset < h || de.offset > h + RFS_HASH_GEN_MASK)
			continue;
		used[de.offset - h] = true;
		if (de.name_len == len && memcmp(de.name, name, len) == 0)
			*exists = true;
	}
}

/* Decodes an item's entries as encoder input (exact slots), with room for one more. */
static struct rfs_dirent_in *entries_of(const struct rfs_tedit_item *it, size_t *n)
{
	size_t count = it->ih.free_or_count;
	struct rfs_dirent_in *v = calloc(count + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t e = 0; e < count; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(it->body, it->ih.len, (int)e, &de);
		v[e] = (struct rfs_dirent_in){ .offset = de.offset, .dir_id = de.dir_id,
					       .objectid = de.objectid, .state = de.state,
					       .name = de.name, .name_len = de.name_len,
					       .stored_len = de.stored_len };
		if (de.name_len == 0) {
			/* an all-NUL slot cannot be re-encoded as a name */
			free(v);
			return NULL;
		}
	}
	*n = count;
	return v;
}

rfs_status rfs_tedit_add_entry(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			       const uint8_t *name, uint16_t len, bool pad8, uint32_t to_dir_id,
			       uint32_t to_objectid, uint32_t *offset, uint32_t *bytes,
			       struct rfs_error *err)
{
	if (len == 0 || len > RFS_NAME_MAX_KERNEL || memchr(name, '/', len) || memchr(name, 0, len) ||
	    (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "not a name one can add");
	unsigned code = te->fs->hash_code;
	if (!code)
		return rfs_error_set(err, RFS_ERR_UNSUPPORTED, RFS_NO_BLOCK,
				     "the filesystem's hash is unknown");
	uint32_t h = rfs_hash_entry_offset(code, name, len);
	struct rfs_tedit_item it, other;
	if (rfs_tedit_item_alloc(te, &it) || rfs_tedit_item_alloc(te, &other)) {
		rfs_tedit_item_free(&it);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory item copy");
	}
	struct rfs_dirent_in *v = NULL;
	uint8_t *body = NULL;
	bool found, exists = false, used[128] = { false };
	rfs_status st = dir_item_at(te, dir_id, objectid, h, &it, &found, err);
	if (!st && !found)
		st = rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				   "directory [%u %u] has no items", dir_id, objectid);
	if (st)
		goto out;
	/* entries with this hash: in that item and in any later item that
	 * starts inside the hash's 128 generations */
	scan_item(&it, h, name, len, used, &exists);
	uint32_t at = h + RFS_HASH_GEN_MASK;
	while (!st) {
		st = dir_item_at(te, dir_id, objectid, at, &other, &found, err);
		if (st || !found || other.ih.key.offset <= it.ih.key.offset)
			break;
		scan_item(&other, h, name, len, used, &exists);
		at = (uint32_t)other.ih.key.offset - 1;
	}
	if (st)
		goto out;
	if (exists) {
		st = rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "the name exists already");
		goto out;
	}
	int gen = 0;
	while (gen <= RFS_HASH_GEN_MASK && used[gen])
		gen++;
	if (gen > RFS_HASH_GEN_MASK) {
		st = rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
				   "all 128 names with this hash are taken");
		goto out;
	}
	uint32_t off = h + (uint32_t)gen;
	st = dir_item_at(te, dir_id, objectid, off, &it, &found, err);
	if (st)
		goto out;
	size_t n;
	v = found ? entries_of(&it, &n) : NULL;
	if (!v) {
		st = rfs_error_set(err, found ? RFS_ERR_CORRUPT : RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				   "directory item of [%u %u] unusable", dir_id, objectid);
		goto out;
	}
	size_t pos = 0;
	while (pos < n && v[pos].offset < off)
		pos++;
	memmove(&v[pos + 1], &v[pos], (n - pos) * sizeof(*v));
	uint16_t slot = pad8 ? (uint16_t)((len + 7) / 8 * 8) : len;
	v[pos] = (struct rfs_dirent_in){ .offset = off, .dir_id = to_dir_id, .objectid = to_objectid,
					 .state = RFS_DEH_STATE_VISIBLE, .name = name,
					 .name_len = len, .stored_len = slot };
	n++;
	body = malloc(0x10000);
	if (!body) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory item");
		goto out;
	}
	size_t blen;
	if (rfs_dir_item_encode(v, n, RFS_KEY_V2, body, 0x10000, &blen)) {
		st = rfs_error_set(err, RFS_ERR_CORRUPT, RFS_NO_BLOCK,
				   "directory item of [%u %u] cannot be re-encoded", dir_id, objectid);
		goto out;
	}
	struct rfs_item_head ih = it.ih;
	if (blen <= te->bs / 2 || n < 2) {
		ih.len = (uint16_t)blen;
		ih.free_or_count = (uint16_t)n;
		st = rfs_tedit_replace(te, &ih, body, err);
	} else {
		/* two items of about half the entries each, in two leaves */
		size_t half = n / 2, l1, l2;
		uint8_t *body2 = malloc(0x10000);
		if (!body2) {
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory item");
			goto out;
		}
		if (rfs_dir_item_encode(v, half, RFS_KEY_V2, body, 0x10000, &l1) ||
		    rfs_dir_item_encode(v + half, n - half, RFS_KEY_V2, body2, 0x10000, &l2)) {
			free(body2);
			st = rfs_error_set(err, RFS_ERR_CORRUPT, RFS_NO_BLOCK,
					   "directory item of [%u %u] cannot be split", dir_id, objectid);
			goto out;
		}
		ih.len = (uint16_t)l1;
		ih.free_or_count = (uint16_t)half;
		st = rfs_tedit_replace(te, &ih, body, err);
		if (!st) {
			struct rfs_item_head ih2 = it.ih;
			ih2.key.offset = v[half].offset;
			ih2.len = (uint16_t)l2;
			ih2.free_or_count = (uint16_t)(n - half);
			st = rfs_tedit_insert(te, &ih2, body2, true, err);
		}
		free(body2);
	}
	if (!st) {
		if (offset)
			*offset = off;
		if (bytes)
			*bytes = RFS_DEH_SIZE + slot;
	}
out:
	free(v);
	free(body);
	rfs_tedit_item_free(&it);
	rfs_tedit_item_free(&other);
	return st;
}

rfs_status rfs_tedit_set_entry(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			       uint32_t deh_offset, uint32_t to_dir_id, uint32_t to_objectid,
			       struct rfs_error *err)
{
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory item copy");
	bool found, hit = false;
	rfs_status st = dir_item_at(te, dir_id, objectid, deh_offset, &it, &found, err);
	for (int e = 0; !st && found && !hit && e < it.ih.free_or_count; e++) {
		uint8_t *h = it.body + (size_t)e * RFS_DEH_SIZE;
		if (le32_at(h, DEH_OFFSET) != deh_offset)
			continue;
		le32_put(h, DEH_DIR_ID, to_dir_id);
		le32_put(h, DEH_OBJECTID, to_objectid);
		hit = true;
	}
	if (!st && !hit)
		st = rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				   "entry %u of [%u %u] not found", deh_offset, dir_id, objectid);
	if (!st)
		st = rfs_tedit_replace(te, &it.ih, it.body, err);
	rfs_tedit_item_free(&it);
	return st;
}

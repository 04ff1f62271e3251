/*
 * object.h - objects (files, directories, symlinks, ...) found through the
 * tree: stat data lookup, directory reading and name lookup, path resolution,
 * and streaming of a file's contents.
 *
 * Bounds that hold whatever the image says:
 *  - readdir visits each directory item once, in key order (tree.c guarantees
 *    increasing keys), and never more entries than the items hold;
 *  - a file body is streamed up to min(stat size, format limit); holes are
 *    reported as holes, never materialised in memory;
 *  - path resolution refuses more than RFS_PATH_MAX_DEPTH components.
 */
#ifndef RFS_OBJECT_H
#define RFS_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/tree.h"

enum { RFS_PATH_MAX_DEPTH = 4096 };

struct rfs_object {
	uint32_t dir_id, objectid;
	struct rfs_stat sd;
	uint64_t sd_block;           /* leaf holding the stat data */
};

enum rfs_file_type { RFS_FT_UNKNOWN, RFS_FT_REG, RFS_FT_DIR, RFS_FT_LNK, RFS_FT_FIFO,
		     RFS_FT_CHR, RFS_FT_BLK, RFS_FT_SOCK };

enum rfs_file_type rfs_mode_type(uint16_t mode);
const char *rfs_file_type_name(enum rfs_file_type t);   /* "file", "dir", ... */

/* Finds the stat data of (dir_id, objectid).  RFS_ERR_NOT_FOUND if absent. */
rfs_status rfs_object_get(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			  struct rfs_object *out, struct rfs_error *err);

/* Calls fn for every entry of directory (dir_id, objectid), "." and ".."
 * included, in hash order.  fn returns 0 to go on, non-zero to stop. */
typedef int (*rfs_dirent_fn)(void *ctx, const struct rfs_dirent *de);
rfs_status rfs_dir_iterate(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			   rfs_dirent_fn fn, void *ctx, struct rfs_error *err);

/* A directory's entries copied out of the tree, so that the cursor can move
 * while they are used (rfs_dir_iterate's callback cannot). */
struct rfs_dirent_copy {
	uint8_t *name;
	uint16_t len;
	uint32_t offset, dir_id, objectid;
};
struct rfs_dirent_list {
	struct rfs_dirent_copy *v;
	size_t n, cap;
};

/* Collects the entries of directory (dir_id, objectid) into out (which starts
 * empty), leaving out the real "." and ".." (name and offset 1 / 2) when
 * skip_dots, sorted by name bytes when sort.  On RFS_ERR_NOMEM out is emptied;
 * on any other error out keeps the entries read before it.  The caller frees
 * out with rfs_dirent_list_free in every case. */
rfs_status rfs_dir_collect(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			   bool skip_dots, bool sort, struct rfs_dirent_list *out,
			   struct rfs_error *err);
void rfs_dirent_list_free(struct rfs_dirent_list *l);

/* Looks name up in a directory: by its hash under fs->hash_code, then (if the
 * hash is unknown or gives nothing) by a full scan.  Fills the two out values. */
rfs_status rfs_dir_lookup(struct rfs_cursor *cur, uint32_t dir_id, uint32_t objectid,
			  const uint8_t *name, size_t len, uint32_t *out_dir_id,
			  uint32_t *out_objectid, struct rfs_error *err);

/* Resolves an absolute or root-relative path ("/", "/a/b", "a/b") without
 * following symlinks.  Empty components and "." are skipped. */
rfs_status rfs_path_resolve(struct rfs_cursor *cur, const char *path, struct rfs_object *out,
			    struct rfs_error *err);

/* Streams the body of an object in file order.  For each piece, fn gets the
 * file offset and either data (len bytes) or data == NULL for a hole.  Pieces
 * are contiguous and cover [0, size) exactly.  fn returns 0 to go on. */
typedef int (*rfs_data_fn)(void *ctx, uint64_t off, const uint8_t *data, size_t len);
struct rfs_read_stats {
	uint64_t data_blocks, holes, direct_bytes;
};
rfs_status rfs_object_read(struct rfs_cursor *cur, const struct rfs_object *obj,
			   rfs_data_fn fn, void *ctx, struct rfs_read_stats *stats,
			   struct rfs_error *err);

/* Reads a whole small object (a symlink target) into out, holes as zeros;
 * RFS_ERR_LIMIT when its size is above max.  out is appended to. */
struct strbuf;
rfs_status rfs_object_read_small(struct rfs_cursor *cur, const struct rfs_object *obj,
				 size_t max, struct strbuf *out, struct rfs_error *err);

/* The largest size the format allows for an object with this stat version. */
uint64_t rfs_max_file_size(const struct rfs_fs *fs, int sd_version);

#endif

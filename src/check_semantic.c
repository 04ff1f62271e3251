/*
 * check_semantic.c - pass "namespace": walks the directories from the root.
 *
 * Checks: the root exists and is a directory; "." and ".." of every directory;
 * every entry names an object with a stat data; each directory is reached once
 * (no cycles, no hard links to directories); then, per object, link count
 * against the names found, file size against the body items, directory size
 * against its entries; objects that no name reaches (orphans) unless a safe
 * link says they were open and unlinked.
 * Relies on: pass tree (c->objects) and a tree without bad nodes; skipped
 * otherwise, as reiserfsck does.  Uses the tree cursor to read directories.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/object.h"
#include "rfs/strbuf.h"
#include "rfs/tree.h"

struct sem {
	struct rfs_check *c;
	struct rfs_cursor cur;
	struct strbuf path;
	int depth;
};

/* Reports a problem at the current path; true = repair it now. */
static bool report_at(struct sem *s, enum rfs_problem_code code, uint32_t d, uint32_t o,
		      uint64_t expected, uint64_t found)
{
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.path = s->path.len ? sb_str(&s->path) : "/";
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ d, o, 0, RFS_TYPE_STAT };
	ctx.expected = expected;
	ctx.found = found;
	return problem_report(s->c->rep, code, &ctx);
}

/* Sets a stat data field after a "fix" answer; a failed repair leaves the
 * problem counted as unfixed, but an operational error stops the run. */
static rfs_status fix_stat(struct sem *s, enum rfs_problem_code code, uint32_t d, uint32_t o,
			   enum repair_sd_field field, uint64_t value)
{
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_status st = repair_stat_field(s->c, &s->cur, d, o, field, value, &e);
	if (st == RFS_OK)
		problem_fixed(s->c->rep, code);
	return st == RFS_ERR_NOT_FOUND || st == RFS_ERR_CORRUPT ? RFS_OK : st;
}

/* Size checks of a regular file or symlink, at the path that first reaches it. */
static rfs_status check_file_size(struct sem *s, struct rfs_objinfo *o)
{
	if (o->flags & (RFS_OBJ_ITEMS_BAD | RFS_OBJ_SAFELINK))
		return RFS_OK;
	enum rfs_file_type t = rfs_mode_type(o->mode);
	if (t != RFS_FT_REG && t != RFS_FT_LNK)
		return RFS_OK;
	/* The items may end up to one block past the size (last block partly
	 * used), or up to 7 bytes past it for a padded 3.6 tail; a size beyond
	 * the items is a sparse end and allowed. */
	uint64_t slack = (o->flags & RFS_OBJ_HAS_DIRECT) ? (o->sd_version == 2 ? 7 : 0)
							  : s->c->fs->bs - 1;
	/* A symlink is exactly its bytes: a size beyond them is wrong too
	 * (reiserfsck's "too big size"); a regular file may be sparse at the end. */
	bool wrong = o->body_end > o->size + slack ||
		     (t == RFS_FT_LNK && o->size > o->body_end) ||
		     o->size > rfs_max_file_size(s->c->fs, o->sd_version);   /* no such file */
	if (wrong &&
	    report_at(s, PR_FILE_SIZE_WRONG, o->dir_id, o->objectid, o->body_end, o->size)) {
		rfs_status st = fix_stat(s, PR_FILE_SIZE_WRONG, o->dir_id, o->objectid,
					 SD_FIELD_SIZE, o->body_end);
		if (!st)
			o->size = o->body_end;   /* the block count rule reads it next */
		return st;
	}
	return RFS_OK;
}

static rfs_status walk_dir(struct sem *s, struct rfs_objinfo *dir, uint32_t parent_d,
			   uint32_t parent_o)
{
	struct rfs_check *c = s->c;
	dir->flags |= RFS_OBJ_ENTERED;
	if (dir->dir_bytes != dir->size &&
	    report_at(s, PR_DIR_SIZE_WRONG, dir->dir_id, dir->objectid, dir->dir_bytes, dir->size)) {
		rfs_status fs = fix_stat(s, PR_DIR_SIZE_WRONG, dir->dir_id, dir->objectid,
					 SD_FIELD_SIZE, dir->dir_bytes);
		if (fs)
			return fs;
		dir->size = dir->dir_bytes;   /* the block count rule reads it next */
	}
	if (++s->depth > RFS_PATH_MAX_DEPTH) {
		s->depth--;
		return RFS_OK;
	}
	uint32_t dd = dir->dir_id, dobj = dir->objectid;
	struct rfs_dirent_list e = { 0 };
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_dir_collect(&s->cur, dd, dobj, false, false, &e, &err);
	if (st == RFS_ERR_NOMEM)
		return st;
	uint32_t subdirs = 0;
	uint64_t removed = 0;        /* directory bytes of the names removed */
	size_t base = s->path.len;
	for (size_t i = 0; i < e.n && !rfs_reporter_exhausted(c->rep); i++) {
		struct rfs_dirent_copy *x = &e.v[i];
		bool dot = x->len == 1 && x->name[0] == '.';
		bool dotdot = x->len == 2 && x->name[0] == '.' && x->name[1] == '.';
		if (dot || dotdot) {
			uint32_t wd = dot ? dd : parent_d, wo = dot ? dobj : parent_o;
			enum rfs_problem_code code = dot ? PR_DOT_WRONG : PR_DOTDOT_WRONG;
			if ((x->dir_id != wd || x->objectid != wo) &&
			    report_at(s, code, x->dir_id, x->objectid, 0, 0)) {
				struct rfs_error re;
				rfs_error_clear(&re);
				if (repair_dot_entry(c, &s->cur, dd, dobj, x->offset, wd, wo, &re) == RFS_OK)
					problem_fixed(c->rep, code);
			}
			continue;
		}
		sb_truncate(&s->path, base);
		if (sb_add(&s->path, "/", 1) || sb_add(&s->path, x->name, x->len)) {
			st = RFS_ERR_NOMEM;
			break;
		}
		struct rfs_objinfo *t = rfs_objtab_find(&c->objects, x->dir_id, x->objectid);
		bool nowhere = !t || !(t->flags & RFS_OBJ_HAS_SD);
		bool is_dir = !nowhere && rfs_mode_type(t->mode) == RFS_FT_DIR;
		if (nowhere || (is_dir && (t->flags & RFS_OBJ_REACHED))) {
			/* a name to nothing, or a second name of a directory (a
			 * loop or a hard link to a directory): the name goes */
			enum rfs_problem_code code = nowhere ? PR_ENTRY_POINTS_NOWHERE : PR_DIR_LOOP;
			if (report_at(s, code, x->dir_id, x->objectid, 0, 0)) {
				struct rfs_error re;
				rfs_error_clear(&re);
				uint32_t freed = 0;
				rfs_status rs = repair_remove_entry(c, &s->cur, dd, dobj, x->offset, &freed, &re);
				if (rs == RFS_ERR_NOMEM) {
					st = rs;
					break;
				}
				if (!rs) {
					problem_fixed(c->rep, code);
					removed += freed;
				}
			}
			continue;
		}
		t->names++;
		if (is_dir)
			subdirs++;
		if (t->flags & RFS_OBJ_REACHED)
			continue;
		t->flags |= RFS_OBJ_REACHED;
		if (is_dir) {
			st = walk_dir(s, t, dd, dobj);
			if (st)
				break;
		} else {
			st = check_file_size(s, t);
			if (st)
				break;
		}
	}
	sb_truncate(&s->path, base);
	rfs_dirent_list_free(&e);
	if (!st && removed) {
		/* the directory's size follows the names it lost */
		struct rfs_objinfo *me = rfs_objtab_find(&c->objects, dd, dobj);
		if (me && me->dir_bytes >= removed) {
			me->dir_bytes -= removed;
			struct rfs_error re;
			rfs_error_clear(&re);
			if (repair_stat_field(c, &s->cur, dd, dobj, SD_FIELD_SIZE, me->dir_bytes, &re) == RFS_OK)
				me->size = me->dir_bytes;
		}
	}
	/* A directory's link count is 2 plus its subdirectories; reiserfs stores
	 * 1 when that would overflow. */
	struct rfs_objinfo *self = rfs_objtab_find(&c->objects, dd, dobj);
	if (self)
		self->names = 2 + subdirs;
	s->depth--;
	return st;
}

/* The stat data's block count, in 512-byte units, as reiserfsck computes it:
 * a regular file counts each non-zero pointer and its tail (if any) as one
 * block; directories and symlinks count their size rounded up; other 3.6
 * objects count nothing (3.5 devices keep rdev in that field). */
static rfs_status check_blocks(struct sem *s, const struct rfs_objinfo *o)
{
	struct rfs_check *c = s->c;
	if (o->flags & (RFS_OBJ_ITEMS_BAD | RFS_OBJ_SAFELINK))
		return RFS_OK;
	uint64_t per = c->fs->bs / 512, want;
	switch (rfs_mode_type(o->mode)) {
	case RFS_FT_REG:
		want = (o->unfm + ((o->flags & RFS_OBJ_HAS_DIRECT) ? 1 : 0)) * per;
		break;
	case RFS_FT_DIR:
	case RFS_FT_LNK:
		want = (o->size + 511) / 512;
		break;
	default:
		if (o->sd_version == 1)
			return RFS_OK;
		want = 0;
		break;
	}
	if (want == o->blocks)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
	ctx.expected = want;
	ctx.found = o->blocks;
	if (problem_report(c->rep, PR_BLOCKS_WRONG, &ctx))
		return fix_stat(s, PR_BLOCKS_WRONG, o->dir_id, o->objectid, SD_FIELD_BLOCKS, want);
	return RFS_OK;
}

/* 3.5 stat data say where the tail starts: the first direct item's offset
 * for files and symlinks that have one, 0xFFFFFFFF for everything else. */
static rfs_status check_first_direct(struct sem *s, const struct rfs_objinfo *o)
{
	if (o->sd_version != 1 || (o->flags & (RFS_OBJ_ITEMS_BAD | RFS_OBJ_SAFELINK)))
		return RFS_OK;
	enum rfs_file_type t = rfs_mode_type(o->mode);
	uint32_t want = (t == RFS_FT_REG || t == RFS_FT_LNK) && o->first_direct &&
			o->first_direct <= 0xFFFFFFFEu ? (uint32_t)o->first_direct : 0xFFFFFFFFu;
	if (want == o->sd_first_direct)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
	ctx.expected = want;
	ctx.found = o->sd_first_direct;
	if (problem_report(s->c->rep, PR_FIRST_DIRECT_BYTE_WRONG, &ctx))
		return fix_stat(s, PR_FIRST_DIRECT_BYTE_WRONG, o->dir_id, o->objectid,
				SD_FIELD_FIRST_DIRECT, want);
	return RFS_OK;
}

/* The tree pass found every item of the object disagreeing with its stat
 * data's type (finish_object in check_tree.c): a directory mode over file
 * bodies becomes a regular file's, a file mode over names a directory's; the
 * permission bits stay.  The record takes the new mode whether or not it is
 * written, so the walk and the counts judge the object by what it holds. */
static rfs_status check_mode(struct sem *s, struct rfs_objinfo *o)
{
	bool was_dir = rfs_mode_type(o->mode) == RFS_FT_DIR;
	uint16_t want = (uint16_t)((was_dir ? 0100000 : 0040000) | (o->mode & 07777));
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
	ctx.found = o->mode;
	ctx.expected = want;
	ctx.detail = was_dir ? "directory" : "regular file";
	rfs_status st = RFS_OK;
	if (problem_report(s->c->rep, PR_MODE_WRONG, &ctx))
		st = fix_stat(s, PR_MODE_WRONG, o->dir_id, o->objectid, SD_FIELD_MODE, want);
	o->mode = want;
	return st;
}

rfs_status check_pass_semantic(struct rfs_check *c, struct rfs_error *err)
{
	if (c->bad_nodes) {
		c->skipped_semantic = true;
		return RFS_OK;
	}
	struct sem s = { .c = c, .path = STRBUF_INIT };
	rfs_status st = rfs_cursor_init(c->fs, &s.cur, err);
	if (st)
		return st;
	/* Types first: the namespace walk must see every directory as one. */
	for (size_t i = 0; i < c->objects.count && !st; i++)
		if (rfs_objtab_at(&c->objects, i)->flags & RFS_OBJ_MODE_FROM_ITEMS)
			st = check_mode(&s, rfs_objtab_at(&c->objects, i));
	struct rfs_objinfo *root = rfs_objtab_find(&c->objects, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID);
	if (st) {
		rfs_cursor_free(&s.cur);
		return rfs_error_set(err, st, RFS_NO_BLOCK, "stat data mode");
	}
	if (!root || !(root->flags & RFS_OBJ_HAS_SD)) {
		rfs_cursor_free(&s.cur);
		report_at(&s, PR_ROOT_MISSING, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, 0, 0);
		return RFS_OK;
	}
	if (rfs_mode_type(root->mode) != RFS_FT_DIR) {
		report_at(&s, PR_ROOT_NOT_DIR, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, 040000, root->mode);
		rfs_cursor_free(&s.cur);
		return RFS_OK;
	}
	root->flags |= RFS_OBJ_REACHED;
	st = walk_dir(&s, root, 0, RFS_ROOT_PARENT_OBJECTID);
	if (st == RFS_OK) {
		for (size_t i = 0; i < c->objects.count && !rfs_reporter_exhausted(c->rep); i++) {
			struct rfs_objinfo *o = rfs_objtab_at(&c->objects, i);
			if (!(o->flags & RFS_OBJ_HAS_SD))
				continue;
			if (!(o->flags & RFS_OBJ_REACHED)) {
				if (!(o->flags & RFS_OBJ_SAFELINK)) {
					struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
					ctx.has_key = true;
					ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
					problem_report(c->rep, PR_ORPHAN_OBJECT, &ctx);
				}
				continue;
			}
			if ((st = check_blocks(&s, o)))
				break;
			if ((st = check_first_direct(&s, o)))
				break;
			bool is_dir = rfs_mode_type(o->mode) == RFS_FT_DIR;
			/* mkreiserfs gives the root one link more than other directories
			 * (its ".." names the virtual object [0 1]); older versions did not. */
			bool is_root = o->dir_id == RFS_ROOT_DIR_ID && o->objectid == RFS_ROOT_OBJECTID;
			if (is_root && o->nlink == o->names + 1)
				continue;
			if (o->nlink != o->names && !(is_dir && o->nlink == 1) &&
			    !(o->flags & RFS_OBJ_SAFELINK)) {
				struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
				ctx.has_key = true;
				ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
				/* a wrong root count gets the current mkreiserfs's
				 * names + 1, which the kernel keeps */
				uint32_t want = is_root ? o->names + 1 : o->names;
				ctx.expected = want;
				ctx.found = o->nlink;
				if (problem_report(c->rep, PR_NLINK_WRONG, &ctx) &&
				    (st = fix_stat(&s, PR_NLINK_WRONG, o->dir_id, o->objectid,
						   SD_FIELD_NLINK, want)))
					break;
			}
		}
	}
	if (st)
		rfs_error_set(err, st, RFS_NO_BLOCK, "namespace walk");
	rfs_cursor_free(&s.cur);
	sb_free(&s.path);
	return st;
}

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
#include "check_rules.h"

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

/* Size checks of a regular file or symlink, at the path that first reaches
 * it.  An object without a body passed this rule in the tree pass. */
static rfs_status check_file_size(struct sem *s, struct rfs_objinfo *o)
{
	struct rfs_objbody *b = rfs_objtab_body(&s->c->objects, o);
	if (b && check_rule_size_wrong(s->c->fs, o, b) &&
	    report_at(s, PR_FILE_SIZE_WRONG, o->dir_id, o->objectid, b->body_end, b->size)) {
		rfs_status st = fix_stat(s, PR_FILE_SIZE_WRONG, o->dir_id, o->objectid,
					 SD_FIELD_SIZE, b->body_end);
		if (!st)
			b->size = b->body_end;   /* the block count rule reads it next */
		return st;
	}
	return RFS_OK;
}

static rfs_status walk_dir(struct sem *s, struct rfs_objinfo *dir, uint32_t parent_d,
			   uint32_t parent_o)
{
	struct rfs_check *c = s->c;
	dir->flags |= RFS_OBJ_ENTERED;
	struct rfs_objbody *db = rfs_objtab_body(&c->objects, dir);   /* directories keep theirs */
	if (db && db->dir_bytes != db->size &&
	    report_at(s, PR_DIR_SIZE_WRONG, dir->dir_id, dir->objectid, db->dir_bytes, db->size)) {
		rfs_status fs = fix_stat(s, PR_DIR_SIZE_WRONG, dir->dir_id, dir->objectid,
					 SD_FIELD_SIZE, db->dir_bytes);
		if (fs)
			return fs;
		db->size = db->dir_bytes;   /* the block count rule reads it next */
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
		struct rfs_objbody *mb = me ? rfs_objtab_body(&c->objects, me) : NULL;
		if (mb && mb->dir_bytes >= removed) {
			mb->dir_bytes -= removed;
			struct rfs_error re;
			rfs_error_clear(&re);
			if (repair_stat_field(c, &s->cur, dd, dobj, SD_FIELD_SIZE, mb->dir_bytes, &re) == RFS_OK)
				mb->size = mb->dir_bytes;
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

/* The stat data's block count (check_rules.c says what it should be). */
static rfs_status check_blocks(struct sem *s, const struct rfs_objinfo *o,
			       const struct rfs_objbody *b)
{
	uint64_t want;
	if (!check_rule_blocks_want(s->c->fs, o, b, &want) || want == b->blocks)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
	ctx.expected = want;
	ctx.found = b->blocks;
	if (problem_report(s->c->rep, PR_BLOCKS_WRONG, &ctx))
		return fix_stat(s, PR_BLOCKS_WRONG, o->dir_id, o->objectid, SD_FIELD_BLOCKS, want);
	return RFS_OK;
}

/* A 3.5 stat data's first direct byte (check_rules.c). */
static rfs_status check_first_direct(struct sem *s, const struct rfs_objinfo *o,
				     const struct rfs_objbody *b)
{
	uint32_t want;
	if (!check_rule_first_direct_want(o, b, &want) || want == b->sd_first_direct)
		return RFS_OK;
	struct rfs_problem_ctx ctx = rfs_problem_ctx_none();
	ctx.has_key = true;
	ctx.key = (struct rfs_key){ o->dir_id, o->objectid, 0, RFS_TYPE_STAT };
	ctx.expected = want;
	ctx.found = b->sd_first_direct;
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
			/* without a body it passed both in the tree pass */
			const struct rfs_objbody *b = rfs_objtab_body(&c->objects, o);
			if (b && (st = check_blocks(&s, o, b)))
				break;
			if (b && (st = check_first_direct(&s, o, b)))
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

/*
 * repair_relink.c - `rfsck fix --relink`: objects that no name reaches
 * (ORPHAN_OBJECT) get a name in /lost+found, "<dirid>_<objectid>" as
 * reiserfsck's lost+found pass names them.
 *
 * Which orphans get a name: an orphan directory's entries may name other
 * orphans; those are reached through it once it is linked, so only orphans
 * that no orphan directory names are linked (in key order), then, for rings
 * of orphan directories naming each other, the first of each ring still
 * unreached.  Every orphan that becomes reachable counts as fixed.
 * /lost+found is made when the root has no such name: a directory [2 X]
 * with X the first free objectid of the map (as the kernel allocates), mode
 * 0700, "." and ".." stored like the root's own, stat data of the root's
 * version, and the root's times (fix writes no clock time, so a run is
 * reproducible byte for byte).  Link counts: the root gains one for
 * /lost+found, /lost+found one per directory linked into it; a linked
 * directory's ".." names /lost+found and its count is 2 + its
 * subdirectories; a linked file has exactly its new name (count 1).  Sizes
 * and block counts of the directories that gain names follow.
 * Each creation and each link is one commit.
 */
#include "repair_tree.h"

#include <stdlib.h>
#include <string.h>

#include "rfs/object.h"

struct orphan {
	uint32_t d, o;
	bool dir;
	bool named;                  /* an orphan directory has a name for it */
	bool reached;                /* linked, or reachable through a linked one */
	bool failed;                 /* its link was refused: not tried again */
};

struct relink {
	struct rfs_check *c;
	struct rfs_tedit *te;
	const struct repair_tree_opts *opt;
	struct rfs_cursor cur;
	struct orphan *v;
	size_t n;
	uint32_t lf_d, lf_o;         /* /lost+found */
};

static int cmp_orphan(const void *a, const void *b)
{
	const struct orphan *x = a, *y = b;
	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return (x->o > y->o) - (x->o < y->o);
}

static struct orphan *find_orphan(const struct relink *r, uint32_t d, uint32_t o)
{
	struct orphan key = { .d = d, .o = o };
	return bsearch(&key, r->v, r->n, sizeof(*r->v), cmp_orphan);
}

static bool is_dir_object(const struct rfs_check *c, uint32_t d, uint32_t o)
{
	const struct rfs_objinfo *x = rfs_objtab_find(&c->objects, d, o);
	return x && (x->flags & RFS_OBJ_HAS_SD) && rfs_mode_type(x->mode) == RFS_FT_DIR;
}

/* The orphans the semantic pass reported: a stat data, no name reached it,
 * and no safe link explains it. */
static rfs_status collect(struct relink *r, struct rfs_error *err)
{
	const struct rfs_objtab *t = &r->c->objects;
	r->v = calloc(t->count + 1, sizeof(*r->v));
	if (!r->v)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "orphan list");
	for (size_t i = 0; i < t->count; i++) {
		const struct rfs_objinfo *x = rfs_objtab_at(t, i);
		if ((x->flags & RFS_OBJ_HAS_SD) && !(x->flags & (RFS_OBJ_REACHED | RFS_OBJ_SAFELINK)))
			r->v[r->n++] = (struct orphan){ .d = x->dir_id, .o = x->objectid,
							.dir = rfs_mode_type(x->mode) == RFS_FT_DIR };
	}
	qsort(r->v, r->n, sizeof(*r->v), cmp_orphan);
	return RFS_OK;
}

/* Marks the orphans that an orphan directory names. */
static rfs_status mark_named(struct relink *r, struct rfs_error *err)
{
	for (size_t i = 0; i < r->n; i++) {
		if (!r->v[i].dir)
			continue;
		struct rfs_dirent_list l = { 0 };
		struct rfs_error e;
		rfs_error_clear(&e);
		rfs_status st = rfs_dir_collect(&r->cur, r->v[i].d, r->v[i].o, true, false, &l, &e);
		if (st == RFS_ERR_NOMEM) {
			rfs_dirent_list_free(&l);
			return rfs_error_set(err, st, RFS_NO_BLOCK, "directory entries");
		}
		for (size_t k = 0; k < l.n; k++) {
			struct orphan *t = find_orphan(r, l.v[k].dir_id, l.v[k].objectid);
			if (t && t != &r->v[i])
				t->named = true;
		}
		rfs_dirent_list_free(&l);
	}
	return RFS_OK;
}

/* Finds /lost+found, or makes it.  RFS_ERR_INVALID when the name exists but
 * is not a directory. */
static rfs_status lost_found(struct relink *r, struct rfs_error *err)
{
	static const uint8_t name[] = "lost+found";
	struct rfs_tedit *te = r->te;
	struct rfs_error e;
	rfs_error_clear(&e);
	uint32_t d, o;
	rfs_status st = rfs_dir_lookup(&r->cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, name,
				       sizeof(name) - 1, &d, &o, &e);
	if (st == RFS_OK) {
		struct rfs_stat sd;
		bool found;
		st = repair_tree_get_sd(te, d, o, &sd, &found, err);
		if (st)
			return st;
		if (!found || rfs_mode_type(sd.mode) != RFS_FT_DIR)
			return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
					     "/lost+found exists and is not a directory");
		r->lf_d = d;
		r->lf_o = o;
		return RFS_OK;
	}
	if (st != RFS_ERR_NOT_FOUND)
		return rfs_error_set(err, st, e.block, "%s", e.msg);

	/* make it: stat data and "." ".." like the root's, then its name */
	struct rfs_stat root;
	bool found;
	st = repair_tree_get_sd(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, &root, &found, err);
	if (st)
		return st;
	if (!found)
		return rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "no root stat data");
	bool v2 = root.version == 2;
	uint16_t dot = v2 ? 8 : 1, dotdot = v2 ? 8 : 2;
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "item copy");
	struct rfs_key rk = { RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, RFS_DOT_OFFSET, RFS_TYPE_DIRENTRY };
	st = rfs_tedit_seek(te, &rk, &it, &found, err);
	if (!st && found && rfs_key_cmp(&it.ih.key, &rk) == 0 && it.ih.free_or_count >= 2) {
		struct rfs_dirent a, b;
		rfs_dir_entry(it.body, it.ih.len, 0, &a);
		rfs_dir_entry(it.body, it.ih.len, 1, &b);
		if (a.offset == RFS_DOT_OFFSET && b.offset == RFS_DOTDOT_OFFSET &&
		    a.stored_len >= 1 && b.stored_len >= 2) {
			dot = a.stored_len;
			dotdot = b.stored_len;
		}
	}
	rfs_tedit_item_free(&it);
	if (st)
		return st;
	uint32_t lo;
	st = rfs_tedit_alloc_objectid(te, &lo, err);
	if (st)
		return st;
	const uint32_t ld = RFS_ROOT_OBJECTID;
	struct rfs_dirent_in dots[2] = {
		{ .offset = RFS_DOT_OFFSET, .dir_id = ld, .objectid = lo,
		  .state = RFS_DEH_STATE_VISIBLE, .name = (const uint8_t *)".", .name_len = 1,
		  .stored_len = dot },
		{ .offset = RFS_DOTDOT_OFFSET, .dir_id = RFS_ROOT_DIR_ID, .objectid = RFS_ROOT_OBJECTID,
		  .state = RFS_DEH_STATE_VISIBLE, .name = (const uint8_t *)"..", .name_len = 2,
		  .stored_len = dotdot },
	};
	uint8_t dbody[64], sbody[RFS_SD_V2_SIZE];
	size_t dlen, slen;
	if (rfs_dir_item_encode(dots, 2, RFS_KEY_V2, dbody, sizeof(dbody), &dlen))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "\".\" and \"..\" of /lost+found");
	struct rfs_stat sd = { .version = root.version, .mode = 040700, .nlink = 2, .size = dlen,
			       .atime = root.atime, .mtime = root.mtime, .ctime = root.ctime,
			       .blocks = (uint32_t)((dlen + 511) / 512),
			       .first_direct_byte = UINT32_MAX };
	if (rfs_stat_encode(&sd, sbody, sizeof(sbody), &slen))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "stat data of /lost+found");
	struct rfs_item_head sih = { .key = { ld, lo, 0, RFS_TYPE_STAT }, .free_or_count = 0xFFFF,
				     .len = (uint16_t)slen, .key_format = v2 ? RFS_KEY_V2 : RFS_KEY_V1 };
	/* directory items have 3.5 keys in both formats, as the kernel writes them */
	struct rfs_item_head dih = { .key = { ld, lo, RFS_DOT_OFFSET, RFS_TYPE_DIRENTRY },
				     .free_or_count = 2, .len = (uint16_t)dlen,
				     .key_format = RFS_KEY_V1 };
	uint32_t bytes = 0;
	st = rfs_tedit_insert(te, &sih, sbody, false, err);
	if (!st)
		st = rfs_tedit_insert(te, &dih, dbody, false, err);
	if (!st)
		st = rfs_tedit_add_entry(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, name, sizeof(name) - 1,
					 v2, ld, lo, NULL, &bytes, err);
	if (!st) {
		if (root.nlink != 1)
			root.nlink++;
		root.size += bytes;
		root.blocks = (uint32_t)((root.size + 511) / 512);
		st = repair_tree_put_sd(te, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, &root, err);
	}
	if (!st)
		st = rfs_tedit_commit(te, err);
	if (st)
		return st;
	r->lf_d = ld;
	r->lf_o = lo;
	repair_tree_note(r->opt, "created /lost+found [%u %u]", ld, lo);
	return RFS_OK;
}

/* Counts the subdirectories a directory names (its link count is 2 + that). */
static rfs_status count_subdirs(struct relink *r, uint32_t d, uint32_t o, uint32_t *n,
				struct rfs_error *err)
{
	struct rfs_dirent_list l = { 0 };
	struct rfs_error e;
	rfs_error_clear(&e);
	*n = 0;
	rfs_status st = rfs_dir_collect(&r->cur, d, o, true, false, &l, &e);
	if (st == RFS_ERR_NOMEM) {
		rfs_dirent_list_free(&l);
		return rfs_error_set(err, st, RFS_NO_BLOCK, "directory entries");
	}
	for (size_t k = 0; k < l.n; k++)
		if (is_dir_object(r->c, l.v[k].dir_id, l.v[k].objectid))
			(*n)++;
	rfs_dirent_list_free(&l);
	return RFS_OK;
}

/* Names orphan x in /lost+found, in one commit. */
static rfs_status link_one(struct relink *r, struct orphan *x, struct rfs_error *err)
{
	struct rfs_tedit *te = r->te;
	char name[32];
	int len = snprintf(name, sizeof(name), "%u_%u", x->d, x->o);
	uint32_t subdirs = 0;
	rfs_status st = x->dir ? count_subdirs(r, x->d, x->o, &subdirs, err) : RFS_OK;
	struct rfs_stat lf, sd;
	bool found_lf, found;
	if (!st)
		st = repair_tree_get_sd(te, r->lf_d, r->lf_o, &lf, &found_lf, err);
	if (!st)
		st = repair_tree_get_sd(te, x->d, x->o, &sd, &found, err);
	if (!st && (!found_lf || !found))
		st = rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK, "stat data vanished");
	uint32_t bytes = 0;
	if (!st)
		st = rfs_tedit_add_entry(te, r->lf_d, r->lf_o, (const uint8_t *)name, (uint16_t)len,
					 lf.version == 2, x->d, x->o, NULL, &bytes, err);
	if (!st) {
		lf.size += bytes;
		lf.blocks = (uint32_t)((lf.size + 511) / 512);
		if (x->dir && lf.nlink != 1)
			lf.nlink++;
		st = repair_tree_put_sd(te, r->lf_d, r->lf_o, &lf, err);
	}
	uint32_t want = x->dir ? 2 + subdirs : 1;
	if (!st && x->dir)
		st = rfs_tedit_set_entry(te, x->d, x->o, RFS_DOTDOT_OFFSET, r->lf_d, r->lf_o, err);
	if (!st && sd.nlink != want && !(x->dir && sd.nlink == 1)) {
		sd.nlink = want;
		st = repair_tree_put_sd(te, x->d, x->o, &sd, err);
	}
	if (!st)
		st = rfs_tedit_commit(te, err);
	if (!st)
		repair_tree_note(r->opt, "[%u %u] linked as /lost+found/%s%s", x->d, x->o, name,
				 x->dir ? " (its \"..\" names /lost+found)" : "");
	return st;
}

/* Marks x and what its directory tree reaches as reached, each orphan once. */
static rfs_status mark_reached(struct relink *r, struct orphan *x, struct rfs_error *err)
{
	size_t cap = r->n + 1, head = 0, tail = 0;
	struct orphan **q = malloc(cap * sizeof(*q));
	if (!q)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "relink queue");
	x->reached = true;
	problem_fixed(r->c->rep, PR_ORPHAN_OBJECT);
	q[tail++] = x;
	rfs_status st = RFS_OK;
	while (head < tail && !st) {
		struct orphan *y = q[head++];
		if (!y->dir)
			continue;
		struct rfs_dirent_list l = { 0 };
		struct rfs_error e;
		rfs_error_clear(&e);
		if (rfs_dir_collect(&r->cur, y->d, y->o, true, false, &l, &e) == RFS_ERR_NOMEM)
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory entries");
		for (size_t k = 0; !st && k < l.n; k++) {
			struct orphan *t = find_orphan(r, l.v[k].dir_id, l.v[k].objectid);
			if (!t || t->reached)
				continue;
			t->reached = true;
			problem_fixed(r->c->rep, PR_ORPHAN_OBJECT);
			if (tail < cap)
				q[tail++] = t;
		}
		rfs_dirent_list_free(&l);
	}
	free(q);
	return st;
}

rfs_status repair_relink(struct rfs_check *c, struct rfs_tedit *te,
			 const struct repair_tree_opts *o, struct rfs_error *err)
{
	struct relink r = { .c = c, .te = te, .opt = o };
	rfs_status st = collect(&r, err);
	if (st || r.n == 0) {
		free(r.v);
		return st;
	}
	st = rfs_cursor_init(c->fs, &r.cur, err);
	if (st) {
		free(r.v);
		return st;
	}
	st = mark_named(&r, err);
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_status ls = st ? st : lost_found(&r, &e);
	if (!st && ls) {
		if (ls == RFS_ERR_NOMEM || ls == RFS_ERR_IO) {
			st = ls;
			if (err && err->status == RFS_OK)
				*err = e;
		} else {
			char line[300];
			rfs_error_format(&e, line, sizeof(line));
			fprintf(stderr, "rfsck fix: orphans left where they are: %s\n", line);
			rfs_tedit_abort(te);
		}
	}
	/* roots first, then one member of each ring still unreached */
	for (int pass = 0; !st && !ls && pass < 2; pass++) {
		for (size_t i = 0; !st && i < r.n; i++) {
			struct orphan *x = &r.v[i];
			if (x->reached || x->failed || (pass == 0 && x->named))
				continue;
			rfs_error_clear(&e);
			rfs_status one = link_one(&r, x, &e);
			if (one == RFS_ERR_NOMEM || one == RFS_ERR_IO) {
				st = one;
				if (err && err->status == RFS_OK)
					*err = e;
			} else if (one) {
				char line[300];
				rfs_error_format(&e, line, sizeof(line));
				fprintf(stderr, "rfsck fix: [%u %u] not relinked: %s\n", x->d, x->o, line);
				rfs_tedit_abort(te);
				x->failed = true;
			} else {
				st = mark_reached(&r, x, err);
			}
		}
	}
	rfs_cursor_free(&r.cur);
	free(r.v);
	return st;
}

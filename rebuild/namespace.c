/*
 * namespace.c - stage 5 of rebuild, decided before anything is written: which
 * names the new tree keeps, which objects need a stat data created, and what
 * goes to /lost+found.
 *
 *   - objects = keys with a winning item (safe links, dir_id 0xFFFFFFFF, are
 *     dropped: they describe an unlink that rebuild makes moot);
 *   - the root (1, 2) exists, created when no stat data or entry survived;
 *   - a walk from the root, breadth first: a name whose target has no item
 *     is removed ("points nowhere"); a second name of a directory is removed
 *     (no hard links to directories, no cycles); "." and ".." are made to
 *     point at the directory and its parent, added when missing;
 *   - objects no name reaches: a directory is linked by its topmost lost
 *     ancestor (climbing ".." while the parent really names it), then files,
 *     as /lost+found/<dir_id>_<objectid>; /lost+found is created if needed.
 * The names are rows: dirent.keep/why, synthesized dirent rows (block NULL),
 * and outcome rows for the report.  The objects are the object table c->objs
 * (objmap.h): the walk marks what it reaches there, settles the directory
 * modes, adds the root and /lost+found when they must be created; an object
 * without OBJ_SD gets a stat data created by emit.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "rebuild.h"
#include "rfs/hash.h"

#define KEY(d, o) (((uint64_t)(d) << 32) | (uint32_t)(o))
#define KD(k) ((uint32_t)((k) >> 32))
#define KO(k) ((uint32_t)(k))

enum { S_IFMT_ = 0170000, S_IFDIR_ = 0040000, CLIMB_MAX = 4096 };

struct ns {
	struct rb_ctx *c;
	struct rb_objmap *objs;      /* c->objs; OBJ_REACHED marks what a name reached */
	uint64_t reached;            /* objects with OBJ_REACHED */
	uint64_t *queue;             /* pairs: dir, parent */
	size_t qhead, qtail, qcap;
	sqlite3_stmt *entries, *drop, *retarget, *add, *offtaken, *nametaken, *mark_sd;
	unsigned fmt_default;
	uint64_t lf;                 /* lost+found key, 0 until known */
};

struct entry {
	int64_t rowid;
	uint32_t off, t_dir_id, t_objectid;
};

/* Marks object k reached; *was tells whether it already was.  k must be an
 * object: every key the walk marks comes from the object table or was just
 * added to it. */
static rfs_status mark_reached(struct ns *s, uint64_t k, bool *was, struct rfs_error *err)
{
	size_t i = rb_objmap_find(s->objs, k);
	if (i == RB_OBJMAP_NONE)
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "namespace: object %u %u is missing from the object map",
				     KD(k), KO(k));
	*was = (s->objs->flags[i] & OBJ_REACHED) != 0;
	if (!*was) {
		s->objs->flags[i] |= OBJ_REACHED;
		s->reached++;
	}
	return RFS_OK;
}

static bool is_reached(const struct ns *s, uint64_t k)
{
	size_t i = rb_objmap_find(s->objs, k);
	return i != RB_OBJMAP_NONE && (s->objs->flags[i] & OBJ_REACHED);
}

static rfs_status run1(struct ns *s, sqlite3_stmt *st, const char *what, struct rfs_error *err)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? RFS_OK : rfs_index_fail(s->c->ix, what, err);
}

static rfs_status drop_entry(struct ns *s, int64_t rowid, const char *why, struct rfs_error *err)
{
	sqlite3_bind_text(s->drop, 1, why, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s->drop, 2, rowid);
	s->c->n.entries_removed++;
	return run1(s, s->drop, "drop entry", err);
}

static rfs_status retarget(struct ns *s, int64_t rowid, uint64_t k, struct rfs_error *err)
{
	sqlite3_bind_int64(s->retarget, 1, KD(k));
	sqlite3_bind_int64(s->retarget, 2, KO(k));
	sqlite3_bind_int64(s->retarget, 3, rowid);
	return run1(s, s->retarget, "retarget", err);
}

/* Adds a synthesized entry name -> target in dir, at a free offset. */
static rfs_status add_entry(struct ns *s, uint64_t dir, const char *name, uint32_t off_base,
			    uint64_t target, struct rfs_error *err)
{
	uint32_t off = off_base;
	if (off_base > 2) {
		for (uint32_t gen = 0;; gen++) {
			if (gen > 127)
				return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
						     "no free offset for %s in directory %u %u", name,
						     KD(dir), KO(dir));
			off = off_base + gen;
			sqlite3_bind_int64(s->offtaken, 1, KD(dir));
			sqlite3_bind_int64(s->offtaken, 2, KO(dir));
			sqlite3_bind_int64(s->offtaken, 3, off);
			bool taken = sqlite3_step(s->offtaken) == SQLITE_ROW;
			sqlite3_reset(s->offtaken);
			if (!taken)
				break;
		}
	}
	sqlite3_stmt *a = s->add;
	sqlite3_bind_int64(a, 1, KD(dir));
	sqlite3_bind_int64(a, 2, KO(dir));
	sqlite3_bind_int64(a, 3, off);
	sqlite3_bind_int64(a, 4, KD(target));
	sqlite3_bind_int64(a, 5, KO(target));
	sqlite3_bind_blob(a, 6, name, (int)strlen(name), SQLITE_TRANSIENT);
	sqlite3_bind_int(a, 7, (int)s->fmt_default);
	sqlite3_bind_int64(a, 8, KD(dir));
	sqlite3_bind_int64(a, 9, KO(dir));
	return run1(s, a, "add entry", err);
}

static rfs_status enqueue(struct ns *s, uint64_t dir, uint64_t parent, struct rfs_error *err)
{
	if (s->qtail + 2 > s->qcap) {
		if (s->qhead > 0) {
			memmove(s->queue, s->queue + s->qhead, (s->qtail - s->qhead) * sizeof(uint64_t));
			s->qtail -= s->qhead;
			s->qhead = 0;
		}
		if (s->qtail + 2 > s->qcap) {
			size_t nc = s->qcap ? 2 * s->qcap : 1024;
			uint64_t *q = realloc(s->queue, nc * sizeof(uint64_t));
			if (!q)
				return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "namespace queue");
			s->queue = q;
			s->qcap = nc;
		}
	}
	s->queue[s->qtail++] = dir;
	s->queue[s->qtail++] = parent;
	return RFS_OK;
}

static rfs_status load_entries(struct ns *s, uint64_t dir, struct entry **out, size_t *n,
			       struct rfs_error *err)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	sqlite3_bind_int64(s->entries, 1, KD(dir));
	sqlite3_bind_int64(s->entries, 2, KO(dir));
	rfs_status st = RFS_OK;
	while (sqlite3_step(s->entries) == SQLITE_ROW) {
		if (*n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct entry *w = realloc(*out, nc * sizeof(**out));
			if (!w) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "entries");
				break;
			}
			*out = w;
			cap = nc;
		}
		(*out)[(*n)++] = (struct entry){
			.rowid = sqlite3_column_int64(s->entries, 0),
			.off = (uint32_t)sqlite3_column_int64(s->entries, 1),
			.t_dir_id = (uint32_t)sqlite3_column_int64(s->entries, 2),
			.t_objectid = (uint32_t)sqlite3_column_int64(s->entries, 3),
		};
	}
	sqlite3_reset(s->entries);
	return st;
}

/* One directory: its names decide what it reaches. */
static rfs_status visit_dir(struct ns *s, uint64_t dir, uint64_t parent, struct rfs_error *err)
{
	struct entry *e;
	size_t n;
	rfs_status st = load_entries(s, dir, &e, &n, err);
	bool dot = false, dotdot = false;
	for (size_t i = 0; !st && i < n; i++) {
		uint64_t t = KEY(e[i].t_dir_id, e[i].t_objectid);
		if (e[i].off == 1) {
			if (dot) {
				st = drop_entry(s, e[i].rowid, "extra-dot", err);
				continue;
			}
			dot = true;
			if (t != dir)
				st = retarget(s, e[i].rowid, dir, err);
			continue;
		}
		if (e[i].off == 2) {
			if (dotdot) {
				st = drop_entry(s, e[i].rowid, "extra-dotdot", err);
				continue;
			}
			dotdot = true;
			if (t != parent)
				st = retarget(s, e[i].rowid, parent, err);
			continue;
		}
		size_t at = rb_objmap_find(s->objs, t);
		if (at == RB_OBJMAP_NONE) {
			st = drop_entry(s, e[i].rowid, "points-nowhere", err);
			continue;
		}
		uint8_t *f = &s->objs->flags[at];
		if ((*f & OBJ_DIR) && (*f & OBJ_REACHED)) {
			st = drop_entry(s, e[i].rowid, "second-name-of-directory", err);
			continue;
		}
		if (!(*f & OBJ_REACHED)) {
			*f |= OBJ_REACHED;
			s->reached++;
			if (*f & OBJ_DIR)
				st = enqueue(s, t, dir, err);
		}
	}
	free(e);
	if (!st && !dot)
		st = add_entry(s, dir, ".", 1, dir, err);
	if (!st && !dotdot)
		st = add_entry(s, dir, "..", 2, parent, err);
	return st;
}

static rfs_status walk(struct ns *s, struct rfs_error *err)
{
	rfs_status st = RFS_OK;
	while (!st && s->qhead < s->qtail) {
		uint64_t dir = s->queue[s->qhead++];
		uint64_t parent = s->queue[s->qhead++];
		st = visit_dir(s, dir, parent, err);
	}
	return st;
}

/* A new object without a stat data (emit creates it). */
static rfs_status add_object(struct ns *s, uint64_t k, bool is_dir, struct rfs_error *err)
{
	return rb_objmap_insert(s->objs, k, is_dir ? OBJ_DIR : 0, err);
}

static bool is_dir_object(const struct ns *s, uint64_t k)
{
	size_t i = rb_objmap_find(s->objs, k);
	return i != RB_OBJMAP_NONE && (s->objs->flags[i] & OBJ_DIR);
}

static uint32_t name_offset(struct ns *s, const char *name)
{
	return rfs_hash_entry_offset(s->c->hash_code, (const uint8_t *)name, strlen(name));
}

/* /lost+found: the root's existing directory of that name, or a new one. */
static rfs_status lost_found(struct ns *s, struct rfs_error *err)
{
	if (s->lf)
		return RFS_OK;
	const uint64_t root = KEY(1, 2);
	sqlite3_stmt *q;
	rfs_status st;
	if (s->c->opt.detached_orphans) {
		/* salvage: a directory of its own that no name reaches */
		uint32_t oid = ++s->c->max_objectid;
		s->lf = KEY(2, oid);
		s->c->lf_objectid = oid;
		bool was;
		if ((st = add_object(s, s->lf, true, err)) ||
		    (st = mark_reached(s, s->lf, &was, err)) ||
		    (st = add_entry(s, s->lf, ".", 1, s->lf, err)) ||
		    (st = add_entry(s, s->lf, "..", 2, root, err)))
			return st;
		return RFS_OK;
	}
	st = rfs_index_prepare(s->c->ix,
		"SELECT t_dir_id, t_objectid FROM dirent WHERE dir_id = 1 AND objectid = 2"
		" AND keep = 1 AND name = CAST('lost+found' AS BLOB) ORDER BY off", &q, err);
	if (st)
		return st;
	while (!s->lf && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t t = KEY(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1));
		if (is_dir_object(s, t))
			s->lf = t;
	}
	sqlite3_finalize(q);
	if (s->lf)
		return RFS_OK;
	uint32_t oid = ++s->c->max_objectid;
	s->lf = KEY(2, oid);   /* the root's objectid is the packing locality of its children */
	s->c->lf_objectid = oid;
	bool was;
	if ((st = add_object(s, s->lf, true, err)) ||
	    (st = mark_reached(s, s->lf, &was, err)) ||
	    (st = add_entry(s, root, "lost+found", name_offset(s, "lost+found"), s->lf, err)) ||
	    (st = add_entry(s, s->lf, ".", 1, s->lf, err)) ||
	    (st = add_entry(s, s->lf, "..", 2, root, err)))
		return st;
	return rfs_index_add_outcome(s->c->ix, KD(s->lf), KO(s->lf), "lost+found-created", NULL, err);
}

static rfs_status link_lost(struct ns *s, uint64_t k, bool is_dir, struct rfs_error *err)
{
	rfs_status st = lost_found(s, err);
	if (st)
		return st;
	char name[64];
	snprintf(name, sizeof(name), "%u_%u", KD(k), KO(k));
	sqlite3_bind_int64(s->nametaken, 1, KD(s->lf));
	sqlite3_bind_int64(s->nametaken, 2, KO(s->lf));
	sqlite3_bind_blob(s->nametaken, 3, name, (int)strlen(name), SQLITE_TRANSIENT);
	bool taken = sqlite3_step(s->nametaken) == SQLITE_ROW;
	sqlite3_reset(s->nametaken);
	if (taken)
		strcat(name, "_lost");
	if ((st = add_entry(s, s->lf, name, name_offset(s, name), k, err)))
		return st;
	bool was;
	if ((st = mark_reached(s, k, &was, err)))
		return st;
	s->c->n.lost_found++;
	if ((st = rfs_index_add_outcome(s->c->ix, KD(k), KO(k), "lost+found", name, err)))
		return st;
	if (!is_dir)
		return RFS_OK;
	if ((st = enqueue(s, k, s->lf, err)))
		return st;
	return walk(s, err);
}

/* The ".." of a lost directory, if that parent is itself a lost directory
 * that names it. */
static uint64_t lost_parent(struct ns *s, uint64_t dir)
{
	sqlite3_stmt *q;
	struct rfs_error e;
	if (rfs_index_prepare(s->c->ix,
		"SELECT p.dir_id, p.objectid FROM dirent dd JOIN dirent p ON p.dir_id = dd.t_dir_id"
		" AND p.objectid = dd.t_objectid AND p.t_dir_id = dd.dir_id AND p.t_objectid = dd.objectid"
		" AND p.keep = 1 AND p.off > 2 WHERE dd.dir_id = ? AND dd.objectid = ? AND dd.off = 2"
		" AND dd.keep = 1 ORDER BY dd.rowid, p.off", &q, &e))
		return 0;
	sqlite3_bind_int64(q, 1, KD(dir));
	sqlite3_bind_int64(q, 2, KO(dir));
	uint64_t p = 0;
	while (!p && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t k = KEY(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1));
		if (is_dir_object(s, k))
			p = k;
	}
	sqlite3_finalize(q);
	return p;
}

static rfs_status relink_unreached(struct ns *s, bool dirs, struct rfs_error *err)
{
	/* collect first: linking adds rows to obj (and the map) and dirent */
	const struct rb_objmap *m = s->objs;
	rfs_status st = RFS_OK;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t j = 0; j < m->n; j++) {
		if ((m->flags[j] & OBJ_REACHED) || !(m->flags[j] & OBJ_DIR) != !dirs)
			continue;
		uint64_t k = m->keys[j];
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 256;
			uint64_t *w = realloc(v, nc * sizeof(*v));
			if (!w) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "lost objects");
				break;
			}
			v = w;
			cap = nc;
		}
		v[n++] = k;
	}
	for (size_t i = 0; !st && i < n; i++) {
		uint64_t k = v[i];
		if (is_reached(s, k))
			continue;
		if (dirs) {
			/* climb to the topmost lost ancestor that names this one */
			for (int steps = 0; steps < CLIMB_MAX; steps++) {
				uint64_t p = lost_parent(s, k);
				if (!p || p == v[i] || is_reached(s, p))
					break;
				k = p;
			}
		}
		st = link_lost(s, k, dirs, err);
	}
	free(v);
	return st;
}

/* A directory mode over file bodies only stays a directory when some name
 * ".." points at it (its children still know it as their parent); else the
 * mode flipped.  Rare, so the names-by-target index is built only for it. */
static rfs_status resolve_dir_modes(struct rb_ctx *c, struct rfs_error *err)
{
	struct rb_objmap *m = &c->objs;
	sqlite3_stmt *q = NULL;
	rfs_status st = RFS_OK;
	for (size_t i = 0; !st && i < m->n; i++) {
		if (!(m->flags[i] & OBJ_DIR_UNSURE))
			continue;
		if (!q && ((st = rfs_index_build_target_lookup(c->ix, err)) ||
			   (st = rfs_index_prepare(c->ix,
				"SELECT EXISTS (SELECT 1 FROM dirent WHERE t_dir_id = ? AND t_objectid = ?"
				" AND name = CAST('..' AS BLOB))", &q, err))))
			break;
		sqlite3_bind_int64(q, 1, KD(m->keys[i]));
		sqlite3_bind_int64(q, 2, KO(m->keys[i]));
		if (sqlite3_step(q) != SQLITE_ROW) {
			st = rfs_index_fail(c->ix, "namespace: names of a directory", err);
			break;
		}
		bool named = sqlite3_column_int(q, 0) != 0;
		sqlite3_reset(q);
		m->flags[i] &= (uint8_t)~OBJ_DIR_UNSURE;
		if (!named)
			m->flags[i] &= (uint8_t)~OBJ_DIR;
	}
	sqlite3_finalize(q);
	return st;
}

/* Whether the body item at (b, pos) holds directory o's own "." entry. */
static bool body_holds_dot(struct rb_ctx *c, uint8_t *blk, uint64_t b, uint32_t pos, uint32_t o)
{
	struct rfs_error re;
	rfs_error_clear(&re);
	if (rfs_dev_read_block(c->dev, b, blk, &re))
		return false;   /* unreadable now: the items' verdict stands */
	struct rfs_block_head bh;
	rfs_block_head_decode(blk, &bh);
	if (pos >= bh.nr_items || pos >= rfs_leaf_max_items(c->bs))
		return false;
	struct rfs_item_head ih;
	rfs_leaf_item_head(blk, (int)pos, &ih);
	if (ih.location < RFS_BLKH_SIZE || (uint32_t)ih.location + ih.len > c->bs)
		return false;
	return rfs_body_holds_dot(blk + ih.location, ih.len, ih.free_or_count, o);
}

/* A directory mode whose only items are file bodies reads as a flipped mode
 * (objects.c), unless the body at offset 1 holds the directory's own "."
 * entry: then an item's type flipped instead and the object stays a
 * directory (its names are lost with that item; check reports
 * ITEM_TYPE_MISMATCH). */
static rfs_status keep_dirs_with_dot(struct rb_ctx *c, struct rfs_error *err)
{
	struct rb_objmap *m = &c->objs;
	sqlite3_stmt *q = NULL;
	uint8_t *blk = NULL;
	rfs_status st = RFS_OK;
	for (size_t i = 0; !st && i < m->n; i++) {
		if ((m->flags[i] & (OBJ_SD_DIR | OBJ_DIR)) != OBJ_SD_DIR)
			continue;
		if (!q) {
			if ((st = rfs_index_build_item_lookup(c->ix, err)) ||
			    (st = rfs_index_prepare(c->ix,
				"SELECT block, pos FROM item WHERE dir_id = ? AND objectid = ? AND win = 1"
				" AND type IN (1, 2) AND offset = 1 AND block IS NOT NULL", &q, err)))
				break;
			if (!(blk = malloc(c->bs))) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK,
						   "namespace block buffer");
				break;
			}
		}
		uint32_t o = KO(m->keys[i]);
		sqlite3_bind_int64(q, 1, KD(m->keys[i]));
		sqlite3_bind_int64(q, 2, o);
		int rc;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW)
			if (body_holds_dot(c, blk, (uint64_t)sqlite3_column_int64(q, 0),
					   (uint32_t)sqlite3_column_int64(q, 1), o))
				m->flags[i] |= OBJ_DIR;
		sqlite3_reset(q);
		if (rc != SQLITE_DONE)
			st = rfs_index_fail(c->ix, "namespace: object types", err);
	}
	free(blk);
	sqlite3_finalize(q);
	return st;
}

/* The report's line for every stat data emit will create. */
static rfs_status note_created_sds(struct rb_ctx *c, struct rfs_error *err)
{
	const struct rb_objmap *m = &c->objs;
	rfs_status st = RFS_OK;
	for (size_t i = 0; !st && i < m->n; i++)
		if (!(m->flags[i] & OBJ_SD))
			st = rfs_index_add_outcome(c->ix, KD(m->keys[i]), KO(m->keys[i]), "sd-created",
						   m->flags[i] & OBJ_DIR ? "directory" : "file", err);
	return st;
}

static void ns_free(struct ns *s)
{
	sqlite3_finalize(s->entries);
	sqlite3_finalize(s->drop);
	sqlite3_finalize(s->retarget);
	sqlite3_finalize(s->add);
	sqlite3_finalize(s->offtaken);
	sqlite3_finalize(s->nametaken);
	free(s->queue);
}

rfs_status rb_namespace(struct rb_ctx *c, struct rfs_error *err)
{
	struct ns s = { .c = c, .objs = &c->objs, .fmt_default = c->fs->sb.format == RFS_FORMAT_36 ? 1 : 0 };
	c->root_items_aside = false;
	/* the object table (objects.c); keyorder.c built it already when the
	 * accepted leaves are in key order */
	rfs_status st = c->key_ordered ? RFS_OK : rb_objects_from_index(c, err);
	if (!st)
		st = resolve_dir_modes(c, err);
	if (!st)
		st = keep_dirs_with_dot(c, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"SELECT rowid, off, t_dir_id, t_objectid FROM dirent WHERE dir_id = ?"
			" AND objectid = ? AND keep = 1 ORDER BY off", &s.entries, err);
	if (!st)
		st = rfs_index_prepare(c->ix, "UPDATE dirent SET keep = 0, why = ? WHERE rowid = ?",
				       &s.drop, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"UPDATE dirent SET t_dir_id = ?, t_objectid = ? WHERE rowid = ?", &s.retarget, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"INSERT INTO dirent(dir_id, objectid, off, t_dir_id, t_objectid, name, state, fmt,"
			" hmask, keep, why) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 4,"
			" coalesce((SELECT fmt FROM dirent WHERE dir_id = ?8 AND objectid = ?9 AND block"
			"  IS NOT NULL LIMIT 1), ?7), 7, 1, 'added')", &s.add, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"SELECT 1 FROM dirent WHERE dir_id = ? AND objectid = ? AND off = ? AND keep = 1",
			&s.offtaken, err);
	if (!st)
		st = rfs_index_prepare(c->ix,
			"SELECT 1 FROM dirent WHERE dir_id = ? AND objectid = ? AND name = ? AND keep = 1",
			&s.nametaken, err);
	if (!st)
		st = rfs_index_begin(c->ix, err);
	if (st) {
		ns_free(&s);
		return st;
	}
	const uint64_t root = KEY(1, 2);
	size_t ri = rb_objmap_find(s.objs, root);
	bool was;
	if (ri != RB_OBJMAP_NONE && !(s.objs->flags[ri] & OBJ_DIR)) {
		/* The root must be a directory: a stat data saying otherwise (and
		 * any file body under the root's key) is set aside and a directory
		 * stat data is created; names found under the root stay. */
		st = rfs_index_build_item_lookup(c->ix, err);
		if (!st)
			st = rfs_index_exec(c->ix,
				"INSERT INTO conflict(dir_id, objectid, offset, type, winner, loser, reason)"
				" SELECT dir_id, objectid, offset, type, NULL, block,"
				"  'the root''s stat data does not describe a directory'"
				" FROM item WHERE dir_id = 1 AND objectid = 2 AND win = 1"
				" AND type IN (0, 1, 2);"
				"UPDATE item SET win = 0 WHERE dir_id = 1 AND objectid = 2"
				" AND type IN (0, 1, 2);", err);
		c->root_items_aside = !st;
		if (!st)
			s.objs->flags[ri] = OBJ_DIR;   /* no stat data: emit creates one */
		if (!st)
			st = rfs_index_add_outcome(c->ix, 1, 2, "root-recreated",
						   "its stat data did not describe a directory", err);
	}
	if (!st && ri == RB_OBJMAP_NONE) {
		st = add_object(&s, root, true, err);
		if (!st)
			st = rfs_index_add_outcome(c->ix, 1, 2, "root-created", NULL, err);
	}
	if (!st)
		st = mark_reached(&s, root, &was, err);
	if (!st)
		st = enqueue(&s, root, KEY(0, 1), err);
	if (!st)
		st = walk(&s, err);
	if (!st)
		c->n.by_name = s.reached;
	if (!st)
		st = relink_unreached(&s, true, err);
	if (!st)
		st = relink_unreached(&s, false, err);
	if (!st)
		st = note_created_sds(c, err);
	if (!st)
		st = rfs_index_commit(c->ix, err);
	else
		rfs_index_rollback(c->ix);
	ns_free(&s);
	return st;
}

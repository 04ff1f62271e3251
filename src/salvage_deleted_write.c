/*
 * salvage_deleted_write.c - `rfsck salvage --deleted`, part 2: placing the
 * deleted objects that src/salvage_deleted.c chose under OUTDIR/deleted/
 * and writing them, with their manifest and body-file lines (after the
 * walk's, so that the walk has reported where each live directory went).
 *
 * Placement: an object named by a stale entry of a live directory goes to
 * deleted/<that directory's output path below root/>/<name>; of a deleted
 * directory, below that directory's place; an object no name reaches (or a
 * name under a directory that is neither) goes to deleted/<dirid>_<objectid>
 * (files with libmagic's extension), its "path" then "<unnamed>/...".  Names
 * are escaped by salvage_name_escape; chains of deleted directories are
 * followed at most to the walk's depth limit and never round a cycle.
 *
 * Writing follows src/salvage_write.c's rules: every creation is a
 * single-component *at() call in a directory salvage created and opened
 * O_DIRECTORY|O_NOFOLLOW; a name that exists gets "%~N", except a directory
 * component, which is reused when it is a directory (two deleted
 * directories of one path share it).  Objects are created in component
 * order, so a directory precedes everything under it and one descriptor per
 * level is open; a deleted directory's mode and times are set when the last
 * object under it is written.
 *
 * Data: each body item comes from its leaf copy, read again and checked
 * against the checksum of the scan; each data pointer is read only when
 * salvage_block_verdict says so, otherwise its bytes are a hole listed in
 * `missing`, as are bytes no item covers.  Status is always "deleted"; a
 * sha256 is given only when nothing is missing.
 */
#include "salvage_deleted_int.h"

#include <errno.h>
#include <fcntl.h>
#include <magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../rebuild/rebuild.h"
#include "rfs/bytes.h"

enum { READ_RUN = 64, SYMLINK_MAX = 65536 };

/* ------------------------------------------------------------------------- */
/* Placement. */

struct placer {
	struct salvage_deleted *d;
	int depth_max;               /* components below deleted/ */
};

static int cmp_dirpath(const void *a, const void *b)
{
	uint64_t x = ((const struct sdel_dirpath *)a)->key, y = ((const struct sdel_dirpath *)b)->key;
	return x < y ? -1 : x > y;
}

static const struct sdel_dirpath *dirpath_of(const struct salvage_deleted *d, uint64_t key)
{
	size_t lo = 0, hi = d->ndirpaths;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->dirpaths[mid].key == key)
			return &d->dirpaths[mid];
		if (d->dirpaths[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static size_t components(const char *p)
{
	size_t n = *p ? 1 : 0;
	for (; *p; p++)
		n += *p == '/';
	return n;
}

static rfs_status place(struct placer *pl, uint32_t o, int depth);

/* Where the entries of directory (dir_id, objectid) go: out (a '/'-joined
 * path under deleted/, possibly empty) and ipath (the image path). */
static rfs_status parent_prefix(struct placer *pl, uint32_t dir_id, uint32_t objectid, int depth,
				struct strbuf *out, struct strbuf *ipath, bool *resolved)
{
	struct salvage_deleted *d = pl->d;
	uint64_t key = (uint64_t)dir_id << 32 | objectid;
	*resolved = false;
	if (u64set_has(&d->live, key)) {
		const struct sdel_dirpath *dp = dirpath_of(d, key);
		if (dp) {
			/* mirror the walk's output path, without its "root" */
			const char *rel = dp->opath;
			if (strcmp(rel, "root") == 0)
				rel = "";
			else if (strncmp(rel, "root/", 5) == 0)
				rel += 5;
			*resolved = true;
			if (sb_adds(out, rel) || sb_add(ipath, dp->ipath, dp->ipath_len))
				return RFS_ERR_NOMEM;
			return RFS_OK;
		}
	} else if (depth < pl->depth_max) {
		uint32_t p = sdel_find_object(d, dir_id, objectid);
		if (p != UINT32_MAX && d->objects[p].path_state != 1 &&
		    rfs_mode_type(d->sds[d->items[d->objects[p].sd_item].sd].mode) == RFS_FT_DIR) {
			rfs_status st = place(pl, p, depth + 1);
			if (st)
				return st;
			const struct sdel_object *po = &d->objects[p];
			*resolved = po->resolved;
			if (sb_adds(out, po->opath) || sb_add(ipath, po->ipath, po->ipath_len))
				return RFS_ERR_NOMEM;
			return RFS_OK;
		}
	}
	/* a directory nothing places: a container named by its key */
	if (sb_addf(out, "%u_%u", dir_id, objectid) || sb_addf(ipath, "<unnamed>/%u_%u", dir_id, objectid))
		return RFS_ERR_NOMEM;
	return RFS_OK;
}

/* The placement of a name under directory (dir_id, objectid). */
static rfs_status place_name(struct placer *pl, const struct sdel_name *nm, int depth,
			     struct strbuf *out, struct strbuf *ipath, bool *resolved, bool *escaped)
{
	rfs_status st = parent_prefix(pl, nm->dir_id, nm->objectid, depth, out, ipath, resolved);
	if (st)
		return st;
	char esc[SALVAGE_NAME_MAX + 1];
	salvage_name_escape(nm->name, nm->len, esc, escaped);
	if ((out->len && sb_add(out, "/", 1)) || sb_adds(out, esc) || sb_add(ipath, "/", 1) ||
	    sb_add(ipath, nm->name, nm->len))
		return RFS_ERR_NOMEM;
	return RFS_OK;
}

static rfs_status place(struct placer *pl, uint32_t o, int depth)
{
	struct salvage_deleted *d = pl->d;
	struct sdel_object *ob = &d->objects[o];
	if (ob->path_state == 2)
		return RFS_OK;
	ob->path_state = 1;
	struct strbuf out = STRBUF_INIT, ipath = STRBUF_INIT;
	bool resolved = false, escaped = false;
	rfs_status st = RFS_OK;
	if (ob->name != UINT32_MAX) {
		st = place_name(pl, &d->names[ob->name], depth, &out, &ipath, &resolved, &escaped);
		if (!st && components(sb_str(&out)) > (size_t)pl->depth_max) {
			/* deeper than one descriptor per level allows: flat */
			sb_truncate(&out, 0);
			sb_truncate(&ipath, 0);
			resolved = false;
		}
	}
	if (!st && !out.len &&
	    (sb_addf(&out, "%u_%u", ob->dir_id, ob->objectid) ||
	     sb_addf(&ipath, "<unnamed>/%u_%u", ob->dir_id, ob->objectid)))
		st = RFS_ERR_NOMEM;
	if (st) {
		sb_free(&out);
		sb_free(&ipath);
		return st;
	}
	ob->opath = out.buf;         /* the object owns them now */
	ob->ipath = (uint8_t *)ipath.buf;
	ob->ipath_len = ipath.len;
	ob->resolved = resolved;
	ob->path_state = 2;
	return RFS_OK;
}

/* Component-wise order of '/'-joined escaped names ('/' sorts first, so a
 * directory's whole subtree follows it contiguously). */
static int cmp_path(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned x = (unsigned char)*a, y = (unsigned char)*b;
		if (x == y) {
			if (!x)
				return 0;
			continue;
		}
		x = x == '/' ? 1 : x == 0 ? 0 : x + 1;
		y = y == '/' ? 1 : y == 0 ? 0 : y + 1;
		return x < y ? -1 : 1;
	}
}

static const struct salvage_deleted *order_ctx;

static int cmp_order(const void *a, const void *b)
{
	const struct sdel_object *x = &order_ctx->objects[*(const uint32_t *)a];
	const struct sdel_object *y = &order_ctx->objects[*(const uint32_t *)b];
	int c = cmp_path(x->opath, y->opath);
	if (c)
		return c;
	bool dx = rfs_mode_type(order_ctx->sds[order_ctx->items[x->sd_item].sd].mode) == RFS_FT_DIR;
	bool dy = rfs_mode_type(order_ctx->sds[order_ctx->items[y->sd_item].sd].mode) == RFS_FT_DIR;
	if (dx != dy)
		return dx ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* ------------------------------------------------------------------------- */
/* The directory stack under OUTDIR/deleted. */

struct level {
	char *comp;                  /* the component asked for */
	char actual[SALVAGE_NAME_MAX + 1];   /* the name created */
	int fd;
	uint32_t obj;                /* a deleted directory's object, or UINT32_MAX */
};

struct writer {
	struct salvage_deleted *d;
	const struct salvage_options *opt;
	struct rfs_error *err;
	int base_fd;                 /* OUTDIR/deleted */
	struct level *lv;
	int depth, cap;
	magic_t magic;
	uint8_t *leaf, *data;        /* one block; READ_RUN blocks */
	uint64_t done;
};

static rfs_status werr_sys(struct writer *w, int e, const char *path, const char *what)
{
	return rfs_error_sys(w->err, e, RFS_NO_BLOCK, "OUTDIR/deleted/%s: %s", path, what);
}

static int top_fd(const struct writer *w)
{
	return w->depth ? w->lv[w->depth - 1].fd : w->base_fd;
}

/* The output path of the current stack, "deleted/a/b". */
static rfs_status stack_path(const struct writer *w, struct strbuf *p)
{
	if (sb_adds(p, "deleted"))
		return RFS_ERR_NOMEM;
	for (int i = 0; i < w->depth; i++)
		if (sb_add(p, "/", 1) || sb_adds(p, w->lv[i].actual))
			return RFS_ERR_NOMEM;
	return RFS_OK;
}

static void pop(struct writer *w)
{
	struct level *l = &w->lv[--w->depth];
	if (l->obj != UINT32_MAX) {
		/* after its contents, as for live directories */
		const struct sdel_object *ob = &w->d->objects[l->obj];
		struct strbuf note = STRBUF_INIT;
		salvage_set_attrs_fd(w->opt->chown, l->fd, &w->d->sds[w->d->items[ob->sd_item].sd], &note);
		if (note.len)
			fprintf(stderr, "rfsck salvage: deleted/%s: %s\n", ob->opath, sb_str(&note));
		sb_free(&note);
	}
	close(l->fd);
	free(l->comp);
}

/* Opens the directory comp in the top of the stack, creating it; a file or
 * symlink of that name gets a "%~N" directory beside it instead. */
static rfs_status push_dir(struct writer *w, const char *comp, uint32_t obj, bool *created)
{
	if (w->depth == w->cap) {
		size_t cap = (size_t)w->cap;
		if (!sdel_grow((void **)&w->lv, &cap, cap + 1, sizeof(*w->lv)))
			return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory stack");
		w->cap = (int)cap;
	}
	struct level *l = &w->lv[w->depth];
	int parent = top_fd(w);
	snprintf(l->actual, sizeof(l->actual), "%s", comp);
	*created = mkdirat(parent, comp, 0700) == 0;
	if (!*created && errno != EEXIST)
		return werr_sys(w, errno, comp, "cannot create directory");
	l->fd = openat(parent, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->fd < 0) {
		struct salvage_make a = { .kind = SALVAGE_MK_DIR };
		if (salvage_make_unique(parent, comp, &a, l->actual))
			return werr_sys(w, errno, comp, "cannot create directory");
		*created = true;
		l->fd = openat(parent, l->actual, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (l->fd < 0)
			return werr_sys(w, errno, l->actual, "cannot open the directory just created");
	}
	l->comp = strdup(comp);
	if (!l->comp) {
		close(l->fd);
		return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory stack");
	}
	l->obj = obj;
	w->depth++;
	return RFS_OK;
}

/* Makes the stack the directories of path's components but the last, whose
 * name is returned in *last (pointing into path). */
static rfs_status descend(struct writer *w, char *path, const char **last)
{
	/* split in place; restored before returning.  place() keeps paths to
	 * depth_max <= SALVAGE_DEPTH_MAX components. */
	char *comp[SALVAGE_DEPTH_MAX + 1];
	if (components(path) > SALVAGE_DEPTH_MAX)
		return rfs_error_set(w->err, RFS_ERR_LIMIT, RFS_NO_BLOCK, "deleted path too deep");
	int n = 0;
	comp[n++] = path;
	for (char *p = path; *p; p++)
		if (*p == '/') {
			*p = 0;
			comp[n++] = p + 1;
		}
	int keep = 0;
	while (keep < w->depth && keep < n - 1 && strcmp(w->lv[keep].comp, comp[keep]) == 0)
		keep++;
	while (w->depth > keep)
		pop(w);
	rfs_status st = RFS_OK;
	for (int i = keep; i < n - 1 && !st; i++) {
		bool created;
		st = push_dir(w, comp[i], UINT32_MAX, &created);
	}
	for (int i = 1; i < n; i++)
		comp[i][-1] = '/';
	*last = comp[n - 1];
	return st;
}

/* ------------------------------------------------------------------------- */
/* Bodies. */

struct body {
	struct writer *w;
	struct salvage_record *rec;
	rfs_data_fn fn;
	void *ctx;
	uint64_t size, pos;          /* pos: bytes delivered so far */
	bool stop;
	struct salvage_copy *used;   /* copies the items came from */
	size_t nused, used_cap;
	size_t runs_cap, marked_cap;
};

static void deliver(struct body *b, uint64_t off, const uint8_t *data, uint64_t len)
{
	if (b->stop || !len)
		return;
	if (off > b->pos && b->fn(b->ctx, b->pos, NULL, (size_t)(off - b->pos)))
		b->stop = true;
	if (!b->stop && b->fn(b->ctx, off, data, (size_t)len))
		b->stop = true;
	b->pos = off + len;
}

static bool add_missing(struct body *b, uint64_t from, uint64_t to, const char *why)
{
	struct salvage_missing *m = &b->rec->miss;
	if (to <= from)
		return true;
	if (!m->first_reason[0])
		snprintf(m->first_reason, sizeof(m->first_reason), "%s", why);
	if (m->n && m->v[2 * m->n - 1] == from) {
		m->v[2 * m->n - 1] = to;
	} else {
		if (!sdel_grow((void **)&m->v, &m->cap, 2 * (m->n + 1), sizeof(*m->v)))
			return false;
		m->v[2 * m->n] = from;
		m->v[2 * m->n + 1] = to;
		m->n++;
	}
	deliver(b, from, NULL, to - from);
	return true;
}

/* Appends blocks [first, first + count) to the runs (first, count, ...) of
 * *v, merging with the last run. */
static bool add_run(uint64_t **v, size_t *n, size_t *cap, uint64_t first, uint64_t count)
{
	if (*n && (*v)[2 * *n - 2] + (*v)[2 * *n - 1] == first) {
		(*v)[2 * *n - 1] += count;
		return true;
	}
	if (!sdel_grow((void **)v, cap, 2 * (*n + 1), sizeof(**v)))
		return false;
	(*v)[2 * *n] = first;
	(*v)[2 * *n + 1] = count;
	(*n)++;
	return true;
}

static bool add_source(struct body *b, uint64_t first, uint64_t count)
{
	return add_run(&b->rec->runs, &b->rec->nruns, &b->runs_cap, first, count);
}

static bool note_copy(struct body *b, const struct salvage_copy *c)
{
	for (size_t i = 0; i < b->nused; i++)
		if (b->used[i].block == c->block)
			return true;
	if (!sdel_grow((void **)&b->used, &b->used_cap, b->nused + 1, sizeof(*b->used)))
		return false;
	b->used[b->nused++] = *c;
	return true;
}

/* Reads a copy again into w->leaf and finds its item pos; false (with why)
 * when it cannot be read or is no longer what the scan saw. */
static bool load_item(struct writer *w, const struct sdel_item *it, struct rfs_item_head *ih,
		      char *why, size_t whylen)
{
	const struct salvage_copy *c = &w->d->copies[it->copy];
	struct rfs_error e;
	rfs_error_clear(&e);
	if (rfs_dev_read_block(w->d->disk_fs->dev, c->block, w->leaf, &e)) {
		char line[200];
		rfs_error_format(&e, line, sizeof(line));
		snprintf(why, whylen, "leaf copy %llu unreadable: %s", (unsigned long long)c->block, line);
		return false;
	}
	if (rb_checksum(w->leaf, w->d->bs) != c->checksum) {
		snprintf(why, whylen, "leaf copy %llu changed since the scan", (unsigned long long)c->block);
		return false;
	}
	rfs_leaf_item_head(w->leaf, it->pos, ih);
	return true;
}

/* Reads n DATA blocks first.. at file offset off (up to the size). */
static bool read_data(struct body *b, uint32_t first, uint32_t n, uint64_t off)
{
	struct writer *w = b->w;
	uint32_t bs = w->d->bs;
	struct rfs_error e;
	rfs_error_clear(&e);
	if (rfs_dev_read_run(w->d->disk_fs->dev, first, n, w->data, NULL, &e) == RFS_OK) {
		uint64_t len = (uint64_t)n * bs;
		if (off + len > b->size)
			len = b->size - off;
		deliver(b, off, w->data, len);
		return add_source(b, first, n);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t o = off + (uint64_t)i * bs;
		uint64_t l = o + bs > b->size ? b->size - o : bs;
		rfs_error_clear(&e);
		if (rfs_dev_read_block(w->d->disk_fs->dev, first + i, w->data, &e) == RFS_OK) {
			deliver(b, o, w->data, l);
			if (!add_source(b, first + i, 1))
				return false;
		} else {
			char why[240];
			rfs_error_format(&e, why, sizeof(why));
			if (!add_missing(b, o, o + l, why))
				return false;
		}
	}
	return true;
}

static bool body_indirect(struct body *b, const struct sdel_item *it, const struct rfs_item_head *ih,
			  uint64_t base)
{
	struct writer *w = b->w;
	uint32_t bs = w->d->bs;
	const uint8_t *body = w->leaf + ih->location;
	uint64_t gen = salvage_copy_generation(&w->d->copies[it->copy]);
	uint32_t n = ih->len / 4;
	/* the pointers are copied out: read_data reuses no buffer of the leaf,
	 * but a run is gathered before it is read */
	for (uint32_t i = 0; i < n && !b->stop;) {
		uint64_t off = base + (uint64_t)i * bs;
		if (off >= b->size)
			break;
		uint64_t end = off + bs > b->size ? b->size : off + bs;
		uint32_t p = le32_at(body, 4 * (size_t)i);
		if (p == 0) {
			deliver(b, off, NULL, end - off);   /* a hole the file had */
			i++;
			continue;
		}
		struct salvage_block_facts f;
		sdel_block_facts(w->d, p, &f);
		enum salvage_block_verdict v = salvage_block_verdict(&f, gen);
		if (v != SALVAGE_BLOCK_DATA && v != SALVAGE_BLOCK_DATA_MARKED) {
			char why[160];
			snprintf(why, sizeof(why), "block %u %s", p, salvage_block_verdict_text(v));
			if (!add_missing(b, off, end, why))
				return false;
			i++;
			continue;
		}
		/* a run of blocks with the same verdict, read at once */
		uint32_t run = 1;
		while (i + run < n && run < READ_RUN && off + (uint64_t)run * bs < b->size &&
		       le32_at(body, 4 * (size_t)(i + run)) == p + run) {
			struct salvage_block_facts f2;
			sdel_block_facts(w->d, p + run, &f2);
			if (salvage_block_verdict(&f2, gen) != v)
				break;
			run++;
		}
		if (v == SALVAGE_BLOCK_DATA_MARKED && !add_run(&b->rec->marked_runs, &b->rec->nmarked,
							       &b->marked_cap, p, run))
			return false;
		if (!read_data(b, p, run, off))
			return false;
		i += run;
	}
	return true;
}

/* Delivers [0, size) of object ob through b->fn: items of the plan in
 * offset order, what none covers and what cannot be believed as missing.
 * false on an allocation failure. */
static bool body_assemble(struct body *b, const struct sdel_object *ob)
{
	struct writer *w = b->w;
	struct salvage_deleted *d = w->d;
	const char *no_copy = "no stale copy of the item holding these bytes was found";
	for (uint32_t k = 0; k < ob->nplan && !b->stop; k++) {
		const struct sdel_item *it = &d->items[d->plan[ob->plan + k]];
		uint64_t base = it->offset - 1;
		if (base >= b->size)
			continue;
		if (base < b->pos || (it->type == RFS_TYPE_INDIRECT && base % d->bs)) {
			/* an older version's item overlapping what is placed, or an
			 * indirect item off a block boundary: the first wins, as for
			 * live files */
			if (!b->rec->miss.first_reason[0])
				snprintf(b->rec->miss.first_reason, sizeof(b->rec->miss.first_reason),
					 "item at file offset %llu overlaps or is misaligned; skipped",
					 (unsigned long long)base);
			b->rec->miss.skipped_items++;
			continue;
		}
		if (!add_missing(b, b->pos, base, no_copy))
			return false;
		uint64_t span = it->type == RFS_TYPE_INDIRECT ? (uint64_t)(it->len / 4) * d->bs : it->len;
		uint64_t end = base + span > b->size ? b->size : base + span;
		struct rfs_item_head ih;
		char why[240];
		if (!load_item(w, it, &ih, why, sizeof(why))) {
			if (!add_missing(b, base, end, why))
				return false;
			continue;
		}
		if (!note_copy(b, &d->copies[it->copy]))
			return false;
		if (it->type == RFS_TYPE_DIRECT) {
			deliver(b, base, w->leaf + ih.location, end - base);
		} else if (!body_indirect(b, it, &ih, base)) {
			return false;
		}
		if (b->pos < end)          /* zero pointers at the item's end */
			deliver(b, b->pos, NULL, end - b->pos);
	}
	if (!b->stop && !add_missing(b, b->pos, b->size, no_copy))
		return false;
	return true;
}

static int target_piece(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	(void)off;
	struct strbuf *t = ctx;
	if (data)
		return sb_add(t, data, len) != RFS_OK;
	static const uint8_t z[256];
	for (size_t left = len; left;) {
		size_t n = left < sizeof(z) ? left : sizeof(z);
		if (sb_add(t, z, n))
			return 1;
		left -= n;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* One object. */

static rfs_status emit(struct writer *w, struct salvage_record *rec)
{
	rfs_status st = salvage_record_write(w->opt->manifest, w->opt->bodyfile, rec);
	if (st == RFS_ERR_IO)
		return rfs_error_sys(w->err, errno, RFS_NO_BLOCK, "writing the manifest or body file");
	if (st)
		return rfs_error_set(w->err, st, RFS_NO_BLOCK, "manifest record");
	return RFS_OK;
}

static void note_add(struct salvage_record *rec, const char *fmt, const char *a)
{
	sb_addf(&rec->note, "%s", rec->note.len ? "; " : "");
	sb_addf(&rec->note, fmt, a);
}

static rfs_status write_file(struct writer *w, const struct sdel_object *ob, const char *name,
			     struct salvage_record *rec, struct strbuf *opath, struct body *b)
{
	struct salvage_deleted *d = w->d;
	int dirfd = top_fd(w);
	struct salvage_make a = { .kind = SALVAGE_MK_FILE, .fd = -1 };
	char used[SALVAGE_NAME_MAX + 1];
	if (salvage_make_unique(dirfd, name, &a, used))
		return werr_sys(w, errno, ob->opath, "cannot create file");
	salvage_record_rename(opath, used);
	struct salvage_sink s = { .fd = a.fd, .hashing = true };
	rfs_sha256_init(&s.sha);
	b->fn = salvage_sink_piece;
	b->ctx = &s;
	bool ok = body_assemble(b, ob);
	if (s.write_errno) {
		close(a.fd);
		return werr_sys(w, s.write_errno, ob->opath, "write failed");
	}
	if (!ok) {
		close(a.fd);
		return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted file");
	}
	if (ftruncate(a.fd, (off_t)b->size)) {
		int e = errno;
		close(a.fd);
		return werr_sys(w, e, ob->opath, "cannot set the file size");
	}
	d->t.bytes += s.written;
	d->t.files++;
	if (rec->miss.n) {
		uint64_t lost = 0;
		for (size_t i = 0; i < rec->miss.n; i++)
			lost += rec->miss.v[2 * i + 1] - rec->miss.v[2 * i];
		sb_addf(&rec->note, "%s%llu byte(s) in %zu range(s) not recovered, written as holes; "
			"first: %s", rec->note.len ? "; " : "", (unsigned long long)lost, rec->miss.n,
			rec->miss.first_reason);
		d->t.files_partial++;
	} else if (s.hashing) {
		uint8_t dg[RFS_SHA256_LEN];
		rfs_sha256_final(&s.sha, dg);
		rfs_sha256_hex(dg, rec->sha256);
		rec->have_sha256 = true;
		d->t.files_complete++;
	} else {
		note_add(rec, "%s", "sha256 not computed: too many hole bytes");
		d->t.files_complete++;
	}
	if (rec->miss.skipped_items)
		sb_addf(&rec->note, "%s%llu overlapping or misaligned item(s) skipped",
			rec->note.len ? "; " : "", (unsigned long long)rec->miss.skipped_items);
	if (rec->nmarked)
		note_add(rec, "%s", "data read from blocks the allocation bitmap still marks used that "
			 "nothing in the rebuilt tree claims (blocks_marked_used): the object may be "
			 "one the damage lost rather than a deleted one");
	if (!ob->resolved && ob->name == UINT32_MAX)
		salvage_add_extension(w->magic, dirfd, a.fd, opath, used);
	salvage_set_attrs_fd(w->opt->chown, a.fd, &rec->obj.sd, &rec->note);
	if (close(a.fd))
		return werr_sys(w, errno, ob->opath, "close failed");
	return RFS_OK;
}

static rfs_status write_symlink(struct writer *w, const struct sdel_object *ob, const char *name,
				struct salvage_record *rec, struct strbuf *opath, struct body *b)
{
	struct salvage_deleted *d = w->d;
	d->t.symlinks++;
	if (b->size > SYMLINK_MAX) {
		rec->extracted = false;
		note_add(rec, "%s", "target longer than 64 KiB: not created");
		return RFS_OK;
	}
	b->fn = target_piece;
	b->ctx = &rec->target;
	if (!body_assemble(b, ob))
		return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted symlink");
	if (rec->miss.n) {
		rec->extracted = false;
		note_add(rec, "target incomplete (%s): not created", rec->miss.first_reason);
		return RFS_OK;
	}
	struct strbuf t2 = STRBUF_INIT;
	for (size_t i = 0; i < rec->target.len; i++)
		if (rec->target.buf[i] ? sb_add(&t2, &rec->target.buf[i], 1) : sb_adds(&t2, "%00")) {
			sb_free(&t2);
			return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "symlink target");
		}
	if (rec->target.len == 0 && sb_adds(&t2, "%")) {
		sb_free(&t2);
		return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "symlink target");
	}
	struct salvage_make a = { .kind = SALVAGE_MK_SYMLINK, .target = sb_str(&t2) };
	char used[SALVAGE_NAME_MAX + 1];
	int rc = salvage_make_unique(top_fd(w), name, &a, used);
	int e = errno;
	sb_free(&t2);
	if (rc)
		return werr_sys(w, e, ob->opath, "cannot create symlink");
	salvage_record_rename(opath, used);
	salvage_set_attrs_at(w->opt->chown, top_fd(w), used, &rec->obj.sd, true, &rec->note);
	return RFS_OK;
}

static rfs_status write_node(struct writer *w, const char *name, struct salvage_record *rec,
			     struct strbuf *opath)
{
	enum rfs_file_type ft = rfs_mode_type(rec->obj.sd.mode);
	w->d->t.others++;
	if (!w->opt->devices || ft == RFS_FT_UNKNOWN) {
		rec->extracted = false;
		w->d->t.not_created++;
		note_add(rec, "%s", ft == RFS_FT_UNKNOWN ? "unknown file type: recorded only"
							 : "recorded only (use --devices to create)");
		return RFS_OK;
	}
	uint32_t rd = rec->obj.sd.rdev;
	struct salvage_make a = {
		.kind = SALVAGE_MK_NODE, .mode = (rec->obj.sd.mode & 0170000) | 0600,
		.dev = (ft == RFS_FT_CHR || ft == RFS_FT_BLK)
			       ? makedev((rd >> 8) & 0xfff, (rd & 0xff) | ((rd >> 12) & 0xfff00))
			       : 0,
	};
	char used[SALVAGE_NAME_MAX + 1];
	if (salvage_make_unique(top_fd(w), name, &a, used)) {
		rec->extracted = false;
		w->d->t.not_created++;
		note_add(rec, "not created: %s", strerror(errno));
		return RFS_OK;
	}
	salvage_record_rename(opath, used);
	salvage_set_attrs_at(w->opt->chown, top_fd(w), used, &rec->obj.sd, false, &rec->note);
	return RFS_OK;
}

static rfs_status write_object(struct writer *w, uint32_t o)
{
	struct salvage_deleted *d = w->d;
	const struct sdel_object *ob = &d->objects[o];
	const struct sdel_item *sdi = &d->items[ob->sd_item];
	char *path = strdup(ob->opath);
	if (!path)
		return rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted path");
	const char *last = "";
	rfs_status st = descend(w, path, &last);
	struct strbuf ipath = STRBUF_INIT, opath = STRBUF_INIT;
	struct salvage_record rec;
	salvage_record_init(&rec, &ipath, &opath);
	struct body b = { .w = w, .rec = &rec };
	if (!st && (sb_add(&ipath, ob->ipath, ob->ipath_len) || stack_path(w, &opath) ||
		    sb_add(&opath, "/", 1) || sb_adds(&opath, last)))
		st = rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted path");
	if (st)
		goto out;
	rec.dir_id = ob->dir_id;
	rec.objectid = ob->objectid;
	rec.status = "deleted";
	rec.deleted = true;
	rec.name_unresolved = !ob->resolved;
	rec.have_obj = true;
	rec.obj = (struct rfs_object){ .dir_id = ob->dir_id, .objectid = ob->objectid,
				       .sd = d->sds[sdi->sd], .sd_block = d->copies[sdi->copy].block };
	if (ob->name != UINT32_MAX) {
		const struct sdel_name *nm = &d->names[ob->name];
		char esc[SALVAGE_NAME_MAX + 1];
		salvage_name_escape(nm->name, nm->len, esc, &rec.name_escaped);
	}
	if (!ob->resolved)
		note_add(&rec, "%s", ob->name == UINT32_MAX ? "no stale directory entry names it"
							    : "its directory is not on the live tree's paths");
	if (ob->other_names)
		sb_addf(&rec.note, "%s%u other name(s) found in older directory versions",
			rec.note.len ? "; " : "", ob->other_names);
	if (!note_copy(&b, &d->copies[sdi->copy])) {
		st = rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted object");
		goto out;
	}
	uint64_t max = rfs_max_file_size(d->disk_fs, rec.obj.sd.version);
	b.size = rec.obj.sd.size;
	if (b.size > max) {
		sb_addf(&rec.note, "%ssize %llu beyond the format limit; read up to %llu",
			rec.note.len ? "; " : "", (unsigned long long)b.size, (unsigned long long)max);
		b.size = max;
	}
	d->t.objects++;
	if (!ob->resolved)
		d->t.unresolved++;
	enum rfs_file_type ft = rfs_mode_type(rec.obj.sd.mode);
	switch (ft) {
	case RFS_FT_DIR: {
		d->t.dirs++;
		bool created;
		st = push_dir(w, last, o, &created);
		if (!st) {
			salvage_record_rename(&opath, w->lv[w->depth - 1].actual);
			if (!created)
				note_add(&rec, "%s", "shares its output directory with another of the same path");
		}
		break;
	}
	case RFS_FT_REG:
		st = write_file(w, ob, last, &rec, &opath, &b);
		break;
	case RFS_FT_LNK:
		st = write_symlink(w, ob, last, &rec, &opath, &b);
		break;
	default:
		st = write_node(w, last, &rec, &opath);
		break;
	}
	if (st)
		goto out;
	/* the leaves its items came from, the stat data's first */
	for (size_t i = 0; i < b.nused; i++) {
		size_t cap = rec.nleaves;
		if (!sdel_grow((void **)&rec.leaves, &cap, rec.nleaves + 1, sizeof(*rec.leaves))) {
			st = rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted object");
			goto out;
		}
		rec.leaves[rec.nleaves++] = b.used[i].block;
	}
	rec.copies = b.used;
	rec.ncopies = b.nused;
	st = emit(w, &rec);
	w->done++;
	if (w->opt->progress)
		rfs_progress_update(w->opt->progress, w->done);
out:
	free(b.used);
	salvage_record_free(&rec);
	sb_free(&ipath);
	sb_free(&opath);
	free(path);
	return st;
}

/* A name whose object left no stat data, or an old name of a live object
 * (old): a manifest line only. */
static rfs_status write_name_only(struct writer *w, struct placer *pl, const struct sdel_name *nm,
				  bool old)
{
	struct salvage_deleted *d = w->d;
	struct strbuf out = STRBUF_INIT, ipath = STRBUF_INIT;
	bool resolved, escaped;
	struct salvage_record rec;
	salvage_record_init(&rec, &ipath, &out);
	rfs_status st = place_name(pl, nm, 0, &out, &ipath, &resolved, &escaped);
	if (st) {
		st = rfs_error_set(w->err, st, RFS_NO_BLOCK, "deleted names");
		goto out;
	}
	rec.dir_id = nm->t_dir_id;
	rec.objectid = nm->t_objectid;
	rec.status = "deleted";
	rec.deleted = true;
	rec.extracted = false;
	rec.name_escaped = escaped;
	rec.name_unresolved = !resolved;
	rec.copies = &d->copies[nm->copy];
	rec.ncopies = 1;
	rec.leaves = malloc(sizeof(*rec.leaves));
	if (!rec.leaves) {
		st = rfs_error_set(w->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted names");
		goto out;
	}
	rec.leaves[0] = d->copies[nm->copy].block;
	rec.nleaves = 1;
	if (old) {
		sb_addf(&rec.note, "%san old name of [%u %u], which the tree still holds (renamed, "
			"moved or unlinked from here): see its line with this key", rec.note.len ? "; " : "",
			nm->t_dir_id, nm->t_objectid);
		d->t.old_names++;
	} else {
		note_add(&rec, "%s", "only a stale directory entry names it: no stat data was found");
		d->t.names_only++;
	}
	st = emit(w, &rec);
out:
	salvage_record_free(&rec);
	sb_free(&out);
	sb_free(&ipath);
	return st;
}

rfs_status salvage_deleted_extract(struct salvage_deleted *d, const struct salvage_options *opt,
				   struct rfs_error *err)
{
	if (mkdirat(opt->outdir_fd, "deleted", 0700))
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "cannot create OUTDIR/deleted");
	struct writer w = { .d = d, .opt = opt, .err = err };
	w.base_fd = openat(opt->outdir_fd, "deleted", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w.base_fd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "cannot open OUTDIR/deleted");
	if (d->t.live_incomplete) {
		/* nothing can be told from live objects: extract nothing */
		close(w.base_fd);
		return RFS_OK;
	}
	struct placer pl = { .d = d, .depth_max = SALVAGE_DEPTH_MAX };
	long maxfd = sysconf(_SC_OPEN_MAX);
	if (maxfd > 0 && maxfd - 64 < pl.depth_max)
		pl.depth_max = maxfd > 128 ? (int)(maxfd - 64) : 64;
	if (d->ndirpaths)
		qsort(d->dirpaths, d->ndirpaths, sizeof(*d->dirpaths), cmp_dirpath);
	rfs_status st = RFS_OK;
	for (size_t o = 0; o < d->nobjects && !st; o++)
		if (place(&pl, (uint32_t)o, 0))
			st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted paths");
	uint32_t *order = malloc((d->nobjects ? d->nobjects : 1) * sizeof(*order));
	w.leaf = malloc(d->bs);
	w.data = malloc((size_t)READ_RUN * d->bs);
	if (!st && (!order || !w.leaf || !w.data))
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "deleted objects");
	if (!st) {
		for (size_t o = 0; o < d->nobjects; o++)
			order[o] = (uint32_t)o;
		order_ctx = d;
		qsort(order, d->nobjects, sizeof(*order), cmp_order);
		order_ctx = NULL;
		w.magic = magic_open(MAGIC_EXTENSION);
		if (w.magic && magic_load(w.magic, NULL) != 0) {
			magic_close(w.magic);
			w.magic = NULL;
		}
		if (opt->progress)
			rfs_progress_phase(opt->progress, "deleted: extracting", "objects", d->nobjects);
		for (size_t i = 0; i < d->nobjects && !st; i++)
			st = write_object(&w, order[i]);
		while (w.depth)
			pop(&w);
		for (size_t i = 0; i < d->names_only_n && !st; i++)
			st = write_name_only(&w, &pl, &d->names[d->names_only[i]], false);
		for (size_t i = 0; i < d->nold_names && !st; i++)
			st = write_name_only(&w, &pl, &d->old_names[i], true);
		if (opt->progress)
			rfs_progress_done(opt->progress);
		if (w.magic)
			magic_close(w.magic);
	}
	while (w.depth)
		pop(&w);
	free(w.lv);
	free(order);
	free(w.leaf);
	free(w.data);
	if (close(w.base_fd) && !st)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing OUTDIR/deleted");
	return st;
}

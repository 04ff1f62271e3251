/*
 * salvage.c - the walk of `rfsck salvage`: from the root directory down,
 * every object is looked up, recorded in the manifest and body file
 * (src/salvage_record.c), and extracted under OUTDIR/root through the
 * creation primitives of src/salvage_write.c (the only code that creates
 * anything); file bodies come from src/salvage_body.c.
 *
 * Invariants (include/rfs/salvage.h gives the safety rules):
 *  - A directory's entries are collected before any is looked up (the tree
 *    cursor is shared and the iteration callback must not move it), sorted by
 *    name bytes so that runs are reproducible and the first name of a hard
 *    link is the smallest path.
 *  - Only directories salvage created itself (mkdirat, then openat with
 *    O_DIRECTORY|O_NOFOLLOW) are ever used as a base for *at() calls; a
 *    symlink or a file extracted earlier can never redirect a later write,
 *    because every name is created with O_EXCL semantics (mkdirat, symlinkat,
 *    mknodat, linkat and O_CREAT|O_EXCL all fail on an existing name) and a
 *    failure with EEXIST picks another name ("%~2", "%~3", ...).
 *  - One open directory fd per level of depth; the depth limit keeps that
 *    below the descriptor limit.
 *  - Times and modes of a directory are set after its contents, through its
 *    own fd; those of a file after its contents.  chown only when asked
 *    (root), and never fatal.
 *  - Problems with one object are recorded and the walk goes on; a failed
 *    write into OUTDIR stops the walk (RFS_ERR_IO), since the output is then
 *    untrustworthy (disk full, I/O error).
 */
#include "rfs/salvage.h"
#include "salvage_int.h"

#include <errno.h>
#include <magic.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "rfs/bytes.h"
#include "rfs/object.h"
#include "rfs/sha256.h"
#include "rfs/u64set.h"

enum {
	SYMLINK_MAX = 65536,         /* bytes of a symlink target we read */
};
/* First extracted path of each object with more than one link. */
struct link_slot {
	uint64_t key;                /* dir_id << 32 | objectid; 0 = empty */
	char *relpath;               /* OUTDIR-relative, '/'-separated escaped names */
	char *sha256;                /* hex, or NULL */
};

struct run {
	struct rfs_fs *fs;
	struct rfs_cursor cur;
	const struct salvage_options *opt;
	struct salvage_totals *t;
	struct u64set visited;       /* directories entered */
	struct link_slot *links;
	size_t links_cap, links_n;
	int depth, depth_max;
	uint64_t objects;
	struct rfs_error *err;       /* the operational failure, if any */
	bool orphans;                /* walking the damaged-tree mode's orphans */
	magic_t magic;               /* libmagic, for the orphans' extensions */
	struct rfs_sha256_worker *hasher;   /* files' digests; NULL: in this thread */
	struct salvage_queue queue;  /* manifest lines waiting for them */
};

/* ------------------------------------------------------------------------- */

static rfs_status add_problem(struct run *r, const struct strbuf *ipath, uint32_t d, uint32_t o,
			      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static rfs_status add_problem(struct run *r, const struct strbuf *ipath, uint32_t d, uint32_t o,
			      const char *fmt, ...)
{
	struct salvage_totals *t = r->t;
	t->errors++;
	if (t->nproblems >= SALVAGE_PROBLEMS_KEPT)
		return RFS_OK;
	struct salvage_problem *nv = realloc(t->problems, (t->nproblems + 1) * sizeof(*nv));
	if (!nv)
		return RFS_ERR_NOMEM;
	t->problems = nv;
	struct strbuf p = STRBUF_INIT, w = STRBUF_INIT;
	char line[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ipath->len ? sb_add_escaped(&p, (const uint8_t *)ipath->buf, ipath->len) : sb_adds(&p, "/"))
		return RFS_ERR_NOMEM;
	if (sb_adds(&w, line)) {
		sb_free(&p);
		return RFS_ERR_NOMEM;
	}
	nv[t->nproblems++] = (struct salvage_problem){ .path = p.buf, .dir_id = d, .objectid = o,
						       .what = w.buf };
	return RFS_OK;
}

void salvage_totals_free(struct salvage_totals *t)
{
	for (size_t i = 0; i < t->nproblems; i++) {
		free(t->problems[i].path);
		free(t->problems[i].what);
	}
	free(t->problems);
	t->problems = NULL;
	t->nproblems = 0;
}

static rfs_status out_error(struct run *r, int e, const struct strbuf *opath, const char *what)
{
	return rfs_error_sys(r->err, e, RFS_NO_BLOCK, "OUTDIR/%s: %s", sb_str(opath), what);
}

/* ------------------------------------------------------------------------- */
/* Hard-link map: open addressing on the object key. */

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return k;
}

static struct link_slot *link_find(struct run *r, uint64_t key)
{
	if (!r->links_cap)
		return NULL;
	for (size_t i = mix(key) & (r->links_cap - 1);; i = (i + 1) & (r->links_cap - 1)) {
		if (r->links[i].key == key)
			return &r->links[i];
		if (!r->links[i].key)
			return NULL;
	}
}

/* Takes ownership of relpath and sha256 (freed on failure too). */
static rfs_status link_add(struct run *r, uint64_t key, char *relpath, char *sha256)
{
	if ((r->links_n + 1) * 2 > r->links_cap) {
		size_t ncap = r->links_cap ? r->links_cap * 2 : 64;
		struct link_slot *nv = calloc(ncap, sizeof(*nv));
		if (!nv) {
			free(relpath);
			free(sha256);
			return RFS_ERR_NOMEM;
		}
		for (size_t i = 0; i < r->links_cap; i++) {
			if (!r->links[i].key)
				continue;
			size_t j = mix(r->links[i].key) & (ncap - 1);
			while (nv[j].key)
				j = (j + 1) & (ncap - 1);
			nv[j] = r->links[i];
		}
		free(r->links);
		r->links = nv;
		r->links_cap = ncap;
	}
	size_t j = mix(key) & (r->links_cap - 1);
	while (r->links[j].key)
		j = (j + 1) & (r->links_cap - 1);
	r->links[j] = (struct link_slot){ key, relpath, sha256 };
	r->links_n++;
	return RFS_OK;
}

static void links_free(struct run *r)
{
	for (size_t i = 0; i < r->links_cap; i++) {
		free(r->links[i].relpath);
		free(r->links[i].sha256);
	}
	free(r->links);
}

/* ------------------------------------------------------------------------- */
/* Data of regular files. */

/* Hashing the zeros of holes costs time, not space; beyond
 * SALVAGE_HOLE_HASH_MAX hole bytes a file's digest is left out rather than
 * letting a fuzzed size of 2^41 keep salvage busy for an hour. */
int salvage_sink_piece(void *c, uint64_t off, const uint8_t *data, size_t len)
{
	struct salvage_sink *s = c;
	if (data) {
		size_t done = 0;
		while (done < len) {
			ssize_t w = pwrite(s->fd, data + done, len - done, (off_t)(off + done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				s->write_errno = w < 0 ? errno : ENOSPC;
				return 1;
			}
			done += (size_t)w;
		}
		s->written += len;
		if (off + len > s->data_end)
			s->data_end = off + len;
		if (s->hashing && s->worker)
			rfs_sha256_worker_data(s->worker, data, len);
		else if (s->hashing)
			rfs_sha256_update(&s->sha, data, len);
	} else if (s->hashing) {
		if (s->hole_hashed + len > SALVAGE_HOLE_HASH_MAX) {
			s->hashing = false;
		} else {
			s->hole_hashed += len;
			if (s->worker)
				rfs_sha256_worker_zeros(s->worker, len);
			else
				rfs_sha256_zeros(&s->sha, len);
		}
	}
	s->reached = off + len;
	return 0;
}

/* ------------------------------------------------------------------------- */

static rfs_status extract_dir(struct run *r, const struct rfs_object *dir, int dirfd,
			      struct strbuf *ipath, struct strbuf *opath,
			      struct salvage_record *rec);

static rfs_status read_target(struct run *r, const struct rfs_object *obj, struct strbuf *out,
			      struct rfs_error *err);

static rfs_status queue_error(struct run *r, rfs_status st)
{
	if (st == RFS_ERR_IO)
		return rfs_error_sys(r->err, errno, RFS_NO_BLOCK, "writing the manifest or body file");
	if (st == RFS_ERR_INVALID)
		return rfs_error_set(r->err, st, RFS_NO_BLOCK, "a file's digest was lost");
	if (st)
		return rfs_error_set(r->err, st, RFS_NO_BLOCK, "manifest record");
	return RFS_OK;
}

/* Writes one record (manifest + body file), or queues it behind a digest
 * still being computed; a failure is operational. */
static rfs_status emit(struct run *r, struct salvage_record *rec)
{
	return queue_error(r, salvage_queue_emit(&r->queue, rec));
}

/* Adds the ranges a rebuild from scanned leaves could not find ("[[a,b],...]")
 * to miss.  RFS_ERR_NOMEM only. */
static rfs_status add_rebuild_missing(struct salvage_missing *m, const char *ranges)
{
	const char *p = ranges;
	unsigned long long a, b;
	int used;
	while (p && (p = strchr(p, '[')) != NULL) {
		if (sscanf(p, "[%llu,%llu]%n", &a, &b, &used) != 2) {
			p++;
			continue;
		}
		p += used;
		if (b <= a)
			continue;
		if (m->n == m->cap) {
			size_t ncap = m->cap ? m->cap * 2 : 8;
			uint64_t *nv = realloc(m->v, 2 * ncap * sizeof(*nv));
			if (!nv)
				return RFS_ERR_NOMEM;
			m->v = nv;
			m->cap = ncap;
		}
		m->v[2 * m->n] = a;
		m->v[2 * m->n + 1] = b;
		m->n++;
	}
	if (m->n && !m->first_reason[0])
		snprintf(m->first_reason, sizeof(m->first_reason),
			 "the leaf holding it was not found by the scan (written as a hole)");
	return RFS_OK;
}

/* An orphan's name gets the extension libmagic suggests for its first bytes
 * ("12_34" -> "12_34.jpg"), renamed in place without replacing anything. */
void salvage_add_extension(void *magic_cookie, int dirfd, int fd, struct strbuf *opath,
			   char used[SALVAGE_NAME_MAX + 1])
{
	magic_t cookie = magic_cookie;
	if (!cookie)
		return;
	uint8_t buf[8192];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return;
	const char *ext = magic_buffer(cookie, buf, (size_t)n);
	if (!ext || strncmp(ext, "???", 3) == 0)
		return;
	char clean[12];
	size_t k = 0;
	for (; ext[k] && ext[k] != '/' && k < sizeof(clean) - 1; k++) {
		char ch = ext[k];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			return;
		clean[k] = ch;
	}
	clean[k] = 0;
	if (!k || strlen(used) + 1 + k > SALVAGE_NAME_MAX)
		return;
	char renamed[SALVAGE_NAME_MAX + 1];
	size_t ul = strlen(used);
	memcpy(renamed, used, ul);
	renamed[ul] = '.';
	memcpy(renamed + ul + 1, clean, k + 1);
	if (renameat2(dirfd, used, dirfd, renamed, RENAME_NOREPLACE) == 0) {
		memcpy(used, renamed, ul + 1 + k + 1);
		salvage_record_rename(opath, renamed);
	}
}

static rfs_status extract_file(struct run *r, int dirfd, const char *oname, struct strbuf *opath,
			       const struct rfs_object *obj, struct salvage_record *rec)
{
	struct salvage_make a = { .kind = SALVAGE_MK_FILE, .fd = -1 };
	char used[SALVAGE_NAME_MAX + 1];
	if (salvage_make_unique(dirfd, oname, &a, used))
		return out_error(r, errno, opath, "cannot create file");
	salvage_record_rename(opath, used);
	struct salvage_sink s = { .fd = a.fd, .hashing = true };
	uint64_t size = obj->sd.size;
	uint64_t max = rfs_max_file_size(r->fs, obj->sd.version);
	if (size > max) {
		/* A size beyond the format limit says nothing; keep what the items hold. */
		sb_addf(&rec->note, "%ssize %llu beyond the format limit; read up to %llu",
			rec->note.len ? "; " : "", (unsigned long long)size, (unsigned long long)max);
		if (add_problem(r, rec->ipath, obj->dir_id, obj->objectid,
				"size %llu beyond the format limit", (unsigned long long)size)) {
			close(a.fd);
			return RFS_ERR_NOMEM;
		}
		size = max;
	}
	/* The digest thread hashes this file while the walk goes on.  A small
	 * file is hashed here while the thread is far behind (in the hole of a
	 * large file): the walk goes on instead of waiting for buffers, and
	 * its line waits in the queue.  A job the thread cannot open (never
	 * expected: see SALVAGE_HASHER_SLOTS) is hashed here too. */
	uint64_t job = 0;
	if (r->hasher && (size > SALVAGE_INLINE_MAX ||
			  rfs_sha256_worker_backlog(r->hasher) < SALVAGE_HASHER_BEHIND) &&
	    rfs_sha256_worker_open(r->hasher, &job) == RFS_OK)
		s.worker = r->hasher;
	else
		rfs_sha256_init(&s.sha);
	rfs_status st = salvage_body_read(&r->cur, obj, size, salvage_sink_piece, &s, &rec->miss);
	if (!st && r->opt->missing_ranges) {
		char *ranges = r->opt->missing_ranges(r->opt->missing_ctx, obj->dir_id, obj->objectid);
		if (ranges)
			st = add_rebuild_missing(&rec->miss, ranges);
		free(ranges);
	}
	/* the same condition as below: a digest only for a file read whole */
	bool whole = !st && !s.write_errno && !rec->miss.n && !rec->miss.skipped_items;
	if (s.worker)
		rfs_sha256_worker_close(s.worker, whole && s.hashing);
	if (s.write_errno) {
		close(a.fd);
		return out_error(r, s.write_errno, opath, "write failed");
	}
	if (st) {
		close(a.fd);
		return rfs_error_set(r->err, st, RFS_NO_BLOCK, "reading a file");
	}
	bool damaged = false;       /* no digest: the content is not the file's */
	if (rec->miss.n || rec->miss.skipped_items) {
		uint64_t lost = 0;
		for (size_t i = 0; i < rec->miss.n; i++)
			lost += rec->miss.v[2 * i + 1] - rec->miss.v[2 * i];
		rec->status = rec->miss.n ? "partial" : "complete";
		sb_addf(&rec->note, "%s%llu byte(s) in %zu range(s) unreadable, written as zeros "
			"(holes); %llu item(s) skipped; first: %s", rec->note.len ? "; " : "",
			(unsigned long long)lost, rec->miss.n, (unsigned long long)rec->miss.skipped_items,
			rec->miss.first_reason);
		if (add_problem(r, rec->ipath, obj->dir_id, obj->objectid,
				"file body: %llu byte(s) in %zu range(s) unreadable, %llu item(s) skipped; first: %s",
				(unsigned long long)lost, rec->miss.n,
				(unsigned long long)rec->miss.skipped_items, rec->miss.first_reason)) {
			close(a.fd);
			return RFS_ERR_NOMEM;
		}
		s.hashing = false;
		damaged = true;
	}
	/* one system call less per file where the data already ends at size */
	if (s.data_end != size && ftruncate(a.fd, (off_t)size)) {
		int e = errno;
		close(a.fd);
		return out_error(r, e, opath, "cannot set the file size");
	}
	r->t->bytes += s.written;
	if (s.hashing && s.worker) {
		/* placeholder digits; the queue writes the digest over them */
		memset(rec->sha256, '0', RFS_SHA256_HEX_LEN);
		rec->sha256[RFS_SHA256_HEX_LEN] = 0;
		rec->have_sha256 = true;
		rec->sha_job = job;
	} else if (s.hashing) {
		uint8_t d[RFS_SHA256_LEN];
		rfs_sha256_final(&s.sha, d);
		rfs_sha256_hex(d, rec->sha256);
		rec->have_sha256 = true;
	} else if (!damaged) {
		sb_addf(&rec->note, "%ssha256 not computed: more than %llu hole bytes",
			rec->note.len ? "; " : "", (unsigned long long)SALVAGE_HOLE_HASH_MAX);
	}
	if (r->orphans && r->depth == 0) {
		salvage_add_extension(r->magic, dirfd, a.fd, opath, used);
		if (!damaged)
			rec->status = "orphan";
	}
	salvage_set_attrs_fd(r->opt->chown, a.fd, &obj->sd, &rec->note);
	if (close(a.fd))
		return out_error(r, errno, opath, "close failed");
	return RFS_OK;
}

/* Extracts one directory entry (not a real "." or ".."). */
static rfs_status extract_entry(struct run *r, int dirfd, const struct rfs_dirent_copy *e,
				struct strbuf *ipath, struct strbuf *opath)
{
	char oname[SALVAGE_NAME_MAX + 1];
	bool escaped;
	salvage_name_escape(e->name, e->len, oname, &escaped);
	size_t ibase = ipath->len, obase = opath->len;
	if (sb_add(ipath, "/", 1) || sb_add(ipath, e->name, e->len) || sb_add(opath, "/", 1) ||
	    sb_adds(opath, oname))
		return RFS_ERR_NOMEM;
	if (escaped)
		r->t->escaped_names++;

	struct salvage_record rec;
	salvage_record_init(&rec, ipath, opath);
	rec.name_escaped = escaped;
	rec.dir_id = e->dir_id;
	rec.objectid = e->objectid;
	rfs_status st = RFS_OK;
	struct rfs_error oerr;
	rfs_error_clear(&oerr);
	struct rfs_object obj;
	rfs_status gs = rfs_object_get(&r->cur, e->dir_id, e->objectid, &obj, &oerr);
	r->objects++;
	if (r->opt->progress)
		rfs_progress_update(r->opt->progress, r->objects);
	if (gs == RFS_ERR_NOMEM) {
		st = rfs_error_set(r->err, gs, RFS_NO_BLOCK, "looking up an object");
		goto out;
	}
	if (gs) {
		char line[300];
		rfs_error_format(&oerr, line, sizeof(line));
		rec.status = "unreadable";
		rec.extracted = false;
		sb_addf(&rec.note, "%sstat data: %s", rec.note.len ? "; " : "", line);
		if (add_problem(r, ipath, e->dir_id, e->objectid, "stat data: %s", line))
			st = RFS_ERR_NOMEM;
		else
			st = emit(r, &rec);
		goto out;
	}
	rec.obj = obj;
	rec.have_obj = true;
	enum rfs_file_type ft = rfs_mode_type(obj.sd.mode);
	uint64_t key = (uint64_t)obj.dir_id << 32 | obj.objectid;

	if (ft == RFS_FT_DIR) {
		r->t->dirs++;
		bool added;
		if (u64set_has(&r->visited, key)) {
			rec.status = "not_extracted";
			rec.extracted = false;
			sb_addf(&rec.note, "directory already extracted (hard-linked directory or cycle)");
			if (add_problem(r, ipath, obj.dir_id, obj.objectid,
					"directory reached a second time (hard-linked directory or cycle); not entered again"))
				st = RFS_ERR_NOMEM;
			else
				st = emit(r, &rec);
			goto out;
		}
		if (r->depth >= r->depth_max) {
			rec.status = "not_extracted";
			rec.extracted = false;
			sb_addf(&rec.note, "deeper than %d levels", r->depth_max);
			if (add_problem(r, ipath, obj.dir_id, obj.objectid,
					"directory deeper than %d levels; not entered", r->depth_max))
				st = RFS_ERR_NOMEM;
			else
				st = emit(r, &rec);
			goto out;
		}
		if (u64set_add(&r->visited, key, &added)) {
			st = rfs_error_set(r->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "visited set");
			goto out;
		}
		struct salvage_make a = { .kind = SALVAGE_MK_DIR };
		char used[SALVAGE_NAME_MAX + 1];
		if (salvage_make_unique(dirfd, oname, &a, used)) {
			st = out_error(r, errno, opath, "cannot create directory");
			goto out;
		}
		salvage_record_rename(opath, used);
		int fd = openat(dirfd, used, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			st = out_error(r, errno, opath, "cannot open the directory just created");
			goto out;
		}
		r->depth++;
		st = extract_dir(r, &obj, fd, ipath, opath, &rec);
		r->depth--;
		if (close(fd) && !st)
			st = out_error(r, errno, opath, "close failed");
		goto out;   /* extract_dir emitted the record */
	}

	/* Non-directories: a later name of a multiply linked object is a link. */
	struct link_slot *ls = obj.sd.nlink > 1 ? link_find(r, key) : NULL;
	if (ls) {
		const char *leaf;
		/* relpath starts with "root/", from OUTDIR */
		int pfd = salvage_open_parent(r->opt->outdir_fd, ls->relpath, &leaf);
		if (pfd < 0) {
			st = out_error(r, errno, opath, "cannot open the first link's directory");
			goto out;
		}
		struct salvage_make a = { .kind = SALVAGE_MK_LINK, .src_dirfd = pfd, .src_name = leaf };
		char used[SALVAGE_NAME_MAX + 1];
		int rc = salvage_make_unique(dirfd, oname, &a, used);
		int e2 = errno;
		close(pfd);
		if (rc) {
			st = out_error(r, e2, opath, "cannot create hard link");
			goto out;
		}
		salvage_record_rename(opath, used);
		r->t->hardlinks++;
		rec.hardlink_of = ls->relpath;
		if (ls->sha256) {
			memcpy(rec.sha256, ls->sha256, RFS_SHA256_HEX_LEN + 1);
			rec.have_sha256 = true;
		}
		if (ft == RFS_FT_REG)
			r->t->files++;
		else if (ft == RFS_FT_LNK)
			r->t->symlinks++;
		else
			r->t->others++;
		salvage_record_blocks(&r->cur, &rec);
		st = emit(r, &rec);
		goto out;
	}

	bool linkable = true;    /* the object now exists under opath */
	if (ft == RFS_FT_REG) {
		r->t->files++;
		st = extract_file(r, dirfd, oname, opath, &obj, &rec);
	} else if (ft == RFS_FT_LNK) {
		r->t->symlinks++;
		struct strbuf target = STRBUF_INIT;
		struct rfs_error lerr;
		rfs_error_clear(&lerr);
		rfs_status ls2 = read_target(r, &obj, &target, &lerr);
		if (ls2 == RFS_ERR_NOMEM) {
			sb_free(&target);
			st = rfs_error_set(r->err, ls2, RFS_NO_BLOCK, "symlink target");
			goto out;
		}
		rec.target = target;   /* the record owns it now */
		if (ls2) {
			char line[300];
			rfs_error_format(&lerr, line, sizeof(line));
			rec.status = "unreadable";
			rec.extracted = false;
			linkable = false;
			sb_addf(&rec.note, "%starget: %s", rec.note.len ? "; " : "", line);
			if (add_problem(r, ipath, obj.dir_id, obj.objectid, "symlink target: %s", line)) {
				st = RFS_ERR_NOMEM;
				goto out;
			}
		} else {
			/* symlinkat takes a C string: NUL bytes cannot be stored, and an
			 * empty target is refused; both keep their exact bytes in the
			 * manifest's target_hex. */
			struct strbuf t2 = STRBUF_INIT;
			bool inexact = target.len == 0 || memchr(target.buf, 0, target.len);
			for (size_t i = 0; i < target.len; i++)
				if (target.buf[i] ? sb_add(&t2, &target.buf[i], 1) : sb_adds(&t2, "%00")) {
					sb_free(&t2);
					st = RFS_ERR_NOMEM;
					goto out;
				}
			if (target.len == 0 && sb_adds(&t2, "%")) {
				st = RFS_ERR_NOMEM;
				goto out;
			}
			if (inexact)
				sb_addf(&rec.note, "%starget has NUL bytes or is empty: created escaped",
					rec.note.len ? "; " : "");
			struct salvage_make a = { .kind = SALVAGE_MK_SYMLINK, .target = sb_str(&t2) };
			char used[SALVAGE_NAME_MAX + 1];
			int rc = salvage_make_unique(dirfd, oname, &a, used);
			int e2 = errno;
			sb_free(&t2);
			if (rc) {
				st = out_error(r, e2, opath, "cannot create symlink");
				goto out;
			}
			salvage_record_rename(opath, used);
			salvage_set_attrs_at(r->opt->chown, dirfd, used, &obj.sd, true, &rec.note);
		}
	} else {
		r->t->others++;
		if (!r->opt->devices || ft == RFS_FT_UNKNOWN) {
			rec.extracted = false;
			linkable = false;
			r->t->not_created++;
			sb_addf(&rec.note, "%s%s", rec.note.len ? "; " : "",
				ft == RFS_FT_UNKNOWN ? "unknown file type: recorded only"
						     : "recorded only (use --devices to create)");
		} else {
			uint32_t rd = obj.sd.rdev;
			struct salvage_make a = {
				.kind = SALVAGE_MK_NODE, .mode = (obj.sd.mode & 0170000) | 0600,
				.dev = (ft == RFS_FT_CHR || ft == RFS_FT_BLK)
					       ? makedev((rd >> 8) & 0xfff, (rd & 0xff) | ((rd >> 12) & 0xfff00))
					       : 0,
			};
			char used[SALVAGE_NAME_MAX + 1];
			if (salvage_make_unique(dirfd, oname, &a, used)) {
				/* Not being allowed to create devices is not a failed salvage. */
				rec.extracted = false;
				linkable = false;
				r->t->not_created++;
				sb_addf(&rec.note, "%snot created: %s", rec.note.len ? "; " : "",
					strerror(errno));
			} else {
				salvage_record_rename(opath, used);
				salvage_set_attrs_at(r->opt->chown, dirfd, used, &obj.sd, false, &rec.note);
			}
		}
	}
	if (st)
		goto out;
	salvage_record_blocks(&r->cur, &rec);
	if (obj.sd.nlink > 1 && linkable) {
		/* the later names' lines carry the digest too */
		if ((st = queue_error(r, salvage_queue_digest_now(&r->queue, &rec))))
			goto out;
		char *rel = strdup(sb_str(opath));
		char *sha = rec.have_sha256 ? strdup(rec.sha256) : NULL;
		if (!rel || (rec.have_sha256 && !sha)) {
			free(rel);
			free(sha);
			st = rfs_error_set(r->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "link map");
			goto out;
		}
		if (link_add(r, key, rel, sha)) {
			st = rfs_error_set(r->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "link map");
			goto out;
		}
	}
	st = emit(r, &rec);
out:
	salvage_record_free(&rec);
	sb_truncate(ipath, ibase);
	sb_truncate(opath, obase);
	return st;
}

static rfs_status read_target(struct run *r, const struct rfs_object *obj, struct strbuf *out,
			      struct rfs_error *err)
{
	return rfs_object_read_small(&r->cur, obj, SYMLINK_MAX, out, err);
}

/* Extracts the entries of dir into dirfd (its own new directory), then
 * records dir itself and sets its attributes.  rec describes dir. */
static rfs_status extract_dir(struct run *r, const struct rfs_object *dir, int dirfd,
			      struct strbuf *ipath, struct strbuf *opath,
			      struct salvage_record *rec)
{
	struct rfs_dirent_list col = { 0 };
	struct rfs_error derr;
	rfs_error_clear(&derr);
	if (r->opt->dir_entered &&
	    r->opt->dir_entered(r->opt->dir_ctx, dir->dir_id, dir->objectid, ipath, opath))
		return rfs_error_set(r->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory paths");
	rfs_status it = rfs_dir_collect(&r->cur, dir->dir_id, dir->objectid, true, true, &col,
					&derr);
	if (it == RFS_ERR_NOMEM)
		return rfs_error_set(r->err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "directory entries");
	if (it) {
		char line[300];
		rfs_error_format(&derr, line, sizeof(line));
		rec->status = "partial";
		sb_addf(&rec->note, "%sentries after an unreadable directory item are missing: %s",
			rec->note.len ? "; " : "", line);
		if (add_problem(r, ipath, dir->dir_id, dir->objectid, "directory items: %s", line)) {
			rfs_dirent_list_free(&col);
			return RFS_ERR_NOMEM;
		}
	}
	salvage_record_blocks(&r->cur, rec);
	/* The directory's own line precedes its children's. */
	rfs_status st = emit(r, rec);
	for (size_t i = 0; i < col.n && !st; i++)
		st = extract_entry(r, dirfd, &col.v[i], ipath, opath);
	rfs_dirent_list_free(&col);
	if (st)
		return st;
	/* After the contents, so that writing them did not change the times,
	 * and a read-only mode did not stop them being written. */
	struct strbuf note = STRBUF_INIT;
	salvage_set_attrs_fd(r->opt->chown, dirfd, &dir->sd, &note);
	/* The directory's line is written already; an attribute that could not
	 * be set is worth a warning, never a failed salvage. */
	if (note.len) {
		struct strbuf shown = STRBUF_INIT;
		if (ipath->len)
			sb_add_escaped(&shown, (const uint8_t *)ipath->buf, ipath->len);
		fprintf(stderr, "rfsck salvage: %s: %s\n", ipath->len ? sb_str(&shown) : "/",
			sb_str(&note));
		sb_free(&shown);
	}
	sb_free(&note);
	return RFS_OK;
}

/* Damaged-tree mode: the entries of the orphan directory go to
 * OUTDIR/lost+found, each with status "orphan" (or "partial"). */
static rfs_status extract_orphans(struct run *r)
{
	const struct salvage_options *opt = r->opt;
	if (mkdirat(opt->outdir_fd, "lost+found", 0700))
		return rfs_error_sys(r->err, errno, RFS_NO_BLOCK, "cannot create OUTDIR/lost+found");
	int fd = openat(opt->outdir_fd, "lost+found", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return rfs_error_sys(r->err, errno, RFS_NO_BLOCK, "cannot open OUTDIR/lost+found");
	struct rfs_dirent_list col = { 0 };
	struct rfs_error derr;
	rfs_error_clear(&derr);
	rfs_status st = rfs_dir_collect(&r->cur, opt->orphan_dir_id, opt->orphan_objectid, true, true,
					&col, &derr);
	if (st == RFS_ERR_NOMEM)
		st = rfs_error_set(r->err, st, RFS_NO_BLOCK, "orphan entries");
	else if (st)
		st = rfs_error_set(r->err, st, RFS_NO_BLOCK, "the rebuilt orphan directory: %s", derr.msg);
	struct strbuf ipath = STRBUF_INIT, opath = STRBUF_INIT;
	if (!st && (sb_adds(&ipath, "/lost+found") || sb_adds(&opath, "lost+found")))
		st = RFS_ERR_NOMEM;
	r->magic = magic_open(MAGIC_EXTENSION);
	if (r->magic && magic_load(r->magic, NULL) != 0) {
		magic_close(r->magic);
		r->magic = NULL;
	}
	r->orphans = true;
	for (size_t i = 0; i < col.n && !st; i++)
		st = extract_entry(r, fd, &col.v[i], &ipath, &opath);
	r->orphans = false;
	if (r->magic)
		magic_close(r->magic);
	r->magic = NULL;
	rfs_dirent_list_free(&col);
	sb_free(&ipath);
	sb_free(&opath);
	if (close(fd) && !st)
		st = rfs_error_sys(r->err, errno, RFS_NO_BLOCK, "closing OUTDIR/lost+found");
	return st;
}

rfs_status salvage_run(struct rfs_fs *fs, const struct salvage_options *opt,
		       struct salvage_totals *totals, struct rfs_error *err)
{
	struct run r = { .fs = fs, .opt = opt, .t = totals, .err = err,
			 .depth_max = SALVAGE_DEPTH_MAX,
			 .queue = { .manifest = opt->manifest, .bodyfile = opt->bodyfile } };
	struct strbuf ipath = STRBUF_INIT, opath = STRBUF_INIT;
	int rootfd = -1;
	rfs_status st = rfs_cursor_init(fs, &r.cur, err);
	if (st)
		return st;
	/* Without a second thread the digests are computed here, as before. */
	struct rfs_error werr;
	if (rfs_sha256_worker_start(&r.hasher, SALVAGE_HASHER_SLOTS, &werr))
		r.hasher = NULL;
	r.queue.worker = r.hasher;
	/* One descriptor per level: stay well inside the limit. */
	long maxfd = sysconf(_SC_OPEN_MAX);
	if (maxfd > 0 && maxfd - 64 < r.depth_max)
		r.depth_max = maxfd > 128 ? (int)(maxfd - 64) : 64;

	if (mkdirat(opt->outdir_fd, "root", 0700)) {
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "cannot create OUTDIR/root");
		goto out;
	}
	rootfd = openat(opt->outdir_fd, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "cannot open OUTDIR/root");
		goto out;
	}
	if (sb_adds(&opath, "root")) {
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "path");
		goto out;
	}
	struct salvage_record rec;
	salvage_record_init(&rec, &ipath, &opath);
	rec.dir_id = RFS_ROOT_DIR_ID;
	rec.objectid = RFS_ROOT_OBJECTID;
	struct rfs_object root;
	struct rfs_error gerr;
	rfs_error_clear(&gerr);
	st = rfs_object_get(&r.cur, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, &root, &gerr);
	if (st) {
		/* Without the root there is no tree walk to do; the damaged-tree
		 * mode (scan index) is the answer to that. */
		char line[300];
		rfs_error_format(&gerr, line, sizeof(line));
		rec.status = "unreadable";
		rec.extracted = false;
		sb_addf(&rec.note, "root directory: %s", line);
		st = add_problem(&r, &ipath, RFS_ROOT_DIR_ID, RFS_ROOT_OBJECTID, "root directory: %s", line);
		if (!st)
			st = emit(&r, &rec);
		salvage_record_free(&rec);
		goto out;
	}
	rec.obj = root;
	rec.have_obj = true;
	totals->dirs++;
	r.objects++;
	if (u64set_add(&r.visited, (uint64_t)root.dir_id << 32 | root.objectid, NULL)) {
		salvage_record_free(&rec);
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "visited set");
		goto out;
	}
	st = extract_dir(&r, &root, rootfd, &ipath, &opath, &rec);
	salvage_record_free(&rec);
	if (!st && (opt->orphan_dir_id || opt->orphan_objectid))
		st = extract_orphans(&r);
out:
	/* what was emitted reaches the manifest, after a failure too */
	{
		rfs_status qs = salvage_queue_flush(&r.queue, true);
		if (qs && !st)
			st = queue_error(&r, qs);
	}
	salvage_queue_free(&r.queue);
	rfs_sha256_worker_stop(r.hasher);
	if (st == RFS_ERR_NOMEM)
		rfs_error_set(err, st, RFS_NO_BLOCK, "out of memory");
	if (rootfd >= 0 && close(rootfd) && !st)
		st = rfs_error_sys(err, errno, RFS_NO_BLOCK, "closing OUTDIR/root");
	sb_free(&ipath);
	sb_free(&opath);
	u64set_free(&r.visited);
	links_free(&r);
	rfs_cursor_free(&r.cur);
	return st;
}

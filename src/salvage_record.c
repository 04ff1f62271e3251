/*
 * salvage_record.c - salvage's per-object output: one line of
 * OUTDIR/manifest.jsonl (JSON built with jansson) and one line of
 * OUTDIR/bodyfile (The Sleuth Kit's body format 3, read by `mactime -b`).
 *
 * Invariants:
 *  - every name from the image appears in the manifest twice: escaped for
 *    display ("path", as by sb_add_escaped) and exact ("path_hex");
 *  - a body-file line has exactly 11 '|'-separated fields and no newline:
 *    in the name field '|' becomes "\x7c" (the rest is sb_add_escaped's
 *    output, which has no control characters);
 *  - the data block list costs memory proportional to the object's items in
 *    the image (runs of consecutive pointers are merged).
 */
#include "salvage_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/bytes.h"

void salvage_record_init(struct salvage_record *rec, const struct strbuf *ipath,
			 const struct strbuf *opath)
{
	memset(rec, 0, sizeof(*rec));
	rec->ipath = ipath;
	rec->opath = opath;
	rec->status = "complete";
	rec->extracted = true;
	rec->target = (struct strbuf)STRBUF_INIT;
	rec->note = (struct strbuf)STRBUF_INIT;
}

void salvage_record_free(struct salvage_record *rec)
{
	sb_free(&rec->target);
	sb_free(&rec->note);
	free(rec->runs);
	free(rec->leaves);
	free(rec->miss.v);
	free(rec->marked_runs);
	rec->runs = rec->leaves = rec->miss.v = rec->marked_runs = NULL;
}

void salvage_record_rename(struct strbuf *opath, const char *name)
{
	const char *s = sb_str(opath);
	const char *slash = strrchr(s, '/');
	size_t base = slash ? (size_t)(slash - s) + 1 : 0;
	if (strcmp(s + base, name) == 0)
		return;
	sb_truncate(opath, base);
	/* A failure leaves a shorter path; it only makes the record less exact,
	 * and the allocation that failed was smaller than the one before. */
	sb_adds(opath, name);
}

static bool push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		uint64_t *nv = realloc(*v, ncap * sizeof(*nv));
		if (!nv)
			return false;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return true;
}

void salvage_record_blocks(struct rfs_cursor *cur, struct salvage_record *rec)
{
	if (!rec->have_obj)
		return;
	size_t rcap = 0, lcap = 0;
	bool ok = push(&rec->leaves, &rec->nleaves, &lcap, rec->obj.sd_block);
	struct rfs_key start = { rec->obj.dir_id, rec->obj.objectid, 1, RFS_TYPE_STAT };
	bool found;
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_cursor_seek_object(cur, &start, &found, &err);
	while (ok && !st && found && rfs_cursor_at_item(cur)) {
		struct rfs_item_head ih;
		const uint8_t *body;
		rfs_cursor_item(cur, &ih, &body);
		if (ih.key.dir_id != rec->obj.dir_id || ih.key.objectid != rec->obj.objectid)
			break;
		uint64_t leaf = rfs_cursor_leaf_block(cur);
		if (rec->leaves[rec->nleaves - 1] != leaf)
			ok = push(&rec->leaves, &rec->nleaves, &lcap, leaf);
		if (ih.key.type == RFS_TYPE_INDIRECT) {
			/* rfs_leaf_validate guarantees the body lies inside the leaf. */
			for (size_t i = 0; ok && i + 4 <= ih.len; i += 4) {
				uint32_t p = le32_at(body, i);
				if (p == 0)
					continue;
				if (rec->nruns && rec->runs[2 * rec->nruns - 2] + rec->runs[2 * rec->nruns - 1] == p) {
					rec->runs[2 * rec->nruns - 1]++;
					continue;
				}
				size_t n2 = 2 * rec->nruns;
				ok = push(&rec->runs, &n2, &rcap, p) && push(&rec->runs, &n2, &rcap, 1);
				rec->nruns = n2 / 2;
			}
		}
		if (ok)
			st = rfs_cursor_next(cur, &err);
	}
	if (!ok || st)
		rec->blocks_incomplete = true;
}

/* ------------------------------------------------------------------------- */

static json_t *jstr_escaped(const uint8_t *b, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j = NULL;
	if (sb_add_escaped(&sb, b, n) == RFS_OK)
		j = json_string(sb_str(&sb));
	sb_free(&sb);
	return j;
}

static json_t *jstr_hex(const uint8_t *b, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j = NULL;
	if (sb_add_hex(&sb, b, n) == RFS_OK)
		j = json_string(sb_str(&sb));
	sb_free(&sb);
	return j;
}

/* Sets key to value, failing on a NULL value (an allocation inside jansson
 * failed) so that a line is never written with a field silently missing. */
static bool put(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

/* An output path keeps the image's bytes (only '%', '/' and NUL are
 * escaped), so it need not be UTF-8: JSON gets it escaped like "path", plus
 * KEY_hex with the exact bytes when the two differ.  NULL -> null. */
static bool put_outpath(json_t *o, const char *key, const char *p)
{
	if (!p)
		return put(o, key, json_null());
	size_t n = strlen(p);
	struct strbuf e = STRBUF_INIT;
	bool ok = sb_add_escaped(&e, (const uint8_t *)p, n) == RFS_OK &&
		  put(o, key, json_string(sb_str(&e)));
	if (ok && (e.len != n || memcmp(e.buf, p, n) != 0)) {
		char hk[40];
		snprintf(hk, sizeof(hk), "%s_hex", key);
		ok = put(o, hk, jstr_hex((const uint8_t *)p, n));
	}
	sb_free(&e);
	return ok;
}

static json_t *manifest_line(const struct salvage_record *rec)
{
	const uint8_t *ip = (const uint8_t *)(rec->ipath->len ? rec->ipath->buf : "/");
	size_t iplen = rec->ipath->len ? rec->ipath->len : 1;
	const struct rfs_stat *sd = &rec->obj.sd;
	enum rfs_file_type ft = rec->have_obj ? rfs_mode_type(sd->mode) : RFS_FT_UNKNOWN;
	json_t *o = json_object();
	bool ok = o && put(o, "path", jstr_escaped(ip, iplen)) && put(o, "path_hex", jstr_hex(ip, iplen)) &&
		  put(o, "key", json_pack("[I,I]", (json_int_t)rec->dir_id, (json_int_t)rec->objectid)) &&
		  put(o, "type", json_string(rec->have_obj ? rfs_file_type_name(ft) : "unknown"));
	if (ok && rec->have_obj) {
		ok = put(o, "size", json_integer((json_int_t)sd->size)) &&
		     put(o, "mode", json_integer(sd->mode)) && put(o, "uid", json_integer(sd->uid)) &&
		     put(o, "gid", json_integer(sd->gid)) && put(o, "atime", json_integer(sd->atime)) &&
		     put(o, "mtime", json_integer(sd->mtime)) && put(o, "ctime", json_integer(sd->ctime)) &&
		     put(o, "nlink", json_integer(sd->nlink));
		if (ok && (ft == RFS_FT_CHR || ft == RFS_FT_BLK))
			ok = put(o, "rdev", json_integer(sd->rdev));
	}
	if (ok && rec->have_sha256)
		ok = put(o, "sha256", json_string(rec->sha256));
	if (ok && ft == RFS_FT_LNK && rec->status != NULL && strcmp(rec->status, "unreadable") != 0)
		ok = put(o, "target_hex", jstr_hex((const uint8_t *)sb_str(&rec->target), rec->target.len));
	if (ok)
		ok = put(o, "status", json_string(rec->status));
	json_t *missing = json_array();
	for (size_t i = 0; ok && missing && i < rec->miss.n; i++)
		ok = json_array_append_new(missing, json_pack("[I,I]", (json_int_t)rec->miss.v[2 * i],
							      (json_int_t)rec->miss.v[2 * i + 1])) == 0;
	ok = ok && put(o, "missing", missing);
	json_t *runs = json_array();
	for (size_t i = 0; ok && runs && i < rec->nruns; i++)
		ok = json_array_append_new(runs, json_pack("[I,I]", (json_int_t)rec->runs[2 * i],
							   (json_int_t)rec->runs[2 * i + 1])) == 0;
	ok = ok && put(o, "source_blocks", runs);
	json_t *leaves = json_array();
	for (size_t i = 0; ok && leaves && i < rec->nleaves; i++)
		ok = json_array_append_new(leaves, json_integer((json_int_t)rec->leaves[i])) == 0;
	ok = ok && put(o, "item_leaves", leaves);
	if (ok && rec->blocks_incomplete)
		ok = put(o, "blocks_incomplete", json_true());
	if (ok && rec->deleted) {
		/* where the items came from: free blocks or journal copies */
		json_t *cp = json_array();
		for (size_t i = 0; cp && ok && i < rec->ncopies; i++) {
			const struct salvage_copy *c = &rec->copies[i];
			json_t *e = json_pack("{s:I, s:s}", "block", (json_int_t)c->block, "area",
					      c->journal ? "journal" : "free");
			ok = e != NULL;
			if (ok && c->journal && c->home != RFS_NO_BLOCK)
				ok = put(e, "home", json_integer((json_int_t)c->home));
			if (ok && c->have_trans)
				ok = put(e, "trans_id", json_integer((json_int_t)c->trans_id));
			if (ok)
				ok = json_array_append_new(cp, e) == 0;
			else
				json_decref(e);
		}
		ok = ok && put(o, "item_copies", cp);
		if (ok && rec->nmarked) {
			json_t *mr = json_array();
			for (size_t i = 0; mr && ok && i < rec->nmarked; i++)
				ok = json_array_append_new(mr, json_pack("[I,I]", (json_int_t)rec->marked_runs[2 * i],
									 (json_int_t)rec->marked_runs[2 * i + 1])) == 0;
			ok = ok && put(o, "blocks_marked_used", mr);
		}
		if (ok)
			ok = put(o, "name_resolved", json_boolean(!rec->name_unresolved));
	}
	if (ok)
		ok = put_outpath(o, "extracted_as", rec->extracted ? sb_str(rec->opath) : NULL);
	if (ok && rec->hardlink_of)
		ok = put_outpath(o, "hardlink_of", rec->hardlink_of);
	if (ok && rec->name_escaped)
		ok = put(o, "name_escaped", json_true());
	if (ok && (rec->note.len || rec->name_escaped)) {
		struct strbuf n = STRBUF_INIT;
		if (rec->name_escaped)
			sb_adds(&n, "name escaped for the output file system (docs/salvage.md)");
		if (rec->note.len)
			sb_addf(&n, "%s%s", n.len ? "; " : "", sb_str(&rec->note));
		ok = put(o, "note", json_string(sb_str(&n)));
		sb_free(&n);
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* TSK's mode string: name type, '/', meta type and permissions. */
static void tsk_mode(const struct salvage_record *rec, char out[13])
{
	const struct rfs_stat *sd = &rec->obj.sd;
	char t = '-';
	switch (rec->have_obj ? rfs_mode_type(sd->mode) : RFS_FT_UNKNOWN) {
	case RFS_FT_REG: t = 'r'; break;
	case RFS_FT_DIR: t = 'd'; break;
	case RFS_FT_LNK: t = 'l'; break;
	case RFS_FT_FIFO: t = 'p'; break;
	case RFS_FT_CHR: t = 'c'; break;
	case RFS_FT_BLK: t = 'b'; break;
	case RFS_FT_SOCK: t = 's'; break;
	case RFS_FT_UNKNOWN: t = '-'; break;
	}
	uint16_t m = rec->have_obj ? sd->mode : 0;
	out[0] = t;
	out[1] = '/';
	out[2] = t;
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[3 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & 04000)
		out[5] = (m & 0100) ? 's' : 'S';
	if (m & 02000)
		out[8] = (m & 010) ? 's' : 'S';
	if (m & 01000)
		out[11] = (m & 01) ? 't' : 'T';
	out[12] = 0;
}

static rfs_status body_name(struct strbuf *out, const uint8_t *b, size_t n)
{
	struct strbuf e = STRBUF_INIT;
	rfs_status st = sb_add_escaped(&e, b, n);
	for (size_t i = 0; !st && i < e.len; i++)
		st = e.buf[i] == '|' ? sb_adds(out, "\\x7c") : sb_add(out, &e.buf[i], 1);
	sb_free(&e);
	return st;
}

static rfs_status body_line(struct strbuf *out, const struct salvage_record *rec)
{
	struct strbuf name = STRBUF_INIT;
	const uint8_t *ip = (const uint8_t *)(rec->ipath->len ? rec->ipath->buf : "/");
	size_t iplen = rec->ipath->len ? rec->ipath->len : 1;
	rfs_status st = body_name(&name, ip, iplen);
	if (!st && rec->have_obj && rfs_mode_type(rec->obj.sd.mode) == RFS_FT_LNK &&
	    rec->target.len) {
		st = sb_adds(&name, " -> ");
		if (!st)
			st = body_name(&name, (const uint8_t *)rec->target.buf, rec->target.len);
	}
	/* how `fls -m` marks a name found unallocated */
	if (!st && rec->deleted)
		st = sb_adds(&name, " (deleted)");
	if (st) {
		sb_free(&name);
		return st;
	}
	char mode[13];
	tsk_mode(rec, mode);
	const struct rfs_stat *sd = &rec->obj.sd;
	st = sb_addf(out, "0|%s|%u|%s|%u|%u|%llu|%u|%u|%u|0\n", sb_str(&name), rec->objectid, mode,
		     rec->have_obj ? sd->uid : 0, rec->have_obj ? sd->gid : 0,
		     rec->have_obj ? (unsigned long long)sd->size : 0ull,
		     rec->have_obj ? sd->atime : 0, rec->have_obj ? sd->mtime : 0,
		     rec->have_obj ? sd->ctime : 0);
	sb_free(&name);
	return st;
}

rfs_status salvage_record_format(const struct salvage_record *rec, struct strbuf *manifest,
				 struct strbuf *body, size_t *sha_at)
{
	json_t *o = manifest_line(rec);
	if (!o)
		return RFS_ERR_NOMEM;
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return RFS_ERR_NOMEM;
	size_t base = manifest->len;
	rfs_status st = sb_adds(manifest, s);
	if (!st)
		st = sb_add(manifest, "\n", 1);
	/* Every quote inside a string value is escaped (\"), so this can only
	 * be the key itself. */
	static const char key[] = "\"sha256\":\"";
	const char *at = rec->have_sha256 ? strstr(s, key) : NULL;
	*sha_at = at ? base + (size_t)(at - s) + sizeof(key) - 1 : SIZE_MAX;
	free(s);
	return st ? st : body_line(body, rec);
}

rfs_status salvage_record_write(FILE *manifest, FILE *bodyfile, const struct salvage_record *rec)
{
	struct strbuf m = STRBUF_INIT, b = STRBUF_INIT;
	size_t sha_at;
	rfs_status st = salvage_record_format(rec, &m, &b, &sha_at);
	if (!st && (fwrite(m.buf, 1, m.len, manifest) != m.len ||
		    fwrite(b.buf, 1, b.len, bodyfile) != b.len))
		st = RFS_ERR_IO;
	sb_free(&m);
	sb_free(&b);
	return st;
}

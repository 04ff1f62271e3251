/*
 * report.c - the reconstruction report: one JSON object built from the index
 * rows and the run's counters, printed as is with --json and rendered as
 * text otherwise (so both always say the same thing).
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rebuild.h"
#include "rfs/hash.h"
#include "rfs/strbuf.h"

enum { PATH_DEPTH_MAX = 256, LIST_MAX = 200 };

/* "/a/b" of an object from the names the new tree keeps, or NULL. */
static json_t *path_of(struct rb_ctx *c, sqlite3_stmt *q, uint32_t d, uint32_t o)
{
	struct strbuf parts[PATH_DEPTH_MAX];
	int n = 0;
	bool ok = false;
	while (n < PATH_DEPTH_MAX) {
		if (d == 1 && o == 2) {
			ok = true;
			break;
		}
		sqlite3_bind_int64(q, 1, d);
		sqlite3_bind_int64(q, 2, o);
		if (sqlite3_step(q) != SQLITE_ROW) {
			sqlite3_reset(q);
			break;
		}
		parts[n] = (struct strbuf)STRBUF_INIT;
		sb_add_escaped(&parts[n], (const uint8_t *)sqlite3_column_blob(q, 2), (size_t)sqlite3_column_bytes(q, 2));
		d = (uint32_t)sqlite3_column_int64(q, 0);
		o = (uint32_t)sqlite3_column_int64(q, 1);
		sqlite3_reset(q);
		n++;
	}
	(void)c;
	json_t *r = NULL;
	if (ok) {
		struct strbuf p = STRBUF_INIT;
		for (int i = n - 1; i >= 0; i--) {
			sb_adds(&p, "/");
			sb_adds(&p, sb_str(&parts[i]));
		}
		r = json_string(p.len ? sb_str(&p) : "/");
		sb_free(&p);
	}
	for (int i = 0; i < n; i++)
		sb_free(&parts[i]);
	return r;
}

static json_t *reasons(struct rb_ctx *c)
{
	json_t *o = json_object();
	sqlite3_stmt *q;
	struct rfs_error e;
	if (rfs_index_prepare(c->ix, "SELECT reason, count(*) FROM leaf WHERE status = 'rejected'"
			      " GROUP BY reason ORDER BY reason", &q, &e))
		return o;
	while (sqlite3_step(q) == SQLITE_ROW)
		json_object_set_new(o, (const char *)sqlite3_column_text(q, 0),
				    json_integer(sqlite3_column_int64(q, 1)));
	sqlite3_finalize(q);
	return o;
}

static json_t *nested_list(struct rb_ctx *c, sqlite3_stmt *pq)
{
	json_t *a = json_array();
	sqlite3_stmt *q;
	struct rfs_error e;
	if (rfs_index_prepare(c->ix,
		"SELECT n.sb_block, n.start_byte, n.block_size, n.block_count, n.magic, n.libmagic,"
		" n.holder_dir_id, n.holder_objectid, n.status,"
		" (SELECT count(*) FROM leaf l WHERE l.status = 'rejected' AND l.reason IN ('nested', 'file-data')"
		"   AND l.block >= n.start_byte / ?1 AND l.block < n.start_byte / ?1"
		"   + (n.block_count * n.block_size + ?1 - 1) / ?1)"
		" FROM nested n WHERE n.status IS NOT 'inside' ORDER BY n.start_byte", &q, &e))
		return a;
	sqlite3_bind_int64(q, 1, c->bs);
	while (sqlite3_step(q) == SQLITE_ROW) {
		json_t *h = json_null();
		if (sqlite3_column_type(q, 6) != SQLITE_NULL) {
			uint32_t d = (uint32_t)sqlite3_column_int64(q, 6);
			uint32_t o = (uint32_t)sqlite3_column_int64(q, 7);
			json_t *p = path_of(c, pq, d, o);
			h = json_pack("{s:I, s:I, s:o}", "dir_id", (json_int_t)d, "objectid",
				      (json_int_t)o, "path", p ? p : json_null());
		}
		const char *lm = (const char *)sqlite3_column_text(q, 5);
		const char *st = (const char *)sqlite3_column_text(q, 8);
		json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I, s:s, s:s, s:o, s:I, s:s}",
			"superblock_block", (json_int_t)sqlite3_column_int64(q, 0),
			"offset", (json_int_t)sqlite3_column_int64(q, 1),
			"block_size", (json_int_t)sqlite3_column_int64(q, 2),
			"block_count", (json_int_t)sqlite3_column_int64(q, 3),
			"magic", (const char *)sqlite3_column_text(q, 4),
			"libmagic", lm ? lm : "",
			"holder", h,
			"leaves_excluded", (json_int_t)sqlite3_column_int64(q, 9),
			"evidence", st ? st : ""));
	}
	sqlite3_finalize(q);
	return a;
}

static json_t *outcome_list(struct rb_ctx *c, sqlite3_stmt *pq, const char *what, bool ranges)
{
	json_t *a = json_array();
	sqlite3_stmt *q;
	struct rfs_error e;
	if (rfs_index_prepare(c->ix, "SELECT dir_id, objectid, detail FROM outcome WHERE what = ?"
			      " ORDER BY dir_id, objectid LIMIT ?", &q, &e))
		return a;
	sqlite3_bind_text(q, 1, what, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 2, LIST_MAX);
	while (sqlite3_step(q) == SQLITE_ROW) {
		uint32_t d = (uint32_t)sqlite3_column_int64(q, 0), o = (uint32_t)sqlite3_column_int64(q, 1);
		const char *detail = (const char *)sqlite3_column_text(q, 2);
		json_t *p = path_of(c, pq, d, o);
		json_t *x = json_pack("{s:o, s:I, s:I}", "path", p ? p : json_null(), "dir_id",
				      (json_int_t)d, "objectid", (json_int_t)o);
		if (ranges) {
			json_t *r = detail ? json_loads(detail, 0, NULL) : NULL;
			json_t *m = json_object_get(r, "missing");
			json_object_set_new(x, "missing", m ? json_incref(m) : json_array());
			json_object_set_new(x, "size_unknown",
					    json_boolean(json_is_true(json_object_get(r, "size_unknown"))));
			json_decref(r);
		} else if (detail) {
			json_object_set_new(x, "name", json_string(detail));
		}
		json_array_append_new(a, x);
	}
	sqlite3_finalize(q);
	return a;
}

json_t *rb_report_json(struct rb_ctx *c, const struct rb_run_result *r)
{
	sqlite3_stmt *pq = NULL;
	struct rfs_error e;
	/* paths are looked up by target (path_of) only for the objects the
	 * lists below name; none on a sound volume.  Without the index the
	 * lookups are slower, not wrong, so a failure to build it is let go */
	uint64_t named = 0;
	if (rfs_index_query_u64(c->ix, "SELECT EXISTS (SELECT 1 FROM outcome"
				" WHERE what IN ('lost+found', 'partial')) OR EXISTS (SELECT 1 FROM nested"
				" WHERE holder_dir_id IS NOT NULL AND status IS NOT 'inside')", &named, 1,
				&e) == RFS_OK && named)
		(void)rfs_index_build_target_lookup(c->ix, &e);
	rfs_index_prepare(c->ix,
		"SELECT dir_id, objectid, name FROM dirent WHERE t_dir_id = ? AND t_objectid = ?"
		" AND keep = 1 AND off > 2 ORDER BY block IS NULL, off LIMIT 1", &pq, &e);
	json_t *j = json_object();
	json_object_set_new(j, "mode", json_string(c->opt.dry_run ? "dry-run" : "rebuild"));
	json_object_set_new(j, "index", json_string(rfs_index_path(c->ix)));
	json_object_set_new(j, "scan", json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
		"mode", c->scan_mode == RB_SCAN_ALL ? "all" : "used", "reason", c->scan_reason,
		"blocks_scanned", (json_int_t)c->n.blocks_scanned,
		"candidates", (json_int_t)c->n.candidates,
		"invalid", (json_int_t)c->n.invalid,
		"partly_valid", (json_int_t)c->n.partly_valid,
		"journal_copies", (json_int_t)c->n.journal_copies,
		"internal_nodes", (json_int_t)c->n.internal_nodes,
		"unreadable", (json_int_t)c->n.unreadable,
		"resumed", c->n.resumed));
	json_object_set_new(j, "hash", json_pack("{s:s, s:s, s:{s:I, s:I, s:I}}",
		"name", rfs_hash_name(c->hash_code), "source", c->hash_source, "votes",
		"r5", (json_int_t)c->hash_votes[0], "tea", (json_int_t)c->hash_votes[1],
		"rupasov", (json_int_t)c->hash_votes[2]));
	json_object_set_new(j, "leaves", json_pack("{s:I, s:I, s:o, s:b}",
		"accepted", (json_int_t)c->n.accepted, "rejected", (json_int_t)c->n.rejected,
		"rejected_by_reason", reasons(c), "items_in_key_order", c->key_ordered));
	json_object_set_new(j, "nested", nested_list(c, pq));
	json_object_set_new(j, "conflicts", json_integer((json_int_t)c->n.conflicts));
	json_object_set_new(j, "objects", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"by_name", (json_int_t)c->n.by_name, "lost_found", (json_int_t)c->n.lost_found,
		"partial", (json_int_t)c->n.partial, "entries_removed", (json_int_t)c->n.entries_removed,
		"stat_data_created", (json_int_t)c->n.sd_created,
		"modes_from_items", (json_int_t)c->n.modes_from_items,
		"pointers_zeroed", (json_int_t)c->n.pointers_zeroed));
	json_object_set_new(j, "lost_found", outcome_list(c, pq, "lost+found", false));
	json_object_set_new(j, "partial_files", outcome_list(c, pq, "partial", true));
	json_object_set_new(j, "tree", json_pack("{s:I, s:I, s:I, s:I, s:i, s:I}",
		"leaves", (json_int_t)c->tree_leaves, "kept_in_place", (json_int_t)c->leaves_kept,
		"new_leaves", (json_int_t)c->leaves_new, "internal_nodes", (json_int_t)c->internal_nodes,
		"height", (int)c->height + 1, "root", (json_int_t)c->root));
	json_t *steps = json_object();
	for (int i = 0; i < RB_STEP_COUNT; i++)
		json_object_set_new(steps, rb_step_names[i], json_real(c->t_step[i]));
	json_object_set_new(j, "seconds", json_pack("{s:f, s:f, s:f, s:f, s:o}", "scan", c->t_scan,
						       "decide", c->t_decide, "build", c->t_build,
						       "check", c->t_check, "steps", steps));
	json_object_set_new(j, "repairs_after_build", json_integer((json_int_t)r->repairs));
	json_object_set_new(j, "blocks_written", json_integer((json_int_t)r->blocks_written));
	json_object_set_new(j, "written_blocks_sha256", json_string(r->written_sha256));
	json_object_set_new(j, "check_after", json_string(r->check_after));
	if (r->undo)
		json_object_set_new(j, "undo", json_string(r->undo));
	sqlite3_finalize(pq);
	return j;
}

static void print_list(FILE *f, json_t *a, const char *title)
{
	size_t n = json_array_size(a);
	if (!n)
		return;
	fprintf(f, "%s:\n", title);
	for (size_t i = 0; i < n && i < 20; i++) {
		json_t *x = json_array_get(a, i);
		const char *p = json_string_value(json_object_get(x, "path"));
		fprintf(f, "  %s  [%lld %lld]", p ? p : "(no name)",
			(long long)json_integer_value(json_object_get(x, "dir_id")),
			(long long)json_integer_value(json_object_get(x, "objectid")));
		json_t *m = json_object_get(x, "missing");
		if (m) {
			char *s = json_dumps(m, JSON_COMPACT);
			fprintf(f, " missing bytes %s%s", s ? s : "?",
				json_is_true(json_object_get(x, "size_unknown"))
					? ", size unknown (stat data lost)" : "");
			free(s);
		}
		fprintf(f, "\n");
	}
	if (n > 20)
		fprintf(f, "  ... %zu more (--json lists up to %d)\n", n - 20, LIST_MAX);
}

void rb_report_text(FILE *f, json_t *j)
{
	json_t *s = json_object_get(j, "scan"), *l = json_object_get(j, "leaves");
	json_t *h = json_object_get(j, "hash"), *o = json_object_get(j, "objects");
	json_t *t = json_object_get(j, "tree");
#define I(obj, k) ((long long)json_integer_value(json_object_get(obj, k)))
#define S(obj, k) json_string_value(json_object_get(obj, k))
	bool dry = strcmp(S(j, "mode"), "dry-run") == 0;
	fprintf(f, "Reconstruction report%s\n", dry ? " (dry run: nothing was written)" : "");
	fprintf(f, "scan: %s blocks (%s: %s)%s; %lld scanned, %lld unreadable\n",
		S(s, "mode"), S(s, "mode"), S(s, "reason"),
		json_is_true(json_object_get(s, "resumed")) ? ", resumed from the index" : "",
		I(s, "blocks_scanned"), I(s, "unreadable"));
	fprintf(f, "found: %lld leaf candidates (%lld of them damaged, their sound items used), "
		   "%lld invalid leaf-like blocks, %lld leaves in the journal (older copies), "
		   "%lld internal nodes (hints)\n",
		I(s, "candidates"), I(s, "partly_valid"), I(s, "invalid"), I(s, "journal_copies"),
		I(s, "internal_nodes"));
	fprintf(f, "hash: %s (from the %s; votes r5 %lld, tea %lld, rupasov %lld)\n", S(h, "name"),
		S(h, "source"), I(json_object_get(h, "votes"), "r5"),
		I(json_object_get(h, "votes"), "tea"), I(json_object_get(h, "votes"), "rupasov"));
	fprintf(f, "leaves: %lld accepted, %lld rejected", I(l, "accepted"), I(l, "rejected"));
	const char *k;
	json_t *v;
	int first = 1;
	json_object_foreach(json_object_get(l, "rejected_by_reason"), k, v) {
		fprintf(f, "%s%s %lld", first ? " (" : ", ", k, (long long)json_integer_value(v));
		first = 0;
	}
	fprintf(f, "%s\n", first ? "" : ")");
	json_t *nested = json_object_get(j, "nested");
	for (size_t i = 0; i < json_array_size(nested); i++) {
		json_t *n = json_array_get(nested, i);
		json_t *hold = json_object_get(n, "holder");
		const char *hp = json_is_object(hold) ? S(hold, "path") : NULL;
		fprintf(f, "nested filesystem at byte offset %lld (%lld blocks of %lld, %s)%s%s\n"
			   "  libmagic: %s\n  %s\n  salvage it with: rfsck salvage --offset %lld IMAGE DIR\n",
			I(n, "offset"), I(n, "block_count"), I(n, "block_size"), S(n, "magic"),
			json_is_object(hold) ? ", inside file " : ", its file's leaf is lost",
			json_is_object(hold) ? (hp ? hp : "(no name)") : "", S(n, "libmagic"),
			S(n, "evidence"), I(n, "offset"));
	}
	fprintf(f, "conflicts: %lld (same key or overlapping data in several leaves; the "
		   "strongest evidence kept, the others set aside)\n", I(j, "conflicts"));
	fprintf(f, "objects: %lld reached by name, %lld linked into /lost+found, %lld stat data "
		   "created, %lld modes set from the items, %lld names removed, %lld files partial, "
		   "%lld pointers zeroed\n",
		I(o, "by_name"), I(o, "lost_found"), I(o, "stat_data_created"),
		I(o, "modes_from_items"), I(o, "entries_removed"), I(o, "partial"),
		I(o, "pointers_zeroed"));
	print_list(f, json_object_get(j, "lost_found"), "linked into /lost+found");
	print_list(f, json_object_get(j, "partial_files"), "files with missing data (partial)");
	fprintf(f, "tree: %lld leaves (%lld kept in place, %lld new), %lld internal nodes, "
		   "height %lld, root %lld\n",
		I(t, "leaves"), I(t, "kept_in_place"), I(t, "new_leaves"), I(t, "internal_nodes"),
		I(t, "height"), I(t, "root"));
	fprintf(f, "%s %lld blocks (then %lld repairs of counts, bitmaps and maps)\n",
		dry ? "would write" : "wrote", I(j, "blocks_written"), I(j, "repairs_after_build"));
	fprintf(f, "check of the result: %s\n", S(j, "check_after"));
	if (S(j, "output_copy"))
		fprintf(f, "output: %s\n", strcmp(S(j, "output_copy"), "reflink") == 0
			? "a reflink of the source (its blocks shared until written)"
			: "a sparse copy of the source");
	if (S(j, "undo"))
		fprintf(f, "undo log: %s (rfsck undo %s IMAGE restores the original)\n", S(j, "undo"),
			S(j, "undo"));
#undef I
#undef S
}

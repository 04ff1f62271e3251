/*
 * index.c - opening, configuring and binding the rebuild evidence index.
 *
 * The database is scratch data that can always be rebuilt by scanning again,
 * so it trades durability for speed (no rollback journal fsyncs, large page
 * cache bounded in size); what must survive a kill is only the consistency
 * of committed batches, which SQLite's WAL mode gives without syncing.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index_int.h"

extern const char rfs_index_schema_sql[];

rfs_status rfs_index_fail(struct rfs_index *ix, const char *what, struct rfs_error *err)
{
	return rfs_error_set(err, RFS_ERR_IO, RFS_NO_BLOCK, "index %s: %s", what,
			     ix && ix->db ? sqlite3_errmsg(ix->db) : "cannot open");
}

rfs_status rfs_index_exec(struct rfs_index *ix, const char *sql, struct rfs_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(ix->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		rfs_status st = rfs_error_set(err, RFS_ERR_IO, RFS_NO_BLOCK, "index: %s",
					      msg ? msg : "error");
		sqlite3_free(msg);
		return st;
	}
	return RFS_OK;
}

rfs_status rfs_index_prepare(struct rfs_index *ix, const char *sql, sqlite3_stmt **st,
			     struct rfs_error *err)
{
	if (sqlite3_prepare_v2(ix->db, sql, -1, st, NULL) != SQLITE_OK)
		return rfs_index_fail(ix, "prepare", err);
	return RFS_OK;
}

rfs_status rfs_index_query_u64(struct rfs_index *ix, const char *sql, uint64_t *out, int ncol,
			       struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(ix, sql, &s, err);
	if (st)
		return st;
	if (sqlite3_step(s) == SQLITE_ROW)
		for (int i = 0; i < ncol; i++)
			out[i] = (uint64_t)sqlite3_column_int64(s, i);
	else
		st = rfs_index_fail(ix, "query", err);
	sqlite3_finalize(s);
	return st;
}

static rfs_status make_temp_path(char *buf, size_t len, struct rfs_error *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(buf, len, "%s/rfsck-index-XXXXXX", dir);
	int fd = mkstemp(buf);
	if (fd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "temporary index in %s", dir);
	close(fd);
	return RFS_OK;
}

/* RFSCK_SQL_PROFILE=MS prints every statement slower than MS milliseconds to
 * stderr (for benchmarks and profiling; off by default). */
static int profile_stmt(unsigned type, void *ctx, void *p, void *x)
{
	(void)type;
	long long ns = *(const long long *)x;
	if (ns / 1000000 >= *(const long *)ctx) {
		char *sql = sqlite3_expanded_sql(p);
		fprintf(stderr, "rfsck: sql %lld ms: %.300s\n", ns / 1000000, sql ? sql : "?");
		sqlite3_free(sql);
	}
	return 0;
}

rfs_status rfs_index_open(const char *path, struct rfs_index **out, struct rfs_error *err)
{
	*out = NULL;
	struct rfs_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "index");
	rfs_status st = RFS_OK;
	if (path) {
		snprintf(ix->path, sizeof(ix->path), "%s", path);
	} else {
		st = make_temp_path(ix->path, sizeof(ix->path), err);
		ix->temporary = true;
	}
	/* NOMUTEX: one thread at a time uses a connection (index.h), so SQLite's
	 * per-call locking (7 % of a scan's samples) buys nothing */
	if (!st && sqlite3_open_v2(ix->path, &ix->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				   SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		st = rfs_index_fail(ix, "open", err);
	/* A temporary index is unlinked at once: SQLite keeps the open file, and a
	 * kill cannot leave it behind.  Its journal must then stay in memory. */
	if (!st && ix->temporary) {
		unlink(ix->path);
		st = rfs_index_exec(ix, "PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF;", err);
	} else if (!st) {
		st = rfs_index_exec(ix, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;", err);
	}
	if (!st)
		st = rfs_index_exec(ix, "PRAGMA page_size=16384; PRAGMA cache_size=-16384;"
				    " PRAGMA temp_store=FILE;", err);
	static long profile_ms = -1;
	const char *prof = getenv("RFSCK_SQL_PROFILE");
	if (!st && prof && *prof) {
		profile_ms = strtol(prof, NULL, 10);
		sqlite3_trace_v2(ix->db, SQLITE_TRACE_PROFILE, profile_stmt, &profile_ms);
	}
	if (!st)
		st = rfs_index_exec(ix, rfs_index_schema_sql, err);
	if (!st)
		st = rfs_index_prepare_inserts(ix, err);
	if (st) {
		rfs_index_close(ix);
		return st;
	}
	*out = ix;
	return RFS_OK;
}

void rfs_index_close(struct rfs_index *ix)
{
	if (!ix)
		return;
	rfs_index_finalize_inserts(ix);
	if (ix->db)
		sqlite3_close(ix->db);
	free(ix);
}

struct sqlite3 *rfs_index_db(struct rfs_index *ix)
{
	return ix->db;
}

const char *rfs_index_path(const struct rfs_index *ix)
{
	return ix->temporary ? "(temporary)" : ix->path;
}

rfs_status rfs_index_meta_get(struct rfs_index *ix, const char *key, char *buf, size_t len,
			      bool *found, struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(ix, "SELECT value FROM meta WHERE key = ?", &s, err);
	if (st)
		return st;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	*found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW)
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0));
	else if (rc != SQLITE_DONE)
		st = rfs_index_fail(ix, "meta", err);
	sqlite3_finalize(s);
	return st;
}

rfs_status rfs_index_meta_set(struct rfs_index *ix, const char *key, const char *value,
			      struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(ix, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
					  &s, err);
	if (st)
		return st;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		st = rfs_index_fail(ix, "meta", err);
	sqlite3_finalize(s);
	return st;
}

rfs_status rfs_index_meta_get_u64(struct rfs_index *ix, const char *key, uint64_t *v,
				  bool *found, struct rfs_error *err)
{
	char buf[32];
	rfs_status st = rfs_index_meta_get(ix, key, buf, sizeof(buf), found, err);
	if (!st && *found)
		*v = strtoull(buf, NULL, 10);
	return st;
}

rfs_status rfs_index_meta_set_u64(struct rfs_index *ix, const char *key, uint64_t v,
				  struct rfs_error *err)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return rfs_index_meta_set(ix, key, buf, err);
}

static const char clear_rows_sql[] =
	"DELETE FROM leaf; DELETE FROM item; DELETE FROM claim; DELETE FROM dirent;"
	"DELETE FROM internal; DELETE FROM internal_child; DELETE FROM nested;"
	"DELETE FROM unreadable; DELETE FROM conflict; DELETE FROM outcome; DELETE FROM meta;";

rfs_status rfs_index_bind(struct rfs_index *ix, const char *identity, bool *fresh,
			  struct rfs_error *err)
{
	char old[512];
	bool found;
	rfs_status st = rfs_index_meta_get(ix, "identity", old, sizeof(old), &found, err);
	if (st)
		return st;
	*fresh = !found || strcmp(old, identity) != 0;
	if (!*fresh)
		return RFS_OK;
	if ((st = rfs_index_exec(ix, "BEGIN", err)))
		return st;
	st = rfs_index_exec(ix, clear_rows_sql, err);
	if (!st)
		st = rfs_index_meta_set(ix, "identity", identity, err);
	if (!st)
		st = rfs_index_meta_set(ix, "schema", "1", err);
	if (!st)
		return rfs_index_exec(ix, "COMMIT", err);
	rfs_index_rollback(ix);
	return st;
}

rfs_status rfs_index_begin(struct rfs_index *ix, struct rfs_error *err)
{
	return rfs_index_exec(ix, "BEGIN", err);
}

void rfs_index_rollback(struct rfs_index *ix)
{
	rfs_index_discard(ix);
	rfs_index_exec(ix, "ROLLBACK", NULL);
}

rfs_status rfs_index_commit(struct rfs_index *ix, struct rfs_error *err)
{
	rfs_status st = rfs_index_flush(ix, err);
	return st ? st : rfs_index_exec(ix, "COMMIT", err);
}

rfs_status rfs_index_clear_decisions(struct rfs_index *ix, struct rfs_error *err)
{
	return rfs_index_exec(ix,
		"UPDATE leaf SET status = NULL, reason = NULL, detail = NULL, reachable = 0;"
		"UPDATE item SET win = 1;"
		"DELETE FROM dirent WHERE block IS NULL;"
		"UPDATE dirent SET keep = 1, why = NULL;"
		"UPDATE internal SET status = NULL;"
		"UPDATE nested SET holder_dir_id = NULL, holder_objectid = NULL, excluded = 0,"
		"  status = NULL, libmagic = NULL;"
		"DELETE FROM conflict; DELETE FROM outcome;", err);
}

rfs_status rfs_index_build_lookup(struct rfs_index *ix, struct rfs_error *err)
{
	return rfs_index_exec(ix,
		"CREATE INDEX IF NOT EXISTS claim_first ON claim(first);"
		"CREATE INDEX IF NOT EXISTS dirent_dir ON dirent(dir_id, objectid, off);"
		"CREATE INDEX IF NOT EXISTS child_child ON internal_child(child);"
		"CREATE INDEX IF NOT EXISTS child_parent ON internal_child(parent, idx);"
		/* statistics for the planner; a sample of each index is enough
		 * to choose the plans (a full ANALYZE reads every index) */
		"PRAGMA analysis_limit=1000; ANALYZE;", err);
}

rfs_status rfs_index_build_item_lookup(struct rfs_index *ix, struct rfs_error *err)
{
	if (ix->item_lookup)
		return RFS_OK;
	/* item_key covers what the object table and emit read from every item
	 * (win, sd_mode; block and pos come with the key of a WITHOUT ROWID
	 * table), so neither looks each row up in the table: 2 M random
	 * lookups on bench-32g.  fmt and len stay out: emit takes both from the
	 * leaf it reads anyway.  The sample of ANALYZE: see build_lookup. */
	rfs_status st = rfs_index_exec(ix,
		"CREATE INDEX IF NOT EXISTS item_key ON item(dir_id, objectid, offset, type,"
		" win, sd_mode);"
		"PRAGMA analysis_limit=1000; ANALYZE item_key;", err);
	ix->item_lookup = !st;
	return st;
}

/* Built on demand: on a sound volume nothing asks who names an object or
 * which blocks one file claims, and each index costs a sort of its whole
 * table (dirent_target 0.8 s on bench-32g). */
rfs_status rfs_index_build_target_lookup(struct rfs_index *ix, struct rfs_error *err)
{
	return rfs_index_exec(ix,
		"CREATE INDEX IF NOT EXISTS dirent_target ON dirent(t_dir_id, t_objectid);", err);
}

rfs_status rfs_index_build_owner_lookup(struct rfs_index *ix, struct rfs_error *err)
{
	return rfs_index_exec(ix,
		"CREATE INDEX IF NOT EXISTS claim_obj ON claim(dir_id, objectid, file_offset);", err);
}

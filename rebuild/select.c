/*
 * select.c - stage 3 of rebuild: decide which leaves and items form the new
 * tree, each decision with a reason in the index.
 *
 * Order matters and is this:
 *   1. internal-node hints: a scanned internal node outside every nested
 *      extent and claimed by no file makes its children "reachable";
 *   2. strength of a leaf = 2 * reachable + marked used in the old bitmap;
 *   3. file data: leaf L is data when a leaf C that is not itself data (nor
 *      nested) and at least as strong as L has an indirect pointer to L.
 *      Solved as a fixpoint; leaves left undecided (claim cycles) are
 *      rejected.  A weaker claimer cannot reject a stronger leaf: its pointer
 *      is zeroed later instead (emit.c);
 *   4. nested: leaves inside a nested extent (nested.c) that no outer
 *      internal node references;
 *   5. hash: --hash, else the superblock's unless the surviving leaves'
 *      names vote clearly for another, else the majority; leaves whose names
 *      mostly fail it are rejected, single failing names are dropped;
 *   6. duplicates: identical content (checksum) keeps the strongest copy;
 *   7. item winners: one item per key, from the strongest leaf (stat data:
 *      then the newest mtime); losers are conflict rows, never merged.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyorder.h"
#include "rebuild.h"
#include "rfs/hash.h"
#include "rfs/u64set.h"

enum { ST_UNKNOWN = 0, ST_LEAF, ST_DATA, ST_NESTED };

struct cand {
	uint64_t block;
	uint8_t strength, state;
	uint32_t first_claim, n_claims;   /* into the claimer edge array */
};

static struct cand *cand_find(struct cand *v, size_t n, uint64_t block)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].block < block)
			lo = mid + 1;
		else if (v[mid].block > block)
			hi = mid;
		else
			return &v[mid];
	}
	return NULL;
}

static rfs_status step_all(struct rb_ctx *c, const char *sql, struct rfs_error *err)
{
	return rfs_index_exec(c->ix, sql, err);
}

/* 1. internal-node hints -> leaf.reachable */
static rfs_status mark_reachable(struct rb_ctx *c, struct rfs_error *err)
{
	sqlite3_stmt *s, *claimed;
	rfs_status st = rfs_index_prepare(c->ix,
		"SELECT block FROM internal WHERE area = 0", &s, err);
	if (st)
		return st;
	if ((st = rfs_index_prepare(c->ix,
		"SELECT 1 FROM claim WHERE first <= ?1 AND first >= ?1 - 4096 AND first + count > ?1"
		" LIMIT 1", &claimed, err))) {
		sqlite3_finalize(s);
		return st;
	}
	st = step_all(c, "CREATE TEMP TABLE IF NOT EXISTS hint(block INTEGER PRIMARY KEY);"
			 "DELETE FROM hint;", err);
	sqlite3_stmt *ins = NULL;
	if (!st)
		st = rfs_index_prepare(c->ix, "INSERT OR IGNORE INTO hint VALUES (?)", &ins, err);
	while (!st && sqlite3_step(s) == SQLITE_ROW) {
		uint64_t b = (uint64_t)sqlite3_column_int64(s, 0);
		if (b < c->nblocks && rfs_bitmap_test(&c->nested, b))
			continue;
		sqlite3_bind_int64(claimed, 1, (sqlite3_int64)b);
		bool is_data = sqlite3_step(claimed) == SQLITE_ROW;
		sqlite3_reset(claimed);
		if (is_data)
			continue;
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)b);
		if (sqlite3_step(ins) != SQLITE_DONE)
			st = rfs_index_fail(c->ix, "hint", err);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(s);
	sqlite3_finalize(claimed);
	sqlite3_finalize(ins);
	if (st)
		return st;
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "UPDATE internal SET status = CASE WHEN block IN (SELECT block FROM hint)"
		 " THEN 'hint' ELSE 'ignored' END;"
		 "UPDATE leaf SET reachable = 1 WHERE area = 0 AND valid >= 1 AND (block = %llu OR"
		 " block IN (SELECT child FROM internal_child WHERE parent IN (SELECT block FROM hint)));",
		 (unsigned long long)c->fs->sb.root_block);
	return step_all(c, sql, err);
}

/* 3 and 4: file data and nested leaves. */
static rfs_status decide_data(struct rb_ctx *c, struct rfs_error *err)
{
	sqlite3_stmt *s;
	rfs_status st = rfs_index_prepare(c->ix,
		"SELECT block, reachable * 2 + used FROM leaf WHERE area = 0 AND valid >= 1"
		" ORDER BY block", &s, err);
	if (st)
		return st;
	size_t n = 0, cap = 1024;
	struct cand *v = malloc(cap * sizeof(*v));
	uint64_t *edges = NULL;
	size_t ne = 0, ecap = 0;
	if (!v) {
		sqlite3_finalize(s);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "candidates");
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (n == cap) {
			struct cand *w = realloc(v, 2 * cap * sizeof(*v));
			if (!w) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "candidates");
				break;
			}
			v = w;
			cap *= 2;
		}
		v[n] = (struct cand){ .block = (uint64_t)sqlite3_column_int64(s, 0),
				      .strength = (uint8_t)sqlite3_column_int(s, 1) };
		n++;
	}
	sqlite3_finalize(s);
	/* claimer edges: for each candidate, the leaves whose pointers reach it.
	 * One merge of two sorted streams (candidates by block, claim runs by
	 * first block), keeping the runs that are still open: linear in
	 * candidates plus runs.  Runs rarely overlap (a block claimed twice), so
	 * the open list stays short. */
	sqlite3_stmt *q = NULL;
	if (!st)
		st = rfs_index_prepare(c->ix, "SELECT first, count, block FROM claim ORDER BY first", &q,
				       err);
	struct open_run { uint64_t end, claimer; } *open = NULL;
	size_t nopen = 0, ocap = 0;
	bool have_row = !st && sqlite3_step(q) == SQLITE_ROW;
	for (size_t i = 0; !st && i < n; i++) {
		uint64_t b = v[i].block;
		while (have_row && (uint64_t)sqlite3_column_int64(q, 0) <= b) {
			uint64_t first = (uint64_t)sqlite3_column_int64(q, 0);
			uint64_t cnt = (uint64_t)sqlite3_column_int64(q, 1);
			if (first + cnt > b) {
				if (nopen == ocap) {
					size_t nc = ocap ? 2 * ocap : 64;
					struct open_run *w = realloc(open, nc * sizeof(*w));
					if (!w) {
						st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "claims");
						break;
					}
					open = w;
					ocap = nc;
				}
				open[nopen++] = (struct open_run){ first + cnt,
								   (uint64_t)sqlite3_column_int64(q, 2) };
			}
			have_row = sqlite3_step(q) == SQLITE_ROW;
		}
		/* runs that ended before b are done for every later candidate */
		size_t k = 0;
		for (size_t m = 0; m < nopen; m++)
			if (open[m].end > b)
				open[k++] = open[m];
		nopen = k;
		v[i].first_claim = (uint32_t)ne;
		for (size_t m = 0; !st && m < nopen; m++) {
			bool dup = false;
			for (size_t x = v[i].first_claim; x < ne && !dup; x++)
				dup = edges[x] == open[m].claimer;
			if (dup)
				continue;
			if (ne == ecap) {
				size_t nc = ecap ? 2 * ecap : 1024;
				uint64_t *w = realloc(edges, nc * sizeof(*edges));
				if (!w) {
					st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "claims");
					break;
				}
				edges = w;
				ecap = nc;
			}
			edges[ne++] = open[m].claimer;
		}
		v[i].n_claims = (uint32_t)(ne - v[i].first_claim);
	}
	free(open);
	sqlite3_finalize(q);
	/* nested first: their own pointers use the inner numbering */
	for (size_t i = 0; !st && i < n; i++)
		if (v[i].strength < 2 && rfs_bitmap_test(&c->nested, v[i].block))
			v[i].state = ST_NESTED;
	/* fixpoint */
	for (bool changed = true; !st && changed;) {
		changed = false;
		for (size_t i = 0; i < n; i++) {
			if (v[i].state != ST_UNKNOWN)
				continue;
			bool data = false, all_out = true;
			for (uint32_t k = 0; k < v[i].n_claims; k++) {
				struct cand *cl = cand_find(v, n, edges[v[i].first_claim + k]);
				if (!cl || cl->state == ST_DATA || cl->state == ST_NESTED)
					continue;
				if (cl->strength < v[i].strength)
					continue;    /* a weaker claimer loses its pointer instead */
				if (cl->state == ST_LEAF) {
					data = true;
					break;
				}
				all_out = false;
			}
			if (data || all_out) {
				v[i].state = data ? ST_DATA : ST_LEAF;
				changed = true;
			}
		}
	}
	/* record */
	if (!st)
		st = rfs_index_begin(c->ix, err);
	for (size_t i = 0; !st && i < n; i++) {
		const char *reason = NULL;
		char detail[160] = "";
		switch (v[i].state) {
		case ST_LEAF:
			continue;
		case ST_DATA:
			reason = "file-data";
			for (uint32_t k = 0; k < v[i].n_claims; k++) {
				struct cand *cl = cand_find(v, n, edges[v[i].first_claim + k]);
				if (cl && cl->state == ST_LEAF) {
					snprintf(detail, sizeof(detail),
						 "an indirect item in leaf %llu points to it",
						 (unsigned long long)cl->block);
					break;
				}
			}
			break;
		case ST_NESTED:
			reason = "nested";
			snprintf(detail, sizeof(detail), "inside a nested filesystem's extent");
			break;
		default:
			reason = "claim-cycle";
			snprintf(detail, sizeof(detail), "leaves claim each other as file data");
			break;
		}
		st = rfs_index_leaf_decide(c->ix, v[i].block, false, reason, detail, err);
	}
	if (!st)
		st = rfs_index_commit(c->ix, err);
	free(v);
	free(edges);
	return st;
}

/* 5. the hash */
static rfs_status choose_hash(struct rb_ctx *c, unsigned option, struct rfs_error *err)
{
	uint64_t v[3] = { 0, 0, 0 };
	rfs_status st = rfs_index_query_u64(c->ix,
		"SELECT coalesce(sum(votes_r5),0), coalesce(sum(votes_tea),0), coalesce(sum(votes_rup),0)"
		" FROM leaf WHERE area = 0 AND valid >= 1 AND status IS NULL", v, 3, err);
	if (st)
		return st;
	for (int i = 0; i < 3; i++)
		c->hash_votes[i] = (uint32_t)v[i];
	static const unsigned codes[3] = { 3, 1, 2 };
	int best = 0;
	for (int i = 1; i < 3; i++)
		if (v[i] > v[best])
			best = i;
	unsigned sbh = c->fs->sb.hash_code;
	if (option) {
		c->hash_code = option;
		c->hash_source = "option";
	} else if (sbh >= 1 && sbh <= 3 && v[rb_hash_slot(sbh)] * 2 >= v[best]) {
		c->hash_code = sbh;
		c->hash_source = "superblock";
	} else if (v[best] > 0) {
		c->hash_code = codes[best];
		c->hash_source = "majority";
	} else {
		c->hash_code = sbh >= 1 && sbh <= 3 ? sbh : 3;
		c->hash_source = sbh >= 1 && sbh <= 3 ? "superblock" : "default";
	}
	return RFS_OK;
}

/* Whether two undecided leaves share a checksum: only then does step 6
 * reject anything (a leaf is kept when it is the best of the undecided
 * leaves with its checksum, so a checksum held by one of them rejects
 * nothing).  On a volume without copies, this spares the index over all
 * leaves' checksums (0.3 s on bench-32g) and the search. */
static rfs_status checksums_shared(struct rb_ctx *c, bool *shared, struct rfs_error *err)
{
	sqlite3_stmt *q;
	rfs_status st = rfs_index_prepare(c->ix, "SELECT checksum FROM leaf"
					  " WHERE area = 0 AND valid >= 1 AND status IS NULL", &q, err);
	if (st)
		return st;
	size_t n = 0, cap = 0;
	uint64_t *v = NULL;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 4096;
			uint64_t *w = realloc(v, nc * sizeof(*v));
			if (!w) {
				st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "leaf checksums");
				break;
			}
			v = w;
			cap = nc;
		}
		v[n++] = (uint64_t)sqlite3_column_int64(q, 0);
	}
	if (!st && rc != SQLITE_DONE)
		st = rfs_index_fail(c->ix, "leaf checksums", err);
	sqlite3_finalize(q);
	if (!st && n > 1) {
		qsort(v, n, sizeof(*v), u64_compare);
		for (size_t i = 1; i < n && !*shared; i++)
			*shared = v[i] == v[i - 1];
	}
	free(v);
	return st;
}

static rfs_status reject_where(struct rb_ctx *c, const char *reason, const char *detail,
			       const char *where, struct rfs_error *err)
{
	char sql[768];
	snprintf(sql, sizeof(sql),
		 "UPDATE leaf SET status = 'rejected', reason = '%s', detail = '%s'"
		 " WHERE area = 0 AND valid >= 1 AND status IS NULL AND (%s)", reason, detail, where);
	return step_all(c, sql, err);
}

rfs_status rb_select(struct rb_ctx *c, struct rfs_error *err)
{
	rfs_status st = step_all(c,
			"UPDATE leaf SET status = 'rejected', reason = 'invalid', detail = fault"
			" WHERE valid = 0;"
			"UPDATE leaf SET status = 'rejected', reason = 'journal-copy',"
			" detail = 'a leaf in the journal area: an older copy, never used'"
			" WHERE area = 1 AND valid >= 1;", err);
	if (!st)
		st = mark_reachable(c, err);
	if (!st)
		st = decide_data(c, err);
	if (!st)
		st = choose_hash(c, c->opt.hash_override, err);
	if (st)
		return st;
	int slot = rb_hash_slot(c->hash_code);
	static const char *const col[3] = { "votes_r5", "votes_tea", "votes_rup" };
	char where[256];
	snprintf(where, sizeof(where), "names > 0 AND %s * 2 < names", col[slot]);
	char detail[128];
	snprintf(detail, sizeof(detail), "most directory names do not hash to their offsets under %s",
		 rfs_hash_name(c->hash_code));
	if ((st = reject_where(c, "hash-unconfirmed", detail, where, err)))
		return st;
	/* 6. duplicates: identical content, keep the strongest (then lowest) copy */
	bool shared = false;
	if ((st = checksums_shared(c, &shared, err)))
		return st;
	if (shared && (st = step_all(c,
		"CREATE INDEX IF NOT EXISTS leaf_checksum ON leaf(checksum);"
		"UPDATE leaf SET status = 'rejected', reason = 'duplicate',"
		" detail = 'identical to leaf ' || (SELECT k.block FROM leaf k WHERE k.checksum = leaf.checksum"
		"   AND k.area = 0 AND k.valid >= 1 AND k.status IS NULL"
		"   ORDER BY k.reachable * 2 + k.used DESC, k.block LIMIT 1)"
		/* only checksums found twice need the search for the best copy
		 * (counted over all leaves: the index alone answers that) */
		" WHERE area = 0 AND valid >= 1 AND status IS NULL AND checksum IN (SELECT checksum FROM leaf"
		"   GROUP BY checksum HAVING count(*) > 1)"
		" AND block <> (SELECT k.block FROM leaf k"
		"   WHERE k.checksum = leaf.checksum AND k.area = 0 AND k.valid >= 1 AND k.status IS NULL"
		"   ORDER BY k.reachable * 2 + k.used DESC, k.block LIMIT 1);", err)))
		return st;
	if ((st = step_all(c,
		"UPDATE leaf SET status = 'accepted', reason = CASE WHEN reachable THEN 'reachable'"
		" WHEN used THEN 'marked-used' ELSE 'unreferenced' END"
		" WHERE area = 0 AND valid >= 1 AND status IS NULL;", err)))
		return st;
	/* stale: an unreferenced leaf whose first key falls inside a slot of a
	 * surviving parent of leaves (strictly between two of its keys; the
	 * superblock's root also bounds its first and last slot), whose child in
	 * that slot is an accepted leaf: the tree replaced it (a deleted file's
	 * old leaf, an older copy) */
	char slot_sql[3600];
	static const char slot_cond[] =
		" FROM internal_child c"
		" LEFT JOIN internal_child n ON n.parent = c.parent AND n.idx = c.idx + 1"
		" JOIN internal p ON p.block = c.parent AND p.status = 'hint' AND p.level = 2"
		" JOIN leaf cl ON cl.block = c.child AND cl.status = 'accepted'"
		" WHERE (c.idx >= 1 OR p.block = %llu) AND (c.idx = 0 OR (c.k_dir, c.k_obj, c.k_off, c.k_type)"
		"   <= (leaf.k_dir, leaf.k_obj, leaf.k_off, leaf.k_type))"
		" AND ((n.parent IS NULL AND p.block = %llu) OR (leaf.k_dir, leaf.k_obj, leaf.k_off,"
		"   leaf.k_type) < (n.k_dir, n.k_obj, n.k_off, n.k_type))"
		/* and the slot's own child belongs in it (a corrupt node pointing
		 * every slot at one leaf is evidence of nothing) */
		" AND (c.idx = 0 OR (c.k_dir, c.k_obj, c.k_off, c.k_type)"
		"   <= (cl.k_dir, cl.k_obj, cl.k_off, cl.k_type))"
		" AND (n.parent IS NULL OR (cl.k_dir, cl.k_obj, cl.k_off, cl.k_type)"
		"   < (n.k_dir, n.k_obj, n.k_off, n.k_type))";
	char cond[1400];
	unsigned long long root = c->fs->sb.root_block;
	snprintf(cond, sizeof(cond), slot_cond, root, root);
	snprintf(slot_sql, sizeof(slot_sql),
		 "UPDATE leaf SET status = 'rejected', reason = 'stale',"
		 " detail = 'superseded: internal node ' || (SELECT c.parent %s LIMIT 1)"
		 " || ' has another leaf where its keys belong'"
		 " WHERE status = 'accepted' AND reachable = 0 AND EXISTS (SELECT 1 %s);", cond, cond);
	if ((st = step_all(c, slot_sql, err)))
		return st;
	/* 7. item winners and conflicts: every item of an accepted leaf wins
	 * (the scan stored them all as winners), except where a key is in
	 * several leaves.  Leaves whose key ranges do not overlap have no such
	 * key (keyorder.c proves it on the items); else only the keys found
	 * twice (on the covering index item_key) are ranked. */
	if ((st = step_all(c, "UPDATE item SET win = 0 WHERE block IN"
			      " (SELECT block FROM leaf WHERE status IS NOT 'accepted');", err)))
		return st;
	if ((st = rb_keyorder_probe(c, err)))
		return st;
	if (!c->key_ordered && (st = rfs_index_build_item_lookup(c->ix, err)))
		return st;
	if (!c->key_ordered && (st = step_all(c,
		"DROP TABLE IF EXISTS temp.dupkey;"
		"CREATE TEMP TABLE dupkey AS SELECT dir_id, objectid, offset, type FROM item"
		" GROUP BY dir_id, objectid, offset, type HAVING count(*) > 1;"
		"CREATE TEMP TABLE IF NOT EXISTS ranked(block INTEGER, pos INTEGER, rn INTEGER,"
		" dir_id INTEGER, objectid INTEGER, offset INTEGER, type INTEGER, best INTEGER);"
		"DELETE FROM ranked;"
		"INSERT INTO ranked SELECT i.block, i.pos, ROW_NUMBER() OVER w, i.dir_id, i.objectid,"
		"  i.offset, i.type, FIRST_VALUE(i.block) OVER w"
		" FROM dupkey k JOIN item i ON i.dir_id = k.dir_id AND i.objectid = k.objectid"
		"  AND i.offset = k.offset AND i.type = k.type"
		" JOIN leaf l ON l.block = i.block WHERE l.status = 'accepted'"
		" WINDOW w AS (PARTITION BY i.dir_id, i.objectid, i.offset, i.type"
		"   ORDER BY l.reachable * 2 + l.used DESC, coalesce(i.sd_mtime, 0) DESC, i.block DESC);"
		"UPDATE item SET win = 0 WHERE (block, pos) IN (SELECT block, pos FROM ranked WHERE rn > 1);"
		"INSERT INTO conflict(dir_id, objectid, offset, type, winner, loser, reason)"
		" SELECT dir_id, objectid, offset, type, best, block, 'same key in a stronger leaf'"
		" FROM ranked WHERE rn > 1;", err)))
		return st;
	/* directory entries: hash-confirmed, from accepted leaves, one per offset
	 * (the strongest leaf's); namespace.c may still drop some */
	char sql[1024];
	snprintf(sql, sizeof(sql),
		/* the scan stored every name as kept */
		"UPDATE dirent SET why = 'hash-mismatch', keep = 0 WHERE (hmask & %d) = 0 AND block IN"
		" (SELECT block FROM leaf WHERE status = 'accepted');"
		"UPDATE dirent SET keep = 0 WHERE block IN"
		" (SELECT block FROM leaf WHERE status IS NOT 'accepted');"
		/* one name per (directory, offset): only offsets found twice are ranked */
		"DROP TABLE IF EXISTS temp.dupent;"
		"CREATE TEMP TABLE dupent AS SELECT dir_id, objectid, off FROM dirent"
		" GROUP BY dir_id, objectid, off HAVING count(*) > 1;"
		"UPDATE dirent SET keep = 0, why = 'duplicate-name' WHERE rowid IN (SELECT r FROM"
		" (SELECT d.rowid r, ROW_NUMBER() OVER (PARTITION BY d.dir_id, d.objectid, d.off"
		"   ORDER BY l.reachable * 2 + l.used DESC, d.block DESC) rn"
		"  FROM dupent k JOIN dirent d ON d.dir_id = k.dir_id AND d.objectid = k.objectid"
		"   AND d.off = k.off JOIN leaf l ON l.block = d.block"
		"  WHERE l.status = 'accepted' AND d.keep = 1) WHERE rn > 1);", 1 << slot);
	if ((st = step_all(c, sql, err)))
		return st;
	uint64_t v[2] = { 0, 0 };
	if ((st = rfs_index_query_u64(c->ix,
			"SELECT (SELECT count(*) FROM leaf WHERE status = 'accepted'),"
			" (SELECT count(*) FROM conflict)", v, 2, err)))
		return st;
	c->n.conflicts = v[1];
	/* the accepted bitmap */
	sqlite3_stmt *q;
	if ((st = rfs_index_prepare(c->ix, "SELECT block FROM leaf WHERE status = 'accepted'", &q, err)))
		return st;
	while (sqlite3_step(q) == SQLITE_ROW) {
		uint64_t b = (uint64_t)sqlite3_column_int64(q, 0);
		if (b < c->nblocks)
			rfs_bitmap_set(&c->accepted, b);
	}
	sqlite3_finalize(q);
	c->n.accepted = v[0];
	return rfs_index_query_u64(c->ix, "SELECT count(*) FROM leaf WHERE status = 'rejected'",
				   &c->n.rejected, 1, err);
}

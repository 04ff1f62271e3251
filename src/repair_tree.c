/*
 * repair_tree.c - runs the tree-shape repairs of `rfsck fix` (see
 * src/repair_tree.h) and the stat data helpers they share.
 */
#include "repair_tree.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static rfs_status write_through_repair(void *ctx, uint64_t blk, const void *buf,
				       struct rfs_error *err)
{
	return repair_write(ctx, blk, buf, err);
}

void repair_tree_note(const struct repair_tree_opts *o, const char *fmt, ...)
{
	if (!o->text)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs(o->dry_run ? "  (dry run) " : "  ", o->text);
	vfprintf(o->text, fmt, ap);
	fputc('\n', o->text);
	va_end(ap);
}

rfs_status repair_tree_get_sd(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			      struct rfs_stat *sd, bool *found, struct rfs_error *err)
{
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "stat data copy");
	struct rfs_key k = { dir_id, objectid, 0, RFS_TYPE_STAT };
	rfs_status st = rfs_tedit_seek(te, &k, &it, found, err);
	if (!st && *found)
		*found = rfs_key_cmp(&it.ih.key, &k) == 0 &&
			 rfs_stat_decode(it.body, it.ih.len, sd) == RFS_OK;
	rfs_tedit_item_free(&it);
	return st;
}

rfs_status repair_tree_put_sd(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			      const struct rfs_stat *sd, struct rfs_error *err)
{
	struct rfs_tedit_item it;
	if (rfs_tedit_item_alloc(te, &it))
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "stat data copy");
	struct rfs_key k = { dir_id, objectid, 0, RFS_TYPE_STAT };
	bool found;
	rfs_status st = rfs_tedit_seek(te, &k, &it, &found, err);
	if (!st && (!found || rfs_key_cmp(&it.ih.key, &k) != 0))
		st = rfs_error_set(err, RFS_ERR_NOT_FOUND, RFS_NO_BLOCK,
				   "stat data of [%u %u] vanished", dir_id, objectid);
	size_t len;
	if (!st && rfs_stat_encode(sd, it.body, it.ih.len, &len) != RFS_OK)
		st = rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				   "stat data of [%u %u] cannot hold the new values", dir_id, objectid);
	if (!st && len != it.ih.len)
		st = rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				   "stat data of [%u %u] changed version", dir_id, objectid);
	if (!st)
		st = rfs_tedit_replace(te, &it.ih, it.body, err);
	rfs_tedit_item_free(&it);
	return st;
}

rfs_status repair_tree_run(struct rfs_check *c, const struct repair_tree_opts *o,
			   struct rfs_error *err)
{
	/* Nothing to do unless a pass answered "fix" to one of these problems
	 * (a dry run answers like the real run). */
	bool safelinks = rfs_reporter_count(c->rep, PR_SAFELINK_PENDING) +
			 rfs_reporter_count(c->rep, PR_SAFELINK_BAD) > 0;
	bool orphans = o->relink && rfs_reporter_count(c->rep, PR_ORPHAN_OBJECT) > 0;
	if (!safelinks && !orphans)
		return RFS_OK;
	/* A tree with skipped subtrees, or a run cut short, gives no reliable
	 * picture of the objects: leave these repairs to a later run. */
	if (c->bad_nodes || c->skipped_semantic || rfs_reporter_exhausted(c->rep))
		return RFS_OK;
	struct rfs_tedit_options to = { .write = write_through_repair, .write_ctx = c };
	struct rfs_tedit *te;
	rfs_status st = rfs_tedit_open(c->fs, &to, &te, err);
	if (st)
		return st;
	if (safelinks)
		st = repair_safelinks(c, te, o, err);
	if (!st && orphans)
		st = repair_relink(c, te, o, err);
	uint64_t journaled, direct;
	rfs_tedit_counts(te, &journaled, &direct);
	if (journaled + direct)
		repair_tree_note(o, "tree changes: %llu commit(s)%s", (unsigned long long)(journaled + direct),
				 journaled ? ", each through the journal" : ", written home directly (no usable journal)");
	rfs_tedit_close(te);
	return st;
}

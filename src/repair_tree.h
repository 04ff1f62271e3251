/*
 * repair_tree.h - the repairs of `rfsck fix` that change the tree's shape,
 * made after the check passes have run in fix mode (so the tree, bitmaps,
 * free count and objectid map are consistent when they start), through the
 * tree-edit layer (include/rfs/tree_edit.h): every change is one journaled
 * commit, written through repair_write (undo log, --output or the --dry-run
 * overlay).
 *
 *   safe links (src/repair_safelink.c): what the kernel's mount does in
 *     finish_unfinished - each safe link, from the greatest key down, either
 *     finishes its unlink (the object's items go, from the last to the stat
 *     data, its blocks are freed and its objectid released) or its truncate
 *     (the file is cut to its stat data size), and the link item goes;
 *     invalid links are removed.  Driven by SAFELINK_PENDING / SAFELINK_BAD.
 *   relinking (src/repair_relink.c, only with --relink): objects no name
 *     reaches are linked into /lost+found (made when missing) as
 *     "<dirid>_<objectid>"; a relinked directory's ".." names /lost+found and
 *     the link counts follow.  Driven by ORPHAN_OBJECT.
 *
 * Each repair marks its problem fixed (problem_fixed) only once its commit is
 * written.  A repair that the tree-edit layer refuses (it would break the
 * tree) is left undone and said so on stderr; its problem stays counted, and
 * the final check reports it.
 */
#ifndef RFS_REPAIR_TREE_H
#define RFS_REPAIR_TREE_H

#include <stdio.h>

#include "check.h"
#include "rfs/tree_edit.h"

struct repair_tree_opts {
	bool relink;                 /* --relink: link orphans into /lost+found */
	bool dry_run;                /* wording of the detail lines only */
	FILE *text;                  /* detail lines (NULL: none) */
};

/* Runs the safe-link and relink repairs whose problems the passes answered
 * "fix" in c's reporter.  Returns an operational error only (I/O, memory);
 * c->written and c->blocks_written count the writes. */
rfs_status repair_tree_run(struct rfs_check *c, const struct repair_tree_opts *o,
			   struct rfs_error *err);

/* The two steps (also called by repair_tree_run in this order). */
rfs_status repair_safelinks(struct rfs_check *c, struct rfs_tedit *te,
			    const struct repair_tree_opts *o, struct rfs_error *err);
rfs_status repair_relink(struct rfs_check *c, struct rfs_tedit *te,
			 const struct repair_tree_opts *o, struct rfs_error *err);

/* Stat data of (dir_id, objectid) read through te; *found false when absent. */
rfs_status repair_tree_get_sd(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			      struct rfs_stat *sd, bool *found, struct rfs_error *err);
/* Rewrites the stat data of (dir_id, objectid) from sd (same version). */
rfs_status repair_tree_put_sd(struct rfs_tedit *te, uint32_t dir_id, uint32_t objectid,
			      const struct rfs_stat *sd, struct rfs_error *err);
/* Prints one detail line ("  " + text, "would" wording in a dry run). */
void repair_tree_note(const struct repair_tree_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/*
 * check_rules.h - the object-local rules of the namespace pass, as verdicts
 * without reports: file size against the body items, the stat data's block
 * count, and a 3.5 stat data's first direct byte.
 *
 * The tree pass asks check_rules_pass when an object ends and drops the
 * object's body (objtab.h) when it says true; the semantic pass judges with
 * the same functions.  So for every object without a body the semantic pass
 * would have found nothing.  That holds because nothing the rules read
 * changes after the object ends, except through repairs of a rule that
 * failed, a mode set from the items (MODE_FROM_ITEMS: never dropped) and a
 * safe link (the rules skip safe-linked objects).
 */
#ifndef RFS_CHECK_RULES_H
#define RFS_CHECK_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/fs.h"
#include "rfs/objtab.h"

/* A regular file's or symlink's size disagrees with its body items, or is
 * beyond any file of its stat data's version. */
bool check_rule_size_wrong(const struct rfs_fs *fs, const struct rfs_objinfo *o,
			   const struct rfs_objbody *b);
/* The block count the stat data should hold, in 512-byte units; false when
 * the rule does not apply. */
bool check_rule_blocks_want(const struct rfs_fs *fs, const struct rfs_objinfo *o,
			    const struct rfs_objbody *b, uint64_t *want);
/* The first_direct_byte a 3.5 stat data should hold; false when the rule
 * does not apply. */
bool check_rule_first_direct_want(const struct rfs_objinfo *o, const struct rfs_objbody *b,
				  uint32_t *want);
/* True when the semantic pass can have nothing to say about the object
 * beyond its names: no stat data, or a non-directory that passes every rule
 * above and whose type and items are not in question. */
bool check_rules_pass(const struct rfs_fs *fs, const struct rfs_objinfo *o,
		      const struct rfs_objbody *b);

#endif

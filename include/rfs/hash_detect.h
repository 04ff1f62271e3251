/*
 * hash_detect.h - which directory-name hash a volume uses, from its names.
 *
 * The superblock's hash code is one field with no copy; when it names no hash
 * the kernel refuses to mount (code 0 makes it probe the root directory).  The
 * names themselves are the evidence: each stored offset is the hash of its
 * name (bits 7..30), and a name matches a wrong hash only by a 2^-24 chance.
 *
 * Invariants:
 *  (1) Read-only: walks the tree in key order through a cursor, so every node
 *      it reads is validated; a node that fails ends the walk, and the verdict
 *      rests on the names read before it (complete says so).
 *  (2) At most RFS_HASH_DETECT_NAMES names are read: enough for a verdict, and
 *      the cost stays bounded on a volume of millions of names.
 *  (3) code is 1 (tea), 2 (rupasov) or 3 (r5) only when one hash matches more
 *      than half of the names and more than twice as many as any other; for a
 *      complete walk that found no name at all it is 3 (r5, what mkreiserfs
 *      and the kernel default to); otherwise 0 (undecided).
 */
#ifndef RFS_HASH_DETECT_H
#define RFS_HASH_DETECT_H

#include <stdbool.h>
#include <stdint.h>

#include "rfs/fs.h"

enum { RFS_HASH_DETECT_NAMES = 20000 };

struct rfs_hash_detect {
	uint32_t names;              /* names read (not "." or "..") */
	uint32_t votes[4];           /* [code]: names whose offset matches hash code */
	bool complete;               /* the walk reached the end of the tree */
	unsigned code;               /* the verdict: 1..3, or 0 undecided */
};

/* Fills *out; fails only on allocation (a damaged tree ends the walk). */
rfs_status rfs_hash_detect(struct rfs_fs *fs, struct rfs_hash_detect *out,
			   struct rfs_error *err);

#endif

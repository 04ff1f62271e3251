/*
 * problem.c - the problem table.  One row per code of include/rfs/problem.h, in
 * enum order (tests/unit/test_problem.c enforces order, uniqueness and wording).
 */
#include "rfs/problem.h"

#include <string.h>

#define P(code, grp, sev, msg, done, would) \
	{ PR_##code, #code, RFS_PG_##grp, RFS_SEV_##sev, msg, done, would, false }
/* A FIXABLE problem whose repair this version does not make yet. */
#define PL(code, grp, sev, msg, done, would) \
	{ PR_##code, #code, RFS_PG_##grp, RFS_SEV_##sev, msg, done, would, true }

static const struct rfs_problem_def problem_table[] = {
	{ PR_NONE, "NONE", RFS_PG_SUPER, RFS_SEV_INFO, "no problem", NULL, NULL, false },
	P(SB_BAD_BLOCKSIZE, SUPER, FATAL,
	  "superblock block size {found} is not a power of two from 512 to 65536", NULL, NULL),
	P(SB_BLOCK_COUNT_ZERO, SUPER, FATAL, "superblock block count is 0", NULL, NULL),
	P(SB_DEVICE_TOO_SMALL, SUPER, REBUILD,
	  "the device holds {found} blocks but the superblock says {expected}", NULL, NULL),
	P(SB_ROOT_OUT_OF_RANGE, SUPER, REBUILD,
	  "root block {found} is outside the filesystem or in its metadata area", NULL, NULL),
	P(SB_BAD_TREE_HEIGHT, SUPER, REBUILD,
	  "tree height {found} is not between 2 and 6", NULL, NULL),
	P(SB_BAD_HASH_CODE, SUPER, FIXABLE,
	  "hash code {found} is not tea (1), rupasov (2) or r5 (3); the directory names say {detail}",
	  "hash code set to {expected}", "would set hash code to {expected}"),
	P(SB_HASH_UNDECIDED, SUPER, REBUILD,
	  "hash code {found} is not tea (1), rupasov (2) or r5 (3), and the {expected} directory"
	  " names read do not show which one the volume uses ({detail}); rebuild with --hash"
	  " names it", NULL, NULL),
	P(SB_BMAP_NR_MISMATCH, SUPER, FIXABLE,
	  "bitmap count field is {found}, the block count implies {expected}",
	  "bitmap count set to {expected}", "would set bitmap count to {expected}"),
	P(SB_FREE_EXCEEDS_COUNT, SUPER, FIXABLE,
	  "free block count {found} exceeds the block count {expected}",
	  "free block count recomputed", "would recompute the free block count"),
	P(SB_BAD_OID_MAP_SIZE, SUPER, FIXABLE,
	  "objectid map uses {found} entries of {expected} (odd or over capacity)",
	  "objectid map rebuilt", "would rebuild the objectid map"),
	P(SB_OID_MAP_UNSORTED, SUPER, FIXABLE,
	  "objectid map entry {item} is not greater than the one before it",
	  "objectid map rebuilt", "would rebuild the objectid map"),
	P(SB_BAD_VERSION, SUPER, FIXABLE,
	  "superblock version {found} is neither 0 (3.5) nor 2 (3.6)",
	  "version set to {expected}", "would set version to {expected}"),
	P(SB_JOURNAL_EXTERNAL, SUPER, INFO,
	  "the journal is on another device ({found}); it is not read or replayed",
	  NULL, NULL),
	P(SB_JOURNAL_BAD_PLACEMENT, SUPER, REBUILD,
	  "journal blocks {found}.. overlap the superblock, bitmaps or the device end", NULL, NULL),
	P(SB_JOURNAL_BAD_SIZE, SUPER, REBUILD,
	  "journal size {found} is smaller than 512 blocks or does not fit", NULL, NULL),
	P(SB_JOURNAL_BAD_TRANS_MAX, SUPER, FIXABLE,
	  "journal transaction limit {found} does not fit a journal of {expected} blocks",
	  "transaction limit set to {detail}", "would set the transaction limit to {detail}"),
	P(SB_OLD_LOCATION, SUPER, INFO,
	  "superblock found at the old 8 KiB location (3.5 before mid-1999)", NULL, NULL),
	P(SB_FS_STATE_ERROR, SUPER, INFO,
	  "superblock state {found} says a previous run found errors", NULL, NULL),
	P(SB_UNCLEAN, SUPER, INFO, "filesystem was not cleanly unmounted", NULL, NULL),
	P(JOURNAL_HEADER_MISMATCH, JOURNAL, FIXABLE,
	  "journal header parameters differ from the superblock's",
	  "journal header rewritten", "would rewrite the journal header"),
	P(JOURNAL_HEADER_BAD, JOURNAL, FIXABLE,
	  "journal header offset {found} is beyond the journal size {expected}",
	  "journal header reset", "would reset the journal header"),
	P(JOURNAL_PENDING, JOURNAL, FIXABLE,
	  "{found} committed journal transaction(s) not yet written home",
	  "journal replayed", "would replay the journal"),
	P(JOURNAL_TRANS_BROKEN, JOURNAL, INFO,
	  "journal replay stops at a broken transaction: {detail}", NULL, NULL),
	P(NODE_READ_ERROR, TREE, REBUILD, "tree block {block} cannot be read: {detail}", NULL, NULL),
	P(NODE_BAD_LEVEL, TREE, REBUILD,
	  "tree block {block} has level {found}, {expected} expected", NULL, NULL),
	P(NODE_OUT_OF_RANGE, TREE, REBUILD,
	  "pointer to tree block {found} beyond the filesystem end {expected}", NULL, NULL),
	P(NODE_IN_METADATA, TREE, REBUILD,
	  "pointer to tree block {found} inside the superblock, bitmap or journal area", NULL, NULL),
	P(NODE_CLAIMED_TWICE, TREE, REBUILD,
	  "tree block {block} is reached twice (also from block {block2})", NULL, NULL),
	P(INTERNAL_BAD_NR_KEYS, TREE, REBUILD,
	  "internal node {block} has {found} keys, at most {expected} fit", NULL, NULL),
	P(INTERNAL_KEYS_UNSORTED, TREE, REBUILD,
	  "internal node {block}: key {item} is not greater than the key before it", NULL, NULL),
	P(INTERNAL_ZERO_CHILD, TREE, REBUILD,
	  "internal node {block}: child {item} points to block 0", NULL, NULL),
	P(INTERNAL_BAD_FREE_SPACE, TREE, FIXABLE,
	  "internal node {block}: free space {found}, {expected} expected",
	  "free space set to {expected}", "would set free space to {expected}"),
	P(LEAF_BAD_NR_ITEMS, TREE, REBUILD,
	  "leaf {block} says {found} items, at most {expected} fit", NULL, NULL),
	P(LEAF_ITEM_BAD_LOCATION, TREE, REBUILD,
	  "leaf {block}, item {item}: body at {found}, {expected} expected", NULL, NULL),
	P(LEAF_ITEM_BAD_LENGTH, TREE, REBUILD,
	  "leaf {block}, item {item}: body length {found} is impossible", NULL, NULL),
	P(LEAF_ITEM_OVERLAP, TREE, REBUILD,
	  "leaf {block}, item {item}: body overlaps the item head array", NULL, NULL),
	P(LEAF_BAD_FREE_SPACE, TREE, FIXABLE,
	  "leaf {block}: free space {found}, {expected} expected",
	  "free space set to {expected}", "would set free space to {expected}"),
	P(LEAF_KEYS_UNSORTED, TREE, REBUILD,
	  "leaf {block}, item {item}: key {key} is not greater than the key before it", NULL, NULL),
	P(ITEM_BAD_TYPE, ITEM, REBUILD,
	  "leaf {block}, item {item}: key {key} has no valid item type", NULL, NULL),
	P(ITEM_FLAGS_SET, ITEM, FIXABLE,
	  "leaf {block}, item {item}: fsck flags 0x{found} left in the item head",
	  "flags cleared", "would clear the flags"),
	P(ITEM_BAD_KEY_FORMAT, ITEM, FIXABLE,
	  "leaf {block}, item {item}: item head says key format {found}, the key is format {expected}",
	  "key format set to {expected}", "would set the key format to {expected}"),
	P(STAT_BAD_LENGTH, ITEM, REBUILD,
	  "leaf {block}, item {item}: stat data of {found} bytes (32 or 44 expected)", NULL, NULL),
	P(INDIRECT_BAD_LENGTH, ITEM, REBUILD,
	  "leaf {block}, item {item}: indirect item length {found} is not a multiple of 4", NULL, NULL),
	P(DIRECT_TOO_LONG, ITEM, REBUILD,
	  "leaf {block}, item {item}: direct item of {found} bytes, at most {expected}", NULL, NULL),
	P(DIR_NO_ENTRIES, DIR, REBUILD,
	  "leaf {block}, item {item}: directory item with no entries", NULL, NULL),
	P(DIR_COUNT_TOO_BIG, DIR, REBUILD,
	  "leaf {block}, item {item}: {found} entries cannot fit in {expected} bytes", NULL, NULL),
	P(DIR_BAD_LOCATION, DIR, REBUILD,
	  "leaf {block}, item {item}, entry {entry}: name location {found} out of order or range",
	  NULL, NULL),
	P(DIR_OFFSETS_UNSORTED, DIR, REBUILD,
	  "leaf {block}, item {item}, entry {entry}: hash offset {found} not above the previous one",
	  NULL, NULL),
	P(DIR_NAME_EMPTY, DIR, REBUILD,
	  "leaf {block}, item {item}, entry {entry}: empty name", NULL, NULL),
	P(DIR_LAST_NAME_GAP, DIR, REBUILD,
	  "leaf {block}, item {item}: last name starts at {found}, right after the heads ({expected}) expected",
	  NULL, NULL),
	P(DIR_BAD_HASH, DIR, REBUILD,
	  "leaf {block}, item {item}, entry {entry}: name \"{name}\" hashes to {expected}, stored {found}",
	  NULL, NULL),
	P(DIR_ENTRY_STATE, DIR, FIXABLE,
	  "leaf {block}, item {item}, entry {entry}: state {found}, visible (4) expected",
	  "state set to visible", "would set the state to visible"),
	P(SB_TREE_HEIGHT_WRONG, SUPER, FIXABLE,
	  "tree height field is {found}, the root node's level makes it {expected}",
	  "tree height set to {expected}", "would set the tree height to {expected}"),
	P(NODE_DELIM_LEFT, TREE, REBUILD,
	  "tree block {block}: first key {key} differs from the delimiting key in parent {block2}",
	  NULL, NULL),
	P(NODE_DELIM_RIGHT, TREE, REBUILD,
	  "tree block {block}: key {key} is not below the delimiting key in parent {block2}",
	  NULL, NULL),
	P(INTERNAL_DC_SIZE, TREE, FIXABLE,
	  "internal node {block}: child {item} (block {block2}) recorded as {found} bytes used, it uses {expected}",
	  "child size set to {expected}", "would set the child size to {expected}"),
	P(ITEM_NO_STAT_DATA, ITEM, REBUILD,
	  "leaf {block}, item {item}: {key} does not follow its object's stat data", NULL, NULL),
	P(FILE_ITEMS_GAP, FILE, REBUILD,
	  "leaf {block}, item {item}: {key} starts at byte {found}, the previous item ends at {expected}",
	  NULL, NULL),
	P(ITEM_AFTER_TAIL, ITEM, REBUILD,
	  "leaf {block}, item {item}: {key} follows the file's tail (a direct item is always last)",
	  NULL, NULL),
	P(TAIL_CROSSES_BLOCK, ITEM, REBUILD,
	  "leaf {block}, item {item}: tail {key} reaches byte {found}, past the end of its block at {expected}",
	  NULL, NULL),
	P(ITEM_TYPE_MISMATCH, ITEM, REBUILD,
	  "leaf {block}, item {item}: {key} does not belong to an object whose stat data says {detail}",
	  NULL, NULL),
	P(ITEMS_MERGEABLE, ITEM, REBUILD,
	  "leaf {block}, item {item}: {key} sits right after the object's {detail} item in the same leaf (the kernel merges such items)",
	  NULL, NULL),
	P(INDIRECT_PTR_OUT_OF_RANGE, ITEM, FIXABLE,
	  "leaf {block}, item {item}, pointer {entry}: block {found} is beyond the end ({expected})",
	  "pointer zeroed (the file gets a hole)", "would zero the pointer (the file would get a hole)"),
	P(INDIRECT_PTR_METADATA, ITEM, FIXABLE,
	  "leaf {block}, item {item}, pointer {entry}: block {found} is superblock, bitmap or journal",
	  "pointer zeroed (the file gets a hole)", "would zero the pointer (the file would get a hole)"),
	P(INDIRECT_PTR_SHARED, ITEM, FIXABLE,
	  "leaf {block}, item {item}, pointer {entry}: block {found} is already used by the tree or another file",
	  "pointer zeroed (the file gets a hole)", "would zero the pointer (the file would get a hole)"),
	P(SAFELINK_BAD, ITEM, FIXABLE,
	  "leaf {block}, item {item}: safe link {key} is malformed or names no object",
	  "safe link removed", "would remove the safe link"),
	P(SAFELINK_PENDING, ITEM, FIXABLE,
	  "object [{found} {expected}] has a pending {detail} (open when the volume went down)",
	  "{detail} finished as the kernel's mount does, safe link removed",
	  "would finish the {detail} as the kernel's mount does (unlink: delete the object and "
	  "free its blocks; truncate: cut the file to its size) and remove the safe link"),
	P(STAT_OBJECTID_FREE, ALLOC, FIXABLE,
	  "object {key} uses objectid {found}, which the objectid map marks free",
	  "objectid map rebuilt", "would rebuild the objectid map"),
	P(BITMAP_READ_ERROR, BITMAP, FIXABLE,
	  "bitmap block {block} cannot be read: {detail}",
	  "bitmap block rewritten", "would rewrite the bitmap block"),
	P(BITMAP_USED_MARKED_FREE, BITMAP, FIXABLE,
	  "blocks {block}..{block2} ({found}) are in use but marked free",
	  "marked used", "would mark them used"),
	P(BITMAP_LEAKED_BLOCK, BITMAP, FIXABLE,
	  "blocks {block}..{block2} ({found}) are marked used but nothing uses them",
	  "marked free", "would mark them free"),
	P(BITMAP_TAIL_BITS, BITMAP, FIXABLE,
	  "bitmap block {block}: {found} bits past the last block are clear",
	  "bits set", "would set the bits"),
	P(BITMAP_FREE_COUNT, BITMAP, FIXABLE,
	  "free block count is {found}, the bitmaps say {expected}",
	  "free count set to {expected}", "would set the free count to {expected}"),
	P(ROOT_MISSING, SEMANTIC, REBUILD, "the root directory [1 2] has no stat data", NULL, NULL),
	P(ROOT_NOT_DIR, SEMANTIC, REBUILD, "the root object [1 2] is not a directory (mode {found})",
	  NULL, NULL),
	P(ENTRY_POINTS_NOWHERE, SEMANTIC, FIXABLE,
	  "{path}: the entry points to object {key}, which does not exist",
	  "entry removed", "would remove the entry"),
	P(DIR_LOOP, SEMANTIC, FIXABLE,
	  "{path}: directory {key} is reached a second time (cycle or hard link to a directory)",
	  "entry removed", "would remove the entry"),
	P(DOT_WRONG, SEMANTIC, FIXABLE, "{path}: \".\" points to {key}, not to the directory itself",
	  "\".\" corrected", "would correct \".\""),
	P(DOTDOT_WRONG, SEMANTIC, FIXABLE, "{path}: \"..\" points to {key}, not to the parent",
	  "\"..\" corrected", "would correct \"..\""),
	P(NLINK_WRONG, SEMANTIC, FIXABLE, "object {key}: link count is {found}, {expected} found",
	  "link count set to {expected}", "would set the link count to {expected}"),
	P(FILE_SIZE_WRONG, SEMANTIC, FIXABLE, "{path}: size is {found}, the items hold {expected} bytes",
	  "size set to {expected}", "would set the size to {expected}"),
	P(DIR_SIZE_WRONG, SEMANTIC, FIXABLE, "{path}: directory size is {found}, its entries take {expected}",
	  "size set to {expected}", "would set the size to {expected}"),
	P(ORPHAN_OBJECT, SEMANTIC, FIXABLE, "object {key} has a stat data but no name reaches it",
	  "reachable again: linked into /lost+found as DIRID_OBJECTID (or through a directory that is)",
	  "would make it reachable: link it into /lost+found as DIRID_OBJECTID (or a directory that names it)"),
	P(BLOCKS_WRONG, SEMANTIC, FIXABLE,
	  "object {key}: block count is {found} (512-byte units), the items take {expected}",
	  "block count set to {expected}", "would set the block count to {expected}"),
	P(FIRST_DIRECT_BYTE_WRONG, SEMANTIC, FIXABLE,
	  "object {key}: 3.5 stat data says the tail starts at byte {found}, the items say {expected}",
	  "first_direct_byte set to {expected}", "would set first_direct_byte to {expected}"),
	P(MODE_WRONG, SEMANTIC, FIXABLE,
	  "object {key}: mode {found_octal} says {detail}, every item of the object says otherwise",
	  "mode set to {expected_octal}", "would set the mode to {expected_octal}"),
};

_Static_assert(sizeof(problem_table) / sizeof(problem_table[0]) == PR_CODE_COUNT,
	       "problem_table must have one row per code");

const struct rfs_problem_def *rfs_problem_table(unsigned *count)
{
	*count = PR_CODE_COUNT;
	return problem_table;
}

const struct rfs_problem_def *rfs_problem_def(enum rfs_problem_code code)
{
	if (code <= PR_NONE || code >= PR_CODE_COUNT)
		return NULL;
	return &problem_table[code];
}

enum rfs_problem_code rfs_problem_by_name(const char *name)
{
	if (strncmp(name, "PR_", 3) == 0)
		name += 3;
	for (unsigned i = 1; i < PR_CODE_COUNT; i++)
		if (strcmp(problem_table[i].name, name) == 0)
			return problem_table[i].code;
	return PR_NONE;
}

const char *rfs_severity_name(enum rfs_severity sev)
{
	switch (sev) {
	case RFS_SEV_INFO: return "info";
	case RFS_SEV_FIXABLE: return "fixable";
	case RFS_SEV_REBUILD: return "needs-rebuild";
	case RFS_SEV_FATAL: return "fatal";
	}
	return "unknown";
}

const char *rfs_problem_group_name(enum rfs_problem_group group)
{
	static const char *const names[] = {
		"superblock", "bitmap", "journal", "tree", "item", "directory", "file",
		"allocation", "semantic", "device",
	};
	if ((unsigned)group >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[group];
}

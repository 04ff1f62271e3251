-- schema.sql - the rebuild evidence index (SQLite).
--
-- One database per scanned image.  Every block the scan found interesting is a
-- row; every accept/reject decision is a column with a reason, so the report is
-- a query over these rows.  Inspect with the sqlite3 shell.
--
-- Invariants:
--  * meta('identity') names the image the rows describe (size, block size,
--    superblock checksum); an index whose identity differs is discarded.
--  * meta('scan_next') is the first block not yet scanned; rows for blocks
--    below it are complete (one transaction per batch of blocks commits the
--    rows and the new scan_next together), so a killed scan resumes there.
--  * Block numbers are filesystem blocks of the outer volume.

CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

-- Leaf candidates: level-1 blocks that pass the cheap test.
--   area      0 = main area, 1 = journal area (older copies, never used)
--   valid     1 = passed full structural validation
--   fault     problem code of the first structural fault (invalid leaves)
--   checksum  64-bit hash of the whole block (rb_checksum; duplicates)
--   used      marked used in the on-disk bitmap at scan time
--   votes_*   directory names that hash to their stored offset, per hash
--   names     directory names checked (excluding "." and "..")
--   status    NULL (undecided), 'accepted' or 'rejected'
--   reason    why (see docs/rebuild.md): file-data, nested, invalid,
--             hash-unconfirmed, duplicate, journal-copy
CREATE TABLE IF NOT EXISTS leaf (
	block     INTEGER PRIMARY KEY,
	area      INTEGER NOT NULL,
	valid     INTEGER NOT NULL,
	fault     TEXT,
	nr_items  INTEGER NOT NULL,
	checksum  INTEGER NOT NULL,
	used      INTEGER NOT NULL,
	votes_r5  INTEGER NOT NULL DEFAULT 0,
	votes_tea INTEGER NOT NULL DEFAULT 0,
	votes_rup INTEGER NOT NULL DEFAULT 0,
	names     INTEGER NOT NULL DEFAULT 0,
	reachable INTEGER NOT NULL DEFAULT 0,
	k_dir     INTEGER,             -- first key of the leaf
	k_obj     INTEGER,
	k_off     INTEGER,
	k_type    INTEGER,
	status    TEXT,
	reason    TEXT,
	detail    TEXT
);

-- Items of valid leaves.  sd_mtime/sd_mode only for stat data (conflicts).
--   win   1 when the item goes into the rebuilt tree; the scan stores 1 and
--         decide clears it for the items of rejected leaves and for the
--         losers of a key found in several leaves
CREATE TABLE IF NOT EXISTS item (
	block     INTEGER NOT NULL,
	pos       INTEGER NOT NULL,
	dir_id    INTEGER NOT NULL,
	objectid  INTEGER NOT NULL,
	offset    INTEGER NOT NULL,
	type      INTEGER NOT NULL,
	fmt       INTEGER NOT NULL,
	len       INTEGER NOT NULL,
	sd_mode   INTEGER,
	sd_mtime  INTEGER,
	win       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (block, pos)
) WITHOUT ROWID;

-- Indirect pointers, as runs of consecutive block numbers: item (block, pos)
-- claims blocks [first, first + count) as data of its file, starting at byte
-- file_offset (0-based).
CREATE TABLE IF NOT EXISTS claim (
	first       INTEGER NOT NULL,
	count       INTEGER NOT NULL,
	block       INTEGER NOT NULL,
	pos         INTEGER NOT NULL,
	dir_id      INTEGER NOT NULL,
	objectid    INTEGER NOT NULL,
	file_offset INTEGER NOT NULL
);

-- Directory entries of valid leaves (including "." and "..").
--   fmt    key format of the directory item holding it
--   slot   bytes the name takes in the item (padding included); 0 when
--          synthesized (then the directory's stat data version decides)
--   hmask  bit 0 r5, bit 1 tea, bit 2 rupasov: hashes the name matches
--   keep   1 when the entry goes into the rebuilt tree (the scan stores 1,
--          decide and namespace.c clear it)
CREATE TABLE IF NOT EXISTS dirent (
	dir_id    INTEGER NOT NULL,
	objectid  INTEGER NOT NULL,
	off       INTEGER NOT NULL,
	t_dir_id  INTEGER NOT NULL,
	t_objectid INTEGER NOT NULL,
	name      BLOB NOT NULL,
	state     INTEGER NOT NULL,
	fmt       INTEGER NOT NULL,
	slot      INTEGER NOT NULL DEFAULT 0,
	block     INTEGER,
	pos       INTEGER,
	hmask     INTEGER NOT NULL,
	keep      INTEGER NOT NULL DEFAULT 0,
	why       TEXT
);

-- Internal nodes found by the scan (hints: which leaves a tree referenced).
-- internal_child holds each child with its left delimiting key (the node's
-- key idx-1; NULL for child 0).
CREATE TABLE IF NOT EXISTS internal (
	block   INTEGER PRIMARY KEY,
	level   INTEGER NOT NULL,
	nr_keys INTEGER NOT NULL,
	area    INTEGER NOT NULL,
	status  TEXT
);
CREATE TABLE IF NOT EXISTS internal_child (
	parent INTEGER NOT NULL,
	idx    INTEGER NOT NULL,
	child  INTEGER NOT NULL,
	k_dir  INTEGER,
	k_obj  INTEGER,
	k_off  INTEGER,
	k_type INTEGER
);

-- Blocks other than the volume's superblock that carry a ReiserFS superblock.
--   start_byte  where that filesystem would begin in the outer volume
--   status      'nested' (an extent was derived) or 'inside' (a copy inside
--               another nested filesystem's extent, e.g. its journal)
CREATE TABLE IF NOT EXISTS nested (
	sb_block    INTEGER PRIMARY KEY,
	start_byte  INTEGER NOT NULL,
	block_size  INTEGER NOT NULL,
	block_count INTEGER NOT NULL,
	magic       TEXT NOT NULL,
	root        INTEGER NOT NULL,
	height      INTEGER NOT NULL,
	holder_dir_id   INTEGER,
	holder_objectid INTEGER,
	libmagic    TEXT,
	excluded    INTEGER NOT NULL DEFAULT 0,
	status      TEXT
);

-- Blocks the scan could not read.
CREATE TABLE IF NOT EXISTS unreadable (
	block INTEGER PRIMARY KEY,
	error TEXT NOT NULL
);

-- Conflicts: the same key (or overlapping data) in several accepted leaves.
CREATE TABLE IF NOT EXISTS conflict (
	dir_id   INTEGER NOT NULL,
	objectid INTEGER NOT NULL,
	offset   INTEGER NOT NULL,
	type     INTEGER NOT NULL,
	winner   INTEGER,
	loser    INTEGER NOT NULL,
	reason   TEXT NOT NULL
);

-- What the namespace pass did to objects: lost+found links, created stat data,
-- removed names, partial files.
CREATE TABLE IF NOT EXISTS outcome (
	dir_id   INTEGER NOT NULL,
	objectid INTEGER NOT NULL,
	what     TEXT NOT NULL,
	detail   TEXT
);

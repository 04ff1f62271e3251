/*
 * salvage.h - copying every object of a ReiserFS image out into a directory
 * (`rfsck salvage`), never writing to the image.
 *
 * The walk (src/salvage.c) starts at the root directory and extracts regular
 * files, directories and symlinks under OUTDIR/root/, recording every object
 * (devices, FIFOs and sockets included) in OUTDIR/manifest.jsonl and
 * OUTDIR/bodyfile.  The command (src/cmd_salvage.c) adds report.json.
 *
 * Safety invariants (docs/salvage.md):
 *  (1) Nothing is created outside OUTDIR: every file system call is an *at()
 *      call relative to a directory fd that salvage created itself and opened
 *      O_DIRECTORY|O_NOFOLLOW; files are created O_CREAT|O_EXCL|O_NOFOLLOW;
 *      no path with more than one component is ever resolved, except hard-link
 *      sources, whose components are walked one openat(O_NOFOLLOW) at a time.
 *  (2) Names from the image never reach the output file system unescaped:
 *      salvage_name_escape() is the only producer of output names, and its
 *      output contains no '/' or NUL, is never "", "." or "..", and is at most
 *      SALVAGE_NAME_MAX bytes.
 *  (3) The walk terminates: each directory is entered once (visited set), the
 *      depth is bounded, and each object's body is streamed once; holes and
 *      sizes beyond the items are written as holes, never as zeros.
 */
#ifndef RFS_SALVAGE_H
#define RFS_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rfs/fs.h"
#include "rfs/status.h"
#include "rfs/progress.h"

struct strbuf;
struct rfs_bitmap;
struct rfs_index;

enum {
	SALVAGE_NAME_MAX = 255,      /* bytes in one output name (NAME_MAX) */
	SALVAGE_DEPTH_MAX = 1000,    /* directory levels below the root */
};

/* Writes the output name of an entry name (len bytes, any values) into out
 * (at least SALVAGE_NAME_MAX + 1 bytes), NUL-terminated, and returns its
 * length.  The rule (reversible for names whose escape fits in 255 bytes):
 *   - '%', '/', NUL -> "%XX" (two upper-case hex digits); all other bytes pass;
 *   - the names "." and ".." -> "%2E" and "%2E%2E"; the empty name -> "%";
 *   - an escape longer than 255 bytes is cut at an escape boundary at most 236
 *     bytes long and followed by "%+" and 16 hex digits of the SHA-256 of the
 *     original bytes (not reversible by itself: the manifest's path_hex is).
 * *escaped (may be NULL) tells whether the output differs from the input. */
size_t salvage_name_escape(const uint8_t *name, size_t len, char *out, bool *escaped);

/* Inverse of salvage_name_escape for outputs without the "%+" suffix: writes
 * the original bytes into out (at least strlen(s) bytes) and their count into
 * *len.  RFS_ERR_INVALID for a string that no name escapes to. */
rfs_status salvage_name_unescape(const char *s, uint8_t *out, size_t *len);

struct salvage_options {
	int outdir_fd;               /* OUTDIR, opened O_DIRECTORY|O_NOFOLLOW */
	bool devices;                /* --devices: mknod devices, FIFOs, sockets */
	bool chown;                  /* set ownership (running as root) */
	FILE *manifest;              /* OUTDIR/manifest.jsonl, written here */
	FILE *bodyfile;              /* OUTDIR/bodyfile, written here */
	struct rfs_progress *progress;  /* may be NULL */
	/* Damaged-tree mode (the tree rebuilt in memory from scanned leaves):
	 * the directory holding the objects no name reaches (0, 0 = none), whose
	 * entries are extracted under OUTDIR/lost+found/<dirid>_<objectid> with a
	 * file extension libmagic suggests and status "orphan"; and the byte
	 * ranges the rebuild could not find for a file ("[[from,to],...]",
	 * malloc'd, or NULL), which make it "partial". */
	uint32_t orphan_dir_id, orphan_objectid;
	char *(*missing_ranges)(void *ctx, uint32_t dir_id, uint32_t objectid);
	void *missing_ctx;
	/* --deleted: called for every directory the walk enters, with its image
	 * path and its OUTDIR-relative output path, so that deleted names found
	 * under it can be placed (salvage_deleted_dir_entered); NULL = none.
	 * A failure (RFS_ERR_NOMEM) stops the walk. */
	rfs_status (*dir_entered)(void *ctx, uint32_t dir_id, uint32_t objectid,
				  const struct strbuf *ipath, const struct strbuf *opath);
	void *dir_ctx;
};

/* One object that could not be read or written completely. */
struct salvage_problem {
	char *path;                  /* escaped image path (display) */
	uint32_t dir_id, objectid;
	char *what;                  /* one line */
};

struct salvage_totals {
	uint64_t files, dirs, symlinks, others;   /* objects recorded */
	uint64_t hardlinks;          /* extra names linked to an earlier file */
	uint64_t bytes;              /* data bytes written (holes excluded) */
	uint64_t escaped_names;
	uint64_t not_created;        /* devices/FIFOs/sockets recorded only */
	uint64_t errors;             /* objects with a problem (see problems) */
	struct salvage_problem *problems;
	size_t nproblems;            /* the first SALVAGE_PROBLEMS_KEPT are kept */
};

enum { SALVAGE_PROBLEMS_KEPT = 10000 };

/* Walks the tree of fs from the root and extracts it under
 * opt->outdir_fd/root.  Problems with single objects (unreadable stat data,
 * directory items, file bodies) are counted in totals and the walk goes on.
 * Returns RFS_OK, or an operational failure: RFS_ERR_IO for a failed write
 * into OUTDIR (err names the path), RFS_ERR_NOMEM.  The caller frees
 * totals with salvage_totals_free. */
rfs_status salvage_run(struct rfs_fs *fs, const struct salvage_options *opt,
		       struct salvage_totals *totals, struct rfs_error *err);
void salvage_totals_free(struct salvage_totals *t);

/* ------------------------------------------------------------------------- */
/* --deleted (src/salvage_deleted.c finds, src/salvage_deleted_write.c
 * writes; docs/salvage.md, "Deleted objects").
 *
 * A deleted object is one whose key the walked tree does not hold, of which
 * a stat data item survives in a stale leaf: a leaf in a block the allocation
 * bitmap marks free, or a leaf copy in the journal area.  Its items, names
 * (from stale directory items) and data (from blocks nothing uses now) are
 * extracted under OUTDIR/deleted/, status "deleted", never among the live
 * objects; a live object's items are never taken from a stale copy.
 *
 * Invariants:
 *  (1) Nothing is read but the image as the kernel would mount it
 *      (disk_fs); the tree rebuilt in memory (damaged-tree mode) only says
 *      which keys and blocks are live.
 *  (2) A data block in use now (allocation bitmap, the live tree, a live
 *      file), inside the metadata area, holding a newer stale leaf, or
 *      claimed by a newer (or equally new) deleted object is never presented
 *      as a deleted file's content: its bytes are a hole listed in `missing`.
 *  (3) Memory grows with the stale items found (at most
 *      SALVAGE_DELETED_RECORDS_MAX records); time with the blocks read. */
enum { SALVAGE_DELETED_RECORDS_MAX = 1 << 22 };

struct salvage_deleted;

struct salvage_deleted_options {
	struct rfs_fs *live_fs;      /* the tree salvage walks (the image's, or one
				      * rebuilt in memory) */
	struct rfs_fs *disk_fs;      /* the image, journal replayed in memory, nothing
				      * rebuilt: stale leaves and data are read here
				      * (may be live_fs) */
	bool live_nodes_on_disk;     /* live_fs's tree nodes are blocks of the image
				      * (false when the tree was rebuilt in memory) */
	const struct rfs_bitmap *used;      /* allocation bitmap (NULL: load disk_fs's) */
	const struct rfs_bitmap *in_use[2]; /* more blocks in use now (rebuild's
					     * accepted leaves, claimed data); may be NULL */
	const struct rfs_bitmap *excluded;  /* never read as stale leaves (nested
					     * filesystems); may be NULL */
	struct rfs_index *index;     /* rebuild's evidence index: its leaf rows spare
				      * reading blocks it scanned and found no leaf in;
				      * may be NULL */
	struct rfs_progress *progress;  /* may be NULL */
};

struct salvage_deleted_totals {
	/* the scan */
	uint64_t blocks_read;        /* free and journal blocks read */
	bool from_index;             /* the index's leaf rows chose the free blocks read */
	uint64_t blocks_skipped_by_index;  /* known from the index to hold no leaf */
	uint64_t unreadable;         /* blocks the scan could not read */
	uint64_t leaves_free, leaves_journal;  /* valid stale leaves (copies) */
	uint64_t leaves_invalid;     /* leaf-looking blocks that fail validation */
	uint64_t leaves_as_data;     /* free leaves taken for a deleted file's data */
	uint64_t journal_transactions;  /* valid transactions found in the log */
	uint64_t live_items_skipped; /* stale items of keys the tree holds */
	bool records_truncated;      /* SALVAGE_DELETED_RECORDS_MAX reached */
	bool live_incomplete;        /* the tree could not be walked to its end */
	char live_error[200];        /* why (live_incomplete) */
	/* the objects */
	uint64_t objects, files, dirs, symlinks, others;
	uint64_t files_complete;     /* every byte recovered (sha256 given) */
	uint64_t files_partial;      /* with missing ranges */
	uint64_t unresolved;         /* no stale name reaches them */
	uint64_t names_only;         /* names whose object left no stat data */
	uint64_t old_names;          /* stale names of live objects their directory
				      * no longer has (renamed, moved, unlinked) */
	uint64_t without_stat_data;  /* body items only: not extracted */
	uint64_t not_created;        /* devices etc. recorded only */
	uint64_t bytes;              /* data bytes written */
};

/* Finds the deleted objects: walks live_fs's tree (live keys and blocks),
 * reads the journal area and every free block (or only those the index
 * holds leaves in), chooses the newest copy of each item and the names.
 * RFS_OK (also when the tree walk stopped early: totals say so and nothing
 * is extracted), RFS_ERR_NOMEM, RFS_ERR_IO only for a failure that is not a
 * block read.  *out is freed with salvage_deleted_free. */
rfs_status salvage_deleted_scan(const struct salvage_deleted_options *o,
				struct salvage_deleted **out, struct rfs_error *err);
/* The walk's dir_entered hook (ctx is the struct salvage_deleted). */
rfs_status salvage_deleted_dir_entered(void *ctx, uint32_t dir_id, uint32_t objectid,
				       const struct strbuf *ipath, const struct strbuf *opath);
/* Creates OUTDIR/deleted and extracts the deleted objects into it, appending
 * their manifest and body-file lines (after the walk).  Errors are
 * operational, as for salvage_run. */
rfs_status salvage_deleted_extract(struct salvage_deleted *d, const struct salvage_options *opt,
				   struct rfs_error *err);
const struct salvage_deleted_totals *salvage_deleted_get_totals(const struct salvage_deleted *d);
void salvage_deleted_free(struct salvage_deleted *d);

#endif

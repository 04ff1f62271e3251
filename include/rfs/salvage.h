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

#endif

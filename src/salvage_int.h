/*
 * salvage_int.h - what src/salvage.c and src/salvage_record.c share: one
 * record per object found by the walk, written as one manifest line and one
 * body-file line.
 */
#ifndef RFS_SALVAGE_INT_H
#define RFS_SALVAGE_INT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "rfs/object.h"
#include "rfs/salvage.h"
#include "rfs/sha256.h"
#include "rfs/strbuf.h"

/* Byte ranges of a file that could not be read: pairs [from, to) in v. */
struct salvage_missing {
	uint64_t *v;
	size_t n, cap;               /* ranges used, ranges allocated */
	uint64_t skipped_items;      /* overlapping or misaligned items skipped */
	char first_reason[240];      /* why the first range is missing */
};

struct salvage_record {
	const struct strbuf *ipath;  /* image path bytes; "" is the root */
	const struct strbuf *opath;  /* OUTDIR-relative output path */
	uint32_t dir_id, objectid;   /* the key the entry points to */
	struct rfs_object obj;       /* valid when have_obj */
	bool have_obj;
	const char *status;          /* "complete", "partial", "unreadable",
				      * "not_extracted"; later also "orphan",
				      * "deleted" (damaged-tree mode) */
	bool extracted;              /* something exists at opath */
	bool name_escaped;
	char sha256[RFS_SHA256_HEX_LEN + 1];
	bool have_sha256;
	struct strbuf target;        /* symlink target bytes (owned) */
	struct salvage_missing miss; /* byte ranges that could not be read */
	const char *hardlink_of;     /* OUTDIR-relative first path (not owned) */
	uint64_t *runs;              /* data block runs: first, count, first, ... */
	size_t nruns;
	uint64_t *leaves;            /* leaves holding the object's items */
	size_t nleaves;
	bool blocks_incomplete;
	struct strbuf note;          /* "; "-separated remarks (owned) */
};

void salvage_record_init(struct salvage_record *rec, const struct strbuf *ipath,
			 const struct strbuf *opath);
void salvage_record_free(struct salvage_record *rec);

/* Replaces the last component of opath by name (after a collision suffix). */
void salvage_record_rename(struct strbuf *opath, const char *name);

/* Fills rec->runs and rec->leaves by walking the object's items (moves the
 * cursor).  Failures only mark the lists incomplete. */
void salvage_record_blocks(struct rfs_cursor *cur, struct salvage_record *rec);

/* Streams a regular file's body like rfs_object_read, but goes on past
 * unreadable blocks, bad pointers, overlapping items and an unreadable next
 * leaf: those byte ranges are delivered as holes and added to *miss (owned by
 * the caller, freed with the record).  size is the number of bytes to
 * deliver (already clipped to the format limit).  RFS_ERR_NOMEM only; fn
 * returning non-zero stops the walk. */
rfs_status salvage_body_read(struct rfs_cursor *cur, const struct rfs_object *obj, uint64_t size,
			     rfs_data_fn fn, void *ctx, struct salvage_missing *miss);

/* Creating one name in OUTDIR (src/salvage_write.c). */
enum salvage_make_kind { SALVAGE_MK_DIR, SALVAGE_MK_FILE, SALVAGE_MK_SYMLINK, SALVAGE_MK_NODE,
			 SALVAGE_MK_LINK };

struct salvage_make {
	enum salvage_make_kind kind;
	const char *target;          /* SYMLINK: the target string */
	mode_t mode;                 /* NODE: type bits and permissions */
	dev_t dev;                   /* NODE: device number */
	int src_dirfd;               /* LINK: directory of the source */
	const char *src_name;        /* LINK: the source's name in it */
	int fd;                      /* OUT: FILE's descriptor (O_WRONLY) */
};

/* Creates base in dirfd (a directory salvage created), or, when the name
 * exists, base + "%~N" for N = 2..1000; used (SALVAGE_NAME_MAX + 1 bytes)
 * receives the name created.  0, or -1 with errno. */
int salvage_make_unique(int dirfd, const char *base, struct salvage_make *a,
			char used[SALVAGE_NAME_MAX + 1]);

/* Opens the directory holding the last component of relpath (OUTDIR-relative,
 * '/'-separated names salvage created), one openat(O_NOFOLLOW) per component;
 * *leaf points at the last component inside relpath.  A descriptor the caller
 * closes, or -1 with errno. */
int salvage_open_parent(int outdir_fd, const char *relpath, const char **leaf);

/* Owner (when chown), mode and atime/mtime of an object, through its fd or by
 * name in dirfd without following symlinks; failures become remarks in note. */
void salvage_set_attrs_fd(bool chown, int fd, const struct rfs_stat *sd, struct strbuf *note);
void salvage_set_attrs_at(bool chown, int dirfd, const char *name, const struct rfs_stat *sd,
			  bool is_link, struct strbuf *note);

/* Appends the manifest line and the body-file line.  RFS_ERR_IO (errno set)
 * when a stream fails, RFS_ERR_NOMEM. */
rfs_status salvage_record_write(FILE *manifest, FILE *bodyfile, const struct salvage_record *rec);

#endif

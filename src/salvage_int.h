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
#include "sha256_worker.h"

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
	uint64_t sha_job;            /* nonzero: sha256 is still being computed,
				      * by that job of the digest thread
				      * (src/sha256_worker.h); the manifest line
				      * waits for it */
	struct strbuf target;        /* symlink target bytes (owned) */
	struct salvage_missing miss; /* byte ranges that could not be read */
	const char *hardlink_of;     /* OUTDIR-relative first path (not owned) */
	uint64_t *runs;              /* data block runs: first, count, first, ... */
	size_t nruns;
	uint64_t *leaves;            /* leaves holding the object's items */
	size_t nleaves;
	bool blocks_incomplete;
	struct strbuf note;          /* "; "-separated remarks (owned) */
	/* --deleted only */
	bool deleted;                /* body-file name gets " (deleted)" (TSK's mark) */
	bool name_unresolved;        /* no stale name reached it ("name_resolved": false) */
	const struct salvage_copy *copies;   /* leaf copies its items came from */
	size_t ncopies;
	uint64_t *marked_runs;       /* data read from blocks the bitmap marks used
				      * that nothing live claims: first, count, ... */
	size_t nmarked;
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
/* The same two lines (each ending in a newline) appended to manifest and
 * body; *sha_at is where in manifest the 64 hex digits of "sha256" start
 * (SIZE_MAX without one), for a digest that is filled in later. */
rfs_status salvage_record_format(const struct salvage_record *rec, struct strbuf *manifest,
				 struct strbuf *body, size_t *sha_at);

/* Records waiting for their files' digests (src/salvage_queue.c), and the
 * records after them: the manifest keeps the walk's order. */
enum {
	SALVAGE_QUEUE_MAX = 65536,
	SALVAGE_QUEUE_BYTES = 32 << 20,
	SALVAGE_HASHER_SLOTS = SALVAGE_QUEUE_MAX + 16,
	/* files up to this size are hashed by the walk itself while the digest
	 * thread has more than SALVAGE_HASHER_BEHIND bytes (about 40 ms) to do */
	SALVAGE_INLINE_MAX = 1 << 20,
	SALVAGE_HASHER_BEHIND = 64 << 20,
};
struct salvage_queued;
struct salvage_queue {
	struct rfs_sha256_worker *worker;   /* NULL: no record ever waits */
	FILE *manifest, *bodyfile;
	struct salvage_queued *v;    /* ring of SALVAGE_QUEUE_MAX */
	size_t head, n;
	size_t bytes;                /* of the lines waiting */
};
/* Writes rec's lines, or queues them while rec->sha_job or an earlier
 * record is not done; writes what became ready.  Errors as
 * salvage_record_write's; RFS_ERR_INVALID for a digest that never came. */
rfs_status salvage_queue_emit(struct salvage_queue *q, const struct salvage_record *rec);
/* Writes the records whose digests are ready, in order; with all, waits for
 * every one. */
rfs_status salvage_queue_flush(struct salvage_queue *q, bool all);
/* Waits for rec's digest and puts it into rec->sha256 (a hard link's later
 * names need it). */
rfs_status salvage_queue_digest_now(struct salvage_queue *q, struct salvage_record *rec);
/* Drops what still waits. */
void salvage_queue_free(struct salvage_queue *q);

/* Where regular file data goes (src/salvage.c): pwrite at its offset, holes
 * skipped, the SHA-256 of data and holes (holes up to SALVAGE_HOLE_HASH_MAX
 * bytes, then no digest), in sha or by the digest thread's open job.
 * salvage_sink_piece is an rfs_data_fn. */
#define SALVAGE_HOLE_HASH_MAX (UINT64_C(4) << 30)
struct salvage_sink {
	int fd;
	struct rfs_sha256 sha;       /* without worker */
	struct rfs_sha256_worker *worker;   /* when set, the digest is its open job's */
	bool hashing;                /* digest still meaningful */
	uint64_t hole_hashed;
	uint64_t written;            /* data bytes written */
	uint64_t reached;            /* end of the last piece delivered */
	uint64_t data_end;           /* end of the furthest data written: the
				      * length of the file, created empty */
	int write_errno;             /* first write failure */
};
int salvage_sink_piece(void *c, uint64_t off, const uint8_t *data, size_t len);

/* Renames used (in dirfd, open as fd) to used + "." + the extension libmagic
 * (cookie, may be NULL) suggests for its first bytes, without replacing
 * anything; opath and used follow the rename. */
void salvage_add_extension(void *magic_cookie, int dirfd, int fd, struct strbuf *opath,
			   char used[SALVAGE_NAME_MAX + 1]);

/* ------------------------------------------------------------------------- */
/* --deleted: what src/salvage_deleted.c decides and
 * src/salvage_deleted_write.c writes. */

/* One stale leaf copy that items were taken from. */
struct salvage_copy {
	uint64_t block;              /* where it is: a free block, or a journal log block */
	uint64_t home;               /* the block it is a version of (journal copy: from
				      * its transaction; RFS_NO_BLOCK when that is gone) */
	uint64_t checksum;           /* of the whole block (identical copies) */
	uint32_t trans_id;           /* valid when have_trans */
	bool have_trans;             /* journal copy: inside a valid transaction;
				      * free copy: identical to such a journal copy of
				      * its own block */
	bool journal;                /* in the journal area */
	bool as_data;                /* a free leaf taken for a deleted file's data:
				      * its items are not used */
};

/* The age of a copy: trans_id + 1 when known, else 0 (older than every
 * copy whose transaction is known: its transaction left the log). */
static inline uint64_t salvage_copy_generation(const struct salvage_copy *c)
{
	return c->have_trans ? (uint64_t)c->trans_id + 1 : 0;
}

/* What ranks two stale copies of one item (the newest wins). */
struct salvage_rank {
	uint64_t gen;                /* salvage_copy_generation of the copy */
	bool with_sd;                /* the copy holds the object's chosen stat data */
	uint32_t ctime, mtime;       /* stat data items: their times (else 0) */
	bool journal;                /* the copy is in the journal area */
	uint64_t block;              /* where the copy is */
};
/* < 0 when a is the copy to use, > 0 when b is, 0 for the same copy.  Order:
 * newer generation; the copy holding the chosen stat data; newer ctime, then
 * mtime; a free block before a journal copy (it is the block itself); the
 * lower block number (reproducible). */
int salvage_rank_cmp(const struct salvage_rank *a, const struct salvage_rank *b);

/* A journal leaf copy, for dating free copies. */
struct salvage_jcopy {
	uint64_t home, checksum;
	uint32_t trans_id;
};
/* The generation evidence of a free leaf at block with this checksum: the
 * newest transaction among jc[0, n) (sorted by home) that logged block with
 * identical content.  false when none did. */
bool salvage_free_copy_trans(const struct salvage_jcopy *jc, size_t n, uint64_t block,
			     uint64_t checksum, uint32_t *trans_id);

/* Why a data pointer of a deleted file is, or is not, read. */
enum salvage_block_verdict {
	SALVAGE_BLOCK_DATA,          /* free, unclaimed by anything newer: read it */
	SALVAGE_BLOCK_DATA_MARKED,   /* read it, but say so: the bitmap marks it used
				      * and nothing the (rebuilt) live tree holds
				      * claims it (damaged-tree mode) */
	SALVAGE_BLOCK_OUTSIDE,       /* beyond the filesystem or in its metadata */
	SALVAGE_BLOCK_IN_USE,        /* in use now (bitmap, live tree, live file) */
	SALVAGE_BLOCK_LEAF,          /* holds a stale leaf newer than the pointer */
	SALVAGE_BLOCK_REUSED,        /* a newer deleted object claims it */
	SALVAGE_BLOCK_CONTESTED,     /* another deleted object, not older, claims it */
};
struct salvage_block_facts {
	bool outside, in_use;
	bool marked_used;            /* the bitmap marks it used, nothing live claims it */
	bool stale_leaf;             /* a free leaf that keeps its items */
	unsigned claimants;          /* deleted objects whose chosen items point here */
	uint64_t newest_gen;         /* the newest claim's generation (claimants > 1) */
	unsigned newest_count;       /* claims with that generation */
};
/* The verdict for a pointer of generation gen (that of its item's copy). */
enum salvage_block_verdict salvage_block_verdict(const struct salvage_block_facts *f, uint64_t gen);
const char *salvage_block_verdict_text(enum salvage_block_verdict v);

#endif

/*
 * mapfile.h - GNU ddrescue mapfiles: which byte ranges of a rescued image hold
 * data that was really read ('+' finished) and which do not (every other
 * status: '?' non-tried, '*' non-trimmed, '/' non-scraped, '-' bad sector).
 *
 * Invariants of a loaded map:
 *  (1) bad[] is sorted, non-overlapping, non-adjacent (merged), and empty
 *      ranges never appear.
 *  (2) Bytes past the last line's end, and gaps between lines, were never
 *      read by ddrescue, so they count as unreadable too.
 */
#ifndef RFS_MAPFILE_H
#define RFS_MAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

/* Bounds that keep a hostile mapfile from costing unbounded time or memory. */
#define RFS_MAPFILE_MAX_LINE 1024u
#define RFS_MAPFILE_MAX_LINES 4000000u

struct rfs_map_range {
	uint64_t pos, size;           /* absolute byte range in the image file */
};

struct rfs_mapfile {
	struct rfs_map_range *bad;    /* unreadable ranges, invariant (1) */
	size_t nbad;
	uint64_t covered_end;         /* end of the last line's range */
	uint64_t finished_bytes;      /* bytes with status '+' */
};

/*
 * Parses mapfile text (len bytes, need not be NUL-terminated).  A malformed
 * line gives RFS_ERR_INVALID with "line N" in the message (block field =
 * line number); too many or too long lines give RFS_ERR_LIMIT.  On success
 * *out is owned by the caller (rfs_mapfile_free).
 */
rfs_status rfs_mapfile_parse(const char *text, size_t len, struct rfs_mapfile **out,
			     struct rfs_error *err);

/* Reads and parses the file at path (RFS_ERR_IO if unreadable). */
rfs_status rfs_mapfile_load(const char *path, struct rfs_mapfile **out, struct rfs_error *err);

/* True when every byte of [pos, pos + len) was read; otherwise false with
 * *first_bad (may be NULL) = the first unreadable byte in the range. */
bool rfs_mapfile_readable(const struct rfs_mapfile *m, uint64_t pos, uint64_t len,
			  uint64_t *first_bad);

void rfs_mapfile_free(struct rfs_mapfile *m);

#endif

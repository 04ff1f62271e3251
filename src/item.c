/*
 * item.c - decoding of item bodies: stat data (v1, v2) and directory items.
 * Direct items are raw bytes and indirect items arrays of le32 block numbers;
 * their readers live in src/file.c.
 *
 * Contract: rfs_dir_entry() may only be called on a body that passed
 * rfs_dir_validate() with the same entry count; it then reads only inside it.
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <string.h>

rfs_status rfs_stat_decode(const uint8_t *b, size_t len, struct rfs_stat *out)
{
	memset(out, 0, sizeof(*out));
	if (len == RFS_SD_V1_SIZE) {
		out->version = 1;
		out->mode = le16_at(b, 0);
		out->nlink = le16_at(b, 2);
		out->uid = le16_at(b, 4);
		out->gid = le16_at(b, 6);
		out->size = le32_at(b, 8);
		out->atime = le32_at(b, 12);
		out->mtime = le32_at(b, 16);
		out->ctime = le32_at(b, 20);
		out->rdev = out->blocks = le32_at(b, 24);
		out->first_direct_byte = le32_at(b, 28);
		return RFS_OK;
	}
	if (len == RFS_SD_V2_SIZE) {
		out->version = 2;
		out->mode = le16_at(b, 0);
		out->attrs = le16_at(b, 2);
		out->nlink = le32_at(b, 4);
		out->size = le64_at(b, 8);
		out->uid = le32_at(b, 16);
		out->gid = le32_at(b, 20);
		out->atime = le32_at(b, 24);
		out->mtime = le32_at(b, 28);
		out->ctime = le32_at(b, 32);
		out->blocks = le32_at(b, 36);
		out->rdev = out->generation = le32_at(b, 40);
		out->first_direct_byte = UINT32_MAX;
		return RFS_OK;
	}
	return RFS_ERR_CORRUPT;
}

static void dir_fault(rfs_fault_fn fn, void *ctx, enum rfs_problem_code code, int entry,
		      uint64_t expected, uint64_t found)
{
	struct rfs_fault f = { .code = code, .item = -1, .entry = entry,
			       .expected = expected, .found = found };
	if (fn)
		fn(ctx, &f);
}

rfs_status rfs_dir_validate(const uint8_t *body, size_t len, uint16_t count,
			    rfs_fault_fn fn, void *ctx)
{
	if (count == 0) {
		dir_fault(fn, ctx, PR_DIR_NO_ENTRIES, -1, 1, 0);
		return RFS_ERR_CORRUPT;
	}
	/* Each entry needs its 16-byte head and at least one name byte. */
	if ((size_t)count * (RFS_DEH_SIZE + 1) > len) {
		dir_fault(fn, ctx, PR_DIR_COUNT_TOO_BIG, -1, len, count);
		return RFS_ERR_CORRUPT;
	}
	size_t heads = (size_t)count * RFS_DEH_SIZE;
	size_t end = len;
	uint32_t prev_off = 0;
	rfs_status st = RFS_OK;
	for (int i = 0; i < count; i++) {
		const uint8_t *h = body + (size_t)i * RFS_DEH_SIZE;
		uint32_t off = le32_at(h, DEH_OFFSET);
		uint16_t loc = le16_at(h, DEH_LOCATION);
		uint16_t state = le16_at(h, DEH_STATE);
		if (loc < heads || loc >= end) {
			dir_fault(fn, ctx, PR_DIR_BAD_LOCATION, i, heads, loc);
			return RFS_ERR_CORRUPT;
		}
		if (i > 0 && off <= prev_off) {
			dir_fault(fn, ctx, PR_DIR_OFFSETS_UNSORTED, i, prev_off + 1, off);
			st = RFS_ERR_CORRUPT;
			if (!fn)
				return st;
		}
		if (state != RFS_DEH_STATE_VISIBLE)
			dir_fault(fn, ctx, PR_DIR_ENTRY_STATE, i, RFS_DEH_STATE_VISIBLE, state);
		/* A name of only NUL bytes is empty. */
		size_t n = end - loc;
		while (n > 0 && body[loc + n - 1] == 0)
			n--;
		if (n == 0) {
			dir_fault(fn, ctx, PR_DIR_NAME_EMPTY, i, 1, 0);
			st = RFS_ERR_CORRUPT;
			if (!fn)
				return st;
		}
		prev_off = off;
		end = loc;
	}
	if (end != heads) {
		dir_fault(fn, ctx, PR_DIR_LAST_NAME_GAP, count - 1, heads, end);
		st = RFS_ERR_CORRUPT;
	}
	return st;
}

bool rfs_body_holds_dot(const uint8_t *body, size_t len, uint16_t entry_count, uint32_t objectid)
{
	if (entry_count == 0 || len < RFS_DEH_SIZE)
		return false;
	struct rfs_dirent d;
	rfs_dir_entry(body, len, 0, &d);
	return d.location >= RFS_DEH_SIZE && d.location < len && d.offset == 1 &&
	       d.objectid == objectid && d.name_len == 1 && d.name[0] == '.';
}

void rfs_dir_entry(const uint8_t *body, size_t len, int i, struct rfs_dirent *out)
{
	const uint8_t *h = body + (size_t)i * RFS_DEH_SIZE;
	out->offset = le32_at(h, DEH_OFFSET);
	out->dir_id = le32_at(h, DEH_DIR_ID);
	out->objectid = le32_at(h, DEH_OBJECTID);
	out->location = le16_at(h, DEH_LOCATION);
	out->state = le16_at(h, DEH_STATE);
	size_t end = i == 0 ? len : le16_at(body + (size_t)(i - 1) * RFS_DEH_SIZE, DEH_LOCATION);
	size_t n = end > out->location ? end - out->location : 0;
	out->stored_len = (uint16_t)n;
	while (n > 0 && body[out->location + n - 1] == 0)
		n--;
	out->name = body + out->location;
	out->name_len = (uint16_t)n;
}

bool rfs_indirect_next_run(const uint8_t *body, uint32_t n, uint32_t *i, uint32_t *first,
			   uint32_t *count, uint32_t *at)
{
	while (*i < n && le32_at(body, 4 * (size_t)*i) == 0)
		(*i)++;
	if (*i >= n)
		return false;
	uint32_t p = le32_at(body, 4 * (size_t)*i), j = *i + 1;
	while (j < n && le32_at(body, 4 * (size_t)j) == p + (j - *i))
		j++;
	*first = p;
	*count = j - *i;
	*at = *i;
	*i = j;
	return true;
}

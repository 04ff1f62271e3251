/*
 * hash_detect.c - the hash a volume's directory names were stored under
 * (invariants in rfs/hash_detect.h).
 */
#include "rfs/hash_detect.h"

#include <string.h>

#include "rfs/hash.h"
#include "rfs/tree.h"

static void vote_item(struct rfs_hash_detect *d, const struct rfs_item_head *ih,
		      const uint8_t *body)
{
	for (int e = 0; e < ih->free_or_count && d->names < RFS_HASH_DETECT_NAMES; e++) {
		struct rfs_dirent de;
		rfs_dir_entry(body, ih->len, e, &de);
		if (de.offset == RFS_DOT_OFFSET || de.offset == RFS_DOTDOT_OFFSET)
			continue;
		d->names++;
		for (unsigned code = 1; code <= 3; code++)
			if (rfs_hash_offset_matches(code, de.name, de.name_len, de.offset))
				d->votes[code]++;
	}
}

static unsigned verdict(const struct rfs_hash_detect *d)
{
	if (d->names == 0)
		return d->complete ? 3 : 0;
	unsigned best = 1;
	for (unsigned code = 2; code <= 3; code++)
		if (d->votes[code] > d->votes[best])
			best = code;
	uint32_t second = 0;
	for (unsigned code = 1; code <= 3; code++)
		if (code != best && d->votes[code] > second)
			second = d->votes[code];
	bool majority = (uint64_t)d->votes[best] * 2 > d->names;
	return majority && d->votes[best] > (uint64_t)second * 2 ? best : 0;
}

rfs_status rfs_hash_detect(struct rfs_fs *fs, struct rfs_hash_detect *out,
			   struct rfs_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rfs_cursor cur;
	rfs_status st = rfs_cursor_init(fs, &cur, err);
	if (st)
		return st;
	/* Whatever stops the walk below (a node that fails validation, an
	 * unreadable block) is the tree pass's finding, not this one's. */
	struct rfs_error walk_err;
	rfs_error_clear(&walk_err);
	const struct rfs_key first = { 0, 0, 0, 0 };
	if (rfs_cursor_seek(&cur, &first, NULL, &walk_err) == RFS_OK) {
		while (rfs_cursor_next(&cur, &walk_err) == RFS_OK) {
			if (cur.at_end) {
				out->complete = true;
				break;
			}
			if (!rfs_cursor_at_item(&cur))
				break;
			struct rfs_item_head ih;
			const uint8_t *body;
			rfs_cursor_item(&cur, &ih, &body);
			if (ih.key.type == RFS_TYPE_DIRENTRY)
				vote_item(out, &ih, body);
			if (out->names >= RFS_HASH_DETECT_NAMES)
				break;
		}
	}
	if (walk_err.status == RFS_ERR_NOMEM)
		st = rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "hash detection");
	rfs_cursor_free(&cur);
	out->code = verdict(out);
	return st;
}

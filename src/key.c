/*
 * key.c - decoding, encoding and ordering of ReiserFS keys in both formats.
 *
 * The in-memory key is format-free (offset up to 2^60, type 0..3/14/15); the
 * format only matters at the disk boundary.  Order is the kernel's comp_keys.
 */
#include "rfs/format.h"
#include "rfs/bytes.h"

#include <stdio.h>

static uint8_t v1_type(uint32_t uniq)
{
	switch (uniq) {
	case RFS_V1_UNIQ_STAT: return RFS_TYPE_STAT;
	case RFS_V1_UNIQ_DIRENTRY: return RFS_TYPE_DIRENTRY;
	case RFS_V1_UNIQ_DIRECT: return RFS_TYPE_DIRECT;
	case RFS_V1_UNIQ_INDIRECT: return RFS_TYPE_INDIRECT;
	case RFS_V1_UNIQ_ANY: return RFS_TYPE_ANY;
	default: return RFS_TYPE_UNKNOWN;
	}
}

static uint32_t v1_uniq(uint8_t type)
{
	switch (type) {
	case RFS_TYPE_STAT: return RFS_V1_UNIQ_STAT;
	case RFS_TYPE_DIRENTRY: return RFS_V1_UNIQ_DIRENTRY;
	case RFS_TYPE_DIRECT: return RFS_V1_UNIQ_DIRECT;
	case RFS_TYPE_INDIRECT: return RFS_V1_UNIQ_INDIRECT;
	default: return RFS_V1_UNIQ_ANY;
	}
}

void rfs_key_decode(const uint8_t *p, enum rfs_key_format fmt, struct rfs_key *out)
{
	out->dir_id = le32_at(p, 0);
	out->objectid = le32_at(p, 4);
	if (fmt == RFS_KEY_V1) {
		out->offset = le32_at(p, 8);
		out->type = v1_type(le32_at(p, 12));
	} else {
		uint64_t v = le64_at(p, 8);
		unsigned t = (unsigned)(v >> 60);
		out->offset = v & ((UINT64_C(1) << 60) - 1);
		out->type = (t <= RFS_TYPE_DIRENTRY || t == RFS_TYPE_ANY) ? (uint8_t)t
									   : RFS_TYPE_UNKNOWN;
	}
}

enum rfs_key_format rfs_key_guess_format(const uint8_t *p)
{
	unsigned t = (unsigned)(le64_at(p, 8) >> 60);
	return (t >= 1 && t <= 3) ? RFS_KEY_V2 : RFS_KEY_V1;
}

void rfs_key_encode(const struct rfs_key *k, enum rfs_key_format fmt, uint8_t *p)
{
	le32_put(p, 0, k->dir_id);
	le32_put(p, 4, k->objectid);
	if (fmt == RFS_KEY_V1) {
		le32_put(p, 8, (uint32_t)k->offset);
		le32_put(p, 12, v1_uniq(k->type));
	} else {
		uint64_t v = (k->offset & ((UINT64_C(1) << 60) - 1)) | (uint64_t)(k->type & 15) << 60;
		le64_put(p, 8, v);
	}
}

int rfs_key_cmp_short(const struct rfs_key *a, const struct rfs_key *b)
{
	if (a->dir_id != b->dir_id)
		return a->dir_id < b->dir_id ? -1 : 1;
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	return 0;
}

int rfs_key_cmp(const struct rfs_key *a, const struct rfs_key *b)
{
	int c = rfs_key_cmp_short(a, b);
	if (c)
		return c;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return 0;
}

const char *rfs_item_type_name(unsigned type)
{
	switch (type) {
	case RFS_TYPE_STAT: return "SD";
	case RFS_TYPE_INDIRECT: return "IND";
	case RFS_TYPE_DIRECT: return "DRCT";
	case RFS_TYPE_DIRENTRY: return "DIR";
	case RFS_TYPE_ANY: return "ANY";
	default: return "UNKNOWN";
	}
}

void rfs_key_format_str(const struct rfs_key *k, char *buf, size_t len)
{
	snprintf(buf, len, "[%u %u %llu %s]", k->dir_id, k->objectid,
		 (unsigned long long)k->offset, rfs_item_type_name(k->type));
}

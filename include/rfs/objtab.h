/*
 * objtab.h - per-object state collected by check's tree pass and used by the
 * semantic pass: what the stat data says and what the items hold.
 *
 * Layout, chosen so that memory follows the number of objects closely (a
 * volume with a million files must cost tens of MiB, not a hundred):
 *  - every object has a 24-byte record (struct rfs_objinfo) with what the
 *    namespace walk needs: key, link count, names found, mode, flags.
 *    Records are dense, in arrival order, in fixed chunks of RFS_OBJTAB_CHUNK
 *    records that never move: a pointer to a record stays valid until
 *    rfs_objtab_free, whatever is added later;
 *  - the facts that only the object-local rules read (sizes, block counts,
 *    first direct byte: struct rfs_objbody, 40 bytes) live in a second
 *    chunked array, and only while they may still be needed: the tree pass
 *    gives each object a body when it starts and drops it when the object
 *    ends and the local rules (check_rules.h) pass, so on a healthy volume
 *    only directories keep one.  A record without a body has passed them;
 *  - while records arrive in strictly increasing key order (any tree walked
 *    in order), lookup binary-searches them and there is no index at all;
 *    the first record out of order builds an open-addressing index of 8-byte
 *    slots (a 32-bit tag of the key's hash and the record number), kept at
 *    most 3/4 full, used from then on.
 * Cost per object on a sorted walk: 24 bytes (plus 40 for each kept body);
 * unsorted: another 11-21 bytes of index.  At most UINT32_MAX - 1 records and
 * bodies (RFS_ERR_LIMIT beyond).
 */
#ifndef RFS_OBJTAB_H
#define RFS_OBJTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

enum rfs_obj_flags {
	RFS_OBJ_HAS_SD = 1u << 0,
	RFS_OBJ_REACHED = 1u << 1,      /* a name in the namespace walk reached it */
	RFS_OBJ_ITEMS_BAD = 1u << 2,    /* body items out of order or with gaps */
	RFS_OBJ_HAS_DIRECT = 1u << 3,
	RFS_OBJ_SAFELINK = 1u << 4,     /* a safe link names it */
	RFS_OBJ_ENTERED = 1u << 5,      /* the namespace walk listed this directory */
	RFS_OBJ_MODE_FROM_ITEMS = 1u << 6,   /* every item says the other type: the mode flipped */
};

/* What every object keeps. */
struct rfs_objinfo {
	uint32_t dir_id, objectid;      /* never both 0 */
	uint32_t nlink;                 /* from the stat data */
	uint32_t names;                 /* names found by the namespace walk */
	uint32_t body;                  /* body number + 1; 0 = none (see above) */
	uint16_t mode;
	uint8_t sd_version;
	uint8_t flags;                  /* enum rfs_obj_flags */
};

/* What the object-local rules read.  Counters that could exceed 32 bits only
 * on a hostile image saturate at UINT32_MAX (rfs_sat_add32): a saturated
 * count never equals what a stat data can honestly say, so the rule that
 * reads it still reports. */
struct rfs_objbody {
	uint64_t size;                  /* from the stat data */
	uint64_t body_end;              /* first byte after the last body item */
	uint64_t dir_bytes;             /* sum of 16 + stored name length */
	uint32_t blocks;                /* from the stat data */
	uint32_t unfm;                  /* non-zero unformatted pointers (saturating) */
	uint32_t first_direct;          /* key offset of the first direct item, 0 = none,
					 * UINT32_MAX for any offset above 32 bits */
	uint32_t sd_first_direct;       /* v1 stat data: first_direct_byte as stored */
};

enum { RFS_OBJTAB_CHUNK = 16384 };

struct rfs_objtab_slot {
	uint32_t tag;                   /* high half of the key's hash */
	uint32_t rec;                   /* record number + 1; 0 = empty */
};

struct rfs_objtab {
	void **chunks;                  /* of RFS_OBJTAB_CHUNK struct rfs_objinfo */
	size_t nchunks, chunks_cap;
	size_t count;                   /* records */
	bool unsorted;                  /* a record arrived out of key order: index in use */
	struct rfs_objtab_slot *index;
	size_t cap;                     /* index slots: 0 or a power of two */
	void **bchunks;                 /* of RFS_OBJTAB_CHUNK struct rfs_objbody */
	size_t nbchunks, bchunks_cap;
	size_t nbodies;                 /* bodies handed out, the dropped ones included */
	uint32_t free_body;             /* a dropped body to hand out again + 1; 0 = none */
	size_t live_bodies;
};

/* Finds or creates the record of (dir_id, objectid); never both 0.  A new
 * record is zero apart from its key and has no body; *created says which
 * (may be NULL). */
rfs_status rfs_objtab_get(struct rfs_objtab *t, uint32_t dir_id, uint32_t objectid,
			  struct rfs_objinfo **out, bool *created);
/* Finds a record, or NULL. */
struct rfs_objinfo *rfs_objtab_find(const struct rfs_objtab *t, uint32_t dir_id,
				    uint32_t objectid);
/* Record i (0 <= i < t->count), in arrival order. */
static inline struct rfs_objinfo *rfs_objtab_at(const struct rfs_objtab *t, size_t i)
{
	return (struct rfs_objinfo *)t->chunks[i / RFS_OBJTAB_CHUNK] + i % RFS_OBJTAB_CHUNK;
}
/* Body i (0 <= i < t->nbodies), handed out or dropped. */
static inline struct rfs_objbody *rfs_objtab_body_at(const struct rfs_objtab *t, size_t i)
{
	return (struct rfs_objbody *)t->bchunks[i / RFS_OBJTAB_CHUNK] + i % RFS_OBJTAB_CHUNK;
}
/* The record's body, or NULL.  Bodies never move either. */
static inline struct rfs_objbody *rfs_objtab_body(const struct rfs_objtab *t,
						  const struct rfs_objinfo *o)
{
	return o->body ? rfs_objtab_body_at(t, o->body - 1) : NULL;
}
/* Gives the record a zeroed body (replacing none; an existing one is kept
 * as it is) and returns it. */
rfs_status rfs_objtab_body_new(struct rfs_objtab *t, struct rfs_objinfo *o,
			       struct rfs_objbody **out);
/* Drops the record's body, if any; its memory serves the next body. */
void rfs_objtab_body_drop(struct rfs_objtab *t, struct rfs_objinfo *o);
void rfs_objtab_free(struct rfs_objtab *t);

static inline uint32_t rfs_sat_add32(uint32_t a, uint64_t b)
{
	return b >= (uint64_t)(UINT32_MAX - a) ? UINT32_MAX : (uint32_t)(a + b);
}

#endif

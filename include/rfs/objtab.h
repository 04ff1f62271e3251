/*
 * objtab.h - per-object state collected by check's tree pass and used by the
 * semantic pass: what the stat data says and what the items hold.
 *
 * Memory is one fixed-size record per object that has items in the tree
 * (about 72 bytes), in an open-addressing table that doubles when half full.
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

struct rfs_objinfo {
	uint32_t dir_id, objectid;      /* (0, 0) marks an empty slot */
	uint32_t flags;
	uint16_t mode;
	uint8_t sd_version;
	uint32_t nlink;                 /* from the stat data */
	uint32_t names;                 /* names found by the namespace walk */
	uint64_t size;                  /* from the stat data */
	uint32_t blocks;                /* from the stat data */
	uint64_t body_end;              /* first byte after the last body item */
	uint64_t unfm;                  /* non-zero unformatted pointers */
	uint64_t dir_bytes;             /* sum of 16 + stored name length */
	uint32_t parent_dir_id, parent_objectid;   /* directory that first named it */
	uint32_t sd_first_direct;       /* v1 stat data: first_direct_byte as stored */
	uint64_t first_direct;          /* key offset of the first direct item, 0 = none */
};

struct rfs_objtab {
	struct rfs_objinfo *slots;
	size_t cap, count;
};

/* Finds or creates the record of (dir_id, objectid); never both 0. */
rfs_status rfs_objtab_get(struct rfs_objtab *t, uint32_t dir_id, uint32_t objectid,
			  struct rfs_objinfo **out);
/* Finds a record, or NULL. */
struct rfs_objinfo *rfs_objtab_find(const struct rfs_objtab *t, uint32_t dir_id,
				    uint32_t objectid);
void rfs_objtab_free(struct rfs_objtab *t);

#endif

/*
 * objects.h - rebuild's object table (c->objs, objmap.h), built from the
 * winning items in key order (objects.c has the rules of its flags).
 *
 * Invariant: items arrive in (dir_id, objectid) order, every item of an
 * object together; rb_objects_add refuses an object that comes after a
 * larger one, so a stream in the wrong order cannot make two entries or lose
 * items silently.
 */
#ifndef RFS_REBUILD_OBJECTS_H
#define RFS_REBUILD_OBJECTS_H

#include "rebuild.h"

struct rb_objects {
	struct rb_ctx *c;
	bool open;                   /* a group is being collected */
	uint64_t key;
	uint32_t d, o;
	bool has_sd, sd_known, has_dir_item, has_body;
	uint32_t sd_mode;
};

/* Empties c->objs and starts a stream. */
void rb_objects_begin(struct rb_ctx *c, struct rb_objects *w);
/* One winning item: its key's object, its type, the stat data's mode (-1 when
 * not a stat data or when it did not decode). */
rfs_status rb_objects_add(struct rb_objects *w, uint32_t d, uint32_t o, unsigned type,
			  int64_t sd_mode, struct rfs_error *err);
rfs_status rb_objects_end(struct rb_objects *w, struct rfs_error *err);
/* Stops after a failure or a stream found out of order: c->objs empty. */
void rb_objects_abandon(struct rb_objects *w);
/* The whole table from the index item_key (built here if missing). */
rfs_status rb_objects_from_index(struct rb_ctx *c, struct rfs_error *err);

#endif

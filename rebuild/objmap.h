/*
 * objmap.h - rebuild's object table: one entry per (dir_id, objectid) with a
 * winning item, in memory, sorted by key.  objects.c fills it from the
 * winning items in key order; namespace.c decides with it and adds the root
 * and /lost+found when they must be created; emit.c merges its items and
 * names with it.
 *
 * Flags (the rules are objects.c's):
 *   OBJ_DIR         the object is a directory (namespace.c settles the
 *                   unsure ones before its walk);
 *   OBJ_DIR_UNSURE  a directory mode over file bodies only: a directory only
 *                   if some ".." names it (OBJ_DIR set until then);
 *   OBJ_SD          a stat data item won; without it emit creates one, of a
 *                   directory or a file as OBJ_DIR says;
 *   OBJ_SD_DIR      the stat data's mode says directory;
 *   OBJ_REACHED     namespace.c's walk: a name reaches the object.
 *
 * Why in memory and not a table of the index: namespace.c asks about the
 * target of every name (a million on bench-32g) and emit.c about the object
 * of every item and name.  As a temporary SQLite table, filling it took
 * 0.6-0.9 s, an answer about 0.6 us, and the set of reached keys beside it,
 * a hash set at half load, 32 MiB for 1.1 M objects.  Here an object costs 9
 * bytes and an answer a binary search (or a step of a cursor).
 * Not check's rfs_objtab (objtab.h): that one keeps 24 bytes per object for
 * check's rules, and builds a hash index once a key comes out of order.
 *
 * Invariant: keys[0..n) ascend strictly; flags[i] belongs to keys[i].
 */
#ifndef RFS_REBUILD_OBJMAP_H
#define RFS_REBUILD_OBJMAP_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

enum {
	OBJ_DIR = 1,
	OBJ_DIR_UNSURE = 2,
	OBJ_SD = 4,
	OBJ_SD_DIR = 8,
	OBJ_REACHED = 16,
};

#define RB_OBJMAP_NONE ((size_t)-1)

struct rb_objmap {
	uint64_t *keys;              /* dir_id << 32 | objectid */
	uint8_t *flags;
	size_t n, cap;
};

/* Empties the map (keeps its memory). */
void rb_objmap_reset(struct rb_objmap *m);
void rb_objmap_free(struct rb_objmap *m);
/* Appends an object larger than every key in the map (RFS_ERR_INVALID
 * otherwise, the map unchanged). */
rfs_status rb_objmap_append(struct rb_objmap *m, uint64_t key, uint8_t flags,
			    struct rfs_error *err);
/* Adds an object anywhere (a few per run: the root, /lost+found); a key
 * already present keeps its flags.  O(n). */
rfs_status rb_objmap_insert(struct rb_objmap *m, uint64_t key, uint8_t flags,
			    struct rfs_error *err);
/* The position of key, or RB_OBJMAP_NONE. */
size_t rb_objmap_find(const struct rb_objmap *m, uint64_t key);

#endif

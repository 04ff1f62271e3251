/*
 * keyorder.h - the accepted leaves' items in key order without item_key
 * (keyorder.c says when that holds and what uses it).
 */
#ifndef RFS_REBUILD_KEYORDER_H
#define RFS_REBUILD_KEYORDER_H

#include "rebuild.h"

/* After select.c's leaf decisions and before any ranking of items: sets
 * c->key_ordered, and when it is set, temp.lorder and the object table. */
rfs_status rb_keyorder_probe(struct rb_ctx *c, struct rfs_error *err);

/* emit.c's leaves while c->key_ordered: (block, scan checksum) of every
 * accepted leaf, in key order. */
extern const char rb_keyorder_leaves_sql[];

#endif

/*
 * u64set.h - a set of 64-bit values (open addressing, grows by doubling).
 * Used for "already visited" sets whose size depends on what an image holds;
 * memory is proportional to the number of members actually inserted.
 */
#ifndef RFS_U64SET_H
#define RFS_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

struct u64set {
	uint64_t *slots;             /* 0 marks an empty slot; value 0 kept aside */
	size_t cap, count;
	bool has_zero;
};

/* Inserts v; *added (may be NULL) tells whether it was new. */
rfs_status u64set_add(struct u64set *s, uint64_t v, bool *added);
bool u64set_has(const struct u64set *s, uint64_t v);
void u64set_free(struct u64set *s);
/* qsort's comparison of two uint64_t, ascending. */
int u64_compare(const void *a, const void *b);
/* The members in ascending order, in a new array the caller frees. */
rfs_status u64set_sorted(const struct u64set *s, uint64_t **out, size_t *n);

#endif

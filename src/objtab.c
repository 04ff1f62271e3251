/* objtab.c - see include/rfs/objtab.h. */
#include "rfs/objtab.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint32_t d, uint32_t o, size_t cap)
{
	uint64_t v = (uint64_t)d << 32 | o;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 29;
	return (size_t)v & (cap - 1);
}

struct rfs_objinfo *rfs_objtab_find(const struct rfs_objtab *t, uint32_t d, uint32_t o)
{
	if (!t->cap)
		return NULL;
	for (size_t i = slot_of(d, o, t->cap);; i = (i + 1) & (t->cap - 1)) {
		struct rfs_objinfo *s = &t->slots[i];
		if (s->dir_id == d && s->objectid == o && (d || o))
			return s;
		if (!s->dir_id && !s->objectid)
			return NULL;
	}
}

static rfs_status grow(struct rfs_objtab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	struct rfs_objinfo *n = calloc(ncap, sizeof(*n));
	if (!n)
		return RFS_ERR_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct rfs_objinfo *s = &t->slots[i];
		if (!s->dir_id && !s->objectid)
			continue;
		size_t j = slot_of(s->dir_id, s->objectid, ncap);
		while (n[j].dir_id || n[j].objectid)
			j = (j + 1) & (ncap - 1);
		n[j] = *s;
	}
	free(t->slots);
	t->slots = n;
	t->cap = ncap;
	return RFS_OK;
}

rfs_status rfs_objtab_get(struct rfs_objtab *t, uint32_t d, uint32_t o, struct rfs_objinfo **out)
{
	*out = NULL;
	if (!d && !o)
		return RFS_ERR_INVALID;
	struct rfs_objinfo *s = rfs_objtab_find(t, d, o);
	if (s) {
		*out = s;
		return RFS_OK;
	}
	if ((t->count + 1) * 2 > t->cap && grow(t))
		return RFS_ERR_NOMEM;
	size_t i = slot_of(d, o, t->cap);
	while (t->slots[i].dir_id || t->slots[i].objectid)
		i = (i + 1) & (t->cap - 1);
	memset(&t->slots[i], 0, sizeof(t->slots[i]));
	t->slots[i].dir_id = d;
	t->slots[i].objectid = o;
	t->count++;
	*out = &t->slots[i];
	return RFS_OK;
}

void rfs_objtab_free(struct rfs_objtab *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

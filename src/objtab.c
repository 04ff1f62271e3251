/* objtab.c - see include/rfs/objtab.h. */
#include "rfs/objtab.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct rfs_objinfo) == 64, "one record per cache line");

static uint64_t key_hash(uint32_t d, uint32_t o)
{
	uint64_t v = (uint64_t)d << 32 | o;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 29;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 32;
	return v;
}

struct rfs_objinfo *rfs_objtab_find(const struct rfs_objtab *t, uint32_t d, uint32_t o)
{
	if (!t->cap)
		return NULL;
	uint64_t h = key_hash(d, o);
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = (size_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		const struct rfs_objtab_slot *s = &t->index[i];
		if (!s->rec)
			return NULL;
		if (s->tag != tag)
			continue;
		struct rfs_objinfo *r = rfs_objtab_at(t, s->rec - 1);
		if (r->dir_id == d && r->objectid == o)
			return r;
	}
}

static void index_put(struct rfs_objtab_slot *index, size_t cap, uint64_t h, uint32_t rec)
{
	size_t i = (size_t)h & (cap - 1);
	while (index[i].rec)
		i = (i + 1) & (cap - 1);
	index[i].tag = (uint32_t)(h >> 32);
	index[i].rec = rec;
}

static rfs_status grow_index(struct rfs_objtab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	if (ncap > SIZE_MAX / sizeof(*t->index))
		return RFS_ERR_NOMEM;
	struct rfs_objtab_slot *n = calloc(ncap, sizeof(*n));
	if (!n)
		return RFS_ERR_NOMEM;
	for (size_t i = 0; i < t->count; i++) {
		const struct rfs_objinfo *r = rfs_objtab_at(t, i);
		index_put(n, ncap, key_hash(r->dir_id, r->objectid), (uint32_t)(i + 1));
	}
	free(t->index);
	t->index = n;
	t->cap = ncap;
	return RFS_OK;
}

static rfs_status add_chunk(struct rfs_objtab *t)
{
	if (t->nchunks == t->chunks_cap) {
		size_t ncap = t->chunks_cap ? t->chunks_cap * 2 : 16;
		struct rfs_objinfo **n = realloc(t->chunks, ncap * sizeof(*n));
		if (!n)
			return RFS_ERR_NOMEM;
		t->chunks = n;
		t->chunks_cap = ncap;
	}
	/* calloc: pages are touched only as records fill them */
	struct rfs_objinfo *c = calloc(RFS_OBJTAB_CHUNK, sizeof(*c));
	if (!c)
		return RFS_ERR_NOMEM;
	t->chunks[t->nchunks++] = c;
	return RFS_OK;
}

rfs_status rfs_objtab_get(struct rfs_objtab *t, uint32_t d, uint32_t o, struct rfs_objinfo **out)
{
	*out = NULL;
	if (!d && !o)
		return RFS_ERR_INVALID;
	struct rfs_objinfo *r = rfs_objtab_find(t, d, o);
	if (r) {
		*out = r;
		return RFS_OK;
	}
	if (t->count >= UINT32_MAX - 1)
		return RFS_ERR_LIMIT;
	rfs_status st;
	if (t->count == t->nchunks * RFS_OBJTAB_CHUNK && (st = add_chunk(t)))
		return st;
	if ((t->count + 1) * 4 > t->cap * 3 && (st = grow_index(t)))
		return st;   /* the table is as it was */
	r = rfs_objtab_at(t, t->count);
	memset(r, 0, sizeof(*r));
	r->dir_id = d;
	r->objectid = o;
	t->count++;
	index_put(t->index, t->cap, key_hash(d, o), (uint32_t)t->count);
	*out = r;
	return RFS_OK;
}

void rfs_objtab_free(struct rfs_objtab *t)
{
	for (size_t i = 0; i < t->nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	free(t->index);
	memset(t, 0, sizeof(*t));
}

/* objtab.c - see include/rfs/objtab.h. */
#include "rfs/objtab.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct rfs_objinfo) == 24, "the per-object cost the header states");
_Static_assert(sizeof(struct rfs_objbody) == 40, "the per-body cost the header states");

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

static uint64_t key_of(const struct rfs_objinfo *r)
{
	return (uint64_t)r->dir_id << 32 | r->objectid;
}

/* Records in increasing key order: the first one not below k, by binary
 * search over the records (t->count when none). */
static size_t sorted_lower_bound(const struct rfs_objtab *t, uint64_t k)
{
	size_t lo = 0, hi = t->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key_of(rfs_objtab_at(t, mid)) < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct rfs_objinfo *rfs_objtab_find(const struct rfs_objtab *t, uint32_t d, uint32_t o)
{
	if (!t->unsorted) {
		uint64_t k = (uint64_t)d << 32 | o;
		size_t i = sorted_lower_bound(t, k);
		if (i < t->count && key_of(rfs_objtab_at(t, i)) == k)
			return rfs_objtab_at(t, i);
		return NULL;
	}
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

/* An index with room for t->count + 1 records at 3/4 load, all present
 * records in it. */
static rfs_status grow_index(struct rfs_objtab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	while ((t->count + 1) * 4 > ncap * 3) {
		if (ncap > SIZE_MAX / 2 / sizeof(*t->index))
			return RFS_ERR_NOMEM;
		ncap *= 2;
	}
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

/* Appends a zeroed chunk of `size`-byte elements to a chunk list. */
static rfs_status add_chunk(void ***chunks, size_t *n, size_t *cap, size_t size)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		void **p = realloc(*chunks, ncap * sizeof(*p));
		if (!p)
			return RFS_ERR_NOMEM;
		*chunks = p;
		*cap = ncap;
	}
	/* calloc: pages are touched only as elements fill them */
	void *c = calloc(RFS_OBJTAB_CHUNK, size);
	if (!c)
		return RFS_ERR_NOMEM;
	(*chunks)[(*n)++] = c;
	return RFS_OK;
}

rfs_status rfs_objtab_get(struct rfs_objtab *t, uint32_t d, uint32_t o, struct rfs_objinfo **out,
			  bool *created)
{
	*out = NULL;
	if (created)
		*created = false;
	if (!d && !o)
		return RFS_ERR_INVALID;
	uint64_t k = (uint64_t)d << 32 | o;
	/* above the last key of a sorted table: new, without a search (the
	 * tree walk's case for every object) */
	bool in_order = !t->count || key_of(rfs_objtab_at(t, t->count - 1)) < k;
	struct rfs_objinfo *r = t->unsorted || !in_order ? rfs_objtab_find(t, d, o) : NULL;
	if (r) {
		*out = r;
		return RFS_OK;
	}
	if (t->count >= UINT32_MAX - 1)
		return RFS_ERR_LIMIT;
	rfs_status st;
	if (t->count == t->nchunks * RFS_OBJTAB_CHUNK &&
	    (st = add_chunk(&t->chunks, &t->nchunks, &t->chunks_cap, sizeof(*r))))
		return st;
	/* below the last key: from now on lookups go through the index */
	if ((t->unsorted || !in_order) && (t->count + 1) * 4 > t->cap * 3 && (st = grow_index(t)))
		return st;   /* the table is as it was */
	r = rfs_objtab_at(t, t->count);
	memset(r, 0, sizeof(*r));
	r->dir_id = d;
	r->objectid = o;
	t->count++;
	t->unsorted = t->unsorted || !in_order;
	if (t->unsorted)
		index_put(t->index, t->cap, key_hash(d, o), (uint32_t)t->count);
	*out = r;
	if (created)
		*created = true;
	return RFS_OK;
}

rfs_status rfs_objtab_body_new(struct rfs_objtab *t, struct rfs_objinfo *o, struct rfs_objbody **out)
{
	*out = rfs_objtab_body(t, o);
	if (*out)
		return RFS_OK;
	size_t i;
	if (t->free_body) {
		i = t->free_body - 1;
		t->free_body = rfs_objtab_body_at(t, i)->blocks;   /* the free list's link */
	} else {
		if (t->nbodies >= UINT32_MAX - 1)
			return RFS_ERR_LIMIT;
		rfs_status st;
		if (t->nbodies == t->nbchunks * RFS_OBJTAB_CHUNK &&
		    (st = add_chunk(&t->bchunks, &t->nbchunks, &t->bchunks_cap,
				    sizeof(struct rfs_objbody))))
			return st;
		i = t->nbodies++;
	}
	*out = rfs_objtab_body_at(t, i);
	memset(*out, 0, sizeof(**out));
	o->body = (uint32_t)(i + 1);
	t->live_bodies++;
	return RFS_OK;
}

void rfs_objtab_body_drop(struct rfs_objtab *t, struct rfs_objinfo *o)
{
	struct rfs_objbody *b = rfs_objtab_body(t, o);
	if (!b)
		return;
	memset(b, 0, sizeof(*b));
	b->blocks = t->free_body;
	t->free_body = o->body;
	o->body = 0;
	t->live_bodies--;
}

void rfs_objtab_free(struct rfs_objtab *t)
{
	for (size_t i = 0; i < t->nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	for (size_t i = 0; i < t->nbchunks; i++)
		free(t->bchunks[i]);
	free(t->bchunks);
	free(t->index);
	memset(t, 0, sizeof(*t));
}

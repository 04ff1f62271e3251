/*
 * objmap.c - rebuild's object table, sorted keys in memory (objmap.h).
 */
#include <stdlib.h>
#include <string.h>

#include "objmap.h"

void rb_objmap_reset(struct rb_objmap *m)
{
	m->n = 0;
}

void rb_objmap_free(struct rb_objmap *m)
{
	free(m->keys);
	free(m->flags);
	*m = (struct rb_objmap){ .keys = NULL };
}

/* Room for one more.  Doubling: the pages past n are never touched, so they
 * cost address space, not memory. */
static rfs_status grow(struct rb_objmap *m, struct rfs_error *err)
{
	if (m->n < m->cap)
		return RFS_OK;
	size_t nc = m->cap ? 2 * m->cap : 4096;
	uint64_t *k = realloc(m->keys, nc * sizeof(*k));
	if (!k)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "object keys");
	m->keys = k;
	uint8_t *f = realloc(m->flags, nc);
	if (!f)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "object flags");
	m->flags = f;
	m->cap = nc;
	return RFS_OK;
}

rfs_status rb_objmap_append(struct rb_objmap *m, uint64_t key, uint8_t flags,
			    struct rfs_error *err)
{
	if (m->n > 0 && key <= m->keys[m->n - 1])
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK,
				     "object map: %u %u after %u %u", (uint32_t)(key >> 32),
				     (uint32_t)key, (uint32_t)(m->keys[m->n - 1] >> 32),
				     (uint32_t)m->keys[m->n - 1]);
	rfs_status st = grow(m, err);
	if (st)
		return st;
	m->keys[m->n] = key;
	m->flags[m->n] = flags;
	m->n++;
	return RFS_OK;
}

/* The first position whose key is >= key. */
static size_t lower_bound(const struct rb_objmap *m, uint64_t key)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t rb_objmap_find(const struct rb_objmap *m, uint64_t key)
{
	size_t i = lower_bound(m, key);
	return i < m->n && m->keys[i] == key ? i : RB_OBJMAP_NONE;
}

rfs_status rb_objmap_insert(struct rb_objmap *m, uint64_t key, uint8_t flags,
			    struct rfs_error *err)
{
	size_t i = lower_bound(m, key);
	if (i < m->n && m->keys[i] == key)
		return RFS_OK;
	rfs_status st = grow(m, err);
	if (st)
		return st;
	memmove(m->keys + i + 1, m->keys + i, (m->n - i) * sizeof(*m->keys));
	memmove(m->flags + i + 1, m->flags + i, m->n - i);
	m->keys[i] = key;
	m->flags[i] = flags;
	m->n++;
	return RFS_OK;
}

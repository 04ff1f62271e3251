/* u64set.c - see include/rfs/u64set.h. */
#include "rfs/u64set.h"

#include <stdlib.h>

static size_t slot_of(uint64_t v, size_t cap)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return (size_t)v & (cap - 1);
}

static void insert_raw(uint64_t *slots, size_t cap, uint64_t v)
{
	size_t i = slot_of(v, cap);
	while (slots[i] != 0)
		i = (i + 1) & (cap - 1);
	slots[i] = v;
}

bool u64set_has(const struct u64set *s, uint64_t v)
{
	if (v == 0)
		return s->has_zero;
	if (!s->cap)
		return false;
	for (size_t i = slot_of(v, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->slots[i] == v)
			return true;
		if (s->slots[i] == 0)
			return false;
	}
}

rfs_status u64set_add(struct u64set *s, uint64_t v, bool *added)
{
	if (added)
		*added = false;
	if (u64set_has(s, v))
		return RFS_OK;
	if (v == 0) {
		s->has_zero = true;
	} else {
		if ((s->count + 1) * 2 > s->cap) {
			size_t ncap = s->cap ? s->cap * 2 : 64;
			uint64_t *n = calloc(ncap, sizeof(*n));
			if (!n)
				return RFS_ERR_NOMEM;
			for (size_t i = 0; i < s->cap; i++)
				if (s->slots[i])
					insert_raw(n, ncap, s->slots[i]);
			free(s->slots);
			s->slots = n;
			s->cap = ncap;
		}
		insert_raw(s->slots, s->cap, v);
		s->count++;
	}
	if (added)
		*added = true;
	return RFS_OK;
}

void u64set_free(struct u64set *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->count = 0;
	s->has_zero = false;
}

int u64_compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

rfs_status u64set_sorted(const struct u64set *s, uint64_t **out, size_t *n)
{
	size_t count = s->count + (s->has_zero ? 1 : 0);
	uint64_t *v = malloc((count ? count : 1) * sizeof(*v));
	if (!v)
		return RFS_ERR_NOMEM;
	size_t k = 0;
	if (s->has_zero)
		v[k++] = 0;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			v[k++] = s->slots[i];
	qsort(v, k, sizeof(*v), u64_compare);
	*out = v;
	*n = k;
	return RFS_OK;
}

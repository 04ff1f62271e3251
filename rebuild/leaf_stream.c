/*
 * leaf_stream.c - rows of leaves a batch ahead, with their runs on the disk
 * read into the block cache (leaf_stream.h).
 *
 * A tree the kernel wrote keeps most leaves next to the one before in key
 * order (bench-32g: 59 % at the next block, 15 % more within 32), and a
 * pread of one block costs a system call that is most of the time of
 * reading it from the page cache.  So the stream sorts its next blocks and
 * asks for each run of them (gaps of up to RUN_GAP blocks read along) in one
 * read.
 */
#include <stdlib.h>

#include "leaf_stream.h"
#include "rfs/u64set.h"

enum { RUN_GAP = 4 };

void rb_leaf_stream_init(struct rb_leaf_stream *s, sqlite3_stmt *q, struct rfs_dev *dev)
{
	s->q = q;
	s->dev = dev;
	s->n = s->at = 0;
	s->end_rc = SQLITE_DONE;
	s->ended = false;
}

static void cache_runs(struct rb_leaf_stream *s)
{
	if (s->n < 2)
		return;
	for (unsigned i = 0; i < s->n; i++)
		s->sorted[i] = s->blk[i];
	qsort(s->sorted, s->n, sizeof(s->sorted[0]), u64_compare);
	uint64_t first = s->sorted[0], last = first;
	for (unsigned i = 1; i <= s->n; i++) {
		if (i < s->n && s->sorted[i] - last <= RUN_GAP &&
		    s->sorted[i] - first < RFS_DEV_CACHE_RUN_MAX) {
			last = s->sorted[i];
			continue;
		}
		if (last > first)
			rfs_dev_cache_run(s->dev, first, (uint32_t)(last - first + 1));
		if (i < s->n)
			first = last = s->sorted[i];
	}
}

int rb_leaf_stream_next(struct rb_leaf_stream *s, uint64_t *blk, uint64_t *sum)
{
	if (s->at == s->n) {
		if (s->ended)
			return s->end_rc;
		s->n = s->at = 0;
		while (s->n < RB_LEAF_STREAM_AHEAD) {
			int rc = sqlite3_step(s->q);
			if (rc != SQLITE_ROW) {
				s->end_rc = rc;
				s->ended = true;
				break;
			}
			s->blk[s->n] = (uint64_t)sqlite3_column_int64(s->q, 0);
			s->sum[s->n] = (uint64_t)sqlite3_column_int64(s->q, 1);
			s->n++;
		}
		if (s->n == 0)
			return s->end_rc;
		cache_runs(s);
	}
	*blk = s->blk[s->at];
	*sum = s->sum[s->at];
	s->at++;
	return SQLITE_ROW;
}

/*
 * readahead.c - the scan's reader thread (see readahead.h).
 *
 * A ring of RA_RUNS buffers: the reader fills slot `tail` while the consumer
 * works on slot `head`; one mutex and two condition variables.  A read
 * failure of a run falls back to single blocks inside the reader, so the
 * consumer never calls the device.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "readahead.h"

struct readahead {
	struct rfs_dev *dev;
	uint32_t bs;
	uint64_t next, end;
	ra_in_set_fn in_set;
	const void *ctx;
	struct ra_run runs[RA_RUNS];
	unsigned head, count;        /* ring: runs ready for the consumer */
	bool done, stop, consumer_holds;
	rfs_status status;
	struct rfs_error err;
	pthread_mutex_t mu;
	pthread_cond_t can_fill, can_take;
	pthread_t thread;
	bool started;
	uint64_t hinted;             /* blocks below this were announced (announce) */
};

/* How far ahead of the reader the kernel is told what comes (see announce):
 * deep enough to keep a disk's queue full, small next to the page cache. */
enum { RA_HINT_BLOCKS = 8192, RA_HINT_GAP = 8 };

/* Announces the set's runs in the next window past the reader's position
 * (rfs_dev_prefetch), merged across gaps of up to RA_HINT_GAP blocks, so
 * the device works on many requests while the reader waits for one. */
static void announce(struct readahead *ra)
{
	if (ra->hinted < ra->next)
		ra->hinted = ra->next;
	if (ra->hinted >= ra->end || ra->hinted - ra->next > RA_HINT_BLOCKS / 2)
		return;
	uint64_t stop = ra->hinted + RA_HINT_BLOCKS / 2;
	if (stop > ra->end)
		stop = ra->end;
	uint64_t first = 0, last = 0;
	bool open = false;
	for (uint64_t b = ra->hinted; b < stop; b++) {
		if (!ra->in_set(ra->ctx, b))
			continue;
		if (open && b - last <= RA_HINT_GAP) {
			last = b;
			continue;
		}
		if (open)
			rfs_dev_prefetch(ra->dev, first, last - first + 1);
		first = last = b;
		open = true;
	}
	if (open)
		rfs_dev_prefetch(ra->dev, first, last - first + 1);
	ra->hinted = stop;
}

static void run_clear(struct ra_run *r)
{
	for (uint32_t i = 0; i < RA_BLOCKS; i++) {
		free(r->why[i]);
		r->why[i] = NULL;
		r->failed[i] = false;
	}
	r->n = 0;
}

/* Fills r with the next run of the set; false at the end. */
static bool fill(struct readahead *ra, struct ra_run *r)
{
	uint64_t b = ra->next;
	while (b < ra->end && !ra->in_set(ra->ctx, b))
		b++;
	if (b >= ra->end) {
		ra->next = b;
		return false;
	}
	uint64_t e = b + 1;
	while (e < ra->end && e - b < RA_BLOCKS && ra->in_set(ra->ctx, e))
		e++;
	ra->next = e;
	announce(ra);
	run_clear(r);
	r->first = b;
	r->n = (uint32_t)(e - b);
	uint64_t bad;
	struct rfs_error rerr;
	if (rfs_dev_read_run(ra->dev, b, r->n, r->data, &bad, &rerr) == RFS_OK)
		return true;
	for (uint32_t i = 0; i < r->n; i++) {
		struct rfs_error e1;
		if (rfs_dev_read_block(ra->dev, b + i, r->data + (size_t)i * ra->bs, &e1) == RFS_OK)
			continue;
		r->failed[i] = true;
		char msg[256];
		rfs_error_format(&e1, msg, sizeof(msg));
		r->why[i] = strdup(msg);
	}
	return true;
}

static void *reader(void *arg)
{
	struct readahead *ra = arg;
	pthread_mutex_lock(&ra->mu);
	for (;;) {
		while (!ra->stop && ra->count == RA_RUNS)
			pthread_cond_wait(&ra->can_fill, &ra->mu);
		if (ra->stop)
			break;
		unsigned slot = (ra->head + ra->count) % RA_RUNS;
		pthread_mutex_unlock(&ra->mu);
		bool more = fill(ra, &ra->runs[slot]);
		pthread_mutex_lock(&ra->mu);
		if (!more) {
			ra->done = true;
			pthread_cond_broadcast(&ra->can_take);
			break;
		}
		ra->count++;
		pthread_cond_broadcast(&ra->can_take);
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

rfs_status ra_start(struct rfs_dev *dev, uint32_t bs, uint64_t next, uint64_t end,
		    ra_in_set_fn in_set, const void *ctx, struct readahead **out,
		    struct rfs_error *err)
{
	*out = NULL;
	struct readahead *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reader");
	*ra = (struct readahead){ .dev = dev, .bs = bs, .next = next, .end = end,
				  .in_set = in_set, .ctx = ctx };
	for (unsigned i = 0; i < RA_RUNS; i++) {
		ra->runs[i].data = malloc((size_t)RA_BLOCKS * bs);
		if (!ra->runs[i].data) {
			ra_stop(ra);
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reader buffers");
		}
	}
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->can_fill, NULL);
	pthread_cond_init(&ra->can_take, NULL);
	if (pthread_create(&ra->thread, NULL, reader, ra) != 0) {
		pthread_mutex_destroy(&ra->mu);
		pthread_cond_destroy(&ra->can_fill);
		pthread_cond_destroy(&ra->can_take);
		for (unsigned i = 0; i < RA_RUNS; i++)
			free(ra->runs[i].data);
		free(ra);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "cannot start the reader thread");
	}
	ra->started = true;
	*out = ra;
	return RFS_OK;
}

rfs_status ra_next(struct readahead *ra, struct ra_run **run, struct rfs_error *err)
{
	(void)err;
	pthread_mutex_lock(&ra->mu);
	if (ra->consumer_holds) {
		/* the run handed out last time is done with: its slot is free */
		ra->head = (ra->head + 1) % RA_RUNS;
		ra->count--;
		ra->consumer_holds = false;
		pthread_cond_broadcast(&ra->can_fill);
	}
	while (ra->count == 0 && !ra->done)
		pthread_cond_wait(&ra->can_take, &ra->mu);
	if (ra->count == 0) {
		*run = NULL;
	} else {
		*run = &ra->runs[ra->head];
		ra->consumer_holds = true;
	}
	pthread_mutex_unlock(&ra->mu);
	return RFS_OK;
}

void ra_stop(struct readahead *ra)
{
	if (!ra)
		return;
	if (ra->started) {
		pthread_mutex_lock(&ra->mu);
		ra->stop = true;
		pthread_cond_broadcast(&ra->can_fill);
		pthread_mutex_unlock(&ra->mu);
		pthread_join(ra->thread, NULL);
		pthread_mutex_destroy(&ra->mu);
		pthread_cond_destroy(&ra->can_fill);
		pthread_cond_destroy(&ra->can_take);
	}
	for (unsigned i = 0; i < RA_RUNS; i++) {
		run_clear(&ra->runs[i]);
		free(ra->runs[i].data);
	}
	free(ra);
}

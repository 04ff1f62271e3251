/*
 * readahead.c - the scan's read pipeline (see readahead.h).
 *
 * A ring of RA_RUNS slots and three counters of runs: `read` (filled by the
 * reader), `taken` (claimed by a worker) and `released` (given back by the
 * consumer); run s lives in slot s % RA_RUNS.  The reader fills while
 * read - released < RA_RUNS, workers claim runs in order, and the consumer
 * takes run `released` once its work is done, so runs reach it in order
 * even when a later run's work finishes first.  One mutex, three condition
 * variables.  A read failure of a run falls back to single blocks inside the
 * reader, so no one else calls the device.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readahead.h"

struct readahead {
	struct rfs_dev *dev;
	struct ra_config cfg;
	uint64_t next;               /* the reader's position */
	struct ra_run runs[RA_RUNS];
	bool worked[RA_RUNS];        /* the slot's work is finished */
	uint64_t read, taken, released;
	bool done, stop, consumer_holds;
	pthread_mutex_t mu;
	pthread_cond_t can_fill, can_work, can_take;
	pthread_t reader;
	pthread_t worker[RA_MAX_WORKERS];
	unsigned nworkers;           /* started */
	bool started;
	uint64_t hinted;             /* blocks below this were announced (announce) */
};

/* How far ahead of the reader the kernel is told what comes (see announce):
 * deep enough to keep a disk's queue full, small next to the page cache. */
enum { RA_HINT_BLOCKS = 8192, RA_HINT_GAP = 8 };

unsigned ra_default_workers(void)
{
	const char *env = getenv("RFSCK_SCAN_THREADS");
	long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	if (n > RA_MAX_WORKERS)
		n = RA_MAX_WORKERS;
	return (unsigned)n;
}

/* Announces the set's runs in the next window past the reader's position
 * (rfs_dev_prefetch), merged across small gaps, so the device works on many
 * requests while the reader waits for one. */
static void announce(struct readahead *ra)
{
	if (ra->hinted < ra->next)
		ra->hinted = ra->next;
	if (ra->hinted >= ra->cfg.end || ra->hinted - ra->next > RA_HINT_BLOCKS / 2)
		return;
	uint64_t stop = ra->hinted + RA_HINT_BLOCKS / 2;
	if (stop > ra->cfg.end)
		stop = ra->cfg.end;
	uint64_t first = 0, last = 0;
	bool open = false;
	for (uint64_t b = ra->hinted; b < stop; b++) {
		if (!ra->cfg.in_set(ra->cfg.set_ctx, b))
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
		r->in_set[i] = false;
	}
	r->n = 0;
	r->work_status = RFS_OK;
}

/* Fills r with the next run of the set; false at the end. */
static bool fill(struct readahead *ra, struct ra_run *r)
{
	const struct ra_config *cfg = &ra->cfg;
	uint64_t b = ra->next;
	while (b < cfg->end && !cfg->in_set(cfg->set_ctx, b))
		b++;
	if (b >= cfg->end) {
		ra->next = b;
		return false;
	}
	run_clear(r);
	r->in_set[0] = true;
	uint64_t last = b;
	for (uint64_t e = b + 1; e < cfg->end && e - b < RA_BLOCKS; e++) {
		if (cfg->in_set(cfg->set_ctx, e)) {
			r->in_set[e - b] = true;
			last = e;
		} else if (e - last > cfg->gap) {
			break;
		}
	}
	ra->next = last + 1;
	announce(ra);
	r->first = b;
	r->n = (uint32_t)(last + 1 - b);
	uint64_t bad;
	struct rfs_error rerr;
	if (rfs_dev_read_run(ra->dev, b, r->n, r->data, &bad, &rerr) == RFS_OK)
		return true;
	for (uint32_t i = 0; i < r->n; i++) {
		struct rfs_error e1;
		if (!r->in_set[i] ||
		    rfs_dev_read_block(ra->dev, b + i, r->data + (size_t)i * cfg->bs, &e1) == RFS_OK)
			continue;
		r->failed[i] = true;
		char msg[256];
		rfs_error_format(&e1, msg, sizeof(msg));
		r->why[i] = strdup(msg);
	}
	return true;
}

static void *reader_main(void *arg)
{
	struct readahead *ra = arg;
	pthread_setname_np(pthread_self(), "rfsck-read");
	pthread_mutex_lock(&ra->mu);
	for (;;) {
		while (!ra->stop && ra->read - ra->released == RA_RUNS)
			pthread_cond_wait(&ra->can_fill, &ra->mu);
		if (ra->stop)
			break;
		unsigned slot = (unsigned)(ra->read % RA_RUNS);
		pthread_mutex_unlock(&ra->mu);
		bool more = fill(ra, &ra->runs[slot]);
		pthread_mutex_lock(&ra->mu);
		if (!more) {
			ra->done = true;
			pthread_cond_broadcast(&ra->can_work);
			pthread_cond_broadcast(&ra->can_take);
			break;
		}
		ra->worked[slot] = ra->cfg.work == NULL;
		ra->read++;
		pthread_cond_broadcast(ra->cfg.work ? &ra->can_work : &ra->can_take);
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

static void *worker_main(void *arg)
{
	struct readahead *ra = arg;
	pthread_setname_np(pthread_self(), "rfsck-validate");
	pthread_mutex_lock(&ra->mu);
	for (;;) {
		while (!ra->stop && !ra->done && ra->taken == ra->read)
			pthread_cond_wait(&ra->can_work, &ra->mu);
		if (ra->stop || ra->taken == ra->read)
			break;
		unsigned slot = (unsigned)(ra->taken++ % RA_RUNS);
		pthread_mutex_unlock(&ra->mu);
		struct ra_run *r = &ra->runs[slot];
		r->work_status = ra->cfg.work(ra->cfg.work_ctx, r, &r->work_err);
		pthread_mutex_lock(&ra->mu);
		ra->worked[slot] = true;
		pthread_cond_broadcast(&ra->can_take);
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

static void destroy(struct readahead *ra)
{
	for (unsigned i = 0; i < RA_RUNS; i++) {
		run_clear(&ra->runs[i]);
		free(ra->runs[i].data);
		if (ra->runs[i].work_out && ra->cfg.work_free)
			ra->cfg.work_free(ra->runs[i].work_out);
	}
	free(ra);
}

/* Stops and joins whatever threads were started. */
static void halt(struct readahead *ra)
{
	pthread_mutex_lock(&ra->mu);
	ra->stop = true;
	pthread_cond_broadcast(&ra->can_fill);
	pthread_cond_broadcast(&ra->can_work);
	pthread_mutex_unlock(&ra->mu);
	if (ra->started)
		pthread_join(ra->reader, NULL);
	for (unsigned i = 0; i < ra->nworkers; i++)
		pthread_join(ra->worker[i], NULL);
	pthread_mutex_destroy(&ra->mu);
	pthread_cond_destroy(&ra->can_fill);
	pthread_cond_destroy(&ra->can_work);
	pthread_cond_destroy(&ra->can_take);
}

rfs_status ra_start(struct rfs_dev *dev, const struct ra_config *cfg, struct readahead **out,
		    struct rfs_error *err)
{
	*out = NULL;
	if (cfg->work && (cfg->workers < 1 || cfg->workers > RA_MAX_WORKERS))
		return rfs_error_set(err, RFS_ERR_INVALID, RFS_NO_BLOCK, "scan workers: %u (1..%d)",
				     cfg->workers, RA_MAX_WORKERS);
	struct readahead *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reader");
	ra->dev = dev;
	ra->cfg = *cfg;
	ra->next = cfg->next;
	for (unsigned i = 0; i < RA_RUNS; i++) {
		ra->runs[i].data = malloc((size_t)RA_BLOCKS * cfg->bs);
		if (!ra->runs[i].data) {
			destroy(ra);
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reader buffers");
		}
	}
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->can_fill, NULL);
	pthread_cond_init(&ra->can_work, NULL);
	pthread_cond_init(&ra->can_take, NULL);
	bool ok = pthread_create(&ra->reader, NULL, reader_main, ra) == 0;
	ra->started = ok;
	for (unsigned i = 0; ok && cfg->work && i < cfg->workers; i++) {
		ok = pthread_create(&ra->worker[i], NULL, worker_main, ra) == 0;
		if (ok)
			ra->nworkers++;
	}
	if (!ok) {
		halt(ra);
		destroy(ra);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "cannot start the scan threads");
	}
	*out = ra;
	return RFS_OK;
}

rfs_status ra_next(struct readahead *ra, struct ra_run **run, struct rfs_error *err)
{
	pthread_mutex_lock(&ra->mu);
	if (ra->consumer_holds) {
		/* the run handed out last time is done with: its slot is free */
		ra->worked[ra->released % RA_RUNS] = false;
		ra->released++;
		ra->consumer_holds = false;
		pthread_cond_broadcast(&ra->can_fill);
	}
	unsigned slot = (unsigned)(ra->released % RA_RUNS);
	while (!(ra->released < ra->read && ra->worked[slot]) &&
	       !(ra->done && ra->released == ra->read))
		pthread_cond_wait(&ra->can_take, &ra->mu);
	rfs_status st = RFS_OK;
	if (ra->released == ra->read) {
		*run = NULL;
	} else {
		*run = &ra->runs[slot];
		ra->consumer_holds = true;
		if ((st = (*run)->work_status) != RFS_OK)
			*err = (*run)->work_err;
	}
	pthread_mutex_unlock(&ra->mu);
	return st;
}

void ra_stop(struct readahead *ra)
{
	if (!ra)
		return;
	halt(ra);
	destroy(ra);
}

/*
 * sha256_worker.c - SHA-256 of a sequence of jobs on a second thread
 * (invariants in sha256_worker.h).
 *
 * The caller writes messages into the chunk it holds: a 16-byte header
 * (kind, argument) and, for data, the bytes.  A full chunk, or any chunk when
 * the caller must wait for a digest, goes to the ready queue; the worker
 * hashes the messages of one chunk after another and gives the chunk back to
 * the free stack.  One mutex guards the queue, the stack and the slots;
 * the bytes of a chunk belong to whichever side holds its index.
 */
#include "sha256_worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum msg_kind { MSG_OPEN = 1, MSG_DATA, MSG_ZEROS, MSG_CLOSE };
enum { MSG_HEAD = 16 };
enum slot_state { SLOT_FREE = 0, SLOT_BUSY, SLOT_DONE };

struct slot {
	uint64_t id;
	uint8_t state;
	uint8_t digest[RFS_SHA256_LEN];
};

struct rfs_sha256_worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, space, done;
	atomic_bool stopping;
	uint8_t *mem;                 /* the chunks, RFS_SHA256_WORKER_CHUNK each */
	int free_stack[RFS_SHA256_WORKER_CHUNKS];
	int nfree;
	int ready[RFS_SHA256_WORKER_CHUNKS];   /* FIFO of chunks to hash */
	size_t ready_len[RFS_SHA256_WORKER_CHUNKS];
	uint64_t ready_work[RFS_SHA256_WORKER_CHUNKS];   /* bytes to hash in each */
	uint64_t backlog;             /* bytes handed over and not hashed yet */
	int ready_head, nready;
	struct slot *slots;
	size_t nslots;
	/* the caller's side */
	int cur;                      /* chunk being filled, or -1 */
	size_t cur_used;
	size_t cur_zeros;             /* offset of its last message when that is a
				       * run of zeros, else SIZE_MAX */
	uint64_t cur_work;            /* bytes to hash in it */
	uint64_t next_id;             /* last id handed out */
	bool job_open;                /* next_id is not closed yet */
	/* the worker's side */
	struct rfs_sha256 ctx;
	uint64_t job;
};

static uint8_t *chunk_mem(struct rfs_sha256_worker *w, int i)
{
	return w->mem + (size_t)i * RFS_SHA256_WORKER_CHUNK;
}

static struct slot *slot_of(struct rfs_sha256_worker *w, uint64_t id)
{
	return &w->slots[id % w->nslots];
}

/* ---- the worker thread --------------------------------------------------- */

static void job_end(struct rfs_sha256_worker *w, bool keep)
{
	struct slot *s = slot_of(w, w->job);
	uint8_t d[RFS_SHA256_LEN];
	if (keep)
		rfs_sha256_final(&w->ctx, d);
	pthread_mutex_lock(&w->mu);
	if (s->id == w->job && s->state == SLOT_BUSY) {
		if (keep)
			memcpy(s->digest, d, sizeof(d));
		s->state = keep ? SLOT_DONE : SLOT_FREE;
	}
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->mu);
}

static void hash_chunk(struct rfs_sha256_worker *w, const uint8_t *p, size_t len)
{
	size_t at = 0;
	while (at + MSG_HEAD <= len && !atomic_load_explicit(&w->stopping, memory_order_relaxed)) {
		uint64_t arg;
		memcpy(&arg, p + at + 8, sizeof(arg));
		uint8_t kind = p[at];
		at += MSG_HEAD;
		switch (kind) {
		case MSG_OPEN:
			w->job = arg;
			rfs_sha256_init(&w->ctx);
			break;
		case MSG_DATA:
			rfs_sha256_update(&w->ctx, p + at, (size_t)arg);
			at += (size_t)arg;
			break;
		case MSG_ZEROS:
			/* a hole of gigabytes: look every 64 MiB whether to stop */
			for (uint64_t left = arg; left;) {
				uint64_t n = left < (UINT64_C(64) << 20) ? left : UINT64_C(64) << 20;
				rfs_sha256_zeros(&w->ctx, n);
				left -= n;
				if (atomic_load_explicit(&w->stopping, memory_order_relaxed))
					return;
			}
			break;
		case MSG_CLOSE:
			job_end(w, arg != 0);
			break;
		default:
			return;   /* cannot happen: only this file writes chunks */
		}
	}
}

static void *worker_main(void *arg)
{
	struct rfs_sha256_worker *w = arg;
	pthread_setname_np(pthread_self(), "rfsck-sha256");
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->nready && !atomic_load(&w->stopping))
			pthread_cond_wait(&w->work, &w->mu);
		if (atomic_load(&w->stopping))
			break;
		int c = w->ready[w->ready_head];
		size_t len = w->ready_len[w->ready_head];
		uint64_t work = w->ready_work[w->ready_head];
		w->ready_head = (w->ready_head + 1) % RFS_SHA256_WORKER_CHUNKS;
		w->nready--;
		pthread_mutex_unlock(&w->mu);
		hash_chunk(w, chunk_mem(w, c), len);
		pthread_mutex_lock(&w->mu);
		w->backlog -= work;
		w->free_stack[w->nfree++] = c;
		pthread_cond_signal(&w->space);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- the caller's side ---------------------------------------------------- */

/* Everything but the thread, which is not running (any more). */
static void worker_free(struct rfs_sha256_worker *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->space);
	pthread_cond_destroy(&w->done);
	free(w->mem);
	free(w->slots);
	free(w);
}

rfs_status rfs_sha256_worker_start(struct rfs_sha256_worker **out, size_t nslots,
				   struct rfs_error *err)
{
	*out = NULL;
	struct rfs_sha256_worker *w = calloc(1, sizeof(*w));
	if (w) {
		w->mem = malloc((size_t)RFS_SHA256_WORKER_CHUNKS * RFS_SHA256_WORKER_CHUNK);
		w->nslots = nslots ? nslots : 1;
		w->slots = calloc(w->nslots, sizeof(*w->slots));
	}
	if (!w || !w->mem || !w->slots) {
		if (w) {
			free(w->mem);
			free(w->slots);
			free(w);
		}
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "digest buffers");
	}
	/* sha256.c chooses its compression function on first use; make that
	 * happen here, before the thread exists, not in two threads at once */
	struct rfs_sha256 first;
	uint8_t d[RFS_SHA256_LEN];
	rfs_sha256_init(&first);
	rfs_sha256_final(&first, d);
	for (int i = 0; i < RFS_SHA256_WORKER_CHUNKS; i++)
		w->free_stack[i] = RFS_SHA256_WORKER_CHUNKS - 1 - i;
	w->nfree = RFS_SHA256_WORKER_CHUNKS;
	w->cur = -1;
	w->cur_zeros = SIZE_MAX;
	atomic_init(&w->stopping, false);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->space, NULL);
	pthread_cond_init(&w->done, NULL);
	int e = pthread_create(&w->thread, NULL, worker_main, w);
	if (e) {
		worker_free(w);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "starting the digest thread");
	}
	*out = w;
	return RFS_OK;
}

void rfs_sha256_worker_stop(struct rfs_sha256_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	atomic_store(&w->stopping, true);
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	worker_free(w);
}

/* Hands the chunk being filled to the worker (nothing when it is empty). */
static void publish(struct rfs_sha256_worker *w)
{
	if (w->cur < 0 || !w->cur_used)
		return;
	pthread_mutex_lock(&w->mu);
	int tail = (w->ready_head + w->nready) % RFS_SHA256_WORKER_CHUNKS;
	w->ready[tail] = w->cur;
	w->ready_len[tail] = w->cur_used;
	w->ready_work[tail] = w->cur_work;
	w->backlog += w->cur_work;
	w->nready++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	w->cur = -1;
	w->cur_used = 0;
	w->cur_zeros = SIZE_MAX;
	w->cur_work = 0;
}

/* Room for a header and at least one byte after it in the current chunk.
 * Every chunk but the one held here is free, queued or being hashed, so a
 * wait for a free one always ends. */
static size_t room(struct rfs_sha256_worker *w)
{
	if (w->cur >= 0 && RFS_SHA256_WORKER_CHUNK - w->cur_used > MSG_HEAD)
		return RFS_SHA256_WORKER_CHUNK - w->cur_used - MSG_HEAD;
	publish(w);
	pthread_mutex_lock(&w->mu);
	while (!w->nfree)
		pthread_cond_wait(&w->space, &w->mu);
	w->cur = w->free_stack[--w->nfree];
	pthread_mutex_unlock(&w->mu);
	w->cur_used = 0;
	w->cur_zeros = SIZE_MAX;
	w->cur_work = 0;
	return RFS_SHA256_WORKER_CHUNK - MSG_HEAD;
}

static void put(struct rfs_sha256_worker *w, uint8_t kind, uint64_t arg, const void *data)
{
	uint8_t *p = chunk_mem(w, w->cur) + w->cur_used;
	w->cur_zeros = kind == MSG_ZEROS ? w->cur_used : SIZE_MAX;
	memset(p, 0, MSG_HEAD);
	p[0] = kind;
	memcpy(p + 8, &arg, sizeof(arg));
	w->cur_used += MSG_HEAD;
	if (data) {
		memcpy(p + MSG_HEAD, data, (size_t)arg);
		w->cur_used += (size_t)arg;
	}
}

rfs_status rfs_sha256_worker_open(struct rfs_sha256_worker *w, uint64_t *id)
{
	uint64_t n = w->next_id + 1;
	struct slot *s = slot_of(w, n);
	pthread_mutex_lock(&w->mu);
	if (s->state == SLOT_BUSY) {
		/* the slot's previous job may sit in the chunk held here */
		pthread_mutex_unlock(&w->mu);
		publish(w);
		pthread_mutex_lock(&w->mu);
		while (s->state == SLOT_BUSY)
			pthread_cond_wait(&w->done, &w->mu);
	}
	if (s->state == SLOT_DONE) {
		pthread_mutex_unlock(&w->mu);
		return RFS_ERR_INVALID;
	}
	s->id = n;
	s->state = SLOT_BUSY;
	pthread_mutex_unlock(&w->mu);
	w->next_id = n;
	w->job_open = true;
	*id = n;
	room(w);
	put(w, MSG_OPEN, n, NULL);
	return RFS_OK;
}

void rfs_sha256_worker_data(struct rfs_sha256_worker *w, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n) {
		size_t take = room(w);
		if (take > n)
			take = n;
		put(w, MSG_DATA, take, p);
		w->cur_work += take;
		p += take;
		n -= take;
	}
}

void rfs_sha256_worker_zeros(struct rfs_sha256_worker *w, uint64_t n)
{
	if (!n)
		return;
	/* a hole comes in pieces of a block or an item: one message for the
	 * run, not one per piece (a 4 GiB hole would fill 64 chunks) */
	if (w->cur >= 0 && w->cur_zeros != SIZE_MAX) {
		uint8_t *p = chunk_mem(w, w->cur) + w->cur_zeros;
		uint64_t have;
		memcpy(&have, p + 8, sizeof(have));
		if (have <= UINT64_MAX - n) {
			have += n;
			memcpy(p + 8, &have, sizeof(have));
			w->cur_work += n;
			return;
		}
	}
	room(w);
	put(w, MSG_ZEROS, n, NULL);
	w->cur_work += n;
}

void rfs_sha256_worker_close(struct rfs_sha256_worker *w, bool keep)
{
	room(w);
	put(w, MSG_CLOSE, keep ? 1 : 0, NULL);
	w->job_open = false;
}

uint64_t rfs_sha256_worker_backlog(struct rfs_sha256_worker *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t b = w->backlog;
	pthread_mutex_unlock(&w->mu);
	return b + w->cur_work;
}

bool rfs_sha256_worker_result(struct rfs_sha256_worker *w, uint64_t id, bool wait,
			      uint8_t out[RFS_SHA256_LEN])
{
	struct slot *s = slot_of(w, id);
	if (id == w->next_id && w->job_open)
		return false;   /* not closed: waiting would never end */
	pthread_mutex_lock(&w->mu);
	if (s->id == id && s->state == SLOT_BUSY && wait) {
		pthread_mutex_unlock(&w->mu);
		publish(w);
		pthread_mutex_lock(&w->mu);
		while (s->id == id && s->state == SLOT_BUSY)
			pthread_cond_wait(&w->done, &w->mu);
	}
	bool got = s->id == id && s->state == SLOT_DONE;
	if (got) {
		memcpy(out, s->digest, RFS_SHA256_LEN);
		s->state = SLOT_FREE;
	}
	pthread_mutex_unlock(&w->mu);
	return got;
}

/*
 * salvage_queue.c - manifest and body-file lines that wait for the digest
 * of their file, and every line after them.
 *
 * The digest thread (sha256_worker.h) hashes a file while the walk goes on
 * to the next ones; a record whose digest is not ready yet is formatted at
 * once (the walk's paths and buffers change) and queued, and so is every
 * record after it, so that the manifest keeps the walk's order.
 *
 * Invariants:
 *  - lines reach the streams in the order salvage_queue_emit received
 *    their records, exactly as salvage_record_write would have written them;
 *  - at most SALVAGE_QUEUE_MAX records and SALVAGE_QUEUE_BYTES of lines
 *    wait; beyond that the walk waits for the oldest.  With the file being
 *    hashed and one kept but not yet emitted, fewer digests stay unread than
 *    the SALVAGE_HASHER_SLOTS the worker has;
 *  - with no worker nothing waits: every record is written at once.
 */
#include "salvage_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct salvage_queued {
	struct strbuf manifest, body;
	size_t sha_at;               /* SIZE_MAX: no digest to fill in */
	uint64_t job;                /* 0: nothing to wait for */
};


static rfs_status put_lines(struct salvage_queue *q, struct salvage_queued *e)
{
	if (fwrite(e->manifest.buf, 1, e->manifest.len, q->manifest) != e->manifest.len ||
	    fwrite(e->body.buf, 1, e->body.len, q->bodyfile) != e->body.len)
		return RFS_ERR_IO;
	return RFS_OK;
}

static void entry_free(struct salvage_queued *e)
{
	sb_free(&e->manifest);
	sb_free(&e->body);
}

rfs_status salvage_queue_flush(struct salvage_queue *q, bool all)
{
	while (q->n) {
		struct salvage_queued *e = &q->v[q->head];
		if (e->job) {
			uint8_t d[RFS_SHA256_LEN];
			bool wait = all || q->n >= SALVAGE_QUEUE_MAX || q->bytes >= SALVAGE_QUEUE_BYTES;
			if (!rfs_sha256_worker_result(q->worker, e->job, wait, d)) {
				if (wait)
					return RFS_ERR_INVALID;   /* a digest that can never come */
				return RFS_OK;
			}
			char hex[RFS_SHA256_HEX_LEN + 1];
			rfs_sha256_hex(d, hex);
			if (e->sha_at != SIZE_MAX && e->sha_at + RFS_SHA256_HEX_LEN <= e->manifest.len)
				memcpy(e->manifest.buf + e->sha_at, hex, RFS_SHA256_HEX_LEN);
			e->job = 0;
		}
		rfs_status st = put_lines(q, e);
		if (st)
			return st;
		q->bytes -= e->manifest.len + e->body.len;
		entry_free(e);
		q->head = (q->head + 1) % SALVAGE_QUEUE_MAX;
		q->n--;
	}
	return RFS_OK;
}

rfs_status salvage_queue_emit(struct salvage_queue *q, const struct salvage_record *rec)
{
	if (!rec->sha_job && !q->n)
		return salvage_record_write(q->manifest, q->bodyfile, rec);
	if (!q->v) {
		q->v = calloc(SALVAGE_QUEUE_MAX, sizeof(*q->v));
		if (!q->v)
			return RFS_ERR_NOMEM;
	}
	if (q->n == SALVAGE_QUEUE_MAX || q->bytes >= SALVAGE_QUEUE_BYTES) {
		rfs_status st = salvage_queue_flush(q, false);
		if (st)
			return st;
	}
	/* a full queue was waited for above; only a failed wait leaves it full */
	if (q->n == SALVAGE_QUEUE_MAX)
		return RFS_ERR_INVALID;
	struct salvage_queued *e = &q->v[(q->head + q->n) % SALVAGE_QUEUE_MAX];
	*e = (struct salvage_queued){ .manifest = STRBUF_INIT, .body = STRBUF_INIT,
				      .job = rec->sha_job };
	rfs_status st = salvage_record_format(rec, &e->manifest, &e->body, &e->sha_at);
	if (st) {
		entry_free(e);
		return st;
	}
	q->n++;
	q->bytes += e->manifest.len + e->body.len;
	return salvage_queue_flush(q, false);
}

rfs_status salvage_queue_digest_now(struct salvage_queue *q, struct salvage_record *rec)
{
	if (!rec->sha_job)
		return RFS_OK;
	uint8_t d[RFS_SHA256_LEN];
	if (!rfs_sha256_worker_result(q->worker, rec->sha_job, true, d))
		return RFS_ERR_INVALID;
	rfs_sha256_hex(d, rec->sha256);
	rec->sha_job = 0;
	return RFS_OK;
}

void salvage_queue_free(struct salvage_queue *q)
{
	for (; q->n; q->n--, q->head = (q->head + 1) % SALVAGE_QUEUE_MAX)
		entry_free(&q->v[q->head]);
	free(q->v);
	q->v = NULL;
}

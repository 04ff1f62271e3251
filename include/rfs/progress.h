/*
 * progress.h - a one-line progress display with rate and ETA on stderr.
 * It prints only when enabled (stderr is a terminal and not -q, or
 * --progress), at most five times a second, and erases itself when done.
 */
#ifndef RFS_PROGRESS_H
#define RFS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct rfs_progress {
	bool enabled;
	const char *phase;
	const char *unit;
	uint64_t total;
	double start, last;
	bool shown;
};

/* enabled = force || (stderr is a tty && !quiet). */
void rfs_progress_init(struct rfs_progress *p, bool force, bool quiet);
void rfs_progress_phase(struct rfs_progress *p, const char *phase, const char *unit,
			uint64_t total);
void rfs_progress_update(struct rfs_progress *p, uint64_t done);
void rfs_progress_done(struct rfs_progress *p);

#endif

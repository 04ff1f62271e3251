/* progress.c - see include/rfs/progress.h. */
#include "rfs/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rfs_progress_init(struct rfs_progress *p, bool force, bool quiet)
{
	p->enabled = force || (!quiet && isatty(STDERR_FILENO));
	p->phase = "";
	p->unit = "";
	p->total = 0;
	p->start = p->last = now();
	p->shown = false;
}

void rfs_progress_phase(struct rfs_progress *p, const char *phase, const char *unit,
			uint64_t total)
{
	rfs_progress_done(p);
	p->phase = phase;
	p->unit = unit;
	p->total = total;
	p->start = p->last = now();
}

void rfs_progress_update(struct rfs_progress *p, uint64_t done)
{
	if (!p->enabled)
		return;
	double t = now();
	if (t - p->last < 0.2)
		return;
	p->last = t;
	double el = t - p->start;
	double rate = el > 0 ? (double)done / el : 0;
	char eta[32] = "";
	if (p->total && rate > 0 && done <= p->total) {
		unsigned long s = (unsigned long)((double)(p->total - done) / rate);
		snprintf(eta, sizeof(eta), ", ETA %lu:%02lu", s / 60, s % 60);
	}
	if (p->total)
		fprintf(stderr, "\r%s: %llu/%llu %s (%.0f%%), %.0f %s/s%s   ", p->phase,
			(unsigned long long)done, (unsigned long long)p->total, p->unit,
			100.0 * (double)done / (double)p->total, rate, p->unit, eta);
	else
		fprintf(stderr, "\r%s: %llu %s, %.0f %s/s   ", p->phase, (unsigned long long)done,
			p->unit, rate, p->unit);
	p->shown = true;
}

void rfs_progress_done(struct rfs_progress *p)
{
	if (p->enabled && p->shown)
		fprintf(stderr, "\r%*s\r", 78, "");
	p->shown = false;
}

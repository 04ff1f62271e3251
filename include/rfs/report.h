/*
 * report.h - the one decision point for every finding (style habits 1-3).
 *
 * A pass fills a struct rfs_problem_ctx and calls problem_report().  The
 * reporter counts the finding, prints it (human text or one JSON record, both
 * from the problem table's template), and answers whether the pass may change
 * anything: in check mode the answer is always "no"; in fix mode and in
 * --dry-run it is "yes" for FIXABLE problems whose repair exists (a --dry-run
 * device keeps every write in memory, and the "would ..." wording is used).
 * No pass tests a mode flag itself.
 *
 * Invariants:
 *  (1) Every call increments exactly one per-code counter.
 *  (2) problem_report returns true only in RFS_MODE_FIX or RFS_MODE_DRY_RUN
 *      and only for FIXABLE codes; the caller must then either repair and call
 *      problem_fixed, or leave the problem counted as unfixed.
 *  (3) The exit status is derived from the counters alone (rfs_report_exit).
 */
#ifndef RFS_REPORT_H
#define RFS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rfs/format.h"
#include "rfs/problem.h"

enum rfs_mode { RFS_MODE_CHECK, RFS_MODE_FIX, RFS_MODE_DRY_RUN };

struct rfs_problem_ctx {
	uint64_t block, block2;      /* RFS_NO_BLOCK when not applicable */
	int item, entry;             /* -1 when not applicable */
	bool has_key;
	struct rfs_key key;
	const char *path;            /* NUL-terminated bytes, or NULL */
	const uint8_t *name;         /* entry name bytes, or NULL */
	size_t name_len;
	uint64_t expected, found;
	const char *detail;
};

/* A context with every field "not applicable". */
struct rfs_problem_ctx rfs_problem_ctx_none(void);

struct rfs_reporter;

struct rfs_reporter_options {
	enum rfs_mode mode;
	bool json;                   /* collect records for one JSON object */
	FILE *text;                  /* human text (NULL = none) */
	int verbose;                 /* 0: first few per code; 1+: all */
	unsigned shown_per_code;     /* text lines per code when not verbose */
	uint64_t max_problems;       /* stop the run after this many (0 = no limit) */
	/* FIXABLE codes answered "no" even in fix mode and --dry-run because the
	 * option their repair needs was not given (fix's ORPHAN_OBJECT without
	 * --relink): PR_NONE-terminated, or NULL.  Text shows declined_note. */
	const enum rfs_problem_code *declined;
	const char *declined_note;
};

struct rfs_reporter *rfs_reporter_new(const struct rfs_reporter_options *opt);
void rfs_reporter_free(struct rfs_reporter *r);

/* Records a finding; true = the caller must fix it now (see invariant 2). */
bool problem_report(struct rfs_reporter *r, enum rfs_problem_code code,
		    const struct rfs_problem_ctx *ctx);
/* Marks the most recent not yet repaired "yes" answer for code as repaired. */
void problem_fixed(struct rfs_reporter *r, enum rfs_problem_code code);

/* true once max_problems was reached: passes should stop early. */
bool rfs_reporter_exhausted(const struct rfs_reporter *r);

/* Counters. */
uint64_t rfs_reporter_count(const struct rfs_reporter *r, enum rfs_problem_code code);
uint64_t rfs_reporter_total(const struct rfs_reporter *r, enum rfs_severity sev);
uint64_t rfs_reporter_fixed(const struct rfs_reporter *r);

/* Exit status from the counters: 0 nothing (info only), 1 all fixed, 4 any
 * unfixed REBUILD/FATAL, else 6 any unfixed FIXABLE. */
int rfs_report_exit(const struct rfs_reporter *r);

/* Expands a template for a context into buf (placeholders of problem.h). */
void rfs_problem_format(const struct rfs_problem_def *d, const char *tmpl,
			const struct rfs_problem_ctx *ctx, char *buf, size_t len);

/* The JSON array of problem records (borrowed; NULL when json is off). */
struct json_t;
struct json_t *rfs_reporter_json(const struct rfs_reporter *r);
/* Prints the per-code summary table to f. */
void rfs_reporter_summary(const struct rfs_reporter *r, FILE *f);

#endif

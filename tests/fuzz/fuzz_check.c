/*
 * fuzz_check.c - libFuzzer harness for `rfsck check` on a whole image
 * (src/cmd_check.c and every check pass: super, journal, tree, bitmap,
 * objectid map, semantic), and optionally `rfsck fix --dry-run`
 * (src/cmd_fix.c, the repair passes into the in-memory overlay).
 *
 * Input: the patch list of modes_common.h.  Option bits (byte 1):
 *   bit 0      the second check run is `-v` text instead of `-q`
 *   bits 1-2   --hash (none, tea, rupasov, r5) on every run
 *   bit 3      --max-problems 2 on both check runs
 *   bit 4      also run `fix --dry-run -q`
 *
 * Contracts (besides M1-M5 of modes_common.h, with the set {0, 4, 6, 8}):
 *  (C1) `check --json` and `check -q`/`-v` give the same exit status;
 *  (C2) with --json and exit 0/4/6, stdout is one JSON object whose "exit"
 *       is the status, "verdict" its name, and whose "problems" are objects
 *       with a known "code" and that code's "severity"; the status is the one
 *       the problems imply (4 if any needs-rebuild/fatal, else 6 if any
 *       fixable, else 0), so no problem is reported without counting or
 *       counted without being reported;
 *  (C3) with --json and exit 8, nothing is printed on stdout;
 *  (C4) `fix --dry-run` exits 8 or as a complete check did (0 -> 0, 4 -> 4,
 *       6 -> 6: a dry run leaves the fixable problems in place) and writes
 *       nothing;
 *  (C5) with --json and exit 0/4/6, "complete" is a boolean, false exactly
 *       when --max-problems 2 was given and 2 or more problems were
 *       reported (the passes stop at the budget; a verdict that covers only
 *       part of the image must say so: finding F12, where a cut-short check
 *       exited 6 "fixable" and fix --dry-run then 4).  After a check that
 *       stopped, fix --dry-run may only find worse: it exits 8, 4, or as
 *       the check did.
 * Known answer on the pristine template: check exits 6 (the committed
 * transaction, replayed in memory, is JOURNAL_PENDING, the one problem
 * there) and counts 6 objects: /, /d, /f, /l, /n, /d/t.
 */
#include "modes_common.h"

static const char *verdict_name(int rc)
{
	return rc == 0 ? "clean" : rc == 6 ? "fixable" : rc == 4 ? "needs-rebuild" : "error";
}

/* (C2), (C5): the JSON document of a check run that exited rc (0, 4 or 6);
 * returns its "complete". */
static bool check_json(const struct modes_run *r, json_t **stats)
{
	json_t *j = modes_json(r);
	CHECK(j != NULL);
	CHECK(json_integer_value(json_object_get(j, "exit")) == r->rc);
	const char *v = json_string_value(json_object_get(j, "verdict"));
	CHECK(v != NULL && strcmp(v, verdict_name(r->rc)) == 0);
	json_t *p = json_object_get(j, "problems");
	CHECK(json_is_array(p));
	bool rebuild = false, fixable = false;
	for (size_t i = 0; i < json_array_size(p); i++) {
		json_t *o = json_array_get(p, i);
		CHECK(json_is_object(o));
		const char *code = json_string_value(json_object_get(o, "code"));
		const char *sev = json_string_value(json_object_get(o, "severity"));
		CHECK(code != NULL && sev != NULL);
		enum rfs_problem_code pc = rfs_problem_by_name(code);
		const struct rfs_problem_def *d = rfs_problem_def(pc);
		CHECK(pc != PR_NONE && d != NULL);
		CHECK(strcmp(sev, rfs_severity_name(d->severity)) == 0);
		CHECK(json_is_false(json_object_get(o, "fixed")));
		CHECK(json_string_value(json_object_get(o, "message")) != NULL);
		rebuild |= d->severity >= RFS_SEV_REBUILD;
		fixable |= d->severity == RFS_SEV_FIXABLE;
	}
	CHECK(r->rc == (rebuild ? 4 : fixable ? 6 : 0));
	json_t *complete = json_object_get(j, "complete");
	CHECK(json_is_boolean(complete));
	bool stopped = (menv.flags & 8) && json_array_size(p) >= 2;        /* (C5) */
	CHECK(json_is_true(complete) == !stopped);
	if (stats)
		*stats = json_incref(json_object_get(j, "statistics"));
	json_decref(j);
	return !stopped;
}

/* Runs the commands above; returns the exit status of `check --json`. */
static int run_check(bool first, json_t **stats)
{
	static const int allowed[] = { 0, 4, 6, 8, -1 };
	const char *argv[10];
	int n = 0;
	argv[n++] = "check";
	argv[n++] = "--json";
	if (modes_hash_arg())
		argv[n++] = modes_hash_arg();
	if (menv.flags & 8)
		argv[n++] = "--max-problems=2";
	argv[n++] = menv.img_path;
	argv[n] = NULL;
	struct modes_run rj, rt;
	modes_call(cmd_check, argv, allowed, &rj);
	modes_check_unchanged();
	bool complete = true;
	if (rj.rc == RFS_EXIT_OPERATIONAL)
		CHECK(rj.out_len == 0);                        /* (C3) */
	else
		complete = check_json(&rj, stats);             /* (C2), (C5) */

	argv[1] = (menv.flags & 1) ? "-v" : "-q";
	modes_call(cmd_check, argv, allowed, &rt);
	modes_check_unchanged();
	CHECK(rt.rc == rj.rc);                                 /* (C1) */
	if (menv.flags & 0x10 || first) {
		static const int fix_allowed[] = { 0, 4, 6, 8, -1 };
		const char *fargv[6];
		int k = 0;
		fargv[k++] = "fix";
		fargv[k++] = "--dry-run";
		fargv[k++] = "-q";
		if (modes_hash_arg())
			fargv[k++] = modes_hash_arg();
		fargv[k++] = menv.img_path;
		fargv[k] = NULL;
		struct modes_run rf;
		modes_call(cmd_fix, fargv, fix_allowed, &rf);
		modes_check_unchanged();
		if (rf.rc != RFS_EXIT_OPERATIONAL && complete) /* (C4) */
			CHECK(rf.rc == rj.rc || rj.rc == RFS_EXIT_OPERATIONAL);
		else if (rf.rc != RFS_EXIT_OPERATIONAL)        /* what was found stays */
			CHECK(rf.rc == RFS_EXIT_NEEDS_REBUILD || rf.rc == rj.rc);
		modes_run_free(&rf);
	}
	int rc = rj.rc;
	modes_run_free(&rj);
	modes_run_free(&rt);
	return rc;
}

static void self_check(void)
{
	static const uint8_t pristine[6] = { 0, 0, 0, 0, 0, 0 };
	CHECK(modes_load(pristine, sizeof(pristine)));
	json_t *stats = NULL;
	int rc = run_check(true, &stats);
	if (rc != RFS_EXIT_FIXABLE)
		fprintf(stderr, "fuzz_check: template: check exit %d\n", rc);
	CHECK(rc == RFS_EXIT_FIXABLE);
	CHECK(stats != NULL);
	json_int_t objs = json_integer_value(json_object_get(stats, "directories")) +
			  json_integer_value(json_object_get(stats, "files")) +
			  json_integer_value(json_object_get(stats, "symlinks"));
	if (objs != 6)
		fprintf(stderr, "fuzz_check: template: %lld objects\n", (long long)objs);
	CHECK(objs == 6);     /* /, /d, /f, /l, /n, /d/t */
	json_decref(stats);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (menv.img_fd < 0) {
		modes_setup("fuzz_check");
		self_check();
	}
	if (!modes_load(data, size))
		return 0;
	run_check(false, NULL);
	return 0;
}

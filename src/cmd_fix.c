/*
 * cmd_fix.c - `rfsck fix`: repair what check marks fixable, nothing else.
 *
 * Steps: (1) a read-only check decides: nothing to do (exit 0), or problems
 * that need rebuild (repair nothing, exit 4); (2) confirmation (a terminal
 * prompt, or --yes; --dry-run needs none); (3) the check passes run again in
 * fix mode on the target: the image through its undo log (default
 * IMAGE.rfsck-undo), a sparse copy (--output), or the in-memory overlay
 * (--dry-run, which then lists every block it would write), then the repairs
 * that change the tree's shape (safe links; with --relink, orphans into
 * /lost+found: src/repair_tree.h); (4) a second read-only check of the result
 * sets the exit status: 1 when it is clean, else what is left (4 or 6).
 * Without --relink, ORPHAN_OBJECT is answered "no" (reported and left); when
 * nothing else is to be repaired, fix writes nothing and exits 6.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_common.h"
#include "repair_tree.h"
#include "rfs/hash.h"

enum { OPT_DRY_RUN = OPT_FIRST_COMMAND_OPTION, OPT_YES, OPT_UNDO, OPT_NO_UNDO, OPT_OUTPUT,
       OPT_RELINK };

struct fix_opts {
	struct rfs_common_opts co;
	bool dry_run, yes, no_undo, relink;
	const char *undo, *output;
};

/* Problems fix leaves unless an option asks for their repair. */
static const enum rfs_problem_code declined_without_relink[] = { PR_ORPHAN_OBJECT, PR_NONE };
static const char declined_note[] = "left: fix links orphans into /lost+found only with --relink";

/* Fixable problems of a check that this run would repair. */
static uint64_t repairable(const struct rfs_reporter *rep, const struct fix_opts *o)
{
	uint64_t n = 0;
	unsigned count;
	const struct rfs_problem_def *t = rfs_problem_table(&count);
	for (unsigned i = 1; i < count; i++)
		if (t[i].severity == RFS_SEV_FIXABLE && !t[i].fix_pending &&
		    !(t[i].code == PR_ORPHAN_OBJECT && !o->relink))
			n += rfs_reporter_count(rep, t[i].code);
	return n;
}

/* check_run_mode with fix's reporter options: the passes in fix mode (or dry
 * run) on fs, then the tree-shape repairs. */
static rfs_status run_repairs(struct rfs_fs *fs, const struct fix_opts *o, FILE *text,
			      struct rfs_check *c, struct rfs_error *err)
{
	struct rfs_reporter_options ro = {
		.mode = o->dry_run ? RFS_MODE_DRY_RUN : RFS_MODE_FIX, .json = o->co.json,
		.text = text, .verbose = o->co.verbose,
		.declined = o->relink ? NULL : declined_without_relink,
		.declined_note = declined_note };
	rfs_status st = check_run_with(fs, &ro, c, err);
	if (st)
		return st;
	struct repair_tree_opts to = { .relink = o->relink, .dry_run = o->dry_run, .text = text };
	return repair_tree_run(c, &to, err);
}

/* A read-only check of path; returns the check exit status, or 8. */
static int verify(const char *path, const struct rfs_common_opts *co, struct rfs_check *c,
		  struct rfs_error *err)
{
	struct rfs_fs *fs;
	memset(c, 0, sizeof(*c));
	if (cli_open_readonly(path, co, true, check_collect_sb_fault, c, &fs, err))
		return RFS_EXIT_OPERATIONAL;
	int rc = check_run_mode(fs, RFS_MODE_CHECK, NULL, true, 0, c, err) ? RFS_EXIT_OPERATIONAL
									 : rfs_report_exit(c->rep);
	struct rfs_error e;
	rfs_error_clear(&e);
	rfs_fs_close(fs, &e);
	c->fs = NULL;
	return rc;
}

static bool confirm(const char *image, const struct fix_opts *o)
{
	if (o->yes || o->dry_run)
		return true;
	if (!isatty(STDIN_FILENO)) {
		fprintf(stderr, "rfsck fix: not confirmed: use --yes to repair %s, or --dry-run to "
				"see the repairs\n", image);
		return false;
	}
	fprintf(stderr, "Repair %s%s%s? [y/N] ", o->output ? "a copy of " : "", image,
		o->output ? "" : " in place (with an undo log)");
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

static int parse(int argc, char **argv, struct fix_opts *o)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "yes", no_argument, NULL, OPT_YES },
		{ "undo", required_argument, NULL, OPT_UNDO },
		{ "no-undo", no_argument, NULL, OPT_NO_UNDO },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "relink", no_argument, NULL, OPT_RELINK },
		{ NULL, 0, NULL, 0 } };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qvyn", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP: cli_print_command_help("fix", stdout); return -1;
		case OPT_DRY_RUN: case 'n': o->dry_run = true; continue;
		case OPT_YES: case 'y': o->yes = true; continue;
		case OPT_UNDO: o->undo = optarg; continue;
		case OPT_NO_UNDO: o->no_undo = true; continue;
		case OPT_OUTPUT: o->output = optarg; continue;
		case OPT_RELINK: o->relink = true; continue;
		}
		int k = cli_common_option("fix", opt, optarg, &o->co);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("fix", "unknown option");
	}
	if (argc - optind != 1)
		return cli_usage_error("fix", "expects one IMAGE");
	if (o->dry_run && (o->yes || o->output || o->undo || o->no_undo))
		return cli_usage_error("fix", "--dry-run writes nothing: it takes none of --yes, "
					      "--output, --undo, --no-undo");
	if (o->undo && (o->no_undo || o->output))
		return cli_usage_error("fix", "--undo goes with neither --no-undo nor --output");
	return 0;
}

int cmd_fix(int argc, char **argv)
{
	struct fix_opts o = { 0 };
	int prc = parse(argc, argv, &o);
	if (prc)
		return prc < 0 ? RFS_EXIT_OK : prc;
	const char *image = argv[optind];
	bool text = !o.co.json && !o.co.quiet;
	struct rfs_error err;
	rfs_error_clear(&err);
	struct rfs_check pre;

	/* (1) decide */
	int rc = verify(image, &o.co, &pre, &err);
	if (rc == RFS_EXIT_OPERATIONAL) {
		check_release(&pre);
		return cli_fail("fix", &err);
	}
	if (rc == RFS_EXIT_OK || rc == RFS_EXIT_NEEDS_REBUILD) {
		if (o.co.json) {
			json_t *j = json_pack("{s:s, s:s, s:i, s:O}", "image", image, "result",
					      rc ? "needs-rebuild: nothing repaired" : "clean: nothing to repair",
					      "exit", rc, "problems", rfs_reporter_json(pre.rep));
			cli_json_print(j);
		} else if (text) {
			printf("%s: %s\n", image, rc ? "problems that only `rfsck rebuild` can repair; "
						       "fix repairs nothing" : "no problems; nothing to repair");
			if (rc)
				rfs_reporter_summary(pre.rep, stdout);
		}
		check_release(&pre);
		return rc;
	}
	if (repairable(pre.rep, &o) == 0) {
		/* only problems this run leaves: orphans without --relink, or
		 * fixable ones whose repair this version lacks */
		const char *why = !o.relink && rfs_reporter_count(pre.rep, PR_ORPHAN_OBJECT)
			? "objects no name reaches are linked into /lost+found only with --relink"
			: "this version repairs none of the problems found";
		if (o.co.json) {
			json_t *j = json_pack("{s:s, s:s, s:i, s:O}", "image", image, "result", why,
					      "exit", rc, "problems", rfs_reporter_json(pre.rep));
			cli_json_print(j);
		} else if (text) {
			printf("%s: nothing repaired: %s\n", image, why);
			rfs_reporter_summary(pre.rep, stdout);
		}
		check_release(&pre);
		return rc;
	}
	check_release(&pre);

	/* (2) confirm */
	if (!confirm(image, &o))
		return RFS_EXIT_FIXABLE;

	/* (3) repair */
	const char *target = image;
	char undo_default[4096];
	struct rfs_fs_options fo = { .replay = true, .hash_override = (unsigned)o.co.hash_code,
				     .sb_fault = check_collect_sb_fault };
	fo.dev.offset = o.co.offset;
	fo.dev.mapfile = o.co.mapfile;
	if (o.dry_run) {
		fo.dev.flags = RFS_DEV_DRY_RUN;
	} else if (o.output) {
		if (cli_copy_sparse(image, o.output, NULL, &err))
			return cli_fail("fix", &err);
		target = o.output;
		fo.dev.flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO;
	} else if (o.no_undo) {
		fo.dev.flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO;
	} else {
		if (!o.undo) {
			snprintf(undo_default, sizeof(undo_default), "%s.rfsck-undo", image);
			o.undo = undo_default;
		}
		fo.dev.flags = RFS_DEV_WRITE;
		fo.dev.undo_path = o.undo;
	}
	fo.dev.path = target;
#ifdef RFS_TEST_BUILD
	/* Test builds only: simulate a crash after N writes (tests/integration). */
	const char *hook = getenv("RFSCK_TEST_STOP_AFTER_WRITE");
	if (hook)
		fo.dev.stop_after_write_nth = strtoull(hook, NULL, 10);
#endif
	struct rfs_check c;
	memset(&c, 0, sizeof(c));
	fo.sb_fault_ctx = &c;
	struct rfs_fs *fs;
	if (rfs_fs_open(&fo, &fs, &err))
		return cli_fail("fix", &err);
	rfs_progress_init(&c.progress, o.co.progress != 0, o.co.quiet || o.co.json);
	if (text)
		printf("%s %s%s\n", o.dry_run ? "Dry run on" : "Repairing", target,
		       o.undo ? " (undo log: " : "");
	if (text && o.undo)
		printf("  %s)\n", o.undo);
	rfs_status st = cli_set_identity(fs, &err);
	if (!st)
		st = run_repairs(fs, &o, text ? stdout : NULL, &c, &err);
	/* Blocks written by the repairs (into the overlay for --dry-run, where the
	 * journal's replayed blocks count only when the repair flushes them). */
	uint64_t *blocks = NULL;
	size_t nblocks = 0;
	if (!st && u64set_sorted(&c.written, &blocks, &nblocks))
		st = rfs_error_set(&err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "list of written blocks");
	json_t *fixes = c.rep ? json_incref(rfs_reporter_json(c.rep)) : NULL;
	uint64_t nfixed = c.rep ? rfs_reporter_fixed(c.rep) : 0;
	uint64_t nwrites = c.blocks_written;
	check_release(&c);
	struct rfs_error cerr;
	rfs_error_clear(&cerr);
	rfs_status cst = rfs_fs_close(fs, &cerr);
	if (st || cst) {
		free(blocks);
		json_decref(fixes);
		return cli_fail("fix", st ? &err : &cerr);
	}

	/* (4) verify */
	if (o.dry_run) {
		rc = RFS_EXIT_FIXABLE;
	} else {
		struct rfs_check post;
		rc = verify(target, &o.co, &post, &err);
		if (rc == RFS_EXIT_OK)
			rc = RFS_EXIT_CORRECTED;
		else if (text && rc != RFS_EXIT_OPERATIONAL) {
			printf("left after repair:\n");
			rfs_reporter_summary(post.rep, stdout);
		}
		check_release(&post);
		if (rc == RFS_EXIT_OPERATIONAL) {
			free(blocks);
			json_decref(fixes);
			return cli_fail("fix", &err);
		}
	}
	if (o.co.json) {
		json_t *wb = json_array();
		for (size_t i = 0; i < nblocks; i++)
			json_array_append_new(wb, json_integer((json_int_t)blocks[i]));
		json_t *j = json_pack("{s:s, s:s, s:b, s:i, s:I, s:o, s:o}", "image", image,
				      "target", target, "dry_run", o.dry_run, "exit", rc,
				      "repairs", (json_int_t)nfixed, "problems", fixes ? fixes : json_array(),
				      "blocks_written", wb);
		json_object_set_new(j, "writes", json_integer((json_int_t)nwrites));
		if (o.undo)
			json_object_set_new(j, "undo", json_string(o.undo));
		cli_json_print(j);
	} else {
		json_decref(fixes);
		if (text && o.dry_run) {
			printf("would write %zu block(s):", nblocks);
			for (size_t i = 0; i < nblocks; i++)
				printf("%s%llu", i % 12 ? " " : "\n  ", (unsigned long long)blocks[i]);
			printf("\n");
		} else if (text) {
			printf("wrote %zu block(s)\n", nblocks);
			printf("%s: %s\n", target, rc == RFS_EXIT_CORRECTED
				       ? "repaired; a new check finds no problems" : "problems remain");
		}
	}
	free(blocks);
	return rc;
}

/*
 * cmd_check.c - `rfsck check`: the read-only consistency check.
 *
 * Opens the image O_RDONLY, replays committed journal transactions into the
 * in-memory overlay (so the check sees what the kernel would mount), runs the
 * passes of src/check.c, and derives the exit status from the problems found:
 * 0 clean, 6 only fixable problems, 4 problems that need rebuild, 8 when the
 * image cannot be checked at all.
 *
 * --max-problems N stops the passes once N problems were reported (a budget
 * for badly damaged images).  The exit status then covers only what was
 * checked before the stop, so a run that stopped says so ("complete": false
 * in JSON, a line in the text): without it, a 6 from a cut-short run reads
 * as "fix repairs everything" when an unchecked part may need a rebuild
 * (docs/robustness.md, finding F12).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_common.h"
#include "rfs/hash.h"

enum { OPT_MAX_PROBLEMS = OPT_FIRST_COMMAND_OPTION };

static const char *verdict_of(int rc)
{
	switch (rc) {
	case 0: return "clean";
	case 6: return "fixable";
	case 4: return "needs-rebuild";
	default: return "error";
	}
}

static json_t *stats_json(const struct rfs_check *c)
{
	const struct rfs_check_stats *s = &c->stats;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "leaves", (json_int_t)s->leaves, "internal_nodes", (json_int_t)s->internal_nodes,
			 "items", (json_int_t)s->items, "directories", (json_int_t)s->directories,
			 "files", (json_int_t)s->files, "symlinks", (json_int_t)s->symlinks,
			 "other_objects", (json_int_t)s->others,
			 "data_pointers", (json_int_t)s->data_pointers,
			 "zero_pointers", (json_int_t)s->zero_pointers,
			 "safe_links", (json_int_t)s->safe_links, "names", (json_int_t)s->names,
			 "blocks_in_use", (json_int_t)s->blocks_claimed,
			 "subtrees_skipped", (json_int_t)c->bad_nodes);
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "max-problems", required_argument, NULL, OPT_MAX_PROBLEMS },
		{ NULL, 0, NULL, 0 } };
	struct rfs_common_opts co = { 0 };
	uint64_t max_problems = 0;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qv", longopts, NULL)) != -1) {
		if (opt == OPT_HELP) {
			cli_print_command_help("check", stdout);
			return RFS_EXIT_OK;
		}
		if (opt == OPT_MAX_PROBLEMS) {
			if (cli_parse_bytes(optarg, &max_problems))
				return cli_usage_error("check", "--max-problems takes a number");
			continue;
		}
		int k = cli_common_option("check", opt, optarg, &co);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("check", "unknown option");
	}
	if (argc - optind != 1)
		return cli_usage_error("check", "expects one IMAGE");
	const char *image = argv[optind];

	struct rfs_check c;
	memset(&c, 0, sizeof(c));
	struct rfs_reporter_options ro = {
		.mode = RFS_MODE_CHECK, .json = co.json != 0,
		.text = co.json || co.quiet ? NULL : stdout, .verbose = co.verbose,
		.max_problems = max_problems,
	};
	struct rfs_error err;
	rfs_error_clear(&err);
	c.rep = rfs_reporter_new(&ro);
	if (!c.rep) {
		rfs_error_set(&err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "reporter");
		return cli_fail("check", &err);
	}
	rfs_progress_init(&c.progress, co.progress != 0, co.quiet || co.json);
	int rc;
	if (cli_open_readonly(image, &co, true, check_collect_sb_fault, &c, &c.fs, &err)) {
		rc = cli_fail("check", &err);
		goto out;
	}
	struct rfs_error hash_err;
	rfs_error_clear(&hash_err);
	c.hash_trusted = c.fs->hash_code != 0 && rfs_hash_selftest(&hash_err) == RFS_OK;
	if (!co.json && !co.quiet)
		printf("Checking %s: ReiserFS %s, %u blocks of %u bytes, hash %s%s\n", image,
		       c.fs->sb.format == RFS_FORMAT_35 ? "3.5" : "3.6", c.fs->sb.block_count,
		       c.fs->bs, rfs_hash_name(c.fs->hash_code ? c.fs->hash_code : c.fs->sb.hash_code),
		       c.fs->journal.replayed ? " (journal replayed in memory)" : "");
	if (rfs_check_run(&c, &err)) {
		rc = cli_fail("check", &err);
		goto out;
	}
	rc = rfs_report_exit(c.rep);
	/* The passes test the same predicate to stop early. */
	bool stopped = rfs_reporter_exhausted(c.rep);
	if (co.json) {
		json_t *o = json_object();
		json_object_set_new(o, "image", json_string(image));
		json_object_set_new(o, "verdict", json_string(verdict_of(rc)));
		json_object_set_new(o, "exit", json_integer(rc));
		json_object_set_new(o, "journal_replayed_in_memory", json_integer(c.fs->journal.replayed));
		json_object_set_new(o, "namespace_checked", json_boolean(!c.skipped_semantic));
		json_object_set_new(o, "complete", json_boolean(!stopped));
		json_object_set_new(o, "statistics", stats_json(&c));
		json_object_set_new(o, "problems", json_incref(rfs_reporter_json(c.rep)));
		if (cli_json_print(o))
			rc = RFS_EXIT_OPERATIONAL;
	} else if (!co.quiet) {
		const struct rfs_check_stats *s = &c.stats;
		printf("\n%s: %s\n", image, rc == 0 ? "no problems found"
			 : rc == 6 ? "problems found that `rfsck fix` repairs"
				   : "problems found that need `rfsck rebuild`");
		if (stopped)
			printf("  (stopped at --max-problems %llu: the rest was not checked, so a full\n"
			       "   check may find more, including problems that need rebuild)\n",
			       (unsigned long long)max_problems);
		if (c.skipped_semantic)
			printf("  (namespace not checked: %llu damaged subtree(s) were skipped)\n",
			       (unsigned long long)c.bad_nodes);
		printf("  leaves %llu, internal nodes %llu, directories %llu, files %llu, symlinks %llu, other %llu\n",
		       (unsigned long long)s->leaves, (unsigned long long)s->internal_nodes,
		       (unsigned long long)s->directories, (unsigned long long)s->files,
		       (unsigned long long)s->symlinks, (unsigned long long)s->others);
		printf("  data block pointers %llu (%llu zero), safe links %llu, blocks in use %llu\n",
		       (unsigned long long)s->data_pointers, (unsigned long long)s->zero_pointers,
		       (unsigned long long)s->safe_links, (unsigned long long)s->blocks_claimed);
		if (rfs_reporter_total(c.rep, RFS_SEV_INFO) + rfs_reporter_total(c.rep, RFS_SEV_FIXABLE) +
		    rfs_reporter_total(c.rep, RFS_SEV_REBUILD) + rfs_reporter_total(c.rep, RFS_SEV_FATAL)) {
			printf("  problems by code:\n");
			rfs_reporter_summary(c.rep, stdout);
		}
	}
out:
	rfs_objtab_free(&c.objects);
	rfs_bitmap_free(&c.claimed);
	rfs_reporter_free(c.rep);
	if (c.fs) {
		rfs_error_clear(&err);
		rfs_fs_close(c.fs, &err);
	}
	return rc;
}

/*
 * cmd_rebuild.c - `rfsck rebuild`: rebuild the tree from the leaves found on
 * the device, on evidence recorded in an SQLite index (see rebuild/rebuild.h
 * for the stages and docs/rebuild.md for the rules).
 *
 * Steps: (1) confirmation (a terminal prompt or --yes; --dry-run needs none);
 * (2) open the target: the image through its undo log (default
 * IMAGE.rfsck-undo), a sparse copy (--output), or the in-memory overlay
 * (--dry-run); the journal is replayed in memory; (3) scan, nested, select,
 * namespace: reads only; (4) journal flush, tree emission, superblock; (5)
 * check's repair passes compute bitmaps, counts and maps from the new tree;
 * (6) a check of the result, the report, and the exit status: 1 rebuilt and
 * clean, 0 for a dry run whose report was produced, 8 on an operational error.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../rebuild/rebuild.h"
#include "check.h"
#include "cli_common.h"
#include "rfs/sha256.h"

enum { OPT_DRY_RUN = OPT_FIRST_COMMAND_OPTION, OPT_YES, OPT_UNDO, OPT_NO_UNDO, OPT_OUTPUT,
       OPT_INDEX, OPT_SCAN, OPT_REPORT };

struct rebuild_opts {
	struct rfs_common_opts co;
	bool dry_run, yes, no_undo;
	const char *undo, *output, *index, *report;
	enum rb_scan_mode scan;
};

static int parse(int argc, char **argv, struct rebuild_opts *o)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "yes", no_argument, NULL, OPT_YES },
		{ "undo", required_argument, NULL, OPT_UNDO },
		{ "no-undo", no_argument, NULL, OPT_NO_UNDO },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "index", required_argument, NULL, OPT_INDEX },
		{ "scan", required_argument, NULL, OPT_SCAN },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ NULL, 0, NULL, 0 } };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qvyn", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP: cli_print_command_help("rebuild", stdout); return -1;
		case OPT_DRY_RUN: case 'n': o->dry_run = true; continue;
		case OPT_YES: case 'y': o->yes = true; continue;
		case OPT_UNDO: o->undo = optarg; continue;
		case OPT_NO_UNDO: o->no_undo = true; continue;
		case OPT_OUTPUT: o->output = optarg; continue;
		case OPT_INDEX: o->index = optarg; continue;
		case OPT_REPORT: o->report = optarg; continue;
		case OPT_SCAN:
			if (strcmp(optarg, "used") == 0)
				o->scan = RB_SCAN_USED;
			else if (strcmp(optarg, "all") == 0)
				o->scan = RB_SCAN_ALL;
			else
				return cli_usage_error("rebuild", "--scan takes used or all");
			continue;
		}
		int k = cli_common_option("rebuild", opt, optarg, &o->co);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("rebuild", "unknown option");
	}
	if (argc - optind != 1)
		return cli_usage_error("rebuild", "expects one IMAGE");
	if (o->dry_run && (o->yes || o->output || o->undo || o->no_undo))
		return cli_usage_error("rebuild", "--dry-run writes nothing: it takes none of --yes, "
						  "--output, --undo, --no-undo");
	if (o->undo && (o->no_undo || o->output))
		return cli_usage_error("rebuild", "--undo goes with neither --no-undo nor --output");
	return 0;
}

/* Re-reads the superblock through the device after the repair passes. */
static rfs_status reload_super(struct rfs_fs *fs, struct rfs_error *err)
{
	uint8_t *buf = malloc(fs->bs);
	if (!buf)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "superblock");
	rfs_status st = rfs_dev_read_block(fs->dev, fs->sb.sb_block, buf, err);
	if (!st) {
		size_t at = (size_t)(fs->sb.sb_byte_offset - (uint64_t)fs->sb.sb_block * fs->bs);
		struct rfs_super sb;
		st = rfs_super_decode(buf + at, fs->bs - at, fs->sb.sb_byte_offset, &sb, err);
		if (!st)
			fs->sb = sb;
	}
	free(buf);
	return st;
}

static rfs_status written_digest(struct rfs_dev *dev, struct rb_run_result *r,
				 struct rfs_error *err)
{
	uint64_t *blocks;
	size_t n;
	rfs_status st = rfs_dev_written_blocks(dev, &blocks, &n, err);
	if (st)
		return st;
	struct rfs_sha256 h;
	rfs_sha256_init(&h);
	for (size_t i = 0; i < n; i++) {
		char line[32];
		int k = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)blocks[i]);
		rfs_sha256_update(&h, line, (size_t)k);
	}
	uint8_t d[RFS_SHA256_LEN];
	rfs_sha256_final(&h, d);
	rfs_sha256_hex(d, r->written_sha256);
	r->blocks_written = n;
	free(blocks);
	return RFS_OK;
}

/* --output: the copy is made on a thread of its own while scan and decide
 * read the source image (opened read-only, its journal replayed in memory);
 * the write stages then open the finished copy and go on from there.  On
 * bench-32g the copy writes 8.4 GiB, and decide is SQLite on one core: the
 * two overlap instead of following each other. */
struct output_target {
	struct cli_copy_job *copy;   /* running; NULL when finished or not used */
	bool cloned;                 /* the finished copy is a reflink of the source */
	struct rfs_fs_options fo;    /* how to open the copy for writing */
};

/* Waits for the copy, opens it, and moves c (and the rest of the run) onto
 * it; the source is closed.  On failure c still reads the source. */
static rfs_status open_output(struct rb_ctx *c, struct output_target *t, struct rfs_error *err)
{
	struct cli_copy_job *job = t->copy;
	t->copy = NULL;
	struct rfs_fs *copy = NULL, *source = c->fs;
	rfs_status st = cli_copy_finish(job, false, &t->cloned, err);
	if (!st)
		st = rfs_fs_open(&t->fo, &copy, err);
	if (!st) {
		rfs_dev_track_writes(copy->dev);
		st = cli_set_identity(copy, err);
	}
	if (!st)
		st = rb_retarget(c, copy, err);
	struct rfs_error ce;
	rfs_error_clear(&ce);
	if (st) {
		if (copy)
			rfs_fs_close(copy, &ce);
		return st;
	}
	rfs_fs_close(source, &ce);   /* opened read-only: its close cannot lose anything */
	return RFS_OK;
}

/* The superblock's own faults, which `rfsck check` collects while opening
 * the image: the checks of the result see the superblock rebuild left, so
 * they judge it as `rfsck check` would, and the repair pass fixes what fix
 * would. */
static void collect_super_faults(struct rfs_fs *fs, struct rfs_check *c)
{
	(void)rfs_super_check(&fs->sb, rfs_dev_size(fs->dev) / fs->bs, check_collect_sb_fault, c);
}

/* (3)..(6) on an opened filesystem; with t, the decisions are made on the
 * source and the writes go to the copy that t makes. */
static rfs_status run(struct rb_ctx *c, const struct rebuild_opts *o, struct output_target *t,
		      struct rb_run_result *r, char *check_after, size_t check_len, int *final_exit,
		      struct rfs_error *err)
{
	rfs_status st = rb_decide(c, o->index, err);
	if (!st && t && t->copy)
		st = open_output(c, t, err);
	if (st)
		return st;
	/* Nothing was written so far.  From here on the target changes. */
	if (!o->dry_run && !c->opt.quiet)
		fprintf(stderr, "rfsck rebuild: writing the new tree\n");
	if ((st = rb_build(c, err)))
		return st;
	double t0 = rb_now();
	st = rb_write_bitmaps(c, err);
	c->t_step[RB_STEP_BITMAPS] = rb_now() - t0;
	if (st)
		return st;
	/* The check passes build their own per-object table: give back what
	 * the index's page cache and the build's freed buffers still hold, so
	 * the peak is the larger of the two phases, not their sum. */
	sqlite3_db_release_memory(rfs_index_db(c->ix));
	rb_release_sets(c);
	malloc_trim(0);
	t0 = rb_now();
	struct rfs_check fc;
	memset(&fc, 0, sizeof(fc));
	collect_super_faults(c->fs, &fc);
	st = check_run_mode(c->fs, o->dry_run ? RFS_MODE_DRY_RUN : RFS_MODE_FIX, NULL, true, 0, &fc,
			    err);
	/* A first pass that found nothing (info aside) wrote nothing either: a
	 * second one would read the same image to the same verdict. */
	bool nothing_found = !st && rfs_report_exit(fc.rep) == RFS_EXIT_OK &&
			     rfs_reporter_fixed(fc.rep) == 0;
	if (!st)
		r->repairs = rfs_reporter_fixed(fc.rep);
	check_release(&fc);
	if (!st)
		st = reload_super(c->fs, err);
	/* the journal was flushed and its header repaired: look again */
	if (!st)
		st = rfs_journal_analyse(c->fs, false, err);
	if (!st)
		st = written_digest(c->dev, r, err);
	c->t_check = rb_now() - t0;
	if (st)
		return st;
	if (nothing_found) {
		*final_exit = RFS_EXIT_OK;
		snprintf(check_after, check_len, "clean");
		return RFS_OK;
	}
	struct rfs_check vc;
	memset(&vc, 0, sizeof(vc));
	collect_super_faults(c->fs, &vc);
	st = check_run_mode(c->fs, RFS_MODE_CHECK, NULL, true, 0, &vc, err);
	if (!st) {
		*final_exit = rfs_report_exit(vc.rep);
		if (*final_exit == RFS_EXIT_OK) {
			snprintf(check_after, check_len, "clean");
		} else {
			json_t *p = rfs_reporter_json(vc.rep);
			size_t np = json_array_size(p);
			int k = snprintf(check_after, check_len, "exit %d, %zu problem(s):", *final_exit, np);
			for (size_t i = 0; i < np && i < 6 && k > 0 && (size_t)k < check_len; i++) {
				const char *code = json_string_value(json_object_get(json_array_get(p, i), "code"));
				k += snprintf(check_after + k, check_len - (size_t)k, " %s", code ? code : "?");
			}
		}
	}
	check_release(&vc);
	c->t_check = rb_now() - t0;
	return st;
}

int cmd_rebuild(int argc, char **argv)
{
	/* A fixed mmap threshold: glibc otherwise raises it to the largest
	 * block freed so far (the scan's 1 MiB read buffers, its row arenas),
	 * after which later large buffers live in the heap and are kept when
	 * freed: +10 MiB through the decide phase of a bench-4g dry run.  Only
	 * here: salvage frees and reallocates large file buffers all the time,
	 * and the rising threshold is what keeps those off mmap. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	struct rebuild_opts o = { .scan = RB_SCAN_AUTO };
	int prc = parse(argc, argv, &o);
	if (prc)
		return prc < 0 ? RFS_EXIT_OK : prc;
	const char *image = argv[optind];
	struct rfs_error err;
	rfs_error_clear(&err);

	/* (1) confirm */
	char question[4200];
	char undo_default[4096];
	if (!o.dry_run && !o.output && !o.no_undo && !o.undo) {
		snprintf(undo_default, sizeof(undo_default), "%s.rfsck-undo", image);
		o.undo = undo_default;
	}
	if (o.output)
		snprintf(question, sizeof(question), "Write a rebuilt copy of %s to %s?", image, o.output);
	else
		snprintf(question, sizeof(question), "Rebuild the tree of %s in place%s%s%s?", image,
			 o.undo ? " (undo log " : " WITHOUT an undo log", o.undo ? o.undo : "",
			 o.undo ? ")" : "");
	if (!o.dry_run && !cli_confirm("rebuild", question, o.yes))
		return RFS_EXIT_CANCELLED;

	/* (2) open */
	struct rfs_fs_options fo = { .replay = true, .hash_override = (unsigned)o.co.hash_code };
	fo.dev.offset = o.co.offset;
	fo.dev.mapfile = o.co.mapfile;
	const char *target = image;
	struct output_target ot = { .copy = NULL };
	struct rfs_error ce;   /* errors of clean-up steps, not the run's */
	rfs_error_clear(&ce);
	if (o.dry_run) {
		fo.dev.flags = RFS_DEV_DRY_RUN;
	} else if (o.output) {
		target = o.output;
		fo.dev.flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO;
	} else if (o.no_undo) {
		fo.dev.flags = RFS_DEV_WRITE | RFS_DEV_NO_UNDO;
	} else {
		fo.dev.flags = RFS_DEV_WRITE;
		fo.dev.undo_path = o.undo;
	}
	fo.dev.path = target;
#ifdef RFS_TEST_BUILD
	const char *hook = getenv("RFSCK_TEST_STOP_AFTER_WRITE");
	if (hook)
		fo.dev.stop_after_write_nth = strtoull(hook, NULL, 10);
#endif
	struct rfs_fs *fs;
	if (o.output) {
		/* the copy starts; the source is read, never written, meanwhile */
		ot.fo = fo;
		if (cli_copy_start(image, o.output, &ot.copy, &err))
			return cli_fail("rebuild", &err);
		fo.dev.path = image;
		fo.dev.flags = RFS_DEV_DRY_RUN;
		fo.dev.stop_after_write_nth = 0;
	}
	if (rfs_fs_open(&fo, &fs, &err)) {
		if (o.output) {
			cli_copy_finish(ot.copy, true, NULL, &ce);
			unlink(o.output);
		}
		return cli_fail("rebuild", &err);
	}
	uint64_t data_blocks = 0;
	if (o.output && rfs_dev_block_count(fs->dev) < fs->sb.block_count &&
	    rfs_dev_block_count(fs->dev) >= fs->sb.block_count / 4) {
		/* A truncated image: the copy gets its full length (zeros, sparse)
		 * so the rebuilt volume is whole; what lay beyond the end is lost
		 * and every pointer there counts as missing data.  A block count
		 * more than four times the image is no truncation but a damaged
		 * field: nothing is extended (a fuzzed 2^32 would ask for 16 TiB).
		 * The whole run then works on the extended copy, which it waits
		 * for here: its scan must see the full length. */
		data_blocks = rfs_dev_block_count(fs->dev);
		uint64_t want = o.co.offset + (uint64_t)fs->sb.block_count * fs->bs;
		rfs_fs_close(fs, &ce);
		struct cli_copy_job *job = ot.copy;
		ot.copy = NULL;
		if (cli_copy_finish(job, false, &ot.cloned, &err)) {
			unlink(o.output);
			return cli_fail("rebuild", &err);
		}
		if (truncate(o.output, (off_t)want) != 0) {
			rfs_error_sys(&err, errno, RFS_NO_BLOCK, "extending %s", o.output);
			unlink(o.output);
			return cli_fail("rebuild", &err);
		}
		if (rfs_fs_open(&ot.fo, &fs, &err)) {
			unlink(o.output);
			return cli_fail("rebuild", &err);
		}
	}
	/* the copy, while it is being made, is opened later (open_output) */
	if (!ot.copy)
		rfs_dev_track_writes(fs->dev);
	struct rb_options ro = { .dry_run = o.dry_run, .scan = o.scan, .quiet = o.co.quiet || o.co.json,
				 .progress_force = o.co.progress != 0,
				 .hash_override = (unsigned)o.co.hash_code, .data_blocks = data_blocks };
	struct rb_ctx c;
	rb_init(&c, fs, &ro);
	struct rb_run_result r = { .undo = o.dry_run || o.output ? NULL : o.undo };
	char check_after[512] = "not run";
	int final_exit = RFS_EXIT_OPERATIONAL;
	rfs_status st = o.dry_run || ot.copy ? RFS_OK : cli_set_identity(fs, &err);
	if (!st)
		st = run(&c, &o, ot.copy ? &ot : NULL, &r, check_after, sizeof(check_after),
			 &final_exit, &err);
	r.check_after = check_after;
	json_t *rep = NULL;
	if (!st)
		rep = rb_report_json(&c, &r);
	if (rep && o.output)
		json_object_set_new(rep, "output_copy", json_string(ot.cloned ? "reflink" : "sparse"));
	fs = c.fs;   /* the copy, once open_output moved the run onto it */
	rb_release(&c);
	cli_copy_finish(ot.copy, true, NULL, &ce);   /* still running only when the run failed */
	struct rfs_dev_stats ds;
	rfs_dev_get_stats(fs->dev, &ds);
	struct rfs_error cerr;
	rfs_error_clear(&cerr);
	rfs_status cst = rfs_fs_close(fs, &cerr);
	if (st || cst) {
		json_decref(rep);
		if (o.output)
			unlink(o.output);   /* a half-built copy is worth nothing */
		/* Say what the user is left with: the refusals before the build
		 * (no room for the bitmaps, say) leave the image as it was. */
		if (o.output && st)
			fprintf(stderr, "rfsck rebuild: stopped; %s was deleted, the source is "
				"unchanged\n", o.output);
		else if (!o.dry_run && st && ds.writes_started == 0)
			fprintf(stderr, "rfsck rebuild: stopped before the first write; the image "
				"is unchanged\n");
		else if (!o.dry_run && st)
			fprintf(stderr, "rfsck rebuild: stopped%s; %s\n",
				o.undo ? "" : " (no undo log)",
				o.undo ? "`rfsck undo` restores the original, or run rebuild again"
				       : "run rebuild again");
		return cli_fail("rebuild", st ? &err : &cerr);
	}
	if (o.report) {
		FILE *f = fopen(o.report, "w");
		if (!f) {
			json_decref(rep);
			rfs_error_sys(&err, errno, RFS_NO_BLOCK, "writing the report %s", o.report);
			return cli_fail("rebuild", &err);
		}
		rb_report_text(f, rep);
		fclose(f);
	}
	if (o.co.json) {
		json_object_set_new(rep, "image", json_string(image));
		json_object_set_new(rep, "target", json_string(o.dry_run ? image : target));
		cli_json_print(json_incref(rep));
	} else if (!o.co.quiet) {
		rb_report_text(stdout, rep);
	}
	json_decref(rep);
	if (o.dry_run)
		return RFS_EXIT_OK;
	return final_exit == RFS_EXIT_OK ? RFS_EXIT_CORRECTED : final_exit;
}

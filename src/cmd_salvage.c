/*
 * cmd_salvage.c - `rfsck salvage IMAGE OUTDIR`: copy every object out of an
 * image into OUTDIR, never writing to the image.
 *
 * Order of work, each step a precondition of the next:
 *  1. SHA-256 known-answer test (the digests below must be right);
 *  2. OUTDIR created if missing, opened O_DIRECTORY|O_NOFOLLOW, refused when
 *     not empty unless --force (exit 16);
 *  3. digest of the whole image file before anything else reads it;
 *  4. the image opened read-only, the journal replayed in memory only
 *     (cli_open_readonly with replay); a read-only check decides whether the
 *     tree can be walked: when it has damaged nodes (or --scan or --index is
 *     given) the image is opened again with a dry-run overlay and rebuild's
 *     stages build a new tree from the scanned leaves in memory only
 *     (rebuild/pipeline.c; --index shares the evidence index with
 *     `rfsck rebuild`); objects no name reaches go to OUTDIR/lost+found;
 *     the tree is walked by src/salvage.c;
 *  5. digest of the image again, then OUTDIR/report.json.
 * Exit status: 0 every object extracted complete; 4 some objects could not be
 * read (the rest is extracted, each problem is in report.json);
 * 8 operational (image unreadable, OUTDIR not writable, the image changed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../rebuild/rebuild.h"
#include "check.h"
#include "cli_common.h"
#include "image_digest.h"
#include "rfs/version.h"
#include "rfs/salvage.h"
#include "rfs/sha256.h"

/* The version string lives in src/main.c; report.json repeats it here until
 * it moves to a shared header. */

enum { OPT_FORCE = OPT_FIRST_COMMAND_OPTION, OPT_DEVICES, OPT_INDEX, OPT_SCAN, OPT_DELETED };

static double now_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void iso_time(double t, char out[32])
{
	time_t s = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&s, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		strcpy(out, "?");
}

/* 1 when the directory has entries other than "." and "..", 0 when empty,
 * -1 with errno on failure. */
static int dir_has_entries(int fd)
{
	int d = dup(fd);
	if (d < 0)
		return -1;
	DIR *dir = fdopendir(d);
	if (!dir) {
		close(d);
		return -1;
	}
	int found = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			found = 1;
			break;
		}
	}
	int e = errno;
	closedir(dir);
	if (!found && e) {
		errno = e;
		return -1;
	}
	return found;
}

static FILE *create_output(int dirfd, const char *name, struct rfs_error *err)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rfs_error_sys(err, errno, RFS_NO_BLOCK, "cannot create OUTDIR/%s", name);
		return NULL;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		rfs_error_sys(err, errno, RFS_NO_BLOCK, "OUTDIR/%s", name);
		close(fd);
	}
	return f;
}

static json_t *problems_json(const struct salvage_totals *t)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < t->nproblems; i++) {
		const struct salvage_problem *p = &t->problems[i];
		json_array_append_new(a, json_pack("{s:s, s:[I,I], s:s}", "path", p->path, "key",
						   (json_int_t)p->dir_id, (json_int_t)p->objectid,
						   "problem", p->what));
	}
	return a;
}

/* report.json: totals.deleted (what --deleted extracted). */
static json_t *deleted_totals_json(const struct salvage_deleted *del)
{
	const struct salvage_deleted_totals *t = salvage_deleted_get_totals(del);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "objects", (json_int_t)t->objects, "files", (json_int_t)t->files,
			 "dirs", (json_int_t)t->dirs, "symlinks", (json_int_t)t->symlinks,
			 "others", (json_int_t)t->others,
			 "files_complete", (json_int_t)t->files_complete,
			 "files_with_missing_ranges", (json_int_t)t->files_partial,
			 "unresolved_names", (json_int_t)t->unresolved,
			 "names_only", (json_int_t)t->names_only,
			 "old_names_of_live_objects", (json_int_t)t->old_names,
			 "without_stat_data", (json_int_t)t->without_stat_data,
			 "bytes", (json_int_t)t->bytes);
}

/* report.json: deleted_scan (where --deleted looked and what it found). */
static json_t *deleted_scan_json(const struct salvage_deleted *del)
{
	const struct salvage_deleted_totals *t = salvage_deleted_get_totals(del);
	json_t *j = json_pack("{s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}",
			 "blocks_read", (json_int_t)t->blocks_read,
			 "free_blocks_from_index", t->from_index,
			 "blocks_skipped_by_index", (json_int_t)t->blocks_skipped_by_index,
			 "unreadable_blocks", (json_int_t)t->unreadable,
			 "stale_leaves_free", (json_int_t)t->leaves_free,
			 "stale_leaves_journal", (json_int_t)t->leaves_journal,
			 "stale_leaves_invalid", (json_int_t)t->leaves_invalid,
			 "free_leaves_taken_as_data", (json_int_t)t->leaves_as_data,
			 "journal_transactions", (json_int_t)t->journal_transactions,
			 "stale_items_of_live_objects", (json_int_t)t->live_items_skipped,
			 "records_truncated", t->records_truncated,
			 "live_tree_incomplete", t->live_incomplete);
	if (j && t->live_incomplete)
		json_object_set_new(j, "live_tree_error", json_string(t->live_error));
	return j;
}

static char *missing_ranges(void *ctx, uint32_t dir_id, uint32_t objectid)
{
	return rb_partial_ranges(ctx, dir_id, objectid);
}

int cmd_salvage(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "index", required_argument, NULL, OPT_INDEX },
		{ "scan", no_argument, NULL, OPT_SCAN },
		{ "devices", no_argument, NULL, OPT_DEVICES },
		{ "deleted", no_argument, NULL, OPT_DELETED },
		{ NULL, 0, NULL, 0 } };
	struct rfs_common_opts co = { 0 };
	bool force = false, devices = false, force_scan = false, want_deleted = false;
	const char *index_path = NULL;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qv", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP: cli_print_command_help("salvage", stdout); return RFS_EXIT_OK;
		case OPT_FORCE: force = true; continue;
		case OPT_INDEX: index_path = optarg; continue;
		case OPT_SCAN: force_scan = true; continue;
		case OPT_DEVICES: devices = true; continue;
		case OPT_DELETED: want_deleted = true; continue;
		}
		int k = cli_common_option("salvage", opt, optarg, &co);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("salvage", "unknown option");
	}
	if (argc - optind != 2)
		return cli_usage_error("salvage", "expects IMAGE OUTDIR");
	const char *image = argv[optind], *outdir = argv[optind + 1];

	struct rfs_error err;
	rfs_error_clear(&err);
	if (rfs_sha256_selftest(&err))
		return cli_fail("salvage", &err);

	/* An image that cannot be opened should not leave a new OUTDIR behind. */
	int probe = open(image, O_RDONLY | O_CLOEXEC);
	if (probe < 0) {
		rfs_error_sys(&err, errno, RFS_NO_BLOCK, "%s: cannot open", image);
		return cli_fail("salvage", &err);
	}
	close(probe);
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		rfs_error_sys(&err, errno, RFS_NO_BLOCK, "cannot create %s", outdir);
		return cli_fail("salvage", &err);
	}
	int outfd = open(outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (outfd < 0) {
		rfs_error_sys(&err, errno, RFS_NO_BLOCK, "cannot open %s as a directory%s", outdir,
			      errno == ELOOP || errno == ENOTDIR ? " (it must be a directory, not a symlink)" : "");
		return cli_fail("salvage", &err);
	}
	int has = dir_has_entries(outfd);
	if (has < 0) {
		rfs_error_sys(&err, errno, RFS_NO_BLOCK, "cannot read %s", outdir);
		close(outfd);
		return cli_fail("salvage", &err);
	}
	if (has && !force) {
		close(outfd);
		return cli_usage_error("salvage", "%s is not empty; salvage into an empty or new directory, or pass --force", outdir);
	}

	double t0 = now_wall();
	struct rfs_progress progress;
	rfs_progress_init(&progress, co.progress != 0, co.quiet || co.json);
	char before[RFS_SHA256_HEX_LEN + 1] = "", after[RFS_SHA256_HEX_LEN + 1] = "";
	struct rfs_fs *fs = NULL;
	struct rfs_fs *disk_fs = NULL;   /* --deleted in damaged-tree mode: the image as mounted */
	struct salvage_deleted *del = NULL;
	FILE *manifest = NULL, *bodyfile = NULL, *report = NULL;
	struct salvage_totals totals = { 0 };
	struct rb_ctx rb;
	bool have_rb = false;
	uint64_t scan_unreadable = 0;   /* blocks the scan could not read */
	int rc = RFS_EXIT_OK;
	rfs_status run_st = RFS_OK;
	struct rfs_error run_err;
	rfs_error_clear(&run_err);

	rfs_progress_phase(&progress, "hashing image", "files", 0);
	if (rfs_image_digest(image, before, &err)) {
		rfs_progress_done(&progress);
		rc = cli_fail("salvage", &err);
		goto out;
	}
	rfs_progress_done(&progress);
	double t_hashed = now_wall();
	if (cli_open_readonly(image, &co, true, NULL, NULL, &fs, &err)) {
		rc = cli_fail("salvage", &err);
		goto out;
	}
	/* The tree, or a tree rebuilt in memory from the scanned leaves. */
	const char *source = "tree";
	char why[200] = "";
	if (index_path || force_scan) {
		snprintf(why, sizeof(why), "%s", index_path ? "--index given" : "--scan given");
	} else {
		struct rfs_check ck;
		memset(&ck, 0, sizeof(ck));
		rfs_progress_phase(&progress, "checking the tree", "", 0);
		if (check_run_mode(fs, RFS_MODE_CHECK, NULL, true, 0, &ck, &err)) {
			check_release(&ck);
			rc = cli_fail("salvage", &err);
			goto out;
		}
		rfs_progress_done(&progress);
		if (ck.bad_nodes)
			snprintf(why, sizeof(why), "the tree has %llu damaged node(s)",
				 (unsigned long long)ck.bad_nodes);
		check_release(&ck);
	}
	if (*why) {
		source = "scan";
		struct rfs_error cerr0;
		rfs_error_clear(&cerr0);
		rfs_fs_close(fs, &cerr0);
		fs = NULL;
		struct rfs_fs_options fo = { .replay = true, .hash_override = (unsigned)co.hash_code };
		fo.dev.path = image;
		fo.dev.offset = co.offset;
		fo.dev.mapfile = co.mapfile;
		fo.dev.flags = RFS_DEV_DRY_RUN;   /* read-only; the new tree lives in memory */
		if (rfs_fs_open(&fo, &fs, &err)) {
			rc = cli_fail("salvage", &err);
			goto out;
		}
		struct rb_options ro = { .dry_run = true, .quiet = co.quiet || co.json,
					 .progress_force = co.progress != 0,
					 .hash_override = (unsigned)co.hash_code, .detached_orphans = true };
		rb_init(&rb, fs, &ro);
		have_rb = true;
		if (rb_decide(&rb, index_path, &err) || rb_build(&rb, &err)) {
			rc = cli_fail("salvage", &err);
			goto out;
		}
		if (!co.quiet && !co.json)
			fprintf(stderr, "rfsck salvage: %s: files come from a tree rebuilt in memory "
					"from %llu scanned leaves\n", why, (unsigned long long)rb.n.accepted);
		if (rb.n.unreadable)
			scan_unreadable = rb.n.unreadable;
	}
	manifest = create_output(outfd, "manifest.jsonl", &err);
	bodyfile = manifest ? create_output(outfd, "bodyfile", &err) : NULL;
	if (!manifest || !bodyfile) {
		rc = cli_fail("salvage", &err);
		goto out;
	}
	struct salvage_options so = {
		.outdir_fd = outfd, .devices = devices, .chown = geteuid() == 0,
		.manifest = manifest, .bodyfile = bodyfile, .progress = &progress,
	};
	if (have_rb) {
		if (rb.lf_objectid) {
			so.orphan_dir_id = 2;
			so.orphan_objectid = rb.lf_objectid;
		}
		so.missing_ranges = missing_ranges;
		so.missing_ctx = &rb;
	}
	if (want_deleted) {
		/* The deleted objects' stale leaves and data are read from the image
		 * as the kernel would mount it, never from the tree rebuilt in
		 * memory; that tree only says what is live. */
		struct rfs_fs *dfs = fs;
		if (have_rb) {
			if (cli_open_readonly(image, &co, true, NULL, NULL, &disk_fs, &err)) {
				rc = cli_fail("salvage", &err);
				goto out;
			}
			dfs = disk_fs;
		}
		struct salvage_deleted_options dopt = {
			.live_fs = fs, .disk_fs = dfs, .live_nodes_on_disk = !have_rb,
			.used = have_rb ? &rb.old_used : NULL,
			.in_use = { have_rb ? &rb.accepted : NULL, have_rb ? &rb.claimed : NULL },
			.excluded = have_rb ? &rb.nested : NULL,
			.index = have_rb ? rb.ix : NULL, .progress = &progress,
		};
		if (salvage_deleted_scan(&dopt, &del, &err)) {
			rc = cli_fail("salvage", &err);
			goto out;
		}
		so.dir_entered = salvage_deleted_dir_entered;
		so.dir_ctx = del;
	}
	rfs_progress_phase(&progress, "extracting", "objects", 0);
	run_st = salvage_run(fs, &so, &totals, &run_err);
	rfs_progress_done(&progress);
	if (!run_st && del) {
		run_st = salvage_deleted_extract(del, &so, &run_err);
		if (!run_st && salvage_deleted_get_totals(del)->live_incomplete) {
			/* asked for, not done: a problem like an unreadable object */
			totals.errors++;
			fprintf(stderr, "rfsck salvage: --deleted: the tree could not be walked to its end "
					"(%s), so deleted objects cannot be told from live ones; none extracted\n",
				salvage_deleted_get_totals(del)->live_error);
		}
	}
	if (fflush(manifest) || fsync(fileno(manifest)) || fflush(bodyfile) ||
	    fsync(fileno(bodyfile))) {
		if (!run_st)
			run_st = rfs_error_sys(&run_err, errno, RFS_NO_BLOCK, "writing the manifest or body file");
	}
	struct rfs_error cerr;
	rfs_error_clear(&cerr);
	uint32_t replayed = fs->journal.replayed;
	rfs_fs_close(fs, &cerr);
	fs = NULL;
	if (disk_fs) {
		rfs_error_clear(&cerr);
		rfs_fs_close(disk_fs, &cerr);
		disk_fs = NULL;
	}
	double t_extracted = now_wall();
	if (rfs_image_digest(image, after, &err)) {
		rc = cli_fail("salvage", &err);
		goto out;
	}
	double t1 = now_wall();

	bool image_same = strcmp(before, after) == 0;
	if (scan_unreadable) {
		/* whatever lived in them is missing without a trace: not complete */
		totals.errors++;
		if (!run_st)
			fprintf(stderr, "rfsck salvage: %llu block(s) could not be read by the scan; "
					"objects that lived only there are missing\n",
				(unsigned long long)scan_unreadable);
	}
	if (run_st)
		rc = cli_fail("salvage", &run_err);
	else if (!image_same) {
		fprintf(stderr, "rfsck salvage: the image's SHA-256 changed during the run (%s -> %s); something else is writing to it\n",
			before, after);
		rc = RFS_EXIT_OPERATIONAL;
	} else if (totals.errors)
		rc = RFS_EXIT_NEEDS_REBUILD;

	char started[32], finished[32];
	iso_time(t0, started);
	iso_time(t1, finished);
	char line[400] = "";
	if (run_st)
		rfs_error_format(&run_err, line, sizeof(line));
	json_t *tot = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				"files", (json_int_t)totals.files, "dirs", (json_int_t)totals.dirs,
				"symlinks", (json_int_t)totals.symlinks, "others", (json_int_t)totals.others,
				"hardlinks", (json_int_t)totals.hardlinks, "bytes", (json_int_t)totals.bytes,
				"errors", (json_int_t)totals.errors,
				"escaped_names", (json_int_t)totals.escaped_names,
				"recorded_not_created", (json_int_t)totals.not_created);
	json_t *rep = json_pack("{s:s, s:s, s:s, s:I, s:{s:s, s:s, s:b}, s:I, s:o, s:s, s:o, s:I, s:{s:s, s:s, s:f}, s:b, s:b}",
				"rfsck_version", RFSCK_VERSION, "image", image, "outdir", outdir,
				"offset", (json_int_t)co.offset,
				"image_sha256", "before", before, "after", after, "unchanged", image_same,
				"journal_transactions_replayed_in_memory", (json_int_t)replayed,
				"totals", tot,
				"status", run_st ? "operational-error" : totals.errors ? "incomplete" : "complete",
				"problems", problems_json(&totals),
				"problems_not_listed", (json_int_t)(totals.errors > totals.nproblems ? totals.errors - totals.nproblems : 0),
				"timing", "started", started, "finished", finished, "seconds", t1 - t0,
				"devices_created", devices, "ownership_set", geteuid() == 0);
	if (rep)
		/* the digests cost per byte of the image file, holes included; the
		 * extraction per object and per byte extracted */
		json_object_set_new(json_object_get(rep, "timing"), "phases",
			json_pack("{s:f, s:f, s:f}", "image_digest_before", t_hashed - t0,
				  "extract", t_extracted - t_hashed, "image_digest_after", t1 - t_extracted));
	if (rep && run_st)
		json_object_set_new(rep, "error", json_string(line));
	if (rep) {
		json_object_set_new(rep, "source", json_string(source));
		if (*why)
			json_object_set_new(rep, "source_reason", json_string(why));
		if (scan_unreadable)
			json_object_set_new(rep, "scan_unreadable_blocks", json_integer((json_int_t)scan_unreadable));
		if (have_rb) {
			struct rb_run_result rr = { .check_after = "not run (salvage: in memory only)" };
			json_t *rj = rb_report_json(&rb, &rr);
			json_object_del(rj, "blocks_written");
			json_object_del(rj, "written_blocks_sha256");
			json_object_del(rj, "repairs_after_build");
			json_object_del(rj, "check_after");
			json_object_set_new(rep, "rebuild", rj);
		}
	}
	if (rep && del) {
		json_object_set_new(json_object_get(rep, "totals"), "deleted", deleted_totals_json(del));
		json_object_set_new(rep, "deleted_scan", deleted_scan_json(del));
	}
	if (rep)
		json_object_set_new(rep, "exit", json_integer(rc));
	report = create_output(outfd, "report.json", &err);
	if (!rep || !report ||
	    json_dumpf(rep, report, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', report) == EOF ||
	    fflush(report) || fsync(fileno(report))) {
		if (report || !rep)
			rfs_error_sys(&err, errno, RFS_NO_BLOCK, "writing OUTDIR/report.json");
		rc = cli_fail("salvage", &err);
	}
	if (co.json && rep) {
		json_object_set_new(rep, "exit", json_integer(rc));
		json_object_del(rep, "problems");
		if (cli_json_print(json_incref(rep)))
			rc = RFS_EXIT_OPERATIONAL;
	} else if (!co.quiet) {
		printf("Salvaged %s into %s: %llu files, %llu directories, %llu symlinks, %llu other (%llu hard links), %llu bytes\n",
		       image, outdir, (unsigned long long)totals.files, (unsigned long long)totals.dirs,
		       (unsigned long long)totals.symlinks, (unsigned long long)totals.others,
		       (unsigned long long)totals.hardlinks, (unsigned long long)totals.bytes);
		if (totals.escaped_names)
			printf("  %llu name(s) escaped for the output file system (see manifest.jsonl)\n",
			       (unsigned long long)totals.escaped_names);
		if (totals.not_created)
			printf("  %llu device/FIFO/socket object(s) recorded in the manifest only%s\n",
			       (unsigned long long)totals.not_created, devices ? "" : " (--devices creates them)");
		if (del) {
			const struct salvage_deleted_totals *dt = salvage_deleted_get_totals(del);
			printf("  deleted: %llu object(s) under %s/deleted (%llu file(s): %llu complete, "
			       "%llu with missing ranges; %llu without a name), %llu name(s) only, "
			       "%llu old name(s) of live objects\n",
			       (unsigned long long)dt->objects, outdir, (unsigned long long)dt->files,
			       (unsigned long long)dt->files_complete, (unsigned long long)dt->files_partial,
			       (unsigned long long)dt->unresolved, (unsigned long long)dt->names_only,
			       (unsigned long long)dt->old_names);
		}
		if (totals.errors)
			printf("  %llu object(s) could not be read completely: see report.json; exit 4\n",
			       (unsigned long long)totals.errors);
		printf("  image SHA-256 %s (%s)\n", before, image_same ? "unchanged" : "CHANGED");
	}
	json_decref(rep);
out:
	if (manifest)
		fclose(manifest);
	if (bodyfile)
		fclose(bodyfile);
	if (report && fclose(report) && rc == RFS_EXIT_OK)
		rc = RFS_EXIT_OPERATIONAL;
	if (fs) {
		rfs_error_clear(&err);
		rfs_fs_close(fs, &err);
	}
	if (disk_fs) {
		rfs_error_clear(&err);
		rfs_fs_close(disk_fs, &err);
	}
	salvage_deleted_free(del);
	if (have_rb)
		rb_release(&rb);
	salvage_totals_free(&totals);
	close(outfd);
	return rc;
}

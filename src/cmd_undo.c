/*
 * cmd_undo.c - `rfsck undo [--dry-run] [--json] [-q] [--force] UNDOFILE IMAGE`:
 * puts back the blocks an undo file saved (src/io_undo.c does the work and all
 * the verification) and says which blocks it restored.
 *
 * Exit status: 0 restored (or, with --dry-run, would restore) everything the
 * file holds; 8 when the undo file does not verify, belongs to another image,
 * or I/O fails (the image is then untouched, except after an I/O error in the
 * middle of writing, which the message says); 16 on a usage error.
 * With --json exactly one JSON object goes to stdout, success or not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "rfs/undo.h"
#include "rfs/u64set.h"

enum { OPT_DRY_RUN = OPT_FIRST_COMMAND_OPTION, OPT_FORCE };

struct block_list {
	uint64_t *blk;
	size_t n, cap;
	bool oom;                     /* a block could not be listed */
};

static void collect_block(void *ctx, uint64_t blk)
{
	struct block_list *l = ctx;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		uint64_t *p = realloc(l->blk, ncap * sizeof(*p));
		if (!p) {
			l->oom = true;
			return;
		}
		l->blk = p;
		l->cap = ncap;
	}
	l->blk[l->n++] = blk;
}

static const char *state_name(enum undo_file_state s)
{
	switch (s) {
	case UNDO_STATE_CREATING: return "creating";
	case UNDO_STATE_OPEN: return "unfinished";
	case UNDO_STATE_FINISHED: return "finished";
	}
	return "unknown";
}

/* Prints the sorted blocks as ranges "a-b c e-f", a few per line. */
static void print_ranges(const struct block_list *l)
{
	int on_line = 0;
	for (size_t i = 0; i < l->n;) {
		size_t j = i;
		while (j + 1 < l->n && l->blk[j + 1] == l->blk[j] + 1)
			j++;
		if (on_line == 0)
			printf("  blocks:");
		if (i == j)
			printf(" %llu", (unsigned long long)l->blk[i]);
		else
			printf(" %llu-%llu", (unsigned long long)l->blk[i], (unsigned long long)l->blk[j]);
		if (++on_line == 8) {
			printf("\n");
			on_line = 0;
		}
		i = j + 1;
	}
	if (on_line)
		printf("\n");
}

static json_t *result_json(const char *undo_path, const char *image, bool dry_run,
			   const struct undo_apply_result *r, const struct block_list *l,
			   rfs_status st, const struct rfs_error *err)
{
	json_t *o = json_object();
	json_t *blocks = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(blocks, json_integer((json_int_t)l->blk[i]));
	json_object_set_new(o, "command", json_string("undo"));
	json_object_set_new(o, "undo_file", json_string(undo_path));
	json_object_set_new(o, "image", json_string(image));
	json_object_set_new(o, "dry_run", json_boolean(dry_run));
	json_object_set_new(o, "ok", json_boolean(st == RFS_OK));
	json_object_set_new(o, "undo_state", json_string(state_name(r->state)));
	json_object_set_new(o, "block_size", json_integer(r->target.block_size));
	json_object_set_new(o, "fs_offset", json_integer((json_int_t)r->target.fs_offset));
	json_object_set_new(o, "image_size", json_integer((json_int_t)r->target.image_size));
	json_object_set_new(o, "identity_ranges_checked", json_integer(r->identity_ranges));
	json_object_set_new(o, "records", json_integer((json_int_t)r->records));
	json_object_set_new(o, "blocks_restored", json_integer((json_int_t)r->blocks_restored));
	json_object_set_new(o, "torn_tail_bytes", json_integer((json_int_t)r->torn_bytes));
	json_object_set_new(o, "blocks_changed_since_run",
			    json_integer((json_int_t)r->changed_since_run));
	json_object_set_new(o, "blocks_already_original", json_integer((json_int_t)r->already_original));
	json_object_set_new(o, "forced", json_boolean(r->forced));
	json_object_set_new(o, dry_run ? "blocks_to_restore" : "blocks", blocks);
	if (st) {
		char line[400];
		rfs_error_format(err, line, sizeof(line));
		json_object_set_new(o, "error", json_string(line));
		json_object_set_new(o, "error_status", json_string(rfs_strerror(st)));
	}
	return o;
}

static void result_text(const char *undo_path, const char *image, bool dry_run, bool quiet,
			const struct undo_apply_result *r, const struct block_list *l)
{
	if (r->state == UNDO_STATE_CREATING) {
		printf("%s is empty: the run that created it wrote nothing; %s is unchanged\n",
		       undo_path, image);
		return;
	}
	if (dry_run)
		printf("would restore %llu block(s) of %u bytes to %s from %s (%s undo file)\n",
		       (unsigned long long)r->records, r->target.block_size, image, undo_path,
		       state_name(r->state));
	else
		printf("restored %llu block(s) of %u bytes to %s from %s (%s undo file)\n",
		       (unsigned long long)r->blocks_restored, r->target.block_size, image, undo_path,
		       state_name(r->state));
	if (r->torn_bytes)
		printf("ignored a torn tail of %llu bytes (blocks saved by a killed run and never "
		       "overwritten)\n", (unsigned long long)r->torn_bytes);
	if (r->identity_ranges == 0)
		printf("note: the undo file names no identity bytes; only the image size was checked\n");
	if (r->changed_since_run && r->already_original == r->records)
		printf("the image already held the original contents (undo applied before?)\n");
	else if (r->changed_since_run)
		printf("forced: %llu block(s) had changed since the run\n",
		       (unsigned long long)r->changed_since_run);
	if (!quiet)
		print_ranges(l);
}

int cmd_undo(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool dry_run = false, force = false, json = false, quiet = false;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "q", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP: cli_print_command_help("undo", stdout); return RFS_EXIT_OK;
		case OPT_DRY_RUN: dry_run = true; break;
		case OPT_FORCE: force = true; break;
		case OPT_JSON: json = true; break;
		case 'q': quiet = true; break;
		default: return cli_usage_error("undo", "unknown option");
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("undo", "expects UNDOFILE IMAGE");
	const char *undo_path = argv[optind], *image = argv[optind + 1];

	struct block_list blocks = { 0 };
	struct undo_apply_result res;
	struct rfs_error err;
	rfs_error_clear(&err);
	unsigned flags = (dry_run ? UNDO_APPLY_DRY_RUN : 0) | (force ? UNDO_APPLY_FORCE : 0);
	rfs_status st = undo_apply(undo_path, image, flags, collect_block, &blocks, &res, &err);
	if (!st && blocks.oom)
		fprintf(stderr, "rfsck undo: out of memory listing the blocks; the list is incomplete\n");
	if (blocks.n)
		qsort(blocks.blk, blocks.n, sizeof(*blocks.blk), u64_compare);

	int rc = st ? RFS_EXIT_OPERATIONAL : RFS_EXIT_OK;
	if (json) {
		if (cli_json_print(result_json(undo_path, image, dry_run, &res, &blocks, st, &err)))
			rc = RFS_EXIT_OPERATIONAL;
		if (st && !quiet) {
			char line[400];
			rfs_error_format(&err, line, sizeof(line));
			fprintf(stderr, "rfsck undo: %s\n", line);
		}
	} else if (st) {
		cli_fail("undo", &err);
		if (res.blocks_restored)
			fprintf(stderr, "rfsck undo: %llu block(s) were restored before the failure; "
				"run undo again once the cause is fixed\n",
				(unsigned long long)res.blocks_restored);
		else
			fprintf(stderr, "rfsck undo: %s was not changed\n", image);
	} else {
		result_text(undo_path, image, dry_run, quiet, &res, &blocks);
	}
	free(blocks.blk);
	return rc;
}

/*
 * cmd_ls.c - `rfsck ls`: list directories of an image by key search.
 *
 * Entries of a directory are collected first (the tree cursor cannot be moved
 * while iterating), sorted by name bytes, then looked up one by one.  A
 * directory reached twice (hard-linked directories, cycles) is listed but not
 * entered again.  Errors on single entries are reported on stderr and counted;
 * the listing goes on and the exit status is 8 if any occurred.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "rfs/object.h"
#include "rfs/strbuf.h"
#include "rfs/u64set.h"

enum { OPT_LS_NO_REPLAY = OPT_FIRST_COMMAND_OPTION };
enum { SYMLINK_TARGET_MAX = 65536 };

struct ls_run {
	struct rfs_fs *fs;
	struct rfs_cursor cur;
	bool long_fmt, recursive, json;
	json_t *entries;
	struct u64set visited;
	unsigned long errors;
	int depth;
};

static void entry_error(struct ls_run *r, const struct strbuf *path, const struct rfs_error *err)
{
	char line[300];
	rfs_error_format(err, line, sizeof(line));
	fprintf(stderr, "rfsck ls: %s: %s\n", path->len ? sb_str(path) : "/", line);
	r->errors++;
}

static void mode_string(uint16_t mode, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	out[0] = types[(mode >> 12) & 15];
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	if (mode & 04000)
		out[3] = (mode & 0100) ? 's' : 'S';
	if (mode & 02000)
		out[6] = (mode & 010) ? 's' : 'S';
	if (mode & 01000)
		out[9] = (mode & 01) ? 't' : 'T';
	out[10] = 0;
}

static rfs_status read_symlink(struct ls_run *r, const struct rfs_object *obj, struct strbuf *out,
			       struct rfs_error *err)
{
	return rfs_object_read_small(&r->cur, obj, SYMLINK_TARGET_MAX, out, err);
}

static void print_entry(struct ls_run *r, const struct strbuf *path, const uint8_t *name,
			size_t name_len, const struct rfs_object *obj, const struct strbuf *target,
			bool have_obj)
{
	const struct rfs_stat *sd = &obj->sd;
	enum rfs_file_type ft = have_obj ? rfs_mode_type(sd->mode) : RFS_FT_UNKNOWN;
	if (r->json) {
		json_t *e = json_object();
		json_object_set_new(e, "path", cli_json_name((const uint8_t *)sb_str(path), path->len));
		json_object_set_new(e, "path_hex", cli_json_hex((const uint8_t *)sb_str(path), path->len));
		json_object_set_new(e, "name", cli_json_name(name, name_len));
		json_object_set_new(e, "type", json_string(have_obj ? rfs_file_type_name(ft) : "missing"));
		json_object_set_new(e, "dirid", json_integer(obj->dir_id));
		json_object_set_new(e, "objectid", json_integer(obj->objectid));
		if (have_obj) {
			json_object_set_new(e, "size", json_integer((json_int_t)sd->size));
			json_object_set_new(e, "mode", json_integer(sd->mode));
			json_object_set_new(e, "uid", json_integer(sd->uid));
			json_object_set_new(e, "gid", json_integer(sd->gid));
			json_object_set_new(e, "nlink", json_integer(sd->nlink));
			json_object_set_new(e, "atime", json_integer(sd->atime));
			json_object_set_new(e, "mtime", json_integer(sd->mtime));
			json_object_set_new(e, "ctime", json_integer(sd->ctime));
			json_object_set_new(e, "blocks", json_integer(sd->blocks));
			json_object_set_new(e, "stat_version", json_integer(sd->version));
			if (ft == RFS_FT_CHR || ft == RFS_FT_BLK)
				json_object_set_new(e, "rdev", json_integer(sd->rdev));
			if (ft == RFS_FT_LNK && target) {
				json_object_set_new(e, "target", cli_json_name((const uint8_t *)sb_str(target), target->len));
				json_object_set_new(e, "target_hex", cli_json_hex((const uint8_t *)sb_str(target), target->len));
			}
		}
		json_array_append_new(r->entries, e);
		return;
	}
	struct strbuf shown = STRBUF_INIT;
	if (r->recursive)
		sb_add_escaped(&shown, (const uint8_t *)sb_str(path), path->len);
	else
		sb_add_escaped(&shown, name, name_len);
	if (!r->long_fmt) {
		printf("%s\n", sb_str(&shown));
	} else if (!have_obj) {
		printf("?????????? %4s %5s %5s %12s %16s [%u %u] %s\n", "?", "?", "?", "?", "?",
		       obj->dir_id, obj->objectid, sb_str(&shown));
	} else {
		char m[11], tb[32];
		mode_string(sd->mode, m);
		time_t t = (time_t)sd->mtime;
		struct tm tm;
		if (!gmtime_r(&t, &tm) || !strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M", &tm))
			strcpy(tb, "?");
		char size[32];
		if (ft == RFS_FT_CHR || ft == RFS_FT_BLK)
			snprintf(size, sizeof(size), "%u, %u", (sd->rdev >> 8) & 0xfff,
				 (sd->rdev & 0xff) | ((sd->rdev >> 12) & 0xfff00));
		else
			snprintf(size, sizeof(size), "%llu", (unsigned long long)sd->size);
		printf("%s %4u %5u %5u %12s %16s [%u %u] %s", m, sd->nlink, sd->uid, sd->gid, size,
		       tb, obj->dir_id, obj->objectid, sb_str(&shown));
		if (ft == RFS_FT_LNK && target) {
			struct strbuf t2 = STRBUF_INIT;
			sb_add_escaped(&t2, (const uint8_t *)sb_str(target), target->len);
			printf(" -> %s", sb_str(&t2));
			sb_free(&t2);
		}
		printf("\n");
	}
	sb_free(&shown);
}

static rfs_status list_dir(struct ls_run *r, const struct rfs_object *dir, struct strbuf *path);

/* Shows one entry at path (already holding its full path); recurses into it
 * if it is a directory and -R was given. */
static rfs_status show_object(struct ls_run *r, struct strbuf *path, const uint8_t *name,
			      size_t name_len, uint32_t dir_id, uint32_t objectid)
{
	struct rfs_error err;
	rfs_error_clear(&err);
	struct rfs_object obj = { .dir_id = dir_id, .objectid = objectid };
	rfs_status st = rfs_object_get(&r->cur, dir_id, objectid, &obj, &err);
	if (st == RFS_ERR_NOMEM)
		return st;
	if (st) {
		entry_error(r, path, &err);
		print_entry(r, path, name, name_len, &obj, NULL, false);
		return RFS_OK;
	}
	struct strbuf target = STRBUF_INIT;
	bool is_link = rfs_mode_type(obj.sd.mode) == RFS_FT_LNK;
	if (is_link && (r->long_fmt || r->json)) {
		rfs_error_clear(&err);
		if (read_symlink(r, &obj, &target, &err))
			entry_error(r, path, &err);
	}
	print_entry(r, path, name, name_len, &obj, is_link ? &target : NULL, true);
	sb_free(&target);
	if (r->recursive && rfs_mode_type(obj.sd.mode) == RFS_FT_DIR)
		return list_dir(r, &obj, path);
	return RFS_OK;
}

static rfs_status list_dir(struct ls_run *r, const struct rfs_object *dir, struct strbuf *path)
{
	bool added;
	if (u64set_add(&r->visited, (uint64_t)dir->dir_id << 32 | dir->objectid, &added))
		return RFS_ERR_NOMEM;
	if (!added) {
		fprintf(stderr, "rfsck ls: %s: directory [%u %u] already listed (hard link or cycle); not entered again\n",
			path->len ? sb_str(path) : "/", dir->dir_id, dir->objectid);
		r->errors++;
		return RFS_OK;
	}
	if (r->depth >= RFS_PATH_MAX_DEPTH) {
		fprintf(stderr, "rfsck ls: %s: deeper than %d levels; not entered\n", sb_str(path),
			RFS_PATH_MAX_DEPTH);
		r->errors++;
		return RFS_OK;
	}
	struct rfs_dirent_list col = { 0 };
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_dir_collect(&r->cur, dir->dir_id, dir->objectid, true, true, &col, &err);
	if (st == RFS_ERR_NOMEM)
		return st;
	if (st)
		entry_error(r, path, &err);   /* list what was read */
	r->depth++;
	size_t base = path->len;
	for (size_t i = 0; i < col.n && st != RFS_ERR_NOMEM; i++) {
		sb_truncate(path, base);
		if (sb_add(path, "/", 1) || sb_add(path, col.v[i].name, col.v[i].len)) {
			st = RFS_ERR_NOMEM;
			break;
		}
		rfs_status s2 = show_object(r, path, col.v[i].name, col.v[i].len, col.v[i].dir_id,
					    col.v[i].objectid);
		if (s2 == RFS_ERR_NOMEM)
			st = s2;
	}
	sb_truncate(path, base);
	r->depth--;
	rfs_dirent_list_free(&col);
	return st == RFS_ERR_NOMEM ? st : RFS_OK;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "no-replay", no_argument, NULL, OPT_LS_NO_REPLAY },
		{ "long", no_argument, NULL, 'l' },
		{ "recursive", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 } };
	struct rfs_common_opts c = { 0 };
	struct ls_run r = { 0 };
	bool replay = true;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "lRqv", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP: cli_print_command_help("ls", stdout); return RFS_EXIT_OK;
		case 'l': r.long_fmt = true; continue;
		case 'R': r.recursive = true; continue;
		case OPT_LS_NO_REPLAY: replay = false; continue;
		}
		int k = cli_common_option("ls", opt, optarg, &c);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("ls", "unknown option");
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage_error("ls", "expects IMAGE [PATH]");
	const char *image = argv[optind];
	const char *path = argc - optind == 2 ? argv[optind + 1] : "/";
	r.json = c.json;

	struct rfs_error err;
	rfs_error_clear(&err);
	if (cli_open_readonly(image, &c, replay, NULL, NULL, &r.fs, &err))
		return cli_fail("ls", &err);
	int rc = RFS_EXIT_OK;
	struct strbuf p = STRBUF_INIT;
	if (rfs_cursor_init(r.fs, &r.cur, &err)) {
		rc = cli_fail("ls", &err);
		goto out;
	}
	if (r.json)
		r.entries = json_array();
	struct rfs_object obj;
	if (rfs_path_resolve(&r.cur, path, &obj, &err)) {
		rc = cli_fail("ls", &err);
		goto out;
	}
	/* The canonical path of what was asked for, without repeated slashes. */
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		if (e > s && !(e - s == 1 && *s == '.')) {
			sb_add(&p, "/", 1);
			sb_add(&p, s, (size_t)(e - s));
		}
		s = e;
	}
	rfs_status st;
	if (rfs_mode_type(obj.sd.mode) == RFS_FT_DIR) {
		st = list_dir(&r, &obj, &p);
	} else {
		const char *slash = strrchr(sb_str(&p), '/');
		const char *nm = slash ? slash + 1 : sb_str(&p);
		st = show_object(&r, &p, (const uint8_t *)nm, strlen(nm), obj.dir_id, obj.objectid);
	}
	if (st) {
		rfs_error_set(&err, st, RFS_NO_BLOCK, "listing");
		rc = cli_fail("ls", &err);
		goto out;
	}
	if (r.json) {
		json_t *o = json_pack("{s:s, s:O, s:I}", "image", image, "entries", r.entries,
				      "errors", (json_int_t)r.errors);
		if (cli_json_print(o))
			rc = RFS_EXIT_OPERATIONAL;
	}
	if (r.errors) {
		fprintf(stderr, "rfsck ls: %lu error(s) while listing\n", r.errors);
		rc = RFS_EXIT_OPERATIONAL;
	}
out:
	json_decref(r.entries);
	sb_free(&p);
	u64set_free(&r.visited);
	rfs_cursor_free(&r.cur);
	rfs_error_clear(&err);
	rfs_fs_close(r.fs, &err);
	return rc;
}

/*
 * fuzz_salvage.c - libFuzzer harness for `rfsck salvage IMAGE OUTDIR` on a
 * whole image (src/cmd_salvage.c, src/salvage*.c: tree walk, name escaping,
 * file bodies, manifest, body file, report.json).
 *
 * Input: the patch list of modes_common.h.  Option bits (byte 1):
 *   bit 0      --json (a summary object on stdout) instead of -q
 *   bits 1-2   --hash (none, tea, rupasov, r5)
 *   bit 3      --devices (device nodes, FIFOs and sockets are created)
 *   bit 4      --deleted (stale items of free blocks and the journal area are
 *              extracted under OUTDIR/deleted)
 *
 * Each run gets a fresh private directory P (under /dev/shm when there is
 * one) and OUTDIR = P/a/out, so a write that escapes OUTDIR by one or two
 * levels lands in P/a or P.
 *
 * Contracts (besides M1-M5 of modes_common.h, with the set {0, 4, 8}):
 *  (S1) nothing is created outside OUTDIR: afterwards P holds only "a" and
 *       P/a only "out" (the command is given absolute paths; every path it
 *       creates comes from the image);
 *  (S2) with exit 0 or 4, OUTDIR/report.json is one JSON object whose "exit"
 *       is the status, "image_sha256"."unchanged" is true, "status" is
 *       "complete" for 0 and "incomplete" for 4, "totals"."errors" is 0
 *       exactly for 0, and every line of OUTDIR/manifest.jsonl is a JSON
 *       object with a "path" and a "status"; OUTDIR/bodyfile exists;
 *  (S3) with --json and exit 0 or 4, stdout is one JSON object with the same
 *       "exit";
 *  (S4) OUTDIR holds no more than 256 MiB of allocated blocks (files whose
 *       size is read from disk stay sparse); the walk that measures it uses
 *       lstat and O_NOFOLLOW, so it never leaves OUTDIR;
 *  (S5) the tree under OUTDIR can be removed (directories are made
 *       searchable and writable first, as a user would have to);
 *  (S6) with exit 0 or 4: OUTDIR/deleted exists exactly with --deleted;
 *       manifest lines of status "deleted" appear only with --deleted, and
 *       exactly they are extracted under deleted/ (extracted_as "deleted/..."
 *       or null), every other line's extracted_as lies outside it.
 * Known answer on the pristine template: exit 0, 3 files, 2 directories,
 * 1 symlink; /d/t holds "hello log!\n" (the journal replayed in memory),
 * /f is 3172 bytes with its hole, /n is 67584 bytes.  With --deleted and a
 * stale leaf added in free block T_STALE (a deleted file /gone, (2, 9), its
 * stat data, a tail and an older root directory item naming it): the same
 * live objects and report totals, plus deleted/gone holding exactly
 * T_GONE_TEXT, status "deleted", its sha256 given.
 */
#include "modes_common.h"

enum { MAX_ALLOC = 256 << 20, T_STALE = 610 };
static const char T_GONE_TEXT[] = "deleted, not gone\n";

static char run_dir[320], mid_dir[330], out_dir[340];
static uint64_t walk_alloc;

/* Removes everything below fd (a directory; closed on return), making directories 0700
 * before opening them and never following a symlink (O_NOFOLLOW, lstat);
 * adds the blocks it saw to walk_alloc.  0 on success, -1 on a failure. */
static int clear_dir(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	bool again = true;
	while (again && rc == 0) {      /* until a pass removes nothing more */
		again = false;
		rewinddir(d);
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			struct stat st;
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				rc = -1;
				break;
			}
			walk_alloc += (uint64_t)st.st_blocks * 512;
			if (S_ISDIR(st.st_mode)) {
				if (depth > 800) {     /* keep clear of the fd limit */
					rc = -1;
					break;
				}
				(void)fchmodat(dirfd(d), de->d_name, 0700, 0);
				int sub = openat(dirfd(d), de->d_name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub < 0 || clear_dir(sub, depth + 1) ||
				    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR)) {
					rc = -1;
					break;
				}
			} else if (unlinkat(dirfd(d), de->d_name, 0)) {
				rc = -1;
				break;
			}
			again = true;
		}
	}
	closedir(d);
	return rc;
}

/* (S4), (S5): OUTDIR's allocation is bounded and the whole run directory
 * can be removed; P/a is gone afterwards. */
static void finish_run(void)
{
	walk_alloc = 0;
	int fd = open(mid_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	CHECK(fd >= 0);
	int rc = clear_dir(fd, 0);
	if (rc != 0) {
		/* deeper than the walk goes: let rm(1) finish, then fail only if
		 * even that cannot remove it */
		char cmd[800];
		snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", mid_dir,
			 mid_dir);
		CHECK(system(cmd) == 0);
		CHECK(access(mid_dir, F_OK) != 0);
	} else {
		CHECK(rmdir(mid_dir) == 0);
	}
	if (walk_alloc > MAX_ALLOC)
		fprintf(modes_real_stderr, "fuzz_salvage: OUTDIR allocated %llu bytes\n",
			(unsigned long long)walk_alloc);
	CHECK(walk_alloc <= MAX_ALLOC);                              /* (S4) */
}

static json_t *load_json_file(const char *dir, const char *name)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j)
		fprintf(modes_real_stderr, "fuzz_salvage: %s: %s\n", path, je.text);
	return j;
}

/* (S2) and (S6) for manifest.jsonl; returns the number of lines, and in
 * *deleted_lines those of status "deleted". */
static size_t check_manifest(bool deleted, size_t *deleted_lines)
{
	*deleted_lines = 0;
	char path[400];
	snprintf(path, sizeof(path), "%s/manifest.jsonl", out_dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	char *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)len, 0, &je);
		if (!o)
			fprintf(modes_real_stderr, "fuzz_salvage: manifest line %zu: %s\n", n + 1, je.text);
		CHECK(json_is_object(o));
		CHECK(json_is_string(json_object_get(o, "path")));
		CHECK(json_is_string(json_object_get(o, "status")));
		bool is_deleted = strcmp(json_string_value(json_object_get(o, "status")), "deleted") == 0;
		const char *as = json_string_value(json_object_get(o, "extracted_as"));
		CHECK(!is_deleted || deleted);                       /* (S6) */
		CHECK(is_deleted == (as != NULL && strncmp(as, "deleted/", 8) == 0) ||
		      (is_deleted && as == NULL));
		*deleted_lines += is_deleted;
		json_decref(o);
		n++;
	}
	free(line);
	fclose(f);
	snprintf(path, sizeof(path), "%s/bodyfile", out_dir);
	CHECK(access(path, F_OK) == 0);
	return n;
}

struct sv_facts { json_int_t files, dirs, symlinks; size_t deleted_lines; };

static int run_salvage(struct sv_facts *facts)
{
	static const int allowed[] = { 0, 4, 8, -1 };
	CHECK(mkdir(mid_dir, 0700) == 0);
	const char *argv[10];
	int n = 0;
	bool json = menv.flags & 1, deleted = menv.flags & 16;
	argv[n++] = "salvage";
	argv[n++] = json ? "--json" : "-q";
	if (modes_hash_arg())
		argv[n++] = modes_hash_arg();
	if (menv.flags & 8)
		argv[n++] = "--devices";
	if (deleted)
		argv[n++] = "--deleted";
	argv[n++] = menv.img_path;
	argv[n++] = out_dir;
	argv[n] = NULL;
	struct modes_run r;
	modes_call(cmd_salvage, argv, allowed, &r);
	modes_check_unchanged();
	CHECK(count_dir(run_dir, "a") == 0);                         /* (S1) */
	CHECK(count_dir(mid_dir, "out") == 0);
	if (r.rc != RFS_EXIT_OPERATIONAL) {
		json_t *rep = load_json_file(out_dir, "report.json");   /* (S2) */
		CHECK(json_is_object(rep));
		CHECK(json_integer_value(json_object_get(rep, "exit")) == r.rc);
		CHECK(json_is_true(json_object_get(json_object_get(rep, "image_sha256"), "unchanged")));
		const char *status = json_string_value(json_object_get(rep, "status"));
		CHECK(status && strcmp(status, r.rc == 0 ? "complete" : "incomplete") == 0);
		json_t *tot = json_object_get(rep, "totals");
		CHECK((json_integer_value(json_object_get(tot, "errors")) == 0) == (r.rc == 0));
		size_t dlines;
		size_t lines = check_manifest(deleted, &dlines);
		CHECK(lines >= 1 || r.rc != 0);
		char dpath[400];                                     /* (S6) */
		snprintf(dpath, sizeof(dpath), "%s/deleted", out_dir);
		struct stat dst;
		CHECK((lstat(dpath, &dst) == 0 && S_ISDIR(dst.st_mode)) == deleted);
		if (facts) {
			facts->files = json_integer_value(json_object_get(tot, "files"));
			facts->dirs = json_integer_value(json_object_get(tot, "dirs"));
			facts->symlinks = json_integer_value(json_object_get(tot, "symlinks"));
			facts->deleted_lines = dlines;
		}
		json_decref(rep);
		if (json) {                                          /* (S3) */
			json_t *j = modes_json(&r);
			CHECK(j != NULL);
			CHECK(json_integer_value(json_object_get(j, "exit")) == r.rc);
			json_decref(j);
		}
	}
	int rc = r.rc;
	modes_run_free(&r);
	return rc;
}

/* rel is OUTDIR-relative ("root/f", "deleted/gone"). */
static void read_out_file(const char *rel, char *buf, size_t cap, size_t *len)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", out_dir, rel);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, cap);
	CHECK(n >= 0);
	*len = (size_t)n;
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	if ((size_t)n == cap)
		*len = (size_t)st.st_size;
	close(fd);
}

/* Writes into free block T_STALE what a kernel leaves behind after
 * `rm /gone`: a leaf with the root directory item as it was (naming gone),
 * gone's stat data and its tail; the bitmap marks the block free. */
static void add_stale_leaf(void)
{
	uint8_t dir[200], sd_root[44], sd_gone[44], tail[24] = { 0 };
	struct t_dirent er[] = { { ".", 1, 2 }, { "..", 0, 1 }, { "d", 2, 3 }, { "f", 2, 4 },
				 { "l", 2, 5 }, { "n", 2, 7 }, { "gone", 2, 9 } };
	uint16_t lr = t_dir(dir, er, 7);
	t_stat(sd_root, 040755, 3, lr, 1);
	t_stat(sd_gone, 0100640, 1, strlen(T_GONE_TEXT), 1);
	memcpy(tail, T_GONE_TEXT, strlen(T_GONE_TEXT));
	const struct t_item it[] = {
		{ { 1, 2, 0, RFS_TYPE_STAT }, 0, sd_root, 44 },
		{ { 1, 2, 1, RFS_TYPE_DIRENTRY }, 7, dir, lr },
		{ { 2, 9, 0, RFS_TYPE_STAT }, 0, sd_gone, 44 },
		{ { 2, 9, 1, RFS_TYPE_DIRECT }, 0, tail, 24 },
	};
	CHECK(menv.img_size >= (size_t)(T_STALE + 1) * T_BS);
	t_leaf(menv.img + (size_t)T_STALE * T_BS, it, 4);
	write_all(menv.img_fd, menv.img + (size_t)T_STALE * T_BS, T_BS, (uint64_t)T_STALE * T_BS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (menv.img_fd < 0) {
		modes_setup("fuzz_salvage");
		snprintf(run_dir, sizeof(run_dir), "%s/run", menv.root);
		snprintf(mid_dir, sizeof(mid_dir), "%s/a", run_dir);
		snprintf(out_dir, sizeof(out_dir), "%s/out", mid_dir);
		CHECK(mkdir(run_dir, 0700) == 0);
		static const uint8_t pristine[6] = { 0, 0, 0, 0, 0, 0 };
		CHECK(modes_load(pristine, sizeof(pristine)));
		struct sv_facts f = { 0 };
		CHECK(run_salvage(&f) == 0);
		CHECK(f.files == 3 && f.dirs == 2 && f.symlinks == 1);
		char buf[64];
		size_t len;
		read_out_file("root/d/t", buf, sizeof(buf), &len);
		CHECK(len == strlen(modes_tail_in_log) && memcmp(buf, modes_tail_in_log, len) == 0);
		read_out_file("root/f", buf, sizeof(buf), &len);
		CHECK(len == T_FILE_SIZE);
		read_out_file("root/n", buf, sizeof(buf), &len);
		CHECK(len == T_HOLDER_SIZE);
		finish_run();
		/* --deleted finds the stale leaf, and nothing live changes */
		static const uint8_t with_deleted[6] = { 0, 16, 0, 0, 0, 0 };
		CHECK(modes_load(with_deleted, sizeof(with_deleted)));
		add_stale_leaf();
		struct sv_facts g = { 0 };
		CHECK(run_salvage(&g) == 0);
		CHECK(g.files == 3 && g.dirs == 2 && g.symlinks == 1 && g.deleted_lines == 1);
		read_out_file("deleted/gone", buf, sizeof(buf), &len);
		CHECK(len == strlen(T_GONE_TEXT) && memcmp(buf, T_GONE_TEXT, len) == 0);
		finish_run();
	}
	if (!modes_load(data, size))
		return 0;
	run_salvage(NULL);
	finish_run();
	return 0;
}

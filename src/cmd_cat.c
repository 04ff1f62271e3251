/*
 * cmd_cat.c - `rfsck cat`: a file's bytes to stdout.  Holes become zeros
 * (stdout may be a pipe, so they are written, in bounded chunks).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "rfs/object.h"

enum { OPT_CAT_NO_REPLAY = OPT_FIRST_COMMAND_OPTION };

struct cat_out {
	int fd;
	int sys_errno;
};

static int write_all(struct cat_out *o, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(o->fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->sys_errno = errno;
			return 1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int cat_piece(void *c, uint64_t off, const uint8_t *data, size_t len)
{
	static const uint8_t zeros[65536];
	struct cat_out *o = c;
	(void)off;
	if (data)
		return write_all(o, data, len);
	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		if (write_all(o, zeros, n))
			return 1;
		len -= n;
	}
	return 0;
}

int cmd_cat(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "no-replay", no_argument, NULL, OPT_CAT_NO_REPLAY },
		{ NULL, 0, NULL, 0 } };
	struct rfs_common_opts c = { 0 };
	bool replay = true;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qv", longopts, NULL)) != -1) {
		if (opt == OPT_HELP) {
			cli_print_command_help("cat", stdout);
			return RFS_EXIT_OK;
		}
		if (opt == OPT_CAT_NO_REPLAY) {
			replay = false;
			continue;
		}
		int k = cli_common_option("cat", opt, optarg, &c);
		if (k < 0)
			return RFS_EXIT_USAGE;
		if (k == 0)
			return cli_usage_error("cat", "unknown option");
	}
	if (argc - optind != 2)
		return cli_usage_error("cat", "expects IMAGE PATH");
	signal(SIGPIPE, SIG_IGN);

	struct rfs_fs *fs;
	struct rfs_error err;
	rfs_error_clear(&err);
	if (cli_open_readonly(argv[optind], &c, replay, NULL, NULL, &fs, &err))
		return cli_fail("cat", &err);
	int rc = RFS_EXIT_OK;
	struct rfs_cursor cur = { 0 };
	struct rfs_object obj;
	struct cat_out out = { .fd = STDOUT_FILENO };
	if (rfs_cursor_init(fs, &cur, &err) || rfs_path_resolve(&cur, argv[optind + 1], &obj, &err)) {
		rc = cli_fail("cat", &err);
		goto done;
	}
	enum rfs_file_type ft = rfs_mode_type(obj.sd.mode);
	if (ft != RFS_FT_REG && ft != RFS_FT_LNK) {
		rfs_error_set(&err, RFS_ERR_INVALID, RFS_NO_BLOCK, "%s is a %s, not a file",
			      argv[optind + 1], rfs_file_type_name(ft));
		rc = cli_fail("cat", &err);
		goto done;
	}
	if (rfs_object_read(&cur, &obj, cat_piece, &out, NULL, &err)) {
		rc = cli_fail("cat", &err);
		goto done;
	}
	if (out.sys_errno) {
		rfs_error_sys(&err, out.sys_errno, RFS_NO_BLOCK, "writing to stdout");
		rc = cli_fail("cat", &err);
	}
done:
	rfs_cursor_free(&cur);
	rfs_error_clear(&err);
	rfs_fs_close(fs, &err);
	return rc;
}

/*
 * cli_common.h - helpers shared by the command implementations in src/cmd_*.c:
 * the common long options, opening an image for a command, and JSON helpers.
 */
#ifndef RFS_CLI_COMMON_H
#define RFS_CLI_COMMON_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "rfs/cli.h"
#include "rfs/fs.h"

enum {
	OPT_OFFSET = 1000, OPT_MAPFILE, OPT_HASH, OPT_JSON, OPT_PROGRESS, OPT_HELP,
	OPT_NO_REPLAY, OPT_FIRST_COMMAND_OPTION = 1100,
};

#define CLI_COMMON_LONGOPTS                                          \
	{ "offset", required_argument, NULL, OPT_OFFSET },           \
	{ "mapfile", required_argument, NULL, OPT_MAPFILE },         \
	{ "hash", required_argument, NULL, OPT_HASH },               \
	{ "json", no_argument, NULL, OPT_JSON },                     \
	{ "progress", no_argument, NULL, OPT_PROGRESS },             \
	{ "quiet", no_argument, NULL, 'q' },                         \
	{ "verbose", no_argument, NULL, 'v' },                       \
	{ "help", no_argument, NULL, OPT_HELP }

/* Handles a common option.  Returns 1 if handled, 0 if not a common option,
 * -1 on a bad argument (message printed). */
int cli_common_option(const char *cmd, int opt, const char *arg, struct rfs_common_opts *c);

/* Prints "rfsck CMD: message" and returns RFS_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens IMAGE read-only for a reading command, replaying the journal into
 * memory when replay is true. */
rfs_status cli_open_readonly(const char *image, const struct rfs_common_opts *c, bool replay,
			     rfs_fault_fn sb_fault, void *ctx, struct rfs_fs **fs,
			     struct rfs_error *err);

/* JSON string of arbitrary name bytes (escaped as by sb_add_escaped). */
json_t *cli_json_name(const uint8_t *name, size_t n);
/* JSON string of the hex of bytes. */
json_t *cli_json_hex(const uint8_t *data, size_t n);
/* Prints obj on stdout followed by a newline and releases it; 0 or -1. */
int cli_json_print(json_t *obj);

/* The extent of data at or after pos in fd: [*start, *end); false at the
 * end of the file.  Where the file system answers SEEK_DATA/SEEK_HOLE, the
 * bytes between two extents are a hole and read as zeros.  Files without it
 * (block devices, old file systems) are one extent to the end (*end = -1:
 * read until read() says end of file); *seekable starts true and turns false
 * then. */
bool cli_next_data(int fd, off_t pos, bool *seekable, off_t *start, off_t *end);

/* Copies src to dst (which must not exist) for --output: a reflink where the
 * file system has them (*cloned set; cloned may be NULL), else a sparse copy
 * that leaves holes and all-zero 1 MiB runs as holes; not synced (the
 * caller's device close does). */
rfs_status cli_copy_sparse(const char *src, const char *dst, bool *cloned, struct rfs_error *err);
/* The same copy on a thread of its own, for `rebuild --output`, whose
 * read-only stages read the source meanwhile.  cli_copy_start creates dst (it
 * must not exist) before it returns; cli_copy_finish waits for the thread and
 * frees the job: the copy's status, or with cancel=true it stops the copy at
 * the next 1 MiB and returns RFS_OK (dst is then partial: the caller unlinks
 * it).  *cloned (cloned may be NULL) says whether the copy is a reflink.  A
 * NULL job finishes at once. */
struct cli_copy_job;
rfs_status cli_copy_start(const char *src, const char *dst, struct cli_copy_job **job,
			  struct rfs_error *err);
rfs_status cli_copy_finish(struct cli_copy_job *job, bool cancel, bool *cloned,
			   struct rfs_error *err);
/* Makes the superblock's block count, magic and UUID immutable through the
 * device (and records them in the undo log). */
rfs_status cli_set_identity(struct rfs_fs *fs, struct rfs_error *err);
/* true when yes, else asks question on a terminal; false without one. */
bool cli_confirm(const char *cmd, const char *question, bool yes);

/* Prints a command's help text (from the table in main.c). */
void cli_print_command_help(const char *cmd, FILE *out);

#endif

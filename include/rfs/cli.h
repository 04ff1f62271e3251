/*
 * cli.h - what every rfsck sub-command shares: exit codes, the entry points of
 * the commands, and the option parsing helpers for the common options.
 *
 * Exit codes follow reiserfsck so that rfsck can stand in for it.  A command
 * derives its code from what it found and fixed, never from ad hoc returns.
 */
#ifndef RFS_CLI_H
#define RFS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rfs/status.h"

enum rfs_exit {
	RFS_EXIT_OK = 0,             /* no problems */
	RFS_EXIT_CORRECTED = 1,      /* problems found and corrected */
	RFS_EXIT_NEEDS_REBUILD = 4,  /* problems left that need rebuild */
	RFS_EXIT_FIXABLE = 6,        /* problems left that fix repairs */
	RFS_EXIT_OPERATIONAL = 8,    /* cannot read, not ReiserFS, I/O error */
	RFS_EXIT_USAGE = 16,         /* bad command line */
	RFS_EXIT_CANCELLED = 32,     /* interrupted or declined */
};

/* Options every command accepts (architecture page, "Command line"). */
struct rfs_common_opts {
	uint64_t offset;             /* --offset BYTES */
	const char *mapfile;         /* --mapfile FILE */
	int hash_code;               /* --hash: 0 = from superblock, else 1..3 */
	int quiet;                   /* -q */
	int progress;                /* --progress (force on) */
	int json;                    /* --json */
	int verbose;                 /* -v */
};

/* Each command takes argv with argv[0] = the command name and returns an exit
 * code from enum rfs_exit.  Errors are printed by the command itself. */
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_fix(int argc, char **argv);
int cmd_undo(int argc, char **argv);
int cmd_salvage(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);

/* Maps an operational failure to a one-line message on stderr and exit 8. */
int cli_fail(const char *cmd, const struct rfs_error *err);

/* Parses a byte count with optional K/M/G/s(512) suffix; 0 on success. */
int cli_parse_bytes(const char *s, uint64_t *out);

#endif

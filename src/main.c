/*
 * main.c - rfsck's entry point: runs the built-in self-tests, then dispatches
 * to the command named by the first argument.  This is the only place allowed
 * to exit on its own (die()).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "rfs/hash.h"
#include "rfs/version.h"


struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

static const struct command commands[] = {
	{ "info", cmd_info, "info [--json] IMAGE",
	  "Show the superblock, geometry and journal state of a ReiserFS image.\n"
	  "Reads only; pending journal transactions are counted, not replayed.\n" },
	{ "ls", cmd_ls, "ls [-l] [-R] [--json] [--no-replay] IMAGE [PATH]",
	  "List a directory (or one file) of the image, sorted by name.\n"
	  "  -l           long format: mode, links, uid, gid, size, mtime, [dirid objectid]\n"
	  "  -R           recurse; print full paths\n"
	  "  --json       one JSON object: {\"entries\": [...]} with path, path_hex, type,\n"
	  "               size, mode, uid, gid, atime, mtime, ctime, nlink, dirid,\n"
	  "               objectid, target_hex (symlinks), rdev (devices)\n"
	  "  --no-replay  show the on-disk state without the journal's pending\n"
	  "               transactions (default: replayed in memory, as the kernel would)\n"
	  "Names are printed with control bytes and invalid UTF-8 escaped as \\xNN.\n" },
	{ "cat", cmd_cat, "cat [--no-replay] IMAGE PATH",
	  "Write the contents of a regular file (or a symlink's target) to stdout.\n"
	  "Holes are written as zeros.  Symlinks in PATH are not followed.\n" },
	{ "check", cmd_check, "check [--json] [-q] [-v] [--max-problems N] IMAGE",
	  "Read-only consistency check: superblock, journal, tree structure, items,\n"
	  "bitmaps, objectid map and namespace.  Never writes: committed journal\n"
	  "transactions are replayed in memory only.  Exit 0 clean, 6 fixable\n"
	  "problems, 4 problems that need rebuild, 8 cannot check.\n"
	  "  -v           list every problem (default: the first 5 of each code)\n"
	  "  --json       one JSON object: verdict, exit, statistics, problems[]\n"
	  "  --max-problems N  stop after N problems; the verdict then covers only\n"
	  "               what was checked (said in the text; JSON \"complete\": false)\n" },
	{ "fix", cmd_fix,
	  "fix [--dry-run | --yes] [--undo FILE | --no-undo] [--output NEW] [--relink] [--json] IMAGE",
	  "Repair the problems check marks fixable, and nothing else; when the tree\n"
	  "needs a rebuild, repair nothing and exit 4.  Writes go through an undo log\n"
	  "(default IMAGE.rfsck-undo; `rfsck undo` restores the image), or into a new\n"
	  "image (--output NEW, IMAGE untouched: a reflink where the file system has\n"
	  "them, else a sparse copy), or nowhere (--dry-run, which\n"
	  "lists every repair and every block it would write).  Asks on a terminal;\n"
	  "--yes for scripts.  Exit 1 when a new check of the result is clean.\n"
	  "Pending safe links are finished as the kernel's mount would (unlinks\n"
	  "delete the object, truncates cut the file); tree changes are journaled.\n"
	  "  --relink     link objects no name reaches into /lost+found (made if\n"
	  "               missing) as DIRID_OBJECTID; without it they are only reported\n" },
	{ "salvage", cmd_salvage, "salvage [--json] [-q] [--force] [--devices] [--deleted] [--scan] [--index DB] [--offset BYTES] [--mapfile MAP] IMAGE OUTDIR",
	  "Copy every file, directory and symlink of the image into OUTDIR/root,\n"
	  "with modes, owners (as root), times, hard links and holes, and write\n"
	  "OUTDIR/manifest.jsonl (one line per object: path, path_hex, key, type,\n"
	  "stat fields, sha256, target_hex, status, blocks, extracted_as), a Sleuth\n"
	  "Kit body file OUTDIR/bodyfile (mactime -b) and OUTDIR/report.json (totals,\n"
	  "problems, image SHA-256 before and after).  The image is opened read-only\n"
	  "and the journal replayed in memory only.  Names that cannot be stored are\n"
	  "escaped ('%' '/' NUL -> %XX, \".\" -> %2E); nothing is written outside OUTDIR.\n"
	  "Exit 0 all extracted, 4 some objects unreadable (the rest extracted),\n"
	  "8 operational error, 16 OUTDIR not empty.\n"
	  "When a read-only check finds damaged tree nodes, the files come from a tree\n"
	  "rebuilt in memory from the scanned leaves (rebuild's evidence rules, nothing\n"
	  "written); objects no name reaches go to OUTDIR/lost+found/DIRID_OBJECTID.EXT\n"
	  "(extension from libmagic, status \"orphan\").\n"
	  "  --scan       use the scanned leaves even if the tree looks intact\n"
	  "  --index DB   share rebuild's evidence index (no rescan after a dry run)\n"
	  "  --force      salvage into a non-empty OUTDIR (OUTDIR/root must not exist)\n"
	  "  --devices    create device nodes, FIFOs and sockets (default: manifest only)\n"
	  "  --deleted    also recover deleted objects from stale leaves (blocks the bitmap\n"
	  "               marks free, leaf copies in the journal) into OUTDIR/deleted,\n"
	  "               status \"deleted\"; data blocks in use now are left as missing\n"
	  "  --mapfile M  ddrescue map: blocks not rescued are written as zeros, listed as\n"
	  "               missing ranges, and the file's status is \"partial\"\n"
	  "  --json       one JSON summary object on stdout\n" },
	{ "rebuild", cmd_rebuild,
	  "rebuild [--dry-run | --yes] [--undo FILE | --no-undo] [--output NEW] [--index DB]\n"
	  "        [--scan used|all] [--report FILE] [--json] [-q] IMAGE",
	  "Rebuild the tree from the leaves found on the device, on evidence kept in an\n"
	  "SQLite index: structure, directory names that hash to their offsets, content\n"
	  "checksums, and no claim on the block by a file's data or a nested filesystem\n"
	  "(an image stored on the volume never joins the outer tree).  Unchanged leaves\n"
	  "stay in place; objects no name reaches go to /lost+found/<dirid>_<objectid>.\n"
	  "Writes go through an undo log (default IMAGE.rfsck-undo), or into a new\n"
	  "image (--output NEW: a reflink of IMAGE on btrfs or XFS, else a sparse\n"
	  "copy), or nowhere (--dry-run: the reconstruction report\n"
	  "only).  Asks on a terminal; --yes for scripts.  Exit 1 rebuilt and clean,\n"
	  "0 dry run done, 8 operational error (nothing usable found, unreadable).\n"
	  "  --scan used|all  blocks marked used (default when the bitmaps look sound)\n"
	  "                   or every block\n"
	  "  --index DB       keep the index in DB (sqlite3); a rerun on the same image\n"
	  "                   resumes from it instead of scanning again\n"
	  "  --report FILE    also write the text report to FILE\n"
	  "  --json           the report as one JSON object\n" },
	{ "undo", cmd_undo, "undo [--dry-run] [--force] [--json] UNDOFILE IMAGE",
	  "Restore the blocks saved in an undo file written by fix or rebuild.\n"
	  "Refuses an undo file that does not verify or belongs to another image.\n" },
};


static void usage(FILE *out)
{
	fprintf(out, "usage: rfsck COMMAND [options] IMAGE ...\n\n"
		     "rfsck checks, repairs, rebuilds and salvages ReiserFS v3 volumes (3.5, 3.6).\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  rfsck %s\n", commands[i].synopsis);
	fprintf(out, "\nCommon options: --offset BYTES (filesystem starts inside the file),\n"
		     "  --mapfile DDRESCUE.map, --hash r5|tea|rupasov, -q, -v, --json, --help\n"
		     "\nExit status: 0 no problems, 1 corrected, 4 needs rebuild, 6 fixable,\n"
		     "  8 operational error, 16 usage error, 32 cancelled.\n"
		     "'rfsck COMMAND --help' describes one command; see also rfsck(8).\n");
}

void cli_print_command_help(const char *cmd, FILE *out)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmd) == 0)
			fprintf(out, "usage: rfsck %s\n\n%s\nCommon options: --offset BYTES, "
				     "--mapfile FILE, --hash r5|tea|rupasov, -q, -v\n",
				commands[i].synopsis, commands[i].help);
}

static void __attribute__((noreturn, format(printf, 2, 3))) die(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("rfsck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return RFS_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return RFS_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("rfsck %s\n", RFSCK_VERSION);
		return RFS_EXIT_OK;
	}

	/* Known-answer tests before any verdict depends on them (style habit 18). */
	struct rfs_error err;
	rfs_error_clear(&err);
	if (rfs_hash_selftest(&err) != RFS_OK)
		die(RFS_EXIT_OPERATIONAL, "%s; refusing to run", err.msg);

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmd) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "rfsck: unknown command '%s'\n", cmd);
	usage(stderr);
	return RFS_EXIT_USAGE;
}

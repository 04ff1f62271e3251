/*
 * cli.c - option handling and output helpers shared by the commands.
 */
#include "cli_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/hash.h"
#include "rfs/strbuf.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "rfsck %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'rfsck %s --help'.\n", cmd);
	return RFS_EXIT_USAGE;
}

int cli_fail(const char *cmd, const struct rfs_error *err)
{
	char line[400];
	rfs_error_format(err, line, sizeof(line));
	fprintf(stderr, "rfsck %s: %s\n", cmd, line);
	return err->status == RFS_ERR_CANCELLED ? RFS_EXIT_CANCELLED : RFS_EXIT_OPERATIONAL;
}

int cli_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	uint64_t mul = 1;
	if (*end) {
		switch (*end) {
		case 's': mul = 512; break;
		case 'k': case 'K': mul = 1024; break;
		case 'm': case 'M': mul = 1024 * 1024; break;
		case 'g': case 'G': mul = 1024ull * 1024 * 1024; break;
		case 't': case 'T': mul = 1024ull * 1024 * 1024 * 1024; break;
		default: return -1;
		}
		if (end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
			return -1;
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

int cli_common_option(const char *cmd, int opt, const char *arg, struct rfs_common_opts *c)
{
	switch (opt) {
	case OPT_OFFSET:
		if (cli_parse_bytes(arg, &c->offset)) {
			cli_usage_error(cmd, "--offset takes a byte count, not '%s'", arg);
			return -1;
		}
		return 1;
	case OPT_MAPFILE:
		c->mapfile = arg;
		return 1;
	case OPT_HASH:
		c->hash_code = (int)rfs_hash_code_from_name(arg);
		if (!c->hash_code) {
			cli_usage_error(cmd, "--hash takes r5, tea or rupasov, not '%s'", arg);
			return -1;
		}
		return 1;
	case OPT_JSON: c->json = 1; return 1;
	case OPT_PROGRESS: c->progress = 1; return 1;
	case 'q': c->quiet = 1; return 1;
	case 'v': c->verbose++; return 1;
	default: return 0;
	}
}

rfs_status cli_open_readonly(const char *image, const struct rfs_common_opts *c, bool replay,
			     rfs_fault_fn sb_fault, void *ctx, struct rfs_fs **fs,
			     struct rfs_error *err)
{
	struct rfs_fs_options o = {
		.dev = { .path = image, .offset = c->offset, .flags = 0, .mapfile = c->mapfile },
		.replay = replay,
		.hash_override = (unsigned)c->hash_code,
		.sb_fault = sb_fault,
		.sb_fault_ctx = ctx,
	};
	return rfs_fs_open(&o, fs, err);
}

json_t *cli_json_name(const uint8_t *name, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j = NULL;
	if (sb_add_escaped(&sb, name, n) == RFS_OK)
		j = json_string(sb_str(&sb));
	sb_free(&sb);
	return j;
}

json_t *cli_json_hex(const uint8_t *data, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j = NULL;
	if (sb_add_hex(&sb, data, n) == RFS_OK)
		j = json_string(sb_str(&sb));
	sb_free(&sb);
	return j;
}

int cli_json_print(json_t *obj)
{
	if (!obj)
		return -1;
	int rc = json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (rc == 0 && fputc('\n', stdout) == EOF)
		rc = -1;
	return rc;
}

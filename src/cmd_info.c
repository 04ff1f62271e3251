/*
 * cmd_info.c - `rfsck info`: what the superblock and journal say.
 * Opens the image read-only and replays nothing; pending transactions are
 * counted.  Superblock problems found on the way are listed by code.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "rfs/hash.h"
#include "rfs/strbuf.h"

enum { INFO_MAX_FAULTS = 32 };

struct fault_list {
	struct rfs_fault f[INFO_MAX_FAULTS];
	int n;
};

static void collect_fault(void *c, const struct rfs_fault *f)
{
	struct fault_list *l = c;
	if (l->n < INFO_MAX_FAULTS)
		l->f[l->n++] = *f;
}

static const char *format_name(const struct rfs_super *sb)
{
	return sb->format == RFS_FORMAT_35 ? "3.5" : "3.6";
}

static void uuid_str(const uint8_t *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

static const char *time_str(uint32_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!t || !gmtime_r(&tt, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, n, "never");
	return buf;
}

static json_t *info_json(const struct rfs_fs *fs, const struct fault_list *fl)
{
	const struct rfs_super *sb = &fs->sb;
	char uuid[40];
	uuid_str(sb->uuid, uuid);
	size_t label_len = strnlen((const char *)sb->label, sizeof(sb->label));
	size_t magic_len = strnlen((const char *)sb->magic, sizeof(sb->magic));
	json_t *problems = json_array();
	for (int i = 0; i < fl->n; i++) {
		const struct rfs_problem_def *d = rfs_problem_def(fl->f[i].code);
		json_array_append_new(problems, json_pack("{s:s, s:s, s:I, s:I}", "code", d->name,
							  "severity", rfs_severity_name(d->severity),
							  "expected", (json_int_t)fl->f[i].expected,
							  "found", (json_int_t)fl->f[i].found));
	}
	const struct rfs_journal_state *j = &fs->journal;
	json_t *journal = json_pack(
		"{s:b, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:I, s:I, s:I, s:I, s:b}",
		"standard", sb->magic_kind != RFS_MAGIC_JR, "device", (json_int_t)sb->j_dev,
		"first_block", (json_int_t)sb->j_first, "size", (json_int_t)sb->j_size,
		"header_block", (json_int_t)rfs_super_journal_header_block(sb),
		"trans_max", (json_int_t)sb->j_trans_max, "header_valid", j->header_valid,
		"header_matches_superblock", j->header_matches_sb,
		"pending_transactions", (json_int_t)j->pending,
		"pending_blocks", (json_int_t)j->pending_blocks,
		"first_pending_trans_id", (json_int_t)j->first_trans_id,
		"last_pending_trans_id", (json_int_t)j->last_trans_id, "broken", j->broken);
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string(format_name(sb)));
	json_object_set_new(o, "magic", cli_json_name(sb->magic, magic_len));
	json_object_set_new(o, "superblock_offset", json_integer((json_int_t)sb->sb_byte_offset));
	json_object_set_new(o, "block_size", json_integer(sb->blocksize));
	json_object_set_new(o, "block_count", json_integer(sb->block_count));
	json_object_set_new(o, "device_blocks", json_integer((json_int_t)rfs_dev_block_count(fs->dev)));
	json_object_set_new(o, "free_blocks", json_integer(sb->free_blocks));
	json_object_set_new(o, "root_block", json_integer(sb->root_block));
	json_object_set_new(o, "tree_height", json_integer(sb->tree_height));
	json_object_set_new(o, "hash", json_string(rfs_hash_name(sb->hash_code)));
	json_object_set_new(o, "hash_code", json_integer(sb->hash_code));
	json_object_set_new(o, "bitmap_blocks", json_integer(sb->bmap_count));
	json_object_set_new(o, "bitmap_blocks_field", json_integer(sb->bmap_nr));
	json_object_set_new(o, "objectid_map_entries", json_integer(sb->oid_cursize));
	json_object_set_new(o, "objectid_map_capacity", json_integer(sb->oid_maxsize));
	json_object_set_new(o, "umount_state", json_integer(sb->umount_state));
	json_object_set_new(o, "fs_state", json_integer(sb->fs_state));
	json_object_set_new(o, "version", json_integer(sb->version));
	if (sb->format == RFS_FORMAT_36) {
		json_object_set_new(o, "uuid", json_string(uuid));
		json_object_set_new(o, "label", cli_json_name(sb->label, label_len));
		json_object_set_new(o, "flags", json_integer(sb->flags));
		json_object_set_new(o, "mount_count", json_integer(sb->mnt_count));
		json_object_set_new(o, "max_mount_count", json_integer(sb->max_mnt_count));
		json_object_set_new(o, "last_check", json_integer(sb->lastcheck));
		json_object_set_new(o, "inode_generation", json_integer(sb->inode_generation));
	}
	json_object_set_new(o, "journal", journal);
	json_object_set_new(o, "problems", problems);
	return o;
}

static void info_text(const struct rfs_fs *fs, const struct fault_list *fl)
{
	const struct rfs_super *sb = &fs->sb;
	const struct rfs_journal_state *j = &fs->journal;
	struct strbuf s = STRBUF_INIT;
	char uuid[40], tb[64];
	uuid_str(sb->uuid, uuid);
	sb_add_escaped(&s, sb->magic, strnlen((const char *)sb->magic, sizeof(sb->magic)));
	printf("Format:            ReiserFS %s (magic \"%s\", version field %u)\n",
	       format_name(sb), sb_str(&s), sb->version);
	sb_truncate(&s, 0);
	printf("Superblock:        byte %llu (block %u)%s\n", (unsigned long long)sb->sb_byte_offset,
	       sb->sb_block, sb->old_layout ? ", old 3.5 layout" : "");
	printf("Block size:        %u\n", sb->blocksize);
	printf("Blocks:            %u (%llu bytes); device holds %llu blocks\n", sb->block_count,
	       (unsigned long long)sb->block_count * sb->blocksize,
	       (unsigned long long)rfs_dev_block_count(fs->dev));
	printf("Free blocks:       %u\n", sb->free_blocks);
	printf("Root block:        %u, tree height %u\n", sb->root_block, sb->tree_height);
	printf("Hash:              %s (code %u)\n", rfs_hash_name(sb->hash_code), sb->hash_code);
	printf("Bitmap blocks:     %u (field says %u)\n", sb->bmap_count, sb->bmap_nr);
	printf("Objectid map:      %u of %u entries used\n", sb->oid_cursize, sb->oid_maxsize);
	printf("State:             %s, fs_state %u\n",
	       sb->umount_state == 1 ? "cleanly unmounted" : "not cleanly unmounted", sb->fs_state);
	if (sb->format == RFS_FORMAT_36) {
		sb_add_escaped(&s, sb->label, strnlen((const char *)sb->label, sizeof(sb->label)));
		printf("UUID:              %s\n", uuid);
		printf("Label:             \"%s\"\n", sb_str(&s));
		printf("Mounts:            %u of max %u; last check %s\n", sb->mnt_count,
		       sb->max_mnt_count, time_str(sb->lastcheck, tb, sizeof(tb)));
	}
	if (sb->j_dev)
		printf("Journal:           on device 0x%x (external; not read)\n", sb->j_dev);
	else
		printf("Journal:           %s, blocks %u..%llu (%u log blocks + header at %llu), "
		       "max %u blocks per transaction\n",
		       sb->magic_kind == RFS_MAGIC_JR ? "non-standard" : "standard", sb->j_first,
		       (unsigned long long)rfs_super_journal_header_block(sb), sb->j_size,
		       (unsigned long long)rfs_super_journal_header_block(sb), sb->j_trans_max);
	if (j->pending)
		printf("Pending:           %u committed transaction(s) (ids %u..%u, %u blocks) "
		       "not written home%s\n", j->pending, j->first_trans_id, j->last_trans_id,
		       j->pending_blocks, j->broken ? "; replay stops at a broken one" : "");
	else
		printf("Pending:           no committed transactions to replay%s\n",
		       j->broken ? " (a broken transaction blocks replay)" : "");
	if (!j->header_matches_sb && !sb->j_dev)
		printf("Journal header:    parameters differ from the superblock's\n");
	for (int i = 0; i < fl->n; i++) {
		const struct rfs_problem_def *d = rfs_problem_def(fl->f[i].code);
		printf("Note:              %s (%s): expected %llu, found %llu\n", d->name,
		       rfs_severity_name(d->severity), (unsigned long long)fl->f[i].expected,
		       (unsigned long long)fl->f[i].found);
	}
	sb_free(&s);
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = { CLI_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	struct rfs_common_opts c = { 0 };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "qv", longopts, NULL)) != -1) {
		if (opt == OPT_HELP) {
			cli_print_command_help("info", stdout);
			return RFS_EXIT_OK;
		}
		int r = cli_common_option("info", opt, optarg, &c);
		if (r < 0)
			return RFS_EXIT_USAGE;
		if (r == 0)
			return cli_usage_error("info", "unknown option");
	}
	if (argc - optind != 1)
		return cli_usage_error("info", "expects one IMAGE");
	struct fault_list fl = { .n = 0 };
	struct rfs_fs *fs;
	struct rfs_error err;
	rfs_error_clear(&err);
	if (cli_open_readonly(argv[optind], &c, false, collect_fault, &fl, &fs, &err))
		return cli_fail("info", &err);
	int rc = RFS_EXIT_OK;
	if (c.json) {
		if (cli_json_print(info_json(fs, &fl)))
			rc = RFS_EXIT_OPERATIONAL;
	} else {
		info_text(fs, &fl);
	}
	rfs_error_clear(&err);
	if (rfs_fs_close(fs, &err))
		return cli_fail("info", &err);
	return rc;
}

/* test_mapfile.c - the ddrescue mapfile parser: accepted syntax, what counts
 * as unreadable (non-'+', gaps, past the end), and refusal of malformed maps
 * with the line number. */
#include "testutil.h"

#include "rfs/mapfile.h"

static struct rfs_mapfile *parse_ok(const char *text)
{
	struct rfs_mapfile *m = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	rfs_status st = rfs_mapfile_parse(text, strlen(text), &m, &err);
	if (st)
		fprintf(stderr, "unexpected: %s\n", err.msg);
	assert_int_equal(st, RFS_OK);
	assert_non_null(m);
	return m;
}

/* Expects refusal with status st and the given line number. */
static void parse_bad(const char *text, rfs_status want, uint64_t line)
{
	struct rfs_mapfile *m = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_mapfile_parse(text, strlen(text), &m, &err), want);
	assert_null(m);
	assert_int_equal(err.status, want);
	assert_int_equal(err.block, line);
	char needle[32];
	snprintf(needle, sizeof(needle), "line %llu", (unsigned long long)line);
	assert_non_null(strstr(err.msg, needle));
}

static const char *typical =
	"# Mapfile. Created by GNU ddrescue version 1.27\n"
	"# Command line: ddrescue -d /dev/sdb disk.img disk.map\n"
	"# Start time:   2024-01-01 10:00:00\n"
	"# current_pos  current_status  current_pass\n"
	"0x00120000     +               1\n"
	"#      pos        size  status\n"
	"0x00000000  0x00100000  +\n"
	"0x00100000  0x00001000  -\n"
	"0x00101000  0x00001000  /\n"
	"0x00102000  0x0001E000  +\n"
	"0x00120000  0x00010000  ?\n"
	"0x00130000  0x000D0000  +\n";

static void test_typical(void **state)
{
	(void)state;
	struct rfs_mapfile *m = parse_ok(typical);
	assert_int_equal(m->nbad, 2);	/* '-' and '/' are adjacent: merged */
	assert_int_equal(m->bad[0].pos, 0x100000);
	assert_int_equal(m->bad[0].size, 0x2000);
	assert_int_equal(m->bad[1].pos, 0x120000);
	assert_int_equal(m->covered_end, 0x200000);
	uint64_t bad = 0;
	assert_true(rfs_mapfile_readable(m, 0, 0x100000, &bad));
	assert_false(rfs_mapfile_readable(m, 0xff000, 0x2000, &bad));
	assert_int_equal(bad, 0x100000);
	assert_false(rfs_mapfile_readable(m, 0x101800, 16, &bad));
	assert_int_equal(bad, 0x101800);
	assert_true(rfs_mapfile_readable(m, 0x102000, 0x1e000, &bad));
	assert_false(rfs_mapfile_readable(m, 0x110000, 0x20000, &bad));
	assert_int_equal(bad, 0x120000);
	assert_true(rfs_mapfile_readable(m, 0x130000, 0xd0000, NULL));
	/* Past the last line: never read. */
	assert_false(rfs_mapfile_readable(m, 0x1ff000, 0x2000, &bad));
	assert_int_equal(bad, 0x200000);
	rfs_mapfile_free(m);
}

static void test_decimal_gaps_and_no_final_newline(void **state)
{
	(void)state;
	struct rfs_mapfile *m = parse_ok("0 ?\n0 4096 +\n8192 4096 +\r\n12288 100 *");
	uint64_t bad = 0;
	assert_true(rfs_mapfile_readable(m, 0, 4096, NULL));
	assert_false(rfs_mapfile_readable(m, 0, 8192, &bad));	/* gap 4096..8192 */
	assert_int_equal(bad, 4096);
	assert_false(rfs_mapfile_readable(m, 12288, 1, &bad));
	assert_int_equal(m->covered_end, 12388);
	assert_int_equal(m->finished_bytes, 8192);
	rfs_mapfile_free(m);
}

static void test_malformed(void **state)
{
	(void)state;
	parse_bad("# only comments\n", RFS_ERR_INVALID, 1);
	parse_bad("0x0 + 1\n0x0 0x10 X\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 +\n0x0 0x10 +\n0x8 0x10 +\n", RFS_ERR_INVALID, 3);	/* overlap */
	parse_bad("0x0 +\n0x100 0x10 +\n0x0 0x10 +\n", RFS_ERR_INVALID, 3);	/* order */
	parse_bad("0x0 +\n0x0 0 +\n", RFS_ERR_INVALID, 2);			/* empty */
	parse_bad("0x0 +\n0x0 0x10\n", RFS_ERR_INVALID, 2);			/* fields */
	parse_bad("0x0 +\n0x0 0x10 + extra\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 +\n0xzz 0x10 +\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 +\n0x 0x10 +\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 +\n-5 0x10 +\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 +\n0x0 0x10 ++\n", RFS_ERR_INVALID, 2);
	parse_bad("0x0 Q\n", RFS_ERR_INVALID, 1);
	parse_bad("\n\n0x0 + 1\n0xffffffffffffffff 0x10 +\n", RFS_ERR_INVALID, 4);
	parse_bad("0x0 +\n0x0 0x1ffffffffffffffff +\n", RFS_ERR_INVALID, 2);	/* > 64 bits */
}

static void test_limits(void **state)
{
	(void)state;
	char *text = malloc(RFS_MAPFILE_MAX_LINE + 64);
	assert_non_null(text);
	memcpy(text, "0 +\n# ", 6);
	memset(text + 6, 'x', RFS_MAPFILE_MAX_LINE);
	text[6 + RFS_MAPFILE_MAX_LINE] = '\0';
	parse_bad(text, RFS_ERR_LIMIT, 2);
	free(text);
	/* An embedded NUL is malformed, not the end of the text. */
	static const char nul[] = "0 +\n0 16 +\n16 16\0+\n";
	struct rfs_mapfile *m = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_mapfile_parse(nul, sizeof(nul) - 1, &m, &err), RFS_ERR_INVALID);
	assert_int_equal(err.block, 3);
}

static void test_load_missing_file(void **state)
{
	(void)state;
	struct rfs_mapfile *m = NULL;
	struct rfs_error err;
	rfs_error_clear(&err);
	assert_int_equal(rfs_mapfile_load("/nonexistent/x.map", &m, &err), RFS_ERR_IO);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_typical),
		cmocka_unit_test(test_decimal_gaps_and_no_final_newline),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_load_missing_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

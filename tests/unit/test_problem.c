/*
 * test_problem.c - invariants of the problem table (include/rfs/problem.h):
 * one row per code in enum order, unique upper-case names, a message for every
 * row, fix wording exactly for the FIXABLE rows, and only known placeholders.
 */
#include "testutil.h"

#include <ctype.h>

#include "rfs/problem.h"

static const char *const placeholders[] = { "block", "block2", "item", "entry", "key",
					    "expected", "found", "path", "name", "detail",
					    "found_octal", "expected_octal" };

static void check_placeholders(const char *tmpl)
{
	for (const char *p = strchr(tmpl, '{'); p; p = strchr(p + 1, '{')) {
		const char *e = strchr(p, '}');
		assert_non_null(e);
		bool known = false;
		for (size_t i = 0; i < sizeof(placeholders) / sizeof(placeholders[0]); i++)
			if ((size_t)(e - p - 1) == strlen(placeholders[i]) &&
			    strncmp(p + 1, placeholders[i], strlen(placeholders[i])) == 0)
				known = true;
		if (!known)
			fail_msg("unknown placeholder in \"%s\"", tmpl);
	}
}

static void test_table(void **state)
{
	(void)state;
	unsigned n;
	const struct rfs_problem_def *t = rfs_problem_table(&n);
	assert_int_equal(n, PR_CODE_COUNT);
	assert_null(rfs_problem_def(PR_NONE));
	assert_null(rfs_problem_def(PR_CODE_COUNT));
	for (unsigned i = 1; i < n; i++) {
		assert_int_equal(t[i].code, i);
		assert_ptr_equal(rfs_problem_def(t[i].code), &t[i]);
		assert_non_null(t[i].name);
		for (const char *c = t[i].name; *c; c++)
			assert_true(isupper((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_');
		for (unsigned j = 1; j < i; j++)
			assert_string_not_equal(t[i].name, t[j].name);
		assert_non_null(t[i].message);
		assert_true(strlen(t[i].message) > 10);
		check_placeholders(t[i].message);
		if (t[i].severity == RFS_SEV_FIXABLE) {
			assert_non_null(t[i].fix_done);
			assert_non_null(t[i].fix_would);
			assert_true(strncmp(t[i].fix_would, "would ", 6) == 0);
			check_placeholders(t[i].fix_done);
			check_placeholders(t[i].fix_would);
		} else {
			assert_null(t[i].fix_done);
			assert_null(t[i].fix_would);
		}
		assert_int_equal(rfs_problem_by_name(t[i].name), t[i].code);
		assert_string_not_equal(rfs_severity_name(t[i].severity), "unknown");
		assert_string_not_equal(rfs_problem_group_name(t[i].group), "unknown");
	}
	assert_int_equal(rfs_problem_by_name("PR_LEAF_BAD_FREE_SPACE"), PR_LEAF_BAD_FREE_SPACE);
	assert_int_equal(rfs_problem_by_name("NO_SUCH_PROBLEM"), PR_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_table) };
	return cmocka_run_group_tests_name("problem", tests, NULL, NULL);
}

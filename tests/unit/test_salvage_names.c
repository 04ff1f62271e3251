/* test_salvage_names.c - salvage's output-name rule (include/rfs/salvage.h):
 * every byte value round-trips, '/' and NUL never reach an output name, the
 * dot names and the empty name are escaped, over-long names are cut to 255
 * bytes with a digest suffix and stay distinct, and unescape refuses strings
 * that no name produces. */
#include "testutil.h"

#include "rfs/salvage.h"

static void check_output(const char *out, size_t olen)
{
	assert_true(olen >= 1 && olen <= SALVAGE_NAME_MAX);
	assert_int_equal(strlen(out), olen);         /* no NUL inside */
	assert_null(memchr(out, '/', olen));
	assert_false(strcmp(out, ".") == 0 || strcmp(out, "..") == 0);
}

static void round_trip(const uint8_t *name, size_t len)
{
	char out[SALVAGE_NAME_MAX + 1];
	uint8_t back[SALVAGE_NAME_MAX + 1];
	size_t blen = 0;
	size_t olen = salvage_name_escape(name, len, out, NULL);
	check_output(out, olen);
	assert_int_equal(salvage_name_unescape(out, back, &blen), RFS_OK);
	assert_int_equal(blen, len);
	assert_memory_equal(back, name, len);
}

/* Each byte value alone, between letters, and repeated. */
static void test_every_byte(void **state)
{
	(void)state;
	for (int b = 0; b < 256; b++) {
		uint8_t one[1] = { (uint8_t)b };
		uint8_t mid[3] = { 'a', (uint8_t)b, 'z' };
		uint8_t rep[80];
		memset(rep, b, sizeof(rep));
		if (b != '.')
			round_trip(one, 1);
		round_trip(mid, 3);
		round_trip(rep, sizeof(rep));
		char out[SALVAGE_NAME_MAX + 1];
		bool esc;
		salvage_name_escape(mid, 3, out, &esc);
		bool special = b == '/' || b == 0 || b == '%';
		assert_int_equal(esc, special);
		assert_int_equal(strlen(out), special ? 5 : 3);
	}
}

static void test_specials(void **state)
{
	(void)state;
	char out[SALVAGE_NAME_MAX + 1];
	bool esc = false;
	assert_int_equal(salvage_name_escape((const uint8_t *)".", 1, out, &esc), 3);
	assert_string_equal(out, "%2E");
	assert_true(esc);
	salvage_name_escape((const uint8_t *)"..", 2, out, &esc);
	assert_string_equal(out, "%2E%2E");
	salvage_name_escape((const uint8_t *)"", 0, out, &esc);
	assert_string_equal(out, "%");
	assert_true(esc);
	salvage_name_escape((const uint8_t *)"...", 3, out, &esc);
	assert_string_equal(out, "...");
	assert_false(esc);
	salvage_name_escape((const uint8_t *)"../../etc/passwd", 16, out, NULL);
	assert_string_equal(out, "..%2F..%2Fetc%2Fpasswd");
	salvage_name_escape((const uint8_t *)"a\0b", 3, out, NULL);
	assert_string_equal(out, "a%00b");
	salvage_name_escape((const uint8_t *)"100%", 4, out, NULL);
	assert_string_equal(out, "100%25");
	round_trip((const uint8_t *)".", 1);
	round_trip((const uint8_t *)"..", 2);
	round_trip((const uint8_t *)"", 0);
	round_trip((const uint8_t *)"%2E", 3);     /* the literal text, not a dot */
}

/* Strings no name escapes to are refused, so the rule is a bijection on
 * its image. */
static void test_unescape_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = { "", ".", "..", "a/b", "%", "%4", "%zz", "%41", "%2e",
					   "a%2E", "%2E%2E%2E", "x%2", "%2f" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t back[64];
		size_t n;
		rfs_status want = strcmp(bad[i], "%") == 0 ? RFS_OK : RFS_ERR_INVALID;
		assert_int_equal(salvage_name_unescape(bad[i], back, &n), want);
	}
}

/* Long names: fit in 255 bytes, never cut inside "%XX", distinct names stay
 * distinct, and names that fit are never cut. */
static void test_long_names(void **state)
{
	(void)state;
	uint8_t name[4096];
	char a[SALVAGE_NAME_MAX + 1], b[SALVAGE_NAME_MAX + 1];
	memset(name, 'x', sizeof(name));
	round_trip(name, 255);                       /* the kernel's limit fits as is */
	for (size_t len = 256; len <= sizeof(name); len += 613) {
		size_t la = salvage_name_escape(name, len, a, NULL);
		check_output(a, la);
		name[len - 1] = 'y';
		size_t lb = salvage_name_escape(name, len, b, NULL);
		check_output(b, lb);
		name[len - 1] = 'x';
		assert_true(strcmp(a, b) != 0);
		assert_non_null(strstr(a, "%+"));
	}
	/* every byte needing an escape: 85 '/' fit (255 bytes), 86 do not */
	memset(name, '/', 86);
	round_trip(name, 85);
	size_t l = salvage_name_escape(name, 86, a, NULL);
	check_output(a, l);
	char *suffix = strstr(a, "%+");
	assert_non_null(suffix);
	assert_int_equal((size_t)(suffix - a) % 3, 0);   /* cut at an escape boundary */
	assert_int_equal(strlen(suffix), 18);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_specials),
		cmocka_unit_test(test_unescape_rejects),
		cmocka_unit_test(test_long_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

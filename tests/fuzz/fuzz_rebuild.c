/*
 * fuzz_rebuild.c - libFuzzer harness for `rfsck rebuild --dry-run` on a whole
 * image (src/cmd_rebuild.c, rebuild/ and index/ with a temporary SQLite
 * index, libmagic on nested filesystems, then check's repair passes and a
 * check of the result, all in the in-memory overlay).
 *
 * Input: the patch list of modes_common.h.  Option bits (byte 1):
 *   bit 0      text report (-v) instead of --json
 *   bits 1-2   --hash (none, tea, rupasov, r5)
 *   bits 3-4   --scan: auto, used, all, auto
 *
 * Contracts (besides M1-M5 of modes_common.h, with the set {0, 8}):
 *  (R1) with --json and exit 0, stdout is one JSON object: "mode" is
 *       "dry-run", at least one leaf was accepted (else the run must exit 8
 *       with "no usable leaf"), the rejected leaves add up by reason, the new
 *       root lies inside the device, and "check_after" is "clean": the tree
 *       rebuild would write passes rfsck's own check (style.md habit 14);
 *  (R2) exit 0 in text mode prints a report on stdout;
 *  (R3) the temporary index and everything SQLite makes beside it are gone
 *       when the command returns (M4 with TMPDIR and SQLITE_TMPDIR private).
 * Known answer on the pristine template: exit 0, 2 leaves accepted, the
 * journal's copy of leaf B and the nested image's root leaf rejected (reasons
 * journal-copy and nested), the nested filesystem found at byte 548864 inside
 * /n, 6 objects reached by name, and the result checks clean.
 *
 * Strict by default: any check_after other than "clean" is a finding.
 * RFS_FUZZ_STRICT=0 tolerates a check_after that lists only JOURNAL_PENDING,
 * JOURNAL_HEADER_MISMATCH or JOURNAL_HEADER_BAD, the signature of finding F1
 * of docs/robustness.md (the check of the result reused the journal analysis
 * made at open, fs->journal, after rb_flush_journal and the repair passes had
 * written it away; fixed in src/cmd_rebuild.c).  The switch exists only to
 * get past a regression of F1 while fuzzing for something else; its
 * reproducers (tests/fuzz/regressions/rebuild/check-after-stale-journal-*)
 * still carry "env: RFS_FUZZ_STRICT=1" from when the tolerance was the
 * default.
 */
#include "modes_common.h"

static bool strict;

/* true when check_after ("exit N, K problem(s): CODE ...") lists only the
 * journal codes of F1 (see above), and all of them. */
static bool only_stale_journal_codes(const char *after)
{
	unsigned ex, k;
	int used = 0;
	if (sscanf(after, "exit %u, %u problem(s):%n", &ex, &k, &used) != 2 || !used || k > 6 ||
	    k == 0)
		return false;
	char codes[512];
	snprintf(codes, sizeof(codes), "%s", after + used);
	unsigned n = 0;
	for (char *save, *t = strtok_r(codes, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (strcmp(t, "JOURNAL_PENDING") && strcmp(t, "JOURNAL_HEADER_MISMATCH") &&
		    strcmp(t, "JOURNAL_HEADER_BAD"))
			return false;
		n++;
	}
	return n == k;
}

/* (R1); fills the known-answer facts for the template. */
struct rb_facts {
	json_int_t accepted, rejected_journal, rejected_nested, by_name, nested_offset;
	bool clean;
};

static void check_report(const struct modes_run *r, struct rb_facts *f)
{
	json_t *j = modes_json(r);
	CHECK(j != NULL);
	const char *mode = json_string_value(json_object_get(j, "mode"));
	CHECK(mode && strcmp(mode, "dry-run") == 0);
	json_t *leaves = json_object_get(j, "leaves");
	json_int_t acc = json_integer_value(json_object_get(leaves, "accepted"));
	json_int_t rej = json_integer_value(json_object_get(leaves, "rejected"));
	CHECK(acc >= 1);
	json_t *why = json_object_get(leaves, "rejected_by_reason");
	CHECK(json_is_object(why));
	json_int_t sum = 0;
	const char *k;
	json_t *v;
	json_object_foreach(why, k, v) {
		CHECK(json_integer_value(v) > 0);
		sum += json_integer_value(v);
	}
	CHECK(sum == rej);
	json_t *tree = json_object_get(j, "tree");
	json_int_t root = json_integer_value(json_object_get(tree, "root"));
	CHECK(root > 0 && (uint64_t)root < menv.img_size / 512);   /* inside the device */
	const char *after = json_string_value(json_object_get(j, "check_after"));
	CHECK(after != NULL);
	bool clean = strcmp(after, "clean") == 0;
	if (!clean && (strict || !only_stale_journal_codes(after))) {
		fprintf(stderr, "fuzz_rebuild: check of the rebuilt tree: %s\n", after);
		CHECK(clean);
	}
	if (f) {
		f->accepted = acc;
		f->rejected_journal = json_integer_value(json_object_get(why, "journal-copy"));
		f->rejected_nested = json_integer_value(json_object_get(why, "nested"));
		f->by_name = json_integer_value(json_object_get(json_object_get(j, "objects"),
								"by_name"));
		json_t *n0 = json_array_get(json_object_get(j, "nested"), 0);
		f->nested_offset = n0 ? json_integer_value(json_object_get(n0, "offset")) : -1;
		f->clean = clean;
	}
	json_decref(j);
}

static int run_rebuild(struct rb_facts *f)
{
	static const int allowed[] = { 0, 8, -1 };
	static const char *const scan[4] = { NULL, "--scan=used", "--scan=all", NULL };
	const char *argv[10];
	int n = 0;
	bool text = menv.flags & 1;
	argv[n++] = "rebuild";
	argv[n++] = "--dry-run";
	argv[n++] = text ? "-v" : "--json";
	if (modes_hash_arg())
		argv[n++] = modes_hash_arg();
	if (scan[(menv.flags >> 3) & 3])
		argv[n++] = scan[(menv.flags >> 3) & 3];
	argv[n++] = menv.img_path;
	argv[n] = NULL;
	struct modes_run r;
	modes_call(cmd_rebuild, argv, allowed, &r);
	modes_check_unchanged();
	if (r.rc == 0 && text)
		CHECK(r.out_len > 0 && strstr(r.out, "Reconstruction report") != NULL);   /* (R2) */
	else if (r.rc == 0)
		check_report(&r, f);                                                       /* (R1) */
	int rc = r.rc;
	modes_run_free(&r);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (menv.img_fd < 0) {
		modes_setup("fuzz_rebuild");
		const char *s = getenv("RFS_FUZZ_STRICT");
		strict = !(s && strcmp(s, "0") == 0);
		static const uint8_t pristine[6] = { 0, 0, 0, 0, 0, 0 };
		CHECK(modes_load(pristine, sizeof(pristine)));
		struct rb_facts f = { 0 };
		CHECK(run_rebuild(&f) == 0);
		CHECK(f.accepted == 2 && f.rejected_journal == 1 && f.rejected_nested == 1);
		CHECK(f.by_name == 6 && f.nested_offset == (json_int_t)(T_INNER_SB * T_BS - 65536));
	}
	if (!modes_load(data, size))
		return 0;
	run_rebuild(NULL);
	return 0;
}

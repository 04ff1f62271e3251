/*
 * report.c - problem_report(): counting, wording (from the problem table) and
 * the fix/no-fix answer.  See include/rfs/report.h for the invariants.
 */
#include "rfs/report.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/strbuf.h"

struct rfs_reporter {
	struct rfs_reporter_options opt;
	uint64_t count[PR_CODE_COUNT];
	uint64_t fixed[PR_CODE_COUNT];
	uint64_t total;
	json_t *records;
};

struct rfs_problem_ctx rfs_problem_ctx_none(void)
{
	struct rfs_problem_ctx c;
	memset(&c, 0, sizeof(c));
	c.block = c.block2 = RFS_NO_BLOCK;
	c.item = c.entry = -1;
	return c;
}

struct rfs_reporter *rfs_reporter_new(const struct rfs_reporter_options *opt)
{
	struct rfs_reporter *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->opt = *opt;
	if (!r->opt.shown_per_code)
		r->opt.shown_per_code = 5;
	if (opt->json) {
		r->records = json_array();
		if (!r->records) {
			free(r);
			return NULL;
		}
	}
	return r;
}

void rfs_reporter_free(struct rfs_reporter *r)
{
	if (!r)
		return;
	json_decref(r->records);
	free(r);
}

static void add_num(struct strbuf *sb, uint64_t v)
{
	sb_addf(sb, "%llu", (unsigned long long)v);
}

void rfs_problem_format(const struct rfs_problem_def *d, const char *tmpl,
			const struct rfs_problem_ctx *c, char *buf, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	(void)d;
	for (const char *p = tmpl; *p; p++) {
		const char *e;
		if (*p != '{' || !(e = strchr(p, '}'))) {
			sb_add(&sb, p, 1);
			continue;
		}
		size_t n = (size_t)(e - p - 1);
		const char *k = p + 1;
#define IS(s) (n == strlen(s) && strncmp(k, s, n) == 0)
		if (IS("block"))
			add_num(&sb, c->block);
		else if (IS("block2"))
			add_num(&sb, c->block2);
		else if (IS("item"))
			sb_addf(&sb, "%d", c->item);
		else if (IS("entry"))
			sb_addf(&sb, "%d", c->entry);
		else if (IS("expected"))
			add_num(&sb, c->expected);
		else if (IS("found"))
			add_num(&sb, c->found);
		else if (IS("found_octal"))      /* modes */
			sb_addf(&sb, "0%llo", (unsigned long long)c->found);
		else if (IS("expected_octal"))
			sb_addf(&sb, "0%llo", (unsigned long long)c->expected);
		else if (IS("key")) {
			char kb[80];
			rfs_key_format_str(&c->key, kb, sizeof(kb));
			sb_adds(&sb, c->has_key ? kb : "?");
		} else if (IS("path"))
			sb_add_escaped(&sb, (const uint8_t *)(c->path ? c->path : "?"),
				       strlen(c->path ? c->path : "?"));
		else if (IS("name"))
			sb_add_escaped(&sb, c->name ? c->name : (const uint8_t *)"", c->name_len);
		else if (IS("detail"))
			sb_adds(&sb, c->detail ? c->detail : "");
		else
			sb_add(&sb, p, n + 2);
#undef IS
		p = e;
	}
	snprintf(buf, len, "%s", sb_str(&sb));
	sb_free(&sb);
}

static json_t *record(const struct rfs_problem_def *d, const struct rfs_problem_ctx *c,
		      const char *message, const char *answer)
{
	json_t *o = json_object();
	json_object_set_new(o, "code", json_string(d->name));
	json_object_set_new(o, "severity", json_string(rfs_severity_name(d->severity)));
	json_object_set_new(o, "group", json_string(rfs_problem_group_name(d->group)));
	json_object_set_new(o, "message", json_string(message));
	json_object_set_new(o, "answer", json_string(answer));
	json_object_set_new(o, "fixed", json_false());
	if (c->block != RFS_NO_BLOCK)
		json_object_set_new(o, "block", json_integer((json_int_t)c->block));
	if (c->block2 != RFS_NO_BLOCK)
		json_object_set_new(o, "block2", json_integer((json_int_t)c->block2));
	if (c->item >= 0)
		json_object_set_new(o, "item", json_integer(c->item));
	if (c->entry >= 0)
		json_object_set_new(o, "entry", json_integer(c->entry));
	if (c->has_key)
		json_object_set_new(o, "key", json_pack("[I, I, I, s]", (json_int_t)c->key.dir_id,
							(json_int_t)c->key.objectid,
							(json_int_t)c->key.offset,
							rfs_item_type_name(c->key.type)));
	if (c->path) {
		struct strbuf sb = STRBUF_INIT;
		sb_add_escaped(&sb, (const uint8_t *)c->path, strlen(c->path));
		json_object_set_new(o, "path", json_string(sb_str(&sb)));
		sb_free(&sb);
	}
	if (c->expected || c->found) {
		json_object_set_new(o, "expected", json_integer((json_int_t)c->expected));
		json_object_set_new(o, "found", json_integer((json_int_t)c->found));
	}
	if (c->detail)
		json_object_set_new(o, "detail", json_string(c->detail));
	return o;
}

bool problem_report(struct rfs_reporter *r, enum rfs_problem_code code,
		    const struct rfs_problem_ctx *ctx)
{
	const struct rfs_problem_def *d = rfs_problem_def(code);
	if (!d)
		return false;
	r->count[code]++;
	r->total++;
	bool fixable = d->severity == RFS_SEV_FIXABLE && !d->fix_pending;
	bool declined = false;
	for (const enum rfs_problem_code *p = r->opt.declined; p && *p != PR_NONE; p++)
		declined = declined || *p == code;
	/* --dry-run repairs too, into the in-memory overlay, so that it can list
	 * exactly the blocks the real run would write; only the wording differs. */
	bool fix = r->opt.mode != RFS_MODE_CHECK && fixable && !declined;
	const char *answer = !fixable ? "none"
			   : fix ? "fix" : !declined && r->opt.mode == RFS_MODE_DRY_RUN ? "would fix" : "no";
	char msg[512];
	rfs_problem_format(d, d->message, ctx, msg, sizeof(msg));
	if (r->opt.text && (r->opt.verbose || r->count[code] <= r->opt.shown_per_code)) {
		char fixmsg[256] = "";
		if (fixable && declined && r->opt.mode != RFS_MODE_CHECK)
			snprintf(fixmsg, sizeof(fixmsg), "%s", r->opt.declined_note ? r->opt.declined_note : "left");
		else if (fixable && r->opt.mode != RFS_MODE_CHECK)
			rfs_problem_format(d, r->opt.mode == RFS_MODE_FIX ? d->fix_done : d->fix_would,
					   ctx, fixmsg, sizeof(fixmsg));
		else if (d->fix_pending && r->opt.mode != RFS_MODE_CHECK)
			snprintf(fixmsg, sizeof(fixmsg), "not repaired by this version");
		fprintf(r->opt.text, "%-9s %s: %s%s%s\n", rfs_severity_name(d->severity), d->name,
			msg, fixmsg[0] ? " -- " : "", fixmsg);
	}
	if (r->records)
		json_array_append_new(r->records, record(d, ctx, msg, answer));
	return fix;
}

void problem_fixed(struct rfs_reporter *r, enum rfs_problem_code code)
{
	if (code > PR_NONE && code < PR_CODE_COUNT) {
		r->fixed[code]++;
		if (r->records) {
			size_t n = json_array_size(r->records);
			for (size_t i = n; i-- > 0;) {
				json_t *o = json_array_get(r->records, i);
				const char *c = json_string_value(json_object_get(o, "code"));
				if (c && strcmp(c, rfs_problem_def(code)->name) == 0 &&
				    json_is_false(json_object_get(o, "fixed")) &&
				    strcmp(json_string_value(json_object_get(o, "answer")), "none") != 0) {
					json_object_set_new(o, "fixed", json_true());
					break;
				}
			}
		}
	}
}

bool rfs_reporter_exhausted(const struct rfs_reporter *r)
{
	return r->opt.max_problems && r->total >= r->opt.max_problems;
}

uint64_t rfs_reporter_count(const struct rfs_reporter *r, enum rfs_problem_code code)
{
	return code > PR_NONE && code < PR_CODE_COUNT ? r->count[code] : 0;
}

uint64_t rfs_reporter_total(const struct rfs_reporter *r, enum rfs_severity sev)
{
	uint64_t n = 0;
	for (int c = 1; c < PR_CODE_COUNT; c++)
		if (rfs_problem_def((enum rfs_problem_code)c)->severity == sev)
			n += r->count[c];
	return n;
}

uint64_t rfs_reporter_fixed(const struct rfs_reporter *r)
{
	uint64_t n = 0;
	for (int c = 1; c < PR_CODE_COUNT; c++)
		n += r->fixed[c];
	return n;
}

int rfs_report_exit(const struct rfs_reporter *r)
{
	bool rebuild = false, fixable = false, fixed = false;
	for (int c = 1; c < PR_CODE_COUNT; c++) {
		const struct rfs_problem_def *d = rfs_problem_def((enum rfs_problem_code)c);
		uint64_t left = r->count[c] - r->fixed[c];
		if (r->fixed[c])
			fixed = true;
		if (!left)
			continue;
		if (d->severity >= RFS_SEV_REBUILD)
			rebuild = true;
		else if (d->severity == RFS_SEV_FIXABLE)
			fixable = true;
	}
	if (rebuild)
		return 4;
	if (fixable)
		return 6;
	return fixed ? 1 : 0;
}

struct json_t *rfs_reporter_json(const struct rfs_reporter *r)
{
	return r->records;
}

void rfs_reporter_summary(const struct rfs_reporter *r, FILE *f)
{
	for (int c = 1; c < PR_CODE_COUNT; c++) {
		if (!r->count[c])
			continue;
		const struct rfs_problem_def *d = rfs_problem_def((enum rfs_problem_code)c);
		fprintf(f, "  %-28s %-13s %8llu", d->name, rfs_severity_name(d->severity),
			(unsigned long long)r->count[c]);
		if (r->fixed[c])
			fprintf(f, " (%llu fixed)", (unsigned long long)r->fixed[c]);
		fputc('\n', f);
	}
}

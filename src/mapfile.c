/*
 * mapfile.c - parser for GNU ddrescue mapfiles (see include/rfs/mapfile.h).
 *
 * Accepted syntax, strictly: lines starting with '#' are comments; blank lines
 * are ignored; the first other line is the current-position line
 * "POS STATUS [PASS]" (status one of ?*\/-FG+); every later line is
 * "POS SIZE STATUS" with status one of ?*\/-+, numbers in hex (0x prefix) or
 * decimal, ranges in ascending order without overlap and with SIZE > 0.
 * Anything else is refused with its line number: a map that is misread would
 * make rfsck trust bytes ddrescue never recovered.
 * Leaves behind: nothing but the returned map.
 */
#include "rfs/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest mapfile read into memory: 4 M lines of ~40 bytes fit easily. */
#define MAPFILE_MAX_BYTES (256u << 20)

struct map_builder {
	struct rfs_mapfile *m;
	size_t cap;
};

/* Adds [pos, pos + size) to the bad list, merging with the previous range. */
static rfs_status add_bad(struct map_builder *b, uint64_t pos, uint64_t size, struct rfs_error *err)
{
	struct rfs_mapfile *m = b->m;
	if (m->nbad && m->bad[m->nbad - 1].pos + m->bad[m->nbad - 1].size == pos) {
		m->bad[m->nbad - 1].size += size;
		return RFS_OK;
	}
	if (m->nbad == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 16;
		struct rfs_map_range *p = realloc(m->bad, ncap * sizeof(*p));
		if (!p)
			return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "mapfile ranges");
		m->bad = p;
		b->cap = ncap;
	}
	m->bad[m->nbad++] = (struct rfs_map_range){ pos, size };
	return RFS_OK;
}

/* Parses one unsigned number token (hex with 0x, else decimal); 0 on success. */
static int parse_number(const char *tok, uint64_t *out)
{
	int base = 10;
	if (tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')) {
		base = 16;
		tok += 2;
	}
	if (!*tok)
		return -1;
	uint64_t v = 0;
	for (; *tok; tok++) {
		unsigned d;
		if (*tok >= '0' && *tok <= '9')
			d = (unsigned)(*tok - '0');
		else if (base == 16 && *tok >= 'a' && *tok <= 'f')
			d = (unsigned)(*tok - 'a' + 10);
		else if (base == 16 && *tok >= 'A' && *tok <= 'F')
			d = (unsigned)(*tok - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + d;
	}
	*out = v;
	return 0;
}

/* Splits line (NUL-terminated, modified) into at most max tokens. */
static int split(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (n == max)
			return max + 1;
		tok[n++] = t;
	}
	return n;
}

static bool one_char_of(const char *tok, const char *set)
{
	return tok[0] && !tok[1] && strchr(set, tok[0]);
}

rfs_status rfs_mapfile_parse(const char *text, size_t len, struct rfs_mapfile **out,
			     struct rfs_error *err)
{
	*out = NULL;
	struct rfs_mapfile *m = calloc(1, sizeof(*m));
	if (!m)
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "mapfile");
	struct map_builder b = { m, 0 };
	char line[RFS_MAPFILE_MAX_LINE + 1];
	bool have_current = false;
	uint64_t next = 0, lineno = 0;
	rfs_status st = RFS_OK;
	size_t at = 0;
	while (at < len && !st) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t l = nl ? (size_t)(nl - (text + at)) : len - at;
		lineno++;
		if (lineno > RFS_MAPFILE_MAX_LINES) {
			st = rfs_error_set(err, RFS_ERR_LIMIT, lineno, "mapfile has more than %u lines",
					   RFS_MAPFILE_MAX_LINES);
			break;
		}
		if (l > RFS_MAPFILE_MAX_LINE) {
			st = rfs_error_set(err, RFS_ERR_LIMIT, lineno, "mapfile line %llu is too long",
					   (unsigned long long)lineno);
			break;
		}
		memcpy(line, text + at, l);
		line[l] = '\0';
		at += l + (nl ? 1 : 0);
		if (memchr(line, '\0', l)) {
			st = rfs_error_set(err, RFS_ERR_INVALID, lineno, "mapfile line %llu holds a NUL byte",
					   (unsigned long long)lineno);
			break;
		}
		char *tok[4];
		int n = split(line, tok, 3);
		if (n == 0 || tok[0][0] == '#')
			continue;
		uint64_t pos, size;
		if (!have_current) {
			/* "current_pos current_status [current_pass]" */
			if ((n != 2 && n != 3) || parse_number(tok[0], &pos) ||
			    !one_char_of(tok[1], "?*/-FG+") || (n == 3 && parse_number(tok[2], &size)))
				st = rfs_error_set(err, RFS_ERR_INVALID, lineno,
						   "mapfile line %llu: expected 'POS STATUS [PASS]'",
						   (unsigned long long)lineno);
			have_current = true;
			continue;
		}
		if (n != 3 || parse_number(tok[0], &pos) || parse_number(tok[1], &size) ||
		    !one_char_of(tok[2], "?*/-+")) {
			st = rfs_error_set(err, RFS_ERR_INVALID, lineno,
					   "mapfile line %llu: expected 'POS SIZE STATUS'",
					   (unsigned long long)lineno);
			break;
		}
		if (size == 0 || pos > UINT64_MAX - size || pos < next) {
			st = rfs_error_set(err, RFS_ERR_INVALID, lineno,
					   "mapfile line %llu: empty, overflowing, overlapping or "
					   "out-of-order range", (unsigned long long)lineno);
			break;
		}
		if (pos > next)	/* a gap ddrescue never tried, invariant (2) */
			st = add_bad(&b, next, pos - next, err);
		if (!st && tok[2][0] != '+')
			st = add_bad(&b, pos, size, err);
		else if (!st)
			m->finished_bytes += size;
		next = pos + size;
	}
	if (!st && !have_current)
		st = rfs_error_set(err, RFS_ERR_INVALID, lineno,
				   "mapfile has no current-position line (line %llu)",
				   (unsigned long long)lineno);
	if (st) {
		rfs_mapfile_free(m);
		return st;
	}
	m->covered_end = next;
	*out = m;
	return RFS_OK;
}

rfs_status rfs_mapfile_load(const char *path, struct rfs_mapfile **out, struct rfs_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rfs_error_sys(err, errno, RFS_NO_BLOCK, "opening mapfile %s", path);
	struct stat stt;
	if (fstat(fd, &stt) != 0) {
		int e = errno;
		close(fd);
		return rfs_error_sys(err, e, RFS_NO_BLOCK, "examining mapfile %s", path);
	}
	if (!S_ISREG(stt.st_mode) || (uint64_t)stt.st_size > MAPFILE_MAX_BYTES) {
		close(fd);
		return rfs_error_set(err, RFS_ERR_LIMIT, RFS_NO_BLOCK,
				     "mapfile %s is not a regular file of at most %u bytes", path,
				     MAPFILE_MAX_BYTES);
	}
	size_t size = (size_t)stt.st_size, got = 0;
	char *text = malloc(size ? size : 1);
	if (!text) {
		close(fd);
		return rfs_error_set(err, RFS_ERR_NOMEM, RFS_NO_BLOCK, "mapfile text");
	}
	while (got < size) {
		ssize_t n = read(fd, text + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			free(text);
			close(fd);
			return rfs_error_sys(err, e, RFS_NO_BLOCK, "reading mapfile %s", path);
		}
		got += (size_t)n;
	}
	close(fd);
	rfs_status st = rfs_mapfile_parse(text, size, out, err);
	free(text);
	return st;
}

bool rfs_mapfile_readable(const struct rfs_mapfile *m, uint64_t pos, uint64_t len,
			  uint64_t *first_bad)
{
	if (len == 0)
		return true;
	uint64_t end = pos + len < pos ? UINT64_MAX : pos + len;
	/* First bad range that ends after pos (binary search, invariant (1)). */
	size_t lo = 0, hi = m->nbad;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->bad[mid].pos + m->bad[mid].size <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t bad = UINT64_MAX;
	if (lo < m->nbad && m->bad[lo].pos < end)
		bad = m->bad[lo].pos > pos ? m->bad[lo].pos : pos;
	if (end > m->covered_end) {
		uint64_t tail = m->covered_end > pos ? m->covered_end : pos;
		if (tail < bad)
			bad = tail;
	}
	if (bad == UINT64_MAX)
		return true;
	if (first_bad)
		*first_bad = bad;
	return false;
}

void rfs_mapfile_free(struct rfs_mapfile *m)
{
	if (!m)
		return;
	free(m->bad);
	free(m);
}

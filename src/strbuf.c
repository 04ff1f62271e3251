/*
 * strbuf.c - growable strings and the escaping of names taken from an image.
 * Names from a damaged image may hold any bytes; everything printed or put
 * into JSON goes through sb_add_escaped so that no control character reaches
 * a terminal and every JSON string is valid UTF-8.
 */
#include "rfs/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rfs_status grow(struct strbuf *sb, size_t extra)
{
	if (sb->buf && sb->len + extra < sb->cap)
		return RFS_OK;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap <= sb->len + extra) {
		if (cap > SIZE_MAX / 2)
			return RFS_ERR_NOMEM;
		cap *= 2;
	}
	char *p = realloc(sb->buf, cap);
	if (!p)
		return RFS_ERR_NOMEM;
	sb->buf = p;
	sb->cap = cap;
	return RFS_OK;
}

rfs_status sb_add(struct strbuf *sb, const void *data, size_t n)
{
	if (grow(sb, n))
		return RFS_ERR_NOMEM;
	memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = 0;
	return RFS_OK;
}

rfs_status sb_adds(struct strbuf *sb, const char *s)
{
	return sb_add(sb, s, strlen(s));
}

rfs_status sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(sb, (size_t)n))
		return RFS_ERR_NOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return RFS_OK;
}

void sb_truncate(struct strbuf *sb, size_t len)
{
	if (sb->buf && len < sb->len) {
		sb->len = len;
		sb->buf[len] = 0;
	}
}

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

/* Length of a valid, printable UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_printable(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	if (c >= 0x20 && c < 0x7f)
		return 1;
	size_t len;
	uint32_t cp;
	if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
	else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
	else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
	else return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
		return 0;
	return len;
}

rfs_status sb_add_escaped(struct strbuf *sb, const uint8_t *name, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = utf8_printable(name + i, n - i);
		rfs_status st;
		if (l == 1 && name[i] == '\\')
			st = sb_add(sb, "\\\\", 2);
		else if (l)
			st = sb_add(sb, name + i, l);
		else
			st = sb_addf(sb, "\\x%02x", name[i]);
		if (st)
			return st;
		i += l ? l : 1;
	}
	if (!sb->buf)
		return grow(sb, 0) ? RFS_ERR_NOMEM : (sb->buf[0] = 0, RFS_OK);
	return RFS_OK;
}

rfs_status sb_add_hex(struct strbuf *sb, const uint8_t *data, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	if (grow(sb, 2 * n))
		return RFS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		sb->buf[sb->len++] = hex[data[i] >> 4];
		sb->buf[sb->len++] = hex[data[i] & 15];
	}
	sb->buf[sb->len] = 0;
	return RFS_OK;
}

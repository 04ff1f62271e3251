/*
 * strbuf.h - a growable byte string, always NUL-terminated.
 * Invariant: buf[len] == 0 and len < cap whenever buf != NULL.  On allocation
 * failure the buffer keeps its old contents and the call returns RFS_ERR_NOMEM.
 */
#ifndef RFS_STRBUF_H
#define RFS_STRBUF_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

struct strbuf {
	char *buf;
	size_t len, cap;
};

#define STRBUF_INIT { NULL, 0, 0 }

rfs_status sb_add(struct strbuf *sb, const void *data, size_t n);
rfs_status sb_adds(struct strbuf *sb, const char *s);
rfs_status sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_truncate(struct strbuf *sb, size_t len);
void sb_free(struct strbuf *sb);
static inline const char *sb_str(const struct strbuf *sb) { return sb->buf ? sb->buf : ""; }

/* Appends name bytes made safe to print: valid UTF-8 printable characters
 * pass, '\\' becomes "\\\\", control bytes and invalid UTF-8 become "\\xNN".
 * The result is valid UTF-8 and contains no control characters. */
rfs_status sb_add_escaped(struct strbuf *sb, const uint8_t *name, size_t n);
/* Appends lower-case hex of the bytes. */
rfs_status sb_add_hex(struct strbuf *sb, const uint8_t *data, size_t n);

#endif

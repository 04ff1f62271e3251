/*
 * salvage_name.c - the output-name rule of salvage (include/rfs/salvage.h).
 *
 * Why percent-escaping of only '%', '/' and NUL: those are the bytes a Linux
 * file system cannot store in a name (and '%' itself, so that the rule can be
 * undone); every other byte is kept, because forensic users want names as
 * close to the original bytes as the output allows.  Invalid UTF-8 and
 * control bytes are therefore kept too; the manifest shows them escaped in
 * "path" and exact in "path_hex".
 */
#include "rfs/salvage.h"

#include <string.h>

#include "rfs/sha256.h"

enum { CUT_MAX = SALVAGE_NAME_MAX - 2 - 16 - 1 };   /* room for "%+" and 16 hex */

static bool needs_escape(uint8_t b)
{
	return b == '%' || b == '/' || b == 0;
}

size_t salvage_name_escape(const uint8_t *name, size_t len, char *out, bool *escaped)
{
	static const char hexd[] = "0123456789ABCDEF";
	bool esc = false;
	size_t o = 0;
	if (len == 0) {
		strcpy(out, "%");
		esc = true;
		o = 1;
		goto done;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		strcpy(out, len == 1 ? "%2E" : "%2E%2E");
		esc = true;
		o = len * 3;
		goto done;
	}
	size_t cut = 0;              /* output length at the last boundary <= CUT_MAX */
	for (size_t i = 0; i < len; i++) {
		size_t need = needs_escape(name[i]) ? 3 : 1;
		if (o + need > SALVAGE_NAME_MAX) {
			/* Too long: keep a prefix and name the rest by its digest. */
			struct rfs_sha256 c;
			uint8_t d[RFS_SHA256_LEN];
			char hex[RFS_SHA256_HEX_LEN + 1];
			rfs_sha256_init(&c);
			rfs_sha256_update(&c, name, len);
			rfs_sha256_final(&c, d);
			rfs_sha256_hex(d, hex);
			o = cut;
			out[o++] = '%';
			out[o++] = '+';
			memcpy(out + o, hex, 16);
			o += 16;
			esc = true;
			goto done;
		}
		if (need == 3) {
			out[o++] = '%';
			out[o++] = hexd[name[i] >> 4];
			out[o++] = hexd[name[i] & 15];
			esc = true;
		} else {
			out[o++] = (char)name[i];
		}
		if (o <= CUT_MAX)
			cut = o;
	}
done:
	out[o] = 0;
	if (escaped)
		*escaped = esc;
	return o;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

rfs_status salvage_name_unescape(const char *s, uint8_t *out, size_t *len)
{
	size_t n = 0;
	if (strcmp(s, "%") == 0) {
		*len = 0;
		return RFS_OK;
	}
	if (strcmp(s, "%2E") == 0 || strcmp(s, "%2E%2E") == 0) {
		*len = strlen(s) / 3;
		memset(out, '.', *len);
		return RFS_OK;
	}
	/* Outputs that no name escapes to: "", ".", "..", over-long ones. */
	if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > SALVAGE_NAME_MAX)
		return RFS_ERR_INVALID;
	for (size_t i = 0; s[i]; i++) {
		if (s[i] != '%') {
			if (s[i] == '/')
				return RFS_ERR_INVALID;
			out[n++] = (uint8_t)s[i];
			continue;
		}
		int hi = hexval(s[i + 1]), lo = hi < 0 ? -1 : hexval(s[i + 2]);
		if (hi < 0 || lo < 0)
			return RFS_ERR_INVALID;
		uint8_t b = (uint8_t)(hi << 4 | lo);
		/* Only the bytes the rule escapes ("%2E" alone was handled above). */
		if (!needs_escape(b))
			return RFS_ERR_INVALID;
		out[n++] = b;
		i += 2;
	}
	*len = n;
	return RFS_OK;
}

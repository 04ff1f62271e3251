/*
 * status.c - the one string table for rfs_status, and the helpers that fill a
 * struct rfs_error.  See include/rfs/status.h for the invariants.
 */
#include "rfs/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
	[RFS_ERR_IO - RFS_ERR_IO] = "I/O error",
	[RFS_ERR_SHORT - RFS_ERR_IO] = "device shorter than the filesystem",
	[RFS_ERR_NOMEM - RFS_ERR_IO] = "out of memory",
	[RFS_ERR_CORRUPT - RFS_ERR_IO] = "corrupt filesystem data",
	[RFS_ERR_NOT_REISERFS - RFS_ERR_IO] = "not a ReiserFS v3 filesystem",
	[RFS_ERR_UNSUPPORTED - RFS_ERR_IO] = "unsupported feature",
	[RFS_ERR_NOT_FOUND - RFS_ERR_IO] = "not found",
	[RFS_ERR_INVALID - RFS_ERR_IO] = "invalid argument",
	[RFS_ERR_READONLY - RFS_ERR_IO] = "device is read-only",
	[RFS_ERR_BUSY - RFS_ERR_IO] = "device is busy (mounted?)",
	[RFS_ERR_UNDO - RFS_ERR_IO] = "undo file failed verification",
	[RFS_ERR_CANCELLED - RFS_ERR_IO] = "cancelled",
	[RFS_ERR_LIMIT - RFS_ERR_IO] = "limit exceeded",
	[RFS_ERR_SELFTEST - RFS_ERR_IO] = "built-in self-test failed",
	[RFS_ERR_INJECTED - RFS_ERR_IO] = "injected fault (test hook)",
};

const char *rfs_strerror(rfs_status st)
{
	if (st == RFS_OK)
		return "success";
	if (st < RFS_ERR_IO || st >= RFS_STATUS_END)
		return "unknown error";
	return status_names[st - RFS_ERR_IO];
}

void rfs_error_clear(struct rfs_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->status = RFS_OK;
	err->block = RFS_NO_BLOCK;
}

static rfs_status error_vset(struct rfs_error *err, rfs_status st, int sys_errno,
			     uint64_t block, const char *fmt, va_list ap)
{
	if (!err || err->status != RFS_OK)
		return st;
	err->status = st;
	err->block = block;
	err->offset = 0;
	err->sys_errno = sys_errno;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return st;
}

rfs_status rfs_error_set(struct rfs_error *err, rfs_status st, uint64_t block,
			 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	error_vset(err, st, 0, block, fmt, ap);
	va_end(ap);
	return st;
}

rfs_status rfs_error_sys(struct rfs_error *err, int sys_errno, uint64_t block,
			 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	error_vset(err, RFS_ERR_IO, sys_errno, block, fmt, ap);
	va_end(ap);
	return RFS_ERR_IO;
}

void rfs_error_format(const struct rfs_error *err, char *buf, unsigned len)
{
	char where[48] = "";
	if (err->block != RFS_NO_BLOCK)
		snprintf(where, sizeof(where), " at block %llu",
			 (unsigned long long)err->block);
	if (err->status == RFS_ERR_IO && err->sys_errno)
		snprintf(buf, len, "%s%s: %s (%s)", rfs_strerror(err->status), where,
			 err->msg, strerror(err->sys_errno));
	else if (err->msg[0])
		snprintf(buf, len, "%s%s: %s", rfs_strerror(err->status), where, err->msg);
	else
		snprintf(buf, len, "%s%s", rfs_strerror(err->status), where);
}

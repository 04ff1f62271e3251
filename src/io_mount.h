/*
 * io_mount.h - private to src/io*.c: refusing to write to a mounted image.
 */
#ifndef RFS_IO_MOUNT_H
#define RFS_IO_MOUNT_H

#include <sys/stat.h>

#include "rfs/status.h"

/* RFS_ERR_BUSY (message names path) when the block device or image file
 * described by st (from stat(path)) is mounted, directly or through a loop
 * device; RFS_OK otherwise, including when mounts cannot be determined. */
rfs_status io_mount_refuse_mounted(const char *path, const struct stat *st, struct rfs_error *err);

#endif

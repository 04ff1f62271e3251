/*
 * io_mount.c - is an image mounted?  Used by src/io.c before opening an
 * image for writing (invariant: a mounted filesystem is never written).
 *
 * A block device is mounted when it, or a partition of it, is the source of
 * a line in /proc/self/mounts or /proc/mounts (compared by st_rdev, so any
 * name of the device matches).  A regular file is mounted when a loop device
 * backed by it (/sys/block/loopN/loop/backing_file, compared by device and
 * inode) is mounted.  When /proc or /sys cannot be read, nothing is found:
 * block devices are still protected by O_EXCL, which the kernel refuses
 * while the device is mounted.  Leaves behind: nothing.
 */
#include "io_mount.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Reads "MAJ:MIN" from a sysfs file; false if absent or malformed. */
static bool read_sysfs_devnum(const char *path, dev_t *out)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	unsigned maj, min;
	bool ok = fscanf(f, "%u:%u", &maj, &min) == 2;
	fclose(f);
	if (ok)
		*out = makedev(maj, min);
	return ok;
}

/* True when block device rdev is the mounted device or the disk holding a
 * mounted partition, per mounts_path (/proc/self/mounts format). */
static bool mounted_in(const char *mounts_path, dev_t rdev)
{
	FILE *f = fopen(mounts_path, "re");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		char src[4096];
		if (sscanf(line, "%4095s", src) != 1 || src[0] != '/')
			continue;
		/* Undo the \040-style octal escapes of /proc/mounts. */
		char *w = src;
		for (const char *r = src; *r; r++) {
			if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
			    r[3] >= '0' && r[3] <= '7') {
				*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
				r += 3;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
		struct stat st;
		if (stat(src, &st) != 0 || !S_ISBLK(st.st_mode))
			continue;
		if (st.st_rdev == rdev) {
			found = true;
			break;
		}
		char sys[96];
		dev_t parent;
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/../dev", major(st.st_rdev),
			 minor(st.st_rdev));
		char part[96];
		snprintf(part, sizeof(part), "/sys/dev/block/%u:%u/partition", major(st.st_rdev),
			 minor(st.st_rdev));
		if (access(part, F_OK) == 0 && read_sysfs_devnum(sys, &parent) && parent == rdev)
			found = true;
	}
	fclose(f);
	return found;
}

static bool blockdev_mounted(dev_t rdev)
{
	return mounted_in("/proc/self/mounts", rdev) || mounted_in("/proc/mounts", rdev);
}

/* True when a loop device backed by the file (st_dev, st_ino) is mounted. */
static bool file_loop_mounted(const struct stat *img)
{
	DIR *d = opendir("/sys/block");
	if (!d)
		return false;
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		char path[300], backing[4096];
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool got = fgets(backing, sizeof(backing), f) != NULL;
		fclose(f);
		if (!got)
			continue;
		backing[strcspn(backing, "\n")] = '\0';
		struct stat st;
		if (stat(backing, &st) != 0 || st.st_dev != img->st_dev || st.st_ino != img->st_ino)
			continue;
		dev_t loopdev;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", de->d_name);
		if (read_sysfs_devnum(path, &loopdev) && blockdev_mounted(loopdev))
			found = true;
	}
	closedir(d);
	return found;
}

rfs_status io_mount_refuse_mounted(const char *path, const struct stat *st, struct rfs_error *err)
{
	if (S_ISBLK(st->st_mode) && blockdev_mounted(st->st_rdev))
		return rfs_error_set(err, RFS_ERR_BUSY, RFS_NO_BLOCK,
				     "%s is mounted; refusing to write to it", path);
	if (S_ISREG(st->st_mode) && file_loop_mounted(st))
		return rfs_error_set(err, RFS_ERR_BUSY, RFS_NO_BLOCK,
				     "%s backs a mounted loop device; refusing to write to it", path);
	return RFS_OK;
}

/*
 * salvage_write.c - the only code of salvage that creates anything in OUTDIR.
 *
 * Invariants (docs/salvage.md, "Safety rules"):
 *  - every creation is a single-component *at() call relative to a directory
 *    descriptor the caller got from salvage itself (mkdirat, then openat with
 *    O_DIRECTORY|O_NOFOLLOW); names come from salvage_name_escape, so they
 *    hold no '/' and are never "." or "..";
 *  - every creation fails with EEXIST instead of following or replacing what
 *    is there (mkdirat, symlinkat, mknodat, linkat, and O_CREAT|O_EXCL with
 *    O_NOFOLLOW); salvage_make_unique then tries "%~2", "%~3", ...;
 *  - the only multi-component path ever resolved is a hard link's source,
 *    walked one openat(O_NOFOLLOW|O_DIRECTORY) per component;
 *  - attribute changes go through the object's own descriptor or with
 *    AT_SYMLINK_NOFOLLOW, and their failures are notes, never errors.
 */
#include "salvage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rfs/salvage.h"

enum { UNIQUE_TRIES = 1000 };    /* "%~2" .. "%~1000" on name collisions */

static int make_once(int dirfd, const char *name, struct salvage_make *a)
{
	switch (a->kind) {
	case SALVAGE_MK_DIR:
		return mkdirat(dirfd, name, 0700);
	case SALVAGE_MK_FILE:
		a->fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		return a->fd < 0 ? -1 : 0;
	case SALVAGE_MK_SYMLINK:
		return symlinkat(a->target, dirfd, name);
	case SALVAGE_MK_NODE:
		return mknodat(dirfd, name, a->mode, a->dev);
	case SALVAGE_MK_LINK:
		/* flags 0: a symlink source would be linked itself, never followed */
		return linkat(a->src_dirfd, a->src_name, dirfd, name, 0);
	}
	errno = EINVAL;
	return -1;
}

int salvage_make_unique(int dirfd, const char *base, struct salvage_make *a,
			char used[SALVAGE_NAME_MAX + 1])
{
	strcpy(used, base);
	if (make_once(dirfd, used, a) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	size_t keep = strlen(base);
	if (keep > SALVAGE_NAME_MAX - 8) {
		keep = SALVAGE_NAME_MAX - 8;
		/* do not cut inside a "%XX" escape */
		if (base[keep - 1] == '%')
			keep -= 1;
		else if (base[keep - 2] == '%')
			keep -= 2;
	}
	for (int n = 2; n <= UNIQUE_TRIES; n++) {
		snprintf(used, SALVAGE_NAME_MAX + 1, "%.*s%%~%d", (int)keep, base, n);
		if (make_once(dirfd, used, a) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

int salvage_open_parent(int outdir_fd, const char *relpath, const char **leaf)
{
	int fd = dup(outdir_fd);
	const char *p = relpath;
	for (;;) {
		const char *slash = strchr(p, '/');
		if (!slash) {
			*leaf = p;
			return fd;
		}
		char comp[SALVAGE_NAME_MAX + 1];
		size_t n = (size_t)(slash - p);
		if (fd < 0 || n == 0 || n > SALVAGE_NAME_MAX) {
			if (fd >= 0)
				close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = 0;
		int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (nfd < 0) {
			errno = e;
			return -1;
		}
		fd = nfd;
		p = slash + 1;
	}
}

static void note_errno(struct strbuf *note, const char *what)
{
	sb_addf(note, "%s%s not set: %s", note->len ? "; " : "", what, strerror(errno));
}

void salvage_set_attrs_fd(bool chown, int fd, const struct rfs_stat *sd, struct strbuf *note)
{
	/* Ownership first: chown clears set-id bits, chmod then restores them. */
	if (chown && fchown(fd, sd->uid, sd->gid))
		note_errno(note, "owner");
	if (fchmod(fd, sd->mode & 07777))
		note_errno(note, "mode");
	struct timespec ts[2] = { { (time_t)sd->atime, 0 }, { (time_t)sd->mtime, 0 } };
	if (futimens(fd, ts))
		note_errno(note, "times");
}

void salvage_set_attrs_at(bool chown, int dirfd, const char *name, const struct rfs_stat *sd,
			  bool is_link, struct strbuf *note)
{
	if (chown && fchownat(dirfd, name, sd->uid, sd->gid, AT_SYMLINK_NOFOLLOW))
		note_errno(note, "owner");
	/* A symlink's mode cannot be set on Linux (and means nothing); for the
	 * others fchmodat follows, but the name was just created by mknodat. */
	if (!is_link && fchmodat(dirfd, name, sd->mode & 07777, 0))
		note_errno(note, "mode");
	struct timespec ts[2] = { { (time_t)sd->atime, 0 }, { (time_t)sd->mtime, 0 } };
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW))
		note_errno(note, "times");
}
